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
//!
//! Layout: this file holds the connection, its packet I/O and the commands; `handshake` opens
//! and authenticates, `results` reads the answers (result sets, the first row as text), and
//! `codec` has the byte-level pieces (framing, length-encoded values, OK/EOF/ERR packets).

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use super::shared::{ColumnMeta, Killer, kind_of_code, load_cells, load_rows};
use crate::db::conn::{
    Collect, Connection, DataRow, Done, ErrKind, Fetched, P, RowSink, SqlError, StmtId, Table,
};
pub use crate::db::io::WireError;
use crate::db::io::{ReadError, Reader};
use crate::db::target::{Limits, MAX_ADMIN_ROWS, Target};

mod codec;
mod handshake;
mod results;

use self::codec::{frame, lenenc, lenenc_bytes, parse_eof, parse_err, parse_ok, put_lenenc};

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
    /// The server's version string from its greeting.
    version: String,
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
        if let Err(e) = self.io.send(&self.out) {
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
}

impl Connection for WireConnection {
    fn server_version(&self) -> Option<String> {
        Some(self.version.clone()).filter(|v| !v.is_empty())
    }

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
