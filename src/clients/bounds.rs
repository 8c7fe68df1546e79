//! What an agent may send, and how long the coordinator waits for it, derived from the step
//! (#26).
//!
//! An agent is another process, often on another machine and another build's binary: the
//! coordinator must not be made to hold, wait or write without limit by whatever it sends.
//! [`super::protocol`] caps what any message can be (a line's length, each list's length, a
//! histogram's size); the bounds here depend on the step, so an agent that is wrong for *this*
//! step is failed early, with a message naming it and the bound, while a correct one never
//! comes near them:
//!
//! * **Messages**: an agent beats once a second and sends one interval per `report_interval`,
//!   plus a handful of one-offs (hello, pongs, ready, started, outcome). Its messages may not
//!   outrun `MESSAGE_SLACK + 2 × seconds alive + intervals allowed`, and its intervals
//!   `elapsed since go × (1 + CLOCK_SLACK) / report_interval + INTERVAL_SLACK` (none without
//!   `report_interval`): the engine's ticks are on an absolute schedule that starts after
//!   `go`, so even a late collector catching up never exceeds that; [`CLOCK_SLACK`] covers an
//!   agent whose clock runs faster than the coordinator's.
//! * **Sizes**: a sample reports at most this client's threads; an outcome at most one
//!   per-thread pair per thread and only the per-transaction statistics the workload declares
//!   (none for a built-in workload).
//! * **stderr** (the agent's `agent.log`): at most [`STDERR_BASE`] plus [`STDERR_PER_SECOND`]
//!   per second alive — hundreds of times what the engine's text (one interim line per
//!   interval, the final report) takes. Beyond it the rest is dropped, the log says so, and the
//!   agent fails.
//! * **Deadlines**: every wait ends. `ready` must come within the target's `connect_timeout`
//!   plus its `query_timeout` (the workers connect and prepare their statements) plus the
//!   silence bound; the outcome within `(warmup_time + time) × (1 + CLOCK_SLACK) + grace` plus
//!   the silence bound after `go`, where the grace is `forced_shutdown` or, when that is off, the target's
//!   `query_timeout` (an event in flight at the time limit finishes within it); after a stop
//!   (Ctrl-C), within `forced_shutdown` (default [`STOP_GRACE`]) plus the silence bound. The
//!   silence bound (`1 s beat + [clients] timeout`) is how late any message may be.

use std::time::Duration;

use super::agent::BEAT;
use super::protocol::{WireOutcome, WireSample};
use crate::db::Target;
use crate::db::target::DEFAULT_QUERY_TIMEOUT;
use crate::engine::EngineError;
use crate::engine::config::RunConfig;
use crate::engine::spec::WorkloadSpec;
use crate::value::Options;

/// Messages an agent may send beyond two a second (its beat, with room) and its intervals.
pub const MESSAGE_SLACK: u64 = 32;

/// Intervals an agent may be ahead of `elapsed / report_interval` (a tick may land just as the
/// coordinator reads its clock).
pub const INTERVAL_SLACK: u64 = 2;

/// How much faster than the coordinator's an agent's clock may run, as a fraction: 1 %, a
/// hundred times the worst drift of an NTP-disciplined clock (500 ppm), so that a ten-hour
/// step on a fast clock is never failed for its last intervals.
pub const CLOCK_SLACK: f64 = 0.01;

/// stderr an agent may write at once, whatever its age (its start, a final report with
/// `histogram` or `debug` on a thousand threads).
pub const STDERR_BASE: u64 = 1 << 20;

/// stderr an agent may write per second alive: an interim line is ~200 bytes.
pub const STDERR_PER_SECOND: u64 = 64 << 10;

/// How long agents get to send their outcome after a stop when the step has no
/// `forced_shutdown` (a stop ends each worker's current event, and cancels its statement).
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// How long a step without a database target may take to be ready (its workers start threads
/// and allocate their buffers).
pub const SETUP_WITHOUT_TARGET: Duration = Duration::from_secs(10);

/// The stderr an agent alive for `alive` may have written.
pub fn stderr_allowed(alive: Duration) -> u64 {
    STDERR_BASE.saturating_add(STDERR_PER_SECOND.saturating_mul(alive.as_secs()))
}

/// The messages of every kind an agent alive for `alive` may have sent, besides `intervals`.
pub fn messages_allowed(alive: Duration, intervals: u64) -> u64 {
    MESSAGE_SLACK
        .saturating_add(alive.as_secs().saturating_mul(2))
        .saturating_add(intervals)
}

