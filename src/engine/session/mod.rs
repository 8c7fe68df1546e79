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
//!   back and re-runs the event, or reconnects (a 1 ms retry loop bounded by the reconnect
//!   limit and the run's stop scope) and re-prepares, or says the error is fatal, and the
//!   workload names the statement. `bulk_insert` shares [`connect`], [`Sessions`] and the
//!   counters, not [`Session`]: its connection is opened outside the stop scope, and a failed
//!   buffered INSERT follows sysbench's own rule (one reconnect, a fixed number of re-sends).
//! * Counters are [`counters`]': plain per-worker tallies published into a slot per event. The
//!   epoch of the measured period lives there too; a worker that keeps results of its own
//!   asks [`Session::new_period`] once per event.
//! * Stops: the connection is opened in the run's stop [`Scope`] (a stop refuses its
//!   statements and cancels the one under way), and [`Session::stopping`] is the one check
//!   between statements, in waits and in the reconnect loop.

pub mod counters;
pub mod retry;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use self::counters::{Counters, Slot, Tally};
use self::retry::{OnError, Retries};
use crate::db::interrupt::Scope;
use crate::db::{Connection, Connector, ErrKind, SqlError};
use crate::engine::EngineError;
use crate::engine::driver::EventResult;
use crate::engine::spec::Setup;

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
}

impl Sessions {
    /// The sessions of a step run with `s`; `label` begins the messages about connections.
    pub fn new(s: &Setup<'_>, label: String) -> Sessions {
        Sessions {
            connector: Connector::new(s.target.clone()),
            counters: Counters::new(s.run.threads.max(1)),
            reconnect_limit: Duration::from_secs(s.run.time_secs().max(10)),
            max_retries: s.run.max_retries,
            label,
        }
    }
}

/// A SQL workload as its sessions see it.
pub(crate) trait Open {
    /// The statements prepared on one connection.
    type Stmts;

    fn sessions(&self) -> &Sessions;

    /// Opens the next connection in `scope` and prepares what its events run.
    fn open(&self, scope: &Scope) -> Result<(Box<dyn Connection>, Self::Stmts), SqlError>;

    /// Worker `id`'s session: its first connection and statements, its counter slot.
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
        let (conn, stmts) = self.open(stop).map_err(|e| {
            EngineError::Failed(format!(
                "{}worker {id} could not connect to {} and prepare its statements: {}",
                sessions.label,
                target.endpoint(id),
                sessions.connector.explain(&e),
            ))
        })?;
        Ok(Session {
            conn: Some(conn),
            stmts,
            tally: Tally::default(),
            in_trx: false,
            stop,
            slot: sessions.counters.slot(id)?,
            retries: Retries::new(sessions.max_retries),
            epoch: sessions.counters.epoch(Ordering::Acquire),
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

    /// Reconnects (1 ms retry loop bounded by the reconnect limit and the stop) and
    /// re-prepares.
    pub fn reconnect<W: Open<Stmts = S>>(&mut self, w: &W) -> Result<(), EngineError> {
        self.close();
        self.in_trx = false;
        let sessions = w.sessions();
        let start = Instant::now();
        loop {
            match w.open(self.stop) {
                Ok((conn, stmts)) => {
                    self.conn = Some(conn);
                    self.stmts = stmts;
                    return Ok(());
                }
                Err(e)
                    if start.elapsed() < sessions.reconnect_limit
                        && !self.stopping()
                        && matches!(e.kind, ErrKind::Lost | ErrKind::Unreachable) =>
                {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => {
                    return Err(EngineError::Failed(format!(
                        "{}reconnecting to {} failed: {e}",
                        sessions.label,
                        sessions.connector.target.endpoint(0),
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
        self.in_trx = false;
        let slot = self.slot;
        let verdict = self.retries.on_error(
            e,
            w.sessions().connector.ignore_errors(),
            self.stop,
            self.conn.as_deref_mut(),
            |code| slot.count_error(code),
        );
        if verdict != OnError::Stop {
            noted(&verdict);
        }
        match verdict {
            // Whatever failed, the step is stopping: this worker ends, its event uncounted.
            OnError::Stop => Next::End(EventResult::Exhausted),
            OnError::Reconnect => {
                if let Err(f) = self.reconnect(w) {
                    return Next::End(if self.stopping() {
                        EventResult::Exhausted
                    } else {
                        EventResult::Fatal(f)
                    });
                }
                self.tally.reconnects += 1;
                self.publish();
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
