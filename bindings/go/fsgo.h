/*
 * fsgo.h -- the C side shared by the cgo files of the Go binding.
 *
 * struct fsgo_scratch is each native handle's scratch: the C side of every
 * struct a call reads or writes, allocated once per handle in C memory, so
 * that no call passes a Go pointer to C (cgo makes every Go pointer given to
 * C escape to the heap: an allocation per order).  A batch of orders
 * (flash_order_many) has its arrays here too, grown to the largest batch
 * the handle has placed and kept until it closes.
 */
#ifndef FSGO_H
#define FSGO_H
#include <flashstock.h>

struct fsgo_scratch {
	struct flash_order_req  req;
	struct flash_order_res  res;
	struct flash_activity   act;
	struct flash_sku_info   sku;
	struct flash_order_info oi;
	struct flash_stats      st;
	struct flash_seg_opts   opts;
	struct flash_ident      id;
	struct flash_quiet      q;
	uint64_t                u64;
	uint32_t                u32;
	int32_t                 i32;
	struct flash_cart_req   creq;   /* a cart (flash_cart_order) */
	struct flash_cart_res   cres;
	struct flash_order_info lines[FLASH_CART_LINES_MAX];   /* flash_order_lines */
	struct flash_order_req *breq;   /* a batch's requests, bcap of them */
	struct flash_order_res *bres;   /* its results */
	int                    *brcs;   /* its outcomes */
	uint32_t                bcap;   /* orders the arrays hold; 0: none yet */
};
#endif
