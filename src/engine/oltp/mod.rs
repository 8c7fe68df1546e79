//! sysbench's OLTP workloads (`oltp_read_write`, `oltp_read_only`, `oltp_point_select`, …)
//! against MySQL/MariaDB, PostgreSQL or SQLite, one [`Workload`] for every name.
//!
//! Shape, and why:
//! * One OS thread per connection (the driver's worker threads), each owning one
//!   [`Connection`] for the whole run (async drivers block on their own current-thread
//!   runtime inside it): that matched sysbench's client CPU, a shared multi-thread runtime
//!   cost 1.5× (DESIGN.md "Measured facts"). Statements are prepared once per connection. The
//!   statement sequences are written once here; the drivers differ only below [`Connection`].
//! * The connection, the counters and the error policy are the SQL session every SQL
//!   workload shares ([`crate::engine::session`]). Per statement: a result set counts as a
//!   read, else affected rows > 0 as a write, else other (sysbench's classification, not the
//!   SQL verb), published into the worker's own slot after each event.
//! * Errors as sysbench: an ignorable code counts an error, rolls back and re-runs the whole
//!   event on the same timer; a lost connection reconnects (bounded retry, given up when the
//!   run stops), re-prepares, counts a reconnect and re-runs; anything else is fatal and names
//!   the code and the statement.
//! * Data loading and the pre-run checks live in [`prepare`]; the SQL text in [`sql`]; the
//!   option tables and their typed form ([`options::Shape`]) in [`options`]. Each script is one
//!   `WorkloadSpec` static here whose builder names its [`Kind`]: no name-to-script map.
//! * Connection models (`connect`, `idle_connections`) are the session's
//!   ([`crate::engine::session::connections`]): with a connection per transaction an event
//!   opens its connection first and closes it last, and prepares a statement when it first runs
//!   it on that connection.

pub mod bulk;
pub mod options;
pub mod prepare;
pub mod sql;

use std::io::{self, Write};
use std::sync::atomic::AtomicBool;

use super::driver::{Admin, EventResult, Scope, Worker, Workload};
use super::option::OptSpec;
use super::random::{Distribution, Rng, UniqueSequence};
use super::session::connections::{CONNECTION_OPTIONS, ConnectOptions};
use super::session::{Next, Open, Session, Sessions, closed};
use super::spec::{Build, DataSpec, Setup, WorkloadSpec, never};
use super::{EngineError, IntervalSample, SqlCounters, StepOutcome};
use crate::db::{Connection, PsMode, SqlError, StmtId};

use self::options::{OLTP_COMMON, RANDOM_POINTS, RANDOM_RANGES, SBTEST_KEYS, Shape};
use self::sql::{P, Q};

