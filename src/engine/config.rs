//! The general options: their specs ([`GENERAL`], options every workload accepts, sysbench's
//! general options) and [`RunConfig`], the one typed form of them.
//!
//! A step's general options are parsed here once, before a workload is built: the driver reads
//! its limits, rate and reports from [`RunConfig`], and workloads take `threads`, `rand_seed`,
//! the time limit or the key distribution from it instead of reading the option bag again.
//! `prepare` and `cleanup` parse the same way but skip the options only a run uses
//! (`percentile`, `forced_shutdown`, `report_checkpoints`), so a prepare never fails on them.

use std::time::Duration;

use super::EngineError;
use super::option::{Kind, OptSpec, Reader};
use super::random::RandOptions;
use crate::value::Options;

/// The smallest worker stack: sysbench's 64K default is sized for C; Rust frames (debug builds,
/// formatting, TLS handshakes of DB clients) need more. Stacks are virtual memory, so a larger
/// floor costs little even with a thousand threads.
pub const MIN_STACK: usize = 512 * 1024;

/// No upper bound for an integer option.
pub const UNBOUNDED: i64 = i64::MAX;

/// `max_retries`'s default (its spec says the same, a test checks): re-runs of one event after
/// ignored errors before the error is fatal (see `engine::session::retry`). Far above what contention
/// makes of a real transaction (one that fails 9 times in 10 gets through 1,000 tries with a
/// probability of 1 − 10⁻⁴⁶), and reached in about a second by an error that recurs every time.
pub const DEFAULT_MAX_RETRIES: u64 = 1000;

/// `lua_memory_limit`'s default (its spec says the same, a test checks): sysbench's stock
/// scripts use a few MiB a state; a script that builds large tables in `init()` has room, a
/// runaway one stops long before the machine's memory (see `engine::lua::stop`).
pub const DEFAULT_LUA_MEMORY_LIMIT: u64 = 512 << 20;

