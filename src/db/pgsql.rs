//! PostgreSQL connections, shaped for a load generator.
//!
//! [`open`] uses sbsuite's own blocking protocol client ([`super::pgsql_wire`]), in plain text
//! or TLS, and `tokio-postgres` when the server needs an authentication method the wire client
//! does not speak, or when `SBSUITE_PGSQL_CLIENT=tokio` asks for it. The rest of this file is
//! the tokio-postgres path and what both share (error kinds, parameter encoding, COPY rows, the
//! rustls configuration of each TLS mode).
//!
//! Each worker owns one [`tokio_postgres::Client`] for the whole run, on its own current-thread
//! tokio runtime, so the worker thread is the only thread that touches its socket, as in the
//! MySQL driver and as sysbench's libpq client does (DESIGN.md "Measured facts"). The client's
//! `Connection` future (which does all the socket I/O) is not spawned as a task: every call
//! polls it together with the request in one `block_on` future ([`drive`]). Measured on
//! `oltp_point_select` (strace, BENCHMARKS.md): a spawned connection task costs one more
//! `epoll_wait` per query (the runtime checks for I/O before it resumes the woken `block_on`
//! future), which the in-place polling saves, leaving libpq's pattern: send, wait, receive.
//!
//! Wire choices, and why:
//! * Prepared statements (`ps_mode = "auto"`) are prepared once per connection with `$n`
//!   placeholders; parameters are encoded for the types the server inferred (`INTEGER` columns
//!   get INT4), so no per-call type lookup or re-prepare happens. Result rows are drained
//!   without being decoded ([`tokio_postgres::Client::execute_raw`] skips `DataRow`s): the
//!   statement's column list already says whether it returned a result set.
//! * Plain text (`query`: BEGIN/COMMIT, `ps_mode = "disable"`, DDL) uses the simple query
//!   protocol, one round trip, as libpq's `PQexec` does.
//! * `load` streams `COPY … FROM STDIN` in PostgreSQL's binary format (no text parsing of the
//!   integers on the server).
//! * TLS is rustls (ring), one configuration for both clients (`tls::client_config`):
//!   `prefer`/`require` encrypt without verifying (libpq's meaning), `verify-ca` checks the
//!   chain against `ssl_ca`, `verify-full` also the host name.
//!
//! The password is read from the target at connect time and handed to `tokio_postgres::Config`
//! only; it is never formatted into text.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use futures_util::{SinkExt, StreamExt};
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{Client, Config, NoTls, SimpleQueryMessage, Socket, Statement};

use super::{Connection, DataRow, Done, ErrKind, P, SqlError, SslMode, StmtId, Target};

/// The environment variable that picks the client: `wire` (default, sbsuite's own protocol
/// client [`super::pgsql_wire`]) or `tokio` (tokio-postgres).
pub const CLIENT_ENV: &str = "SBSUITE_PGSQL_CLIENT";

static CHOICE: super::wire::Choice =
    super::wire::Choice::new(CLIENT_ENV, "tokio", "tokio-postgres", "PostgreSQL");

/// Opens connection number `n` of `t` (endpoint `n` modulo the endpoints): through the wire
/// client when the connection needs no TLS and the server's auth method is one it speaks,
/// else through tokio-postgres.
pub fn open(t: &Target, n: usize) -> Result<Box<dyn Connection>, SqlError> {
    if let Some(c) = CHOICE.open_wire(|| super::pgsql_wire::open(t, n))? {
        return Ok(c);
    }
    open_tokio(t, n)
}

/// Opens connection number `n` of `t` through tokio-postgres.
pub fn open_tokio(t: &Target, n: usize) -> Result<Box<dyn Connection>, SqlError> {
    let rt = super::mysql::runtime()
        .map_err(|e| SqlError::client(format!("tokio runtime: {e}"), ErrKind::Other))?;
    let (config, tls) = config(t, n)?;
    let timeout = t.connect_timeout;
    let connected = rt.block_on(async {
        let attempt = async {
            match tls {
                Some(tls) => connect_with(&config, tls).await,
                None => connect_with(&config, NoTls).await,
            }
        };
        match tokio::time::timeout(timeout, attempt).await {
            Ok(r) => r.map_err(|e| sql_error(&e, Phase::Connect)),
            Err(_) => Err(SqlError::client(
                format!(
                    "connection timed out after {} s (raise [target] connect_timeout or check the host)",
                    timeout.as_secs()
                ),
                ErrKind::Unreachable,
            )),
        }
    });
    let (client, io) = connected?;
    Ok(Box::new(PgConnection {
        driver: Driver::new(rt),
        client: Some(client),
        io: Some(io),
        lost: None,
        stmts: Vec::new(),
    }))
}

