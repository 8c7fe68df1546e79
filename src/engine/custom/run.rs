//! The runtime of a custom workload: the [`Workload`] built from a compiled [`Def`] and its
//! workers, which run the declared transaction mix.
//!
//! Shape, and why (the built-in OLTP engine's, [`crate::engine::oltp`], wherever it applies):
//! * Everything is resolved once per step in [`Custom::new`]: option values fill a template
//!   [`Frame`], every generator (params, `let`s, keying/think) is compiled once into [`Gens`],
//!   each statement keeps the [`Bound`] text of the target's driver, the mix is a cumulative
//!   weight table. An event looks nothing up by name and parses nothing.
//! * One OS thread and one connection per worker (the [`Connector`]'s round-robin); every
//!   statement is prepared once per connection (none with `ps_mode = disable`: then values are
//!   written into the text as literals, [`crate::db::sql_text::substitute`]).
//! * Hot path without allocation for plain statements: a worker reuses its frame, one
//!   parameter vector (its borrow of the frame renewed per statement, [`recycle`]) and one
//!   [`Fetched`]; a statement that neither captures nor expects rows runs with a plain
//!   `execute`, and expressions that are constants or one variable never reach minijinja.
//! * The connection, the statement counts (read/write/other, errors, reconnects) and the error
//!   policy are the SQL session OLTP uses too ([`crate::engine::session`]); the
//!   per-transaction (and, with `statement_stats`, per-statement) counts and HDR histograms
//!   are plain fields of the worker, handed over once when it finishes and merged in
//!   [`Workload::finish_outcome`]: no shared write per event. The end of `warmup_time` starts
//!   a new period of the session's counters (a shared read per event,
//!   [`Session::new_period`]): workers drop what they measured before it.
//! * Errors as OLTP's: an ignorable code counts an error, rolls back and re-runs the
//!   transaction (same transaction, fresh values, same timer); a lost connection reconnects
//!   (bounded), re-prepares, counts a reconnect and re-runs; anything else is fatal, naming the
//!   workload, the transaction, the statement, its SQL and the values bound.
//! * Keying and think times are slept inside the event but reported as idle time
//!   ([`Worker::idle_ns`]), so they count in neither the run's nor the transaction's latency.
//! * Connection models are the session's, as in OLTP: with `connect = "per_transaction"` the
//!   connection is opened after the keying time and closed before the think time, so that a
//!   thinking terminal holds no connection; statements are then prepared when first run.

mod flow;

use std::io::{self, Write};
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::error::ValueError;
use super::expr::Expr;
use super::generator::{Context, GenId, Gens, Local};
use super::load::{self, LoadCtx};
use super::model::{Bound, Def, Frame, OnMismatch, Op, Retry, Slot, Val, VarKind};
use crate::db::sql_text::{self, Syntax};
use crate::db::{Connection, Done, Fetched, P, PsMode, SqlError, StmtId};
use crate::engine::driver::{Admin, EventResult, Scope, Worker, Workload};
use crate::engine::random::{RandOptions, Rng};
use crate::engine::session::connections::ConnectOptions;
use crate::engine::session::retry::OnError;
use crate::engine::session::{Next, Open, Session, Sessions, closed};
use crate::engine::spec::Setup;
use crate::engine::{EngineError, IntervalSample, StepOutcome, TxnStats};

/// A step of a transaction with its generators compiled.
#[derive(Debug)]
enum Step {
    Exec {
        stmt: usize,
        when: Option<&'static Expr>,
    },
    Let {
        slot: Slot,
        generator: GenId,
    },
    Repeat {
        count: &'static Expr,
        index: Option<Slot>,
        when: Option<&'static Expr>,
        body: Vec<Step>,
    },
    /// #31 (`flow`): `for_each_row`, `while`, `break_when`, `batch`.
    ForEach {
        stmt: usize,
        when: Option<&'static Expr>,
        body: Vec<Step>,
    },
    While {
        cond: &'static Expr,
        limit: u64,
        index: Option<Slot>,
        when: Option<&'static Expr>,
        body: Vec<Step>,
    },
    Break {
        cond: &'static Expr,
    },
    Batch {
        stmt: usize,
        when: Option<&'static Expr>,
        rows: &'static Expr,
        index: Option<Slot>,
        lets: Vec<Step>,
        /// The text cut around its row, per driver.
        shape: &'static crate::db::ByDriver<super::model::RowsShape>,
    },
}

/// A transaction as the workers run it.
#[derive(Debug)]
struct TxnPlan {
    /// Params drawn at its start: (slot, generator).
    draws: Vec<(Slot, GenId)>,
    keying: Option<GenId>,
    think: Option<GenId>,
    body: Vec<Step>,
}

/// A statement as the workers run it.
#[derive(Debug)]
struct StmtPlan {
    /// The text for the target's driver; `None`: nothing to run there (an empty text).
    bound: Option<&'static Bound>,
    /// Read the result (`capture` or `expect_rows`): `execute_fetch` instead of `execute`.
    fetch: bool,
    /// Keep the first row (`capture`).
    first: bool,
    /// Sent as text (its `ps_mode`, else the target's, is `disable`), never prepared.
    text: bool,
}

/// Counts and latencies of one transaction (or statement) on one worker.
#[derive(Clone, Debug)]
struct Line {
    count: u64,
    errors: u64,
    rollbacks: u64,
    histogram: Histogram<u64>,
}

impl Line {
    fn new() -> Result<Line, EngineError> {
        Ok(Line {
            count: 0,
            errors: 0,
            rollbacks: 0,
            histogram: Histogram::new(3)
                .map_err(|e| EngineError::Failed(format!("histogram: {e}")))?,
        })
    }

