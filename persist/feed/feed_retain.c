/*
 * feed_retain.c -- WAL retention for the feed's registered consumers, in the
 * daemon (the snapshot thread asks before it removes WAL files: snapshot.c).
 * The rule is PostgreSQL's for replication slots with max_slot_wal_keep_size:
 * a consumer holds back the removal of every file it still needs, unless
 * holding it would keep more than the bound -- then the files go and the
 * consumer is lost, said in a log line and counted, never skipped silently
 * (flash_feed_next() returns FLASH_ELOST at the gap; a refill from MariaDB
 * serves it).
 */
#include "feed.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pio.h"
#include "plog.h"
#include "wal.h"

static pthread_mutex_t retain_mu = PTHREAD_MUTEX_INITIALIZER;
static struct feed_retain_stats retain_st;    /* under retain_mu */

/* Consumers already reported lost at a given LSN (so a loss logs once). */
#define RETAIN_SEEN_MAX 256
static struct { char name[FLASH_FEED_NAME_MAX + 1]; uint64_t lsn; } retain_seen[RETAIN_SEEN_MAX];
static size_t retain_nseen;

static int retain_seen_once(const char *name, uint64_t lsn)
{
	for (size_t i = 0; i < retain_nseen; i++)
		if (strcmp(retain_seen[i].name, name) == 0) {
			if (retain_seen[i].lsn == lsn)
				return 0;
			retain_seen[i].lsn = lsn;
			return 1;
		}
	if (retain_nseen < RETAIN_SEEN_MAX) {
		snprintf(retain_seen[retain_nseen].name, sizeof retain_seen[0].name, "%s", name);
		retain_seen[retain_nseen++].lsn = lsn;
	}
	return 1;
}

/* Creation time and size of the WAL file starting at @p start (0 if unreadable). */
static void retain_file_info(const char *dir, uint64_t start, int64_t *created_ns, uint64_t *bytes)
{
	char path[4200];
	unsigned char h[64];
	*created_ns = 0;
	*bytes = 0;
	snprintf(path, sizeof path, "%s/wal-%016" PRIx64 ".log", dir, start);
	int fd = pio_open_reg(path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (pio_pread_full(fd, h, sizeof h, 0) == (ssize_t)sizeof h) {
		memcpy(created_ns, h + 32, 8);
		memcpy(bytes, h + 24, 8);
	}
	pio_close(fd);
}

/*
 * flash_feed_list counts all it finds but copies only as many as there is
 * room for, and a consumer may register between the count and the copy (a
 * registration that could not take the registry lock goes on without it):
 * so list again into the room the last list asked for until everything
 * fits.  Under the registry lock that is two lists.
 */
int feed_list_all(const char *wal_dir, struct flash_feed_info **out, size_t *n)
{
	struct flash_feed_info *v = NULL;
	size_t cap = 0;
	int rc;
	while ((rc = flash_feed_list(wal_dir, v, cap, n)) == FLASH_OK && *n > cap) {
		struct flash_feed_info *t = realloc(v, *n * sizeof *v);
		if (t == NULL) {
			rc = FLASH_ENOMEM;
			break;
		}
		v = t;
		cap = *n;
	}
	if (rc != FLASH_OK) {
		free(v);
		return rc;
	}
	*out = v;
	return FLASH_OK;
}

uint64_t feed_retain_cover(const char *wal_dir, uint64_t cover, const struct feed_retain_opts *o,
                           plog_fn log, void *log_arg)
{
	struct flash_feed_info *v;
	size_t n;
	uint64_t *files = NULL;
	size_t nf = 0;
	if (feed_list_all(wal_dir, &v, &n) != FLASH_OK)
		return 0;        /* cannot tell what consumers need: remove nothing */
	if (n == 0) {
		free(v);
		return cover;
	}
	if (feed_wal_files(wal_dir, &files, &nf) != FLASH_OK) {
		free(v);
		return 0;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	uint64_t held = 0;
	pthread_mutex_lock(&retain_mu);
	for (size_t i = 0; i < n; i++) {
		uint64_t need = v[i].fi_committed_lsn + 1;
		if (need > cover)
			continue;                   /* needs nothing that would go */
		if (v[i].fi_state == FLASH_FEED_LOST)
			continue;                   /* already lost: holds nothing */
		/* What keeping its files costs: from the file holding `need` to the end. */
		size_t k = nf;
		while (k > 0 && files[k - 1] > need)
			k--;
		/* wal_remove_before(cover + 1) removes file j when file j + 1 starts
		 * at or before cover + 1: if the file holding `need` stays anyway,
		 * this consumer holds nothing back and loses nothing */
		if (k == 0 || k >= nf || files[k] > cover + 1)
			continue;
		uint64_t bytes = 0;
		int64_t oldest = 0;
		for (size_t j = k ? k - 1 : 0; j < nf; j++) {
			int64_t c;
			uint64_t b;
			retain_file_info(wal_dir, files[j], &c, &b);
			bytes += b;
			if (j == (k ? k - 1 : 0))
				oldest = c;
		}
		uint64_t age_s = oldest > 0 && now > oldest ? (uint64_t)(now - oldest) / 1000000000u : 0;
		int over_bytes = o->keep_bytes != 0 && bytes > o->keep_bytes;
		int over_age = o->keep_age_s != 0 && age_s > o->keep_age_s;
		if (over_bytes || over_age) {
			if (retain_seen_once(v[i].fi_name, need)) {
				retain_st.lost_total++;
				plogf(log, log_arg, PLOG_WARN,
				           "feed: consumer '%s' lost: it needs LSN %" PRIu64 " but keeping it would "
				           "hold %" PRIu64 " bytes of WAL for %" PRIu64 " s (bound: --feed-keep-bytes %"
				           PRIu64 ", --feed-keep-age %" PRIu64 " s); its files go, its next read "
				           "returns FLASH_ELOST (refill it from MariaDB with feed --mysql)",
				           v[i].fi_name, need, bytes, age_s, o->keep_bytes, o->keep_age_s);
			}
			continue;
		}
		if (need - 1 < cover) {
			cover = need - 1;
			held = need;
		}
	}
	retain_st.held_lsn = held;
	pthread_mutex_unlock(&retain_mu);
	free(files);
	free(v);
	return cover;
}

int feed_retain_remove(const char *wal_dir, uint64_t cover, uint64_t floor,
                       const struct feed_retain_opts *o, plog_fn log, void *log_arg,
                       uint64_t *cover_out, uint32_t *removed)
{
	*removed = 0;
	int lk = feed_registry_lock(wal_dir, 1);
	if (lk < 0) {
		/* a registration "from the start" could pick a file about to be
		 * removed: nothing goes this time, the next round asks again */
		plogf(log, log_arg, PLOG_WARN, "feed: no WAL file removed: the consumers' registry "
		           "lock on %s could not be taken (%s); the next snapshot tries again",
		           wal_dir, strerror(errno));
		*cover_out = 0;
		return FLASH_OK;
	}
	cover = feed_retain_cover(wal_dir, cover, o, log, log_arg);
	*cover_out = cover;
	int rc = FLASH_OK;
	if (cover > floor)
		rc = wal_remove_before(wal_dir, cover + 1, removed);
	int e = errno;
	feed_registry_unlock(lk);
	errno = e;
	return rc;
}

void feed_retain_stats_get(struct feed_retain_stats *out)
{
	pthread_mutex_lock(&retain_mu);
	*out = retain_st;
	pthread_mutex_unlock(&retain_mu);
}
