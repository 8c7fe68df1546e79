//! The runtime of a sysbench Lua script: its [`WorkloadSpec`] ([`spec_for`]) and its
//! [`Workload`] ([`LuaWorkload`]), so that the planner, the runner and `sbsuite sysbench` run
//! a script like any built-in workload.
//!
//! sysbench's lifecycle (reference §1), mapped onto the driver:
//! * the **main state** (tid 0) is built on first use, with `sysbench.cmdline.command` set to
//!   what the step does (`run`, `prepare`, a custom command): it lives on a [`home::Home`]
//!   thread for the whole step, because a Lua state cannot leave its thread and the workload
//!   must be `Sync` (see `home`'s doc). It runs `init()` in [`Workload::start`] (before the
//!   banner, as sysbench does), the final `report_cumulative` hook, `done()`, `prepare`/
//!   `cleanup` and serial commands.
//! * each **worker** builds its own state on its thread in [`Workload::new_worker`] (tid = its
//!   index, its generator `Rng::for_thread(seed, id)`), calls `thread_init(tid)`, runs
//!   `thread_run(tid)` (the prelude's default loop or the script's own) inside
//!   [`ctx::with_loop`] so `sb_more_events`/`sb_event_start`/`sb_event_stop` drive the
//!   driver's [`EventLoop`], and calls `thread_done(tid)` when it ends.
//! * a **report state** (tid = threads, on its own home) runs `report_intermediate` and the
//!   checkpoints' `report_cumulative`, built only when the script set such a hook.
//! * `done()` follows the final report ([`Workload::report_after`] or [`Workload::own_report`]),
//!   or, after a failed run, runs when the workload drops (not after a failed `init` or
//!   `thread_init`, as in sysbench).
//!
//! Errors keep sysbench's words (``FATAL: `init' function failed: file:line: msg``) and add
//! the Lua traceback after them; they fail the step, never panic.

mod command;
mod home;
mod report;

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use self::home::{Home, StateConf};
use self::report::{Collector, Hooks, Stat, Tally};
use super::ctx::{self, Counters, CtxGuard, LuaShared};
use super::state::{self, Role};
use super::stop::State;
use super::{LuaError, OptVal, OptValues, Script, options};
use crate::db::interrupt::{Parts, Registration};
use crate::engine::config::GENERAL;
use crate::engine::driver::{Admin, EventLoop, EventResult, Scope, Worker, Workload};
use crate::engine::option::{Kind, OptSpec};
use crate::engine::random::{Distribution, Rng, UniqueSequence};
use crate::engine::spec::{DataSpec, Setup, WorkloadSpec, never};
use crate::engine::{Definition, EngineError};
use crate::engine::{IntervalSample, SqlCounters, StepOutcome};

/// What the spec of a Lua script carries ([`WorkloadSpec::definition`]).
#[derive(Debug)]
pub struct LuaDef {
    pub script: Script,
    /// `sysbench.cmdline.argv`: the command line as typed, program name first.
    pub argv: Vec<String>,
    /// A legacy script (no declared options): the command line's options it does not
    /// declare, accepted as strings as sysbench does (`sysbench.opt.NAME` and a global).
    pub extra: Vec<String>,
}

/// The spec of a script (leaked: it lives as long as the process, like the custom
/// workloads'). Its name is the script path as typed.
pub fn spec_for(script: Script) -> &'static WorkloadSpec {
    let argv = vec!["sysbench".to_string(), script.typed.clone()];
    spec_with(LuaDef {
        script,
        argv,
        extra: Vec::new(),
    })
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

