//! `sysbench.sql` underneath: sysbench's `db_*` C functions over sbsuite's own
//! [`crate::db::Connection`]s, for MySQL/MariaDB, PostgreSQL and SQLite.
//!
//! Why C functions: sysbench's `sysbench.sql` module is Lua calling C through the LuaJIT FFI,
//! and scripts reach the same structs (`con.sql_errno`, `rs.nrows`, `row.values[i]`). Doing the
//! same here keeps cdata semantics identical (a NULL `sql_result*` that is truthy, metatypes,
//! `ffi.gc`) and is the fastest way in: one FFI call per query, no Lua C API on the hot path.
//! `prelude/sql.lua` ([`SQL_LUA`]) declares the structs and wraps these functions in methods;
//! `prelude/db_legacy.lua` ([`DB_LEGACY_LUA`]) builds sysbench 0.5's `sysbench.db.*` and
//! `db_*` globals on top of it.
//!
//! Ownership: every struct handed to Lua is a Rust `Box` with sysbench's `#[repr(C)]` field
//! prefix (what Lua declares) followed by Rust-only state. A connection owns its one result
//! slot (sysbench's: every result of a connection aliases it, the next call frees it) and
//! outlives its statements: freeing a connection with statements still open only closes it,
//! and the last `db_close` frees the memory, so a statement never points at freed memory.
//! Counters go to the thread that created the connection, as in sysbench.

pub(crate) mod text;

use std::ffi::{CStr, c_char, c_int, c_ulong, c_void};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::ctx::{self, LuaShared};
use crate::db::{
    Connection, Connector, Dialect, ErrKind, Fetched, P, PsMode, RowSink, SqlError, StmtId, Target,
};
use text::{Template, mysql_sqlstate, returns_rows};

/// `prelude/sql.lua`: loaded as chunk `sysbench.sql.lua` once the `sysbench` table exists.
pub const SQL_LUA: &str = include_str!("prelude/sql.lua");

/// `prelude/db_legacy.lua`: loaded as chunk `sysbench.db.lua` after [`SQL_LUA`].
pub const DB_LEGACY_LUA: &str = include_str!("prelude/db_legacy.lua");

/// Where `FATAL:`/`ALERT:` lines of the SQL layer go (one line, without its newline).
pub type LogSink = Arc<dyn Fn(&str) + Send + Sync>;

/// How long a lost MySQL connection in the ignore list is retried (every millisecond, as
/// sysbench does) before the error turns fatal, unless a stop request comes first.
pub const RECONNECT_LIMIT: Duration = Duration::from_secs(60);

/// A connection of a script: in the worker's run step scope (the step's stop cancels its
/// statements on the server), or, outside a run (a command, the top level), in the
/// process-wide scope (the first Ctrl-C breaks it).
fn open(setup: &DbSetup) -> Result<Box<dyn Connection>, SqlError> {
    let conn = setup.connector.connect()?;
    Ok(match ctx::with(|c| c.scope.clone()).flatten() {
        Some(scope) => crate::db::interrupt::guarded_in(conn, &scope),
        None => crate::db::interrupt::guarded(conn),
    })
}

/// The database the states of one run connect to.
pub struct DbSetup {
    pub connector: Connector,
    /// What sysbench's driver for the database does and prints.
    pub dialect: &'static dyn Dialect,
    /// `--db-ps-mode`: `Disable` sends each execute as text with its values pasted in.
    pub ps_mode: PsMode,
    /// sysbench's log lines (`FATAL: …`, `ALERT: …`); stdout by default.
    pub log: LogSink,
    /// Set by the first `sysbench.sql.driver()` of the run: sysbench then prints the SQL
    /// statistics section of its report.
    pub used: AtomicBool,
}

impl DbSetup {
    /// The setup of `target`: its dialect, `ignore_errors` (the command line's
    /// `--mysql-ignore-errors`, already in the target; unset in a suite, the server
    /// flavor's) and `ps_mode` (`--db-ps-mode`), log lines to stdout.
    pub fn new(target: Target) -> DbSetup {
        DbSetup {
            dialect: target.driver.dialect(),
            ps_mode: target.ps_mode,
            connector: Connector::new(target),
            log: Arc::new(|line: &str| ctx::write_stdout(format!("{line}\n").as_bytes())),
            used: AtomicBool::new(false),
        }
    }

    /// The same with log lines sent to `log` (the run's console).
    pub fn with_log(mut self, log: LogSink) -> DbSetup {
        self.log = log;
        self
    }

    /// Whether a script asked for a driver (`sysbench.sql.driver()`): the report then has
    /// sysbench's SQL statistics.
    pub fn used(&self) -> bool {
        self.used.load(Ordering::Relaxed)
    }

    /// `ignore_errors` as it applies on the server (its flavor's default when unset), and
    /// what sysbench's driver ignores whatever the list says.
    fn ignorable(&self, code: &str) -> bool {
        self.connector.ignore_errors().contains(code) || self.dialect.lua_always_ignorable(code)
    }

    /// `FATAL: ` lines.
    fn fatal(&self, lines: Vec<String>) {
        for line in lines {
            (self.log)(&format!("FATAL: {line}"));
        }
    }
}

// ---- C structs, sysbench's field order first ----

/// `sql_error_t`.
const DB_ERROR_NONE: c_int = 0;
const DB_ERROR_IGNORABLE: c_int = 1;
const DB_ERROR_FATAL: c_int = 2;

