/*
 * cmd_wal.c -- `flashstock wal verify|dump`: look into a write-ahead log
 * directory without a segment: check every frame (and say where and why
 * the log stops, and what `serve --recover` would make of it: rebuild.h),
 * print its records, or cut a torn tail by hand.
 */
#include "tool.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pio.h"
#include "rebuild.h"
#include "serve.h"
#include "snapshot.h"
#include "wal.h"

static void wal_help(FILE *out)
{
	fprintf(out,
	        "usage: flashstock wal verify --wal DIR [--truncate] [--json]\n"
	        "       flashstock wal dump   --wal DIR [--from LSN] [--limit N]\n"
	        "       flashstock wal snapshots --wal DIR [--json]\n"
	        "\n"
	        "  verify     reads every frame of the WAL in DIR, checking length, CRC-32C, LSN\n"
	        "             and previous LSN, and reports the files, frames, LSN range and\n"
	        "             where the log ends: cleanly, or at the first bad frame (cause,\n"
	        "             file, byte offset). Then what `serve --recover` would find: 'ok',\n"
	        "             a torn tail (cut by serve), or what it refuses: CORRUPT (a bad\n"
	        "             frame a later commit made durable: the first bad LSN and how many\n"
	        "             valid records follow), MISSING (an LSN range no file holds and no\n"
	        "             snapshot covers: a WAL file deleted, or the WAL ends below the LSN\n"
	        "             DIR/DURABLE says it made durable: its end zeroed or cut, an older\n"
	        "             copy), a snapshot past the WAL's end, no valid snapshot.  A bad\n"
	        "             frame at or below DIR/DURABLE's LSN is CORRUPT too: that mark made\n"
	        "             it durable, no torn tail. --truncate cuts a torn tail in the last\n"
	        "             file so appends can go on (it needs the WAL's writer lock: not\n"
	        "             while `serve` runs on DIR); it never cuts corruption.  It also\n"
	        "             shows the WAL's incarnation: the identity of the segment it\n"
	        "             belongs to (`flashstock status` shows the segment's).\n"
	        "  dump       prints one line per record from LSN (default 1): lsn, type,\n"
	        "             slot=, seq=, then the record's fields named for what they hold\n"
	        "             in its type (name=value; activity, sku, order, user for\n"
	        "             activity_id, sku_id, order_no, user_id):\n"
	        TOOL_REC_FIELDS_HELP
	        "  snapshots  lists the snapshots `serve` wrote in DIR (snap-<LSN>.fss), oldest\n"
	        "             first: LSN, file size, segment bytes, skus folded, and ok, CORRUPT\n"
	        "             or UNREADABLE (why: e.g. a FIFO has its name); with --json one\n"
	        "             object {\"snapshots\":[{\"lsn\", \"file\", \"bytes\", \"segment_bytes\",\n"
	        "             \"skus\", \"ok\", \"error\"}]}.\n"
	        "\n"
	        "  --json     verify prints one JSON object: {\"stop\", \"file\", \"offset\", \"files\",\n"
	        "             \"frames\", \"first_lsn\", \"last_lsn\", \"truncated_bytes\", \"recovery\"\n"
	        "             (\"ok\", \"torn\", \"corrupt\", \"missing\", \"snapshot_ahead\",\n"
	        "             \"no_valid_snapshot\", \"unreadable\", \"short\": below DURABLE),\n"
	        "             \"bad_lsn\", \"valid_after\", \"missing_first\", \"missing_last\",\n"
	        "             \"keep_lsn\", \"message\", \"incarnation\" (16 hex digits, or null: no\n"
	        "             file records one), \"incarnation_mixed\" (true: files of two\n"
	        "             incarnations; the newest shown)}.\n"
	        "\n"
	        "exit: 0 the log ends cleanly and recovery can use it (verify) or was printed\n"
	        "(dump), or every snapshot checks out (snapshots); 1 it stops at a bad frame\n"
	        "(also after --truncate), recovery would refuse it, it cannot be read, or a\n"
	        "snapshot is corrupt; 2 usage error\n");
}

struct wal_dump {
	uint64_t limit;
	uint64_t n;
};

