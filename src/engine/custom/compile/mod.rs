//! Workloads declared in TOML (`[workloads.NAME]` in the suite file, and in the files that
//! `[suite] workloads = [...]` lists): read, checked and compiled into
//! [`super::model::Def`]s before anything else of the suite is validated. The compiler lives
//! next to the engine that runs what it produces; the suite calls [`load`] and keeps the
//! [`Loaded`] result for the checks that need the rest of the suite.
//!
//! Shape, and why:
//! * The definitions are read from the raw TOML text (toml with `preserve_order`), never from
//!   the figment-merged tree: figment sorts keys, and a definition's order is its meaning (the
//!   order of `let`s, of steps, of transactions in the mix). Every error points at the file,
//!   line and key through a [`SourceMap`], also in a `workloads` file.
//! * Compilation is two passes over a definition (`workload.rs`): the first collects every
//!   variable name, so that the second can tell a name that does not exist from one that
//!   exists but is not set yet at that point of the transaction. One file per section of a
//!   definition does the second pass: `options.rs`, `generators.rs` (`[params]`, `let`s,
//!   columns), `transactions.rs` (steps, statements, captures), `sql.rs` (per-driver text
//!   and placeholders), `tables.rs` (`load`), `checks.rs`; `compiler.rs` holds the state they
//!   share.
//! * [`Loaded::catalog`] makes each definition known to the suite's [`Catalog`], so `workload = "orders"`
//!   and its options validate, expand and run like a built-in workload. What depends on the
//!   merged suite (the target's driver, each run's options) is checked later, at the sites
//!   the compiler recorded (`sites.rs`: [`Loaded::check_drivers`], [`Loaded::check_run`]).
//! * The stored suite (`suite.toml` of a run directory) holds the definitions inline
//!   ([`Loaded::inline`]) instead of the `workloads` paths, so a run directory is resumed and
//!   re-planned without the files it was started from.

mod checks;
mod compiler;
mod distributions;
mod flow;
mod generators;
mod options;
mod sites;
mod sql;
mod tables;
mod transactions;
mod txn_rules;
mod workload;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;

use self::compiler::Compiler;
use self::options::option_kinds_agree;
use self::sites::{IsolationSite, OptionSite, SqlSite};
pub use self::sql::placeholders;
use super::model::Def;
use super::spec_for;
use crate::engine::Catalog;
use crate::engine::spec::WorkloadSpec;
use crate::source::{ConfigError, ConfigErrors, Origin, Seg, SourceMap, path_text, read_file};

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
    "init",
    "load",
    "params",
    "transactions",
    "checks",
];

/// The keys of a per-driver SQL table: each driver's name (`[target] driver`).
const DRIVERS: &[&str] = &["mysql", "pgsql", "sqlite"];

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
    isolation_sites: Vec<IsolationSite>,
    files: Vec<File>,
}

/// Reads and compiles the workloads of the suite file `file` (its text and parsed `table`)
/// and of the files its `[suite] workloads` lists ([`Loaded::catalog`] makes them known).
pub fn load(file: &Path, text: &str, table: &toml::Table) -> Result<Loaded, ConfigErrors> {
    let mut loaded = Loaded::default();
    loaded.files.push(File {
        path: file.to_path_buf(),
        map: SourceMap::new(text),
    });
    let mut errors: Vec<ConfigError> = Vec::new();
    let sources = loaded.sources(table, &mut errors);
    loaded.compile(&sources, &mut errors);
    option_kinds_agree(&loaded, &mut errors);
    if errors.is_empty() {
        Ok(loaded)
    } else {
        Err(ConfigErrors(errors))
    }
}

/// The definitions of the suite file `file` alone (`sbsuite workloads --suite`): read and
/// compiled, without validating the rest of the suite.
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
    load(file, &text, &table)
}

