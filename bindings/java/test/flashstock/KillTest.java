/*
 * KillTest.java -- (java_kill) buyer JVMs (KillBuyer, two buyer threads on
 * one FlashStock in each) killed with SIGKILL at random moments and
 * restarted, on a hot sku with far less stock than demand (limit 2 per
 * user, cancels that return the quota, request ids and their retries,
 * single orders and batches of up to 16), while a private `flashstock
 * serve` writes the WAL.  The segment is in sync durability, so each order
 * or batch waits for the daemon's fdatasync, and a kill may land in that
 * wait (orders placed, never acknowledged: the WAL then holds more orders
 * than the buyers wrote down).  Then, from the records: `flashstock
 * reconcile` exits 0 (available + sold = total, sold = units of the active
 * orders, segment and WAL agree); from `flashstock wal dump`: no user holds
 * more than 2 active orders, every order number a buyer wrote down is an
 * order of the WAL, and every order of the WAL was written down but those
 * of the calls a kill cut short; nothing oversold.
 */
package flashstock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

class KillTest {
	static final int BUYERS = 3, STOCK = 300, LIMIT = 2, USERS = 400;
	static final long RUN_MS = 20_000;

	@Test
	void killedBuyersNeitherOversellNorLoseAnAcknowledgedOrderNorPassTheLimit() throws Exception {
		Path dir = Files.createTempDirectory("flash-java-kill-");
		Path wal = dir.resolve("wal"), serveLog = dir.resolve("serve.log");
		Process serve = null;
		Process[] buyers = new Process[BUYERS];
		Random rnd = new Random();
		try (Seg s = new Seg("kill", SegOpts.small(16384).withMaxOrders(65536).withMaxRequests(1 << 18)
				.withDurability(Durability.SYNC))) {
			try (FlashStock fs = FlashStock.open(s.name)) {
				fs.activityAdd(Activity.openNow(1, LIMIT).withFlags(Activity.CANCEL_RETURNS_QUOTA));
				fs.skuAdd(1, 1, STOCK, 4);
			}
			serve = Procs.serve(s.name, wal, serveLog);
			int kills = 0, starts = 0;
			long end = System.currentTimeMillis() + RUN_MS;
			for (int b = 0; b < BUYERS; b++, starts++)
				buyers[b] = startBuyer(dir, s.name, b, rnd);
			while (System.currentTimeMillis() < end) {
				Thread.sleep(200 + rnd.nextInt(1000));
				int b = rnd.nextInt(BUYERS);
				if (!buyers[b].isAlive())
					throw new AssertionError("buyer " + b + " exited " + buyers[b].exitValue() + " on its own: "
							+ Files.readString(dir.resolve("buyer" + b + ".log")));
				buyers[b].destroyForcibly().waitFor();  // SIGKILL
				kills++;
				buyers[b] = startBuyer(dir, s.name, b, rnd);
				starts++;
			}
			// then let them sell out (a slow machine may have let the kills come
			// before the buyers got far), at most 60 s
			try (FlashStock fs = FlashStock.open(s.name)) {
				for (int i = 0; i < 600 && fs.skuGet(1, 1).available() > 0; i++)
					Thread.sleep(100);
				assertEquals(0, fs.skuGet(1, 1).available(), "the buyers did not sell the stock out");
			}
			for (int b = 0; b < BUYERS; b++) {
				if (!buyers[b].isAlive())
					throw new AssertionError("buyer " + b + " exited on its own: "
							+ Files.readString(dir.resolve("buyer" + b + ".log")));
				buyers[b].destroyForcibly().waitFor();
				kills++;
			}

			SkuInfo sku;
			Stats st;
			try (FlashStock fs = FlashStock.open(s.name)) {
				Procs.awaitQuiet(fs);  // every dead buyer recovered, every record durable
				sku = fs.skuGet(1, 1);
				st = fs.stats();
			}
			Procs.stopServe(serve, serveLog);
			serve = null;

			Procs.Result rec = Procs.cli(dir, "reconcile", "--name", s.name, "--wal", wal.toString());
			System.out.print(rec.out());
			assertEquals(0, rec.rc(), "reconcile: " + rec.out());

			List<Procs.Rec> recs = Procs.walDump(dir, wal);
			Map<Long, Procs.Rec> orders = new HashMap<>();
			Set<Long> cancelled = new HashSet<>();
			for (Procs.Rec r : recs) {
				if (r.type().equals("order"))
					assertTrue(orders.put(r.order(), r) == null, "order " + r.order() + " twice in the WAL");
				else if (r.type().equals("cancel"))
					assertTrue(cancelled.add(r.order()), "order " + r.order() + " cancelled twice in the WAL");
			}
			Map<Long, Integer> active = new HashMap<>();
			long activeUnits = 0;
			for (Procs.Rec o : orders.values())
				if (!cancelled.contains(o.order())) {
					active.merge(o.user(), 1, Integer::sum);
					activeUnits += o.qty();
				}
			int worst = active.values().stream().max(Integer::compare).orElse(0);
			assertTrue(worst <= LIMIT, "a user holds " + worst + " active orders, limit " + LIMIT);

			// the numbers written down; and the orders of each buyer
			// process's threads' last calls ("call T N"), which its kill may
			// have cut short
			Set<Long> acked = new HashSet<>();
			int cut = 0;
			for (int b = 0; b < BUYERS; b++) {
				Path f = dir.resolve("acks" + b);
				if (!Files.exists(f))
					continue;
				Map<String, Integer> last = new HashMap<>();
				for (String l : Files.readAllLines(f)) {
					if (l.equals("start")) {
						cut += last.values().stream().mapToInt(Integer::intValue).sum();
						last.clear();
					} else if (l.startsWith("call ")) {
						String[] w = l.split(" ");
						last.put(w[1], Integer.parseInt(w[2]));
					} else if (!l.isBlank()) {
						acked.add(Long.parseLong(l.trim()));
					}
				}
				cut += last.values().stream().mapToInt(Integer::intValue).sum();
			}
			List<Long> missing = new ArrayList<>();
			for (long n : acked)
				if (!orders.containsKey(n))
					missing.add(n);
			assertTrue(missing.isEmpty(), "acknowledged orders missing from the WAL: " + missing);
			// every order of the WAL (at least the stock's, sold out) is
			// acknowledged unless its buyer thread was killed in that call (at
			// most one call per thread per kill, of at most 16 orders)
			assertTrue(cut <= kills * KillBuyer.THREADS * KillBuyer.MAX_BATCH, cut + " orders cut short");
			assertTrue(orders.size() - acked.size() <= cut, "only " + acked.size() + " of " + orders.size()
					+ " orders acknowledged after " + kills + " kills, which cut at most " + cut + " short");
			assertTrue(acked.size() >= STOCK - cut, "only " + acked.size() + " orders acknowledged");
			assertTrue(sku.sold() <= sku.total(), "oversold: " + sku);
			assertEquals(STOCK, sku.total());
			assertEquals(activeUnits, sku.sold(), "sold against the WAL's active orders");
			System.out.printf("kill: %d buyer starts, %d SIGKILLs (their calls held %d orders); %d orders "
					+ "acknowledged (all in the WAL), %d orders and %d cancels in the WAL, %d active; sold %d of %d; "
					+ "max active per user %d (limit %d); %d dead handles recovered (%d rolled back, %d forward)%n",
					starts, kills, cut, acked.size(), orders.size(), cancelled.size(), active.values().stream()
							.mapToInt(Integer::intValue).sum(), sku.sold(), sku.total(), worst, LIMIT,
					st.recoveries(), st.rolledBack(), st.rolledForward());
		} finally {
			for (Process p : buyers)
				if (p != null)
					p.destroyForcibly().waitFor();
			if (serve != null)
				serve.destroyForcibly().waitFor();
			Procs.rmrf(dir);
		}
	}

	private static Process startBuyer(Path dir, String seg, int b, Random rnd) throws Exception {
		return Procs.java(dir.resolve("buyer" + b + ".log"), "flashstock.KillBuyer", seg,
				dir.resolve("acks" + b).toString(), "1", String.valueOf(USERS), String.valueOf(rnd.nextLong()));
	}
}