/// The entries of the OLTP scripts in [`super::catalog`]: one static per script, which names
/// its [`Kind`] in its builder. Every script reads the same `sbtest` tables, so they share one
/// dataset; the two that change row counts ask for a fresh prepare per run.
pub static READ_ONLY: WorkloadSpec = script(
    "oltp_read_only",
    "OLTP read-only transactions",
    COMMON,
    false,
    |s| build(Kind::ReadOnly, s),
);
pub static READ_WRITE: WorkloadSpec = script(
    "oltp_read_write",
    "OLTP read/write transactions",
    COMMON,
    false,
    |s| build(Kind::ReadWrite, s),
);
pub static WRITE_ONLY: WorkloadSpec = script(
    "oltp_write_only",
    "OLTP write-only transactions",
    COMMON,
    false,
    |s| build(Kind::WriteOnly, s),
);
pub static POINT_SELECT: WorkloadSpec = script(
    "oltp_point_select",
    "OLTP point selects",
    COMMON,
    false,
    |s| build(Kind::PointSelect, s),
);
pub static UPDATE_INDEX: WorkloadSpec = script(
    "oltp_update_index",
    "OLTP index updates",
    COMMON,
    false,
    |s| build(Kind::UpdateIndex, s),
);
pub static UPDATE_NON_INDEX: WorkloadSpec = script(
    "oltp_update_non_index",
    "OLTP non-index updates",
    COMMON,
    false,
    |s| build(Kind::UpdateNonIndex, s),
);
pub static INSERT: WorkloadSpec = script(
    "oltp_insert",
    "OLTP inserts (rows grow: fresh prepare per run)",
    COMMON,
    true,
    |s| build(Kind::Insert, s),
);
pub static DELETE: WorkloadSpec = script(
    "oltp_delete",
    "OLTP deletes (rows shrink: fresh prepare per run)",
    COMMON,
    true,
    |s| build(Kind::Delete, s),
);
pub static SELECT_RANDOM_POINTS: WorkloadSpec = script(
    "select_random_points",
    "random point SELECTs on the k index",
    &[OLTP_COMMON, RANDOM_POINTS, CONNECTION_OPTIONS],
    false,
    |s| build(Kind::RandomPoints, s),
);
pub static SELECT_RANDOM_RANGES: WorkloadSpec = script(
    "select_random_ranges",
    "random range SELECTs on the k index",
    &[OLTP_COMMON, RANDOM_RANGES, CONNECTION_OPTIONS],
    false,
    |s| build(Kind::RandomRanges, s),
);

static COMMON: &[&[OptSpec]] = &[OLTP_COMMON, CONNECTION_OPTIONS];

/// The spec of one OLTP script.
/// The data family of every script sharing sysbench's `oltp_common.lua` (the `sbtest` tables):
/// they share one prepare, and only they have sysbench's `prewarm` command.
pub const DATA_FAMILY: &str = "sbtest";

const fn script(
    name: &'static str,
    summary: &'static str,
    options: &'static [&'static [OptSpec]],
    fresh_per_run: bool,
    build: Build,
) -> WorkloadSpec {
    WorkloadSpec {
        name,
        summary,
        options,
        data: DataSpec {
            family: Some(DATA_FAMILY),
            keys: SBTEST_KEYS,
            fresh_per_run,
        },
        needs_target: true,
        needs_local_files: false,
        ends_by_itself: never,
        build,
        definition: crate::engine::Definition::Builtin,
    }
}

/// Which OLTP script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    ReadWrite,
    ReadOnly,
    WriteOnly,
    PointSelect,
    UpdateIndex,
    UpdateNonIndex,
    Delete,
    Insert,
    /// select_random_points: one `k IN (…)` select on sbtest1.
    RandomPoints,
    /// select_random_ranges: one `count(k)` over OR-ed k ranges on sbtest1.
    RandomRanges,
}

impl Kind {
    fn transactional(self) -> bool {
        matches!(self, Kind::ReadWrite | Kind::ReadOnly | Kind::WriteOnly)
    }

    /// The statement kinds an event can run (only these are prepared).
    fn uses(self, q: Q, range_selects: bool) -> bool {
        let ranges = matches!(q, Q::Simple | Q::Sum | Q::Order | Q::Distinct);
        let writes = matches!(
            q,
            Q::IndexUpdate | Q::NonIndexUpdate | Q::Delete | Q::Insert
        );
        match self {
            Kind::ReadWrite => q == Q::Point || (ranges && range_selects) || writes,
            Kind::ReadOnly => q == Q::Point || (ranges && range_selects),
            Kind::WriteOnly => writes,
            Kind::PointSelect => q == Q::Point,
            Kind::UpdateIndex => q == Q::IndexUpdate,
            Kind::UpdateNonIndex => q == Q::NonIndexUpdate,
            Kind::Delete => q == Q::Delete,
            Kind::Insert | Kind::RandomPoints | Kind::RandomRanges => false,
        }
    }
}

/// The builder of every script's spec.
fn build(kind: Kind, s: &Setup<'_>) -> Result<Box<dyn Workload>, EngineError> {
    Ok(Box::new(Oltp::new(kind, s)?))
}

