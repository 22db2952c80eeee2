#!/bin/bash
# monitoring_rules.sh -- the shipped alert rules (dashboards/flashstock.rules.yml)
# as promtool sees them: the file loads (`promtool check rules`), every unit
# test of dashboards/flashstock.rules.test.yml passes (`promtool test rules`:
# each alert fires on the series that must fire it, and stays quiet below its
# threshold, before its for:, for another job), and every alert carries a for:,
# a severity, a summary, a description, a runbook pointing at its section of
# docs/monitoring.md, and unit tests where it fires and where it does not.
#
# usage: monitoring_rules.sh PROMTOOL SOURCE_DIR
set -u
PT=${1:?usage: monitoring_rules.sh PROMTOOL SOURCE_DIR}
SRC=${2:?}
fail() { echo "monitoring_rules: FAIL: $*" >&2; exit 1; }
"$PT" check rules "$SRC/dashboards/flashstock.rules.yml" || fail "promtool check rules"
# promtool reads the rule file relative to the test file
(cd "$SRC/dashboards" && "$PT" test rules flashstock.rules.test.yml) || fail "promtool test rules"
python3 "$SRC/tests/deploy/monitoring_prom.py" lint "$SRC/dashboards/flashstock.rules.yml" \
	"$SRC/dashboards/flashstock.rules.test.yml" "$SRC/docs/monitoring.md" || fail "the rules' conventions"
echo "PASS"
