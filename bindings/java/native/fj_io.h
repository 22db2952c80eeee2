/*
 * fj_io.h -- the memory a Java handle shares with its JNI library.
 *
 * Each native handle of the Java binding is one struct fj_cell: the
 * flash_t * and an exchange area that Java sees as a direct ByteBuffer
 * (NewDirectByteBuffer over fj_cell.io).  Java writes a request there and
 * reads a result from there, at the offsets of flashstock/Layout.java: the
 * test java_layout proves the offsets of flashstock.h's structs equal the C
 * compiler's (the bindings' manifest), and flashstock_jni.c asserts those
 * of this area (Layout.Io, Batch, FeedIo) when it compiles.  No JNI object is
 * made on the order path: one native call with the cell's address.
 */
#ifndef FJ_IO_H
#define FJ_IO_H

#include <stdint.h>
#include "flashstock.h"

/* The exchange area: one call uses one member at a time. */
union fj_io {
	struct {
		struct flash_order_req req;   /* in: written by Java */
		struct flash_order_res res;   /* out: read by Java */
	} order;
	struct flash_seg_opts opts;
	struct flash_activity act;
	struct flash_sku_info sku;
	struct flash_order_info oi;
	struct flash_stats stats;
	struct flash_ident ident;
	struct flash_quiet quiet;
	struct {
		struct flash_cart_req req;    /* in: written by Java */
		struct flash_cart_res res;    /* out: read by Java */
	} cart;
	struct {
		struct flash_order_info oi[FLASH_CART_LINES_MAX];   /* flash_order_lines */
		uint32_t n;                   /* the order's lines */
	} lines;
	uint64_t u64;                         /* token, fence, segment bytes */
	unsigned char bytes[256];
};

struct fj_cell {
	flash_t *fc_h;                        /* the handle; used by its opening thread only */
	union fj_io fc_io;                    /* the ByteBuffer's memory */
	void *fc_batch;                       /* the batch area, NULL before the first batch */
	uint32_t fc_batch_cap;                /* orders the batch area has room for */
};

/*
 * A cell's batch area (flash_order_many), the memory of a second direct
 * ByteBuffer: for room for cap orders, cap requests from offset 0 (written
 * by Java), then cap results, then cap outcomes (read by Java).  It is
 * allocated by the thread's first batch, replaced by a bigger one when a
 * batch does not fit, and freed with the cell; so a batch, like an order,
 * is one native call with the cell's address and its count, nothing
 * copied.  Java computes the offsets from Layout.Batch and the sizes of
 * Layout.OrderReq and Layout.OrderRes.
 */
#define FJ_BATCH_ORDER_BYTES (sizeof(struct flash_order_req) + sizeof(struct flash_order_res) + sizeof(int))
#define FJ_BATCH_MAX         (1u << 24)   /* orders of one batch: the area stays below 2 GiB */

static inline struct flash_order_req *fj_batch_req(const struct fj_cell *c)
{
	return c->fc_batch;
}

static inline struct flash_order_res *fj_batch_res(const struct fj_cell *c)
{
	return (struct flash_order_res *)((char *)c->fc_batch +
	                                  (size_t)c->fc_batch_cap * sizeof(struct flash_order_req));
}

static inline int *fj_batch_rcs(const struct fj_cell *c)
{
	return (int *)((char *)fj_batch_res(c) + (size_t)c->fc_batch_cap * sizeof(struct flash_order_res));
}

/*
 * One open feed (api/flashstock.h section 10) and its exchange area, which
 * Java sees as a direct ByteBuffer: flash_feed_next() writes the record and
 * flash_feed_info_get() the info there.  flashstock.Feed lets one thread at
 * a time into a call on it (the header's rule for a flash_feed_t).
 */
union fj_feed_io {
	struct flash_feed_rec rec;            /* flash_feed_next */
	struct flash_feed_info info;          /* flash_feed_info_get */
	unsigned char bytes[256];
};

struct fj_feed {
	flash_feed_t *ff_f;                   /* used by one thread at a time */
	union fj_feed_io ff_io;               /* the ByteBuffer's memory */
};

#endif /* FJ_IO_H */
