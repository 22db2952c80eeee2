#!/usr/bin/env python3
"""monitoring_prom.py -- what tests/deploy/monitoring_live.sh asks a Prometheus
(its HTTP API, standard library only) and what tests/deploy/monitoring_rules.sh
asks of the rules file.

  monitoring_prom.py ready URL SECONDS
      wait until URL/-/ready answers 200
  monitoring_prom.py wait-value URL EXPR VALUE SECONDS
      wait until the instant query EXPR returns exactly one sample equal to VALUE
  monitoring_prom.py rules-loaded URL RULES_FILE SECONDS
      wait until every alert of RULES_FILE is loaded (URL/api/v1/rules)
  monitoring_prom.py evaluated URL N SECONDS
      wait until every rule group was evaluated N s after now (wall clock):
      whatever holds now has had N s of evaluations to become pending/firing
  monitoring_prom.py no-alerts URL
      no alert is pending or firing (URL/api/v1/alerts)
  monitoring_prom.py wait-alert URL NAME firing|gone SECONDS [LABEL=VALUE...]
      wait until alert NAME is firing (with these labels), or gone
  monitoring_prom.py dashboard URL DASHBOARD_JSON VAR=VALUE...
      evaluate every PromQL expression of the dashboard (panels' targets, the
      templating queries) with its variables replaced as Grafana would; each
      must return data that is not all NaN; every panel and target must use
      the ${DS_PROMETHEUS} input
  monitoring_prom.py lint RULES_FILE TEST_FILE DOC
      every alert has for:, a severity, summary/description/runbook, a
      runbook section in DOC, and unit tests where it fires and where not

Each command prints what it found and exits 0, or 1 with the reason.
"""
import json
import math
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def fail(msg):
    print("monitoring_prom: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


def api(base, path, **params):
    url = base + path + ("?" + urllib.parse.urlencode(params) if params else "")
    try:
        _, body = get(url)
    except urllib.error.HTTPError as e:   # 400/422: a bad query, with Prometheus's reason
        body = e.read().decode()
    d = json.loads(body)
    if d.get("status") != "success":
        raise RuntimeError("%s: %s: %s" % (path, d.get("errorType"), d.get("error")))
    return d["data"]


def query(base, expr):
    return api(base, "/api/v1/query", query=expr)


def poll(seconds, what, fn):
    """Call fn() until it returns a true value or SECONDS pass; the last
    value fn reported (its second result) goes into the failure."""
    end = time.monotonic() + seconds
    last = None
    while True:
        try:
            ok, last = fn()
        except (OSError, RuntimeError, ValueError) as e:
            ok, last = False, "%s: %s" % (type(e).__name__, e)
        if ok:
            return last
        if time.monotonic() > end:
            fail("%s: not within %g s (last seen: %s)" % (what, seconds, last))
        time.sleep(0.25)


def cmd_ready(base, seconds):
    poll(float(seconds), "Prometheus ready at " + base,
         lambda: (get(base + "/-/ready", 2)[0] == 200, "not ready"))
    print("prometheus ready")


def cmd_wait_value(base, expr, value, seconds):
    def f():
        res = query(base, expr)["result"]
        vals = [s["value"][1] for s in res]
        return len(vals) == 1 and float(vals[0]) == float(value), vals
    poll(float(seconds), "%s == %s" % (expr, value), f)
    print("%s = %s" % (expr, value))


def alert_names(rules_file):
    names = re.findall(r"^\s*- alert:\s*(\S+)\s*$", open(rules_file).read(), re.M)
    if not names:
        fail("no alert in " + rules_file)
    return names


def cmd_rules_loaded(base, rules_file, seconds):
    want = set(alert_names(rules_file))

    def f():
        groups = api(base, "/api/v1/rules")["groups"]
        got = {r["name"] for g in groups for r in g["rules"] if r["type"] == "alerting"}
        bad = [r["name"] + ": " + r.get("lastError", "") for g in groups for r in g["rules"]
               if r.get("health") == "err"]
        if bad:
            fail("rules that do not evaluate: " + "; ".join(bad))
        return want <= got, sorted(want - got)
    poll(float(seconds), "every alert of %s loaded" % rules_file, f)
    print("%d alerts loaded" % len(want))


def rfc3339(s):
    """Seconds since the epoch of Prometheus's lastEvaluation (ns digits, Z or offset)."""
    m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)", s)
    if not m:
        raise ValueError("time %r" % s)
    import calendar
    t = calendar.timegm(tuple(int(m.group(i)) for i in range(1, 7)))
    t += float(m.group(7) or 0)
    if m.group(8) != "Z":
        sign = 1 if m.group(8)[0] == "+" else -1
        t -= sign * (int(m.group(8)[1:3]) * 3600 + int(m.group(8)[4:6]) * 60)
    return t


