//! A TPC-H run step: the query streams on the driver's workers, the refresh stream beside
//! them, the timeout, and what the step reports (TPC-H 2.18, clause 5.3).
//!
//! Shape, and why:
//! * Worker 0 runs the power test (RF1, stream 0's queries in Appendix A's order, RF2); then,
//!   in the throughput test, worker `i` runs query stream `i + 1` (streams 1..=S, S =
//!   `threads`), each with its own parameters (drawn from the run's seed and the stream
//!   number), and a thread worker 0 starts runs the refresh stream (S pairs of RF1/RF2). The
//!   other workers wait for the power test to end before the throughput test starts (the
//!   spec runs the two tests one after the other). Each query and refresh function of a
//!   worker is one driver event; the refresh stream's are timed and reported, not events.
//! * Every timing goes to a shared list under a lock (a few dozen entries per stream: never a
//!   hot path); [`finish_outcome`] turns it into the per-query rows of transactions.csv
//!   (`power.Q1`, `throughput.Q1` over the S streams, …) and the spec's metrics.
//! * The timeout (`time`): a watchdog thread waits for every stream to end; at the deadline
//!   it cancels the run's scope ([`Scope::cancel`]: the statements in flight are cancelled on
//!   the server, connections refuse new ones), the streams end, and the step is reported as
//!   interrupted with what finished.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::load::RefreshSet;
use super::params::{self, Params};
use super::{GEOMEAN, POWER, QPHH, THROUGHPUT, Tpch, metrics, queries};
use crate::db::interrupt::guarded_in;
use crate::db::{Connection, RowSink};
use crate::engine::driver::{EventLoop, EventResult, Scope, Worker};
use crate::engine::random::Rng;
use crate::engine::session::counters::{Slot, Tally};
use crate::engine::{EngineError, StepOutcome, TxnStats, metric};

const QUERY_NAMES: [&str; 22] = [
    "Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "Q7", "Q8", "Q9", "Q10", "Q11", "Q12", "Q13", "Q14", "Q15",
    "Q16", "Q17", "Q18", "Q19", "Q20", "Q21", "Q22",
];

/// Which test a timing belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Power,
    Throughput,
}

impl Part {
    fn label(self) -> &'static str {
        match self {
            Part::Power => "power",
            Part::Throughput => "throughput",
        }
    }
}

/// One timed query or refresh function.
#[derive(Clone, Debug)]
struct Record {
    part: Part,
    name: &'static str,
    seconds: f64,
}

/// What the streams of one run share.
#[derive(Default)]
pub(super) struct State {
    inner: Mutex<Inner>,
    cv: Condvar,
}

#[derive(Default)]
struct Inner {
    /// Streams (query and refresh) not ended yet; set by the first worker.
    pending: Option<usize>,
    power_done: bool,
    tp_start: Option<Instant>,
    tp_end: Option<Instant>,
    records: Vec<Record>,
    /// The watchdog cancelled the run at the time limit.
    timed_out: bool,
    /// The refresh stream's error.
    failure: Option<String>,
}

impl State {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn record(&self, part: Part, name: &'static str, seconds: f64) {
        self.lock().records.push(Record {
            part,
            name,
            seconds,
        });
    }

    /// A stream ended (however): one fewer to wait for; `throughput` ones move Ts's end.
    fn stream_ended(&self, throughput: bool) {
        let mut i = self.lock();
        if let Some(p) = i.pending.as_mut() {
            *p = p.saturating_sub(1);
        }
        if throughput {
            let now = Instant::now();
            i.tp_end = Some(i.tp_end.map_or(now, |e| e.max(now)));
        }
        drop(i);
        self.cv.notify_all();
    }

    fn power_ended(&self) {
        self.lock().power_done = true;
        self.cv.notify_all();
    }

