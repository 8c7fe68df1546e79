//! The OLTP engine against the real local MySQL/MariaDB server (never a mock): the statement
//! mix the server counts, the SQL statistics and CSV columns, data left intact by read_write,
//! and clear failures for a wrong password or a missing database.
//!
//! Each test uses its own database `sbsuite_t_<name>` (created and dropped here) so tests can
//! run in parallel. Without a reachable server at 127.0.0.1:3306 (user root, empty password)
//! the tests print why and pass, unless `CI` is set: then they fail.
//!
//! The tests that restart the server or start it with TLS never touch the shared server: each
//! starts a private throwaway MariaDB (`common::private_server`) and drops it at its end.

use std::collections::HashMap;
use std::path::Path;

use mysql_async::prelude::Queryable;

use crate::common;

use common::db::{
    admin_my as admin, admin_my_at as admin_at, my_opts as opts, my_opts_at as opts_at, rt,
};
use common::private_server::{PrivateMariaDb, or_skip};
use common::{all_files_text, read_until_started, report_count, results, run_dir, sbsuite};

const HOST: &str = "127.0.0.1";
const PORT: u16 = 3306;

/// The servers alone for each test of this file: they read the server's global counters and
/// change its global settings.
fn serial() -> common::server_lock::ServerLock {
    common::server_lock::server_lock()
}

/// A fresh database for one test, or `None` (after saying why) when no server runs locally.
fn database(name: &str) -> Option<String> {
    let db = format!("sbsuite_t_{name}");
    let ok = admin(&[
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ]);
    if ok.is_none() {
        common::skip(&format!(
            "no MySQL/MariaDB server accepts root@{HOST}:{PORT} (.ci/run starts one)"
        ));
        return None;
    }
    Some(db)
}

fn drop_database(db: &str) {
    admin(&[format!("DROP DATABASE IF EXISTS {db}")]);
}

const COUNTERS: [&str; 6] = [
    "Com_select",
    "Com_update",
    "Com_delete",
    "Com_insert",
    "Com_begin",
    "Com_commit",
];

fn status() -> HashMap<String, i64> {
    rt().block_on(async {
        let mut c = mysql_async::Conn::new(opts(None)).await.unwrap();
        let rows: Vec<(String, String)> = c
            .query("SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_select','Com_update','Com_delete','Com_insert','Com_begin','Com_commit')")
            .await
            .unwrap();
        let _ = c.disconnect().await;
        rows.into_iter()
            .map(|(k, v)| (k, v.parse().unwrap()))
            .collect()
    })
}

fn delta(
    before: &HashMap<String, i64>,
    after: &HashMap<String, i64>,
) -> HashMap<&'static str, i64> {
    COUNTERS
        .iter()
        .map(|&k| (k, after[k] - before[k]))
        .collect()
}

fn rows(db: &str, table: &str) -> i64 {
    rt().block_on(async {
        let mut c = mysql_async::Conn::new(opts(Some(db))).await.unwrap();
        let n: Option<i64> = c
            .query_first(format!("SELECT COUNT(*) FROM {table}"))
            .await
            .unwrap();
        let _ = c.disconnect().await;
        n.unwrap()
    })
}

fn suite(dir: &Path, db: &str, target_extra: &str, defaults: &str) -> std::path::PathBuf {
    suite_at(dir, &format!("{HOST}:{PORT}"), db, target_extra, defaults)
}

/// [`suite`] for the server at `addr` (a test's private server).
fn suite_at(
    dir: &Path,
    addr: &str,
    db: &str,
    target_extra: &str,
    defaults: &str,
) -> std::path::PathBuf {
    let path = dir.join("suite.toml");
    std::fs::write(
        &path,
        format!(
            "[suite]\nname = \"t\"\n\n[target]\ndriver = \"mysql\"\nhosts = [\"{addr}\"]\nuser = \"root\"\ndatabase = \"{db}\"\n{target_extra}\n\n[defaults]\n{defaults}\n"
        ),
    )
    .unwrap();
    path
}

#[test]
fn suite_read_write_runs_sysbench_exact_statement_mix() {
    let _serial = serial();
    let Some(db) = database("rw") else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = suite(
        dir.path(),
        &db,
        "",
        "workload = \"oltp_read_write\"\ntables = 2\ntable_size = 1000\nthreads = 1\nevents = 100\ntime = 0\nreport_interval = 0",
    );
    let before = status();
    let out = sbsuite()
        .args(["run"])
        .arg(&path)
        .arg("--results-dir")
        .arg(dir.path().join("results"))
        .args(["--progress", "plain"])
        .output()
        .unwrap();
    let after = status();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    drop_database(&db);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let d = delta(&before, &after);
    // 100 events × sysbench's read_write mix (one thread: no deadlock can re-run an event;
    // the three-thread test below allows for those); prepare adds one INSERT of 1,000 rows
    // per table, in a transaction of its own.
    assert_eq!(d["Com_update"], 200, "{d:?}");
    assert_eq!(d["Com_delete"], 100, "{d:?}");
    assert_eq!(d["Com_insert"], 100 + 2, "{d:?}");
    assert_eq!(d["Com_begin"], 100 + 2, "{d:?}");
    assert_eq!(d["Com_commit"], 100 + 2, "{d:?}");
    // 1400 event selects, plus a few checks and session setup: max_allowed_packet per
    // loader, max_connections, MAX(id) per table, and the client library's settings query per
    // connection (5 connections here).
    assert!((1400..=1400 + 20).contains(&d["Com_select"]), "{d:?}");
    assert!(stdout.contains("SQL statistics:\n    queries performed:\n        read:                            1400\n        write:                           "), "{stdout}");
    assert!(
        stdout.contains("    transactions:                        100    ("),
        "{stdout}"
    );
    assert!(stdout.contains("Creating table 'sbtest2'..."), "{stdout}");
    assert!(
        stdout.contains("Inserting 1000 records into 'sbtest1'"),
        "{stdout}"
    );
    assert!(stdout.contains("Dropping table 'sbtest2'..."), "{stdout}");
    let rows = results(&dir.path().join("results"));
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(r["status"], "ok", "{r:?}");
    for col in ["tps", "qps", "reads", "writes", "other"] {
        let v: f64 = r[col]
            .parse()
            .unwrap_or_else(|_| panic!("{col} = {:?}", r[col]));
        assert!(v > 0.0, "{col} = {v}");
    }
    assert_eq!(r["reads"], "1400");
    assert_eq!(
        r["other"].parse::<u64>().unwrap() + r["writes"].parse::<u64>().unwrap(),
        600
    );
}

#[test]
fn sysbench_line_read_write_keeps_rows_with_ps_mode_disable() {
    let _serial = serial();
    let Some(db) = database("ps_disable") else {
        return;
    };
    let common = [
        "oltp_read_write".to_string(),
        "--mysql-host=127.0.0.1".into(),
        "--mysql-user=root".into(),
        format!("--mysql-db={db}"),
        "--tables=1".into(),
        "--table-size=500".into(),
        "--db-ps-mode=disable".into(),
    ];
    let prep = sbsuite()
        .arg("sysbench")
        .args(&common)
        .arg("prepare")
        .output()
        .unwrap();
    assert!(prep.status.success(), "{prep:?}");
    assert_eq!(rows(&db, "sbtest1"), 500);
    let before = status();
    let run = sbsuite()
        .arg("sysbench")
        .args(&common)
        .args(["--threads=3", "--events=60", "--time=0", "run"])
        .output()
        .unwrap();
    let after = status();
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    let count = rows(&db, "sbtest1");
    let cleanup = sbsuite()
        .arg("sysbench")
        .args(&common)
        .arg("cleanup")
        .output()
        .unwrap();
    drop_database(&db);
    assert!(run.status.success(), "{run:?}");
    assert!(cleanup.status.success(), "{cleanup:?}");
    assert_eq!(
        count, 500,
        "delete + insert of the same id keeps the row count"
    );
    let d = delta(&before, &after);
    // Three threads on 500 rows may deadlock: an ignored error re-runs the event from BEGIN.
    let errors: i64 = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("ignored errors:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no ignored errors line: {stdout}"));
    assert_eq!(d["Com_commit"], 60, "{d:?}");
    assert_eq!(d["Com_begin"], 60 + errors, "{d:?}");
    assert!((120..=120 + 2 * errors).contains(&d["Com_update"]), "{d:?}");
    assert!((60..=60 + errors).contains(&d["Com_delete"]), "{d:?}");
    assert!((60..=60 + errors).contains(&d["Com_insert"]), "{d:?}");
    assert!(
        stdout.contains("    transactions:                        60     ("),
        "{stdout}"
    );
    assert!(
        String::from_utf8_lossy(&cleanup.stdout).contains("Dropping table 'sbtest1'..."),
        "{cleanup:?}"
    );
}

