/*
 * order_loop.c -- the C row of the bindings' side-by-side (bench/bindings.sh):
 * one thread, one hot sku, N orders in a loop, exactly what each binding's
 * bench program does (bindings/<lang>/bench), so the difference between the
 * rows is the cost of the language's call into the library:
 *
 *   flashstock  a private segment sized for W + N orders (its ring holds
 *               every record, so no consumer is needed), one activity (limit
 *               1 per user, token required), one sku of W + N units; tokens
 *               issued before the timed part; W = max(N/5, 1000) orders placed
 *               untimed first (the first touch of the tables' pages, as the
 *               other programs do); then N calls of flash_order(), one per
 *               new user, each with its token and request id = user:
 *               token redeem -> window -> per-user limit -> CAS deduct ->
 *               order record.
 *   redis-lua   with --redis-socket PATH (a private redis-server the caller
 *               started; it is flushed): the same chain as bench/seckill.lua
 *               called by EVALSHA through hiredis, one blocking call per
 *               order, tokens SET before the timed part, keys and arguments
 *               as bench/eng_redis.c passes them.
 *
 *   flashstock-batch  with --batch K (2..4096): the same N orders, K a
 *               flash_order_many() call.
 *
 * usage: flashstock-order-loop [--orders N] [--batch K] [--redis-socket PATH]
 *                              [--redis-orders M] [--lua FILE]
 * Prints one line per engine:
 *   bench binding=c engine=flashstock orders=N ns_per_order=X
 *      (engine=flashstock-batch with --batch K)
 *   bench binding=c engine=redis-lua orders=M ns_per_order=X
 * and exits 1 if any order of a timed part was refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef BENCH_HAVE_HIREDIS
#include <hiredis/hiredis.h>
#endif

#include "flashstock.h"

#define LOOP_ACTIVITY 1u
#define LOOP_SKU      10u
#define LOOP_BATCH_MAX 4096u

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int die(const char *what, int rc)
{
	fprintf(stderr, "flashstock-order-loop: %s: %s (%s)\n", what, flash_strerror(rc),
	        flash_rcname(rc));
	return 1;
}

static int loop_flashstock(uint32_t timed, uint32_t batch)
{
	uint32_t warm = timed / 5 > 1000 ? timed / 5 : 1000, n = warm + timed;
	struct flash_seg_opts o;
	char name[64];
	flash_t *h = NULL;
	int rc, bad = 0;

	flash_seg_opts_default(&o);
	o.max_activities = 1;
	o.max_skus = 1;
	o.max_shards = 1;
	o.max_users = n;
	o.max_tokens = n;
	o.max_orders = n + 128;
	o.max_requests = n;
	o.max_locks = 1;
	o.max_procs = 4;
	for (o.ring_records = FLASH_RING_MIN; o.ring_records < n + 16; o.ring_records <<= 1)
		;
	snprintf(name, sizeof name, "/fs-cloop-%ld", (long)getpid());
	if ((rc = flash_seg_create(name, &o)) != FLASH_OK)
		return die("create", rc);
	uint64_t *tok = calloc(n + 1, sizeof *tok);
	struct flash_activity a = { .id = LOOP_ACTIVITY, .limit_per_user = 1, .max_qty = 1,
	                            .flags = FLASH_ACT_TOKEN_REQUIRED, .start_ns = 0,
	                            .end_ns = INT64_MAX };
	if (tok == NULL) {
		bad = die("calloc", FLASH_ENOMEM);
		goto out;
	}
	if ((rc = flash_open(name, 0, &h)) != FLASH_OK || (rc = flash_activity_add(h, &a)) != FLASH_OK ||
	    (rc = flash_sku_add(h, LOOP_ACTIVITY, LOOP_SKU, n, 1)) != FLASH_OK) {
		bad = die("setup", rc);
		goto out;
	}
	for (uint32_t u = 1; u <= n; u++)
		if ((rc = flash_token_issue(h, LOOP_ACTIVITY, LOOP_SKU, u, 600000, &tok[u])) != FLASH_OK) {
			bad = die("token_issue", rc);
			goto out;
		}
	uint64_t t0 = 0;
	for (uint32_t u = 1; u <= warm; u++) {
		struct flash_order_req r = { .activity_id = LOOP_ACTIVITY, .sku_id = LOOP_SKU,
		                             .user_id = u, .qty = 1, .token = tok[u], .request_id = u };
		struct flash_order_res res;
		if ((rc = flash_order(h, &r, &res)) != FLASH_OK) {
			bad = die("order", rc);
			goto out;
		}
	}
	t0 = now_ns();
	if (batch <= 1) {
		for (uint32_t u = warm + 1; u <= n; u++) {
			struct flash_order_req r = { .activity_id = LOOP_ACTIVITY, .sku_id = LOOP_SKU,
			                             .user_id = u, .qty = 1, .token = tok[u],
			                             .request_id = u };
			struct flash_order_res res;
			if ((rc = flash_order(h, &r, &res)) != FLASH_OK) {
				bad = die("order", rc);
				goto out;
			}
		}
	} else {
		/* --batch K: the same orders, K a flash_order_many call (the last
		 * call takes what is left); the requests are filled in the loop,
		 * as a caller would */
		struct flash_order_req q[LOOP_BATCH_MAX];
		struct flash_order_res res[LOOP_BATCH_MAX];
		int rcs[LOOP_BATCH_MAX];

		for (uint32_t u = warm + 1; u <= n; u += batch) {
			uint32_t k = n - u + 1 < batch ? n - u + 1 : batch;

			for (uint32_t i = 0; i < k; i++)
				q[i] = (struct flash_order_req){ .activity_id = LOOP_ACTIVITY, .sku_id = LOOP_SKU,
				                                 .user_id = u + i, .qty = 1, .token = tok[u + i],
				                                 .request_id = u + i };
			if ((rc = flash_order_many(h, q, k, res, rcs)) != FLASH_OK) {
				bad = die("order_many", rc);
				goto out;
			}
			for (uint32_t i = 0; i < k; i++)
				if (rcs[i] != FLASH_OK) {
					bad = die("order_many: an order", rcs[i]);
					goto out;
				}
		}
	}
	uint64_t t1 = now_ns();
	printf("bench binding=c engine=%s orders=%u ns_per_order=%.1f\n",
	       batch <= 1 ? "flashstock" : "flashstock-batch", timed, (double)(t1 - t0) / timed);
