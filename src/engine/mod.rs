//! Workload engines and the driver that runs them.
//!
//! This file is the interface the runner codes against: one [`StepRequest`] (workload, options,
//! target and the [`StepKind`] of step), one [`execute`], and the types it returns. The shared machinery (threads, limits, interim and final reports) lives in
//! [`driver`], the general options in [`config`] (parsed once into a typed [`RunConfig`]), the
//! sysbench-shaped text in [`console`] and sysbench's random numbers in [`random`]. Each workload
//! is one module implementing [`driver::Workload`] (and [`driver::Admin`] when it has data) that
//! declares its own [`spec::WorkloadSpec`] (options, data, traits, builder) next to the code that
//! reads those options; [`catalog`] lists them, with the workloads a suite declares.
//!
//! Database workloads also need a connection: they are built with the step's [`Target`]
//! ([`StepRequest::target`]), or, when the suite has no
//! `[target]`, with a local SQLite file ([`Target::sqlite_default`]) so that an OLTP workload
//! runs with nothing installed.
//!
//! `engine` imports `stats`, `db`, `value` and `source` (the file positions the compiler of
//! TOML-declared workloads, [`custom::compile`], reports errors at), never the suite or the
//! runner: a step is stopped through the `stop` flag the caller passes in, which the driver
//! forwards to the workers.
//!
//! A new workload is one module plus one catalog line, and nothing else in the tree:
//! * `src/engine/<name>.rs` (or a folder `src/engine/<name>/`), declared by a `pub mod <name>;`
//!   line below, holding its [`driver::Workload`]/[`driver::Worker`] code, its `OptSpec` tables,
//!   its typed configuration built from [`spec::Setup`] in one function, and its
//!   `pub static SPEC: WorkloadSpec` (name, help line, options, data, traits, builder);
//! * one line `&<name>::SPEC,` in [`catalog::WORKLOADS`].
//!
//! Validation, planning, `sbsuite sysbench`, `sbsuite workloads` and the JSON schema pick it up
//! from there (the committed `schemas/suite.schema.json` is then regenerated with
//! `cargo run -- schema`, as a test asks).

pub mod catalog;
pub mod config;
pub mod console;
pub mod cpu;
pub mod custom;
pub mod driver;
pub mod fileio;
pub mod lua;
pub mod memory;
pub mod mutex;
pub mod oltp;
pub mod option;
pub mod phases;
pub mod random;
pub mod session;
pub mod spec;
pub mod threads;
pub mod tpch;

use std::io::Write;
use std::sync::atomic::AtomicBool;

pub use self::catalog::Catalog;
pub use self::config::{RateOverflow, RunConfig, Shard};
use self::spec::{Setup, WorkloadSpec};
use crate::db::Target;
pub use crate::stats::LatencySummary;
use crate::value::Options;

/// What a workload is, beyond its [`WorkloadSpec`]: built into this program, or declared by a
/// suite ([`WorkloadSpec::definition`]). Here, in the engine's own vocabulary, because the
/// spec (which every workload imports) cannot import the workloads that declare these.
#[derive(Clone, Copy, Debug)]
pub enum Definition {
    /// One of [`catalog::WORKLOADS`].
    Builtin,
    /// A `[workloads.NAME]` definition, compiled ([`custom::spec_for`]).
    Custom(&'static custom::model::Def),
    /// A sysbench Lua script ([`lua::run::spec_for`]).
    Lua(&'static lua::run::LuaDef),
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("workload `{0}` has no engine in this build")]
    NoEngine(String),
    #[error("{0}")]
    Failed(String),
    /// An I/O operation failed: `context` says which (writing the report, starting a thread…).
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// A statement of a data command (prepare, cleanup, prewarm, the existing-data check)
    /// failed: `context` names the statement or the table.
    #[error("{context}: {source}")]
    Sql {
        context: String,
        #[source]
        source: crate::db::SqlError,
    },
    /// The file of a file database is missing, or could not be removed after a cleanup.
    #[error(transparent)]
    FileDb(#[from] crate::db::FileDbError),
    /// The setup connection could not be opened at all
    /// ([`crate::db::SqlError::host_unreachable`]): the runner skips what depends on it rather
    /// than waiting out `connect_timeout` again.
    #[error("{0}")]
    Unreachable(String),
    /// `rate` offered more arrivals than the workers could start and the run was set to stop
    /// then ([`config::RateOverflow::Fatal`]): sysbench 1.0.20's words, which `sbsuite sysbench`
    /// prints as its `FATAL:` line.
    #[error(
        "The event queue is full. This means the worker threads are unable to keep up with the \
         specified event generation rate"
    )]
    RateOverflow,
    /// A run found a table of its data missing (`run prepare first`): `table` is its name,
    /// for `sbsuite sysbench` to print sysbench's own line about it first.
    #[error("{message}")]
    NoTable { table: String, message: String },
    /// A failure sysbench 1.0.20 reports in lines of its own (fileio's missing or short test
    /// files, its missing `--file-test-mode`): `sbsuite sysbench` prints `sysbench` as sysbench
    /// does (on stdout; with `usage`, the test's option list after it), then `message`, sbsuite's
    /// explanation with the fix, on stderr. Elsewhere the error is `message`.
    #[error("{message}")]
    Sysbench {
        sysbench: String,
        usage: bool,
        message: String,
    },
    /// A failure sysbench reports by its exit code alone (a Lua script's command returned
    /// `false`): `sbsuite sysbench` prints this explanation on stderr, not a `FATAL:` line.
    #[error("{0}")]
    Silent(String),
    /// Worker threads of the step could not be stopped (stuck in foreign code): they may still
    /// load the machine, so the runner stops the whole suite (exit 1) instead of measuring the
    /// next step under them.
    #[error("{0}")]
    Unstoppable(String),
}

