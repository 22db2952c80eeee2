/* OrderInfo.java -- struct flash_order_info: one order as the segment holds it.
 * payByNs: a reservation's deadline (RESERVED, EXPIRED; CLOCK_REALTIME ns,
 * ms precision), 0 otherwise. */
package flashstock;

import java.nio.ByteBuffer;

public record OrderInfo(long orderNo, long userId, int activityId, int skuId, int qty, OrderState state,
		int limitSlot, int bizDay, long createdNs, long payByNs) {
	static OrderInfo read(ByteBuffer b) {
		return new OrderInfo(b.getLong(Layout.OrderInfo.ORDER_NO), b.getLong(Layout.OrderInfo.USER_ID),
				b.getInt(Layout.OrderInfo.ACTIVITY_ID), b.getInt(Layout.OrderInfo.SKU_ID),
				b.getInt(Layout.OrderInfo.QTY), OrderState.of(b.getInt(Layout.OrderInfo.STATE)),
				b.getInt(Layout.OrderInfo.LIMIT_SLOT), b.getInt(Layout.OrderInfo.BIZ_DAY),
				b.getLong(Layout.OrderInfo.CREATED_NS), b.getLong(Layout.OrderInfo.PAY_BY_NS));
	}
}
