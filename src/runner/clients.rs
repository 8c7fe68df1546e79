//! Run steps on several clients (`[clients]`, #17): an executor that hands run steps to the
//! coordinator ([`crate::clients::coordinator`]) and keeps everything else in this process,
//! and the checks of a suite's clients against its plan.
//!
//! Only run steps leave the process: prepare, cleanup, checks, commands, variants and hooks
//! run once, here, through the wrapped [`EngineExecutor`], as they would without clients.
//! The merged outcome goes to results.csv like any other; each client's own rows, intervals,
//! histograms and agent log go under `shards/<client>/` of the run directory, and
//! `shards/clients.csv` says which client ran which part of which step.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use chrono::Utc;

use super::server::ServerError;
use super::{EngineExecutor, StepExecutor};
use crate::clients::coordinator::{self, ClientsConfig, ClientsRun};
use crate::clients::transport::{self, Client};
use crate::engine::{EngineError, StepObserver, StepOutcome};
use crate::plan::{Plan, Step, StepKind};
use crate::results::ResultsError;
use crate::results::csv::{self as rcsv, CsvFile, RowStatus, RunRow};
use crate::results::histogram::{histogram_file_name, write_histogram};
use crate::source::{ConfigError, ConfigErrors, Seg};
use crate::suite::Suite;
use crate::suite::clients::Clients;

/// The directory of the clients' own results in a run directory.
pub const SHARDS_DIR: &str = "shards";

/// Columns of `shards/clients.csv`: one row per client per run step.
pub const CLIENTS_COLUMNS: &[&str] = &[
    "run_id",
    "step",
    "name",
    "client",
    "host",
    "threads",
    "thread_offset",
    "events",
    "rtt_ms",
    "start_skew_ms",
];

/// How many clients step `step` runs on: its `clients` axis, else all of them.
pub fn step_clients(step: &Step, all: usize) -> usize {
    step.params
        .get("clients")
        .and_then(crate::value::Value::as_i64)
        .map_or(all, |n| n.max(1) as usize)
}

/// The checks of `[clients]` against the plan, each naming the key to change: a `clients`
/// axis beyond the list, fewer threads than clients, fileio (its files are on one machine),
/// the embedded SQLite target with clients on other machines, and a Lua script whose code
/// the suite does not hold.
pub fn check_clients(suite: &Suite, plan: &Plan) -> Result<(), ConfigErrors> {
    let Some(clients) = &suite.clients else {
        if plan.steps.iter().any(|s| s.params.contains_key("clients")) {
            return Err(suite
                .error(
                    &[Seg::key("matrix"), Seg::key("clients")],
                    "the matrix has a `clients` axis but the suite has no [clients] list",
                )
                .with_help("add [clients] with list = [\"local:3\"] (or pass --clients local:3)")
                .into());
        }
        return Ok(());
    };
    let mut errors: Vec<ConfigError> = Vec::new();
    let mut push = |e: ConfigError| {
        if !errors.contains(&e) {
            errors.push(e);
        }
    };
    let list = [Seg::key("clients"), Seg::key("list")];
    let known = clients.known_count();
    for step in plan.steps.iter().filter(|s| s.kind == StepKind::Run) {
        let n = step_clients(step, known.unwrap_or(1));
        if let (Some(k), Some(asked)) = (known, step.params.get("clients"))
            && n > k
        {
            push(
                suite
                    .error(
                        &[Seg::key("matrix"), Seg::key("clients")],
                        format!("clients = {asked} but [clients] list names {k}"),
                    )
                    .with_help(format!("use at most {k}, or add clients to the list")),
            );
        }
        let threads = step.options.int("threads").max(0) as usize;
        if threads < n {
            let at = if step.params.contains_key("threads") {
                [Seg::key("matrix"), Seg::key("threads")]
            } else {
                [Seg::key("defaults"), Seg::key("threads")]
            };
            push(
                suite
                    .error(
                        &at,
                        format!(
                            "threads = {threads} cannot be split over {n} clients (step {})",
                            step.name
                        ),
                    )
                    .with_help(format!("use at least {n} threads, one per client")),
            );
        }
        let spec = step.spec;
        if spec.is_some_and(|s| s.needs_local_files) {
            push(
                suite
                    .error(
                        &list,
                        format!("`{}` cannot run on [clients]", step.workload),
                    )
                    .with_help(
                        "its files are prepared on this machine and a shard cannot be split \
                         off them: remove [clients] or run it in a suite of its own",
                    ),
            );
        }
        // Agents receive a script from the suite that loaded it (its source, modules and
        // hashes): a script the suite does not hold has nothing to send.
        if spec.is_some_and(|s| crate::engine::lua::run::def(s).is_some())
            && suite.scripts.get(&step.workload).is_none()
        {
            push(
                suite
                    .error(
                        &list,
                        format!(
                            "`{}` (step {}) is a Lua script this suite does not load: its code cannot be sent to the clients",
                            step.workload, step.name
                        ),
                    )
                    .with_help(
                        "name it as a workload table, workload = { script = \"path.lua\" }, or remove [clients]",
                    ),
            );
        }
        let sqlite = spec.is_some_and(|s| s.needs_target)
            && step
                .target
                .as_ref()
                .is_none_or(|t| t.driver.dialect().is_file());
        if sqlite && !clients.all_local() {
            push(
                suite
                    .error(&list, "the SQLite target is a file on this machine: clients on other machines cannot reach it")
                    .with_help("use local clients (\"local:3\") with SQLite, or a MySQL/MariaDB or PostgreSQL [target]"),
            );
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ConfigErrors(errors))
    }
}

