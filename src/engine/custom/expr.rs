//! Expressions of custom workloads (`rows = "warehouses * 10"`, `when = "amount > 10"`):
//! minijinja expressions compiled once when the suite loads, evaluated over a worker's
//! [`Frame`].
//!
//! Most expressions are a number or one variable (`"customers"`, `"qty"`): those are
//! recognised when compiled and evaluated without minijinja at all. The others keep the
//! compiled minijinja expression and the slots of the variables it reads, so an evaluation
//! builds a context of only those (usually one to three values).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use super::error::ValueError;
use super::frame::{Frame, Slot, Val, Vars};

/// The one environment every expression is compiled in (strict: an undefined variable is an
/// error, never an empty value).
static ENV: LazyLock<minijinja::Environment<'static>> = LazyLock::new(|| {
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env
});

#[derive(Clone)]
enum Compiled {
    Const(Val),
    Var(Slot),
    Jinja {
        expr: std::sync::Arc<minijinja::Expression<'static, 'static>>,
        /// (name, slot) of every variable the expression reads.
        vars: Vec<(String, Slot)>,
    },
}

/// A compiled expression.
#[derive(Clone)]
pub struct Expr {
    text: String,
    compiled: Compiled,
}

impl std::fmt::Debug for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Expr({:?})", self.text)
    }
}

impl Expr {
    /// Compiles `text` over the variables `vars` declares. The error names an unknown variable
    /// (with the known ones) or minijinja's syntax error.
    pub fn compile(text: &str, vars: &Vars) -> Result<Expr, ValueError> {
        let t = text.trim();
        if let Ok(i) = t.parse::<i64>() {
            return Ok(Expr::constant(text, Val::Int(i)));
        }
        if let Ok(f) = t.parse::<f64>()
            && f.is_finite()
        {
            return Ok(Expr::constant(text, Val::Float(f)));
        }
        if is_identifier(t)
            && let Some(slot) = vars.slot(t)
        {
            return Ok(Expr {
                text: text.to_string(),
                compiled: Compiled::Var(slot),
            });
        }
        let expr = ENV
            .compile_expression_owned(t.to_string())
            .map_err(|e| ValueError::Syntax {
                expr: t.to_string(),
                detail: describe(&e),
            })?;
        let mut names: Vec<String> = expr.undeclared_variables(false).into_iter().collect();
        // minijinja's tracker does not look into what a slice cuts (`(s ~ row)[-15:]` reads
        // `row`): the declared variables named anywhere outside quotes are read too.
        for name in identifiers(t) {
            if vars.slot(name).is_some() && !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
        names.sort();
        let mut bound = Vec::with_capacity(names.len());
        for name in names {
            match vars.slot(&name) {
                Some(slot) => bound.push((name, slot)),
                None => {
                    let mut known = vars.names.clone();
                    known.sort();
                    return Err(ValueError::Unknown {
                        expr: t.to_string(),
                        name,
                        known: if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        },
                    });
                }
            }
        }
        Ok(Expr {
            text: text.to_string(),
            compiled: Compiled::Jinja {
                expr: std::sync::Arc::new(expr),
                vars: bound,
            },
        })
    }

    /// An expression that is the value `v` (`text` is what the file said).
    pub fn constant(text: &str, v: Val) -> Expr {
        Expr {
            text: text.to_string(),
            compiled: Compiled::Const(v),
        }
    }

    /// The expression with what the data cannot change settled now (#26): one that reads no
    /// variable (`"2 ** 10"`) becomes its value, and the error one fails with whatever the data
    /// (`"2 ** 100000000"`, `"10 / 0"`, `"qty / 0"`, a value that is not a finite number) is
    /// returned, so that it is refused where it is written instead of in every run.
    pub fn fold(self) -> Result<Expr, ValueError> {
        if let Some(why) = divides_by_literal_zero(&self.text) {
            return Err(ValueError::DividesByZero {
                expr: self.text.trim().to_string(),
                at: why,
            });
        }
        match &self.compiled {
            Compiled::Jinja { vars, .. } if vars.is_empty() => {
                match self.eval(&Frame::default())? {
                    Val::Float(f) if !f.is_finite() => Err(ValueError::NotFinite {
                        expr: self.text.trim().to_string(),
                        value: f.to_string(),
                    }),
                    v => Ok(Expr::constant(&self.text, v)),
                }
            }
            _ => Ok(self),
        }
    }