impl Loaded {
    /// The spec of every definition, in declaration order (each call leaks new ones: call it
    /// once per suite).
    pub fn specs(&self) -> Vec<&'static WorkloadSpec> {
        self.defs.iter().map(|d| spec_for(d.clone())).collect()
    }

    /// A catalog of the built-in workloads and these definitions ([`Loaded::specs`]).
    pub fn catalog(&self) -> Catalog {
        Catalog::with(self.specs())
    }

    /// The tables of definitions, in order, each with the index of its file: the suite file's
    /// own (`table`, the suite's), then each listed file's.
    fn sources(
        &mut self,
        table: &toml::Table,
        errors: &mut Vec<ConfigError>,
    ) -> Vec<(usize, toml::Table)> {
        let mut sources = Vec::new();
        match table.get("workloads") {
            None => {}
            Some(toml::Value::Table(t)) => sources.push((0, t.clone())),
            Some(_) => errors.push(
                self.suite_error(
                    &[Seg::key("workloads")],
                    "`workloads` must be a table of `[workloads.NAME]` definitions".into(),
                    "write [workloads.orders] with its keys; to pull in files, use `[suite] workloads = [\"workloads/orders.toml\"]`",
                ),
            ),
        }
        if let Some(list) = table.get("suite").and_then(|s| s.get("workloads")) {
            sources.extend(self.listed_files(list, errors));
        }
        sources
    }

    /// `[suite] workloads` (`list`): each file read and its definitions returned.
    fn listed_files(
        &mut self,
        list: &toml::Value,
        errors: &mut Vec<ConfigError>,
    ) -> Vec<(usize, toml::Table)> {
        let Some(items) = list.as_array() else {
            errors.push(self.suite_error(
                &[Seg::key("suite"), Seg::key("workloads")],
                "`[suite] workloads` must be a list of file paths".into(),
                "e.g. workloads = [\"workloads/tpcc.toml\"] (relative to the suite file)",
            ));
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let ipath = [Seg::key("suite"), Seg::key("workloads"), Seg::Index(i)];
            let Some(rel) = item.as_str() else {
                errors.push(self.suite_error(
                    &ipath,
                    "each `workloads` entry must be a file path (a string)".into(),
                    "e.g. workloads = [\"workloads/tpcc.toml\"]",
                ));
                continue;
            };
            let path = self.files[0]
                .path
                .parent()
                .unwrap_or(Path::new(""))
                .join(rel);
            match read_file(&path) {
                Err(e) => errors.push(self.suite_error(
                    &ipath,
                    format!("cannot read workloads file `{}`: {e}", path.display()),
                    "the path is relative to the suite file; check it (shipped definitions are in suites/workloads/)",
                )),
                Ok((text, parsed)) => {
                    let index = self.files.len();
                    self.files.push(File {
                        path: path.clone(),
                        map: SourceMap::new(&text),
                    });
                    match parsed {
                        Err(e) => errors.push(e.into_error(&path)),
                        Ok(t) => out.extend(self.definitions_of_file(index, &t, errors)),
                    }
                }
            }
        }
        out
    }

    /// The `[workloads.*]` tables of workloads file `index` (its table `t`), which holds
    /// nothing else.
    fn definitions_of_file(
        &self,
        index: usize,
        t: &toml::Table,
        errors: &mut Vec<ConfigError>,
    ) -> Option<(usize, toml::Table)> {
        let File { path, map } = &self.files[index];
        for k in t.keys().filter(|k| *k != "workloads") {
            errors.push(
                ConfigError::new(
                    path,
                    map.origin(&[Seg::key(k)], true),
                    k.as_str(),
                    format!("`{k}` in a workloads file"),
                )
                .with_help("a workloads file holds only [workloads.NAME] tables; put the rest in the suite file"),
            );
        }
        match t.get("workloads") {
            Some(toml::Value::Table(w)) => Some((index, w.clone())),
            Some(_) => {
                errors.push(
                    ConfigError::new(
                        path,
                        map.origin(&[Seg::key("workloads")], false),
                        "workloads",
                        "`workloads` must be a table of `[workloads.NAME]` definitions",
                    )
                    .with_help("write [workloads.orders] with its keys"),
                );
                None
            }
            None => None,
        }
    }

    /// An error at `path` of the suite file.
    fn suite_error(&self, path: &[Seg], message: String, help: &str) -> ConfigError {
        let f = &self.files[0];
        ConfigError::new(&f.path, f.map.origin(path, false), path_text(path), message)
            .with_help(help)
    }

    /// Compiles every definition of `sources`; a name declared twice is refused.
    fn compile(&mut self, sources: &[(usize, toml::Table)], errors: &mut Vec<ConfigError>) {
        let mut declared_in: HashMap<&str, usize> = HashMap::new();
        for (index, defs) in sources {
            for (name, value) in defs {
                let f = &self.files[*index];
                let base = vec![Seg::key("workloads"), Seg::key(name)];
                if let Some(first) = declared_in.get(name.as_str()) {
                    errors.push(
                        ConfigError::new(
                            &f.path,
                            f.map.origin(&base, true),
                            path_text(&base),
                            format!(
                                "workload `{name}` is declared twice (first in {})",
                                self.files[*first].path.display()
                            ),
                        )
                        .with_help("rename one of them"),
                    );
                    continue;
                }
                declared_in.insert(name, *index);
                let mut c = Compiler::new(&f.path, &f.map, *index, name);
                let def = c.workload(&base, value);
                errors.append(&mut c.errors);
                if let Some(def) = def {
                    self.sites.append(&mut c.sites);
                    self.option_sites.append(&mut c.option_sites);
                    self.isolation_sites.append(&mut c.isolation_sites);
                    self.inline.insert(name.clone(), value.clone());
                    self.defs.push(def);
                }
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
