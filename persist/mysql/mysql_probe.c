/*
 * mysql_probe.c -- the daemon's MySQL liveness ping (contract in
 * mysql_probe.h): one worker thread (worker.h), one connection of its own, mysql_ping()
 * under the connection's read/write timeout.
 */
#include "mysql_probe.h"
#include "worker.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mysql.h>

struct mdb_probe {
	struct mdb_opts pr_mo;
	mdb_t          *pr_m;          /* the worker's passes' own, then the stopper's */
	struct worker   pr_w;          /* a ping every every_ms, the first at once */
	pthread_mutex_t pr_mu;         /* guards pr_st */
	struct mdb_probe_stats pr_st;
};

static void probe_log(void *arg, int level, const char *msg)
{
	/* a server that is down fails every ping: the figures say so, the
	 * applier and the reconciler log it already */
	(void)arg;
	(void)level;
	(void)msg;
}

static int64_t now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One ping: connect if needed, then mysql_ping, all under the timeouts. */
static void probe_once(void *arg, int final)
{
	struct mdb_probe *p = arg;
	(void)final;                  /* stopped without a final pass */
	int64_t t0 = now_ns(CLOCK_MONOTONIC);
	int ok = 0;
	if (!p->pr_m && mdb_open(&p->pr_mo, &p->pr_m) != FLASH_OK) {
		mdb_close(p->pr_m);
		p->pr_m = NULL;
	}
	MYSQL *c = p->pr_m ? mdb_conn(p->pr_m) : NULL;
	if (c) {
		ok = mysql_ping(c) == 0;
		if (!ok)
			mdb_conn_lost(p->pr_m);   /* reconnect next time */
	}
	int64_t rtt = now_ns(CLOCK_MONOTONIC) - t0;
	pthread_mutex_lock(&p->pr_mu);
	p->pr_st.pings++;
	p->pr_st.connected = ok;
	if (ok) {
		p->pr_st.last_ok_ns = now_ns(CLOCK_REALTIME);
		p->pr_st.last_rtt_ns = (uint64_t)rtt;
	} else {
		p->pr_st.failures++;
	}
	pthread_mutex_unlock(&p->pr_mu);
}

int mdb_probe_start(const struct mdb_opts *mo, uint32_t every_ms,
                            uint32_t timeout_s, mdb_probe_t **out)
{
	if (!mo || !out || every_ms == 0 || timeout_s == 0)
		return FLASH_EINVAL;
	struct mdb_probe *p = calloc(1, sizeof *p);
	if (!p)
		return FLASH_ENOMEM;
	p->pr_mo = *mo;
	p->pr_mo.connect_timeout_s = timeout_s;
	p->pr_mo.rw_timeout_s = timeout_s;
	p->pr_mo.log = probe_log;
	p->pr_mo.log_arg = NULL;
	pthread_mutex_init(&p->pr_mu, NULL);
	if (worker_start(&p->pr_w, every_ms, WORKER_NOW, probe_once, p) != 0) {
		pthread_mutex_destroy(&p->pr_mu);
		free(p);
		return FLASH_ESYS;
	}
	*out = p;
	return FLASH_OK;
}

void mdb_probe_stats_get(mdb_probe_t *p, struct mdb_probe_stats *out)
{
	pthread_mutex_lock(&p->pr_mu);
	*out = p->pr_st;
	pthread_mutex_unlock(&p->pr_mu);
}

void mdb_probe_stop(mdb_probe_t *p)
{
	if (!p)
		return;
	worker_stop(&p->pr_w, 0);
	mdb_close(p->pr_m);           /* the thread is gone: no pass uses it now */
	pthread_mutex_destroy(&p->pr_mu);
	free(p);
}
