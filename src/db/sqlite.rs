//! Embedded SQLite through `rusqlite` (bundled: nothing to install): the zero-setup target.
//!
//! A worker's connection is a plain `rusqlite::Connection` on the worker's own OS thread, so
//! SQLite's blocking calls (and its busy handler's sleeps) never stall an async runtime.
//!
//! Why it is shaped this way:
//! * Statements are prepared through rusqlite's per-connection statement cache, keyed by their
//!   text: a `Statement<'conn>` cannot live next to its connection in one struct, and the
//!   cache lookup (one hash of a short string) is small next to SQLite's own work per step.
//!   Text statements other than transaction control are prepared uncached, so the literal SQL
//!   of `ps_mode = "disable"` never evicts the prepared ones.
//! * `affected` is the change in `total_changes()` across the statement: `changes()` keeps
//!   the count of the last INSERT/UPDATE/DELETE, so a BEGIN or COMMIT would look like a write.
//! * `path = ":memory:"` is one database shared by every connection of the process (workers,
//!   prepare, run and cleanup of one suite): SQLite's `memdb` VFS with a process-unique name,
//!   kept alive by one connection held in [`MEMORY`] until the process exits. memdb uses
//!   ordinary file locking, so writers wait through `busy_timeout` as with a file, unlike
//!   shared-cache mode's SQLITE_LOCKED.
//! * Error codes are the primary result code names (`SQLITE_BUSY`), the names users write in
//!   `ignore_errors`.
//!
//! The dialect ([`SqliteDialect`]) is a file database's: no server (no port, no variants, no
//! limits), the file and its pragmas as `[target]` settings, sysbench's schema with SQLite's
//! `INTEGER PRIMARY KEY` as the rowid, one writer at a time (`BEGIN IMMEDIATE` for scripts
//! that write, one loader thread), and the default file removed by a cleanup that empties it.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::{OpenFlags, Statement};

use crate::db::conn::{
    Cell, Collect, Connection, DataRow, Done, ErrKind, Fetched, P, RowSink, SqlError, StmtId, Table,
};
use crate::db::dialect::{Dialect, FileDbError, TableSpec};
use crate::db::sql_text::{Strings, Syntax};
use crate::db::target::{
    DEFAULT_SQLITE_PATH, DbError, MAX_ADMIN_ROWS, RawTarget, SqliteOptions, Target,
};

/// The `path` that means one in-memory database shared by the process.
pub const MEMORY_PATH: &str = ":memory:";

/// The connection that keeps the shared in-memory database alive, and its URI.
static MEMORY: Mutex<Option<(String, rusqlite::Connection)>> = Mutex::new(None);

/// Prepared statements a connection keeps: more than any workload prepares (tables × 9 + a
/// few), so the cache never evicts a statement the engine still uses.
const STMT_CACHE: usize = 1 << 16;

/// Text statements worth keeping prepared: every transactional event sends them.
const CACHED_TEXT: &[&str] = &["BEGIN", "BEGIN IMMEDIATE", "COMMIT", "ROLLBACK"];

/// The name of SQLite's primary result code `code` (the low byte of an extended code).
pub fn code_name(code: i32) -> &'static str {
    match code & 0xff {
        1 => "SQLITE_ERROR",
        2 => "SQLITE_INTERNAL",
        3 => "SQLITE_PERM",
        4 => "SQLITE_ABORT",
        5 => "SQLITE_BUSY",
        6 => "SQLITE_LOCKED",
        7 => "SQLITE_NOMEM",
        8 => "SQLITE_READONLY",
        9 => "SQLITE_INTERRUPT",
        10 => "SQLITE_IOERR",
        11 => "SQLITE_CORRUPT",
        12 => "SQLITE_NOTFOUND",
        13 => "SQLITE_FULL",
        14 => "SQLITE_CANTOPEN",
        15 => "SQLITE_PROTOCOL",
        16 => "SQLITE_EMPTY",
        17 => "SQLITE_SCHEMA",
        18 => "SQLITE_TOOBIG",
        19 => "SQLITE_CONSTRAINT",
        20 => "SQLITE_MISMATCH",
        21 => "SQLITE_MISUSE",
        22 => "SQLITE_NOLFS",
        23 => "SQLITE_AUTH",
        24 => "SQLITE_FORMAT",
        25 => "SQLITE_RANGE",
        26 => "SQLITE_NOTADB",
        27 => "SQLITE_NOTICE",
        28 => "SQLITE_WARNING",
        _ => "SQLITE_UNKNOWN",
    }
}

/// A rusqlite error as the engines see it: the primary result code name, SQLite's message,
/// and a missing or existing table recognised from that message (SQLite reports both as
/// SQLITE_ERROR).
pub fn sql_error(e: &rusqlite::Error) -> SqlError {
    // A statement that fails to prepare comes as SqlInputError (message and offset), one that
    // fails to run as SqliteFailure.
    let failure = match e {
        rusqlite::Error::SqliteFailure(f, msg) => {
            Some((f, msg.clone().unwrap_or_else(|| f.to_string())))
        }
        rusqlite::Error::SqlInputError { error, msg, .. } => Some((error, msg.clone())),
        _ => None,
    };
    match failure {
        Some((f, message)) => {
            let kind = if message.starts_with("no such table") {
                ErrKind::NoTable
            } else if message.contains("already exists") {
                ErrKind::TableExists
            } else {
                ErrKind::Other
            };
            SqlError::new(code_name(f.extended_code), message, kind)
        }
        None => SqlError::client(e.to_string(), ErrKind::Other),
    }
}

