//! `sbsuite capacity` (#30): the highest arrival rate that meets a latency target, searched on
//! PostgreSQL with a transaction of known service time (one 10 ms `pg_sleep` on one thread:
//! about 90/s closed loop, and queueing in front of it once arrivals come faster).

use crate::common;

use common::db::admin_pg;
use common::{csv_rows, sbsuite};

fn suite(db: &str, extra: &str) -> String {
    format!(
        r#"[suite]
name = "nap"

[target]
driver = "pgsql"
hosts = ["127.0.0.1:5432"]
user = "postgres"
database = "{db}"

[defaults]
workload = "nap"
threads = 1
time = 4

[workloads.nap]
summary = "one 10 ms server-side sleep per transaction: a known service time"

[workloads.nap.transactions.nap]
weight = 1
steps = [{{ sql = "SELECT pg_sleep(0.01)" }}]
{extra}"#
    )
}

#[test]
fn issue_30_capacity_finds_the_highest_rate_under_a_latency_target() {
    common::server_lock::share();
    let db = "sbsuite_t_capacity";
    if admin_pg(&[
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ])
    .is_none()
    {
        common::skip("no PostgreSQL server accepts postgres@127.0.0.1:5432 (.ci/run starts one)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nap.toml");
    std::fs::write(&path, suite(db, "")).unwrap();
    let out = sbsuite()
        .arg("capacity")
        .arg(&path)
        .args([
            "--target",
            "p99<200ms",
            "--precision",
            "20",
            "--confirm",
            "2",
        ])
        .arg("--results-dir")
        .arg(dir.path().join("results"))
        .arg("--quiet")
        .output()
        .unwrap();
    admin_pg(&[format!("DROP DATABASE IF EXISTS {db}")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let rate: f64 = stdout
        .strip_prefix("capacity at p99 ≤ 200 ms: ")
        .and_then(|r| r.split_once("/s"))
        .map(|(r, _)| r.parse().unwrap())
        .unwrap_or_else(|| panic!("{stdout}\n{stderr}"));

    let rows = csv_rows(dir.path(), "capacity.csv");
    assert_eq!(rows[0]["phase"], "closed_loop", "{rows:?}");
    assert_eq!(rows[0]["offered_rate"], "");
    let closed: f64 = rows[0]["achieved_rate"].parse().unwrap();
    // One thread, 10 ms per transaction: well under 100/s, well over 20/s.
    assert!((20.0..100.0).contains(&closed), "{rows:?}");
    let num =
        |r: &std::collections::HashMap<String, String>, c: &str| -> f64 { r[c].parse().unwrap() };
    for r in &rows[1..] {
        // Each verdict follows from the row's own numbers by the documented rule.
        let offered = num(r, "offered_rate");
        let expected = offered * 4.0;
        let tolerance = (3.0 / expected.sqrt()).max(0.05);
        let passes = num(r, "lat_p99") <= 200.0
            && num(r, "dropped") == 0.0
            && num(r, "achieved_rate") >= offered * (1.0 - tolerance);
        assert_eq!(r["pass"], if passes { "yes" } else { "no" }, "{r:?}");
        // Every probe is a run at that rate, dropped arrivals recorded.
        let suite_text =
            std::fs::read_to_string(std::path::Path::new(&r["run_dir"]).join("suite.toml"))
                .unwrap();
        assert!(
            suite_text.contains(&format!("rate = {offered}")),
            "{suite_text}"
        );
        assert!(
            suite_text.contains("rate_overflow = \"record\""),
            "{suite_text}"
        );
    }
    // The rate found passed where it was measured, and is below the closed-loop bound.
    assert!(rate <= closed, "{stdout}");
    assert!(
        rows.iter()
            .any(|r| r["offered_rate"] == format!("{rate}") && r["pass"] == "yes"),
        "{rows:?}"
    );
    let confirms = rows.iter().filter(|r| r["phase"] == "confirm").count();
    assert!(confirms >= 2 && confirms % 2 == 0, "{rows:?}");
    assert!(stdout.contains(" repetitions passed at "), "{stdout}");
    assert!(
        stderr.contains("[capacity] closed_loop: offered max (closed loop)"),
        "{stderr}"
    );
    // The curve is drawn with the target and the rate found.
    let dir = common::run_dir(&dir.path().join("results"), "nap-capacity");
    let svg = std::fs::read_to_string(dir.join("capacity.svg")).unwrap();
    assert!(svg.starts_with("<?xml"), "{svg}");
    for label in [
        "p99 latency vs offered load".to_string(),
        "target: p99 ≤ 200 ms".to_string(),
        format!("capacity {rate}/s"),
    ] {
        assert!(svg.contains(&label), "{label} in {svg}");
    }
}

#[test]
fn capacity_refuses_what_it_cannot_search_before_running_anything() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            suite("test", "\n[matrix]\nthreads = [1, 2]\n"),
            vec!["--target", "p99<10ms"],
            "capacity searches one matrix point, the suite has 2",
        ),
        (
            suite("test", "\n[matrix]\nrate = [10, 20]\n"),
            vec!["--target", "p99<10ms"],
            "capacity varies `rate` itself: remove `rate` from [matrix]",
        ),
        (
            suite(
                "test",
                "\n[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\nset_global = { work_mem = \"8MB\" }\n",
            ),
            vec!["--target", "p99<10ms"],
            "the suite has 2 [[variant]]s",
        ),
        (
            suite("test", ""),
            vec!["--target", "p98<10ms"],
            "--target `p98<10ms`: write PERCENTILE<MS, e.g. `p99<10ms`",
        ),
        (
            suite("test", ""),
            vec!["--target", "p99<10ms", "--confirm", "0"],
            "--confirm must be at least 1",
        ),
    ];
    for (i, (text, args, message)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("case{i}.toml"));
        std::fs::write(&path, text).unwrap();
        let out = sbsuite()
            .arg("capacity")
            .arg(&path)
            .args(&args)
            .arg("--results-dir")
            .arg(dir.path().join("results"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "case {i}: {stderr}");
        assert!(stderr.contains(message), "case {i}: {stderr}");
        assert!(out.stdout.is_empty());
    }
    assert!(!dir.path().join("results").exists());
}
