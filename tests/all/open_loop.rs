//! Open-loop accounting (#30), on the real servers with transactions of a known service time
//! (a 10 ms server-side sleep, two threads: about 190 a second at most):
//!
//! - overloaded on purpose (400 arrivals/s on PostgreSQL), the response time (`lat_*`) is the
//!   schedule lag plus the service time: its p99 exceeds the service time's by the queueing
//!   delay, which grows for the whole step; under-loaded (40/s), the lag is small and the
//!   service time is the response time; without `rate` the open-loop columns stay empty;
//! - `latency_limit` (MariaDB, 400/s, 50 ms): arrivals later than the limit when taken are
//!   skipped, never reaching the server (each event inserts a row: the table holds exactly
//!   the events run), events run or skipped add up to the arrivals, none of those run waited
//!   longer than the limit, and `late` is what the stored latency histogram has above it.
//!
//! The step's database is the test's own (`sbsuite_t_openloop_*`), so the shared servers are
//! held shared, never alone.

use std::collections::HashMap;
use std::path::Path;

use crate::common;

use common::db::{admin_my, admin_pg};
use common::sbsuite;

/// A suite of `workload` (its TOML) on `target`, plus `extra` lines in `[defaults]`.
fn suite(name: &str, target: &str, extra: &str, steps: &str, matrix: &str) -> String {
    format!(
        r#"[suite]
name = "{name}"
rate_overflow = "record"
server_cost = false

{target}
[defaults]
workload = "nap"
threads = 2
time = 4
{extra}

[workloads.nap]
summary = "a 10 ms server-side sleep per transaction: a known service time"

[workloads.nap.transactions.nap]
weight = 1
steps = [{steps}]

[matrix]
{matrix}
"#
    )
}