impl EngineError {
    /// [`EngineError::Io`] in `context`.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        EngineError::Io {
            context: context.into(),
            source,
        }
    }

    /// Writing the step's text to its output failed.
    pub fn report(source: std::io::Error) -> Self {
        EngineError::io("writing the report failed", source)
    }
}

/// One interim report (one line of sysbench's `[ 10s ] …` output), also stored in intervals.csv.
#[derive(Clone, Debug, Default)]
pub struct IntervalSample {
    /// Seconds since the start of the run (the `[ Ns ]` stamp).
    pub time_s: f64,
    /// Threads still running.
    pub threads: usize,
    pub eps: f64,
    pub tps: Option<f64>,
    pub qps: Option<f64>,
    pub reads_ps: Option<f64>,
    pub writes_ps: Option<f64>,
    pub other_ps: Option<f64>,
    /// Latency at the configured percentile over this interval, in ms.
    pub lat_pct_ms: f64,
    pub errors_ps: Option<f64>,
    pub reconnects_ps: Option<f64>,
    /// Workload-specific measurements over this interval, named from [`METRICS`].
    pub metrics: Metrics,
    /// The interval's latency counts in the interim report's log buckets
    /// ([`crate::stats::log_histogram`]), filled only when the run is one shard of a
    /// multi-client step, so that the coordinator computes the merged interval's percentile
    /// from the added counts; empty otherwise.
    pub lat_buckets: Vec<u64>,
    /// A run with phases (#30): the index of the phase the interval ends in.
    pub phase: Option<usize>,
    /// A run with phases: the phase's target rate at the interval's end (a ramp's value
    /// there); `None` in a closed-loop phase or without phases.
    pub target_rate: Option<f64>,
    /// A run step with `[[groups]]` (#31): the index of the group whose interval this is.
    pub group: Option<usize>,
}

impl IntervalSample {
    /// sysbench's DB line of an interval: `tps` (= events per second) and the statement rates
    /// from the counts of the interval's `dt` seconds.
    pub fn set_sql_rates(&mut self, [reads, writes, other, errors, reconnects]: [u64; 5], dt: f64) {
        self.tps = Some(self.eps);
        self.qps = Some((reads + writes + other) as f64 / dt);
        self.reads_ps = Some(reads as f64 / dt);
        self.writes_ps = Some(writes as f64 / dt);
        self.other_ps = Some(other as f64 / dt);
        self.errors_ps = Some(errors as f64 / dt);
        self.reconnects_ps = Some(reconnects as f64 / dt);
    }
}

/// What the caller of a run step is told while the step runs, on the driver's collector thread
/// (never on a worker's hot path).
///
/// Any `FnMut(&IntervalSample)` closure is an observer of the interim reports only. An
/// observer that also wants [`LiveSample`]s (the OpenMetrics endpoint, machine-readable
/// events) says how often in [`StepObserver::live_every`]: they are taken on their own
/// schedule, whether or not `report_interval` is set, and change nothing that is printed.
pub trait StepObserver {
    /// Each interim report, as printed (and stored in intervals.csv).
    fn interval(&mut self, sample: &IntervalSample);

    /// The measured part of the run begins now (at the start, or when `warmup_time` ends),
    /// before its first interim report: where an observer that adds its own per-interval
    /// readings (the server's counters, #29) takes their baseline. The default does nothing.
    fn measuring(&mut self) {}

