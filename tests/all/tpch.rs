//! The built-in `tpch` workload (`suites/tpch.toml`) run for real: the same SF 0.01 data on
//! SQLite, MariaDB and PostgreSQL gives the same answers to all 22 queries with the spec's
//! validation parameters (a cross-database oracle: three engines, three planners, one
//! generator), a full test yields the spec's metrics and per-query rows, and the step's time
//! limit ends a test that does not finish as an interrupted step.
//!
//! Each prepare loads about 87,000 rows, so every database is prepared once per test; the
//! servers' parts skip when no server runs locally.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::common;

/// One TPC-H run at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn suite() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("suites/tpch.toml")
}

/// Runs suites/tpch.toml in `dir` with `sets`; returns whether it succeeded, and its stdout
/// and stderr.
fn run(dir: &Path, sets: &[String]) -> (bool, String) {
    let mut cmd = common::sbsuite_process();
    cmd.current_dir(dir)
        .arg("run")
        .arg(suite())
        .arg("--results-dir")
        .arg(dir.join("results"))
        .args(["--progress", "plain"]);
    for s in sets {
        cmd.arg("--set").arg(s);
    }
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The power test with the validation parameters, its answers written to `dir/answers`.
fn validation_sets(dir: &Path) -> Vec<String> {
    vec![
        "tpch_test=power".into(),
        "tpch_params=validation".into(),
        format!("tpch_answers={}", dir.join("answers").display()),
        "matrix.threads=[1]".into(),
    ]
}

/// The answers a run wrote: query number → (header, rows).
type Answers = HashMap<u8, (Vec<String>, Vec<Vec<String>>)>;

fn answers(dir: &Path) -> Answers {
    (1..=22u8)
        .map(|n| {
            let path = dir.join("answers").join(format!("q{n:02}.tsv"));
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let mut lines = text.lines();
            let header = lines
                .next()
                .unwrap_or_default()
                .split('\t')
                .map(|c| c.to_ascii_lowercase())
                .collect();
            let rows = lines
                .map(|l| l.split('\t').map(|v| v.trim().to_string()).collect())
                .collect();
            (n, (header, rows))
        })
        .collect()
}

/// Two values of an answer agree: the same text (CHAR columns trimmed), or numbers within
/// what separates exact decimals (MySQL rounds averages to 6 decimals) from SQLite's doubles.
fn same(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => {
            let d = (x - y).abs();
            d <= 1e-6 || d <= 1e-6 * x.abs().max(y.abs())
        }
        _ => false,
    }
}

/// Every difference between two databases' answers, described.
fn differences(name_a: &str, a: &Answers, name_b: &str, b: &Answers) -> Vec<String> {
    let mut out = Vec::new();
    for n in 1..=22u8 {
        let (ha, ra) = &a[&n];
        let (hb, rb) = &b[&n];
        if ha != hb {
            out.push(format!(
                "Q{n}: columns {ha:?} ({name_a}) vs {hb:?} ({name_b})"
            ));
        }
        if ra.len() != rb.len() {
            out.push(format!(
                "Q{n}: {} rows ({name_a}) vs {} rows ({name_b})",
                ra.len(),
                rb.len()
            ));
            continue;
        }
        for (i, (x, y)) in ra.iter().zip(rb).enumerate() {
            if x.len() != y.len() || !x.iter().zip(y).all(|(p, q)| same(p, q)) {
                out.push(format!(
                    "Q{n} row {}: {x:?} ({name_a}) vs {y:?} ({name_b})",
                    i + 1
                ));
                break;
            }
        }
    }
    out
}

