#!/usr/bin/env bash
# Does `cargo test` leave the shared servers as it found them? (issue #13: "cargo test on a
# machine with a running MariaDB leaves its PID, global variables, users and databases exactly
# as before").
#
# Takes a snapshot of the local MariaDB/MySQL (127.0.0.1:3306, root, no password) and
# PostgreSQL (127.0.0.1:5432, postgres, trust), runs `cargo test --locked [ARGS…]`, takes
# another, and diffs the two. Exit 0: nothing changed; 1: a difference (printed as a unified
# diff); 2: a server is unreachable or a tool is missing. The result of `cargo test` itself is
# printed, not judged: a failing test is cargo test's business, a leftover is this script's.
#
# The snapshot:
#   MariaDB   the server's PID (a restart gives a new one); SHOW GLOBAL VARIABLES, except the
#             GTID positions (gtid_binlog_pos, gtid_binlog_state, gtid_current_pos,
#             gtid_slave_pos and MySQL's gtid_executed, gtid_purged, gtid_owned): with the
#             binary log on they advance with every write, so they are the server's progress,
#             not its configuration — every other global variable is configuration and must not
#             change; SELECT user, host FROM mysql.user (users and roles); SHOW DATABASES.
#   PostgreSQL pg_postmaster_start_time() (a restart changes it); roles; databases; pg_settings
#             whose source is not `default` (name, setting, source); the entries of
#             postgresql.auto.conf (ALTER SYSTEM, also when not reloaded). pg_conf_load_time() is
#             left out: tests reload the configuration legitimately (a variant is applied and
#             restored with pg_reload_conf()).
#   Files     `git status --porcelain` of this checkout: files a test left in the repository
#             (sbtest.db*, test_file.*).
#
# Other runs of the database tests at the same time would show as differences: take the lock
# the test runs share, e.g.
#   flock /tmp/sbsuite-tests.lock bench/cargo-test-leaves-server.sh
# It takes as long as the whole test suite (≈ 10 min on 2 cores). Extra arguments go to
# cargo test (`bench/cargo-test-leaves-server.sh --test all mysql_oltp::` checks one area).
set -uo pipefail
cd "$(dirname "$0")/.."

my() { mysql --user=root --host=127.0.0.1 --port=3306 --batch --skip-column-names "$@"; }
pg() { psql --host=127.0.0.1 --port=5432 --username=postgres --no-psqlrc -v ON_ERROR_STOP=1 -qAt "$@"; }

for tool in mysql psql pgrep git cargo; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed" >&2; exit 2; }
done
my -e "SELECT 1" >/dev/null 2>&1 || { echo "no MariaDB/MySQL accepts root@127.0.0.1:3306" >&2; exit 2; }
pg -c "SELECT 1" >/dev/null 2>&1 || { echo "no PostgreSQL accepts postgres@127.0.0.1:5432" >&2; exit 2; }

# Writes the snapshot to stdout, one `section value` per line so the diff names the section.
snapshot() {
  {
    pgrep -x 'mariadbd|mysqld' | sort | sed 's/^/mariadb_pid /'
    my -e "SHOW GLOBAL VARIABLES" \
      | grep -Ev '^(gtid_binlog_pos|gtid_binlog_state|gtid_current_pos|gtid_slave_pos|gtid_executed|gtid_purged|gtid_owned)[[:space:]]' \
      | sed 's/^/mariadb_global /'
    my -e "SELECT user, host FROM mysql.user ORDER BY user, host" | sed 's/^/mariadb_user /'
    my -e "SHOW DATABASES" | sort | sed 's/^/mariadb_database /'
    pg -c "SELECT pg_postmaster_start_time()" | sed 's/^/pgsql_started /'
    pg -c "SELECT rolname FROM pg_roles ORDER BY 1" | sed 's/^/pgsql_role /'
    pg -c "SELECT datname FROM pg_database ORDER BY 1" | sed 's/^/pgsql_database /'
    pg -c "SELECT name || ' = ' || setting || ' (' || source || ')' FROM pg_settings WHERE source <> 'default' ORDER BY name" \
      | sed 's/^/pgsql_setting /'
    pg -c "SELECT name || ' = ' || coalesce(setting, '') FROM pg_file_settings WHERE sourcefile LIKE '%postgresql.auto.conf' ORDER BY seqno" \
      | sed 's/^/pgsql_alter_system /'
    git status --porcelain | sed 's/^/repo_file /'
  } 2>&1
}

before=$(mktemp)
after=$(mktemp)
trap 'rm -f "$before" "$after"' EXIT
snapshot >"$before"
echo "== before: $(wc -l <"$before") lines ($(grep -c '^mariadb_global ' "$before") MariaDB globals, $(grep -c '^mariadb_database ' "$before") MariaDB databases, $(grep -c '^pgsql_database ' "$before") PostgreSQL databases)"

start=$(date +%s)
echo "== cargo test --locked $*"
log=$(mktemp)
nice -n 19 cargo test --locked "$@" >"$log" 2>&1
status=$?
passed=$(awk '/^test result:/ {s += $4} END {print s + 0}' "$log")
failed=$(awk '/^test result:/ {s += $6} END {print s + 0}' "$log")
echo "cargo test: exit $status, $passed passed, $failed failed, $(($(date +%s) - start)) s"
if [ "$status" -ne 0 ]; then
  grep -E '^(test .* FAILED|failures:$|    [a-z_:]+$)' "$log" | head -40
fi
rm -f "$log"

snapshot >"$after"
if diff -u --label before --label after "$before" "$after"; then
  echo "== the servers are as before: same PIDs, global variables, users, roles, databases, settings and files"
  exit 0
fi
echo "== cargo test changed the servers (lines above: - before, + after)" >&2
exit 1
