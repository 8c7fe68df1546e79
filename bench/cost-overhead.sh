#!/usr/bin/env bash
# What does reading a step's cost (issue #29: server counters, /proc) cost the client?
# ("reading counters must add < 1 % to a run step's client CPU").
#
# Runs the same suite — oltp_read_only on MariaDB at 1 and 2 threads, 2 repetitions: 4 run
# steps on data prepared once (`dataset = "existing"`, so prepare and cleanup are not in the
# figure) — ROUNDS times on three sides: `off` (`server_cost = false`), `on` (`server_cost =
# true`, `report_interval = 0`: the readings before and after each step) and `ticks`
# (`server_cost = true`, `report_interval = 1`: also a reading at every 1 s tick), their order
# rotated from round to round (so drift hits all alike). Client CPU is user + sys
# of the whole sbsuite process from /usr/bin/time, divided by the events of its run steps
# (results.csv): the throughput of a shared machine varies from run to run, and the client's
# CPU with it, while its CPU per event does not.
# Prints per side the median client CPU per event, the ratio on/off (1.00: no cost; the
# spread of the single rounds' ratios shows the noise), and the median CPU seconds.
# On a shared machine that comparison is noisier than the cost it looks for, so the runs with
# `server_cost = true` also measure it directly: server_counters.csv's
# `client.cost_read_cpu_ms` (the reading thread's CPU, RUSAGE_THREAD, around each reading, the
# ticks' included) against `client.cpu_ms` (the step's client CPU without it), per step: the
# figure to quote, for `on` and `ticks`; and `client.cost_tick_cpu_ms` (the ticks' part of it)
# over the step's intervals.csv rows: the CPU of one reading at a tick.
#
#   bench/cost-overhead.sh [ROUNDS] [SECONDS]
#   defaults: 5 rounds, 5 s per run step
#   MYSQL_HOST (127.0.0.1), MYSQL_PORT (3306), MYSQL_USER (root): the server
#   SERVER_HOST (e.g. ssh:client1), SERVER_SSH_CONFIG (an ssh_config file): the "on" and
#   "ticks" runs read the server's process and host over ssh (`[target] server_host`), e.g. on a
#   host of `bench/netns-hosts.sh up` (which shares this machine's /proc); the direct figures
#   then include the ssh processes' CPU, and the reading's wall time (`client.cost_read_wall_ms`)
#
# Builds sbsuite in release mode (`PROFILE=debug` uses the debug build: the reading costs more
# there in absolute terms, the steps more still). Run it under `flock /tmp/sbsuite-tests.lock`
# so that no test reads the server's counters meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
SECS=${2:-5}
HOST=${MYSQL_HOST:-127.0.0.1}
PORT=${MYSQL_PORT:-3306}
USER_=${MYSQL_USER:-root}
DB=sbsuite_cost_bench
[ -x /usr/bin/time ] || { echo "/usr/bin/time is not installed (apt-get install time)" >&2; exit 2; }
PROFILE=${PROFILE:-release}
if [ "$PROFILE" = debug ]; then cargo build --quiet; else cargo build --release --quiet; fi
BIN="${CARGO_TARGET_DIR:-$PWD/target}/$PROFILE/sbsuite"
TMP=$(mktemp -d)
SB=(--db-driver=mysql --mysql-host="$HOST" --mysql-port="$PORT" --mysql-user="$USER_"
    --mysql-db="$DB" --tables=1 --table-size=10000)
cleanup() {
  "$BIN" sysbench oltp_read_only "${SB[@]}" cleanup > /dev/null 2>&1 || true
  mysql -h "$HOST" -P "$PORT" -u "$USER_" -e "DROP DATABASE IF EXISTS $DB" || true
  rm -rf "$TMP"
}
trap cleanup EXIT
mysql -h "$HOST" -P "$PORT" -u "$USER_" -e "DROP DATABASE IF EXISTS $DB; CREATE DATABASE $DB"
"$BIN" sysbench oltp_read_only "${SB[@]}" prepare > /dev/null

REMOTE=""
if [ -n "${SERVER_HOST:-}" ]; then
  REMOTE="server_host = \"$SERVER_HOST\""
  [ -n "${SERVER_SSH_CONFIG:-}" ] && REMOTE="$REMOTE
