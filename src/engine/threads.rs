//! sysbench's `threads` test: scheduler throughput under contended locks.
//!
//! Each event takes the next number of one global atomic counter, picks mutex
//! `number mod thread_locks`, and `thread_yields` times locks it, yields the CPU
//! (`sched_yield`) and unlocks it — sysbench 1.0.20's event.
//!
//! The test measures how the scheduler and the lock hand the CPU around, so the lock and the
//! yield are sysbench's own, not merely equivalent ones (#14): glibc's `pthread_mutex_t` of the
//! default type, initialised with default attributes, and `libc::sched_yield`. Rust's
//! `std::sync::Mutex` is also a futex word, but it spins (about 100 reads) before it parks,
//! and glibc's default mutex never spins: with dozens of threads per core the spinning
//! waiters steal the time slices the holder needs to get back to its unlock, which made this
//! workload 15–29 % slower than sysbench at 64–512 threads. The mutexes are one contiguous
//! array as sysbench allocates them (neighbours share cache lines, as there). The counter is
//! the only other shared write per event, once per event, as in sysbench.

use std::cell::UnsafeCell;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};

use super::config::UNBOUNDED;
use super::driver::{EventResult, Scope, Worker, Workload};
use super::option::{Kind, OptSpec};
use super::spec::{NO_DATA, Setup, WorkloadSpec, never};
use super::{EngineError, StepOutcome};

/// The threads workload's entry in [`super::catalog`].
pub static SPEC: WorkloadSpec = WorkloadSpec {
    name: "threads",
    summary: "scheduler speed: yields under contended locks",
    options: &[OPTIONS],
    data: NO_DATA,
    needs_target: false,
    needs_local_files: false,
    ends_by_itself: never,
    build,
    definition: crate::engine::Definition::Builtin,
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

/// One of sysbench's mutexes: a glibc `pthread_mutex_t` of the default type, used only through
/// the pthread functions, at a fixed address (the boxed slice of [`Locks`]) from its
/// initialisation to its destruction.
struct PthreadMutex(UnsafeCell<libc::pthread_mutex_t>);

// SAFETY: a pthread mutex exists to be locked and unlocked from many threads; the cell is only
// ever passed to the pthread functions, which synchronise all access to it.
unsafe impl Sync for PthreadMutex {}

impl PthreadMutex {
    fn lock(&self) {
        // SAFETY: the mutex was initialised in place by `Locks::new` and is destroyed only when
        // the `Locks` is dropped, after every worker has finished.
        let rc = unsafe { libc::pthread_mutex_lock(self.0.get()) };
        debug_assert_eq!(rc, 0, "pthread_mutex_lock");
    }

    /// Unlocks the mutex; the caller locked it on this thread.
    fn unlock(&self) {
        // SAFETY: initialised and alive as in `lock`, and held by this thread: every call
        // follows this thread's own `lock` of the same mutex.
        let rc = unsafe { libc::pthread_mutex_unlock(self.0.get()) };
        debug_assert_eq!(rc, 0, "pthread_mutex_unlock");
    }
}

/// sysbench's array of `thread_locks` mutexes, contiguous, initialised in place.
struct Locks(Box<[PthreadMutex]>);

impl Locks {
    fn new(n: usize) -> Self {
        let locks: Box<[PthreadMutex]> = (0..n)
            .map(|_| PthreadMutex(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER)))
            .collect();
        for m in locks.iter() {
            // SAFETY: the mutex sits at its final heap address and has never been used; NULL
            // attributes make it the default type, as sysbench's `pthread_mutex_init` does.
            // With those, glibc's init cannot fail.
            unsafe { libc::pthread_mutex_init(m.0.get(), std::ptr::null()) };
        }
        Self(locks)
    }
}

impl Drop for Locks {
    fn drop(&mut self) {
        for m in self.0.iter() {
            // SAFETY: `&mut self`: no worker holds a reference any more, so every mutex is
            // unlocked and unused, and it is never touched again.
            unsafe { libc::pthread_mutex_destroy(m.0.get()) };
        }
    }
}

/// The threads workload.
pub struct Threads {
    yields: u64,
    locks: Locks,
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
            locks: Locks::new(n),
            next: AtomicU64::new(0),
        })
    }

    /// The mutex index of the next event (advances the shared counter).
    fn next_lock(&self) -> usize {
        (self.next.fetch_add(1, Ordering::Relaxed) % self.locks.0.len() as u64) as usize
    }
}

struct ThreadsWorker<'a> {
    workload: &'a Threads,
}

impl Worker for ThreadsWorker<'_> {
    fn event(&mut self) -> EventResult {
        let w = self.workload;
        let lock = &w.locks.0[w.next_lock()];
        for _ in 0..w.yields {
            lock.lock();
            // SAFETY: sched_yield has no preconditions (and cannot fail on Linux).
            unsafe { libc::sched_yield() };
            lock.unlock();
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
            self.locks.0.len()
        )
    }

    fn new_worker<'a>(
        &'a self,
        _id: usize,
        _stop: &'a Scope,
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
    static NO_STOP: std::sync::LazyLock<Scope> = std::sync::LazyLock::new(Scope::new);

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
        // SAFETY: initialised mutexes of `t`, unlocked again right after a successful try.
        let all_unlocked = t.locks.0.iter().all(|m| unsafe {
            libc::pthread_mutex_trylock(m.0.get()) == 0
                && libc::pthread_mutex_unlock(m.0.get()) == 0
        });
        assert!(all_unlocked, "every event unlocks what it locked");
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