/// The samples sent on a period of `every` (`None`: none) an agent may have sent `since_go`
/// after its `go` (`None`: before it).
fn ticks_allowed(every: Option<Duration>, since_go: Option<Duration>) -> u64 {
    match (every, since_go) {
        (Some(every), Some(t)) if !every.is_zero() => {
            (t.mul_f64(1.0 + CLOCK_SLACK).as_nanos() / every.as_nanos()) as u64 + INTERVAL_SLACK
        }
        _ => 0,
    }
}

/// The bounds of one client's part of one run step.
#[derive(Clone, Debug, PartialEq)]
pub struct StepBounds {
    /// This client's threads.
    pub threads: usize,
    /// The interim report period; `None`: the agent sends no interval.
    pub report_interval: Option<Duration>,
    /// The live sample period ([`StepBounds::watched`]); `None`: the agent sends none.
    pub live_every: Option<Duration>,
    /// Per-transaction statistics the workload reports (0 for a built-in workload).
    pub transactions: usize,
    /// From the step sent to `ready`.
    pub ready_within: Duration,
    /// From `go` to the outcome; `None` for a step without a time limit (only a stop ends it).
    pub outcome_within: Option<Duration>,
    /// From a stop to the outcome.
    pub stop_within: Duration,
    /// How each deadline was computed, for the message that reports it overrun.
    pub why: Why,
}

/// What an agent sent beyond this client's share of the step: the agent is failed with it.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum Overrun {
    #[error("an interval reports {reported} threads, this client runs {runs}")]
    SampleThreads { reported: usize, runs: usize },
    #[error("its outcome has statistics of {reported} threads, this client runs {runs}")]
    OutcomeThreads { reported: usize, runs: usize },
    #[error(
        "its outcome has {reported} per-transaction statistics, the workload declares {declared}"
    )]
    Transactions { reported: usize, declared: usize },
}

/// The parts of the deadlines, in whole seconds, for the messages.
#[derive(Clone, Debug, PartialEq)]
pub struct Why {
    pub setup: String,
    pub run: String,
    pub stop: String,
}

impl StepBounds {
    /// The bounds of a step of `workload` with `options` (this client's share) on `target`;
    /// `silence` is how long an agent may say nothing (its beat plus `[clients] timeout`).
    pub fn of(
        workload: &WorkloadSpec,
        options: &Options,
        target: Option<&Target>,
        threads: usize,
        timeout: Duration,
    ) -> Result<StepBounds, EngineError> {
        let run = RunConfig::from_options(options)?;
        if run.warmup_auto {
            return Err(EngineError::Failed(
                "option `warmup_time = \"auto\"` does not work with [clients]: each client would \
                 end its warmup at its own moment, so the merged step would mix warmup and \
                 measured time; give `warmup_time` a number of seconds"
                    .into(),
            ));
        }
        let silence = BEAT + timeout;
        let statement = target.map(|t| {
            t.limits
                .query_timeout
                .unwrap_or(Duration::from_secs(DEFAULT_QUERY_TIMEOUT))
        });
        let (setup, setup_why) = match (target, statement) {
            (Some(t), Some(q)) => (
                t.connect_timeout + q,
                format!(
                    "connect_timeout {} s + query_timeout {} s",
                    t.connect_timeout.as_secs(),
                    q.as_secs()
                ),
            ),
            _ => (
                SETUP_WITHOUT_TARGET,
                format!("{} s to start its workers", SETUP_WITHOUT_TARGET.as_secs()),
            ),
        };
        let (grace, grace_why) = match (run.forced_shutdown, statement) {
            (Some(f), _) => (f, format!("forced_shutdown {} s", f.as_secs())),
            (None, Some(q)) => (q, format!("query_timeout {} s", q.as_secs())),
            (None, None) => (
                Duration::from_secs(DEFAULT_QUERY_TIMEOUT),
                format!("{DEFAULT_QUERY_TIMEOUT} s for an event in flight"),
            ),
        };
        let warmup = run.warmup.unwrap_or_default();
        let stop = run.forced_shutdown.unwrap_or(STOP_GRACE);
        let silence_why = format!(
            "beat {} s + timeout {} s",
            BEAT.as_secs(),
            timeout.as_secs()
        );
        Ok(StepBounds {
            threads,
            report_interval: run.report_interval,
            live_every: None,
            transactions: declared_transactions(workload),
            ready_within: setup + silence,
            outcome_within: run
                .time
                .map(|t| (warmup + t).mul_f64(1.0 + CLOCK_SLACK) + grace + silence),
            stop_within: stop + silence,
            why: Why {
                setup: format!("{setup_why} + {silence_why}"),
                run: format!(
                    "(warmup_time {} s + time {} s) × 1.01 + {grace_why} + {silence_why}",
                    warmup.as_secs(),
                    run.time.unwrap_or_default().as_secs()
                ),
                stop: format!(
                    "{} {} s + {silence_why}",
                    if run.forced_shutdown.is_some() {
                        "forced_shutdown"
                    } else {
                        "stop grace"
                    },
                    stop.as_secs()
                ),
            },
        })
    }

