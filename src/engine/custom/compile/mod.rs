//! Workloads declared in TOML (`[workloads.NAME]` in the suite file, and in the files that
//! `[suite] workloads = [...]` lists): read, checked and compiled into
//! [`crate::engine::custom::model::Def`]s before anything else of the suite is validated.
//!
//! Shape, and why:
//! * The definitions are read from the raw TOML text (toml with `preserve_order`), never from
//!   the figment-merged tree: figment sorts keys, and a definition's order is its meaning (the
//!   order of `let`s, of steps, of transactions in the mix). Every error points at the file,
//!   line and key through [`SourceMap`], also in a `workloads` file.
//! * Compilation is two passes over a definition: the first collects every variable name
//!   (options, `thread`, `[params]`, then the lets, captures and loop indexes of the
//!   transactions, then the load variables), so that the second can tell a name that does not
//!   exist from one that exists but is not set yet at that point of the transaction.
//! * [`Loaded::register`] makes each definition known to [`registry`], so `workload = "orders"`
//!   and its options validate, expand and run like a built-in workload. What depends on the
//!   merged suite (the target's driver) is checked later by [`Loaded::check_drivers`].
//! * The stored suite (`suite.toml` of a run directory) holds the definitions inline
//!   ([`Loaded::inline`]) instead of the `workloads` paths, so a run directory is resumed and
//!   re-planned without the files it was started from.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use indexmap::IndexMap;

use super::expr::{Expr, is_identifier};
use super::model::{
    Bound, BoundSql, Check, CheckExpect, Def, Dist, GenSpec, Headline, LoadTable, OnMismatch, Op,
    OptionDef, Slot, Sql, Stmt, Txn, Val, VarKind, Vars,
};
use super::{COMMON, spec_for};
use crate::db::Driver;
use crate::db::sql_text::{self, Piece};
use crate::engine::config::GENERAL;
use crate::engine::lua::sql::text::{first_word, returns_no_rows};
use crate::engine::option::Kind;
use crate::engine::registry;
use crate::engine::spec::WorkloadSpec;
use crate::source::{
    ConfigError, ConfigErrors, Origin, Seg, SourceMap, did_you_mean, path_text, read_file,
};
use crate::value::Value;

/// The keys of a `[workloads.NAME]` table.
pub const WORKLOAD_KEYS: &[&str] = &[
    "summary",
    "headline",
    "prepare_threads",
    "fresh_prepare",
    "options",
    "schema",
    "after_load",
    "cleanup",
    "load",
    "params",
    "transactions",
    "checks",
];

const OPTION_KEYS: &[&str] = &[
    "type", "default", "min", "max", "choices", "dataset", "help",
];
const OPTION_TYPES: &[&str] = &["int", "float", "bool", "string", "size", "enum"];
const TXN_KEYS: &[&str] = &[
    "weight",
    "autocommit",
    "rollback",
    "think",
    "keying",
    "let",
    "steps",
];
const STMT_KEYS: &[&str] = &[
    "sql",
    "name",
    "capture",
    "expect_rows",
    "on_mismatch",
    "when",
];
const BLOCK_KEYS: &[&str] = &["repeat", "index", "when", "let", "steps"];
const LOAD_KEYS: &[&str] = &["table", "rows", "parent", "per_parent", "let", "columns"];
const CHECK_KEYS: &[&str] = &["name", "sql", "expect", "expect_rows"];
const HEADLINE_KEYS: &[&str] = &["name", "transaction", "per"];
const DRIVERS: &[&str] = &["mysql", "pgsql", "sqlite"];
/// The generator keys, one per generator table.
const GENERATORS: &[&str] = &[
    "uniform",
    "gaussian",
    "special",
    "pareto",
    "zipfian",
    "rand",
    "sequence",
    "nurand",
    "choice",
    "string",
    "astring",
    "nstring",
    "float",
    "syllables",
    "date",
    "null",
    "const",
    "fk",
    "thread",
];
/// Keys that modify a generator: (key, the generator it belongs to).
const MODIFIERS: &[(&str, &str)] = &[
    ("per_thread", "sequence"),
    ("weights", "choice"),
    ("scale", "float"),
    ("words", "syllables"),
];
/// The variables a load provides.
const LOAD_VARS: &[&str] = &["row", "child", "parent_row"];

/// A SQL text of a definition, kept with its position so that a driver without text is
/// reported where the text is.
struct SqlSite {
    workload: String,
    file: usize,
    path: Vec<Seg>,
    sql: Sql,
}

/// A value of a definition that reads options and nothing a run draws: fixed for a run, so
/// the plan evaluates it with each run's options ([`Loaded::check_run`]) and refuses what
/// fails there, at the line that wrote it, before anything runs (#26).
struct OptionSite {
    workload: String,
    file: usize,
    path: Vec<Seg>,
    check: OptionCheck,
}

enum OptionCheck {
    /// An expression over options (a bound, `when`, `repeat`, a check's `expect`…): it must
    /// evaluate.
    Value(Expr),
    /// A bound over options of a generator that takes integers (`generator`): it must be one.
    /// (Bounds over options may be inverted: a range is then read backwards, as TPC-C's
    /// `[1, "warehouses - 1"]` is with one warehouse, where the draw is not used.)
    Int { generator: String, bound: Expr },
    /// Load entry `entry`'s `rows` or `per_parent`: with its parents', a count of rows that
    /// `row` (an i64) can number.
    Rows { entry: usize },
}

/// One file that declared workloads: the suite file (index 0) or a `workloads` file.
struct File {
    path: PathBuf,
    map: SourceMap,
}

/// The workloads a suite declares, compiled.
#[derive(Default)]
pub struct Loaded {
    /// In declaration order: the suite file's, then each `workloads` file's.
    pub defs: Vec<Def>,
    /// Every definition as written (name → its table), for the stored suite.
    pub inline: IndexMap<String, toml::Value>,
    sites: Vec<SqlSite>,
    option_sites: Vec<OptionSite>,
    files: Vec<File>,
}

impl Loaded {
    /// Makes every definition known to the registry of this thread (after forgetting those of
    /// an earlier suite); returns the specs.
    pub fn register(&self) -> Vec<&'static WorkloadSpec> {
        registry::clear_custom();
        self.defs
            .iter()
            .map(|d| {
                let spec = spec_for(d.clone());
                registry::register(spec);
                spec
            })
            .collect()
    }

    /// Every SQL text of the workloads in `used` must have text for `driver` (the suite's
    /// target, SQLite without one).
    pub fn check_drivers(
        &self,
        used: &HashSet<String>,
        driver: Driver,
        default_target: bool,
    ) -> Vec<ConfigError> {
        let name = driver_name(driver);
        let whose = if default_target {
            "the driver of the default target (the suite has no [target])"
        } else {
            "the target's driver"
        };
        self.sites
            .iter()
            .filter(|s| used.contains(&s.workload) && s.sql.for_driver(driver).is_none())
            .map(|s| {
                let f = &self.files[s.file];
                let have: Vec<&str> = DRIVERS
                    .iter()
                    .copied()
                    .filter(|d| s.sql.for_driver(driver_of(d)).is_some())
                    .collect();
                ConfigError::new(
                    &f.path,
                    f.map.origin(&s.path, false),
                    path_text(&s.path),
                    format!(
                        "workload `{}` has no SQL for {name}, {whose} (it has: {})",
                        s.workload,
                        if have.is_empty() {
                            "none".to_string()
                        } else {
                            have.join(", ")
                        }
                    ),
                )
                .with_help(format!(
                    "add `{name} = \"…\"` to this table (\"\" runs nothing on {name}), or run the suite on a target whose driver has SQL here"
                ))
            })
            .collect()
    }

    /// What of workload `def` fails with a run's `options`, each error at the line that wrote
    /// it: an expression over options that fails for these values (`n / m` with `m = 0`), an
    /// integer generator's bound that is not an integer, a row count that is negative, not an
    /// integer or, times its parents', more than `row` numbers. The plan calls this once per
    /// distinct set of the workload's option values.
    pub fn check_run(&self, def: &Def, options: &crate::value::Options) -> Vec<ConfigError> {
        let frame = def.option_frame(options);
        // `with customers = 0`: the values an expression read.
        let with = |e: &Expr| {
            let mut slots = e.slots();
            slots.sort_unstable();
            slots.dedup();
            let values: Vec<String> = slots
                .iter()
                .map(|&s| {
                    let name = def.vars.names.get(s).map_or("?", String::as_str);
                    let v = frame.vals.get(s).cloned().unwrap_or_default();
                    format!("{name} = {v}")
                })
                .collect();
            if values.is_empty() {
                String::new()
            } else {
                format!(" with {}", values.join(", "))
            }
        };
        let mut errors = Vec::new();
        // The paths whose expression failed (a row count that fails is reported once).
        let mut failed: Vec<&[Seg]> = Vec::new();
        let sites = || self.option_sites.iter().filter(|s| s.workload == def.name);
        for site in sites() {
            let mut refuse = |message: String, help: &str| {
                let f = &self.files[site.file];
                errors.push(
                    ConfigError::new(
                        &f.path,
                        f.map.origin(&site.path, false),
                        path_text(&site.path),
                        message,
                    )
                    .with_help(help),
                );
            };
            match &site.check {
                OptionCheck::Value(e) => {
                    if let Err(m) = e.eval(&frame) {
                        failed.push(&site.path);
                        refuse(
                            format!("{m}{}", with(e)),
                            "the expression reads only options, so it fails in every run with these values: fix it, or the options' values",
                        );
                    }
                }
                OptionCheck::Int { generator, bound } => {
                    // An expression that fails is reported by its own `Value` site.
                    if let Ok(v) = bound.eval(&frame)
                        && v.as_i64().is_none()
                    {
                        refuse(
                            format!(
                                "`{generator}` takes integer bounds, but `{}` is {v}{}",
                                bound.text().trim(),
                                with(bound)
                            ),
                            "make the bound a whole number for these option values (e.g. with `// 2` instead of `/ 2`)",
                        );
                    }
                }
                OptionCheck::Rows { .. } => {}
            }
        }
        if let Err((entry, m)) = super::load::table_rows_at(def, &frame) {
            let site =
                sites().find(|s| matches!(s.check, OptionCheck::Rows { entry: e } if e == entry));
            if let Some(site) = site.filter(|s| !failed.contains(&s.path.as_slice())) {
                let f = &self.files[site.file];
                let shown = def
                    .load
                    .get(entry)
                    .map(|t| with(&t.rows))
                    .unwrap_or_default();
                errors.push(
                    ConfigError::new(
                        &f.path,
                        f.map.origin(&site.path, false),
                        path_text(&site.path),
                        format!("{m}{shown}"),
                    )
                    .with_help(format!(
                        "a table's rows are a whole number from 0 to {} (its parent's rows times `per_parent` with a parent): fix the expression or the options' values",
                        i64::MAX
                    )),
                );
            }
        }
        errors
    }
}

fn driver_of(name: &str) -> Driver {
    match name {
        "mysql" => Driver::Mysql,
        "pgsql" => Driver::Pgsql,
        _ => Driver::Sqlite,
    }
}

fn driver_name(d: Driver) -> &'static str {
    match d {
        Driver::Mysql => "mysql",
        Driver::Pgsql => "pgsql",
        Driver::Sqlite => "sqlite",
    }
}

