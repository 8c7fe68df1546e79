//! The runtime of #31's control flow and batching: `for_each_row`, `while`, `break_when` and
//! `batch` steps of a worker's transaction (compiled in `compile/flow.rs`).
//!
//! Shape, and why:
//! * A `for_each_row` statement reads its whole result (the drivers' [`Fetched::all`] mode)
//!   into a buffer of its own, then runs its steps row by row: the connection is free again
//!   for the statements of those steps, and a nested `for_each_row` has its own buffer. The
//!   buffers are the worker's and are reused: a row costs the text of its values, nothing
//!   else is allocated per event.
//! * `break_when` sets a flag that every step list returns on and the innermost loop clears
//!   (the compiler refuses a `break_when` that no loop would clear).
//! * A `batch` of n rows is one statement: its text for n rows is made and prepared once per
//!   connection (`Batches`, kept with the connection's other statements), its values are
//!   copied row by row into a reused buffer while the row's `let`s are drawn, then bound in
//!   one call. One row is the statement itself; 0 rows sends nothing.

use std::collections::HashMap;
use std::time::Instant;

use super::{CustomWorker, Last, Step, Stop, captured, preparing, recycle};
use crate::db::sql_text;
use crate::db::{Driver, Fetched, StmtId};
use crate::engine::custom::expr::Expr;
use crate::engine::custom::model::{RowsShape, Slot, Val};

/// A worker's state for the steps of this module.
#[derive(Debug, Default)]
pub(super) struct Flow {
    /// A `break_when` held: the step lists return up to the innermost loop, which clears it.
    pub(super) breaking: bool,
    /// Per statement: the rows of its last `for_each_row` run and its captures' columns in
    /// them (empty for the others).
    rowsets: Vec<(Fetched, Vec<usize>)>,
    /// A batch's values, row after row.
    vals: Vec<Val>,
    /// The text of a batch being prepared or substituted.
    text: String,
}

impl Flow {
    /// The state of a worker of a workload with `stmts` statements.
    pub(super) fn new(stmts: usize) -> Flow {
        Flow {
            rowsets: (0..stmts).map(|_| Default::default()).collect(),
            ..Flow::default()
        }
    }

    /// Whether a `break_when` is leaving the loop that asks (and clears it).
    pub(super) fn take_break(&mut self) -> bool {
        std::mem::take(&mut self.breaking)
    }
}

/// The batches prepared on one connection: (statement, rows) → the prepared statement.
pub(crate) type Batches = HashMap<(usize, usize), StmtId>;

/// Most placeholders one statement may have on `driver`.
fn max_binds(driver: Driver) -> usize {
    driver.dialect().max_params()
}

