//! `[[faults]]` on the timeline of every run step (#30): a shell command or SQL fired at `at`
//! seconds into the measured part while the workers run, and what it did to them measured
//! into results.csv's `fault_*` columns (the first fault) and `faults.csv` (every fault).
//!
//! Shape, and why:
//! * **Fired from threads of their own**, one per fault, started when the measured part begins
//!   ([`StepFaults::measuring`], the step observer's callback) and sleeping until their moment:
//!   the collector's schedule and the workers are not touched, and a command that takes long
//!   does not delay the next fault. Each thread records when its fault really fired.
//! * **Measured from the collector's live samples** ([`timeline`]): while a step has faults
//!   the collector samples it every [`TICK`]; nothing is added to the workers' hot path.
//! * **A command runs like a hook** ([`super::shell`]: `sh -c`, its own process group, its
//!   timeout, output and status to `hooks.log`); **SQL runs on a connection of its own** to the
//!   step's target, opened when the fault fires, never a worker's. When the step ends
//!   ([`StepFaults::finish`]), a fault not yet due is called off and a statement still running
//!   is cancelled on the server (a database undoes it); a command still running is given the
//!   rest of its timeout and then killed with its process group, as a hook is. Not killed at
//!   once: a fault command acts on the system (restart a server, fail over), and one cut off
//!   half-way leaves it broken for every later step — a step that fails at the fault's first
//!   error (a Lua script without the lost-connection codes in `ignore_errors`) would otherwise
//!   leave its server down. A stop request kills it at once (the interrupt registry). So
//!   nothing of a step outlives it.
//! * **A fault that did not do what was asked fails the row** (a failed or timed-out command, a
//!   failed statement, a fault the step ended before, or one still running at its end), like a
//!   `rate` that could not be offered: its figures stay, but a comparison must not take the row
//!   for a run with the fault.
//! * What depends on each run step is checked on the plan before anything runs
//!   ([`check_plan`]): `at` before the step's `time`, a server for `sql`, no `reconnect`.

mod timeline;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::hooks::{Context, append_log};
use super::shell::{self, Ended};
use crate::db::interrupt::{Scope, guarded_in};
use crate::db::{Connector, Target};
use crate::engine::{FAULT_COLUMNS, LiveSample, Metrics};
use crate::plan::{Plan, Step, StepKind};
use crate::results::csv::fmt_float;
use crate::source::{ConfigError, Seg};
use crate::suite::Suite;
use crate::suite::raw::RawFault;
use crate::value::Value;

pub use timeline::TICK;
use timeline::{Figures, Reference, Tick, Timeline};

/// The file of a run directory with one row per fault per run step.
pub const FAULTS_FILE: &str = "faults.csv";

/// Its columns, in order.
pub const FAULTS_COLUMNS: &[&str] = &[
    "run_id",
    "step",
    "name",
    "variant",
    "fault",
    "kind",
    "at",
    "fired_at_s",
    "status",
    "first_error_s",
    "error_window_s",
    "first_ok_s",
    "p99_recovered_s",
    "lost_txn",
    "pre_tps",
    "pre_p99_ms",
    "tolerance_pct",
    "error",
];

