/*
 * cmd_terms.c -- `flashstock terms`: an activity's terms and its skus'
 * prices, each with the version of its terms (flashstock.h, "Terms and
 * their versions"); or one change of them: the activity's window, limit,
 * max_qty and flags (flash_activity_update), or one sku's price
 * (flash_sku_price_set).  A page shows the versions with the terms; an
 * order that names them (`flashstock order --activity-version N
 * --sku-version N`) is refused FLASH_ESTALE once either changed.
 *
 * Divisions:
 *   1. The command line
 *   2. Showing the terms
 *   3. Changing them
 *
 * A change starts from the activity as flash_activity_get() reads it: what
 * the command line leaves out is kept.  What the engine would refuse -- a
 * scope or day offset other than the current one, a lower limit, an empty
 * window, a price above FLASH_PRICE_MAX -- is refused here first, exit 2,
 * with nothing changed; the engine checks again under its own lock.
 */
#include "tool.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * 1. The command line
 * ------------------------------------------------------------------------ */

static void terms_help(FILE *out)
{
	fprintf(out,
	        "usage: flashstock terms --name NAME --activity A [--sku S] [--json | --print-version]\n"
	        "       flashstock terms --name NAME --activity A [--start T] [--end T] [--limit K]\n"
	        "                        [--max-qty Q] [--[no-]cancel-returns-quota]\n"
	        "                        [--[no-]token-required] [--scope S] [--day-offset S] [--json]\n"
	        "       flashstock terms --name NAME --activity A --sku S --price P [--json]\n"
	        "\n"
	        "Show the terms of activity A of segment NAME -- its window, limit, max_qty,\n"
	        "scope and flags, and each sku's price -- with the version of each: a number\n"
	        "the segment issues once, to one set of terms of one activity or sku.  A shop\n"
	        "shows the versions with the terms; an order that names them (`flashstock\n"
	        "order --place --activity-version N --sku-version N`, flash_order_req) is\n"
	        "refused FLASH_ESTALE, nothing taken, once the terms changed.\n"
	        "\n"
	        "Or change them, which moves the version on (also when a value is the same:\n"
	        "a republished page):\n"
	        "  - the activity's terms: the options given replace those values; the rest\n"
	        "    are kept as the segment has them.  The limit may grow, never shrink (a\n"
	        "    user's orders hold numbered limit slots); the scope and the day offset\n"
	        "    never change (the users' limit keys depend on them): --scope and\n"
	        "    --day-offset are accepted only with the current value;\n"
	        "  - a sku's price (--sku S --price P), in the shop's smallest unit; a sku\n"
	        "    starts at price 0 (or the price column of `flashstock load`).\n"
	        "One change per command: the two are separate changes with separate versions.\n"
	        "A change waits, briefly, until every order judged against the old terms has\n"
	        "ended (at most 2 s; buyers never wait for it).\n"
	        "\n"
	        "options:\n"
	        "  --name NAME            segment name (required)\n"
	        "  --activity A           the activity, 1..4294967295 (required)\n"
	        "  --sku S                show: only this sku; with --price: the sku priced\n"
	        "  --start T, --end T     the window; T: now | +SECONDS | -SECONDS | ISO 8601\n"
	        "                         such as 2026-11-11T00:00:00Z (no zone means UTC)\n"
	        "  --limit K              orders per user, the current limit..%u\n"
	        "  --max-qty Q            largest quantity of one order, 1..%u\n"
	        "  --cancel-returns-quota, --no-cancel-returns-quota\n"
	        "                         a cancel frees the user's limit slot, or not\n"
	        "  --token-required, --no-token-required\n"
	        "                         each order must redeem a one-time token, or not\n"
	        "  --scope S, --day-offset S   must be the current ones (see above)\n"
	        "  --price P              the sku's price, 0..%llu\n"
	        "  --print-version        print only the version: the activity's, or with --sku\n"
	        "                         the sku's; after a change, the new one (for a\n"
	        "                         script: av=$(flashstock terms ... --print-version))\n"
	        "  --json                 one JSON object: id, version, start, end (ISO 8601\n"
	        "                         UTC), start_ns, end_ns, limit, max_qty, scope,\n"
	        "                         cancel_returns_quota, token_required, day_offset_s,\n"
	        "                         skus: [{sku_id, price, version, total, available}];\n"
	        "                         after a change also changed (\"activity\" or\n"
	        "                         \"price\"), previous_version and new_version (the\n"
	        "                         version the change issued)\n"
	        "\n"
	        "exit: 0 shown, or changed; 1 failed: no such activity or sku (never added,\n"
	        "      or archived), no segment, the segment refused (ended: being archived;\n"
	        "      busy: an order did not end within 2 s -- nothing changed, try again);\n"
	        "      2 usage error or terms refused -- a lower limit, another scope or day\n"
	        "      offset, an empty window, a price above the maximum (nothing changed)\n",
	        FLASH_LIMIT_MAX, FLASH_QTY_MAX, (unsigned long long)FLASH_PRICE_MAX);
}