out:
	if (h != NULL)
		flash_close(h);
	flash_seg_destroy(name);
	free(tok);
	return bad;
}

#ifdef BENCH_HAVE_HIREDIS
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return NULL;
	static char buf[8192];
	size_t k = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[k] = '\0';
	return buf;
}

static int loop_redis(const char *sock, uint32_t n, const char *lua)
{
	char *src = slurp(lua);
	if (src == NULL) {
		fprintf(stderr, "flashstock-order-loop: cannot read %s\n", lua);
		return 1;
	}
	redisContext *c = redisConnectUnix(sock);
	if (c == NULL || c->err) {
		fprintf(stderr, "flashstock-order-loop: redis %s: %s\n", sock, c ? c->errstr : "no memory");
		return 1;
	}
	int bad = 0;
	redisReply *r = redisCommand(c, "FLUSHALL");
	freeReplyObject(r);
	r = redisCommand(c, "SCRIPT LOAD %s", src);
	if (r == NULL || r->type != REDIS_REPLY_STRING) {
		fprintf(stderr, "flashstock-order-loop: SCRIPT LOAD failed\n");
		freeReplyObject(r);
		redisFree(c);
		return 1;
	}
	char sha[64];
	snprintf(sha, sizeof sha, "%s", r->str);
	freeReplyObject(r);
	r = redisCommand(c, "SET stock:%u %u", LOOP_SKU, n);
	freeReplyObject(r);
	for (uint32_t u = 1; u <= n; u++)
		redisAppendCommand(c, "SET tok:%u %u:%u", u, u, LOOP_SKU);
	for (uint32_t u = 1; u <= n; u++) {
		if (redisGetReply(c, (void **)&r) != REDIS_OK) {
			fprintf(stderr, "flashstock-order-loop: SET tok failed\n");
			redisFree(c);
			return 1;
		}
		freeReplyObject(r);
	}
	uint64_t t0 = now_ns();
	for (uint32_t u = 1; u <= n && !bad; u++) {
		r = redisCommand(c, "EVALSHA %s 4 tok:%u buyers:%u stock:%u orders:%u %u:%u %u 1 %u", sha, u,
		                 LOOP_ACTIVITY, LOOP_SKU, LOOP_ACTIVITY, u, LOOP_SKU, u, LOOP_SKU);
		if (r == NULL || r->type != REDIS_REPLY_INTEGER || r->integer <= 0) {
			fprintf(stderr, "flashstock-order-loop: redis order of user %u refused\n", u);
			bad = 1;
		}
		freeReplyObject(r);
	}
	uint64_t t1 = now_ns();
	if (!bad)
		printf("bench binding=c engine=redis-lua orders=%u ns_per_order=%.1f\n", n,
		       (double)(t1 - t0) / n);
	redisFree(c);
	return bad;
}
#endif

int main(int argc, char **argv)
{
	uint32_t n = 200000, rn = 0, batch = 1;
	const char *sock = NULL, *lua = "bench/seckill.lua";

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--orders") == 0 && i + 1 < argc)
			n = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--redis-orders") == 0 && i + 1 < argc)
			rn = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--redis-socket") == 0 && i + 1 < argc)
			sock = argv[++i];
		else if (strcmp(argv[i], "--lua") == 0 && i + 1 < argc)
			lua = argv[++i];
		else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc)
			batch = (uint32_t)strtoul(argv[++i], NULL, 10);
		else {
			fprintf(stderr, "usage: flashstock-order-loop [--orders N] [--batch K] "
			                "[--redis-socket PATH] [--redis-orders M] [--lua FILE]\n");
			return 2;
		}
	}
	if (n == 0 || n > FLASH_CAP_MAX / 2) {
		fprintf(stderr, "flashstock-order-loop: --orders must be 1..%u\n", FLASH_CAP_MAX / 2);
		return 2;
	}
	if (batch == 0 || batch > LOOP_BATCH_MAX) {
		fprintf(stderr, "flashstock-order-loop: --batch must be 1..%u\n", LOOP_BATCH_MAX);
		return 2;
	}
	int bad = loop_flashstock(n, batch);
	if (sock != NULL) {
#ifdef BENCH_HAVE_HIREDIS
		bad |= loop_redis(sock, rn ? rn : n, lua);
#else
		fprintf(stderr, "flashstock-order-loop: built without hiredis: no redis-lua row\n");
		bad = 1;
#endif
	}
	return bad;
}
