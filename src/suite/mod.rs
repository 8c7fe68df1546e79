//! Suite files: loading through configuration layers, and validation into a [`Suite`].
//!
//! Layers, lowest first: built-in defaults (the workload specs' sysbench defaults and serde
//! defaults) < the suite file < `SBSUITE_*` environment variables (`SBSUITE_DEFAULTS__TIME=5`, `__`
//! separates keys) < `--set key=value` options. figment merges them; the file is parsed once more
//! with spans so that every error can point at a line and column, or name the environment
//! variable or option that brought the bad value.
//!
//! Before any layer is built, the raw bytes pass three gates, each refusing with a position:
//! UTF-8 (the first bad byte), TOML syntax, and nesting depth (a file may nest thousands of
//! levels within toml's own limits, which no recursive step below could survive). Validation
//! then bounds the plan's size, so that no suite file can make `plan` hang or balloon.
//!
//! What the suite reads but does not own: the positions and errors of [`crate::source`] (the
//! layer under the suite and the engines), and the workloads a file declares, compiled by
//! [`crate::engine::custom::compile`] next to their engine before the rest is validated.
//! `[clients]` is the suite's own ([`clients`]); `crate::clients` reads it to start agents.

pub mod capacity;
pub mod clients;
mod layers;
pub mod raw;
pub mod scripts;
pub mod stored;
mod validate;

use std::path::{Path, PathBuf};

use figment::value::{Dict, Map};
use figment::{Figment, Metadata, Profile, Provider};
use indexmap::IndexMap;

pub use raw::{Driver, RawSuite, RawTarget, RawVariant};

use crate::engine::Catalog;
use crate::source::{self, ConfigError, ConfigErrors, Origin, Seg, SourceMap, TreeError};
use crate::value::Value;

/// Prefix of the environment variables that override suite keys.
pub const ENV_PREFIX: &str = "SBSUITE_";

/// The tables of a suite file, in the order the schema lists them.
pub const TOP_LEVEL_KEYS: [&str; 12] = [
    "suite",
    "target",
    "defaults",
    "matrix",
    "variant",
    "hooks",
    "workloads",
    "clients",
    "phases",
    "groups",
    "faults",
    "capacity",
];

/// `SBSUITE_*` variables that are process switches, not suite keys.
pub const ENV_SWITCHES: &[&str] = crate::db::CLIENT_ENVS;

/// A validated `repeat = { min, max, until = "ci95 < N%", metric }` (#29): the plan holds
/// `max` repetitions; the runner skips those not needed once the rule is met.
#[derive(Clone, Debug, PartialEq)]
pub struct RepeatUntil {
    pub min: u32,
    pub max: u32,
    /// The target half-width of the 95 % interval, in % of the metric.
    pub target_pct: f64,
    /// The results.csv column (`tps`, `eps`, `qps`, `lat_*`).
    pub metric: String,
    /// Variants run back to back (`variant_order` `interleaved` or `randomized`): the paired
    /// difference between them must be as sure as each one.
    pub paired: bool,
}

/// One `[[groups]]` entry, checked (#31): its option values typed by their option's kind.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// Its name (`group1`… when the file gives none).
    pub name: String,
    /// Its workload; `None`: the step's.
    pub workload: Option<String>,
    pub threads: u64,
    /// Arrivals per second; `None`: closed loop.
    pub rate: Option<u64>,
    pub options: IndexMap<String, Value>,
}