/* What the command line asks for.  set[] says which activity field was
 * given; the flags are two masks, set and cleared. */
enum { T_START, T_END, T_LIMIT, T_MAXQTY, T_SCOPE, T_DAYOFF, T_N };

struct terms_args {
	const char *name;
	uint32_t    activity;
	uint32_t    sku;             /* 0: every sku of the activity */
	int         json;
	int         print_version;   /* only the version (the sku's with --sku) */
	int         given[T_N];      /* an activity field given */
	int64_t     v[T_N];          /* its value (times in ns) */
	uint32_t    flags_set;       /* FLASH_ACT_* turned on */
	uint32_t    flags_clear;     /* ... turned off */
	int         price_given;
	uint64_t    price;
};

static const char *const terms_opt_name[T_N] = {
	"--start", "--end", "--limit", "--max-qty", "--scope", "--day-offset"
};

/* Does the command line change the activity's terms? */
static int terms_changes_activity(const struct terms_args *a)
{
	for (int f = 0; f < T_N; f++)
		if (a->given[f])
			return 1;
	return a->flags_set || a->flags_clear;
}

static int terms_set(const char *cmd, struct terms_args *a, int f, int64_t v)
{
	if (a->given[f])
		return tool_usage_err(cmd, "%s given twice", terms_opt_name[f]);
	a->given[f] = 1;
	a->v[f] = v;
	return 0;
}

/* A flag turned on (@p on) or off; the same flag both ways is an error. */
static int terms_flag(const char *cmd, struct terms_args *a, uint32_t flag, int on, const char *opt)
{
	if ((on ? a->flags_clear : a->flags_set) & flag)
		return tool_usage_err(cmd, "%s contradicts an option given before it", opt);
	if (on)
		a->flags_set |= flag;
	else
		a->flags_clear |= flag;
	return 0;
}

static int terms_args_check(const char *cmd, const struct terms_args *a);

