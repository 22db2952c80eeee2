/*
 * eng_redis.c -- the Redis + Lua baseline: the seeds' order chain as one
 * script (bench/seckill.lua) called by EVALSHA through hiredis, against a
 * private redis-server the bench starts on a unix socket in a temp dir and
 * stops afterwards.
 *
 *   redis-lua            many connections, one request in flight on each
 *                        (default 50 over all processes)
 *   redis-lua-pipelined  one connection per thread, --redis-depth requests
 *                        in flight on it (default 32), refilled as replies come
 *
 * Durability: "none" runs with --save '' --appendonly no; "sync" with
 * --appendonly yes --appendfsync always (Redis fsyncs the AOF before it
 * answers the clients whose writes that event-loop turn took).
 *
 * Tokens are pre-issued before the timed part (SET tok:<token> "<user>:<sku>"),
 * as the flashstock side issues its tokens before its timed part too.
 *
 * Records: the list orders:<activity> ("<user>:<sku>:<qty>", position = order
 * number) and the set cancelled:<activity>; verify() counts sold units per sku
 * and orders per user from them, and compares with stock:<sku>.
 *
 * Divisions: 1. server  2. setup/teardown  3. worker loop  4. verify
 */
#include "bench.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lua_scripts.h"

struct redis_state {
	char  dir[128];          /* mkdtemp: socket, log, AOF */
	char  sock[192];
	pid_t pid;               /* redis-server */
	char  sha_order[48];
	char  sha_cancel[48];
	uint32_t conns;          /* connections per thread */
	uint32_t depth;          /* requests in flight per connection */
};

/* ------------------------------------------------------------------------
 * 1. Server
 * ------------------------------------------------------------------------ */

static redisContext *connect_unix(const char *sock, double timeout_s)
{
	uint64_t end = bench_now_ns() + (uint64_t)(timeout_s * 1e9);
	redisContext *c;

	for (;;) {
		c = redisConnectUnix(sock);
		if (c && !c->err)
			return c;
		if (c)
			redisFree(c);
		if (bench_now_ns() > end)
			return NULL;
		usleep(10000);
	}
}

static int start_server(struct bench_run *run, struct redis_state *st)
{
	char logf[192], *argv[32];
	int n = 0;
	int sync = run->dur == BENCH_DUR_SYNC;

	if (bench_mkdtemp(st->dir, sizeof(st->dir)) != 0) {
		snprintf(run->err, sizeof(run->err), "mkdtemp: %s", strerror(errno));
		return -1;
	}
	snprintf(st->sock, sizeof(st->sock), "%s/redis.sock", st->dir);
	snprintf(logf, sizeof(logf), "%s/redis.log", st->dir);
	argv[n++] = (char *)run->cfg.redis_server;
	argv[n++] = "--port";          argv[n++] = "0";
	argv[n++] = "--unixsocket";    argv[n++] = st->sock;
	argv[n++] = "--unixsocketperm"; argv[n++] = "700";
	argv[n++] = "--dir";           argv[n++] = st->dir;
	argv[n++] = "--logfile";       argv[n++] = logf;
	argv[n++] = "--daemonize";     argv[n++] = "no";
	argv[n++] = "--save";          argv[n++] = "";
	argv[n++] = "--maxclients";    argv[n++] = "1100";
	argv[n++] = "--appendonly";    argv[n++] = sync ? "yes" : "no";
	if (sync) {
		argv[n++] = "--appendfsync"; argv[n++] = "always";
	}
	argv[n] = NULL;
	st->pid = fork();
	if (st->pid < 0) {
		snprintf(run->err, sizeof(run->err), "fork: %s", strerror(errno));
		return -1;
	}
	if (st->pid == 0) {
		/* the server dies with the bench, even if the bench is killed */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execvp(argv[0], argv);
		_exit(127);
	}
	return 0;
}

