//! The collector's side of a run: interim lines and live samples ([`Sampler`], [`Live`]), the
//! schedule of warmup end, checkpoints and forced shutdown ([`collect`]), checkpoint reports and
//! the final report ([`finish`]).
//!
//! Everything here runs on the calling thread and reads the workers' slots and mailboxes; the
//! workers' hot path (in [`super`]) never waits on it.

mod phased;

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use self::phased::{Phases, hand_over};
use super::{
    EngineError, Exit, IntervalSample, LiveSample, POLL, Shared, SqlCounters, StepObserver,
    StepOutcome, WorkerResult, Workload, console, duration_ns,
};
use crate::engine::config::{RateOverflow, RunConfig};
use crate::engine::{AutoWarmup, OpenLoop, Steadiness};
use crate::stats::steady::{self, BATCH};
use crate::stats::{self, BUCKETS, IntervalSlot, WorkerStats, log_histogram};

/// A run's throughput, one value per whole second since `origin` (#29): the measured period's
/// (for the stationarity verdict, [`steady::trend`]) and the warmup's under
/// `warmup_time = "auto"` (for [`steady::mser5`]). Taken by the collector from the slots'
/// event totals, so it costs the workers nothing; a final partial second is left out.
struct Series {
    origin: Instant,
    prev_at: Instant,
    prev_events: u64,
    per_sec: Vec<f64>,
}

impl Series {
    fn new(origin: Instant, slots: &[IntervalSlot]) -> Self {
        Series {
            origin,
            prev_at: origin,
            prev_events: slots.iter().map(IntervalSlot::events).sum(),
            per_sec: Vec::new(),
        }
    }

    /// When the next second ends.
    fn due(&self) -> Option<Instant> {
        let next = u64::try_from(self.per_sec.len()).ok()?.checked_add(1)?;
        self.origin.checked_add(Duration::from_secs(next))
    }

    /// Records the second that just ended (events over the time since the previous sample,
    /// so a late wake-up does not inflate it).
    fn take(&mut self, slots: &[IntervalSlot]) {
        let now = Instant::now();
        let events: u64 = slots.iter().map(IntervalSlot::events).sum();
        let delta = events.saturating_sub(self.prev_events);
        self.per_sec.push(console::per_second(
            delta,
            now.saturating_duration_since(self.prev_at).as_secs_f64(),
        ));
        self.prev_events = events;
        self.prev_at = now;
    }
}

/// `warmup_time = "auto"` while the warmup runs: the warmup's series, checked with MSER-5 at
/// each batch boundary (Hoad, Robinson & Davies' sequential use, see [`steady`]).
struct AutoEnd {
    series: Series,
    /// Seconds after which the warmup ends even if the series has not settled.
    cap_s: usize,
}

/// The longest `warmup_time = "auto"` of a run without a time limit, and the shortest cap.
const AUTO_CAP_UNTIMED_S: usize = 600;
const AUTO_CAP_MIN_S: usize = 60;

impl AutoEnd {
    fn new(start: Instant, shared: &Shared) -> Self {
        let time = shared.cfg.time_secs();
        AutoEnd {
            series: Series::new(start, &shared.slots),
            cap_s: if time == 0 {
                AUTO_CAP_UNTIMED_S
            } else {
                usize::try_from(time)
                    .unwrap_or(usize::MAX)
                    .max(AUTO_CAP_MIN_S)
            },
        }
    }

    /// Samples the second that ended, if one did, and says whether the warmup is over.
    fn poll(&mut self, now: Instant, slots: &[IntervalSlot]) -> Option<AutoWarmup> {
        if self.series.due().is_none_or(|d| now < d) {
            return None;
        }
        self.series.take(slots);
        let n = self.series.per_sec.len();
        if !n.is_multiple_of(BATCH) {
            return None;
        }
        let found = steady::mser5(&self.series.per_sec);
        if let Some(m) = found.filter(|m| m.settled) {
            return Some(AutoWarmup {
                transient_s: m.truncate() as f64,
                settled: true,
            });
        }
        (n >= self.cap_s).then(|| AutoWarmup {
            transient_s: found.map_or(n, |m| m.truncate()) as f64,
            settled: false,
        })
    }
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
        let sql = workload
            .sql_totals()
            .map(|t| t.since(&self.base_sql.unwrap_or_default(), events));
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

/// Builds the outcome of a period from workers' statistics (final report, checkpoints and
/// phases).
pub(super) fn build_outcome(
    workers: &[WorkerStats],
    seconds: f64,
    percentile: f64,
    interrupted: bool,
) -> Result<StepOutcome, EngineError> {
    let histogram = stats::merge(workers).map_err(EngineError::Failed)?;
    let latency = stats::latency_summary(workers, &histogram, percentile);
    let fairness = stats::fairness(workers);
    let open_loop = OpenLoop::of_workers(workers, percentile).map_err(EngineError::Failed)?;
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
        steady: Steadiness::default(),
        phases: Vec::new(),
        groups: Vec::new(),
        open_loop,
    })
}

