//! sysbench's `mutex` test: lock acquisition under light contention, timed as a whole.
//!
//! Each thread runs exactly ONE event, then is exhausted: `mutex_locks` times it picks a uniform
//! mutex out of `mutex_num` (xoroshiro128+ from [`super::random`]; sysbench ignores
//! `rand_type` here too), spins `mutex_loops` empty iterations outside the lock, locks the mutex,
//! increments one global counter and unlocks. The interesting number is the total time.
//!
//! * The empty iterations are sysbench's delay outside the lock, so their cost per iteration
//!   decides how long a test takes and how often threads meet on a mutex. On x86-64 they are the
//!   very loop of sysbench's gcc build (Debian's 1.0.20, read with gdb): a 32-bit counter,
//!   `add $1,%ecx; cmp %ecx,(bound); ja` with the bound re-read from memory. The operand width
//!   matters: on the test VM's Xeon a 64-bit counter loop (what `for j in 0..loops` with
//!   [`std::hint::black_box`] compiles to) ran 2× faster per iteration, which halved the
//!   test's total time against sysbench's. Elsewhere each iteration passes a `u32` counter through
//!   [`std::hint::black_box`] so the loop cannot be dropped.
//! * The global counter is shared by all mutexes, so in sysbench's C it is a data race; here it
//!   is an `AtomicU64` updated with a relaxed load and store — the same plain `mov`/`add`/`mov`,
//!   defined behaviour, and like sysbench's increments some may be lost under races (the count
//!   is never reported).
//! * The mutexes are `std::sync::Mutex<()>` (a futex word, glibc `pthread_mutex_t`'s fast path
//!   cost), allocated once; nothing is allocated per lock.