/// The statements prepared on one connection.
#[derive(Default)]
pub(crate) struct Stmts {
    /// Per table (index table − 1) and [`Q`]: `None` where the statement is sent as text
    /// (`ps_mode = disable`) or, with `lazy`, not prepared yet. Empty while a session has no
    /// connection.
    tables: Vec<[Option<StmtId>; 9]>,
    /// The one statement of select_random_points / select_random_ranges.
    special: Option<StmtId>,
    /// Statements are prepared when first run (a connection per transaction).
    lazy: bool,
}

pub struct Oltp {
    kind: Kind,
    name: &'static str,
    shape: Shape,
    sessions: Sessions,
    dist: Distribution,
    seed: u64,
    threads: usize,
    /// Statement texts per table (index table − 1), for `ps_mode = disable` and messages.
    texts: Vec<[String; 9]>,
    c_template: String,
    pad_template: String,
    unique: UniqueSequence,
    /// The one statement of select_random_points / select_random_ranges, and its parameter
    /// count.
    special: Option<(String, usize)>,
    /// The statement that opens an event's transaction (the dialect's
    /// [`crate::db::Dialect::begin`]).
    begin: &'static str,
    /// Whether the database assigns `id` ([`Oltp::server_assigns_ids`]).
    assigns_ids: bool,
    /// The `id` oltp_insert sends when the database assigns it (`None`: the column is left
    /// out); the dialect's [`crate::db::Dialect::auto_id`].
    auto_id: Option<&'static str>,
}

impl Oltp {
    /// Script `kind` of `s.spec`, from its typed configuration.
    pub fn new(kind: Kind, s: &Setup<'_>) -> Result<Oltp, EngineError> {
        let shape = Shape::new(&s.options, kind)?;
        let threads = s.run.threads.max(1);
        let seed = s.run.seed;
        let n = shape.special_count;
        let special = match kind {
            Kind::RandomPoints => {
                let marks = vec!["?"; n].join(", ");
                Some((
                    format!("SELECT id, k, c, pad FROM sbtest1 WHERE k IN ({marks})"),
                    n,
                ))
            }
            Kind::RandomRanges => {
                let ors = vec!["k BETWEEN ? AND ?"; n].join(" OR ");
                Some((format!("SELECT count(k) FROM sbtest1 WHERE {ors}"), 2 * n))
            }
            _ => None,
        };
        let texts = (1..=shape.tables)
            .map(|t| Q::ALL.map(|q| q.sql(t)))
            .collect();
        let dialect = s.target.driver.dialect();
        Ok(Oltp {
            kind,
            name: s.spec.name,
            sessions: Sessions::new(
                s,
                String::new(),
                ConnectOptions::read(&s.options, s.run.shard)?,
            ),
            dist: Distribution::new(&s.run.rand).map_err(EngineError::Failed)?,
            seed,
            threads,
            texts,
            c_template: sql::c_template(),
            pad_template: sql::pad_template(),
            unique: UniqueSequence::from_rng(&mut Rng::for_thread(seed, usize::MAX))
                .sharded(s.run.shard),
            special,
            assigns_ids: dialect.assigns_ids(shape.auto_inc, shape.secondary),
            auto_id: dialect.auto_id(),
            shape,
            begin: dialect.begin(kind != Kind::ReadOnly),
        })
    }

    /// Whether rows are inserted without `id` and the database assigns it: `auto_inc`, except
    /// where the dialect says otherwise (SQLite with `secondary`, where `id` is a plain column
    /// and the client sends ids as with `auto_inc = off`).
    pub(crate) fn server_assigns_ids(&self) -> bool {
        self.assigns_ids
    }

    /// How many statements [`Oltp::open`] prepares on each connection.
    pub(crate) fn statements_per_connection(&self) -> usize {
        if self.sessions.connector.target.ps_mode != PsMode::Auto {
            return 0;
        }
        let per_table = Q::ALL
            .iter()
            .filter(|q| self.kind.uses(**q, self.shape.range_selects))
            .count();
        self.shape.tables * per_table + usize::from(self.special.is_some())
    }
}