static void stop_server(struct redis_state *st)
{
	redisContext *c;
	int i, status;

	if (st->pid <= 0)
		return;
	c = redisConnectUnix(st->sock);
	if (c && !c->err) {
		redisReply *r = redisCommand(c, "SHUTDOWN NOSAVE");
		if (r)
			freeReplyObject(r);
	}
	if (c)
		redisFree(c);
	for (i = 0; i < 300; i++) {
		if (waitpid(st->pid, &status, WNOHANG) == st->pid) {
			st->pid = 0;
			return;
		}
		usleep(10000);
	}
	kill(st->pid, SIGKILL);
	waitpid(st->pid, &status, 0);
	st->pid = 0;
}

/* ------------------------------------------------------------------------
 * 2. Setup and teardown
 * ------------------------------------------------------------------------ */

static int reply_ok(struct bench_run *run, redisContext *c, redisReply *r, const char *what)
{
	if (!r) {
		snprintf(run->err, sizeof(run->err), "%s: %s", what, c->errstr);
		return -1;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		snprintf(run->err, sizeof(run->err), "%s: %s", what, r->str);
		freeReplyObject(r);
		return -1;
	}
	return 0;
}

static int load_script(struct bench_run *run, redisContext *c, const char *src, char *sha)
{
	redisReply *r = redisCommand(c, "SCRIPT LOAD %s", src);

	if (reply_ok(run, c, r, "SCRIPT LOAD"))
		return -1;
	snprintf(sha, 48, "%s", r->str ? r->str : "");
	freeReplyObject(r);
	return 0;
}

static void redis_shape(struct bench_run *run)
{
	uint32_t nw = run->cfg.procs * run->cfg.threads;

	if (run->eng->variant) {
		snprintf(run->conc, sizeof(run->conc), "%ux%u, %u conns x depth %u", run->cfg.procs,
		         run->cfg.threads, nw, run->cfg.redis_depth);
	} else {
		uint32_t per = (run->cfg.redis_conns + nw - 1) / nw;
		snprintf(run->conc, sizeof(run->conc), "%ux%u, %u conns", run->cfg.procs,
		         run->cfg.threads, per * nw);
	}
}

static int redis_setup(struct bench_run *run)
{
	struct redis_state *st = calloc(1, sizeof(*st));
	uint32_t nw = run->cfg.procs * run->cfg.threads, s, nsku = bench_skus(run->wl);
	redisContext *c;
	redisReply *r;
	char *order_src;
	int rc = -1;

	if (!st)
		return -1;
	run->eng_state = st;
	if (run->eng->variant) {
		st->conns = 1;
		st->depth = run->cfg.redis_depth;
	} else {
		st->conns = (run->cfg.redis_conns + nw - 1) / nw;
		st->depth = 1;
	}
	if (start_server(run, st))
		return -1;
	c = connect_unix(st->sock, 10.0);
	if (!c) {
		snprintf(run->err, sizeof(run->err), "redis-server (%s) did not answer on %s",
		         run->cfg.redis_server, st->sock);
		return -1;
	}
	/* the order script, without its stock check when breaking the baseline */
	order_src = strdup(bench_lua_seckill);
	if (!order_src)
		goto out;
	if (run->cfg.break_baseline) {
		char *p = strstr(order_src, "if avail < qty");
		char *e = p ? strchr(p, '\n') : NULL;
		if (!p || !e || !strstr(p, "stock-check"))
			goto out;
		memmove(p, e, strlen(e) + 1);
		snprintf(run->note, sizeof(run->note), "BROKEN BASELINE (test): stock check removed");
	}
	if (load_script(run, c, order_src, st->sha_order) ||
	    load_script(run, c, bench_lua_seckill_cancel, st->sha_cancel))
		goto out;
	/* stock */
	for (s = 1; s <= nsku; s++)
		redisAppendCommand(c, "SET stock:%u %llu", s,
		                   (unsigned long long)bench_sku_units(&run->cfg, run->wl, run->total_units, s));
	for (s = 1; s <= nsku; s++) {
		if (redisGetReply(c, (void **)&r) != REDIS_OK || reply_ok(run, c, r, "SET stock"))
			goto out;
		freeReplyObject(r);
	}
	rc = 0;
out:
	free(order_src);
	redisFree(c);
	return rc;
}