use std::io::{self, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::config::UNBOUNDED;
use super::driver::{EventResult, Scope, Worker, Workload};
use super::option::{Kind, OptSpec};
use super::random::Rng;
use super::spec::{NO_DATA, Setup, WorkloadSpec, always};
use super::{EngineError, StepOutcome};

/// The mutex workload's entry in [`super::catalog`]: one event per thread, so a run ends by
/// itself without `time` or `events`.
pub static SPEC: WorkloadSpec = WorkloadSpec {
    name: "mutex",
    summary: "mutex speed: lock/unlock on a shared array of mutexes",
    options: &[OPTIONS],
    data: NO_DATA,
    needs_target: false,
    needs_local_files: false,
    ends_by_itself: always,
    build,
    definition: crate::engine::Definition::Builtin,
};

static OPTIONS: &[OptSpec] = &[
    OptSpec {
        name: "mutex_num",
        kind: Kind::Int {
            min: 1,
            max: UNBOUNDED,
        },
        default: Some("4096"),
        help: "mutexes in the shared array; each lock takes one at random",
    },
    OptSpec {
        name: "mutex_locks",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("50000"),
        help: "lock/unlock pairs in each thread's single event",
    },
    OptSpec {
        name: "mutex_loops",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("10000"),
        help: "busy-loop iterations between two locks, outside the lock",
    },
];

/// The mutex workload.
pub struct MutexTest {
    locks: u64,
    loops: u64,
    mutexes: Box<[Mutex<()>]>,
    global: AtomicU64,
    seed: u64,
}

fn build(s: &Setup<'_>) -> Result<Box<dyn Workload>, EngineError> {
    Ok(Box::new(MutexTest::new(
        s.options.uint("mutex_num")?,
        s.options.uint("mutex_locks")?,
        s.options.uint("mutex_loops")?,
        s.run.seed,
    )?))
}

impl MutexTest {
    pub fn new(num: u64, locks: u64, loops: u64, seed: u64) -> Result<Self, EngineError> {
        let n = usize::try_from(num)
            .ok()
            .filter(|&n| n > 0 && n <= 1 << 26)
            .ok_or_else(|| {
                EngineError::Failed(format!(
                    "option `mutex_num` is {num}: use a number of mutexes from 1 to 67108864"
                ))
            })?;
        Ok(Self {
            locks,
            loops,
            mutexes: (0..n).map(|_| Mutex::new(())).collect(),
            global: AtomicU64::new(0),
            seed,
        })
    }
}

/// sysbench's empty loop of `loops` iterations, in chunks of its 32-bit counter.
#[inline(always)]
fn spin(loops: u64) {
    let mut left = loops;
    while left > 0 {
        let chunk = u32::try_from(left).unwrap_or(u32::MAX);
        spin32(chunk);
        left -= u64::from(chunk);
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn spin32(loops: u32) {
    let bound = loops;
    // SAFETY: reads the 4-byte `bound` on this stack frame (alive for the whole statement) and
    // changes only the named scratch register and the flags; no stack use, no stores.
    unsafe {
        std::arch::asm!(
            "xor {i:e}, {i:e}",
            "2:",
            "add {i:e}, 1",
            "cmp dword ptr [{b}], {i:e}",
            "ja 2b",
            b = in(reg) &bound,
            i = out(reg) _,
            options(nostack, readonly),
        );
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn spin32(loops: u32) {
    for j in 0..loops {
        std::hint::black_box(j);
    }
}

struct MutexWorker<'a> {
    stop: &'a Scope,
    test: &'a MutexTest,
    rng: Rng,
    done: bool,
}

impl Worker for MutexWorker<'_> {
    fn event(&mut self) -> EventResult {
        if self.done {
            return EventResult::Exhausted;
        }
        self.done = true;
        let t = self.test;
        let last = t.mutexes.len() as u64 - 1;
        for _ in 0..t.locks {
            // One event is the whole test of a thread (minutes with large mutex_locks or
            // mutex_loops): it ends at a stop, uncounted.
            if self.stop.stopping() {
                return EventResult::Exhausted;
            }
            let i = self.rng.uniform(0, last) as usize;
            spin(t.loops);
            // `uniform(0, last)` is at most `last`; `min` keeps the index in bounds without a
            // panic path.
            let m = &t.mutexes[i.min(last as usize)];
            let guard = m.lock().unwrap_or_else(|e| e.into_inner());
            t.global
                .store(t.global.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
            drop(guard);
        }
        EventResult::Done
    }
}

impl Workload for MutexTest {
    /// sysbench's mutex test prints no banner of its own.
    fn banner(&self, _out: &mut dyn Write) -> io::Result<()> {
        Ok(())
    }

    fn info_banner(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "Doing mutex performance test")
    }

    fn new_worker<'a>(
        &'a self,
        id: usize,
        stop: &'a Scope,
    ) -> Result<Box<dyn Worker + 'a>, EngineError> {
        Ok(Box::new(MutexWorker {
            stop,
            test: self,
            rng: Rng::for_thread(self.seed, id),
            done: false,
        }))
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
    fn exactly_one_event_per_thread_doing_all_the_locks() {
        let t = MutexTest::new(16, 1000, 10, 1).expect("valid");
        let mut w = t.new_worker(0, &NO_STOP).expect("worker");
        assert!(matches!(w.event(), EventResult::Done));
        assert!(matches!(w.event(), EventResult::Exhausted));
        assert!(matches!(w.event(), EventResult::Exhausted));
        assert_eq!(t.global.load(Ordering::Relaxed), 1000);
        assert!(
            t.mutexes.iter().all(|m| m.try_lock().is_ok()),
            "all unlocked"
        );
    }

    #[test]
    fn zero_mutexes_is_rejected_with_the_option_name() {
        let err = MutexTest::new(0, 1, 1, 0)
            .err()
            .expect("invalid")
            .to_string();
        assert!(err.contains("`mutex_num`"), "{err}");
    }

    #[test]
    fn spin_loops_cost_time() {
        // The empty loop must not be optimised away: 2e7 iterations take well over 1 ms.
        let t = MutexTest::new(1, 2, 10_000_000, 1).expect("valid");
        let mut w = t.new_worker(0, &NO_STOP).expect("worker");
        let start = std::time::Instant::now();
        assert!(matches!(w.event(), EventResult::Done));
        assert!(start.elapsed() > std::time::Duration::from_millis(1));
    }
}
