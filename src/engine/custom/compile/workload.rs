//! One `[workloads.NAME]` table, compiled in two passes. Pass 1 declares every variable
//! (options, `thread`, `[params]`, then the lets, captures and loop indexes of the
//! transactions, then the load variables); pass 2 compiles each section, so that a name that
//! does not exist is told from one that exists but is not set yet where it is read. Also here:
//! what concerns the definition as a whole (its name, the transaction mix, the params each
//! transaction draws, `headline`).

use std::collections::{HashMap, HashSet};

use super::WORKLOAD_KEYS;
use super::compiler::{Compiler, Scope, index, key};
use super::tables::LOAD_VARS;
use super::transactions::capture_pairs;
use crate::engine::catalog;
use crate::engine::custom::model::{
    Def, GenSpec, Headline, OptionDef, Slot, Sql, Stmt, Txn, VarKind,
};
use crate::source::{Seg, did_you_mean, path_text};

const HEADLINE_KEYS: &[&str] = &["name", "transaction", "per"];

/// The params of a workload, in order, with the params each one's generator reads.
struct Params {
    drawn: Vec<(Slot, GenSpec)>,
    deps: HashMap<Slot, Vec<Slot>>,
}

impl Compiler<'_> {
    /// The definition in `v` (at `base`, `workloads.NAME`), or `None` when it has errors.
    pub(super) fn workload(&mut self, base: &[Seg], v: &toml::Value) -> Option<Def> {
        let name = self.name.clone();
        let t = self.table(
            base,
            v,
            &format!("workload `{name}`"),
            "[workloads.orders] with summary, options, params, transactions, …",
        )?;
        let before = self.errors.len();
        self.workload_name(base);
        self.keys(base, t, WORKLOAD_KEYS, &format!("[workloads.{name}]"));
        let summary = match t.get("summary") {
            Some(v) => self
                .string(&key(base, "summary"), v, "summary = \"order entry\"")?
                .to_string(),
            None => String::new(),
        };

        // Pass 1: every variable.
        let (options, params_table, txns) = self.declare_all(base, t);
        if self.errors.len() > before {
            return None;
        }

        // Pass 2.
        let globals: HashSet<Slot> = (0..self.vars.len())
            .filter(|s| matches!(self.vars.kinds[*s], VarKind::Option | VarKind::Thread))
            .collect();
        let params = self.params(base, params_table, &globals);
        // Every declared param counts as set, also one whose generator was refused above: its
        // users would only repeat that error.
        let mut avail = globals.clone();
        avail.extend((0..self.vars.len()).filter(|s| self.vars.kinds[*s] == VarKind::Param));
        let load = match t.get("load") {
            Some(v) => self.load_tables(&key(base, "load"), v, &globals),
            None => Vec::new(),
        };
        let (transactions, statements) = match txns {
            Some(txns) => self.transactions(base, txns, &avail, &params),
            None => (Vec::new(), Vec::new()),
        };
        self.statement_names_unique(base, &transactions, &statements);
        if self.errors.len() == before {
            self.something_runs(base, t, &transactions);
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
        let init = sql_list(self, "init");
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
            init,
            load,
            fresh_per_run,
            checks,
            vars: std::mem::take(&mut self.vars),
            params: params.drawn,
            transactions,
            statements,
        })
    }

    /// Pass 1 over workload table `t`: declares every variable; returns the options, and the
    /// `params` and `transactions` tables when they are tables.
    fn declare_all<'t>(
        &mut self,
        base: &[Seg],
        t: &'t toml::Table,
    ) -> (
        Vec<OptionDef>,
        Option<&'t toml::Table>,
        Option<&'t toml::Table>,
    ) {
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
            self.declare_transactions(base, txns);
        }
        self.declare_loads(base, t);
        self.no_load_var_names(base, &options, params_table);
        (options, params_table, txns)
    }

    /// The workload's name becomes a CSV value and part of file names, and must not be a
    /// built-in workload's.
    fn workload_name(&mut self, base: &[Seg]) {
        let name = self.name.clone();
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
        if catalog::is_builtin(&name) {
            self.err(
                base,
                true,
                format!("workload `{name}` is a built-in workload"),
                format!("give your workload its own name, e.g. `my_{name}`"),
            );
        }
    }

    /// Pass 1 over the transactions: the variables their lets and steps set.
    fn declare_transactions(&mut self, base: &[Seg], txns: &toml::Table) {
        for (tn, tv) in txns {
            let tpath = key(&key(base, "transactions"), tn);
            let Some(tt) = tv.as_table() else { continue };
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
            if let Some(inner) = s.get("for_each_row").and_then(toml::Value::as_array) {
                self.declare_steps(&key(&spath, "for_each_row"), inner);
            }
        }
    }

    /// Pass 1 over the `load` entries of workload table `t`: the tables they load (for `fk`)
    /// and their variables.
    fn declare_loads(&mut self, base: &[Seg], t: &toml::Table) {
        let load = t.get("load").and_then(toml::Value::as_array);
        self.tables = load
            .into_iter()
            .flatten()
            .filter_map(|l| l.get("table").and_then(toml::Value::as_str))
            .map(str::to_string)
            .collect();
        for (i, entry) in load.into_iter().flatten().enumerate() {
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

    /// `thread` and the load variables are every workload's: no option or param takes their
    /// names.
    fn no_load_var_names(
        &mut self,
        base: &[Seg],
        options: &[OptionDef],
        params: Option<&toml::Table>,
    ) {
        for o in options {
            if LOAD_VARS.contains(&o.name.as_str()) || o.name == "thread" {
                self.err(
                    &key(&key(base, "options"), &o.name),
                    true,
                    format!("option `{}` has the name of a built-in variable", o.name),
                    "`thread`, `row`, `child` and `parent_row` are variables of every workload: rename the option",
                );
            }
        }
        for k in params.into_iter().flat_map(toml::Table::keys) {
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

    /// Pass 2 over `[params]`: each generator may read `globals` and the params before it.
    fn params(
        &mut self,
        base: &[Seg],
        table: Option<&toml::Table>,
        globals: &HashSet<Slot>,
    ) -> Params {
        let mut params = Params {
            drawn: Vec::new(),
            deps: HashMap::new(),
        };
        let mut set = globals.clone();
        for (k, v) in table.into_iter().flatten() {
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
                params.deps.insert(slot, self.used.clone());
                params.drawn.push((slot, g));
            }
            set.insert(slot);
        }
        params
    }

    /// Pass 2 over the transactions, each with the params it draws: those it reads, and
    /// those they read, to the fixed point. Returns them and every statement.
    fn transactions(
        &mut self,
        base: &[Seg],
        txns: &toml::Table,
        avail: &HashSet<Slot>,
        params: &Params,
    ) -> (Vec<Txn>, Vec<Stmt>) {
        let mut transactions: Vec<Txn> = Vec::new();
        let mut statements: Vec<Stmt> = Vec::new();
        for (tn, tv) in txns {
            let tpath = key(&key(base, "transactions"), tn);
            let Some(txn) =
                self.transaction(&tpath, tn, tv, transactions.len(), avail, &mut statements)
            else {
                continue;
            };
            let mut used: Vec<Slot> = self.used.clone();
            let mut i = 0;
            while i < used.len() {
                if let Some(deps) = params.deps.get(&used[i]) {
                    for d in deps {
                        if !used.contains(d) {
                            used.push(*d);
                        }
                    }
                }
                i += 1;
            }
            let draws: Vec<Slot> = params
                .drawn
                .iter()
                .map(|(s, _)| *s)
                .filter(|s| used.contains(s))
                .collect();
            transactions.push(Txn { draws, ..txn });
        }
        (transactions, statements)
    }

    /// Per-statement stats are kept by name: no two statements share one.
    fn statement_names_unique(&mut self, base: &[Seg], transactions: &[Txn], statements: &[Stmt]) {
        let mut seen_names: HashMap<String, usize> = HashMap::new();
        for (i, s) in statements.iter().enumerate() {
            if let Some(first) = seen_names.insert(s.name.clone(), i) {
                let txn = transactions.get(s.txn).map_or("", |t| t.name.as_str());
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
    }

    /// A workload (table `t`) whose transactions compiled runs something: it has one, and
    /// not every weight is 0.
    fn something_runs(&mut self, base: &[Seg], t: &toml::Table, transactions: &[Txn]) {
        let name = self.name.clone();
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
        } else if transactions
            .iter()
            .all(|t| t.weight == 0 && t.weight_expr.is_none())
        {
            self.err(
                &key(base, "transactions"),
                true,
                format!("every transaction of workload `{name}` has weight 0: nothing would run"),
                "give at least one transaction a weight above 0",
            );
        }
    }

    /// `headline`: the transaction whose rate the report leads with. `declared`: every
    /// transaction's name, also of those refused (a headline naming one of them is not an
    /// error of its own).
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
