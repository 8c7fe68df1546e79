//! sysbench's `threads` test: scheduler throughput under contended locks.
//!
//! Each event takes the next number of one global atomic counter, picks mutex
//! `number mod thread_locks`, and `thread_yields` times locks it, yields the CPU
//! (`sched_yield` through [`std::thread::yield_now`]) and unlocks it — sysbench 1.0.20's event.
//!
//! The mutexes are `std::sync::Mutex<()>`: on Linux a futex word with an uncontended fast path
//! of one compare-and-swap, the same cost as glibc's `pthread_mutex_lock`, and no allocation.
//! Each sits on its own cache lines so that threads working on different mutexes do not
//! false-share (sysbench packs its `pthread_mutex_t`s; padding can only help). The counter is
//! the only shared write per event, once per event rather than per yield.

use std::io::{self, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::config::UNBOUNDED;
use super::driver::{EventResult, Worker, Workload};
use super::option::{Kind, OptSpec};
use super::spec::{NO_DATA, Setup, WorkloadSpec, never};
use super::{EngineError, StepOutcome};

/// The threads workload's entry in [`super::registry`].
pub static SPEC: WorkloadSpec = WorkloadSpec {
    name: "threads",
    summary: "scheduler speed: yields under contended locks",
    options: &[OPTIONS],
    data: NO_DATA,
    needs_target: false,
    ends_by_itself: never,
    build,
};

static OPTIONS: &[OptSpec] = &[
    OptSpec {
        name: "thread_yields",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1000"),
        help: "lock, yield, unlock rounds per event",
    },
    OptSpec {
        name: "thread_locks",
        kind: Kind::Int {
            min: 1,
            max: UNBOUNDED,
        },
        default: Some("8"),
        help: "mutexes shared by all threads (an event uses one of them)",
    },
];

#[repr(align(128))]
struct Padded(Mutex<()>);

/// The threads workload.
pub struct Threads {
    yields: u64,
    locks: Box<[Padded]>,
    /// sysbench's request counter: which mutex the next event uses.
    next: AtomicU64,
}

fn build(s: &Setup<'_>) -> Result<Box<dyn Workload>, EngineError> {
    Ok(Box::new(Threads::new(
        s.options.uint("thread_yields")?,
        s.options.uint("thread_locks")?,
    )?))
}

impl Threads {
    pub fn new(yields: u64, locks: u64) -> Result<Self, EngineError> {
        let n = usize::try_from(locks)
            .ok()
            .filter(|&n| n > 0 && n <= 1 << 24)
            .ok_or_else(|| {
                EngineError::Failed(format!(
                    "option `thread_locks` is {locks}: use a number of mutexes from 1 to 16777216"
                ))
            })?;
        Ok(Self {
            yields,
            locks: (0..n).map(|_| Padded(Mutex::new(()))).collect(),
            next: AtomicU64::new(0),
        })
    }

    /// The mutex index of the next event (advances the shared counter).
    fn next_lock(&self) -> usize {
        (self.next.fetch_add(1, Ordering::Relaxed) % self.locks.len() as u64) as usize
    }
}

struct ThreadsWorker<'a> {
    workload: &'a Threads,
}

impl Worker for ThreadsWorker<'_> {
    fn event(&mut self) -> EventResult {
        let w = self.workload;
        let lock = &w.locks[w.next_lock()].0;
        for _ in 0..w.yields {
            // A poisoned mutex guards nothing here (the data is `()`), so poisoning is ignored.
            let guard = lock.lock().unwrap_or_else(|e| e.into_inner());
            std::thread::yield_now();
            drop(guard);
        }
        EventResult::Done
    }
}

impl Workload for Threads {
    /// sysbench's threads test prints no banner of its own.
    fn banner(&self, _out: &mut dyn Write) -> io::Result<()> {
        Ok(())
    }

    fn info_banner(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "Doing thread subsystem performance test")?;
        writeln!(
            out,
            "Thread yields per test: {} Locks used: {}",
            self.yields,
            self.locks.len()
        )
    }

    fn new_worker<'a>(
        &'a self,
        _id: usize,
        _stop: &'a AtomicBool,
    ) -> Result<Box<dyn Worker + 'a>, EngineError> {
        Ok(Box::new(ThreadsWorker { workload: self }))
    }

    /// No test-specific block: sysbench prints one blank line before `General statistics:`.
    fn report(&self, _outcome: &StepOutcome, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stop flag of workers built by hand: never set.
    static NO_STOP: AtomicBool = AtomicBool::new(false);

    #[test]
    fn events_cycle_through_the_mutexes_in_counter_order() {
        let t = Threads::new(3, 4).expect("valid");
        let picks: Vec<usize> = (0..9).map(|_| t.next_lock()).collect();
        assert_eq!(picks, [0, 1, 2, 3, 0, 1, 2, 3, 0]);
        let mut w = t.new_worker(0, &NO_STOP).expect("worker");
        assert!(matches!(w.event(), EventResult::Done));
        assert_eq!(
            t.next.load(Ordering::Relaxed),
            10,
            "one counter step per event"
        );
        assert!(
            t.locks.iter().all(|l| l.0.try_lock().is_ok()),
            "all unlocked"
        );
    }

    #[test]
    fn concurrent_events_each_take_one_counter_value() {
        let t = Threads::new(10, 8).expect("valid");
        std::thread::scope(|s| {
            for id in 0..3 {
                let t = &t;
                s.spawn(move || {
                    let mut w = t.new_worker(id, &NO_STOP).expect("worker");
                    for _ in 0..50 {
                        assert!(matches!(w.event(), EventResult::Done));
                    }
                });
            }
        });
        assert_eq!(t.next.load(Ordering::Relaxed), 150);
    }

    #[test]
    fn zero_locks_is_rejected_with_the_option_name() {
        let err = Threads::new(1, 0).err().expect("invalid").to_string();
        assert!(err.contains("`thread_locks`"), "{err}");
    }
}
