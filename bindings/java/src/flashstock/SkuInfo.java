/* SkuInfo.java -- struct flash_sku_info: one sku's stock. */
package flashstock;

import java.nio.ByteBuffer;

public record SkuInfo(int activityId, int skuId, int shards, long total, long available) {
	/** Units sold: total - available. */
	public long sold() {
		return total - available;
	}

	static SkuInfo read(ByteBuffer b) {
		return new SkuInfo(b.getInt(Layout.SkuInfo.ACTIVITY_ID), b.getInt(Layout.SkuInfo.SKU_ID),
				b.getInt(Layout.SkuInfo.SHARDS), b.getLong(Layout.SkuInfo.TOTAL),
				b.getLong(Layout.SkuInfo.AVAILABLE));
	}
}
