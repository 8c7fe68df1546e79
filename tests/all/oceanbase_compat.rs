//! What works on MariaDB works on OceanBase (#28): the real binary against seekdb, OceanBase's
//! single-node kernel on 127.0.0.1:2881 (root, no password; `bench/seekdb.sh start`, `.ci/run`
//! starts it). Without it the tests say why and pass, unless `CI` is set: then they fail.
//!
//! Covered: the built-in OLTP workloads (prepare, run, cleanup; sysbench's statements per
//! event, also as text statements), `bulk_insert`, the shipped TPC-C with its consistency
//! checks, sysbench's stock Lua scripts run in Lua (and by sysbench 1.0.20 itself when it is
//! installed: the server counts the same statements), a custom workload with a check under
//! contention, `dataset = "existing"` and `run --resume` after `kill -9`. Variants and
//! `sbsuite restore` are `oceanbase.rs`'s.
//!
//! The server's own counters: seekdb has no `Com_*` status counters (`SHOW GLOBAL STATUS`
//! lists `Threads_connected` and `Uptime` only) and no `v$sysstat` or `gv$sql_audit`, but its
//! plan cache (`oceanbase.V$OB_PLAN_CACHE_PLAN_STAT`) counts the executions of every
//! parameterized statement per database, whether sent as a prepared statement or as text:
//! [`executions`] sums them by kind (SELECT, INSERT, UPDATE, DELETE). BEGIN and COMMIT have no
//! plan and are counted nowhere on the server; the tests check them in sbsuite's report.
//!
//! Each test uses its own database `sbsuite_t_ob_compat_<name>`, dropped when the test ends
//! (also when it fails), and holds seekdb alone (`common::db::oceanbase`): the plan cache is
//! per database, but the other OceanBase tests change global settings. Small data and short
//! times: the module runs in about two minutes, most of it TPC-C's load.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Output, Stdio};

use mysql_async::prelude::Queryable;

use crate::common;

use common::db::{OCEANBASE_PORT, admin_my_at, my_opts_at, oceanbase, rt};
use common::{read_until_started, report_count, results, run_dir, sbsuite, sbsuite_process};

/// A fresh database on seekdb, dropped when it goes out of scope.
struct Database(String);

impl Database {
    /// `sbsuite_t_ob_compat_<name>`, dropped first if a killed test left it.
    fn fresh(name: &str) -> Database {
        let db = format!("sbsuite_t_ob_compat_{name}");
        admin_my_at(
            OCEANBASE_PORT,
            &[
                format!("DROP DATABASE IF EXISTS {db}"),
                format!("CREATE DATABASE {db}"),
            ],
        )
        .unwrap_or_else(|| panic!("cannot create database {db} on seekdb"));
        Database(db)
    }

    fn name(&self) -> &str {
        &self.0
    }

    /// The login options of `sbsuite sysbench` (and of sysbench 1.0.20) for this database.
    fn login(&self) -> Vec<String> {
        vec![
            "--mysql-host=127.0.0.1".into(),
            format!("--mysql-port={OCEANBASE_PORT}"),
            "--mysql-user=root".into(),
            format!("--mysql-db={}", self.0),
        ]
    }

    /// A suite's `[target]` table for this database.
    fn target(&self) -> String {
        format!(
            "[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:{OCEANBASE_PORT}\"]\nuser = \"root\"\ndatabase = \"{}\"\n",
            self.0
        )
    }

    /// The `--set` arguments that point a shipped suite at this database.
    fn sets(&self) -> Vec<String> {
        [
            "target.driver=mysql".to_string(),
            format!("target.hosts=[\"127.0.0.1:{OCEANBASE_PORT}\"]"),
            "target.user=root".into(),
            format!("target.database={}", self.0),
        ]
        .into_iter()
        .flat_map(|s| ["--set".to_string(), s])
        .collect()
    }

    /// The tables of this database, sorted.
    fn tables(&self) -> Vec<String> {
        let mut t: Vec<String> = self.query(&format!("SHOW TABLES IN {}", self.0));
        t.sort();
        t
    }