    /// How often [`StepObserver::live`] wants a sample; `None` (the default): never.
    fn live_every(&self) -> Option<std::time::Duration> {
        None
    }

    /// A live sample, every [`StepObserver::live_every`] while the run is measured.
    fn live(&mut self, sample: &LiveSample<'_>) {
        let _ = sample;
    }
}

impl<F: FnMut(&IntervalSample)> StepObserver for F {
    fn interval(&mut self, sample: &IntervalSample) {
        self(sample)
    }
}

/// The running totals of a step at one moment, for watchers outside the process: counts since
/// the measured part of the run began (after `warmup_time`; checkpoints do not restart them),
/// and the latency distribution of the time since the previous live sample.
#[derive(Clone, Debug)]
pub struct LiveSample<'a> {
    /// Seconds since the measured part of the run began.
    pub elapsed_s: f64,
    /// Threads still running.
    pub threads: usize,
    /// Events since the measured part began.
    pub events: u64,
    /// Events per second since the previous live sample.
    pub eps: f64,
    /// SQL statement counts since the measured part began (`transactions` = events), for the
    /// workloads that run SQL.
    pub sql: Option<SqlCounters>,
    /// Event latencies since the previous live sample, as counts of the 1024 buckets of
    /// [`crate::stats::log_histogram`] (the histogram of the interim lines).
    pub latency_buckets: &'a [u64],
}