/// A validated suite, ready to be expanded into a plan.
pub struct Suite {
    pub file: PathBuf,
    pub name: String,
    pub description: Option<String>,
    /// Repetitions planned: the count, or the rule's `max`.
    pub repeat: u32,
    /// `repeat = { min, max, until }`: when the runner stops repeating early.
    pub repeat_rule: Option<RepeatUntil>,
    pub results_dir: PathBuf,
    pub step_name: Option<String>,
    /// What a failed step does to the rest of the suite.
    pub on_error: raw::OnError,
    /// When each variant's runs happen.
    pub variant_order: raw::VariantOrder,
    /// The seed of a `randomized` variant order (drawn when the file has none; 0 otherwise).
    pub order_seed: u64,
    /// What a run that dropped `rate` arrivals is.
    pub rate_overflow: raw::RateOverflow,
    /// Whether the plan prepares its datasets or runs on data already there.
    pub dataset: raw::DatasetSource,
    /// `[suite] metrics`: the address to serve live metrics on.
    pub metrics: Option<String>,
    /// `[suite] server_cost`: whether each run step's cost is read.
    pub server_cost: bool,
    /// `[suite] server_counters`: counters read besides the built-in ones (checked names).
    pub server_counters: Vec<String>,
    /// `[target] server_host`: where the server's process and host are read when it is not
    /// this host, and how to reach it.
    pub server_host: Option<clients::ServerHostAccess>,
    /// `[hooks]` (all unset when the file has none).
    pub hooks: raw::RawHooks,
    /// `[[faults]]`, checked (#30): fired in every run step.
    pub faults: Vec<raw::RawFault>,
    pub target: Option<RawTarget>,
    /// `[defaults]`, each value checked and normalised by its option's kind.
    pub defaults: IndexMap<String, Value>,
    pub matrix: Matrix,
    pub variants: Vec<RawVariant>,
    /// The merged configuration as TOML, passwords redacted: stored with every run.
    pub resolved_toml: String,
    /// The sysbench Lua scripts the suite runs (`workload = { script = "…" }`), by name.
    pub scripts: scripts::Scripts,
    /// `[clients]`, checked: where run steps execute (`None`: in this process).
    pub clients: Option<clients::Clients>,
    /// `[[phases]]`: the timeline of every run step (#30); empty: none.
    pub phases: Vec<raw::RawPhase>,
    /// `[[groups]]`, checked (#31): the worker groups of every run step; empty: none.
    pub groups: Vec<Group>,
    /// `[capacity]`, checked: `sbsuite run` searches the rate instead of running the plan.
    pub capacity: Option<capacity::Capacity>,
    origins: Origins,
    /// The workloads the suite declares, with where each value is written.
    custom: crate::engine::custom::compile::Loaded,
    /// The workloads its steps can name: the built-in ones, its `[workloads.NAME]`
    /// definitions and its Lua scripts.
    pub catalog: Catalog,
}

impl Suite {
    /// Where the value at `path` came from, for errors found after loading (e.g. in the plan).
    pub fn origin(&self, path: &[Seg], key: bool) -> Origin {
        self.origins.origin(path, key)
    }

    /// What of custom workload `def` fails with a run's `options`, each error at the line of
    /// the definition that wrote it ([`crate::engine::custom::compile::Loaded::check_run`]).
    pub fn check_custom_run(
        &self,
        def: &crate::engine::custom::model::Def,
        options: &crate::value::Options,
    ) -> Vec<ConfigError> {
        self.custom.check_run(def, options)
    }

    pub fn error(&self, path: &[Seg], message: impl Into<String>) -> ConfigError {
        ConfigError::new(
            &self.file,
            self.origin(path, false),
            source::path_text(path),
            message,
        )
    }
}

/// The matrix after validation: typed axis values in nesting order.
#[derive(Clone, Debug, Default)]
pub struct Matrix {
    pub axes: Vec<Axis>,
    /// Groups of axis names that move together.
    pub zip: Vec<Vec<String>>,
    /// Each entry drops the cells whose values match every key (a list matches any of its items).
    pub exclude: Vec<IndexMap<String, Value>>,
    /// Each entry adds a cell after the cross product.
    pub include: Vec<IndexMap<String, Value>>,
    /// Threshold sweeps: stop raising an axis when a condition holds.
    pub stop_when: Vec<StopWhen>,
}

