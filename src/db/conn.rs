//! One blocking connection to the database under test, whatever the driver: the interface the
//! OLTP engines drive.
//!
//! Why a trait with blocking calls: every worker is an OS thread that owns its connection for
//! the whole run (DESIGN.md "Measured facts": the fastest model measured here). A driver that is
//! async underneath (mysql_async, tokio-postgres) keeps its own current-thread runtime inside
//! its connection and blocks on it; SQLite is blocking already. The engines then write each
//! statement sequence once, and a driver adds only what really differs: the wire, the error
//! codes and bulk loading (SQL and catalog differences are the database's
//! [`crate::db::Dialect`]). One virtual call per statement is noise next to a network round
//! trip.

use std::fmt;

use crate::db::target::MAX_ADMIN_ROWS;

/// A statement parameter.
#[derive(Clone, Copy, Debug)]
pub enum P<'a> {
    Int(i64),
    Str(&'a str),
    /// A floating-point number (custom workloads' `float` values and captured decimals).
    Float(f64),
    /// SQL NULL.
    Null,
}

/// A statement prepared on one connection (index into the connection's own list).
pub type StmtId = usize;

/// What a statement did, for sysbench's read/write/other classification.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Done {
    /// It returned a result set (even an empty one): a read.
    pub rows: bool,
    /// Rows changed (MySQL counts changed rows, as sysbench sees them); meaningful without
    /// `rows`.
    pub affected: u64,
}

/// How an error affects the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrKind {
    /// The connection is gone (killed, server restarted): reconnect, count it, re-run.
    Lost,
    /// No connection could be opened and trying again may help (server down, too many
    /// connections, refused).
    Unreachable,
    /// The statement referred to a table that does not exist.
    NoTable,
    /// CREATE TABLE of a table that exists.
    TableExists,
    /// Anything else: ignorable when its code is in `ignore_errors`, otherwise fatal.
    Other,
}

/// An error of a driver, with the code users put in `ignore_errors`: MySQL's errno (`1213`),
/// PostgreSQL's SQLSTATE (`40P01`) or SQLite's primary result code name (`SQLITE_BUSY`); empty
/// for errors of the client itself. The message never contains the password.
#[derive(Clone, Debug)]
pub struct SqlError {
    pub code: String,
    pub message: String,
    pub kind: ErrKind,
}

impl SqlError {
    pub fn new(code: impl Into<String>, message: impl Into<String>, kind: ErrKind) -> SqlError {
        SqlError {
            code: code.into(),
            message: message.into(),
            kind,
        }
    }

    /// A client-side error without a server code.
    pub fn client(message: impl Into<String>, kind: ErrKind) -> SqlError {
        SqlError::new("", message, kind)
    }

    /// Whether no connection could be opened at all (no route, timed out, refused, unknown
    /// host, no socket): the client's own [`ErrKind::Unreachable`] errors (no code, or MySQL's
    /// client codes 2002/2003/2005), not a server that answered "too many connections" or
    /// "starting up", which may let the next connection in.
    pub fn host_unreachable(&self) -> bool {
        self.kind == ErrKind::Unreachable
            && (self.code.is_empty() || matches!(self.code.as_str(), "2002" | "2003" | "2005"))
    }
}

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.code.is_empty() {
            write!(f, "error ({})", self.message)
        } else {
            write!(f, "error {} ({})", self.code, self.message)
        }
    }
}

impl std::error::Error for SqlError {}

/// How to break one blocking operation (a connection's call blocked on the server, a running
/// command) from another thread: what [`crate::db::interrupt`] keeps for a stop request.
pub struct Interrupter(Box<dyn Fn() + Send + Sync>);

impl Interrupter {
    pub fn new(f: impl Fn() + Send + Sync + 'static) -> Interrupter {
        Interrupter(Box::new(f))
    }

    /// Breaks the operation (idempotent: a second call does no harm).
    pub fn interrupt(&self) {
        (self.0)()
    }
}

/// One row of an OLTP table for [`Connection::load`], reused between rows.
#[derive(Clone, Debug, Default)]
pub struct DataRow {
    pub id: i64,
    pub k: i64,
    pub c: String,
    pub pad: String,
}

