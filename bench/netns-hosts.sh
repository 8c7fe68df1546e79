#!/usr/bin/env bash
# Client "hosts" on this machine (issue #17): N Linux network namespaces, each with its own
# address on a bridge and Debian's OpenSSH sshd on port 22, so the ssh transport of
# `[clients]` runs for real without a second machine. The host side of the bridge forwards
# 3306 and 5432 (socat) to MariaDB and PostgreSQL on 127.0.0.1, which are not reconfigured:
# the servers see the forwarder's 127.0.0.1, so their usual grants and pg_hba rules apply.
#
#   bench/netns-hosts.sh up   [--slot S] [--hosts N]   set up (tears down slot S first)
#   bench/netns-hosts.sh down [--slot S]               tear down
#   bench/netns-hosts.sh time [--rounds R]             measure setup, teardown, ssh round trips
#
# Slot S (default 0, at most 250) owns the subnet 10.217.S.0/24: the host side is 10.217.S.1,
# host i (1..N, default 3) is 10.217.S.(10+i), in namespace sbsuite-sS-cI, reached as
# `ssh -F /tmp/sbsuite-netns-S/ssh_config clientI` (keys, known_hosts and config are made per
# setup in that directory). examples/clients-ssh.toml uses slot 0; the tests
# (tests/common/netns.rs) take slots 1.. under a lock file each, so runs never collide, and
# `up` first removes whatever a crashed run of the same slot left behind.
# Needs root, iproute2, openssh-server, openssh-client and socat (.ci/run installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

cmd=${1:-}
[ $# -gt 0 ] && shift
SLOT=0
HOSTS=3
ROUNDS=20
while [ $# -gt 0 ]; do
  case "$1" in
    --slot) SLOT=$2; shift 2 ;;
    --hosts) HOSTS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    *) echo "netns-hosts.sh: unknown option $1 (expected --slot S, --hosts N, --rounds R)" >&2; exit 2 ;;
  esac
done
case "$SLOT" in ''|*[!0-9]*) echo "netns-hosts.sh: --slot must be 0..250" >&2; exit 2 ;; esac
case "$HOSTS" in ''|*[!0-9]*) echo "netns-hosts.sh: --hosts must be 1..200" >&2; exit 2 ;; esac
[ "$SLOT" -le 250 ] || { echo "netns-hosts.sh: --slot must be 0..250" >&2; exit 2; }
[ "$HOSTS" -ge 1 ] && [ "$HOSTS" -le 200 ] || { echo "netns-hosts.sh: --hosts must be 1..200" >&2; exit 2; }

DIR=/tmp/sbsuite-netns-$SLOT
NET=10.217.$SLOT
GW=$NET.1
BR=sbsbr$SLOT
NS_PREFIX=sbsuite-s$SLOT-c
SSHD=/usr/sbin/sshd

die() { echo "netns-hosts.sh: $*" >&2; exit 1; }

need() {
  [ "$(id -u)" = 0 ] || die "must run as root (network namespaces need CAP_SYS_ADMIN)"
  for tool in ip ssh ssh-keygen socat; do
    command -v "$tool" >/dev/null || die "$tool is missing: apt-get install -y iproute2 openssh-client socat"
  done
  [ -x "$SSHD" ] || die "$SSHD is missing: apt-get install -y openssh-server"
}

# The pid in pid file $1 when that process still runs the program $2.
pidfile_pid() {
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 0
  if [ -n "$pid" ] && grep -qa "$2" "/proc/$pid/cmdline" 2>/dev/null; then echo "$pid"; fi
}