/// The `Connection` future of a client, whatever its TLS stream type.
type Io = Pin<Box<dyn Future<Output = Result<(), tokio_postgres::Error>> + Send>>;

/// Connects; the connection future is returned unpolled, for [`drive`].
async fn connect_with<T>(config: &Config, tls: T) -> Result<(Client, Io), tokio_postgres::Error>
where
    T: MakeTlsConnect<Socket>,
    T::Stream: Send + 'static,
{
    let (client, connection) = config.connect(tls).await?;
    Ok((client, Box::pin(connection)))
}

/// The waker `drive` polls with. A wake-up that happens while `drive` itself is polling (the
/// request queueing its message for the connection, the connection handing the answer to the
/// request) only makes `drive` poll again; any other (the socket became readable, a timer)
/// wakes the runtime's `block_on`. Without it every query paid one more `epoll_wait`: tokio's
/// current-thread scheduler checks for I/O before it re-polls a future that woke itself.
struct LocalWake {
    polling: AtomicBool,
    again: AtomicBool,
    outer: Mutex<Option<Waker>>,
}

impl Wake for LocalWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.polling.load(Ordering::Relaxed) {
            self.again.store(true, Ordering::Relaxed);
        } else if let Ok(outer) = self.outer.lock()
            && let Some(w) = outer.as_ref()
        {
            w.wake_by_ref();
        }
    }
}

/// Polls of a request and its connection in one `drive` turn before it yields.
const MAX_ROUNDS: u32 = 64;

/// The runtime and the wake-up filter of one connection.
struct Driver {
    rt: tokio::runtime::Runtime,
    wake: Arc<LocalWake>,
    waker: Waker,
}

impl Driver {
    fn new(rt: tokio::runtime::Runtime) -> Driver {
        let wake = Arc::new(LocalWake {
            polling: AtomicBool::new(false),
            again: AtomicBool::new(false),
            outer: Mutex::new(None),
        });
        let waker = Waker::from(Arc::clone(&wake));
        Driver { rt, wake, waker }
    }

    /// Runs `fut` (a request of the client) to completion, polling the connection future `io`
    /// in the same task: the request queues its message, the connection writes it, reads the
    /// answer and hands it over, and the request completes, without a task switch or a
    /// spurious wake-up. When the connection ends, `io` becomes `None` and its error (a FATAL
    /// `57P01` from `pg_terminate_backend`, a reset socket) goes to `lost`, for the message of
    /// the request's "connection closed".
    fn drive<F: Future>(
        &self,
        io: &mut Option<Io>,
        lost: &mut Option<(String, String)>,
        fut: F,
    ) -> F::Output {
        let mut fut = std::pin::pin!(fut);
        let wake = &self.wake;
        self.rt.block_on(std::future::poll_fn(|cx| {
            if let Ok(mut outer) = wake.outer.lock()
                && !outer.as_ref().is_some_and(|w| w.will_wake(cx.waker()))
            {
                *outer = Some(cx.waker().clone());
            }
            let mut local = Context::from_waker(&self.waker);
            wake.polling.store(true, Ordering::Relaxed);
            let mut rounds = 0;
            let result = loop {
                wake.again.store(false, Ordering::Relaxed);
                if let Poll::Ready(v) = fut.as_mut().poll(&mut local) {
                    break Poll::Ready(v);
                }
                if let Some(conn) = io.as_mut()
                    && let Poll::Ready(r) = conn.as_mut().poll(&mut local)
                {
                    *io = None;
                    if let Err(e) = r {
                        let code = e.code().map(|c| c.code().to_string()).unwrap_or_default();
                        *lost = Some((code, describe(&e)));
                    }
                }
                if let Poll::Ready(v) = fut.as_mut().poll(&mut local) {
                    break Poll::Ready(v);
                }
                if !wake.again.load(Ordering::Relaxed) {
                    break Poll::Pending;
                }
                rounds += 1;
                if rounds == MAX_ROUNDS {
                    // Back to the scheduler now and then (a long COPY): it renews tokio's
                    // cooperative budget, whose exhaustion is also a self-wake.
                    cx.waker().wake_by_ref();
                    break Poll::Pending;
                }
            };
            // One thread: nothing can wake `local` between the last poll and this store
            // except the runtime's driver, which runs after we return.
            wake.polling.store(false, Ordering::Relaxed);
            result
        }))
    }
}

