//! The memory, threads and mutex engines end to end: the real binary runs one step of
//! `bench/one.toml`, and the sysbench-shaped text and the CSV row are checked. Every run is
//! bounded by its own work (a transfer total, an events cap, one event per thread), not by its
//! time limit, so each test stays well under a second.

use std::collections::HashMap;
use std::path::Path;

use crate::common;

use common::sbsuite;

/// What one step printed and the results.csv row it wrote.
struct Step {
    ok: bool,
    stdout: String,
    stderr: String,
    row: HashMap<String, String>,
}

fn run_step(sets: &[&str]) -> Step {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = sbsuite();
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["run", "bench/one.toml", "--quiet", "--results-dir"])
        .arg(dir.path())
        // A generous time limit only as a safety net (the suite validator refuses a step without
        // any limit); every run here ends on its own long before it.
        .args(["--set", "time=60", "--set", "report_interval=0"]);
    for s in sets {
        cmd.args(["--set", s]);
    }
    let out = cmd.output().unwrap();
    Step {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        row: results_row(dir.path()),
    }
}

/// The only row of the only results.csv under `root`.
fn results_row(root: &Path) -> HashMap<String, String> {
    let path = walk(root)
        .into_iter()
        .find(|p| p.ends_with("results.csv"))
        .expect("a results.csv");
    let mut r = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 1);
    header
        .into_iter()
        .zip(rows[0].iter().map(str::to_string))
        .collect()
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn num(step: &Step, col: &str) -> f64 {
    step.row[col]
        .parse()
        .unwrap_or_else(|_| panic!("{col} = {:?}", step.row[col]))
}

#[test]
fn memory_transfers_its_total_and_reports_like_sysbench() {
    // 10 MiB in 1 KiB blocks over 2 threads: 5120 events each. `events` is ignored, as in
    // sysbench.
    let s = run_step(&[
        "workload=memory",
        "threads=2",
        "events=5",
        "memory_total_size=10M",
    ]);
    assert!(s.ok, "{}\n{}", s.stdout, s.stderr);
    assert!(
        s.stdout.contains(
            "\n\nRunning memory speed test with the following options:\n  block size: 1KiB\n  total size: 10MiB\n  operation: write\n  scope: global\n\nInitializing worker threads...\n"
        ),
        "{}",
        s.stdout
    );
    assert!(
        s.stdout
            .contains("Threads started!\n\nTotal operations: 10240 ("),
        "{}",
        s.stdout
    );
    assert!(
        s.stdout.contains(" per second)\n\n10.00 MiB transferred ("),
        "{}",
        s.stdout
    );
    assert!(
        s.stdout.contains(" MiB/sec)\n\n\nGeneral statistics:\n"),
        "{}",
        s.stdout
    );
    assert_eq!(num(&s, "events"), 10240.0);
    assert_eq!(num(&s, "total_mib"), 10.0);
    let rate = num(&s, "mib_per_s");
    let expected = 10.0 / num(&s, "seconds");
    // total_mib / seconds, up to the rounding of `seconds` in the CSV of a millisecond run.
    assert!(
        rate > 0.0 && (rate / expected - 1.0).abs() < 0.1,
        "{rate} vs {expected}"
    );
}

#[test]
fn memory_local_rnd_read_with_large_blocks() {
    // 4 MiB in 64 KiB blocks over 3 threads: ⌊64 / 3⌋ = 21 events each.
    let s = run_step(&[
        "workload=memory",
        "threads=3",
        "memory_total_size=4M",
        "memory_block_size=64K",
        "memory_scope=local",
        "memory_access_mode=rnd",
        "memory_oper=read",
    ]);
    assert!(s.ok, "{}\n{}", s.stdout, s.stderr);
    assert!(
        s.stdout.contains(
            "  block size: 64KiB\n  total size: 4MiB\n  operation: read\n  scope: local\n"
        )
    );
    assert_eq!(num(&s, "events"), 63.0);
    assert_eq!(num(&s, "total_mib"), 63.0 / 16.0);
    assert!(s.stdout.contains("Total operations: 63 ("), "{}", s.stdout);
    assert!(s.stdout.contains("3.94 MiB transferred ("), "{}", s.stdout);
}

#[test]
fn memory_oper_none_prints_no_transfer_line() {
    let s = run_step(&[
        "workload=memory",
        "memory_total_size=1M",
        "memory_oper=none",
    ]);
    assert!(s.ok, "{}\n{}", s.stdout, s.stderr);
    assert!(s.stdout.contains("Total operations: 1024 ("));
    assert!(
        s.stdout.contains(" per second)\n\n\nGeneral statistics:\n"),
        "{}",
        s.stdout
    );
    assert!(!s.stdout.contains("MiB transferred"));
    assert_eq!(s.row["total_mib"], "");
}

#[test]
fn memory_rejects_a_block_size_that_is_not_a_power_of_two() {
    let s = run_step(&["workload=memory", "memory_block_size=12"]);
    assert!(!s.ok);
    assert_eq!(s.row["status"], "failed");
    assert!(
        s.row["error"].contains("`memory_block_size`"),
        "{:?}",
        s.row
    );
    assert!(s.row["error"].contains("power of 2"), "{:?}", s.row);
}

#[test]
fn mutex_runs_one_event_per_thread() {
    let s = run_step(&[
        "workload=mutex",
        "threads=3",
        "mutex_locks=2000",
        "mutex_loops=100",
    ]);
    assert!(s.ok, "{}\n{}", s.stdout, s.stderr);
    assert_eq!(num(&s, "events"), 3.0);
    // No banner and no test block: one blank line between the sections, as sysbench.
    assert!(
        s.stdout.contains(
            "from current time\n\n\nInitializing worker threads...\n\nThreads started!\n\n\nGeneral statistics:\n"
        ),
        "{}",
        s.stdout
    );
    assert!(
        s.stdout
            .contains("    events (avg/stddev):           1.0000/0.00\n")
    );
}

#[test]
fn threads_runs_to_the_events_cap() {
    let s = run_step(&[
        "workload=threads",
        "threads=2",
        "events=40",
        "thread_yields=20",
        "thread_locks=3",
    ]);
    assert!(s.ok, "{}\n{}", s.stdout, s.stderr);
    assert_eq!(num(&s, "events"), 40.0);
    assert!(num(&s, "eps") > 0.0);
    assert!(
        s.stdout
            .contains("Threads started!\n\n\nGeneral statistics:\n"),
        "{}",
        s.stdout
    );
}
