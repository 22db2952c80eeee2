/*
 * cmd_destroy.c -- `flashstock destroy`: end a segment without losing what
 * its buyers were told (flash_seg_destroy_checked()).  It refuses while a
 * daemon serves the segment, a process is attached, or a ring holds records
 * that no WAL has; --force goes on and prints exactly what is given up, and
 * --force --wal DIR first drains the rings into the segment's WAL (the
 * daemon's own loop, persist/daemon/serve.c, run once).  Attached processes learn
 * it: their next write call answers FLASH_EDESTROYED.
 */
#include "tool.h"

#include <getopt.h>
#include <inttypes.h>
#include <string.h>

#include "serve.h"
#include "snapshot.h"

static void destroy_help(FILE *out)
{
	fprintf(out,
	        "usage: flashstock destroy --name NAME [--force [--wal DIR]]\n"
	        "\n"
	        "Destroy the segment NAME.  Refused (exit 2, nothing changed) while it is in\n"
	        "use, naming what holds it: a daemon serving it (its pid), processes attached\n"
	        "(their pids), or records in its rings that are in no WAL yet (how many, per\n"
	        "slot) -- a segment without its name is never drained again, so orders its\n"
	        "buyers were told they have would be lost.  To keep them: stop the buyers,\n"
	        "then stop the daemon (SIGTERM drains every ring) or run `flashstock serve\n"
	        "--name NAME --wal DIR --once`, then destroy.\n"
	        "\n"
	        "Before the name goes the segment is marked destroyed: an attached process's\n"
	        "next call that writes (an order, a cancel, ...) answers FLASH_EDESTROYED and\n"
	        "changes nothing, instead of being acknowledged into memory no WAL will read.\n"
	        "\n"
	        "options:\n"
	        "  --name NAME   segment name (required)\n"
	        "  --force       destroy it although processes are attached or records are\n"
	        "                undrained: prints every record given up, per slot, and the\n"
	        "                processes that now get FLASH_EDESTROYED.  Never while a daemon\n"
	        "                serves it (exit 2: stop the daemon first).  A name that holds\n"
	        "                no readable segment (corrupt, half made) is removed unchecked\n"
	        "  --wal DIR     with --force: first drain the undrained records into the\n"
	        "                segment's WAL in DIR, as `serve --once` would (the segment is\n"
	        "                closed to new orders first).  If that fails, nothing is\n"
	        "                destroyed: the segment stays, closed, and the error is printed\n"
	        "\n"
	        "Snapshot shadows of the segment (NAME.shadow.PID, the copy a daemon killed\n"
	        "mid-snapshot leaves) whose process is gone are removed with it.\n"
	        "\n"
	        "exit: 0 destroyed; 1 failed (no such segment, not readable without --force,\n"
	        "the drain failed); 2 refused (in use: nothing changed) or usage error\n");
}

/* A shadow snap_shadows_remove() removed, said on stderr. */
static void destroy_shadow_log(void *arg, int level, const char *msg)
{
	(void)level;
	fprintf(stderr, "flashstock %s: %s\n", (const char *)arg, msg);
}

/* The slots of @p r, one line: "slot S (pid P, running) R, slot T (free) R, ...":
 * with @p records those holding records and how many, else the attached ones.
 * A slot's ring outlives its process: a closed handle's records wait there
 * for the consumer, under the next holder of the slot or none (free). */
static void destroy_slots(const struct flash_destroy_report *r, int records)
{
	const char *sep = "";

	for (uint32_t i = 0; i < r->n_slots; i++) {
		const struct flash_destroy_slot *s = &r->slots[i];

		if (records ? s->records == 0 : !s->alive)
			continue;
		if (s->pid == 0)
			fprintf(stderr, "%sslot %u (free)", sep, s->slot);
		else
			fprintf(stderr, "%sslot %u (pid %d, %s)", sep, s->slot, (int)s->pid,
			        s->alive ? (s->pid == r->consumer_pid ? "the daemon" : "running") : "gone");
		if (records)
			fprintf(stderr, " %" PRIu64, s->records);
		sep = ", ";
	}
	if (r->more_slots)
		fprintf(stderr, "%s%u more slots", sep, r->more_slots);
	fputc('\n', stderr);
}

/* What holds the segment: every line a refusal prints. */
static void destroy_holders(const char *name, const struct flash_destroy_report *r)
{
	if (r->consumer_pid != 0)
		fprintf(stderr, "  a daemon serves it: pid %d.  Stop it first (SIGTERM: it drains every "
		        "ring into its WAL), then destroy; --force does not override a daemon\n",
		        (int)r->consumer_pid);
	if (r->attached != 0) {
		fprintf(stderr, "  attached: %u process slot%s: ", r->attached, r->attached == 1 ? "" : "s");
		destroy_slots(r, 0);
	}
	if (r->undrained != 0) {
		fprintf(stderr, "  undrained: %" PRIu64 " record%s in no WAL yet: ", r->undrained,
		        r->undrained == 1 ? "" : "s");
		destroy_slots(r, 1);
		fprintf(stderr, "  keep them: flashstock serve --name %s --wal DIR --once (or "
		        "destroy --force --wal DIR)\n", name);
	}
}

