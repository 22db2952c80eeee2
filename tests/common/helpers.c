/*
 * helpers.c -- shared fixtures for the engine's cmocka tests (see helpers.h).
 *
 * Divisions: segments and handles; catalog shortcuts; snapshots; records and
 * ledgers; processes.
 */
#include "helpers.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- 1. Segments and handles ------------------------------------------- */

#define T_MAX_TRACK 256

static char t_names[T_MAX_TRACK][64];
static int t_nnames;
static flash_t *t_handles[T_MAX_TRACK];
static int t_nhandles;
static unsigned t_counter;
static int t_atexit_set;

static pid_t t_owner_pid;

static void t_unlink_all(void)
{
	if (getpid() != t_owner_pid)
		return;   /* a forked child: the names belong to the parent */
	for (int i = 0; i < t_nnames; i++)
		(void)shm_unlink(t_names[i]);
	t_nnames = 0;
}

/* A test ended by a signal (an alarm() guard, ctest's timeout) still
 * removes its segments; shm_unlink is a plain unlink, async-signal-safe. */
static void t_on_signal(int sig)
{
	if (getpid() == t_owner_pid)
		for (int i = 0; i < t_nnames; i++)
			(void)shm_unlink(t_names[i]);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void t_cleanup_once(void)
{
	static const int sigs[] = { SIGALRM, SIGTERM, SIGINT, SIGHUP };

	if (t_atexit_set)
		return;
	t_atexit_set = 1;
	t_owner_pid = getpid();
	atexit(t_unlink_all);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		signal(sigs[i], t_on_signal);
}

void t_opts_small(struct flash_seg_opts *o)
{
	flash_seg_opts_default(o);
	o->max_activities = 8;
	o->max_skus = 16;
	o->max_shards = 64;
	o->max_users = 256;
	o->max_tokens = 64;
	o->max_orders = 1024;
	o->max_requests = 64;
	o->max_locks = 8;
	o->max_procs = 8;
	o->ring_records = 1024;
	o->mode = 0600;
	o->gid = -1;
	o->durability = FLASH_DURABILITY_ASYNC;
}

const char *t_segname(char *buf, size_t len)
{
	snprintf(buf, len, "/fs-test-%ld-%u", (long)getpid(), t_counter++);
	t_cleanup_once();
	if (t_nnames < T_MAX_TRACK)
		snprintf(t_names[t_nnames++], sizeof t_names[0], "%s", buf);
	return buf;
}

void t_track_handle(flash_t *h)
{
	if (h && t_nhandles < T_MAX_TRACK)
		t_handles[t_nhandles++] = h;
}

void t_untrack_handle(flash_t *h)
{
	for (int i = 0; i < t_nhandles; i++)
		if (t_handles[i] == h) {
			t_handles[i] = t_handles[--t_nhandles];
			return;
		}
}

flash_t *t_seg_new(const struct flash_seg_opts *o, char *name, size_t len)
{
	struct flash_seg_opts def;
	flash_t *h = NULL;
	int rc;

	if (!o) {
		t_opts_small(&def);
		o = &def;
	}
	t_segname(name, len);
	rc = flash_seg_create(name, o);
	if (rc != FLASH_OK)
		fail_msg("flash_seg_create(%s): %s", name, flash_rcname(rc));
	rc = flash_open(name, 0, &h);
	if (rc != FLASH_OK)
		fail_msg("flash_open(%s): %s", name, flash_rcname(rc));
	t_track_handle(h);
	return h;
}

int t_teardown(void **state)
{
	(void)state;
	while (t_nhandles > 0)
		(void)flash_close(t_handles[--t_nhandles]);
	t_unlink_all();
	return 0;
}

void t_shm_path(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "/dev/shm/%s", name[0] == '/' ? name + 1 : name);
}

/* ---- 2. Catalog shortcuts ---------------------------------------------- */

int64_t t_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void t_sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

int t_activity(flash_t *h, uint32_t id, uint32_t k, uint32_t max_qty,
               uint32_t scope, uint32_t flags)
{
	int64_t now = t_now_ns();
	struct flash_activity a = {
		.id = id, .limit_per_user = k, .max_qty = max_qty, .scope = scope,
		.flags = flags, .day_offset_s = 0,
		.start_ns = now - 3600LL * 1000000000LL,
		.end_ns = now + 3600LL * 1000000000LL,
	};
	return flash_activity_add(h, &a);
}