fn err(e: rusqlite::Error) -> SqlError {
    sql_error(&e)
}

/// What `rusqlite` opens for the target: the URI of the shared in-memory database (created
/// and pinned on first use), or the path as written (a `file:` URI works too).
fn location(t: &Target) -> Result<String, SqlError> {
    if t.sqlite.path != MEMORY_PATH {
        return Ok(t.sqlite.path.clone());
    }
    let mut memory = MEMORY.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((uri, _)) = memory.as_ref() {
        return Ok(uri.clone());
    }
    let uri = format!("file:/sbsuite-{}?vfs=memdb", std::process::id());
    let keeper = rusqlite::Connection::open_with_flags(&uri, flags()).map_err(err)?;
    *memory = Some((uri.clone(), keeper));
    Ok(uri)
}

fn flags() -> OpenFlags {
    OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
}

/// How long a connection's setup (pragmas, preparing statements) waits for a lock.
const SETUP_BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Opens a connection to the target's database (created when missing) with its pragmas.
pub fn open(t: &Target) -> Result<Box<dyn Connection>, SqlError> {
    let memory = t.sqlite.path == MEMORY_PATH;
    let mut conn = rusqlite::Connection::open_with_flags(location(t)?, flags()).map_err(err)?;
    conn.set_prepared_statement_cache_capacity(STMT_CACHE);
    // Setting up is not measured: the pragmas wait for a lock at least SETUP_BUSY_TIMEOUT
    // even when the target asks for a shorter busy_timeout (0 makes every concurrent open of
    // a file in use fail at once), and the run's own timeout is set at the end.
    conn.busy_timeout(t.sqlite.busy_timeout.max(SETUP_BUSY_TIMEOUT))
        .map_err(err)?;
    // memdb keeps its journal in memory whatever is asked (it has no WAL), so the mode only
    // applies to files, where SQLite answers with the mode it really uses.
    if !memory {
        let want = &t.sqlite.journal_mode;
        let got: String = conn
            .query_row(&format!("PRAGMA journal_mode = {want}"), [], |r| r.get(0))
            .map_err(err)?;
        if !got.eq_ignore_ascii_case(want) {
            return Err(SqlError::client(
                format!(
                    "[target] journal_mode = \"{want}\": SQLite keeps \"{got}\" for {} (WAL needs a local filesystem with shared memory): choose journal_mode = \"{got}\" or another path",
                    t.sqlite.path
                ),
                ErrKind::Other,
            ));
        }
    }
    conn.execute_batch(&format!("PRAGMA synchronous = {}", t.sqlite.synchronous))
        .map_err(err)?;
    conn.busy_timeout(t.sqlite.busy_timeout).map_err(err)?;
    let clock = t.limits.query_timeout.map(|limit| {
        let clock = Arc::new(Clock {
            base: Instant::now(),
            limit,
            deadline: AtomicU64::new(u64::MAX),
        });
        let watch = Arc::clone(&clock);
        conn.progress_handler(PROGRESS_OPS, Some(move || watch.expired()))
            .map(|()| clock)
    });
    let clock = clock.transpose().map_err(err)?;
    Ok(Box::new(SqliteConnection {
        conn,
        stmts: Vec::new(),
        clock,
    }))
}

/// SQLite virtual machine instructions between two looks at the clock: about a millisecond
/// of work, so a statement past `query_timeout` ends within milliseconds of it, and the look
/// costs nothing measurable.
const PROGRESS_OPS: i32 = 100_000;

/// `query_timeout` for SQLite, which has no statement timeout of its own: each call arms a
/// deadline, and the progress handler interrupts a statement that runs past it (a recursive
/// CTE that never ends, a check over a huge join) with SQLITE_INTERRUPT.
struct Clock {
    base: Instant,
    limit: Duration,
    /// Nanoseconds after `base` at which the statement under way is interrupted.
    deadline: AtomicU64,
}

impl Clock {
    fn arm(&self) {
        let at = (self.base.elapsed() + self.limit).as_nanos();
        self.deadline
            .store(u64::try_from(at).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    fn expired(&self) -> bool {
        let now = u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX);
        now >= self.deadline.load(Ordering::Relaxed)
    }
}

/// One connection and the texts of its prepared statements (the cache's keys).
struct SqliteConnection {
    conn: rusqlite::Connection,
    stmts: Vec<String>,
    /// `query_timeout`, when the target has one.
    clock: Option<Arc<Clock>>,
}

impl SqliteConnection {
    /// Prepared statement `stmt` (from the connection's cache).
    fn prepared(&self, stmt: StmtId) -> Result<rusqlite::CachedStatement<'_>, SqlError> {
        let sql = self.stmts.get(stmt).ok_or_else(|| {
            SqlError::client(format!("no prepared statement {stmt}"), ErrKind::Other)
        })?;
        self.conn.prepare_cached(sql).map_err(err)
    }

