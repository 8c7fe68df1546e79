#!/usr/bin/env bash
# TPC-C load at 4 warehouses (custom workload) and the built-in oltp prepare of 4 x 500,000 rows,
# on MariaDB and PostgreSQL, release build; prints the loader's own rows/s lines and wall times.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
B="${CARGO_TARGET_DIR:-$PWD/target}/release/sbsuite"
ROOT=$PWD
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT; cd "$TMP"
mysql -uroot -h127.0.0.1 -e "DROP DATABASE IF EXISTS sbs_tload; CREATE DATABASE sbs_tload"
psql -h 127.0.0.1 -U postgres -qAt -c "DROP DATABASE IF EXISTS sbs_tload" -c "CREATE DATABASE sbs_tload"
for d in mysql pgsql; do
  if [ $d = mysql ]; then H='["127.0.0.1:3306"]'; U=root; else H='["127.0.0.1:5432"]'; U=postgres; fi
  cat > t-$d.toml <<EOT
[suite]
name = "tload-$d"
workloads = ["$ROOT/suites/workloads/tpcc.toml"]
results_dir = "$TMP/results"
[target]
driver = "$d"
hosts = $H
user = "$U"
database = "sbs_tload"
[defaults]
workload = "tpcc"
warehouses = 4
time = 1
threads = 4
[matrix]
threads = [4]
EOT
  echo "== $d TPC-C 4 warehouses"
  $B run t-$d.toml --progress plain 2>&1 | grep -E "Loaded|Loading" | tail -3
  echo "== $d built-in oltp prepare 4 x 500000, 4 threads"
  if [ $d = mysql ]; then A="--mysql-host=127.0.0.1 --mysql-user=root --mysql-db=sbs_tload"; else A="--db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-user=postgres --pgsql-db=sbs_tload"; fi
  s=$(date +%s.%N); $B sysbench oltp_read_only $A --tables=4 --table-size=500000 --threads=4 prepare > /dev/null; e=$(date +%s.%N)
  awk -v s=$s -v e=$e 'BEGIN {printf "built-in: 2000000 rows in %.1f s (%.0f rows/s, includes the secondary index)\n", e-s, 2000000/(e-s)}'
  $B sysbench oltp_read_only $A --tables=4 --table-size=500000 cleanup > /dev/null
done
mysql -uroot -h127.0.0.1 -e "DROP DATABASE IF EXISTS sbs_tload"
psql -h 127.0.0.1 -U postgres -qAt -c "DROP DATABASE IF EXISTS sbs_tload"