/// Workload-specific measurements: `(name, value)` with names from [`METRICS`].
pub type Metrics = Vec<(&'static str, f64)>;

/// Measurements that only some workloads have. Each gets a CSV column in results.csv and
/// intervals.csv (empty for workloads without it): `(name, meaning)`.
pub const METRICS: &[(&str, &str)] = &[
    ("mib_per_s", "memory: MiB transferred per second"),
    ("total_mib", "memory: MiB transferred"),
    ("file_reads_ps", "fileio: read operations per second"),
    ("file_writes_ps", "fileio: write operations per second"),
    ("file_fsyncs_ps", "fileio: fsync operations per second"),
    ("read_mib_per_s", "fileio: MiB read per second"),
    ("written_mib_per_s", "fileio: MiB written per second"),
    (
        "queue_length",
        "rate: events waiting in the queue (intervals only)",
    ),
    ("concurrency", "rate: events in progress (intervals only)"),
    (
        DROPPED,
        "rate: arrivals dropped because every thread was busy and the queue was full",
    ),
    (
        LATE,
        "latency_limit: events whose latency exceeded the limit (results only)",
    ),
    (
        SKIPPED,
        "latency_limit with rate: arrivals not run, already later than the limit when taken (results only)",
    ),
    (
        HEADLINE,
        "custom workloads: the workload's headline rate, e.g. tpmC",
    ),
    (
        THREADS_PEAK,
        "max_threads: the most threads that ran events at once (results only)",
    ),
    (
        "shards",
        "multi-client runs: the clients that ran the step (results only)",
    ),
    (
        "start_skew_ms",
        "multi-client runs: spread of the clients' measured starts, ms (results only)",
    ),
    (
        tpch::GEOMEAN,
        "tpch: the power test's geometric mean of query and refresh times, s (results only)",
    ),
    (tpch::POWER, "tpch: Power@Size (results only)"),
    (tpch::THROUGHPUT, "tpch: Throughput@Size (results only)"),
    (tpch::QPHH, "tpch: QphH@Size (results only)"),
    (
        "server_fsyncs_per_txn",
        "server cost: the server's fsyncs per transaction",
    ),
    (
        "server_log_bytes_per_txn",
        "server cost: redo/WAL bytes written per transaction",
    ),
    (
        "server_cpu_ms_per_txn",
        "server cost: the server process's CPU ms per transaction",
    ),
    (
        "client_cpu_us_per_txn",
        "client cost: this process's CPU µs per transaction",
    ),
    (
        "server_fsyncs_ps",
        "server cost: the server's fsyncs per second (intervals only)",
    ),
    (
        "server_log_bytes_ps",
        "server cost: redo/WAL bytes written per second (intervals only)",
    ),
    (
        "server_cpu_pct",
        "server cost: the server process's CPU in % of one core (intervals only)",
    ),
    (
        session::connections::CONNECTS,
        "OLTP and custom workloads: connections opened during the measured part (results only)",
    ),
    (
        session::connections::CONNECT_AVG_MS,
        "their average connect time, ms (results only)",
    ),
    (
        session::connections::CONNECT_P95_MS,
        "their 95th percentile connect time, ms (results only)",
    ),
    (
        session::connections::CONNECT_MAX_MS,
        "their longest connect time, ms (results only)",
    ),
    (
        session::connections::IDLE_CONNECTIONS,
        "idle_connections: the idle connections held through the step (results only)",
    ),
    (
        session::connections::IDLE_DEAD,
        "idle_connections: those that did not answer at the end of the step (results only)",
    ),
    (
        FAULT_COLUMNS[0],
        "[[faults]]: when the (first) fault fired, s into the measured part (results only)",
    ),
    (
        FAULT_COLUMNS[1],
        "[[faults]]: seconds from its first failed statement to service again (results only)",
    ),
    (
        FAULT_COLUMNS[2],
        "[[faults]]: seconds from it to the first transaction that succeeded (results only)",
    ),
    (
        FAULT_COLUMNS[3],
        "[[faults]]: seconds from it until the per-second p99 was back (results only)",
    ),
    (
        FAULT_COLUMNS[4],
        "[[faults]]: the transactions it cost (results only)",
    ),
];

/// results.csv's fault columns (#30), filled by the runner for a step with `[[faults]]`: when
/// the first fault fired, its error window, first success, p99 recovery and lost transactions.
pub const FAULT_COLUMNS: [&str; 5] = [
    "fault_at_s",
    "fault_error_window_s",
    "fault_first_ok_s",
    "fault_p99_recovered_s",
    "fault_lost_txn",
];

/// The metric of a custom workload's `headline` (its value; the name the workload gives it,
/// e.g. `tpmC`, is results.csv's `headline_name`).
pub const HEADLINE: &str = "headline";

/// The metric of a run with `max_threads` (#30): how far its pool grew.
pub const THREADS_PEAK: &str = "threads_peak";

/// The metric that counts `rate` arrivals the run could not offer (see
/// [`config::RateOverflow`]): 0 when every arrival was queued, absent without `rate`.
pub const DROPPED: &str = "dropped";

/// The metric that counts events whose latency exceeded `latency_limit` (pgbench's late
/// transactions); absent without the option.
pub const LATE: &str = "late";

/// The metric that counts `rate` arrivals a worker took already later than `latency_limit`
/// and did not run (pgbench's skipped transactions); absent without both options.
pub const SKIPPED: &str = "skipped";

/// The value of metric `name`, if the workload reported it.
pub fn metric(metrics: &Metrics, name: &str) -> Option<f64> {
    metrics.iter().find(|(n, _)| *n == name).map(|&(_, v)| v)
}

/// What a finished (or interrupted) run step measured.
#[derive(Clone, Debug)]
pub struct StepOutcome {
    /// Total time as sysbench reports it (wall time from start to the final report).
    pub seconds: f64,
    pub events: u64,
    /// DB counters; `None` for system workloads.
    pub sql: Option<SqlCounters>,
    pub latency: LatencySummary,
    pub fairness_events_avg: f64,
    pub fairness_events_stddev: f64,
    pub fairness_time_avg: f64,
    pub fairness_time_stddev: f64,
    /// All event latencies in nanoseconds.
    pub histogram: hdrhistogram::Histogram<u64>,
    /// The step was stopped by the stop flag before its limits were reached, or cut short by
    /// `forced_shutdown` (then [`StepOutcome::cut_short`] says so).
    pub interrupted: bool,
    /// Why the step ended before its limits without a stop request (`forced_shutdown`): the
    /// row's `error`; `None` otherwise.
    pub cut_short: Option<String>,
    /// Workload-specific measurements over the whole run, named from [`METRICS`].
    pub metrics: Metrics,
    /// Per transaction (and per statement when asked) of a custom workload; empty for the
    /// built-in workloads.
    pub transactions: Vec<TxnStats>,
    /// Per worker thread: (events, busy ns), for the threads fairness of a step merged from
    /// several clients; empty where nobody needs it (imported logs).
    pub per_thread: Vec<(u64, u64)>,
    /// The SQL errors of the measured period by code (results.csv's `error_codes`); empty for
    /// workloads without SQL and for imported logs.
    pub error_codes: session::retry::ErrorCodes,
    /// The warmup the run excluded and whether its throughput held steady over the measured
    /// window (#29); unknown for imported logs and multi-client merges.
    pub steady: Steadiness,
    /// A run with `[[phases]]` (#30): each measured phase's own measurements, in order (the
    /// outcome itself covers all of them); empty otherwise.
    pub phases: Vec<PhaseOutcome>,
    /// A run step with `[[groups]]` (#31): each group's own measurements, in the step's group
    /// order (the outcome itself is their exact merge); empty otherwise.
    pub groups: Vec<GroupOutcome>,
    /// A `rate` run's service time and schedule lag (#30); `None` without `rate`.
    pub open_loop: Option<OpenLoop>,
}

/// What one measured phase of a run measured ([`phases::Phase`]): events, latency and
/// statement counts of its own period. Its `sql` counts are the workload's totals over the
/// phase (transactions = events); the workload's own metrics and transactions stay on the
/// whole step's outcome, except the phase's `dropped` arrivals.
#[derive(Clone, Debug)]
pub struct PhaseOutcome {
    /// The phase's position in the step's timeline (0-based, warmups included).
    pub index: usize,
    pub outcome: StepOutcome,
}

/// What one worker group of a run step measured (#31): its own workload's outcome.
#[derive(Clone, Debug)]
pub struct GroupOutcome {
    /// The group's position in the step's groups (0-based).
    pub index: usize,
    pub outcome: StepOutcome,
}

/// What a `rate` run measured besides its latency (#30). The latency of a rate run (its
/// `latency`, `histogram`, the `lat_*` columns) is the *response time*, from each arrival's
/// intended start to the event's end; it splits into the two parts here, per event
/// `latency = lag + service`.
#[derive(Clone, Debug)]
pub struct OpenLoop {
    /// From the moment a worker took the arrival (and began the event) to the event's end:
    /// what the system under test took.
    pub service: Timing,
    /// From the arrival's intended start to the moment a worker took it: the time it waited
    /// for a free worker (the queueing delay).
    pub lag: Timing,
}

impl OpenLoop {
    /// The service times and schedule lags of a `rate` run's workers, merged as their
    /// latencies are (exact HDR addition); `None` without `rate` (no worker kept them).
    pub fn of_workers(
        workers: &[crate::stats::WorkerStats],
        percentile: f64,
    ) -> Result<Option<OpenLoop>, String> {
        use crate::stats::{self, OpenLoopStats, WorkerStats};
        let parts: Vec<&OpenLoopStats> = workers
            .iter()
            .filter_map(|w| w.open_loop.as_deref())
            .collect();
        if parts.is_empty() {
            return Ok(None);
        }
        let timing = |each: fn(&OpenLoopStats) -> &WorkerStats| -> Result<Timing, String> {
            let all = parts.iter().map(|p| each(p));
            let histogram = stats::merge(all.clone())?;
            Ok(Timing {
                summary: stats::latency_summary(all, &histogram, percentile),
                histogram,
            })
        };
        Ok(Some(OpenLoop {
            service: timing(|p| &p.service)?,
            lag: timing(|p| &p.lag)?,
        }))
    }
}

/// One distribution of times: its summary (exact min/avg/max/sum) and its HDR histogram in
/// nanoseconds, from which a multi-client step merges the summary exactly.
#[derive(Clone, Debug)]
pub struct Timing {
    pub summary: LatencySummary,
    pub histogram: hdrhistogram::Histogram<u64>,
}

/// What a run excluded as its warmup and the stationarity verdict of what it measured
/// ([`crate::stats::steady`]): results.csv's `warmup_s`, `steady`, `trend_pct_per_min`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Steadiness {
    /// Seconds run before the measured period (`warmup_time`, fixed or found by `"auto"`).
    pub warmup_s: f64,
    /// `warmup_time = "auto"`: what MSER-5 found; `None` for a fixed warmup.
    pub auto: Option<AutoWarmup>,
    /// The trend test over the measured period's per-second throughput; `None`: unknown
    /// (under 20 s, no events).
    pub trend: Option<crate::stats::steady::Trend>,
}

