#!/usr/bin/env bash
# sysbench's own stock scripts (`oltp_point_select.lua`, `oltp_read_write.lua` from
# /usr/share/sysbench) run by sysbench 1.0.20 and by sbsuite's embedded LuaJIT
# (`sbsuite sysbench --lua NAME`), with sbsuite's native engine (`sbsuite sysbench NAME`) for
# reference, against the local MariaDB and PostgreSQL, at each thread count. Rounds alternate
# the order (sysbench, lua, native in odd rounds; native, lua, sysbench in even ones). For each
# case it prints the median QPS of each side and the median client CPU per query (user + sys
# CPU seconds of the client process from /usr/bin/time, divided by the queries it reports),
# and the ratios to sysbench. Issue #16's targets for the Lua path: QPS >= 0.95x sysbench's,
# CPU per query <= 1.0x (the `lua_ok` column).
#
#   bench/lua-compare.sh [--quick] [mysql|pgsql|both] [ROUNDS] [SECONDS] [THREADS]
#   defaults: both, 5 rounds, 10 s, "4 32"; --quick: 1 round, 2 s, "4" (a smoke run)
#
# mysql: a local server reachable as root over 127.0.0.1:3306; pgsql: a local PostgreSQL
# reachable as postgres over 127.0.0.1:5432 (plain TCP, PGSSLMODE=disable for both tools).
# BENCH_DB names the database (default sbsuite_bench_lua; created if missing, its sbtest
# tables prepared once per driver and dropped at the end). BENCH_TABLES / BENCH_TABLE_SIZE set
# the data (default 4 × 10000). Builds sbsuite in release mode (in $CARGO_TARGET_DIR when set),
# unless BENCH_SBSUITE names the binary to measure.
# Run it alone on the machine (`flock /tmp/sbsuite-tests.lock bench/lua-compare.sh`).
set -euo pipefail
cd "$(dirname "$0")/.."
QUICK=0
if [ "${1:-}" = --quick ]; then QUICK=1; shift; fi
DRIVERS="mysql pgsql"
case "${1:-}" in mysql|pgsql) DRIVERS=$1; shift ;; both) shift ;; esac
if [ "$QUICK" = 1 ]; then
  ROUNDS=${1:-1}; SECS=${2:-2}; THREADS=${3:-"4"}
else
  ROUNDS=${1:-5}; SECS=${2:-10}; THREADS=${3:-"4 32"}
fi
DB=${BENCH_DB:-sbsuite_bench_lua}
TABLES=${BENCH_TABLES:-4}
SIZE=${BENCH_TABLE_SIZE:-10000}
SCRIPTS="oltp_point_select oltp_read_write"

command -v sysbench >/dev/null || { echo "sysbench 1.0.20 is needed: apt-get install sysbench" >&2; exit 1; }
sysbench --version | grep -q '^sysbench 1\.0\.20' || { echo "sysbench is not 1.0.20: $(sysbench --version)" >&2; exit 1; }
if [ ! -x /usr/bin/time ]; then
  apt-get install -y time >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y time >/dev/null; }
fi
if [ -n "${BENCH_SBSUITE:-}" ]; then
  SBS=$BENCH_SBSUITE
else
  cargo build --release --locked --quiet
  SBS="${CARGO_TARGET_DIR:-$PWD/target}/release/sbsuite"
fi
TMP=$(mktemp -d)
export PGSSLMODE=disable

# db_args DRIVER: the connection options of both tools
db_args() {
  if [ "$1" = pgsql ]; then
    echo "--db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port=5432 --pgsql-user=postgres --pgsql-db=$DB"
  else
    echo "--db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=3306 --mysql-user=root --mysql-db=$DB"
  fi
}

