//! `[[workloads.NAME.load]]`: the tables a workload loads, each with its row count (over
//! options) or a parent table and rows per parent row, its `let`s and its generated columns.
//! The parents must be loaded tables and form no cycle; a row count is checked again with
//! each run's options by the plan ([`super::sites::OptionCheck::Rows`]).

use std::collections::HashSet;

use super::compiler::{Compiler, LOAD_ALLOWED, Scope, index, key};
use super::sites::{OptionCheck, OptionSite};
use crate::engine::custom::expr::Expr;
use crate::engine::custom::model::{GenSpec, LoadTable, Op, Slot};
use crate::source::{Seg, did_you_mean};

const LOAD_KEYS: &[&str] = &["table", "rows", "parent", "per_parent", "let", "columns"];
/// The variables a load provides.
pub(super) const LOAD_VARS: &[&str] = &["row", "child", "parent_row"];

impl Compiler<'_> {
    /// The `load` list; `globals` are the slots every entry may read (options, `thread`).
    pub(super) fn load_tables(
        &mut self,
        path: &[Seg],
        v: &toml::Value,
        globals: &HashSet<Slot>,
    ) -> Vec<LoadTable> {
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
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            if let Some(entry) =
                self.load_entry(&index(path, i), item, i, &names, globals, out.len())
            {
                out.push(entry);
            }
        }
        if out.len() == items.len() {
            self.parents_form_no_cycle(path, &out);
        }
        out
    }

    /// Load entry `i` (its table's name among `names`), compiled as the `entry`-th table.
    fn load_entry(
        &mut self,
        lpath: &[Seg],
        item: &toml::Value,
        i: usize,
        names: &[Option<String>],
        globals: &HashSet<Slot>,
        entry: usize,
    ) -> Option<LoadTable> {
        let t = self.table(
            lpath,
            item,
            "a load entry",
            "{ table = \"customers\", rows = \"customers\", columns = [...] }",
        )?;
        self.keys(lpath, t, LOAD_KEYS, "a load entry");
        let Some(table) = t
            .get("table")
            .and_then(|v| self.string(&key(lpath, "table"), v, "table = \"customers\""))
            .map(str::to_string)
        else {
            if !t.contains_key("table") {
                self.err(
                    lpath,
                    false,
                    "a load entry needs `table`",
                    "add table = \"customers\"",
                );
            }
            return None;
        };
        if names[..i].iter().flatten().any(|n| *n == table) {
            self.err(
                &key(lpath, "table"),
                false,
                format!("table `{table}` is loaded twice"),
                "load each table once",
            );
        }
        let parent = match t.get("parent") {
            None => None,
            Some(p) => self.parent(lpath, p, &table, i, names),
        };
        let rows = self.row_count(lpath, t, &table, parent.is_some(), globals);
        let mut set = globals.clone();
        set.extend(self.vars.slot("row"));
        if parent.is_some() {
            set.extend(self.vars.slot("child"));
            set.extend(self.vars.slot("parent_row"));
        }
        let mut lets = Vec::new();
        if let Some(l) = t.get("let") {
            let mut ops = Vec::new();
            self.lets(&key(lpath, "let"), l, &mut set, &mut ops, LOAD_ALLOWED);
            lets = ops
                .into_iter()
                .filter_map(|op| match op {
                    Op::Let { slot, value } => Some((slot, value)),
                    _ => None,
                })
                .collect();
        }
        let columns = self.columns(lpath, t, &table, &set);
        let rows = rows?;
        let count = if parent.is_some() {
            "per_parent"
        } else {
            "rows"
        };
        self.option_sites.push(OptionSite {
            workload: self.name.clone(),
            file: self.file_index,
            path: key(lpath, count),
            check: OptionCheck::Rows { entry },
        });
        Some(LoadTable {
            table,
            rows,
            parent,
            lets,
            columns,
        })
    }

    /// `parent = "TABLE"` (`p`) of entry `i`, loading `table`: the index of the parent entry.
    fn parent(
        &mut self,
        lpath: &[Seg],
        p: &toml::Value,
        table: &str,
        i: usize,
        names: &[Option<String>],
    ) -> Option<usize> {
        let ppath = key(lpath, "parent");
        let p = self.string(&ppath, p, "parent = \"warehouse\"")?;
        match names.iter().position(|n| n.as_deref() == Some(p)) {
            Some(j) if j == i => {
                self.err(
                    &ppath,
                    false,
                    format!("table `{table}` names itself as its parent"),
                    "a parent is another loaded table",
                );
                None
            }
            Some(j) => Some(j),
            None => {
                let all: Vec<String> = names.iter().flatten().cloned().collect();
                self.not_loaded(&ppath, "parent", p, &all);
                None
            }
        }
    }

    /// How many rows entry `t` loads: `rows`, or `per_parent` with a parent (an expression over
    /// options).
    fn row_count(
        &mut self,
        lpath: &[Seg],
        t: &toml::Table,
        table: &str,
        has_parent: bool,
        globals: &HashSet<Slot>,
    ) -> Option<Expr> {
        let opts = Scope {
            set: globals,
            place: "a row count",
            allowed: "options only",
        };
        match (
            has_parent || t.contains_key("parent"),
            t.get("rows"),
            t.get("per_parent"),
        ) {
            (false, Some(r), None) => self.bound(&key(lpath, "rows"), r, &opts),
            (true, None, Some(r)) => self.bound(&key(lpath, "per_parent"), r, &opts),
            (false, _, Some(_)) => {
                self.err(
                    &key(lpath, "per_parent"),
                    true,
                    "`per_parent` without `parent`",
                    "add parent = \"TABLE\", or use rows = N",
                );
                None
            }
            (true, Some(_), _) => {
                self.err(
                    &key(lpath, "rows"),
                    true,
                    "a table with a `parent` gives `per_parent`, not `rows`",
                    "write per_parent = N (rows per parent row)",
                );
                None
            }
            (false, None, None) => {
                self.err(
                    lpath,
                    false,
                    format!("load of `{table}` needs `rows`"),
                    "e.g. rows = \"customers\" (an expression over options)",
                );
                None
            }
            (true, None, None) => {
                self.err(
                    lpath,
                    false,
                    format!("load of `{table}` needs `per_parent`"),
                    "e.g. per_parent = 10",
                );
                None
            }
        }
    }

    /// The `columns` of entry `t`, loading `table`: each a name and what generates it, which
    /// may read `set`.
    fn columns(
        &mut self,
        lpath: &[Seg],
        t: &toml::Table,
        table: &str,
        set: &HashSet<Slot>,
    ) -> Vec<(String, GenSpec)> {
        let mut columns = Vec::new();
        let Some(cols) = t
            .get("columns")
            .and_then(toml::Value::as_array)
            .filter(|c| !c.is_empty())
        else {
            let at = if t.contains_key("columns") {
                key(lpath, "columns")
            } else {
                lpath.to_vec()
            };
            self.err(
                &at,
                false,
                format!("load of `{table}` needs `columns`, a non-empty list"),
                "e.g. columns = [{ name = \"c_id\", gen = \"row\" }]",
            );
            return columns;
        };
        for (j, col) in cols.iter().enumerate() {
            let cpath = index(&key(lpath, "columns"), j);
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
                set,
                place: "a load column",
                allowed: LOAD_ALLOWED,
            };
            if let Some(g) = self.generated(&key(&cpath, "gen"), g, &scope) {
                columns.push((cname.to_string(), g));
            }
        }
        columns
    }

    /// The parents of the entries `out` (all of `path`'s) form no cycle.
    fn parents_form_no_cycle(&mut self, path: &[Seg], out: &[LoadTable]) {
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

    /// `what` (`fk`, `parent`) names `table`, which is not among the loaded `tables`.
    pub(super) fn not_loaded(&mut self, path: &[Seg], what: &str, table: &str, tables: &[String]) {
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
            format!("`{what}` names `{table}`, which the workload does not load"),
            help,
        );
    }
}
