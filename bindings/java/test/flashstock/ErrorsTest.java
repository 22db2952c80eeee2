/*
 * ErrorsTest.java -- (java_errors) every FLASH_E* code of api/flashstock.h,
 * read from the bindings' manifest (Manifest.java; never a list kept
 * here), maps to a FlashException whose rcName() is the macro's name and
 * whose code() round-trips; the common outcomes have their named types; a
 * code the library does not know maps to the base type with its code.
 */
package flashstock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ErrorsTest {
	static Map<String, Integer> headerCodes() throws IOException {
		return Manifest.read().codes();
	}

	@Test
	void everyHeaderCodeMapsToAnErrorNamedAfterItsMacroWithItsCode() throws IOException {
		Map<String, Integer> codes = headerCodes();
		assertTrue(codes.size() >= 37, "only " + codes.size() + " FLASH_E* codes in the manifest");
		for (Map.Entry<String, Integer> e : codes.entrySet()) {
			FlashException x = FlashException.of(e.getValue());
			assertEquals(e.getKey(), x.rcName(), "name of code " + e.getValue());
			assertEquals((int) e.getValue(), x.code(), "code of " + e.getKey());
			assertTrue(x.getMessage().startsWith(e.getKey() + ": "), x.getMessage());
			assertFalse(x.getMessage().contains("unknown result code"), x.getMessage());
		}
		System.out.println("errors: " + codes.size() + " FLASH_E* codes map to errors named after their macro");
	}

	@Test
	void theCommonOutcomesHaveTheirOwnTypes() throws IOException {
		Map<String, Integer> c = headerCodes();
		Object[][] named = {
			{ "FLASH_ESOLD_OUT", FlashException.SoldOut.class },
			{ "FLASH_ELIMIT", FlashException.LimitReached.class },
			{ "FLASH_ENOT_STARTED", FlashException.NotStarted.class },
			{ "FLASH_EENDED", FlashException.Ended.class },
			{ "FLASH_ENOT_FOUND", FlashException.NotFound.class },
			{ "FLASH_EBAD_TOKEN", FlashException.BadToken.class },
			{ "FLASH_EDUPLICATE", FlashException.Duplicate.class },
			{ "FLASH_EFULL", FlashException.Full.class },
			{ "FLASH_EINVAL", FlashException.InvalidArgument.class },
			{ "FLASH_EDURABILITY", FlashException.Durability.class },
			{ "FLASH_EEXIST", FlashException.Exists.class },
			{ "FLASH_ENOSEG", FlashException.NoSegment.class },
			{ "FLASH_ECORRUPT", FlashException.Corrupt.class },
			{ "FLASH_EREADONLY", FlashException.ReadOnly.class },
			{ "FLASH_EFORK", FlashException.Fork.class },
			{ "FLASH_ECANCELLED", FlashException.Cancelled.class },
			{ "FLASH_ELOCKED", FlashException.Locked.class },
			{ "FLASH_ENOT_OWNER", FlashException.NotOwner.class },
			{ "FLASH_EBUSY", FlashException.Busy.class },
			{ "FLASH_ENOPROC", FlashException.NoProc.class },
			{ "FLASH_EWRONG_THREAD", FlashException.WrongThread.class },
			{ "FLASH_EFATE_UNKNOWN", FlashException.FateUnknown.class },
			{ "FLASH_EREQ_EXPIRED", FlashException.RequestExpired.class },
			{ "FLASH_ETIMEOUT", FlashException.Timeout.class },
			{ "FLASH_ELOST", FlashException.Lost.class },
			{ "FLASH_EAHEAD", FlashException.Ahead.class },
			{ "FLASH_EFEED_IDENT", FlashException.FeedIdent.class },
			{ "FLASH_EREFILL", FlashException.Refill.class },
			{ "FLASH_EARCHIVED", FlashException.Archived.class },
			{ "FLASH_ENOT_ENDED", FlashException.NotEnded.class },
			{ "FLASH_EDESTROYED", FlashException.Destroyed.class },
			{ "FLASH_EEXPIRED", FlashException.Expired.class },
			{ "FLASH_ENOT_DUE", FlashException.NotDue.class },
			{ "FLASH_ECONFIRMED", FlashException.Confirmed.class },
			{ "FLASH_ESTALE", FlashException.Stale.class },
		};
		for (Object[] n : named) {
			Integer code = c.get((String) n[0]);
			assertTrue(code != null, n[0] + " not in the header");
			assertSame(n[1], FlashException.of(code).getClass(), n[0].toString());
		}
	}

	@Test
	void anUnknownCodeIsTheBaseTypeWithItsCode() {
		FlashException x = FlashException.of(-9999);
		assertSame(FlashException.class, x.getClass());
		assertEquals(-9999, x.code());
		assertEquals("FLASH_E?", x.rcName());
	}

	@Test
	void aRefusalReturnedByOrderBecomesItsTypedError() {
		OrderResult r = new OrderResult(-1, 0, 0, 0, 0);
		assertFalse(r.ok());
		assertEquals("FLASH_ESOLD_OUT", r.rcName());
		assertInstanceOf(FlashException.SoldOut.class, r.error());
		assertThrows(FlashException.SoldOut.class, r::orThrow);
		OrderResult stale = new OrderResult(-53, 0, 0, 0, 0);
		assertEquals("FLASH_ESTALE", stale.rcName());
		assertInstanceOf(FlashException.Stale.class, stale.error());
		assertThrows(FlashException.Stale.class, stale::orThrow);
	}
}