def cmd_evaluated(base, n, seconds):
    after = time.time() + float(n)

    def f():
        groups = api(base, "/api/v1/rules")["groups"]
        last = [rfc3339(g["lastEvaluation"]) for g in groups]
        return bool(last) and min(last) >= after, last
    poll(float(seconds), "rules evaluated %s s from now" % n, f)
    print("rules evaluated %s s on" % n)


def alerts(base):
    return api(base, "/api/v1/alerts")["alerts"]


def cmd_no_alerts(base):
    a = alerts(base)
    if a:
        fail("alerts active in a healthy sale: " +
             "; ".join("%s %s %s" % (x["labels"]["alertname"], x["state"], x["labels"]) for x in a))
    print("no alert pending or firing")


def cmd_wait_alert(base, name, state, seconds, *labels):
    want = dict(l.split("=", 1) for l in labels)

    def f():
        mine = [x for x in alerts(base) if x["labels"].get("alertname") == name]
        if state == "gone":
            return not mine, [x["state"] for x in mine]
        for x in mine:
            if x["state"] == "firing" and all(x["labels"].get(k) == v for k, v in want.items()):
                return True, x
        return False, [(x["state"], x["labels"]) for x in mine]
    got = poll(float(seconds), "alert %s %s" % (name, state), f)
    if state == "firing":
        for k in ("summary", "description", "runbook"):
            if not got["annotations"].get(k):
                fail("alert %s fires without annotation %s: %s" % (name, k, got))
        print("alert %s firing: %s; %s" % (name, got["labels"], got["annotations"]["summary"]))
    else:
        print("alert %s gone" % name)


def dashboard_exprs(dash):
    """(where, expr) of every panel target, rows' nested panels included."""
    out = []

    def walk(panels):
        for p in panels:
            if p.get("type") == "row":
                walk(p.get("panels", []))
                continue
            where = "panel %r" % p.get("title")
            ds = p.get("datasource") or {}
            if ds.get("uid") != "${DS_PROMETHEUS}":
                fail("%s: datasource %s, not the ${DS_PROMETHEUS} input" % (where, ds))
            if not p.get("targets"):
                fail(where + ": no targets")
            for t in p["targets"]:
                if (t.get("datasource") or {}).get("uid") != "${DS_PROMETHEUS}":
                    fail("%s target %s: datasource is not the ${DS_PROMETHEUS} input" % (where, t.get("refId")))
                if not t.get("expr"):
                    fail("%s target %s: no expr" % (where, t.get("refId")))
                out.append(("%s %s" % (where, t["refId"]), t["expr"]))
    walk(dash.get("panels", []))
    return out