    /// Waits until the power test is over; `false` when the run is stopping first.
    fn wait_power(&self, scope: &Scope) -> bool {
        let mut i = self.lock();
        while !i.power_done {
            if scope.stopping() {
                return false;
            }
            i = self
                .cv
                .wait_timeout(i, Duration::from_millis(50))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        true
    }

    /// The throughput test's start: the first stream to ask sets it.
    fn throughput_started(&self) {
        let mut i = self.lock();
        if i.tp_start.is_none() {
            i.tp_start = Some(Instant::now());
        }
    }
}

/// The streams of this run: the power test's, S query streams, the refresh stream.
fn stream_count(w: &Tpch) -> usize {
    let mut n = 0;
    if w.test.power() {
        n += 1;
    }
    if w.test.throughput() {
        n += w.streams + usize::from(!w.validation);
    }
    n
}

/// Deletes the rows of refresh sets an interrupted run left between its RF1 and RF2: those
/// of this run's sets, and of the sets of up to 40 streams (Appendix A's), so that a cut run
/// with more streams leaves nothing behind either. One primary-key lookup per set.
pub(super) fn clear_refresh_leftovers(
    w: &Tpch,
    conn: &mut dyn Connection,
) -> Result<(), EngineError> {
    let begin = w.sessions.connector.target.driver.dialect().begin(true);
    for k in 0..=w.streams.max(40) {
        let set = RefreshSet::new(k);
        let Some(first) = set.first_key(w.sf) else {
            continue;
        };
        let there = conn
            .query_i64(&format!("SELECT 1 FROM orders WHERE o_orderkey = {first}"))
            .map_err(|e| w.failed("looking for rows of an earlier refresh", &e))?;
        if there.is_some() {
            set.delete(conn, w.sf, begin)
                .map_err(|e| w.failed("deleting rows an earlier run's RF1 left", &e))?;
        }
    }
    Ok(())
}

/// The lines after the general banner.
pub(super) fn banner(w: &Tpch, out: &mut dyn Write) -> io::Result<()> {
    let test = match w.test {
        super::Test::Power => "power test".to_string(),
        super::Test::Throughput => format!("throughput test ({} query streams)", w.streams),
        super::Test::Full => format!(
            "power test, then throughput test ({} query stream{})",
            w.streams,
            if w.streams == 1 { "" } else { "s" }
        ),
    };
    let params = if w.validation {
        "the spec's validation parameters, no refresh functions"
    } else {
        "random substitution parameters"
    };
    writeln!(out, "TPC-H at SF {}: {test}, {params}", w.sf)?;
    writeln!(out)
}

/// One driver worker: its query stream(s) on its own connection.
pub(super) struct StreamWorker<'a> {
    w: &'a Tpch,
    id: usize,
    scope: &'a Scope,
    conn: Option<Box<dyn Connection>>,
    tally: Tally,
    slot: &'a Slot,
    /// Worker 0 started the refresh stream (which then ends its own stream).
    refresh_started: bool,
}

impl<'a> StreamWorker<'a> {
    pub(super) fn new(w: &'a Tpch, id: usize, scope: &'a Scope) -> Result<Self, EngineError> {
        let conn = w.sessions.connector.connect().map_err(|e| {
            EngineError::Failed(format!(
                "tpch: worker {id} could not connect to {}: {}",
                w.sessions.connector.target.endpoint(id),
                w.sessions.connector.explain(&e)
            ))
        })?;
        {
            let mut i = w.state.lock();
            i.pending.get_or_insert(stream_count(w));
        }
        Ok(StreamWorker {
            w,
            id,
            scope,
            conn: Some(guarded_in(conn, scope)),
            tally: Tally::default(),
            slot: w.sessions.counters.slot(id)?,
            refresh_started: false,
        })
    }

    fn conn(&mut self) -> &mut dyn Connection {
        self.conn.as_deref_mut().expect("open until finish")
    }

    /// The parameters of query stream `stream`.
    fn params(&self, stream: usize) -> Params {
        if self.w.validation {
            Params::validation()
        } else {
            Params::random(&mut Rng::for_thread(self.w.seed, stream))
        }
    }

    /// Runs stream `stream`'s queries in its order, between RF1 and RF2 in the power test.
    /// `Ok(false)`: the stream stopped early (time limit, stop request).
    fn stream(
        &mut self,
        lp: &mut EventLoop<'_>,
        part: Part,
        stream: usize,
    ) -> Result<bool, EngineError> {
        let w = self.w;
        let p = self.params(stream);
        let answers = if self.id == 0 && (part == Part::Power || !w.test.power()) {
            w.answers.clone()
        } else {
            None
        };
        let refresh = part == Part::Power && !w.validation;
        let set = RefreshSet::new(0);
        if refresh && !self.refresh(lp, part, set, true)? {
            return Ok(false);
        }
        for &n in params::order(stream) {
            let sql = queries::query(n, &p, w.sf, w.sql);
            if !self.query(lp, part, n, &sql, answers.as_deref())? {
                return Ok(false);
            }
        }
        if refresh && !self.refresh(lp, part, set, false)? {
            return Ok(false);
        }
        Ok(true)
    }