/// `sql_bind_type_t` values the binds carry (`bind_create` maps the others onto these).
const SQL_TYPE_TINYINT: c_int = 1;
const SQL_TYPE_BIGINT: c_int = 4;
const SQL_TYPE_FLOAT: c_int = 5;
const SQL_TYPE_DOUBLE: c_int = 6;
const SQL_TYPE_CHAR: c_int = 11;
const SQL_TYPE_VARCHAR: c_int = 12;

/// sysbench's bulk insert buffer: a flush happens before a tuple would make it larger.
const BULK_MAX: usize = 512 * 1024;

/// `sql_driver`.
#[repr(C)]
pub struct SqlDriver {
    sname: *const c_char,
    lname: *const c_char,
    shared: Arc<LuaShared>,
}

/// `sql_value`: one column of a fetched row (`ptr` NULL for SQL NULL).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct SqlValue {
    len: u32,
    ptr: *const c_char,
}

/// `sql_row`.
#[repr(C)]
pub struct SqlRow {
    ptr: *mut c_void,
    values: *mut SqlValue,
}

/// `sql_result`: the one result slot of a connection.
#[repr(C)]
pub struct SqlResult {
    counter: c_int,
    nrows: u32,
    nfields: u32,
    statement: *mut SqlStatement,
    ptr: *mut c_void,
    row: SqlRow,
    /// Whether the slot holds a result the script may read or free.
    live: bool,
    /// A text query's rows; empty for a statement's result.
    rows: ResultRows,
    next: usize,
    values: Vec<SqlValue>,
    /// The run's log, for the ALERTs of `fetch_row`/`free` on a stale result.
    log: LogSink,
}

/// A text query's result set as `rs:fetch_row()` hands it out: every value's bytes in one
/// buffer, as the client read them ([`Connection::query_each`]), without a bound on the rows.
///
/// Why whole and not fetched from the server row by row: `rs.nrows` is known as soon as
/// `con:query()` returns (sysbench keeps the result whole too: `mysql_store_result`, libpq's
/// `PQexec`), and scripts loop `for i = 1, rs.nrows`. One buffer and one offset per value cost
/// about the rows' own bytes (the 100,000-row bound of administrative queries does not apply).
#[derive(Debug, Default)]
struct ResultRows {
    /// The result's columns; `None` until the client says it is a result set.
    width: Option<usize>,
    data: Vec<u8>,
    /// Each value's end in `data`, [`NULL_VALUE`] set for SQL NULL.
    ends: Vec<usize>,
    /// Each row's first value in `ends`.
    starts: Vec<usize>,
    /// The first value of the row being read.
    row_start: usize,
}

/// The bit of [`ResultRows::ends`] that marks SQL NULL.
const NULL_VALUE: usize = 1 << (usize::BITS - 1);

impl ResultRows {
    fn clear(&mut self) {
        // A big result's buffers are not kept for the connection's life.
        if self.data.capacity() > 1 << 20 || self.ends.capacity() > 1 << 16 {
            *self = ResultRows::default();
            return;
        }
        self.width = None;
        self.data.clear();
        self.ends.clear();
        self.starts.clear();
        self.row_start = 0;
    }

    fn len(&self) -> usize {
        self.starts.len()
    }

    /// Row `n`'s values as `sql_value`s pointing into the buffer (valid until it changes).
    fn row(&self, n: usize, out: &mut Vec<SqlValue>) -> bool {
        let Some(&first) = self.starts.get(n) else {
            return false;
        };
        let last = self.starts.get(n + 1).copied().unwrap_or(self.ends.len());
        out.clear();
        for i in first..last {
            let begin = if i == 0 {
                0
            } else {
                self.ends[i - 1] & !NULL_VALUE
            };
            let end = self.ends[i];
            out.push(if end & NULL_VALUE != 0 {
                SqlValue {
                    len: 0,
                    ptr: std::ptr::null(),
                }
            } else {
                SqlValue {
                    len: u32::try_from(end - begin).unwrap_or(u32::MAX),
                    ptr: self.data[begin..].as_ptr().cast(),
                }
            });
        }
        true
    }
}

impl RowSink for ResultRows {
    fn columns(&mut self, names: &[String]) {
        self.width.get_or_insert(names.len());
    }

    fn value(&mut self, value: Option<&[u8]>) {
        match value {
            Some(v) => {
                self.data.extend_from_slice(v);
                self.ends.push(self.data.len());
            }
            None => self.ends.push(self.data.len() | NULL_VALUE),
        }
    }

    fn end_row(&mut self) -> bool {
        self.starts.push(self.row_start);
        self.row_start = self.ends.len();
        true
    }
}

/// `sql_bind`, as `stmt:bind_param()` passes it; the buffers are the Lua parameters'.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct SqlBind {
    kind: c_int,
    buffer: *mut c_void,
    data_len: *mut c_ulong,
    max_len: c_ulong,
    is_null: *mut c_char,
}

impl SqlBind {
    /// A bind as `stmt:bind_param()` builds it (for callers outside Lua: tests, benches).
    pub fn new(
        kind: c_int,
        buffer: *mut c_void,
        data_len: *mut c_ulong,
        max_len: c_ulong,
        is_null: *mut c_char,
    ) -> SqlBind {
        SqlBind {
            kind,
            buffer,
            data_len,
            max_len,
            is_null,
        }
    }
}

/// `sql_connection`.
#[repr(C)]
pub struct SqlConnection {
    error: c_int,
    sql_errno: c_int,
    sql_state: *const c_char,
    sql_errmsg: *const c_char,
    driver: *mut SqlDriver,
    rs: SqlResult,
    st: ConnState,
}

