//! sysbench Lua scripts as suite workloads: `workload = { script = "scripts/tpcc.lua" }`
//! wherever a workload name is allowed (`[defaults] workload`, the `[matrix] workload` axis
//! mixing names and scripts, `include` cells).
//!
//! Shape, and why:
//! * A script is loaded once, when the suite is validated ([`Script::load`] runs its top level
//!   in a Lua state of this thread), to learn its `sysbench.cmdline.options` and custom
//!   commands; its spec ([`crate::engine::lua::run::spec_for`]) is declared in the suite's
//!   catalog like a `[workloads.NAME]` definition, so its options check, expand into matrix axes and
//!   run like a built-in workload's. A misspelt option is then an ordinary "unknown option"
//!   error with its line and a suggestion, before anything runs.
//! * The table is replaced by the script's name (the path as typed, the results' `workload`
//!   column) before the rest of the suite is validated, and written back, completed, into the
//!   stored suite ([`Scripts::restore`]): `resolved` (the absolute path), `sha256` (of the
//!   file) and `modules` (the path and hash of each module it `require`s from the working
//!   directory, as a script in several files such as sysbench-tpcc does). A run directory's
//!   `suite.toml` thus finds the script wherever it is resumed from, and `--resume` refuses a
//!   script or module that changed since the run started: its rows would mix two workloads
//!   under one name.
//! * `dataset` (which options shape the data; default: all of the script's options),
//!   `before_runs` and `after_runs` (custom commands, as plan steps after the prepare and
//!   before the cleanup) are facts of the workload, kept here for the planner.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;

use crate::engine::Catalog;
use crate::engine::lua::Script;
use crate::engine::lua::bundle::{BundleFile, ScriptBundle, sha256_hex};
use crate::engine::lua::run;
use crate::engine::spec::{DataSpec, WorkloadSpec};
use crate::source::{ConfigError, ConfigErrors, Origin, Seg, SourceMap, did_you_mean, path_text};

/// The keys of a script table.
pub const SCRIPT_KEYS: &[&str] = &[
    "script",
    "dataset",
    "before_runs",
    "after_runs",
    "sha256",
    "resolved",
    "modules",
];

/// Commands that are plan steps of every workload already, never `before_runs`/`after_runs`.
const BUILT_IN_COMMANDS: &[&str] = &["prepare", "run", "cleanup", "help"];

/// One script a suite runs.
#[derive(Clone, Debug)]
pub struct ScriptUse {
    /// The path as typed: the workload's name.
    pub typed: String,
    /// The file, absolute.
    pub resolved: PathBuf,
    /// SHA-256 of the file as loaded, lowercase hex.
    pub sha256: String,
    /// The modules the script `require`s from the working directory, followed into theirs:
    /// (absolute path, SHA-256), sorted by path.
    pub modules: Vec<(PathBuf, String)>,
    /// The options the script declares, as suite keys (`_` for `-`), sorted by name.
    pub options: Vec<&'static str>,
    /// The options that shape the data (suite names, `_` for `-`).
    pub dataset: Vec<String>,
    /// Custom commands run after the dataset's prepare, before its runs.
    pub before_runs: Vec<String>,
    /// Custom commands run after the dataset's runs, before its cleanup.
    pub after_runs: Vec<String>,
    pub spec: &'static WorkloadSpec,
}

impl ScriptUse {
    /// The table stored in the run directory's `suite.toml`.
    fn stored(&self) -> toml::Value {
        let list = |items: &[String]| {
            toml::Value::Array(items.iter().cloned().map(toml::Value::String).collect())
        };
        let mut t = toml::Table::new();
        t.insert("script".into(), toml::Value::String(self.typed.clone()));
        t.insert("dataset".into(), list(&self.dataset));
        if !self.before_runs.is_empty() {
            t.insert("before_runs".into(), list(&self.before_runs));
        }
        if !self.after_runs.is_empty() {
            t.insert("after_runs".into(), list(&self.after_runs));
        }
        t.insert("sha256".into(), toml::Value::String(self.sha256.clone()));
        if !self.modules.is_empty() {
            let modules: toml::Table = self
                .modules
                .iter()
                .map(|(p, h)| (p.display().to_string(), toml::Value::String(h.clone())))
                .collect();
            t.insert("modules".into(), toml::Value::Table(modules));
        }
        t.insert(
            "resolved".into(),
            toml::Value::String(self.resolved.display().to_string()),
        );
        toml::Value::Table(t)
    }
}