impl Open for Oltp {
    type Stmts = Stmts;

    fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    /// Prepares what the events run on a new connection: every statement of the script now
    /// (`eager`) or each when it first runs; nothing with `ps_mode = disable`.
    fn prepare(&self, conn: &mut dyn Connection, eager: bool) -> Result<Stmts, SqlError> {
        let mut stmts = Vec::with_capacity(self.shape.tables);
        let prepared = self.sessions.connector.target.ps_mode == PsMode::Auto;
        let now = prepared && eager;
        for t in 0..self.shape.tables {
            let mut row: [Option<StmtId>; 9] = Default::default();
            if now {
                for (i, q) in Q::ALL.iter().enumerate() {
                    if self.kind.uses(*q, self.shape.range_selects) {
                        row[i] = Some(conn.prepare(self.texts[t][i].as_str())?);
                    }
                }
            }
            stmts.push(row);
        }
        let special = match &self.special {
            Some((sql, _)) if now => Some(conn.prepare(sql.as_str())?),
            _ => None,
        };
        Ok(Stmts {
            tables: stmts,
            special,
            lazy: prepared && !eager,
        })
    }
}

impl Workload for Oltp {
    fn before_run(&self) -> Result<(), EngineError> {
        prepare::check_before_run(self)?;
        self.sessions.hold_idle()
    }

    fn after_run(&self, stopped: bool) {
        self.sessions.release_idle(stopped);
    }

    fn banner(&self, _out: &mut dyn Write) -> io::Result<()> {
        Ok(())
    }

    fn shares_threads(&self) -> Result<(), String> {
        self.sessions.shares_threads()
    }

    fn new_worker<'a>(
        &'a self,
        id: usize,
        stop: &'a Scope,
    ) -> Result<Box<dyn Worker + 'a>, EngineError> {
        Ok(Box::new(OltpWorker {
            w: self,
            session: self.session(id, stop)?,
            id,
            args: Vec::with_capacity(32),
            rng: Rng::for_thread(self.seed, id),
            c: String::with_capacity(128),
            pad: String::with_capacity(64),
            text: String::with_capacity(512),
            last: Last::Text("BEGIN"),
            events: 0,
        }))
    }

    fn interim(&self, s: &mut IntervalSample) -> Option<String> {
        self.sessions.counters.interim(s);
        None
    }

    fn sql_totals(&self) -> Option<SqlCounters> {
        Some(self.sessions.counters.totals())
    }

    fn finish_outcome(&self, outcome: &mut StepOutcome) {
        self.sessions.finish(outcome);
    }

    fn report_after(&self, outcome: &StepOutcome, out: &mut dyn Write) -> io::Result<()> {
        self.sessions.write_report(outcome, out)
    }

    fn reset_counters(&self) {
        self.sessions.counters.reset();
    }

    fn admin(&self) -> &dyn Admin {
        self
    }
}

impl Admin for Oltp {
    fn check_existing(&self) -> Result<(), EngineError> {
        prepare::check_existing(self)
    }

    fn prepare(
        &self,
        cleanup: bool,
        out: &mut dyn Write,
        stop: &AtomicBool,
    ) -> Result<(), EngineError> {
        if cleanup {
            prepare::cleanup(self, out)
        } else {
            prepare::prepare(self, out, stop)?;
            if self.shape.prewarm && !stop.load(std::sync::atomic::Ordering::Relaxed) {
                prepare::prewarm(self, out, stop)?;
            }
            Ok(())
        }
    }

    fn prewarm(&self, out: &mut dyn Write, stop: &AtomicBool) -> Result<(), EngineError> {
        prepare::prewarm(self, out, stop)
    }
}