/// The answer to an admin query: column names and rows, every value as text (`None`: NULL).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Option<String>>>,
}

/// Where [`Connection::query_each`] hands a text query's result as the client reads it, value
/// by value: nothing of it is kept unless the sink keeps it.
pub trait RowSink {
    /// The result's column names, once, before its rows (also for a result without rows).
    fn columns(&mut self, names: &[String]);

    /// The next value of the current row: the server's text of it (`None`: NULL).
    fn value(&mut self, value: Option<&[u8]>);

    /// The end of a row. `false` stops the reading: the client fails the query and drops
    /// the connection (the rest of the answer is not read).
    fn end_row(&mut self) -> bool;
}

/// The sink of [`Connection::query_table`]: every value as text, at most [`MAX_ADMIN_ROWS`]
/// rows and `max_bytes` bytes of values, so that a server that never ends its result set is
/// an error, not a client that grows until it aborts.
#[derive(Debug, Default)]
pub struct Collect {
    pub table: Table,
    row: Vec<Option<String>>,
    bytes: usize,
    max_bytes: usize,
}

impl Collect {
    pub fn admin(max_bytes: usize) -> Collect {
        Collect {
            max_bytes,
            ..Collect::default()
        }
    }
}

impl RowSink for Collect {
    fn columns(&mut self, names: &[String]) {
        if self.table.columns.is_empty() {
            self.table.columns = names.to_vec();
        }
    }

    fn value(&mut self, value: Option<&[u8]>) {
        self.bytes += value.map_or(0, <[u8]>::len);
        self.row
            .push(value.map(|v| String::from_utf8_lossy(v).into_owned()));
    }

    fn end_row(&mut self) -> bool {
        if self.table.rows.len() >= MAX_ADMIN_ROWS || self.bytes > self.max_bytes {
            return false;
        }
        self.table.rows.push(std::mem::take(&mut self.row));
        true
    }
}

/// The sink that keeps every row of a result into a [`Fetched`] (its [`Fetched::all`]
/// mode): values pushed one after the other, rows counted.
pub struct KeepAll<'a>(pub &'a mut Fetched);

impl RowSink for KeepAll<'_> {
    fn columns(&mut self, names: &[String]) {
        if self.0.columns.is_empty() {
            self.0.columns = names.to_vec();
        }
    }

    fn value(&mut self, value: Option<&[u8]>) {
        self.0
            .first
            .push(value.map(|v| String::from_utf8_lossy(v).into_owned()));
    }

    fn end_row(&mut self) -> bool {
        self.0.rows += 1;
        true
    }
}

/// What [`Connection::execute_fetch`] and [`Connection::query_fetch`] keep of a result: the
/// number of rows and, when asked for, the column names and the first row as text. Reused
/// between calls (cleared by the call).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fetched {
    /// Rows returned (0 for a statement without a result set).
    pub rows: u64,
    /// The result's column names (only when the first row was asked for).
    pub columns: Vec<String>,
    /// The first row, each value as text (`None`: NULL); empty when not asked for or no row.
    /// With [`Fetched::all`], every row, one after the other (`columns.len()` values each).
    pub first: Vec<Option<String>>,
    /// Set by the caller (a call leaves it as it is): when the first row is asked for, keep
    /// every row in `first` (a custom workload's `for_each_row`, #31).
    pub all: bool,
}

impl Fetched {
    pub fn clear(&mut self) {
        self.rows = 0;
        self.columns.clear();
        self.first.clear();
    }

    /// Whether a call that asked for the first row keeps the row it is reading: the first,
    /// or any with [`Fetched::all`].
    pub fn keeps_row(&self) -> bool {
        self.rows == 0 || self.all
    }

    /// The first row's value of column `name` (case-insensitive), `None` when there is no row,
    /// no such column or the value is NULL.
    pub fn value(&self, name: &str) -> Option<&str> {
        let i = self
            .columns
            .iter()
            .position(|c| c.eq_ignore_ascii_case(name))?;
        self.first.get(i)?.as_deref()
    }
}

/// One value of a row for [`Connection::load_rows`], reused between rows.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Cell {
    #[default]
    Null,
    Int(i64),
    Float(f64),
    Text(String),
}

