//! The exact merge of a multi-client step: the shards' outcomes into one row, the shards'
//! interval samples into one interval line (#17).
//!
//! Exact, not averaged: counts (events, queries, errors, reconnects, transactions) are
//! summed; latency percentiles come from the shards' HDR histograms *added* (HDR addition
//! loses nothing, so the merged p95 is the p95 of every event of every client), min and max
//! are the extremes, the average is the summed latency over the summed events; fairness is
//! computed over every thread of every client, as if they had run in one process. A custom
//! workload's per-transaction histograms are added the same way.
//!
//! Rates need a window. Every shard's rate is over its own measured time, and the shards
//! start together (the coordinator's barrier, within the measured start skew) and run the
//! same limits, so their windows coincide but for the skew; the merged `seconds` is the
//! longest shard's, so a merged rate (`events / seconds`) is never overstated. Workload
//! metrics (rates such as tpmC or MiB/s, and counts such as dropped arrivals) are summed.
//!
//! Every integer sum is checked (#26): the counts come from other processes, and a sum that
//! wrapped (or an HDR addition that saturated) would be a plausible, wrong row. An overflow is
//! a [`MergeError::Overflow`] naming the shard whose value did not fit, which the coordinator
//! turns into that client's failure.

use hdrhistogram::Histogram;

use super::protocol::LiveTotals;
use crate::engine::metric;
use crate::engine::session::connections::{self, MergeRule};
use crate::engine::session::retry::ErrorCodes;
use crate::engine::{
    IntervalSample, LatencySummary, LiveSample, Metrics, OpenLoop, SqlCounters, StepOutcome,
    Timing, TxnStats,
};
use crate::stats::{self, log_histogram};

const NS_PER_MS: f64 = 1e6;

/// Why the shards did not merge.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum MergeError {
    /// Adding shard `shard`'s `what` to the shards before it overflowed 2^64 − 1.
    #[error("its {what} overflow the merged total (more than 2^64 - 1)")]
    Overflow { shard: usize, what: &'static str },
    #[error("{0}")]
    Histogram(String),
}

/// `a + b`, or shard `shard`'s `what` overflowed.
fn checked(a: u64, b: u64, shard: usize, what: &'static str) -> Result<u64, MergeError> {
    a.checked_add(b).ok_or(MergeError::Overflow { shard, what })
}

fn to_ns(ms: f64) -> u64 {
    (ms * NS_PER_MS).round().max(0.0) as u64
}

/// Adds shard `shard`'s histogram; HDR addition saturates, so the total count is checked
/// first.
fn add(into: &mut Histogram<u64>, other: &Histogram<u64>, shard: usize) -> Result<(), MergeError> {
    checked(into.len(), other.len(), shard, "latency histogram counts")?;
    into.add(other)
        .map_err(|e| MergeError::Histogram(format!("merging latency histograms failed: {e}")))
}

fn new_histogram() -> Result<Histogram<u64>, MergeError> {
    Histogram::<u64>::new(crate::stats::SIGFIG).map_err(|e| MergeError::Histogram(e.to_string()))
}

/// Sums metrics by name, in the order they first appear; the connection metrics follow their
/// own rule ([`connections::merge_rule`]: connect times are averaged over the connects, their
/// p95 and maximum are the largest client's).
fn merge_metrics<'a>(all: impl Iterator<Item = &'a Metrics> + Clone) -> Metrics {
    let mut out: Metrics = Vec::new();
    for m in all.clone() {
        for &(name, v) in m {
            let rule = connections::merge_rule(name).unwrap_or(MergeRule::Sum);
            match out.iter_mut().find(|(n, _)| *n == name) {
                Some((_, acc)) => match rule {
                    MergeRule::Max => *acc = acc.max(v),
                    MergeRule::Sum | MergeRule::MeanWeightedBy(_) => *acc += v,
                },
                None => out.push((name, v)),
            }
        }
    }
    // Weighted means: the sum of value × weight over the sum of the weights.
    for (name, value) in out.iter_mut() {
        if let Some(MergeRule::MeanWeightedBy(by)) = connections::merge_rule(name) {
            let (mut sum, mut weight) = (0.0, 0.0);
            for m in all.clone() {
                if let (Some(v), Some(w)) = (metric(m, name), metric(m, by)) {
                    sum += v * w;
                    weight += w;
                }
            }
            if weight > 0.0 {
                *value = sum / weight;
            }
        }
    }
    out
}

