//! The binary's contract: exit codes, error output, plan output, and the committed schema.

use std::path::Path;

use crate::common;

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
    // The passwords their templates read must be set: an unset one is an error (#14).
    sbsuite()
        .env("MYSQL_PASSWORD", "x")
        .env("OB_PASSWORD", "x")
        .arg("validate")
        .args(&files)
        .assert()
        .success()
        .stdout(predicate::str::contains("ok: ").count(files.len()));
}

#[test]
fn plan_of_the_oceanbase_loop() {
    let out = sbsuite()
        .env("OB_PASSWORD", "x")
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
    // Once with the server's defaults, once with obd's tuning.
    assert_eq!(kinds.len(), 40);
    assert_eq!(kinds[0], "prepare");
    assert_eq!(kinds.iter().filter(|k| **k == "run").count(), 36);
    assert_eq!(kinds[19], "cleanup");
    assert_eq!(kinds[20], "prepare");
    assert_eq!(kinds[39], "cleanup");
    // Secrets never reach the plan output.
    assert!(!String::from_utf8_lossy(&out.stdout).contains("password"));
    sbsuite()
        .env("OB_PASSWORD", "x")
        .args(["plan", "suites/oceanbase.toml"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "40 steps (2 prepare, 36 run, 2 cleanup), estimated 36m00s",
        ))
        .stdout(predicate::str::contains(" 2. run     oltp_read_only-t32"))
        .stdout(predicate::str::contains(
            "Variant `obd-sysbench` settings (sql):\n  enable_perf_event: read `SHOW PARAMETERS LIKE 'enable_perf_event'`, apply `ALTER SYSTEM SET enable_perf_event = false`",
        ));
}

/// #14 item 18: the commented ALTER SYSTEM example of suites/oceanbase.toml is a valid
/// variant once uncommented, and `plan` shows its statements (never the password).
#[test]
fn oceanbase_alter_system_example_plans_its_statements() {
    let text = std::fs::read_to_string("suites/oceanbase.toml").unwrap();
    let (head, example) = text
        .split_once("# [[variant]]\n# name = \"big-memstore\"")
        .unwrap();
    let example = format!("# [[variant]]\n# name = \"big-memstore\"{example}");
    let uncommented: String = example
        .lines()
        .map(|l| l.strip_prefix("# ").unwrap_or(l).to_string() + "\n")
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "ob.toml", &format!("{head}{uncommented}"));
    let out = sbsuite()
        .env("OB_PASSWORD", "s3cret")
        .arg("plan")
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(stdout.contains("Variant `big-memstore` settings (sql):\n  memstore_limit_percentage: read `SHOW PARAMETERS LIKE 'memstore_limit_percentage'`, apply `ALTER SYSTEM SET memstore_limit_percentage = 60`, restore `ALTER SYSTEM SET memstore_limit_percentage = <original>`\n  freeze_trigger_percentage:"), "{stdout}");
    assert!(!stdout.contains("s3cret"), "{stdout}");
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