/// The step's row, and checks common to every passing validation run.
fn assert_validated(ok: bool, out: &str, dir: &Path) -> Answers {
    assert!(ok, "{out}");
    let rows = common::results(&dir.join("results"));
    let step = rows
        .iter()
        .find(|r| r["workload"] == "tpch" && !r["tpch_power"].is_empty());
    let step = step.unwrap_or_else(|| panic!("no tpch row with tpch_power: {rows:?}"));
    assert_eq!(step["status"], "ok", "{step:?}");
    assert!(step["tpch_geomean_s"].parse::<f64>().unwrap() > 0.0);
    // The power test without refresh functions: 22 queries, each one event and one row.
    assert_eq!(step["events"], "22", "{step:?}");
    let txns = common::csv_rows(&dir.join("results"), "transactions.csv");
    for n in 1..=22 {
        let name = format!("power.Q{n}");
        let t = txns.iter().find(|t| t["transaction"] == name);
        let t = t.unwrap_or_else(|| panic!("no {name} in {txns:?}"));
        assert_eq!(t["count"], "1", "{t:?}");
        assert!(!t["lat_avg_ms"].is_empty(), "{t:?}");
    }
    // Some queries have rows at SF 0.01 (Q1's four groups, Q16's hundreds).
    let a = answers(dir);
    assert_eq!(a[&1].1.len(), 4, "{:?}", a[&1]);
    assert!(a[&16].1.len() > 100, "{:?}", a[&16].1.len());
    a
}

#[test]
fn the_22_queries_give_the_same_answers_on_sqlite_mariadb_and_postgresql() {
    let _serial = serial();
    let lite = tempfile::tempdir().unwrap();
    let (ok, out) = run(lite.path(), &validation_sets(lite.path()));
    let lite_answers = assert_validated(ok, &out, lite.path());
    // Prepare and cleanup ran: the default SQLite file is gone again.
    assert!(out.contains("Loaded 86805 rows"), "{out}");
    assert!(!lite.path().join("sbtest.db").exists());

    let db = "sbsuite_t_tpch";
    let mut compared = vec![("sqlite", lite_answers)];
    let my_fresh = [
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ];
    if common::db::admin_my(&my_fresh).is_some() {
        let dir = tempfile::tempdir().unwrap();
        let mut sets = validation_sets(dir.path());
        sets.extend([
            "target.driver=mysql".to_string(),
            "target.hosts=[\"127.0.0.1:3306\"]".to_string(),
            "target.user=root".to_string(),
            format!("target.database={db}"),
        ]);
        let (ok, out) = run(dir.path(), &sets);
        compared.push(("mariadb", assert_validated(ok, &out, dir.path())));
        common::db::admin_my(&[format!("DROP DATABASE IF EXISTS {db}")]);
    } else {
        common::skip("no MySQL/MariaDB server accepts root@127.0.0.1:3306 (.ci/run starts one)");
    }
    let drop = format!("DROP DATABASE IF EXISTS {db}");
    if common::db::admin_pg(&[drop.clone(), format!("CREATE DATABASE {db}")]).is_some() {
        let dir = tempfile::tempdir().unwrap();
        let mut sets = validation_sets(dir.path());
        sets.extend([
            "target.driver=pgsql".to_string(),
            "target.hosts=[\"127.0.0.1:5432\"]".to_string(),
            "target.user=postgres".to_string(),
            format!("target.database={db}"),
        ]);
        let (ok, out) = run(dir.path(), &sets);
        compared.push(("postgresql", assert_validated(ok, &out, dir.path())));
        common::db::admin_pg(&[drop]);
    } else {
        common::skip("no PostgreSQL server accepts postgres@127.0.0.1:5432 (.ci/run starts one)");
    }
    let (first, reference) = &compared[0];
    let mut diffs = Vec::new();
    for (name, a) in &compared[1..] {
        diffs.extend(differences(first, reference, name, a));
    }
    assert!(diffs.is_empty(), "answers differ:\n{}", diffs.join("\n"));
}

