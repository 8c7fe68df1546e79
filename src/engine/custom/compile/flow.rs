//! The control flow and batching of transaction steps (#31): `for_each_row` (a statement's
//! every row), `while` blocks with their `limit`, `break_when`, and `batch` (an INSERT sent
//! as one statement of many rows, each row with its own `let`s) — compiled into their [`Op`]s
//! with every misuse reported at its key before anything runs.
//!
//! Kept apart from `transactions.rs` (which calls in here for the steps that carry these
//! keys) so that the language's plain steps read as before.

use std::collections::HashSet;

use super::compiler::{Compiler, Scope, TXN_ALLOWED, key};
use super::transactions::TxnSteps;
use crate::db::ByDriver;
use crate::db::sql_text::{self, Piece};
use crate::engine::custom::expr::Expr;
use crate::engine::custom::model::{BoundSql, Op, RowsShape, Slot};
use crate::engine::lua::sql::text::first_word;
use crate::source::Seg;

const WHILE_KEYS: &[&str] = &["while", "limit", "index", "when", "let", "steps"];

/// A `while` block's default `limit`: passes beyond it are a fatal error (a condition that
/// never turns false would otherwise run its transaction for ever).
pub(crate) const WHILE_LIMIT: u64 = 10_000;

impl Compiler<'_> {
    /// A statement step with `for_each_row` or `batch` (`s` has `sql`).
    pub(super) fn flow_statement(
        &mut self,
        spath: &[Seg],
        s: &toml::Table,
        when: Option<Expr>,
        cx: &mut TxnSteps<'_>,
        set: &mut HashSet<Slot>,
    ) -> Option<Op> {
        if s.contains_key("batch") {
            return self.batch(spath, s, when, cx, set);
        }
        for k in ["let", "index"] {
            if s.contains_key(k) {
                self.err(
                    &key(spath, k),
                    true,
                    format!("`{k}` on a statement belongs to a `batch` (one per row)"),
                    "add batch = \"n\" (an INSERT of n rows, its lets drawn for each), or put the \
                     statement in a block: { repeat = 3, index = \"i\", let = {…}, steps = [{ sql = \"…\" }] }",
                );
            }
        }
        if !s.contains_key("for_each_row") {
            return self.statement(spath, s, when, cx, set);
        }
        // for_each_row
        if !s.contains_key("capture") {
            self.err(
                &key(spath, "for_each_row"),
                true,
                "`for_each_row` without `capture`: its steps would see nothing of the row",
                "name the columns the steps read: capture = [\"o_id\", { amount = \"ol_amount\" }]",
            );
        }
        let body_path = key(spath, "for_each_row");
        let inner = match s.get("for_each_row") {
            Some(toml::Value::Array(inner)) if !inner.is_empty() => inner,
            _ => {
                self.err(
                    &body_path,
                    false,
                    "`for_each_row` must be a non-empty list of steps",
                    "e.g. for_each_row = [{ sql = \"DELETE FROM queue WHERE id = :id\" }]",
                );
                return None;
            }
        };
        let stmt = match self.statement(spath, s, None, cx, set)? {
            Op::Exec { stmt, .. } => stmt,
            _ => return None,
        };
        let mut body = Vec::new();
        cx.blocks.push(true);
        self.steps(&body_path, inner, cx, set, &mut body);
        cx.blocks.pop();
        Some(Op::ForEach { stmt, when, body })
    }

    /// A `batch` statement: its row `let`s and `index`, its SQL cut around its row.
    fn batch(
        &mut self,
        spath: &[Seg],
        s: &toml::Table,
        when: Option<Expr>,
        cx: &mut TxnSteps<'_>,
        set: &mut HashSet<Slot>,
    ) -> Option<Op> {
        for k in ["for_each_row", "capture"] {
            if s.contains_key(k) {
                self.err(
                    &key(spath, k),
                    true,
                    format!("`{k}` with `batch`: a batched INSERT returns no rows to read"),
                    format!("remove `{k}`, or `batch` (run the statement once per row in a `repeat` block)"),
                );
            }
        }
        let scope = Scope {
            set,
            place: "`batch`",
            allowed: TXN_ALLOWED,
        };
        let rows = match &s["batch"] {
            toml::Value::Integer(n) if *n >= 0 => Some(Expr::constant(
                &n.to_string(),
                crate::engine::custom::model::Val::Int(*n),
            )),
            toml::Value::String(e) => self.expr(&key(spath, "batch"), e, &scope),
            other => {
                self.err(
                    &key(spath, "batch"),
                    false,
                    format!("`batch` is the number of rows (an integer ≥ 0 or an expression), found {other}"),
                    "e.g. batch = \"lines\" or batch = 100",
                );
                None
            }
        };
        let mut row_set = set.clone();
        let index = match s.get("index") {
            None => None,
            Some(v) => self
                .string(&key(spath, "index"), v, "index = \"i\"")
                .and_then(|n| self.vars.slot(n)),
        };
        row_set.extend(index);
        let mut lets = Vec::new();
        if let Some(l) = s.get("let") {
            self.lets(&key(spath, "let"), l, &mut row_set, &mut lets, TXN_ALLOWED);
        }
        let stmt = match self.statement(spath, s, None, cx, &mut row_set)? {
            Op::Exec { stmt, .. } => stmt,
            _ => return None,
        };
        let per_driver = s["sql"].is_table();
        let shape = self.rows_shape(&key(spath, "sql"), &cx.statements[stmt].sql, per_driver)?;
        Some(Op::Batch {
            stmt,
            when,
            rows: rows?,
            index,
            lets,
            shape: Box::new(shape),
        })
    }

    /// Each driver's text of a batched statement cut around its one row; an error (at the
    /// statement's `sql`) when a text is not `INSERT … VALUES (…)` with exactly one row.
    fn rows_shape(
        &mut self,
        path: &[Seg],
        sql: &BoundSql,
        per_driver: bool,
    ) -> Option<ByDriver<RowsShape>> {
        let mut bad = None;
        let shape = sql.map(|d, b| match cut_row(&b.text, d) {
            Ok(shape) => shape,
            Err(why) => {
                bad.get_or_insert((d.name(), why));
                RowsShape::default()
            }
        });
        if let Some((driver, why)) = bad {
            self.err(
                path,
                false,
                format!(
                    "`batch` repeats the row of an INSERT … VALUES (…), and this statement{} {why}",
                    if per_driver { format!(" ({driver})") } else { String::new() }
                ),
                "write one row with placeholders: sql = \"INSERT INTO t (a, b) VALUES (:a, :b)\" (each row of the batch binds them afresh)",
            );
            return None;
        }
        Some(shape)
    }

    /// A step with `while` (a loop) or `break_when`.
    pub(super) fn flow_step(
        &mut self,
        spath: &[Seg],
        s: &toml::Table,
        when: Option<Expr>,
        cx: &mut TxnSteps<'_>,
        set: &mut HashSet<Slot>,
    ) -> Option<Op> {
        if let Some(v) = s.get("break_when") {
            return self.break_when(spath, s, v, cx, set);
        }
        self.keys(spath, s, WHILE_KEYS, "a `while` block");
        let index = match s.get("index") {
            None => None,
            Some(v) => self
                .string(&key(spath, "index"), v, "index = \"pass\"")
                .and_then(|n| self.vars.slot(n)),
        };
        set.extend(index);
        let scope = Scope {
            set,
            place: "`while`",
            allowed: TXN_ALLOWED,
        };
        let cond = self
            .string(
                &key(spath, "while"),
                &s["while"],
                "while = \"remaining > 0\"",
            )
            .and_then(|text| self.expr(&key(spath, "while"), text, &scope));
        let limit = match s.get("limit") {
            None => Some(WHILE_LIMIT),
            Some(v) => self
                .integer(&key(spath, "limit"), v, 1)
                .and_then(|n| u64::try_from(n).ok()),
        };
        let mut body = Vec::new();
        if let Some(l) = s.get("let") {
            self.lets(&key(spath, "let"), l, set, &mut body, TXN_ALLOWED);
        }
        match s.get("steps") {
            Some(toml::Value::Array(inner)) if !inner.is_empty() => {
                cx.blocks.push(true);
                self.steps(&key(spath, "steps"), inner, cx, set, &mut body);
                cx.blocks.pop();
            }
            Some(_) => self.err(
                &key(spath, "steps"),
                false,
                "`steps` must be a non-empty list of steps",
                "e.g. steps = [{ sql = \"…\" }]",
            ),
            None => self.err(
                spath,
                false,
                "a `while` needs `steps`",
                "e.g. { while = \"remaining > 0\", steps = [{ sql = \"…\" }] }",
            ),
        }
        Some(Op::While {
            cond: cond?,
            limit: limit?,
            index,
            when,
            body,
        })
    }

    /// `{ break_when = "cond" }`: only inside a loop, and not inside a `when` block of it
    /// (which is a block of its own: the break would leave only that).
    fn break_when(
        &mut self,
        spath: &[Seg],
        s: &toml::Table,
        v: &toml::Value,
        cx: &TxnSteps<'_>,
        set: &HashSet<Slot>,
    ) -> Option<Op> {
        self.keys(spath, s, &["break_when"], "a `break_when` step");
        let path = key(spath, "break_when");
        match cx.blocks.last() {
            None => {
                self.err(
                    &path,
                    true,
                    "`break_when` outside a loop: it leaves the innermost `repeat`, `while` or `for_each_row`",
                    "put it in a loop's steps (use `when` to skip steps of a transaction)",
                );
                return None;
            }
            Some(false) => {
                self.err(
                    &path,
                    true,
                    "`break_when` inside a `when` block: it would leave only that block, not the loop around it",
                    "move it to the loop's own steps and put both conditions in it: break_when = \"(when's condition) and (yours)\"",
                );
                return None;
            }
            Some(true) => {}
        }
        let scope = Scope {
            set,
            place: "`break_when`",
            allowed: TXN_ALLOWED,
        };
        let text = self.string(&path, v, "break_when = \"id is none\"")?;
        let cond = self.expr(&path, text, &scope)?;
        Some(Op::Break { cond })
    }
}

