/*
 * OrderManyTest.java -- (java_order_many) FlashStock.orderMany, the batch
 * call (flash_order_many): a batch gives what the same orders placed one by
 * one on a twin segment give (every outcome and result field, the orders'
 * records, stock and counters); a refusal inside a batch -- the limit, a
 * repeated request id, sold out, a bad quantity, an unknown sku, a used
 * token, a closed window -- stops none of the later orders; an empty batch
 * returns no outcome and runs nothing; what the handle refuses is thrown
 * before any order runs; a thread's batch area grows and is reused, one per
 * thread; in sync durability a batch is acknowledged once the daemon has
 * made its records durable, and without a daemon its orders are placed
 * with their fate unknown.
 */
package flashstock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class OrderManyTest {
	static final int OK = 0, SOLD_OUT = -1, LIMIT = -2, NOT_STARTED = -3, ENDED = -4, NOT_FOUND = -5,
			BAD_TOKEN = -6, DUPLICATE = -7, INVALID = -9, FATE_UNKNOWN = -33;

	/*
	 * The catalog of the twin segments: activity 1 (limit 2 per user, at
	 * most 3 units an order) with sku 10 of 7 units in 2 shards and sku 11
	 * of 100; activity 2 (a token per order) with sku 20; activity 3 not
	 * started and activity 4 ended, one sku each.
	 */
	private static void catalog(FlashStock fs) {
		long now = System.currentTimeMillis() * 1_000_000L, h = 3_600_000_000_000L;
		fs.activityAdd(Activity.openNow(1, 2).withMaxQty(3));
		fs.activityAdd(Activity.openNow(2, 1).withFlags(Activity.TOKEN_REQUIRED));
		fs.activityAdd(Activity.openNow(3, 1).withWindow(now + h, now + 2 * h));
		fs.activityAdd(Activity.openNow(4, 1).withWindow(now - 2 * h, now - h));
		fs.skuAdd(1, 10, 7, 2);
		fs.skuAdd(1, 11, 100, 1);
		fs.skuAdd(2, 20, 10, 1);
		fs.skuAdd(3, 30, 10, 1);
		fs.skuAdd(4, 40, 10, 1);
	}

	/*
	 * A sale's requests with a refusal of every kind between orders that
	 * are placed, and what each gives; tok is a token of (2, 20, user 5)
	 * issued on the segment the requests are for.
	 */
	private static List<OrderRequest> requests(long tok) {
		return List.of(
				OrderRequest.of(1, 10, 1, 1).withRequestId(100),   //  0 placed, slot 1
				OrderRequest.of(1, 10, 1, 2).withRequestId(101),   //  1 placed, slot 2
				OrderRequest.of(1, 10, 1, 1),                      //  2 the limit
				OrderRequest.of(1, 10, 2, 0),                      //  3 quantity 0
				OrderRequest.of(1, 10, 2, 4),                      //  4 above max_qty
				OrderRequest.of(1, 10, 0, 1),                      //  5 user 0
				OrderRequest.of(1, 99, 2, 1),                      //  6 no such sku
				OrderRequest.of(9, 10, 2, 1),                      //  7 no such activity
				OrderRequest.of(1, 10, 1, 1).withRequestId(100),   //  8 a retry of 0
				OrderRequest.of(1, 10, 2, 3).withRequestId(102),   //  9 placed: 1 unit left
				OrderRequest.of(1, 10, 3, 2).withRequestId(103),   // 10 sold out for 2
				OrderRequest.of(1, 10, 3, 2).withRequestId(103),   // 11 a retry of 10
				OrderRequest.of(1, 10, 3, 1).withRequestId(104),   // 12 placed: the last unit
				OrderRequest.of(1, 10, 4, 1),                      // 13 sold out
				OrderRequest.of(1, 11, 4, 1),                      // 14 placed, the other sku
				OrderRequest.of(2, 20, 5, 1).withToken(tok),       // 15 placed, the token used
				OrderRequest.of(2, 20, 5, 1).withToken(tok),       // 16 the token again
				OrderRequest.of(2, 20, 6, 1),                      // 17 no token
				OrderRequest.of(3, 30, 7, 1),                      // 18 not started
				OrderRequest.of(4, 40, 7, 1),                      // 19 ended
				OrderRequest.of(1, 11, 7, 3).withRequestId(105));  // 20 placed after them all
	}

	static final int[] EXPECTED = { OK, OK, LIMIT, INVALID, INVALID, INVALID, NOT_FOUND, NOT_FOUND, DUPLICATE, OK,
			SOLD_OUT, DUPLICATE, OK, SOLD_OUT, OK, OK, BAD_TOKEN, BAD_TOKEN, NOT_STARTED, ENDED, OK };

	/* order() for a request, with a thrown code as its outcome (what orderMany reports) */
	private static OrderResult one(FlashStock fs, OrderRequest r) {
		try {
			return fs.order(r);
		} catch (FlashException e) {
			return new OrderResult(e.code(), 0, 0, 0, 0);
		}
	}

	private static int[] rcs(List<OrderResult> rs) {
		return rs.stream().mapToInt(OrderResult::rc).toArray();
	}

	@Test
	void aBatchGivesWhatTheSameOrdersOneByOneGive() {
		try (Seg sa = new Seg("many-one"); Seg sb = new Seg("many-batch");
				FlashStock a = FlashStock.open(sa.name); FlashStock b = FlashStock.open(sb.name)) {
			catalog(a);
			catalog(b);
			List<OrderResult> want = new ArrayList<>();
			for (OrderRequest r : requests(a.tokenIssue(2, 20, 5, 60_000)))
				want.add(one(a, r));
			List<OrderResult> got = b.orderMany(requests(b.tokenIssue(2, 20, 5, 60_000)));

			assertEquals(EXPECTED.length, got.size());
			assertEquals(Arrays.toString(EXPECTED), Arrays.toString(rcs(want)), "one by one");
			// every field: order number, first outcome, limit slot, lsn
			assertEquals(want, got);
			assertEquals(1, got.get(0).limitSlot());
			assertEquals(2, got.get(1).limitSlot());
			assertEquals(got.get(0).orderNo(), got.get(8).orderNo(), "a retry reads the first order");
			assertEquals(OK, got.get(8).firstRc());
			assertEquals(SOLD_OUT, got.get(11).firstRc());
			assertEquals(0, got.get(11).orderNo());
			long lsn = 0;
			Set<Long> numbers = new HashSet<>();
			for (int i = 0; i < got.size(); i++) {
				OrderResult r = got.get(i);
				assertEquals(r.rc() == OK, r.ok());
				if (r.ok()) {
					assertTrue(r.lsn() > lsn, "the records in the requests' order");
					lsn = r.lsn();
					assertTrue(numbers.add(r.orderNo()), "order " + r.orderNo() + " twice");
					assertNull(r.error());
				} else {
					assertEquals(r.rc(), r.error().code());
					if (r.rc() != DUPLICATE)
						assertEquals(new OrderResult(r.rc(), 0, 0, 0, 0), r, "refused " + i);
				}
			}
			assertInstanceOf(FlashException.InvalidArgument.class, got.get(3).error());
			assertInstanceOf(FlashException.NotFound.class, got.get(6).error());
			assertThrows(FlashException.SoldOut.class, got.get(13)::orThrow);

			// the same orders, records, stock and counters
			for (OrderResult r : got)
				if (r.ok()) {
					OrderInfo x = a.orderGet(r.orderNo()), y = b.orderGet(r.orderNo());
					assertEquals(List.of(x.userId(), x.activityId(), x.skuId(), x.qty(), x.state(), x.limitSlot()),
							List.of(y.userId(), y.activityId(), y.skuId(), y.qty(), y.state(), y.limitSlot()));
				}
			assertEquals(a.skus().stream().map(ApiTest::stock).toList(), b.skus().stream().map(ApiTest::stock).toList());   // versions differ: each the clock of its add
			assertEquals(0, b.skuGet(1, 10).available());
			assertEquals(96, b.skuGet(1, 11).available());
			Stats x = a.stats(), y = b.stats();
			assertEquals(List.of(x.orders(), x.soldOut(), x.limitHits(), x.tokenRejects(), x.duplicates()),
					List.of(y.orders(), y.soldOut(), y.limitHits(), y.tokenRejects(), y.duplicates()));
			assertEquals(7, y.orders());
			// the engine counted each outcome of the batch as one order's
			Obs oa = a.obs(), ob = b.obs();
			for (int rc : new int[] { OK, SOLD_OUT, LIMIT, NOT_STARTED, ENDED, NOT_FOUND, BAD_TOKEN, DUPLICATE, INVALID })
				assertEquals(oa.results(Obs.ORDER, rc), ob.results(Obs.ORDER, rc), "obs " + FlashStock.rcname(rc));
		}
	}

	@Test
	void laterOrdersOfABatchSeeTheEarlierOnesAndRunPastTheirRefusals() {
		try (Seg s = new Seg("many-later"); FlashStock fs = FlashStock.open(s.name)) {
			fs.activityAdd(Activity.openNow(1, 1));
			fs.skuAdd(1, 1, 3, 1);
			List<OrderResult> r = fs.orderMany(List.of(
					OrderRequest.of(1, 1, 1, 1).withRequestId(1),
					OrderRequest.of(1, 1, 1, 1).withRequestId(2),  // the same user: its limit
					OrderRequest.of(1, 1, 1, 1).withRequestId(1),  // user 1's request 1 again
					OrderRequest.of(1, 1, 2, 5),                   // bad quantity
					OrderRequest.of(1, 1, 2, 1),
					OrderRequest.of(1, 1, 3, 1),
					OrderRequest.of(1, 1, 4, 1),                   // sold out
					OrderRequest.of(1, 1, 4, 1)));
			assertEquals("[0, -2, -7, -9, 0, 0, -1, -1]", Arrays.toString(rcs(r)));
			assertEquals(r.get(0).orderNo(), r.get(2).orderNo());
			assertEquals(0, fs.skuGet(1, 1).available());
			// a unit back: the next batch sells it to the first who may buy it
			fs.cancel(r.get(5).orderNo());
			r = fs.orderMany(List.of(OrderRequest.of(1, 1, 1, 1), OrderRequest.of(1, 1, 5, 1),
					OrderRequest.of(1, 1, 6, 1)));
			assertEquals("[-2, 0, -1]", Arrays.toString(rcs(r)));
			assertEquals(5, fs.orderGet(r.get(1).orderNo()).userId());
		}
	}

	@Test
	void anEmptyBatchReturnsNoOutcomeAndWhatTheHandleRefusesIsThrownBeforeAnyOrder() {
		try (Seg s = new Seg("many-empty")) {
			FlashStock fs = FlashStock.open(s.name);
			fs.activityAdd(Activity.openNow(1, 1));
			fs.skuAdd(1, 1, 10, 1);
			assertEquals(List.of(), fs.orderMany(List.of()));
			assertThrows(NullPointerException.class, () -> fs.orderMany(null));
			// a null request: nothing runs, not even the orders before it
			assertThrows(NullPointerException.class,
					() -> fs.orderMany(Arrays.asList(OrderRequest.of(1, 1, 1, 1), null)));
			assertEquals(0, fs.stats().orders());
			assertEquals(10, fs.skuGet(1, 1).available());
			assertEquals(0, fs.obs().calls(Obs.ORDER));
			try (FlashStock ro = FlashStock.open(s.name, FlashStock.RDONLY)) {
				assertThrows(FlashException.ReadOnly.class, () -> ro.orderMany(List.of(OrderRequest.of(1, 1, 1, 1))));
			}
			assertEquals(10, fs.skuGet(1, 1).available());
			List<OrderResult> r = fs.orderMany(List.of(OrderRequest.of(1, 1, 1, 1)));
			assertTrue(r.get(0).ok());
			assertThrows(UnsupportedOperationException.class, () -> r.set(0, null));
			fs.close();
			assertThrows(IllegalStateException.class, () -> fs.orderMany(List.of(OrderRequest.of(1, 1, 2, 1))));
			assertThrows(IllegalStateException.class, () -> fs.orderMany(List.of()));
		}
	}

	@Test
	void aThreadsBatchAreaGrowsAndIsReusedOnePerThread() throws Exception {
		final int threads = 4;
		final int[] sizes = { 1, 3, 40, 17, 200, 5, 16, 33 };
		int perThread = Arrays.stream(sizes).sum();
		try (Seg s = new Seg("many-grow"); FlashStock fs = FlashStock.open(s.name)) {
			fs.activityAdd(Activity.openNow(1, 1));
			fs.skuAdd(1, 1, threads * perThread, 4);
			Map<Long, Long> userOf = new HashMap<>();
			AtomicReference<Throwable> fail = new AtomicReference<>();
			Thread[] ts = new Thread[threads];
			for (int t = 0; t < threads; t++) {
				final long base = 1 + (long) t * perThread;
				ts[t] = new Thread(() -> {
					try {
						long user = base;
						for (int n : sizes) {
							List<OrderRequest> rq = new ArrayList<>();
							for (int i = 0; i < n; i++)
								rq.add(OrderRequest.of(1, 1, user + i, 1));
							rq.add(OrderRequest.of(1, 1, user, 1));  // the first user again: the limit
							List<OrderResult> r = fs.orderMany(rq);
							assertEquals(n + 1, r.size());
							for (int i = 0; i < n; i++) {
								assertTrue(r.get(i).ok(), r.get(i).rcName());
								synchronized (userOf) {
									assertNull(userOf.put(r.get(i).orderNo(), user + i), "an order number twice");
								}
							}
							assertEquals(LIMIT, r.get(n).rc());
							user += n;
						}
					} catch (Throwable e) {
						fail.compareAndSet(null, e);
					}
				});
				ts[t].start();
			}
			for (Thread t : ts)
				t.join();
			if (fail.get() != null)
				throw new AssertionError(fail.get());
			assertEquals(threads * perThread, userOf.size());
			for (Map.Entry<Long, Long> e : userOf.entrySet())
				assertEquals((long) e.getValue(), fs.orderGet(e.getKey()).userId());
			assertEquals(0, fs.skuGet(1, 1).available());
		}
	}

	@Test
	void aSyncBatchWithoutDaemonIsPlacedWithItsFateUnknown() {
		try (Seg s = new Seg("many-sync", SegOpts.small(1024).withDurability(Durability.SYNC));
				FlashStock fs = FlashStock.open(s.name)) {
			fs.activityAdd(Activity.openNow(1, 1));
			fs.skuAdd(1, 1, 10, 1);
			fs.syncWaitSet(50);
			List<OrderResult> r = fs.orderMany(List.of(OrderRequest.of(1, 1, 1, 1), OrderRequest.of(1, 1, 1, 1),
					OrderRequest.of(1, 1, 2, 1)));
			assertEquals("[-33, -2, -33]", Arrays.toString(rcs(r)));
			assertEquals("FLASH_EFATE_UNKNOWN", r.get(0).rcName());
			for (OrderResult o : List.of(r.get(0), r.get(2))) {
				assertTrue(o.orderNo() > 0 && o.lsn() > 0 && o.limitSlot() == 1, o.toString());
				assertEquals(OrderState.ACTIVE, fs.orderGet(o.orderNo()).state());
				assertFalse(fs.durableWait(o.lsn(), 20));
			}
			assertTrue(r.get(2).lsn() > r.get(0).lsn());
			assertEquals(new OrderResult(LIMIT, 0, 0, 0, 0), r.get(1));
			assertEquals(8, fs.skuGet(1, 1).available());
		}
	}

	@Test
	void aSyncBatchIsAcknowledgedOnceTheDaemonMadeItDurable() throws Exception {
		Path dir = Files.createTempDirectory("flash-java-many-");
		Path wal = dir.resolve("wal"), serveLog = dir.resolve("serve.log");
		Process serve = null;
		try (Seg s = new Seg("many-served", SegOpts.small(1024).withDurability(Durability.SYNC))) {
			List<OrderResult> r;
			try (FlashStock fs = FlashStock.open(s.name)) {
				fs.activityAdd(Activity.openNow(1, 1));
				fs.skuAdd(1, 1, 5, 1);
				serve = Procs.serve(s.name, wal, serveLog);
				fs.syncWaitSet(60_000);  // a loaded machine's daemon may take seconds
				List<OrderRequest> rq = new ArrayList<>();
				for (long u = 1; u <= 8; u++)
					rq.add(OrderRequest.of(1, 1, u == 4 ? 1 : u, 1));  // user 1 twice: the limit
				r = fs.orderMany(rq);
				assertEquals("[0, 0, 0, -2, 0, 0, -1, -1]", Arrays.toString(rcs(r)));
				for (OrderResult o : r)
					if (o.ok())
						assertTrue(fs.durableWait(o.lsn(), 1), "acknowledged, so durable: " + o);
				Procs.awaitQuiet(fs);
			}
			Procs.stopServe(serve, serveLog);
			serve = null;
			Map<Long, Procs.Rec> orders = new HashMap<>();
			for (Procs.Rec rec : Procs.walDump(dir, wal))
				if (rec.type().equals("order"))
					orders.put(rec.order(), rec);
			assertEquals(5, orders.size());
			for (int i = 0; i < r.size(); i++)
				if (r.get(i).ok()) {
					Procs.Rec rec = orders.get(r.get(i).orderNo());
					assertTrue(rec != null, "order " + r.get(i).orderNo() + " is not in the WAL");
					assertEquals(i == 0 ? 1 : i + 1, rec.user());
				}
		} finally {
			if (serve != null)
				serve.destroyForcibly().waitFor();
			Procs.rmrf(dir);
		}
	}
}