    /// One query as one event. `Ok(false)`: the run is ending.
    fn query(
        &mut self,
        lp: &mut EventLoop<'_>,
        part: Part,
        n: u8,
        sql: &str,
        answers: Option<&Path>,
    ) -> Result<bool, EngineError> {
        if !lp.more_events()? {
            return Ok(false);
        }
        lp.event_start();
        let mut rows = Rows::new(answers.is_some());
        let t0 = Instant::now();
        let r = self.conn().query_each(sql, &mut rows);
        let seconds = t0.elapsed().as_secs_f64();
        let name = QUERY_NAMES[usize::from(n) - 1];
        let result = match r {
            Ok(_) => {
                self.tally.reads += 1;
                self.slot.publish(&self.tally);
                self.w.state.record(part, name, seconds);
                match answers.map(|dir| write_answer(dir, n, &rows.text)) {
                    Some(Err(e)) => EventResult::Fatal(e),
                    _ => EventResult::Done,
                }
            }
            Err(_) if self.scope.stopping() => EventResult::Exhausted,
            Err(e) => EventResult::Fatal(EngineError::Failed(format!(
                "tpch: {name} of the {} test failed: {}\n{sql}",
                part.label(),
                self.w.sessions.connector.explain(&e)
            ))),
        };
        let more = matches!(result, EventResult::Done);
        Ok(lp.event_done(result, 0)? && more)
    }

    /// RF1 (`insert`) or RF2 of `set` as one event. `Ok(false)`: the run is ending.
    fn refresh(
        &mut self,
        lp: &mut EventLoop<'_>,
        part: Part,
        set: RefreshSet,
        insert: bool,
    ) -> Result<bool, EngineError> {
        if !lp.more_events()? {
            return Ok(false);
        }
        lp.event_start();
        let w = self.w;
        let t0 = Instant::now();
        let r = refresh_function(w, self.conn(), set, insert);
        let seconds = t0.elapsed().as_secs_f64();
        let name = if insert { "RF1" } else { "RF2" };
        let result = match r {
            Ok(()) => {
                self.tally.writes += 1;
                self.slot.publish(&self.tally);
                w.state.record(part, name, seconds);
                EventResult::Done
            }
            Err(_) if self.scope.stopping() => EventResult::Exhausted,
            Err(e) => EventResult::Fatal(e),
        };
        let more = matches!(result, EventResult::Done);
        Ok(lp.event_done(result, 0)? && more)
    }

    /// Everything this worker runs: the power test (worker 0), then its throughput stream
    /// (and, worker 0, the refresh stream on a thread of `threads`).
    fn run_all<'s, 'e>(
        &mut self,
        lp: &mut EventLoop<'_>,
        threads: Option<&'s std::thread::Scope<'s, 'e>>,
    ) -> Result<(), EngineError>
    where
        'a: 's,
    {
        let w = self.w;
        let st = &w.state;
        if w.test.power() && self.id == 0 {
            let r = self.stream(lp, Part::Power, 0);
            st.power_ended();
            st.stream_ended(false);
            if !matches!(r, Ok(true)) {
                if w.test.throughput() {
                    // This worker's throughput stream never starts.
                    st.stream_ended(true);
                }
                return r.map(|_| ());
            }
        }
        if !w.test.throughput() {
            return Ok(());
        }
        if w.test.power() && !st.wait_power(self.scope) {
            st.stream_ended(true);
            return Ok(());
        }
        st.throughput_started();
        if self.id == 0
            && !w.validation
            && let Some(threads) = threads
        {
            let scope = self.scope;
            self.refresh_started = true;
            threads.spawn(move || refresh_stream(w, scope));
        }
        let r = self.stream(lp, Part::Throughput, self.id + 1);
        st.stream_ended(true);
        r.map(|_| ())
    }
}

impl Worker for StreamWorker<'_> {
    fn event(&mut self) -> EventResult {
        // The streams drive the loop themselves (`run_loop`).
        EventResult::Exhausted
    }

    fn run_loop(&mut self, lp: &mut EventLoop<'_>) -> Result<(), EngineError> {
        if self.id > 0 {
            return self.run_all(lp, None);
        }
        let w = self.w;
        let scope = self.scope;
        std::thread::scope(|threads| {
            if let Some(limit) = w.timeout {
                threads.spawn(move || watchdog(w, scope, limit));
            }
            let r = self.run_all(lp, Some(threads));
            if w.test.throughput() && !w.validation && !self.refresh_started {
                // The refresh stream never starts.
                w.state.stream_ended(true);
            }
            if r.is_err() {
                // The others stop too: nobody waits for a stream that failed.
                scope.stop();
            }
            r
        })?;
        match w.state.lock().failure.take() {
            Some(f) => Err(EngineError::Failed(f)),
            None => Ok(()),
        }
    }

    fn finish(&mut self) -> Result<(), EngineError> {
        if let Some(c) = self.conn.take() {
            c.close();
        }
        Ok(())
    }
}

