//! Executes a plan: preflight, then every step in order through the engines, recording each run
//! step in the result store as it ends, with graceful Ctrl-C handling and suite progress.
//!
//! Why it is shaped this way:
//! - **Preflight before anything touches the disk**: a plan naming a workload this build cannot
//!   execute fails up front, instead of leaving an empty run directory behind; so does a target
//!   whose database does not exist, or an existing dataset that is not there ([`preflight`]).
//! - **A cleanup removes what its run created, nothing else**: prepare and cleanup steps carry
//!   the run's ledger of tables (`ledger`, [`crate::db::owned`]), kept in `tables.log`.
//! - **The step loop is separate from the engines** ([`StepExecutor`], hyperfine-style): the
//!   policy — a failed run does not stop the suite, a failed prepare fails its dataset's runs
//!   but still cleans up, a stop request skips the remaining runs but still cleans up prepared
//!   datasets — is tested deterministically with a scripted executor, no engine or signal needed.
//! - **The loop's state is one struct with a method per transition** (`step_loop`): enter a
//!   variant, enter a dataset, run a step, finish. What it remembers between steps (the variant
//!   in place, each dataset's prepare, stop and `on_error` handling, owed hooks, resume and
//!   `stop_when` bookkeeping, the counts) is named in one place, and each transition is short
//!   enough to read against the policy it implements.
//! - **Cleanups never see the stop flag**: an interrupted benchmark must still drop its tables
//!   and files; the user's escape hatch is the second Ctrl-C ([`signal`]). For the same reason
//!   cleanups and restores run [`crate::db::interrupt::shielded`]: the first signal breaks
//!   every other blocked call (a setup query, a hook, a restart's wait), never them.
//! - **A forced shutdown is a failure for `on_error`**: the step's row stays `interrupted`
//!   with what was measured and says why, but a stuck server is what `on_error` is for.
//! - stdout carries only the engines' sysbench-shaped reports, each step preceded by a
//!   `==> [k/N] kind name (variant v)` header; everything else goes to stderr. With
//!   `--events jsonl` stdout carries the events ([`events`]) and the reports go to stderr.
//! - What a run step cost the server and the client ([`cost`]: counters, process CPU, disk
//!   I/O) is read by the step loop just around the executor's run, so it holds for steps of
//!   this process and of `[clients]` alike.
//! - `[[faults]]` ([`faults`]) fire from threads of their own during each run step and are
//!   measured from the collector's live samples; the step loop starts and ends them around the
//!   executor's run, like the cost.
//! - Outside watchers ([`Watch`]: the `--metrics` endpoint, `--events`) are fed by the step
//!   loop and, for live samples, by the driver's collector thread: never by the workers.

pub mod clients;
mod command;
pub mod cost;
pub mod derived;
pub mod events;
pub mod faults;
mod groups;
pub mod hooks;
mod ledger;
pub mod metrics;
pub mod preflight;
pub mod progress;
mod repeat;
pub mod server;
pub mod shell;
pub mod signal;
mod step_loop;
mod sweep;

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use self::server::ServerError;
use crate::engine::{self, EngineError, StepObserver, StepOutcome};
use crate::plan::{Plan, Step, StepKind};
use crate::results::ResultsError;
use crate::suite::raw::{OnError, RateOverflow, RawHooks, Stage};

pub use self::command::{
    ResumeError, SERVER_CHECKS, ServerCheck, check_offline, check_variants, load_for_resume,
    server_checks,
};
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
    /// The suite file's directory (relative restart templates are also looked for there).
    pub base_dir: PathBuf,
    /// `[hooks]` of the suite.
    pub hooks: RawHooks,
    /// `[[faults]]` of the suite, fired in every run step (#30).
    pub faults: Vec<crate::suite::raw::RawFault>,
    /// `[suite] on_error`: what a failed step does to the rest.
    pub on_error: OnError,
    /// `[suite] rate_overflow`: whether a run that dropped `rate` arrivals fails.
    pub rate_overflow: RateOverflow,
    /// `--resume`: the run directory of a stopped run to continue (else a new run directory).
    pub resume: Option<PathBuf>,
    /// `[matrix] stop_when` threshold sweeps.
    pub stop_when: Vec<crate::suite::StopWhen>,
    /// `[suite] repeat = { min, max, until }`: repetitions skipped once the result is sure.
    pub repeat_until: Option<crate::suite::RepeatUntil>,
    /// Who watches the run from outside: the `--metrics` endpoint.
    pub watch: Watch,
    /// `[clients]`: run steps execute on these clients (`None`: in this process).
    pub clients: Option<crate::suite::clients::Clients>,
    /// `[suite] server_cost` and `server_counters`: what each run step's cost is read from
    /// ([`cost`]).
    pub cost: cost::CostConfig,
}

