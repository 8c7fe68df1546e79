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

#[test]
fn readme_documents_the_csv_columns_exactly() {
    let readme = std::fs::read_to_string("README.md").unwrap();
    assert!(
        readme.contains(sbsuite::results::RESULTS_COLUMNS_DOC.trim()),
        "README.md must contain results::RESULTS_COLUMNS_DOC verbatim"
    );
}
