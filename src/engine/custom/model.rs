//! The compiled form of a workload declared in TOML: what [`super::compile`] produces from
//! `[workloads.NAME]` and what the runtime ([`super::run`]), the loader ([`super::load`]) and
//! the generators ([`super::generator`]) read.
//!
//! Everything a run needs is decided here, once, when the suite loads: variables are numbered
//! slots of a per-worker [`Frame`], placeholders are slots in statement order, expressions are
//! compiled ([`Expr`]). Nothing is looked up by name or parsed per event.

use std::path::PathBuf;

use super::expr::Expr;
pub use super::frame::{Frame, Slot, Val, VarKind, Vars};
use crate::db::{ByDriver, Driver};
use crate::engine::option::Kind;

/// SQL text for every driver or per driver: `None` for a driver means the definition has no
/// text for it (an error before work when the target uses it); `Some("")` means nothing to run.
pub type Sql = ByDriver<String>;

impl Sql {
    /// The SQL text of `driver`.
    pub fn for_driver(&self, driver: Driver) -> Option<&str> {
        self.get(driver).map(String::as_str)
    }
}

/// A statement with its placeholders resolved: `text` has `?` where the source had `:name`,
/// `binds` the slot of each `?` in order. One per driver, as the source may differ by driver.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bound {
    pub text: String,
    pub binds: Vec<Slot>,
}

/// [`Bound`] per driver (`None`: no text for that driver; an empty `text`: nothing to run).
pub type BoundSql = ByDriver<Bound>;

impl BoundSql {
    /// The statement of `driver`.
    pub fn for_driver(&self, driver: Driver) -> Option<&Bound> {
        self.get(driver)
    }
}

/// The distributions a generator can draw from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dist {
    Uniform,
    Gaussian,
    Special,
    Pareto,
    Zipfian,
    /// The run's `rand_type` (sysbench's `rand.default`).
    Default,
}

/// A value generator as declared (bounds are expressions over options and earlier variables).
#[derive(Clone, Debug)]
pub enum GenSpec {
    /// A plain string in the file: an expression.
    Expr(Expr),
    /// `{ uniform = [a, b] }` and the other distributions: an integer in [a, b].
    Dist { dist: Dist, lo: Expr, hi: Expr },
    /// `{ sequence = start, per_thread = bool }`: start, start + 1, … (global: one shared
    /// counter; per thread: each thread its own).
    Sequence { start: i64, per_thread: bool },
    /// `{ nurand = [A, x, y] }`: TPC-C's NURand(A, x, y) with C drawn once per run.
    NuRand { a: i64, lo: Expr, hi: Expr },
    /// `{ choice = [..], weights = [..] }` (weights empty: equal).
    Choice { values: Vec<Val>, weights: Vec<u32> },
    /// `{ string = "###-@@@" }`: sysbench's pattern (`#` digit, `@` lowercase letter).
    Pattern(String),
    /// `{ astring = [min, max] }`: random alphanumeric text of a length in [min, max].
    AString { min: Expr, max: Expr },
    /// `{ nstring = [min, max] }`: random digits of a length in [min, max].
    NString { min: Expr, max: Expr },
    /// `{ float = [min, max], scale = n }`: uniform over the numbers with `scale` decimals in
    /// [min, max].
    Float { min: Expr, max: Expr, scale: u32 },
    /// `{ syllables = "expr", words = [..] }`: each decimal digit of the value (three digits,
    /// zero-padded, as TPC-C's last names) → the word at that index, concatenated.
    Syllables { of: Expr, words: Vec<String> },
    /// `{ date = "now" }`: the current timestamp `YYYY-MM-DD HH:MM:SS`.
    Now,
    /// `{ const = v }` (and `{ null = true }` as `Const(Val::Null)`).
    Const(Val),
    /// `{ fk = "table" }`: a uniform row number of a loaded table (1..=its rows).
    Fk(String),
    /// `{ thread = true }`: the global thread id.
    Thread,
    /// A distribution with parameters of its own (#31): `{ zipfian = [a, b], exponent = 0.99 }`,
    /// `{ pareto = [a, b], h = 0.2 }`, `{ gaussian = [a, b], iter = 6 }`, `{ special = …, pct,
    /// res, iter }`, `{ zipfian = [a, b], scrambled = true }` (YCSB's scrambled zipfian).
    Tuned {
        dist: Dist,
        lo: Expr,
        hi: Expr,
        params: DistParams,
    },
    /// `{ exponential = mean, cap = 10, scale = 3 }` (#31): a negative exponential draw of
    /// mean `mean`, at most `cap` × the mean (TPC-C 5.2.5.4's think times), rounded to `scale`
    /// decimals (0: an integer).
    Exponential { mean: Expr, cap: f64, scale: u32 },
}

