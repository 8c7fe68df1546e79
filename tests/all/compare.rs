//! `sbsuite compare` and `sbsuite runs` through the real binary, on committed fixture runs
//! (tests/fixtures/compare/README.md says what each holds).

use crate::common;

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
    assert!(tie.contains("+0.0% [-0.9, +1.0]  1.000"), "{tie}");
    // Six quiet repetitions a side already detect a 5 % change: "not significant" means no
    // such change, and no repetitions-needed line is printed.
    assert!(!out.contains("not significant:"), "{out}");
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
/// (#12): `UPDATE_GOLDEN=1 cargo test --test all compare::` rewrites the files after a deliberate
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
            metrics: Vec::new(),
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

/// Writes a hand-made run `dir/name` with the fixtures' real header: one row per
/// (threads, tps, p95), repetitions numbered per threads, everything else as in the first
/// baseline row. Returns the run directory.
fn write_run(dir: &std::path::Path, name: &str, rows: &[(u32, &str, &str)]) -> std::path::PathBuf {
    let src = std::fs::read_to_string(format!("{FX}/baseline/results.csv")).unwrap();
    let mut lines = src.lines();
    let header = lines.next().unwrap();
    let template: Vec<&str> = lines.next().unwrap().split(',').collect();
    let cols: Vec<&str> = header.split(',').collect();
    let at = |c: &str| cols.iter().position(|h| *h == c).unwrap();
    let mut text = format!("{header}\n");
    let mut reps = std::collections::BTreeMap::<u32, u32>::new();
    for (i, (threads, tps, p95)) in rows.iter().enumerate() {
        let rep = reps.entry(*threads).or_default();
        *rep += 1;
        let mut cells: Vec<String> = template.iter().map(|c| c.to_string()).collect();
        cells[at("step")] = (i + 1).to_string();
        cells[at("threads")] = threads.to_string();
        cells[at("repetition")] = rep.to_string();
        cells[at("tps")] = tps.to_string();
        cells[at("lat_p95")] = p95.to_string();
        text.push_str(&cells.join(","));
        text.push('\n');
    }
    let run = dir.join(name);
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("results.csv"), text).unwrap();
    run
}

/// Six repetitions around `tps` (spread ±`spread`) with p95 around `p95`.
fn reps(tps: f64, spread: f64, p95: f64) -> Vec<(u32, String, String)> {
    [-1.0, 0.6, -0.4, 1.0, -0.6, 0.4]
        .iter()
        .map(|k| {
            (
                32,
                format!("{}", tps + k * spread),
                format!("{}", p95 + k * p95 / 100.0),
            )
        })
        .collect()
}

fn as_rows(v: &[(u32, String, String)]) -> Vec<(u32, &str, &str)> {
    v.iter()
        .map(|(t, a, b)| (*t, a.as_str(), b.as_str()))
        .collect()
}

