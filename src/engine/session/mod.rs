//! The SQL session of a worker, written once for every SQL workload (the built-in OLTP
//! scripts, `bulk_insert`, custom workloads): its connection and prepared statements, its
//! counters, what it does when a statement fails, and where it checks for a stop.
//!
//! Shape, and why:
//! * A workload holds one [`Sessions`] (its [`Connector`], its [`Counters`], the reconnect
//!   limit and `max_retries`) and says how it opens a connection and prepares its statements
//!   ([`Open`]); each worker holds one [`Session`], generic over those statements, whose
//!   fields the workload's event code reads directly. Everything here is monomorphic and
//!   inlined: a statement costs what it cost when each workload had its own copy (no dynamic
//!   dispatch, allocation, clock read or atomic added per statement).
//! * Errors follow [`retry`]: after a failed statement [`Session::recover`] counts it, rolls
//!   back and re-runs the event, or reconnects (counted when the connection is lost; a 1 ms
//!   retry loop bounded by the reconnect limit and the run's stop scope) and re-prepares, or
//!   says the error is fatal, and the
//!   workload names the statement. `bulk_insert` shares [`connect`], [`Sessions`] and the
//!   counters, not [`Session`]: its connection is opened outside the stop scope, and a failed
//!   buffered INSERT follows sysbench's own rule (one reconnect, a fixed number of re-sends).
//! * Counters are [`counters`]': plain per-worker tallies published into a slot per event. The
//!   epoch of the measured period lives there too; a worker that keeps results of its own
//!   asks [`Session::new_period`] once per event.
//! * Stops: the connection is opened in the run's stop [`Scope`] (a stop refuses its
//!   statements and cancels the one under way), and [`Session::stopping`] is the one check
//!   between statements, in waits and in the reconnect loop.
//! * Connection models ([`connections`], #30): with `connect = "per_transaction"` a session
//!   has no connection between events: [`Session::begin_event`] opens one (through the
//!   reconnect loop, so a refused connect is retried as a lost one is) and
//!   [`Session::end_event`] closes it, and statements are prepared when first run on it
//!   rather than all at once. Connects during the run are timed and counted per worker.
//!   `idle_connections` are held by an [`idle::IdlePool`] the workload opens in its
//!   `before_run` ([`Sessions::hold_idle`]) and releases in its `after_run`.

pub mod connections;
pub mod counters;
pub mod idle;
pub mod retry;

