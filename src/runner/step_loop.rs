//! The step loop behind [`super::run_plan_with`], as a small state machine.
//!
//! A plan is a flat list of steps, but executing it crosses nested boundaries: a variant
//! (server settings applied and restored, hooks around it), a dataset (hooks around it, its
//! prepare's fate deciding its runs), the step itself (before/after hooks, the engine call, the
//! row). Everything the loop has to remember between two steps lives in one struct,
//! [`StepLoop`], rather than in a dozen locals of one long function, and every transition is one
//! method that reads and changes that state:
//!
//! - [`StepLoop::start`]: opens (or, for `--resume`, reopens) the result store, works out what a
//!   resume still has to do, and runs `before_suite`;
//! - [`StepLoop::step`]: one step of the plan, in this order: kept by a resume or cut by a
//!   `stop_when` sweep ([`StepLoop::pass_over`]), the boundaries it crosses
//!   ([`StepLoop::cross_boundaries`]: leave the dataset, leave the variant, enter the variant,
//!   enter the dataset), whether it executes at all ([`StepLoop::admit`]), then
//!   [`StepLoop::prepare_step`] (prepare and cleanup), [`StepLoop::run_step`] (and
//!   [`StepLoop::record_run`]) or [`StepLoop::check_step`] (checks and a Lua script's
//!   commands), then [`StepLoop::after_step`]
//!   (the hook and `on_error`);
//! - [`StepLoop::finish`]: leaves the last dataset and variant, runs `after_suite`, and turns
//!   the counts into the [`RunSummary`] and its closing line.
//!
//! Why the stop checks look the way they do: whether the suite is stopping is read once per
//! step, before any boundary hook runs; a hook or a failed step with `on_error = "stop"` can
//! only add to it during the step ([`StepLoop::halted`] never goes back), and a stop request
//! that arrives during a boundary is seen by the engine through the flag it is handed.
//!
//! Blocking calls and the stop: the signal handler breaks whatever is registered with
//! [`crate::db::interrupt`] (setup connections, hook and restart commands), so a prepare or a
//! hook blocked on a stuck server ends at the first signal and is recorded as interrupted. The
//! loop re-arms the registry ([`StepLoop::settle`]) before the work a stop still owes, and runs
//! cleanups and restores [`interrupt::shielded`], so the first signal never breaks them.
//!
//! An unreachable server (the variant's capture or a dataset's prepare could not open a
//! connection at all, [`EngineError::Unreachable`]) fails that dataset: its prepare (after a
//! failed capture) and its runs are recorded failed with the reason, its cleanup is skipped,
//! none of them connecting again, since each attempt would only wait out `connect_timeout`
//! once more. The next dataset tries again, once.
//!
//! Prepare and cleanup steps get the run's ledger of tables on their target
//! ([`StepLoop::owned_step`], `runner::ledger`): a prepare records each table before creating
//! it, a cleanup drops only those, and what a cleanup kept is reported after it
//! ([`StepLoop::ledger_done`]). A plan of `dataset = "existing"` has neither; its datasets are
//! ready from the start (their checks run).
//!
//! Each policy this loop implements is pinned by the scripted-executor tests in `runner/mod.rs`.

use std::collections::{HashMap, HashSet};
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use chrono::{DateTime, Utc};

use super::events::{Body, StepRef, StepStatus};
use super::faults::StepFaults;
use super::hooks::{self, HookFailure, Hooks};
use super::ledger::{StepLedger, Tables};
use super::progress::{Progress, ReportOut};
use super::repeat::Repeats;
use super::sweep::Sweeps;
use super::{ResumePlan, RunContext, RunError, RunSummary, StepExecutor, resume_plan};
use crate::db::interrupt;
use crate::engine::driver::RATE_QUEUE_SLOTS;
use crate::engine::{
    DROPPED, EngineError, IntervalSample, LiveSample, StepObserver, StepOutcome, metric,
};
use crate::plan::{Plan, Step, StepKind};
use crate::results::{ResultStore, ResultsError, RowStatus, RunRow, host};
use crate::suite::raw::{OnError, RateOverflow, Stage};

/// The stage of a dataset `kind` belongs to (#28): a prepare loads, runs, checks and a
/// script's commands measure; a cleanup has none (the variant's own settings alone).
fn stage_of(kind: StepKind) -> Option<Stage> {
    match kind {
        StepKind::Prepare => Some(Stage::Prepare),
        StepKind::Run | StepKind::Check | StepKind::Command => Some(Stage::Run),
        StepKind::Cleanup => None,
    }
}

/// What the loop knows about a dataset's latest prepare.
enum Dataset {
    Ready,
    PrepareFailed(String),
    /// The prepare was stopped; its runs are skipped anyway, its cleanup runs.
    PrepareInterrupted,
    /// No connection to the server could be opened (at `at`: `capture` or `prepare`): its
    /// runs fail and its cleanup is skipped without connecting again, since each attempt would
    /// only wait out `connect_timeout` once more.
    Unreachable {
        at: &'static str,
        why: String,
    },
}

/// Steps by how they ended, for the [`RunSummary`].
#[derive(Clone, Default)]
struct Counts {
    ok: usize,
    failed: usize,
    skipped: usize,
    interrupted: usize,
    kept: usize,
    /// Of the steps a resume keeps, those that had failed (a `failed` row, or a prepare,
    /// check or command whose journal says `failed`): the run's outcome, and exit code, is
    /// theirs too.
    kept_failed: usize,
}

impl Counts {
    /// How the step that moved the counts from `before` ended, for its watchers: a failure
    /// (the step's, or a hook's around it) wins, then a stop, then success; a step that moved
    /// nothing was passed over.
    fn state_since(&self, before: &Counts) -> StepStatus {
        if self.failed > before.failed {
            StepStatus::Failed
        } else if self.interrupted > before.interrupted {
            StepStatus::Interrupted
        } else if self.ok > before.ok {
            StepStatus::Done
        } else if self.kept > before.kept {
            StepStatus::Kept
        } else {
            StepStatus::Skipped
        }
    }
}

/// A step let through by [`StepLoop::admit`]: its hook context (for `after_step`) and why its
/// `before_step` hook says it must not run (`on_error = "skip"`), if it does.
struct Admitted {
    hook_ctx: hooks::Context,
    hook_error: Option<String>,
}

