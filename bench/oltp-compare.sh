#!/usr/bin/env bash
# OLTP against the local MySQL/MariaDB (default) or PostgreSQL (`pgsql`): sbsuite and sysbench
# 1.0.20 on the same server and the same prepared tables, in ABBA order (sysbench first in odd
# rounds, sbsuite first in even ones).
# For each case it prints the median QPS of both, their ratio, and the client CPU seconds
# (user + sys of the client process, /usr/bin/time) per 1,000 queries of both and their ratio.
# Then the prepare speed (4 tables × 250,000 rows, 4 threads, ROUNDS ABBA rounds into empty
# tables: median seconds, client CPU seconds and, for MySQL, the server process's CPU seconds)
# and, for MySQL, the peak RSS of each client at 1,024 connections. PREPARE_ONLY=1 measures
# only the prepare speed. BENCH_DB names the database (default sbsuite_bench).
#
#   bench/oltp-compare.sh [mysql|pgsql|oceanbase] [ROUNDS] [SECONDS] [WORKLOADS] [THREADS]
#   defaults: mysql, 5 rounds, 5 s, "oltp_point_select oltp_read_only oltp_read_write", "4 32 128"
#
# mysql: a local server reachable as root over 127.0.0.1:3306.
# oceanbase: OceanBase's single-node kernel seekdb as bench/seekdb.sh starts it (root, no
# password, 127.0.0.1:2881; started here when it is not running): the run cases only (no
# prepare speed or 1,024-connection RSS).
# pgsql: a local PostgreSQL reachable as postgres over 127.0.0.1:5432, both clients in plain TCP
# (PGSSLMODE=disable: the drivers, not the TLS libraries, are compared); when max_connections
# is too small for the largest thread count it is raised for the run (ALTER SYSTEM and a restart
# with pg_ctlcluster) and restored at the end.
# Installs sysbench and GNU time from the system packages when missing; builds sbsuite in
# release mode (in $CARGO_TARGET_DIR when set), unless BENCH_SBSUITE names the binary to measure.
# With ASYNC=1, sbsuite also runs with its driver library instead of its own protocol client
# (mysql: SBSUITE_MYSQL_CLIENT=async, mysql_async; pgsql: SBSUITE_PGSQL_CLIENT=tokio,
# tokio-postgres) in the same rotation, and four more columns (async_* / tokio_*) compare it
# with sysbench.
set -euo pipefail
cd "$(dirname "$0")/.."
DRIVER=mysql
case "${1:-}" in mysql|pgsql|oceanbase) DRIVER=$1; shift ;; esac
ROUNDS=${1:-5}
SECS=${2:-5}
WORKLOADS=${3:-"oltp_point_select oltp_read_only oltp_read_write"}
THREADS=${4:-"4 32 128"}
for pkg in sysbench time; do
  bin=$pkg; [ "$pkg" = time ] && bin=/usr/bin/time
  if ! command -v "$bin" >/dev/null; then
    apt-get install -y "$pkg" >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y "$pkg" >/dev/null; }
  fi
done
if [ -n "${BENCH_SBSUITE:-}" ]; then
  SBS="$BENCH_SBSUITE sysbench"
else
  cargo build --release --quiet
  SBS="${CARGO_TARGET_DIR:-$PWD/target}/release/sbsuite sysbench"
fi
ASYNC=${ASYNC:-0}
TMP=$(mktemp -d)
DB=${BENCH_DB:-sbsuite_bench}
echo "load before: $(uptime)"
if [ "$DRIVER" = pgsql ]; then
  ALT=tokio; ALT_ENV="SBSUITE_PGSQL_CLIENT=tokio"
else
  ALT=async; ALT_ENV="SBSUITE_MYSQL_CLIENT=async"
fi
if [ "$DRIVER" = pgsql ]; then
  export PGSSLMODE=disable
  ARGS="--db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port=5432 --pgsql-user=postgres --pgsql-db=$DB"
  pg() { psql --host=127.0.0.1 --port=5432 --username=postgres --no-psqlrc -qAt "$@"; }
  [ "$(pg -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" = 1 ] || pg -c "CREATE DATABASE $DB"
  restore=""
  max_threads=$(printf '%s\n' $THREADS | sort -n | tail -n 1)
  if [ "$(pg -c "SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int")" -lt $((max_threads + 8)) ]; then
    cluster="$(ls /etc/postgresql | sort -V | tail -n 1) main"
    pg -c "ALTER SYSTEM SET max_connections = $((max_threads + 64))"
    # shellcheck disable=SC2086
    pg_ctlcluster --skip-systemctl-redirect $cluster restart
    restore="ALTER SYSTEM RESET max_connections"
  fi
  trap 'rm -rf "$TMP"; if [ -n "$restore" ]; then pg -c "$restore"; pg_ctlcluster --skip-systemctl-redirect $cluster restart; fi' EXIT