/// [`spec_for`] with the command line (`sbsuite sysbench`'s argv and a legacy script's
/// undeclared options).
pub fn spec_with(def: LuaDef) -> &'static WorkloadSpec {
    let def: &'static LuaDef = Box::leak(Box::new(def));
    let general = |name: &str| GENERAL.iter().any(|o| o.name == name);
    // A script option named like a general one (`threads`) is the general one here: its
    // value reaches `sysbench.opt` either way.
    let mut own: Vec<OptSpec> = def
        .script
        .options
        .iter()
        .filter(|o| !general(&o.name.replace('-', "_")))
        .map(|o| OptSpec {
            name: leak(&o.name.replace('-', "_")),
            kind: options::kind_of(o),
            default: options::default_value(o).map(|v| leak(&v.to_string())),
            help: leak(&o.desc),
        })
        .collect();
    own.extend(def.extra.iter().filter(|n| !general(n)).map(|n| OptSpec {
        name: leak(n),
        kind: Kind::Str,
        default: None,
        help: "an option the script does not declare (legacy script): passed as a string",
    }));
    let keys: Vec<&'static str> = own.iter().map(|o| o.name).collect();
    let has_data =
        def.script.has_prepare || def.script.commands.iter().any(|c| c.name == "prepare");
    let own: &'static [OptSpec] = Box::leak(own.into_boxed_slice());
    let groups: &'static [&'static [OptSpec]] = Box::leak(vec![own].into_boxed_slice());
    // Named as typed, unless that is a built-in's name (`--lua oltp_point_select`): then by
    // the file found, so a catalog cannot take one for the other.
    let typed = &def.script.typed;
    let name = if crate::engine::catalog::is_builtin(typed) {
        def.script.path.display().to_string()
    } else {
        typed.clone()
    };
    Box::leak(Box::new(WorkloadSpec {
        name: leak(&name),
        summary: leak(&format!(
            "sysbench Lua script {}",
            def.script.path.display()
        )),
        options: groups,
        data: DataSpec {
            // Only a script that prepares has data for the planner to prepare and clean up.
            family: has_data.then(|| leak(&format!("lua:{}", def.script.path.display()))),
            keys: Box::leak(keys.into_boxed_slice()),
            fresh_per_run: false,
        },
        needs_target: true,
        needs_local_files: false,
        ends_by_itself: never,
        build,
        definition: Definition::Lua(def),
    }))
}

/// The definition of a Lua script's spec; `None` for any other workload.
pub fn def(spec: &WorkloadSpec) -> Option<&'static LuaDef> {
    match spec.definition {
        Definition::Lua(def) => Some(def),
        Definition::Builtin | Definition::Custom(_) => None,
    }
}

/// The script of a Lua script's spec; `None` for any other workload.
pub fn script(spec: &WorkloadSpec) -> Option<&'static Script> {
    def(spec).map(|d| &d.script)
}

fn build(s: &Setup<'_>) -> Result<Box<dyn Workload>, EngineError> {
    let def = def(s.spec).ok_or_else(|| {
        EngineError::Failed(format!(
            "internal error: `{}` is not a Lua script",
            s.spec.name
        ))
    })?;
    Ok(Box::new(LuaWorkload::new(def, s)?))
}

/// The text of a Lua error as sysbench prints it after `FATAL: `: the message without
/// mlua's `runtime error: ` / `syntax error: ` prefix, then the Lua traceback, if any.
pub(crate) fn lua_message(e: &LuaError) -> String {
    let m = e.message.trim_end();
    let m = ["runtime error: ", "syntax error: ", "callback error: "]
        .iter()
        .find_map(|p| m.strip_prefix(p))
        .unwrap_or(m);
    m.to_string()
}

/// sysbench's ``function failed`` line for a failing script function `what`.
fn failed(what: &str, e: &LuaError) -> String {
    format!("`{what}' function failed: {}", lua_message(e))
}

/// Which state a [`StateConf`] builds (the state builder's [`Role`], which need not be
/// `Copy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StateRole {
    Main,
    Worker,
    Command,
    Report,
}

impl StateRole {
    fn state(self) -> Role {
        match self {
            StateRole::Main => Role::Main,
            StateRole::Worker => Role::Worker,
            StateRole::Command => Role::Command,
            StateRole::Report => Role::Report,
        }
    }
}

/// A Lua script as a [`Workload`] for one step.
pub struct LuaWorkload {
    def: &'static LuaDef,
    shared: Arc<LuaShared>,
    opts: Arc<OptValues>,
    seed: u64,
    threads: usize,
    /// The report state is needed: a hook and interim or checkpoint reports.
    reports: (bool, bool),
    /// The main state, built on first use with the step's command.
    main: OnceLock<Home>,
    hooks: OnceLock<Hooks>,
    /// The report (and checkpoint) state, tid = threads.
    report: OnceLock<Home>,
    collector: Collector,
    /// `init()` succeeded: `done()` is owed.
    init_ran: AtomicBool,
    /// A worker's state or `thread_init` failed: no `done()`, as in sysbench.
    thread_init_failed: AtomicBool,
    done_ran: AtomicBool,
    started: OnceLock<Instant>,
    /// `thread_done` failures, printed with the final report (workers have no output).
    log: Mutex<Vec<String>>,
}

