//! The `rate` mode of the driver: the bounded queue of intended start times and the generator
//! thread that fills it with Poisson arrivals.
//!
//! Apart from the driver's core because only runs with `rate` use it: the queue is the one
//! lock workers take per event, and only here; see the module doc of [`super`] for why it has
//! sysbench's shape.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use super::{POLL, Shared};
use crate::engine::config::RateOverflow;
use crate::engine::random::Rng;

/// The `rate` event queue: intended start times, oldest first.
pub(super) struct RateQueue {
    queue: Mutex<VecDeque<Instant>>,
    /// [`RATE_QUEUE_SLOTS`] (smaller in tests).
    pub(super) capacity: usize,
    cv: Condvar,
    closed: AtomicBool,
    /// Arrivals not queued because the queue was full.
    pub(super) dropped: AtomicU64,
    /// Set by the generator when an arrival was dropped under [`RateOverflow::Fatal`].
    pub(super) overflowed: AtomicBool,
    /// Events being executed (the interim `concurrency`).
    pub(super) in_flight: AtomicUsize,
}

pub(super) enum Ticket {
    /// An arrival's intended start, and whether the worker had to wait for it (the queue was
    /// empty when it came).
    Start(Instant, bool),
    Closed,
    Wait,
}

impl RateQueue {
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            queue: Mutex::new(VecDeque::with_capacity(capacity)),
            capacity,
            cv: Condvar::new(),
            closed: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
            overflowed: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, VecDeque<Instant>> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues an arrival; `false` (and one more `dropped`) when the queue is full.
    pub(super) fn push(&self, at: Instant) -> bool {
        let mut q = self.lock();
        if q.len() >= self.capacity {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        q.push_back(at);
        drop(q);
        self.cv.notify_one();
        true
    }

    /// The next intended start, or `Wait` after a short timeout so that the caller re-checks
    /// its limits and the epoch.
    pub(super) fn pop(&self) -> Ticket {
        let mut q = self.lock();
        let mut waited = false;
        loop {
            if let Some(at) = q.pop_front() {
                self.in_flight.fetch_add(1, Ordering::Relaxed);
                return Ticket::Start(at, waited);
            }
            if self.closed.load(Ordering::Acquire) {
                return Ticket::Closed;
            }
            let (guard, timeout) = self
                .cv
                .wait_timeout(q, Duration::from_millis(10))
                .unwrap_or_else(|e| e.into_inner());
            q = guard;
            waited = true;
            if timeout.timed_out() && q.is_empty() {
                return Ticket::Wait;
            }
        }
    }

    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let _q = self.lock();
        self.cv.notify_all();
    }

    pub(super) fn len(&self) -> usize {
        self.lock().len()
    }
}

/// The `rate` generator: Poisson arrivals on an absolute schedule until the run ends.
pub(super) fn generate(shared: &Shared, start: Instant) {
    let Some(queue) = &shared.queue else { return };
    // The stream after the workers' (of the whole step, and one per shard).
    let stream = shared
        .cfg
        .shard
        .map_or(shared.cfg.threads, |s| s.total_threads + s.index);
    let mut rng = Rng::for_thread(shared.cfg.seed, stream);
    let mean_ns = 1e9 / shared.cfg.rate.max(1) as f64;
    let deadline = shared.deadline(start);
    let mut next = start;
    loop {
        // Exponential gap by inversion; 1 − U is in (0, 1], so ln is finite.
        let gap = -(1.0 - rng.unit()).ln() * mean_ns;
        next += Duration::from_nanos(gap as u64);
        if deadline.is_some_and(|d| next >= d) {
            break;
        }
        loop {
            if shared.stopping() || shared.running.load(Ordering::Acquire) == 0 {
                queue.close();
                return;
            }
            let now = Instant::now();
            if now >= next {
                break;
            }
            thread::sleep((next - now).min(POLL));
        }
        if !queue.push(next) && shared.cfg.rate_overflow == RateOverflow::Fatal {
            queue.overflowed.store(true, Ordering::Relaxed);
            shared.abort();
            queue.close();
            return;
        }
    }
    // Let the workers reach the deadline, then release the idle ones.
    if let Some(d) = deadline {
        while Instant::now() < d && !shared.stopping() {
            thread::sleep((d - Instant::now()).min(POLL));
        }
    }
    queue.close();
}