static void redis_teardown(struct bench_run *run)
{
	struct redis_state *st = run->eng_state;

	if (!st)
		return;
	stop_server(st);
	if (st->dir[0])
		bench_rmtree(st->dir);
	free(st);
	run->eng_state = NULL;
}

/* ------------------------------------------------------------------------
 * 3. Worker loop
 * ------------------------------------------------------------------------ */

struct inflight {
	uint64_t idx;   /* request index */
	uint64_t t0;    /* start (closed loop) or intended start (open loop) */
	uint64_t no;    /* cancel: order number sent */
	uint32_t sku;
};

struct conn {
	redisContext *c;
	struct inflight *q;   /* FIFO, depth entries */
	uint32_t head, n;
};

/* Issue the tokens of this thread's order requests, pipelined, before go. */
static int issue_tokens(struct bench_worker *w, redisContext *c)
{
	uint64_t i, sent = 0, got = 0;
	redisReply *r;

	for (i = 0; i < w->nreq; i++) {
		struct bench_req *q = &w->req[i];
		if (q->kind != BENCH_OP_ORDER)
			continue;
		q->token = ((uint64_t)(w->gtid + 1) << 40) | (i + 1);
		redisAppendCommand(c, "SET tok:%llu %llu:%u", (unsigned long long)q->token,
		                   (unsigned long long)q->user, q->sku);
		sent++;
		if (sent - got >= 1000 || i + 1 == w->nreq) {
			for (; got < sent; got++) {
				if (redisGetReply(c, (void **)&r) != REDIS_OK) {
					bench_fail(w, "token SET: %s", c->errstr);
					return -1;
				}
				freeReplyObject(r);
			}
		}
	}
	for (; got < sent; got++) {
		if (redisGetReply(c, (void **)&r) != REDIS_OK) {
			bench_fail(w, "token SET: %s", c->errstr);
			return -1;
		}
		freeReplyObject(r);
	}
	return 0;
}

static void send_req(struct bench_worker *w, struct redis_state *st, struct conn *cn,
                     uint64_t idx, uint64_t t0)
{
	struct bench_req *q = &w->req[idx];
	struct inflight *f = &cn->q[(cn->head + cn->n) % st->depth];

	f->idx = idx;
	f->t0 = t0;
	f->no = 0;
	f->sku = q->sku;
	switch (q->kind) {
	case BENCH_OP_ORDER:
		redisAppendCommand(cn->c, "EVALSHA %s 4 tok:%llu buyers:%u stock:%u orders:%u %llu:%u %llu 1 %u",
		                   st->sha_order, (unsigned long long)q->token, BENCH_ACTIVITY, q->sku,
		                   BENCH_ACTIVITY, (unsigned long long)q->user, q->sku,
		                   (unsigned long long)q->user, q->sku);
		break;
	case BENCH_OP_QUERY:
		redisAppendCommand(cn->c, "GET stock:%u", q->sku);
		break;
	default:
		if (!bench_own_pop(w, &f->no, &f->sku)) {
			f->no = 0;
			f->sku = q->sku;
		}
		redisAppendCommand(cn->c, "EVALSHA %s 3 orders:%u cancelled:%u stock:%u %llu",
		                   st->sha_cancel, BENCH_ACTIVITY, BENCH_ACTIVITY, f->sku,
		                   (unsigned long long)f->no);
		break;
	}
	cn->n++;
}

