/*
 * worker.h -- persist/'s periodic background thread, made and stopped in
 * one place (as Redis's bio.c does for its threads): the snapshot thread,
 * the MySQL probe, and the daemon's reconciler, archiver and reclaimer.
 *
 * A service hands its pass function and its state; the worker owns the
 * thread, its monotonic clock and its stop.  The thread runs a pass every
 * @p every_ms, counted from the end of the previous one (the first at once
 * with WORKER_NOW, else after one period); at a stop it runs one more pass
 * with final = 1 if asked.  A pass runs with
 * no lock held; whatever it shares with other threads it guards itself.
 */
#ifndef FLASH_WORKER_H
#define FLASH_WORKER_H

#include <pthread.h>
#include <stdint.h>

typedef void (*worker_pass_fn)(void *arg, int final);

struct worker {
	pthread_t       w_thread;
	pthread_mutex_t w_mu;          /* guards the three flags below */
	pthread_cond_t  w_cv;          /* on CLOCK_MONOTONIC */
	int             w_stop, w_final;
	int             w_now;         /* the first pass at once */
	uint32_t        w_every_ms;
	worker_pass_fn  w_pass;
	void           *w_arg;
};

enum { WORKER_NOW = 1 };

/* Start the thread.  @p flags: WORKER_NOW or 0.  @return 0, or the
 * pthread_create error (nothing is left to stop). */
int worker_start(struct worker *w, uint32_t every_ms, unsigned flags, worker_pass_fn pass,
                 void *arg);

/* Stop the thread and wait for it: a pass under way ends first, then, with
 * @p final_pass, one last pass runs with final = 1. */
void worker_stop(struct worker *w, int final_pass);

#endif