/// The libpq default socket directory of Debian/Ubuntu and most packages.
pub const SOCKET_DIR: &str = "/var/run/postgresql";

/// A `socket` entry: a directory (port 5432) or a socket file `<dir>/.s.PGSQL.<port>`.
pub fn socket_dir_and_port(entry: &str) -> (PathBuf, u16) {
    let path = Path::new(entry);
    if let Some(port) = path
        .file_name()
        .and_then(|f| f.to_str())
        .and_then(|f| f.strip_prefix(".s.PGSQL."))
        .and_then(|p| p.parse().ok())
    {
        let dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
        return (dir, port);
    }
    (
        path.to_path_buf(),
        super::default_port(crate::suite::Driver::Pgsql),
    )
}

/// The client configuration of connection `n`, and its TLS connector (`None`: plain).
fn config(
    t: &Target,
    n: usize,
) -> Result<(Config, Option<tokio_postgres_rustls::MakeRustlsConnect>), SqlError> {
    let mut c = Config::new();
    c.user(&t.user)
        .dbname(&t.database)
        .application_name("sbsuite")
        .connect_timeout(t.connect_timeout)
        .keepalives(true);
    let password = t
        .password()
        .map_err(|e| SqlError::client(e.to_string(), ErrKind::Other))?;
    if let Some(p) = password {
        c.password(p);
    }
    if !t.sockets.is_empty() {
        // libpq ignores sslmode on Unix sockets (the server refuses TLS there).
        let (dir, port) = socket_dir_and_port(&t.sockets[n % t.sockets.len()]);
        c.host_path(dir)
            .port(port)
            .ssl_mode(tokio_postgres::config::SslMode::Disable);
        return Ok((c, None));
    }
    let (host, port) = &t.hosts[n % t.hosts.len()];
    c.host(host).port(*port);
    let mode = match t.ssl {
        SslMode::Disabled => tokio_postgres::config::SslMode::Disable,
        SslMode::Preferred => tokio_postgres::config::SslMode::Prefer,
        // tokio-postgres parses only disable/prefer/require: the verify modes are `require`
        // plus a verifying rustls configuration.
        SslMode::Required | SslMode::VerifyCa | SslMode::VerifyIdentity => {
            tokio_postgres::config::SslMode::Require
        }
    };
    c.ssl_mode(mode);
    let tls = match t.ssl {
        SslMode::Disabled => None,
        _ => Some(tokio_postgres_rustls::MakeRustlsConnect::new(
            tls::client_config(t)?,
        )),
    };
    Ok((c, tls))
}

/// When an error happened: opening a connection, or using an open one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Connect,
    Use,
}

/// The error and its causes as one line (tokio-postgres' `Display` omits the causes).
fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut m = db.message().to_string();
        if let Some(d) = db.detail() {
            m.push_str(": ");
            m.push_str(d);
        }
        return m;
    }
    let mut m = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        m.push_str(": ");
        m.push_str(&s.to_string());
        source = s.source();
    }
    m
}

/// What a SQLSTATE means for the run.
pub fn kind_of_state(state: &str) -> ErrKind {
    match state {
        // admin_shutdown, crash_shutdown, and the whole connection exception class.
        "57P01" | "57P02" | "57P03" => ErrKind::Lost,
        s if s.starts_with("08") => ErrKind::Lost,
        "42P01" => ErrKind::NoTable,
        "42P07" => ErrKind::TableExists,
        "53300" => ErrKind::Unreachable,
        _ => ErrKind::Other,
    }
}

/// A server error (SQLSTATE `state`) as the engines see it (both clients).
pub fn state_error(state: &str, message: String, phase: Phase) -> SqlError {
    let mut kind = kind_of_state(state);
    if phase == Phase::Connect && kind == ErrKind::Lost {
        // "the database system is starting up / shutting down": try again later.
        kind = ErrKind::Unreachable;
    }
    SqlError::new(state, message, kind)
}

