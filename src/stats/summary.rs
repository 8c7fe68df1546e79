//! Final-report numbers from finished workers: latency summary and threads fairness.
//!
//! min/avg/max/sum are exact (from per-worker min/max/sum in nanoseconds), as in sysbench.
//! Percentiles deliberately differ from sysbench's final report: they come from the merged HDR
//! histogram (3 significant digits, ≤ 0.1 % relative error) instead of sysbench's 1024 log
//! buckets (≈ 1.8 % wide, values snapped to bucket representatives that may even fall outside
//! min..max, sysbench issue #486). The HDR value is additionally clamped into [min, max], which
//! it can only leave by HDR's highest-equivalent rounding.

use hdrhistogram::Histogram;

use super::WorkerStats;

const NS_PER_MS: f64 = 1e6;

/// Latency summary in milliseconds.
#[derive(Clone, Debug, Default)]
pub struct LatencySummary {
    pub min_ms: f64,
    pub avg_ms: f64,
    pub max_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    /// The configured `percentile` (e.g. 95 or 99.9) and its value.
    pub percentile: f64,
    pub pct_ms: f64,
    /// Sum of all event latencies (busy time of all threads).
    pub sum_ms: f64,
}

/// Threads fairness as sysbench reports it: per-thread event counts and busy time (seconds).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Fairness {
    pub events_avg: f64,
    pub events_stddev: f64,
    pub time_avg: f64,
    pub time_stddev: f64,
}

/// Mean and *population* standard deviation (divide by N, as sysbench does). Empty → (0, 0).
pub fn mean_and_population_stddev(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        return (0.0, 0.0);
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}

pub fn fairness(workers: &[WorkerStats]) -> Fairness {
    let events: Vec<f64> = workers.iter().map(|w| w.events as f64).collect();
    let times: Vec<f64> = workers.iter().map(|w| w.busy_ns as f64 / 1e9).collect();
    let (events_avg, events_stddev) = mean_and_population_stddev(&events);
    let (time_avg, time_stddev) = mean_and_population_stddev(&times);
    Fairness {
        events_avg,
        events_stddev,
        time_avg,
        time_stddev,
    }
}

/// Merges the workers' histograms into one (exact: HDR addition loses nothing). Takes any
/// collection of stats: the workers' own, or the service times or lags of a `rate` run
/// ([`super::OpenLoopStats`]).
pub fn merge<'a>(
    workers: impl IntoIterator<Item = &'a WorkerStats>,
) -> Result<Histogram<u64>, String> {
    let mut merged = Histogram::<u64>::new(3).map_err(|e| e.to_string())?;
    for w in workers {
        merged
            .add(&w.histogram)
            .map_err(|e| format!("merging latency histograms failed: {e}"))?;
    }
    Ok(merged)
}

/// The latency summary of a run; `percentile` is the configured one (0 disables it: its value
/// is then 0). p50/p95/p99 are always filled.
pub fn latency_summary<'a, I>(
    workers: I,
    merged: &Histogram<u64>,
    percentile: f64,
) -> LatencySummary
where
    I: IntoIterator<Item = &'a WorkerStats>,
    I::IntoIter: Clone,
{
    let workers = workers.into_iter();
    let events: u64 = workers.clone().map(|w| w.events).sum();
    let sum_ns: u128 = workers.clone().map(|w| u128::from(w.busy_ns)).sum();
    let min_ns = workers
        .clone()
        .filter(|w| w.events > 0)
        .map(|w| w.min_ns)
        .min()
        .unwrap_or(0);
    let max_ns = workers.map(|w| w.max_ns).max().unwrap_or(0);
    latency_from_parts(merged, events, sum_ns, min_ns, max_ns, percentile)
}

/// The latency summary of `events` events whose latencies add up to `sum_ns`, from `min_ns`
/// to `max_ns`, with `merged` their histogram: for one process's workers
/// ([`latency_summary`]) and for the shards of a multi-client step, merged exactly.
pub fn latency_from_parts(
    merged: &Histogram<u64>,
    events: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
    percentile: f64,
) -> LatencySummary {
    if events == 0 {
        return LatencySummary {
            percentile,
            ..LatencySummary::default()
        };
    }
    let at = |p: f64| {
        if p <= 0.0 {
            return 0.0;
        }
        let v = merged.value_at_quantile(p / 100.0).clamp(min_ns, max_ns);
        v as f64 / NS_PER_MS
    };
    LatencySummary {
        min_ms: min_ns as f64 / NS_PER_MS,
        avg_ms: sum_ns as f64 / events as f64 / NS_PER_MS,
        max_ms: max_ns as f64 / NS_PER_MS,
        p50_ms: at(50.0),
        p95_ms: at(95.0),
        p99_ms: at(99.0),
        percentile,
        pct_ms: at(percentile),
        sum_ms: sum_ns as f64 / NS_PER_MS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(latencies_ns: &[u64]) -> WorkerStats {
        let mut w = WorkerStats::new().expect("valid sigfig");
        for &ns in latencies_ns {
            w.record(ns);
        }
        w
    }

    #[test]
    fn population_stddev() {
        let (m, s) = mean_and_population_stddev(&[9193.0, 9239.0]);
        assert_eq!(m, 9216.0);
        assert_eq!(s, 23.0);
        assert_eq!(mean_and_population_stddev(&[]), (0.0, 0.0));
    }

    #[test]
    fn summary_is_exact_for_min_avg_max_sum() {
        let workers = [
            worker(&[1_000_000, 2_000_000]),
            worker(&[3_000_000, 4_000_000, 5_000_000, 6_000_000]),
            worker(&[]),
        ];
        let merged = merge(&workers).expect("merge");
        assert_eq!(merged.len(), 6);
        let s = latency_summary(&workers, &merged, 99.9);
        assert_eq!(s.min_ms, 1.0);
        assert_eq!(s.max_ms, 6.0);
        assert_eq!(s.sum_ms, 21.0);
        assert_eq!(s.avg_ms, 3.5);
        assert_eq!(s.percentile, 99.9);
        assert!((s.pct_ms - 6.0).abs() < 0.01, "{}", s.pct_ms);
        assert!((s.p50_ms - 3.0).abs() < 0.01, "{}", s.p50_ms);
        let f = fairness(&workers);
        assert_eq!(f.events_avg, 2.0);
        assert!((f.events_stddev - (8.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert!((f.time_avg - 0.007).abs() < 1e-12);
        assert_eq!(latency_summary(&workers, &merged, 0.0).pct_ms, 0.0);
    }
}
