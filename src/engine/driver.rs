//! The driver every workload runs on: N worker threads, sysbench's limits and general options,
//! interim reports and the final report.
//!
//! Shape, and why:
//!
//! * A workload is a [`Workload`] (shared, read-only during the run: options, banner, final
//!   block) that creates one [`Worker`] per thread (owned state: a connection, a buffer, an
//!   RNG). Workers are created *on their own thread* (sysbench's `thread_init`), so a worker
//!   needs no `Send` and may hold thread-bound handles. A workload seeds its generators with
//!   [`Rng::for_thread`]`(run.seed, id)` ([`RunConfig::seed`]).
//! * Workers are named OS threads with `thread_stack_size` stacks (raised to at least
//!   [`super::config::MIN_STACK`]). All of them are created and ready before the clock starts,
//!   as sysbench starts its timer after every `thread_init`: a start barrier (a counter plus a
//!   condvar, so that a failed spawn can still release the workers already waiting).
//! * Every worker is stopped and joined before the next step can begin: a run owns a stop
//!   [`Scope`] that each worker gets in [`Workload::new_worker`], opens its connections in and
//!   registers its Lua state with. The scope stops (workers leave at their next check, their
//!   connections refuse new statements) with a stop request or an internal abort; a forced
//!   shutdown cancels what the workers wait for ([`stop_stuck`]: server-side cancels of the
//!   statements in flight, Lua stop hooks, then closed connections) and joins them. Workers
//!   are *not* scoped threads, for the one case where even that fails (a thread stuck in
//!   foreign code): [`run_owned`] then leaks the workload so the abandoned threads keep a
//!   valid reference, and the run fails with [`EngineError::Unstoppable`], which stops the
//!   suite. Their shared state is an `Arc`; every worker is joined before [`run`] returns (a
//!   [`Joiner`] guard, also on early returns and panics); [`run`] (borrowed workload) waits for
//!   unstoppable workers instead.
//! * Workers read only state the driver owns: the collector forwards the caller's `stop` flag
//!   (polled every [`POLL`]) into the scope, so an abandoned worker never touches memory of
//!   the caller; no engine reads a process-wide flag.
//! * Limits follow sysbench: `time` (checked with the clock reading each event already takes),
//!   `events` (one global atomic counter taken before each event, only when the cap is set);
//!   the first limit reached wins; with neither, the run is endless until `stop`.
//! * Hot path: no shared lock and no allocation per event. Each worker owns its [`WorkerStats`]
//!   and publishes running totals to its own cache-line-aligned [`IntervalSlot`] with relaxed
//!   single-writer stores. It also reads one shared *epoch* per event (a relaxed load of a line
//!   written only at warmup end and at checkpoints): when it changes, the worker hands its
//!   statistics to its mailbox (checkpoint) or drops them (warmup) and starts fresh.
//! * `rate`: a generator thread draws exponential gaps (Poisson arrivals, mean 1e9/rate ns) on an
//!   absolute schedule and pushes each *intended* start time into a bounded queue; workers take
//!   one per event and count latency from it (queue wait + execution: coordinated omission is
//!   not hidden). The queue is a `Mutex<VecDeque>` + `Condvar` preallocated to sysbench's 131072
//!   slots: the same structure as sysbench's, one uncontended-in-practice lock per event, only
//!   in rate mode. A full queue means the requested load is not being offered. With
//!   [`RateOverflow::Fatal`] (`sbsuite sysbench`) the first such arrival stops the run without a
//!   report, as sysbench's "FATAL: The event queue is full" does; with [`RateOverflow::Count`]
//!   (suites) the arrival is dropped and counted, the count is the outcome's
//!   [`super::DROPPED`] metric (the runner fails the row on it), and a warning follows the report.
//! * The calling thread is the collector: it sleeps to the next due moment (report tick,
//!   warmup end, checkpoint, forced shutdown) on an absolute schedule, and is unparked by the
//!   last worker to leave. A tick after the time limit, or one that no worker lived to see, is
//!   never printed: sysbench prints no line for a final partial interval.
//! * `warmup_time`: the run first goes N s unmeasured (no interim lines, no event cap), then
//!   every statistic restarts: the `[ Ns ]` stamps, checkpoints, the time limit and the total
//!   time all count from the end of the warmup.
//! * `report_checkpoints`: at each listed second, `[ Ns ] Checkpoint report:` and a full report
//!   of the period since the previous checkpoint, then statistics restart (workers hand over
//!   their own, [`Workload::reset_counters`] for the workload's). The returned outcome covers
//!   the time since the last checkpoint, as sysbench's final report does — except that its
//!   total time is that period too (sysbench prints the time since start there, while dividing
//!   its rates by the period).
//! * `forced_shutdown`: when workers are still running that long after the time limit, prints
//!   "The --max-time limit has expired, forcing shutdown...", stops them ([`stop_stuck`]),
//!   prints the report (what every worker measured up to the forced moment; the events under
//!   way are not counted) and "Number of unfinished transactions on forced shutdown: N" (N =
//!   workers that were in an event), and returns the outcome marked `interrupted`, so the
//!   runner records the step as `interrupted` with what was measured (sysbench exits with 2).