impl Steadiness {
    /// The verdict (unknown without a trend).
    pub fn verdict(&self) -> crate::stats::steady::Verdict {
        self.trend.map(|t| t.verdict).unwrap_or_default()
    }
}

/// What `warmup_time = "auto"` found when it ended the warmup.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AutoWarmup {
    /// MSER-5's truncation point over the warmup's series, seconds from the start: where the
    /// transient ended. The warmup itself (`warmup_s`) ran on until that was sure.
    pub transient_s: f64,
    /// `false` when the throughput had not settled by the cap and measuring began anyway.
    pub settled: bool,
}

/// What one transaction (or one statement, `statement` set) of a custom workload did in a run.
#[derive(Clone, Debug)]
pub struct TxnStats {
    /// The transaction's name, or `<transaction>.<statement>` for a statement.
    pub name: String,
    /// Whether this is a statement's line rather than a transaction's.
    pub statement: bool,
    /// Committed (or, for statements, executed without error).
    pub count: u64,
    pub errors: u64,
    /// Deliberate rollbacks (the `rollback` probability, `on_mismatch = "rollback"`).
    pub rollbacks: u64,
    /// Latencies in nanoseconds of the counted ones.
    pub histogram: hdrhistogram::Histogram<u64>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SqlCounters {
    pub transactions: u64,
    pub reads: u64,
    pub writes: u64,
    pub other: u64,
    pub errors: u64,
    pub reconnects: u64,
}

impl SqlCounters {
    /// The statements counted since the totals `base` were read (a period's, from two readings
    /// of [`driver::Workload::sql_totals`]), with `transactions` the period's events.
    pub fn since(&self, base: &SqlCounters, transactions: u64) -> SqlCounters {
        SqlCounters {
            transactions,
            reads: self.reads.saturating_sub(base.reads),
            writes: self.writes.saturating_sub(base.writes),
            other: self.other.saturating_sub(base.other),
            errors: self.errors.saturating_sub(base.errors),
            reconnects: self.reconnects.saturating_sub(base.reconnects),
        }
    }
}

/// One step for the engine: which workload, with which options, on which target, doing what.
/// [`execute`] carries it out.
pub struct StepRequest<'a> {
    /// The workload, as the caller's catalog resolved it (a plan step's spec).
    pub workload: &'static WorkloadSpec,
    /// The step's options (the workload's and the general ones).
    pub options: &'a Options,
    /// The suite's `[target]` (or a sysbench line's `--mysql-*` options) for the workloads that
    /// need a database; `None` gives them a local SQLite file ([`Target::sqlite_default`]).
    /// System workloads ignore it.
    pub target: Option<&'a Target>,
    pub kind: StepKind<'a>,
}

