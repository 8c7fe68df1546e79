#!/usr/bin/env bash
# What does `--metrics` cost a run? (issue #18: "the metrics server adds no measurable cost").
#
# Runs a quickstart-like suite (cpu, and oltp_read_only on embedded SQLite, at 1 and 2
# threads) ROUNDS times without and with `--metrics 127.0.0.1:0`, alternating the two in every
# round (off/on, then on/off, so drift hits both alike), while a scraper reads /metrics every
# SCRAPE seconds during the runs with the endpoint (as Prometheus would, only more often:
# its default scrape interval is 15 s).
# Prints per workload and thread count the median events/s of each side and the ratio
# on/off: 1.00 is no cost; the spread of the ratios of single rounds shows the noise.
#
#   bench/metrics-overhead.sh [ROUNDS] [SECONDS] [SCRAPE]
#   defaults: 5 rounds, 5 s per run, a scrape every second
#
# Data: 1 table × 10,000 rows in a temporary directory. Builds sbsuite in release mode
# (`PROFILE=debug` uses the debug build instead: only to check that the script works).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
SECS=${2:-5}
SCRAPE=${3:-1}
command -v curl >/dev/null || { echo "curl is not installed" >&2; exit 2; }
PROFILE=${PROFILE:-release}
if [ "$PROFILE" = debug ]; then cargo build --quiet; else cargo build --release --quiet; fi
BIN="${CARGO_TARGET_DIR:-$PWD/target}/$PROFILE/sbsuite"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

cat > "$TMP/s.toml" <<EOF
[suite]
name = "metrics-overhead"
[target]
driver = "sqlite"
path = "$TMP/bench.db"
[defaults]
time = $SECS
report_interval = 0
cpu_max_prime = 10000
tables = 1
table_size = 10000
[matrix]
workload = ["cpu", "oltp_read_only"]
threads = [1, 2]
EOF

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# one off|on ROUND: appends "side round workload threads events_per_s" lines to $TMP/rows
one() {
  local side=$1 round=$2 pid addr="" line scraper=""
  rm -rf "$TMP/res"
  if [ "$side" = on ]; then
    rm -f "$TMP/fifo"; mkfifo "$TMP/fifo"
    "$BIN" run "$TMP/s.toml" --metrics 127.0.0.1:0 --progress off \
      --results-dir "$TMP/res" > /dev/null 2> "$TMP/fifo" &
    pid=$!
    while IFS= read -r line; do
      case "$line" in
        "[sbsuite] metrics: http://"*)
          addr=${line#\[sbsuite\] metrics: http://}
          ( while kill -0 "$pid" 2>/dev/null; do
              curl -s --noproxy '*' "http://$addr" > /dev/null || true
              sleep "$SCRAPE"
            done ) &
          scraper=$! ;;
      esac
    done < "$TMP/fifo"
    wait "$pid"
    [ -n "$scraper" ] && wait "$scraper" 2>/dev/null || true
  else
    "$BIN" run "$TMP/s.toml" --progress off --results-dir "$TMP/res" > /dev/null 2>&1
  fi
  python3 - "$TMP/res" "$side" "$round" >> "$TMP/rows" <<'PY'
import csv, glob, sys
for row in csv.DictReader(open(glob.glob(sys.argv[1] + "/*/*/results.csv")[0])):
    assert row["status"] == "ok", row
    eps = int(row["events"]) / float(row["seconds"])
    print(sys.argv[2], sys.argv[3], row["workload"], row["threads"], f"{eps:.1f}")
PY
}

: > "$TMP/rows"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then one off "$r"; one on "$r"; else one on "$r"; one off "$r"; fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "workload,threads,rounds,seconds,off_events_per_s,on_events_per_s,ratio_on_off,round_ratios_min_max"
for key in $(awk '{print $3 "/" $4}' "$TMP/rows" | sort -u); do
  w=${key%/*}; t=${key#*/}
  off=$(awk -v w="$w" -v t="$t" '$1=="off" && $3==w && $4==t {print $5}' "$TMP/rows" | median)
  on=$(awk -v w="$w" -v t="$t" '$1=="on" && $3==w && $4==t {print $5}' "$TMP/rows" | median)
  spread=$(awk -v w="$w" -v t="$t" '$3==w && $4==t {v[$1 " " $2]=$5; r[$2]=1}
    END {min=1e9; max=0; for (k in r) {x=v["on " k]/v["off " k]; if (x<min) min=x; if (x>max) max=x}
         printf "%.3f..%.3f", min, max}' "$TMP/rows")
  awk -v w="$w" -v t="$t" -v n="$ROUNDS" -v s="$SECS" -v a="$off" -v b="$on" -v sp="$spread" \
    'BEGIN {printf "%s,%s,%d,%d,%.1f,%.1f,%.3f,%s\n", w, t, n, s, a, b, b / a, sp}'
done