impl CustomWorker<'_> {
    /// `for_each_row`: statement `i`, then `body` for each of its rows.
    pub(super) fn for_each(&mut self, i: usize, body: &[Step]) -> Result<(), Stop> {
        self.fetched.all = true;
        let ran = self.exec(i);
        self.fetched.all = false;
        ran?;
        let Some((mut rows, mut at)) = self.flow.rowsets.get_mut(i).map(std::mem::take) else {
            return Ok(());
        };
        std::mem::swap(&mut rows, &mut self.fetched);
        let st = &self.w.def.statements[i];
        at.clear();
        for (_, column) in &st.capture {
            match rows
                .columns
                .iter()
                .position(|c| c.eq_ignore_ascii_case(column))
            {
                Some(k) => at.push(k),
                // No rows (else `exec` has said so already): nothing to read it from.
                None => break,
            }
        }
        let width = rows.columns.len();
        let count = if width == 0 || at.len() < st.capture.len() {
            0
        } else {
            rows.first.len() / width
        };
        let mut result = Ok(());
        for r in 0..count {
            if self.session.stopping() {
                result = Err(Stop::Halted);
                break;
            }
            let row = &rows.first[r * width..(r + 1) * width];
            for ((slot, _), &k) in st.capture.iter().zip(&at) {
                self.frame.vals[*slot] = row[k].as_deref().map_or(Val::Null, captured);
            }
            if let Err(e) = self.run(body) {
                result = Err(e);
                break;
            }
            if self.flow.take_break() {
                break;
            }
        }
        self.flow.rowsets[i] = (rows, at);
        result
    }

    /// `while`: `body` while `cond` holds, at most `limit` passes.
    pub(super) fn while_loop(
        &mut self,
        cond: &Expr,
        limit: u64,
        index: Option<Slot>,
        body: &[Step],
    ) -> Result<(), Stop> {
        let mut pass = 0u64;
        loop {
            if self.session.stopping() {
                return Err(Stop::Halted);
            }
            if let Some(s) = index {
                self.frame.vals[s] = Val::Int(i64::try_from(pass).unwrap_or(i64::MAX));
            }
            if !cond.eval(&self.frame).map_err(Stop::Value)?.truthy() {
                return Ok(());
            }
            if pass == limit {
                return Err(Stop::Eval(format!(
                    "the loop `while = \"{}\"` ran its limit of {limit} passes and its condition still holds: raise its `limit` (e.g. limit = {}) or make the condition turn false (a `break_when` step leaves the loop)",
                    cond.text().trim(),
                    limit.saturating_mul(10)
                )));
            }
            self.run(body)?;
            if self.flow.take_break() {
                return Ok(());
            }
            pass += 1;
        }
    }

    /// `batch`: statement `i` as one INSERT of `rows` rows (see the module's doc).
    pub(super) fn batch(
        &mut self,
        i: usize,
        rows: &Expr,
        index: Option<Slot>,
        lets: &[Step],
        shape: Option<&RowsShape>,
    ) -> Result<(), Stop> {
        let w = self.w;
        let n = rows.eval_i64(&self.frame).map_err(Stop::Value)?;
        let n = usize::try_from(n).unwrap_or(0);
        let (Some(bound), Some(shape)) = (w.stmts[i].bound, shape) else {
            return Ok(());
        };
        if n == 0 {
            return Ok(());
        }
        let st = &w.def.statements[i];
        let driver = w.sessions.connector.target.driver;
        let after = bound.binds.len() - shape.before - shape.per_row;
        let binds = shape.before + after + n.saturating_mul(shape.per_row);
        if binds > max_binds(driver) {
            return Err(Stop::Eval(format!(
                "statement `{}`: a batch of {n} rows has {binds} placeholders, more than {} allows in one statement ({}): make `batch` at most {}",
                st.name,
                driver.name(),
                max_binds(driver),
                (max_binds(driver) - shape.before - after) / shape.per_row.max(1)
            )));
        }
        let row = |me: &mut Self, r: usize| -> Result<(), Stop> {
            if let Some(s) = index {
                me.frame.vals[s] = Val::Int(i64::try_from(r).unwrap_or(i64::MAX));
            }
            me.run(lets)
        };
        if n == 1 {
            row(self, 0)?;
            return self.exec(i);
        }
        let mut vals = std::mem::take(&mut self.flow.vals);
        vals.clear();
        let (head, rest) = bound.binds.split_at(shape.before);
        let (tuple, tail) = rest.split_at(shape.per_row);
        vals.extend(head.iter().map(|&s| self.frame.vals[s].clone()));
        for r in 0..n {
            if let Err(e) = row(self, r) {
                self.flow.vals = vals;
                return Err(e);
            }
            vals.extend(tuple.iter().map(|&s| self.frame.vals[s].clone()));
        }
        vals.extend(tail.iter().map(|&s| self.frame.vals[s].clone()));
        self.last = Last::Stmt(i);
        let t0 = w.statement_stats.then(Instant::now);
        let result = self.send_batch(i, n, shape, &vals);
        self.flow.vals = vals;
        let done = result?;
        self.session.tally.classify(done);
        let rows = match &st.expect_rows {
            Some(e) if !w.sessions.connector.target.dry_run => {
                Some((e.eval_i64(&self.frame).map_err(Stop::Value)?, done.affected))
            }
            _ => None,
        };
        self.settle(i, st.on_mismatch, rows, t0)
    }

    /// Sends batch statement `i` of `n` rows with `vals`: prepared (its text for `n` rows
    /// prepared on first use on this connection), or as text with `ps_mode = disable`.
    fn send_batch(
        &mut self,
        i: usize,
        n: usize,
        shape: &RowsShape,
        vals: &[Val],
    ) -> Result<crate::db::Done, Stop> {
        let w = self.w;
        let conn = self.session.conn.as_mut().ok_or_else(super::closed)?;
        let mut params = recycle(std::mem::take(&mut self.params));
        params.extend(vals.iter().map(Val::param));
        let stmts = &mut self.session.stmts;
        let result = if stmts.prepared(i) {
            let id = match stmts.batches.get(&(i, n)) {
                Some(&id) => Ok(id),
                None => {
                    shape.text(n, &mut self.flow.text);
                    conn.prepare(&self.flow.text)
                        .map_err(|e| preparing(e, &w.def.statements[i].name, &self.flow.text))
                        .inspect(|&id| {
                            stmts.batches.insert((i, n), id);
                        })
                }
            };
            id.and_then(|id| conn.execute(id, &params))
        } else {
            shape.text(n, &mut self.flow.text);
            sql_text::substitute(&self.flow.text, &params, w.syntax, &mut self.text);
            conn.query(&self.text)
        };
        self.params = recycle(params);
        // The fatal message shows the one-row text and the last row's values: say it was a
        // batch (code and kind kept, for `ignore_errors` and reconnects).
        result.map_err(|e| {
            Stop::Sql(crate::db::SqlError::new(
                e.code.clone(),
                format!(
                    "{}; a batch of {n} rows, the values shown are its last row's",
                    e.message
                ),
                e.kind,
            ))
        })
    }
}
