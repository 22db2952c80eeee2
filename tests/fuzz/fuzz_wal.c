/*
 * fuzz_wal.c -- fuzz target for the WAL decoder (persist/storage/wal.c: wal_replay(),
 * the torn-tail truncation, wal_open()'s scan of the last file) and for the
 * two consumers of what it decodes: flash_replay() into a segment (the
 * rebuild after a reboot) and the WAL fold (persist/storage/fold.c).
 *
 * Input: four control bytes, then the body, written as one or two WAL files
 * into a private directory under /dev/shm (or $FUZZ_WAL_DIR).
 *
 *   byte 0  bit 0  SYNTH     each file gets a valid 64-byte file header; the
 *                            body holds frames only
 *           bit 1  RESEAL    walk the frames and recompute each CRC-32C (and
 *                            the file header's), so the input reaches the
 *                            checks after the CRC and the consumers
 *           bit 2  RENUMBER  while resealing, also set lsn and prev_lsn to
 *                            the chain's values
 *           bit 3  TRUNCATE  replay with WAL_REPLAY_TRUNCATE
 *           bit 4  RECORDS   feed each WAL_T_RECORD frame to flash_replay()
 *                            on a fresh segment and to a fold
 *           bit 5  FROM      replay from LSN byte 3 instead of from the start
 *           bit 6  APPEND    when the WAL ends cleanly (at once or after the
 *                            truncation), open it, append one record, close
 *                            it, and read it back
 *           bit 7  MISNAME   name the (first) file one LSN past its header's
 *   byte 1  0: one file; else the body splits at length * byte1 / 256 into
 *           two files
 *   byte 2  the first file's start LSN when SYNTH (0 means 1)
 *   byte 3  from_lsn with FROM
 *
 * Promises checked:
 *   - every return code is one wal.h documents, and the report agrees with
 *     what the callback saw (frames, first and last LSN);
 *   - frames reach the callback in LSN order without a gap, each with a
 *     length its type allows and an 8-byte aligned payload inside the file:
 *     the files are "mapped" through the persist/ system-call table into an
 *     exactly sized heap copy, so AddressSanitizer sees any read past the end;
 *   - an independent decoder written from the format in wal.h (its own
 *     CRC-32C, its own reading of the file chain) predicts the exact result,
 *     stop cause, byte offset, frame count and last LSN, for one file or two;
 *   - after a truncation the file keeps exactly the good frames, is
 *     zero-filled to its size, and a second replay ends cleanly with the
 *     same frames; wal_open() then accepts it, an appended record reads back;
 *   - flash_replay() of any decoded record returns a code and leaves the
 *     segment in agreement: per sku, available + units of active orders =
 *     total (DESIGN.md 2, invariants 1 and 6), available never above total.
 * FUZZ_WAL_NO_FOLD=1 in the environment leaves the fold out (a long run can
 * explore past a fold bug; tests/fuzz/corpus/wal/crash-fold-* were two).
 * fallocate goes through the same table and refuses files above 4 MiB (a
 * resealed header may ask for any size): that is a FLASH_ESYS, not a crash.
 *
 * Built two ways (tests/fuzz/fuzz_tests.cmake): with -DFLASH_LIBFUZZER a libFuzzer
 * target; otherwise the replay driver of tests/fuzz/fuzz_main.h.  The replay
 * build also writes the seed corpus with the real writer:
 *   fuzz_wal --make-corpus tests/fuzz/corpus/wal
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flashstock.h"
#include "flashstock_consumer.h"
#include "pio.h"
#include "reconcile.h"
#include "wal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_SYNTH    0x01u
#define FZ_RESEAL   0x02u
#define FZ_RENUMBER 0x04u
#define FZ_TRUNCATE 0x08u
#define FZ_RECORDS  0x10u
#define FZ_FROM     0x20u
#define FZ_APPEND   0x40u
#define FZ_MISNAME  0x80u

#define FZ_FILE_MAX (4u << 20)    /* fallocate refuses larger files */
#define FZ_CTRL 4u

static void fz_check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_wal: broken promise: %s\n", what);
		abort();
	}
}

/* ------------------------------------------------------------------------
 * An independent reading of the format (wal.h): CRC-32C and the decoder.
 * ------------------------------------------------------------------------ */

static uint32_t fz_crc_tab[256];

static void fz_crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
		fz_crc_tab[i] = c;
	}
}

static uint32_t fz_crc(uint32_t crc, const uint8_t *p, size_t n)
{
	crc = ~crc;
	while (n--)
		crc = (crc >> 8) ^ fz_crc_tab[(crc ^ *p++) & 0xff];
	return ~crc;
}

static uint64_t fz_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint32_t fz_le32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static void fz_put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static void fz_put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

static int fz_zero(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return 0;
	return 1;
}

static uint64_t fz_frame_bytes(uint32_t len)
{
	return 32 + (((uint64_t)len + 7) & ~7ull);
}

struct fz_orc {
	int      stop;        /* FLASH_OK or the cause */
	int      hdr_ok;      /* the file header passed */
	uint64_t off;         /* end or bad frame */
	uint64_t next;        /* LSN after the last good frame */
	uint64_t passed;      /* good frames with lsn >= from */
	uint64_t first;       /* first of those */
	uint64_t seg_bytes;   /* header's */
};

