/*
 * OrderRequest.java -- struct flash_order_req.  token 0 means none;
 * requestId 0 means none, else a retry with the same id returns the first
 * outcome.  reserveMs 0 is a plain order, ACTIVE at once; else a
 * reservation, RESERVED until FlashStock.confirm() within that many ms
 * (1..RESERVE_MS_MAX), expired unpaid after.  The constructor without
 * reserveMs is the one this record had before reservations, kept so that
 * code written against it still compiles and places plain orders.
 */
package flashstock;

public record OrderRequest(int activityId, int skuId, long userId, int qty, long token, long requestId,
		int reserveMs) {
	/** FLASH_RESERVE_MS_MAX: the longest reservation, a week. */
	public static final int RESERVE_MS_MAX = 604800000;

	public OrderRequest(int activityId, int skuId, long userId, int qty, long token, long requestId) {
		this(activityId, skuId, userId, qty, token, requestId, 0);
	}

	public static OrderRequest of(int activityId, int skuId, long userId, int qty) {
		return new OrderRequest(activityId, skuId, userId, qty, 0, 0, 0);
	}

	public OrderRequest withToken(long t) {
		return new OrderRequest(activityId, skuId, userId, qty, t, requestId, reserveMs);
	}

	public OrderRequest withRequestId(long id) {
		return new OrderRequest(activityId, skuId, userId, qty, token, id, reserveMs);
	}

	/** The same request as a reservation the buyer must confirm within ms milliseconds. */
	public OrderRequest withReserveMs(int ms) {
		return new OrderRequest(activityId, skuId, userId, qty, token, requestId, ms);
	}
}
