/*
 * OrderResult.java -- the outcome of one order of FlashStock.order() or
 * FlashStock.orderMany(): struct flash_order_res plus the result code.
 *
 * From order(), rc is FLASH_OK or one of the refusals a flash sale expects
 * as answers (FLASH_ESOLD_OUT, FLASH_ELIMIT, FLASH_ENOT_STARTED,
 * FLASH_EENDED, FLASH_EBAD_TOKEN, FLASH_ESTALE (the terms changed since
 * the versions the request named: nothing taken), FLASH_EDUPLICATE with
 * firstRc and orderNo of the first outcome, FLASH_EFATE_UNKNOWN with orderNo and lsn
 * of an order placed but not yet durable); every other code is thrown by
 * order() instead.  From orderMany(), rc is any code flash_order() may
 * return for one order, the thrown ones included (their fields are 0 but
 * FLASH_EDURABILITY's of an order placed: orderNo, limitSlot, lsn).
 */
package flashstock;

public record OrderResult(int rc, long orderNo, int firstRc, int limitSlot, long lsn) {
	/** True when the order was placed now (rc == FLASH_OK). */
	public boolean ok() {
		return rc == 0;
	}

	/** The result code's name ("FLASH_OK", "FLASH_ESOLD_OUT", ...). */
	public String rcName() {
		return Native.rcname(rc);
	}

	/** The refusal as an exception (SoldOut, LimitReached, ...); null when ok(). */
	public FlashException error() {
		return rc == 0 ? null : FlashException.of(rc);
	}

	/** The order number if ok(), else throw the refusal's exception. */
	public long orThrow() {
		if (rc != 0)
			throw FlashException.of(rc);
		return orderNo;
	}
}
