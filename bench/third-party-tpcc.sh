#!/usr/bin/env bash
# A sysbench 1.0 script set that no one here wrote, run unchanged by sysbench 1.0.20 and by
# `sbsuite sysbench` side by side (issue #16's "done when"): Percona-Lab's sysbench-tpcc
# (`tpcc.lua` with `tpcc_common.lua`, `tpcc_run.lua`, `tpcc_check.lua` beside it; they use
# PARALLEL custom commands, bulk inserts, query_row, the report hooks and FFI sb_counter_inc).
# The scripts are not part of this repository: fetch them yourself and pass their directory.
#
# For each driver and each tool, in a fresh database: `prepare`, then the row counts of the
# tables whose size TPC-C fixes, a short `run` (its SQL statistics), `check` (every
# consistency check must print PASSED), `cleanup`. It prints one line per tool and driver, and
# fails (exit 1) when a tool fails a step, a check does not pass, or the row counts differ
# between the tools.
#
#   bench/third-party-tpcc.sh DIR [mysql|pgsql|both] [SECONDS] [THREADS]
#   defaults: both, 10 s, 2 threads; --scale=1 --tables=1 (TPCC_SCALE, TPCC_TABLES)
#
# mysql: a local server reachable as root over 127.0.0.1:3306; pgsql: a local PostgreSQL
# reachable as postgres over 127.0.0.1:5432 (PGSSLMODE=disable). The database is
# sbsuite_tpcc_3p (BENCH_DB), dropped at the end. Builds sbsuite in release mode (in
# $CARGO_TARGET_DIR when set) unless BENCH_SBSUITE names the binary. One `prepare` takes about a
# minute on MariaDB and two on PostgreSQL (the script itself sleeps 30 s in it).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:?usage: bench/third-party-tpcc.sh DIR [mysql|pgsql|both] [SECONDS] [THREADS]}
shift
DIR=$(cd "$DIR" && pwd)
for f in tpcc.lua tpcc_common.lua tpcc_run.lua tpcc_check.lua; do
  [ -f "$DIR/$f" ] || { echo "$DIR/$f is missing: the directory must hold Percona-Lab/sysbench-tpcc's scripts" >&2; exit 2; }
done
DRIVERS="mysql pgsql"
case "${1:-}" in mysql|pgsql) DRIVERS=$1; shift ;; both) shift ;; esac
SECS=${1:-10}
THREADS=${2:-2}
DB=${BENCH_DB:-sbsuite_tpcc_3p}
SCALE=${TPCC_SCALE:-1}
TABLES=${TPCC_TABLES:-1}
export PGSSLMODE=disable

command -v sysbench >/dev/null || { echo "sysbench 1.0.20 is needed: apt-get install sysbench" >&2; exit 1; }
if [ -n "${BENCH_SBSUITE:-}" ]; then
  SBS=$BENCH_SBSUITE
else
  (cd "$REPO" && cargo build --release --locked --quiet)
  SBS="${CARGO_TARGET_DIR:-$REPO/target}/release/sbsuite"
fi
TMP=$(mktemp -d)

pg() { psql --host=127.0.0.1 --port=5432 --username=postgres --no-psqlrc -qAt "$@"; }
my() { mysql --user=root --host=127.0.0.1 --port=3306 -N -B "$@"; }

fresh_db() {
  if [ "$1" = pgsql ]; then
    pg -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" 2>/dev/null
    pg -c "CREATE DATABASE $DB"
  else
    my -e "DROP DATABASE IF EXISTS $DB; CREATE DATABASE $DB"
  fi
}

# shellcheck disable=SC2317 # called from the EXIT trap
drop_db() {
  if [ "$1" = pgsql ]; then
    pg -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" 2>/dev/null || true
  else
    my -e "DROP DATABASE IF EXISTS $DB" || true
  fi
}

# shellcheck disable=SC2317 # the EXIT trap
finish() {
  for d in $DRIVERS; do drop_db "$d"; done
  rm -rf "$TMP"
}
trap finish EXIT

db_args() {
  if [ "$1" = pgsql ]; then
    echo "--db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port=5432 --pgsql-user=postgres --pgsql-db=$DB"
  else
    echo "--db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=3306 --mysql-user=root --mysql-db=$DB"
  fi
}

# counts DRIVER: "table=rows ..." of the tables whose size TPC-C fixes for a scale
counts() {
  local out="" n t
  for t in item warehouse district customer history orders new_orders stock; do
    for i in $(seq "$TABLES"); do
      if [ "$1" = pgsql ]; then
        n=$(pg -d "$DB" -c "SELECT count(*) FROM $t$i")
      else
        n=$(my -D "$DB" -e "SELECT count(*) FROM $t$i")
      fi
      out="$out $t$i=$n"
    done
  done
  echo "${out# }"
}

# step TOOL DRIVER COMMAND [OPTIONS...]: runs one command of tpcc.lua from DIR; output in
# $TMP/out, user+sys CPU seconds in $TMP/time; exits on failure
step() {
  local tool=$1 driver=$2 command=$3 cmd
  shift 3
  case $tool in
    sysbench) cmd=(sysbench tpcc.lua) ;;
    sbsuite) cmd=("$SBS" sysbench tpcc.lua) ;;
  esac
  # shellcheck disable=SC2046
  if ! (cd "$DIR" && /usr/bin/time -f "%e %U %S" -o "$TMP/time" "${cmd[@]}" $(db_args "$driver") \
      --scale="$SCALE" --tables="$TABLES" "$@" "$command") > "$TMP/out" 2>&1; then
    echo "$tool $driver $command failed:" >&2
    tail -n 30 "$TMP/out" >&2
    exit 1
  fi
}

if [ ! -x /usr/bin/time ]; then
  apt-get install -y time >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y time >/dev/null; }
fi

status=0
echo "tool,driver,prepare_s,run_tps,run_qps,run_errors,checks_passed,checks_failed,row_counts"
for driver in $DRIVERS; do
  reference=""
  for tool in sysbench sbsuite; do
    fresh_db "$driver"
    step "$tool" "$driver" prepare --threads=1
    prepare_s=$(cut -d' ' -f1 "$TMP/time")
    rows=$(counts "$driver")
    step "$tool" "$driver" run --threads="$THREADS" --time="$SECS" --report-interval=0
    tps=$(awk '$1 == "transactions:" {gsub(/\(/, "", $3); print $3}' "$TMP/out")
    qps=$(awk '$1 == "queries:" {gsub(/\(/, "", $3); print $3}' "$TMP/out")
    errors=$(awk '$1 == "ignored" && $2 == "errors:" {print $3}' "$TMP/out")
    step "$tool" "$driver" check --threads=1
    passed=$(grep -c 'PASSED$' "$TMP/out" || true)
    failed=$(grep -c 'FAILED' "$TMP/out" || true)
    step "$tool" "$driver" cleanup
    echo "$tool,$driver,$prepare_s,$tps,$qps,$errors,$passed,$failed,$rows"
    if [ "$failed" -ne 0 ] || [ "$passed" -ne $((10 * SCALE)) ]; then
      echo "$tool on $driver: $passed checks passed, $failed failed (expected $((10 * SCALE)) passed)" >&2
      status=1
    fi
    if [ -z "$reference" ]; then
      reference=$rows
    elif [ "$rows" != "$reference" ]; then
      echo "$driver: prepared row counts differ: sysbench [$reference], $tool [$rows]" >&2
      status=1
    fi
  done
done
exit "$status"
