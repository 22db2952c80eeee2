/* Stats.java -- struct flash_stats: counters summed over handles, and table fill levels;
 * confirms and expiries count reservations paid and expired unpaid. */
package flashstock;

import java.nio.ByteBuffer;

public record Stats(long orders, long cancels, long soldOut, long limitHits, long tokenRejects, long duplicates,
		long casRetries, long recoveries, long rolledBack, long rolledForward, int activities,
		int activitiesCap, int skus, int skusCap, int shards, int shardsCap, int users, int usersCap, int tokens,
		int tokensCap, int requests, int requestsCap, int locks, int locksCap, int procs, int procsCap,
		long ordersUsed, long ordersCap, long segmentBytes, Durability durability, long confirms, long expiries) {
	static Stats read(ByteBuffer b) {
		return new Stats(b.getLong(Layout.Stats.ORDERS), b.getLong(Layout.Stats.CANCELS),
				b.getLong(Layout.Stats.SOLD_OUT), b.getLong(Layout.Stats.LIMIT_HITS),
				b.getLong(Layout.Stats.TOKEN_REJECTS), b.getLong(Layout.Stats.DUPLICATES),
				b.getLong(Layout.Stats.CAS_RETRIES), b.getLong(Layout.Stats.RECOVERIES),
				b.getLong(Layout.Stats.ROLLED_BACK), b.getLong(Layout.Stats.ROLLED_FORWARD),
				b.getInt(Layout.Stats.ACTIVITIES), b.getInt(Layout.Stats.ACTIVITIES_CAP),
				b.getInt(Layout.Stats.SKUS), b.getInt(Layout.Stats.SKUS_CAP), b.getInt(Layout.Stats.SHARDS),
				b.getInt(Layout.Stats.SHARDS_CAP), b.getInt(Layout.Stats.USERS), b.getInt(Layout.Stats.USERS_CAP),
				b.getInt(Layout.Stats.TOKENS), b.getInt(Layout.Stats.TOKENS_CAP), b.getInt(Layout.Stats.REQUESTS),
				b.getInt(Layout.Stats.REQUESTS_CAP), b.getInt(Layout.Stats.LOCKS), b.getInt(Layout.Stats.LOCKS_CAP),
				b.getInt(Layout.Stats.PROCS), b.getInt(Layout.Stats.PROCS_CAP), b.getLong(Layout.Stats.ORDERS_USED),
				b.getLong(Layout.Stats.ORDERS_CAP), b.getLong(Layout.Stats.SEGMENT_BYTES),
				Durability.of(b.getInt(Layout.Stats.DURABILITY)), b.getLong(Layout.Stats.CONFIRMS),
				b.getLong(Layout.Stats.EXPIRIES));
	}
}