int t_order(flash_t *h, uint32_t act, uint32_t sku, uint64_t user, uint32_t qty,
            uint64_t token, uint64_t request_id, struct flash_order_res *res)
{
	struct flash_order_req r = {
		.activity_id = act, .sku_id = sku, .user_id = user, .qty = qty,
		.token = token, .request_id = request_id,
	};
	return flash_order(h, &r, res);
}

uint64_t t_available(flash_t *h, uint32_t act, uint32_t sku)
{
	struct flash_sku_info si;
	int rc = flash_sku_get(h, act, sku, &si);

	if (rc != FLASH_OK)
		fail_msg("flash_sku_get(%u, %u): %s", act, sku, flash_rcname(rc));
	return si.available;
}

/* ---- 3. Snapshots ------------------------------------------------------- */

void t_snap_take(flash_t *h, struct t_snap *s)
{
	int rc;

	memset(s, 0, sizeof *s);
	rc = flash_stats_get(h, &s->st);
	if (rc != FLASH_OK)
		fail_msg("flash_stats_get: %s", flash_rcname(rc));
	s->orders_max = flash_orders_max(h);
	for (uint32_t i = 0; i < T_SNAP_SKUS; i++) {
		rc = flash_sku_at(h, i, &s->sku[i]);
		if (rc == FLASH_ENOT_FOUND)
			break;
		if (rc == FLASH_EARCHIVED)   /* a freed entry: zeros, so a reuse shows */
			memset(&s->sku[i], 0, sizeof s->sku[i]);
		else if (rc != FLASH_OK)
			fail_msg("flash_sku_at(%u): %s", i, flash_rcname(rc));
		s->nsku = i + 1;
	}
}

#define T_CMP(field) do { \
		if (a->field != b->field) { \
			print_error("%s:%d: state changed: %s was %llu, now %llu\n", file, line, \
			            #field, (unsigned long long)a->field, (unsigned long long)b->field); \
			bad = 1; \
		} \
	} while (0)

void t_snap_compare(const struct t_snap *a, const struct t_snap *b, unsigned ign,
                    const char *file, int line)
{
	int bad = 0;

	T_CMP(st.orders);
	T_CMP(st.cancels);
	T_CMP(st.activities);
	T_CMP(st.skus);
	T_CMP(st.shards);
	T_CMP(st.users);
	if (!(ign & T_IGN_TOKENS))
		T_CMP(st.tokens);
	if (!(ign & T_IGN_REQUESTS))
		T_CMP(st.requests);
	T_CMP(st.locks);
	T_CMP(st.procs);
	T_CMP(st.orders_used);
	T_CMP(orders_max);
	T_CMP(nsku);
	for (uint32_t i = 0; i < a->nsku && i < b->nsku; i++) {
		T_CMP(sku[i].activity_id);
		T_CMP(sku[i].sku_id);
		T_CMP(sku[i].shards);
		T_CMP(sku[i].total);
		T_CMP(sku[i].available);
	}
	if (bad)
		_fail(file, line);
}

/* ---- 4. Records and ledgers --------------------------------------------- */

struct t_drain_ctx {
	flash_t *h;
	struct t_recs *out;
	int advance;
	int rc;
};

static int t_recs_push(void *arg, const struct flash_record *rec, uint64_t seq)
{
	struct t_drain_ctx *c = arg;
	struct t_recs *out = c->out;

	if (out->n == out->cap) {
		size_t cap = out->cap ? out->cap * 2 : 1024;
		struct t_rec *v = realloc(out->v, cap * sizeof *v);

		if (!v) {
			c->rc = FLASH_ENOMEM;
			return 1;
		}
		out->v = v;
		out->cap = cap;
	}
	out->v[out->n].r = *rec;
	out->v[out->n].seq = seq;
	out->n++;
	if (c->advance) {
		int rc = flash_durable_advance(c->h, rec->slot, seq);

		if (rc != FLASH_OK) {
			c->rc = rc;
			return 1;
		}
	}
	return 0;
}