/// The state of one execution of a plan, between two steps.
pub(super) struct StepLoop<'a, W: Write> {
    plan: &'a Plan,
    ctx: &'a RunContext,
    executor: &'a mut dyn StepExecutor,
    stop: &'a AtomicBool,
    /// Cleanups get a flag nobody sets: see the module comment of `runner`.
    never: AtomicBool,
    store: ResultStore,
    run_dir: PathBuf,
    /// What a `--resume` keeps, and the datasets whose data it finds in place or half made.
    resume: ResumePlan,
    progress: Progress,
    out: ReportOut<W>,
    hooks: Hooks,
    sweeps: Sweeps,
    /// `repeat = { min, max, until }` (#29): cells whose remaining repetitions are skipped.
    repeats: Repeats,
    counts: Counts,
    /// A results write error ends the benchmarking like a stop request (cleanups still run)
    /// and is returned at the end: measuring without recording is pointless.
    fatal: Option<ResultsError>,
    /// `on_error = "stop"` (a step or a hook): no further runs, like a stop request, but the
    /// run is not "interrupted": the failure decides the exit code.
    halted: bool,
    /// The variant and dataset whose boundaries were crossed last (by steps that executed or
    /// were refused, not by kept or swept ones), and the step that crossed them.
    entered: Option<(&'a str, usize)>,
    last_step: Option<&'a Step>,
    /// The variant whose settings are in place (it began), and why the current one could not.
    current: Option<&'a str>,
    variant_error: Option<String>,
    /// The stage of the current variant that began (its `prepare` or `run` settings applied),
    /// and why they could not be (its steps then fail with that).
    stage: Option<Stage>,
    stage_error: Option<String>,
    /// The dataset whose before_dataset hook ran: its after_dataset is owed.
    open_dataset: Option<&'a Step>,
    datasets: HashMap<usize, Dataset>,
    /// Datasets whose remaining runs are skipped (`on_error = "skip"`), and datasets a
    /// before_dataset hook skipped entirely.
    skip_runs: HashSet<usize>,
    skip_all: HashSet<usize>,
    /// The dataset entered with its variant, and why the variant's capture could not reach
    /// the server: that dataset's prepare is failed without connecting.
    capture_unreachable: Option<(usize, String)>,
    /// `--events`: when the current step started executing, and the row it wrote.
    step_started: Option<std::time::Instant>,
    row: Option<indexmap::IndexMap<String, String>>,
    /// The tables the run created, which its cleanups alone drop (`None`: a run directory of
    /// an older build, resumed as that build ran it).
    tables: Option<Tables>,
    /// What each run step cost, read around it (`server_counters.csv`).
    cost: super::cost::Cost,
}

impl<'a, W: Write> StepLoop<'a, W> {
    /// Opens the result store (a new run directory, or the one `--resume` names) and runs
    /// `before_suite`.
    pub(super) fn start(
        plan: &'a Plan,
        ctx: &'a RunContext,
        executor: &'a mut dyn StepExecutor,
        stop: &'a AtomicBool,
        report: W,
    ) -> Result<Self, RunError> {
        // Resuming: the finished runs (rows kept), and the journal of prepare/cleanup steps.
        let (store, finished_runs, journal) = match &ctx.resume {
            Some(dir) => {
                let (store, finished) = ResultStore::reopen(dir, plan)?;
                (store, finished, crate::results::read_journal(dir))
            }
            None => (
                ResultStore::create(&ctx.results_root, plan, &ctx.suite_text, Utc::now())?,
                Default::default(),
                Default::default(),
            ),
        };
        // The client machine (`host.json`): recorded when the run starts, kept on a resume
        // (another machine resuming is appended).
        let mut client = host::HostFacts::collect(Utc::now());
        client.wire_io = Some(crate::db::ring::describe());
        match &ctx.resume {
            Some(_) => host::record_resume(store.dir(), client)?,
            None => host::write_new(store.dir(), client)?,
        }
        let resume = resume_plan(plan, &finished_runs, &journal);
        let mut sweeps = Sweeps::new(ctx.stop_when.clone());
        let mut repeats = Repeats::new(ctx.repeat_until.clone(), plan);
        let mut counts = Counts::default();
        if let Some(dir) = &ctx.resume {
            let kept = kept_rows(dir);
            if !ctx.stop_when.is_empty() {
                sweeps.replay(plan, &kept);
            }
            repeats.replay(plan, &kept);
            counts.kept_failed = kept_failures(dir, &resume, &kept);
        }
        let mut progress = Progress::new(ctx.progress, ctx.quiet, plan);
        progress.set_events(ctx.watch.events.clone());
        let out = ReportOut::new(progress.bar(), report);
        let run_dir = store.dir().to_path_buf();
        if let Some(m) = &ctx.watch.metrics {
            m.suite_started(plan, store.run_id());
        }
        if let Some(e) = &ctx.watch.events {
            e.suite_start(
                plan,
                store.run_id(),
                &run_dir.display().to_string(),
                ctx.resume.is_some(),
            );
        }
        let hooks = Hooks::new(ctx.hooks.clone(), &plan.suite, &run_dir)
            .with_events(ctx.watch.events.clone());
        let tables = Tables::open(&run_dir);
        let cost = super::cost::Cost::new(
            ctx.cost.clone(),
            &run_dir,
            store.run_id(),
            ctx.clients.is_some(),
        );
        let mut this = StepLoop {
            plan,
            ctx,
            executor,
            stop,
            never: AtomicBool::new(false),
            store,
            run_dir,
            resume,
            progress,
            out,
            hooks,
            sweeps,
            repeats,
            counts,
            fatal: None,
            halted: false,
            entered: None,
            last_step: None,
            current: None,
            variant_error: None,
            stage: None,
            stage_error: None,
            open_dataset: None,
            datasets: HashMap::new(),
            skip_runs: HashSet::new(),
            skip_all: HashSet::new(),
            capture_unreachable: None,
            step_started: None,
            row: None,
            tables,
            cost,
        };
        if let Err(e) = this
            .hooks
            .run("before_suite", &this.hooks.base(&this.run_dir))
        {
            // Nothing is guarded more narrowly than the suite: skip and stop both end it.
            if this.hook_failed(e) {
                this.halted = true;
            }
        }
        Ok(this)
    }

