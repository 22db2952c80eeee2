/*
 * FlashStock.java -- one segment, from any number of threads.
 *
 * The C library's handle (flash_t) belongs to the thread that opened it.
 * A FlashStock hides that rule: it keeps one native handle per thread
 * (a ThreadLocal "cell", opened by the thread's first call), and only ever
 * passes a thread its own handle.  A handle is closed
 *   - by close(), for every thread at once, each after its thread's call in
 *     progress (if any) has returned;
 *   - by releaseThread(), for the calling thread;
 *   - by a Cleaner once its thread's cell is unreachable (a thread's
 *     ThreadLocal values are dropped when it ends), since flash_close() may
 *     run on any thread once the owner has made its last call;
 *   - by a Cleaner, all of them, once the FlashStock itself is unreachable.
 *
 * Errors: order() returns the outcomes a sale expects as answers in its
 * OrderResult (sold out, limit reached, ...), orderMany() every order's
 * outcome; every other failure, of every call, is thrown as a
 * FlashException (unchecked) carrying the code.
 */
package flashstock;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.ConcurrentModificationException;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

public final class FlashStock implements AutoCloseable {
	/** FLASH_RDONLY: map read-only, for monitors; no process-table slot is taken. */
	public static final int RDONLY = 0x1;

	private static final Cleaner CLEANER = Cleaner.create();
	private static final VarHandle BUSY;

	static {
		try {
			BUSY = MethodHandles.lookup().findVarHandle(Handle.class, "busy", int.class);
		} catch (ReflectiveOperationException e) {
			throw new ExceptionInInitializerError(e);
		}
	}

	/*
	 * The native side of one handle, and the Cleaner's action for it.  It
	 * holds no reference to its Cell, so the Cell (held only by its thread's
	 * ThreadLocal map) can become unreachable while this stays in `live`.
	 */
	private static final class Handle implements Runnable {
		final long cell;
		final Set<Handle> live;
		/* 1 while the owner thread is inside a call (see enter()) */
		volatile int busy;
		private boolean freed;

		Handle(long cell, Set<Handle> live) {
			this.cell = cell;
			this.live = live;
		}

		/* flash_close and free, once; waits for the owner's call in progress. */
		@Override
		public void run() {
			synchronized (this) {
				if (freed)
					return;
				while (busy != 0)
					Thread.onSpinWait();
				freed = true;
				Native.close(cell);
			}
			live.remove(this);
		}
	}

	/* What a thread keeps: its handle and the handle's exchange areas. */
	private static final class Cell {
		final Handle h;
		final ByteBuffer io;
		ByteBuffer batch;  // the batch area (orderMany), null before the first batch
		int batchCap;      // orders it has room for
		Cleaner.Cleanable cleanable;
		int waitGen;  // the syncWaitMs generation applied to this handle

		Cell(Handle h, ByteBuffer io) {
			this.h = h;
			this.io = io;
		}
	}

	private final String name;
	private final int flags;
	private final Set<Handle> live = ConcurrentHashMap.newKeySet();
	private final ThreadLocal<Cell> local = new ThreadLocal<>();
	private volatile boolean closed;
	private volatile int syncWaitMs;
	private volatile int syncWaitGen;

	private FlashStock(String name, int flags) {
		this.name = name;
		this.flags = flags;
		/* dropped without close(): no call can be in progress on an
		 * unreachable object, so its handles are closed then */
		CLEANER.register(this, new CloseAll(live));
	}

	/* The Cleaner's action for an unreachable FlashStock: close every handle. */
	private static final class CloseAll implements Runnable {
		private final Set<Handle> live;

		CloseAll(Set<Handle> live) {
			this.live = live;
		}

		@Override
		public void run() {
			for (Handle h : live.toArray(new Handle[0]))
				h.run();
		}
	}

	/**
	 * Attach to segment {@code name}: opens the calling thread's handle now
	 * (so a missing or bad segment is reported here), the other threads'
	 * at their first call.
	 * @param flags 0 or RDONLY
	 * @throws FlashException NoSegment, an attach check's code, NoProc, ...
	 */
	public static FlashStock open(String name, int flags) {
		FlashStock fs = new FlashStock(name, flags);
		fs.cell();
		return fs;
	}

	public static FlashStock open(String name) {
		return open(name, 0);
	}

