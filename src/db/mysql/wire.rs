//! A lean, blocking MySQL client/server protocol client for the OLTP hot path.
//!
//! Why it exists: measured against sysbench 1.0.20 (BENCHMARKS.md, issue #4), mysql_async cost
//! up to 1.44× sysbench's client CPU per query, because it decodes every row of a result set
//! into a `Row` (a `Vec<Value>` and a copy per column) even when the result is only drained, and
//! because every command goes through tokio (epoll registration, wakeups) on a per-connection
//! runtime. A load generator needs none of that: it sends a command, waits for the answer on a
//! blocking socket and only has to find where the answer ends. This client does exactly that:
//! one reusable read buffer, one `write` per command, and row packets skipped by their length
//! without looking inside.
//!
//! Scope (everything else is [`WireError::Unsupported`] and `mysql::open` falls back to
//! mysql_async): protocol 4.1 over TCP or a Unix socket without TLS, handshake v10, the
//! `mysql_native_password` and `caching_sha2_password` (fast path) auth plugins with auth
//! switches, COM_QUERY, COM_STMT_PREPARE / EXECUTE (binary protocol) / CLOSE, COM_QUIT, both
//! result-set end styles (EOF packets, or OK packets with CLIENT_DEPRECATE_EOF), multi-results,
//! and payloads of 16 MiB and more split into several packets in both directions.
//!
//! Bounds (#13): nothing the server announces is trusted. Every packet length is checked
//! against `max_packet` at its header (continuations counted together) before anything is read,
//! handshake packets against 64 KiB, column counts against MySQL's 4,096, the results of one
//! statement, the auth rounds and the rows an admin query collects against fixed maxima; one
//! deadline covers connect + greeting + authentication (`connect_timeout`) and one each command
//! (`query_timeout`, armed as each command starts). A bound that trips breaks the
//! connection (the stream is out of step) with an error that says which bound and how to change
//! it; `src/db/mysql/wire/fuzz.rs` checks that no server transcript panics or hangs the client.

use std::ops::Range;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sha1::{Digest, Sha1};
use sha2::Sha256;

use super::shared::{
    ColumnMeta, Killer, TYPE_BIT, TYPE_DATE, TYPE_DATETIME, TYPE_DOUBLE, TYPE_FLOAT, TYPE_INT24,
    TYPE_LONG, TYPE_LONGLONG, TYPE_NEWDATE, TYPE_NULL, TYPE_SHORT, TYPE_TIME, TYPE_TIMESTAMP,
    TYPE_TINY, TYPE_YEAR, kind_of_code, load_cells, load_rows,
};
use crate::db::conn::{
    Collect, Connection, DataRow, Done, ErrKind, Fetched, P, RowSink, SqlError, StmtId, Table,
};
pub use crate::db::io::WireError;
use crate::db::io::{self, ConnectError, ReadError, Reader, Stream};
use crate::db::target::{Limits, MAX_ADMIN_ROWS, SslMode, Target};

const CLIENT_LONG_PASSWORD: u32 = 1;
const CLIENT_LONG_FLAG: u32 = 1 << 2;
const CLIENT_CONNECT_WITH_DB: u32 = 1 << 3;
const CLIENT_PROTOCOL_41: u32 = 1 << 9;
const CLIENT_TRANSACTIONS: u32 = 1 << 13;
const CLIENT_SECURE_CONNECTION: u32 = 1 << 15;
const CLIENT_MULTI_STATEMENTS: u32 = 1 << 16;
const CLIENT_MULTI_RESULTS: u32 = 1 << 17;
const CLIENT_PS_MULTI_RESULTS: u32 = 1 << 18;
const CLIENT_PLUGIN_AUTH: u32 = 1 << 19;
const CLIENT_DEPRECATE_EOF: u32 = 1 << 24;

const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;

/// The largest payload of one packet; a payload of this length continues in the next packet.
const MAX_PAYLOAD: usize = 0xFF_FFFF;

const COM_QUIT: u8 = 0x01;
const COM_QUERY: u8 = 0x03;
const COM_STMT_PREPARE: u8 = 0x16;
const COM_STMT_EXECUTE: u8 = 0x17;
const COM_STMT_CLOSE: u8 = 0x19;

const MYSQL_TYPE_LONGLONG: u8 = 0x08;
const MYSQL_TYPE_DOUBLE: u8 = 0x05;
const MYSQL_TYPE_NULL: u8 = 0x06;
const MYSQL_TYPE_VAR_STRING: u8 = 0xFD;

/// utf8mb4_general_ci, as mysql_async sends it.
const UTF8MB4_GENERAL_CI: u8 = 45;

/// The first wait for the server's greeting before connecting again (see
/// [`WireConnection::open`]).
const GREETING_WAIT: Duration = Duration::from_secs(1);

/// The most columns a result set or statement may have: MySQL's own limit is 4,096
/// (ER_TOO_MANY_FIELDS), so a server announcing more is broken, and its column definitions
/// are not read one by one for ever.
const MAX_COLUMNS: u64 = 4096;

/// The largest packet of the handshake (greeting, auth switch, auth data): real ones are a
/// few hundred bytes, so anything larger is not a MySQL server, and a peer sending endless
/// 16 MiB packets before authentication costs no memory.
const MAX_HANDSHAKE_PACKET: usize = 64 << 10;

/// Packets after the client's handshake response before the server must have said OK or
/// refused: an auth switch, caching_sha2's fast-auth note and the OK are three.
const MAX_AUTH_ROUNDS: usize = 4;

/// The most results one command may return (SERVER_MORE_RESULTS_EXISTS): far above any
/// multi-statement or stored procedure of a benchmark; a server that never says "last" is
/// an error even without a `query_timeout`.
const MAX_RESULTS: usize = 1 << 20;

/// Protocol choices; the defaults are what `open` uses, the others let tests cover both
/// sides of a choice against the same server.
#[derive(Clone, Copy, Debug)]
pub struct WireOptions {
    /// Ask for CLIENT_DEPRECATE_EOF when the server offers it (else results end with EOF
    /// packets).
    pub deprecate_eof: bool,
    /// Answer the greeting as `caching_sha2_password` whatever the server proposes, so a
    /// server whose users have another plugin must send an auth switch.
    pub start_with_sha2: bool,
}

impl Default for WireOptions {
    fn default() -> WireOptions {
        WireOptions {
            deprecate_eof: true,
            start_with_sha2: false,
        }
    }
}

/// Opens connection number `n` of `t` (endpoint `n` modulo the endpoints, as `mysql::open`).
pub fn open(t: &Target, n: usize) -> Result<Box<dyn Connection>, WireError> {
    Ok(Box::new(WireConnection::open(
        t,
        n,
        WireOptions::default(),
    )?))
}

/// Opens the socket of endpoint `n` (TCP with TCP_NODELAY and keepalive, or a Unix socket).
fn connect_stream(t: &Target, n: usize, timeout: Duration) -> Result<Stream, SqlError> {
    if !t.sockets.is_empty() {
        let path = &t.sockets[n % t.sockets.len()];
        return UnixStream::connect(path).map(Stream::Unix).map_err(|e| {
            SqlError::new(
                "2002",
                format!("Can't connect to local server through socket '{path}' ({e})"),
                ErrKind::Unreachable,
            )
        });
    }
    let (host, port) = &t.hosts[n % t.hosts.len()];
    io::connect_tcp(host, *port, timeout)
        .map(Stream::Tcp)
        .map_err(|e| match e {
            ConnectError::Resolve(e) => SqlError::new(
                "2005",
                format!("Unknown server host '{host}' ({e})"),
                ErrKind::Unreachable,
            ),
            ConnectError::Connect(e) => SqlError::new(
                "2003",
                format!(
                    "Can't connect to server on '{host}:{port}' ({})",
                    io::timed_out(&e, t.connect_timeout)
                ),
                ErrKind::Unreachable,
            ),
        })
}

