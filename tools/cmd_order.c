/*
 * cmd_order.c -- `flashstock order`: one order, from the segment while it
 * holds it, else from MariaDB (an archived activity's orders, or a segment
 * rebuilt or replaced since), saying which and whether it is archived.
 * The MariaDB reads are persist/mysql/reconcile_sql.c's; this file is options,
 * output and exit codes.
 */
#include "tool.h"

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
	        "\n"
	        "Show one order.  The segment NAME is asked first (read-only); an order it no\n"
	        "longer holds -- its activity was archived (FLASH_EARCHIVED), or the segment\n"
	        "was rebuilt or replaced and never numbered it -- is read from MariaDB, the\n"
	        "database the daemon's applier writes (serve --mysql), which keeps every\n"
	        "order of an archived activity.  The output says where it came from\n"
	        "(source segment or mysql) and, from MariaDB, whether its activity is\n"
	        "archived (at which LSN and time).\n"
	        "\n"
	        "By request id (e.g. after FLASH_EREQ_EXPIRED: the segment no longer\n"
	        "remembers the id): the segment keeps no request id per order, so MariaDB\n"
	        "is asked for the order the user placed in the activity and sku with that\n"
	        "request id; the segment's state of that number is shown beside it while\n"
	        "the segment still holds it.\n"
	        "\n"
	        "options:\n"
	        "  --name NAME            segment name (required; a segment that does not exist\n"
	        "                         any more is skipped when MariaDB is given)\n"
	        "  --request-id ID        look the order up by request id (needs --activity,\n"
	        "                         --user, --sku and MariaDB)\n"
	        "  --activity A, --user U, --sku S   the request's activity, user and sku\n"
	        "  --mysql URL            mysql://user:pass@localhost/db?socket=PATH\n"
	        "  --mysql-defaults F     ... or its [client] option file\n"
	        "  --json                 one JSON object: order_no, source, archived,\n"
	        "                         archived_lsn, archived_ns, state (none, active,\n"
	        "                         cancelled), activity_id, sku_id, user_id, qty,\n"
	        "                         limit_slot, biz_day, created_ns, request_id, lsn,\n"
	        "                         cancel_lsn, quota_returned (request_id .. quota_returned\n"
	        "                         null from the segment, which does not keep them)\n"
	        "\n"
	        "exit: 0 found; 1 not found in the segment nor in MariaDB, archived and no\n"
	        "      MariaDB given, or a failure (MariaDB unreachable, bad segment); 2 usage\n"
	        "      error\n");
}

static const char *state_name(uint32_t s)
{
	switch (s) {
	case FLASH_ORDER_ACTIVE:    return "active";
	case FLASH_ORDER_CANCELLED: return "cancelled";
	case FLASH_ORDER_RESERVED:  return "reserved";    /* a reservation not paid yet */
	case FLASH_ORDER_EXPIRED:   return "expired";     /* a reservation never paid */
	default:                    return "none";
	}
}

static void print_segment(const struct flash_order_info *o, int json)
{
	char b[40];
	if (json) {
		printf("{\"order_no\":%" PRIu64 ",\"source\":\"segment\",\"archived\":false,"
		       "\"archived_lsn\":null,\"archived_ns\":null,\"state\":\"%s\",\"activity_id\":%u,"
		       "\"sku_id\":%u,\"user_id\":%" PRIu64 ",\"qty\":%u,\"limit_slot\":%u,\"biz_day\":%u,"
		       "\"created_ns\":%" PRId64 ",\"request_id\":null,\"lsn\":null,\"cancel_lsn\":null,"
		       "\"quota_returned\":null}\n",
		       o->order_no, state_name(o->state), o->activity_id, o->sku_id, o->user_id, o->qty,
		       o->limit_slot, o->biz_day, o->created_ns);
		return;
	}
	printf("order %" PRIu64 ": %s, activity %u, sku %u, user %" PRIu64 ", qty %u, limit slot %u, "
	       "day %u, created %s (source segment)\n",
	       o->order_no, state_name(o->state), o->activity_id, o->sku_id, o->user_id, o->qty,
	       o->limit_slot, o->biz_day, o->created_ns ? tool_fmt_time(o->created_ns, b, sizeof b) : "-");
}