    /// These bounds for an agent asked for a live sample `every` so often (`--metrics`).
    pub fn watched(self, every: Option<Duration>) -> StepBounds {
        StepBounds {
            live_every: every,
            ..self
        }
    }

    /// The intervals an agent may have sent `since_go` after its `go` (`None`: before it).
    pub fn intervals_allowed(&self, since_go: Option<Duration>) -> u64 {
        ticks_allowed(self.report_interval, since_go)
    }

    /// The live samples an agent may have sent `since_go` after its `go` (taken on the same
    /// absolute schedule as the intervals, so bounded the same way).
    pub fn lives_allowed(&self, since_go: Option<Duration>) -> u64 {
        ticks_allowed(self.live_every, since_go)
    }

    /// A sample within this client's share of the step.
    pub fn check_sample(&self, s: &WireSample) -> Result<(), Overrun> {
        if s.threads > self.threads {
            return Err(Overrun::SampleThreads {
                reported: s.threads,
                runs: self.threads,
            });
        }
        Ok(())
    }

    /// An outcome within this client's share of the step (checked before its histograms are
    /// decoded).
    pub fn check_outcome(&self, o: &WireOutcome) -> Result<(), Overrun> {
        if o.per_thread.len() > self.threads {
            return Err(Overrun::OutcomeThreads {
                reported: o.per_thread.len(),
                runs: self.threads,
            });
        }
        if o.transactions.len() > self.transactions {
            return Err(Overrun::Transactions {
                reported: o.transactions.len(),
                declared: self.transactions,
            });
        }
        Ok(())
    }
}