impl ScriptUse {
    /// The script as an agent of a multi-client run receives it (#27): the source this process
    /// loaded and the modules it `require`s from the working directory, each read now and
    /// refused if it changed since the suite was loaded (the agents would otherwise run other
    /// code than the prepare ran, under the same name).
    pub fn bundle(&self) -> Result<ScriptBundle, String> {
        let script = run::script(self.spec)
            .ok_or_else(|| format!("internal error: `{}` is not a Lua script", self.typed))?;
        let changed = |what: String, now: &str, then: &str| {
            format!(
                "{what} of script `{}` changed since the suite was loaded: its sha256 is {now}, it was {then}; restore it, or start the run again",
                self.typed
            )
        };
        let source = script.source.as_bytes();
        let sha = sha256_hex(source);
        if sha != self.sha256 {
            return Err(changed(
                format!("the file {}", self.resolved.display()),
                &sha,
                &self.sha256,
            ));
        }
        let name = self.resolved.file_name().map_or_else(
            || "script.lua".to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let mut modules = Vec::new();
        for m in module_files(&script.source) {
            let file = BundleFile::new(m.relative, &m.bytes);
            let recorded = self.modules.iter().find(|(p, _)| *p == m.path);
            match recorded {
                Some((_, then)) if *then == file.sha256 => modules.push(file),
                Some((_, then)) => {
                    return Err(changed(
                        format!("module {}", m.path.display()),
                        &file.sha256,
                        then,
                    ));
                }
                None => {
                    return Err(format!(
                        "module {} of script `{}` appeared since the suite was loaded (in the working directory {}); remove it, or start the run again",
                        m.path.display(),
                        self.typed,
                        std::env::current_dir().unwrap_or_default().display()
                    ));
                }
            }
        }
        Ok(ScriptBundle {
            typed: self.typed.clone(),
            script: BundleFile::new(name, source),
            modules,
        })
    }
}

/// The scripts of a suite, by name.
#[derive(Clone, Debug, Default)]
pub struct Scripts(pub IndexMap<String, ScriptUse>);

impl Scripts {
    /// The script workload called `name`, if it is one.
    pub fn get(&self, name: &str) -> Option<&ScriptUse> {
        self.0.get(name)
    }

    /// Writes each script's stored table back where its name stands (the inverse of the
    /// replacement [`load`] made), for the stored suite.
    pub fn restore(&self, slots: Slots<'_>) {
        if self.0.is_empty() {
            return;
        }
        slots.each(&mut |_, v| {
            if let toml::Value::String(name) = v
                && let Some(u) = self.0.get(name.as_str())
            {
                *v = u.stored();
            }
        });
    }
}

/// Where workload values stand in a suite: `[defaults] workload`, `[matrix] workload` (one value
/// or a list) and the `workload` of each `[matrix] include` cell.
pub struct Slots<'a> {
    pub defaults: Option<&'a mut toml::Value>,
    pub matrix: Option<&'a mut toml::Value>,
    pub include: Option<&'a mut toml::Value>,
}

impl Slots<'_> {
    fn each(self, f: &mut dyn FnMut(Vec<Seg>, &mut toml::Value)) {
        if let Some(v) = self.defaults {
            f(vec![Seg::key("defaults"), Seg::key("workload")], v);
        }
        match self.matrix {
            Some(toml::Value::Array(items)) => {
                for (i, v) in items.iter_mut().enumerate() {
                    f(
                        vec![Seg::key("matrix"), Seg::key("workload"), Seg::Index(i)],
                        v,
                    );
                }
            }
            Some(v) => f(vec![Seg::key("matrix"), Seg::key("workload")], v),
            None => {}
        }
        if let Some(toml::Value::Array(cells)) = self.include {
            for (i, cell) in cells.iter_mut().enumerate() {
                if let Some(v) = cell.get_mut("workload") {
                    f(
                        vec![
                            Seg::key("matrix"),
                            Seg::key("include"),
                            Seg::Index(i),
                            Seg::key("workload"),
                        ],
                        v,
                    );
                }
            }
        }
    }
}

