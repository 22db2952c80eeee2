/*
 * Feed.java -- the order feed (api/flashstock.h section 10) from Java.
 *
 *   try (Feed feed = Feed.open(walDir, "fulfilment", Feed.Options.fromStartOfWal())) {
 *       for (Optional<FeedRecord> r; (r = feed.poll(1000)).isPresent();) {  // empty: idle 1 s
 *           ship(r.get());                         // idempotent by orderNo() / lsn()
 *           feed.commit(r.get().lsn());
 *       }
 *   }
 *
 * A Feed is one flash_feed_t: the records of a WAL directory (the one
 * `flashstock serve --wal DIR` writes) under a durable consumer name, in LSN
 * order, only durable ones, at least once (a record comes again after a
 * restart until a commit covers its LSN).
 *
 * Thread rules (the header's "Synchronization" of section 10): a
 * flash_feed_t is used by one thread at a time, with no lock inside.  Unlike
 * a segment handle it is not bound to the thread that opened it, so a Feed
 * may be passed between threads; but a call made while another thread is
 * inside one (a next() waiting for records, say) throws
 * IllegalStateException at once instead of entering the library.  close()
 * is the exception: it waits for a running call to return (at most its
 * wait), then closes.  A Feed dropped without close() is closed by a
 * Cleaner (no call can be in progress on an unreachable object).  fork() is
 * no concern of a JVM: a child process started from Java holds no feed.
 */
package flashstock;

import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.locks.ReentrantLock;

public final class Feed implements AutoCloseable {
	private static final Cleaner CLEANER = Cleaner.create();
	private static final int ETIMEOUT = -60;

	/**
	 * struct flash_feed_opts.
	 * @param fromStart    a NEW consumer starts at the oldest record still in the WAL; false: at the
	 *                     durable end (it sees what comes after its registration).  Ignored for a
	 *                     registered consumer: it resumes at its position
	 * @param noCreate     an unknown consumer is NotFound, not registered
	 * @param mysqlUrl     refill source for a lost range (mysql://user:pass@host/db?socket=PATH); null: none
	 * @param mysqlStream  the applier's applied_lsn stream (null: "wal")
	 */
	public record Options(boolean fromStart, boolean noCreate, String mysqlUrl, String mysqlStream) {
		/** flash_feed_opts_default: durable end, register if new, no refill. */
		public static Options defaults() {
			return new Options(false, false, null, null);
		}

		/** A new consumer starts at the oldest record still in the WAL. */
		public static Options fromStartOfWal() {
			return new Options(true, false, null, null);
		}

		public Options withFromStart(boolean v) {
			return new Options(v, noCreate, mysqlUrl, mysqlStream);
		}

		public Options withNoCreate(boolean v) {
			return new Options(fromStart, v, mysqlUrl, mysqlStream);
		}

		public Options withMysql(String url, String stream) {
			return new Options(fromStart, noCreate, url, stream);
		}
	}

	/* The native feed and the Cleaner's action for it; holds no Feed. */
	private static final class State implements Runnable {
		final long cell;
		private boolean freed;

		State(long cell) {
			this.cell = cell;
		}

		@Override
		public synchronized void run() {
			if (!freed) {
				freed = true;
				Native.feedClose(cell);
			}
		}

		synchronized boolean freed() {
			return freed;
		}
	}

	private final String walDir;
	private final String consumer;
	private final State state;
	private final ByteBuffer io;
	private final Cleaner.Cleanable cleanable;
	/*
	 * Held for the length of each call: one thread at a time in the library.
	 * Its unlock/lock pair is also what lets a Feed move between threads: it
	 * orders one thread's use of the native feed and of `io` before the next
	 * thread's, which is all a flash_feed_t without an inner lock needs.
	 */
	private final ReentrantLock busy = new ReentrantLock();

	private Feed(String walDir, String consumer, State state, ByteBuffer io) {
		this.walDir = walDir;
		this.consumer = consumer;
		this.state = state;
		this.io = io.order(ByteOrder.nativeOrder());
		this.cleanable = CLEANER.register(this, state);
	}

	/**
	 * Open the feed of WAL directory {@code walDir} for {@code consumer}
	 * (flash_feed_open).  A consumer seen for the first time is registered
	 * (at the durable end, or the oldest record with fromStart) unless
	 * noCreate; a registered one resumes after its committed position.
	 * @throws FlashException NotFound (no such directory; an unknown consumer with noCreate),
	 *         Busy (the name is open elsewhere, in any process), FeedIdent, InvalidArgument (bad
	 *         name), Corrupt (a bad position file), ...
	 */
	public static Feed open(String walDir, String consumer, Options o) {
		if (o == null)
			o = Options.defaults();
		long cell = Native.feedOpen(walDir, consumer, o.fromStart() ? 1 : 0, o.noCreate() ? 1 : 0, o.mysqlUrl(),
				o.mysqlStream());
		if (cell < 0)
			throw FlashException.of((int) cell);
		State st = new State(cell);
		ByteBuffer io;
		try {
			io = Native.feedIo(cell);  // NewDirectByteBuffer may throw OutOfMemoryError
		} catch (Error e) {
			st.run();
			throw e;
		}
		return new Feed(walDir, consumer, st, io);
	}

