//! Serde types that mirror the suite file's tables, and the source of the JSON schema.
//!
//! `[defaults]` and `[matrix]` hold sysbench option names, an open set that depends on the
//! workloads, so they stay loose TOML values here and are checked key by key against the
//! workload specs in [`super::validate`], where errors can name the option and suggest a spelling.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::db::{Driver, PsMode, RawTarget, Sockets};
use crate::engine::Catalog;
use crate::value::Value;

/// A suite file.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "sbsuite suite file")]
pub struct RawSuite {
    /// What the suite is called and how it repeats.
    pub suite: SuiteSection,
    /// The database to benchmark; absent for system workloads (cpu, memory, fileio, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<RawTarget>,
    /// Option values shared by every step (sysbench option names with `_`: `time`,
    /// `report_interval`, `table_size`, ...).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(schema_with = "defaults_schema")]
    pub defaults: IndexMap<String, toml::Value>,
    /// The axes of the cross product (in nesting order, outermost first), plus `exclude`,
    /// `include` and `zip`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(schema_with = "matrix_schema")]
    pub matrix: IndexMap<String, toml::Value>,
    /// Server configuration variants: the outermost loop of the plan.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variant: Vec<RawVariant>,
    /// Shell commands around the suite, each variant, each dataset and each step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<RawHooks>,
    /// Workloads declared in TOML: `[workloads.NAME]` with its options, schema, load, params
    /// and transactions (read from the file itself, in the order written).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(schema_with = "workloads_schema")]
    pub workloads: IndexMap<String, toml::Value>,
    /// Where run steps execute: several client processes or machines driving the target at
    /// once, merged into one row per step. Absent: everything runs in this process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<RawClients>,
    /// A timeline every run step follows instead of one shape for `time` seconds (#30):
    /// phases run one after the other on one pool of connections, each measured on its own
    /// (results.csv rows with a `phase`, intervals tagged) and together (the step's row).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<RawPhase>,
    /// Worker groups (#31): several workloads run side by side in every run step, each group
    /// with its own workload, options, threads and rate, started together and measured
    /// together (the step's row) and apart (one results.csv row and interval series per group).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<RawGroup>,
    /// Faults on the timeline of every run step (#30): a shell command or SQL run at `at`
    /// seconds into the measured part, its error window and recovery measured into
    /// results.csv's `fault_*` columns and `faults.csv`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<RawFault>,
    /// Search the arrival rate for the highest one whose latency percentile stays under a
    /// target (#30): `sbsuite run` runs the search of `sbsuite capacity` on the suite's one
    /// matrix point instead of the plan's runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<RawCapacity>,
}

/// `[[faults]]`: something done to the system under test at one moment of every run step
/// (restart the server, kill a session, fail over), while the workers run; the step measures
/// how long errors lasted, when the first transaction succeeded again, when the per-second p99
/// came back and how many transactions the fault cost. Exactly one of `command` and `sql`.
#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawFault {
    /// Its name in faults.csv and messages (letters, digits, `-`, `_`, `.`); default
    /// `fault1`, `fault2`… by position.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// When it fires: seconds after the start of the measured part of the step (after
    /// `warmup_time`), at least 1 (the figures compare with the time before it) and less than
    /// the step's `time`.
    #[schemars(range(min = 1))]
    pub at: f64,
    /// A shell command (`sh -c`, in its own process group), a minijinja template that sees
    /// what the hooks of a step see plus `fault` (its name) and `at`; its output goes to
    /// hooks.log. Killed with its process group at `timeout`; one still running when the step
    /// ends is waited for until then (a restart cut off half-way would leave the server down).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// SQL statements run in order on a connection of their own to the step's target (opened
    /// when the fault fires, never a worker's), each a minijinja template like `command`; a
    /// statement still running when the step ends is cancelled on the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql: Option<Statements>,
    /// How far above its pre-fault value (the p99 of the up to 10 s before the fault) the
    /// per-second p99 may be and count as recovered, in percent (default 20).
    #[serde(default = "fault_tolerance")]
    #[schemars(range(min = 0))]
    pub tolerance: f64,
    /// Seconds `command` may run before it is killed with its process group and fails the
    /// row (default 60).
    #[serde(default = "fault_timeout")]
    #[schemars(range(min = 1))]
    pub timeout: u64,
}

impl RawFault {
    /// Its name: `name`, or `fault<N>` for the entry at 0-based `index`.
    pub fn label(&self, index: usize) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("fault{}", index + 1))
    }
}

