//! `sbsuite compare` and `sbsuite runs` through the real binary, on committed fixture runs
//! (tests/fixtures/compare/README.md says what each holds).

mod common;

use common::sbsuite;

const FX: &str = "tests/fixtures/compare";

fn compare(args: &[&str]) -> (i32, String, String) {
    let out = sbsuite().arg("compare").args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The table line of `key` and `metric`.
fn line<'a>(text: &'a str, key: &str, metric: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(key) && l[key.len()..].trim_start().starts_with(metric))
        .unwrap_or_else(|| panic!("no line {key} {metric} in:\n{text}"))
}

#[test]
fn a_real_difference_is_significant_with_the_server_change_shown() {
    let (code, out, err) = compare(&[&format!("{FX}/baseline"), &format!("{FX}/relaxed")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Welch's two-sided t-test"), "{out}");
    assert!(
        out.contains("innodb_flush_log_at_trx_commit: 1 → 2"),
        "{out}"
    );
    assert!(out.contains("sync_binlog: 0 → 10"), "{out}");
    let tps = line(
        &out,
        "variant=default workload=oltp_read_write threads=32",
        "tps",
    );
    assert!(tps.contains("+14.1%") && tps.ends_with("better"), "{tps}");
    let p95 = line(
        &out,
        "variant=default workload=oltp_read_write threads=64",
        "p95",
    );
    assert!(
        p95.contains("-8.0%") && p95.ends_with("better"),
        "lower latency is better: {p95}"
    );
    assert!(line(&out, "geomean", "tps").contains("+12.0%"), "{out}");
    assert!(
        !out.contains("warning: fewer than 6 samples"),
        "six a side: {out}"
    );
}

#[test]
fn the_same_distribution_is_not_significant_and_one_sided_keys_are_listed() {
    let (code, out, _) = compare(&[&format!("{FX}/baseline"), &format!("{FX}/rerun")]);
    assert_eq!(code, 0);
    for t in ["32", "64"] {
        let tps = line(
            &out,
            &format!("variant=default workload=oltp_read_write threads={t}"),
            "tps",
        );
        assert!(tps.ends_with('~'), "{tps}");
    }
    // threads 64: the very same samples (ties): p = 1.
    let tie = line(
        &out,
        "variant=default workload=oltp_read_write threads=64",
        "tps",
    );
    assert!(tie.contains("+0.0%  1.000"), "{tie}");
    assert!(
        out.contains("only in tests/fixtures/compare/rerun: variant=default workload=oltp_read_write threads=128"),
        "{out}"
    );
    assert!(
        out.contains("suite.toml differs:\n  + report_interval = 10"),
        "{out}"
    );
}

#[test]
fn by_variant_compares_inside_one_run_and_gates_set_the_exit_code() {
    let (code, out, err) = compare(&[
        &format!("{FX}/variants"),
        "--by",
        "variant",
        "--fail-on",
        "tps:-5%,p95:+10%",
    ]);
    assert_eq!(code, 0, "relaxed is faster: no gate fails: {err}");
    assert!(
        out.starts_with("variant=baseline → variant=relaxed\n"),
        "{out}"
    );
    assert!(line(&out, "workload=oltp_read_write threads=32", "tps").contains("+14.1%"));
    // Baseline measured against relaxed: a significant 12 % drop crosses tps:-5%.
    let (code, _, err) = compare(&[
        &format!("{FX}/relaxed"),
        &format!("{FX}/baseline"),
        "--fail-on",
        "tps:-5%",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("gate failed:") && err.contains("tps:-5% crossed (-12.4%, significant)"),
        "{err}"
    );
    // Not crossed: a 20 % drop is needed.
    let (code, _, _) = compare(&[
        &format!("{FX}/relaxed"),
        &format!("{FX}/baseline"),
        "--fail-on",
        "tps:-20%",
    ]);
    assert_eq!(code, 0);
}

#[test]
fn single_samples_gate_on_the_raw_delta_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    for (name, tps) in [("a", "100"), ("b", "80")] {
        let src = std::fs::read_to_string(format!("{FX}/baseline/results.csv")).unwrap();
        let mut lines = src.lines();
        let header = lines.next().unwrap();
        let row = lines.next().unwrap();
        let cols: Vec<&str> = header.split(',').collect();
        let tps_at = cols.iter().position(|c| *c == "tps").unwrap();
        let mut cells: Vec<&str> = row.split(',').collect();
        cells[tps_at] = tps;
        std::fs::create_dir_all(dir.path().join(name)).unwrap();
        std::fs::write(
            dir.path().join(name).join("results.csv"),
            format!("{header}\n{}\n", cells.join(",")),
        )
        .unwrap();
    }
    let a = dir.path().join("a").join("results.csv");
    let b = dir.path().join("b");
    let (code, out, err) = compare(&[
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--fail-on",
        "tps:-10%",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("one sample per side"), "{out}");
    assert!(out.contains("warning: fewer than 6 samples"), "{out}");
    assert!(
        line(
            &out,
            "variant=default workload=oltp_read_write threads=32",
            "tps"
        )
        .ends_with("n/a FAIL tps:-10% crossed (-20.0%, raw delta of single samples)"),
        "{out}"
    );
}

#[test]
fn formats_markdown_csv_json() {
    let runs = [format!("{FX}/baseline"), format!("{FX}/relaxed")];
    let (_, md, _) = compare(&[&runs[0], &runs[1], "--format", "markdown"]);
    assert!(
        md.contains("| key | metric | base | other | delta | p | verdict |"),
        "{md}"
    );
    let (_, csv_text, _) = compare(&[&runs[0], &runs[1], "--format", "csv"]);
    let mut r = csv::Reader::from_reader(csv_text.as_bytes());
    assert_eq!(r.headers().unwrap().get(10), Some("verdict"));
    assert_eq!(r.records().count(), 10 + 5, "10 lines + 5 geomeans");
    let (_, json, _) = compare(&[&runs[0], &runs[1], "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(v["method"].as_str().unwrap().contains("Welch"));
    let first = &v["comparisons"][0]["lines"][0];
    assert_eq!(first["metric"], "tps");
    assert_eq!(first["verdict"], "better");
    assert!(
        !md.contains('\x1b') && !csv_text.contains('\x1b'),
        "no colours off a terminal"
    );
}

#[test]
fn bad_input_names_the_problem() {
    let (code, _, err) = compare(&["nowhere/x", &format!("{FX}/baseline")]);
    assert_eq!(code, 2);
    assert!(
        err.contains("nowhere/x: ") && err.contains("sbsuite runs"),
        "{err}"
    );
    let (code, _, err) = compare(&[&format!("{FX}/variants"), "--by", "varaint"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--by varaint") && err.contains("use one of variant, workload, threads"),
        "{err}"
    );
    let (code, _, err) = compare(&[
        &format!("{FX}/baseline"),
        &format!("{FX}/relaxed"),
        "--fail-on",
        "tps:5%",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("METRIC:±N%"), "{err}");
}

#[test]
fn runs_lists_the_runs_with_their_status() {
    let out = sbsuite()
        .args(["runs", "--results-dir", "tests/fixtures"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.starts_with("suite "), "{text}");
    for run in ["baseline", "relaxed", "rerun", "variants"] {
        assert!(text.contains(&format!("compare  {run} ")), "{text}");
    }
    assert!(
        text.contains("compare  variants  2026-11-01T10:00:00.000Z  24    ok"),
        "{text}"
    );
}

/// Today's exact output of every format, pinned byte for byte before the exporters were split
/// (#12): `UPDATE_GOLDEN=1 cargo test --test compare` rewrites the files after a deliberate
/// change.
#[test]
fn every_format_is_byte_identical_to_its_golden_file() {
    let fx = |run: &str| format!("{FX}/{run}");
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("table", vec![fx("baseline"), fx("relaxed")]),
        (
            "markdown",
            vec![
                fx("baseline"),
                fx("relaxed"),
                "--format".into(),
                "markdown".into(),
            ],
        ),
        (
            "csv",
            vec![
                fx("baseline"),
                fx("relaxed"),
                "--format".into(),
                "csv".into(),
            ],
        ),
        (
            "json",
            vec![
                fx("baseline"),
                fx("relaxed"),
                "--format".into(),
                "json".into(),
            ],
        ),
        ("table-rerun", vec![fx("baseline"), fx("rerun")]),
        (
            "markdown-rerun",
            vec![
                fx("baseline"),
                fx("rerun"),
                "--format".into(),
                "markdown".into(),
            ],
        ),
        (
            "json-rerun",
            vec![
                fx("baseline"),
                fx("rerun"),
                "--format".into(),
                "json".into(),
            ],
        ),
        (
            "table-by-variant",
            vec![
                fx("variants"),
                "--by".into(),
                "variant".into(),
                "--fail-on".into(),
                "tps:-5%,p95:+10%".into(),
            ],
        ),
        (
            "csv-by-variant",
            vec![
                fx("variants"),
                "--by".into(),
                "variant".into(),
                "--format".into(),
                "csv".into(),
            ],
        ),
        (
            "table-gate-failed",
            vec![
                fx("relaxed"),
                fx("baseline"),
                "--fail-on".into(),
                "tps:-5%".into(),
            ],
        ),
        (
            "markdown-gate-failed",
            vec![
                fx("relaxed"),
                fx("baseline"),
                "--fail-on".into(),
                "tps:-5%".into(),
                "--format".into(),
                "markdown".into(),
            ],
        ),
        (
            "csv-gate-failed",
            vec![
                fx("relaxed"),
                fx("baseline"),
                "--fail-on".into(),
                "tps:-5%".into(),
                "--format".into(),
                "csv".into(),
            ],
        ),
        (
            "json-gate-failed",
            vec![
                fx("relaxed"),
                fx("baseline"),
                "--fail-on".into(),
                "tps:-5%".into(),
                "--format".into(),
                "json".into(),
            ],
        ),
        // Bad input: the messages and exit code 2.
        ("error-missing", vec!["nowhere/x".into(), fx("baseline")]),
        (
            "error-not-a-run",
            vec!["tests/fixtures".into(), fx("baseline")],
        ),
        (
            "error-by-no-such-column",
            vec![fx("variants"), "--by".into(), "varaint".into()],
        ),
        (
            "error-by-one-value",
            vec![fx("baseline"), "--by".into(), "variant".into()],
        ),
        (
            "error-by-two-runs",
            vec![
                fx("baseline"),
                fx("relaxed"),
                "--by".into(),
                "variant".into(),
            ],
        ),
        ("error-one-run", vec![fx("baseline")]),
        (
            "error-gate-empty",
            vec![
                fx("baseline"),
                fx("relaxed"),
                "--fail-on".into(),
                ",".into(),
            ],
        ),
    ];
    let mut outputs: Vec<(String, String)> = cases
        .into_iter()
        .map(|(name, args)| {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (code, out, err) = compare(&args);
            (
                format!("compare-{name}"),
                format!("exit: {code}\n--- stdout\n{out}--- stderr\n{err}"),
            )
        })
        .collect();
    for (name, format) in [("runs-text", "text"), ("runs-json", "json")] {
        let out = sbsuite()
            .args([
                "runs",
                "--results-dir",
                "tests/fixtures",
                "--format",
                format,
            ])
            .output()
            .unwrap();
        outputs.push((
            name.to_string(),
            format!(
                "exit: {}\n--- stdout\n{}--- stderr\n{}",
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        ));
    }
    // The terminal table with colours (stdout is not a terminal here): through the library.
    for (name, base, other) in [
        ("compare-table-colour", "relaxed", "baseline"),
        ("compare-table-colour-better", "baseline", "relaxed"),
    ] {
        let req = sbsuite::compare::Request {
            runs: vec![fx(base).into(), fx(other).into()],
            by: None,
            gates: sbsuite::compare::parse_gates("tps:-5%").unwrap(),
        };
        let cs = sbsuite::compare::compare(&req).unwrap();
        outputs.push((
            name.into(),
            sbsuite::compare::render(&cs, sbsuite::compare::Format::Table, true),
        ));
    }
    let dir = std::path::Path::new("tests/golden");
    let bless = std::env::var_os("UPDATE_GOLDEN").is_some();
    for (name, got) in outputs {
        let path = dir.join(format!("{name}.txt"));
        if bless {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(&path, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_GOLDEN=1 writes it)", path.display()));
        assert_eq!(got, want, "{} differs", path.display());
    }
}
