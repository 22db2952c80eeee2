#!/bin/bash
# cli_feed.sh FLASHSTOCK OPS_BUYER -- the order feed through the real
# binaries: `flashstock serve` writes the WAL (1 MiB files, a snapshot every
# 64 KiB of WAL, so files roll over and go behind snapshots during the run),
# ops_buyer places orders and logs each acknowledged order number, and
# `flashstock feed` consumers read it.
#
#  1. a consumer killed -9 mid-stream (across roll-over and snapshots) and
#     restarted: it resumes exactly after its committed position; together
#     both runs hold every LSN once or more, duplicates only after the last
#     commit, and every acknowledged order;
#  2. serve killed -9 and restarted under a following consumer: nothing is
#     missed, every acknowledged order arrives;
#  3. retention: a registered consumer that reads nothing holds WAL files
#     back while the others have long passed them; restarted with a bound
#     it is past (--feed-keep-bytes 1), serve removes them, logs the loss,
#     `feed --list` and the metrics say lost, and `feed` exits 3
#     (FLASH_ELOST) instead of skipping;
#  4. metrics: per-consumer lag in records and seconds;
#  5. --help documents the commit semantics; bad command lines exit 2.
set -u
F=${1:?usage: cli_feed.sh path/to/flashstock path/to/ops_buyer}
B=${2:?usage: cli_feed.sh path/to/flashstock path/to/ops_buyer}
T=$(mktemp -d)
W=$T/wal
seg=/flash-feed-cli-$$
pids=""
cleanup() {
	for p in $pids; do kill -KILL "$p" 2>/dev/null; done
	for p in $pids; do wait "$p" 2>/dev/null; done
	"$F" destroy --name "$seg" --force >/dev/null 2>&1 || "$F" destroy --name "$seg" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	[ -f "$T/serve.log" ] && tail -n 20 "$T/serve.log" >&2
	exit 1
}

caps="--activities 4 --skus 16 --shards 16 --users 65536 --orders 65536 --tokens 64 \
--requests 64 --locks 16 --procs 16 --ring 4096"
"$F" create --name "$seg" $caps >/dev/null || fail "create"
"$F" load --name "$seg" --activity 1 --sku 1 --units 1000000 >/dev/null || fail "load"

serve_args="--name $seg --wal $W --wal-file-mb 1 --snapshot-wal-bytes 65536 --snapshot-every 1 \
--reconcile-every 0 --metrics 0"
spid=
serve_start() {   # extra args...
	: > "$T/serve.log"
	"$F" serve $serve_args "$@" 2>>"$T/serve.log" &
	spid=$!
	pids="$pids $spid"
	for _ in $(seq 1 200); do
		grep -q "metrics on port" "$T/serve.log" && return 0
		kill -0 "$spid" 2>/dev/null || fail "serve exited: $(cat "$T/serve.log")"
		sleep 0.05
	done
	fail "serve did not start"
}
port() { sed -n 's/.*metrics on port \([0-9]*\).*/\1/p' "$T/serve.log" | tail -n 1; }
scrape() {        # GET /metrics through bash's /dev/tcp (no HTTP client needed)
	exec 3<>"/dev/tcp/127.0.0.1/$(port)" || fail "cannot reach the metrics port"
	printf 'GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n' >&3
	cat <&3
	exec 3<&-
}
buy() { "$B" --name "$seg" --activity 1 --sku 1 --from "$1" --to "$2" --log "$T/acked" >>"$T/buyer.out" 2>&1; }
lsns() { sed -n 's/^{"lsn":\([0-9]*\),.*/\1/p' "$@"; }
orders() { grep -h '"type":"order"' "$@" | sed 's/.*"order_no":\([0-9]*\),.*/\1/' | sort -u; }   # comm wants sort order
committed() {     # NAME: its committed LSN from feed --list --json
	"$F" feed --list --wal "$W" --json | grep -o "{\"name\":\"$1\",[^}]*}" |
		sed 's/.*"committed_lsn":\([0-9]*\),.*/\1/'
}
field() {         # NAME FIELD
	"$F" feed --list --wal "$W" --json | grep -o "{\"name\":\"$1\",[^}]*}" |
		sed "s/.*\"$2\":\\([^,}]*\\).*/\\1/"
}
wait_caught_up() {  # NAME: until its lag is 0 (it commits when it has printed everything)
	for _ in $(seq 1 400); do
		[ "$(field "$1" lag_records)" = 0 ] && return 0
		sleep 0.05
	done
	fail "consumer $1 did not catch up: $("$F" feed --list --wal "$W")"
}

serve_start
# "lag" registers now and then reads nothing: retention must keep its files.
"$F" feed --wal "$W" --consumer lag --limit 1 --commit none >/dev/null || fail "register lag"
"$F" feed --wal "$W" --consumer lag --json > "$T/lag0" || fail "lag first read"
[ ! -s "$T/lag0" ] || fail "a consumer registered at the durable end saw old records: $(head -2 "$T/lag0")"