/* Decode one file named for @p name_lsn exactly as wal.h describes it. */
static int fz_oracle(const uint8_t *f, size_t size, uint64_t name_lsn, uint64_t from,
                     struct fz_orc *o)
{
	memset(o, 0, sizeof(*o));
	if (size < 64)
		return o->stop = size >= 8 ? FLASH_EWAL_FILE_HDR : FLASH_EWAL_MAGIC;
	if (memcmp(f, "FSWALSEG", 8) != 0)
		return o->stop = FLASH_EWAL_MAGIC;
	if (fz_le32(f + 60) != fz_crc(0, f, 60))
		return o->stop = FLASH_EWAL_FILE_HDR;
	if (fz_le32(f + 8) != 1 || fz_le32(f + 12) != 64 || fz_le64(f + 16) != name_lsn ||
	    name_lsn == 0 || fz_le64(f + 24) < 4096 || fz_le64(f + 24) > (1ull << 30) ||
	    fz_le64(f + 24) % 4096 != 0)
		return o->stop = FLASH_EWAL_FILE_HDR;
	o->hdr_ok = 1;
	o->seg_bytes = fz_le64(f + 24);
	uint64_t lsn = name_lsn, off = 64;
	int rc = FLASH_OK;
	for (;;) {
		if (size - off < 32) {
			if (!fz_zero(f + off, size - off))
				rc = FLASH_EWAL_PAST_END;
			break;
		}
		const uint8_t *h = f + off;
		uint32_t len = fz_le32(h);
		uint16_t type;

		memcpy(&type, h + 4, 2);
		if (len == 0) {
			if (!fz_zero(h, size - off))
				rc = FLASH_EWAL_ZERO_LEN;
			break;
		}
		if (len > WAL_PAYLOAD_MAX) {
			rc = FLASH_EWAL_LONG;
			break;
		}
		if (len < (type == WAL_T_RECORD ? sizeof(struct wal_rec) : 1u)) {
			rc = FLASH_EWAL_SHORT;
			break;
		}
		if (fz_frame_bytes(len) > size - off) {
			rc = FLASH_EWAL_PAST_END;
			break;
		}
		if (fz_crc(fz_crc(0, h, 24), h + 32, len) != fz_le32(h + 24)) {
			rc = FLASH_EWAL_CRC;
			break;
		}
		if (fz_le64(h + 8) != lsn) {
			rc = FLASH_EWAL_LSN;
			break;
		}
		if (fz_le64(h + 16) != lsn - 1) {
			rc = FLASH_EWAL_PREV;
			break;
		}
		if (type == 0 || type > WAL_T_MAX) {
			rc = FLASH_EWAL_TYPE;
			break;
		}
		if (lsn >= from) {
			if (o->passed++ == 0)
				o->first = lsn;
		}
		lsn++;
		off += fz_frame_bytes(len);
	}
	o->off = off;
	o->next = lsn;
	return o->stop = rc;
}

/*
 * The highest LSN of a valid frame flagged WAL_F_COMMIT at an 8-byte
 * aligned offset >= @p off of file @p f (0: none), found as wal.h says a
 * reader looks past a bad frame: a frame counts when its length and type
 * are plausible, prev = lsn - 1, it fits and its CRC matches; the search
 * then steps over it, else on by 8 bytes.
 */
static uint64_t fz_proof(const uint8_t *f, size_t size, uint64_t off)
{
	uint64_t best = 0;

	off = (off + 7) & ~(uint64_t)7;
	while (off <= size && size - off >= 32) {
		const uint8_t *h = f + off;
		uint32_t len = fz_le32(h);
		uint16_t type, flags;
		uint64_t lsn = fz_le64(h + 8);

		memcpy(&type, h + 4, 2);
		memcpy(&flags, h + 6, 2);
		if (len != 0 && len <= WAL_PAYLOAD_MAX && type != 0 && type <= WAL_T_MAX &&
		    len >= (type == WAL_T_RECORD ? sizeof(struct wal_rec) : 1u) && lsn != 0 &&
		    fz_le64(h + 16) == lsn - 1 && fz_frame_bytes(len) <= size - off &&
		    fz_crc(fz_crc(0, h, 24), h + 32, len) == fz_le32(h + 24)) {
			if ((flags & WAL_F_COMMIT) && lsn > best)
				best = lsn;
			off += fz_frame_bytes(len);
			continue;
		}
		off += 8;
	}
	return best;
}

static int fz_frame_level(int rc)
{
	return rc == FLASH_EWAL_ZERO_LEN || rc == FLASH_EWAL_SHORT || rc == FLASH_EWAL_PAST_END || rc == FLASH_EWAL_LONG ||
	       rc == FLASH_EWAL_CRC || rc == FLASH_EWAL_LSN || rc == FLASH_EWAL_PREV || rc == FLASH_EWAL_TYPE;
}

struct fz_file {
	uint64_t       name;      /* start LSN in its name */
	const uint8_t *p;
	size_t         n;
};

struct fz_want {
	int      stop;            /* rep.stop */
	int      rc;              /* wal_replay's result */
	uint64_t offset;          /* rep.offset */
	uint64_t last;            /* rep.last_lsn */
	uint64_t passed;          /* frames given to the callback */
	uint64_t seg_bytes;       /* header of the stop file */
};

/*
 * What wal_replay() must report for the files @p fs (any order) read from
 * @p from, as wal.h describes it: start at the last file that begins at or
 * before from_lsn (EGAP if from_lsn is older than every file), each file
 * must start where the previous one ended (EGAP), stop at the first bad
 * header or frame; with TRUNCATE, a frame-level stop in the last file is
 * cut (same result) unless a later commit's first frame (WAL_F_COMMIT, found
 * by resynchronisation) vouches for the bad LSN or it is below from,
 * elsewhere it is ENOTTAIL, and so is a gap after the first file.
 */
