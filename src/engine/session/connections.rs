//! Connection models (#30): how a SQL workload's workers hold their connections, and what that
//! cost. Two options, declared once here and listed by every workload that honours them (the
//! OLTP scripts and custom workloads):
//! - `connect = "per_worker"` (the default, sysbench's model: one connection per worker for the
//!   whole run) or `"per_transaction"` (a new connection for every event, closed when the event
//!   ends: pgbench's `-C`, BenchBase's `newConnectionPerTxn`, an application without a pool);
//! - `idle_connections = N`: N more connections opened before the measured part, held idle
//!   through it and checked alive at its end ([`super::idle`]): the thousands of mostly idle
//!   sessions a pooler or an application server keeps open next to the busy ones.
//!
//! Shape, and why:
//! * Connects are timed where a connection is opened during the run (a per-transaction
//!   connect, a reconnect), around the client's own connect only: the statements prepared on
//!   the new connection are in the event's latency, not in the connect's. A worker's first
//!   connection, opened before the clock starts, is not counted.
//! * Each worker records its connects in an HDR histogram of its own ([`ConnectStats`]) and
//!   hands it over once when it finishes, as custom workloads hand over their transaction
//!   lines; the measured period's epoch (warmup end, checkpoints) decides which connects are
//!   the period's. Nothing shared is written per connect.
//! * What was measured becomes the outcome's metrics ([`CONNECTS`] and the others), so
//!   results.csv, a multi-client merge and the `Connections:` line of the report
//!   ([`write_report_line`]) all read one set of numbers.

use std::io::{self, Write};
use std::sync::Mutex;

use hdrhistogram::Histogram;

use crate::engine::config::Shard;
use crate::engine::option::{Kind, OptSpec, Reader};
use crate::engine::{EngineError, Metrics, StepOutcome, metric};

/// The connection options of every workload that honours them (OLTP scripts, custom
/// workloads), in help order.
pub static CONNECTION_OPTIONS: &[OptSpec] = &[
    OptSpec {
        name: "connect",
        kind: Kind::Enum(&["per_worker", "per_transaction"]),
        default: Some("per_worker"),
        help: "per_worker: each worker keeps one connection for the run; per_transaction: a new connection for every transaction, closed after it (pgbench -C)",
    },
    OptSpec {
        name: "idle_connections",
        kind: Kind::Int {
            min: 0,
            max: MAX_IDLE,
        },
        default: Some("0"),
        help: "extra connections opened before the run, held idle through it and checked alive at its end",
    },
];

/// The most idle connections a step may ask for.
pub const MAX_IDLE: i64 = 1_000_000;

/// results.csv's count of connections opened during the measured part.
pub const CONNECTS: &str = "connects";
/// Their average connect time, ms.
pub const CONNECT_AVG_MS: &str = "connect_avg_ms";
/// Their 95th percentile, ms.
pub const CONNECT_P95_MS: &str = "connect_p95_ms";
/// The slowest, ms.
pub const CONNECT_MAX_MS: &str = "connect_max_ms";
/// The idle connections held through the step.
pub const IDLE_CONNECTIONS: &str = "idle_connections";
/// Idle connections that did not answer at the end of the step.
pub const IDLE_DEAD: &str = "idle_dead";

/// How workers hold their connections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Model {
    /// One connection per worker for the whole run.
    #[default]
    PerWorker,
    /// A new connection per event, closed when the event ends.
    PerTransaction,
}

/// The connection options of a step, read once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnectOptions {
    pub model: Model,
    /// Idle connections this process holds (its share of a multi-client step).
    pub idle: usize,
    /// Idle connections of the whole step (every client's), for the check against the
    /// server's `max_connections`.
    pub idle_total: usize,
}

impl ConnectOptions {
    /// The options of a workload that lists [`CONNECTION_OPTIONS`]; `shard` splits the idle
    /// connections over the clients of a multi-client step as its threads are split.
    pub fn read(options: &Reader<'_>, shard: Option<Shard>) -> Result<ConnectOptions, EngineError> {
        let model = match options.text("connect")? {
            "per_transaction" => Model::PerTransaction,
            _ => Model::PerWorker,
        };
        let total = options.uint("idle_connections")?;
        let mine = shard.map_or(total, |s| Shard::share(total, s.count, s.index));
        let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        Ok(ConnectOptions {
            model,
            idle: size(mine),
            idle_total: size(total),
        })
    }