/// Runs `text` and returns its stdout and its results.csv rows.
fn run(dir: &Path, name: &str, text: &str) -> (String, Vec<HashMap<String, String>>) {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    let out = sbsuite()
        .arg("run")
        .arg(&path)
        .args(["--progress", "plain", "--results-dir"])
        .arg(dir.join("results"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    (stdout, common::results(&dir.join("results")))
}

fn num(r: &HashMap<String, String>, c: &str) -> f64 {
    r[c].parse()
        .unwrap_or_else(|_| panic!("`{c}` is {:?}: {r:?}", r[c]))
}

#[test]
fn issue_30_an_overloaded_rate_shows_the_queueing_delay_between_response_and_service() {
    common::server_lock::share();
    let db = "sbsuite_t_openloop_pg";
    if admin_pg(&[
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ])
    .is_none()
    {
        common::skip("no PostgreSQL server accepts postgres@127.0.0.1:5432 (.ci/run starts one)");
        return;
    }
    let target = format!(
        "[target]\ndriver = \"pgsql\"\nhosts = [\"127.0.0.1:5432\"]\nuser = \"postgres\"\n\
         database = \"{db}\"\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let text = suite(
        "nap",
        &target,
        "",
        r#"{ sql = "SELECT pg_sleep(0.01)" }"#,
        "rate = [400, 40, 0]",
    );
    let (stdout, rows) = run(dir.path(), "nap", &text);
    admin_pg(&[format!("DROP DATABASE IF EXISTS {db}")]);
    assert_eq!(rows.len(), 3, "{rows:?}");
    let (over, under, closed) = (&rows[0], &rows[1], &rows[2]);

    // Overloaded: arrivals twice as fast as two threads serve them, for 4 s. The queue grows
    // the whole time, so the late events waited seconds; each took about 10 ms to serve.
    assert_eq!(over["rate"], "400");
    assert_eq!(num(over, "dropped"), 0.0, "{over:?}");
    let lag_p99 = num(over, "lag_p99");
    assert!(lag_p99 > 1000.0, "{over:?}");
    assert!(num(over, "lag_p50") > 100.0, "{over:?}");
    let service_p99 = num(over, "service_p99");
    let service_p50 = num(over, "service_p50");
    assert!((10.0..50.0).contains(&service_p50), "{over:?}");
    // Event by event response = lag + service: its p99 is at least the lag's, and exceeds
    // the service time's by about the queueing delay.
    let lat_p99 = num(over, "lat_p99");
    assert!(lat_p99 >= lag_p99, "{over:?}");
    assert!(lat_p99 - service_p99 >= 0.9 * lag_p99, "{over:?}");
    assert!(num(over, "lag_max") <= num(over, "lat_max"), "{over:?}");
    // No latency_limit: nothing late or skipped is counted.
    assert_eq!((over["late"].as_str(), over["skipped"].as_str()), ("", ""));

    // Under-loaded: an arrival finds a free thread (a fifth of the capacity asked for): the
    // lag is small and the service time is the response time. The shared server also serves
    // the other tests running at the same time: a CI run saw 10 ms sleeps take up to 283 ms
    // there, and arrivals wait behind such a one (lag p95 107 ms, median 2.9 ms), so the
    // bounds are the median's and a tenth of the overloaded lag.
    assert_eq!(under["rate"], "40");
    assert!(
        num(under, "lag_p50") < 5.0 && num(under, "lag_p95") < 0.1 * num(over, "lag_p95"),
        "{under:?}"
    );
    assert!(
        (num(under, "lat_p50") - num(under, "service_p50")).abs() < 10.0,
        "{under:?}"
    );
    assert!(num(under, "service_p50") >= 10.0, "{under:?}");

    // Without `rate` there is no schedule: the columns are empty.
    assert_eq!(closed["rate"], "0");
    for c in [
        "service_p50",
        "service_max",
        "lag_p99",
        "lag_max",
        "dropped",
    ] {
        assert_eq!(closed[c], "", "{c}: {closed:?}");
    }

    // The report after sysbench's block, for the rate runs only.
    assert_eq!(stdout.matches("Open-loop timing (").count(), 2, "{stdout}");
    assert_eq!(
        stdout.matches("    schedule lag (ms):").count(),
        2,
        "{stdout}"
    );
    assert!(!stdout.contains("latency limit"), "{stdout}");
}

#[test]
fn issue_30_latency_limit_skips_what_is_already_late_and_counts_what_ends_late() {
    common::server_lock::share();
    let db = "sbsuite_t_openloop_my";
    if admin_my(&[
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
        format!("CREATE TABLE {db}.hits (id BIGINT AUTO_INCREMENT PRIMARY KEY)"),
    ])
    .is_none()
    {
        common::skip("no MySQL/MariaDB server accepts root@127.0.0.1:3306 (.ci/run starts one)");
        return;
    }
    let target = format!(
        "[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:3306\"]\nuser = \"root\"\n\
         database = \"{db}\"\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let text = suite(
        "limit",
        &target,
        "latency_limit = 50",
        r#"{ sql = "INSERT INTO hits VALUES ()" }, { sql = "SELECT SLEEP(0.01)" }"#,
        "rate = [400]",
    );
    let (stdout, rows) = run(dir.path(), "limit", &text);
    let count = common::db::rt().block_on(async {
        use mysql_async::prelude::Queryable;
        let mut c = mysql_async::Conn::new(common::db::my_opts(Some(db)))
            .await
            .unwrap();
        let n: Option<u64> = c.query_first("SELECT COUNT(*) FROM hits").await.unwrap();
        let _ = c.disconnect().await;
        n.unwrap()
    });
    admin_my(&[format!("DROP DATABASE IF EXISTS {db}")]);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let r = &rows[0];
    let events = num(r, "events") as u64;
    let (late, skipped) = (num(r, "late") as u64, num(r, "skipped") as u64);

    // The server ran exactly the events counted: the skipped ones never reached it.
    assert_eq!(count, events, "rows in hits vs {r:?}");
    assert!(skipped > 0 && late > 0 && late <= events, "{r:?}");
    // Run, skipped or (none here) dropped, every arrival of the 4 s is accounted for: about
    // 1600 (a Poisson count: ±3σ is ±120), less the few still queued at the end.
    let taken = events + skipped + num(r, "dropped") as u64;
    assert!((1400..=1750).contains(&taken), "{taken}: {r:?}");
    // None of the events run had waited longer than the limit when a thread took it.
    assert!(num(r, "lag_max") <= 50.0, "{r:?}");

    // `late` counts the events whose response time exceeded the limit: what the step's
    // stored latency histogram holds above 50 ms (to its 3 significant digits).
    let run_dir = common::run_dir(&dir.path().join("results"), "limit");
    let hdr = std::fs::read_dir(run_dir.join("histograms"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "hdr"))
        .expect("the step's histogram");
    let h = sbsuite::results::read_histogram(&hdr).unwrap();
    assert_eq!(h.len(), events);
    let above = |ms: f64| h.len() - h.count_between(0, (ms * 1e6) as u64);
    assert!(
        (above(50.05)..=above(49.95)).contains(&late),
        "{late} late; the histogram has {} above 50 ms",
        above(50.0)
    );

    let pct = |n: u64, of: u64| 100.0 * n as f64 / of as f64;
    for line in [
        format!(
            "number of transactions skipped: {skipped} ({:.3}%)\n",
            pct(skipped, events + skipped)
        ),
        format!(
            "number of transactions above the 50.0 ms latency limit: {late}/{events} ({:.3}%)\n",
            pct(late, events)
        ),
    ] {
        assert!(stdout.contains(&line), "{line}\n{stdout}");
    }
}