fn fault_tolerance() -> f64 {
    20.0
}

fn fault_timeout() -> u64 {
    60
}

/// One SQL statement (`sql = "KILL 12"`) or several, run in order (`sql = ["…", "…"]`).
/// Deserialized by hand: serde's untagged error ("did not match any variant") names neither
/// form.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
#[serde(untagged)]
pub enum Statements {
    One(String),
    Many(Vec<String>),
}

impl Statements {
    /// The statements, in order.
    pub fn list(&self) -> &[String] {
        match self {
            Statements::One(s) => std::slice::from_ref(s),
            Statements::Many(v) => v,
        }
    }
}

impl<'de> Deserialize<'de> for Statements {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Statements;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a statement (sql = \"DO 1\") or a list of them (sql = [\"…\", \"…\"])")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Statements, E> {
                Ok(Statements::One(v.to_string()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Statements, A::Error> {
                let mut all = Vec::new();
                while let Some(s) = seq.next_element::<String>()? {
                    all.push(s);
                }
                Ok(Statements::Many(all))
            }
        }
        d.deserialize_any(V)
    }
}

/// `[capacity]` as written (#30; checked by [`super::capacity`]).
#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct RawCapacity {
    /// The latency bound the rate must meet: `"p99<10ms"` (`p95`, `p99`, `avg` or `max`, in
    /// milliseconds).
    #[schemars(regex(pattern = r"^\s*(p95|p99|avg|max)\s*<\s*[0-9]+(\.[0-9]+)?\s*(ms)?\s*$"))]
    pub target: String,
    /// The lowest rate tried, per second (default 1): below it the search gives up.
    #[serde(default = "min_rate")]
    pub min_rate: f64,
    /// The search stops when the highest passing and the lowest failing rate are within this
    /// many % of each other (default 5).
    #[serde(default = "precision")]
    pub precision: f64,
    /// Repetitions of the rate found (default 3): the answer holds when most of them pass.
    #[serde(default = "confirm")]
    #[schemars(range(min = 1))]
    pub confirm: i64,
}

/// Default of `min_rate` (also `sbsuite capacity --min-rate`).
pub const MIN_RATE: f64 = 1.0;
/// Default of `precision` (also `sbsuite capacity --precision`).
pub const PRECISION: f64 = 5.0;
/// Default of `confirm` (also `sbsuite capacity --confirm`).
pub const CONFIRM: u32 = 3;

fn min_rate() -> f64 {
    MIN_RATE
}

fn precision() -> f64 {
    PRECISION
}

fn confirm() -> i64 {
    i64::from(CONFIRM)
}

/// `[[groups]]`: one group of workers of every run step (#31).
#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct RawGroup {
    /// Its name in the `group` column of results.csv and intervals.csv and in the `groups`
    /// matrix axis (letters, digits, `-`, `_`; default `group1`, `group2`, … by position).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The workload its workers run (default: the step's `workload`). A database workload
    /// (built-in OLTP, a `[workloads.NAME]` definition or a Lua script) on the step's target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// Its worker threads (required: every group says how many it runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub threads: Option<u64>,
    /// Its arrivals per second (Poisson, as `rate`); default: closed loop (its threads back to
    /// back), whatever the step's `rate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<u64>,
    /// Options of its workload that differ from the step's (`[defaults]` and the matrix
    /// cell): e.g. `{ report_interval = 5 }` or a custom workload's own options.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(schema_with = "defaults_schema")]
    pub options: IndexMap<String, toml::Value>,
}

/// `[[phases]]`: one phase of every run step's timeline.
#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct RawPhase {
    /// Its name in the `phase` column of results.csv and intervals.csv (default `phase1`,
    /// `phase2`, … by position).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Seconds the phase runs (the step's `time` is the measured phases' total).
    #[schemars(range(min = 1))]
    pub time: u64,
    /// Threads running events in the phase (default: the step's `threads`). The step opens
    /// the largest phase's count of connections before its clock starts; a phase with fewer
    /// parks the others, connections kept open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub threads: Option<u64>,
    /// Arrivals per second (Poisson, as `rate`): a number for a constant rate, `[from, to]`
    /// for a linear ramp over the phase, 0 for closed loop (threads back to back). Default:
    /// the step's `rate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<RawRate>,
    /// Run but not measured (excluded from every statistic, as `warmup_time`); only the
    /// leading phases may be.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warmup: bool,
    /// Custom workloads: the transaction mix of this phase, `{ name = weight }` for the
    /// transactions whose weight changes (the others keep their declared weight).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub weights: std::collections::BTreeMap<String, u32>,
}

