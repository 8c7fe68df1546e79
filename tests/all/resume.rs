//! `sbsuite run --resume` end to end without a database server: the real binary killed with
//! SIGKILL in the middle of a suite (cpu and OLTP on SQLite), then resumed; and the refusals that
//! keep a resume from running a plan other than the run's own (#13).

use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};

use crate::common;

use assert_cmd::cargo::CommandCargoExt;
use common::{run_dir, sbsuite};

/// Axes not in alphabetical order, the first one a range (written as an inline table): both
/// used to make the stored suite.toml rebuild another plan, so `--resume` refused every run.
const UNSORTED: &str = r#"[suite]
name = "kr"

[defaults]
time = 1
report_interval = 1
tables = 1
table_size = 1000
cpu_max_prime = 2000

[matrix]
threads = { from = 1, to = 2, factor = 2 }
workload = ["oltp_read_only", "cpu"]
"#;

/// (step, status) of every row of `results.csv`, sorted.
fn step_rows(run: &Path) -> Vec<(usize, String)> {
    let mut r = csv::Reader::from_path(run.join("results.csv")).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (step, status) = (col("step"), col("status"));
    let mut rows: Vec<(usize, String)> = r
        .records()
        .map(|rec| {
            let rec = rec.unwrap();
            (rec[step].parse().unwrap(), rec[status].to_string())
        })
        .collect();
    rows.sort();
    rows
}

/// The indexes of the run steps in the run's `plan.json`.
fn planned_runs(run: &Path) -> Vec<usize> {
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("plan.json")).unwrap()).unwrap();
    plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["kind"] == "run")
        .map(|s| s["index"].as_u64().unwrap() as usize)
        .collect()
}

/// Files in `dir` whose name starts with `prefix`.
fn leftovers(dir: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect()
}

/// Starts `sbsuite run SUITE` in `work` and kills it with SIGKILL once its `nth` measured step
/// has started (its `nth` `Threads started!`): no sleeps, the kill lands inside a step.
fn kill_9_during_step(work: &Path, suite: &Path, results: &Path, nth: usize) {
    let mut cmd = StdCommand::cargo_bin("sbsuite").unwrap();
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("SBSUITE_")) {
        cmd.env_remove(k);
    }
    let mut child = cmd
        .current_dir(work)
        .arg("run")
        .arg(suite)
        .args(["--progress", "off", "--results-dir"])
        .arg(results)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    common::read_until_started(&mut child, nth);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
}

/// #13: kill -9 in the middle of a suite with unsorted axes, then `--resume`: every planned run
/// ends with exactly one row, `ok`, and the SQLite file the kill left behind is cleaned up.
#[test]
fn kill_9_then_resume_finishes_every_planned_run_once_with_no_leftovers() {
    // During the first measured step (prepare done, no row yet) and during the second.
    for nth in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir(&work).unwrap();
        let suite = dir.path().join("kr.toml");
        std::fs::write(&suite, UNSORTED).unwrap();
        let results = dir.path().join("results");
        kill_9_during_step(&work, &suite, &results, nth);
        let run = run_dir(&results, "kr");
        assert!(
            !leftovers(&work, "sbtest.db").is_empty(),
            "the kill left the SQLite data in the working directory"
        );
        let before = step_rows(&run);
        assert_eq!(before.len(), nth - 1, "killed in step {nth}: {before:?}");
        let host_before = std::fs::read_to_string(run.join("host.json")).unwrap();

        let out = sbsuite()
            .current_dir(&work)
            .args(["run", "--progress", "plain", "--resume"])
            .arg(&run)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "killed in step {nth}: {stderr}");
        let rows = step_rows(&run);
        let planned = planned_runs(&run);
        assert_eq!(planned.len(), 4);
        assert_eq!(
            rows,
            planned
                .iter()
                .map(|&i| (i, "ok".to_string()))
                .collect::<Vec<_>>(),
            "every planned run exactly once (killed in step {nth})"
        );
        for kept in &before {
            assert!(rows.contains(kept), "{kept:?} kept");
        }
        // #14: the client machine recorded at the start is kept (resumed on the same one).
        assert_eq!(
            std::fs::read_to_string(run.join("host.json")).unwrap(),
            host_before
        );
        assert_eq!(
            leftovers(&work, "sbtest.db"),
            Vec::<String>::new(),
            "the resumed cleanup removed the SQLite files"
        );
        let suite_toml = std::fs::read_to_string(run.join("suite.toml")).unwrap();
        let threads = suite_toml.find("threads =").unwrap();
        let workload = suite_toml.find("workload =").unwrap();
        assert!(
            threads < workload,
            "axes in the user's order:\n{suite_toml}"
        );
    }
}

