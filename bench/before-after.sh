#!/usr/bin/env bash
# Two builds of sbsuite against sysbench 1.0.20 in one run: did a change cost speed?
# For each case, rounds rotate the order of the three sides (sysbench, before, after; each round
# starts with the next one) on the same server and the same prepared tables, and the script
# prints the median QPS and the median client CPU per query (user + sys CPU of the whole client
# process from /usr/bin/time, over the queries it reports) of each side, each build's ratios to
# sysbench, and after/before.
#
# Cases, on the local MariaDB (mysql) and PostgreSQL (pgsql), at each thread count:
#   native-*  the built-in engines: `sbsuite sysbench oltp_point_select|oltp_read_write run`
#   lua-*     sysbench's stock Lua scripts in sbsuite's LuaJIT: `sbsuite sysbench --lua NAME run`
#   custom-*  a custom TOML workload (`[workloads.point]`, oltp_point_select's statement) run by
#             `sbsuite run` of a one-step suite (loading the suite and writing its CSV count
#             against it); its sysbench side is `sysbench oltp_point_select`
#
#   bench/before-after.sh BEFORE_BIN AFTER_BIN [mysql|pgsql|both] [ROUNDS] [SECONDS] [THREADS]
#   defaults: both, 3 rounds, 5 s, "4 32"
#
# The binaries are release builds, e.g. `git worktree add /tmp/base OLD && cargo build --release`
# there. BENCH_DB names the database (default sbsuite_bench_ba; its sbtest tables are prepared
# once per driver and dropped at the end). CASES limits the families (default "native lua
# custom"). Run it alone on the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '2,22p' "$0" >&2; exit 2; }
BEFORE=$(realpath "$1"); AFTER=$(realpath "$2"); shift 2
for b in "$BEFORE" "$AFTER"; do [ -x "$b" ] || { echo "$b is not an executable" >&2; exit 2; }; done
DRIVERS="mysql pgsql"
case "${1:-}" in mysql|pgsql) DRIVERS=$1; shift ;; both) shift ;; esac
ROUNDS=${1:-3}
SECS=${2:-5}
THREADS=${3:-"4 32"}
CASES=${CASES:-"native lua custom"}
DB=${BENCH_DB:-sbsuite_bench_ba}
command -v sysbench >/dev/null || { echo "sysbench 1.0.20 is needed: apt-get install sysbench" >&2; exit 1; }
if [ ! -x /usr/bin/time ]; then
  apt-get install -y time >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y time >/dev/null; }
fi
TMP=$(mktemp -d)
export PGSSLMODE=disable

db_args() {
  if [ "$1" = pgsql ]; then
    echo "--db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port=5432 --pgsql-user=postgres --pgsql-db=$DB"
  else
    echo "--db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=3306 --mysql-user=root --mysql-db=$DB"
  fi
}
target() {
  if [ "$1" = pgsql ]; then
    printf 'driver = "pgsql"\nhosts = ["127.0.0.1:5432"]\nuser = "postgres"\ndatabase = "%s"\nssl = "disabled"\n' "$DB"
  else
    printf 'driver = "mysql"\nhosts = ["127.0.0.1:3306"]\nuser = "root"\ndatabase = "%s"\n' "$DB"
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
data() {
  # shellcheck disable=SC2046
  sysbench oltp_read_write $(db_args "$1") --tables=4 --table-size=10000 "$2" > /dev/null
}
PREPARED=""
finish() {
  for d in $PREPARED; do data "$d" cleanup || true; done
  rm -rf "$TMP"
}
trap finish EXIT

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a > 0) printf "%.3f", b/a; else print "nan"}'; }