/// The shards' outcomes (in client order) as one outcome; see the module comment.
pub fn merge_outcomes(shards: &[StepOutcome]) -> Result<StepOutcome, MergeError> {
    let mut histogram = new_histogram()?;
    let mut events = 0u64;
    let mut sql: Option<SqlCounters> = None;
    for (i, s) in shards.iter().enumerate() {
        add(&mut histogram, &s.histogram, i)?;
        events = checked(events, s.events, i, "events")?;
        if let Some(s) = &s.sql {
            let a = sql.get_or_insert_with(SqlCounters::default);
            a.transactions = checked(a.transactions, s.transactions, i, "transactions")?;
            a.reads = checked(a.reads, s.reads, i, "reads")?;
            a.writes = checked(a.writes, s.writes, i, "writes")?;
            a.other = checked(a.other, s.other, i, "other queries")?;
            a.errors = checked(a.errors, s.errors, i, "errors")?;
            a.reconnects = checked(a.reconnects, s.reconnects, i, "reconnects")?;
        }
    }
    let latency = merged_summary(shards.iter().map(|s| (&s.latency, s.events)), &histogram);
    let per_thread: Vec<(u64, u64)> = shards
        .iter()
        .flat_map(|s| s.per_thread.iter().copied())
        .collect();
    let ev: Vec<f64> = per_thread.iter().map(|&(e, _)| e as f64).collect();
    let times: Vec<f64> = per_thread.iter().map(|&(_, ns)| ns as f64 / 1e9).collect();
    let (events_avg, events_stddev) = stats::mean_and_population_stddev(&ev);
    let (time_avg, time_stddev) = stats::mean_and_population_stddev(&times);
    Ok(StepOutcome {
        error_codes: merge_error_codes(shards),
        seconds: shards.iter().map(|s| s.seconds).fold(0.0, f64::max),
        events,
        sql,
        latency,
        fairness_events_avg: events_avg,
        fairness_events_stddev: events_stddev,
        fairness_time_avg: time_avg,
        fairness_time_stddev: time_stddev,
        histogram,
        interrupted: shards.iter().any(|s| s.interrupted),
        cut_short: shards.iter().find_map(|s| s.cut_short.clone()),
        metrics: merge_metrics(shards.iter().map(|s| &s.metrics)),
        transactions: merge_transactions(shards)?,
        per_thread,
        // Each client sees only its share of the throughput: no verdict on the whole here.
        steady: Default::default(),
        phases: Vec::new(),
        groups: Vec::new(),
        open_loop: merge_open_loop(shards)?,
    })
}

/// The summary of the shards' `(summary, events)` whose histograms were added into
/// `merged`: min and max the extremes of the shards with events, the sum the sum, the
/// percentiles from `merged`.
fn merged_summary<'a>(
    parts: impl Iterator<Item = (&'a LatencySummary, u64)> + Clone,
    merged: &Histogram<u64>,
) -> LatencySummary {
    let with_events = || parts.clone().filter(|(_, events)| *events > 0);
    let min_ns = with_events()
        .map(|(l, _)| to_ns(l.min_ms))
        .min()
        .unwrap_or(0);
    let max_ns = with_events()
        .map(|(l, _)| to_ns(l.max_ms))
        .max()
        .unwrap_or(0);
    let sum_ns: u128 = parts
        .clone()
        .map(|(l, _)| u128::from(to_ns(l.sum_ms)))
        .sum();
    let events = parts.clone().map(|(_, events)| events).sum();
    let percentile = parts.clone().next().map_or(0.0, |(l, _)| l.percentile);
    stats::latency_from_parts(merged, events, sum_ns, min_ns, max_ns, percentile)
}

