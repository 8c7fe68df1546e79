//! sysbench Lua scripts in suite files (#16), through the real binary on the embedded SQLite
//! target, with `tests/lua/suite_demo.lua` (options of every type, custom commands `check`
//! and `prewarm`): `validate` and `workloads --suite` list the script and its options, `plan`
//! shows its option axes and command steps, a misspelt option or a missing script is exit 2
//! with its line, a run writes rows, intervals and histograms and runs the commands, and a
//! resume after the script changed is refused.

use std::path::{Path, PathBuf};

use crate::common;

use common::{results, run_dir, sbsuite};

const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lua/suite_demo.lua");

/// A working directory with `scripts/demo.lua` and the suite file `lua.toml` (on SQLite in the
/// directory): returns the directory and the suite's path.
fn setup(extra: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("scripts")).unwrap();
    std::fs::copy(DEMO, dir.path().join("scripts/demo.lua")).unwrap();
    let suite = dir.path().join("lua.toml");
    let db = dir.path().join("demo.db");
    std::fs::write(
        &suite,
        format!(
            r#"[suite]
name = "lua"

[target]
driver = "sqlite"
path = {db:?}

[defaults]
time = 0
events = 40
rows = 20
report_interval = 1

[matrix]
workload = [{{ script = "scripts/demo.lua", dataset = ["tables"], before_runs = ["prewarm"], after_runs = ["check"] }}]
tables = [1, 2]
read_share = [0.2, 0.8]
{extra}"#
        ),
    )
    .unwrap();
    (dir, suite)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn validate_and_workloads_list_the_script_with_its_options() {
    let (_dir, suite) = setup("");
    let out = sbsuite().arg("validate").arg(&suite).output().unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}{stdout}", text(&out.stderr));
    assert!(
        stdout.contains("ok: ") && stdout.contains("(12 steps)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  script scripts/demo.lua: ")
            && stdout.contains("options: kinds, label, loud, pad, read_share, rows, tables"),
        "{stdout}"
    );

    let out = sbsuite()
        .args(["workloads", "--suite"])
        .arg(&suite)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}{stdout}", text(&out.stderr));
    assert!(stdout.starts_with("scripts/demo.lua - "), "{stdout}");
    assert!(stdout.contains("  commands: check, prewarm\n"), "{stdout}");
    assert!(
        stdout.contains("  before_runs: prewarm\n  after_runs: check\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("    tables               int    Number of tables [1] (dataset)\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "    read_share           double Share of events that read (the rest update) [0.5]\n"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("    kinds                list   Statement kinds to use [point,update]\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "    loud                 bool   Print each table's row count in check [off]\n"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("    pad                  size   Bytes of padding per row [64]\n"),
        "{stdout}"
    );
}

#[test]
fn plan_shows_the_option_axes_and_the_command_steps() {
    let (_dir, suite) = setup("");
    let out = sbsuite().arg("plan").arg(&suite).output().unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}{stdout}", text(&out.stderr));
    assert!(
        stdout.contains("12 steps (2 prepare, 4 run, 4 command, 2 cleanup)"),
        "{stdout}"
    );
    let kinds: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.trim_start().split_once(". ").map(|(_, r)| r))
        .filter_map(|r| r.split_whitespace().next())
        .collect();
    let per = ["prepare", "command", "run", "run", "command", "cleanup"];
    assert_eq!(kinds, [per, per].concat(), "{stdout}");
    assert!(stdout.contains("command prewarm "), "{stdout}");
    assert!(stdout.contains("command check "), "{stdout}");
    assert!(
        stdout.contains("workload=scripts/demo.lua") && stdout.contains("read_share=0.8"),
        "{stdout}"
    );
    let json = sbsuite()
        .args(["plan", "--format", "json"])
        .arg(&suite)
        .output()
        .unwrap();
    let plan: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        plan["axes"],
        serde_json::json!(["workload", "tables", "read_share"])
    );
    let commands: Vec<&str> = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["command"].as_str())
        .collect();
    assert_eq!(commands, ["prewarm", "check", "prewarm", "check"]);
}

