//! The shipped TPC-C workload (`suites/tpcc.toml` → `suites/workloads/tpcc.toml`) run for
//! real on SQLite, MariaDB and PostgreSQL: prepare loads one warehouse, the five transactions
//! commit, the 11 consistency checks of clause 3.3.2 pass, and a row corrupted by hand while
//! the run is going makes exactly the checks that cover it fail (and the step with them).
//!
//! Each run loads about 600,000 rows, so each database gets one clean run and one corrupted
//! run at most; the servers' tests skip when no server runs locally.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::common;

use common::{read_until_started, sbsuite_process};

/// The checks of suites/workloads/tpcc.toml, by their clause number.
const CHECKS: [&str; 11] = [
    "3.3.2.1 ",
    "3.3.2.2 ",
    "3.3.2.3 ",
    "3.3.2.4 ",
    "3.3.2.5 ",
    "3.3.2.6 ",
    "3.3.2.7 ",
    "3.3.2.8 ",
    "3.3.2.9 ",
    "3.3.2.10 ",
    "3.3.2.12 ",
];

/// One TPC-C run at a time: each loads 600,000 rows and runs two threads.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn suite() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("suites/tpcc.toml")
}

/// Runs suites/tpcc.toml for 3 s in `dir` with `sets` (`--set` values); once the run step has
/// started, calls `during` (the corruption, or nothing). Returns whether sbsuite succeeded and
/// its stdout.
fn run_tpcc(dir: &Path, sets: &[String], during: impl FnOnce()) -> (bool, String) {
    let mut cmd = sbsuite_process();
    cmd.current_dir(dir)
        .arg("run")
        .arg(suite())
        .arg("--results-dir")
        .arg(dir.join("results"))
        .args(["--progress", "plain", "--set", "time=3"]);
    for s in sets {
        cmd.arg("--set").arg(s);
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut seen = read_until_started(&mut child, 1);
    during();
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_to_end(&mut seen)
        .unwrap();
    let status = child.wait().unwrap();
    (
        status.success(),
        String::from_utf8_lossy(&seen).into_owned(),
    )
}

/// The check lines of the report (`check '<name>': ok` / `FAILED …`), by clause.
fn check_lines(stdout: &str) -> Vec<(&'static str, bool)> {
    CHECKS
        .iter()
        .map(|c| {
            let line = stdout
                .lines()
                .find(|l| l.starts_with(&format!("check '{c}")))
                .unwrap_or_else(|| panic!("no line for check {c}: {stdout}"));
            (*c, line.ends_with("': ok"))
        })
        .collect()
}

/// The committed count of `txn` in the per-transaction block.
fn committed(stdout: &str, txn: &str) -> u64 {
    stdout
        .lines()
        .find_map(|l| {
            let rest = l.trim().strip_prefix(txn)?;
            rest.trim()
                .strip_prefix("count:")?
                .split_whitespace()
                .next()
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count for {txn}: {stdout}"))
}

/// A clean run: every transaction committed, every check ok, tpmC reported.
fn assert_clean(ok: bool, stdout: &str) {
    assert!(ok, "{stdout}");
    for txn in [
        "new_order",
        "payment",
        "order_status",
        "delivery",
        "stock_level",
    ] {
        assert!(committed(stdout, txn) > 0, "{txn}: {stdout}");
    }
    assert!(stdout.contains("tpmC: "), "{stdout}");
    for (c, passed) in check_lines(stdout) {
        assert!(passed, "check {c} failed after a clean run: {stdout}");
    }
}

/// A run during which w_ytd of warehouse 1 was raised by 1: conditions 1 (W_YTD = sum(D_YTD))
/// and 8 (W_YTD = sum(H_AMOUNT)) fail, the nine others hold, and sbsuite fails.
fn assert_w_ytd_caught(ok: bool, stdout: &str) {
    assert!(!ok, "the corrupted run succeeded: {stdout}");
    for (c, passed) in check_lines(stdout) {
        let corrupted = c == "3.3.2.1 " || c == "3.3.2.8 ";
        assert_eq!(passed, !corrupted, "check {c}: {stdout}");
    }
}

const CORRUPT: &str = "UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 1";

#[test]
fn sqlite_tpcc_checks_pass_and_catch_a_corrupted_row() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tpcc.db");
    let target = [
        "target.driver=sqlite".to_string(),
        format!("target.path={:?}", db.to_string_lossy()),
    ];
    let (ok, stdout) = run_tpcc(dir.path(), &target, || {});
    assert_clean(ok, &stdout);

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tpcc.db");
    let target = [
        "target.driver=sqlite".to_string(),
        format!("target.path={:?}", db.to_string_lossy()),
    ];
    let (ok, stdout) = run_tpcc(dir.path(), &target, || {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.busy_timeout(std::time::Duration::from_secs(30)).unwrap();
        assert_eq!(c.execute(CORRUPT, []).unwrap(), 1);
    });
    assert_w_ytd_caught(ok, &stdout);
}

/// Runs `sql` on MariaDB (root@127.0.0.1:3306, database `db` or none); `None`: no server.
fn mysql(db: Option<&str>, sql: &[&str]) -> Option<()> {
    let used = db.map(|db| format!("USE {db}"));
    let all: Vec<String> = used
        .into_iter()
        .chain(sql.iter().map(|s| s.to_string()))
        .collect();
    common::db::admin_my(&all)
}

#[test]
fn mysql_tpcc_checks_pass_and_catch_a_corrupted_row() {
    let _serial = serial();
    let db = "sbsuite_t_tpcc";
    let fresh = [
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ];
    let fresh: Vec<&str> = fresh.iter().map(String::as_str).collect();
    if mysql(None, &fresh).is_none() {
        common::skip("no MySQL/MariaDB server accepts root@127.0.0.1:3306 (.ci/run starts one)");
        return;
    }
    let target = [
        "target.driver=mysql".to_string(),
        "target.hosts=[\"127.0.0.1:3306\"]".to_string(),
        "target.user=root".to_string(),
        format!("target.database={db}"),
    ];
    let dir = tempfile::tempdir().unwrap();
    let (ok, stdout) = run_tpcc(dir.path(), &target, || {});
    assert_clean(ok, &stdout);
    let (ok, stdout) = run_tpcc(dir.path(), &target, || {
        mysql(Some(db), &[CORRUPT]).expect("the corruption ran");
    });
    assert_w_ytd_caught(ok, &stdout);
    mysql(None, &[&format!("DROP DATABASE IF EXISTS {db}")]);
}

/// Runs `sql` on PostgreSQL (postgres@127.0.0.1:5432, database `db`); `None`: no server.
fn pgsql(db: &str, sql: &[&str]) -> Option<()> {
    let all: Vec<String> = sql.iter().map(|s| s.to_string()).collect();
    common::db::admin_pg_in(db, &all)
}

#[test]
fn pgsql_tpcc_checks_pass_and_catch_a_corrupted_row() {
    let _serial = serial();
    let db = "sbsuite_t_tpcc";
    let drop = format!("DROP DATABASE IF EXISTS {db}");
    if pgsql("postgres", &[&drop, &format!("CREATE DATABASE {db}")]).is_none() {
        common::skip("no PostgreSQL server accepts postgres@127.0.0.1:5432 (.ci/run starts one)");
        return;
    }
    let target = [
        "target.driver=pgsql".to_string(),
        "target.hosts=[\"127.0.0.1:5432\"]".to_string(),
        "target.user=postgres".to_string(),
        format!("target.database={db}"),
    ];
    let dir = tempfile::tempdir().unwrap();
    let (ok, stdout) = run_tpcc(dir.path(), &target, || {});
    assert_clean(ok, &stdout);
    let (ok, stdout) = run_tpcc(dir.path(), &target, || {
        pgsql(db, &[CORRUPT]).expect("the corruption ran");
    });
    assert_w_ytd_caught(ok, &stdout);
    pgsql("postgres", &[&drop]);
}
