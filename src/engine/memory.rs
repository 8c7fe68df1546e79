//! sysbench's `memory` test: every event reads or writes one memory block, word by word.
//!
//! Shape, and why:
//!
//! * As in sysbench 1.0.20 there is only ONE block per scope: `global` allocates one block shared
//!   by every thread (so the test mostly measures a cache-resident buffer, sysbench PR #417),
//!   `local` one block per thread, allocated on that thread in `new_worker` (first touch there).
//!   `memory_total_size` is a transfer cap, not a footprint (sysbench issue #233).
//! * An event is `block / 8` word operations: `seq` visits each 8-byte word in order, `rnd`
//!   visits one uniformly drawn word per operation: sysbench's `⌊U · words⌋` from the same
//!   xoroshiro128+ ([`super::random`]), computed as the top bits of the generator output (the
//!   same index, as the word count is a power of two, without float work per operation).
//!   The words are `AtomicU64` accessed with relaxed loads and stores: with a global block
//!   several threads write the same words, which relaxed atomics make defined behaviour, and
//!   on x86-64/AArch64 they are plain `mov`/`ldr`/`str`, the same instructions as sysbench's
//!   `ck_pr_load_64`/`ck_pr_store_64`. LLVM neither merges
//!   nor drops atomic accesses, and the read accumulator goes through [`black_box`], so reads are
//!   never optimised away.
//! * `none`: `rnd` still draws its offsets (the draws are the work); `seq` is sysbench's empty
//!   loop over the words, which gcc compiles to one counter step per 8 words (`add $0x40`) in
//!   sysbench's binary: here one [`black_box`]ed counter per 8 words, the same order of work.
//! * The `events` option is ignored (sysbench forces it to 0): each thread stops on its own after
//!   `total / block / threads` events ([`EventResult::Exhausted`]), or at the time limit. A total
//!   of 0 means no cap.
//! * Blocks are anonymous `mmap`s: page-aligned, optionally `MAP_HUGETLB`, and written once at
//!   allocation so that reads hit real pages rather than the kernel's shared zero page.

use std::hint::black_box;
use std::io::{self, Write};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use super::config::RunConfig;
use super::driver::{EventResult, Scope, Worker, Workload};
use super::option::{Kind, OptSpec, Reader};
use super::random::Rng;
use super::spec::{NO_DATA, Setup, WorkloadSpec};
use super::{EngineError, IntervalSample, StepOutcome, console};
use crate::value::Options;

/// The memory workload's entry in [`super::catalog`].
pub static SPEC: WorkloadSpec = WorkloadSpec {
    name: "memory",
    summary: "memory speed: block reads and writes over a buffer",
    options: &[OPTIONS],
    data: NO_DATA,
    needs_target: false,
    needs_local_files: false,
    ends_by_itself,
    build,
    definition: crate::engine::Definition::Builtin,
};

static OPTIONS: &[OptSpec] = &[
    OptSpec {
        name: "memory_block_size",
        kind: Kind::Size,
        default: Some("1K"),
        help: "bytes one event reads or writes (a power of 2, at least 8)",
    },
    OptSpec {
        name: "memory_total_size",
        kind: Kind::Size,
        default: Some("100G"),
        help: "the run ends after this much memory has been read or written in all",
    },
    OptSpec {
        name: "memory_scope",
        kind: Kind::Enum(&["global", "local"]),
        default: Some("global"),
        help: "global: all threads share one buffer; local: each thread has its own",
    },
    OptSpec {
        name: "memory_hugetlb",
        kind: Kind::Bool,
        default: Some("false"),
        help: "back the buffers with huge pages (HugeTLB)",
    },
    OptSpec {
        name: "memory_oper",
        kind: Kind::Enum(&["read", "write", "none"]),
        default: Some("write"),
        help: "what an event does to its block",
    },
    OptSpec {
        name: "memory_access_mode",
        kind: Kind::Enum(&["seq", "rnd"]),
        default: Some("seq"),
        help: "seq walks the buffer in order, rnd picks blocks at random",
    },
];

/// A run stops on its own after `memory_total_size` (when not 0).
fn ends_by_itself(options: &Options) -> bool {
    options.uint("memory_total_size") > 0
}