/// `stop_when = { threads = { tps_gain_below = 5, p95_above = 50 } }`: along `axis`, in each
/// sweep (steps that share every other matrix value, the variant and the repetition), the next
/// values are not run once a run's result meets a condition; the value before it is the knee.
#[derive(Clone, Debug, PartialEq, Default, serde::Serialize)]
pub struct StopWhen {
    pub axis: String,
    /// tps grew by less than this many percent over the previous value.
    pub tps_gain_below: Option<f64>,
    /// qps grew by less than this many percent over the previous value.
    pub qps_gain_below: Option<f64>,
    /// Latency percentiles and average above this many milliseconds.
    pub p95_above: Option<f64>,
    pub p99_above: Option<f64>,
    pub avg_above: Option<f64>,
}

/// The condition keys of `stop_when`, for errors and the schema.
pub const STOP_WHEN_KEYS: [&str; 5] = [
    "tps_gain_below",
    "qps_gain_below",
    "p95_above",
    "p99_above",
    "avg_above",
];

#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub name: String,
    pub values: Vec<Value>,
}

/// Remembers which keys the environment and `--set` overrode, so errors name the right source.
struct Origins {
    map: SourceMap,
    overrides: Vec<(Vec<String>, Origin)>,
}

impl Origins {
    fn origin(&self, path: &[Seg], key: bool) -> Origin {
        let keys: Vec<&str> = path
            .iter()
            .filter_map(|s| match s {
                Seg::Key(k) => Some(k.as_str()),
                Seg::Index(_) => None,
            })
            .collect();
        // The last layer that set this key or one of its parents wins.
        for (over, origin) in self.overrides.iter().rev() {
            if over.len() <= keys.len() && over.iter().zip(&keys).all(|(a, b)| a == b) {
                return origin.clone();
            }
        }
        self.map.origin(path, key)
    }
}

/// One `--set key=value`: `key` is a dotted path; a bare option name means `defaults.<name>`.
#[derive(Clone, Debug)]
pub struct SetOverride {
    pub path: Vec<String>,
    /// The value as [`layer_value`] reads it.
    pub value: toml::Value,
    pub text: String,
}