/// The guide's column lists (docs/results.md): results.csv's table (the first cell of each row; `*axes…*` kept
/// as a placeholder) and intervals.csv's fixed columns (the first backticked list of its
/// paragraph), each from its `### ` section.
fn readme_columns(readme: &str) -> (Vec<String>, Vec<String>) {
    let section = |title: &str| {
        let start = readme
            .find(title)
            .unwrap_or_else(|| panic!("{RESULTS_DOC} has no `{title}` section"));
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

/// The guide's page that documents results.csv and intervals.csv (it was the README's until #33).
const RESULTS_DOC: &str = "docs/results.md";

/// The header line of the CSV file at `path`, as column names.
fn header(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let line = text.lines().next().unwrap_or_default();
    line.split(',').map(str::to_string).collect()
}

/// The guide's column lists are the columns a real run writes: a small cpu suite with one extra
/// matrix axis, its results.csv and intervals.csv headers read back from disk.
#[test]
fn readme_documents_the_csv_columns_exactly() {
    let readme = std::fs::read_to_string(RESULTS_DOC).unwrap();
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
        "{RESULTS_DOC}'s results.csv table has an *axes…* row: {documented:?}"
    );
    assert_eq!(
        header(&run.join("results.csv")),
        expected,
        "{RESULTS_DOC}'s results.csv columns (in order) vs the header a run writes"
    );

    // intervals.csv: its fixed columns, then "the same workload columns as results.csv" (the
    // table's rows between the fairness columns and `status`), then `phase`, `target_rate`
    // and `group`.
    let from = documented
        .iter()
        .position(|c| c == "fairness_time_stddev")
        .unwrap();
    let to = documented.iter().position(|c| c == "status").unwrap();
    assert!(
        readme.contains("then `phase` and\n`target_rate` (with `[[phases]]`:"),
        "{RESULTS_DOC} says intervals.csv ends with `phase` and `target_rate`"
    );
    assert!(
        readme.contains("then\n`group` (with `[[groups]]`:"),
        "{RESULTS_DOC} says intervals.csv ends with `group`"
    );
    let expected: Vec<String> = interval_fixed
        .iter()
        .chain(&documented[from + 1..to])
        .cloned()
        .chain(["phase".to_string(), "target_rate".to_string()])
        .chain(["group".to_string()])
        .collect();
    assert_eq!(
        header(&run.join("intervals.csv")),
        expected,
        "{RESULTS_DOC}'s intervals.csv columns (in order) vs the header a run writes"
    );
    // The guide's text is the library's (one source for `--help`-style docs and the guide).
    assert!(
        readme.contains(sbsuite::results::RESULTS_COLUMNS_DOC.trim()),
        "{RESULTS_DOC} must contain results::RESULTS_COLUMNS_DOC verbatim"
    );
}

/// A suite whose password template reads `var`, against a closed port (nothing could connect).
fn password_suite(dir: &Path, password: &str) -> std::path::PathBuf {
    write(
        dir,
        "pw.toml",
        &format!(
            "[suite]\nname = \"pw\"\n\n[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:1\"]\nuser = \"root\"\npassword = \"{password}\"\n\n[defaults]\nworkload = \"oltp_point_select\"\ntime = 1\n"
        ),
    )
}

/// #14: an unset environment variable in the password template is found by `validate`, `plan`
/// and `run` before anything runs: exit 2, the variable, file:line and key named with the fix,
/// no results directory; a `default` makes it optional; the password itself is never printed.
#[test]
fn an_unset_password_variable_stops_every_command_before_work() {
    const VAR: &str = "EARLY_TEST_DB_PASSWORD";
    let dir = tempfile::tempdir().unwrap();
    let file = password_suite(dir.path(), &format!("{{{{ env.{VAR} }}}}"));
    for command in ["validate", "plan", "run"] {
        let out = sbsuite()
            .current_dir(dir.path())
            .env_remove(VAR)
            .arg(command)
            .arg(&file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        for needle in [
            &format!("environment variable {VAR} is not set"),
            "pw.toml:8:12",
            "key: target.password",
            &format!("export {VAR}"),
        ] {
            assert!(stderr.contains(needle), "{command}: {needle} in {stderr}");
        }
        assert!(!dir.path().join("results").exists(), "{command}");
    }
    // Set, the suite plans, and its value appears nowhere.
    let out = sbsuite()
        .env(VAR, "s3cr3t-pw-value")
        .arg("plan")
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(!format!("{out:?}").contains("s3cr3t-pw-value"));
    // An optional variable is no error.
    let optional = password_suite(dir.path(), &format!("{{{{ env.{VAR} | default('') }}}}"));
    sbsuite()
        .env_remove(VAR)
        .arg("validate")
        .arg(&optional)
        .assert()
        .success();
}

/// #14: a restart variant's template is rendered before anything runs, strictly: a name it uses
/// that is not defined (a typo of a setting) or an unset `env.X` stops `validate`, `plan` and
/// `run` with exit 2, naming the template's key and line and the name, instead of writing an
/// empty value into the server's configuration when the variant's turn comes.
#[test]
fn a_restart_template_with_an_undefined_name_stops_every_command_before_work() {
    const VAR: &str = "EARLY_TEST_DATADIR";
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("restart.toml");
    let suite = |template: &str| {
        std::fs::write(dir.path().join("redo.cnf.j2"), template).unwrap();
        std::fs::write(
            &file,
            "[suite]\nname = \"restart\"\n\n[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:1\"]\nuser = \"root\"\n\n[defaults]\nworkload = \"oltp_point_select\"\ntime = 1\n\n[[variant]]\nname = \"redo\"\nrestart = { template = \"redo.cnf.j2\", path = \"/nonexistent/zz.cnf\", command = \"false\", settings = { innodb_log_file_size = \"2G\" } }\n",
        )
        .unwrap();
    };
    for (template, needles) in [
        (
            "[mysqld]\ninnodb_log_file_size = {{ innodb_log_fle_size }}\n",
            vec![
                "uses `innodb_log_fle_size`, which is not defined",
                "innodb_log_file_size",
            ],
        ),
        (
            "[mysqld]\ndatadir = {{ env.EARLY_TEST_DATADIR }}\n",
            vec!["environment variable EARLY_TEST_DATADIR which is not set"],
        ),
    ] {
        suite(template);
        for command in ["validate", "plan", "run"] {
            let out = sbsuite()
                .current_dir(dir.path())
                .env_remove(VAR)
                .arg(command)
                .arg(&file)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
            for needle in needles
                .iter()
                .chain(&["restart.toml:15:24", "key: variant[0].restart.template"])
            {
                assert!(stderr.contains(needle), "{command}: {needle} in {stderr}");
            }
            assert!(!dir.path().join("results").exists(), "{command}");
        }
    }
    // Defined, the suite plans.
    suite("[mysqld]\ndatadir = {{ env.EARLY_TEST_DATADIR }}\n");
    sbsuite()
        .env(VAR, "/data")
        .arg("plan")
        .arg(&file)
        .assert()
        .success();
}

/// #14: a password never appears in an error, whether the file, an environment variable or
/// `--set` wrote it; a password that looks like a number is a password.
#[test]
fn a_password_is_never_printed_in_errors() {
    let dir = tempfile::tempdir().unwrap();
    let file = password_suite(dir.path(), "x");
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("password = \"x\"", "password = 98765");
    std::fs::write(&file, text).unwrap();
    let out = sbsuite().arg("validate").arg(&file).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("key: target.password"), "{stderr}");
    assert!(!stderr.contains("98765"), "{stderr}");
    let file = password_suite(dir.path(), "x");
    sbsuite()
        .env("SBSUITE_TARGET__PASSWORD", "12345")
        .arg("validate")
        .arg(&file)
        .assert()
        .success();
    let out = sbsuite()
        .arg("validate")
        .arg(&file)
        .args(["--set", "target.password=pw-{{ env.EARLY_TEST_UNSET }}"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("EARLY_TEST_UNSET is not set"), "{stderr}");
    assert!(!stderr.contains("pw-{{"), "{stderr}");
}

/// #14: a hook has no `env`: refused by `validate` before anything runs, with the shell's `$X`
/// as the fix (it used to fail when the hook first ran, mid-suite).
#[test]
fn a_hook_reading_env_is_refused_before_work() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "hook.toml",
        "[suite]\nname = \"hook\"\n\n[defaults]\nworkload = \"cpu\"\ntime = 1\n\n[hooks]\nbefore_suite = \"echo {{ env.HOOK_DIR }}\"\n",
    );
    for command in ["validate", "plan", "run"] {
        let out = sbsuite()
            .current_dir(dir.path())
            .arg(command)
            .arg(&file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert!(stderr.contains("hook.toml:9:16"), "{command}: {stderr}");
        assert!(stderr.contains("key: hooks.before_suite"), "{stderr}");
        assert!(stderr.contains("write $HOOK_DIR instead"), "{stderr}");
        assert!(!dir.path().join("results").exists(), "{command}");
    }
}

/// #14: a bad key or value from `SBSUITE_*` or `--set` is named by that variable or option,
/// with the fix in its own syntax; a comma list gets the bracket syntax.
#[test]
fn errors_from_layers_name_the_variable_or_option() {
    /// (environment, extra arguments, what stderr must contain).
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str], &'a [&'a str]);
    let cases: &[Case] = &[
        (
            &[("SBSUITE_DEFAULTS__TREADS", "3")],
            &[],
            &[
                "error: SBSUITE_DEFAULTS__TREADS: unknown option `treads`",
                "--> environment variable SBSUITE_DEFAULTS__TREADS",
                "set SBSUITE_DEFAULTS__THREADS instead",
            ],
        ),
        (
            &[("SBSUITE_SUITE__REPAET", "3")],
            &[],
            &[
                "error: SBSUITE_SUITE__REPAET: unknown key `repaet`",
                "SBSUITE_SUITE__REPEAT",
            ],
        ),
        (
            &[("SBSUITE_THREADS", "3")],
            &[],
            &["error: SBSUITE_THREADS:", "set SBSUITE_DEFAULTS__THREADS"],
        ),
        (
            &[("SBSUITE_DEFAULTS_TIME", "3")],
            &[],
            &["two underscores separate keys: SBSUITE_DEFAULTS__TIME"],
        ),
        (
            &[],
            &["--set", "treads=3"],
            &[
                "error: --set treads=3: unknown option `treads`",
                "--> command-line option --set treads=3",
                "write --set threads=3",
            ],
        ),
        (
            &[],
            &["--set", "matrix.threads=8,16"],
            &[
                "error: --set matrix.threads=8,16:",
                "--set 'matrix.threads=[8,16]'",
            ],
        ),
        (
            &[],
            &["--set", "matrix.workload=cpu,memory"],
            &["--set 'matrix.workload=[\"cpu\",\"memory\"]'"],
        ),
        (
            &[("SBSUITE_MATRIX__THREADS", "8,16")],
            &[],
            &["SBSUITE_MATRIX__THREADS='[8,16]'"],
        ),
        // #26: a range or list for [defaults] goes to the matrix as written, never split at
        // its commas; TOML that does not parse is named as such.
        (
            &[],
            &["--set", "threads={from=32,to=128,factor=2}"],
            &["goes to a matrix axis: --set 'matrix.threads={from=32,to=128,factor=2}'"],
        ),
        (
            &[],
            &["--set", "matrix.threads={from=32,to=128,factor=2"],
            &[
                "`{from=32,to=128,factor=2` is not a TOML value (",
                "e.g. --set 'matrix.threads={ from = 32, to = 1024, factor = 2 }'",
            ],
        ),
    ];
    for (env, args, needles) in cases {
        let out = sbsuite()
            .args(["plan", "suites/quickstart.toml"])
            .args(*args)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{env:?} {args:?}: {stderr}");
        for needle in *needles {
            assert!(
                stderr.contains(needle),
                "{env:?} {args:?}: {needle} in {stderr}"
            );
        }
        assert!(
            !stderr.contains("quickstart.toml:"),
            "no file position: {stderr}"
        );
    }
    // The bracket syntax the hint gives is accepted.
    sbsuite()
        .args([
            "plan",
            "suites/quickstart.toml",
            "--set",
            "matrix.threads=[8,16]",
        ])
        .assert()
        .success();
}

