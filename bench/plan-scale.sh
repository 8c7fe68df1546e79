#!/usr/bin/env bash
# Planning cost against suite size: generates suites of 10k, 20k, 40k and 100k matrix cells
# (5 OLTP workloads × threads 1..N × 2 table sizes), builds the release binary and prints, for
# each, the cells, the plan's steps, and the wall seconds, CPU seconds (user + system) and peak
# RSS of `sbsuite plan FILE > /dev/null` (text) and `sbsuite plan --format json FILE > /dev/null`.
# On a busy machine wall time includes waiting for a core; CPU time does not.
#
# A measurement, not a timed test: planning should stay linear in the number of cells (#12).
#
#   bench/plan-scale.sh                      # build release, all sizes
#   SIZES="10000 100000" bench/plan-scale.sh # chosen sizes (multiples of 10)
#   SBSUITE=/path/to/sbsuite bench/plan-scale.sh   # another binary (e.g. an older commit), no build
set -euo pipefail

cd "$(dirname "$0")/.."
SIZES=${SIZES:-"10000 20000 40000 100000"}
if [[ -z "${SBSUITE:-}" ]]; then
    cargo build --release --quiet
    SBSUITE=$PWD/target/release/sbsuite
fi
TIME=/usr/bin/time
[[ -x $TIME ]] || { echo "needs GNU time at $TIME" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# suite CELLS: 5 workloads × threads 1..CELLS/10 × 2 table sizes.
suite() {
    local threads=$(( $1 / 10 ))
    cat <<EOF
[suite]
name = "plan-scale-$1"

[defaults]
time = 10

[matrix]
workload = ["oltp_read_only", "oltp_write_only", "oltp_read_write", "oltp_point_select", "oltp_update_index"]
threads = { from = 1, to = $threads, step = 1 }
table_size = [10000, 20000]
EOF
}

# measure FILE [ARGS...]: "wall-seconds cpu-seconds peak-RSS-MB" of one `sbsuite plan` with
# stdout discarded.
measure() {
    local file=$1
    shift
    $TIME -f "%e %U %S %M" -o "$tmp/time" "$SBSUITE" plan "$@" "$file" > /dev/null
    awk '{ printf "%s %.2f %.0f", $1, $2 + $3, $4 / 1024 }' "$tmp/time"
}

echo "binary: $SBSUITE ($("$SBSUITE" --version))"
printf "%8s %8s %8s %8s %8s %8s %8s %8s\n" cells steps "text s" "cpu s" MB "json s" "cpu s" MB
for cells in $SIZES; do
    file=$tmp/scale-$cells.toml
    suite "$cells" > "$file"
    read -r text_s text_cpu text_mb <<< "$(measure "$file")"
    read -r json_s json_cpu json_mb <<< "$(measure "$file" --format json)"
    # "Suite `x` (file): N steps (...)": the plan's first line.
    steps=$("$SBSUITE" plan "$file" | head -n 1 | sed -E 's/.*\): ([0-9]+) steps.*/\1/')
    printf "%8s %8s %8s %8s %8s %8s %8s %8s\n" "$cells" "$steps" "$text_s" "$text_cpu" "$text_mb" \
        "$json_s" "$json_cpu" "$json_mb"
done