/// A prepared statement: the server's id and its parameter count.
struct Stmt {
    id: u32,
    params: usize,
}

/// One blocking connection speaking the protocol itself.
pub struct WireConnection {
    /// The socket and its read buffer.
    io: Reader,
    /// `query_timeout` and `max_packet` of the target.
    limits: Limits,
    /// The command being written (header placeholder + payload), reused.
    out: Vec<u8>,
    /// The sequence id the next packet (read or written) carries.
    seq: u8,
    caps: u32,
    stmts: Vec<Stmt>,
    /// The column definitions of the result [`Connection::execute_fetch`] reads, reused.
    meta: Vec<ColumnMeta>,
    /// Set after an I/O or protocol error: the stream is out of step and unusable.
    broken: bool,
    /// Set when a read timed out.
    timed_out: bool,
    /// Where the connection is: what a timeout means and how large a packet may be.
    stage: Stage,
    /// The server (`host:port` or the socket path), for messages.
    endpoint: String,
    /// The handshake's time limit, for messages.
    connect_timeout: Duration,
    /// How to cancel this connection's statement on the server (`None` before the handshake
    /// and for connections made up by tests).
    killer: Option<Arc<Killer>>,
}

/// The phases of a connection, for bounds and messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Waiting for (the rest of) the server's greeting.
    Greeting,
    /// Between the greeting and the server's OK.
    Auth,
    /// Authenticated: commands.
    Ready,
}

/// A server error packet as a [`SqlError`] (the kinds of `mysql::sql_error`).
impl WireConnection {
    /// An ERR packet as an error; a lost-connection code also marks the connection broken.
    fn failed(&mut self, code: u16, message: String) -> SqlError {
        let e = server_error(code, message);
        if e.kind == ErrKind::Lost {
            self.broken = true;
        }
        e
    }
}

fn server_error(code: u16, message: String) -> SqlError {
    SqlError::new(code.to_string(), message, kind_of_code(code))
}