/* What --force gave up: the processes now refused, the records lost. */
static void destroy_losses(const struct flash_destroy_report *r)
{
	if (r->unreadable != 0)
		fprintf(stderr, "  the segment could not be read (%s): removed unchecked; whatever its "
		        "rings held is lost\n", flash_strerror(r->unreadable));
	if (r->attached != 0) {
		fprintf(stderr, "  attached: %u process slot%s, whose next write call answers "
		        "FLASH_EDESTROYED: ", r->attached, r->attached == 1 ? "" : "s");
		destroy_slots(r, 0);
	}
	if (r->undrained != 0) {
		fprintf(stderr, "  LOST: %" PRIu64 " record%s in no WAL: ", r->undrained,
		        r->undrained == 1 ? "" : "s");
		destroy_slots(r, 1);
	}
	if (r->in_flight != 0)
		fprintf(stderr, "  %u operation%s still open (a stopped process?): if %s, %s record "
		        "reaches no WAL\n", r->in_flight, r->in_flight == 1 ? " was" : "s were",
		        r->in_flight == 1 ? "it finishes" : "they finish", r->in_flight == 1 ? "its" : "their");
}

/*
 * --force --wal DIR: the segment is closed already (marked, name kept);
 * drain its rings into DIR with the daemon's loop, once.  It claims the
 * consumer (allowed on a destroyed segment) and checks that DIR is this
 * segment's WAL, as `serve` does.  @return 0 drained.
 */
static int destroy_drain(const char *name, const char *wal, uint64_t undrained)
{
	struct serve_opts o;
	struct serve_stats st;

	serve_opts_default(&o);
	o.segment = name;
	o.wal_dir = wal;
	o.once = 1;
	o.reclaim.off = 1;
	o.reconcile.every_ms = 0;
	o.log_level = PLOG_WARN;
	memset(&st, 0, sizeof st);
	if (serve_run(&o, &st) != 0)
		return -1;
	fprintf(stderr, "flashstock destroy: drained %" PRIu64 " of %" PRIu64 " records into %s "
	        "(durable through LSN %" PRIu64 ")\n", st.records + st.skipped, undrained, wal,
	        st.durable_lsn);
	return 0;
}

int cmd_destroy(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help",  no_argument,       NULL, 'h' },
		{ "name",  required_argument, NULL, 'n' },
		{ "force", no_argument,       NULL, 'f' },
		{ "wal",   required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd = argv[0], *name = NULL, *wal = NULL;
	struct flash_destroy_report r;
	char what[300];
	int c, rc, force = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			destroy_help(stdout);
			return TOOL_OK;
		case 'n':
			name = optarg;
			break;
		case 'f':
			force = 1;
			break;
		case 'w':
			wal = optarg;
			break;
		default:
			return tool_bad_option(cmd, c, argv);
		}
	}
	if (optind < argc)
		return tool_usage_err(cmd, "unexpected argument '%s'", argv[optind]);
	if (!name)
		return tool_usage_err(cmd, "--name is required");
	if (wal && !force)
		return tool_usage_err(cmd, "--wal goes with --force (without it, destroy refuses "
		                      "undrained records: serve --once drains them)");
	snprintf(what, sizeof what, "destroy %s", name);

	if (wal) {
		/* close it first (marked, name kept): nothing more is published
		 * while the rings are drained */
		rc = flash_seg_destroy_checked(name, FLASH_DESTROY_FORCE | FLASH_DESTROY_KEEP_NAME, &r);
		if (rc == FLASH_EBUSY) {
			fprintf(stderr, "flashstock %s: refusing to destroy %s; nothing changed\n", cmd, name);
			destroy_holders(name, &r);
			return TOOL_USAGE;
		}
		if (rc != FLASH_OK) {
			if (r.unreadable != 0)
				fprintf(stderr, "flashstock %s: %s cannot be read, so not drained either; "
				        "without --wal, --force removes it unchecked\n", cmd, name);
			return tool_fail(what, rc);
		}
		if (r.undrained != 0 && destroy_drain(name, wal, r.undrained) != 0) {
			fprintf(stderr, "flashstock %s: cannot drain %s into %s (see above): nothing destroyed; "
			        "the segment stays, closed to new orders, its %" PRIu64 " records in its rings.  "
			        "Give the segment's WAL, or run without --wal to give them up\n", cmd, name,
			        wal, r.undrained);
			return TOOL_FAIL;
		}
	}
	rc = flash_seg_destroy_checked(name, force ? FLASH_DESTROY_FORCE : 0, &r);
	if (rc == FLASH_EBUSY) {
		fprintf(stderr, "flashstock %s: refusing to destroy %s; nothing changed\n", cmd, name);
		destroy_holders(name, &r);
		if (!force && r.consumer_pid == 0)
			fprintf(stderr, "  --force destroys it anyway and prints what is lost\n");
		return TOOL_USAGE;
	}
	if (rc != FLASH_OK) {
		if (r.unreadable != 0)
			fprintf(stderr, "flashstock %s: %s cannot be checked (%s); --force removes it "
			        "unchecked, giving up whatever its rings hold\n", cmd, name,
			        flash_strerror(r.unreadable));
		return tool_fail(what, rc);
	}
	if (r.unreadable != 0 || r.attached != 0 || r.undrained != 0 || r.in_flight != 0) {
		fprintf(stderr, "flashstock %s: destroyed %s with --force:\n", cmd, name);
		destroy_losses(&r);
	}
	/* the copies a daemon killed mid-snapshot left, each as large as the
	 * segment: nothing else would remove them now that no daemon will
	 * serve this segment again (a live pid's is left: not ours to judge) */
	(void)snap_shadows_remove(name, NULL, 1, destroy_shadow_log, (void *)cmd);
	return TOOL_OK;
}
