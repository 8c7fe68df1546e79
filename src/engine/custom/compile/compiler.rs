//! The compiler's state for one definition and what every section uses: errors at a key
//! path, typed reads of TOML values, variables (declared in pass 1, checked for being set
//! when read in pass 2) and expressions.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::sites::{IsolationSite, OptionCheck, OptionSite, SqlSite};
use crate::engine::custom::error::ValueError;
use crate::engine::custom::expr::{Expr, is_identifier};
use crate::engine::custom::model::{Slot, VarKind, Vars};
use crate::source::{ConfigError, Seg, SourceMap, did_you_mean, path_text};

/// What may be read at one point of a definition.
pub(super) struct Scope<'a> {
    /// The slots set at this point.
    pub(super) set: &'a HashSet<Slot>,
    /// What the place is, for messages ("a load column").
    pub(super) place: &'a str,
    /// What the place can read, for the help.
    pub(super) allowed: &'a str,
}

pub(super) const TXN_ALLOWED: &str =
    "options, `thread`, params and the variables set earlier in the same transaction";
pub(super) const LOAD_ALLOWED: &str =
    "options, `row`, `child` and `parent_row` (with a parent) and the entry's earlier lets";

/// Compiles one definition: its errors, and the sites checked once the suite is known.
pub(super) struct Compiler<'a> {
    pub(super) file: &'a Path,
    pub(super) map: &'a SourceMap,
    pub(super) file_index: usize,
    pub(super) errors: Vec<ConfigError>,
    pub(super) sites: Vec<SqlSite>,
    pub(super) option_sites: Vec<OptionSite>,
    pub(super) isolation_sites: Vec<IsolationSite>,
    pub(super) vars: Vars,
    /// Where each transaction or load variable is set, for "used before it is set".
    pub(super) declared: HashMap<String, String>,
    /// Slots read since the last reset (to find the params a transaction draws).
    pub(super) used: Vec<Slot>,
    /// The workload's name.
    pub(super) name: String,
    /// The tables the workload loads (for `fk`).
    pub(super) tables: Vec<String>,
}

/// `base.k`.
pub(super) fn key(base: &[Seg], k: &str) -> Vec<Seg> {
    let mut p = base.to_vec();
    p.push(Seg::key(k));
    p
}

/// `base[i]`.
pub(super) fn index(base: &[Seg], i: usize) -> Vec<Seg> {
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

fn last(path: &[Seg]) -> String {
    match path.last() {
        Some(Seg::Key(k)) => k.clone(),
        Some(Seg::Index(i)) => format!("[{i}]"),
        None => String::new(),
    }
}

impl<'a> Compiler<'a> {
    /// A compiler for workload `name`, declared in file `file_index` (`file`, `map`).
    pub(super) fn new(file: &'a Path, map: &'a SourceMap, file_index: usize, name: &str) -> Self {
        Compiler {
            file,
            map,
            file_index,
            errors: Vec::new(),
            sites: Vec::new(),
            option_sites: Vec::new(),
            isolation_sites: Vec::new(),
            vars: Vars::default(),
            declared: HashMap::new(),
            used: Vec::new(),
            name: name.to_string(),
            tables: Vec::new(),
        }
    }
}

impl Compiler<'_> {
    pub(super) fn err(
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
    pub(super) fn keys(&mut self, path: &[Seg], table: &toml::Table, allowed: &[&str], what: &str) {
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

    pub(super) fn table<'v>(
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

    pub(super) fn string<'v>(
        &mut self,
        path: &[Seg],
        v: &'v toml::Value,
        eg: &str,
    ) -> Option<&'v str> {
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

    pub(super) fn boolean(&mut self, path: &[Seg], v: &toml::Value) -> Option<bool> {
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

    pub(super) fn integer(&mut self, path: &[Seg], v: &toml::Value, min: i64) -> Option<i64> {
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
    pub(super) fn declare(&mut self, path: &[Seg], name: &str, kind: VarKind, at: &str) {
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

    /// Compiles an expression and checks that what it reads is set here.
    pub(super) fn expr(&mut self, path: &[Seg], text: &str, scope: &Scope) -> Option<Expr> {
        match Expr::compile(text, &self.vars) {
            Err(e) => {
                let help = if matches!(e, ValueError::Unknown { .. }) {
                    format!(
                        "declare it ([workloads.{}.params], a `let`, a `capture` or an option) or fix the spelling",
                        self.name
                    )
                } else {
                    "expressions are minijinja expressions, e.g. \"warehouses * 10\", \"qty > 5 and mode == 'a'\"".to_string()
                };
                self.err(path, false, e.to_string(), help);
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
                            m.to_string(),
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
    pub(super) fn reads_options(&self, e: &Expr) -> bool {
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
    pub(super) fn range(
        &mut self,
        path: &[Seg],
        generator: &str,
        lo: &Expr,
        hi: &Expr,
        int: bool,
    ) -> bool {
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
    pub(super) fn readable(&mut self, path: &[Seg], slot: Slot, scope: &Scope, what: &str) -> bool {
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
}