/// RF1 or RF2 of `set` on `conn`.
fn refresh_function(
    w: &Tpch,
    conn: &mut dyn Connection,
    set: RefreshSet,
    insert: bool,
) -> Result<(), EngineError> {
    let r = if insert {
        set.insert(conn, w.sf, w.sql.float_decimals()).map(|_| ())
    } else {
        let begin = w.sessions.connector.target.driver.dialect().begin(true);
        set.delete(conn, w.sf, begin).map(|_| ())
    };
    r.map_err(|e| {
        EngineError::Failed(format!(
            "tpch: {} failed: {}",
            if insert { "RF1" } else { "RF2" },
            w.sessions.connector.explain(&e)
        ))
    })
}

/// The refresh stream of the throughput test: S pairs of RF1 and RF2, refresh sets 1..=S, on
/// a connection of its own in the run's scope.
fn refresh_stream(w: &Tpch, scope: &Scope) {
    let st = &w.state;
    let result = (|| -> Result<(), EngineError> {
        let conn = w.sessions.connector.connect().map_err(|e| {
            EngineError::Failed(format!(
                "tpch: the refresh stream could not connect: {}",
                w.sessions.connector.explain(&e)
            ))
        })?;
        let mut conn = guarded_in(conn, scope);
        for k in 1..=w.streams {
            for insert in [true, false] {
                if scope.stopping() {
                    conn.close();
                    return Ok(());
                }
                let t0 = Instant::now();
                refresh_function(w, conn.as_mut(), RefreshSet::new(k), insert)?;
                let name = if insert { "RF1" } else { "RF2" };
                st.record(Part::Throughput, name, t0.elapsed().as_secs_f64());
            }
        }
        conn.close();
        Ok(())
    })();
    if let Err(e) = result
        && !scope.stopping()
    {
        st.lock().failure = Some(e.to_string());
        scope.stop();
    }
    st.stream_ended(true);
}

/// Waits for every stream to end; at `limit` after the start, cancels what still runs.
fn watchdog(w: &Tpch, scope: &Scope, limit: Duration) {
    let st = &w.state;
    let deadline = Instant::now() + limit;
    let mut i = st.lock();
    while i.pending.is_some_and(|p| p > 0) {
        let now = Instant::now();
        if now >= deadline {
            i.timed_out = true;
            drop(i);
            scope.cancel();
            return;
        }
        i = st
            .cv
            .wait_timeout(i, (deadline - now).min(Duration::from_millis(200)))
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
}

/// Writes query `n`'s answer as `dir/qNN.tsv`.
fn write_answer(dir: &Path, n: u8, text: &str) -> Result<(), EngineError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| EngineError::io(format!("tpch_answers: creating {}", dir.display()), e))?;
    let path = dir.join(format!("q{n:02}.tsv"));
    std::fs::write(&path, text)
        .map_err(|e| EngineError::io(format!("tpch_answers: writing {}", path.display()), e))
}

/// A query's result as it is read: counted, and kept as text when answers are written.
struct Rows {
    keep: bool,
    rows: u64,
    text: String,
    row_start: bool,
}

impl Rows {
    fn new(keep: bool) -> Rows {
        Rows {
            keep,
            rows: 0,
            text: String::new(),
            row_start: true,
        }
    }
}

impl RowSink for Rows {
    fn columns(&mut self, names: &[String]) {
        if self.keep {
            self.text.push_str(&names.join("\t"));
            self.text.push('\n');
        }
        self.row_start = true;
    }

    fn value(&mut self, value: Option<&[u8]>) {
        if !self.keep {
            return;
        }
        if !self.row_start {
            self.text.push('\t');
        }
        self.row_start = false;
        match value {
            None => self.text.push_str("\\N"),
            Some(v) => {
                let s = String::from_utf8_lossy(v);
                self.text.push_str(&s.replace(['\t', '\n'], " "));
            }
        }
    }

    fn end_row(&mut self) -> bool {
        self.rows += 1;
        if self.keep {
            self.text.push('\n');
        }
        self.row_start = true;
        true
    }
}

