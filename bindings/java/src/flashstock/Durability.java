/* Durability.java -- enum flash_durability: when an acknowledgement is given. */
package flashstock;

public enum Durability {
	/** acknowledge at once; the WAL trails */
	ASYNC,
	/** acknowledge after the record is fdatasync'd */
	SYNC;

	public int code() {
		return ordinal();
	}

	static Durability of(int code) {
		return code == 1 ? SYNC : ASYNC;
	}
}
