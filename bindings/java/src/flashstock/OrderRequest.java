/*
 * OrderRequest.java -- struct flash_order_req.  token 0 means none;
 * requestId 0 means none, else a retry with the same id returns the first
 * outcome.  reserveMs 0 is a plain order, ACTIVE at once; else a
 * reservation, RESERVED until FlashStock.confirm() within that many ms
 * (1..RESERVE_MS_MAX), expired unpaid after.  activityVersion and
 * skuVersion 0 check nothing; else they are the versions of the terms the
 * buyer saw (Activity.version(), SkuInfo.version()): once either changed,
 * the order is refused FLASH_ESTALE and takes nothing.  The constructors
 * without the later fields are the ones this record had before them, kept
 * so that code written against them still compiles and means what it did.
 */
package flashstock;

public record OrderRequest(int activityId, int skuId, long userId, int qty, long token, long requestId,
		int reserveMs, long activityVersion, long skuVersion) {
	/** FLASH_RESERVE_MS_MAX: the longest reservation, a week. */
	public static final int RESERVE_MS_MAX = 604800000;

	public OrderRequest(int activityId, int skuId, long userId, int qty, long token, long requestId) {
		this(activityId, skuId, userId, qty, token, requestId, 0, 0, 0);
	}

	public OrderRequest(int activityId, int skuId, long userId, int qty, long token, long requestId,
			int reserveMs) {
		this(activityId, skuId, userId, qty, token, requestId, reserveMs, 0, 0);
	}

	public static OrderRequest of(int activityId, int skuId, long userId, int qty) {
		return new OrderRequest(activityId, skuId, userId, qty, 0, 0, 0, 0, 0);
	}

	public OrderRequest withToken(long t) {
		return new OrderRequest(activityId, skuId, userId, qty, t, requestId, reserveMs, activityVersion,
				skuVersion);
	}

	public OrderRequest withRequestId(long id) {
		return new OrderRequest(activityId, skuId, userId, qty, token, id, reserveMs, activityVersion,
				skuVersion);
	}

	/** The same request as a reservation the buyer must confirm within ms milliseconds. */
	public OrderRequest withReserveMs(int ms) {
		return new OrderRequest(activityId, skuId, userId, qty, token, requestId, ms, activityVersion,
				skuVersion);
	}

	/**
	 * The same request naming the versions of the terms the buyer saw (0:
	 * not checked): the order is refused FLASH_ESTALE, nothing taken, once
	 * the activity's or the sku's terms have another.
	 */
	public OrderRequest withVersions(long activityVersion, long skuVersion) {
		return new OrderRequest(activityId, skuId, userId, qty, token, requestId, reserveMs, activityVersion,
				skuVersion);
	}
}
