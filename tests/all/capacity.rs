//! `sbsuite capacity` (#30): the highest arrival rate that meets a latency target, searched on
//! PostgreSQL with a transaction of known service time (one 10 ms `pg_sleep` on one thread:
//! about 90/s closed loop, and queueing in front of it once arrivals come faster); the same
//! search from a suite's `[capacity]` section through `sbsuite run`, drawn by `sbsuite report`;
//! and the section's mistakes refused by `validate`, `plan` and `run` before anything runs.

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

/// The rate of the answer `capacity at p99 ≤ 200 ms: R/s …` on stdout.
fn rate_found(stdout: &str, stderr: &str) -> f64 {
    stdout
        .strip_prefix("capacity at p99 ≤ 200 ms: ")
        .and_then(|r| r.split_once("/s"))
        .map(|(r, _)| r.parse().unwrap())
        .unwrap_or_else(|| panic!("{stdout}\n{stderr}"))
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
    let rate = rate_found(&stdout, &stderr);

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
        assert_eq!(r["target"], "p99<200ms");
        let expected = offered * num(r, "seconds");
        assert!((3.9..5.0).contains(&num(r, "seconds")), "{r:?}");
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
        (
            suite("test", ""),
            vec!["--target", "p99<10ms", "--min-rate", "0"],
            "--min-rate must be above 0 (per second), not 0",
        ),
        (
            suite("test", ""),
            vec![],
            "no latency target: give --target \"p99<10ms\" or a [capacity] section",
        ),
        (
            suite("test", "\n[capacity]\ntarget = \"p99<10ms\"\nconfirm = 0\n"),
            vec![],
            "capacity.confirm must be between 1 and 10000, not 0",
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

/// Creates the test's own PostgreSQL database; `None` (a recorded skip) without a server.
fn database(db: &str) -> Option<()> {
    let made = admin_pg(&[
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ]);
    if made.is_none() {
        common::skip("no PostgreSQL server accepts postgres@127.0.0.1:5432 (.ci/run starts one)");
    }
    made.map(drop)
}

/// A suite with `[capacity]` is searched by `sbsuite run` into its run directory, which
/// `sbsuite report` draws; `sbsuite capacity` takes the section's keys as its defaults, its
/// options winning.
#[test]
fn issue_30_a_capacity_section_makes_run_search_into_its_run_directory() {
    common::server_lock::share();
    let db = "sbsuite_t_capacity_run";
    if database(db).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nap.toml");
    let section = "\n[capacity]\ntarget = \"p99<200ms\"\nprecision = 20\nconfirm = 2\n";
    std::fs::write(&path, suite(db, section)).unwrap();
    let root = dir.path().join("results");
    let out = sbsuite()
        .arg("run")
        .arg(&path)
        .arg("--results-dir")
        .arg(&root)
        .arg("--quiet")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let rate = rate_found(&stdout, &stderr);
    assert!(stderr.contains("[capacity] closed_loop: "), "{stderr}");

    // The run directory is the suite's own: the curve, the answer, the chart, the suite, and
    // a run directory per probe inside it, whose suite has no [capacity] (a run at one rate).
    let run = common::run_dir(&root, "nap");
    assert_eq!(
        std::fs::read_to_string(run.join("capacity.txt")).unwrap(),
        stdout
    );
    assert!(run.join("capacity.svg").is_file());
    let stored = std::fs::read_to_string(run.join("suite.toml")).unwrap();
    assert!(
        stored.contains("[capacity]\ntarget = \"p99<200ms\""),
        "{stored}"
    );
    let rows = csv_rows(&run, "capacity.csv");
    assert_eq!(rows[0]["phase"], "closed_loop", "{rows:?}");
    let confirms = rows.iter().filter(|r| r["phase"] == "confirm").count();
    assert!(confirms >= 2 && confirms % 2 == 0, "{rows:?}");
    for r in &rows {
        assert_eq!(r["target"], "p99<200ms");
        let probe = std::path::Path::new(&r["run_dir"]);
        assert!(probe.starts_with(&run), "{probe:?} outside {run:?}");
        let text = std::fs::read_to_string(probe.join("suite.toml")).unwrap();
        assert!(!text.contains("[capacity]"), "{text}");
    }
    assert!(
        rows.iter()
            .any(|r| r["offered_rate"] == format!("{rate}") && r["pass"] == "yes"),
        "{rows:?}"
    );

    // The report of the run directory is the search's page: the answer, both charts with
    // the target and the rate found, a row per probe repetition.
    let out = sbsuite().arg("report").arg(&run).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    for text in [
        "<title>p99 latency vs offered load</title>".to_string(),
        "<title>Achieved vs offered rate</title>".to_string(),
        "target: p99 ≤ 200 ms".to_string(),
        format!("capacity at p99 ≤ 200 ms: {rate}/s"),
        format!("capacity {rate}/s ("),
    ] {
        assert!(html.contains(&text), "{text} not in the page");
    }
    assert_eq!(html.matches("<td>confirm</td>").count(), confirms);

    // `sbsuite capacity` reads the section: its target, and --confirm over its `confirm`.
    // A target every rate meets: the closed loop, its rate, one confirmation.
    std::fs::write(
        &path,
        suite(db, "\n[capacity]\ntarget = \"p99<5000ms\"\nconfirm = 2\n"),
    )
    .unwrap();
    let out = sbsuite()
        .arg("capacity")
        .arg(&path)
        .args(["--confirm", "1", "--set", "time=1", "--results-dir"])
        .arg(&root)
        .arg("--quiet")
        .output()
        .unwrap();
    admin_pg(&[format!("DROP DATABASE IF EXISTS {db}")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.starts_with("capacity at p99 ≤ 5000 ms: "),
        "{stdout}"
    );
    let rows = csv_rows(&common::run_dir(&root, "nap-capacity"), "capacity.csv");
    let phases: Vec<&str> = rows.iter().map(|r| r["phase"].as_str()).collect();
    assert_eq!(phases, ["closed_loop", "bracket", "confirm"], "{rows:?}");
    assert!(rows.iter().all(|r| r["target"] == "p99<5000ms"), "{rows:?}");
}

/// `validate`, `plan` and `run` refuse a `[capacity]` the search cannot do, naming the file,
/// the line and the key, before anything runs; `plan` says what the run will search.
#[test]
fn a_capacity_section_is_checked_and_shown_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let cpu = |extra: &str| {
        format!(
            "[suite]\nname = \"c\"\n\n[defaults]\nworkload = \"cpu\"\ntime = 1\n{extra}\n[capacity]\ntarget = \"p95<5ms\"\n"
        )
    };
    let file = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let ok = file("ok.toml", &cpu(""));
    let out = sbsuite().arg("plan").arg(&ok).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains(
            "Capacity search ([capacity]): `sbsuite run` searches the highest rate with p95 ≤ 5 ms"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("bisection until within 5 %, and the rate found repeated 3 times"));
    let out = sbsuite().arg("validate").arg(&ok).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("Capacity search ([capacity])"));

    let cases = [
        (
            cpu("").replace("p95<5ms", "p95 under 5ms"),
            "bad.toml:9:",
            "invalid capacity target `p95 under 5ms`",
        ),
        (
            cpu("\n[matrix]\nrate = [10, 20]\n"),
            "bad.toml:9:",
            "[capacity] varies `rate` itself",
        ),
        (
            cpu("\n[matrix]\nthreads = [1, 2]\n"),
            "bad.toml:11:",
            "[capacity] searches the rate of one matrix point, the suite has 2",
        ),
    ];
    for (i, (text, at, message)) in cases.iter().enumerate() {
        let bad = file("bad.toml", text);
        for command in ["validate", "plan", "run"] {
            let mut cmd = sbsuite();
            cmd.arg(command).arg(&bad);
            if command == "run" {
                cmd.arg("--results-dir").arg(dir.path().join("results"));
            }
            let out = cmd.output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "case {i} {command}: {stderr}");
            assert!(stderr.contains(at), "case {i} {command}: {stderr}");
            assert!(stderr.contains(message), "case {i} {command}: {stderr}");
        }
    }
    // What a run of steps offers around them, a search does not.
    let out = sbsuite()
        .arg("run")
        .arg(&ok)
        .args(["--events", "jsonl", "--results-dir"])
        .arg(dir.path().join("results"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("--events is not available for a suite with [capacity]")
    );
    assert!(!dir.path().join("results").exists());
}
