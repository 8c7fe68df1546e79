//! The compiled form of a workload declared in TOML: what `suite::workloads` produces from
//! `[workloads.NAME]` and what the runtime ([`super::run`]), the loader ([`super::load`]) and
//! the generators ([`super::generator`]) read.
//!
//! Everything a run needs is decided here, once, when the suite loads: variables are numbered
//! slots of a per-worker [`Frame`], placeholders are slots in statement order, expressions are
//! compiled ([`Expr`]). Nothing is looked up by name or parsed per event.

use std::path::PathBuf;

use super::expr::Expr;
use crate::db::Driver;
use crate::engine::option::Kind;
use crate::value::Value;

/// A variable's index in a worker's [`Frame`].
pub type Slot = usize;

/// The value of a variable: an option, a parameter, a capture, a `let`, a loop index.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Val {
    #[default]
    Null,
    Int(i64),
    Float(f64),
    Str(String),
}

impl Val {
    /// The value as an integer, if it is one (floats with no fraction and numeric strings too).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Val::Int(i) => Some(*i),
            Val::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(*f as i64),
            Val::Str(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Val::Int(i) => Some(*i as f64),
            Val::Float(f) => Some(*f),
            Val::Str(s) => s.trim().parse().ok(),
            Val::Null => None,
        }
    }

    /// Whether the value counts as true in a `when` condition.
    pub fn truthy(&self) -> bool {
        match self {
            Val::Null => false,
            Val::Int(i) => *i != 0,
            Val::Float(f) => *f != 0.0,
            Val::Str(s) => !s.is_empty(),
        }
    }

    /// The value as a statement parameter.
    pub fn param(&self) -> crate::db::P<'_> {
        use crate::db::P;
        match self {
            Val::Null => P::Null,
            Val::Int(i) => P::Int(*i),
            Val::Float(f) => P::Float(*f),
            Val::Str(s) => P::Str(s),
        }
    }

    /// An option value (`Value`) as a variable.
    pub fn from_value(v: &Value) -> Val {
        match v {
            Value::Bool(b) => Val::Int(i64::from(*b)),
            Value::Int(i) => Val::Int(*i),
            Value::Float(f) => Val::Float(*f),
            Value::Str(s) => Val::Str(s.clone()),
            Value::List(items) => Val::Str(
                items
                    .iter()
                    .map(Value::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        }
    }
}

impl std::fmt::Display for Val {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Val::Null => f.write_str("NULL"),
            Val::Int(i) => write!(f, "{i}"),
            Val::Float(x) => write!(f, "{x}"),
            Val::Str(s) => write!(f, "'{s}'"),
        }
    }
}

/// A worker's variables, indexed by [`Slot`].
#[derive(Clone, Debug, Default)]
pub struct Frame {
    pub vals: Vec<Val>,
}

/// What a variable is (for error messages and for what fills it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VarKind {
    /// A workload option: filled when the workload is built, constant during the run.
    Option,
    /// `thread`: the global thread id, filled when the worker starts.
    Thread,
    /// A `[params]` generator, drawn at the start of each transaction that uses it.
    Param,
    /// A transaction's or block's `let`.
    Let,
    /// A step's `capture`.
    Capture,
    /// A `repeat` block's `index`.
    Index,
    /// `row`, `child`, `parent_row` in a load.
    Load,
}

/// Every variable of a workload: slot → name and kind.
#[derive(Clone, Debug, Default)]
pub struct Vars {
    pub names: Vec<String>,
    pub kinds: Vec<VarKind>,
}

impl Vars {
    pub fn slot(&self, name: &str) -> Option<Slot> {
        self.names.iter().position(|n| n == name)
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// SQL text for every driver or per driver: `None` for a driver means the definition has no
/// text for it (an error before work when the target uses it); `Some("")` means nothing to run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sql {
    pub mysql: Option<String>,
    pub pgsql: Option<String>,
    pub sqlite: Option<String>,
}

impl Sql {
    pub fn all(text: &str) -> Sql {
        Sql {
            mysql: Some(text.to_string()),
            pgsql: Some(text.to_string()),
            sqlite: Some(text.to_string()),
        }
    }

    pub fn for_driver(&self, driver: Driver) -> Option<&str> {
        match driver {
            Driver::Mysql => self.mysql.as_deref(),
            Driver::Pgsql => self.pgsql.as_deref(),
            Driver::Sqlite => self.sqlite.as_deref(),
        }
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
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BoundSql {
    pub mysql: Option<Bound>,
    pub pgsql: Option<Bound>,
    pub sqlite: Option<Bound>,
}

impl BoundSql {
    pub fn for_driver(&self, driver: Driver) -> Option<&Bound> {
        match driver {
            Driver::Mysql => self.mysql.as_ref(),
            Driver::Pgsql => self.pgsql.as_ref(),
            Driver::Sqlite => self.sqlite.as_ref(),
        }
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
    pub expect: CheckExpect,
}

#[derive(Clone, Debug, PartialEq)]
pub enum CheckExpect {
    /// The first column of the first row equals this (compared as numbers when both parse).
    Value(Val),
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
}

/// `[workloads.X.transactions.NAME]`.
#[derive(Clone, Debug)]
pub struct Txn {
    pub name: String,
    pub weight: u32,
    /// Statements run without BEGIN/COMMIT.
    pub autocommit: bool,
    /// Probability (0..=1) of a deliberate ROLLBACK instead of COMMIT.
    pub rollback: f64,
    /// Milliseconds slept before (keying) and after (think) the transaction, outside its latency.
    pub keying: Option<GenSpec>,
    pub think: Option<GenSpec>,
    /// Workload `[params]` this transaction uses (drawn at its start), in declaration order.
    pub draws: Vec<Slot>,
    pub body: Vec<Op>,
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
