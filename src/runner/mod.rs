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

pub use self::progress::ProgressMode;
pub use self::signal::{SignalError, stop_flag};

/// What the caller decides about a run.
#[derive(Clone, Debug)]
pub struct RunContext {
    /// Results go to `<results_root>/<suite>/<run-id>/`.
    pub results_root: PathBuf,
    /// The resolved suite, secrets already redacted; stored as `suite.toml`.
    pub suite_text: String,
    /// No progress and no summary on stderr (reports on stdout are unaffected).
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
    /// Run steps stopped part-way (rows with status `interrupted`).
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
        engine::prepare_step(&step.workload, &step.options, cleanup, out, stop)
    }

    fn run(
        &mut self,
        step: &Step,
        out: &mut dyn Write,
        on_interval: &mut dyn FnMut(&IntervalSample),
        stop: &AtomicBool,
    ) -> Result<StepOutcome, EngineError> {
        engine::run_step(&step.workload, &step.options, out, on_interval, stop)
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
            progress.note(&format!(
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
