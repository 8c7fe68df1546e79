//! The OLTP engine against the real local MySQL/MariaDB server (never a mock): the statement
//! mix the server counts, the SQL statistics and CSV columns, data left intact by read_write,
//! and clear failures for a wrong password or a missing database.
//!
//! Each test uses its own database `sbsuite_t_<name>` (created and dropped here) so tests can
//! run in parallel. Without a reachable server at 127.0.0.1:3306 (user root, empty password)
//! the tests print why and pass, unless `CI` is set: then they fail.

use std::collections::HashMap;
use std::path::Path;

use mysql_async::prelude::Queryable;

mod common;

use common::sbsuite;

const HOST: &str = "127.0.0.1";
const PORT: u16 = 3306;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn opts(db: Option<&str>) -> mysql_async::OptsBuilder {
    mysql_async::OptsBuilder::default()
        .ip_or_hostname(HOST)
        .tcp_port(PORT)
        .user(Some("root"))
        .db_name(db)
}

/// Runs `sql` statements on a fresh admin connection; `None` when the server is unreachable.
fn admin(sql: &[String]) -> Option<()> {
    rt().block_on(async {
        let mut c = mysql_async::Conn::new(opts(None)).await.ok()?;
        for s in sql {
            c.query_drop(s).await.ok()?;
        }
        let _ = c.disconnect().await;
        Some(())
    })
}

/// Serialises the tests of this file: they read the server's global counters.
static SERVER: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERVER.lock().unwrap_or_else(|p| p.into_inner())
}

/// A fresh database for one test, or `None` (after saying why) when no server runs locally.
fn database(name: &str) -> Option<String> {
    let db = format!("sbsuite_t_{name}");
    let ok = admin(&[
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ]);
    if ok.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but no MySQL/MariaDB server accepts root@{HOST}:{PORT}: .ci/run starts one"
        );
        eprintln!("skipped: no MySQL/MariaDB server accepts root@{HOST}:{PORT}");
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
    let path = dir.join("suite.toml");
    std::fs::write(
        &path,
        format!(
            "[suite]\nname = \"t\"\n\n[target]\ndriver = \"mysql\"\nhosts = [\"{HOST}:{PORT}\"]\nuser = \"root\"\ndatabase = \"{db}\"\n{target_extra}\n\n[defaults]\n{defaults}\n"
        ),
    )
    .unwrap();
    path
}

/// Every row of every results.csv under `root`, as column → value.
fn results(root: &Path) -> Vec<HashMap<String, String>> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.ends_with("results.csv") {
                let mut r = csv::Reader::from_path(&p).unwrap();
                let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
                for rec in r.records() {
                    let rec = rec.unwrap();
                    out.push(
                        header
                            .iter()
                            .cloned()
                            .zip(rec.iter().map(str::to_string))
                            .collect(),
                    );
                }
            }
        }
    }
    out
}

fn all_files_text(root: &Path) -> String {
    let mut text = String::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                text.push_str(&String::from_utf8_lossy(&std::fs::read(&p).unwrap()));
            }
        }
    }
    text
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
    // the three-thread test below allows for those); prepare adds one INSERT per table.
    assert_eq!(d["Com_update"], 200, "{d:?}");
    assert_eq!(d["Com_delete"], 100, "{d:?}");
    assert_eq!(d["Com_insert"], 100 + 2, "{d:?}");
    assert_eq!(d["Com_begin"], 100, "{d:?}");
    assert_eq!(d["Com_commit"], 100, "{d:?}");
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
    if results_dir.exists() {
        assert!(!all_files_text(&results_dir).contains(secret));
        for r in results(&results_dir) {
            assert_ne!(r["status"], "ok", "{r:?}");
            assert_eq!(r["tps"], "", "no measurements in a failed row: {r:?}");
        }
    }
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
    let e = String::from_utf8_lossy(&nodb.stderr);
    assert!(
        e.contains("Unknown database") && e.contains("sbsuite_t_does_not_exist"),
        "{e}"
    );
    assert!(!empty.status.success());
    let e = String::from_utf8_lossy(&empty.stderr);
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
            "--time=3".into(),
            action.into(),
        ]
    };
    let prep = sbsuite().args(args("prepare")).output().unwrap();
    assert!(prep.status.success(), "{prep:?}");
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("sbsuite"))
        .args(args("run"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let killed = rt().block_on(async {
        let mut c = mysql_async::Conn::new(opts(None)).await.unwrap();
        let me: u64 = c
            .query_first("SELECT CONNECTION_ID()")
            .await
            .unwrap()
            .unwrap();
        let ids: Vec<u64> = c
            .query(format!(
                "SELECT id FROM information_schema.processlist WHERE db = '{db}' AND id <> {me}"
            ))
            .await
            .unwrap();
        for id in &ids {
            let _ = c.query_drop(format!("KILL {id}")).await;
        }
        let _ = c.disconnect().await;
        ids.len()
    });
    let out = child.wait_with_output().unwrap();
    drop_database(&db);
    let stdout = String::from_utf8_lossy(&out.stdout);
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
    let count = rows(&db, "sbtest1") + rows(&db, "sbtest2");
    let cleanup = line("cleanup");
    drop_database(&db);
    assert!(prep.status.success(), "{prep:?}");
    assert!(run.status.success(), "{run:?}");
    assert!(cleanup.status.success(), "{cleanup:?}");
    assert_eq!(count, 50_000, "every event is one row");
    let stdout = String::from_utf8_lossy(&run.stdout);
    // 25,000 rows of ~14 bytes per thread fit one 512 KiB statement: one flush each at the end.
    assert!(
        stdout.contains("        write:                           2\n"),
        "{stdout}"
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
    assert!(rows.iter().all(|r| r["status"] == "failed"), "{rows:?}");
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
    let e = String::from_utf8_lossy(&bogus.stderr);
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