    fn record(&mut self, ns: u64) {
        self.count += 1;
        // `record` grows the histogram; it only fails when it cannot, then the value clamps.
        if self.histogram.record(ns).is_err() {
            self.histogram.saturating_record(ns);
        }
    }

    fn clear(&mut self) {
        self.count = 0;
        self.errors = 0;
        self.rollbacks = 0;
        self.histogram.reset();
    }

    fn absorb(&mut self, o: &Line) {
        self.count += o.count;
        self.errors += o.errors;
        self.rollbacks += o.rollbacks;
        if self.histogram.add(&o.histogram).is_err() {
            for v in o.histogram.iter_recorded() {
                self.histogram
                    .saturating_record_n(v.value_iterated_to(), v.count_at_value());
            }
        }
    }
}

/// A worker's per-transaction and per-statement lines.
#[derive(Clone, Debug)]
struct Lines {
    txns: Vec<Line>,
    /// Empty unless `statement_stats`.
    stmts: Vec<Line>,
}

impl Lines {
    fn new(txns: usize, stmts: usize) -> Result<Lines, EngineError> {
        Ok(Lines {
            txns: (0..txns).map(|_| Line::new()).collect::<Result<_, _>>()?,
            stmts: (0..stmts).map(|_| Line::new()).collect::<Result<_, _>>()?,
        })
    }

    fn clear(&mut self) {
        self.txns
            .iter_mut()
            .chain(self.stmts.iter_mut())
            .for_each(Line::clear);
    }
}

/// A custom workload built for one step.
pub struct Custom {
    pub def: &'static Def,
    sessions: Sessions,
    /// Option values in their slots (every other slot NULL): each worker's frame starts as
    /// a copy.
    pub options: Frame,
    /// The run's `rand_*` options and seed (the loader's generators take them too).
    pub rand: RandOptions,
    pub seed: u64,
    gens: Gens,
    txns: Vec<TxnPlan>,
    /// Cumulative weights of the transactions (a draw in 1..=last picks the first ≥ it).
    cumulative: Vec<u64>,
    /// With `[[phases]]` that set `weights` (#30): each phase's cumulative weights, and the
    /// phase under way ([`Workload::phase_began`]); empty: `cumulative` throughout.
    phase_cumulative: Vec<Vec<u64>>,
    phase: std::sync::atomic::AtomicUsize,
    stmts: Vec<StmtPlan>,
    /// Slots of the `thread` variable.
    thread_slots: Vec<Slot>,
    /// Per transaction: the statements that open it (`SET TRANSACTION ISOLATION LEVEL …`
    /// then `BEGIN` on MySQL; `BEGIN ISOLATION LEVEL …` on PostgreSQL; a read-only one's
    /// deferred `BEGIN` on SQLite, `BEGIN IMMEDIATE` otherwise).
    begins: Vec<(Option<&'static str>, &'static str)>,
    statement_stats: bool,
    /// How `ps_mode = disable` writes values into the text.
    syntax: &'static Syntax,
    /// Lines of the workers that finished.
    finished: Mutex<Vec<Lines>>,
}

impl Custom {
    pub fn new(def: &'static Def, s: &Setup<'_>) -> Result<Custom, EngineError> {
        let fail = |m: String| EngineError::Failed(format!("workload `{}`: {m}", def.name));
        let options = def.option_frame(s.options.all());
        let statement_stats = s.options.flag("statement_stats")?;
        let driver = s.target.driver;
        let rows = table_rows(def, &options).map_err(fail)?;
        let lookup = |t: &str| rows.iter().find(|(n, _)| n == t).map(|&(_, r)| r);
        let is_option = |slot: Slot| def.vars.kinds.get(slot) == Some(&VarKind::Option);
        let ctx =
            Context::run(&s.run.rand, s.run.seed, &lookup).with_constants(&options, &is_option);
        let mut gens = Gens::default();
        gens.shard(s.run.shard);
        let var = |slot: Slot| def.vars.names.get(slot).map_or("?", String::as_str);
        let mut param_gens: Vec<Option<GenId>> = vec![None; def.vars.len()];
        for (slot, spec) in &def.params {
            let id = gens
                .add(spec, &ctx)
                .map_err(|e| fail(format!("param `{}`: {e}", var(*slot))))?;
            if let Some(g) = param_gens.get_mut(*slot) {
                *g = Some(id);
            }
        }
        let mut txns = Vec::with_capacity(def.transactions.len());
        let mut cumulative = Vec::with_capacity(def.transactions.len());
        let mut total = 0u64;
        for t in &def.transactions {
            let in_txn = |m: String| fail(format!("transaction `{}`: {m}", t.name));
            let mut draws = Vec::with_capacity(t.draws.len());
            for &slot in &t.draws {
                let g =
                    param_gens.get(slot).copied().flatten().ok_or_else(|| {
                        in_txn(format!("`{}` is not a declared param", var(slot)))
                    })?;
                draws.push((slot, g));
            }
            let mut pause = |spec: &Option<super::model::GenSpec>, key: &str| {
                spec.as_ref()
                    .map(|g| gens.add(g, &ctx))
                    .transpose()
                    .map_err(|e| in_txn(format!("`{key}`: {e}")))
            };
            let keying = pause(&t.keying, "keying")?;
            let think = pause(&t.think, "think")?;
            let body = compile_steps(&t.body, &mut gens, &ctx, def).map_err(in_txn)?;
            txns.push(TxnPlan {
                draws,
                keying,
                think,
                body,
            });
            total += u64::from(t.weight_in(&options).map_err(in_txn)?);
            cumulative.push(total);
        }
        if total == 0 {
            return Err(fail("every transaction has weight 0".into()));
        }
        let phase_cumulative = if s.run.phases.iter().any(|p| !p.weights.is_empty()) {
            s.run
                .phases
                .iter()
                .map(|p| phase_weights(def, p, &options))
                .collect::<Result<Vec<_>, String>>()
                .map_err(fail)?
        } else {
            Vec::new()
        };
        let mut stmts = Vec::with_capacity(def.statements.len());
        for st in &def.statements {
            let bound = st.sql.for_driver(driver).ok_or_else(|| {
                fail(format!(
                    "statement `{}` has no SQL for driver {}",
                    st.name,
                    driver.name()
                ))
            })?;
            stmts.push(StmtPlan {
                bound: (!bound.text.trim().is_empty()).then_some(bound),
                fetch: !st.capture.is_empty() || st.expect_rows.is_some(),
                first: !st.capture.is_empty(),
                text: st.ps_mode.unwrap_or(s.target.ps_mode) == PsMode::Disable,
            });
        }
        let thread_slots = (0..def.vars.len())
            .filter(|&i| def.vars.kinds.get(i) == Some(&VarKind::Thread))
            .collect();
        Ok(Custom {
            def,
            sessions: Sessions::new(
                s,
                format!("workload `{}`: ", def.name),
                ConnectOptions::read(&s.options, s.run.shard)?,
            ),
            options,
            rand: s.run.rand.clone(),
            seed: s.run.seed,
            gens,
            txns,
            cumulative,
            phase_cumulative,
            phase: std::sync::atomic::AtomicUsize::new(0),
            stmts,
            thread_slots,
            begins: def
                .transactions
                .iter()
                .map(|t| begin_of(t, driver))
                .collect::<Result<_, String>>()
                .map_err(fail)?,
            statement_stats,
            syntax: driver.dialect().syntax(),
            finished: Mutex::new(Vec::new()),
        })
    }

