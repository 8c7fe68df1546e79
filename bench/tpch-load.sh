#!/usr/bin/env bash
# TPC-H load throughput (#31): sbsuite's prepare (data generated in process and streamed into
# COPY / multi-row INSERTs) against tpchgen-cli writing CSV files plus the database's own bulk
# loader (PostgreSQL `\copy … FROM … CSV`, MariaDB `LOAD DATA LOCAL INFILE`), the eight tables
# loaded side by side. Both load into the same tables (sbsuite's prepare creates them; for the
# baseline they are emptied and its indexes dropped, primary keys kept) and both times exclude
# the indexes and statistics built after the load. Prints rows/s and the ratio
# (baseline time / sbsuite time: above 1, sbsuite loads faster).
#   bench/tpch-load.sh [SF] [mysql|pgsql|both]      (default: 1 both)
# Needs a release build (built here, `nice`) and tpchgen-cli on PATH or in $TPCHGEN_CLI
# (`cargo install tpchgen-cli --version 4.0.0`).
set -euo pipefail
cd "$(dirname "$0")/.."
SF=${1:-1}
WHICH=${2:-both}
[ -n "${NO_BUILD:-}" ] || nice cargo build --release --quiet
B="${CARGO_TARGET_DIR:-$PWD/target}/release/sbsuite"
G=${TPCHGEN_CLI:-$(command -v tpchgen-cli || true)}
[ -x "$G" ] || { echo "tpchgen-cli not found: cargo install tpchgen-cli --version 4.0.0, or set TPCHGEN_CLI" >&2; exit 2; }
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
DB=sbs_tpch_load
TABLES="nation region part supplier partsupp customer orders lineitem"
INDEXES="tpch_l_part_supp:lineitem tpch_o_cust:orders tpch_ps_supp:partsupp tpch_c_nation:customer tpch_s_nation:supplier tpch_n_region:nation"
THREADS=${THREADS:-8}

now() { date +%s.%N; }

for d in mysql pgsql; do
  [ "$WHICH" = both ] || [ "$WHICH" = $d ] || continue
  if [ $d = mysql ]; then
    mysql -uroot -h127.0.0.1 -e "DROP DATABASE IF EXISTS $DB; CREATE DATABASE $DB"
    A="--mysql-host=127.0.0.1 --mysql-user=root --mysql-db=$DB"
    sql() { mysql -uroot -h127.0.0.1 --local-infile=1 "$DB" -e "$1"; }
  else
    psql -h 127.0.0.1 -U postgres -qAt -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
    A="--db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-user=postgres --pgsql-db=$DB"
    sql() { psql -h 127.0.0.1 -U postgres -qAt -d "$DB" -c "$1"; }
  fi
  echo "== $d, SF $SF, $THREADS loader connections"
  out=$(nice -n 0 "$B" sysbench tpch $A --scale="$SF" --prepare-threads="$THREADS" prepare)
  line=$(echo "$out" | grep '^Loaded')
  echo "sbsuite:  $line"
  rows=$(echo "$line" | awk '{print $2}')
  ours=$(echo "$line" | awk '{print $5}')

  # The baseline into the same, emptied tables without the indexes.
  for ix in $INDEXES; do
    if [ $d = mysql ]; then sql "DROP INDEX ${ix%%:*} ON ${ix##*:}"; else sql "DROP INDEX ${ix%%:*}"; fi
  done
  for t in $TABLES; do sql "TRUNCATE TABLE $t"; done
  rm -rf "$TMP/csv"; mkdir "$TMP/csv"
  s=$(now)
  "$G" csv -s "$SF" --output-dir "$TMP/csv" > /dev/null 2>&1
  g=$(now)
  for t in $TABLES; do
    f="$TMP/csv/$t.csv"
    if [ $d = mysql ]; then
      sql "LOAD DATA LOCAL INFILE '$f' INTO TABLE $t FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' IGNORE 1 LINES" &
    else
      sql "\\copy $t FROM '$f' WITH (FORMAT csv, HEADER true)" &
    fi
  done
  wait
  e=$(now)
  count=0
  for t in $TABLES; do
    n=$(if [ $d = mysql ]; then mysql -uroot -h127.0.0.1 -N "$DB" -e "SELECT COUNT(*) FROM $t"; else sql "SELECT COUNT(*) FROM $t"; fi)
    count=$((count + n))
  done
  awk -v s="$s" -v g="$g" -v e="$e" -v rows="$count" -v ours="$ours" -v ourrows="$rows" 'BEGIN {
    base = e - s
    printf "baseline: %d rows in %.2f s (%.0f rows/s): tpchgen-cli %.2f s + bulk loader %.2f s\n", rows, base, rows / base, g - s, e - g
    printf "ratio (baseline time / sbsuite time): %.2f\n", base / ours
    if (rows != ourrows) printf "WARNING: row counts differ: sbsuite %d, baseline %d\n", ourrows, rows
  }'
  "$B" sysbench tpch $A --scale="$SF" cleanup > /dev/null
  if [ $d = mysql ]; then mysql -uroot -h127.0.0.1 -e "DROP DATABASE IF EXISTS $DB"; else psql -h 127.0.0.1 -U postgres -qAt -c "DROP DATABASE IF EXISTS $DB"; fi
done