/// A phase's `rate`: constant, or a linear ramp `[from, to]`.
#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone, Copy, PartialEq)]
#[serde(untagged)]
pub enum RawRate {
    Constant(f64),
    Ramp([f64; 2]),
}

impl RawRate {
    /// (from, to).
    pub fn bounds(self) -> (f64, f64) {
        match self {
            RawRate::Constant(r) => (r, r),
            RawRate::Ramp([a, b]) => (a, b),
        }
    }
}

/// `[clients]`: the clients that run each run step together (prepare, cleanup, variants,
/// checks and hooks stay in this process). Each client starts `sbsuite agent`; threads,
/// `rate` and `events` are split between them and the results merged exactly.
#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct RawClients {
    /// The clients: `"local"` or `"local:N"` (child processes on this machine),
    /// `"ssh:DEST"` (user@host or an ssh_config alias, through the system's ssh),
    /// `"kubernetes:NAMESPACE/SELECTOR"` (every Running pod the label selector matches,
    /// through `kubectl exec -i`).
    pub list: Vec<String>,
    /// The sbsuite binary on the clients (default `sbsuite`, looked up in the remote PATH);
    /// local clients run this executable unless it is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<String>,
    /// Extra ssh arguments before the destination, e.g. `["-F", "ssh_config"]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ssh_options: Vec<String>,
    /// The kubectl program (default `kubectl`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubectl: Option<String>,
    /// `kubectl --context`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_context: Option<String>,
    /// `kubectl exec -c`: the container with the sbsuite binary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_container: Option<String>,
    /// Seconds an agent may stay silent (beyond its one-second beat) before its step fails
    /// (default 10).
    #[serde(default = "clients_timeout")]
    pub timeout: u64,
    /// Seconds starting an agent (ssh or kubectl connection, hello) may take (default 30).
    #[serde(default = "clients_connect_timeout")]
    pub connect_timeout: u64,
}

fn clients_timeout() -> u64 {
    10
}

fn clients_connect_timeout() -> u64 {
    30
}

/// What a failure does: `stop` the suite (cleanups and restores still run), `skip` what it
/// belongs to (a failed step: the rest of its dataset; a hook: what it guards), or `continue`.
#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum OnError {
    Stop,
    Skip,
    #[default]
    Continue,
}

/// `[hooks]`: shell commands (`sh -c`, minijinja templates) run before and after the suite,
/// each variant, each dataset and each step. Their output goes to `hooks.log` in the run
/// directory.
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct RawHooks {
    /// Seconds a hook may run before it is killed and counts as failed (default 300).
    #[serde(default = "hook_timeout")]
    pub timeout: u64,
    /// What a failed hook does: `stop` (default), `skip` (what it guards) or `continue`.
    #[serde(default = "hook_policy")]
    pub on_error: OnError,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_suite: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_suite: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_variant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_variant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_dataset: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_dataset: Option<String>,
    /// Runs before every step (prepare, run and cleanup: `{{ kind }}` tells which).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_step: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_step: Option<String>,
}

fn hook_timeout() -> u64 {
    300
}

fn hook_policy() -> OnError {
    OnError::Stop
}