impl<'a> StepRequest<'a> {
    /// A request of `kind` for `workload` without a target.
    pub fn new(workload: &'static WorkloadSpec, options: &'a Options, kind: StepKind<'a>) -> Self {
        StepRequest {
            workload,
            options,
            target: None,
            kind,
        }
    }

    /// The request on `target` (see [`StepRequest::target`]).
    pub fn on(self, target: Option<&'a Target>) -> Self {
        StepRequest { target, ..self }
    }
}

/// What a [`StepRequest`] asks the workload to do.
pub enum StepKind<'a> {
    /// A measured run; the only kind that reports intervals and returns a [`StepOutcome`].
    Run(RunRequest<'a>),
    /// Create the workload's data (on every host with `prepare_on = "each"`).
    Prepare,
    /// Remove the workload's data (on every host with `prepare_on = "each"`).
    Cleanup,
    /// The workload's `[[checks]]` on its data (a custom workload's check step).
    Check,
    /// `[suite] dataset = "existing"`: that the data the runs read is there, before anything
    /// runs, on every host a prepare would have run on ([`driver::Admin::check_existing`]).
    CheckExisting,
    /// The workload's own command of this name (a sysbench Lua script's
    /// `sysbench.cmdline.commands` entry, a `before_runs`/`after_runs` step of a suite).
    Command(&'a str),
    /// sysbench's `prewarm` command of a workload that has data.
    Prewarm,
}

/// How a run step runs beyond its options. The default is a whole step of a suite.
#[derive(Default)]
pub struct RunRequest<'a> {
    /// What a `rate` the workers cannot keep up with does (suites count, `sbsuite sysbench`
    /// stops).
    pub overflow: RateOverflow,
    /// This client's share of a step driven from several clients (`sbsuite agent`): the
    /// options then hold this client's `threads`, `rate` and `events`.
    pub shard: Option<Shard>,
    /// Called once every worker has connected and prepared its statements, before the clock
    /// starts; the run starts when it returns (an error aborts it before any event). A
    /// multi-client agent reports ready there and waits for the coordinator's `go`.
    pub gate: Option<&'a mut dyn FnMut() -> Result<(), EngineError>>,
    /// The step's timeline (`[[phases]]`, #30); empty: one phase of the step's options.
    pub phases: &'a [phases::Phase],
}

/// What [`execute`] did.
#[derive(Debug)]
pub enum Executed {
    /// A run step's measurements.
    Ran(Box<StepOutcome>),
    /// Any other kind of step finished.
    Done,
}

impl Executed {
    /// The outcome of a [`StepKind::Run`] request.
    ///
    /// # Panics
    /// When the request was of another kind (a caller's mistake, not a condition of the run).
    pub fn into_outcome(self) -> StepOutcome {
        match self {
            Executed::Ran(o) => *o,
            Executed::Done => panic!("only a run request has an outcome"),
        }
    }
}

/// Observes nothing: for the steps that are not runs, and runs nobody watches.
impl StepObserver for () {
    fn interval(&mut self, _: &IntervalSample) {}
}

