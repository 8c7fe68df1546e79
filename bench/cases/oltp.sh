# OLTP transactions/s on the local MySQL/MariaDB (issue #4): 1 table × 10,000 rows in database
# sbsuite_bench over TCP 127.0.0.1:3306 as root, both tools on the same prepared table. The
# server shares the machine, so the ratio mixes client cost and server headroom.
OLTP_ARGS="--mysql-host=127.0.0.1 --mysql-user=root --mysql-db=sbsuite_bench --tables=1 --table-size=10000"

# Creates the database and table once per process (sysbench's own prepare).
oltp_ready() {
  [ -n "${OLTP_PREPARED:-}" ] && return
  mysql --user=root --host=127.0.0.1 -e "CREATE DATABASE IF NOT EXISTS sbsuite_bench"
  # shellcheck disable=SC2086
  sysbench oltp_read_write $OLTP_ARGS cleanup >/dev/null
  # shellcheck disable=SC2086
  sysbench oltp_read_write $OLTP_ARGS prepare >/dev/null
  OLTP_PREPARED=1
}

# oltp_tps TOOL WORKLOAD THREADS: one run's transactions per second.
oltp_tps() {
  local tool=$1 w=$2 t=$3
  # shellcheck disable=SC2086
  (cd "$TMP/work" && $tool $w $OLTP_ARGS --threads="$t" --time="$SECS" run) |
    awk '/transactions:/ {gsub(/\(/, "", $3); print $3}'
}

oltp_case() {
  oltp_ready
  ab "$1-t$2" "tps" 1 "oltp_tps sysbench $1 $2" "oltp_tps '$SBSUITE sysbench' $1 $2"
}
case_oltp_point_select_t4() { oltp_case oltp_point_select 4; }
case_oltp_read_write_t4() { oltp_case oltp_read_write 4; }
