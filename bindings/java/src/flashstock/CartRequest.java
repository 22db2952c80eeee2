/*
 * CartRequest.java -- struct flash_cart_req: a cart, 1..LINES_MAX lines of
 * distinct skus of one activity placed as one order, all or nothing
 * (FlashStock.cartOrder).  reserveMs, token (for line 0's sku), requestId
 * and activityVersion are the cart's, as OrderRequest's.
 */
package flashstock;

import java.util.List;

public record CartRequest(int activityId, long userId, List<CartLine> lines, int reserveMs, long token,
		long requestId, long activityVersion) {
	/** FLASH_CART_LINES_MAX: the most lines of a cart. */
	public static final int LINES_MAX = 16;

	public CartRequest {
		lines = List.copyOf(lines);
	}

	public static CartRequest of(int activityId, long userId, CartLine... lines) {
		return new CartRequest(activityId, userId, List.of(lines), 0, 0, 0, 0);
	}

	public static CartRequest of(int activityId, long userId, List<CartLine> lines) {
		return new CartRequest(activityId, userId, lines, 0, 0, 0, 0);
	}

	/** The same cart as a reservation the buyer must confirm within ms milliseconds. */
	public CartRequest withReserveMs(int ms) {
		return new CartRequest(activityId, userId, lines, ms, token, requestId, activityVersion);
	}

	public CartRequest withToken(long t) {
		return new CartRequest(activityId, userId, lines, reserveMs, t, requestId, activityVersion);
	}

	public CartRequest withRequestId(long id) {
		return new CartRequest(activityId, userId, lines, reserveMs, token, id, activityVersion);
	}

	/** The same cart naming the version of the activity's terms the buyer saw (0: not checked). */
	public CartRequest withActivityVersion(long v) {
		return new CartRequest(activityId, userId, lines, reserveMs, token, requestId, v);
	}
}