impl RawHooks {
    /// Every hook that is set, with its key.
    pub fn all(&self) -> Vec<(&'static str, &str)> {
        [
            ("before_suite", &self.before_suite),
            ("after_suite", &self.after_suite),
            ("before_variant", &self.before_variant),
            ("after_variant", &self.after_variant),
            ("before_dataset", &self.before_dataset),
            ("after_dataset", &self.after_dataset),
            ("before_step", &self.before_step),
            ("after_step", &self.after_step),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_deref().map(|v| (k, v)))
        .collect()
    }
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SuiteSection {
    /// Name of the suite; results go to `<results_dir>/<name>/<run-id>/`.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Repetitions of every run step (the whole sweep of a dataset is repeated), for
    /// significance: a count, or a rule `{ min = 3, max = 20, until = "ci95 < 2%" }` (at least
    /// `min`, then more until the 95 % interval of `metric`, and of the paired difference
    /// between interleaved variants, is narrower than ± the given % of it, at most `max`).
    #[serde(default)]
    pub repeat: Repeat,
    /// Directory that holds results, relative to the current directory.
    #[serde(default = "results_dir")]
    pub results_dir: String,
    /// minijinja template for run step names, e.g. `"{{ workload }}-t{{ threads }}"`; every
    /// option, `variant` and `repetition` can be used. Default: the workload and the matrix axes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_name: Option<String>,
    /// What a failed step does to the rest of the suite: `continue` (default: the next step),
    /// `skip` (the rest of its dataset; cleanup still runs) or `stop` (no further runs;
    /// cleanups and variant restores still run).
    #[serde(default)]
    pub on_error: OnError,
    /// How the runs of several `[[variant]]`s are ordered: `blocked` (default: every run of
    /// one variant, then the next), `interleaved` (on one shared dataset, each matrix point's
    /// repetition runs every variant back to back, in A B / B A order alternating) or
    /// `randomized` (the same blocks, each in a shuffled order drawn from `order_seed`).
    #[serde(default)]
    pub variant_order: VariantOrder,
    /// The seed of `variant_order = "randomized"`; without it one is drawn and stored in the
    /// run's suite.toml, so the order can be repeated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub order_seed: Option<i64>,
    /// A run whose `rate` could not be offered (arrivals dropped because every thread was busy
    /// and the event queue was full): `fail` (default: the row is `failed`, `error` says why)
    /// or `record` (the row stays `ok`). Either way the `dropped` column has the count.
    #[serde(default, skip_serializing_if = "RateOverflow::is_default")]
    pub rate_overflow: RateOverflow,
    /// Whose data the runs read: `prepare` (default: each dataset is prepared before its
    /// runs and cleaned up after them; a cleanup drops only the tables its run created) or
    /// `existing` (the tables are already there, as after `sysbench … prepare`: no prepare,
    /// no cleanup; before anything runs, every table the runs read is checked to be there
    /// with its rows).
    #[serde(default, skip_serializing_if = "DatasetSource::is_default")]
    pub dataset: DatasetSource,
    /// Serve live metrics as OpenMetrics text on `http://ADDR/metrics` while the suite runs
    /// (for Prometheus): `"HOST:PORT"`, or `":PORT"` for loopback. `sbsuite run --metrics`
    /// overrides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<String>,
    /// Files of workload definitions (`[workloads.NAME]` tables only), relative to the suite
    /// file, e.g. `["workloads/tpcc.toml"]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workloads: Vec<String>,
    /// Read what each run step cost (default true): the server's counters (fsyncs, redo/WAL
    /// bytes, reads, commits…), its process CPU and the host's disk I/O when it runs on this
    /// host or on `[target] server_host`, and this process's CPU, into `server_counters.csv` and
    /// results.csv's `*_per_txn` columns; with `report_interval`, also at each interval tick
    /// into intervals.csv's server columns. `false` reads nothing.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub server_cost: bool,
    /// Server counters to read besides the built-in ones: MySQL/MariaDB/OceanBase status
    /// names as `SHOW GLOBAL STATUS` lists them (`"Innodb_log_waits"`), PostgreSQL
    /// `VIEW.COLUMN` of `pg_stat_wal`, `pg_stat_database`, `pg_stat_bgwriter` or
    /// `pg_stat_checkpointer` (`"pg_stat_database.temp_files"`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_counters: Vec<String>,
}

fn is_true(b: &bool) -> bool {
    *b
}

/// `[suite] variant_order`: when each variant's runs happen.
#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum VariantOrder {
    /// Every run of the first variant, then every run of the next (each variant prepares its
    /// own datasets); the only order for `restart` variants.
    #[default]
    Blocked,
    /// Variants alternate per matrix point and repetition (A B, then B A, ...) on one shared
    /// dataset, so drift (warming caches, growing tables) hits them alike.
    Interleaved,
    /// Like `interleaved`, each block's variants in a shuffled order (seeded by `order_seed`).
    Randomized,
}

impl VariantOrder {
    /// The name used in the suite file.
    pub fn as_str(self) -> &'static str {
        match self {
            VariantOrder::Blocked => "blocked",
            VariantOrder::Interleaved => "interleaved",
            VariantOrder::Randomized => "randomized",
        }
    }

    /// Whether the variants' repetitions of one matrix point ran back to back, so that a
    /// comparison may pair them.
    pub fn pairs_repetitions(self) -> bool {
        self != VariantOrder::Blocked
    }
}

