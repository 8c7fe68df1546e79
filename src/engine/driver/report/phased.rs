//! The collector's side of a run's phases (#30, [`crate::engine::phases`]): the line that
//! announces each phase, the cut of the statistics at each boundary of the measured part, and
//! the per-phase outcomes of the final report.
//!
//! A cut is a checkpoint that prints no report: the workers hand their statistics over at
//! their next event ([`hand_over`]) and start afresh, so the hot path is the one checkpoints
//! already have. The handed-over statistics are kept, so that the whole step's outcome is
//! every phase's added up (the workload's own counters are never reset at a cut, so its
//! metrics cover the whole measured part as without phases).

use std::io::{self, Write};
use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use super::super::{EngineError, Shared, SqlCounters, StepOutcome, Workload};
use super::build_outcome;
use crate::engine::phases::Timeline;
use crate::engine::{DROPPED, PhaseOutcome};
use crate::stats::WorkerStats;

/// Asks every worker for the statistics of the period that just ended (the epoch turns) and
/// collects them, by worker id: a worker in a long event hands over when it ends; after a
/// second the collector stops waiting and a late hand-over goes to the next period.
pub(super) fn hand_over(shared: &Shared) -> (Instant, Vec<Option<WorkerStats>>) {
    let at = Instant::now();
    shared.epoch.fetch_add(1, Ordering::AcqRel);
    let give_up = at + Duration::from_secs(1);
    let mut taken: Vec<Option<WorkerStats>> = (0..shared.cfg.threads).map(|_| None).collect();
    loop {
        let mut pending = false;
        for (id, (mailbox, slot)) in shared.mailboxes.iter().zip(shared.slots.iter()).enumerate() {
            if taken[id].is_some() {
                continue;
            }
            let got = mailbox.lock().unwrap_or_else(|e| e.into_inner()).take();
            if got.is_some() {
                taken[id] = got;
            } else if slot.running_at(u64::MAX) {
                pending = true;
            }
        }
        if !pending || Instant::now() >= give_up || shared.stopping() {
            break;
        }
        thread::park_timeout(Duration::from_millis(1));
    }
    (at, taken)
}

/// One measured phase that ended before the run did.
struct Cut {
    index: usize,
    outcome: StepOutcome,
    /// Its statistics by worker id, for the whole step's outcome.
    workers: Vec<Option<WorkerStats>>,
}

/// The collector's record of the phases: which comes next, and the measured ones cut so far.
pub(super) struct Phases {
    /// The next phase to announce.
    next: usize,
    cuts: Vec<Cut>,
    /// The measured phase under way: its index and where it started, with the workload's
    /// statement totals and the dropped arrivals then; `None` before the measured part.
    current: Option<(usize, Instant, Option<SqlCounters>, u64)>,
}

impl Phases {
    pub(super) fn new() -> Self {
        Phases {
            next: 0,
            cuts: Vec::new(),
            current: None,
        }
    }

    /// When the next phase begins, if one is still to come.
    pub(super) fn due(&self, t: &Timeline, start: Instant) -> Option<Instant> {
        (self.next < t.phases().len())
            .then(|| start.checked_add(t.start_of(self.next)))
            .flatten()
    }

    /// The measured part begins (at the run's start or the warmup's end): the phase under way
    /// is the first measured one.
    pub(super) fn measuring(&mut self, t: &Timeline, shared: &Shared, workload: &dyn Workload) {
        let start = *shared.start.get().unwrap_or(&Instant::now());
        let now = Instant::now();
        let index = t.at(now.saturating_duration_since(start) + Duration::from_millis(1));
        self.current = Some((index, now, workload.sql_totals(), dropped(shared)));
    }

