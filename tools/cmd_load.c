/*
 * cmd_load.c -- `flashstock load`: add activities and their skus to a
 * segment, from command-line flags or from a CSV file.
 *
 * Divisions:
 *   1. The plan: what the input asks for, before anything is touched
 *   2. From flags
 *   3. From CSV
 *   4. Checking the plan against the segment, then applying it
 *
 * Everything is validated before the first change: the header, syntax and
 * ranges of every field, agreement between rows of one activity, duplicate
 * skus, skus and activities already in the segment, and free capacity.
 * Only then are activities and skus added.  A bad input (exit 2) loads
 * nothing.
 *
 * A CSV's header names the columns it has, in any order: stock warm-up is
 * often a plain list of activity_id,sku_id,units.  A column left out is
 * read as empty on every row, so it means what an empty field means: the
 * existing activity's value, or the default (load_help() lists them).
 * Every range is the engine's own (flashstock.h: FLASH_LIMIT_MAX,
 * FLASH_QTY_MAX, FLASH_DAY_OFFSET_MAX_S, FLASH_UNITS_MAX, FLASH_SHARDS_MAX,
 * FLASH_PRICE_MAX),
 * and each resolved activity passes flash_activity_check() before the first
 * change, so the engine never refuses what the check let through.
 */
#include "tool.h"
#include "csv.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ------------------------------------------------------------------------
 * 1. The plan
 * ------------------------------------------------------------------------ */

/* Activity fields an input row or flag may set; anything not given takes
 * the existing activity's value (when the segment already has it) or the
 * default. */
enum { F_START, F_END, F_LIMIT, F_MAXQTY, F_SCOPE, F_CRQ, F_TOKREQ, F_DAYOFF, F_N };

static const char *const load_field_names[F_N] = {
	"start", "end", "limit", "max_qty", "scope",
	"cancel_returns_quota", "token_required", "day_offset_s"
};

struct load_act {
	uint32_t id;
	int      given[F_N];     /* field set by the input */
	int64_t  v[F_N];         /* its value (times in ns) */
	size_t   line[F_N];      /* CSV line that set it (0 for flags) */
	size_t   first_line;     /* CSV line that introduced the activity */
	int      in_segment;     /* already in the catalog: only skus are added */
	struct flash_activity a; /* resolved, ready for flash_activity_add() */
	uint32_t nskus;          /* skus added to it */
	uint64_t units;          /* units added to it */
	uint32_t nprices;        /* prices set on them */
};

struct load_sku {
	uint32_t activity_id;
	uint32_t sku_id;
	uint64_t units;          /* UINT64_MAX: not given yet (flags) */
	uint32_t shards;
	int      shards_given;
	uint64_t price;          /* flash_sku_price_set after the add, */
	int      price_given;    /* when given (a sku starts at price 0) */
	size_t   line;           /* CSV line (0 for flags) */
};

/* The CSV columns a header may name (any subset holding the first three,
 * in any order). */
enum { C_ACT, C_SKU, C_UNITS, C_SHARDS, C_START, C_END, C_LIMIT, C_MAXQTY,
       C_SCOPE, C_CRQ, C_TOKREQ, C_DAYOFF, C_PRICE, C_N };

static const char *const load_csv_cols[C_N] = {
	"activity_id", "sku_id", "units", "shards", "start", "end", "limit",
	"max_qty", "scope", "cancel_returns_quota", "token_required", "day_offset_s",
	"price"
};

/* The CSV column of each activity field. */
static const int load_act_col[F_N] = {
	C_START, C_END, C_LIMIT, C_MAXQTY, C_SCOPE, C_CRQ, C_TOKREQ, C_DAYOFF
};

#define LOAD_DAY_NS (86400LL * 1000000000LL)

struct load_plan {
	const char      *cmd;
	const char      *file;   /* CSV path, NULL for flags */
	int64_t          now_ns; /* one "now" for the whole input */
	struct load_act *acts;
	size_t           nacts, acts_cap;
	struct load_sku *skus;
	size_t           nskus, skus_cap;
	size_t           csv_ncols;        /* header's columns; 0 until it is read */
	size_t           csv_field[C_N];   /* column c (0-based) holds C_ field csv_field[c] */
	size_t           csv_col[C_N];     /* C_ field's column, 1-based; 0: not in the header */
};

/* The 1-based column of C_ field @p c in the input, 0 when it has none
 * (flags, or a header that leaves it out). */
static size_t load_col(const struct load_plan *p, int c)
{
	return p->file ? p->csv_col[c] : 0;
}


/* Report a bad input: with a file, "FILE:LINE: column C (name): why";
 * with flags, a usage error.  @return TOOL_USAGE. */