    fn load_ctx(&self) -> LoadCtx<'_> {
        LoadCtx {
            def: self.def,
            target: &self.sessions.connector.target,
            options: &self.options,
            rand: &self.rand,
            seed: self.seed,
        }
    }

    /// Transaction index of a draw `r` in 1..=total weight (the phase's weights, if it has).
    fn pick(&self, rng: &mut Rng) -> usize {
        if self.phase_cumulative.is_empty() {
            return pick(&self.cumulative, rng);
        }
        let phase = self.phase.load(std::sync::atomic::Ordering::Relaxed);
        pick(
            self.phase_cumulative.get(phase).unwrap_or(&self.cumulative),
            rng,
        )
    }

    /// The per-transaction (and per-statement) results merged over the finished workers.
    fn merged(&self) -> Option<Lines> {
        let finished = self.finished.lock().unwrap_or_else(|p| p.into_inner());
        let mut it = finished.iter();
        let mut all = it.next()?.clone();
        for w in it {
            for (a, b) in all.txns.iter_mut().zip(&w.txns) {
                a.absorb(b);
            }
            for (a, b) in all.stmts.iter_mut().zip(&w.stmts) {
                a.absorb(b);
            }
        }
        Some(all)
    }

    /// The name of statement `i`'s line: `<transaction>.<statement>`.
    fn stmt_line_name(&self, i: usize) -> String {
        let st = &self.def.statements[i];
        let txn = &self.def.transactions[st.txn].name;
        if st.name.starts_with(&format!("{txn}.")) {
            st.name.clone()
        } else {
            format!("{txn}.{}", st.name)
        }
    }
}

/// The statements of one connection.
#[derive(Default)]
pub(crate) struct Stmts {
    /// Prepared statements by statement index (`None`: sent as text, or with `lazy` not
    /// prepared yet); empty while a session has no connection.
    ids: Vec<Option<StmtId>>,
    /// Statements are prepared when first run (a connection per transaction).
    lazy: bool,
    /// `batch` statements prepared for a number of rows (#31).
    batches: flow::Batches,
}

impl Stmts {
    /// Whether statement `i` runs prepared (already, or from its first run on).
    fn prepared(&self, i: usize) -> bool {
        self.lazy || self.ids.get(i).is_some_and(Option::is_some)
    }
}

/// The error of preparing statement `name` (`text`), naming it.
fn preparing(e: SqlError, name: &str, text: &str) -> SqlError {
    SqlError::new(
        e.code.clone(),
        format!("{} (preparing statement `{name}`: '{text}')", e.message),
        e.kind,
    )
}

/// `e` of an `init` statement, with its text.
fn initialising(e: SqlError, text: &str) -> SqlError {
    SqlError::new(
        e.code.clone(),
        format!("{} (the workload's `init` statement '{text}')", e.message),
        e.kind,
    )
}

impl Open for Custom {
    type Stmts = Stmts;

    fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    /// Prepares every statement that has text for the driver, now (`eager`) or when it first
    /// runs; none with `ps_mode = disable`.
    fn prepare(&self, conn: &mut dyn Connection, eager: bool) -> Result<Stmts, SqlError> {
        let driver = self.sessions.connector.target.driver;
        for sql in &self.def.init {
            if let Some(text) = sql.for_driver(driver).filter(|t| !t.trim().is_empty()) {
                conn.query(text).map_err(|e| initialising(e, text))?;
            }
        }
        // Statements are prepared unless their `ps_mode` (else the target's) is `disable`.
        let prepared = self.stmts.iter().any(|p| !p.text);
        let mut ids = Vec::with_capacity(self.stmts.len());
        for (plan, st) in self.stmts.iter().zip(&self.def.statements) {
            ids.push(match plan.bound {
                Some(b) if !plan.text && eager => Some(
                    conn.prepare(&b.text)
                        .map_err(|e| preparing(e, &st.name, &b.text))?,
                ),
                _ => None,
            });
        }
        Ok(Stmts {
            ids,
            lazy: prepared && !eager,
            batches: flow::Batches::default(),
        })
    }
}