impl WireConnection {
    pub fn open(t: &Target, n: usize, o: WireOptions) -> Result<WireConnection, WireError> {
        if t.ssl != SslMode::Disabled {
            return Err(WireError::Unsupported("TLS is requested".into()));
        }
        let password = t
            .password()
            .map_err(|e| SqlError::client(e.to_string(), ErrKind::Other))?;
        let start = Instant::now();
        // One deadline for connect, greeting and authentication together, whatever the server
        // sends (a trickle of bytes, endless auth packets).
        let deadline = start + t.connect_timeout;
        let mut wait = GREETING_WAIT;
        loop {
            let left = t.connect_timeout.saturating_sub(start.elapsed());
            let mut c = WireConnection {
                io: Reader::new(
                    connect_stream(t, n, left.max(Duration::from_millis(1)))?,
                    t.limits.max_packet,
                ),
                limits: t.limits,
                out: Vec::with_capacity(256),
                seq: 0,
                caps: 0,
                stmts: Vec::new(),
                meta: Vec::new(),
                // Until the handshake ends: nothing is sent on drop (no COM_QUIT mid-auth).
                broken: true,
                timed_out: false,
                stage: Stage::Greeting,
                endpoint: t.endpoint(n),
                connect_timeout: t.connect_timeout,
                killer: None,
            };
            c.io.set_deadline(Some(deadline));
            // The first wait for the greeting is short: when many clients connect at once and
            // the server's accept queue (`back_log`) overflows, Linux can drop the last packet
            // of the TCP handshake, and that connection never gets a greeting (measured: 119
            // of 1,024 simultaneous connects to a MariaDB with back_log = 80). A new
            // connection then succeeds; the waits double until connect_timeout.
            c.socket_timeout(wait.min(left).max(Duration::from_millis(1)))?;
            match c.handshake(t, password.as_deref().unwrap_or(""), o, deadline) {
                Ok(id) => {
                    c.killer = Some(Arc::new(Killer::new(t, n, u64::from(id))));
                    c.broken = false;
                    c.stage = Stage::Ready;
                    // Every command and every socket read and write is bounded by
                    // query_timeout from now on (`start` arms it).
                    c.io.set_timeout(t.limits.query_timeout).map_err(|e| {
                        SqlError::client(format!("socket setup: {e}"), ErrKind::Unreachable)
                    })?;
                    return Ok(c);
                }
                // Not a byte of a greeting yet and time left: connect again.
                Err(_) if c.timed_out && c.io.end == 0 && Instant::now() < deadline => {
                    wait *= 2;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Sets the socket's read and write timeouts for the handshake.
    fn socket_timeout(&self, d: Duration) -> Result<(), WireError> {
        let set = || {
            self.io.stream.set_read_timeout(Some(d))?;
            self.io.stream.set_write_timeout(Some(d))
        };
        set().map_err(|e| {
            WireError::Sql(SqlError::client(
                format!("socket setup: {e}"),
                ErrKind::Unreachable,
            ))
        })
    }

    /// Reads the server greeting, authenticates, and ends on the server's OK; returns the
    /// server's id of the connection.
    fn handshake(
        &mut self,
        t: &Target,
        password: &str,
        o: WireOptions,
        deadline: Instant,
    ) -> Result<u32, WireError> {
        self.seq = 0;
        // The first byte within the short wait; then the greeting has begun, and the rest of
        // the handshake may take what is left until the deadline.
        self.fill(1)?;
        self.socket_timeout(
            deadline
                .saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1)),
        )?;
        let r = self.packet()?;
        self.stage = Stage::Auth;
        let hs = parse_handshake(&self.io.buf[r])?;
        let mut want = CLIENT_LONG_PASSWORD
            | CLIENT_LONG_FLAG
            | CLIENT_PROTOCOL_41
            | CLIENT_TRANSACTIONS
            | CLIENT_SECURE_CONNECTION
            | CLIENT_MULTI_STATEMENTS
            | CLIENT_MULTI_RESULTS
            | CLIENT_PS_MULTI_RESULTS
            | CLIENT_PLUGIN_AUTH;
        if o.deprecate_eof {
            want |= CLIENT_DEPRECATE_EOF;
        }
        if !t.database.is_empty() {
            want |= CLIENT_CONNECT_WITH_DB;
        }
        let needed = CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH;
        let needed = needed | (want & CLIENT_CONNECT_WITH_DB);
        if hs.caps & needed != needed {
            return Err(WireError::Unsupported(format!(
                "the server lacks capabilities {:#x}",
                needed & !hs.caps
            )));
        }
        self.caps = want & hs.caps;
        // Start with the server's default plugin when we speak it, else with native password
        // (as libmysqlclient does); the server switches us to the user's plugin if needed.
        let mut plugin = match Plugin::from_name(&hs.plugin) {
            _ if o.start_with_sha2 => Plugin::CachingSha2,
            Some(p) => p,
            None => Plugin::Native,
        };
        let auth = plugin.scramble(&hs.nonce, password);
        self.out.clear();
        self.out.extend_from_slice(&[0; 4]);
        self.out.extend_from_slice(&self.caps.to_le_bytes());
        self.out
            .extend_from_slice(&(MAX_PAYLOAD as u32 + 1).to_le_bytes());
        self.out.push(UTF8MB4_GENERAL_CI);
        self.out.extend_from_slice(&[0; 23]);
        self.out.extend_from_slice(t.user.as_bytes());
        self.out.push(0);
        self.out.push(auth.len() as u8);
        self.out.extend_from_slice(&auth);
        if self.caps & CLIENT_CONNECT_WITH_DB != 0 {
            self.out.extend_from_slice(t.database.as_bytes());
            self.out.push(0);
        }
        self.out.extend_from_slice(plugin.name().as_bytes());
        self.out.push(0);
        self.send()?;
        // OK, an error, an auth switch or more auth data; a few rounds at most. A server that
        // goes on is broken: a clear error, not a fallback to mysql_async, which would only
        // meet the same server.
        let mut plugins = vec![plugin.name()];
        for _ in 0..MAX_AUTH_ROUNDS {
            let r = self.packet()?;
            match auth_step(&self.io.buf[r], &mut plugin, password)? {
                AuthStep::Done => return Ok(hs.id),
                AuthStep::Wait => {}
                AuthStep::Send(data) => {
                    if !plugins.contains(&plugin.name()) {
                        plugins.push(plugin.name());
                    }
                    self.out.clear();
                    self.out.extend_from_slice(&[0; 4]);
                    self.out.extend_from_slice(&data);
                    self.send()?;
                }
            }
        }
        Err(WireError::Sql(SqlError::client(
            format!(
                "the MySQL server at {} neither accepted nor refused the login after {MAX_AUTH_ROUNDS} authentication rounds (auth plugins used: {}): a broken server or proxy",
                self.endpoint,
                plugins.join(", ")
            ),
            ErrKind::Other,
        )))
    }

    fn lost(&mut self, what: impl std::fmt::Display) -> SqlError {
        self.broken = true;
        SqlError::new(
            "2013",
            format!("Lost connection to server during query ({what})"),
            ErrKind::Lost,
        )
    }

    /// A protocol violation: the stream is out of step, so the connection is dropped (the
    /// engine reconnects if the error is ignored).
    fn protocol(&mut self, what: impl std::fmt::Display) -> SqlError {
        self.broken = true;
        SqlError::client(format!("MySQL protocol error: {what}"), ErrKind::Other)
    }

    /// Makes at least `need` unread bytes available in `io.buf[io.pos..]`.
    fn fill(&mut self, need: usize) -> Result<(), SqlError> {
        self.io.fill(need).map_err(|e| self.read_failed(e))
    }

    /// Consumes `n` bytes without keeping them (row payloads).
    fn discard(&mut self, n: usize) -> Result<(), SqlError> {
        self.io.discard(n).map_err(|e| self.read_failed(e))
    }

    fn read_failed(&mut self, e: ReadError) -> SqlError {
        match e {
            ReadError::Closed => self.lost("the server closed the connection"),
            ReadError::TimedOut => self.timeout(),
            ReadError::TooLarge(n) => self.too_large(n),
            ReadError::Io(e) => self.lost(e),
        }
    }

    /// A read or write that timed out: the stream is out of step. During the handshake the
    /// server is unreachable (the engine may try again); a command that outlived
    /// query_timeout is an error of its own (kind `Other`, no code), so a setup step fails
    /// with the reason instead of reconnecting to a server that hangs again.
    fn timeout(&mut self) -> SqlError {
        self.broken = true;
        self.timed_out = true;
        let ep = &self.endpoint;
        let secs = self.connect_timeout.as_secs();
        match self.stage {
            Stage::Greeting if self.io.end == 0 => SqlError::client(
                format!(
                    "the server at {ep} accepted the connection but did not answer within connect_timeout = {secs} s (raise [target] connect_timeout or check the server)"
                ),
                ErrKind::Unreachable,
            ),
            Stage::Greeting => SqlError::client(
                format!(
                    "the server at {ep} sent {} bytes of its greeting but not the rest within connect_timeout = {secs} s: is it a MySQL server? (raise [target] connect_timeout if it is just slow)",
                    self.io.end
                ),
                ErrKind::Unreachable,
            ),
            Stage::Auth => SqlError::client(
                format!(
                    "the MySQL server at {ep} did not finish the authentication within connect_timeout = {secs} s (raise [target] connect_timeout or check the server)"
                ),
                ErrKind::Unreachable,
            ),
            Stage::Ready => {
                // The client gives up on the statement, the server would not: it runs on until
                // it ends (a `BENCHMARK()`, a lock wait) unless it is killed.
                if let Some(k) = &self.killer {
                    k.kill_query();
                }
                SqlError::client(
                    format!("MySQL server at {ep}: {}", self.limits.timed_out()),
                    ErrKind::Other,
                )
            }
        }
    }

    /// A packet larger than the stage allows (`max_packet`, or a few KiB in the handshake):
    /// refused before it is read.
    fn too_large(&mut self, size: usize) -> SqlError {
        let m = match self.stage {
            Stage::Ready => self.limits.too_large("MySQL", size as u64),
            _ => format!(
                "the server at {} sent a handshake packet of {size} bytes (a MySQL greeting or authentication packet is below {} KiB): is it a MySQL server?",
                self.endpoint,
                MAX_HANDSHAKE_PACKET >> 10
            ),
        };
        self.protocol(m)
    }

    /// The largest logical packet accepted now.
    fn packet_limit(&self) -> usize {
        match self.stage {
            Stage::Ready => self.limits.max_packet,
            _ => MAX_HANDSHAKE_PACKET.min(self.limits.max_packet),
        }
    }

    /// Checks a packet's sequence id. A mismatch is a protocol error, except for an error
    /// packet the server sends on its own before closing (a killed connection), which is
    /// reported as that error.
    fn check_seq(&mut self, seq: u8, len: usize) -> Result<(), SqlError> {
        if seq == self.seq {
            self.seq = seq.wrapping_add(1);
            return Ok(());
        }
        // An error packet is small; a larger one is not looked into (no large read for a
        // packet that is wrong anyway).
        if len > 0 && len <= MAX_HANDSHAKE_PACKET && self.fill(len).is_ok() {
            let p = &self.io.buf[self.io.pos..self.io.pos + len];
            if p[0] == 0xFF {
                let (code, message) = parse_err(p);
                self.broken = true;
                let mut e = server_error(code, message);
                if e.kind != ErrKind::Unreachable {
                    e.kind = ErrKind::Lost;
                }
                return Err(e);
            }
        }
        let expected = self.seq;
        Err(self.protocol(format!("packet sequence {seq}, expected {expected}")))
    }

    /// Reads the next packet header (4 bytes) and returns its payload length; the payload
    /// starts at `pos`. A length above the limit ([`Self::packet_limit`]) is refused before
    /// anything of it is read.
    fn header(&mut self) -> Result<usize, SqlError> {
        self.fill(4)?;
        let h = &self.io.buf[self.io.pos..self.io.pos + 4];
        let len = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
        let seq = h[3];
        self.io.pos += 4;
        self.check_seq(seq, len)?;
        if len > self.packet_limit() {
            return Err(self.too_large(len));
        }
        Ok(len)
    }

    /// Reads one whole logical packet (joining 16 MiB continuation packets in place) and
    /// returns where its payload lies in `buf`; valid until the next read.
    fn packet(&mut self) -> Result<Range<usize>, SqlError> {
        let chunk = self.header()?;
        self.packet_from(chunk)
    }

    /// [`Self::packet`] after its header, whose payload length is `chunk`.
    #[inline]
    fn packet_from(&mut self, mut chunk: usize) -> Result<Range<usize>, SqlError> {
        let mut total = 0;
        let limit = self.packet_limit();
        loop {
            // Checked before the buffer grows: endless continuation packets cost at most
            // `limit` bytes.
            if total + chunk > limit {
                return Err(self.too_large(total + chunk));
            }
            // `pos` stays at the payload's start while it grows, so refills keep it.
            self.fill(total + chunk)?;
            total += chunk;
            if chunk < MAX_PAYLOAD {
                break;
            }
            self.fill(total + 4)?;
            let h = self.io.pos + total;
            let b = &self.io.buf[h..h + 4];
            chunk = usize::from(b[0]) | usize::from(b[1]) << 8 | usize::from(b[2]) << 16;
            let seq = b[3];
            if seq != self.seq {
                let expected = self.seq;
                return Err(self.protocol(format!(
                    "continuation packet sequence {seq}, expected {expected}"
                )));
            }
            self.seq = seq.wrapping_add(1);
            // Drop the header so the payload stays contiguous.
            self.io.buf.copy_within(h + 4..self.io.end, h);
            self.io.end -= 4;
        }
        let start = self.io.pos;
        self.io.pos += total;
        Ok(start..start + total)
    }

    /// Skips the `columns` column definitions of a result set (and the EOF after them unless
    /// CLIENT_DEPRECATE_EOF).
    fn skip_definitions(&mut self, columns: u64) -> Result<(), SqlError> {
        if columns > MAX_COLUMNS {
            return Err(self.protocol(format!(
                "the server announced {columns} columns (MySQL allows at most {MAX_COLUMNS})"
            )));
        }
        for _ in 0..columns {
            self.skip_packet()?;
        }
        if !self.deprecate_eof() {
            self.skip_packet()?;
        }
        Ok(())
    }

    /// Reads the column definitions of a text result (ColumnDefinition41: catalog, schema,
    /// table, org_table, then the name) and their end, keeping the names.
    fn column_names(&mut self, columns: u64) -> Result<Vec<String>, SqlError> {
        if columns > MAX_COLUMNS {
            return Err(self.protocol(format!(
                "the server announced {columns} columns (MySQL allows at most {MAX_COLUMNS})"
            )));
        }
        let mut names = Vec::with_capacity(columns as usize);
        for _ in 0..columns {
            let r = self.packet()?;
            let p = &self.io.buf[r];
            let mut at = 0;
            let name = (0..5).try_fold(&[][..], |_, _| lenenc_bytes(p, &mut at));
            let Some(name) = name else {
                return Err(self.protocol("bad column definition"));
            };
            names.push(String::from_utf8_lossy(name).into_owned());
        }
        if !self.deprecate_eof() {
            self.skip_packet()?;
        }
        Ok(names)
    }

    /// Skips one logical packet (and its continuations, `max_packet` bytes in all at most)
    /// without keeping it.
    fn skip_packet(&mut self) -> Result<(), SqlError> {
        let mut total = 0;
        loop {
            let len = self.header()?;
            total += len;
            if total > self.packet_limit() {
                return Err(self.too_large(total));
            }
            self.discard(len)?;
            if len < MAX_PAYLOAD {
                return Ok(());
            }
        }
    }

    /// Frames `out` (4 placeholder bytes + payload) into packets from `seq` and sends it in
    /// one write.
    fn send(&mut self) -> Result<(), SqlError> {
        self.seq = frame(&mut self.out, self.seq);
        if let Err(e) = self.io.stream.write_all(&self.out) {
            // A server that stops reading: the socket's write timeout.
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) {
                return Err(self.timeout());
            }
            return Err(self.lost(e));
        }
        if self.out.capacity() > 1 << 20 {
            // A bulk INSERT grew it; do not keep megabytes per connection.
            self.out = Vec::with_capacity(256);
        }
        Ok(())
    }

    /// Starts command `cmd`: `out` gets the header placeholder and the command byte; the
    /// caller appends the rest and calls [`Self::send`].
    fn start(&mut self, cmd: u8) -> Result<(), SqlError> {
        if self.broken {
            return Err(SqlError::client("connection closed", ErrKind::Lost));
        }
        // Unread bytes before a command answer nothing that was asked: the stream is out of
        // step. Except an error packet the server sends on its own before closing (a killed
        // connection), which the answer's first header reports ([`Self::check_seq`]).
        let left = &self.io.buf[self.io.pos..self.io.end];
        if !left.is_empty() && left.get(4) != Some(&0xFF) {
            let n = left.len();
            return Err(self.protocol(format!(
                "the server at {} sent {n} bytes that answer no command",
                self.endpoint
            )));
        }
        self.seq = 0;
        self.io.rewind();
        self.out.clear();
        self.out.extend_from_slice(&[0, 0, 0, 0, cmd]);
        Ok(())
    }

    fn deprecate_eof(&self) -> bool {
        self.caps & CLIENT_DEPRECATE_EOF != 0
    }

    /// Reads the answer to COM_QUERY / COM_STMT_EXECUTE (every result of a multi-result),
    /// skipping rows; with `value`, also the first column of the first row (text protocol).
    fn result(&mut self, value: bool) -> Result<(Done, Option<i64>), SqlError> {
        let mut done = Done::default();
        let mut first: Result<Option<i64>, SqlError> = Ok(None);
        let mut captured = !value;
        for _ in 0..MAX_RESULTS {
            let r = self.packet()?;
            let p = &self.io.buf[r];
            let status = match p.first() {
                Some(0x00) => {
                    let ok = parse_ok(p);
                    match ok {
                        Some(ok) => {
                            done.affected = ok.affected;
                            ok.status
                        }
                        None => return Err(self.protocol("short OK packet")),
                    }
                }
                Some(0xFF) => {
                    let (code, message) = parse_err(p);
                    return Err(self.failed(code, message));
                }
                Some(0xFB) => {
                    return Err(self.protocol("the server asked for LOCAL INFILE data"));
                }
                _ => {
                    let mut at = 0;
                    let Some(columns) = lenenc(p, &mut at) else {
                        return Err(self.protocol("bad column count"));
                    };
                    self.skip_definitions(columns)?;
                    done.rows = true;
                    done.affected = 0;
                    let capture = !captured;
                    captured = true;
                    let (status, v) = self.rows(capture)?;
                    if capture {
                        first = v;
                    }
                    status
                }
            };
            if status & SERVER_MORE_RESULTS_EXISTS == 0 {
                return first.map(|v| (done, v));
            }
        }
        Err(self.protocol(format!(
            "the server sent more than {MAX_RESULTS} results for one statement"
        )))
    }

    /// Skips row packets up to the end of a result set and returns the end's status flags;
    /// with `capture`, the first row's first text value as an integer.
    ///
    /// The end is a packet starting with 0xFE that is shorter than a row that could start with
    /// 0xFE: below 9 bytes for an EOF packet, and below 16 MiB for an OK packet with
    /// CLIENT_DEPRECATE_EOF (a text row starting with 0xFE holds a value of 16 MiB or more,
    /// a binary row starts with 0x00). A packet continuing a 16 MiB one is always row data.
    fn rows(&mut self, capture: bool) -> Result<(u16, Result<Option<i64>, SqlError>), SqlError> {
        let end_limit = if self.deprecate_eof() { MAX_PAYLOAD } else { 9 };
        let mut continued = false;
        let mut value: Result<Option<i64>, SqlError> = Ok(None);
        let mut want = capture;
        // The length of the current row so far (a row of several packets).
        let mut row = 0usize;
        loop {
            let len = self.header()?;
            row = if continued { row + len } else { len };
            if row > self.limits.max_packet {
                return Err(self.too_large(row));
            }
            if !continued && len > 0 {
                self.fill(1)?;
                match self.io.buf[self.io.pos] {
                    0xFE if len < end_limit => {
                        self.fill(len)?;
                        let p = &self.io.buf[self.io.pos..self.io.pos + len];
                        let status = if self.deprecate_eof() {
                            parse_ok(p).map(|ok| ok.status)
                        } else {
                            parse_eof(p)
                        };
                        self.io.pos += len;
                        return match status {
                            Some(s) => Ok((s, value)),
                            None => Err(self.protocol("short end-of-rows packet")),
                        };
                    }
                    0xFF => {
                        self.fill(len)?;
                        let (code, message) =
                            parse_err(&self.io.buf[self.io.pos..self.io.pos + len]);
                        self.io.pos += len;
                        return Err(self.failed(code, message));
                    }
                    _ if want => {
                        // The first value is at the start of the row, so the first packet
                        // of a long row is enough.
                        want = false;
                        self.fill(len)?;
                        value = first_text_i64(&self.io.buf[self.io.pos..self.io.pos + len]);
                    }
                    _ => {}
                }
            }
            self.discard(len)?;
            continued = len == MAX_PAYLOAD;
        }
    }
}

impl WireConnection {
    /// Reads the answer to COM_QUERY (`binary` false: text rows) or COM_STMT_EXECUTE (binary
    /// rows) into `out`: the rows of the first result set counted (skipped by length), and
    /// with `first` its column names and first row as text. Further results are drained.
    fn fetch(&mut self, binary: bool, first: bool, out: &mut Fetched) -> Result<Done, SqlError> {
        let mut done = Done::default();
        let mut seen = false;
        for _ in 0..MAX_RESULTS {
            let r = self.packet()?;
            let p = &self.io.buf[r];
            let status = match p.first() {
                Some(0x00) => match parse_ok(p) {
                    Some(ok) => {
                        if !seen {
                            done.affected = ok.affected;
                        }
                        ok.status
                    }
                    None => return Err(self.protocol("short OK packet")),
                },
                Some(0xFF) => {
                    let (code, message) = parse_err(p);
                    return Err(self.failed(code, message));
                }
                Some(0xFB) => {
                    return Err(self.protocol("the server asked for LOCAL INFILE data"));
                }
                _ => {
                    let mut at = 0;
                    let Some(columns) = lenenc(p, &mut at) else {
                        return Err(self.protocol("bad column count"));
                    };
                    if seen {
                        self.skip_definitions(columns)?;
                        self.rows(false)?.0
                    } else {
                        seen = true;
                        done = Done {
                            rows: true,
                            affected: 0,
                        };
                        if first {
                            self.definitions(columns, out)?;
                        } else {
                            self.skip_definitions(columns)?;
                        }
                        self.fetch_rows(binary, first, out)?
                    }
                }
            };
            if status & SERVER_MORE_RESULTS_EXISTS == 0 {
                return Ok(done);
            }
        }
        Err(self.protocol(format!(
            "the server sent more than {MAX_RESULTS} results for one statement"
        )))
    }