/// Options every workload understands (sysbench's general options).
pub static GENERAL: &[OptSpec] = &[
    OptSpec {
        name: "threads",
        kind: Kind::Int {
            min: 1,
            max: 100_000,
        },
        default: Some("1"),
        help: "worker threads running events in parallel (each OLTP thread holds its own connection)",
    },
    OptSpec {
        name: "events",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("0"),
        help: "stop after this many events in all (0: no event limit)",
    },
    OptSpec {
        name: "time",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("10"),
        help: "stop after this many seconds (0: no time limit)",
    },
    OptSpec {
        name: "report_interval",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("0"),
        help: "print a progress line every N seconds (0: only the final report)",
    },
    OptSpec {
        name: "percentile",
        kind: Kind::Float {
            min: 0.0,
            max: 100.0,
        },
        default: Some("95"),
        help: "which latency percentile the report shows (fractions such as 99.9 work; 0 hides it); p50, p95 and p99 are always stored",
    },
    OptSpec {
        name: "forced_shutdown",
        kind: Kind::Str,
        default: Some("off"),
        help: "grace period after the time limit before the run is ended by force: N seconds, N% of --time, or off",
    },
    OptSpec {
        name: "thread_stack_size",
        kind: Kind::Size,
        default: Some("64K"),
        help: "stack reserved for each worker thread (at least 512K is used)",
    },
    OptSpec {
        name: "rate",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("0"),
        help: "target events per second, arriving as a Poisson process; latency includes the wait in the queue (0: as fast as possible)",
    },
    OptSpec {
        name: "max_threads",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("0"),
        help: "with `rate`: when arrivals wait and every running thread is busy, start more threads, up to this many (their connections are opened before the run), instead of letting the queue grow; 0: off (sysbench's fixed `threads`)",
    },
    OptSpec {
        name: "client_threads",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("0"),
        help: "OS threads that drive the `threads` connections, as pgbench's --jobs: each runs its share of the workers as coroutines and sleeps only when all of their connections wait, in one epoll_wait (OLTP and custom workloads on MySQL or PostgreSQL, sbsuite's wire clients); 0: one thread per connection, as sysbench",
    },
    OptSpec {
        name: "latency_limit",
        kind: Kind::Float { min: 0.0, max: 1e9 },
        default: Some("0"),
        help: "milliseconds (as pgbench's --latency-limit): events slower than this are counted as late; with `rate`, an arrival a thread takes already later than this is not run but counted as skipped (0: no limit)",
    },
    OptSpec {
        name: "report_checkpoints",
        kind: Kind::List(None),
        default: Some("\"\""),
        help: "times (seconds from the start) at which a full report is printed and the counters start over, e.g. \"10,20\"",
    },
    OptSpec {
        name: "histogram",
        kind: Kind::Bool,
        default: Some("false"),
        help: "add a latency histogram to the final report",
    },
    OptSpec {
        name: "warmup_time",
        kind: Kind::IntOr {
            min: 0,
            max: UNBOUNDED,
            word: "auto",
        },
        default: Some("0"),
        help: "seconds to run before measuring; warmup events are excluded from every statistic. \
               \"auto\": until MSER-5 finds the throughput's start-up transient over (at least \
               20 s, at most max(time, 60 s))",
    },
    OptSpec {
        name: "rand_type",
        kind: Kind::Enum(&["uniform", "gaussian", "special", "pareto", "zipfian"]),
        default: Some("special"),
        help: "how random row ids are drawn",
    },
    OptSpec {
        name: "rand_spec_iter",
        kind: Kind::Int {
            min: 1,
            max: UNBOUNDED,
        },
        default: Some("12"),
        help: "draws averaged per number by the special and gaussian distributions",
    },
    OptSpec {
        name: "rand_spec_pct",
        kind: Kind::Int { min: 0, max: 100 },
        default: Some("1"),
        help: "size of the hot set, as a percentage of all values (special distribution)",
    },
    OptSpec {
        name: "rand_spec_res",
        kind: Kind::Int { min: 0, max: 100 },
        default: Some("75"),
        help: "percentage of draws that land in the hot set (special distribution)",
    },
    OptSpec {
        name: "rand_pareto_h",
        kind: Kind::Float {
            min: 0.000001,
            max: 0.999999,
        },
        default: Some("0.2"),
        help: "skew h of the pareto distribution (0.5 is uniform; smaller is more skewed)",
    },
    OptSpec {
        name: "rand_zipfian_exp",
        kind: Kind::Float {
            min: 0.0,
            max: 1000.0,
        },
        default: Some("0.8"),
        help: "shape parameter (exponent) of the zipfian distribution",
    },
    OptSpec {
        name: "rand_seed",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("0"),
        help: "seed for the random number generators; 0 = from the current time. A seed makes every thread's stream reproducible",
    },
    OptSpec {
        name: "debug",
        kind: Kind::Bool,
        default: Some("false"),
        help: "print DEBUG lines and per-thread statistics (implies verbosity 5)",
    },
    OptSpec {
        name: "verbosity",
        kind: Kind::Int { min: 0, max: 5 },
        default: Some("3"),
        help: "how much to print, as sysbench's levels: 0 only fatal errors, 1 and 2 add alerts \
               and warnings, 3 the banner and reports, 4 progress notes, 5 debug lines; \
               `debug` implies 5",
    },
    OptSpec {
        name: "max_retries",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1000"),
        help: "times one event is re-run after errors in ignore_errors before the error fails the run (0: no limit, as sysbench)",
    },
    OptSpec {
        name: "lua_memory_limit",
        kind: Kind::Size,
        default: Some("512M"),
        help: "memory each Lua state of a sysbench script may allocate; past it the script gets Lua's \"not enough memory\" error (0: no limit)",
    },
    OptSpec {
        name: "validate",
        kind: Kind::Bool,
        default: Some("false"),
        help: "verify data where a test can (fileio writes and checks block checksums)",
    },
];