def cmd_dashboard(base, path, *subst):
    dash = json.load(open(path))
    if not any(i.get("name") == "DS_PROMETHEUS" and i.get("type") == "datasource"
               and i.get("pluginId") == "prometheus" for i in dash.get("__inputs", [])):
        fail(path + ": no __inputs entry DS_PROMETHEUS (datasource prometheus)")
    vars_ = dict(s.split("=", 1) for s in subst)

    def expand(e):
        for k in sorted(vars_, key=len, reverse=True):
            e = e.replace("${%s}" % k, vars_[k]).replace("$" + k, vars_[k])
        left = re.findall(r"\$\{?\w+", e)
        if left:
            fail("variables not given to the test: %s in %s" % (left, e))
        return e

    checks = [(w, expand(e), None) for w, e in dashboard_exprs(dash)]
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v["query"]["query"] if isinstance(v.get("query"), dict) else v.get("query", "")
        if (v.get("datasource") or {}).get("uid") != "${DS_PROMETHEUS}":
            fail("variable %s: datasource is not the ${DS_PROMETHEUS} input" % v.get("name"))
        m = re.fullmatch(r"\s*label_values\((.+),\s*(\w+)\)\s*", q)
        if not m:
            fail("variable %s: query %r is not label_values(EXPR, LABEL)" % (v.get("name"), q))
        checks.append(("variable %s" % v["name"], expand(m.group(1)), m.group(2)))
    if not checks:
        fail(path + ": no expression")
    for where, e, label in checks:
        try:
            d = query(base, e)
        except RuntimeError as x:
            fail("%s: %s\n  expr: %s" % (where, x, e))
        res = d["result"]
        if d["resultType"] != "vector" or not res:
            fail("%s: no data\n  expr: %s" % (where, e))
        vals = [float(s["value"][1]) for s in res]
        if all(math.isnan(x) for x in vals):
            fail("%s: only NaN (%d series)\n  expr: %s" % (where, len(vals), e))
        if label and not all(label in s["metric"] for s in res):
            fail("%s: series without label %s\n  expr: %s" % (where, label, e))
        shown = ", ".join("%s=%s" % (",".join("%s" % v for k, v in sorted(s["metric"].items())
                                               if k not in ("__name__", "instance", "job")) or "-",
                                      s["value"][1]) for s in res[:4])
        print("ok  %-50s %s%s" % (where, shown, " ..." if len(res) > 4 else ""))
    print("%d dashboard expressions return data" % len(checks))


def cmd_lint(rules_file, test_file, doc):
    import yaml   # python3-yaml
    rules = [r for g in yaml.safe_load(open(rules_file))["groups"] for r in g["rules"]]
    tests = yaml.safe_load(open(test_file))["tests"]
    cases = [c for t in tests for c in t.get("alert_rule_test", [])]
    heads = {h.strip().lower() for h in re.findall(r"^#+\s+(.+)$", open(doc).read(), re.M)}
    bad = []
    for r in rules:
        n = r.get("alert")
        if not n:
            bad.append("a recording rule %s: the file holds alerts only" % r.get("record"))
            continue
        if "for" not in r:
            bad.append(n + ": no for:")
        if r.get("labels", {}).get("severity") not in ("critical", "warning"):
            bad.append(n + ": severity is not critical or warning")
        a = r.get("annotations", {})
        for k in ("summary", "description", "runbook"):
            if not a.get(k):
                bad.append("%s: no %s annotation" % (n, k))
        if a.get("runbook") != "docs/monitoring.md#" + n.lower():
            bad.append("%s: runbook %r is not docs/monitoring.md#%s" % (n, a.get("runbook"), n.lower()))
        if n.lower() not in heads:
            bad.append("%s: no section '%s' in %s" % (n, n, doc))
        mine = [c for c in cases if c.get("alertname") == n]
        if not any(c.get("exp_alerts") for c in mine):
            bad.append(n + ": no unit test where it fires")
        if not any(not c.get("exp_alerts") for c in mine):
            bad.append(n + ": no unit test where it stays quiet")
    if bad:
        fail("\n  ".join([rules_file + ":"] + bad))
    print("%d alerts: each with for:, severity, summary, description, runbook section, and unit "
          "tests firing and quiet" % len(rules))


def main(argv):
    cmds = {"ready": (cmd_ready, 2), "wait-value": (cmd_wait_value, 4),
            "rules-loaded": (cmd_rules_loaded, 3), "no-alerts": (cmd_no_alerts, 1),
            "evaluated": (cmd_evaluated, 3),
            "wait-alert": (cmd_wait_alert, 4), "dashboard": (cmd_dashboard, 2),
            "lint": (cmd_lint, 3)}
    if len(argv) < 2 or argv[1] not in cmds or len(argv) - 2 < cmds[argv[1]][1]:
        print(__doc__, file=sys.stderr)
        return 2
    cmds[argv[1]][0](*argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
