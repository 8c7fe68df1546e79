#!/usr/bin/env bash
# A custom workload declared in TOML against the built-in engine it imitates: `oltp_point_select`
# and a `[workloads.point]` whose one transaction is the same statement
# (`SELECT c FROM sbtest1 WHERE id = :id`, id from the run's `rand_type`, autocommit), on the
# same prepared sbtest1 table of the local MariaDB (default) or PostgreSQL (`pgsql`), in ABBA
# order (built-in first in odd rounds, custom first in even ones). The built-in side runs as
# `sbsuite sysbench oltp_point_select run`, the custom side as `sbsuite run` of a one-step suite
# (its planning and CSV writing count against it). For each thread count it prints the median
# QPS of both and their ratio, and the client CPU seconds per 1,000 queries of both and their
# ratio, twice: inside the measured window (bench/cpu-window.py: the process's user + sys
# ticks while all its worker threads run, over the queries of that window at the run's QPS),
# which is what the engines spend per query, and over the whole process (getrusage), which
# adds each side's fixed start-up and ending costs (larger for `sbsuite run`: loading and
# checking the suite, capturing server variables, writing CSV files and histograms).
#
#   bench/custom-compare.sh [mysql|pgsql] [ROUNDS] [SECONDS] [THREADS]
#   defaults: mysql, 5 rounds, 5 s, "4 32"
#
# mysql: a local server reachable as root over 127.0.0.1:3306; pgsql: a local PostgreSQL
# reachable as postgres over 127.0.0.1:5432 (plain TCP). BENCH_DB names the database (default
# sbsuite_bench). Builds sbsuite in release mode (in $CARGO_TARGET_DIR when set).
set -euo pipefail
cd "$(dirname "$0")/.."
DRIVER=mysql
case "${1:-}" in mysql|pgsql) DRIVER=$1; shift ;; esac
ROUNDS=${1:-5}
SECS=${2:-5}
THREADS=${3:-"4 32"}
DB=${BENCH_DB:-sbsuite_bench}
cargo build --release --quiet
SBS="${CARGO_TARGET_DIR:-$PWD/target}/release/sbsuite"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
echo "load before: $(uptime)"
if [ "$DRIVER" = pgsql ]; then
  export PGSSLMODE=disable
  pg() { psql --host=127.0.0.1 --port=5432 --username=postgres --no-psqlrc -qAt "$@"; }
  [ "$(pg -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" = 1 ] || pg -c "CREATE DATABASE $DB"
  ARGS="--db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port=5432 --pgsql-user=postgres --pgsql-db=$DB"
  TARGET="driver = \"pgsql\"
hosts = [\"127.0.0.1:5432\"]
user = \"postgres\"
database = \"$DB\"
ssl = \"disabled\""
else
  mysql --user=root --host=127.0.0.1 -e "CREATE DATABASE IF NOT EXISTS $DB"
  ARGS="--mysql-host=127.0.0.1 --mysql-port=3306 --mysql-user=root --mysql-db=$DB"
  TARGET="driver = \"mysql\"
hosts = [\"127.0.0.1:3306\"]
user = \"root\"
database = \"$DB\""
fi

# custom THREADS: the one-step suite of the custom workload at $TMP/custom.toml (it declares
# no schema, so it has no prepare or cleanup step: it reads the sbtest1 prepared below).
custom() {
  cat > "$TMP/custom.toml" <<EOF
[suite]
name = "custom-point"
results_dir = "$TMP/results"

[target]
$TARGET

[defaults]
time = $SECS
threads = $1

[matrix]
workload = ["point"]

[workloads.point]
summary = "oltp_point_select declared in TOML"

[workloads.point.params]
id = { rand = [1, 10000] }

[workloads.point.transactions.point]
weight = 1
autocommit = true
steps = [{ sql = "SELECT c FROM sbtest1 WHERE id = :id" }]
EOF
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", b/a}'; }

# per_1k QPS QUERIES: prints "qps window_cpu_s_per_1000_queries total_cpu_s_per_1000_queries"
# from $TMP/cpu (bench/cpu-window.py's "window_cpu window_wall total_cpu").
per_1k() {
  awk -v q="$1" -v n="$2" '{printf "%s %.6f %.6f\n", q, $1 / (q * $2) * 1000, $3 / n * 1000}' "$TMP/cpu"
}

# builtin THREADS: `sbsuite sysbench oltp_point_select run`
builtin() {
  # shellcheck disable=SC2086
  python3 bench/cpu-window.py "$TMP/cpu" -- "$SBS" sysbench oltp_point_select $ARGS --tables=1 \
    --table-size=10000 --threads="$1" --time="$SECS" run > "$TMP/out"
  per_1k "$(awk '$1 == "queries:" {gsub(/\(/, "", $3); print $3}' "$TMP/out")" \
    "$(awk '$1 == "queries:" {print $2}' "$TMP/out")"
}

# custom_run: `sbsuite run` of $TMP/custom.toml
custom_run() {
  rm -rf "$TMP/results"
  python3 bench/cpu-window.py "$TMP/cpu" -- "$SBS" run "$TMP/custom.toml" > /dev/null 2>&1
  local csv
  csv=$(find "$TMP/results" -name results.csv | head -n 1)
  # shellcheck disable=SC2046
  per_1k $(python3 -c '
import csv, sys
row = next(csv.DictReader(open(sys.argv[1])))
print(row["qps"], sum(float(row[k]) for k in ("reads", "writes", "other")))
' "$csv")
}

# shellcheck disable=SC2086
"$SBS" sysbench oltp_point_select $ARGS --tables=1 --table-size=10000 cleanup > /dev/null
# shellcheck disable=SC2086
"$SBS" sysbench oltp_point_select $ARGS --tables=1 --table-size=10000 prepare > /dev/null

echo "case,rounds,seconds,builtin_qps,custom_qps,qps_ratio,builtin_cpu_s_per_1k_q,custom_cpu_s_per_1k_q,cpu_ratio,builtin_total_cpu_s_per_1k_q,custom_total_cpu_s_per_1k_q,total_cpu_ratio"
for t in $THREADS; do
  custom "$t"
  : > "$TMP/a"; : > "$TMP/b"
  for r in $(seq "$ROUNDS"); do
    if [ $((r % 2)) -eq 1 ]; then order="a b"; else order="b a"; fi
    for x in $order; do
      case $x in
        a) builtin "$t" >> "$TMP/a" ;;
        b) custom_run >> "$TMP/b" ;;
      esac
    done
  done
  aq=$(cut -d' ' -f1 "$TMP/a" | median); bq=$(cut -d' ' -f1 "$TMP/b" | median)
  ac=$(cut -d' ' -f2 "$TMP/a" | median); bc=$(cut -d' ' -f2 "$TMP/b" | median)
  at=$(cut -d' ' -f3 "$TMP/a" | median); bt=$(cut -d' ' -f3 "$TMP/b" | median)
  echo "$DRIVER-point-t$t,$ROUNDS,$SECS,$aq,$bq,$(ratio "$aq" "$bq"),$ac,$bc,$(ratio "$ac" "$bc"),$at,$bt,$(ratio "$at" "$bt")"
done
# shellcheck disable=SC2086
"$SBS" sysbench oltp_point_select $ARGS --tables=1 --table-size=10000 cleanup > /dev/null
echo "load after: $(uptime)"
