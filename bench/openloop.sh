#!/usr/bin/env bash
# What does open-loop accounting (#30: service time and schedule lag histograms, late and
# skipped counts) cost the client? ("< 2 % more client CPU per event than today's
# constant-rate run".)
#
# Two release builds, BENCH_BIN_BEFORE (without it) and BENCH_BIN (with it), run the same
# one-step suite: the cpu workload (no server, so no server noise in the client's figure) at a
# constant `rate`. The rate is RATE, or by default 70 % of what the threads do closed loop
# (measured first with the "before" build), so the threads are busy most of the time without
# the queue growing. Each round runs every side once, their order rotated from round to round
# (drift hits all alike): `before`, `after`, and `limit` (BENCH_BIN with a `latency_limit` of
# 10 s: the late check and the skip check on every event, nothing late or skipped). Client CPU
# is user + sys of the whole sbsuite process from /usr/bin/time, over the events of its step
# (results.csv): a shared machine's throughput varies from run to run, the CPU per event
# much less.
# Prints per side the median client CPU per event and the ratios after/before and
# limit/before: the median of the rounds' ratios, their min..max, and the ratio of the medians.
#
#   BENCH_BIN_BEFORE=… BENCH_BIN=… bench/openloop.sh [ROUNDS] [SECONDS] [THREADS] [PRIME]
#   defaults: 9 rounds, 5 s, 2 threads, cpu_max_prime 2000; RATE (events/s) overrides the
#   calibrated rate
#
# The binaries are release builds, e.g. `git worktree add /tmp/base OLD && cargo build
# --release` there. Run it alone on the machine (other processes' CPU changes the clients').
set -euo pipefail
cd "$(dirname "$0")/.."
BEFORE=${BENCH_BIN_BEFORE:?set BENCH_BIN_BEFORE to the release build before the change}
AFTER=${BENCH_BIN:?set BENCH_BIN to the release build with the change}
for b in "$BEFORE" "$AFTER"; do [ -x "$b" ] || { echo "$b is not an executable" >&2; exit 2; }; done
ROUNDS=${1:-9}
SECS=${2:-5}
THREADS=${3:-2}
PRIME=${4:-2000}
[ -x /usr/bin/time ] || { echo "/usr/bin/time is not installed (apt-get install time)" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# suite NAME RATE EXTRA: a one-step cpu suite at $TMP/NAME.toml
suite() {
  cat > "$TMP/$1.toml" <<EOF
[suite]
name = "openloop-bench"
rate_overflow = "record"
server_cost = false

[defaults]
workload = "cpu"
time = $SECS
threads = $THREADS
cpu_max_prime = $PRIME
rate = $2
$3
EOF
}

# events DIR: the events of the step(s) under results directory DIR
events() {
  python3 -c 'import csv,glob,sys; print(sum(int(r["events"]) for f in glob.glob(sys.argv[1] + "/*/*/results.csv") for r in csv.DictReader(open(f))))' "$1"
}

if [ -z "${RATE:-}" ]; then
  suite closed 0 ""
  rm -rf "$TMP/res"
  "$BEFORE" run "$TMP/closed.toml" --progress off --results-dir "$TMP/res" > /dev/null 2> "$TMP/err" \
    || { cat "$TMP/err" >&2; exit 1; }
  RATE=$(awk -v e="$(events "$TMP/res")" -v s="$SECS" 'BEGIN {printf "%d", 0.7 * e / s}')
fi
suite before "$RATE" ""
suite after "$RATE" ""
suite limit "$RATE" "latency_limit = 10000"

# one SIDE ROUND: appends "side round cpu_s events us_per_event" to $TMP/rows
one() {
  local side=$1 round=$2 bin=$AFTER
  [ "$side" = before ] && bin=$BEFORE
  rm -rf "$TMP/res"
  /usr/bin/time -f "%U %S" -o "$TMP/time" \
    "$bin" run "$TMP/$side.toml" --progress off --results-dir "$TMP/res" > /dev/null 2> "$TMP/err" \
    || { cat "$TMP/err" >&2; exit 1; }
  local e
  e=$(events "$TMP/res")
  awk -v s="$side" -v r="$round" -v e="$e" '{print s, r, $1 + $2, e, ($1 + $2) * 1e6 / e}' "$TMP/time" >> "$TMP/rows"
}

: > "$TMP/rows"
SIDES=(before after limit)
for round in $(seq 1 "$ROUNDS"); do
  for k in 0 1 2; do one "${SIDES[$(((round + k) % 3))]}" "$round"; done
done

col() { awk -v s="$1" -v c="$2" '$1 == s {print $c}' "$TMP/rows" | median; }
# ratios SIDE: the rounds' ratios SIDE/before, sorted
ratios() {
  awk -v s="$1" '{cpu[$1, $2] = $5} END {for (k in cpu) {split(k, p, SUBSEP); if (p[1] == s) printf "%.4f\n", cpu[k] / cpu["before", p[2]]}}' "$TMP/rows" | sort -g
}
echo "cpu workload, cpu_max_prime $PRIME, $THREADS threads, rate $RATE/s, $SECS s per run, $ROUNDS rounds"
echo "events per run (median): before $(col before 4), after $(col after 4), limit $(col limit 4)"
printf "client CPU per event (median): before %.3f us  after %.3f us  limit %.3f us\n" \
  "$(col before 5)" "$(col after 5)" "$(col limit 5)"
for side in after limit; do
  r=$(ratios "$side")
  printf "%s/before: median of the rounds' ratios %.4f (min %s, max %s); ratio of the medians %.4f\n" \
    "$side" "$(echo "$r" | median)" "$(echo "$r" | head -1)" "$(echo "$r" | tail -1)" \
    "$(echo "$(col "$side" 5) / $(col before 5)" | bc -l)"
done