/// The last statement sent, for the fatal-error message.
#[derive(Clone, Copy)]
enum Last {
    Text(&'static str),
    Stmt(Q, usize),
    Insert,
    Special,
}

/// One worker: its session and everything an event touches.
struct OltpWorker<'a> {
    w: &'a Oltp,
    session: Session<'a, Stmts>,
    /// Worker id (0-based): the random_points/ranges key partition.
    id: usize,
    /// Reused parameter buffer of the special statement.
    args: Vec<P<'static>>,
    rng: Rng,
    c: String,
    pad: String,
    /// Reused buffer for text-protocol queries.
    text: String,
    last: Last,
    /// Events finished on this worker (for option `reconnect`).
    events: u64,
}

impl OltpWorker<'_> {
    fn table(&mut self) -> usize {
        self.rng.uniform(1, self.w.shape.tables as u64) as usize
    }

    fn id(&mut self) -> i64 {
        self.w.dist.draw(&mut self.rng, 1, self.w.shape.table_size) as i64
    }

    fn text_query(&mut self, sql: &'static str) -> Result<(), SqlError> {
        self.last = Last::Text(sql);
        self.session.query(sql)
    }

    /// Runs statement `q` on table `t` with `params` (prepared, prepared now, or substituted).
    fn exec(&mut self, q: Q, t: usize, params: &[P<'_>]) -> Result<(), SqlError> {
        self.last = Last::Stmt(q, t);
        let conn = self.session.conn.as_mut().ok_or_else(closed)?;
        let qi = q as usize;
        let stmts = &mut self.session.stmts;
        let done = match stmts.tables[t - 1][qi] {
            Some(stmt) => conn.execute(stmt, params)?,
            None if stmts.lazy => {
                let stmt = conn.prepare(self.w.texts[t - 1][qi].as_str())?;
                stmts.tables[t - 1][qi] = Some(stmt);
                conn.execute(stmt, params)?
            }
            None => {
                sql::substitute(&self.w.texts[t - 1][qi], params, &mut self.text);
                conn.query(self.text.as_str())?
            }
        };
        self.session.tally.classify(done);
        Ok(())
    }

    fn points(&mut self, n: u64) -> Result<(), SqlError> {
        let t = self.table();
        for _ in 0..n {
            let id = self.id();
            self.exec(Q::Point, t, &[P::Int(id)])?;
        }
        Ok(())
    }

    fn ranges(&mut self, q: Q, n: u64) -> Result<(), SqlError> {
        let t = self.table();
        for _ in 0..n {
            let a = self.id();
            let b = a + self.w.shape.range_size as i64 - 1;
            self.exec(q, t, &[P::Int(a), P::Int(b)])?;
        }
        Ok(())
    }

    fn index_updates(&mut self, n: u64) -> Result<(), SqlError> {
        let t = self.table();
        for _ in 0..n {
            let id = self.id();
            self.exec(Q::IndexUpdate, t, &[P::Int(id)])?;
        }
        Ok(())
    }

    fn non_index_updates(&mut self, n: u64) -> Result<(), SqlError> {
        let t = self.table();
        for _ in 0..n {
            let mut c = std::mem::take(&mut self.c);
            self.rng.string(&self.w.c_template, &mut c);
            let id = self.id();
            let r = self.exec(Q::NonIndexUpdate, t, &[P::Str(&c), P::Int(id)]);
            self.c = c;
            r?;
        }
        Ok(())
    }

    fn delete_inserts(&mut self, n: u64) -> Result<(), SqlError> {
        let t = self.table();
        for _ in 0..n {
            let id = self.id();
            let k = self.id();
            let mut c = std::mem::take(&mut self.c);
            let mut pad = std::mem::take(&mut self.pad);
            self.rng.string(&self.w.c_template, &mut c);
            self.rng.string(&self.w.pad_template, &mut pad);
            let mut r = self.exec(Q::Delete, t, &[P::Int(id)]);
            if r.is_ok() {
                r = self.exec(
                    Q::Insert,
                    t,
                    &[P::Int(id), P::Int(k), P::Str(&c), P::Str(&pad)],
                );
            }
            self.c = c;
            self.pad = pad;
            r?;
        }
        Ok(())
    }

    /// oltp_insert: a text INSERT (never prepared, as in sysbench). With auto_inc, MySQL gets
    /// id 0 (the server assigns one) and the other drivers leave the column out.
    fn insert(&mut self) -> Result<(), SqlError> {
        use std::fmt::Write as _;
        let t = self.table();
        let k = self.id();
        let mut c = std::mem::take(&mut self.c);
        let mut pad = std::mem::take(&mut self.pad);
        self.rng.string(&self.w.c_template, &mut c);
        self.rng.string(&self.w.pad_template, &mut pad);
        self.text.clear();
        if !self.w.server_assigns_ids() {
            let id = i64::from(self.w.unique.next()) - (1i64 << 31);
            let _ = write!(
                self.text,
                "INSERT INTO sbtest{t} (id, k, c, pad) VALUES ({id}, {k}, '{c}', '{pad}')"
            );
        } else if let Some(id) = self.w.auto_id {
            let _ = write!(
                self.text,
                "INSERT INTO sbtest{t} (id, k, c, pad) VALUES ({id}, {k}, '{c}', '{pad}')"
            );
        } else {
            let _ = write!(
                self.text,
                "INSERT INTO sbtest{t} (k, c, pad) VALUES ({k}, '{c}', '{pad}')"
            );
        }
        self.c = c;
        self.pad = pad;
        self.last = Last::Insert;
        let conn = self.session.conn.as_mut().ok_or_else(closed)?;
        let done = conn.query(self.text.as_str())?;
        self.session.tally.classify(done);
        Ok(())
    }

    /// select_random_points / select_random_ranges: values from the default distribution in
    /// this worker's slice of k, [L·id, L·id + L] with L = table_size / threads.
    fn special(&mut self) -> Result<(), SqlError> {
        let Some((sql, n)) = &self.w.special else {
            return Ok(());
        };
        let l = self.w.shape.table_size / self.w.threads as u64;
        let lo = l * self.id as u64;
        self.args.clear();
        let ranges = self.w.kind == Kind::RandomRanges;
        let draws = if ranges { n / 2 } else { *n };
        for _ in 0..draws {
            let v = self.w.dist.draw(&mut self.rng, lo, lo + l) as i64;
            self.args.push(P::Int(v));
            if ranges {
                self.args.push(P::Int(v + self.w.shape.delta as i64));
            }
        }
        self.last = Last::Special;
        let conn = self.session.conn.as_mut().ok_or_else(closed)?;
        let stmts = &mut self.session.stmts;
        let done = match stmts.special {
            Some(stmt) => conn.execute(stmt, &self.args)?,
            None if stmts.lazy => {
                let stmt = conn.prepare(sql.as_str())?;
                stmts.special = Some(stmt);
                conn.execute(stmt, &self.args)?
            }
            None => {
                sql::substitute(sql, &self.args, &mut self.text);
                conn.query(self.text.as_str())?
            }
        };
        self.session.tally.classify(done);
        Ok(())
    }

    /// One sysbench `event()`.
    fn run(&mut self) -> Result<(), SqlError> {
        let sh = &self.w.shape;
        let kind = self.w.kind;
        let trx = kind.transactional() && !sh.skip_trx;
        if trx {
            self.text_query(self.w.begin)?;
            self.session.in_trx = true;
        }
        match kind {
            Kind::ReadWrite | Kind::ReadOnly | Kind::WriteOnly => {
                if kind != Kind::WriteOnly {
                    self.points(sh.point_selects)?;
                    if sh.range_selects {
                        for (q, n) in [
                            (Q::Simple, sh.simple_ranges),
                            (Q::Sum, sh.sum_ranges),
                            (Q::Order, sh.order_ranges),
                            (Q::Distinct, sh.distinct_ranges),
                        ] {
                            self.ranges(q, n)?;
                        }
                    }
                }
                if kind != Kind::ReadOnly {
                    self.index_updates(sh.index_updates)?;
                    self.non_index_updates(sh.non_index_updates)?;
                    self.delete_inserts(sh.delete_inserts)?;
                }
            }
            Kind::PointSelect => self.points(1)?,
            Kind::UpdateIndex => self.index_updates(sh.index_updates)?,
            Kind::UpdateNonIndex => self.non_index_updates(sh.non_index_updates)?,
            Kind::Delete => {
                let t = self.table();
                let id = self.id();
                self.exec(Q::Delete, t, &[P::Int(id)])?;
            }
            Kind::Insert => self.insert()?,
            Kind::RandomPoints | Kind::RandomRanges => self.special()?,
        }
        if trx {
            self.text_query("COMMIT")?;
            self.session.in_trx = false;
        }
        Ok(())
    }

    fn last_sql(&self) -> String {
        match (self.last, self.last_prepared()) {
            (Last::Text(t), _) => t.to_string(),
            (Last::Stmt(q, t), true) => self.w.texts[t - 1][q as usize].clone(),
            (Last::Special, true) => self
                .w
                .special
                .as_ref()
                .map_or_else(|| self.text.clone(), |(sql, _)| sql.clone()),
            _ => self.text.clone(),
        }
    }

    /// Whether the last statement was a prepared one (for sysbench's message): prepared on the
    /// connection, or being prepared when it first ran (`lazy`).
    fn last_prepared(&self) -> bool {
        let stmts = &self.session.stmts;
        match self.last {
            Last::Stmt(q, t) => {
                stmts.lazy
                    || stmts
                        .tables
                        .get(t - 1)
                        .is_some_and(|row| row[q as usize].is_some())
            }
            Last::Special => stmts.lazy || stmts.special.is_some(),
            _ => false,
        }
    }
}

