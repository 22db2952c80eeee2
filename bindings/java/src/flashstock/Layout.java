/*
 * Layout.java -- sizes and offsets of the C structs the binding mirrors
 * (api/flashstock.h), and of the exchange area of a native handle
 * (native/fj_io.h).  Java reads and writes those structs at these offsets
 * in a direct ByteBuffer in native byte order.  The values are the C
 * compiler's: the test java_layout (LayoutTest) compares the header's
 * structs with the bindings' manifest (generated from the header at build
 * time) and fails on any difference, missing or extra field; Io, Batch and
 * FeedIo are @Native, so javac writes them into a C header and
 * native/flashstock_jni.c asserts each at compile time.
 */
package flashstock;

import java.lang.annotation.Native;

final class Layout {
	private Layout() {}

	static final class SegOpts {
		private SegOpts() {}
		static final int SIZE = 64;
		static final int MAX_ACTIVITIES = 0;
		static final int MAX_SKUS = 4;
		static final int MAX_SHARDS = 8;
		static final int MAX_USERS = 12;
		static final int MAX_TOKENS = 16;
		static final int MAX_ORDERS = 20;
		static final int MAX_REQUESTS = 24;
		static final int MAX_LOCKS = 28;
		static final int MAX_PROCS = 32;
		static final int RING_RECORDS = 36;
		static final int MODE = 40;
		static final int GID = 48;
		static final int DURABILITY = 56;
	}

	static final class Activity {
		private Activity() {}
		static final int SIZE = 48;
		static final int ID = 0;
		static final int LIMIT_PER_USER = 4;
		static final int MAX_QTY = 8;
		static final int SCOPE = 12;
		static final int FLAGS = 16;
		static final int DAY_OFFSET_S = 20;
		static final int START_NS = 24;
		static final int END_NS = 32;
		static final int VERSION = 40;
	}

	static final class OrderReq {
		private OrderReq() {}
		static final int SIZE = 56;
		static final int ACTIVITY_ID = 0;
		static final int SKU_ID = 4;
		static final int USER_ID = 8;
		static final int QTY = 16;
		static final int RESERVE_MS = 20;
		static final int TOKEN = 24;
		static final int REQUEST_ID = 32;
		static final int ACTIVITY_VERSION = 40;
		static final int SKU_VERSION = 48;
	}

	static final class OrderRes {
		private OrderRes() {}
		static final int SIZE = 24;
		static final int ORDER_NO = 0;
		static final int FIRST_RC = 8;
		static final int LIMIT_SLOT = 12;
		static final int LSN = 16;
	}

	static final class SkuInfo {
		private SkuInfo() {}
		static final int SIZE = 48;
		static final int ACTIVITY_ID = 0;
		static final int SKU_ID = 4;
		static final int SHARDS = 8;
		static final int PAD = 12;
		static final int TOTAL = 16;
		static final int AVAILABLE = 24;
		static final int PRICE = 32;
		static final int VERSION = 40;
	}

	static final class OrderInfo {
		private OrderInfo() {}
		static final int SIZE = 64;
		static final int ORDER_NO = 0;
		static final int USER_ID = 8;
		static final int ACTIVITY_ID = 16;
		static final int SKU_ID = 20;
		static final int QTY = 24;
		static final int STATE = 28;
		static final int LIMIT_SLOT = 32;
		static final int BIZ_DAY = 36;
		static final int CREATED_NS = 40;
		static final int PAY_BY_NS = 48;
		static final int LINE = 56;
		static final int LINES = 60;
	}

	static final class CartLine {
		private CartLine() {}
		static final int SIZE = 16;
		static final int SKU_ID = 0;
		static final int QTY = 4;
		static final int SKU_VERSION = 8;
	}

	static final class CartReq {
		private CartReq() {}
		static final int SIZE = 304;
		static final int ACTIVITY_ID = 0;
		static final int LINES = 4;
		static final int USER_ID = 8;
		static final int RESERVE_MS = 16;
		static final int RESERVED = 20;
		static final int TOKEN = 24;
		static final int REQUEST_ID = 32;
		static final int ACTIVITY_VERSION = 40;
		static final int LINE = 48;
		static final int LINES_MAX = 16;
	}

	static final class CartRes {
		private CartRes() {}
		static final int SIZE = 32;
		static final int ORDER_NO = 0;
		static final int FIRST_RC = 8;
		static final int LIMIT_SLOT = 12;
		static final int LSN = 16;
		static final int LINE = 24;
		static final int SOLD_OUT = 28;
	}