static void fz_oracle_dir(struct fz_file *fs, int nf, uint64_t from, int truncate,
                          struct fz_want *w)
{
	uint64_t expect = 0, bad = 0;
	int i = 0, r = FLASH_OK;

	memset(w, 0, sizeof(*w));
	if (nf == 2 && fs[1].name < fs[0].name) {
		struct fz_file t = fs[0];

		fs[0] = fs[1];
		fs[1] = t;
	}
	if (from == 0)
		from = 1;
	if (from > 1 && from < fs[0].name) {
		w->stop = w->rc = FLASH_EWAL_GAP;
		return;
	}
	while (i + 1 < nf && fs[i + 1].name <= from)
		i++;
	for (; i < nf; i++) {
		struct fz_orc o;

		r = fz_oracle(fs[i].p, fs[i].n, fs[i].name, from, &o);
		if (o.hdr_ok && expect != 0 && fs[i].name != expect) {
			r = FLASH_EWAL_GAP;
			memset(&o, 0, sizeof(o));
		}
		w->passed += o.passed;
		if (o.hdr_ok && o.next > 1 && o.next - 1 > w->last)
			w->last = o.next - 1;
		w->offset = o.off;
		w->seg_bytes = o.seg_bytes;
		bad = o.next;
		if (r != FLASH_OK)
			break;
		expect = o.next;
	}
	w->stop = w->rc = r;
	if (truncate && r != FLASH_OK) {
		/* a torn tail: in the last file, no later commit vouching for the
		 * bad LSN, and not below from (the caller vouches for that) */
		if (fz_frame_level(r) && i < nf - 1)
			w->rc = FLASH_EWAL_NOTTAIL;
		else if (fz_frame_level(r) && (fz_proof(fs[i].p, fs[i].n, w->offset) > bad || bad < from))
			w->rc = FLASH_EWAL_NOTTAIL;
		else if (!fz_frame_level(r) && r == FLASH_EWAL_GAP && i > 0)
			w->rc = FLASH_EWAL_NOTTAIL;
	}
}

/* Write a valid file header for a file starting at @p lsn. */
static void fz_file_header(uint8_t *f, uint64_t lsn, uint64_t seg_bytes)
{
	memset(f, 0, 64);
	memcpy(f, "FSWALSEG", 8);
	fz_put32(f + 8, 1);
	fz_put32(f + 12, 64);
	fz_put64(f + 16, lsn);
	fz_put64(f + 24, seg_bytes);
	fz_put64(f + 32, 1700000000000000000ull);
	fz_put32(f + 60, fz_crc(0, f, 60));
}

/* Reseal (and renumber) the frame chain of one file; the LSN after it. */
static uint64_t fz_reseal(uint8_t *f, size_t size, uint64_t lsn, int renumber)
{
	size_t off = 64;

	if (size >= 64)
		fz_put32(f + 60, fz_crc(0, f, 60));
	while (size >= 64 && size - off >= 32) {
		uint8_t *h = f + off;
		uint32_t len = fz_le32(h);

		if (len == 0 || len > WAL_PAYLOAD_MAX || fz_frame_bytes(len) > size - off)
			break;
		if (renumber) {
			fz_put64(h + 8, lsn);
			fz_put64(h + 16, lsn - 1);
		}
		fz_put32(h + 24, fz_crc(fz_crc(0, h, 24), h + 32, len));
		lsn++;
		off += fz_frame_bytes(len);
	}
	return lsn;
}

/* ------------------------------------------------------------------------
 * The system-call table: exact-size "mappings", bounded preallocation.
 * ------------------------------------------------------------------------ */

#define FZ_MAPS 8
static void *fz_map_p[FZ_MAPS];

static void *fz_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
	uint8_t *p;
	size_t got = 0;

	if (addr != NULL || prot != PROT_READ || off != 0)
		return ((mmap_fn)pio_default("mmap"))(addr, len, prot, flags, fd, off);
	for (int i = 0; i < FZ_MAPS; i++) {
		if (fz_map_p[i] != NULL)
			continue;
		if ((p = malloc(len ? len : 1)) == NULL) {
			errno = ENOMEM;
			return MAP_FAILED;
		}
		while (got < len) {
			ssize_t n = pread(fd, p + got, len - got, (off_t)got);

			if (n <= 0) {
				free(p);
				errno = EIO;
				return MAP_FAILED;
			}
			got += (size_t)n;
		}
		fz_map_p[i] = p;
		return p;
	}
	errno = ENOMEM;
	return MAP_FAILED;
}

static int fz_munmap(void *p, size_t len)
{
	typedef int (*munmap_fn)(void *, size_t);

	for (int i = 0; i < FZ_MAPS; i++) {
		if (fz_map_p[i] == p) {
			free(p);
			fz_map_p[i] = NULL;
			return 0;
		}
	}
	return ((munmap_fn)pio_default("munmap"))(p, len);
}

static int fz_fallocate(int fd, off_t off, off_t len)
{
	typedef int (*fallocate_fn)(int, off_t, off_t);

	if (off < 0 || len < 0 || (uint64_t)off + (uint64_t)len > FZ_FILE_MAX) {
		errno = EFBIG;
		return -1;
	}
	return ((fallocate_fn)pio_default("fallocate"))(fd, off, len);
}

/* ------------------------------------------------------------------------
 * The directory and the segment records are replayed into.
 * ------------------------------------------------------------------------ */

static char fz_dir[256];
static char fz_seg[64];
static int fz_ready, fz_no_fold;

static void fz_clear_dir(void)
{
	DIR *d = opendir(fz_dir);
	struct dirent *e;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		char p[512];

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", fz_dir, e->d_name);
		unlink(p);
	}
	closedir(d);
}