    /// The step at 0-based `position` of the plan, and what its watchers are told of its end.
    pub(super) fn step(&mut self, position: usize, step: &'a Step) {
        let before = self.counts.clone();
        self.step_inner(position, step);
        let status = self.counts.state_since(&before);
        if let Some(m) = &self.ctx.watch.metrics {
            let state = match status {
                StepStatus::Kept => "done",
                s => s.as_str(),
            };
            m.step_state(position, state, true);
        }
        let (started, row) = (self.step_started.take(), self.row.take());
        if let Some(e) = &self.ctx.watch.events {
            e.emit(Body::StepEnd {
                step: StepRef::of(step),
                status,
                seconds: started.map(|t| t.elapsed().as_secs_f64()),
                row,
            });
        }
    }

    /// A step that executes (after its boundaries and hooks): watchers see it running.
    fn started(&mut self, position: usize, step: &Step) {
        self.progress.step_started(position, step);
        if let Some(m) = &self.ctx.watch.metrics {
            m.step_state(position, "running", false);
        }
        if let Some(e) = &self.ctx.watch.events {
            self.step_started = Some(std::time::Instant::now());
            e.emit(Body::StepStart {
                step: StepRef::of(step),
            });
        }
    }

    fn step_inner(&mut self, position: usize, step: &'a Step) {
        if self.pass_over(position, step) {
            return;
        }
        self.settle();
        let was_stopping = self.stopping();
        self.cross_boundaries(step, was_stopping);
        let stopping = was_stopping || self.halted;
        let Some(admitted) = self.admit(position, step, stopping) else {
            return;
        };
        let executed = match step.kind {
            StepKind::Prepare | StepKind::Cleanup => {
                self.prepare_step(position, step, admitted.hook_error)
            }
            StepKind::Run => self.run_step(position, step, admitted.hook_error),
            StepKind::Check | StepKind::Command => {
                self.check_step(position, step, admitted.hook_error)
            }
        };
        // `None`: the step was refused after all (no after_step for it).
        if let Some(failed) = executed {
            self.after_step(step, &admitted.hook_ctx, failed);
        }
    }

    /// After a stop request: the blocking calls it broke are over, so what runs next (cleanups,
    /// restores, after-hooks) may block again normally.
    fn settle(&self) {
        if self.stop.load(Ordering::SeqCst) {
            interrupt::rearm();
        }
    }

