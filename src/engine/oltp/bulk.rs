//! sysbench's `bulk_insert`: each event appends one `(n,n)` row to the worker's multi-row
//! `INSERT INTO sbtest<id+1> VALUES …`, sent when the next row would pass 512 KiB and once more
//! when the worker finishes — so events are rows and queries are flushes.
//!
//! Its own small workload because its data is its own (`sbtest1..sbtest<threads>` with only
//! `id` and `k`, one table per thread) and its events never talk to the server on their own;
//! its connections and counters are the SQL session's ([`Sessions`]), and it keeps sysbench's
//! rule for a failed buffered INSERT (one reconnect, a fixed number of re-sends).

use std::fmt::Write as _;
use std::io::{self, Write};
use std::sync::atomic::AtomicBool;

use crate::db::{Connection, ErrKind, owned};
use crate::engine::driver::{Admin, EventResult, Scope, Worker, Workload};
use crate::engine::session::connections::ConnectOptions;
use crate::engine::session::counters::{Slot, Tally};
use crate::engine::session::{self, Sessions, closed};
use crate::engine::spec::{DataSpec, Setup, WorkloadSpec, never};
use crate::engine::{EngineError, IntervalSample, StepOutcome};

/// bulk_insert's entry in [`crate::engine::catalog`]: it has no options of its own; its data
/// (one table per thread) is shaped by `threads` and is refilled for every run.
pub static SPEC: WorkloadSpec = WorkloadSpec {
    name: "bulk_insert",
    summary: "multi-row INSERTs into one table per thread",
    options: &[],
    data: DataSpec {
        family: Some("bulk_insert"),
        keys: &["threads"],
        fresh_per_run: true,
    },
    needs_target: true,
    needs_local_files: false,
    ends_by_itself: never,
    build,
    definition: crate::engine::Definition::Builtin,
};

/// sysbench's bulk insert buffer.
const BULK_BYTES: usize = 512 * 1024;

fn build(s: &Setup<'_>) -> Result<Box<dyn Workload>, EngineError> {
    Ok(Box::new(Bulk {
        sessions: Sessions::new(s, String::new(), ConnectOptions::default()),
        threads: s.run.threads.max(1),
    }))
}

struct Bulk {
    sessions: Sessions,
    threads: usize,
}

impl Bulk {
    fn connect(&self) -> Result<Box<dyn Connection>, EngineError> {
        session::connect(&self.sessions.connector, 0)
    }

    /// Runs `sql(n)` for every table n of 1..=threads, printing `message(n)` first. In a suite
    /// (the target has a ledger) the statements go through [`owned::query`]: a `CREATE TABLE IF
    /// NOT EXISTS` of a table that is there does not make it the run's, and a `DROP TABLE` of a
    /// table the run did not create is not sent (nor its line printed).
    fn each_table(
        &self,
        out: &mut dyn Write,
        message: &dyn Fn(usize) -> String,
        sql: &dyn Fn(usize) -> String,
    ) -> Result<(), EngineError> {
        let t = &self.sessions.connector.target;
        let mut conn = self.connect()?;
        for n in 1..=self.threads {
            let sql = sql(n);
            let shown = match (&t.ledger, owned::dropped_tables(&sql)) {
                (Some(l), Some(tables)) => tables.iter().any(|x| l.owns(&owned::key(t, x))),
                _ => true,
            };
            if shown && !message(n).is_empty() {
                writeln!(out, "{}", message(n)).map_err(EngineError::report)?;
            }
            let done = match &t.ledger {
                Some(l) => owned::query(l.as_ref(), t, conn.as_mut(), &sql),
                None => conn.query(&sql),
            };
            done.map_err(|e| {
                let hint = if e.kind == ErrKind::NoTable {
                    ": run prepare first with the same threads"
                } else {
                    ""
                };
                EngineError::Failed(format!("table 'sbtest{n}': {e}{hint}"))
            })?;
        }
        conn.close();
        Ok(())
    }
}

impl Workload for Bulk {
    fn before_run(&self) -> Result<(), EngineError> {
        super::prepare::require_database(&self.sessions.connector)?;
        self.each_table(io::sink().by_ref(), &|_| String::new(), &|n| {
            format!("SELECT 1 FROM sbtest{n} LIMIT 0")
        })
    }

    fn banner(&self, _out: &mut dyn Write) -> io::Result<()> {
        Ok(())
    }

