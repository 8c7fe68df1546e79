//! The driver every workload runs on: N worker threads, sysbench's limits and general options,
//! interim reports and the final report.
//!
//! Shape, and why:
//!
//! * A workload is a [`Workload`] (shared, read-only during the run: options, banner, final
//!   block) that creates one [`Worker`] per thread (owned state: a connection, a buffer, an
//!   RNG). Workers are created *on their own thread* (sysbench's `thread_init`), so a worker
//!   needs no `Send` and may hold thread-bound handles. A workload seeds its generators with
//!   [`Rng::for_thread`]`(run.seed, id)` ([`RunConfig::seed`]). Its data commands (prepare,
//!   cleanup, checks, prewarm, its own commands) are a separate [`Admin`] it returns from
//!   [`Workload::admin`]: the driver never calls them, so the run hooks stay one list.
//! * Workers are named OS threads with `thread_stack_size` stacks (raised to at least
//!   [`super::config::MIN_STACK`]). All of them are created and ready before the clock starts,
//!   as sysbench starts its timer after every `thread_init`: a start barrier (a counter plus a
//!   condvar, so that a failed spawn can still release the workers already waiting).
//! * `client_threads` (#32): K carrier threads instead of one thread per worker, worker `id`
//!   on carrier `id % K`, each a coroutine ([`crate::db::mux`]): a wire socket that would
//!   block suspends it, and so do the waits of this loop (the start gate, a parked worker,
//!   a `rate` worker waiting for an arrival at its carrier's bell). Only workloads whose
//!   [`Workload::shares_threads`] says so run this way; a carrier is joined, or abandoned,
//!   with all of its workers.
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
//! * Open-loop accounting (#30): a worker notes the moment it takes a ticket, so each event
//!   of a rate run has three times: the latency (response time, from the intended start), its
//!   service time (from the take) and its schedule lag (intended start to the take), the
//!   latter two recorded into two more per-worker HDR histograms
//!   ([`crate::stats::OpenLoopStats`]) and merged like the latency's
//!   ([`StepOutcome::open_loop`]). The take costs no clock read of its own when the arrival
//!   was already queued: the worker takes it straight after its previous event, whose end it
//!   has just read (the loop's own overhead, well under a microsecond, counts as service);
//!   only a worker that waited for its arrival reads the clock when it wakes. With `latency_limit`, an event slower than the limit is
//!   counted late (one comparison per event, rate or not), and a ticket already later than
//!   the limit when taken is not run but counted skipped, and the next one taken (pgbench's
//!   `--latency-limit`): the [`super::LATE`] and [`super::SKIPPED`] metrics. Their report
//!   lines follow the final report, except in `sbsuite sysbench` ([`RateOverflow::Fatal`]),
//!   whose report keeps sysbench's shape.
//! * The calling thread is the collector: it sleeps to the next due moment (report tick,
//!   warmup end, checkpoint, forced shutdown) on an absolute schedule, and is unparked by the
//!   last worker to leave. A tick after the time limit, or one that no worker lived to see, is
//!   never printed: sysbench prints no line for a final partial interval.
//! * `warmup_time`: the run first goes N s unmeasured (no interim lines, no event cap), then
//!   every statistic restarts: the `[ Ns ]` stamps, checkpoints, the time limit and the total
//!   time all count from the end of the warmup.
//! * `warmup_time = "auto"` (#29): the same warmup, ended when the collector finds the
//!   start-up transient over: it samples the events per second, and at each 5 s boundary from
//!   20 s on runs MSER-5 on the series so far ([`crate::stats::steady::mser5`]); once the
//!   truncation point lies inside the first half of the series (Hoad, Robinson & Davies'
//!   sequential rule) the warmup ends *then*, through the same epoch as a fixed warmup. So
//!   everything measured (events, the HDR histogram, the workload's and the SQL counters,
//!   intervals, live samples) excludes the transient by construction, with no after-the-fact
//!   subtraction: the per-interval histograms are sysbench's log buckets, too coarse to
//!   recompute exact percentiles from, and the workloads' own counters cannot be rewound. The
//!   price: the warmup runs on past the truncation point until MSER-5 is sure, typically about
//!   twice the transient (at least 20 s), and at most `max(time, 60 s)` (600 s without a time
//!   limit), after which measuring starts anyway with a warning. Workers learn the time limit
//!   when the epoch turns (`Shared::measured_from`). Not with checkpoints (an error: they
//!   count from the warmup's end) nor with several clients (each would end its own warmup).
//! * Every run's measured period is also sampled per second ([`report`]'s `Series`, from the
//!   slots' totals: nothing on the hot path), for its stationarity verdict
//!   ([`crate::stats::steady::trend`]) in [`StepOutcome::steady`]; checkpoints restart it.
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