static int t_drain(flash_t *h, struct t_recs *out, int advance)
{
	struct t_drain_ctx c = { h, out, advance, FLASH_OK };

	for (;;) {
		uint32_t got = 0;
		int rc = flash_ring_drain(h, t_recs_push, &c, 4096, &got);

		if (rc != FLASH_OK)
			return rc;
		if (c.rc != FLASH_OK)
			return c.rc;
		if (got == 0)
			return FLASH_OK;
	}
}

int t_recs_drain(flash_t *h, struct t_recs *out)
{
	return t_drain(h, out, 1);
}

int t_recs_drain_keep(flash_t *h, struct t_recs *out)
{
	return t_drain(h, out, 0);
}

void t_recs_free(struct t_recs *r)
{
	free(r->v);
	memset(r, 0, sizeof *r);
}

/* Open-addressing map user -> (active orders, slot mask). */
struct t_user {
	uint64_t user;
	uint32_t active;
	uint64_t slots;
};

static struct t_user *t_user_get(struct t_user *tab, size_t cap, uint64_t user)
{
	size_t i = (size_t)((user * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);

	while (tab[i].user != 0 && tab[i].user != user)
		i = (i + 1) & (cap - 1);
	tab[i].user = user;
	return &tab[i];
}

#define T_LFAIL(...) do { fprintf(stderr, "ledger: " __VA_ARGS__); fputc('\n', stderr); \
		goto out; } while (0)

