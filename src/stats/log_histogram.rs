//! sysbench 1.0's log-bucket latency histogram (spec §5 "Percentiles"), used for interim lines.
//!
//! 1024 buckets spread logarithmically between 0.001 ms and 100 000 ms (each ≈ 1.8 % wide).
//! A latency `v` (ms) falls into bucket `floor((ln v − ln 0.001) · 1023 / (ln 1e5 − ln 1e-3) + 0.5)`,
//! clamped; a percentile is the representative value `exp(i / mult + ln 0.001)` of the first
//! bucket whose cumulative count reaches `floor(N · p / 100 + 0.5)`. Reproducing this keeps the
//! interim `lat (ms,95%)` column comparable with sysbench's, bucket for bucket.
//!
//! [`AtomicLogHistogram`] has exactly one writer (its worker thread) and any number of readers
//! (the collector), so a bucket is bumped with a relaxed load + store rather than a locked
//! read-modify-write: no lost updates are possible with one writer, and the readers only need
//! eventually-consistent counts.

use std::sync::atomic::{AtomicU64, Ordering};

/// Number of buckets, as in sysbench.
pub const BUCKETS: usize = 1024;
const MIN_MS: f64 = 0.001;
const MAX_MS: f64 = 100_000.0;

fn ln_min() -> f64 {
    MIN_MS.ln()
}

/// Buckets per unit of ln(ms).
fn mult() -> f64 {
    (BUCKETS - 1) as f64 / (MAX_MS.ln() - MIN_MS.ln())
}

/// The bucket a latency of `ns` nanoseconds falls into.
pub fn bucket_of_ns(ns: u64) -> usize {
    let ms = ns as f64 / 1e6;
    if ms <= MIN_MS {
        return 0;
    }
    let i = ((ms.ln() - ln_min()) * mult() + 0.5).floor();
    if i >= (BUCKETS - 1) as f64 {
        BUCKETS - 1
    } else {
        i as usize
    }
}

/// The representative value of bucket `i`, in milliseconds.
pub fn bucket_value_ms(i: usize) -> f64 {
    (i as f64 / mult() + ln_min()).exp()
}

/// Percentile `p` (0..=100) of a set of bucket counts, in milliseconds, by sysbench's method.
/// No events or `p <= 0` give 0.0. Unlike sysbench, a target rank of 0 (tiny `p`) is raised to
/// 1 so that an empty first bucket is never reported.
pub fn percentile_ms(counts: &[u64], p: f64) -> f64 {
    let total: u64 = counts.iter().sum();
    if total == 0 || p <= 0.0 {
        return 0.0;
    }
    let rank = ((total as f64 * p / 100.0 + 0.5).floor() as u64).max(1);
    let mut acc = 0u64;
    for (i, &c) in counts.iter().enumerate() {
        acc += c;
        if acc >= rank {
            return bucket_value_ms(i);
        }
    }
    bucket_value_ms(counts.len().saturating_sub(1))
}

/// The 1024-bucket counts of an HDR histogram of nanoseconds: each HDR bucket's count goes to
/// the log bucket of its median-equivalent value. This is how `--histogram` is printed from the
/// same merged data as the final report (so both cover exactly the same events); the HDR
/// resolution (3 significant digits) is far finer than a log bucket (≈ 1.8 %).
pub fn from_hdr(h: &hdrhistogram::Histogram<u64>) -> Vec<u64> {
    let mut counts = vec![0u64; BUCKETS];
    for v in h.iter_recorded() {
        counts[bucket_of_ns(h.median_equivalent(v.value_iterated_to()))] += v.count_at_value();
    }
    counts
}

/// A log histogram written by one thread and read by others without locks.
#[derive(Debug)]
pub struct AtomicLogHistogram {
    buckets: Box<[AtomicU64]>,
}

impl Default for AtomicLogHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl AtomicLogHistogram {
    pub fn new() -> Self {
        Self {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Records one latency. Must only be called from the histogram's single writer thread.
    #[inline]
    pub fn record_ns(&self, ns: u64) {
        let b = &self.buckets[bucket_of_ns(ns)];
        b.store(b.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// Copies the current counts into `dst` (length [`BUCKETS`]).
    pub fn snapshot_into(&self, dst: &mut [u64]) {
        for (d, b) in dst.iter_mut().zip(self.buckets.iter()) {
            *d = b.load(Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_span_sysbench_range() {
        assert_eq!(bucket_of_ns(0), 0);
        assert_eq!(bucket_of_ns(1_000), 0); // 0.001 ms
        assert_eq!(bucket_of_ns(100_000_000_000), BUCKETS - 1); // 100 000 ms
        assert_eq!(bucket_of_ns(u64::MAX), BUCKETS - 1);
        assert!((bucket_value_ms(0) - 0.001).abs() < 1e-12);
        assert!((bucket_value_ms(BUCKETS - 1) - 100_000.0).abs() < 1e-6);
        // A representative is within half a bucket (≈ 0.9 %) of the value it stands for.
        let v = bucket_value_ms(bucket_of_ns(350_000));
        assert!((v - 0.35).abs() / 0.35 < 0.01, "{v}");
    }

    #[test]
    fn percentile_walks_cumulative_counts() {
        let mut counts = vec![0u64; BUCKETS];
        counts[100] = 90;
        counts[200] = 10;
        assert_eq!(percentile_ms(&counts, 50.0), bucket_value_ms(100));
        assert_eq!(percentile_ms(&counts, 90.0), bucket_value_ms(100));
        assert_eq!(percentile_ms(&counts, 95.0), bucket_value_ms(200));
        assert_eq!(percentile_ms(&counts, 0.0), 0.0);
        assert_eq!(percentile_ms(&[0; BUCKETS], 95.0), 0.0);
    }

    #[test]
    fn from_hdr_buckets_every_event() {
        let mut h = hdrhistogram::Histogram::<u64>::new(3).expect("sigfig");
        h.record_n(350_000, 7).expect("in range");
        h.record(2_000_000).expect("in range");
        let c = from_hdr(&h);
        assert_eq!(c.iter().sum::<u64>(), 8);
        assert_eq!(c[bucket_of_ns(350_000)], 7);
        assert_eq!(c[bucket_of_ns(2_000_000)], 1);
    }

    #[test]
    fn atomic_histogram_snapshots() {
        let h = AtomicLogHistogram::new();
        h.record_ns(350_000);
        h.record_ns(350_000);
        let mut snap = vec![0; BUCKETS];
        h.snapshot_into(&mut snap);
        assert_eq!(snap[bucket_of_ns(350_000)], 2);
        assert_eq!(snap.iter().sum::<u64>(), 2);
    }
}