/// Loads every script the `slots` name, declares each one's spec in `catalog` and replaces
/// each table by the script's name. `file` is the suite file (relative paths are relative to
/// its directory); `origin` places a key path in it for errors.
pub fn load(
    file: &Path,
    slots: Slots<'_>,
    origin: &dyn Fn(&[Seg], bool) -> Origin,
    catalog: &mut Catalog,
) -> Result<Scripts, Vec<ConfigError>> {
    let mut scripts = Scripts::default();
    let mut errors = Vec::new();
    // The table each script was first given with, to refuse a second, different one.
    let mut first: HashMap<String, (toml::Table, Vec<Seg>)> = HashMap::new();
    slots.each(&mut |path, v| {
        let toml::Value::Table(t) = v else {
            return;
        };
        let err = |at: &[Seg], key: bool, message: String, help: String| {
            ConfigError::new(file, origin(at, key), path_text(at), message).with_help(help)
        };
        let Some(typed) = t.get("script").and_then(toml::Value::as_str).map(str::to_string)
        else {
            errors.push(err(
                &path,
                false,
                "a workload table needs `script`, the path of a sysbench Lua script".into(),
                "write workload = { script = \"scripts/tpcc.lua\" } (relative to the suite file), or a workload name such as \"oltp_read_write\"".into(),
            ));
            return;
        };
        // The same table again: the script is loaded already.
        if let Some((seen, at)) = first.get(&typed) {
            if seen != t {
                errors.push(err(
                    &path,
                    false,
                    format!(
                        "script `{typed}` is given again with other keys (first at {})",
                        path_text(at)
                    ),
                    "give a script the same `dataset`, `before_runs` and `after_runs` everywhere it appears (copy the first table)".into(),
                ));
            }
            *v = toml::Value::String(typed);
            return;
        }
        first.insert(typed.clone(), (t.clone(), path.clone()));
        match one(file, &path, t, &typed, origin, catalog) {
            Ok(u) => {
                catalog.declare(u.spec);
                scripts.0.insert(typed.clone(), u);
                *v = toml::Value::String(typed);
            }
            Err(mut e) => errors.append(&mut e),
        }
    });
    if errors.is_empty() {
        Ok(scripts)
    } else {
        Err(errors)
    }
}

/// The scripts of the suite file `file` alone (`sbsuite workloads --suite`): read, loaded and
/// declared in `catalog` without validating the rest of the suite.
pub fn load_file(file: &Path, catalog: &mut Catalog) -> Result<Scripts, ConfigErrors> {
    let (text, parsed) = crate::source::read_file(file).map_err(|e| {
        ConfigError::new(
            file,
            Origin::Unknown,
            "",
            format!("cannot read suite file: {e}"),
        )
    })?;
    let mut table = parsed.map_err(|e| e.into_error(file))?;
    let map = SourceMap::new(&text);
    load(
        file,
        slots_of_table(&mut table),
        &|p, k| map.origin(p, k),
        catalog,
    )
    .map_err(ConfigErrors)
}

