//! The agent protocol: versioned JSON lines over the agent's stdin (coordinator → agent) and
//! stdout (agent → coordinator), one message a line (#17).
//!
//! Why JSON lines over the transport's pipes: ssh and `kubectl exec -i` carry a byte stream
//! and nothing else, a line is easy to frame and to read in a log, and serde gives both sides
//! the same types. The agent's stderr is not part of the protocol: it is kept as the client's
//! `agent.log`.
//!
//! A session: the agent sends [`AgentMsg::Hello`] (protocol, sbsuite version, host, cores);
//! the coordinator refuses a different version before anything loads the database. Then
//! [`CoordMsg::Ping`]s measure round trips, and for each run step: [`CoordMsg::Step`], the
//! agent connects its workers and prepares its statements and answers [`AgentMsg::Ready`],
//! the coordinator sends [`CoordMsg::Go`] to every agent at once, each answers
//! [`AgentMsg::Started`] when its clock starts, [`AgentMsg::Interval`] per report interval
//! and [`AgentMsg::Outcome`] at the end, with its HDR histograms. [`AgentMsg::Beat`] goes out
//! every second whatever happens, so a silent agent is a dead or frozen one.
//!
//! What the wire never carries: shell commands, hooks or templates (an agent only runs
//! workload run steps), and the password outside [`StepSpec::password`] (whose `Debug` is
//! redacted; the target itself travels without it). A sysbench Lua script is code, and
//! travels as the suite's workload (the code the coordinator loaded and runs itself for the
//! prepare), each file with its SHA-256, which the agent checks before writing it
//! ([`crate::engine::lua::bundle`]).
//!
//! What a peer cannot make the coordinator hold (#26): a line is at most [`MAX_LINE`]; every
//! list in a message has a cap known before it is parsed (a sample's buckets, metrics, an
//! outcome's transactions, per-thread pairs and error codes), so a line full of small items parses into no
//! more than its own size; and a histogram is checked before the HDR decoder sees it (its
//! header's sizes against the bytes that are really there and against the largest histogram
//! the engines can record), so no header makes the decoder zero-fill gigabytes or inflate a
//! deflate bomb. Bounds that depend on the step (how many intervals so far, how many threads
//! and transactions) are [`super::bounds`]'.

use std::io::{BufRead, Read, Write};
use std::marker::PhantomData;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::db::WireTarget;
use crate::engine::lua::bundle::ScriptBundle;
use crate::engine::session::retry::ErrorCodes;
use crate::engine::{
    IntervalSample, LatencySummary, LiveSample, METRICS, OpenLoop, Shard, SqlCounters, StepOutcome,
    Timing, TxnStats,
};
use crate::value::Options;

/// The protocol version; the sbsuite versions must match as well. 2: a step may carry a Lua
/// script and its modules ([`StepSpec::script`]).
pub const PROTOCOL: u32 = 2;

/// sbsuite's version, which an agent must share with its coordinator.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A message from the coordinator to an agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CoordMsg {
    Ping { seq: u64 },
    Step(Box<StepSpec>),
    Go,
    Stop,
}

/// A message from an agent to the coordinator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentMsg {
    Hello {
        protocol: u32,
        version: String,
        host: String,
        cores: usize,
    },
    Pong {
        seq: u64,
    },
    /// Every worker connected and prepared its statements: waiting for `go`.
    Ready,
    /// The run's clock started; `clock_ms` is the agent's wall clock then (Unix ms), for the
    /// log (the skew is measured on the coordinator's clock).
    Started {
        clock_ms: f64,
    },
    Beat,
    Interval(Box<WireSample>),
    /// Running totals for `--metrics`, every [`StepSpec::live_every_ms`] while measured.
    Live(Box<WireLive>),
    Outcome(Box<WireOutcome>),
    Error {
        message: String,
    },
}

/// One run step for one agent: the step's options with this client's share of `threads`,
/// `rate` and `events`, its shard, and its target.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct StepSpec {
    pub workload: String,
    pub options: Options,
    pub shard: Shard,
    pub target: Option<WireTarget>,
    /// The target's password, rendered on the coordinator.
    pub password: Option<String>,
    /// Each per-host login's password (the target's `logins`, same order), rendered on the
    /// coordinator.
    #[serde(default)]
    pub login_passwords: Vec<Option<String>>,
    /// The directory the agent works in (a local SQLite file, a script's modules): the
    /// coordinator's for local clients, else empty (the agent's own).
    pub cwd: String,
    /// The definition of a workload declared in the suite (`[workloads.NAME]` as TOML), which
    /// the agent compiles as the coordinator did; `None` for a built-in workload.
    #[serde(default)]
    pub definition: Option<String>,
    /// The sysbench Lua script the step runs, with the modules it `require`s, each with its
    /// SHA-256 (the agent refuses a file that does not match, loads the script as the
    /// coordinator did and runs it); `None` for any other workload.
    #[serde(default)]
    pub script: Option<ScriptBundle>,
    /// How often the agent sends [`AgentMsg::Live`] samples (ms): set when the coordinator's
    /// run is watched (`--metrics`); `None`, the default: never.
    #[serde(default)]
    pub live_every_ms: Option<u64>,
}