/// A driver error as the engines see it: SQLSTATE as the code, and what it means for the run.
fn sql_error(e: &tokio_postgres::Error, phase: Phase) -> SqlError {
    if let Some(db) = e.as_db_error() {
        return state_error(db.code().code(), describe(e), phase);
    }
    let io =
        std::error::Error::source(e).is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some());
    let text = e.to_string();
    let kind = if e.is_closed() {
        ErrKind::Lost
    } else if text.contains("TLS") || text.starts_with("authentication") || text.contains("config")
    {
        // A TLS or authentication failure does not heal by retrying.
        ErrKind::Other
    } else if io {
        match phase {
            Phase::Connect => ErrKind::Unreachable,
            Phase::Use => ErrKind::Lost,
        }
    } else {
        ErrKind::Other
    };
    SqlError::client(describe(e), kind)
}

/// `?` placeholders → `$1`, `$2`, … (outside quoted literals).
pub fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    let mut quote: Option<char> = None;
    for ch in sql.chars() {
        match (ch, quote) {
            ('\'' | '"', None) => quote = Some(ch),
            (c, Some(q)) if c == q => quote = None,
            ('?', None) => {
                n += 1;
                out.push('$');
                out.push_str(&n.to_string());
                continue;
            }
            _ => {}
        }
        out.push(ch);
    }
    out
}

/// One parameter, encoded for the type the server gave its placeholder (sysbench's columns
/// are INTEGER, so ids travel as INT4; `c` as text into CHAR(120)).
#[derive(Debug)]
struct Arg<'a>(P<'a>);

impl ToSql for Arg<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        put_param(self.0, ty, out)?;
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        binary_type(ty)
    }

    to_sql_checked!();
}

/// The placeholder types [`put_param`] encodes in binary.
pub fn binary_type(ty: &Type) -> bool {
    matches!(
        *ty,
        Type::INT2
            | Type::INT4
            | Type::INT8
            | Type::TEXT
            | Type::BPCHAR
            | Type::VARCHAR
            | Type::NAME
            | Type::UNKNOWN
    )
}

/// Appends `p` in the binary format of `ty` (one of [`binary_type`]) (both clients).
pub fn put_param(p: P<'_>, ty: &Type, out: &mut BytesMut) -> Result<(), String> {
    match p {
        P::Int(i) => match *ty {
            Type::INT4 => out.put_i32(
                i32::try_from(i)
                    .map_err(|_| format!("{i} does not fit the INTEGER placeholder"))?,
            ),
            Type::INT8 => out.put_i64(i),
            Type::INT2 => out.put_i16(
                i16::try_from(i)
                    .map_err(|_| format!("{i} does not fit the SMALLINT placeholder"))?,
            ),
            // A text-typed placeholder (`c = ?` compared with a number): the digits.
            _ => out.put_slice(i.to_string().as_bytes()),
        },
        P::Str(s) => match *ty {
            Type::INT2 | Type::INT4 | Type::INT8 => {
                return Err(format!("text `{s}` bound to a {ty} placeholder"));
            }
            _ => out.put_slice(s.as_bytes()),
        },
    }
    Ok(())
}

/// Bytes of COPY data buffered before they are sent.
pub const COPY_CHUNK: usize = 256 << 10;

/// The COPY statement of [`Connection::load`] (both clients).
pub fn copy_sql(table: &str, with_id: bool) -> String {
    if with_id {
        format!("COPY {table} (id, k, c, pad) FROM STDIN (FORMAT binary)")
    } else {
        format!("COPY {table} (k, c, pad) FROM STDIN (FORMAT binary)")
    }
}

/// The binary COPY header: signature, flags, header extension length.
pub fn copy_header(buf: &mut BytesMut) {
    buf.put_slice(b"PGCOPY\n\xff\r\n\0");
    buf.put_i32(0);
    buf.put_i32(0);
}

/// The first column of `sql`'s first row as an integer (both clients' `query_i64`).
pub fn parse_i64(sql: &str, value: Option<&str>) -> Result<Option<i64>, SqlError> {
    match value {
        None => Ok(None),
        Some(v) => v.trim().parse().map(Some).map_err(|_| {
            SqlError::client(
                format!("`{sql}` returned `{v}`, not an integer"),
                ErrKind::Other,
            )
        }),
    }
}

