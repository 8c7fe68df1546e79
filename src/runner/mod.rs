//! Executes a plan: preflight, then every step in order through the engines, recording each run
//! step in the result store as it ends, with graceful Ctrl-C handling and suite progress.
//!
//! Why it is shaped this way:
//! - **Preflight before anything touches the disk**: a plan naming a workload this build cannot
//!   execute fails up front, instead of leaving an empty run directory behind.
//! - **The step loop is separate from the engines** ([`StepExecutor`], hyperfine-style): the
//!   policy — a failed run does not stop the suite, a failed prepare fails its dataset's runs
//!   but still cleans up, a stop request skips the remaining runs but still cleans up prepared
//!   datasets — is tested deterministically with a scripted executor, no engine or signal needed.
//! - **Cleanups never see the stop flag**: an interrupted benchmark must still drop its tables
//!   and files; the user's escape hatch is the second Ctrl-C ([`signal`]).
//! - stdout carries only the engines' sysbench-shaped reports, each step preceded by a
//!   `==> [k/N] kind name (variant v)` header; everything else goes to stderr.

mod command;
pub mod progress;
pub mod signal;

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use chrono::Utc;

use crate::engine::{self, EngineError, IntervalSample, StepOutcome};
use crate::plan::{Plan, Step, StepKind};
use crate::results::{ResultStore, ResultsError, RowStatus, RunRow};

pub use self::command::command;
pub use self::progress::ProgressMode;
pub use self::signal::{SignalError, stop_flag};

/// What the caller decides about a run.
#[derive(Clone, Debug)]
pub struct RunContext {
    /// Results go to `<results_root>/<suite>/<run-id>/`.
    pub results_root: PathBuf,
    /// The resolved suite, secrets already redacted; stored as `suite.toml`.
    pub suite_text: String,
    /// No progress and no summary on stderr (reports on stdout and step failures are still
    /// printed).
    pub quiet: bool,
    pub progress: ProgressMode,
}

/// How a run ended. `main` maps it to the exit code: 130 when `interrupted`, else 1 when
/// `steps_failed > 0`, else 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSummary {
    pub run_dir: PathBuf,
    /// Steps of any kind that completed (prepare, run, cleanup).
    pub steps_ok: usize,
    /// Steps of any kind that failed, including runs recorded as failed because their prepare
    /// failed.
    pub steps_failed: usize,
    pub interrupted: bool,
    pub run_id: String,
    pub results_csv: PathBuf,
    /// Steps not executed because of a stop request (no row is written for skipped runs).
    pub steps_skipped: usize,
    /// Steps stopped part-way by a stop request: run steps (rows with status `interrupted`) and
    /// a prepare that was cut short.
    pub steps_interrupted: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(
        "{} can be planned and validated but {} no engine in this build yet; remove {} from the \
         suite's matrix or filter {} out to run the rest",
        quote_list(workloads),
        if workloads.len() == 1 { "has" } else { "have" },
        if workloads.len() == 1 { "it" } else { "them" },
        if workloads.len() == 1 { "it" } else { "them" }
    )]
    NoEngine { workloads: Vec<String> },
    #[error(transparent)]
    Results(#[from] ResultsError),
    #[error(transparent)]
    Signal(#[from] SignalError),
}

fn quote_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|w| format!("`{w}`")).collect();
    match quoted.len() {
        1 => format!("workload {}", quoted[0]),
        _ => format!("workloads {}", quoted.join(", ")),
    }
}

/// Executes steps. The default implementation ([`EngineExecutor`]) calls the engines; tests
/// script outcomes.
pub trait StepExecutor {
    fn has_engine(&self, workload: &str) -> bool {
        engine::engine_for(workload).is_some()
    }

    /// A prepare step, or a cleanup step when `cleanup`.
    fn prepare(
        &mut self,
        step: &Step,
        cleanup: bool,
        out: &mut dyn Write,
        stop: &AtomicBool,
    ) -> Result<(), EngineError>;

    fn run(
        &mut self,
        step: &Step,
        out: &mut dyn Write,
        on_interval: &mut dyn FnMut(&IntervalSample),
        stop: &AtomicBool,
    ) -> Result<StepOutcome, EngineError>;
}

/// The real executor: the engines of [`crate::engine`].
#[derive(Clone, Copy, Debug, Default)]
pub struct EngineExecutor;