/// The general options of a run, resolved.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunConfig {
    pub threads: usize,
    /// Global event cap; 0 = none.
    pub events: u64,
    /// Time limit (measured time, after any warmup); `None` = none.
    pub time: Option<Duration>,
    /// Interim report period; `None` = no interim lines.
    pub report_interval: Option<Duration>,
    /// Percentile reported (0..=100; 0 disables the percentile line).
    pub percentile: f64,
    /// Worker stack size in bytes (`thread_stack_size`, raised to [`MIN_STACK`]); 0 = std's.
    pub stack_size: usize,
    /// Delay after the time limit before a forced shutdown; `None` = off.
    pub forced_shutdown: Option<Duration>,
    /// Target events per second (Poisson arrivals); 0 = as fast as possible.
    pub rate: u64,
    /// `latency_limit`: events slower than this are counted late, and with `rate` arrivals
    /// already this late when taken are skipped; `None` = no limit.
    pub latency_limit: Option<Duration>,
    /// Seconds (after warmup) at which to print a checkpoint report and restart statistics.
    pub checkpoints: Vec<u64>,
    /// Print the latency histogram before the final report.
    pub histogram: bool,
    /// Unmeasured warmup before the measured run; `None` = none (or `warmup_auto`).
    pub warmup: Option<Duration>,
    /// `warmup_time = "auto"`: the warmup ends when MSER-5 finds the transient over
    /// ([`crate::stats::steady`]); `warmup` is then `None`.
    pub warmup_auto: bool,
    /// sysbench's `--debug` lines (the per-thread statistics).
    pub debug: bool,
    /// sysbench's log level (0–5, default 3; `debug` makes it 5): below 3 only `FATAL:`,
    /// `ALERT:` and `WARNING:` lines are printed ([`super::console::LevelFilter`]); 4 adds
    /// the progress notes (`Done.`), 5 the `DEBUG:` lines.
    pub verbosity: u8,
    /// `rand_seed` (0 = from the clock): for the header, the rate generator and the workloads'
    /// [`super::random::Rng::for_thread`].
    pub seed: u64,
    /// The `rand_*` options of the key distribution (OLTP builds its `Distribution` from them).
    pub rand: RandOptions,
    /// `validate`: checks where a workload can make them (fileio's checksums).
    pub validate: bool,
    /// `max_retries`: re-runs of one event after ignored errors before the error is fatal
    /// (0: no limit); see [`super::session::retry`].
    pub max_retries: u64,
    /// `lua_memory_limit`: bytes each Lua state may allocate (0: no limit); see
    /// [`super::lua::stop`].
    pub lua_memory_limit: u64,
    /// What a full `rate` queue does (not an option: the caller decides).
    pub rate_overflow: RateOverflow,
    /// This process's part of a run driven from several clients (#17); `None` runs the whole
    /// step here. Not an option: the coordinator sets it.
    pub shard: Option<Shard>,
    /// The step's timeline (`[[phases]]`, #30; [`RunConfig::set_phases`]); empty: none.
    pub phases: Vec<super::phases::Phase>,
    /// `max_threads` (#30): the threads that run events from the start, when the pool
    /// (`threads`, then `max_threads`) may grow under a `rate` the running ones cannot keep up
    /// with; `None`: every worker runs from the start.
    pub start_threads: Option<usize>,
    /// `client_threads` (#32): the OS threads that carry the workers as coroutines
    /// ([`crate::db::mux`]); `None`: one thread per worker. See [`RunConfig::carriers`].
    pub client_threads: Option<usize>,
}