/// What depends on each run step, checked before anything runs (`plan`, `validate`, `run`):
/// every run step has a time limit (with `[[phases]]`: its measured phases' total) longer than
/// each fault's `at`, a server for a fault's
/// `sql`, and no `reconnect` (sysbench's reconnects on purpose, which the figures would count
/// as failures). The first problem, at the fault's key.
pub fn check_plan(suite: &Suite, plan: &Plan) -> Result<(), ConfigError> {
    let runs = || plan.steps.iter().filter(|s| s.kind == StepKind::Run);
    for (i, f) in suite.faults.iter().enumerate() {
        let name = f.label(i);
        let at = |k: &str| [Seg::key("faults"), Seg::Index(i), Seg::key(k)];
        let step_text = |s: &Step| format!("step {} `{}`", s.index, s.name);
        for step in runs() {
            let option = |k: &str| step.options.get(k).and_then(Value::as_i64).unwrap_or(0);
            // With `[[phases]]` the measured part is the phases after the warmup ones.
            let time = if step.phases.is_empty() {
                option("time")
            } else {
                let measured: f64 = step
                    .phases
                    .iter()
                    .filter(|p| !p.warmup)
                    .map(|p| p.duration.as_secs_f64())
                    .sum();
                measured.ceil() as i64
            };
            if time <= 0 {
                return Err(suite
                    .error(
                        &at("at"),
                        format!(
                            "fault `{name}` needs a time limit, but {} has time = 0 (no limit)",
                            step_text(step)
                        ),
                    )
                    .with_help(
                        "set `time` (e.g. [defaults] time = 60): a fault fires `at` seconds \
                         into the measured part of a timed run",
                    ));
            }
            if f.at >= time as f64 {
                return Err(suite
                    .error(
                        &at("at"),
                        format!(
                            "fault `{name}` fires at {} s, not before the end of {} (time = {time})",
                            f.at,
                            step_text(step)
                        ),
                    )
                    .with_help(format!(
                        "lower `at` below every run step's time (here {time} s), leaving time to \
                         see the recovery, or raise `time`"
                    )));
            }
            if f.sql.is_some() && !step.target.as_ref().is_some_and(Target::has_server) {
                return Err(suite
                    .error(
                        &at("sql"),
                        format!(
                            "fault `{name}` runs SQL, but {} has no MySQL/MariaDB or PostgreSQL [target]",
                            step_text(step)
                        ),
                    )
                    .with_help(
                        "a fault's sql runs on a server connection of its own; use `command` \
                         for a workload without a server",
                    ));
            }
            let reconnect = option("reconnect");
            if reconnect > 0 {
                return Err(suite
                    .error(
                        &[Seg::key("faults"), Seg::Index(i)],
                        format!(
                            "fault `{name}`: {} reconnects every {reconnect} events (`reconnect`), which the fault figures would count as failures",
                            step_text(step)
                        ),
                    )
                    .with_help("remove `reconnect` from the suite, or the [[faults]]"));
            }
        }
    }
    Ok(())
}

/// `plan`'s lines for the suite's faults (empty without any): each one's moment and what it
/// runs, as written (templates unrendered: they see each step's values).
pub fn plan_text(faults: &[RawFault]) -> String {
    if faults.is_empty() {
        return String::new();
    }
    let mut text = String::from("Faults in every run step (seconds into its measured part):\n");
    for (i, f) in faults.iter().enumerate() {
        let what = match (&f.command, &f.sql) {
            (Some(c), _) => format!("command `{c}` (timeout {} s)", f.timeout),
            (None, Some(sql)) => format!("sql `{}`", sql.list().join("; ")),
            (None, None) => "nothing".to_string(),
        };
        text.push_str(&format!(
            "  {} at {} s: {what}, p99 tolerance {}%\n",
            f.label(i),
            fmt_float(f.at, 4),
            fmt_float(f.tolerance, 4)
        ));
    }
    text
}

/// What a fault does, rendered for its step.
#[derive(Clone)]
enum Action {
    Command(String),
    Sql(Vec<String>, Box<Target>),
}

/// One fault of a step: its settings and what it runs (or why it cannot run).
struct Armed {
    name: String,
    at: f64,
    tolerance: f64,
    timeout: Duration,
    kind: &'static str,
    action: Result<Action, String>,
}

/// How a fault went, as its thread records it.
#[derive(Clone, Debug, Default, PartialEq)]
enum Status {
    /// Not due yet (or called off when the step ended first).
    #[default]
    Waiting,
    Running,
    Ok,
    /// It failed; why.
    Failed(String),
}

/// A fault's record: when it fired (seconds from the start of the measured part) and how it
/// went.
#[derive(Clone, Debug, Default)]
struct Fired {
    at: Option<f64>,
    status: Status,
}

/// What the step's observer and the fault threads share.
struct Shared {
    /// The step ended: faults not yet due are called off.
    ended: AtomicBool,
    fired: Mutex<Vec<Fired>>,
    /// Wakes the threads that wait for their moment.
    wake: Condvar,
    /// The faults' SQL connections: cancelled on the server when the step ends.
    scope: Scope,
}