    /// Reads `columns` column definitions (and their end) into `self.meta` and their names
    /// into `out.columns`.
    fn definitions(&mut self, columns: u64, out: &mut Fetched) -> Result<(), SqlError> {
        if columns > MAX_COLUMNS {
            return Err(self.protocol(format!(
                "the server announced {columns} columns (MySQL allows at most {MAX_COLUMNS})"
            )));
        }
        self.meta.clear();
        for _ in 0..columns {
            let r = self.packet()?;
            let Some((name, meta)) = column_definition(&self.io.buf[r]) else {
                return Err(self.protocol("bad column definition"));
            };
            out.columns.push(name);
            self.meta.push(meta);
        }
        if !self.deprecate_eof() {
            self.skip_packet()?;
        }
        Ok(())
    }

    /// Counts the row packets up to the end of a result set into `out.rows` (skipping them by
    /// length, each row bounded by `max_packet`), with `first` decoding the first one as text
    /// into `out.first` (the column definitions are in `self.meta`); returns the end's status
    /// flags. The end is recognized as in [`Self::rows`].
    fn fetch_rows(
        &mut self,
        binary: bool,
        first: bool,
        out: &mut Fetched,
    ) -> Result<u16, SqlError> {
        let end_limit = if self.deprecate_eof() { MAX_PAYLOAD } else { 9 };
        let mut want = first;
        loop {
            let mut len = self.header()?;
            if len > 0 {
                self.fill(1)?;
                match self.io.buf[self.io.pos] {
                    0xFE if len < end_limit => {
                        self.fill(len)?;
                        let p = &self.io.buf[self.io.pos..self.io.pos + len];
                        let status = if self.deprecate_eof() {
                            parse_ok(p).map(|ok| ok.status)
                        } else {
                            parse_eof(p)
                        };
                        self.io.pos += len;
                        return status.ok_or_else(|| self.protocol("short end-of-rows packet"));
                    }
                    0xFF => {
                        self.fill(len)?;
                        let (code, message) =
                            parse_err(&self.io.buf[self.io.pos..self.io.pos + len]);
                        self.io.pos += len;
                        return Err(self.failed(code, message));
                    }
                    _ => {}
                }
            }
            out.rows += 1;
            if want {
                want = false;
                let r = self.packet_from(len)?;
                let p = &self.io.buf[r];
                let row = if binary {
                    binary_row(&self.meta, p)
                } else {
                    text_row(&self.meta, p)
                };
                match row {
                    Ok(row) => out.first = row,
                    Err(what) => return Err(self.protocol(what)),
                }
                continue;
            }
            // A row of several packets: each continuation is row data.
            let mut row = len;
            loop {
                if row > self.limits.max_packet {
                    return Err(self.too_large(row));
                }
                self.discard(len)?;
                if len < MAX_PAYLOAD {
                    break;
                }
                len = self.header()?;
                row += len;
            }
        }
    }
}

/// A ColumnDefinition41 packet: the column name and what its values' text needs (catalog,
/// schema, table, org_table, name, org_name, the length of the fixed fields, charset, length,
/// type, flags, decimals).
fn column_definition(p: &[u8]) -> Option<(String, ColumnMeta)> {
    let mut at = 0;
    let mut name = &[][..];
    for i in 0..6 {
        let s = lenenc_bytes(p, &mut at)?;
        if i == 4 {
            name = s;
        }
    }
    let _fixed = lenenc(p, &mut at)?;
    let f = p.get(at..at + 10)?;
    let meta = ColumnMeta {
        length: u32::from_le_bytes([f[2], f[3], f[4], f[5]]),
        ty: f[6],
        flags: u16::from_le_bytes([f[7], f[8]]),
        decimals: f[9],
    };
    Some((String::from_utf8_lossy(name).into_owned(), meta))
}

/// A text-protocol row as text (`None`: NULL); BIT values as numbers.
fn text_row(meta: &[ColumnMeta], p: &[u8]) -> Result<Vec<Option<String>>, String> {
    let mut at = 0;
    let mut row = Vec::with_capacity(meta.len());
    for m in meta {
        if p.get(at) == Some(&0xFB) {
            at += 1;
            row.push(None);
            continue;
        }
        let bytes = lenenc_bytes(p, &mut at).ok_or("bad text row")?;
        row.push(Some(m.bytes_text(bytes)));
    }
    Ok(row)
}

/// A binary-protocol row (0x00, the NULL bitmap with an offset of 2 bits, the non-NULL
/// values) as MySQL's text of each value (`None`: NULL).
fn binary_row(meta: &[ColumnMeta], p: &[u8]) -> Result<Vec<Option<String>>, String> {
    let bitmap_len = (meta.len() + 9) / 8;
    let bitmap = p.get(1..1 + bitmap_len).ok_or("short binary row")?;
    if p[0] != 0x00 {
        return Err(format!("a binary row starting with {:#04x}", p[0]));
    }
    let mut at = 1 + bitmap_len;
    let mut row = Vec::with_capacity(meta.len());
    for (i, m) in meta.iter().enumerate() {
        let bit = i + 2;
        if bitmap[bit / 8] & (1 << (bit % 8)) != 0 || m.ty == TYPE_NULL {
            row.push(None);
            continue;
        }
        let v = binary_value(m, p, &mut at)
            .ok_or_else(|| format!("a short value of type {:#04x} in a binary row", m.ty))?;
        row.push(Some(v?));
    }
    Ok(row)
}

/// One binary-protocol value at `*at` (moving past it) as text; `None` for a short row, an
/// error for a type the protocol does not send.
fn binary_value(m: &ColumnMeta, p: &[u8], at: &mut usize) -> Option<Result<String, String>> {
    let mut take = |n: usize| {
        let b = p.get(*at..*at + n)?;
        *at += n;
        Some(b)
    };
    let unsigned = m.unsigned();
    let text = match m.ty {
        TYPE_TINY => {
            let b = take(1)?[0];
            if unsigned {
                m.int_text(b)
            } else {
                m.int_text(b as i8)
            }
        }
        TYPE_SHORT | TYPE_YEAR => {
            let b = take(2)?;
            let v = [b[0], b[1]];
            if unsigned {
                m.int_text(u16::from_le_bytes(v))
            } else {
                m.int_text(i16::from_le_bytes(v))
            }
        }
        TYPE_LONG | TYPE_INT24 => {
            let v: [u8; 4] = take(4)?.try_into().ok()?;
            if unsigned {
                m.int_text(u32::from_le_bytes(v))
            } else {
                m.int_text(i32::from_le_bytes(v))
            }
        }
        TYPE_LONGLONG => {
            let v: [u8; 8] = take(8)?.try_into().ok()?;
            if unsigned {
                m.int_text(u64::from_le_bytes(v))
            } else {
                m.int_text(i64::from_le_bytes(v))
            }
        }
        TYPE_FLOAT => {
            let v: [u8; 4] = take(4)?.try_into().ok()?;
            m.float_text(f64::from(f32::from_le_bytes(v)), true)
        }
        TYPE_DOUBLE => {
            let v: [u8; 8] = take(8)?.try_into().ok()?;
            m.float_text(f64::from_le_bytes(v), false)
        }
        TYPE_DATE | TYPE_NEWDATE | TYPE_DATETIME | TYPE_TIMESTAMP => {
            let n = usize::from(take(1)?[0]);
            let b = take(n)?;
            let (mut y, mut mo, mut d, mut h, mut mi, mut s, mut us) = (0, 0, 0, 0, 0, 0, 0);
            if n >= 4 {
                (y, mo, d) = (u16::from_le_bytes([b[0], b[1]]), b[2], b[3]);
            }
            if n >= 7 {
                (h, mi, s) = (b[4], b[5], b[6]);
            }
            if n >= 11 {
                us = u32::from_le_bytes([b[7], b[8], b[9], b[10]]);
            }
            m.date_text(y, mo, d, h, mi, s, us)
        }
        TYPE_TIME => {
            let n = usize::from(take(1)?[0]);
            let b = take(n)?;
            let (mut neg, mut days, mut h, mut mi, mut s, mut us) = (false, 0, 0, 0, 0, 0);
            if n >= 8 {
                neg = b[0] == 1;
                days = u32::from_le_bytes([b[1], b[2], b[3], b[4]]);
                (h, mi, s) = (b[5], b[6], b[7]);
            }
            if n >= 12 {
                us = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
            }
            m.time_text(neg, days, h, mi, s, us)
        }
        // DECIMAL, NEWDECIMAL, VARCHAR, BIT, JSON, ENUM, SET, the BLOBs, the strings,
        // GEOMETRY, VECTOR: a length-encoded string.
        0x00 | 0x0F | TYPE_BIT | 0xF2..=0xFF => {
            let mut i = *at;
            let b = lenenc_bytes(p, &mut i)?;
            *at = i;
            m.bytes_text(b)
        }
        other => {
            return Some(Err(format!(
                "a value of MySQL column type {other:#04x}, which the binary protocol does not send"
            )));
        }
    };
    Some(Ok(text))
}

/// Writes the packet headers into `out` (4 placeholder bytes + payload), splitting payloads
/// of 16 MiB − 1 bytes and more into packets (a payload of exactly a multiple of that length
/// ends with an empty packet). Returns the sequence id after the last packet.
fn frame(out: &mut Vec<u8>, mut seq: u8) -> u8 {
    let len = out.len() - 4;
    if len < MAX_PAYLOAD {
        out[..3].copy_from_slice(&(len as u32).to_le_bytes()[..3]);
        out[3] = seq;
        return seq.wrapping_add(1);
    }
    let payload = out.split_off(4);
    out.clear();
    out.reserve(payload.len() + 4 * (payload.len() / MAX_PAYLOAD + 1));
    let mut chunks = payload.chunks(MAX_PAYLOAD);
    loop {
        let c = chunks.next().unwrap_or(&[]);
        out.extend_from_slice(&(c.len() as u32).to_le_bytes()[..3]);
        out.push(seq);
        out.extend_from_slice(c);
        seq = seq.wrapping_add(1);
        if c.len() < MAX_PAYLOAD {
            return seq;
        }
    }
}

/// Reads a length-encoded integer at `*at` (advancing it); `None` for NULL (0xFB), the
/// invalid 0xFF or a short buffer.
fn lenenc(p: &[u8], at: &mut usize) -> Option<u64> {
    let first = *p.get(*at)?;
    let (n, skip) = match first {
        0..=0xFA => (u64::from(first), 1),
        0xFC => (
            u64::from(u16::from_le_bytes(
                p.get(*at + 1..*at + 3)?.try_into().ok()?,
            )),
            3,
        ),
        0xFD => {
            let b = p.get(*at + 1..*at + 4)?;
            (
                u64::from(b[0]) | u64::from(b[1]) << 8 | u64::from(b[2]) << 16,
                4,
            )
        }
        0xFE => (
            u64::from_le_bytes(p.get(*at + 1..*at + 9)?.try_into().ok()?),
            9,
        ),
        _ => return None,
    };
    *at += skip;
    Some(n)
}

/// The length-encoded string at `at` (moving `at` past it).
fn lenenc_bytes<'a>(p: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
    let n = usize::try_from(lenenc(p, at)?).ok()?;
    let bytes = p.get(*at..at.checked_add(n)?)?;
    *at += n;
    Some(bytes)
}