/// The connections a benchmark may open (both clients' `max_connections`).
pub fn max_connections_of(c: &mut dyn Connection) -> Result<Option<u64>, SqlError> {
    // Slots reserved for superusers (and, from PostgreSQL 16, for pg_use_reserved_connections)
    // are not for the benchmark's connections.
    Ok(c.query_i64(
        "SELECT current_setting('max_connections')::int \
         - current_setting('superuser_reserved_connections')::int \
         - COALESCE(current_setting('reserved_connections', true)::int, 0)",
    )?
    .and_then(|v| u64::try_from(v).ok()))
}

/// The open client, or the error of a closed connection.
fn open_client(client: &Option<Client>) -> Result<&Client, SqlError> {
    client
        .as_ref()
        .ok_or_else(|| SqlError::client("connection closed", ErrKind::Lost))
}

/// A `tokio-postgres` connection driven from one OS thread through its own runtime.
struct PgConnection {
    driver: Driver,
    /// `None` once closed.
    client: Option<Client>,
    /// The connection future, polled by [`drive`]; `None` once it ended.
    io: Option<Io>,
    /// Why the connection ended, if it did with an error: (SQLSTATE or "", message).
    lost: Option<(String, String)>,
    /// Prepared statements and whether each returns rows.
    stmts: Vec<(Statement, bool)>,
}

impl PgConnection {
    /// An error of a call on the open connection; a closed connection names why the
    /// connection task ended (e.g. `57P01 terminating connection due to administrator
    /// command`).
    fn error(&self, e: &tokio_postgres::Error) -> SqlError {
        let mut err = sql_error(e, Phase::Use);
        if err.kind == ErrKind::Lost
            && err.code.is_empty()
            && let Some((code, message)) = self.lost.as_ref()
        {
            err.code = code.clone();
            err.message = format!("{}: {message}", err.message);
        }
        err
    }

    /// Runs `sql` with the simple query protocol: whether it returned a result set, the rows
    /// affected (or returned) by its last command, and, when `first` is set, the first column
    /// of the first row.
    fn simple(&mut self, sql: &str, first: bool) -> Result<(Done, Option<String>), SqlError> {
        let client = open_client(&self.client)?;
        let r = self.driver.drive(&mut self.io, &mut self.lost, async {
            let mut stream = std::pin::pin!(client.simple_query_raw(sql).await?);
            let mut done = Done::default();
            let mut value = None;
            let mut seen_row = false;
            while let Some(m) = stream.next().await {
                match m? {
                    SimpleQueryMessage::RowDescription(_) => done.rows = true,
                    SimpleQueryMessage::Row(row) => {
                        if first && !seen_row {
                            value = row.try_get(0)?.map(str::to_string);
                        }
                        seen_row = true;
                    }
                    SimpleQueryMessage::CommandComplete(n) => done.affected = n,
                    _ => {}
                }
            }
            Ok::<_, tokio_postgres::Error>((done, value))
        });
        r.map_err(|e| self.error(&e))
    }
}

impl Connection for PgConnection {
    fn prepare(&mut self, sql: &str) -> Result<StmtId, SqlError> {
        let client = open_client(&self.client)?;
        let text = numbered(sql);
        let stmt = self
            .driver
            .drive(&mut self.io, &mut self.lost, client.prepare(&text))
            .map_err(|e| self.error(&e))?;
        let rows = !stmt.columns().is_empty();
        self.stmts.push((stmt, rows));
        Ok(self.stmts.len() - 1)
    }