/// Carries out one step. A run prints sysbench's banner, interim lines and final report to
/// `out`, tells `observer` about each interim report (and live samples, when it wants them),
/// and returns what was measured; the other kinds print what sysbench prints for them.
/// Setting `stop` ends the step early (a run's outcome is then marked interrupted).
pub fn execute(
    request: StepRequest<'_>,
    out: &mut dyn Write,
    observer: &mut dyn StepObserver,
    stop: &AtomicBool,
) -> Result<Executed, EngineError> {
    let StepRequest {
        workload,
        options,
        target,
        kind,
    } = request;
    match kind {
        StepKind::Run(run) => {
            return run_step(workload, options, target, run, out, observer, stop)
                .map(|o| Executed::Ran(Box::new(o)));
        }
        StepKind::Prepare => prepare_step(workload, options, target, false, out, stop),
        StepKind::Cleanup => prepare_step(workload, options, target, true, out, stop),
        StepKind::CheckExisting => check_existing(workload, options, target),
        StepKind::Check => {
            let (_, _, engine) = step_engine(workload, options, target)?;
            engine.admin().check(out, stop)
        }
        StepKind::Command(name) => {
            let (_, _, engine) = step_engine(workload, options, target)?;
            engine.admin().command(name, out, stop)
        }
        StepKind::Prewarm => {
            let (_, config, engine) = step_engine(workload, options, target)?;
            write_banner_at(out, config.verbosity)?;
            // Only the Lua scripts have `prewarm`: their `print` ignores the verbosity.
            engine.admin().prewarm(out, stop)
        }
    }
    .map(|()| Executed::Done)
}

/// Builds the workload from its spec, its options, the parsed general options and its target
/// (the default SQLite file when a database workload has none).
fn make(
    spec: &'static WorkloadSpec,
    options: &Options,
    run: &RunConfig,
    target: Option<&Target>,
) -> Result<Box<dyn driver::Workload>, EngineError> {
    let default;
    let target = match target {
        Some(t) => t,
        None => {
            default = Target::sqlite_default();
            &default
        }
    };
    (spec.build)(&Setup::new(spec, options, &run.for_workload(), target))
}

/// A run step: its general options parsed with the request's overflow and shard, the workload
/// built, the driver started.
fn run_step(
    workload: &'static WorkloadSpec,
    options: &Options,
    target: Option<&Target>,
    run: RunRequest<'_>,
    out: &mut dyn Write,
    observer: &mut dyn StepObserver,
    stop: &AtomicBool,
) -> Result<StepOutcome, EngineError> {
    let mut config = RunConfig {
        rate_overflow: run.overflow,
        shard: run.shard,
        ..RunConfig::from_options(options)?
    };
    config.set_phases(run.phases)?;
    if config.shard.is_some() && config.start_threads.is_some() {
        return Err(EngineError::Failed(
            "option `max_threads` and [clients] do not go together yet: each client would grow \
             its own pool; run the step from one client, or set `threads` instead"
                .into(),
        ));
    }
    let engine = make(workload, options, &config, target)?;
    let mut filtered = console::LevelFilter::new(out, config.verbosity);
    let mut open = || Ok(());
    let gate = run.gate.unwrap_or(&mut open);
    driver::run_owned_gated(engine, &config, &mut filtered, observer, stop, gate)
}

/// A prepare (or cleanup when `cleanup`) step of a workload that has data.
fn prepare_step(
    workload: &'static WorkloadSpec,
    options: &Options,
    target: Option<&Target>,
    cleanup: bool,
    out: &mut dyn Write,
    stop: &AtomicBool,
) -> Result<(), EngineError> {
    // `prepare_on = "each"`: the step runs on every host in turn, each with its own login
    // (sharded setups); otherwise on the target as it is (the first host).
    let targets = target.map(Target::prepare_targets).unwrap_or_default();
    if targets.len() < 2 {
        return prepare_on(workload, options, target, cleanup, None, out, stop);
    }
    for (i, t) in targets.iter().enumerate() {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        let line = format!(
            "{} on host {} of {}: {}\n",
            if cleanup { "Cleaning up" } else { "Preparing" },
            i + 1,
            targets.len(),
            t.endpoint(0)
        );
        prepare_on(
            workload,
            options,
            Some(t),
            cleanup,
            Some((i, &line)),
            out,
            stop,
        )?;
    }
    Ok(())
}

