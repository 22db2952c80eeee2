/*
 * KillBuyer.java -- a buyer process of java_kill (KillTest): orders on
 * activity 1, sku 1 for random users of FROM..TO with random request ids
 * (retrying one now and then), half its calls one order (order()), half a
 * batch of 2..MAX_BATCH (orderMany()), cancels some of its orders, and
 * appends every acknowledged order number to ACKS right after the call
 * returns.  Before each call a thread appends "call T N" (thread T, N
 * orders), and the process "start" when it begins, so that the test knows
 * how many orders each kill may have cut short (placed, never
 * acknowledged): at most those of each thread's last call.  Two threads
 * share one FlashStock, each on its own handle.  Runs until killed; exits
 * 1 on any error.
 *
 * With "reserve" the threads place reservations instead (one unit, 20 to
 * 300 ms to pay) and pay (confirm) some, cancel some and leave the rest to
 * expire, at once or up to 400 ms later, so some payments come too late;
 * now and then expireDue() expires what is due.  Each outcome is appended
 * right after its call returns: "r N" reserved, "c N" paid, "k N"
 * cancelled, "x N" refused as expired (FlashException.Expired).  A third of
 * those turns reserve one unit of sku 1, a third a cart of 2..3 lines over
 * skus 1, 2, 3 (1..2 units each, cartOrder with reserveMs), settled by its
 * number alike, a third place a plain cart, ACTIVE at once ("t N"), a
 * third of those cancelled at once ("k N").  A cart's first note comes with
 * "L N SKUxQTY,...", its lines as asked, in the same write.
 *
 *   KillBuyer SEG ACKS FROM TO SEED [reserve]
 */
package flashstock;

import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.concurrent.locks.LockSupport;

public final class KillBuyer {
	static final int THREADS = 2, MAX_BATCH = 16;

	private KillBuyer() {}

	public static void main(String[] args) throws IOException, InterruptedException {
		String seg = args[0];
		long from = Long.parseLong(args[2]), to = Long.parseLong(args[3]);
		long seed = Long.parseLong(args[4]);
		try (FileOutputStream acks = new FileOutputStream(args[1], true); FlashStock fs = FlashStock.open(seg)) {
			append(acks, "start\n");
			Thread[] ts = new Thread[THREADS];
			for (int t = 0; t < THREADS; t++) {
				Random rnd = new Random(seed + t);
				int id = t;
				boolean reserve = args.length > 5 && args[5].equals("reserve");
				ts[t] = new Thread(() -> {
					if (reserve)
						reserve(fs, acks, from, to, rnd);
					else
						buy(fs, acks, id, from, to, rnd);
				});
				ts[t].start();
			}
			for (Thread t : ts)
				t.join();
		}
	}

	/*
	 * One write(2) per line or call's numbers, O_APPEND: a SIGKILL loses no
	 * line already written, and the two threads' lines never interleave.
	 */
	private static void append(FileOutputStream acks, CharSequence lines) throws IOException {
		acks.write(lines.toString().getBytes(StandardCharsets.US_ASCII));
	}

	/* One buyer thread (number t), on its own handle behind the shared FlashStock. */
	private static void buy(FlashStock fs, FileOutputStream acks, int t, long from, long to, Random rnd) {
		try {
			long lastUser = from, lastRid = 0;
			List<OrderRequest> rq = new ArrayList<>(MAX_BATCH);
			StringBuilder acked = new StringBuilder();
			for (;;) {
				int n = rnd.nextBoolean() ? 1 : 2 + rnd.nextInt(MAX_BATCH - 1);
				rq.clear();
				for (int i = 0; i < n; i++) {
					long user, rid;
					if (lastRid != 0 && rnd.nextInt(4) == 0) {  // a retry of the last request
						user = lastUser;
						rid = lastRid;
					} else {
						user = from + rnd.nextInt((int) (to - from + 1));
						rid = 1 + (rnd.nextLong() >>> 1);
					}
					rq.add(OrderRequest.of(1, 1, user, 1).withRequestId(rid));
					lastUser = user;
					lastRid = rid;
				}
				append(acks, "call " + t + " " + n + "\n");
				List<OrderResult> rs = n == 1 ? List.of(fs.order(rq.get(0))) : fs.orderMany(rq);
				// placed: OK, a retry of a placed order, or placed with its fate
				// unknown (sync: not durable within the wait bound; it counts as
				// acknowledged, as the README says)
				acked.setLength(0);
				for (OrderResult r : rs)
					if (r.ok() || r.rc() == -33 || (r.rc() == -7 && (r.firstRc() == 0 || r.firstRc() == -33)))
						acked.append(r.orderNo()).append('\n');
				if (acked.length() > 0)
					append(acks, acked);
				for (OrderResult r : rs) {
					if (r.ok() && rnd.nextInt(6) == 0) {
						try {
							fs.cancel(r.orderNo());
						} catch (FlashException.Cancelled e) {
							// a retry's order cancelled before: nothing to give back
						}
					}
				}
				LockSupport.parkNanos(1_000_000L * n);  // ~1000 requests a second
			}
		} catch (Throwable e) {
			e.printStackTrace();
			System.exit(1);
		}
	}