    fn execute(&mut self, stmt: StmtId, params: &[P<'_>]) -> Result<Done, SqlError> {
        let client = open_client(&self.client)?;
        let (stmt, rows) = self.stmts.get(stmt).ok_or_else(|| {
            SqlError::client(format!("no prepared statement {stmt}"), ErrKind::Other)
        })?;
        let rows = *rows;
        let r = self.driver.drive(
            &mut self.io,
            &mut self.lost,
            client.execute_raw(stmt, params.iter().map(|p| Arg(*p))),
        );
        match r {
            Ok(affected) => Ok(Done { rows, affected }),
            Err(e) => Err(self.error(&e)),
        }
    }

    fn query(&mut self, sql: &str) -> Result<Done, SqlError> {
        self.simple(sql, false).map(|(done, _)| done)
    }

    fn query_i64(&mut self, sql: &str) -> Result<Option<i64>, SqlError> {
        let (_, value) = self.simple(sql, true)?;
        parse_i64(sql, value.as_deref())
    }

    fn query_rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, SqlError> {
        let client = open_client(&self.client)?;
        let r = self.driver.drive(&mut self.io, &mut self.lost, async {
            let mut out = Vec::new();
            for m in client.simple_query(sql).await? {
                if let SimpleQueryMessage::Row(row) = m {
                    out.push(
                        (0..row.len())
                            .map(|i| row.get(i).map(str::to_string))
                            .collect(),
                    );
                }
            }
            Ok::<_, tokio_postgres::Error>(out)
        });
        r.map_err(|e| self.error(&e))
    }

    fn load(
        &mut self,
        table: &str,
        with_id: bool,
        fill: &mut dyn FnMut(&mut DataRow) -> bool,
    ) -> Result<(), SqlError> {
        let client = open_client(&self.client)?;
        let sql = copy_sql(table, with_id);
        let r = self.driver.drive(&mut self.io, &mut self.lost, async {
            let sink = client
                .copy_in::<_, bytes::Bytes>(sql.as_str())
                .await
                .map_err(LoadError::Pg)?;
            let mut sink = std::pin::pin!(sink);
            let mut buf = BytesMut::with_capacity(COPY_CHUNK + 512);
            copy_header(&mut buf);
            let mut row = DataRow::default();
            while fill(&mut row) {
                binary_row(&mut buf, &row, with_id).map_err(LoadError::Row)?;
                if buf.len() >= COPY_CHUNK {
                    sink.send(buf.split().freeze())
                        .await
                        .map_err(LoadError::Pg)?;
                }
            }
            buf.put_i16(-1);
            sink.send(buf.split().freeze())
                .await
                .map_err(LoadError::Pg)?;
            sink.as_mut().finish().await.map_err(LoadError::Pg)
        });
        match r {
            Ok(_) => Ok(()),
            Err(LoadError::Pg(e)) => Err(self.error(&e)),
            Err(LoadError::Row(m)) => Err(SqlError::client(m, ErrKind::Other)),
        }
    }

    fn max_connections(&mut self) -> Result<Option<u64>, SqlError> {
        max_connections_of(self)
    }

    fn close(mut self: Box<Self>) {
        // Dropping the client first: statements then need no Close message, and the
        // connection future sends Terminate and ends, so the server backend exits (and
        // flushes its statistics) now rather than when it notices the socket.
        self.client = None;
        self.stmts.clear();
        if let Some(io) = self.io.take() {
            let _ = self
                .driver
                .rt
                .block_on(async { tokio::time::timeout(Duration::from_secs(2), io).await });
        }
    }
}

/// Why a COPY failed: the server, or a row that does not fit the INTEGER columns.
enum LoadError {
    Pg(tokio_postgres::Error),
    Row(String),
}

/// One row of binary COPY: field count, then each field as length + big-endian value (both
/// clients).
pub fn binary_row(buf: &mut BytesMut, r: &DataRow, with_id: bool) -> Result<(), String> {
    let int = |v: i64, col: &str| {
        i32::try_from(v).map_err(|_| {
            format!("{col} = {v} does not fit sysbench's INTEGER column: lower table_size")
        })
    };
    let id = int(r.id, "id")?;
    let k = int(r.k, "k")?;
    if with_id {
        buf.put_i16(4);
        buf.put_i32(4);
        buf.put_i32(id);
    } else {
        buf.put_i16(3);
    }
    buf.put_i32(4);
    buf.put_i32(k);
    buf.put_i32(r.c.len() as i32);
    buf.put_slice(r.c.as_bytes());
    buf.put_i32(r.pad.len() as i32);
    buf.put_slice(r.pad.as_bytes());
    Ok(())
}

/// rustls configurations for the TLS modes (both clients).
pub(super) mod tls {
    use std::sync::Arc;

    use rustls::client::WebPkiServerVerifier;
    use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
    use rustls::crypto::CryptoProvider;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
    use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

    use crate::db::{ErrKind, SqlError, SslMode, Target};

