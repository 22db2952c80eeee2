/* Ident.java -- struct flash_ident: the identity a segment shares with its WAL. */
package flashstock;

import java.nio.ByteBuffer;

public record Ident(long incarnation, long walLsn, int consumerPid, int consumerSlot) {
	static Ident read(ByteBuffer b) {
		return new Ident(b.getLong(Layout.Ident.INCARNATION), b.getLong(Layout.Ident.WAL_LSN),
				b.getInt(Layout.Ident.CONSUMER_PID), b.getInt(Layout.Ident.CONSUMER_SLOT));
	}
}
