/*
 * FeedConsumer.java -- a consumer process of java_feed (FeedTest): opens
 * the feed of WAL under NAME, reads N records, commits the LSN of the K-th,
 * prints "committed LSN" and "open" and then waits to be killed, holding
 * the feed open (and its consumer lock) with N - K records read and not
 * committed.  Exits 1 on any error.
 *
 *   FeedConsumer WAL NAME N K
 */
package flashstock;

public final class FeedConsumer {
	private FeedConsumer() {}

	public static void main(String[] args) throws InterruptedException {
		int n = Integer.parseInt(args[2]), k = Integer.parseInt(args[3]);
		try (Feed f = Feed.open(args[0], args[1], Feed.Options.fromStartOfWal())) {
			for (int i = 1; i <= n; i++) {
				FeedRecord r = f.next(10000);
				if (i == k) {
					f.commit(r.lsn());
					System.out.println("committed " + r.lsn());
				}
			}
			System.out.println("open");
			System.out.flush();
			Thread.sleep(600_000);
		} catch (RuntimeException e) {
			e.printStackTrace();
			System.exit(1);
		}
	}
}