/// Issue #13, defect 6: a metric cell that is not a number used to be skipped (`abc`) or taken
/// as a sample (`NaN`, `inf`: "one sample per side", n = 6) and the gate passed with exit 0.
#[test]
fn issue_13_a_gate_that_cannot_evaluate_fails_naming_run_row_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let base = write_run(dir.path(), "base", &as_rows(&reps(1000.0, 10.0, 30.0)));
    for bad in ["abc", "NaN", "inf", "-inf"] {
        let mut rows = reps(1000.0, 10.0, 30.0);
        rows[2].1 = bad.to_string(); // step 3, on line 4 of the file
        let other = write_run(dir.path(), &format!("other-{bad}"), &as_rows(&rows));
        let (code, out, err) = compare(&[
            base.to_str().unwrap(),
            other.to_str().unwrap(),
            "--fail-on",
            "tps:-5%",
        ]);
        assert_eq!(code, 2, "{bad}: {out}{err}");
        let file = other.join("results.csv");
        assert!(
            err.contains(&format!(
                "{}: line 4 (step 3), column tps: `{bad}` is not a finite number: the gate tps:-5% cannot be evaluated",
                file.display()
            )),
            "{bad}: {err}"
        );
        // Without a gate on tps the cell is left out, loudly, and never counted as a sample.
        let (code, out, err) = compare(&[
            base.to_str().unwrap(),
            other.to_str().unwrap(),
            "--fail-on",
            "p95:+10%",
        ]);
        assert_eq!(code, 0, "{bad}: {out}{err}");
        assert!(
            out.contains(&format!(
                "warning: {}: line 4 (step 3), column tps: `{bad}` is not a finite number: left out of the comparison",
                file.display()
            )),
            "{bad}: {out}"
        );
        let tps = line(
            &out,
            "variant=default workload=oltp_read_write threads=32",
            "tps",
        );
        assert!(
            tps.contains("n=6") && tps.contains("n=5") && !tps.contains("NaN"),
            "{bad}: {tps}"
        );
        assert!(!out.contains("one sample per side"), "{out}");
    }
    // The same mechanism for every metric and for --by: a bad p95 in one variant.
    let mut rows = reps(1000.0, 10.0, 30.0);
    rows[5].2 = "NaN".into();
    let run = write_run(dir.path(), "p95", &as_rows(&rows));
    let (code, _, err) = compare(&[
        base.to_str().unwrap(),
        run.to_str().unwrap(),
        "--fail-on",
        "tps:-5%,p95:+10%",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("line 7 (step 6), column lat_p95: `NaN`") && err.contains("p95:+10%"),
        "{err}"
    );
    let variants = dir.path().join("variants");
    std::fs::create_dir_all(&variants).unwrap();
    let text = std::fs::read_to_string(format!("{FX}/variants/results.csv")).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let tps_at = lines[0].split(',').position(|c| c == "tps").unwrap();
    let mut cells: Vec<&str> = lines[9].split(',').collect();
    cells[tps_at] = "oops";
    lines[9] = cells.join(",");
    std::fs::write(variants.join("results.csv"), lines.join("\n") + "\n").unwrap();
    let (code, _, err) = compare(&[
        variants.to_str().unwrap(),
        "--by",
        "variant",
        "--fail-on",
        "tps:-5%",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("line 10 (step ") && err.contains("column tps: `oops`"),
        "{err}"
    );
}

/// A gate fails only on a significant difference: the same 10 % drop of the medians fails
/// `tps:-10%` when the repetitions agree, and passes when the noise is larger than the drop.
#[test]
fn a_gate_needs_significance() {
    let dir = tempfile::tempdir().unwrap();
    let base = write_run(dir.path(), "base", &as_rows(&reps(1000.0, 5.0, 30.0)));
    let steady = write_run(dir.path(), "steady", &as_rows(&reps(900.0, 5.0, 30.0)));
    let noisy = write_run(dir.path(), "noisy", &as_rows(&reps(900.0, 400.0, 30.0)));
    let key = "variant=default workload=oltp_read_write threads=32";
    let (code, out, err) = compare(&[
        base.to_str().unwrap(),
        steady.to_str().unwrap(),
        "--fail-on",
        "tps:-5%",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("tps:-5% crossed (-10.0%, significant)"),
        "{err}"
    );
    let (code, out, err) = compare(&[
        base.to_str().unwrap(),
        noisy.to_str().unwrap(),
        "--fail-on",
        "tps:-5%",
    ]);
    assert_eq!(code, 0, "noise alone never fails a gate: {out}{err}");
    let tps = line(&out, key, "tps");
    assert!(tps.contains("-10.0%") && tps.ends_with('~'), "{tps}");
    assert!(!err.contains("gate failed"), "{err}");
}

/// A latency gate fires on a significant rise of p95 (higher is worse) and never on a drop.
#[test]
fn a_latency_gate_fires_on_a_rise() {
    let dir = tempfile::tempdir().unwrap();
    let base = write_run(dir.path(), "base", &as_rows(&reps(1000.0, 5.0, 30.0)));
    let slower = write_run(dir.path(), "slower", &as_rows(&reps(1000.0, 5.0, 36.0)));
    let (code, out, err) = compare(&[
        base.to_str().unwrap(),
        slower.to_str().unwrap(),
        "--fail-on",
        "p95:+10%",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("p95:+10% crossed (+20.0%, significant)"),
        "{err}"
    );
    let p95 = line(
        &out,
        "variant=default workload=oltp_read_write threads=32",
        "p95",
    );
    assert!(p95.contains("worse FAIL p95:+10% crossed"), "{p95}");
    // Not crossed (a 20 % rise is below +25 %), and the other way round a drop is better.
    for (a, b, gate) in [(&base, &slower, "p95:+25%"), (&slower, &base, "p95:+10%")] {
        let (code, out, err) =
            compare(&[a.to_str().unwrap(), b.to_str().unwrap(), "--fail-on", gate]);
        assert_eq!(code, 0, "{gate}: {out}{err}");
    }
}

/// Issue #13, defect 5: `sbsuite runs` panicked ("no entry found for key") on a results.csv
/// whose last row lost its last field (a crash or a full disk) and kept panicking for that
/// directory. The run must still be listed, with every row counted.
#[test]
fn issue_13_runs_lists_a_run_whose_last_row_is_cut_short() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(format!("{FX}/baseline/results.csv")).unwrap();
    let body = text.trim_end_matches('\n');
    let rows = body.lines().count() - 1;
    for (name, cut) in [
        // The last field gone (the row ends without its last comma and cell).
        ("last-field", body.rsplit_once(',').unwrap().0.to_string()),
        // Cut in the middle, before the status.
        ("mid-row", body[..body.len() - 60].to_string()),
        // A failed row cut inside its quoted error message.
        (
            "in-quotes",
            format!(
                "{},failed,\"prepare failed: a, b",
                body.rsplitn(4, ',').last().unwrap()
            ),
        ),
    ] {
        let run = dir.path().join("results").join("cut").join(name);
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(run.join("results.csv"), &cut).unwrap();
    }
    // A failed row cut inside a multi-byte character of its error message: invalid UTF-8.
    let mut bytes = body.rsplitn(4, ',').last().unwrap().as_bytes().to_vec();
    bytes.extend_from_slice(",failed,prepare failed: \u{e9}".as_bytes());
    bytes.push(0xc3);
    let run = dir.path().join("results").join("cut").join("mid-char");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("results.csv"), bytes).unwrap();
    let root = dir.path().join("results");
    for format in ["text", "json"] {
        let out = sbsuite()
            .args([
                "runs",
                "--results-dir",
                root.to_str().unwrap(),
                "--format",
                format,
            ])
            .output()
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        if format == "text" {
            for name in ["last-field", "mid-row", "in-quotes", "mid-char"] {
                assert!(
                    stdout
                        .lines()
                        .any(|l| l.split_whitespace().nth(1) == Some(name)),
                    "{name} is listed: {stdout}"
                );
            }
        } else {
            let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
            let runs = v.as_array().unwrap();
            assert_eq!(runs.len(), 4, "{stdout}");
            for r in runs {
                assert_eq!(r["runs"], rows, "every row counted: {r}");
            }
        }
    }
    // compare reads through the same reader: no panic either, and the short row is no sample.
    let (code, out, err) = compare(&[
        &format!("{FX}/baseline"),
        root.join("cut").join("mid-row").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Empties `column` in every row of `run`'s results.csv (a metric the workload does not have).
fn blank(run: &std::path::Path, column: &str) {
    let path = run.join("results.csv");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let at = header.split(',').position(|c| c == column).unwrap();
    let mut out = format!("{header}\n");
    for l in lines {
        let mut cells: Vec<&str> = l.split(',').collect();
        cells[at] = "";
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    std::fs::write(path, out).unwrap();
}

/// A gate with nothing to evaluate (no key on both sides, or its metric empty everywhere)
/// fails loudly instead of passing; a metric that is zero on both sides (errors) is evaluated.
#[test]
fn issue_13_a_gate_with_nothing_to_compare_fails() {
    let dir = tempfile::tempdir().unwrap();
    let base = write_run(dir.path(), "base", &as_rows(&reps(1000.0, 5.0, 30.0)));
    let moved: Vec<_> = reps(500.0, 5.0, 30.0)
        .into_iter()
        .map(|(_, t, p)| (64, t, p))
        .collect();
    let elsewhere = write_run(dir.path(), "elsewhere", &as_rows(&moved));
    let (code, out, err) = compare(&[
        base.to_str().unwrap(),
        elsewhere.to_str().unwrap(),
        "--fail-on",
        "tps:-5%",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("the gate tps:-5% cannot be evaluated: no key has tps values in both"),
        "{err}"
    );
    let other = write_run(dir.path(), "other", &as_rows(&reps(1000.0, 5.0, 30.0)));
    for run in [&base, &other] {
        blank(run, "qps");
    }
    let (code, out, err) = compare(&[
        base.to_str().unwrap(),
        other.to_str().unwrap(),
        "--fail-on",
        "tps:-5%,qps:-5%",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("gate qps:-5% cannot be evaluated"), "{err}");
    let (code, out, err) = compare(&[
        base.to_str().unwrap(),
        other.to_str().unwrap(),
        "--fail-on",
        "tps:-5%,errors:+10%",
    ]);
    assert_eq!(code, 0, "no errors on either side is a pass: {out}{err}");
}

/// Imports `log` (under tests/fixtures/sysbench) into `root` with `sbsuite import`; returns the
/// run directory.
fn import_log(root: &std::path::Path, log: &str) -> std::path::PathBuf {
    let out = sbsuite()
        .arg("import")
        .arg(format!("tests/fixtures/sysbench/{log}"))
        .arg("--out")
        .arg(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let suite = root.join("imported");
    let dir = std::fs::read_dir(&suite)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert!(dir.join("origin.json").is_file(), "{}", dir.display());
    dir
}

/// Issue #14 item 10: an imported sysbench log against a run of sbsuite says, above the table
/// and in JSON, that the tools differ; an import made before `origin.json` existed is still
/// known by its suite.toml; two runs of one tool say nothing.
#[test]
fn a_comparison_across_tools_says_so_above_the_table_and_in_json() {
    let tmp = tempfile::tempdir().unwrap();
    let imported = import_log(tmp.path(), "reconstructed/oltp_read_write_1.1.txt");
    let imported = imported.to_str().unwrap();
    let base = format!("{FX}/baseline");

    let (code, out, err) = compare(&[imported, &base]);
    assert_eq!(code, 0, "{err}");
    let warning = "warning: different tools: the baseline was measured by sysbench 1.1 (imported log), the other side by sbsuite; their clients' CPU cost differs (sbsuite's OLTP clients use less CPU than sysbench's, which on a small machine shows as higher server throughput), so part of a difference may be the tool, not the system";
    let at = out.find(warning).unwrap_or_else(|| panic!("{out}"));
    let grid = out.find("key ").unwrap_or_else(|| panic!("{out}"));
    assert!(at < grid, "above the table: {out}");
    // #14: an import has no host facts: unknown, not an error.
    assert!(
        out.contains(&format!(
            "client host unknown for {imported} (no host.json)\n"
        )),
        "{out}"
    );

    let (_, md, _) = compare(&[imported, &base, "--format", "markdown"]);
    let at = md.find(warning).unwrap_or_else(|| panic!("{md}"));
    assert!(at < md.find("| key |").unwrap(), "{md}");

    let (_, json, _) = compare(&[&base, imported, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let tools = &v["comparisons"][0]["tools"];
    assert_eq!(tools["base"], "sbsuite", "{json}");
    assert_eq!(
        v["comparisons"][0]["hosts"][0]["unknown"][0],
        format!("{imported} (no host.json)"),
        "{json}"
    );
    assert_eq!(tools["other"], "sysbench 1.1 (imported log)", "{json}");
    assert!(
        tools["note"].as_str().unwrap().starts_with(
            "different tools: the baseline was measured by sbsuite, the other side by sysbench 1.1"
        ),
        "{json}"
    );

    // An import from before origin.json: its suite.toml header says where it came from.
    std::fs::remove_file(std::path::Path::new(imported).join("origin.json")).unwrap();
    let (_, out, _) = compare(&[&base, imported]);
    assert!(
        out.contains("warning: different tools: the baseline was measured by sbsuite, the other side by sysbench (imported log);"),
        "{out}"
    );

    // One tool on both sides: no line, no JSON field.
    let (_, out, _) = compare(&[imported, imported]);
    assert!(!out.contains("different tools"), "{out}");
    let (_, json, _) = compare(&[&base, &format!("{FX}/relaxed"), "--format", "json"]);
    assert!(!json.contains("\"tools\""), "{json}");
}

/// A run of two variants whose throughput drifts up across four repetitions (718 → 1010 tps)
/// with `tuned` about 5 % faster in every pair, stored with `variant_order`.
fn drifting_run(dir: &std::path::Path, order: &str) -> std::path::PathBuf {
    let run = dir.join(order);
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(
        run.join("suite.toml"),
        format!("[suite]\nname = \"drift\"\nrepeat = 4\nvariant_order = \"{order}\"\n\n[defaults]\nworkload = \"oltp_point_select\"\n\n[[variant]]\nname = \"baseline\"\n\n[[variant]]\nname = \"tuned\"\n"),
    )
    .unwrap();
    let mut csv = String::from(
        "run_id,step,name,variant,workload,threads,repetition,started_at,tps,status,error,knee\n",
    );
    let pairs = [
        (718.0, 760.0),
        (843.0, 880.0),
        (951.0, 1001.0),
        (1010.0, 1050.0),
    ];
    for (i, (a, b)) in pairs.iter().enumerate() {
        for (j, (variant, tps)) in [("baseline", a), ("tuned", b)].iter().enumerate() {
            let step = 2 * i + j + 1;
            csv.push_str(&format!(
                "r,{step},s,{variant},oltp_point_select,1,{},2026-11-01T10:00:00.000Z,{tps},ok,,\n",
                i + 1
            ));
        }
    }
    std::fs::write(run.join("results.csv"), csv).unwrap();
    run
}

#[test]
fn variants_run_back_to_back_are_compared_with_the_paired_test_which_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let run = drifting_run(dir.path(), "interleaved");
    let (code, out, err) = compare(&[run.to_str().unwrap(), "--by", "variant"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("method: paired t-test over 4 pairs per key, two-sided, on the ln ratios of repetitions run back to back (α = 0.05;"),
        "{out}"
    );
    // scipy.stats.ttest_rel on the log ratios: p = 0.0013, the interval of the geometric mean
    // ratio [+3.52, +6.22] % (not the unpaired sides' wide one); 4 pairs already detect 5 %,
    // and the difference is significant, so no repetitions-needed line.
    let tps = line(&out, "workload=oltp_point_select threads=1", "tps");
    assert!(
        tps.contains("[+3.5, +6.2]") && tps.contains("0.001") && tps.ends_with("better"),
        "{tps}"
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(
            &compare(&[run.to_str().unwrap(), "--by", "variant", "--format", "json"]).1
        )
        .unwrap()["comparisons"][0]["lines"][0]["test"],
        "paired-ln"
    );
    let (code, json, _) = compare(&[run.to_str().unwrap(), "--by", "variant", "--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let c = &v["comparisons"][0];
    assert_eq!(c["test"], "paired t-test over 4 pairs per key");
    assert_eq!(c["lines"][0]["pairs"], 4);

    // The same numbers run blocked: the drift is noise to Welch's test, which finds nothing.
    let run = drifting_run(dir.path(), "blocked");
    let (code, out, err) = compare(&[run.to_str().unwrap(), "--by", "variant"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("method: Welch's two-sided t-test"), "{out}");
    let tps = line(&out, "workload=oltp_point_select threads=1", "tps");
    // scipy.stats.ttest_ind(np.log(b), np.log(a), equal_var=False): p = 0.6656.
    assert!(tps.contains("0.666") && tps.ends_with('~'), "{tps}");
    let (_, json, _) = compare(&[run.to_str().unwrap(), "--by", "variant", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["comparisons"][0]["test"], "Welch's t-test");
    assert!(v["comparisons"][0]["lines"][0].get("pairs").is_none());
}

/// Issue #14, item 21: two noisy repetitions a side used to print a t-interval below zero
/// (`118.1 [-184.2, 420.4]`) and only "raise [suite] repeat". The intervals of a positive
/// metric stay positive (geometric mean per side, ratio of geometric means for the delta), the
/// method is named, and the repetitions that would detect a 5 % and a 10 % change are said,
/// with their assumptions, in the text and in JSON.
#[test]
fn issue_14_two_noisy_repetitions_have_positive_intervals_and_say_how_many_are_needed() {
    let dir = tempfile::tempdir().unwrap();
    let base = write_run(
        dir.path(),
        "base",
        &[(32, "94.3", "30.0"), (32, "141.9", "30.3")],
    );
    let other = write_run(
        dir.path(),
        "other",
        &[(32, "120.0", "30.1"), (32, "150.0", "30.2")],
    );
    let (code, out, err) = compare(&[base.to_str().unwrap(), other.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("per side of the geometric mean"), "{out}");
    // Expected intervals (python3, scipy 1.17): exp(mean(ln x) ± t(0.975, 1)·sd(ln x)/√2) =
    // [8.62, 1551.4] and [32.51, 553.8]; the ratio interval from
    // ttest_ind(ln b, ln a, equal_var=False).confidence_interval(): [-69.7, +343.7] %.
    let tps = line(
        &out,
        "variant=default workload=oltp_read_write threads=32",
        "tps",
    );
    assert!(
        tps.contains("118.1 [8.62, 1551.4] n=2")
            && tps.contains("135.0 [32.51, 553.8] n=2")
            && tps.contains("+14.3% [-69.7, +343.7]")
            && tps.ends_with('~'),
        "{tps}"
    );
    // statsmodels TTestIndPower().solve_power(effect_size=ln(1.05)/0.232799, alpha=0.05,
    // power=0.8) = 358.35 → 359; ln(1.10): 94.62 → 95 (0.232799 = √((s²_a + s²_b)/2) of the
    // ln values).
    assert!(
        out.contains("not significant: tps (1 key): at the noise measured (sd of ln 0.2328) a 5 % change needs 359 repetitions a side, a 10 % change 95"),
        "{out}"
    );
    assert!(
        out.contains("power 0.8 in a two-sided two-sample t-test at α = 0.05"),
        "{out}"
    );
    assert!(
        out.contains("raise [suite] repeat; how far: below"),
        "{out}"
    );
    let (_, json, _) = compare(&[
        base.to_str().unwrap(),
        other.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["power"]["power"], 0.8);
    assert_eq!(v["power"]["alpha"], 0.05);
    let tps = &v["comparisons"][0]["lines"][0];
    assert_eq!(tps["metric"], "tps");
    assert_eq!(tps["test"], "welch-ln");
    assert_eq!(tps["base"]["ci_method"], "geometric-mean");
    assert!(tps["base"]["ci_low"].as_f64().unwrap() > 0.0, "{tps}");
    assert!(tps["delta_ci_low"].as_f64().unwrap() > -100.0, "{tps}");
    assert_eq!(tps["reps_needed"]["change_5pct"], 359);
    assert_eq!(tps["reps_needed"]["change_10pct"], 95);
}