impl Cell {
    pub fn param(&self) -> P<'_> {
        match self {
            Cell::Null => P::Null,
            Cell::Int(i) => P::Int(*i),
            Cell::Float(f) => P::Float(*f),
            Cell::Text(s) => P::Str(s),
        }
    }
}

/// Most placeholders one multi-row INSERT of [`Connection::load_rows`]'s default gets (below
/// SQLite's 32,766 and the 65,535 of MySQL's and PostgreSQL's protocols).
const LOAD_PLACEHOLDERS: usize = 30_000;

/// Most rows one multi-row INSERT of [`Connection::load_rows`]'s default gets.
const LOAD_BATCH_ROWS: usize = 500;

/// One open connection. Not shared: a worker thread owns it.
pub trait Connection {
    /// Prepares `sql` (with `?` placeholders) on the server; the id is valid until the
    /// connection closes.
    fn prepare(&mut self, sql: &str) -> Result<StmtId, SqlError>;

    /// Runs a prepared statement, draining its result.
    fn execute(&mut self, stmt: StmtId, params: &[P<'_>]) -> Result<Done, SqlError>;

    /// Runs a plain text statement (no parameters), draining its result.
    fn query(&mut self, sql: &str) -> Result<Done, SqlError>;

    /// The first column of the first row as an integer (`None` for no row or NULL).
    fn query_i64(&mut self, sql: &str) -> Result<Option<i64>, SqlError>;

    /// Loads rows into `table` as fast as the driver can (multi-row INSERT, COPY, or one
    /// transaction of prepared inserts). `fill` writes the next row and returns false when
    /// there are no more; `with_id` says whether the `id` column is sent (else the server
    /// assigns it). Returns early, without error, when `fill` says so after `stop`.
    fn load(
        &mut self,
        table: &str,
        with_id: bool,
        fill: &mut dyn FnMut(&mut DataRow) -> bool,
    ) -> Result<(), SqlError>;

    /// Runs a prepared statement and keeps what `out` holds of its result: the row count, and
    /// with `first` the column names and the first row as text (custom workloads' `capture`
    /// and `expect_rows`).
    fn execute_fetch(
        &mut self,
        stmt: StmtId,
        params: &[P<'_>],
        first: bool,
        out: &mut Fetched,
    ) -> Result<Done, SqlError> {
        let _ = (stmt, params, first, out);
        Err(SqlError::client(
            "this client cannot read the rows of a prepared statement",
            ErrKind::Other,
        ))
    }

    /// [`Connection::execute_fetch`] for a text statement.
    fn query_fetch(&mut self, sql: &str, first: bool, out: &mut Fetched) -> Result<Done, SqlError> {
        out.clear();
        let table = self.query_table(sql)?;
        out.rows = table.rows.len() as u64;
        if first {
            out.columns = table.columns;
            if let Some(row) = table.rows.into_iter().next() {
                out.first = row;
            }
        }
        Ok(Done {
            rows: true,
            affected: 0,
        })
    }

    /// Loads rows of any shape into `table` (custom workloads' data): `fill` writes the next
    /// row's values (one [`Cell`] per column of `columns`, the vector already that long) and
    /// returns false when there are no more. Returns the rows loaded. The default sends
    /// prepared multi-row INSERTs; drivers with a faster path (COPY) override it.
    fn load_rows(
        &mut self,
        table: &str,
        columns: &[String],
        fill: &mut dyn FnMut(&mut [Cell]) -> bool,
    ) -> Result<u64, SqlError> {
        let width = columns.len().max(1);
        let batch = (LOAD_PLACEHOLDERS / width).clamp(1, LOAD_BATCH_ROWS);
        let insert = |rows: usize| {
            let one = format!("({})", vec!["?"; columns.len()].join(", "));
            format!(
                "INSERT INTO {table} ({}) VALUES {}",
                columns.join(", "),
                vec![one.as_str(); rows].join(", ")
            )
        };
        let full = self.prepare(&insert(batch))?;
        let mut cells: Vec<Cell> = Vec::with_capacity(batch * columns.len());
        let mut row = vec![Cell::Null; columns.len()];
        let mut loaded = 0u64;
        let mut more = true;
        while more {
            cells.clear();
            let mut n = 0;
            while n < batch {
                if !fill(&mut row) {
                    more = false;
                    break;
                }
                cells.extend(row.iter().cloned());
                n += 1;
            }
            if n == 0 {
                break;
            }
            let params: Vec<P<'_>> = cells.iter().map(Cell::param).collect();
            if n == batch {
                self.execute(full, &params)?;
            } else {
                let last = self.prepare(&insert(n))?;
                self.execute(last, &params)?;
            }
            loaded += n as u64;
        }
        Ok(loaded)
    }

    /// Every row of a text query, each column as text (`None` for NULL). For the admin
    /// work around a run (server variables), never on the measured path.
    fn query_rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, SqlError> {
        let _ = sql;
        Err(SqlError::client(
            "this driver cannot read result rows",
            ErrKind::Other,
        ))
    }

    /// [`Connection::query_rows`] with the names of the result's columns, for admin queries
    /// that pick a column by name (`SHOW GLOBAL VARIABLES`'s `Value`). The default has no
    /// names (an empty list): a driver that cannot read them says so to whoever needs one.
    fn query_table(&mut self, sql: &str) -> Result<Table, SqlError> {
        Ok(Table {
            columns: Vec::new(),
            rows: self.query_rows(sql)?,
        })
    }

    /// Runs a text query and hands its result to `sink` as it is read, without a bound on its
    /// rows: for the result sets of scripts (`con:query()`), which keep what they keep.
    /// `Done::rows` says whether a result set came (the sink's `columns` was called). The
    /// default goes through [`Connection::query_table`], bounded as that is.
    fn query_each(&mut self, sql: &str, sink: &mut dyn RowSink) -> Result<Done, SqlError> {
        let table = self.query_table(sql)?;
        let rows = !table.columns.is_empty() || !table.rows.is_empty();
        if rows {
            sink.columns(&table.columns);
        }
        for row in &table.rows {
            for v in row {
                sink.value(v.as_deref().map(str::as_bytes));
            }
            if !sink.end_row() {
                break;
            }
        }
        Ok(Done { rows, affected: 0 })
    }

    /// How to break a call of this connection that blocks, from another thread (a stop
    /// request: [`crate::db::interrupt`]); `None` when the driver cannot. The connection is
    /// unusable afterwards.
    fn interrupter(&self) -> Option<Interrupter> {
        None
    }

    /// How to cancel, from another thread, the statement this connection has running on the
    /// server (`KILL QUERY`, a cancel request, `sqlite3_interrupt`), leaving the connection
    /// usable: the statement fails with the server's "cancelled" error. Blocks the caller for
    /// at most the target's `connect_timeout` plus one round trip; `None` when the driver
    /// cannot.
    fn canceller(&self) -> Option<Interrupter> {
        None
    }

    /// Whether a transaction is open on the connection, as far as the client knows for sure
    /// (PostgreSQL's ReadyForQuery status, SQLite's autocommit flag); `None` when it cannot
    /// tell (MySQL: an error packet does not say). A retried event rolls back unless this says
    /// `Some(false)`.
    fn in_transaction(&self) -> Option<bool> {
        None
    }

    /// The server's version string as the client read it while connecting (MySQL's
    /// handshake), without a query; `None` when the client did not keep one. What a
    /// [`crate::db::flavor`] is first told from.
    fn server_version(&self) -> Option<String> {
        None
    }

    /// Closes the connection politely (errors do not matter any more).
    fn close(self: Box<Self>);
}

#[cfg(test)]
mod host_unreachable_tests {
    use super::*;

    #[test]
    fn only_the_clients_own_connect_failures_mean_the_host_is_unreachable() {
        let client = SqlError::client("timed out", ErrKind::Unreachable);
        let refused = SqlError::new("2003", "Can't connect", ErrKind::Unreachable);
        // The server answered: the next connection may get in.
        let too_many = SqlError::new("1040", "Too many connections", ErrKind::Unreachable);
        let starting = SqlError::new("57P03", "starting up", ErrKind::Unreachable);
        let lost = SqlError::client("reset", ErrKind::Lost);
        assert!(client.host_unreachable() && refused.host_unreachable());
        assert!(!too_many.host_unreachable() && !starting.host_unreachable());
        assert!(!lost.host_unreachable());
    }
}