const MIB: f64 = 1_048_576.0;
const WORD: u64 = 8;

/// `memory_oper`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Oper {
    Read,
    Write,
    None,
}

impl Oper {
    fn name(self) -> &'static str {
        match self {
            Oper::Read => "read",
            Oper::Write => "write",
            Oper::None => "none",
        }
    }
}

/// The resolved options of the memory test.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub block_size: u64,
    /// Bytes to transfer over all threads; 0 = no cap.
    pub total_size: u64,
    pub global: bool,
    pub hugetlb: bool,
    pub oper: Oper,
    pub random: bool,
    pub threads: u64,
    pub seed: u64,
}

impl Settings {
    /// The typed configuration, from the workload's options and the general ones.
    pub fn new(o: &Reader<'_>, run: &RunConfig) -> Result<Self, EngineError> {
        let block_size = o.uint("memory_block_size")?;
        if block_size < WORD || !block_size.is_power_of_two() {
            return Err(EngineError::Failed(format!(
                "option `memory_block_size` is {block_size} bytes: use a power of 2 of at least 8, e.g. 1K, 4K or 1M"
            )));
        }
        if usize::try_from(block_size).is_err() {
            return Err(EngineError::Failed(format!(
                "option `memory_block_size` is {block_size} bytes, more than this machine can address: use a smaller block"
            )));
        }
        let oper = match o.text("memory_oper")? {
            "read" => Oper::Read,
            "write" => Oper::Write,
            "none" => Oper::None,
            other => {
                return Err(EngineError::Failed(format!(
                    "option `memory_oper` is `{other}`: use read, write or none"
                )));
            }
        };
        let global = match o.text("memory_scope")? {
            "global" => true,
            "local" => false,
            other => {
                return Err(EngineError::Failed(format!(
                    "option `memory_scope` is `{other}`: use global or local"
                )));
            }
        };
        let random = match o.text("memory_access_mode")? {
            "seq" => false,
            "rnd" => true,
            other => {
                return Err(EngineError::Failed(format!(
                    "option `memory_access_mode` is `{other}`: use seq or rnd"
                )));
            }
        };
        Ok(Self {
            block_size,
            total_size: o.uint("memory_total_size")?,
            global,
            hugetlb: o.flag("memory_hugetlb")?,
            oper,
            random,
            threads: (run.threads as u64).max(1),
            seed: run.seed,
        })
    }

    /// Events each thread runs before it is exhausted (`None` = no cap), as sysbench:
    /// `total / block / threads`, rounded down.
    pub fn events_per_thread(&self) -> Option<u64> {
        (self.total_size > 0).then(|| self.total_size / self.block_size / self.threads)
    }

    fn mib(&self, events: u64) -> f64 {
        events as f64 * self.block_size as f64 / MIB
    }
}

/// One page-aligned anonymous mapping of `words` 8-byte words.
struct Block {
    ptr: NonNull<AtomicU64>,
    words: usize,
    map_len: usize,
}

// SAFETY: the mapping is only accessed through `AtomicU64`s, which are Sync; `Block` owns it.
unsafe impl Send for Block {}
// SAFETY: as above, shared access is atomic.
unsafe impl Sync for Block {}

