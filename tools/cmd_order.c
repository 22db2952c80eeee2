/*
 * cmd_order.c -- `flashstock order`: one order, from the segment while it
 * holds it, else from MariaDB (an archived activity's orders, or a segment
 * rebuilt or replaced since), saying which and whether it is archived;
 * or one order placed (--place, --reserve: a reservation, issue 22), or a
 * cart of several skus placed as one order (--line, flash_cart_order), for
 * an operator or a test to do by hand what an application does.
 * The MariaDB reads are persist/mysql/reconcile_sql.c's; this file is options,
 * output and exit codes.
 */
#include "tool.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "mysql_apply.h"
#include "reconcile_sql.h"

static void order_help(FILE *out)
{
	fprintf(out,
	        "usage: flashstock order --name NAME ORDER_NO [--mysql URL | --mysql-defaults F] [--json]\n"
	        "       flashstock order --name NAME --request-id ID --activity A --user U --sku S\n"
	        "                        (--mysql URL | --mysql-defaults F) [--json]\n"
	        "       flashstock order --name NAME --place --activity A --sku S --user U [--qty Q]\n"
	        "                        [--reserve MS] [--request-id ID] [--activity-version N]\n"
	        "                        [--sku-version N] [--json]\n"
	        "       flashstock order --name NAME --place --activity A --user U\n"
	        "                        --line SKU:QTY[:VERSION] [--line ...] [--reserve MS]\n"
	        "                        [--request-id ID] [--activity-version N] [--json]\n"
	        "\n"
	        "Show one order, or place one or a cart.  The segment NAME is asked first\n"
	        "(read-only); an order it no longer holds -- its activity was archived\n"
	        "(FLASH_EARCHIVED), or the segment was rebuilt or replaced and never numbered\n"
	        "it -- is read from MariaDB, the database the daemon's applier writes (serve\n"
	        "--mysql), which keeps every order of an archived activity.  The output says\n"
	        "where it came from (source segment or mysql) and, from MariaDB, whether its\n"
	        "activity is archived (at which LSN and time).  A reservation shows its pay-by\n"
	        "time (reserved: pay by T; expired: unpaid, pay by T).  A cart shows every\n"
	        "line: its number, its limit slot, then a table of line, sku and qty; the\n"
	        "number of a cart's later line shows the cart (said on stderr).\n"
	        "\n"
	        "By request id (e.g. after FLASH_EREQ_EXPIRED: the segment no longer\n"
	        "remembers the id): the segment keeps no request id per order, so MariaDB\n"
	        "is asked for the order the user placed in the activity and sku with that\n"
	        "request id; the segment's state of that number is shown beside it while\n"
	        "the segment still holds it.\n"
	        "\n"
	        "Placing (--place, or --reserve alone): one order of user U for Q units of\n"
	        "sku S in activity A, through a handle of this process, as an application\n"
	        "places one (flash_order).  It prints the order as showing it would; a\n"
	        "refusal is 'flashstock: order: <reason>' and exit 1.  With --reserve MS the\n"
	        "order is a reservation: it holds its units and the user's limit slot, and\n"
	        "is paid by `flashstock confirm` within MS milliseconds, else it expires\n"
	        "(serve's expirer, or `flashstock expire`) and gives both back.  A request id\n"
	        "makes a retry return the first outcome instead of a second order.\n"
	        "--activity-version and --sku-version name the versions of the terms the buyer\n"
	        "saw (`flashstock terms`): once the activity's terms or the sku's price changed,\n"
	        "the order is refused FLASH_ESTALE with nothing taken -- no units, no limit\n"
	        "slot, no token, and the request id stays free for the retry under the new\n"
	        "terms.\n"
	        "\n"
	        "A cart (--line, once per sku, instead of --sku and --qty): several skus of\n"
	        "activity A in one order of user U, all or nothing (flash_cart_order): every\n"
	        "line's units are taken, or none.  It is one order: one number (its later\n"
	        "lines take the numbers after it), one limit slot of the user, one request\n"
	        "id, one reservation (--reserve: `flashstock confirm` pays every line, an\n"
	        "expiry returns every line's units).  An activity that limits each sku\n"
	        "apart (scope sku) takes no carts of two lines or more; a cart of one line\n"
	        "is a plain order, shown as one.  Refused, it names the line: sold out\n"
	        "says which line ran out and lists every line short of its qty with the\n"
	        "units left; a sku the activity does not have, a sku's version that moved\n"
	        "on (FLASH_ESTALE) or a qty above max_qty names its line too.\n"
	        "\n"
	        "options:\n"
	        "  --name NAME            segment name (required; a segment that does not exist\n"
	        "                         any more is skipped when MariaDB is given)\n"
	        "  --request-id ID        show: look the order up by request id (needs\n"
	        "                         --activity, --user, --sku and MariaDB); place: the\n"
	        "                         order's request id\n"
	        "  --activity A, --user U, --sku S   the request's activity, user and sku (of a\n"
	        "                         cart: its line 0's)\n"
	        "  --mysql URL            mysql://user:pass@localhost/db?socket=PATH\n"
	        "  --mysql-defaults F     ... or its [client] option file\n"
	        "  --place                place an order (needs --activity, --user and --sku,\n"
	        "                         or --line)\n"
	        "  --qty Q                units of the order placed, 1..65535 (default 1; at\n"
	        "                         most the activity's max_qty)\n"
	        "  --reserve MS           place a reservation to be paid within MS ms,\n"
	        "                         1..604800000 (a week); implies --place\n"
	        "  --activity-version N   place only under this version of the activity's\n"
	        "                         terms, else FLASH_ESTALE (default: not checked)\n"
	        "  --sku-version N        ... and this version of the sku's (its price)\n"
	        "  --line SKU:QTY[:VERSION]  a line of a cart: QTY units (1..65535, at most the\n"
	        "                         activity's max_qty) of sku SKU, placed only under\n"
	        "                         VERSION of the sku's terms when given; 1 to 16\n"
	        "                         lines, each sku once; implies --place; not with\n"
	        "                         --sku, --qty or --sku-version\n"
	        "  --json                 one JSON object: order_no, source, archived,\n"
	        "                         archived_lsn, archived_ns, state (none, active,\n"
	        "                         cancelled, reserved, expired; from MariaDB also\n"
	        "                         unknown: a status this version does not know),\n"
	        "                         activity_id, sku_id, user_id, qty (sku_id and qty:\n"
	        "                         a cart's line 0), limit_slot, biz_day,\n"
	        "                         created_ns, pay_by_ns (a reservation's; else null),\n"
	        "                         request_id, lsn, cancel_lsn, confirm_lsn (MariaDB),\n"
	        "                         quota_returned (request_id .. quota_returned null from\n"
	        "                         the segment, which does not keep them), lines:\n"
	        "                         [{line, sku_id, qty}] (one for a plain order, every\n"
	        "                         line of a cart; from MariaDB, its order_lines)\n"
	        "\n"
	        "exit: 0 found, or placed; 1 not found in the segment nor in MariaDB, archived\n"
	        "      and no MariaDB given, a failure (MariaDB unreachable, bad segment), or the\n"
	        "      order refused (sold out, limit, not started or ended, the terms changed:\n"
	        "      FLASH_ESTALE, ...) or placed but not durable yet (FLASH_EFATE_UNKNOWN:\n"
	        "      printed, exit 1); 2 usage error (a cart's sku twice, more than 16 lines,\n"
	        "      a bad --line, --line with --sku), a quantity above the activity's\n"
	        "      max_qty, or a cart in an activity of scope sku (nothing changed)\n");
}