/// Appends `v` as a length-encoded integer.
fn put_lenenc(out: &mut Vec<u8>, v: u64) {
    match v {
        0..=0xFA => out.push(v as u8),
        0xFB..=0xFFFF => {
            out.push(0xFC);
            out.extend_from_slice(&(v as u16).to_le_bytes());
        }
        0x1_0000..=0xFF_FFFF => {
            out.push(0xFD);
            out.extend_from_slice(&(v as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xFE);
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

struct Ok_ {
    affected: u64,
    status: u16,
}

/// An OK packet (header 0x00, or 0xFE ending a result set with CLIENT_DEPRECATE_EOF).
fn parse_ok(p: &[u8]) -> Option<Ok_> {
    let mut at = 1;
    let affected = lenenc(p, &mut at)?;
    let _insert_id = lenenc(p, &mut at)?;
    let status = u16::from_le_bytes(p.get(at..at + 2)?.try_into().ok()?);
    Some(Ok_ { affected, status })
}

/// An EOF packet's status flags (0xFE, warnings, status).
fn parse_eof(p: &[u8]) -> Option<u16> {
    Some(u16::from_le_bytes(p.get(3..5)?.try_into().ok()?))
}

/// An ERR packet: errno and message (the `#` + SQLSTATE marker is optional: errors sent
/// before the handshake have none).
fn parse_err(p: &[u8]) -> (u16, String) {
    let code = p.get(1..3).map_or(0, |b| u16::from_le_bytes([b[0], b[1]]));
    let mut msg = p.get(3..).unwrap_or(&[]);
    if msg.first() == Some(&b'#') && msg.len() >= 6 {
        msg = &msg[6..];
    }
    (code, String::from_utf8_lossy(msg).into_owned())
}

/// The first column of a text row as an integer (`None` for NULL).
fn first_text_i64(p: &[u8]) -> Result<Option<i64>, SqlError> {
    if p.first() == Some(&0xFB) {
        return Ok(None);
    }
    let mut at = 0;
    let bad = || SqlError::client("the first column is not a text value", ErrKind::Other);
    let len = usize::try_from(lenenc(p, &mut at).ok_or_else(bad)?).map_err(|_| bad())?;
    let text = p
        .get(at..at.checked_add(len).ok_or_else(bad)?)
        .ok_or_else(bad)?;
    let text = std::str::from_utf8(text).map_err(|_| bad())?;
    text.trim().parse().map(Some).map_err(|_| {
        SqlError::client(
            format!("`{text}` is not an integer (expected a number in the first column)"),
            ErrKind::Other,
        )
    })
}

/// What the server's greeting says.
#[derive(Debug)]
struct Handshake {
    /// The server's id of this connection (`CONNECTION_ID()`), for `KILL QUERY`.
    id: u32,
    caps: u32,
    nonce: Vec<u8>,
    plugin: String,
}

fn parse_handshake(p: &[u8]) -> Result<Handshake, WireError> {
    let short = || WireError::Unsupported("a short or unknown server greeting".into());
    match p.first() {
        Some(0xFF) => {
            let (code, message) = parse_err(p);
            return Err(WireError::Sql(server_error(code, message)));
        }
        Some(10) => {}
        Some(v) => {
            return Err(WireError::Unsupported(format!("protocol version {v}")));
        }
        None => return Err(short()),
    }
    let nul = p[1..].iter().position(|&b| b == 0).ok_or_else(short)?;
    let at_id = 1 + nul + 1;
    let id = p.get(at_id..at_id + 4).ok_or_else(short)?;
    let id = u32::from_le_bytes([id[0], id[1], id[2], id[3]]);
    let mut at = at_id + 4; // version, NUL, connection id
    let mut nonce = p.get(at..at + 8).ok_or_else(short)?.to_vec();
    at += 9; // scramble part 1 and a filler byte
    let lo = p.get(at..at + 2).ok_or_else(short)?;
    let mut caps = u32::from(u16::from_le_bytes([lo[0], lo[1]]));
    at += 2;
    let mut plugin = String::new();
    if p.len() > at {
        // charset (1), status (2), capabilities high (2), scramble length (1), reserved (10)
        let b = p.get(at..at + 16).ok_or_else(short)?;
        caps |= u32::from(u16::from_le_bytes([b[3], b[4]])) << 16;
        let scramble_len = usize::from(b[5]);
        at += 16;
        if caps & CLIENT_SECURE_CONNECTION != 0 {
            let n = scramble_len.saturating_sub(8).max(13);
            let part2 = p.get(at..(at + n).min(p.len())).ok_or_else(short)?;
            at += part2.len();
            let part2 = part2.strip_suffix(&[0]).unwrap_or(part2);
            nonce.extend_from_slice(part2);
        }
        if caps & CLIENT_PLUGIN_AUTH != 0 {
            let rest = p.get(at..).unwrap_or(&[]);
            let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
            plugin = String::from_utf8_lossy(&rest[..end]).into_owned();
        }
    }
    Ok(Handshake {
        id,
        caps,
        nonce,
        plugin,
    })
}

/// The auth plugins this client speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plugin {
    Native,
    CachingSha2,
}

impl Plugin {
    fn from_name(name: &str) -> Option<Plugin> {
        match name {
            "mysql_native_password" => Some(Plugin::Native),
            "caching_sha2_password" => Some(Plugin::CachingSha2),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Plugin::Native => "mysql_native_password",
            Plugin::CachingSha2 => "caching_sha2_password",
        }
    }

    /// The auth response for `nonce` (empty for an empty password, as libmysqlclient sends).
    fn scramble(self, nonce: &[u8], password: &str) -> Vec<u8> {
        if password.is_empty() {
            return Vec::new();
        }
        let nonce = &nonce[..nonce.len().min(20)];
        match self {
            Plugin::Native => scramble_native(nonce, password.as_bytes()).to_vec(),
            Plugin::CachingSha2 => scramble_sha256(nonce, password.as_bytes()).to_vec(),
        }
    }
}

/// mysql_native_password: SHA1(password) XOR SHA1(nonce + SHA1(SHA1(password))).
fn scramble_native(nonce: &[u8], password: &[u8]) -> [u8; 20] {
    let stage1: [u8; 20] = Sha1::digest(password).into();
    let stage2: [u8; 20] = Sha1::digest(stage1).into();
    let mut h = Sha1::new();
    h.update(nonce);
    h.update(stage2);
    let mix: [u8; 20] = h.finalize().into();
    std::array::from_fn(|i| stage1[i] ^ mix[i])
}

/// caching_sha2_password fast path: SHA256(password) XOR SHA256(SHA256(SHA256(password)) +
/// nonce).
fn scramble_sha256(nonce: &[u8], password: &[u8]) -> [u8; 32] {
    let stage1: [u8; 32] = Sha256::digest(password).into();
    let stage2: [u8; 32] = Sha256::digest(stage1).into();
    let mut h = Sha256::new();
    h.update(stage2);
    h.update(nonce);
    let mix: [u8; 32] = h.finalize().into();
    std::array::from_fn(|i| stage1[i] ^ mix[i])
}

/// What to do after a packet of the authentication exchange.
#[derive(Debug, PartialEq, Eq)]
enum AuthStep {
    /// The server said OK.
    Done,
    /// Read the next packet (caching_sha2 fast auth succeeded; the OK follows).
    Wait,
    /// Send this auth data (answer to an auth switch).
    Send(Vec<u8>),
}

fn auth_step(p: &[u8], plugin: &mut Plugin, password: &str) -> Result<AuthStep, WireError> {
    match p.first() {
        Some(0x00) => Ok(AuthStep::Done),
        Some(0xFF) => {
            let (code, message) = parse_err(p);
            Err(WireError::Sql(server_error(code, message)))
        }
        Some(0xFE) if p.len() == 1 => Err(WireError::Unsupported(
            "the server asks for the old (pre-4.1) password scramble".into(),
        )),
        Some(0xFE) => {
            let rest = &p[1..];
            let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
            let name = String::from_utf8_lossy(&rest[..end]);
            let data = rest.get(end + 1..).unwrap_or(&[]);
            let data = data.strip_suffix(&[0]).unwrap_or(data);
            *plugin = Plugin::from_name(&name).ok_or_else(|| {
                WireError::Unsupported(format!("the server asks for auth plugin `{name}`"))
            })?;
            Ok(AuthStep::Send(plugin.scramble(data, password)))
        }
        Some(0x01) if *plugin == Plugin::CachingSha2 => match p.get(1) {
            Some(3) => Ok(AuthStep::Wait),
            _ => Err(WireError::Unsupported(
                "caching_sha2_password needs full authentication (TLS or RSA)".into(),
            )),
        },
        _ => Err(WireError::Unsupported(
            "an unexpected packet during authentication".into(),
        )),
    }
}

impl Connection for WireConnection {
    fn interrupter(&self) -> Option<crate::db::interrupt::Interrupter> {
        crate::db::interrupt::stream_interrupter(&self.io.stream)
    }

    /// `KILL QUERY` from a second connection ([`Killer::kill_query`]).
    fn canceller(&self) -> Option<crate::db::interrupt::Interrupter> {
        let k = self.killer.clone()?;
        Some(crate::db::interrupt::Interrupter::new(move || {
            k.kill_query()
        }))
    }

    fn prepare(&mut self, sql: &str) -> Result<StmtId, SqlError> {
        self.start(COM_STMT_PREPARE)?;
        self.out.extend_from_slice(sql.as_bytes());
        self.send()?;
        let r = self.packet()?;
        let p = &self.io.buf[r];
        match p.first() {
            Some(0x00) if p.len() >= 9 => {}
            Some(0xFF) => {
                let (code, message) = parse_err(p);
                return Err(server_error(code, message));
            }
            _ => return Err(self.protocol("bad COM_STMT_PREPARE answer")),
        }
        let id = u32::from_le_bytes([p[1], p[2], p[3], p[4]]);
        let columns = u16::from_le_bytes([p[5], p[6]]);
        let params = u16::from_le_bytes([p[7], p[8]]);
        // Parameters are bounded by the u16 (65,535, MySQL's own limit); columns by MySQL's.
        if u64::from(columns) > MAX_COLUMNS {
            return Err(self.protocol(format!(
                "the server announced {columns} columns for a statement (MySQL allows at most {MAX_COLUMNS})"
            )));
        }
        for n in [params, columns] {
            if n > 0 {
                for _ in 0..n {
                    self.skip_packet()?;
                }
                if !self.deprecate_eof() {
                    self.skip_packet()?;
                }
            }
        }
        self.stmts.push(Stmt {
            id,
            params: usize::from(params),
        });
        Ok(self.stmts.len() - 1)
    }

    fn execute(&mut self, stmt: StmtId, params: &[P<'_>]) -> Result<Done, SqlError> {
        self.send_execute(stmt, params)?;
        Ok(self.result(false)?.0)
    }

    fn execute_fetch(
        &mut self,
        stmt: StmtId,
        params: &[P<'_>],
        first: bool,
        out: &mut Fetched,
    ) -> Result<Done, SqlError> {
        out.clear();
        self.send_execute(stmt, params)?;
        self.fetch(true, first, out)
    }

    fn query_fetch(&mut self, sql: &str, first: bool, out: &mut Fetched) -> Result<Done, SqlError> {
        out.clear();
        self.start(COM_QUERY)?;
        self.out.extend_from_slice(sql.as_bytes());
        self.send()?;
        self.fetch(false, first, out)
    }

    fn query(&mut self, sql: &str) -> Result<Done, SqlError> {
        self.start(COM_QUERY)?;
        self.out.extend_from_slice(sql.as_bytes());
        self.send()?;
        Ok(self.result(false)?.0)
    }

    fn query_i64(&mut self, sql: &str) -> Result<Option<i64>, SqlError> {
        self.start(COM_QUERY)?;
        self.out.extend_from_slice(sql.as_bytes());
        self.send()?;
        Ok(self.result(true)?.1)
    }

    fn query_rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, SqlError> {
        Ok(self.query_table(sql)?.rows)
    }

    /// Admin queries (server variables): whole rows, every value as text, at most
    /// MAX_ADMIN_ROWS rows and max_packet bytes (a server that never ends its result set is an
    /// error, not a client that grows until it aborts).
    fn query_table(&mut self, sql: &str) -> Result<Table, SqlError> {
        let mut kept = Collect::admin(self.limits.max_packet);
        self.query_each(sql, &mut kept)?;
        Ok(kept.table)
    }

    fn query_each(&mut self, sql: &str, sink: &mut dyn RowSink) -> Result<Done, SqlError> {
        self.start(COM_QUERY)?;
        self.out.extend_from_slice(sql.as_bytes());
        self.send()?;
        let r = self.packet()?;
        let p = &self.io.buf[r];
        match p.first() {
            Some(0x00) => {
                let ok = parse_ok(p);
                let more = ok
                    .as_ref()
                    .is_some_and(|ok| ok.status & SERVER_MORE_RESULTS_EXISTS != 0);
                let affected = ok.map_or(0, |ok| ok.affected);
                if more {
                    self.result(false)?;
                }
                return Ok(Done {
                    rows: false,
                    affected,
                });
            }
            Some(0xFF) => {
                let (code, message) = parse_err(p);
                return Err(self.failed(code, message));
            }
            _ => {}
        }
        let mut at = 0;
        let Some(columns) = lenenc(p, &mut at) else {
            return Err(self.protocol("bad column count"));
        };
        let names = self.column_names(columns)?;
        sink.columns(&names);
        let end_limit = if self.deprecate_eof() { MAX_PAYLOAD } else { 9 };
        let status = loop {
            let r = self.packet()?;
            let p = &self.io.buf[r];
            match p.first() {
                Some(0xFE) if p.len() < end_limit => {
                    let status = if self.deprecate_eof() {
                        parse_ok(p).map(|ok| ok.status)
                    } else {
                        parse_eof(p)
                    };
                    break status.unwrap_or(0);
                }
                Some(0xFF) => {
                    let (code, message) = parse_err(p);
                    return Err(self.failed(code, message));
                }
                _ => {}
            }
            let mut at = 0;
            for _ in 0..columns {
                if p.get(at) == Some(&0xFB) {
                    at += 1;
                    sink.value(None);
                    continue;
                }
                let Some(bytes) = lenenc_bytes(p, &mut at) else {
                    return Err(self.protocol("bad text row"));
                };
                sink.value(Some(bytes));
            }
            if !sink.end_row() {
                return Err(self.protocol(format!(
                    "the answer to `{sql}` has more than {MAX_ADMIN_ROWS} rows or {} bytes (max_packet): a server that never ends its result set",
                    self.limits.max_packet
                )));
            }
        };
        // Further results (a statement of several) are read and dropped, so the connection
        // stays in step.
        if status & SERVER_MORE_RESULTS_EXISTS != 0 {
            self.result(false)?;
        }
        Ok(Done {
            rows: true,
            affected: 0,
        })
    }

    fn load(
        &mut self,
        table: &str,
        with_id: bool,
        fill: &mut dyn FnMut(&mut DataRow) -> bool,
    ) -> Result<(), SqlError> {
        load_rows(self, table, with_id, fill)
    }

    fn load_rows(
        &mut self,
        table: &str,
        columns: &[String],
        fill: &mut dyn FnMut(&mut [crate::db::Cell]) -> bool,
    ) -> Result<u64, SqlError> {
        load_cells(self, table, columns, fill)
    }

    fn close(self: Box<Self>) {
        // Drop sends COM_QUIT.
    }
}

impl WireConnection {
    /// Sends COM_STMT_EXECUTE of `stmt` with `params` (binary, types sent every time).
    #[inline]
    fn send_execute(&mut self, stmt: StmtId, params: &[P<'_>]) -> Result<(), SqlError> {
        let Some(s) = self.stmts.get(stmt) else {
            return Err(SqlError::client(
                format!("no prepared statement {stmt}"),
                ErrKind::Other,
            ));
        };
        if s.params != params.len() {
            return Err(SqlError::client(
                format!(
                    "the statement takes {} parameters, {} given",
                    s.params,
                    params.len()
                ),
                ErrKind::Other,
            ));
        }
        let id = s.id;
        self.start(COM_STMT_EXECUTE)?;
        let out = &mut self.out;
        out.extend_from_slice(&id.to_le_bytes());
        out.push(0); // CURSOR_TYPE_NO_CURSOR
        out.extend_from_slice(&1u32.to_le_bytes()); // iteration count
        if !params.is_empty() {
            // Types sent with every execution (new-params-bound = 1), so a statement may get
            // an integer one time and a string the next; NULLs in the null bitmap.
            let bitmap = out.len();
            out.resize(out.len() + params.len().div_ceil(8), 0);
            for (i, p) in params.iter().enumerate() {
                if matches!(p, P::Null) {
                    out[bitmap + i / 8] |= 1 << (i % 8);
                }
            }
            out.push(1);
            for p in params {
                let ty = match p {
                    P::Int(_) => MYSQL_TYPE_LONGLONG,
                    P::Str(_) => MYSQL_TYPE_VAR_STRING,
                    P::Float(_) => MYSQL_TYPE_DOUBLE,
                    P::Null => MYSQL_TYPE_NULL,
                };
                out.extend_from_slice(&[ty, 0]);
            }
            for p in params {
                match *p {
                    P::Int(i) => out.extend_from_slice(&i.to_le_bytes()),
                    P::Str(s) => {
                        put_lenenc(out, s.len() as u64);
                        out.extend_from_slice(s.as_bytes());
                    }
                    P::Float(f) => out.extend_from_slice(&f.to_le_bytes()),
                    P::Null => {}
                }
            }
        }
        self.send()
    }

    /// Closes statement `stmt` on the server (COM_STMT_CLOSE has no answer). The id stays
    /// taken; executing it afterwards is a server error.
    pub fn close_statement(&mut self, stmt: StmtId) -> Result<(), SqlError> {
        let Some(s) = self.stmts.get(stmt) else {
            return Ok(());
        };
        let id = s.id;
        self.start(COM_STMT_CLOSE)?;
        self.out.extend_from_slice(&id.to_le_bytes());
        self.send()
    }
}

impl Drop for WireConnection {
    fn drop(&mut self) {
        // sysbench closes its connection in thread_done; a failure here changes nothing
        // measured.
        if self.start(COM_QUIT).is_ok() {
            let _ = self.send();
        }
    }
}

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
