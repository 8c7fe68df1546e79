//! `[workloads.NAME.transactions.T]`: a transaction's mix settings (weight, autocommit,
//! rollback, keying, think) and its steps — statements with their SQL, captures and expected
//! row counts, and blocks (`repeat`, `when`, `let`, nested `steps`) — compiled into the ops
//! the engine runs, each variable checked to be set before it is read.

use std::collections::HashSet;

use super::compiler::{Compiler, Scope, TXN_ALLOWED, index, key};
use super::sites::{IsolationSite, OptionCheck, OptionSite};
use crate::db::Isolation;
use crate::engine::custom::expr::Expr;
use crate::engine::custom::model::{BoundSql, OnMismatch, Op, Slot, Stmt, Txn, Val, VarKind};
use crate::engine::lua::sql::text::{first_word, returns_no_rows};
use crate::source::Seg;

const TXN_KEYS: &[&str] = &[
    "weight",
    "autocommit",
    "rollback",
    "isolation",
    "read_only",
    "think",
    "keying",
    "let",
    "steps",
    "retry",
    "ignore_errors",
    "rollback_when",
];
const STMT_KEYS: &[&str] = &[
    "sql",
    "name",
    "capture",
    "expect_rows",
    "on_mismatch",
    "when",
    "ps_mode",
    // #31, compiled in `flow.rs`.
    "for_each_row",
    "batch",
    "let",
    "index",
];
const BLOCK_KEYS: &[&str] = &["repeat", "index", "when", "let", "steps"];

/// What the steps of one transaction add to as they compile.
pub(super) struct TxnSteps<'s> {
    /// The transaction's name (default statement names are `NAME.N`) and index.
    name: &'s str,
    txn: usize,
    /// Every statement of the workload so far: ops refer to them by index.
    pub(super) statements: &'s mut Vec<Stmt>,
    /// The transaction's statements so far.
    count: usize,
    /// The blocks around the step compiling, innermost last: `true` a loop, `false` a `when`
    /// block (#31: `break_when` leaves the innermost, which must be a loop).
    pub(super) blocks: Vec<bool>,
}