/// One client's part of a run step driven from `count` clients (`sbsuite agent`, #17).
///
/// The run's [`RunConfig::threads`], `rate` and `events` are this client's share; the
/// workload is built as for the whole run (`total_threads` threads, so per-thread state,
/// `table_size / threads` slices and the like mean what they mean in one process) and this
/// client's workers get the global ids `thread_offset ..  thread_offset + threads`. Global
/// ids are disjoint across clients, so are the per-thread random streams; the shared
/// sequences (oltp_insert's ids, custom workloads' global `sequence`) are strided by `index`
/// over `count`, so no two clients ever draw the same value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shard {
    /// This client's position, 0-based.
    pub index: usize,
    /// How many clients share the step.
    pub count: usize,
    /// Threads of the whole step, over every client.
    pub total_threads: usize,
    /// The global id of this client's first worker.
    pub thread_offset: usize,
}

impl Shard {
    /// Client `index`'s share of `total` split over `count` clients: the remainder goes to the
    /// first clients, one each, so the shares add up to `total`.
    pub fn share(total: u64, count: usize, index: usize) -> u64 {
        let count = count.max(1) as u64;
        total / count + u64::from((index as u64) < total % count)
    }

    /// The shards of a step of `threads` threads over `count` clients (`count` ≤ `threads`).
    pub fn split(threads: usize, count: usize) -> Vec<(Shard, usize)> {
        let mut offset = 0;
        (0..count)
            .map(|index| {
                let mine = Self::share(threads as u64, count, index) as usize;
                let shard = Shard {
                    index,
                    count,
                    total_threads: threads,
                    thread_offset: offset,
                };
                offset += mine;
                (shard, mine)
            })
            .collect()
    }
}

/// What the driver does when `rate` offers an arrival while the event queue
/// ([`super::driver::RATE_QUEUE_SLOTS`]) is full because every worker is busy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RateOverflow {
    /// Drop the arrival, count it, run on, and report the count as the [`super::DROPPED`]
    /// metric: the runner decides what it means for the row (`[suite] rate_overflow`).
    #[default]
    Count,
    /// Stop the run at the first dropped arrival, without a report, with
    /// [`super::EngineError::RateOverflow`]: sysbench 1.0.20's behaviour, for `sbsuite sysbench`.
    Fatal,
}

/// The option tables [`RunConfig`] reads.
static GENERAL_ONLY: &[&[OptSpec]] = &[GENERAL];

impl RunConfig {
    /// The general options of a run step.
    pub fn from_options(o: &Options) -> Result<Self, EngineError> {
        Self::parse(o, true)
    }

    /// The general options of a prepare, prewarm or cleanup step: the run-only ones
    /// (`percentile`, `forced_shutdown`, `report_checkpoints`) are left unparsed.
    pub fn for_prepare(o: &Options) -> Result<Self, EngineError> {
        Self::parse(o, false)
    }