/// One prepare or cleanup on `target`; `host` is the host's index and the line that
/// introduces it when the step runs on each host (the banner comes once, before the first).
fn prepare_on(
    workload: &'static WorkloadSpec,
    options: &Options,
    target: Option<&Target>,
    cleanup: bool,
    host: Option<(usize, &str)>,
    out: &mut dyn Write,
    stop: &AtomicBool,
) -> Result<(), EngineError> {
    let (spec, config, engine) = step_engine(workload, options, target)?;
    // sysbench prints its banner line and a blank line before a prepare or cleanup of a test
    // that has data; the others have nothing to prepare and stay silent.
    if spec.data.family.is_some() && host.is_none_or(|(i, _)| i == 0) {
        write_banner_at(out, config.verbosity)?;
    }
    if let Some((_, line)) = host {
        out.write_all(line.as_bytes())
            .map_err(EngineError::report)?;
    }
    // sysbench's Lua scripts (the database workloads) report their progress with Lua's
    // `print`, which no verbosity silences; fileio reports through its logger, at level 3.
    if spec.needs_target {
        engine.admin().prepare(cleanup, out, stop)
    } else {
        engine.admin().prepare(
            cleanup,
            &mut console::LevelFilter::new(out, config.verbosity),
            stop,
        )
    }
}

/// The workload of a step that is not a run (prepare, cleanup, check, command, prewarm), with
/// its general options parsed as those steps read them.
fn step_engine(
    workload: &'static WorkloadSpec,
    options: &Options,
    target: Option<&Target>,
) -> Result<(&'static WorkloadSpec, RunConfig, Box<dyn driver::Workload>), EngineError> {
    let config = RunConfig::for_prepare(options)?;
    let engine = make(workload, options, &config, target)?;
    Ok((workload, config, engine))
}

/// The banner before a prepare, cleanup or prewarm: a level-3 line, as in sysbench.
fn write_banner_at(out: &mut dyn Write, verbosity: u8) -> Result<(), EngineError> {
    console::write_banner(&mut console::LevelFilter::new(out, verbosity))
        .map_err(EngineError::report)
}

/// [`StepKind::CheckExisting`] on every host a prepare would have run on
/// (`prepare_on = "each"`: each host has its own tables).
fn check_existing(
    workload: &'static WorkloadSpec,
    options: &Options,
    target: Option<&Target>,
) -> Result<(), EngineError> {
    let targets = target.map(Target::prepare_targets).unwrap_or_default();
    if targets.len() < 2 {
        let (_, _, engine) = step_engine(workload, options, target)?;
        return engine.admin().check_existing();
    }
    for t in &targets {
        let (_, _, engine) = step_engine(workload, options, Some(t))?;
        engine.admin().check_existing().map_err(|e| match e {
            EngineError::Failed(_) | EngineError::Io { .. } | EngineError::Sql { .. } => {
                EngineError::Failed(format!("on host {}: {e}", t.endpoint(0)))
            }
            e => e,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    fn cpu_options(events: i64) -> Options {
        let mut o = Options::default();
        for (k, v) in [
            ("threads", Value::Int(2)),
            ("events", Value::Int(events)),
            ("time", Value::Int(10)),
            ("report_interval", Value::Int(0)),
            ("percentile", Value::Float(95.0)),
            ("cpu_max_prime", Value::Int(1000)),
        ] {
            o.0.insert(k.into(), v);
        }
        o
    }

    #[test]
    fn cpu_prepare_is_a_silent_no_op() {
        let mut out = Vec::new();
        let stop = AtomicBool::new(false);
        let options = cpu_options(1);
        for kind in [StepKind::Prepare, StepKind::Cleanup] {
            let request = StepRequest::new(&cpu::SPEC, &options, kind);
            execute(request, &mut out, &mut (), &stop).expect("no-op");
        }
        assert!(out.is_empty());
    }

    #[test]
    fn cpu_run_step_prints_sysbench_shape() {
        let mut out = Vec::new();
        let stop = AtomicBool::new(false);
        let options = cpu_options(40);
        let request = StepRequest::new(&cpu::SPEC, &options, StepKind::Run(RunRequest::default()));
        let o = execute(request, &mut out, &mut (), &stop)
            .expect("runs")
            .into_outcome();
        assert_eq!(o.events, 40);
        assert!(o.sql.is_none() && !o.interrupted);
        let text = String::from_utf8(out).expect("utf8");
        assert!(text.contains(
            "Number of threads: 2\nInitializing random number generator from current time\n\n\nPrime numbers limit: 1000\n\nInitializing worker threads...\n\nThreads started!\n\nCPU speed:\n    events per second: "
        ), "{text}");
        assert!(
            text.contains("\n\nGeneral statistics:\n    total time:"),
            "{text}"
        );
        assert!(text.ends_with("\n\n"));
    }
}