/* @return 0, -1 (--help shown), or an exit code after a message. */
static int terms_parse(int argc, char **argv, struct terms_args *a, int64_t now_ns)
{
	enum { O_NAME = 256, O_ACT, O_SKU, O_JSON, O_PRINT_VERSION, O_START, O_END, O_LIMIT, O_MAXQTY, O_CRQ, O_NO_CRQ,
	       O_TOKREQ, O_NO_TOKREQ, O_SCOPE, O_DAYOFF, O_PRICE };
	static const struct option longopts[] = {
		{ "help",                    no_argument,       NULL, 'h' },
		{ "name",                    required_argument, NULL, O_NAME },
		{ "activity",                required_argument, NULL, O_ACT },
		{ "sku",                     required_argument, NULL, O_SKU },
		{ "json",                    no_argument,       NULL, O_JSON },
		{ "print-version",           no_argument,       NULL, O_PRINT_VERSION },
		{ "start",                   required_argument, NULL, O_START },
		{ "end",                     required_argument, NULL, O_END },
		{ "limit",                   required_argument, NULL, O_LIMIT },
		{ "max-qty",                 required_argument, NULL, O_MAXQTY },
		{ "cancel-returns-quota",    no_argument,       NULL, O_CRQ },
		{ "no-cancel-returns-quota", no_argument,       NULL, O_NO_CRQ },
		{ "token-required",          no_argument,       NULL, O_TOKREQ },
		{ "no-token-required",       no_argument,       NULL, O_NO_TOKREQ },
		{ "scope",                   required_argument, NULL, O_SCOPE },
		{ "day-offset",              required_argument, NULL, O_DAYOFF },
		{ "price",                   required_argument, NULL, O_PRICE },
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd = argv[0];
	uint64_t u;
	int64_t i;
	int c, rc;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		rc = 0;
		switch (c) {
		case 'h':
			terms_help(stdout);
			return -1;
		case O_NAME:
			a->name = optarg;
			break;
		case O_ACT:
			if (tool_opt_u32(cmd, "--activity", optarg, 1, UINT32_MAX, &a->activity) != 0)
				return TOOL_USAGE;
			break;
		case O_SKU:
			if (tool_opt_u32(cmd, "--sku", optarg, 1, UINT32_MAX, &a->sku) != 0)
				return TOOL_USAGE;
			break;
		case O_JSON:
			a->json = 1;
			break;
		case O_PRINT_VERSION:
			a->print_version = 1;
			break;
		case O_START:
		case O_END: {
			char why[160];
			if (tool_parse_time(optarg, now_ns, &i, why, sizeof why) != 0)
				return tool_usage_err(cmd, "%s: '%s' %s", c == O_START ? "--start" : "--end", optarg, why);
			rc = terms_set(cmd, a, c == O_START ? T_START : T_END, i);
			break;
		}
		case O_LIMIT:
			if (tool_opt_u64(cmd, "--limit", optarg, 1, FLASH_LIMIT_MAX, &u) != 0)
				return TOOL_USAGE;
			rc = terms_set(cmd, a, T_LIMIT, (int64_t)u);
			break;
		case O_MAXQTY:
			if (tool_opt_u64(cmd, "--max-qty", optarg, 1, FLASH_QTY_MAX, &u) != 0)
				return TOOL_USAGE;
			rc = terms_set(cmd, a, T_MAXQTY, (int64_t)u);
			break;
		case O_CRQ:
		case O_NO_CRQ:
			rc = terms_flag(cmd, a, FLASH_ACT_CANCEL_RETURNS_QUOTA, c == O_CRQ, argv[optind - 1]);
			break;
		case O_TOKREQ:
		case O_NO_TOKREQ:
			rc = terms_flag(cmd, a, FLASH_ACT_TOKEN_REQUIRED, c == O_TOKREQ, argv[optind - 1]);
			break;
		case O_SCOPE: {
			int sc = tool_scope_parse(optarg);
			if (sc < 0)
				return tool_usage_err(cmd, "--scope: expected activity, sku or day, got '%s'", optarg);
			rc = terms_set(cmd, a, T_SCOPE, sc);
			break;
		}
		case O_DAYOFF:
			if (tool_opt_i64(cmd, "--day-offset", optarg, -FLASH_DAY_OFFSET_MAX_S, FLASH_DAY_OFFSET_MAX_S,
			                 &i) != 0)
				return TOOL_USAGE;
			rc = terms_set(cmd, a, T_DAYOFF, i);
			break;
		case O_PRICE:
			if (a->price_given)
				return tool_usage_err(cmd, "--price given twice");
			if (tool_opt_u64(cmd, "--price", optarg, 0, FLASH_PRICE_MAX, &a->price) != 0)
				return TOOL_USAGE;
			a->price_given = 1;
			break;
		default:
			return tool_bad_option(cmd, c, argv);
		}
		if (rc)
			return rc;
	}
	if (optind < argc)
		return tool_usage_err(cmd, "unexpected argument '%s'", argv[optind]);
	return terms_args_check(cmd, a);
}

/* What the options say together.  @return 0, or an exit code after a message. */
static int terms_args_check(const char *cmd, const struct terms_args *a)
{
	if (!a->name)
		return tool_usage_err(cmd, "--name NAME is required");
	if (!a->activity)
		return tool_usage_err(cmd, "--activity A is required");
	if (a->price_given && !a->sku)
		return tool_usage_err(cmd, "--price needs --sku S: the sku priced");
	if (a->json && a->print_version)
		return tool_usage_err(cmd, "--json and --print-version: one or the other");
	if (a->price_given && terms_changes_activity(a))
		return tool_usage_err(cmd, "a price and the activity's terms are two changes, each with its "
		                      "own version: give them in two commands");
	if (a->sku && terms_changes_activity(a))
		return tool_usage_err(cmd, "--sku goes with showing or --price: the activity's terms are "
		                      "the activity's, for every sku");
	return 0;
}

/* ------------------------------------------------------------------------
 * 2. Showing the terms
 * ------------------------------------------------------------------------ */