    /// The rows of `table`.
    fn count(&self, table: &str) -> i64 {
        let n: Vec<i64> = self.query(&format!("SELECT COUNT(*) FROM {}.{table}", self.0));
        n[0]
    }

    /// The first column of every row of `sql`, on a fresh connection.
    fn query<T: mysql_async::prelude::FromValue>(&self, sql: &str) -> Vec<T> {
        rt().block_on(async {
            let mut c = mysql_async::Conn::new(my_opts_at(OCEANBASE_PORT, None))
                .await
                .unwrap();
            let rows: Vec<mysql_async::Row> = c.query(sql).await.unwrap();
            let _ = c.disconnect().await;
            rows.into_iter()
                .map(|r| r.get::<T, _>(0).unwrap_or_else(|| panic!("{sql}: a NULL")))
                .collect()
        })
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        admin_my_at(
            OCEANBASE_PORT,
            &[format!("DROP DATABASE IF EXISTS {}", self.0)],
        );
    }
}

/// seekdb's own count of the statements run in `db`: the executions of the plans its plan
/// cache holds for the database, summed by the statement's first word (SELECT, INSERT,
/// UPDATE, DELETE). A kind never run is absent (read it with [`kind`]). The session setup of
/// the clients (`SELECT @@max_allowed_packet`, `SELECT VERSION()`, …) is left out.
fn executions(db: &Database) -> HashMap<String, i64> {
    rt().block_on(async {
        let mut c = mysql_async::Conn::new(my_opts_at(OCEANBASE_PORT, None))
            .await
            .unwrap();
        let rows: Vec<(String, i64)> = c
            .query(format!(
                "SELECT UPPER(SUBSTRING_INDEX(TRIM(p.statement), ' ', 1)) AS kind, CAST(SUM(p.executions) AS SIGNED) \
                 FROM oceanbase.V$OB_PLAN_CACHE_PLAN_STAT p JOIN oceanbase.__all_database d ON p.db_id = d.database_id \
                 WHERE d.database_name = '{}' AND p.statement NOT LIKE 'SELECT @@%' \
                 AND UPPER(p.statement) NOT LIKE 'SELECT VERSION()%' GROUP BY kind",
                db.name()
            ))
            .await
            .unwrap();
        let _ = c.disconnect().await;
        rows.into_iter().collect()
    })
}

/// The executions of `kind` in `after` since `before`.
fn kind(before: &HashMap<String, i64>, after: &HashMap<String, i64>, kind: &str) -> i64 {
    after.get(kind).copied().unwrap_or(0) - before.get(kind).copied().unwrap_or(0)
}

/// `sbsuite sysbench ARGS LOGIN…`: (output, stdout).
fn sysbench_line(db: &Database, args: &[&str]) -> (Output, String) {
    let out = sbsuite()
        .arg("sysbench")
        .args(args)
        .args(db.login())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (out, stdout)
}

/// Asserts that a command succeeded, showing its output when it did not.
fn assert_ok(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what}: {:?}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Statements per event of a sysbench OLTP workload: SELECTs, UPDATEs, DELETEs, INSERTs, and
/// BEGIN + COMMIT (counted by sbsuite only: seekdb has no counter for them).
struct PerEvent {
    select: i64,
    update: i64,
    delete: i64,
    insert: i64,
    begin_commit: i64,
}

const fn per_event(select: i64, update: i64, delete: i64, insert: i64, trx: bool) -> PerEvent {
    PerEvent {
        select,
        update,
        delete,
        insert,
        begin_commit: if trx { 2 } else { 0 },
    }
}

