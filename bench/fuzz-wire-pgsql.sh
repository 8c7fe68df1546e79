#!/usr/bin/env bash
# Protocol fuzzing of the PostgreSQL wire client for SECS seconds (#13): runs the lib test
# db::pgsql::wire::fuzz (random and mutated server transcripts through the startup, query,
# query_rows, prepare, execute and COPY paths, over a socket pair, max_packet 1 MiB, 300 ms
# timeouts) once, with a fresh seed, and prints the cases run and the panics or hangs found.
#
#   bench/fuzz-wire-pgsql.sh [SECS=600]
#
# The output is kept in target/fuzz-wire-pgsql/seed-<seed>.log; rerun the whole run with
#   SBSUITE_FUZZ_SEED=<seed> SBSUITE_FUZZ_SECS=<secs> cargo test --lib db::pgsql::wire::fuzz -- --nocapture
# or one failing case with the SBSUITE_FUZZ_CASE=<case> the log names.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-600}
out=target/fuzz-wire-pgsql
mkdir -p "$out"
cargo test --lib --no-run >/dev/null 2>&1 || cargo test --lib --no-run
seed=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')
log="$out/seed-$seed.log"
status=0
# A hang fails the test itself (its watchdog); the timeout only guards against the harness.
SBSUITE_FUZZ_SEED=$seed SBSUITE_FUZZ_SECS=$secs \
  timeout $((secs + 300)) cargo test --quiet --lib db::pgsql::wire::fuzz -- --nocapture >"$log" 2>&1 || status=$?
grep -o 'fuzzed [0-9]* cases.*' "$log" | sed 's/^/fuzz-wire-pgsql: /' || true
if [ "$status" -ne 0 ]; then
  echo "fuzz-wire-pgsql: FAILED (exit $status, seed $seed): $log" >&2
  grep -m3 -A2 'panicked at\|SBSUITE_FUZZ_CASE=' "$log" >&2 || tail -5 "$log" >&2
fi
[ "$status" -eq 0 ]
