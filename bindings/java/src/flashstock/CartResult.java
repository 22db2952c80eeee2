/*
 * CartResult.java -- the outcome of FlashStock.cartOrder(): struct
 * flash_cart_res plus the result code.
 *
 * rc is FLASH_OK or one of the answers order() returns (sold out, limit
 * reached, not started, ended, bad token, stale terms, a retried request id
 * with firstRc and orderNo of its first outcome, FLASH_EFATE_UNKNOWN with
 * orderNo and lsn of a cart placed but not yet durable); cartOrder() throws
 * every other code, the exception's line() naming a refused line.  line is
 * the line a refusal was for (FLASH_ESOLD_OUT, FLASH_ESTALE of a sku: its
 * index; 0 otherwise); soldOut, for FLASH_ESOLD_OUT, has bit i set for
 * every line i short of its qty (soldOutLines() lists them).  Nothing was
 * taken unless ok() (or FLASH_EFATE_UNKNOWN).
 */
package flashstock;

import java.util.ArrayList;
import java.util.List;

public record CartResult(int rc, long orderNo, int firstRc, int limitSlot, long lsn, int line, int soldOut) {
	/** True when the cart was placed now (rc == FLASH_OK). */
	public boolean ok() {
		return rc == 0;
	}

	/** The result code's name ("FLASH_OK", "FLASH_ESOLD_OUT", ...). */
	public String rcName() {
		return Native.rcname(rc);
	}

	/** The lines short of their qty (FLASH_ESOLD_OUT), in order; empty otherwise. */
	public List<Integer> soldOutLines() {
		return lines(soldOut);
	}

	static List<Integer> lines(int mask) {
		List<Integer> out = new ArrayList<>();
		for (int i = 0; i < CartRequest.LINES_MAX; i++)
			if ((mask >>> i & 1) != 0)
				out.add(i);
		return List.copyOf(out);
	}

	/** The refusal as an exception (SoldOut, ...: line() and soldOutLines() set); null when ok(). */
	public FlashException error() {
		return rc == 0 ? null : FlashException.of(rc).atLine(line, soldOutLines());
	}

	/** The cart's number if ok(), else throw the refusal's exception. */
	public long orThrow() {
		if (rc != 0)
			throw error();
		return orderNo;
	}
}
