//! The OLTP engine on embedded SQLite, with real database files in temporary directories:
//! exact row counts after prepare and after read_write, sysbench's statement mix, every
//! workload, the shared `:memory:` database, SQLITE_BUSY counted as an ignored error, the
//! default target of a suite without `[target]`, and clear errors.
//!
//! Most tests drive the built binary; the row-count and missing-data tests drive the plan and
//! the engine through the library, step by step, because a suite's cleanup follows its runs at
//! once and leaves no moment to look at the tables from outside.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::AtomicBool;

use sbsuite::engine;
use sbsuite::plan::{self, Plan, StepKind};

use crate::common;

use common::{report_count, results, sbsuite};

/// A suite file `s.toml` in `dir` with `target` (TOML lines, empty for none) and `defaults`.
fn write_suite(dir: &Path, target: &str, defaults: &str) -> std::path::PathBuf {
    let path = dir.join("s.toml");
    let target = if target.is_empty() {
        String::new()
    } else {
        format!("[target]\ndriver = \"sqlite\"\n{target}\n\n")
    };
    std::fs::write(
        &path,
        format!("[suite]\nname = \"t\"\n\n{target}[defaults]\n{defaults}\n"),
    )
    .unwrap();
    path
}

/// Runs `sbsuite run s.toml` with `dir` as the working directory; results under dir/results.
fn run_suite(dir: &Path, suite: &Path) -> (std::process::Output, String, String) {
    let out = sbsuite()
        .current_dir(dir)
        .arg("run")
        .arg(suite)
        .arg("--results-dir")
        .arg(dir.join("results"))
        .args(["--progress", "plain"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

fn num(row: &HashMap<String, String>, col: &str) -> u64 {
    row[col]
        .parse()
        .unwrap_or_else(|_| panic!("{col} = {:?} in {row:?}", row[col]))
}

fn plan_of(text: &str) -> Plan {
    let s = sbsuite::suite::load_text(Path::new("s.toml"), text, &[], &[])
        .unwrap_or_else(|e| panic!("{e}"));
    plan::build(&s).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs one plan step through the engine, as the runner does; the report text or the error.
fn step(s: &plan::Step) -> Result<(String, Option<sbsuite::engine::StepOutcome>), String> {
    let stop = AtomicBool::new(false);
    let mut out = Vec::new();
    let kind = match s.kind {
        StepKind::Run => engine::StepKind::Run(engine::RunRequest::default()),
        StepKind::Cleanup => engine::StepKind::Cleanup,
        _ => engine::StepKind::Prepare,
    };
    let spec = s
        .spec
        .ok_or_else(|| format!("`{}` has no engine", s.workload))?;
    let request = engine::StepRequest::new(spec, &s.options, kind).on(s.target.as_ref());
    let outcome = match engine::execute(request, &mut out, &mut (), &stop) {
        Ok(engine::Executed::Ran(o)) => Some(*o),
        Ok(engine::Executed::Done) => None,
        Err(e) => return Err(e.to_string()),
    };
    Ok((String::from_utf8_lossy(&out).into_owned(), outcome))
}

fn count(db: &Path, sql: &str) -> i64 {
    let c = rusqlite::Connection::open(db).unwrap();
    c.query_row(sql, [], |r| r.get(0)).unwrap()
}

#[test]
fn prepare_loads_exact_rows_and_read_write_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rows.db");
    let p = plan_of(&format!(
        "[suite]\nname = \"rows\"\n[target]\ndriver = \"sqlite\"\npath = {:?}\n[defaults]\nworkload = \"oltp_read_write\"\ntables = 3\ntable_size = 1234\nthreads = 2\nevents = 300\ntime = 0\nreport_interval = 0\n",
        db.to_str().unwrap()
    ));
    let kinds: Vec<StepKind> = p.steps.iter().map(|s| s.kind).collect();
    assert_eq!(kinds, [StepKind::Prepare, StepKind::Run, StepKind::Cleanup]);

    let (text, _) = step(&p.steps[0]).unwrap();
    assert!(
        text.contains("Inserting 1234 records into 'sbtest3'"),
        "{text}"
    );
    for n in 1..=3 {
        let t = format!("sbtest{n}");
        assert_eq!(count(&db, &format!("SELECT COUNT(*) FROM {t}")), 1234);
        assert_eq!(count(&db, &format!("SELECT MAX(id) FROM {t}")), 1234);
        assert_eq!(
            count(
                &db,
                &format!(
                    "SELECT COUNT(*) FROM sqlite_schema WHERE type = 'index' AND name = 'k_{n}' AND tbl_name = '{t}'"
                )
            ),
            1,
            "secondary index k_{n}"
        );
    }
    let mode: String = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");

    let (_, outcome) = step(&p.steps[1]).unwrap();
    let sql = outcome.unwrap().sql.unwrap();
    assert_eq!(sql.transactions, 300);
    assert!(sql.reads >= 300 * 14, "{sql:?}");
    for n in 1..=3 {
        assert_eq!(
            count(&db, &format!("SELECT COUNT(*) FROM sbtest{n}")),
            1234,
            "delete + insert of one id keeps the row count"
        );
    }

    let (text, _) = step(&p.steps[2]).unwrap();
    assert!(text.contains("Dropping table 'sbtest3'..."), "{text}");
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM sqlite_schema WHERE name LIKE 'sbtest%' OR name LIKE 'k\\_%' ESCAPE '\\'"
        ),
        0
    );
    assert!(db.exists(), "a path the user chose stays");
}

#[test]
fn read_write_mix_from_a_suite_without_target_uses_and_removes_sbtest_db() {
    let dir = tempfile::tempdir().unwrap();
    let suite = write_suite(
        dir.path(),
        "",
        "workload = \"oltp_read_write\"\ntables = 2\ntable_size = 1000\nthreads = 1\nevents = 100\ntime = 0\nreport_interval = 0",
    );
    let plan = sbsuite()
        .current_dir(dir.path())
        .arg("plan")
        .arg(&suite)
        .output()
        .unwrap();
    let plan = String::from_utf8_lossy(&plan.stdout);
    assert!(
        plan.contains("Target: sqlite sbtest.db (journal_mode wal, synchronous normal, busy_timeout 5000 ms), the default: the suite has no [target]"),
        "{plan}"
    );

    let (out, stdout, stderr) = run_suite(dir.path(), &suite);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // sysbench's oltp_read_write per event: 10 point selects + 4 ranges = 14 reads; index
    // update, non-index update, delete and insert = 4 writes; BEGIN and COMMIT = 2 other.
    assert!(
        stdout.contains(
            "SQL statistics:\n    queries performed:\n        read:                            1400\n        write:                           400\n        other:                           200\n        total:                           2000\n"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("    transactions:                        100    ("),
        "{stdout}"
    );
    assert_eq!(report_count(&stdout, "ignored errors:"), 0);
    let rows = results(&dir.path().join("results"));
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(r["status"], "ok", "{r:?}");
    assert_eq!(
        (num(r, "reads"), num(r, "writes"), num(r, "other")),
        (1400, 400, 200)
    );
    assert_eq!((num(r, "events"), num(r, "errors")), (100, 0));
    assert!(
        stdout.contains("Removed the empty default database file 'sbtest.db'"),
        "{stdout}"
    );
    for f in ["sbtest.db", "sbtest.db-wal", "sbtest.db-shm"] {
        assert!(!dir.path().join(f).exists(), "{f} is left");
    }
}

#[test]
fn every_oltp_workload_runs_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("all.toml");
    std::fs::write(
        &suite,
        "[suite]\nname = \"all\"\n[target]\ndriver = \"sqlite\"\npath = \"all.db\"\n[defaults]\ntables = 2\ntable_size = 500\nevents = 40\ntime = 0\nreport_interval = 0\n[matrix]\nworkload = [\"oltp_read_only\", \"oltp_read_write\", \"oltp_write_only\", \"oltp_point_select\", \"oltp_update_index\", \"oltp_update_non_index\", \"oltp_delete\", \"oltp_insert\", \"select_random_points\", \"select_random_ranges\", \"bulk_insert\"]\nthreads = [1, 2]\nsecondary = [false, true]\nexclude = [{ secondary = true, workload = [\"oltp_point_select\", \"oltp_update_index\", \"oltp_update_non_index\", \"oltp_delete\", \"select_random_points\", \"select_random_ranges\", \"bulk_insert\"] }]\n",
    )
    .unwrap();
    let (out, stdout, stderr) = run_suite(dir.path(), &suite);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let rows = results(&dir.path().join("results"));
    // 11 workloads × 2 threads, plus read_only, read_write, write_only and insert with
    // secondary = on (id without a primary key, ids sent by the client).
    assert_eq!(rows.len(), 22 + 8);
    for r in &rows {
        assert_eq!(r["status"], "ok", "{r:?}");
        assert_eq!(num(r, "events"), 40, "{r:?}");
        let queries = num(r, "reads") + num(r, "writes") + num(r, "other");
        match r["workload"].as_str() {
            "oltp_point_select" | "select_random_points" | "select_random_ranges" => {
                assert_eq!((num(r, "reads"), queries), (40, 40), "{r:?}");
            }
            "oltp_insert" => assert_eq!((num(r, "writes"), queries), (40, 40), "{r:?}"),
            "oltp_read_only" => assert_eq!(num(r, "reads"), 40 * 14, "{r:?}"),
            // One multi-row INSERT per worker at the end (40 rows fit in one).
            "bulk_insert" => {
                let flushes = num(r, "writes");
                assert!((1..=num(r, "threads")).contains(&flushes), "{r:?}");
            }
            _ => assert!(queries >= 40, "{r:?}"),
        }
    }
}

#[test]
fn memory_database_lives_from_prepare_to_cleanup() {
    let dir = tempfile::tempdir().unwrap();
    let suite = write_suite(
        dir.path(),
        "path = \":memory:\"",
        "tables = 2\ntable_size = 300\nthreads = 2\nevents = 50\ntime = 0\nreport_interval = 0\n\n[matrix]\nworkload = [\"oltp_read_write\", \"oltp_point_select\"]",
    );
    let (out, stdout, stderr) = run_suite(dir.path(), &suite);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("Inserting 300 records into 'sbtest2'"),
        "{stdout}"
    );
    assert!(stdout.contains("Dropping table 'sbtest2'..."), "{stdout}");
    let rows = results(&dir.path().join("results"));
    assert_eq!(rows.len(), 2);
    for r in &rows {
        assert_eq!(
            (r["status"].as_str(), num(r, "events")),
            ("ok", 50),
            "{r:?}"
        );
    }
    let files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "s.toml" && n != "results")
        .collect();
    assert!(files.is_empty(), "no database file for :memory:: {files:?}");
}