#[test]
fn a_misspelt_option_is_exit_2_with_its_line_and_the_right_name() {
    let (_dir, suite) = setup("");
    let text_of = std::fs::read_to_string(&suite)
        .unwrap()
        .replace("read_share = [", "read_shar = [");
    std::fs::write(&suite, text_of).unwrap();
    for cmd in ["validate", "plan", "run"] {
        let out = sbsuite().arg(cmd).arg(&suite).output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {stderr}");
        assert!(stderr.contains("unknown option `read_shar`"), "{stderr}");
        assert!(stderr.contains("lua.toml:17:1"), "{stderr}");
        assert!(stderr.contains("did you mean `read_share`?"), "{stderr}");
    }
}

#[test]
fn a_missing_script_is_exit_2_naming_the_key_and_the_fix() {
    let (dir, suite) = setup("");
    std::fs::remove_file(dir.path().join("scripts/demo.lua")).unwrap();
    let out = sbsuite().arg("validate").arg(&suite).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error: cannot read script `scripts/demo.lua`"),
        "{stderr}"
    );
    assert!(stderr.contains("lua.toml:15:"), "{stderr}");
    assert!(
        stderr.contains("= key: matrix.workload[0].script"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the path is relative to the suite file's directory"),
        "{stderr}"
    );
}

/// The run dir's `suite.toml` after a run of `suite` into `root`.
fn run(suite: &Path, root: &Path) -> (Option<i32>, String, PathBuf) {
    let out = sbsuite()
        .current_dir(suite.parent().unwrap())
        .arg("run")
        .arg(suite)
        .args(["--progress", "off", "--results-dir"])
        .arg(root)
        .output()
        .unwrap();
    (
        out.status.code(),
        text(&out.stdout) + &text(&out.stderr),
        run_dir(root, "lua"),
    )
}

#[test]
fn a_resume_after_the_script_changed_is_refused() {
    let (dir, suite) = setup("");
    let root = dir.path().join("results");
    let (_, _, run_dir) = run(&suite, &root);
    let stored = std::fs::read_to_string(run_dir.join("suite.toml")).unwrap();
    assert!(stored.contains("sha256 = \""), "{stored}");
    let script = dir.path().join("scripts/demo.lua");
    let mut edited = std::fs::read_to_string(&script).unwrap();
    edited.push_str("\n-- edited after the run started\n");
    std::fs::write(&script, edited).unwrap();
    let out = sbsuite()
        .args(["run", "--progress", "off", "--resume"])
        .arg(&run_dir)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("script `scripts/demo.lua`") && stderr.contains("changed"),
        "{stderr}"
    );
    assert!(
        stderr.contains("= key: matrix.workload[0].sha256"),
        "{stderr}"
    );
    assert!(stderr.contains("start a new run"), "{stderr}");
}

