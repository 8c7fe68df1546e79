//! The binary's contract: exit codes, error output, plan output, and the committed schema.

use std::path::Path;

mod common;

use common::sbsuite;
use predicates::prelude::*;

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn committed_schema_is_fresh() {
    let committed = std::fs::read_to_string("schemas/suite.schema.json").unwrap();
    let out = sbsuite().arg("schema").output().unwrap();
    assert!(out.status.success());
    let generated = String::from_utf8(out.stdout).unwrap();
    assert!(
        committed == generated,
        "schemas/suite.schema.json is stale: run `cargo run -- schema > schemas/suite.schema.json`"
    );
}

#[test]
fn every_shipped_suite_and_example_validates() {
    let mut files = Vec::new();
    for dir in ["suites", "examples"] {
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.extension().is_some_and(|e| e == "toml") {
                files.push(p);
            }
        }
    }
    assert!(files.len() >= 4, "{files:?}");
    sbsuite()
        .arg("validate")
        .args(&files)
        .assert()
        .success()
        .stdout(predicate::str::contains("ok: ").count(files.len()));
}

#[test]
fn plan_of_the_oceanbase_loop() {
    let out = sbsuite()
        .args(["plan", "suites/oceanbase.toml", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let kinds: Vec<&str> = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.len(), 20);
    assert_eq!(kinds[0], "prepare");
    assert_eq!(kinds.iter().filter(|k| **k == "run").count(), 18);
    assert_eq!(kinds[19], "cleanup");
    // Secrets never reach the plan output.
    assert!(!String::from_utf8_lossy(&out.stdout).contains("password"));
    sbsuite()
        .args(["plan", "suites/oceanbase.toml"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "20 steps (1 prepare, 18 run, 1 cleanup), estimated 18m00s",
        ))
        .stdout(predicate::str::contains(" 2. run     oltp_read_only-t32"));
}

#[test]
fn set_and_env_layers() {
    sbsuite()
        .args([
            "plan",
            "suites/quickstart.toml",
            "--set",
            "matrix.workload=[\"cpu\"]",
            "--set",
            "matrix.threads=[1,2,4]",
            "--set",
            "time=3",
        ])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("3 steps")
                .and(predicate::str::contains("cpu-t4"))
                .and(predicate::str::contains("time=3")),
        );
    sbsuite()
        .args(["plan", "suites/quickstart.toml"])
        .env("SBSUITE_DEFAULTS__CPU_MAX_PRIME", "2000")
        .assert()
        .success()
        .stdout(predicate::str::contains("cpu_max_prime=2000"));
    sbsuite()
        .args(["plan", "suites/quickstart.toml"])
        .env("SBSUITE_DEFAULTS__THREADS", "zero")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "environment variable SBSUITE_DEFAULTS__THREADS",
        ));
}