impl RunContext {
    /// The context `sbsuite run` makes for `suite`: its results directory, hooks, error
    /// policy, repetition rule, clients and cost settings; no resume, no outside watchers,
    /// progress chosen by the terminal. `base_dir` is the suite file's directory.
    pub fn for_suite(suite: &crate::suite::Suite, base_dir: PathBuf) -> RunContext {
        RunContext {
            base_dir,
            hooks: suite.hooks.clone(),
            faults: suite.faults.clone(),
            on_error: suite.on_error,
            rate_overflow: suite.rate_overflow,
            resume: None,
            stop_when: suite.matrix.stop_when.clone(),
            repeat_until: suite.repeat_rule.clone(),
            clients: suite.clients.clone(),
            cost: cost::CostConfig {
                enabled: suite.server_cost,
                extra: suite.server_counters.clone(),
                server_host: suite.server_host.clone(),
            },
            results_root: suite.results_dir.clone(),
            suite_text: suite.resolved_toml.clone(),
            quiet: false,
            progress: ProgressMode::Auto,
            watch: Watch::default(),
        }
    }
}

/// The run's outside watchers (`--metrics`, `--events`), fed by the step loop.
#[derive(Clone, Default)]
pub struct Watch {
    pub metrics: Option<std::sync::Arc<metrics::Metrics>>,
    pub events: Option<std::sync::Arc<events::Events>>,
    /// Where the steps' sysbench-shaped reports go.
    pub reports: Reports,
}

/// Where a run prints its steps' sysbench-shaped reports (results.csv and intervals.csv hold
/// their numbers either way).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reports {
    #[default]
    Stdout,
    /// stdout carries something else (`--events jsonl`).
    Stderr,
    /// Nobody reads them (`sbsuite bisect`, whose probes are runs of their own).
    Discard,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("metrics", &self.metrics.is_some())
            .field("events", &self.events.is_some())
            .field("reports", &self.reports)
            .finish()
    }
}

