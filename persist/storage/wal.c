/*
 * wal.c -- the write-ahead log (see wal.h for the format and the contract).
 *
 * Divisions:
 *   1. Encoding                record type names, frame/file header encode and check (the
 *                              WAL_E* codes are FLASH_EWAL_*: api/flashstock.c names them)
 *   2. Files                   names, listing, creating the next file
 *   3. Scanning one file       the frame verifier shared by open and replay
 *   4. Appending               wal_append, the leader's batch write, wal_sync
 *   5. Open and close
 *   6. Replay                  resynchronisation past a bad frame (torn tail or
 *                              corruption), cutting in place, wal_replay, wal_cut_after
 *   7. Removing old files      wal_remove_before
 *   8. Reading behind a writer wal_read_durable
 */
#include "wal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "crash.h"
#include "crc32c.h"
#include "pio.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the WAL format is little endian; add byte swapping for this target"
#endif

_Static_assert(sizeof(struct flash_record) == 64, "flash_record is 64 bytes");
_Static_assert(sizeof(struct wal_rec) == 72, "wal_rec is 72 bytes");

/* ------------------------------------------------------------------------
 * 1. Encoding
 * ------------------------------------------------------------------------ */

int wal_rc_is_stop(int rc)
{
	switch (rc) {
	case FLASH_EWAL_ZERO_LEN:
	case FLASH_EWAL_SHORT:
	case FLASH_EWAL_PAST_END:
	case FLASH_EWAL_LONG:
	case FLASH_EWAL_MAGIC:
	case FLASH_EWAL_FILE_HDR:
	case FLASH_EWAL_CRC:
	case FLASH_EWAL_LSN:
	case FLASH_EWAL_PREV:
	case FLASH_EWAL_GAP:
	case FLASH_EWAL_NOTTAIL:
	case FLASH_EWAL_TORN:
	case FLASH_EWAL_TYPE:
	case FLASH_EWAL_IDENT:
		return 1;
	default:
		return 0;
	}
}

const char *wal_rec_type_name(uint16_t type, const char *unknown)
{
	switch (type) {
	case FLASH_REC_ORDER:    return "order";
	case FLASH_REC_CANCEL:   return "cancel";
	case FLASH_REC_RESTOCK:  return "restock";
	case FLASH_REC_ACTIVITY: return "activity";
	case FLASH_REC_SKU:      return "sku";
	case FLASH_REC_GEN:      return "gen";
	case FLASH_REC_ARCHIVE:  return "archive";
	case FLASH_REC_CONFIRM:  return "confirm";
	case FLASH_REC_EXPIRE:   return "expire";
	case FLASH_REC_PRICE:    return "price";
	default:                 return unknown;
	}
}

/* One field of wal_rec_fields: its JSON and text names and its value. */
struct wal_field {
	const char *json, *text;
	int         kind;          /* 'u' unsigned, 'i' signed, 's' a string */
	uint64_t    u;
	int64_t     i;
	const char *s;
};

#define WAL_FIELDS_MAX 14     /* an ORDER of a cart's line: 13 */

#define WF_U(j, t, v) ((struct wal_field){ (j), (t), 'u', (uint64_t)(v), 0, NULL })
#define WF_I(j, t, v) ((struct wal_field){ (j), (t), 'i', 0, (int64_t)(v), NULL })
#define WF_S(j, v)    ((struct wal_field){ (j), (j), 's', 0, 0, (v) })

/* The fields of @p r's type into @p f (at most WAL_FIELDS_MAX); returns how many. */
static unsigned wal_rec_field_list(const struct flash_record *r, struct wal_field *f)
{
	unsigned n = 0;

	switch (r->type) {
	case 0:                                  /* a feed's gap line: nothing but its LSN */
		break;
	case FLASH_REC_ORDER:
	case FLASH_REC_CANCEL:
	case FLASH_REC_CONFIRM:
	case FLASH_REC_EXPIRE:
		f[n++] = WF_U("activity_id", "activity", r->activity_id);
		f[n++] = WF_U("sku_id", "sku", r->sku_id);
		f[n++] = WF_U("qty", "qty", r->qty);
		f[n++] = WF_U("order_no", "order", r->order_no);
		f[n++] = WF_U("user_id", "user", r->user_id);
		f[n++] = WF_I("ts_ns", "ts_ns", r->ts_ns);
		f[n++] = WF_U("biz_day", "biz_day", r->biz_day);
		f[n++] = WF_U("limit_slot", "limit_slot", r->limit_slot);
		if (r->type == FLASH_REC_ORDER) {
			f[n++] = WF_U("request_id", "request_id", r->request_id);
			f[n++] = WF_U("flags", "flags", r->flags);
		} else if (r->type != FLASH_REC_CONFIRM) {
			f[n++] = WF_U("quota_returned", "quota_returned", r->flags & 1u);
		}
		/* a plain order, and its cancel, print as they did before
		 * reservations: a consumer that knows none sees no new member */
		if (r->type == FLASH_REC_CANCEL && (r->flags & 2u))
			f[n++] = WF_U("reservation", "reservation", 1);
		if (r->type != FLASH_REC_CANCEL && (r->type != FLASH_REC_ORDER || r->value != 0))
			f[n++] = WF_I("pay_by_ns", "pay_by_ns", r->value);
		/* a cart's line (flash_cart_order): a plain order shows neither */
		if (r->flags & FLASH_REC_F_CART) {
			f[n++] = WF_U("line", "line", FLASH_REC_LINE(r->flags));
			f[n++] = WF_U("last", "last", (r->flags & FLASH_REC_F_LAST) ? 1 : 0);
		}
		break;
	case FLASH_REC_RESTOCK:
		f[n++] = WF_U("activity_id", "activity", r->activity_id);
		f[n++] = WF_U("sku_id", "sku", r->sku_id);
		f[n++] = WF_I("delta", "delta", r->value);
		f[n++] = WF_I("ts_ns", "ts_ns", r->ts_ns);
		break;
	case FLASH_REC_ACTIVITY:
		f[n++] = WF_U("activity_id", "activity", r->activity_id);
		f[n++] = WF_I("start_ns", "start_ns", r->value);
		f[n++] = WF_I("end_ns", "end_ns", r->ts_ns);
		f[n++] = WF_U("limit_per_user", "limit_per_user", r->biz_day & 0xffu);
		f[n++] = WF_U("scope", "scope", (r->biz_day >> 8) & 0xffu);
		f[n++] = WF_U("flags", "flags", r->biz_day >> 16);
		f[n++] = WF_U("max_qty", "max_qty", r->limit_slot);
		f[n++] = WF_I("day_offset_s", "day_offset_s", (int64_t)r->request_id);
		f[n++] = WF_U("version", "version", r->order_no);
		f[n++] = WF_U("update", "update", r->flags & 1u);
		break;
	case FLASH_REC_SKU:
		f[n++] = WF_U("activity_id", "activity", r->activity_id);
		f[n++] = WF_U("sku_id", "sku", r->sku_id);
		f[n++] = WF_I("units", "units", r->value);
		f[n++] = WF_U("shards", "shards", r->qty);
		f[n++] = WF_I("ts_ns", "ts_ns", r->ts_ns);
		f[n++] = WF_U("version", "version", r->order_no);
		break;
	case FLASH_REC_PRICE:
		f[n++] = WF_U("activity_id", "activity", r->activity_id);
		f[n++] = WF_U("sku_id", "sku", r->sku_id);
		f[n++] = WF_I("price", "price", r->value);
		f[n++] = WF_U("version", "version", r->order_no);
		f[n++] = WF_I("ts_ns", "ts_ns", r->ts_ns);
		break;
	case FLASH_REC_GEN:
		f[n++] = WF_U("table", "table", r->activity_id);
		f[n++] = WF_U("bank", "bank", r->sku_id);
		f[n++] = WF_S("op", r->qty == 1 ? "advance" : r->qty == 2 ? "clear" : "?");
		f[n++] = WF_U("generation", "generation", r->order_no);
		if (r->qty == 1)
			f[n++] = WF_I("start_ns", "start_ns", r->value);
		else
			f[n++] = WF_I("keys_cleared", "keys_cleared", r->value);
		f[n++] = WF_I("ts_ns", "ts_ns", r->ts_ns);
		break;
	case FLASH_REC_ARCHIVE:
		f[n++] = WF_U("activity_id", "activity", r->activity_id);
		f[n++] = WF_U("orders", "orders", r->order_no);
		f[n++] = WF_U("skus", "skus", r->qty);
		f[n++] = WF_I("shards", "shards", r->value);
		f[n++] = WF_U("tokens", "tokens", r->user_id);
		f[n++] = WF_I("ts_ns", "ts_ns", r->ts_ns);
		break;
	default:                                 /* unknown to this version: the struct as it is */
		f[n++] = WF_U("activity_id", "activity_id", r->activity_id);
		f[n++] = WF_U("sku_id", "sku_id", r->sku_id);
		f[n++] = WF_U("qty", "qty", r->qty);
		f[n++] = WF_U("order_no", "order_no", r->order_no);
		f[n++] = WF_U("user_id", "user_id", r->user_id);
		f[n++] = WF_I("value", "value", r->value);
		f[n++] = WF_I("ts_ns", "ts_ns", r->ts_ns);
		f[n++] = WF_U("biz_day", "biz_day", r->biz_day);
		f[n++] = WF_U("limit_slot", "limit_slot", r->limit_slot);
		f[n++] = WF_U("flags", "flags", r->flags);
		f[n++] = WF_U("request_id", "request_id", r->request_id);
		break;
	}
	return n;
}