	/** The segment's name. */
	public String name() {
		return name;
	}

	/* ------------------------------------------------------------ threads */

	private Cell cell() {
		Cell c = local.get();
		return c != null ? c : openCell();
	}

	private Cell openCell() {
		if (closed)
			throw new IllegalStateException("FlashStock " + name + " is closed");
		long addr = Native.open(name, flags);
		if (addr < 0)
			throw FlashException.of((int) addr);
		Handle h = new Handle(addr, live);
		live.add(h);
		if (closed) {  // close() ran meanwhile and may not have seen h
			h.run();
			throw new IllegalStateException("FlashStock " + name + " is closed");
		}
		ByteBuffer io;
		try {
			io = Native.io(addr);  // NewDirectByteBuffer may throw OutOfMemoryError
		} catch (Error e) {
			h.run();
			throw e;
		}
		Cell c = new Cell(h, io.order(ByteOrder.nativeOrder()));
		c.cleanable = CLEANER.register(c, h);
		local.set(c);
		return c;
	}

	/*
	 * Enter a call on the thread's own handle.  busy = 1 and the read of
	 * `closed` are both volatile (sequentially consistent), as are
	 * close()'s write of `closed` and Handle.run()'s read of busy: either
	 * this thread sees closed and stops, or close() sees busy and waits
	 * until leave().  So no handle is freed under a call.
	 */
	private Cell enter() {
		Cell c = cell();
		c.h.busy = 1;
		if (closed) {
			c.h.busy = 0;
			throw new IllegalStateException("FlashStock " + name + " is closed");
		}
		return c;
	}

	/*
	 * enter() for the calls that may wait for the daemon in sync durability
	 * (order, cancel, confirm, expire, restock): the thread's handle first takes the wait
	 * bound of syncWaitSet() if it has not yet.
	 */
	private Cell enterWaiting() {
		Cell c = enter();
		if (c.waitGen != syncWaitGen) {
			try {
				applySyncWait(c);
			} catch (RuntimeException e) {
				leave(c);
				throw e;
			}
		}
		return c;
	}

	/*
	 * A release store is enough here: it orders every access of this call
	 * to the handle and its buffer before busy = 0, which is all close()
	 * needs before it frees them (it reads busy with acquire semantics, as
	 * every volatile read has).  It saves the full fence of a volatile store.
	 */
	private static void leave(Cell c) {
		BUSY.setRelease(c.h, 0);
	}

	/** Close the calling thread's handle now (it is opened again by its next call). */
	public void releaseThread() {
		Cell c = local.get();
		if (c != null) {
			local.remove();
			c.cleanable.clean();
		}
	}

	/** Close every thread's handle; later calls throw IllegalStateException. */
	@Override
	public void close() {
		closed = true;
		releaseThread();
		for (Handle h : live.toArray(new Handle[0]))
			h.run();
	}

	/* Calls in progress now, over every thread (for tests). */
	int callsInProgress() {
		int n = 0;
		for (Handle h : live)
			n += h.busy;
		return n;
	}

	/** Handles open now (one per thread that has called and not released it). */
	public int openHandles() {
		return live.size();
	}

	/* ------------------------------------------------------------ static: codes and segments */

	/* An exchange area for the calls that take no handle. */
	static ByteBuffer scratch() {
		return ByteBuffer.allocateDirect(Layout.Io.SIZE).order(ByteOrder.nativeOrder());
	}

	/** flash_strerror(rc) */
	public static String strerror(int rc) {
		return Native.strerror(rc);
	}

	/** flash_rcname(rc): "FLASH_ESOLD_OUT", "FLASH_E?" for an unknown code */
	public static String rcname(int rc) {
		return Native.rcname(rc);
	}

	/** Create a segment (null opts: the defaults). */
	public static void createSegment(String name, SegOpts opts) {
		ByteBuffer b = null;
		if (opts != null) {
			b = scratch();
			opts.write(b);
		}
		FlashException.check(Native.segCreate(name, b));
	}

	/** Remove the segment's name; attached handles keep working until closed. */
	public static void destroySegment(String name) {
		FlashException.check(Native.segDestroy(name));
	}