/// How a run ended. `main` maps it to the exit code: 130 when `interrupted`, else 1 when
/// `steps_failed > 0` or `steps_kept_failed > 0`, else 0.
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
    /// `--resume`: steps that had finished before and were not run again.
    pub steps_kept: usize,
    /// Of `steps_kept`, those that had failed: a resumed run fails as the same run would have
    /// without the interruption (#26).
    pub steps_kept_failed: usize,
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
    /// The clients could not be resolved or reached, or one runs another version: nothing ran.
    #[error(transparent)]
    Clients(#[from] clients::ClientsSetupError),
    /// The server lacks the target's database, or an existing dataset's data: nothing ran.
    #[error(transparent)]
    Preflight(#[from] preflight::PreflightError),
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
    /// Whether `step`'s workload can run here: the planner resolved it to a spec.
    fn has_engine(&self, step: &Step) -> bool {
        step.spec.is_some()
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
        on_interval: &mut dyn StepObserver,
        stop: &AtomicBool,
    ) -> Result<StepOutcome, EngineError>;

    /// A check step: the workload's `[[checks]]` on the dataset's data. An error is a failed
    /// step (it names the checks that did not hold).
    fn check(
        &mut self,
        step: &Step,
        out: &mut dyn Write,
        stop: &AtomicBool,
    ) -> Result<(), EngineError> {
        let request = engine_request(step, engine::StepKind::Check)?;
        engine::execute(request, out, &mut (), stop).map(drop)
    }

    /// A command step: a sysbench Lua script's custom command (`before_runs`/`after_runs`).
    /// An error is a failed step.
    fn command(
        &mut self,
        step: &Step,
        out: &mut dyn Write,
        stop: &AtomicBool,
    ) -> Result<(), EngineError> {
        let name = step.command.as_deref().unwrap_or_default();
        let request = engine_request(step, engine::StepKind::Command(name))?;
        engine::execute(request, out, &mut (), stop).map(drop)
    }

    /// Before the first step of each stretch of a variant's steps (one stretch per variant in
    /// a blocked plan; with interleaved variants, every switch): apply its server settings.
    /// An error fails the stretch's runs; nothing of it is executed.
    fn begin_variant(&mut self, variant: &str, run_dir: &Path) -> Result<(), ServerError> {
        let _ = (variant, run_dir);
        Ok(())
    }

    /// After the last step of a variant that began, also after a stop request or failures:
    /// restore what `begin_variant` changed.
    fn end_variant(&mut self, variant: &str, run_dir: &Path) -> Result<(), ServerError> {
        let _ = (variant, run_dir);
        Ok(())
    }

    /// Before the first step of a stage (`prepare`: a prepare step; `run`: a run, check or
    /// command step) of the variant that began: apply the settings the variant has for that
    /// stage only (#28). An error fails the stage's steps; nothing of it is executed.
    fn begin_stage(
        &mut self,
        variant: &str,
        stage: Stage,
        run_dir: &Path,
    ) -> Result<(), ServerError> {
        let _ = (variant, stage, run_dir);
        Ok(())
    }

    /// After the last step of a stage that began (before the other stage, a cleanup, the end
    /// of the variant; also after a stop request or failures): restore what `begin_stage`
    /// changed.
    fn end_stage(
        &mut self,
        variant: &str,
        stage: Stage,
        run_dir: &Path,
    ) -> Result<(), ServerError> {
        let _ = (variant, stage, run_dir);
        Ok(())
    }

    /// Why the server could not be reached at all by the `begin_variant` just done (its
    /// capture), if it could not: the step loop then fails the variant's first dataset without
    /// waiting out `connect_timeout` again for its prepare and cleanup.
    fn take_unreachable(&mut self) -> Option<String> {
        None
    }
}

/// The engine's request for `step`: its workload (as the planner resolved it), options and
/// target; [`EngineError::NoEngine`] for a step without a spec ([`Step::spec`]).
fn engine_request<'a>(
    step: &'a Step,
    kind: engine::StepKind<'a>,
) -> Result<engine::StepRequest<'a>, EngineError> {
    let spec = step
        .spec
        .ok_or_else(|| EngineError::NoEngine(step.workload.clone()))?;
    Ok(engine::StepRequest::new(spec, &step.options, kind).on(step.target.as_ref()))
}

/// The real executor: the engines of [`crate::engine`], and the variants' server settings.
#[derive(Debug, Default)]
pub struct EngineExecutor {
    /// The server changes of each variant that has some, and the target they apply to.
    pub variants: HashMap<String, server::VariantSettings>,
    pub target: Option<crate::db::Target>,
    /// Where relative restart templates are also looked for (the suite file's directory).
    pub base_dir: PathBuf,
    /// What the current variant changed, until it is restored.
    applied: Option<server::Saved>,
    /// What the current stage of the variant changed, until it is restored.
    stage_applied: Option<server::Saved>,
    /// The variants whose capture was taken again with their `run` settings in place.
    captured_run: std::collections::HashSet<String>,
    /// The capture of the variant just begun found the server unreachable: why.
    unreachable: Option<String>,
    /// `--events`: the executor's warnings are events too.
    events: Option<std::sync::Arc<events::Events>>,
    /// The preflight found the server unreachable: the first capture takes this answer instead
    /// of waiting out `connect_timeout` again.
    preflight_unreachable: Option<String>,
}