/// The service times and schedule lags of a `rate` step's shards, merged as the latency is
/// (each timing's count is its histogram's: the events of the shard that ran with a ticket).
fn merge_open_loop(shards: &[StepOutcome]) -> Result<Option<OpenLoop>, MergeError> {
    let timing = |each: fn(&OpenLoop) -> &Timing| -> Result<Timing, MergeError> {
        let parts = shards
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.open_loop.as_ref().map(|o| (i, each(o))));
        let mut histogram = new_histogram()?;
        for (i, t) in parts.clone() {
            add(&mut histogram, &t.histogram, i)?;
        }
        let summary = merged_summary(
            parts.map(|(_, t)| (&t.summary, t.histogram.len())),
            &histogram,
        );
        Ok(Timing { summary, histogram })
    };
    if shards.iter().all(|s| s.open_loop.is_none()) {
        return Ok(None);
    }
    Ok(Some(OpenLoop {
        service: timing(|o| &o.service)?,
        lag: timing(|o| &o.lag)?,
    }))
}

/// A custom workload's transactions over every shard, by name, in first-seen order.
/// Every shard's errors by code, added up.
fn merge_error_codes(shards: &[StepOutcome]) -> ErrorCodes {
    let mut all = ErrorCodes::default();
    for s in shards {
        all.absorb(&s.error_codes);
    }
    all
}

fn merge_transactions(shards: &[StepOutcome]) -> Result<Vec<TxnStats>, MergeError> {
    let mut out: Vec<TxnStats> = Vec::new();
    for (i, shard) in shards.iter().enumerate() {
        for t in &shard.transactions {
            match out
                .iter_mut()
                .find(|o| o.name == t.name && o.statement == t.statement)
            {
                Some(o) => {
                    o.count = checked(o.count, t.count, i, "transaction counts")?;
                    o.errors = checked(o.errors, t.errors, i, "transaction errors")?;
                    o.rollbacks = checked(o.rollbacks, t.rollbacks, i, "transaction rollbacks")?;
                    add(&mut o.histogram, &t.histogram, i)?;
                }
                // A fresh histogram that grows: a decoded one spans only its own values.
                None => {
                    let mut histogram = new_histogram()?;
                    add(&mut histogram, &t.histogram, i)?;
                    out.push(TxnStats {
                        histogram,
                        ..t.clone()
                    });
                }
            }
        }
    }
    Ok(out)
}

fn sum_opt(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    values.fold(None, |acc, v| match (acc, v) {
        (a, None) => a,
        (None, Some(v)) => Some(v),
        (Some(a), Some(v)) => Some(a + v),
    })
}

/// The shards' samples of one report interval as one sample at `time_s` (the coordinator's
/// clock): rates and threads summed, the percentile from the added latency buckets.
pub fn merge_samples(
    samples: &[IntervalSample],
    time_s: f64,
    percentile: f64,
) -> Result<IntervalSample, MergeError> {
    let mut buckets = vec![0u64; stats::BUCKETS];
    let mut threads = 0usize;
    for (i, s) in samples.iter().enumerate() {
        for (b, c) in buckets.iter_mut().zip(&s.lat_buckets) {
            *b = checked(*b, *c, i, "interval latency buckets")?;
        }
        threads = threads.checked_add(s.threads).ok_or(MergeError::Overflow {
            shard: i,
            what: "interval threads",
        })?;
    }
    let lat_pct_ms = if samples.iter().all(|s| s.lat_buckets.is_empty()) {
        samples.iter().map(|s| s.lat_pct_ms).fold(0.0, f64::max)
    } else {
        log_histogram::percentile_ms(&buckets, percentile)
    };
    Ok(IntervalSample {
        time_s,
        threads,
        eps: samples.iter().map(|s| s.eps).sum(),
        tps: sum_opt(samples.iter().map(|s| s.tps)),
        qps: sum_opt(samples.iter().map(|s| s.qps)),
        reads_ps: sum_opt(samples.iter().map(|s| s.reads_ps)),
        writes_ps: sum_opt(samples.iter().map(|s| s.writes_ps)),
        other_ps: sum_opt(samples.iter().map(|s| s.other_ps)),
        lat_pct_ms,
        errors_ps: sum_opt(samples.iter().map(|s| s.errors_ps)),
        reconnects_ps: sum_opt(samples.iter().map(|s| s.reconnects_ps)),
        metrics: merge_metrics(samples.iter().map(|s| &s.metrics)),
        phase: None,
        group: None,
        target_rate: None,
        lat_buckets: buckets,
    })
}

