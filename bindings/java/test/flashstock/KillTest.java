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
 *
 * Two more buyer JVMs (KillBuyer ... reserve), killed and restarted with the
 * others, place reservations, cart reservations and plain carts (over skus
 * 1, 2, 3), pay, cancel or leave them, on a segment of
 * their own with its own daemon and WAL: `flashstock reconcile` stops at
 * the first CONFIRM or EXPIRE record ("frame of an unknown type"), and the
 * orders' segment keeps its reconcile check (checkReservations says what
 * is checked there).
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
	/* buyers BUYERS..BUYERS+RESERVERS-1 reserve, on a segment of R_STOCK units for R_USERS users */
	static final int RESERVERS = 2, R_STOCK = 400, R_USERS = 1000;
	static final long RUN_MS = 20_000;

	@Test
	void killedBuyersNeitherOversellNorLoseAnAcknowledgedOrderNorPassTheLimit() throws Exception {
		Path dir = Files.createTempDirectory("flash-java-kill-");
		Path wal = dir.resolve("wal"), serveLog = dir.resolve("serve.log");
		Path rwal = dir.resolve("rwal"), rserveLog = dir.resolve("rserve.log");
		Process serve = null, rserve = null;
		Process[] buyers = new Process[BUYERS + RESERVERS];
		Random rnd = new Random();
		SegOpts opts = SegOpts.small(16384).withMaxOrders(65536).withMaxRequests(1 << 18)
				.withDurability(Durability.SYNC);
		try (Seg s = new Seg("kill", opts); Seg rs = new Seg("killr", opts)) {
			try (FlashStock fs = FlashStock.open(s.name); FlashStock rfs = FlashStock.open(rs.name)) {
				fs.activityAdd(Activity.openNow(1, LIMIT).withFlags(Activity.CANCEL_RETURNS_QUOTA));
				fs.skuAdd(1, 1, STOCK, 4);
				rfs.activityAdd(Activity.openNow(1, LIMIT).withMaxQty(2).withFlags(Activity.CANCEL_RETURNS_QUOTA));
				for (int sku = 1; sku <= 3; sku++)  // the carts' skus
					rfs.skuAdd(1, sku, R_STOCK, 4);
			}
			serve = Procs.serve(s.name, wal, serveLog);
			rserve = Procs.serve(rs.name, rwal, rserveLog);
			int kills = 0, rkills = 0, starts = 0;
			long end = System.currentTimeMillis() + RUN_MS;
			for (int b = 0; b < BUYERS + RESERVERS; b++, starts++)
				buyers[b] = startBuyer(dir, b < BUYERS ? s.name : rs.name, b, rnd);
			while (System.currentTimeMillis() < end) {
				Thread.sleep(200 + rnd.nextInt(1000));
				int b = rnd.nextInt(BUYERS + RESERVERS);
				if (!buyers[b].isAlive())
					throw new AssertionError("buyer " + b + " exited " + buyers[b].exitValue() + " on its own: "
							+ Files.readString(dir.resolve("buyer" + b + ".log")));
				buyers[b].destroyForcibly().waitFor();  // SIGKILL
				if (b < BUYERS)
					kills++;
				else
					rkills++;
				buyers[b] = startBuyer(dir, b < BUYERS ? s.name : rs.name, b, rnd);
				starts++;
			}
			// then let them sell out (a slow machine may have let the kills come
			// before the buyers got far), at most 60 s
			try (FlashStock fs = FlashStock.open(s.name)) {
				for (int i = 0; i < 600 && fs.skuGet(1, 1).available() > 0; i++)
					Thread.sleep(100);
				assertEquals(0, fs.skuGet(1, 1).available(), "the buyers did not sell the stock out");
			}
			for (int b = 0; b < BUYERS + RESERVERS; b++) {
				if (!buyers[b].isAlive())
					throw new AssertionError("buyer " + b + " exited on its own: "
							+ Files.readString(dir.resolve("buyer" + b + ".log")));
				buyers[b].destroyForcibly().waitFor();
				if (b < BUYERS)
					kills++;
				else
					rkills++;
			}
			checkReservations(dir, rs.name, rwal, rserve, rserveLog, rkills);
			rserve = null;

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
			if (rserve != null)
				rserve.destroyForcibly().waitFor();
			Procs.rmrf(dir);
		}
	}

	private static Process startBuyer(Path dir, String seg, int b, Random rnd) throws Exception {
		if (b >= BUYERS)
			return Procs.java(dir.resolve("buyer" + b + ".log"), "flashstock.KillBuyer", seg,
					dir.resolve("racks" + b).toString(), "1", String.valueOf(R_USERS),
					String.valueOf(rnd.nextLong()), "reserve");
		return Procs.java(dir.resolve("buyer" + b + ".log"), "flashstock.KillBuyer", seg,
				dir.resolve("acks" + b).toString(), "1", String.valueOf(USERS), String.valueOf(rnd.nextLong()));
	}

	/*
	 * The reservers' segment, once its daemon has expired every reservation
	 * left due (300 ms at most) and stopped: no reservation is left RESERVED;
	 * each is ACTIVE, CANCELLED or EXPIRED; for every sku, available + the
	 * units of its live lines = total; every cart whole or absent
	 * (cartLines) and holding the lines its buyer asked for; no user holds more than LIMIT; each outcome a reserver
	 * appended is the order's state (paid: ACTIVE, cancelled: CANCELLED,
	 * refused as expired: EXPIRED), and the ACTIVE ones it did not note paid
	 * are at most one per kill (a confirm cut short); the WAL has one ORDER per
	 * reservation and one CONFIRM per ACTIVE one, one EXPIRE per EXPIRED one, a
	 * CANCEL per CANCELLED one, nothing else (a cart: one per line; a plain
	 * cart ACTIVE: its ORDERs only).
	 */
	private static void checkReservations(Path dir, String seg, Path wal, Process serve, Path serveLog, int rkills)
			throws Exception {
		Map<Long, OrderInfo> placed = new HashMap<>();
		List<OrderInfo> all = new ArrayList<>();
		Map<Integer, SkuInfo> skus = new HashMap<>();
		Map<Long, List<OrderInfo>> lines;
		try (FlashStock fs = FlashStock.open(seg)) {
			for (int i = 0;; i++) {
				fs.recover();
				placed.clear();
				all.clear();
				int reserved = 0;
				for (long no = 1; no <= fs.ordersMax(); no++) {
					OrderInfo o = fs.orderGet(no);
					all.add(o);
					if (o.state() == OrderState.RESERVED)
						reserved++;
					if (o.state() != OrderState.NONE)
						placed.put(no, o);
				}
				if (reserved == 0 && fs.quiet().quiet())
					break;
				if (i == 300)
					throw new AssertionError(reserved + " reservations left RESERVED: " + fs.quiet());
				Thread.sleep(100);
			}
			for (int id = 1; id <= 3; id++)
				skus.put(id, fs.skuGet(1, id));
			lines = cartLines(fs, all);
		}
		Procs.stopServe(serve, serveLog);

		Map<OrderState, Integer> count = new HashMap<>();
		Map<Long, Integer> perUser = new HashMap<>();
		long held = 0;
		for (OrderInfo o : placed.values()) {
			count.merge(o.state(), 1, Integer::sum);
			assertTrue(o.state() == OrderState.ACTIVE || o.state() == OrderState.CANCELLED
					|| o.state() == OrderState.EXPIRED, o.toString());
			if (o.state() == OrderState.ACTIVE) {
				perUser.merge(o.userId(), 1, Integer::sum);
				assertEquals(0, o.payByNs(), o.toString());
			} else if (o.state() == OrderState.EXPIRED) {
				assertTrue(o.payByNs() > 0, o.toString());
			}
		}
		// every sku: available + the units of its live lines (ACTIVE, RESERVED)
		// = total: no unit lost, none both held and given back, none sold twice
		Map<Integer, Long> live = new HashMap<>();
		int carts = 0;
		for (List<OrderInfo> ls : lines.values()) {
			if (ls.size() > 1)
				carts++;
			for (OrderInfo l : ls)
				if (l.state() == OrderState.ACTIVE || l.state() == OrderState.RESERVED) {
					live.merge(l.skuId(), (long) l.qty(), Long::sum);
					held += l.qty();
				}
		}
		long total = 0;
		for (SkuInfo k : skus.values()) {
			total += k.total();
			assertEquals(k.total(), k.available() + live.getOrDefault(k.skuId(), 0L),
					"sku " + k.skuId() + ": available + units of live lines against total");
		}
		int worst = perUser.values().stream().max(Integer::compare).orElse(0);
		assertTrue(worst <= LIMIT, "a user holds " + worst + " paid reservations, limit " + LIMIT);

		Map<String, OrderState> want = Map.of("c", OrderState.ACTIVE, "k", OrderState.CANCELLED, "x",
				OrderState.EXPIRED);
		Map<String, Set<Long>> noted = new HashMap<>();
		Map<Long, String> asked = new HashMap<>();  // cart number -> "SKUxQTY,..." as its buyer asked
		for (int b = BUYERS; b < BUYERS + RESERVERS; b++) {
			Path f = dir.resolve("racks" + b);
			if (!Files.exists(f))
				continue;
			for (String l : Files.readAllLines(f)) {
				String[] w = l.split(" ");
				if (w.length == 3 && w[0].equals("L") && w[1].matches("[0-9]+")) {  // a cart's lines as asked
					asked.put(Long.parseLong(w[1]), w[2]);
					continue;
				}
				if (w.length != 2 || !w[1].matches("[0-9]+"))
					continue;
				long no = Long.parseLong(w[1]);
				noted.computeIfAbsent(w[0], k -> new HashSet<>()).add(no);
				assertTrue(placed.containsKey(no), "noted " + l + ": no such order");
				if (want.containsKey(w[0]))
					assertEquals(want.get(w[0]), placed.get(no).state(), "noted " + l);
			}
		}
		// every cart a buyer noted holds the lines it asked for, in its order
		for (Map.Entry<Long, String> e : asked.entrySet()) {
			List<String> got = new ArrayList<>();
			for (OrderInfo l : lines.getOrDefault(e.getKey(), List.of()))
				got.add(l.skuId() + "x" + l.qty());
			assertEquals(e.getValue(), String.join(",", got), "cart " + e.getKey() + ": its lines against those asked");
		}
		assertTrue(asked.size() >= 10, "only " + asked.size() + " carts noted with their lines");
		Set<Long> paid = noted.getOrDefault("c", Set.of()), plain = noted.getOrDefault("t", Set.of());
		long unnoted = placed.values().stream().filter(o -> o.state() == OrderState.ACTIVE
				&& !paid.contains(o.orderNo()) && !plain.contains(o.orderNo())).count();
		assertTrue(unnoted <= rkills, unnoted + " ACTIVE reservations not noted paid after " + rkills + " kills");

		Map<Long, List<String>> kinds = Procs.walKindsByOrder(dir, wal);
		// a cart's: one of each per line, its lines' in a row; a plain cart
		// ACTIVE has its ORDERs only
		for (OrderInfo o : placed.values()) {
			String last = o.state() == OrderState.CANCELLED ? "cancel"
					: o.state() == OrderState.EXPIRED ? "expire" : "confirm";
			List<String> end = new ArrayList<>(), orders = new ArrayList<>();
			for (int i = 0; i < o.lines(); i++)
				orders.add("order");
			end.addAll(orders);
			for (int i = 0; i < o.lines(); i++)
				end.add(last);
			List<String> got = kinds.get(o.orderNo());
			assertTrue(end.equals(got) || (o.lines() > 1 && o.state() == OrderState.ACTIVE && orders.equals(got)),
					"records of order " + o.orderNo() + " (" + o.state() + ", " + o.lines() + " lines): " + got
							+ ", want " + end);
		}
		assertEquals(placed.keySet(), kinds.keySet(), "the WAL's orders against the segment's");
		int x = noted.getOrDefault("x", Set.of()).size();
		System.out.printf("reservations: %d placed, %d paid, %d cancelled, %d expired (noted: %d reserved, %d paid, "
				+ "%d cancelled, %d refused as expired) after %d kills of reservers; %d carts of 2..3 lines, each "
				+ "whole (%d noted plain); held %d of %d units%n",
				placed.size(), count.getOrDefault(OrderState.ACTIVE, 0), count.getOrDefault(OrderState.CANCELLED, 0),
				count.getOrDefault(OrderState.EXPIRED, 0), noted.getOrDefault("r", Set.of()).size(), paid.size(),
				noted.getOrDefault("k", Set.of()).size(), x, rkills, carts, plain.size(), held, total);
		assertTrue(paid.size() >= 10 && noted.getOrDefault("k", Set.of()).size() >= 10 && x > 0
				&& count.getOrDefault(OrderState.EXPIRED, 0) > x,
				"the run did not exercise payments, cancels, late payments and expiries");
		boolean expiredCart = lines.values().stream()
				.anyMatch(ls -> ls.size() > 1 && ls.get(0).state() == OrderState.EXPIRED);
		assertTrue(carts >= 10 && plain.size() >= 10 && expiredCart,
				"the run did not exercise carts: " + carts + " placed, " + plain.size() + " noted plain, one expired: "
						+ expiredCart);
	}

	/*
	 * Every order of all (orderGet of 1..ordersMax) read whole, each cart by
	 * orderLines, checking that every cart is whole or absent: its number
	 * reads as its line 0 with its lines, orderLines gives each line (the
	 * cart's number, state, user and limit slot; lines 0..n-1 over distinct
	 * skus), each later line's number reads NONE with that line and lines,
	 * and no other number reads as a line of a cart.
	 */
	static Map<Long, List<OrderInfo>> cartLines(FlashStock fs, List<OrderInfo> all) {
		Map<Long, List<OrderInfo>> out = new HashMap<>();
		Map<Long, List<Integer>> owner = new HashMap<>();  // a later line's number -> (line, lines)
		for (OrderInfo o : all) {
			if (o.state() == OrderState.NONE)
				continue;
			assertTrue(o.line() == 0 && o.lines() >= 1, "order " + o);
			List<OrderInfo> ls = o.lines() > 1 ? fs.orderLines(o.orderNo()) : List.of(o);
			assertEquals(o.lines(), ls.size(), "cart " + o.orderNo() + ": " + ls);
			Set<Integer> seen = new HashSet<>();
			for (int i = 0; i < ls.size(); i++) {
				OrderInfo l = ls.get(i);
				assertTrue(l.line() == i && l.orderNo() == o.orderNo() && l.state() == o.state()
						&& l.userId() == o.userId() && l.lines() == o.lines() && l.limitSlot() == o.limitSlot()
						&& seen.add(l.skuId()), "cart " + o.orderNo() + ", line " + i + ": " + l + " (line 0: " + o + ")");
			}
			out.put(o.orderNo(), ls);
			for (int i = 1; i < o.lines(); i++)
				owner.put(o.orderNo() + i, List.of(i, o.lines()));
		}
		for (OrderInfo o : all) {
			if (o.state() != OrderState.NONE)
				continue;
			List<Integer> want = owner.getOrDefault(o.orderNo(), List.of(0, 0));
			assertEquals(want, List.of(o.line(), o.lines()), "number " + o.orderNo() + " (a later line of "
					+ (owner.containsKey(o.orderNo()) ? "its cart" : "no cart") + ")");
		}
		return out;
	}
}
