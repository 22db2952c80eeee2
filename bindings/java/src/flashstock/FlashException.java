/*
 * FlashException.java -- the one error type of the binding, and one subclass
 * per common outcome.
 *
 * Every FLASH_E* code of the C library maps to a FlashException that
 * carries the code and its flash_rcname() ("FLASH_ESOLD_OUT").  The codes
 * an application handles by name have their own subclass (SoldOut,
 * LimitReached, ...); every other code, also one added to the C library
 * after this file was written, is a plain FlashException with its code and
 * name.  Unchecked: the refusals a flash sale expects on every request
 * (sold out, over the limit, ...) are not thrown by FlashStock.order() but
 * returned in its OrderResult; what is thrown is a real error, which a
 * request handler passes up rather than handles (README.md says
 * why).
 */
package flashstock;

public class FlashException extends RuntimeException {
	private static final long serialVersionUID = 1L;

	private final int code;
	private final String rcName;
	private int line = -1;
	private java.util.List<Integer> soldOutLines = java.util.List.of();

	protected FlashException(int code) {
		super(Native.rcname(code) + ": " + Native.strerror(code));
		this.code = code;
		this.rcName = Native.rcname(code);
	}

	/** The FLASH_E* code (negative). */
	public int code() {
		return code;
	}

	/** The code's symbolic name, as flash_rcname() gives it. */
	public String rcName() {
		return rcName;
	}

	/**
	 * The line of a cart (FlashStock.cartOrder) this refusal was for: a
	 * line's sku unknown (NotFound), its qty or a sku twice
	 * (InvalidArgument), sold out, stale; 0 when the refusal is the cart's;
	 * -1 for an exception that is not a cart's.
	 */
	public int line() {
		return line;
	}

	/** A cart's SoldOut: every line short of its qty, in order (empty otherwise). */
	public java.util.List<Integer> soldOutLines() {
		return soldOutLines;
	}

	/* a cart's refusal: this exception with its line and short lines */
	FlashException atLine(int line, java.util.List<Integer> soldOut) {
		this.line = line;
		this.soldOutLines = soldOut;
		return this;
	}

	/**
	 * The exception for result code {@code rc} (a negative FLASH_E* code):
	 * its named subclass, or a plain FlashException for any other code.
	 */
	public static FlashException of(int rc) {
		switch (rc) {
		case -1: return new SoldOut(rc);
		case -2: return new LimitReached(rc);
		case -3: return new NotStarted(rc);
		case -4: return new Ended(rc);
		case -5: return new NotFound(rc);
		case -6: return new BadToken(rc);
		case -7: return new Duplicate(rc);
		case -8: return new Full(rc);
		case -9: return new InvalidArgument(rc);
		case -10: return new Durability(rc);
		case -11: return new Exists(rc);
		case -12: return new NoSegment(rc);
		case -20: return new Corrupt(rc);
		case -21: return new ReadOnly(rc);
		case -22: return new Fork(rc);
		case -23: return new Cancelled(rc);
		case -24: return new Locked(rc);
		case -25: return new NotOwner(rc);
		case -26: return new Busy(rc);
		case -27: return new NoProc(rc);
		case -31: return new WrongThread(rc);
		case -33: return new FateUnknown(rc);
		case -34: return new RequestExpired(rc);
		case -35: return new Archived(rc);
		case -36: return new NotEnded(rc);
		case -37: return new Destroyed(rc);
		case -50: return new Expired(rc);
		case -51: return new NotDue(rc);
		case -52: return new Confirmed(rc);
		case -53: return new Stale(rc);
		case -60: return new Timeout(rc);
		case -61: return new Lost(rc);
		case -62: return new Ahead(rc);
		case -63: return new FeedIdent(rc);
		case -64: return new Refill(rc);
		default:
			/* attach checks (-13..-19, -32), system failures (-28..-30),
			 * the MySQL applier's range (-40..), the RabbitMQ sink's (-70..),
			 * and codes not known here */
			return new FlashException(rc);
		}
	}

	/** Throw the exception of {@code rc} unless it is FLASH_OK; else return it. */
	static int check(int rc) {
		if (rc < 0)
			throw of(rc);
		return rc;
	}

	/* The named outcomes.  Each constructor takes the code, so that a
	 * subclass always carries exactly the code it was made for. */

