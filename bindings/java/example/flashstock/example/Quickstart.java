/*
 * Quickstart.java -- the README's Java example, run by the test
 * java_quickstart and by install_check.sh against an installed prefix.  The
 * region between the README markers is the snippet of README.md and of
 * the project's docs/java.md (java_readme_snippet checks that they are
 * equal).
 */
package flashstock.example;

import flashstock.Activity;
import flashstock.FlashException;
import flashstock.FlashStock;
import flashstock.OrderRequest;
import flashstock.OrderResult;
import flashstock.SegOpts;

public final class Quickstart {
	private Quickstart() {}

	public static void main(String[] args) {
		String seg = "/flash-java-quickstart-" + ProcessHandle.current().pid();
		FlashStock.createSegment(seg, SegOpts.small(1024));
		try {
			run(seg);
		} finally {
			FlashStock.destroySegment(seg);
		}
		System.out.println("quickstart: ok");
	}

	static void run(String seg) {
		// README begin
		try (FlashStock fs = FlashStock.open(seg)) { // one object for every thread
			fs.activityAdd(Activity.openNow(1, 1)); // activity 1, one order per user
			fs.skuAdd(1, 7, 2, 1); // sku 7: 2 units, 1 shard
			for (long user = 1; user <= 3; user++) {
				OrderResult r = fs.order(OrderRequest.of(1, 7, user, 1).withRequestId(100 + user));
				if (r.ok())
					System.out.println("user " + user + ": order " + r.orderNo());
				else // a refusal is an answer, not an exception
					System.out.println("user " + user + ": " + r.rcName());
			}
			System.out.println("sold " + fs.skuGet(1, 7).sold());
			try {
				fs.cancel(1_000_000); // real errors are thrown, with their code
			} catch (FlashException.NotFound e) {
				System.out.println(e.rcName() + " " + e.code());
			}
		}
		// README end
	}
}
