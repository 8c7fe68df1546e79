//! A lean, blocking PostgreSQL frontend/backend protocol (v3) client for the OLTP hot path.
//!
//! Why it exists: measured against sysbench 1.0.20's pgsql driver (libpq; BENCHMARKS.md, issue
//! #5), tokio-postgres cost 1.0–1.3× sysbench's client CPU per query: every statement goes
//! through a response channel, an unbounded request channel into the `Connection` future, a
//! codec that splits `BytesMut` frames and the runtime's `block_on` bookkeeping. A load
//! generator needs none of that: it sends a statement, waits for the answer on a blocking
//! socket and only has to find where the answer ends. This client does exactly that: one
//! reusable read buffer ([`crate::db::io::Reader`]), one `write` per call (Bind + Execute + Sync
//! for a prepared statement), and `DataRow` messages skipped by their length without looking
//! inside. The messages are built with `postgres-protocol` (the crate under tokio-postgres);
//! parameters are encoded as the tokio-postgres path encodes them ([`super::encode::put_param`]).
//!
//! Scope (everything else is [`WireError::Unsupported`] and `pgsql::open` falls back to
//! tokio-postgres): protocol 3.0 over a Unix socket (always plain text, as libpq) or TCP, in
//! plain text (`sslmode = disable`) or TLS: every other mode sends an SSLRequest and, when the
//! server answers `S`, runs a blocking rustls handshake ([`Stream::tls_until`]) with the
//! configuration the tokio-postgres path uses ([`crate::db::tls`]: `prefer`/`require` encrypt
//! without verifying, `verify-ca` checks the chain against `ssl_ca`, `verify-full` also the
//! host name; the client certificate when given). A server answering `N` gets plain text for
//! `prefer` and fails the other modes. Authentication trust, cleartext password, md5 and
//! SCRAM-SHA-256 (without channel binding, also over TLS), the extended query protocol
//! with named statements prepared once per connection, the simple query protocol, and
//! `COPY … FROM STDIN` for loading. The password is read from the target at connect time and
//! only ever goes into the authentication messages.
//!
//! Bounds against a broken or hostile server (issue #13), at the cost of one clock read per
//! command and per socket read: every message header is checked against `[target]
//! max_packet` before its body is read or skipped; the connect, TLS handshake
//! ([`Stream::tls_until`]) and startup share one `connect_timeout` deadline, with at most
//! `MAX_AUTH_ROUNDS` authentication requests and `MAX_STARTUP_MESSAGES` messages; after
//! it every command is armed once ([`Reader::rewind`]) and every socket read and write is
//! bounded by `query_timeout`; `query_rows` keeps at most `MAX_ADMIN_ROWS` rows and
//! `max_packet` bytes (`query_each`, scripts' result sets, hands rows on without a bound). A
//! command that times out breaks the connection and fails with
//! [`Limits::timed_out`] (not as a lost connection: reconnecting to a hung server would hang
//! again).

use std::io::{ErrorKind as IoKind, Read as _, Write as _};
use std::net::TcpStream;
use std::ops::Range;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{BufMut, BytesMut};
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, SCRAM_SHA_256, ScramSha256};
use postgres_protocol::message::frontend;
use tokio_postgres::types::Type;

use super::encode::{
    COPY_CHUNK, binary_row, binary_type, copy_header, copy_sql, copy_text_sql, numbered, put_param,
    put_text, text_row,
};
use super::shared::{Phase, parse_i64, socket_dir_and_port, state_error, too_many_rows};
use crate::db::conn::{
    Cell, Collect, Connection, DataRow, Done, ErrKind, Fetched, KeepAll, P, RowSink, SqlError,
    StmtId, Table,
};
pub use crate::db::io::WireError;
use crate::db::io::{self, ConnectError, ReadError, Reader, Stream};
use crate::db::target::{Limits, SslMode, Target};
use crate::db::tls;

// Authentication request codes of the `R` message.
const AUTH_OK: i32 = 0;
const AUTH_CLEARTEXT: i32 = 3;
const AUTH_MD5: i32 = 5;
const AUTH_SASL: i32 = 10;
const AUTH_SASL_CONTINUE: i32 = 11;
const AUTH_SASL_FINAL: i32 = 12;

/// The most authentication requests (`R` messages) a startup accepts: SCRAM-SHA-256 takes four
/// (SASL, SASLContinue, SASLFinal, AuthenticationOk), md5 and cleartext two. More is a server
/// that loops, not a login.
const MAX_AUTH_ROUNDS: usize = 8;

/// The most messages a startup accepts before ReadyForQuery: PostgreSQL sends about twenty
/// (the authentication, a ParameterStatus per reported setting, BackendKeyData, a few notices).
/// A flood of them is an error at once rather than at `connect_timeout`.
const MAX_STARTUP_MESSAGES: usize = 10_000;

/// Opens connection number `n` of `t` (endpoint `n` modulo the endpoints, as `pgsql::open`).
pub fn open(t: &Target, n: usize) -> Result<Box<dyn Connection>, WireError> {
    Ok(Box::new(WireConnection::open(t, n)?))
}

/// A statement prepared on the server as `name`.
struct Stmt {
    name: String,
    /// The types the server gave its placeholders.
    types: Vec<Type>,
    /// Whether it returns rows (a RowDescription, not NoData).
    rows: bool,
    /// The names of its result columns.
    columns: Vec<String>,
}

/// One blocking connection speaking the protocol itself.
pub struct WireConnection {
    /// The socket and its read buffer.
    io: Reader,
    /// `query_timeout` and `max_packet` of the target.
    limits: Limits,
    /// Whether the startup is still running: a timeout then is `connect_timeout`'s.
    phase: Phase,
    /// The messages being written, reused.
    out: BytesMut,
    stmts: Vec<Stmt>,
    /// Set after an I/O or protocol error or a FATAL server error: the connection is
    /// unusable.
    broken: bool,
    /// The transaction status of the last ReadyForQuery: `I` idle, `T` in a transaction,
    /// `E` in a failed transaction.
    txn_status: u8,
    /// Where and how to send a cancel request for this connection (its BackendKeyData);
    /// `None` before the startup ends, or when the server sent no key.
    cancel: Option<Arc<CancelKey>>,
}