impl EngineExecutor {
    /// Puts back what `saved` recorded (a variant's or a stage's settings), if anything.
    fn restore(&self, saved: Option<server::Saved>, run_dir: &Path) -> Result<(), ServerError> {
        match (saved, self.target.as_ref()) {
            (Some(saved), Some(target)) => server::restore_and_forget(target, &saved, run_dir)
                .map_err(|e| ServerError::NotRestored {
                    source: Box::new(e),
                    run_dir: run_dir.to_path_buf(),
                }),
            _ => Ok(()),
        }
    }

    /// The executor of `variants` on `target`.
    fn new(
        variants: HashMap<String, server::VariantSettings>,
        target: Option<crate::db::Target>,
        base_dir: PathBuf,
        events: Option<std::sync::Arc<events::Events>>,
    ) -> Self {
        EngineExecutor {
            variants,
            target,
            base_dir,
            events,
            ..Default::default()
        }
    }

    /// Every setting the variants' `sql` changes (by name, each once), with the statements
    /// that read it: each variant's capture records them all ([`server::capture`]).
    fn sql_reads(&self) -> Vec<server::SqlRead<'_>> {
        let mut names: Vec<&str> = self.variants.keys().map(String::as_str).collect();
        names.sort_unstable();
        let mut reads: Vec<server::SqlRead<'_>> = Vec::new();
        for variant in names {
            for (name, sql) in self.variants[variant].sql_settings() {
                if !reads.iter().any(|r| r.name == name) {
                    reads.push(server::SqlRead { variant, name, sql });
                }
            }
        }
        reads
    }

    /// Captures the server's settings as the variant's (`server/<variant>.csv`), with a
    /// warning when that fails: the record is lost, not the runs. Returns why the server
    /// was unreachable, if it was.
    fn capture(&self, variant: &str, run_dir: &Path) -> Option<String> {
        let target = self.target.as_ref()?;
        match server::capture(target, variant, run_dir, &self.sql_reads()) {
            Ok(_) => None,
            Err(server::CheckError::Unreachable(e)) => {
                self.warn(&format!(
                    "variant {variant}: server variables not captured: {e}"
                ));
                Some(e)
            }
            Err(e) => {
                self.warn(&format!(
                    "variant {variant}: server variables not captured: {e}"
                ));
                None
            }
        }
    }

    /// A warning line on stderr (and a `warning` event).
    fn warn(&self, msg: &str) {
        eprintln!("[sbsuite] warning: {msg}");
        if let Some(e) = &self.events {
            e.emit(events::Body::Warning {
                message: format!("warning: {msg}"),
            });
        }
    }
}

impl StepExecutor for EngineExecutor {
    fn prepare(
        &mut self,
        step: &Step,
        cleanup: bool,
        out: &mut dyn Write,
        stop: &AtomicBool,
    ) -> Result<(), EngineError> {
        let kind = match cleanup {
            true => engine::StepKind::Cleanup,
            false => engine::StepKind::Prepare,
        };
        engine::execute(engine_request(step, kind)?, out, &mut (), stop).map(drop)
    }

    fn run(
        &mut self,
        step: &Step,
        out: &mut dyn Write,
        on_interval: &mut dyn StepObserver,
        stop: &AtomicBool,
    ) -> Result<StepOutcome, EngineError> {
        if !step.groups.is_empty() {
            return groups::run(step, out, on_interval, stop);
        }
        let run = engine::RunRequest {
            phases: &step.phases,
            ..Default::default()
        };
        let request = engine_request(step, engine::StepKind::Run(run))?;
        engine::execute(request, out, on_interval, stop).map(engine::Executed::into_outcome)
    }