    /// Runs one call under `query_timeout`: armed before, and its error named after it.
    #[inline]
    fn timed_call<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, SqlError>,
    ) -> Result<T, SqlError> {
        self.arm();
        let r = f(self);
        r.map_err(|e| self.timed(e))
    }

    /// Starts a call's `query_timeout`.
    #[inline]
    fn arm(&self) {
        if let Some(c) = &self.clock {
            c.arm();
        }
    }

    /// No deadline for a bulk load (its statements are many; each is a batch, not a
    /// statement of the user's).
    fn disarm(&self) {
        if let Some(c) = &self.clock {
            c.deadline.store(u64::MAX, Ordering::Relaxed);
        }
    }

    /// A call's error, naming `query_timeout` when that is what interrupted it.
    fn timed(&self, e: SqlError) -> SqlError {
        match &self.clock {
            Some(c) if e.code == "SQLITE_INTERRUPT" && c.expired() => SqlError::new(
                e.code,
                format!(
                    "the statement did not finish within query_timeout = {} s (raise [target] query_timeout, or 0 for no limit)",
                    c.limit.as_secs()
                ),
                ErrKind::Other,
            ),
            _ => e,
        }
    }
}

/// Binds `params` to `stmt` (1-based).
fn bind(stmt: &mut Statement<'_>, params: &[P<'_>]) -> Result<(), SqlError> {
    for (i, p) in params.iter().enumerate() {
        match *p {
            P::Int(v) => stmt.raw_bind_parameter(i + 1, v),
            P::Str(s) => stmt.raw_bind_parameter(i + 1, s),
            P::Float(f) => stmt.raw_bind_parameter(i + 1, f),
            P::Null => stmt.raw_bind_parameter(i + 1, rusqlite::types::Null),
        }
        .map_err(err)?;
    }
    Ok(())
}

