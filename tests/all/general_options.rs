//! sysbench's general options through the real binary: one cpu step of `bench/one.toml` per
//! test, configured with `--set`, asserting on the sysbench-shaped text and the results CSV.
//! Every test stays under 4 s of wall time.

use crate::common;

use std::path::Path;
use std::time::Instant;

/// Runs one cpu step with `sets` (`key=value`), returning (stdout, results.csv text).
fn run_cpu(sets: &[&str]) -> (String, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cmd = common::sbsuite();
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["run", "bench/one.toml", "--quiet", "--results-dir"])
        .arg(dir.path())
        .args(["--set", "workload=cpu", "--set", "cpu_max_prime=2000"]);
    for s in sets {
        cmd.args(["--set", s]);
    }
    let output = cmd.output().expect("sbsuite runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let csv = find_results(dir.path()).unwrap_or_default();
    (stdout, csv)
}

fn find_results(dir: &Path) -> Option<String> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let p = entry.path();
        if p.is_dir() {
            if let Some(s) = find_results(&p) {
                return Some(s);
            }
        } else if p.file_name().is_some_and(|n| n == "results.csv") {
            return std::fs::read_to_string(p).ok();
        }
    }
    None
}

/// The value after `label` on its line in the final report.
fn value_of(text: &str, label: &str) -> f64 {
    let line = text
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no `{label}` in:\n{text}"));
    line[line.find(label).unwrap_or(0) + label.len()..]
        .trim()
        .trim_end_matches('s')
        .parse()
        .unwrap_or_else(|_| panic!("bad value in `{line}`"))
}

#[test]
fn rate_holds_the_target_and_shows_the_queue() {
    // 1000/s for 2 s: 2000 Poisson arrivals (σ ≈ 2.2 %); the seed fixes the schedule.
    let (text, _) = run_cpu(&[
        "rate=1000",
        "time=2",
        "threads=2",
        "report_interval=1",
        "rand_seed=7",
    ]);
    assert!(
        text.contains("Target transaction rate: 1000/sec\n"),
        "{text}"
    );
    let events = value_of(&text, "total number of events:");
    assert!((1900.0..=2100.0).contains(&events), "{events}\n{text}");
    for s in [1, 2] {
        assert!(
            text.contains(&format!("[ {s}s ] queue length: ")) && text.contains(" concurrency: "),
            "{text}"
        );
    }
    let interim = text
        .lines()
        .filter(|l| l.contains("] thds: 2 eps: "))
        .count();
    assert_eq!(interim, 2, "{text}");
}

#[test]
fn warmup_is_excluded_from_time_and_events() {
    let t = Instant::now();
    let (text, csv) = run_cpu(&["warmup_time=1", "time=1", "report_interval=1"]);
    let wall = t.elapsed().as_secs_f64();
    assert!(wall >= 2.0, "warmup extends the run: {wall}");
    let total = value_of(&text, "total time:");
    assert!((0.95..1.3).contains(&total), "{total}\n{text}");
    // One interim line, stamped from the end of the warmup.
    let interim: Vec<&str> = text.lines().filter(|l| l.contains("] thds:")).collect();
    assert_eq!(interim.len(), 1, "{text}");
    assert!(interim[0].starts_with("[ 1s ]"), "{text}");
    // The events per second of the report are the measured ones.
    let events = value_of(&text, "total number of events:");
    let eps = value_of(&text, "events per second:");
    assert!(
        (events / total - eps).abs() / eps < 0.05,
        "{events} {total} {eps}"
    );
    assert!(csv.lines().count() == 2 && csv.contains(",ok,"), "{csv}");
}

#[test]
fn histogram_seed_and_debug_lines() {
    let (text, _) = run_cpu(&[
        "events=300",
        "threads=2",
        "histogram=on",
        "rand_seed=42",
        "debug=on",
    ]);
    assert!(
        text.contains("Initializing random number generator from seed (42).\n"),
        "{text}"
    );
    assert!(text.contains("Debug mode enabled.\n\n"), "{text}");
    let start = text
        .find("Latency histogram (values are in milliseconds)\n       value  ------------- distribution ------------- count\n")
        .expect("histogram header");
    let cpu = text.find("CPU speed:").expect("cpu block");
    assert!(start < cpu, "histogram before the report");
    let counted: u64 = text[start..cpu]
        .lines()
        .filter(|l| l.contains(" |"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum();
    assert_eq!(counted, 300, "every event in the histogram");
    assert!(text.contains("DEBUG:     thread #  1: min: "), "{text}");

    let (text, _) = run_cpu(&["events=10"]);
    assert!(text.contains("Initializing random number generator from current time\n"));
    assert!(!text.contains("Latency histogram"));
}

#[test]
fn checkpoints_report_and_restart() {
    let (text, _) = run_cpu(&["time=3", "report_checkpoints=2,1"]);
    assert!(
        text.contains("Report checkpoint(s) at 1, 2 seconds\n"),
        "{text}"
    );
    let first = text
        .find("[ 1s ] Checkpoint report:\n")
        .expect("1 s checkpoint");
    let second = text
        .find("[ 2s ] Checkpoint report:\n")
        .expect("2 s checkpoint");
    assert!(first < second, "{text}");
    assert_eq!(text.matches("General statistics:").count(), 3, "{text}");
    // Each report covers about one second (statistics restart at each checkpoint).
    for part in [&text[first..second], &text[second..]] {
        let total = value_of(
            part.split("Threads fairness").next().unwrap_or(part),
            "total time:",
        );
        assert!((0.9..1.3).contains(&total), "{total}\n{text}");
    }
}

#[test]
fn forced_shutdown_reports_and_marks_the_step() {
    // One event of cpu_max_prime=20000000 takes seconds: still running 1 s after the limit.
    let t = Instant::now();
    let (text, csv) = run_cpu(&["cpu_max_prime=20000000", "time=1", "forced_shutdown=1"]);
    assert!(t.elapsed().as_secs_f64() < 3.5, "stuck worker abandoned");
    let forced = text
        .find("The --max-time limit has expired, forcing shutdown...\n")
        .expect("message");
    assert!(forced < text.find("General statistics:").expect("report"));
    assert!(
        text.contains("Number of unfinished transactions on forced shutdown: 1\n"),
        "{text}"
    );
    assert!(csv.contains(",interrupted,"), "{csv}");
}