/// `[suite] rate_overflow`: what a run that dropped `rate` arrivals is.
#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum RateOverflow {
    /// The row is `failed`: the requested load was never offered, so its numbers must not be
    /// compared as if it had been.
    #[default]
    Fail,
    /// The row stays `ok` with the count in `dropped` (an overload study on purpose).
    Record,
}

impl RateOverflow {
    fn is_default(&self) -> bool {
        *self == RateOverflow::default()
    }
}

/// `[suite] dataset`: whether the suite prepares its data or runs on data that is there.
#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum DatasetSource {
    /// Each dataset is prepared before its runs and cleaned up after them.
    #[default]
    Prepare,
    /// The data is the user's, already in place: no prepare, no cleanup, checked before
    /// anything runs.
    Existing,
}

impl DatasetSource {
    pub fn is_default(&self) -> bool {
        *self == DatasetSource::default()
    }

    /// The name used in the suite file.
    pub fn as_str(self) -> &'static str {
        match self {
            DatasetSource::Prepare => "prepare",
            DatasetSource::Existing => "existing",
        }
    }
}

/// `[suite] repeat`: a count, or a rule that stops repeating once the result is sure (#29).
/// Deserialized by hand: serde's untagged error ("did not match any variant") names neither
/// form.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
#[serde(untagged)]
pub enum Repeat {
    /// Exactly this many repetitions.
    Count(i64),
    /// Repetitions until a confidence interval is narrow enough.
    Rule(RepeatRule),
}

impl<'de> Deserialize<'de> for Repeat {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Repeat;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a count (repeat = 3) or a rule (repeat = { min = 3, max = 20, until = \"ci95 < 2%\" })",
                )
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Repeat, E> {
                Ok(Repeat::Count(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Repeat, E> {
                Ok(Repeat::Count(i64::try_from(v).unwrap_or(i64::MAX)))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Repeat, A::Error> {
                RepeatRule::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(Repeat::Rule)
            }
        }
        d.deserialize_any(V)
    }
}

impl Default for Repeat {
    fn default() -> Self {
        Repeat::Count(1)
    }
}

/// `repeat = { min = 3, max = 20, until = "ci95 < 2%", metric = "tps" }`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RepeatRule {
    /// Repetitions always run (at least 2: an interval needs two).
    #[schemars(range(min = 2))]
    pub min: i64,
    /// Repetitions at most (the plan holds this many; those not needed are skipped).
    #[schemars(range(min = 2))]
    pub max: i64,
    /// When to stop: `"ci95 < N%"`, the 95 % confidence interval's half-width below N % of
    /// the metric (and of the paired difference between variants, with `variant_order`
    /// `interleaved` or `randomized`).
    #[schemars(regex(pattern = r"^\s*ci95\s*<\s*[0-9]+(\.[0-9]+)?\s*%\s*$"))]
    pub until: String,
    /// The results.csv column the interval is of: `tps` (default; `eps` for workloads without
    /// SQL), `eps`, `qps`, `lat_avg`, `lat_p95` or `lat_p99`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
}

/// The metrics `repeat.metric` may name.
pub const REPEAT_METRICS: &[&str] = &["tps", "eps", "qps", "lat_avg", "lat_p95", "lat_p99"];

impl RepeatRule {
    /// The target half-width in % from `until` (`"ci95 < 2%"` → 2), `None` when it does not
    /// parse.
    pub fn target_pct(&self) -> Option<f64> {
        let rest = self.until.trim().strip_prefix("ci95")?.trim_start();
        let rest = rest.strip_prefix('<')?.trim();
        let n: f64 = rest.strip_suffix('%')?.trim().parse().ok()?;
        (n.is_finite() && n > 0.0).then_some(n)
    }
}

fn results_dir() -> String {
    "results".to_string()
}

/// A server configuration variant.
#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct RawVariant {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Server variables set at runtime (MySQL `SET GLOBAL`, PostgreSQL `ALTER SYSTEM`).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub set_global: IndexMap<String, Value>,
    /// Settings that need a restart: render `template` to `path`, run `command`, wait until
    /// the server accepts connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart: Option<RawRestart>,
    /// Settings changed by the statements of `sql` (name → value), for servers whose settings
    /// are not MySQL variables or PostgreSQL parameters: OceanBase `ALTER SYSTEM SET` and
    /// `ALTER proxyconfig SET`, TiDB `SET CONFIG`, CockroachDB `SET CLUSTER SETTING`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub settings: IndexMap<String, Value>,
    /// How `settings` are applied, read back and restored: minijinja templates of SQL (also
    /// for the `settings` of `prepare` and `run` that have no `sql` of their own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql: Option<RawSqlSettings>,
    /// Settings in force only while the variant's datasets are prepared (obd's `build:`
    /// tuning): applied before each prepare step, restored after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prepare: Option<RawStage>,
    /// Settings in force only while the variant measures (obd's `test:` tuning): applied
    /// before the first run, check or command step after a prepare or another variant,
    /// restored before the cleanup and when the variant ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RawStage>,
}

impl RawVariant {
    /// The settings of `stage` (`prepare` or `run`), if the variant has any.
    pub fn stage(&self, stage: Stage) -> Option<&RawStage> {
        match stage {
            Stage::Prepare => self.prepare.as_ref(),
            Stage::Run => self.run.as_ref(),
        }
    }