/// Runs `args` (a workload and its options) for 10 events on one thread and checks what
/// seekdb's plan cache counted against `want`; the report's read count is the SELECTs, its
/// write + other the rest (sysbench counts a statement that changed no row as other).
fn assert_statements(
    db: &Database,
    args: &[&str],
    want: &PerEvent,
    run: impl Fn(&[&str]) -> (Output, String),
) {
    let mut all = args.to_vec();
    all.extend([
        "--tables=2",
        "--table-size=300",
        "--threads=1",
        "--events=10",
        "--time=0",
        "run",
    ]);
    let attempt = || {
        let before = executions(db);
        let (out, stdout) = run(&all);
        let after = executions(db);
        assert_ok(&args.join(" "), &out);
        (before, stdout, after)
    };
    let (mut before, mut stdout, mut after) = attempt();
    if after.is_empty() {
        // The plan cache held no plan of the database at all, not even this run's (twice in
        // CI, right after the kill -9 test: `{} after {}` with the report counting every
        // statement): seekdb had not kept the plans, so there is nothing to count. The case
        // runs once more; an empty cache again fails below.
        eprintln!(
            "{args:?}: seekdb's plan cache holds no plan of {}; once more",
            db.name()
        );
        std::thread::sleep(std::time::Duration::from_secs(2));
        (before, stdout, after) = attempt();
    }
    let d = |k: &str| kind(&before, &after, k);
    let what = format!("{args:?}: {after:?} after {before:?}\n{stdout}");
    assert_eq!(
        [d("UPDATE"), d("DELETE"), d("INSERT")],
        [10 * want.update, 10 * want.delete, 10 * want.insert],
        "{what}"
    );
    // The events' SELECTs, plus what sbsuite's native engine asks before it starts (MAX(id)
    // of each table; nothing in Lua or in sysbench).
    let extra = d("SELECT") - 10 * want.select;
    assert!((0..=2).contains(&extra), "{what}");
    assert_eq!(
        report_count(&stdout, "read:") as i64,
        10 * want.select,
        "{what}"
    );
    let writes = 10 * (want.update + want.delete + want.insert + want.begin_commit);
    assert_eq!(
        (report_count(&stdout, "write:") + report_count(&stdout, "other:")) as i64,
        writes,
        "{what}"
    );
    assert!(
        stdout.contains("    transactions:                        10     ("),
        "{what}"
    );
}

#[test]
fn oltp_builtins_send_sysbench_statements_counted_by_seekdb() {
    let Some(_ob) = oceanbase() else {
        return;
    };
    let db = Database::fresh("oltp");
    let (prep, stdout) = sysbench_line(
        &db,
        &[
            "oltp_read_only",
            "--tables=2",
            "--table-size=300",
            "prepare",
        ],
    );
    assert_ok("prepare", &prep);
    assert!(
        stdout.contains("Inserting 300 records into 'sbtest2'"),
        "{stdout}"
    );
    assert_eq!(db.tables(), ["sbtest1", "sbtest2"]);
    assert_eq!(db.count("sbtest1"), 300);
    let native = |a: &[&str]| sysbench_line(&db, a);
    let cases: [(&[&str], PerEvent); 9] = [
        (&["oltp_read_only"], per_event(14, 0, 0, 0, true)),
        (&["oltp_write_only"], per_event(0, 2, 1, 1, true)),
        (&["oltp_read_write"], per_event(14, 2, 1, 1, true)),
        (
            &["oltp_read_write", "--db-ps-mode=disable"],
            per_event(14, 2, 1, 1, true),
        ),
        (&["oltp_point_select"], per_event(1, 0, 0, 0, false)),
        (&["oltp_update_index"], per_event(0, 1, 0, 0, false)),
        (&["oltp_update_non_index"], per_event(0, 1, 0, 0, false)),
        (&["oltp_delete"], per_event(0, 0, 1, 0, false)),
        (&["oltp_insert"], per_event(0, 0, 0, 1, false)),
    ];
    for (args, want) in &cases {
        assert_statements(&db, args, want, native);
    }
    // write_only and read_write delete and re-insert the same ids; oltp_delete removes at
    // most 10 rows, oltp_insert adds 10 with new ids.
    let rows = db.count("sbtest1") + db.count("sbtest2");
    assert!((600..=610).contains(&rows), "{rows}");
    let (cleanup, stdout) = sysbench_line(&db, &["oltp_read_only", "--tables=2", "cleanup"]);
    assert_ok("cleanup", &cleanup);
    assert!(stdout.contains("Dropping table 'sbtest2'..."), "{stdout}");
    assert_eq!(db.tables(), Vec::<String>::new());
}