#[test]
fn wrong_password_fails_clearly_without_leaking_it() {
    let _serial = serial();
    let Some(db) = database("badpw") else { return };
    let dir = tempfile::tempdir().unwrap();
    let secret = "not-the-Pa55word";
    let path = suite(
        dir.path(),
        &db,
        "password = \"{{ env.SBT_MYSQL_TEST_PASSWORD }}\"",
        "workload = \"oltp_point_select\"\ntables = 1\ntable_size = 100\ntime = 1",
    );
    let results_dir = dir.path().join("results");
    let out = sbsuite()
        .env("SBT_MYSQL_TEST_PASSWORD", secret)
        .args(["run"])
        .arg(&path)
        .arg("--results-dir")
        .arg(&results_dir)
        .args(["--progress", "plain"])
        .output()
        .unwrap();
    drop_database(&db);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    let all = format!("{stdout}{stderr}");
    assert!(all.contains("Access denied"), "{all}");
    assert!(!all.contains(secret), "the password leaked: {all}");
    // The run directory is written (so the failure is on record) and never holds the secret.
    assert!(!all_files_text(&results_dir).contains(secret));
    let rows = results(&results_dir);
    assert_eq!(rows.len(), 1, "the one run step is recorded: {rows:?}");
    let r = &rows[0];
    assert_eq!(r["status"], "failed", "{r:?}");
    assert!(r["error"].contains("1045"), "{r:?}");
    assert_eq!(r["tps"], "", "no measurements in a failed row: {r:?}");
}

#[test]
fn missing_database_and_missing_tables_fail_with_the_fix() {
    let _serial = serial();
    let Some(db) = database("missing") else {
        return;
    };
    let line = |db: &str, action: &str| {
        sbsuite()
            .arg("sysbench")
            .args([
                "oltp_read_only",
                "--mysql-host=127.0.0.1",
                "--mysql-user=root",
                &format!("--mysql-db={db}"),
                "--time=1",
                action,
            ])
            .output()
            .unwrap()
    };
    let nodb = line("sbsuite_t_does_not_exist", "run");
    let empty = line(&db, "run");
    drop_database(&db);
    assert!(!nodb.status.success());
    let e = String::from_utf8_lossy(&nodb.stdout);
    assert!(
        e.contains("Unknown database") && e.contains("sbsuite_t_does_not_exist"),
        "{e}"
    );
    assert!(!empty.status.success());
    let e = String::from_utf8_lossy(&empty.stdout);
    assert!(
        e.contains("'sbtest1' does not exist") && e.contains("run prepare first"),
        "{e}"
    );
    assert!(!String::from_utf8_lossy(&empty.stdout).contains("Threads started!"));
}

#[test]
fn killed_connections_reconnect_and_are_counted() {
    let _serial = serial();
    let Some(db) = database("kill") else { return };
    let args = |action: &str| {
        vec![
            "sysbench".to_string(),
            "oltp_point_select".into(),
            "--mysql-host=127.0.0.1".into(),
            "--mysql-user=root".into(),
            format!("--mysql-db={db}"),
            "--table-size=200".into(),
            "--threads=2".into(),
            // Long enough for the kill to land inside the run on a slow machine: it comes as
            // soon as both workers are seen connected, once the run has started.
            "--time=8".into(),
            action.into(),
        ]
    };
    let prep = sbsuite().args(args("prepare")).output().unwrap();
    assert!(prep.status.success(), "{prep:?}");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("sbsuite"))
        .args(args("run"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The workers connect before the clock starts: once the run reports `Threads started!`,
    // the processlist shows them (polled until it does, within a bound).
    let seen = read_until_started(&mut child, 1);
    let killed = rt().block_on(async {
        let mut c = mysql_async::Conn::new(opts(None)).await.unwrap();
        let me: u64 = c
            .query_first("SELECT CONNECTION_ID()")
            .await
            .unwrap()
            .unwrap();
        let start = std::time::Instant::now();
        let ids = loop {
            let ids: Vec<u64> = c
                .query(format!(
                    "SELECT id FROM information_schema.processlist WHERE db = '{db}' AND id <> {me}"
                ))
                .await
                .unwrap();
            if ids.len() >= 2 || start.elapsed() > std::time::Duration::from_secs(30) {
                break ids;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        };
        for id in &ids {
            let _ = c.query_drop(format!("KILL {id}")).await;
        }
        let _ = c.disconnect().await;
        ids.len()
    });
    let out = child.wait_with_output().unwrap();
    drop_database(&db);
    let stdout = String::from_utf8_lossy(&seen) + String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(killed, 2, "two worker connections were running");
    let reconnects: u64 = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("reconnects:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no reconnects line: {stdout}"));
    assert_eq!(reconnects, 2, "{stdout}");
}

#[test]
fn select_random_points_and_ranges_run_one_select_per_event_over_the_socket() {
    let _serial = serial();
    let Some(db) = database("random") else {
        return;
    };
    // No --mysql-host: sysbench's "localhost", reached through the server's default socket.
    let line = |w: &str, action: &str| {
        sbsuite()
            .arg("sysbench")
            .args([
                w,
                "--mysql-user=root",
                &format!("--mysql-db={db}"),
                "--table-size=300",
                "--threads=2",
                "--events=20",
                "--time=0",
                action,
            ])
            .output()
            .unwrap()
    };
    let prep = line("select_random_points", "prepare");
    let mut outs = Vec::new();
    for w in ["select_random_points", "select_random_ranges"] {
        let before = status();
        let out = line(w, "run");
        outs.push((w, out, delta(&before, &status())));
    }
    drop_database(&db);
    assert!(prep.status.success(), "{prep:?}");
    for (w, out, d) in outs {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{w}: {out:?}");
        assert!(
            stdout.contains("        read:                            20\n        write:                           0\n"),
            "{w}: {stdout}"
        );
        assert!((20..=20 + 8).contains(&d["Com_select"]), "{w}: {d:?}");
        assert_eq!(
            d["Com_update"] + d["Com_insert"] + d["Com_begin"],
            0,
            "{w}: {d:?}"
        );
    }
}

#[test]
fn bulk_insert_rows_are_events_and_flushes_are_queries() {
    let _serial = serial();
    let Some(db) = database("bulk") else { return };
    let line = |action: &str| {
        sbsuite()
            .arg("sysbench")
            .args([
                "bulk_insert",
                "--mysql-host=127.0.0.1",
                "--mysql-user=root",
                &format!("--mysql-db={db}"),
                "--threads=2",
                "--events=50000",
                "--time=0",
                action,
            ])
            .output()
            .unwrap()
    };
    let prep = line("prepare");
    let run = line("run");
    // Each thread inserts into its own table; how the 50,000 events split between the two
    // depends on scheduling (one thread may take most of them before the other starts).
    let per_table = [rows(&db, "sbtest1"), rows(&db, "sbtest2")];
    let count: i64 = per_table.iter().sum();
    let cleanup = line("cleanup");
    drop_database(&db);
    assert!(prep.status.success(), "{prep:?}");
    assert!(run.status.success(), "{run:?}");
    assert!(cleanup.status.success(), "{cleanup:?}");
    assert_eq!(count, 50_000, "every event is one row");
    let stdout = String::from_utf8_lossy(&run.stdout);
    // A flush is one write query: every thread that inserted flushes once at the end, and a
    // 512 KiB statement holds more than 35,000 rows of ~14 bytes, so of 50,000 rows at most
    // one table needs a second flush.
    let inserting = per_table.iter().filter(|&&n| n > 0).count() as u64;
    let writes = report_count(&stdout, "write:");
    assert!(
        (inserting..=inserting + 1).contains(&writes),
        "{writes} writes for {per_table:?} rows: {stdout}"
    );
    assert!(
        stdout.contains("    transactions:                        50000  ("),
        "{stdout}"
    );
    assert!(
        String::from_utf8_lossy(&cleanup.stdout).contains("Dropping table 'sbtest2'..."),
        "{cleanup:?}"
    );
}

#[test]
fn every_oltp_script_sends_its_sysbench_statements() {
    let _serial = serial();
    let Some(db) = database("scripts") else {
        return;
    };
    let line = |w: &str, action: &str| {
        sbsuite()
            .arg("sysbench")
            .args([
                w,
                "--mysql-host=127.0.0.1",
                "--mysql-user=root",
                &format!("--mysql-db={db}"),
                "--tables=2",
                "--table-size=300",
                "--events=10",
                "--time=0",
                action,
            ])
            .output()
            .unwrap()
    };
    let prep = line("oltp_read_only", "prepare");
    // (workload, [update, delete, insert, begin, commit], selects per event)
    let cases: [(&str, [i64; 5], i64); 7] = [
        ("oltp_read_only", [0, 0, 0, 10, 10], 14),
        ("oltp_write_only", [20, 10, 10, 10, 10], 0),
        ("oltp_point_select", [0, 0, 0, 0, 0], 1),
        ("oltp_update_index", [10, 0, 0, 0, 0], 0),
        ("oltp_update_non_index", [10, 0, 0, 0, 0], 0),
        ("oltp_delete", [0, 10, 0, 0, 0], 0),
        ("oltp_insert", [0, 0, 10, 0, 0], 0),
    ];
    let mut seen = Vec::new();
    for (w, _, _) in &cases {
        let before = status();
        let out = line(w, "run");
        seen.push((out, delta(&before, &status())));
    }
    let after_insert = rows(&db, "sbtest1") + rows(&db, "sbtest2");
    drop_database(&db);
    assert!(prep.status.success(), "{prep:?}");
    for ((w, counts, selects), (out, d)) in cases.iter().zip(&seen) {
        assert!(out.status.success(), "{w}: {out:?}");
        let got = [
            d["Com_update"],
            d["Com_delete"],
            d["Com_insert"],
            d["Com_begin"],
            d["Com_commit"],
        ];
        assert_eq!(&got, counts, "{w}: {d:?}");
        // Selects of the events plus the pre-run checks and session setup (a few).
        let s = d["Com_select"] - 10 * selects;
        assert!((0..=10).contains(&s), "{w}: {d:?}");
    }
    // 600 rows, at most 10 deleted by oltp_delete, 10 added by oltp_insert (auto_inc).
    assert!((600..=610).contains(&after_insert), "{after_insert}");
}

#[test]
fn prewarm_after_prepare_and_as_a_sysbench_command() {
    let _serial = serial();
    let Some(db) = database("prewarm") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = suite(
        dir.path(),
        &db,
        "",
        "workload = \"oltp_point_select\"\ntables = 2\ntable_size = 500\nthreads = 2\nevents = 10\ntime = 0\nprewarm = true",
    );
    let before = analyze_count();
    let out = sbsuite()
        .arg("run")
        .arg(&path)
        .arg("--results-dir")
        .arg(dir.path().join("r"))
        .arg("--quiet")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("Prewarming table sbtest1\n")
            && stdout.contains("Prewarming table sbtest2\n"),
        "{stdout}"
    );
    assert_eq!(analyze_count() - before, 2, "one ANALYZE TABLE per table");

    // sysbench's own command line: `prewarm` after a prepare.
    let db_opt = format!("--mysql-db={db}");
    let args = [
        "sysbench",
        "oltp_read_only",
        "--mysql-host=127.0.0.1",
        "--mysql-user=root",
        &db_opt,
        "--tables=1",
        "--table-size=100",
    ];
    let run = |cmd: &str| sbsuite().args(args).arg(cmd).output().unwrap();
    assert!(run("prepare").status.success());
    let out = run("prewarm");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success() && text.contains("Prewarming table sbtest1"),
        "{text}"
    );
    assert!(run("cleanup").status.success());
    drop_database(&db);
}

