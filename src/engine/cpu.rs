//! sysbench's `cpu` test: each event counts the primes below `cpu_max_prime` by trial division.
//!
//! The event does exactly sysbench 1.0.20's work, so events/s stay comparable: every `c` in
//! `3..cpu_max_prime` (exclusive bound, as sysbench's `c < max_prime`) is divided by
//! `l = 2..=⌊√c⌋` (square root in `f64`, remainder on `u64`) until the first divisor. The count
//! goes through [`std::hint::black_box`], and so does the limit, so the compiler can neither
//! drop the loop nor fold it into a constant (sysbench issue #521).
//!
//! The machine work also follows sysbench's gcc build (Debian's 1.0.20, read with objdump): the
//! first divisor 2 is a bit test, and on x86-64 every other remainder is one 64-bit `div`. LLVM
//! would otherwise insert its "bypass slow division" check and use a 32-bit `div` whenever both
//! operands fit in 32 bits (always, for realistic limits); that made each event ≈ 1.5× faster
//! than sysbench's on the same machine (min latency 0.19 ms vs 0.29 ms at the default limit),
//! and events/s would no longer be comparable with sysbench's published numbers.

use std::hint::black_box;
use std::io::{self, Write};

use super::config::UNBOUNDED;
use super::driver::{EventResult, Scope, Worker, Workload};
use super::option::{Kind, OptSpec};
use super::spec::{NO_DATA, Setup, WorkloadSpec, never};
use super::{EngineError, StepOutcome, console};

/// The cpu workload's entry in [`super::catalog`].
pub static SPEC: WorkloadSpec = WorkloadSpec {
    name: "cpu",
    summary: "CPU speed: primes up to a limit by trial division",
    options: &[OPTIONS],
    data: NO_DATA,
    needs_target: false,
    needs_local_files: false,
    ends_by_itself: never,
    build,
    definition: crate::engine::Definition::Builtin,
};

static OPTIONS: &[OptSpec] = &[OptSpec {
    name: "cpu_max_prime",
    kind: Kind::Int {
        min: 1,
        max: UNBOUNDED,
    },
    default: Some("10000"),
    help: "each event tests every number up to this one for primality",
}];

/// The cpu workload, and its typed configuration.
#[derive(Clone, Debug)]
pub struct Cpu {
    pub max_prime: u64,
}

fn build(s: &Setup<'_>) -> Result<Box<dyn Workload>, EngineError> {
    Ok(Box::new(Cpu {
        max_prime: s.options.uint("cpu_max_prime")?,
    }))
}

/// `c % l` as one 64-bit division (see the module comment). `l` must be non-zero.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rem_u64(c: u64, l: u64) -> u64 {
    debug_assert!(l != 0);
    let rem: u64;
    // SAFETY: `div` divides rdx:rax by the operand. rdx is 0, so the quotient is c / l, which
    // fits in 64 bits; the only fault left is division by zero, and every caller passes l >= 2.
    // The instruction touches no memory and only the named registers and flags.
    unsafe {
        std::arch::asm!(
            "div {l}",
            l = in(reg) l,
            inout("rax") c => _,
            inout("rdx") 0u64 => rem,
            options(pure, nomem, nostack),
        );
    }
    rem
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn rem_u64(c: u64, l: u64) -> u64 {
    c % l
}

/// `v as f64` for `v < 2^63` (always true here: `c < max_prime <= i64::MAX`, `l <= √c`). Going
/// through `i64` yields the same value with one `cvtsi2sd`, like gcc's code for sysbench, instead
/// of LLVM's longer unsigned sequence.
#[inline(always)]
fn to_f64(v: u64) -> f64 {
    v as i64 as f64
}

/// Number of primes below `max_prime`, by sysbench's trial division.
///
/// sysbench starts at 3 and never tests 2 (the only even prime); the work here is identical and
/// 2 is added to the count, so the result is the true prime-counting value π(max_prime − 1).
pub fn count_primes(max_prime: u64) -> u64 {
    count_primes_until(max_prime, &Scope::new()).unwrap_or(0)
}

/// [`count_primes`], or `None` when `stop` stops first: an event of a huge `cpu_max_prime`
/// (seconds each) ends at a stop, looked at every 65,536 numbers (far less than one division
/// per number).
pub fn count_primes_until(max_prime: u64, stop: &Scope) -> Option<u64> {
    let max_prime = max_prime.min(i64::MAX as u64);
    let mut count: u64 = u64::from(max_prime > 2);
    for c in 3..max_prime {
        if c & 0xFFFF == 0 && stop.stopping() {
            return None;
        }
        let t = to_f64(c).sqrt();
        let mut l: u64 = 2;
        if to_f64(l) <= t {
            // l = 2 as a bit test: gcc peels this first iteration out of sysbench's loop, so
            // sysbench's binary never divides by 2 either.
            if c & 1 == 0 {
                continue;
            }
            l = 3;
            while to_f64(l) <= t {
                if rem_u64(c, l) == 0 {
                    break;
                }
                l += 1;
            }
        }
        if to_f64(l) > t {
            count += 1;
        }
    }
    Some(count)
}

struct CpuWorker<'a> {
    max_prime: u64,
    stop: &'a Scope,
}

impl Worker for CpuWorker<'_> {
    #[inline]
    fn event(&mut self) -> EventResult {
        match black_box(count_primes_until(black_box(self.max_prime), self.stop)) {
            Some(_) => EventResult::Done,
            // Stopped part-way: the event is not counted.
            None => EventResult::Exhausted,
        }
    }
}

impl Workload for Cpu {
    fn banner(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "Prime numbers limit: {}", self.max_prime)?;
        writeln!(out)
    }

    fn info_banner(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "Doing CPU performance benchmark")?;
        writeln!(out)
    }

    fn new_worker<'a>(
        &'a self,
        _id: usize,
        stop: &'a Scope,
    ) -> Result<Box<dyn Worker + 'a>, EngineError> {
        Ok(Box::new(CpuWorker {
            max_prime: self.max_prime,
            stop,
        }))
    }

    fn report(&self, outcome: &StepOutcome, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "CPU speed:")?;
        writeln!(
            out,
            "    events per second: {:8.2}",
            console::per_second(outcome.events, outcome.seconds)
        )?;
        writeln!(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_primes_like_sysbench() {
        assert_eq!(count_primes(100), 25);
        assert_eq!(count_primes(10), 4);
        assert_eq!(count_primes(11), 4); // exclusive upper bound
        assert_eq!(count_primes(12), 5);
        assert_eq!(count_primes(3), 1);
        assert_eq!(count_primes(2), 0);
        assert_eq!(count_primes(0), 0);
        assert_eq!(count_primes(10_000), 1229);
        assert_eq!(rem_u64(10, 3), 1);
        assert_eq!(rem_u64(u64::MAX, 2), 1);
    }

    #[test]
    fn banner_and_speed_block() {
        let cpu = Cpu { max_prime: 10_000 };
        let mut buf = Vec::new();
        cpu.banner(&mut buf).expect("write");
        assert_eq!(
            String::from_utf8_lossy(&buf),
            "Prime numbers limit: 10000\n\n"
        );
    }
}
