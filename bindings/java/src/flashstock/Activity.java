/*
 * Activity.java -- struct flash_activity: one sale of the catalog.  Ids are
 * unsigned 32-bit in the C API (Integer.toUnsignedLong reads them); times
 * are CLOCK_REALTIME nanoseconds since the epoch.  version is the version
 * of the terms as the segment read them (FlashStock.activityGet,
 * activityAt), for OrderRequest.withVersions; activityAdd, activityUpdate
 * and activityCheck ignore it, and the constructor without it (the one
 * this record had before versions) leaves it 0.  The with* methods keep it.
 */
package flashstock;

import java.nio.ByteBuffer;

public record Activity(int id, int limitPerUser, int maxQty, Scope scope, int flags, int dayOffsetS,
		long startNs, long endNs, long version) {

	public Activity(int id, int limitPerUser, int maxQty, Scope scope, int flags, int dayOffsetS, long startNs,
			long endNs) {
		this(id, limitPerUser, maxQty, scope, flags, dayOffsetS, startNs, endNs, 0);
	}

	/** FLASH_ACT_CANCEL_RETURNS_QUOTA: a cancel frees the user's limit slot */
	public static final int CANCEL_RETURNS_QUOTA = 0x1;
	/** FLASH_ACT_TOKEN_REQUIRED: an order must redeem a one-time token */
	public static final int TOKEN_REQUIRED = 0x2;

	/** An activity open from now for 24 hours, limit K per user, quantity 1, no flags. */
	public static Activity openNow(int id, int limitPerUser) {
		long now = System.currentTimeMillis() * 1_000_000L;
		return new Activity(id, limitPerUser, 1, Scope.ACTIVITY, 0, 0, now - 1_000_000_000L,
				now + 86_400_000_000_000L);
	}

	public Activity withFlags(int f) {
		return new Activity(id, limitPerUser, maxQty, scope, f, dayOffsetS, startNs, endNs, version);
	}

	public Activity withMaxQty(int q) {
		return new Activity(id, limitPerUser, q, scope, flags, dayOffsetS, startNs, endNs, version);
	}

	public Activity withWindow(long start, long end) {
		return new Activity(id, limitPerUser, maxQty, scope, flags, dayOffsetS, start, end, version);
	}

	/** The same terms with limit k per user (FlashStock.activityUpdate: a limit may grow, never shrink). */
	public Activity withLimitPerUser(int k) {
		return new Activity(id, k, maxQty, scope, flags, dayOffsetS, startNs, endNs, version);
	}

	static Activity read(ByteBuffer b) {
		return new Activity(b.getInt(Layout.Activity.ID), b.getInt(Layout.Activity.LIMIT_PER_USER),
				b.getInt(Layout.Activity.MAX_QTY), Scope.of(b.getInt(Layout.Activity.SCOPE)),
				b.getInt(Layout.Activity.FLAGS), b.getInt(Layout.Activity.DAY_OFFSET_S),
				b.getLong(Layout.Activity.START_NS), b.getLong(Layout.Activity.END_NS),
				b.getLong(Layout.Activity.VERSION));
	}

	void write(ByteBuffer b) {
		b.putInt(Layout.Activity.ID, id).putInt(Layout.Activity.LIMIT_PER_USER, limitPerUser)
				.putInt(Layout.Activity.MAX_QTY, maxQty).putInt(Layout.Activity.SCOPE, scope.code())
				.putInt(Layout.Activity.FLAGS, flags).putInt(Layout.Activity.DAY_OFFSET_S, dayOffsetS)
				.putLong(Layout.Activity.START_NS, startNs).putLong(Layout.Activity.END_NS, endNs)
				.putLong(Layout.Activity.VERSION, version);
	}
}