use std::io::{self, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use self::connections::{ConnectOptions, ConnectStats, Model};
use self::counters::{Counters, Slot, Tally};
use self::idle::IdlePool;
use self::retry::{OnError, Retries};
use crate::db::interrupt::{Scope, guarded_in};
use crate::db::{Connection, Connector, ErrKind, SqlError};
use crate::engine::driver::EventResult;
use crate::engine::spec::Setup;
use crate::engine::{EngineError, StepOutcome};

/// What the sessions of one SQL workload share.
pub(crate) struct Sessions {
    pub connector: Connector,
    pub counters: Counters,
    /// How long a worker keeps trying to reconnect (the run's time limit, at least 10 s).
    reconnect_limit: Duration,
    /// `max_retries` ([`retry`]).
    max_retries: u64,
    /// What messages about a worker's connection begin with (the workload's name, or nothing).
    label: String,
    /// The step's workers, over every client (the idle connections' `max_connections` check).
    threads: usize,
    /// `connect` and `idle_connections` ([`connections`]).
    pub connect: ConnectOptions,
    /// The connects the finished workers handed over and where the idle connections ended.
    tally: connections::Tally,
    /// The idle connections, from [`Sessions::hold_idle`] to [`Sessions::release_idle`].
    idle: Mutex<Option<IdlePool>>,
    /// The run is over ([`Sessions::release_idle`]): the final report carries the connection
    /// metrics (a checkpoint's report, before it, has none).
    ended: AtomicBool,
}

impl Sessions {
    /// The sessions of a step run with `s`; `label` begins the messages about connections;
    /// `connect` is the step's connection model (the default for a workload without the
    /// connection options).
    pub fn new(s: &Setup<'_>, label: String, connect: ConnectOptions) -> Sessions {
        Sessions {
            connector: Connector::new(s.target.clone()),
            counters: Counters::new(s.run.threads.max(1)),
            reconnect_limit: Duration::from_secs(s.run.time_secs().max(10)),
            max_retries: s.run.max_retries,
            label,
            threads: s.run.threads.max(1),
            connect,
            tally: connections::Tally::default(),
            idle: Mutex::new(None),
            ended: AtomicBool::new(false),
        }
    }

    /// Whether this step's workers may share threads (`client_threads`, [`crate::db::mux`]):
    /// only over a network protocol.
    pub fn shares_threads(&self) -> Result<(), String> {
        if self.connector.target.driver.dialect().is_file() {
            return Err(
                "SQLite runs inside its workers' threads (its waits are file locks and \
                        busy retries, which a coroutine cannot yield on): drop `client_threads`"
                    .into(),
            );
        }
        Ok(())
    }

    /// Opens the step's idle connections (`idle_connections`), before its workers: a
    /// workload's `before_run`. An error fails the step with nothing left open.
    pub fn hold_idle(&self) -> Result<(), EngineError> {
        if self.connect.idle == 0 {
            return Ok(());
        }
        let pool = IdlePool::open(
            &self.connector.target,
            self.connect.idle,
            self.threads,
            self.connect.idle_total,
        )?;
        *self.idle.lock().unwrap_or_else(|p| p.into_inner()) = Some(pool);
        Ok(())
    }

    /// The run is over (a workload's `after_run`): the idle connections are checked, unless
    /// the step was `stopped` (a stop severed them), and closed.
    pub fn release_idle(&self, stopped: bool) {
        let pool = self.idle.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(mut pool) = pool {
            self.tally.idle_ended(pool.release(!stopped));
        }
        self.ended.store(true, Ordering::Release);
    }

    /// The SQL counters of the period into `outcome` and, in the final report, what the
    /// connections did ([`connections::Tally::metrics`]).
    pub fn finish(&self, outcome: &mut StepOutcome) {
        self.counters.finish(outcome);
        if self.ended.load(Ordering::Acquire) {
            outcome.metrics.extend(self.tally.metrics(&self.connect));
        }
    }

    /// The report's `Connections:` line, when the step uses the connection options.
    pub fn write_report(&self, outcome: &StepOutcome, out: &mut dyn Write) -> io::Result<()> {
        connections::write_report_line(out, outcome, self.connect.in_use())
    }
}

/// A new connection, its statements, and how long connecting took.
pub(crate) type Opened<S> = (Box<dyn Connection>, S, Duration);

/// A SQL workload as its sessions see it.
pub(crate) trait Open {
    /// The statements prepared on one connection (the default: none yet).
    type Stmts: Default;

    fn sessions(&self) -> &Sessions;

    /// Prepares on `conn` what its events run: all of it now (`eager`), or nothing yet, each
    /// statement then being prepared when it first runs (a connection per transaction
    /// prepares only what its transaction runs). Nothing with `ps_mode = disable`.
    fn prepare(&self, conn: &mut dyn Connection, eager: bool) -> Result<Self::Stmts, SqlError>;

    /// Opens the next connection in `scope` and prepares what its events run ([`Open::prepare`],
    /// eagerly unless connections are per transaction). The time is the client's connect
    /// alone, the prepares left out.
    fn open(&self, scope: &Scope) -> Result<Opened<Self::Stmts>, SqlError> {
        let sessions = self.sessions();
        let start = Instant::now();
        let conn = sessions.connector.connect()?;
        let took = start.elapsed();
        let mut conn = guarded_in(conn, scope);
        let eager = sessions.connect.model == Model::PerWorker;
        let stmts = self.prepare(conn.as_mut(), eager)?;
        Ok((conn, stmts, took))
    }

    /// Worker `id`'s session: its first connection and statements (none yet with connections
    /// per transaction: each event opens its own), its counter slot.
    fn session<'a>(
        &'a self,
        id: usize,
        stop: &'a Scope,
    ) -> Result<Session<'a, Self::Stmts>, EngineError>
    where
        Self: Sized,
    {
        let sessions = self.sessions();
        let target = &sessions.connector.target;
        let per_txn = sessions.connect.model == Model::PerTransaction;
        let (conn, stmts) = if per_txn {
            (None, Self::Stmts::default())
        } else {
            let (conn, stmts, _) = self.open(stop).map_err(|e| {
                EngineError::Failed(format!(
                    "{}worker {id} could not connect to {} and prepare its statements: {}",
                    sessions.label,
                    target.endpoint(id),
                    sessions.connector.explain(&e),
                ))
            })?;
            (Some(conn), stmts)
        };
        let epoch = sessions.counters.epoch(Ordering::Acquire);
        Ok(Session {
            conn,
            stmts,
            tally: Tally::default(),
            in_trx: false,
            stop,
            slot: sessions.counters.slot(id)?,
            retries: Retries::new(sessions.max_retries),
            epoch,
            per_txn,
            connects: ConnectStats::new(epoch),
        })
    }
}

