//! Options as workloads declare them: the [`Kind`] of a value, one [`OptSpec`] per option, and
//! the [`Reader`] through which a workload's builder reads its options.
//!
//! A workload states its options once, as `OptSpec` tables next to the code that reads them; the
//! suite validator, the planner, `sbsuite sysbench`, the JSON schema and the help text all read
//! those tables through [`super::catalog`]. Values arrive already checked and normalised by
//! [`Kind::coerce`] (sizes in bytes, booleans as booleans), so reading them cannot fail on the
//! user's input. What *can* go wrong is the code: a key the spec does not declare used to read
//! as 0 in silence; [`Reader`] refuses it with an error that names the workload and the key, and
//! `catalog`'s tests build every workload from its defaults so such a slip fails a test.

use super::EngineError;
use crate::value::{Options, Value, parse_bool, parse_size};

/// The type of an option, which decides how raw values are checked and normalised.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Bool,
    Int {
        min: i64,
        max: i64,
    },
    Float {
        min: f64,
        max: f64,
    },
    /// An integer, or the one word `word` (`warmup_time = "auto"`): normalised to an integer or
    /// to the word.
    IntOr {
        min: i64,
        max: i64,
        word: &'static str,
    },
    /// Bytes; accepts sysbench suffixes (`16K`, `2G`) and normalises to an integer.
    Size,
    Str,
    Enum(&'static [&'static str]),
    /// A comma-separated list (sysbench's LIST): `"direct,sync"` or `["direct", "sync"]`;
    /// with `Some(choices)` every item must be one of them. Normalised to a list of strings.
    List(Option<&'static [&'static str]>),
}

impl Kind {
    /// Human description used in errors: "expected {describe}".
    pub fn describe(&self) -> String {
        match self {
            Kind::Bool => "a boolean (true/false, on/off)".into(),
            Kind::Int { min, max } if *max == i64::MAX => format!("an integer >= {min}"),
            Kind::Int { min, max } => format!("an integer from {min} to {max}"),
            Kind::IntOr { min, max, word } => {
                let int = Kind::Int {
                    min: *min,
                    max: *max,
                }
                .describe();
                format!("{int} or \"{word}\"")
            }
            Kind::Float { min, max } => format!("a number from {min} to {max}"),
            Kind::Size => "a size (bytes, or a number with K, M, G or T, e.g. \"16K\")".into(),
            Kind::Str => "a string".into(),
            Kind::Enum(choices) => format!("one of {}", choices.join(", ")),
            Kind::List(Some(choices)) => format!("a list of {}", choices.join(", ")),
            Kind::List(None) => "a comma-separated list".into(),
        }
    }

    /// Checks a raw value and returns its normalised form: sizes become bytes, "on"/"off"
    /// become booleans, integral floats become integers. The error says what was expected.
    pub fn coerce(&self, v: &Value) -> Result<Value, String> {
        let found = || {
            format!(
                "expected {}, found {} `{v}`",
                self.describe(),
                v.type_name()
            )
        };
        match self {
            Kind::Bool => match v {
                Value::Bool(b) => Ok(Value::Bool(*b)),
                Value::Int(0) => Ok(Value::Bool(false)),
                Value::Int(1) => Ok(Value::Bool(true)),
                Value::Str(s) => parse_bool(s).map(Value::Bool).ok_or_else(found),
                _ => Err(found()),
            },
            Kind::Int { min, max } => {
                let i = match v {
                    Value::Str(s) => s.trim().parse::<i64>().map_err(|_| found())?,
                    other => other.as_i64().ok_or_else(found)?,
                };
                if i < *min || i > *max {
                    return Err(format!("{i} is out of range: expected {}", self.describe()));
                }
                Ok(Value::Int(i))
            }
            Kind::IntOr { min, max, word } => match v {
                Value::Str(s) if s.trim().eq_ignore_ascii_case(word) => {
                    Ok(Value::Str(word.to_string()))
                }
                _ => Kind::Int {
                    min: *min,
                    max: *max,
                }
                .coerce(v)
                .map_err(|_| found()),
            },
            Kind::Float { min, max } => {
                let x = match v {
                    Value::Str(s) => s.trim().parse::<f64>().map_err(|_| found())?,
                    other => other.as_f64().ok_or_else(found)?,
                };
                if !(x >= *min && x <= *max) {
                    return Err(format!("{x} is out of range: expected {}", self.describe()));
                }
                Ok(Value::Float(x))
            }
            Kind::Size => match v {
                Value::Int(i) if *i >= 0 => Ok(Value::Int(*i)),
                Value::Str(s) => {
                    let bytes = parse_size(s)?;
                    i64::try_from(bytes)
                        .map(Value::Int)
                        .map_err(|_| format!("`{s}` is too large"))
                }
                _ => Err(found()),
            },
            Kind::Str => match v {
                Value::Str(s) => Ok(Value::Str(s.clone())),
                Value::Int(_) | Value::Float(_) | Value::Bool(_) => Ok(Value::Str(v.to_string())),
                Value::List(_) => Err(found()),
            },
            Kind::Enum(choices) => match v {
                Value::Str(s) if choices.contains(&s.as_str()) => Ok(Value::Str(s.clone())),
                _ => Err(found()),
            },
            Kind::List(choices) => {
                let items: Vec<String> = match v {
                    Value::List(items) => items.iter().map(Value::to_string).collect(),
                    Value::Str(s) => s
                        .split(',')
                        .map(|i| i.trim().to_string())
                        .filter(|i| !i.is_empty())
                        .collect(),
                    Value::Int(_) | Value::Float(_) => vec![v.to_string()],
                    Value::Bool(_) => return Err(found()),
                };
                if let Some(choices) = choices
                    && let Some(bad) = items.iter().find(|i| !choices.contains(&i.as_str()))
                {
                    return Err(format!(
                        "unknown item `{bad}`: expected {}",
                        self.describe()
                    ));
                }
                Ok(Value::List(items.into_iter().map(Value::Str).collect()))
            }
        }
    }
}