/// Each kind of bad input: exit code 2, a message naming file:line:col and key, no panic, and
/// nothing written under results/.
#[test]
fn bad_input_exit_code_and_position() {
    let dir = tempfile::tempdir().unwrap();
    let good = "[suite]\nname = \"bad\"\n\n[defaults]\nworkload = \"cpu\"\ntime = 1\n\n[matrix]\nthreads = [1, 2]\n";
    let cases: &[(&str, &str, &str)] = &[
        ("unknown option", "threads = [1, 2]", "bad.toml:9:1"),
        ("wrong type", "time = 1", "bad.toml:6:8"),
        ("empty axis", "threads = [1, 2]", "bad.toml:9:11"),
        ("threads 0", "threads = [1, 2]", "bad.toml:9:15"),
        ("from > to", "threads = [1, 2]", "bad.toml:9:"),
        ("factor <= 1", "threads = [1, 2]", "bad.toml:9:"),
        ("unknown workload", "workload = \"cpu\"", "bad.toml:5:12"),
        ("syntax", "time = 1", "bad.toml:6:"),
        ("unknown key", "name = \"bad\"", "bad.toml:3:1"),
        ("never ends", "time = 1", "bad.toml:6:8"),
    ];
    let replacements = [
        "thrads = [1, 2]",
        "time = \"long\"",
        "threads = []",
        "threads = [1, 0]",
        "threads = { from = 8, to = 2, factor = 2 }",
        "threads = { from = 1, to = 8, factor = 0.5 }",
        "workload = \"cpuu\"",
        "time = = 1",
        "name = \"bad\"\nrepaet = 2",
        "time = 0",
    ];
    let messages = [
        "unknown option `thrads`",
        "invalid value for `time`",
        "axis `threads` is empty",
        "0 is out of range",
        "`from` is greater than `to`",
        "factor must be greater than 1",
        "unknown workload `cpuu`",
        "TOML syntax error",
        "unknown key `repaet`",
        "would never end",
    ];
    for (i, (what, find, position)) in cases.iter().enumerate() {
        let text = good.replace(find, replacements[i]);
        let file = write(dir.path(), "bad.toml", &text);
        let out = sbsuite()
            .current_dir(dir.path())
            .arg("run")
            .arg(&file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
        assert!(stderr.contains(messages[i]), "{what}: {stderr}");
        assert!(
            stderr.contains(position),
            "{what}: expected {position} in {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        assert!(
            !dir.path().join("results").exists(),
            "{what}: results/ must not be created"
        );
    }
    let empty = write(dir.path(), "empty.toml", "");
    sbsuite()
        .arg("validate")
        .arg(&empty)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("the suite file is empty"));
    sbsuite()
        .args(["validate", "no/such/file.toml"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot read suite file"));
    sbsuite()
        .args(["plan", "suites/quickstart.toml", "--set", "oops"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("expected KEY=VALUE"));
}

/// Errors without a line (#13): invalid UTF-8, toml's recursion limit, a missing `[suite]`, no
/// workload and an empty file each point at a line with a caret, say what to do, exit 2 and
/// write nothing.
#[test]
fn errors_without_a_line_have_one() {
    let dir = tempfile::tempdir().unwrap();
    let deep = vec!["a"; 300].join(".");
    let cases: Vec<(&str, Vec<u8>, &str, &str, &str)> = vec![
        (
            "invalid UTF-8",
            b"[suite]\nname = \"caf\xe9\"\n".to_vec(),
            "not valid UTF-8",
            "bad.toml:2:12",
            "save it as UTF-8",
        ),
        (
            "recursion limit",
            format!("[suite]\nname = \"x\"\n[defaults]\nworkload = \"cpu\"\nx.{deep} = 1\n")
                .into_bytes(),
            "recursion limit",
            "bad.toml:5:1",
            "flatten it",
        ),
        (
            "missing [suite]",
            b"[defaults]\nworkload = \"cpu\"\n".to_vec(),
            "missing key `suite`",
            "bad.toml:1:1",
            "add a `[suite]` table",
        ),
        (
            "no workload",
            b"[suite]\nname = \"x\"\n".to_vec(),
            "no workload",
            "bad.toml:1:1",
            "workload = \"cpu\"",
        ),
        (
            "empty file",
            Vec::new(),
            "the suite file is empty",
            "bad.toml:1:1",
            "a suite needs at least `[suite]`",
        ),
    ];
    for (what, bytes, message, position, help) in cases {
        let file = dir.path().join("bad.toml");
        std::fs::write(&file, &bytes).unwrap();
        for command in ["validate", "plan", "run"] {
            let out = sbsuite()
                .current_dir(dir.path())
                .arg(command)
                .arg(&file)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{what} ({command}): {stderr}");
            assert!(stderr.contains(message), "{what} ({command}): {stderr}");
            assert!(
                stderr.contains(position),
                "{what} ({command}): expected {position} in {stderr}"
            );
            assert!(
                stderr.contains(" | ") && stderr.contains('^'),
                "{what}: {stderr}"
            );
            assert!(stderr.contains(help), "{what} ({command}): {stderr}");
            assert!(!stderr.contains("panicked"), "{what}: {stderr}");
            assert!(
                out.stdout.is_empty(),
                "{what} ({command}): nothing on stdout"
            );
            assert!(
                !dir.path().join("results").exists(),
                "{what}: results/ must not be created"
            );
        }
    }
}

/// The backticked names in `text` (`` `a`, `b` `` → a, b).
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The README's column lists: results.csv's table (the first cell of each row; `*axes…*` kept
/// as a placeholder) and intervals.csv's fixed columns (the first backticked list of its
/// paragraph), each from its `### ` section.
fn readme_columns(readme: &str) -> (Vec<String>, Vec<String>) {
    let section = |title: &str| {
        let start = readme
            .find(title)
            .unwrap_or_else(|| panic!("README.md has no `{title}` section"));
        let rest = &readme[start + title.len()..];
        rest[..rest.find("\n### ").unwrap_or(rest.len())].to_string()
    };
    let results = section("### results.csv")
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| column"))
        .flat_map(|l| {
            let cell = l.split('|').nth(1).unwrap().trim();
            if cell.starts_with("*axes") {
                vec!["*axes*".to_string()]
            } else {
                backticked(cell)
            }
        })
        .collect();
    let intervals = section("### intervals.csv");
    let list = backticked(&intervals)
        .into_iter()
        .find(|s| s.contains(", "))
        .expect("intervals.csv's column list");
    let intervals = list.split(',').map(|c| c.trim().to_string()).collect();
    (results, intervals)
}

/// The header line of the CSV file at `path`, as column names.
fn header(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let line = text.lines().next().unwrap_or_default();
    line.split(',').map(str::to_string).collect()
}

/// README's column lists are the columns a real run writes: a small cpu suite with one extra
/// matrix axis, its results.csv and intervals.csv headers read back from disk.
#[test]
fn readme_documents_the_csv_columns_exactly() {
    let readme = std::fs::read_to_string("README.md").unwrap();
    let (documented, interval_fixed) = readme_columns(&readme);

    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("cols.toml");
    std::fs::write(
        &suite,
        "[suite]\nname = \"cols\"\n\n[defaults]\nworkload = \"cpu\"\ntime = 0\nevents = 10\n\n[matrix]\nthreads = [1]\ncpu_max_prime = [500]\n",
    )
    .unwrap();
    let out = sbsuite()
        .arg("run")
        .arg(&suite)
        .arg("--results-dir")
        .arg(dir.path().join("results"))
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let run = std::fs::read_dir(dir.path().join("results/cols"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();

    // The axis placeholder stands for the suite's extra axis.
    let expected: Vec<String> = documented
        .iter()
        .map(|c| match c.as_str() {
            "*axes*" => "cpu_max_prime".to_string(),
            c => c.to_string(),
        })
        .collect();
    assert!(
        documented.iter().any(|c| c == "*axes*"),
        "README's results.csv table has an *axes…* row: {documented:?}"
    );
    assert_eq!(
        header(&run.join("results.csv")),
        expected,
        "README.md's results.csv columns (in order) vs the header a run writes"
    );

    // intervals.csv: its fixed columns, then "the same workload columns as results.csv" (the
    // table's rows between the fairness columns and `status`).
    let from = documented
        .iter()
        .position(|c| c == "fairness_time_stddev")
        .unwrap();
    let to = documented.iter().position(|c| c == "status").unwrap();
    let expected: Vec<String> = interval_fixed
        .iter()
        .chain(&documented[from + 1..to])
        .cloned()
        .collect();
    assert_eq!(
        header(&run.join("intervals.csv")),
        expected,
        "README.md's intervals.csv columns (in order) vs the header a run writes"
    );
    // The README's text is the library's (one source for `--help`-style docs and the README).
    assert!(
        readme.contains(sbsuite::results::RESULTS_COLUMNS_DOC.trim()),
        "README.md must contain results::RESULTS_COLUMNS_DOC verbatim"
    );
}