impl LuaWorkload {
    fn new(def: &'static LuaDef, s: &Setup<'_>) -> Result<LuaWorkload, EngineError> {
        let threads = s.run.threads.max(1);
        let default_dist = Distribution::new(&s.run.rand).map_err(|_| {
            EngineError::Failed(format!(
                "Invalid random numbers distribution: {}.",
                s.run.rand.rand_type
            ))
        })?;
        let all = s.options.all();
        // One shard of a multi-client step (#27) shows the script the step as one process
        // runs it: its connections start at this client's host, but `sysbench.opt` has the
        // hosts in the step's order (the first host's login) and the step's thread count.
        let step_target = s.run.shard.map(|sh| s.target.unrotated(sh.thread_offset));
        let mut opts = options::values(&def.script, all, step_target.as_ref().unwrap_or(s.target));
        if s.run.shard.is_some() {
            opts.insert("threads".into(), OptVal::Number(s.run.threads as f64));
        }
        for name in &def.extra {
            if let Some(v) = all.get(name)
                && !opts.contains_key(name)
            {
                opts.insert(name.clone(), OptVal::Str(v.to_string()));
            }
        }
        let shared = Arc::new(LuaShared {
            counters: Counters::new(threads),
            default_dist,
            rand: s.run.rand.clone(),
            unique: UniqueSequence::from_rng(&mut Rng::for_thread(s.run.seed, usize::MAX))
                .sharded(s.run.shard),
            db: Some(super::sql::DbSetup::new(s.target.clone())),
            limits: super::Limits {
                memory: s.run.lua_memory_limit,
                max_retries: s.run.max_retries,
            },
            codes: Default::default(),
        });
        Ok(LuaWorkload {
            def,
            shared,
            opts: Arc::new(opts),
            seed: s.run.seed,
            threads,
            reports: (
                s.run.report_interval.is_some(),
                !s.run.checkpoints.is_empty(),
            ),
            main: OnceLock::new(),
            hooks: OnceLock::new(),
            report: OnceLock::new(),
            collector: Collector::default(),
            init_ran: AtomicBool::new(false),
            thread_init_failed: AtomicBool::new(false),
            done_ran: AtomicBool::new(false),
            started: OnceLock::new(),
            log: Mutex::new(Vec::new()),
        })
    }

    fn conf(&self, role: StateRole, tid: usize, command: &str) -> StateConf {
        StateConf {
            def: self.def,
            role,
            tid,
            command: Some(command.to_string()),
            opts: Arc::clone(&self.opts),
            shared: Arc::clone(&self.shared),
            seed: self.seed,
        }
    }

    /// The main state, built now (running the script's top level with `command`) unless
    /// an earlier call of this step built it.
    fn main(&self, command: &str) -> Result<&Home, EngineError> {
        if let Some(home) = self.main.get() {
            return Ok(home);
        }
        let home = Home::spawn("sbsuite-lua-main", self.conf(StateRole::Main, 0, command))?;
        let hooks = home.call(|lua, _| Hooks::of(lua))?;
        let _ = self.hooks.set(hooks);
        Ok(self.main.get_or_init(|| home))
    }

    /// Whether the script asked for a database driver (`sysbench.sql.driver()`): sysbench
    /// then reports in its SQL form.
    fn sql_used(&self) -> bool {
        self.shared.db.as_ref().is_some_and(|d| d.used())
    }

    fn hooks(&self) -> Hooks {
        self.hooks.get().copied().unwrap_or_default()
    }

    /// Runs `done()` once, if `init()` ran and every worker started; its failure is logged.
    fn run_done(&self) -> Option<String> {
        if !self.init_ran.load(Ordering::Relaxed)
            || self.thread_init_failed.load(Ordering::Relaxed)
            || self.done_ran.swap(true, Ordering::Relaxed)
        {
            return None;
        }
        let main = self.main.get()?;
        match main.call(|lua, _| state::call_global(lua, "done", ()).map(|_| ())) {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(format!("FATAL: {}", failed("done", &e))),
            Err(e) => Some(format!("FATAL: {e}")),
        }
    }

    /// Prints the lines workers logged, then `done()`'s failure if any.
    fn finish_run(&self, out: &mut dyn Write) -> io::Result<()> {
        let logged = std::mem::take(&mut *self.log.lock().unwrap_or_else(|p| p.into_inner()));
        for line in logged {
            writeln!(out, "{line}")?;
        }
        out.flush()?;
        if let Some(line) = self.run_done() {
            writeln!(out, "{line}")?;
        }
        Ok(())
    }