/// The parameters one generator gives its distribution (#31); `None`: the run's `rand_*`
/// option.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DistParams {
    /// `exponent` of `zipfian` (`rand_zipfian_exp`).
    pub exponent: Option<f64>,
    /// `h` of `pareto` (`rand_pareto_h`).
    pub h: Option<f64>,
    /// `iter` of `gaussian` and `special` (`rand_spec_iter`).
    pub iter: Option<u32>,
    /// `pct` and `res` of `special` (`rand_spec_pct`, `rand_spec_res`).
    pub pct: Option<u32>,
    pub res: Option<u32>,
    /// `scrambled = true` on `zipfian`: YCSB's ScrambledZipfianGenerator (exponent 0.99
    /// unless `exponent` says otherwise).
    pub scrambled: bool,
}

/// `[workloads.X.options.NAME]`.
#[derive(Clone, Debug)]
pub struct OptionDef {
    pub name: String,
    pub kind: Kind,
    /// The default in suite-file syntax (as `OptSpec::default`), `None`: no default.
    pub default: Option<String>,
    /// A new value means a new prepare.
    pub dataset: bool,
    pub help: String,
}

/// `headline = { name, transaction, per }`: a named rate of one transaction's commits.
#[derive(Clone, Debug, PartialEq)]
pub struct Headline {
    pub name: String,
    /// Index into [`Def::transactions`].
    pub transaction: usize,
    /// Seconds per unit: 1 (per second) or 60 (per minute).
    pub per_secs: f64,
}

/// One `[[workloads.X.load]]` entry.
#[derive(Clone, Debug)]
pub struct LoadTable {
    pub table: String,
    /// Rows (without a parent) or rows per parent row (with one): an expression over options.
    pub rows: Expr,
    /// Index into [`Def::load`] of the parent table.
    pub parent: Option<usize>,
    /// `let`: per-row variables (kind [`VarKind::Load`]) set before the columns, in order.
    pub lets: Vec<(Slot, GenSpec)>,
    pub columns: Vec<(String, GenSpec)>,
}

/// One `[[workloads.X.checks]]` entry.
#[derive(Clone, Debug)]
pub struct Check {
    pub name: String,
    pub sql: Sql,
    /// With `:option` placeholders (#31): the text with `?` and the option slots they bind
    /// (written in as literals when the check runs); `None`: `sql` as written.
    pub bound: Option<BoundSql>,
    pub expect: CheckExpect,
}

#[derive(Clone, Debug)]
pub enum CheckExpect {
    /// The first column of the first row equals this expression's value over the options
    /// (`expect = 0`, `expect = "accounts * 100"`, `expect = "'open'"`; compared as numbers
    /// when both parse).
    Value(Expr),
    /// The query returns this many rows.
    Rows(u64),
}

/// What a statement's `expect_rows` mismatch does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnMismatch {
    /// The transaction failed: an error, rolled back, the event goes on with the next one.
    #[default]
    Fail,
    /// A deliberate rollback (TPC-C's unused item number), counted as a rollback.
    Rollback,
}

