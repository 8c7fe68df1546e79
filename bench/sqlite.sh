#!/usr/bin/env bash
# OLTP on embedded SQLite (the default target; no peer to compare with: sysbench has no SQLite
# driver). For each workload and thread count it runs a suite (prepare, run, cleanup) ROUNDS
# times and prints the medians of events/s, queries/s and the client CPU per event: user + sys
# of the sbsuite process read from /proc/PID/stat when the run step starts and when the cleanup
# starts (the --progress plain lines), so prepare and cleanup are not counted. SQLite runs
# inside the client, so this CPU is the database's work too.
#
#   bench/sqlite.sh [ROUNDS] [SECONDS] [WORKLOADS] [THREADS] [DIR]
#   defaults: 3 rounds, 5 s, every OLTP workload, "1 2", a fresh temporary directory
#
# Data: 4 tables × 10,000 rows (sysbench's table_size), file DIR/bench.db, the target's defaults
# (journal_mode wal, synchronous normal, busy_timeout 5000 ms). Builds sbsuite in release mode.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SECS=${2:-5}
WORKLOADS=${3:-"oltp_point_select oltp_read_only oltp_read_write oltp_write_only oltp_update_index oltp_update_non_index oltp_delete oltp_insert select_random_points select_random_ranges bulk_insert"}
THREADS=${4:-"1 2"}
cargo build --release --quiet
BIN="${CARGO_TARGET_DIR:-$PWD/target}/release/sbsuite"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
DIR=${5:-$TMP}
TICK=$(getconf CLK_TCK)

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# CPU seconds (user + sys, every thread) of process PID so far.
cpu() { awk -v t="$TICK" '{printf "%.2f\n", ($14 + $15) / t}' "/proc/$1/stat"; }

# one WORKLOAD THREADS: prints "events_per_s queries_per_s cpu_us_per_event"
one() {
  local w=$1 t=$2 pid line c0=0 c1=0
  cat > "$TMP/s.toml" <<EOF
[suite]
name = "sqlite-bench"
[target]
driver = "sqlite"
path = "$DIR/bench.db"
[defaults]
workload = "$w"
threads = $t
time = $SECS
report_interval = 0
tables = 4
table_size = 10000
EOF
  rm -rf "$TMP/res" "$TMP/fifo"
  mkfifo "$TMP/fifo"
  "$BIN" run "$TMP/s.toml" --progress plain --results-dir "$TMP/res" > /dev/null 2> "$TMP/fifo" &
  pid=$!
  while IFS= read -r line; do
    case "$line" in
      *"step 2/3 run"*) c0=$(cpu "$pid") ;;
      *"step 3/3 cleanup"*) c1=$(cpu "$pid") ;;
    esac
  done < "$TMP/fifo"
  wait "$pid"
  python3 - "$TMP/res" "$c0" "$c1" <<'PY'
import csv, glob, sys
row = next(csv.DictReader(open(glob.glob(sys.argv[1] + "/*/*/results.csv")[0])))
assert row["status"] == "ok", row
events = int(row["events"])
queries = int(row["reads"]) + int(row["writes"]) + int(row["other"])
seconds = float(row["seconds"])
cpu = float(sys.argv[3]) - float(sys.argv[2])
print(f"{events / seconds:.1f} {queries / seconds:.1f} {cpu / events * 1e6:.2f}")
PY
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "workload,threads,rounds,seconds,events_per_s,queries_per_s,cpu_us_per_event"
for w in $WORKLOADS; do
  for t in $THREADS; do
    : > "$TMP/r"
    for _ in $(seq "$ROUNDS"); do one "$w" "$t" >> "$TMP/r"; done
    eps=$(cut -d' ' -f1 "$TMP/r" | median)
    qps=$(cut -d' ' -f2 "$TMP/r" | median)
    us=$(cut -d' ' -f3 "$TMP/r" | median)
    echo "$w,$t,$ROUNDS,$SECS,$eps,$qps,$us"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