	/** FLASH_ESOLD_OUT: not enough stock for the quantity. */
	public static final class SoldOut extends FlashException { SoldOut(int c) { super(c); } }
	/** FLASH_ELIMIT: the user holds the activity's limit already. */
	public static final class LimitReached extends FlashException { LimitReached(int c) { super(c); } }
	/** FLASH_ENOT_STARTED: the activity's window has not opened. */
	public static final class NotStarted extends FlashException { NotStarted(int c) { super(c); } }
	/** FLASH_EENDED: the activity's window has closed. */
	public static final class Ended extends FlashException { Ended(int c) { super(c); } }
	/** FLASH_ENOT_FOUND: unknown activity, sku, order or lock. */
	public static final class NotFound extends FlashException { NotFound(int c) { super(c); } }
	/** FLASH_EBAD_TOKEN: token missing, unknown, expired, reused or for other goods. */
	public static final class BadToken extends FlashException { BadToken(int c) { super(c); } }
	/** FLASH_EDUPLICATE: request id seen before. */
	public static final class Duplicate extends FlashException { Duplicate(int c) { super(c); } }
	/** FLASH_EFULL: a fixed-capacity table of the segment is full. */
	public static final class Full extends FlashException { Full(int c) { super(c); } }
	/** FLASH_EINVAL: bad argument. */
	public static final class InvalidArgument extends FlashException { InvalidArgument(int c) { super(c); } }
	/** FLASH_EDURABILITY: the WAL failed; nothing more is acknowledged. */
	public static final class Durability extends FlashException { Durability(int c) { super(c); } }
	/** FLASH_EEXIST: segment, activity or sku already exists. */
	public static final class Exists extends FlashException { Exists(int c) { super(c); } }
	/** FLASH_ENOSEG: no segment of that name. */
	public static final class NoSegment extends FlashException { NoSegment(int c) { super(c); } }
	/** FLASH_ECORRUPT: an index read from the segment is out of bounds. */
	public static final class Corrupt extends FlashException { Corrupt(int c) { super(c); } }
	/** FLASH_EREADONLY: write call on a read-only handle. */
	public static final class ReadOnly extends FlashException { ReadOnly(int c) { super(c); } }
	/** FLASH_EFORK: handle used in a process other than its opener. */
	public static final class Fork extends FlashException { Fork(int c) { super(c); } }
	/** FLASH_ECANCELLED: order already cancelled. */
	public static final class Cancelled extends FlashException { Cancelled(int c) { super(c); } }
	/** FLASH_ELOCKED: lock held by another live owner. */
	public static final class Locked extends FlashException { Locked(int c) { super(c); } }
	/** FLASH_ENOT_OWNER: lock renew/release by a caller that does not hold it. */
	public static final class NotOwner extends FlashException { NotOwner(int c) { super(c); } }
	/** FLASH_EBUSY: record ring full, request in flight, or consumer claim held. */
	public static final class Busy extends FlashException { Busy(int c) { super(c); } }
	/** FLASH_ENOPROC: process table full: too many open handles. */
	public static final class NoProc extends FlashException { NoProc(int c) { super(c); } }
	/** FLASH_EWRONG_THREAD: handle used from a thread other than its opener. */
	public static final class WrongThread extends FlashException { WrongThread(int c) { super(c); } }
	/** FLASH_EFATE_UNKNOWN: done in memory, not durable within the wait bound. */
	public static final class FateUnknown extends FlashException { FateUnknown(int c) { super(c); } }
	/** FLASH_EREQ_EXPIRED: request id older than the window; look the order up. */
	public static final class RequestExpired extends FlashException { RequestExpired(int c) { super(c); } }
	/** FLASH_EARCHIVED: the order's activity was archived; the order is in MariaDB and the WAL. */
	public static final class Archived extends FlashException { Archived(int c) { super(c); } }
	/** FLASH_ENOT_ENDED: archive of an activity that has not ended. */
	public static final class NotEnded extends FlashException { NotEnded(int c) { super(c); } }
	/** FLASH_EDESTROYED: the segment was destroyed; nothing is acknowledged into it: close the handle. */
	public static final class Destroyed extends FlashException { Destroyed(int c) { super(c); } }

	/* reservations (FlashStock.confirm, expire) */

	/** FLASH_EEXPIRED: the reservation was not paid in time: it is expired, its units are back. */
	public static final class Expired extends FlashException { Expired(int c) { super(c); } }
	/** FLASH_ENOT_DUE: expire before the reservation's pay-by time; nothing changed. */
	public static final class NotDue extends FlashException { NotDue(int c) { super(c); } }
	/** FLASH_ECONFIRMED: expire of an ACTIVE order (paid, or never a reservation); nothing changed. */
	public static final class Confirmed extends FlashException { Confirmed(int c) { super(c); } }

	/* versioned terms (OrderRequest.withVersions) */

	/**
	 * FLASH_ESTALE: the terms changed since the version the order named;
	 * nothing taken (token and request id untouched): show the new terms.
	 */
	public static final class Stale extends FlashException { Stale(int c) { super(c); } }

	/* the order feed (Feed) */

	/** FLASH_ETIMEOUT: feed: no durable record arrived within the wait. */
	public static final class Timeout extends FlashException { Timeout(int c) { super(c); } }
	/** FLASH_ELOST: feed: WAL retention removed records the consumer had not committed. */
	public static final class Lost extends FlashException { Lost(int c) { super(c); } }
	/** FLASH_EAHEAD: feed: the consumer's position is past the durable end of the WAL. */
	public static final class Ahead extends FlashException { Ahead(int c) { super(c); } }
	/** FLASH_EFEED_IDENT: feed: the WAL belongs to another segment incarnation. */
	public static final class FeedIdent extends FlashException { FeedIdent(int c) { super(c); } }
	/** FLASH_EREFILL: feed: the refill source cannot cover the lost range. */
	public static final class Refill extends FlashException { Refill(int c) { super(c); } }
}