/// One option: its sysbench name (with `_`), type, default and help line.
#[derive(Debug)]
pub struct OptSpec {
    pub name: &'static str,
    pub kind: Kind,
    /// The default in suite-file syntax; `None` means "no value" (optional option).
    pub default: Option<&'static str>,
    pub help: &'static str,
}

impl OptSpec {
    pub fn default_value(&self) -> Option<Value> {
        self.default.map(|d| {
            self.kind
                .coerce(&Value::parse_loose(d))
                .expect("spec defaults are valid (tested)")
        })
    }
}

/// A workload's options, read by name through the option tables that declare them.
///
/// Every read checks the key against those tables first (a linear scan: builders read options
/// once per step, never per event). Absent values read as zero, empty or false, as the planner
/// fills every option that has a default.
#[derive(Clone, Copy)]
pub struct Reader<'a> {
    /// Whose options these are, for the error message (a workload name or "general").
    owner: &'static str,
    groups: &'static [&'static [OptSpec]],
    options: &'a Options,
}

impl<'a> Reader<'a> {
    pub fn new(
        owner: &'static str,
        groups: &'static [&'static [OptSpec]],
        options: &'a Options,
    ) -> Self {
        Self {
            owner,
            groups,
            options,
        }
    }

    /// Every option of the step (general ones included), for a workload that hands them on
    /// as a whole (a sysbench Lua script's `sysbench.opt`).
    pub fn all(&self) -> &'a Options {
        self.options
    }

    /// The value of `key`, after checking that the tables declare it.
    pub fn get(&self, key: &str) -> Result<Option<&'a Value>, EngineError> {
        if !self
            .groups
            .iter()
            .flat_map(|g| g.iter())
            .any(|o| o.name == key)
        {
            return Err(EngineError::Failed(format!(
                "internal error: the {} options do not declare option `{key}`, which its code reads",
                self.owner
            )));
        }
        Ok(self.options.get(key))
    }

    pub fn uint(&self, key: &str) -> Result<u64, EngineError> {
        self.get(key).map(|_| self.options.uint(key))
    }

    pub fn float(&self, key: &str) -> Result<f64, EngineError> {
        self.get(key).map(|_| self.options.float(key))
    }

    pub fn flag(&self, key: &str) -> Result<bool, EngineError> {
        self.get(key).map(|_| self.options.flag(key))
    }

    pub fn text(&self, key: &str) -> Result<&'a str, EngineError> {
        self.get(key).map(|_| self.options.text(key))
    }

    pub fn list(&self, key: &str) -> Result<Vec<String>, EngineError> {
        self.get(key).map(|_| self.options.list(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coerce_normalises() {
        assert_eq!(
            Kind::Size.coerce(&Value::Str("16K".into())),
            Ok(Value::Int(16384))
        );
        assert_eq!(
            Kind::Bool.coerce(&Value::Str("on".into())),
            Ok(Value::Bool(true))
        );
        let threads = Kind::Int {
            min: 1,
            max: 100_000,
        };
        assert!(
            threads
                .coerce(&Value::Int(0))
                .unwrap_err()
                .contains("out of range")
        );
        assert!(
            threads
                .coerce(&Value::Str("x".into()))
                .unwrap_err()
                .contains("expected an integer")
        );
    }

    #[test]
    fn reader_refuses_an_undeclared_key() {
        static OWN: &[OptSpec] = &[OptSpec {
            name: "known",
            kind: Kind::Int { min: 0, max: 9 },
            default: Some("1"),
            help: "",
        }];
        static GROUPS: &[&[OptSpec]] = &[OWN];
        let mut o = Options::default();
        o.0.insert("known".into(), Value::Int(3));
        let r = Reader::new("test", GROUPS, &o);
        assert_eq!(r.uint("known").expect("declared"), 3);
        let e = r.uint("knwon").expect_err("undeclared").to_string();
        assert!(e.contains("`knwon`") && e.contains("test"), "{e}");
    }
}