/* enum flash_order_state by name; a state this build does not know (a
 * MariaDB status newer than it: RSQL_STATE_UNKNOWN) reads "unknown". */
static const char *state_name(uint32_t s)
{
	static const char *const names[] = { "none", "active", "cancelled", "reserved", "expired" };
	return s < sizeof names / sizeof names[0] ? names[s] : "unknown";
}

/* ", pay by T" (text) for a reservation, paid or not yet; nothing else. */
static const char *pay_by_text(const struct flash_order_info *o, char *buf, size_t cap)
{
	char t[48];
	buf[0] = '\0';
	if (o->pay_by_ns && o->state == FLASH_ORDER_RESERVED)
		snprintf(buf, cap, ", pay by %s%s", tool_fmt_time_ms(o->pay_by_ns, t, sizeof t),
		         o->pay_by_ns <= tool_realtime_ns() ? " (past: not expired yet)" : "");
	else if (o->pay_by_ns && o->state == FLASH_ORDER_EXPIRED)
		snprintf(buf, cap, " unpaid, pay by %s", tool_fmt_time_ms(o->pay_by_ns, t, sizeof t));
	return buf;
}

/* A line of an order as the output shows it (segment or MariaDB). */
struct order_line {
	uint32_t line;
	uint32_t sku_id;
	uint32_t qty;
};

/* ,"lines":[{line, sku_id, qty}, ...]: every line of the order. */
static void print_lines_json(const struct order_line *l, uint32_t n)
{
	printf(",\"lines\":[");
	for (uint32_t i = 0; i < n; i++)
		printf("%s{\"line\":%u,\"sku_id\":%u,\"qty\":%u}", i ? "," : "", l[i].line, l[i].sku_id, l[i].qty);
	printf("]");
}

/* The line table under a cart's line of text. */
static void print_lines_table(const struct order_line *l, uint32_t n)
{
	printf("  %4s  %10s  %5s\n", "line", "sku", "qty");
	for (uint32_t i = 0; i < n; i++)
		printf("  %4u  %10u  %5u\n", l[i].line, l[i].sku_id, l[i].qty);
}

/* What the order holds, in its line of text: "sku S, user U, qty Q" for a
 * plain order, "cart of N lines, user U, X units" for a cart. */
static const char *order_what(char *buf, size_t cap, const struct order_line *l, uint32_t n, int cart,
                              uint64_t user)
{
	uint64_t units = 0;

	if (!cart) {
		snprintf(buf, cap, "sku %u, user %llu, qty %u", l[0].sku_id, (unsigned long long)user, l[0].qty);
		return buf;
	}
	for (uint32_t i = 0; i < n; i++)
		units += l[i].qty;
	snprintf(buf, cap, "cart of %u line%s, user %llu, %llu units", n, n == 1 ? "" : "s",
	         (unsigned long long)user, (unsigned long long)units);
	return buf;
}

/*
 * An order from the segment: o[0 .. n - 1] are its lines (n 1 for a plain
 * order, and for a cart of one line, which is one).  A plain order is one
 * line of text; a cart is a line of what its lines share -- number, state,
 * user, limit slot -- then a table of its lines.  JSON: one object, sku_id
 * and qty of line 0, every line in "lines".
 */