    /// The expression with what stays the same for a whole run put in: one that reads only
    /// variables `constant` names (a workload's options, taken from `frame`) becomes its value,
    /// so a bound like `"100000 * scale"` is not evaluated again on every draw (#32). One whose
    /// evaluation fails stays as it is, to fail where it is evaluated, as it always did.
    pub fn settle(&self, frame: &Frame, constant: &dyn Fn(Slot) -> bool) -> Expr {
        let settled = match &self.compiled {
            Compiled::Var(s) if constant(*s) => frame.vals.get(*s).cloned(),
            Compiled::Jinja { vars, .. } if vars.iter().all(|(_, s)| constant(*s)) => {
                self.eval(frame).ok()
            }
            _ => None,
        };
        match settled {
            Some(v) => Expr::constant(&self.text, v),
            None => self.clone(),
        }
    }

    /// The text as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The constant value, when the expression is one.
    pub fn as_const(&self) -> Option<&Val> {
        match &self.compiled {
            Compiled::Const(v) => Some(v),
            _ => None,
        }
    }

    /// The slots the expression reads.
    pub fn slots(&self) -> Vec<Slot> {
        match &self.compiled {
            Compiled::Const(_) => Vec::new(),
            Compiled::Var(s) => vec![*s],
            Compiled::Jinja { vars, .. } => vars.iter().map(|(_, s)| *s).collect(),
        }
    }

    /// The value over `frame`. The error says which expression failed and why.
    pub fn eval(&self, frame: &Frame) -> Result<Val, ValueError> {
        match &self.compiled {
            Compiled::Const(v) => Ok(v.clone()),
            Compiled::Var(s) => Ok(frame.vals.get(*s).cloned().unwrap_or_default()),
            Compiled::Jinja { expr, vars } => {
                let ctx: BTreeMap<&str, minijinja::Value> = vars
                    .iter()
                    .map(|(name, s)| {
                        (
                            name.as_str(),
                            to_jinja(frame.vals.get(*s).unwrap_or(&Val::Null)),
                        )
                    })
                    .collect();
                let v = expr.eval(ctx).map_err(|e| ValueError::Eval {
                    expr: self.text.clone(),
                    detail: describe(&e),
                })?;
                Ok(from_jinja(&v))
            }
        }
    }

    /// [`Expr::eval`] as an integer; the error names the expression and the value.
    pub fn eval_i64(&self, frame: &Frame) -> Result<i64, ValueError> {
        let v = self.eval(frame)?;
        v.as_i64().ok_or_else(|| match v {
            // A whole number past i64 (minijinja computes in i128) arrives as a float.
            Val::Float(f) if f.fract() == 0.0 => ValueError::TooLarge {
                expr: self.text.clone(),
                value: v.to_string(),
            },
            _ => ValueError::NotInteger {
                expr: self.text.clone(),
                value: v.to_string(),
            },
        })
    }
}