struct ConnState {
    /// `con.driver`'s target (its own, as the script's driver object may be collected first).
    drv: Box<SqlDriver>,
    /// The thread that created the connection: its counters are bumped.
    tid: usize,
    /// `None` once closed.
    conn: Option<Box<dyn Connection>>,
    /// Bumped by every reconnect: statements prepared before are prepared again.
    generation: u64,
    state_buf: Vec<u8>,
    msg_buf: Vec<u8>,
    fetched: Fetched,
    /// `--db-ps-mode=disable`'s statement text, reused.
    text: String,
    bulk: Option<Bulk>,
    /// Statements not closed yet.
    stmts: usize,
    /// `db_connection_free` came while statements were open.
    freed: bool,
}

struct Bulk {
    buf: String,
    header: usize,
    values: usize,
}

/// `sql_statement`.
#[repr(C)]
pub struct SqlStatement {
    connection: *mut SqlConnection,
    st: StmtState,
}

struct StmtState {
    sql: String,
    /// The server-side statement (`None` with `--db-ps-mode=disable`).
    id: Option<StmtId>,
    generation: u64,
    template: Option<Template>,
    /// Returns rows (a SELECT): its rows are counted for `rs.nrows`.
    rows: bool,
    binds: Vec<SqlBind>,
    /// The values of one execute; empty between executes (they borrow the Lua buffers).
    params: Vec<P<'static>>,
    /// Non-UTF-8 VARCHAR values, converted.
    lossy: Vec<String>,
}

// ---- helpers ----

/// The bytes of a Lua string argument as text (lossy for invalid UTF-8, which no SQL text of
/// the stock scripts has).
///
/// SAFETY: `ptr` is NULL or points at `len` readable bytes for the call's duration.
unsafe fn text_arg<'a>(ptr: *const c_char, len: usize) -> std::borrow::Cow<'a, str> {
    if ptr.is_null() {
        return std::borrow::Cow::Borrowed("");
    }
    // SAFETY: the caller's contract.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
    String::from_utf8_lossy(bytes)
}

fn c_text(buf: &mut Vec<u8>, s: &str) -> *const c_char {
    buf.clear();
    buf.extend(s.bytes().map(|b| if b == 0 { b' ' } else { b }));
    buf.push(0);
    buf.as_ptr().cast()
}

impl SqlConnection {
    fn setup(&self) -> &DbSetup {
        self.st
            .drv
            .shared
            .db
            .as_ref()
            .expect("a connection exists only for a run with a database")
    }

    fn log(&self, line: &str) {
        (self.setup().log)(line);
    }

    fn count(&self, kind: i32) {
        self.st.drv.shared.counters.inc(self.st.tid, kind);
    }

    /// Counts a counted error under its code (results.csv's `error_codes`); errors are rare,
    /// so one lock per error is nothing.
    fn count_code(&self, code: &str) {
        self.st
            .drv
            .shared
            .codes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .count(code);
    }

    fn clear_error(&mut self) {
        self.error = DB_ERROR_NONE;
        self.sql_errno = 0;
        self.sql_state = std::ptr::null();
        self.sql_errmsg = std::ptr::null();
    }

    /// An error without a server answer: Lua raises `SQL API error`.
    fn api_error(&mut self) {
        self.error = DB_ERROR_FATAL;
        self.sql_errno = 0;
        self.sql_state = std::ptr::null();
        self.sql_errmsg = std::ptr::null();
    }

    /// The next call frees the result slot.
    fn reset_result(&mut self) {
        let rs = &mut self.rs;
        rs.live = false;
        rs.rows.clear();
        rs.next = 0;
        rs.nrows = 0;
        rs.nfields = 0;
        rs.statement = std::ptr::null_mut();
        rs.row.values = std::ptr::null_mut();
    }

    /// Checks the connection is open (else sysbench's ALERT and an API error).
    fn open(&mut self) -> bool {
        if self.st.conn.is_some() {
            return true;
        }
        self.log("ALERT: attempt to use an already closed connection");
        self.api_error();
        false
    }

    /// A successful statement: counts it and returns the result slot for a result set, NULL
    /// otherwise.
    fn done(
        &mut self,
        done: crate::db::Done,
        nrows: u64,
        stmt: *mut SqlStatement,
    ) -> *mut SqlResult {
        if done.rows {
            self.count(ctx::CNT_READ);
            let rs = &mut self.rs;
            rs.counter = ctx::CNT_READ;
            rs.nrows = u32::try_from(nrows).unwrap_or(u32::MAX);
            rs.statement = stmt;
            rs.live = true;
            return rs;
        }
        self.count(if done.affected > 0 {
            ctx::CNT_WRITE
        } else {
            ctx::CNT_OTHER
        });
        std::ptr::null_mut()
    }