    /// The `stat` of a cumulative report (final or checkpoint).
    fn cumulative_stat(&self, outcome: &StepOutcome, checkpoint: bool) -> Stat {
        let l = &outcome.latency;
        let now = Tally::of(&self.shared.counters);
        let mut counts = self.collector.period(&now);
        counts.events = outcome.events;
        Stat {
            threads_running: if checkpoint { self.threads as f64 } else { 0.0 },
            time_interval: outcome.seconds,
            time_total: self
                .started
                .get()
                .map_or(outcome.seconds, |t| t.elapsed().as_secs_f64()),
            latency_pct: l.pct_ms / 1e3,
            counts,
            queue: None,
            latency: Some([
                l.min_ms / 1e3,
                l.max_ms / 1e3,
                l.avg_ms / 1e3,
                l.sum_ms / 1e3,
            ]),
        }
    }
}

impl Workload for LuaWorkload {
    fn start(&self) -> Result<(), EngineError> {
        let main = self.main("run")?;
        main.call(|lua, _| state::call_global(lua, "init", ()).map(|_| ()))?
            .map_err(|e| EngineError::Failed(failed("init", &e)))?;
        self.init_ran.store(true, Ordering::Relaxed);
        let has_event = main.call(|lua, _| {
            matches!(
                lua.globals().get::<mlua::Value>("event"),
                Ok(mlua::Value::Function(_))
            )
        })?;
        if !has_event {
            // sysbench stops here without `done()`.
            self.done_ran.store(true, Ordering::Relaxed);
            return Err(EngineError::Failed(format!(
                "cannot find the event() function in {}",
                self.def.script.sname
            )));
        }
        let hooks = self.hooks();
        if (hooks.intermediate && self.reports.0) || (hooks.cumulative && self.reports.1) {
            let home = Home::spawn(
                "sbsuite-lua-report",
                self.conf(StateRole::Report, self.threads, "run"),
            )?;
            let _ = self.report.set(home);
        }
        let _ = self.started.set(Instant::now());
        Ok(())
    }

    fn banner(&self, _out: &mut dyn Write) -> io::Result<()> {
        Ok(())
    }