use std::collections::VecDeque;
use std::io::{self, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

use super::config::{RateOverflow, RunConfig};
use super::random::Rng;
use super::{
    EngineError, IntervalSample, LiveSample, SqlCounters, StepObserver, StepOutcome, console,
};
pub use crate::db::interrupt::Scope;
use crate::stats::{self, BUCKETS, IntervalSlot, WorkerStats, log_histogram};

/// One kind of benchmark (cpu, memory, fileio, an OLTP script…), shared by all its workers.
pub trait Workload: Sync {
    /// Called once before the run prints anything: a sysbench Lua script's `init()`, which
    /// sysbench runs before its banner (so the script's own lines and a failing `init` come
    /// first). An error fails the step with nothing else printed.
    fn start(&self) -> Result<(), EngineError> {
        Ok(())
    }

    /// Called once on the calling thread after the run's preamble (header, banner,
    /// `Initializing worker threads...`), before any worker: check what only a run needs and
    /// set up state shared by the workers (OLTP checks its server and tables; fileio checks its
    /// `file_test_mode` and opens its files). An error fails the step after that preamble, as
    /// sysbench's failed `thread_init` does.
    fn before_run(&self) -> Result<(), EngineError> {
        Ok(())
    }

    /// The test's own banner lines (e.g. `Prime numbers limit: 10000` and a blank line),
    /// printed between the general banner and `Initializing worker threads...`.
    fn banner(&self, out: &mut dyn Write) -> io::Result<()>;

    /// Called once right after [`Workload::banner`], before `Initializing worker threads...`:
    /// where sysbench's fileio opens and checks its test files, so that a missing file's
    /// `FATAL` follows `Doing … test` as in sysbench. An error fails the step there.
    fn after_banner(&self) -> Result<(), EngineError> {
        Ok(())
    }

    /// sysbench's level-4 lines before the banner (`Doing CPU performance benchmark`), printed
    /// at `verbosity` 4 and up. Most tests have none.
    fn info_banner(&self, out: &mut dyn Write) -> io::Result<()> {
        let _ = out;
        Ok(())
    }

    /// Creates the state of worker `id` (0-based). Runs on that worker's thread before the clock
    /// starts; an error aborts the run before any event. `stop` is the run's stop scope: a
    /// worker opens its connections in it ([`crate::db::interrupt::guarded_in`]) and registers
    /// what else could hold it (a Lua state), and leaves its event as soon as
    /// [`Scope::stopping`] says so: between statements, in a retry, in a wait.
    fn new_worker<'a>(
        &'a self,
        id: usize,
        stop: &'a Scope,
    ) -> Result<Box<dyn Worker + 'a>, EngineError>;

    /// The test-specific block printed before `General statistics:` (cpu's `CPU speed:`).
    fn report(&self, outcome: &StepOutcome, out: &mut dyn Write) -> io::Result<()> {
        let _ = (outcome, out);
        Ok(())
    }

    /// Text printed after the whole final report (sysbench's lines stay as sysbench prints
    /// them; custom workloads add their `Transactions:` block here).
    fn report_after(&self, outcome: &StepOutcome, out: &mut dyn Write) -> io::Result<()> {
        let _ = (outcome, out);
        Ok(())
    }

    /// Writes a report of the workload's own in place of the final report (`checkpoint`
    /// false) or of a checkpoint's report: a sysbench Lua script's `report_cumulative` hook.
    /// `Ok(false)` (the default): sysbench's report is printed. The `--histogram` block, the
    /// forced-shutdown and debug lines stay (sysbench prints them outside the hook).
    fn own_report(
        &self,
        outcome: &StepOutcome,
        checkpoint: bool,
        out: &mut dyn Write,
    ) -> io::Result<bool> {
        let _ = (outcome, checkpoint, out);
        Ok(false)
    }

    /// Called for each interim report before it is printed (on the collector thread, not on the
    /// hot path): add workload metrics to `sample` (they go to intervals.csv) and return the line
    /// to print instead of the default `[ Ns ] thds: … eps: …` line, if the test has its own
    /// (memory's `[ 1s ] X MiB/sec`, fileio's reads/writes/fsyncs line). An empty line prints
    /// nothing: the workload printed its report itself (a Lua `report_intermediate` hook).
    fn interim(&self, sample: &mut IntervalSample) -> Option<String> {
        let _ = sample;
        None
    }

    /// Called once after the workers have finished, before the report: add workload metrics
    /// (memory's MiB/s, fileio's operation rates) to `outcome`. Also called for each checkpoint
    /// report.
    fn finish_outcome(&self, outcome: &mut StepOutcome) {
        let _ = outcome;
    }

    /// Restart the workload's own counters (bytes moved, file operations…): called at the end of
    /// `warmup_time` and after each checkpoint report, on the collector thread, while workers
    /// run (so counters must be atomics or otherwise safe to reset concurrently).
    fn reset_counters(&self) {}

    /// The workload's SQL statement counts since the run started (warmup included, never
    /// restarted by [`Workload::reset_counters`]), read without locks on the collector thread
    /// for [`LiveSample`]s; `None` (the default) for workloads that run no SQL. `transactions`
    /// is left 0: the driver fills in its events.
    fn sql_totals(&self) -> Option<SqlCounters> {
        None
    }

    /// The global `events` cap this workload honours, given the configured one. Memory returns
    /// 0: sysbench forces `--events` to 0 there and each thread stops on its own share.
    fn events_limit(&self, configured: u64) -> u64 {
        configured
    }

    /// sysbench's `prewarm` command (OLTP on MySQL): load the data into the server's caches.
    fn prewarm(&self, out: &mut dyn Write, stop: &AtomicBool) -> Result<(), EngineError> {
        let _ = (out, stop);
        Err(EngineError::Failed(
            "this test does not implement the 'prewarm' command".into(),
        ))
    }

    /// The `check` step: verify the data after a dataset's runs (custom workloads'
    /// `[[checks]]`). An error names the check, its query and the values found.
    fn check(&self, out: &mut dyn Write, stop: &AtomicBool) -> Result<(), EngineError> {
        let _ = (out, stop);
        Err(EngineError::Failed("this workload has no checks".into()))
    }

    /// A command of the workload's own besides prepare/run/cleanup/prewarm/check (a sysbench
    /// Lua script's `sysbench.cmdline.commands` entry, run as a plan step or by
    /// `sbsuite sysbench SCRIPT NAME`).
    fn command(
        &self,
        name: &str,
        out: &mut dyn Write,
        stop: &AtomicBool,
    ) -> Result<(), EngineError> {
        let _ = (out, stop);
        Err(EngineError::Failed(format!(
            "this workload has no command `{name}`"
        )))
    }

    /// `[suite] dataset = "existing"`: before anything runs, the data the runs read is there
    /// (the OLTP tables with their rows, a custom workload's tables, fileio's files), or the
    /// error names what is missing and the fix (#26). Workloads whose data sbsuite cannot know
    /// (a Lua script's) keep this no-op: their runs say what they miss.
    fn check_existing(&self) -> Result<(), EngineError> {
        Ok(())
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

    /// Runs this worker's events until the loop says to stop. The default runs one
    /// [`Worker::event`] per [`EventLoop::more_events`]; a worker with a loop of its own (a Lua
    /// script's `thread_run`) drives the [`EventLoop`] itself. An error fails the run.
    fn run_loop(&mut self, lp: &mut EventLoop<'_>) -> Result<(), EngineError> {
        while lp.more_events()? {
            lp.event_start();
            let result = self.event();
            let idle = self.idle_ns();
            if !lp.event_done(result, idle)? {
                break;
            }
        }
        Ok(())
    }

    /// Called once after the worker's last event (sysbench's `thread_done`), inside total time.
    fn finish(&mut self) -> Result<(), EngineError> {
        Ok(())
    }

    /// Nanoseconds of the event just run that were deliberate waiting (a custom workload's
    /// keying and think times): the driver leaves them out of the event's latency. Called after
    /// every event; a worker that waits returns what it waited since the last call.
    fn idle_ns(&mut self) -> u64 {
        0
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

/// sysbench's event queue size for `rate`.
pub const RATE_QUEUE_SLOTS: usize = 131_072;

/// The event queue size of a run started on this thread: [`RATE_QUEUE_SLOTS`], or in unit
/// tests the small size a test sets, so that it overflows whatever the machine's load.
fn rate_queue_slots() -> usize {
    #[cfg(test)]
    if let Some(slots) = tests::QUEUE_SLOTS.get() {
        return slots;
    }
    RATE_QUEUE_SLOTS
}

/// How often the collector forwards the stop flag and re-checks its schedule at most.
const POLL: Duration = Duration::from_millis(20);

/// What a worker thread returns.
type WorkerResult = Result<(WorkerStats, Exit), EngineError>;

/// Why a worker left its loop.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Exit {
    TimeLimit,
    EventLimit,
    Exhausted,
    Interrupted,
    Aborted,
}

/// Keeps a value alone on its (pair of) cache lines.
#[repr(align(128))]
struct CacheLine<T>(T);

/// The `rate` event queue: intended start times, oldest first.
struct RateQueue {
    queue: Mutex<VecDeque<Instant>>,
    /// [`RATE_QUEUE_SLOTS`] (smaller in tests).
    capacity: usize,
    cv: Condvar,
    closed: AtomicBool,
    /// Arrivals not queued because the queue was full.
    dropped: AtomicU64,
    /// Set by the generator when an arrival was dropped under [`RateOverflow::Fatal`].
    overflowed: AtomicBool,
    /// Events being executed (the interim `concurrency`).
    in_flight: AtomicUsize,
}

enum Ticket {
    Start(Instant),
    Closed,
    Wait,
}

impl RateQueue {
    fn new(capacity: usize) -> Self {
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
    fn push(&self, at: Instant) -> bool {
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
    fn pop(&self) -> Ticket {
        let mut q = self.lock();
        loop {
            if let Some(at) = q.pop_front() {
                self.in_flight.fetch_add(1, Ordering::Relaxed);
                return Ticket::Start(at);
            }
            if self.closed.load(Ordering::Acquire) {
                return Ticket::Closed;
            }
            let (guard, timeout) = self
                .cv
                .wait_timeout(q, Duration::from_millis(10))
                .unwrap_or_else(|e| e.into_inner());
            q = guard;
            if timeout.timed_out() && q.is_empty() {
                return Ticket::Wait;
            }
        }
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let _q = self.lock();
        self.cv.notify_all();
    }

    fn len(&self) -> usize {
        self.lock().len()
    }
}

/// State shared by the collector, the workers and the rate generator for one run.
struct Shared {
    cfg: RunConfig,
    slots: Box<[IntervalSlot]>,
    /// Checkpoint hand-overs, one per worker: statistics of the period that just ended.
    mailboxes: Box<[Mutex<Option<WorkerStats>>]>,
    /// Workers that finished their initialisation (successfully or not).
    ready: AtomicUsize,
    /// The start gate: opened once, after `start` is set.
    gate: Mutex<bool>,
    gate_cv: Condvar,
    start: OnceLock<Instant>,
    running: AtomicUsize,
    /// The `events` cap counter, written by every worker per event: on its own cache lines so
    /// that it does not slow down the reads of the flags next to it.
    issued: CacheLine<AtomicU64>,
    /// Bumped at warmup end (to 1) and at each checkpoint.
    epoch: AtomicU64,
    /// Internal stop: a worker failed, the report could not be written, or forced shutdown.
    abort: AtomicBool,
    /// The caller's stop flag, as forwarded by the collector.
    interrupt: AtomicBool,
    /// The workers' connections and Lua states: stopped with `abort` and `interrupt`, so that
    /// a worker leaves its event at the next statement; cancelled (server statements, Lua
    /// hooks) and then severed by a forced shutdown ([`stop_stuck`]).
    scope: Scope,
    /// The first worker that failed while nothing was stopping: its error is the run's, not
    /// the "step is stopping" of the workers its failure stopped (`usize::MAX`: none).
    first_failed: AtomicUsize,
    queue: Option<RateQueue>,
    collector: Thread,
}

impl Shared {
    /// Stops the run from inside: every worker leaves at its next check or statement.
    fn abort(&self) {
        self.abort.store(true, Ordering::Relaxed);
        self.scope.stop();
    }

    /// Worker `id` failed: the run stops, and the first failure that was not the stop's own
    /// doing is the one the run reports.
    fn failed(&self, id: usize) {
        if !self.scope.stopping() {
            let _ = self.first_failed.compare_exchange(
                usize::MAX,
                id,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
        self.abort();
    }

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

    fn warmup(&self) -> Duration {
        self.cfg.warmup.unwrap_or(Duration::ZERO)
    }

    /// The end of the measured run, if time-limited.
    fn deadline(&self, start: Instant) -> Option<Instant> {
        self.cfg
            .time
            .and_then(|t| start.checked_add(self.warmup().checked_add(t)?))
    }

    fn stopping(&self) -> bool {
        self.interrupt.load(Ordering::Relaxed) || self.abort.load(Ordering::Relaxed)
    }
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Marks the worker finished however it leaves (return, error, panic) and wakes the collector
/// when it was the last one.
struct FinishGuard<'s> {
    shared: &'s Shared,
    id: usize,
}

impl Drop for FinishGuard<'_> {
    fn drop(&mut self) {
        if thread::panicking() {
            self.shared.abort();
        }
        self.shared.slots[self.id].mark_finished(self.shared.elapsed_ns());
        if self.shared.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.shared.collector.unpark();
        }
    }
}

fn worker_main(shared: &Shared, workload: &dyn Workload, id: usize) -> WorkerResult {
    let _guard = FinishGuard { shared, id };
    // The workload sees global thread ids: this process's shard of a multi-client step runs
    // ids `thread_offset..` (`RunConfig::shard`), slots and mailboxes stay local.
    let global = shared.cfg.global_id(id);
    let init = catch_unwind(AssertUnwindSafe(|| {
        workload.new_worker(global, &shared.scope)
    }))
    .unwrap_or_else(|_| {
        Err(EngineError::Failed(format!(
            "worker {global} panicked while starting"
        )))
    })
    .and_then(|w| new_stats().map(|s| (w, s)));
    if init.is_err() {
        shared.failed(id);
    }
    if shared.ready.fetch_add(1, Ordering::AcqRel) + 1 == shared.cfg.threads {
        shared.collector.unpark();
    }
    shared.wait_for_gate();
    let (mut worker, stats) = init?;
    let Some(&start) = shared.start.get() else {
        return Err(EngineError::Failed("the run clock was not started".into()));
    };
    let mut lp = EventLoop {
        shared,
        id,
        stats,
        epoch: 0,
        // With a warmup, epoch 0 is the warmup: unmeasured and uncapped.
        first_measured: u64::from(shared.cfg.warmup.is_some()),
        carried_events: 0,
        carried_ns: 0,
        // A time limit beyond what `Instant` can represent is no limit.
        deadline: shared.deadline(start),
        now: Instant::now(),
        t0: None,
        ticket: false,
        exit: None,
    };
    if let Err(e) = worker.run_loop(&mut lp) {
        shared.failed(id);
        return Err(e);
    }
    lp.release_ticket();
    let exit = lp.exit.take().unwrap_or(Exit::Exhausted);
    worker.finish()?;
    Ok((lp.stats, exit))
}

fn new_stats() -> Result<WorkerStats, EngineError> {
    WorkerStats::new().map_err(|e| EngineError::Failed(e.to_string()))
}

/// One worker's event loop as the driver runs it: limits, the rate queue, checkpoints and the
/// timing of each event. [`Worker::run_loop`]'s default calls [`Worker::event`] between
/// [`EventLoop::more_events`] and [`EventLoop::event_done`]; a worker that runs its own loop
/// (a sysbench Lua script's `thread_run`, through `sb_more_events`, `sb_event_start` and
/// `sb_event_stop`) calls [`EventLoop::more_events`], [`EventLoop::event_start`] and
/// [`EventLoop::event_stop`] itself.
pub struct EventLoop<'s> {
    shared: &'s Shared,
    id: usize,
    stats: WorkerStats,
    epoch: u64,
    first_measured: u64,
    /// Events and busy time of the periods already handed over: the slot's totals never
    /// restart.
    carried_events: u64,
    carried_ns: u64,
    deadline: Option<Instant>,
    now: Instant,
    /// The start of the event under way: its rate ticket's intended start, or the moment of
    /// [`EventLoop::event_start`].
    t0: Option<Instant>,
    /// A rate ticket is taken and not yet given back.
    ticket: bool,
    exit: Option<Exit>,
}

impl EventLoop<'_> {
    /// Whether the worker may run one more event (sysbench's `sb_more_events`): false once a
    /// limit is reached or the run stops, and from then on. With `rate` it waits for the next
    /// arrival, whose intended time becomes the event's start.
    pub fn more_events(&mut self) -> Result<bool, EngineError> {
        if self.exit.is_some() {
            return Ok(false);
        }
        self.release_ticket();
        let shared = self.shared;
        let exit = loop {
            if self.deadline.is_some_and(|d| self.now >= d) {
                break Exit::TimeLimit;
            }
            if shared.interrupt.load(Ordering::Relaxed) {
                break Exit::Interrupted;
            }
            if shared.abort.load(Ordering::Relaxed) {
                break Exit::Aborted;
            }
            let e = shared.epoch.load(Ordering::Acquire);
            if e != self.epoch {
                let old = std::mem::replace(&mut self.stats, new_stats()?);
                self.carried_events += old.events;
                self.carried_ns = self.carried_ns.saturating_add(old.busy_ns);
                if self.epoch >= self.first_measured {
                    let mut mailbox = shared.mailboxes[self.id]
                        .lock()
                        .unwrap_or_else(|p| p.into_inner());
                    match mailbox.as_mut() {
                        Some(late) => late.absorb(&old),
                        None => *mailbox = Some(old),
                    }
                }
                self.epoch = e;
            }
            self.t0 = match &shared.queue {
                None => None,
                Some(q) => match q.pop() {
                    Ticket::Start(at) => {
                        self.ticket = true;
                        Some(at)
                    }
                    Ticket::Closed if shared.interrupt.load(Ordering::Relaxed) => {
                        break Exit::Interrupted;
                    }
                    Ticket::Closed if shared.abort.load(Ordering::Relaxed) => break Exit::Aborted,
                    Ticket::Closed => break Exit::TimeLimit,
                    Ticket::Wait => {
                        self.now = Instant::now();
                        continue;
                    }
                },
            };
            let cap = shared.cfg.events;
            if cap > 0
                && self.epoch >= self.first_measured
                && shared.issued.0.fetch_add(1, Ordering::Relaxed) >= cap
            {
                self.release_ticket();
                break Exit::EventLimit;
            }
            return Ok(true);
        };
        self.exit = Some(exit);
        Ok(false)
    }

    /// Starts the event's clock (sysbench's `sb_event_start`), unless a rate ticket already
    /// set it to the arrival's intended time.
    pub fn event_start(&mut self) {
        if self.t0.is_none() {
            self.t0 = Some(Instant::now());
        }
    }

    /// Counts the event and records its latency less `idle_ns` of deliberate waiting
    /// (sysbench's `sb_event_stop`).
    pub fn event_stop(&mut self, idle_ns: u64) {
        let t1 = Instant::now();
        self.release_ticket();
        let t0 = self.t0.take().unwrap_or(t1);
        let ns = duration_ns(t1.saturating_duration_since(t0)).saturating_sub(idle_ns);
        self.stats.record(ns);
        self.shared.slots[self.id].publish_totals(
            self.carried_events + self.stats.events,
            self.carried_ns.saturating_add(self.stats.busy_ns),
            ns,
        );
        self.now = t1;
    }

    /// The worker has no more work (sysbench's truthy `event` return): this thread ends, its
    /// event uncounted; a stop request under way makes it an interrupted end.
    pub fn exhausted(&mut self) {
        self.release_ticket();
        self.t0 = None;
        if self.exit.is_none() {
            self.exit = Some(if self.shared.interrupt.load(Ordering::Relaxed) {
                Exit::Interrupted
            } else {
                Exit::Exhausted
            });
        }
    }

    /// Handles what [`Worker::event`] returned: `Ok(true)` to go on.
    pub fn event_done(&mut self, result: EventResult, idle_ns: u64) -> Result<bool, EngineError> {
        match result {
            EventResult::Done => {
                self.event_stop(idle_ns);
                Ok(true)
            }
            // A worker that gave up because the run was asked to stop (a transaction re-run
            // after ignored errors) ends with the stop, not with its work done.
            EventResult::Exhausted => {
                self.exhausted();
                Ok(false)
            }
            EventResult::Fatal(e) => {
                self.release_ticket();
                Err(e)
            }
        }
    }

    fn release_ticket(&mut self) {
        if std::mem::take(&mut self.ticket)
            && let Some(q) = &self.shared.queue
        {
            q.in_flight.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// The `rate` generator: Poisson arrivals on an absolute schedule until the run ends.
fn generate(shared: &Shared, start: Instant) {
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

    /// Snapshots all slots: leaves the latency counts of the interval since the previous
    /// snapshot in `scratch` and returns (events in total, events in the interval, the
    /// interval's seconds, now).
    fn advance(&mut self, slots: &[IntervalSlot]) -> (u64, u64, f64, Instant) {
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
        std::mem::swap(&mut self.prev_hist, &mut self.cur_hist);
        let delta = events.saturating_sub(self.prev_events);
        self.prev_events = events;
        self.prev_at = now;
        (events, delta, secs, now)
    }

    /// Snapshots all slots and returns the interval since the previous snapshot; `origin` is
    /// the instant the `[ Ns ]` stamps count from.
    fn sample(
        &mut self,
        slots: &[IntervalSlot],
        origin: Instant,
        threads: usize,
        percentile: f64,
        buckets: bool,
    ) -> IntervalSample {
        let (_, delta, secs, now) = self.advance(slots);
        IntervalSample {
            time_s: now.saturating_duration_since(origin).as_secs_f64(),
            threads,
            eps: console::per_second(delta, secs),
            lat_pct_ms: log_histogram::percentile_ms(&self.scratch, percentile),
            lat_buckets: if buckets {
                self.scratch.clone()
            } else {
                Vec::new()
            },
            ..IntervalSample::default()
        }
    }
}

/// The collector's [`LiveSample`] schedule: its own [`Sampler`] (so the interim lines' rates
/// are untouched) and the totals at the start of the measured part.
struct Live {
    every: Duration,
    tick: u32,
    sampler: Sampler,
    base_events: u64,
    base_sql: Option<SqlCounters>,
}

impl Live {
    /// Counts from the start of the run (no warmup): every event is measured.
    fn from_start(every: Duration, start: Instant) -> Self {
        Live {
            every,
            tick: 1,
            sampler: Sampler::new(start),
            base_events: 0,
            base_sql: None,
        }
    }

    /// Counts from now, the end of the warmup: what the workers did so far is the base.
    fn from_now(every: Duration, slots: &[IntervalSlot], workload: &dyn Workload) -> Self {
        let mut sampler = Sampler::new(Instant::now());
        let (base_events, ..) = sampler.advance(slots);
        Live {
            every,
            tick: 1,
            sampler,
            base_events,
            base_sql: workload.sql_totals(),
        }
    }

    fn due(&self, origin: Instant) -> Option<Instant> {
        origin.checked_add(self.every.saturating_mul(self.tick))
    }

    /// Takes a live sample and hands it to `observer`.
    fn take(
        &mut self,
        shared: &Shared,
        workload: &dyn Workload,
        start: Instant,
        origin: Instant,
        observer: &mut dyn StepObserver,
    ) {
        let (events, delta, secs, now) = self.sampler.advance(&shared.slots);
        let at_ns = duration_ns(now.saturating_duration_since(start));
        let events = events.saturating_sub(self.base_events);
        let sql = workload.sql_totals().map(|t| {
            let b = self.base_sql.unwrap_or_default();
            SqlCounters {
                transactions: events,
                reads: t.reads.saturating_sub(b.reads),
                writes: t.writes.saturating_sub(b.writes),
                other: t.other.saturating_sub(b.other),
                errors: t.errors.saturating_sub(b.errors),
                reconnects: t.reconnects.saturating_sub(b.reconnects),
            }
        });
        observer.live(&LiveSample {
            elapsed_s: now.saturating_duration_since(origin).as_secs_f64(),
            threads: shared.slots.iter().filter(|s| s.running_at(at_ns)).count(),
            events,
            eps: console::per_second(delta, secs),
            sql,
            latency_buckets: &self.sampler.scratch,
        });
        self.tick = self.tick.saturating_add(1);
    }
}

/// Builds the outcome of a period from workers' statistics (final report and checkpoints).
fn build_outcome(
    workers: &[WorkerStats],
    seconds: f64,
    percentile: f64,
    interrupted: bool,
) -> Result<StepOutcome, EngineError> {
    let histogram = stats::merge(workers).map_err(EngineError::Failed)?;
    let latency = stats::latency_summary(workers, &histogram, percentile);
    let fairness = stats::fairness(workers);
    Ok(StepOutcome {
        error_codes: Default::default(),
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
        cut_short: None,
        metrics: Vec::new(),
        transactions: Vec::new(),
        per_thread: workers.iter().map(|w| (w.events, w.busy_ns)).collect(),
    })
}

/// Joins every worker still held when dropped, so that no worker outlives the borrow of the
/// workload unless [`Joiner::abandon`] was called by [`run_owned`]'s path.
struct Joiner {
    handles: Vec<Option<JoinHandle<WorkerResult>>>,
}

impl Joiner {
    fn join(&mut self, id: usize) -> Option<WorkerResult> {
        let h = self.handles.get_mut(id)?.take()?;
        Some(
            h.join()
                .unwrap_or_else(|_| Err(EngineError::Failed(format!("worker {id} panicked")))),
        )
    }

    /// Detaches worker `id`. Only sound when the workload it borrows is leaked.
    fn abandon(&mut self, id: usize) {
        if let Some(h) = self.handles.get_mut(id) {
            drop(h.take());
        }
    }
}

impl Drop for Joiner {
    fn drop(&mut self) {
        for id in 0..self.handles.len() {
            let _ = self.join(id);
        }
    }
}

/// Runs `workload` to its limits, printing sysbench's banner, interim lines and final report.
/// After a forced shutdown this waits for the stuck workers (it cannot abandon a borrowed
/// workload); [`run_owned`] abandons them instead.
pub fn run(
    workload: &dyn Workload,
    cfg: &RunConfig,
    out: &mut dyn Write,
    on_interval: &mut dyn StepObserver,
    stop: &AtomicBool,
) -> Result<StepOutcome, EngineError> {
    run_inner(workload, false, cfg, out, on_interval, stop, &mut || Ok(())).0
}

/// [`run`] for an owned workload: after a forced shutdown, workers stuck in an event are
/// abandoned (left running, detached) and the workload is leaked so they stay sound.
pub fn run_owned(
    workload: Box<dyn Workload>,
    cfg: &RunConfig,
    out: &mut dyn Write,
    on_interval: &mut dyn StepObserver,
    stop: &AtomicBool,
) -> Result<StepOutcome, EngineError> {
    run_owned_gated(workload, cfg, out, on_interval, stop, &mut || Ok(()))
}

/// [`run_owned`] with a start gate: `gate` is called on this thread once every worker is
/// created (connected, statements prepared) and `Threads started!` is out, before the clock
/// starts; the run starts when it returns. A multi-client agent reports ready there and waits
/// for the coordinator's `go` (#17). An error aborts the run before any event.
pub fn run_owned_gated(
    workload: Box<dyn Workload>,
    cfg: &RunConfig,
    out: &mut dyn Write,
    on_interval: &mut dyn StepObserver,
    stop: &AtomicBool,
    gate: &mut dyn FnMut() -> Result<(), EngineError>,
) -> Result<StepOutcome, EngineError> {
    let ptr = Box::into_raw(workload);
    // SAFETY: `ptr` comes from `Box::into_raw` and is freed below only when no worker was
    // abandoned, i.e. after every worker thread was joined.
    let (result, abandoned) = run_inner(unsafe { &*ptr }, true, cfg, out, on_interval, stop, gate);
    if !abandoned {
        // SAFETY: as above; no reference to the workload is alive any more.
        drop(unsafe { Box::from_raw(ptr) });
    }
    result
}

/// What the collector saw end the run.
struct Collected {
    /// Start of the period the final report covers (warmup end or last checkpoint).
    period_start: Instant,
    /// `Some(unfinished)` after a forced shutdown.
    forced: Option<usize>,
}

fn run_inner(
    workload: &dyn Workload,
    may_abandon: bool,
    cfg: &RunConfig,
    out: &mut dyn Write,
    on_interval: &mut dyn StepObserver,
    stop: &AtomicBool,
    gate: &mut dyn FnMut() -> Result<(), EngineError>,
) -> (Result<StepOutcome, EngineError>, bool) {
    let io_err = |e: io::Error| EngineError::Failed(format!("writing the report failed: {e}"));
    if cfg.threads == 0 {
        return (
            Err(EngineError::Failed(
                "option `threads` must be at least 1".into(),
            )),
            false,
        );
    }
    let banner = (|| {
        if cfg.time.is_none() && cfg.events == 0 {
            console::write_endless_warning(out)?;
        }
        console::write_banner(out)?;
        out.flush()
    })();
    if let Err(e) = banner {
        return (Err(io_err(e)), false);
    }
    // Between the banner and the options, where sysbench runs a Lua script's `init()`.
    if let Err(e) = workload.start() {
        return (Err(e), false);
    }
    let preamble = (|| {
        console::write_run_options(out, cfg)?;
        if cfg.verbosity >= 4 {
            workload.info_banner(out)?;
        }
        workload.banner(out)?;
        out.flush()
    })();
    if let Err(e) = preamble {
        return (Err(io_err(e)), false);
    }
    if let Err(e) = workload.after_banner() {
        return (Err(e), false);
    }
    if let Err(e) = console::write_workers_starting(out).and_then(|()| out.flush()) {
        return (Err(io_err(e)), false);
    }
    // After the preamble, as sysbench fails a run it cannot start (no server, no tables, no
    // files) after `Initializing worker threads...`: a failed step's log reads like sysbench's.
    if let Err(e) = workload.before_run() {
        return (Err(e), false);
    }
    // The endless-run warning above follows the user's settings, as in sysbench; the cap the
    // workers honour is the workload's (memory ignores `events`).
    let cfg = &RunConfig {
        events: workload.events_limit(cfg.events),
        ..cfg.clone()
    };

    let shared = Arc::new(Shared {
        cfg: cfg.clone(),
        slots: (0..cfg.threads).map(|_| IntervalSlot::new()).collect(),
        mailboxes: (0..cfg.threads).map(|_| Mutex::new(None)).collect(),
        ready: AtomicUsize::new(0),
        gate: Mutex::new(false),
        gate_cv: Condvar::new(),
        start: OnceLock::new(),
        running: AtomicUsize::new(cfg.threads),
        issued: CacheLine(AtomicU64::new(0)),
        epoch: AtomicU64::new(0),
        abort: AtomicBool::new(false),
        interrupt: AtomicBool::new(false),
        scope: Scope::new(),
        first_failed: AtomicUsize::new(usize::MAX),
        queue: (cfg.rate > 0).then(|| RateQueue::new(rate_queue_slots())),
        collector: thread::current(),
    });

    let mut joiner = Joiner {
        handles: Vec::with_capacity(cfg.threads),
    };
    let mut spawn_error = None;
    for id in 0..cfg.threads {
        let mine = Arc::clone(&shared);
        let mut builder = thread::Builder::new().name(format!("sbsuite-worker-{id}"));
        if cfg.stack_size > 0 {
            builder = builder.stack_size(cfg.stack_size);
        }
        // SAFETY: the closure borrows `workload`. Every handle is joined before this function
        // returns (`Joiner` joins on drop, also on early return or panic), except handles
        // passed to `Joiner::abandon`, which happens only when `may_abandon`: then `run_owned`
        // leaks the workload, so the borrow stays valid for the rest of the process.
        let spawned = unsafe { builder.spawn_unchecked(move || worker_main(&mine, workload, id)) };
        match spawned {
            Ok(h) => joiner.handles.push(Some(h)),
            Err(e) => {
                spawn_error = Some(e);
                break;
            }
        }
    }
    if spawn_error.is_some() {
        // Release the workers already waiting into an aborted run.
        shared.abort();
        let missing = cfg.threads - joiner.handles.len();
        shared.running.fetch_sub(missing, Ordering::AcqRel);
    } else {
        // A worker may loop in its setup (a script's `thread_init`): a stop request stops it
        // as it would stop an event, and the run never starts.
        let mut stopping_since = None;
        while shared.ready.load(Ordering::Acquire) < cfg.threads {
            if stop.load(Ordering::Relaxed) {
                let since = *stopping_since.get_or_insert_with(Instant::now);
                shared.interrupt.store(true, Ordering::Relaxed);
                shared.abort();
                if since.elapsed() < CANCEL_GRACE {
                    shared.scope.cancel();
                } else {
                    shared.scope.sever();
                }
            }
            thread::park_timeout(Duration::from_millis(100));
        }
    }
    // A worker that failed to start aborted the run before the clock: sysbench then prints
    // its `thread_init` failure without `Threads started!`.
    let init_failed = shared.abort.load(Ordering::Relaxed);
    // `Threads started!` goes out before the gate opens, so that nothing a worker prints (a
    // Lua script's `print` in its first event) can come before it.
    let mut started_error = None;
    if spawn_error.is_none() && !init_failed {
        let started = (|| {
            if cfg.verbosity >= 5 {
                console::write_debug_started(out, cfg.threads)?;
            }
            console::write_threads_started(out)?;
            out.flush()
        })();
        if let Err(e) = started {
            started_error = Some(io_err(e));
            shared.abort();
        }
        if started_error.is_none()
            && let Err(e) = gate()
        {
            started_error = Some(e);
            shared.abort();
        }
    }
    let start = Instant::now();
    let _ = shared.start.set(start);
    shared.open_gate();
    let generator = shared.queue.as_ref().and_then(|_| {
        let mine = Arc::clone(&shared);
        thread::Builder::new()
            .name("sbsuite-rate".into())
            .spawn(move || generate(&mine, start))
            .ok()
    });
    if generator.is_none()
        && let Some(q) = &shared.queue
    {
        spawn_error.get_or_insert_with(|| io::Error::other("the rate generator did not start"));
        shared.abort();
        q.close();
    }
    let mut write_error = spawn_error
        .map(|e| EngineError::Failed(format!("could not start worker threads: {e}")))
        .or(started_error);
    let mut collected = Collected {
        period_start: start,
        forced: None,
    };
    // Even when the rate generator has already stopped the run (a full queue under
    // `RateOverflow::Fatal`, possibly before this thread got here), the collector runs and
    // returns once the aborted workers are gone (`Threads started!` is already out, before
    // the FATAL, as sysbench prints them).
    if write_error.is_none() && !init_failed {
        match collect(&shared, workload, start, out, on_interval, stop) {
            Ok(c) => collected = c,
            Err(e) => {
                write_error = Some(io_err(e));
                shared.abort();
            }
        }
    }
    if stop.load(Ordering::Relaxed) {
        shared.interrupt.store(true, Ordering::Relaxed);
        shared.scope.stop();
    }
    let mut abandoned = false;
    let mut unstoppable = 0;
    let mut results = Vec::with_capacity(cfg.threads);
    // A forced shutdown's report covers the run up to the forced moment, not the time it
    // takes to stop the stuck workers.
    let mut ended = None;
    if collected.forced.is_some() {
        ended = Some(Instant::now());
        shared.abort();
        unstoppable = stop_stuck(&shared);
        for (id, slot) in shared.slots.iter().enumerate() {
            if slot.running_at(u64::MAX) {
                if may_abandon {
                    joiner.abandon(id);
                    abandoned = true;
                }
            } else if let Some(r) = joiner.join(id) {
                results.push((id, r));
            }
        }
    } else {
        for id in 0..joiner.handles.len() {
            if let Some(r) = joiner.join(id) {
                results.push((id, r));
            }
        }
    }
    if let Some(g) = generator {
        // It only holds the `Arc`; with `abort`, `interrupt` or the deadline it ends within
        // one `POLL`.
        if let Some(q) = &shared.queue {
            q.close();
        }
        let _ = g.join();
    }
    let seconds = ended
        .unwrap_or_else(Instant::now)
        .saturating_duration_since(collected.period_start)
        .as_secs_f64();
    if let Some(e) = write_error {
        return (Err(e), abandoned);
    }
    if shared
        .queue
        .as_ref()
        .is_some_and(|q| q.overflowed.load(Ordering::Relaxed))
    {
        return (Err(EngineError::RateOverflow), abandoned);
    }
    let result = finish(
        &shared,
        workload,
        results,
        seconds,
        collected.forced,
        out,
        &io_err,
    )
    .map(|mut outcome| {
        if let (Some(unfinished), Some(delay)) = (collected.forced, cfg.forced_shutdown) {
            outcome.cut_short = Some(cut_short_reason(unfinished, delay, stop));
        }
        outcome
    });
    if unstoppable > 0 {
        let during = if stop.load(Ordering::Relaxed) {
            "the stop request"
        } else {
            "the time limit"
        };
        return (
            Err(EngineError::Unstoppable(format!(
                "{unstoppable} worker thread(s) of this step did not stop within {:.0} s of the \
                 forced shutdown after {during}, although their statements were cancelled on the \
                 server and their connections closed: they are stuck outside sbsuite's reach \
                 (in a C library a script called through the FFI, or a Lua loop LuaJIT was not \
                 built to interrupt), so nothing more is measured in this process",
                (CANCEL_GRACE + SEVER_GRACE).as_secs_f64()
            ))),
            abandoned,
        );
    }
    // A borrowed workload: the stuck workers are joined (waited for) when `joiner` drops.
    drop(joiner);
    (result, abandoned)
}

/// The row's `error` after a forced shutdown: what happened and what it means for the numbers.
fn cut_short_reason(unfinished: usize, delay: Duration, stop: &AtomicBool) -> String {
    let after = if stop.load(Ordering::Relaxed) {
        "the stop request"
    } else {
        "the time limit"
    };
    format!(
        "forced_shutdown: {unfinished} worker(s) still in an event {:.1} s after {after} \
         were stopped, their statements cancelled on the server (a stuck server, query or \
         script?); their unfinished events are not counted",
        delay.as_secs_f64()
    )
}

/// How long a forced shutdown waits for the workers once their statements are cancelled (and
/// the Lua states stopped), re-sending the cancels every [`RECANCEL`], before it closes their
/// connections.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// How long it then waits for the workers whose connections it closed, before it gives up.
const SEVER_GRACE: Duration = Duration::from_secs(2);

/// How often the cancels go out again while workers are still busy: a cancel that reached
/// the server just before the statement it was meant for is lost (MySQL's `KILL QUERY` of a
/// session between two statements ends nothing).
const RECANCEL: Duration = Duration::from_millis(250);

/// Stops the workers still in an event after a forced shutdown (the run is aborted already):
/// cancels their statements on the server and stops their Lua states, waits, closes their
/// connections, waits again. Returns how many are still running: workers that could not be
/// stopped at all.
fn stop_stuck(shared: &Shared) -> usize {
    let running = || shared.running.load(Ordering::Acquire);
    let wait = |grace: Duration, recancel: bool| {
        let until = Instant::now() + grace;
        let mut next = Instant::now() + RECANCEL;
        loop {
            let now = Instant::now();
            if running() == 0 || now >= until {
                return;
            }
            if recancel && now >= next {
                shared.scope.cancel();
                next = now + RECANCEL;
            }
            // The last worker to leave unparks this (the collector's) thread.
            thread::park_timeout((until - now).min(POLL));
        }
    };
    shared.scope.cancel();
    wait(CANCEL_GRACE, true);
    if running() > 0 {
        shared.scope.sever();
        wait(SEVER_GRACE, false);
    }
    running()
}

/// The final report: histogram, workload block, general report, debug and warning lines.
fn finish(
    shared: &Shared,
    workload: &dyn Workload,
    results: Vec<(usize, WorkerResult)>,
    seconds: f64,
    forced: Option<usize>,
    out: &mut dyn Write,
    io_err: &dyn Fn(io::Error) -> EngineError,
) -> Result<StepOutcome, EngineError> {
    let cfg = &shared.cfg;
    let mut workers = Vec::with_capacity(results.len());
    let mut interrupted = forced.is_some();
    let (mut time_exits, mut event_exits) = (0, 0);
    let first = shared.first_failed.load(Ordering::Acquire);
    let mut results = results;
    if let Some(at) = results
        .iter()
        .position(|(id, r)| *id == first && r.is_err())
    {
        let (_, r) = results.swap_remove(at);
        r?;
    }
    for (_, r) in results {
        let (stats, exit) = r?;
        interrupted |= exit == Exit::Interrupted;
        time_exits += usize::from(exit == Exit::TimeLimit);
        event_exits += usize::from(exit == Exit::EventLimit);
        workers.push(stats);
    }
    // Hand-overs that a checkpoint did not wait for belong to the final period.
    for (w, mailbox) in workers.iter_mut().zip(shared.mailboxes.iter()) {
        if let Some(late) = mailbox.lock().unwrap_or_else(|e| e.into_inner()).take() {
            w.absorb(&late);
        }
    }
    let mut outcome = build_outcome(&workers, seconds, cfg.percentile, interrupted)?;
    workload.finish_outcome(&mut outcome);
    if let Some(q) = &shared.queue {
        let dropped = q.dropped.load(Ordering::Relaxed);
        outcome.metrics.push((super::DROPPED, dropped as f64));
    }
    let report = (|| {
        if cfg.verbosity >= 4 {
            console::write_debug_done(out, time_exits, event_exits)?;
        }
        if cfg.histogram {
            console::write_histogram(out, &log_histogram::from_hdr(&outcome.histogram))?;
        }
        let own = workload.own_report(&outcome, false, out)?;
        if !own {
            workload.report(&outcome, out)?;
            console::write_final_report(out, &outcome)?;
        }
        if let Some(unfinished) = forced {
            writeln!(
                out,
                "Number of unfinished transactions on forced shutdown: {unfinished}"
            )?;
            writeln!(out)?;
        }
        if cfg.debug {
            console::write_debug_per_thread(out, &workers)?;
        }
        if !own {
            workload.report_after(&outcome, out)?;
        }
        if let Some(q) = &shared.queue {
            let dropped = q.dropped.load(Ordering::Relaxed);
            if dropped > 0 {
                writeln!(
                    out,
                    "WARNING: {dropped} events were not run: the event queue ({} slots) was \
                     full, the workers could not keep up with --rate={}",
                    q.capacity, cfg.rate
                )?;
                writeln!(out)?;
            }
        }
        out.flush()
    })();
    report.map_err(io_err)?;
    Ok(outcome)
}

/// The collector loop: interim lines, warmup end, checkpoints and forced shutdown, each on an
/// absolute schedule, until every worker is gone.
fn collect(
    shared: &Shared,
    workload: &dyn Workload,
    start: Instant,
    out: &mut dyn Write,
    on_interval: &mut dyn StepObserver,
    stop: &AtomicBool,
) -> io::Result<Collected> {
    let cfg = &shared.cfg;
    let warmup = shared.warmup();
    // The origin of every measured schedule; falls back to `start` if unrepresentable.
    let origin = start.checked_add(warmup).unwrap_or(start);
    let mut measuring = warmup.is_zero();
    let mut period_start = start;
    let mut interval = cfg.report_interval;
    let mut sampler = Sampler::new(start);
    let mut tick: u32 = 1;
    let live_every = on_interval.live_every().filter(|d| !d.is_zero());
    let mut live = live_every
        .filter(|_| measuring)
        .map(|every| Live::from_start(every, start));
    let mut checkpoints = cfg
        .checkpoints
        .iter()
        .map(|&s| Duration::from_secs(s))
        // A checkpoint at (or after) the time limit would only repeat the final report.
        .filter(|&s| cfg.time.is_none_or(|t| s < t))
        .peekable();
    let mut forced_at = shared
        .deadline(start)
        .zip(cfg.forced_shutdown)
        .and_then(|(d, f)| d.checked_add(f));
    let mut forced_by_stop = false;
    loop {
        if stop.load(Ordering::Relaxed) && !shared.interrupt.swap(true, Ordering::Relaxed) {
            shared.scope.stop();
            shared.collector.unpark();
            // A stop request gives the workers the same grace as the time limit does: a worker
            // stuck in an event must not hold a stopping suite until the time limit.
            if let Some(at) = cfg
                .forced_shutdown
                .and_then(|f| Instant::now().checked_add(f))
                && forced_at.is_none_or(|d| at < d)
            {
                forced_at = Some(at);
                forced_by_stop = true;
            }
        }
        // Read before the clock: a tick due now is still reported if the workers left at (or
        // after) it, which is how a tick falling on the time limit gets its line.
        let finished = shared.running.load(Ordering::Acquire) == 0;
        let now = Instant::now();
        if !measuring {
            if now >= origin {
                shared.epoch.store(1, Ordering::Release);
                measuring = true;
                period_start = Instant::now();
                sampler = Sampler::new(period_start);
                let _ = sampler.sample(&shared.slots, origin, 0, 0.0, false); // baseline
                workload.reset_counters();
                live = live_every.map(|every| Live::from_now(every, &shared.slots, workload));
                continue;
            }
            if finished {
                break;
            }
            thread::park_timeout((origin - now).min(POLL));
            continue;
        }
        let tick_due = interval.and_then(|every| {
            let offset = every.saturating_mul(tick);
            if cfg.time.is_some_and(|t| offset > t) {
                return None; // only the final partial interval is left
            }
            origin.checked_add(offset)
        });
        if tick_due.is_none() {
            interval = None;
        }
        let checkpoint_due = checkpoints.peek().and_then(|&s| origin.checked_add(s));
        let forced_due = forced_at.filter(|_| !finished);
        let live_due = live
            .as_ref()
            .and_then(|l| l.due(origin))
            .filter(|_| !finished);
        if let Some(due) = tick_due
            && now >= due
        {
            let offset_ns = duration_ns(warmup + interval.unwrap_or_default().saturating_mul(tick));
            let threads = shared
                .slots
                .iter()
                .filter(|s| s.running_at(offset_ns))
                .count();
            if threads == 0 {
                interval = None; // the run ended before this tick
                continue;
            }
            let mut sample = sampler.sample(
                &shared.slots,
                origin,
                threads,
                cfg.percentile,
                cfg.shard.is_some(),
            );
            if let Some(q) = &shared.queue {
                sample.metrics.push(("queue_length", q.len() as f64));
                sample
                    .metrics
                    .push(("concurrency", q.in_flight.load(Ordering::Relaxed) as f64));
                sample
                    .metrics
                    .push((super::DROPPED, q.dropped.load(Ordering::Relaxed) as f64));
            }
            match workload.interim(&mut sample) {
                Some(line) if line.is_empty() => {}
                Some(line) => writeln!(out, "{line}")?,
                None => writeln!(out, "{}", console::interval_line(&sample, cfg.percentile))?,
            }
            if shared.queue.is_some() {
                writeln!(out, "{}", console::queue_line(&sample))?;
            }
            out.flush()?;
            on_interval.interval(&sample);
            tick = tick.saturating_add(1);
            continue;
        }
        if let Some(due) = live_due
            && now >= due
            && let Some(l) = live.as_mut()
        {
            l.take(shared, workload, start, origin, on_interval);
            continue;
        }
        if let Some(due) = checkpoint_due
            && now >= due
        {
            checkpoints.next();
            if finished {
                continue; // nobody to hand over: the final report covers it
            }
            checkpoint(shared, workload, origin, &mut period_start, out)?;
            continue;
        }
        if let Some(due) = forced_due
            && now >= due
        {
            if forced_by_stop {
                writeln!(
                    out,
                    "Stop requested and workers still busy after --forced-shutdown, forcing shutdown..."
                )?;
            } else {
                writeln!(out, "The --max-time limit has expired, forcing shutdown...")?;
            }
            out.flush()?;
            shared.abort();
            if let Some(q) = &shared.queue {
                q.close();
            }
            return Ok(Collected {
                period_start,
                forced: Some(shared.running.load(Ordering::Acquire)),
            });
        }
        if finished {
            // The last partial second, so that watchers end on the run's full counts.
            if let Some(l) = live.as_mut() {
                l.take(shared, workload, start, origin, on_interval);
            }
            break;
        }
        let next = [tick_due, checkpoint_due, forced_due, live_due]
            .into_iter()
            .flatten()
            .min();
        let wait = next.map_or(POLL, |d| d.saturating_duration_since(now).min(POLL));
        thread::park_timeout(wait);
    }
    Ok(Collected {
        period_start,
        forced: None,
    })
}

/// One checkpoint: ask the workers for their statistics, print the full report, restart.
fn checkpoint(
    shared: &Shared,
    workload: &dyn Workload,
    origin: Instant,
    period_start: &mut Instant,
    out: &mut dyn Write,
) -> io::Result<()> {
    let cfg = &shared.cfg;
    let at = Instant::now();
    shared.epoch.fetch_add(1, Ordering::AcqRel);
    // Wait for the hand-overs of the workers still running (a worker in a long event hands
    // over when it ends); give up after a second so a stuck worker cannot stall the schedule:
    // its statistics then go to the next report.
    let give_up = at + Duration::from_secs(1);
    let mut taken: Vec<Option<WorkerStats>> = (0..cfg.threads).map(|_| None).collect();
    loop {
        let mut pending = false;
        for (id, (mailbox, slot)) in shared.mailboxes.iter().zip(shared.slots.iter()).enumerate() {
            if taken[id].is_some() {
                continue;
            }
            let got = mailbox.lock().unwrap_or_else(|e| e.into_inner()).take();
            if got.is_some() {
                taken[id] = got;
            } else if slot.running_at(u64::MAX) {
                pending = true;
            }
        }
        if !pending || Instant::now() >= give_up || shared.stopping() {
            break;
        }
        thread::park_timeout(Duration::from_millis(1));
    }
    let workers: Vec<WorkerStats> = taken.into_iter().flatten().collect();
    let seconds = at.saturating_duration_since(*period_start).as_secs_f64();
    let mut outcome = build_outcome(&workers, seconds, cfg.percentile, false)
        .map_err(|e| io::Error::other(e.to_string()))?;
    workload.finish_outcome(&mut outcome);
    writeln!(
        out,
        "[ {:.0}s ] Checkpoint report:",
        at.saturating_duration_since(origin).as_secs_f64()
    )?;
    if !workload.own_report(&outcome, true, out)? {
        workload.report(&outcome, out)?;
        console::write_final_report(out, &outcome)?;
    }
    out.flush()?;
    workload.reset_counters();
    *period_start = at;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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

        fn new_worker<'a>(
            &'a self,
            id: usize,
            _stop: &'a Scope,
        ) -> Result<Box<dyn Worker + 'a>, EngineError> {
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
            ..RunConfig::default()
        }
    }

    fn run_fake(
        fake: &Fake,
        cfg: &RunConfig,
        stop: &AtomicBool,
    ) -> (StepOutcome, Vec<IntervalSample>, String) {
        let mut out = Vec::new();
        let mut samples = Vec::new();
        let outcome = run(
            fake,
            cfg,
            &mut out,
            &mut |s: &IntervalSample| samples.push(s.clone()),
            stop,
        )
        .expect("run succeeds");
        (outcome, samples, String::from_utf8(out).expect("utf8"))
    }

    const SPIN: Duration = Duration::from_micros(20);

    /// A shard runs its own threads with global ids (#17): worker `g` of the whole step runs
    /// `g` events here, so the totals say which ids ran; the gate opens the run once.
    #[test]
    fn a_shard_runs_global_thread_ids_behind_its_gate() {
        let fake = Box::new(Fake {
            spin: Duration::ZERO,
            per_thread: Some((0..12).collect()),
            until: None,
        });
        let cfg = RunConfig {
            shard: Some(crate::engine::Shard {
                index: 1,
                count: 3,
                total_threads: 12,
                thread_offset: 4,
            }),
            ..config(4, 0, 0, 0)
        };
        let stop = AtomicBool::new(false);
        let mut gates = 0;
        let mut out = Vec::new();
        let o = run_owned_gated(
            fake,
            &cfg,
            &mut out,
            &mut |_: &IntervalSample| {},
            &stop,
            &mut || {
                gates += 1;
                Ok(())
            },
        )
        .expect("runs");
        assert_eq!(gates, 1);
        assert_eq!(o.events, 4 + 5 + 6 + 7);
        let mut per: Vec<u64> = o.per_thread.iter().map(|&(e, _)| e).collect();
        per.sort_unstable();
        assert_eq!(per, [4, 5, 6, 7]);

        // A gate that fails aborts the run before any event.
        let fake = Box::new(Fake {
            spin: Duration::ZERO,
            per_thread: Some((0..12).collect()),
            until: None,
        });
        let e = run_owned_gated(
            fake,
            &cfg,
            &mut Vec::new(),
            &mut |_: &IntervalSample| {},
            &stop,
            &mut || Err(EngineError::Failed("no go".into())),
        )
        .expect_err("aborted");
        assert_eq!(e.to_string(), "no go");
    }

    thread_local! {
        /// [`super::rate_queue_slots`] of runs this test thread starts, when set.
        pub(super) static QUEUE_SLOTS: std::cell::Cell<Option<usize>> =
            const { std::cell::Cell::new(None) };
    }

    /// Live samples (for `--metrics`) on their own schedule: no interim line is printed for
    /// them, their counts never go back, and the last one carries the run's full count.
    #[test]
    fn live_samples_grow_to_the_outcome_without_printing() {
        struct Watcher(Vec<(u64, u64)>);
        impl StepObserver for Watcher {
            fn interval(&mut self, _: &IntervalSample) {
                panic!("no report_interval was set");
            }
            fn live_every(&self) -> Option<Duration> {
                Some(Duration::from_millis(1))
            }
            fn live(&mut self, s: &LiveSample<'_>) {
                assert!(s.sql.is_none(), "the fake runs no SQL");
                self.0.push((s.events, s.latency_buckets.iter().sum()));
            }
        }
        let fake = Fake {
            spin: SPIN,
            per_thread: None,
            until: None,
        };
        let mut w = Watcher(Vec::new());
        let mut out = Vec::new();
        let cfg = config(2, 3000, 0, 0);
        let o = run(&fake, &cfg, &mut out, &mut w, &AtomicBool::new(false)).expect("runs");
        let text = String::from_utf8(out).expect("utf8");
        assert!(!text.contains("[ "), "{text}");
        assert!(w.0.windows(2).all(|p| p[0].0 <= p[1].0), "{:?}", w.0);
        assert_eq!(w.0.last().map(|l| l.0), Some(o.events));
        let recorded: u64 = w.0.iter().map(|l| l.1).sum();
        assert_eq!(
            recorded, o.events,
            "each event's latency is in exactly one sample"
        );
    }

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
        // 600 ms / 200 ms: ticks at 200, 400 and exactly at the limit → 3 full intervals. The
        // count does not depend on the machine's load: a tick is reported when a worker was still
        // running at its nominal offset, however late the collector wakes, and every worker runs
        // until the limit. The upper bound on the time only catches a run that ignores the limit.
        let (o, samples, text) = run_fake(&fake, &config(2, 0, 600, 200), &AtomicBool::new(false));
        assert!(o.seconds >= 0.6 && o.seconds < 5.0, "{}", o.seconds);
        assert!(!o.interrupted);
        assert_eq!(samples.len(), 3, "{samples:?}");
        assert!(samples.iter().all(|s| s.threads == 2));
        // A starved worker pair may see no event in one interval on a loaded machine; every
        // interval empty would mean the samples do not count events.
        assert!(samples.iter().any(|s| s.eps > 0.0), "{samples:?}");
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
        // Workers end by themselves 500 ms after their first event with a 200 ms interval:
        // at least two full intervals (three when a worker started late on a loaded machine),
        // then a partial one that is not reported. The run's own time bounds the full
        // intervals it can have had; a line for the partial one would exceed it.
        let (o, samples, _) = run_fake(&fake, &config(2, 0, 0, 200), &AtomicBool::new(false));
        assert!(o.events > 0 && !o.interrupted);
        let full = (o.seconds / 0.2).floor() as usize;
        assert!(
            samples.len() >= 2 && samples.len() <= full,
            "{} lines for {} s: {samples:?}",
            samples.len(),
            o.seconds
        );
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
        // The run is endless without the flag: any end at all is the flag's doing; the bound
        // only turns a hang into a failure.
        assert!(o.seconds < 10.0, "{}", o.seconds);
        assert!(text.starts_with(
            "WARNING: Both event and time limits are disabled, running an endless test\nsysbench 1.0.20-compatible (sbsuite "
        ));
        assert!(text.contains("General statistics:"), "final report printed");
    }

    /// A worker that waits inside its event until the stop flag it was given is set (as OLTP's
    /// reconnect loop does), bounded so that a broken hand-over fails instead of hanging.
    struct Waiting;

    struct WaitingWorker<'a> {
        stop: &'a Scope,
    }

    impl Worker for WaitingWorker<'_> {
        fn event(&mut self) -> EventResult {
            let t = Instant::now();
            while !self.stop.stopping() && t.elapsed() < Duration::from_secs(10) {
                thread::sleep(Duration::from_millis(1));
            }
            EventResult::Done
        }
    }

    impl Workload for Waiting {
        fn banner(&self, _: &mut dyn Write) -> io::Result<()> {
            Ok(())
        }

        fn new_worker<'a>(
            &'a self,
            _: usize,
            stop: &'a Scope,
        ) -> Result<Box<dyn Worker + 'a>, EngineError> {
            Ok(Box::new(WaitingWorker { stop }))
        }
    }

    #[test]
    fn workers_see_the_callers_stop_inside_an_event() {
        let stop = AtomicBool::new(false);
        let started = Instant::now();
        let o = thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(Duration::from_millis(200));
                stop.store(true, Ordering::Relaxed);
            });
            run(
                &Waiting,
                &config(2, 0, 0, 0),
                &mut Vec::new(),
                &mut |_: &IntervalSample| {},
                &stop,
            )
            .expect("run succeeds")
        });
        assert!(o.interrupted);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the worker waited its 10 s"
        );
    }

    #[test]
    fn fairness_from_known_per_thread_counts() {
        let fake = Fake {
            spin: SPIN,
            per_thread: Some(vec![10, 20, 30]),
            until: None,
        };
        // A 60 s time limit: ending anywhere near it would mean the workers' end was missed.
        let (o, _, text) = run_fake(&fake, &config(3, 0, 60_000, 0), &AtomicBool::new(false));
        assert_eq!(o.events, 60);
        assert!(!o.interrupted);
        assert_eq!(o.fairness_events_avg, 20.0);
        assert!((o.fairness_events_stddev - (200.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert!((o.latency.sum_ms / 1e3 / 3.0 - o.fairness_time_avg).abs() < 1e-9);
        assert!(o.fairness_time_stddev > 0.0);
        assert!(
            o.seconds < 30.0,
            "ended when all workers were exhausted: {}",
            o.seconds
        );
        assert!(text.contains("    events (avg/stddev):           20.0000/8.16\n"));
    }

    fn spinning() -> Fake {
        Fake {
            spin: SPIN,
            per_thread: None,
            until: None,
        }
    }

    #[test]
    fn warmup_is_excluded_and_uncapped() {
        // A warmup much longer than the measured window, so that counting it (in the time or in
        // the stamps) is told apart from a late wake-up on a loaded machine.
        let cfg = RunConfig {
            warmup: Some(Duration::from_millis(1000)),
            ..config(2, 0, 300, 100)
        };
        let t = Instant::now();
        let (o, samples, _) = run_fake(&spinning(), &cfg, &AtomicBool::new(false));
        let wall = t.elapsed().as_secs_f64();
        assert!(wall >= 1.3, "warmup extends the run: {wall}");
        // The measured time is the 300 ms window, not the warmup: it leaves the warmup's
        // second of the wall time out (the upper bound catches a run ignoring its limit). The
        // window ends on its nominal schedule while its start waits for the collector to wake
        // after the warmup, so a loaded machine measures a little less than 300 ms.
        assert!(o.seconds >= 0.15 && o.seconds < 5.0, "{}", o.seconds);
        assert!(o.seconds + 0.99 <= wall, "{} of {wall}", o.seconds);
        // Only measured ticks (exactly 3: see the time-limit test), stamped from the end of the
        // warmup: the first one is ≈ 0.1 s, and ≥ 1.1 s if stamped from the start.
        assert_eq!(samples.len(), 3, "{samples:?}");
        assert!(samples[0].time_s < 0.9, "{samples:?}");
        // (The first interval may be nearly empty on a loaded machine: its baseline is taken
        // when the collector wakes for the warmup end, its tick is on the nominal schedule.)
        assert!(samples.iter().skip(1).all(|s| s.eps > 0.0), "{samples:?}");
        assert_eq!(o.histogram.len(), o.events);

        // The events cap starts after the warmup: exactly 50 measured events.
        let cfg = RunConfig {
            warmup: Some(Duration::from_millis(200)),
            ..config(2, 50, 0, 0)
        };
        let t = Instant::now();
        let (o, _, _) = run_fake(&spinning(), &cfg, &AtomicBool::new(false));
        assert!(t.elapsed() >= Duration::from_millis(200));
        assert_eq!(o.events, 50);
    }

    #[test]
    fn rate_paces_events_and_counts_queue_time() {
        let cfg = RunConfig {
            rate: 500,
            seed: 11,
            ..config(2, 0, 1000, 500)
        };
        let (o, samples, text) = run_fake(&spinning(), &cfg, &AtomicBool::new(false));
        // ≈ 500 seeded arrivals in the second: never more (the pacing), and fewer only by those
        // a starved worker pair could not take before the limit on a loaded machine.
        assert!((250..=575).contains(&o.events), "{}", o.events);
        assert_eq!(samples.len(), 2);
        assert!(samples.iter().all(
            |s| crate::engine::metric(&s.metrics, "queue_length").is_some()
                && crate::engine::metric(&s.metrics, "concurrency").is_some()
        ));
        assert!(
            text.contains("Target transaction rate: 500/sec\n"),
            "{text}"
        );
        assert!(text.contains("] queue length: "), "{text}");

        // Overloaded: one worker needs 5 ms per event at 400 arrivals/s. Latency counts the
        // wait in the queue, so it grows far beyond the 5 ms of execution.
        let slow = Fake {
            spin: Duration::from_millis(5),
            per_thread: None,
            until: None,
        };
        let cfg = RunConfig {
            rate: 400,
            seed: 3,
            ..config(1, 0, 500, 0)
        };
        let (o, _, _) = run_fake(&slow, &cfg, &AtomicBool::new(false));
        assert!(o.events <= 110, "{}", o.events);
        assert!(o.latency.max_ms > 100.0, "{:?}", o.latency);
        assert!(o.latency.sum_ms > o.fairness_time_avg * 1e3 * 0.99);
    }

    /// A workload whose events never end in time, deaf to every stop (a thread stuck in
    /// foreign code).
    struct Stuck;

    struct StuckWorker;

    impl Worker for StuckWorker {
        fn event(&mut self) -> EventResult {
            thread::sleep(Duration::from_secs(30));
            EventResult::Done
        }
    }

    impl Workload for Stuck {
        fn banner(&self, _: &mut dyn Write) -> io::Result<()> {
            Ok(())
        }

        fn new_worker<'a>(
            &'a self,
            _: usize,
            _stop: &'a Scope,
        ) -> Result<Box<dyn Worker + 'a>, EngineError> {
            Ok(Box::new(StuckWorker))
        }
    }

    /// Worker 1 cannot start (sysbench's failing `thread_init`).
    struct FailsToStart;

    impl Workload for FailsToStart {
        fn banner(&self, _: &mut dyn Write) -> io::Result<()> {
            Ok(())
        }

        fn new_worker<'a>(
            &'a self,
            id: usize,
            _stop: &'a Scope,
        ) -> Result<Box<dyn Worker + 'a>, EngineError> {
            match id {
                1 => Err(EngineError::Failed("worker 1 cannot start".into())),
                _ => Ok(Box::new(StuckWorker)),
            }
        }
    }

    /// Worker 1 cannot start; worker 0 is still starting and fails because of that (its
    /// connection refuses statements once the step stops).
    struct FailsThenStopped;

    impl Workload for FailsThenStopped {
        fn banner(&self, _: &mut dyn Write) -> io::Result<()> {
            Ok(())
        }

        fn new_worker<'a>(
            &'a self,
            id: usize,
            stop: &'a Scope,
        ) -> Result<Box<dyn Worker + 'a>, EngineError> {
            if id == 1 {
                return Err(EngineError::Failed("worker 1: no such socket".into()));
            }
            let t = Instant::now();
            while !stop.stopping() && t.elapsed() < Duration::from_secs(10) {
                thread::sleep(Duration::from_millis(1));
            }
            Err(EngineError::Failed("worker 0: the step is stopping".into()))
        }
    }

    #[test]
    fn the_first_failure_is_the_runs_error_not_the_stop_it_caused() {
        let err = run(
            &FailsThenStopped,
            &config(2, 0, 60_000, 0),
            &mut Vec::new(),
            &mut |_: &IntervalSample| {},
            &AtomicBool::new(false),
        )
        .expect_err("worker 1 fails");
        assert_eq!(err.to_string(), "worker 1: no such socket");
    }

    #[test]
    fn a_worker_that_cannot_start_fails_the_run_before_threads_started() {
        let mut out = Vec::new();
        let err = run(
            &FailsToStart,
            &config(2, 0, 60_000, 0),
            &mut out,
            &mut |_: &IntervalSample| {},
            &AtomicBool::new(false),
        )
        .expect_err("worker 1 fails");
        assert_eq!(err.to_string(), "worker 1 cannot start");
        let text = String::from_utf8(out).expect("utf8");
        assert!(
            text.ends_with("Initializing worker threads...\n\n"),
            "{text}"
        );
    }

    #[test]
    fn forced_shutdown_gives_up_workers_that_nothing_stops_and_says_so() {
        let cfg = RunConfig {
            forced_shutdown: Some(Duration::from_millis(100)),
            ..config(2, 0, 200, 0)
        };
        let mut out = Vec::new();
        let t = Instant::now();
        let e = run_owned(
            Box::new(Stuck),
            &cfg,
            &mut out,
            &mut |_: &IntervalSample| {},
            &AtomicBool::new(false),
        )
        .expect_err("the workers cannot be stopped");
        // The workers are stuck for 30 s; the shutdown is due at 300 ms, and the cancels and
        // closed connections get CANCEL_GRACE + SEVER_GRACE.
        let bound = Duration::from_millis(300) + CANCEL_GRACE + SEVER_GRACE;
        assert!(
            t.elapsed() < bound + Duration::from_secs(2),
            "{:?}",
            t.elapsed()
        );
        assert!(t.elapsed() >= bound, "waited the graces: {:?}", t.elapsed());
        assert!(matches!(e, EngineError::Unstoppable(_)), "{e}");
        assert!(
            e.to_string()
                .starts_with("2 worker thread(s) of this step did not stop"),
            "{e}"
        );
        let text = String::from_utf8(out).expect("utf8");
        assert!(text.contains("The --max-time limit has expired, forcing shutdown...\n"));
        assert!(text.contains("Number of unfinished transactions on forced shutdown: 2\n"));
    }

    /// Workers that enter one event each and stay in it until the run's scope cancels them
    /// (a statement a server runs until `KILL QUERY`, a Lua loop until its hook), counting
    /// their entries in `entered`.
    struct Hung {
        entered: AtomicUsize,
    }

    struct HungWorker<'a> {
        cancelled: Arc<AtomicBool>,
        entered: &'a AtomicUsize,
        _registration: crate::db::interrupt::Registration,
    }

    impl Worker for HungWorker<'_> {
        fn event(&mut self) -> EventResult {
            self.entered.fetch_add(1, Ordering::SeqCst);
            let t = Instant::now();
            while !self.cancelled.load(Ordering::SeqCst) && t.elapsed() < Duration::from_secs(120) {
                thread::sleep(Duration::from_millis(2));
            }
            // What a cancelled statement is: an error, during a stop.
            EventResult::Exhausted
        }
    }

    impl Workload for Hung {
        fn banner(&self, _: &mut dyn Write) -> io::Result<()> {
            Ok(())
        }

        fn new_worker<'a>(
            &'a self,
            _: usize,
            stop: &'a Scope,
        ) -> Result<Box<dyn Worker + 'a>, EngineError> {
            let cancelled = Arc::new(AtomicBool::new(false));
            let flag = cancelled.clone();
            let registration = stop.register(crate::db::interrupt::Parts::cancel(
                crate::db::interrupt::Interrupter::new(move || flag.store(true, Ordering::SeqCst)),
            ));
            Ok(Box::new(HungWorker {
                cancelled,
                entered: &self.entered,
                _registration: registration,
            }))
        }
    }

    #[test]
    fn forced_shutdown_cancels_what_the_workers_wait_for_and_joins_them() {
        let cfg = RunConfig {
            forced_shutdown: Some(Duration::from_millis(100)),
            ..config(2, 0, 200, 0)
        };
        let mut out = Vec::new();
        let t = Instant::now();
        let o = run_owned(
            Box::new(Hung {
                entered: AtomicUsize::new(0),
            }),
            &cfg,
            &mut out,
            &mut |_: &IntervalSample| {},
            &AtomicBool::new(false),
        )
        .expect("a report");
        // Cancelled at 300 ms, joined at once: no grace waited out.
        assert!(
            t.elapsed() < Duration::from_millis(300) + CANCEL_GRACE,
            "{:?}",
            t.elapsed()
        );
        assert!(o.interrupted);
        let text = String::from_utf8(out).expect("utf8");
        let forced = text
            .find("The --max-time limit has expired, forcing shutdown...\n")
            .expect("message");
        let report = text.find("General statistics:").expect("report");
        assert!(forced < report);
        assert!(text.ends_with("Number of unfinished transactions on forced shutdown: 2\n\n"));
        let why = o.cut_short.expect("the reason for the row");
        assert!(
            why.starts_with(
                "forced_shutdown: 2 worker(s) still in an event 0.1 s after the time limit were stopped"
            ),
            "{why}"
        );
        // The report covers the run up to the forced moment, not the stopping.
        assert!(o.seconds < 0.5, "{}", o.seconds);
    }

    #[test]
    fn a_stop_request_cancels_stuck_workers_after_forced_shutdown_not_at_the_time_limit() {
        let cfg = RunConfig {
            forced_shutdown: Some(Duration::from_millis(200)),
            ..config(2, 0, 3_600_000, 0)
        };
        let stop = Arc::new(AtomicBool::new(false));
        let hung = Box::new(Hung {
            entered: AtomicUsize::new(0),
        });
        let entered: *const AtomicUsize = &hung.entered;
        // SAFETY (test): the workload outlives the setter, which is joined before it drops.
        let entered = unsafe { &*entered };
        // The stop arrives once both workers are inside their event.
        let o = thread::scope(|s| {
            let setter = s.spawn(|| {
                while entered.load(Ordering::SeqCst) < 2 {
                    thread::sleep(Duration::from_millis(5));
                }
                stop.store(true, Ordering::SeqCst);
            });
            let mut out = Vec::new();
            let t = Instant::now();
            let o =
                run(&*hung, &cfg, &mut out, &mut |_: &IntervalSample| {}, &stop).expect("a report");
            setter.join().expect("setter");
            // Bound: far below the hour-long time limit and the workers' 120 s events.
            assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
            (o, String::from_utf8(out).expect("utf8"))
        });
        let (o, text) = o;
        assert!(o.interrupted);
        assert!(
            text.contains("Stop requested and workers still busy after --forced-shutdown, forcing shutdown...\n"),
            "{text}"
        );
        assert!(text.contains("Number of unfinished transactions on forced shutdown: 2\n"));
        let why = o.cut_short.expect("the reason");
        assert!(why.contains("0.2 s after the stop request"), "{why}");
    }

    #[test]
    fn a_rate_the_workers_cannot_keep_up_with_is_counted_or_fatal() {
        // One worker needing 5 ms per event against 10^8 arrivals/s: a queue of 4 slots fills
        // within the first event.
        QUEUE_SLOTS.set(Some(4));
        let slow = Fake {
            spin: Duration::from_millis(5),
            per_thread: None,
            until: None,
        };
        let cfg = RunConfig {
            rate: 100_000_000,
            seed: 5,
            ..config(1, 0, 300, 0)
        };
        let (o, _, text) = run_fake(&slow, &cfg, &AtomicBool::new(false));
        let dropped = crate::engine::metric(&o.metrics, crate::engine::DROPPED).expect("counted");
        assert!(dropped > 0.0, "{dropped}");
        assert!(
            text.contains(&format!("WARNING: {} events were not run", dropped as u64)),
            "{text}"
        );

        // sysbench's behaviour: the first dropped arrival ends the run, long before its hour,
        // with no report.
        let cfg = RunConfig {
            rate: 100_000_000,
            rate_overflow: RateOverflow::Fatal,
            ..config(1, 0, 3_600_000, 0)
        };
        let mut out = Vec::new();
        let err = run(
            &slow,
            &cfg,
            &mut out,
            &mut |_: &IntervalSample| {},
            &AtomicBool::new(false),
        )
        .expect_err("the queue overflows");
        assert!(matches!(err, EngineError::RateOverflow), "{err}");
        let text = String::from_utf8(out).expect("utf8");
        assert!(text.ends_with("Threads started!\n\n"), "{text}");

        // A rate the worker keeps up with drops nothing, and says so.
        let cfg = RunConfig {
            rate: 20,
            ..config(1, 0, 300, 0)
        };
        let (o, _, text) = run_fake(&spinning(), &cfg, &AtomicBool::new(false));
        assert_eq!(
            crate::engine::metric(&o.metrics, crate::engine::DROPPED),
            Some(0.0)
        );
        assert!(!text.contains("WARNING"), "{text}");
    }

    #[test]
    fn rate_queue_counts_what_it_cannot_hold() {
        let q = RateQueue::new(2);
        let t = Instant::now();
        let queued: Vec<bool> = (0..5)
            .map(|i| q.push(t + Duration::from_millis(i)))
            .collect();
        assert_eq!(queued, [true, true, false, false, false]);
        assert_eq!((q.len(), q.dropped.load(Ordering::Relaxed)), (2, 3));
        assert!(
            matches!(q.pop(), Ticket::Start(at) if at == t),
            "oldest first"
        );
        assert_eq!(q.in_flight.load(Ordering::Relaxed), 1);
        assert!(matches!(q.pop(), Ticket::Start(_)));
        assert!(
            matches!(q.pop(), Ticket::Wait),
            "empty: the worker re-checks its limits"
        );
        q.close();
        assert!(matches!(q.pop(), Ticket::Closed));
    }

    #[test]
    fn debug_and_histogram_lines() {
        let cfg = RunConfig {
            debug: true,
            verbosity: 5,
            histogram: true,
            ..config(2, 100, 0, 0)
        };
        let (o, _, text) = run_fake(&spinning(), &cfg, &AtomicBool::new(false));
        assert_eq!(o.events, 100);
        assert!(text.contains("DEBUG: Worker thread (#1) initialized\nThreads started!\n"));
        assert!(text.contains("Done.\n\nLatency histogram (values are in milliseconds)\n"));
        let counted: u64 = text
            .lines()
            .filter(|l| l.contains(" |"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum();
        assert_eq!(counted, 100);
        assert!(
            text.contains("\n \nGeneral statistics:"),
            "histogram right before the report"
        );
        assert!(text.contains("DEBUG: Verbose per-thread statistics:\n\nDEBUG:     thread #  0:"));
    }

    /// Each event spins [`SPIN`] and then sleeps `sleep`, reporting the sleep as idle time.
    struct Idle {
        sleep: Duration,
    }

    struct IdleWorker {
        sleep: Duration,
        idle: u64,
    }

    impl Worker for IdleWorker {
        fn event(&mut self) -> EventResult {
            let t = Instant::now();
            while t.elapsed() < SPIN {
                std::hint::spin_loop();
            }
            let slept = Instant::now();
            thread::sleep(self.sleep);
            self.idle += duration_ns(slept.elapsed());
            EventResult::Done
        }

        fn idle_ns(&mut self) -> u64 {
            std::mem::take(&mut self.idle)
        }
    }

    impl Workload for Idle {
        fn banner(&self, _: &mut dyn Write) -> io::Result<()> {
            Ok(())
        }

        fn new_worker<'a>(
            &'a self,
            _id: usize,
            _stop: &'a Scope,
        ) -> Result<Box<dyn Worker + 'a>, EngineError> {
            Ok(Box::new(IdleWorker {
                sleep: self.sleep,
                idle: 0,
            }))
        }

        fn report_after(&self, outcome: &StepOutcome, out: &mut dyn Write) -> io::Result<()> {
            writeln!(out, "After the report: {} events", outcome.events)
        }
    }

    #[test]
    fn idle_time_is_not_latency_and_text_follows_the_whole_report() {
        let idle = Idle {
            sleep: Duration::from_millis(30),
        };
        let mut out = Vec::new();
        let o = run(
            &idle,
            &config(2, 6, 0, 0),
            &mut out,
            &mut |_: &IntervalSample| {},
            &AtomicBool::new(false),
        )
        .expect("run succeeds");
        assert_eq!(o.events, 6);
        // Each event took over 30 ms of wall time, all but the spin of it idle.
        assert!(o.latency.max_ms < 25.0, "{:?}", o.latency);
        assert!(o.seconds >= 0.09, "{}", o.seconds);
        let text = String::from_utf8(out).expect("utf8");
        let fairness = text.find("Threads fairness:").expect("final report");
        assert!(
            fairness < text.find("After the report").expect("hook"),
            "{text}"
        );
        assert!(text.ends_with("After the report: 6 events\n"), "{text}");
    }
}