/// What a cancel request needs: the server's address and the connection's BackendKeyData.
struct CancelKey {
    to: CancelTo,
    pid: i32,
    secret: i32,
    connect_timeout: Duration,
}

enum CancelTo {
    Tcp(String, u16),
    Unix(std::path::PathBuf),
}

impl CancelKey {
    /// Sends PostgreSQL's cancel request (a new connection carrying the key, answered by the
    /// server closing it): the statement in flight fails with SQLSTATE 57014. Unencrypted,
    /// as libpq sends it (a cancel request carries no credentials). Best effort, bounded by
    /// `connect_timeout`.
    fn cancel(&self) {
        let mut request = BytesMut::with_capacity(16);
        frontend::cancel_request(self.pid, self.secret, &mut request);
        let send = |s: &mut dyn std::io::Write| s.write_all(&request);
        match &self.to {
            CancelTo::Tcp(host, port) => {
                if let Ok(mut s) = io::connect_tcp(host, *port, self.connect_timeout) {
                    let _ = s.set_read_timeout(Some(self.connect_timeout));
                    let _ = s.set_write_timeout(Some(self.connect_timeout));
                    if send(&mut s).is_ok() {
                        // The server has the request once it closes the connection.
                        let _ = s.read(&mut [0u8; 1]);
                    }
                }
            }
            CancelTo::Unix(path) => {
                if let Ok(mut s) = UnixStream::connect(path) {
                    let _ = s.set_read_timeout(Some(self.connect_timeout));
                    let _ = s.set_write_timeout(Some(self.connect_timeout));
                    if send(&mut s).is_ok() {
                        let _ = s.read(&mut [0u8; 1]);
                    }
                }
            }
        }
    }
}

/// What a caller wants from an answer besides its end.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Want {
    /// Nothing: rows are skipped.
    Drain,
    /// The first column of the first row, as text.
    First,
    /// Every row, every column as text.
    Rows,
    /// The number of rows ([`Answer::count`]).
    Count,
    /// The number of rows, the first one as text in [`Answer::rows`] and the first result's
    /// column names.
    FirstRow,
    /// A statement description (ParameterDescription, RowDescription / NoData).
    Describe,
    /// To stream COPY data: stop at CopyInResponse.
    CopyIn,
}

/// An answer up to ReadyForQuery (or up to CopyInResponse for [`Want::CopyIn`]).
#[derive(Debug, Default)]
struct Answer {
    done: Done,
    first: Option<String>,
    rows: Vec<Vec<Option<String>>>,
    /// The column names of the RowDescription, for [`Want::Rows`].
    columns: Vec<String>,
    params: Vec<Type>,
    copy_in: bool,
    /// DataRows of the first result set, for [`Want::Count`] and [`Want::FirstRow`].
    count: u64,
    /// Whether the first result set has ended (a text query of several: later rows are not
    /// counted, as in the MySQL clients).
    counted: bool,
}

/// A server error or notice: its fields.
#[derive(Debug, Default, PartialEq, Eq)]
struct ServerError {
    severity: String,
    code: String,
    message: String,
    detail: Option<String>,
}

impl ServerError {
    /// The FATAL (or PANIC) errors after which the server closes the connection.
    fn fatal(&self) -> bool {
        matches!(self.severity.as_str(), "FATAL" | "PANIC")
    }

    /// As the engines see it (the message and detail as tokio-postgres' path shows them).
    fn into_sql(self, phase: Phase) -> SqlError {
        let fatal_in_use = phase == Phase::Use && self.fatal();
        let mut message = self.message;
        if let Some(d) = self.detail {
            message.push_str(": ");
            message.push_str(&d);
        }
        let mut e = state_error(&self.code, message, phase);
        if fatal_in_use {
            // The server closes the connection after a FATAL whatever its SQLSTATE.
            e.kind = ErrKind::Lost;
            e.message = format!("connection closed: {}", e.message);
        }
        e
    }
}

/// Parses an ErrorResponse / NoticeResponse body: fields of a type byte and a NUL-terminated
/// text, up to a NUL type byte.
fn parse_error(body: &[u8]) -> ServerError {
    let mut e = ServerError::default();
    let mut severity_localized = String::new();
    let mut rest = body;
    while let Some((&field, tail)) = rest.split_first() {
        if field == 0 {
            break;
        }
        let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        let text = String::from_utf8_lossy(&tail[..end]).into_owned();
        match field {
            b'V' => e.severity = text,
            b'S' => severity_localized = text,
            b'C' => e.code = text,
            b'M' => e.message = text,
            b'D' => e.detail = Some(text),
            _ => {}
        }
        rest = tail.get(end + 1..).unwrap_or(&[]);
    }
    if e.severity.is_empty() {
        // Servers before 9.6 send only the (possibly translated) severity.
        e.severity = severity_localized;
    }
    e
}