    fn bad(key: &str, path: &std::path::Path, what: impl std::fmt::Display) -> SqlError {
        SqlError::client(
            format!(
                "[target] {key} = \"{}\": {what}: give a readable PEM file",
                path.display()
            ),
            ErrKind::Other,
        )
    }

    fn provider() -> Arc<CryptoProvider> {
        Arc::new(rustls::crypto::ring::default_provider())
    }

    fn roots(t: &Target) -> Result<RootCertStore, SqlError> {
        let mut roots = RootCertStore::empty();
        // libpq's default for the verify modes: ~/.postgresql/root.crt.
        let path = match &t.ssl_ca {
            Some(p) => p.clone(),
            None => {
                let home = std::env::var_os("HOME").unwrap_or_default();
                let p = std::path::Path::new(&home).join(".postgresql/root.crt");
                if !p.exists() {
                    return Err(SqlError::client(
                        "TLS mode verify-ca / verify-full needs the server's CA certificate (PEM): set [target] ssl_ca = \"/path/to/root.crt\" (PGSSLROOTCERT for a sysbench command line), or put it in ~/.postgresql/root.crt",
                        ErrKind::Other,
                    ));
                }
                p
            }
        };
        let certs = CertificateDer::pem_file_iter(&path)
            .map_err(|e| bad("ssl_ca", &path, e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad("ssl_ca", &path, e))?;
        if certs.is_empty() {
            return Err(bad("ssl_ca", &path, "no certificate in it"));
        }
        for c in certs {
            roots.add(c).map_err(|e| bad("ssl_ca", &path, e))?;
        }
        Ok(roots)
    }

    /// The configuration of `t.ssl` (not `Disabled`).
    pub fn client_config(t: &Target) -> Result<ClientConfig, SqlError> {
        let provider = provider();
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| SqlError::client(format!("TLS setup: {e}"), ErrKind::Other))?;
        let verifier: Arc<dyn ServerCertVerifier> = match t.ssl {
            SslMode::Disabled | SslMode::Preferred | SslMode::Required => {
                Arc::new(AcceptAny(Arc::clone(&provider)))
            }
            SslMode::VerifyCa | SslMode::VerifyIdentity => {
                let inner = WebPkiServerVerifier::builder_with_provider(
                    Arc::new(roots(t)?),
                    Arc::clone(&provider),
                )
                .build()
                .map_err(|e| SqlError::client(format!("TLS setup: {e}"), ErrKind::Other))?;
                if t.ssl == SslMode::VerifyCa {
                    Arc::new(ChainOnly(inner))
                } else {
                    inner
                }
            }
        };
        let builder = builder
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        match (&t.ssl_cert, &t.ssl_key) {
            (Some(cert), Some(key)) => {
                let certs = CertificateDer::pem_file_iter(cert)
                    .map_err(|e| bad("ssl_cert", cert, e))?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| bad("ssl_cert", cert, e))?;
                let key = PrivateKeyDer::from_pem_file(key).map_err(|e| bad("ssl_key", key, e))?;
                builder.with_client_auth_cert(certs, key).map_err(|e| {
                    SqlError::client(format!("TLS client certificate: {e}"), ErrKind::Other)
                })
            }
            _ => Ok(builder.with_no_client_auth()),
        }
    }

    /// `prefer` / `require`: encryption without authentication of the server (libpq's
    /// meaning); handshake signatures are still checked.
    #[derive(Debug)]
    struct AcceptAny(Arc<CryptoProvider>);

    impl ServerCertVerifier for AcceptAny {
        fn verify_server_cert(
            &self,
            _end_entity: &CertificateDer<'_>,
            _intermediates: &[CertificateDer<'_>],
            _server_name: &ServerName<'_>,
            _ocsp_response: &[u8],
            _now: UnixTime,
        ) -> Result<ServerCertVerified, rustls::Error> {
            Ok(ServerCertVerified::assertion())
        }

        fn verify_tls12_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            rustls::crypto::verify_tls12_signature(
                message,
                cert,
                dss,
                &self.0.signature_verification_algorithms,
            )
        }