# Whether process $1 still runs (a zombie does not).
alive() { [ -e "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }

down() {
  local ns pid pids=""
  for f in "$DIR"/fwd-*.pid; do [ -e "$f" ] && pids="$pids $(pidfile_pid "$f" socat)"; done
  # Everything still running in a namespace of this slot: sshd, its sessions, any agent.
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$NS_PREFIX[0-9]*$" || true); do
    pids="$pids $(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"
  done
  for pid in $pids; do kill -9 "$pid" 2>/dev/null || true; done
  # kill(2) returns before the process is gone: wait, so that `down` means down.
  for pid in $pids; do
    for _ in $(seq 1 100); do alive "$pid" || break; sleep 0.05; done
    ! alive "$pid" || die "process $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline")) survived kill -9"
  done
  # The host ends of the veth pairs first: deleting one end removes both at once, whereas
  # the kernel destroys a deleted namespace's devices later, in the background, and an `up`
  # right after would meet the old pair ("RTNETLINK answers: File exists").
  for link in $(slot_veths); do ip link del "$link" 2>/dev/null || true; done
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$NS_PREFIX[0-9]*$" || true); do
    ip netns del "$ns" 2>/dev/null || true
  done
  ip link del "$BR" 2>/dev/null || true
  for _ in $(seq 1 100); do
    [ -z "$(slot_veths)" ] && ! ip link show "$BR" >/dev/null 2>&1 && break
    sleep 0.05
  done
  [ -z "$(slot_veths)" ] || die "links of slot $SLOT are still there after 5 s: $(slot_veths)"
  ! ip link show "$BR" >/dev/null 2>&1 || die "bridge $BR is still there after 5 s"
  rm -rf "$DIR"
}

# The host-side veth links of this slot (sbs<S>h<I>), by name.
slot_veths() {
  ip -o link show 2>/dev/null | awk -F': ' '{sub(/@.*/, "", $2); print $2}' \
    | grep "^sbs${SLOT}h[0-9]*$" || true
}

# Waits until $1:$2 accepts a TCP connection (from the host namespace).
wait_port() {
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && return 0
    sleep 0.05
  done
  die "nothing listens on $1:$2 after 5 s${3:+ ($3)}"
}

up() {
  need
  down
  mkdir -p -m 700 "$DIR"
  mkdir -p -m 755 /run/sshd # sshd's privilege-separation directory
  ssh-keygen -q -t ed25519 -N '' -C "sbsuite-netns-$SLOT host" -f "$DIR/host_key"
  ssh-keygen -q -t ed25519 -N '' -C "sbsuite-netns-$SLOT user" -f "$DIR/id_ed25519"
  cp "$DIR/id_ed25519.pub" "$DIR/authorized_keys"
  cat >"$DIR/sshd_config" <<EOF
Port 22
HostKey $DIR/host_key
AuthorizedKeysFile $DIR/authorized_keys
StrictModes no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
PrintMotd no
X11Forwarding no
AllowTcpForwarding no
LogLevel ERROR
EOF
  local hosts="" i ns addr
  {
    for i in $(seq 1 "$HOSTS"); do
      printf 'Host client%s\n  HostName %s\n' "$i" "$NET.$((10 + i))"
    done
    cat <<EOF
Host *
  User root
  Port 22
  IdentityFile $DIR/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile $DIR/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  CheckHostIP no
  BatchMode yes
  ControlMaster no
  ControlPath none
  LogLevel ERROR
  # The default post-quantum key exchange costs ~0.2 s of CPU per connection on a loaded
  # 2-core machine; these hosts test the transport, not the cipher suite.
  KexAlgorithms curve25519-sha256
EOF
  } >"$DIR/ssh_config"
  for i in $(seq 1 "$HOSTS"); do hosts="$hosts${hosts:+,}$NET.$((10 + i))"; done
  echo "$hosts $(cut -d' ' -f1,2 "$DIR/host_key.pub")" >"$DIR/known_hosts"

  ip link add "$BR" type bridge
  ip addr add "$GW/24" dev "$BR"
  ip link set "$BR" up
  for i in $(seq 1 "$HOSTS"); do
    ns=$NS_PREFIX$i
    addr=$NET.$((10 + i))
    ip netns add "$ns"
    ip link add "sbs${SLOT}h$i" type veth peer name "sbs${SLOT}p$i"
    ip link set "sbs${SLOT}p$i" netns "$ns"
    ip link set "sbs${SLOT}h$i" master "$BR" up
    ip -n "$ns" link set "sbs${SLOT}p$i" name eth0
    ip -n "$ns" addr add "$addr/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    ip netns exec "$ns" "$SSHD" -f "$DIR/sshd_config" -E "$DIR/sshd-$i.log" -o "PidFile=$DIR/sshd-$i.pid"
  done
  for port in 3306 5432; do
    setsid socat "TCP-LISTEN:$port,bind=$GW,reuseaddr,fork" "TCP:127.0.0.1:$port" \
      </dev/null >"$DIR/fwd-$port.log" 2>&1 &
    echo $! >"$DIR/fwd-$port.pid"
    disown $!
  done
  wait_port "$GW" 3306 "the MariaDB forwarder, see $DIR/fwd-3306.log"
  wait_port "$GW" 5432 "the PostgreSQL forwarder, see $DIR/fwd-5432.log"
  for i in $(seq 1 "$HOSTS"); do
    wait_port "$NET.$((10 + i))" 22 "sshd of client$i, see $DIR/sshd-$i.log"
    ssh -F "$DIR/ssh_config" "client$i" true \
      || die "ssh -F $DIR/ssh_config client$i true failed (see $DIR/sshd-$i.log)"
  done
  echo "$HOSTS hosts up: ssh -F $DIR/ssh_config client1..client$HOSTS; databases at $GW:3306 and $GW:5432"
}