	/** The bytes of shared memory a segment with these options needs. */
	public static long segmentSize(SegOpts opts) {
		ByteBuffer b = scratch();
		(opts != null ? opts : SegOpts.defaults()).write(b);
		FlashException.check(Native.segSize(b));
		return b.getLong(Layout.Io.U64);
	}

	/** The checks activityAdd() makes, without a segment. */
	public static void activityCheck(Activity a) {
		ByteBuffer b = scratch();
		a.write(b);
		FlashException.check(Native.activityCheck(b));
	}

	/* ------------------------------------------------------------ handles */

	/** Recover dead handles' operations; the number of dead handles recovered. */
	public int recover() {
		Cell c = enter();
		try {
			return FlashException.check(Native.recover(c.h.cell));
		} finally {
			leave(c);
		}
	}

	/** The calling thread's handle's process-table slot (-1 for a read-only handle). */
	public int slot() {
		Cell c = enter();
		try {
			int s = Native.slot(c.h.cell);
			if (s < -1)
				throw FlashException.of(s);
			return s;
		} finally {
			leave(c);
		}
	}

	/** The options the segment was created with. */
	public SegOpts segOpts() {
		Cell c = enter();
		try {
			FlashException.check(Native.segOptsGet(c.h.cell));
			return SegOpts.read(c.io);
		} finally {
			leave(c);
		}
	}

	/* ------------------------------------------------------------ catalog */

	public void activityAdd(Activity a) {
		Cell c = enter();
		try {
			a.write(c.io);
			FlashException.check(Native.activityAdd(c.h.cell));
		} finally {
			leave(c);
		}
	}

	public void skuAdd(int activityId, int skuId, long units, int shards) {
		Cell c = enter();
		try {
			FlashException.check(Native.skuAdd(c.h.cell, activityId, skuId, units, shards));
		} finally {
			leave(c);
		}
	}

	/* ------------------------------------------------------------ terms and their versions */

	/**
	 * Activity id's terms and their version (flash_activity_get): a page
	 * shows version() with the terms, and an order names it
	 * (OrderRequest.withVersions).  Throws NotFound when there is no such
	 * activity, or it was archived.
	 */
	public Activity activityGet(int id) {
		Cell c = enter();
		try {
			FlashException.check(Native.activityGet(c.h.cell, id));
			return Activity.read(c.io);
		} finally {
			leave(c);
		}
	}

	/**
	 * Give live activity a.id() the terms of a -- its window, limitPerUser,
	 * maxQty and flags -- and return their new version
	 * (flash_activity_update).  a.version() 0 changes them whatever their
	 * version; the version activityGet read, only if they are still at it,
	 * else Stale (another change came in between; nothing changed).  Throws InvalidArgument when scope or
	 * dayOffsetS differ from the current ones or limitPerUser is lower (a
	 * limit may grow, never shrink), NotFound, Ended (being archived), Busy
	 * (nothing changed: retry), ...  Blocks briefly: the orders open in other
	 * handles end first (at most 2 s); buyers never wait for it.
	 */
	public long activityUpdate(Activity a) {
		Cell c = enter();
		try {
			a.write(c.io);
			FlashException.check(Native.activityUpdate(c.h.cell));
			return c.io.getLong(Layout.Io.U64);
		} finally {
			leave(c);
		}
	}

	/**
	 * Set a sku's price (the shop's smallest unit, 0..SkuInfo.PRICE_MAX; a sku starts
	 * at 0) and return the new version of its terms, moved on also for the
	 * same price (flash_sku_price_set).  Throws and blocks as activityUpdate.
	 */
	public long skuPriceSet(int activityId, int skuId, long price) {
		Cell c = enter();
		try {
			FlashException.check(Native.skuPriceSet(c.h.cell, activityId, skuId, price));
			return c.io.getLong(Layout.Io.U64);
		} finally {
			leave(c);
		}
	}

	/* ------------------------------------------------------------ orders */