/// #13: a journal.log garbled while the run was stopped used to make the resume prepare the
/// SQLite tables again on top of the old ones ("table sbtest1 already exists", failed rows).
/// Now the journal is repaired (its dataset is dropped and prepared again) and the resume
/// finishes every run; a hand-duplicated row is dropped, a renumbered one refused.
#[test]
fn a_garbled_journal_is_repaired_and_edited_rows_are_checked_before_resuming() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let suite = dir.path().join("kr.toml");
    std::fs::write(&suite, UNSORTED).unwrap();
    let results = dir.path().join("results");
    kill_9_during_step(&work, &suite, &results, 2);
    let run = run_dir(&results, "kr");
    let journal = run.join("journal.log");
    assert!(
        std::fs::read_to_string(&journal)
            .unwrap()
            .contains("prepare done")
    );
    std::fs::write(&journal, "1 prepare d\u{0}ne\n\u{fffd}\u{fffd}\n").unwrap();
    let csv = run.join("results.csv");
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "one row before the kill: {text}");

    // A renumbered row (step 2's row claiming step 3) is refused: step 3 would never run.
    let (step2, step3) = (",2,oltp_read_only-t1,", ",3,oltp_read_only-t1,");
    assert!(lines[1].contains(step2), "{text}");
    std::fs::write(
        &csv,
        format!("{}\n{}\n", lines[0], lines[1].replace(step2, step3)),
    )
    .unwrap();
    let (code, stderr) = resume_in(&work, &run, &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("line 2: this row of step 3 is not step 3 of plan.json"),
        "{stderr}"
    );

    // A duplicated row is dropped; the garbled journal repaired.
    std::fs::write(&csv, format!("{}\n{}\n{}\n", lines[0], lines[1], lines[1])).unwrap();
    let (code, stderr) = resume_in(&work, &run, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("results.csv line 3 was a copy of the row of step 2: dropped"),
        "{stderr}"
    );
    assert!(stderr.contains("journal.log line 1"), "{stderr}");
    assert!(
        stderr.contains("dataset 1: journal.log does not tell"),
        "{stderr}"
    );
    let planned = planned_runs(&run);
    assert_eq!(
        step_rows(&run),
        planned
            .iter()
            .map(|&i| (i, "ok".to_string()))
            .collect::<Vec<_>>(),
        "every planned run exactly once, all ok"
    );
    assert_eq!(leftovers(&work, "sbtest.db"), Vec::<String>::new());
}