    /// The statements of `stage`'s `settings`: its own `sql`, else the variant's.
    pub fn stage_sql(&self, stage: Stage) -> Option<&RawSqlSettings> {
        self.stage(stage)
            .and_then(|s| s.sql.as_ref())
            .or(self.sql.as_ref())
    }

    /// Whether the variant changes any server setting (in any stage).
    pub fn changes_server(&self) -> bool {
        !self.set_global.is_empty()
            || self.restart.is_some()
            || self.sql.is_some()
            || Stage::ALL.iter().any(|s| self.stage(*s).is_some())
    }
}

/// The part of each dataset's steps a variant's `prepare` or `run` settings apply to (#28).
/// The variant's own `set_global`, `settings` and `restart` apply to both; a cleanup step
/// runs with those alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// Prepare steps: the data is loaded.
    Prepare,
    /// Run, check and command steps: the data is measured (and checked).
    Run,
}

impl Stage {
    /// Both stages, in the order a dataset goes through them.
    pub const ALL: [Stage; 2] = [Stage::Prepare, Stage::Run];

    /// The key of the variant that holds the stage's settings.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Prepare => "prepare",
            Stage::Run => "run",
        }
    }
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A variant's `prepare` or `run` table: settings in force during that stage only, on top of
/// the variant's own (a name may be set per stage or for the whole variant, not both).
/// Restored when the stage ends: before the other stage, the cleanup and the next variant, on
/// errors and on Ctrl-C; `sbsuite restore` puts them back after a crash.
#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct RawStage {
    /// Server variables set at runtime for this stage (as the variant's `set_global`).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub set_global: IndexMap<String, Value>,
    /// Settings changed by `sql` for this stage (as the variant's `settings`).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub settings: IndexMap<String, Value>,
    /// The statements of this stage's `settings`; default: the variant's `sql`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql: Option<RawSqlSettings>,
    /// Not allowed (validation says why): a restart applies to the whole variant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub restart: Option<toml::Value>,
}

impl RawStage {
    /// Whether the stage sets nothing.
    pub fn is_empty(&self) -> bool {
        self.set_global.is_empty() && self.settings.is_empty() && self.sql.is_none()
    }
}

/// The statements of a variant's `settings` (#14). Every template sees `name` (the setting,
/// letters, digits, `_` and `.` only), `variant`, and in `apply`/`restore` `value`: the value
/// as a SQL literal (numbers and `true`/`false` bare, strings quoted and escaped for the
/// target's dialect, NULL for a setting that read as NULL), so a suite value cannot end the
/// statement. Each setting's value is read before `apply` and restored after the variant, at
/// the end of the suite, on errors and on Ctrl-C; `sbsuite restore` runs the saved restore
/// statements after a crash.
#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct RawSqlSettings {
    /// Sets one setting, e.g. `"ALTER SYSTEM SET {{ name }} = {{ value }}"` (OceanBase),
    /// `"SET GLOBAL {{ name }} = {{ value }}"` (MySQL), `"SET CONFIG tikv {{ name }} = {{ value }}"`
    /// (TiDB), `"SET CLUSTER SETTING {{ name }} = {{ value }}"` (CockroachDB).
    pub apply: String,
    /// A query whose first row holds the setting's current value, e.g.
    /// `"SHOW PARAMETERS LIKE '{{ name }}'"` or `"SHOW GLOBAL VARIABLES LIKE '{{ name }}'"`.
    pub read: String,
    /// The column of `read`'s first row that holds the value (by name, case-insensitive).
    /// Default: the only column (an error when `read` returns several).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    /// Puts one setting back; `value` is the original. Default: `apply` with the original.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore: Option<String>,
    /// A statement run once after the settings were applied and once after they were
    /// restored, e.g. `"SELECT pg_reload_conf()"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// Whether each setting is read back after `apply` and must equal the requested value
    /// (trimmed, ASCII case ignored; numbers compared as numbers; on/off, true/false, yes/no
    /// and 1/0 as booleans), on every row that names it; a value that differs is read again
    /// for up to 5 s (reloads and cluster parameters take effect asynchronously). `false` for
    /// settings the server reports in another form (e.g. `4G` read back as bytes).
    #[serde(default = "yes")]
    pub check: bool,
}