/// The per-query rows and the spec's metrics, and an interrupted step when a test did not
/// finish.
pub(super) fn finish_outcome(w: &Tpch, outcome: &mut StepOutcome) {
    let i = w.state.lock();
    let refreshes = if w.validation { 0 } else { 2 };
    let mut txns = Vec::new();
    for part in [Part::Power, Part::Throughput] {
        let names = ["RF1"]
            .into_iter()
            .chain(QUERY_NAMES)
            .chain(["RF2"])
            .filter(|n| refreshes > 0 || !n.starts_with("RF"));
        for name in names {
            let mut h = hdrhistogram::Histogram::<u64>::new(3).expect("3 significant digits");
            let mut count = 0;
            for r in i
                .records
                .iter()
                .filter(|r| r.part == part && r.name == name)
            {
                let _ = h.record((r.seconds * 1e9) as u64);
                count += 1;
            }
            let wanted = match part {
                Part::Power => w.test.power(),
                Part::Throughput => w.test.throughput(),
            };
            if wanted {
                txns.push(TxnStats {
                    name: format!("{}.{name}", part.label()),
                    statement: false,
                    count,
                    errors: 0,
                    rollbacks: 0,
                    histogram: h,
                });
            }
        }
    }
    outcome.transactions = txns;
    let power: Vec<f64> = i
        .records
        .iter()
        .filter(|r| r.part == Part::Power)
        .map(|r| r.seconds)
        .collect();
    let tp_done = i
        .records
        .iter()
        .filter(|r| r.part == Part::Throughput)
        .count();
    let power_total = if w.test.power() { 22 + refreshes } else { 0 };
    let tp_total = if w.test.throughput() {
        w.streams * (22 + refreshes)
    } else {
        0
    };
    let mut p = None;
    if power_total > 0 && power.len() == power_total {
        if let Some(g) = metrics::power_geomean(&power) {
            outcome.metrics.push((GEOMEAN, g));
        }
        p = metrics::power(w.sf, &power);
        if let Some(p) = p {
            outcome.metrics.push((POWER, p));
        }
    }
    let mut t = None;
    if tp_total > 0
        && tp_done == tp_total
        && let (Some(a), Some(b)) = (i.tp_start, i.tp_end)
    {
        let v = metrics::throughput(w.sf, w.streams, (b - a).as_secs_f64());
        outcome.metrics.push((THROUGHPUT, v));
        t = Some(v);
    }
    if let (Some(p), Some(t)) = (p, t) {
        outcome.metrics.push((QPHH, metrics::qphh(p, t)));
    }
    let done = power.len() + tp_done;
    let total = power_total + tp_total;
    if done < total && !outcome.interrupted {
        outcome.interrupted = true;
        let limit = w.timeout.map_or(0, |d| d.as_secs());
        outcome.cut_short = Some(format!(
            "tpch: the step's time limit ({limit} s) ended the test before it finished ({done} \
             of {total} queries and refresh functions done{}): raise `time` (0: no limit)",
            if i.timed_out {
                "; the statements in flight were cancelled on the server"
            } else {
                ""
            }
        ));
    }
}

/// The TPC-H block after the final report.
pub(super) fn report(w: &Tpch, outcome: &StepOutcome, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "TPC-H (SF {}):", w.sf)?;
    let m = |name| metric(&outcome.metrics, name);
    if w.test.power() {
        match (m(GEOMEAN), m(POWER)) {
            (Some(g), Some(p)) => {
                writeln!(out, "    power test geometric mean:      {g:.4} s")?;
                writeln!(out, "    Power@Size:                     {p:.2}")?;
            }
            _ => writeln!(out, "    power test:                     not finished")?,
        }
    }
    if w.test.throughput() {
        match m(THROUGHPUT) {
            Some(t) => writeln!(
                out,
                "    Throughput@Size:                {t:.2} ({} query streams)",
                w.streams
            )?,
            None => writeln!(out, "    throughput test:                not finished")?,
        }
    }
    if let Some(q) = m(QPHH) {
        writeln!(out, "    QphH@Size:                      {q:.2}")?;
    }
    let mut table = String::new();
    let _ = writeln!(
        table,
        "    {:<6} {:>14} {:>22}",
        "", "power (s)", "throughput avg (s)"
    );
    let find = |part: &str, name: &str| {
        outcome
            .transactions
            .iter()
            .find(|t| t.name == format!("{part}.{name}"))
            .filter(|t| t.count > 0)
            .map(|t| format!("{:.3}", t.histogram.mean() / 1e9))
            .unwrap_or_else(|| "-".into())
    };
    let names = ["RF1"].into_iter().chain(QUERY_NAMES).chain(["RF2"]);
    for name in names {
        if w.validation && name.starts_with("RF") {
            continue;
        }
        let _ = writeln!(
            table,
            "    {name:<6} {:>14} {:>22}",
            find("power", name),
            find("throughput", name)
        );
    }
    write!(out, "{table}")?;
    writeln!(out)
}
