//! The driver every workload runs on: N worker threads, sysbench's limits, interim reports and
//! the final report.
//!
//! Shape, and why:
//!
//! * A workload is a [`Workload`] (shared, read-only during the run: options, banner, final
//!   block) that creates one [`Worker`] per thread (owned state: a connection, a buffer, an
//!   RNG). Workers are created *on their own thread* (sysbench's `thread_init`), so a worker
//!   needs no `Send` and may hold thread-bound handles.
//! * Workers are named OS threads (`std::thread::scope`, so they borrow the workload). All of
//!   them are created and ready before the clock starts, as sysbench starts its timer after
//!   every `thread_init`: a start barrier (each worker checks in, the calling thread reads the
//!   start instant once all have, then opens the gate). It is a counter plus a condvar rather
//!   than `std::sync::Barrier` so that a failed thread spawn can still release the workers
//!   already waiting.
//! * Limits follow sysbench: `time` (deadline checked with the clock reading each event already
//!   takes), `events` (one global atomic counter taken before each event, only when the cap is
//!   set); the first limit reached wins; with neither, the run is endless until `stop`.
//! * Hot path: no shared lock and no allocation per event. Each worker owns its
//!   [`WorkerStats`] (exact min/max/sum + HDR histogram) and publishes running totals to its
//!   own cache-line-aligned [`IntervalSlot`] with relaxed single-writer stores.
//! * The calling thread is the collector: it sleeps to each report tick on an absolute schedule
//!   (`start + k·interval`, so no drift), diffs the slots' counters and log histograms to print
//!   the interim line, and is unparked by the last worker to leave. A tick after the time limit,
//!   or one that no worker lived to see (events cap, stop), is never printed: sysbench prints no
//!   line for a final partial interval. A tick falling exactly on the time limit is a full
//!   interval and is printed.

use std::io::{self, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use super::{EngineError, IntervalSample, StepOutcome};
use crate::report::console;
use crate::stats::{self, BUCKETS, IntervalSlot, WorkerStats, log_histogram};
use crate::value::Options;

/// One kind of benchmark (cpu, memory, fileio, an OLTP script…), shared by all its workers.
pub trait Workload: Sync {
    /// The test's own banner lines (e.g. `Prime numbers limit: 10000` and a blank line),
    /// printed between the general banner and `Initializing worker threads...`.
    fn banner(&self, out: &mut dyn Write) -> io::Result<()>;

    /// Creates the state of worker `id` (0-based). Runs on that worker's thread before the clock
    /// starts; an error aborts the run before any event.
    fn new_worker(&self, id: usize) -> Result<Box<dyn Worker + '_>, EngineError>;

    /// The test-specific block printed before `General statistics:` (cpu's `CPU speed:`).
    fn report(&self, outcome: &StepOutcome, out: &mut dyn Write) -> io::Result<()> {
        let _ = (outcome, out);
        Ok(())
    }

    /// Called for each interim report before it is printed (on the collector thread, not on the
    /// hot path): add workload metrics to `sample` (they go to intervals.csv) and return the line
    /// to print instead of the default `[ Ns ] thds: … eps: …` line, if the test has its own
    /// (memory's `[ 1s ] X MiB/sec`, fileio's reads/writes/fsyncs line).
    fn interim(&self, sample: &mut IntervalSample) -> Option<String> {
        let _ = sample;
        None
    }

    /// Called once after the workers have finished, before the report: add workload metrics
    /// (memory's MiB/s, fileio's operation rates) to `outcome`.
    fn finish_outcome(&self, outcome: &mut StepOutcome) {
        let _ = outcome;
    }

    /// The global `events` cap this workload honours, given the configured one. Memory returns
    /// 0: sysbench forces `--events` to 0 there and each thread stops on its own share.
    fn events_limit(&self, configured: u64) -> u64 {
        configured
    }

    /// The `prepare` (or `cleanup`) command. Workloads without data keep this no-op.
    fn prepare(
        &self,
        cleanup: bool,
        out: &mut dyn Write,
        stop: &AtomicBool,
    ) -> Result<(), EngineError> {
        let _ = (cleanup, out, stop);
        Ok(())
    }
}

/// The per-thread part of a workload.
pub trait Worker {
    /// Runs one event; the driver times it.
    fn event(&mut self) -> EventResult;

    /// Called once after the worker's last event (sysbench's `thread_done`), inside total time.
    fn finish(&mut self) -> Result<(), EngineError> {
        Ok(())
    }
}

/// What one event did.
#[derive(Debug)]
pub enum EventResult {
    /// The event ran; it is counted and its latency recorded.
    Done,
    /// The worker has no more work (sysbench's NULL request): this thread ends, uncounted.
    Exhausted,
    /// A fatal error: every worker stops and the run fails without a final report.
    Fatal(EngineError),
}

/// The general options of a run, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct RunConfig {
    pub threads: usize,
    /// Global event cap; 0 = none.
    pub events: u64,
    /// Time limit; `None` = none.
    pub time: Option<Duration>,
    /// Interim report period; `None` = no interim lines.
    pub report_interval: Option<Duration>,
    /// Percentile reported (0..=100; 0 disables the percentile line).
    pub percentile: f64,
}

