/*
 * CartLine.java -- struct flash_cart_line: one line of a cart
 * (FlashStock.cartOrder): a sku of the cart's activity (distinct within the
 * cart), its qty (1..max_qty) and, 0 for none, the version of the sku's
 * terms the buyer saw (as OrderRequest.skuVersion).
 */
package flashstock;

public record CartLine(int skuId, int qty, long skuVersion) {
	public CartLine(int skuId, int qty) {
		this(skuId, qty, 0);
	}

	public static CartLine of(int skuId, int qty) {
		return new CartLine(skuId, qty, 0);
	}
}
