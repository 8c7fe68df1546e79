//! Typed option values shared by suite files, plans, engines and results.
//!
//! Suite files are TOML, environment variables and `--set` are strings: everything is turned
//! into one [`Value`] type early so that matrix filters compare numbers as numbers and sizes as
//! bytes (`16K` equals `16384`), whatever layer a value came from.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One option or matrix value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Value {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Value>),
}

impl Value {
    /// The TOML type name, for error messages ("expected an integer, found a string").
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a float",
            Value::Str(_) => "a string",
            Value::List(_) => "a list",
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(*f as i64),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Converts a TOML value; dates and tables have no meaning as options.
    pub fn from_toml(v: &toml::Value) -> Option<Value> {
        Some(match v {
            toml::Value::String(s) => Value::Str(s.clone()),
            toml::Value::Integer(i) => Value::Int(*i),
            toml::Value::Float(f) => Value::Float(*f),
            toml::Value::Boolean(b) => Value::Bool(*b),
            toml::Value::Array(a) => {
                Value::List(a.iter().map(Value::from_toml).collect::<Option<_>>()?)
            }
            toml::Value::Datetime(_) | toml::Value::Table(_) => return None,
        })
    }

    /// Reads a value written on a command line or in an environment variable: TOML syntax when
    /// it parses (`4`, `true`, `[1, 2]`, `"x"`), else the raw text as a string (`16K`, `uniform`).
    pub fn parse_loose(text: &str) -> Value {
        let doc = format!("v = {text}");
        match toml::from_str::<toml::Table>(&doc) {
            Ok(t) => t
                .get("v")
                .and_then(Value::from_toml)
                .unwrap_or_else(|| Value::Str(text.into())),
            Err(_) => Value::Str(text.to_string()),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{}", if *b { "on" } else { "off" }),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Str(s) => f.write_str(s),
            Value::List(items) => {
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{item}")?;
                }
                Ok(())
            }
        }
    }
}

/// A boolean written as sysbench and suite files do: `on`/`true`/`1`/`yes` or
/// `off`/`false`/`0`/`no`, in any case; anything else is `None`.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "on" | "true" | "1" | "yes" => Some(true),
        "off" | "false" | "0" | "no" => Some(false),
        _ => None,
    }
}

/// Parses a sysbench SIZE: an integer with an optional K/M/G/T suffix (×1024ⁿ, any case, an
/// optional trailing `B`/`iB`). Unlike sysbench, which silently turns an unknown suffix into 0,
/// an unknown suffix is an error.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, suffix) = t.split_at(digits_end);
    if num.is_empty() {
        return Err(format!(
            "`{text}` is not a size: write a number with an optional K, M, G or T suffix, e.g. `16K`"
        ));
    }
    let n: u64 = num.parse().map_err(|_| format!("`{text}` is too large"))?;
    let shift = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => {
            return Err(format!(
                "`{text}` has an unknown size suffix `{suffix}`: use K, M, G or T (powers of 1024)"
            ));
        }
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("`{text}` is too large"))
}

/// Formats a byte count the way a user would write it back (`16K`, `2G`, `1000`).
pub fn format_size(bytes: u64) -> String {
    for (shift, suffix) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if bytes != 0 && bytes.is_multiple_of(1u64 << shift) {
            return format!("{}{suffix}", bytes >> shift);
        }
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_sysbench_suffixes() {
        assert_eq!(parse_size("16K"), Ok(16384));
        assert_eq!(parse_size("8k"), Ok(8192));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert!(
            parse_size("3X")
                .unwrap_err()
                .contains("unknown size suffix")
        );
        assert!(parse_size("K").is_err());
        assert_eq!(format_size(16384), "16K");
        assert_eq!(format_size(1000), "1000");
    }

    #[test]
    fn loose_values_are_typed() {
        assert_eq!(Value::parse_loose("4"), Value::Int(4));
        assert_eq!(Value::parse_loose("true"), Value::Bool(true));
        assert_eq!(Value::parse_loose("16K"), Value::Str("16K".into()));
        assert_eq!(
            Value::parse_loose("[1, 2]"),
            Value::List(vec![Value::Int(1), Value::Int(2)])
        );
    }
}

/// The resolved options of one step: every option of its workload, normalised by its
/// [`crate::engine::option::Kind`] (sizes in bytes, booleans as booleans). Built by the planner, so
/// engines can read values without re-validating them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Options(pub indexmap::IndexMap<String, Value>);

impl Options {
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// An integer option; missing or non-integer values read as 0 (the planner fills and checks
    /// every option of the workload, so this only happens for options of another workload).
    pub fn int(&self, key: &str) -> i64 {
        self.get(key).and_then(Value::as_i64).unwrap_or(0)
    }

    pub fn uint(&self, key: &str) -> u64 {
        self.int(key).max(0) as u64
    }

    pub fn float(&self, key: &str) -> f64 {
        self.get(key).and_then(Value::as_f64).unwrap_or(0.0)
    }

    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some(Value::Bool(true)))
    }

    pub fn text(&self, key: &str) -> &str {
        self.get(key).and_then(Value::as_str).unwrap_or("")
    }

    /// A list option's items (empty when unset).
    pub fn list(&self, key: &str) -> Vec<String> {
        match self.get(key) {
            Some(Value::List(items)) => items.iter().map(Value::to_string).collect(),
            Some(Value::Str(s)) if !s.is_empty() => s.split(',').map(str::to_string).collect(),
            _ => Vec::new(),
        }
    }
}