    fn new_worker<'a>(
        &'a self,
        id: usize,
        stop: &'a Scope,
    ) -> Result<Box<dyn Worker + 'a>, EngineError> {
        let started = self
            .conf(StateRole::Worker, id, "run")
            .build()
            .and_then(|(guard, lua)| {
                // The step's stop reaches the state (a forced shutdown stops its loops) and
                // the connections it opens (their statements are cancelled on the server).
                ctx::with(|c| c.scope = Some(stop.clone()));
                let registration = stop.register(Parts::cancel(lua.stopper()));
                match state::call_global(&lua, "thread_init", id) {
                    Ok(_) => Ok((guard, lua, registration)),
                    Err(e) => Err(EngineError::Failed(format!(
                        "{}\nFATAL: Thread initialization failed!",
                        failed("thread_init", &e)
                    ))),
                }
            });
        match started {
            Ok((guard, lua, registration)) => Ok(Box::new(LuaWorker {
                _registration: registration,
                lua,
                tid: id,
                log: &self.log,
                stop,
                _ctx: guard,
            })),
            Err(e) => {
                self.thread_init_failed.store(true, Ordering::Relaxed);
                Err(e)
            }
        }
    }

    fn sql_totals(&self) -> Option<crate::engine::SqlCounters> {
        let t = Tally::of(&self.shared.counters);
        self.sql_used().then_some(crate::engine::SqlCounters {
            transactions: 0,
            reads: t.reads,
            writes: t.writes,
            other: t.other,
            errors: t.errors,
            reconnects: t.reconnects,
        })
    }

    fn interim(&self, s: &mut IntervalSample) -> Option<String> {
        let now = Tally::of(&self.shared.counters);
        let (d, dt) = self.collector.interval(now, s.time_s);
        if self.sql_used() {
            s.set_sql_rates([d.reads, d.writes, d.other, d.errors, d.reconnects], dt);
        }
        if !self.hooks().intermediate {
            return None;
        }
        let report = self.report.get()?;
        let metric = |n| crate::engine::metric(&s.metrics, n);
        let stat = Stat {
            threads_running: s.threads as f64,
            time_interval: dt,
            time_total: s.time_s,
            latency_pct: s.lat_pct_ms / 1e3,
            counts: d,
            queue: Some((
                metric("queue_length").unwrap_or(0.0),
                metric("concurrency").unwrap_or(0.0),
            )),
            latency: None,
        };
        Some(
            match report.call(move |lua, _| report::call_hook(lua, "report_intermediate", &stat)) {
                Ok(Ok(())) => String::new(),
                Ok(Err(e)) => format!("FATAL: {}", failed("report_intermediate", &e)),
                Err(e) => format!("FATAL: {e}"),
            },
        )
    }

    fn finish_outcome(&self, outcome: &mut StepOutcome) {
        outcome.error_codes = self.collector.period_codes(&self.shared);
        let now = Tally::of(&self.shared.counters);
        if self.sql_used() {
            let t = self.collector.period(&now);
            outcome.sql = Some(SqlCounters {
                transactions: outcome.events,
                reads: t.reads,
                writes: t.writes,
                other: t.other,
                errors: t.errors,
                reconnects: t.reconnects,
            });
        }
    }

    fn reset_counters(&self) {
        self.collector.reset(Tally::of(&self.shared.counters));
        self.collector.reset_codes(&self.shared);
    }

    fn own_report(
        &self,
        outcome: &StepOutcome,
        checkpoint: bool,
        out: &mut dyn Write,
    ) -> io::Result<bool> {
        if !self.hooks().cumulative {
            return Ok(false);
        }
        let home = if checkpoint {
            self.report.get()
        } else {
            self.main.get()
        };
        let Some(home) = home else {
            return Ok(false);
        };
        out.flush()?;
        let stat = self.cumulative_stat(outcome, checkpoint);
        let result = home.call(move |lua, conf| {
            // sysbench exports the options again before the main state's final hook.
            if !checkpoint {
                conf.export(lua)?;
            }
            report::call_hook(lua, "report_cumulative", &stat)
        });
        match result {
            Ok(Ok(())) => {}
            Ok(Err(e)) => writeln!(out, "FATAL: {}", failed("report_cumulative", &e))?,
            Err(e) => writeln!(out, "FATAL: {e}")?,
        }
        if !checkpoint {
            self.finish_run(out)?;
        }
        Ok(true)
    }

    fn report(&self, outcome: &StepOutcome, out: &mut dyn Write) -> io::Result<()> {
        // sysbench's report of a script that used no database starts with a blank line (where
        // `SQL statistics:` would be).
        if outcome.sql.is_none() {
            writeln!(out)?;
        }
        Ok(())
    }

    fn report_after(&self, _outcome: &StepOutcome, out: &mut dyn Write) -> io::Result<()> {
        self.finish_run(out)
    }

    fn admin(&self) -> &dyn Admin {
        self
    }
}

impl Admin for LuaWorkload {
    fn prepare(
        &self,
        cleanup: bool,
        out: &mut dyn Write,
        stop: &AtomicBool,
    ) -> Result<(), EngineError> {
        self.builtin_command(if cleanup { "cleanup" } else { "prepare" }, out, stop)?;
        // As after the built-in workloads' cleanup: the default SQLite file a suite without
        // `[target]` created goes once the script dropped everything in it.
        if cleanup && let Some(db) = &self.shared.db {
            let t = &db.connector.target;
            if let Some(line) = t.driver.dialect().after_cleanup(t)? {
                writeln!(out, "{line}").map_err(EngineError::report)?;
            }
        }
        Ok(())
    }

    fn prewarm(&self, out: &mut dyn Write, stop: &AtomicBool) -> Result<(), EngineError> {
        self.command("prewarm", out, stop)
    }

    fn check(&self, out: &mut dyn Write, stop: &AtomicBool) -> Result<(), EngineError> {
        self.command("check", out, stop)
    }

    fn command(
        &self,
        name: &str,
        out: &mut dyn Write,
        stop: &AtomicBool,
    ) -> Result<(), EngineError> {
        self.custom_command(name, out, stop)
    }
}

impl Drop for LuaWorkload {
    fn drop(&mut self) {
        // A failed run: `done()` still runs (sysbench calls it after a failed `thread_run`).
        if let Some(line) = self.run_done() {
            eprintln!("{line}");
        }
    }
}

/// One worker thread's state.
struct LuaWorker<'a> {
    /// In the step's scope until the worker ends.
    _registration: Registration,
    /// Declared before the guard: dropped first, while its context is still installed.
    lua: State,
    tid: usize,
    log: &'a Mutex<Vec<String>>,
    stop: &'a Scope,
    _ctx: CtxGuard,
}