/// The [`Slots`] of a suite file's table.
fn slots_of_table(table: &mut toml::Table) -> Slots<'_> {
    let mut defaults = None;
    let mut matrix = None;
    let mut include = None;
    for (k, v) in table.iter_mut() {
        match (k.as_str(), v) {
            ("defaults", toml::Value::Table(d)) => defaults = d.get_mut("workload"),
            ("matrix", toml::Value::Table(m)) => {
                for (mk, mv) in m.iter_mut() {
                    match mk.as_str() {
                        "workload" => matrix = Some(mv),
                        "include" => include = Some(mv),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    Slots {
        defaults,
        matrix,
        include,
    }
}

/// A list of names: a string array (a single string is taken as a list of one).
fn names(v: &toml::Value) -> Option<Vec<String>> {
    match v {
        toml::Value::String(s) => Some(vec![s.clone()]),
        toml::Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string))
            .collect(),
        _ => None,
    }
}

/// Loads one script table at `path` (`catalog`: the workloads its name must not be).
fn one(
    file: &Path,
    path: &[Seg],
    t: &toml::Table,
    typed: &str,
    origin: &dyn Fn(&[Seg], bool) -> Origin,
    catalog: &Catalog,
) -> Result<ScriptUse, Vec<ConfigError>> {
    let at = |key: &str| {
        let mut p = path.to_vec();
        p.push(Seg::key(key));
        p
    };
    let err = |key: &str, is_key: bool, message: String, help: String| {
        let p = at(key);
        ConfigError::new(file, origin(&p, is_key), path_text(&p), message).with_help(help)
    };
    let mut errors = Vec::new();
    for k in t.keys() {
        if !SCRIPT_KEYS.contains(&k.as_str()) {
            let help = did_you_mean(k, SCRIPT_KEYS.iter().copied()).unwrap_or_else(|| {
                format!("a script workload has the keys {}", SCRIPT_KEYS.join(", "))
            });
            errors.push(err(
                k,
                true,
                format!("unknown key `{k}` in a script workload"),
                help,
            ));
        }
    }
    if catalog.workload(typed).is_some() {
        errors.push(err(
            "script",
            false,
            format!("script `{typed}` has the name of a workload"),
            format!("write the path so it cannot be read as a name, e.g. \"./{typed}\""),
        ));
    }
    let string_of = |key: &str, errors: &mut Vec<ConfigError>| match t.get(key) {
        None => None,
        Some(toml::Value::String(s)) => Some(s.clone()),
        Some(_) => {
            errors.push(err(
                key,
                false,
                format!("`{key}` must be a string"),
                "it is written into the run's suite.toml; remove it to have it computed".into(),
            ));
            None
        }
    };
    let stored_path = string_of("resolved", &mut errors);
    let pinned = string_of("sha256", &mut errors);
    let list_of = |key: &str, errors: &mut Vec<ConfigError>| match t.get(key) {
        None => None,
        Some(v) => match names(v) {
            Some(n) => Some(n),
            None => {
                errors.push(err(
                    key,
                    false,
                    format!("`{key}` must be a list of names"),
                    format!("e.g. {key} = [\"check\"]"),
                ));
                None
            }
        },
    };
    let dataset = list_of("dataset", &mut errors);
    let before_runs = list_of("before_runs", &mut errors).unwrap_or_default();
    let after_runs = list_of("after_runs", &mut errors).unwrap_or_default();

    // `resolved` (a stored suite) wins: the run directory's suite.toml is not where the
    // suite file was.
    let resolved = match &stored_path {
        Some(p) => PathBuf::from(p),
        None => file.parent().unwrap_or(Path::new("")).join(typed),
    };
    let bytes = match std::fs::read(&resolved) {
        Ok(b) => b,
        Err(e) => {
            let help = if stored_path.is_some() {
                format!(
                    "the run was started with the script at {}; put it back there to resume, or start a new run from the suite file",
                    resolved.display()
                )
            } else {
                let dir = file.parent().filter(|d| !d.as_os_str().is_empty());
                format!(
                    "the path is relative to the suite file's directory ({}); fix `script` or put the script there",
                    dir.map_or_else(|| ".".to_string(), |d| d.display().to_string())
                )
            };
            errors.push(err(
                "script",
                false,
                format!("cannot read script `{typed}` ({}): {e}", resolved.display()),
                help,
            ));
            return Err(errors);
        }
    };
    let resolved = std::fs::canonicalize(&resolved).unwrap_or(resolved);
    let sha256 = sha256_hex(&bytes);
    if let Some(want) = &pinned
        && !want.eq_ignore_ascii_case(&sha256)
    {
        errors.push(err(
            "sha256",
            false,
            format!(
                "script `{typed}` ({}) changed: its sha256 is {sha256}, the suite records {want}",
                resolved.display()
            ),
            "a run is resumed only with the script it started with: restore that version, or start a new run from the suite file (its rows would otherwise mix two scripts under one name)".into(),
        ));
        return Err(errors);
    }
    // The modules recorded with the script: each still there and unchanged.
    match t.get("modules") {
        None => {}
        Some(toml::Value::Table(recorded)) => {
            for (path, want) in recorded {
                let Some(want) = want.as_str() else {
                    errors.push(err(
                        "modules",
                        false,
                        format!("`modules` maps each module's path to its sha256; `{path}` has no string"),
                        "it is written into the run's suite.toml; remove it to have it computed".into(),
                    ));
                    continue;
                };
                let found = std::fs::read(path).map(|b| sha256_hex(&b));
                if found
                    .as_deref()
                    .ok()
                    .is_some_and(|h| h.eq_ignore_ascii_case(want))
                {
                    continue;
                }
                let what = match found {
                    Ok(h) => format!("changed: its sha256 is {h}, the suite records {want}"),
                    Err(e) => format!("cannot be read: {e}"),
                };
                errors.push(err(
                    "modules",
                    false,
                    format!("module {path} of script `{typed}` {what}"),
                    "a run is resumed only with the script and modules it started with: restore that version, or start a new run from the suite file".into(),
                ));
            }
            if !errors.is_empty() {
                return Err(errors);
            }
        }
        Some(_) => errors.push(err(
            "modules",
            false,
            "`modules` must be a table of module path = sha256".into(),
            "it is written into the run's suite.toml; remove it to have it computed".into(),
        )),
    }
    // Loaded as for `run`: scripts check at load that a command is given (oltp_common,
    // sysbench-tpcc's tpcc_common), and a suite runs them.
    let script = match Script::load(&resolved, typed, Some("run")) {
        Ok(s) => s,
        Err(e) => {
            errors.push(err(
                "script",
                false,
                format!("script `{typed}` does not load: {}", e.message),
                load_help(&e.message, &resolved),
            ));
            return Err(errors);
        }
    };
    let spec = run::spec_for(script.clone());
    // The options the script declares (`sysbench.cmdline.options`), by their suite names
    // (`-` read as `_`, as sysbench does), as the spec spells them; one named like a general
    // option (`threads`) is the general one, and shapes no data.
    let spec_own = |name: &str| {
        spec.options
            .iter()
            .flat_map(|g| g.iter())
            .find(|o| o.name == name)
            .map(|o| o.name)
    };
    let own: Vec<&'static str> = script
        .options
        .iter()
        .filter_map(|o| spec_own(&o.name.replace('-', "_")))
        .collect();
    let dataset = match dataset {
        None => own.iter().map(|s| s.to_string()).collect(),
        Some(list) => {
            let mut out = Vec::new();
            for (i, name) in list.iter().enumerate() {
                let n = name.replace('-', "_");
                if own.contains(&n.as_str()) {
                    out.push(n);
                    continue;
                }
                let mut p = at("dataset");
                p.push(Seg::Index(i));
                let help = did_you_mean(&n, own.iter().copied()).unwrap_or_else(|| {
                    format!("its options: {}", list_or_none(own.iter().copied()))
                });
                errors.push(
                    ConfigError::new(
                        file,
                        origin(&p, false),
                        path_text(&p),
                        format!(
                            "`dataset` names `{name}`, which script `{typed}` does not declare"
                        ),
                    )
                    .with_help(help),
                );
            }
            out
        }
    };
    let commands: Vec<&str> = script.commands.iter().map(|c| c.name.as_str()).collect();
    for key in ["before_runs", "after_runs"] {
        let list = if key == "before_runs" {
            &before_runs
        } else {
            &after_runs
        };
        for (i, name) in list.iter().enumerate() {
            let mut p = at(key);
            p.push(Seg::Index(i));
            let bad = |message: String, help: String| {
                ConfigError::new(file, origin(&p, false), path_text(&p), message).with_help(help)
            };
            if BUILT_IN_COMMANDS.contains(&name.as_str()) {
                errors.push(bad(
                    format!("`{name}` is a step of every plan already"),
                    format!("{key} lists the script's own commands (sysbench.cmdline.commands), e.g. check or prewarm"),
                ));
            } else if !commands.contains(&name.as_str()) {
                let help = did_you_mean(name, commands.iter().copied()).unwrap_or_else(|| {
                    format!(
                        "its commands (sysbench.cmdline.commands): {}",
                        list_or_none(commands.iter().copied())
                    )
                });
                errors.push(bad(
                    format!("script `{typed}` has no command `{name}`"),
                    help,
                ));
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let keys: Vec<&'static str> = own
        .iter()
        .copied()
        .filter(|o| dataset.iter().any(|d| d == o))
        .collect();
    // The script's spec with the suite's choice of dataset keys (everything else, the script
    // behind it included, is the spec's own).
    let spec: &'static WorkloadSpec = Box::leak(Box::new(WorkloadSpec {
        data: DataSpec {
            family: spec.data.family,
            keys: Box::leak(keys.into_boxed_slice()),
            fresh_per_run: spec.data.fresh_per_run,
        },
        ..*spec
    }));
    Ok(ScriptUse {
        typed: typed.to_string(),
        modules: modules(&script.source),
        resolved,
        sha256,
        options: own,
        dataset,
        before_runs,
        after_runs,
        spec,
    })
}

/// The fix for a script that does not load. A module it `require`s is looked up as sysbench
/// does (the working directory, `LUA_PATH`), not beside the script: say so.
fn load_help(message: &str, resolved: &Path) -> String {
    match resolved.parent() {
        Some(dir) if message.contains("module '") && message.contains("not found") => format!(
            "modules are looked for in the working directory and LUA_PATH, as sysbench does: run sbsuite from {}, or set LUA_PATH=\"{}/?.lua;;\"",
            dir.display(),
            dir.display()
        ),
        _ => format!(
            "fix the script; `sbsuite sysbench {} help` shows what it declares",
            resolved.display()
        ),
    }
}

/// The modules a script's source `require`s with a literal name, as sysbench finds them first
/// (`./NAME.lua`, `./NAME/init.lua` in the working directory), and theirs in turn: (absolute
/// path, SHA-256), sorted by path. Modules found elsewhere on `package.path` (sysbench's own
/// `oltp_common` in /usr/share/sysbench) are not followed: they come with sysbench.
fn modules(source: &str) -> Vec<(PathBuf, String)> {
    let mut found: Vec<(PathBuf, String)> = module_files(source)
        .into_iter()
        .map(|m| (m.path, sha256_hex(&m.bytes)))
        .collect();
    found.sort();
    found.dedup();
    found
}

/// A module file [`module_files`] found.
struct ModuleFile {
    /// The path `require` found it at, relative to the working directory (`lib/x.lua`).
    relative: String,
    /// The same, absolute.
    path: PathBuf,
    bytes: Vec<u8>,
}

/// The module files behind [`modules`], with their relative paths and contents, in the order
/// found.
fn module_files(source: &str) -> Vec<ModuleFile> {
    let mut found: Vec<ModuleFile> = Vec::new();
    let mut todo: Vec<String> = required_names(source);
    let mut seen: Vec<String> = Vec::new();
    while let Some(name) = todo.pop() {
        if seen.contains(&name) {
            continue;
        }
        seen.push(name.clone());
        let rel = name.replace('.', "/");
        let candidates = [format!("{rel}.lua"), format!("{rel}/init.lua")];
        let Some((relative, bytes)) = candidates
            .iter()
            .find_map(|c| std::fs::read(c).ok().map(|b| (c.clone(), b)))
        else {
            continue;
        };
        let path = PathBuf::from(&relative);
        let path = std::fs::canonicalize(&path).unwrap_or(path);
        todo.extend(required_names(&String::from_utf8_lossy(&bytes)));
        if found.iter().all(|m| m.relative != relative) {
            found.push(ModuleFile {
                relative,
                path,
                bytes,
            });
        }
    }
    found
}

/// The literal module names of `require "x"`, `require 'x'`, `require("x")` in a Lua source.
fn required_names(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = source;
    while let Some(at) = rest.find("require") {
        let before = rest[..at].chars().next_back();
        let after = &rest[at + "require".len()..];
        rest = after;
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == ':') {
            continue;
        }
        let arg = after.trim_start();
        let arg = arg.strip_prefix('(').map_or(arg, str::trim_start);
        let Some(quote) = arg.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            continue;
        };
        let Some(end) = arg[1..].find(quote) else {
            continue;
        };
        let name = &arg[1..1 + end];
        if !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_alphanumeric() || "_.-".contains(c))
        {
            out.push(name.to_string());
        }
    }
    out
}

fn list_or_none<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let v: Vec<&str> = items.collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

#[cfg(test)]
pub(crate) mod tests;