# ---- 1. the consumer killed mid-stream ----
"$F" feed --wal "$W" --consumer kc --from-start --follow --json > "$T/kc1" 2>"$T/kc1.err" &
kc=$!
pids="$pids $kc"
buy 1 30000 &
bp=$!
for _ in $(seq 1 400); do
	[ "$(wc -l < "$T/kc1")" -ge 8000 ] && break
	sleep 0.02
done
kill -KILL "$kc"
wait "$kc" 2>/dev/null
wait "$bp" || fail "buyer 1..30000: $(tail -3 "$T/buyer.out")"
c1=$(committed kc)
[ -n "$c1" ] && [ "$c1" -gt 0 ] || fail "kc committed nothing before its kill (committed '$c1', printed $(wc -l < "$T/kc1"))"
"$F" feed --wal "$W" --consumer kc --json > "$T/kc2" 2>"$T/kc2.err" || fail "kc restart: $(cat "$T/kc2.err")"
first2=$(lsns "$T/kc2" | head -n 1)
[ "$first2" = $((c1 + 1)) ] || fail "restart began at LSN $first2, committed was $c1"
# every LSN from 1 to the end at least once, in order within each run
durable=$(field kc durable_lsn)
[ "$(lsns "$T/kc1" "$T/kc2" | sort -n -u | wc -l)" = "$durable" ] || fail "LSNs missing: \
$(lsns "$T/kc1" "$T/kc2" | sort -n -u | wc -l) distinct of $durable"
[ "$(lsns "$T/kc1" "$T/kc2" | sort -n -u | tail -n 1)" = "$durable" ] || fail "last LSN is not $durable"
lsns "$T/kc1" | sort -n -c 2>/dev/null || fail "run 1 out of LSN order"
lsns "$T/kc2" | sort -n -c 2>/dev/null || fail "run 2 out of LSN order"
# duplicates only above the last commit before the kill
dups=$(lsns "$T/kc1" "$T/kc2" | sort -n | uniq -d)
if [ -n "$dups" ] && [ "$(printf '%s\n' "$dups" | head -n 1)" -le "$c1" ]; then
	fail "LSN $(printf '%s\n' "$dups" | head -n 1) repeated though committed ($c1)"
fi
orders "$T/kc1" "$T/kc2" > "$T/kc.orders"
sort -u "$T/acked" > "$T/acked.sorted"
[ -z "$(comm -23 "$T/acked.sorted" "$T/kc.orders")" ] || fail "acknowledged orders missing from the feed"
[ "$(wc -l < "$T/acked.sorted")" = 30000 ] || fail "the buyer acknowledged $(wc -l < "$T/acked.sorted") of 30000"
# the run crossed roll-over and snapshots
nf=$(grep -c 'wal-' <(ls "$W"))
[ "$(ls "$W" | grep -c '^snap-')" -ge 1 ] || fail "no snapshot was written"
[ "$nf" -ge 3 ] || fail "the WAL has $nf file(s); the test needs roll-over"
echo "1. consumer kill: committed $c1, restarted at $first2, $(printf '%s\n' "$dups" | grep -c .) duplicate(s), \
$durable LSNs, $nf WAL files"

# ---- 2. serve killed and restarted under a follower ----
# registered first (at the durable end), so it must see every order below
"$F" feed --wal "$W" --consumer ks > "$T/ks0" || fail "register ks"
[ ! -s "$T/ks0" ] || fail "ks at the durable end printed records"
"$F" feed --wal "$W" --consumer ks --follow --json > "$T/ks" 2>"$T/ks.err" &
ks=$!
pids="$pids $ks"
: > "$T/acked"
buy 30001 40000 &
bp=$!
sleep 0.2
kill -KILL "$spid"
wait "$spid" 2>/dev/null
serve_start
wait "$bp" || fail "buyer 30001..40000: $(tail -3 "$T/buyer.out")"
wait_caught_up ks
kill -TERM "$ks"
wait "$ks" || fail "feed --follow exit $? after SIGTERM: $(cat "$T/ks.err")"
sort -u "$T/acked" > "$T/acked.sorted"
orders "$T/ks" > "$T/ks.orders"
[ -z "$(comm -23 "$T/acked.sorted" "$T/ks.orders")" ] || fail "orders acknowledged around the daemon's kill missing"
n=$(lsns "$T/ks" | wc -l)
f=$(lsns "$T/ks" | head -n 1)
l=$(lsns "$T/ks" | tail -n 1)
[ "$n" = $((l - f + 1)) ] || fail "follower saw $n records for LSNs $f..$l"
echo "2. serve kill: follower saw LSNs $f..$l, every one of $(wc -l < "$T/acked.sorted") acknowledged orders"