/* Outcome of a reply to request @p f. */
static int outcome(struct bench_worker *w, const struct inflight *f, redisReply *r)
{
	struct bench_req *q = &w->req[f->idx];

	if (r->type == REDIS_REPLY_ERROR) {
		bench_fail(w, "redis: %s", r->str);
		return BENCH_RC_ERROR;
	}
	if (q->kind == BENCH_OP_QUERY)
		return r->type == REDIS_REPLY_STRING ? BENCH_RC_OK : BENCH_RC_ERROR;
	if (r->type != REDIS_REPLY_INTEGER) {
		bench_fail(w, "redis: unexpected reply type %d", r->type);
		return BENCH_RC_ERROR;
	}
	if (q->kind == BENCH_OP_ORDER) {
		if (r->integer > 0) {
			bench_own_push(w, (uint64_t)r->integer, q->sku);
			return BENCH_RC_OK;
		}
		switch (r->integer) {
		case -1: return BENCH_RC_SOLD_OUT;
		case -2: return BENCH_RC_LIMIT;
		case -6: return BENCH_RC_BAD_TOKEN;
		}
	} else {
		if (r->integer > 0)
			return BENCH_RC_OK;
		switch (r->integer) {
		case -5:  return BENCH_RC_NOT_FOUND;
		case -23: return BENCH_RC_CANCELLED;
		}
	}
	bench_fail(w, "redis: unexpected result %lld", r->integer);
	return BENCH_RC_ERROR;
}

static int flush_conn(struct bench_worker *w, struct conn *cn)
{
	int done = 0;

	while (!done)
		if (redisBufferWrite(cn->c, &done) != REDIS_OK) {
			bench_fail(w, "redis write: %s", cn->c->errstr);
			return -1;
		}
	return 0;
}

/*
 * The multiplexing loop: every connection keeps up to depth requests in
 * flight; replies are matched FIFO.  Closed loop: a request's latency runs
 * from its send.  Open loop: requests are sent at their intended times
 * (as long as a connection has room) and latency runs from the intended
 * time, so time spent waiting for a free connection is charged too.
 */