static void print_segment(const struct flash_order_info *o, uint32_t n, int json)
{
	struct order_line l[FLASH_CART_LINES_MAX];
	char b[40], p[80], w[96];

	n = n < 1 ? 1 : n < FLASH_CART_LINES_MAX ? n : FLASH_CART_LINES_MAX;   /* o[0] is always there */
	for (uint32_t i = 0; i < n; i++)
		l[i] = (struct order_line){ i, o[i].sku_id, o[i].qty };
	if (json) {
		printf("{\"order_no\":%" PRIu64 ",\"source\":\"segment\",\"archived\":false,"
		       "\"archived_lsn\":null,\"archived_ns\":null,\"state\":\"%s\",\"activity_id\":%u,"
		       "\"sku_id\":%u,\"user_id\":%" PRIu64 ",\"qty\":%u,\"limit_slot\":%u,\"biz_day\":%u,"
		       "\"created_ns\":%" PRId64 ",\"pay_by_ns\":",
		       o->order_no, state_name(o->state), o->activity_id, o->sku_id, o->user_id, o->qty,
		       o->limit_slot, o->biz_day, o->created_ns);
		if (o->pay_by_ns)
			printf("%" PRId64, o->pay_by_ns);
		else
			printf("null");
		printf(",\"request_id\":null,\"lsn\":null,\"cancel_lsn\":null,\"quota_returned\":null,\"confirm_lsn\":null");
		print_lines_json(l, n);
		printf("}\n");
		return;
	}
	int table = n > 1;

	printf("order %" PRIu64 ": %s%s, activity %u, %s, limit slot %u, day %u, created %s (source segment)\n",
	       o->order_no, state_name(o->state), pay_by_text(o, p, sizeof p), o->activity_id,
	       order_what(w, sizeof w, l, n, table, o->user_id), o->limit_slot, o->biz_day,
	       o->created_ns ? tool_fmt_time(o->created_ns, b, sizeof b) : "-");
	if (table)
		print_lines_table(l, n);
}

/*
 * Order @p no as the segment holds it, every line: info[0 .. *n - 1]
 * (FLASH_CART_LINES_MAX entries; one for a plain order).  The number of a
 * cart's later line (it reads FLASH_ORDER_NONE with its line) reads as its
 * cart, which stderr names.
 * @return flash_order_get's answer, or flash_order_lines'.
 */
static int order_read(flash_t *h, uint64_t no, struct flash_order_info *info, uint32_t *n)
{
	int rc = flash_order_get(h, no, &info[0]);

	*n = 1;
	if (rc != FLASH_OK)
		return rc;
	if (info[0].state == FLASH_ORDER_NONE && info[0].line != 0 && info[0].line < info[0].lines &&
	    info[0].line < (no & ((UINT64_C(1) << 56) - 1))) {
		fprintf(stderr, "flashstock: order: %llu is line %u of cart %llu: showing the cart\n",
		        (unsigned long long)no, info[0].line, (unsigned long long)(no - info[0].line));
		no -= info[0].line;
		if ((rc = flash_order_get(h, no, &info[0])) != FLASH_OK)
			return rc;
	}
	if (info[0].lines <= 1)
		return FLASH_OK;
	return flash_order_lines(h, no, info, FLASH_CART_LINES_MAX, n);
}

/*
 * An order from MariaDB: its orders row @p r, and @p ml[0 .. n - 1] its
 * order_lines rows (a cart's; n 0 for a plain order), as print_segment
 * prints one from the segment.
 */
static void print_mysql(const struct rsql_order_row *r, const struct rsql_order_line *ml, uint32_t n, int json,
                        const char *seg_note)
{
	struct order_line l[FLASH_CART_LINES_MAX];
	char b[40], b2[40], w[96];
	const struct rsql_order *o = &r->o;
	uint32_t nl = n ? (n < FLASH_CART_LINES_MAX ? n : FLASH_CART_LINES_MAX) : 1;

	l[0] = (struct order_line){ 0, o->sku_id, o->qty };
	for (uint32_t i = 0; i < n && i < FLASH_CART_LINES_MAX; i++)
		l[i] = (struct order_line){ ml[i].line, ml[i].sku_id, ml[i].qty };
	if (json) {
		printf("{\"order_no\":%" PRIu64 ",\"source\":\"mysql\",\"archived\":%s,", o->order_no,
		       r->archived ? "true" : "false");
		if (r->archived)
			printf("\"archived_lsn\":%" PRIu64 ",\"archived_ns\":%" PRId64 ",", r->archived_lsn,
			       r->archived_ns);
		else
			printf("\"archived_lsn\":null,\"archived_ns\":null,");
		printf("\"state\":\"%s\",\"activity_id\":%u,\"sku_id\":%u,\"user_id\":%" PRIu64 ",\"qty\":%u,"
		       "\"limit_slot\":%u,\"biz_day\":%u,\"created_ns\":%" PRId64 ",\"pay_by_ns\":",
		       state_name(o->state), o->activity_id, o->sku_id, o->user_id, o->qty, o->limit_slot,
		       o->biz_day, r->created_ns);
		if (r->pay_by_ns)     /* a reservation: its deadline */
			printf("%" PRId64 ",", r->pay_by_ns);
		else
			printf("null,");
		printf("\"request_id\":%" PRIu64 ",\"lsn\":%" PRIu64 ",", r->request_id, r->lsn);
		if (r->cancel_lsn)
			printf("\"cancel_lsn\":%" PRIu64 ",", r->cancel_lsn);
		else
			printf("\"cancel_lsn\":null,");
		printf("\"quota_returned\":%s", r->quota_returned ? "true" : "false");
		if (r->confirm_lsn)   /* a reservation's payment */
			printf(",\"confirm_lsn\":%" PRIu64, r->confirm_lsn);
		else
			printf(",\"confirm_lsn\":null");
		if (seg_note)
			printf(",\"segment\":\"%s\"", seg_note);
		print_lines_json(l, nl);
		printf("}\n");
		return;
	}
	int unknown = o->state == RSQL_STATE_UNKNOWN;   /* name the status as MariaDB has it */
	printf("order %" PRIu64 ": %s%s%s%s, activity %u, %s, limit slot %u, "
	       "day %u, created %s, request id %" PRIu64 ", lsn %" PRIu64,
	       o->order_no, state_name(o->state), unknown ? " (MariaDB status " : "", unknown ? r->status : "",
	       unknown ? ")" : "", o->activity_id, order_what(w, sizeof w, l, nl, n > 0, o->user_id),
	       o->limit_slot, o->biz_day, tool_fmt_time(r->created_ns, b, sizeof b), r->request_id, r->lsn);
	if (r->pay_by_ns)
		printf(", a reservation to pay by %s", tool_fmt_time(r->pay_by_ns, b2, sizeof b2));
	if (r->confirm_lsn)
		printf(", paid at lsn %" PRIu64, r->confirm_lsn);
	if (r->cancel_lsn)
		printf(", %s at lsn %" PRIu64 "%s", o->state == FLASH_ORDER_EXPIRED ? "expired" : "cancelled",
		       r->cancel_lsn, r->quota_returned ? " (quota returned)" : "");
	if (r->archived)
		printf(" (source mysql; archived: activity %u archived at LSN %" PRIu64 ", %s)", o->activity_id,
		       r->archived_lsn, tool_fmt_time(r->archived_ns, b2, sizeof b2));
	else
		printf(" (source mysql; activity not archived)");
	if (seg_note)
		printf("; segment: %s", seg_note);
	printf("\n");
	if (n)
		print_lines_table(l, nl);
}