# ---- 4. metrics: lag of the consumer that reads nothing ----
m=$(scrape)
lagrec=$(printf '%s\n' "$m" | sed -n 's/^flashstock_feed_lag_records{consumer="lag"} \([0-9]*\).*/\1/p')
[ -n "$lagrec" ] && [ "$lagrec" -ge 40000 ] || fail "lag_records of 'lag': '$lagrec'"
[ "$lagrec" = "$(field lag lag_records)" ] || fail "metrics and feed --list disagree: $lagrec"
lagsec=$(printf '%s\n' "$m" | sed -n 's/^flashstock_feed_lag_seconds{consumer="lag"} \([0-9.]*\).*/\1/p')
[ -n "$lagsec" ] && [ "$lagsec" != "0.000000" ] || fail "lag_seconds of 'lag': '$lagsec'"
printf '%s\n' "$m" | grep -q '^flashstock_feed_lag_records{consumer="ks"} 0$' || fail "ks lag: $(printf '%s\n' "$m" | grep feed_lag)"
printf '%s\n' "$m" | grep -q '^# TYPE flashstock_feed_lag_seconds gauge$' || fail "no TYPE line"
printf '%s\n' "$m" | grep -q '^flashstock_feed_lost{consumer="lag"} 0$' || fail "lag already lost"

# ---- 3. retention ----
# 'lag' needs LSN 3 onwards: the first file is still there though snapshots
# and every other consumer passed it
[ -e "$W/wal-0000000000000001.log" ] || fail "the WAL a registered consumer needs was removed"
[ "$(field lag state)" = '"ok"' ] || fail "lag is $(field lag state)"
grep -q "consumer 'lag' lost" "$T/serve.log" && fail "lag reported lost within the bound"
# every consumer but 'lag' is caught up before the bound is lowered
"$F" feed --wal "$W" --consumer kc > /dev/null || fail "kc catch-up"
kill -TERM "$spid"
wait "$spid" || fail "serve exit $? after SIGTERM"
serve_start --feed-keep-bytes 1
# a few more orders move the snapshots on, so the removal runs again
u=40000
for _ in $(seq 1 40); do
	buy $((u + 1)) $((u + 200)) || fail "buyer $((u + 1))..$((u + 200))"
	u=$((u + 200))
	grep -q "feed: consumer 'lag' lost" "$T/serve.log" && [ ! -e "$W/wal-0000000000000001.log" ] && break
	sleep 0.25
done
grep -q "feed: consumer 'lag' lost: it needs LSN" "$T/serve.log" || fail "no log line for the lost consumer"
[ ! -e "$W/wal-0000000000000001.log" ] || fail "the file was kept past the bound"
[ "$(field lag state)" = '"lost"' ] || fail "feed --list says $(field lag state)"
"$F" feed --list --wal "$W" | grep -q '^lag  *lost ' || fail "text list: $("$F" feed --list --wal "$W")"
m=$(scrape)
printf '%s\n' "$m" | grep -q '^flashstock_feed_lost{consumer="lag"} 1$' || fail "metric lost: $(printf '%s\n' "$m" | grep feed_lost)"
printf '%s\n' "$m" | grep -q '^flashstock_feed_lost_total 1$' || fail "lost_total: $(printf '%s\n' "$m" | grep lost_total)"
"$F" feed --wal "$W" --consumer lag --json > "$T/lag1" 2>"$T/lag1.err"; rc=$?
[ $rc = 3 ] || fail "feed of a lost consumer exited $rc, want 3"
grep -q FLASH_ELOST "$T/lag1.err" || fail "no FLASH_ELOST: $(cat "$T/lag1.err")"
[ ! -s "$T/lag1" ] || fail "a lost consumer got records past the gap: $(head -1 "$T/lag1")"
# the others are untouched; dropping the lost one unregisters it
[ "$(field kc state)" = '"ok"' ] || fail "kc is $(field kc state)"
"$F" feed --drop lag --wal "$W" || fail "drop lag"
"$F" feed --list --wal "$W" | grep -q '^lag ' && fail "lag still listed after --drop"
echo "3. retention: file kept within the bound, removed past it, consumer lost (exit 3)"

# ---- 5. usage ----
"$F" feed --help | grep -q -- '--commit auto' || fail "--help lacks the commit semantics"
"$F" feed --help | grep -q 'printed' || fail "--help does not say when the position advances"
"$F" feed --wal "$W" > /dev/null 2>&1; [ $? = 2 ] || fail "no --consumer: not exit 2"
"$F" feed --consumer x > /dev/null 2>&1; [ $? = 2 ] || fail "no --wal: not exit 2"
"$F" feed --wal "$W" --consumer 'a/b' > /dev/null 2>&1; [ $? = 2 ] || fail "bad name: not exit 2"
"$F" feed --wal "$W" --consumer x --commit sometimes > /dev/null 2>&1; [ $? = 2 ] || fail "bad --commit: not exit 2"
"$F" feed --wal "$W" --consumer x --mysql 'nope://' > /dev/null 2>&1; [ $? = 2 ] || fail "bad --mysql: not exit 2"
"$F" feed --list --wal "$W" | grep -q '^x ' && fail "a refused command registered a consumer"
"$F" feed --wal "$W" --consumer peek --from-start --commit none --limit 5 --json > "$T/peek" || fail "peek"
[ "$(wc -l < "$T/peek")" = 5 ] || fail "--limit 5 printed $(wc -l < "$T/peek")"
[ "$(committed peek)" = "$(( $(lsns "$T/peek" | head -n 1) - 1 ))" ] || fail "--commit none moved the position"
kill -TERM "$spid"
wait "$spid" || fail "serve exit $? after SIGTERM"
echo "cli_feed: all checks passed"