	static final class Stats {
		private Stats() {}
		static final int SIZE = 192;
		static final int ORDERS = 0;
		static final int CANCELS = 8;
		static final int SOLD_OUT = 16;
		static final int LIMIT_HITS = 24;
		static final int TOKEN_REJECTS = 32;
		static final int DUPLICATES = 40;
		static final int CAS_RETRIES = 48;
		static final int RECOVERIES = 56;
		static final int ROLLED_BACK = 64;
		static final int ROLLED_FORWARD = 72;
		static final int ACTIVITIES = 80;
		static final int ACTIVITIES_CAP = 84;
		static final int SKUS = 88;
		static final int SKUS_CAP = 92;
		static final int SHARDS = 96;
		static final int SHARDS_CAP = 100;
		static final int USERS = 104;
		static final int USERS_CAP = 108;
		static final int TOKENS = 112;
		static final int TOKENS_CAP = 116;
		static final int REQUESTS = 120;
		static final int REQUESTS_CAP = 124;
		static final int LOCKS = 128;
		static final int LOCKS_CAP = 132;
		static final int PROCS = 136;
		static final int PROCS_CAP = 140;
		static final int ORDERS_USED = 144;
		static final int ORDERS_CAP = 152;
		static final int SEGMENT_BYTES = 160;
		static final int DURABILITY = 168;
		static final int PAD = 172;
		static final int CONFIRMS = 176;
		static final int EXPIRIES = 184;
	}

	static final class Ident {
		private Ident() {}
		static final int SIZE = 24;
		static final int INCARNATION = 0;
		static final int WAL_LSN = 8;
		static final int CONSUMER_PID = 16;
		static final int CONSUMER_SLOT = 20;
	}

	static final class Quiet {
		private Quiet() {}
		static final int SIZE = 32;
		static final int OPS = 0;
		static final int CONSUMED = 8;
		static final int PENDING = 16;
		static final int IN_FLIGHT = 24;
		static final int PAD = 28;
	}

	static final class Io {
		private Io() {}
		@Native static final int SIZE = 1032;
		@Native static final int ORDER_REQ = 0;
		@Native static final int ORDER_RES = 56;
		@Native static final int U64 = 0;
		/* a cart (flash_cart_order): its request, its result */
		@Native static final int CART_REQ = 0;
		@Native static final int CART_RES = 304;
		/* flash_order_lines: CartReq.LINES_MAX struct flash_order_info, then the count */
		@Native static final int LINES = 0;
		@Native static final int LINES_N = 1024;
	}

	/* A cell's batch area (native/fj_io.h): for room for cap orders, cap
	 * requests (OrderReq.SIZE each) from 0, cap results (OrderRes.SIZE)
	 * from cap * OrderReq.SIZE, cap outcomes (RC_SIZE) after them. */
	static final class Batch {
		private Batch() {}
		@Native static final int ORDER_BYTES = 84;
		@Native static final int RC_SIZE = 4;
		@Native static final int MAX = 16777216;
	}

	static final class Record {
		private Record() {}
		static final int SIZE = 64;
		static final int TYPE = 0;
		static final int SLOT = 2;
		static final int ACTIVITY_ID = 4;
		static final int SKU_ID = 8;
		static final int QTY = 12;
		static final int ORDER_NO = 16;
		static final int USER_ID = 24;
		static final int VALUE = 32;
		static final int TS_NS = 40;
		static final int BIZ_DAY = 48;
		static final int LIMIT_SLOT = 52;
		static final int FLAGS = 54;
		static final int REQUEST_ID = 56;
		/* a cart's line's flags: FLASH_REC_F_CART, FLASH_REC_F_LAST */
		static final int F_CART = 256;
		static final int F_LAST = 512;
	}

	static final class FeedRec {
		private FeedRec() {}
		static final int SIZE = 96;
		static final int LSN = 0;
		static final int SEQ = 8;
		static final int REC = 16;
		static final int SOURCE = 80;
		static final int MISSING = 84;
		static final int GAP = 88;
	}

	static final class FeedInfo {
		private FeedInfo() {}
		static final int SIZE = 136;
		static final int NAME = 0;
		static final int STATE = 68;
		static final int OPEN = 72;
		static final int COMMITTED_LSN = 80;
		static final int DURABLE_LSN = 88;
		static final int FIRST_LSN = 96;
		static final int LAG_RECORDS = 104;
		static final int LAG_NS = 112;
		static final int CREATED_NS = 120;
		static final int COMMIT_NS = 128;
		static final int NAME_MAX = 64;
	}

	static final class Hist {
		private Hist() {}
		static final int SIZE = 272;
		static final int BUCKET = 0;
		static final int COUNT = 256;
		static final int SUM_NS = 264;
		static final int BUCKETS = 32;
	}

	static final class Obs {
		private Obs() {}
		static final int SIZE = 5792;
		static final int TIME = 0;
		static final int RESULTS = 2720;
		static final int TIMES = 10;
		static final int OPS = 8;
		static final int CODES = 48;
		static final int LOCK_WAIT = 8;
		static final int LOCK_HOLD = 9;
	}

	static final class FeedIo {
		private FeedIo() {}
		@Native static final int SIZE = 256;
		@Native static final int REC = 0;
		@Native static final int INFO = 0;
	}
}
