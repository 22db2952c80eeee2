/*
 * Obs.java -- struct flash_obs: what the engine measures of its own calls,
 * summed over every handle of the segment (flash_obs_get): per operation a
 * latency histogram and the calls per result code; the lock wait and hold
 * histograms.  A snapshot: the arrays are copies, read once.
 */
package flashstock;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

public final class Obs {
	/* enum flash_op: the index of an operation in time() and results() */
	public static final int ORDER = 0;
	public static final int CANCEL = 1;
	public static final int RESTOCK = 2;
	public static final int TOKEN_ISSUE = 3;
	public static final int TOKEN_REDEEM = 4;
	public static final int LOCK_ACQUIRE = 5;
	public static final int LOCK_RENEW = 6;
	public static final int LOCK_RELEASE = 7;
	/** FLASH_OP_COUNT: operations with results */
	public static final int OPS = Layout.Obs.OPS;
	/** FLASH_TIME_LOCK_WAIT: first refused acquire of a lock to its grant */
	public static final int LOCK_WAIT = Layout.Obs.LOCK_WAIT;
	/** FLASH_TIME_LOCK_HOLD: grant to release (or the lease's end) */
	public static final int LOCK_HOLD = Layout.Obs.LOCK_HOLD;
	/** FLASH_TIMES: histograms (the operations', then LOCK_WAIT, LOCK_HOLD) */
	public static final int TIMES = Layout.Obs.TIMES;
	/** FLASH_OBS_BUCKETS */
	public static final int BUCKETS = Layout.Hist.BUCKETS;
	/** FLASH_OBS_CODES: results are kept for codes 0 .. -(CODES-1); lower codes count at -(CODES-1) */
	public static final int CODES = Layout.Obs.CODES;

	private static final long[] LE_NS = new long[BUCKETS];

	static {
		for (int b = 0; b < BUCKETS; b++)
			LE_NS[b] = Native.obsBucketLeNs(b);
	}

	/**
	 * One latency histogram (struct flash_hist): bucket b counts times below
	 * bucketLeNs(b) and at or above bucketLeNs(b - 1); the last bucket
	 * everything above.  Orders are timed one in 16 per handle.
	 */
	public record Hist(List<Long> buckets, long count, long sumNs) {
		/** The count of bucket b (not cumulative). */
		public long bucket(int b) {
			return buckets.get(b);
		}
	}

	private final List<Hist> time;
	private final long[] results;  // [op * CODES + (-rc)]

	private Obs(List<Hist> time, long[] results) {
		this.time = time;
		this.results = results;
	}

	/**
	 * Upper bound in ns of bucket b (flash_obs_bucket_le_ns), unsigned:
	 * Long.MAX_VALUE stands for the last bucket's UINT64_MAX.
	 */
	public static long bucketLeNs(int b) {
		long v = LE_NS[b];
		return v == -1L ? Long.MAX_VALUE : v;
	}

	/** "order", "cancel", ..., "lock_wait", "lock_hold" for a histogram index (flash_op_name). */
	public static String name(int index) {
		return Native.opName(index);
	}

	/** The histogram of an operation (ORDER..LOCK_RELEASE) or of LOCK_WAIT / LOCK_HOLD. */
	public Hist time(int index) {
		return time.get(index);
	}

	/** Calls of operation op (ORDER..LOCK_RELEASE) that returned rc (0 or a FLASH_E* code). */
	public long results(int op, int rc) {
		if (op < 0 || op >= OPS || rc > 0)
			throw new IndexOutOfBoundsException("op " + op + " rc " + rc);
		int i = -rc < CODES ? -rc : CODES - 1;
		return results[op * CODES + i];
	}

	/** Calls of operation op, every outcome. */
	public long calls(int op) {
		long n = 0;
		for (int i = 0; i < CODES; i++)
			n += results[op * CODES + i];
		return n;
	}

	static Obs read(ByteBuffer b) {
		List<Hist> t = new ArrayList<>(TIMES);
		for (int i = 0; i < TIMES; i++) {
			int at = Layout.Obs.TIME + i * Layout.Hist.SIZE;
			List<Long> bk = new ArrayList<>(BUCKETS);
			for (int k = 0; k < BUCKETS; k++)
				bk.add(b.getLong(at + Layout.Hist.BUCKET + k * 8));
			t.add(new Hist(Collections.unmodifiableList(bk), b.getLong(at + Layout.Hist.COUNT),
					b.getLong(at + Layout.Hist.SUM_NS)));
		}
		long[] r = new long[OPS * CODES];
		for (int i = 0; i < r.length; i++)
			r[i] = b.getLong(Layout.Obs.RESULTS + i * 8);
		return new Obs(Collections.unmodifiableList(t), r);
	}
}