struct order_args {
	const char *name;
	uint64_t    order_no;
	uint64_t    request_id;
	uint32_t    activity, sku;
	uint64_t    user;
	int         json;
	int         place;          /* --place, or --reserve: place an order */
	uint32_t    qty;            /* --qty (placing; 0: not given, 1) */
	uint32_t    reserve_ms;     /* --reserve (placing; 0: a plain order) */
	uint64_t    activity_version;  /* --activity-version (placing; 0: not checked) */
	uint64_t    sku_version;       /* --sku-version (placing; 0: not checked) */
	uint32_t    nlines;            /* --line given: a cart of line[0 .. nlines - 1] */
	struct flash_cart_line line[FLASH_CART_LINES_MAX];
	struct mdb_opts mo;
};

/*
 * --line SKU:QTY[:VERSION]: the cart's next line.  Each part a decimal
 * number in its range (the version's 0 is "not checked": left out), a sku
 * once, 16 lines at most; anything else is a usage error naming the value.
 */
static int order_parse_line(const char *cmd, const char *s, struct order_args *a)
{
	unsigned long long v[3] = { 0, 0, 0 };
	const char *p = s;
	char *end;
	int n = 0;

	for (;;) {
		if (*p < '0' || *p > '9')
			goto bad;
		errno = 0;
		v[n++] = strtoull(p, &end, 10);
		if (errno)
			goto bad;
		if (*end == '\0')
			break;
		if (*end != ':' || n == 3)
			goto bad;
		p = end + 1;
	}
	if (n < 2)
		goto bad;
	if (v[0] < 1 || v[0] > UINT32_MAX)
		return tool_usage_err(cmd, "--line '%s': sku %llu is out of range [1, %u]", s, v[0], UINT32_MAX);
	if (v[1] < 1 || v[1] > 65535)
		return tool_usage_err(cmd, "--line '%s': qty %llu is out of range [1, 65535]", s, v[1]);
	if (n == 3 && v[2] == 0)
		return tool_usage_err(cmd, "--line '%s': version 0 is out of range [1, %llu] (leave it out: "
		                      "SKU:QTY, not to check the sku's version)", s, (unsigned long long)UINT64_MAX);
	for (uint32_t i = 0; i < a->nlines; i++)
		if (a->line[i].sku_id == v[0])
			return tool_usage_err(cmd, "--line '%s': sku %llu is line %u already: a cart's lines are "
			                      "distinct skus (one line of the sum)", s, v[0], i);
	if (a->nlines == FLASH_CART_LINES_MAX)
		return tool_usage_err(cmd, "--line '%s': a cart holds at most %u lines", s, FLASH_CART_LINES_MAX);
	a->line[a->nlines].sku_id = (uint32_t)v[0];
	a->line[a->nlines].qty = (uint32_t)v[1];
	a->line[a->nlines].sku_version = v[2];
	a->nlines++;
	return 0;
bad:
	return tool_usage_err(cmd, "--line '%s': give SKU:QTY or SKU:QTY:VERSION, decimal numbers "
	                      "(e.g. --line 10:2)", s);
}

/* The checks of a placing command line (--place or --reserve), after the
 * options: what it needs, and nothing of the show modes. */
static int order_parse_place(int argc, char **argv, struct order_args *a)
{
	const char *cmd = argv[0];

	if (optind < argc)
		return tool_usage_err(cmd, "unexpected argument '%s': --place takes no ORDER_NO", argv[optind]);
	if (a->mo.url || a->mo.defaults_file)
		return tool_usage_err(cmd, "--mysql goes with showing an order: one is placed in the segment");
	if (a->nlines && (a->sku || a->qty || a->sku_version))
		return tool_usage_err(cmd, "--line does not mix with --sku, --qty or --sku-version: a cart's "
		                      "lines name their skus, quantities and versions (--line SKU:QTY[:VERSION])");
	if (!a->activity || !a->user || (!a->sku && !a->nlines))
		return tool_usage_err(cmd, "--place needs --activity, --user and --sku (or --line)");
	if (!a->qty)
		a->qty = 1;
	return 0;
}