    /// A failed statement: sets `error`/`sql_errno`/`sql_state`/`sql_errmsg` as sysbench's
    /// driver would, counts it, logs fatal errors, reconnects a lost MySQL connection whose
    /// code is ignorable. Returns NULL for the caller to return.
    fn fail(&mut self, e: &SqlError, sql: &str, prepared: bool) -> *mut SqlResult {
        let setup = self.setup();
        let dialect = setup.dialect;
        let lost = e.kind == ErrKind::Lost;
        // A connection our client saw drop has no server code: the database's client names
        // one (MySQL's 2013).
        let code: &str = match dialect.lost_code() {
            Some(c) if e.code.is_empty() && lost => c,
            _ => &e.code,
        };
        let (errno, state) = match dialect.lua_errno(code) {
            Some(errno) => (errno, mysql_sqlstate(errno).to_string()),
            None => (0, code.to_string()),
        };
        let ignorable = setup.ignorable(code);
        let reconnect = ignorable && dialect.lua_reconnects_after(code);
        if !ignorable {
            let shown = SqlError::new(code, e.message.clone(), e.kind);
            setup.fatal(dialect.lua_failed(&shown, sql, prepared));
        }
        self.sql_errno = errno;
        self.sql_state = c_text(&mut self.st.state_buf, &state);
        self.sql_errmsg = c_text(&mut self.st.msg_buf, &e.message);
        if reconnect {
            // Counted when the connection is lost (as the SQL session does, #30), so that a
            // fault's figures see the failure when it happens, not after the downtime.
            self.count(ctx::CNT_RECONNECT);
            if self.reconnect_until_stop() {
                self.error = DB_ERROR_IGNORABLE;
            } else {
                self.count(ctx::CNT_ERROR);
                self.count_code(code);
                self.error = DB_ERROR_FATAL;
            }
            return std::ptr::null_mut();
        }
        self.count(ctx::CNT_ERROR);
        self.count_code(code);
        if ignorable {
            self.error = DB_ERROR_IGNORABLE;
            if dialect.lua_rolls_back_ignored()
                && let Some(conn) = self.st.conn.as_mut()
            {
                // sysbench's pgsql driver ends the failed transaction; a failure here shows
                // on the next statement.
                let _ = conn.query("ROLLBACK");
            }
        } else {
            self.error = DB_ERROR_FATAL;
        }
        std::ptr::null_mut()
    }

    /// Replaces the connection with a new one, trying every millisecond until it works, a
    /// stop request breaks blocking calls, or [`RECONNECT_LIMIT`] passes.
    fn reconnect_until_stop(&mut self) -> bool {
        if let Some(old) = self.st.conn.take() {
            old.close();
        }
        let start = Instant::now();
        loop {
            if let Ok(conn) = open(self.setup()) {
                self.st.conn = Some(conn);
                self.st.generation += 1;
                return true;
            }
            if crate::db::interrupt::breaking() || start.elapsed() > RECONNECT_LIMIT {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Sends the bulk buffer as one query and empties it (keeping the INSERT head).
    fn bulk_flush(&mut self) -> bool {
        let Some(mut bulk) = self.st.bulk.take() else {
            return true;
        };
        let mut ok = true;
        if bulk.values > 0 {
            self.reset_result();
            let r = match self.st.conn.as_mut() {
                Some(conn) => conn.query(&bulk.buf),
                None => Err(SqlError::client("the connection is closed", ErrKind::Other)),
            };
            match r {
                Ok(done) => {
                    self.done(done, 0, std::ptr::null_mut());
                }
                Err(e) => {
                    self.fail(&e, &bulk.buf, false);
                    ok = false;
                }
            }
            bulk.buf.truncate(bulk.header);
            bulk.values = 0;
        }
        self.st.bulk = Some(bulk);
        ok
    }

    fn close_conn(&mut self) {
        self.reset_result();
        self.st.bulk = None;
        if let Some(conn) = self.st.conn.take() {
            conn.close();
        }
    }
}

impl StmtState {
    /// Reads the bound Lua buffers into `params`, as they are at execute time.
    ///
    /// SAFETY: the binds' buffers are the live Lua parameters the script bound (prelude/sql.lua
    /// keeps them referenced until `stmt:close()`); the values borrow them until `params` is
    /// cleared, before this execute returns.
    unsafe fn read_binds(&mut self) {
        self.params.clear();
        self.lossy.clear();
        for b in &self.binds {
            // SAFETY: see the function's contract for every pointer read here.
            let null = !b.is_null.is_null() && unsafe { *b.is_null } != 0;
            let p = if null || b.buffer.is_null() {
                P::Null
            } else {
                match b.kind {
                    SQL_TYPE_TINYINT..=SQL_TYPE_BIGINT => {
                        P::Int(unsafe { b.buffer.cast::<i64>().read_unaligned() })
                    }
                    SQL_TYPE_FLOAT | SQL_TYPE_DOUBLE => {
                        P::Float(unsafe { b.buffer.cast::<f64>().read_unaligned() })
                    }
                    SQL_TYPE_CHAR | SQL_TYPE_VARCHAR => {
                        let len = if b.data_len.is_null() {
                            0
                        } else {
                            unsafe { *b.data_len }
                        };
                        let len = usize::try_from(len.min(b.max_len)).unwrap_or(0);
                        let bytes =
                            unsafe { std::slice::from_raw_parts(b.buffer.cast::<u8>(), len) };
                        match std::str::from_utf8(bytes) {
                            // SAFETY: lives as long as the Lua buffer, past every use.
                            Ok(s) => P::Str(unsafe { &*std::ptr::from_ref::<str>(s) }),
                            Err(_) => {
                                self.lossy.push(String::from_utf8_lossy(bytes).into_owned());
                                P::Null
                            }
                        }
                    }
                    _ => P::Null,
                }
            };
            self.params.push(p);
        }
        if !self.lossy.is_empty() {
            // Converted text replaces its NULL placeholder, in bind order.
            let mut converted = self.lossy.iter();
            for (p, b) in self.params.iter_mut().zip(&self.binds) {
                if matches!(p, P::Null)
                    && matches!(b.kind, SQL_TYPE_CHAR | SQL_TYPE_VARCHAR)
                    && !b.buffer.is_null()
                    && (b.is_null.is_null() || unsafe { *b.is_null } == 0)
                    && let Some(s) = converted.next()
                {
                    // SAFETY: `lossy` is only cleared with `params`.
                    *p = P::Str(unsafe { &*std::ptr::from_ref::<str>(s.as_str()) });
                }
            }
        }
    }
}

// ---- exported C functions (sysbench's signatures) ----

/// `sql_driver *db_create(const char *name)`: `name` NULL means `--db-driver`, the run's.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn db_create(name: *const c_char) -> *mut SqlDriver {
    let Some(shared) = ctx::with(|c| c.shared.clone()) else {
        return std::ptr::null_mut();
    };
    // No database for this state (reading a script's declarations): Lua raises `failed to
    // initialize the DB driver`.
    let Some(setup) = shared.db.as_ref() else {
        return std::ptr::null_mut();
    };
    let (sname, lname) = setup.dialect.lua_driver_name();
    if !name.is_null() {
        // SAFETY: the caller's contract.
        let asked = unsafe { CStr::from_ptr(name) }.to_string_lossy();
        if asked.as_bytes() != sname.to_bytes() {
            (setup.log)(&format!("FATAL: invalid database driver name: '{asked}'"));
            return std::ptr::null_mut();
        }
    }
    setup.used.store(true, Ordering::Relaxed);
    Box::into_raw(Box::new(SqlDriver {
        sname: sname.as_ptr(),
        lname: lname.as_ptr(),
        shared,
    }))
}

/// `int db_destroy(sql_driver *)`.
///
/// # Safety
/// `drv` is NULL or a driver of [`db_create`], not destroyed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn db_destroy(drv: *mut SqlDriver) -> c_int {
    if !drv.is_null() {
        // SAFETY: the caller's contract.
        drop(unsafe { Box::from_raw(drv) });
    }
    0
}

/// `sql_connection *db_connection_create(sql_driver *)`: NULL when it fails (logged).
///
/// # Safety
/// `drv` is NULL or a live driver of [`db_create`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn db_connection_create(drv: *mut SqlDriver) -> *mut SqlConnection {
    // SAFETY: the caller's contract.
    let Some(drv) = (unsafe { drv.as_ref() }) else {
        return std::ptr::null_mut();
    };
    let Some(setup) = drv.shared.db.as_ref() else {
        return std::ptr::null_mut();
    };
    let tid = ctx::with(|c| c.tid).unwrap_or(0);
    let conn = match open(setup) {
        Ok(c) => c,
        Err(e) => {
            connect_failed(setup, &e);
            return std::ptr::null_mut();
        }
    };
    let own = Box::new(SqlDriver {
        sname: drv.sname,
        lname: drv.lname,
        shared: drv.shared.clone(),
    });
    let mut con = Box::new(SqlConnection {
        error: DB_ERROR_NONE,
        sql_errno: 0,
        sql_state: std::ptr::null(),
        sql_errmsg: std::ptr::null(),
        driver: std::ptr::null_mut(),
        rs: SqlResult {
            counter: ctx::CNT_OTHER,
            nrows: 0,
            nfields: 0,
            statement: std::ptr::null_mut(),
            ptr: std::ptr::null_mut(),
            row: SqlRow {
                ptr: std::ptr::null_mut(),
                values: std::ptr::null_mut(),
            },
            live: false,
            rows: ResultRows::default(),
            next: 0,
            values: Vec::new(),
            log: setup.log.clone(),
        },
        st: ConnState {
            drv: own,
            tid,
            conn: Some(conn),
            generation: 0,
            state_buf: Vec::new(),
            msg_buf: Vec::new(),
            fetched: Fetched::default(),
            text: String::new(),
            bulk: None,
            stmts: 0,
            freed: false,
        },
    });
    con.driver = &raw mut *con.st.drv;
    Box::into_raw(con)
}

