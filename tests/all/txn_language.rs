//! The transaction language of custom workloads (#31), checked by what the servers see:
//!
//! - `isolation`: each transaction records the level its server says it runs at (MariaDB's
//!   `information_schema.INNODB_TRX`, PostgreSQL's `transaction_isolation`) into a table, and
//!   the workload's own checks (a check step) require every row to be the level asked for —
//!   two transactions at two levels, side by side in one run. On SQLite, only
//!   "serializable" is accepted, and anything else is refused by `validate` at its line.
//! - `read_only` (found when every statement is a SELECT): SQLite begins such a transaction
//!   without the write lock, so readers keep running while another connection holds it for
//!   the whole run; a transaction that writes still takes it at BEGIN.

use crate::common;

use common::suite_db::{Db, run};
use common::{results, sbsuite};

/// Two transactions at two levels, each inserting the level its server reports (`level`, SQL
/// of the dialect) into `seen`; checks that every row has the level asked for.
fn isolation_suite(target: &str, pause: &str, level: &str) -> String {
    format!(
        r#"[suite]
name = "iso"
server_cost = false

{target}
[defaults]
workload = "iso"
threads = 2
time = 3
check = true

[workloads.iso]
summary = "two isolation levels side by side"
schema = ["CREATE TABLE t (id INT PRIMARY KEY, v INT)", "CREATE TABLE seen (txn VARCHAR(8), lvl VARCHAR(40))"]
cleanup = ["DROP TABLE IF EXISTS t", "DROP TABLE IF EXISTS seen"]

[[workloads.iso.load]]
table = "t"
rows = 10
columns = [{{ name = "id", gen = "row" }}, {{ name = "v", gen = {{ const = 0 }} }}]

[workloads.iso.transactions.ser]
weight = 1
isolation = "serializable"
steps = [
  {{ sql = "SELECT v FROM t WHERE id = 1" }},
  {{ sql = "{pause}" }},
  {{ sql = "INSERT INTO seen SELECT 'ser', {level}" }},
]

[workloads.iso.transactions.rc]
weight = 1
isolation = "read committed"
steps = [
  {{ sql = "SELECT v FROM t WHERE id = 2" }},
  {{ sql = "{pause}" }},
  {{ sql = "INSERT INTO seen SELECT 'rc', {level}" }},
]

[[workloads.iso.checks]]
name = "serializable transactions ran serializable"
sql = "SELECT COUNT(*) FROM seen WHERE txn = 'ser' AND UPPER(lvl) <> 'SERIALIZABLE'"
expect = 0

[[workloads.iso.checks]]
name = "read committed transactions ran read committed"
sql = "SELECT COUNT(*) FROM seen WHERE txn = 'rc' AND UPPER(lvl) <> 'READ COMMITTED'"
expect = 0

[[workloads.iso.checks]]
name = "both ran"
sql = "SELECT COUNT(DISTINCT txn) FROM seen WHERE lvl IS NOT NULL"
expect = 2
"#
    )
}

fn isolation_is_what_the_server_runs(target: &str, pause: &str, level: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = run(dir.path(), &isolation_suite(target, pause, level));
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("serializable transactions ran serializable"),
        "{stdout}"
    );
    let rows = results(&dir.path().join("results"));
    assert_eq!(rows[0]["status"], "ok", "{rows:?}");
    assert_eq!(rows[0]["errors"], "0", "{rows:?}");
}

#[test]
fn isolation_is_what_mariadb_runs() {
    let db = "sbs_txn_iso_my";
    let Some(target) = Db::My.fresh(db) else {
        return;
    };
    isolation_is_what_the_server_runs(
        &target,
        // INNODB_TRX is a copy InnoDB refreshes at most every 100 ms: a transaction waits
        // 200 ms before it reads its own row, else it may read the level of the one before.
        "DO SLEEP(0.2)",
        "(SELECT trx_isolation_level FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = CONNECTION_ID())",
    );
    Db::My.drop(db);
}

#[test]
fn isolation_is_what_postgresql_runs() {
    let db = "sbs_txn_iso_pg";
    let Some(target) = Db::Pg.fresh(db) else {
        return;
    };
    isolation_is_what_the_server_runs(
        &target,
        "SELECT 1",
        "current_setting('transaction_isolation')",
    );
    Db::Pg.drop(db);
}

/// SQLite has one level: another is refused before anything runs, at its line; "serializable"
/// is accepted.
#[test]
fn sqlite_refuses_isolation_levels_it_does_not_have() {
    let dir = tempfile::tempdir().unwrap();
    let text = isolation_suite("", "SELECT 1", "'x'");
    let path = dir.path().join("suite.toml");
    std::fs::write(&path, &text).unwrap();
    let out = sbsuite().arg("validate").arg(&path).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("workloads.iso.transactions.rc.isolation")
            && err.contains("SQLite runs every transaction serializable"),
        "{err}"
    );
    assert!(!err.contains("transactions.ser.isolation"), "{err}");
    let line = text
        .lines()
        .position(|l| l == "isolation = \"read committed\"")
        .unwrap()
        + 1;
    assert!(err.contains(&format!("suite.toml:{line}:")), "{err}");
    let bad = text.replace("isolation = \"read committed\"", "isolation = \"snapshot\"");
    std::fs::write(&path, bad).unwrap();
    let out = sbsuite().arg("validate").arg(&path).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("`isolation` is one of"), "{err}");
}