	/**
	 * Place an order (flash_order).  Returns the outcome for FLASH_OK and
	 * for the answers a sale gives most requests (sold out, limit reached,
	 * not started, ended, bad token, a retried request id with its first
	 * outcome, terms changed since the versions the request names:
	 * FLASH_ESTALE, nothing taken) and FLASH_EFATE_UNKNOWN (placed; its order number and lsn
	 * are needed); throws FlashException for any other code
	 * (InvalidArgument, NotFound, Full, Busy, Durability, ...).
	 */
	public OrderResult order(OrderRequest r) {
		Cell c = enterWaiting();
		try {
			ByteBuffer b = c.io;
			b.putInt(Layout.Io.ORDER_REQ + Layout.OrderReq.ACTIVITY_ID, r.activityId());
			b.putInt(Layout.Io.ORDER_REQ + Layout.OrderReq.SKU_ID, r.skuId());
			b.putLong(Layout.Io.ORDER_REQ + Layout.OrderReq.USER_ID, r.userId());
			b.putInt(Layout.Io.ORDER_REQ + Layout.OrderReq.QTY, r.qty());
			b.putInt(Layout.Io.ORDER_REQ + Layout.OrderReq.RESERVE_MS, r.reserveMs());
			b.putLong(Layout.Io.ORDER_REQ + Layout.OrderReq.TOKEN, r.token());
			b.putLong(Layout.Io.ORDER_REQ + Layout.OrderReq.REQUEST_ID, r.requestId());
			b.putLong(Layout.Io.ORDER_REQ + Layout.OrderReq.ACTIVITY_VERSION, r.activityVersion());
			b.putLong(Layout.Io.ORDER_REQ + Layout.OrderReq.SKU_VERSION, r.skuVersion());
			/* FLASH_EDUPLICATE writes first_rc and order_no only: clear the slot */
			b.putInt(Layout.Io.ORDER_RES + Layout.OrderRes.LIMIT_SLOT, 0);
			int rc = Native.order(c.h.cell);
			OrderResult a = answer(rc, b, Layout.Io.ORDER_RES);
			if (a == null)
				throw FlashException.of(rc);
			return a;
		} finally {
			leave(c);
		}
	}

	/**
	 * Place a cart (flash_cart_order): 1..CartRequest.LINES_MAX lines of
	 * distinct skus of one activity as one order, all or nothing -- every
	 * line's units and one limit slot taken, or none.  Its number is the
	 * cart's (its later lines hold the numbers after it: orderLines() reads
	 * it whole); cancel(), confirm() and expire() of it act on every line.
	 * Returns the outcome for FLASH_OK and the answers order() returns
	 * (sold out, with line() and soldOutLines(); limit reached; stale; a
	 * retried request id; FLASH_EFATE_UNKNOWN); throws FlashException for
	 * any other code, line() naming the line refused (NotFound of its sku,
	 * InvalidArgument of its qty or a sku twice); an activity of
	 * Scope.SKU refuses carts (InvalidArgument), as does a cart of no line
	 * or more than LINES_MAX.
	 */
	public CartResult cartOrder(CartRequest r) {
		List<CartLine> ls = r.lines();
		if (ls.size() > CartRequest.LINES_MAX)
			throw FlashException.of(-9).atLine(0, List.of());
		Cell c = enterWaiting();
		try {
			ByteBuffer b = c.io;
			int q = Layout.Io.CART_REQ;
			b.putInt(q + Layout.CartReq.ACTIVITY_ID, r.activityId());
			b.putInt(q + Layout.CartReq.LINES, ls.size());
			b.putLong(q + Layout.CartReq.USER_ID, r.userId());
			b.putInt(q + Layout.CartReq.RESERVE_MS, r.reserveMs());
			b.putInt(q + Layout.CartReq.RESERVED, 0);
			b.putLong(q + Layout.CartReq.TOKEN, r.token());
			b.putLong(q + Layout.CartReq.REQUEST_ID, r.requestId());
			b.putLong(q + Layout.CartReq.ACTIVITY_VERSION, r.activityVersion());
			for (int i = 0; i < ls.size(); i++) {
				int at = q + Layout.CartReq.LINE + i * Layout.CartLine.SIZE;
				CartLine l = ls.get(i);
				b.putInt(at + Layout.CartLine.SKU_ID, l.skuId());
				b.putInt(at + Layout.CartLine.QTY, l.qty());
				b.putLong(at + Layout.CartLine.SKU_VERSION, l.skuVersion());
			}
			for (int off = 0; off < Layout.CartRes.SIZE; off += 8)   /* every field as the call leaves it */
				b.putLong(Layout.Io.CART_RES + off, 0);
			int rc = Native.cartOrder(c.h.cell);
			int at = Layout.Io.CART_RES;
			CartResult res = new CartResult(rc, b.getLong(at + Layout.CartRes.ORDER_NO),
					b.getInt(at + Layout.CartRes.FIRST_RC), b.getInt(at + Layout.CartRes.LIMIT_SLOT),
					b.getLong(at + Layout.CartRes.LSN), b.getInt(at + Layout.CartRes.LINE),
					rc == -1 ? b.getInt(at + Layout.CartRes.SOLD_OUT) : 0);
			if (rc != 0 && answer(rc, b, at) == null)
				throw res.error();
			return res;
		} finally {
			leave(c);
		}
	}