size_t wal_rec_fields(char *buf, size_t cap, const struct flash_record *r, int json)
{
	struct wal_field f[WAL_FIELDS_MAX];
	unsigned n = wal_rec_field_list(r, f);
	size_t k = 0;

	if (cap == 0)
		return 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < n; i++) {
		const char *sep = i == 0 ? "" : json ? "," : " ";
		int w;
		if (f[i].kind == 's')
			w = json ? snprintf(buf + k, cap - k, "%s\"%s\":\"%s\"", sep, f[i].json, f[i].s)
			         : snprintf(buf + k, cap - k, "%s%s=%s", sep, f[i].text, f[i].s);
		else if (f[i].kind == 'i')
			w = json ? snprintf(buf + k, cap - k, "%s\"%s\":%" PRId64, sep, f[i].json, f[i].i)
			         : snprintf(buf + k, cap - k, "%s%s=%" PRId64, sep, f[i].text, f[i].i);
		else
			w = json ? snprintf(buf + k, cap - k, "%s\"%s\":%" PRIu64, sep, f[i].json, f[i].u)
			         : snprintf(buf + k, cap - k, "%s%s=%" PRIu64, sep, f[i].text, f[i].u);
		if (w < 0 || (size_t)w >= cap - k)
			return 0;
		k += (size_t)w;
	}
	return k;
}

static const char wal_magic[8] = { 'F', 'S', 'W', 'A', 'L', 'S', 'E', 'G' };
#define WAL_VERSION 1u

/* Frame header fields, at their byte offsets. */
struct wal_fhdr {
	uint32_t fh_len;       /* payload bytes */
	uint16_t fh_type;      /* enum wal_type */
	uint16_t fh_flags;     /* WAL_F_COMMIT, else zero (older writers: always zero) */
	uint64_t fh_lsn;       /* this frame */
	uint64_t fh_prev;      /* fh_lsn - 1 */
	uint32_t fh_crc;       /* CRC-32C of bytes 0..23 and the payload */
	uint32_t fh_zero;      /* zero, not covered */
};
_Static_assert(sizeof(struct wal_fhdr) == WAL_FRAME_HDR_BYTES, "frame header is 32 bytes");
#define WAL_FHDR_CRC_SPAN 24u

/* File header fields. */
struct wal_filehdr {
	char     hd_magic[8];
	uint32_t hd_version;
	uint32_t hd_hdr_bytes;
	uint64_t hd_start_lsn;
	uint64_t hd_seg_bytes;
	int64_t  hd_created_ns;
	uint64_t hd_incarnation; /* segment the WAL belongs to (0: not recorded) */
	uint32_t hd_durability;  /* WAL_DUR_* */
	uint8_t  hd_zero[8];
	uint32_t hd_crc;       /* CRC-32C of bytes 0..59 */
};
_Static_assert(sizeof(struct wal_filehdr) == WAL_FILE_HDR_BYTES, "file header is 64 bytes");

static uint32_t wal_frame_crc(const struct wal_fhdr *h, const void *payload)
{
	uint32_t c = crc32c(0, h, WAL_FHDR_CRC_SPAN);
	return crc32c(c, payload, h->fh_len);
}

static void wal_frame_encode_flags(void *dst, uint16_t type, uint16_t flags, uint64_t lsn,
                                   uint64_t prev_lsn, const void *p, uint32_t len)
{
	struct wal_fhdr h = {
		.fh_len = len, .fh_type = type, .fh_flags = flags,
		.fh_lsn = lsn, .fh_prev = prev_lsn, .fh_crc = 0, .fh_zero = 0,
	};
	unsigned char *d = dst;
	memcpy(d + WAL_FRAME_HDR_BYTES, p, len);
	uint64_t total = wal_frame_bytes(len);
	memset(d + WAL_FRAME_HDR_BYTES + len, 0, total - WAL_FRAME_HDR_BYTES - len);
	h.fh_crc = wal_frame_crc(&h, d + WAL_FRAME_HDR_BYTES);
	memcpy(d, &h, sizeof h);
}

void wal_frame_encode(void *dst, uint16_t type, uint64_t lsn, uint64_t prev_lsn,
                      const void *p, uint32_t len)
{
	wal_frame_encode_flags(dst, type, 0, lsn, prev_lsn, p, len);
}

void wal_frame_reseal(void *frame)
{
	struct wal_fhdr h;
	memcpy(&h, frame, sizeof h);
	h.fh_crc = wal_frame_crc(&h, (unsigned char *)frame + WAL_FRAME_HDR_BYTES);
	memcpy(frame, &h, sizeof h);
}

/* Smallest payload a frame of @p type may have. */
static uint32_t wal_type_min_len(uint16_t type)
{
	return type == WAL_T_RECORD ? (uint32_t)sizeof(struct wal_rec) : 1u;
}

static void wal_filehdr_seal(struct wal_filehdr *h)
{
	h->hd_crc = crc32c(0, h, offsetof(struct wal_filehdr, hd_crc));
}

static void wal_filehdr_encode(struct wal_filehdr *h, uint64_t start_lsn, uint64_t seg_bytes,
                               uint64_t incarnation, uint32_t durability)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	memset(h, 0, sizeof *h);
	memcpy(h->hd_magic, wal_magic, sizeof wal_magic);
	h->hd_version = WAL_VERSION;
	h->hd_hdr_bytes = WAL_FILE_HDR_BYTES;
	h->hd_start_lsn = start_lsn;
	h->hd_seg_bytes = seg_bytes;
	h->hd_created_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	h->hd_incarnation = incarnation;
	h->hd_durability = durability;
	wal_filehdr_seal(h);
}

/* Check a file header read from a file named for @p name_lsn. */
static int wal_filehdr_check(const struct wal_filehdr *h, uint64_t name_lsn)
{
	if (memcmp(h->hd_magic, wal_magic, sizeof wal_magic) != 0)
		return FLASH_EWAL_MAGIC;
	if (h->hd_crc != crc32c(0, h, offsetof(struct wal_filehdr, hd_crc)))
		return FLASH_EWAL_FILE_HDR;
	if (h->hd_version != WAL_VERSION || h->hd_hdr_bytes != WAL_FILE_HDR_BYTES ||
	    h->hd_start_lsn != name_lsn || h->hd_start_lsn == 0 ||
	    h->hd_seg_bytes < WAL_SEGMENT_MIN || h->hd_seg_bytes > WAL_SEGMENT_MAX ||
	    h->hd_seg_bytes % 4096 != 0)
		return FLASH_EWAL_FILE_HDR;   /* the size is preallocated (fallocate) from this field */
	return FLASH_OK;
}

static uint64_t wal_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------------
 * 2. Files
 * ------------------------------------------------------------------------ */

static void wal_path(char *buf, size_t n, const char *dir, uint64_t lsn, const char *ext)
{
	snprintf(buf, n, "%s/wal-%016" PRIx64 ".%s", dir, lsn, ext);
}

/* Parse "wal-<16 hex>.log"; 1 and *lsn on a match. */
static int wal_name_lsn(const char *name, uint64_t *lsn)
{
	return pio_hex16_name(name, "wal-", "log", lsn);
}

static int wal_name_match(const char *name, const void *arg, uint64_t *lsn)
{
	(void)arg;
	return wal_name_lsn(name, lsn);
}

/*
 * List the start LSNs of the files in @p dir, sorted.  A missing directory
 * is an empty list.  Leftover "*.tmp" files (a crash while creating the next
 * file) are ignored.  @return FLASH_OK, FLASH_ESYS or FLASH_ENOMEM; *lsns is malloc'd.
 */
static int wal_list(const char *dir, uint64_t **lsns, size_t *n)
{
	if (pio_dir_numbers(dir, wal_name_match, NULL, lsns, n) == 0)
		return FLASH_OK;
	return errno == ENOMEM ? FLASH_ENOMEM : FLASH_ESYS;
}

/*
 * Take the directory's writer lock: flock(LOCK_EX | LOCK_NB) on <dir>/LOCK.
 * The kernel drops it when the descriptor is closed or the process dies, so
 * a crashed writer never leaves it behind.  @return the locked fd (>= 0),
 * -2 if someone else holds it, -1 with errno on another failure.
 */
