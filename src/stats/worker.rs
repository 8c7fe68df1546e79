//! Per-worker statistics: the private, exact part and the shared, interim part.

use std::sync::atomic::{AtomicU64, Ordering};

use hdrhistogram::Histogram;

use super::log_histogram::AtomicLogHistogram;

/// Significant digits of every latency histogram the engines record (and so of every histogram
/// an agent may send its coordinator).
pub const SIGFIG: u8 = 3;

/// Statistics a worker thread owns for the whole run and hands back when it ends.
///
/// The HDR histogram starts small and auto-resizes: it allocates only when an event is slower
/// than every earlier one by enough to need a new bucket range (O(log range) times per run, not
/// per event), which keeps the footprint small for runs with a thousand threads.
#[derive(Clone, Debug)]
pub struct WorkerStats {
    pub events: u64,
    /// Sum of event latencies (the thread's busy time).
    pub busy_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    /// Event latencies in nanoseconds, 3 significant digits.
    pub histogram: Histogram<u64>,
    /// Events whose latency exceeded `latency_limit` (0 without one).
    pub late: u64,
    /// `rate` arrivals not run because they were already more than `latency_limit` late when
    /// this worker took them (pgbench's "skipped"; 0 without both options).
    pub skipped: u64,
    /// A `rate` run's service time and schedule lag; `None` without `rate`. Boxed: only rate
    /// runs pay for the two extra histograms, and the struct stays small to hand over.
    pub open_loop: Option<Box<OpenLoopStats>>,
}

/// The two other clocks of an event of a `rate` run (#30), besides its latency (the response
/// time, from the arrival's intended start to the event's end): exact min/max/sum and an HDR
/// histogram each, as [`WorkerStats`] keeps for the latency, so they merge the same way.
#[derive(Clone, Debug)]
pub struct OpenLoopStats {
    /// From the moment the worker took the arrival (and began the event) to the event's end.
    pub service: WorkerStats,
    /// From the arrival's intended start to the moment the worker took it: the queueing delay.
    pub lag: WorkerStats,
}

impl WorkerStats {
    pub fn new() -> Result<Self, hdrhistogram::CreationError> {
        Ok(Self {
            events: 0,
            busy_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            histogram: Histogram::new(SIGFIG)?,
            late: 0,
            skipped: 0,
            open_loop: None,
        })
    }

    /// The statistics of a worker of a `rate` run: with [`WorkerStats::open_loop`].
    pub fn with_open_loop() -> Result<Self, hdrhistogram::CreationError> {
        Ok(Self {
            open_loop: Some(Box::new(OpenLoopStats {
                service: Self::new()?,
                lag: Self::new()?,
            })),
            ..Self::new()?
        })
    }

    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.events += 1;
        self.busy_ns = self.busy_ns.saturating_add(ns);
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        // `record` grows the histogram as needed (`saturating_record` would clamp instead);
        // it only fails when a resize is impossible, and then the value is clamped.
        if self.histogram.record(ns).is_err() {
            self.histogram.saturating_record(ns);
        }
    }

    /// Adds `other`'s events to these (a checkpoint hand-over that was collected late).
    pub fn absorb(&mut self, other: &WorkerStats) {
        self.late += other.late;
        self.skipped += other.skipped;
        if let (Some(mine), Some(theirs)) = (self.open_loop.as_deref_mut(), &other.open_loop) {
            mine.service.absorb(&theirs.service);
            mine.lag.absorb(&theirs.lag);
        }
        if other.events == 0 {
            return;
        }
        self.events += other.events;
        self.busy_ns = self.busy_ns.saturating_add(other.busy_ns);
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
        if self.histogram.add(&other.histogram).is_err() {
            for v in other.histogram.iter_recorded() {
                self.histogram
                    .saturating_record_n(v.value_iterated_to(), v.count_at_value());
            }
        }
    }
}