	/*
	 * The OrderResult of outcome rc, whose struct flash_order_res is at
	 * offset `at` of b, for the codes order() returns; null for the codes
	 * it throws.
	 */
	private static OrderResult answer(int rc, ByteBuffer b, int at) {
		switch (rc) {
		case 0:    // FLASH_OK
		case -33:  // FLASH_EFATE_UNKNOWN: placed, res filled as for FLASH_OK
			return new OrderResult(rc, b.getLong(at + Layout.OrderRes.ORDER_NO), 0,
					b.getInt(at + Layout.OrderRes.LIMIT_SLOT), b.getLong(at + Layout.OrderRes.LSN));
		case -7:   // FLASH_EDUPLICATE: the first outcome
			return new OrderResult(rc, b.getLong(at + Layout.OrderRes.ORDER_NO),
					b.getInt(at + Layout.OrderRes.FIRST_RC), b.getInt(at + Layout.OrderRes.LIMIT_SLOT), 0);
		case -1:   // FLASH_ESOLD_OUT
		case -2:   // FLASH_ELIMIT
		case -3:   // FLASH_ENOT_STARTED
		case -4:   // FLASH_EENDED
		case -6:   // FLASH_EBAD_TOKEN
		case -53:  // FLASH_ESTALE: the page's terms changed; show the new ones
			return new OrderResult(rc, 0, 0, 0, 0);
		default:
			return null;
		}
	}

	/**
	 * Place the orders of {@code rs} in one call (flash_order_many): each is
	 * judged and committed as order() one after another would (a later
	 * order sees the earlier ones: the same user's limit, a repeated
	 * request id's first outcome), with the handle's checks, the clock read
	 * and, in sync durability, the wait for the daemon paid once for the
	 * batch.  Returns one OrderResult per request, in their order, for
	 * every outcome: those order() returns, and those it throws
	 * (InvalidArgument, NotFound, Full, Busy, ...: the result's error() is
	 * that exception), so one refusal never hides the later orders'
	 * outcomes.  In sync durability every order placed reads FLASH_OK, or
	 * all of them FLASH_EFATE_UNKNOWN, or FLASH_EDURABILITY with orderNo
	 * and lsn (orderNo 0: refused, the WAL had failed before it).  An empty
	 * list returns an empty list, and no order runs.
	 * Throws, before any order runs: what the handle refuses (ReadOnly,
	 * WrongThread; IllegalStateException once closed), NullPointerException
	 * for a null list or request, InvalidArgument for more than 2^24
	 * requests.  The thread's batch area (native memory, 84 bytes an
	 * order) grows to its largest batch and is kept until its handle
	 * closes.
	 */
	public List<OrderResult> orderMany(List<OrderRequest> rs) {
		int n = rs.size();
		if (n > Layout.Batch.MAX)
			throw FlashException.of(-9);
		Cell c = enterWaiting();
		try {
			if (n == 0)
				return List.of();
			if (n > c.batchCap)
				growBatch(c, n);
			ByteBuffer b = c.batch;
			int res = c.batchCap * Layout.OrderReq.SIZE;
			int rcs = res + c.batchCap * Layout.OrderRes.SIZE;
			int i = 0;
			for (OrderRequest r : rs) {
				if (i == n)
					throw new ConcurrentModificationException();
				int at = i * Layout.OrderReq.SIZE;
				b.putInt(at + Layout.OrderReq.ACTIVITY_ID, r.activityId());
				b.putInt(at + Layout.OrderReq.SKU_ID, r.skuId());
				b.putLong(at + Layout.OrderReq.USER_ID, r.userId());
				b.putInt(at + Layout.OrderReq.QTY, r.qty());
				b.putInt(at + Layout.OrderReq.RESERVE_MS, r.reserveMs());
				b.putLong(at + Layout.OrderReq.TOKEN, r.token());
				b.putLong(at + Layout.OrderReq.REQUEST_ID, r.requestId());
				b.putLong(at + Layout.OrderReq.ACTIVITY_VERSION, r.activityVersion());
				b.putLong(at + Layout.OrderReq.SKU_VERSION, r.skuVersion());
				/* as order(): a duplicate writes no slot; and a refused
				 * order no number, which tells FLASH_EDURABILITY's placed
				 * orders from its refused ones */
				at = res + i * Layout.OrderRes.SIZE;
				b.putLong(at + Layout.OrderRes.ORDER_NO, 0);
				b.putInt(at + Layout.OrderRes.LIMIT_SLOT, 0);
				i++;
			}
			if (i != n)
				throw new ConcurrentModificationException();
			int rc = Native.orderMany(c.h.cell, n);
			if (rc != 0)
				throw FlashException.of(rc);
			OrderResult[] out = new OrderResult[n];
			for (i = 0; i < n; i++) {
				int orc = b.getInt(rcs + i * Layout.Batch.RC_SIZE), at = res + i * Layout.OrderRes.SIZE;
				OrderResult a = answer(orc, b, at);
				if (a == null) {
					long no = orc == -10 ? b.getLong(at + Layout.OrderRes.ORDER_NO) : 0;
					a = no == 0 ? new OrderResult(orc, 0, 0, 0, 0)   // refused: order() throws it
							: new OrderResult(orc, no, 0, b.getInt(at + Layout.OrderRes.LIMIT_SLOT),
									b.getLong(at + Layout.OrderRes.LSN));  // FLASH_EDURABILITY: placed
				}
				out[i] = a;
			}
			return Collections.unmodifiableList(Arrays.asList(out));
		} finally {
			leave(c);
		}
	}

