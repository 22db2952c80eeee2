/* FeedInfo.java -- struct flash_feed_info: one registered consumer's position, lag and state. */
package flashstock;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * A consumer of a WAL directory's feed (flash_feed_list, flash_feed_info_get).
 * @param state         STATE_OK, or STATE_LOST: WAL it needs was removed (past the retention bound)
 * @param open          a live feed has it open now
 * @param committedLsn  its position: every LSN at or below it is processed
 * @param durableLsn    the WAL's durable end
 * @param firstLsn      the oldest LSN still in the WAL (0: empty)
 * @param lagRecords    durable - committed (0 when caught up)
 * @param lagNs         age of the oldest record not committed (0 when caught up)
 * @param createdNs     registration (CLOCK_REALTIME)
 * @param commitNs      last commit (CLOCK_REALTIME; 0: never)
 */
public record FeedInfo(String name, int state, boolean open, long committedLsn, long durableLsn, long firstLsn,
		long lagRecords, long lagNs, long createdNs, long commitNs) {
	/** FLASH_FEED_OK: every record after its position is in the WAL. */
	public static final int STATE_OK = 0;
	/** FLASH_FEED_LOST: WAL it needs was removed. */
	public static final int STATE_LOST = 1;

	/** The state is FLASH_FEED_LOST. */
	public boolean lost() {
		return state == STATE_LOST;
	}

	static FeedInfo read(ByteBuffer b, int at) {
		byte[] name = new byte[Layout.FeedInfo.NAME_MAX + 1];
		b.get(at + Layout.FeedInfo.NAME, name);
		int len = 0;
		while (len < name.length && name[len] != 0)
			len++;
		return new FeedInfo(new String(name, 0, len, StandardCharsets.UTF_8), b.getInt(at + Layout.FeedInfo.STATE),
				b.getInt(at + Layout.FeedInfo.OPEN) != 0, b.getLong(at + Layout.FeedInfo.COMMITTED_LSN),
				b.getLong(at + Layout.FeedInfo.DURABLE_LSN), b.getLong(at + Layout.FeedInfo.FIRST_LSN),
				b.getLong(at + Layout.FeedInfo.LAG_RECORDS), b.getLong(at + Layout.FeedInfo.LAG_NS),
				b.getLong(at + Layout.FeedInfo.CREATED_NS), b.getLong(at + Layout.FeedInfo.COMMIT_NS));
	}
}