/// The agents' live samples merged into the step's (`--metrics` during a multi-client step).
///
/// Each agent samples on its own clock, so the merge keeps every agent's latest totals and
/// adds up the latency buckets they sent since the last merged sample; once every agent has
/// sent one and `every` has passed since the last merged sample, a new one is due: totals and
/// rates summed, the elapsed time the longest agent's. Sums saturate instead of failing: these
/// numbers only feed the watchers, and the step's own row comes from the checked merge of the
/// outcomes.
pub struct LiveMerge {
    every: std::time::Duration,
    latest: Vec<Option<LiveTotals>>,
    buckets: Vec<u64>,
    last: Option<std::time::Instant>,
}

/// A merged live sample, owned (the engine's [`LiveSample`] borrows its buckets).
pub struct MergedLive {
    pub totals: LiveTotals,
    pub buckets: Vec<u64>,
}

impl MergedLive {
    pub fn sample(&self) -> LiveSample<'_> {
        LiveSample {
            elapsed_s: self.totals.elapsed_s,
            threads: self.totals.threads,
            events: self.totals.events,
            eps: self.totals.eps,
            sql: self.totals.sql,
            latency_buckets: &self.buckets,
        }
    }
}

impl LiveMerge {
    /// For `agents` agents whose merged samples are wanted every `every`.
    pub fn new(agents: usize, every: std::time::Duration) -> LiveMerge {
        LiveMerge {
            every,
            latest: vec![None; agents],
            buckets: vec![0; stats::BUCKETS],
            last: None,
        }
    }