static int wal_dump_cb(void *arg, uint64_t lsn, uint16_t type, const void *p, uint32_t len)
{
	struct wal_dump *d = arg;
	if (type == WAL_T_RECORD && len >= sizeof(struct wal_rec)) {
		struct wal_rec r;
		char f[512];
		memcpy(&r, p, sizeof r);
		(void)wal_rec_fields(f, sizeof f, &r.wr_rec, 0);
		printf("%" PRIu64 " %s slot=%u seq=%" PRIu64 "%s%s\n", lsn,
		       wal_rec_type_name(r.wr_rec.type, "?"), r.wr_rec.slot, r.wr_seq, f[0] ? " " : "", f);
	} else {
		printf("%" PRIu64 " frame type=%u len=%u\n", lsn, type, len);
	}
	return d->limit && ++d->n >= d->limit;
}

static int wal_count_cb(void *arg, uint64_t lsn, uint16_t type, const void *p, uint32_t len)
{
	(void)arg; (void)lsn; (void)type; (void)p; (void)len;
	return 0;
}

/* What the rebuild check passed over on its way (a snapshot it could not
 * use, and why: corrupt, or a FIFO under its name), on stderr: the verdict
 * line alone only counts them. */
static void wal_verify_log(void *arg, int level, const char *msg)
{
	(void)arg;
	if (level <= PLOG_WARN)
		fprintf(stderr, "flashstock: wal verify: %s\n", msg);
}

/* `wal snapshots`: every snap-*.fss in @p dir, checked (CRC of the whole file). */
static int wal_snapshots(const char *dir, int json)
{
	uint64_t *lsns;
	size_t n;
	int rc = snap_list(dir, &lsns, &n);
	if (rc != FLASH_OK)
		return tool_failf("wal snapshots: %s: %s: %s", dir, flash_strerror(rc), strerror(errno));
	int bad = 0;
	if (json)
		printf("{\"snapshots\":[");
	else if (n == 0)
		printf("%s: no snapshots\n", dir);
	for (size_t i = 0; i < n; i++) {
		char path[4200];
		struct snap_file f;
		struct stat st;
		snap_path(path, sizeof path, dir, lsns[i]);
		uint64_t bytes = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
		int frc = snap_file_open(path, &f);
		if (frc == FLASH_OK && f.sf_hdr->sh_lsn != lsns[i]) {
			snap_file_close(&f);
			frc = FLASH_ESNAP_CORRUPT;
		}
		uint64_t seg = frc == FLASH_OK ? f.sf_hdr->sh_seg_bytes : 0;
		uint64_t skus = frc == FLASH_OK ? f.sf_hdr->sh_fold_count : 0;
		const char *why = frc == FLASH_OK ? "" : frc == FLASH_ESYS ? pio_strerror(errno) : flash_strerror(frc);
		if (frc == FLASH_OK)
			snap_file_close(&f);
		else
			bad++;
		if (json) {
			printf("%s{\"lsn\":%" PRIu64 ",\"file\":", i ? "," : "", lsns[i]);
			tool_json_str(stdout, path);
			printf(",\"bytes\":%" PRIu64 ",\"segment_bytes\":%" PRIu64 ",\"skus\":%" PRIu64
			       ",\"ok\":%s,\"error\":", bytes, seg, skus, frc == FLASH_OK ? "true" : "false");
			tool_json_str(stdout, why);
			printf("}");
		} else {
			printf("LSN %" PRIu64 "  %s  %" PRIu64 " bytes  segment %" PRIu64 " bytes  %" PRIu64
			       " skus  %s%s%s\n", lsns[i], path, bytes, seg, skus,
			       frc == FLASH_OK ? "ok" : frc == FLASH_ESYS ? "UNREADABLE" : "CORRUPT",
			       frc == FLASH_OK ? "" : ": ", why);
		}
	}
	if (json)
		printf("]}\n");
	free(lsns);
	return bad ? TOOL_FAIL : TOOL_OK;
}

/* `wal verify --json`: the replay, the rebuild's verdict @p v and the
 * identity as one JSON object. */