/// The row count at the end of a CommandComplete tag (`INSERT 0 5`, `UPDATE 3`, `SELECT 100`);
/// 0 for tags without one (`BEGIN`), as tokio-postgres counts.
fn tag_count(body: &[u8]) -> u64 {
    let tag = body.strip_suffix(&[0]).unwrap_or(body);
    let last = tag.rsplit(|&b| b == b' ').next().unwrap_or(&[]);
    std::str::from_utf8(last)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// A DataRow body's columns as text (`None` for NULL); `limit` columns at most.
fn row_values(body: &[u8], limit: usize) -> Option<Vec<Option<String>>> {
    let mut out = Vec::new();
    each_value(body, limit, &mut |v| {
        out.push(v.map(|v| String::from_utf8_lossy(v).into_owned()));
    })?;
    Some(out)
}

/// Hands the first `limit` values of a DataRow body to `f` (`None`: NULL); `None` for a
/// malformed body.
fn each_value(body: &[u8], limit: usize, f: &mut dyn FnMut(Option<&[u8]>)) -> Option<()> {
    let count = usize::try_from(i16::from_be_bytes(body.get(..2)?.try_into().ok()?)).ok()?;
    let mut at = 2;
    for _ in 0..count.min(limit) {
        let len = i32::from_be_bytes(body.get(at..at + 4)?.try_into().ok()?);
        at += 4;
        if len < 0 {
            f(None);
            continue;
        }
        let end = at + len as usize;
        f(Some(body.get(at..end)?));
        at = end;
    }
    Some(())
}

/// A RowDescription body: the column names (each a C string followed by 18 bytes of table,
/// attribute, type, size, modifier and format).
fn column_names(body: &[u8]) -> Option<Vec<String>> {
    let count = usize::try_from(i16::from_be_bytes(body.get(..2)?.try_into().ok()?)).ok()?;
    let mut at = 2;
    let mut names = Vec::with_capacity(count.min(1600));
    for _ in 0..count {
        let len = body.get(at..)?.iter().position(|&b| b == 0)?;
        names.push(String::from_utf8_lossy(&body[at..at + len]).into_owned());
        at += len + 1 + 18;
    }
    (at <= body.len()).then_some(names)
}

/// A ParameterDescription body: the placeholders' types (unknown OIDs as `UNKNOWN`, which is
/// sent as text).
fn parameter_types(body: &[u8]) -> Option<Vec<Type>> {
    let count = usize::try_from(i16::from_be_bytes(body.get(..2)?.try_into().ok()?)).ok()?;
    (0..count)
        .map(|i| {
            let b = body.get(2 + 4 * i..6 + 4 * i)?;
            let oid = u32::from_be_bytes(b.try_into().ok()?);
            Some(Type::from_oid(oid).unwrap_or(Type::UNKNOWN))
        })
        .collect()
}

/// Appends a Bind message for the unnamed portal of statement `name`: integers in binary for
/// integer placeholders and text-like ones (as tokio-postgres' path binds them), any other
/// placeholder type in text format for the server to parse; results in text.
fn put_bind(
    out: &mut BytesMut,
    name: &str,
    types: &[Type],
    params: &[P<'_>],
) -> Result<(), String> {
    let count =
        i16::try_from(params.len()).map_err(|_| "more than 32767 parameters".to_string())?;
    out.put_u8(b'B');
    let start = out.len();
    out.put_i32(0);
    out.put_u8(0); // unnamed portal
    out.put_slice(name.as_bytes());
    out.put_u8(0);
    out.put_i16(count);
    for ty in types {
        out.put_i16(i16::from(binary_type(ty)));
    }
    out.put_i16(count);
    for (p, ty) in params.iter().zip(types) {
        if matches!(p, P::Null) {
            out.put_i32(-1);
            continue;
        }
        let at = out.len();
        out.put_i32(0);
        if binary_type(ty) {
            put_param(*p, ty, out)?;
        } else {
            put_text(*p, out);
        }
        let len = (out.len() - at - 4) as i32;
        out[at..at + 4].copy_from_slice(&len.to_be_bytes());
    }
    out.put_i16(0); // every result column in text
    let len = i32::try_from(out.len() - start).map_err(|_| "a Bind message over 2 GiB")?;
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
    Ok(())
}

/// A message text with a NUL byte in it (postgres-protocol refuses to write it).
fn nul_error(e: std::io::Error) -> SqlError {
    SqlError::client(format!("cannot send the statement: {e}"), ErrKind::Other)
}

impl WireConnection {
    /// Connects, negotiates TLS, authenticates and reads up to the first ReadyForQuery, all
    /// within one `connect_timeout` (however the server trickles or loops); after that every
    /// command and every socket read and write is bounded by `query_timeout`.
    pub fn open(t: &Target, n: usize) -> Result<WireConnection, WireError> {
        let start = Instant::now();
        let deadline = start + t.connect_timeout;
        let left = || {
            t.connect_timeout
                .saturating_sub(start.elapsed())
                .max(Duration::from_millis(1))
        };
        let cancel_to;
        let stream = if t.sockets.is_empty() {
            let (host, port) = &t.hosts[n % t.hosts.len()];
            cancel_to = CancelTo::Tcp(host.clone(), *port);
            let tcp = io::connect_tcp(host, *port, left()).map_err(|e| {
                let what = match e {
                    ConnectError::Resolve(e) => format!("could not resolve `{host}`: {e}"),
                    ConnectError::Connect(e) => io::timed_out(&e, t.connect_timeout),
                };
                SqlError::client(
                    format!("error connecting to server at {host}:{port}: {what}"),
                    ErrKind::Unreachable,
                )
            })?;
            match t.ssl {
                SslMode::Disabled => Stream::Tcp(tcp),
                _ => start_tls(tcp, t, host, deadline)?,
            }
        } else {
            // libpq ignores sslmode on Unix sockets (the server refuses TLS there).
            let (dir, port) = socket_dir_and_port(&t.sockets[n % t.sockets.len()]);
            let path = dir.join(format!(".s.PGSQL.{port}"));
            cancel_to = CancelTo::Unix(path.clone());
            let stream = UnixStream::connect(&path).map_err(|e| {
                SqlError::client(
                    format!(
                        "error connecting to server on socket {}: {e}",
                        path.display()
                    ),
                    ErrKind::Unreachable,
                )
            })?;
            Stream::Unix(stream)
        };
        let mut c = WireConnection {
            io: Reader::new(stream, t.limits.max_packet),
            limits: t.limits,
            phase: Phase::Connect,
            out: BytesMut::with_capacity(256),
            stmts: Vec::new(),
            // Until the startup ends: nothing is sent on drop (no Terminate mid-auth).
            broken: true,
            txn_status: b'I',
            cancel: None,
        };
        // The startup takes what is left of `connect_timeout`: one blocking read or write
        // waits at most that long, and the deadline ends a server that trickles or loops.
        c.set_timeout(Some(left()))?;
        c.io.set_deadline(Some(deadline));
        let password = t
            .password()
            .map_err(|e| SqlError::client(e.to_string(), ErrKind::Other))?;
        let key = c.startup(t, password.as_deref()).map_err(at_connect)?;
        c.cancel = key.map(|(pid, secret)| {
            Arc::new(CancelKey {
                to: cancel_to,
                pid,
                secret,
                // A server that does not take a cancel request in seconds will not act on it.
                connect_timeout: t.connect_timeout.min(Duration::from_secs(5)),
            })
        });
        c.set_timeout(t.limits.query_timeout)?;
        c.io.use_ring()?;
        c.phase = Phase::Use;
        c.broken = false;
        Ok(c)
    }

    fn set_timeout(&mut self, d: Option<Duration>) -> Result<(), WireError> {
        self.io.set_timeout(d).map_err(|e| {
            WireError::Sql(SqlError::client(
                format!("socket setup: {e}"),
                ErrKind::Unreachable,
            ))
        })
    }

    /// Sends the startup message, authenticates, and reads up to the first ReadyForQuery;
    /// returns the BackendKeyData (process id, secret key) when the server sent one.
    fn startup(
        &mut self,
        t: &Target,
        password: Option<&str>,
    ) -> Result<Option<(i32, i32)>, WireError> {
        let mut key = None;
        let mut params = vec![
            ("user", t.user.as_str()),
            ("application_name", "sbsuite"),
            ("client_encoding", "UTF8"),
        ];
        if !t.database.is_empty() {
            params.push(("database", t.database.as_str()));
        }
        self.out.clear();
        frontend::startup_message(params, &mut self.out).map_err(nul_error)?;
        self.send()?;
        let need_password = || {
            WireError::Sql(SqlError::client(
                "the server asks for a password: set [target] password (--pgsql-password)",
                ErrKind::Other,
            ))
        };
        let mut scram: Option<ScramSha256> = None;
        let (mut messages, mut auth_rounds) = (0, 0);
        loop {
            messages += 1;
            if messages > MAX_STARTUP_MESSAGES {
                let what = format!(
                    "more than {MAX_STARTUP_MESSAGES} messages during the startup without ReadyForQuery"
                );
                return Err(self.protocol(what).into());
            }
            let (tag, r) = self.message()?;
            let body = &self.io.buf[r];
            match tag {
                b'R' => {
                    auth_rounds += 1;
                    if auth_rounds > MAX_AUTH_ROUNDS {
                        let what = format!(
                            "the server asked for authentication more than {MAX_AUTH_ROUNDS} times (PostgreSQL needs at most 4 rounds)"
                        );
                        return Err(self.protocol(what).into());
                    }
                    let Some(code) = body
                        .get(..4)
                        .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
                    else {
                        return Err(self.protocol("short authentication request").into());
                    };
                    let data = &body[4..];
                    self.out.clear();
                    match code {
                        AUTH_OK => continue,
                        AUTH_CLEARTEXT => {
                            let pw = password.ok_or_else(need_password)?;
                            frontend::password_message(pw.as_bytes(), &mut self.out)
                                .map_err(nul_error)?;
                        }
                        AUTH_MD5 => {
                            let pw = password.ok_or_else(need_password)?;
                            let Ok(salt) = <[u8; 4]>::try_from(data) else {
                                return Err(self.protocol("bad md5 salt").into());
                            };
                            let hash = md5_hash(t.user.as_bytes(), pw.as_bytes(), salt);
                            frontend::password_message(hash.as_bytes(), &mut self.out)
                                .map_err(nul_error)?;
                        }
                        AUTH_SASL => {
                            let pw = password.ok_or_else(need_password)?;
                            let offered = data
                                .split(|&b| b == 0)
                                .any(|m| m == SCRAM_SHA_256.as_bytes());
                            if !offered {
                                return Err(WireError::Unsupported(format!(
                                    "the server offers SASL mechanisms `{}` but not SCRAM-SHA-256",
                                    String::from_utf8_lossy(data).replace('\0', " ").trim()
                                )));
                            }
                            let s = ScramSha256::new(pw.as_bytes(), ChannelBinding::unsupported());
                            frontend::sasl_initial_response(
                                SCRAM_SHA_256,
                                s.message(),
                                &mut self.out,
                            )
                            .map_err(nul_error)?;
                            scram = Some(s);
                        }
                        AUTH_SASL_CONTINUE => {
                            let Some(s) = scram.as_mut() else {
                                return Err(self.protocol("SASL data without SASL").into());
                            };
                            s.update(data).map_err(|e| scram_error(&e))?;
                            frontend::sasl_response(s.message(), &mut self.out)
                                .map_err(nul_error)?;
                        }
                        AUTH_SASL_FINAL => {
                            let Some(s) = scram.as_mut() else {
                                return Err(self.protocol("SASL data without SASL").into());
                            };
                            // Checks the server's signature: it knows the password too.
                            s.finish(data).map_err(|e| scram_error(&e))?;
                            continue;
                        }
                        other => {
                            return Err(WireError::Unsupported(format!(
                                "the server asks for authentication method {other} (Kerberos, GSSAPI or SSPI)"
                            )));
                        }
                    }
                    self.send()?;
                }
                b'E' => {
                    let e = parse_error(body);
                    return Err(e.into_sql(Phase::Connect).into());
                }
                b'Z' => return Ok(key),
                b'K' => {
                    if let Some(b) = body.get(..8) {
                        key = Some((
                            i32::from_be_bytes([b[0], b[1], b[2], b[3]]),
                            i32::from_be_bytes([b[4], b[5], b[6], b[7]]),
                        ));
                    }
                }
                // ParameterStatus, NoticeResponse, NegotiateProtocolVersion (a minor version
                // or option the server does not know: it goes on).
                b'S' | b'N' | b'v' => {}
                other => {
                    let what = format!(
                        "an unexpected `{}` message during startup",
                        other.escape_ascii()
                    );
                    return Err(self.protocol(what).into());
                }
            }
        }
    }

    /// The server did not answer in time: during the startup within `connect_timeout`
    /// (unreachable: the engine may try again), after it within `query_timeout`. The
    /// connection is dropped either way (an answer may still be on its way). A statement that
    /// timed out is not a lost connection: reconnecting to a server that hangs would only hang
    /// again, so the step fails with the reason (an empty code: `ignore_errors = "all"` alone
    /// skips it).
    fn timed_out(&mut self) -> SqlError {
        self.broken = true;
        match self.phase {
            Phase::Connect => SqlError::client(
                "the server accepted the connection but did not answer within connect_timeout (raise [target] connect_timeout or check the server)",
                ErrKind::Unreachable,
            ),
            Phase::Use => {
                // The client gives up on the statement; the server would run it on (a
                // `pg_sleep`, a lock wait) until it tried to send the answer.
                if let Some(k) = &self.cancel {
                    k.cancel();
                }
                SqlError::client(self.limits.timed_out(), ErrKind::Other)
            }
        }
    }

    /// [`too_many_rows`]: the rest of the answer is not read, the connection goes.
    fn too_many_rows(&mut self) -> SqlError {
        self.broken = true;
        too_many_rows(&self.limits)
    }

    fn lost(&mut self, what: impl std::fmt::Display) -> SqlError {
        self.broken = true;
        SqlError::client(format!("connection closed ({what})"), ErrKind::Lost)
    }

    /// A protocol violation: the stream is out of step, so the connection is dropped (the
    /// engine reconnects if the error is ignored).
    fn protocol(&mut self, what: impl std::fmt::Display) -> SqlError {
        self.broken = true;
        SqlError::client(format!("PostgreSQL protocol error: {what}"), ErrKind::Other)
    }

    fn fill(&mut self, need: usize) -> Result<(), ReadError> {
        self.io.fill(need)
    }

    fn read_failed(&mut self, e: ReadError) -> SqlError {
        match e {
            ReadError::Closed => self.lost("the server closed the connection"),
            ReadError::TimedOut => self.timed_out(),
            ReadError::TooLarge(n) => {
                let m = self.limits.too_large("PostgreSQL", n as u64);
                self.protocol(m)
            }
            ReadError::Io(e) => self.lost(e),
        }
    }

    /// Reads the next message header: its type and body length; the body starts at `io.pos`.
    fn header(&mut self) -> Result<(u8, usize), SqlError> {
        if let Err(e) = self.fill(5) {
            return Err(self.read_failed(e));
        }
        let h = &self.io.buf[self.io.pos..self.io.pos + 5];
        let tag = h[0];
        let len = i32::from_be_bytes([h[1], h[2], h[3], h[4]]);
        if len < 4 {
            return Err(self.protocol(format!("message `{}` of length {len}", tag.escape_ascii())));
        }
        // Before a byte of the body is read or skipped: a `R` promising 2 GiB must not make
        // the client allocate (or wait for) 2 GiB.
        if len as usize - 4 > self.limits.max_packet {
            let m = self.limits.too_large("PostgreSQL", len as u64 + 1);
            return Err(self.protocol(m));
        }
        self.io.pos += 5;
        Ok((tag, len as usize - 4))
    }

    /// Reads a whole message: its type and where its body lies in `io.buf` (valid until the
    /// next read).
    fn message(&mut self) -> Result<(u8, Range<usize>), SqlError> {
        let (tag, len) = self.header()?;
        Ok((tag, self.body(len)?))
    }

    fn discard(&mut self, len: usize) -> Result<(), SqlError> {
        self.io.discard(len).map_err(|e| self.read_failed(e))
    }

    /// Starts a call: `out` is emptied for its messages.
    fn start(&mut self) -> Result<(), SqlError> {
        if self.broken {
            return Err(SqlError::client("connection closed", ErrKind::Lost));
        }
        self.io.rewind();
        if self.out.capacity() > 1 << 20 {
            // A COPY chunk or a huge statement grew it; do not keep megabytes per connection.
            self.out = BytesMut::with_capacity(256);
        }
        self.out.clear();
        Ok(())
    }

    /// Sends `out` in one write.
    fn send(&mut self) -> Result<(), SqlError> {
        match self.io.send(&self.out) {
            Ok(()) => Ok(()),
            // The socket's write timeout: a server that stopped reading.
            Err(e) if matches!(e.kind(), IoKind::WouldBlock | IoKind::TimedOut) => {
                Err(self.timed_out())
            }
            Err(e) => Err(self.lost(e)),
        }
    }

    /// Reads the answer to the messages sent, up to ReadyForQuery: rows skipped by length
    /// unless `want` asks for values; [`Want::Rows`] collects them, at most
    /// [`crate::db::MAX_ADMIN_ROWS`] rows and `max_packet` bytes ([`Collect`]).
    fn answer(&mut self, want: Want) -> Result<Answer, SqlError> {
        let mut kept = Collect::admin(self.limits.max_packet);
        let mut a = self.answer_into(want, &mut kept)?;
        if want == Want::Rows {
            a.rows = kept.table.rows;
        }
        Ok(a)
    }

    /// [`WireConnection::answer`] with the rows of [`Want::Rows`] handed to `rows` as they are
    /// read. A server error is read to the end of the answer (the connection stays usable)
    /// and returned then; a FATAL one at once (the server closes the connection).
    fn answer_into(&mut self, want: Want, rows: &mut dyn RowSink) -> Result<Answer, SqlError> {
        let mut a = Answer::default();
        let mut failed: Option<ServerError> = None;
        let mut first_seen = false;
        loop {
            let (tag, len) = self.header()?;
            match tag {
                b'D' => {
                    let values = match want {
                        Want::First if !first_seen => 1,
                        Want::Rows => {
                            let r = self.body(len)?;
                            if each_value(&self.io.buf[r], usize::MAX, &mut |v| rows.value(v))
                                .is_none()
                            {
                                return Err(self.protocol("a malformed DataRow"));
                            }
                            if !rows.end_row() {
                                return Err(self.too_many_rows());
                            }
                            continue;
                        }
                        Want::Count | Want::FirstRow if a.counted => {
                            self.discard(len)?;
                            continue;
                        }
                        Want::FirstRow if a.count == 0 => {
                            a.count = 1;
                            usize::MAX
                        }
                        Want::Count | Want::FirstRow => {
                            a.count += 1;
                            self.discard(len)?;
                            continue;
                        }
                        _ => {
                            self.discard(len)?;
                            continue;
                        }
                    };
                    let r = self.body(len)?;
                    let Some(mut row) = row_values(&self.io.buf[r], values) else {
                        return Err(self.protocol("a malformed DataRow"));
                    };
                    if want == Want::First {
                        first_seen = true;
                        a.first = row.pop().flatten();
                    } else {
                        a.rows.push(row);
                    }
                }
                b'C' => {
                    let r = self.body(len)?;
                    a.done.affected = tag_count(&self.io.buf[r]);
                    a.counted |= a.done.rows;
                }
                b'T' if matches!(want, Want::Rows | Want::Describe | Want::FirstRow) => {
                    // FirstRow: the names of the first result (a text query of several).
                    let keep = !(want == Want::FirstRow && a.done.rows);
                    let first = !a.done.rows;
                    a.done.rows = true;
                    let r = self.body(len)?;
                    match column_names(&self.io.buf[r]) {
                        Some(names) if keep => {
                            if want == Want::Rows && first {
                                rows.columns(&names);
                            }
                            a.columns = names;
                        }
                        Some(_) => {}
                        None => return Err(self.protocol("a malformed RowDescription")),
                    }
                }
                b'T' => {
                    a.done.rows = true;
                    self.discard(len)?;
                }
                b't' => {
                    let r = self.body(len)?;
                    match parameter_types(&self.io.buf[r]) {
                        Some(types) => a.params = types,
                        None => return Err(self.protocol("a malformed ParameterDescription")),
                    }
                }
                b'E' => {
                    let r = self.body(len)?;
                    let e = parse_error(&self.io.buf[r]);
                    if e.fatal() {
                        self.broken = true;
                        return Err(e.into_sql(Phase::Use));
                    }
                    failed.get_or_insert(e);
                }
                b'Z' => {
                    let r = self.body(len)?;
                    self.txn_status = self.io.buf[r].first().copied().unwrap_or(b'I');
                    return match failed {
                        Some(e) => Err(e.into_sql(Phase::Use)),
                        None => Ok(a),
                    };
                }
                b'G' => {
                    self.discard(len)?;
                    if want == Want::CopyIn {
                        a.copy_in = true;
                        return Ok(a);
                    }
                    // COPY … FROM STDIN outside `load`: refused, and the answer goes on.
                    self.out.clear();
                    frontend::copy_fail("sbsuite sends COPY data only in prepare", &mut self.out)
                        .map_err(nul_error)?;
                    self.send()?;
                }
                // ParseComplete, BindComplete, CloseComplete, NoData, EmptyQueryResponse,
                // PortalSuspended; the data of a COPY … TO STDOUT; and what the server may
                // send at any time: NoticeResponse, ParameterStatus, NotificationResponse.
                b'1' | b'2' | b'3' | b'n' | b'I' | b's' | b'H' | b'd' | b'c' | b'N' | b'S'
                | b'A' => self.discard(len)?,
                other => {
                    return Err(
                        self.protocol(format!("an unexpected `{}` message", other.escape_ascii()))
                    );
                }
            }
        }
    }

    /// The body of the message whose header was just read.
    fn body(&mut self, len: usize) -> Result<Range<usize>, SqlError> {
        if let Err(e) = self.fill(len) {
            return Err(self.read_failed(e));
        }
        let start = self.io.pos;
        self.io.pos += len;
        Ok(start..start + len)
    }

    /// Runs `sql` with the simple query protocol.
    fn simple(&mut self, sql: &str, want: Want) -> Result<Answer, SqlError> {
        self.start()?;
        frontend::query(sql, &mut self.out).map_err(nul_error)?;
        self.send()?;
        self.answer(want)
    }

    /// [`WireConnection::simple`] of [`Want::Rows`], the rows handed to `rows`.
    fn simple_into(&mut self, sql: &str, rows: &mut dyn RowSink) -> Result<Answer, SqlError> {
        self.start()?;
        frontend::query(sql, &mut self.out).map_err(nul_error)?;
        self.send()?;
        self.answer_into(Want::Rows, rows)
    }

    /// Streams the rows of `fill` as binary COPY data after CopyInResponse, in chunks of
    /// [`COPY_CHUNK`], each one CopyData message sent with one write.
    fn copy_rows(
        &mut self,
        with_id: bool,
        fill: &mut dyn FnMut(&mut DataRow) -> bool,
    ) -> Result<(), SqlError> {
        self.out.clear();
        self.out.reserve(COPY_CHUNK + 512);
        start_copy_data(&mut self.out);
        copy_header(&mut self.out);
        let mut row = DataRow::default();
        while fill(&mut row) {
            if let Err(m) = binary_row(&mut self.out, &row, with_id) {
                // Ends the COPY (the server rolls it back), then reports the row.
                self.out.clear();
                frontend::copy_fail(&m, &mut self.out).map_err(nul_error)?;
                self.send()?;
                self.io.arm();
                let _ = self.answer(Want::Drain);
                return Err(SqlError::client(m, ErrKind::Other));
            }
            if self.out.len() >= COPY_CHUNK {
                end_copy_data(&mut self.out)?;
                self.send()?;
                self.out.clear();
                start_copy_data(&mut self.out);
            }
        }
        self.out.put_i16(-1);
        end_copy_data(&mut self.out)?;
        frontend::copy_done(&mut self.out);
        self.send()?;
        // The COPY's own clock starts when its last row is sent: streaming millions of rows
        // may take longer than `query_timeout` (each write is bounded by the socket's write
        // timeout), the server's answer to the whole may not.
        self.io.arm();
        self.answer(Want::Drain).map(|_| ())
    }
}

impl WireConnection {
    /// Sends Bind + Execute + Sync of `stmt` with `params`; returns whether it returns rows.
    #[inline]
    fn send_execute(&mut self, stmt: StmtId, params: &[P<'_>]) -> Result<bool, SqlError> {
        self.start()?;
        let Some(s) = self.stmts.get(stmt) else {
            return Err(SqlError::client(
                format!("no prepared statement {stmt}"),
                ErrKind::Other,
            ));
        };
        if s.types.len() != params.len() {
            return Err(SqlError::client(
                format!(
                    "the statement takes {} parameters, {} given",
                    s.types.len(),
                    params.len()
                ),
                ErrKind::Other,
            ));
        }
        let rows = s.rows;
        put_bind(&mut self.out, &s.name, &s.types, params)
            .map_err(|m| SqlError::client(m, ErrKind::Other))?;
        frontend::execute("", 0, &mut self.out).map_err(nul_error)?;
        frontend::sync(&mut self.out);
        self.send()?;
        Ok(rows)
    }
}

impl WireConnection {
    /// Streams the rows of `fill` as text COPY data ([`text_row`]) after CopyInResponse, in
    /// chunks of [`COPY_CHUNK`] as [`WireConnection::copy_rows`]. Returns the rows sent.
    fn copy_text_rows(
        &mut self,
        width: usize,
        fill: &mut dyn FnMut(&mut [Cell]) -> bool,
    ) -> Result<u64, SqlError> {
        self.out.clear();
        self.out.reserve(COPY_CHUNK + 512);
        start_copy_data(&mut self.out);
        let mut row = vec![Cell::Null; width];
        let mut rows = 0u64;
        while fill(&mut row) {
            text_row(&mut self.out, &row);
            rows += 1;
            if self.out.len() >= COPY_CHUNK {
                end_copy_data(&mut self.out)?;
                self.send()?;
                self.out.clear();
                start_copy_data(&mut self.out);
            }
        }
        end_copy_data(&mut self.out)?;
        frontend::copy_done(&mut self.out);
        self.send()?;
        self.io.arm();
        self.answer(Want::Drain)?;
        Ok(rows)
    }
}

/// A SCRAM exchange that failed on the client's side (a malformed or forged server message).
fn scram_error(e: &std::io::Error) -> WireError {
    WireError::Sql(SqlError::client(
        format!("SCRAM-SHA-256 authentication failed: {e}"),
        ErrKind::Other,
    ))
}

/// A connection that broke while it was being opened is unreachable (try again), not lost.
fn at_connect(e: WireError) -> WireError {
    match e {
        WireError::Sql(mut e) if e.kind == ErrKind::Lost => {
            e.kind = ErrKind::Unreachable;
            WireError::Sql(e)
        }
        other => other,
    }
}

/// Asks the server on `tcp` for TLS (SSLRequest) and runs the handshake when it agrees. Its
/// refusal lets `prefer` go on in plain text and fails the other modes, as tokio-postgres does.
/// The verification is `pgsql`'s rustls configuration of the mode (the tokio-postgres path's).
fn start_tls(
    mut tcp: TcpStream,
    t: &Target,
    host: &str,
    deadline: Instant,
) -> Result<Stream, WireError> {
    let failed = |e: std::io::Error| {
        let what = match e.kind() {
            std::io::ErrorKind::UnexpectedEof => "the server closed the connection".into(),
            _ => io::timed_out(&e, t.connect_timeout),
        };
        SqlError::client(
            format!("error requesting TLS from {host}: {what}"),
            ErrKind::Unreachable,
        )
    };
    let mut request = BytesMut::with_capacity(8);
    frontend::ssl_request(&mut request);
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
    tcp.set_read_timeout(Some(left)).map_err(failed)?;
    tcp.set_write_timeout(Some(left)).map_err(failed)?;
    tcp.write_all(&request).map_err(failed)?;
    // One byte, not more: what follows an `S` belongs to the TLS handshake.
    let mut answer = [0u8; 1];
    tcp.read_exact(&mut answer).map_err(failed)?;
    match answer[0] {
        b'N' if t.ssl == SslMode::Preferred => Ok(Stream::Tcp(tcp)),
        b'N' => Err(SqlError::client(
            "error performing TLS handshake: server does not support TLS",
            ErrKind::Other,
        )
        .into()),
        b'S' => {
            let config = Arc::new(tls::client_config(t)?);
            // The handshake ends by the startup's deadline, however the server sends it.
            Stream::tls_until(tcp, config, host, deadline).map_err(|e| {
                let what = match e.kind() {
                    std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => {
                        io::timed_out(&e, t.connect_timeout)
                    }
                    _ => e.to_string(),
                };
                // A certificate or handshake failure does not heal by retrying.
                WireError::Sql(SqlError::client(
                    format!("error performing TLS handshake: {what}"),
                    ErrKind::Other,
                ))
            })
        }
        other => Err(WireError::Unsupported(format!(
            "the server answered the TLS request with `{}`",
            other.escape_ascii()
        ))),
    }
}

/// Starts a CopyData message in `out` (type and a length placeholder).
fn start_copy_data(out: &mut BytesMut) {
    out.put_u8(b'd');
    out.put_i32(0);
}

/// Writes the length of the CopyData message that `out` holds.
fn end_copy_data(out: &mut BytesMut) -> Result<(), SqlError> {
    let len = i32::try_from(out.len() - 1)
        .map_err(|_| SqlError::client("a COPY chunk over 2 GiB", ErrKind::Other))?;
    out[1..5].copy_from_slice(&len.to_be_bytes());
    Ok(())
}

impl Connection for WireConnection {
    fn interrupter(&self) -> Option<crate::db::interrupt::Interrupter> {
        crate::db::interrupt::stream_interrupter(&self.io.stream)
    }

    /// A cancel request with the connection's key ([`CancelKey::cancel`]).
    fn canceller(&self) -> Option<crate::db::interrupt::Interrupter> {
        let k = self.cancel.clone()?;
        Some(crate::db::interrupt::Interrupter::new(move || k.cancel()))
    }

    fn in_transaction(&self) -> Option<bool> {
        (!self.broken).then_some(self.txn_status != b'I')
    }

    fn prepare(&mut self, sql: &str) -> Result<StmtId, SqlError> {
        let name = format!("sbs{}", self.stmts.len());
        self.start()?;
        frontend::parse(&name, &numbered(sql), std::iter::empty(), &mut self.out)
            .map_err(nul_error)?;
        frontend::describe(b'S', &name, &mut self.out).map_err(nul_error)?;
        frontend::sync(&mut self.out);
        self.send()?;
        let a = self.answer(Want::Describe)?;
        self.stmts.push(Stmt {
            name,
            types: a.params,
            rows: a.done.rows,
            columns: a.columns,
        });
        Ok(self.stmts.len() - 1)
    }

    fn execute(&mut self, stmt: StmtId, params: &[P<'_>]) -> Result<Done, SqlError> {
        let rows = self.send_execute(stmt, params)?;
        let a = self.answer(Want::Drain)?;
        Ok(Done {
            rows,
            affected: a.done.affected,
        })
    }

    fn execute_fetch(
        &mut self,
        stmt: StmtId,
        params: &[P<'_>],
        first: bool,
        out: &mut Fetched,
    ) -> Result<Done, SqlError> {
        out.clear();
        let rows = self.send_execute(stmt, params)?;
        if first && out.all {
            let a = self.answer_into(Want::Rows, &mut KeepAll(out))?;
            out.columns.clone_from(&self.stmts[stmt].columns);
            return Ok(Done {
                rows,
                affected: a.done.affected,
            });
        }
        let mut a = self.answer(if first { Want::FirstRow } else { Want::Count })?;
        out.rows = a.count;
        if first {
            out.columns.clone_from(&self.stmts[stmt].columns);
            out.first = a.rows.pop().unwrap_or_default();
        }
        Ok(Done {
            rows,
            affected: a.done.affected,
        })
    }

    fn query_fetch(&mut self, sql: &str, first: bool, out: &mut Fetched) -> Result<Done, SqlError> {
        out.clear();
        if first && out.all {
            return Ok(self.simple_into(sql, &mut KeepAll(out))?.done);
        }
        let mut a = self.simple(sql, if first { Want::FirstRow } else { Want::Count })?;
        out.rows = a.count;
        if first {
            out.columns = std::mem::take(&mut a.columns);
            out.first = a.rows.pop().unwrap_or_default();
        }
        Ok(a.done)
    }

    fn query(&mut self, sql: &str) -> Result<Done, SqlError> {
        Ok(self.simple(sql, Want::Drain)?.done)
    }

    fn query_i64(&mut self, sql: &str) -> Result<Option<i64>, SqlError> {
        let a = self.simple(sql, Want::First)?;
        parse_i64(sql, a.first.as_deref())
    }

    fn query_rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, SqlError> {
        Ok(self.simple(sql, Want::Rows)?.rows)
    }

    fn query_table(&mut self, sql: &str) -> Result<Table, SqlError> {
        let a = self.simple(sql, Want::Rows)?;
        Ok(Table {
            columns: a.columns,
            rows: a.rows,
        })
    }

    fn query_each(&mut self, sql: &str, sink: &mut dyn RowSink) -> Result<Done, SqlError> {
        Ok(self.simple_into(sql, sink)?.done)
    }

    fn load(
        &mut self,
        table: &str,
        with_id: bool,
        fill: &mut dyn FnMut(&mut DataRow) -> bool,
    ) -> Result<(), SqlError> {
        let a = self.simple(&copy_sql(table, with_id), Want::CopyIn)?;
        if !a.copy_in {
            return Err(self.protocol("the COPY statement did not start a COPY"));
        }
        self.copy_rows(with_id, fill)
    }

    /// `COPY … FROM STDIN` in the text format ([`copy_text_sql`], [`text_row`]).
    fn load_rows(
        &mut self,
        table: &str,
        columns: &[String],
        fill: &mut dyn FnMut(&mut [Cell]) -> bool,
    ) -> Result<u64, SqlError> {
        let a = self.simple(&copy_text_sql(table, columns), Want::CopyIn)?;
        if !a.copy_in {
            return Err(self.protocol("the COPY statement did not start a COPY"));
        }
        self.copy_text_rows(columns.len(), fill)
    }

    fn close(self: Box<Self>) {
        // Drop sends Terminate.
    }
}

impl Drop for WireConnection {
    fn drop(&mut self) {
        // The backend exits (and flushes its statistics) now rather than when it notices the
        // socket; a failure here changes nothing measured.
        if self.start().is_ok() {
            frontend::terminate(&mut self.out);
            let _ = self.send();
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod fuzz;