impl RawSqlSettings {
    /// The templates, for rendering ([`crate::db::sql_settings`]).
    pub fn templates(&self) -> crate::db::sql_settings::Templates<'_> {
        crate::db::sql_settings::Templates {
            apply: &self.apply,
            read: &self.read,
            restore: self.restore.as_deref(),
            after: self.after.as_deref(),
        }
    }
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct RawRestart {
    /// A minijinja template of the config file (relative to the working directory, else to
    /// the suite file). It sees `variant`, `settings` and each setting by name.
    pub template: String,
    /// Where the rendered file goes (a directory the server reads, e.g. `/etc/mysql/conf.d/`);
    /// a file already there is saved and put back afterwards.
    pub path: String,
    /// The shell command that restarts the server (`sh -c`); it runs again after the variant.
    pub command: String,
    /// Seconds to wait for the server after the restart command.
    #[serde(default = "ready_timeout")]
    pub ready_timeout: u64,
    /// Server variables the rendered file sets: passed to the template and read back after the
    /// restart (`SHOW GLOBAL VARIABLES` / `pg_settings`).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub settings: IndexMap<String, Value>,
}

fn ready_timeout() -> u64 {
    120
}

/// The JSON schema of one option value, from the workload specs (type, allowed values, default).
fn option_schema(name: &str) -> serde_json::Value {
    use crate::engine::option::Kind;
    use serde_json::json;
    if name == "workload" {
        let names: Vec<&str> = Catalog::builtin().all().map(|w| w.name).collect();
        let list = json!({ "anyOf": [{ "type": "string" }, { "type": "array", "items": { "type": "string" } }] });
        let script = json!({
            "description": "a sysbench Lua script (its options become ordinary options)",
            "type": "object",
            "properties": {
                "script": { "description": "the script's path, relative to the suite file; the workload's name in results", "type": "string" },
                "dataset": { "description": "the script's options that shape its data (default: all of them)", "allOf": [list] },
                "before_runs": { "description": "the script's commands run after the prepare, e.g. [\"prewarm\"]", "allOf": [list] },
                "after_runs": { "description": "the script's commands run after the dataset's runs, before the cleanup, e.g. [\"check\"]", "allOf": [list] },
                "sha256": { "description": "the script's SHA-256 (written into a run's suite.toml; a different script is refused)", "type": "string" },
                "resolved": { "description": "the script's absolute path (written into a run's suite.toml)", "type": "string" },
                "modules": { "description": "the modules it requires from the working directory: absolute path = sha256 (written into a run's suite.toml; a changed one is refused)", "type": "object", "additionalProperties": { "type": "string" } }
            },
            "required": ["script"],
            "additionalProperties": false
        });
        return json!({ "description": "the workload to run: a name, or { script = \"path.lua\" }", "anyOf": [{ "enum": names }, script] });
    }
    let Some(spec) = Catalog::builtin().any_option(name) else {
        return json!({});
    };
    let mut schema = match spec.kind {
        Kind::Bool => {
            json!({ "anyOf": [{ "type": "boolean" }, { "enum": ["on", "off", "true", "false"] }] })
        }
        Kind::Int { min, max } if max == i64::MAX => json!({ "type": "integer", "minimum": min }),
        Kind::Int { min, max } => json!({ "type": "integer", "minimum": min, "maximum": max }),
        Kind::IntOr { min, max, word } if max == i64::MAX => {
            json!({ "anyOf": [{ "type": "integer", "minimum": min }, { "const": word }] })
        }
        Kind::IntOr { min, max, word } => {
            json!({ "anyOf": [{ "type": "integer", "minimum": min, "maximum": max }, { "const": word }] })
        }
        Kind::Float { min, max } => json!({ "type": "number", "minimum": min, "maximum": max }),
        Kind::Size => {
            json!({ "anyOf": [{ "type": "integer", "minimum": 0 }, { "type": "string", "pattern": "^[0-9]+ *([kKmMgGtT]([iI]?[bB])?|[bB])?$" }] })
        }
        Kind::Str => json!({ "type": "string" }),
        Kind::Enum(choices) => json!({ "enum": choices }),
        Kind::List(Some(choices)) => {
            json!({ "anyOf": [{ "type": "string" }, { "type": "array", "items": { "enum": choices } }] })
        }
        Kind::List(None) => json!({ "anyOf": [{ "type": "string" }, { "type": "array" }] }),
    };
    let default = spec
        .default
        .map(|d| format!(" (default: {d})"))
        .unwrap_or_default();
    schema["description"] = json!(format!("{}{default}", spec.help));
    schema
}