/* The skus of activity @p id (only @p sku when nonzero), with their prices
 * and versions, into a malloc'ed array.
 * @return FLASH_OK (possibly none), or the error of a read. */
static int terms_read_skus(flash_t *h, uint32_t id, uint32_t sku, struct flash_sku_info **out, uint32_t *n)
{
	struct flash_seg_opts so;
	struct flash_sku_info s, *v = NULL, *nv;
	uint32_t cap = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (sku) {
		if ((rc = flash_sku_get(h, id, sku, &s)) != FLASH_OK)
			return rc;
		if (!(*out = malloc(sizeof s)))
			return FLASH_ENOMEM;
		**out = s;
		*n = 1;
		return FLASH_OK;
	}
	if ((rc = flash_seg_opts_get(h, &so)) != FLASH_OK)
		return rc;
	/* entries an archive freed read FLASH_EARCHIVED or FLASH_ENOT_FOUND
	 * between live ones: walk the whole capacity, as status does */
	for (uint32_t i = 0; i < so.max_skus; i++) {
		if ((rc = flash_sku_at(h, i, &s)) == FLASH_ENOT_FOUND || rc == FLASH_EARCHIVED)
			continue;
		if (rc != FLASH_OK)
			goto fail;
		if (s.activity_id != id)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			if (!(nv = realloc(v, cap * sizeof *nv))) {
				rc = FLASH_ENOMEM;
				goto fail;
			}
			v = nv;
		}
		v[(*n)++] = s;
	}
	*out = v;
	return FLASH_OK;
fail:
	free(v);
	*n = 0;
	return rc;
}

static void terms_print_text(const struct flash_activity *x, const struct flash_sku_info *s, uint32_t n)
{
	char b1[40], b2[40];

	printf("activity %u: version %" PRIu64 ", window %s .. %s, limit %u per %s, max qty %u%s%s",
	       x->id, x->version, tool_fmt_time(x->start_ns, b1, sizeof b1),
	       tool_fmt_time(x->end_ns, b2, sizeof b2), x->limit_per_user, tool_scope_name(x->scope),
	       x->max_qty, x->flags & FLASH_ACT_TOKEN_REQUIRED ? ", token required" : "",
	       x->flags & FLASH_ACT_CANCEL_RETURNS_QUOTA ? ", cancel returns quota" : "");
	if (x->day_offset_s)
		printf(", day offset %d s", x->day_offset_s);
	putchar('\n');
	for (uint32_t i = 0; i < n; i++)
		printf("  sku %u: price %" PRIu64 ", version %" PRIu64 ", %" PRIu64 " units, %" PRIu64
		       " available\n", s[i].sku_id, s[i].price, s[i].version, s[i].total, s[i].available);
}

/* The keys of status --json's activities, version, and the skus: the
 * members of one object, without its braces. */
static void terms_print_json(const struct flash_activity *x, const struct flash_sku_info *s, uint32_t n)
{
	char b1[40], b2[40];

	printf("\"id\":%u,\"version\":%" PRIu64 ",\"start\":\"%s\",\"end\":\"%s\",\"start_ns\":%" PRId64
	       ",\"end_ns\":%" PRId64 ",\"limit\":%u,\"max_qty\":%u,\"scope\":\"%s\","
	       "\"cancel_returns_quota\":%s,\"token_required\":%s,\"day_offset_s\":%d,\"skus\":[",
	       x->id, x->version, tool_fmt_time(x->start_ns, b1, sizeof b1),
	       tool_fmt_time(x->end_ns, b2, sizeof b2), x->start_ns, x->end_ns, x->limit_per_user,
	       x->max_qty, tool_scope_name(x->scope),
	       x->flags & FLASH_ACT_CANCEL_RETURNS_QUOTA ? "true" : "false",
	       x->flags & FLASH_ACT_TOKEN_REQUIRED ? "true" : "false", x->day_offset_s);
	for (uint32_t i = 0; i < n; i++)
		printf("%s{\"sku_id\":%u,\"price\":%" PRIu64 ",\"version\":%" PRIu64 ",\"total\":%" PRIu64
		       ",\"available\":%" PRIu64 "}", i ? "," : "", s[i].sku_id, s[i].price, s[i].version,
		       s[i].total, s[i].available);
	printf("]");
}

