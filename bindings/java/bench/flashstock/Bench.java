/*
 * Bench.java -- what one order costs through the Java binding, against the
 * same orders from C in the same process (one thread, hot sku, unique
 * users so the limit never refuses; each order redeems a token issued
 * before the timed part and carries a request id, the chain every
 * binding's bench times: bench/bindings.sh).
 *
 *   java -cp flashstock.jar:bench.jar flashstock.Bench [--orders N]
 *
 * It creates its own segment (/flash-java-bench-PID, destroyed at the end),
 * with one activity (limit 1) and two skus, one per loop, and a record ring
 * big enough for every order (no consumer runs).  Each loop first places
 * N/5 orders not counted (the JIT warms up), then the two run in five
 * interleaved rounds of N/5 orders each.
 * Prints one line per engine:
 *   bench binding=java engine=flashstock orders=N ns_per_order=X
 *   bench binding=c engine=flashstock orders=N ns_per_order=X
 * and exits 1 if any order is not placed.
 * In package flashstock to reach Native.benchOrdersC (the C loop).
 */
package flashstock;

public final class Bench {
	private Bench() {}

	public static void main(String[] args) {
		int n = 200_000;
		for (int i = 0; i < args.length; i++) {
			if (args[i].equals("--orders") && i + 1 < args.length)
				n = Integer.parseInt(args[++i]);
			else {
				System.err.println("usage: Bench [--orders N]");
				System.exit(2);
			}
		}
		int rounds = 5, batch = Math.max(n / rounds, 1), warm = Math.max(n / 5, 1000);
		n = batch * rounds;
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
			for (int i = 0; i < warm; i++)
				order(fs, ++user);
			fs.benchC(1, 2, user, warm);
			user += warm;
			/* interleaved rounds, so that both loops meet the same state
			 * of the tables and the machine */
			long javaNs = 0, cNs = 0;
			for (int r = 0; r < rounds; r++) {
				long[] tok = new long[batch];
				for (int i = 0; i < batch; i++)
					tok[i] = fs.tokenIssue(1, 1, user + 1 + i, 600_000);
				long t0 = System.nanoTime();
				for (int i = 0; i < batch; i++) {
					++user;
					check(fs.order(OrderRequest.of(1, 1, user, 1).withToken(tok[i]).withRequestId(user)));
				}
				javaNs += System.nanoTime() - t0;
				cNs += fs.benchC(1, 2, user, batch);
				user += batch;
			}
			System.out.printf("bench binding=java engine=flashstock orders=%d ns_per_order=%.1f%n", n, (double) javaNs / n);
			System.out.printf("bench binding=c engine=flashstock orders=%d ns_per_order=%.1f%n", n, (double) cNs / n);
			SkuInfo s1 = fs.skuGet(1, 1), s2 = fs.skuGet(1, 2);
			if (s1.available() != 0 || s2.available() != 0) {
				System.err.println("bench: not every unit sold: " + s1 + " " + s2);
				System.exit(1);
			}
		} finally {
			FlashStock.destroySegment(seg);
		}
	}

	private static void order(FlashStock fs, long user) {
		long t = fs.tokenIssue(1, 1, user, 600_000);
		check(fs.order(OrderRequest.of(1, 1, user, 1).withToken(t).withRequestId(user)));
	}

	private static void check(OrderResult r) {
		if (!r.ok()) {
			System.err.println("bench: order refused: " + r.rcName());
			System.exit(1);
		}
	}
}