impl Shared {
    fn fired(&self) -> MutexGuard<'_, Vec<Fired>> {
        self.fired.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The faults of one run step, from before it runs to its figures.
pub struct StepFaults {
    armed: Vec<Armed>,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    /// The start of the measured part (the faults' clock), once it began.
    t0: Option<Instant>,
    timeline: Timeline,
    /// Each fault's reference, once it was seen fired.
    references: Vec<Option<Option<Reference>>>,
    /// The latest firing seen: a later fault's reference starts after it.
    last_fired: f64,
    log: PathBuf,
}

/// What a step's faults did: its results.csv cells, its faults.csv rows, the lines for its
/// report, and why the row fails (a fault that did not do what was asked).
pub struct FaultsDone {
    pub metrics: Metrics,
    pub rows: Vec<FaultRow>,
    pub lines: Vec<String>,
    pub failure: Option<String>,
}

/// One fault's figures, for faults.csv.
pub struct FaultRow {
    name: String,
    kind: &'static str,
    at: f64,
    fired_at: Option<f64>,
    status: &'static str,
    figures: Figures,
    reference: Option<Reference>,
    tolerance: f64,
    error: Option<String>,
}

impl StepFaults {
    /// The suite's faults for `step`, their templates rendered with the step's hook context
    /// `ctx` (plus `fault` and `at`); they log to `log` (`hooks.log`).
    pub fn new(faults: &[RawFault], step: &Step, ctx: &Context, log: &Path) -> StepFaults {
        let armed: Vec<Armed> = faults
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let name = f.label(i);
                let mut ctx = ctx.clone();
                ctx.insert("fault".into(), name.clone().into());
                ctx.insert("at".into(), f.at.into());
                let render = |t: &str| {
                    let mut env = minijinja::Environment::new();
                    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
                    env.render_str(t, &ctx)
                        .map_err(|e| format!("its template cannot be rendered here: {e}"))
                };
                let action = match (&f.command, &f.sql) {
                    (Some(c), _) => render(c).map(Action::Command),
                    (None, Some(sql)) => match &step.target {
                        Some(t) => sql
                            .list()
                            .iter()
                            .map(|s| render(s))
                            .collect::<Result<Vec<_>, _>>()
                            .map(|s| Action::Sql(s, Box::new(t.clone()))),
                        None => Err("the step has no [target] for its sql".into()),
                    },
                    // Refused by validation.
                    (None, None) => Err("it has neither command nor sql".into()),
                };
                Armed {
                    name,
                    at: f.at,
                    tolerance: f.tolerance,
                    timeout: Duration::from_secs(f.timeout.max(1)),
                    kind: if f.command.is_some() {
                        "command"
                    } else {
                        "sql"
                    },
                    action,
                }
            })
            .collect();
        let first_at = armed.iter().map(|a| a.at).fold(f64::INFINITY, f64::min);
        let n = armed.len();
        StepFaults {
            armed,
            shared: Arc::new(Shared {
                ended: AtomicBool::new(false),
                fired: Mutex::new(vec![Fired::default(); n]),
                wake: Condvar::new(),
                scope: Scope::new(),
            }),
            threads: Vec::new(),
            t0: None,
            timeline: Timeline::new(if first_at.is_finite() { first_at } else { 0.0 }),
            references: vec![None; n],
            last_fired: 0.0,
            log: log.to_path_buf(),
        }
    }

    /// The measured part begins: the faults' clock starts and each fault's thread waits for
    /// its moment.
    pub fn measuring(&mut self) {
        if self.t0.is_some() {
            return;
        }
        let t0 = Instant::now();
        self.t0 = Some(t0);
        for (i, a) in self.armed.iter().enumerate() {
            let Ok(action) = a.action.clone() else {
                continue;
            };
            let shared = Arc::clone(&self.shared);
            let (name, at, timeout) = (a.name.clone(), a.at, a.timeout);
            let log = self.log.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("sbsuite-fault-{i}"))
                .spawn(move || {
                    let due = t0 + Duration::from_secs_f64(at);
                    if wait_until(&shared, due) {
                        fire(&shared, i, &name, &action, timeout, t0, &log);
                    }
                });
            match spawned {
                Ok(h) => self.threads.push(h),
                Err(e) => {
                    self.shared.fired()[i].status =
                        Status::Failed(format!("its thread could not start: {e}"))
                }
            }
        }
    }

    /// A live sample of the step: recorded, and the reference of a fault that fired since the
    /// previous one taken.
    pub fn live(&mut self, sample: &LiveSample<'_>) {
        let Some(t0) = self.t0 else {
            return;
        };
        let sql = sample.sql.unwrap_or_default();
        self.timeline.tick(
            Tick {
                t: t0.elapsed().as_secs_f64(),
                events: sample.events,
                errors: sql.errors,
                reconnects: sql.reconnects,
            },
            sample.latency_buckets,
        );
        self.take_references();
    }

    /// Takes the reference of every fault seen fired for the first time, in firing order.
    fn take_references(&mut self) {
        let mut new: Vec<(usize, f64)> = self
            .shared
            .fired()
            .iter()
            .enumerate()
            .filter(|(i, f)| self.references[*i].is_none() && f.at.is_some())
            .filter_map(|(i, f)| Some((i, f.at?)))
            .collect();
        new.sort_by(|a, b| a.1.total_cmp(&b.1));
        for (i, at) in new {
            self.references[i] = Some(self.timeline.fired(at, self.last_fired));
            self.last_fired = self.last_fired.max(at);
        }
    }

    /// The step ended: calls off what is not due, cancels the statements still running, waits
    /// for the commands still running (each at most until its timeout), and works out every
    /// fault's figures.
    pub fn finish(mut self) -> FaultsDone {
        self.shared.ended.store(true, Ordering::SeqCst);
        {
            let _held = self.shared.fired();
            self.shared.wake.notify_all();
        }
        self.shared.scope.cancel();
        self.shared.scope.sever();
        for t in std::mem::take(&mut self.threads) {
            let _ = t.join();
        }
        self.take_references();
        let fired = self.shared.fired().clone();
        let ended = self.timeline.end();
        let mut rows = Vec::new();
        let mut failures = Vec::new();
        for ((a, f), reference) in self.armed.iter().zip(&fired).zip(&self.references) {
            let reference = reference.flatten();
            let figures =
                f.at.map(|at| self.timeline.figures(at, reference, a.tolerance))
                    .unwrap_or_default();
            let (status, error) = match (&a.action, &f.status) {
                (Err(e), _) => ("failed", Some(e.clone())),
                (Ok(_), Status::Ok) => ("ok", None),
                (Ok(_), Status::Failed(e)) => ("failed", Some(e.clone())),
                (Ok(_), Status::Running) => (
                    "killed",
                    Some("it was stopped before it finished (a stop request, or its statement was still running when the step ended)".into()),
                ),
                (Ok(_), Status::Waiting) => (
                    "not fired",
                    Some(if self.t0.is_none() {
                        "the step ended before its measured part began".to_string()
                    } else {
                        format!(
                            "the measured part of the step ended after {ended:.1} s, before at = {} s",
                            a.at
                        )
                    }),
                ),
            };
            if let Some(e) = &error {
                failures.push(format!("fault `{}` {}: {e}", a.name, verb(status)));
            }
            rows.push(FaultRow {
                name: a.name.clone(),
                kind: a.kind,
                at: a.at,
                fired_at: f.at,
                status,
                figures,
                reference,
                tolerance: a.tolerance,
                error,
            });
        }
        let first = rows.iter().filter(|r| r.fired_at.is_some()).min_by(|a, b| {
            a.fired_at
                .unwrap_or(0.0)
                .total_cmp(&b.fired_at.unwrap_or(0.0))
        });
        let metrics = first.map(|r| r.metrics()).unwrap_or_default();
        let lines = rows.iter().filter_map(FaultRow::line).collect();
        FaultsDone {
            metrics,
            rows,
            lines,
            failure: (!failures.is_empty()).then(|| failures.join("; ")),
        }
    }
}