static void print_mysql(const struct rsql_order_row *r, int json, const char *seg_note)
{
	char b[40], b2[40];
	const struct rsql_order *o = &r->o;
	if (json) {
		printf("{\"order_no\":%" PRIu64 ",\"source\":\"mysql\",\"archived\":%s,", o->order_no,
		       r->archived ? "true" : "false");
		if (r->archived)
			printf("\"archived_lsn\":%" PRIu64 ",\"archived_ns\":%" PRId64 ",", r->archived_lsn,
			       r->archived_ns);
		else
			printf("\"archived_lsn\":null,\"archived_ns\":null,");
		printf("\"state\":\"%s\",\"activity_id\":%u,\"sku_id\":%u,\"user_id\":%" PRIu64 ",\"qty\":%u,"
		       "\"limit_slot\":%u,\"biz_day\":%u,\"created_ns\":%" PRId64 ",\"request_id\":%" PRIu64
		       ",\"lsn\":%" PRIu64 ",", state_name(o->state), o->activity_id, o->sku_id, o->user_id,
		       o->qty, o->limit_slot, o->biz_day, r->created_ns, r->request_id, r->lsn);
		if (r->cancel_lsn)
			printf("\"cancel_lsn\":%" PRIu64 ",", r->cancel_lsn);
		else
			printf("\"cancel_lsn\":null,");
		printf("\"quota_returned\":%s", r->quota_returned ? "true" : "false");
		if (r->pay_by_ns)     /* a reservation: its deadline, and its payment */
			printf(",\"pay_by_ns\":%" PRId64, r->pay_by_ns);
		if (r->pay_by_ns && r->confirm_lsn)
			printf(",\"confirm_lsn\":%" PRIu64, r->confirm_lsn);
		else if (r->pay_by_ns)
			printf(",\"confirm_lsn\":null");
		if (seg_note)
			printf(",\"segment\":\"%s\"", seg_note);
		printf("}\n");
		return;
	}
	printf("order %" PRIu64 ": %s, activity %u, sku %u, user %" PRIu64 ", qty %u, limit slot %u, "
	       "day %u, created %s, request id %" PRIu64 ", lsn %" PRIu64,
	       o->order_no, state_name(o->state), o->activity_id, o->sku_id, o->user_id, o->qty,
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
}

struct order_args {
	const char *name;
	uint64_t    order_no;
	uint64_t    request_id;
	uint32_t    activity, sku;
	uint64_t    user;
	int         json;
	struct mdb_opts mo;
};

static int order_parse(int argc, char **argv, struct order_args *a)
{
	enum { O_NAME = 256, O_REQ, O_ACT, O_USER, O_SKU, O_MYSQL, O_DEFAULTS, O_JSON };
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
		default:
			return tool_bad_option(cmd, c, argv);
		}
	}
	if (!a->name)
		return tool_usage_err(cmd, "--name NAME is required");
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
		return tool_usage_err(cmd, "--activity, --user and --sku go with --request-id");
	if (optind + 1 != argc)
		return tool_usage_err(cmd, optind >= argc ? "give ORDER_NO or --request-id ID" :
		                      "unexpected argument '%s'", argv[optind + (optind < argc)]);
	if (tool_opt_u64(cmd, "ORDER_NO", argv[optind], 1, UINT64_MAX, &a->order_no) != 0)
		return TOOL_USAGE;
	return 0;
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
	int have_mysql = a.mo.url || a.mo.defaults_file;
	flash_t *h = NULL;
	mdb_t *m = NULL;
	struct flash_order_info so;
	struct rsql_order_row row;
	char note[96];
	int ret = TOOL_FAIL, rc, seg_rc = FLASH_ENOSEG;

	rc = flash_open(a.name, FLASH_RDONLY, &h);
	if (rc == FLASH_ENOSEG && have_mysql) {
		fprintf(stderr, "flashstock: order: segment %s does not exist; asking MariaDB\n", a.name);
		h = NULL;
	} else if (rc) {
		char what[300];
		snprintf(what, sizeof what, "order: open %s", a.name);
		return tool_fail(what, rc);
	}
	if (have_mysql && (rc = mdb_open(&a.mo, &m)) != FLASH_OK) {
		tool_failf("order: MariaDB %s: %s", mdb_where(m), flash_strerror(rc));
		goto out;
	}

	if (a.request_id) {
		rc = rsql_order_by_request(m, a.request_id, a.activity, a.user, a.sku, &row);
		if (rc == FLASH_ENOT_FOUND) {
			tool_failf("order: MariaDB has no order of user %llu in activity %u, sku %u with request "
			           "id %llu (never placed, refused, or not applied yet)",
			           (unsigned long long)a.user, a.activity, a.sku, (unsigned long long)a.request_id);
			goto out;
		}
		if (rc) {
			tool_failf("order: MariaDB %s: %s", mdb_where(m), flash_strerror(rc));
			goto out;
		}
		const char *sn = NULL;
		if (h) {
			seg_rc = flash_order_get(h, row.o.order_no, &so);
			if (seg_rc == FLASH_OK && so.state != FLASH_ORDER_NONE && so.activity_id == row.o.activity_id) {
				snprintf(note, sizeof note, "%s", state_name(so.state));
				sn = note;
			} else if (seg_rc == FLASH_EARCHIVED) {
				sn = "archived";
			}
		}
		print_mysql(&row, a.json, sn);
		ret = TOOL_OK;
		goto out;
	}

	if (h) {
		seg_rc = flash_order_get(h, a.order_no, &so);
		if (seg_rc == FLASH_OK && (so.state != FLASH_ORDER_NONE || !have_mysql)) {
			print_segment(&so, a.json);
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
				           "the order is in MariaDB: give --mysql URL", (unsigned long long)a.order_no,
				           flash_rcname(seg_rc));
			else
				tool_failf("order %llu: not in segment %s (%s); give --mysql URL to look in MariaDB",
				           (unsigned long long)a.order_no, a.name, flash_rcname(seg_rc));
			goto out;
		}
	}
	rc = rsql_order_get(m, a.order_no, &row);
	if (rc == FLASH_ENOT_FOUND) {
		if (h && seg_rc == FLASH_OK) {          /* the segment's "never completed" number */
			print_segment(&so, a.json);
			ret = TOOL_OK;
		} else {
			tool_failf("order %llu: neither segment %s (%s) nor MariaDB has it", (unsigned long long)a.order_no,
			           a.name, h ? flash_rcname(seg_rc) : "no segment");
		}
		goto out;
	}
	if (rc) {
		tool_failf("order: MariaDB %s: %s", mdb_where(m), flash_strerror(rc));
		goto out;
	}
	print_mysql(&row, a.json, seg_rc == FLASH_EARCHIVED ? "archived" :
	                          seg_rc == FLASH_ENOT_FOUND ? "not numbered" :
	                          h ? "never completed" : "absent");
	ret = TOOL_OK;
out:
	fflush(stdout);
	mdb_close(m);
	flash_close(h);
	return ret;
}