static void verify_json(const struct wal_replay_report *rep, int v, const struct rebuild_check *chk,
                        const struct wal_ident *wi, int irc)
{
	static const char *const vname[] = { "ok", "torn", "corrupt", "missing", "snapshot_ahead",
	                                     "no_valid_snapshot", "unreadable", "short" };
	printf("{\"stop\":");
	tool_json_str(stdout, rep->stop == FLASH_OK ? "ok" : flash_rcname(rep->stop));
	printf(",\"file\":");
	tool_json_str(stdout, rep->file);
	printf(",\"offset\":%" PRIu64 ",\"files\":%" PRIu64 ",\"frames\":%" PRIu64
	       ",\"first_lsn\":%" PRIu64 ",\"last_lsn\":%" PRIu64 ",\"truncated_bytes\":%" PRIu64,
	       rep->offset, rep->files, rep->frames, rep->first_lsn, rep->last_lsn, rep->truncated_bytes);
	printf(",\"recovery\":\"%s\",\"bad_lsn\":%" PRIu64 ",\"valid_after\":%" PRIu64
	       ",\"missing_first\":%" PRIu64 ",\"missing_last\":%" PRIu64 ",\"keep_lsn\":%" PRIu64
	       ",\"message\":", vname[v], chk->rep.bad_lsn, chk->rep.after_frames, chk->miss_first,
	       chk->miss_last, chk->keep_lsn);
	tool_json_str(stdout, chk->msg);
	if (wi->wi_incarnation)
		printf(",\"incarnation\":\"%016" PRIx64 "\"", wi->wi_incarnation);
	else
		printf(",\"incarnation\":null");
	printf(",\"incarnation_mixed\":%s}\n", irc == FLASH_EWAL_IDENT ? "true" : "false");
}

/* `wal verify`: the same in lines, with what to run when it is not ok. */
static void verify_text(const char *dir, int rc, const struct wal_replay_report *rep, int v,
                        const struct rebuild_check *chk, const struct wal_ident *wi, int irc)
{
	printf("%s: %" PRIu64 " files, %" PRIu64 " frames, LSN %" PRIu64 "..%" PRIu64 "\n", dir,
	       rep->files, rep->frames, rep->first_lsn, rep->last_lsn);
	if (wi->wi_incarnation)
		printf("incarnation %016" PRIx64 "%s\n", wi->wi_incarnation,
		       irc == FLASH_EWAL_IDENT ? " (newest file; older files carry another: files of two "
		       "WALs mixed)" : "");
	else if (irc != FLASH_OK)
		printf("incarnation unknown: %s\n", flash_strerror(irc));
	else
		printf("incarnation none recorded%s\n", wi->wi_files ? " (files older than identities)" :
		       " (no WAL file)");
	if (rep->stop == FLASH_OK)
		printf("ends cleanly at %s offset %" PRIu64 "\n", rep->file, rep->offset);
	else
		printf("stops at %s offset %" PRIu64 ": %s (%s)%s\n", rep->file, rep->offset,
		       flash_rcname(rep->stop), flash_strerror(rep->stop),
		       rc == FLASH_EWAL_NOTTAIL ? "; not a torn tail: not truncated" : "");
	if (rep->truncated_bytes || rep->files_removed)
		printf("truncated: %" PRIu64 " bytes cut, %u later files removed\n",
		       rep->truncated_bytes, rep->files_removed);
	switch (v) {
	case REBUILD_OK:
		printf("recovery: ok%s\n", chk->snap_lsn ? " (from the snapshot and the WAL after it)" : "");
		break;
	case REBUILD_TORN:
		printf("recovery: %s; serve cuts it\n", chk->msg);
		break;
	default:
		printf("recovery: %s: %s\n", v == REBUILD_CORRUPT ? "CORRUPT" : v == REBUILD_MISSING ||
		       v == REBUILD_SHORT ? "MISSING" : "REFUSED", chk->msg);
		if (v != REBUILD_EIO && v != REBUILD_NOSNAP && chk->can_accept)
			printf("recovery: restore the WAL from a copy, or accept losing every record after "
			       "LSN %" PRIu64 ": serve --recover --accept-loss-after %" PRIu64 "\n",
			       chk->keep_lsn, chk->keep_lsn);
		break;
	}
}