	/* Give the thread's handle a batch area with room for n orders (a power
	 * of two, at least 16), kept for its later batches. */
	private static void growBatch(Cell c, int n) {
		int cap = Math.max(16, Integer.highestOneBit(n - 1) << 1);
		c.batch = Native.batchIo(c.h.cell, cap).order(ByteOrder.nativeOrder());
		c.batchCap = cap;
	}

	/** order(OrderRequest.of(activityId, skuId, userId, qty)) */
	public OrderResult order(int activityId, int skuId, long userId, int qty) {
		return order(OrderRequest.of(activityId, skuId, userId, qty));
	}

	/**
	 * Bound the sync waits of every handle of this object (flash_sync_wait_set):
	 * applied to each thread's handle before its next order, cancel or restock.
	 */
	public void syncWaitSet(int waitMs) {
		if (waitMs <= 0)
			throw FlashException.of(-9);
		synchronized (this) {
			syncWaitMs = waitMs;
			syncWaitGen = syncWaitGen + 1;
		}
		Cell c = enter();
		try {
			applySyncWait(c);
		} finally {
			leave(c);
		}
	}

	private void applySyncWait(Cell c) {
		int gen = syncWaitGen;
		int ms = syncWaitMs;
		if (ms != 0)
			FlashException.check(Native.syncWaitSet(c.h.cell, ms));
		c.waitGen = gen;
	}

	/**
	 * Wait at most waitMs until the record at {@code lsn} is durable
	 * (flash_durable_wait).  The lsn is of the calling thread's handle: call
	 * it on the thread that placed the order.
	 * @return true when durable, false on FLASH_EFATE_UNKNOWN (not yet)
	 */
	public boolean durableWait(long lsn, int waitMs) {
		Cell c = enter();
		try {
			int rc = Native.durableWait(c.h.cell, lsn, waitMs);
			if (rc == -33)
				return false;
			FlashException.check(rc);
			return true;
		} finally {
			leave(c);
		}
	}

	/** Cancel an order; the units returned.  Throws Cancelled when already cancelled. */
	public int cancel(long orderNo) {
		Cell c = enterWaiting();
		try {
			return FlashException.check(Native.cancel(c.h.cell, orderNo));
		} finally {
			leave(c);
		}
	}