/// The `Clients:` line of `sbsuite plan`.
pub fn plan_line(suite: &Suite) -> Option<String> {
    let c = suite.clients.as_ref()?;
    let list: Vec<String> = c.entries.iter().map(ToString::to_string).collect();
    let count = c.known_count().map_or_else(
        || "resolved when the run starts".to_string(),
        |n| n.to_string(),
    );
    Some(format!(
        "Clients: {} ({count} agents; run steps are split over them, everything else runs here)\n",
        list.join(", ")
    ))
}

/// The executor of a suite with `[clients]`.
pub struct ClientsExecutor {
    pub inner: EngineExecutor,
    cfg: ClientsConfig,
    /// The suite's own workloads, as the agents compile them.
    definitions: std::collections::BTreeMap<String, String>,
    /// The suite's Lua scripts, bundled with their modules for the agents at each step.
    scripts: crate::suite::scripts::Scripts,
    axes: Vec<String>,
    run_dir: Option<PathBuf>,
}

/// Resolving or reaching the clients failed before anything ran.
#[derive(Debug, thiserror::Error)]
pub enum ClientsSetupError {
    #[error(transparent)]
    Transport(#[from] transport::TransportError),
    #[error(transparent)]
    Client(#[from] coordinator::ClientError),
}

impl ClientsExecutor {
    /// Resolves the clients (Kubernetes selectors into pods) and says hello to each, so that a
    /// client that is unreachable or runs another version fails the run before anything loads.
    pub fn new(
        inner: EngineExecutor,
        clients: &Clients,
        plan: &Plan,
        stop: &AtomicBool,
    ) -> Result<ClientsExecutor, ClientsSetupError> {
        let resolved: Vec<Client> = transport::resolve(&clients.entries, &clients.transport)?;
        let cfg = ClientsConfig {
            clients: resolved,
            transport: clients.transport.clone(),
            local_binary: clients.binary.clone(),
            timeout: clients.timeout,
            connect_timeout: clients.connect_timeout,
        };
        coordinator::preflight(&cfg, stop)?;
        Ok(ClientsExecutor {
            inner,
            cfg,
            definitions: clients.definitions.clone(),
            scripts: clients.scripts.clone(),
            axes: plan.axes.clone(),
            run_dir: None,
        })
    }

    fn write_shards(&self, step: &Step, run: &ClientsRun) -> Result<(), ResultsError> {
        let Some(dir) = &self.run_dir else {
            return Ok(());
        };
        let run_id = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let shards = dir.join(SHARDS_DIR);
        let extra = rcsv::extra_axis_columns(&self.axes);
        let open = |path: &Path, header: &[String]| -> Result<CsvFile, ResultsError> {
            if path.exists() {
                CsvFile::append(path)
            } else {
                CsvFile::create(path, header)
            }
        };
        let clients_header: Vec<String> = CLIENTS_COLUMNS.iter().map(|c| c.to_string()).collect();
        let mut index = open(&shards.join("clients.csv"), &clients_header)?;
        let mut offset = 0;
        for s in &run.shards {
            let cdir = shards.join(&s.client);
            std::fs::create_dir_all(cdir.join("histograms")).map_err(|source| {
                ResultsError::Io {
                    path: cdir.clone(),
                    source,
                }
            })?;
            write_histogram(
                &cdir
                    .join("histograms")
                    .join(histogram_file_name(step.index, &step.name)),
                &s.outcome.histogram,
            )?;
            let mut intervals = open(&cdir.join("intervals.csv"), &rcsv::interval_columns())?;
            for sample in &s.intervals {
                intervals.write(rcsv::interval_record(&run_id, step, sample))?;
            }
            intervals.sync()?;
            let mut results = open(
                &cdir.join("results.csv"),
                &rcsv::results_columns(&self.axes),
            )?;
            // The shard's own row says how many threads it ran.
            let mut shard_step = step.clone();
            let threads = crate::value::Value::Int(s.threads as i64);
            shard_step
                .options
                .0
                .insert("threads".into(), threads.clone());
            if let Some(t) = shard_step.params.get_mut("threads") {
                *t = threads;
            }
            let row = RunRow {
                step: &shard_step,
                started_at: Utc::now(),
                status: if s.outcome.interrupted {
                    RowStatus::Interrupted
                } else {
                    RowStatus::Ok
                },
                outcome: Some(&s.outcome),
                error: None,
                knee: None,
            };
            results.write(rcsv::results_record(&run_id, &extra, &row))?;
            results.sync()?;
            index.write([
                run_id.clone(),
                step.index.to_string(),
                step.name.clone(),
                s.client.clone(),
                s.host.clone(),
                s.threads.to_string(),
                offset.to_string(),
                s.outcome.events.to_string(),
                rcsv::fmt_float(s.rtt_ms, 3),
                rcsv::fmt_float(run.start_skew_ms, 3),
            ])?;
            offset += s.threads;
        }
        index.sync()
    }
}

impl StepExecutor for ClientsExecutor {
    fn prepare(
        &mut self,
        step: &Step,
        cleanup: bool,
        out: &mut dyn Write,
        stop: &AtomicBool,
    ) -> Result<(), EngineError> {
        self.inner.prepare(step, cleanup, out, stop)
    }

    fn run(
        &mut self,
        step: &Step,
        out: &mut dyn Write,
        on_interval: &mut dyn StepObserver,
        stop: &AtomicBool,
    ) -> Result<StepOutcome, EngineError> {
        let n = step_clients(step, self.cfg.clients.len()).min(self.cfg.clients.len());
        let cfg = ClientsConfig {
            clients: self.cfg.clients[..n].to_vec(),
            ..self.cfg.clone()
        };
        let log_dir = self.run_dir.as_ref().map(|d| d.join(SHARDS_DIR));
        // A script is read again for each step, with its modules, and refused if any changed
        // since the suite loaded: the agents run what the prepare ran.
        let script = match self.scripts.get(&step.workload) {
            Some(u) => Some(u.bundle().map_err(|e| {
                EngineError::Failed(format!(
                    "step {} cannot send its script to the clients: {e}",
                    step.name
                ))
            })?),
            None => None,
        };
        let workload = step
            .spec
            .ok_or_else(|| EngineError::NoEngine(step.workload.clone()))?;
        let run = coordinator::run_step(
            &cfg,
            workload,
            self.definitions.get(&step.workload).map(String::as_str),
            script.as_ref(),
            &step.options,
            step.target.as_ref(),
            out,
            on_interval,
            stop,
            log_dir.as_deref(),
        )
        .map_err(|e| EngineError::Failed(e.to_string()))?;
        self.write_shards(step, &run)
            .map_err(|e| EngineError::Failed(format!("writing shards/ failed: {e}")))?;
        Ok(run.merged)
    }

    fn check(
        &mut self,
        step: &Step,
        out: &mut dyn Write,
        stop: &AtomicBool,
    ) -> Result<(), EngineError> {
        self.inner.check(step, out, stop)
    }

    fn command(
        &mut self,
        step: &Step,
        out: &mut dyn Write,
        stop: &AtomicBool,
    ) -> Result<(), EngineError> {
        self.inner.command(step, out, stop)
    }

    fn begin_variant(&mut self, variant: &str, run_dir: &Path) -> Result<(), ServerError> {
        self.run_dir = Some(run_dir.to_path_buf());
        self.inner.begin_variant(variant, run_dir)
    }

    fn end_variant(&mut self, variant: &str, run_dir: &Path) -> Result<(), ServerError> {
        self.inner.end_variant(variant, run_dir)
    }

    fn begin_stage(
        &mut self,
        variant: &str,
        stage: crate::suite::raw::Stage,
        run_dir: &Path,
    ) -> Result<(), ServerError> {
        self.inner.begin_stage(variant, stage, run_dir)
    }

    fn end_stage(
        &mut self,
        variant: &str,
        stage: crate::suite::raw::Stage,
        run_dir: &Path,
    ) -> Result<(), ServerError> {
        self.inner.end_stage(variant, stage, run_dir)
    }

    fn take_unreachable(&mut self) -> Option<String> {
        self.inner.take_unreachable()
    }
}
