//! sysbench's `cpu` test: each event counts the primes below `cpu_max_prime` by trial division.
//!
//! The event does exactly sysbench 1.0.20's work, so events/s stay comparable: every `c` in
//! `3..cpu_max_prime` (exclusive bound, as sysbench's `c < max_prime`) is divided by
//! `l = 2..=⌊√c⌋` (square root in `f64`, remainder on `u64`) until the first divisor. The count
//! goes through [`std::hint::black_box`], and so does the limit, so the compiler can neither
//! drop the loop nor fold it into a constant (sysbench issue #521).

use std::hint::black_box;
use std::io::{self, Write};

use super::driver::{EventResult, Worker, Workload};
use super::{EngineError, StepOutcome};
use crate::report::console;
use crate::value::Options;

/// The cpu workload.
#[derive(Clone, Debug)]
pub struct Cpu {
    pub max_prime: u64,
}

/// Registry entry point.
pub fn new(options: &Options) -> Result<Box<dyn Workload>, EngineError> {
    Ok(Box::new(Cpu {
        max_prime: options.uint("cpu_max_prime"),
    }))
}

/// Number of primes below `max_prime`, by sysbench's trial division.
///
/// sysbench starts at 3 and never tests 2 (the only even prime); the work here is identical and
/// 2 is added to the count, so the result is the true prime-counting value π(max_prime − 1).
pub fn count_primes(max_prime: u64) -> u64 {
    let mut count: u64 = u64::from(max_prime > 2);
    for c in 3..max_prime {
        let t = (c as f64).sqrt();
        let mut l: u64 = 2;
        while (l as f64) <= t {
            if c % l == 0 {
                break;
            }
            l += 1;
        }
        if (l as f64) > t {
            count += 1;
        }
    }
    count
}

struct CpuWorker {
    max_prime: u64,
}

impl Worker for CpuWorker {
    #[inline]
    fn event(&mut self) -> EventResult {
        black_box(count_primes(black_box(self.max_prime)));
        EventResult::Done
    }
}

impl Workload for Cpu {
    fn banner(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "Prime numbers limit: {}", self.max_prime)?;
        writeln!(out)
    }

    fn new_worker(&self, _id: usize) -> Result<Box<dyn Worker + '_>, EngineError> {
        Ok(Box::new(CpuWorker {
            max_prime: self.max_prime,
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
