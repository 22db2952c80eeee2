/* OrderInfo.java -- struct flash_order_info: one order as the segment holds it.
 * payByNs: a reservation's deadline (RESERVED, EXPIRED; CLOCK_REALTIME ns,
 * ms precision), 0 otherwise.  line, lines: a cart (FlashStock.cartOrder) of
 * n lines reads as its line 0 with lines n under its number, and the n - 1
 * numbers after it as NONE with line 1..n-1 and lines n (orderLines reads
 * it whole); a plain order has line 0, lines 1; a number never used lines 0. */
package flashstock;

import java.nio.ByteBuffer;

public record OrderInfo(long orderNo, long userId, int activityId, int skuId, int qty, OrderState state,
		int limitSlot, int bizDay, long createdNs, long payByNs, int line, int lines) {
	/** The record as it was before carts: line 0, lines 1 (a plain order). */
	public OrderInfo(long orderNo, long userId, int activityId, int skuId, int qty, OrderState state,
			int limitSlot, int bizDay, long createdNs, long payByNs) {
		this(orderNo, userId, activityId, skuId, qty, state, limitSlot, bizDay, createdNs, payByNs, 0, 1);
	}

	static OrderInfo read(ByteBuffer b) {
		return read(b, 0);
	}

	static OrderInfo read(ByteBuffer b, int at) {
		return new OrderInfo(b.getLong(at + Layout.OrderInfo.ORDER_NO), b.getLong(at + Layout.OrderInfo.USER_ID),
				b.getInt(at + Layout.OrderInfo.ACTIVITY_ID), b.getInt(at + Layout.OrderInfo.SKU_ID),
				b.getInt(at + Layout.OrderInfo.QTY), OrderState.of(b.getInt(at + Layout.OrderInfo.STATE)),
				b.getInt(at + Layout.OrderInfo.LIMIT_SLOT), b.getInt(at + Layout.OrderInfo.BIZ_DAY),
				b.getLong(at + Layout.OrderInfo.CREATED_NS), b.getLong(at + Layout.OrderInfo.PAY_BY_NS),
				b.getInt(at + Layout.OrderInfo.LINE), b.getInt(at + Layout.OrderInfo.LINES));
	}
}