/// The statements that open transaction `t` on `driver` (see [`Custom::begins`]); an
/// isolation level the database does not have is an error.
fn begin_of(
    t: &super::model::Txn,
    driver: crate::db::Driver,
) -> Result<crate::db::dialect::Begin, String> {
    driver
        .dialect()
        .begin_at(t.isolation, !t.read_only)
        .ok_or_else(|| {
            format!(
                "transaction `{}`: {} has no isolation level {}: remove `isolation` or choose \
                 another (SQLite runs every transaction serializable)",
                t.name,
                driver.name(),
                t.isolation.map_or("", |l| l.sql()).to_lowercase()
            )
        })
}

/// The cumulative weights of phase `p`: its `weights` where it names a transaction, the
/// declared weight elsewhere.
fn phase_weights(
    def: &Def,
    p: &crate::engine::phases::Phase,
    options: &Frame,
) -> Result<Vec<u64>, String> {
    for (name, _) in &p.weights {
        if !def.transactions.iter().any(|t| &t.name == name) {
            return Err(format!(
                "phase `{}` weighs `{name}`, which is not one of its transactions",
                p.name
            ));
        }
    }
    let mut total = 0u64;
    let mut cumulative = Vec::with_capacity(def.transactions.len());
    for t in &def.transactions {
        let w = match p.weights.iter().find(|(n, _)| n == &t.name) {
            Some(&(_, w)) => w,
            None => t.weight_in(options)?,
        };
        total += u64::from(w);
        cumulative.push(total);
    }
    if total == 0 {
        return Err(format!("phase `{}` weighs every transaction 0", p.name));
    }
    Ok(cumulative)
}

/// The transaction of a draw on cumulative weights `cumulative` (see [`Custom::pick`]).
fn pick(cumulative: &[u64], rng: &mut Rng) -> usize {
    let total = cumulative.last().copied().unwrap_or(1).max(1);
    let r = rng.uniform(1, total);
    cumulative
        .partition_point(|&c| c < r)
        .min(cumulative.len().saturating_sub(1))
}

/// Compiles a block's steps (their generators into `gens`).
fn compile_steps(
    ops: &'static [Op],
    gens: &mut Gens,
    ctx: &Context<'_>,
    def: &Def,
) -> Result<Vec<Step>, String> {
    ops.iter()
        .map(|op| {
            Ok(match op {
                Op::Exec { stmt, when } => Step::Exec {
                    stmt: *stmt,
                    when: when.as_ref(),
                },
                Op::Let { slot, value } => Step::Let {
                    slot: *slot,
                    generator: gens.add(value, ctx).map_err(|e| {
                        format!(
                            "let `{}`: {e}",
                            def.vars.names.get(*slot).map_or("?", String::as_str)
                        )
                    })?,
                },
                Op::Repeat {
                    count,
                    index,
                    when,
                    body,
                } => Step::Repeat {
                    count,
                    index: *index,
                    when: when.as_ref(),
                    body: compile_steps(body, gens, ctx, def)?,
                },
                Op::ForEach { stmt, when, body } => Step::ForEach {
                    stmt: *stmt,
                    when: when.as_ref(),
                    body: compile_steps(body, gens, ctx, def)?,
                },
                Op::While {
                    cond,
                    limit,
                    index,
                    when,
                    body,
                } => Step::While {
                    cond,
                    limit: *limit,
                    index: *index,
                    when: when.as_ref(),
                    body: compile_steps(body, gens, ctx, def)?,
                },
                Op::Break { cond } => Step::Break { cond },
                Op::Batch {
                    stmt,
                    when,
                    rows,
                    index,
                    lets,
                    shape,
                } => Step::Batch {
                    stmt: *stmt,
                    when: when.as_ref(),
                    rows,
                    index: *index,
                    lets: compile_steps(lets, gens, ctx, def)?,
                    shape,
                },
            })
        })
        .collect()
}

/// Rows of each loaded table (for `fk`): its `rows`, times its parent's rows when it has one.
pub fn table_rows(def: &Def, options: &Frame) -> Result<Vec<(String, u64)>, String> {
    fn rows_of(
        def: &Def,
        options: &Frame,
        i: usize,
        depth: usize,
        memo: &mut Vec<Option<u64>>,
    ) -> Result<u64, String> {
        if let Some(r) = memo[i] {
            return Ok(r);
        }
        let t = &def.load[i];
        if depth > def.load.len() {
            return Err(format!(
                "load table `{}`: its parents form a cycle",
                t.table
            ));
        }
        let own = t
            .rows
            .eval_i64(options)
            .map_err(|e| format!("load table `{}`: rows: {e}", t.table))?;
        let own = u64::try_from(own)
            .map_err(|_| format!("load table `{}`: rows is {own}, below 0", t.table))?;
        let r = match t.parent {
            Some(p) if p < def.load.len() => {
                own.saturating_mul(rows_of(def, options, p, depth + 1, memo)?)
            }
            _ => own,
        };
        memo[i] = Some(r);
        Ok(r)
    }
    let mut memo = vec![None; def.load.len()];
    (0..def.load.len())
        .map(|i| {
            Ok((
                def.load[i].table.clone(),
                rows_of(def, options, i, 0, &mut memo)?,
            ))
        })
        .collect()
}

/// A vector of parameters emptied and given a new borrow lifetime, its allocation kept (an
/// empty vector's in-place collect reuses the buffer): a worker binds the frame's values
/// per statement without allocating.
fn recycle<'b>(mut v: Vec<P<'_>>) -> Vec<P<'b>> {
    v.clear();
    v.into_iter().map(|_| P::Null).collect()
}