/* "activity A is not in segment N", or the error of a read.  @return TOOL_FAIL. */
static int terms_not_read(const struct terms_args *a, int rc, uint32_t sku, const char *what)
{
	if (rc == FLASH_ENOT_FOUND && sku)
		return tool_failf("terms: sku %u of activity %u is not in segment %s (%s); nothing changed",
		                  sku, a->activity, a->name, flash_rcname(rc));
	if (rc == FLASH_ENOT_FOUND)
		return tool_failf("terms: activity %u is not in segment %s (never added, or archived: %s); "
		                  "nothing changed", a->activity, a->name, flash_rcname(rc));
	return tool_failf("terms: %s: %s", what, flash_strerror(rc));
}

/* Read activity a->activity and its skus (a->sku alone when given) and
 * print them; @p change, when not NULL, opens the JSON object with what
 * changed.  @return TOOL_OK or TOOL_FAIL. */
static int terms_show(flash_t *h, const struct terms_args *a, const char *change_json)
{
	struct flash_activity x;
	struct flash_sku_info *s = NULL;
	uint32_t n = 0;
	int rc;

	if ((rc = flash_activity_get(h, a->activity, &x)) != FLASH_OK)
		return terms_not_read(a, rc, 0, "reading the activity");
	if ((rc = terms_read_skus(h, a->activity, a->sku, &s, &n)) != FLASH_OK)
		return terms_not_read(a, rc, a->sku, "reading the skus");
	if (a->print_version) {
		/* the sku's (asked for by --sku: the one read), else the activity's */
		printf("%" PRIu64 "\n", a->sku && n == 1 ? s[0].version : x.version);
	} else if (a->json) {
		printf("{%s", change_json ? change_json : "");
		terms_print_json(&x, s, n);
		printf("}\n");
	} else {
		terms_print_text(&x, s, n);
	}
	free(s);
	return TOOL_OK;
}

/* ------------------------------------------------------------------------
 * 3. Changing them
 * ------------------------------------------------------------------------ */

/*
 * The new terms: @p cur with what the command line gives, checked as the
 * engine will check them.  @return 0, or TOOL_USAGE after a message that
 * says what was refused (nothing changed).
 */
static int terms_resolve(const struct terms_args *a, const struct flash_activity *cur, struct flash_activity *nx)
{
	const char *cmd = "terms";
	char b1[40], b2[40];

	*nx = *cur;
	if (a->given[T_SCOPE] && (uint32_t)a->v[T_SCOPE] != cur->scope)
		return tool_usage_err(cmd, "--scope %s: activity %u counts its limit per %s, and a scope never "
		                      "changes (the users' limit keys depend on it): make a new activity; "
		                      "nothing changed", tool_scope_name((uint32_t)a->v[T_SCOPE]), cur->id,
		                      tool_scope_name(cur->scope));
	if (a->given[T_DAYOFF] && a->v[T_DAYOFF] != cur->day_offset_s)
		return tool_usage_err(cmd, "--day-offset %lld: activity %u has day offset %d s, and it never "
		                      "changes (the users' limit keys depend on it); nothing changed",
		                      (long long)a->v[T_DAYOFF], cur->id, cur->day_offset_s);
	if (a->given[T_LIMIT] && (uint32_t)a->v[T_LIMIT] < cur->limit_per_user)
		return tool_usage_err(cmd, "--limit %lld: activity %u has limit %u, and a limit may grow, never "
		                      "shrink (a user's orders hold numbered limit slots); nothing changed",
		                      (long long)a->v[T_LIMIT], cur->id, cur->limit_per_user);
	if (a->given[T_START])
		nx->start_ns = a->v[T_START];
	if (a->given[T_END])
		nx->end_ns = a->v[T_END];
	if (a->given[T_LIMIT])
		nx->limit_per_user = (uint32_t)a->v[T_LIMIT];
	if (a->given[T_MAXQTY])
		nx->max_qty = (uint32_t)a->v[T_MAXQTY];
	nx->flags = (cur->flags | a->flags_set) & ~a->flags_clear;
	if (nx->end_ns <= nx->start_ns)
		return tool_usage_err(cmd, "activity %u: end %s is not after start %s; nothing changed", cur->id,
		                      tool_fmt_time(nx->end_ns, b1, sizeof b1),
		                      tool_fmt_time(nx->start_ns, b2, sizeof b2));
	if (flash_activity_check(nx) != FLASH_OK)
		return tool_usage_err(cmd, "activity %u: the engine's checks refuse these terms (%s); nothing "
		                      "changed", cur->id, flash_strerror(FLASH_EINVAL));
	return 0;
}