/// bulk_insert: every event is a row, every flush one INSERT statement on the server.
#[test]
fn bulk_insert_rows_and_flushes_are_counted_by_seekdb() {
    let Some(_ob) = oceanbase() else {
        return;
    };
    let db = Database::fresh("bulk");
    let line = |action: &str| {
        sysbench_line(
            &db,
            &[
                "bulk_insert",
                "--threads=2",
                "--events=30000",
                "--time=0",
                action,
            ],
        )
    };
    let (prep, _) = line("prepare");
    assert_ok("prepare", &prep);
    let before = executions(&db);
    let (run, stdout) = line("run");
    let after = executions(&db);
    assert_ok("run", &run);
    assert_eq!(db.count("sbtest1") + db.count("sbtest2"), 30_000);
    assert!(
        stdout.contains("    transactions:                        30000  ("),
        "{stdout}"
    );
    let flushes = report_count(&stdout, "write:") as i64;
    assert!(flushes >= 1, "{stdout}");
    assert_eq!(
        kind(&before, &after, "INSERT"),
        flushes,
        "{after:?}\n{stdout}"
    );
    let (cleanup, _) = line("cleanup");
    assert_ok("cleanup", &cleanup);
    assert_eq!(db.tables(), Vec::<String>::new());
}

/// The TPC-C transactions whose committed counts the report prints.
const TPCC_TRANSACTIONS: [&str; 5] = [
    "new_order",
    "payment",
    "order_status",
    "delivery",
    "stock_level",
];

/// suites/tpcc.toml as shipped, pointed at seekdb with `--set` and run for 3 s: prepare (1
/// warehouse), the standard mix, the eleven consistency checks of clause 3.3.2, cleanup.
#[test]
fn the_shipped_tpcc_suite_passes_its_consistency_checks() {
    let Some(_ob) = oceanbase() else {
        return;
    };
    let db = Database::fresh("tpcc");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("results");
    let out = sbsuite()
        .args([
            "run",
            "suites/tpcc.toml",
            "--progress",
            "plain",
            "--set",
            "time=3",
        ])
        .args(db.sets())
        .arg("--results-dir")
        .arg(&root)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_ok("suites/tpcc.toml", &out);
    for txn in TPCC_TRANSACTIONS {
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(txn) && l.contains("count:"))
            .unwrap_or_else(|| panic!("no line for {txn}: {stdout}"));
        assert!(!line.contains("count: 0 "), "{txn} never committed: {line}");
    }
    assert!(stdout.contains("tpmC: "), "{stdout}");
    let checks: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("check '"))
        .collect();
    assert_eq!(checks.len(), 11, "{stdout}");
    for c in &checks {
        assert!(c.ends_with("': ok"), "{c}\n{stdout}");
    }
    let rows = results(&root);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["status"], "ok", "{rows:?}");
    assert_eq!(rows[0]["errors"], "0", "{rows:?}");
    assert_eq!(
        db.tables(),
        Vec::<String>::new(),
        "the cleanup dropped the nine tables"
    );
}

/// Whether sysbench 1.0.20 is on the PATH.
fn have_sysbench() -> bool {
    StdCommand::new("sysbench")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("sysbench 1.0"))
        .unwrap_or(false)
}

