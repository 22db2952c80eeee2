/*
 * SegOpts.java -- struct flash_seg_opts: the capacities and permissions of a
 * new segment.  Start from SegOpts.defaults() and change what you need with
 * the with* methods.  Capacities are unsigned 32-bit values in the C API; all
 * the engine accepts (1..FLASH_CAP_MAX) fit a Java int.
 */
package flashstock;

import java.nio.ByteBuffer;

public record SegOpts(int maxActivities, int maxSkus, int maxShards, int maxUsers, int maxTokens,
		int maxOrders, int maxRequests, int maxLocks, int maxProcs, int ringRecords, int mode, long gid,
		Durability durability) {

	/** The C library's defaults (flash_seg_opts_default). */
	public static SegOpts defaults() {
		ByteBuffer b = FlashStock.scratch();
		Native.segOptsDefault(b);
		return read(b);
	}

	public SegOpts withMaxActivities(int v) { return new SegOpts(v, maxSkus, maxShards, maxUsers, maxTokens, maxOrders, maxRequests, maxLocks, maxProcs, ringRecords, mode, gid, durability); }
	public SegOpts withMaxSkus(int v) { return new SegOpts(maxActivities, v, maxShards, maxUsers, maxTokens, maxOrders, maxRequests, maxLocks, maxProcs, ringRecords, mode, gid, durability); }
	public SegOpts withMaxShards(int v) { return new SegOpts(maxActivities, maxSkus, v, maxUsers, maxTokens, maxOrders, maxRequests, maxLocks, maxProcs, ringRecords, mode, gid, durability); }
	public SegOpts withMaxUsers(int v) { return new SegOpts(maxActivities, maxSkus, maxShards, v, maxTokens, maxOrders, maxRequests, maxLocks, maxProcs, ringRecords, mode, gid, durability); }
	public SegOpts withMaxTokens(int v) { return new SegOpts(maxActivities, maxSkus, maxShards, maxUsers, v, maxOrders, maxRequests, maxLocks, maxProcs, ringRecords, mode, gid, durability); }
	public SegOpts withMaxOrders(int v) { return new SegOpts(maxActivities, maxSkus, maxShards, maxUsers, maxTokens, v, maxRequests, maxLocks, maxProcs, ringRecords, mode, gid, durability); }
	public SegOpts withMaxRequests(int v) { return new SegOpts(maxActivities, maxSkus, maxShards, maxUsers, maxTokens, maxOrders, v, maxLocks, maxProcs, ringRecords, mode, gid, durability); }
	public SegOpts withMaxLocks(int v) { return new SegOpts(maxActivities, maxSkus, maxShards, maxUsers, maxTokens, maxOrders, maxRequests, v, maxProcs, ringRecords, mode, gid, durability); }
	public SegOpts withMaxProcs(int v) { return new SegOpts(maxActivities, maxSkus, maxShards, maxUsers, maxTokens, maxOrders, maxRequests, maxLocks, v, ringRecords, mode, gid, durability); }
	public SegOpts withRingRecords(int v) { return new SegOpts(maxActivities, maxSkus, maxShards, maxUsers, maxTokens, maxOrders, maxRequests, maxLocks, maxProcs, v, mode, gid, durability); }
	public SegOpts withMode(int v) { return new SegOpts(maxActivities, maxSkus, maxShards, maxUsers, maxTokens, maxOrders, maxRequests, maxLocks, maxProcs, ringRecords, v, gid, durability); }
	public SegOpts withGid(long v) { return new SegOpts(maxActivities, maxSkus, maxShards, maxUsers, maxTokens, maxOrders, maxRequests, maxLocks, maxProcs, ringRecords, mode, v, durability); }
	public SegOpts withDurability(Durability v) { return new SegOpts(maxActivities, maxSkus, maxShards, maxUsers, maxTokens, maxOrders, maxRequests, maxLocks, maxProcs, ringRecords, mode, gid, v); }

	/** Small tables for tests and examples: capacity n for every table, 64 handles, rings of 4096. */
	public static SegOpts small(int n) {
		return defaults().withMaxActivities(16).withMaxSkus(64).withMaxShards(256).withMaxUsers(n)
				.withMaxTokens(n).withMaxOrders(n).withMaxRequests(n).withMaxLocks(64).withMaxProcs(64)
				.withRingRecords(4096);
	}

	static SegOpts read(ByteBuffer b) {
		return new SegOpts(b.getInt(Layout.SegOpts.MAX_ACTIVITIES), b.getInt(Layout.SegOpts.MAX_SKUS),
				b.getInt(Layout.SegOpts.MAX_SHARDS), b.getInt(Layout.SegOpts.MAX_USERS),
				b.getInt(Layout.SegOpts.MAX_TOKENS), b.getInt(Layout.SegOpts.MAX_ORDERS),
				b.getInt(Layout.SegOpts.MAX_REQUESTS), b.getInt(Layout.SegOpts.MAX_LOCKS),
				b.getInt(Layout.SegOpts.MAX_PROCS), b.getInt(Layout.SegOpts.RING_RECORDS),
				b.getInt(Layout.SegOpts.MODE), b.getLong(Layout.SegOpts.GID),
				Durability.of(b.getInt(Layout.SegOpts.DURABILITY)));
	}

	void write(ByteBuffer b) {
		b.putInt(Layout.SegOpts.MAX_ACTIVITIES, maxActivities).putInt(Layout.SegOpts.MAX_SKUS, maxSkus)
				.putInt(Layout.SegOpts.MAX_SHARDS, maxShards).putInt(Layout.SegOpts.MAX_USERS, maxUsers)
				.putInt(Layout.SegOpts.MAX_TOKENS, maxTokens).putInt(Layout.SegOpts.MAX_ORDERS, maxOrders)
				.putInt(Layout.SegOpts.MAX_REQUESTS, maxRequests).putInt(Layout.SegOpts.MAX_LOCKS, maxLocks)
				.putInt(Layout.SegOpts.MAX_PROCS, maxProcs).putInt(Layout.SegOpts.RING_RECORDS, ringRecords)
				.putInt(Layout.SegOpts.MODE, mode).putLong(Layout.SegOpts.GID, gid)
				.putInt(Layout.SegOpts.DURABILITY, durability.code());
	}
}