impl Compiler<'_> {
    /// A transaction's `weight`: an integer ≥ 0, or (#31) an expression over the options
    /// (`"50 if mix == 'a' else 0"`), fixed for a run: `(0, Some(e))` then, the plan checks
    /// each run's value ([`super::sites::OptionCheck::Weight`]).
    fn weight(
        &mut self,
        path: &[Seg],
        t: &toml::Table,
        avail: &HashSet<Slot>,
    ) -> (u32, Option<Expr>) {
        let wpath = key(path, "weight");
        match t.get("weight") {
            None => (1, None),
            Some(toml::Value::String(text)) => {
                let options: HashSet<Slot> = avail
                    .iter()
                    .copied()
                    .filter(|&s| self.vars.kinds.get(s) == Some(&VarKind::Option))
                    .collect();
                let scope = Scope {
                    set: &options,
                    place: "a transaction's `weight`",
                    allowed: "options only (the mix is fixed for a run)",
                };
                let Some(e) = self.expr(&wpath, text, &scope) else {
                    return (0, None);
                };
                match e.as_const() {
                    // No option read: a constant, checked here.
                    Some(v) => match v.as_i64().and_then(|i| u32::try_from(i).ok()) {
                        Some(w) => (w, None),
                        None => {
                            self.err(
                                &wpath,
                                false,
                                format!("`weight` must be a whole number ≥ 0, `{text}` is {v}"),
                                "e.g. weight = 45, or an expression over options: weight = \"50 if mix == 'a' else 0\"",
                            );
                            (0, None)
                        }
                    },
                    None => {
                        self.option_sites.push(OptionSite {
                            workload: self.name.clone(),
                            file: self.file_index,
                            path: wpath,
                            check: OptionCheck::Weight(e.clone()),
                        });
                        (0, Some(e))
                    }
                }
            }
            Some(v) => match v.as_integer().and_then(|i| u32::try_from(i).ok()) {
                Some(w) => (w, None),
                None => {
                    self.err(
                        &wpath,
                        false,
                        format!("`weight` must be an integer ≥ 0, found {v}"),
                        "e.g. weight = 45 (relative to the others), or an expression over options: weight = \"50 if mix == 'a' else 0\"",
                    );
                    (0, None)
                }
            },
        }
    }

    /// Transaction `name`, the `txn`-th of the workload; `avail` is what it may read from the
    /// start (options, `thread`, params). Its statements are added to `statements`.
    pub(super) fn transaction(
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
        let (weight, weight_expr) = self.weight(path, t, avail);
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
        let isolation = match t.get("isolation") {
            Some(v) => match v.as_str().and_then(Isolation::parse) {
                Some(_) if autocommit => {
                    self.err(
                        &key(path, "isolation"),
                        false,
                        "`isolation` needs a transaction, and this one is `autocommit = true`",
                        "drop `autocommit = true`, or `isolation`",
                    );
                    None
                }
                Some(level) => {
                    self.isolation_sites.push(IsolationSite {
                        workload: self.name.clone(),
                        file: self.file_index,
                        path: key(path, "isolation"),
                        level,
                    });
                    Some(level)
                }
                None => {
                    self.err(
                        &key(path, "isolation"),
                        false,
                        format!(
                            "`isolation` is one of \"read uncommitted\", \"read committed\", \
                             \"repeatable read\", \"serializable\", found {v}"
                        ),
                        "e.g. isolation = \"serializable\"",
                    );
                    None
                }
            },
            None => None,
        };
        let read_only = match t.get("read_only") {
            Some(v) => self.boolean(&key(path, "read_only"), v),
            None => None,
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
        let first_stmt = statements.len();
        let mut cx = TxnSteps {
            name,
            txn,
            statements,
            count: 0,
            blocks: Vec::new(),
        };
        self.steps(&key(path, "steps"), steps, &mut cx, &mut set, &mut body);
        // Read-only unless said otherwise when every statement, in every dialect, is a SELECT.
        let read_only = read_only.unwrap_or_else(|| {
            cx.statements[first_stmt..].iter().all(|st| {
                st.sql.iter().all(|(_, b)| {
                    b.as_ref().is_none_or(|b| {
                        b.text.trim().is_empty()
                            || first_word(&b.text).eq_ignore_ascii_case("select")
                    })
                })
            })
        });
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
        let rules = self.txn_rules(path, t, &set, autocommit);
        if self.errors.len() > before {
            return None;
        }
        Some(Txn {
            name: name.to_string(),
            weight,
            weight_expr,
            autocommit,
            rollback,
            rules,
            keying,
            think,
            draws: Vec::new(),
            body,
            isolation,
            read_only,
        })
    }

    /// A `let` table: each value is set in order (a later one may read an earlier one) and
    /// becomes an op in `out`; `allowed` says what the place may read, for the help.
    pub(super) fn lets(
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

    /// A list of steps, in order, into `out`; `set` grows with what each step sets.
    pub(super) fn steps(
        &mut self,
        path: &[Seg],
        steps: &[toml::Value],
        cx: &mut TxnSteps<'_>,
        set: &mut HashSet<Slot>,
        out: &mut Vec<Op>,
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
            // #31's keys (`flow.rs`): a statement that iterates its rows or is batched (or
            // carries a key only a batch has), a `while` block, a `break_when`.
            let flow_statement = ["for_each_row", "batch", "let", "index"]
                .iter()
                .any(|k| s.contains_key(*k));
            if s.contains_key("sql") && flow_statement {
                out.extend(self.flow_statement(&spath, s, when, cx, set));
            } else if s.contains_key("sql") {
                out.extend(self.statement(&spath, s, when, cx, set));
            } else if s.contains_key("while") || s.contains_key("break_when") {
                out.extend(self.flow_step(&spath, s, when, cx, set));
            } else if s.contains_key("steps") || s.contains_key("repeat") || s.contains_key("let") {
                out.extend(self.block(&spath, s, when, cx, set));
            } else {
                self.err(
                    &spath,
                    false,
                    "a step needs `sql`, `steps`, `let`, `while` or `break_when`",
                    "e.g. { sql = \"SELECT …\" }, { let = { x = 1 } }, { repeat = 3, steps = [...] } or { while = \"n > 0\", steps = [...] }",
                );
            }
        }
    }

    /// A statement step (`s`, which has `sql`): the statement is added to the workload's, and
    /// its op returned; what it captures is set from here on.
    pub(super) fn statement(
        &mut self,
        spath: &[Seg],
        s: &toml::Table,
        when: Option<Expr>,
        cx: &mut TxnSteps<'_>,
        set: &mut HashSet<Slot>,
    ) -> Option<Op> {
        self.keys(
            spath,
            s,
            STMT_KEYS,
            "a statement step (a block with `repeat`, `let` or `steps` has no `sql`)",
        );
        cx.count += 1;
        let scope = Scope {
            set,
            place: "a statement",
            allowed: TXN_ALLOWED,
        };
        let bound = self.bound_sql(&key(spath, "sql"), &s["sql"], &scope);
        let ps_mode = self.stmt_ps_mode(spath, s);
        // `Err`: a bad `expect_rows` (already reported).
        let expect_rows: Result<Option<Expr>, ()> = match s.get("expect_rows") {
            None => Ok(None),
            Some(toml::Value::Integer(n)) if *n >= 0 => {
                Ok(Some(Expr::constant(&n.to_string(), Val::Int(*n))))
            }
            Some(toml::Value::String(e)) => self
                .expr(&key(spath, "expect_rows"), e, &scope)
                .map(Some)
                .ok_or(()),
            Some(other) => {
                self.err(
                    &key(spath, "expect_rows"),
                    false,
                    format!("`expect_rows` must be an integer ≥ 0 or an expression, found {other}"),
                    "e.g. expect_rows = 1",
                );
                Err(())
            }
        };
        let on_mismatch = match s.get("on_mismatch").map(|v| (v, v.as_str())) {
            None => OnMismatch::Fail,
            Some((_, Some("fail"))) => OnMismatch::Fail,
            Some((_, Some("rollback"))) => OnMismatch::Rollback,
            Some((v, _)) => {
                self.err(
                    &key(spath, "on_mismatch"),
                    false,
                    format!("`on_mismatch` is \"fail\" or \"rollback\", found {v}"),
                    "on_mismatch = \"rollback\" counts a deliberate rollback (TPC-C's unused item)",
                );
                OnMismatch::Fail
            }
        };
        if s.contains_key("on_mismatch") && !s.contains_key("expect_rows") {
            self.err(
                &key(spath, "on_mismatch"),
                true,
                "`on_mismatch` without `expect_rows`",
                "add expect_rows = N, or remove on_mismatch",
            );
        }
        let name = match s.get("name") {
            Some(v) => self
                .string(&key(spath, "name"), v, "name = \"lookup\"")
                .unwrap_or_default()
                .to_string(),
            None => format!("{}.{}", cx.name, cx.count),
        };
        let mut capture = Vec::new();
        if let Some(c) = s.get("capture") {
            let pairs = capture_pairs(c);
            if pairs.is_empty() || !capture_shape_ok(c) {
                self.err(
                    &key(spath, "capture"),
                    false,
                    "`capture` is a list of column names, or of { var = \"column\" } tables",
                    "e.g. capture = [\"c_name\", { balance = \"c_balance\" }]",
                );
            }
            for (var, column) in pairs {
                if let Some(slot) = self.vars.slot(&var) {
                    capture.push((slot, column));
                }
            }
            if let Some(sql) = &bound {
                self.capture_needs_rows(&key(spath, "capture"), sql);
            }
        }
        set.extend(capture.iter().map(|(slot, _)| *slot));
        let (Some(sql), Ok(expect_rows)) = (bound, expect_rows) else {
            return None;
        };
        cx.statements.push(Stmt {
            name,
            txn: cx.txn,
            sql,
            ps_mode,
            capture,
            expect_rows,
            on_mismatch,
        });
        Some(Op::Exec {
            stmt: cx.statements.len() - 1,
            when,
        })
    }

    /// A block step (`s`, with `steps`, `repeat` or `let`): its ops, inline when it neither
    /// repeats nor has a `when`, else one `Repeat` op.
    fn block(
        &mut self,
        spath: &[Seg],
        s: &toml::Table,
        when: Option<Expr>,
        cx: &mut TxnSteps<'_>,
        set: &mut HashSet<Slot>,
    ) -> Vec<Op> {
        self.keys(spath, s, BLOCK_KEYS, "a block step");
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
            Some(toml::Value::String(e)) => self.expr(&key(spath, "repeat"), e, &scope),
            Some(other) => {
                self.err(
                    &key(spath, "repeat"),
                    false,
                    format!(
                        "`repeat` must be a count (an integer ≥ 0 or an expression), found {other}"
                    ),
                    "e.g. repeat = \"qty\"",
                );
                None
            }
        };
        let index_slot = match s.get("index") {
            None => None,
            Some(v) => {
                if !s.contains_key("repeat") {
                    self.err(
                        &key(spath, "index"),
                        true,
                        "`index` without `repeat`",
                        "add repeat = N, or remove index",
                    );
                }
                self.string(&key(spath, "index"), v, "index = \"i\"")
                    .and_then(|n| self.vars.slot(n))
            }
        };
        let mut body = Vec::new();
        if let Some(slot) = index_slot {
            set.insert(slot);
        }
        if let Some(l) = s.get("let") {
            self.lets(&key(spath, "let"), l, set, &mut body, TXN_ALLOWED);
        }
        match s.get("steps") {
            Some(toml::Value::Array(inner)) if !inner.is_empty() => {
                // A block that is not inlined (a loop, or a `when`) is one `break_when` sees.
                let own = s.contains_key("repeat") || when.is_some();
                if own {
                    cx.blocks.push(s.contains_key("repeat"));
                }
                self.steps(&key(spath, "steps"), inner, cx, set, &mut body);
                if own {
                    cx.blocks.pop();
                }
            }
            Some(_) => self.err(
                &key(spath, "steps"),
                false,
                "`steps` must be a non-empty list of steps",
                "e.g. steps = [{ sql = \"…\" }]",
            ),
            None if s.contains_key("repeat") => self.err(
                spath,
                false,
                "a `repeat` needs `steps`",
                "e.g. { repeat = \"qty\", index = \"i\", steps = [{ sql = \"…\" }] }",
            ),
            None => {}
        }
        let Some(count) = count_expr else {
            return Vec::new();
        };
        if !s.contains_key("repeat") && when.is_none() {
            // A plain block: its ops inline.
            body
        } else {
            vec![Op::Repeat {
                count,
                index: index_slot,
                when,
                body,
            }]
        }
    }

    /// `capture` reads the first row of a result: a statement known to return none (a write
    /// without `RETURNING`, DDL) on every driver it has text for would capture NULL every
    /// time. Per-driver SQL that returns rows on some drivers only is allowed: the capture is
    /// NULL on the others (a MySQL `INSERT` whose id a later `LAST_INSERT_ID()` step captures,
    /// next to PostgreSQL's `INSERT … RETURNING id`).
    fn capture_needs_rows(&mut self, path: &[Seg], sql: &BoundSql) {
        let texts: Vec<(&str, &str)> = sql
            .iter()
            .filter_map(|(d, b)| {
                let b = b?;
                (!b.text.trim().is_empty()).then_some((d.name(), b.text.as_str()))
            })
            .collect();
        if texts.is_empty() || !texts.iter().all(|(_, t)| returns_no_rows(t)) {
            return;
        }
        let none: Vec<&str> = texts.iter().map(|(d, _)| *d).collect();
        let text = texts[0].1;
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
}

/// `capture = ["c_name", { balance = "c_balance" }]` or `capture = { balance = "c_balance" }`
/// as (variable, column) pairs; malformed items are left out (see [`capture_shape_ok`]).
pub(super) fn capture_pairs(v: &toml::Value) -> Vec<(String, String)> {
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