impl LuaWorker<'_> {
    /// Whether an error of the script is the step's stop showing (a stopped state, a
    /// refused statement), not the script's failure.
    fn stopped(&self) -> bool {
        self.lua.was_stopped() || self.stop.stopping()
    }
}

impl Worker for LuaWorker<'_> {
    fn event(&mut self) -> EventResult {
        // Never called: `run_loop` runs the script's `thread_run`.
        EventResult::Fatal(EngineError::Failed(
            "internal error: a Lua worker runs its own loop".into(),
        ))
    }

    fn run_loop(&mut self, lp: &mut EventLoop<'_>) -> Result<(), EngineError> {
        let (lua, tid) = (&self.lua, self.tid);
        let result = ctx::with_loop(lp, || state::call_global(lua, "thread_run", tid));
        if let Some(e) = ctx::take_loop_error() {
            return Err(e);
        }
        match result {
            Ok(_) => {
                // `thread_run` returned: out of events, or `event` returned a true value
                // (that thread ends, its event uncounted).
                lp.exhausted();
                Ok(())
            }
            // Stopped in the middle of an event: the worker ends, the event uncounted.
            Err(_) if self.stopped() => {
                lp.exhausted();
                Ok(())
            }
            Err(e) => Err(EngineError::Failed(failed("thread_run", &e))),
        }
    }

    fn finish(&mut self) -> Result<(), EngineError> {
        // A stopped state runs nothing more (sysbench does not run thread_done after a
        // forced shutdown either).
        if self.lua.was_stopped() {
            return Ok(());
        }
        if let Err(e) = state::call_global(&self.lua, "thread_done", self.tid) {
            // sysbench only logs it.
            self.log
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(format!("FATAL: {}", failed("thread_done", &e)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::engine::lua::{ArgType, Command, DeclaredOpt};

    fn script(typed: &str, options: Vec<DeclaredOpt>) -> Script {
        Script {
            path: PathBuf::from(format!("/scripts/{typed}")),
            typed: typed.into(),
            sname: typed.into(),
            source: String::new(),
            options,
            commands: vec![Command {
                name: "prepare".into(),
                parallel: true,
            }],
            has_prepare: false,
            has_cleanup: false,
            has_help: false,
            module_root: None,
        }
    }

    fn opt(name: &str, kind: ArgType, default: &str) -> DeclaredOpt {
        DeclaredOpt {
            name: name.into(),
            desc: format!("{name} help"),
            kind,
            default: Some(default.into()),
        }
    }

    #[test]
    fn a_scripts_spec_has_its_options_as_dataset_keys() {
        let spec = spec_for(script(
            "t.lua",
            vec![
                opt("table-size", ArgType::Int, "100"),
                opt("threads", ArgType::Int, "9"),
            ],
        ));
        assert_eq!(spec.name, "t.lua");
        // Dashes become underscores; an option named like a general one is the general one.
        assert!(spec.option("table_size").is_some());
        let own: Vec<&str> = spec.options[0].iter().map(|o| o.name).collect();
        assert_eq!(own, ["table_size"]);
        assert_eq!(spec.data.keys, ["table_size"]);
        assert_eq!(spec.data.family, Some("lua:/scripts/t.lua"));
        assert!(spec.needs_target);
        // The spec's payload is the script (so no TOML definition: one payload, one type).
        assert_eq!(script_of(spec).map(|s| s.typed.as_str()), Some("t.lua"));
    }

    fn script_of(spec: &WorkloadSpec) -> Option<&'static Script> {
        super::script(spec)
    }

    #[test]
    fn a_built_in_name_is_not_taken_and_legacy_options_are_strings() {
        let spec = spec_with(LuaDef {
            script: script("oltp_point_select", Vec::new()),
            argv: Vec::new(),
            extra: vec!["oltp_table_size".into(), "threads".into()],
        });
        assert_eq!(spec.name, "/scripts/oltp_point_select");
        let own: Vec<&str> = spec.options[0].iter().map(|o| o.name).collect();
        assert_eq!(own, ["oltp_table_size"]);
        assert!(matches!(spec.options[0][0].kind, Kind::Str));
    }

    #[test]
    fn lua_messages_lose_mluas_prefix_and_keep_the_traceback() {
        let e = LuaError {
            message: "runtime error: x.lua:3: boom\nstack traceback:\n\tx.lua:3: in main chunk\n"
                .into(),
        };
        assert_eq!(
            failed("init", &e),
            "`init' function failed: x.lua:3: boom\nstack traceback:\n\tx.lua:3: in main chunk"
        );
    }
}
