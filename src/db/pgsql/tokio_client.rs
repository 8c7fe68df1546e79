//! The tokio-postgres client: the fallback for what the wire client ([`super::wire`]) does
//! not speak (another authentication method), or every connection when
//! `SBSUITE_PGSQL_CLIENT=tokio` asks for it.
//!
//! Each worker owns one [`tokio_postgres::Client`] for the whole run, on its own current-thread
//! tokio runtime ([`crate::db::io::runtime`]), so the worker thread is the only thread that
//! touches its socket, as in the MySQL driver and as sysbench's libpq client does (DESIGN.md
//! "Measured facts"). The client's `Connection` future (which does all the socket I/O) is not
//! spawned as a task: every call polls it together with the request in one `block_on` future
//! ([`Driver::drive`]). Measured on `oltp_point_select` (strace, BENCHMARKS.md): a spawned
//! connection task costs one more `epoll_wait` per query (the runtime checks for I/O before it
//! resumes the woken `block_on` future), which the in-place polling saves, leaving libpq's
//! pattern: send, wait, receive.
//!
//! Wire choices, and why:
//! * Prepared statements (`ps_mode = "auto"`) are prepared once per connection with `$n`
//!   placeholders; parameters are encoded for the types the server inferred (`INTEGER` columns
//!   get INT4; [`super::encode::put_param`], shared with the wire client), so no per-call type
//!   lookup or re-prepare happens. Result rows are drained without being decoded
//!   ([`tokio_postgres::Client::execute_raw`] skips `DataRow`s): the statement's column list
//!   already says whether it returned a result set.
//! * Plain text (`query`: BEGIN/COMMIT, `ps_mode = "disable"`, DDL) uses the simple query
//!   protocol, one round trip, as libpq's `PQexec` does.
//! * `load` streams `COPY … FROM STDIN` in PostgreSQL's binary format ([`super::encode`]).
//! * TLS is rustls ([`crate::db::tls`], the configuration the wire client uses too).
//!
//! The password is read from the target at connect time and handed to `tokio_postgres::Config`
//! only; it is never formatted into text.
//!
//! Bounds against a server that hangs or floods (`[target] query_timeout`, `max_packet`): the
//! connect, TLS and authentication end within `connect_timeout`; every command within
//! `query_timeout` (a `tokio::time::timeout` around its `block_on`; a COPY per chunk sent and
//! for the server's final answer), after which the connection is dropped; `query_rows` keeps at
//! most [`MAX_ADMIN_ROWS`] rows and `max_packet` bytes. What tokio-postgres reads is not bounded
//! by `max_packet`: its codec takes a message of any announced size, growing its buffer as the
//! bytes arrive (so memory grows only with what the server really sends, within the timeout).

use std::future::Future;
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

use super::encode::{
    COPY_CHUNK, binary_row, binary_type, copy_header, copy_sql, numbered, put_param,
};
use super::shared::{Phase, parse_i64, socket_dir_and_port, state_error, too_many_rows};
use crate::db::conn::{Connection, DataRow, Done, ErrKind, P, SqlError, StmtId};
use crate::db::io;
use crate::db::target::{Limits, MAX_ADMIN_ROWS, SslMode, Target};
use crate::db::tls;