#[test]
fn contending_writers_make_progress() {
    let dir = tempfile::tempdir().unwrap();
    // busy_timeout = 0: a writer that finds the lock taken fails at once with SQLITE_BUSY,
    // which is counted and re-runs the event.
    let suite = write_suite(
        dir.path(),
        "path = \"busy.db\"\nbusy_timeout = 0",
        "tables = 1\ntable_size = 200\nthreads = 4\nevents = 400\ntime = 0\nreport_interval = 0\n\n[matrix]\nworkload = [\"oltp_write_only\", \"oltp_update_index\"]",
    );
    let (out, stdout, stderr) = run_suite(dir.path(), &suite);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let rows = results(&dir.path().join("results"));
    assert_eq!(rows.len(), 2);
    // Each SQLITE_BUSY re-run is counted: the errors column is the report's "ignored errors".
    let reported: Vec<u64> = stdout
        .lines()
        .filter_map(|l| l.trim().strip_prefix("ignored errors:"))
        .map(|rest| rest.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(reported.len(), 2, "{stdout}");
    for (r, reported) in rows.iter().zip(&reported) {
        assert_eq!(
            (r["status"].as_str(), num(r, "events")),
            ("ok", 400),
            "{r:?}"
        );
        assert_eq!(num(r, "errors"), *reported, "{r:?}\n{stdout}");
    }
    // Four writers without a busy timeout do contend: otherwise this test showed nothing.
    assert!(
        rows.iter().map(|r| num(r, "errors")).sum::<u64>() > 0,
        "no SQLITE_BUSY at all: {rows:?}"
    );
}

#[test]
fn a_held_write_lock_is_counted_as_sqlite_busy_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("lock.db");
    let suite = write_suite(
        dir.path(),
        "path = \"lock.db\"\nbusy_timeout = 10",
        "workload = \"oltp_write_only\"\ntables = 1\ntable_size = 200\nthreads = 2\ntime = 600\nreport_interval = 1",
    );
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("sbsuite"))
        .current_dir(dir.path())
        .arg("run")
        .arg(&suite)
        .arg("--results-dir")
        .arg(dir.path().join("results"))
        .args(["--progress", "plain"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    // Prepare has finished (its connection is closed) once the run step is announced.
    loop {
        let line = stderr.next().expect("sbsuite ended early").unwrap();
        if line.contains("step 2/3 run") {
            break;
        }
    }
    let holder = rusqlite::Connection::open(&db).unwrap();
    holder
        .busy_timeout(std::time::Duration::from_secs(60))
        .unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    // While the lock is held no event can finish: every attempt waits 10 ms and fails.
    let err_per_s = |line: &str| -> f64 {
        line.split("err/s: ")
            .nth(1)
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0)
    };
    let tps = |line: &str| -> f64 {
        line.split("tps: ")
            .nth(1)
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0)
    };
    let mut report = String::new();
    loop {
        let line = stdout.next().expect("sbsuite ended early").unwrap();
        report.push_str(&line);
        report.push('\n');
        if line.starts_with('[') && err_per_s(&line) > 0.0 {
            break;
        }
    }
    holder.execute_batch("COMMIT").unwrap();
    drop(holder);
    // Released: transactions go through again.
    loop {
        let line = stdout.next().expect("sbsuite ended early").unwrap();
        report.push_str(&line);
        report.push('\n');
        if line.starts_with('[') && tps(&line) > 0.0 {
            break;
        }
    }
    common::interrupt(child.id());
    for line in stdout {
        report.push_str(&line.unwrap());
        report.push('\n');
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{report}");
    assert!(report_count(&report, "ignored errors:") > 0, "{report}");
    assert!(report_count(&report, "transactions:") > 0, "{report}");
    assert!(
        report.contains("Dropping table 'sbtest1'..."),
        "cleanup ran: {report}"
    );
    let rows = results(&dir.path().join("results"));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["status"], "interrupted");
    assert!(num(&rows[0], "errors") > 0, "{:?}", rows[0]);
}