elif [ "$DRIVER" = oceanbase ]; then
  bash bench/seekdb.sh start >&2
  ARGS="--mysql-host=127.0.0.1 --mysql-port=2881 --mysql-user=root --mysql-db=$DB"
  mysql --user=root --host=127.0.0.1 --port=2881 -e "CREATE DATABASE IF NOT EXISTS $DB"
  trap 'rm -rf "$TMP"' EXIT
else
  ARGS="--mysql-host=127.0.0.1 --mysql-port=3306 --mysql-user=root --mysql-db=$DB"
  mysql --user=root --host=127.0.0.1 -e "CREATE DATABASE IF NOT EXISTS $DB"
  trap 'rm -rf "$TMP"' EXIT
fi

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# one TOOL WORKLOAD THREADS: prints "qps cpu_seconds_per_1000_queries"
one() {
  local tool=$1 w=$2 t=$3
  # shellcheck disable=SC2086
  /usr/bin/time -f "%U %S" -o "$TMP/time" $tool $w $ARGS --tables=4 --table-size=10000 \
    --threads="$t" --time="$SECS" run > "$TMP/out"
  local qps queries cpu
  qps=$(awk '$1 == "queries:" {gsub(/\(/, "", $3); print $3}' "$TMP/out")
  queries=$(awk '$1 == "queries:" {print $2}' "$TMP/out")
  cpu=$(awk '{print $1 + $2}' "$TMP/time")
  awk -v q="$qps" -v n="$queries" -v c="$cpu" 'BEGIN {printf "%s %.6f\n", q, c / n * 1000}'
}

PREPARE_ONLY=${PREPARE_ONLY:-0}
if [ "$PREPARE_ONLY" = 1 ]; then WORKLOADS=""; fi
if [ -n "$WORKLOADS" ]; then
  # shellcheck disable=SC2086
  sysbench oltp_read_write $ARGS --tables=4 --table-size=10000 cleanup > /dev/null
  # shellcheck disable=SC2086
  sysbench oltp_read_write $ARGS --tables=4 --table-size=10000 prepare > /dev/null

  ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", b/a}'; }
  head="case,rounds,seconds,sysbench_qps,sbsuite_qps,qps_ratio,sysbench_cpu_s_per_1k_q,sbsuite_cpu_s_per_1k_q,cpu_ratio"
  [ "$ASYNC" = 1 ] && head="$head,${ALT}_qps,${ALT}_qps_ratio,${ALT}_cpu_s_per_1k_q,${ALT}_cpu_ratio"
  echo "$head"
  for w in $WORKLOADS; do
    for t in $THREADS; do
      : > "$TMP/a"; : > "$TMP/b"; : > "$TMP/c"
      for r in $(seq "$ROUNDS"); do
        if [ "$ASYNC" = 1 ]; then
          # Three tools: each round starts with the next one.
          case $((r % 3)) in
            1) order="a b c" ;; 2) order="b c a" ;; *) order="c a b" ;;
          esac
        elif [ $((r % 2)) -eq 1 ]; then order="a b"; else order="b a"; fi
        for x in $order; do
          case $x in
            a) one sysbench "$w" "$t" >> "$TMP/a" ;;
            b) one "$SBS" "$w" "$t" >> "$TMP/b" ;;
            c) one "env $ALT_ENV $SBS" "$w" "$t" >> "$TMP/c" ;;
          esac
        done
      done
      aq=$(cut -d' ' -f1 "$TMP/a" | median); bq=$(cut -d' ' -f1 "$TMP/b" | median)
      ac=$(cut -d' ' -f2 "$TMP/a" | median); bc=$(cut -d' ' -f2 "$TMP/b" | median)
      line="$w-t$t,$ROUNDS,$SECS,$aq,$bq,$(ratio "$aq" "$bq"),$ac,$bc,$(ratio "$ac" "$bc")"
      if [ "$ASYNC" = 1 ]; then
        cq=$(cut -d' ' -f1 "$TMP/c" | median); cc=$(cut -d' ' -f2 "$TMP/c" | median)
        line="$line,$cq,$(ratio "$aq" "$cq"),$cc,$(ratio "$ac" "$cc")"
      fi
      echo "$line"
    done
  done
  # shellcheck disable=SC2086
  sysbench oltp_read_write $ARGS --tables=4 --table-size=10000 cleanup > /dev/null