impl StepExecutor for EngineExecutor {
    fn prepare(
        &mut self,
        step: &Step,
        cleanup: bool,
        out: &mut dyn Write,
        stop: &AtomicBool,
    ) -> Result<(), EngineError> {
        engine::prepare_step_with_target(
            &step.workload,
            &step.options,
            step.target.as_ref(),
            cleanup,
            out,
            stop,
        )
    }

    fn run(
        &mut self,
        step: &Step,
        out: &mut dyn Write,
        on_interval: &mut dyn FnMut(&IntervalSample),
        stop: &AtomicBool,
    ) -> Result<StepOutcome, EngineError> {
        engine::run_step_with_target(
            &step.workload,
            &step.options,
            step.target.as_ref(),
            out,
            on_interval,
            stop,
        )
    }
}

/// Runs `plan` with the engines of this build, stopping gracefully on the first Ctrl-C/SIGTERM.
pub fn run_plan(plan: &Plan, ctx: &RunContext) -> Result<RunSummary, RunError> {
    let mut executor = EngineExecutor;
    preflight(plan, &executor)?;
    let stop = signal::install()?;
    // A stop request belongs to one run; a previous run in this process may have set it.
    stop.store(false, Ordering::SeqCst);
    let stdout = io::stdout();
    run_plan_with(plan, ctx, &mut executor, &stop, stdout.lock())
}

