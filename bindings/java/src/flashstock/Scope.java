/* Scope.java -- enum flash_scope: what a per-user limit counts. */
package flashstock;

public enum Scope {
	/** K orders per (activity, user) */
	ACTIVITY,
	/** K orders per (activity, sku, user) */
	SKU,
	/** K orders per (activity, user, business day) */
	DAY;

	public int code() {
		return ordinal();
	}

	static Scope of(int code) {
		return values()[code];
	}
}