impl std::fmt::Debug for StepSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StepSpec")
            .field("workload", &self.workload)
            .field("shard", &self.shard)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("login_passwords", &self.login_passwords.len())
            .finish_non_exhaustive()
    }
}

/// An [`IntervalSample`] on the wire: metric names as strings, the interval's latency bucket
/// counts sparse (`(bucket, count)`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireSample {
    pub time_s: f64,
    pub threads: usize,
    pub eps: f64,
    pub tps: Option<f64>,
    pub qps: Option<f64>,
    pub reads_ps: Option<f64>,
    pub writes_ps: Option<f64>,
    pub other_ps: Option<f64>,
    pub lat_pct_ms: f64,
    pub errors_ps: Option<f64>,
    pub reconnects_ps: Option<f64>,
    #[serde(deserialize_with = "metrics_list")]
    pub metrics: Vec<(String, f64)>,
    #[serde(deserialize_with = "buckets_list")]
    pub buckets: Vec<(u32, u64)>,
}

/// A [`LiveSample`] on the wire: one agent's running totals, its latency buckets since its
/// previous live sample sparse (`(bucket, count)`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireLive {
    pub elapsed_s: f64,
    pub threads: usize,
    pub events: u64,
    pub eps: f64,
    /// transactions, reads, writes, other, errors, reconnects.
    pub sql: Option<[u64; 6]>,
    #[serde(deserialize_with = "buckets_list")]
    pub buckets: Vec<(u32, u64)>,
}

/// A [`StepOutcome`] on the wire; histograms in HDR's V2 deflate format, base64.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireOutcome {
    pub seconds: f64,
    pub events: u64,
    /// transactions, reads, writes, other, errors, reconnects.
    pub sql: Option<[u64; 6]>,
    pub latency: WireLatency,
    pub fairness: [f64; 4],
    pub histogram: String,
    pub interrupted: bool,
    pub cut_short: Option<String>,
    #[serde(deserialize_with = "metrics_list")]
    pub metrics: Vec<(String, f64)>,
    #[serde(deserialize_with = "transactions_list")]
    pub transactions: Vec<WireTxn>,
    #[serde(deserialize_with = "per_thread_list")]
    pub per_thread: Vec<(u64, u64)>,
    /// SQL errors by code (agents before #26 send none).
    #[serde(default, deserialize_with = "error_codes_list")]
    pub error_codes: Vec<(String, u64)>,
    /// A `rate` run's service time and schedule lag (#30).
    #[serde(default)]
    pub open_loop: Option<[WireTiming; 2]>,
}

/// A [`Timing`] on the wire: its summary and its histogram (V2 deflate, base64).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireTiming {
    pub summary: WireLatency,
    pub histogram: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireLatency {
    pub min_ms: f64,
    pub avg_ms: f64,
    pub max_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub percentile: f64,
    pub pct_ms: f64,
    pub sum_ms: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireTxn {
    pub name: String,
    pub statement: bool,
    pub count: u64,
    pub errors: u64,
    pub rollbacks: u64,
    pub histogram: String,
}

/// A message that does not parse, a stream that broke, or a histogram that does not decode.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("not a protocol message: {0}")]
    Parse(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("bad histogram: {0}")]
    Histogram(String),
}

/// The most per-transaction statistics an outcome may carry on the wire (the step's own bound,
/// [`super::bounds::StepBounds`], is tighter: none for a built-in workload).
pub const MAX_TRANSACTIONS: usize = 1024;

/// The most per-thread pairs an outcome may carry on the wire (the step's own bound is the
/// client's thread count).
pub const MAX_THREADS: usize = 1 << 20;

/// A list of at most `max` items. serde's own `Vec` takes whatever the peer sends: a 64 MiB
/// line of `[1,1],` pairs would parse into 180 MB of `(u32, u64)`.
fn bounded<'de, D, T>(d: D, max: usize, what: &'static str) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Bounded<T> {
        max: usize,
        what: &'static str,
        item: PhantomData<T>,
    }
    impl<'de, T: Deserialize<'de>> Visitor<'de> for Bounded<T> {
        type Value = Vec<T>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "a list of at most {} {}", self.max, self.what)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut out = Vec::new();
            while let Some(item) = seq.next_element()? {
                if out.len() == self.max {
                    return Err(serde::de::Error::custom(format!(
                        "more than {} {} (the protocol's bound)",
                        self.max, self.what
                    )));
                }
                out.push(item);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(Bounded {
        max,
        what,
        item: PhantomData,
    })
}

