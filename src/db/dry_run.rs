//! sysbench's `--mysql-dry-run` ("all client calls pretend success"): a connection that
//! reaches no server.
//!
//! What it is for: the client's own cost per event (random numbers, statement parameters,
//! accounting, reports) with the database taken out, to compare with sysbench's dry run or
//! to see how much of a run's client CPU is the driver's. As in sysbench, every statement
//! counts as "other" (sysbench's result counter is never set when its driver returns early),
//! prepare's rows are generated and dropped, and the run's dataset check is skipped.

use crate::db::conn::{Connection, DataRow, Done, Fetched, P, SqlError, StmtId};

#[derive(Debug, Default)]
pub struct DryRun {
    statements: usize,
}

impl Connection for DryRun {
    fn prepare(&mut self, _sql: &str) -> Result<StmtId, SqlError> {
        self.statements += 1;
        Ok(self.statements - 1)
    }

    fn execute(&mut self, _stmt: StmtId, _params: &[P<'_>]) -> Result<Done, SqlError> {
        Ok(Done::default())
    }

    fn query(&mut self, _sql: &str) -> Result<Done, SqlError> {
        Ok(Done::default())
    }

    /// One row without columns: `expect_rows = 1` holds and a capture reads NULL, so a custom
    /// workload's transactions run their whole path.
    fn execute_fetch(
        &mut self,
        _stmt: StmtId,
        _params: &[P<'_>],
        _first: bool,
        out: &mut Fetched,
    ) -> Result<Done, SqlError> {
        out.clear();
        out.rows = 1;
        Ok(Done::default())
    }

    fn query_fetch(
        &mut self,
        _sql: &str,
        _first: bool,
        out: &mut Fetched,
    ) -> Result<Done, SqlError> {
        out.clear();
        out.rows = 1;
        Ok(Done::default())
    }

    fn query_i64(&mut self, _sql: &str) -> Result<Option<i64>, SqlError> {
        Ok(None)
    }

    fn load(
        &mut self,
        _table: &str,
        _with_id: bool,
        fill: &mut dyn FnMut(&mut DataRow) -> bool,
    ) -> Result<(), SqlError> {
        let mut row = DataRow::default();
        while fill(&mut row) {}
        Ok(())
    }

    fn close(self: Box<Self>) {}
}
