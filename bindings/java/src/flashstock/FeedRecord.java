/*
 * FeedRecord.java -- struct flash_feed_rec: one record of the order feed,
 * every field of its struct flash_record, its LSN and where it came from.
 */
package flashstock;

import java.nio.ByteBuffer;

/**
 * One record of a {@link Feed} (api/flashstock.h section 10).
 * @param lsn        its WAL LSN: increasing; an idempotency key
 * @param seq        ring seq of the producing handle's slot (WAL records only)
 * @param type       FLASH_REC_*: ORDER 1, CANCEL 2, RESTOCK 3, ACTIVITY 4, SKU 5, GEN 6, ARCHIVE 7, CONFIRM 8,
 *                   EXPIRE 9, PRICE 10 (0: a refill's stand-in for a gap's last LSN); a type newer than this
 *                   binding stays its number
 * @param slot       the producing handle's slot
 * @param qty        ORDER/CANCEL/CONFIRM/EXPIRE: units; SKU: shards
 * @param orderNo    ORDER/CANCEL/CONFIRM/EXPIRE: the order; ACTIVITY, SKU, PRICE: the terms' version
 * @param value      RESTOCK: delta; SKU: units; ACTIVITY: start_ns; PRICE: the price; a reservation's ORDER,
 *                   CONFIRM, EXPIRE: its pay-by time (ns)
 * @param tsNs       CLOCK_REALTIME when made; ACTIVITY: end_ns
 * @param bizDay     ORDER: business day; ACTIVITY: limit | scope<<8 | flags<<16
 * @param limitSlot  ORDER/CANCEL: 1..K; ACTIVITY: max_qty
 * @param flags      CANCEL/EXPIRE: 1 if the quota was returned; ACTIVITY: 1 for new terms of an existing one;
 *                   a cart's line (ORDER/CANCEL/CONFIRM/EXPIRE): F_CART, its line (line()), F_LAST (last())
 * @param requestId  ORDER: request id or 0; ACTIVITY: day_offset_s
 * @param source     SOURCE_WAL or SOURCE_MYSQL (a refill)
 * @param missing    MISS_* bits: fields a refill could not give back (0 from the WAL)
 * @param gap        LSNs just below lsn the feed could not serve (refill only; 0 from the WAL)
 */
public record FeedRecord(long lsn, long seq, int type, int slot, int activityId, int skuId, int qty, long orderNo,
		long userId, long value, long tsNs, int bizDay, int limitSlot, int flags, long requestId, int source,
		int missing, long gap) {
	public static final int ORDER = 1;
	public static final int CANCEL = 2;
	public static final int RESTOCK = 3;
	public static final int ACTIVITY = 4;
	public static final int SKU = 5;
	/** A request-id or limit generation moved or was cleared (reclamation). */
	public static final int GEN = 6;
	/** An ended activity was archived: activityId, tsNs; value = order slots freed. */
	public static final int ARCHIVE = 7;
	/** A reservation was paid (FlashStock.confirm): the fields of its ORDER; now ACTIVE. */
	public static final int CONFIRM = 8;
	/** A reservation expired unpaid: the fields of a CANCEL (its units back). */
	public static final int EXPIRE = 9;
	/** A sku's price was set (FlashStock.skuPriceSet): value = the price, orderNo = the new version. */
	public static final int PRICE = 10;

	/** FLASH_REC_F_CART: the record is a line of a cart (one record per line, the line's skuId and qty). */
	public static final int F_CART = 0x0100;
	/** FLASH_REC_F_LAST: the cart's last line. */
	public static final int F_LAST = 0x0200;

	/** A line of a cart (FlashStock.cartOrder): an ORDER, CANCEL, CONFIRM or EXPIRE with F_CART. */
	public boolean cart() {
		return lineType() && (flags & F_CART) != 0;
	}

	/** The cart's line this record is (FLASH_REC_LINE), 0..15; 0 for any other record. */
	public int line() {
		return cart() ? flags >>> 10 & 0xf : 0;
	}

	/** The last line of its cart (F_LAST); true for a plain order's one record, false for no order's. */
	public boolean last() {
		return cart() ? (flags & F_LAST) != 0 : lineType();
	}

	private boolean lineType() {
		return type == ORDER || type == CANCEL || type == CONFIRM || type == EXPIRE;
	}

	/** FLASH_FEED_WAL: the WAL frame itself, every field. */
	public static final int SOURCE_WAL = 0;
	/** FLASH_FEED_MYSQL: refilled from MariaDB rows; see missing. */
	public static final int SOURCE_MYSQL = 1;

	/** FLASH_FEED_MISS_SLOT: slot and seq (MariaDB keeps no producer). */
	public static final int MISS_SLOT = 0x1;
	/** FLASH_FEED_MISS_TS: tsNs. */
	public static final int MISS_TS = 0x2;
	/** FLASH_FEED_MISS_VALUE: value (a SKU's initial units). */
	public static final int MISS_VALUE = 0x4;

	/* unsigned C fields of 32 bits fit Java's int as their bit pattern (ids,
	 * quantities); those of 16 bits are widened without sign */
	static FeedRecord read(ByteBuffer b, int at) {
		int r = at + Layout.FeedRec.REC;
		return new FeedRecord(b.getLong(at + Layout.FeedRec.LSN), b.getLong(at + Layout.FeedRec.SEQ),
				Short.toUnsignedInt(b.getShort(r + Layout.Record.TYPE)),
				Short.toUnsignedInt(b.getShort(r + Layout.Record.SLOT)), b.getInt(r + Layout.Record.ACTIVITY_ID),
				b.getInt(r + Layout.Record.SKU_ID), b.getInt(r + Layout.Record.QTY),
				b.getLong(r + Layout.Record.ORDER_NO), b.getLong(r + Layout.Record.USER_ID),
				b.getLong(r + Layout.Record.VALUE), b.getLong(r + Layout.Record.TS_NS),
				b.getInt(r + Layout.Record.BIZ_DAY), Short.toUnsignedInt(b.getShort(r + Layout.Record.LIMIT_SLOT)),
				Short.toUnsignedInt(b.getShort(r + Layout.Record.FLAGS)), b.getLong(r + Layout.Record.REQUEST_ID),
				b.getInt(at + Layout.FeedRec.SOURCE), b.getInt(at + Layout.FeedRec.MISSING),
				b.getLong(at + Layout.FeedRec.GAP));
	}
}