fn buckets_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<(u32, u64)>, D::Error> {
    bounded(d, crate::stats::BUCKETS, "latency buckets")
}

fn metrics_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<(String, f64)>, D::Error> {
    bounded(d, METRICS.len(), "metrics")
}

fn transactions_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<WireTxn>, D::Error> {
    bounded(d, MAX_TRANSACTIONS, "transactions")
}

fn per_thread_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<(u64, u64)>, D::Error> {
    bounded(d, MAX_THREADS, "per-thread pairs")
}

/// The most distinct error codes an outcome may carry on the wire (a step meets a handful).
pub const MAX_ERROR_CODES: usize = 1024;

fn error_codes_list<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<(String, u64)>, D::Error> {
    bounded(d, MAX_ERROR_CODES, "error codes")
}

/// A metric name of this build, as the `&'static str` the engine uses; unknown names (a newer
/// agent's) are dropped, never invented.
fn metric_name(name: &str) -> Option<&'static str> {
    METRICS.iter().map(|(n, _)| *n).find(|n| *n == name)
}

fn metrics_to_wire(m: &crate::engine::Metrics) -> Vec<(String, f64)> {
    m.iter().map(|(n, v)| (n.to_string(), *v)).collect()
}

fn metrics_from_wire(m: &[(String, f64)]) -> crate::engine::Metrics {
    m.iter()
        .filter_map(|(n, v)| metric_name(n).map(|n| (n, *v)))
        .collect()
}

/// `hist` in the V2 deflate format, base64.
pub fn encode_histogram(hist: &Histogram<u64>) -> Result<String, ProtocolError> {
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(hist, &mut buf)
        .map_err(|e| ProtocolError::Histogram(format!("{e:?}")))?;
    Ok(BASE64.encode(buf))
}

/// The V2 format's cookies (hdrhistogram's `serialization` module keeps them private; the
/// round-trip tests prove these are its values).
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;

/// The V2 header: cookie, payload length, normalizing offset, significant digits (4 bytes
/// each), lowest and highest trackable value and the integer-to-double ratio (8 each).
const V2_HEADER: usize = 40;

/// Counts of the largest histogram the engines can record ([`crate::stats::SIGFIG`] digits,
/// lowest value 1, every value up to `u64::MAX`): 54 buckets of 2048 sub-buckets whose lower
/// halves overlap, (54 + 1) × 1024. A test checks it against the crate's own arithmetic.
const MAX_COUNTS: usize = 55 * 1024;

/// The longest V2 payload such a histogram encodes to: one LEB128 varint (at most 9 bytes) per
/// count, and a run of zeros takes one varint too.
const MAX_PAYLOAD: usize = MAX_COUNTS * 9;

fn bad_histogram(why: impl Into<String>) -> ProtocolError {
    ProtocolError::Histogram(why.into())
}