impl Worker for OltpWorker<'_> {
    fn event(&mut self) -> EventResult {
        if let Err(end) = self.session.begin_event(self.w) {
            return end;
        }
        loop {
            let e = match self.run() {
                Ok(()) => {
                    self.session.event_done();
                    self.session.end_event();
                    self.events += 1;
                    let every = self.w.shape.reconnect_every;
                    // A connection per transaction is new at every event already.
                    if every > 0
                        && !self.session.per_transaction()
                        && self.events.is_multiple_of(every)
                    {
                        // sysbench's `--reconnect=N`: close, open, re-prepare; a reconnect.
                        if let Err(f) = self.session.reconnect(self.w) {
                            return EventResult::Fatal(f);
                        }
                        self.session.tally.reconnects += 1;
                    }
                    self.session.publish();
                    return EventResult::Done;
                }
                Err(e) => e,
            };
            match self.session.recover(self.w, &e, |_| {}) {
                Next::Rerun => {}
                Next::End(result) => return result,
                Next::Fatal(why) => {
                    let dialect = self.w.sessions.connector.target.driver.dialect();
                    let call = dialect.call_name(self.last_prepared());
                    return EventResult::Fatal(EngineError::Failed(format!(
                        "`{}`: {call} returned {e} for query '{}'{why}",
                        self.w.name,
                        self.last_sql()
                    )));
                }
            }
        }
    }

    fn finish(&mut self) -> Result<(), EngineError> {
        self.session.finish(self.w);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_prepare_only_what_their_events_run() {
        assert!(Kind::ReadOnly.uses(Q::Distinct, true));
        assert!(!Kind::ReadOnly.uses(Q::Distinct, false));
        assert!(!Kind::ReadOnly.uses(Q::Delete, true));
        assert!(Kind::WriteOnly.uses(Q::Insert, true));
        assert!(!Kind::WriteOnly.uses(Q::Point, true));
        assert!(
            !Kind::Insert.uses(Q::Insert, true),
            "oltp_insert is a text query"
        );
    }
}