    /// A stop request, a results write error or `on_error = "stop"`: no further runs.
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst) || self.fatal.is_some() || self.halted
    }

    /// `==> [k/N] kind name (variant v)`, the line before each step's report.
    fn header(&self, position: usize, step: &Step) -> String {
        format!(
            "==> [{}/{}] {} {} (variant {})",
            position + 1,
            self.plan.steps.len(),
            step.kind.as_str(),
            step.name,
            step.variant
        )
    }

    /// A step passed over without crossing its boundaries: finished before a resume, or a run
    /// whose `stop_when` sweep has stopped.
    fn pass_over(&mut self, position: usize, step: &Step) -> bool {
        if !self.resume.todo.contains(&step.index) {
            // Finished before a resume: a prepared dataset stays prepared for its other runs.
            if step.kind == StepKind::Prepare && self.resume.prepared.contains(&step.dataset) {
                self.datasets.insert(step.dataset, Dataset::Ready);
            }
            self.counts.kept += 1;
            return true;
        }
        if step.kind == StepKind::Run
            && let Some(knee) = self.sweeps.stopped(step)
        {
            let line = format!(
                "{}: skipped, stop_when: knee {knee}",
                self.header(position, step)
            );
            let _ = writeln!(self.out, "{line}");
            self.counts.skipped += 1;
            return true;
        }
        if step.kind == StepKind::Run
            && let Some(why) = self.repeats.stopped(step)
        {
            let line = format!("{}: skipped, {why}", self.header(position, step));
            let _ = writeln!(self.out, "{line}");
            self.counts.skipped += 1;
            return true;
        }
        false
    }

    /// Leaves the dataset and the variant `step` is not part of, and enters its own.
    fn cross_boundaries(&mut self, step: &'a Step, was_stopping: bool) {
        let new_variant = self.entered.is_none_or(|(v, _)| v != step.variant);
        // Dataset ids are unique in a plan, so a blocked plan's new variant is a new dataset
        // too; an interleaved plan switches variants inside one dataset.
        let new_dataset = self.entered.is_none_or(|(_, d)| d != step.dataset);
        self.entered = Some((step.variant.as_str(), step.dataset));
        let prev_step = self.last_step.replace(step);
        if new_dataset {
            self.leave_dataset();
            // Only the dataset entered with the variant is failed by its capture: the next one
            // may try again.
            self.capture_unreachable = None;
        }
        if new_variant {
            self.leave_variant(prev_step);
            self.enter_variant(step);
        }
        let stage = stage_of(step.kind);
        if self.stage != stage {
            self.leave_stage();
            if let Some(stage) = stage {
                self.enter_stage(step, stage);
            }
        }
        if new_dataset
            && step.dataset != 0
            && self.variant_error.is_none()
            && !(was_stopping || self.halted)
        {
            self.enter_dataset(step);
        }
    }

    /// Runs the after_dataset hook owed by the dataset entered last.
    fn leave_dataset(&mut self) {
        if let Some(prev) = self.open_dataset.take() {
            let c = self
                .hooks
                .context(&self.run_dir, prev, hooks::Level::Dataset);
            if let Err(e) = self.hooks.run("after_dataset", &c) {
                self.hook_failed(e);
            }
        }
    }

    /// Restores the settings of the stage that began (#28).
    fn leave_stage(&mut self) {
        let Some(stage) = self.stage.take() else {
            return;
        };
        // A stage whose settings failed changed nothing (they were put back at once).
        if self.stage_error.take().is_some() {
            return;
        }
        let Some(v) = self.current else {
            return;
        };
        let restored = interrupt::shielded(|| self.executor.end_stage(v, stage, &self.run_dir));
        if let Err(e) = restored {
            self.counts.failed += 1;
            self.progress
                .error(&format!("[sbsuite] variant {v}, {stage} settings: {e}"));
        }
    }

    /// Applies the settings the variant in place has for `stage`, unless the suite is stopping
    /// or the variant did not begin; when they fail, [`StepLoop::stage_error`] fails the
    /// stage's steps.
    fn enter_stage(&mut self, step: &'a Step, stage: Stage) {
        self.stage_error = None;
        if self.stopping() || self.current.is_none() {
            return;
        }
        self.stage = Some(stage);
        if let Err(e) = self
            .executor
            .begin_stage(&step.variant, stage, &self.run_dir)
        {
            self.progress.error(&format!(
                "[sbsuite] variant {} was not applied for its {stage} steps, they do not run: {e}",
                step.variant
            ));
            self.stage_error = Some(e.to_string());
        }
    }

    /// Restores the variant in place (it began), after its after_variant hook.
    fn leave_variant(&mut self, last: Option<&'a Step>) {
        self.leave_stage();
        let Some(v) = self.current.take() else {
            return;
        };
        if let Some(last) = last {
            let c = self
                .hooks
                .context(&self.run_dir, last, hooks::Level::Variant);
            if let Err(e) = self.hooks.run("after_variant", &c) {
                self.hook_failed(e);
            }
        }
        let restored = interrupt::shielded(|| self.executor.end_variant(v, &self.run_dir));
        if let Some(e) = &self.ctx.watch.events {
            e.emit(Body::VariantRestored {
                variant: v.to_string(),
                error: restored.as_ref().err().map(ToString::to_string),
            });
        }
        if let Err(e) = restored {
            self.counts.failed += 1;
            self.progress.error(&format!("[sbsuite] variant {v}: {e}"));
        }
    }

    /// Applies the variant of `step` and runs its before_variant hook, unless the suite is
    /// stopping; when either fails, [`StepLoop::variant_error`] fails the variant's runs.
    fn enter_variant(&mut self, step: &'a Step) {
        self.variant_error = None;
        if self.stopping() {
            return;
        }
        let begun = self.executor.begin_variant(&step.variant, &self.run_dir);
        if let Some(e) = &self.ctx.watch.events {
            e.emit(Body::VariantApplied {
                variant: step.variant.clone(),
                error: begun.as_ref().err().map(ToString::to_string),
            });
        }
        match begun {
            Ok(()) => {
                self.current = Some(step.variant.as_str());
                self.capture_unreachable = self
                    .executor
                    .take_unreachable()
                    .map(|why| (step.dataset, why));
                let c = self
                    .hooks
                    .context(&self.run_dir, step, hooks::Level::Variant);
                if let Err(e) = self.hooks.run("before_variant", &c) {
                    let message = e.message.clone();
                    if self.hook_failed(e) && !self.halted {
                        self.variant_error = Some(message);
                    }
                }
            }
            Err(e) => {
                self.progress.error(&format!(
                    "[sbsuite] variant {} was not applied, its steps do not run: {e}",
                    step.variant
                ));
                self.variant_error = Some(e.to_string());
            }
        }
    }

    /// Runs the before_dataset hook of `step`'s dataset; a failure skips the whole dataset.
    fn enter_dataset(&mut self, step: &'a Step) {
        let c = self
            .hooks
            .context(&self.run_dir, step, hooks::Level::Dataset);
        self.open_dataset = Some(step);
        if let Err(e) = self.hooks.run("before_dataset", &c)
            && self.hook_failed(e)
        {
            self.skip_all.insert(step.dataset);
        }
    }

    /// Whether `step` executes: not when its variant failed (its runs are recorded as failed),
    /// its dataset is skipped, or the suite is stopping (cleanups of prepared datasets still
    /// run); then its before_step hook, which a cleanup runs past whatever it says.
    fn admit(&mut self, position: usize, step: &Step, stopping: bool) -> Option<Admitted> {
        // A cleanup of data that is in place runs whatever variant failed: with interleaved
        // variants the dataset was prepared under another one.
        let prepared = matches!(self.datasets.get(&step.dataset), Some(Dataset::Ready));
        let refused = match (&self.variant_error, &self.stage_error, self.stage) {
            (Some(e), _, _) => Some(format!("variant `{}` not applied: {e}", step.variant)),
            (None, Some(e), Some(stage)) => Some(format!(
                "variant `{}` not applied for its {stage} steps: {e}",
                step.variant
            )),
            _ => None,
        };
        if let Some(error) = refused
            && !(step.kind == StepKind::Cleanup && prepared)
        {
            if step.kind == StepKind::Run && !stopping {
                self.counts.failed += 1;
                let line = format!(
                    "{}: skipped, variant not applied",
                    self.header(position, step)
                );
                let _ = writeln!(self.out, "{line}");
                self.write_failed_run(step, Utc::now(), &error);
            } else {
                if step.kind == StepKind::Prepare {
                    // The other variants' runs of an interleaved dataset fail with the reason.
                    self.datasets
                        .insert(step.dataset, Dataset::PrepareFailed(error));
                }
                self.counts.skipped += 1;
            }
            return None;
        }
        if step.kind == StepKind::Cleanup
            && let Some(Dataset::Unreachable { at, .. }) = self.datasets.get(&step.dataset)
        {
            let line = format!(
                "{}: skipped, the server was unreachable at {at}",
                self.header(position, step)
            );
            let _ = writeln!(self.out, "{line}");
            self.counts.skipped += 1;
            return None;
        }
        let wanted = match step.kind {
            StepKind::Cleanup => !stopping || self.datasets.contains_key(&step.dataset),
            _ => !stopping,
        };
        if self.skip_all.contains(&step.dataset)
            || (step.kind == StepKind::Run && self.skip_runs.contains(&step.dataset))
            || !wanted
        {
            self.counts.skipped += 1;
            return None;
        }
        let hook_ctx = self.hooks.context(&self.run_dir, step, hooks::Level::Step);
        let mut hook_error = None;
        let hook = self.hooks.run("before_step", &hook_ctx);
        if let Err(e) = hook.as_ref()
            && e.interrupted
            && step.kind != StepKind::Cleanup
        {
            // A stop request killed the hook: the step does not start.
            if let Err(e) = hook {
                self.hook_failed(e);
            }
            self.counts.skipped += 1;
            return None;
        }
        if let Err(e) = hook {
            let message = e.message.clone();
            if self.hook_failed(e) && step.kind != StepKind::Cleanup {
                if self.halted {
                    self.counts.skipped += 1;
                    return None;
                }
                hook_error = Some(message);
            }
        }
        Some(Admitted {
            hook_ctx,
            hook_error,
        })
    }

    /// A prepare or cleanup step, journaled so that `--resume` knows whether its data is in
    /// place. Returns whether it failed, or `None` when its before_step hook refused it.
    fn prepare_step(
        &mut self,
        position: usize,
        step: &Step,
        hook_error: Option<String>,
    ) -> Option<bool> {
        let header = self.header(position, step);
        let cleanup = step.kind == StepKind::Cleanup;
        if let Some(msg) = hook_error {
            let _ = writeln!(self.out, "{header}: skipped, {msg}");
            self.datasets
                .insert(step.dataset, Dataset::PrepareFailed(msg));
            return None;
        }
        if !cleanup
            && let Some((_, why)) = self
                .capture_unreachable
                .take_if(|(dataset, _)| *dataset == step.dataset)
        {
            // Not journaled: nothing was made, and a resume prepares it again.
            let _ = writeln!(self.out, "{header}: skipped, the server was unreachable");
            self.counts.failed += 1;
            self.fail_note(
                position,
                step,
                &format!("not run, the server was unreachable at capture: {why}"),
            );
            self.datasets
                .insert(step.dataset, Dataset::Unreachable { at: "capture", why });
            return Some(true);
        }
        self.started(position, step);
        let _ = writeln!(self.out, "{header}");
        if !cleanup
            && self.resume.half_prepared.contains(&step.dataset)
            && let Some(c) = self
                .plan
                .steps
                .iter()
                .find(|c| c.kind == StepKind::Cleanup && c.dataset == step.dataset)
        {
            // A prepare cut short before the resume left part of the data: drop what it
            // created first (its errors do not matter; the prepare reports its own).
            let (c, ledger) = self.owned_step(c);
            let (executor, never) = (&mut self.executor, &self.never);
            let _ = interrupt::shielded(|| executor.prepare(&c, true, &mut io::sink(), never));
            self.ledger_done(c.index.saturating_sub(1), &c, ledger);
        }
        if let Err(e) = self.store.journal(step, crate::results::JOURNAL_START) {
            self.fatal.get_or_insert(e);
        }
        let (owned, ledger) = self.owned_step(step);
        let result = if cleanup {
            let (executor, out, never) = (&mut self.executor, &mut self.out, &self.never);
            interrupt::shielded(|| executor.prepare(&owned, true, out, never))
        } else {
            self.executor
                .prepare(&owned, false, &mut self.out, self.stop)
        };
        let _ = self.out.flush();
        self.ledger_done(position, step, ledger);
        let mut failed = false;
        let event = match result {
            Ok(()) => {
                self.counts.ok += 1;
                if !cleanup {
                    self.datasets.insert(step.dataset, Dataset::Ready);
                }
                "done"
            }
            Err(_) if !cleanup && self.stop.load(Ordering::SeqCst) => {
                self.counts.interrupted += 1;
                self.datasets
                    .insert(step.dataset, Dataset::PrepareInterrupted);
                "interrupted"
            }
            Err(e) => {
                self.counts.failed += 1;
                failed = true;
                self.fail_note(position, step, &e.to_string());
                if !cleanup {
                    let state = match e {
                        EngineError::Unreachable(why) => {
                            Dataset::Unreachable { at: "prepare", why }
                        }
                        e => Dataset::PrepareFailed(e.to_string()),
                    };
                    self.datasets.insert(step.dataset, state);
                }
                "failed"
            }
        };
        if let Err(e) = self.store.journal(step, event) {
            self.fatal.get_or_insert(e);
        }
        Some(failed)
    }

    /// A copy of the prepare or cleanup `step` whose target carries the run's ledger, and the
    /// ledger, to read after the step ([`StepLoop::ledger_done`]). Without one (an older
    /// build's run directory) the copy has none either.
    fn owned_step(&self, step: &Step) -> (Step, Option<Arc<StepLedger>>) {
        let mut owned = step.clone();
        let ledger = self.tables.as_ref().map(|t| t.for_step(step));
        if let (Some(target), Some(l)) = (owned.target.as_mut(), &ledger) {
            target.ledger = Some(Arc::clone(l) as Arc<dyn crate::db::owned::Ledger>);
        }
        (owned, ledger)
    }

    /// After a prepare or cleanup: says which tables it kept because the run had not created
    /// them, and ends the benchmarking (like any results write error) when one of its records
    /// could not be written.
    fn ledger_done(&mut self, position: usize, step: &Step, ledger: Option<Arc<StepLedger>>) {
        let Some(ledger) = ledger else {
            return;
        };
        let kept = ledger.kept_tables();
        let mut places: Vec<&str> = Vec::new();
        for k in &kept {
            if !places.contains(&k.at.as_str()) {
                places.push(&k.at);
            }
        }
        for at in places {
            let names: Vec<String> = kept
                .iter()
                .filter(|k| k.at == at)
                .map(|k| format!("'{}'", k.table))
                .collect();
            self.progress.error(&format!(
                "[sbsuite] step {}/{} {} {}: kept {} in {at}: this run did not create {}",
                position + 1,
                self.plan.steps.len(),
                step.kind.as_str(),
                step.name,
                names.join(", "),
                if names.len() == 1 { "it" } else { "them" },
            ));
        }
        if let Some(e) = ledger.take_error() {
            self.fatal.get_or_insert(e);
        }
    }

    /// A check step, or a script's command step, journaled like a prepare (so `--resume` runs
    /// it again unless it passed): it runs only on a dataset whose prepare is done (a command
    /// of a script without data, dataset 0, always runs), and its failure is a failed step for
    /// `on_error`. Returns whether it failed, or `None` when it was refused.
    fn check_step(
        &mut self,
        position: usize,
        step: &Step,
        hook_error: Option<String>,
    ) -> Option<bool> {
        let header = self.header(position, step);
        if let Some(msg) = hook_error {
            let _ = writeln!(self.out, "{header}: skipped, {msg}");
            return None;
        }
        // Data that was there before the run (`dataset = "existing"`) is always ready.
        let existing = self.plan.dataset == crate::suite::raw::DatasetSource::Existing;
        if step.dataset > 0
            && !existing
            && !matches!(self.datasets.get(&step.dataset), Some(Dataset::Ready))
        {
            let _ = writeln!(self.out, "{header}: skipped, the dataset was not prepared");
            self.counts.skipped += 1;
            return None;
        }
        self.started(position, step);
        let _ = writeln!(self.out, "{header}");
        if let Err(e) = self.store.journal(step, crate::results::JOURNAL_START) {
            self.fatal.get_or_insert(e);
        }
        let result = match step.kind {
            StepKind::Command => self.executor.command(step, &mut self.out, self.stop),
            _ => self.executor.check(step, &mut self.out, self.stop),
        };
        let _ = self.out.flush();
        let mut failed = false;
        let event = match result {
            Ok(()) => {
                self.counts.ok += 1;
                "done"
            }
            Err(_) if self.stop.load(Ordering::SeqCst) => {
                self.counts.interrupted += 1;
                "interrupted"
            }
            Err(e) => {
                self.counts.failed += 1;
                failed = true;
                self.fail_note(position, step, &e.to_string());
                "failed"
            }
        };
        if let Err(e) = self.store.journal(step, event) {
            self.fatal.get_or_insert(e);
        }
        Some(failed)
    }

    /// A run step: measured and recorded (its row, intervals and histogram), or recorded as
    /// failed without running when its prepare or before_step hook failed. Returns whether it
    /// failed, or `None` when it was refused.
    fn run_step(
        &mut self,
        position: usize,
        step: &Step,
        hook_error: Option<String>,
    ) -> Option<bool> {
        let started_at = Utc::now();
        let prepare_error = match self.datasets.get(&step.dataset) {
            Some(Dataset::PrepareFailed(msg)) => Some(format!("prepare failed: {msg}")),
            Some(Dataset::PrepareInterrupted) => {
                // Unreachable while the flag stays set; kept explicit for clarity.
                self.counts.skipped += 1;
                return None;
            }
            Some(Dataset::Unreachable { at, why }) => Some(format!(
                "skipped: the server was unreachable at {at}: {why}"
            )),
            Some(Dataset::Ready) | None => None,
        };
        if let Some(error) = prepare_error.or(hook_error) {
            let what = if error.starts_with("prepare failed") {
                "prepare failed"
            } else if error.starts_with("skipped: the server was unreachable") {
                "the server was unreachable"
            } else {
                "before_step hook failed"
            };
            let line = format!("{}: skipped, {what}", self.header(position, step));
            let _ = writeln!(self.out, "{line}");
            let _ = self.out.flush();
            self.counts.failed += 1;
            self.write_failed_run(step, started_at, &error);
            return None;
        }

        self.started(position, step);
        let header = self.header(position, step);
        let _ = writeln!(self.out, "{header}");
        let mut probe = self.cost.before(step);
        let mut ticks = self.cost.ticks(step, &mut probe);
        let mut faults = (!self.ctx.faults.is_empty()).then(|| {
            let ctx = self.hooks.context(&self.run_dir, step, hooks::Level::Step);
            StepFaults::new(&self.ctx.faults, step, &ctx, self.hooks.log_path())
        });
        let mut observer = RunObserver {
            store: &mut self.store,
            step,
            position,
            error: None,
            metrics: self.ctx.watch.metrics.as_deref(),
            events: self.ctx.watch.events.as_deref(),
            ticks: ticks.as_mut(),
            faults: faults.as_mut(),
        };
        let mut result = self
            .executor
            .run(step, &mut self.out, &mut observer, self.stop);
        let interval_error = observer.error;
        let fault_failure = faults.and_then(|f| self.faults_done(step, f, result.as_mut().ok()));
        if let Some(t) = ticks {
            self.cost.end_ticks(t, &mut probe);
        }
        for w in self.cost.after(step, probe, result.as_mut().ok()) {
            self.progress.error(&format!("[sbsuite] warning: {w}"));
        }
        let _ = self.out.flush();
        let ran = Ran {
            result,
            interval_error,
            fault_failure,
        };
        Some(self.record_run(position, step, started_at, ran))
    }

    /// The step's faults are over (#30): their cells go into `outcome`, their rows to
    /// faults.csv and a line each after the report. Returns why the row fails, if a fault did
    /// not do what was asked.
    fn faults_done(
        &mut self,
        step: &Step,
        faults: StepFaults,
        outcome: Option<&mut StepOutcome>,
    ) -> Option<String> {
        let done = faults.finish();
        if let Some(o) = outcome {
            o.metrics.extend(done.metrics.iter().copied());
        }
        if let Err(e) =
            super::faults::write_rows(&self.run_dir, self.store.run_id(), step, &done.rows)
        {
            self.progress.error(&format!(
                "[sbsuite] warning: {} not written: {e}",
                self.run_dir.join(super::faults::FAULTS_FILE).display()
            ));
        }
        for line in &done.lines {
            let _ = writeln!(self.out, "{line}");
        }
        done.failure
    }

    /// Counts and records a run that executed (its row and histogram; its intervals are
    /// already written), and feeds its `stop_when` sweep. Returns whether it failed.
    fn record_run(
        &mut self,
        position: usize,
        step: &Step,
        started_at: DateTime<Utc>,
        ran: Ran,
    ) -> bool {
        let Ran {
            result,
            interval_error,
            fault_failure,
        } = ran;
        let (status, outcome, error) = match &result {
            Ok(o) if o.interrupted => (RowStatus::Interrupted, Some(o), o.cut_short.clone()),
            Ok(o) => match rate_not_offered(step, o)
                .filter(|_| self.ctx.rate_overflow == RateOverflow::Fail)
                .or(fault_failure)
            {
                // The numbers stay on the row, but a run that never offered its load must not
                // be compared (or swept) as if it had.
                Some(why) => (RowStatus::Failed, Some(o), Some(why)),
                None => (RowStatus::Ok, Some(o), None),
            },
            // Threads of the step still running: whatever the stop, the row failed.
            Err(e @ EngineError::Unstoppable(_)) => (RowStatus::Failed, None, Some(e.to_string())),
            Err(e) if self.stop.load(Ordering::SeqCst) => {
                (RowStatus::Interrupted, None, Some(e.to_string()))
            }
            Err(e) => (RowStatus::Failed, None, Some(e.to_string())),
        };
        if matches!(result, Err(EngineError::Unstoppable(_))) && !self.halted {
            // Measuring anything more in this process would measure under the stuck threads.
            self.halted = true;
            self.progress.error(
                "[sbsuite] worker threads of the last step could not be stopped: no further \
                 steps run in this process; cleanups and restores still run",
            );
        }
        match status {
            RowStatus::Ok => self.counts.ok += 1,
            RowStatus::Interrupted => self.counts.interrupted += 1,
            RowStatus::Failed => {
                self.counts.failed += 1;
                self.fail_note(position, step, error.as_deref().unwrap_or_default());
            }
        }
        if let (Some(m), Some(o)) = (&self.ctx.watch.metrics, outcome) {
            m.run_ended(position, o);
        }
        let knee = match (status, outcome) {
            (RowStatus::Ok, Some(o)) => self.sweeps.observe(step, o),
            _ => None,
        };
        if let (RowStatus::Ok, Some(o)) = (status, outcome)
            && let Some(why) = self.repeats.observe(step, o)
        {
            let _ = writeln!(self.out, "[sbsuite] {}: {why}", self.header(position, step));
        }
        // #29: a run whose throughput drifted is kept, but never silently.
        if let Some(o) = outcome
            && let Some(t) = o
                .steady
                .trend
                .filter(|t| t.verdict == crate::stats::steady::Verdict::No)
        {
            let _ = writeln!(
                self.out,
                "[sbsuite] WARNING: {}: {}",
                self.header(position, step),
                crate::stats::steady::unsteady_text(t.pct_per_min, o.seconds)
            );
        }
        let row = RunRow {
            step,
            started_at,
            status,
            outcome,
            error: error.as_deref(),
            knee: knee.as_deref(),
        };
        if self.ctx.watch.events.is_some() {
            self.row = Some(self.store.row_object(&row));
        }
        if let Err(e) = self.store.write_run(&row) {
            self.fatal = Some(e);
        } else if let Some(e) = interval_error {
            self.fatal = Some(e);
        }
        // A step cut short without a stop request (forced_shutdown: a stuck server) keeps its
        // `interrupted` row and numbers, but counts as a failure for `on_error`.
        let cut_short = status == RowStatus::Interrupted
            && !self.stop.load(Ordering::SeqCst)
            && outcome.is_some_and(|o| o.cut_short.is_some());
        if cut_short {
            self.fail_note(position, step, error.as_deref().unwrap_or_default());
        }
        status == RowStatus::Failed || cut_short
    }

    /// A row for a run that did not execute because something before it failed.
    fn write_failed_run(&mut self, step: &Step, started_at: DateTime<Utc>, error: &str) {
        let row = RunRow {
            step,
            started_at,
            status: RowStatus::Failed,
            outcome: None,
            error: Some(error),
            knee: None,
        };
        if self.ctx.watch.events.is_some() {
            self.row = Some(self.store.row_object(&row));
        }
        if let Err(e) = self.store.write_run(&row) {
            self.fatal = Some(e);
        }
    }

    /// The after_step hook, then what `on_error` makes of a failed step.
    fn after_step(&mut self, step: &Step, hook_ctx: &hooks::Context, failed: bool) {
        self.settle();
        if let Err(e) = self.hooks.run("after_step", hook_ctx) {
            self.hook_failed(e);
        }
        if !failed {
            return;
        }
        match self.ctx.on_error {
            OnError::Continue => {}
            OnError::Skip => {
                if self.skip_runs.insert(step.dataset) {
                    self.progress.error(&format!(
                        "[sbsuite] on_error = skip: the remaining runs of dataset {} are skipped",
                        step.dataset
                    ));
                }
            }
            OnError::Stop => {
                if !self.halted {
                    self.progress.error(
                        "[sbsuite] on_error = stop: no further runs; cleanups and restores still run",
                    );
                }
                self.halted = true;
            }
        }
    }

    /// `[sbsuite] step k/N kind name failed: what`.
    fn fail_note(&self, position: usize, step: &Step, what: &str) {
        self.progress.error(&format!(
            "[sbsuite] step {}/{} {} {} failed: {what}",
            position + 1,
            self.plan.steps.len(),
            step.kind.as_str(),
            step.name
        ));
    }

    /// A hook failure by its policy: counts as a failure unless `continue`; `stop` halts.
    /// Returns whether what the hook guards must not go on.
    fn hook_failed(&mut self, e: HookFailure) -> bool {
        if e.interrupted {
            // Not the hook's fault: the run is stopping, and what the hook guards must not go on.
            self.progress
                .error(&format!("[sbsuite] {} (interrupted)", e.message));
            return true;
        }
        match e.policy {
            OnError::Continue => {
                self.progress.error(&format!(
                    "[sbsuite] warning: {} (on_error = continue)",
                    e.message
                ));
                false
            }
            OnError::Skip => {
                self.counts.failed += 1;
                self.progress
                    .error(&format!("[sbsuite] {} (on_error = skip)", e.message));
                true
            }
            OnError::Stop => {
                self.counts.failed += 1;
                self.halted = true;
                self.progress.error(&format!(
                    "[sbsuite] {} (on_error = stop: no further runs; cleanups and restores still run)",
                    e.message
                ));
                true
            }
        }
    }

    /// Leaves the last dataset and variant, runs after_suite, and sums the run up.
    pub(super) fn finish(mut self) -> Result<RunSummary, RunError> {
        self.settle();
        self.leave_dataset();
        self.leave_variant(self.last_step);
        if let Err(e) = self
            .hooks
            .run("after_suite", &self.hooks.base(&self.run_dir))
        {
            self.hook_failed(e);
        }
        let StepLoop {
            out,
            progress,
            sweeps,
            repeats,
            store,
            fatal,
            counts,
            stop,
            ..
        } = self;
        drop(out);
        progress.finish();
        for k in &sweeps.knees {
            progress.note(&format!("[sbsuite] stop_when: {k}"));
        }
        for line in repeats.summary() {
            progress.note(&line);
        }
        let fatal = fatal.or_else(|| {
            repeats
                .write(store.dir())
                .err()
                .map(|source| ResultsError::Io {
                    path: store.dir().join(super::repeat::REPETITIONS_FILE),
                    source,
                })
        });

        if let Some(e) = fatal {
            return Err(e.into());
        }
        let summary = RunSummary {
            run_dir: store.dir().to_path_buf(),
            steps_ok: counts.ok,
            steps_failed: counts.failed,
            interrupted: stop.load(Ordering::SeqCst),
            run_id: store.run_id().to_string(),
            results_csv: store.results_path().to_path_buf(),
            steps_skipped: counts.skipped,
            steps_kept: counts.kept,
            steps_kept_failed: counts.kept_failed,
            steps_interrupted: counts.interrupted,
        };
        progress.note(&closing_note(&summary));
        Ok(summary)
    }
}