fi

[ "$DRIVER" = oceanbase ] && { echo "load after: $(uptime)"; exit 0; }
echo
echo "prepare,tables,rows_per_table,threads,rounds,sysbench_seconds,sbsuite_seconds,rows_per_s_ratio,sysbench_client_cpu_s,sbsuite_client_cpu_s,sysbench_server_cpu_s,sbsuite_server_cpu_s"
PARGS="$ARGS --tables=4 --table-size=250000 --threads=4"
# CPU seconds the server process has used so far (MySQL: one mysqld/mariadbd process; PostgreSQL
# runs a process per connection, so "-").
server_cpu() {
  local pid
  pid=$(pidof mariadbd || pidof mysqld || true)
  if [ "$DRIVER" = pgsql ] || [ -z "$pid" ]; then echo -; return; fi
  awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f\n", ($14 + $15) / hz}' "/proc/$pid/stat"
}
# prep TOOL: a prepare into empty tables; prints "seconds client_cpu_s server_cpu_s"
prep() {
  local tool=$1 start end s0 s1
  # shellcheck disable=SC2086
  $tool oltp_read_write $PARGS cleanup > /dev/null
  s0=$(server_cpu)
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  /usr/bin/time -f "%U %S" -o "$TMP/ptime" $tool oltp_read_write $PARGS prepare > /dev/null
  end=$(date +%s.%N)
  s1=$(server_cpu)
  # shellcheck disable=SC2086
  $tool oltp_read_write $PARGS cleanup > /dev/null
  awk -v s="$start" -v e="$end" -v a="$s0" -v b="$s1" '{
    srv = (a == "-") ? "-" : sprintf("%.2f", b - a)
    printf "%.3f %.2f %s\n", e - s, $1 + $2, srv }' "$TMP/ptime"
}
: > "$TMP/pa"; : > "$TMP/pb"
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then
    prep sysbench >> "$TMP/pa"; prep "$SBS" >> "$TMP/pb"
  else
    prep "$SBS" >> "$TMP/pb"; prep sysbench >> "$TMP/pa"
  fi
done
col() { cut -d' ' -f"$2" "$TMP/$1" | median; }
a=$(col pa 1); b=$(col pb 1)
if [ "$(col pa 3)" = - ]; then as=-; bs=-; else as=$(col pa 3); bs=$(col pb 3); fi
echo "oltp,4,250000,4,$ROUNDS,$a,$b,$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2f", a/b}'),$(col pa 2),$(col pb 2),$as,$bs"

echo "load after: $(uptime)"
[ "$DRIVER" = pgsql ] || [ "$PREPARE_ONLY" = 1 ] && exit 0

echo
echo "peak_rss,connections,sysbench_kib,sbsuite_kib"
old=$(mysql --user=root --host=127.0.0.1 -N -e "SELECT @@GLOBAL.max_connections")
mysql --user=root --host=127.0.0.1 -e "SET GLOBAL max_connections = 1100"
# shellcheck disable=SC2086
sysbench oltp_point_select $ARGS --tables=1 --table-size=10000 prepare > /dev/null
rss() {
  # shellcheck disable=SC2086
  /usr/bin/time -f "%M" -o "$TMP/rss" $1 oltp_point_select $ARGS --tables=1 --table-size=10000 \
    --threads=1024 --time=5 run > /dev/null
  cat "$TMP/rss"
}
a=$(rss sysbench); b=$(rss "$SBS")
# shellcheck disable=SC2086
sysbench oltp_point_select $ARGS --tables=1 --table-size=10000 cleanup > /dev/null
mysql --user=root --host=127.0.0.1 -e "SET GLOBAL max_connections = $old"
echo "oltp_point_select,1024,$a,$b"