	/*
	 * Reservations: an order placed with OrderRequest.reserveMs is RESERVED,
	 * holding its units and limit slot, until exactly one of confirm()
	 * (paid: ACTIVE), cancel() (CANCELLED) or an expiry at its pay-by time
	 * (EXPIRED: units back) wins.  A confirm or cancel that comes after the
	 * pay-by time expires it and throws Expired.
	 */

	/**
	 * Confirm (pay) reservation orderNo (flash_confirm): RESERVED -> ACTIVE.
	 * An order ACTIVE already is confirmed again without a word (a retried
	 * payment callback).  Throws Expired when its pay-by time passed (it is
	 * expired now: its units are back in stock), Cancelled, NotFound, ...
	 */
	public void confirm(long orderNo) {
		Cell c = enterWaiting();
		try {
			FlashException.check(Native.confirm(c.h.cell, orderNo));
		} finally {
			leave(c);
		}
	}

	/**
	 * Expire reservation orderNo once its pay-by time has come
	 * (flash_expire); the units returned.  Throws NotDue before it,
	 * Confirmed for an ACTIVE order, Expired when expired already (nothing
	 * returned), Cancelled, NotFound, ...
	 */
	public int expire(long orderNo) {
		Cell c = enterWaiting();
		try {
			return FlashException.check(Native.expire(c.h.cell, orderNo));
		} finally {
			leave(c);
		}
	}

	/**
	 * Expire every reservation of the segment whose pay-by time has come, at
	 * most max of them (0: no bound), as a process without a daemon must
	 * (flash_expire_due); how many this call expired.  Throws the first
	 * failure other than the races another handle wins; those expired before
	 * it stay expired.
	 */
	public int expireDue(int max) {
		if (max < 0)
			throw FlashException.of(-9);
		Cell c = enterWaiting();
		try {
			return FlashException.check(Native.expireDue(c.h.cell, max));
		} finally {
			leave(c);
		}
	}

	/** Adjust a sku's stock by delta units (negative removes unsold units). */
	public void restock(int activityId, int skuId, long delta) {
		Cell c = enterWaiting();
		try {
			FlashException.check(Native.restock(c.h.cell, activityId, skuId, delta));
		} finally {
			leave(c);
		}
	}

	/* ------------------------------------------------------------ tokens */

	/** Issue a one-time token for (activity, sku, user), valid for ttlMs. */
	public long tokenIssue(int activityId, int skuId, long userId, int ttlMs) {
		Cell c = enter();
		try {
			FlashException.check(Native.tokenIssue(c.h.cell, activityId, skuId, userId, ttlMs));
			return c.io.getLong(Layout.Io.U64);
		} finally {
			leave(c);
		}
	}

	/** Redeem a token outside the order path; throws BadToken unless it was live. */
	public void tokenRedeem(int activityId, int skuId, long userId, long token) {
		Cell c = enter();
		try {
			FlashException.check(Native.tokenRedeem(c.h.cell, activityId, skuId, userId, token));
		} finally {
			leave(c);
		}
	}

	/* ------------------------------------------------------------ locks */

	/** Acquire a leased lock; the fencing token.  Throws Locked when another live owner holds it. */
	public long lockAcquire(String lockName, long owner, int leaseMs) {
		Cell c = enter();
		try {
			FlashException.check(Native.lockAcquire(c.h.cell, lockName, owner, leaseMs));
			return c.io.getLong(Layout.Io.U64);
		} finally {
			leave(c);
		}
	}

	public void lockRenew(String lockName, long owner, int leaseMs) {
		Cell c = enter();
		try {
			FlashException.check(Native.lockRenew(c.h.cell, lockName, owner, leaseMs));
		} finally {
			leave(c);
		}
	}

	public void lockRelease(String lockName, long owner) {
		Cell c = enter();
		try {
			FlashException.check(Native.lockRelease(c.h.cell, lockName, owner));
		} finally {
			leave(c);
		}
	}

	/* ------------------------------------------------------------ reading state */

	public SkuInfo skuGet(int activityId, int skuId) {
		Cell c = enter();
		try {
			FlashException.check(Native.skuGet(c.h.cell, activityId, skuId));
			return SkuInfo.read(c.io);
		} finally {
			leave(c);
		}
	}

