/*
 * feed_refill_dl.c -- the shared library's refill source: feed.h's
 * feed_refill_* for libflashstock.so, which links no MariaDB.  The first
 * feed opened with a MariaDB URL loads the plug-in FEED_REFILL_PLUGIN
 * (feed_refill_mysql.c and the MariaDB connection, linked with libmariadb) from
 * the directory libflashstock.so itself was loaded from -- the build tree's
 * or the install's lib directory, wherever that is -- and every call goes
 * through its table.  The plug-in stays loaded for the life of the process.
 * A plug-in that cannot be loaded (not installed, libmariadb missing, a
 * plug-in of another build) makes the open FLASH_EMYSQL_CONFIG, with the
 * loader's reason on stderr: nothing is registered.
 */
#include "feed.h"
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#ifndef FEED_REFILL_PLUGIN
#error "FEED_REFILL_PLUGIN: the plug-in's file name (engine/CMakeLists.txt)"
#endif

static pthread_once_t refill_once = PTHREAD_ONCE_INIT;
static const struct feed_refill_ops *refill_ops;
static char refill_why[PATH_MAX + 256];

static void refill_load(void)
{
	Dl_info di;
	char path[PATH_MAX];
	const char *slash;
	void *dl;
	const struct feed_refill_ops *o;

	if (dladdr((void *)refill_load, &di) == 0 || di.dli_fname == NULL ||
	    (slash = strrchr(di.dli_fname, '/')) == NULL) {
		snprintf(refill_why, sizeof refill_why, "the library's own path is not known");
		return;
	}
	if (snprintf(path, sizeof path, "%.*s/%s", (int)(slash - di.dli_fname), di.dli_fname,
	             FEED_REFILL_PLUGIN) >= (int)sizeof path) {
		snprintf(refill_why, sizeof refill_why, "the plug-in's path is too long");
		return;
	}
	if ((dl = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		snprintf(refill_why, sizeof refill_why, "%s", dlerror());
		return;
	}
	o = dlsym(dl, FEED_REFILL_SYMBOL);
	if (o == NULL || o->size != sizeof *o || o->rec_size != sizeof(struct flash_feed_rec)) {
		snprintf(refill_why, sizeof refill_why, "%s: not this build's refill plug-in", path);
		dlclose(dl);
		return;
	}
	refill_ops = o;
}

static const struct feed_refill_ops *refill(void)
{
	pthread_once(&refill_once, refill_load);
	if (refill_ops == NULL)
		fprintf(stderr, "flashstock feed: the MariaDB refill cannot be loaded: %s\n", refill_why);
	return refill_ops;
}

int feed_refill_check(const char *url)
{
	const struct feed_refill_ops *o = refill();

	return o == NULL ? FLASH_EMYSQL_CONFIG : o->check(url);
}

int feed_refill_open(const char *url, const char *stream, feed_refill_t **out)
{
	const struct feed_refill_ops *o = refill();

	return o == NULL ? FLASH_EMYSQL_CONFIG : o->open(url, stream, out);
}

void feed_refill_close(feed_refill_t *r)
{
	if (r != NULL && refill_ops != NULL)
		refill_ops->close(r);
}

int feed_refill_fetch(feed_refill_t *r, uint64_t from, uint64_t to, struct flash_feed_rec **recs,
                      size_t *n, uint64_t *applied)
{
	const struct feed_refill_ops *o = refill();

	return o == NULL ? FLASH_EMYSQL_CONFIG : o->fetch(r, from, to, recs, n, applied);
}