/// A captured value: an integer or a decimal when the text is one written canonically (so
/// that `"00123"` stays text), else the text.
fn captured(text: &str) -> Val {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let canonical_int = |d: &str| {
        !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) && (d == "0" || !d.starts_with('0'))
    };
    match digits.split_once('.') {
        None if canonical_int(digits) => text.parse().map_or(Val::Str(text.to_string()), Val::Int),
        Some((int, frac))
            if canonical_int(int)
                && !frac.is_empty()
                && frac.bytes().all(|b| b.is_ascii_digit()) =>
        {
            text.parse().map_or(Val::Str(text.to_string()), Val::Float)
        }
        _ => Val::Str(text.to_string()),
    }
}

impl Workload for Custom {
    fn shares_threads(&self) -> Result<(), String> {
        self.sessions.shares_threads()
    }

    fn banner(&self, out: &mut dyn Write) -> io::Result<()> {
        let mix: Vec<String> = self
            .def
            .transactions
            .iter()
            .map(|t| match t.weight_in(&self.options) {
                Ok(w) => format!("{} {w}", t.name),
                Err(_) => format!("{} ?", t.name),
            })
            .collect();
        writeln!(
            out,
            "Custom workload `{}`: transactions (weight) {}",
            self.def.name,
            mix.join(", ")
        )?;
        writeln!(out)
    }

    fn new_worker<'a>(
        &'a self,
        id: usize,
        stop: &'a Scope,
    ) -> Result<Box<dyn Worker + 'a>, EngineError> {
        let session = self.session(id, stop)?;
        let mut frame = self.options.clone();
        for &s in &self.thread_slots {
            frame.vals[s] = Val::Int(id as i64);
        }
        let lines = Lines::new(
            self.txns.len(),
            if self.statement_stats {
                self.stmts.len()
            } else {
                0
            },
        )?;
        Ok(Box::new(CustomWorker {
            w: self,
            session,
            frame,
            local: self.gens.local(id),
            rng: Rng::for_thread(self.seed, id),
            params: Vec::with_capacity(16),
            fetched: Fetched::default(),
            flow: flow::Flow::new(self.stmts.len()),
            text: String::with_capacity(256),
            last: Last::Text("BEGIN"),
            txn: 0,
            lines,
            idle_ns: 0,
            deadline: None,
            replay: replay::Replay::default(),
        }))
    }

    fn interim(&self, s: &mut IntervalSample) -> Option<String> {
        self.sessions.counters.interim(s);
        None
    }

    fn sql_totals(&self) -> Option<crate::engine::SqlCounters> {
        Some(self.sessions.counters.totals())
    }

    fn phase_began(&self, index: usize) {
        self.phase
            .store(index, std::sync::atomic::Ordering::Relaxed);
    }

    fn before_run(&self) -> Result<(), EngineError> {
        self.sessions.hold_idle()
    }

    fn after_run(&self, stopped: bool) {
        self.sessions.release_idle(stopped);
    }

    fn finish_outcome(&self, outcome: &mut StepOutcome) {
        self.sessions.finish(outcome);
        let Some(all) = self.merged() else { return };
        let stat = |name: String, statement: bool, l: &Line| TxnStats {
            name,
            statement,
            count: l.count,
            errors: l.errors,
            rollbacks: l.rollbacks,
            histogram: l.histogram.clone(),
        };
        outcome.transactions = self
            .def
            .transactions
            .iter()
            .zip(&all.txns)
            .map(|(t, l)| stat(t.name.clone(), false, l))
            .chain(
                all.stmts
                    .iter()
                    .enumerate()
                    .map(|(i, l)| stat(self.stmt_line_name(i), true, l)),
            )
            .collect();
        if let Some(h) = &self.def.headline
            && let Some(l) = all.txns.get(h.transaction)
            && outcome.seconds > 0.0
        {
            outcome
                .metrics
                .push(("headline", l.count as f64 / outcome.seconds * h.per_secs));
        }
    }

    fn report_after(&self, outcome: &StepOutcome, out: &mut dyn Write) -> io::Result<()> {
        self.sessions.write_report(outcome, out)?;
        let headline = self.def.headline.as_ref().and_then(|h| {
            crate::engine::metric(&outcome.metrics, "headline").map(|v| (h.name.as_str(), v))
        });
        write_transactions(out, outcome, headline)
    }

    fn reset_counters(&self) {
        self.sessions.counters.reset();
    }

    fn admin(&self) -> &dyn Admin {
        self
    }
}

impl Admin for Custom {
    fn prepare(
        &self,
        cleanup: bool,
        out: &mut dyn Write,
        stop: &AtomicBool,
    ) -> Result<(), EngineError> {
        if cleanup {
            load::cleanup(&self.load_ctx(), out)
        } else {
            load::prepare(&self.load_ctx(), out, stop)
        }
    }

    fn check(&self, out: &mut dyn Write, stop: &AtomicBool) -> Result<(), EngineError> {
        load::check(&self.load_ctx(), out, stop)
    }

    fn check_existing(&self) -> Result<(), EngineError> {
        load::check_existing(&self.load_ctx())
    }
}

/// The console block after the final report: one line per transaction (and statement), then
/// the headline.
pub fn write_transactions(
    out: &mut dyn Write,
    outcome: &StepOutcome,
    headline: Option<(&str, f64)>,
) -> io::Result<()> {
    if outcome.transactions.is_empty() {
        return Ok(());
    }
    let width = outcome
        .transactions
        .iter()
        .map(|t| t.name.len())
        .max()
        .unwrap_or(0)
        .max(18)
        + 1;
    writeln!(out, "Transactions:")?;
    for t in &outcome.transactions {
        let h = &t.histogram;
        let (avg, p95) = if h.is_empty() {
            (0.0, 0.0)
        } else {
            (h.mean() / 1e6, h.value_at_quantile(0.95) as f64 / 1e6)
        };
        writeln!(
            out,
            "    {:<width$}count: {} ({:.2} per sec.)  errors: {}  rollbacks: {}  avg: {avg:.2} ms  p95: {p95:.2} ms",
            t.name,
            t.count,
            crate::engine::console::per_second(t.count, outcome.seconds),
            t.errors,
            t.rollbacks,
        )?;
    }
    if let Some((name, v)) = headline {
        writeln!(out, "    {name}: {v:.2}")?;
    }
    writeln!(out)
}