/// Reads and compiles the workloads of the suite file `file` (its text and parsed `table`)
/// and of the files its `[suite] workloads` lists. Nothing is registered yet.
pub fn load(file: &Path, text: &str, table: &toml::Table) -> Result<Loaded, ConfigErrors> {
    let mut loaded = Loaded::default();
    loaded.files.push(File {
        path: file.to_path_buf(),
        map: SourceMap::new(text),
    });
    let mut errors: Vec<ConfigError> = Vec::new();
    // (file, table of definitions) in order: the suite's own, then each listed file's.
    let mut sources: Vec<(usize, toml::Table)> = Vec::new();
    match table.get("workloads") {
        None => {}
        Some(toml::Value::Table(t)) => sources.push((0, t.clone())),
        Some(_) => errors.push(
            ConfigError::new(
                file,
                loaded.files[0].map.origin(&[Seg::key("workloads")], false),
                "workloads",
                "`workloads` must be a table of `[workloads.NAME]` definitions",
            )
            .with_help("write [workloads.orders] with its keys; to pull in files, use `[suite] workloads = [\"workloads/orders.toml\"]`"),
        ),
    }
    if let Some(list) = table.get("suite").and_then(|s| s.get("workloads")) {
        let at = [Seg::key("suite"), Seg::key("workloads")];
        let suite_err = |path: &[Seg], message: String, help: &str| {
            ConfigError::new(
                file,
                SourceMap::new(text).origin(path, false),
                path_text(path),
                message,
            )
            .with_help(help)
        };
        match list.as_array() {
            None => errors.push(suite_err(
                &at,
                "`[suite] workloads` must be a list of file paths".into(),
                "e.g. workloads = [\"workloads/tpcc.toml\"] (relative to the suite file)",
            )),
            Some(items) => {
                for (i, item) in items.iter().enumerate() {
                    let ipath = [Seg::key("suite"), Seg::key("workloads"), Seg::Index(i)];
                    let Some(rel) = item.as_str() else {
                        errors.push(suite_err(
                            &ipath,
                            "each `workloads` entry must be a file path (a string)".into(),
                            "e.g. workloads = [\"workloads/tpcc.toml\"]",
                        ));
                        continue;
                    };
                    let path = file.parent().unwrap_or(Path::new("")).join(rel);
                    match read_file(&path) {
                        Err(e) => errors.push(suite_err(
                            &ipath,
                            format!("cannot read workloads file `{}`: {e}", path.display()),
                            "the path is relative to the suite file; check it (shipped definitions are in suites/workloads/)",
                        )),
                        Ok((text, parsed)) => {
                            let index = loaded.files.len();
                            loaded.files.push(File {
                                path: path.clone(),
                                map: SourceMap::new(&text),
                            });
                            match parsed {
                                Err(e) => errors.push(e.into_error(&path)),
                                Ok(t) => {
                                    let map = &loaded.files[index].map;
                                    for k in t.keys().filter(|k| *k != "workloads") {
                                        errors.push(
                                            ConfigError::new(
                                                &path,
                                                map.origin(&[Seg::key(k)], true),
                                                k.as_str(),
                                                format!("`{k}` in a workloads file"),
                                            )
                                            .with_help("a workloads file holds only [workloads.NAME] tables; put the rest in the suite file"),
                                        );
                                    }
                                    match t.get("workloads") {
                                        Some(toml::Value::Table(w)) => {
                                            sources.push((index, w.clone()))
                                        }
                                        Some(_) => errors.push(
                                            ConfigError::new(
                                                &path,
                                                map.origin(&[Seg::key("workloads")], false),
                                                "workloads",
                                                "`workloads` must be a table of `[workloads.NAME]` definitions",
                                            )
                                            .with_help("write [workloads.orders] with its keys"),
                                        ),
                                        None => {}
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    let mut declared_in: HashMap<String, usize> = HashMap::new();
    for (index, defs) in &sources {
        for (name, value) in defs {
            let f = &loaded.files[*index];
            let base = vec![Seg::key("workloads"), Seg::key(name)];
            if let Some(first) = declared_in.get(name) {
                errors.push(
                    ConfigError::new(
                        &f.path,
                        f.map.origin(&base, true),
                        path_text(&base),
                        format!(
                            "workload `{name}` is declared twice (first in {})",
                            loaded.files[*first].path.display()
                        ),
                    )
                    .with_help("rename one of them"),
                );
                continue;
            }
            declared_in.insert(name.clone(), *index);
            let mut c = Compiler {
                file: &f.path,
                map: &f.map,
                file_index: *index,
                errors: Vec::new(),
                sites: Vec::new(),
                option_sites: Vec::new(),
                vars: Vars::default(),
                declared: HashMap::new(),
                used: Vec::new(),
                name: name.clone(),
                tables: Vec::new(),
            };
            let def = c.workload(&base, value);
            errors.append(&mut c.errors);
            if let Some(def) = def {
                loaded.sites.append(&mut c.sites);
                loaded.option_sites.append(&mut c.option_sites);
                loaded.inline.insert(name.clone(), value.clone());
                loaded.defs.push(def);
            }
        }
    }
    option_kinds_agree(&loaded, &mut errors);
    if errors.is_empty() {
        Ok(loaded)
    } else {
        Err(ConfigErrors(errors))
    }
}

/// The definitions of the suite file `file` alone (`sbsuite workloads --suite`): read,
/// compiled and registered, without validating the rest of the suite.
pub fn load_file(file: &Path) -> Result<Loaded, ConfigErrors> {
    let (text, parsed) = read_file(file).map_err(|e| {
        ConfigError::new(
            file,
            Origin::Unknown,
            "",
            format!("cannot read suite file: {e}"),
        )
        .with_help("check the path; suite files are TOML, e.g. suites/quickstart.toml")
    })?;
    let table = parsed.map_err(|e| e.into_error(file))?;
    let loaded = load(file, &text, &table)?;
    loaded.register();
    Ok(loaded)
}

/// Two custom workloads that declare one option name must give it one kind: validation checks
/// a value through the first workload that has the option.
fn option_kinds_agree(loaded: &Loaded, errors: &mut Vec<ConfigError>) {
    let mut seen: HashMap<&str, (&Def, &OptionDef)> = HashMap::new();
    for def in &loaded.defs {
        for o in &def.options {
            match seen.get(o.name.as_str()) {
                Some((first, fo)) if !same_kind(&fo.kind, &o.kind) => {
                    let path = [
                        Seg::key("workloads"),
                        Seg::key(&def.name),
                        Seg::key("options"),
                        Seg::key(&o.name),
                    ];
                    let f = loaded
                        .files
                        .iter()
                        .find(|f| f.path == def.source)
                        .unwrap_or(&loaded.files[0]);
                    errors.push(
                        ConfigError::new(
                            &f.path,
                            f.map.origin(&path, true),
                            path_text(&path),
                            format!(
                                "option `{}` of workload `{}` is {}, but workload `{}` declares it as {}",
                                o.name,
                                def.name,
                                o.kind.describe(),
                                first.name,
                                fo.kind.describe()
                            ),
                        )
                        .with_help("give the option the same type and bounds in both, or rename one"),
                    );
                }
                Some(_) => {}
                None => {
                    seen.insert(&o.name, (def, o));
                }
            }
        }
    }
}

fn same_kind(a: &Kind, b: &Kind) -> bool {
    match (a, b) {
        (Kind::Bool, Kind::Bool) | (Kind::Size, Kind::Size) | (Kind::Str, Kind::Str) => true,
        (Kind::Int { min: a0, max: a1 }, Kind::Int { min: b0, max: b1 }) => a0 == b0 && a1 == b1,
        (Kind::Float { min: a0, max: a1 }, Kind::Float { min: b0, max: b1 }) => {
            a0 == b0 && a1 == b1
        }
        (Kind::Enum(a), Kind::Enum(b)) => a == b,
        (Kind::List(a), Kind::List(b)) => a == b,
        _ => false,
    }
}

/// How a built-in option is declared, in definition syntax (for the help of a clash).
fn declare_like(kind: &Kind) -> String {
    match kind {
        Kind::Bool => "type = \"bool\"".into(),
        Kind::Int { min, max } if *max == i64::MAX => format!("type = \"int\", min = {min}"),
        Kind::Int { min, max } => format!("type = \"int\", min = {min}, max = {max}"),
        Kind::Float { min, max } => format!("type = \"float\", min = {min}, max = {max}"),
        Kind::Size => "type = \"size\"".into(),
        Kind::Str => "type = \"string\"".into(),
        Kind::Enum(c) => format!("type = \"enum\", choices = {c:?}"),
        Kind::List(_) => "a list (not available to custom workloads)".into(),
    }
}

/// A statement's text with `?` for each `:name` placeholder, and the names in order, for the
/// dialect of `driver`. Left alone: `::` (a PostgreSQL cast) and whatever the dialect's lexer
/// ([`crate::db::sql_text::pieces`], which `ps_mode = disable`'s substitution shares) finds
/// quoted or commented out.
pub fn placeholders(sql: &str, driver: Driver) -> (String, Vec<String>) {
    let mut out = String::with_capacity(sql.len());
    let mut names = Vec::new();
    for (kind, piece) in sql_text::pieces(sql, driver.dialect().syntax()) {
        if kind != Piece::Code {
            out.push_str(piece);
            continue;
        }
        let b = piece.as_bytes();
        let word = |i: usize| {
            b.get(i)
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
        };
        let (mut i, mut copied) = (0, 0);
        while i < b.len() {
            match (b[i], b.get(i + 1)) {
                (b':', Some(b':')) => i += 2,
                (b':', Some(c)) if c.is_ascii_alphabetic() || *c == b'_' => {
                    let mut end = i + 1;
                    while word(end) {
                        end += 1;
                    }
                    out.push_str(&piece[copied..i]);
                    out.push('?');
                    names.push(piece[i + 1..end].to_string());
                    (i, copied) = (end, end);
                }
                _ => i += 1,
            }
        }
        out.push_str(&piece[copied..]);
    }
    (out, names)
}

/// What may be read at one point of a definition.
struct Scope<'a> {
    /// The slots set at this point.
    set: &'a HashSet<Slot>,
    /// What the place is, for messages ("a load column").
    place: &'a str,
    /// What the place can read, for the help.
    allowed: &'a str,
}

const TXN_ALLOWED: &str =
    "options, `thread`, params and the variables set earlier in the same transaction";
const LOAD_ALLOWED: &str =
    "options, `row`, `child` and `parent_row` (with a parent) and the entry's earlier lets";

struct Compiler<'a> {
    file: &'a Path,
    map: &'a SourceMap,
    file_index: usize,
    errors: Vec<ConfigError>,
    sites: Vec<SqlSite>,
    option_sites: Vec<OptionSite>,
    vars: Vars,
    /// Where each transaction or load variable is set, for "used before it is set".
    declared: HashMap<String, String>,
    /// Slots read since the last reset (to find the params a transaction draws).
    used: Vec<Slot>,
    name: String,
    /// The tables the workload loads (for `fk`).
    tables: Vec<String>,
}

fn key(base: &[Seg], k: &str) -> Vec<Seg> {
    let mut p = base.to_vec();
    p.push(Seg::key(k));
    p
}

fn index(base: &[Seg], i: usize) -> Vec<Seg> {
    let mut p = base.to_vec();
    p.push(Seg::Index(i));
    p
}

fn kind_word(k: VarKind) -> &'static str {
    match k {
        VarKind::Option => "an option",
        VarKind::Thread => "the thread id",
        VarKind::Param => "a [params] generator",
        VarKind::Let => "a `let`",
        VarKind::Capture => "a `capture`",
        VarKind::Index => "a loop `index`",
        VarKind::Load => "a load variable",
    }
}

impl Compiler<'_> {
    fn err(
        &mut self,
        path: &[Seg],
        key: bool,
        message: impl Into<String>,
        help: impl Into<String>,
    ) {
        self.errors.push(
            ConfigError::new(
                self.file,
                self.map.origin(path, key),
                path_text(path),
                message,
            )
            .with_help(help),
        );
    }

    /// Reports every key of `table` not in `allowed`.
    fn keys(&mut self, path: &[Seg], table: &toml::Table, allowed: &[&str], what: &str) {
        for k in table.keys() {
            if !allowed.contains(&k.as_str()) {
                let help = did_you_mean(k, allowed.iter().copied())
                    .unwrap_or_else(|| format!("{what} keys: {}", allowed.join(", ")));
                self.err(
                    &key(path, k),
                    true,
                    format!("unknown key `{k}` in {what}"),
                    help,
                );
            }
        }
    }

    fn table<'v>(
        &mut self,
        path: &[Seg],
        v: &'v toml::Value,
        what: &str,
        eg: &str,
    ) -> Option<&'v toml::Table> {
        match v.as_table() {
            Some(t) => Some(t),
            None => {
                self.err(
                    path,
                    false,
                    format!("{what} must be a table, found {}", v.type_str()),
                    format!("e.g. {eg}"),
                );
                None
            }
        }
    }

    fn string<'v>(&mut self, path: &[Seg], v: &'v toml::Value, eg: &str) -> Option<&'v str> {
        match v.as_str() {
            Some(s) => Some(s),
            None => {
                self.err(
                    path,
                    false,
                    format!("`{}` must be a string, found {}", last(path), v.type_str()),
                    format!("e.g. {eg}"),
                );
                None
            }
        }
    }

    fn boolean(&mut self, path: &[Seg], v: &toml::Value) -> Option<bool> {
        match v.as_bool() {
            Some(b) => Some(b),
            None => {
                self.err(
                    path,
                    false,
                    format!(
                        "`{}` must be true or false, found {}",
                        last(path),
                        v.type_str()
                    ),
                    format!("e.g. {} = true", last(path)),
                );
                None
            }
        }
    }

    fn integer(&mut self, path: &[Seg], v: &toml::Value, min: i64) -> Option<i64> {
        match v.as_integer() {
            Some(i) if i >= min => Some(i),
            _ => {
                self.err(
                    path,
                    false,
                    format!(
                        "`{}` must be an integer of at least {min}, found {v}",
                        last(path)
                    ),
                    format!("e.g. {} = {}", last(path), min.max(1)),
                );
                None
            }
        }
    }

    /// Declares a variable (pass 1): a name of a transaction or a load may be set in several
    /// places, but not be an option, `thread` or a param.
    fn declare(&mut self, path: &[Seg], name: &str, kind: VarKind, at: &str) {
        if !is_identifier(name) {
            self.err(
                path,
                true,
                format!("`{name}` is not a valid variable name"),
                "use letters, digits and `_`, starting with a letter or `_`",
            );
            return;
        }
        match self.vars.slot(name) {
            None => {
                self.vars.names.push(name.to_string());
                self.vars.kinds.push(kind);
                self.declared
                    .entry(name.to_string())
                    .or_insert_with(|| at.to_string());
            }
            Some(slot) => {
                let first = self.vars.kinds[slot];
                let global =
                    |k: VarKind| matches!(k, VarKind::Option | VarKind::Thread | VarKind::Param);
                if global(first) || global(kind) {
                    self.err(
                        path,
                        true,
                        format!(
                            "variable `{name}` is declared twice: as {} and as {}",
                            kind_word(first),
                            kind_word(kind)
                        ),
                        "each option, param and `thread` has its own name: rename one of them",
                    );
                } else {
                    self.declared
                        .entry(name.to_string())
                        .or_insert_with(|| at.to_string());
                }
            }
        }
    }

    fn workload(&mut self, base: &[Seg], v: &toml::Value) -> Option<Def> {
        let name = self.name.clone();
        let t = self.table(
            base,
            v,
            &format!("workload `{name}`"),
            "[workloads.orders] with summary, options, params, transactions, …",
        )?;
        let before = self.errors.len();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            self.err(
                base,
                true,
                format!("invalid workload name `{name}`"),
                "use letters, digits, `_` and `-` (it becomes a CSV value and part of file names)",
            );
        }
        if registry::WORKLOADS.iter().any(|w| w.name == name) {
            self.err(
                base,
                true,
                format!("workload `{name}` is a built-in workload"),
                format!("give your workload its own name, e.g. `my_{name}`"),
            );
        }
        self.keys(base, t, WORKLOAD_KEYS, &format!("[workloads.{name}]"));
        let summary = match t.get("summary") {
            Some(v) => self
                .string(&key(base, "summary"), v, "summary = \"order entry\"")?
                .to_string(),
            None => String::new(),
        };

        // Pass 1: every variable.
        let options = match t.get("options") {
            Some(v) => self.options(&key(base, "options"), v),
            None => Vec::new(),
        };
        for o in &options {
            self.vars.names.push(o.name.clone());
            self.vars.kinds.push(VarKind::Option);
        }
        self.vars.names.push("thread".into());
        self.vars.kinds.push(VarKind::Thread);
        let params_table = match t.get("params") {
            Some(v) => self.table(
                &key(base, "params"),
                v,
                "`params`",
                "[workloads.orders.params] with cust = { uniform = [1, 1000] }",
            ),
            None => None,
        };
        if let Some(p) = params_table {
            for k in p.keys() {
                self.declare(
                    &key(&key(base, "params"), k),
                    k,
                    VarKind::Param,
                    "a [params] generator",
                );
            }
        }
        let txns = match t.get("transactions") {
            Some(v) => self.table(
                &key(base, "transactions"),
                v,
                "`transactions`",
                "[workloads.orders.transactions.new_order] with steps = [...]",
            ),
            None => None,
        };
        if let Some(txns) = txns {
            for (tn, tv) in txns {
                let tpath = key(&key(base, "transactions"), tn);
                if let Some(tt) = tv.as_table() {
                    if let Some(l) = tt.get("let").and_then(toml::Value::as_table) {
                        for k in l.keys() {
                            self.declare(
                                &key(&key(&tpath, "let"), k),
                                k,
                                VarKind::Let,
                                &format!("set at {}", path_text(&key(&tpath, "let"))),
                            );
                        }
                    }
                    if let Some(steps) = tt.get("steps").and_then(toml::Value::as_array) {
                        self.declare_steps(&key(&tpath, "steps"), steps);
                    }
                }
            }
        }
        let load = t.get("load").and_then(toml::Value::as_array);
        self.tables = load
            .into_iter()
            .flatten()
            .filter_map(|l| l.get("table").and_then(toml::Value::as_str))
            .map(str::to_string)
            .collect();
        if let Some(load) = load {
            for (i, entry) in load.iter().enumerate() {
                let lpath = index(&key(base, "load"), i);
                for v in LOAD_VARS {
                    self.declare(&lpath, v, VarKind::Load, "a load variable");
                }
                if let Some(l) = entry.get("let").and_then(toml::Value::as_table) {
                    for k in l.keys() {
                        self.declare(
                            &key(&key(&lpath, "let"), k),
                            k,
                            VarKind::Load,
                            "a load `let`",
                        );
                    }
                }
            }
        }
        for o in &options {
            if LOAD_VARS.contains(&o.name.as_str()) || o.name == "thread" {
                self.err(
                    &key(&key(base, "options"), &o.name),
                    true,
                    format!("option `{}` has the name of a built-in variable", o.name),
                    "`thread`, `row`, `child` and `parent_row` are variables of every workload: rename the option",
                );
            }
        }
        if let Some(p) = params_table {
            for k in p.keys() {
                if LOAD_VARS.contains(&k.as_str()) {
                    self.err(
                        &key(&key(base, "params"), k),
                        true,
                        format!("param `{k}` has the name of a load variable"),
                        "`row`, `child` and `parent_row` are variables of loads: rename the param",
                    );
                }
            }
        }
        if self.errors.len() > before {
            return None;
        }

        // Pass 2.
        let globals: HashSet<Slot> = (0..self.vars.len())
            .filter(|s| matches!(self.vars.kinds[*s], VarKind::Option | VarKind::Thread))
            .collect();
        let mut params: Vec<(Slot, GenSpec)> = Vec::new();
        let mut param_deps: HashMap<Slot, Vec<Slot>> = HashMap::new();
        if let Some(p) = params_table {
            let mut set = globals.clone();
            for (k, v) in p {
                let Some(slot) = self.vars.slot(k) else {
                    continue;
                };
                self.used.clear();
                // An earlier param that was refused still counts as set (one error, not two).
                let scope = Scope {
                    set: &set,
                    place: "a [params] generator",
                    allowed: "options, `thread` and earlier params (params are drawn at the start of a transaction)",
                };
                if let Some(g) = self.generated(&key(&key(base, "params"), k), v, &scope) {
                    param_deps.insert(slot, self.used.clone());
                    params.push((slot, g));
                }
                set.insert(slot);
            }
        }
        // Every declared param counts as set, also one whose generator was refused above: its
        // users would only repeat that error.
        let param_slots: HashSet<Slot> = (0..self.vars.len())
            .filter(|s| self.vars.kinds[*s] == VarKind::Param)
            .collect();
        let mut avail = globals.clone();
        avail.extend(param_slots.iter().copied());

        let mut load_tables: Vec<LoadTable> = Vec::new();
        if let Some(v) = t.get("load") {
            load_tables = self.load(&key(base, "load"), v, &globals);
        }

        let mut transactions: Vec<Txn> = Vec::new();
        let mut statements: Vec<Stmt> = Vec::new();
        if let Some(txns) = txns {
            for (tn, tv) in txns {
                let tpath = key(&key(base, "transactions"), tn);
                if let Some(txn) =
                    self.transaction(&tpath, tn, tv, transactions.len(), &avail, &mut statements)
                {
                    let mut used: Vec<Slot> = self.used.clone();
                    // Params used by the params used, to the fixed point.
                    let mut i = 0;
                    while i < used.len() {
                        if let Some(deps) = param_deps.get(&used[i]) {
                            for d in deps {
                                if !used.contains(d) {
                                    used.push(*d);
                                }
                            }
                        }
                        i += 1;
                    }
                    let draws: Vec<Slot> = params
                        .iter()
                        .map(|(s, _)| *s)
                        .filter(|s| used.contains(s))
                        .collect();
                    transactions.push(Txn { draws, ..txn });
                }
            }
        }
        let mut seen_names: HashMap<String, usize> = HashMap::new();
        for (i, s) in statements.iter().enumerate() {
            if let Some(first) = seen_names.insert(s.name.clone(), i) {
                let txn = &transactions
                    .get(s.txn)
                    .map_or("", |t| t.name.as_str())
                    .to_string();
                let path = key(&key(base, "transactions"), txn);
                self.err(
                    &path,
                    true,
                    format!(
                        "statement name `{}` is used twice (statements {} and {})",
                        s.name,
                        first + 1,
                        i + 1
                    ),
                    "give each statement its own `name` (per-statement stats are kept by name)",
                );
            }
        }
        if self.errors.len() == before {
            if transactions.is_empty() {
                let path = if t.contains_key("transactions") {
                    key(base, "transactions")
                } else {
                    base.to_vec()
                };
                self.err(
                    &path,
                    true,
                    format!("workload `{name}` has no transactions"),
                    format!("add [workloads.{name}.transactions.NAME] with weight = 1 and steps = [{{ sql = \"…\" }}]"),
                );
            } else if transactions.iter().all(|t| t.weight == 0) {
                self.err(
                    &key(base, "transactions"),
                    true,
                    format!(
                        "every transaction of workload `{name}` has weight 0: nothing would run"
                    ),
                    "give at least one transaction a weight above 0",
                );
            }
        }

        let sql_list = |c: &mut Self, k: &str| -> Vec<Sql> {
            match t.get(k) {
                None => Vec::new(),
                Some(v) => c.sql_list(&key(base, k), v),
            }
        };
        let schema = sql_list(self, "schema");
        let after_load = sql_list(self, "after_load");
        let cleanup = sql_list(self, "cleanup");
        let checks = match t.get("checks") {
            Some(v) => {
                let options: HashSet<Slot> = globals
                    .iter()
                    .copied()
                    .filter(|s| self.vars.kinds[*s] == VarKind::Option)
                    .collect();
                self.checks(&key(base, "checks"), v, &options)
            }
            None => Vec::new(),
        };
        let headline = match t.get("headline") {
            Some(v) => {
                let declared: Vec<&str> =
                    txns.map_or(Vec::new(), |t| t.keys().map(String::as_str).collect());
                self.headline(&key(base, "headline"), v, &transactions, &declared)
            }
            None => None,
        };
        let prepare_threads = match t.get("prepare_threads") {
            Some(v) => self
                .integer(&key(base, "prepare_threads"), v, 1)
                .unwrap_or(0) as usize,
            None => 0,
        };
        let fresh_per_run = match t.get("fresh_prepare") {
            Some(v) => self
                .boolean(&key(base, "fresh_prepare"), v)
                .unwrap_or(false),
            None => false,
        };
        if self.errors.len() > before {
            return None;
        }
        Some(Def {
            name,
            summary,
            source: self.file.to_path_buf(),
            options,
            headline,
            prepare_threads,
            schema,
            after_load,
            cleanup,
            load: load_tables,
            fresh_per_run,
            checks,
            vars: std::mem::take(&mut self.vars),
            params,
            transactions,
            statements,
        })
    }

    /// Pass 1 over a list of steps: the lets, captures and indexes they declare.
    fn declare_steps(&mut self, path: &[Seg], steps: &[toml::Value]) {
        for (i, step) in steps.iter().enumerate() {
            let spath = index(path, i);
            let Some(s) = step.as_table() else { continue };
            let at = format!("set at {}", path_text(&spath));
            if let Some(ix) = s.get("index").and_then(toml::Value::as_str) {
                self.declare(&key(&spath, "index"), ix, VarKind::Index, &at);
            }
            if let Some(l) = s.get("let").and_then(toml::Value::as_table) {
                for k in l.keys() {
                    self.declare(&key(&key(&spath, "let"), k), k, VarKind::Let, &at);
                }
            }
            if let Some(c) = s.get("capture") {
                for (var, _) in capture_pairs(c) {
                    self.declare(&key(&spath, "capture"), &var, VarKind::Capture, &at);
                }
            }
            if let Some(inner) = s.get("steps").and_then(toml::Value::as_array) {
                self.declare_steps(&key(&spath, "steps"), inner);
            }
        }
    }

    fn options(&mut self, path: &[Seg], v: &toml::Value) -> Vec<OptionDef> {
        let Some(t) = self.table(
            path,
            v,
            "`options`",
            "customers = { type = \"int\", default = 1000 }",
        ) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (name, ov) in t {
            let opath = key(path, name);
            if let Some(o) = self.option(&opath, name, ov) {
                out.push(o);
            }
        }
        out
    }

    fn option(&mut self, path: &[Seg], name: &str, v: &toml::Value) -> Option<OptionDef> {
        let t = self.table(
            path,
            v,
            &format!("option `{name}`"),
            &format!("{name} = {{ type = \"int\", default = 10, help = \"…\" }}"),
        )?;
        self.keys(path, t, OPTION_KEYS, &format!("option `{name}`"));
        if !is_identifier(name) {
            self.err(
                path,
                true,
                format!("`{name}` is not a valid option name"),
                "use letters, digits and `_`, starting with a letter",
            );
            return None;
        }
        if name == "workload" || GENERAL.iter().chain(COMMON).any(|o| o.name == name) {
            self.err(
                path,
                true,
                format!("option `{name}` is a general option of every workload"),
                "rename the option (general options such as threads, time and check apply to every workload already)",
            );
            return None;
        }
        let Some(ty) = t.get("type") else {
            self.err(
                path,
                false,
                format!("option `{name}` has no `type`"),
                format!("add type = one of {}", OPTION_TYPES.join(", ")),
            );
            return None;
        };
        let tpath = key(path, "type");
        let ty = self.string(&tpath, ty, "type = \"int\"")?;
        let num = |c: &mut Self, k: &str| -> Option<Option<f64>> {
            match t.get(k) {
                None => Some(None),
                Some(toml::Value::Integer(i)) => Some(Some(*i as f64)),
                Some(toml::Value::Float(f)) => Some(Some(*f)),
                Some(other) => {
                    c.err(
                        &key(path, k),
                        false,
                        format!("`{k}` must be a number, found {}", other.type_str()),
                        format!("e.g. {k} = 1"),
                    );
                    None
                }
            }
        };
        let (min, max) = (num(self, "min")?, num(self, "max")?);
        if !matches!(ty, "int" | "float") {
            for k in ["min", "max"] {
                if t.contains_key(k) {
                    self.err(
                        &key(path, k),
                        true,
                        format!("`{k}` applies to int and float options only"),
                        "remove it",
                    );
                }
            }
        }
        if ty != "enum" && t.contains_key("choices") {
            self.err(
                &key(path, "choices"),
                true,
                "`choices` applies to enum options only",
                "use type = \"enum\", or remove `choices`",
            );
        }
        let kind = match ty {
            "int" => {
                let bad = |x: Option<f64>| x.is_some_and(|x| x.fract() != 0.0);
                if bad(min) || bad(max) {
                    self.err(
                        path,
                        false,
                        "the bounds of an int option must be integers",
                        "e.g. min = 1, max = 100",
                    );
                    return None;
                }
                Kind::Int {
                    min: min.map_or(i64::MIN, |x| x as i64),
                    max: max.map_or(i64::MAX, |x| x as i64),
                }
            }
            "float" => Kind::Float {
                min: min.unwrap_or(f64::MIN),
                max: max.unwrap_or(f64::MAX),
            },
            "bool" => Kind::Bool,
            "string" => Kind::Str,
            "size" => Kind::Size,
            "enum" => {
                let choices: Option<Vec<&str>> = t
                    .get("choices")
                    .and_then(toml::Value::as_array)
                    .and_then(|a| a.iter().map(toml::Value::as_str).collect());
                match choices {
                    Some(c) if !c.is_empty() => {
                        let leaked: Vec<&'static str> = c
                            .iter()
                            .map(|s| &*Box::leak(s.to_string().into_boxed_str()))
                            .collect();
                        Kind::Enum(Box::leak(leaked.into_boxed_slice()))
                    }
                    _ => {
                        self.err(
                            path,
                            false,
                            format!("enum option `{name}` needs `choices`, a list of strings"),
                            "e.g. choices = [\"a\", \"b\"]",
                        );
                        return None;
                    }
                }
            }
            other => {
                let help = did_you_mean(other, OPTION_TYPES.iter().copied())
                    .unwrap_or_else(|| format!("types: {}", OPTION_TYPES.join(", ")));
                self.err(
                    &tpath,
                    false,
                    format!("unknown option type `{other}`"),
                    help,
                );
                return None;
            }
        };
        if let (Some(lo), Some(hi)) = (min, max)
            && lo > hi
        {
            self.err(
                &key(path, "min"),
                false,
                format!("min ({lo}) is greater than max ({hi})"),
                "swap them",
            );
            return None;
        }
        if let Some(builtin) = registry::WORKLOADS.iter().find_map(|w| w.option(name))
            && !same_kind(&builtin.kind, &kind)
        {
            self.err(
                &tpath,
                false,
                format!(
                    "option `{name}` is {} here, but the built-in option `{name}` is {}",
                    kind.describe(),
                    builtin.kind.describe()
                ),
                format!(
                    "declare it as the built-in does ({}), or rename it",
                    declare_like(&builtin.kind)
                ),
            );
            return None;
        }
        let default = match t.get("default") {
            None => None,
            Some(d) => {
                let dpath = key(path, "default");
                let Some(value) = Value::from_toml(d) else {
                    self.err(
                        &dpath,
                        false,
                        "a default must be a number, a string or a boolean",
                        "e.g. default = 10",
                    );
                    return None;
                };
                if let Err(e) = kind.coerce(&value) {
                    self.err(
                        &dpath,
                        false,
                        format!("invalid default for `{name}`: {e}"),
                        format!("the default must be {}", kind.describe()),
                    );
                    return None;
                }
                Some(match &value {
                    // Quoted when the plain text would read back as another type ("10", "on").
                    Value::Str(s) if Value::parse_loose(s) != value => {
                        toml::Value::String(s.clone()).to_string()
                    }
                    other => other.to_string(),
                })
            }
        };
        let dataset = match t.get("dataset") {
            Some(v) => self.boolean(&key(path, "dataset"), v)?,
            None => false,
        };
        let help = match t.get("help") {
            Some(v) => self
                .string(&key(path, "help"), v, "help = \"customers to load\"")?
                .to_string(),
            None => String::new(),
        };
        Some(OptionDef {
            name: name.to_string(),
            kind,
            default,
            dataset,
            help,
        })
    }

    /// Compiles an expression and checks that what it reads is set here.
    fn expr(&mut self, path: &[Seg], text: &str, scope: &Scope) -> Option<Expr> {
        match Expr::compile(text, &self.vars) {
            Err(e) => {
                let help = if e.contains("not defined here") {
                    format!(
                        "declare it ([workloads.{}.params], a `let`, a `capture` or an option) or fix the spelling",
                        self.name
                    )
                } else {
                    "expressions are minijinja expressions, e.g. \"warehouses * 10\", \"qty > 5 and mode == 'a'\"".to_string()
                };
                self.err(path, false, e, help);
                None
            }
            Ok(e) => {
                let mut ok = true;
                for s in e.slots() {
                    ok &= self.readable(path, s, scope, &format!("`{}`", text.trim()));
                }
                if !ok {
                    return None;
                }
                let e = match e.fold() {
                    Ok(e) => e,
                    Err(m) => {
                        self.err(
                            path,
                            false,
                            m,
                            "it fails in every run, whatever the data: fix the expression",
                        );
                        return None;
                    }
                };
                if self.reads_options(&e) {
                    self.option_sites.push(OptionSite {
                        workload: self.name.clone(),
                        file: self.file_index,
                        path: path.to_vec(),
                        check: OptionCheck::Value(e.clone()),
                    });
                }
                Some(e)
            }
        }
    }

    /// Whether `e` reads options and no other variable: its value is fixed for a run.
    fn reads_options(&self, e: &Expr) -> bool {
        let slots = e.slots();
        !slots.is_empty()
            && slots
                .iter()
                .all(|&s| self.vars.kinds.get(s) == Some(&VarKind::Option))
    }

    /// A generator's bounds `[lo, hi]` at `path`: written as constants (literals, or
    /// expressions of literals) they must not be inverted, which is refused here (`false`)
    /// rather than read backwards; an integer generator's bounds over options are checked to
    /// be integers by the plan, for each run's values.
    fn range(&mut self, path: &[Seg], generator: &str, lo: &Expr, hi: &Expr, int: bool) -> bool {
        if let (Some(a), Some(b)) = (lo.as_const(), hi.as_const())
            && let (Some(x), Some(y)) = (a.as_f64(), b.as_f64())
            && x > y
        {
            self.err(
                path,
                false,
                format!(
                    "`{generator}` goes from {a} to {b}: the first bound is greater than the second"
                ),
                "swap them (a range written as constants is never read backwards)",
            );
            return false;
        }
        for (i, bound) in [lo, hi].into_iter().enumerate() {
            if int && self.reads_options(bound) {
                self.option_sites.push(OptionSite {
                    workload: self.name.clone(),
                    file: self.file_index,
                    path: index(path, i),
                    check: OptionCheck::Int {
                        generator: generator.to_string(),
                        bound: bound.clone(),
                    },
                });
            }
        }
        true
    }

    /// Whether `slot` may be read at `path`; else the error says where it is set.
    fn readable(&mut self, path: &[Seg], slot: Slot, scope: &Scope, what: &str) -> bool {
        self.used.push(slot);
        if scope.set.contains(&slot) {
            return true;
        }
        let name = self.vars.names[slot].clone();
        let kind = self.vars.kinds[slot];
        let at = self.declared.get(&name).cloned().unwrap_or_default();
        let (message, help) = match kind {
            VarKind::Let | VarKind::Capture | VarKind::Index => (
                format!(
                    "{what} uses `{name}` before it is set ({} {at})",
                    kind_word(kind)
                ),
                format!(
                    "{} can read {}: set `{name}` in an earlier step, or draw it from [params]",
                    scope.place, scope.allowed
                ),
            ),
            _ => (
                format!(
                    "{what} uses `{name}` ({}), which {} cannot read",
                    kind_word(kind),
                    scope.place
                ),
                format!("{} can read {}", scope.place, scope.allowed),
            ),
        };
        self.err(path, false, message, help);
        false
    }

    /// A generator or an expression (a string or a number).
    fn generated(&mut self, path: &[Seg], v: &toml::Value, scope: &Scope) -> Option<GenSpec> {
        match v {
            toml::Value::String(s) => self.expr(path, s, scope).map(GenSpec::Expr),
            toml::Value::Integer(i) => {
                Some(GenSpec::Expr(Expr::constant(&i.to_string(), Val::Int(*i))))
            }
            toml::Value::Float(f) => Some(GenSpec::Expr(Expr::constant(
                &f.to_string(),
                Val::Float(*f),
            ))),
            toml::Value::Table(t) => self.generator(path, t, scope),
            other => {
                self.err(
                    path,
                    false,
                    format!("a value must be an expression (a string), a number or a generator table, found {}", other.type_str()),
                    "e.g. \"qty * 3\", 10 or { uniform = [1, 100] }",
                );
                None
            }
        }
    }

    fn generator(&mut self, path: &[Seg], t: &toml::Table, scope: &Scope) -> Option<GenSpec> {
        let gens: Vec<&str> = t
            .keys()
            .map(String::as_str)
            .filter(|k| GENERATORS.contains(k))
            .collect();
        let mut ok = true;
        for k in t.keys() {
            if GENERATORS.contains(&k.as_str()) {
                continue;
            }
            match MODIFIERS.iter().find(|(m, _)| m == k) {
                Some((_, owner)) if gens.contains(owner) => {}
                Some((_, owner)) => {
                    self.err(
                        &key(path, k),
                        true,
                        format!("`{k}` belongs to the `{owner}` generator"),
                        format!("use it as {{ {owner} = …, {k} = … }}, or remove it"),
                    );
                    ok = false;
                }
                None => {
                    let all = GENERATORS
                        .iter()
                        .copied()
                        .chain(MODIFIERS.iter().map(|(m, _)| *m));
                    let help = did_you_mean(k, all)
                        .unwrap_or_else(|| format!("generators: {}", GENERATORS.join(", ")));
                    self.err(
                        &key(path, k),
                        true,
                        format!("unknown generator key `{k}`"),
                        help,
                    );
                    ok = false;
                }
            }
        }
        let g = match gens.as_slice() {
            [g] => *g,
            [] => {
                if ok {
                    self.err(
                        path,
                        false,
                        "a generator table needs one generator key",
                        format!("generators: {}", GENERATORS.join(", ")),
                    );
                }
                return None;
            }
            many => {
                self.err(
                    path,
                    false,
                    format!(
                        "a generator table has one generator, this one has {}",
                        many.join(", ")
                    ),
                    "split it into several variables",
                );
                return None;
            }
        };
        if !ok {
            return None;
        }
        let gpath = key(path, g);
        let arg = &t[g];
        let pair = |c: &mut Self, n: usize, eg: &str| -> Option<Vec<Expr>> {
            match arg.as_array() {
                Some(items) if items.len() == n => {
                    let mut out = Vec::new();
                    for (i, item) in items.iter().enumerate() {
                        out.push(c.bound(&index(&gpath, i), item, scope)?);
                    }
                    Some(out)
                }
                _ => {
                    c.err(
                        &gpath,
                        false,
                        format!("`{g}` takes {n} values, found {arg}"),
                        format!("e.g. {g} = {eg}"),
                    );
                    None
                }
            }
        };
        let int_bounds = |c: &mut Self, e: &[Expr]| -> bool {
            let mut ok = true;
            for (i, x) in e.iter().enumerate() {
                if let Some(v) = x.as_const()
                    && v.as_i64().is_none()
                {
                    c.err(
                        &index(&gpath, i),
                        false,
                        format!("`{g}` takes integer bounds, found {v}"),
                        "write a whole number",
                    );
                    ok = false;
                }
            }
            if ok && let [lo, hi] = e {
                ok = c.range(&gpath, g, lo, hi, true);
            }
            ok
        };
        Some(match g {
            "uniform" | "gaussian" | "special" | "pareto" | "zipfian" | "rand" => {
                let b = pair(self, 2, "[1, 100]")?;
                if !int_bounds(self, &b) {
                    return None;
                }
                let d = match g {
                    "uniform" => Dist::Uniform,
                    "gaussian" => Dist::Gaussian,
                    "special" => Dist::Special,
                    "pareto" => Dist::Pareto,
                    "zipfian" => Dist::Zipfian,
                    _ => Dist::Default,
                };
                let [lo, hi]: [Expr; 2] = b.try_into().ok()?;
                GenSpec::Dist { dist: d, lo, hi }
            }
            "sequence" => {
                let Some(start) = arg.as_integer() else {
                    self.err(
                        &gpath,
                        false,
                        format!("`sequence` takes the first value, an integer, found {arg}"),
                        "e.g. { sequence = 1 }",
                    );
                    return None;
                };
                let per_thread = match t.get("per_thread") {
                    Some(v) => self.boolean(&key(path, "per_thread"), v)?,
                    None => false,
                };
                GenSpec::Sequence { start, per_thread }
            }
            "nurand" => {
                let items = arg.as_array();
                let a = items
                    .and_then(|i| i.first())
                    .and_then(toml::Value::as_integer);
                let (Some(items), Some(a)) =
                    (items.filter(|i| i.len() == 3), a.filter(|a| *a >= 0))
                else {
                    self.err(
                        &gpath,
                        false,
                        format!("`nurand` takes [A, x, y] with A an integer ≥ 0, found {arg}"),
                        "e.g. nurand = [1023, 1, 3000] (TPC-C's customer id)",
                    );
                    return None;
                };
                let lo = self.bound(&index(&gpath, 1), &items[1], scope)?;
                let hi = self.bound(&index(&gpath, 2), &items[2], scope)?;
                if !int_bounds(self, &[lo.clone(), hi.clone()]) {
                    return None;
                }
                GenSpec::NuRand { a, lo, hi }
            }
            "choice" => {
                let values: Option<Vec<Val>> = arg
                    .as_array()
                    .filter(|a| !a.is_empty())
                    .and_then(|a| a.iter().map(val_of).collect());
                let Some(values) = values else {
                    self.err(&gpath, false, format!("`choice` takes a non-empty list of numbers, strings or booleans, found {arg}"), "e.g. { choice = [\"a\", \"b\"], weights = [3, 1] }");
                    return None;
                };
                let weights = match t.get("weights") {
                    None => Vec::new(),
                    Some(w) => {
                        let ws: Option<Vec<u32>> = w.as_array().and_then(|a| {
                            a.iter()
                                .map(|x| x.as_integer().and_then(|i| u32::try_from(i).ok()))
                                .collect()
                        });
                        match ws {
                            Some(ws) if ws.len() == values.len() && ws.iter().any(|w| *w > 0) => ws,
                            _ => {
                                self.err(&key(path, "weights"), false, format!("`weights` needs one integer ≥ 0 per choice ({} here), not all 0", values.len()), "e.g. weights = [3, 1]");
                                return None;
                            }
                        }
                    }
                };
                GenSpec::Choice { values, weights }
            }
            "string" => GenSpec::Pattern(
                self.string(&gpath, arg, "{ string = \"###-@@@\" }")?
                    .to_string(),
            ),
            "astring" | "nstring" => {
                let b = pair(self, 2, "[8, 16]")?;
                if !int_bounds(self, &b) {
                    return None;
                }
                for (i, x) in b.iter().enumerate() {
                    if x.as_const().and_then(Val::as_i64).is_some_and(|n| n < 0) {
                        self.err(
                            &index(&gpath, i),
                            false,
                            "a length cannot be negative",
                            "e.g. [8, 16]",
                        );
                        return None;
                    }
                }
                let [min, max]: [Expr; 2] = b.try_into().ok()?;
                if g == "astring" {
                    GenSpec::AString { min, max }
                } else {
                    GenSpec::NString { min, max }
                }
            }
            "float" => {
                let b = pair(self, 2, "[1.0, 100.0]")?;
                if !self.range(&gpath, g, &b[0], &b[1], false) {
                    return None;
                }
                let scale = match t.get("scale") {
                    Some(v) => self.integer(&key(path, "scale"), v, 0)?.min(18) as u32,
                    None => 2,
                };
                let [min, max]: [Expr; 2] = b.try_into().ok()?;
                GenSpec::Float { min, max, scale }
            }
            "syllables" => {
                let of = match arg {
                    toml::Value::Integer(_) | toml::Value::String(_) => {
                        self.bound(&gpath, arg, scope)?
                    }
                    _ => {
                        self.err(
                            &gpath,
                            false,
                            "`syllables` takes an expression (the number to spell)",
                            "e.g. { syllables = \"c_last\", words = [\"BAR\", \"OUGHT\", …] }",
                        );
                        return None;
                    }
                };
                let words: Option<Vec<String>> = t
                    .get("words")
                    .and_then(toml::Value::as_array)
                    .and_then(|a| a.iter().map(|w| w.as_str().map(str::to_string)).collect());
                match words {
                    Some(words) if words.len() == 10 => GenSpec::Syllables { of, words },
                    _ => {
                        let at = if t.contains_key("words") {
                            key(path, "words")
                        } else {
                            path.to_vec()
                        };
                        self.err(&at, false, "`syllables` needs `words`, a list of 10 strings (one per digit 0–9)", "e.g. words = [\"BAR\", \"OUGHT\", \"ABLE\", \"PRI\", \"PRES\", \"ESE\", \"ANTI\", \"CALLY\", \"ATION\", \"EING\"]");
                        return None;
                    }
                }
            }
            "date" => {
                if arg.as_str() != Some("now") {
                    self.err(
                        &gpath,
                        false,
                        format!("`date` takes \"now\", found {arg}"),
                        "write { date = \"now\" } (the current timestamp)",
                    );
                    return None;
                }
                GenSpec::Now
            }
            "null" | "thread" => {
                if arg.as_bool() != Some(true) {
                    self.err(
                        &gpath,
                        false,
                        format!("`{g}` takes true, found {arg}"),
                        format!("write {{ {g} = true }}"),
                    );
                    return None;
                }
                if g == "null" {
                    GenSpec::Const(Val::Null)
                } else {
                    GenSpec::Thread
                }
            }
            "const" => match val_of(arg) {
                Some(v) => GenSpec::Const(v),
                None => {
                    self.err(
                        &gpath,
                        false,
                        format!("`const` takes a number, a string or a boolean, found {arg}"),
                        "e.g. { const = \"open\" }",
                    );
                    return None;
                }
            },
            "fk" => {
                let table = self.string(&gpath, arg, "{ fk = \"customers\" }")?;
                if !self.tables.iter().any(|t| t == table) {
                    let tables = self.tables.clone();
                    self.fk_error(&gpath, table, &tables);
                    return None;
                }
                GenSpec::Fk(table.to_string())
            }
            _ => return None,
        })
    }

    /// A generator's bound: a number or an expression.
    fn bound(&mut self, path: &[Seg], v: &toml::Value, scope: &Scope) -> Option<Expr> {
        match v {
            toml::Value::Integer(i) => Some(Expr::constant(&i.to_string(), Val::Int(*i))),
            toml::Value::Float(f) => Some(Expr::constant(&f.to_string(), Val::Float(*f))),
            toml::Value::String(s) => self.expr(path, s, scope),
            other => {
                self.err(
                    path,
                    false,
                    format!(
                        "a bound must be a number or an expression, found {}",
                        other.type_str()
                    ),
                    "e.g. 1 or \"customers\"",
                );
                None
            }
        }
    }

    fn fk_error(&mut self, path: &[Seg], table: &str, tables: &[String]) {
        let help = did_you_mean(table, tables.iter().map(String::as_str)).unwrap_or_else(|| {
            format!(
                "loaded tables: {}",
                if tables.is_empty() {
                    "none".to_string()
                } else {
                    tables.join(", ")
                }
            )
        });
        self.err(
            path,
            false,
            format!("`fk` names `{table}`, which the workload does not load"),
            help,
        );
    }

    fn sql(&mut self, path: &[Seg], v: &toml::Value) -> Option<Sql> {
        let sql = match v {
            toml::Value::String(s) => Sql::all(s),
            toml::Value::Table(t) => {
                self.keys(path, t, DRIVERS, "per-driver SQL");
                let mut sql = Sql::default();
                for d in DRIVERS {
                    if let Some(v) = t.get(*d) {
                        let text = self
                            .string(&key(path, d), v, "mysql = \"SELECT 1\"")?
                            .to_string();
                        match *d {
                            "mysql" => sql.mysql = Some(text),
                            "pgsql" => sql.pgsql = Some(text),
                            _ => sql.sqlite = Some(text),
                        }
                    }
                }
                sql
            }
            other => {
                self.err(
                    path,
                    false,
                    format!(
                        "SQL must be a string or a per-driver table, found {}",
                        other.type_str()
                    ),
                    "e.g. \"SELECT 1\" or { mysql = \"…\", pgsql = \"…\", sqlite = \"…\" }",
                );
                return None;
            }
        };
        self.sites.push(SqlSite {
            workload: self.name.clone(),
            file: self.file_index,
            path: path.to_vec(),
            sql: sql.clone(),
        });
        Some(sql)
    }

    /// SQL without placeholders (schema, after_load, cleanup, checks).
    fn plain_sql(&mut self, path: &[Seg], v: &toml::Value) -> Option<Sql> {
        let sql = self.sql(path, v)?;
        for (d, text) in [
            (Driver::Mysql, &sql.mysql),
            (Driver::Pgsql, &sql.pgsql),
            (Driver::Sqlite, &sql.sqlite),
        ] {
            if let Some(text) = text
                && let Some(name) = placeholders(text, d).1.first()
            {
                self.err(path, false, format!("`:{name}` is a placeholder, and only transaction statements bind values"), "write the value into the SQL (schema, after_load, cleanup and checks run as written), or quote it if it is text");
                return None;
            }
        }
        Some(sql)
    }

    fn sql_list(&mut self, path: &[Seg], v: &toml::Value) -> Vec<Sql> {
        match v {
            toml::Value::Array(items) => items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| self.plain_sql(&index(path, i), item))
                .collect(),
            other => self.plain_sql(path, other).into_iter().collect(),
        }
    }

    /// A statement's SQL with its placeholders bound, per driver.
    fn bound_sql(&mut self, path: &[Seg], v: &toml::Value, scope: &Scope) -> Option<BoundSql> {
        let sql = self.sql(path, v)?;
        let mut ok = true;
        // Each distinct text is bound (and its errors reported) once, not once per driver.
        let mut done: Vec<(String, Vec<String>, Bound)> = Vec::new();
        let mut bind = |c: &mut Self, text: &Option<String>, d: Driver| -> Option<Bound> {
            let (out, names) = placeholders(text.as_ref()?, d);
            if let Some((_, _, b)) = done.iter().find(|(o, n, _)| *o == out && *n == names) {
                return Some(b.clone());
            }
            let mut binds = Vec::new();
            for n in &names {
                match c.vars.slot(n) {
                    Some(s) => {
                        ok &= c.readable(path, s, scope, &format!("placeholder `:{n}`"));
                        binds.push(s);
                    }
                    None => {
                        let help = did_you_mean(n, c.vars.names.iter().map(String::as_str))
                            .map(|s| format!("{s} (placeholders name variables: options, params, lets, captures, indexes, thread)"))
                            .unwrap_or_else(|| format!("declare it (e.g. in [workloads.{}.params]) or use one of: {}", c.name, c.vars.names.join(", ")));
                        c.err(
                            path,
                            false,
                            format!("unknown placeholder `:{n}`: no variable of that name"),
                            help,
                        );
                        ok = false;
                    }
                }
            }
            let bound = Bound {
                text: out.clone(),
                binds,
            };
            done.push((out, names, bound.clone()));
            Some(bound)
        };
        let bound = BoundSql {
            mysql: bind(self, &sql.mysql, Driver::Mysql),
            pgsql: bind(self, &sql.pgsql, Driver::Pgsql),
            sqlite: bind(self, &sql.sqlite, Driver::Sqlite),
        };
        ok.then_some(bound)
    }

    fn transaction(
        &mut self,
        path: &[Seg],
        name: &str,
        v: &toml::Value,
        txn: usize,
        avail: &HashSet<Slot>,
        statements: &mut Vec<Stmt>,
    ) -> Option<Txn> {
        let t = self.table(
            path,
            v,
            &format!("transaction `{name}`"),
            "[workloads.orders.transactions.new_order] with weight = 1 and steps = [...]",
        )?;
        let before = self.errors.len();
        self.keys(path, t, TXN_KEYS, &format!("transaction `{name}`"));
        self.used.clear();
        let weight = match t.get("weight") {
            Some(v) => match v.as_integer().and_then(|i| u32::try_from(i).ok()) {
                Some(w) => w,
                None => {
                    self.err(
                        &key(path, "weight"),
                        false,
                        format!("`weight` must be an integer ≥ 0, found {v}"),
                        "e.g. weight = 45 (relative to the others)",
                    );
                    0
                }
            },
            None => 1,
        };
        let autocommit = match t.get("autocommit") {
            Some(v) => self.boolean(&key(path, "autocommit"), v).unwrap_or(false),
            None => false,
        };
        let rollback = match t.get("rollback") {
            Some(v) => match v.as_float().or_else(|| v.as_integer().map(|i| i as f64)) {
                Some(p) if (0.0..=1.0).contains(&p) => p,
                _ => {
                    self.err(
                        &key(path, "rollback"),
                        false,
                        format!("`rollback` is a probability from 0 to 1, found {v}"),
                        "e.g. rollback = 0.01 (1 % of the transactions roll back)",
                    );
                    0.0
                }
            },
            None => 0.0,
        };
        let keying = match t.get("keying") {
            Some(v) => {
                let scope = Scope {
                    set: avail,
                    place: "`keying`",
                    allowed: "options, `thread` and params (it runs before the transaction)",
                };
                self.generated(&key(path, "keying"), v, &scope)
            }
            None => None,
        };
        let mut set = avail.clone();
        let mut body = Vec::new();
        if let Some(l) = t.get("let") {
            self.lets(&key(path, "let"), l, &mut set, &mut body, TXN_ALLOWED);
        }
        let steps = match t.get("steps") {
            Some(toml::Value::Array(steps)) if !steps.is_empty() => steps,
            _ => {
                self.err(
                    if t.contains_key("steps") {
                        key(path, "steps")
                    } else {
                        path.to_vec()
                    }
                    .as_slice(),
                    !t.contains_key("steps"),
                    format!("transaction `{name}` has no steps"),
                    "add steps = [{ sql = \"…\" }]",
                );
                return None;
            }
        };
        let mut count = 0;
        self.steps(
            &key(path, "steps"),
            steps,
            name,
            txn,
            &mut set,
            &mut body,
            statements,
            &mut count,
        );
        let think = match t.get("think") {
            Some(v) => {
                let scope = Scope {
                    set: &set,
                    place: "`think`",
                    allowed: TXN_ALLOWED,
                };
                self.generated(&key(path, "think"), v, &scope)
            }
            None => None,
        };
        if self.errors.len() > before {
            return None;
        }
        Some(Txn {
            name: name.to_string(),
            weight,
            autocommit,
            rollback,
            keying,
            think,
            draws: Vec::new(),
            body,
        })
    }

    fn lets(
        &mut self,
        path: &[Seg],
        v: &toml::Value,
        set: &mut HashSet<Slot>,
        out: &mut Vec<Op>,
        allowed: &str,
    ) {
        let Some(t) = self.table(
            path,
            v,
            "`let`",
            "let = { amount = \"qty * 3\", item = { uniform = [1, 100] } }",
        ) else {
            return;
        };
        for (k, gv) in t {
            let Some(slot) = self.vars.slot(k) else {
                continue;
            };
            let scope = Scope {
                set,
                place: "a `let`",
                allowed,
            };
            if let Some(g) = self.generated(&key(path, k), gv, &scope) {
                out.push(Op::Let { slot, value: g });
            }
            set.insert(slot);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn steps(
        &mut self,
        path: &[Seg],
        steps: &[toml::Value],
        txn_name: &str,
        txn: usize,
        set: &mut HashSet<Slot>,
        out: &mut Vec<Op>,
        statements: &mut Vec<Stmt>,
        count: &mut usize,
    ) {
        for (i, step) in steps.iter().enumerate() {
            let spath = index(path, i);
            let Some(s) = self.table(
                &spath,
                step,
                "a step",
                "{ sql = \"SELECT …\" } or { repeat = \"qty\", steps = [...] }",
            ) else {
                continue;
            };
            let when = match s.get("when") {
                Some(v) => match self.string(&key(&spath, "when"), v, "when = \"amount > 10\"") {
                    Some(text) => {
                        let scope = Scope {
                            set,
                            place: "`when`",
                            allowed: TXN_ALLOWED,
                        };
                        self.expr(&key(&spath, "when"), text, &scope)
                    }
                    None => None,
                },
                None => None,
            };
            if let Some(sql) = s.get("sql") {
                self.keys(
                    &spath,
                    s,
                    STMT_KEYS,
                    "a statement step (a block with `repeat`, `let` or `steps` has no `sql`)",
                );
                *count += 1;
                let scope = Scope {
                    set,
                    place: "a statement",
                    allowed: TXN_ALLOWED,
                };
                let bound = self.bound_sql(&key(&spath, "sql"), sql, &scope);
                // `Err`: a bad `expect_rows` (already reported).
                let expect_rows: Result<Option<Expr>, ()> = match s.get("expect_rows") {
                    None => Ok(None),
                    Some(toml::Value::Integer(n)) if *n >= 0 => {
                        Ok(Some(Expr::constant(&n.to_string(), Val::Int(*n))))
                    }
                    Some(toml::Value::String(e)) => self
                        .expr(&key(&spath, "expect_rows"), e, &scope)
                        .map(Some)
                        .ok_or(()),
                    Some(other) => {
                        self.err(&key(&spath, "expect_rows"), false, format!("`expect_rows` must be an integer ≥ 0 or an expression, found {other}"), "e.g. expect_rows = 1");
                        Err(())
                    }
                };
                let on_mismatch = match s.get("on_mismatch").map(|v| (v, v.as_str())) {
                    None => OnMismatch::Fail,
                    Some((_, Some("fail"))) => OnMismatch::Fail,
                    Some((_, Some("rollback"))) => OnMismatch::Rollback,
                    Some((v, _)) => {
                        self.err(&key(&spath, "on_mismatch"), false, format!("`on_mismatch` is \"fail\" or \"rollback\", found {v}"), "on_mismatch = \"rollback\" counts a deliberate rollback (TPC-C's unused item)");
                        OnMismatch::Fail
                    }
                };
                if s.contains_key("on_mismatch") && !s.contains_key("expect_rows") {
                    self.err(
                        &key(&spath, "on_mismatch"),
                        true,
                        "`on_mismatch` without `expect_rows`",
                        "add expect_rows = N, or remove on_mismatch",
                    );
                }
                let name = match s.get("name") {
                    Some(v) => self
                        .string(&key(&spath, "name"), v, "name = \"lookup\"")
                        .unwrap_or_default()
                        .to_string(),
                    None => format!("{txn_name}.{count}"),
                };
                let mut capture = Vec::new();
                if let Some(c) = s.get("capture") {
                    let pairs = capture_pairs(c);
                    if pairs.is_empty() || !capture_shape_ok(c) {
                        self.err(&key(&spath, "capture"), false, "`capture` is a list of column names, or of { var = \"column\" } tables", "e.g. capture = [\"c_name\", { balance = \"c_balance\" }]");
                    }
                    for (var, column) in pairs {
                        if let Some(slot) = self.vars.slot(&var) {
                            capture.push((slot, column));
                        }
                    }
                    if let Some(sql) = &bound {
                        self.capture_needs_rows(&key(&spath, "capture"), sql);
                    }
                }
                if let (Some(sql), Ok(expect_rows)) = (bound, expect_rows) {
                    statements.push(Stmt {
                        name,
                        txn,
                        sql,
                        capture: capture.clone(),
                        expect_rows,
                        on_mismatch,
                    });
                    out.push(Op::Exec {
                        stmt: statements.len() - 1,
                        when,
                    });
                }
                for (slot, _) in capture {
                    set.insert(slot);
                }
                continue;
            }
            if s.contains_key("steps") || s.contains_key("repeat") || s.contains_key("let") {
                self.keys(&spath, s, BLOCK_KEYS, "a block step");
                let scope = Scope {
                    set,
                    place: "`repeat`",
                    allowed: TXN_ALLOWED,
                };
                let count_expr = match s.get("repeat") {
                    None => Some(Expr::constant("1", Val::Int(1))),
                    Some(toml::Value::Integer(n)) if *n >= 0 => {
                        Some(Expr::constant(&n.to_string(), Val::Int(*n)))
                    }
                    Some(toml::Value::String(e)) => self.expr(&key(&spath, "repeat"), e, &scope),
                    Some(other) => {
                        self.err(&key(&spath, "repeat"), false, format!("`repeat` must be a count (an integer ≥ 0 or an expression), found {other}"), "e.g. repeat = \"qty\"");
                        None
                    }
                };
                let index_slot = match s.get("index") {
                    None => None,
                    Some(v) => {
                        if !s.contains_key("repeat") {
                            self.err(
                                &key(&spath, "index"),
                                true,
                                "`index` without `repeat`",
                                "add repeat = N, or remove index",
                            );
                        }
                        self.string(&key(&spath, "index"), v, "index = \"i\"")
                            .and_then(|n| self.vars.slot(n))
                    }
                };
                let mut body = Vec::new();
                if let Some(slot) = index_slot {
                    set.insert(slot);
                }
                if let Some(l) = s.get("let") {
                    self.lets(&key(&spath, "let"), l, set, &mut body, TXN_ALLOWED);
                }
                match s.get("steps") {
                    Some(toml::Value::Array(inner)) if !inner.is_empty() => {
                        self.steps(
                            &key(&spath, "steps"),
                            inner,
                            txn_name,
                            txn,
                            set,
                            &mut body,
                            statements,
                            count,
                        );
                    }
                    Some(_) => self.err(
                        &key(&spath, "steps"),
                        false,
                        "`steps` must be a non-empty list of steps",
                        "e.g. steps = [{ sql = \"…\" }]",
                    ),
                    None if s.contains_key("repeat") => self.err(
                        &spath,
                        false,
                        "a `repeat` needs `steps`",
                        "e.g. { repeat = \"qty\", index = \"i\", steps = [{ sql = \"…\" }] }",
                    ),
                    None => {}
                }
                if let Some(count) = count_expr {
                    if !s.contains_key("repeat") && when.is_none() {
                        // A plain block: its ops inline.
                        out.extend(body);
                    } else {
                        out.push(Op::Repeat {
                            count,
                            index: index_slot,
                            when,
                            body,
                        });
                    }
                }
                continue;
            }
            self.err(
                &spath,
                false,
                "a step needs `sql`, `steps` or `let`",
                "e.g. { sql = \"SELECT …\" }, { let = { x = 1 } } or { repeat = 3, steps = [...] }",
            );
        }
    }

    fn load(&mut self, path: &[Seg], v: &toml::Value, globals: &HashSet<Slot>) -> Vec<LoadTable> {
        let Some(items) = v.as_array() else {
            self.err(path, false, "`load` must be a list of tables ([[workloads.NAME.load]])", "e.g. [[workloads.orders.load]] with table = \"customers\", rows = \"customers\", columns = [...]");
            return Vec::new();
        };
        let names: Vec<Option<String>> = items
            .iter()
            .map(|i| {
                i.get("table")
                    .and_then(toml::Value::as_str)
                    .map(str::to_string)
            })
            .collect();
        let all: Vec<String> = names.iter().flatten().cloned().collect();
        let mut out = Vec::new();
        let row = self.vars.slot("row");
        let child = self.vars.slot("child");
        let parent_row = self.vars.slot("parent_row");
        for (i, item) in items.iter().enumerate() {
            let lpath = index(path, i);
            let Some(t) = self.table(
                &lpath,
                item,
                "a load entry",
                "{ table = \"customers\", rows = \"customers\", columns = [...] }",
            ) else {
                continue;
            };
            self.keys(&lpath, t, LOAD_KEYS, "a load entry");
            let Some(table) = t
                .get("table")
                .and_then(|v| self.string(&key(&lpath, "table"), v, "table = \"customers\""))
                .map(str::to_string)
            else {
                if !t.contains_key("table") {
                    self.err(
                        &lpath,
                        false,
                        "a load entry needs `table`",
                        "add table = \"customers\"",
                    );
                }
                continue;
            };
            if names[..i].iter().flatten().any(|n| *n == table) {
                self.err(
                    &key(&lpath, "table"),
                    false,
                    format!("table `{table}` is loaded twice"),
                    "load each table once",
                );
            }
            let parent = match t.get("parent") {
                None => None,
                Some(p) => match self.string(&key(&lpath, "parent"), p, "parent = \"warehouse\"") {
                    None => None,
                    Some(p) => match names.iter().position(|n| n.as_deref() == Some(p)) {
                        Some(j) if j == i => {
                            self.err(
                                &key(&lpath, "parent"),
                                false,
                                format!("table `{table}` names itself as its parent"),
                                "a parent is another loaded table",
                            );
                            None
                        }
                        Some(j) => Some(j),
                        None => {
                            self.fk_error_parent(&key(&lpath, "parent"), p, &all);
                            None
                        }
                    },
                },
            };
            let opts = Scope {
                set: globals,
                place: "a row count",
                allowed: "options only",
            };
            let rows = match (
                parent.is_some() || t.contains_key("parent"),
                t.get("rows"),
                t.get("per_parent"),
            ) {
                (false, Some(r), None) => self.bound(&key(&lpath, "rows"), r, &opts),
                (true, None, Some(r)) => self.bound(&key(&lpath, "per_parent"), r, &opts),
                (false, _, Some(_)) => {
                    self.err(
                        &key(&lpath, "per_parent"),
                        true,
                        "`per_parent` without `parent`",
                        "add parent = \"TABLE\", or use rows = N",
                    );
                    None
                }
                (true, Some(_), _) => {
                    self.err(
                        &key(&lpath, "rows"),
                        true,
                        "a table with a `parent` gives `per_parent`, not `rows`",
                        "write per_parent = N (rows per parent row)",
                    );
                    None
                }
                (false, None, None) => {
                    self.err(
                        &lpath,
                        false,
                        format!("load of `{table}` needs `rows`"),
                        "e.g. rows = \"customers\" (an expression over options)",
                    );
                    None
                }
                (true, None, None) => {
                    self.err(
                        &lpath,
                        false,
                        format!("load of `{table}` needs `per_parent`"),
                        "e.g. per_parent = 10",
                    );
                    None
                }
            };
            let mut set = globals.clone();
            set.extend(row);
            if parent.is_some() {
                set.extend(child);
                set.extend(parent_row);
            }
            let mut lets = Vec::new();
            if let Some(l) = t.get("let") {
                let mut ops = Vec::new();
                self.lets(&key(&lpath, "let"), l, &mut set, &mut ops, LOAD_ALLOWED);
                lets = ops
                    .into_iter()
                    .filter_map(|op| match op {
                        Op::Let { slot, value } => Some((slot, value)),
                        _ => None,
                    })
                    .collect();
            }
            let mut columns = Vec::new();
            match t.get("columns").and_then(toml::Value::as_array) {
                Some(cols) if !cols.is_empty() => {
                    for (j, col) in cols.iter().enumerate() {
                        let cpath = index(&key(&lpath, "columns"), j);
                        let Some(ct) = self.table(
                            &cpath,
                            col,
                            "a column",
                            "{ name = \"c_id\", gen = \"row\" }",
                        ) else {
                            continue;
                        };
                        self.keys(&cpath, ct, &["name", "gen"], "a column");
                        let cname = ct.get("name").and_then(toml::Value::as_str);
                        let Some(cname) = cname else {
                            self.err(
                                &cpath,
                                false,
                                "a column needs `name`",
                                "e.g. { name = \"c_id\", gen = \"row\" }",
                            );
                            continue;
                        };
                        let Some(g) = ct.get("gen") else {
                            self.err(
                                &cpath,
                                false,
                                format!("column `{cname}` needs `gen`"),
                                "e.g. gen = \"row\" or gen = { uniform = [1, 100] }",
                            );
                            continue;
                        };
                        let scope = Scope {
                            set: &set,
                            place: "a load column",
                            allowed: LOAD_ALLOWED,
                        };
                        if let Some(g) = self.generated(&key(&cpath, "gen"), g, &scope) {
                            columns.push((cname.to_string(), g));
                        }
                    }
                }
                _ => self.err(
                    if t.contains_key("columns") {
                        key(&lpath, "columns")
                    } else {
                        lpath.clone()
                    }
                    .as_slice(),
                    false,
                    format!("load of `{table}` needs `columns`, a non-empty list"),
                    "e.g. columns = [{ name = \"c_id\", gen = \"row\" }]",
                ),
            }
            if let Some(rows) = rows {
                let count = if parent.is_some() {
                    "per_parent"
                } else {
                    "rows"
                };
                self.option_sites.push(OptionSite {
                    workload: self.name.clone(),
                    file: self.file_index,
                    path: key(&lpath, count),
                    check: OptionCheck::Rows { entry: out.len() },
                });
                out.push(LoadTable {
                    table,
                    rows,
                    parent,
                    lets,
                    columns,
                });
            }
        }
        // Parents form no cycle.
        if out.len() == items.len() {
            for start in 0..out.len() {
                let mut seen = vec![start];
                let mut at = out[start].parent;
                while let Some(p) = at {
                    if seen.contains(&p) {
                        if p == start {
                            let chain: Vec<&str> =
                                seen.iter().map(|i| out[*i].table.as_str()).collect();
                            self.err(
                                &key(&index(path, start), "parent"),
                                false,
                                format!(
                                    "the parents of `{}` form a cycle: {} → {}",
                                    out[start].table,
                                    chain.join(" → "),
                                    out[start].table
                                ),
                                "a parent is loaded before its children: break the cycle",
                            );
                        }
                        break;
                    }
                    seen.push(p);
                    at = out[p].parent;
                }
            }
        }
        out
    }

    fn fk_error_parent(&mut self, path: &[Seg], table: &str, tables: &[String]) {
        let help = did_you_mean(table, tables.iter().map(String::as_str)).unwrap_or_else(|| {
            format!(
                "loaded tables: {}",
                if tables.is_empty() {
                    "none".to_string()
                } else {
                    tables.join(", ")
                }
            )
        });
        self.err(
            path,
            false,
            format!("`parent` names `{table}`, which the workload does not load"),
            help,
        );
    }

    /// `options`: the option slots, all a check's `expect` may read.
    fn checks(&mut self, path: &[Seg], v: &toml::Value, options: &HashSet<Slot>) -> Vec<Check> {
        let Some(items) = v.as_array() else {
            self.err(
                path,
                false,
                "`checks` must be a list of tables ([[workloads.NAME.checks]])",
                "e.g. [[workloads.orders.checks]] with name, sql and expect",
            );
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let cpath = index(path, i);
            let Some(t) = self.table(
                &cpath,
                item,
                "a check",
                "{ name = \"…\", sql = \"SELECT count(*) …\", expect = 0 }",
            ) else {
                continue;
            };
            self.keys(&cpath, t, CHECK_KEYS, "a check");
            let name = match t.get("name") {
                Some(v) => self
                    .string(&key(&cpath, "name"), v, "name = \"every order has lines\"")
                    .map(str::to_string),
                None => Some(format!("check {}", i + 1)),
            };
            let Some(sqlv) = t.get("sql") else {
                self.err(
                    &cpath,
                    false,
                    "a check needs `sql`",
                    "e.g. sql = \"SELECT count(*) FROM …\"",
                );
                continue;
            };
            let sql = self.plain_sql(&key(&cpath, "sql"), sqlv);
            let expect = match (t.get("expect"), t.get("expect_rows")) {
                // A string is an expression over the options, as everywhere else (#26).
                (Some(toml::Value::String(text)), None) => {
                    let epath = key(&cpath, "expect");
                    let scope = Scope {
                        set: options,
                        place: "a check's `expect`",
                        allowed: "options only (a check runs after the runs, outside any transaction)",
                    };
                    let before = self.errors.len();
                    let e = self.expr(&epath, text, &scope);
                    let name = &self.name;
                    for err in &mut self.errors[before..] {
                        if err.message.contains("not defined here") {
                            err.help = Some(if is_identifier(text.trim()) {
                                format!(
                                    "`expect` is an expression over the options (\"accounts * 100\"): to expect the text {text}, quote it inside: expect = \"'{text}'\""
                                )
                            } else {
                                format!(
                                    "`expect` is an expression over the options: declare what it reads in [workloads.{name}.options] or fix the spelling (text is quoted inside: expect = \"'open'\")"
                                )
                            });
                        }
                    }
                    e.map(CheckExpect::Value)
                }
                (Some(e), None) => match val_of(e) {
                    Some(v) => Some(CheckExpect::Value(Expr::constant(&e.to_string(), v))),
                    None => {
                        self.err(
                            &key(&cpath, "expect"),
                            false,
                            "`expect` must be a number, a boolean or an expression (a string)",
                            "e.g. expect = 0, or expect = \"accounts * 100\"",
                        );
                        None
                    }
                },
                (None, Some(r)) => self
                    .integer(&key(&cpath, "expect_rows"), r, 0)
                    .map(|n| CheckExpect::Rows(n as u64)),
                (Some(_), Some(_)) => {
                    self.err(
                        &cpath,
                        false,
                        "a check has either `expect` or `expect_rows`, not both",
                        "keep one",
                    );
                    None
                }
                (None, None) => {
                    self.err(&cpath, false, "a check needs `expect` (the first column of the first row) or `expect_rows`", "e.g. expect = 0");
                    None
                }
            };
            if let (Some(name), Some(sql), Some(expect)) = (name, sql, expect) {
                out.push(Check { name, sql, expect });
            }
        }
        out
    }

    /// `capture` reads the first row of a result: a statement known to return none (a write
    /// without `RETURNING`, DDL) on every driver it has text for would capture NULL every
    /// time. Per-driver SQL that returns rows on some drivers only is allowed: the capture is
    /// NULL on the others (a MySQL `INSERT` whose id a later `LAST_INSERT_ID()` step captures,
    /// next to PostgreSQL's `INSERT … RETURNING id`).
    fn capture_needs_rows(&mut self, path: &[Seg], sql: &BoundSql) {
        let texts: Vec<(&str, &str)> = DRIVERS
            .iter()
            .filter_map(|d| {
                let b = sql.for_driver(driver_of(d))?;
                (!b.text.trim().is_empty()).then_some((*d, b.text.as_str()))
            })
            .collect();
        if texts.is_empty() || !texts.iter().all(|(_, t)| returns_no_rows(t)) {
            return;
        }
        let none: Vec<&str> = texts.iter().map(|(d, _)| *d).collect();
        let first = none[0];
        let text = sql
            .for_driver(driver_of(first))
            .map_or("", |b| b.text.as_str());
        let word = first_word(text).to_uppercase();
        self.err(
            path,
            true,
            format!(
                "`capture` reads the first row of the result, but this {word} returns no rows (on {}): the variables would always be NULL",
                none.join(", ")
            ),
            "remove `capture` (`expect_rows` checks how many rows a write changed), add `RETURNING column` (PostgreSQL, SQLite 3.35+, MariaDB 10.5+ for INSERT/DELETE), or SELECT the value in a step of its own",
        );
    }

    /// `declared`: every transaction's name, also of those refused (a headline naming one of
    /// them is not an error of its own).
    fn headline(
        &mut self,
        path: &[Seg],
        v: &toml::Value,
        txns: &[Txn],
        declared: &[&str],
    ) -> Option<Headline> {
        let t = self.table(
            path,
            v,
            "`headline`",
            "headline = { name = \"tpmC\", transaction = \"new_order\", per = \"minute\" }",
        )?;
        self.keys(path, t, HEADLINE_KEYS, "`headline`");
        let name = match t.get("name") {
            Some(n) => self
                .string(&key(path, "name"), n, "name = \"tpmC\"")?
                .to_string(),
            None => {
                self.err(
                    path,
                    false,
                    "`headline` needs `name`",
                    "e.g. name = \"tpmC\"",
                );
                return None;
            }
        };
        let Some(tv) = t.get("transaction") else {
            self.err(
                path,
                false,
                "`headline` needs `transaction`",
                "e.g. transaction = \"new_order\"",
            );
            return None;
        };
        let tn = self.string(&key(path, "transaction"), tv, "transaction = \"new_order\"")?;
        let Some(transaction) = txns.iter().position(|t| t.name == tn) else {
            if declared.contains(&tn) {
                return None;
            }
            let names: Vec<&str> = txns.iter().map(|t| t.name.as_str()).collect();
            let help = did_you_mean(tn, names.iter().copied())
                .unwrap_or_else(|| format!("transactions: {}", names.join(", ")));
            self.err(
                &key(path, "transaction"),
                false,
                format!("`headline` names transaction `{tn}`, which the workload does not have"),
                help,
            );
            return None;
        };
        let per_secs = match t.get("per").map(|p| (p, p.as_str())) {
            None | Some((_, Some("second"))) => 1.0,
            Some((_, Some("minute"))) => 60.0,
            Some((p, _)) => {
                self.err(
                    &key(path, "per"),
                    false,
                    format!("`per` is \"second\" or \"minute\", found {p}"),
                    "e.g. per = \"minute\" (tpmC)",
                );
                return None;
            }
        };
        Some(Headline {
            name,
            transaction,
            per_secs,
        })
    }
}

fn last(path: &[Seg]) -> String {
    match path.last() {
        Some(Seg::Key(k)) => k.clone(),
        Some(Seg::Index(i)) => format!("[{i}]"),
        None => String::new(),
    }
}

/// A TOML value as a variable's value (`None` for tables, arrays and dates).
fn val_of(v: &toml::Value) -> Option<Val> {
    match v {
        toml::Value::Integer(i) => Some(Val::Int(*i)),
        toml::Value::Float(f) => Some(Val::Float(*f)),
        toml::Value::String(s) => Some(Val::Str(s.clone())),
        toml::Value::Boolean(b) => Some(Val::Int(i64::from(*b))),
        _ => None,
    }
}

/// `capture = ["c_name", { balance = "c_balance" }]` or `capture = { balance = "c_balance" }`
/// as (variable, column) pairs; malformed items are left out (see [`capture_shape_ok`]).
fn capture_pairs(v: &toml::Value) -> Vec<(String, String)> {
    fn table(t: &toml::Table, out: &mut Vec<(String, String)>) {
        for (var, col) in t {
            if let Some(c) = col.as_str() {
                out.push((var.clone(), c.to_string()));
            }
        }
    }
    let mut out = Vec::new();
    match v {
        toml::Value::Array(items) => {
            for item in items {
                match item {
                    toml::Value::String(s) => out.push((s.clone(), s.clone())),
                    toml::Value::Table(t) => table(t, &mut out),
                    _ => {}
                }
            }
        }
        toml::Value::Table(t) => table(t, &mut out),
        _ => {}
    }
    out
}

fn capture_shape_ok(v: &toml::Value) -> bool {
    let table_ok = |t: &toml::Table| !t.is_empty() && t.values().all(toml::Value::is_str);
    match v {
        toml::Value::Array(items) => items.iter().all(|i| match i {
            toml::Value::String(_) => true,
            toml::Value::Table(t) => table_ok(t),
            _ => false,
        }),
        toml::Value::Table(t) => table_ok(t),
        _ => false,
    }
}

#[cfg(test)]
pub(crate) mod tests;
