#!/usr/bin/env bash
# Protocol decoder fuzzing for SECS seconds per target (#13): runs each target's fuzz test (a
# lib test that feeds random and mutated server transcripts to the wire client, see
# src/db/mysql/wire/fuzz.rs and src/db/pgsql/wire/fuzz.rs) once with a fresh seed and a budget of SECS, and prints the cases
# run, the failures (panics and hangs) and the slowest case per target. Exit status 1 when a
# target failed.
#
#   bench/fuzz-wire.sh [SECS=600] [TARGET...]     targets: mysql pgsql (default: all)
#
# A failing target's output is kept in target/fuzz-wire/<target>-<seed>.log; its report names
# the seed and each failing case's seed; rerun a case alone with
#   SBSUITE_FUZZ_CASE_SEED=<case seed> cargo test --lib <test> -- --nocapture
#
# Adding a target: a function fuzz_<name> that runs its test through run_target (below), and
# its name in ALL.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-600}
shift || true
ALL="mysql pgsql"
targets=${*:-$ALL}
out=target/fuzz-wire
mkdir -p "$out"

failed=0

# run_target NAME TEST STATS: runs lib test TEST for $secs with a fresh seed and reports the
# line it prints that starts with the pattern STATS (cases run, failures, seed).
run_target() {
  local name=$1 test=$2 prefix=$3
  local seed log status=0 stats
  seed=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')
  log="$out/$name-$seed.log"
  cargo test --locked --lib "$test" --no-run >/dev/null 2>&1 || cargo test --locked --lib "$test" --no-run
  SBSUITE_FUZZ_SECS=$secs SBSUITE_FUZZ_SEED=$seed \
    timeout $((secs + 300)) cargo test --locked --quiet --lib "$test" -- --nocapture >"$log" 2>&1 || status=$?
  stats=$(grep -o "$prefix.*" "$log" || true)
  if [ -z "$stats" ] || [ "$status" -ne 0 ]; then
    failed=1
    echo "fuzz-wire $name: FAILED (exit $status, seed $seed): $log" >&2
      grep -m5 'case .*seed\|panicked at\|SBSUITE_FUZZ_CASE=' "$log" >&2 || tail -5 "$log" >&2
  else
    rm -f "$log"
  fi
  echo "fuzz-wire $name: ${stats:-no stats line} (exit $status)"
}

# The MySQL client (src/db/mysql/wire/fuzz.rs): handshake, query, query_i64, query_rows,
# prepare and execute.
fuzz_mysql() {
  run_target mysql db::mysql::wire::fuzz::random_and_mutated_server_transcripts_never_panic_or_hang 'fuzz-mysql-stats: '
}

# The PostgreSQL client (src/db/pgsql/wire/fuzz.rs): startup, query, query_rows, prepare,
# execute and COPY; a failing case is rerun alone with the SBSUITE_FUZZ_CASE=… its log names.
fuzz_pgsql() {
  run_target pgsql db::pgsql::wire::fuzz::fuzzed_server_transcripts_never_panic_hang_or_bloat 'fuzzed [0-9]* cases'
}

for t in $targets; do
  if ! declare -F "fuzz_$t" >/dev/null; then
    echo "fuzz-wire: unknown target \`$t\` (targets: $ALL)" >&2
    exit 2
  fi
  "fuzz_$t"
done
exit "$failed"