/// The huge page size from /proc/meminfo (2 MiB when it cannot be read).
fn huge_page_size() -> usize {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("Hugepagesize:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        })
        .map_or(2 << 20, |kb| kb * 1024)
}

impl Block {
    /// Maps `bytes` (a multiple of 8) and writes every word once. `blocks` is how many such
    /// blocks the run needs, for the huge-page advice in the error.
    fn new(bytes: u64, hugetlb: bool, blocks: u64) -> Result<Block, EngineError> {
        let too_big = || {
            EngineError::Failed(format!(
                "option `memory_block_size`: a block of {bytes} bytes cannot be allocated on this machine"
            ))
        };
        let len = usize::try_from(bytes).map_err(|_| too_big())?;
        let page = if hugetlb { huge_page_size() } else { 4096 };
        let map_len = len.div_ceil(page).checked_mul(page).ok_or_else(too_big)?;
        let mut flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
        if hugetlb {
            flags |= libc::MAP_HUGETLB;
        }
        // SAFETY: an anonymous private mapping at a kernel-chosen address; no existing memory
        // is touched. The result is checked against MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            let err = io::Error::last_os_error();
            return Err(EngineError::Failed(if hugetlb {
                let pages = (map_len / page) as u64 * blocks;
                format!(
                    "option `memory_hugetlb`: the kernel refused {map_len} bytes of huge pages ({err}). \
                     Reserve {pages} huge page(s) of {} KiB first, e.g. as root \
                     `sysctl -w vm.nr_hugepages={pages}` (see /proc/meminfo HugePages_Free), \
                     or set memory_hugetlb=off",
                    page / 1024
                )
            } else {
                format!(
                    "option `memory_block_size`: allocating a block of {bytes} bytes failed ({err}); use a smaller block"
                )
            }));
        }
        let ptr = NonNull::new(p.cast::<AtomicU64>()).ok_or_else(too_big)?;
        let block = Block {
            ptr,
            words: len / WORD as usize,
            map_len,
        };
        for (i, w) in block.words().iter().enumerate() {
            w.store(i as u64, Ordering::Relaxed);
        }
        Ok(block)
    }

    #[inline(always)]
    fn words(&self) -> &[AtomicU64] {
        // SAFETY: the mapping holds `words` page-aligned 8-byte words, lives as long as `self`
        // and is only accessed atomically.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.words) }
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping created in `new`; no reference outlives `self`.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.map_len);
        }
    }
}

/// The memory workload.
pub struct Memory {
    settings: Settings,
    /// The shared block of the `global` scope.
    global: Option<Block>,
}

/// sysbench's `memory_init`: validates the options, allocates the global block.
fn build(s: &Setup<'_>) -> Result<Box<dyn Workload>, EngineError> {
    Ok(Box::new(Memory::new(Settings::new(&s.options, s.run)?)?))
}

impl Memory {
    /// MiB transferred and MiB/s over the run; `None` for `none`, which transfers nothing.
    fn transferred(&self, outcome: &StepOutcome) -> Option<(f64, f64)> {
        (self.settings.oper != Oper::None).then(|| {
            let total = self.settings.mib(outcome.events);
            let rate = if outcome.seconds > 0.0 {
                total / outcome.seconds
            } else {
                0.0
            };
            (total, rate)
        })
    }

    pub fn new(settings: Settings) -> Result<Self, EngineError> {
        let global = if settings.global {
            Some(Block::new(settings.block_size, settings.hugetlb, 1)?)
        } else {
            None
        };
        Ok(Self { settings, global })
    }
}

enum BlockRef<'a> {
    Shared(&'a Block),
    Own(Block),
}

struct MemoryWorker<'a> {
    block: BlockRef<'a>,
    oper: Oper,
    random: bool,
    left: Option<u64>,
    rng: Rng,
}

impl MemoryWorker<'_> {
    #[inline(always)]
    fn words(&self) -> &[AtomicU64] {
        match &self.block {
            BlockRef::Shared(b) => b.words(),
            BlockRef::Own(b) => b.words(),
        }
    }
}

/// Index of a uniformly drawn word out of `2^bits`: sysbench's `⌊U · n⌋` with
/// `U = (x >> 12) / 2^52`. As `n` is a power of two (the block size is one) and `bits <= 52`, that
/// is exactly the top `bits` bits of `x`: the same index from the same generator output, without
/// the float multiply and conversion on every operation. Always below `2^bits`.
#[inline(always)]
fn draw(rng: &mut Rng, shift: u32) -> usize {
    ((rng.next_u64() >> 1) >> shift) as usize
}