/* The checks of a showing command line (ORDER_NO, or --request-id), after
 * the options: nothing of placing. */
static int order_parse_show(int argc, char **argv, struct order_args *a)
{
	const char *cmd = argv[0];

	if (a->qty)
		return tool_usage_err(cmd, "--qty goes with --place");
	if (a->activity_version || a->sku_version)
		return tool_usage_err(cmd, "--activity-version and --sku-version go with --place or --reserve");
	if (a->mo.url && a->mo.defaults_file)
		return tool_usage_err(cmd, "give --mysql or --mysql-defaults, not both");
	if (tool_opt_mysql_url(cmd, a->mo.url) != 0)
		return TOOL_USAGE;
	a->mo.require_db = 1;
	if (a->request_id) {
		if (optind < argc)
			return tool_usage_err(cmd, "give ORDER_NO or --request-id, not both");
		if (!a->activity || !a->user || !a->sku)
			return tool_usage_err(cmd, "--request-id needs --activity, --user and --sku");
		if (!a->mo.url && !a->mo.defaults_file)
			return tool_usage_err(cmd, "--request-id needs --mysql URL or --mysql-defaults F: "
			                      "the segment keeps no request id per order");
		return 0;
	}
	if (a->activity || a->user || a->sku)
		return tool_usage_err(cmd, "--activity, --user and --sku go with --request-id or --place");
	if (optind + 1 != argc)
		return tool_usage_err(cmd, optind >= argc ? "give ORDER_NO or --request-id ID" :
		                      "unexpected argument '%s'", argv[optind + (optind < argc)]);
	if (tool_opt_u64(cmd, "ORDER_NO", argv[optind], 1, UINT64_MAX, &a->order_no) != 0)
		return TOOL_USAGE;
	return 0;
}

static int order_parse(int argc, char **argv, struct order_args *a)
{
	enum { O_NAME = 256, O_REQ, O_ACT, O_USER, O_SKU, O_MYSQL, O_DEFAULTS, O_JSON, O_PLACE, O_QTY,
	       O_RESERVE, O_AVER, O_SVER, O_LINE };
	static const struct option longopts[] = {
		{ "help",           no_argument,       NULL, 'h' },
		{ "name",           required_argument, NULL, O_NAME },
		{ "request-id",     required_argument, NULL, O_REQ },
		{ "activity",       required_argument, NULL, O_ACT },
		{ "user",           required_argument, NULL, O_USER },
		{ "sku",            required_argument, NULL, O_SKU },
		{ "mysql",          required_argument, NULL, O_MYSQL },
		{ "mysql-defaults", required_argument, NULL, O_DEFAULTS },
		{ "json",           no_argument,       NULL, O_JSON },
		{ "place",          no_argument,       NULL, O_PLACE },
		{ "qty",            required_argument, NULL, O_QTY },
		{ "reserve",        required_argument, NULL, O_RESERVE },
		{ "activity-version", required_argument, NULL, O_AVER },
		{ "sku-version",    required_argument, NULL, O_SVER },
		{ "line",           required_argument, NULL, O_LINE },
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd = argv[0];
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			order_help(stdout);
			return -1;
		case O_NAME:
			a->name = optarg;
			break;
		case O_REQ:
			if (tool_opt_u64(cmd, "--request-id", optarg, 1, UINT64_MAX, &a->request_id) != 0)
				return TOOL_USAGE;
			break;
		case O_ACT:
			if (tool_opt_u32(cmd, "--activity", optarg, 1, UINT32_MAX, &a->activity) != 0)
				return TOOL_USAGE;
			break;
		case O_USER:
			if (tool_opt_u64(cmd, "--user", optarg, 1, UINT64_MAX, &a->user) != 0)
				return TOOL_USAGE;
			break;
		case O_SKU:
			if (tool_opt_u32(cmd, "--sku", optarg, 1, UINT32_MAX, &a->sku) != 0)
				return TOOL_USAGE;
			break;
		case O_MYSQL:
			a->mo.url = optarg;
			break;
		case O_DEFAULTS:
			a->mo.defaults_file = optarg;
			break;
		case O_JSON:
			a->json = 1;
			break;
		case O_PLACE:
			a->place = 1;
			break;
		case O_QTY:
			if (tool_opt_u32(cmd, "--qty", optarg, 1, 65535, &a->qty) != 0)
				return TOOL_USAGE;
			break;
		case O_RESERVE:
			if (tool_opt_u32(cmd, "--reserve", optarg, 1, FLASH_RESERVE_MS_MAX, &a->reserve_ms) != 0)
				return TOOL_USAGE;
			a->place = 1;
			break;
		case O_AVER:
			if (tool_opt_u64(cmd, "--activity-version", optarg, 1, UINT64_MAX, &a->activity_version) != 0)
				return TOOL_USAGE;
			break;
		case O_SVER:
			if (tool_opt_u64(cmd, "--sku-version", optarg, 1, UINT64_MAX, &a->sku_version) != 0)
				return TOOL_USAGE;
			break;
		case O_LINE:
			if (order_parse_line(cmd, optarg, a) != 0)
				return TOOL_USAGE;
			a->place = 1;
			break;
		default:
			return tool_bad_option(cmd, c, argv);
		}
	}
	if (!a->name)
		return tool_usage_err(cmd, "--name NAME is required");
	return a->place ? order_parse_place(argc, argv, a) : order_parse_show(argc, argv, a);
}