	/** open(walDir, consumer, Options.defaults()) */
	public static Feed open(String walDir, String consumer) {
		return open(walDir, consumer, null);
	}

	public String walDir() {
		return walDir;
	}

	public String consumer() {
		return consumer;
	}

	/* A thread is inside a call now (for tests). */
	boolean inCall() {
		return busy.isLocked();
	}

	/* Take the feed for one call, or refuse at once. */
	private void enter() {
		if (!busy.tryLock())
			throw new IllegalStateException("Feed " + consumer + " is in use by another thread");
		if (state.freed()) {
			busy.unlock();
			throw new IllegalStateException("Feed " + consumer + " is closed");
		}
	}

	/**
	 * The next record (flash_feed_next), waiting at most waitMs for one to
	 * become durable (0: do not wait).
	 * @throws FlashException.Timeout none came (the feed is idle: call again); Lost, Refill, Ahead,
	 *         FeedIdent, Corrupt, ...
	 */
	public FeedRecord next(int waitMs) {
		enter();
		try {
			FlashException.check(Native.feedNext(state.cell, waitMs));
			return FeedRecord.read(io, Layout.FeedIo.REC);
		} finally {
			busy.unlock();
		}
	}

	/** next(waitMs), but empty instead of Timeout when nothing became durable in time. */
	public Optional<FeedRecord> poll(int waitMs) {
		enter();
		try {
			int rc = Native.feedNext(state.cell, waitMs);
			if (rc == ETIMEOUT)
				return Optional.empty();
			FlashException.check(rc);
			return Optional.of(FeedRecord.read(io, Layout.FeedIo.REC));
		} finally {
			busy.unlock();
		}
	}

	/**
	 * Commit (flash_feed_commit): every record with an LSN at or below lsn is
	 * processed; durable when it returns (a later open resumes at lsn + 1).
	 * @throws FlashException.InvalidArgument lsn above the last returned or below the committed one
	 */
	public void commit(long lsn) {
		enter();
		try {
			FlashException.check(Native.feedCommit(state.cell, lsn));
		} finally {
			busy.unlock();
		}
	}

	/** The next next() returns again the record after the committed position (flash_feed_rewind). */
	public void rewind() {
		enter();
		try {
			FlashException.check(Native.feedRewind(state.cell));
		} finally {
			busy.unlock();
		}
	}

	/** This consumer's state as list() shows it (committedLsn is the committed position). */
	public FeedInfo info() {
		enter();
		try {
			FlashException.check(Native.feedInfo(state.cell));
			return FeedInfo.read(io, Layout.FeedIo.INFO);
		} finally {
			busy.unlock();
		}
	}

	/**
	 * Close (flash_feed_close): no implicit commit -- what was not committed
	 * is handed out again after the next open.  Waits for a call running on
	 * another thread to return first.  Calling it again does nothing.
	 */
	@Override
	public void close() {
		busy.lock();
		try {
			cleanable.clean();
		} finally {
			busy.unlock();
		}
	}

	/** The consumers registered in walDir, sorted by name (flash_feed_list). */
	public static List<FeedInfo> list(String walDir) {
		for (;;) {
			int n = FlashException.check(Native.feedList(walDir, null, 0));
			int cap = n + 4;  // room for consumers registered meanwhile
			ByteBuffer b = ByteBuffer.allocateDirect(cap * Layout.FeedInfo.SIZE).order(ByteOrder.nativeOrder());
			int m = FlashException.check(Native.feedList(walDir, b, cap));
			if (m > cap)
				continue;
			List<FeedInfo> l = new ArrayList<>(m);
			for (int i = 0; i < m; i++)
				l.add(FeedInfo.read(b, i * Layout.FeedInfo.SIZE));
			return l;
		}
	}

	/**
	 * Unregister consumer (flash_feed_drop): its position goes and retention
	 * no longer keeps WAL for it.
	 * @throws FlashException NotFound, Busy (open now), InvalidArgument
	 */
	public static void drop(String walDir, String consumer) {
		FlashException.check(Native.feedDrop(walDir, consumer));
	}
}
