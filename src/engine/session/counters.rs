//! The statement counters of a SQL workload: each worker counts into a plain [`Tally`] and
//! publishes it into its own cache-line-aligned [`Slot`] after each event (single writer);
//! the collector ([`Counters`]) sums the slots for interim lines, live samples and the
//! `SQL statistics:` block.
//!
//! A reset (warmup end, checkpoints) only moves the collector's base, so workers never see a
//! shared write on their path; it also bumps the period's epoch, which workers that keep
//! results of their own (a custom workload's per-transaction lines) read once per event to
//! drop what they measured before it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::retry::ErrorCodes;
use crate::db::Done;
use crate::engine::{EngineError, IntervalSample, SqlCounters, StepOutcome};

/// Statement counts of one worker (also the collector's sums).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub reads: u64,
    pub writes: u64,
    pub other: u64,
    pub errors: u64,
    pub reconnects: u64,
}

impl Tally {
    /// Counts one statement by sysbench's classification: a result set is a read, else
    /// affected rows make a write, else other.
    #[inline]
    pub fn classify(&mut self, done: Done) {
        if done.rows {
            self.reads += 1;
        } else if done.affected > 0 {
            self.writes += 1;
        } else {
            self.other += 1;
        }
    }

    fn add(&mut self, o: &Tally) {
        self.reads += o.reads;
        self.writes += o.writes;
        self.other += o.other;
        self.errors += o.errors;
        self.reconnects += o.reconnects;
    }

    fn minus(&self, o: &Tally) -> Tally {
        Tally {
            reads: self.reads.saturating_sub(o.reads),
            writes: self.writes.saturating_sub(o.writes),
            other: self.other.saturating_sub(o.other),
            errors: self.errors.saturating_sub(o.errors),
            reconnects: self.reconnects.saturating_sub(o.reconnects),
        }
    }
}

/// A worker's published counters, alone on their cache lines (single writer: its worker).
#[repr(align(128))]
#[derive(Default)]
pub struct Slot {
    reads: AtomicU64,
    writes: AtomicU64,
    other: AtomicU64,
    errors: AtomicU64,
    reconnects: AtomicU64,
    /// Errors by code since the start: written only when an error happens, off the hot path.
    codes: Mutex<ErrorCodes>,
}

impl Slot {
    /// Counts an error of `code` (see [`super::retry`]).
    pub(super) fn count_error(&self, code: &str) {
        self.codes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .count(code);
    }

    fn codes(&self) -> ErrorCodes {
        self.codes.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    #[inline]
    pub fn publish(&self, t: &Tally) {
        self.reads.store(t.reads, Ordering::Relaxed);
        self.writes.store(t.writes, Ordering::Relaxed);
        self.other.store(t.other, Ordering::Relaxed);
        self.errors.store(t.errors, Ordering::Relaxed);
        self.reconnects.store(t.reconnects, Ordering::Relaxed);
    }

    fn load(&self) -> Tally {
        Tally {
            reads: self.reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            other: self.other.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            reconnects: self.reconnects.load(Ordering::Relaxed),
        }
    }
}

/// Collector-side state: the previous interim snapshot and the base of the reported period.
#[derive(Default)]
struct Collector {
    prev_time: f64,
    prev: Tally,
    base: Tally,
    base_codes: ErrorCodes,
}

/// Keeps a value alone on its cache lines.
#[repr(align(128))]
#[derive(Default)]
struct Aligned<T>(T);

/// The per-worker slots and the collector's view of them: the `interim`, `sql_totals`,
/// `finish_outcome` and `reset_counters` of every SQL workload.
pub struct Counters {
    slots: Vec<Slot>,
    collector: Mutex<Collector>,
    /// The measured period: bumped by [`Counters::reset`], read by workers once per event.
    epoch: Aligned<AtomicU64>,
}

impl Counters {
    pub fn new(threads: usize) -> Counters {
        Counters {
            slots: (0..threads).map(|_| Slot::default()).collect(),
            collector: Mutex::new(Collector::default()),
            epoch: Aligned::default(),
        }
    }

    pub fn slot(&self, id: usize) -> Result<&Slot, EngineError> {
        self.slots
            .get(id)
            .ok_or_else(|| EngineError::Failed(format!("worker {id} has no counter slot")))
    }

    /// The period a worker's results belong to, read once per event (see the module doc).
    #[inline]
    pub(super) fn epoch(&self, order: Ordering) -> u64 {
        self.epoch.0.load(order)
    }

    fn sum(&self) -> Tally {
        let mut t = Tally::default();
        for s in &self.slots {
            t.add(&s.load());
        }
        t
    }

    fn sum_codes(&self) -> ErrorCodes {
        let mut all = ErrorCodes::default();
        for s in &self.slots {
            all.absorb(&s.codes());
        }
        all
    }

    fn collector(&self) -> std::sync::MutexGuard<'_, Collector> {
        self.collector.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Fills the DB rates of an interim sample (the console then prints sysbench's DB line).
    pub fn interim(&self, s: &mut IntervalSample) {
        let now = self.sum();
        let mut c = self.collector();
        let dt = if s.time_s > c.prev_time {
            s.time_s - c.prev_time
        } else {
            s.time_s
        }
        .max(1e-9);
        let d = now.minus(&c.prev);
        s.set_sql_rates([d.reads, d.writes, d.other, d.errors, d.reconnects], dt);
        c.prev = now;
        c.prev_time = s.time_s;
    }

    /// The counts since the run started, for [`crate::engine::LiveSample`]s.
    pub fn totals(&self) -> SqlCounters {
        let t = self.sum();
        SqlCounters {
            transactions: 0,
            reads: t.reads,
            writes: t.writes,
            other: t.other,
            errors: t.errors,
            reconnects: t.reconnects,
        }
    }

    /// The `SQL statistics:` counters since the start or the last reset.
    pub fn finish(&self, outcome: &mut StepOutcome) {
        let (base, base_codes) = {
            let c = self.collector();
            (c.base, c.base_codes.clone())
        };
        let t = self.sum().minus(&base);
        outcome.error_codes = self.sum_codes().minus(&base_codes);
        outcome.sql = Some(SqlCounters {
            transactions: outcome.events,
            reads: t.reads,
            writes: t.writes,
            other: t.other,
            errors: t.errors,
            reconnects: t.reconnects,
        });
    }

    /// Starts a new measured period (warmup end, checkpoints): the collector's base moves and
    /// the epoch is bumped.
    pub fn reset(&self) {
        let now = self.sum();
        let codes = self.sum_codes();
        {
            let mut c = self.collector();
            c.base = now;
            c.prev = now;
            c.base_codes = codes;
        }
        self.epoch.0.fetch_add(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tallies_subtract_without_underflow() {
        let a = Tally {
            reads: 5,
            writes: 1,
            other: 2,
            errors: 0,
            reconnects: 1,
        };
        let mut b = a;
        b.add(&a);
        assert_eq!(b.minus(&a), a);
        assert_eq!(a.minus(&b), Tally::default());
    }
}