/// The server's count of ANALYZE TABLE statements.
fn analyze_count() -> i64 {
    rt().block_on(async {
        let mut c = mysql_async::Conn::new(opts(None)).await.unwrap();
        let v: Option<(String, String)> = c
            .query_first("SHOW GLOBAL STATUS LIKE 'Com_analyze'")
            .await
            .unwrap();
        let _ = c.disconnect().await;
        v.map_or(0, |(_, n)| n.parse().unwrap())
    })
}

#[test]
fn unreachable_host_fails_clearly_with_no_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.toml");
    std::fs::write(
        &path,
        "[suite]\nname = \"down\"\n[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:1\"]\nuser = \"root\"\ndatabase = \"test\"\n[defaults]\nworkload = \"oltp_point_select\"\ntime = 1\n",
    )
    .unwrap();
    let out = sbsuite()
        .arg("run")
        .arg(&path)
        .arg("--results-dir")
        .arg(dir.path().join("r"))
        .arg("--quiet")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("cannot connect to 127.0.0.1:1"), "{text}");
    // The prepare step failed, so its run is recorded as failed (not as a measurement).
    let rows = results(&dir.path().join("r"));
    assert_eq!(rows.len(), 1, "the one run step is recorded: {rows:?}");
    assert_eq!(rows[0]["status"], "failed", "{rows:?}");
}

#[test]
fn reconnect_option_reopens_the_connection_every_n_events() {
    let _serial = serial();
    let Some(db) = database("reconnect") else {
        return;
    };
    let line = |action: &str, extra: &[&str]| {
        sbsuite()
            .arg("sysbench")
            .args([
                "oltp_point_select",
                "--mysql-host=127.0.0.1",
                "--mysql-user=root",
                &format!("--mysql-db={db}"),
                "--table-size=100",
                "--threads=1",
                "--time=0",
            ])
            .args(extra)
            .arg(action)
            .output()
            .unwrap()
    };
    let connections = || {
        rt().block_on(async {
            let mut c = mysql_async::Conn::new(opts(None)).await.unwrap();
            let row: Option<(String, i64)> = c
                .query_first("SHOW GLOBAL STATUS LIKE 'Connections'")
                .await
                .unwrap();
            let _ = c.disconnect().await;
            row.unwrap().1
        })
    };
    let prep = line("prepare", &[]);
    let before = connections();
    let run = line("run", &["--events=60", "--reconnect=20"]);
    let after = connections();
    line("cleanup", &[]);
    drop_database(&db);
    assert!(prep.status.success(), "{prep:?}");
    assert!(run.status.success(), "{run:?}");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        stdout.contains("    reconnects:                          3      ("),
        "{stdout}"
    );
    // The check connection, the worker's first one, three reconnects and this probe.
    assert!(
        after - before >= 5,
        "Connections grew by {}",
        after - before
    );
}

fn global(name: &str) -> String {
    global_at(PORT, name)
}

/// [`global`] of the server on `port`.
fn global_at(port: u16, name: &str) -> String {
    rt().block_on(async {
        let mut c = mysql_async::Conn::new(opts_at(port, None)).await.unwrap();
        let v: Option<String> = c
            .query_first(format!("SELECT CAST(@@GLOBAL.{name} AS CHAR)"))
            .await
            .unwrap();
        let _ = c.disconnect().await;
        v.unwrap()
    })
}