/// One connection for setup work (prepare, cleanup, checks) at endpoint `n`, its failure as
/// an engine error naming the endpoint, user and database ([`EngineError::Unreachable`] when
/// nothing answered).
pub fn connect(connector: &Connector, n: usize) -> Result<Box<dyn Connection>, EngineError> {
    let t = &connector.target;
    connector.connect_at(n).map_err(|e| {
        let message = t.driver.dialect().connect_failed(t, &e);
        if e.host_unreachable() {
            EngineError::Unreachable(message)
        } else {
            EngineError::Failed(message)
        }
    })
}

/// The error of a statement sent while the connection is down.
pub(crate) fn closed() -> SqlError {
    SqlError::client("connection closed", ErrKind::Lost)
}

/// What follows a failed statement ([`Session::recover`]).
pub(crate) enum Next {
    /// Re-run the event on the same timer: the error was ignored (counted, rolled back) or
    /// the connection is back (a reconnect counted).
    Rerun,
    /// End the event with this: the step is stopping, or reconnecting failed.
    End(EventResult),
    /// The statement's error is fatal: the workload names the statement; this is what the
    /// policy adds (empty, or `: ` and why).
    Fatal(String),
}

/// One worker's connection, its prepared statements, counters and error policy.
pub(crate) struct Session<'a, S> {
    /// `None` after the connection was lost and before it is back.
    pub conn: Option<Box<dyn Connection>>,
    pub stmts: S,
    pub tally: Tally,
    /// Whether the event opened a transaction that has not ended.
    pub in_trx: bool,
    /// The run's stop scope: the connection lives in it ([`Session::stopping`]).
    stop: &'a Scope,
    slot: &'a Slot,
    retries: Retries,
    /// The measured period this worker's own results belong to.
    epoch: u64,
    /// `connect = "per_transaction"`: no connection between events.
    per_txn: bool,
    /// The connects opened during the run (not the first one, opened before the clock).
    connects: ConnectStats,
}