/*
 * FLASH_ESTALE: a version the order named is not the current one.  Say so
 * with the versions it named and the current ones, so the caller can show
 * the new terms and ask again: the activity's and sku @p sku's (@p sku_version
 * named; of a cart's line @p what, "" for a plain order).  @return TOOL_FAIL.
 */
static int order_stale(flash_t *h, const struct order_args *a, const char *what, uint32_t sku,
                       uint64_t sku_version)
{
	struct flash_activity x;
	struct flash_sku_info s;
	char named_a[48] = "not named", named_s[48] = "not named", now_a[24] = "?", now_s[24] = "?";

	if (a->activity_version)
		snprintf(named_a, sizeof named_a, "%llu", (unsigned long long)a->activity_version);
	if (sku_version)
		snprintf(named_s, sizeof named_s, "%llu", (unsigned long long)sku_version);
	if (flash_activity_get(h, a->activity, &x) == FLASH_OK)
		snprintf(now_a, sizeof now_a, "%llu", (unsigned long long)x.version);
	if (flash_sku_get(h, a->activity, sku, &s) == FLASH_OK)
		snprintf(now_s, sizeof now_s, "%llu", (unsigned long long)s.version);
	return tool_failf("order: %s: the terms changed: show the new terms (flashstock terms --name %s "
	                  "--activity %u); nothing taken: the order named activity version %s (now %s), "
	                  "%ssku version %s (now %s)", flash_rcname(FLASH_ESTALE), a->name, a->activity,
	                  named_a, now_a, what, named_s, now_s);
}

/*
 * An order stands (FLASH_OK, FLASH_EDUPLICATE of a first success,
 * FLASH_EFATE_UNKNOWN): print it as showing it would, every line of a
 * cart, and say how it stands.
 */
static int order_stands(flash_t *h, const struct order_args *a, int rc, uint64_t order_no)
{
	struct flash_order_info oi[FLASH_CART_LINES_MAX];
	uint32_t n;
	int grc;

	if ((grc = order_read(h, order_no, oi, &n)) != FLASH_OK)
		return tool_failf("order: placed as order %llu, but reading it back: %s",
		                  (unsigned long long)order_no, flash_strerror(grc));
	print_segment(oi, n, a->json);
	if (rc == FLASH_EDUPLICATE)
		fprintf(stderr, "flashstock: order: request id %llu was placed before, as order %llu: "
		        "nothing new was placed\n", (unsigned long long)a->request_id,
		        (unsigned long long)order_no);
	if (rc == FLASH_EFATE_UNKNOWN)
		return tool_failf("order: order %llu is placed but not durable yet: %s",
		                  (unsigned long long)order_no, flash_strerror(rc));
	return TOOL_OK;
}

/*
 * What flash_order answered, as the command's outcome: the order as it
 * reads now (the same line or object as showing it) when one stands --
 * placed now, placed by the first try of this request id, or placed but
 * not yet durable (exit 1: say so, it may still be lost) -- else the
 * refusal.  FLASH_EINVAL is a bad command line the segment caught (a
 * quantity above the activity's max_qty, a request id from the future):
 * nothing changed, exit 2.
 */
static int order_placed(flash_t *h, const struct order_args *a, int rc, const struct flash_order_res *res)
{
	if (rc == FLASH_EDUPLICATE && res->first_rc != FLASH_OK)
		return tool_failf("order: %s (the first outcome of request id %llu; nothing changed)",
		                  flash_strerror(res->first_rc), (unsigned long long)a->request_id);
	if (rc == FLASH_EINVAL) {
		tool_failf("order: %s: --qty %u is more than activity %u takes at once (its max_qty), or "
		           "the request id is dated ahead of the clock (a windowed segment's ids carry their "
		           "time); nothing changed", flash_strerror(rc), a->qty, a->activity);
		return TOOL_USAGE;
	}
	if (rc == FLASH_ENOT_FOUND)
		return tool_failf("order: activity %u or its sku %u is not in segment %s (%s)", a->activity,
		                  a->sku, a->name, flash_rcname(rc));
	if (rc == FLASH_ESTALE)
		return order_stale(h, a, "", a->sku, a->sku_version);
	if (rc != FLASH_OK && rc != FLASH_EDUPLICATE && rc != FLASH_EFATE_UNKNOWN)
		return tool_failf("order: %s", flash_strerror(rc));
	return order_stands(h, a, rc, res->order_no);
}

/*
 * A cart refused FLASH_EINVAL: an activity of scope sku (a cart holds one
 * limit slot of the user, which such an activity has per sku), or line
 * res->line's qty above max_qty, or a request id from the future.  The
 * command line asked for what the segment refuses: exit 2, nothing changed.
 */
static int order_cart_einval(flash_t *h, const struct order_args *a, const struct flash_cart_res *res)
{
	const struct flash_cart_line *l = &a->line[res->line < a->nlines ? res->line : 0];
	struct flash_activity x;
	int have = flash_activity_get(h, a->activity, &x) == FLASH_OK;

	if (have && x.scope == FLASH_SCOPE_SKU)
		tool_failf("order: %s: activity %u limits each sku apart (scope sku), and a cart holds one limit "
		           "slot for all its lines: carts need an activity of scope activity or day; nothing "
		           "changed", flash_rcname(FLASH_EINVAL), a->activity);
	else if (have && l->qty > x.max_qty)
		tool_failf("order: %s: line %u (sku %u): qty %u is more than activity %u takes at once (its "
		           "max_qty %u, per line); nothing changed", flash_rcname(FLASH_EINVAL),
		           (unsigned)(l - a->line), l->sku_id, l->qty, a->activity, x.max_qty);
	else
		tool_failf("order: %s: line %u (sku %u, qty %u) refused: a qty above activity %u's max_qty, or "
		           "the request id is dated ahead of the clock (a windowed segment's ids carry their "
		           "time); nothing changed", flash_strerror(FLASH_EINVAL), (unsigned)(l - a->line),
		           l->sku_id, l->qty, a->activity);
	return TOOL_USAGE;
}