# suite DRIVER THREADS: the one-step custom suite at $TMP/custom.toml
suite() {
  cat > "$TMP/custom.toml" <<EOF
[suite]
name = "custom-point"
results_dir = "$TMP/results"

[target]
$(target "$1")

[defaults]
time = $SECS
threads = $2

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

# one SIDE FAMILY DRIVER SCRIPT THREADS: one measured run; prints "qps cpu_us_per_query"
one() {
  local side=$1 family=$2 driver=$3 script=$4 t=$5 bin cmd
  case $side in before) bin=$BEFORE ;; after) bin=$AFTER ;; *) bin="" ;; esac
  if [ "$side" = sysbench ]; then
    cmd=(sysbench "$script")
  elif [ "$family" = lua ]; then
    cmd=("$bin" sysbench --lua "$script")
  elif [ "$family" = native ]; then
    cmd=("$bin" sysbench "$script")
  fi
  if [ "$family" = custom ] && [ "$side" != sysbench ]; then
    rm -rf "$TMP/results"
    if ! /usr/bin/time -f "%U %S" -o "$TMP/time" "$bin" run "$TMP/custom.toml" > "$TMP/out" 2>&1; then
      echo "$side $family $driver t$t failed:" >&2; tail -n 20 "$TMP/out" >&2; exit 1
    fi
    python3 - "$(find "$TMP/results" -name results.csv | head -n 1)" "$TMP/time" <<'EOF'
import csv, sys
row = next(csv.DictReader(open(sys.argv[1])))
n = sum(float(row[k]) for k in ("reads", "writes", "other"))
u, s = (float(x) for x in open(sys.argv[2]).read().split())
print(row["qps"], "%.3f" % ((u + s) / n * 1e6))
EOF
    return
  fi
  # shellcheck disable=SC2046
  if ! /usr/bin/time -f "%U %S" -o "$TMP/time" "${cmd[@]}" $(db_args "$driver") \
      --tables=4 --table-size=10000 --threads="$t" --time="$SECS" run > "$TMP/out" 2>&1; then
    echo "$side $family $driver $script t$t failed:" >&2; tail -n 20 "$TMP/out" >&2; exit 1
  fi
  awk -v t="$(awk '{print $1 + $2}' "$TMP/time")" '
    $1 == "queries:" {n = $2; q = $3; gsub(/\(/, "", q)}
    END {if (n > 0) printf "%s %.3f\n", q, t / n * 1e6; else print "0 0"}' "$TMP/out"
}

echo "before: $BEFORE ($("$BEFORE" --version))"
echo "after:  $AFTER ($("$AFTER" --version))"
echo "load before: $(uptime)"
echo "case,rounds,seconds,sysbench_qps,before_qps,after_qps,before_qps_ratio,after_qps_ratio,sysbench_cpu_us_per_q,before_cpu_us_per_q,after_cpu_us_per_q,before_cpu_ratio,after_cpu_ratio,after_over_before_qps,after_over_before_cpu"
for driver in $DRIVERS; do
  create_db "$driver"
  data "$driver" cleanup
  data "$driver" prepare
  PREPARED="$PREPARED $driver"
  for family in $CASES; do
    scripts="oltp_point_select oltp_read_write"
    [ "$family" = custom ] && scripts="oltp_point_select"
    for script in $scripts; do
      for t in $THREADS; do
        [ "$family" = custom ] && suite "$driver" "$t"
        : > "$TMP/sysbench"; : > "$TMP/before"; : > "$TMP/after"
        for r in $(seq "$ROUNDS"); do
          case $((r % 3)) in
            1) order="sysbench before after" ;; 2) order="before after sysbench" ;; *) order="after sysbench before" ;;
          esac
          for side in $order; do one "$side" "$family" "$driver" "$script" "$t" >> "$TMP/$side"; done
        done
        col() { cut -d' ' -f"$2" "$TMP/$1" | median; }
        sq=$(col sysbench 1); bq=$(col before 1); aq=$(col after 1)
        sc=$(col sysbench 2); bc=$(col before 2); ac=$(col after 2)
        name=${script#oltp_}
        [ "$family" = custom ] && name=point
        echo "$driver-$family-$name-t$t,$ROUNDS,$SECS,$sq,$bq,$aq,$(ratio "$sq" "$bq"),$(ratio "$sq" "$aq"),$sc,$bc,$ac,$(ratio "$sc" "$bc"),$(ratio "$sc" "$ac"),$(ratio "$bq" "$aq"),$(ratio "$bc" "$ac")"
      done
    done
  done
done
echo "load after: $(uptime)"