impl<S> Session<'_, S> {
    /// Runs a text statement and counts it.
    #[inline]
    pub fn query(&mut self, sql: &str) -> Result<(), SqlError> {
        let conn = self.conn.as_mut().ok_or_else(closed)?;
        let done = conn.query(sql)?;
        self.tally.classify(done);
        Ok(())
    }

    /// Whether the step is stopping: the check between statements and in waits.
    #[inline]
    pub fn stopping(&self) -> bool {
        self.stop.stopping()
    }

    /// The event ended (committed, rolled back on purpose, or failed): the next one starts
    /// with a fresh count of re-runs.
    #[inline]
    pub fn event_done(&mut self) {
        self.retries.event_done();
    }

    /// Publishes the counts for the collector.
    #[inline]
    pub fn publish(&self) {
        self.slot.publish(&self.tally);
    }

    /// Whether a new measured period began since the last call (the worker then drops its own
    /// results): one shared read per event.
    #[inline]
    pub fn new_period<W: Open>(&mut self, w: &W) -> bool {
        let epoch = w.sessions().counters.epoch(Ordering::Relaxed);
        if epoch == self.epoch {
            return false;
        }
        self.epoch = epoch;
        true
    }

    /// Whether this worker's own results belong to the period being reported (at its end).
    pub fn in_period<W: Open>(&self, w: &W) -> bool {
        w.sessions().counters.epoch(Ordering::Acquire) == self.epoch
    }

    /// Closes the connection, if there is one.
    pub fn close(&mut self) {
        if let Some(conn) = self.conn.take() {
            conn.close();
        }
    }

    /// The worker is done: closes the connection and hands its connects of the current
    /// period over to the workload's tally.
    pub fn finish<W: Open<Stmts = S>>(&mut self, w: &W) {
        self.close();
        let sessions = w.sessions();
        let now = sessions.counters.epoch(Ordering::Acquire);
        sessions.tally.hand_over(&self.connects, now);
    }

    /// Before an event: with connections per transaction, opens the event's connection (as a
    /// reconnect does, retried while it is refused). `Err` ends the event with what it says.
    #[inline]
    pub fn begin_event<W: Open<Stmts = S>>(&mut self, w: &W) -> Result<(), EventResult> {
        if !self.per_txn {
            return Ok(());
        }
        if self.stopping() {
            return Err(EventResult::Exhausted);
        }
        self.connect(w, "connecting").map_err(|f| {
            if self.stopping() {
                EventResult::Exhausted
            } else {
                EventResult::Fatal(f)
            }
        })
    }

    /// After an event that ended (committed or rolled back): with connections per
    /// transaction, closes its connection.
    #[inline]
    pub fn end_event(&mut self) {
        if self.per_txn {
            self.close();
        }
    }

    /// Whether each event opens its own connection (`connect = "per_transaction"`).
    pub fn per_transaction(&self) -> bool {
        self.per_txn
    }

    /// Reconnects (1 ms retry loop bounded by the reconnect limit and the stop) and
    /// re-prepares.
    pub fn reconnect<W: Open<Stmts = S>>(&mut self, w: &W) -> Result<(), EngineError> {
        self.connect(w, "reconnecting")
    }

    /// Closes the connection and opens a new one, retried every 1 ms while it is lost or
    /// refused, for at most the reconnect limit and until the step stops; the connect is
    /// timed and counted. `doing` names it in the error.
    fn connect<W: Open<Stmts = S>>(&mut self, w: &W, doing: &str) -> Result<(), EngineError> {
        self.close();
        self.in_trx = false;
        let sessions = w.sessions();
        let start = Instant::now();
        loop {
            match w.open(self.stop) {
                Ok((conn, stmts, took)) => {
                    self.conn = Some(conn);
                    self.stmts = stmts;
                    let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
                    self.connects
                        .record(ns, sessions.counters.epoch(Ordering::Relaxed));
                    return Ok(());
                }
                Err(e)
                    if start.elapsed() < sessions.reconnect_limit
                        && !self.stopping()
                        && matches!(e.kind, ErrKind::Lost | ErrKind::Unreachable) =>
                {
                    crate::db::mux::sleep(Duration::from_millis(1));
                }
                Err(e) => {
                    return Err(EngineError::Failed(format!(
                        "{}{doing} to {} failed: {}",
                        sessions.label,
                        sessions.connector.target.endpoint(0),
                        sessions.connector.explain(&e),
                    )));
                }
            }
        }
    }

    /// Applies the error policy ([`retry`]) to `e`, the failure of a statement of the event:
    /// counts it by code, then rolls back, reconnects or gives up. `noted` sees the verdict
    /// first unless the step is stopping (a workload's own per-statement error counts).
    pub fn recover<W: Open<Stmts = S>>(
        &mut self,
        w: &W,
        e: &SqlError,
        noted: impl FnOnce(&OnError),
    ) -> Next {
        self.recover_also(w, e, &[], noted)
    }

    /// [`Session::recover`] with `also` ignored besides the target's `ignore_errors` (a custom
    /// transaction's own list, #31; `"all"` in it ignores every code).
    pub fn recover_also<W: Open<Stmts = S>>(
        &mut self,
        w: &W,
        e: &SqlError,
        also: &[String],
        noted: impl FnOnce(&OnError),
    ) -> Next {
        self.in_trx = false;
        let slot = self.slot;
        let target = w.sessions().connector.ignore_errors();
        let merged;
        let ignore = if also.is_empty() || target.contains(&e.code) {
            target
        } else {
            merged = if also.iter().any(|c| c.eq_ignore_ascii_case("all")) {
                crate::db::IgnoreErrors::All
            } else {
                crate::db::IgnoreErrors::Codes(also.to_vec())
            };
            &merged
        };
        let verdict =
            self.retries
                .on_error(e, ignore, self.stop, self.conn.as_deref_mut(), |code| {
                    slot.count_error(code)
                });
        if verdict != OnError::Stop {
            noted(&verdict);
        }
        match verdict {
            // Whatever failed, the step is stopping: this worker ends, its event uncounted.
            OnError::Stop => Next::End(EventResult::Exhausted),
            OnError::Reconnect => {
                // Counted when the connection is lost, not once it is back: the collector's
                // watchers (the fault figures, #30) see the failure when it happens, not after
                // the server's downtime.
                self.tally.reconnects += 1;
                self.publish();
                if let Err(f) = self.reconnect(w) {
                    return Next::End(if self.stopping() {
                        EventResult::Exhausted
                    } else {
                        EventResult::Fatal(f)
                    });
                }
                Next::Rerun
            }
            OnError::Retry => {
                self.tally.errors += 1;
                self.publish();
                Next::Rerun
            }
            OnError::Fatal(why) if why.is_empty() => Next::Fatal(why),
            OnError::Fatal(why) => Next::Fatal(format!(": {why}")),
        }
    }
}