/// sysbench's lines for a connection that cannot be opened.
fn connect_failed(setup: &DbSetup, e: &SqlError) {
    setup.fatal(setup.dialect.lua_connect_failed(&setup.connector.target, e));
}

/// `int db_connection_close(sql_connection *)`.
///
/// # Safety
/// `con` is NULL or a connection of [`db_connection_create`] not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn db_connection_close(con: *mut SqlConnection) -> c_int {
    // SAFETY: the caller's contract.
    let Some(con) = (unsafe { con.as_mut() }) else {
        return 1;
    };
    con.clear_error();
    if con.st.conn.is_none() {
        con.log("ALERT: attempt to close an already closed connection");
        return 0;
    }
    con.close_conn();
    0
}

/// `int db_connection_reconnect(sql_connection *)`: a new session for MySQL and SQLite;
/// PostgreSQL only logs that it is not supported, as sysbench's driver does.
///
/// # Safety
/// `con` is NULL or a connection of [`db_connection_create`] not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn db_connection_reconnect(con: *mut SqlConnection) -> c_int {
    // SAFETY: the caller's contract.
    let Some(con) = (unsafe { con.as_mut() }) else {
        return 1;
    };
    con.clear_error();
    if !con.setup().dialect.lua_can_reconnect() {
        con.log("ALERT: reconnect is not supported by the current driver");
        return 0;
    }
    if con.st.conn.is_none() {
        // sysbench closes first, then (its MySQL build) crashes; here it stays closed.
        con.log("ALERT: attempt to close an already closed connection");
        return 0;
    }
    con.close_conn();
    match open(con.setup()) {
        Ok(c) => {
            con.st.conn = Some(c);
            con.st.generation += 1;
            con.count(ctx::CNT_RECONNECT);
            0
        }
        Err(e) => {
            con.log(&format!("FATAL: reconnect failed: {e}"));
            con.api_error();
            1
        }
    }
}