	/** The catalog's activity at index (0..); empty past the end. */
	public Optional<Activity> activityAt(int index) {
		Cell c = enter();
		try {
			int rc = Native.activityAt(c.h.cell, index);
			if (rc == -5)
				return Optional.empty();
			FlashException.check(rc);
			return Optional.of(Activity.read(c.io));
		} finally {
			leave(c);
		}
	}

	/** The catalog's sku at index (0..); empty past the end. */
	public Optional<SkuInfo> skuAt(int index) {
		Cell c = enter();
		try {
			int rc = Native.skuAt(c.h.cell, index);
			if (rc == -5)
				return Optional.empty();
			FlashException.check(rc);
			return Optional.of(SkuInfo.read(c.io));
		} finally {
			leave(c);
		}
	}

	/** Every activity of the catalog. */
	public List<Activity> activities() {
		List<Activity> l = new ArrayList<>();
		for (int i = 0;; i++) {
			Optional<Activity> a = activityAt(i);
			if (a.isEmpty())
				return l;
			l.add(a.get());
		}
	}

	/** Every sku of the catalog. */
	public List<SkuInfo> skus() {
		List<SkuInfo> l = new ArrayList<>();
		for (int i = 0;; i++) {
			Optional<SkuInfo> s = skuAt(i);
			if (s.isEmpty())
				return l;
			l.add(s.get());
		}
	}

	public OrderInfo orderGet(long orderNo) {
		Cell c = enter();
		try {
			FlashException.check(Native.orderGet(c.h.cell, orderNo));
			return OrderInfo.read(c.io);
		} finally {
			leave(c);
		}
	}

	/**
	 * Every line of order orderNo (flash_order_lines), in line order: one
	 * for a plain order, 2..CartRequest.LINES_MAX for a cart (each line's
	 * skuId, qty and line; the cart's number, state and other fields).
	 * Throws NotFound for a number that holds no order, also the number of
	 * a cart's later line (the cart is orderNo - line).
	 */
	public List<OrderInfo> orderLines(long orderNo) {
		Cell c = enter();
		try {
			FlashException.check(Native.orderLines(c.h.cell, orderNo));
			int n = Math.min(c.io.getInt(Layout.Io.LINES_N), CartRequest.LINES_MAX);
			List<OrderInfo> out = new ArrayList<>(n);
			for (int i = 0; i < n; i++)
				out.add(OrderInfo.read(c.io, Layout.Io.LINES + i * Layout.OrderInfo.SIZE));
			return List.copyOf(out);
		} finally {
			leave(c);
		}
	}

	/** Highest order number any handle has taken so far. */
	public long ordersMax() {
		Cell c = enter();
		try {
			return Native.ordersMax(c.h.cell);
		} finally {
			leave(c);
		}
	}

	public Stats stats() {
		Cell c = enter();
		try {
			FlashException.check(Native.statsGet(c.h.cell));
			return Stats.read(c.io);
		} finally {
			leave(c);
		}
	}

	public Ident ident() {
		Cell c = enter();
		try {
			FlashException.check(Native.identGet(c.h.cell));
			return Ident.read(c.io);
		} finally {
			leave(c);
		}
	}

	public Quiet quiet() {
		Cell c = enter();
		try {
			FlashException.check(Native.quietGet(c.h.cell));
			return Quiet.read(c.io);
		} finally {
			leave(c);
		}
	}

	/**
	 * The engine's figures of its own calls, summed over every handle of
	 * the segment (flash_obs_get): this thread's handle's newest call
	 * included.
	 */
	public Obs obs() {
		ByteBuffer b = ByteBuffer.allocateDirect(Layout.Obs.SIZE).order(ByteOrder.nativeOrder());
		Cell c = enter();
		try {
			FlashException.check(Native.obsGet(c.h.cell, b));
		} finally {
			leave(c);
		}
		return Obs.read(b);
	}

	/* ------------------------------------------------------------ bench */

	/* n orders by a C loop on this thread's handle, in batches of `batch`
	 * orders when batch > 1 (Bench): elapsed ns. */
	long benchC(int activityId, int skuId, long userBase, int n, int batch) {
		Cell c = enter();
		try {
			long ns = Native.benchOrdersC(c.h.cell, activityId, skuId, userBase, n, batch);
			if (ns < 0)
				throw FlashException.of((int) ns);
			return ns;
		} finally {
			leave(c);
		}
	}
}