/// One statement of a transaction (an entry of [`Def::statements`]).
#[derive(Clone, Debug)]
pub struct Stmt {
    /// `name`, or `<transaction>.<n>` (1-based over the transaction's statements).
    pub name: String,
    /// Index into [`Def::transactions`].
    pub txn: usize,
    pub sql: BoundSql,
    /// `ps_mode` (#31): prepared (`Auto`) or text (`Disable`) for this statement, whatever
    /// the target's; `None`: the target's.
    pub ps_mode: Option<crate::db::PsMode>,
    /// `capture`: (variable, column name) — read from the first row.
    pub capture: Vec<(Slot, String)>,
    pub expect_rows: Option<Expr>,
    pub on_mismatch: OnMismatch,
}

/// What a transaction's steps do, in order.
#[derive(Clone, Debug)]
pub enum Op {
    /// Runs statement [`Def::statements`]`[i]` (after its `when`, if any).
    Exec { stmt: usize, when: Option<Expr> },
    /// `let`: sets a variable from a generator or an expression.
    Let { slot: Slot, value: GenSpec },
    /// `repeat = count` with `index` (0-based), the block's own `let`s first in `body`.
    Repeat {
        count: Expr,
        index: Option<Slot>,
        when: Option<Expr>,
        body: Vec<Op>,
    },
    /// `for_each_row` (#31): runs statement `stmt`, then `body` once per row of its result,
    /// the statement's `capture` variables set from the row first.
    ForEach {
        stmt: usize,
        when: Option<Expr>,
        body: Vec<Op>,
    },
    /// `while = "cond"` (#31): `body` while `cond` holds (tested before each pass), at most
    /// `limit` passes (one more is a fatal error), `index` counting them from 0.
    While {
        cond: Expr,
        limit: u64,
        index: Option<Slot>,
        when: Option<Expr>,
        body: Vec<Op>,
    },
    /// `break_when = "cond"` (#31): leaves the innermost loop (`repeat`, `while`,
    /// `for_each_row`) when `cond` holds.
    Break { cond: Expr },
    /// `batch = "n"` (#31): statement `stmt` (an INSERT … VALUES with one row) sent as ONE
    /// statement of `rows` rows, its `lets` drawn (and `index` set) afresh for each row.
    Batch {
        stmt: usize,
        when: Option<Expr>,
        rows: Expr,
        index: Option<Slot>,
        lets: Vec<Op>,
        shape: Box<ByDriver<RowsShape>>,
    },
}

/// A batched INSERT's text cut around its row (#31): `prefix` (… `VALUES `), the row
/// `tuple` (`(?, ?)`) and `suffix` (` ON DUPLICATE KEY …`, ` RETURNING …`), with how many of
/// the statement's binds each holds; the text of n rows is `prefix`, n tuples separated by
/// `, `, then `suffix`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RowsShape {
    pub prefix: String,
    pub tuple: String,
    pub suffix: String,
    /// Binds of `prefix`; the row's are the next `per_row`, the rest are the suffix's.
    pub before: usize,
    pub per_row: usize,
}

impl RowsShape {
    /// The text of `n` rows (n ≥ 1) into `out`.
    pub fn text(&self, n: usize, out: &mut String) {
        out.clear();
        out.reserve(self.prefix.len() + n * (self.tuple.len() + 2) + self.suffix.len());
        out.push_str(&self.prefix);
        for i in 0..n {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(&self.tuple);
        }
        out.push_str(&self.suffix);
    }
}