/// A finished run of a quick cpu suite, for the refusals; returns (tempdir, run directory).
fn finished_cpu_run() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("cpu.toml");
    std::fs::write(
        &suite,
        "[suite]\nname = \"c\"\n[defaults]\nworkload = \"cpu\"\ntime = 0\nevents = 200\ncpu_max_prime = 2000\n[matrix]\nthreads = [2, 1]\n",
    )
    .unwrap();
    let out = sbsuite()
        .arg("run")
        .arg(&suite)
        .args(["--quiet", "--results-dir"])
        .arg(dir.path().join("results"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = run_dir(&dir.path().join("results"), "c");
    (dir, run)
}

fn resume(run: &Path, extra: &[&str]) -> (Option<i32>, String) {
    resume_in(Path::new("."), run, extra)
}

/// `sbsuite run --resume RUN EXTRA…` in the working directory `work`: (exit code, stderr).
fn resume_in(work: &Path, run: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let out = sbsuite()
        .current_dir(work)
        .env_remove("DB_PASSWORD") // the password test resumes without it
        .args(["run", "--progress", "off", "--resume"])
        .arg(run)
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Rewrites `file` without its `column` and without data rows past the first `keep` (a run
/// directory as an earlier build, stopped early, left it).
fn drop_column(file: &Path, column: &str, keep: usize) {
    let mut r = csv::Reader::from_path(file).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    let at = header.iter().position(|h| h == column).unwrap();
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).take(keep).collect();
    let mut w = csv::Writer::from_path(file).unwrap();
    let without = |cells: Vec<&str>| -> Vec<String> {
        cells
            .into_iter()
            .enumerate()
            .filter(|(i, _)| *i != at)
            .map(|(_, c)| c.to_string())
            .collect()
    };
    w.write_record(without(header.iter().map(String::as_str).collect()))
        .unwrap();
    for row in rows {
        w.write_record(without(row.iter().collect())).unwrap();
    }
    w.flush().unwrap();
}

/// #14: a run directory written before the `dropped` column existed still resumes: its rows
/// are kept with the cell empty and the missing run runs, instead of "its columns are not the
/// ones this suite writes".
#[test]
fn a_run_written_before_the_dropped_column_resumes() {
    let (_dir, run) = finished_cpu_run();
    drop_column(&run.join("results.csv"), "dropped", 1);
    drop_column(&run.join("intervals.csv"), "dropped", usize::MAX);
    let (code, stderr) = resume(&run, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(step_rows(&run), [(1, "ok".into()), (2, "ok".into())]);
    for file in ["results.csv", "intervals.csv"] {
        let mut r = csv::Reader::from_path(run.join(file)).unwrap();
        assert!(
            r.headers().unwrap().iter().any(|h| h == "dropped"),
            "{file}"
        );
    }
}

/// #15: nor before `headline` and `headline_name` existed (#26: nor `error_codes`; #29: nor
/// the server's rates per interval; #30: nor the open-loop columns): both files get them back,
/// empty.
#[test]
fn a_run_written_before_the_headline_columns_resumes() {
    let (_dir, run) = finished_cpu_run();
    for column in [
        "lag_max",
        "service_p50",
        "skipped",
        "late",
        "server_fsyncs_ps",
        "server_log_bytes_ps",
        "server_cpu_pct",
        "trend_pct_per_min",
        "steady",
        "warmup_s",
        "error_codes",
        "headline_name",
        "headline",
        "dropped",
    ] {
        drop_column(&run.join("results.csv"), column, 1);
    }
    for column in [
        "server_cpu_pct",
        "server_fsyncs_ps",
        "headline",
        "dropped",
        "late",
    ] {
        drop_column(&run.join("intervals.csv"), column, usize::MAX);
    }
    let (code, stderr) = resume(&run, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(step_rows(&run), [(1, "ok".into()), (2, "ok".into())]);
    let mut r = csv::Reader::from_path(run.join("results.csv")).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    let tail = [
        "knee",
        "headline_name",
        "error_codes",
        "warmup_s",
        "steady",
        "trend_pct_per_min",
        "phase",
        "target_rate",
        "service_p50",
        "service_p95",
        "service_p99",
        "service_max",
        "lag_p50",
        "lag_p95",
        "lag_p99",
        "lag_max",
        "group",
    ]
    .map(String::from);
    assert!(header.ends_with(&tail), "{header:?}");
    let at = header.iter().position(|h| h == "headline").unwrap();
    assert_eq!(
        header[at - 3..at],
        ["dropped", "late", "skipped"],
        "{header:?}"
    );
    for rec in r.records() {
        assert_eq!(&rec.unwrap()[at], "", "a cpu run has no headline");
    }
    let mut r = csv::Reader::from_path(run.join("intervals.csv")).unwrap();
    assert!(r.headers().unwrap().iter().any(|h| h == "headline"));
    assert!(r.headers().unwrap().iter().any(|h| h == "server_cpu_pct"));
    assert!(
        !run.join("transactions.csv").exists(),
        "built-in workloads have none"
    );
}

#[test]
fn resume_with_set_is_refused() {
    let (_dir, run) = finished_cpu_run();
    let before = std::fs::read_to_string(run.join("results.csv")).unwrap();
    let (code, stderr) = resume(&run, &["--set", "cpu_max_prime=3000"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("remove --set"), "{stderr}");
    let after = std::fs::read_to_string(run.join("results.csv")).unwrap();
    assert_eq!(after, before, "nothing ran");
}

#[test]
fn resume_of_a_run_with_an_edited_plan_json_is_refused() {
    let (_dir, run) = finished_cpu_run();
    let (code, stderr) = resume(&run, &[]);
    assert_eq!(code, Some(0), "the untouched run resumes: {stderr}");
    let plan = run.join("plan.json");
    let text = std::fs::read_to_string(&plan).unwrap();
    assert!(text.contains("\"cpu-t2\""), "{text}");
    std::fs::write(&plan, text.replace("\"cpu-t2\"", "\"cpu-t3\"")).unwrap();
    let before = std::fs::read_to_string(run.join("results.csv")).unwrap();
    let (code, stderr) = resume(&run, &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("plan.json does not match the plan of its suite.toml"),
        "{stderr}"
    );
    let after = std::fs::read_to_string(run.join("results.csv")).unwrap();
    assert_eq!(after, before, "nothing ran");
}

/// #13: a literal password is stored redacted, so a resume would log in with `***` and store
/// every remaining step as failed: it is refused before anything connects, with the fix.
#[test]
fn resume_with_a_redacted_literal_password_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("pw.toml");
    // Nothing listens on port 1: the first run fails at once, and a resume that tried to
    // connect would store failed rows.
    std::fs::write(
        &suite,
        "[suite]\nname = \"pw\"\n[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:1\"]\nuser = \"root\"\npassword = \"hunter2\"\nconnect_timeout = 2\n[defaults]\nworkload = \"oltp_point_select\"\ntime = 1\ntable_size = 100\n[matrix]\nthreads = [1, 2]\n",
    )
    .unwrap();
    let out = sbsuite()
        .arg("run")
        .arg(&suite)
        .args(["--progress", "off", "--results-dir"])
        .arg(dir.path().join("results"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let run = run_dir(&dir.path().join("results"), "pw");
    // As if killed before its first step ended: only the header, no journal.
    let results = run.join("results.csv");
    let header = std::fs::read_to_string(&results)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    std::fs::write(&results, format!("{header}\n")).unwrap();
    // The unreachable server failed the dataset at its capture, so its prepare may not have
    // journaled anything.
    if run.join("journal.log").exists() {
        std::fs::remove_file(run.join("journal.log")).unwrap();
    }

    let (code, stderr) = resume(&run, &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("[target] password"), "{stderr}");
    assert!(stderr.contains("{{ env.DB_PASSWORD }}"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
    assert!(
        !stderr.contains("cannot connect"),
        "refused before connecting: {stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&results).unwrap(),
        format!("{header}\n"),
        "nothing ran"
    );
    assert!(!run.join("journal.log").exists(), "nothing ran");

    // The fix the message gives is accepted: the plan still matches and the resume runs
    // (and fails to connect, here, with the password from the environment).
    let stored = std::fs::read_to_string(run.join("suite.toml")).unwrap();
    assert!(stored.contains("password = \"***\""), "{stored}");
    std::fs::write(
        run.join("suite.toml"),
        stored.replace("password = \"***\"", "password = \"{{ env.DB_PASSWORD }}\""),
    )
    .unwrap();
    // Without the variable, refused too: every step would fail and keep a `failed` row.
    let (code, stderr) = resume(&run, &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("environment variable DB_PASSWORD is not set")
            && stderr.contains("export DB_PASSWORD")
            && stderr.ends_with("nothing has run\n"),
        "{stderr}"
    );
    assert!(!run.join("journal.log").exists(), "nothing ran");
    let out = sbsuite()
        .args(["run", "--progress", "off", "--resume"])
        .arg(&run)
        .env("DB_PASSWORD", "from-the-environment")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot connect to 127.0.0.1:1"), "{stderr}");
}

/// #14: a randomized variant order drawn without a seed is stored with the run (suite.toml's
/// `order_seed`), so a resume after kill -9 rebuilds the same order and finishes it.
#[test]
fn a_randomized_variant_order_resumes_in_its_own_order() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let suite = dir.path().join("rv.toml");
    std::fs::write(
        &suite,
        "[suite]\nname = \"rv\"\nrepeat = 2\nvariant_order = \"randomized\"\n\n[defaults]\nworkload = \"cpu\"\ntime = 1\ncpu_max_prime = 2000\n\n[matrix]\nthreads = [1, 2]\n\n[[variant]]\nname = \"a\"\n\n[[variant]]\nname = \"b\"\n",
    )
    .unwrap();
    let results = dir.path().join("results");
    kill_9_during_step(&work, &suite, &results, 3);
    let run = run_dir(&results, "rv");
    let stored = std::fs::read_to_string(run.join("suite.toml")).unwrap();
    assert!(stored.contains("order_seed = "), "{stored}");
    assert_eq!(step_rows(&run).len(), 2);

    let (code, stderr) = resume_in(&work, &run, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let planned = planned_runs(&run);
    assert_eq!(planned.len(), 8);
    assert_eq!(
        step_rows(&run),
        planned
            .iter()
            .map(|&i| (i, "ok".to_string()))
            .collect::<Vec<_>>()
    );
    // The rows follow the plan: each block (threads, repetition) holds both variants.
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("plan.json")).unwrap()).unwrap();
    assert_eq!(plan["variant_order"], "randomized");
    let steps = plan["steps"].as_array().unwrap();
    for block in steps.chunks(2) {
        assert_eq!(block[0]["params"], block[1]["params"]);
        assert_eq!(block[0]["repetition"], block[1]["repetition"]);
        assert_ne!(block[0]["variant"], block[1]["variant"]);
    }
}

/// #26: `run --resume` of a run that had a failed row exits 1, as the same run would have
/// without the interruption: the first run step fails (its `rate` cannot be offered), the
/// second is killed; the resume runs the second (ok) and keeps the failed row, which used to
/// let it exit 0.
#[test]
fn issue_26_a_resume_that_keeps_a_failed_row_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let suite = dir.path().join("kf.toml");
    std::fs::write(
        &suite,
        "[suite]\nname = \"kf\"\n\n[defaults]\nworkload = \"cpu\"\ntime = 2\nthreads = 1\n\
         cpu_max_prime = 20000\n\n[matrix]\nrate = [1000000, 0]\n",
    )
    .unwrap();
    let results = dir.path().join("results");
    kill_9_during_step(&work, &suite, &results, 2);
    let run = run_dir(&results, "kf");
    assert_eq!(step_rows(&run), [(1, "failed".to_string())]);

    let (code, stderr) = resume_in(&work, &run, &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(
        step_rows(&run),
        [(1, "failed".to_string()), (2, "ok".to_string())]
    );
    assert!(
        stderr.contains("1 kept from before the resume (1 of them failed)"),
        "{stderr}"
    );
    // Resuming the finished run again keeps everything and still fails.
    let (code, stderr) = resume_in(&work, &run, &[]);
    assert_eq!(code, Some(1), "{stderr}");
}

/// #26: a run whose only failure is its check step is `failed` in `sbsuite runs` (it was `ok`:
/// only the rows were read), in the table and in JSON, and a resume of it exits 1 (the check
/// of a dataset already cleaned up is not run again, so its failure is kept).
#[test]
fn issue_26_a_failed_check_step_fails_the_run_in_runs_and_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let suite = dir.path().join("ck.toml");
    std::fs::write(
        &suite,
        r#"[suite]
name = "ck"

[defaults]
workload = "counted"
threads = 1
events = 20
time = 0
check = true

[workloads.counted]
schema = ["CREATE TABLE counted_rows (v INTEGER)"]
cleanup = ["DROP TABLE counted_rows"]

[workloads.counted.params]
x = { uniform = [1, 1000] }

[workloads.counted.transactions.put]
steps = [{ sql = "INSERT INTO counted_rows VALUES (:x)" }]

[[workloads.counted.checks]]
name = "never holds"
sql = "SELECT count(*) FROM counted_rows"
expect = 12345
"#,
    )
    .unwrap();
    let results = dir.path().join("results");
    let out = sbsuite()
        .current_dir(&work)
        .arg("run")
        .arg(&suite)
        .args(["--progress", "off", "--results-dir"])
        .arg(&results)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let run = run_dir(&results, "ck");
    assert_eq!(step_rows(&run), [(2, "ok".to_string())], "{stderr}");

    let listed = sbsuite()
        .args(["runs", "--results-dir"])
        .arg(&results)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&listed.stdout);
    let line = text.lines().find(|l| l.starts_with("ck ")).unwrap();
    assert!(line.contains(" failed (check failed) "), "{text}");
    let listed = sbsuite()
        .args(["runs", "--format", "json", "--results-dir"])
        .arg(&results)
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(json[0]["status"], "failed", "{json}");
    assert_eq!(json[0]["failed"], 0, "{json}");
    assert_eq!(
        json[0]["failed_steps"],
        serde_json::json!(["check"]),
        "{json}"
    );

    let (code, stderr) = resume_in(&work, &run, &[]);
    assert_eq!(code, Some(1), "{stderr}");
}