/// `void db_connection_free(sql_connection *)` (the connection's `ffi.gc`).
///
/// # Safety
/// `con` is NULL or a connection of [`db_connection_create`] not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn db_connection_free(con: *mut SqlConnection) {
    // SAFETY: the caller's contract.
    let Some(c) = (unsafe { con.as_mut() }) else {
        return;
    };
    c.close_conn();
    if c.st.stmts == 0 {
        // SAFETY: allocated by `db_connection_create`, and no statement points at it.
        drop(unsafe { Box::from_raw(con) });
    } else {
        c.st.freed = true;
    }
}

/// `sql_result *db_query(sql_connection *, const char *query, size_t len)`: the result slot
/// for a result set; NULL for none and on errors (`con.error` tells which).
///
/// # Safety
/// `con` is NULL or a live connection; `query` points at `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn db_query(
    con: *mut SqlConnection,
    query: *const c_char,
    len: usize,
) -> *mut SqlResult {
    // SAFETY: the caller's contract.
    let Some(con) = (unsafe { con.as_mut() }) else {
        return std::ptr::null_mut();
    };
    con.clear_error();
    con.reset_result();
    if !con.open() {
        return std::ptr::null_mut();
    }
    // SAFETY: the caller's contract.
    let sql = unsafe { text_arg(query, len) };
    // A dry run answers no rows: every statement is "other", as in sysbench.
    if !con.setup().connector.target.dry_run && returns_rows(&sql) {
        let Some(conn) = con.st.conn.as_mut() else {
            return std::ptr::null_mut();
        };
        let mut rows = std::mem::take(&mut con.rs.rows);
        let r = conn.query_each(&sql, &mut rows);
        con.rs.rows = rows;
        match r {
            Ok(done) => {
                let nfields = con.rs.rows.width.unwrap_or(0);
                if nfields == 0 {
                    // Not a result set after all (the statement only looked like one).
                    con.rs.rows.clear();
                    let done = crate::db::Done {
                        rows: false,
                        ..done
                    };
                    return con.done(done, 0, std::ptr::null_mut());
                }
                let nrows = con.rs.rows.len() as u64;
                con.rs.nfields = u32::try_from(nfields).unwrap_or(u32::MAX);
                con.done(done, nrows, std::ptr::null_mut())
            }
            Err(e) => con.fail(&e, &sql, false),
        }
    } else {
        // A suite's prepare or cleanup: CREATE TABLE is recorded, DROP TABLE drops only the
        // run's tables (`db::owned`).
        let target = &con.setup().connector.target;
        let guard = target.ledger.clone().map(|l| (l, target.clone()));
        let Some(conn) = con.st.conn.as_mut() else {
            return std::ptr::null_mut();
        };
        let result = match &guard {
            Some((ledger, t)) => crate::db::owned::query(ledger.as_ref(), t, conn.as_mut(), &sql),
            None => conn.query(&sql),
        };
        match result {
            Ok(done) => con.done(done, 0, std::ptr::null_mut()),
            Err(e) => con.fail(&e, &sql, false),
        }
    }
}

/// `sql_row *db_fetch_row(sql_result *)`: the next row of a text query's result, NULL after
/// the last (and for a statement's result, whose rows are not kept).
///
/// # Safety
/// `rs` is NULL or the result slot of a live connection.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn db_fetch_row(rs: *mut SqlResult) -> *mut SqlRow {
    // SAFETY: the caller's contract.
    let Some(rs) = (unsafe { rs.as_mut() }) else {
        return std::ptr::null_mut();
    };
    if !rs.live {
        (rs.log)("ALERT: attempt to fetch row from an invalid result set");
        return std::ptr::null_mut();
    }
    if rs.next == 0 && rs.rows.len() == 0 {
        // No row at all, or a statement's result whose rows are not kept.
        (rs.log)("ALERT: attempt to fetch row from an empty result set");
        return std::ptr::null_mut();
    }
    if !rs.rows.row(rs.next, &mut rs.values) {
        return std::ptr::null_mut();
    }
    rs.next += 1;
    // A row shorter than `nfields` (it cannot be, but Lua reads `nfields` values).
    while rs.values.len() < rs.nfields as usize {
        rs.values.push(SqlValue {
            len: 0,
            ptr: std::ptr::null(),
        });
    }
    rs.row.values = rs.values.as_mut_ptr();
    &raw mut rs.row
}

/// `int db_free_results(sql_result *)`: 0, or 1 with an ALERT for a result already freed.
///
/// # Safety
/// `rs` is NULL or the result slot of a live connection.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn db_free_results(rs: *mut SqlResult) -> c_int {
    // SAFETY: the caller's contract.
    let Some(rs) = (unsafe { rs.as_mut() }) else {
        return 1;
    };
    if !rs.live {
        (rs.log)("ALERT: attempt to free an invalid result set");
        return 1;
    }
    rs.live = false;
    rs.rows.clear();
    rs.next = 0;
    rs.row.values = std::ptr::null_mut();
    0
}

