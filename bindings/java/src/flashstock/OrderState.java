/* OrderState.java -- enum flash_order_state, in the header's order (of() indexes it). */
package flashstock;

public enum OrderState {
	/** number allocated, order never completed */
	NONE,
	/** placed (paid, for a reservation) */
	ACTIVE,
	CANCELLED,
	/** a reservation not paid yet (FlashStock.confirm) */
	RESERVED,
	/** a reservation not paid in time (FlashStock.expire) */
	EXPIRED;

	static OrderState of(int code) {
		return values()[code];
	}
}