fn be_u32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn be_u64(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// A histogram sent by an agent, checked before it is decoded: the HDR decoder allocates
/// whatever the header's payload length says (4 GiB of zeros for `0xFFFFFFF0`) and inflates
/// without a limit, so the header is read here first. Only what the engines produce is
/// accepted — [`crate::stats::SIGFIG`] digits, lowest trackable value 1, a payload no longer
/// than the largest such histogram's and present in full — which bounds the decoded
/// histogram to [`MAX_COUNTS`] counts (≈ 450 KB).
pub fn decode_histogram(text: &str) -> Result<Histogram<u64>, ProtocolError> {
    // The longest legitimate text: a V2 payload that deflate could not shrink, in base64.
    if text.len() > (V2_HEADER + MAX_PAYLOAD + 64) * 4 / 3 + 4 {
        return Err(bad_histogram(format!(
            "{} bytes of base64, more than the largest histogram takes",
            text.len()
        )));
    }
    let bytes = BASE64
        .decode(text)
        .map_err(|e| bad_histogram(e.to_string()))?;
    let inner = match be_u32(&bytes, 0) {
        Some(V2_COMPRESSED_COOKIE) => {
            let len = be_u32(&bytes, 4).ok_or_else(|| bad_histogram("truncated header"))?;
            let body = bytes
                .get(8..)
                .filter(|b| b.len() as u64 >= u64::from(len))
                .ok_or_else(|| {
                    bad_histogram(format!(
                        "its header claims {len} compressed bytes, {} are there",
                        bytes.len().saturating_sub(8)
                    ))
                })?;
            let mut inner = Vec::new();
            let limit = (V2_HEADER + MAX_PAYLOAD) as u64;
            flate2::read::ZlibDecoder::new(&body[..len as usize])
                .take(limit + 1)
                .read_to_end(&mut inner)
                .map_err(|e| bad_histogram(format!("does not inflate: {e}")))?;
            if inner.len() as u64 > limit {
                return Err(bad_histogram(format!(
                    "inflates beyond {limit} bytes, more than the largest histogram takes"
                )));
            }
            inner
        }
        Some(V2_COOKIE) => bytes,
        _ => return Err(bad_histogram("not an HDR V2 histogram (unknown cookie)")),
    };
    if be_u32(&inner, 0) != Some(V2_COOKIE) || inner.len() < V2_HEADER {
        return Err(bad_histogram("not an HDR V2 histogram (bad inner header)"));
    }
    let payload = be_u32(&inner, 4).unwrap_or(u32::MAX) as usize;
    let digits = be_u32(&inner, 12).unwrap_or(0);
    let lowest = be_u64(&inner, 16).unwrap_or(0);
    if payload > MAX_PAYLOAD || payload > inner.len() - V2_HEADER {
        return Err(bad_histogram(format!(
            "its header claims a payload of {payload} bytes, {} are there (at most \
             {MAX_PAYLOAD})",
            inner.len() - V2_HEADER
        )));
    }
    if digits != u32::from(crate::stats::SIGFIG) || lowest != 1 {
        return Err(bad_histogram(format!(
            "{digits} significant digits from {lowest}: not the engines' histogram ({} digits \
             from 1)",
            crate::stats::SIGFIG
        )));
    }
    Deserializer::new()
        .deserialize(&mut &inner[..V2_HEADER + payload])
        .map_err(|e| bad_histogram(format!("{e:?}")))
}

/// Latency bucket counts sparse, for the wire.
fn sparse_buckets(dense: &[u64]) -> Vec<(u32, u64)> {
    dense
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(i, c)| (i as u32, *c))
        .collect()
}

/// `sparse` counts of `what` (an interval, a live sample) dense again; a bucket outside the
/// 1024, or counts of one bucket that overflow, are an error.
fn dense_buckets(sparse: Vec<(u32, u64)>, what: &str) -> Result<Vec<u64>, ProtocolError> {
    let mut dense = vec![0u64; crate::stats::BUCKETS];
    for (i, c) in sparse {
        let slot = dense.get_mut(i as usize).ok_or_else(|| {
            ProtocolError::Parse(format!(
                "latency bucket {i} of {what}: there are {}",
                crate::stats::BUCKETS
            ))
        })?;
        *slot = slot.checked_add(c).ok_or_else(|| {
            ProtocolError::Parse(format!(
                "latency bucket {i} of {what} overflows (its counts add beyond 2^64 - 1)"
            ))
        })?;
    }
    Ok(dense)
}

fn sql_to_wire(s: &SqlCounters) -> [u64; 6] {
    [
        s.transactions,
        s.reads,
        s.writes,
        s.other,
        s.errors,
        s.reconnects,
    ]
}

fn sql_from_wire(
    [transactions, reads, writes, other, errors, reconnects]: [u64; 6],
) -> SqlCounters {
    SqlCounters {
        transactions,
        reads,
        writes,
        other,
        errors,
        reconnects,
    }
}

impl WireLive {
    pub fn from_live(s: &LiveSample<'_>) -> WireLive {
        WireLive {
            elapsed_s: s.elapsed_s,
            threads: s.threads,
            events: s.events,
            eps: s.eps,
            sql: s.sql.as_ref().map(sql_to_wire),
            buckets: sparse_buckets(s.latency_buckets),
        }
    }

    /// The sample's totals, and its latency buckets dense.
    pub fn into_parts(self) -> Result<(LiveTotals, Vec<u64>), ProtocolError> {
        let buckets = dense_buckets(self.buckets, "a live sample")?;
        Ok((
            LiveTotals {
                elapsed_s: self.elapsed_s,
                threads: self.threads,
                events: self.events,
                eps: self.eps,
                sql: self.sql.map(sql_from_wire),
            },
            buckets,
        ))
    }
}

/// The totals of a [`LiveSample`], without its buckets (which the coordinator adds up apart).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LiveTotals {
    pub elapsed_s: f64,
    pub threads: usize,
    pub events: u64,
    pub eps: f64,
    pub sql: Option<SqlCounters>,
}

impl WireSample {
    pub fn from_sample(s: &IntervalSample) -> WireSample {
        WireSample {
            time_s: s.time_s,
            threads: s.threads,
            eps: s.eps,
            tps: s.tps,
            qps: s.qps,
            reads_ps: s.reads_ps,
            writes_ps: s.writes_ps,
            other_ps: s.other_ps,
            lat_pct_ms: s.lat_pct_ms,
            errors_ps: s.errors_ps,
            reconnects_ps: s.reconnects_ps,
            metrics: metrics_to_wire(&s.metrics),
            buckets: sparse_buckets(&s.lat_buckets),
        }
    }

