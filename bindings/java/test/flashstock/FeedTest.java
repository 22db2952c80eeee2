/*
 * FeedTest.java -- (java_feed) the order feed from Java, on a real sale: a
 * segment served by a private `flashstock serve`, orders and a cancel
 * placed through FlashStock, read back through Feed: every acknowledged
 * order once, in LSN order, with every field; commits hold across a
 * reopen; a consumer killed with records read past its commit resumes
 * after the commit; one open per consumer name over all processes
 * (FLASH_EBUSY); FLASH_ETIMEOUT when nothing is durable; listing and drop;
 * a price set read back as a PRICE record and new terms as an ACTIVITY
 * record with flags 1, each with its version.
 */
package flashstock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class FeedTest {
	Path dir, wal, serveLog;
	Seg seg;
	FlashStock fs;
	Process serve;

	/* activity 1 (limit 1 per user), sku 10 of 100000 units in 1 shard, served */
	@BeforeEach
	void sale() throws Exception {
		dir = Files.createTempDirectory("flash-java-feed-");
		wal = dir.resolve("wal");
		serveLog = dir.resolve("serve.log");
		seg = new Seg("feed");
		fs = FlashStock.open(seg.name);
		fs.activityAdd(Activity.openNow(1, 1));
		fs.skuAdd(1, 10, 100000, 1);
		serve = Procs.serve(seg.name, wal, serveLog);
	}

	@AfterEach
	void end() throws Exception {
		try {
			fs.close();
			if (serve != null)
				Procs.stopServe(serve, serveLog);
		} finally {
			if (serve != null && serve.isAlive())
				serve.destroyForcibly().waitFor();
			seg.close();
			Procs.rmrf(dir);
		}
	}

	/* One order per user (request ids from ids), the last one waited durable: user -> order number. */
	Map<Long, Long> buy(long[] users, Map<Long, Long> ids) {
		Map<Long, Long> out = new LinkedHashMap<>();
		OrderResult res = null;
		for (long u : users) {
			res = fs.order(OrderRequest.of(1, 10, u, 1).withRequestId(ids.getOrDefault(u, 0L)));
			assertTrue(res.ok(), res.rcName());
			out.put(u, res.orderNo());
		}
		assertTrue(fs.durableWait(res.lsn(), 10000), "the last order was not durable in 10 s");
		return out;
	}

	static List<FeedRecord> take(Feed f, int n) {
		List<FeedRecord> l = new ArrayList<>();
		for (int i = 0; i < n; i++)
			l.add(f.next(10000));
		return l;
	}

	@Test
	void aPriceSetIsAPriceRecordAndNewTermsAnActivityUpdateEachWithItsVersion() {
		Activity a = fs.activityGet(1);
		SkuInfo s = fs.skuGet(1, 10);
		long priceV = fs.skuPriceSet(1, 10, 2500);
		long actV = fs.activityUpdate(a.withLimitPerUser(2));
		buy(new long[] { 1 }, Map.of());   // the same handle's records: durable once it is
		List<FeedRecord> recs;
		try (Feed feed = Feed.open(wal.toString(), "terms", Feed.Options.fromStartOfWal())) {
			recs = take(feed, 5);
		}
		assertEquals(List.of(FeedRecord.ACTIVITY, FeedRecord.SKU, FeedRecord.PRICE, FeedRecord.ACTIVITY, FeedRecord.ORDER),
				recs.stream().map(FeedRecord::type).toList());
		FeedRecord added = recs.get(0), sku = recs.get(1), price = recs.get(2), update = recs.get(3);
		assertEquals(List.of(a.version(), 0), List.of(added.orderNo(), added.flags() & 1));
		assertEquals(s.version(), sku.orderNo());
		assertEquals(List.of(1, 10, 2500L, priceV), List.of(price.activityId(), price.skuId(), price.value(),
				price.orderNo()));
		assertTrue(price.tsNs() > 0);
		assertEquals(List.of(1, actV, 1, 2), List.of(update.activityId(), update.orderNo(), update.flags() & 1,
				update.bizDay() & 0xff));
	}

	/* A cart's ORDER and its CANCEL are one record per line, in line order: the line's sku and qty, the
	 * cart's number and user; cart(), line() and last() from the flags; the request id on line 0 only. */
	@Test
	void aCartIsOneRecordPerLineWithItsLineLastAndTheCartsNumber() {
		fs.skuAdd(1, 11, 100, 1);
		fs.skuAdd(1, 12, 100, 1);
		int[] skus = { 12, 10, 11 };
		CartResult r = fs.cartOrder(CartRequest.of(1, 900, CartLine.of(12, 1), CartLine.of(10, 1), CartLine.of(11, 1))
				.withRequestId(9001));
		assertTrue(r.ok(), r.rcName());
		assertEquals(3, fs.cancel(r.orderNo()));
		long plain = buy(new long[] { 901 }, Map.of()).get(901L);
		List<FeedRecord> recs;
		try (Feed feed = Feed.open(wal.toString(), "carts", Feed.Options.fromStartOfWal())) {
			recs = take(feed, 11).stream().filter(x -> x.type() == FeedRecord.ORDER || x.type() == FeedRecord.CANCEL)
					.toList();
		}
		assertEquals(7, recs.size(), recs.toString());
		for (int i = 0; i < 6; i++) {
			FeedRecord x = recs.get(i);
			int line = i % 3;
			assertEquals(List.of(i < 3 ? FeedRecord.ORDER : FeedRecord.CANCEL, skus[line], 1, r.orderNo(), 900L, true,
					line, line == 2), List.of(x.type(), x.skuId(), x.qty(), x.orderNo(), x.userId(), x.cart(),
							x.line(), x.last()), "record " + i);
		}
		assertEquals(List.of(9001L, 0L, 0L), recs.subList(0, 3).stream().map(FeedRecord::requestId).toList());
		FeedRecord p = recs.get(6);
		assertEquals(List.of(plain, false, 0, true), List.of(p.orderNo(), p.cart(), p.line(), p.last()));
	}

	@Test
	void everyAcknowledgedOrderComesOnceInLsnOrderWithItsFieldsAndCommitsHoldAcrossAReopen() {
		String w = wal.toString();
		long t0 = System.currentTimeMillis() * 1_000_000L;
		Map<Long, Long> orders = buy(new long[] { 1, 2, 3, 4, 5 }, Map.of(3L, 3003L));
		assertEquals(1, fs.cancel(orders.get(2L)));
		List<FeedRecord> recs;
		long[] lsns = new long[8];
		try (Feed feed = Feed.open(w, "t1", Feed.Options.fromStartOfWal())) {
			recs = take(feed, 8);
			assertThrows(FlashException.Timeout.class, () -> feed.next(0));  // nothing more is durable
			assertEquals(Optional.empty(), feed.poll(0));
			int[] types = { FeedRecord.ACTIVITY, FeedRecord.SKU, FeedRecord.ORDER, FeedRecord.ORDER, FeedRecord.ORDER,
				FeedRecord.ORDER, FeedRecord.ORDER, FeedRecord.CANCEL };
			for (int i = 0; i < 8; i++) {
				FeedRecord r = recs.get(i);
				lsns[i] = r.lsn();
				assertEquals(types[i], r.type(), "type of record " + i);
				assertEquals(recs.get(0).lsn() + i, r.lsn(), "LSNs follow each other");
				assertEquals(FeedRecord.SOURCE_WAL, r.source());
				assertEquals(0, r.missing());
				assertEquals(0, r.gap());
				assertTrue(r.seq() >= 1, "seq " + r.seq());
			}
			assertTrue(lsns[0] >= 1);
			FeedRecord act = recs.get(0), sku = recs.get(1);
			assertEquals(1, act.activityId());
			assertEquals(List.of(1, 10, 100000L, 1), List.of(sku.activityId(), sku.skuId(), sku.value(), sku.qty()));
			long now = System.currentTimeMillis() * 1_000_000L + 1_000_000L;
			long[] users = { 1, 2, 3, 4, 5 };
			for (int i = 0; i < 5; i++) {
				FeedRecord r = recs.get(2 + i);
				long u = users[i];
				assertEquals(orders.get(u), r.orderNo(), "order of user " + u);
				assertEquals(u, r.userId());
				assertEquals(List.of(1, 10, 1, 1), List.of(r.activityId(), r.skuId(), r.qty(), r.limitSlot()));
				assertEquals(u == 3 ? 3003L : 0L, r.requestId());
				assertTrue(r.tsNs() >= t0 - 1_000_000L && r.tsNs() <= now, "ts_ns " + r.tsNs());
				assertTrue(r.bizDay() > 0);
			}
			FeedRecord cancel = recs.get(7);
			assertEquals(List.of(orders.get(2L), 2L, 1L), List.of(cancel.orderNo(), cancel.userId(), (long) cancel.qty()));

			FeedInfo info = feed.info();
			assertEquals("t1", info.name());
			assertEquals(FeedInfo.STATE_OK, info.state());
			assertTrue(info.open());
			assertEquals(0, info.committedLsn());
			assertTrue(info.durableLsn() >= lsns[7]);
			feed.commit(lsns[3]);
			assertEquals(lsns[3], feed.info().committedLsn());
			feed.commit(lsns[3]);  // equal: a no-op
			assertThrows(FlashException.InvalidArgument.class, () -> feed.commit(lsns[7] + 1));  // above the last returned
			assertThrows(FlashException.InvalidArgument.class, () -> feed.commit(lsns[2]));      // below the committed
			feed.rewind();
			assertEquals(recs.get(4), feed.next(10000), "after a rewind: the record after the committed position");
			assertThrows(FlashException.Busy.class, () -> Feed.open(w, "t1"));  // one open per name
			FeedInfo listed = Feed.list(w).get(0);
			assertEquals("t1", listed.name());
			assertTrue(listed.open());
			assertEquals(lsns[3], listed.committedLsn());
			assertEquals(listed.durableLsn() - lsns[3], listed.lagRecords());
		}
		// closed without a commit past lsns[3]: the next open resumes after it
		try (Feed feed = Feed.open(w, "t1", Feed.Options.defaults().withNoCreate(true))) {
			assertEquals(recs.subList(4, 8), take(feed, 4));
			assertEquals(Optional.empty(), feed.poll(0));
			feed.commit(lsns[7]);
		}
		FeedInfo listed = Feed.list(w).get(0);
		assertEquals(List.of("t1", false, lsns[7]), List.of(listed.name(), listed.open(), listed.committedLsn()));
		assertTrue(listed.commitNs() > 0 && listed.createdNs() > 0);

		assertThrows(FlashException.NotFound.class,
				() -> Feed.open(w, "nobody", Feed.Options.defaults().withNoCreate(true)));
		assertThrows(FlashException.InvalidArgument.class, () -> Feed.open(w, ".hidden"));
		FlashException x = assertThrows(FlashException.class,   // the refill options reach the library
				() -> Feed.open(w, "refill", Feed.Options.defaults().withMysql("http://not-mysql", "wal")));
		assertEquals("FLASH_EMYSQL_CONFIG", x.rcName());
		// a new consumer without fromStart starts at the durable end
		try (Feed late = Feed.open(w, "late")) {
			assertThrows(FlashException.Timeout.class, () -> late.next(0));
			Map<Long, Long> n = buy(new long[] { 6 }, Map.of());
			FeedRecord r = late.next(10000);
			assertEquals(List.of((long) FeedRecord.ORDER, n.get(6L), 6L, lsns[7] + 1),
					List.of((long) r.type(), r.orderNo(), r.userId(), r.lsn()));
		}
		assertEquals(List.of("late", "t1"), Feed.list(w).stream().map(FeedInfo::name).toList());
		Feed.drop(w, "late");
		assertEquals(List.of("t1"), Feed.list(w).stream().map(FeedInfo::name).toList());
		assertThrows(FlashException.NotFound.class, () -> Feed.drop(w, "late"));
	}

	@Test
	void aConsumerKilledWithRecordsReadPastItsCommitResumesAfterTheCommitAndHoldsItsNameWhileAlive()
			throws Exception {
		String w = wal.toString();
		buy(new long[] { 1, 2, 3, 4, 5, 6 }, Map.of());  // 8 records: activity, sku, 6 orders
		Path log = dir.resolve("consumer.log");
		Process c = Procs.java(log, "flashstock.FeedConsumer", w, "k1", "7", "4");
		try {
			for (int i = 0; i < 400 && !Files.readString(log).contains("open"); i++) {
				assertTrue(c.isAlive(), "the consumer exited: " + Files.readString(log));
				Thread.sleep(50);
			}
			String out = Files.readString(log);
			assertTrue(out.contains("open"), "the consumer did not read its records: " + out);
			long committed = Long.parseLong(out.replaceAll("(?s).*committed ([0-9]+).*", "$1"));
			// alive: its name is taken, in another process too
			assertThrows(FlashException.Busy.class, () -> Feed.open(w, "k1"));
			assertTrue(Feed.list(w).get(0).open());
			assertThrows(FlashException.Busy.class, () -> Feed.drop(w, "k1"));
			c.destroyForcibly().waitFor();  // SIGKILL, 3 records read and not committed
			try (Feed f = Feed.open(w, "k1", Feed.Options.defaults().withNoCreate(true))) {
				assertEquals(committed, f.info().committedLsn());
				FeedRecord r = f.next(10000);
				assertEquals(committed + 1, r.lsn(), "the first record after the kill follows the commit");
				List<FeedRecord> rest = new ArrayList<>(List.of(r));
				for (Optional<FeedRecord> o; (o = f.poll(0)).isPresent();)
					rest.add(o.get());
				assertEquals(4, rest.size(), "records 5..8 once each");
				for (FeedRecord x : rest)
					assertEquals(FeedRecord.ORDER, x.type());
			}
		} finally {
			if (c.isAlive())
				c.destroyForcibly().waitFor();
		}
	}

	@Test
	void aFeedLetsOneThreadAtATimeIntoACallAndACloseDuringAWaitLetsTheWaitEnd() throws Exception {
		Feed f = Feed.open(wal.toString(), "th", Feed.Options.fromStartOfWal());
		try {
			take(f, 2);  // activity, sku: nothing more is durable
			AtomicReference<Throwable> got = new AtomicReference<>();
			Thread t = new Thread(() -> {
				try {
					f.next(3000);  // waits: no order is placed
				} catch (Throwable e) {
					got.set(e);
				}
			});
			t.start();
			for (int i = 0; i < 2000 && !f.inCall(); i++)
				Thread.sleep(1);
			assertTrue(f.inCall(), "the other thread did not enter next()");
			// while the other thread waits inside next(), a call from here is refused
			assertThrows(IllegalStateException.class, f::info);
			assertThrows(IllegalStateException.class, () -> f.commit(1));
			f.close();  // waits for the next() to return, then frees the feed
			t.join();
			assertTrue(got.get() instanceof FlashException.Timeout, "the waiting next: " + got.get());
			assertThrows(IllegalStateException.class, () -> f.next(0));  // closed
			f.close();  // again: nothing
		} finally {
			f.close();
		}
	}
}
