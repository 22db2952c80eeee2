/* worker.c -- persist/'s periodic background thread (contract in worker.h). */
#include "worker.h"

#include <errno.h>
#include <string.h>
#include <time.h>

static void deadline(struct timespec *ts, uint32_t ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	int first = 1;
	pthread_mutex_lock(&w->w_mu);
	while (!w->w_stop) {
		if (!(first && w->w_now)) {
			struct timespec until;
			deadline(&until, w->w_every_ms);
			while (!w->w_stop &&
			       pthread_cond_timedwait(&w->w_cv, &w->w_mu, &until) != ETIMEDOUT)
				;
			if (w->w_stop)
				break;
		}
		first = 0;
		pthread_mutex_unlock(&w->w_mu);
		w->w_pass(w->w_arg, 0);
		pthread_mutex_lock(&w->w_mu);
	}
	int final = w->w_final;
	pthread_mutex_unlock(&w->w_mu);
	if (final)
		w->w_pass(w->w_arg, 1);
	return NULL;
}

int worker_start(struct worker *w, uint32_t every_ms, unsigned flags, worker_pass_fn pass,
                 void *arg)
{
	memset(w, 0, sizeof *w);
	w->w_every_ms = every_ms;
	w->w_now = (flags & WORKER_NOW) != 0;
	w->w_pass = pass;
	w->w_arg = arg;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->w_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&w->w_mu, NULL);
	int rc = pthread_create(&w->w_thread, NULL, worker_main, w);
	if (rc != 0) {
		pthread_cond_destroy(&w->w_cv);
		pthread_mutex_destroy(&w->w_mu);
	}
	return rc;
}

void worker_stop(struct worker *w, int final_pass)
{
	pthread_mutex_lock(&w->w_mu);
	w->w_stop = 1;
	w->w_final = final_pass;
	pthread_cond_signal(&w->w_cv);
	pthread_mutex_unlock(&w->w_mu);
	pthread_join(w->w_thread, NULL);
	pthread_cond_destroy(&w->w_cv);
	pthread_mutex_destroy(&w->w_mu);
}