/// What the collector saw end the run.
pub(super) struct Collected {
    /// Start of the period the final report covers (warmup end or last checkpoint).
    pub(super) period_start: Instant,
    /// `Some(unfinished)` after a forced shutdown.
    pub(super) forced: Option<usize>,
    /// The period's throughput per whole second.
    series: Vec<f64>,
    /// Seconds of warmup before the measured run.
    warmup_s: f64,
    /// What `warmup_time = "auto"` found.
    auto: Option<AutoWarmup>,
    /// The phases' cuts and the phase under way (#30); `None` without phases.
    phases: Option<Phases>,
}

impl Collected {
    /// Nothing collected: a run that never started its clock.
    pub(super) fn new(start: Instant) -> Self {
        Collected {
            period_start: start,
            forced: None,
            series: Vec::new(),
            warmup_s: 0.0,
            auto: None,
            phases: None,
        }
    }

    /// The warmup and the verdict of the period's series.
    fn steadiness(&self) -> Steadiness {
        Steadiness {
            warmup_s: self.warmup_s,
            auto: self.auto,
            trend: steady::trend(&self.series),
        }
    }
}

/// The final report: histogram, workload block, general report, debug and warning lines.
pub(super) fn finish(
    shared: &Shared,
    workload: &dyn Workload,
    results: Vec<(usize, WorkerResult)>,
    seconds: f64,
    collected: &mut Collected,
    out: &mut dyn Write,
    io_err: &dyn Fn(io::Error) -> EngineError,
) -> Result<StepOutcome, EngineError> {
    let cfg = &shared.cfg;
    let forced = collected.forced;
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
    let mut ids = Vec::with_capacity(results.len());
    for (id, r) in results {
        let (stats, exit) = r?;
        interrupted |= exit == Exit::Interrupted;
        time_exits += usize::from(exit == Exit::TimeLimit);
        event_exits += usize::from(exit == Exit::EventLimit);
        workers.push(stats);
        ids.push(id);
    }
    // Hand-overs that a checkpoint (or a phase's cut) did not wait for belong to the final
    // period.
    for (w, &id) in workers.iter_mut().zip(&ids) {
        if let Some(late) = shared.mailboxes[id]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            w.absorb(&late);
        }
    }
    let phases = match collected.phases.take() {
        Some(p) => p.outcomes(
            shared,
            workload,
            &ids,
            &mut workers,
            seconds,
            collected.period_start,
        )?,
        None => Vec::new(),
    };
    let mut outcome = build_outcome(&workers, seconds, cfg.percentile, interrupted)?;
    outcome.phases = phases;
    outcome.steady = collected.steadiness();
    workload.finish_outcome(&mut outcome);
    if let Some(q) = &shared.queue {
        let dropped = q.dropped.load(Ordering::Relaxed);
        outcome
            .metrics
            .push((crate::engine::DROPPED, dropped as f64));
    }
    if cfg.start_threads.is_some() {
        let peak = shared.active.load(Ordering::Acquire);
        outcome
            .metrics
            .push((crate::engine::THREADS_PEAK, peak as f64));
    }
    let limits = LimitCounts::of(cfg, &workers);
    limits.push_metrics(&mut outcome);
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
        if let Some(t) = &shared.timeline {
            console::write_phases(out, t.phases(), &outcome.phases)?;
        }
        // `sbsuite sysbench` keeps sysbench's report; `latency_limit` is not one of its
        // options, so only the open-loop block is left out there.
        if cfg.rate_overflow != RateOverflow::Fatal {
            write_open_loop(out, &outcome, &limits)?;
        }
        if cfg.warmup_auto {
            writeln!(out, "{}", steady_line(&outcome.steady))?;
            writeln!(out)?;
        }
        if let Some(start) = cfg.start_threads {
            writeln!(
                out,
                "Threads: {start} at the start, {} at most (max_threads = {})",
                shared.active.load(Ordering::Acquire),
                cfg.threads
            )?;
            writeln!(out)?;
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

/// A run's `latency_limit` counts: events late, tickets skipped (pgbench's), and the limit.
struct LimitCounts {
    /// `None` without `latency_limit`.
    limit: Option<Duration>,
    late: u64,
    /// `None` unless the run also has `rate`.
    skipped: Option<u64>,
}

impl LimitCounts {
    fn of(cfg: &RunConfig, workers: &[WorkerStats]) -> Self {
        let limit = cfg.latency_limit;
        LimitCounts {
            limit,
            late: workers.iter().map(|w| w.late).sum(),
            skipped: limit
                .filter(|_| cfg.rate > 0)
                .map(|_| workers.iter().map(|w| w.skipped).sum()),
        }
    }

    /// The [`crate::engine::LATE`] and [`crate::engine::SKIPPED`] metrics, when they apply.
    fn push_metrics(&self, outcome: &mut StepOutcome) {
        if self.limit.is_some() {
            outcome
                .metrics
                .push((crate::engine::LATE, self.late as f64));
        }
        if let Some(skipped) = self.skipped {
            outcome
                .metrics
                .push((crate::engine::SKIPPED, skipped as f64));
        }
    }
}

/// The lines after the final report of a `rate` run or one with `latency_limit`: service time
/// and schedule lag (the report's latency is the response time), then pgbench's skipped and
/// late counts, in pgbench's words.
fn write_open_loop(out: &mut dyn Write, o: &StepOutcome, limits: &LimitCounts) -> io::Result<()> {
    if o.open_loop.is_none() && limits.limit.is_none() {
        return Ok(());
    }
    if let Some(ol) = &o.open_loop {
        writeln!(
            out,
            "Open-loop timing (the latency above is the response time, from each arrival's \
             intended start):"
        )?;
        for (label, t) in [
            ("service time (ms):", &ol.service.summary),
            ("schedule lag (ms):", &ol.lag.summary),
        ] {
            writeln!(
                out,
                "    {label:<31}avg {:.2}, p95 {:.2}, p99 {:.2}, max {:.2}",
                t.avg_ms, t.p95_ms, t.p99_ms, t.max_ms
            )?;
        }
    }
    let pct = |n: u64, of: u64| {
        if of > 0 {
            100.0 * n as f64 / of as f64
        } else {
            0.0
        }
    };
    if let Some(skipped) = limits.skipped {
        let taken = o.events + skipped;
        writeln!(
            out,
            "number of transactions skipped: {skipped} ({:.3}%)",
            pct(skipped, taken)
        )?;
    }
    if let Some(limit) = limits.limit {
        writeln!(
            out,
            "number of transactions above the {:.1} ms latency limit: {}/{} ({:.3}%)",
            limit.as_secs_f64() * 1e3,
            limits.late,
            o.events,
            pct(limits.late, o.events)
        )?;
    }
    writeln!(out)
}

/// The line that states a run's stationarity verdict (printed after the report of a
/// `warmup_time = "auto"` run; the runner prints it for every run that is not steady).
pub fn steady_line(s: &Steadiness) -> String {
    match s.trend {
        None => "Steady state: unknown (under 20s measured)".into(),
        Some(t) => format!(
            "Steady state: {} (throughput trend {:+.1}%/min, {:+.1}% over the window, p = {:.3}; \
             OLS slope of 5s batch means)",
            t.verdict.as_str(),
            t.pct_per_min,
            t.pct_over_window,
            t.p
        ),
    }
}

/// The collector loop: interim lines, warmup end, checkpoints and forced shutdown, each on an
/// absolute schedule, until every worker is gone.
pub(super) fn collect(
    shared: &Shared,
    workload: &dyn Workload,
    start: Instant,
    out: &mut dyn Write,
    on_interval: &mut dyn StepObserver,
    stop: &AtomicBool,
) -> io::Result<Collected> {
    let cfg = &shared.cfg;
    let warmup = shared.warmup();
    // The origin of every measured schedule; falls back to `start` if unrepresentable. Under
    // `warmup_time = "auto"` it is the moment MSER-5 ends the warmup.
    let mut origin = start.checked_add(warmup).unwrap_or(start);
    let mut auto = cfg.warmup_auto.then(|| AutoEnd::new(start, shared));
    let mut found = None;
    let mut measuring = warmup.is_zero() && auto.is_none();
    let timeline = shared.timeline.as_ref();
    let mut phases = timeline.map(|_| Phases::new());
    if measuring {
        let _ = shared.measured_from.set(start);
        on_interval.measuring();
        if let (Some(t), Some(p)) = (timeline, phases.as_mut()) {
            p.measuring(t, shared, workload);
        }
    }
    let mut series = Series::new(start, &shared.slots);
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
        let phase_due = timeline
            .zip(phases.as_ref())
            .and_then(|(t, p)| p.due(t, start))
            .filter(|_| !finished);
        if let (Some(due), Some(t), Some(p)) = (phase_due, timeline, phases.as_mut())
            && now >= due
        {
            p.begin_next(t, shared, workload, start, out)?;
            continue;
        }
        if !measuring {
            let over = match auto.as_mut() {
                None => now >= origin,
                Some(a) => {
                    found = a.poll(now, &shared.slots);
                    found.is_some()
                }
            };
            if over {
                if let Some(f) = found {
                    origin = Instant::now();
                    if !forced_by_stop {
                        forced_at = shared
                            .cfg
                            .time
                            .and_then(|t| origin.checked_add(t))
                            .zip(cfg.forced_shutdown)
                            .and_then(|(d, f)| d.checked_add(f));
                    }
                    let warmed = origin.saturating_duration_since(start).as_secs_f64();
                    if f.settled {
                        writeln!(
                            out,
                            "Warm-up: {warmed:.0}s (warmup_time = auto: MSER-5 puts the end of \
                             the start-up transient at {:.0}s); measuring from here",
                            f.transient_s
                        )?;
                    } else {
                        writeln!(
                            out,
                            "WARNING: warmup_time = auto: the throughput did not settle within \
                             {warmed:.0}s (MSER-5); measuring from here anyway"
                        )?;
                    }
                    out.flush()?;
                }
                let _ = shared.measured_from.set(origin);
                shared.epoch.store(1, Ordering::Release);
                measuring = true;
                period_start = if auto.is_some() {
                    origin
                } else {
                    Instant::now()
                };
                series = Series::new(period_start, &shared.slots);
                sampler = Sampler::new(period_start);
                let _ = sampler.sample(&shared.slots, origin, 0, 0.0, false); // baseline
                on_interval.measuring();
                workload.reset_counters();
                live = live_every.map(|every| Live::from_now(every, &shared.slots, workload));
                if let (Some(t), Some(p)) = (timeline, phases.as_mut()) {
                    p.measuring(t, shared, workload);
                }
                continue;
            }
            if finished {
                break;
            }
            let until = match &auto {
                None => origin,
                Some(a) => a.series.due().unwrap_or(now),
            };
            let until = phase_due.map_or(until, |p| p.min(until));
            thread::park_timeout(until.saturating_duration_since(now).min(POLL));
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
            let offset_ns = duration_ns(
                origin.saturating_duration_since(start)
                    + interval.unwrap_or_default().saturating_mul(tick),
            );
            // A phase's parked workers run no event: the phase's threads at most.
            let mut target_rate = None;
            let (phase, active) = match timeline {
                Some(t) => {
                    let at = Duration::from_nanos(offset_ns);
                    let i = t.at(at.saturating_sub(Duration::from_nanos(1)));
                    target_rate = t.mean_rate(at.saturating_sub(interval.unwrap_or_default()), at);
                    (Some(i), t.phases()[i].threads)
                }
                None if cfg.start_threads.is_some() => {
                    (None, shared.active.load(Ordering::Acquire))
                }
                None => (None, usize::MAX),
            };
            let threads = shared
                .slots
                .iter()
                .take(active)
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
            sample.phase = phase;
            sample.target_rate = target_rate;
            if let Some(q) = &shared.queue {
                sample.metrics.push(("queue_length", q.len() as f64));
                sample
                    .metrics
                    .push(("concurrency", q.in_flight.load(Ordering::Relaxed) as f64));
                sample.metrics.push((
                    crate::engine::DROPPED,
                    q.dropped.load(Ordering::Relaxed) as f64,
                ));
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
        let series_due = series.due().filter(|_| !finished);
        if let Some(due) = series_due
            && now >= due
        {
            series.take(&shared.slots);
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
            series = Series::new(period_start, &shared.slots);
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
                series: series.per_sec,
                warmup_s: origin.saturating_duration_since(start).as_secs_f64(),
                auto: found,
                phases,
            });
        }
        if finished {
            // The last partial second, so that watchers end on the run's full counts.
            if let Some(l) = live.as_mut() {
                l.take(shared, workload, start, origin, on_interval);
            }
            break;
        }
        let next = [
            tick_due,
            checkpoint_due,
            forced_due,
            live_due,
            series_due,
            phase_due,
        ]
        .into_iter()
        .flatten()
        .min();
        let wait = next.map_or(POLL, |d| d.saturating_duration_since(now).min(POLL));
        thread::park_timeout(wait);
    }
    Ok(Collected {
        period_start,
        forced: None,
        series: series.per_sec,
        warmup_s: if measuring {
            origin.saturating_duration_since(start).as_secs_f64()
        } else {
            0.0
        },
        auto: found,
        phases,
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
    let (at, taken) = hand_over(shared);
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
