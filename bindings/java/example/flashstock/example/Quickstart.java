/*
 * Quickstart.java -- the README's Java examples, run by the test
 * java_quickstart and by install_check.sh against an installed prefix.  The
 * region between the README markers is the snippet of README.md and of
 * the project's docs/java.md, the region between the README reservations
 * markers README.md's reservations snippet, and the region between the
 * README terms markers its versioned terms snippet, and the region between
 * the README carts markers its carts snippet (java_readme_snippet checks
 * that they are equal; java_api checks what the reservations, terms and
 * carts ones print).
 */
package flashstock.example;

import flashstock.Activity;
import flashstock.CartLine;
import flashstock.CartRequest;
import flashstock.CartResult;
import flashstock.FlashException;
import flashstock.FlashStock;
import flashstock.OrderInfo;
import flashstock.OrderRequest;
import flashstock.OrderResult;
import flashstock.SegOpts;
import flashstock.SkuInfo;

public final class Quickstart {
	private Quickstart() {}

	public static void main(String[] args) throws InterruptedException {
		String seg = "/flash-java-quickstart-" + ProcessHandle.current().pid();
		FlashStock.createSegment(seg, SegOpts.small(1024));
		try {
			run(seg);
		} finally {
			FlashStock.destroySegment(seg);
		}
		FlashStock.createSegment(seg, SegOpts.small(1024));
		try {
			reservations(seg);
		} finally {
			FlashStock.destroySegment(seg);
		}
		FlashStock.createSegment(seg, SegOpts.small(1024));
		try {
			terms(seg);
		} finally {
			FlashStock.destroySegment(seg);
		}
		FlashStock.createSegment(seg, SegOpts.small(1024));
		try {
			carts(seg);
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

	/** Three reservations on a sku of three units: one paid in time, one paid too late, one never paid. */
	public static void reservations(String seg) throws InterruptedException {
		// README reservations begin
		try (FlashStock fs = FlashStock.open(seg)) {
			fs.activityAdd(Activity.openNow(1, 1).withFlags(Activity.CANCEL_RETURNS_QUOTA));
			fs.skuAdd(1, 7, 3, 1);
			long paid = fs.order(OrderRequest.of(1, 7, 1, 1).withReserveMs(15 * 60 * 1000)).orThrow();
			long late = fs.order(OrderRequest.of(1, 7, 2, 1).withReserveMs(30)).orThrow();
			fs.order(OrderRequest.of(1, 7, 3, 1).withReserveMs(30)).orThrow();
			System.out.println(fs.orderGet(paid).state() + ", available " + fs.skuGet(1, 7).available());
			Thread.sleep(50); // users 2 and 3 do not pay in time
			fs.confirm(paid); // paid: ACTIVE (a retried callback confirms again without error)
			try {
				fs.confirm(late);
			} catch (FlashException.Expired e) { // too late: expired by this call, its unit back
				System.out.println(e.rcName() + ": " + fs.orderGet(late).state());
			}
			// no daemon here (flashstock serve expires them itself): expire what is due
			System.out.println("expired " + fs.expireDue(0) + ", available " + fs.skuGet(1, 7).available());
		}
		// README reservations end
	}

	/**
	 * A sku of three units priced 1000, repriced while a buyer looks at the
	 * page: the order naming the page's versions is refused FLASH_ESTALE with
	 * nothing taken, and the one naming the new page's is placed.
	 */
	public static void terms(String seg) {
		try (FlashStock fs = FlashStock.open(seg)) {
			fs.activityAdd(Activity.openNow(1, 1));
			fs.skuAdd(1, 7, 3, 1);
			fs.skuPriceSet(1, 7, 1000);
		}
		// README terms begin
		try (FlashStock fs = FlashStock.open(seg)) {
			Activity act = fs.activityGet(1); // the page: the terms and their versions
			SkuInfo sku = fs.skuGet(1, 7);
			OrderRequest r = OrderRequest.of(1, 7, 62, 1).withVersions(act.version(), sku.version());
			fs.skuPriceSet(1, 7, sku.price() + 500); // the shop reprices while the buyer looks
			OrderResult o = fs.order(r);
			if (o.error() instanceof FlashException.Stale) { // the terms changed: nothing taken
				sku = fs.skuGet(1, 7); // show the new terms; the buyer orders again
				System.out.println(o.rcName() + ", now " + sku.price());
				o = fs.order(r.withVersions(act.version(), sku.version()));
			}
			System.out.println("order " + o.orThrow() + " at " + sku.price() + ", available "
					+ fs.skuGet(1, 7).available());
		}
		// README terms end
	}

	/**
	 * Skus 7 and 8 of 5 and 2 units: a cart of both placed whole, the same
	 * cart again refused for its short line with nothing taken, the first
	 * cancelled with every line.
	 */
	public static void carts(String seg) {
		try (FlashStock fs = FlashStock.open(seg)) {
			fs.activityAdd(Activity.openNow(1, 1).withMaxQty(3));
			fs.skuAdd(1, 7, 5, 1);
			fs.skuAdd(1, 8, 2, 1);
		}
		// README carts begin
		try (FlashStock fs = FlashStock.open(seg)) {
			CartRequest cart = CartRequest.of(1, 71, CartLine.of(7, 1), CartLine.of(8, 2)); // one order
			long no = fs.cartOrder(cart).orThrow();
			for (OrderInfo line : fs.orderLines(no)) // the cart whole, one OrderInfo per line
				System.out.println("line " + line.line() + ": sku " + line.skuId() + " x" + line.qty());
			CartResult r = fs.cartOrder(CartRequest.of(1, 72, CartLine.of(7, 1), CartLine.of(8, 2)));
			if (!r.ok()) // sold out: nothing taken, the short lines named
				System.out.println(r.rcName() + " at line " + r.line() + ", short " + r.soldOutLines());
			System.out.println(fs.cancel(no) + " units back"); // every line's
		}
		// README carts end
	}
}
