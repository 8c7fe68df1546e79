//! Stopping and joining a run's workers: the [`Joiner`] that joins every worker (or abandons
//! the stuck ones of an owned workload), the forced shutdown's escalation ([`stop_stuck`]:
//! cancel, wait, sever, wait) and the reason a cut-short row records.
//!
//! Apart from the driver's core because it is the one place that decides how long a stuck
//! worker is waited for; see the module doc of [`super`] for why workers are not scoped threads.

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::{EngineError, POLL, Shared, ThreadResults, WorkerResult};

/// Joins every worker thread still held when dropped, so that no worker outlives the borrow of
/// the workload unless [`Joiner::abandon`] was called by [`run_owned`]'s path.
///
/// A thread runs one worker, or with `client_threads` the workers `id % carriers == c` of
/// carrier `c` ([`super::carry`]): workers are asked for by id, their thread joined once.
pub(super) struct Joiner {
    pub(super) handles: Vec<Option<JoinHandle<ThreadResults>>>,
    /// Threads: `threads` (one per worker) or the carriers.
    threads: usize,
    workers: usize,
    /// Results of workers whose thread was joined and that were not asked for yet.
    done: Vec<Option<WorkerResult>>,
}

impl Joiner {
    pub(super) fn new(workers: usize, carriers: Option<usize>) -> Joiner {
        let threads = carriers.unwrap_or(workers).clamp(1, workers.max(1));
        Joiner {
            handles: Vec::with_capacity(threads),
            threads,
            workers,
            done: (0..workers).map(|_| None).collect(),
        }
    }

    /// The workers thread `t` runs.
    pub(super) fn ids(&self, t: usize) -> Vec<usize> {
        (t..self.workers).step_by(self.threads).collect()
    }

    /// The thread that runs worker `id`.
    pub(super) fn thread_of(&self, id: usize) -> usize {
        id % self.threads
    }

    /// How many workers have no thread (their spawn failed or was not tried).
    pub(super) fn unspawned(&self) -> usize {
        (self.handles.len()..self.threads)
            .map(|t| self.ids(t).len())
            .sum()
    }

    /// Worker `id`'s result: its thread is joined first if it was not yet. `None`: its thread
    /// was never started or was abandoned.
    pub(super) fn join(&mut self, id: usize) -> Option<WorkerResult> {
        let t = self.thread_of(id);
        if let Some(h) = self.handles.get_mut(t).and_then(Option::take) {
            match h.join() {
                Ok(results) => {
                    for (w, r) in results {
                        self.done[w] = Some(r);
                    }
                }
                Err(_) => {
                    for w in self.ids(t) {
                        self.done[w] =
                            Some(Err(EngineError::Failed(format!("worker {w} panicked"))));
                    }
                }
            }
        }
        self.done.get_mut(id)?.take()
    }

    /// Detaches worker `id`'s thread (with its carrier siblings). Only sound when the workload
    /// it borrows is leaked.
    pub(super) fn abandon(&mut self, id: usize) {
        let t = self.thread_of(id);
        if let Some(h) = self.handles.get_mut(t) {
            drop(h.take());
        }
    }
}

impl Drop for Joiner {
    fn drop(&mut self) {
        for h in self.handles.iter_mut() {
            if let Some(h) = h.take() {
                let _ = h.join();
            }
        }
    }
}

/// The row's `error` after a forced shutdown: what happened and what it means for the numbers.
pub(super) fn cut_short_reason(unfinished: usize, delay: Duration, stop: &AtomicBool) -> String {
    let after = if stop.load(Ordering::Relaxed) {
        "the stop request"
    } else {
        "the time limit"
    };
    format!(
        "forced_shutdown: {unfinished} worker(s) still in an event {:.1} s after {after} \
         were stopped, their statements cancelled on the server (a stuck server, query or \
         script?); their unfinished events are not counted",
        delay.as_secs_f64()
    )
}

/// How long a forced shutdown waits for the workers once their statements are cancelled (and
/// the Lua states stopped), re-sending the cancels every [`RECANCEL`], before it closes their
/// connections.
pub(super) const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// How long it then waits for the workers whose connections it closed, before it gives up.
pub(super) const SEVER_GRACE: Duration = Duration::from_secs(2);

/// How often the cancels go out again while workers are still busy: a cancel that reached
/// the server just before the statement it was meant for is lost (MySQL's `KILL QUERY` of a
/// session between two statements ends nothing).
const RECANCEL: Duration = Duration::from_millis(250);

/// Stops the workers still in an event after a forced shutdown (the run is aborted already):
/// cancels their statements on the server and stops their Lua states, waits, closes their
/// connections, waits again. Returns how many are still running: workers that could not be
/// stopped at all.
pub(super) fn stop_stuck(shared: &Shared) -> usize {
    let running = || shared.running.load(Ordering::Acquire);
    let wait = |grace: Duration, recancel: bool| {
        let until = Instant::now() + grace;
        let mut next = Instant::now() + RECANCEL;
        loop {
            let now = Instant::now();
            if running() == 0 || now >= until {
                return;
            }
            if recancel && now >= next {
                shared.scope.cancel();
                next = now + RECANCEL;
            }
            // The last worker to leave unparks this (the collector's) thread.
            thread::park_timeout((until - now).min(POLL));
        }
    };
    shared.scope.cancel();
    wait(CANCEL_GRACE, true);
    if running() > 0 {
        shared.scope.sever();
        wait(SEVER_GRACE, false);
    }
    running()
}