static int redis_thread(struct bench_worker *w)
{
	struct redis_state *st = w->run->eng_state;
	/* the connection count, loaded once: every loop below and the cleanup
	 * walk the same connections (the calls in between take st along) */
	const uint32_t nconn = st->conns;
	const struct bench_cfg *cfg = &w->run->cfg;
	struct bench_wstat *ws = w->st;
	struct conn *cn;
	struct pollfd *pfd;
	uint64_t warm = cfg->warmup < w->nreq ? cfg->warmup : w->nreq;
	uint64_t next = 0, done = 0, limit = w->nreq, start = 0, deadline = UINT64_MAX;
	uint64_t interval = 0, last = 0;
	uint32_t i;
	int rc = -1;

	cn = calloc(nconn, sizeof(*cn));
	pfd = calloc(nconn, sizeof(*pfd));
	if (!cn || !pfd) {
		bench_fail(w, "out of memory");
		goto out;
	}
	for (i = 0; i < nconn; i++) {
		cn[i].c = connect_unix(st->sock, 5.0);
		cn[i].q = calloc(st->depth, sizeof(struct inflight));
		if (!cn[i].c || !cn[i].q) {
			bench_fail(w, "connect %s failed", st->sock);
			goto out;
		}
	}
	if (issue_tokens(w, cn[0].c))
		goto out;
	if (cfg->rate > 0)
		interval = (uint64_t)(1e9 * w->run->sh->sh_nworkers / cfg->rate);
	if (bench_barrier(w))
		goto out;
	if (warm == 0) {
		start = bench_now_ns();
		ws->ws_t_start = start;
		if (cfg->duration_s > 0)
			deadline = start + (uint64_t)(cfg->duration_s * 1e9);
	}
	while (done < next || next < limit) {
		uint64_t now = bench_now_ns(), wait_ns = UINT64_MAX;
		int n;
		/* send */
		for (i = 0; i < nconn && next < limit; i++) {
			int sent = 0;
			while (cn[i].n < st->depth && next < limit) {
				uint64_t t0 = now;
				if (next == warm && start == 0) {
					start = now;
					ws->ws_t_start = start;
					if (cfg->duration_s > 0)
						deadline = start + (uint64_t)(cfg->duration_s * 1e9);
				}
				if (next >= warm && now > deadline) {
					limit = next;     /* duration reached: send no more */
					break;
				}
				if (interval && next >= warm) {
					t0 = start + (next - warm) * interval;
					if (t0 > now) {
						wait_ns = t0 - now;
						break;
					}
				}
				send_req(w, st, &cn[i], next, t0);
				next++;
				sent = 1;
			}
			if (sent && flush_conn(w, &cn[i]))
				goto out;
			if (wait_ns != UINT64_MAX)
				break;
		}
		if (done == next) {
			if (wait_ns != UINT64_MAX) {   /* open loop, idle: sleep until due */
				struct timespec ts = { (time_t)(wait_ns / 1000000000u),
				                       (long)(wait_ns % 1000000000u) };
				nanosleep(&ts, NULL);
			}
			continue;
		}
		/* receive */
		for (i = 0; i < nconn; i++) {
			pfd[i].fd = cn[i].c->fd;
			pfd[i].events = cn[i].n ? POLLIN : 0;
			pfd[i].revents = 0;
		}
		if (wait_ns != UINT64_MAX) {
			struct timespec ts = { (time_t)(wait_ns / 1000000000u), (long)(wait_ns % 1000000000u) };
			n = ppoll(pfd, nconn, &ts, NULL);
		} else {
			n = poll(pfd, nconn, 1000);
		}
		if (n < 0 && errno != EINTR) {
			bench_fail(w, "poll: %s", strerror(errno));
			goto out;
		}
		for (i = 0; i < nconn && n > 0; i++) {
			void *rp;
			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (redisBufferRead(cn[i].c) != REDIS_OK) {
				bench_fail(w, "redis read: %s", cn[i].c->errstr);
				goto out;
			}
			for (;;) {
				struct inflight *f;
				uint64_t t1;
				int oc;
				if (redisGetReplyFromReader(cn[i].c, &rp) != REDIS_OK) {
					bench_fail(w, "redis reply: %s", cn[i].c->errstr);
					goto out;
				}
				if (!rp)
					break;
				if (cn[i].n == 0) {
					freeReplyObject(rp);
					bench_fail(w, "redis: reply without request");
					goto out;
				}
				f = &cn[i].q[cn[i].head];
				cn[i].head = (cn[i].head + 1) % st->depth;
				cn[i].n--;
				t1 = bench_now_ns();
				oc = outcome(w, f, rp);
				freeReplyObject(rp);
				if (oc == BENCH_RC_ERROR)
					goto out;
				if (oc == BENCH_RC_OK) {
					if (w->req[f->idx].kind == BENCH_OP_ORDER)
						ws->ws_acked++;
					else if (w->req[f->idx].kind == BENCH_OP_CANCEL)
						ws->ws_cancel_ok++;
				}
				if (f->idx >= warm) {
					bench_record(w, oc, (int)w->req[f->idx].kind, t1 - f->t0);
					last = t1;
				}
				done++;
			}
		}
		__atomic_store_n(&ws->ws_progress, done, __ATOMIC_RELAXED);
		if (__atomic_load_n(&w->run->sh->sh_abort, __ATOMIC_RELAXED))
			limit = next;
	}
	ws->ws_t_end = last;
	rc = 0;
out:
	if (cn)
		for (i = 0; i < nconn; i++) {
			if (cn[i].c)
				redisFree(cn[i].c);
			free(cn[i].q);
		}
	free(cn);
	free(pfd);
	return rc;
}

/* ------------------------------------------------------------------------
 * 4. Verify
 * ------------------------------------------------------------------------ */

