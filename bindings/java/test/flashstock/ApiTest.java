/*
 * ApiTest.java -- (java_api) the whole application API through FlashStock:
 * segments, catalog, orders with every request and result field, refusals
 * returned and errors thrown, cancel, reservations (confirm, expire,
 * expireDue), versioned terms (activityGet, activityUpdate, skuPriceSet,
 * an order naming replaced terms refused FLASH_ESTALE with nothing taken),
 * carts (cartOrder, orderLines: all or nothing, the refused line named,
 * cancelled, confirmed and expired whole, refused in a SKU-scope activity),
 * restock, tokens, locks, reading state, stats, sync waits, read-only
 * handles, and close.
 */
package flashstock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class ApiTest {
	/** s's stock alone: its price and version 0 (they are compared where a test is about them). */
	static SkuInfo stock(SkuInfo s) {
		return new SkuInfo(s.activityId(), s.skuId(), s.shards(), s.total(), s.available());
	}

	/** a's terms as activityAdd was given them: version 0. */
	static Activity terms(Activity a) {
		return new Activity(a.id(), a.limitPerUser(), a.maxQty(), a.scope(), a.flags(), a.dayOffsetS(), a.startNs(),
				a.endNs());
	}

	@Test
	void segmentsAreCreatedOpenedWithTheirOptionsAndDestroyed() {
		SegOpts o = SegOpts.small(2048).withMaxLocks(32).withDurability(Durability.SYNC);
		assertTrue(FlashStock.segmentSize(o) > 0);
		assertTrue(FlashStock.segmentSize(o.withMaxOrders(4096)) > FlashStock.segmentSize(o));
		assertThrows(FlashException.InvalidArgument.class, () -> FlashStock.segmentSize(o.withRingRecords(1000)));
		Seg s = new Seg("seg", o);
		assertThrows(FlashException.Exists.class, () -> FlashStock.createSegment(s.name, o));
		try (FlashStock fs = FlashStock.open(s.name)) {
			assertEquals(o, fs.segOpts());
			assertEquals(Durability.SYNC, fs.stats().durability());
			assertEquals(FlashStock.segmentSize(o), fs.stats().segmentBytes());
		}
		FlashStock.destroySegment(s.name);
		assertThrows(FlashException.NoSegment.class, () -> FlashStock.open(s.name));
		assertThrows(FlashException.NoSegment.class, () -> FlashStock.destroySegment(s.name));
		assertThrows(FlashException.InvalidArgument.class, () -> FlashStock.createSegment("/a/b", o));
		s.close();
	}

	@Test
	void ordersReturnEveryResultFieldAndTheSalesRefusals() {
		try (Seg s = new Seg("orders"); FlashStock fs = FlashStock.open(s.name)) {
			Activity a = Activity.openNow(1, 1).withMaxQty(2);
			FlashStock.activityCheck(a);
			assertThrows(FlashException.InvalidArgument.class, () -> FlashStock.activityCheck(Activity.openNow(0, 1)));
			fs.activityAdd(a);
			assertThrows(FlashException.Exists.class, () -> fs.activityAdd(a));
			fs.skuAdd(1, 10, 3, 2);
			assertThrows(FlashException.NotFound.class, () -> fs.skuAdd(9, 10, 3, 1));
			Activity got = fs.activityGet(1);
			assertTrue(got.version() > 0, "the segment's version, whatever activityAdd was given");
			assertEquals(a, terms(got));
			assertEquals(List.of(got), fs.activities());
			assertEquals(List.of(new SkuInfo(1, 10, 2, 3, 3)), fs.skus().stream().map(ApiTest::stock).toList());

			OrderResult r = fs.order(OrderRequest.of(1, 10, 42, 2).withRequestId(7));
			assertTrue(r.ok(), r.rcName());
			assertEquals("FLASH_OK", r.rcName());
			assertTrue(r.orderNo() > 0);
			assertEquals(1, r.limitSlot());
			assertTrue(r.lsn() > 0);
			OrderInfo oi = fs.orderGet(r.orderNo());
			assertEquals(r.orderNo(), oi.orderNo());
			assertEquals(42, oi.userId());
			assertEquals(1, oi.activityId());
			assertEquals(10, oi.skuId());
			assertEquals(2, oi.qty());
			assertEquals(OrderState.ACTIVE, oi.state());
			assertEquals(1, oi.limitSlot());
			assertTrue(oi.createdNs() > 0);
			assertTrue(fs.ordersMax() >= r.orderNo());

			// the retry of request 7: its first outcome, nothing taken twice
			OrderResult d = fs.order(OrderRequest.of(1, 10, 42, 2).withRequestId(7));
			assertEquals(-7, d.rc());
			assertEquals(0, d.firstRc());
			assertEquals(r.orderNo(), d.orderNo());
			assertEquals(1, fs.skuGet(1, 10).available());
			// the refusals are answers
			assertEquals(-2, fs.order(1, 10, 42, 1).rc());
			assertEquals(-1, fs.order(1, 10, 43, 2).rc());
			assertEquals("FLASH_ESOLD_OUT", fs.order(1, 10, 43, 2).rcName());
			// the errors are thrown
			assertThrows(FlashException.NotFound.class, () -> fs.order(1, 11, 43, 1));
			assertThrows(FlashException.InvalidArgument.class, () -> fs.order(1, 10, 43, 0));
			assertThrows(FlashException.InvalidArgument.class, () -> fs.order(1, 10, 0, 1));

			assertEquals(2, fs.cancel(r.orderNo()));
			assertThrows(FlashException.Cancelled.class, () -> fs.cancel(r.orderNo()));
			assertThrows(FlashException.NotFound.class, () -> fs.cancel(1_000_000));
			assertEquals(OrderState.CANCELLED, fs.orderGet(r.orderNo()).state());
			assertEquals(3, fs.skuGet(1, 10).available());
			fs.restock(1, 10, 5);
			assertEquals(new SkuInfo(1, 10, 2, 8, 8), stock(fs.skuGet(1, 10)));
			assertThrows(FlashException.SoldOut.class, () -> fs.restock(1, 10, -9));
			fs.restock(1, 10, -8);
			assertEquals(0, fs.skuGet(1, 10).available());

			Stats st = fs.stats();
			assertEquals(1, st.orders());
			assertEquals(1, st.cancels());
			assertTrue(st.soldOut() >= 2);
			assertEquals(1, st.limitHits());
			assertEquals(1, st.duplicates());
			assertEquals(1, st.activities());
			assertEquals(1, st.skus());
			assertEquals(16, st.activitiesCap());
			assertTrue(st.procs() >= 1);
		}
	}

	@Test
	void aReservationIsReservedUntilConfirmedAndOneConfirmedTooLateIsExpiredWithItsUnitsBack()
			throws Exception {
		try (Seg s = new Seg("reserve"); FlashStock fs = FlashStock.open(s.name)) {
			assertEquals((long) Manifest.read().constants.get("FLASH_RESERVE_MS_MAX"), OrderRequest.RESERVE_MS_MAX);
			fs.activityAdd(Activity.openNow(1, 1).withMaxQty(3).withFlags(Activity.CANCEL_RETURNS_QUOTA));
			fs.skuAdd(1, 10, 10, 1);
			long before = System.currentTimeMillis() * 1_000_000L;
			OrderResult r = fs.order(OrderRequest.of(1, 10, 42, 3).withReserveMs(60_000));
			assertTrue(r.ok(), r.rcName());
			OrderInfo oi = fs.orderGet(r.orderNo());
			assertEquals(OrderState.RESERVED, oi.state());
			assertTrue(oi.payByNs() >= before + 59_000_000_000L && oi.payByNs() <= before + 61_000_000_000L,
					"pay by " + oi.payByNs() + ", placed at " + before);
			assertEquals(7, fs.skuGet(1, 10).available());
			assertEquals(-2, fs.order(1, 10, 42, 1).rc(), "the reservation holds the user's limit");
			assertThrows(FlashException.NotDue.class, () -> fs.expire(r.orderNo()));
			fs.confirm(r.orderNo());
			oi = fs.orderGet(r.orderNo());
			assertEquals(OrderState.ACTIVE, oi.state());
			assertEquals(0, oi.payByNs());
			fs.confirm(r.orderNo());   // a retried payment callback: the same answer
			assertThrows(FlashException.Confirmed.class, () -> fs.expire(r.orderNo()));
			assertEquals(7, fs.skuGet(1, 10).available());

			// 30 ms to pay, paid after: expired by the confirm, its units back
			OrderResult late = fs.order(OrderRequest.of(1, 10, 43, 2).withReserveMs(30));
			assertTrue(late.ok(), late.rcName());
			assertEquals(5, fs.skuGet(1, 10).available());
			Thread.sleep(60);
			assertThrows(FlashException.Expired.class, () -> fs.confirm(late.orderNo()));
			assertEquals(OrderState.EXPIRED, fs.orderGet(late.orderNo()).state());
			assertTrue(fs.orderGet(late.orderNo()).payByNs() > 0);
			assertEquals(7, fs.skuGet(1, 10).available());
			assertThrows(FlashException.Expired.class, () -> fs.cancel(late.orderNo()));
			assertThrows(FlashException.Expired.class, () -> fs.expire(late.orderNo()));
			// the activity returns the quota: user 43 may reserve again
			OrderResult again = fs.order(OrderRequest.of(1, 10, 43, 1).withReserveMs(30));
			assertTrue(again.ok(), again.rcName());

			// expireDue: the due ones (a batch of reservations), not the one still in time
			List<OrderResult> many = fs.orderMany(List.of(OrderRequest.of(1, 10, 44, 1).withReserveMs(30),
					OrderRequest.of(1, 10, 45, 1).withReserveMs(30),
					OrderRequest.of(1, 10, 46, 1).withReserveMs(60_000)));
			for (OrderResult m : many)
				assertTrue(m.ok(), m.rcName());
			assertEquals(3, fs.skuGet(1, 10).available());
			Thread.sleep(60);
			assertEquals(3, fs.expireDue(0), "user 43's second reservation and the two batched");
			assertEquals(0, fs.expireDue(0));
			assertEquals(OrderState.EXPIRED, fs.orderGet(again.orderNo()).state());
			assertEquals(OrderState.EXPIRED, fs.orderGet(many.get(1).orderNo()).state());
			assertEquals(OrderState.RESERVED, fs.orderGet(many.get(2).orderNo()).state());
			assertEquals(6, fs.skuGet(1, 10).available());
			assertEquals(1, fs.cancel(many.get(2).orderNo()));
			assertThrows(FlashException.InvalidArgument.class, () -> fs.expireDue(-1));
			assertThrows(FlashException.InvalidArgument.class,
					() -> fs.order(OrderRequest.of(1, 10, 47, 1).withReserveMs(OrderRequest.RESERVE_MS_MAX + 1)));

			Stats st = fs.stats();
			assertEquals(1, st.confirms());
			assertEquals(4, st.expiries());
		}
	}

	/**
	 * OrderState is enum flash_order_state, in its order (OrderState.of
	 * indexes it), and FeedRecord's type constants are enum flash_rec_type:
	 * a state or record type the header gains and the binding lacks is named.
	 */
	@Test
	void orderStatesAndRecordTypesAreTheHeadersEnumerators() throws Exception {
		Map<String, Long> header = new TreeMap<>(), java = new TreeMap<>();
		for (Map.Entry<String, Long> e : Manifest.read().constants.entrySet())
			if (e.getKey().startsWith("FLASH_ORDER_") || e.getKey().startsWith("FLASH_REC_"))
				header.put(e.getKey(), e.getValue());
		for (OrderState st : OrderState.values())
			java.put("FLASH_ORDER_" + st.name(), (long) st.ordinal());
		for (java.lang.reflect.Field f : FeedRecord.class.getFields())
			if (f.getType() == int.class && !f.getName().startsWith("SOURCE_") && !f.getName().startsWith("MISS_"))
				java.put("FLASH_REC_" + f.getName(), (long) f.getInt(null));
		assertEquals(header, java);
	}

	/** The README's reservations example prints what the README says it prints. */
	@Test
	void theReadmesReservationsExamplePrintsWhatItSays() throws Exception {
		ByteArrayOutputStream buf = new ByteArrayOutputStream();
		PrintStream out = System.out;
		try (Seg s = new Seg("resvdoc")) {
			System.setOut(new PrintStream(buf, true, StandardCharsets.UTF_8));
			try {
				flashstock.example.Quickstart.reservations(s.name);
			} finally {
				System.setOut(out);
			}
		}
		assertEquals("RESERVED, available 0\nFLASH_EEXPIRED: EXPIRED\nexpired 1, available 2\n",
				buf.toString(StandardCharsets.UTF_8));
	}

	@Test
	void anOrderNamingOldTermsIsRefusedStaleTakesNothingAndTheNewVersionOrders() {
		try (Seg s = new Seg("stale"); FlashStock fs = FlashStock.open(s.name)) {
			fs.activityAdd(Activity.openNow(1, 2).withFlags(Activity.CANCEL_RETURNS_QUOTA));
			fs.skuAdd(1, 10, 10, 1);
			Activity seenA = fs.activityGet(1);          // what the page showed
			SkuInfo seenS = fs.skuGet(1, 10);
			assertTrue(seenA.version() > 0 && seenS.version() > 0 && seenA.version() != seenS.version(),
					seenA + " " + seenS);
			assertTrue(fs.order(OrderRequest.of(1, 10, 700, 1).withVersions(seenA.version(), seenS.version())).ok());
			long newV = fs.activityUpdate(seenA.withLimitPerUser(3));
			assertTrue(newV > seenA.version(), newV + " > " + seenA.version());
			assertEquals(terms(seenA.withLimitPerUser(3)), terms(fs.activityGet(1)));
			assertEquals(3, fs.activityGet(1).limitPerUser());
			assertEquals(newV, fs.activityGet(1).version());

			SkuInfo before = fs.skuGet(1, 10);
			long ordersBefore = fs.stats().orders(), maxBefore = fs.ordersMax();
			OrderResult stale = fs.order(OrderRequest.of(1, 10, 700, 1).withRequestId(9001)
					.withVersions(seenA.version(), 0));
			assertEquals(-53, stale.rc());
			assertEquals("FLASH_ESTALE", stale.rcName());
			assertEquals(0, stale.orderNo());
			assertThrows(FlashException.Stale.class, stale::orThrow);
			// nothing taken: the stock, the orders, the request id ...
			assertEquals(before, fs.skuGet(1, 10));
			assertEquals(ordersBefore, fs.stats().orders());
			assertEquals(maxBefore, fs.ordersMax());
			OrderResult placed = fs.order(OrderRequest.of(1, 10, 700, 1).withRequestId(9001)
					.withVersions(newV, seenS.version()));
			assertTrue(placed.ok(), "the stale order's request id is free: " + placed.rcName());
			// ... and the user's limit: slot 2 of 3, then 3, then the limit
			assertEquals(2, placed.limitSlot());
			assertEquals(3, fs.order(OrderRequest.of(1, 10, 700, 1).withVersions(newV, 0)).limitSlot());
			assertEquals(-2, fs.order(OrderRequest.of(1, 10, 700, 1).withVersions(newV, 0)).rc());

			// the sku's terms: a price set moves its version on; 0 checks nothing
			long skuV = fs.skuPriceSet(1, 10, 1500);
			assertEquals(-53, fs.order(OrderRequest.of(1, 10, 701, 1).withVersions(newV, seenS.version())).rc());
			assertTrue(fs.order(OrderRequest.of(1, 10, 701, 1).withVersions(newV, skuV)).ok());
			assertTrue(fs.order(OrderRequest.of(1, 10, 702, 1)).ok());
			// a batch: the stale requests refused, the one between them placed
			List<OrderResult> many = fs.orderMany(List.of(
					OrderRequest.of(1, 10, 703, 1).withVersions(seenA.version(), 0),
					OrderRequest.of(1, 10, 704, 1).withVersions(newV, skuV),
					OrderRequest.of(1, 10, 705, 1).withVersions(newV, seenS.version())));
			assertEquals(List.of(-53, 0, -53), many.stream().map(OrderResult::rc).toList());
			assertEquals(10 - 6, fs.skuGet(1, 10).available());
		}
	}

	@Test
	void aPriceIsSetAndReadBackWithItsVersion() throws Exception {
		assertEquals((long) Manifest.read().constants.get("FLASH_PRICE_MAX"), SkuInfo.PRICE_MAX);
		try (Seg s = new Seg("price"); FlashStock fs = FlashStock.open(s.name)) {
			fs.activityAdd(Activity.openNow(1, 1));
			fs.skuAdd(1, 10, 5, 1);
			SkuInfo s0 = fs.skuGet(1, 10);
			assertEquals(0, s0.price(), "a sku starts at price 0");
			assertTrue(s0.version() > 0);
			long v1 = fs.skuPriceSet(1, 10, 1999);
			assertTrue(v1 > s0.version());
			assertEquals(new SkuInfo(1, 10, 1, 5, 5, 1999, v1), fs.skuGet(1, 10));
			long v2 = fs.skuPriceSet(1, 10, 1999);       // the same price: a republished page
			assertTrue(v2 > v1);
			assertEquals(v2, fs.skuGet(1, 10).version());
			assertEquals(List.of(fs.skuGet(1, 10)), fs.skus());
			long vMax = fs.skuPriceSet(1, 10, SkuInfo.PRICE_MAX);
			assertEquals(SkuInfo.PRICE_MAX, fs.skuGet(1, 10).price());
			assertThrows(FlashException.InvalidArgument.class, () -> fs.skuPriceSet(1, 10, -1));
			assertThrows(FlashException.NotFound.class, () -> fs.skuPriceSet(1, 11, 5));
			assertThrows(FlashException.NotFound.class, () -> fs.skuPriceSet(2, 10, 5));
			assertEquals(new SkuInfo(1, 10, 1, 5, 5, SkuInfo.PRICE_MAX, vMax), fs.skuGet(1, 10));
			long av = fs.activityGet(1).version();
			assertTrue(av != s0.version() && av != v1 && av != v2 && av != vMax, "one counter issues each version once");
			try (FlashStock ro = FlashStock.open(s.name, FlashStock.RDONLY)) {
				assertEquals(SkuInfo.PRICE_MAX, ro.skuGet(1, 10).price());
				assertThrows(FlashException.ReadOnly.class, () -> ro.skuPriceSet(1, 10, 1));
			}
		}
	}

	@Test
	void badUpdatesAreRefusedAndLeaveTheTermsAndTheirVersion() {
		try (Seg s = new Seg("update"); FlashStock fs = FlashStock.open(s.name)) {
			fs.activityAdd(Activity.openNow(1, 2));
			fs.skuAdd(1, 10, 5, 1);
			Activity a = fs.activityGet(1);
			List<Activity> bad = List.of(a.withLimitPerUser(1),   // a limit never shrinks
					new Activity(1, 2, a.maxQty(), Scope.SKU, 0, 0, a.startNs(), a.endNs()),
					new Activity(1, 2, a.maxQty(), a.scope(), 0, 3600, a.startNs(), a.endNs()),
					a.withWindow(a.startNs(), a.startNs()), a.withMaxQty(0));
			for (Activity b : bad) {
				assertThrows(FlashException.InvalidArgument.class, () -> fs.activityUpdate(b), b.toString());
				assertEquals(a, fs.activityGet(1), "refused " + b);
			}
			assertThrows(FlashException.NotFound.class,
					() -> fs.activityUpdate(new Activity(9, 2, 1, Scope.ACTIVITY, 0, 0, a.startNs(), a.endNs())));
			assertThrows(FlashException.NotFound.class, () -> fs.activityGet(9));
			try (FlashStock ro = FlashStock.open(s.name, FlashStock.RDONLY)) {
				assertEquals(a, ro.activityGet(1));
				assertThrows(FlashException.ReadOnly.class, () -> ro.activityUpdate(a));
			}
			// the same limit and a shorter window: taken, under a version of its own
			Activity later = a.withWindow(a.startNs(), a.endNs() - 1);
			long v = fs.activityUpdate(later);
			assertTrue(v > a.version());
			assertEquals(terms(later), terms(fs.activityGet(1)));
			assertEquals(v, fs.activityGet(1).version());
		}
	}

	/** The README's versioned terms example prints what the README says it prints. */
	@Test
	void theReadmesTermsExamplePrintsWhatItSays() throws Exception {
		ByteArrayOutputStream buf = new ByteArrayOutputStream();
		PrintStream out = System.out;
		try (Seg s = new Seg("termsdoc")) {
			System.setOut(new PrintStream(buf, true, StandardCharsets.UTF_8));
			try {
				flashstock.example.Quickstart.terms(s.name);
			} finally {
				System.setOut(out);
			}
		}
		assertEquals("FLASH_ESTALE, now 1500\norder 1 at 1500, available 2\n", buf.toString(StandardCharsets.UTF_8));
	}

	@Test
	void theReadmesCartsExamplePrintsWhatItSays() throws Exception {
		ByteArrayOutputStream buf = new ByteArrayOutputStream();
		PrintStream out = System.out;
		try (Seg s = new Seg("cartdoc")) {
			System.setOut(new PrintStream(buf, true, StandardCharsets.UTF_8));
			try {
				flashstock.example.Quickstart.carts(s.name);
			} finally {
				System.setOut(out);
			}
		}
		assertEquals("line 0: sku 7 x1\nline 1: sku 8 x2\nFLASH_ESOLD_OUT at line 1, short [1]\n3 units back\n",
				buf.toString(StandardCharsets.UTF_8));
	}

	@Test
	void aWindowNotOpenOrClosedIsRefused() {
		try (Seg s = new Seg("window"); FlashStock fs = FlashStock.open(s.name)) {
			long now = System.currentTimeMillis() * 1_000_000L, h = 3_600_000_000_000L;
			fs.activityAdd(Activity.openNow(1, 1).withWindow(now + h, now + 2 * h));
			fs.activityAdd(Activity.openNow(2, 1).withWindow(now - 2 * h, now - h));
			fs.skuAdd(1, 1, 10, 1);
			fs.skuAdd(2, 1, 10, 1);
			assertEquals(-3, fs.order(1, 1, 5, 1).rc());
			assertEquals(-4, fs.order(2, 1, 5, 1).rc());
		}
	}

	@Test
	void tokensAreRedeemedOnce() {
		try (Seg s = new Seg("tokens"); FlashStock fs = FlashStock.open(s.name)) {
			fs.activityAdd(Activity.openNow(1, 2).withFlags(Activity.TOKEN_REQUIRED));
			fs.skuAdd(1, 1, 10, 1);
			assertEquals(-6, fs.order(1, 1, 5, 1).rc());
			long t = fs.tokenIssue(1, 1, 5, 60_000);
			assertNotEquals(0, t);
			assertTrue(fs.order(OrderRequest.of(1, 1, 5, 1).withToken(t)).ok());
			assertEquals(-6, fs.order(OrderRequest.of(1, 1, 5, 1).withToken(t)).rc());
			assertThrows(FlashException.BadToken.class, () -> fs.tokenRedeem(1, 1, 5, t));
			long t2 = fs.tokenIssue(1, 1, 5, 60_000);
			assertThrows(FlashException.BadToken.class, () -> fs.tokenRedeem(1, 1, 6, t2));
			fs.tokenRedeem(1, 1, 5, t2);
			assertThrows(FlashException.BadToken.class, () -> fs.tokenRedeem(1, 1, 5, t2));
			assertThrows(FlashException.NotFound.class, () -> fs.tokenIssue(1, 2, 5, 1000));
		}
	}

	@Test
	void locksAreLeasedToOneOwnerWithGrowingFences() {
		try (Seg s = new Seg("locks"); FlashStock fs = FlashStock.open(s.name)) {
			long f1 = fs.lockAcquire("stock:1", 11, 60_000);
			assertThrows(FlashException.Locked.class, () -> fs.lockAcquire("stock:1", 12, 60_000));
			fs.lockRenew("stock:1", 11, 60_000);
			assertThrows(FlashException.NotOwner.class, () -> fs.lockRenew("stock:1", 12, 60_000));
			assertThrows(FlashException.NotOwner.class, () -> fs.lockRelease("stock:1", 12));
			fs.lockRelease("stock:1", 11);
			assertThrows(FlashException.NotFound.class, () -> fs.lockRelease("nope", 11));
			long f2 = fs.lockAcquire("stock:1", 12, 60_000);
			assertTrue(f2 > f1, f2 + " > " + f1);
			assertThrows(FlashException.InvalidArgument.class, () -> fs.lockAcquire("x".repeat(48), 1, 1000));
		}
	}

	@Test
	void readingStateWorksOnReadOnlyHandlesAndWritesAreRefused() {
		try (Seg s = new Seg("state"); FlashStock fs = FlashStock.open(s.name)) {
			fs.activityAdd(Activity.openNow(1, 1));
			fs.skuAdd(1, 1, 10, 1);
			assertTrue(fs.order(1, 1, 5, 1).ok());
			assertTrue(fs.slot() >= 0);
			assertTrue(fs.recover() >= 0);
			Ident id = fs.ident();
			assertNotEquals(0, id.incarnation());
			assertEquals(0, id.consumerPid());
			Quiet q = fs.quiet();
			assertTrue(q.ops() > 0);
			assertEquals(0, q.inFlight());
			assertTrue(q.pending() > 0, "no consumer: the records are pending");
			try (FlashStock ro = FlashStock.open(s.name, FlashStock.RDONLY)) {
				assertEquals(-1, ro.slot());
				assertEquals(new SkuInfo(1, 1, 1, 10, 9), stock(ro.skuGet(1, 1)));
				assertEquals(1, ro.stats().orders());
				assertEquals(id.incarnation(), ro.ident().incarnation());
				assertThrows(FlashException.ReadOnly.class, () -> ro.order(1, 1, 6, 1));
				assertThrows(FlashException.ReadOnly.class, () -> ro.restock(1, 1, 1));
			}
		}
	}

	@Test
	void aSyncOrderWithoutDaemonIsPlacedWithItsFateUnknown() {
		try (Seg s = new Seg("sync", SegOpts.small(1024).withDurability(Durability.SYNC));
				FlashStock fs = FlashStock.open(s.name)) {
			fs.activityAdd(Activity.openNow(1, 1));
			fs.skuAdd(1, 1, 10, 1);
			fs.syncWaitSet(50);
			OrderResult r = fs.order(1, 1, 5, 1);
			assertEquals(-33, r.rc());
			assertEquals("FLASH_EFATE_UNKNOWN", r.rcName());
			assertTrue(r.orderNo() > 0 && r.lsn() > 0);
			assertEquals(OrderState.ACTIVE, fs.orderGet(r.orderNo()).state());
			assertFalse(fs.durableWait(r.lsn(), 20));
			assertThrows(FlashException.InvalidArgument.class, () -> fs.durableWait(0, 20));
		}
	}

	@Test
	void aClosedObjectRefusesEveryCallAndHoldsNoHandle() {
		try (Seg s = new Seg("close")) {
			FlashStock fs = FlashStock.open(s.name);
			assertEquals(1, fs.openHandles());
			fs.close();
			assertEquals(0, fs.openHandles());
			assertThrows(IllegalStateException.class, () -> fs.order(1, 1, 1, 1));
			assertThrows(IllegalStateException.class, fs::stats);
			fs.close();
		}
	}

	/* ------------------------------------------------------------ carts */

	/** fs with activity 1 (limit lim, max qty 3, cancel returns quota) and skus 10, 11, 12. */
	static void cartSale(FlashStock fs, int lim, long u10, long u11, long u12) {
		fs.activityAdd(Activity.openNow(1, lim).withMaxQty(3).withFlags(Activity.CANCEL_RETURNS_QUOTA));
		fs.skuAdd(1, 10, u10, 1);
		fs.skuAdd(1, 11, u11, 1);
		fs.skuAdd(1, 12, u12, 1);
	}

	static List<Long> available(FlashStock fs) {
		return List.of(fs.skuGet(1, 10).available(), fs.skuGet(1, 11).available(), fs.skuGet(1, 12).available());
	}

	@Test
	void aCartTakesEveryLinesUnitsUnderOneNumberAndOneLimitSlot() {
		try (Seg s = new Seg("cart"); FlashStock fs = FlashStock.open(s.name)) {
			cartSale(fs, 2, 5, 5, 5);
			CartRequest req = CartRequest.of(1, 700, CartLine.of(10, 2), CartLine.of(11, 1), new CartLine(12, 3, 0))
					.withRequestId(7001);
			CartResult r = fs.cartOrder(req);
			assertTrue(r.ok(), r.rcName());
			assertTrue(r.orderNo() > 0 && r.lsn() > 0);
			assertEquals(1, r.limitSlot());
			assertEquals(List.of(3L, 4L, 2L), available(fs));
			OrderInfo head = fs.orderGet(r.orderNo());
			assertEquals(List.of(10, 2, 0, 3), List.of(head.skuId(), head.qty(), head.line(), head.lines()));
			assertEquals(OrderState.ACTIVE, head.state());
			for (int i = 1; i < 3; i++) {
				OrderInfo o = fs.orderGet(r.orderNo() + i);
				assertEquals(OrderState.NONE, o.state());
				assertEquals(List.of(i, 3), List.of(o.line(), o.lines()), "number of line " + i);
				long no = r.orderNo() + i;
				assertThrows(FlashException.NotFound.class, () -> fs.orderLines(no));
			}
			List<OrderInfo> ls = fs.orderLines(r.orderNo());
			assertEquals(3, ls.size(), ls.toString());
			int[][] want = { { 10, 2 }, { 11, 1 }, { 12, 3 } };
			for (int i = 0; i < 3; i++) {
				OrderInfo o = ls.get(i);
				assertEquals(List.of(r.orderNo(), (long) want[i][0], (long) want[i][1], (long) i, 3L, 700L, 1L),
						List.of(o.orderNo(), (long) o.skuId(), (long) o.qty(), (long) o.line(), (long) o.lines(),
								o.userId(), (long) o.limitSlot()), "line " + i);
				assertEquals(OrderState.ACTIVE, o.state());
			}
			CartResult dup = fs.cartOrder(req);
			assertEquals(-7, dup.rc(), dup.rcName());
			assertEquals(0, dup.firstRc());
			assertEquals(r.orderNo(), dup.orderNo());
			OrderResult p = fs.order(1, 10, 700, 1);
			assertEquals(2, p.limitSlot(), "the cart holds one limit slot");
			List<OrderInfo> pl = fs.orderLines(p.orderNo());
			assertEquals(1, pl.size());
			assertEquals(List.of(0, 1), List.of(pl.get(0).line(), pl.get(0).lines()));
			assertEquals(-2, fs.cartOrder(CartRequest.of(1, 700, CartLine.of(11, 1))).rc());
			assertEquals(List.of(2L, 4L, 2L), available(fs));
		}
	}

	@Test
	void aCartOneLineShortTakesNothingAndNamesTheLineAndEveryShortOne() {
		try (Seg s = new Seg("cartshort"); FlashStock fs = FlashStock.open(s.name)) {
			cartSale(fs, 1, 5, 1, 2);
			List<Long> before = available(fs);
			CartResult r = fs.cartOrder(CartRequest.of(1, 710, CartLine.of(10, 1), CartLine.of(11, 2), CartLine.of(12, 1)));
			assertEquals(-1, r.rc(), r.rcName());
			assertEquals(1, r.line());
			assertEquals(List.of(1), r.soldOutLines());
			FlashException e = r.error();
			assertTrue(e instanceof FlashException.SoldOut, e.toString());
			assertEquals(1, e.line());
			assertEquals(List.of(1), e.soldOutLines());
			r = fs.cartOrder(CartRequest.of(1, 710, CartLine.of(10, 3), CartLine.of(11, 2), CartLine.of(12, 3)));
			assertEquals(-1, r.rc(), r.rcName());
			assertEquals(List.of(1, 2), r.soldOutLines());
			assertTrue(r.line() == 1 || r.line() == 2, "line " + r.line());
			CartResult shortOne = r;
			assertThrows(FlashException.SoldOut.class, shortOne::orThrow);
			assertEquals(before, available(fs), "nothing taken");
			Object[][] bad = { { List.of(CartLine.of(10, 1), CartLine.of(11, 1), CartLine.of(13, 1)), FlashException.NotFound.class, 2 },
					{ List.of(CartLine.of(10, 1), CartLine.of(11, 0)), FlashException.InvalidArgument.class, 1 },
					{ List.of(CartLine.of(10, 1), CartLine.of(12, 4)), FlashException.InvalidArgument.class, 1 },
					{ List.of(CartLine.of(10, 1), CartLine.of(11, 1), CartLine.of(10, 1)), FlashException.InvalidArgument.class, 2 } };
			for (Object[] b : bad) {
				@SuppressWarnings("unchecked")
				List<CartLine> ls = (List<CartLine>) b[0];
				@SuppressWarnings("unchecked")
				Class<? extends FlashException> k = (Class<? extends FlashException>) b[1];
				FlashException x = assertThrows(k, () -> fs.cartOrder(CartRequest.of(1, 710, ls)));
				assertEquals((int) (Integer) b[2], x.line(), ls.toString());
			}
			assertThrows(FlashException.InvalidArgument.class, () -> fs.cartOrder(CartRequest.of(1, 710, List.of())));
			List<CartLine> many = new java.util.ArrayList<>();
			for (int i = 0; i <= CartRequest.LINES_MAX; i++)
				many.add(CartLine.of(100 + i, 1));
			assertThrows(FlashException.InvalidArgument.class, () -> fs.cartOrder(CartRequest.of(1, 710, many)));
			assertEquals(before, available(fs), "nothing taken");
			CartResult ok = fs.cartOrder(CartRequest.of(1, 710, CartLine.of(10, 1), CartLine.of(11, 1), CartLine.of(12, 2)));
			assertTrue(ok.ok(), ok.rcName());
			assertEquals(1, ok.limitSlot(), "the refusals took no limit slot");
			assertEquals(List.of(4L, 0L, 0L), available(fs));
		}
	}

	@Test
	void cancellingACartReturnsEveryLineAndTheLimitSlot() {
		try (Seg s = new Seg("cartcancel"); FlashStock fs = FlashStock.open(s.name)) {
			cartSale(fs, 1, 5, 5, 5);
			long no = fs.cartOrder(CartRequest.of(1, 720, CartLine.of(10, 1), CartLine.of(11, 2), CartLine.of(12, 3)))
					.orThrow();
			assertEquals(List.of(4L, 3L, 2L), available(fs));
			assertEquals(6, fs.cancel(no));
			assertEquals(List.of(5L, 5L, 5L), available(fs));
			List<OrderInfo> ls = fs.orderLines(no);
			assertEquals(3, ls.size());
			for (OrderInfo o : ls)
				assertEquals(OrderState.CANCELLED, o.state(), o.toString());
			assertThrows(FlashException.Cancelled.class, () -> fs.cancel(no));
			assertThrows(FlashException.NotFound.class, () -> fs.cancel(no + 1));
			assertEquals(List.of(5L, 5L, 5L), available(fs));
			CartResult again = fs.cartOrder(CartRequest.of(1, 720, CartLine.of(11, 1), CartLine.of(12, 1)));
			assertEquals(1, again.limitSlot(), again.rcName());
		}
	}

	@Test
	void aCartReservationIsConfirmedOrExpiredWhole() throws Exception {
		try (Seg s = new Seg("cartresv"); FlashStock fs = FlashStock.open(s.name)) {
			cartSale(fs, 2, 5, 5, 5);
			long paid = fs.cartOrder(CartRequest.of(1, 730, CartLine.of(10, 1), CartLine.of(11, 2)).withReserveMs(60_000))
					.orThrow();
			long late = fs.cartOrder(CartRequest.of(1, 731, CartLine.of(11, 1), CartLine.of(12, 3)).withReserveMs(30))
					.orThrow();
			assertEquals(List.of(4L, 2L, 2L), available(fs));
			for (long no : new long[] { paid, late })
				for (OrderInfo o : fs.orderLines(no)) {
					assertEquals(OrderState.RESERVED, o.state(), o.toString());
					assertTrue(o.payByNs() > 0, o.toString());
				}
			assertThrows(FlashException.NotDue.class, () -> fs.expire(paid));
			fs.confirm(paid);
			for (OrderInfo o : fs.orderLines(paid)) {
				assertEquals(OrderState.ACTIVE, o.state(), o.toString());
				assertEquals(0, o.payByNs());
			}
			Thread.sleep(60);
			assertEquals(4, fs.expire(late));
			for (OrderInfo o : fs.orderLines(late))
				assertEquals(OrderState.EXPIRED, o.state(), o.toString());
			assertThrows(FlashException.Expired.class, () -> fs.confirm(late));
			long again = fs.cartOrder(CartRequest.of(1, 731, CartLine.of(12, 1), CartLine.of(10, 1)).withReserveMs(30))
					.orThrow();
			Thread.sleep(60);
			assertEquals(1, fs.expireDue(0), "the cart, once");
			for (OrderInfo o : fs.orderLines(again))
				assertEquals(OrderState.EXPIRED, o.state(), o.toString());
			assertEquals(List.of(4L, 3L, 5L), available(fs));
			Stats st = fs.stats();
			assertEquals(1, st.confirms());
			assertEquals(2, st.expiries());
		}
	}

	@Test
	void anActivityWhoseLimitIsPerSkuRefusesCarts() {
		try (Seg s = new Seg("cartsku"); FlashStock fs = FlashStock.open(s.name)) {
			Activity a = Activity.openNow(2, 1).withMaxQty(3);
			fs.activityAdd(new Activity(a.id(), a.limitPerUser(), a.maxQty(), Scope.SKU, 0, 0, a.startNs(), a.endNs()));
			fs.skuAdd(2, 20, 5, 1);
			fs.skuAdd(2, 21, 5, 1);
			assertThrows(FlashException.InvalidArgument.class,
					() -> fs.cartOrder(CartRequest.of(2, 740, CartLine.of(20, 1), CartLine.of(21, 1))));
			assertEquals(5, fs.skuGet(2, 20).available());
			assertEquals(5, fs.skuGet(2, 21).available());
			assertTrue(fs.order(2, 20, 740, 1).ok(), "a plain order still is one");
		}
	}

	@Test
	void aRecordsCartLineAndLastAreItsFlags() {
		int cart = FeedRecord.F_CART, last = FeedRecord.F_LAST;
		int[][] cases = { // type, flags, cart, line, last
				{ FeedRecord.ORDER, cart, 1, 0, 0 }, { FeedRecord.CANCEL, cart | last | 15 << 10 | 1, 1, 15, 1 },
				{ FeedRecord.EXPIRE, cart | 3 << 10, 1, 3, 0 }, { FeedRecord.CONFIRM, cart | last | 1 << 10, 1, 1, 1 },
				{ FeedRecord.ORDER, 0x8035, 0, 0, 1 }, { FeedRecord.RESTOCK, 0, 0, 0, 0 },
				{ FeedRecord.ACTIVITY, 1, 0, 0, 0 } };
		for (int[] c : cases) {
			FeedRecord r = new FeedRecord(1, 1, c[0], 0, 1, 10, 1, 5, 7, 0, 0, 0, 1, c[1], 0, 0, 0, 0);
			assertEquals(List.of(c[2] == 1, c[3], c[4] == 1), List.of(r.cart(), r.line(), r.last()),
					"type " + c[0] + " flags " + Integer.toHexString(c[1]));
		}
	}
}
