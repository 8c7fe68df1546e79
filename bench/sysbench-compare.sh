#!/usr/bin/env bash
# Side-by-side speed of sbsuite and sysbench 1.0.20 on this machine, alternating the two in
# every round so that machine noise hits both alike. Prints the median events/s of each and the
# ratio sbsuite/sysbench (>= 1.0 means sbsuite is at least as fast).
#
#   bench/sysbench-compare.sh [ROUNDS] [SECONDS]        (default 5 rounds of 5 s)
#
# Installs sysbench from the system packages when missing (as root) and builds sbsuite in
# release mode.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
secs=${2:-5}
if ! command -v sysbench >/dev/null; then
  echo "installing sysbench from the system packages" >&2
  apt-get install -y sysbench >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y sysbench >/dev/null; }
fi
sysbench --version
cargo build --release --quiet
sb=target/release/sbsuite
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

echo "workload,threads,rounds,seconds,sysbench_eps_median,sbsuite_eps_median,ratio"
for threads in 1 2; do
  : > "$tmp/sys" ; : > "$tmp/sbs"
  for r in $(seq "$rounds"); do
    sysbench cpu --threads="$threads" --time="$secs" run \
      | awk '/events per second:/ {print $4}' >> "$tmp/sys"
    rm -rf "$tmp/res"
    "$sb" run suites/quickstart.toml --quiet --results-dir "$tmp/res" \
      --set time="$secs" --set report_interval=0 --set "matrix.threads=[$threads]" > /dev/null
    python3 -c "import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); print(r[0]['eps'])" \
      "$(find "$tmp/res" -name results.csv)" >> "$tmp/sbs"
  done
  a=$(median < "$tmp/sys"); b=$(median < "$tmp/sbs")
  echo "cpu,$threads,$rounds,$secs,$a,$b,$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", b/a}')"
done