/// sysbench's stock scripts from /usr/share/sysbench run in sbsuite's Lua (`--lua NAME`):
/// prepare, run and cleanup, the server counting sysbench's statements; sysbench 1.0.20 itself,
/// when installed, makes the server count the same.
#[test]
fn sysbench_stock_lua_scripts_run_in_lua() {
    let Some(_ob) = oceanbase() else {
        return;
    };
    if !Path::new("/usr/share/sysbench/oltp_read_write.lua").exists() {
        common::skip(
            "sysbench's stock scripts are not in /usr/share/sysbench (apt-get install sysbench)",
        );
        return;
    }
    let db = Database::fresh("lua");
    let (prep, stdout) = sysbench_line(
        &db,
        &[
            "--lua",
            "oltp_read_write",
            "--tables=2",
            "--table-size=300",
            "prepare",
        ],
    );
    assert_ok("--lua prepare", &prep);
    assert!(
        stdout.contains("Creating a secondary index on 'sbtest2'..."),
        "{stdout}"
    );
    assert_eq!(db.count("sbtest2"), 300);
    let lua = |a: &[&str]| {
        let mut all = vec!["--lua"];
        all.extend(a);
        sysbench_line(&db, &all)
    };
    assert_statements(
        &db,
        &["oltp_read_write"],
        &per_event(14, 2, 1, 1, true),
        lua,
    );
    assert_statements(
        &db,
        &["oltp_point_select"],
        &per_event(1, 0, 0, 0, false),
        lua,
    );
    assert_statements(
        &db,
        &["oltp_write_only", "--db-ps-mode=disable"],
        &per_event(0, 2, 1, 1, true),
        lua,
    );
    if have_sysbench() {
        let sysbench = |a: &[&str]| {
            let out = StdCommand::new("sysbench")
                .args(a)
                .args(db.login())
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            (out, stdout)
        };
        assert_statements(
            &db,
            &["oltp_read_write"],
            &per_event(14, 2, 1, 1, true),
            sysbench,
        );
    } else {
        common::skip(
            "sysbench 1.0.20 is not installed (apt-get install sysbench): the same statements by sysbench itself are not compared",
        );
    }
    let (cleanup, _) = sysbench_line(&db, &["--lua", "oltp_read_write", "--tables=2", "cleanup"]);
    assert_ok("--lua cleanup", &cleanup);
    assert_eq!(db.tables(), Vec::<String>::new());
}

/// A bank: transfers between 20 accounts on 4 threads, so that two transfers may lock the same
/// rows in opposite orders (seekdb then answers one of them with error 1213, which sbsuite
/// ignores and re-runs, as on MariaDB; tried by hand: about one in a few hundred transfers);
/// the check proves that no money was made or lost. `cleanup` empty: the tables stay for the
/// test to read (the test's database goes with them).
const BANK: &str = r#"
[defaults]
workload = "bank"
time = 3
threads = 4
check = true
report_interval = 0

[workloads.bank]
schema = ["CREATE TABLE acc (id INTEGER NOT NULL PRIMARY KEY, bal BIGINT NOT NULL)", "CREATE TABLE log (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, amount INTEGER NOT NULL)"]
cleanup = []

[[workloads.bank.load]]
table = "acc"
rows = 20
columns = [{ name = "id", gen = "row" }, { name = "bal", gen = { const = 1000 } }]

[workloads.bank.params]
from = { uniform = [1, 20] }
to = { uniform = [1, 20] }
amount = { uniform = [1, 50] }

[workloads.bank.transactions.transfer]
steps = [
  { sql = "UPDATE acc SET bal = bal - :amount WHERE id = :from", expect_rows = 1 },
  { sql = "UPDATE acc SET bal = bal + :amount WHERE id = :to", expect_rows = 1 },
  { sql = "INSERT INTO log (amount) VALUES (:amount)" },
]

[[workloads.bank.checks]]
name = "no money is made or lost"
sql = "SELECT SUM(bal) FROM acc"
expect = 20000
"#;