/// A SQLite reader is not held up by a writer: once the run step's threads have started, the
/// test takes the database's write lock (`BEGIN IMMEDIATE` on its own connection) and holds it
/// to the end of the step. The workload's read-only transaction (found from its SELECTs) keeps
/// committing with no error. With a writing transaction in the mix (weight 1), the step fails
/// on `SQLITE_BUSY` within the target's 300 ms `busy_timeout`: the lock was held, and only a
/// transaction that begins with it is blocked.
#[test]
fn sqlite_read_only_transactions_take_no_write_lock() {
    for writer in [0, 1] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("ro.db");
        let text = format!(
            r#"[suite]
name = "ro"
server_cost = false

[target]
driver = "sqlite"
path = "{}"
busy_timeout = 300
ignore_errors = []

[defaults]
workload = "ro"
threads = 2
time = 3

[workloads.ro]
summary = "a reader and a writer"
schema = ["CREATE TABLE t (id INT PRIMARY KEY, v INT)"]
cleanup = ["DROP TABLE IF EXISTS t"]

[[workloads.ro.load]]
table = "t"
rows = 100
columns = [{{ name = "id", gen = "row" }}, {{ name = "v", gen = {{ const = 0 }} }}]

[workloads.ro.transactions.read]
weight = 1
steps = [{{ sql = "SELECT v FROM t WHERE id = 7" }}, {{ sql = "SELECT COUNT(*) FROM t" }}]

[workloads.ro.transactions.write]
weight = {writer}
steps = [{{ sql = "UPDATE t SET v = v + 1 WHERE id = 7" }}]
"#,
            db.display()
        );
        let path = dir.path().join("suite.toml");
        std::fs::write(&path, text).unwrap();
        let results_dir = dir.path().join("results");
        let (mut child, _) = common::spawn_until_started(&[
            "run",
            path.to_str().unwrap(),
            "--results-dir",
            results_dir.to_str().unwrap(),
            "--progress",
            "off",
        ]);
        let hold = rusqlite::Connection::open(&db).unwrap();
        hold.busy_timeout(std::time::Duration::from_secs(10))
            .unwrap();
        hold.execute_batch("BEGIN IMMEDIATE").unwrap();
        // Held until the run step's report (its workers are done), so that the cleanup after
        // it can drop the table.
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut log = String::new();
        while !log.contains("Threads fairness:") && !log.contains("FATAL") {
            if std::io::BufRead::read_line(&mut out, &mut log).unwrap() == 0 {
                break;
            }
        }
        hold.execute_batch("ROLLBACK").unwrap();
        std::io::Read::read_to_string(&mut out, &mut log).unwrap();
        let status = child.wait().unwrap();
        let rows = results(&results_dir);
        let r = &rows[0];
        if writer == 0 {
            assert!(status.success(), "{log}");
            assert_eq!(r["status"], "ok", "{r:?}");
            assert_eq!(r["errors"], "0", "{r:?}");
            let events: f64 = r["events"].parse().unwrap();
            assert!(events > 50.0, "the readers ran: {r:?}");
        } else {
            assert_eq!(r["status"], "failed", "{r:?}");
            assert!(
                r["error"].contains("SQLITE_BUSY") || r["error"].contains("locked"),
                "{r:?}"
            );
        }
    }
}

/// `init` runs on every connection a run opens: each transaction records the session setting
/// it saw, and the workload's check requires all of them to be the one `init` set — also with
/// a connection per transaction, where every transaction has a new session.
fn init_runs_on_every_connection(target: &str, init: &str, read: &str, want: &str) {
    for connect in ["per_worker", "per_transaction"] {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            r#"[suite]
name = "init"
server_cost = false

{target}
[defaults]
workload = "init"
threads = 2
time = 2
check = true
connect = "{connect}"

[workloads.init]
summary = "a session setting from init"
schema = ["CREATE TABLE seen (v VARCHAR(40))"]
cleanup = ["DROP TABLE IF EXISTS seen"]
init = ["{init}"]

[workloads.init.transactions.look]
weight = 1
steps = [{{ sql = "INSERT INTO seen SELECT {read}" }}]

[[workloads.init.checks]]
name = "every session had the setting"
sql = "SELECT COUNT(*) FROM seen WHERE v IS NULL OR v <> '{want}'"
expect = 0

[[workloads.init.checks]]
name = "transactions ran"
sql = "SELECT CASE WHEN COUNT(*) > 10 THEN 1 ELSE 0 END FROM seen"
expect = 1
"#
        );
        let (code, stdout, stderr) = run(dir.path(), &text);
        assert_eq!(code, Some(0), "{connect}: {stdout}\n{stderr}");
        assert!(
            stdout.contains("every session had the setting': ok"),
            "{stdout}"
        );
    }
}

#[test]
fn init_runs_on_every_connection_on_mariadb() {
    let db = "sbs_txn_init_my";
    let Some(target) = Db::My.fresh(db) else {
        return;
    };
    init_runs_on_every_connection(
        &target,
        "SET SESSION lock_wait_timeout = 7",
        "@@session.lock_wait_timeout",
        "7",
    );
    Db::My.drop(db);
}

#[test]
fn init_runs_on_every_connection_on_postgresql() {
    let db = "sbs_txn_init_pg";
    let Some(target) = Db::Pg.fresh(db) else {
        return;
    };
    init_runs_on_every_connection(
        &target,
        "SET application_name = 'sbs_init'",
        "current_setting('application_name')",
        "sbs_init",
    );
    Db::Pg.drop(db);
}

#[test]
fn init_runs_on_every_connection_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    init_runs_on_every_connection(
        &format!(
            "[target]\ndriver = \"sqlite\"\npath = \"{}\"\n",
            dir.path().join("init.db").display()
        ),
        "PRAGMA cache_size = -4321",
        "cache_size FROM pragma_cache_size()",
        "-4321",
    );
}