static int redis_verify(struct bench_run *run, struct bench_check *out)
{
	struct redis_state *st = run->eng_state;
	uint32_t nsku = bench_skus(run->wl), s;
	uint64_t len, i, *units = NULL;
	uint8_t *cancelled = NULL;
	struct bench_u64map users = { 0 };
	redisContext *c;
	redisReply *r = NULL;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	c = connect_unix(st->sock, 5.0);
	if (!c) {
		snprintf(run->err, sizeof(run->err), "verify: cannot connect");
		return -1;
	}
	r = redisCommand(c, "LLEN orders:%u", BENCH_ACTIVITY);
	if (reply_ok(run, c, r, "LLEN"))
		goto out;
	len = (uint64_t)r->integer;
	freeReplyObject(r);
	r = NULL;
	units = calloc(nsku + 1, sizeof(*units));
	cancelled = calloc(len + 1, 1);
	if (!units || !cancelled || bench_map_init(&users, len + 1)) {
		snprintf(run->err, sizeof(run->err), "out of memory");
		goto out;
	}
	r = redisCommand(c, "SMEMBERS cancelled:%u", BENCH_ACTIVITY);
	if (reply_ok(run, c, r, "SMEMBERS"))
		goto out;
	for (i = 0; i < r->elements; i++) {
		uint64_t no = strtoull(r->element[i]->str, NULL, 10);
		if (no >= 1 && no <= len)
			cancelled[no] = 1;
	}
	freeReplyObject(r);
	r = NULL;
	for (i = 0; i < len; i += 10000) {
		uint64_t j;
		r = redisCommand(c, "LRANGE orders:%u %llu %llu", BENCH_ACTIVITY,
		                 (unsigned long long)i, (unsigned long long)(i + 9999));
		if (reply_ok(run, c, r, "LRANGE"))
			goto out;
		for (j = 0; j < r->elements; j++) {
			unsigned long long user, qty;
			unsigned sku;
			if (sscanf(r->element[j]->str, "%llu:%u:%llu", &user, &sku, &qty) != 3 ||
			    sku < 1 || sku > nsku) {
				snprintf(run->err, sizeof(run->err), "bad order record '%s'", r->element[j]->str);
				goto out;
			}
			out->orders++;
			if (!cancelled[i + j + 1])
				units[sku] += qty;
			(*bench_map_slot(&users, user))++;
		}
		freeReplyObject(r);
		r = NULL;
	}
	for (s = 1; s <= nsku; s++)
		redisAppendCommand(c, "GET stock:%u", s);
	for (s = 1; s <= nsku; s++) {
		uint64_t loaded = bench_sku_units(&run->cfg, run->wl, run->total_units, s);
		long long avail;
		int64_t d;
		if (redisGetReply(c, (void **)&r) != REDIS_OK || reply_ok(run, c, r, "GET stock"))
			goto out;
		avail = r->str ? strtoll(r->str, NULL, 10) : 0;
		freeReplyObject(r);
		r = NULL;
		out->loaded += loaded;
		out->sold += units[s];
		if (units[s] > loaded)
			out->oversold += (int64_t)(units[s] - loaded);
		d = (int64_t)loaded - (int64_t)units[s] - avail;
		out->mismatch += d < 0 ? -d : d;
	}
	for (i = 0; i < users.cap; i++)
		if (users.key[i] && users.val[i] > 1)
			out->duplicates++;
	rc = 0;
out:
	if (r)
		freeReplyObject(r);
	redisFree(c);
	free(units);
	free(cancelled);
	bench_map_free(&users);
	return rc;
}

const struct bench_engine bench_eng_redis = {
	.name = "redis-lua",
	.variant = 0,
	.shape = redis_shape,
	.setup = redis_setup,
	.thread = redis_thread,
	.verify = redis_verify,
	.teardown = redis_teardown,
	.durs = (1u << BENCH_DUR_NONE) | (1u << BENCH_DUR_SYNC),
};

const struct bench_engine bench_eng_redis_pipe = {
	.name = "redis-lua-pipelined",
	.variant = 1,
	.shape = redis_shape,
	.setup = redis_setup,
	.thread = redis_thread,
	.verify = redis_verify,
	.teardown = redis_teardown,
	.durs = (1u << BENCH_DUR_NONE) | (1u << BENCH_DUR_SYNC),
};