    /// The sample, its buckets dense again; a bucket outside the 1024, or counts of one
    /// bucket that overflow, are an error.
    pub fn into_sample(self) -> Result<IntervalSample, ProtocolError> {
        let lat_buckets = dense_buckets(self.buckets, "an interval")?;
        Ok(IntervalSample {
            time_s: self.time_s,
            threads: self.threads,
            eps: self.eps,
            tps: self.tps,
            qps: self.qps,
            reads_ps: self.reads_ps,
            writes_ps: self.writes_ps,
            other_ps: self.other_ps,
            lat_pct_ms: self.lat_pct_ms,
            errors_ps: self.errors_ps,
            reconnects_ps: self.reconnects_ps,
            metrics: metrics_from_wire(&self.metrics),
            phase: None,
            group: None,
            target_rate: None,
            lat_buckets,
        })
    }
}

impl From<&LatencySummary> for WireLatency {
    fn from(l: &LatencySummary) -> Self {
        WireLatency {
            min_ms: l.min_ms,
            avg_ms: l.avg_ms,
            max_ms: l.max_ms,
            p50_ms: l.p50_ms,
            p95_ms: l.p95_ms,
            p99_ms: l.p99_ms,
            percentile: l.percentile,
            pct_ms: l.pct_ms,
            sum_ms: l.sum_ms,
        }
    }
}

impl From<WireLatency> for LatencySummary {
    fn from(l: WireLatency) -> Self {
        LatencySummary {
            min_ms: l.min_ms,
            avg_ms: l.avg_ms,
            max_ms: l.max_ms,
            p50_ms: l.p50_ms,
            p95_ms: l.p95_ms,
            p99_ms: l.p99_ms,
            percentile: l.percentile,
            pct_ms: l.pct_ms,
            sum_ms: l.sum_ms,
        }
    }
}

impl WireTiming {
    fn from_timing(t: &Timing) -> Result<Self, ProtocolError> {
        Ok(WireTiming {
            summary: (&t.summary).into(),
            histogram: encode_histogram(&t.histogram)?,
        })
    }

    fn into_timing(self) -> Result<Timing, ProtocolError> {
        Ok(Timing {
            summary: self.summary.into(),
            histogram: decode_histogram(&self.histogram)?,
        })
    }
}

impl WireOutcome {
    pub fn from_outcome(o: &StepOutcome) -> Result<WireOutcome, ProtocolError> {
        Ok(WireOutcome {
            seconds: o.seconds,
            events: o.events,
            sql: o.sql.as_ref().map(sql_to_wire),
            latency: (&o.latency).into(),
            fairness: [
                o.fairness_events_avg,
                o.fairness_events_stddev,
                o.fairness_time_avg,
                o.fairness_time_stddev,
            ],
            histogram: encode_histogram(&o.histogram)?,
            interrupted: o.interrupted,
            cut_short: o.cut_short.clone(),
            metrics: metrics_to_wire(&o.metrics),
            transactions: o
                .transactions
                .iter()
                .map(|t| {
                    Ok(WireTxn {
                        name: t.name.clone(),
                        statement: t.statement,
                        count: t.count,
                        errors: t.errors,
                        rollbacks: t.rollbacks,
                        histogram: encode_histogram(&t.histogram)?,
                    })
                })
                .collect::<Result<_, ProtocolError>>()?,
            per_thread: o.per_thread.clone(),
            error_codes: o.error_codes.0.clone(),
            open_loop: match &o.open_loop {
                Some(ol) => Some([
                    WireTiming::from_timing(&ol.service)?,
                    WireTiming::from_timing(&ol.lag)?,
                ]),
                None => None,
            },
        })
    }

    pub fn into_outcome(self) -> Result<StepOutcome, ProtocolError> {
        let open_loop = match self.open_loop {
            Some([service, lag]) => Some(OpenLoop {
                service: service.into_timing()?,
                lag: lag.into_timing()?,
            }),
            None => None,
        };
        Ok(StepOutcome {
            error_codes: ErrorCodes(self.error_codes),
            seconds: self.seconds,
            events: self.events,
            sql: self.sql.map(sql_from_wire),
            latency: self.latency.into(),
            fairness_events_avg: self.fairness[0],
            fairness_events_stddev: self.fairness[1],
            fairness_time_avg: self.fairness[2],
            fairness_time_stddev: self.fairness[3],
            histogram: decode_histogram(&self.histogram)?,
            interrupted: self.interrupted,
            cut_short: self.cut_short,
            metrics: metrics_from_wire(&self.metrics),
            transactions: self
                .transactions
                .into_iter()
                .map(|t| {
                    Ok(TxnStats {
                        histogram: decode_histogram(&t.histogram)?,
                        name: t.name,
                        statement: t.statement,
                        count: t.count,
                        errors: t.errors,
                        rollbacks: t.rollbacks,
                    })
                })
                .collect::<Result<_, ProtocolError>>()?,
            per_thread: self.per_thread,
            steady: Default::default(),
            phases: Vec::new(),
            groups: Vec::new(),
            open_loop,
        })
    }
}