int t_ledger_check(flash_t *h, const struct t_recs *recs, uint32_t act, uint32_t sku,
                   uint32_t k, struct t_ledger *out)
{
	uint64_t max = flash_orders_max(h);
	uint32_t *nord = calloc(max + 2, sizeof *nord);
	uint32_t *ncan = calloc(max + 2, sizeof *ncan);
	uint32_t *nexp = calloc(max + 2, sizeof *nexp);   /* EXPIRE records */
	uint32_t *ncon = calloc(max + 2, sizeof *ncon);   /* CONFIRM records */
	const struct flash_record **orec = calloc(max + 2, sizeof *orec);
	size_t ucap = 1;
	struct t_user *users = NULL;
	uint64_t next_seq[4096];
	struct t_ledger lg;
	struct flash_sku_info si;
	int ret = -1, rc;

	memset(&lg, 0, sizeof lg);
	memset(next_seq, 0, sizeof next_seq);
	while (ucap < 2 * (max + 16))
		ucap <<= 1;
	users = calloc(ucap, sizeof *users);
	if (!nord || !ncan || !nexp || !ncon || !orec || !users)
		T_LFAIL("out of memory");

	for (size_t i = 0; i < recs->n; i++) {
		const struct flash_record *r = &recs->v[i].r;

		if (r->slot >= 4096)
			T_LFAIL("record %zu: slot %u out of range", i, r->slot);
		if (recs->v[i].seq != next_seq[r->slot] + 1 && next_seq[r->slot] != 0)
			T_LFAIL("slot %u: seq %llu follows %llu", r->slot,
			        (unsigned long long)recs->v[i].seq,
			        (unsigned long long)next_seq[r->slot]);
		if (next_seq[r->slot] == 0 && recs->v[i].seq != 1)
			T_LFAIL("slot %u: first seq is %llu, not 1", r->slot,
			        (unsigned long long)recs->v[i].seq);
		next_seq[r->slot] = recs->v[i].seq;
		if (r->type != FLASH_REC_ORDER && r->type != FLASH_REC_CANCEL && r->type != FLASH_REC_EXPIRE &&
		    r->type != FLASH_REC_CONFIRM)
			continue;
		if (r->order_no == 0 || r->order_no > max)
			T_LFAIL("record for order %llu beyond orders_max %llu",
			        (unsigned long long)r->order_no, (unsigned long long)max);
		if (r->type == FLASH_REC_ORDER) {
			nord[r->order_no]++;
			orec[r->order_no] = r;
		} else if (r->type == FLASH_REC_CANCEL) {
			ncan[r->order_no]++;
		} else if (r->type == FLASH_REC_EXPIRE) {
			nexp[r->order_no]++;
		} else {
			ncon[r->order_no]++;
		}
	}

	for (uint64_t no = 1; no <= max; no++) {
		struct flash_order_info oi;

		rc = flash_order_get(h, no, &oi);
		if (rc != FLASH_OK)
			T_LFAIL("flash_order_get(%llu): %s", (unsigned long long)no, flash_rcname(rc));
		if (oi.state == FLASH_ORDER_NONE) {
			if (nord[no] || ncan[no] || nexp[no] || ncon[no])
				T_LFAIL("order %llu is NONE but has %u order / %u cancel records",
				        (unsigned long long)no, nord[no], ncan[no]);
			lg.none_orders++;
			continue;
		}
		if (oi.order_no != no)
			T_LFAIL("order %llu reads back as number %llu", (unsigned long long)no,
			        (unsigned long long)oi.order_no);
		if (nord[no] != 1)
			T_LFAIL("order %llu (state %u) has %u ORDER records", (unsigned long long)no,
			        oi.state, nord[no]);
		{
			const struct flash_record *r = orec[no];

			if (r->user_id != oi.user_id || r->activity_id != oi.activity_id ||
			    r->sku_id != oi.sku_id || r->qty != oi.qty ||
			    r->limit_slot != oi.limit_slot)
				T_LFAIL("order %llu differs from its record", (unsigned long long)no);
		}
		{
			/* a reservation (its ORDER record names a pay-by time) is
			 * confirmed at most once, and only a reservation is */
			uint32_t resv = orec[no]->value != 0, end = ncan[no] + nexp[no];
			int ok;

			if (oi.state == FLASH_ORDER_CANCELLED)
				ok = ncan[no] == 1 && nexp[no] == 0 && ncon[no] <= resv;
			else if (oi.state == FLASH_ORDER_EXPIRED)
				ok = resv && nexp[no] == 1 && ncan[no] == 0 && ncon[no] == 0;
			else if (oi.state == FLASH_ORDER_ACTIVE)
				ok = end == 0 && ncon[no] == resv;
			else if (oi.state == FLASH_ORDER_RESERVED)
				ok = resv && end == 0 && ncon[no] == 0;
			else
				T_LFAIL("order %llu has unknown state %u", (unsigned long long)no, oi.state);
			if (!ok)
				T_LFAIL("order %llu (state %u%s) has %u CANCEL, %u EXPIRE, %u CONFIRM records",
				        (unsigned long long)no, oi.state, resv ? ", a reservation" : "",
				        ncan[no], nexp[no], ncon[no]);
		}
		if (oi.activity_id != act || oi.sku_id != sku)
			continue;
		if (oi.state == FLASH_ORDER_CANCELLED) {
			lg.cancelled_orders++;
			lg.cancelled_qty += oi.qty;
			continue;
		}
		if (oi.state == FLASH_ORDER_EXPIRED) {
			lg.expired_orders++;
			lg.expired_qty += oi.qty;
			continue;
		}
		if (oi.state == FLASH_ORDER_RESERVED) {
			lg.reserved_orders++;
			lg.reserved_qty += oi.qty;
		}
		lg.active_orders++;
		lg.active_qty += oi.qty;
		if (oi.limit_slot < 1 || oi.limit_slot > k)
			T_LFAIL("order %llu holds limit slot %u outside 1..%u",
			        (unsigned long long)no, oi.limit_slot, k);
		{
			struct t_user *u = t_user_get(users, ucap, oi.user_id);
			uint64_t bit = 1ull << (oi.limit_slot - 1);

			if (u->slots & bit)
				T_LFAIL("user %llu holds limit slot %u twice",
				        (unsigned long long)oi.user_id, oi.limit_slot);
			u->slots |= bit;
			u->active++;
			if (u->active > k)
				T_LFAIL("user %llu holds %u active orders, limit %u",
				        (unsigned long long)oi.user_id, u->active, k);
			if (u->active > lg.max_per_user)
				lg.max_per_user = u->active;
		}
	}
	for (size_t i = 0; i < ucap; i++)
		if (users[i].user && users[i].active == k)
			lg.users_at_limit++;

	rc = flash_sku_get(h, act, sku, &si);
	if (rc != FLASH_OK)
		T_LFAIL("flash_sku_get: %s", flash_rcname(rc));
	if (si.available > si.total)
		T_LFAIL("available %llu above total %llu (negative stock?)",
		        (unsigned long long)si.available, (unsigned long long)si.total);
	if (si.available != si.total - lg.active_qty)
		T_LFAIL("available %llu != total %llu - active qty %llu",
		        (unsigned long long)si.available, (unsigned long long)si.total,
		        (unsigned long long)lg.active_qty);
	ret = 0;
	if (out)
		*out = lg;
out:
	free(nord);
	free(ncan);
	free(nexp);
	free(ncon);
	free(orec);
	free(users);
	return ret;
}

