#!/usr/bin/env bash
# Suite-file fuzzing for N minutes (#13): runs tests/all/fuzz_suite.rs round after round, each
# with a fresh seed, until the rounds have fuzzed N minutes in total (time spent building or
# waiting for a test runner set through CARGO_TARGET_<triple>_RUNNER does not count), and prints the
# cases run, the failing rounds (a panic, an error without a position, a case slower than
# 10 s, or a crash such as a stack overflow) and the slowest case.
#
#   bench/fuzz-suite.sh [MINUTES=10] [CASES_PER_ROUND=2000]
#
# A failing round's output is kept in target/fuzz-suite/seed-<seed>.log; rerun it with
#   SBSUITE_FUZZ_SEED=<seed> SBSUITE_FUZZ_CASES=<cases> cargo test --test all fuzz_suite:: -- --nocapture
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-10}
per_round=${2:-2000}
out=target/fuzz-suite
mkdir -p "$out"
cargo test --test all --no-run >/dev/null 2>&1 || cargo test --test all --no-run

budget_ms=$((minutes * 60 * 1000))
started=$(date +%s)
fuzzed_ms=0 rounds=0 cases=0 planned=0 failed=0 slowest=0 slowest_seed=-
while [ "$fuzzed_ms" -lt "$budget_ms" ]; do
  seed=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')
  log="$out/round.log"
  status=0
  SBSUITE_FUZZ_SEED=$seed SBSUITE_FUZZ_CASES=$per_round \
    timeout 900 cargo test --quiet --test all fuzz_suite:: -- --nocapture >"$log" 2>&1 || status=$?
  rounds=$((rounds + 1))
  stats=$(grep -o 'fuzz-suite-stats: .*' "$log" || true)
  if [ -n "$stats" ]; then
    n=$(sed 's/.* cases=\([0-9]*\).*/\1/' <<<"$stats")
    p=$(sed 's/.* planned=\([0-9]*\).*/\1/' <<<"$stats")
    us=$(sed 's/.* slowest_us=\([0-9]*\).*/\1/' <<<"$stats")
    ms=$(sed 's/.* elapsed_ms=\([0-9]*\).*/\1/' <<<"$stats")
    fuzzed_ms=$((fuzzed_ms + ms))
    cases=$((cases + n))
    planned=$((planned + p))
    if [ "$us" -gt "$slowest" ]; then
      slowest=$us slowest_seed=$seed
      cp "$log" "$out/slowest.log"
    fi
  fi
  if [ "$status" -ne 0 ]; then
    [ -n "$stats" ] || fuzzed_ms=$((fuzzed_ms + 1000))
    failed=$((failed + 1))
    cp "$log" "$out/seed-$seed.log"
    echo "round $rounds (seed $seed) FAILED (exit $status): $out/seed-$seed.log" >&2
    grep -m1 -A2 'panicked at\|fuzz-suite: seed .*:' "$log" >&2 || tail -5 "$log" >&2
  fi
done
echo "fuzz-suite: $((fuzzed_ms / 1000)) s fuzzed ($(($(date +%s) - started)) s wall), $rounds rounds, $cases cases run ($planned planned), $failed failing rounds (panics, unpositioned errors, slow cases, crashes)"
echo "fuzz-suite: slowest case $((slowest / 1000)) ms (seed $slowest_seed; the input is in $out/slowest.log)"
[ "$failed" -eq 0 ]