/// Writes `msg` as one line and flushes it.
pub fn send<T: Serialize>(out: &mut dyn Write, msg: &T) -> Result<(), ProtocolError> {
    let mut line = serde_json::to_vec(msg).map_err(|e| ProtocolError::Parse(e.to_string()))?;
    line.push(b'\n');
    out.write_all(&line)?;
    out.flush()?;
    Ok(())
}

/// The most a line may hold: an outcome with many transactions' histograms is a few hundred
/// KB; anything far beyond is not a protocol peer.
pub const MAX_LINE: usize = 64 << 20;

/// Reads the next message; `Ok(None)` at the end of the stream.
pub fn recv<T: for<'de> Deserialize<'de>>(input: impl BufRead) -> Result<Option<T>, ProtocolError> {
    let mut line = String::new();
    let n = std::io::Read::take(input, MAX_LINE as u64).read_line(&mut line)?;
    if n == 0 {
        return Ok(None);
    }
    let text = line.trim_end();
    serde_json::from_str(text).map(Some).map_err(|e| {
        let shown: String = text.chars().take(200).collect();
        ProtocolError::Parse(format!("{e}: `{shown}`"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::WorkerStats;

    fn round<T: Serialize + for<'de> Deserialize<'de>>(msg: &T) -> T {
        let mut buf = Vec::new();
        send(&mut buf, msg).expect("sends");
        assert_eq!(buf.iter().filter(|&&b| b == b'\n').count(), 1, "one line");
        recv(&mut buf.as_slice())
            .expect("parses")
            .expect("a message")
    }

    fn outcome() -> StepOutcome {
        let mut w = WorkerStats::new().expect("hist");
        for ns in [1_000_u64, 2_000, 3_000, 50_000, 1_000_000] {
            w.record(ns);
        }
        let hist = w.histogram.clone();
        StepOutcome {
            error_codes: Default::default(),
            seconds: 10.5,
            events: 5,
            sql: Some(SqlCounters {
                transactions: 5,
                reads: 50,
                writes: 20,
                other: 10,
                errors: 1,
                reconnects: 2,
            }),
            latency: LatencySummary {
                min_ms: 0.001,
                max_ms: 1.0,
                ..LatencySummary::default()
            },
            fairness_events_avg: 5.0,
            fairness_events_stddev: 0.0,
            fairness_time_avg: 0.1,
            fairness_time_stddev: 0.0,
            histogram: w.histogram.clone(),
            interrupted: false,
            cut_short: Some("why".into()),
            metrics: vec![(crate::engine::HEADLINE, 12.5)],
            transactions: vec![TxnStats {
                name: "new_order".into(),
                statement: false,
                count: 5,
                errors: 1,
                rollbacks: 0,
                histogram: w.histogram,
            }],
            per_thread: vec![(5, 1_056_000)],
            steady: Default::default(),
            phases: Vec::new(),
            groups: Vec::new(),
            open_loop: Some(OpenLoop {
                service: Timing {
                    summary: LatencySummary {
                        p99_ms: 0.75,
                        ..LatencySummary::default()
                    },
                    histogram: hist.clone(),
                },
                lag: Timing {
                    summary: LatencySummary::default(),
                    histogram: hist,
                },
            }),
        }
    }

    #[test]
    fn messages_round_trip() {
        for msg in [
            AgentMsg::Hello {
                protocol: PROTOCOL,
                version: VERSION.into(),
                host: "h".into(),
                cores: 2,
            },
            AgentMsg::Pong { seq: 7 },
            AgentMsg::Ready,
            AgentMsg::Started { clock_ms: 1.5 },
            AgentMsg::Beat,
            AgentMsg::Error {
                message: "no\nnewline".into(),
            },
        ] {
            assert_eq!(round(&msg), msg);
        }
        for msg in [CoordMsg::Ping { seq: 3 }, CoordMsg::Go, CoordMsg::Stop] {
            assert_eq!(round(&msg), msg);
        }
    }

    #[test]
    fn a_step_round_trips_and_hides_its_password() {
        let mut options = Options::default();
        options
            .0
            .insert("threads".into(), crate::value::Value::Int(4));
        options
            .0
            .insert("percentile".into(), crate::value::Value::Float(95.0));
        let spec = StepSpec {
            workload: "oltp_read_only".into(),
            options,
            shard: Shard {
                index: 1,
                count: 3,
                total_threads: 12,
                thread_offset: 4,
            },
            target: Some(crate::db::Target::sqlite_default().to_wire()),
            password: Some("s3cret".into()),
            login_passwords: vec![Some("an0ther".into())],
            definition: Some("[workloads.w]\nsummary = \"x\"\n".into()),
            script: Some(ScriptBundle {
                typed: "scripts/s.lua".into(),
                script: crate::engine::lua::bundle::BundleFile::new("s.lua", b"require 'm'"),
                modules: vec![crate::engine::lua::bundle::BundleFile::new(
                    "m.lua", b"\xff",
                )],
            }),
            cwd: "/tmp".into(),
            live_every_ms: Some(1000),
        };
        let msg = CoordMsg::Step(Box::new(spec.clone()));
        assert_eq!(round(&msg), msg);
        assert!(!format!("{spec:?}").contains("s3cret"));
        assert!(!format!("{spec:?}").contains("an0ther"));
        let target = spec.target.clone().expect("target");
        let back = target
            .clone()
            .into_target(None, Vec::new())
            .expect("target");
        assert_eq!(back.to_wire(), target);
    }

    #[test]
    fn outcomes_and_samples_round_trip_exactly() {
        let o = outcome();
        let wire = WireOutcome::from_outcome(&o).expect("encodes");
        let msg = AgentMsg::Outcome(Box::new(wire.clone()));
        assert_eq!(round(&msg), msg);
        let back = wire.into_outcome().expect("decodes");
        assert_eq!(back.histogram, o.histogram);
        assert_eq!(back.transactions[0].histogram, o.transactions[0].histogram);
        assert_eq!(back.events, 5);
        assert_eq!(back.sql.expect("sql").reconnects, 2);
        assert_eq!(back.metrics, o.metrics);
        assert_eq!(back.per_thread, o.per_thread);
        assert_eq!(back.cut_short.as_deref(), Some("why"));
        let (ol, back_ol) = (o.open_loop.expect("rate"), back.open_loop.expect("rate"));
        assert_eq!(back_ol.service.histogram, ol.service.histogram);
        assert_eq!(back_ol.service.summary.p99_ms, 0.75);
        assert_eq!(back_ol.lag.histogram, ol.lag.histogram);

        let mut buckets = vec![0; crate::stats::BUCKETS];
        buckets[3] = 4;
        buckets[100] = 1;
        let s = IntervalSample {
            time_s: 1.0,
            threads: 2,
            eps: 3.0,
            tps: Some(3.0),
            metrics: vec![("dropped", 1.0)],
            lat_buckets: buckets.clone(),
            ..IntervalSample::default()
        };
        let w = WireSample::from_sample(&s);
        assert_eq!(w.buckets, vec![(3, 4), (100, 1)]);
        let msg = AgentMsg::Interval(Box::new(w.clone()));
        assert_eq!(round(&msg), msg);
        let back = w.into_sample().expect("decodes");
        assert_eq!(back.lat_buckets, buckets);
        assert_eq!(back.metrics, s.metrics);
        assert_eq!(back.tps, Some(3.0));
    }

    /// The V2 bytes (uncompressed) of a histogram header with these fields and `payload`.
    fn v2(len: u32, digits: u32, lowest: u64, payload: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&V2_COOKIE.to_be_bytes());
        b.extend_from_slice(&len.to_be_bytes());
        b.extend_from_slice(&0u32.to_be_bytes());
        b.extend_from_slice(&digits.to_be_bytes());
        b.extend_from_slice(&lowest.to_be_bytes());
        b.extend_from_slice(&u64::MAX.to_be_bytes());
        b.extend_from_slice(&1.0f64.to_be_bytes());
        b.extend_from_slice(payload);
        b
    }

    fn deflated(inner: &[u8]) -> Vec<u8> {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(inner).unwrap();
        let body = z.finish().unwrap();
        let mut b = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
        b.extend_from_slice(&(body.len() as u32).to_be_bytes());
        b.extend_from_slice(&body);
        b
    }

    #[test]
    fn the_largest_histogram_is_what_the_bound_says() {
        let h = Histogram::<u64>::new_with_bounds(1, u64::MAX, crate::stats::SIGFIG).unwrap();
        assert_eq!(h.distinct_values(), MAX_COUNTS);
        // Filled everywhere, it still decodes.
        let mut h = Histogram::<u64>::new(crate::stats::SIGFIG).unwrap();
        let mut v = 1u64;
        while v < u64::MAX / 3 {
            h.record(v).unwrap();
            v += v / 500 + 1;
        }
        let back = decode_histogram(&encode_histogram(&h).unwrap()).expect("decodes");
        assert_eq!(back, h);
    }

    /// Headers that would make the HDR decoder allocate what they claim are refused first.
    #[test]
    fn histograms_that_claim_more_than_they_hold_are_refused() {
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (
                v2(0xFFFF_FFF0, 3, 1, &[0; 16]),
                "claims a payload of 4294967280",
            ),
            (
                deflated(&v2(0xFFFF_FFF0, 3, 1, &[0; 16])),
                "claims a payload",
            ),
            // A deflate bomb: 64 MiB of zeros compress to a few KB.
            (
                deflated(&v2(64 << 20, 3, 1, &vec![0; 64 << 20])),
                "inflates beyond",
            ),
            (deflated(&v2(2, 5, 1, &[0, 0])), "5 significant digits"),
            (deflated(&v2(2, 3, 1000, &[0, 0])), "from 1000"),
            (b"nonsense".to_vec(), "unknown cookie"),
            (
                {
                    let mut b = deflated(&v2(2, 3, 1, &[2, 2]));
                    b[4..8].copy_from_slice(&0xFFFF_FFF0u32.to_be_bytes());
                    b
                },
                "compressed bytes",
            ),
        ];
        for (bytes, want) in cases {
            let e = decode_histogram(&BASE64.encode(&bytes)).expect_err(want);
            assert!(e.to_string().contains(want), "{want}: {e}");
        }
        let long = "A".repeat(2 << 20);
        assert!(decode_histogram(&long).is_err());
    }

    #[test]
    fn lists_beyond_their_bound_do_not_parse() {
        let buckets: Vec<String> = (0..1025).map(|i| format!("[{i},1]")).collect();
        let line = format!(
            r#"{{"type":"interval","time_s":1,"threads":1,"eps":0,"tps":null,"qps":null,"reads_ps":null,"writes_ps":null,"other_ps":null,"lat_pct_ms":0,"errors_ps":null,"reconnects_ps":null,"metrics":[],"buckets":[{}]}}"#,
            buckets.join(",")
        );
        let e = recv::<AgentMsg>(&mut line.as_bytes()).expect_err("too many buckets");
        assert!(
            e.to_string().contains("more than 1024 latency buckets"),
            "{e}"
        );
        let ok = line.replace(",[1024,1]", "");
        assert!(recv::<AgentMsg>(&mut ok.as_bytes()).is_ok());
    }

    #[test]
    fn a_sample_with_a_bucket_out_of_range_or_overflowing_is_an_error() {
        let s = WireSample::from_sample(&IntervalSample::default());
        let bad = WireSample {
            buckets: vec![(1024, 1)],
            ..s.clone()
        };
        assert!(
            bad.into_sample()
                .expect_err("range")
                .to_string()
                .contains("1024")
        );
        let bad = WireSample {
            buckets: vec![(3, u64::MAX), (3, 1)],
            ..s
        };
        let e = bad.into_sample().expect_err("overflow").to_string();
        assert!(e.contains("overflows"), "{e}");
    }

    /// A live sample travels with its totals and sparse buckets, and comes back dense; a
    /// bucket out of range is an error like an interval's.
    #[test]
    fn a_live_sample_round_trips_and_checks_its_buckets() {
        let mut buckets = vec![0u64; crate::stats::BUCKETS];
        buckets[12] = 7;
        let sql = SqlCounters {
            transactions: 5,
            reads: 70,
            ..SqlCounters::default()
        };
        let live = LiveSample {
            elapsed_s: 2.5,
            threads: 3,
            events: 5,
            eps: 2.0,
            sql: Some(sql),
            latency_buckets: &buckets,
        };
        let msg = AgentMsg::Live(Box::new(WireLive::from_live(&live)));
        let AgentMsg::Live(back) = round(&msg) else {
            panic!("not a live sample")
        };
        assert_eq!(back.buckets, vec![(12, 7)]);
        let (totals, dense) = back.into_parts().expect("decodes");
        assert_eq!(dense, buckets);
        assert_eq!(
            (totals.events, totals.threads, totals.sql),
            (5, 3, Some(sql))
        );
        let bad = WireLive {
            buckets: vec![(5000, 1)],
            ..WireLive::from_live(&live)
        };
        let e = bad.into_parts().expect_err("range").to_string();
        assert!(e.contains("a live sample"), "{e}");
    }

    #[test]
    fn garbage_is_an_error_and_eof_is_none() {
        let e = recv::<AgentMsg>(&mut "hello there\n".as_bytes()).expect_err("garbage");
        assert!(e.to_string().contains("hello there"), "{e}");
        assert!(recv::<AgentMsg>(&mut "".as_bytes()).expect("eof").is_none());
    }
}