static void fz_cleanup(void)
{
	fz_clear_dir();
	rmdir(fz_dir);
	flash_seg_destroy(fz_seg);
}

static void fz_setup(void)
{
	const char *base = getenv("FUZZ_WAL_DIR");

	fz_crc_init();
	fz_no_fold = getenv("FUZZ_WAL_NO_FOLD") != NULL;
	fz_check(fz_crc(0, (const uint8_t *)"123456789", 9) == 0xe3069283u, "CRC-32C check value");
	snprintf(fz_dir, sizeof(fz_dir), "%s/fuzz-wal-dir-%d", base ? base : "/dev/shm", (int)getpid());
	snprintf(fz_seg, sizeof(fz_seg), "/fuzz-wal-%d", (int)getpid());
	if (mkdir(fz_dir, 0700) != 0 && errno != EEXIST) {
		perror(fz_dir);
		abort();
	}
	fz_clear_dir();
	flash_seg_destroy(fz_seg);
	fz_check(pio_override("mmap", (pio_fn)fz_mmap, NULL) == 0, "pio mmap");
	fz_check(pio_override("munmap", (pio_fn)fz_munmap, NULL) == 0, "pio munmap");
	fz_check(pio_override("fallocate", (pio_fn)fz_fallocate, NULL) == 0, "pio fallocate");
	atexit(fz_cleanup);
	fz_ready = 1;
}

static void fz_write_file(uint64_t name_lsn, const uint8_t *p, size_t n)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/wal-%016llx.log", fz_dir, (unsigned long long)name_lsn);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	fz_check(fd >= 0, "create a WAL file");
	fz_check(n == 0 || write(fd, p, n) == (ssize_t)n, "write a WAL file");
	close(fd);
}

static uint8_t *fz_read_file(uint64_t name_lsn, size_t *n)
{
	char path[512];
	struct stat st;
	uint8_t *p;
	int fd;

	snprintf(path, sizeof(path), "%s/wal-%016llx.log", fz_dir, (unsigned long long)name_lsn);
	fd = open(path, O_RDONLY);
	fz_check(fd >= 0 && fstat(fd, &st) == 0, "reopen a WAL file");
	p = malloc(st.st_size ? (size_t)st.st_size : 1);
	fz_check(p != NULL && pread(fd, p, (size_t)st.st_size, 0) == st.st_size, "read a WAL file");
	close(fd);
	*n = (size_t)st.st_size;
	return p;
}

static void fz_seg_opts(struct flash_seg_opts *o)
{
	flash_seg_opts_default(o);
	o->max_activities = 4;
	o->max_skus = 8;
	o->max_shards = 32;
	o->max_users = 32;
	o->max_tokens = 4;
	o->max_orders = 32;
	o->max_requests = 32;
	o->max_locks = 1;
	o->max_procs = 2;
	o->ring_records = 16;
}

/* ------------------------------------------------------------------------
 * The replay callback.
 * ------------------------------------------------------------------------ */

struct fz_cb {
	uint64_t  from;
	uint64_t  frames, first, last;
	int       records;       /* feed records to the consumers */
	flash_t  *h;             /* segment, made at the first record */
	fold_t *fold;
	struct wal_rec last_rec; /* payload of the last WAL_T_RECORD frame */
	int       have_rec;
};

static int fz_frame(void *arg, uint64_t lsn, uint16_t type, const void *payload, uint32_t len)
{
	struct fz_cb *c = arg;
	uint8_t *copy;

	fz_check(lsn >= c->from, "no frame before from_lsn");
	fz_check(c->frames == 0 || lsn == c->last + 1, "frames in LSN order without a gap");
	fz_check(len >= 1 && len <= WAL_PAYLOAD_MAX, "payload length in range");
	fz_check(type != WAL_T_RECORD || len >= sizeof(struct wal_rec), "record frame long enough");
	fz_check(((uintptr_t)payload & 7) == 0, "payload 8-byte aligned");
	if (c->frames++ == 0)
		c->first = lsn;
	c->last = lsn;
	copy = malloc(len);        /* every payload byte is read: an overread shows */
	fz_check(copy != NULL, "malloc");
	memcpy(copy, payload, len);
	c->have_rec = 0;
	if (type == WAL_T_RECORD) {
		memcpy(&c->last_rec, copy, sizeof(c->last_rec));
		c->have_rec = 1;
	}
	if (c->records && type == WAL_T_RECORD) {
		const struct flash_record *r = &c->last_rec.wr_rec;
		int rc;

		if (!fz_no_fold) {
			if (c->fold == NULL)
				fz_check(fold_new(&c->fold) == FLASH_OK, "fold new");
			rc = fold_record(c->fold, r, lsn);
			fz_check(rc == FLASH_OK || rc == FLASH_EINVAL, "fold: OK or EINVAL");
			fz_check((rc == FLASH_EINVAL) ==
			         (r->type < FLASH_REC_ORDER || r->type > FLASH_REC_PRICE ||
			          (r->type == FLASH_REC_SKU && (r->value < 0 || r->value > (1ll << 40))) ||
			          (r->type == FLASH_REC_RESTOCK &&
			           (r->value < -(1ll << 40) || r->value > (1ll << 40)))),
			         "fold refuses exactly the unknown types and out-of-range units");
		}
		if (c->h == NULL) {
			struct flash_seg_opts o;

			fz_seg_opts(&o);
			rc = flash_seg_create(fz_seg, &o);
			if (rc != FLASH_OK)
				fprintf(stderr, "fuzz_wal: create %s: %s\n", fz_seg, flash_rcname(rc));
			fz_check(rc == FLASH_OK, "create the replay segment");
			fz_check(flash_open(fz_seg, 0, &c->h) == FLASH_OK, "open the replay segment");
			/* the handle keeps its mapping; nothing left behind a crash */
			fz_check(flash_seg_destroy(fz_seg) == FLASH_OK, "unlink the replay segment");
		}
		rc = flash_replay(c->h, r);
		switch (rc) {
		case FLASH_OK: case FLASH_EEXIST: case FLASH_EINVAL: case FLASH_ENOT_FOUND:
		case FLASH_EFULL: case FLASH_ESOLD_OUT: case FLASH_ELIMIT: case FLASH_EDUPLICATE:
			break;
		default:
			fprintf(stderr, "fuzz_wal: flash_replay(type %u) = %s\n", r->type, flash_rcname(rc));
			fz_check(0, "flash_replay returns a documented code");
		}
	}
	free(copy);
	return 0;
}