/// How `status` reads after the fault's name in a failure.
fn verb(status: &str) -> &'static str {
    match status {
        "not fired" => "did not fire",
        "killed" => "was killed",
        _ => "failed",
    }
}

impl FaultRow {
    /// results.csv's fault cells of this fault.
    fn metrics(&self) -> Metrics {
        let f = &self.figures;
        [
            self.fired_at,
            f.error_window_s,
            f.first_ok_s,
            f.p99_recovered_s,
            f.lost_txn,
        ]
        .into_iter()
        .zip(FAULT_COLUMNS)
        .filter_map(|(v, name)| Some((name, v?)))
        .collect()
    }

    /// The line printed after the step's report, for a fault that fired.
    fn line(&self) -> Option<String> {
        let at = self.fired_at?;
        let f = &self.figures;
        let secs = |v: Option<f64>, none: &str| v.map_or(none.to_string(), |s| format!("{s:.1} s"));
        Some(format!(
            "[sbsuite] fault `{}` ({}) fired at {at:.2} s: error window {}, first success after {}, p99 back within {}% after {}, {} transactions lost",
            self.name,
            self.kind,
            secs(f.error_window_s, "-"),
            secs(f.first_ok_s, "none"),
            fmt_float(self.tolerance, 2),
            secs(f.p99_recovered_s, "never (or no reference)"),
            f.lost_txn.map_or("?".to_string(), |n| format!("{n:.0}")),
        ))
    }

