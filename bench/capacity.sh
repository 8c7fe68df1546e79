#!/usr/bin/env bash
# Does the rate `sbsuite capacity` finds hold, and is it the highest? (issue #30: "a capacity
# search on PostgreSQL point selects finds a rate R; a confirmation run at R meets the target
# and one at 1.25 × R does not").
#
# 1. `sbsuite capacity` on oltp_point_select (PostgreSQL, THREADS threads, SECS s probes)
#    with the target TARGET, e.g. "p99<2ms".
# 2. Independent runs of the same suite with `sbsuite run` at R and at 1.25 × R, REPS
#    repetitions each, alternating (R, 1.25R, 1.25R, R, …) so drift hits both alike; each run's
#    percentile, achieved rate and dropped count are judged by the same rule as capacity's.
# Prints R, then per rate how many repetitions met the target, and their percentiles.
#
#   bench/capacity.sh [TARGET] [THREADS] [SECS] [REPS]
#   defaults: "p99<2ms", 16 threads, 10 s, 3 repetitions
#   PGHOST (127.0.0.1), PGPORT (5432), PGUSER (postgres): the server (trust auth)
#
# Builds sbsuite in release mode (`PROFILE=debug` uses the debug build; `BENCH_BIN=PATH` a
# binary as it is, no build). Run it on a quiet
# machine, under `flock /tmp/sbsuite-tests.lock` when tests may run meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${1:-p99<2ms}
THREADS=${2:-16}
SECS=${3:-10}
REPS=${4:-3}
PGHOST=${PGHOST:-127.0.0.1}
PGPORT=${PGPORT:-5432}
PGUSER=${PGUSER:-postgres}
DB=sbsuite_capacity_bench
PROFILE=${PROFILE:-release}
if [ -n "${BENCH_BIN:-}" ]; then
  BIN=$BENCH_BIN
else
  if [ "$PROFILE" = debug ]; then cargo build --quiet; else cargo build --release --quiet; fi
  BIN=target/$PROFILE/sbsuite
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"; psql -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -qc "DROP DATABASE IF EXISTS $DB" postgres >/dev/null 2>&1 || true' EXIT
psql -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -qc "DROP DATABASE IF EXISTS $DB" postgres
psql -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -qc "CREATE DATABASE $DB" postgres

cat > "$WORK/point.toml" <<EOF
[suite]
name = "point"
dataset = "existing"

[target]
driver = "pgsql"
hosts = ["$PGHOST:$PGPORT"]
user = "$PGUSER"
database = "$DB"

[defaults]
workload = "oltp_point_select"
tables = 4
table_size = 100000
threads = $THREADS
time = $SECS
EOF
# The data once, for every probe and run (sysbench's prepare).
"$BIN" sysbench oltp_point_select --db-driver=pgsql --pgsql-host="$PGHOST" --pgsql-port="$PGPORT" \
  --pgsql-user="$PGUSER" --pgsql-db="$DB" --tables=4 --table-size=100000 prepare >/dev/null

"$BIN" capacity "$WORK/point.toml" --target "$TARGET" --results-dir "$WORK/results" -q \
  > "$WORK/answer.txt" 2> "$WORK/probes.txt" || { cat "$WORK/probes.txt" >&2; exit 1; }
cat "$WORK/probes.txt" "$WORK/answer.txt"
R=$(sed -n 's/^capacity at [^:]*: \([0-9]*\)\/s.*/\1/p' "$WORK/answer.txt")
[ -n "$R" ] || { echo "no rate found" >&2; exit 1; }
HI=$(python3 -c "print(round($R * 1.25))")

run() { # RATE TAG
  "$BIN" run "$WORK/point.toml" --set rate="$1" --set suite.rate_overflow=record \
    --set suite.name="check-$2" --results-dir "$WORK/check" --progress off -q >/dev/null
}
for i in $(seq 1 "$REPS"); do
  if [ $((i % 2)) = 1 ]; then run "$R" r; run "$HI" hi; else run "$HI" hi; run "$R" r; fi
done
python3 - "$WORK/check" "$TARGET" "$R" "$HI" <<'PY'
import csv, glob, math, sys, re
root, target, r, hi = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
m = re.match(r"\s*(p95|p99|avg|max)\s*<\s*([0-9.]+)\s*(ms)?\s*$", target)
col, bound = {"p95": "lat_p95", "p99": "lat_p99", "avg": "lat_avg", "max": "lat_max"}[m[1]], float(m[2])
for tag, rate in (("r", r), ("hi", hi)):
    rows = [row for f in glob.glob(f"{root}/check-{tag}/*/results.csv") for row in csv.DictReader(open(f))]
    ok = 0
    vals = []
    for row in rows:
        secs = float(row["seconds"]); ach = float(row["tps"]); v = float(row[col])
        tol = max(0.05, 3 / math.sqrt(rate * secs))
        passed = v <= bound and float(row["dropped"] or 0) == 0 and ach >= rate * (1 - tol)
        ok += passed
        vals.append(f"{v:.2f}")
    print(f"rate {rate:.0f}/s ({'R' if tag == 'r' else '1.25 R'}): {ok} of {len(rows)} met {target}; {m[1]} ms: {', '.join(vals)}")
PY