	/* One reserving thread, on its own handle behind the shared FlashStock. */
	private static void reserve(FlashStock fs, FileOutputStream acks, long from, long to, Random rnd) {
		try {
			PriorityQueue<long[]> later = new PriorityQueue<>((a, b) -> Long.compare(a[0], b[0]));  // {when ns, order}
			for (int n = 1;; n++) {
				LockSupport.parkNanos(1_000_000L);
				if (n % 50 == 0)
					fs.expireDue(0);
				if (!later.isEmpty() && later.peek()[0] <= System.nanoTime()) {
					settle(fs, acks, rnd, later.poll()[1]);
					continue;
				}
				long user = from + rnd.nextInt((int) (to - from + 1));
				int ms = 20 + rnd.nextInt(281), kind = rnd.nextInt(3);
				int rc;
				long no;
				String asked = "";  // a cart's lines as asked, in the write of its first note
				if (kind == 0) {
					OrderResult r = fs.order(OrderRequest.of(1, 1, user, 1).withReserveMs(ms));
					rc = r.rc();
					no = r.orderNo();
				} else {
					List<CartLine> lines = new ArrayList<>();
					List<Integer> skus = new ArrayList<>(List.of(1, 2, 3));
					java.util.Collections.shuffle(skus, rnd);
					for (int sku : skus.subList(0, 2 + rnd.nextInt(2)))
						lines.add(CartLine.of(sku, 1 + rnd.nextInt(2)));
					CartRequest c = CartRequest.of(1, user, lines);
					CartResult r;
					try {
						r = fs.cartOrder(kind == 1 ? c.withReserveMs(ms) : c);
					} catch (FlashException.Busy e) {  // the ring had no room for the cart's records: nothing taken
						LockSupport.parkNanos(1_000_000L);
						continue;
					}
					rc = r.rc();
					no = r.orderNo();
					StringBuilder b = new StringBuilder("L ").append(no).append(' ');
					for (CartLine l : lines)
						b.append(l.skuId()).append('x').append(l.qty()).append(',');
					asked = b.substring(0, b.length() - 1) + "\n";
				}
				// placed: OK, or placed with its fate unknown (sync: not durable in time)
				if (rc != 0 && rc != -33)
					continue;  // sold out, over the limit
				if (kind == 2) {  // a plain cart: ACTIVE at once; some given back
					append(acks, "t " + no + "\n" + asked);
					if (rnd.nextInt(3) == 0) {
						try {
							fs.cancel(no);
						} catch (FlashException.FateUnknown e) {
							// sync: cancelled in memory, not durable within the wait bound: done
						}
						append(acks, "k " + no + "\n");
					}
					continue;
				}
				append(acks, "r " + no + "\n" + asked);
				if (rnd.nextBoolean())
					settle(fs, acks, rnd, no);
				else
					later.add(new long[] { System.nanoTime() + rnd.nextInt(400) * 1_000_000L, no });
			}
		} catch (Throwable e) {
			e.printStackTrace();
			System.exit(1);
		}
	}

	/* Pay (confirm) reservation no, cancel it, or leave it to expire. */
	private static void settle(FlashStock fs, FileOutputStream acks, Random rnd, long no) throws IOException {
		int x = rnd.nextInt(10);
		if (x < 2)
			return;  // never paid: it expires
		String kind = x < 7 ? "c " : "k ";
		try {
			if (x < 7)
				fs.confirm(no);
			else
				fs.cancel(no);
		} catch (FlashException.FateUnknown e) {
			// sync: done in memory, not durable within the wait bound: done
		} catch (FlashException.Expired e) {
			kind = "x ";
		}
		append(acks, kind + no + "\n");
	}
}