now() { date +%s.%N; }
calc() { awk "BEGIN {print $*}"; }

# Setup and teardown times, and ssh round trips against a local baseline, on a slot of its own.
timing() {
  need
  local lock=/tmp/sbsuite-netns-slot-250.lock
  exec 9>"$lock"
  flock -n 9 || die "slot 250 is in use ($lock)"
  SLOT=250 NET=10.217.250 GW=10.217.250.1 BR=sbsbr250 NS_PREFIX=sbsuite-s250-c DIR=/tmp/sbsuite-netns-250
  local t0 t1 t2 setup=() teardown=() connect=() i
  for r in $(seq 1 3); do
    t0=$(now); up >/dev/null; t1=$(now)
    if [ "$r" -lt 3 ]; then down; t2=$(now); teardown+=("$(calc "$t2 - $t1")"); fi
    setup+=("$(calc "$t1 - $t0")")
  done
  for i in $(seq 1 "$ROUNDS"); do
    t0=$(now); ssh -F "$DIR/ssh_config" client1 true; t1=$(now)
    connect+=("$(calc "$t1 - $t0")")
  done
  # Line round trips over one open session (what the agent protocol pays per message),
  # against the same through a local `cat`.
  local n=$((ROUNDS * 50)) remote local_
  rtt() {
    coproc P { "$@"; }
    local start end line
    start=$(now)
    for _ in $(seq 1 "$n"); do echo ping >&"${P[1]}"; read -r line <&"${P[0]}"; done
    end=$(now)
    eval "exec ${P[1]}>&-"
    wait "$P_PID" 2>/dev/null || true
    calc "($end - $start) / $n * 1000000"
  }
  remote=$(rtt ssh -F "$DIR/ssh_config" client1 cat)
  local_=$(rtt cat)
  down
  med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  printf 'setup of %s hosts: median %.3f s (%s rounds)\n' "$HOSTS" "$(med "${setup[@]}")" "${#setup[@]}"
  printf 'teardown: median %.3f s (%s rounds)\n' "$(med "${teardown[@]}")" "${#teardown[@]}"
  printf 'ssh client1 true (connect, auth, run, close): median %.1f ms (%s rounds)\n' \
    "$(calc "$(med "${connect[@]}") * 1000")" "$ROUNDS"
  printf 'line round trip over an open ssh session: %.1f us; through a local cat: %.1f us; ratio %.1f (%s lines)\n' \
    "$remote" "$local_" "$(calc "$remote / $local_")" "$n"
}

case "$cmd" in
  up) up ;;
  down) need; down; echo "slot $SLOT down" ;;
  time) timing ;;
  *) echo "usage: bench/netns-hosts.sh up|down|time [--slot S] [--hosts N] [--rounds R]" >&2; exit 2 ;;
esac