/// `sql_statement *db_prepare(sql_connection *, const char *query, size_t len)`: NULL on
/// failure (logged; Lua raises `SQL API error`).
///
/// # Safety
/// `con` is NULL or a live connection; `query` points at `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn db_prepare(
    con: *mut SqlConnection,
    query: *const c_char,
    len: usize,
) -> *mut SqlStatement {
    let raw = con;
    // SAFETY: the caller's contract.
    let Some(con) = (unsafe { con.as_mut() }) else {
        return std::ptr::null_mut();
    };
    con.clear_error();
    if !con.open() {
        return std::ptr::null_mut();
    }
    // SAFETY: the caller's contract.
    let sql = unsafe { text_arg(query, len) }.into_owned();
    let disabled = con.setup().ps_mode == PsMode::Disable;
    let (id, template) = if disabled {
        (None, Some(Template::new(&sql)))
    } else {
        let Some(conn) = con.st.conn.as_mut() else {
            return std::ptr::null_mut();
        };
        match conn.prepare(&sql) {
            Ok(id) => (Some(id), None),
            Err(e) => {
                let setup = con.setup();
                setup.fatal(setup.dialect.lua_prepare_failed(&e, &sql));
                if let Some(advice) = setup.connector.flavor().advice(&e) {
                    con.log(&format!("FATAL: {advice}"));
                }
                con.api_error();
                return std::ptr::null_mut();
            }
        }
    };
    con.st.stmts += 1;
    let rows = returns_rows(&sql);
    Box::into_raw(Box::new(SqlStatement {
        connection: raw,
        st: StmtState {
            sql,
            id,
            generation: con.st.generation,
            template,
            rows,
            binds: Vec::new(),
            params: Vec::new(),
            lossy: Vec::new(),
        },
    }))
}

/// `int db_bind_param(sql_statement *, sql_bind *params, size_t len)`: keeps the binds; the
/// values are read from their buffers at each execute.
///
/// # Safety
/// `stmt` is NULL or a live statement; `params` points at `len` binds whose buffers stay
/// valid until the statement is closed or bound again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn db_bind_param(
    stmt: *mut SqlStatement,
    params: *const SqlBind,
    len: usize,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(stmt) = (unsafe { stmt.as_mut() }) else {
        return 1;
    };
    stmt.st.binds.clear();
    if !params.is_null() {
        // SAFETY: the caller's contract.
        stmt.st
            .binds
            .extend_from_slice(unsafe { std::slice::from_raw_parts(params, len) });
    }
    stmt.st.params.reserve(len);
    0
}

/// `int db_bind_result(sql_statement *, sql_bind *, size_t)`: no effect, as in sysbench's Lua
/// API (results are read with `fetch_row`).
#[unsafe(no_mangle)]
pub extern "C" fn db_bind_result(_stmt: *mut SqlStatement, _p: *const SqlBind, _n: usize) -> c_int {
    0
}

/// `sql_result *db_execute(sql_statement *)`: as [`db_query`]; a SELECT's result has `nrows`
/// and no fetchable rows (`nfields` 0), as MySQL's server-side statements in sysbench.
///
/// # Safety
/// `stmt` is NULL or a live statement of [`db_prepare`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn db_execute(stmt: *mut SqlStatement) -> *mut SqlResult {
    let raw = stmt;
    // SAFETY: the caller's contract.
    let Some(stmt) = (unsafe { stmt.as_mut() }) else {
        return std::ptr::null_mut();
    };
    // SAFETY: a statement's connection outlives it (see the module comment).
    let Some(con) = (unsafe { stmt.connection.as_mut() }) else {
        return std::ptr::null_mut();
    };
    con.clear_error();
    if con.rs.live {
        con.reset_result();
    }
    if !con.open() {
        return std::ptr::null_mut();
    }
    let st = &mut stmt.st;
    // SAFETY: the binds' buffers are the script's live parameters (prelude/sql.lua keeps them).
    unsafe { st.read_binds() };
    let ConnState {
        conn,
        generation,
        fetched,
        text,
        ..
    } = &mut con.st;
    let Some(conn) = conn.as_mut() else {
        return std::ptr::null_mut();
    };
    let r = match (&st.template, st.id) {
        (Some(t), _) => {
            t.render(&st.params, text);
            if st.rows {
                conn.query_fetch(text, false, fetched)
            } else {
                conn.query(text)
            }
        }
        (None, Some(mut id)) => {
            let mut r = Ok(());
            if st.generation != *generation {
                // Prepared before a reconnect: the new session does not know it.
                r = conn.prepare(&st.sql).map(|new| {
                    st.id = Some(new);
                    st.generation = *generation;
                    id = new;
                });
            }
            r.and_then(|()| {
                if st.rows {
                    conn.execute_fetch(id, &st.params, false, fetched)
                } else {
                    conn.execute(id, &st.params)
                }
            })
        }
        (None, None) => Err(SqlError::client("the statement is closed", ErrKind::Other)),
    };
    st.params.clear();
    match r {
        Ok(done) => {
            let nrows = if st.rows { con.st.fetched.rows } else { 0 };
            con.done(done, nrows, raw)
        }
        Err(e) => {
            let shown = if st.template.is_some() {
                std::mem::take(&mut con.st.text)
            } else {
                st.sql.clone()
            };
            con.fail(&e, &shown, st.template.is_none())
        }
    }
}

/// `int db_close(sql_statement *)`: frees the statement (and a connection freed meanwhile
/// once its last statement goes).
///
/// # Safety
/// `stmt` is NULL or a live statement of [`db_prepare`]; it is not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn db_close(stmt: *mut SqlStatement) -> c_int {
    if stmt.is_null() {
        return 1;
    }
    // SAFETY: the caller's contract.
    let stmt = unsafe { Box::from_raw(stmt) };
    let con_ptr = stmt.connection;
    // SAFETY: a statement's connection outlives it.
    if let Some(con) = unsafe { con_ptr.as_mut() } {
        if std::ptr::eq(con.rs.statement, &raw const *stmt) {
            con.rs.statement = std::ptr::null_mut();
        }
        con.st.stmts = con.st.stmts.saturating_sub(1);
        if con.st.freed && con.st.stmts == 0 {
            // SAFETY: freed by the script already, kept for this statement only.
            drop(unsafe { Box::from_raw(con_ptr) });
        }
    }
    0
}