/// What a run step left for its row: the engine's result, the first intervals.csv write
/// error, and why its faults fail it (#30).
struct Ran {
    result: Result<StepOutcome, EngineError>,
    interval_error: Option<ResultsError>,
    fault_failure: Option<String>,
}

/// What a run step's engine reports while it runs: each interim sample, with the server's
/// counters read at its tick, goes to intervals.csv (the first write error is kept for the end
/// of the step), each live sample to the metrics.
struct RunObserver<'s> {
    store: &'s mut ResultStore,
    step: &'s Step,
    position: usize,
    error: Option<ResultsError>,
    metrics: Option<&'s super::metrics::Metrics>,
    events: Option<&'s super::events::Events>,
    /// The server's counters at each tick (#29), when the step reads them.
    ticks: Option<&'s mut super::cost::Ticks>,
    /// The step's `[[faults]]` (#30): started with the measured part, fed every live sample.
    faults: Option<&'s mut StepFaults>,
}

impl StepObserver for RunObserver<'_> {
    fn interval(&mut self, sample: &IntervalSample) {
        // A step with groups (#31): the server's rates go with the first group's intervals
        // (the server's counters are the whole step's; one reading per tick).
        let cells = self
            .ticks
            .as_deref_mut()
            .filter(|_| sample.group.unwrap_or(0) == 0)
            .map(|t| t.interval(sample))
            .unwrap_or_default();
        let with_cells;
        let sample = if cells.is_empty() {
            sample
        } else {
            let mut s = sample.clone();
            s.metrics.extend(cells);
            with_cells = s;
            &with_cells
        };
        if self.error.is_none()
            && let Err(e) = self.store.write_interval(self.step, sample)
        {
            self.error = Some(e);
        }
        if let Some(e) = self.events {
            e.interval(self.step, sample);
        }
        if let Some(m) = self.metrics
            && self.ticks.is_some()
        {
            m.server(self.position, &sample.metrics);
        }
    }

    fn measuring(&mut self) {
        if let Some(t) = self.ticks.as_deref_mut() {
            t.measuring();
        }
        if let Some(f) = self.faults.as_deref_mut() {
            f.measuring();
        }
    }

    /// The metrics' pace, or the faults' finer one (the metrics then get every sample).
    fn live_every(&self) -> Option<std::time::Duration> {
        if self.faults.is_some() {
            return Some(super::faults::TICK);
        }
        self.metrics.map(|_| super::metrics::LIVE_EVERY)
    }

    fn live(&mut self, sample: &LiveSample<'_>) {
        if let Some(f) = self.faults.as_deref_mut() {
            f.live(sample);
        }
        if let Some(m) = self.metrics {
            m.live(self.position, sample);
        }
    }
}