/// Puts a global server variable back when dropped, also when the test panics: a test that
/// changes the shared server (itself or through a variant under test) restores it on its own,
/// without relying on the product it tests.
struct RestoreGlobal(&'static str, String);

impl RestoreGlobal {
    /// Saves the current value of the numeric variable `name`.
    fn save(name: &'static str) -> RestoreGlobal {
        RestoreGlobal(name, global(name))
    }
}

impl Drop for RestoreGlobal {
    fn drop(&mut self) {
        admin(&[format!("SET GLOBAL {} = {}", self.0, self.1)]);
    }
}

/// A suite with a `baseline` variant (unless `time` is long) and a `relaxed` one.
fn variant_suite(dir: &Path, db: &str, variant: &str, time: u32) -> std::path::PathBuf {
    variant_suite_at(dir, &format!("{HOST}:{PORT}"), db, variant, time)
}

/// [`variant_suite`] for the server at `addr`.
fn variant_suite_at(
    dir: &Path,
    addr: &str,
    db: &str,
    variant: &str,
    time: u32,
) -> std::path::PathBuf {
    let path = dir.join("variants.toml");
    let baseline = if time < 10 {
        "[[variant]]\nname = \"baseline\"\n\n"
    } else {
        ""
    };
    std::fs::write(
        &path,
        format!(
            "[suite]\nname = \"v\"\n\n[target]\ndriver = \"mysql\"\nhosts = [\"{addr}\"]\nuser = \"root\"\ndatabase = \"{db}\"\n\n[defaults]\nworkload = \"oltp_write_only\"\ntable_size = 500\nthreads = 2\ntime = {time}\nreport_interval = 0\n\n{baseline}[[variant]]\nname = \"relaxed\"\n{variant}\n"
        ),
    )
    .unwrap();
    path
}

/// Runs the suite at `path` into `results`, polling `@@GLOBAL.name` until it ends: every
/// distinct value seen, and the run's output.
fn run_watching(path: &Path, results: &Path, name: &str) -> (Vec<String>, std::process::Output) {
    use assert_cmd::cargo::CommandCargoExt;
    let mut child = std::process::Command::cargo_bin("sbsuite")
        .unwrap()
        .arg("run")
        .arg(path)
        .arg("--results-dir")
        .arg(results)
        .args(["--progress", "off"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let seen = watch(&mut child, name, |_| false);
    (seen, child.wait_with_output().unwrap())
}

/// Polls `@@GLOBAL.name` while `child` runs; returns every distinct value seen.
fn watch(
    child: &mut std::process::Child,
    name: &str,
    until: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() && start.elapsed().as_secs() < 60 {
        let v = global(name);
        if !seen.contains(&v) {
            seen.push(v);
        }
        if until(&seen) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    seen
}

#[test]
fn set_global_variant_is_applied_captured_and_restored() {
    let _serial = serial();
    let Some(db) = database("setglobal") else {
        return;
    };
    let _restore = [
        RestoreGlobal::save("innodb_flush_log_at_trx_commit"),
        RestoreGlobal::save("sync_binlog"),
    ];
    let before = (
        global("innodb_flush_log_at_trx_commit"),
        global("sync_binlog"),
    );
    assert_ne!(
        before.0, "2",
        "the server must not start with the variant's value"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = variant_suite(
        dir.path(),
        &db,
        "set_global = { innodb_flush_log_at_trx_commit = 2, sync_binlog = 10 }",
        2,
    );
    let (seen, out) = run_watching(
        &path,
        &dir.path().join("results"),
        "innodb_flush_log_at_trx_commit",
    );
    let after = (
        global("innodb_flush_log_at_trx_commit"),
        global("sync_binlog"),
    );
    drop_database(&db);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        seen.contains(&"2".to_string()),
        "never saw the variant applied: {seen:?}"
    );
    assert_eq!(after, before, "settings restored after the variant");
    let run = run_dir(&dir.path().join("results"), "v");
    let relaxed = std::fs::read_to_string(run.join("server/relaxed.csv")).unwrap();
    assert!(relaxed.starts_with("name,value\nversion,"), "{relaxed}");
    // #14: the server's build and host facts are in the capture, as the server states them.
    for fact in ["version_comment", "hostname", "innodb_buffer_pool_size"] {
        let value = global(fact);
        assert!(
            relaxed.contains(&format!("\n{fact},{value}\n")),
            "{fact} = {value}: {relaxed}"
        );
    }
    assert!(
        relaxed.contains("\ninnodb_flush_log_at_trx_commit,2\n"),
        "{relaxed}"
    );
    assert!(relaxed.contains("\nsync_binlog,10\n"), "{relaxed}");
    let baseline = std::fs::read_to_string(run.join("server/baseline.csv")).unwrap();
    assert!(
        baseline.contains(&format!("\ninnodb_flush_log_at_trx_commit,{}\n", before.0)),
        "{baseline}"
    );
    assert!(
        !run.join("server/restore-relaxed.json").exists(),
        "the restore file goes once restored"
    );
    let rows = results(&dir.path().join("results"));
    let variants: Vec<&str> = rows.iter().map(|r| r["variant"].as_str()).collect();
    assert_eq!(variants, ["baseline", "relaxed"]);
    assert!(rows.iter().all(|r| r["status"] == "ok"), "{rows:?}");
}

#[test]
fn interleaved_variants_alternate_on_one_dataset_and_reapply_settings_per_run() {
    let _serial = serial();
    let Some(db) = database("interleave") else {
        return;
    };
    let _restore = [RestoreGlobal::save("innodb_flush_log_at_trx_commit")];
    let before = global("innodb_flush_log_at_trx_commit");
    assert_ne!(
        before, "2",
        "the server must not start with the variant's value"
    );
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen.txt");
    let path = dir.path().join("interleaved.toml");
    // Each step's hook reads the setting the server has while the step starts.
    std::fs::write(
        &path,
        format!(
            "[suite]\nname = \"il\"\nrepeat = 2\nvariant_order = \"interleaved\"\n\n[target]\ndriver = \"mysql\"\nhosts = [\"{HOST}:{PORT}\"]\nuser = \"root\"\ndatabase = \"{db}\"\n\n[defaults]\nworkload = \"oltp_point_select\"\ntable_size = 200\ntime = 1\nreport_interval = 0\n\n[matrix]\nthreads = [1, 2]\n\n[hooks]\nbefore_step = \"echo {{{{ kind }}}} {{{{ variant }}}} $(mysql -h {HOST} -P {PORT} -u root -N -e 'SELECT @@GLOBAL.innodb_flush_log_at_trx_commit') >> {}\"\n\n[[variant]]\nname = \"baseline\"\n\n[[variant]]\nname = \"relaxed\"\nset_global = {{ innodb_flush_log_at_trx_commit = 2 }}\n",
            seen.display()
        ),
    )
    .unwrap();
    let out = sbsuite()
        .arg("run")
        .arg(&path)
        .arg("--results-dir")
        .arg(dir.path().join("results"))
        .args(["--progress", "off"])
        .output()
        .unwrap();
    let after = global("innodb_flush_log_at_trx_commit");
    drop_database(&db);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(after, before, "settings restored after the run");
    let rows = results(&dir.path().join("results"));
    let order: Vec<String> = rows
        .iter()
        .map(|r| format!("{} t{} r{}", r["variant"], r["threads"], r["repetition"]))
        .collect();
    assert_eq!(
        order,
        [
            "baseline t1 r1",
            "relaxed t1 r1",
            "relaxed t2 r1",
            "baseline t2 r1",
            "relaxed t1 r2",
            "baseline t1 r2",
            "baseline t2 r2",
            "relaxed t2 r2",
        ]
    );
    assert!(rows.iter().all(|r| r["status"] == "ok"), "{rows:?}");
    // One prepare and one cleanup for both variants, and every run saw its own variant's
    // setting: applied again at each switch, put back for the baseline.
    let seen = std::fs::read_to_string(&seen).unwrap();
    let lines: Vec<&str> = seen.lines().collect();
    assert_eq!(
        lines.first(),
        Some(&format!("prepare baseline {before}").as_str()),
        "{seen}"
    );
    assert_eq!(lines.last(), Some(&"cleanup relaxed 2"), "{seen}");
    let runs: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("run "))
        .collect();
    let expected: Vec<String> = rows
        .iter()
        .map(|r| {
            let value = if r["variant"] == "relaxed" {
                "2"
            } else {
                before.as_str()
            };
            format!("run {} {value}", r["variant"])
        })
        .collect();
    assert_eq!(runs, expected, "{seen}");
    assert_eq!(lines.len(), 10, "{seen}");
}

#[test]
fn unknown_or_read_only_variables_are_refused_before_anything_runs() {
    let _serial = serial();
    let Some(db) = database("badvar") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (setting, expect) in [
        (
            "set_global = { innodb_flush_log_at_trx_comit = 2 }",
            "is not a variable of this server",
        ),
        (
            "set_global = { innodb_page_size = 8192 }",
            "is read-only at runtime",
        ),
    ] {
        let path = variant_suite(dir.path(), &db, setting, 1);
        let out = sbsuite()
            .arg("run")
            .arg(&path)
            .arg("--results-dir")
            .arg(dir.path().join("results"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(expect), "{stderr}");
        assert!(
            stderr.contains("variants.toml:"),
            "names the file: {stderr}"
        );
        assert!(stderr.contains("set_global"), "names the key: {stderr}");
        // `validate` checks the same when the server can be reached.
        let out = sbsuite().arg("validate").arg(&path).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(expect),
            "{out:?}"
        );
    }
    // …and only notes it when the server cannot be reached.
    let path = variant_suite(dir.path(), &db, "set_global = { sync_binlog = 3 }", 1);
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace(&format!("{HOST}:{PORT}"), "127.0.0.1:1");
    std::fs::write(&path, text).unwrap();
    let out = sbsuite().arg("validate").arg(&path).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("set_global not checked against the server"),
        "{out:?}"
    );
    drop_database(&db);
    assert!(!dir.path().join("results").exists(), "nothing ran");
}

/// A run killed with SIGKILL inside a variant leaves the restore file, and `sbsuite restore`
/// puts the server back: for `set_global` (the saved original) and for `settings` + `sql`
/// (the restore statement rendered with the original before the change, #14).
#[test]
fn kill_9_mid_variant_then_restore_puts_the_server_back() {
    use assert_cmd::cargo::CommandCargoExt;
    let _serial = serial();
    let sql = format!("settings = {{ max_connect_errors = 4322 }}\n{SQL_MAX_CONNECT_ERRORS}");
    // (variant, variable, its value in the variant, what `restore` says with BEFORE).
    let cases = [
        (
            "set_global = { innodb_flush_log_at_trx_commit = 2 }",
            "innodb_flush_log_at_trx_commit",
            "2",
            "restored variant relaxed: innodb_flush_log_at_trx_commit = BEFORE",
        ),
        (
            sql.as_str(),
            "max_connect_errors",
            "4322",
            "restored variant relaxed: `SET GLOBAL max_connect_errors = BEFORE`",
        ),
    ];
    for (i, (variant, name, value, restored)) in cases.into_iter().enumerate() {
        // A database per case: the killed run leaves its tables behind.
        let Some(db) = database(&format!("restore{i}")) else {
            return;
        };
        let _restore = RestoreGlobal::save(name);
        let before = global(name);
        assert_ne!(
            before, value,
            "the server must not start with the variant's value"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = variant_suite(dir.path(), &db, variant, 30);
        let results_dir = dir.path().join("results");
        let mut child = std::process::Command::cargo_bin("sbsuite")
            .unwrap()
            .arg("run")
            .arg(&path)
            .arg("--results-dir")
            .arg(&results_dir)
            .args(["--progress", "off"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let seen = watch(&mut child, name, |s| s.contains(&value.to_string()));
        child.kill().unwrap(); // SIGKILL: no restore can run
        child.wait().unwrap();
        let during = global(name);
        let run = run_dir(&results_dir, "v");
        let pending = run.join("server/restore-relaxed.json").exists();
        let out = sbsuite().arg("restore").arg(&run).output().unwrap();
        let after = global(name);
        let again = sbsuite().arg("restore").arg(&run).output().unwrap();
        assert!(seen.contains(&value.to_string()), "{name}: {seen:?}");
        assert_eq!(
            during, value,
            "kill -9 leaves the variant's value of {name}"
        );
        assert!(pending, "the originals were saved before the change");
        assert!(out.status.success(), "{out:?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(&restored.replace("BEFORE", &before)),
            "{out:?}"
        );
        assert_eq!(after, before);
        assert!(!run.join("server/restore-relaxed.json").exists());
        drop_database(&db);
        assert!(
            String::from_utf8_lossy(&again.stdout).contains("nothing to restore"),
            "{again:?}"
        );
    }
}

/// A private throwaway MariaDB started with the server `options`, with a fresh database
/// `sbsuite_t_<name>` on it, for a test that restarts or reconfigures the server: those never
/// touch the shared one. `None` (after saying why) when none can start, outside CI.
fn private_server(name: &str, options: &[&str]) -> Option<(PrivateMariaDb, String)> {
    let server = or_skip(PrivateMariaDb::start(options))?;
    let db = format!("sbsuite_t_{name}");
    admin_at(server.port(), &[format!("CREATE DATABASE {db}")])
        .expect("CREATE DATABASE on the private server");
    Some((server, db))
}

#[test]
fn restart_variant_renders_its_file_restarts_verifies_and_restores() {
    // Its own server: no `serial()`, nothing shared is read or restarted.
    let Some((server, db)) = private_server("restart", &[]) else {
        return;
    };
    let port = server.port();
    let before = global_at(port, "back_log");
    let wanted = if before == "77" { "78" } else { "77" };
    let dir = tempfile::tempdir().unwrap();
    let cnf = dir.path().join("zz-sbsuite.cnf");
    std::fs::write(
        dir.path().join("backlog.cnf.j2"),
        "# rendered by sbsuite for {{ variant }}\n[mysqld]\nback_log = {{ back_log }}\n",
    )
    .unwrap();
    let variant = format!(
        "restart = {{ template = \"backlog.cnf.j2\", path = \"{}\", command = \"{}\", ready_timeout = 60, settings = {{ back_log = {wanted} }} }}\nset_global = {{ sync_binlog = 3 }}",
        cnf.display(),
        server.restart_command(&cnf).replace('"', "\\\"")
    );
    let path = variant_suite_at(dir.path(), &server.addr(), &db, &variant, 1);
    let out = sbsuite()
        .arg("run")
        .arg(&path)
        .arg("--results-dir")
        .arg(dir.path().join("results"))
        .args(["--progress", "off"])
        .output()
        .unwrap();
    let after = (global_at(port, "back_log"), global_at(port, "sync_binlog"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        server.starts(),
        3,
        "started once, restarted to apply the file and again to undo it"
    );
    assert_eq!(after, (before.clone(), "0".to_string()), "restored");
    assert!(
        !cnf.exists(),
        "the rendered file is removed after the variant"
    );
    let run = run_dir(&dir.path().join("results"), "v");
    let relaxed = std::fs::read_to_string(run.join("server/relaxed.csv")).unwrap();
    assert!(
        relaxed.contains(&format!("\nback_log,{wanted}\n")),
        "static setting read after the restart"
    );
    assert!(
        relaxed.contains("\nsync_binlog,3\n"),
        "set_global on the restarted server"
    );
    let baseline = std::fs::read_to_string(run.join("server/baseline.csv")).unwrap();
    assert!(baseline.contains(&format!("\nback_log,{before}\n")));
    let rows = results(&dir.path().join("results"));
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r["status"] == "ok"), "{rows:?}");
}

#[test]
fn kill_9_then_resume_finishes_every_row_once_and_restores_the_server() {
    use assert_cmd::cargo::CommandCargoExt;
    let _serial = serial();
    let Some(db) = database("resume") else {
        return;
    };
    let _restore = RestoreGlobal::save("innodb_flush_log_at_trx_commit");
    let before = global("innodb_flush_log_at_trx_commit");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("resume.toml");
    std::fs::write(
        &path,
        format!(
            "[suite]\nname = \"r\"\n\n[target]\ndriver = \"mysql\"\nhosts = [\"{HOST}:{PORT}\"]\nuser = \"root\"\ndatabase = \"{db}\"\n\n[defaults]\nworkload = \"oltp_point_select\"\ntable_size = 1000\ntime = 3\nreport_interval = 1\n\n[matrix]\nthreads = [1, 2, 3]\n\n[[variant]]\nname = \"relaxed\"\nset_global = {{ innodb_flush_log_at_trx_commit = 2 }}\n"
        ),
    )
    .unwrap();
    let results_dir = dir.path().join("results");
    let mut child = std::process::Command::cargo_bin("sbsuite")
        .unwrap()
        .arg("run")
        .arg(&path)
        .arg("--results-dir")
        .arg(&results_dir)
        .args(["--progress", "off"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Kill it inside the second run (step 3), once its first interval row is on disk: the
    // resume must drop that partial step's rows and run it again. The step has 2 s left then.
    let start = std::time::Instant::now();
    let run = loop {
        assert!(
            start.elapsed().as_secs() < 60,
            "step 3 never wrote an interval row"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the suite ended before step 3 wrote an interval row"
        );
        if let Some(Ok(e)) = std::fs::read_dir(results_dir.join("r"))
            .ok()
            .and_then(|mut d| d.next())
        {
            let run = e.path();
            let text = std::fs::read_to_string(run.join("intervals.csv")).unwrap_or_default();
            if text.lines().any(|l| l.split(',').nth(1) == Some("3")) {
                break run;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let during = global("innodb_flush_log_at_trx_commit");
    let out = sbsuite()
        .args(["run", "--progress", "plain", "--resume"])
        .arg(&run)
        .output()
        .unwrap();
    let after = global("innodb_flush_log_at_trx_commit");
    let tables_left = rt().block_on(async {
        let mut c = mysql_async::Conn::new(opts(Some(&db))).await.unwrap();
        let n: Option<i64> = c
            .query_first(format!(
                "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '{db}'"
            ))
            .await
            .unwrap();
        let _ = c.disconnect().await;
        n.unwrap()
    });
    drop_database(&db);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(during, "2", "kill -9 left the variant's setting");
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("restored the settings of variant relaxed"),
        "{stderr}"
    );
    assert!(
        stderr.contains("2 kept from before the resume"),
        "prepare and run 1: {stderr}"
    );
    assert_eq!(after, before, "restored after the resumed variant");
    assert_eq!(tables_left, 0, "cleanup ran");
    let rows = results(&results_dir);
    let mut steps: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r["step"].clone(), r["status"].clone()))
        .collect();
    steps.sort();
    assert_eq!(
        steps,
        [("2", "ok"), ("3", "ok"), ("4", "ok")].map(|(a, b)| (a.to_string(), b.to_string())),
        "every run exactly once"
    );
    let journal = std::fs::read_to_string(run.join("journal.log")).unwrap();
    assert_eq!(
        journal.matches("prepare start").count(),
        1,
        "prepared once: {journal}"
    );
    let intervals = std::fs::read_to_string(run.join("intervals.csv")).unwrap();
    for step in ["2", "3", "4"] {
        let n = intervals
            .lines()
            .filter(|l| l.split(',').nth(1) == Some(step))
            .count();
        assert_eq!(
            n, 3,
            "step {step}: one interval row per second, none duplicated:\n{intervals}"
        );
    }
}

/// Makes a CA, a server certificate for 127.0.0.1/localhost signed by it, and an unrelated CA
/// in `dir` (readable by the server's user).
fn make_certs(dir: &Path) {
    let script = r#"set -e
ca() { openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.pem" -days 2 -subj "/CN=sbsuite test $1" -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null; }
ca ca
ca other
openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=127.0.0.1" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' > ext.cnf
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile ext.cnf 2>/dev/null
chmod 0755 . && chmod 0644 ./*
"#;
    let ok = std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .status()
        .unwrap()
        .success();
    assert!(ok, "openssl could not make the test certificates");
}

fn ssl_accepts(port: u16) -> i64 {
    rt().block_on(async {
        let mut c = mysql_async::Conn::new(opts_at(port, None)).await.unwrap();
        let row: Option<(String, i64)> = c
            .query_first("SHOW GLOBAL STATUS LIKE 'Ssl_accepts'")
            .await
            .unwrap();
        let _ = c.disconnect().await;
        row.map(|r| r.1).unwrap_or(0)
    })
}

#[test]
fn tls_modes_encrypt_and_verify_against_a_tls_enabled_server() {
    let openssl = std::process::Command::new("sh")
        .arg("-c")
        .arg("command -v openssl")
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !openssl {
        common::skip("no openssl to make the test certificates (apt-get install -y openssl)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path().join("certs");
    std::fs::create_dir(&certs).unwrap();
    make_certs(&certs);
    // Its own server, started with TLS on: no `serial()`, nothing shared is restarted.
    let c = certs.display();
    let Some((server, db)) = private_server(
        "tls",
        &[
            &format!("--ssl-ca={c}/ca.pem"),
            &format!("--ssl-cert={c}/server.pem"),
            &format!("--ssl-key={c}/server.key"),
        ],
    ) else {
        return;
    };
    let port = server.port();
    assert_eq!(global_at(port, "have_ssl"), "YES", "TLS on in the server");
    let run = |ssl: &str, ca: Option<&str>| {
        let ca_line = ca
            .map(|c| format!("ssl_ca = \"{}/{c}\"\n", certs.display()))
            .unwrap_or_default();
        let path = suite_at(
            dir.path(),
            &server.addr(),
            &db,
            &format!("ssl = \"{ssl}\"\n{ca_line}"),
            "workload = \"oltp_point_select\"\ntable_size = 100\nthreads = 2\ntime = 1\nreport_interval = 0",
        );
        let before = ssl_accepts(port);
        let out = sbsuite()
            .arg("run")
            .arg(&path)
            .arg("--results-dir")
            .arg(
                dir.path()
                    .join(format!("results-{ssl}-{}", ca.unwrap_or("none"))),
            )
            .args(["--progress", "off"])
            .output()
            .unwrap();
        (out, ssl_accepts(port) - before)
    };
    // required: encrypted, certificate not checked; verify_ca: the chain must lead to ssl_ca;
    // verify_identity: the certificate must also name 127.0.0.1.
    let required = run("required", None);
    let verify_ca = run("verify_ca", Some("ca.pem"));
    let identity = run("verify_identity", Some("ca.pem"));
    let wrong_ca = run("verify_ca", Some("other.pem"));
    for (name, (out, accepted)) in [
        ("required", &required),
        ("verify_ca", &verify_ca),
        ("verify_identity", &identity),
    ] {
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // prepare, check, 2 workers, cleanup: every connection negotiated TLS.
        assert!(*accepted >= 5, "{name}: only {accepted} TLS handshakes");
    }
    let stderr = String::from_utf8_lossy(&wrong_ca.0.stderr);
    assert_eq!(wrong_ca.0.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.to_lowercase().contains("certificate") || stderr.contains("UnknownIssuer"),
        "a certificate from another CA is refused with a reason: {stderr}"
    );
}

/// sbsuite's own protocol client (the default) and mysql_async (`SBSUITE_MYSQL_CLIENT=async`)
/// send the same statements, prepared and as text; an unknown client name is an error.
#[test]
fn wire_and_async_clients_send_the_same_statements() {
    let _serial = serial();
    let Some(db) = database("clients") else {
        return;
    };
    let line = |client: Option<&str>, extra: &[&str], action: &str| {
        let mut cmd = sbsuite();
        if let Some(c) = client {
            cmd.env("SBSUITE_MYSQL_CLIENT", c);
        }
        cmd.arg("sysbench")
            .args([
                "oltp_read_write",
                "--mysql-host=127.0.0.1",
                "--mysql-user=root",
                &format!("--mysql-db={db}"),
                "--tables=2",
                "--table-size=500",
                "--threads=1",
                "--events=40",
                "--time=0",
            ])
            .args(extra)
            .arg(action)
            .output()
            .unwrap()
    };
    let prep = line(None, &[], "prepare");
    assert!(prep.status.success(), "{prep:?}");
    let mut runs = Vec::new();
    for ps in [&[][..], &["--db-ps-mode=disable"][..]] {
        for client in [None, Some("wire"), Some("async")] {
            let before = status();
            let out = line(client, ps, "run");
            runs.push((client, ps, out, delta(&before, &status())));
        }
    }
    let bogus = line(Some("libmysql"), &[], "run");
    let count = rows(&db, "sbtest1") + rows(&db, "sbtest2");
    drop_database(&db);
    for (client, ps, out, d) in &runs {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{client:?} {ps:?}: {out:?}");
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("using mysql_async"),
            "no fallback: {out:?}"
        );
        assert!(
            stdout.contains("        read:                            560\n"),
            "{client:?} {ps:?}: {stdout}"
        );
        let writes = [
            d["Com_update"],
            d["Com_delete"],
            d["Com_insert"],
            d["Com_begin"],
            d["Com_commit"],
        ];
        assert_eq!(writes, [80, 40, 40, 40, 40], "{client:?} {ps:?}: {d:?}");
        // 40 events × 14 selects, plus the pre-run checks and per-connection session setup.
        assert!(
            (560..=560 + 10).contains(&d["Com_select"]),
            "{client:?}: {d:?}"
        );
    }
    assert_eq!(count, 1000, "delete + insert of the same id keeps the rows");
    assert!(!bogus.status.success());
    let e = String::from_utf8_lossy(&bogus.stdout);
    assert!(
        e.contains(
            "SBSUITE_MYSQL_CLIENT=libmysql is not a MySQL client: use wire (the default) or async"
        ),
        "{e}"
    );
}

/// The client switch is not a suite key: `sbsuite run` accepts it next to a suite file.
#[test]
fn client_switch_is_not_read_as_a_suite_key() {
    let _serial = serial();
    let Some(db) = database("switch") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = suite(
        dir.path(),
        &db,
        "",
        "workload = \"oltp_point_select\"\ntables = 1\ntable_size = 100\nthreads = 2\nevents = 20\ntime = 0\nreport_interval = 0",
    );
    let out = sbsuite()
        .env("SBSUITE_MYSQL_CLIENT", "async")
        .arg("run")
        .arg(&path)
        .arg("--results-dir")
        .arg(dir.path().join("r"))
        .arg("--quiet")
        .output()
        .unwrap();
    drop_database(&db);
    assert!(out.status.success(), "{out:?}");
    let rows = results(&dir.path().join("r"));
    assert_eq!(rows[0]["reads"], "20", "{rows:?}");
}

/// `sbsuite sysbench WORKLOAD` against `db` over TCP as root, with `extra` options.
fn sysbench_line(db: &str, workload: &str, extra: &[&str], action: &str) -> std::process::Output {
    sbsuite()
        .arg("sysbench")
        .arg(workload)
        .args([
            format!("--mysql-host={HOST}"),
            format!("--mysql-port={PORT}"),
            "--mysql-user=root".into(),
            format!("--mysql-db={db}"),
        ])
        .args(extra)
        .arg(action)
        .output()
        .unwrap()
}

fn text(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn injected_deadlocks_are_ignored_counted_and_the_event_rerun() {
    let _serial = serial();
    let Some(db) = database("deadlock") else {
        return;
    };
    let common = ["--tables=1", "--table-size=100"];
    let prep = sysbench_line(&db, "oltp_write_only", &common, "prepare");
    assert!(prep.status.success(), "{}", text(&prep));
    // A real deadlock between two workers cannot be scheduled deterministically, so the server
    // reports one on purpose: every fifth UPDATE in a session fails with error 1213.
    admin(&[format!(
        "CREATE TRIGGER {db}.deadlock BEFORE UPDATE ON {db}.sbtest1 FOR EACH ROW BEGIN \
           SET @updates = IFNULL(@updates, 0) + 1; \
           IF @updates % 5 = 0 THEN \
             SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213, MESSAGE_TEXT = 'injected deadlock'; \
           END IF; \
         END"
    )])
    .unwrap();
    let events = ["--threads=1", "--events=100", "--time=0"];
    let before = status();
    let run = sysbench_line(
        &db,
        "oltp_write_only",
        &[&common[..], &events].concat(),
        "run",
    );
    let after = status();
    // 1213 is in sysbench's default --mysql-ignore-errors; without it the run stops at once.
    let strict = sysbench_line(
        &db,
        "oltp_write_only",
        &[&common[..], &events, &["--mysql-ignore-errors=1205"]].concat(),
        "run",
    );
    drop_database(&db);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{}", text(&run));
    // A write_only event is BEGIN, two UPDATEs, DELETE, INSERT, COMMIT. Every fifth UPDATE
    // fails and its event is re-run from BEGIN: 100 committed events take 149 BEGINs and
    // 249 UPDATEs, of which 49 failed.
    assert_eq!(report_count(&stdout, "ignored errors:"), 49, "{stdout}");
    let d = delta(&before, &after);
    assert_eq!(d["Com_update"], 249, "{d:?}");
    assert_eq!(d["Com_begin"], 149, "{d:?}");
    assert_eq!(d["Com_commit"], 100, "{d:?}");
    assert_eq!((d["Com_delete"], d["Com_insert"]), (100, 100), "{d:?}");
    assert_eq!(strict.status.code(), Some(1), "{}", text(&strict));
    let msg = text(&strict);
    assert!(
        msg.contains("1213")
            && msg.contains("injected deadlock")
            && msg.contains("UPDATE sbtest1 SET k=k+1 WHERE id=?"),
        "{msg}"
    );
}

#[test]
fn compression_shrinks_what_the_server_sends() {
    let _serial = serial();
    let Some(db) = database("compression") else {
        return;
    };
    let common = ["--tables=1", "--table-size=1000"];
    let prep = sysbench_line(&db, "oltp_read_only", &common, "prepare");
    assert!(prep.status.success(), "{}", text(&prep));
    let sent = || -> i64 {
        rt().block_on(async {
            let mut c = mysql_async::Conn::new(opts(None)).await.unwrap();
            let v: Option<(String, i64)> = c
                .query_first("SHOW GLOBAL STATUS LIKE 'Bytes_sent'")
                .await
                .unwrap();
            let _ = c.disconnect().await;
            v.unwrap().1
        })
    };
    let mut bytes = Vec::new();
    for compression in ["off", "on"] {
        let before = sent();
        let run = sysbench_line(
            &db,
            "oltp_read_only",
            &[
                &common[..],
                &[
                    "--events=50",
                    "--time=0",
                    &format!("--mysql-compression={compression}"),
                ],
            ]
            .concat(),
            "run",
        );
        assert!(run.status.success(), "{}", text(&run));
        assert!(text(&run).contains("transactions:                        50"));
        bytes.push(sent() - before);
    }
    drop_database(&db);
    // The range selects return 100 rows of c/pad digits per statement: zlib shrinks them to
    // about half (measured: 2.01 MB plain, 1.06 MB compressed).
    assert!(
        bytes[1] * 10 < bytes[0] * 7,
        "plain {} B, compressed {} B",
        bytes[0],
        bytes[1]
    );
}

#[test]
fn dry_run_reaches_no_server_and_counts_every_statement_as_other() {
    // Port 1: nothing listens there, so any real connection attempt would fail.
    let common = [
        "oltp_read_write",
        "--mysql-host=127.0.0.1",
        "--mysql-port=1",
        "--mysql-dry-run=on",
        "--tables=2",
        "--table-size=1000",
    ];
    let prep = sbsuite()
        .arg("sysbench")
        .args(common)
        .arg("prepare")
        .output()
        .unwrap();
    assert!(prep.status.success(), "{}", text(&prep));
    assert!(
        text(&prep).contains("Inserting 1000 records into 'sbtest2'"),
        "{}",
        text(&prep)
    );
    let run = sbsuite()
        .arg("sysbench")
        .args(common)
        .args(["--threads=2", "--events=50", "--time=0", "run"])
        .output()
        .unwrap();
    let stdout = text(&run);
    assert!(run.status.success(), "{stdout}");
    // sysbench's read_write event is 20 statements; in a dry run none has a result.
    assert_eq!(report_count(&stdout, "read:"), 0, "{stdout}");
    assert_eq!(report_count(&stdout, "write:"), 0, "{stdout}");
    assert_eq!(report_count(&stdout, "other:"), 1000, "{stdout}");
    assert_eq!(report_count(&stdout, "transactions:"), 50, "{stdout}");
}

#[test]
fn a_socket_list_spreads_connections_round_robin() {
    let _serial = serial();
    let Some(db) = database("sockets") else {
        return;
    };
    let socket = global("socket");
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such.sock");
    // The first connection of every step takes the first socket; a second worker takes the
    // second one, which does not exist: the one-thread run works, the two-thread run fails
    // naming it.
    let path = suite(
        dir.path(),
        &db,
        &format!("socket = [\"{socket}\", \"{}\"]", missing.display()),
        "workload = \"oltp_point_select\"\ntables = 1\ntable_size = 100\nevents = 100\ntime = 0\n\n[matrix]\nthreads = [1, 2]",
    );
    let results_dir = dir.path().join("results");
    let out = sbsuite()
        .arg("run")
        .arg(&path)
        .arg("--results-dir")
        .arg(&results_dir)
        .arg("--quiet")
        .output()
        .unwrap();
    drop_database(&db);
    let rows = results(&results_dir);
    assert_eq!(rows.len(), 2, "{rows:?}\n{}", text(&out));
    assert_eq!(rows[0]["status"], "ok", "{rows:?}");
    assert_eq!(rows[1]["status"], "failed", "{rows:?}");
    assert!(rows[1]["error"].contains("no-such.sock"), "{rows:?}");
}

#[test]
fn too_few_prepared_statements_fail_before_the_run_with_the_fix() {
    let _serial = serial();
    let Some(db) = database("stmt_count") else {
        return;
    };
    let common = ["--tables=2", "--table-size=100", "--events=10", "--time=0"];
    let prep = sysbench_line(&db, "oltp_read_write", &common, "prepare");
    assert!(prep.status.success(), "{}", text(&prep));
    let _restore = RestoreGlobal::save("max_prepared_stmt_count");
    admin(&["SET GLOBAL max_prepared_stmt_count = 30".to_string()]).unwrap();
    // read_write prepares 9 statements per table: 2 tables × 2 connections = 36 > 30.
    let two = sysbench_line(
        &db,
        "oltp_read_write",
        &[&common[..], &["--threads=2"]].concat(),
        "run",
    );
    let one = sysbench_line(
        &db,
        "oltp_read_write",
        &[&common[..], &["--threads=1"]].concat(),
        "run",
    );
    let text_mode = sysbench_line(
        &db,
        "oltp_read_write",
        &[&common[..], &["--threads=2", "--db-ps-mode=disable"]].concat(),
        "run",
    );
    drop(_restore);
    drop_database(&db);
    let msg = text(&two);
    assert_eq!(two.status.code(), Some(1), "{msg}");
    assert!(
        msg.contains("prepares 18 statements on each of 2 connections (36 in all)")
            && msg.contains("max_prepared_stmt_count = 30")
            && msg.contains("--db-ps-mode=disable"),
        "{msg}"
    );
    assert!(!msg.contains("transactions:"), "nothing ran: {msg}");
    assert!(one.status.success(), "{}", text(&one));
    assert!(text_mode.status.success(), "{}", text(&text_mode));
}

/// What a prepared table holds: rows, id range and distinct ids, k range, rows whose c and pad
/// have sysbench's shape, the `k` index, and CHECK TABLE's verdict.
fn table_shape(db: &str, table: &str) -> ([i64; 8], i64, String) {
    rt().block_on(async {
        let mut c = mysql_async::Conn::new(opts(Some(db))).await.unwrap();
        let row: (i64, i64, i64, i64, i64, i64, i64, i64) = c
            .query_first(format!(
                "SELECT COUNT(*), MIN(id), MAX(id), COUNT(DISTINCT id), MIN(k), MAX(k), \
                 SUM(c REGEXP '^([0-9]{{11}}-){{9}}[0-9]{{11}}$'), \
                 SUM(pad REGEXP '^([0-9]{{11}}-){{4}}[0-9]{{11}}$') FROM {table}"
            ))
            .await
            .unwrap()
            .unwrap();
        let index: Option<i64> = c
            .query_first(format!(
                "SELECT COUNT(*) FROM information_schema.STATISTICS WHERE table_schema = '{db}' \
                 AND table_name = '{table}' AND index_name = 'k_{}' AND column_name = 'k'",
                &table["sbtest".len()..]
            ))
            .await
            .unwrap();
        let check: Vec<(String, String, String, String)> =
            c.query(format!("CHECK TABLE {table}")).await.unwrap();
        let _ = c.disconnect().await;
        let (n, lo, hi, ids, klo, khi, cs, pads) = row;
        (
            [n, lo, hi, ids, klo, khi, cs, pads],
            index.unwrap(),
            check.last().map(|r| r.3.clone()).unwrap_or_default(),
        )
    })
}

/// Issue #4: prepare loads through prepared multi-row INSERTs (full batches of 1,000 rows) and a
/// text INSERT for the rest; with both clients and with ids from the server (`auto_inc`) or from
/// the client, every table holds exactly rows 1..table_size in sysbench's shape.
#[test]
fn prepare_loads_every_row_in_sysbench_shape_with_both_clients() {
    let _serial = serial();
    let Some(db) = database("prepare_shape") else {
        return;
    };
    for client in ["wire", "async"] {
        for auto_inc in ["on", "off"] {
            let run = |action: &str| {
                sbsuite()
                    .env("SBSUITE_MYSQL_CLIENT", client)
                    .args([
                        "sysbench",
                        "oltp_read_write",
                        "--mysql-host=127.0.0.1",
                        "--mysql-user=root",
                        &format!("--mysql-db={db}"),
                        "--tables=2",
                        "--table-size=2500",
                        "--threads=2",
                        &format!("--auto_inc={auto_inc}"),
                        action,
                    ])
                    .output()
                    .unwrap()
            };
            let executes = || {
                rt().block_on(async {
                    let mut c = mysql_async::Conn::new(opts(None)).await.unwrap();
                    let v: Option<(String, i64)> = c
                        .query_first("SHOW GLOBAL STATUS LIKE 'Com_stmt_execute'")
                        .await
                        .unwrap();
                    let _ = c.disconnect().await;
                    v.unwrap().1
                })
            };
            let before = executes();
            let out = run("prepare");
            assert!(out.status.success(), "{client} {auto_inc}: {out:?}");
            // Two full batches of 1,000 rows per table; the last 500 rows go as text.
            assert_eq!(executes() - before, 4, "{client} {auto_inc}");
            for table in ["sbtest1", "sbtest2"] {
                let (shape, index, check) = table_shape(&db, table);
                let [n, lo, hi, ids, klo, khi, cs, pads] = shape;
                assert_eq!(
                    [n, lo, hi, ids, cs, pads],
                    [2500, 1, 2500, 2500, 2500, 2500],
                    "{client} {auto_inc} {table}"
                );
                assert!(
                    1 <= klo && klo < khi && khi <= 2500,
                    "{client} {auto_inc} {table}: k in [{klo}, {khi}]"
                );
                assert_eq!(index, 1, "{client} {auto_inc} {table}: the k index");
                assert_eq!(check, "OK", "{client} {auto_inc} {table}");
            }
            assert!(run("cleanup").status.success());
        }
    }
    drop_database(&db);
}

/// The `sql` templates of issue #14 item 18 written for MariaDB, on a harmless variable.
const SQL_MAX_CONNECT_ERRORS: &str = "sql = { apply = \"SET GLOBAL {{ name }} = {{ value }}\", read = \"SHOW GLOBAL VARIABLES LIKE '{{ name }}'\", column = \"Value\" }";

#[test]
fn sql_variant_applies_reads_back_and_restores_its_settings() {
    let _serial = serial();
    let Some(db) = database("sqlvar") else {
        return;
    };
    let _restore = RestoreGlobal::save("max_connect_errors");
    let before = global("max_connect_errors");
    assert_ne!(
        before, "4321",
        "the server must not start with the variant's value"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = variant_suite(
        dir.path(),
        &db,
        &format!("settings = {{ max_connect_errors = 4321 }}\n{SQL_MAX_CONNECT_ERRORS}"),
        2,
    );
    // `plan` shows the rendered statements; `validate` reads the setting.
    let plan = sbsuite().arg("plan").arg(&path).output().unwrap();
    let text = String::from_utf8_lossy(&plan.stdout);
    assert!(
        text.contains("max_connect_errors: read `SHOW GLOBAL VARIABLES LIKE 'max_connect_errors'`, apply `SET GLOBAL max_connect_errors = 4321`, restore `SET GLOBAL max_connect_errors = <original>`"),
        "{text}"
    );
    let out = sbsuite().arg("validate").arg(&path).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let (seen, out) = run_watching(&path, &dir.path().join("results"), "max_connect_errors");
    let after = global("max_connect_errors");
    drop_database(&db);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        seen.contains(&"4321".to_string()),
        "never saw the variant applied: {seen:?}"
    );
    assert_eq!(after, before, "the setting is restored after the variant");
    let run = run_dir(&dir.path().join("results"), "v");
    let relaxed = std::fs::read_to_string(run.join("server/relaxed.csv")).unwrap();
    assert!(relaxed.contains("\nmax_connect_errors,4321\n"), "{relaxed}");
    assert!(!run.join("server/restore-relaxed.json").exists());
    let rows = results(&dir.path().join("results"));
    assert!(rows.iter().all(|r| r["status"] == "ok"), "{rows:?}");
}

#[test]
fn sql_variant_whose_read_back_differs_fails_and_restores() {
    let _serial = serial();
    let Some(db) = database("sqlvarbad") else {
        return;
    };
    let _restore = RestoreGlobal::save("max_connect_errors");
    let before = global("max_connect_errors");
    let dir = tempfile::tempdir().unwrap();
    // MariaDB takes `0` for max_connect_errors as 1 (its minimum): the read-back differs.
    let path = variant_suite(
        dir.path(),
        &db,
        &format!("settings = {{ max_connect_errors = 0 }}\n{SQL_MAX_CONNECT_ERRORS}"),
        1,
    );
    let out = sbsuite()
        .arg("run")
        .arg(&path)
        .arg("--results-dir")
        .arg(dir.path().join("results"))
        .args(["--progress", "off"])
        .output()
        .unwrap();
    let after = global("max_connect_errors");
    drop_database(&db);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("after `SET GLOBAL max_connect_errors = 0` the server reports max_connect_errors = 1 instead of 0"),
        "{stderr}"
    );
    assert!(stderr.contains("check = false"), "{stderr}");
    assert_eq!(after, before, "the setting is put back at once");
    let rows = results(&dir.path().join("results"));
    let relaxed: Vec<_> = rows.iter().filter(|r| r["variant"] == "relaxed").collect();
    assert!(
        !relaxed.is_empty() && relaxed.iter().all(|r| r["status"] != "ok"),
        "the variant's runs fail: {rows:?}"
    );
    assert!(
        rows.iter()
            .any(|r| r["variant"] == "baseline" && r["status"] == "ok"),
        "{rows:?}"
    );
}