    /// Whether the step uses either option (the report then says what they did).
    pub fn in_use(&self) -> bool {
        self.model == Model::PerTransaction || self.idle_total > 0
    }
}

/// A new connect-time histogram (ns): 3 significant digits, auto-resizing.
fn histogram() -> Histogram<u64> {
    Histogram::new(crate::stats::SIGFIG).expect("3 significant digits are a valid precision")
}

/// One worker's connects of the current period.
#[derive(Debug)]
pub struct ConnectStats {
    /// The measured period these belong to (the session counters' epoch).
    epoch: u64,
    histogram: Histogram<u64>,
}

impl ConnectStats {
    pub fn new(epoch: u64) -> ConnectStats {
        ConnectStats {
            epoch,
            histogram: histogram(),
        }
    }

    /// Counts a connect that took `ns`, in period `epoch` (what came before it is dropped).
    pub fn record(&mut self, ns: u64, epoch: u64) {
        if epoch != self.epoch {
            self.histogram.reset();
            self.epoch = epoch;
        }
        if self.histogram.record(ns).is_err() {
            self.histogram.saturating_record(ns);
        }
    }
}

/// What the workers handed over, and what the idle connections did.
#[derive(Debug, Default)]
pub struct Tally {
    connects: Mutex<Option<Histogram<u64>>>,
    idle: Mutex<Option<IdleEnd>>,
}

/// The idle connections at the end of a step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IdleEnd {
    /// Held through the step.
    pub held: usize,
    /// Found dead by the check at the end; `None`: not checked (the step was stopped).
    pub dead: Option<usize>,
}

impl Tally {
    /// A finished worker's connects: kept when they belong to period `now`.
    pub fn hand_over(&self, stats: &ConnectStats, now: u64) {
        if stats.epoch != now || stats.histogram.is_empty() {
            return;
        }
        let mut all = self.connects.lock().unwrap_or_else(|p| p.into_inner());
        let merged = all.get_or_insert_with(histogram);
        if merged.add(&stats.histogram).is_err() {
            for v in stats.histogram.iter_recorded() {
                merged.saturating_record_n(v.value_iterated_to(), v.count_at_value());
            }
        }
    }

    /// Where the idle connections ended.
    pub fn idle_ended(&self, end: IdleEnd) {
        *self.idle.lock().unwrap_or_else(|p| p.into_inner()) = Some(end);
    }

    /// The step's connection metrics: connects (latencies only when there was one) and, with
    /// `idle_connections`, the idle ones held and found dead.
    pub fn metrics(&self, options: &ConnectOptions) -> Metrics {
        const NS_PER_MS: f64 = 1e6;
        let mut m: Metrics = Vec::with_capacity(6);
        let connects = self.connects.lock().unwrap_or_else(|p| p.into_inner());
        match connects.as_ref().filter(|h| !h.is_empty()) {
            Some(h) => {
                m.push((CONNECTS, h.len() as f64));
                m.push((CONNECT_AVG_MS, h.mean() / NS_PER_MS));
                m.push((
                    CONNECT_P95_MS,
                    h.value_at_quantile(0.95).clamp(h.min(), h.max()) as f64 / NS_PER_MS,
                ));
                m.push((CONNECT_MAX_MS, h.max() as f64 / NS_PER_MS));
            }
            None => m.push((CONNECTS, 0.0)),
        }
        if options.idle > 0 {
            let idle = *self.idle.lock().unwrap_or_else(|p| p.into_inner());
            let end = idle.unwrap_or_default();
            m.push((IDLE_CONNECTIONS, end.held as f64));
            if let Some(dead) = end.dead {
                m.push((IDLE_DEAD, dead as f64));
            }
        }
        m
    }
}