/// Needs the Lua runtime (helpers `state`, `run`, `sql` of #16).
#[test]
fn a_run_writes_rows_and_runs_the_commands_and_resumes_without_the_suite_file() {
    let (dir, suite) = setup("");
    let root = dir.path().join("results");
    let (code, output, run_dir) = run(&suite, &root);
    assert_eq!(code, Some(0), "{output}");
    assert!(output.contains("prewarm: done"), "{output}");
    assert!(output.contains("check: 2 table(s) ok"), "{output}");
    let rows = results(&root);
    assert_eq!(rows.len(), 4, "{rows:?}");
    for r in &rows {
        assert_eq!(r["status"], "ok", "{r:?}");
        assert_eq!(r["workload"], "scripts/demo.lua");
        assert_eq!(r["events"], "40", "{r:?}");
    }
    let shares: Vec<&str> = rows.iter().map(|r| r["read_share"].as_str()).collect();
    assert_eq!(shares, ["0.2", "0.8", "0.2", "0.8"]);
    assert!(run_dir.join("intervals.csv").exists());
    let histograms = std::fs::read_dir(run_dir.join("histograms"))
        .unwrap()
        .count();
    assert_eq!(
        histograms,
        4,
        "one histogram per run in {}",
        run_dir.display()
    );
    // The run directory resumes without the suite file: the script is found by its path.
    std::fs::remove_file(&suite).unwrap();
    let out = sbsuite()
        .args(["run", "--progress", "off", "--resume"])
        .arg(&run_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// A script that `require`s a module from the working directory (as sysbench-tpcc does): the
/// run's `suite.toml` records the module's path and hash, and a resume after the module
/// changed is refused.
#[test]
fn a_resume_after_a_required_module_changed_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let scripts = dir.path().join("scripts");
    std::fs::create_dir(&scripts).unwrap();
    for f in ["suite_multi.lua", "suite_multi_common.lua"] {
        std::fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/lua")
                .join(f),
            scripts.join(f),
        )
        .unwrap();
    }
    let suite = dir.path().join("multi.toml");
    std::fs::write(
        &suite,
        "[suite]\nname = \"multi\"\n[defaults]\nworkload = { script = \"scripts/suite_multi.lua\" }\ntime = 0\nevents = 5\n[matrix]\nrows = [1, 2]\n",
    )
    .unwrap();
    let root = dir.path().join("results");
    // From the scripts' directory, where the module is found (as under sysbench).
    let out = sbsuite()
        .current_dir(&scripts)
        .arg("run")
        .arg(&suite)
        .args(["--progress", "off", "--results-dir"])
        .arg(&root)
        .output()
        .unwrap();
    let run_dir = run_dir(&root, "multi");
    let stored = std::fs::read_to_string(run_dir.join("suite.toml")).unwrap();
    let module = std::fs::canonicalize(scripts.join("suite_multi_common.lua")).unwrap();
    assert!(
        stored.contains(&format!("modules = {{ \"{}\" = \"", module.display())),
        "{stored}\n{}",
        text(&out.stderr)
    );
    let mut edited = std::fs::read_to_string(&module).unwrap();
    edited.push_str("\n-- edited after the run started\n");
    std::fs::write(&module, edited).unwrap();
    let out = sbsuite()
        .current_dir(&scripts)
        .args(["run", "--progress", "off", "--resume"])
        .arg(&run_dir)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "module {} of script `scripts/suite_multi.lua` changed",
            module.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("= key: defaults.workload.modules"),
        "{stderr}"
    );
}

/// The shipped example `examples/lua-kv.toml` (the script `examples/lua/kv.lua`, on the
/// default SQLite file): every step ok, the misses its script counts through
/// `ffi.C.sb_counter_inc(…, SB_CNT_ERROR)` land in the `errors` column (about `miss_share` of
/// the gets), and the cleanup leaves no `sbtest.db` behind.
#[test]
fn the_lua_example_suite_runs_and_its_ffi_counter_lands_in_the_results() {
    let dir = tempfile::tempdir().unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let root = dir.path().join("results");
    let out = sbsuite()
        .current_dir(dir.path())
        .arg("run")
        .arg(examples.join("lua-kv.toml"))
        .args([
            "--progress",
            "off",
            "--set",
            "time=1",
            "--set",
            "miss_share=0.1",
        ])
        .arg("--results-dir")
        .arg(&root)
        .output()
        .unwrap();
    let output = text(&out.stdout) + &text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{output}");
    assert!(output.contains("check: 2000 keys ok"), "{output}");
    let rows = results(&root);
    assert_eq!(rows.len(), 4, "{rows:?}");
    for r in &rows {
        assert_eq!(r["status"], "ok", "{r:?}");
        assert_eq!(r["workload"], "lua/kv.lua");
        let reads: f64 = r["reads"].parse().unwrap();
        let errors: f64 = r["errors"].parse().unwrap();
        // A tenth of the gets miss: 0.1 ± a generous margin for short runs.
        let share = errors / reads;
        assert!((0.05..0.15).contains(&share), "{share} of {r:?}");
    }
    assert!(!dir.path().join("sbtest.db").exists(), "{output}");
}