/// The shipped suite as it is (random parameters, power then throughput with 2 streams and
/// the refresh functions) yields the spec's metrics, and the refresh functions leave the data
/// as they found it.
#[test]
fn the_full_test_reports_power_throughput_and_qphh() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let (ok, out) = run(dir.path(), &[]);
    assert!(ok, "{out}");
    let rows = common::results(&dir.path().join("results"));
    let step = rows
        .iter()
        .find(|r| r["workload"] == "tpch")
        .expect("a row");
    assert_eq!(step["status"], "ok", "{step:?}");
    let v = |c: &str| {
        step[c]
            .parse::<f64>()
            .unwrap_or_else(|_| panic!("{c}: {step:?}"))
    };
    let (power, throughput, qphh) = (v("tpch_power"), v("tpch_throughput"), v("tpch_qphh"));
    assert!(power > 0.0 && throughput > 0.0, "{step:?}");
    assert!(
        (qphh - (power * throughput).sqrt()).abs() <= 1e-3 * qphh,
        "{step:?}"
    );
    // 24 events of the power test, 2 × 22 queries of the throughput test (the refresh
    // stream's functions are timed, not events).
    assert_eq!(step["events"], "68", "{step:?}");
    let txns = common::csv_rows(&dir.path().join("results"), "transactions.csv");
    let count = |name: &str| {
        txns.iter()
            .find(|t| t["transaction"] == name)
            .map(|t| t["count"].clone())
            .unwrap_or_else(|| panic!("no {name}: {txns:?}"))
    };
    assert_eq!(count("power.RF1"), "1");
    assert_eq!(count("power.Q22"), "1");
    assert_eq!(count("throughput.Q9"), "2");
    assert_eq!(count("throughput.RF2"), "2");
    for label in ["Power@Size:", "Throughput@Size:", "QphH@Size:"] {
        assert!(out.contains(label), "{label}\n{out}");
    }
}

/// `time` is the step's timeout: a test that does not finish in it is an interrupted step
/// that says why, keeps what finished, and has no metric of a test it did not finish.
#[test]
fn a_test_cut_by_its_time_limit_is_interrupted_and_says_why() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    // The full test with 4 streams takes a few seconds at SF 0.01.
    let (ok, out) = run(dir.path(), &["time=1".into(), "matrix.threads=[4]".into()]);
    assert!(!ok, "{out}");
    let rows = common::results(&dir.path().join("results"));
    let step = rows
        .iter()
        .find(|r| r["workload"] == "tpch")
        .expect("a row");
    assert_eq!(step["status"], "interrupted", "{step:?}");
    assert!(
        step["error"].contains("time limit (1 s)") && step["error"].contains("raise `time`"),
        "{step:?}"
    );
    assert!(step["tpch_qphh"].is_empty(), "{step:?}");
}

/// Rows an interrupted run's RF1 left behind (here: one order and its line items at the first
/// key of refresh set 0, written by hand) are deleted before the next run, whose RF1 then
/// inserts the same keys without a duplicate-key error, and whose RF2 leaves the data as
/// prepare made it — read back from MariaDB.
#[test]
fn rf1_leftovers_are_cleared_before_a_run_and_refreshes_leave_the_data_as_it_was() {
    let _serial = serial();
    let db = "sbsuite_t_tpch_rf";
    if common::suite_db::Db::My.fresh(db).is_none() {
        return;
    }
    let sysbench = |command: &str, extra: &[&str]| {
        let out = common::sbsuite_process()
            .args([
                "sysbench",
                "tpch",
                "--mysql-host=127.0.0.1",
                "--mysql-user=root",
                &format!("--mysql-db={db}"),
                "--scale=0.01",
            ])
            .args(extra)
            .arg(command)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{command}: {text}");
        text
    };
    sysbench("prepare", &[]);
    // Order 1 copied to key 9: the first key of refresh set 0 (dbgen's keys 32·i + j, j < 8,
    // moved by 8), as an RF1 cut before its RF2 leaves it.
    common::db::admin_my(&[
        format!("USE {db}"),
        "INSERT INTO orders SELECT o_orderkey + 8, o_custkey, o_orderstatus, o_totalprice, \
         o_orderdate, o_orderpriority, o_clerk, o_shippriority, o_comment FROM orders \
         WHERE o_orderkey = 1"
            .into(),
        "INSERT INTO lineitem SELECT l_orderkey + 8, l_partkey, l_suppkey, l_linenumber, \
         l_quantity, l_extendedprice, l_discount, l_tax, l_returnflag, l_linestatus, \
         l_shipdate, l_commitdate, l_receiptdate, l_shipinstruct, l_shipmode, l_comment \
         FROM lineitem WHERE l_orderkey = 1"
            .into(),
    ])
    .expect("the leftover rows went in");
    let out = sysbench("run", &["--tpch-test=power", "--time=0"]);
    assert!(out.contains("Power@Size:"), "{out}");
    let counts = mysql_counts(db);
    assert_eq!(
        counts,
        (15_000, 60_175, 0),
        "orders, lineitems, rows at key 9"
    );
    sysbench("cleanup", &[]);
    common::db::admin_my(&[format!("DROP DATABASE IF EXISTS {db}")]);
}

