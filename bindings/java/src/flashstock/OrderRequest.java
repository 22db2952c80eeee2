/*
 * OrderRequest.java -- struct flash_order_req (its reserved field is always
 * zero).  token 0 means none; requestId 0 means none, else a retry with the
 * same id returns the first outcome.
 */
package flashstock;

public record OrderRequest(int activityId, int skuId, long userId, int qty, long token, long requestId) {
	public static OrderRequest of(int activityId, int skuId, long userId, int qty) {
		return new OrderRequest(activityId, skuId, userId, qty, 0, 0);
	}

	public OrderRequest withToken(long t) {
		return new OrderRequest(activityId, skuId, userId, qty, t, requestId);
	}

	public OrderRequest withRequestId(long id) {
		return new OrderRequest(activityId, skuId, userId, qty, token, id);
	}
}