/// Opens connection number `n` of `t` through tokio-postgres.
pub fn open_tokio(t: &Target, n: usize) -> Result<Box<dyn Connection>, SqlError> {
    let rt = io::runtime()
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
        limits: t.limits,
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

/// A command that outlived `query_timeout`.
struct TimedOut;

/// Awaits `f` for at most `timeout` (`None`: as long as it takes).
async fn within<F: Future>(timeout: Option<Duration>, f: F) -> Result<F::Output, TimedOut> {
    match timeout {
        None => Ok(f.await),
        Some(t) => tokio::time::timeout(t, f).await.map_err(|_| TimedOut),
    }
}

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
    /// the request's "connection closed". Gives up after `timeout` (`None`: never).
    fn drive<F: Future>(
        &self,
        io: &mut Option<Io>,
        lost: &mut Option<(String, String)>,
        timeout: Option<Duration>,
        fut: F,
    ) -> Result<F::Output, TimedOut> {
        let mut fut = std::pin::pin!(fut);
        let wake = &self.wake;
        self.rt.block_on(within(
            timeout,
            std::future::poll_fn(|cx| {
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
            }),
        ))
    }
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

/// The open client, or the error of a closed connection.
fn open_client(client: &Option<Client>) -> Result<&Client, SqlError> {
    client
        .as_ref()
        .ok_or_else(|| SqlError::client("connection closed", ErrKind::Lost))
}

/// A `tokio-postgres` connection driven from one OS thread through its own runtime.
struct PgConnection {
    driver: Driver,
    /// `query_timeout` and `max_packet` of the target.
    limits: Limits,
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
    /// A command's result, or its timeout: the connection is dropped then (an answer may
    /// still be on its way, and the server may never send it), so later calls see a closed
    /// connection. As in the wire client, a timeout is not a lost connection: the step fails
    /// with the reason instead of reconnecting to a server that hangs.
    fn timed<T>(&mut self, r: Result<T, TimedOut>) -> Result<T, SqlError> {
        r.map_err(|TimedOut| {
            self.drop_connection();
            SqlError::client(self.limits.timed_out(), ErrKind::Other)
        })
    }

    /// Closes the socket without waiting for the server (its state is unknown).
    fn drop_connection(&mut self) {
        self.client = None;
        self.io = None;
        self.stmts.clear();
    }

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
        let timeout = self.limits.query_timeout;
        let r = self
            .driver
            .drive(&mut self.io, &mut self.lost, timeout, async {
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
        self.timed(r)?.map_err(|e| self.error(&e))
    }
}

impl Connection for PgConnection {
    fn prepare(&mut self, sql: &str) -> Result<StmtId, SqlError> {
        let client = open_client(&self.client)?;
        let text = numbered(sql);
        let r = self.driver.drive(
            &mut self.io,
            &mut self.lost,
            self.limits.query_timeout,
            client.prepare(&text),
        );
        let stmt = self.timed(r)?.map_err(|e| self.error(&e))?;
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
            self.limits.query_timeout,
            client.execute_raw(stmt, params.iter().map(|p| Arg(*p))),
        );
        match self.timed(r)? {
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
        let max_packet = self.limits.max_packet;
        let timeout = self.limits.query_timeout;
        let r = self
            .driver
            .drive(&mut self.io, &mut self.lost, timeout, async {
                // Streamed, not `simple_query`, which collects an answer of any size.
                let mut stream = std::pin::pin!(client.simple_query_raw(sql).await?);
                let mut out = Vec::new();
                let mut kept = 0;
                while let Some(m) = stream.next().await {
                    if let SimpleQueryMessage::Row(row) = m? {
                        let values: Vec<Option<String>> = (0..row.len())
                            .map(|i| row.get(i).map(str::to_string))
                            .collect();
                        kept += values.iter().flatten().map(String::len).sum::<usize>();
                        if out.len() == MAX_ADMIN_ROWS || kept > max_packet {
                            return Ok(None);
                        }
                        out.push(values);
                    }
                }
                Ok::<_, tokio_postgres::Error>(Some(out))
            });
        match self.timed(r)? {
            Ok(Some(rows)) => Ok(rows),
            Ok(None) => {
                // The rest of the answer may never end: the connection goes.
                self.drop_connection();
                Err(too_many_rows(&self.limits))
            }
            Err(e) => Err(self.error(&e)),
        }
    }

    fn load(
        &mut self,
        table: &str,
        with_id: bool,
        fill: &mut dyn FnMut(&mut DataRow) -> bool,
    ) -> Result<(), SqlError> {
        let client = open_client(&self.client)?;
        let sql = copy_sql(table, with_id);
        let t = self.limits.query_timeout;
        // Not one timeout for the whole COPY (millions of rows may take longer than
        // `query_timeout`): one for its start, each chunk sent, and the server's final answer.
        let r = self
            .driver
            .drive(&mut self.io, &mut self.lost, None, async {
                let sink = within(t, client.copy_in::<_, bytes::Bytes>(sql.as_str())).await??;
                let mut sink = std::pin::pin!(sink);
                let mut buf = BytesMut::with_capacity(COPY_CHUNK + 512);
                copy_header(&mut buf);
                let mut row = DataRow::default();
                while fill(&mut row) {
                    binary_row(&mut buf, &row, with_id).map_err(LoadError::Row)?;
                    if buf.len() >= COPY_CHUNK {
                        within(t, sink.send(buf.split().freeze())).await??;
                    }
                }
                buf.put_i16(-1);
                within(t, sink.send(buf.split().freeze())).await??;
                within(t, sink.as_mut().finish()).await??;
                Ok(())
            });
        match r {
            Ok(Ok(())) => Ok(()),
            Ok(Err(LoadError::Pg(e))) => Err(self.error(&e)),
            Ok(Err(LoadError::Row(m))) => Err(SqlError::client(m, ErrKind::Other)),
            Err(TimedOut) | Ok(Err(LoadError::TimedOut)) => self.timed(Err(TimedOut)),
        }
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

/// Why a COPY failed: the server, a row that does not fit the INTEGER columns, or a step that
/// outlived `query_timeout`.
enum LoadError {
    Pg(tokio_postgres::Error),
    Row(String),
    TimedOut,
}

impl From<tokio_postgres::Error> for LoadError {
    fn from(e: tokio_postgres::Error) -> LoadError {
        LoadError::Pg(e)
    }
}

impl From<TimedOut> for LoadError {
    fn from(TimedOut: TimedOut) -> LoadError {
        LoadError::TimedOut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
