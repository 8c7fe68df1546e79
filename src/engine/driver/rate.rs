//! The `rate` mode of the driver: the bounded queue of intended start times and the generator
//! thread that fills it with Poisson arrivals.
//!
//! Apart from the driver's core because only runs with `rate` use it: the queue is the one
//! lock workers take per event, and only here; see the module doc of [`super`] for why it has
//! sysbench's shape.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use super::{POLL, Shared};
use crate::engine::config::RateOverflow;
use crate::engine::phases::Timeline;
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
    /// With `client_threads`: the bells of the carriers whose workers take arrivals, rung
    /// after a push while any of their workers waits ([`RateQueue::pop_carried`]).
    bells: Mutex<Vec<Arc<crate::db::mux::Bell>>>,
    /// Carried workers waiting for an arrival, over every carrier.
    sleepers: AtomicUsize,
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
            bells: Mutex::new(Vec::new()),
            sleepers: AtomicUsize::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, VecDeque<Instant>> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues an arrival and returns the arrivals now waiting; `None` (and one more
    /// `dropped`) when the queue is full.
    pub(super) fn push(&self, at: Instant) -> Option<usize> {
        let mut q = self.lock();
        if q.len() >= self.capacity {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        q.push_back(at);
        let waiting = q.len();
        drop(q);
        self.cv.notify_one();
        self.ring(false);
        Some(waiting)
    }

    /// Wakes carried workers waiting for an arrival: those of every carrier with one waiting
    /// (`all`: every carrier, at the close).
    fn ring(&self, all: bool) {
        // Pairs with the fence in `pop_carried`: either this sees the sleeper, or the sleeper's
        // second look sees the arrival just queued.
        std::sync::atomic::fence(Ordering::SeqCst);
        if !all && self.sleepers.load(Ordering::SeqCst) == 0 {
            return;
        }
        for bell in self.bells.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            if all || bell.sleepers.load(Ordering::SeqCst) > 0 {
                bell.ring();
            }
        }
    }

    /// Makes `bell`'s carrier one whose workers take arrivals (once per carrier).
    pub(super) fn add_bell(&self, bell: &Arc<crate::db::mux::Bell>) {
        let mut bells = self.bells.lock().unwrap_or_else(|e| e.into_inner());
        if !bells.iter().any(|b| Arc::ptr_eq(b, bell)) {
            bells.push(Arc::clone(bell));
        }
    }

    /// [`RateQueue::pop`] for a worker on a carrier (`client_threads`): it waits at its
    /// carrier's `bell`, suspended, instead of on the condition variable, which would block
    /// every worker of the thread.
    pub(super) fn pop_carried(&self, bell: &crate::db::mux::Bell) -> Ticket {
        let mut waited = false;
        loop {
            if let Some(at) = self.try_pop() {
                return Ticket::Start(at, waited);
            }
            if self.closed.load(Ordering::Acquire) {
                return Ticket::Closed;
            }
            if waited {
                return Ticket::Wait;
            }
            self.sleepers.fetch_add(1, Ordering::SeqCst);
            bell.sleepers.fetch_add(1, Ordering::SeqCst);
            std::sync::atomic::fence(Ordering::SeqCst);
            let got = self.try_pop();
            if got.is_none() && !self.closed.load(Ordering::Acquire) {
                crate::db::mux::wait_bell(Instant::now() + Duration::from_millis(10));
            }
            bell.sleepers.fetch_sub(1, Ordering::SeqCst);
            self.sleepers.fetch_sub(1, Ordering::SeqCst);
            if let Some(at) = got {
                return Ticket::Start(at, waited);
            }
            waited = true;
        }
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

    /// The next intended start if one is queued, without waiting.
    pub(super) fn try_pop(&self) -> Option<Instant> {
        let at = self.lock().pop_front()?;
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        Some(at)
    }

    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let _q = self.lock();
        self.cv.notify_all();
        self.ring(true);
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
        match &shared.timeline {
            None => next += exp_gap(&mut rng, mean_ns),
            Some(t) => match next_arrival(t, start, next, &mut rng) {
                Some(at) => next = at,
                None => break,
            },
        }
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
        match queue.push(next) {
            None if shared.cfg.rate_overflow == RateOverflow::Fatal => {
                queue.overflowed.store(true, Ordering::Relaxed);
                shared.abort();
                queue.close();
                return;
            }
            Some(waiting) if shared.cfg.start_threads.is_some() => grow(shared, queue, waiting),
            _ => {}
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

/// An exponential gap of mean `mean_ns`, by inversion; 1 − U is in (0, 1], so ln is finite.
fn exp_gap(rng: &mut Rng, mean_ns: f64) -> Duration {
    Duration::from_nanos((-(1.0 - rng.unit()).ln() * mean_ns) as u64)
}

/// The next arrival after `from` on a timeline of phases ([`super::super::phases`]): Poisson
/// at each phase's rate, a ramp by thinning against the phase's larger rate, the draw
/// restarted at each boundary (memoryless), closed-loop phases skipped. `None` after the last
/// phase.
fn next_arrival(t: &Timeline, start: Instant, from: Instant, rng: &mut Rng) -> Option<Instant> {
    let mut next = from;
    loop {
        let i = t.at(next.saturating_duration_since(start));
        let end = start + t.end_of(i);
        if next >= end {
            return None; // past the last phase
        }
        let phase = &t.phases()[i];
        let max = phase.rate_max();
        if max <= 0.0 {
            next = end;
            continue;
        }
        let candidate = next + exp_gap(rng, 1e9 / max);
        if candidate >= end {
            next = end;
            continue;
        }
        next = candidate;
        let rate = phase.rate_at(next.saturating_duration_since(start + t.start_of(i)));
        if rate >= max || rng.unit() * max < rate {
            return Some(next);
        }
    }
}

/// `max_threads` (#30): when more arrivals wait than the running workers have idle ones for,
/// lets in as many more workers as that, up to the pool, and wakes them. Called by the
/// generator after each arrival it queues, so the pool answers a burst within one arrival; it
/// never shrinks (the most that ran is the results' `threads_peak`).
fn grow(shared: &Shared, queue: &RateQueue, waiting: usize) {
    let active = shared.active.load(Ordering::Acquire);
    let idle = active.saturating_sub(queue.in_flight.load(Ordering::Relaxed));
    if waiting <= idle || active >= shared.cfg.threads {
        return;
    }
    let to = (active + waiting - idle).min(shared.cfg.threads);
    shared.active.store(to, Ordering::Release);
    if let Some(threads) = shared.threads.get() {
        for t in threads.get(active..to).unwrap_or_default() {
            t.unpark();
        }
    }
}