/// #26: `--set` and `SBSUITE_*` values use TOML syntax, inline tables included, so the
/// documented range form sets a matrix axis from the command line as from the file.
#[test]
fn a_range_from_a_layer_expands_like_one_in_the_file() {
    for (env, args) in [
        (
            &[][..],
            &["--set", "matrix.threads={from=32,to=128,factor=2}"][..],
        ),
        (
            &[(
                "SBSUITE_MATRIX__THREADS",
                "{ from = 32, to = 128, factor = 2 }",
            )],
            &[],
        ),
    ] {
        let out = sbsuite()
            .args(["plan", "suites/quickstart.toml", "--format", "json"])
            .args(args)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{args:?} {env:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let plan: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        let threads: Vec<i64> = plan["steps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["kind"] == "run" && s["workload"] == "cpu")
            .map(|s| s["options"]["threads"].as_i64().unwrap())
            .collect();
        assert_eq!(threads, [32, 64, 128], "{args:?} {env:?}");
    }
}

/// #14: `plan` runs the checks of `validate` that need no server (a variant that changes
/// server settings without a server target is refused by both), and lists at its end what
/// only the server can tell; a suite without a server gets no such list.
#[test]
fn plan_checks_what_validate_checks_without_a_server() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "v.toml",
        "[suite]\nname = \"v\"\n\n[defaults]\nworkload = \"cpu\"\ntime = 1\n\n[[variant]]\nname = \"big\"\nset_global = { max_connections = 500 }\n",
    );
    for command in ["validate", "plan"] {
        let out = sbsuite().arg(command).arg(&file).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert!(stderr.contains("v.toml:10:"), "{command}: {stderr}");
        assert!(
            stderr.contains("no MySQL/MariaDB or PostgreSQL [target]"),
            "{stderr}"
        );
    }
    let file = write(
        dir.path(),
        "v.toml",
        "[suite]\nname = \"v\"\n\n[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:1\"]\n\n[defaults]\nworkload = \"oltp_point_select\"\ntime = 1\n\n[[variant]]\nname = \"big\"\nset_global = { max_connections = 500 }\n",
    );
    let out = sbsuite().arg("plan").arg(&file).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    let note = stdout
        .split_once("Not checked by plan (needs the server):\n")
        .map(|(_, note)| note)
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(note.contains("reachable and the user can log in"), "{note}");
    assert!(
        note.contains("set_global variable exists and is settable"),
        "{note}"
    );
    let out = sbsuite()
        .args(["plan", "suites/quickstart.toml"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Not checked by plan"));
}

/// #14 item 18: a variant's `sql` templates are compiled and rendered when the suite loads:
/// `validate` and `plan` name the file, line and key of a syntax error or an unknown variable,
/// `settings` and `sql` come together, and SQLite (no server settings) is refused.
#[test]
fn sql_variant_templates_are_checked_when_the_suite_loads() {
    let dir = tempfile::tempdir().unwrap();
    let suite = |variant: &str, target: &str| {
        format!(
            "[suite]\nname = \"v\"\n\n{target}\n[defaults]\nworkload = \"oltp_point_select\"\ntime = 1\n\n[[variant]]\nname = \"big\"\n{variant}\n"
        )
    };
    let mysql = "[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:1\"]\n";
    let cases = [
        (
            "settings = { memstore_limit_percentage = 60 }\nsql = { apply = \"ALTER SYSTEM SET {{ name }} = {{ value }\", read = \"SHOW PARAMETERS LIKE '{{ name }}'\", column = \"value\" }",
            mysql,
            "v.toml:15:",
            "syntax error",
            "variant[0].sql.apply",
        ),
        (
            "settings = { memstore_limit_percentage = 60 }\nsql = { apply = \"ALTER SYSTEM SET {{ name }} = {{ value }}\", read = \"SHOW PARAMETERS LIKE '{{ value }}'\" }",
            mysql,
            "v.toml:15:",
            "`read` sees `name` and `variant`, not `value`",
            "variant[0].sql.read",
        ),
        (
            "settings = { \"x; DROP TABLE t\" = 1 }\nsql = { apply = \"SET {{ name }} = {{ value }}\", read = \"SHOW {{ name }}\" }",
            mysql,
            "v.toml:14:",
            "not a server variable name",
            "variant[0].settings",
        ),
        (
            "settings = { a = 1 }",
            mysql,
            "v.toml:14:",
            "has `settings` but no `sql`",
            "variant[0].settings",
        ),
        (
            "settings = { cache_size = 1 }\nsql = { apply = \"PRAGMA {{ name }} = {{ value }}\", read = \"PRAGMA {{ name }}\" }",
            "[target]\ndriver = \"sqlite\"\n",
            "v.toml:14:",
            "no MySQL/MariaDB or PostgreSQL [target]",
            "variant[0].sql",
        ),
    ];
    for (variant, target, at, message, key) in cases {
        let file = write(dir.path(), "v.toml", &suite(variant, target));
        for command in ["validate", "plan"] {
            let out = sbsuite().arg(command).arg(&file).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
            assert!(stderr.contains(at), "{command}: {stderr}");
            assert!(stderr.contains(message), "{command}: {stderr}");
            assert!(stderr.contains(key), "{command}: {stderr}");
        }
    }
    // A good one: `plan` shows the statements, strings quoted and escaped, and what it
    // could not check.
    let file = write(
        dir.path(),
        "v.toml",
        &suite(
            "settings = { memstore_limit_percentage = 60, syslog_level = \"WARN' --\" }\nsql = { apply = \"ALTER SYSTEM SET {{ name }} = {{ value }}\", read = \"SHOW PARAMETERS LIKE '{{ name }}'\", column = \"value\" }",
            mysql,
        ),
    );
    let out = sbsuite().arg("plan").arg(&file).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(stdout.contains("Variant `big` settings (sql):\n  memstore_limit_percentage: read `SHOW PARAMETERS LIKE 'memstore_limit_percentage'`, apply `ALTER SYSTEM SET memstore_limit_percentage = 60`, restore `ALTER SYSTEM SET memstore_limit_percentage = <original>`\n  syslog_level: read `SHOW PARAMETERS LIKE 'syslog_level'`, apply `ALTER SYSTEM SET syslog_level = 'WARN'' --'`"), "{stdout}");
    assert!(
        stdout.contains("each variant's `sql.read` finds its settings"),
        "{stdout}"
    );
}
