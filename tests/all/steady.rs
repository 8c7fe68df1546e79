//! #29 end to end: `repeat = { min, max, until }` stops early on a quiet workload and runs to
//! its maximum on a noisy one; `warmup_time = "auto"` trims and says so; every run carries its
//! stationarity verdict; the rule's mistakes are configuration errors naming the key.

use std::collections::HashMap;
use std::path::Path;

use crate::common;
use common::{csv_rows, results, sbsuite};

/// Runs `suite` (TOML text) from a temporary directory; (stdout + stderr, results root).
fn run(suite: &str) -> (String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("suite.toml");
    std::fs::write(&file, suite).unwrap();
    let out = sbsuite()
        .current_dir(dir.path())
        .arg("run")
        .arg(&file)
        .args(["--progress", "plain", "--results-dir"])
        .arg(dir.path().join("results"))
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    (text, dir)
}

fn repetitions(root: &Path) -> Vec<HashMap<String, String>> {
    csv_rows(root, "repetitions.csv")
}

/// `rate` with a seed offers the same arrivals in every repetition (the same Poisson
/// schedule), so each one measures the same throughput whatever else loads the machine (a
/// cpu run of a fixed event count drifts by half on a busy test machine): the target is met
/// at the minimum and the planned rest is skipped.
#[test]
fn a_quiet_workload_stops_at_the_minimum() {
    let (text, dir) = run(r#"
[suite]
name = "quiet"
repeat = { min = 3, max = 8, until = "ci95 < 2%" }

[defaults]
workload = "cpu"
cpu_max_prime = 100
rate = 200
rand_seed = 7
time = 1
"#);
    let rows = results(dir.path());
    assert!(
        rows.len() >= 3 && rows.len() < 8,
        "stopped early: {} rows\n{text}",
        rows.len()
    );
    assert!(rows.iter().all(|r| r["status"] == "ok"), "{rows:?}");
    let skipped = 8 - rows.len();
    assert_eq!(
        text.matches("skipped, repeat: the 95 % interval of tps")
            .count(),
        skipped,
        "{text}"
    );
    let reps = repetitions(dir.path());
    assert_eq!(reps.len(), 1, "{reps:?}");
    assert_eq!(reps[0]["met"], "yes", "{reps:?}");
    assert_eq!(reps[0]["repetitions"], rows.len().to_string(), "{reps:?}");
    assert_eq!(reps[0]["metric"], "tps");
    assert!(text.contains("target < 2 % met"), "{text}");
}

/// `rate` without a seed offers a Poisson number of arrivals in each second: about ±14 % at
/// 50 a second, far from a ±1 % target, so every planned repetition runs and the summary says
/// the target was not met. At least three repetitions: two draws of a Poisson(50) count are
/// equal about one time in 25 (an interval of ±0 %), three about one time in 550.
#[test]
fn a_noisy_workload_runs_to_the_maximum() {
    let (text, dir) = run(r#"
[suite]
name = "noisy"
repeat = { min = 3, max = 4, until = "ci95 < 1%", metric = "eps" }

[defaults]
workload = "cpu"
cpu_max_prime = 100
rate = 50
time = 1
"#);
    let rows = results(dir.path());
    assert_eq!(rows.len(), 4, "{text}");
    assert!(!text.contains("skipped, repeat"), "{text}");
    let reps = repetitions(dir.path());
    assert_eq!(reps.len(), 1, "{reps:?}");
    assert_eq!(
        (reps[0]["repetitions"].as_str(), reps[0]["met"].as_str()),
        ("4", "no"),
        "{reps:?}"
    );
    assert!(text.contains("NOT met (max 4)"), "{text}");
}

/// Each matrix cell is decided on its own: the seeded (quiet) cell stops early, the
/// unseeded (noisy) one runs to the maximum. From four repetitions: three unseeded
/// Poisson(50) counts came out equal (55, 55, 55) in one CI run, about one chance in 550;
/// four equal ones are about one in 20,000.
#[test]
fn each_cell_stops_on_its_own() {
    let (text, dir) = run(r#"
[suite]
name = "cells"
repeat = { min = 4, max = 6, until = "ci95 < 1%", metric = "eps" }

[defaults]
workload = "cpu"
cpu_max_prime = 100
rate = 50
time = 1

[matrix]
rand_seed = [7, 0]
"#);
    let rows = results(dir.path());
    let count = |seed: &str| rows.iter().filter(|r| r["rand_seed"] == seed).count();
    // Early, not necessarily at min: on a loaded machine the seeded cell's eps can still
    // wander by more than 1 % between two repetitions.
    assert!(
        (4..6).contains(&count("7")),
        "the quiet cell stops before max\n{text}"
    );
    assert_eq!(count("0"), 6, "the noisy cell runs to max\n{text}");
    let reps = repetitions(dir.path());
    let met: Vec<&str> = reps.iter().map(|r| r["met"].as_str()).collect();
    assert_eq!(met, ["yes", "no"], "{reps:?}");
}

#[test]
fn auto_warmup_is_reported_in_the_text_and_the_results() {
    let (text, dir) = run(r#"
[suite]
name = "auto"

[defaults]
workload = "cpu"
cpu_max_prime = 2000
warmup_time = "auto"
time = 2
"#);
    assert!(
        text.contains("Warm-up: ") || text.contains("did not settle"),
        "{text}"
    );
    assert!(text.contains("Steady state: unknown"), "{text}");
    let rows = results(dir.path());
    let warmup: f64 = rows[0]["warmup_s"].parse().unwrap();
    assert!((20.0..70.0).contains(&warmup), "{rows:?}");
    assert_eq!(rows[0]["steady"], "unknown", "2 s measured");
    let seconds: f64 = rows[0]["seconds"].parse().unwrap();
    assert!(seconds < 5.0, "the warmup is not measured: {rows:?}");
}

/// Mistakes in the rule name the key and the fix, and `validate` refuses them.
#[test]
fn a_bad_rule_is_a_configuration_error_naming_the_key() {
    for (rule, key, fix) in [
        (
            r#"{ min = 3, max = 2, until = "ci95 < 2%" }"#,
            "suite.repeat.max",
            "raise max",
        ),
        (
            r#"{ min = 3, max = 9, until = "p < 0.05" }"#,
            "suite.repeat.until",
            "ci95 < N%",
        ),
        (
            r#"{ min = 1, max = 9, until = "ci95 < 2%" }"#,
            "suite.repeat.min",
            "at least 2",
        ),
        (
            r#"{ min = 3, max = 9, until = "ci95 < 2%", metric = "speed" }"#,
            "suite.repeat.metric",
            "use one of",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.toml");
        std::fs::write(
            &file,
            format!("[suite]\nname = \"x\"\nrepeat = {rule}\n\n[defaults]\nworkload = \"cpu\"\n"),
        )
        .unwrap();
        let out = sbsuite().arg("validate").arg(&file).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{rule}: {err}");
        assert!(err.contains(key), "{rule}: {err}");
        assert!(err.contains(fix), "{rule}: {err}");
        assert!(err.contains("s.toml:3"), "{rule}: names the line: {err}");
    }
}