/// The part of a worker's statistics the collector reads during the run, without locks.
///
/// One writer (the worker) stores running totals with relaxed atomics; the collector snapshots
/// them at each report tick and diffs against the previous snapshot. Aligned to 128 bytes (two
/// cache lines, for adjacent-line prefetch) so that workers never write to a line another
/// worker's slot shares.
#[derive(Debug)]
#[repr(align(128))]
pub struct IntervalSlot {
    events: AtomicU64,
    busy_ns: AtomicU64,
    /// Nanoseconds since the run started at which the worker ended; `u64::MAX` while running.
    finished_at_ns: AtomicU64,
    histogram: AtomicLogHistogram,
}

impl Default for IntervalSlot {
    fn default() -> Self {
        Self::new()
    }
}

impl IntervalSlot {
    pub fn new() -> Self {
        Self {
            events: AtomicU64::new(0),
            busy_ns: AtomicU64::new(0),
            finished_at_ns: AtomicU64::new(u64::MAX),
            histogram: AtomicLogHistogram::new(),
        }
    }

    /// Publishes one finished event: the worker's running totals and the event's latency.
    /// Single writer only.
    #[inline]
    pub fn publish(&self, stats: &WorkerStats, latency_ns: u64) {
        self.publish_totals(stats.events, stats.busy_ns, latency_ns);
    }

    /// [`IntervalSlot::publish`] with explicit running totals: the driver passes totals since
    /// the start of the run, which keep growing when a checkpoint restarts the worker's
    /// [`WorkerStats`] (the collector diffs them, so they must never go back).
    #[inline]
    pub fn publish_totals(&self, events: u64, busy_ns: u64, latency_ns: u64) {
        self.histogram.record_ns(latency_ns);
        self.busy_ns.store(busy_ns, Ordering::Relaxed);
        self.events.store(events, Ordering::Relaxed);
    }

    pub fn events(&self) -> u64 {
        self.events.load(Ordering::Relaxed)
    }

    pub fn busy_ns(&self) -> u64 {
        self.busy_ns.load(Ordering::Relaxed)
    }

    pub fn snapshot_histogram(&self, dst: &mut [u64]) {
        self.histogram.snapshot_into(dst);
    }

    pub fn mark_finished(&self, at_ns: u64) {
        self.finished_at_ns.store(at_ns, Ordering::Release);
    }

    /// Whether the worker was still running at `t_ns` since the start. A worker stopped by the
    /// time limit ends at or after the deadline, so it counts as running at a tick that falls
    /// exactly on the deadline.
    pub fn running_at(&self, t_ns: u64) -> bool {
        self.finished_at_ns.load(Ordering::Acquire) >= t_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_stats_track_exact_extremes() {
        let mut s = WorkerStats::new().expect("valid sigfig");
        for ns in [500, 100, 900] {
            s.record(ns);
        }
        assert_eq!(
            (s.events, s.busy_ns, s.min_ns, s.max_ns),
            (3, 1500, 100, 900)
        );
        assert_eq!(s.histogram.len(), 3);
        s.record(60_000_000_000);
        assert!(
            s.histogram.max() >= 59_990_000_000,
            "auto-resized, not clamped"
        );
        let mut t = WorkerStats::new().expect("valid sigfig");
        t.record(50);
        t.absorb(&s);
        assert_eq!((t.events, t.min_ns, t.max_ns), (5, 50, 60_000_000_000));
        assert_eq!(t.histogram.len(), 5);
        let mut open = WorkerStats::with_open_loop().expect("valid sigfig");
        open.skipped = 2;
        if let Some(o) = open.open_loop.as_deref_mut() {
            o.service.record(100);
            o.lag.record(7);
        }
        let mut sum = WorkerStats::with_open_loop().expect("valid sigfig");
        sum.absorb(&open);
        sum.absorb(&open);
        let o = sum.open_loop.as_deref().expect("kept");
        assert_eq!((sum.skipped, o.service.events, o.lag.busy_ns), (4, 2, 14));
        let slot = IntervalSlot::new();
        slot.publish(&s, 900);
        assert_eq!((slot.events(), slot.busy_ns()), (4, 60_000_001_500));
        assert!(slot.running_at(10));
        slot.mark_finished(5);
        assert!(slot.running_at(5) && !slot.running_at(6));
    }
}
