/*
 * Bench.java -- what one order costs through the Java binding, against the
 * same orders from C in the same process (one thread, hot sku, unique
 * users so the limit never refuses; each order redeems a token issued
 * before the timed part and carries a request id, the chain every
 * binding's bench times: bench/bindings.sh).
 *
 *   java -cp flashstock.jar:bench.jar flashstock.Bench [--orders N] [--batch K]
 *
 * It creates its own segment (/flash-java-bench-PID, destroyed at the end),
 * with one activity (limit 1) and two skus, one per loop, and a record ring
 * big enough for every order (no consumer runs).  Each loop first places
 * N/5 orders not counted (the JIT warms up), then the two run in five
 * interleaved rounds of N/5 orders each.  --batch K (default 1) places the
 * orders K at a time, by orderMany() and flash_order_many() (the last
 * batch of a round may be smaller); 1 is order() and flash_order().
 * Prints one line per engine:
 *   bench binding=java engine=flashstock orders=N ns_per_order=X
 *   bench binding=c engine=flashstock orders=N ns_per_order=X
 * with " batch=K" at the end of both when K > 1, and exits 1 if any order
 * is not placed.
 * In package flashstock to reach Native.benchOrdersC (the C loop).
 */
package flashstock;

import java.util.ArrayList;
import java.util.List;

public final class Bench {
	private Bench() {}

	public static void main(String[] args) {
		int n = 200_000, k = 1;
		for (int i = 0; i < args.length; i++) {
			if (args[i].equals("--orders") && i + 1 < args.length)
				n = Integer.parseInt(args[++i]);
			else if (args[i].equals("--batch") && i + 1 < args.length && Integer.parseInt(args[i + 1]) > 0)
				k = Integer.parseInt(args[++i]);
			else {
				System.err.println("usage: Bench [--orders N] [--batch K]");
				System.exit(2);
			}
		}
		int rounds = 5, per = Math.max(n / rounds, 1), warm = Math.max(n / 5, 1000);
		n = per * rounds;
		String seg = "/flash-java-bench-" + ProcessHandle.current().pid();
		int orders = 2 * (warm + n) + 4096;
		/* no consumer drains the ring: it holds every record of the run */
		int ring = Integer.highestOneBit(orders) << 1;
		FlashStock.createSegment(seg, SegOpts.small(4 * orders).withMaxOrders(orders).withMaxProcs(2)
				.withRingRecords(ring));
		try (FlashStock fs = FlashStock.open(seg)) {
			/* the chain every binding's bench times: a token issued before
			 * the timed part, redeemed by the order, a request id = the user */
			fs.activityAdd(Activity.openNow(1, 1).withFlags(Activity.TOKEN_REQUIRED));
			fs.skuAdd(1, 1, warm + n, 1);
			fs.skuAdd(1, 2, warm + n, 1);
			long user = 0;
			orders(fs, user, tokens(fs, user, warm), k);
			user += warm;
			fs.benchC(1, 2, user, warm, k);
			user += warm;
			/* interleaved rounds, so that both loops meet the same state
			 * of the tables and the machine */
			long javaNs = 0, cNs = 0;
			for (int r = 0; r < rounds; r++) {
				long[] tok = tokens(fs, user, per);
				long t0 = System.nanoTime();
				orders(fs, user, tok, k);
				javaNs += System.nanoTime() - t0;
				user += per;
				cNs += fs.benchC(1, 2, user, per, k);
				user += per;
			}
			String tail = k > 1 ? " batch=" + k : "";
			System.out.printf("bench binding=java engine=flashstock orders=%d ns_per_order=%.1f%s%n", n,
					(double) javaNs / n, tail);
			System.out.printf("bench binding=c engine=flashstock orders=%d ns_per_order=%.1f%s%n", n,
					(double) cNs / n, tail);
			SkuInfo s1 = fs.skuGet(1, 1), s2 = fs.skuGet(1, 2);
			if (s1.available() != 0 || s2.available() != 0) {
				System.err.println("bench: not every unit sold: " + s1 + " " + s2);
				System.exit(1);
			}
		} finally {
			FlashStock.destroySegment(seg);
		}
	}

	/* Tokens of sku 1 for users user+1 .. user+count (before the timed part). */
	private static long[] tokens(FlashStock fs, long user, int count) {
		long[] tok = new long[count];
		for (int i = 0; i < count; i++)
			tok[i] = fs.tokenIssue(1, 1, user + 1 + i, 600_000);
		return tok;
	}

	/* The Java loop: orders of sku 1 for users user+1 .. user+tok.length, k at a time. */
	private static void orders(FlashStock fs, long user, long[] tok, int k) {
		if (k == 1) {
			for (int i = 0; i < tok.length; i++) {
				++user;
				check(fs.order(OrderRequest.of(1, 1, user, 1).withToken(tok[i]).withRequestId(user)));
			}
			return;
		}
		List<OrderRequest> rq = new ArrayList<>(k);
		for (int i = 0; i < tok.length; i += k)
			batch(fs, rq, user + i, tok, i, Math.min(k, tok.length - i));
	}

	/* One batch: users user+1 .. user+m with tokens tok[at ..]; a method of
	 * its own, as a caller's would be, so the JIT compiles it as one by the
	 * end of the warm-up (an inner loop of the round alone is compiled late). */
	private static void batch(FlashStock fs, List<OrderRequest> rq, long user, long[] tok, int at, int m) {
		rq.clear();
		for (int j = 0; j < m; j++) {
			++user;
			rq.add(OrderRequest.of(1, 1, user, 1).withToken(tok[at + j]).withRequestId(user));
		}
		for (OrderResult r : fs.orderMany(rq))
			check(r);
	}

	private static void check(OrderResult r) {
		if (!r.ok()) {
			System.err.println("bench: order refused: " + r.rcName());
			System.exit(1);
		}
	}
}