    fn begin_variant(&mut self, variant: &str, run_dir: &Path) -> Result<(), ServerError> {
        let Some(target) = self.target.as_ref().filter(|t| t.has_server()) else {
            return match self.variants.get(variant) {
                Some(_) => Err(ServerError::VariantWithoutServer),
                None => Ok(()),
            };
        };
        if let Some(v) = self.variants.get(variant) {
            // A restart first (static settings), then the runtime ones on the restarted server.
            let restart = match &v.restart {
                Some(r) => Some(server::apply_restart(
                    target,
                    variant,
                    r,
                    &self.base_dir,
                    run_dir,
                )?),
                None => None,
            };
            let saved = if !v.changes_at_runtime() {
                server::Saved {
                    variant: variant.to_string(),
                    originals: Vec::new(),
                    restart,
                    statements: Vec::new(),
                    stage: None,
                }
            } else {
                // Shielded: a few quick statements, and a stop that broke them half-way
                // would leave the server half-changed (its restore needs the same connection).
                let applied = crate::db::interrupt::shielded(|| {
                    server::apply(target, variant, None, v, run_dir, restart.clone())
                });
                match applied {
                    Ok(saved) => saved,
                    Err(e) => {
                        if let Some(r) = restart {
                            let undo = server::Saved {
                                variant: variant.to_string(),
                                originals: Vec::new(),
                                restart: Some(r),
                                statements: Vec::new(),
                                stage: None,
                            };
                            // Owed even after a stop request broke the variant's setup.
                            let undone = crate::db::interrupt::shielded(|| {
                                server::restore_and_forget(target, &undo, run_dir)
                            });
                            if let Err(u) = undone {
                                return Err(ServerError::RestartNotUndone {
                                    error: Box::new(e),
                                    undo: Box::new(u),
                                });
                            }
                        }
                        return Err(e);
                    }
                }
            };
            self.applied = Some(saved);
        }
        // The effective settings of every variant, the baseline too, so that runs compare. A
        // capture that fails (a server that hides its variables, or is down: then the steps
        // say so themselves) costs the record, not the runs.
        self.unreachable = match self.preflight_unreachable.take() {
            Some(why) => {
                self.warn(&format!(
                    "variant {variant}: server variables not captured: {why}"
                ));
                Some(why)
            }
            None => self.capture(variant, run_dir),
        };
        Ok(())
    }

    fn begin_stage(
        &mut self,
        variant: &str,
        stage: Stage,
        run_dir: &Path,
    ) -> Result<(), ServerError> {
        let Some(v) = self.variants.get(variant).and_then(|v| v.stage(stage)) else {
            return Ok(());
        };
        let Some(target) = self.target.as_ref().filter(|t| t.has_server()) else {
            return Err(ServerError::VariantWithoutServer);
        };
        // Shielded, as the variant's own settings are.
        let saved = crate::db::interrupt::shielded(|| {
            server::apply(target, variant, Some(stage), v, run_dir, None)
        })?;
        self.stage_applied = Some(saved);
        // The capture describes what the runs measured: taken again, once, with the run
        // settings in place.
        if stage == Stage::Run && self.captured_run.insert(variant.to_string()) {
            self.capture(variant, run_dir);
        }
        Ok(())
    }

    fn end_stage(
        &mut self,
        _variant: &str,
        _stage: Stage,
        run_dir: &Path,
    ) -> Result<(), ServerError> {
        let saved = self.stage_applied.take();
        self.restore(saved, run_dir)
    }

    fn take_unreachable(&mut self) -> Option<String> {
        self.unreachable.take()
    }

    fn end_variant(&mut self, _variant: &str, run_dir: &Path) -> Result<(), ServerError> {
        let saved = self.applied.take();
        self.restore(saved, run_dir)
    }
}

/// Runs `plan` with the engines of this build, stopping gracefully on the first Ctrl-C/SIGTERM.
/// `variants` holds each variant's server changes (applied before each stretch of its steps,
/// restored after it: once per variant in a blocked plan, at every switch in an interleaved
/// one, where each run thus gets its variant's settings applied and read back anew).
pub fn run_plan(
    plan: &Plan,
    ctx: &RunContext,
    variants: HashMap<String, server::VariantSettings>,
) -> Result<RunSummary, RunError> {
    let target = plan.steps.iter().find_map(|s| s.target.clone());
    let mut executor = EngineExecutor::new(
        variants,
        target,
        ctx.base_dir.clone(),
        ctx.watch.events.clone(),
    );
    preflight(plan, &executor)?;
    executor.preflight_unreachable = preflight::check(plan)?.unreachable;
    let stop = signal::install()?;
    // A stop request belongs to one run; a previous run in this process may have set it.
    stop.store(false, Ordering::SeqCst);
    crate::db::interrupt::rearm();
    let mut clients_executor;
    let executor: &mut dyn StepExecutor = match &ctx.clients {
        Some(c) => {
            clients_executor = clients::ClientsExecutor::new(executor, c, plan, &stop)?;
            &mut clients_executor
        }
        None => &mut executor,
    };
    match ctx.watch.reports {
        Reports::Stdout => run_plan_with(plan, ctx, executor, &stop, io::stdout().lock()),
        Reports::Stderr => run_plan_with(plan, ctx, executor, &stop, io::stderr().lock()),
        Reports::Discard => run_plan_with(plan, ctx, executor, &stop, io::sink()),
    }
}