use std::io::{self, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use super::config::RunConfig;
use super::phases::Timeline;
use super::{
    EngineError, IntervalSample, LiveSample, SqlCounters, StepObserver, StepOutcome, console,
};
pub use crate::db::interrupt::Scope;
use crate::stats::{IntervalSlot, WorkerStats};

mod rate;
mod report;
mod stop;

use self::rate::{RateQueue, Ticket, generate};
use self::report::{Collected, collect, finish};
use self::stop::{CANCEL_GRACE, Joiner, SEVER_GRACE, cut_short_reason, stop_stuck};

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

    /// Called once on the calling thread when every worker has left (or was abandoned after a
    /// forced shutdown), whatever ended the run, before the final report: release what
    /// [`Workload::before_run`] set up for the whole run and measure it for the report (the
    /// idle connections of `idle_connections`, checked alive unless the run was `stopped` by
    /// a stop request). A workload that is dropped without it must release the same.
    fn after_run(&self, stopped: bool) {
        let _ = stopped;
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

    /// Whether several of this workload's workers may share one OS thread as coroutines
    /// (`client_threads`, [`crate::db::mux`]): only when every wait of a worker is on a socket
    /// of sbsuite's own wire clients or one of the driver's. `Err`: why not.
    fn shares_threads(&self) -> Result<(), String> {
        Err(
            "its workers wait in ways that would block the thread they share (only the OLTP \
             and custom workloads on MySQL or PostgreSQL run several workers per thread): drop \
             `client_threads`"
                .into(),
        )
    }

    /// Creates the state of worker `id` (0-based). Runs on that worker's thread (with
    /// `client_threads`, as its coroutine on its carrier thread) before the clock
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

    /// Phase `index` of the run's timeline begins (#30: `[[phases]]`), called on the collector
    /// thread at each boundary while workers run: a workload whose events depend on the phase
    /// (a custom workload's transaction mix) switches to it.
    fn phase_began(&self, index: usize) {
        let _ = index;
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

    /// The workload's data commands (prepare, cleanup, checks, prewarm, its own commands),
    /// which no run calls. The default: a workload without data, whose prepare and cleanup do
    /// nothing and which has no other command.
    fn admin(&self) -> &dyn Admin {
        &NoAdmin
    }
}

/// The commands of a workload besides its runs: what `prepare`, `cleanup`, the `check` and
/// command steps, `prewarm` and `dataset = "existing"` do. Separate from [`Workload`] because
/// the driver never calls them: a run step reads [`Workload`]'s hooks only, the other steps
/// build the workload and call these.
pub trait Admin {
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

/// The [`Admin`] of a workload without data.
struct NoAdmin;

impl Admin for NoAdmin {}

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
    /// The start of the measured run (the warmup's end): set by the collector, read by the
    /// workers for their time limit when `warmup_time = "auto"` ends the warmup at a moment
    /// only the collector knows.
    measured_from: OnceLock<Instant>,
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
    /// The run's phases (#30): which workers run and whether arrivals drive them.
    timeline: Option<Timeline>,
    /// The phase under way, as the collector starts each one ([`report`]): workers read it
    /// per event (a relaxed-cost load) rather than their clocks, so that the thread count
    /// changes in the same moment as the statistics are cut.
    phase: AtomicUsize,
    /// `max_threads` (#30): the workers that run events (ids below it); the others wait,
    /// connected, until the rate generator lets them in ([`rate::grow`]).
    active: AtomicUsize,
    /// The workers' threads, to wake the ones let in.
    threads: OnceLock<Box<[Thread]>>,
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
        // A worker on a carrier must not block its siblings' thread: it looks every
        // millisecond (the clock has started by then; the first look after it is ≤ 1 ms late).
        if crate::db::mux::active() {
            while !*self.gate.lock().unwrap_or_else(|e| e.into_inner()) {
                crate::db::mux::sleep(Duration::from_millis(1));
            }
            return;
        }
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

    /// The end of the measured run, if time-limited. With `warmup_time = "auto"`, `None` until
    /// the collector has ended the warmup.
    fn deadline(&self, start: Instant) -> Option<Instant> {
        if self.cfg.warmup_auto {
            let from = self.measured_from.get()?;
            return self.cfg.time.and_then(|t| from.checked_add(t));
        }
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

/// A parked worker's wait (not let in by `max_threads` or its phase): woken early by the
/// collector's unpark in a thread of its own; on a carrier it looks again every millisecond.
fn pause() {
    if crate::db::mux::active() {
        crate::db::mux::sleep(Duration::from_millis(1));
    } else {
        thread::park_timeout(POLL);
    }
}

/// What one OS thread of the run returns: its workers' results.
type ThreadResults = Vec<(usize, WorkerResult)>;

/// A carrier thread of `client_threads`: runs workers `ids` as coroutines ([`crate::db::mux`])
/// until every one has left.
fn carry(shared: &Shared, workload: &dyn Workload, ids: &[usize]) -> ThreadResults {
    let bodies: Vec<crate::db::mux::Body<'_, WorkerResult>> = ids
        .iter()
        .map(|&id| {
            Box::new(move || worker_main(shared, workload, id))
                as crate::db::mux::Body<'_, WorkerResult>
        })
        .collect();
    match crate::db::mux::run(bodies, shared.cfg.stack_size) {
        Ok(results) => ids
            .iter()
            .zip(results)
            .map(|(&id, r)| {
                let global = shared.cfg.global_id(id);
                (
                    id,
                    r.unwrap_or_else(|_| {
                        Err(EngineError::Failed(format!("worker {global} panicked")))
                    }),
                )
            })
            .collect(),
        Err(e) => ids
            .iter()
            .map(|&id| {
                (
                    id,
                    never_started(
                        shared,
                        id,
                        format!("could not start the workers' coroutines: {e}"),
                    ),
                )
            })
            .collect(),
    }
}

/// A worker whose thread could not run it: counted ready and finished, and failed.
fn never_started(shared: &Shared, id: usize, why: String) -> WorkerResult {
    let _guard = FinishGuard { shared, id };
    shared.failed(id);
    if shared.ready.fetch_add(1, Ordering::AcqRel) + 1 == shared.cfg.threads {
        shared.collector.unpark();
    }
    Err(EngineError::Failed(why))
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
    .and_then(|w| new_stats(&shared.cfg).map(|s| (w, s)));
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
        first_measured: u64::from(shared.cfg.warmup.is_some() || shared.cfg.warmup_auto),
        carried_events: 0,
        carried_ns: 0,
        // A time limit beyond what `Instant` can represent is no limit.
        deadline: shared.deadline(start),
        now: Instant::now(),
        t0: None,
        started: Instant::now(),
        late_after_ns: shared.cfg.latency_limit.map_or(u64::MAX, duration_ns),
        skip_after: shared.cfg.latency_limit.filter(|_| shared.queue.is_some()),
        ticket: false,
        exit: None,
        bell: None,
    };
    // On a carrier, a `rate` worker waits for arrivals at its carrier's bell.
    if let Some(q) = &shared.queue
        && let Some(bell) = crate::db::mux::bell()
    {
        q.add_bell(&bell);
        lp.bell = Some(bell);
    }
    if let Err(e) = worker.run_loop(&mut lp) {
        shared.failed(id);
        return Err(e);
    }
    lp.release_ticket();
    let exit = lp.exit.take().unwrap_or(Exit::Exhausted);
    worker.finish()?;
    Ok((lp.stats, exit))
}

/// A worker's statistics for a period: with the service time and schedule lag of a `rate` run.
fn new_stats(cfg: &RunConfig) -> Result<WorkerStats, EngineError> {
    if cfg.rate > 0 {
        WorkerStats::with_open_loop()
    } else {
        WorkerStats::new()
    }
    .map_err(|e| EngineError::Failed(e.to_string()))
}

/// Whether an arrival due at `intended` and taken at `now` is hopeless under `latency_limit`
/// (pgbench's rule for skipping): already later than the limit before it even starts, so it
/// could only be late; running it would only delay the arrivals behind it further.
fn hopeless(intended: Instant, now: Instant, skip_after: Option<Duration>) -> bool {
    skip_after.is_some_and(|limit| now.saturating_duration_since(intended) > limit)
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
    /// When the rate ticket under way was taken: the event's actual start, from which its
    /// service time counts (its schedule lag is from `t0` to here).
    started: Instant,
    /// `latency_limit` in ns (`u64::MAX`: none): a longer latency counts the event late.
    late_after_ns: u64,
    /// `latency_limit` of a `rate` run: a ticket taken later than this is skipped.
    skip_after: Option<Duration>,
    /// A rate ticket is taken and not yet given back.
    ticket: bool,
    exit: Option<Exit>,
    /// With `client_threads` and `rate`: the carrier's bell this worker waits at for arrivals
    /// ([`RateQueue::pop_carried`]).
    bell: Option<Arc<crate::db::mux::Bell>>,
}

impl EventLoop<'_> {
    /// The end of the measured run, when it is time-limited and known (with `warmup_time =
    /// "auto"`, once the warmup has ended).
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

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
                let old = std::mem::replace(&mut self.stats, new_stats(&shared.cfg)?);
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
                // `warmup_time = "auto"`: the time limit counts from the warmup's end, known now.
                if self.deadline.is_none()
                    && let Some(&start) = shared.start.get()
                {
                    self.deadline = shared.deadline(start);
                }
            }
            // Not let in yet by `max_threads`: wait, connected, until the generator wakes it.
            if shared.cfg.start_threads.is_some()
                && self.id >= shared.active.load(Ordering::Acquire)
            {
                pause();
                self.now = Instant::now();
                continue;
            }
            // A phase with fewer threads parks this worker (its connection stays open) until
            // a phase that has it begins; a closed-loop phase takes no arrival.
            // The phase is the collector's (`Shared::phase`), which cuts the statistics in the
            // same moment: a worker's own clock would run events on either side of the cut.
            let mut open = true;
            if let Some(t) = &shared.timeline {
                let phase = &t.phases()[shared.phase.load(Ordering::Acquire)];
                if self.id >= phase.threads {
                    pause();
                    self.now = Instant::now();
                    continue;
                }
                open = phase.open_loop();
            }
            self.t0 = match &shared.queue {
                None => None,
                // A closed-loop phase after an open one first serves the arrivals still queued.
                Some(q) if !open => q.try_pop().inspect(|_| self.ticket = true),
                Some(q) => match self
                    .bell
                    .as_deref()
                    .map_or_else(|| q.pop(), |b| q.pop_carried(b))
                {
                    Ticket::Start(at, waited) => {
                        // The take, without a clock read per event: a worker that found the
                        // arrival queued took it as it came back from its previous event
                        // (`self.now`, that event's end or a later reading; not before the
                        // arrival was due), one that waited for it when it woke up.
                        let now = if waited {
                            Instant::now()
                        } else {
                            self.now.max(at)
                        };
                        if hopeless(at, now, self.skip_after) {
                            q.in_flight.fetch_sub(1, Ordering::Relaxed);
                            self.stats.skipped += 1;
                            self.now = now;
                            continue;
                        }
                        self.ticket = true;
                        self.started = now;
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
        let ticket = self.ticket;
        self.release_ticket();
        let t0 = self.t0.take().unwrap_or(t1);
        let ns = duration_ns(t1.saturating_duration_since(t0)).saturating_sub(idle_ns);
        self.stats.record(ns);
        self.stats.late += u64::from(ns > self.late_after_ns);
        if ticket && let Some(o) = self.stats.open_loop.as_deref_mut() {
            let service = t1.saturating_duration_since(self.started);
            o.service
                .record(duration_ns(service).saturating_sub(idle_ns));
            o.lag
                .record(duration_ns(self.started.saturating_duration_since(t0)));
        }
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

fn run_inner(
    workload: &dyn Workload,
    may_abandon: bool,
    cfg: &RunConfig,
    out: &mut dyn Write,
    on_interval: &mut dyn StepObserver,
    stop: &AtomicBool,
    gate: &mut dyn FnMut() -> Result<(), EngineError>,
) -> (Result<StepOutcome, EngineError>, bool) {
    let io_err = EngineError::report;
    if cfg.threads == 0 {
        return (
            Err(EngineError::Failed(
                "option `threads` must be at least 1".into(),
            )),
            false,
        );
    }
    if cfg.carriers().is_some()
        && let Err(why) = workload.shares_threads()
    {
        return (
            Err(EngineError::Failed(format!(
                "option `client_threads`: {why}"
            ))),
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
        measured_from: OnceLock::new(),
        running: AtomicUsize::new(cfg.threads),
        issued: CacheLine(AtomicU64::new(0)),
        epoch: AtomicU64::new(0),
        abort: AtomicBool::new(false),
        interrupt: AtomicBool::new(false),
        scope: Scope::new(),
        first_failed: AtomicUsize::new(usize::MAX),
        queue: (cfg.rate > 0).then(|| RateQueue::new(rate_queue_slots())),
        timeline: Timeline::new(&cfg.phases),
        phase: AtomicUsize::new(0),
        active: AtomicUsize::new(cfg.start_threads.unwrap_or(cfg.threads)),
        threads: OnceLock::new(),
        collector: thread::current(),
    });

    // `client_threads` below `threads`: that many carriers, worker `id` on carrier
    // `id % carriers` (so that a phase's first N workers spread over all of them).
    let carriers = cfg.carriers();
    let mut joiner = Joiner::new(cfg.threads, carriers);
    let mut spawn_error = None;
    for c in 0..carriers.unwrap_or(cfg.threads) {
        let mine = Arc::clone(&shared);
        let mut builder = thread::Builder::new().name(match carriers {
            Some(_) => format!("sbsuite-carrier-{c}"),
            None => format!("sbsuite-worker-{c}"),
        });
        if cfg.stack_size > 0 {
            builder = builder.stack_size(cfg.stack_size);
        }
        let ids = joiner.ids(c);
        // SAFETY: the closure borrows `workload`. Every handle is joined before this function
        // returns (`Joiner` joins on drop, also on early return or panic), except handles
        // passed to `Joiner::abandon`, which happens only when `may_abandon`: then `run_owned`
        // leaks the workload, so the borrow stays valid for the rest of the process.
        let spawned = unsafe {
            builder.spawn_unchecked(move || match carriers {
                Some(_) => carry(&mine, workload, &ids),
                None => vec![(c, worker_main(&mine, workload, c))],
            })
        };
        match spawned {
            Ok(h) => joiner.handles.push(Some(h)),
            Err(e) => {
                spawn_error = Some(e);
                break;
            }
        }
    }
    let _ = shared.threads.set(
        joiner
            .handles
            .iter()
            .flatten()
            .map(|h| h.thread().clone())
            .collect(),
    );
    if spawn_error.is_some() {
        // Release the workers already waiting into an aborted run.
        shared.abort();
        let missing = joiner.unspawned();
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
        .map(|e| EngineError::io("could not start worker threads", e))
        .or(started_error);
    let mut collected = Collected::new(start);
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
        // A carrier with one stuck worker is stuck as a whole (its other workers' results
        // stay with it).
        let stuck: Vec<bool> = {
            let mut t = vec![false; cfg.threads];
            for (id, slot) in shared.slots.iter().enumerate() {
                if slot.running_at(u64::MAX) {
                    t[joiner.thread_of(id)] = true;
                }
            }
            t
        };
        for id in 0..cfg.threads {
            if stuck[joiner.thread_of(id)] {
                if may_abandon {
                    joiner.abandon(id);
                    abandoned = true;
                }
            } else if let Some(r) = joiner.join(id) {
                results.push((id, r));
            }
        }
    } else {
        for id in 0..cfg.threads {
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
    workload.after_run(stop.load(Ordering::Relaxed));
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
        &mut collected,
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

#[cfg(test)]
mod tests;