    /// Its faults.csv cells after the step's own (`run_id`, `step`, `name`, `variant`).
    fn cells(&self) -> Vec<String> {
        let cell = |v: Option<f64>, d: usize| v.map(|v| fmt_float(v, d)).unwrap_or_default();
        let f = &self.figures;
        vec![
            self.name.clone(),
            self.kind.to_string(),
            fmt_float(self.at, 4),
            cell(self.fired_at, 4),
            self.status.to_string(),
            cell(f.first_error_s, 4),
            cell(f.error_window_s, 4),
            cell(f.first_ok_s, 4),
            cell(f.p99_recovered_s, 4),
            cell(f.lost_txn, 0),
            cell(self.reference.map(|r| r.tps), 4),
            cell(self.reference.map(|r| r.p99_ms), 6),
            fmt_float(self.tolerance, 4),
            self.error.clone().unwrap_or_default(),
        ]
    }
}

/// Appends `rows` of `step` to `faults.csv` in `run_dir` (its header first when the file is
/// new), durably.
pub fn write_rows(
    run_dir: &Path,
    run_id: &str,
    step: &Step,
    rows: &[FaultRow],
) -> std::io::Result<()> {
    use std::io::Write;
    let path = run_dir.join(FAULTS_FILE);
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)?;
    let new = file.metadata()?.len() == 0;
    let mut w = ::csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    if new {
        w.write_record(FAULTS_COLUMNS)?;
    }
    for r in rows {
        let head = [
            run_id.to_string(),
            step.index.to_string(),
            step.name.clone(),
            step.variant.clone(),
        ];
        w.write_record(head.into_iter().chain(r.cells()))?;
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    file.write_all(&bytes)?;
    file.sync_data()
}