impl RunConfig {
    pub fn from_options(o: &Options) -> Result<Self, EngineError> {
        let threads = usize::try_from(o.uint("threads")).unwrap_or(usize::MAX);
        if threads == 0 {
            return Err(EngineError::Failed(
                "option `threads` must be at least 1".into(),
            ));
        }
        let percentile = o.float("percentile");
        if !(0.0..=100.0).contains(&percentile) {
            return Err(EngineError::Failed(format!(
                "option `percentile` is {percentile}: use a value from 0 to 100 (0 disables it)"
            )));
        }
        let secs = |key| {
            Some(o.uint(key))
                .filter(|&s| s > 0)
                .map(Duration::from_secs)
        };
        Ok(Self {
            threads,
            events: o.uint("events"),
            time: secs("time"),
            report_interval: secs("report_interval"),
            percentile,
        })
    }
}

/// Why a worker left its loop.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Exit {
    Limit,
    Exhausted,
    Interrupted,
    Aborted,
}

/// Keeps a value alone on its (pair of) cache lines.
#[repr(align(128))]
struct CacheLine<T>(T);

/// State shared by the collector and the workers for one run.
struct Shared<'a> {
    cfg: &'a RunConfig,
    slots: Box<[IntervalSlot]>,
    /// Workers that finished their initialisation (successfully or not).
    ready: AtomicUsize,
    /// The start gate: opened once, after `start` is set.
    gate: Mutex<bool>,
    gate_cv: Condvar,
    start: OnceLock<Instant>,
    running: AtomicUsize,
    /// The `events` cap counter, written by every worker per event: on its own cache lines so
    /// that it does not slow down the reads of `stop`/`abort` next to it.
    issued: CacheLine<AtomicU64>,
    /// Internal stop: a worker failed, or the report could not be written.
    abort: AtomicBool,
    stop: &'a AtomicBool,
    collector: Thread,
}

