/*
 * SkuInfo.java -- struct flash_sku_info: one sku's stock, its price
 * (FlashStock.skuPriceSet; 0 until set) and the version of its terms (its
 * price), for OrderRequest.withVersions.
 */
package flashstock;

import java.nio.ByteBuffer;

public record SkuInfo(int activityId, int skuId, int shards, long total, long available, long price,
		long version) {
	/** FLASH_PRICE_MAX: the highest price FlashStock.skuPriceSet takes (a negative one is refused too). */
	public static final long PRICE_MAX = Long.MAX_VALUE;

	/** The stock alone, price and version 0 (the constructor this record had before them). */
	public SkuInfo(int activityId, int skuId, int shards, long total, long available) {
		this(activityId, skuId, shards, total, available, 0, 0);
	}

	/** Units sold: total - available. */
	public long sold() {
		return total - available;
	}

	static SkuInfo read(ByteBuffer b) {
		return new SkuInfo(b.getInt(Layout.SkuInfo.ACTIVITY_ID), b.getInt(Layout.SkuInfo.SKU_ID),
				b.getInt(Layout.SkuInfo.SHARDS), b.getLong(Layout.SkuInfo.TOTAL),
				b.getLong(Layout.SkuInfo.AVAILABLE), b.getLong(Layout.SkuInfo.PRICE),
				b.getLong(Layout.SkuInfo.VERSION));
	}
}