/*
 * A cart refused FLASH_ESOLD_OUT, nothing taken: the line that ran out
 * (res->line) and every line short of its qty (res->sold_out), each with
 * the units its sku has left as read now (a moment later; others buy).
 */
static int order_cart_sold_out(flash_t *h, const struct order_args *a, const struct flash_cart_res *res)
{
	uint32_t ran = res->line < a->nlines ? res->line : 0;
	uint32_t mask = res->sold_out ? res->sold_out : 1u << ran;
	char shorts[FLASH_CART_LINES_MAX * 72];
	size_t off = 0;

	shorts[0] = '\0';
	for (uint32_t i = 0; i < a->nlines && off < sizeof shorts; i++) {
		struct flash_sku_info s;
		char left[24] = "?";

		if (!(mask & (1u << i)))
			continue;
		if (flash_sku_get(h, a->activity, a->line[i].sku_id, &s) == FLASH_OK)
			snprintf(left, sizeof left, "%llu", (unsigned long long)s.available);
		off += (size_t)snprintf(shorts + off, sizeof shorts - off, "%sline %u (sku %u: wants %u, %s left)",
		                        off ? ", " : "", i, a->line[i].sku_id, a->line[i].qty, left);
	}
	return tool_failf("order: %s: line %u (sku %u, qty %u) ran out; short: %s; nothing taken",
	                  flash_strerror(FLASH_ESOLD_OUT), ran, a->line[ran].sku_id, a->line[ran].qty, shorts);
}

/*
 * What flash_cart_order answered, as order_placed says flash_order's, with
 * the line a refusal of one line names.
 */
static int order_cart_placed(flash_t *h, const struct order_args *a, int rc, const struct flash_cart_res *res)
{
	const struct flash_cart_line *l = &a->line[res->line < a->nlines ? res->line : 0];
	char what[48];

	if (rc == FLASH_EDUPLICATE && res->first_rc != FLASH_OK)
		return tool_failf("order: %s (the first outcome of request id %llu; nothing changed)",
		                  flash_strerror(res->first_rc), (unsigned long long)a->request_id);
	if (rc == FLASH_EINVAL)
		return order_cart_einval(h, a, res);
	if (rc == FLASH_ESOLD_OUT)
		return order_cart_sold_out(h, a, res);
	if (rc == FLASH_ENOT_FOUND) {
		struct flash_activity x;
		if (flash_activity_get(h, a->activity, &x) != FLASH_OK)
			return tool_failf("order: activity %u is not in segment %s (%s)", a->activity, a->name,
			                  flash_rcname(rc));
		return tool_failf("order: line %u: sku %u is not in activity %u of segment %s (%s); nothing "
		                  "taken", (unsigned)(l - a->line), l->sku_id, a->activity, a->name, flash_rcname(rc));
	}
	if (rc == FLASH_ESTALE) {
		snprintf(what, sizeof what, "line %u's ", (unsigned)(l - a->line));
		return order_stale(h, a, what, l->sku_id, l->sku_version);
	}
	if (rc != FLASH_OK && rc != FLASH_EDUPLICATE && rc != FLASH_EFATE_UNKNOWN)
		return tool_failf("order: %s; nothing taken", flash_strerror(rc));
	return order_stands(h, a, rc, res->order_no);
}

/* --place / --reserve / --line: one order, or one cart, through a writable
 * handle of its own. */
static int order_place(const struct order_args *a)
{
	struct flash_order_req r = {
		.activity_id = a->activity, .sku_id = a->sku, .user_id = a->user, .qty = a->qty,
		.reserve_ms = a->reserve_ms, .request_id = a->request_id,
		.activity_version = a->activity_version, .sku_version = a->sku_version,
	};
	struct flash_order_res res;
	struct flash_cart_req cr;
	struct flash_cart_res cres;
	flash_t *h = NULL;
	int rc = flash_open(a->name, 0, &h);

	if (rc != FLASH_OK) {
		char what[300];
		snprintf(what, sizeof what, "order: open %s", a->name);
		return tool_fail(what, rc);
	}
	if (a->nlines) {
		memset(&cr, 0, sizeof cr);
		memset(&cres, 0, sizeof cres);
		cr.activity_id = a->activity;
		cr.lines = a->nlines;
		cr.user_id = a->user;
		cr.reserve_ms = a->reserve_ms;
		cr.request_id = a->request_id;
		cr.activity_version = a->activity_version;
		memcpy(cr.line, a->line, sizeof cr.line);
		rc = order_cart_placed(h, a, flash_cart_order(h, &cr, &cres), &cres);
	} else {
		memset(&res, 0, sizeof res);
		rc = order_placed(h, a, flash_order(h, &r, &res), &res);
	}
	fflush(stdout);
	flash_close(h);
	return rc;
}

/*
 * Order @p no from MariaDB: its orders row and its lines (order_lines, a
 * cart's: *n 0 for a plain order).  The number of a cart's later line
 * (MariaDB keeps the cart under its own number) reads as the cart, which
 * stderr names.  @return rsql_order_get's answer, or rsql_order_lines'.
 */