create_db() {
  if [ "$1" = pgsql ]; then
    local pg=(psql --host=127.0.0.1 --port=5432 --username=postgres --no-psqlrc -qAt)
    [ "$("${pg[@]}" -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" = 1 ] \
      || "${pg[@]}" -c "CREATE DATABASE $DB"
  else
    mysql --user=root --host=127.0.0.1 --port=3306 -e "CREATE DATABASE IF NOT EXISTS $DB"
  fi
}

# data DRIVER prepare|cleanup: sysbench's own prepare/cleanup of the sbtest tables
data() {
  # shellcheck disable=SC2046
  sysbench oltp_read_write $(db_args "$1") --tables="$TABLES" --table-size="$SIZE" "$2" > /dev/null
}

PREPARED=""
finish() {
  for d in $PREPARED; do data "$d" cleanup || true; done
  rm -rf "$TMP"
}
trap finish EXIT

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a > 0) printf "%.3f", b/a; else print "nan"}'; }

# one SIDE DRIVER SCRIPT THREADS: one measured run; prints "qps cpu_us_per_query"
one() {
  local side=$1 driver=$2 script=$3 threads=$4 cmd
  case $side in
    sysbench) cmd=(sysbench "$script") ;;
    lua) cmd=("$SBS" sysbench --lua "$script") ;;
    native) cmd=("$SBS" sysbench "$script") ;;
  esac
  # shellcheck disable=SC2046
  if ! /usr/bin/time -f "%U %S" -o "$TMP/time" "${cmd[@]}" $(db_args "$driver") \
      --tables="$TABLES" --table-size="$SIZE" --threads="$threads" --time="$SECS" \
      --report-interval=0 run > "$TMP/out" 2>&1; then
    echo "$side $driver $script t$threads failed:" >&2
    tail -n 20 "$TMP/out" >&2
    exit 1
  fi
  awk -v t="$(awk '{print $1 + $2}' "$TMP/time")" '
    $1 == "queries:" {n = $2; q = $3; gsub(/\(/, "", q)}
    END {if (n > 0) printf "%s %.3f\n", q, t / n * 1e6; else print "0 0"}' "$TMP/out"
}

echo "load before: $(uptime)"
echo "case,rounds,seconds,sysbench_qps,lua_qps,native_qps,lua_qps_ratio,native_qps_ratio,sysbench_cpu_us_per_q,lua_cpu_us_per_q,native_cpu_us_per_q,lua_cpu_ratio,native_cpu_ratio,lua_ok"
for driver in $DRIVERS; do
  create_db "$driver"
  data "$driver" cleanup
  data "$driver" prepare
  PREPARED="$PREPARED $driver"
  for script in $SCRIPTS; do
    for t in $THREADS; do
      : > "$TMP/sysbench"; : > "$TMP/lua"; : > "$TMP/native"
      for r in $(seq "$ROUNDS"); do
        if [ $((r % 2)) -eq 1 ]; then order="sysbench lua native"; else order="native lua sysbench"; fi
        for side in $order; do
          one "$side" "$driver" "$script" "$t" >> "$TMP/$side"
        done
      done
      sq=$(cut -d' ' -f1 "$TMP/sysbench" | median); lq=$(cut -d' ' -f1 "$TMP/lua" | median)
      nq=$(cut -d' ' -f1 "$TMP/native" | median)
      sc=$(cut -d' ' -f2 "$TMP/sysbench" | median); lc=$(cut -d' ' -f2 "$TMP/lua" | median)
      nc=$(cut -d' ' -f2 "$TMP/native" | median)
      lqr=$(ratio "$sq" "$lq"); lcr=$(ratio "$sc" "$lc")
      ok=$(awk -v q="$lqr" -v c="$lcr" 'BEGIN {print (q >= 0.95 && c <= 1.0) ? "yes" : "no"}')
      echo "$driver-${script#oltp_}-t$t,$ROUNDS,$SECS,$sq,$lq,$nq,$lqr,$(ratio "$sq" "$nq"),$sc,$lc,$nc,$lcr,$(ratio "$sc" "$nc"),$ok"
    done
  done
done
echo "load after: $(uptime)"