/// Orders, line items, and orders at key 9 in MariaDB's database `db`.
fn mysql_counts(db: &str) -> (i64, i64, i64) {
    use mysql_async::prelude::Queryable;
    common::db::rt().block_on(async {
        let mut c = mysql_async::Conn::new(common::db::my_opts(Some(db)))
            .await
            .unwrap();
        let orders: Option<i64> = c.query_first("SELECT COUNT(*) FROM orders").await.unwrap();
        let items: Option<i64> = c
            .query_first("SELECT COUNT(*) FROM lineitem")
            .await
            .unwrap();
        let nine: Option<i64> = c
            .query_first("SELECT COUNT(*) FROM orders WHERE o_orderkey = 9")
            .await
            .unwrap();
        let _ = c.disconnect().await;
        (orders.unwrap(), items.unwrap(), nine.unwrap())
    })
}

/// The step's time limit cancels the query in flight on the server, not only in the client:
/// once the power test has started, another session locks lineitem, so the stream's next query
/// on it waits for the lock in a PostgreSQL backend; at `time` the run ends, and no backend of
/// the run is left waiting (PostgreSQL does not notice a client that went away while it waits
/// for a lock, so only the cancel request ends that wait).
#[test]
fn the_time_limit_cancels_the_query_in_flight_on_the_server() {
    let _serial = serial();
    let db = "sbsuite_t_tpch_cancel";
    let drop = format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)");
    if common::db::admin_pg(&[drop.clone(), format!("CREATE DATABASE {db}")]).is_none() {
        common::skip("no PostgreSQL server accepts postgres@127.0.0.1:5432 (.ci/run starts one)");
        return;
    }
    let sysbench = |command: &str, extra: &[&str]| {
        common::sbsuite_process()
            .args([
                "sysbench",
                "tpch",
                "--db-driver=pgsql",
                "--pgsql-host=127.0.0.1",
                "--pgsql-user=postgres",
                &format!("--pgsql-db={db}"),
                "--scale=0.01",
            ])
            .args(extra)
            .arg(command)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    assert!(sysbench("prepare", &[]).wait().unwrap().success());
    let rt = common::db::rt();
    let waiting = || {
        rt.block_on(async {
            let c = common::db::pg_client("postgres").await.unwrap();
            let row = c
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 \
                     AND wait_event_type = 'Lock'",
                    &[&db],
                )
                .await
                .unwrap();
            row.get::<_, i64>(0)
        })
    };
    let started = std::time::Instant::now();
    let mut run = sysbench(
        "run",
        &["--tpch-test=power", "--tpch-params=validation", "--time=3"],
    );
    let mut seen = common::read_until_started(&mut run, 1);
    let holder = rt.block_on(async {
        let c = common::db::pg_client(db).await.unwrap();
        c.batch_execute("BEGIN; LOCK TABLE lineitem IN ACCESS EXCLUSIVE MODE")
            .await
            .unwrap();
        c
    });
    std::thread::sleep(std::time::Duration::from_millis(1000));
    assert_eq!(waiting(), 1, "a query of the stream waits for the lock");
    let out = run.wait_with_output().unwrap();
    seen.extend(out.stdout);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&seen),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(started.elapsed().as_secs() < 30, "{text}");
    assert!(
        text.contains("power test:                     not finished"),
        "{text}"
    );
    // The run's backend no longer waits, while the lock is still held.
    assert_eq!(waiting(), 0, "{text}");
    rt.block_on(async { holder.batch_execute("ROLLBACK").await.unwrap() });
    common::db::admin_pg(&[drop]);
}
