/*
 * ObsTest.java -- (java_obs) FlashStock.obs() gives the engine's figures of
 * a known set of calls on a fresh segment: each operation's calls per result
 * code, exactly; a histogram per timed operation whose buckets sum to its
 * count; the bucket bounds and operation names of the C library.
 */
package flashstock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ObsTest {
	@Test
	void obsCountsAKnownSetOfCallsPerResultCode() {
		try (Seg s = new Seg("obs"); FlashStock fs = FlashStock.open(s.name)) {
			fs.activityAdd(Activity.openNow(1, 1));
			fs.skuAdd(1, 10, 3, 1);
			long o1 = fs.order(1, 10, 1, 1).orThrow();
			assertEquals(-2, fs.order(1, 10, 1, 1).rc());  // FLASH_ELIMIT: user 1 holds the limit
			fs.order(1, 10, 2, 1).orThrow();
			fs.order(1, 10, 3, 1).orThrow();
			assertEquals(-1, fs.order(1, 10, 4, 1).rc());  // FLASH_ESOLD_OUT
			assertEquals(1, fs.cancel(o1));
			assertThrows(FlashException.Cancelled.class, () -> fs.cancel(o1));
			fs.restock(1, 10, 5);
			long tok = fs.tokenIssue(1, 10, 7, 60000);
			fs.tokenIssue(1, 10, 8, 60000);
			fs.tokenRedeem(1, 10, 7, tok);
			assertThrows(FlashException.BadToken.class, () -> fs.tokenRedeem(1, 10, 7, tok));  // reused
			fs.lockAcquire("obs-lock", 1, 60000);
			assertThrows(FlashException.Locked.class, () -> fs.lockAcquire("obs-lock", 2, 60000));
			fs.lockRenew("obs-lock", 1, 60000);
			fs.lockRelease("obs-lock", 1);
			assertThrows(FlashException.NotOwner.class, () -> fs.lockRelease("obs-lock", 1));

			Obs o = fs.obs();
			long[][] expect = { // op, rc, calls
				{ Obs.ORDER, 0, 3 }, { Obs.ORDER, -2, 1 }, { Obs.ORDER, -1, 1 },
				{ Obs.CANCEL, 0, 1 }, { Obs.CANCEL, -23, 1 },
				{ Obs.RESTOCK, 0, 1 },
				{ Obs.TOKEN_ISSUE, 0, 2 },
				{ Obs.TOKEN_REDEEM, 0, 1 }, { Obs.TOKEN_REDEEM, -6, 1 },
				{ Obs.LOCK_ACQUIRE, 0, 1 }, { Obs.LOCK_ACQUIRE, -24, 1 },
				{ Obs.LOCK_RENEW, 0, 1 },
				{ Obs.LOCK_RELEASE, 0, 1 }, { Obs.LOCK_RELEASE, -25, 1 },
			};
			long[] total = new long[Obs.OPS];
			for (long[] e : expect) {
				assertEquals(e[2], o.results((int) e[0], (int) e[1]),
						Obs.name((int) e[0]) + " " + FlashStock.rcname((int) e[1]));
				total[(int) e[0]] += e[2];
			}
			for (int op = 0; op < Obs.OPS; op++) {
				assertEquals(total[op], o.calls(op), "every call of " + Obs.name(op) + " has one outcome");
				Obs.Hist h = o.time(op);
				long sum = 0;
				for (int b = 0; b < Obs.BUCKETS; b++)
					sum += h.bucket(b);
				assertEquals(h.count(), sum, Obs.name(op) + ": the buckets sum to the count");
				if (op == Obs.ORDER)  // one in 16 per handle, its first included
					assertTrue(h.count() >= 1 && h.count() <= total[op], "orders timed: " + h.count());
				else
					assertEquals(total[op], h.count(), Obs.name(op) + ": every call timed");
				assertTrue(h.count() == 0 || h.sumNs() > 0, Obs.name(op) + " sum_ns " + h.sumNs());
			}
			assertEquals(1, o.time(Obs.LOCK_HOLD).count(), "one hold: grant to release");
			assertEquals(0, o.time(Obs.LOCK_WAIT).count(), "owner 2 never got the lock");
		}
	}

	@Test
	void bucketBoundsAndNamesAreTheCLibrarys() {
		assertEquals(64, Obs.bucketLeNs(0));
		for (int b = 1; b < Obs.BUCKETS - 1; b++)
			assertEquals(2 * Obs.bucketLeNs(b - 1), Obs.bucketLeNs(b), "bucket " + b);
		assertEquals(Long.MAX_VALUE, Obs.bucketLeNs(Obs.BUCKETS - 1));
		assertEquals("order", Obs.name(Obs.ORDER));
		assertEquals("lock_release", Obs.name(Obs.LOCK_RELEASE));
		assertEquals("lock_wait", Obs.name(Obs.LOCK_WAIT));
		assertEquals("lock_hold", Obs.name(Obs.LOCK_HOLD));
		assertEquals("?", Obs.name(Obs.TIMES));
		assertFalse(Obs.name(Obs.CANCEL).isEmpty());
	}
}