/// Binds `params` to `stmt` (1-based), runs it to the end without reading any column, and
/// says what it did. `before` is `conn.total_changes()` before the call.
fn run(
    conn: &rusqlite::Connection,
    stmt: &mut Statement<'_>,
    params: &[P<'_>],
    before: u64,
) -> Result<Done, SqlError> {
    bind(stmt, params)?;
    let rows = stmt.column_count() > 0;
    let mut cursor = stmt.raw_query();
    while cursor.next().map_err(err)?.is_some() {}
    drop(cursor);
    let after = conn.total_changes();
    Ok(Done {
        rows,
        affected: if rows {
            0
        } else {
            after.saturating_sub(before)
        },
    })
}

/// [`run`] that keeps what `out` asks for: the rows counted, with `first` the column names
/// and the first row as text ([`value_text`]).
fn fetch(
    conn: &rusqlite::Connection,
    stmt: &mut Statement<'_>,
    params: &[P<'_>],
    before: u64,
    first: bool,
    out: &mut Fetched,
) -> Result<Done, SqlError> {
    out.clear();
    bind(stmt, params)?;
    let columns = stmt.column_count();
    if first {
        out.columns = stmt.column_names().map(str::to_string).collect();
    }
    let mut cursor = stmt.raw_query();
    while let Some(row) = cursor.next().map_err(err)? {
        if first && out.keeps_row() {
            for i in 0..columns {
                out.first
                    .push(value_text(conn, row.get_ref(i).map_err(err)?)?);
            }
        }
        out.rows += 1;
    }
    drop(cursor);
    let after = conn.total_changes();
    Ok(Done {
        rows: columns > 0,
        affected: if columns > 0 {
            0
        } else {
            after.saturating_sub(before)
        },
    })
}

/// A value as SQLite's own text of it (`CAST(x AS TEXT)`): integers in decimal, reals as
/// SQLite writes them (asked from SQLite itself: its float-to-text rules, `%!.17g` with
/// round-trip shortening, change between versions), text as is, blobs as their bytes read as
/// UTF-8; `None` for NULL.
fn value_text(
    conn: &rusqlite::Connection,
    v: rusqlite::types::ValueRef<'_>,
) -> Result<Option<String>, SqlError> {
    use rusqlite::types::ValueRef;
    Ok(Some(match v {
        ValueRef::Null => return Ok(None),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(f) => conn
            .prepare_cached("SELECT CAST(?1 AS TEXT)")
            .and_then(|mut s| s.query_row([f], |r| r.get(0)))
            .map_err(err)?,
        ValueRef::Text(t) | ValueRef::Blob(t) => String::from_utf8_lossy(t).into_owned(),
    }))
}

impl Connection for SqliteConnection {
    /// `sqlite3_interrupt`: a running statement (a long `CREATE INDEX`, a big load) stops
    /// with `SQLITE_INTERRUPT`.
    fn interrupter(&self) -> Option<crate::db::interrupt::Interrupter> {
        self.canceller()
    }

    /// `sqlite3_interrupt`, as [`Connection::interrupter`]: the connection stays usable.
    fn canceller(&self) -> Option<crate::db::interrupt::Interrupter> {
        let handle = self.conn.get_interrupt_handle();
        Some(crate::db::interrupt::Interrupter::new(move || {
            handle.interrupt()
        }))
    }

    fn in_transaction(&self) -> Option<bool> {
        Some(!self.conn.is_autocommit())
    }

    fn prepare(&mut self, sql: &str) -> Result<StmtId, SqlError> {
        // Prepared now so that a bad statement fails here, then kept in the cache. Reading the
        // schema can meet a lock (another connection's checkpoint or journal mode change); a
        // worker's setup is not measured, so it waits up to SETUP_BUSY_TIMEOUT whatever the
        // run's busy_timeout.
        let start = std::time::Instant::now();
        loop {
            match self.conn.prepare_cached(sql) {
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy
                        && start.elapsed() < SETUP_BUSY_TIMEOUT =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                r => {
                    r.map_err(err)?;
                    break;
                }
            }
        }
        self.stmts.push(sql.to_string());
        Ok(self.stmts.len() - 1)
    }

    fn execute(&mut self, stmt: StmtId, params: &[P<'_>]) -> Result<Done, SqlError> {
        self.timed_call(|c| {
            let before = c.conn.total_changes();
            let mut s = c.prepared(stmt)?;
            run(&c.conn, &mut s, params, before)
        })
    }

    fn execute_fetch(
        &mut self,
        stmt: StmtId,
        params: &[P<'_>],
        first: bool,
        out: &mut Fetched,
    ) -> Result<Done, SqlError> {
        self.timed_call(|c| {
            let before = c.conn.total_changes();
            let mut s = c.prepared(stmt)?;
            fetch(&c.conn, &mut s, params, before, first, out)
        })
    }

    fn query_fetch(&mut self, sql: &str, first: bool, out: &mut Fetched) -> Result<Done, SqlError> {
        self.timed_call(|c| {
            let before = c.conn.total_changes();
            let mut s = c.conn.prepare(sql).map_err(err)?;
            fetch(&c.conn, &mut s, &[], before, first, out)
        })
    }

    fn query(&mut self, sql: &str) -> Result<Done, SqlError> {
        self.timed_call(|c| {
            let before = c.conn.total_changes();
            if CACHED_TEXT.contains(&sql) {
                let mut s = c.conn.prepare_cached(sql).map_err(err)?;
                run(&c.conn, &mut s, &[], before)
            } else {
                let mut s = c.conn.prepare(sql).map_err(err)?;
                run(&c.conn, &mut s, &[], before)
            }
        })
    }

    fn query_i64(&mut self, sql: &str) -> Result<Option<i64>, SqlError> {
        self.timed_call(|c| {
            let mut s = c.conn.prepare(sql).map_err(err)?;
            let mut rows = s.raw_query();
            match rows.next().map_err(err)? {
                Some(row) => row.get::<_, Option<i64>>(0).map_err(err),
                None => Ok(None),
            }
        })
    }

    fn load(
        &mut self,
        table: &str,
        with_id: bool,
        fill: &mut dyn FnMut(&mut DataRow) -> bool,
    ) -> Result<(), SqlError> {
        self.disarm();
        let sql = if with_id {
            format!("INSERT INTO {table}(id, k, c, pad) VALUES (?, ?, ?, ?)")
        } else {
            format!("INSERT INTO {table}(k, c, pad) VALUES (?, ?, ?)")
        };
        // One transaction: SQLite syncs once at COMMIT instead of once per row.
        self.conn.execute_batch("BEGIN IMMEDIATE").map_err(err)?;
        let r = (|| {
            let mut s = self.conn.prepare(&sql).map_err(err)?;
            let mut r = DataRow::default();
            while fill(&mut r) {
                let mut i = 1;
                if with_id {
                    s.raw_bind_parameter(1, r.id).map_err(err)?;
                    i = 2;
                }
                s.raw_bind_parameter(i, r.k).map_err(err)?;
                s.raw_bind_parameter(i + 1, r.c.as_str()).map_err(err)?;
                s.raw_bind_parameter(i + 2, r.pad.as_str()).map_err(err)?;
                s.raw_execute().map_err(err)?;
            }
            Ok(())
        })();
        match r {
            Ok(()) => self.conn.execute_batch("COMMIT").map_err(err),
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// One transaction (`BEGIN IMMEDIATE` … `COMMIT`: one sync instead of one per row) of
    /// prepared multi-row INSERTs of [`LOAD_ROWS`] rows (fewer for wide rows, within SQLite's
    /// 32,766 parameters), the last rows through a statement of their own.
    fn load_rows(
        &mut self,
        table: &str,
        columns: &[String],
        fill: &mut dyn FnMut(&mut [Cell]) -> bool,
    ) -> Result<u64, SqlError> {
        self.disarm();
        let width = columns.len().max(1);
        let batch = (32_000 / width).clamp(1, LOAD_ROWS);
        let insert = |rows: usize| {
            let one = format!("({})", vec!["?"; columns.len()].join(","));
            format!(
                "INSERT INTO {table} ({}) VALUES {}",
                columns.join(", "),
                vec![one.as_str(); rows].join(",")
            )
        };
        self.conn.execute_batch("BEGIN IMMEDIATE").map_err(err)?;
        let r = (|| {
            let mut full = self.conn.prepare(&insert(batch)).map_err(err)?;
            let mut cells = vec![Cell::Null; batch * columns.len()];
            let mut loaded = 0u64;
            loop {
                let mut n = 0;
                while n < batch && fill(&mut cells[n * columns.len()..(n + 1) * columns.len()]) {
                    n += 1;
                }
                if n == 0 {
                    return Ok(loaded);
                }
                let bind = |s: &mut Statement<'_>| -> Result<(), SqlError> {
                    for (i, c) in cells[..n * columns.len()].iter().enumerate() {
                        match c {
                            Cell::Null => s.raw_bind_parameter(i + 1, rusqlite::types::Null),
                            Cell::Int(v) => s.raw_bind_parameter(i + 1, *v),
                            Cell::Float(f) => s.raw_bind_parameter(i + 1, *f),
                            Cell::Text(t) => s.raw_bind_parameter(i + 1, t.as_str()),
                        }
                        .map_err(err)?;
                    }
                    s.raw_execute().map_err(err)?;
                    Ok(())
                };
                loaded += n as u64;
                if n == batch {
                    bind(&mut full)?;
                } else {
                    let mut last = self.conn.prepare(&insert(n)).map_err(err)?;
                    bind(&mut last)?;
                    return Ok(loaded);
                }
            }
        })();
        match r {
            Ok(n) => self.conn.execute_batch("COMMIT").map_err(err).map(|()| n),
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    fn query_rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, SqlError> {
        Ok(self.query_table(sql)?.rows)
    }

    /// Every row as text, at most [`MAX_ADMIN_ROWS`].
    fn query_table(&mut self, sql: &str) -> Result<Table, SqlError> {
        let mut kept = Collect::admin(usize::MAX);
        self.query_each(sql, &mut kept)?;
        Ok(kept.table)
    }

    /// Values as text: integers and reals as SQLite prints them, text and blobs as stored,
    /// NULL as `None`.
    fn query_each(&mut self, sql: &str, sink: &mut dyn RowSink) -> Result<Done, SqlError> {
        self.timed_call(|c| {
            use rusqlite::types::ValueRef;
            let mut s = c.conn.prepare(sql).map_err(err)?;
            let columns: Vec<String> = s.column_names().map(str::to_string).collect();
            let width = columns.len();
            if width > 0 {
                sink.columns(&columns);
            }
            let mut cursor = s.raw_query();
            let mut number = String::new();
            while let Some(row) = cursor.next().map_err(err)? {
                for i in 0..width {
                    number.clear();
                    match row.get_ref(i).map_err(err)? {
                        ValueRef::Null => sink.value(None),
                        ValueRef::Integer(v) => {
                            let _ = write!(number, "{v}");
                            sink.value(Some(number.as_bytes()));
                        }
                        ValueRef::Real(f) => {
                            let _ = write!(number, "{f}");
                            sink.value(Some(number.as_bytes()));
                        }
                        ValueRef::Text(t) | ValueRef::Blob(t) => sink.value(Some(t)),
                    }
                }
                if !sink.end_row() {
                    return Err(SqlError::client(
                        format!("the answer to `{sql}` has more than {MAX_ADMIN_ROWS} rows"),
                        ErrKind::Other,
                    ));
                }
            }
            drop(cursor);
            Ok(Done {
                rows: width > 0,
                affected: if width > 0 { 0 } else { c.conn.changes() },
            })
        })
    }

    fn close(self: Box<Self>) {
        // Finalizes the cached statements, then closes; a failure changes nothing measured.
        let _ = self.conn.close();
    }
}

/// Rows per prepared INSERT of [`SqliteConnection::load_rows`].
const LOAD_ROWS: usize = 100;

/// Whether the target's database is there to run against (a missing file would be created
/// empty by opening it). `:memory:` and `file:` URIs are taken as present.
pub fn exists(t: &Target) -> bool {
    let p = &t.sqlite.path;
    p == MEMORY_PATH || p.starts_with("file:") || std::path::Path::new(p).exists()
}

/// After a cleanup: deletes the default database file ([`DEFAULT_SQLITE_PATH`], the one
/// a suite without `[target]` creates by itself) when no table, index or view of its own is left
/// in it (SQLite's internal `sqlite_sequence` does not count),
/// with its `-wal` and `-shm` files. Returns whether it did. A path the user chose is the
/// user's file and stays.
pub fn remove_default_if_empty(t: &Target) -> Result<bool, SqlError> {
    let path = &t.sqlite.path;
    if path != DEFAULT_SQLITE_PATH || !std::path::Path::new(path).exists() {
        return Ok(false);
    }
    let conn = rusqlite::Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(err)?;
    conn.busy_timeout(t.sqlite.busy_timeout).map_err(err)?;
    let objects: i64 = conn
        // sqlite_sequence (AUTOINCREMENT's counters) outlives the dropped tables.
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
            [],
            |r| r.get(0),
        )
        .map_err(err)?;
    // Closing the last connection checkpoints the WAL and removes -wal and -shm.
    conn.close().map_err(|(_, e)| err(e))?;
    if objects > 0 {
        return Ok(false);
    }
    for file in [path.clone(), format!("{path}-wal"), format!("{path}-shm")] {
        match std::fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(SqlError::client(
                    format!("cannot remove {file}: {e}"),
                    ErrKind::Other,
                ));
            }
        }
    }
    Ok(true)
}

/// The `journal_mode` values SQLite knows.
const JOURNAL_MODES: &[&str] = &["wal", "delete", "truncate", "persist", "memory", "off"];
/// The `synchronous` values SQLite knows.
const SYNCHRONOUS: &[&str] = &["off", "normal", "full", "extra"];

/// SQLite's SQL and file handling.
pub struct SqliteDialect;

impl Dialect for SqliteDialect {
    /// `SQLITE_MAX_VARIABLE_NUMBER`'s default since SQLite 3.32.
    fn max_params(&self) -> usize {
        32_766
    }

    fn open(&self, t: &Target, _n: usize) -> Result<Box<dyn Connection>, SqlError> {
        open(t)
    }

    /// No port: the database is a file.
    fn default_port(&self) -> u16 {
        0
    }

    /// A primary result code name (`SQLITE_BUSY`).
    fn is_error_code(&self, code: &str) -> bool {
        let up = code.to_ascii_uppercase();
        up.starts_with("SQLITE_") && up[7..].chars().all(|c| c.is_ascii_alphabetic() || c == '_')
    }

    fn file_options(&self, raw: &RawTarget) -> Result<SqliteOptions, DbError> {
        let mut o = SqliteOptions::default();
        let pick = |key: &str, v: &Option<String>, allowed: &[&str], into: &mut String| {
            if let Some(v) = v {
                let low = v.to_ascii_lowercase();
                if !allowed.contains(&low.as_str()) {
                    return Err(DbError::Invalid(format!(
                        "[target] {key} = \"{v}\" is not a SQLite {key}: use one of {}",
                        allowed.join(", ")
                    )));
                }
                *into = low;
            }
            Ok(())
        };
        pick(
            "journal_mode",
            &raw.journal_mode,
            JOURNAL_MODES,
            &mut o.journal_mode,
        )?;
        pick(
            "synchronous",
            &raw.synchronous,
            SYNCHRONOUS,
            &mut o.synchronous,
        )?;
        if let Some(ms) = raw.busy_timeout {
            o.busy_timeout = std::time::Duration::from_millis(ms);
        }
        if let Some(path) = &raw.path {
            if path.trim().is_empty() {
                return Err(DbError::Invalid(
                    "[target] path is empty: write path = \"sbtest.db\" (or \":memory:\")".into(),
                ));
            }
            o.path = path.clone();
        }
        Ok(o)
    }

    fn endpoint(&self, t: &Target, _n: usize) -> String {
        t.sqlite.path.clone()
    }

    fn database_label(&self, t: &Target) -> String {
        format!("file {}", t.sqlite.path)
    }

    fn table_exists_sql(&self, schema: Option<&str>, name: &str, _written: &str) -> String {
        format!(
            "SELECT COUNT(*) FROM {}sqlite_master WHERE type = 'table' AND name = '{}' COLLATE NOCASE",
            schema.map_or_else(String::new, |s| format!("\"{}\".", s.replace('"', "\"\""))),
            name.replace('\'', "''")
        )
    }

    fn fold_identifier(&self, part: &str, _quoted: bool) -> String {
        part.to_lowercase()
    }

    fn connect_failed(&self, t: &Target, e: &SqlError) -> String {
        let hint = if e.code == "SQLITE_CANTOPEN" {
            ": check that its directory exists and is writable ([target] path)"
        } else {
            ""
        };
        format!(
            "cannot open the SQLite database {}: {e}{hint}",
            t.sqlite.path
        )
    }

    fn call_name(&self, prepared: bool) -> &'static str {
        if prepared {
            "sqlite3_step()"
        } else {
            "sqlite3_exec()"
        }
    }

    fn lua_driver_name(&self) -> (&'static std::ffi::CStr, &'static std::ffi::CStr) {
        (c"sqlite", c"SQLite driver")
    }

    fn lua_prepare_failed(&self, e: &SqlError, sql: &str) -> Vec<String> {
        vec![
            format!("sqlite3_prepare_v2() failed: {e}"),
            format!("failed query was: {sql}"),
        ]
    }

    fn lua_connect_failed(&self, t: &Target, e: &SqlError) -> Vec<String> {
        vec![format!(
            "unable to open the SQLite database '{}': {}",
            t.sqlite.path, e.message
        )]
    }

    /// No escapes in strings; identifiers in `"…"`, backticks or `[…]`; text with a NUL
    /// (which ends SQLite's tokens) is joined with `char(0)`.
    fn syntax(&self) -> &'static Syntax {
        &Syntax {
            backslash_escapes: false,
            backticks: true,
            brackets: true,
            escape_strings_and_dollar_quotes: false,
            mysql_comments: false,
            strings: Strings::JoinedAtNuls,
        }
    }

    /// `INTEGER PRIMARY KEY` is the rowid (AUTOINCREMENT for `auto_inc`); with `secondary`
    /// `id` is a plain column, indexed after the load.
    fn create_table(&self, n: usize, t: &TableSpec<'_>) -> String {
        let id = match (t.secondary, t.auto_inc) {
            (true, _) => "INTEGER NOT NULL",
            (false, true) => "INTEGER PRIMARY KEY AUTOINCREMENT",
            (false, false) => "INTEGER PRIMARY KEY",
        };
        format!(
            "CREATE TABLE sbtest{n}(id {id}, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL)"
        )
    }

    fn prewarm(&self, n: usize, secondary: bool) -> Vec<String> {
        let mut q = vec![
            format!("ANALYZE sbtest{n}"),
            format!("SELECT AVG(id), SUM(LENGTH(c)) FROM sbtest{n}"),
        ];
        if secondary {
            q.push(format!(
                "SELECT COUNT(k) FROM sbtest{n} INDEXED BY k_{n} WHERE k > 0"
            ));
        }
        q
    }

    /// A script that writes takes the write lock up front with `BEGIN IMMEDIATE`: a deferred
    /// transaction that has read and then writes cannot wait for SQLite's write lock
    /// (busy_timeout does not apply to that upgrade): it fails at once with SQLITE_BUSY
    /// whenever another worker writes, so read_write at 2 threads would measure re-runs
    /// rather than the database (measured: 0.7 ignored errors per transaction at 2 threads,
    /// 1.9 at 4, and fewer transactions per second than with IMMEDIATE at 4 threads;
    /// BENCHMARKS.md). Statement counts are the same: the BEGIN is one "other" query either
    /// way.
    fn begin(&self, writes: bool) -> &'static str {
        if writes { "BEGIN IMMEDIATE" } else { "BEGIN" }
    }

    /// Every SQLite transaction is serializable: no other level.
    fn begin_at(
        &self,
        level: Option<super::dialect::Isolation>,
        writes: bool,
    ) -> Option<super::dialect::Begin> {
        match level {
            None | Some(super::dialect::Isolation::Serializable) => {
                Some((None, self.begin(writes)))
            }
            Some(_) => None,
        }
    }

    /// Only an `INTEGER PRIMARY KEY` auto-increments: with `secondary`, `id` is a plain column
    /// and the client sends ids as with `auto_inc = off`.
    fn assigns_ids(&self, auto_inc: bool, secondary: bool) -> bool {
        auto_inc && !secondary
    }

    fn single_writer(&self) -> bool {
        true
    }

    fn check_exists(&self, t: &Target) -> Result<(), FileDbError> {
        if exists(t) {
            Ok(())
        } else {
            Err(FileDbError::Missing {
                path: t.sqlite.path.clone(),
            })
        }
    }

    fn after_cleanup(&self, t: &Target) -> Result<Option<String>, FileDbError> {
        let path = &t.sqlite.path;
        match remove_default_if_empty(t) {
            Ok(true) => Ok(Some(format!(
                "Removed the empty default database file '{path}'"
            ))),
            Ok(false) => Ok(None),
            Err(source) => Err(FileDbError::Remove {
                path: path.clone(),
                source,
            }),
        }
    }

    fn describe(&self, t: &Target, default: bool) -> String {
        let o = &t.sqlite;
        let mut s = format!(
            "sqlite {} (journal_mode {}, synchronous {}, busy_timeout {} ms)",
            o.path,
            o.journal_mode,
            o.synchronous,
            o.busy_timeout.as_millis()
        );
        if default {
            s.push_str(", the default: the suite has no [target]");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(path: &str, extra: &str) -> Target {
        let raw: RawTarget =
            toml::from_str(&format!("driver = \"sqlite\"\npath = {path:?}\n{extra}"))
                .expect("raw target");
        Target::from_raw(&raw).expect("valid target")
    }

    #[test]
    fn statements_classify_reads_writes_and_other() {
        let dir = tempfile::tempdir().unwrap();
        let t = target(dir.path().join("c.db").to_str().unwrap(), "");
        let mut c = open(&t).unwrap();
        let create = c
            .query("CREATE TABLE t(id INTEGER PRIMARY KEY, c TEXT)")
            .unwrap();
        assert_eq!(create, Done::default());
        let ins = c.prepare("INSERT INTO t(id, c) VALUES (?, ?)").unwrap();
        let sel = c
            .prepare("SELECT c FROM t WHERE id BETWEEN ? AND ?")
            .unwrap();
        let upd = c.prepare("UPDATE t SET c = ? WHERE id = ?").unwrap();
        for id in 1..=3 {
            let d = c.execute(ins, &[P::Int(id), P::Str("x")]).unwrap();
            assert_eq!((d.rows, d.affected), (false, 1));
        }
        // A BEGIN right after a write is not a write (changes() would still say 1).
        assert_eq!(c.query("BEGIN").unwrap(), Done::default());
        let d = c.execute(sel, &[P::Int(1), P::Int(2)]).unwrap();
        assert_eq!((d.rows, d.affected), (true, 0));
        let empty = c.execute(sel, &[P::Int(10), P::Int(20)]).unwrap();
        assert!(empty.rows, "an empty result set is still a read");
        assert_eq!(
            c.execute(upd, &[P::Str("y"), P::Int(9)]).unwrap().affected,
            0
        );
        assert_eq!(
            c.execute(upd, &[P::Str("y"), P::Int(2)]).unwrap().affected,
            1
        );
        assert_eq!(c.query("COMMIT").unwrap(), Done::default());
        assert_eq!(c.query_i64("SELECT MAX(id) FROM t").unwrap(), Some(3));
        assert_eq!(
            c.query_i64("SELECT MAX(id) FROM t WHERE id > 5").unwrap(),
            None
        );
        assert_eq!(SqliteDialect.max_connections(c.as_mut()).unwrap(), None);
        c.close();
    }

    #[test]
    fn errors_carry_result_code_names_and_kinds() {
        let t = target(MEMORY_PATH, "");
        let mut c = open(&t).unwrap();
        let e = c.query("SELECT * FROM no_such_table_here").unwrap_err();
        assert_eq!(
            (e.code.as_str(), e.kind),
            ("SQLITE_ERROR", ErrKind::NoTable)
        );
        c.query("CREATE TABLE dup_t(id INTEGER PRIMARY KEY)")
            .unwrap();
        let e = c.query("CREATE TABLE dup_t(id INTEGER)").unwrap_err();
        assert_eq!(e.kind, ErrKind::TableExists, "{e}");
        c.query("INSERT INTO dup_t VALUES (1)").unwrap();
        let e = c.query("INSERT INTO dup_t VALUES (1)").unwrap_err();
        assert_eq!(
            (e.code.as_str(), e.kind),
            ("SQLITE_CONSTRAINT", ErrKind::Other)
        );
        c.query("DROP TABLE dup_t").unwrap();
        assert_eq!(code_name(5), "SQLITE_BUSY");
        assert_eq!(
            code_name(517),
            "SQLITE_BUSY",
            "SQLITE_BUSY_SNAPSHOT is a busy error"
        );
        assert_eq!(code_name(262), "SQLITE_LOCKED", "SQLITE_LOCKED_SHAREDCACHE");
        assert!(
            t.ignore_errors.contains("SQLITE_BUSY") && t.ignore_errors.contains("sqlite_locked")
        );
    }

    #[test]
    fn a_writer_waits_busy_timeout_then_fails_with_sqlite_busy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.db");
        let t = target(path.to_str().unwrap(), "busy_timeout = 20");
        let mut a = open(&t).unwrap();
        let mut b = open(&t).unwrap();
        a.query("CREATE TABLE t(id INTEGER PRIMARY KEY)").unwrap();
        a.query("BEGIN IMMEDIATE").unwrap();
        a.query("INSERT INTO t VALUES (1)").unwrap();
        let e = b.query("BEGIN IMMEDIATE").unwrap_err();
        assert_eq!(e.code, "SQLITE_BUSY", "{e}");
        // A worker that connects meanwhile is not held up by its pragmas.
        open(&t).unwrap().close();
        // WAL: a reader is not blocked by the writer and sees the last commit.
        assert_eq!(b.query_i64("SELECT COUNT(*) FROM t").unwrap(), Some(0));
        a.query("COMMIT").unwrap();
        b.query("BEGIN IMMEDIATE").unwrap();
        b.query("COMMIT").unwrap();
        let mode = b
            .query_i64("SELECT journal_mode = 'wal' FROM pragma_journal_mode")
            .unwrap();
        assert_eq!(mode, Some(1));
    }

    #[test]
    fn memory_is_one_database_for_every_connection_of_the_process() {
        let t = target(MEMORY_PATH, "");
        let mut a = open(&t).unwrap();
        a.query("CREATE TABLE shared_mem(id INTEGER PRIMARY KEY)")
            .unwrap();
        a.query("INSERT INTO shared_mem VALUES (7)").unwrap();
        a.close();
        // No connection of this test is open now: the database lives on.
        let mut b = open(&t).unwrap();
        assert_eq!(b.query_i64("SELECT id FROM shared_mem").unwrap(), Some(7));
        b.query("DROP TABLE shared_mem").unwrap();
        b.close();
    }

    #[test]
    fn load_inserts_every_row_in_one_transaction() {
        let t = target(MEMORY_PATH, "");
        let mut c = open(&t).unwrap();
        c.query("CREATE TABLE load_t(id INTEGER PRIMARY KEY, k INTEGER, c TEXT, pad TEXT)")
            .unwrap();
        let mut n = 0;
        c.load("load_t", false, &mut |r| {
            n += 1;
            r.k = n;
            r.c = format!("c{n}");
            r.pad = "p".into();
            n <= 1000
        })
        .unwrap();
        assert_eq!(
            c.query_i64("SELECT COUNT(*) FROM load_t").unwrap(),
            Some(1000)
        );
        assert_eq!(
            c.query_i64("SELECT MAX(id) FROM load_t").unwrap(),
            Some(1000)
        );
        c.query("DROP TABLE load_t").unwrap();
    }

    #[test]
    fn only_the_default_file_is_removed_and_only_when_empty() {
        let dir = tempfile::tempdir().unwrap();
        let mine = dir.path().join(crate::db::DEFAULT_SQLITE_PATH);
        let t = target(mine.to_str().unwrap(), "");
        open(&t).unwrap().close();
        assert!(
            !remove_default_if_empty(&t).unwrap(),
            "a path the user chose stays"
        );
        assert!(mine.exists() && exists(&t));
        assert!(exists(&target(MEMORY_PATH, "")));
        assert!(!exists(&target(
            dir.path().join("none.db").to_str().unwrap(),
            ""
        )));
    }
}
