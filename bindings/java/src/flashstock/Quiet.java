/* Quiet.java -- struct flash_quiet: the segment's activity (quiet when pending and inFlight are 0). */
package flashstock;

import java.nio.ByteBuffer;

public record Quiet(long ops, long consumed, long pending, int inFlight) {
	public boolean quiet() {
		return pending == 0 && inFlight == 0;
	}

	static Quiet read(ByteBuffer b) {
		return new Quiet(b.getLong(Layout.Quiet.OPS), b.getLong(Layout.Quiet.CONSUMED),
				b.getLong(Layout.Quiet.PENDING), b.getInt(Layout.Quiet.IN_FLIGHT));
	}
}