/// `[sbsuite] run <id>: N steps ok, M failed…` and where the results are.
fn closing_note(s: &RunSummary) -> String {
    let count = |n: usize, what: &str| {
        if n > 0 {
            format!(", {n} {what}")
        } else {
            String::new()
        }
    };
    format!(
        "[sbsuite] run {}{}: {} steps ok, {} failed{}{}{}\n[sbsuite] results: {}",
        s.run_id,
        if s.interrupted { " (interrupted)" } else { "" },
        s.steps_ok,
        s.steps_failed,
        count(s.steps_interrupted, "interrupted"),
        count(s.steps_skipped, "skipped"),
        match s.steps_kept_failed {
            0 => count(s.steps_kept, "kept from before the resume"),
            f => format!(
                ", {} kept from before the resume ({f} of them failed)",
                s.steps_kept
            ),
        },
        s.results_csv.display()
    )
}

/// The rows a resumed run kept, by step index (for [`Sweeps::replay`]). The run directory was
/// just checked by [`ResultStore::reopen`]; a file that cannot be read again replays nothing.
fn kept_rows(dir: &std::path::Path) -> HashMap<usize, crate::results::load::Row> {
    crate::results::load::load(dir, crate::results::load::Parts::Results)
        .map(|run| {
            run.rows
                .into_iter()
                .filter_map(|row| Some((row.get("step").parse().ok()?, row)))
                .collect()
        })
        .unwrap_or_default()
}