    fn new_worker<'a>(
        &'a self,
        id: usize,
        _stop: &'a Scope,
    ) -> Result<Box<dyn Worker + 'a>, EngineError> {
        let conn = self.connect()?;
        Ok(Box::new(BulkWorker {
            w: self,
            conn: Some(conn),
            head: format!("INSERT INTO sbtest{} VALUES", id + 1),
            buf: String::with_capacity(BULK_BYTES + 64),
            row: String::with_capacity(32),
            n: 0,
            tally: Tally::default(),
            slot: self.sessions.counters.slot(id)?,
        }))
    }

    fn interim(&self, s: &mut IntervalSample) -> Option<String> {
        self.sessions.counters.interim(s);
        None
    }

    fn sql_totals(&self) -> Option<crate::engine::SqlCounters> {
        Some(self.sessions.counters.totals())
    }

    fn finish_outcome(&self, outcome: &mut StepOutcome) {
        self.sessions.counters.finish(outcome);
    }

    fn reset_counters(&self) {
        self.sessions.counters.reset();
    }

    fn admin(&self) -> &dyn Admin {
        self
    }
}

impl Admin for Bulk {
    fn prepare(
        &self,
        cleanup: bool,
        out: &mut dyn Write,
        _stop: &AtomicBool,
    ) -> Result<(), EngineError> {
        if cleanup {
            self.each_table(out, &|n| format!("Dropping table 'sbtest{n}'..."), &|n| {
                format!("DROP TABLE IF EXISTS sbtest{n}")
            })?;
            super::prepare::after_cleanup(&self.sessions.connector, out)
        } else {
            super::prepare::refuse_existing(&self.sessions.connector, self.threads)?;
            self.each_table(
                out,
                &|n| format!("Creating table 'sbtest{n}'..."),
                &|n| {
                    format!(
                        "CREATE TABLE IF NOT EXISTS sbtest{n} (id INTEGER NOT NULL, k INTEGER DEFAULT '0' NOT NULL, PRIMARY KEY (id))"
                    )
                },
            )
        }
    }
}

struct BulkWorker<'a> {
    w: &'a Bulk,
    conn: Option<Box<dyn Connection>>,
    head: String,
    buf: String,
    row: String,
    /// Rows this worker has produced (its ids: 1, 2, …).
    n: u64,
    tally: Tally,
    slot: &'a Slot,
}

impl BulkWorker<'_> {
    /// Sends the buffered INSERT. A lost connection reconnects once and re-sends it; an
    /// ignorable error (`ignore_errors`) counts an error and re-sends it, as sysbench re-runs
    /// an event that raised one.
    fn flush(&mut self) -> Result<(), EngineError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let mut reconnected = false;
        let mut retries = 0u32;
        loop {
            let r = match self.conn.as_mut() {
                Some(conn) => conn.query(self.buf.as_str()),
                None => Err(closed()),
            };
            match r {
                Ok(done) => {
                    if done.affected > 0 {
                        self.tally.writes += 1;
                    } else {
                        self.tally.other += 1;
                    }
                    self.buf.clear();
                    self.slot.publish(&self.tally);
                    return Ok(());
                }
                Err(e) if e.kind == ErrKind::Lost && !reconnected => {
                    if let Some(old) = self.conn.take() {
                        old.close();
                    }
                    self.conn = Some(self.w.connect()?);
                    self.tally.reconnects += 1;
                    reconnected = true;
                }
                Err(e)
                    if self.w.sessions.connector.ignore_errors().contains(&e.code)
                        && retries < MAX_RETRIES =>
                {
                    self.tally.errors += 1;
                    retries += 1;
                    self.slot.publish(&self.tally);
                }
                Err(e) => {
                    return Err(EngineError::Failed(format!(
                        "`bulk_insert`: query returned {e} for query '{}…' ({} bytes)",
                        self.head,
                        self.buf.len()
                    )));
                }
            }
        }
    }
}

/// How often one buffered INSERT is re-sent after ignorable errors before the step fails
/// (an error that repeats this often is not transient).
const MAX_RETRIES: u32 = 1000;

impl Worker for BulkWorker<'_> {
    fn event(&mut self) -> EventResult {
        self.n += 1;
        self.row.clear();
        let sep = if self.buf.is_empty() { "" } else { "," };
        let _ = write!(self.row, "{sep}({},{})", self.n, self.n);
        if !self.buf.is_empty() && self.buf.len() + self.row.len() > BULK_BYTES {
            if let Err(e) = self.flush() {
                return EventResult::Fatal(e);
            }
            self.row.remove(0);
        }
        if self.buf.is_empty() {
            self.buf.push_str(&self.head);
        }
        self.buf.push_str(&self.row);
        EventResult::Done
    }

    fn finish(&mut self) -> Result<(), EngineError> {
        self.flush()?;
        if let Some(conn) = self.conn.take() {
            conn.close();
        }
        Ok(())
    }
}