/* ---- 5. Processes ------------------------------------------------------- */

int t_fork_start(int n, t_child_fn fn, void *arg, pid_t *pids, int *go_fd)
{
	int p[2];

	if (pipe(p) != 0)
		return -1;
	fflush(NULL);
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return -1;
		if (pid == 0) {
			char c;
			ssize_t got;

			close(p[1]);
			do
				got = read(p[0], &c, 1);
			while (got < 0 && errno == EINTR);
			close(p[0]);
			_exit(fn(i, arg));
		}
		pids[i] = pid;
	}
	close(p[0]);
	*go_fd = p[1];
	return 0;
}

void t_fork_go(int go_fd)
{
	close(go_fd);
}

int t_wait_all(int n, const pid_t *pids)
{
	int bad = 0;

	for (int i = 0; i < n; i++) {
		int st = 0;

		while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			continue;
		bad++;
		if (WIFEXITED(st))
			print_error("child %d (pid %ld) exited with %d\n", i, (long)pids[i],
			            WEXITSTATUS(st));
		else if (WIFSIGNALED(st))
			print_error("child %d (pid %ld) killed by signal %d\n", i, (long)pids[i],
			            WTERMSIG(st));
	}
	return bad;
}

void *t_shared_alloc(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		fail_msg("mmap shared: %s", strerror(errno));
	return p;
}

void t_shared_free(void *p, size_t bytes)
{
	munmap(p, bytes);
}

/* ---- a consumer thread (sync durability) ------------------------------- */

struct t_consumer {
	pthread_t th;
	const char *name;
	volatile int stop;
};

static int t_consumer_advance(void *arg, const struct flash_record *rec, uint64_t seq)
{
	return flash_durable_advance((flash_t *)arg, rec->slot, seq) != FLASH_OK;
}

static void *t_consumer_main(void *p)
{
	struct t_consumer *c = p;
	flash_t *h = NULL;

	if (flash_open(c->name, 0, &h) != FLASH_OK)
		return NULL;
	while (!__atomic_load_n(&c->stop, __ATOMIC_SEQ_CST)) {
		uint32_t n = 0;

		flash_ring_drain(h, t_consumer_advance, h, 4096, &n);
		if (n == 0)
			t_sleep_ms(1);
	}
	flash_close(h);
	return NULL;
}

struct t_consumer *t_consumer_start(const char *segname)
{
	struct t_consumer *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->name = segname;
	if (pthread_create(&c->th, NULL, t_consumer_main, c) != 0) {
		free(c);
		return NULL;
	}
	return c;
}

void t_consumer_stop(struct t_consumer *c)
{
	if (c == NULL)
		return;
	__atomic_store_n(&c->stop, 1, __ATOMIC_SEQ_CST);
	pthread_join(c->th, NULL);
	free(c);
}

/* ---- 6. Metrics -------------------------------------------------------- */

char *t_metrics_get(uint16_t port)
{
	static const char req[] = "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n";
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	size_t cap = 1 << 16, n = 0;
	ssize_t r;
	char *b;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return NULL;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
	    write(fd, req, sizeof req - 1) != (ssize_t)(sizeof req - 1)) {
		close(fd);
		return NULL;
	}
	b = malloc(cap);
	while (b && (r = read(fd, b + n, cap - n - 1)) > 0) {
		n += (size_t)r;
		if (n + 1 == cap) {
			char *nb = realloc(b, cap * 2);
			if (!nb) {
				free(b);
				b = NULL;
				break;
			}
			b = nb;
			cap *= 2;
		}
	}
	close(fd);
	if (b)
		b[n] = 0;
	return b;
}

uint64_t t_metrics_sample(const char *body, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, name, len) == 0 && p[len] == ' ')
			return strtoull(p + len + 1, NULL, 10);
	return UINT64_MAX;
}