static int order_mysql_get(mdb_t *m, uint64_t no, struct rsql_order_row *row, struct rsql_order_line *ml,
                           uint32_t *n)
{
	uint64_t cart;
	uint32_t line;
	int rc = rsql_order_get(m, no, row);

	*n = 0;
	if (rc == FLASH_ENOT_FOUND && no > 1 && rsql_order_line_of(m, no, &cart, &line) == FLASH_OK) {
		fprintf(stderr, "flashstock: order: %llu is line %u of cart %llu: showing the cart\n",
		        (unsigned long long)no, line, (unsigned long long)cart);
		rc = rsql_order_get(m, cart, row);
	}
	if (rc != FLASH_OK)
		return rc;
	return rsql_order_lines(m, row->o.order_no, ml, FLASH_CART_LINES_MAX, n);
}

/* The show modes: by number (segment first, then MariaDB) or by request id. */
static int order_show(const struct order_args *a)
{
	int have_mysql = a->mo.url || a->mo.defaults_file;
	flash_t *h = NULL;
	mdb_t *m = NULL;
	struct flash_order_info so[FLASH_CART_LINES_MAX];
	uint32_t nso = 1;
	struct rsql_order_row row;
	struct rsql_order_line ml[FLASH_CART_LINES_MAX];
	uint32_t nml = 0;
	char note[96];
	int ret = TOOL_FAIL, rc, seg_rc = FLASH_ENOSEG;

	rc = flash_open(a->name, FLASH_RDONLY, &h);
	if (rc == FLASH_ENOSEG && have_mysql) {
		fprintf(stderr, "flashstock: order: segment %s does not exist; asking MariaDB\n", a->name);
		h = NULL;
	} else if (rc) {
		char what[300];
		snprintf(what, sizeof what, "order: open %s", a->name);
		return tool_fail(what, rc);
	}
	if (have_mysql && (rc = mdb_open(&a->mo, &m)) != FLASH_OK) {
		tool_failf("order: MariaDB %s: %s", mdb_where(m), flash_strerror(rc));
		goto out;
	}

	if (a->request_id) {
		rc = rsql_order_by_request(m, a->request_id, a->activity, a->user, a->sku, &row);
		if (rc == FLASH_OK)
			rc = rsql_order_lines(m, row.o.order_no, ml, FLASH_CART_LINES_MAX, &nml);
		if (rc == FLASH_ENOT_FOUND) {
			tool_failf("order: MariaDB has no order of user %llu in activity %u, sku %u with request "
			           "id %llu (never placed, refused, or not applied yet)",
			           (unsigned long long)a->user, a->activity, a->sku, (unsigned long long)a->request_id);
			goto out;
		}
		if (rc) {
			tool_failf("order: MariaDB %s: %s", mdb_where(m), flash_strerror(rc));
			goto out;
		}
		const char *sn = NULL;
		if (h) {
			seg_rc = flash_order_get(h, row.o.order_no, &so[0]);
			if (seg_rc == FLASH_OK && so[0].state != FLASH_ORDER_NONE &&
			    so[0].activity_id == row.o.activity_id) {
				snprintf(note, sizeof note, "%s", state_name(so[0].state));
				sn = note;
			} else if (seg_rc == FLASH_EARCHIVED) {
				sn = "archived";
			}
		}
		print_mysql(&row, ml, nml, a->json, sn);
		ret = TOOL_OK;
		goto out;
	}

	if (h) {
		seg_rc = order_read(h, a->order_no, so, &nso);
		if (seg_rc == FLASH_OK && (so[0].state != FLASH_ORDER_NONE || !have_mysql)) {
			print_segment(so, nso, a->json);
			ret = TOOL_OK;
			goto out;
		}
		if (seg_rc != FLASH_OK && seg_rc != FLASH_EARCHIVED && seg_rc != FLASH_ENOT_FOUND) {
			tool_fail("order: reading the segment", seg_rc);
			goto out;
		}
		if (!have_mysql) {
			if (seg_rc == FLASH_EARCHIVED)
				tool_failf("order %llu is archived (%s): its activity was reclaimed from the segment; "
				           "the order is in MariaDB: give --mysql URL", (unsigned long long)a->order_no,
				           flash_rcname(seg_rc));
			else
				tool_failf("order %llu: not in segment %s (%s); give --mysql URL to look in MariaDB",
				           (unsigned long long)a->order_no, a->name, flash_rcname(seg_rc));
			goto out;
		}
	}
	rc = order_mysql_get(m, a->order_no, &row, ml, &nml);
	if (rc == FLASH_ENOT_FOUND) {
		if (h && seg_rc == FLASH_OK) {          /* the segment's "never completed" number */
			print_segment(so, nso, a->json);
			ret = TOOL_OK;
		} else {
			tool_failf("order %llu: neither segment %s (%s) nor MariaDB has it", (unsigned long long)a->order_no,
			           a->name, h ? flash_rcname(seg_rc) : "no segment");
		}
		goto out;
	}
	if (rc) {
		tool_failf("order: MariaDB %s: %s", mdb_where(m), flash_strerror(rc));
		goto out;
	}
	print_mysql(&row, ml, nml, a->json, seg_rc == FLASH_EARCHIVED ? "archived" :
	                          seg_rc == FLASH_ENOT_FOUND ? "not numbered" :
	                          h ? "never completed" : "absent");
	ret = TOOL_OK;
out:
	fflush(stdout);
	mdb_close(m);
	flash_close(h);
	return ret;
}

int cmd_order(int argc, char **argv)
{
	struct order_args a;
	memset(&a, 0, sizeof a);
	int prc = order_parse(argc, argv, &a);
	if (prc == -1)
		return TOOL_OK;
	if (prc)
		return prc;
	return a.place ? order_place(&a) : order_show(&a);
}
