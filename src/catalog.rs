//! The catalog of workloads and their options: names, types, sysbench defaults, and which
//! options shape the data a workload prepares.
//!
//! It is plain data so that the planner, `validate`, `plan`, the JSON schema and the help text
//! all read one source of truth. Whether a workload can also *run* in this build is the
//! engine registry's business ([`crate::engine::engine_for`]), not the catalog's.

use crate::value::{Value, parse_size};

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
    /// Bytes; accepts sysbench suffixes (`16K`, `2G`) and normalises to an integer.
    Size,
    Str,
    Enum(&'static [&'static str]),
}

impl Kind {
    /// Human description used in errors: "expected {describe}".
    pub fn describe(&self) -> String {
        match self {
            Kind::Bool => "a boolean (true/false, on/off)".into(),
            Kind::Int { min, max } if *max == i64::MAX => format!("an integer >= {min}"),
            Kind::Int { min, max } => format!("an integer from {min} to {max}"),
            Kind::Float { min, max } => format!("a number from {min} to {max}"),
            Kind::Size => "a size (bytes, or a number with K, M, G or T, e.g. \"16K\")".into(),
            Kind::Str => "a string".into(),
            Kind::Enum(choices) => format!("one of {}", choices.join(", ")),
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
                Value::Str(s) => match s.to_ascii_lowercase().as_str() {
                    "on" | "true" | "1" | "yes" => Ok(Value::Bool(true)),
                    "off" | "false" | "0" | "no" => Ok(Value::Bool(false)),
                    _ => Err(found()),
                },
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
                .expect("catalog defaults are valid")
        })
    }
}

/// What a workload prepares, so the planner knows which steps can share one prepare.
#[derive(Debug)]
pub struct DataSpec {
    /// Workloads with the same family and the same values of `keys` share one dataset
    /// (e.g. every `oltp_*` workload reads the same `sbtest` tables). `None`: nothing to prepare.
    pub family: Option<&'static str>,
    /// Options whose values shape the data (a new value means a new prepare).
    pub keys: &'static [&'static str],
    /// The workload changes its data (deletes or inserts rows), so each run gets a fresh prepare.
    pub fresh_per_run: bool,
}

#[derive(Debug)]
pub struct WorkloadSpec {
    pub name: &'static str,
    pub summary: &'static str,
    /// Options of this workload besides the [`GENERAL`] ones.
    pub options: &'static [&'static [OptSpec]],
    pub data: DataSpec,
    /// Needs a database `[target]`.
    pub needs_target: bool,
}

impl WorkloadSpec {
    /// Every option this workload accepts, general ones first.
    pub fn all_options(&self) -> impl Iterator<Item = &'static OptSpec> {
        GENERAL
            .iter()
            .chain(self.options.iter().flat_map(|group| group.iter()))
    }

    pub fn option(&self, name: &str) -> Option<&'static OptSpec> {
        self.all_options().find(|o| o.name == name)
    }
}

const UNBOUNDED: i64 = i64::MAX;

/// Options every workload understands (sysbench's general options).
pub static GENERAL: &[OptSpec] = &[
    OptSpec {
        name: "threads",
        kind: Kind::Int {
            min: 1,
            max: 100_000,
        },
        default: Some("1"),
        help: "number of worker threads (one database connection each)",
    },
    OptSpec {
        name: "events",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("0"),
        help: "limit for the total number of events, 0 = no limit",
    },
    OptSpec {
        name: "time",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("10"),
        help: "limit for the total execution time in seconds, 0 = no limit",
    },
    OptSpec {
        name: "report_interval",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("0"),
        help: "seconds between intermediate reports, 0 = none",
    },
    OptSpec {
        name: "percentile",
        kind: Kind::Float {
            min: 0.0,
            max: 100.0,
        },
        default: Some("95"),
        help: "latency percentile to report (any value, e.g. 99.9); p50, p95 and p99 are always stored",
    },
];

static CPU: &[OptSpec] = &[OptSpec {
    name: "cpu_max_prime",
    kind: Kind::Int {
        min: 1,
        max: UNBOUNDED,
    },
    default: Some("10000"),
    help: "upper limit for primes generator",
}];

