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
//! redacted; the target itself travels without it).

use std::io::{BufRead, Write};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use serde::{Deserialize, Serialize};

use crate::db::WireTarget;
use crate::engine::retry::ErrorCodes;
use crate::engine::{
    IntervalSample, LatencySummary, METRICS, Shard, SqlCounters, StepOutcome, TxnStats,
};
use crate::value::Options;

/// The protocol version; the sbsuite versions must match as well.
pub const PROTOCOL: u32 = 1;

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
    /// The directory the agent works in (a local SQLite file, a script's modules): the
    /// coordinator's for local clients, else empty (the agent's own).
    pub cwd: String,
}

impl std::fmt::Debug for StepSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StepSpec")
            .field("workload", &self.workload)
            .field("shard", &self.shard)
            .field("password", &self.password.as_ref().map(|_| "***"))
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
    pub metrics: Vec<(String, f64)>,
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
    pub metrics: Vec<(String, f64)>,
    pub transactions: Vec<WireTxn>,
    pub per_thread: Vec<(u64, u64)>,
    /// SQL errors by code (agents before #26 send none).
    #[serde(default)]
    pub error_codes: Vec<(String, u64)>,
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

pub fn decode_histogram(text: &str) -> Result<Histogram<u64>, ProtocolError> {
    let bytes = BASE64
        .decode(text)
        .map_err(|e| ProtocolError::Histogram(e.to_string()))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| ProtocolError::Histogram(format!("{e:?}")))
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
            buckets: s
                .lat_buckets
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(i, c)| (i as u32, *c))
                .collect(),
        }
    }

    pub fn into_sample(self) -> IntervalSample {
        let mut lat_buckets = vec![0; crate::stats::BUCKETS];
        for (i, c) in self.buckets {
            if let Some(slot) = lat_buckets.get_mut(i as usize) {
                *slot += c;
            }
        }
        IntervalSample {
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
            lat_buckets,
        }
    }
}

impl WireOutcome {
    pub fn from_outcome(o: &StepOutcome) -> Result<WireOutcome, ProtocolError> {
        let l = &o.latency;
        Ok(WireOutcome {
            seconds: o.seconds,
            events: o.events,
            sql: o.sql.as_ref().map(|s| {
                [
                    s.transactions,
                    s.reads,
                    s.writes,
                    s.other,
                    s.errors,
                    s.reconnects,
                ]
            }),
            latency: WireLatency {
                min_ms: l.min_ms,
                avg_ms: l.avg_ms,
                max_ms: l.max_ms,
                p50_ms: l.p50_ms,
                p95_ms: l.p95_ms,
                p99_ms: l.p99_ms,
                percentile: l.percentile,
                pct_ms: l.pct_ms,
                sum_ms: l.sum_ms,
            },
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
        })
    }

    pub fn into_outcome(self) -> Result<StepOutcome, ProtocolError> {
        let l = self.latency;
        Ok(StepOutcome {
            error_codes: ErrorCodes(self.error_codes),
            seconds: self.seconds,
            events: self.events,
            sql: self
                .sql
                .map(
                    |[transactions, reads, writes, other, errors, reconnects]| SqlCounters {
                        transactions,
                        reads,
                        writes,
                        other,
                        errors,
                        reconnects,
                    },
                ),
            latency: LatencySummary {
                min_ms: l.min_ms,
                avg_ms: l.avg_ms,
                max_ms: l.max_ms,
                p50_ms: l.p50_ms,
                p95_ms: l.p95_ms,
                p99_ms: l.p99_ms,
                percentile: l.percentile,
                pct_ms: l.pct_ms,
                sum_ms: l.sum_ms,
            },
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
            cwd: "/tmp".into(),
        };
        let msg = CoordMsg::Step(Box::new(spec.clone()));
        assert_eq!(round(&msg), msg);
        assert!(!format!("{spec:?}").contains("s3cret"));
        let target = spec.target.clone().expect("target");
        let back = target.clone().into_target(None).expect("target");
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
        let back = w.into_sample();
        assert_eq!(back.lat_buckets, buckets);
        assert_eq!(back.metrics, s.metrics);
        assert_eq!(back.tps, Some(3.0));
    }

    #[test]
    fn garbage_is_an_error_and_eof_is_none() {
        let e = recv::<AgentMsg>(&mut "hello there\n".as_bytes()).expect_err("garbage");
        assert!(e.to_string().contains("hello there"), "{e}");
        assert!(recv::<AgentMsg>(&mut "".as_bytes()).expect("eof").is_none());
    }
}
