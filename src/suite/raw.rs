//! Serde types that mirror the suite file's tables, and the source of the JSON schema.
//!
//! `[defaults]` and `[matrix]` hold sysbench option names, an open set that depends on the
//! workloads, so they stay loose TOML values here and are checked key by key against the
//! catalog in [`super::validate`], where errors can name the option and suggest a spelling.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::value::Value;

/// A suite file.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "sbsuite suite file")]
pub struct RawSuite {
    /// What the suite is called and how it repeats.
    pub suite: SuiteSection,
    /// The database to benchmark; absent for system workloads (cpu, memory, fileio, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<RawTarget>,
    /// Option values shared by every step (sysbench option names with `_`: `time`,
    /// `report_interval`, `table_size`, ...).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(with = "IndexMap<String, Value>")]
    pub defaults: IndexMap<String, toml::Value>,
    /// The axes of the cross product (in nesting order, outermost first), plus `exclude`,
    /// `include` and `zip`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(with = "MatrixSchema")]
    pub matrix: IndexMap<String, toml::Value>,
    /// Server configuration variants: the outermost loop of the plan.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variant: Vec<RawVariant>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SuiteSection {
    /// Name of the suite; results go to `<results_dir>/<name>/<run-id>/`.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Repetitions of every run step (the whole sweep of a dataset is repeated), for significance.
    #[serde(default = "one")]
    pub repeat: i64,
    /// Directory that holds results, relative to the current directory.
    #[serde(default = "results_dir")]
    pub results_dir: String,
    /// minijinja template for run step names, e.g. `"{{ workload }}-t{{ threads }}"`; every
    /// option, `variant` and `repetition` can be used. Default: the workload and the matrix axes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_name: Option<String>,
}

fn one() -> i64 {
    1
}

fn results_dir() -> String {
    "results".to_string()
}

#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Driver {
    Mysql,
    Pgsql,
    Sqlite,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PsMode {
    Auto,
    Disable,
}

/// Connection to the database under test.
#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct RawTarget {
    pub driver: Driver,
    /// `host:port` pairs; connections are spread round-robin as sysbench does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Use a template such as `"{{ env.DB_PASSWORD }}"`; literal passwords are redacted from
    /// everything sbsuite writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<String>,
    /// SQLite database file (`:memory:` for a shared in-memory database).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ps_mode: Option<PsMode>,
    /// Error codes to count and retry (MySQL errno, PostgreSQL SQLSTATE), or `"all"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_errors: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_timeout: Option<u64>,
}

/// A server configuration variant.
#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct RawVariant {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Server variables set at runtime (MySQL `SET GLOBAL`, PostgreSQL `ALTER SYSTEM`).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub set_global: IndexMap<String, Value>,
    /// Settings that need a restart: render `template` to `path`, run `command`, wait until
    /// the server accepts connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart: Option<RawRestart>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct RawRestart {
    pub template: String,
    pub path: String,
    pub command: String,
    /// Seconds to wait for the server after the restart command.
    #[serde(default = "ready_timeout")]
    pub ready_timeout: u64,
}

fn ready_timeout() -> u64 {
    120
}

/// Schema-only shape of `[matrix]` (the loader reads it key by key).
#[derive(JsonSchema)]
#[allow(dead_code)]
struct MatrixSchema {
    /// Cells to drop: every key of an entry must match.
    exclude: Option<Vec<IndexMap<String, Value>>>,
    /// Extra cells appended after the cross product.
    include: Option<Vec<IndexMap<String, Value>>>,
    /// Groups of axes that move together (equal-length lists), e.g. `[["tables", "table_size"]]`.
    zip: Option<Vec<Vec<String>>>,
    #[serde(flatten)]
    axes: IndexMap<String, AxisSchema>,
}

/// One matrix axis: a list of values, a single value, or a numeric range.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum AxisSchema {
    List(Vec<Value>),
    Range(RangeSchema),
    Single(Value),
}

/// `{ from = 32, to = 1024, factor = 2 }` (geometric) or `{ from = 1, to = 8, step = 1 }`.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct RangeSchema {
    from: f64,
    to: f64,
    step: Option<f64>,
    factor: Option<f64>,
}

/// The JSON schema of suite files (draft-07, which editors' TOML plugins read best).
pub fn json_schema() -> String {
    let generator = schemars::generate::SchemaSettings::draft07().into_generator();
    let schema = generator.into_root_schema_for::<RawSuite>();
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}