    fn parse(options: &Options, run: bool) -> Result<Self, EngineError> {
        let o = Reader::new("general", GENERAL_ONLY, options);
        let threads = usize::try_from(o.uint("threads")?).unwrap_or(usize::MAX);
        if threads == 0 {
            return Err(EngineError::Failed(
                "option `threads` must be at least 1".into(),
            ));
        }
        let percentile = o.float("percentile")?;
        if run && !(0.0..=100.0).contains(&percentile) {
            return Err(EngineError::Failed(format!(
                "option `percentile` is {percentile}: use a value from 0 to 100 (0 disables it)"
            )));
        }
        let secs = |key| -> Result<Option<Duration>, EngineError> {
            Ok(Some(o.uint(key)?)
                .filter(|&s| s > 0)
                .map(Duration::from_secs))
        };
        let time = secs("time")?;
        let warmup_auto =
            matches!(o.get("warmup_time")?, Some(crate::value::Value::Str(w)) if w == "auto");
        let mut checkpoints = Vec::new();
        for item in if run {
            o.list("report_checkpoints")?
        } else {
            Vec::new()
        } {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            match item.parse::<u64>() {
                Ok(s) if s > 0 => checkpoints.push(s),
                _ => {
                    return Err(EngineError::Failed(format!(
                        "option `report_checkpoints` has `{item}`: use a list of whole seconds \
                         greater than 0, e.g. \"10,20\""
                    )));
                }
            }
        }
        checkpoints.sort_unstable();
        checkpoints.dedup();
        if warmup_auto && !checkpoints.is_empty() {
            return Err(EngineError::Failed(
                "options `warmup_time = \"auto\"` and `report_checkpoints` do not go together: \
                 checkpoints count from the end of the warmup, which \"auto\" only finds during \
                 the run; give `warmup_time` a number of seconds, or drop the checkpoints"
                    .into(),
            ));
        }
        let stack = usize::try_from(o.uint("thread_stack_size")?).unwrap_or(usize::MAX);
        // A stack of no bytes is a mistake, not a request for the minimum (sysbench refuses it).
        // Absent (a hand-built Options) is the spec default, not 0.
        if stack == 0 && o.get("thread_stack_size")?.is_some() {
            return Err(EngineError::Failed(
                "option `thread_stack_size` is 0: give a size such as 64K (the default; \
                 sbsuite raises it to at least 512K)"
                    .into(),
            ));
        }
        let max_threads = if run {
            usize::try_from(o.uint("max_threads")?).unwrap_or(usize::MAX)
        } else {
            0
        };
        if max_threads > 0 && o.uint("rate")? == 0 {
            return Err(EngineError::Failed(
                "option `max_threads` needs `rate`: threads are added when arrivals wait for a \
                 busy pool; without a rate every thread runs back to back from the start (set \
                 `threads` instead)"
                    .into(),
            ));
        }
        if max_threads > 0 && max_threads < threads {
            return Err(EngineError::Failed(format!(
                "option `max_threads` is {max_threads}, below `threads` ({threads}): the pool \
                 starts at `threads` and grows up to `max_threads`; give at least {threads}"
            )));
        }
        let client_threads = if run {
            usize::try_from(o.uint("client_threads")?).unwrap_or(usize::MAX)
        } else {
            0
        };
        if client_threads > 0 && max_threads > 0 {
            return Err(EngineError::Failed(
                "option `client_threads` does not go with `max_threads` (which needs `rate`): \
                 drop one of them"
                    .into(),
            ));
        }
        let (threads, start_threads) = if max_threads > threads {
            (max_threads, Some(threads))
        } else {
            (threads, None)
        };
        Ok(Self {
            threads,
            start_threads,
            client_threads: Some(client_threads).filter(|&n| n > 0),
            events: o.uint("events")?,
            time,
            report_interval: secs("report_interval")?,
            percentile,
            stack_size: stack.max(MIN_STACK),
            // Absent (a hand-built Options) is the spec default `off`, not the empty value.
            forced_shutdown: match o.get("forced_shutdown")? {
                Some(_) if run => parse_forced_shutdown(o.text("forced_shutdown")?, time)?,
                _ => None,
            },
            rate: o.uint("rate")?,
            latency_limit: Some(o.float("latency_limit")?)
                .filter(|&ms| ms > 0.0)
                .and_then(|ms| Duration::try_from_secs_f64(ms / 1e3).ok()),
            checkpoints,
            histogram: o.flag("histogram")?,
            warmup: if warmup_auto {
                None
            } else {
                secs("warmup_time")?
            },
            warmup_auto,
            debug: o.flag("debug")?,
            // sysbench's `--debug` sets the level to 5 whatever `--verbosity` says.
            // Absent (a hand-built Options) is the spec default, 3, not 0.
            verbosity: match o.get("verbosity")? {
                _ if o.flag("debug")? => 5,
                Some(_) => u8::try_from(o.uint("verbosity")?).unwrap_or(5),
                None => 3,
            },
            seed: o.uint("rand_seed")?,
            rand: RandOptions {
                rand_type: o.text("rand_type")?.to_string(),
                spec_iter: o.uint("rand_spec_iter")?,
                spec_pct: o.uint("rand_spec_pct")?,
                spec_res: o.uint("rand_spec_res")?,
                pareto_h: o.float("rand_pareto_h")?,
                zipfian_exp: o.float("rand_zipfian_exp")?,
            },
            validate: o.flag("validate")?,
            // Absent (a hand-built Options) is the spec default.
            max_retries: match o.get("max_retries")? {
                Some(_) => o.uint("max_retries")?,
                None => DEFAULT_MAX_RETRIES,
            },
            lua_memory_limit: match o.get("lua_memory_limit")? {
                Some(_) => o.uint("lua_memory_limit")?,
                None => DEFAULT_LUA_MEMORY_LIMIT,
            },
            rate_overflow: RateOverflow::Count,
            shard: None,
            phases: Vec::new(),
        })
    }