/// `text` (placeholders already `?`) cut around its one row, or why it cannot be batched.
pub(crate) fn cut_row(text: &str, driver: crate::db::Driver) -> Result<RowsShape, String> {
    let word = first_word(text).to_ascii_uppercase();
    if word != "INSERT" && word != "REPLACE" {
        return Err(format!("is a {word}, not an INSERT"));
    }
    // Byte offsets of the code, with the quoted and commented pieces skipped.
    let mut at = 0;
    let mut values_end = None;
    let mut open = None;
    let mut close = None;
    let mut depth = 0usize;
    let (mut before, mut per_row) = (0, 0);
    for (kind, piece) in sql_text::pieces(text, driver.dialect().syntax()) {
        let start = at;
        at += piece.len();
        if kind != Piece::Code {
            continue;
        }
        let b = piece.as_bytes();
        for (i, &c) in b.iter().enumerate() {
            let pos = start + i;
            match c {
                b'?' => {
                    if open.is_some() && close.is_none() {
                        per_row += 1;
                    } else if open.is_none() {
                        before += 1;
                    }
                }
                b'(' => {
                    if values_end.is_some() && open.is_none() && depth == 0 {
                        open = Some(pos);
                    }
                    depth += 1;
                }
                b')' => {
                    depth = depth.saturating_sub(1);
                    if open.is_some() && close.is_none() && depth == 0 {
                        close = Some(pos + 1);
                    }
                }
                _ if values_end.is_none() && depth == 0 && (i == 0 || !is_word(b[i - 1])) => {
                    let len = b[i..].iter().take_while(|&&c| is_word(c)).count();
                    let word = &piece[i..i + len];
                    if word.eq_ignore_ascii_case("values") {
                        values_end = Some(pos + len);
                    } else if word.eq_ignore_ascii_case("select") {
                        return Err("inserts the rows of a SELECT, not one VALUES (…) row".into());
                    }
                }
                _ => {}
            }
        }
    }
    let (Some(_), Some(open), Some(close)) = (values_end, open, close) else {
        return Err(
            "has no VALUES (…) row (INSERT … SELECT and INSERT … SET cannot be batched)".into(),
        );
    };
    let rest = text[close..].trim_start();
    if rest.starts_with(',') {
        return Err("already has several rows after VALUES".into());
    }
    Ok(RowsShape {
        prefix: text[..open].to_string(),
        tuple: text[open..close].to_string(),
        suffix: text[close..].to_string(),
        before,
        per_row,
    })
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

#[cfg(test)]
mod tests;
