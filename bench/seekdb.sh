#!/usr/bin/env bash
# seekdb, OceanBase's single-node kernel (the OceanBase SQL and storage engine, MySQL protocol,
# `SHOW PARAMETERS`, `ALTER SYSTEM SET`), as the OceanBase server of the tests
# (tests/all/oceanbase.rs) and of developers: root@127.0.0.1:2881, no password.
#
#   bench/seekdb.sh start    # install the pinned wheel if missing, start, wait until it answers
#   bench/seekdb.sh status   # exit 0 when a seekdb/OceanBase answers on 127.0.0.1:2881
#   bench/seekdb.sh stop     # stop the seekdb this script started (nothing else)
#
# Everything lives under SEEKDB_HOME (default: <repo>/target/seekdb), never a system path: the
# wheel's files in pylibseekdb-<version>/, the server's base directory (data, redo, logs) in
# base/ (kept between starts), the pid in seekdb.pid. The server is the binary inside the PyPI
# wheel `pylibseekdb` (Apache-2.0), installed with pip into its own directory (`--target`: no
# venv, no site-packages, and Debian's externally-managed Python does not object), pinned by
# version and sha256, for Python 3.11 on x86_64 whatever the local Python is (the server binary
# does not use Python). It needs pip (`apt-get install python3-pip`) and the `mysql` client.
# Sized small: a 1 GB data file (growing to 8 GB), a 2 GB log disk, a 2 GB memory budget
# (about 200 MB resident when idle; seekdb refuses to start with 1 GB); ready in a few seconds.
#
# start is idempotent: a seekdb of this script already running is left alone, and so is an
# OceanBase server that already answers on the port (not started here: stop never touches it).
# Anything else on the port is an error. Telemetry is off (TELEMETRY_ENABLED=false).
set -euo pipefail

VERSION=1.4.0.post1
WHEEL_SHA256=7c1c1e13148189af1332f69b896a818b674db3a4615c7caf1c9db05055738ad6
PORT=2881
repo=$(cd "$(dirname "$0")/.." && pwd)
home=${SEEKDB_HOME:-$repo/target/seekdb}
pkg=$home/pylibseekdb-$VERSION
bin=$pkg/pylibseekdb/seekdb
base=$home/base
pidfile=$home/seekdb.pid
# Bounded waits (seconds): for the first answer after start, and for the process to end on stop.
ready_timeout=${SEEKDB_READY_TIMEOUT:-180}
stop_timeout=60

say() { echo "seekdb: $*"; }
die() {
  echo "seekdb: $*" >&2
  exit 1
}

# Whether anything listens on the port (bash's /dev/tcp: no client needed).
listening() {
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null
}

# Whether a server answers `select 1` as root on the port.
answers() {
  mysql --host=127.0.0.1 --port="$PORT" --user=root --connect-timeout=2 -N -e 'select 1' >/dev/null 2>&1
}

server_version() {
  mysql --host=127.0.0.1 --port="$PORT" --user=root --connect-timeout=2 -N -e 'select version()' 2>/dev/null
}

# The pid of the seekdb this script started, when that process still runs (and is that seekdb:
# a pid reused by another program after a reboot does not count).
our_pid() {
  [ -f "$pidfile" ] || return 1
  local pid
  pid=$(cat "$pidfile")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "--base-dir $base " || return 1
  echo "$pid"
}

logs() {
  echo "seekdb's logs: $base/stdout.log and $base/log/seekdb.log" >&2
  if [ -f "$base/stdout.log" ]; then
    echo "--- last lines of $base/stdout.log" >&2
    tail -n 5 "$base/stdout.log" >&2
  fi
  if [ -f "$base/log/seekdb.log" ]; then
    echo "--- last ERROR lines of $base/log/seekdb.log" >&2
    grep -E '\] ERROR ' "$base/log/seekdb.log" | tail -n 5 | cut -c1-400 >&2 || true
  fi
}