#[test]
fn bad_journal_mode_names_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let suite = write_suite(
        dir.path(),
        "path = \"x.db\"\njournal_mode = \"wall\"",
        "workload = \"oltp_read_only\"",
    );
    let (out, stdout, stderr) = run_suite(dir.path(), &suite);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("s.toml:7:16"), "{stderr}");
    assert!(
        stderr.contains(
            "[target] journal_mode = \"wall\" is not a SQLite journal_mode: use one of wal, delete"
        ),
        "{stderr}"
    );
    assert!(!dir.path().join("x.db").exists());
    assert!(!dir.path().join("results").exists());
}

#[test]
fn missing_file_or_tables_say_run_prepare_first() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("missing.db");
    let text = |workload: &str| {
        format!(
            "[suite]\nname = \"m\"\n[target]\ndriver = \"sqlite\"\npath = {:?}\n[defaults]\nworkload = \"{workload}\"\ntime = 1\n",
            db.to_str().unwrap()
        )
    };
    let p = plan_of(&text("oltp_read_only"));
    let run = &p.steps[1];
    assert_eq!(run.kind, StepKind::Run);
    let e = step(run).expect_err("no database file");
    assert!(
        e.contains("missing.db does not exist: run prepare first"),
        "{e}"
    );
    assert!(!db.exists(), "a run does not create the file");

    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE TABLE other(x INTEGER)")
        .unwrap();
    let e = step(run).expect_err("no table");
    assert!(
        e.contains("table 'sbtest1' does not exist in file") && e.contains("run prepare first"),
        "{e}"
    );
    let nodir = plan_of(&text("oltp_read_only").replace("missing.db", "no/such/dir/x.db"));
    let e = step(&nodir.steps[0]).expect_err("no directory");
    assert!(
        e.contains("SQLITE_CANTOPEN") && e.contains("check that its directory exists"),
        "{e}"
    );
    let bulk = plan_of(&text("bulk_insert"));
    let e = step(&bulk.steps[1]).expect_err("no table");
    assert!(e.contains("run prepare first"), "{e}");
}