    /// Agent `i`'s sample at `now`; the merged sample, when one is due.
    pub fn add(
        &mut self,
        i: usize,
        totals: LiveTotals,
        buckets: &[u64],
        now: std::time::Instant,
    ) -> Option<MergedLive> {
        *self.latest.get_mut(i)? = Some(totals);
        for (sum, c) in self.buckets.iter_mut().zip(buckets) {
            *sum = sum.saturating_add(*c);
        }
        if self.latest.iter().any(Option::is_none)
            || self
                .last
                .is_some_and(|at| now.duration_since(at) < self.every)
        {
            return None;
        }
        self.last = Some(now);
        let mut merged = LiveTotals::default();
        for t in self.latest.iter().flatten() {
            merged.elapsed_s = merged.elapsed_s.max(t.elapsed_s);
            merged.threads = merged.threads.saturating_add(t.threads);
            merged.events = merged.events.saturating_add(t.events);
            merged.eps += t.eps;
            if let Some(s) = &t.sql {
                let a = merged.sql.get_or_insert_with(SqlCounters::default);
                a.transactions = a.transactions.saturating_add(s.transactions);
                a.reads = a.reads.saturating_add(s.reads);
                a.writes = a.writes.saturating_add(s.writes);
                a.other = a.other.saturating_add(s.other);
                a.errors = a.errors.saturating_add(s.errors);
                a.reconnects = a.reconnects.saturating_add(s.reconnects);
            }
        }
        Some(MergedLive {
            totals: merged,
            buckets: std::mem::replace(&mut self.buckets, vec![0; stats::BUCKETS]),
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::stats::WorkerStats;

    /// The outcome one process would report for these threads' latencies, as a `rate` run
    /// whose events each waited a third of their latency.
    fn outcome_of(threads: &[Vec<u64>]) -> StepOutcome {
        let workers: Vec<WorkerStats> = threads
            .iter()
            .map(|lat| {
                let mut w = WorkerStats::with_open_loop().expect("hist");
                for &ns in lat {
                    w.record(ns);
                    let o = w.open_loop.as_deref_mut().expect("rate");
                    o.lag.record(ns / 3);
                    o.service.record(ns - ns / 3);
                }
                w
            })
            .collect();
        let open_loop = OpenLoop::of_workers(&workers, 95.0).expect("merge");
        let histogram = stats::merge(&workers).expect("merge");
        let latency = stats::latency_summary(&workers, &histogram, 95.0);
        let f = stats::fairness(&workers);
        let events: u64 = workers.iter().map(|w| w.events).sum();
        StepOutcome {
            error_codes: Default::default(),
            seconds: 10.0,
            events,
            sql: Some(SqlCounters {
                transactions: events,
                reads: events * 10,
                ..SqlCounters::default()
            }),
            latency,
            fairness_events_avg: f.events_avg,
            fairness_events_stddev: f.events_stddev,
            fairness_time_avg: f.time_avg,
            fairness_time_stddev: f.time_stddev,
            histogram,
            interrupted: false,
            cut_short: None,
            metrics: vec![(crate::engine::DROPPED, 1.0)],
            transactions: Vec::new(),
            per_thread: workers.iter().map(|w| (w.events, w.busy_ns)).collect(),
            steady: Default::default(),
            phases: Vec::new(),
            groups: Vec::new(),
            open_loop,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    /// Connects add up, their average is over every connect, their p95 and maximum are the
    /// largest client's; idle connections and dead ones add up (#30).
    #[test]
    fn connection_metrics_merge_by_their_rules() {
        use crate::engine::session::connections::*;
        let a: Metrics = vec![
            (CONNECTS, 30.0),
            (CONNECT_AVG_MS, 1.0),
            (CONNECT_P95_MS, 2.0),
            (CONNECT_MAX_MS, 5.0),
            (IDLE_CONNECTIONS, 100.0),
            (IDLE_DEAD, 1.0),
        ];
        let b: Metrics = vec![
            (CONNECTS, 10.0),
            (CONNECT_AVG_MS, 3.0),
            (CONNECT_P95_MS, 4.0),
            (CONNECT_MAX_MS, 4.5),
            (IDLE_CONNECTIONS, 99.0),
            (IDLE_DEAD, 0.0),
            (crate::engine::HEADLINE, 2.0),
        ];
        let m = merge_metrics([&a, &b].into_iter());
        assert_eq!(metric(&m, CONNECTS), Some(40.0));
        assert_eq!(metric(&m, CONNECT_AVG_MS), Some(1.5));
        assert_eq!(metric(&m, CONNECT_P95_MS), Some(4.0));
        assert_eq!(metric(&m, CONNECT_MAX_MS), Some(5.0));
        assert_eq!(metric(&m, IDLE_CONNECTIONS), Some(199.0));
        assert_eq!(metric(&m, IDLE_DEAD), Some(1.0));
        assert_eq!(metric(&m, crate::engine::HEADLINE), Some(2.0));
    }

    proptest! {
        /// Merging the shards of a step gives what one process running all their threads
        /// reports: counts, extremes, percentiles (from added histograms) and fairness.
        #[test]
        fn merged_shards_equal_one_process(
            threads in prop::collection::vec(
                prop::collection::vec(1_000u64..50_000_000, 0..40), 1..9),
            clients in 1usize..4,
        ) {
            let whole = outcome_of(&threads);
            let mut shards = Vec::new();
            let per = threads.len().div_ceil(clients);
            for part in threads.chunks(per) {
                shards.push(outcome_of(part));
            }
            let merged = merge_outcomes(&shards).expect("merges");
            prop_assert_eq!(merged.events, whole.events);
            prop_assert_eq!(&merged.histogram, &whole.histogram);
            let (m, w) = (&merged.latency, &whole.latency);
            for (a, b) in [
                (m.min_ms, w.min_ms), (m.max_ms, w.max_ms), (m.p50_ms, w.p50_ms),
                (m.p95_ms, w.p95_ms), (m.p99_ms, w.p99_ms), (m.pct_ms, w.pct_ms),
                (m.avg_ms, w.avg_ms), (m.sum_ms, w.sum_ms),
            ] {
                prop_assert!(close(a, b), "{} vs {}", a, b);
            }
            let (mo, wo) = (merged.open_loop.expect("rate"), whole.open_loop.expect("rate"));
            for (m, w) in [(&mo.service, &wo.service), (&mo.lag, &wo.lag)] {
                prop_assert_eq!(&m.histogram, &w.histogram);
                let (m, w) = (&m.summary, &w.summary);
                for (a, b) in [
                    (m.min_ms, w.min_ms), (m.max_ms, w.max_ms), (m.p99_ms, w.p99_ms),
                    (m.avg_ms, w.avg_ms), (m.sum_ms, w.sum_ms),
                ] {
                    prop_assert!(close(a, b), "{} vs {}", a, b);
                }
            }
            prop_assert!(close(merged.fairness_events_stddev, whole.fairness_events_stddev));
            prop_assert!(close(merged.fairness_time_stddev, whole.fairness_time_stddev));
            let sql = merged.sql.expect("sql");
            prop_assert_eq!(sql.reads, whole.events * 10);
            prop_assert_eq!(
                crate::engine::metric(&merged.metrics, crate::engine::DROPPED),
                Some(shards.len() as f64)
            );
        }
    }

    #[test]
    fn transactions_merge_by_name() {
        let mut a = outcome_of(&[vec![1_000, 2_000]]);
        let mut b = outcome_of(&[vec![3_000]]);
        let txn = |name: &str, count, ns: &[u64]| {
            let mut h = Histogram::<u64>::new(3).expect("hist");
            for &v in ns {
                h.record(v).expect("records");
            }
            TxnStats {
                name: name.into(),
                statement: false,
                count,
                errors: 1,
                rollbacks: 0,
                histogram: h,
            }
        };
        a.transactions = vec![txn("new_order", 2, &[10, 20])];
        b.transactions = vec![txn("payment", 1, &[5]), txn("new_order", 1, &[30])];
        let m = merge_outcomes(&[a, b]).expect("merges");
        let names: Vec<&str> = m.transactions.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["new_order", "payment"]);
        assert_eq!(m.transactions[0].count, 3);
        assert_eq!(m.transactions[0].errors, 2);
        assert_eq!(m.transactions[0].histogram.len(), 3);
        assert_eq!(m.transactions[0].histogram.max(), 30);
        // Histograms that came over the wire span only their own values: the first shard's
        // must not bound what the others add.
        let wire = |t: TxnStats| {
            let text = super::super::protocol::encode_histogram(&t.histogram).expect("encodes");
            TxnStats {
                histogram: super::super::protocol::decode_histogram(&text).expect("decodes"),
                ..t
            }
        };
        let mut a = outcome_of(&[vec![1_000]]);
        let mut b = outcome_of(&[vec![1_000]]);
        a.transactions = vec![wire(txn("new_order", 1, &[10]))];
        b.transactions = vec![wire(txn("new_order", 1, &[90_000_000_000]))];
        let m = merge_outcomes(&[a, b]).expect("merges");
        assert_eq!(m.transactions[0].histogram.len(), 2);
        assert!(m.transactions[0].histogram.max() >= 89_000_000_000);
    }

    /// Sums that would wrap are the failure of the shard whose value did not fit.
    #[test]
    fn overflowing_sums_name_their_shard() {
        let a = outcome_of(&[vec![1_000]]);
        let mut b = outcome_of(&[vec![2_000]]);
        b.events = u64::MAX;
        assert_eq!(
            merge_outcomes(&[a.clone(), b]).expect_err("overflow"),
            MergeError::Overflow {
                shard: 1,
                what: "events"
            }
        );
        let mut c = outcome_of(&[vec![2_000]]);
        c.sql.as_mut().unwrap().reads = u64::MAX;
        assert_eq!(
            merge_outcomes(&[a, c]).expect_err("overflow"),
            MergeError::Overflow {
                shard: 1,
                what: "reads"
            }
        );
        let mut full = vec![0; stats::BUCKETS];
        full[7] = u64::MAX;
        let s = |buckets: Vec<u64>| IntervalSample {
            lat_buckets: buckets,
            ..IntervalSample::default()
        };
        let mut one = vec![0; stats::BUCKETS];
        one[7] = 1;
        let e = merge_samples(&[s(full), s(one)], 1.0, 95.0).expect_err("overflow");
        assert_eq!(
            e,
            MergeError::Overflow {
                shard: 1,
                what: "interval latency buckets"
            }
        );
    }

    #[test]
    fn samples_add_rates_and_buckets() {
        let mut b1 = vec![0; stats::BUCKETS];
        let mut b2 = vec![0; stats::BUCKETS];
        b1[log_histogram::bucket_of_ns(1_000_000)] = 99;
        b2[log_histogram::bucket_of_ns(90_000_000)] = 1;
        let s = |eps, tps: Option<f64>, buckets: Vec<u64>| IntervalSample {
            threads: 2,
            eps,
            tps,
            lat_buckets: buckets,
            ..IntervalSample::default()
        };
        let m = merge_samples(
            &[s(10.0, Some(10.0), b1.clone()), s(5.0, None, b2.clone())],
            1.0,
            99.0,
        )
        .expect("merges");
        assert_eq!((m.threads, m.eps, m.tps), (4, 15.0, Some(10.0)));
        let mut all = b1;
        all[log_histogram::bucket_of_ns(90_000_000)] = 1;
        assert_eq!(m.lat_pct_ms, log_histogram::percentile_ms(&all, 99.0));
        assert_eq!(m.time_s, 1.0);
    }

    /// A merged live sample waits for every agent, then for its period; totals are each
    /// agent's latest summed, buckets everything sent since the previous merged sample.
    #[test]
    fn live_samples_merge_once_every_agent_sent_one() {
        use std::time::{Duration, Instant};
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let totals = |elapsed_s, events, sql: u64| LiveTotals {
            elapsed_s,
            threads: 2,
            events,
            eps: events as f64 / elapsed_s,
            sql: Some(SqlCounters {
                transactions: events,
                reads: sql,
                ..SqlCounters::default()
            }),
        };
        let mut b = vec![0; stats::BUCKETS];
        b[7] = 3;
        let mut m = LiveMerge::new(2, Duration::from_secs(1));
        assert!(
            m.add(0, totals(1.0, 10, 100), &b, at(1000)).is_none(),
            "agent 1 not heard"
        );
        let first = m
            .add(1, totals(1.1, 20, 200), &b, at(1100))
            .expect("both heard");
        assert_eq!(first.totals.events, 30);
        assert_eq!(first.totals.threads, 4);
        assert_eq!(first.totals.elapsed_s, 1.1);
        assert_eq!(first.totals.sql.map(|s| s.reads), Some(300));
        assert_eq!(first.buckets[7], 6);
        assert!(
            m.add(0, totals(2.0, 25, 250), &b, at(2000)).is_none(),
            "not a period yet"
        );
        let second = m
            .add(1, totals(2.1, 40, 400), &b, at(2100))
            .expect("a period on");
        assert_eq!(
            second.totals.events, 65,
            "the latest of each, not a sum over time"
        );
        assert_eq!(
            second.buckets[7], 6,
            "only what came since the previous sample"
        );
        assert_eq!(second.sample().latency_buckets.len(), stats::BUCKETS);
    }
}
