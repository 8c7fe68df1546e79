#!/usr/bin/env bash
# Three local clients × 4 threads (`[clients] list = ["local:3"]`) against one process × 12
# threads, same workload, same server, in alternating rounds (ABBA: clients first in odd
# rounds, one process first in even ones). Prints per round and as medians: the events/s of
# both and their ratio (clients / one process), the coordinator's own CPU while the run step is
# measured as a percentage of one core per client (utime + stime of the coordinator process
# only, from /proc/<pid>/stat, between its `Threads started!` and the end of the merged report:
# the agents' CPU is not in it), and the start skew the coordinator recorded.
#
#   bench/clients-compare.sh [mysql|pgsql] [ROUNDS] [SECONDS] [WORKLOAD]
#   defaults: mysql, 6 rounds, 10 s, oltp_read_only
#
# mysql: a local server reachable as root over 127.0.0.1:3306; pgsql: a local PostgreSQL
# reachable as postgres over 127.0.0.1:5432. BENCH_DB names the database (default
# sbsuite_bench_clients, created if missing; each round's tables are dropped by its cleanup).
# Builds sbsuite in release mode (in $CARGO_TARGET_DIR when set); SBS_BIN runs another binary
# instead (e.g. target/debug/sbsuite to try the script quickly).
set -euo pipefail
cd "$(dirname "$0")/.."
DRIVER=mysql
case "${1:-}" in mysql|pgsql) DRIVER=$1; shift ;; esac
ROUNDS=${1:-6}
SECS=${2:-10}
WORKLOAD=${3:-oltp_read_only}
DB=${BENCH_DB:-sbsuite_bench_clients}
if [ -n "${SBS_BIN:-}" ]; then
  SBS=$(realpath "$SBS_BIN")
else
  cargo build --release --quiet
  SBS="${CARGO_TARGET_DIR:-$PWD/target}/release/sbsuite"
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
TCK=$(getconf CLK_TCK)
echo "load before: $(uptime)"
if [ "$DRIVER" = pgsql ]; then
  export PGSSLMODE=disable
  pg() { psql --host=127.0.0.1 --port=5432 --username=postgres --no-psqlrc -qAt "$@"; }
  [ "$(pg -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" = 1 ] || pg -c "CREATE DATABASE $DB"
  TARGET="driver = \"pgsql\"
hosts = [\"127.0.0.1:5432\"]
user = \"postgres\"
database = \"$DB\"
ssl = \"disabled\""
else
  mysql --user=root --host=127.0.0.1 -e "CREATE DATABASE IF NOT EXISTS $DB"
  TARGET="driver = \"mysql\"
hosts = [\"127.0.0.1:3306\"]
user = \"root\"
database = \"$DB\""
fi

# One suite per side; each round prepares and cleans up its own small dataset.
suite() { # NAME CLIENTS_SECTION
  cat <<EOF
[suite]
name = "$1"
$2
[target]
$TARGET

[defaults]
workload = "$WORKLOAD"
tables = 4
table_size = 10000
threads = 12
time = $SECS
report_interval = 1
EOF
}
suite clients '[clients]
list = ["local:3"]
' > "$TMP/clients.toml"
suite single '' > "$TMP/single.toml"

# The value of COLUMN in the last results.csv row under DIR.
col() { # DIR COLUMN
  python3 - "$1" "$2" <<'EOF'
import csv, glob, sys
rows = []
for f in glob.glob(sys.argv[1] + "/*/*/results.csv"):
    rows += list(csv.DictReader(open(f)))
print(rows[-1][sys.argv[2]] if rows else "")
EOF
}

# Runs one side; prints "eps coordinator_cpu_pct_per_client skew_ms".
run_side() { # SIDE
  local side=$1 out="$TMP/$1.out" res="$TMP/res-$1"
  rm -rf "$res"
  "$SBS" run "$TMP/$side.toml" --results-dir "$res" --progress off > "$out" 2> "$TMP/$side.err" &
  local pid=$! t0="" c0="" t1="" c1=""
  while kill -0 "$pid" 2>/dev/null; do
    if [ -z "$t0" ] && grep -q "Threads started!" "$out"; then
      t0=$(date +%s.%N); c0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    fi
    if [ -n "$t0" ] && [ -z "$t1" ] && grep -q "total number of events" "$out"; then
      t1=$(date +%s.%N); c1=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo "$c0")
    fi
    sleep 0.05
  done
  wait "$pid" || { echo "sbsuite run ($side) failed:" >&2; cat "$TMP/$side.err" >&2; exit 1; }
  local eps cpu skew
  eps=$(col "$res" eps)
  if [ "$side" = clients ] && [ -n "$t1" ]; then
    cpu=$(python3 -c "print(f'{($c1 - $c0) / $TCK / ($t1 - $t0) * 100 / 3:.2f}')")
    skew=$(col "$res" start_skew_ms)
  else
    cpu=-; skew=-
  fi
  echo "$eps $cpu $skew"
}

printf '%-6s %12s %12s %8s %22s %10s\n' round clients_eps single_eps ratio coord_cpu_%/client skew_ms
RATIOS=(); CPUS=(); SKEWS=()
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then
    a=$(run_side clients); b=$(run_side single)
  else
    b=$(run_side single); a=$(run_side clients)
  fi
  read -r ae acpu askew <<<"$a"
  read -r be _ _ <<<"$b"
  ratio=$(python3 -c "print(f'{$ae / $be:.3f}')")
  RATIOS+=("$ratio"); CPUS+=("$acpu"); SKEWS+=("$askew")
  printf '%-6s %12s %12s %8s %22s %10s\n' "$r" "$ae" "$be" "$ratio" "$acpu" "$askew"
done
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo "median ratio clients/single (events/s): $(med "${RATIOS[@]}")"
echo "median coordinator CPU, % of one core per client: $(med "${CPUS[@]}")"
echo "median start skew, ms: $(med "${SKEWS[@]}")"
echo "load after: $(uptime)"
