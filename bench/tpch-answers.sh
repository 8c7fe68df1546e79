#!/usr/bin/env bash
# TPC-H answers at SF 1 (#31): loads SF 1 into PostgreSQL (or MariaDB: `bench/tpch-answers.sh
# mysql`), runs the power test with the spec's validation parameters writing every answer, and
# compares them with the reference answers tpchgen ships (the TPC-H tools' answers at SF 1)
# through the ignored test `engine::tpch::reference`. Prints the power test's per-query times.
set -euo pipefail
cd "$(dirname "$0")/.."
D=${1:-pgsql}
[ -n "${NO_BUILD:-}" ] || nice cargo build --release --quiet
B="${CARGO_TARGET_DIR:-$PWD/target}/release/sbsuite"
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
DB=sbs_tpch_answers
if [ "$D" = mysql ]; then
  mysql -uroot -h127.0.0.1 -e "DROP DATABASE IF EXISTS $DB; CREATE DATABASE $DB"
  A="--mysql-host=127.0.0.1 --mysql-user=root --mysql-db=$DB"
else
  psql -h 127.0.0.1 -U postgres -qAt -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
  A="--db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-user=postgres --pgsql-db=$DB"
fi
"$B" sysbench tpch $A --scale=1 prepare | grep -E '^Loaded'
"$B" sysbench tpch $A --scale=1 --tpch-test=power --tpch-params=validation \
  --tpch-answers="$TMP/answers" --time=0 run | sed -n '/^TPC-H (SF/,$p'
SBS_TPCH_ANSWERS="$TMP/answers" nice cargo test --lib --quiet -- --ignored tpch::reference 2>&1 | grep -E "test result|Q[0-9]+" || true
"$B" sysbench tpch $A --scale=1 cleanup > /dev/null
if [ "$D" = mysql ]; then mysql -uroot -h127.0.0.1 -e "DROP DATABASE IF EXISTS $DB"; else psql -h 127.0.0.1 -U postgres -qAt -c "DROP DATABASE IF EXISTS $DB"; fi