int cmd_wal(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help",     no_argument,       NULL, 'h' },
		{ "wal",      required_argument, NULL, 'w' },
		{ "truncate", no_argument,       NULL, 't' },
		{ "json",     no_argument,       NULL, 'j' },
		{ "from",     required_argument, NULL, 'f' },
		{ "limit",    required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd = argv[0], *dir = NULL, *verb;
	int c, truncate = 0, json = 0;
	uint64_t from = 1, limit = 0;

	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		wal_help(stdout);
		return TOOL_OK;
	}
	if (argc < 2 || (strcmp(argv[1], "verify") != 0 && strcmp(argv[1], "dump") != 0 &&
	                 strcmp(argv[1], "snapshots") != 0))
		return tool_usage_err(cmd, "expected 'verify', 'dump' or 'snapshots'");
	verb = argv[1];
	argc--;
	argv++;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			wal_help(stdout);
			return TOOL_OK;
		case 'w':
			dir = optarg;
			break;
		case 't':
			truncate = 1;
			break;
		case 'j':
			json = 1;
			break;
		case 'f':
			if (tool_opt_u64(cmd, "--from", optarg, 1, UINT64_MAX, &from) != 0)
				return TOOL_USAGE;
			break;
		case 'l':
			if (tool_opt_u64(cmd, "--limit", optarg, 1, UINT64_MAX, &limit) != 0)
				return TOOL_USAGE;
			break;
		default:
			return tool_bad_option(cmd, c, argv);
		}
	}
	if (optind < argc)
		return tool_usage_err(cmd, "unexpected argument '%s'", argv[optind]);
	if (dir == NULL)
		return tool_usage_err(cmd, "--wal is required");
	if (strcmp(verb, "snapshots") == 0) {
		if (truncate || from != 1 || limit != 0)
			return tool_usage_err(cmd, "snapshots takes --wal and --json only");
		return wal_snapshots(dir, json);
	}
	int is_dump = strcmp(verb, "dump") == 0;
	if (is_dump && (truncate || json))
		return tool_usage_err(cmd, "--truncate and --json go with verify");
	if (!is_dump && (from != 1 || limit != 0))
		return tool_usage_err(cmd, "--from and --limit go with dump");

	struct wal_replay_report rep;
	int rc;
	if (is_dump) {
		struct wal_dump d = { .limit = limit };
		rc = wal_replay(dir, from, wal_dump_cb, &d, 0, &rep);
		if (rc == FLASH_EWAL_STOPPED)
			return TOOL_OK;       /* --limit reached */
	} else {
		/* --truncate: only a torn tail, as a rebuild would cut it (a frame a
		 * snapshot holds, or a later commit vouches for, is never cut) */
		rc = wal_replay(dir, 1, wal_count_cb, NULL, 0, &rep);
		static struct rebuild_check tc;
		if (truncate && rep.stop != FLASH_OK && rc != FLASH_ESYS && rc != FLASH_ENOMEM) {
			if (rebuild_check(dir, &tc, NULL, NULL) == REBUILD_TORN) {
				struct wal_replay_report cut;
				int crc = wal_cut_after(dir, tc.keep_lsn, NULL, NULL, 0, &cut);
				if (crc != FLASH_OK)
					return tool_failf("wal verify: %s: cutting the torn tail: %s%s%s", dir,
					                  flash_strerror(crc), cut.err_no ? ": " : "",
					                  cut.err_no ? pio_strerror(cut.err_no) : "");
				rep.truncated_bytes = cut.truncated_bytes;
				rep.files_removed = cut.files_removed;
			} else {
				rc = FLASH_EWAL_NOTTAIL;
			}
		}
	}
	if (rc == FLASH_ESYS || rc == FLASH_EINVAL || rc == FLASH_ENOMEM || rc == FLASH_EWAL_BUSY)
		return tool_failf("wal %s: %s: %s%s%s", verb, dir, flash_strerror(rc),
		                  rep.err_no ? ": " : "", rep.err_no ? pio_strerror(rep.err_no) : "");
	if (is_dump) {
		if (rep.stop != FLASH_OK)
			fprintf(stderr, "flashstock: wal dump: stops at %s offset %" PRIu64 ": %s\n", rep.file,
			        rep.offset, flash_rcname(rep.stop));
		return rep.stop == FLASH_OK ? TOOL_OK : TOOL_FAIL;
	}
	/* what a rebuild would make of it (snapshots included) */
	static struct rebuild_check chk;
	int v = rebuild_check(dir, &chk, wal_verify_log, NULL);
	/* whose WAL it is (file headers only; a mix of two is reported) */
	struct wal_ident wi;
	int irc = wal_ident(dir, &wi);
	if (irc != FLASH_OK && irc != FLASH_EWAL_IDENT)
		memset(&wi, 0, sizeof wi);
	if (json)
		verify_json(&rep, v, &chk, &wi, irc);
	else
		verify_text(dir, rc, &rep, v, &chk, &wi, irc);
	return rep.stop == FLASH_OK && v == REBUILD_OK ? TOOL_OK : TOOL_FAIL;
}
