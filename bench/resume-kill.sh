#!/usr/bin/env bash
# kill -9 at random moments, then `run --resume` (#13): for the quickstart and for a suite whose
# matrix axes are not in alphabetical order (a range axis first), TRIALS times each. A trial
# passes when the resume exits 0, every run step of plan.json has exactly one row in
# results.csv, every row is `ok`, and the working directory holds nothing the suite made
# (`sbtest.db*`, `test_file.*`). The kill moment is uniform between 0.2 s and the length of an
# uninterrupted run of the same suite, measured first. No database server is needed.
#
#   bench/resume-kill.sh [TRIALS] [BIN]
#   defaults: 20 trials, target/debug/sbsuite (built with `cargo build` when BIN is not given)
set -euo pipefail
cd "$(dirname "$0")/.."
TRIALS=${1:-20}
if [ -z "${2:-}" ]; then
  cargo build --quiet
  BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/sbsuite"
else
  BIN=$(realpath "$2")
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
while IFS='=' read -r name _; do
  case "$name" in SBSUITE_*) unset "$name" ;; esac
done < <(env)

cat >"$TMP/unsorted.toml" <<'EOF'
[suite]
name = "unsorted"

[defaults]
time = 1
report_interval = 1
tables = 1
table_size = 10000
cpu_max_prime = 5000
file_total_size = "16M"
file_test_mode = "rndrw"

[matrix]
threads = { from = 1, to = 2, factor = 2 }
workload = ["oltp_read_write", "cpu", "fileio"]
EOF

# 0 when RUN's results.csv has exactly one `ok` row per run step of its plan.json.
check_rows() {
  python3 - "$1" <<'EOF'
import csv, json, sys, collections
run = sys.argv[1]
plan = json.load(open(f"{run}/plan.json"))
planned = sorted(s["index"] for s in plan["steps"] if s["kind"] == "run")
rows = list(csv.DictReader(open(f"{run}/results.csv")))
count = collections.Counter(int(r["step"]) for r in rows)
bad = [r["step"] for r in rows if r["status"] != "ok"]
if sorted(count) != planned or any(n != 1 for n in count.values()) or bad:
    print(f"rows {dict(count)} for planned {planned}, not ok: {bad}")
    sys.exit(1)
EOF
}

# One suite: SUITE ARGS…; prints one line per trial and a summary.
trials() {
  local label=$1 suite=$2
  shift 2
  local work="$TMP/work-$label" results="$TMP/results-$label"
  mkdir -p "$work"
  local start end full
  start=$(date +%s.%N)
  (cd "$work" && "$BIN" run "$suite" "$@" --progress off --quiet --results-dir "$results/ref" >/dev/null 2>&1) ||
    { echo "== $label: the uninterrupted run failed" >&2; return 1; }
  end=$(date +%s.%N)
  full=$(echo "$end - $start" | bc)
  echo "== $label: an uninterrupted run takes ${full}s"
  local pass=0 n
  for n in $(seq 1 "$TRIALS"); do
    local delay out run rc left verdict
    delay=$(python3 -c "import random; print(round(random.uniform(0.2, $full), 2))")
    out="$results/t$n"
    (cd "$work" && exec "$BIN" run "$suite" "$@" --progress off --quiet --results-dir "$out" >/dev/null 2>&1) &
    local pid=$!
    sleep "$delay"
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    run=$(ls -d "$out"/*/* 2>/dev/null | head -1)
    if [ -z "$run" ]; then
      verdict="FAIL (no run directory)"
    else
      rc=0
      (cd "$work" && "$BIN" run --resume "$run" --progress off --quiet >/dev/null 2>"$TMP/err") || rc=$?
      left=$(cd "$work" && ls -d sbtest.db* test_file.* 2>/dev/null | wc -l)
      if [ "$rc" != 0 ]; then
        verdict="FAIL (resume exit $rc: $(tail -1 "$TMP/err"))"
      elif ! rows=$(check_rows "$run"); then
        verdict="FAIL ($rows)"
      elif [ "$left" != 0 ]; then
        verdict="FAIL ($left files left in the working directory)"
      else
        verdict="ok"
        pass=$((pass + 1))
      fi
    fi
    echo "   trial $n: kill -9 after ${delay}s, resume: $verdict"
    (cd "$work" && rm -f sbtest.db* test_file.*)
  done
  echo "== $label: $pass of $TRIALS trials passed"
  [ "$pass" = "$TRIALS" ]
}

status=0
trials quickstart "$PWD/suites/quickstart.toml" --set time=1 || status=1
trials unsorted "$TMP/unsorted.toml" || status=1
exit $status