/// The first `/`, `//` or `%` whose right operand is the literal zero (`qty / 0`, `n % 0.0`),
/// in an expression that evaluates every operand: one without `and`, `or` or `if`, which could
/// skip the division. `None` when there is none, or when the zero is only the start of a
/// larger operand (`0 ** x`, `0.5`, `0[…]`, `0 | f`).
fn divides_by_literal_zero(text: &str) -> Option<String> {
    // The text outside string literals, strings blanked.
    let mut code = String::with_capacity(text.len());
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in text.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                    code.push(c);
                    continue;
                }
                code.push(' ');
            }
            None => {
                if c == '\'' || c == '"' {
                    quote = Some(c);
                }
                code.push(c);
            }
        }
    }
    let words = code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
    if words.into_iter().any(|w| matches!(w, "and" | "or" | "if")) {
        return None;
    }
    let b = code.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let op_len = match (b[i], b.get(i + 1)) {
            (b'/', Some(b'/')) => 2,
            (b'/' | b'%', _) => 1,
            _ => {
                i += 1;
                continue;
            }
        };
        let op = &code[i..i + op_len];
        let mut j = i + op_len;
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        let start = j;
        while j < b.len() && (b[j].is_ascii_digit() || b[j] == b'.' || b[j] == b'_') {
            j += 1;
        }
        let literal = code[start..j].replace('_', "");
        let mut k = j;
        while k < b.len() && b[k].is_ascii_whitespace() {
            k += 1;
        }
        let next = &code[k..];
        let continues = next.starts_with("**")
            || next.starts_with(['(', '[', '|', '.'])
            || next.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        if !literal.is_empty() && literal.parse::<f64>() == Ok(0.0) && !continues {
            return Some(format!("`{op} {}`", &code[start..j]));
        }
        i += op_len;
    }
    None
}

fn describe(e: &minijinja::Error) -> String {
    match e.detail() {
        Some(d) => format!("{} ({d})", e.kind()),
        None => e.kind().to_string(),
    }
}

pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn to_jinja(v: &Val) -> minijinja::Value {
    match v {
        Val::Null => minijinja::Value::from(()),
        Val::Int(i) => minijinja::Value::from(*i),
        Val::Float(f) => minijinja::Value::from(*f),
        Val::Str(s) => minijinja::Value::from(s.as_str()),
    }
}

fn from_jinja(v: &minijinja::Value) -> Val {
    use minijinja::value::ValueKind;
    match v.kind() {
        ValueKind::Undefined | ValueKind::None => Val::Null,
        ValueKind::Bool => Val::Int(i64::from(v.is_true())),
        ValueKind::Number => {
            if let Ok(i) = i64::try_from(v.clone()) {
                Val::Int(i)
            } else {
                f64::try_from(v.clone()).map_or(Val::Null, Val::Float)
            }
        }
        _ => v
            .as_str()
            .map_or_else(|| Val::Str(v.to_string()), |s| Val::Str(s.to_string())),
    }
}