/* Invariants 1 and 6 on the segment the records were replayed into. */
static void fz_seg_agree(flash_t *h)
{
	struct flash_stats st;
	struct flash_sku_info s[8];
	int64_t sold[8] = { 0 };
	uint32_t n = 0;
	uint64_t omax;

	fz_check(flash_stats_get(h, &st) == FLASH_OK, "stats");
	for (uint32_t i = 0; i < 8; i++) {
		int rc = flash_sku_at(h, i, &s[n]);

		if (rc == FLASH_ENOT_FOUND)
			break;
		if (rc == FLASH_EARCHIVED)
			continue;      /* freed by a replayed ARCHIVE record: no stock */
		fz_check(rc == FLASH_OK, "every sku readable");
		fz_check(s[n].available <= s[n].total, "available never above total");
		n++;
	}
	/* every order-table slot (a forged record may carry any number, of any
	 * lap: numbers are not bounded by the table, slots are) */
	omax = flash_stats_get(h, &st) == FLASH_OK ? st.orders_cap : 0;
	for (uint64_t no = 0; no < omax; no++) {
		struct flash_order_info oi;

		fz_check(flash_order_at(h, (uint32_t)no, &oi) == FLASH_OK, "every order readable");
		/* units are held by an ACTIVE order and by a RESERVED one (a
		 * reservation not paid yet) alike */
		if (oi.state != FLASH_ORDER_ACTIVE && oi.state != FLASH_ORDER_RESERVED)
			continue;
		for (uint32_t i = 0; i < n; i++)
			if (s[i].activity_id == oi.activity_id && s[i].sku_id == oi.sku_id)
				sold[i] += oi.qty;
	}
	for (uint32_t i = 0; i < n; i++) {
		if ((int64_t)(s[i].total - s[i].available) != sold[i])
			fprintf(stderr, "fuzz_wal: sku %u/%u total %llu available %llu sold %lld\n",
			        s[i].activity_id, s[i].sku_id, (unsigned long long)s[i].total,
			        (unsigned long long)s[i].available, (long long)sold[i]);
		fz_check((int64_t)(s[i].total - s[i].available) == sold[i],
		         "available + held order units = total");
	}
}

static int fz_rc_documented(int rc)
{
	return rc <= FLASH_OK && rc >= FLASH_EWAL_TYPE && rc != FLASH_EWAL_TORN && rc != FLASH_EWAL_FAILED;
}

/* Replay @p fz_dir from @p from (no truncation); frames and last LSN. */
static int fz_count(uint64_t from, uint64_t *frames, uint64_t *last, struct wal_rec *rec, int *have)
{
	struct fz_cb c;
	struct wal_replay_report rep;
	int rc;

	memset(&c, 0, sizeof(c));
	c.from = from ? from : 1;
	rc = wal_replay(fz_dir, from, fz_frame, &c, 0, &rep);
	fz_check(rep.frames == c.frames, "report counts the frames passed");
	*frames = c.frames;
	*last = rep.last_lsn;
	if (rec)
		*rec = c.last_rec;
	if (have)
		*have = c.have_rec;
	return rc;
}