/// How many of the steps a resume keeps (not in `resume.todo`) had failed: `failed` rows, and
/// prepare, check and command steps whose last journal event is `failed` (a failed check of a
/// dataset already cleaned up is not run again). A cleanup is always redone unless it passed.
fn kept_failures(
    dir: &std::path::Path,
    resume: &ResumePlan,
    kept: &HashMap<usize, crate::results::load::Row>,
) -> usize {
    let rows = kept
        .iter()
        .filter(|(i, row)| !resume.todo.contains(i) && row.get("status") == "failed")
        .count();
    let steps = crate::results::failed_in_journal(dir)
        .into_iter()
        .filter(|(i, _)| !resume.todo.contains(i))
        .count();
    rows + steps
}

/// Why a run that dropped `rate` arrivals (its [`DROPPED`] metric) did not measure what was
/// asked, with the fix: the `error` of its row under `rate_overflow = "fail"`. `None` when
/// nothing was dropped (or the run had no `rate`).
fn rate_not_offered(step: &Step, o: &StepOutcome) -> Option<String> {
    let dropped = metric(&o.metrics, DROPPED).filter(|&d| d > 0.0)?;
    let option = |key| {
        step.options
            .get(key)
            .map_or_else(|| "?".to_string(), |v| v.to_string())
    };
    Some(format!(
        "the target rate {}/s could not be offered: {dropped} arrivals were dropped because all \
         {} threads were busy and the event queue ({RATE_QUEUE_SLOTS} slots) was full; lower \
         `rate` or raise `threads`, or set [suite] rate_overflow = \"record\" to keep the row \
         ok with the count in `dropped`",
        option("rate"),
        option("threads"),
    ))
}
