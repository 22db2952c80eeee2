/*
 * ThreadsTest.java -- (java_threads) one FlashStock used by many threads:
 * each thread gets its own native handle (distinct slots, no
 * FLASH_EWRONG_THREAD ever), and the orders of all of them add up; a handle
 * used from another thread would be refused by the engine (so the first
 * test would have seen it); a thread's handle is freed by the Cleaner after
 * the thread ends, and by releaseThread() at once; an object dropped
 * without close() has all its handles closed by the Cleaner; close() waits
 * for another thread's call in progress before it frees that handle; a
 * thread past max_procs gets NoProc until another thread releases its handle.
 */
package flashstock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class ThreadsTest {
	@Test
	void manyThreadsShareOneObjectEachOnItsOwnHandle() throws Exception {
		int threads = 16, each = 200, stock = 1000;
		try (Seg s = new Seg("threads"); FlashStock fs = FlashStock.open(s.name)) {
			fs.activityAdd(Activity.openNow(1, 1));
			fs.skuAdd(1, 1, stock, 4);
			AtomicInteger ok = new AtomicInteger(), soldOut = new AtomicInteger();
			AtomicReference<Throwable> err = new AtomicReference<>();
			Set<Integer> slots = ConcurrentHashMap.newKeySet();
			CyclicBarrier allOpen = new CyclicBarrier(threads);
			AtomicLong users = new AtomicLong();
			List<Thread> ts = new ArrayList<>();
			for (int t = 0; t < threads; t++) {
				Thread th = new Thread(() -> {
					try {
						slots.add(fs.slot());
						allOpen.await();  // every thread's handle is open at once
						for (int i = 0; i < each; i++) {
							OrderResult r = fs.order(1, 1, users.incrementAndGet(), 1);
							if (r.ok())
								ok.incrementAndGet();
							else if (r.rc() == -1)
								soldOut.incrementAndGet();
							else
								throw r.error();
						}
						if (fs.slot() < 0)
							throw new AssertionError("slot changed");
					} catch (Throwable e) {
						err.compareAndSet(null, e);
					}
				});
				ts.add(th);
				th.start();
			}
			for (Thread th : ts)
				th.join();
			if (err.get() != null)
				throw new AssertionError("a thread failed (a FLASH_EWRONG_THREAD would be here)", err.get());
			assertEquals(threads, slots.size(), "distinct slots " + slots);
			assertEquals(stock, ok.get());
			assertEquals(threads * each - stock, soldOut.get());
			assertEquals(new SkuInfo(1, 1, 4, stock, 0), ApiTest.stock(fs.skuGet(1, 1)));
			assertEquals(stock, fs.stats().orders());
			System.out.println("threads: " + threads + " threads on " + slots.size() + " handles placed " + ok.get()
					+ " orders, " + soldOut.get() + " sold out");
		}
	}

	@Test
	void aHandleUsedByAnotherThreadIsRefusedByTheEngine() throws Exception {
		try (Seg s = new Seg("wrongthread")) {
			long cell = Native.open(s.name, 0);
			assertTrue(cell > 0);
			AtomicInteger rc = new AtomicInteger(1), slotRc = new AtomicInteger(1);
			Thread other = new Thread(() -> {
				rc.set(Native.recover(cell));
				slotRc.set(Native.slot(cell));
			});
			other.start();
			other.join();
			assertEquals(-31, rc.get(), Native.rcname(rc.get()));
			assertEquals(-31, slotRc.get(), Native.rcname(slotRc.get()));
			assertTrue(Native.recover(cell) >= 0);
			assertEquals(0, Native.close(cell));
		}
	}

	@Test
	void anEndedThreadsHandleIsFreedByTheCleaner() throws Exception {
		try (Seg s = new Seg("cleaner"); FlashStock fs = FlashStock.open(s.name)) {
			int before = fs.openHandles();
			Thread th = new Thread(fs::slot);
			th.start();
			th.join();
			assertEquals(before + 1, fs.openHandles());
			// the ended thread's cell is unreachable; collect until the
			// Cleaner has closed its handle (bounded: 200 collections)
			for (int i = 0; i < 200 && fs.openHandles() > before; i++) {
				System.gc();
				Thread.sleep(10);
			}
			assertEquals(before, fs.openHandles());
			assertEquals(before, fs.stats().procs());
		}
	}

	@Test
	void releaseThreadClosesTheCallersHandleAndTheNextCallOpensAnother() {
		try (Seg s = new Seg("release"); FlashStock fs = FlashStock.open(s.name)) {
			assertEquals(1, fs.stats().procs());
			fs.releaseThread();
			assertEquals(0, fs.openHandles());
			assertEquals(1, fs.stats().procs());  // this call opened it again
			assertEquals(1, fs.openHandles());
		}
	}

	@Test
	void anObjectDroppedWithoutCloseHasItsHandlesClosedByTheCleaner() throws Exception {
		try (Seg s = new Seg("dropped"); FlashStock watch = FlashStock.open(s.name)) {
			openAndDrop(s.name);
			assertEquals(3, watch.stats().procs());  // watch's, and the dropped object's two
			for (int i = 0; i < 200 && watch.stats().procs() > 1; i++) {
				System.gc();
				Thread.sleep(10);
			}
			assertEquals(1, watch.stats().procs());
		}
	}

	private static void openAndDrop(String seg) throws InterruptedException {
		FlashStock fs = FlashStock.open(seg);
		Thread th = new Thread(() -> {
			fs.slot();
			try {
				Thread.sleep(100_000);
			} catch (InterruptedException e) {
				// ends
			}
		});
		th.start();
		for (int i = 0; i < 1000 && fs.openHandles() < 2; i++)
			Thread.sleep(5);
		assertEquals(2, fs.openHandles());
		th.interrupt();
		th.join();
	}

	@Test
	void closeWaitsForAnotherThreadsCallInProgress() throws Exception {
		try (Seg s = new Seg("closewait", SegOpts.small(1024).withDurability(Durability.SYNC))) {
			FlashStock fs = FlashStock.open(s.name);
			fs.activityAdd(Activity.openNow(1, 1));
			fs.skuAdd(1, 1, 10, 1);
			fs.syncWaitSet(2000);  // no daemon: each order waits 2 s, then FATE_UNKNOWN
			AtomicReference<Object> got = new AtomicReference<>();
			Thread th = new Thread(() -> {
				try {
					got.set(fs.order(1, 1, 5, 1));
				} catch (Throwable e) {
					got.set(e);
				}
			});
			th.start();
			for (int i = 0; i < 10_000 && fs.callsInProgress() == 0; i++)
				Thread.sleep(1);
			assertEquals(1, fs.callsInProgress(), "the other thread's order is in its sync wait");
			fs.close();
			// had close() not waited, the call would still be in progress here
			assertEquals(0, fs.callsInProgress());
			assertEquals(0, fs.openHandles());
			th.join();
			assertTrue(got.get() instanceof OrderResult, "the order's outcome: " + got.get());
			assertEquals(-33, ((OrderResult) got.get()).rc());
			try (FlashStock w = FlashStock.open(s.name)) {
				assertEquals(1, w.stats().procs());  // only w's own handle is left
				assertEquals(OrderState.ACTIVE, w.orderGet(((OrderResult) got.get()).orderNo()).state());
			}
		}
	}

	@Test
	void aThreadPastMaxProcsGetsNoProcUntilAnotherReleasesItsHandle() throws Exception {
		try (Seg s = new Seg("noproc", SegOpts.small(1024).withMaxProcs(3)); FlashStock fs = FlashStock.open(s.name)) {
			CyclicBarrier opened = new CyclicBarrier(3), release = new CyclicBarrier(3);
			AtomicReference<Throwable> err = new AtomicReference<>();
			List<Thread> holders = new ArrayList<>();
			for (int t = 0; t < 2; t++) {  // with the caller's: 3 handles, the table is full
				Thread th = new Thread(() -> {
					try {
						fs.slot();
						opened.await();
						release.await();
						fs.releaseThread();
					} catch (Throwable e) {
						err.compareAndSet(null, e);
					}
				});
				holders.add(th);
				th.start();
			}
			opened.await();
			AtomicReference<Object> fourth = new AtomicReference<>();
			Thread th = new Thread(() -> {
				try {
					fourth.set(fs.slot());
				} catch (Throwable e) {
					fourth.set(e);
				}
			});
			th.start();
			th.join();
			assertTrue(fourth.get() instanceof FlashException.NoProc, "a 4th thread's first call: " + fourth.get());
			release.await();
			for (Thread h : holders)
				h.join();
			if (err.get() != null)
				throw new AssertionError(err.get());
			Thread again = new Thread(() -> fourth.set(fs.slot()));
			again.start();
			again.join();
			assertTrue(fourth.get() instanceof Integer && (Integer) fourth.get() >= 0, "after the release: " + fourth.get());
		}
	}
}