/// A value from a layer (`--set`, `SBSUITE_*`) as the file would hold it: TOML when the text
/// reads as a TOML value (`4`, `true`, `[1, 2]`, `"x"`, and inline tables such as the range
/// `{ from = 32, to = 128, factor = 2 }`), else the text itself (`16K`, `pgsql`). A date is
/// kept as its text: no suite key takes one.
pub fn layer_value(text: &str) -> toml::Value {
    fn has_date(v: &toml::Value) -> bool {
        match v {
            toml::Value::Datetime(_) => true,
            toml::Value::Array(items) => items.iter().any(has_date),
            toml::Value::Table(t) => t.values().any(has_date),
            _ => false,
        }
    }
    match toml::from_str::<toml::Table>(&format!("v = {text}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
    {
        Some(v) if !has_date(&v) => v,
        _ => toml::Value::String(text.to_string()),
    }
}

impl SetOverride {
    pub fn parse(text: &str) -> Result<SetOverride, String> {
        let (key, value) = text.split_once('=').ok_or_else(|| {
            format!(
                "--set {text}: expected KEY=VALUE, e.g. --set time=30 or --set matrix.threads=[1,2]"
            )
        })?;
        let key = key.trim();
        if key.is_empty() || key.split('.').any(str::is_empty) {
            return Err(format!(
                "--set {text}: the key is empty; write e.g. --set defaults.time=30"
            ));
        }
        let mut path: Vec<String> = key.split('.').map(str::to_string).collect();
        if path.len() == 1 && !TOP_LEVEL_KEYS.contains(&key) {
            path.insert(0, "defaults".to_string());
        }
        if is_password(&path) {
            // The one secret: taken as written (a password may look like a number), and never
            // repeated in an error, which names the option by `text`.
            return Ok(SetOverride {
                path,
                value: toml::Value::String(value.to_string()),
                text: format!("{key}={}", source::REDACTED),
            });
        }
        Ok(SetOverride {
            path,
            value: layer_value(value.trim()),
            text: text.to_string(),
        })
    }
}

/// Whether a key path is `[target] password`, the one secret: a layer takes its value as
/// written, and no error repeats it.
fn is_password(path: &[String]) -> bool {
    match path {
        [t, p] => t == "target" && p == "password",
        // A `hosts` entry's own (`target.hosts.1.password`).
        [t, h, _, p] => t == "target" && h == "hosts" && p == "password",
        _ => false,
    }
}

/// A figment provider for one layer we parsed ourselves (the file, or the `--set` options).
struct Layer {
    name: &'static str,
    dict: Dict,
}

impl Provider for Layer {
    fn metadata(&self) -> Metadata {
        Metadata::named(self.name)
    }

    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        Ok(Profile::Default.collect(self.dict.clone()))
    }
}

/// Loads and validates a suite file with the environment and `--set` layers on top.
pub fn load(file: &Path, sets: &[SetOverride]) -> Result<Suite, ConfigErrors> {
    load_with_env(file, sets, &env_layer())
}

/// The `SBSUITE_*` variables of this process that set suite keys (the layer between the file
/// and `--set`).
pub fn env_layer() -> Vec<(String, String)> {
    std::env::vars()
        .filter(|(k, _)| k.starts_with(ENV_PREFIX) && !ENV_SWITCHES.contains(&k.as_str()))
        .collect()
}

/// [`load`] with an explicit environment (tests pass their own instead of the process's).
pub fn load_with_env(
    file: &Path,
    sets: &[SetOverride],
    env: &[(String, String)],
) -> Result<Suite, ConfigErrors> {
    let bytes = std::fs::read(file).map_err(|e| read_error(file, e))?;
    load_bytes(file, &bytes, sets, env)
}

/// The text of a suite file, for commands that derive suites from it (`bisect`, `capacity`):
/// the errors of [`load`] for a file that cannot be read or is not UTF-8.
pub fn read_text(file: &Path) -> Result<String, ConfigErrors> {
    let bytes = std::fs::read(file).map_err(|e| read_error(file, e))?;
    match String::from_utf8(bytes) {
        Ok(text) => Ok(text),
        Err(e) => match load_bytes(file, e.as_bytes(), &[], &[]) {
            Err(errors) => Err(errors),
            // Not reached: bytes that are not UTF-8 never load.
            Ok(_) => Ok(String::from_utf8_lossy(e.as_bytes()).into_owned()),
        },
    }
}

fn read_error(file: &Path, e: std::io::Error) -> ConfigError {
    ConfigError::new(
        file,
        Origin::Unknown,
        "",
        format!("cannot read suite file: {e}"),
    )
    .with_help("check the path; suite files are TOML, e.g. suites/quickstart.toml")
}

/// Loads a suite from the bytes of its file: text that is not UTF-8 is refused at the line and
/// column of its first bad byte.
pub fn load_bytes(
    file: &Path,
    bytes: &[u8],
    sets: &[SetOverride],
    env: &[(String, String)],
) -> Result<Suite, ConfigErrors> {
    match std::str::from_utf8(bytes) {
        Ok(text) => load_text(file, text, sets, env),
        Err(e) => {
            // The text up to the bad byte is intact in the lossy copy, so offsets agree.
            let at = e.valid_up_to();
            let map = SourceMap::new(&String::from_utf8_lossy(bytes));
            Err(ConfigError::new(
                file,
                map.origin_at(at),
                "",
                format!(
                    "the suite file is not valid UTF-8 (byte 0x{:02X})",
                    bytes[at]
                ),
            )
            .with_help("TOML files are UTF-8: save it as UTF-8, e.g. `iconv -f latin1 -t utf-8`")
            .into())
        }
    }
}

/// Loads a suite from its text (`file` names it in errors).
pub fn load_text(
    file: &Path,
    text: &str,
    sets: &[SetOverride],
    env: &[(String, String)],
) -> Result<Suite, ConfigErrors> {
    let map = SourceMap::new(text);
    if text.trim().is_empty() {
        return Err(ConfigError::new(file, map.origin_at(0), "", "the suite file is empty")
            .with_help("a suite needs at least `[suite]` with `name = \"...\"` and a workload, see suites/quickstart.toml")
            .into());
    }
    // The raw tree is checked first (syntax, depth), so that nothing below meets a tree it
    // cannot handle.
    let syntax = |message: &str, origin: Origin| {
        let help = if message.contains("recurs") {
            "the value nests too deeply for TOML's parser: suite values nest a few levels at \
             most (e.g. matrix.stop_when.threads.p95_above); flatten it"
        } else {
            "fix the TOML syntax at the marked position"
        };
        ConfigError::new(file, origin, "", format!("TOML syntax error: {message}")).with_help(help)
    };
    map.check().map_err(|e| match e {
        TreeError::Syntax(message, origin) => syntax(&message, origin),
        TreeError::TooDeep(origin) => ConfigError::new(
            file,
            origin,
            "",
            format!(
                "the suite file nests deeper than {} levels here",
                source::MAX_DEPTH
            ),
        )
        .with_help(
            "suite values nest a few levels at most (e.g. matrix.stop_when.threads.p95_above); \
             flatten this value",
        ),
    })?;
    let table: toml::Table = toml::from_str(text).map_err(|e| {
        let origin = e
            .span()
            .map_or_else(|| map.origin_at(0), |s| map.origin_at(s.start));
        syntax(e.message().trim_end(), origin)
    })?;

    // The suite's own workloads, compiled into its catalog before the rest is validated, so
    // that `workload = "orders"` and its options check like built-in ones.
    let custom = crate::engine::custom::compile::load(file, text, &table)?;
    let catalog = custom.catalog();

    let mut overrides = Vec::new();
    let mut figment = Figment::from(Layer {
        name: "suite file",
        dict: to_dict(file, &map, &table)?,
    });

    let mut env_dict = Dict::new();
    for (name, raw) in env {
        let Some(rest) = name.strip_prefix(ENV_PREFIX) else {
            continue;
        };
        let path: Vec<String> = rest.split("__").map(|s| s.to_ascii_lowercase()).collect();
        let value = if is_password(&path) {
            toml::Value::String(raw.clone())
        } else {
            layer_value(raw)
        };
        let value = figment::value::Value::serialize(value).map_err(|e| {
            ConfigError::new(
                file,
                Origin::Env(name.clone()),
                path.join("."),
                e.to_string(),
            )
        })?;
        insert_path(&mut env_dict, &path, value);
        overrides.push((path, Origin::Env(name.clone())));
    }
    if !env_dict.is_empty() {
        figment = figment.merge(Layer {
            name: "environment",
            dict: env_dict,
        });
    }
    let mut set_dict = Dict::new();
    for set in sets {
        let value = figment::value::Value::serialize(&set.value).map_err(|e| {
            ConfigError::new(
                file,
                Origin::Set(set.text.clone()),
                set.path.join("."),
                e.to_string(),
            )
        })?;
        insert_path(&mut set_dict, &set.path, value);
        overrides.push((set.path.clone(), Origin::Set(set.text.clone())));
    }
    if !set_dict.is_empty() {
        figment = figment.merge(Layer {
            name: "--set",
            dict: set_dict,
        });
    }

    // Definitions are read from the file alone (in its order): a layer cannot change them.
    let defining: Vec<ConfigError> = overrides
        .iter()
        .filter(|(path, _)| {
            path.first().is_some_and(|k| k == "workloads")
                || (path.len() >= 2 && path[0] == "suite" && path[1] == "workloads")
        })
        .map(|(path, origin)| {
            ConfigError::new(
                file,
                origin.clone(),
                path.join("."),
                "workload definitions cannot be set from the environment or --set",
            )
            .with_help("edit the definition in its file; options of a workload can be set (e.g. --set customers=100)")
        })
        .collect();
    if !defining.is_empty() {
        return Err(ConfigErrors(defining));
    }
    let origins = Origins { map, overrides };
    let hints = |mut errors: ConfigErrors| {
        for e in &mut errors.0 {
            layers::list_hint(e, env);
        }
        errors
    };
    let raw: RawSuite = figment
        .extract()
        .map_err(|e| hints(figment_errors(file, &origins, &catalog, e)))?;
    let raw = stored::in_file_order(raw, &table);
    validate::validate(file, raw, origins, custom, catalog).map_err(hints)
}

fn to_dict(file: &Path, map: &SourceMap, table: &toml::Table) -> Result<Dict, ConfigError> {
    figment::value::Value::serialize(table)
        .ok()
        .and_then(|v| v.into_dict())
        .ok_or_else(|| {
            ConfigError::new(
                file,
                map.origin_at(0),
                "",
                "the suite file is not a TOML table",
            )
        })
}

fn insert_path(dict: &mut Dict, path: &[String], value: figment::value::Value) {
    match path {
        [] => {}
        [last] => {
            dict.insert(last.clone(), value);
        }
        [first, rest @ ..] => {
            let entry = dict
                .entry(first.clone())
                .or_insert_with(|| figment::value::Value::from(Dict::new()));
            if entry.as_dict().is_none() {
                *entry = figment::value::Value::from(Dict::new());
            }
            if let figment::value::Value::Dict(_, inner) = entry {
                insert_path(inner, rest, value);
            }
        }
    }
}

/// Turns figment's structural errors (unknown keys, wrong types, missing keys) into positioned
/// errors with suggestions.
fn figment_errors(
    file: &Path,
    origins: &Origins,
    catalog: &Catalog,
    err: figment::Error,
) -> ConfigErrors {
    use figment::error::Kind;
    let mut out = Vec::new();
    for e in err {
        let mut path: Vec<Seg> = e.path.iter().map(|k| Seg::key(k)).collect();
        let (message, help, key) = match &e.kind {
            Kind::UnknownField(name, expected) => {
                // figment's path may or may not end with the unknown key itself.
                let parent: Vec<String> = match e.path.split_last() {
                    Some((last, parent)) if last == name => parent.to_vec(),
                    _ => e.path.clone(),
                };
                path = parent.iter().map(|k| Seg::key(k)).collect();
                path.push(Seg::key(name));
                let table = if parent.is_empty() {
                    "the top level".to_string()
                } else {
                    format!("[{}]", parent.join("."))
                };
                let keys: Vec<&str> = e.path.iter().map(String::as_str).collect();
                let closest = source::closest(name, expected.iter().copied());
                let help =
                    layers::unknown_key_help(catalog, &origins.origin(&path, true), &keys, closest)
                        .or_else(|| source::did_you_mean(name, expected.iter().copied()))
                        .unwrap_or_else(|| format!("known keys: {}", expected.join(", ")));
                (format!("unknown key `{name}` in {table}"), Some(help), true)
            }
            Kind::MissingField(name) => {
                let table = if e.path.is_empty() {
                    "the top level".to_string()
                } else {
                    format!("[{}]", e.path.join("."))
                };
                let help = if name == "suite" {
                    "add a `[suite]` table with `name = \"my-suite\"`".to_string()
                } else {
                    format!("add `{name} = ...` to {table}")
                };
                (format!("missing key `{name}` in {table}"), Some(help), true)
            }
            // The password's value is never repeated (the file may hold a literal one).
            Kind::InvalidType(_, expected) if is_password(&e.path) => (
                format!("wrong type: expected {expected}"),
                Some("write password = \"{{ env.DB_PASSWORD }}\" and export DB_PASSWORD".into()),
                false,
            ),
            Kind::InvalidType(actual, expected) => (
                format!("wrong type: expected {expected}, found {actual}"),
                None,
                false,
            ),
            Kind::InvalidValue(actual, expected) => (
                format!("invalid value: expected {expected}, found {actual}"),
                None,
                false,
            ),
            Kind::UnknownVariant(found, expected) => (
                format!("unknown value `{found}`"),
                Some(format!("expected one of: {}", expected.join(", "))),
                false,
            ),
            other => (other.to_string(), None, false),
        };
        let mut ce = ConfigError::new(
            file,
            origins.origin(&path, key),
            source::path_text(&path),
            message,
        );
        ce.help = help;
        out.push(ce);
    }
    ConfigErrors(out)
}

#[cfg(test)]
mod tests;