    /// Runs the step as the timeline `phases` (none: as it is): the time limit becomes the
    /// measured phases' total, the warmup the leading warmup phases', the pool the largest
    /// phase's threads and `rate` the largest phase's (so that the rate queue exists when a
    /// phase is open-loop). The options that would contradict the timeline are refused.
    pub fn set_phases(&mut self, phases: &[super::phases::Phase]) -> Result<(), EngineError> {
        let Some(t) = super::phases::Timeline::new(phases) else {
            return Ok(());
        };
        if let Some(why) = super::phases::check(phases) {
            return Err(EngineError::Failed(why));
        }
        let refuse = |what: &str| {
            Err(EngineError::Failed(format!(
                "`[[phases]]` and {what} do not go together: the phases set the step's time, \
                 warmup, threads and rate"
            )))
        };
        if self.warmup_auto {
            return refuse("`warmup_time = \"auto\"`");
        }
        if !self.checkpoints.is_empty() {
            return refuse("`report_checkpoints`");
        }
        if self.shard.is_some() {
            return refuse("`[clients]`");
        }
        if self.start_threads.is_some() {
            return refuse("`max_threads`");
        }
        self.time = Some(t.measured());
        self.warmup = Some(t.warmup()).filter(|w| !w.is_zero());
        self.threads = t.pool();
        self.rate = t.rate_max().ceil() as u64;
        self.phases = phases.to_vec();
        Ok(())
    }

    /// How many carrier threads run the workers as coroutines: `client_threads` when it is
    /// below `threads` (at or above it, every worker has its thread anyway); `None`: one
    /// thread per worker.
    pub fn carriers(&self) -> Option<usize> {
        self.client_threads.filter(|&n| n < self.threads)
    }

    /// The time limit in whole seconds, 0 = none.
    pub fn time_secs(&self) -> u64 {
        self.time.map_or(0, |t| t.as_secs())
    }

    /// The configuration a workload is built with: the whole step's thread count when this
    /// process runs one shard of it ([`Shard`]).
    pub fn for_workload(&self) -> RunConfig {
        match self.shard {
            Some(s) => RunConfig {
                threads: s.total_threads,
                ..self.clone()
            },
            None => self.clone(),
        }
    }

    /// The global id of local worker `id`.
    pub fn global_id(&self, id: usize) -> usize {
        self.shard.map_or(id, |s| s.thread_offset + id)
    }
}