#[test]
fn a_custom_bank_workload_keeps_its_check_under_contention() {
    let Some(_ob) = oceanbase() else {
        return;
    };
    let db = Database::fresh("bank");
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("bank.toml");
    std::fs::write(
        &suite,
        format!("[suite]\nname = \"bank\"\n\n{}{BANK}", db.target()),
    )
    .unwrap();
    let root = dir.path().join("results");
    let before = executions(&db);
    let out = sbsuite()
        .arg("run")
        .arg(&suite)
        .args(["--progress", "plain", "--results-dir"])
        .arg(&root)
        .output()
        .unwrap();
    let mut after = executions(&db);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_ok("bank", &out);
    assert!(
        stdout.contains("check 'no money is made or lost': ok"),
        "{stdout}"
    );
    let rows = results(&root);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["status"], "ok", "{rows:?}");
    let txns = common::csv_rows(&root, "transactions.csv");
    let transfer = txns
        .iter()
        .find(|r| r["transaction"] == "transfer")
        .unwrap_or_else(|| panic!("{txns:?}"));
    let committed: i64 = transfer["count"].parse().unwrap();
    assert!(committed > 0, "{transfer:?}");
    // The server's word: one log row per committed transfer (a transfer that met a deadlock
    // was rolled back whole and re-run), the balances still sum to 20,000, and the plan cache
    // ran at least two UPDATEs per committed transfer (more when re-runs were rolled back).
    assert_eq!(db.count("log"), committed, "{transfer:?}");
    let total: Vec<i64> = db.query(&format!(
        "SELECT CAST(SUM(bal) AS SIGNED) FROM {}.acc",
        db.name()
    ));
    assert_eq!(total, [20_000]);
    // The plan cache counts a statement's execution a moment after it returned (seen: the
    // last transfer's UPDATEs and INSERT missing right after the run): read again, for up to
    // 3 s, before judging.
    for _ in 0..30 {
        if kind(&before, &after, "UPDATE") >= 2 * committed
            && kind(&before, &after, "INSERT") >= committed
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        after = executions(&db);
    }
    // seekdb's plan cache is not a ledger: two CI runs (of five) saw it short by far after the
    // re-reads (e.g. 120 UPDATE executions in all), its plans evicted and their counts lost
    // under the load of the other tests. The exact evidence is the server's own rows above;
    // the plan cache's counts are reported, not judged, when they fall short.
    let (updates, inserts) = (
        kind(&before, &after, "UPDATE"),
        kind(&before, &after, "INSERT"),
    );
    if updates < 2 * committed || inserts < committed {
        eprintln!(
            "note: seekdb's plan cache counted {updates} UPDATE and {inserts} INSERT executions \
             for {committed} committed transfers (plans evicted meanwhile): {after:?}"
        );
    }
}

/// Writes `ex.toml` with `dataset = "existing"`, point selects on `tables` tables of
/// `table_size` rows, 1 s.
fn existing_suite(dir: &Path, db: &Database, tables: u32, table_size: u32) -> PathBuf {
    let path = dir.join("ex.toml");
    std::fs::write(
        &path,
        format!(
            "[suite]\nname = \"ex\"\ndataset = \"existing\"\n\n{}\n[defaults]\nworkload = \"oltp_read_write\"\ntables = {tables}\ntable_size = {table_size}\ntime = 1\nthreads = 1\n",
            db.target()
        ),
    )
    .unwrap();
    path
}

/// `dataset = "existing"` on seekdb: tables prepared earlier by a sysbench line are checked
/// before anything runs (a missing table, too few rows: refused, nothing written), then run on
/// without a prepare or a cleanup.
#[test]
fn an_existing_dataset_is_checked_then_run_without_prepare_or_cleanup() {
    let Some(_ob) = oceanbase() else {
        return;
    };
    let db = Database::fresh("existing");
    let (prep, _) = sysbench_line(
        &db,
        &[
            "oltp_read_write",
            "--tables=1",
            "--table-size=200",
            "prepare",
        ],
    );
    assert_ok("prepare", &prep);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("results");
    let run = |suite: &Path| {
        sbsuite()
            .arg("run")
            .arg(suite)
            .args(["--progress", "off", "--results-dir"])
            .arg(&root)
            .output()
            .unwrap()
    };

    let missing = run(&existing_suite(dir.path(), &db, 2, 200));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "[suite] dataset = \"existing\": table 'sbtest2' does not exist in database `{}` (tables = 2)",
            db.name()
        )) && stderr.contains("nothing has run"),
        "{stderr}"
    );
    let short = run(&existing_suite(dir.path(), &db, 1, 500));
    let stderr = String::from_utf8_lossy(&short.stderr);
    assert_eq!(short.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("table 'sbtest1' in database ")
            && stderr.contains("has rows up to id 200, fewer than table_size = 500"),
        "{stderr}"
    );
    assert!(!root.exists(), "nothing was written");
    assert_eq!(db.tables(), ["sbtest1"]);

    let before = executions(&db);
    let ok = run(&existing_suite(dir.path(), &db, 1, 200));
    let after = executions(&db);
    assert_ok("existing", &ok);
    let stdout = String::from_utf8_lossy(&ok.stdout);
    assert!(!stdout.contains("Creating table"), "no prepare: {stdout}");
    assert!(!stdout.contains("Dropping table"), "no cleanup: {stdout}");
    let rows = results(&root);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["status"], "ok", "{rows:?}");
    let events: i64 = rows[0]["events"].parse().unwrap();
    assert!(events > 0, "{rows:?}");
    // The run worked on the user's table (read_write deletes and re-inserts each id it
    // deletes) and left it in place, with its rows.
    assert!(kind(&before, &after, "UPDATE") >= 2 * events, "{after:?}");
    assert_eq!(db.tables(), ["sbtest1"]);
    assert_eq!(db.count("sbtest1"), 200);
}