static int wal_lock(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/LOCK", dir);
	int fd = pio_open_reg(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (pio_flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int busy = errno == EWOULDBLOCK;
		int saved = errno;
		pio_close(fd);
		errno = saved;
		return busy ? -2 : -1;
	}
	return fd;
}

int wal_lock_held(const char *dir)
{
	if (dir == NULL || strlen(dir) > 4000) {
		errno = EINVAL;
		return -1;
	}
	int fd = wal_lock(dir);
	if (fd == -2)
		return 1;
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	pio_close(fd);
	return 0;
}

/*
 * Create the file that starts at @p lsn, fully durable before it gets its
 * name: create "<name>.tmp", preallocate, write the header, fdatasync,
 * rename, fsync the directory.  A crash leaves either no file or a complete,
 * empty one.  @return the open fd, or -1 with errno.
 */
static int wal_file_create(const char *dir, uint64_t lsn, uint64_t seg_bytes,
                           uint64_t incarnation, uint32_t durability)
{
	char tmp[4096], fin[4096];
	wal_path(tmp, sizeof tmp, dir, lsn, "tmp");
	wal_path(fin, sizeof fin, dir, lsn, "log");
	(void)pio_unlink(tmp);
	int fd = pio_open_reg(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	PERSIST_CRASH("wal_roll", 1);
	struct wal_filehdr h;
	wal_filehdr_encode(&h, lsn, seg_bytes, incarnation, durability);
	if (pio_fallocate(fd, 0, (off_t)seg_bytes) != 0 ||
	    (PERSIST_CRASH("wal_roll", 2), pio_pwrite_full(fd, &h, sizeof h, 0)) != 0 ||
	    (PERSIST_CRASH("wal_roll", 3), pio_fdatasync(fd)) != 0 ||
	    (PERSIST_CRASH("wal_roll", 4), pio_rename(tmp, fin)) != 0 ||
	    (PERSIST_CRASH("wal_roll", 5), pio_fsync_dir(dir)) != 0) {
		int saved = errno;
		pio_close(fd);
		(void)pio_unlink(tmp);
		errno = saved;
		return -1;
	}
	PERSIST_CRASH("wal_roll", 6);
	return fd;
}

/* ------------------------------------------------------------------------
 * 3. Scanning one file
 * ------------------------------------------------------------------------ */

/* 1 if [p, p+n) is all zero. */
static int wal_all_zero(const unsigned char *p, size_t n)
{
	while (n > 0 && ((uintptr_t)p & 7) != 0) {
		if (*p++)
			return 0;
		n--;
	}
	const uint64_t *q = (const uint64_t *)p;
	for (; n >= 64; n -= 64, q += 8)
		if ((q[0] | q[1] | q[2] | q[3] | q[4] | q[5] | q[6] | q[7]) != 0)
			return 0;
	for (; n >= 8; n -= 8)
		if (*q++ != 0)
			return 0;
	p = (const unsigned char *)q;
	while (n-- > 0)
		if (*p++)
			return 0;
	return 1;
}

struct wal_scan {
	int      ws_stop;        /* FLASH_OK: clean end; else the cause */
	uint64_t ws_offset;      /* offset of the end or of the bad frame */
	uint64_t ws_next_lsn;    /* the LSN the next frame must have */
	uint64_t ws_seg_bytes;   /* from the header (0 if the header is bad) */
	uint64_t ws_file_size;   /* st_size */
	uint64_t ws_passed;      /* frames given to the callback */
	uint64_t ws_first;       /* first LSN given to the callback */
	int      ws_err;         /* errno for FLASH_ESYS */
};

/*
 * Verify the file that starts at @p name_lsn frame by frame, from its header
 * to its clean end or its first bad frame, giving frames with lsn >= from_lsn
 * to @p fn (NULL: verify only).  @p expect is the LSN its first frame must
 * have (0: take the header's).  Checks run in this order, and the first that
 * fails names the cause: header room (EPAST_END), length 0 (end if only zeros
 * follow, else EZERO_LEN), length above max (ELONG), below its type's minimum
 * (ESHORT), frame past end of file (EPAST_END), CRC (ECRC), LSN (ELSN),
 * prev-LSN (EPREV), unknown type (ETYPE).  @return ws_stop, or FLASH_ESYS / FLASH_EWAL_STOPPED.
 */
static int wal_scan_file(const char *dir, uint64_t name_lsn, uint64_t expect,
                         uint64_t from_lsn, wal_replay_fn fn, void *arg,
                         struct wal_scan *s)
{
	char path[4096];
	wal_path(path, sizeof path, dir, name_lsn, "log");
	memset(s, 0, sizeof *s);
	s->ws_next_lsn = expect;
	int fd = pio_open_reg(path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0) {
		s->ws_err = errno;
		return s->ws_stop = FLASH_ESYS;
	}
	struct stat st;
	if (pio_fstat(fd, &st) != 0) {
		s->ws_err = errno;
		pio_close(fd);
		return s->ws_stop = FLASH_ESYS;
	}
	uint64_t size = (uint64_t)st.st_size;
	s->ws_file_size = size;
	if (size < WAL_FILE_HDR_BYTES) {
		pio_close(fd);
		return s->ws_stop = size >= sizeof wal_magic ? FLASH_EWAL_FILE_HDR : FLASH_EWAL_MAGIC;
	}
	const unsigned char *m = pio_mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		s->ws_err = errno;
		pio_close(fd);
		return s->ws_stop = FLASH_ESYS;
	}
	pio_close(fd);
	(void)madvise((void *)m, size, MADV_SEQUENTIAL);

	struct wal_filehdr fh;
	memcpy(&fh, m, sizeof fh);
	int rc = wal_filehdr_check(&fh, name_lsn);
	if (rc == FLASH_OK && expect != 0 && fh.hd_start_lsn != expect)
		rc = FLASH_EWAL_GAP;
	if (rc != FLASH_OK) {
		pio_munmap((void *)m, size);
		return s->ws_stop = rc;
	}
	s->ws_seg_bytes = fh.hd_seg_bytes;
	uint64_t lsn = fh.hd_start_lsn;
	uint64_t off = WAL_FILE_HDR_BYTES;
	rc = FLASH_OK;
	for (;;) {
		if (size - off < WAL_FRAME_HDR_BYTES) {
			if (!wal_all_zero(m + off, size - off))
				rc = FLASH_EWAL_PAST_END;
			break;
		}
		struct wal_fhdr h;
		memcpy(&h, m + off, sizeof h);
		if (h.fh_len == 0) {
			if (!wal_all_zero(m + off, size - off))
				rc = FLASH_EWAL_ZERO_LEN;
			break;
		}
		if (h.fh_len > WAL_PAYLOAD_MAX) {
			rc = FLASH_EWAL_LONG;
			break;
		}
		if (h.fh_len < wal_type_min_len(h.fh_type)) {
			rc = FLASH_EWAL_SHORT;
			break;
		}
		uint64_t total = wal_frame_bytes(h.fh_len);
		if (total > size - off) {
			rc = FLASH_EWAL_PAST_END;
			break;
		}
		const unsigned char *payload = m + off + WAL_FRAME_HDR_BYTES;
		if (wal_frame_crc(&h, payload) != h.fh_crc) {
			rc = FLASH_EWAL_CRC;
			break;
		}
		if (h.fh_lsn != lsn) {
			rc = FLASH_EWAL_LSN;
			break;
		}
		if (h.fh_prev != lsn - 1) {
			rc = FLASH_EWAL_PREV;
			break;
		}
		if (h.fh_type == 0 || h.fh_type > WAL_T_MAX) {
			rc = FLASH_EWAL_TYPE;
			break;
		}
		if (fn != NULL && lsn >= from_lsn) {
			if (s->ws_passed++ == 0)
				s->ws_first = lsn;
			if (fn(arg, lsn, h.fh_type, payload, h.fh_len) != 0) {
				lsn++;
				off += total;
				rc = FLASH_EWAL_STOPPED;
				break;
			}
		}
		lsn++;
		off += total;
	}
	pio_munmap((void *)m, size);
	s->ws_offset = off;
	s->ws_next_lsn = lsn;
	return s->ws_stop = rc;
}

/* ------------------------------------------------------------------------
 * 4. Appending
 * ------------------------------------------------------------------------ */

struct wal {
	char           *w_dir;          /* directory, owned */
	int             w_lockfd;       /* holds the directory's writer lock */
	uint64_t        w_seg_bytes;    /* size of files this handle creates */
	uint64_t        w_incarnation;  /* ... and the identity they carry */
	uint32_t        w_durability;

	/* Writer-owned: touched only by the thread holding w_writer (handed
	 * over under w_mu, which orders every access); w_fd is also replaced
	 * under w_mu, where the sync leader copies it. */
	int             w_fd;           /* current file */
	uint64_t        w_file_bytes;   /* its preallocated size (from its header) */
	uint64_t        w_file_off;     /* where the next frame goes */
	unsigned char  *w_wbuf;         /* batch being written (swapped with w_pbuf) */
	size_t          w_wcap;

	/* Under w_mu. */
	pthread_mutex_t w_mu;
	pthread_cond_t  w_cv;           /* leader done / failure */
	unsigned char  *w_pbuf;         /* pending frames, back to back */
	size_t          w_plen;
	size_t          w_pcap;
	uint64_t        w_next_lsn;     /* next LSN to hand out */
	int             w_leader;       /* a thread leads a sync */
	int             w_writer;       /* a thread is writing a batch */
	uint64_t        w_written;      /* highest LSN written to its file (>= w_durable) */
	int             w_failed;       /* sticky: 0 or FLASH_EWAL_FAILED */
	enum wal_op     w_fail_op;
	int             w_fail_errno;
	struct wal_stats w_st;          /* counters (durable_lsn/next_lsn filled on read) */

	/* Lock-free readers. */
	uint64_t        w_durable;      /* highest durable LSN; release store by the leader */

	/* The durable mark (wal.h): published under w_mu by the leader. */
	struct wal_mark *w_mark;        /* <dir>/DURABLE, mapped shared */
};

/* ---- the durable mark (wal.h) ---- */

/*
 * Open <dir>/DURABLE (created 0600 if missing, grown to one page if short,
 * never truncated), map it shared.  @return the mapping, or NULL with errno.
 */
static struct wal_mark *wal_mark_open(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/" WAL_MARK_FILE, dir);
	int fd = pio_open_reg(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st) != 0 || (st.st_size < WAL_MARK_BYTES && ftruncate(fd, WAL_MARK_BYTES) != 0)) {
		int e = errno;
		close(fd);
		errno = e;
		return NULL;
	}
	void *m = mmap(NULL, WAL_MARK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int e = errno;
	close(fd);
	if (m == MAP_FAILED) {
		errno = e;
		return NULL;
	}
	struct wal_mark *k = m;
	if (k->wm_magic != WAL_MARK_MAGIC) {
		k->wm_version = WAL_MARK_VERSION;
		__atomic_store_n(&k->wm_magic, WAL_MARK_MAGIC, __ATOMIC_RELEASE);
	}
	return k;
}

/*
 * Publish @p lsn as durable to readers of other processes (wal.h gives the
 * protocol).  Called by whoever just made @p lsn durable, before it tells
 * anyone else.  The seq_cst increment of wm_seq and load of wm_waiters pair
 * with the reader's seq_cst increment of wm_waiters and load of wm_seq.
 */
static void wal_mark_store(struct wal_mark *k, uint64_t lsn)
{
	__atomic_store_n(&k->wm_durable, lsn, __ATOMIC_RELEASE);
	__atomic_add_fetch(&k->wm_seq, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&k->wm_waiters, __ATOMIC_SEQ_CST) != 0)
		syscall(SYS_futex, &k->wm_seq, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

static void wal_mark_publish(wal_t *w, uint64_t lsn)
{
	if (w->w_mark != NULL)
		wal_mark_store(w->w_mark, lsn);
}

/*
 * Map an existing <dir>/DURABLE, read-only unless @p writable; never
 * creates one.  O_NONBLOCK: a FIFO by that name must not block the open.
 * @return 0 (*out mapped, WAL_MARK_BYTES); 1 there is none, or what is
 *         there is not a mark (not a regular file, short, no magic);
 *         -1 with errno.
 */
static int wal_mark_map(const char *dir, int writable, struct wal_mark **out)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/" WAL_MARK_FILE, dir);
	int fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? 1 : -1;
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < WAL_MARK_BYTES) {
		close(fd);
		return 1;
	}
	void *m = mmap(NULL, WAL_MARK_BYTES, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
	int e = errno;
	close(fd);
	if (m == MAP_FAILED) {
		errno = e;
		return -1;
	}
	*out = m;
	if (__atomic_load_n(&(*out)->wm_magic, __ATOMIC_ACQUIRE) != WAL_MARK_MAGIC) {
		munmap(m, WAL_MARK_BYTES);
		return 1;
	}
	return 0;
}

/*
 * An accepted loss goes down into the mark with the same protocol as a
 * commit (readers asleep on wm_seq wake and see it), then to disk: the
 * page would otherwise reach it whenever the kernel likes, and a crash
 * before that would bring back a mark that calls the cut WAL damaged.
 * Looked at read-only first: a mark with nothing to lower (a torn tail
 * cut above it) needs no write access.
 */
int wal_mark_lower(const char *dir, uint64_t lsn, uint64_t *was)
{
	if (was != NULL)
		*was = 0;
	if (dir == NULL || strlen(dir) > 4000)
		return FLASH_EINVAL;
	struct wal_mark *k;
	int mrc = wal_mark_map(dir, 0, &k);
	if (mrc != 0)
		return mrc > 0 ? FLASH_OK : FLASH_ESYS;
	uint64_t d = __atomic_load_n(&k->wm_durable, __ATOMIC_ACQUIRE);
	munmap(k, WAL_MARK_BYTES);
	if (was != NULL)
		*was = d;
	if (d <= lsn)
		return FLASH_OK;
	if ((mrc = wal_mark_map(dir, 1, &k)) != 0)
		return mrc > 0 ? FLASH_OK : FLASH_ESYS;
	wal_mark_store(k, lsn);
	int rc = msync(k, WAL_MARK_BYTES, MS_SYNC) == 0 ? FLASH_OK : FLASH_ESYS;
	int e = errno;
	munmap(k, WAL_MARK_BYTES);
	errno = e;
	return rc;
}

static int wal_reserve(unsigned char **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t nc = *cap ? *cap : 64 * 1024;
	while (nc < need)
		nc *= 2;
	unsigned char *nb = realloc(*buf, nc);
	if (nb == NULL)
		return -1;
	*buf = nb;
	*cap = nc;
	return 0;
}

int wal_append(wal_t *w, uint16_t type, const void *p, uint32_t len, uint64_t *lsn)
{
	if (w == NULL || type == 0 || type > WAL_T_MAX || p == NULL || len == 0 || len > WAL_PAYLOAD_MAX ||
	    len < wal_type_min_len(type) ||
	    wal_frame_bytes(len) > w->w_seg_bytes - WAL_FILE_HDR_BYTES)
		return FLASH_EINVAL;
	uint64_t total = wal_frame_bytes(len);
	PERSIST_CRASH("wal_append", 1);
	pthread_mutex_lock(&w->w_mu);
	if (w->w_failed) {
		pthread_mutex_unlock(&w->w_mu);
		return FLASH_EWAL_FAILED;
	}
	if (wal_reserve(&w->w_pbuf, &w->w_pcap, w->w_plen + total) != 0) {
		pthread_mutex_unlock(&w->w_mu);
		return FLASH_ENOMEM;
	}
	uint64_t l = w->w_next_lsn++;
	/* WAL_F_COMMIT is the writer's to set, on the first frame of a batch
	 * whose lower LSNs are all durable (wal_write_locked) */
	wal_frame_encode_flags(w->w_pbuf + w->w_plen, type, 0, l, l - 1, p, len);
	w->w_plen += total;
	pthread_mutex_unlock(&w->w_mu);
	PERSIST_CRASH("wal_append", 2);
	if (lsn)
		*lsn = l;
	return FLASH_OK;
}

int wal_append_record(wal_t *w, const struct flash_record *rec, uint64_t seq, uint64_t *lsn)
{
	if (rec == NULL)
		return FLASH_EINVAL;
	struct wal_rec r;
	memcpy(&r.wr_rec, rec, sizeof r.wr_rec);
	r.wr_seq = seq;
	return wal_append(w, WAL_T_RECORD, &r, sizeof r, lsn);
}

/* Time one fdatasync of @p fd into @p ns (stats under w_mu later). */
static int wal_timed_sync(int fd, uint64_t *ns)
{
	uint64_t t0 = wal_now_ns();
	int rc = pio_fdatasync(fd);
	*ns += wal_now_ns() - t0;
	return rc;
}

static void wal_hist_add(struct wal_stats *st, uint64_t ns)
{
	uint64_t us = ns / 1000;
	int b = 0;
	while (us > 1 && b < WAL_HIST_BUCKETS - 1) {
		us >>= 1;
		b++;
	}
	st->sync_hist[b]++;
	st->sync_ns_total += ns;
	if (ns > st->sync_ns_max)
		st->sync_ns_max = ns;
}

/*
 * Writer: write @p len bytes of whole frames to the files.  Frames never
 * span files: the frames that fit go to the current file in one pwrite;
 * when the next frame does not fit, the current file is fdatasync'd (the
 * syncer only ever syncs the newest file) and the next file (named for that
 * frame's LSN) is created before writing on; the new descriptor replaces the
 * old under w_mu, where the syncer takes its copy.  Nothing is retried after
 * an error.  @return 0, or -1 with *op and errno.
 */
static int wal_write_frames(wal_t *w, const unsigned char *buf, size_t len,
                            enum wal_op *op, uint64_t *sync_ns, int *files)
{
	size_t pos = 0;
	while (pos < len) {
		size_t start = pos;
		uint64_t room = w->w_file_bytes - w->w_file_off;
		while (pos < len) {
			struct wal_fhdr h;
			memcpy(&h, buf + pos, sizeof h);
			uint64_t fl = wal_frame_bytes(h.fh_len);
			if (pos - start + fl > room)
				break;
			pos += fl;
		}
		if (pos > start) {
			if (pio_pwrite_full(w->w_fd, buf + start, pos - start, (off_t)w->w_file_off) != 0) {
				*op = WAL_OP_WRITE;
				return -1;
			}
			w->w_file_off += pos - start;
			PERSIST_CRASH("wal_commit", 2);
		}
		if (pos < len) {
			struct wal_fhdr h;
			memcpy(&h, buf + pos, sizeof h);
			if (wal_timed_sync(w->w_fd, sync_ns) != 0) {
				*op = WAL_OP_SYNC;
				return -1;
			}
			PERSIST_CRASH("wal_commit", 3);
			int fd = wal_file_create(w->w_dir, h.fh_lsn, w->w_seg_bytes, w->w_incarnation,
			                         w->w_durability);
			if (fd < 0) {
				*op = WAL_OP_CREATE;
				return -1;
			}
			pthread_mutex_lock(&w->w_mu);
			int old = w->w_fd;
			w->w_fd = fd;
			pthread_mutex_unlock(&w->w_mu);
			pio_close(old);
			w->w_file_bytes = w->w_seg_bytes;
			w->w_file_off = WAL_FILE_HDR_BYTES;
			(*files)++;
		}
	}
	return 0;
}

/* The first frame of @p buf says whether every lower LSN is durable */
static void wal_frame_set_commit(unsigned char *buf, int commit)
{
	struct wal_fhdr h;
	memcpy(&h, buf, sizeof h);
	uint16_t want = commit ? WAL_F_COMMIT : 0;
	if (h.fh_flags == want)
		return;
	h.fh_flags = want;
	h.fh_crc = wal_frame_crc(&h, buf + sizeof h);
	memcpy(buf, &h, sizeof h);
}

/*
 * Become the writer and write everything pending.  Called under w_mu with
 * no writer at work and something pending; returns under w_mu, the writer
 * role given back and everyone woken.  The batch's first frame is flagged
 * WAL_F_COMMIT only if every lower LSN is durable at this moment: a batch
 * written while the one before it is still on its way to disk vouches for
 * nothing (wal.h).
 */
static int wal_write_locked(wal_t *w)
{
	w->w_writer = 1;
	/* Swap buffers: the batch becomes the writer's, appends continue
	 * into the (empty) buffer of the previous batch. */
	unsigned char *batch = w->w_pbuf;
	size_t bcap = w->w_pcap;
	size_t blen = w->w_plen;
	uint64_t last = w->w_next_lsn - 1;
	int commit = __atomic_load_n(&w->w_durable, __ATOMIC_RELAXED) == w->w_written;
	w->w_pbuf = w->w_wbuf;
	w->w_pcap = w->w_wcap;
	w->w_plen = 0;
	w->w_wbuf = batch;
	w->w_wcap = bcap;
	pthread_mutex_unlock(&w->w_mu);
	wal_frame_set_commit(batch, commit);
	PERSIST_CRASH("wal_commit", 1);

	enum wal_op op = WAL_OP_NONE;
	uint64_t sync_ns = 0;
	int files = 0;
	int rc = wal_write_frames(w, batch, blen, &op, &sync_ns, &files);
	int err = errno;

	pthread_mutex_lock(&w->w_mu);
	if (rc != 0) {
		w->w_failed = FLASH_EWAL_FAILED;
		w->w_fail_op = op;
		w->w_fail_errno = err;
	} else {
		w->w_written = last;
		w->w_st.bytes += blen;
		w->w_st.files_created += (uint64_t)files;
		if (files > 0)
			wal_hist_add(&w->w_st, sync_ns);
	}
	w->w_writer = 0;
	pthread_cond_broadcast(&w->w_cv);
	return rc != 0 ? FLASH_EWAL_FAILED : FLASH_OK;
}

int wal_write(wal_t *w, uint64_t *written)
{
	if (w == NULL)
		return FLASH_EINVAL;
	pthread_mutex_lock(&w->w_mu);
	int rc = FLASH_OK;
	for (;;) {
		if (w->w_failed) {
			rc = FLASH_EWAL_FAILED;
			break;
		}
		if (!w->w_writer) {
			if (w->w_plen > 0)
				rc = wal_write_locked(w);
			break;
		}
		pthread_cond_wait(&w->w_cv, &w->w_mu);
	}
	if (written)
		*written = w->w_written;
	pthread_mutex_unlock(&w->w_mu);
	return rc;
}

/*
 * Group commit.  Under w_mu a caller either finds its LSN durable (return),
 * the WAL failed (return FLASH_EWAL_FAILED), a leader at work (sleep on w_cv), or
 * no leader: then it becomes leader.  The leader first sees @p lsn written
 * (writing what is pending itself, or waiting for the writer at work), then
 * takes a descriptor of the newest file and the highest LSN written, drops
 * the lock for the fdatasync, so appends and writes go on meanwhile.  Back
 * under the lock it publishes that LSN as durable (release: a reader that
 * sees the LSN sees it after fdatasync returned) or records the failure,
 * and wakes everyone.  A woken follower not yet covered loops and may lead
 * the next batch.  Files before the newest were synced by the writer before
 * it created the next; the copy of the descriptor (dup) stays valid while
 * the writer moves on to a new file.
 */
int wal_sync(wal_t *w, uint64_t lsn)
{
	if (w == NULL)
		return FLASH_EINVAL;
	pthread_mutex_lock(&w->w_mu);
	if (lsn >= w->w_next_lsn) {
		pthread_mutex_unlock(&w->w_mu);
		return FLASH_EINVAL;
	}
	for (;;) {
		if (w->w_failed) {
			pthread_mutex_unlock(&w->w_mu);
			return FLASH_EWAL_FAILED;
		}
		if (__atomic_load_n(&w->w_durable, __ATOMIC_RELAXED) >= lsn) {
			pthread_mutex_unlock(&w->w_mu);
			return FLASH_OK;
		}
		if (!w->w_leader)
			break;
		pthread_cond_wait(&w->w_cv, &w->w_mu);
	}
	w->w_leader = 1;
	while (!w->w_failed && w->w_written < lsn) {
		if (w->w_writer)
			pthread_cond_wait(&w->w_cv, &w->w_mu);
		else
			(void)wal_write_locked(w);
	}
	int rc = 0, err = 0;
	enum wal_op op = WAL_OP_SYNC;
	uint64_t first = __atomic_load_n(&w->w_durable, __ATOMIC_RELAXED) + 1;
	uint64_t last = w->w_written;
	uint64_t sync_ns = 0;
	int fd = -1;
	if (w->w_failed) {
		rc = -1;
	} else if ((fd = fcntl(w->w_fd, F_DUPFD_CLOEXEC, 0)) < 0) {
		rc = -1;
		err = errno;
		op = WAL_OP_SYNC;
	}
	pthread_mutex_unlock(&w->w_mu);
	if (fd >= 0) {
		rc = wal_timed_sync(fd, &sync_ns);
		err = errno;
		close(fd);
		if (rc == 0)
			PERSIST_CRASH("wal_commit", 3);
	}

	pthread_mutex_lock(&w->w_mu);
	if (rc != 0) {
		if (!w->w_failed) {
			w->w_failed = FLASH_EWAL_FAILED;
			w->w_fail_op = op;
			w->w_fail_errno = err;
		}
	} else {
		__atomic_store_n(&w->w_durable, last, __ATOMIC_RELEASE);
		wal_mark_publish(w, last);
		w->w_st.commits++;
		w->w_st.frames += last - first + 1;
		if (last - first + 1 > w->w_st.max_group)
			w->w_st.max_group = last - first + 1;
		wal_hist_add(&w->w_st, sync_ns);
		PERSIST_CRASH("wal_commit", 4);
	}
	w->w_leader = 0;
	pthread_cond_broadcast(&w->w_cv);
	pthread_mutex_unlock(&w->w_mu);
	return rc != 0 ? FLASH_EWAL_FAILED : FLASH_OK;
}

int wal_commit(wal_t *w)
{
	if (w == NULL)
		return FLASH_EINVAL;
	pthread_mutex_lock(&w->w_mu);
	uint64_t last = w->w_next_lsn - 1;
	int failed = w->w_failed;
	pthread_mutex_unlock(&w->w_mu);
	if (failed)
		return FLASH_EWAL_FAILED;
	if (last < 1 || last <= wal_durable_lsn(w))
		return FLASH_OK;
	return wal_sync(w, last);
}

int wal_submit(wal_t *w, uint16_t type, const void *p, uint32_t len, uint64_t *lsn)
{
	uint64_t l;
	int rc = wal_append(w, type, p, len, &l);
	if (rc != FLASH_OK)
		return rc;
	if (lsn)
		*lsn = l;
	return wal_sync(w, l);
}

uint64_t wal_durable_lsn(const wal_t *w)
{
	return __atomic_load_n(&w->w_durable, __ATOMIC_ACQUIRE);
}

uint64_t wal_next_lsn(wal_t *w)
{
	pthread_mutex_lock(&w->w_mu);
	uint64_t n = w->w_next_lsn;
	pthread_mutex_unlock(&w->w_mu);
	return n;
}

int wal_failure(wal_t *w, enum wal_op *op, int *err_no)
{
	pthread_mutex_lock(&w->w_mu);
	int f = w->w_failed;
	if (op)
		*op = w->w_fail_op;
	if (err_no)
		*err_no = w->w_fail_errno;
	pthread_mutex_unlock(&w->w_mu);
	return f;
}

void wal_stats_get(wal_t *w, struct wal_stats *out)
{
	pthread_mutex_lock(&w->w_mu);
	*out = w->w_st;
	out->next_lsn = w->w_next_lsn;
	out->failed = w->w_failed;
	out->fail_errno = w->w_fail_errno;
	out->fail_op = w->w_fail_op;
	pthread_mutex_unlock(&w->w_mu);
	out->durable_lsn = wal_durable_lsn(w);
}

/* ------------------------------------------------------------------------
 * 5. Open and close
 * ------------------------------------------------------------------------ */

void wal_opts_default(struct wal_opts *o)
{
	o->segment_bytes = WAL_SEGMENT_DEFAULT;
	o->start_lsn = 1;
	o->incarnation = 0;
	o->durability = WAL_DUR_NONE;
}

/* Read the header of the file that starts at @p lsn.  @return FLASH_OK, a
 * header check code, or FLASH_ESYS (errno set). */
static int wal_filehdr_read(const char *dir, uint64_t lsn, struct wal_filehdr *h)
{
	char path[4096];
	wal_path(path, sizeof path, dir, lsn, "log");
	int fd = pio_open_reg(path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return FLASH_ESYS;
	ssize_t n = pio_pread(fd, h, sizeof *h, 0);
	int saved = errno;
	pio_close(fd);
	errno = saved;
	if (n < 0)
		return FLASH_ESYS;
	if ((size_t)n < sizeof *h)
		return (size_t)n >= sizeof wal_magic ? FLASH_EWAL_FILE_HDR : FLASH_EWAL_MAGIC;
	return wal_filehdr_check(h, lsn);
}

int wal_ident(const char *dir, struct wal_ident *out)
{
	if (dir == NULL || out == NULL || strlen(dir) > 4000)
		return FLASH_EINVAL;
	memset(out, 0, sizeof *out);
	uint64_t *lsns;
	size_t n;
	int rc = wal_list(dir, &lsns, &n);
	if (rc != FLASH_OK)
		return rc;
	out->wi_files = (uint32_t)n;
	out->wi_first_lsn = n ? lsns[0] : 0;
	/* newest first: it is the one new files continue */
	int mixed = 0;
	for (size_t i = n; i-- > 0;) {
		struct wal_filehdr h;
		int hrc = wal_filehdr_read(dir, lsns[i], &h);
		if (hrc == FLASH_ESYS && errno != ENOENT) {
			free(lsns);
			return FLASH_ESYS;
		}
		if (hrc != FLASH_OK)
			continue;
		if (i == n - 1) {
			out->wi_incarnation = h.hd_incarnation;
			out->wi_durability = h.hd_durability;
		} else if (h.hd_incarnation != 0 && out->wi_incarnation != 0 &&
		           h.hd_incarnation != out->wi_incarnation) {
			mixed = 1;
		}
	}
	free(lsns);
	return mixed ? FLASH_EWAL_IDENT : FLASH_OK;
}

/* Go on in the WAL's newest file, which starts at LSN @p start: its header
 * checked against the handle's identity, its frames scanned to their end.
 * @return FLASH_OK, or a FLASH_EWAL_* code (errno set for an I/O failure);
 * w->w_fd may be open either way. */
static int wal_resume(wal_t *w, const char *dir, uint64_t start)
{
	struct wal_filehdr fh;
	memset(&fh, 0, sizeof fh);
	int hrc = wal_filehdr_read(dir, start, &fh);
	if (hrc == FLASH_OK && w->w_incarnation != 0 && fh.hd_incarnation != 0 &&
	    fh.hd_incarnation != w->w_incarnation)
		return FLASH_EWAL_IDENT;
	struct wal_scan s;
	int rc = wal_scan_file(dir, start, 0, 0, NULL, NULL, &s);
	if (rc == FLASH_OK && hrc != FLASH_OK)
		return hrc;        /* the scan read it, this read failed: I/O */
	if (rc == FLASH_ESYS) {
		errno = s.ws_err;
		return rc;
	}
	if (rc == FLASH_EWAL_MAGIC || rc == FLASH_EWAL_FILE_HDR)
		return rc;
	if (rc != FLASH_OK)
		return FLASH_EWAL_TORN;
	char path[4096];
	wal_path(path, sizeof path, dir, start, "log");
	w->w_fd = pio_open_reg(path, O_RDWR | O_CLOEXEC, 0);
	if (w->w_fd < 0)
		return FLASH_ESYS;
	/* A file shortened by hand gets its preallocation back. */
	if (s.ws_file_size < s.ws_seg_bytes &&
	    pio_fallocate(w->w_fd, 0, (off_t)s.ws_seg_bytes) != 0)
		return FLASH_ESYS;
	/* The file goes on with this handle's identity: record it in a
	 * header that has none (written before identities) or another
	 * durability.  64 bytes at offset 0, inside one sector. */
	if (w->w_incarnation == 0)
		w->w_incarnation = fh.hd_incarnation;
	if (w->w_durability == WAL_DUR_NONE)
		w->w_durability = fh.hd_durability;
	if (fh.hd_incarnation != w->w_incarnation || fh.hd_durability != w->w_durability) {
		fh.hd_incarnation = w->w_incarnation;
		fh.hd_durability = w->w_durability;
		wal_filehdr_seal(&fh);
		if (pio_pwrite_full(w->w_fd, &fh, sizeof fh, 0) != 0) {
			return FLASH_ESYS;
		}
	}
	/* Frames a dead writer left in the page cache become durable
	 * here, before anyone is told they are (the header too). */
	if (pio_fdatasync(w->w_fd) != 0)
		return FLASH_ESYS;
	w->w_file_bytes = s.ws_seg_bytes;
	w->w_file_off = s.ws_offset;
	w->w_next_lsn = s.ws_next_lsn;
	return FLASH_OK;
}

int wal_open(const char *dir, const struct wal_opts *o, wal_t **out)
{
	struct wal_opts def;
	if (o == NULL) {
		wal_opts_default(&def);
		o = &def;
	}
	if (dir == NULL || out == NULL || o->segment_bytes < WAL_SEGMENT_MIN ||
	    o->segment_bytes > WAL_SEGMENT_MAX || o->segment_bytes % 4096 != 0 || o->start_lsn == 0 ||
	    strlen(dir) > 4000)
		return FLASH_EINVAL;
	if (pio_mkdir(dir, 0700) != 0 && errno != EEXIST)
		return FLASH_ESYS;
	int lockfd = wal_lock(dir);
	if (lockfd < 0)
		return lockfd == -2 ? FLASH_EWAL_BUSY : FLASH_ESYS;

	uint64_t *lsns;
	size_t n;
	int rc = wal_list(dir, &lsns, &n);
	if (rc != FLASH_OK) {
		pio_close(lockfd);
		return rc;
	}

	wal_t *w = calloc(1, sizeof *w);
	if (w == NULL || (w->w_dir = strdup(dir)) == NULL) {
		free(w);
		free(lsns);
		pio_close(lockfd);
		return FLASH_ENOMEM;
	}
	w->w_lockfd = lockfd;
	w->w_seg_bytes = o->segment_bytes;
	w->w_incarnation = o->incarnation;
	w->w_durability = o->durability;
	w->w_fd = -1;
	pthread_mutex_init(&w->w_mu, NULL);
	pthread_cond_init(&w->w_cv, NULL);

	if (n == 0) {
		w->w_fd = wal_file_create(dir, o->start_lsn, o->segment_bytes, w->w_incarnation,
		                          w->w_durability);
		if (w->w_fd < 0) {
			rc = FLASH_ESYS;
			goto fail;
		}
		w->w_file_bytes = o->segment_bytes;
		w->w_file_off = WAL_FILE_HDR_BYTES;
		w->w_next_lsn = o->start_lsn;
		w->w_st.files_created = 1;
	} else if ((rc = wal_resume(w, dir, lsns[n - 1])) != FLASH_OK) {
		goto fail;
	}
	w->w_durable = w->w_next_lsn - 1;
	w->w_written = w->w_durable;
	if ((w->w_mark = wal_mark_open(dir)) == NULL) {
		rc = FLASH_ESYS;
		goto fail;
	}
	{
		/* who publishes from now on; then what wal_open found durable */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		w->w_mark->wm_pid = (int32_t)getpid();
		w->w_mark->wm_incarnation = w->w_incarnation;
		w->w_mark->wm_open_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	}
	wal_mark_publish(w, w->w_durable);
	free(lsns);
	*out = w;
	return FLASH_OK;
fail:
	{
		int saved = errno;
		if (w->w_fd >= 0)
			pio_close(w->w_fd);
		pio_close(w->w_lockfd);
		pthread_mutex_destroy(&w->w_mu);
		pthread_cond_destroy(&w->w_cv);
		free(w->w_dir);
		free(w);
		free(lsns);
		errno = saved;
	}
	return rc;
}

int wal_close(wal_t *w)
{
	if (w == NULL)
		return FLASH_EINVAL;
	int rc = wal_commit(w);
	if (w->w_fd >= 0)
		pio_close(w->w_fd);
	pio_close(w->w_lockfd);     /* the lock goes last: every write is done */
	pthread_mutex_destroy(&w->w_mu);
	pthread_cond_destroy(&w->w_cv);
	if (w->w_mark != NULL)
		munmap(w->w_mark, WAL_MARK_BYTES);
	free(w->w_pbuf);
	free(w->w_wbuf);
	free(w->w_dir);
	free(w);
	return rc;
}

/* ------------------------------------------------------------------------
 * 6. Replay
 * ------------------------------------------------------------------------ */

/* ---- past the stop: resynchronisation ---- */

struct wal_after {
	uint64_t n;        /* valid frames found */
	uint64_t first;    /* lowest LSN among them (0: none) */
	uint64_t last;     /* highest */
	uint64_t proof;    /* highest LSN of a WAL_F_COMMIT frame among them (0: none) */
};

/*
 * Find the valid frames of [m + off, m + size) by trying every 8-byte
 * aligned offset (frames are 8-byte aligned): a frame counts when its header
 * is plausible (length, known type, prev = lsn - 1, it fits) and its CRC
 * matches; the search then steps over the whole frame.  The cheap checks
 * come first, so zeros and garbage cost a compare per 8 bytes.  Each frame
 * found is passed to @p fn (may be NULL); nonzero from it stops the search.
 * @return 0, or 1 if @p fn stopped it.
 */
static int wal_resync(const unsigned char *m, uint64_t size, uint64_t off,
                      wal_replay_fn fn, void *arg, struct wal_after *a)
{
	off = (off + 7) & ~(uint64_t)7;
	while (off <= size && size - off >= WAL_FRAME_HDR_BYTES) {
		struct wal_fhdr h;
		memcpy(&h, m + off, sizeof h);
		if (h.fh_len == 0 || h.fh_len > WAL_PAYLOAD_MAX || h.fh_type == 0 || h.fh_type > WAL_T_MAX ||
		    h.fh_len < wal_type_min_len(h.fh_type) || h.fh_lsn == 0 || h.fh_prev != h.fh_lsn - 1 ||
		    wal_frame_bytes(h.fh_len) > size - off ||
		    wal_frame_crc(&h, m + off + WAL_FRAME_HDR_BYTES) != h.fh_crc) {
			off += 8;
			continue;
		}
		a->n++;
		if (a->first == 0 || h.fh_lsn < a->first)
			a->first = h.fh_lsn;
		if (h.fh_lsn > a->last)
			a->last = h.fh_lsn;
		if ((h.fh_flags & WAL_F_COMMIT) && h.fh_lsn > a->proof)
			a->proof = h.fh_lsn;
		if (fn != NULL && fn(arg, h.fh_lsn, h.fh_type, m + off + WAL_FRAME_HDR_BYTES, h.fh_len) != 0)
			return 1;
		off += wal_frame_bytes(h.fh_len);
	}
	return 0;
}

/* wal_resync() over the file of @p dir that starts at @p lsn, from byte @p off.
 * @return 0; 1 (stopped by @p fn); -1 with errno (open, fstat, mmap). */
static int wal_resync_file(const char *dir, uint64_t lsn, uint64_t off, wal_replay_fn fn,
                           void *arg, struct wal_after *a)
{
	char path[4096];
	wal_path(path, sizeof path, dir, lsn, "log");
	int fd = pio_open_reg(path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct stat st;
	if (pio_fstat(fd, &st) != 0) {
		int e = errno;
		pio_close(fd);
		errno = e;
		return -1;
	}
	uint64_t size = (uint64_t)st.st_size;
	if (size <= off) {
		pio_close(fd);
		return 0;
	}
	const unsigned char *m = pio_mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	int e = errno;
	pio_close(fd);
	if (m == MAP_FAILED) {
		errno = e;
		return -1;
	}
	int rc = wal_resync(m, size, off, fn, arg, a);
	pio_munmap((void *)m, size);
	return rc;
}

/* Causes that a frame (not a file header, not a gap) stopped the scan with. */
static int wal_frame_level(int rc)
{
	return rc == FLASH_EWAL_ZERO_LEN || rc == FLASH_EWAL_SHORT || rc == FLASH_EWAL_PAST_END || rc == FLASH_EWAL_LONG ||
	       rc == FLASH_EWAL_CRC || rc == FLASH_EWAL_LSN || rc == FLASH_EWAL_PREV || rc == FLASH_EWAL_TYPE;
}

/* ---- cutting ---- */

/*
 * Cut the file starting at @p lsn at byte @p off: it ends up
 * max(@p seg_bytes, @p off) bytes long and zero from @p off, durable
 * (fdatasync).  The zeros are written in place over the preallocated blocks,
 * only up to the last nonzero byte, so a cut needs no new block and a full
 * disk does not stop it (ftruncate + fallocate would free the blocks, then
 * have to get them back).  Only a file longer than that is shortened, and
 * only one shorter (cut short by hand) is preallocated back.
 * rep->truncated_bytes = the file's bytes from @p off on.
 */
static int wal_zero_tail(const char *dir, uint64_t lsn, uint64_t off, uint64_t seg_bytes,
                         struct wal_replay_report *rep)
{
	static const unsigned char zeros[64 * 1024];
	char path[4096];
	wal_path(path, sizeof path, dir, lsn, "log");
	int fd = pio_open_reg(path, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		goto io;
	struct stat st;
	if (pio_fstat(fd, &st) != 0)
		goto io_fd;
	uint64_t size = (uint64_t)st.st_size;
	uint64_t want = seg_bytes > off ? seg_bytes : off;
	if (size > want && pio_ftruncate(fd, (off_t)want) != 0)
		goto io_fd;
	uint64_t have = size < want ? size : want;
	if (have > off) {
		const unsigned char *m = pio_mmap(NULL, have, PROT_READ, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED)
			goto io_fd;
		uint64_t end = have;
		while (end > off && m[end - 1] == 0)
			end--;
		pio_munmap((void *)m, have);
		for (uint64_t at = off; at < end;) {
			size_t n = end - at < sizeof zeros ? (size_t)(end - at) : sizeof zeros;
			if (pio_pwrite_full(fd, zeros, n, (off_t)at) != 0)
				goto io_fd;
			at += n;
		}
	}
	if (size < want && pio_fallocate(fd, 0, (off_t)want) != 0)
		goto io_fd;
	if (pio_fdatasync(fd) != 0)
		goto io_fd;
	pio_close(fd);
	rep->truncated_bytes = size > off ? size - off : 0;
	return FLASH_OK;
io_fd:
	{
		int e = errno;
		pio_close(fd);
		errno = e;
	}
io:
	rep->err_no = errno;
	return FLASH_ESYS;
}

/* Remove the files lsns[from..n-1], newest first, then fsync the directory. */
static int wal_unlink_from(const char *dir, const uint64_t *lsns, size_t n, size_t from,
                           struct wal_replay_report *rep)
{
	char path[4096];
	if (from >= n)
		return FLASH_OK;
	for (size_t i = n; i-- > from;) {
		wal_path(path, sizeof path, dir, lsns[i], "log");
		if (pio_unlink(path) != 0 && errno != ENOENT)
			goto io;
		rep->files_removed++;
	}
	if (pio_fsync_dir(dir) != 0)
		goto io;
	return FLASH_OK;
io:
	rep->err_no = errno;
	return FLASH_ESYS;
}

/* ---- replay ---- */

int wal_dir_lock(const char *dir)
{
	if (dir == NULL || strlen(dir) > 4000)
		return FLASH_EINVAL;
	int fd = wal_lock(dir);
	if (fd == -2)
		return FLASH_EWAL_BUSY;
	return fd < 0 ? FLASH_ESYS : fd;
}

void wal_dir_unlock(int fd)
{
	if (fd >= 0)
		pio_close(fd);
}

/* Where wal_replay_locked() stopped: for the cut. */
struct wal_where {
	uint64_t *ww_lsns;     /* the files (owned by the caller afterwards; free()) */
	size_t    ww_n;
	size_t    ww_stop;     /* index of the stop file */
	uint64_t  ww_off;      /* offset of the stop in it */
	int       ww_frame;    /* the stop is a frame (not a file header or a gap) */
	uint64_t  ww_seg_bytes;/* the stop file's size from its header */
};

static int wal_replay_locked(const char *dir, uint64_t from_lsn, wal_replay_fn fn, void *arg,
                             unsigned flags, struct wal_replay_report *rep, struct wal_where *wh);

int wal_replay(const char *dir, uint64_t from_lsn, wal_replay_fn fn, void *arg,
               unsigned flags, struct wal_replay_report *rep)
{
	struct wal_replay_report dummy;
	if (rep == NULL)
		rep = &dummy;
	memset(rep, 0, sizeof *rep);
	if (dir == NULL || strlen(dir) > 4000 ||
	    (flags & ~(WAL_REPLAY_TRUNCATE | WAL_REPLAY_LOCKED | WAL_REPLAY_MARK)) != 0)
		return FLASH_EINVAL;
	if (from_lsn == 0)
		from_lsn = 1;
	/* Truncating changes files: only with the writer lock. */
	int lockfd = -1;
	if ((flags & WAL_REPLAY_TRUNCATE) && !(flags & WAL_REPLAY_LOCKED)) {
		lockfd = wal_lock(dir);
		if (lockfd == -2)
			return rep->stop = FLASH_EWAL_BUSY;
		if (lockfd < 0 && errno != ENOENT) {
			rep->err_no = errno;
			return rep->stop = FLASH_ESYS;
		}
	}
	int rc = wal_replay_locked(dir, from_lsn, fn, arg, flags, rep, NULL);
	if (lockfd >= 0)
		pio_close(lockfd);
	return rc;
}

/*
 * The stop found, look past it: every valid frame after it, in the stop
 * file (from the stop: a CRC-valid frame with a wrong LSN counts too) and
 * in every later file (from its header on, whatever the header says).
 */
static int wal_look_past(const char *dir, const uint64_t *lsns, size_t n, size_t i, uint64_t off,
                         int frame, wal_replay_fn fn, void *arg, struct wal_after *a)
{
	for (size_t j = i; j < n; j++) {
		uint64_t from = j == i && frame ? off : WAL_FILE_HDR_BYTES;
		int r = wal_resync_file(dir, lsns[j], from, fn, arg, a);
		if (r != 0)
			return r;
	}
	return 0;
}

/*
 * What <dir>/DURABLE vouches for (WAL_REPLAY_MARK) of the files @p lsns:
 * its LSN when it names the incarnation of the newest file whose header
 * checks out; else 0 (a mark another WAL left in the directory, or no file
 * to compare with, vouches for nothing).  Unreadable counts as absent: the
 * WAL alone then decides, as before marks existed.
 */
static uint64_t wal_mark_vouched(const char *dir, uint64_t durable, uint64_t incarnation,
                                 const uint64_t *lsns, size_t n)
{
	for (size_t i = n; i-- > 0;) {
		struct wal_filehdr h;
		if (wal_filehdr_read(dir, lsns[i], &h) == FLASH_OK)
			return h.hd_incarnation == incarnation ? durable : 0;
	}
	return 0;
}

static int wal_replay_locked(const char *dir, uint64_t from_lsn, wal_replay_fn fn, void *arg,
                             unsigned flags, struct wal_replay_report *rep, struct wal_where *wh)
{
	/* The mark first, the files after: every value it held was in a file
	 * (fdatasync'd) before it was stored, so a writer appending meanwhile
	 * can only make the files hold more than the value read here. */
	uint64_t mark = 0, mark_inc = 0;
	struct wal_mark *k;
	if ((flags & WAL_REPLAY_MARK) && wal_mark_map(dir, 0, &k) == 0) {
		mark = __atomic_load_n(&k->wm_durable, __ATOMIC_ACQUIRE);
		mark_inc = k->wm_incarnation;
		munmap(k, WAL_MARK_BYTES);
	}
	uint64_t *lsns;
	size_t n;
	int rc = wal_list(dir, &lsns, &n);
	if (rc != FLASH_OK) {
		rep->err_no = errno;
		return rep->stop = rc;
	}
	if (wh != NULL) {
		wh->ww_lsns = lsns;
		wh->ww_n = n;
	}
	if (n == 0) {
		if (wh == NULL)
			free(lsns);
		return rep->stop = FLASH_OK;
	}
	if (mark != 0)
		rep->mark_lsn = wal_mark_vouched(dir, mark, mark_inc, lsns, n);
	/* Start at the last file that begins at or before from_lsn.  Asked for
	 * an LSN older than the oldest file: those frames are gone. */
	size_t i = 0;
	if (from_lsn < lsns[0] && from_lsn > 1) {
		wal_path(rep->file, sizeof rep->file, dir, lsns[0], "log");
		rep->bad_lsn = rep->gap_first = from_lsn;
		rep->gap_last = lsns[0] - 1;
		if (wh == NULL)
			free(lsns);
		else
			wh->ww_stop = n;     /* nothing to cut: the start is missing */
		return rep->stop = FLASH_EWAL_GAP;
	}
	while (i + 1 < n && lsns[i + 1] <= from_lsn)
		i++;

	uint64_t expect = 0;  /* the first file read sets it */
	struct wal_scan s;
	memset(&s, 0, sizeof s);
	for (; i < n; i++) {
		rc = wal_scan_file(dir, lsns[i], expect, from_lsn, fn, arg, &s);
		rep->files++;
		rep->frames += s.ws_passed;
		if (s.ws_passed && rep->first_lsn == 0)
			rep->first_lsn = s.ws_first;
		if (s.ws_next_lsn > 1 && s.ws_next_lsn - 1 > rep->last_lsn && rc != FLASH_EWAL_MAGIC &&
		    rc != FLASH_EWAL_FILE_HDR && rc != FLASH_EWAL_GAP)
			rep->last_lsn = s.ws_next_lsn - 1;
		wal_path(rep->file, sizeof rep->file, dir, lsns[i], "log");
		rep->offset = s.ws_offset;
		if (rc != FLASH_OK)
			break;
		expect = s.ws_next_lsn;
	}
	rep->stop = rc;
	if (rc == FLASH_ESYS)
		rep->err_no = s.ws_err;
	int frame = wal_frame_level(rc);
	if (rc != FLASH_OK && rc != FLASH_ESYS && rc != FLASH_EWAL_STOPPED) {
		/* the first LSN not read, and what follows it */
		rep->bad_lsn = frame ? s.ws_next_lsn : expect != 0 ? expect : lsns[i];
		if (rc == FLASH_EWAL_GAP) {
			rep->gap_first = expect;
			rep->gap_last = lsns[i] > expect ? lsns[i] - 1 : 0;
		}
		struct wal_after a = { 0, 0, 0, 0 };
		if (wal_look_past(dir, lsns, n, i, s.ws_offset, frame, NULL, NULL, &a) < 0) {
			rep->err_no = errno;
			rc = rep->stop = FLASH_ESYS;
		}
		rep->after_frames = a.n;
		rep->after_first_lsn = a.first;
		rep->after_last_lsn = a.last;
		rep->proof_lsn = a.proof > rep->bad_lsn ? a.proof : 0;
		/* below from_lsn the caller vouches (a snapshot covers it): what
		 * a snapshot holds was durable, so a bad frame there is no torn
		 * tail either -- and cutting it would hand its LSN out again;
		 * nor at or below the durable mark, which published it durable */
		rep->torn = frame && i == n - 1 && rep->proof_lsn == 0 && rep->bad_lsn >= from_lsn &&
		            rep->bad_lsn > rep->mark_lsn;
	}
	if (wh != NULL) {
		wh->ww_stop = i;
		wh->ww_off = s.ws_offset;
		wh->ww_frame = frame;
		wh->ww_seg_bytes = s.ws_seg_bytes;
	}
	/* A file whose frames all precede from_lsn still counts in last_lsn;
	 * last_lsn stays 0 for an empty WAL. */
	if (rc != FLASH_OK && rc != FLASH_ESYS && rc != FLASH_EWAL_STOPPED &&
	    (flags & WAL_REPLAY_TRUNCATE)) {
		if (rep->torn) {
			int trc = wal_zero_tail(dir, lsns[i], s.ws_offset, s.ws_seg_bytes, rep);
			if (trc != FLASH_OK)
				rc = trc;
		} else if (frame) {
			rc = FLASH_EWAL_NOTTAIL;     /* a later commit vouches for it, or later files do */
		} else if (i > 0 && rc == FLASH_EWAL_GAP) {
			/* A later file that does not continue the chain:
			 * not a torn tail either. */
			rc = FLASH_EWAL_NOTTAIL;
		}
	}
	if (wh == NULL)
		free(lsns);
	return rc;
}

int wal_cut_after(const char *dir, uint64_t lsn, wal_drop_fn drop, void *arg, unsigned flags,
                  struct wal_replay_report *rep)
{
	struct wal_replay_report dummy;
	if (rep == NULL)
		rep = &dummy;
	memset(rep, 0, sizeof *rep);
	if (dir == NULL || strlen(dir) > 4000 || (flags & ~WAL_REPLAY_LOCKED) != 0)
		return FLASH_EINVAL;
	int lockfd = -1;
	if (!(flags & WAL_REPLAY_LOCKED)) {
		lockfd = wal_lock(dir);
		if (lockfd == -2)
			return FLASH_EWAL_BUSY;
		if (lockfd < 0) {
			rep->err_no = errno;
			return FLASH_ESYS;
		}
	}
	struct wal_where wh = { NULL, 0, 0, 0, 0, 0 };
	int rc = wal_replay_locked(dir, 1, NULL, NULL, 0, rep, &wh);
	if (rc == FLASH_ESYS || rc == FLASH_ENOMEM) {
		/* as reported */
	} else if (rc == FLASH_OK) {
		rc = rep->last_lsn == lsn ? FLASH_OK : FLASH_EINVAL;
	} else if (rep->bad_lsn != lsn + 1 || wh.ww_stop >= wh.ww_n) {
		rc = FLASH_EINVAL;     /* not the last readable LSN, or the WAL's start is missing */
	} else {
		size_t i = wh.ww_stop;
		/* tell what goes, then remove it: later files newest first, then
		 * the stop file's tail (or the file, when its header is the stop) */
		if (drop != NULL) {
			struct wal_after a = { 0, 0, 0, 0 };
			(void)wal_look_past(dir, wh.ww_lsns, wh.ww_n, i, wh.ww_off, wh.ww_frame, drop, arg, &a);
		}
		rc = wal_unlink_from(dir, wh.ww_lsns, wh.ww_n, wh.ww_frame ? i + 1 : i, rep);
		if (rc == FLASH_OK && wh.ww_frame)
			rc = wal_zero_tail(dir, wh.ww_lsns[i], wh.ww_off, wh.ww_seg_bytes, rep);
	}
	free(wh.ww_lsns);
	if (lockfd >= 0)
		pio_close(lockfd);
	return rc;
}

/* ------------------------------------------------------------------------
 * 7. Removing old files
 * ------------------------------------------------------------------------ */

int wal_remove_before(const char *dir, uint64_t lsn, uint32_t *removed)
{
	if (removed)
		*removed = 0;
	if (dir == NULL || strlen(dir) > 4000)
		return FLASH_EINVAL;
	uint64_t *lsns;
	size_t n;
	int rc = wal_list(dir, &lsns, &n);
	if (rc != FLASH_OK)
		return rc;
	uint32_t gone = 0;
	char path[4096];
	for (size_t i = 0; i + 1 < n && lsns[i + 1] <= lsn; i++) {
		wal_path(path, sizeof path, dir, lsns[i], "log");
		if (pio_unlink(path) != 0 && errno != ENOENT) {
			rc = FLASH_ESYS;
			break;
		}
		gone++;
	}
	if (gone > 0 && pio_fsync_dir(dir) != 0 && rc == FLASH_OK)
		rc = FLASH_ESYS;
	free(lsns);
	if (removed)
		*removed = gone;
	return rc;
}

/* ------------------------------------------------------------------------
 * 8. Reading behind a writer
 * ------------------------------------------------------------------------ */

struct wal_upto {
	uint64_t      wu_upto;  /* last LSN to pass */
	wal_replay_fn wu_fn;
	void         *wu_arg;
	int           wu_done;  /* wu_upto was passed (or skipped) */
	int           wu_user;  /* the caller's callback asked to stop */
};

static int wal_upto_cb(void *arg, uint64_t lsn, uint16_t type, const void *p, uint32_t len)
{
	struct wal_upto *u = arg;
	if (lsn > u->wu_upto) {
		u->wu_done = 1;
		return 1;
	}
	if (u->wu_fn(u->wu_arg, lsn, type, p, len) != 0) {
		u->wu_user = 1;
		return 1;
	}
	if (lsn == u->wu_upto) {
		u->wu_done = 1;
		return 1;
	}
	return 0;
}

/*
 * wal_replay() without truncation, stopped by its callback at the durable
 * LSN read first.  Files are listed after that read, so every durable frame
 * is in a listed file (a file exists before any frame is written to it).
 * Past the durable LSN the last file may hold a frame being written: the
 * scan may stop there with a "bad frame" cause, which is not an error once
 * every durable frame has been passed.
 */
int wal_read_durable(wal_t *w, uint64_t from_lsn, wal_replay_fn fn, void *arg,
                     struct wal_replay_report *rep)
{
	struct wal_replay_report dummy;
	if (rep == NULL)
		rep = &dummy;
	if (w == NULL || fn == NULL) {
		memset(rep, 0, sizeof *rep);
		return FLASH_EINVAL;
	}
	if (from_lsn == 0)
		from_lsn = 1;
	struct wal_upto u = { .wu_upto = wal_durable_lsn(w), .wu_fn = fn, .wu_arg = arg };
	if (from_lsn > u.wu_upto) {
		memset(rep, 0, sizeof *rep);
		rep->last_lsn = u.wu_upto;
		return FLASH_OK;
	}
	int rc = wal_replay(w->w_dir, from_lsn, wal_upto_cb, &u, 0, rep);
	if (u.wu_user)
		return rep->stop = FLASH_EWAL_STOPPED;
	if (u.wu_done || (rc != FLASH_ESYS && rc != FLASH_EWAL_GAP && rep->last_lsn >= u.wu_upto)) {
		rep->stop = FLASH_OK;
		if (rep->last_lsn > u.wu_upto)
			rep->last_lsn = u.wu_upto;
		/* The frame that ended the walk was not passed. */
		if (u.wu_done && rep->frames > 0 && rep->first_lsn + rep->frames - 1 > u.wu_upto)
			rep->frames--;
		return FLASH_OK;
	}
	return rc;
}