        fn verify_tls13_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            rustls::crypto::verify_tls13_signature(
                message,
                cert,
                dss,
                &self.0.signature_verification_algorithms,
            )
        }

        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.0.signature_verification_algorithms.supported_schemes()
        }
    }

    /// `verify-ca`: the chain must lead to `ssl_ca`; the name in the certificate is not
    /// compared with the host.
    #[derive(Debug)]
    struct ChainOnly(Arc<WebPkiServerVerifier>);

    impl ServerCertVerifier for ChainOnly {
        fn verify_server_cert(
            &self,
            end_entity: &CertificateDer<'_>,
            intermediates: &[CertificateDer<'_>],
            server_name: &ServerName<'_>,
            ocsp_response: &[u8],
            now: UnixTime,
        ) -> Result<ServerCertVerified, rustls::Error> {
            match self.0.verify_server_cert(
                end_entity,
                intermediates,
                server_name,
                ocsp_response,
                now,
            ) {
                Err(rustls::Error::InvalidCertificate(
                    rustls::CertificateError::NotValidForName
                    | rustls::CertificateError::NotValidForNameContext { .. },
                )) => Ok(ServerCertVerified::assertion()),
                other => other,
            }
        }

        fn verify_tls12_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            self.0.verify_tls12_signature(message, cert, dss)
        }

        fn verify_tls13_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            self.0.verify_tls13_signature(message, cert, dss)
        }

        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.0.supported_verify_schemes()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_marks_become_numbered_placeholders_outside_literals() {
        assert_eq!(
            numbered("SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?"),
            "SELECT c FROM sbtest1 WHERE id BETWEEN $1 AND $2"
        );
        assert_eq!(
            numbered("INSERT INTO t (id, k, c, pad) VALUES (?, ?, ?, ?)"),
            "INSERT INTO t (id, k, c, pad) VALUES ($1, $2, $3, $4)"
        );
        assert_eq!(
            numbered("SELECT '?', \"a?\" WHERE x=?"),
            "SELECT '?', \"a?\" WHERE x=$1"
        );
    }

    #[test]
    fn sqlstates_map_to_what_the_engine_does() {
        for s in ["57P01", "57P02", "57P03", "08006", "08003"] {
            assert_eq!(kind_of_state(s), ErrKind::Lost, "{s}");
        }
        assert_eq!(kind_of_state("42P01"), ErrKind::NoTable);
        assert_eq!(kind_of_state("42P07"), ErrKind::TableExists);
        assert_eq!(kind_of_state("53300"), ErrKind::Unreachable);
        for s in ["40P01", "23505", "40001", "28P01", "3D000"] {
            assert_eq!(kind_of_state(s), ErrKind::Other, "{s}");
        }
    }

    #[test]
    fn socket_entries_are_directories_or_socket_files() {
        assert_eq!(
            socket_dir_and_port("/var/run/postgresql"),
            (PathBuf::from("/var/run/postgresql"), 5432)
        );
        assert_eq!(
            socket_dir_and_port("/tmp/.s.PGSQL.5433"),
            (PathBuf::from("/tmp"), 5433)
        );
    }

    #[test]
    fn integers_bind_to_the_placeholder_type() {
        let mut out = BytesMut::new();
        Arg(P::Int(7)).to_sql(&Type::INT4, &mut out).unwrap();
        assert_eq!(&out[..], &[0, 0, 0, 7]);
        out.clear();
        Arg(P::Int(7)).to_sql(&Type::INT8, &mut out).unwrap();
        assert_eq!(out.len(), 8);
        assert!(Arg(P::Int(1 << 40)).to_sql(&Type::INT4, &mut out).is_err());
        assert!(Arg(P::Str("x")).to_sql(&Type::INT4, &mut out).is_err());
        out.clear();
        Arg(P::Str("12-34"))
            .to_sql(&Type::BPCHAR, &mut out)
            .unwrap();
        assert_eq!(&out[..], b"12-34");
    }

    #[test]
    fn binary_copy_rows_have_sysbench_columns() {
        let mut buf = BytesMut::new();
        let row = DataRow {
            id: 1,
            k: 2,
            c: "c".into(),
            pad: "pp".into(),
        };
        binary_row(&mut buf, &row, true).unwrap();
        assert_eq!(buf.len(), 2 + 8 + 8 + 5 + 6);
        buf.clear();
        binary_row(&mut buf, &row, false).unwrap();
        assert_eq!(&buf[..2], &[0, 3]);
    }
}
