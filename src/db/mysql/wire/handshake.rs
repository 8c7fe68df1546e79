//! Opening a connection: the socket, the server's greeting, the handshake response and the
//! authentication exchange (`mysql_native_password`, `caching_sha2_password` fast path, auth
//! switches).
//!
//! Apart from the command path because it runs once per connection under its own bounds (one
//! deadline for connect + greeting + auth, 64 KiB packets, a few auth rounds); see the module doc
//! of [`super`] for the scope and the bounds.

use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sha1::{Digest, Sha1};
use sha2::Sha256;

use super::codec::parse_err;
use super::{
    CLIENT_CONNECT_WITH_DB, CLIENT_DEPRECATE_EOF, CLIENT_LONG_FLAG, CLIENT_LONG_PASSWORD,
    CLIENT_MULTI_RESULTS, CLIENT_MULTI_STATEMENTS, CLIENT_PLUGIN_AUTH, CLIENT_PROTOCOL_41,
    CLIENT_PS_MULTI_RESULTS, CLIENT_SECURE_CONNECTION, CLIENT_TRANSACTIONS, GREETING_WAIT,
    MAX_AUTH_ROUNDS, MAX_PAYLOAD, Stage, UTF8MB4_GENERAL_CI, WireConnection, WireOptions,
    server_error,
};
use crate::db::conn::{ErrKind, SqlError};
use crate::db::io::{self, ConnectError, Reader, Stream, WireError};
use crate::db::mysql::shared::Killer;
use crate::db::target::{SslMode, Target};

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
                version: String::new(),
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
                    c.io.use_ring()?;
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
    pub(super) fn socket_timeout(&self, d: Duration) -> Result<(), WireError> {
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
    pub(super) fn handshake(
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
        self.version = hs.version.clone();
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
}

/// What the server's greeting says.
#[derive(Debug)]
pub(super) struct Handshake {
    /// The server's id of this connection (`CONNECTION_ID()`), for `KILL QUERY`.
    pub(super) id: u32,
    pub(super) caps: u32,
    pub(super) nonce: Vec<u8>,
    pub(super) plugin: String,
    /// The server's version string (`5.5.5-10.11.6-MariaDB`, `5.7.25`).
    pub(super) version: String,
}

pub(super) fn parse_handshake(p: &[u8]) -> Result<Handshake, WireError> {
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
    let version = String::from_utf8_lossy(&p[1..1 + nul]).into_owned();
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
        version,
    })
}

/// The auth plugins this client speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Plugin {
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
    pub(super) fn scramble(self, nonce: &[u8], password: &str) -> Vec<u8> {
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
pub(super) fn scramble_native(nonce: &[u8], password: &[u8]) -> [u8; 20] {
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
pub(super) fn scramble_sha256(nonce: &[u8], password: &[u8]) -> [u8; 32] {
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
pub(super) enum AuthStep {
    /// The server said OK.
    Done,
    /// Read the next packet (caching_sha2 fast auth succeeded; the OK follows).
    Wait,
    /// Send this auth data (answer to an auth switch).
    Send(Vec<u8>),
}

pub(super) fn auth_step(
    p: &[u8],
    plugin: &mut Plugin,
    password: &str,
) -> Result<AuthStep, WireError> {
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