/* What the engine answered a change: FLASH_EINVAL is terms refused (exit
 * 2, as the checks before it); the rest are failures (exit 1). */
static int terms_change_failed(const struct terms_args *a, int rc, const char *what)
{
	if (rc == FLASH_EINVAL) {
		tool_failf("terms: %s: %s: the segment refused the terms (the activity changed meanwhile? "
		           "`flashstock terms --name %s --activity %u` shows them); nothing changed",
		           what, flash_rcname(rc), a->name, a->activity);
		return TOOL_USAGE;
	}
	if (rc == FLASH_ENOT_FOUND)
		return terms_not_read(a, rc, a->price_given ? a->sku : 0, what);
	if (rc == FLASH_ESTALE)   /* the change is based on the version read just before */
		return tool_failf("terms: %s: %s: another change came between this command's read of the "
		                  "terms and its change; nothing changed: look again (`flashstock terms --name %s "
		                  "--activity %u`) and run it again", what, flash_rcname(rc), a->name, a->activity);
	return tool_failf("terms: %s: %s%s", what, flash_strerror(rc),
	                  rc == FLASH_EBUSY ? " (nothing changed: try again)" : "");
}

static int terms_change_activity(flash_t *h, const struct terms_args *a)
{
	struct flash_activity cur, nx;
	uint64_t ver = 0;
	char what[64], head[160];
	int rc;

	if ((rc = flash_activity_get(h, a->activity, &cur)) != FLASH_OK)
		return terms_not_read(a, rc, 0, "reading the activity");
	if ((rc = terms_resolve(a, &cur, &nx)) != 0)
		return rc;
	snprintf(what, sizeof what, "activity %u", a->activity);
	if ((rc = flash_activity_update(h, &nx, &ver)) != FLASH_OK)
		return terms_change_failed(a, rc, what);
	if (!a->json && !a->print_version)
		printf("activity %u: terms changed, version %" PRIu64 " -> %" PRIu64 "\n", a->activity,
		       cur.version, ver);
	snprintf(head, sizeof head, "\"changed\":\"activity\",\"previous_version\":%" PRIu64
	         ",\"new_version\":%" PRIu64 ",", cur.version, ver);
	return terms_show(h, a, head);
}

static int terms_change_price(flash_t *h, const struct terms_args *a)
{
	struct flash_sku_info cur;
	uint64_t ver = 0;
	char what[64], head[160];
	int rc;

	if ((rc = flash_sku_get(h, a->activity, a->sku, &cur)) != FLASH_OK)
		return terms_not_read(a, rc, a->sku, "reading the sku");
	snprintf(what, sizeof what, "sku %u of activity %u", a->sku, a->activity);
	if ((rc = flash_sku_price_set(h, a->activity, a->sku, a->price, &ver)) != FLASH_OK)
		return terms_change_failed(a, rc, what);
	if (!a->json && !a->print_version)
		printf("activity %u, sku %u: price %" PRIu64 " -> %" PRIu64 ", version %" PRIu64 " -> %" PRIu64
		       "\n", a->activity, a->sku, cur.price, a->price, cur.version, ver);
	snprintf(head, sizeof head, "\"changed\":\"price\",\"previous_version\":%" PRIu64
	         ",\"new_version\":%" PRIu64 ",", cur.version, ver);
	return terms_show(h, a, head);
}

int cmd_terms(int argc, char **argv)
{
	struct terms_args a;
	flash_t *h = NULL;
	int change, rc;

	memset(&a, 0, sizeof a);
	rc = terms_parse(argc, argv, &a, tool_realtime_ns());
	if (rc == -1)
		return TOOL_OK;
	if (rc)
		return rc;
	change = a.price_given || terms_changes_activity(&a);
	/* showing takes no process slot and can change nothing */
	if ((rc = flash_open(a.name, change ? 0 : FLASH_RDONLY, &h)) != FLASH_OK) {
		char what[300];
		snprintf(what, sizeof what, "terms: open %s", a.name);
		return tool_fail(what, rc);
	}
	if (a.price_given)
		rc = terms_change_price(h, &a);
	else if (change)
		rc = terms_change_activity(h, &a);
	else
		rc = terms_show(h, &a, NULL);
	fflush(stdout);
	flash_close(h);
	return rc;
}
