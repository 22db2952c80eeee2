/*
 * KillBuyer.java -- a buyer process of java_kill (KillTest): orders on
 * activity 1, sku 1 for random users of FROM..TO with random request ids
 * (retrying one now and then), cancels some of its orders, and appends
 * every acknowledged order number to ACKS right after the call returns.
 * Two threads share one FlashStock, each on its own handle.  Runs until
 * killed; exits 1 on any error.
 *
 *   KillBuyer SEG ACKS FROM TO SEED
 */
package flashstock;

import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.util.concurrent.locks.LockSupport;

public final class KillBuyer {
	static final int THREADS = 2;

	private KillBuyer() {}

	public static void main(String[] args) throws IOException, InterruptedException {
		String seg = args[0];
		long from = Long.parseLong(args[2]), to = Long.parseLong(args[3]);
		long seed = Long.parseLong(args[4]);
		try (FileOutputStream acks = new FileOutputStream(args[1], true); FlashStock fs = FlashStock.open(seg)) {
			Thread[] ts = new Thread[THREADS];
			for (int t = 0; t < THREADS; t++) {
				Random rnd = new Random(seed + t);
				ts[t] = new Thread(() -> buy(fs, acks, from, to, rnd));
				ts[t].start();
			}
			for (Thread t : ts)
				t.join();
		}
	}

	/* One buyer thread, on its own handle behind the shared FlashStock. */
	private static void buy(FlashStock fs, FileOutputStream acks, long from, long to, Random rnd) {
		try {
			long lastUser = from, lastRid = 0;
			for (;;) {
				long user, rid;
				if (lastRid != 0 && rnd.nextInt(4) == 0) {  // a retry of the last request
					user = lastUser;
					rid = lastRid;
				} else {
					user = from + rnd.nextInt((int) (to - from + 1));
					rid = 1 + (rnd.nextLong() >>> 1);
				}
				OrderResult r = fs.order(OrderRequest.of(1, 1, user, 1).withRequestId(rid));
				// placed: OK, a retry of a placed order, or placed with its fate
				// unknown (sync: not durable within the wait bound; it counts as
				// acknowledged, as the README says)
				boolean acked = r.ok() || r.rc() == -33 || (r.rc() == -7 && (r.firstRc() == 0 || r.firstRc() == -33));
				if (acked) {
					// one write(2) per number, O_APPEND: a SIGKILL loses no line already
					// written, and the two threads' lines never interleave
					acks.write((r.orderNo() + "\n").getBytes(StandardCharsets.US_ASCII));
					if (r.ok() && rnd.nextInt(6) == 0) {
						try {
							fs.cancel(r.orderNo());
						} catch (FlashException.Cancelled e) {
							// a retry's order cancelled before: nothing to give back
						}
					}
				}
				lastUser = user;
				lastRid = rid;
				LockSupport.parkNanos(1_000_000);  // ~1000 requests a second
			}
		} catch (Throwable e) {
			e.printStackTrace();
			System.exit(1);
		}
	}
}
