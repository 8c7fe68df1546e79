//! The variables of a custom workload: values ([`Val`]), their numbering ([`Vars`], [`Slot`])
//! and a worker's values ([`Frame`]). Apart from the model so that expressions
//! ([`super::expr`]) and the model can both use them.

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