static int load_bad(const struct load_plan *p, size_t line, size_t col,
                    const char *colname, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int load_bad(const struct load_plan *p, size_t line, size_t col,
                    const char *colname, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (!p->file)
		return tool_usage_err(p->cmd, "%s", msg);
	if (line && col)
		fprintf(stderr, "flashstock: load: %s:%zu: column %zu (%s): %s\n",
		        p->file, line, col, colname ? colname : "?", msg);
	else if (line)
		fprintf(stderr, "flashstock: load: %s:%zu: %s\n", p->file, line, msg);
	else
		fprintf(stderr, "flashstock: load: %s: %s\n", p->file, msg);
	fprintf(stderr, "flashstock: load: nothing was loaded\n");
	return TOOL_USAGE;
}

static struct load_act *load_find_act(struct load_plan *p, uint32_t id)
{
	size_t i;

	for (i = 0; i < p->nacts; i++)
		if (p->acts[i].id == id)
			return &p->acts[i];
	return NULL;
}

static struct load_act *load_new_act(struct load_plan *p, uint32_t id, size_t line)
{
	struct load_act *a;

	if (p->nacts == p->acts_cap) {
		size_t cap = p->acts_cap ? p->acts_cap * 2 : 8;
		a = realloc(p->acts, cap * sizeof *a);
		if (!a)
			return NULL;
		p->acts = a;
		p->acts_cap = cap;
	}
	a = &p->acts[p->nacts++];
	memset(a, 0, sizeof *a);
	a->id = id;
	a->first_line = line;
	return a;
}

static struct load_sku *load_new_sku(struct load_plan *p)
{
	struct load_sku *s;

	if (p->nskus == p->skus_cap) {
		size_t cap = p->skus_cap ? p->skus_cap * 2 : 16;
		s = realloc(p->skus, cap * sizeof *s);
		if (!s)
			return NULL;
		p->skus = s;
		p->skus_cap = cap;
	}
	s = &p->skus[p->nskus++];
	memset(s, 0, sizeof *s);
	s->units = UINT64_MAX;
	s->shards = 1;
	return s;
}

static void load_plan_free(struct load_plan *p)
{
	free(p->acts);
	free(p->skus);
}

/* A field's value as the input would spell it, for messages. */
static const char *load_fmt_field(int f, int64_t v, char *buf, size_t cap)
{
	if (f == F_START || f == F_END)
		return tool_fmt_time(v, buf, cap);
	if (f == F_SCOPE)
		return tool_scope_name((uint32_t)v);
	snprintf(buf, cap, "%lld", (long long)v);
	return buf;
}

/* Set one activity field; a second, different value is a conflict.
 * @p col is the CSV column (for messages). */
static int load_set_field(struct load_plan *p, struct load_act *a, int f,
                          int64_t v, size_t line, size_t col)
{
	if (a->given[f] && a->v[f] != v) {
		char b1[40], b2[40];
		if (p->file)
			return load_bad(p, line, col, load_field_names[f],
			                "activity %u was given %s %s on line %zu; this row says %s",
			                a->id, load_field_names[f],
			                load_fmt_field(f, a->v[f], b1, sizeof b1), a->line[f],
			                load_fmt_field(f, v, b2, sizeof b2));
		return load_bad(p, 0, 0, NULL, "%s given twice", load_field_names[f]);
	}
	a->given[f] = 1;
	a->v[f] = v;
	a->line[f] = line;
	return 0;
}

/* ------------------------------------------------------------------------
 * 2. From flags
 * ------------------------------------------------------------------------ */

static void load_help(FILE *out)
{
	fprintf(out,
	        "usage: flashstock load --name NAME --activity ID [activity options]\n"
	        "                       --sku ID --units U [--shards S] [--price P] [--sku ...]\n"
	        "       flashstock load --name NAME --csv FILE\n"
	        "\n"
	        "Add an activity and its skus to segment NAME.  Everything is checked before\n"
	        "the first change: on any error nothing is loaded.  If the activity already\n"
	        "exists, only skus are added; activity options given must then match it.\n"
	        "\n"
	        "activity options:\n"
	        "  --activity ID          activity id, 1..4294967295 (required)\n"
	        "  --start T              window opens  (default now)\n"
	        "  --end T                window closes (default start + 24 h)\n"
	        "                         T: now | +SECONDS | -SECONDS | ISO 8601 such as\n"
	        "                         2026-11-11T00:00:00Z or 2026-11-11 00:00:00+08:00\n"
	        "                         (no zone means UTC), 1970-01-01T00:00:00Z up to\n"
	        "                         2262-04-11T23:47:15Z\n"
	        "  --limit K              orders per user, 1..%u (default 1)\n"
	        "  --max-qty Q            largest quantity of one order, 1..%u (default 1)\n"
	        "  --scope S              what the limit counts per user: activity | sku | day\n"
	        "                         (default activity)\n"
	        "  --cancel-returns-quota a cancel frees the user's limit slot (default: not)\n"
	        "  --token-required       each order must redeem a one-time token\n"
	        "  --day-offset S         business day = floor((now + S) / 86400), S in\n"
	        "                         %d..%d seconds (default 0)\n"
	        "sku options (repeat the group for more skus):\n"
	        "  --sku ID               sku id, 1..4294967295\n"
	        "  --units U              units of stock, 0..%llu (required for each sku)\n"
	        "  --shards S             stock slots, 1..%u (default 1; more for a hot sku)\n"
	        "  --price P              its price in the shop's smallest unit, 0..%llu\n"
	        "                         (default 0; `flashstock terms` shows and changes it)\n"
	        "\n"
	        "CSV (--csv FILE, or - for stdin): a header line naming the columns present,\n"
	        "in any order, then one row per sku.  The columns:\n"
	        "  activity_id,sku_id,units,shards,start,end,limit,max_qty,scope,\n"
	        "  cancel_returns_quota,token_required,day_offset_s,price\n"
	        "\n"
	        "  -  activity_id, sku_id and units are required; any other column may be\n"
	        "     left out of the header, or a field left empty: it then takes its\n"
	        "     default -- shards 1, price 0, and for a new activity the defaults above (start\n"
	        "     now, end start + 24 h, limit 1, max_qty 1, scope activity,\n"
	        "     cancel_returns_quota 0, token_required 0, day_offset_s 0) -- while an\n"
	        "     activity already in the segment keeps its own values;\n"
	        "  -  names are exact (lower case); an unknown, repeated or empty name, a\n"
	        "     required column missing, or data on the first line is an error;\n"
	        "  -  an activity is defined by its rows: a field given on several rows of\n"
	        "     one activity must be the same on all of them;\n"
	        "  -  booleans: 0/1, true/false, yes/no; times as for --start;\n"
	        "  -  lines end in LF or CRLF; blank lines and lines starting with '#' are\n"
	        "     skipped; fields are not quoted (a '\"' is an error);\n"
	        "  -  errors name the line and column: FILE:LINE: column C (name): reason.\n"
	        "Examples -- stock warm-up, every other field its default:\n"
	        "\n"
	        "  $ flashstock load --name /sale1 --csv - <<EOF\n"
	        "  > activity_id,sku_id,units\n"
	        "  > 7,1,5000\n"
	        "  > 7,2,3000\n"
	        "  > EOF\n"
	        "and more columns, a field left empty taking the activity's value:\n"
	        "\n"
	        "  > activity_id,sku_id,units,shards,start,end,token_required\n"
	        "  > 7,1,5000,4,now,+3600,1\n"
	        "  > 7,2,3000,1,,,\n"
	        "\n"
	        "exit: 0 loaded; 1 failed (no segment, table full, engine error);\n"
	        "      2 usage error or bad input, also a CSV file that cannot be read\n"
	        "        (nothing loaded)\n",
	        FLASH_LIMIT_MAX, FLASH_QTY_MAX, -FLASH_DAY_OFFSET_MAX_S, FLASH_DAY_OFFSET_MAX_S,
	        (unsigned long long)FLASH_UNITS_MAX, FLASH_SHARDS_MAX, (unsigned long long)FLASH_PRICE_MAX);
}

/* Parse the flags into @p p.  @return 0 to go on, or -1 - (exit code) to
 * stop (-1: --help was shown, exit 0; -3: usage error, exit 2). */
/* load's flags (load_from_flags) */
enum { O_NAME = 256, O_CSV, O_ACT, O_START, O_END, O_LIMIT, O_MAXQTY,
       O_SCOPE, O_CRQ, O_TOKREQ, O_DAYOFF, O_SKU, O_UNITS, O_SHARDS, O_PRICE };

/* --sku ID, and the --units, --shards and --price that follow it (*sp: the sku they
 * apply to).  @return 0, or -1 - the command's result. */
static int load_sku_flag(struct load_plan *p, const char *cmd, int c, struct load_sku **sp)
{
	struct load_sku *s = *sp;
	uint64_t u;
	switch (c) {
	case O_SKU:
		if (tool_opt_u64(cmd, "--sku", optarg, 1, UINT32_MAX, &u))
			return -1 - TOOL_USAGE;
		*sp = load_new_sku(p);
		if (!*sp)
			return -1 - tool_failf("load: out of memory");
		(*sp)->sku_id = (uint32_t)u;
		return 0;
	case O_UNITS:
		if (!s)
			return -1 - tool_usage_err(cmd, "--units must follow a --sku");
		if (s->units != UINT64_MAX)
			return -1 - tool_usage_err(cmd, "--units given twice for sku %u", s->sku_id);
		if (tool_opt_u64(cmd, "--units", optarg, 0, FLASH_UNITS_MAX, &s->units))
			return -1 - TOOL_USAGE;
		return 0;
	case O_SHARDS:
		if (!s)
			return -1 - tool_usage_err(cmd, "--shards must follow a --sku");
		if (s->shards_given)
			return -1 - tool_usage_err(cmd, "--shards given twice for sku %u", s->sku_id);
		if (tool_opt_u32(cmd, "--shards", optarg, 1, FLASH_SHARDS_MAX, &s->shards))
			return -1 - TOOL_USAGE;
		s->shards_given = 1;
		return 0;
	case O_PRICE:
		if (!s)
			return -1 - tool_usage_err(cmd, "--price must follow a --sku");
		if (s->price_given)
			return -1 - tool_usage_err(cmd, "--price given twice for sku %u", s->sku_id);
		if (tool_opt_u64(cmd, "--price", optarg, 0, FLASH_PRICE_MAX, &s->price))
			return -1 - TOOL_USAGE;
		s->price_given = 1;
		return 0;
	}
	return 0;
}

/* The flags together: --csv alone, or one --activity with its skus, each
 * with --units, none twice.  @return 0, or -1 - the command's result. */
static int load_flags_check(struct load_plan *p, const char *cmd, const struct load_act *act,
                            int any_act_opt, const char *csv)
{
	if (csv) {
		if (act->id || any_act_opt || p->nskus)
			return -1 - tool_usage_err(cmd, "--csv cannot be combined with activity or sku flags");
		return 0;
	}
	if (!act->id)
		return -1 - tool_usage_err(cmd, "--activity (or --csv) is required");
	if (p->nskus == 0)
		return -1 - tool_usage_err(cmd, "at least one --sku with --units is required");
	for (size_t k = 0; k < p->nskus; k++) {
		size_t j;
		p->skus[k].activity_id = act->id;
		if (p->skus[k].units == UINT64_MAX)
			return -1 - tool_usage_err(cmd, "sku %u has no --units", p->skus[k].sku_id);
		for (j = 0; j < k; j++)
			if (p->skus[j].sku_id == p->skus[k].sku_id)
				return -1 - tool_usage_err(cmd, "sku %u given twice", p->skus[k].sku_id);
	}
	{
		struct load_act *a = load_new_act(p, act->id, 0);
		if (!a)
			return -1 - tool_failf("load: out of memory");
		*a = *act;
	}
	return 0;
}

static int load_from_flags(struct load_plan *p, int argc, char **argv,
                           const char **name, const char **csv)
{
	static const struct option longopts[] = {
		{ "help",                 no_argument,       NULL, 'h' },
		{ "name",                 required_argument, NULL, O_NAME },
		{ "csv",                  required_argument, NULL, O_CSV },
		{ "activity",             required_argument, NULL, O_ACT },
		{ "start",                required_argument, NULL, O_START },
		{ "end",                  required_argument, NULL, O_END },
		{ "limit",                required_argument, NULL, O_LIMIT },
		{ "max-qty",              required_argument, NULL, O_MAXQTY },
		{ "scope",                required_argument, NULL, O_SCOPE },
		{ "cancel-returns-quota", no_argument,       NULL, O_CRQ },
		{ "token-required",       no_argument,       NULL, O_TOKREQ },
		{ "day-offset",           required_argument, NULL, O_DAYOFF },
		{ "sku",                  required_argument, NULL, O_SKU },
		{ "units",                required_argument, NULL, O_UNITS },
		{ "shards",               required_argument, NULL, O_SHARDS },
		{ "price",                required_argument, NULL, O_PRICE },
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd = p->cmd;
	struct load_act act;
	struct load_sku *s = NULL;
	uint64_t u;
	int64_t i;
	int c, any_act_opt = 0, rc;

	memset(&act, 0, sizeof act);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		rc = 0;
		switch (c) {
		case 'h':
			load_help(stdout);
			return -1 - TOOL_OK;
		case O_NAME:
			*name = optarg;
			break;
		case O_CSV:
			*csv = optarg;
			break;
		case O_ACT:
			if (act.id)
				return -1 - tool_usage_err(cmd, "--activity given twice");
			if (tool_opt_u64(cmd, "--activity", optarg, 1, UINT32_MAX, &u))
				return -1 - TOOL_USAGE;
			act.id = (uint32_t)u;
			break;
		case O_START:
		case O_END: {
			char why[160];
			if (tool_parse_time(optarg, p->now_ns, &i, why, sizeof why) != 0)
				return -1 - tool_usage_err(cmd, "%s: '%s' %s",
				                           c == O_START ? "--start" : "--end", optarg, why);
			rc = load_set_field(p, &act, c == O_START ? F_START : F_END, i, 0, 0);
			any_act_opt = 1;
			break;
		}
		case O_LIMIT:
			if (tool_opt_u64(cmd, "--limit", optarg, 1, FLASH_LIMIT_MAX, &u))
				return -1 - TOOL_USAGE;
			rc = load_set_field(p, &act, F_LIMIT, (int64_t)u, 0, 0);
			any_act_opt = 1;
			break;
		case O_MAXQTY:
			if (tool_opt_u64(cmd, "--max-qty", optarg, 1, FLASH_QTY_MAX, &u))
				return -1 - TOOL_USAGE;
			rc = load_set_field(p, &act, F_MAXQTY, (int64_t)u, 0, 0);
			any_act_opt = 1;
			break;
		case O_SCOPE: {
			int sc = tool_scope_parse(optarg);
			if (sc < 0)
				return -1 - tool_usage_err(cmd, "--scope: expected activity, sku or day, got '%s'", optarg);
			rc = load_set_field(p, &act, F_SCOPE, sc, 0, 0);
			any_act_opt = 1;
			break;
		}
		case O_CRQ:
			rc = load_set_field(p, &act, F_CRQ, 1, 0, 0);
			any_act_opt = 1;
			break;
		case O_TOKREQ:
			rc = load_set_field(p, &act, F_TOKREQ, 1, 0, 0);
			any_act_opt = 1;
			break;
		case O_DAYOFF:
			if (tool_opt_i64(cmd, "--day-offset", optarg, -FLASH_DAY_OFFSET_MAX_S,
			                 FLASH_DAY_OFFSET_MAX_S, &i))
				return -1 - TOOL_USAGE;
			rc = load_set_field(p, &act, F_DAYOFF, i, 0, 0);
			any_act_opt = 1;
			break;
		case O_SKU:
		case O_UNITS:
		case O_SHARDS:
		case O_PRICE:
			rc = load_sku_flag(p, cmd, c, &s);
			if (rc)
				return rc;
			break;
		default:
			return -1 - tool_bad_option(cmd, c, argv);
		}
		if (rc)
			return -1 - rc;
	}
	if (optind < argc)
		return -1 - tool_usage_err(cmd, "unexpected argument '%s'", argv[optind]);
	if (!*name)
		return -1 - tool_usage_err(cmd, "--name is required");
	return load_flags_check(p, cmd, &act, any_act_opt, *csv);
}

/* ------------------------------------------------------------------------
 * 3. From CSV
 * ------------------------------------------------------------------------ */

#define LOAD_CSV_MAX_BYTES (64u << 20)

/* Read a whole file ("-" = stdin) into a malloc'ed buffer. */
static int load_read_file(const char *path, char **out, size_t *out_len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	size_t len = 0, cap = 65536, n;
	char *buf, *nb;

	struct stat st;

	if (!f)
		return -errno;
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		if (f != stdin)
			fclose(f);
		return -EISDIR;
	}
	buf = malloc(cap);
	if (!buf)
		goto nomem;
	for (;;) {
		if (len == cap) {
			if (cap >= LOAD_CSV_MAX_BYTES) {
				free(buf);
				if (f != stdin)
					fclose(f);
				return -EFBIG;
			}
			cap *= 2;
			nb = realloc(buf, cap);
			if (!nb)
				goto nomem;
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		int e = errno ? errno : EIO;
		free(buf);
		if (f != stdin)
			fclose(f);
		return -e;
	}
	if (f != stdin)
		fclose(f);
	*out = buf;
	*out_len = len;
	return 0;
nomem:
	free(buf);
	if (f != stdin)
		fclose(f);
	return -ENOMEM;
}

/* Report a csv_error as a bad input line, naming the column as the header
 * does ("header" for an error in the header itself). */
static int load_csv_err(const struct load_plan *p, const struct csv_error *e)
{
	const char *name = "extra";

	if (p->csv_ncols == 0)
		name = "header";
	else if (e->column >= 1 && e->column <= p->csv_ncols)
		name = load_csv_cols[p->csv_field[e->column - 1]];
	return load_bad(p, e->line, e->column, name, "%s", e->msg);
}

/* Field @p c (a C_ column) of a CSV row; a column the header leaves out
 * reads as an empty field. */
static const struct csv_field *load_csv_get(const struct load_plan *p,
                                            const struct csv_row *r, int c)
{
	static const struct csv_field empty = { "", 0 };

	return p->csv_col[c] ? &r->f[p->csv_col[c] - 1] : &empty;
}

/*
 * Read the header row: every name known and named once, activity_id,
 * sku_id and units present.  A first row that starts with a number is data
 * without a header: refused rather than guessed at, since a file that lost
 * its header line would otherwise load by position.  Sets the column maps.
 */
static int load_csv_header(struct load_plan *p, const struct csv_row *hdr, size_t ncols)
{
	static const int required[] = { C_ACT, C_SKU, C_UNITS };
	/* more than C_N columns repeat or miss a name within the first
	 * C_N + 1 (csv_header_map), so those are all we need to map */
	size_t map[C_N + 1], n = ncols <= C_N + 1 ? ncols : C_N + 1, c, k;
	struct csv_error e;
	int64_t num;

	if (csv_field_i64(&hdr->f[0], INT64_MIN, INT64_MAX, &num, hdr->line, 1, &e) == 0)
		return load_bad(p, hdr->line, 0, NULL,
		                "expected a header row naming the columns (such as "
		                "activity_id,sku_id,units), found a row of data");
	if (csv_header_map(hdr, n, load_csv_cols, C_N, map, &e) != 0) {
		int known = 0;
		for (k = 0; k < C_N; k++)
			known |= csv_field_eq(&hdr->f[e.column - 1], load_csv_cols[k]);
		if (known)
			return load_csv_err(p, &e);
		return load_bad(p, e.line, e.column, "header",
		                "%s; the columns are activity_id, sku_id, units, shards, start, "
		                "end, limit, max_qty, scope, cancel_returns_quota, "
		                "token_required, day_offset_s, price", e.msg);
	}
	for (c = 0; c < ncols; c++) {
		p->csv_field[c] = map[c];
		p->csv_col[map[c]] = c + 1;
	}
	for (k = 0; k < sizeof required / sizeof required[0]; k++)
		if (!p->csv_col[required[k]])
			return load_bad(p, hdr->line, 0, NULL,
			                "header: no %s column (activity_id, sku_id and units are required)",
			                load_csv_cols[required[k]]);
	p->csv_ncols = ncols;
	return 0;
}

/* One activity field of a CSV row, from C_ column @p c: empty or left out
 * means "not given". */
static int load_csv_act_field(struct load_plan *p, struct load_act *a,
                              const struct csv_row *r, int c, int f)
{
	const struct csv_field *fld = load_csv_get(p, r, c);
	size_t col = load_col(p, c);
	struct csv_error e;
	char tmp[80];
	uint64_t u;
	int64_t v;
	int b;

	if (fld->len == 0)
		return 0;
	switch (f) {
	case F_START:
	case F_END: {
		char why[160];
		if (csv_field_copy(fld, tmp, sizeof tmp) != 0)
			return load_bad(p, r->line, col, load_csv_cols[c],
			                "not a time: '%.40s...' is too long", tmp);
		if (tool_parse_time(tmp, p->now_ns, &v, why, sizeof why) != 0)
			return load_bad(p, r->line, col, load_csv_cols[c],
			                "'%.40s' %s", tmp, why);
		break;
	}
	case F_LIMIT:
		if (csv_field_u64(fld, 1, FLASH_LIMIT_MAX, &u, r->line, col, &e))
			return load_csv_err(p, &e);
		v = (int64_t)u;
		break;
	case F_MAXQTY:
		if (csv_field_u64(fld, 1, FLASH_QTY_MAX, &u, r->line, col, &e))
			return load_csv_err(p, &e);
		v = (int64_t)u;
		break;
	case F_SCOPE:
		csv_field_copy(fld, tmp, sizeof tmp);
		b = fld->len < sizeof tmp ? tool_scope_parse(tmp) : -1;
		if (b < 0)
			return load_bad(p, r->line, col, load_csv_cols[c],
			                "expected activity, sku or day, got '%.40s'", tmp);
		v = b;
		break;
	case F_CRQ:
	case F_TOKREQ:
		if (csv_field_bool(fld, &b, r->line, col, &e))
			return load_csv_err(p, &e);
		v = b;
		break;
	case F_DAYOFF:
		if (csv_field_i64(fld, -FLASH_DAY_OFFSET_MAX_S, FLASH_DAY_OFFSET_MAX_S, &v, r->line,
		                  col, &e))
			return load_csv_err(p, &e);
		break;
	default:
		return load_bad(p, r->line, 0, NULL, "internal: field %d", f);
	}
	return load_set_field(p, a, f, v, r->line, col);
}

/* Parse the CSV file into @p p.  @return 0, or an exit code after a message. */
static int load_from_csv(struct load_plan *p)
{
	struct csv_doc hdr, doc;
	struct csv_error e;
	char *buf = NULL;
	size_t len = 0, r, k;
	int rc;

	rc = load_read_file(p->file, &buf, &len);
	if (rc != 0) {
		fprintf(stderr, "flashstock: load: %s: %s\n", p->file, strerror(-rc));
		fprintf(stderr, "flashstock: load: nothing was loaded\n");
		/* the input named on the command line is not a file we can read:
		 * bad input, like a bad row; only memory and I/O errors are ours */
		return rc == -ENOMEM || rc == -EIO ? TOOL_FAIL : TOOL_USAGE;
	}
	/* the header first, alone: it says how wide the rows are and names
	 * their columns, for the errors in them too */
	if (csv_parse_first(buf, len, &hdr, &e) != 0) {
		rc = load_csv_err(p, &e);
		free(buf);
		return rc;
	}
	if (hdr.nrows == 0)
		rc = load_bad(p, 0, 0, NULL, "empty: expected a header line and rows");
	else
		rc = load_csv_header(p, &hdr.rows[0], hdr.ncols);
	csv_free(&hdr);
	if (rc) {
		free(buf);
		return rc;
	}
	if (csv_parse(buf, len, p->csv_ncols, &doc, &e) != 0) {
		rc = load_csv_err(p, &e);
		free(buf);
		return rc;
	}
	rc = 0;
	if (doc.nrows == 1) {
		rc = load_bad(p, doc.rows[0].line, 0, NULL, "no rows after the header");
		goto out;
	}
	for (r = 1; r < doc.nrows; r++) {
		const struct csv_row *row = &doc.rows[r];
		struct load_act *a;
		struct load_sku *s;
		const struct csv_field *shards_f = load_csv_get(p, row, C_SHARDS);
		const struct csv_field *price_f = load_csv_get(p, row, C_PRICE);
		uint64_t act_id, sku_id, units, shards = 1, price = 0;
		int f;

		if (csv_field_u64(load_csv_get(p, row, C_ACT), 1, UINT32_MAX, &act_id, row->line,
		                  load_col(p, C_ACT), &e) ||
		    csv_field_u64(load_csv_get(p, row, C_SKU), 1, UINT32_MAX, &sku_id, row->line,
		                  load_col(p, C_SKU), &e) ||
		    csv_field_u64(load_csv_get(p, row, C_UNITS), 0, FLASH_UNITS_MAX, &units, row->line,
		                  load_col(p, C_UNITS), &e) ||
		    (shards_f->len &&
		     csv_field_u64(shards_f, 1, FLASH_SHARDS_MAX, &shards, row->line,
		                   load_col(p, C_SHARDS), &e)) ||
		    (price_f->len &&
		     csv_field_u64(price_f, 0, FLASH_PRICE_MAX, &price, row->line,
		                   load_col(p, C_PRICE), &e))) {
			rc = load_csv_err(p, &e);
			goto out;
		}
		for (k = 0; k < p->nskus; k++) {
			if (p->skus[k].activity_id == act_id && p->skus[k].sku_id == sku_id) {
				rc = load_bad(p, row->line, load_col(p, C_SKU), "sku_id",
				              "sku %llu of activity %llu already given on line %zu",
				              (unsigned long long)sku_id, (unsigned long long)act_id,
				              p->skus[k].line);
				goto out;
			}
		}
		a = load_find_act(p, (uint32_t)act_id);
		if (!a)
			a = load_new_act(p, (uint32_t)act_id, row->line);
		s = a ? load_new_sku(p) : NULL;
		if (!s) {
			rc = tool_failf("load: out of memory");
			goto out;
		}
		s->activity_id = (uint32_t)act_id;
		s->sku_id = (uint32_t)sku_id;
		s->units = units;
		s->shards = (uint32_t)shards;
		s->shards_given = shards_f->len != 0;
		s->price = price;
		s->price_given = price_f->len != 0;
		s->line = row->line;
		for (f = 0; f < F_N; f++) {
			rc = load_csv_act_field(p, a, row, load_act_col[f], f);
			if (rc)
				goto out;
		}
	}
out:
	csv_free(&doc);
	free(buf);
	return rc;
}

/* ------------------------------------------------------------------------
 * 4. Against the segment, then apply
 * ------------------------------------------------------------------------ */

static int64_t load_act_field(const struct flash_activity *x, int f)
{
	switch (f) {
	case F_START:  return x->start_ns;
	case F_END:    return x->end_ns;
	case F_LIMIT:  return x->limit_per_user;
	case F_MAXQTY: return x->max_qty;
	case F_SCOPE:  return x->scope;
	case F_CRQ:    return (x->flags & FLASH_ACT_CANCEL_RETURNS_QUOTA) != 0;
	case F_TOKREQ: return (x->flags & FLASH_ACT_TOKEN_REQUIRED) != 0;
	case F_DAYOFF: return x->day_offset_s;
	}
	return 0;
}

/*
 * Resolve every planned activity: one that the catalog has already must
 * agree with each given field and takes the rest from the catalog; a new
 * one takes defaults for what is not given, and its window must be
 * non-empty.  Then every sku must be new to the segment, and the segment
 * must have room for all of them.  Nothing is written.
 */
static int load_check(struct load_plan *p, flash_t *h)
{
	struct flash_activity cur;
	struct flash_sku_info si;
	struct flash_stats st;
	uint64_t new_shards = 0;
	uint32_t new_acts = 0, idx;
	size_t i;
	int rc, f;

	for (idx = 0; (rc = flash_activity_at(h, idx, &cur)) != FLASH_ENOT_FOUND; idx++) {
		struct load_act *a;
		if (rc == FLASH_EARCHIVED)
			continue;       /* an entry an archive freed: later ones may be live */
		if (rc != FLASH_OK)
			break;
		if (!(a = load_find_act(p, cur.id)))
			continue;
		a->in_segment = 1;
		a->a = cur;
		for (f = 0; f < F_N; f++) {
			char b1[40], b2[40];
			if (a->given[f] && a->v[f] != load_act_field(&cur, f))
				return load_bad(p, a->line[f], load_col(p, load_act_col[f]),
				                load_field_names[f],
				                "activity %u exists with %s %s, the input says %s",
				                a->id, load_field_names[f],
				                load_fmt_field(f, load_act_field(&cur, f), b1, sizeof b1),
				                load_fmt_field(f, a->v[f], b2, sizeof b2));
		}
	}
	if (rc != FLASH_ENOT_FOUND)
		return tool_fail("load: reading the catalog", rc);

	for (i = 0; i < p->nacts; i++) {
		struct load_act *a = &p->acts[i];
		struct flash_activity *x = &a->a;
		if (a->in_segment)
			continue;
		/* an archived id is never an activity again (flash_archive) */
		if ((rc = flash_activity_id_check(h, a->id)) == FLASH_EARCHIVED)
			return load_bad(p, a->first_line, load_col(p, C_ACT), "activity_id",
			                "activity %u was archived, and an archived id is not "
			                "used again: give the new activity a new id", a->id);
		if (rc != FLASH_OK && rc != FLASH_EEXIST)   /* EEXIST: added meanwhile, */
			return tool_fail("load: reading the catalog", rc);   /* the add says so */
		new_acts++;
		memset(x, 0, sizeof *x);
		x->id = a->id;
		x->start_ns = a->given[F_START] ? a->v[F_START] : p->now_ns;
		/* the default end is a day after start, or the last time there is
		 * when start is within a day of it (not a sum that wraps) */
		x->end_ns = a->given[F_END] ? a->v[F_END] :
		            x->start_ns > INT64_MAX - LOAD_DAY_NS ? INT64_MAX :
		            x->start_ns + LOAD_DAY_NS;
		x->limit_per_user = a->given[F_LIMIT] ? (uint32_t)a->v[F_LIMIT] : 1;
		x->max_qty = a->given[F_MAXQTY] ? (uint32_t)a->v[F_MAXQTY] : 1;
		x->scope = a->given[F_SCOPE] ? (uint32_t)a->v[F_SCOPE] : FLASH_SCOPE_ACTIVITY;
		x->flags = (a->given[F_CRQ] && a->v[F_CRQ] ? FLASH_ACT_CANCEL_RETURNS_QUOTA : 0) |
		           (a->given[F_TOKREQ] && a->v[F_TOKREQ] ? FLASH_ACT_TOKEN_REQUIRED : 0);
		x->day_offset_s = a->given[F_DAYOFF] ? (int32_t)a->v[F_DAYOFF] : 0;
		if (x->end_ns <= x->start_ns) {
			int f_at = a->given[F_END] ? F_END : F_START;
			char b1[40], b2[40];
			return load_bad(p, a->line[f_at], load_col(p, load_act_col[f_at]),
			                load_field_names[f_at],
			                "activity %u: end %s is not after start %s", a->id,
			                tool_fmt_time(x->end_ns, b1, sizeof b1),
			                tool_fmt_time(x->start_ns, b2, sizeof b2));
		}
		/* the engine's own check: whatever passes here, flash_activity_add()
		 * accepts (every field was range-checked above with its bounds) */
		if ((rc = flash_activity_check(x)) != FLASH_OK)
			return load_bad(p, a->first_line, 0, NULL, "activity %u: %s", a->id,
			                flash_strerror(rc));
	}

	for (i = 0; i < p->nskus; i++) {
		struct load_sku *s = &p->skus[i];
		rc = flash_sku_get(h, s->activity_id, s->sku_id, &si);
		if (rc == FLASH_OK)
			return load_bad(p, s->line, load_col(p, C_SKU), "sku_id",
			                "sku %u of activity %u is already in the segment",
			                s->sku_id, s->activity_id);
		if (rc != FLASH_ENOT_FOUND)
			return tool_fail("load: reading the catalog", rc);
		new_shards += s->shards;
	}

	rc = flash_stats_get(h, &st);
	if (rc != FLASH_OK)
		return tool_fail("load: reading fill levels", rc);
	if ((uint64_t)st.activities + new_acts > st.activities_cap)
		return tool_failf("load: %u new activities do not fit (%u of %u used): %s",
		                  new_acts, st.activities, st.activities_cap, flash_strerror(FLASH_EFULL));
	if ((uint64_t)st.skus + p->nskus > st.skus_cap)
		return tool_failf("load: %zu new skus do not fit (%u of %u used): %s",
		                  p->nskus, st.skus, st.skus_cap, flash_strerror(FLASH_EFULL));
	if ((uint64_t)st.shards + new_shards > st.shards_cap)
		return tool_failf("load: %llu new shards do not fit (%u of %u used): %s",
		                  (unsigned long long)new_shards, st.shards, st.shards_cap,
		                  flash_strerror(FLASH_EFULL));
	return 0;
}

static int load_apply(struct load_plan *p, flash_t *h)
{
	char what[320];
	size_t i;
	int rc;

	for (i = 0; i < p->nacts; i++) {
		if (p->acts[i].in_segment)
			continue;
		rc = flash_activity_add(h, &p->acts[i].a);
		if (rc != FLASH_OK) {
			snprintf(what, sizeof what, "load: add activity %u", p->acts[i].id);
			return tool_fail(what, rc);
		}
	}
	for (i = 0; i < p->nskus; i++) {
		struct load_sku *s = &p->skus[i];
		struct load_act *a = load_find_act(p, s->activity_id);
		rc = flash_sku_add(h, s->activity_id, s->sku_id, s->units, s->shards);
		if (rc != FLASH_OK) {
			snprintf(what, sizeof what, "load: add sku %u of activity %u (after %zu of %zu skus)",
			         s->sku_id, s->activity_id, i, p->nskus);
			return tool_fail(what, rc);
		}
		if (a) {
			a->nskus++;
			a->units += s->units;
		}
		/* a price is a change of the sku's terms, after its add: a sku
		 * starts at price 0 (flash_sku_add takes none) */
		if (s->price_given && (rc = flash_sku_price_set(h, s->activity_id, s->sku_id, s->price,
		                                                 NULL)) != FLASH_OK) {
			snprintf(what, sizeof what, "load: sku %u of activity %u is added, its price %llu is not "
			         "(`flashstock terms --activity %u --sku %u --price %llu` sets it)", s->sku_id,
			         s->activity_id, (unsigned long long)s->price, s->activity_id, s->sku_id,
			         (unsigned long long)s->price);
			return tool_fail(what, rc);
		}
		if (s->price_given && a)
			a->nprices++;
	}
	for (i = 0; i < p->nacts; i++) {
		const struct load_act *a = &p->acts[i];
		struct flash_activity now;
		char b1[40], b2[40];
		/* the version of its terms, as `flashstock terms` shows it */
		if (flash_activity_get(h, a->id, &now) != FLASH_OK)
			now.version = 0;
		printf("activity %u (%s): %u sku(s), %llu units added", a->id,
		       a->in_segment ? "existing" : "new", a->nskus, (unsigned long long)a->units);
		if (a->nprices)
			printf(", %u price(s) set", a->nprices);
		printf("; version %llu, window %s .. %s, limit %u per %s, max qty %u%s%s\n",
		       (unsigned long long)now.version,
		       tool_fmt_time(a->a.start_ns, b1, sizeof b1),
		       tool_fmt_time(a->a.end_ns, b2, sizeof b2),
		       a->a.limit_per_user, tool_scope_name(a->a.scope), a->a.max_qty,
		       a->a.flags & FLASH_ACT_TOKEN_REQUIRED ? ", token required" : "",
		       a->a.flags & FLASH_ACT_CANCEL_RETURNS_QUOTA ? ", cancel returns quota" : "");
	}
	return TOOL_OK;
}

int cmd_load(int argc, char **argv)
{
	struct load_plan p;
	const char *name = NULL, *csv = NULL;
	flash_t *h = NULL;
	char what[300];
	int rc;

	memset(&p, 0, sizeof p);
	p.cmd = argv[0];
	p.now_ns = tool_realtime_ns();
	rc = load_from_flags(&p, argc, argv, &name, &csv);
	if (rc < 0) {
		rc = -1 - rc;
		goto out;
	}
	if (csv) {
		p.file = csv;
		rc = load_from_csv(&p);
		if (rc)
			goto out;
	}
	rc = flash_open(name, 0, &h);
	if (rc != FLASH_OK) {
		snprintf(what, sizeof what, "load: open %s", name);
		rc = tool_fail(what, rc);
		goto out;
	}
	rc = load_check(&p, h);
	if (rc == 0)
		rc = load_apply(&p, h);
	flash_close(h);
out:
	load_plan_free(&p);
	return rc;
}