/// The last statement sent, for the fatal-error message.
#[derive(Clone, Copy, Debug)]
enum Last {
    Text(&'static str),
    Stmt(usize),
}

/// How a transaction ended.
#[derive(Debug, PartialEq)]
enum End {
    Commit,
    /// A deliberate rollback (`rollback`, `on_mismatch = "rollback"`).
    Rollback,
    /// `expect_rows` not met with `on_mismatch = "fail"`: rolled back, an error.
    Failed,
}

/// Why a transaction stopped early.
enum Stop {
    /// The step is stopping: the transaction is left where it is (its connection refuses
    /// statements; closing it rolls back).
    Halted,
    Sql(SqlError),
    /// A capture named no column, or a generator failed drawing a variable (the message
    /// names it): fatal.
    Eval(String),
    /// An expression failed: fatal.
    Value(ValueError),
    Mismatch(OnMismatch),
}

impl From<SqlError> for Stop {
    fn from(e: SqlError) -> Stop {
        Stop::Sql(e)
    }
}

/// One worker: its session and everything a transaction touches.
struct CustomWorker<'a> {
    w: &'a Custom,
    session: Session<'a, Stmts>,
    frame: Frame,
    local: Local,
    rng: Rng,
    /// Reused parameter buffer (see [`recycle`]).
    params: Vec<P<'static>>,
    fetched: Fetched,
    /// `for_each_row`, `break_when` and `batch` (#31).
    flow: flow::Flow,
    /// Reused buffer for `ps_mode = disable` texts.
    text: String,
    last: Last,
    /// The transaction running (for messages).
    txn: usize,
    lines: Lines,
    /// Keying and think time slept since the driver last asked.
    idle_ns: u64,
    /// The end of the measured run, from the event loop: a keying or think time does not
    /// sleep past it.
    deadline: Option<Instant>,
    /// The values the transaction drew, for a `retry = "same"` re-run.
    replay: replay::Replay,
}