/// `int db_bulk_insert_init(sql_connection *, const char *query, size_t len)`.
///
/// # Safety
/// `con` is NULL or a live connection; `query` points at `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn db_bulk_insert_init(
    con: *mut SqlConnection,
    query: *const c_char,
    len: usize,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(con) = (unsafe { con.as_mut() }) else {
        return 1;
    };
    con.clear_error();
    if !con.open() {
        return 1;
    }
    // SAFETY: the caller's contract.
    let head = unsafe { text_arg(query, len) };
    let mut buf = String::with_capacity(BULK_MAX);
    buf.push_str(&head);
    con.st.bulk = Some(Bulk {
        header: buf.len(),
        buf,
        values: 0,
    });
    0
}

/// `int db_bulk_insert_next(sql_connection *, const char *values, size_t len)`: appends one
/// tuple, sending the buffer first when the tuple would take it past 512 KiB.
///
/// # Safety
/// `con` is NULL or a live connection; `values` points at `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn db_bulk_insert_next(
    con: *mut SqlConnection,
    values: *const c_char,
    len: usize,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(con) = (unsafe { con.as_mut() }) else {
        return 1;
    };
    con.clear_error();
    let Some(bulk) = con.st.bulk.as_ref() else {
        con.log("ALERT: attempt to call bulk_insert_next() before bulk_insert_init()");
        return 1;
    };
    let need = len + usize::from(bulk.values > 0);
    if bulk.buf.len() + need > BULK_MAX {
        if bulk.values == 0 {
            con.log(&format!(
                "ALERT: a bulk insert tuple of {len} bytes does not fit in the {BULK_MAX}-byte buffer"
            ));
            return 1;
        }
        if !con.bulk_flush() {
            return 1;
        }
    }
    // SAFETY: the caller's contract.
    let tuple = unsafe { text_arg(values, len) };
    if let Some(bulk) = con.st.bulk.as_mut() {
        if bulk.values > 0 {
            bulk.buf.push(',');
        }
        bulk.buf.push_str(&tuple);
        bulk.values += 1;
    }
    0
}

/// `int db_bulk_insert_done(sql_connection *)`: sends what is left and ends the insert.
///
/// # Safety
/// `con` is NULL or a live connection.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn db_bulk_insert_done(con: *mut SqlConnection) -> c_int {
    // SAFETY: the caller's contract.
    let Some(con) = (unsafe { con.as_mut() }) else {
        return 1;
    };
    con.clear_error();
    let ok = con.bulk_flush();
    con.st.bulk = None;
    if ok { 0 } else { 1 }
}

/// The `db_*` functions, kept by the linker for `ffi.C` (see [`ctx::Exports`]).
pub static EXPORTS: ctx::Exports = ctx::Exports(&[
    db_create as *const (),
    db_destroy as *const (),
    db_connection_create as *const (),
    db_connection_close as *const (),
    db_connection_reconnect as *const (),
    db_connection_free as *const (),
    db_query as *const (),
    db_fetch_row as *const (),
    db_free_results as *const (),
    db_prepare as *const (),
    db_bind_param as *const (),
    db_bind_result as *const (),
    db_execute as *const (),
    db_close as *const (),
    db_bulk_insert_init as *const (),
    db_bulk_insert_next as *const (),
    db_bulk_insert_done as *const (),
]);

#[cfg(test)]
mod tests {
    use super::*;

    /// What `fetch_row` hands Lua for row `n`: each value's bytes, `None` for NULL.
    fn fetched(rows: &ResultRows, n: usize) -> Option<Vec<Option<Vec<u8>>>> {
        let mut values = Vec::new();
        if !rows.row(n, &mut values) {
            return None;
        }
        Some(
            values
                .iter()
                .map(|v| {
                    (!v.ptr.is_null()).then(|| {
                        // SAFETY: points into `rows.data`, `len` bytes, alive here.
                        unsafe { std::slice::from_raw_parts(v.ptr.cast::<u8>(), v.len as usize) }
                            .to_vec()
                    })
                })
                .collect(),
        )
    }

    #[test]
    fn result_rows_keep_values_nulls_and_empty_text_in_one_buffer() {
        let mut rows = ResultRows::default();
        rows.columns(&["a".into(), "b".into()]);
        for row in [
            [Some(&b"1"[..]), None],
            [Some(b""), Some(b"x\0y")],
            [None, None],
        ] {
            for v in row {
                rows.value(v);
            }
            assert!(rows.end_row());
        }
        assert_eq!((rows.width, rows.len()), (Some(2), 3));
        assert_eq!(fetched(&rows, 0), Some(vec![Some(b"1".to_vec()), None]));
        assert_eq!(
            fetched(&rows, 1),
            Some(vec![Some(Vec::new()), Some(b"x\0y".to_vec())])
        );
        assert_eq!(fetched(&rows, 2), Some(vec![None, None]));
        assert_eq!(fetched(&rows, 3), None);
        assert_eq!(rows.data, b"1x\0y");
        rows.clear();
        assert_eq!((rows.width, rows.len(), fetched(&rows, 0)), (None, 0, None));
    }
}
