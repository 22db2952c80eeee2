/* OrderState.java -- enum flash_order_state. */
package flashstock;

public enum OrderState {
	/** number allocated, order never completed */
	NONE,
	ACTIVE,
	CANCELLED;

	static OrderState of(int code) {
		return values()[code];
	}
}