/// The report's line on the connection options, after sysbench's report, when the step used
/// them (`shown`):
/// `Connections: 5123 connects (1707.52 per sec.)  avg: 0.42 ms  p95: 0.61 ms  max: 3.10 ms  idle: 200 held, 0 dead at the end`.
pub fn write_report_line(
    out: &mut dyn Write,
    outcome: &StepOutcome,
    shown: bool,
) -> io::Result<()> {
    if !shown {
        return Ok(());
    }
    let m = &outcome.metrics;
    let connects = metric(m, CONNECTS).unwrap_or(0.0) as u64;
    write!(
        out,
        "Connections: {connects} connects ({:.2} per sec.)",
        crate::engine::console::per_second(connects, outcome.seconds)
    )?;
    if let (Some(avg), Some(p95), Some(max)) = (
        metric(m, CONNECT_AVG_MS),
        metric(m, CONNECT_P95_MS),
        metric(m, CONNECT_MAX_MS),
    ) {
        write!(
            out,
            "  avg: {avg:.2} ms  p95: {p95:.2} ms  max: {max:.2} ms"
        )?;
    }
    if let Some(held) = metric(m, IDLE_CONNECTIONS) {
        match metric(m, IDLE_DEAD) {
            Some(dead) => write!(out, "  idle: {held} held, {dead} dead at the end")?,
            None => write!(
                out,
                "  idle: {held} held, not checked (the step was stopped)"
            )?,
        }
    }
    writeln!(out)?;
    writeln!(out)
}

/// How a multi-client merge combines connection metric `name` of the clients: `None` for
/// metrics that are not this module's (the merge sums those).
pub fn merge_rule(name: &str) -> Option<MergeRule> {
    match name {
        CONNECTS | IDLE_CONNECTIONS | IDLE_DEAD => Some(MergeRule::Sum),
        CONNECT_AVG_MS => Some(MergeRule::MeanWeightedBy(CONNECTS)),
        // The clients' histograms are not shipped: the largest p95 bounds the merged one.
        CONNECT_P95_MS | CONNECT_MAX_MS => Some(MergeRule::Max),
        _ => None,
    }
}

/// See [`merge_rule`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeRule {
    Sum,
    Max,
    /// The mean of the clients' values weighted by their metric of this name.
    MeanWeightedBy(&'static str),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{Options, Value};

    fn reader(options: &Options) -> Reader<'_> {
        static GROUPS: &[&[OptSpec]] = &[CONNECTION_OPTIONS];
        Reader::new("test", GROUPS, options)
    }

    #[test]
    fn options_split_idle_connections_over_the_clients() {
        let mut o = Options::default();
        o.0.insert("connect".into(), Value::Str("per_transaction".into()));
        o.0.insert("idle_connections".into(), Value::Int(5));
        let whole = ConnectOptions::read(&reader(&o), None).unwrap();
        assert_eq!(whole.model, Model::PerTransaction);
        assert_eq!((whole.idle, whole.idle_total), (5, 5));
        let shards: Vec<usize> = Shard::split(4, 2)
            .into_iter()
            .map(|(s, _)| ConnectOptions::read(&reader(&o), Some(s)).unwrap().idle)
            .collect();
        assert_eq!(shards, [3, 2]);
        assert!(whole.in_use());
        assert!(!ConnectOptions::default().in_use());
    }

    #[test]
    fn only_the_periods_connects_are_counted() {
        let tally = Tally::default();
        let mut before = ConnectStats::new(0);
        before.record(5_000_000, 0);
        tally.hand_over(&before, 1);
        let mut mine = ConnectStats::new(0);
        mine.record(9_000_000, 0);
        // The warmup ended: what came before is dropped at the next connect.
        mine.record(1_000_000, 1);
        mine.record(3_000_000, 1);
        tally.hand_over(&mine, 1);
        let options = ConnectOptions {
            idle: 2,
            idle_total: 2,
            ..ConnectOptions::default()
        };
        tally.idle_ended(IdleEnd {
            held: 2,
            dead: Some(1),
        });
        let m = tally.metrics(&options);
        assert_eq!(metric(&m, CONNECTS), Some(2.0));
        let avg = metric(&m, CONNECT_AVG_MS).unwrap();
        assert!((avg - 2.0).abs() < 0.01, "{avg}");
        let max = metric(&m, CONNECT_MAX_MS).unwrap();
        assert!((max - 3.0).abs() < 0.01, "{max}");
        assert_eq!(metric(&m, IDLE_CONNECTIONS), Some(2.0));
        assert_eq!(metric(&m, IDLE_DEAD), Some(1.0));
    }

    #[test]
    fn without_connects_only_the_count_is_there() {
        let m = Tally::default().metrics(&ConnectOptions::default());
        assert_eq!(m, vec![(CONNECTS, 0.0)]);
    }
}