/// The per-transaction (and per-statement) statistics `workload` reports: a custom workload's
/// declared transactions and statements, none for a built-in one.
fn declared_transactions(workload: &WorkloadSpec) -> usize {
    crate::engine::custom::def(workload).map_or(0, |d| d.transactions.len() + d.statements.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    fn options(pairs: &[(&str, Value)]) -> Options {
        let mut o = Options::default();
        o.0.insert("threads".into(), Value::Int(1));
        for (k, v) in pairs {
            o.0.insert((*k).into(), v.clone());
        }
        o
    }

    #[test]
    fn deadlines_follow_the_step() {
        let o = options(&[
            ("time", Value::Int(60)),
            ("warmup_time", Value::Int(5)),
            ("report_interval", Value::Int(2)),
            ("forced_shutdown", Value::Str("3".into())),
        ]);
        let b = StepBounds::of(
            &crate::engine::cpu::SPEC,
            &o,
            None,
            4,
            Duration::from_secs(10),
        )
        .expect("bounds");
        assert_eq!(
            b.outcome_within,
            Some(Duration::from_secs(65).mul_f64(1.01) + Duration::from_secs(3 + 11))
        );
        assert_eq!(b.stop_within, Duration::from_secs(3 + 11));
        assert_eq!(
            b.ready_within,
            SETUP_WITHOUT_TARGET + Duration::from_secs(11)
        );
        assert_eq!(b.transactions, 0);
        assert!(b.why.run.contains("forced_shutdown 3 s"), "{:?}", b.why);

        // No forced_shutdown: an event in flight gets the target's query_timeout.
        let target = Target::sqlite_default();
        let o = options(&[("time", Value::Int(10))]);
        let b = StepBounds::of(
            &crate::engine::oltp::READ_ONLY,
            &o,
            Some(&target),
            2,
            Duration::from_secs(2),
        )
        .expect("bounds");
        let q = target.limits.query_timeout.expect("a query timeout");
        assert_eq!(
            b.outcome_within,
            Some(Duration::from_secs(10).mul_f64(1.01) + Duration::from_secs(3) + q)
        );
        assert_eq!(
            b.ready_within,
            target.connect_timeout + q + Duration::from_secs(3)
        );
        assert_eq!(b.stop_within, STOP_GRACE + Duration::from_secs(3));

        // No time limit: only a stop bounds the wait for the outcome.
        let o = options(&[("time", Value::Int(0)), ("events", Value::Int(100))]);
        let b = StepBounds::of(
            &crate::engine::cpu::SPEC,
            &o,
            None,
            1,
            Duration::from_secs(2),
        )
        .expect("bounds");
        assert_eq!(b.outcome_within, None);
    }

    #[test]
    fn intervals_follow_report_interval() {
        let o = options(&[("time", Value::Int(10)), ("report_interval", Value::Int(2))]);
        let b = StepBounds::of(
            &crate::engine::cpu::SPEC,
            &o,
            None,
            1,
            Duration::from_secs(2),
        )
        .expect("bounds");
        assert_eq!(b.intervals_allowed(None), 0, "none before go");
        assert_eq!(b.intervals_allowed(Some(Duration::from_millis(100))), 2);
        assert_eq!(b.intervals_allowed(Some(Duration::from_secs(9))), 4 + 2);
        // A ten-hour step whose agent's clock runs 500 ppm fast: 18 s ahead, within 1 %.
        let hours = Duration::from_secs(36_000);
        assert!(b.intervals_allowed(Some(hours)) >= (36_000 + 18) / 2 + 2);
        let o = options(&[("time", Value::Int(10))]);
        let b = StepBounds::of(
            &crate::engine::cpu::SPEC,
            &o,
            None,
            1,
            Duration::from_secs(2),
        )
        .expect("bounds");
        assert_eq!(b.intervals_allowed(Some(Duration::from_secs(100))), 0);
    }

    #[test]
    fn budgets_grow_with_time() {
        assert_eq!(stderr_allowed(Duration::ZERO), STDERR_BASE);
        assert_eq!(
            stderr_allowed(Duration::from_secs(10)),
            STDERR_BASE + 10 * STDERR_PER_SECOND
        );
        assert_eq!(messages_allowed(Duration::from_secs(3), 4), 32 + 6 + 4);
        assert_eq!(stderr_allowed(Duration::MAX), u64::MAX);
    }

    #[test]
    fn sizes_follow_the_clients_share() {
        let o = options(&[("time", Value::Int(1))]);
        let b = StepBounds::of(
            &crate::engine::cpu::SPEC,
            &o,
            None,
            2,
            Duration::from_secs(2),
        )
        .expect("bounds");
        let mut s = WireSample::from_sample(&crate::engine::IntervalSample {
            threads: 2,
            ..Default::default()
        });
        assert!(b.check_sample(&s).is_ok());
        s.threads = 3;
        let e = b.check_sample(&s).expect_err("too many threads");
        assert_eq!(
            e,
            Overrun::SampleThreads {
                reported: 3,
                runs: 2
            }
        );
        let e = e.to_string();
        assert!(e.contains("3 threads, this client runs 2"), "{e}");

        let histogram = super::super::protocol::encode_histogram(
            &hdrhistogram::Histogram::new(crate::stats::SIGFIG).expect("hist"),
        )
        .expect("encodes");
        let mut o: WireOutcome = serde_json::from_value(serde_json::json!({
            "seconds": 1.0, "events": 2, "sql": null,
            "latency": {"min_ms": 0.0, "avg_ms": 0.0, "max_ms": 0.0, "p50_ms": 0.0,
                        "p95_ms": 0.0, "p99_ms": 0.0, "percentile": 95.0, "pct_ms": 0.0,
                        "sum_ms": 0.0},
            "fairness": [0.0, 0.0, 0.0, 0.0], "histogram": histogram, "interrupted": false,
            "cut_short": null, "metrics": [], "transactions": [],
            "per_thread": [[1, 1], [1, 1]]
        }))
        .expect("an outcome");
        assert!(b.check_outcome(&o).is_ok());
        o.per_thread.push((1, 1));
        let e = b
            .check_outcome(&o)
            .expect_err("too many threads")
            .to_string();
        assert!(
            e.contains("statistics of 3 threads, this client runs 2"),
            "{e}"
        );
        o.per_thread.pop();
        o.transactions.push(super::super::protocol::WireTxn {
            name: "t".into(),
            statement: false,
            count: 1,
            errors: 0,
            rollbacks: 0,
            histogram: o.histogram.clone(),
        });
        let e = b
            .check_outcome(&o)
            .expect_err("a transaction cpu does not declare")
            .to_string();
        assert!(
            e.contains("1 per-transaction statistics, the workload declares 0"),
            "{e}"
        );
    }
}