/// `[workloads.X.transactions.NAME]`.
#[derive(Clone, Debug)]
pub struct Txn {
    pub name: String,
    /// The weight written as a number (0 when it is an expression).
    pub weight: u32,
    /// `weight = "expr"` (#31): an expression over the options, fixed for a run.
    pub weight_expr: Option<Expr>,
    /// Statements run without BEGIN/COMMIT.
    pub autocommit: bool,
    /// Probability (0..=1) of a deliberate ROLLBACK instead of COMMIT.
    pub rollback: f64,
    /// `retry`, `ignore_errors`, `rollback_when` (#31).
    pub rules: TxnRules,
    /// Milliseconds slept before (keying) and after (think) the transaction, outside its latency.
    pub keying: Option<GenSpec>,
    pub think: Option<GenSpec>,
    /// Workload `[params]` this transaction uses (drawn at its start), in declaration order.
    pub draws: Vec<Slot>,
    pub body: Vec<Op>,
    /// `isolation` (#31): the level the transaction runs at; `None`: the session's.
    pub isolation: Option<crate::db::Isolation>,
    /// `read_only` (#31; default: every statement starts with SELECT): SQLite begins it
    /// without taking the write lock.
    pub read_only: bool,
}

impl Txn {
    /// The transaction's weight in a run whose options are in `options` (see
    /// [`Def::option_frame`]).
    pub fn weight_in(&self, options: &Frame) -> Result<u32, String> {
        let Some(e) = &self.weight_expr else {
            return Ok(self.weight);
        };
        let v = e.eval(options).map_err(|m| format!("`weight`: {m}"))?;
        v.as_i64()
            .and_then(|i| u32::try_from(i).ok())
            .ok_or_else(|| {
                format!(
                    "`weight` = `{}` is {v}, not a whole number ≥ 0",
                    e.text().trim()
                )
            })
    }
}

/// What a retried transaction binds (`retry`, #31).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Retry {
    /// New values: its params and generators are drawn again (the default, as OLTP).
    #[default]
    Redraw,
    /// The values of its first try: every param and generator value is replayed.
    Same,
}

/// A transaction's own error and rollback rules (#31).
#[derive(Clone, Debug, Default)]
pub struct TxnRules {
    pub retry: Retry,
    /// `ignore_errors`: codes ignored (counted, rolled back, re-run) in this transaction
    /// besides the target's (names such as `deadlock` already expanded).
    pub ignore_errors: Vec<String>,
    /// `rollback_when`: evaluated after the steps; true: ROLLBACK, counted as a rollback.
    pub rollback_when: Option<Expr>,
}

impl Def {
    /// A run's option values in their slots of a frame (every other slot NULL): what `rows`,
    /// the checks' `expect` and every other expression over options read.
    pub fn option_frame(&self, options: &crate::value::Options) -> Frame {
        let mut frame = Frame {
            vals: vec![Val::Null; self.vars.len()],
        };
        for o in &self.options {
            if let Some(slot) = self.vars.slot(&o.name)
                && let Some(v) = options.get(&o.name)
            {
                frame.vals[slot] = Val::from_value(v);
            }
        }
        frame
    }
}

/// A workload declared in TOML, compiled.
#[derive(Clone, Debug)]
pub struct Def {
    pub name: String,
    pub summary: String,
    /// The file that declared it (the suite or a `workloads` file).
    pub source: PathBuf,
    pub options: Vec<OptionDef>,
    pub headline: Option<Headline>,
    /// Parallel load connections (0: the loader's default).
    pub prepare_threads: usize,
    pub schema: Vec<Sql>,
    pub after_load: Vec<Sql>,
    pub cleanup: Vec<Sql>,
    /// `init` (#31): run on every connection a run opens (the first, reconnects, one per
    /// transaction), before its statements are prepared: session settings.
    pub init: Vec<Sql>,
    pub load: Vec<LoadTable>,
    /// `fresh_prepare = true`: the runs change the data enough that each gets a new prepare.
    pub fresh_per_run: bool,
    pub checks: Vec<Check>,
    pub vars: Vars,
    /// `[params]`: (slot, generator), in declaration order.
    pub params: Vec<(Slot, GenSpec)>,
    pub transactions: Vec<Txn>,
    pub statements: Vec<Stmt>,
}