/* ------------------------------------------------------------------------
 * The target.
 * ------------------------------------------------------------------------ */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t ctl = 0, split = 0, start_b = 0, from_b = 0;
	const uint8_t *body;
	size_t n, n1, n2;
	uint8_t *f1, *f2 = NULL;
	size_t s1, s2 = 0;
	uint64_t name1, name2 = 0, from, next1;
	struct fz_cb c;
	struct wal_replay_report rep;
	int rc, nfiles, clean;

	if (!fz_ready)
		fz_setup();
	if (size >= FZ_CTRL) {
		ctl = data[0];
		split = data[1];
		start_b = data[2];
		from_b = data[3];
		body = data + FZ_CTRL;
		n = size - FZ_CTRL;
	} else {
		body = data;
		n = size;
	}
	fz_clear_dir();
	n1 = split ? n * split / 256 : n;
	n2 = n - n1;
	nfiles = split ? 2 : 1;

	/* file 1 */
	name1 = start_b ? start_b : 1;
	s1 = (ctl & FZ_SYNTH) ? 64 + n1 : n1;
	f1 = malloc(s1 ? s1 : 1);
	fz_check(f1 != NULL, "malloc");
	if (ctl & FZ_SYNTH) {
		fz_file_header(f1, name1, (s1 + 4095) & ~(uint64_t)4095);
		memcpy(f1 + 64, body, n1);
	} else {
		memcpy(f1, body, n1);
		if (s1 >= 24 && fz_le64(f1 + 16) != 0)
			name1 = fz_le64(f1 + 16);
	}
	if (ctl & FZ_MISNAME)
		name1++;
	next1 = name1;
	if (ctl & FZ_RESEAL)
		next1 = fz_reseal(f1, s1, name1 - ((ctl & FZ_MISNAME) != 0), ctl & FZ_RENUMBER);
	fz_write_file(name1, f1, s1);

	/* file 2 */
	if (nfiles == 2) {
		s2 = (ctl & FZ_SYNTH) ? 64 + n2 : n2;
		f2 = malloc(s2 ? s2 : 1);
		fz_check(f2 != NULL, "malloc");
		name2 = next1 > name1 ? next1 : name1 + 1;
		if (ctl & FZ_SYNTH) {
			fz_file_header(f2, name2, (s2 + 4095) & ~(uint64_t)4095);
			memcpy(f2 + 64, body + n1, n2);
		} else {
			memcpy(f2, body + n1, n2);
			if (s2 >= 24 && fz_le64(f2 + 16) != 0 && fz_le64(f2 + 16) != name1)
				name2 = fz_le64(f2 + 16);
		}
		if (ctl & FZ_RESEAL)
			fz_reseal(f2, s2, name2, ctl & FZ_RENUMBER);
		fz_write_file(name2, f2, s2);
	}

	/* replay */
	from = (ctl & FZ_FROM) ? from_b : 0;
	memset(&c, 0, sizeof(c));
	c.from = from ? from : 1;
	c.records = (ctl & FZ_RECORDS) != 0;
	rc = wal_replay(fz_dir, from, fz_frame, &c, (ctl & FZ_TRUNCATE) ? WAL_REPLAY_TRUNCATE : 0, &rep);
	fz_check(fz_rc_documented(rc), "replay returns a documented code");
	fz_check(rc != FLASH_EWAL_STOPPED, "the callback never stops");
	fz_check(rep.frames == c.frames, "report counts the frames passed");
	fz_check(c.frames == 0 || rep.first_lsn == c.first, "report names the first frame passed");
	fz_check(c.frames == 0 || rep.last_lsn >= c.last, "report's last LSN covers the frames passed");
	fz_check(rc == FLASH_EWAL_NOTTAIL || rc == FLASH_ESYS || rep.stop == rc, "report's stop is the result");
	fz_check(rc != FLASH_EWAL_NOTTAIL || (ctl & FZ_TRUNCATE), "ENOTTAIL only when truncating");
	fz_check(rc != FLASH_EWAL_NOTTAIL || fz_frame_level(rep.stop) || rep.stop == FLASH_EWAL_GAP,
	         "ENOTTAIL names a frame-level cause or a gap");

	/* the independent decoder predicts everything */
	{
		struct fz_file fs[2] = { { name1, f1, s1 }, { name2, f2, s2 } };
		struct fz_want w;

		int rc_ok;

		fz_oracle_dir(fs, nfiles, from, (ctl & FZ_TRUNCATE) != 0, &w);
		rc_ok = rc == w.rc || (rc == FLASH_ESYS && w.rc == w.stop && fz_frame_level(w.stop) &&
		                       (ctl & FZ_TRUNCATE) && w.seg_bytes > FZ_FILE_MAX);
		if (w.stop != rep.stop || !rc_ok)
			fprintf(stderr, "fuzz_wal: decoder %s (stop %s), format says %s (stop %s)\n",
			        flash_rcname(rc), flash_rcname(rep.stop), flash_rcname(w.rc), flash_rcname(w.stop));
		fz_check(rep.stop == w.stop, "stop cause as the format says");
		fz_check(rc_ok, "result as the format says (EIO only for a refused preallocation)");
		fz_check(c.frames == w.passed, "frames passed as the format says");
		fz_check(rep.offset == w.offset, "stop offset as the format says");
		fz_check(rep.last_lsn == w.last, "last LSN as the format says");
	}

	/* the truncated tail */
	clean = rc == FLASH_OK;
	if ((ctl & FZ_TRUNCATE) && fz_frame_level(rc)) {
		uint64_t frames2, last2;
		uint64_t name_last = nfiles == 2 && rep.file[0] && strstr(rep.file, "wal-") &&
		                     strtoull(strrchr(rep.file, '-') + 1, NULL, 16) == name2 ? name2 : name1;
		size_t sz;
		uint8_t *t = fz_read_file(name_last, &sz);
		uint64_t seg_bytes = fz_le64(t + 24);
		size_t old = name_last == name1 ? s1 : s2;

		fz_check(sz == (seg_bytes > rep.offset ? seg_bytes : rep.offset), "cut file keeps its size");
		fz_check(rep.offset <= sz && fz_zero(t + rep.offset, sz - rep.offset), "cut file zero after the cut");
		fz_check(rep.truncated_bytes == (old > rep.offset ? old - rep.offset : 0), "truncated bytes counted");
		free(t);
		rc = fz_count(from, &frames2, &last2, NULL, NULL);
		fz_check(rc == FLASH_OK, "a cut WAL replays cleanly");
		fz_check(frames2 == c.frames, "a cut WAL keeps every good frame");
		fz_check(last2 == rep.last_lsn, "a cut WAL keeps its last LSN");
		clean = 1;
	}

	/* append after a clean end */
	if ((ctl & FZ_APPEND) && clean) {
		struct wal_opts wo = { .segment_bytes = 4096, .start_lsn = 1 };
		uint64_t fb, lb, fa, la, lsn;
		struct wal_rec back;
		struct flash_record r;
		wal_t *w;
		int have;

		/* a replay from a later LSN skips earlier files: they must be clean too */
		rc = fz_count(0, &fb, &lb, NULL, NULL);
		fz_check(rc == FLASH_OK || from > 1, "clean before append");
		rc = rc == FLASH_OK ? wal_open(fz_dir, &wo, &w) : FLASH_ESYS;
		fz_check(rc == FLASH_OK || rc == FLASH_ESYS, "a clean WAL opens (EIO: refused preallocation)");
		if (rc == FLASH_OK) {
			memset(&r, 0, sizeof(r));
			r.type = FLASH_REC_RESTOCK;
			r.activity_id = 7;
			r.sku_id = 9;
			r.value = 3;
			rc = wal_append_record(w, &r, 11, &lsn);
			fz_check(rc == FLASH_OK, "append");
			rc = wal_commit(w);
			fz_check(rc == FLASH_OK || rc == FLASH_EWAL_FAILED, "commit");
			fz_check(wal_close(w) == rc, "close returns the commit's result");
			if (rc == FLASH_OK) {
				fz_check(fz_count(0, &fa, &la, &back, &have) == FLASH_OK, "clean after append");
				fz_check(fa == fb + 1 && la == lsn, "the appended frame is the last");
				fz_check(have && memcmp(&back.wr_rec, &r, sizeof(r)) == 0 && back.wr_seq == 11,
				         "the appended record reads back");
			}
		}
	}

	if (c.h != NULL) {
		fz_seg_agree(c.h);
		fz_check(flash_close(c.h) == FLASH_OK, "close the replay segment");
	}
	if (c.fold != NULL) {
		const struct fold_sku *v;
		size_t nv;

		fz_check(fold_skus(c.fold, &v, &nv) == FLASH_OK, "fold result");
		fold_free(c.fold);
	}
	free(f1);
	free(f2);
	return 0;
}