impl Worker for MemoryWorker<'_> {
    fn event(&mut self) -> EventResult {
        if let Some(left) = &mut self.left {
            if *left == 0 {
                return EventResult::Exhausted;
            }
            *left -= 1;
        }
        let (oper, random) = (self.oper, self.random);
        let mut rng = self.rng.clone();
        let words = self.words();
        let n = words.len();
        // `draw` shifts right by 63 − log2(n) (n is a power of two, ≥ 1).
        let shift = 63 - n.max(1).trailing_zeros().min(52);
        match (oper, random) {
            (Oper::Write, false) => {
                for (i, w) in words.iter().enumerate() {
                    w.store(i as u64, Ordering::Relaxed);
                }
            }
            (Oper::Read, false) => {
                let mut acc = 0u64;
                for w in words {
                    acc ^= w.load(Ordering::Relaxed);
                }
                black_box(acc);
            }
            (Oper::None, false) => {
                for i in 0..n.div_ceil(8) {
                    black_box(i);
                }
            }
            (Oper::Write, true) => {
                for i in 0..n {
                    let k = draw(&mut rng, shift);
                    debug_assert!(k < n);
                    // SAFETY: `draw` returns an index below 2^log2(n) = n (see `shift`).
                    unsafe { words.get_unchecked(k) }.store(i as u64, Ordering::Relaxed);
                }
            }
            (Oper::Read, true) => {
                let mut acc = 0u64;
                for _ in 0..n {
                    let k = draw(&mut rng, shift);
                    debug_assert!(k < n);
                    // SAFETY: as above, `k < n`.
                    acc ^= unsafe { words.get_unchecked(k) }.load(Ordering::Relaxed);
                }
                black_box(acc);
            }
            (Oper::None, true) => {
                let mut acc = 0usize;
                for _ in 0..n {
                    acc ^= draw(&mut rng, shift);
                }
                black_box(acc);
            }
        }
        self.rng = rng;
        EventResult::Done
    }
}

impl Workload for Memory {
    fn banner(&self, out: &mut dyn Write) -> io::Result<()> {
        let s = &self.settings;
        writeln!(out, "Running memory speed test with the following options:")?;
        writeln!(out, "  block size: {}KiB", s.block_size / 1024)?;
        writeln!(out, "  total size: {}MiB", s.total_size / 1_048_576)?;
        writeln!(out, "  operation: {}", s.oper.name())?;
        writeln!(
            out,
            "  scope: {}",
            if s.global { "global" } else { "local" }
        )?;
        writeln!(out)
    }