impl CustomWorker<'_> {
    fn text_query(&mut self, sql: &'static str) -> Result<(), SqlError> {
        self.last = Last::Text(sql);
        self.session.query(sql)
    }

    fn draw(&mut self, slot: Slot, generator: GenId) -> Result<(), Stop> {
        let (gens, rng, frame, local) = (&self.w.gens, &mut self.rng, &self.frame, &mut self.local);
        let v = self
            .replay
            .draw(|| gens.draw(generator, rng, frame, local))
            .map_err(|e| Stop::Eval(format!("`{}`: {e}", self.w.def.vars.names[slot])))?;
        self.frame.vals[slot] = v;
        Ok(())
    }

    /// Sleeps the milliseconds generator `generator` draws (keying, think), counted as idle time;
    /// wakes early when the run stops or its time is up, and then says so (`Ok(false)`).
    fn pause(&mut self, generator: GenId, what: &str) -> Result<bool, String> {
        let ms = self
            .w
            .gens
            .draw(generator, &mut self.rng, &self.frame, &mut self.local)
            .map_err(|e| format!("`{what}`: {e}"))?;
        let ms = ms
            .as_f64()
            .ok_or_else(|| format!("`{what}` is {ms}, not a number of milliseconds"))?;
        if ms.is_nan() || ms <= 0.0 {
            return Ok(true);
        }
        let start = Instant::now();
        let until = start + Duration::from_secs_f64((ms / 1000.0).min(86_400.0));
        let whole = loop {
            let now = Instant::now();
            if now >= until {
                break true;
            }
            if self.session.stopping() || self.deadline.is_some_and(|d| now >= d) {
                break false;
            }
            crate::db::mux::sleep((until - now).min(Duration::from_millis(20)));
        };
        self.idle_ns = self
            .idle_ns
            .saturating_add(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX));
        Ok(whole)
    }

    fn truthy(&self, when: Option<&Expr>) -> Result<bool, Stop> {
        match when {
            None => Ok(true),
            Some(e) => e.eval(&self.frame).map(|v| v.truthy()).map_err(Stop::Value),
        }
    }

    /// Whether `cond` (`rollback_when`) holds; false without one.
    fn truthy_some(&self, cond: Option<&Expr>) -> Result<bool, Stop> {
        cond.map_or(Ok(false), |e| self.truthy(Some(e)))
    }

    fn run(&mut self, steps: &[Step]) -> Result<(), Stop> {
        for step in steps {
            // A `break_when` held: up to the loop that clears it.
            if self.flow.breaking {
                return Ok(());
            }
            if self.session.stopping() {
                return Err(Stop::Halted);
            }
            match step {
                Step::Exec { stmt, when } => {
                    if self.truthy(*when)? {
                        self.exec(*stmt)?;
                    }
                }
                Step::Let { slot, generator } => self.draw(*slot, *generator)?,
                Step::Repeat {
                    count,
                    index,
                    when,
                    body,
                } => {
                    if !self.truthy(*when)? {
                        continue;
                    }
                    let n = count.eval_i64(&self.frame).map_err(Stop::Value)?;
                    for i in 0..n.max(0) {
                        if self.session.stopping() {
                            return Err(Stop::Halted);
                        }
                        if let Some(s) = index {
                            self.frame.vals[*s] = Val::Int(i);
                        }
                        self.run(body)?;
                        if self.flow.take_break() {
                            break;
                        }
                    }
                }
                Step::ForEach { stmt, when, body } => {
                    if self.truthy(*when)? {
                        self.for_each(*stmt, body)?;
                    }
                }
                Step::While {
                    cond,
                    limit,
                    index,
                    when,
                    body,
                } => {
                    if self.truthy(*when)? {
                        self.while_loop(cond, *limit, *index, body)?;
                    }
                }
                Step::Break { cond } => self.flow.breaking = self.truthy(Some(cond))?,
                Step::Batch {
                    stmt,
                    when,
                    rows,
                    index,
                    lets,
                    shape,
                } => {
                    if self.truthy(*when)? {
                        let shape = shape.get(self.w.sessions.connector.target.driver);
                        self.batch(*stmt, rows, *index, lets, shape)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Runs statement `i`: binds its slots, reads what it captures, checks `expect_rows`.
    fn exec(&mut self, i: usize) -> Result<(), Stop> {
        let w = self.w;
        let plan = &w.stmts[i];
        let Some(bound) = plan.bound else {
            return Ok(());
        };
        let st = &w.def.statements[i];
        let want = match &st.expect_rows {
            Some(e) if !w.sessions.connector.target.dry_run => {
                Some(e.eval_i64(&self.frame).map_err(Stop::Value)?)
            }
            _ => None,
        };
        self.last = Last::Stmt(i);
        let t0 = w.statement_stats.then(Instant::now);
        let conn = self.session.conn.as_mut().ok_or_else(closed)?;
        let stmts = &mut self.session.stmts;
        let id = match stmts.ids[i] {
            None if stmts.lazy && !plan.text => {
                let id = conn
                    .prepare(&bound.text)
                    .map_err(|e| preparing(e, &st.name, &bound.text))?;
                stmts.ids[i] = Some(id);
                Some(id)
            }
            id => id,
        };
        let mut params = recycle(std::mem::take(&mut self.params));
        params.extend(bound.binds.iter().map(|&s| self.frame.vals[s].param()));
        let result = match id {
            Some(id) if plan.fetch => {
                conn.execute_fetch(id, &params, plan.first, &mut self.fetched)
            }
            Some(id) => conn.execute(id, &params),
            None => {
                sql_text::substitute(&bound.text, &params, w.syntax, &mut self.text);
                if plan.fetch {
                    conn.query_fetch(&self.text, plan.first, &mut self.fetched)
                } else {
                    conn.query(&self.text)
                }
            }
        };
        self.params = recycle(params);
        let done: Done = result?;
        self.session.tally.classify(done);
        if plan.first {
            let row = self.fetched.rows > 0 && !self.fetched.first.is_empty();
            for (slot, column) in &st.capture {
                let v = if !row {
                    Val::Null
                } else {
                    let k = self
                        .fetched
                        .columns
                        .iter()
                        .position(|c| c.eq_ignore_ascii_case(column))
                        .ok_or_else(|| {
                            Stop::Eval(format!(
                                "statement `{}` captures column `{column}`, which its result does not have (columns: {})",
                                st.name,
                                self.fetched.columns.join(", ")
                            ))
                        })?;
                    self.fetched.first[k].as_deref().map_or(Val::Null, captured)
                };
                self.frame.vals[*slot] = v;
            }
        }
        let got = if done.rows {
            self.fetched.rows
        } else {
            done.affected
        };
        self.settle(i, st.on_mismatch, want.map(|w| (w, got)), t0)
    }

    /// Ends statement `i`: a `(want, got)` row count that differs counts its error or
    /// rollback (`on_mismatch`) and stops the transaction; otherwise its time since `t0`
    /// (with `statement_stats`) is recorded.
    fn settle(
        &mut self,
        i: usize,
        on_mismatch: OnMismatch,
        rows: Option<(i64, u64)>,
        t0: Option<Instant>,
    ) -> Result<(), Stop> {
        if let Some((want, got)) = rows
            && i64::try_from(got).ok() != Some(want)
        {
            if let Some(l) = self.lines.stmts.get_mut(i) {
                match on_mismatch {
                    OnMismatch::Fail => l.errors += 1,
                    OnMismatch::Rollback => l.rollbacks += 1,
                }
            }
            return Err(Stop::Mismatch(on_mismatch));
        }
        if let (Some(t0), Some(l)) = (t0, self.lines.stmts.get_mut(i)) {
            l.record(u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX));
        }
        Ok(())
    }

    /// Ends an open transaction with ROLLBACK (a failure of that surfaces on the next
    /// statement).
    fn abandon(&mut self) {
        let ours = std::mem::take(&mut self.session.in_trx);
        if let Some(conn) = self.session.conn.as_mut()
            // A transaction the workload opened itself (`autocommit = true` and its own
            // START TRANSACTION) is rolled back too.
            && (ours || conn.in_transaction() != Some(false))
            && let Ok(done) = conn.query("ROLLBACK")
        {
            self.session.tally.classify(done);
        }
    }

    /// One transaction, from its draws to COMMIT or ROLLBACK.
    fn transaction(&mut self, t: usize) -> Result<End, Stop> {
        let w = self.w;
        let plan = &w.txns[t];
        let txn = &w.def.transactions[t];
        for &(slot, generator) in &plan.draws {
            self.draw(slot, generator)?;
        }
        if !txn.autocommit {
            let (set, begin) = w.begins[t];
            if let Some(set) = set {
                self.text_query(set)?;
            }
            self.text_query(begin)?;
            self.session.in_trx = true;
        }
        match self.run(&plan.body) {
            Ok(()) => {}
            Err(Stop::Mismatch(how)) => {
                self.abandon();
                return Ok(match how {
                    OnMismatch::Fail => End::Failed,
                    OnMismatch::Rollback => End::Rollback,
                });
            }
            Err(e) => return Err(e),
        }
        if txn.autocommit {
            return Ok(End::Commit);
        }
        let when = txn.rules.rollback_when.as_ref();
        if (txn.rollback > 0.0 && self.rng.unit() < txn.rollback) || self.truthy_some(when)? {
            self.text_query("ROLLBACK")?;
            self.session.in_trx = false;
            return Ok(End::Rollback);
        }
        self.text_query("COMMIT")?;
        self.session.in_trx = false;
        Ok(End::Commit)
    }

    /// The fatal-error message: workload, transaction, statement, SQL and values.
    fn fatal(&self, what: &str) -> EngineError {
        let w = self.w;
        let txn = &w.def.transactions[self.txn].name;
        let at = match self.last {
            Last::Text(sql) => format!("'{sql}'"),
            Last::Stmt(i) => {
                let st = &w.def.statements[i];
                let Some(bound) = w.stmts[i].bound else {
                    return EngineError::Failed(format!(
                        "workload `{}`, transaction `{txn}`: {what}",
                        w.def.name
                    ));
                };
                let sql = if self.session.stmts.prepared(i) && !w.stmts[i].text {
                    bound.text.as_str()
                } else {
                    self.text.as_str()
                };
                let values: Vec<String> = bound
                    .binds
                    .iter()
                    .map(|&s| format!("{} = {}", w.def.vars.names[s], self.frame.vals[s]))
                    .collect();
                format!(
                    "statement `{}` '{sql}' with values ({})",
                    st.name,
                    values.join(", ")
                )
            }
        };
        EngineError::Failed(format!(
            "workload `{}`, transaction `{txn}`: {what} for {at}",
            w.def.name
        ))
    }

    /// The fatal-error message of a failed expression or generator.
    fn fatal_eval(&self, what: &str) -> EngineError {
        EngineError::Failed(format!(
            "workload `{}`, transaction `{}`: {what}",
            self.w.def.name, self.w.def.transactions[self.txn].name
        ))
    }

    /// Whether the last statement was a prepared one (for the client call's name).
    fn last_prepared(&self) -> bool {
        matches!(self.last, Last::Stmt(i) if self.session.stmts.prepared(i) && !self.w.stmts[i].text)
    }
}

impl Worker for CustomWorker<'_> {
    fn event(&mut self) -> EventResult {
        let w = self.w;
        if self.session.new_period(w) {
            self.lines.clear();
        }
        let t = w.pick(&mut self.rng);
        self.txn = t;
        let plan = &w.txns[t];
        if let Some(g) = plan.keying {
            match self.pause(g, "keying") {
                Ok(true) => {}
                // The run ended during the keying time: the transaction never started.
                Ok(false) => return EventResult::Exhausted,
                Err(e) => return EventResult::Fatal(self.fatal_eval(&e)),
            }
        }
        // With a connection per transaction, connecting is part of the transaction's time.
        let start = Instant::now();
        if let Err(end) = self.session.begin_event(w) {
            return end;
        }
        self.replay
            .begin(w.def.transactions[t].rules.retry == Retry::Same);
        loop {
            let e = match self.transaction(t) {
                Ok(end) => {
                    self.session.event_done();
                    self.session.end_event();
                    let line = &mut self.lines.txns[t];
                    match end {
                        End::Commit => line
                            .record(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)),
                        End::Rollback => line.rollbacks += 1,
                        End::Failed => {
                            line.errors += 1;
                            self.session.tally.errors += 1;
                        }
                    }
                    break;
                }
                Err(Stop::Halted) => return EventResult::Exhausted,
                Err(Stop::Sql(e)) => e,
                Err(Stop::Eval(m)) => return EventResult::Fatal(self.fatal_eval(&m)),
                Err(Stop::Value(e)) => {
                    return EventResult::Fatal(self.fatal_eval(&e.to_string()));
                }
                Err(Stop::Mismatch(_)) => {
                    return EventResult::Fatal(self.fatal("internal error: unhandled mismatch"));
                }
            };
            let (last, lines) = (self.last, &mut self.lines);
            let also = &w.def.transactions[t].rules.ignore_errors;
            let next = self.session.recover_also(w, &e, also, |verdict| {
                // The failed statement's own line counts the error; an ignored one, its
                // transaction's too (the transaction re-runs).
                if let Last::Stmt(i) = last
                    && let Some(l) = lines.stmts.get_mut(i)
                {
                    l.errors += 1;
                }
                if *verdict == OnError::Retry {
                    lines.txns[t].errors += 1;
                }
            });
            match next {
                Next::Rerun => self.replay.rewind(),
                Next::End(result) => return result,
                Next::Fatal(why) => {
                    let dialect = w.sessions.connector.target.driver.dialect();
                    let call = dialect.call_name(self.last_prepared());
                    return EventResult::Fatal(self.fatal(&format!("{call} returned {e}{why}")));
                }
            }
        }
        if let Some(g) = plan.think
            && let Err(e) = self.pause(g, "think")
        {
            return EventResult::Fatal(self.fatal_eval(&e));
        }
        self.session.publish();
        EventResult::Done
    }

    fn idle_ns(&mut self) -> u64 {
        std::mem::take(&mut self.idle_ns)
    }

    /// The default loop, telling the worker the run's end before each event, so that keying
    /// and think times end with the run instead of holding it past its time.
    fn run_loop(
        &mut self,
        lp: &mut crate::engine::driver::EventLoop<'_>,
    ) -> Result<(), EngineError> {
        while lp.more_events()? {
            self.deadline = lp.deadline();
            lp.event_start();
            let result = self.event();
            let idle = self.idle_ns();
            if !lp.event_done(result, idle)? {
                break;
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), EngineError> {
        self.session.finish(self.w);
        // Lines of a period the workload has since restarted (warmup) are not results.
        if !self.session.in_period(self.w) {
            self.lines.clear();
        }
        let lines = self.lines.clone();
        self.w
            .finished
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(lines);
        Ok(())
    }
}

mod replay;

#[cfg(test)]
mod tests;