/// Fails when some step's workload has no engine, listing every such workload once.
pub fn preflight(plan: &Plan, executor: &dyn StepExecutor) -> Result<(), RunError> {
    let mut missing: Vec<String> = Vec::new();
    for step in &plan.steps {
        if !executor.has_engine(&step.workload) && !missing.contains(&step.workload) {
            missing.push(step.workload.clone());
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(RunError::NoEngine { workloads: missing })
    }
}

/// What the loop knows about a dataset's latest prepare.
enum Dataset {
    Ready,
    PrepareFailed(String),
    /// The prepare was stopped; its runs are skipped anyway, its cleanup runs.
    PrepareInterrupted,
}

/// The step loop behind [`run_plan`], with the executor, the stop flag and the report stream
/// injected.
pub fn run_plan_with(
    plan: &Plan,
    ctx: &RunContext,
    executor: &mut dyn StepExecutor,
    stop: &AtomicBool,
    report: impl Write,
) -> Result<RunSummary, RunError> {
    preflight(plan, executor)?;
    let mut store = ResultStore::create(&ctx.results_root, plan, &ctx.suite_text, Utc::now())?;
    let progress = progress::Progress::new(ctx.progress, ctx.quiet, plan);
    let mut out = progress::ReportOut::new(progress.bar(), report);
    let total = plan.steps.len();

    let mut datasets: HashMap<usize, Dataset> = HashMap::new();
    let mut ok = 0;
    let mut failed = 0;
    let mut skipped = 0;
    let mut interrupted_steps = 0;
    // A results write error ends the benchmarking like a stop request (cleanups still run) and
    // is returned at the end: measuring without recording is pointless.
    let mut fatal: Option<ResultsError> = None;
    // Cleanups get a flag nobody sets: see the module comment.
    let never = AtomicBool::new(false);

    for (position, step) in plan.steps.iter().enumerate() {
        let stopping = stop.load(Ordering::SeqCst) || fatal.is_some();
        let header = format!(
            "==> [{}/{total}] {} {} (variant {})",
            position + 1,
            step.kind.as_str(),
            step.name,
            step.variant
        );
        let fail_note = |what: &str| {
            progress.error(&format!(
                "[sbsuite] step {}/{total} {} {} failed: {what}",
                position + 1,
                step.kind.as_str(),
                step.name
            ))
        };

        match step.kind {
            StepKind::Prepare | StepKind::Cleanup => {
                let cleanup = step.kind == StepKind::Cleanup;
                let wanted = if cleanup {
                    !stopping || datasets.contains_key(&step.dataset)
                } else {
                    !stopping
                };
                if !wanted {
                    skipped += 1;
                    continue;
                }
                progress.step_started(position, step);
                let _ = writeln!(out, "{header}");
                let flag = if cleanup { &never } else { stop };
                let result = executor.prepare(step, cleanup, &mut out, flag);
                let _ = out.flush();
                match result {
                    Ok(()) => {
                        ok += 1;
                        if !cleanup {
                            datasets.insert(step.dataset, Dataset::Ready);
                        }
                    }
                    Err(_) if !cleanup && stop.load(Ordering::SeqCst) => {
                        interrupted_steps += 1;
                        datasets.insert(step.dataset, Dataset::PrepareInterrupted);
                    }
                    Err(e) => {
                        failed += 1;
                        fail_note(&e.to_string());
                        if !cleanup {
                            datasets.insert(step.dataset, Dataset::PrepareFailed(e.to_string()));
                        }
                    }
                }
            }
            StepKind::Run => {
                if stopping {
                    skipped += 1;
                    continue;
                }
                let started_at = Utc::now();
                match datasets.get(&step.dataset) {
                    Some(Dataset::PrepareFailed(msg)) => {
                        let _ = writeln!(out, "{header}: skipped, prepare failed");
                        let _ = out.flush();
                        failed += 1;
                        let error = format!("prepare failed: {msg}");
                        let row = RunRow {
                            step,
                            started_at,
                            status: RowStatus::Failed,
                            outcome: None,
                            error: Some(&error),
                        };
                        if let Err(e) = store.write_run(&row) {
                            fatal = Some(e);
                        }
                        continue;
                    }
                    Some(Dataset::PrepareInterrupted) => {
                        // Unreachable while the flag stays set; kept explicit for clarity.
                        skipped += 1;
                        continue;
                    }
                    Some(Dataset::Ready) | None => {}
                }

                progress.step_started(position, step);
                let _ = writeln!(out, "{header}");
                let mut interval_error: Option<ResultsError> = None;
                let result = {
                    let store = &mut store;
                    let mut on_interval = |sample: &IntervalSample| {
                        if interval_error.is_none()
                            && let Err(e) = store.write_interval(step, sample)
                        {
                            interval_error = Some(e);
                        }
                    };
                    executor.run(step, &mut out, &mut on_interval, stop)
                };
                let _ = out.flush();

                let (status, outcome, error) = match &result {
                    Ok(o) if o.interrupted => (RowStatus::Interrupted, Some(o), None),
                    Ok(o) => (RowStatus::Ok, Some(o), None),
                    Err(e) if stop.load(Ordering::SeqCst) => {
                        (RowStatus::Interrupted, None, Some(e.to_string()))
                    }
                    Err(e) => (RowStatus::Failed, None, Some(e.to_string())),
                };
                match status {
                    RowStatus::Ok => ok += 1,
                    RowStatus::Interrupted => interrupted_steps += 1,
                    RowStatus::Failed => {
                        failed += 1;
                        fail_note(error.as_deref().unwrap_or_default());
                    }
                }
                let row = RunRow {
                    step,
                    started_at,
                    status,
                    outcome,
                    error: error.as_deref(),
                };
                if let Err(e) = store.write_run(&row) {
                    fatal = Some(e);
                } else if let Some(e) = interval_error {
                    fatal = Some(e);
                }
            }
        }
    }
    drop(out);
    progress.finish();

    if let Some(e) = fatal {
        return Err(e.into());
    }
    let interrupted = stop.load(Ordering::SeqCst);
    let summary = RunSummary {
        run_dir: store.dir().to_path_buf(),
        steps_ok: ok,
        steps_failed: failed,
        interrupted,
        run_id: store.run_id().to_string(),
        results_csv: store.results_path().to_path_buf(),
        steps_skipped: skipped,
        steps_interrupted: interrupted_steps,
    };
    progress.note(&format!(
        "[sbsuite] run {}{}: {} steps ok, {} failed{}{}\n[sbsuite] results: {}",
        summary.run_id,
        if interrupted { " (interrupted)" } else { "" },
        summary.steps_ok,
        summary.steps_failed,
        if interrupted_steps > 0 {
            format!(", {interrupted_steps} interrupted")
        } else {
            String::new()
        },
        if skipped > 0 {
            format!(", {skipped} skipped")
        } else {
            String::new()
        },
        summary.results_csv.display()
    ));
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{LatencySummary, SqlCounters};
    use crate::value::{Options, Value};
    use hdrhistogram::Histogram;
    use indexmap::IndexMap;
    use std::collections::HashSet;
    use std::path::Path;

    fn step(index: usize, kind: StepKind, name: &str, dataset: usize) -> Step {
        let mut params = IndexMap::new();
        params.insert("threads".into(), Value::Int(2));
        let mut options = Options::default();
        options.0.insert("threads".into(), Value::Int(2));
        Step {
            index,
            kind,
            name: name.into(),
            variant: "default".into(),
            workload: "fake".into(),
            dataset,
            repetition: u32::from(kind == StepKind::Run),
            params,
            options,
            estimated_seconds: (kind == StepKind::Run).then_some(1.0),
            target: None,
        }
    }

    /// prepare ds1, three runs, cleanup ds1, prepare ds2, one run, cleanup ds2.
    fn plan() -> Plan {
        use StepKind::*;
        let steps = [
            (Prepare, "prepare-1", 1),
            (Run, "a", 1),
            (Run, "b", 1),
            (Run, "c", 1),
            (Cleanup, "cleanup-1", 1),
            (Prepare, "prepare-2", 2),
            (Run, "d", 2),
            (Cleanup, "cleanup-2", 2),
        ];
        Plan {
            suite: "unit".into(),
            target: None,
            axes: vec!["threads".into()],
            steps: steps
                .iter()
                .enumerate()
                .map(|(i, (k, n, d))| step(i + 1, *k, n, *d))
                .collect(),
        }
    }

    fn outcome(interrupted: bool) -> StepOutcome {
        let mut histogram = Histogram::<u64>::new(3).unwrap();
        histogram.record(1_500_000).unwrap();
        StepOutcome {
            seconds: 1.0,
            events: 10,
            sql: Some(SqlCounters {
                transactions: 10,
                ..Default::default()
            }),
            latency: LatencySummary {
                min_ms: 1.5,
                ..Default::default()
            },
            fairness_events_avg: 5.0,
            fairness_events_stddev: 0.0,
            fairness_time_avg: 0.5,
            fairness_time_stddev: 0.0,
            histogram,
            interrupted,
            metrics: Vec::new(),
        }
    }

    /// Scripted engine: records every call, fails or stops on chosen step indexes.
    #[derive(Default)]
    struct Script {
        no_engine: HashSet<&'static str>,
        fail: HashSet<usize>,
        /// Sets the stop flag while this step runs (like a Ctrl-C mid-step).
        stop_during: Option<usize>,
        /// Like `stop_during`, but the engine then returns an error instead of an outcome.
        stop_with_error: bool,
        calls: Vec<(usize, StepKind)>,
        /// The stop flag's value as each cleanup saw it.
        cleanup_saw_stop: Vec<bool>,
        /// When set: the results root, to count the rows already on disk as each run starts.
        peek_root: Option<PathBuf>,
        rows_on_disk: Vec<usize>,
    }

    impl StepExecutor for Script {
        fn has_engine(&self, workload: &str) -> bool {
            !self.no_engine.contains(workload)
        }

        fn prepare(
            &mut self,
            step: &Step,
            cleanup: bool,
            out: &mut dyn Write,
            stop: &AtomicBool,
        ) -> Result<(), EngineError> {
            assert_eq!(cleanup, step.kind == StepKind::Cleanup);
            self.calls.push((step.index, step.kind));
            if cleanup {
                self.cleanup_saw_stop.push(stop.load(Ordering::SeqCst));
            }
            writeln!(out, "{} done", step.kind.as_str()).unwrap();
            if self.fail.contains(&step.index) {
                return Err(EngineError::Failed("table sbtest1 exists".into()));
            }
            Ok(())
        }

        fn run(
            &mut self,
            step: &Step,
            out: &mut dyn Write,
            on_interval: &mut dyn FnMut(&IntervalSample),
            stop: &AtomicBool,
        ) -> Result<StepOutcome, EngineError> {
            self.calls.push((step.index, step.kind));
            if let Some(root) = &self.peek_root {
                let run_dir = std::fs::read_dir(root.join("unit"))
                    .unwrap()
                    .next()
                    .unwrap()
                    .unwrap()
                    .path();
                self.rows_on_disk
                    .push(rows(&run_dir.join("results.csv")).len());
            }
            write!(out, "report of {}", step.name).unwrap();
            writeln!(out).unwrap();
            for t in [1.0, 2.0] {
                on_interval(&IntervalSample {
                    time_s: t,
                    threads: 2,
                    eps: 10.0,
                    ..Default::default()
                });
            }
            if self.fail.contains(&step.index) {
                return Err(EngineError::Failed("connection refused".into()));
            }
            if self.stop_during == Some(step.index) {
                stop.store(true, Ordering::SeqCst);
                if self.stop_with_error {
                    return Err(EngineError::Failed("query interrupted".into()));
                }
                return Ok(outcome(true));
            }
            Ok(outcome(false))
        }
    }

    fn ctx(root: &Path) -> RunContext {
        RunContext {
            results_root: root.to_path_buf(),
            suite_text: "[suite]\nname = \"unit\"\n".into(),
            quiet: true,
            progress: ProgressMode::Auto,
        }
    }

    fn run(script: &mut Script, root: &Path) -> (RunSummary, String) {
        let stop = AtomicBool::new(false);
        let mut report = Vec::new();
        let summary = run_plan_with(&plan(), &ctx(root), script, &stop, &mut report).unwrap();
        (summary, String::from_utf8(report).unwrap())
    }

    /// (step, status, error) of every results.csv row.
    fn rows(path: &Path) -> Vec<(String, String, String)> {
        let mut r = ::csv::Reader::from_path(path).unwrap();
        let h = r.headers().unwrap().clone();
        let at = |name: &str| h.iter().position(|c| c == name).unwrap();
        let (step, status, error) = (at("step"), at("status"), at("error"));
        r.records()
            .map(|rec| {
                let rec = rec.unwrap();
                (
                    rec[step].to_string(),
                    rec[status].to_string(),
                    rec[error].to_string(),
                )
            })
            .collect()
    }

    fn row(step: &str, status: &str, error: &str) -> (String, String, String) {
        (step.into(), status.into(), error.into())
    }

    #[test]
    fn all_steps_ok() {
        let tmp = tempfile::tempdir().unwrap();
        let mut script = Script {
            peek_root: Some(tmp.path().to_path_buf()),
            ..Default::default()
        };
        let (summary, report) = run(&mut script, tmp.path());
        // Each row is on disk (and readable) before the next step starts.
        assert_eq!(script.rows_on_disk, [0, 1, 2, 3]);
        assert_eq!(summary.steps_ok, 8);
        assert_eq!(summary.steps_failed, 0);
        assert!(!summary.interrupted);
        assert_eq!(
            summary.run_dir,
            tmp.path().join("unit").join(&summary.run_id)
        );
        assert_eq!(
            rows(&summary.results_csv),
            ["2", "3", "4", "7"].map(|s| row(s, "ok", ""))
        );
        assert!(
            report.starts_with("==> [1/8] prepare prepare-1 (variant default)\nprepare done\n")
        );
        assert!(report.contains("==> [3/8] run b (variant default)\nreport of b\n"));
        let intervals = std::fs::read_to_string(summary.run_dir.join("intervals.csv")).unwrap();
        assert_eq!(intervals.lines().count(), 1 + 4 * 2);
        assert!(summary.run_dir.join("histograms/7-d.hdr").is_file());
    }

    #[test]
    fn a_failed_run_is_recorded_and_the_suite_continues() {
        let tmp = tempfile::tempdir().unwrap();
        let mut script = Script {
            fail: HashSet::from([3]),
            ..Default::default()
        };
        let (summary, _) = run(&mut script, tmp.path());
        assert_eq!((summary.steps_ok, summary.steps_failed), (7, 1));
        assert_eq!(
            rows(&summary.results_csv),
            [
                row("2", "ok", ""),
                row("3", "failed", "connection refused"),
                row("4", "ok", ""),
                row("7", "ok", ""),
            ]
        );
        assert_eq!(script.calls.len(), 8);
        assert!(!summary.run_dir.join("histograms/3-b.hdr").exists());
    }

    #[test]
    fn a_failed_prepare_fails_its_runs_but_still_cleans_up() {
        let tmp = tempfile::tempdir().unwrap();
        let mut script = Script {
            fail: HashSet::from([1]),
            ..Default::default()
        };
        let (summary, report) = run(&mut script, tmp.path());
        let failed = "prepare failed: table sbtest1 exists";
        assert_eq!(
            rows(&summary.results_csv),
            [
                row("2", "failed", failed),
                row("3", "failed", failed),
                row("4", "failed", failed),
                row("7", "ok", ""),
            ]
        );
        use StepKind::*;
        assert_eq!(
            script.calls,
            [
                (1, Prepare),
                (5, Cleanup),
                (6, Prepare),
                (7, Run),
                (8, Cleanup)
            ]
        );
        assert_eq!((summary.steps_ok, summary.steps_failed), (4, 4));
        assert!(report.contains("==> [2/8] run a (variant default): skipped, prepare failed\n"));
    }

    #[test]
    fn stop_during_a_run_records_it_skips_the_rest_and_cleans_up() {
        let tmp = tempfile::tempdir().unwrap();
        let mut script = Script {
            stop_during: Some(3),
            ..Default::default()
        };
        let (summary, report) = run(&mut script, tmp.path());
        assert!(summary.interrupted);
        assert_eq!(
            rows(&summary.results_csv),
            [row("2", "ok", ""), row("3", "interrupted", "")]
        );
        use StepKind::*;
        // Run 4 and all of dataset 2 (never prepared) are skipped; dataset 1 is cleaned up,
        // and the cleanup does not see the stop flag.
        assert_eq!(
            script.calls,
            [(1, Prepare), (2, Run), (3, Run), (5, Cleanup)]
        );
        assert_eq!(script.cleanup_saw_stop, [false]);
        assert_eq!(
            (
                summary.steps_ok,
                summary.steps_failed,
                summary.steps_interrupted
            ),
            (3, 0, 1)
        );
        assert_eq!(summary.steps_skipped, 4);
        assert!(!report.contains("run c"));
        // The interrupted step's partial measurements are kept.
        assert!(summary.run_dir.join("histograms/3-b.hdr").is_file());
    }

    #[test]
    fn an_engine_error_after_a_stop_request_counts_as_interrupted() {
        let tmp = tempfile::tempdir().unwrap();
        let mut script = Script {
            stop_during: Some(2),
            stop_with_error: true,
            ..Default::default()
        };
        let (summary, _) = run(&mut script, tmp.path());
        assert!(summary.interrupted);
        assert_eq!(summary.steps_failed, 0);
        assert_eq!(
            rows(&summary.results_csv),
            [row("2", "interrupted", "query interrupted")]
        );
    }

    #[test]
    fn a_stop_before_the_run_skips_everything_and_writes_only_headers() {
        let tmp = tempfile::tempdir().unwrap();
        let stop = AtomicBool::new(true);
        let mut script = Script::default();
        let summary =
            run_plan_with(&plan(), &ctx(tmp.path()), &mut script, &stop, io::sink()).unwrap();
        assert!(summary.interrupted);
        assert!(script.calls.is_empty());
        assert!(rows(&summary.results_csv).is_empty());
        assert_eq!(summary.steps_skipped, 8);
    }

    #[test]
    fn preflight_lists_workloads_without_engine_and_creates_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("results");
        let mut p = plan();
        p.steps[1].workload = "oltp_insert".into();
        p.steps[2].workload = "oltp_insert".into();
        p.steps[6].workload = "fileio".into();
        let mut script = Script {
            no_engine: HashSet::from(["oltp_insert", "fileio"]),
            ..Default::default()
        };
        let err = run_plan_with(
            &p,
            &ctx(&root),
            &mut script,
            &AtomicBool::new(false),
            io::sink(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "workloads `oltp_insert`, `fileio` can be planned and validated but have no engine \
             in this build yet; remove them from the suite's matrix or filter them out to run \
             the rest"
        );
        assert!(script.calls.is_empty());
        assert!(!root.exists());
    }

    #[test]
    fn run_plan_with_the_real_engines_refuses_an_unknown_workload_before_touching_disk() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("results");
        let mut p = plan();
        for s in &mut p.steps {
            s.workload = "no_such_workload".into();
        }
        let err = run_plan(&p, &ctx(&root)).unwrap_err();
        assert!(
            matches!(&err, RunError::NoEngine { workloads } if workloads == &["no_such_workload"])
        );
        assert!(
            err.to_string()
                .starts_with("workload `no_such_workload` can be planned")
        );
        assert!(!root.exists());
    }
}