    /// The next phase begins: the measured phase that ends is cut, and the new one announced.
    pub(super) fn begin_next(
        &mut self,
        t: &Timeline,
        shared: &Shared,
        workload: &dyn Workload,
        start: Instant,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        let index = self.next;
        self.next += 1;
        // The mix and the thread count first, then the cut: a worker let in by the new phase
        // may run its first event a moment before the cut (at most one), where a worker's own
        // clock would run a collector's wake-up late of events in the old phase.
        workload.phase_began(index);
        shared.phase.store(index, Ordering::Release);
        // The measured phase under way ends (not when the measured part began with this one).
        if let Some((ended, from, sql, dropped_then)) = self.current
            && ended < index
        {
            let (at, workers) = hand_over(shared);
            let stats: Vec<WorkerStats> = workers.iter().flatten().cloned().collect();
            let seconds = at.saturating_duration_since(from).as_secs_f64();
            let mut outcome = build_outcome(&stats, seconds, shared.cfg.percentile, false)
                .map_err(|e| io::Error::other(e.to_string()))?;
            finish_phase(&mut outcome, workload, sql, shared, dropped_then);
            self.cuts.push(Cut {
                index: ended,
                outcome,
                workers,
            });
            self.current = Some((index, at, workload.sql_totals(), dropped(shared)));
        }
        // Parked workers that the phase lets in start now rather than at their next look.
        for worker in shared.threads.get().into_iter().flatten() {
            worker.unpark();
        }
        let phase = &t.phases()[index];
        // Stamped as the interim lines are: from the end of the warmup.
        let stamp = if phase.warmup {
            "warmup".to_string()
        } else {
            let at = Instant::now().saturating_duration_since(start + t.warmup());
            format!("{:.0}s", at.as_secs_f64())
        };
        writeln!(
            out,
            "[ {stamp} ] Phase {}/{} `{}`: {}s, {} thread{}, {}{}",
            index + 1,
            t.phases().len(),
            phase.name,
            phase.duration.as_secs_f64(),
            phase.threads,
            if phase.threads == 1 { "" } else { "s" },
            phase.rate_text(),
            if phase.warmup {
                " (warmup, not measured)"
            } else {
                ""
            }
        )?;
        out.flush()
    }

    /// The outcomes of the measured phases, the one under way at the end from `workers` (the
    /// statistics since the last cut, by their ids `ids`, covering `seconds` since the measured
    /// part began at `period_start`); the cut phases' statistics are then added to `workers`,
    /// so that they cover the whole measured part.
    pub(super) fn outcomes(
        self,
        shared: &Shared,
        workload: &dyn Workload,
        ids: &[usize],
        workers: &mut [WorkerStats],
        seconds: f64,
        period_start: Instant,
    ) -> Result<Vec<PhaseOutcome>, EngineError> {
        let mut out = Vec::with_capacity(self.cuts.len() + 1);
        if let Some((index, from, sql, dropped_then)) = self.current {
            let before = from.saturating_duration_since(period_start).as_secs_f64();
            let mut outcome = build_outcome(
                workers,
                (seconds - before).max(0.0),
                shared.cfg.percentile,
                false,
            )?;
            finish_phase(&mut outcome, workload, sql, shared, dropped_then);
            out.push(PhaseOutcome { index, outcome });
        }
        for cut in self.cuts.into_iter().rev() {
            for (id, stats) in cut.workers.iter().enumerate() {
                if let (Some(stats), Some(pos)) = (stats, ids.iter().position(|&i| i == id)) {
                    workers[pos].absorb(stats);
                }
            }
            out.push(PhaseOutcome {
                index: cut.index,
                outcome: cut.outcome,
            });
        }
        out.reverse();
        Ok(out)
    }
}

/// Arrivals dropped so far (0 without `rate`).
fn dropped(shared: &Shared) -> u64 {
    shared
        .queue
        .as_ref()
        .map_or(0, |q| q.dropped.load(Ordering::Relaxed))
}

/// A phase's statement counts (the workload's totals now less those at its start) and dropped
/// arrivals.
fn finish_phase(
    outcome: &mut StepOutcome,
    workload: &dyn Workload,
    base: Option<SqlCounters>,
    shared: &Shared,
    dropped_then: u64,
) {
    outcome.sql = workload
        .sql_totals()
        .map(|now| now.since(&base.unwrap_or_default(), outcome.events));
    if shared.queue.is_some() {
        outcome
            .metrics
            .push((DROPPED, dropped(shared).saturating_sub(dropped_then) as f64));
    }
}