    fn new_worker<'a>(
        &'a self,
        id: usize,
        _stop: &'a Scope,
    ) -> Result<Box<dyn Worker + 'a>, EngineError> {
        let s = &self.settings;
        let block = match &self.global {
            Some(b) => BlockRef::Shared(b),
            None => BlockRef::Own(Block::new(s.block_size, s.hugetlb, s.threads)?),
        };
        Ok(Box::new(MemoryWorker {
            block,
            oper: s.oper,
            random: s.random,
            left: s.events_per_thread(),
            rng: Rng::for_thread(s.seed, id),
        }))
    }

    fn events_limit(&self, _configured: u64) -> u64 {
        0
    }

    fn interim(&self, sample: &mut IntervalSample) -> Option<String> {
        let mib_per_s = sample.eps * self.settings.block_size as f64 / MIB;
        sample.metrics.push(("mib_per_s", mib_per_s));
        Some(format!("[ {:.0}s ] {mib_per_s:4.2} MiB/sec", sample.time_s))
    }

    fn finish_outcome(&self, outcome: &mut StepOutcome) {
        let Some((total, rate)) = self.transferred(outcome) else {
            return;
        };
        outcome.metrics.push(("mib_per_s", rate));
        outcome.metrics.push(("total_mib", total));
    }

    fn report(&self, outcome: &StepOutcome, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "Total operations: {} ({:8.2} per second)",
            outcome.events,
            console::per_second(outcome.events, outcome.seconds)
        )?;
        writeln!(out)?;
        if let Some((total, rate)) = self.transferred(outcome) {
            writeln!(out, "{total:4.2} MiB transferred ({rate:4.2} MiB/sec)")?;
            writeln!(out)?;
        }
        writeln!(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stop flag of workers built by hand: never set.
    static NO_STOP: std::sync::LazyLock<Scope> = std::sync::LazyLock::new(Scope::new);
    use crate::value::Value;

    fn options(pairs: &[(&str, Value)]) -> Options {
        let mut o = Options::default();
        for (k, v) in [
            ("threads", Value::Int(1)),
            ("memory_block_size", Value::Int(1024)),
            ("memory_total_size", Value::Int(1 << 20)),
            ("memory_scope", Value::Str("global".into())),
            ("memory_hugetlb", Value::Bool(false)),
            ("memory_oper", Value::Str("write".into())),
            ("memory_access_mode", Value::Str("seq".into())),
            ("rand_seed", Value::Int(1)),
        ] {
            o.0.insert(k.into(), v);
        }
        for (k, v) in pairs {
            o.0.insert((*k).into(), v.clone());
        }
        o
    }

    fn outcome(events: u64, seconds: f64) -> StepOutcome {
        StepOutcome {
            error_codes: Default::default(),
            seconds,
            events,
            sql: None,
            latency: Default::default(),
            fairness_events_avg: 0.0,
            fairness_events_stddev: 0.0,
            fairness_time_avg: 0.0,
            fairness_time_stddev: 0.0,
            histogram: hdrhistogram::Histogram::new(3).expect("histogram"),
            interrupted: false,
            cut_short: None,
            metrics: Vec::new(),
            transactions: Vec::new(),
            per_thread: Vec::new(),
            steady: Default::default(),
            phases: Vec::new(),
            groups: Vec::new(),
            open_loop: None,
        }
    }

    fn settings(pairs: &[(&str, Value)]) -> Result<Settings, EngineError> {
        let o = options(pairs);
        Settings::new(&SPEC.reader(&o), &RunConfig::for_prepare(&o)?)
    }

    #[test]
    fn a_total_size_ends_the_run_by_itself() {
        assert!((SPEC.ends_by_itself)(&options(&[])));
        let endless = options(&[("memory_total_size", Value::Int(0))]);
        assert!(!(SPEC.ends_by_itself)(&endless));
    }

    #[test]
    fn block_size_must_be_a_power_of_two_of_at_least_8() {
        for bad in [0, 4, 12, 1000, 1025] {
            let err = settings(&[("memory_block_size", Value::Int(bad))])
                .expect_err("invalid block size")
                .to_string();
            assert!(err.contains("`memory_block_size`"), "{err}");
            assert!(err.contains("power of 2"), "{err}");
        }
        for good in [8, 16, 1024, 1 << 20] {
            assert_eq!(
                settings(&[("memory_block_size", Value::Int(good))])
                    .expect("valid")
                    .block_size,
                good as u64
            );
        }
    }

    #[test]
    fn each_thread_gets_total_over_block_over_threads_events() {
        let s = settings(&[
            ("threads", Value::Int(3)),
            ("memory_total_size", Value::Int(10 << 20)),
        ])
        .expect("valid");
        assert_eq!(s.events_per_thread(), Some(3413));
        let s = settings(&[("memory_total_size", Value::Int(0))]).expect("valid");
        assert_eq!(s.events_per_thread(), None);
    }

    /// Runs worker 0 to exhaustion (at most `cap` events) and returns its event count.
    fn events_until_exhausted(m: &Memory, cap: u64) -> u64 {
        let mut w = m.new_worker(0, &NO_STOP).expect("worker");
        let mut n = 0;
        while n < cap {
            match w.event() {
                EventResult::Done => n += 1,
                EventResult::Exhausted => return n,
                EventResult::Fatal(e) => panic!("{e}"),
            }
        }
        n
    }

    #[test]
    fn workers_stop_after_their_share_in_every_mode() {
        for oper in ["read", "write", "none"] {
            for mode in ["seq", "rnd"] {
                for scope in ["global", "local"] {
                    let s = settings(&[
                        ("threads", Value::Int(2)),
                        ("memory_total_size", Value::Int(100 * 1024)),
                        ("memory_oper", Value::Str(oper.into())),
                        ("memory_access_mode", Value::Str(mode.into())),
                        ("memory_scope", Value::Str(scope.into())),
                    ])
                    .expect("valid");
                    let m = Memory::new(s).expect("allocates");
                    assert_eq!(
                        events_until_exhausted(&m, 1000),
                        50,
                        "{oper} {mode} {scope}"
                    );
                }
            }
        }
    }

    #[test]
    fn hugetlb_follows_the_kernels_reserve() {
        let free = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("HugePages_Free:"))
                .and_then(|v| v.trim().parse::<u64>().ok())
        });
        let Some(free) = free else {
            return; // not Linux, or no HugeTLB support: nothing to compare with
        };
        let made = Memory::new(settings(&[("memory_hugetlb", Value::Bool(true))]).expect("valid"));
        match made {
            Ok(m) => assert!(free > 0 && m.global.is_some()),
            Err(e) => {
                let e = e.to_string();
                assert_eq!(free, 0, "{e}");
                assert!(
                    e.contains("`memory_hugetlb`") && e.contains("vm.nr_hugepages"),
                    "{e}"
                );
            }
        }
    }

    #[test]
    fn rnd_draws_are_sysbenchs_uniform_word_index() {
        for bits in [0u32, 1, 7, 17, 27] {
            let n = 1u64 << bits;
            let mut a = Rng::for_thread(5, 0);
            let mut b = a.clone();
            for _ in 0..10_000 {
                assert_eq!(
                    draw(&mut a, 63 - bits) as u64,
                    b.uniform(0, n - 1),
                    "n = {n}"
                );
            }
        }
    }

    #[test]
    fn seq_write_writes_every_word() {
        let m = Memory::new(settings(&[]).expect("valid")).expect("allocates");
        let block = m.global.as_ref().expect("global block");
        for w in block.words() {
            w.store(u64::MAX, Ordering::Relaxed);
        }
        let mut w = m.new_worker(0, &NO_STOP).expect("worker");
        assert!(matches!(w.event(), EventResult::Done));
        assert!(
            block
                .words()
                .iter()
                .all(|w| w.load(Ordering::Relaxed) != u64::MAX)
        );
    }

    #[test]
    fn rnd_write_touches_many_distinct_words() {
        let m = Memory::new(
            settings(&[("memory_access_mode", Value::Str("rnd".into()))]).expect("valid"),
        )
        .expect("allocates");
        let block = m.global.as_ref().expect("global block");
        for w in block.words() {
            w.store(u64::MAX, Ordering::Relaxed);
        }
        let mut w = m.new_worker(0, &NO_STOP).expect("worker");
        assert!(matches!(w.event(), EventResult::Done));
        let touched = block
            .words()
            .iter()
            .filter(|w| w.load(Ordering::Relaxed) != u64::MAX)
            .count();
        // 128 uniform draws over 128 words reach ≈ 63 % of them.
        assert!((50..=110).contains(&touched), "{touched}");
    }

    #[test]
    fn banner_and_report_match_sysbench() {
        let m =
            Memory::new(settings(&[("memory_total_size", Value::Int(100 << 30))]).expect("valid"))
                .expect("allocates");
        assert_eq!(m.events_limit(5), 0, "sysbench forces --events to 0");
        let mut out = Vec::new();
        m.banner(&mut out).expect("write");
        assert_eq!(
            String::from_utf8_lossy(&out),
            "Running memory speed test with the following options:\n  block size: 1KiB\n  total size: 102400MiB\n  operation: write\n  scope: global\n\n"
        );
        let mut outcome = outcome(2048, 2.0);
        m.finish_outcome(&mut outcome);
        assert_eq!(
            crate::engine::metric(&outcome.metrics, "total_mib"),
            Some(2.0)
        );
        assert_eq!(
            crate::engine::metric(&outcome.metrics, "mib_per_s"),
            Some(1.0)
        );
        let mut out = Vec::new();
        m.report(&outcome, &mut out).expect("write");
        assert_eq!(
            String::from_utf8_lossy(&out),
            "Total operations: 2048 ( 1024.00 per second)\n\n2.00 MiB transferred (1.00 MiB/sec)\n\n\n"
        );
        let none =
            Memory::new(settings(&[("memory_oper", Value::Str("none".into()))]).expect("valid"))
                .expect("allocates");
        let mut out = Vec::new();
        none.report(&outcome, &mut out).expect("write");
        assert_eq!(
            String::from_utf8_lossy(&out),
            "Total operations: 2048 ( 1024.00 per second)\n\n\n"
        );
        let mut sample = IntervalSample {
            time_s: 1.0004,
            eps: 2048.0,
            ..IntervalSample::default()
        };
        assert_eq!(
            m.interim(&mut sample).as_deref(),
            Some("[ 1s ] 2.00 MiB/sec")
        );
        assert_eq!(
            crate::engine::metric(&sample.metrics, "mib_per_s"),
            Some(2.0)
        );
    }
}