/// Two workloads × two thread counts on seekdb, each run step 2 s.
const RESUMABLE: &str = r#"
[defaults]
tables = 1
table_size = 500
time = 2
report_interval = 0

[matrix]
threads = [1, 2]
workload = ["oltp_read_only", "oltp_write_only"]
"#;

/// The `step` column of every row of the run's results.csv, sorted, with its status.
fn steps(run: &Path) -> Vec<(usize, String)> {
    let mut rows: Vec<(usize, String)> = results(run)
        .into_iter()
        .map(|r| (r["step"].parse().unwrap(), r["status"].clone()))
        .collect();
    rows.sort();
    rows
}

/// `kill -9` in the third run step of a suite on seekdb, then `sbsuite run --resume`: the two
/// finished rows are kept, the other two run on the dataset the kill left, the cleanup drops it.
#[test]
fn kill_9_then_resume_finishes_the_suite_on_seekdb() {
    let Some(_ob) = oceanbase() else {
        return;
    };
    let db = Database::fresh("resume");
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("rs.toml");
    std::fs::write(
        &suite,
        format!("[suite]\nname = \"rs\"\n\n{}{RESUMABLE}", db.target()),
    )
    .unwrap();
    let root = dir.path().join("results");
    let mut child = sbsuite_process()
        .arg("run")
        .arg(&suite)
        .args(["--progress", "off", "--results-dir"])
        .arg(&root)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    read_until_started(&mut child, 3);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let run = run_dir(&root, "rs");
    let killed = steps(&run);
    assert_eq!(
        killed.len(),
        2,
        "two runs finished before the kill: {killed:?}"
    );
    assert_eq!(db.tables(), ["sbtest1"], "the kill left the dataset");

    let out = sbsuite()
        .args(["run", "--progress", "plain", "--resume"])
        .arg(&run)
        .output()
        .unwrap();
    assert_ok("--resume", &out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("kept from before the resume"), "{stderr}");
    let resumed = steps(&run);
    assert_eq!(resumed.len(), 4, "{resumed:?}");
    for kept in &killed {
        assert!(resumed.contains(kept), "{kept:?} kept: {resumed:?}");
    }
    assert!(resumed.iter().all(|(_, s)| s == "ok"), "{resumed:?}");
    let mut numbers: Vec<usize> = resumed.iter().map(|(n, _)| *n).collect();
    numbers.dedup();
    assert_eq!(numbers.len(), 4, "every run once: {resumed:?}");
    let workloads: Vec<String> = results(&run)
        .into_iter()
        .map(|r| r["workload"].clone())
        .collect();
    assert_eq!(
        workloads.iter().filter(|w| *w == "oltp_write_only").count(),
        2,
        "{workloads:?}"
    );
    assert_eq!(
        db.tables(),
        Vec::<String>::new(),
        "the resumed cleanup dropped the table"
    );
}