static OLTP_COMMON: &[OptSpec] = &[
    OptSpec {
        name: "tables",
        kind: Kind::Int {
            min: 1,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "number of tables",
    },
    OptSpec {
        name: "table_size",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("10000"),
        help: "number of rows per table",
    },
    OptSpec {
        name: "range_size",
        kind: Kind::Int {
            min: 1,
            max: UNBOUNDED,
        },
        default: Some("100"),
        help: "range size for range SELECT queries",
    },
    OptSpec {
        name: "point_selects",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("10"),
        help: "number of point SELECT queries per transaction",
    },
    OptSpec {
        name: "simple_ranges",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "number of simple range SELECT queries per transaction",
    },
    OptSpec {
        name: "sum_ranges",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "number of SELECT SUM() queries per transaction",
    },
    OptSpec {
        name: "order_ranges",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "number of SELECT ORDER BY queries per transaction",
    },
    OptSpec {
        name: "distinct_ranges",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "number of SELECT DISTINCT queries per transaction",
    },
    OptSpec {
        name: "index_updates",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "number of UPDATE index queries per transaction",
    },
    OptSpec {
        name: "non_index_updates",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "number of UPDATE non-index queries per transaction",
    },
    OptSpec {
        name: "delete_inserts",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "number of DELETE/INSERT combinations per transaction",
    },
    OptSpec {
        name: "range_selects",
        kind: Kind::Bool,
        default: Some("true"),
        help: "enable/disable all range SELECT queries",
    },
    OptSpec {
        name: "auto_inc",
        kind: Kind::Bool,
        default: Some("true"),
        help: "use AUTO_INCREMENT (SERIAL) ids",
    },
    OptSpec {
        name: "skip_trx",
        kind: Kind::Bool,
        default: Some("false"),
        help: "don't start explicit transactions",
    },
    OptSpec {
        name: "secondary",
        kind: Kind::Bool,
        default: Some("false"),
        help: "use a secondary index in place of the PRIMARY KEY",
    },
    OptSpec {
        name: "create_secondary",
        kind: Kind::Bool,
        default: Some("true"),
        help: "create a secondary index on k after loading",
    },
    OptSpec {
        name: "mysql_storage_engine",
        kind: Kind::Str,
        default: Some("innodb"),
        help: "storage engine, if MySQL is used",
    },
    OptSpec {
        name: "create_table_options",
        kind: Kind::Str,
        default: Some(""),
        help: "extra CREATE TABLE options",
    },
];

static RANDOM_POINTS: &[OptSpec] = &[OptSpec {
    name: "random_points",
    kind: Kind::Int {
        min: 1,
        max: UNBOUNDED,
    },
    default: Some("10"),
    help: "number of random points in the IN() list",
}];

static RANDOM_RANGES: &[OptSpec] = &[
    OptSpec {
        name: "number_of_ranges",
        kind: Kind::Int {
            min: 1,
            max: UNBOUNDED,
        },
        default: Some("10"),
        help: "number of random BETWEEN ranges",
    },
    OptSpec {
        name: "delta",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("5"),
        help: "size of the BETWEEN ranges",
    },
];

/// The options that shape `sbtest` tables.
const SBTEST_KEYS: &[&str] = &[
    "tables",
    "table_size",
    "auto_inc",
    "secondary",
    "create_secondary",
    "mysql_storage_engine",
    "create_table_options",
];

static OLTP_ONLY: &[&[OptSpec]] = &[OLTP_COMMON];

const fn oltp(name: &'static str, summary: &'static str, fresh_per_run: bool) -> WorkloadSpec {
    WorkloadSpec {
        name,
        summary,
        options: OLTP_ONLY,
        data: DataSpec {
            family: Some("sbtest"),
            keys: SBTEST_KEYS,
            fresh_per_run,
        },
        needs_target: true,
    }
}

/// Every workload sbsuite knows, in help order.
pub static WORKLOADS: &[WorkloadSpec] = &[
    WorkloadSpec {
        name: "cpu",
        summary: "CPU performance test (prime numbers by trial division)",
        options: &[CPU],
        data: DataSpec {
            family: None,
            keys: &[],
            fresh_per_run: false,
        },
        needs_target: false,
    },
    oltp("oltp_read_only", "OLTP read-only transactions", false),
    oltp("oltp_read_write", "OLTP read/write transactions", false),
    oltp("oltp_write_only", "OLTP write-only transactions", false),
    oltp("oltp_point_select", "OLTP point selects", false),
    oltp("oltp_update_index", "OLTP index updates", false),
    oltp("oltp_update_non_index", "OLTP non-index updates", false),
    oltp(
        "oltp_insert",
        "OLTP inserts (rows grow: fresh prepare per run)",
        true,
    ),
    oltp(
        "oltp_delete",
        "OLTP deletes (rows shrink: fresh prepare per run)",
        true,
    ),
    WorkloadSpec {
        name: "select_random_points",
        summary: "random point SELECTs on the k index",
        options: &[OLTP_COMMON, RANDOM_POINTS],
        data: DataSpec {
            family: Some("sbtest"),
            keys: SBTEST_KEYS,
            fresh_per_run: false,
        },
        needs_target: true,
    },
    WorkloadSpec {
        name: "select_random_ranges",
        summary: "random range SELECTs on the k index",
        options: &[OLTP_COMMON, RANDOM_RANGES],
        data: DataSpec {
            family: Some("sbtest"),
            keys: SBTEST_KEYS,
            fresh_per_run: false,
        },
        needs_target: true,
    },
    WorkloadSpec {
        name: "bulk_insert",
        summary: "multi-row INSERTs into one table per thread",
        options: &[],
        data: DataSpec {
            family: Some("bulk_insert"),
            keys: &["threads"],
            fresh_per_run: true,
        },
        needs_target: true,
    },
];

pub fn workload(name: &str) -> Option<&'static WorkloadSpec> {
    WORKLOADS.iter().find(|w| w.name == name)
}

/// Every option name any workload accepts, for "did you mean" suggestions.
pub fn all_option_names() -> impl Iterator<Item = &'static str> {
    let mut names: Vec<&'static str> = WORKLOADS
        .iter()
        .flat_map(|w| w.all_options().map(|o| o.name))
        .collect();
    names.sort_unstable();
    names.dedup();
    names.into_iter()
}

/// Finds an option spec by name in any workload (types agree across workloads).
pub fn any_option(name: &str) -> Option<&'static OptSpec> {
    WORKLOADS.iter().find_map(|w| w.option(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_is_valid_for_its_kind() {
        for w in WORKLOADS {
            for o in w.all_options() {
                if let Some(d) = o.default {
                    assert!(
                        o.kind.coerce(&Value::parse_loose(d)).is_ok(),
                        "{}.{}",
                        w.name,
                        o.name
                    );
                }
            }
        }
    }

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
        let threads = GENERAL[0].kind;
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
}