#ifndef FLASH_LIBFUZZER
/*
 * --make-corpus DIR: seeds written by the real writer (wal_open, append,
 * commit): the files of a WAL, each as one input (control 0: raw file), and
 * variants of them with the control bits set.
 */
static int fz_seed_write(const char *dir, const char *name, const uint8_t ctl[4],
                         const uint8_t *p, size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (f == NULL) {
		perror(path);
		return -1;
	}
	fwrite(ctl, 1, FZ_CTRL, f);
	fwrite(p, 1, n, f);
	fclose(f);
	return 0;
}

/* Length of a file without its zero tail (frames end at an 8-byte boundary). */
static size_t fz_used(const uint8_t *p, size_t n)
{
	while (n > 64 && p[n - 1] == 0)
		n--;
	return (n + 7) & ~(size_t)7;
}

static int fz_make_corpus(const char *out)
{
	struct wal_opts wo = { .segment_bytes = 4096, .start_lsn = 1 };
	struct flash_record r;
	wal_t *w;
	uint64_t lsn;
	size_t n;
	uint8_t *p;

	fz_setup();
	fz_clear_dir();
	if (wal_open(fz_dir, &wo, &w) != FLASH_OK)
		return 1;
	/* one of each record type, as the engine emits them */
	memset(&r, 0, sizeof(r));
	r.type = FLASH_REC_ACTIVITY;
	r.activity_id = 1;
	r.biz_day = 2 | (0u << 8) | (1u << 16);
	r.limit_slot = 3;
	r.value = 1;
	r.ts_ns = INT64_MAX;
	wal_append_record(w, &r, 1, &lsn);
	memset(&r, 0, sizeof(r));
	r.type = FLASH_REC_SKU;
	r.activity_id = 1;
	r.sku_id = 1;
	r.qty = 2;
	r.value = 10;
	wal_append_record(w, &r, 2, &lsn);
	for (uint64_t i = 1; i <= 3; i++) {
		memset(&r, 0, sizeof(r));
		r.type = FLASH_REC_ORDER;
		r.activity_id = 1;
		r.sku_id = 1;
		r.qty = 1;
		r.order_no = i;
		r.user_id = 100 + i;
		r.limit_slot = 1;
		r.request_id = i == 2 ? 77 : 0;
		wal_append_record(w, &r, 2 + i, &lsn);
	}
	memset(&r, 0, sizeof(r));
	r.type = FLASH_REC_CANCEL;
	r.activity_id = 1;
	r.sku_id = 1;
	r.qty = 1;
	r.order_no = 2;
	r.user_id = 102;
	r.limit_slot = 1;
	r.flags = 1;
	wal_append_record(w, &r, 6, &lsn);
	memset(&r, 0, sizeof(r));
	r.type = FLASH_REC_RESTOCK;
	r.activity_id = 1;
	r.sku_id = 1;
	r.value = -2;
	wal_append_record(w, &r, 7, &lsn);
	if (wal_commit(w) != FLASH_OK)
		return 1;
	/* a second commit group that crosses into a second file */
	for (int i = 0; i < 40; i++) {
		memset(&r, 0, sizeof(r));
		r.type = FLASH_REC_RESTOCK;
		r.activity_id = 1;
		r.sku_id = 1;
		r.value = 1;
		wal_append_record(w, &r, 8 + (uint64_t)i, &lsn);
	}
	if (wal_commit(w) != FLASH_OK || wal_close(w) != FLASH_OK)
		return 1;

	/* file 1: raw, and the same through each path */
	p = fz_read_file(1, &n);
	{
		size_t u = fz_used(p, n);
		static const uint8_t c_raw[4] = { 0, 0, 0, 0 };
		static const uint8_t c_rec[4] = { FZ_RECORDS, 0, 0, 0 };
		static const uint8_t c_rec_app[4] = { FZ_RECORDS | FZ_APPEND | FZ_TRUNCATE, 0, 0, 0 };
		static const uint8_t c_reseal[4] = { FZ_RESEAL | FZ_RENUMBER | FZ_RECORDS, 0, 0, 0 };
		static const uint8_t c_from[4] = { FZ_FROM | FZ_RECORDS, 0, 0, 4 };
		static const uint8_t c_synth[4] = { FZ_SYNTH | FZ_RESEAL | FZ_RENUMBER | FZ_RECORDS, 0, 1, 0 };
		static const uint8_t c_split[4] = { FZ_SYNTH | FZ_RESEAL | FZ_RENUMBER | FZ_RECORDS | FZ_TRUNCATE,
		                                    128, 1, 0 };
		uint8_t torn[4096];

		fz_seed_write(out, "file1-raw", c_raw, p, n);
		fz_seed_write(out, "file1-records", c_rec, p, u);
		fz_seed_write(out, "file1-records-append", c_rec_app, p, u);
		fz_seed_write(out, "file1-reseal", c_reseal, p, u);
		fz_seed_write(out, "file1-from", c_from, p, u);
		fz_seed_write(out, "frames-synth", c_synth, p + 64, u - 64);
		fz_seed_write(out, "frames-split", c_split, p + 64, u - 64);
		/* a torn tail: the last frame half written */
		memcpy(torn, p, u);
		fz_seed_write(out, "file1-torn-truncate", c_rec_app, torn, u - 40);
		/* a flipped payload bit: a CRC mismatch in the middle */
		torn[64 + 32 + 5] ^= 0x10;
		fz_seed_write(out, "file1-crc-flip", c_rec_app, torn, u);
	}
	free(p);
	/* the second file the writer started */
	{
		DIR *d = opendir(fz_dir);
		struct dirent *e;
		static const uint8_t c_rec_app[4] = { FZ_RECORDS | FZ_APPEND | FZ_TRUNCATE, 0, 0, 0 };

		while (d && (e = readdir(d)) != NULL) {
			unsigned long long l;

			if (sscanf(e->d_name, "wal-%16llx.log", &l) == 1 && l != 1) {
				p = fz_read_file(l, &n);
				fz_seed_write(out, "file2-raw", c_rec_app, p, fz_used(p, n));
				free(p);
			}
		}
		if (d)
			closedir(d);
	}
	/* odd sizes: empty, a bare magic, a bare header */
	{
		static const uint8_t c0[4] = { 0, 0, 0, 0 };
		static const uint8_t c_hdr[4] = { FZ_SYNTH | FZ_APPEND, 0, 9, 0 };

		fz_seed_write(out, "empty", c0, NULL, 0);
		fz_seed_write(out, "magic-only", c0, (const uint8_t *)"FSWALSEG", 8);
		fz_seed_write(out, "header-only", c_hdr, NULL, 0);
	}
	/* versioned terms: an activity's new terms (ACTIVITY, flags 1) and a
	 * sku's price (PRICE), between orders, replayed into a segment and
	 * folded; the second order holds the slot the new limit gives */
	fz_clear_dir();
	if (wal_open(fz_dir, &wo, &w) != FLASH_OK)
		return 1;
	memset(&r, 0, sizeof(r));
	r.type = FLASH_REC_ACTIVITY;
	r.activity_id = 1;
	r.biz_day = 1 | (0u << 8) | (1u << 16);
	r.limit_slot = 3;
	r.value = 1;
	r.ts_ns = INT64_MAX;
	r.order_no = 1;
	wal_append_record(w, &r, 1, &lsn);
	memset(&r, 0, sizeof(r));
	r.type = FLASH_REC_SKU;
	r.activity_id = 1;
	r.sku_id = 1;
	r.qty = 1;
	r.value = 10;
	r.order_no = 2;
	wal_append_record(w, &r, 2, &lsn);
	for (uint16_t slot = 1; slot <= 2; slot++) {
		if (slot == 2) {
			memset(&r, 0, sizeof(r));
			r.type = FLASH_REC_ACTIVITY;       /* limit 1 -> 2 */
			r.activity_id = 1;
			r.biz_day = 2 | (0u << 8) | (1u << 16);
			r.limit_slot = 3;
			r.value = 1;
			r.ts_ns = INT64_MAX;
			r.order_no = 4;
			r.flags = 1;
			wal_append_record(w, &r, 4, &lsn);
			memset(&r, 0, sizeof(r));
			r.type = FLASH_REC_PRICE;
			r.activity_id = 1;
			r.sku_id = 1;
			r.value = 1999;
			r.order_no = 5;
			r.ts_ns = 1;
			wal_append_record(w, &r, 5, &lsn);
		}
		memset(&r, 0, sizeof(r));
		r.type = FLASH_REC_ORDER;
		r.activity_id = 1;
		r.sku_id = 1;
		r.qty = 1;
		r.order_no = slot;
		r.user_id = 101;
		r.limit_slot = slot;
		wal_append_record(w, &r, slot == 1 ? 3 : 6, &lsn);
	}
	if (wal_commit(w) != FLASH_OK || wal_close(w) != FLASH_OK)
		return 1;
	p = fz_read_file(1, &n);
	{
		static const uint8_t c_rec_app[4] = { FZ_RECORDS | FZ_APPEND | FZ_TRUNCATE, 0, 0, 0 };

		fz_seed_write(out, "terms-update-and-price", c_rec_app, p, fz_used(p, n));
	}
	free(p);
	fz_clear_dir();
	return 0;
}

static int fz_main_hook(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--make-corpus") == 0)
		return fz_make_corpus(argv[2]);
	return -1;
}
#define FUZZ_MAIN_HOOK fz_main_hook
#include "fuzz_main.h"
#endif