/// Waits until `due`; `false` when the step ended first.
fn wait_until(shared: &Shared, due: Instant) -> bool {
    let mut held = shared.fired();
    loop {
        if shared.ended.load(Ordering::SeqCst) {
            return false;
        }
        let now = Instant::now();
        if now >= due {
            return true;
        }
        held = shared
            .wake
            .wait_timeout(held, due - now)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
}

/// Fires fault `i`: runs its action, records when it fired and how it went, and logs it to
/// `log` as `fault NAME`.
fn fire(
    shared: &Shared,
    i: usize,
    name: &str,
    action: &Action,
    timeout: Duration,
    t0: Instant,
    log: &Path,
) {
    let key = format!("fault {name}");
    let record = |at: Option<f64>, status: Status| {
        let mut all = shared.fired();
        if at.is_some() {
            all[i].at = at;
        }
        all[i].status = status;
    };
    let started = Instant::now();
    match action {
        Action::Command(command) => {
            record(
                Some(started.duration_since(t0).as_secs_f64()),
                Status::Running,
            );
            let result = shell::run(command, timeout);
            let (status, text) = match &result {
                Ok((Ended::Exited(s), _)) if s.success() => (Status::Ok, s.to_string()),
                Ok((Ended::Exited(s), out)) => {
                    let out = String::from_utf8_lossy(out);
                    let tail: String = out.trim().chars().rev().take(300).collect();
                    let tail: String = tail.chars().rev().collect();
                    let why = format!(
                        "`{command}` exited with {s}{}{tail} (full output in hooks.log)",
                        if tail.is_empty() { "" } else { ": " }
                    );
                    (Status::Failed(why), format!("{s} (failed)"))
                }
                Ok((Ended::TimedOut, _)) => {
                    let secs = timeout.as_secs();
                    (
                        Status::Failed(format!(
                            "`{command}` did not finish within {secs} s (its timeout) and was killed"
                        )),
                        format!("killed after {secs} s (timeout) (failed)"),
                    )
                }
                // A stop request killed it: the status stays `Running`, which the figures
                // call killed.
                Ok((Ended::Interrupted, _)) => (
                    Status::Running,
                    "killed by a stop request (interrupted)".to_string(),
                ),
                Err(e) => (Status::Failed(e.clone()), e.clone()),
            };
            let output = result.as_ref().map(|r| r.1.as_slice()).unwrap_or_default();
            append_log(log, &key, command, &text, started.elapsed(), output);
            record(None, status);
        }
        Action::Sql(statements, target) => {
            let text = statements.join("; ");
            let conn = Connector::new(target.as_ref().clone())
                .connect()
                .map(|c| guarded_in(c, &shared.scope));
            let at = t0.elapsed().as_secs_f64();
            let (status, said) = match conn {
                Err(e) => {
                    let why = format!("no connection to {} for its sql: {e}", target.endpoint(0));
                    (Status::Failed(why.clone()), why)
                }
                Ok(mut conn) => {
                    record(Some(at), Status::Running);
                    let mut outcome = (Status::Ok, "done".to_string());
                    for s in statements {
                        if let Err(e) = conn.query(s) {
                            outcome = if shared.ended.load(Ordering::SeqCst) {
                                (
                                    Status::Running,
                                    format!("`{s}` cancelled when the step ended"),
                                )
                            } else {
                                let why = format!("`{s}` failed: {e}");
                                (Status::Failed(why.clone()), why)
                            };
                            break;
                        }
                    }
                    conn.close();
                    outcome
                }
            };
            append_log(log, &key, &text, &said, started.elapsed(), &[]);
            record(Some(at), status);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::raw::Statements;

    fn fault(at: f64, command: Option<&str>, sql: Option<&str>) -> RawFault {
        RawFault {
            name: None,
            at,
            command: command.map(str::to_string),
            sql: sql.map(|s| Statements::One(s.into())),
            tolerance: 20.0,
            timeout: 5,
        }
    }

    fn step() -> Step {
        Step {
            index: 3,
            kind: StepKind::Run,
            name: "cpu-t1".into(),
            variant: "default".into(),
            workload: "cpu".into(),
            spec: None,
            dataset: 0,
            repetition: 1,
            params: Default::default(),
            options: Default::default(),
            command: None,
            estimated_seconds: None,
            phases: Vec::new(),
            groups: Vec::new(),
            target: None,
        }
    }

    /// Feeds `faults` a flat series (10 events and 1 ms per tick) for `secs`, as the collector
    /// would, then finishes.
    fn run(faults: &mut StepFaults, secs: f64) {
        faults.measuring();
        let mut buckets = vec![0u64; crate::stats::BUCKETS];
        buckets[100] = 10;
        let start = Instant::now();
        let mut events = 0;
        while start.elapsed().as_secs_f64() < secs {
            std::thread::sleep(TICK);
            events += 10;
            faults.live(&LiveSample {
                elapsed_s: 0.0,
                threads: 1,
                events,
                eps: 0.0,
                sql: None,
                latency_buckets: &buckets,
            });
        }
    }

    #[test]
    fn commands_fire_on_time_log_and_are_measured() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("hooks.log");
        let mut ctx = Context::new();
        ctx.insert("step".into(), "cpu-t1".into());
        let mut faults = StepFaults::new(
            &[
                fault(1.2, Some("echo {{ fault }} {{ step }} {{ at }}"), None),
                fault(1.5, Some("exit 3"), None),
                fault(60.0, Some("true"), None),
            ],
            &step(),
            &ctx,
            &log,
        );
        run(&mut faults, 2.5);
        let done = faults.finish();
        let at = done.rows[0].fired_at.unwrap();
        assert!((1.2..1.5).contains(&at), "{at}");
        assert_eq!(done.rows[0].status, "ok");
        assert_eq!(done.rows[0].figures.error_window_s, Some(0.0));
        assert_eq!(done.rows[1].status, "failed");
        assert_eq!(done.rows[2].status, "not fired");
        let failure = done.failure.unwrap();
        assert!(
            failure.contains("fault `fault2` failed: `exit 3` exited with exit status: 3"),
            "{failure}"
        );
        assert!(
            failure.contains("fault `fault3` did not fire: the measured part"),
            "{failure}"
        );
        assert_eq!(done.metrics[0], ("fault_at_s", at));
        assert_eq!(done.metrics[1], ("fault_error_window_s", 0.0));
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(
            text.contains("fault fault1: echo fault1 cpu-t1 1.2\nfault1 cpu-t1 1.2\n"),
            "{text}"
        );
        assert!(
            text.contains("=== fault fault2: exit status: 3 (failed)"),
            "{text}"
        );
        write_rows(dir.path(), "r1", &step(), &done.rows).unwrap();
        let csv = std::fs::read_to_string(dir.path().join(FAULTS_FILE)).unwrap();
        let mut lines = csv.lines();
        assert_eq!(lines.next().unwrap(), FAULTS_COLUMNS.join(","));
        assert!(
            lines
                .next()
                .unwrap()
                .starts_with("r1,3,cpu-t1,default,fault1,command,1.2,1.")
        );
        assert_eq!(csv.lines().count(), 4);
    }

    #[test]
    fn a_command_still_running_at_the_end_gets_its_timeout_then_dies_with_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let pid = dir.path().join("pid");
        let mut late = fault(1.0, Some("sleep 1; echo late"), None);
        late.timeout = 30;
        let mut stuck = fault(
            1.0,
            Some(&format!("sleep 60 & echo $! > {}; wait", pid.display())),
            None,
        );
        stuck.timeout = 2;
        let mut faults = StepFaults::new(
            &[late, stuck],
            &step(),
            &Context::new(),
            &dir.path().join("hooks.log"),
        );
        run(&mut faults, 1.3);
        let started = Instant::now();
        let done = faults.finish();
        assert!(started.elapsed() < Duration::from_secs(10));
        // Finished after the step ended: waited for, and fine.
        assert_eq!(done.rows[0].status, "ok");
        assert_eq!(done.rows[1].status, "failed");
        assert!(
            done.failure
                .unwrap()
                .contains("did not finish within 2 s (its timeout) and was killed"),
        );
        let pid: i32 = std::fs::read_to_string(&pid)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            crate::runner::shell::tests::gone_within(pid, Duration::from_secs(10)),
            "sleep {pid} survived its fault"
        );
    }

    #[test]
    fn plan_lists_each_fault_as_written() {
        let mut sql = fault(20.0, None, Some("FLUSH TABLES"));
        sql.name = Some("flush".into());
        let text = plan_text(&[fault(6.5, Some("sh r.sh {{ step }}"), None), sql]);
        assert_eq!(
            text,
            "Faults in every run step (seconds into its measured part):\n  fault1 at 6.5 s: \
             command `sh r.sh {{ step }}` (timeout 5 s), p99 tolerance 20%\n  flush at 20 s: \
             sql `FLUSH TABLES`, p99 tolerance 20%\n"
        );
        assert_eq!(plan_text(&[]), "");
    }

    #[test]
    fn an_unrenderable_template_fails_the_fault_without_firing() {
        let dir = tempfile::tempdir().unwrap();
        let mut faults = StepFaults::new(
            &[fault(1.0, Some("echo {{ nope }}"), None)],
            &step(),
            &Context::new(),
            &dir.path().join("hooks.log"),
        );
        run(&mut faults, 1.3);
        let done = faults.finish();
        assert_eq!(done.rows[0].status, "failed");
        assert!(done.failure.unwrap().contains("cannot be rendered"));
        assert!(done.metrics.is_empty());
    }
}
