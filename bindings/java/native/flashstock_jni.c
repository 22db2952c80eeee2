/*
 * flashstock_jni.c -- the JNI library of the Java binding (class flashstock.Native).
 *
 * Each function forwards one flash_* call and returns its result code
 * unchanged.  A handle is a struct fj_cell (fj_io.h) whose address Java
 * keeps as a long; structs pass through the cell's exchange area, which
 * Java maps as a direct ByteBuffer, so no Java object is made or read here
 * on the order path.  The thread rule is kept by the Java side
 * (flashstock.FlashStock passes a cell only to the thread that opened it);
 * the engine's own check (FLASH_EWRONG_THREAD) stays behind it.
 *
 * Divisions: helpers; 1. result codes; 2. segments; 3. handles; 4. catalog;
 * 5. orders; 6. tokens; 7. locks; 8. reading state; 9. observation; 10. order feed.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jni.h>

#include "flashstock.h"
#include "fj_io.h"
#include "flashstock_Native.h"
#include "flashstock_Layout_Batch.h"
#include "flashstock_Layout_FeedIo.h"
#include "flashstock_Layout_Io.h"

/* The exchange area as Layout.java has it (its @Native constants, which
 * javac writes into these headers); java_layout checks the header's structs. */
#define FJ_LAYOUT(cls, name, value) \
	_Static_assert(flashstock_Layout_##cls##_##name == (value), "Layout." #cls "." #name " is " #value)
FJ_LAYOUT(Io, SIZE, sizeof(union fj_io));
FJ_LAYOUT(Io, ORDER_REQ, offsetof(union fj_io, order.req));
FJ_LAYOUT(Io, ORDER_RES, offsetof(union fj_io, order.res));
FJ_LAYOUT(Io, U64, offsetof(union fj_io, u64));
FJ_LAYOUT(Io, CART_REQ, offsetof(union fj_io, cart.req));
FJ_LAYOUT(Io, CART_RES, offsetof(union fj_io, cart.res));
FJ_LAYOUT(Io, LINES, offsetof(union fj_io, lines.oi));
FJ_LAYOUT(Io, LINES_N, offsetof(union fj_io, lines.n));
FJ_LAYOUT(Batch, ORDER_BYTES, FJ_BATCH_ORDER_BYTES);
FJ_LAYOUT(Batch, RC_SIZE, sizeof(int));
FJ_LAYOUT(Batch, MAX, FJ_BATCH_MAX);
FJ_LAYOUT(FeedIo, SIZE, sizeof(union fj_feed_io));
FJ_LAYOUT(FeedIo, REC, offsetof(union fj_feed_io, rec));
FJ_LAYOUT(FeedIo, INFO, offsetof(union fj_feed_io, info));

static struct fj_cell *cell_of(jlong cell)
{
	return (struct fj_cell *)(intptr_t)cell;
}

/* The direct buffer's memory, or NULL (then an exception is pending or the
 * buffer is too small: FLASH_EINVAL for the caller). */
static union fj_io *io_of(JNIEnv *env, jobject buf)
{
	if (buf == NULL)
		return NULL;
	if ((*env)->GetDirectBufferCapacity(env, buf) < (jlong)sizeof(union fj_io))
		return NULL;
	return (*env)->GetDirectBufferAddress(env, buf);
}

/* Run fn on a name from Java; FLASH_EINVAL for a null name, FLASH_ENOMEM
 * when the JVM cannot copy it (an OutOfMemoryError is then pending). */
#define WITH_NAME(env, jname, var, expr)                                          \
	do {                                                                      \
		if ((jname) == NULL)                                              \
			return FLASH_EINVAL;                                      \
		const char *var = (*(env))->GetStringUTFChars((env), (jname), NULL); \
		if (var == NULL)                                                  \
			return FLASH_ENOMEM;                                      \
		int rc_ = (expr);                                                 \
		(*(env))->ReleaseStringUTFChars((env), (jname), var);             \
		return rc_;                                                       \
	} while (0)

/* ------------------------------------------------------------ 1. result codes */

JNIEXPORT jstring JNICALL Java_flashstock_Native_strerror(JNIEnv *env, jclass cls, jint rc)
{
	return (*env)->NewStringUTF(env, flash_strerror(rc));
}

JNIEXPORT jstring JNICALL Java_flashstock_Native_rcname(JNIEnv *env, jclass cls, jint rc)
{
	return (*env)->NewStringUTF(env, flash_rcname(rc));
}

/* ------------------------------------------------------------ 2. segments */

JNIEXPORT void JNICALL Java_flashstock_Native_segOptsDefault(JNIEnv *env, jclass cls, jobject buf)
{
	union fj_io *io = io_of(env, buf);
	if (io != NULL)
		flash_seg_opts_default(&io->opts);
}

JNIEXPORT jint JNICALL Java_flashstock_Native_segSize(JNIEnv *env, jclass cls, jobject buf)
{
	union fj_io *io = io_of(env, buf);
	if (io == NULL)
		return FLASH_EINVAL;
	uint64_t bytes = 0;
	int rc = flash_seg_size(&io->opts, &bytes);
	if (rc == FLASH_OK)
		io->u64 = bytes;
	return rc;
}

JNIEXPORT jint JNICALL Java_flashstock_Native_segCreate(JNIEnv *env, jclass cls, jstring jname, jobject buf)
{
	const struct flash_seg_opts *o = NULL;
	if (buf != NULL) {
		union fj_io *io = io_of(env, buf);
		if (io == NULL)
			return FLASH_EINVAL;
		o = &io->opts;
	}
	WITH_NAME(env, jname, name, flash_seg_create(name, o));
}

JNIEXPORT jint JNICALL Java_flashstock_Native_segDestroy(JNIEnv *env, jclass cls, jstring jname)
{
	WITH_NAME(env, jname, name, flash_seg_destroy(name));
}

JNIEXPORT jint JNICALL Java_flashstock_Native_activityCheck(JNIEnv *env, jclass cls, jobject buf)
{
	union fj_io *io = io_of(env, buf);
	return io == NULL ? FLASH_EINVAL : flash_activity_check(&io->act);
}

/* ------------------------------------------------------------ 3. handles */

static jlong open_cell(const char *name, unsigned flags)
{
	struct fj_cell *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return FLASH_ENOMEM;
	int rc = flash_open(name, flags, &c->fc_h);
	if (rc != FLASH_OK) {
		free(c);
		return rc;
	}
	return (jlong)(intptr_t)c;
}

/* Contract: the cell's address (positive: a user-space pointer) or a
 * negative FLASH_E* code; the cell is then for the calling thread only. */
JNIEXPORT jlong JNICALL Java_flashstock_Native_open(JNIEnv *env, jclass cls, jstring jname, jint flags)
{
	if (jname == NULL)
		return FLASH_EINVAL;
	const char *name = (*env)->GetStringUTFChars(env, jname, NULL);
	if (name == NULL)
		return FLASH_ENOMEM;
	jlong r = open_cell(name, (unsigned)flags);
	(*env)->ReleaseStringUTFChars(env, jname, name);
	return r;
}

JNIEXPORT jobject JNICALL Java_flashstock_Native_io(JNIEnv *env, jclass cls, jlong cell)
{
	return (*env)->NewDirectByteBuffer(env, &cell_of(cell)->fc_io, sizeof(union fj_io));
}

/* Contract: closes the handle and frees the cell.  Any thread may call it
 * once the owner thread has made its last call (flash_close's rule); the
 * Java side guarantees that, and that it happens once. */
JNIEXPORT jint JNICALL Java_flashstock_Native_close(JNIEnv *env, jclass cls, jlong cell)
{
	struct fj_cell *c = cell_of(cell);
	int rc = flash_close(c->fc_h);
	free(c->fc_batch);
	free(c);
	return rc;
}

JNIEXPORT jint JNICALL Java_flashstock_Native_recover(JNIEnv *env, jclass cls, jlong cell)
{
	uint32_t n = 0;
	int rc = flash_recover(cell_of(cell)->fc_h, &n);
	return rc != FLASH_OK ? rc : (jint)(n & 0x7fffffffu);
}

JNIEXPORT jint JNICALL Java_flashstock_Native_slot(JNIEnv *env, jclass cls, jlong cell)
{
	return flash_slot(cell_of(cell)->fc_h);
}

JNIEXPORT jint JNICALL Java_flashstock_Native_segOptsGet(JNIEnv *env, jclass cls, jlong cell)
{
	struct fj_cell *c = cell_of(cell);
	return flash_seg_opts_get(c->fc_h, &c->fc_io.opts);
}

/* ------------------------------------------------------------ 4. catalog */

JNIEXPORT jint JNICALL Java_flashstock_Native_activityAdd(JNIEnv *env, jclass cls, jlong cell)
{
	struct fj_cell *c = cell_of(cell);
	return flash_activity_add(c->fc_h, &c->fc_io.act);
}

JNIEXPORT jint JNICALL Java_flashstock_Native_skuAdd(JNIEnv *env, jclass cls, jlong cell, jint activity_id,
                                                     jint sku_id, jlong units, jint shards)
{
	return flash_sku_add(cell_of(cell)->fc_h, (uint32_t)activity_id, (uint32_t)sku_id, (uint64_t)units,
	                     (uint32_t)shards);
}

JNIEXPORT jint JNICALL Java_flashstock_Native_activityGet(JNIEnv *env, jclass cls, jlong cell, jint id)
{
	struct fj_cell *c = cell_of(cell);
	return flash_activity_get(c->fc_h, (uint32_t)id, &c->fc_io.act);
}

/* The activity is read from the exchange area, then the new version is
 * written over it (io.u64): the union's members are used one at a time. */
JNIEXPORT jint JNICALL Java_flashstock_Native_activityUpdate(JNIEnv *env, jclass cls, jlong cell)
{
	struct fj_cell *c = cell_of(cell);
	uint64_t version = 0;
	int rc = flash_activity_update(c->fc_h, &c->fc_io.act, &version);
	if (rc == FLASH_OK)
		c->fc_io.u64 = version;
	return rc;
}

JNIEXPORT jint JNICALL Java_flashstock_Native_skuPriceSet(JNIEnv *env, jclass cls, jlong cell, jint activity_id,
                                                          jint sku_id, jlong price)
{
	struct fj_cell *c = cell_of(cell);
	uint64_t version = 0;
	int rc = flash_sku_price_set(c->fc_h, (uint32_t)activity_id, (uint32_t)sku_id, (uint64_t)price, &version);
	if (rc == FLASH_OK)
		c->fc_io.u64 = version;
	return rc;
}

/* ------------------------------------------------------------ 5. orders */

/* The order path: the request and the result live in the cell, written
 * and read by Java through its direct buffer; this adds one call to
 * flash_order and nothing else. */
JNIEXPORT jint JNICALL Java_flashstock_Native_order(JNIEnv *env, jclass cls, jlong cell)
{
	struct fj_cell *c = cell_of(cell);
	return flash_order(c->fc_h, &c->fc_io.order.req, &c->fc_io.order.res);
}

JNIEXPORT jint JNICALL Java_flashstock_Native_cartOrder(JNIEnv *env, jclass cls, jlong cell)
{
	struct fj_cell *c = cell_of(cell);
	return flash_cart_order(c->fc_h, &c->fc_io.cart.req, &c->fc_io.cart.res);
}

/* Throw a new exception of class cls (a JNI class name) with msg; NULL. */
static jobject throw_new(JNIEnv *env, const char *cls, const char *msg)
{
	jclass k = (*env)->FindClass(env, cls);
	if (k != NULL)                            /* else NoClassDefFoundError is pending */
		(*env)->ThrowNew(env, k, msg);
	return NULL;
}

/*
 * Contract: the cell's batch area (fj_io.h) with room for cap orders, as a
 * direct buffer; the area it replaces is freed, so Java drops the buffer
 * it had.  NULL with an exception pending (the old area then kept): an
 * IllegalArgumentException for cap outside 1..FJ_BATCH_MAX, an
 * OutOfMemoryError when there is no memory for it.
 */
JNIEXPORT jobject JNICALL Java_flashstock_Native_batchIo(JNIEnv *env, jclass cls, jlong cell, jint cap)
{
	struct fj_cell *c = cell_of(cell);
	void *area;
	jobject buf;

	if (cap <= 0 || (uint32_t)cap > FJ_BATCH_MAX)
		return throw_new(env, "java/lang/IllegalArgumentException", "flashstock: batch area size");
	size_t bytes = (size_t)cap * FJ_BATCH_ORDER_BYTES;
	if ((area = malloc(bytes)) == NULL)
		return throw_new(env, "java/lang/OutOfMemoryError", "flashstock: no memory for a batch area");
	if ((buf = (*env)->NewDirectByteBuffer(env, area, (jlong)bytes)) == NULL) {
		free(area);                       /* an exception is pending */
		return NULL;
	}
	free(c->fc_batch);
	c->fc_batch = area;
	c->fc_batch_cap = (uint32_t)cap;
	return buf;
}

/* A batch: n requests in the cell's batch area, their results and outcomes
 * written there by flash_order_many; as the order path, one call and
 * nothing else.  FLASH_EINVAL for a count the area has no room for. */
JNIEXPORT jint JNICALL Java_flashstock_Native_orderMany(JNIEnv *env, jclass cls, jlong cell, jint n)
{
	struct fj_cell *c = cell_of(cell);

	if (n <= 0 || (uint32_t)n > c->fc_batch_cap)
		return FLASH_EINVAL;
	return flash_order_many(c->fc_h, fj_batch_req(c), (uint32_t)n, fj_batch_res(c), fj_batch_rcs(c));
}

JNIEXPORT jint JNICALL Java_flashstock_Native_syncWaitSet(JNIEnv *env, jclass cls, jlong cell, jint wait_ms)
{
	return flash_sync_wait_set(cell_of(cell)->fc_h, (uint32_t)wait_ms);
}

JNIEXPORT jint JNICALL Java_flashstock_Native_durableWait(JNIEnv *env, jclass cls, jlong cell, jlong lsn,
                                                          jint wait_ms)
{
	return flash_durable_wait(cell_of(cell)->fc_h, (uint64_t)lsn, (uint32_t)wait_ms);
}

JNIEXPORT jint JNICALL Java_flashstock_Native_cancel(JNIEnv *env, jclass cls, jlong cell, jlong order_no)
{
	uint32_t units = 0;
	int rc = flash_cancel(cell_of(cell)->fc_h, (uint64_t)order_no, &units);
	/* a quantity is at most FLASH_QTY_MAX: it fits a non-negative jint */
	return rc != FLASH_OK ? rc : (jint)units;
}

JNIEXPORT jint JNICALL Java_flashstock_Native_confirm(JNIEnv *env, jclass cls, jlong cell, jlong order_no)
{
	return flash_confirm(cell_of(cell)->fc_h, (uint64_t)order_no);
}

JNIEXPORT jint JNICALL Java_flashstock_Native_expire(JNIEnv *env, jclass cls, jlong cell, jlong order_no)
{
	uint32_t units = 0;
	int rc = flash_expire(cell_of(cell)->fc_h, (uint64_t)order_no, &units);
	/* as for a cancel: at most FLASH_QTY_MAX units */
	return rc != FLASH_OK ? rc : (jint)units;
}

JNIEXPORT jint JNICALL Java_flashstock_Native_expireDue(JNIEnv *env, jclass cls, jlong cell, jint max)
{
	uint32_t expired = 0;
	int rc = flash_expire_due(cell_of(cell)->fc_h, (uint32_t)max, &expired);
	/* at most one per order-table slot, and a table has at most
	 * FLASH_CAP_MAX (2^26) of them: a non-negative jint */
	return rc != FLASH_OK ? rc : (jint)expired;
}

JNIEXPORT jint JNICALL Java_flashstock_Native_restock(JNIEnv *env, jclass cls, jlong cell, jint activity_id,
                                                      jint sku_id, jlong delta)
{
	return flash_restock(cell_of(cell)->fc_h, (uint32_t)activity_id, (uint32_t)sku_id, (int64_t)delta);
}

/* ------------------------------------------------------------ 6. tokens */

JNIEXPORT jint JNICALL Java_flashstock_Native_tokenIssue(JNIEnv *env, jclass cls, jlong cell, jint activity_id,
                                                         jint sku_id, jlong user_id, jint ttl_ms)
{
	struct fj_cell *c = cell_of(cell);
	uint64_t token = 0;
	int rc = flash_token_issue(c->fc_h, (uint32_t)activity_id, (uint32_t)sku_id, (uint64_t)user_id,
	                           (uint32_t)ttl_ms, &token);
	if (rc == FLASH_OK)
		c->fc_io.u64 = token;
	return rc;
}

JNIEXPORT jint JNICALL Java_flashstock_Native_tokenRedeem(JNIEnv *env, jclass cls, jlong cell, jint activity_id,
                                                          jint sku_id, jlong user_id, jlong token)
{
	return flash_token_redeem(cell_of(cell)->fc_h, (uint32_t)activity_id, (uint32_t)sku_id,
	                          (uint64_t)user_id, (uint64_t)token);
}

/* ------------------------------------------------------------ 7. locks */

static int lock_acquire(struct fj_cell *c, const char *name, jlong owner, jint lease_ms)
{
	uint64_t fence = 0;
	int rc = flash_lock_acquire(c->fc_h, name, (uint64_t)owner, (uint32_t)lease_ms, &fence);
	if (rc == FLASH_OK)
		c->fc_io.u64 = fence;
	return rc;
}

JNIEXPORT jint JNICALL Java_flashstock_Native_lockAcquire(JNIEnv *env, jclass cls, jlong cell, jstring jname,
                                                          jlong owner, jint lease_ms)
{
	WITH_NAME(env, jname, name, lock_acquire(cell_of(cell), name, owner, lease_ms));
}

JNIEXPORT jint JNICALL Java_flashstock_Native_lockRenew(JNIEnv *env, jclass cls, jlong cell, jstring jname,
                                                        jlong owner, jint lease_ms)
{
	WITH_NAME(env, jname, name,
	          flash_lock_renew(cell_of(cell)->fc_h, name, (uint64_t)owner, (uint32_t)lease_ms));
}

JNIEXPORT jint JNICALL Java_flashstock_Native_lockRelease(JNIEnv *env, jclass cls, jlong cell, jstring jname,
                                                          jlong owner)
{
	WITH_NAME(env, jname, name, flash_lock_release(cell_of(cell)->fc_h, name, (uint64_t)owner));
}

/* ------------------------------------------------------------ 8. reading state */

JNIEXPORT jint JNICALL Java_flashstock_Native_skuGet(JNIEnv *env, jclass cls, jlong cell, jint activity_id,
                                                     jint sku_id)
{
	struct fj_cell *c = cell_of(cell);
	return flash_sku_get(c->fc_h, (uint32_t)activity_id, (uint32_t)sku_id, &c->fc_io.sku);
}

JNIEXPORT jint JNICALL Java_flashstock_Native_activityAt(JNIEnv *env, jclass cls, jlong cell, jint index)
{
	struct fj_cell *c = cell_of(cell);
	return flash_activity_at(c->fc_h, (uint32_t)index, &c->fc_io.act);
}

JNIEXPORT jint JNICALL Java_flashstock_Native_skuAt(JNIEnv *env, jclass cls, jlong cell, jint index)
{
	struct fj_cell *c = cell_of(cell);
	return flash_sku_at(c->fc_h, (uint32_t)index, &c->fc_io.sku);
}

JNIEXPORT jint JNICALL Java_flashstock_Native_orderGet(JNIEnv *env, jclass cls, jlong cell, jlong order_no)
{
	struct fj_cell *c = cell_of(cell);
	return flash_order_get(c->fc_h, (uint64_t)order_no, &c->fc_io.oi);
}

JNIEXPORT jint JNICALL Java_flashstock_Native_orderLines(JNIEnv *env, jclass cls, jlong cell, jlong order_no)
{
	struct fj_cell *c = cell_of(cell);
	c->fc_io.lines.n = 0;
	return flash_order_lines(c->fc_h, (uint64_t)order_no, c->fc_io.lines.oi, FLASH_CART_LINES_MAX,
	                         &c->fc_io.lines.n);
}

JNIEXPORT jlong JNICALL Java_flashstock_Native_ordersMax(JNIEnv *env, jclass cls, jlong cell)
{
	return (jlong)flash_orders_max(cell_of(cell)->fc_h);
}

JNIEXPORT jint JNICALL Java_flashstock_Native_statsGet(JNIEnv *env, jclass cls, jlong cell)
{
	struct fj_cell *c = cell_of(cell);
	return flash_stats_get(c->fc_h, &c->fc_io.stats);
}

JNIEXPORT jint JNICALL Java_flashstock_Native_identGet(JNIEnv *env, jclass cls, jlong cell)
{
	struct fj_cell *c = cell_of(cell);
	return flash_ident_get(c->fc_h, &c->fc_io.ident);
}

JNIEXPORT jint JNICALL Java_flashstock_Native_quietGet(JNIEnv *env, jclass cls, jlong cell)
{
	struct fj_cell *c = cell_of(cell);
	return flash_quiet_get(c->fc_h, &c->fc_io.quiet);
}

/* ------------------------------------------------------------ 9. observation */

/* Contract: flash_obs_get into @p buf, a direct buffer of at least
 * sizeof(struct flash_obs) bytes (Layout.Obs.SIZE; larger than the cell's
 * exchange area, so Java passes its own); FLASH_EINVAL for a smaller one. */
JNIEXPORT jint JNICALL Java_flashstock_Native_obsGet(JNIEnv *env, jclass cls, jlong cell, jobject buf)
{
	if (buf == NULL || (*env)->GetDirectBufferCapacity(env, buf) < (jlong)sizeof(struct flash_obs))
		return FLASH_EINVAL;
	struct flash_obs *o = (*env)->GetDirectBufferAddress(env, buf);
	return o == NULL ? FLASH_EINVAL : flash_obs_get(cell_of(cell)->fc_h, o);
}

/* UINT64_MAX (the last bucket) comes to Java as -1: Obs reads it unsigned. */
JNIEXPORT jlong JNICALL Java_flashstock_Native_obsBucketLeNs(JNIEnv *env, jclass cls, jint b)
{
	return (jlong)flash_obs_bucket_le_ns((unsigned)b);
}

JNIEXPORT jstring JNICALL Java_flashstock_Native_opName(JNIEnv *env, jclass cls, jint op)
{
	return (*env)->NewStringUTF(env, flash_op_name((unsigned)op));
}

/* ------------------------------------------------------------ 10. order feed */

static struct fj_feed *feed_of(jlong feed)
{
	return (struct fj_feed *)(intptr_t)feed;
}

/* A Java string as a C one, or NULL for null; *bad set when the JVM could
 * not copy it (an OutOfMemoryError is then pending). */
static const char *utf_or_null(JNIEnv *env, jstring s, int *bad)
{
	if (s == NULL)
		return NULL;
	const char *c = (*env)->GetStringUTFChars(env, s, NULL);
	if (c == NULL)
		*bad = 1;
	return c;
}

static void utf_release(JNIEnv *env, jstring s, const char *c)
{
	if (s != NULL && c != NULL)
		(*env)->ReleaseStringUTFChars(env, s, c);
}

/* Contract: flash_feed_open with the options given; the feed cell's address
 * (positive) or a negative FLASH_E* code.  Null dir or consumer is
 * FLASH_EINVAL (the library's answer for NULL); null URL or stream: none /
 * the default. */
JNIEXPORT jlong JNICALL Java_flashstock_Native_feedOpen(JNIEnv *env, jclass cls, jstring jdir, jstring jname,
                                                        jint from_start, jint no_create, jstring jurl,
                                                        jstring jstream)
{
	if (jdir == NULL || jname == NULL)
		return FLASH_EINVAL;
	struct fj_feed *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return FLASH_ENOMEM;
	int bad = 0;
	const char *dir = utf_or_null(env, jdir, &bad);
	const char *name = utf_or_null(env, jname, &bad);
	const char *url = utf_or_null(env, jurl, &bad);
	const char *stream = utf_or_null(env, jstream, &bad);
	int rc = FLASH_ENOMEM;
	if (!bad) {
		struct flash_feed_opts o;
		flash_feed_opts_default(&o);
		o.from_start = (uint32_t)from_start;
		o.no_create = (uint32_t)no_create;
		o.mysql_url = url;
		o.mysql_stream = stream;
		rc = flash_feed_open(dir, name, &o, &c->ff_f);
	}
	utf_release(env, jdir, dir);
	utf_release(env, jname, name);
	utf_release(env, jurl, url);
	utf_release(env, jstream, stream);
	if (rc != FLASH_OK) {
		free(c);
		return rc;
	}
	return (jlong)(intptr_t)c;
}

JNIEXPORT jobject JNICALL Java_flashstock_Native_feedIo(JNIEnv *env, jclass cls, jlong feed)
{
	return (*env)->NewDirectByteBuffer(env, &feed_of(feed)->ff_io, sizeof(feed_of(feed)->ff_io));
}

JNIEXPORT jint JNICALL Java_flashstock_Native_feedNext(JNIEnv *env, jclass cls, jlong feed, jint wait_ms)
{
	struct fj_feed *c = feed_of(feed);
	return flash_feed_next(c->ff_f, &c->ff_io.rec, (uint32_t)wait_ms);
}

JNIEXPORT jint JNICALL Java_flashstock_Native_feedCommit(JNIEnv *env, jclass cls, jlong feed, jlong lsn)
{
	return flash_feed_commit(feed_of(feed)->ff_f, (uint64_t)lsn);
}

JNIEXPORT jint JNICALL Java_flashstock_Native_feedRewind(JNIEnv *env, jclass cls, jlong feed)
{
	return flash_feed_rewind(feed_of(feed)->ff_f);
}

JNIEXPORT jint JNICALL Java_flashstock_Native_feedInfo(JNIEnv *env, jclass cls, jlong feed)
{
	struct fj_feed *c = feed_of(feed);
	return flash_feed_info_get(c->ff_f, &c->ff_io.info);
}

/* Contract: closes the feed and frees its cell; Java calls it once, with no
 * other call on the feed in progress. */
JNIEXPORT jint JNICALL Java_flashstock_Native_feedClose(JNIEnv *env, jclass cls, jlong feed)
{
	struct fj_feed *c = feed_of(feed);
	int rc = flash_feed_close(c->ff_f);
	free(c);
	return rc;
}

/* Contract: flash_feed_list into @p buf (a direct buffer of at least
 * cap * sizeof(struct flash_feed_info) bytes; null with cap 0 to count);
 * the number registered (it may exceed cap) or a negative code. */
JNIEXPORT jint JNICALL Java_flashstock_Native_feedList(JNIEnv *env, jclass cls, jstring jdir, jobject buf, jint cap)
{
	struct flash_feed_info *out = NULL;
	if (cap < 0)
		return FLASH_EINVAL;
	if (cap > 0) {
		if (buf == NULL ||
		    (*env)->GetDirectBufferCapacity(env, buf) < (jlong)cap * (jlong)sizeof(struct flash_feed_info))
			return FLASH_EINVAL;
		out = (*env)->GetDirectBufferAddress(env, buf);
		if (out == NULL)
			return FLASH_EINVAL;
	}
	size_t n = 0;
	if (jdir == NULL)
		return FLASH_EINVAL;
	const char *dir = (*env)->GetStringUTFChars(env, jdir, NULL);
	if (dir == NULL)
		return FLASH_ENOMEM;
	int rc = flash_feed_list(dir, out, (size_t)cap, &n);
	(*env)->ReleaseStringUTFChars(env, jdir, dir);
	if (rc != FLASH_OK)
		return rc;
	return n > 0x7fffffff ? 0x7fffffff : (jint)n;
}

static int feed_drop(JNIEnv *env, const char *dir, jstring jname)
{
	WITH_NAME(env, jname, name, flash_feed_drop(dir, name));
}

JNIEXPORT jint JNICALL Java_flashstock_Native_feedDrop(JNIEnv *env, jclass cls, jstring jdir, jstring jname)
{
	WITH_NAME(env, jdir, dir, feed_drop(env, dir, jname));
}

/* ------------------------------------------------------------ the bench's C baseline */

/*
 * Contract: n orders from C on this cell's handle, for users user_base+1 ..
 * user_base+n, quantity 1, by flash_order in a loop (batch 1) or by
 * flash_order_many in batches of `batch` orders: what the same orders cost
 * without the JVM, measured in the same process as the Java loop
 * (bench/flashstock/Bench.java).  Returns the elapsed CLOCK_MONOTONIC
 * nanoseconds, or the first failing order's code (negative).
 */
JNIEXPORT jlong JNICALL Java_flashstock_Native_benchOrdersC(JNIEnv *env, jclass cls, jlong cell, jint activity_id,
                                                            jint sku_id, jlong user_base, jint n, jint batch)
{
	/* the bench's C control: the same chain as the Java loop (a token
	 * issued before the timed part, a request id = the user), timed in C */
	struct fj_cell *c = cell_of(cell);
	struct flash_order_req *r;
	struct flash_order_res *res;
	struct timespec t0, t1;
	uint64_t *tok;
	int *rcs;
	jlong rc = FLASH_OK;

	if (n <= 0 || batch <= 0)
		return FLASH_EINVAL;
	tok = malloc((size_t)n * sizeof *tok);
	r = calloc((size_t)batch, sizeof *r);
	res = malloc((size_t)batch * sizeof *res);
	rcs = malloc((size_t)batch * sizeof *rcs);
	if (tok == NULL || r == NULL || res == NULL || rcs == NULL) {
		rc = FLASH_ENOMEM;
		goto out;
	}
	for (jint i = 0; i < batch; i++) {
		r[i].activity_id = (uint32_t)activity_id;
		r[i].sku_id = (uint32_t)sku_id;
		r[i].qty = 1;
	}
	for (jint i = 0; i < n; i++)
		if ((rc = flash_token_issue(c->fc_h, (uint32_t)activity_id, (uint32_t)sku_id,
		                            (uint64_t)user_base + (uint64_t)i + 1, 600000, &tok[i])) != FLASH_OK)
			goto out;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (batch == 1) {
		for (jint i = 0; i < n; i++) {
			r->user_id = (uint64_t)user_base + (uint64_t)i + 1;
			r->token = tok[i];
			r->request_id = r->user_id;
			if ((rc = flash_order(c->fc_h, r, res)) != FLASH_OK)
				goto out;
		}
	} else {
		for (jint i = 0; i < n; i += batch) {
			jint m = n - i < batch ? n - i : batch;
			for (jint j = 0; j < m; j++) {
				r[j].user_id = (uint64_t)user_base + (uint64_t)(i + j) + 1;
				r[j].token = tok[i + j];
				r[j].request_id = r[j].user_id;
			}
			if ((rc = flash_order_many(c->fc_h, r, (uint32_t)m, res, rcs)) != FLASH_OK)
				goto out;
			for (jint j = 0; j < m; j++)
				if ((rc = rcs[j]) != FLASH_OK)
					goto out;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	rc = (jlong)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
out:
	free(rcs);
	free(res);
	free(r);
	free(tok);
	return rc;
}