fn option_names() -> impl Iterator<Item = &'static str> {
    std::iter::once("workload").chain(Catalog::builtin().all_option_names())
}

/// `[defaults]`: every known option with its type; anything else is flagged by editors too.
fn defaults_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let props: serde_json::Map<String, serde_json::Value> = option_names()
        .map(|n| (n.to_string(), option_schema(n)))
        .collect();
    schemars::json_schema!({ "type": "object", "properties": props, "additionalProperties": false })
}

/// `[matrix]`: each axis a list, a single value, or a range; plus `exclude`, `include`, `zip`.
fn matrix_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    use serde_json::json;
    let range = json!({
        "description": "`{ from = 32, to = 1024, factor = 2 }` (geometric) or `{ from = 1, to = 8, step = 1 }`",
        "type": "object",
        "properties": { "from": { "type": "number" }, "to": { "type": "number" }, "step": { "type": "number", "exclusiveMinimum": 0 }, "factor": { "type": "number", "exclusiveMinimum": 1 } },
        "required": ["from", "to"],
        "additionalProperties": false
    });
    let mut props: serde_json::Map<String, serde_json::Value> = option_names()
        .map(|n| {
            let one = option_schema(n);
            let description = one.get("description").cloned().unwrap_or(json!(""));
            let axis = json!({ "description": description, "anyOf": [{ "type": "array", "minItems": 1, "items": one }, range, one] });
            (n.to_string(), axis)
        })
        .collect();
    let cell = json!({ "type": "object", "additionalProperties": { "type": ["string", "number", "boolean", "array", "object"] } });
    props.insert("exclude".into(), json!({ "description": "cells to drop: every key of an entry must match (a list matches any of its items)", "type": "array", "items": cell }));
    props.insert("include".into(), json!({ "description": "extra cells appended after the cross product", "type": "array", "items": cell }));
    let conds: serde_json::Map<String, serde_json::Value> = crate::suite::STOP_WHEN_KEYS
        .iter()
        .map(|k| (k.to_string(), json!({ "type": "number", "minimum": 0 })))
        .collect();
    props.insert("stop_when".into(), json!({ "description": "threshold sweeps: stop raising an axis once a run meets a condition (gains in percent, latencies in ms), e.g. { threads = { tps_gain_below = 5, p95_above = 50 } }", "type": "object", "additionalProperties": { "type": "object", "properties": conds, "additionalProperties": false } }));
    props.insert("zip".into(), json!({ "description": "groups of axes that move together, e.g. [[\"tables\", \"table_size\"]]", "type": "array", "items": { "type": "array", "minItems": 2, "items": { "type": "string" } } }));
    schemars::json_schema!({ "type": "object", "properties": props, "additionalProperties": false })
}

/// `[workloads.NAME]`: the keys of a definition (their values are checked when the suite
/// loads, with positions).
fn workloads_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    use serde_json::json;
    let props: serde_json::Map<String, serde_json::Value> =
        crate::engine::custom::compile::WORKLOAD_KEYS
            .iter()
            .map(|k| (k.to_string(), json!({})))
            .collect();
    schemars::json_schema!({
        "description": "workloads declared in TOML: `[workloads.NAME]` with summary, options, schema, load, params, transactions, checks",
        "type": "object",
        "additionalProperties": { "type": "object", "properties": props, "additionalProperties": false }
    })
}

/// The JSON schema of suite files (draft-07, which editors' TOML plugins read best).
pub fn json_schema() -> String {
    let generator = schemars::generate::SchemaSettings::draft07().into_generator();
    let schema = generator.into_root_schema_for::<RawSuite>();
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}