impl Shared<'_> {
    fn open_gate(&self) {
        *self.gate.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.gate_cv.notify_all();
    }

    fn wait_for_gate(&self) {
        let mut open = self.gate.lock().unwrap_or_else(|e| e.into_inner());
        while !*open {
            open = self.gate_cv.wait(open).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn elapsed_ns(&self) -> u64 {
        self.start.get().map_or(0, |s| duration_ns(s.elapsed()))
    }
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Marks the worker finished however it leaves (return, error, panic) and wakes the collector
/// when it was the last one.
struct FinishGuard<'s, 'a> {
    shared: &'s Shared<'a>,
    id: usize,
}

impl Drop for FinishGuard<'_, '_> {
    fn drop(&mut self) {
        if thread::panicking() {
            self.shared.abort.store(true, Ordering::Relaxed);
        }
        self.shared.slots[self.id].mark_finished(self.shared.elapsed_ns());
        if self.shared.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.shared.collector.unpark();
        }
    }
}

fn worker_main(
    shared: &Shared<'_>,
    workload: &dyn Workload,
    id: usize,
) -> Result<(WorkerStats, Exit), EngineError> {
    let _guard = FinishGuard { shared, id };
    let init = catch_unwind(AssertUnwindSafe(|| workload.new_worker(id)))
        .unwrap_or_else(|_| {
            Err(EngineError::Failed(format!(
                "worker {id} panicked while starting"
            )))
        })
        .and_then(|w| {
            WorkerStats::new()
                .map(|s| (w, s))
                .map_err(|e| EngineError::Failed(e.to_string()))
        });
    if init.is_err() {
        shared.abort.store(true, Ordering::Relaxed);
    }
    if shared.ready.fetch_add(1, Ordering::AcqRel) + 1 == shared.cfg.threads {
        shared.collector.unpark();
    }
    shared.wait_for_gate();
    let (mut worker, mut stats) = init?;
    let Some(&start) = shared.start.get() else {
        return Err(EngineError::Failed("the run clock was not started".into()));
    };
    // A time limit beyond what `Instant` can represent is no limit.
    let deadline = shared.cfg.time.and_then(|t| start.checked_add(t));
    let cap = shared.cfg.events;
    let slot = &shared.slots[id];

    let mut now = Instant::now();
    let exit = loop {
        if deadline.is_some_and(|d| now >= d) {
            break Exit::Limit;
        }
        if shared.stop.load(Ordering::Relaxed) {
            break Exit::Interrupted;
        }
        if shared.abort.load(Ordering::Relaxed) {
            break Exit::Aborted;
        }
        if cap > 0 && shared.issued.0.fetch_add(1, Ordering::Relaxed) >= cap {
            break Exit::Limit;
        }
        let t0 = Instant::now();
        let result = worker.event();
        let t1 = Instant::now();
        match result {
            EventResult::Done => {}
            EventResult::Exhausted => break Exit::Exhausted,
            EventResult::Fatal(e) => {
                shared.abort.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
        let ns = duration_ns(t1.saturating_duration_since(t0));
        stats.record(ns);
        slot.publish(&stats, ns);
        now = t1;
    };
    worker.finish()?;
    Ok((stats, exit))
}

/// Interval bookkeeping of the collector: the previous snapshot and reusable buffers.
struct Sampler {
    prev_at: Instant,
    prev_events: u64,
    prev_hist: Vec<u64>,
    cur_hist: Vec<u64>,
    scratch: Vec<u64>,
}

impl Sampler {
    fn new(start: Instant) -> Self {
        Self {
            prev_at: start,
            prev_events: 0,
            prev_hist: vec![0; BUCKETS],
            cur_hist: vec![0; BUCKETS],
            scratch: vec![0; BUCKETS],
        }
    }

    /// Snapshots all slots and returns the interval since the previous snapshot.
    fn sample(
        &mut self,
        slots: &[IntervalSlot],
        start: Instant,
        threads: usize,
        percentile: f64,
    ) -> IntervalSample {
        let now = Instant::now();
        let mut events = 0;
        self.cur_hist.fill(0);
        for slot in slots {
            events += slot.events();
            slot.snapshot_histogram(&mut self.scratch);
            for (c, s) in self.cur_hist.iter_mut().zip(&self.scratch) {
                *c += s;
            }
        }
        for (d, (c, p)) in self
            .scratch
            .iter_mut()
            .zip(self.cur_hist.iter().zip(&self.prev_hist))
        {
            *d = c.saturating_sub(*p);
        }
        let secs = now.saturating_duration_since(self.prev_at).as_secs_f64();
        let sample = IntervalSample {
            time_s: now.saturating_duration_since(start).as_secs_f64(),
            threads,
            eps: console::per_second(events.saturating_sub(self.prev_events), secs),
            lat_pct_ms: log_histogram::percentile_ms(&self.scratch, percentile),
            ..IntervalSample::default()
        };
        std::mem::swap(&mut self.prev_hist, &mut self.cur_hist);
        self.prev_events = events;
        self.prev_at = now;
        sample
    }
}

/// Runs `workload` to its limits, printing sysbench's banner, interim lines and final report.
pub fn run(
    workload: &dyn Workload,
    cfg: &RunConfig,
    out: &mut dyn Write,
    on_interval: &mut dyn FnMut(&IntervalSample),
    stop: &AtomicBool,
) -> Result<StepOutcome, EngineError> {
    let io_err = |e: io::Error| EngineError::Failed(format!("writing the report failed: {e}"));
    if cfg.threads == 0 {
        return Err(EngineError::Failed(
            "option `threads` must be at least 1".into(),
        ));
    }
    if cfg.time.is_none() && cfg.events == 0 {
        console::write_endless_warning(out).map_err(io_err)?;
    }
    console::write_header(
        out,
        cfg.threads,
        cfg.report_interval.map_or(0, |d| d.as_secs()),
    )
    .map_err(io_err)?;
    workload.banner(out).map_err(io_err)?;
    console::write_workers_starting(out).map_err(io_err)?;
    out.flush().map_err(io_err)?;
    let cfg = &RunConfig {
        events: workload.events_limit(cfg.events),
        ..cfg.clone()
    };

    let shared = Shared {
        cfg,
        slots: (0..cfg.threads).map(|_| IntervalSlot::new()).collect(),
        ready: AtomicUsize::new(0),
        gate: Mutex::new(false),
        gate_cv: Condvar::new(),
        start: OnceLock::new(),
        running: AtomicUsize::new(cfg.threads),
        issued: CacheLine(AtomicU64::new(0)),
        abort: AtomicBool::new(false),
        stop,
        collector: thread::current(),
    };

    let (results, seconds, write_error) = thread::scope(|scope| {
        let mut handles = Vec::with_capacity(cfg.threads);
        let mut spawn_error = None;
        for id in 0..cfg.threads {
            let shared = &shared;
            let spawned = thread::Builder::new()
                .name(format!("sbsuite-worker-{id}"))
                .spawn_scoped(scope, move || worker_main(shared, workload, id));
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    spawn_error = Some(e);
                    break;
                }
            }
        }
        if spawn_error.is_some() {
            // Release the workers already waiting into an aborted run.
            shared.abort.store(true, Ordering::Relaxed);
            let missing = cfg.threads - handles.len();
            shared.running.fetch_sub(missing, Ordering::AcqRel);
        } else {
            while shared.ready.load(Ordering::Acquire) < cfg.threads {
                thread::park_timeout(Duration::from_millis(100));
            }
        }
        let start = Instant::now();
        let _ = shared.start.set(start);
        shared.open_gate();
        let mut write_error = spawn_error
            .map(|e| EngineError::Failed(format!("could not start worker threads: {e}")));
        if write_error.is_none()
            && !shared.abort.load(Ordering::Relaxed)
            && let Err(e) = collect(&shared, workload, start, out, on_interval)
        {
            write_error = Some(io_err(e));
            shared.abort.store(true, Ordering::Relaxed);
        }
        let results: Vec<_> = handles
            .into_iter()
            .enumerate()
            .map(|(id, h)| {
                h.join()
                    .unwrap_or_else(|_| Err(EngineError::Failed(format!("worker {id} panicked"))))
            })
            .collect();
        (results, start.elapsed().as_secs_f64(), write_error)
    });
    if let Some(e) = write_error {
        return Err(e);
    }
    let mut workers = Vec::with_capacity(results.len());
    let mut interrupted = false;
    for r in results {
        let (stats, exit) = r?;
        interrupted |= exit == Exit::Interrupted;
        workers.push(stats);
    }

    let histogram = stats::merge(&workers).map_err(EngineError::Failed)?;
    let latency = stats::latency_summary(&workers, &histogram, cfg.percentile);
    let fairness = stats::fairness(&workers);
    let outcome = StepOutcome {
        seconds,
        events: workers.iter().map(|w| w.events).sum(),
        sql: None,
        latency,
        fairness_events_avg: fairness.events_avg,
        fairness_events_stddev: fairness.events_stddev,
        fairness_time_avg: fairness.time_avg,
        fairness_time_stddev: fairness.time_stddev,
        histogram,
        interrupted,
        metrics: Vec::new(),
    };
    let mut outcome = outcome;
    workload.finish_outcome(&mut outcome);
    workload.report(&outcome, out).map_err(io_err)?;
    console::write_final_report(out, &outcome).map_err(io_err)?;
    out.flush().map_err(io_err)?;
    Ok(outcome)
}

/// The collector loop: prints interim lines on an absolute schedule until every worker is gone.
fn collect(
    shared: &Shared<'_>,
    workload: &dyn Workload,
    start: Instant,
    out: &mut dyn Write,
    on_interval: &mut dyn FnMut(&IntervalSample),
) -> io::Result<()> {
    console::write_threads_started(out)?;
    out.flush()?;
    let cfg = shared.cfg;
    let mut interval = cfg.report_interval;
    let mut sampler = Sampler::new(start);
    let mut tick: u32 = 1;
    loop {
        // Read before the clock: a tick due now is still reported if the workers left at (or
        // after) it, which is how a tick falling on the time limit gets its line.
        let finished = shared.running.load(Ordering::Acquire) == 0;
        let Some(every) = interval else {
            if finished {
                break;
            }
            // Woken by the last worker; the timeout only guards against a missed wake-up.
            thread::park_timeout(Duration::from_secs(1));
            continue;
        };
        let offset = every.saturating_mul(tick);
        if cfg.time.is_some_and(|t| offset > t) {
            interval = None; // only the final partial interval is left
            continue;
        }
        let Some(due) = start.checked_add(offset) else {
            interval = None; // beyond what the clock can represent
            continue;
        };
        let now = Instant::now();
        if now < due {
            if finished {
                break;
            }
            thread::park_timeout(due - now);
            continue;
        }
        let tick_ns = duration_ns(offset);
        let threads = shared
            .slots
            .iter()
            .filter(|s| s.running_at(tick_ns))
            .count();
        if threads == 0 {
            interval = None; // the run ended before this tick
            continue;
        }
        let mut sample = sampler.sample(&shared.slots, start, threads, cfg.percentile);
        match workload.interim(&mut sample) {
            Some(line) => writeln!(out, "{line}")?,
            None => writeln!(out, "{}", console::interval_line(&sample, cfg.percentile))?,
        }
        out.flush()?;
        on_interval(&sample);
        tick = tick.saturating_add(1);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    /// Each event spins for about `spin` (busy, like a real workload); worker `id` runs at most
    /// `per_thread[id]` events when given, then reports itself exhausted.
    /// With `until`, each worker is exhausted once that much time has passed since its first
    /// event (a run that ends on its own, independent of machine speed).
    struct Fake {
        spin: Duration,
        per_thread: Option<Vec<u64>>,
        until: Option<Duration>,
    }

    struct FakeWorker {
        spin: Duration,
        left: Option<u64>,
        until: Option<Duration>,
        first: Option<Instant>,
    }

    impl Worker for FakeWorker {
        fn event(&mut self) -> EventResult {
            let first = *self.first.get_or_insert_with(Instant::now);
            if self.until.is_some_and(|u| first.elapsed() >= u) {
                return EventResult::Exhausted;
            }
            if let Some(left) = &mut self.left {
                if *left == 0 {
                    return EventResult::Exhausted;
                }
                *left -= 1;
            }
            let t = Instant::now();
            while t.elapsed() < self.spin {
                std::hint::spin_loop();
            }
            EventResult::Done
        }
    }

    impl Workload for Fake {
        fn banner(&self, out: &mut dyn Write) -> io::Result<()> {
            writeln!(out, "Fake workload")?;
            writeln!(out)
        }

        fn new_worker(&self, id: usize) -> Result<Box<dyn Worker + '_>, EngineError> {
            Ok(Box::new(FakeWorker {
                spin: self.spin,
                left: self.per_thread.as_ref().map(|v| v[id]),
                until: self.until,
                first: None,
            }))
        }
    }

    fn config(threads: usize, events: u64, time_ms: u64, interval_ms: u64) -> RunConfig {
        let ms = |v| Some(v).filter(|&v| v > 0).map(Duration::from_millis);
        RunConfig {
            threads,
            events,
            time: ms(time_ms),
            report_interval: ms(interval_ms),
            percentile: 95.0,
        }
    }

    fn run_fake(
        fake: &Fake,
        cfg: &RunConfig,
        stop: &AtomicBool,
    ) -> (StepOutcome, Vec<IntervalSample>, String) {
        let mut out = Vec::new();
        let mut samples = Vec::new();
        let outcome =
            run(fake, cfg, &mut out, &mut |s| samples.push(s.clone()), stop).expect("run succeeds");
        (outcome, samples, String::from_utf8(out).expect("utf8"))
    }

    const SPIN: Duration = Duration::from_micros(20);

    #[test]
    fn events_cap_is_exact_across_threads() {
        let fake = Fake {
            spin: SPIN,
            per_thread: None,
            until: None,
        };
        let (o, samples, text) = run_fake(&fake, &config(3, 1000, 0, 0), &AtomicBool::new(false));
        assert_eq!(o.events, 1000);
        assert_eq!(o.histogram.len(), 1000);
        assert!(!o.interrupted);
        assert!(samples.is_empty());
        assert!(text.contains("    total number of events:              1000\n"));
        assert!(!text.contains("WARNING"));
    }

    #[test]
    fn time_limit_stops_close_to_the_limit_and_ticks_are_full_intervals() {
        let fake = Fake {
            spin: SPIN,
            per_thread: None,
            until: None,
        };
        // 600 ms / 200 ms: ticks at 200, 400 and exactly at the limit → 3 full intervals.
        let (o, samples, text) = run_fake(&fake, &config(2, 0, 600, 200), &AtomicBool::new(false));
        assert!(o.seconds >= 0.6 && o.seconds < 0.9, "{}", o.seconds);
        assert!(!o.interrupted);
        assert_eq!(samples.len(), 3, "{samples:?}");
        assert!(samples.iter().all(|s| s.threads == 2 && s.eps > 0.0));
        assert!(samples.windows(2).all(|w| w[0].time_s < w[1].time_s));
        assert_eq!(text.lines().filter(|l| l.starts_with("[ ")).count(), 3);
        // Latencies are exact from the per-worker timers.
        let l = &o.latency;
        assert!(l.min_ms >= 0.02 && l.min_ms <= l.avg_ms && l.avg_ms <= l.max_ms);
        assert!(l.min_ms <= l.p95_ms && l.p95_ms <= l.max_ms);
        assert!((l.sum_ms / 1e3 - o.fairness_time_avg * 2.0).abs() < 1e-9);
    }

    #[test]
    fn no_interim_line_for_a_partial_interval() {
        let fake = Fake {
            spin: SPIN,
            per_thread: None,
            until: Some(Duration::from_millis(500)),
        };
        // Workers end by themselves after ≈ 500 ms with a 200 ms interval: two full intervals,
        // then a partial one that is not reported.
        let (o, samples, _) = run_fake(&fake, &config(2, 0, 0, 200), &AtomicBool::new(false));
        assert!(o.events > 0 && !o.interrupted);
        assert_eq!(samples.len(), 2, "{samples:?}");
    }

    #[test]
    fn stop_flag_interrupts_an_endless_run() {
        let fake = Fake {
            spin: SPIN,
            per_thread: None,
            until: None,
        };
        let stop = AtomicBool::new(false);
        let (o, _, text) = thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(Duration::from_millis(200));
                stop.store(true, Ordering::Relaxed);
            });
            run_fake(&fake, &config(2, 0, 0, 0), &stop)
        });
        assert!(o.interrupted);
        assert!(o.events > 0);
        assert!(o.seconds < 2.0, "{}", o.seconds);
        assert!(text.starts_with(
            "WARNING: Both event and time limits are disabled, running an endless test\nsbsuite "
        ));
        assert!(text.contains("General statistics:"), "final report printed");
    }

    #[test]
    fn fairness_from_known_per_thread_counts() {
        let fake = Fake {
            spin: SPIN,
            per_thread: Some(vec![10, 20, 30]),
            until: None,
        };
        let (o, _, text) = run_fake(&fake, &config(3, 0, 5000, 0), &AtomicBool::new(false));
        assert_eq!(o.events, 60);
        assert!(!o.interrupted);
        assert_eq!(o.fairness_events_avg, 20.0);
        assert!((o.fairness_events_stddev - (200.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert!((o.latency.sum_ms / 1e3 / 3.0 - o.fairness_time_avg).abs() < 1e-9);
        assert!(o.fairness_time_stddev > 0.0);
        assert!(o.seconds < 1.0, "ended when all workers were exhausted");
        assert!(text.contains("    events (avg/stddev):           20.0000/8.16\n"));
    }

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
        assert_eq!(cfg, config(4, 0, 10_000, 0).with_percentile(99.9));
        o.0.insert("threads".into(), Value::Int(0));
        assert!(RunConfig::from_options(&o).is_err());
    }

    impl RunConfig {
        fn with_percentile(mut self, p: f64) -> Self {
            self.percentile = p;
            self
        }
    }
}