server_ssh_options = [\"-F\", \"$SERVER_SSH_CONFIG\"]"
fi
for side in on off ticks; do
  cost=true; remote=$REMOTE; [ "$side" = off ] && { cost=false; remote=""; }
  interval=0; [ "$side" = ticks ] && interval=1
  cat > "$TMP/$side.toml" <<EOF
[suite]
name = "cost-overhead"
repeat = 2
dataset = "existing"
server_cost = $cost
[target]
driver = "mysql"
hosts = ["$HOST:$PORT"]
user = "$USER_"
database = "$DB"
$remote
[defaults]
workload = "oltp_read_only"
time = $SECS
report_interval = $interval
tables = 1
table_size = 10000
[matrix]
threads = [1, 2]
EOF
done
STEPS=4

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# one off|on|ticks ROUND: appends "side round cpu_s cpu_per_event_us" to $TMP/rows
one() {
  local side=$1 round=$2
  rm -rf "$TMP/res"
  /usr/bin/time -f "%U %S" -o "$TMP/time" \
    "$BIN" run "$TMP/$side.toml" --progress off --results-dir "$TMP/res" > /dev/null 2> "$TMP/err" \
    || { cat "$TMP/err" >&2; exit 1; }
  local events
  events=$(python3 -c 'import csv,glob,sys; print(sum(int(r["events"]) for f in glob.glob(sys.argv[1] + "/*/*/results.csv") for r in csv.DictReader(open(f))))' "$TMP/res")
  awk -v s="$side" -v r="$round" -v e="$events" '{print s, r, $1 + $2, ($1 + $2) * 1e6 / e}' "$TMP/time" >> "$TMP/rows"
  if [ "$side" != off ]; then
    python3 - "$TMP/res" "$side" >> "$TMP/direct" <<'PY'
import csv, glob, sys
d = {}
for f in glob.glob(sys.argv[1] + "/*/*/server_counters.csv"):
    for r in csv.DictReader(open(f)):
        d.setdefault(r["step"], {})[r["counter"]] = float(r["delta"])
ticks = {}
for f in glob.glob(sys.argv[1] + "/*/*/intervals.csv"):
    for r in csv.DictReader(open(f)):
        ticks[r["step"]] = ticks.get(r["step"], 0) + 1
for step, c in d.items():
    tick = c.get("client.cost_tick_cpu_ms", 0.0)
    n = ticks.get(step, 0)
    print(sys.argv[2], c["client.cost_read_cpu_ms"], c["client.cpu_ms"],
          100 * c["client.cost_read_cpu_ms"] / c["client.cpu_ms"], n,
          tick / n if n else 0, 100 * tick / c["client.cpu_ms"],
          c.get("client.cost_read_wall_ms", float("nan")), "server_process.cpu_ms" in c)
PY
  fi
}

: > "$TMP/rows"; : > "$TMP/direct"
SIDES=(off on ticks)
for round in $(seq 1 "$ROUNDS"); do
  for k in 0 1 2; do one "${SIDES[$(((round + k) % 3))]}" "$round"; done
done

col() { awk -v s="$1" -v c="$2" '$1 == s {print $c}' "$TMP/rows" | median; }
dcol() { awk -v s="$1" -v c="$2" '$1 == s {print $c}' "$TMP/direct" | median; }
dmax() { awk -v s="$1" -v c="$2" '$1 == s {print $c}' "$TMP/direct" | sort -g | tail -1; }
ratios() {
  awk -v s="$1" '{cpu[$1, $2] = $4} END {for (k in cpu) {split(k, p, SUBSEP); if (p[1] == s) printf "%.3f\n", cpu[k] / cpu["off", p[2]]}}' "$TMP/rows" | sort -g | tr '\n' ' '
}
off=$(col off 4)
echo "profile $PROFILE, $ROUNDS rounds, $STEPS run steps of $SECS s per run (oltp_read_only, 1 and 2 threads)"
for side in on ticks; do
  printf "client CPU per event (median): off %.2f us  %s %.2f us  ratio %s/off %.4f (single rounds: %s)\n" \
    "$off" "$side" "$(col $side 4)" "$side" "$(echo "$(col $side 4) / $off" | bc -l)" "$(ratios $side)"
done
printf "client CPU s per run (median): off %.3f  on %.3f  ticks %.3f\n" "$(col off 3)" "$(col on 3)" "$(col ticks 3)"
for side in on ticks; do
  echo "direct, $side, per run step ($(awk -v s=$side '$1 == s' "$TMP/direct" | wc -l) steps, median $(dcol $side 5) ticks): reading CPU ms median $(dcol $side 2), max $(dmax $side 2); step client CPU ms median $(dcol $side 3); reading / step client CPU median $(dcol $side 4) %, max $(dmax $side 4) %"
done
echo "the ticks alone (client.cost_tick_cpu_ms): per tick median $(dcol ticks 6) ms, max $(dmax ticks 6) ms; / step client CPU median $(dcol ticks 7) %, max $(dmax ticks 7) %"
echo "reading wall ms per run step (on): median $(dcol on 8), max $(dmax on 8); steps with the server's process CPU: $(grep -c True "$TMP/direct") of $(wc -l < "$TMP/direct")"