/// Fails when some step's workload has no engine, listing every such workload once.
pub fn preflight(plan: &Plan, executor: &dyn StepExecutor) -> Result<(), RunError> {
    let mut missing: Vec<String> = Vec::new();
    for step in &plan.steps {
        if !executor.has_engine(step) && !missing.contains(&step.workload) {
            missing.push(step.workload.clone());
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(RunError::NoEngine { workloads: missing })
    }
}

/// What a resumed run still has to do.
#[derive(Debug, Default)]
struct ResumePlan {
    /// Step indexes to execute.
    todo: std::collections::HashSet<usize>,
    /// Datasets whose prepare finished before and whose data is still in place (their cleanup
    /// has not run): their remaining runs use it without a new prepare.
    prepared: std::collections::HashSet<usize>,
    /// Datasets whose prepare started but did not finish: cleaned up before preparing again.
    half_prepared: std::collections::HashSet<usize>,
}

/// For a fresh run everything is to do. For a resume: runs without a kept row, a prepare when
/// its dataset still has runs to do and its data is not in place, a cleanup unless it finished.
fn resume_plan(
    plan: &Plan,
    finished_runs: &std::collections::HashSet<usize>,
    journal: &HashMap<usize, String>,
) -> ResumePlan {
    let mut r = ResumePlan::default();
    let open: std::collections::HashSet<usize> = plan
        .steps
        .iter()
        .filter(|s| s.kind == StepKind::Run && !finished_runs.contains(&s.index))
        .map(|s| s.dataset)
        .collect();
    let cleaned: std::collections::HashSet<usize> = plan
        .steps
        .iter()
        .filter(|s| {
            s.kind == StepKind::Cleanup && journal.get(&s.index).is_some_and(|e| e == "done")
        })
        .map(|s| s.dataset)
        .collect();
    for s in &plan.steps {
        let event = journal.get(&s.index).map(String::as_str);
        let todo = match s.kind {
            StepKind::Run => !finished_runs.contains(&s.index),
            StepKind::Cleanup => event != Some("done"),
            // Again unless it passed, while the data is still there to check.
            StepKind::Check | StepKind::Command => {
                event != Some("done") && !cleaned.contains(&s.dataset)
            }
            StepKind::Prepare => match event {
                Some("done") if !cleaned.contains(&s.dataset) => {
                    r.prepared.insert(s.dataset);
                    false
                }
                Some(_) if open.contains(&s.dataset) => {
                    r.half_prepared.insert(s.dataset);
                    true
                }
                _ => open.contains(&s.dataset),
            },
        };
        if todo {
            r.todo.insert(s.index);
        }
    }
    r
}

/// The step loop behind [`run_plan`], with the executor, the stop flag and the report stream
/// injected: [`step_loop::StepLoop`] carries its state from one step to the next.
pub fn run_plan_with(
    plan: &Plan,
    ctx: &RunContext,
    executor: &mut dyn StepExecutor,
    stop: &AtomicBool,
    report: impl Write,
) -> Result<RunSummary, RunError> {
    preflight(plan, executor)?;
    let mut run = step_loop::StepLoop::start(plan, ctx, executor, stop, report)?;
    for (position, step) in plan.steps.iter().enumerate() {
        run.step(position, step);
    }
    run.finish()
}

#[cfg(test)]
mod tests;