install() {
  [ -x "$bin" ] && return 0
  command -v python3 >/dev/null || die "python3 is missing: it installs the seekdb wheel (apt-get install python3-pip)"
  python3 -m pip --version >/dev/null 2>&1 \
    || die "pip is missing: it installs the seekdb wheel (apt-get install python3-pip)"
  [ "$(uname -m)" = x86_64 ] || die "the pinned seekdb wheel is for x86_64 Linux, this is $(uname -m)"
  say "installing pylibseekdb==$VERSION (the seekdb server binary) into $pkg"
  mkdir -p "$home"
  local tmp req
  tmp=$(mktemp -d "$home/.install.XXXXXX")
  req=$tmp.req
  echo "pylibseekdb==$VERSION --hash=sha256:$WHEEL_SHA256" >"$req"
  if ! python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
    --no-deps --require-hashes --only-binary=:all: \
    --python-version 3.11 --implementation cp --abi cp311 --platform manylinux_2_28_x86_64 \
    --target "$tmp" -r "$req"; then
    rm -rf "$tmp" "$req"
    die "pip could not install pylibseekdb==$VERSION (network to PyPI? see above)"
  fi
  rm -f "$req"
  [ -x "$tmp/pylibseekdb/seekdb" ] || {
    rm -rf "$tmp"
    die "the wheel pylibseekdb==$VERSION has no executable pylibseekdb/seekdb"
  }
  rm -rf "$pkg"
  mv "$tmp" "$pkg"
}

start() {
  local pid
  if pid=$(our_pid); then
    if answers; then
      say "already running (pid $pid), $(server_version) on 127.0.0.1:$PORT"
      return 0
    fi
  elif answers; then
    local v
    v=$(server_version)
    case "$v" in
      *OceanBase*)
        say "$v already answers on 127.0.0.1:$PORT, not started by this script: using it (stop leaves it running)"
        return 0
        ;;
      *) die "127.0.0.1:$PORT is taken by another server ($v): stop it, seekdb needs the port" ;;
    esac
  fi
  if [ -z "${pid:-}" ] && listening; then
    die "127.0.0.1:$PORT is taken by a process that does not answer as a MySQL server with user root (ss -ltnp 'sport = :$PORT' names it): seekdb needs the port"
  fi
  command -v mysql >/dev/null || die "the mysql client is missing: it checks that seekdb answers (apt-get install mariadb-client)"
  install
  if [ -z "${pid:-}" ]; then
    rm -f "$pidfile"
    mkdir -p "$base"
    say "starting $bin on 127.0.0.1:$PORT, base dir $base"
    # Its own session (setsid): the caller's end or Ctrl-C does not take it down; stop does.
    (
      cd "$base"
      TELEMETRY_ENABLED=false exec setsid "$bin" --nodaemon --base-dir "$base" --port "$PORT" \
        --parameter datafile_size=1G --parameter datafile_maxsize=8G \
        --parameter log_disk_size=2G --parameter memory_budget=2G \
        >"$base/stdout.log" 2>&1 </dev/null
    ) &
    pid=$!
    echo "$pid" >"$pidfile"
  fi
  local t0=$SECONDS
  until answers; do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$pidfile"
      local rc=0
      wait "$pid" 2>/dev/null || rc=$?
      echo "seekdb: the server exited (status $rc) before it answered on 127.0.0.1:$PORT" >&2
      logs
      exit 1
    fi
    if [ $((SECONDS - t0)) -ge "$ready_timeout" ]; then
      echo "seekdb: no answer on 127.0.0.1:$PORT after ${ready_timeout} s (pid $pid still runs; bench/seekdb.sh stop ends it)" >&2
      logs
      exit 1
    fi
    sleep 0.5
  done
  say "ready after $((SECONDS - t0)) s (pid $pid): $(server_version)"
}

stop() {
  local pid
  if ! pid=$(our_pid); then
    rm -f "$pidfile"
    say "not running (from $home)"
    return 0
  fi
  kill -TERM "$pid"
  local t0=$SECONDS
  while kill -0 "$pid" 2>/dev/null; do
    if [ $((SECONDS - t0)) -ge "$stop_timeout" ]; then
      say "still running after ${stop_timeout} s: killing pid $pid"
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.2
  done
  rm -f "$pidfile"
  say "stopped (pid $pid)"
}

status() {
  local pid
  if pid=$(our_pid) && answers; then
    say "running (pid $pid, base dir $base): $(server_version) on 127.0.0.1:$PORT"
  elif answers; then
    local v
    v=$(server_version)
    say "$v answers on 127.0.0.1:$PORT (not started by this script from $home)"
    case "$v" in *OceanBase*) ;; *) return 1 ;; esac
  elif [ -n "${pid:-}" ]; then
    say "pid $pid runs but does not answer on 127.0.0.1:$PORT yet"
    logs
    return 1
  else
    say "not running"
    return 3
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  install) install ;;
  *)
    echo "usage: $0 start|stop|status|install" >&2
    exit 2
    ;;
esac