/// `forced_shutdown`: `off`, `N` seconds or `N%` of the time limit; empty = 5 % (sysbench's
/// code). Without a time limit there is nothing to force: `None`.
fn parse_forced_shutdown(
    text: &str,
    time: Option<Duration>,
) -> Result<Option<Duration>, EngineError> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let bad = || {
        EngineError::Failed(format!(
            "option `forced_shutdown` is `{text}`: use `off`, a number of seconds (`5`) or a \
             percentage of `time` (`5%`)"
        ))
    };
    let delay = |time: Duration| -> Result<Duration, EngineError> {
        if text.is_empty() {
            return Ok(time.mul_f64(0.05));
        }
        if let Some(pct) = text.strip_suffix('%') {
            let pct: f64 = pct.trim().parse().map_err(|_| bad())?;
            if !(0.0..=1e6).contains(&pct) {
                return Err(bad());
            }
            return Ok(time.mul_f64(pct / 100.0));
        }
        text.parse::<u64>()
            .map(Duration::from_secs)
            .map_err(|_| bad())
    };
    match time {
        Some(t) => delay(t).map(Some),
        None => delay(Duration::ZERO).map(|_| None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    #[test]
    fn run_config_reads_options() {
        let mut o = Options::default();
        for (k, v) in [
            ("threads", Value::Int(4)),
            ("events", Value::Int(0)),
            ("time", Value::Int(10)),
            ("report_interval", Value::Int(0)),
            ("percentile", Value::Float(99.9)),
        ] {
            o.0.insert(k.into(), v);
        }
        let cfg = RunConfig::from_options(&o).expect("valid");
        let expected = RunConfig {
            threads: 4,
            time: Some(Duration::from_secs(10)),
            percentile: 99.9,
            stack_size: MIN_STACK,
            // Not given: sysbench's default level, sbsuite's default bounds.
            verbosity: 3,
            max_retries: DEFAULT_MAX_RETRIES,
            lua_memory_limit: DEFAULT_LUA_MEMORY_LIMIT,
            ..RunConfig::default()
        };
        assert_eq!(cfg, expected);
        o.0.insert("thread_stack_size".into(), Value::Int(8 << 20));
        o.0.insert("report_checkpoints".into(), Value::Str("20,10,10".into()));
        let cfg = RunConfig::from_options(&o).expect("valid");
        assert_eq!((cfg.stack_size, cfg.checkpoints), (8 << 20, vec![10, 20]));
        o.0.insert("report_checkpoints".into(), Value::Str("10,x".into()));
        let e = RunConfig::from_options(&o).expect_err("invalid");
        assert!(e.to_string().contains("report_checkpoints"), "{e}");
        o.0.insert("report_checkpoints".into(), Value::Str(String::new()));
        o.0.insert("threads".into(), Value::Int(0));
        assert!(RunConfig::from_options(&o).is_err());
    }

    #[test]
    fn shards_add_up_and_ids_are_disjoint() {
        for (threads, count) in [(12, 3), (10, 3), (3, 3), (7, 1), (1000, 7)] {
            let shards = Shard::split(threads, count);
            assert_eq!(shards.iter().map(|(_, n)| n).sum::<usize>(), threads);
            let mut next = 0;
            for (s, n) in &shards {
                assert_eq!(s.thread_offset, next);
                assert!(*n >= threads / count && *n <= threads / count + 1);
                next += n;
            }
            for total in [0u64, 1, 2, 100, 1001] {
                let sum: u64 = (0..count).map(|i| Shard::share(total, count, i)).sum();
                assert_eq!(sum, total);
            }
        }
    }

    #[test]
    fn prepare_skips_the_run_only_options() {
        let mut o = Options::default();
        o.0.insert("threads".into(), Value::Int(2));
        o.0.insert("report_checkpoints".into(), Value::Str("x".into()));
        o.0.insert("forced_shutdown".into(), Value::Str("soon".into()));
        assert!(RunConfig::from_options(&o).is_err());
        assert_eq!(RunConfig::for_prepare(&o).expect("prepare").threads, 2);
    }

    #[test]
    fn forced_shutdown_values() {
        let t = Some(Duration::from_secs(100));
        let p = |s| parse_forced_shutdown(s, t).expect("valid");
        assert_eq!(p("off"), None);
        assert_eq!(p(""), Some(Duration::from_secs(5)));
        assert_eq!(p("10%"), Some(Duration::from_secs(10)));
        assert_eq!(p("7"), Some(Duration::from_secs(7)));
        assert_eq!(parse_forced_shutdown("7", None).expect("valid"), None);
        let e = parse_forced_shutdown("soon", t).expect_err("invalid");
        assert!(e.to_string().contains("forced_shutdown"), "{e}");
    }
}