/// The identifiers of expression text `t` outside quoted strings and not after a `.`
/// (attributes): every name it may read.
fn identifiers(t: &str) -> Vec<&str> {
    let bytes = t.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\'' || c == b'"' {
            i += 1;
            while i < bytes.len() && bytes[i] != c {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let after_dot = t[..start].trim_end().ends_with('.');
            if !after_dot {
                out.push(&t[start..i]);
            }
        } else if c.is_ascii_digit() {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::custom::frame::VarKind;

    fn vars(names: &[&str]) -> Vars {
        Vars {
            names: names.iter().map(|n| n.to_string()).collect(),
            kinds: vec![VarKind::Param; names.len()],
        }
    }

    /// What reads only the run's constants (the options) becomes its value once; what reads a
    /// per-draw variable, or fails, stays an expression (#32).
    #[test]
    fn settling_folds_what_reads_only_constants() {
        let v = vars(&["scale", "qty"]);
        let frame = Frame {
            vals: vec![Val::Int(3), Val::Null],
        };
        let option = |s: Slot| s == 0;
        let bound = Expr::compile("100000 * scale", &v).unwrap();
        assert_eq!(bound.as_const(), None);
        let settled = bound.settle(&frame, &option);
        assert_eq!(settled.as_const(), Some(&Val::Int(300_000)));
        assert_eq!(settled.text(), "100000 * scale");
        let var = Expr::compile("scale", &v).unwrap().settle(&frame, &option);
        assert_eq!(var.as_const(), Some(&Val::Int(3)));
        for per_draw in ["qty * scale", "qty"] {
            let e = Expr::compile(per_draw, &v).unwrap().settle(&frame, &option);
            assert_eq!(e.as_const(), None, "{per_draw}");
        }
        // Fails over the options: left to fail where it is evaluated, with its own error.
        let failing = Expr::compile("scale // (scale - 3)", &v).unwrap();
        let settled = failing.settle(&frame, &option);
        assert_eq!(settled.as_const(), None);
        assert!(settled.eval(&frame).is_err());
    }

    #[test]
    fn constants_variables_and_arithmetic() {
        let v = vars(&["warehouses", "qty"]);
        let frame = Frame {
            vals: vec![Val::Int(4), Val::Int(7)],
        };
        assert_eq!(
            Expr::compile("12", &v).unwrap().eval(&frame),
            Ok(Val::Int(12))
        );
        assert_eq!(
            Expr::compile("qty", &v).unwrap().eval(&frame),
            Ok(Val::Int(7))
        );
        let e = Expr::compile("warehouses * 10 + qty", &v).unwrap();
        assert_eq!(e.eval(&frame), Ok(Val::Int(47)));
        assert_eq!(e.slots(), vec![1, 0]);
        let cond = Expr::compile("qty > 5 and warehouses < 5", &v).unwrap();
        assert!(cond.eval(&frame).unwrap().truthy());
        let f = Expr::compile("qty / 2", &v).unwrap();
        assert_eq!(f.eval(&frame), Ok(Val::Float(3.5)));
    }

    /// minijinja does not report what a slice cuts: the variable is read all the same, so
    /// the expression is not folded into a constant when the suite loads.
    #[test]
    fn a_variable_under_a_slice_is_read() {
        let v = vars(&["row", "qty"]);
        let frame = Frame {
            vals: vec![Val::Int(42), Val::Int(7)],
        };
        let e = Expr::compile("('00000' ~ row)[-6:]", &v)
            .unwrap()
            .fold()
            .unwrap();
        assert_eq!(e.slots(), vec![0]);
        assert_eq!(e.eval(&frame), Ok(Val::Str("000042".into())));
        // Quoted text and attributes name no variable.
        assert_eq!(
            identifiers("'qty' ~ x.row ~ \"row\" ~ qty"),
            vec!["x", "qty"]
        );
    }

    /// #26: what the data cannot change is settled when the expression is compiled.
    #[test]
    fn constants_fold_and_certain_failures_are_found_before_any_data() {
        let v = vars(&["qty", "name"]);
        let fold = |t: &str| Expr::compile(t, &v).unwrap().fold();
        assert_eq!(
            fold("2 ** 10 + 1").unwrap().as_const(),
            Some(&Val::Int(1025))
        );
        assert_eq!(fold("qty * 2").unwrap().as_const(), None);
        for (text, why) in [
            ("2 ** 100000000", "failed"),
            ("10 / 0", "divides by zero (`/ 0`)"),
            ("qty / 0", "divides by zero (`/ 0`) whatever"),
            ("qty // 0.0 + 1", "divides by zero (`// 0.0`)"),
            ("(qty * 3) % 0", "divides by zero (`% 0`)"),
            ("2.0 ** 10000", "not a finite number"),
        ] {
            let e = fold(text).unwrap_err().to_string();
            assert!(e.contains(why), "{text}: {e}");
        }
        // A zero that starts a larger operand, inside a string, or behind a condition that may
        // skip the division is not certain to fail.
        for text in [
            "qty / 0.5",
            "qty / 0 ** qty",
            "qty / (0 + qty)",
            "name ~ ' / 0'",
            "qty / 0 if qty > 3 else 1",
            "qty > 0 and qty / 0 > 1",
        ] {
            assert!(fold(text).is_ok(), "{text}");
        }
    }

    #[test]
    fn unknown_variables_and_bad_syntax_are_refused() {
        let v = vars(&["qty"]);
        let e = Expr::compile("qty + nope", &v).unwrap_err();
        assert!(matches!(e, ValueError::Unknown { .. }), "{e}");
        let e = e.to_string();
        assert!(e.contains("`nope`") && e.contains("known: qty"), "{e}");
        let e = Expr::compile("qty +", &v).unwrap_err().to_string();
        assert!(e.contains("not a valid expression"), "{e}");
    }
}
