#!/usr/bin/env bash
# Side-by-side speed of sbsuite and sysbench 1.0.20 on this machine. For every case, the two run
# alternately (A/B in every round, same options, same machine) so that machine noise hits both
# alike; the script prints the median of each, the ratio sbsuite/sysbench of the medians, and
# the smallest and largest ratio of one round's pair (the spread the machine's noise causes).
#
#   bench/sysbench-compare.sh [ROUNDS] [SECONDS] [CASE...]     (default: 5 rounds of 5 s, all cases)
#
# Cases live in bench/cases/*.sh; each defines `case_<name>` functions that call `ab` (below).
# Installs sysbench from the system packages when missing (as root); builds sbsuite in release,
# unless SBSUITE names the binary to measure (e.g. an older build, for a before/after table).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
SECS=${2:-5}
shift $(( $# > 2 ? 2 : $# )) || true
if ! command -v sysbench >/dev/null; then
  echo "installing sysbench from the system packages" >&2
  apt-get install -y sysbench >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y sysbench >/dev/null; }
fi
if [ -z "${SBSUITE:-}" ]; then
  cargo build --release --quiet
  SBSUITE=$PWD/target/release/sbsuite
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export ROUNDS SECS SBSUITE TMP

median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# sbs_metric COLUMN KEY=VALUE...: runs one sbsuite step of bench/one.toml with the given
# options (in a scratch directory) and prints COLUMN of its results.csv row.
sbs_metric() {
  local col=$1; shift
  local sets=()
  for kv in "$@"; do sets+=(--set "$kv"); done
  rm -rf "$TMP/res"
  (cd "$TMP/work" && "$SBSUITE" run "$OLDPWD/bench/one.toml" --quiet --results-dir "$TMP/res" \
     --set time="$SECS" --set report_interval=0 "${sets[@]}" > "$TMP/sbs.out")
  python3 -c "import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); print(r[0][sys.argv[2]])" \
    "$(find "$TMP/res" -name results.csv)" "$col"
}

# sys_metric AWK_PROGRAM SYSBENCH_ARGS...: runs sysbench (in the scratch directory) and prints
# what the awk program extracts from its output.
sys_metric() {
  local prog=$1; shift
  (cd "$TMP/work" && sysbench "$@" --time="$SECS" run) | awk "$prog"
}

# ab NAME UNIT HIGHER_IS_BETTER SYSBENCH_CMD SBSUITE_CMD: alternates the two commands ROUNDS
# times, each printing one number, then prints the CSV line of the case. HIGHER_IS_BETTER is 1
# for rates (target ratio >= 1) and 0 for times (target ratio <= 1).
ab() {
  local name=$1 unit=$2 higher=$3 sys_cmd=$4 sbs_cmd=$5
  : > "$TMP/a"; : > "$TMP/b"
  for _ in $(seq "$ROUNDS"); do
    eval "$sys_cmd" >> "$TMP/a"
    eval "$sbs_cmd" >> "$TMP/b"
  done
  local a b spread
  a=$(median < "$TMP/a"); b=$(median < "$TMP/b")
  # Per-round ratios b_i/a_i of the alternating pairs: their min and max.
  spread=$(paste -d' ' "$TMP/a" "$TMP/b" | awk '$1 > 0 {r = $2 / $1; if (n++ == 0 || r < lo) lo = r; if (n == 1 || r > hi) hi = r}
    END {if (n) printf "%.3f,%.3f", lo, hi; else printf "nan,nan"}')
  local goal=">= 1.00"
  [ "$higher" = 1 ] || goal="<= 1.00"
  echo "$name,$unit,$ROUNDS,$SECS,$a,$b,$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", b/a}'),$spread,$goal"
}
export -f median sbs_metric sys_metric

mkdir -p "$TMP/work"
for f in bench/cases/*.sh; do source "$f"; done
echo "case,unit,rounds,seconds,sysbench_median,sbsuite_median,ratio_sbsuite_over_sysbench,round_ratio_min,round_ratio_max,target"
cases=("$@")
if [ ${#cases[@]} -eq 0 ]; then
  mapfile -t cases < <(declare -F | awk '{print $3}' | grep '^case_' | sed 's/^case_//')
fi
for c in "${cases[@]}"; do "case_$c"; done
