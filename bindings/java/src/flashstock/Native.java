/*
 * Native.java -- the JNI entry points of libflashstock_jni (native/flashstock_jni.c).
 *
 * One static method per flash_* call.  A handle is a "cell" (struct fj_cell,
 * native/fj_io.h): its address travels as a long, and structs travel
 * through the cell's exchange area, a direct ByteBuffer that Java reads and
 * writes at the offsets of Layout.  Every method returns the C call's
 * result code unchanged (0 or a negative FLASH_E* code) or, where said, a
 * non-negative value.  Nothing here checks threads: FlashStock only ever
 * passes a cell to the thread that opened it.
 */
package flashstock;

import java.io.File;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;

final class Native {
	private Native() {}

	static {
		load();
	}

	/*
	 * Where the JNI library is: the system property flashstock.library
	 * (a path, for the build tree's tests), else the installed layout
	 * (Build.LIB_FROM_JAR from the jar's directory, baked in at configure
	 * time: share/java/flashstock.jar -> lib/libflashstock_jni.so), else
	 * the jar's own directory (the build tree), else java.library.path.  The JNI library finds libflashstock.so by its
	 * run path ($ORIGIN), so no environment variable is needed.
	 */
	private static void load() {
		String path = System.getProperty("flashstock.library");
		if (path != null) {
			System.load(new File(path).getAbsolutePath());
			return;
		}
		try {
			File jar = new File(Native.class.getProtectionDomain().getCodeSource().getLocation().toURI());
			String so = System.mapLibraryName("flashstock_jni");
			for (File lib : new File[] { new File(jar.getParentFile(), Build.LIB_FROM_JAR + "/" + so),
					new File(jar.getParentFile(), so) }) {
				if (jar.isFile() && lib.isFile()) {
					System.load(lib.getCanonicalPath());
					return;
				}
			}
		} catch (URISyntaxException | java.io.IOException | SecurityException | NullPointerException e) {
			// fall through to the library path
		}
		System.loadLibrary("flashstock_jni");
	}

	/* 1. result codes */
	static native String strerror(int rc);
	static native String rcname(int rc);

	/* 2. segments: io is a direct buffer of Layout.Io.SIZE bytes */
	static native void segOptsDefault(ByteBuffer io);
	/** flash_seg_size(opts at io, &bytes); bytes at Layout.Io.U64 (io null: the defaults) */
	static native int segSize(ByteBuffer io);
	static native int segCreate(String name, ByteBuffer io);
	static native int segDestroy(String name);
	static native int activityCheck(ByteBuffer io);

	/* 3. handles */
	/** flash_open: the cell's address, or a negative code */
	static native long open(String name, int flags);
	/** the cell's exchange area as a direct buffer (native byte order not set) */
	static native ByteBuffer io(long cell);
	/** flash_close and free the cell (any thread, once the owner's last call is done) */
	static native int close(long cell);
	/** handles recovered, or a negative code */
	static native int recover(long cell);
	static native int slot(long cell);
	static native int segOptsGet(long cell);

	/* 4. catalog */
	static native int activityAdd(long cell);
	static native int skuAdd(long cell, int activityId, int skuId, long units, int shards);
	/** flash_activity_get into the exchange area's activity */
	static native int activityGet(long cell, int id);
	/** flash_activity_update of the exchange area's activity; the new version in its u64 */
	static native int activityUpdate(long cell);
	/** flash_sku_price_set; the new version in the exchange area's u64 */
	static native int skuPriceSet(long cell, int activityId, int skuId, long price);

	/* 5. orders: request at Layout.Io.ORDER_REQ, result at Layout.Io.ORDER_RES */
	static native int order(long cell);
	/** flash_cart_order: request at Layout.Io.CART_REQ, result at Layout.Io.CART_RES */
	static native int cartOrder(long cell);
	/**
	 * the cell's batch area (native/fj_io.h) with room for cap orders (native byte order not set);
	 * the buffer it replaces must not be used again
	 */
	static native ByteBuffer batchIo(long cell, int cap);
	/** flash_order_many on the first n requests of the batch area (n <= its room) */
	static native int orderMany(long cell, int n);
	static native int syncWaitSet(long cell, int waitMs);
	static native int durableWait(long cell, long lsn, int waitMs);
	/** units returned, or a negative code */
	static native int cancel(long cell, long orderNo);
	static native int confirm(long cell, long orderNo);
	/** units returned, or a negative code */
	static native int expire(long cell, long orderNo);
	/** reservations expired (max 0: no bound), or a negative code */
	static native int expireDue(long cell, int max);
	static native int restock(long cell, int activityId, int skuId, long delta);

	/* 6. tokens: the token at Layout.Io.U64 */
	static native int tokenIssue(long cell, int activityId, int skuId, long userId, int ttlMs);
	static native int tokenRedeem(long cell, int activityId, int skuId, long userId, long token);

	/* 7. leased locks: the fence at Layout.Io.U64 */
	static native int lockAcquire(long cell, String name, long owner, int leaseMs);
	static native int lockRenew(long cell, String name, long owner, int leaseMs);
	static native int lockRelease(long cell, String name, long owner);

	/* 8. reading state: the struct at offset 0 of the exchange area */
	static native int skuGet(long cell, int activityId, int skuId);
	static native int activityAt(long cell, int index);
	static native int skuAt(long cell, int index);
	static native int orderGet(long cell, long orderNo);
	/** flash_order_lines: the lines from Layout.Io.LINES, their count at Layout.Io.LINES_N */
	static native int orderLines(long cell, long orderNo);
	static native long ordersMax(long cell);
	static native int statsGet(long cell);
	static native int identGet(long cell);
	static native int quietGet(long cell);

	/* 9. observation: flash_obs_get into obs (a direct buffer of Layout.Obs.SIZE bytes) */
	static native int obsGet(long cell, ByteBuffer obs);
	/** flash_obs_bucket_le_ns(b): unsigned (-1 is UINT64_MAX, the last bucket) */
	static native long obsBucketLeNs(int b);
	static native String opName(int op);

	/* 10. order feed: a feed cell of its own (fj_feed), used by one thread at a time */
	/** flash_feed_open: the feed cell's address, or a negative code (url, stream may be null) */
	static native long feedOpen(String walDir, String consumer, int fromStart, int noCreate, String mysqlUrl,
			String mysqlStream);
	/** the feed cell's exchange area (Layout.FeedIo.SIZE bytes) as a direct buffer */
	static native ByteBuffer feedIo(long feed);
	/** flash_feed_next: the record at Layout.FeedIo.REC */
	static native int feedNext(long feed, int waitMs);
	static native int feedCommit(long feed, long lsn);
	static native int feedRewind(long feed);
	/** flash_feed_info_get: the info at Layout.FeedIo.INFO */
	static native int feedInfo(long feed);
	/** flash_feed_close and free the cell (once, no call in progress) */
	static native int feedClose(long feed);
	/** flash_feed_list into out (cap infos; null with cap 0): the number registered, or a negative code */
	static native int feedList(String walDir, ByteBuffer out, int cap);
	static native int feedDrop(String walDir, String consumer);

	/* the bench's C baseline: n orders in a C loop (flash_order_many in batches of batch
	 * orders when batch > 1); elapsed ns or a negative code */
	static native long benchOrdersC(long cell, int activityId, int skuId, long userBase, int n, int batch);
}
