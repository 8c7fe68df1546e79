//! The I/O every client shares: for sbsuite's own blocking protocol clients
//! ([`crate::db::mysql::wire`], [`crate::db::pgsql::wire`]) the socket (TCP, TLS over TCP, or
//! Unix), one reusable read buffer and the choice between a wire client and its library
//! ([`Choice`]); for the library clients (mysql_async, tokio-postgres) the current-thread
//! tokio [`runtime`] each connection blocks on.
//!
//! Why it is shaped this way: both clients send a whole command with one `write` and then only
//! need to find where the answer ends, skipping row data by its length. The buffer grows only
//! for a message larger than itself and reads are never tiny (unread bytes move to the front
//! first), so a typical answer costs one `read` system call. The protocols differ in framing
//! and errors, so each client maps [`ReadError`] and [`ConnectError`] to its own messages.
//!
//! TLS ([`Stream::tls_until`]) is a blocking rustls client over the TCP socket: rustls decrypts into
//! its own plaintext queue and [`Reader::fill`] copies from there into the one read buffer,
//! so the parsing code does not change; a write is encrypted and flushed at once.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::db::conn::{Connection, ErrKind, SqlError};

/// A single-threaded tokio runtime for one connection of a library client (I/O and timers
/// enabled): one per worker thread, never shared (DESIGN.md "Measured facts").
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// Initial size of the read buffer: one answer of the read-only mix (100 rows of ~190 bytes)
/// fits, so a range query is one `read` call.
pub const READ_BUF: usize = 32 << 10;

/// Below this much free space at the end of the read buffer, unread bytes move to the front
/// before the next `read`, so reads are never tiny.
const MIN_READ: usize = 4 << 10;

/// A buffer grown past this (a huge row or command) is given back before the next command.
const KEEP: usize = 1 << 20;

/// Why a wire connection could not be opened.
#[derive(Debug)]
pub enum WireError {
    /// The server (or the target) needs something this client does not do (TLS, an auth
    /// method or plugin it does not speak, an old protocol). The caller uses the driver
    /// library instead.
    Unsupported(String),
    /// A real error (server error, unreachable host, wrong password) to report as is.
    Sql(SqlError),
}

impl From<SqlError> for WireError {
    fn from(e: SqlError) -> WireError {
        WireError::Sql(e)
    }
}

/// One driver's choice between sbsuite's wire client and its client library: an environment
/// switch (`wire`, the default, or the library's name), and the fallback to the library when
/// the wire client meets a server it cannot speak to.
pub struct Choice {
    /// The environment variable (`SBSUITE_MYSQL_CLIENT`).
    pub env: &'static str,
    /// Its value that picks the library (`async`).
    pub library: &'static str,
    /// The library's name in messages (`mysql_async`).
    pub library_name: &'static str,
    /// The server's name in messages (`MySQL`).
    pub server: &'static str,
    chosen: OnceLock<Result<bool, String>>,
    /// Set once the wire client met a server it cannot speak to: later connections of the
    /// process go to the library directly.
    unsupported: AtomicBool,
}

impl Choice {
    pub const fn new(
        env: &'static str,
        library: &'static str,
        library_name: &'static str,
        server: &'static str,
    ) -> Choice {
        Choice {
            env,
            library,
            library_name,
            server,
            chosen: OnceLock::new(),
            unsupported: AtomicBool::new(false),
        }
    }

    /// Whether the environment leaves the wire client on (read once per process).
    fn wire(&self) -> Result<bool, SqlError> {
        self.chosen
            .get_or_init(|| match std::env::var(self.env).as_deref() {
                Err(_) | Ok("" | "wire") => Ok(true),
                Ok(v) if v == self.library => Ok(false),
                Ok(other) => Err(format!(
                    "{}={other} is not a {} client: use wire (the default) or {}",
                    self.env, self.server, self.library
                )),
            })
            .clone()
            .map_err(|m| SqlError::client(m, ErrKind::Other))
    }

    /// Whether the library client may open a connection here (`why`: why it is needed): not
    /// on a carrier of `client_threads` ([`crate::db::mux`]), where its blocking runtime
    /// would stall every other worker of the thread.
    fn library_here(&self, why: &str) -> Result<(), SqlError> {
        if !crate::db::mux::active() {
            return Ok(());
        }
        Err(SqlError::client(
            format!(
                "{} needs {} for this connection ({why}), and `client_threads` runs several \
                 workers per thread, which only sbsuite's own wire client can: drop \
                 `client_threads`, or let the wire client connect (unset {})",
                self.server, self.library_name, self.env
            ),
            ErrKind::Other,
        ))
    }

    /// Opens a connection with `open` (the wire client) unless the environment or an earlier
    /// connection ruled it out; `None`: the library's turn.
    pub fn open_wire(
        &self,
        open: impl FnOnce() -> Result<Box<dyn Connection>, WireError>,
    ) -> Result<Option<Box<dyn Connection>>, SqlError> {
        if !self.wire()? || self.unsupported.load(Ordering::Relaxed) {
            let why = if self.unsupported.load(Ordering::Relaxed) {
                "an earlier connection's server needed it".to_string()
            } else {
                format!("{}={}", self.env, self.library)
            };
            return self.library_here(&why).map(|()| None);
        }
        match open() {
            Ok(c) => Ok(Some(c)),
            Err(WireError::Sql(e)) => Err(e),
            Err(WireError::Unsupported(why)) => {
                self.library_here(&why)?;
                // Said once: the client in use changes the client CPU a run measures.
                if !self.unsupported.swap(true, Ordering::Relaxed) {
                    eprintln!(
                        "[sbsuite] {}: {why}: using {} for the connections",
                        self.server, self.library_name
                    );
                }
                Ok(None)
            }
        }
    }
}

pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    /// TLS over TCP (boxed: rustls' connection state is large).
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Stream {
    /// Runs a TLS handshake as a client of `host` (an IP address or a DNS name, checked
    /// against the certificate when `config` verifies names) over `tcp`, ending by `deadline`
    /// whatever the server does: a server that trickles its handshake a byte at a time keeps
    /// every `read` short, so the socket's own timeout would never fire and `complete_io`
    /// would loop for as long as it likes.
    /// Every read and write of the handshake waits at most until `deadline`; past it, the
    /// error is [`io::ErrorKind::TimedOut`]. The socket's timeouts are left as the last read
    /// or write set them: the caller sets its own for what follows.
    pub fn tls_until(
        mut tcp: TcpStream,
        config: Arc<rustls::ClientConfig>,
        host: &str,
        deadline: Instant,
    ) -> io::Result<Stream> {
        let name = rustls::pki_types::ServerName::try_from(host.to_owned()).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{host}` is not a host name for TLS: {e}"),
            )
        })?;
        let mut conn = rustls::ClientConnection::new(config, name).map_err(io::Error::other)?;
        let mut until = Until {
            tcp: &mut tcp,
            deadline,
        };
        while conn.is_handshaking() {
            conn.complete_io(&mut until)?;
        }
        Ok(Stream::Tls(Box::new(rustls::StreamOwned::new(conn, tcp))))
    }

    pub fn write_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Tcp(_) | Stream::Unix(_) => {
                let fd = self.raw_fd();
                while !buf.is_empty() {
                    match send(fd, buf) {
                        Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                        Ok(n) => buf = &buf[n..],
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(())
            }
            // rustls' `write` may leave records unsent (and swallow the socket's error until
            // the next call): `flush` sends them all now.
            Stream::Tls(s) => {
                s.write_all(buf)?;
                s.flush()
            }
        }
    }

    pub fn set_read_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(d),
            Stream::Unix(s) => s.set_read_timeout(d),
            Stream::Tls(s) => s.sock.set_read_timeout(d),
        }
    }

    pub fn set_write_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_write_timeout(d),
            Stream::Unix(s) => s.set_write_timeout(d),
            Stream::Tls(s) => s.sock.set_write_timeout(d),
        }
    }

    /// The socket's descriptor (under TLS, the TCP socket's).
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tls(s) => s.sock.as_raw_fd(),
        }
    }

    /// One write of at most `buf` (TLS: into rustls' records, as much as it takes).
    fn write_some(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(_) | Stream::Unix(_) => send(self.raw_fd(), buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    /// Sends the TLS records rustls still holds (plain sockets hold nothing).
    fn flush_records(&mut self) -> io::Result<()> {
        match self {
            Stream::Tls(s) => s.flush(),
            _ => Ok(()),
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(_) | Stream::Unix(_) => recv(self.raw_fd(), buf),
            // A server that closes the socket without a TLS close_notify (a terminated
            // backend) has closed the connection, as in plain text.
            Stream::Tls(s) => match s.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(0),
                r => r,
            },
        }
    }
}

/// send(2) on a socket, as the system call itself: glibc's `send` (which the standard
/// library's sockets call) is a thread cancellation point that costs two calls around every
/// system call, and nothing here cancels threads (#32). `MSG_NOSIGNAL`: a closed peer is an
/// error (EPIPE), not a SIGPIPE.
fn send(fd: std::os::fd::RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of its length for the duration of the call.
    let n = unsafe {
        libc::syscall(
            libc::SYS_sendto,
            fd,
            buf.as_ptr(),
            buf.len(),
            libc::MSG_NOSIGNAL,
            std::ptr::null::<libc::sockaddr>(),
            0,
        )
    };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

/// recv(2) on a socket, as the system call itself (see [`send`]).
fn recv(fd: std::os::fd::RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of its length for the duration of the call.
    let n = unsafe {
        libc::syscall(
            libc::SYS_recvfrom,
            fd,
            buf.as_mut_ptr(),
            buf.len(),
            0,
            std::ptr::null_mut::<libc::sockaddr>(),
            std::ptr::null_mut::<libc::socklen_t>(),
        )
    };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

/// A TCP socket whose every read and write waits at most until `deadline` (one system call
/// more per read or write: for handshakes only, see [`Stream::tls_until`]).
struct Until<'a> {
    tcp: &'a mut TcpStream,
    deadline: Instant,
}

impl Until<'_> {
    /// The time left, or the error once there is none.
    fn left(&self) -> io::Result<Duration> {
        match self.deadline.checked_duration_since(Instant::now()) {
            Some(d) if !d.is_zero() => Ok(d),
            _ => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the deadline passed during the handshake",
            )),
        }
    }
}

impl Read for Until<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.tcp.set_read_timeout(Some(self.left()?))?;
        self.tcp.read(buf)
    }
}

impl Write for Until<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tcp.set_write_timeout(Some(self.left()?))?;
        self.tcp.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tcp.flush()
    }
}

/// Why a TCP connection could not be opened.
#[derive(Debug)]
pub enum ConnectError {
    /// The host name has no address.
    Resolve(io::Error),
    /// No address accepted the connection (the last address's error).
    Connect(io::Error),
}

/// Connects to `host:port` (each address in turn) with TCP_NODELAY and keepalive: no Nagle
/// delay on small commands, and a vanished server is noticed on an idle connection.
pub fn connect_tcp(host: &str, port: u16, timeout: Duration) -> Result<TcpStream, ConnectError> {
    let addrs = (host, port)
        .to_socket_addrs()
        .map_err(ConnectError::Resolve)?;
    let mut last = io::Error::new(io::ErrorKind::NotFound, "the host has no address");
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                let _ = socket2::SockRef::from(&s).set_tcp_keepalive(
                    &socket2::TcpKeepalive::new().with_time(Duration::from_secs(30)),
                );
                return Ok(s);
            }
            Err(e) => last = e,
        }
    }
    Err(ConnectError::Connect(last))
}

/// The text of a timed-out connect or read during the handshake.
pub fn timed_out(e: &io::Error, timeout: Duration) -> String {
    if matches!(
        e.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    ) {
        format!(
            "connection timed out after {} s (raise [target] connect_timeout or check the host)",
            timeout.as_secs()
        )
    } else {
        e.to_string()
    }
}

/// Why a read failed.
#[derive(Debug)]
pub enum ReadError {
    /// The server closed the connection.
    Closed,
    /// The socket's timeout or the command's deadline passed ([`Reader::arm`]).
    TimedOut,
    /// More bytes were asked for than `max_packet` allows (the size asked for): the server
    /// announced a message the client refuses to allocate.
    TooLarge(usize),
    Io(io::Error),
}

/// Room above `max_packet` for the framing around the largest message (headers, the rest of
/// the previous message in the buffer).
const FRAMING: usize = 4 << 10;

/// A socket and its read buffer: unread bytes are `buf[pos..end]`.
///
/// Two bounds keep a broken or hostile server from hanging or bloating the client, at the
/// cost of one clock read per command and per `read` call after its first: no request for
/// more than `max_packet` bytes is honoured ([`ReadError::TooLarge`], checked before the
/// buffer grows), and a command whose answer is not complete by its deadline fails with
/// [`ReadError::TimedOut`] — the socket's own timeout (the same length) ends a `read` that
/// blocks, the deadline a server that trickles bytes or never ends its answer. A command then
/// fails within twice its timeout, whatever the server does.
pub struct Reader {
    pub stream: Stream,
    pub buf: Vec<u8>,
    pub pos: usize,
    pub end: usize,
    /// The largest request `fill` honours (`max_packet` plus framing).
    max: usize,
    /// The wait each command gets ([`Reader::arm`]); `None`: no limit.
    timeout: Option<Duration>,
    /// When the current command's answer must be complete.
    deadline: Option<Instant>,
    /// The connection's io_uring once [`Reader::use_ring`] turned it on: a command's bytes
    /// wait there for the first read of its answer ([`crate::db::ring`]).
    ring: Option<crate::db::ring::Ring>,
    /// The socket is non-blocking on its thread's carrier ([`crate::db::mux`]): a read or
    /// write that would block suspends the worker's coroutine instead.
    mux: bool,
    /// A command went out since the last read (on a carrier): its answer cannot be there yet,
    /// so the first read waits without trying.
    sent: bool,
    /// The command's clock started and nothing was read since ([`Reader::arm`]): its first
    /// read needs no look at the deadline, which is one timeout away.
    fresh: bool,
}

impl Reader {
    /// A reader of `stream` that accepts messages of up to `max_packet` bytes. No timeout
    /// until [`Reader::set_timeout`].
    pub fn new(stream: Stream, max_packet: usize) -> Reader {
        Reader {
            stream,
            buf: vec![0; READ_BUF],
            pos: 0,
            end: 0,
            max: max_packet.saturating_add(FRAMING),
            timeout: None,
            deadline: None,
            ring: None,
            mux: false,
            sent: false,
            fresh: false,
        }
    }

    /// Sends each command with the first read of its answer, in one kernel entry, from now on
    /// (after the handshake: TLS and authentication keep plain reads and writes). Nothing
    /// changes for TLS, or when the process blocks ([`crate::db::ring`]). The error: the
    /// switch names no mode, or the socket could not join its carrier.
    ///
    /// On a carrier (`client_threads`, [`crate::db::mux`]) the socket joins the carrier's
    /// epoll instead, TLS or not: its reads and writes then suspend the worker, not the thread.
    pub fn use_ring(&mut self) -> Result<(), SqlError> {
        if crate::db::mux::active() {
            self.mux = crate::db::mux::register(self.stream.raw_fd()).map_err(|e| {
                SqlError::client(format!("socket setup: {e}"), ErrKind::Unreachable)
            })?;
            return Ok(());
        }
        if !matches!(self.stream, Stream::Tls(_)) {
            self.ring =
                crate::db::ring::Ring::new().map_err(|m| SqlError::client(m, ErrKind::Other))?;
        }
        Ok(())
    }

    /// Sends `data`, a whole command: queued for the next read when the connection rings,
    /// else written at once. A write that fails reports the socket's error (its timeout as
    /// [`io::ErrorKind::TimedOut`] or `WouldBlock`).
    pub fn send(&mut self, data: &[u8]) -> io::Result<()> {
        if self.mux {
            self.write_mux(data)?;
            self.sent = true;
            return Ok(());
        }
        if let Some(ring) = &mut self.ring
            && ring.queue(data)
        {
            return Ok(());
        }
        self.flush()?;
        self.stream.write_all(data)
    }

    /// [`Reader::send`] on a carrier: every byte, waiting (suspended) while the socket is full,
    /// for at most the timeout.
    fn write_mux(&mut self, data: &[u8]) -> io::Result<()> {
        use crate::db::mux::{Interest, wait};
        let fd = self.stream.raw_fd();
        // The clock is read only when the socket is full: almost every command fits at once.
        let mut until = None;
        let timeout = self.timeout;
        let mut deadline = || *until.get_or_insert_with(|| timeout.map(|t| Instant::now() + t));
        let mut off = 0;
        while off < data.len() {
            match self.stream.write_some(&data[off..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => off += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    wait(fd, Interest::Write, deadline())?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        loop {
            match self.stream.flush_records() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    wait(fd, Interest::Write, deadline())?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => return r,
            }
        }
    }

    /// On a carrier: suspends the worker until the socket may have bytes to read, at most
    /// until the command's deadline (or one timeout from now).
    fn wait_readable(&self) -> Result<(), ReadError> {
        let until = self
            .deadline
            .or_else(|| self.timeout.map(|t| Instant::now() + t));
        crate::db::mux::wait(self.stream.raw_fd(), crate::db::mux::Interest::Read, until).map_err(
            |e| match e.kind() {
                io::ErrorKind::TimedOut => ReadError::TimedOut,
                _ => ReadError::Io(e),
            },
        )
    }

    /// Writes what is queued for the next read now (a connection that closes without reading).
    pub fn flush(&mut self) -> io::Result<()> {
        match &mut self.ring {
            Some(ring) if !ring.queued().is_empty() => {
                let r = self.stream.write_all(ring.queued());
                ring.clear();
                r
            }
            _ => Ok(()),
        }
    }

    /// Bounds every later command (from its [`Reader::arm`] or [`Reader::rewind`]) and every
    /// socket read and write by `timeout`; `None`: wait forever. One system call per socket
    /// option, at connect time only.
    pub fn set_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.stream.set_read_timeout(timeout)?;
        self.stream.set_write_timeout(timeout)?;
        self.timeout = timeout;
        self.deadline = None;
        Ok(())
    }

    /// Sets the deadline of the exchange that starts now (a handshake: `connect_timeout`
    /// from the first connect); `None` removes it.
    pub fn set_deadline(&mut self, at: Option<Instant>) {
        self.deadline = at;
        self.fresh = false;
    }

    /// Starts a command's clock: its answer must be complete within the timeout.
    pub fn arm(&mut self) {
        self.deadline = self.timeout.map(|t| Instant::now() + t);
        self.fresh = true;
    }

    /// Makes at least `need` unread bytes available in `buf[pos..]`.
    pub fn fill(&mut self, need: usize) -> Result<(), ReadError> {
        if need > self.max {
            return Err(ReadError::TooLarge(need));
        }
        while self.end - self.pos < need {
            // The first read of a command is bounded by the socket's timeout (on a carrier: by
            // its wait, which reads the deadline), so the command still ends within twice its
            // timeout without a clock read per command here (#32).
            if !std::mem::take(&mut self.fresh)
                && let Some(at) = self.deadline
                && Instant::now() >= at
            {
                return Err(ReadError::TimedOut);
            }
            if self.pos == self.end {
                self.pos = 0;
                self.end = 0;
            } else if self.pos > 0
                && (self.buf.len() - self.end < MIN_READ || self.buf.len() - self.pos < need)
            {
                self.buf.copy_within(self.pos..self.end, 0);
                self.end -= self.pos;
                self.pos = 0;
            }
            if self.buf.len() - self.pos < need {
                // Doubling, but never past `max` (a 64 MiB message must not cost 128 MiB).
                let size = (self.pos + need).max((self.buf.len() * 2).min(self.max));
                self.buf.resize(size, 0);
            }
            if let Some(got) = self.round_trip() {
                match got? {
                    0 => return Err(ReadError::Closed),
                    n => self.end += n,
                }
                continue;
            }
            if std::mem::take(&mut self.sent) {
                self.wait_readable()?;
            }
            match self.stream.read(&mut self.buf[self.end..]) {
                Ok(0) => return Err(ReadError::Closed),
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if self.mux && e.kind() == io::ErrorKind::WouldBlock => {
                    self.wait_readable()?;
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(ReadError::TimedOut);
                }
                Err(e) => return Err(ReadError::Io(e)),
            }
        }
        Ok(())
    }

    /// With bytes queued on the ring: sends them and reads into the free end of the buffer in
    /// one kernel entry. `None`: nothing queued (or the read did not happen), read as usual.
    fn round_trip(&mut self) -> Option<Result<usize, ReadError>> {
        use crate::db::ring::Trip;
        use std::os::fd::AsRawFd;

        let ring = self.ring.as_mut()?;
        if ring.queued().is_empty() {
            return None;
        }
        let fd = match &self.stream {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tls(_) => return None,
        };
        let left = self
            .deadline
            .map(|at| at.saturating_duration_since(Instant::now()));
        match ring.round_trip(fd, &mut self.buf[self.end..], left) {
            Trip::Read(n) => Some(Ok(n)),
            Trip::Sent => None,
            Trip::Short => self.flush().err().map(|e| Err(ReadError::Io(e))),
            Trip::TimedOut => Some(Err(ReadError::TimedOut)),
            Trip::SendFailed(e) | Trip::RecvFailed(e) => Some(Err(ReadError::Io(e))),
        }
    }

    /// Consumes `n` bytes without keeping them (row data).
    pub fn discard(&mut self, mut n: usize) -> Result<(), ReadError> {
        loop {
            let have = self.end - self.pos;
            if have >= n {
                self.pos += n;
                return Ok(());
            }
            n -= have;
            self.pos = 0;
            self.end = 0;
            self.fill(1)?;
        }
    }

    /// Before a command: starts its clock ([`Reader::arm`]); an empty buffer starts at its
    /// front again, and one that a huge answer grew is given back (no megabytes kept per
    /// connection).
    pub fn rewind(&mut self) {
        self.arm();
        if self.pos == self.end {
            self.pos = 0;
            self.end = 0;
            if self.buf.len() > KEEP {
                self.buf = vec![0; READ_BUF];
            }
        }
    }
}

impl Drop for Reader {
    /// A command still queued for the ring (a connection's goodbye: COM_QUIT, Terminate) goes
    /// out now; a failure changes nothing measured.
    fn drop(&mut self) {
        let _ = self.flush();
        if self.mux {
            crate::db::mux::deregister(self.stream.raw_fd());
        }
    }
}

#[cfg(test)]
pub mod testing {
    /// splitmix64, for the protocol fuzzers (`mysql/wire/fuzz.rs`, `pgsql/wire/fuzz.rs`):
    /// small, fast and deterministic per seed, so a failing case reruns from its seed.
    pub struct FuzzRng(pub u64);

    impl FuzzRng {
        #[allow(clippy::should_implement_trait)] // a generator, not an iterator
        pub fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        /// A number in `0..n` (`n` > 0).
        pub fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        /// True with probability `percent` %.
        pub fn chance(&mut self, percent: usize) -> bool {
            self.below(100) < percent
        }

        pub fn bytes(&mut self, n: usize) -> Vec<u8> {
            (0..n).map(|_| self.next() as u8).collect()
        }

        pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
            &items[self.below(items.len())]
        }
    }

    use crate::db::target::{RawTarget, Target};

    /// A target of `driver` as `user`, with more `[target]` lines.
    pub fn target(driver: &str, user: &str, extra: &str) -> Target {
        let raw: RawTarget = toml::from_str(&format!(
            "driver = \"{driver}\"\nuser = \"{user}\"\n{extra}"
        ))
        .expect("raw target");
        Target::from_raw(&raw).expect("valid target")
    }

    /// The integration tests' skip: one way to skip for both kinds of tests.
    pub use crate::db::skip::skip;

    /// Whether `server` listens on `addr` (else the test says why and passes, outside CI).
    pub fn server(addr: &str, server: &str) -> bool {
        if std::net::TcpStream::connect(addr).is_ok() {
            return true;
        }
        skip(&format!(
            "no {server} server listens on {addr} (.ci/run starts one)"
        ));
        false
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::os::unix::net::UnixStream;

    use super::*;

    #[test]
    fn a_request_above_max_packet_is_refused_before_allocating() {
        let (a, _b) = UnixStream::pair().unwrap();
        let mut r = Reader::new(Stream::Unix(a), 1 << 20);
        assert!(matches!(
            r.fill(0x7FFF_FFFF),
            Err(ReadError::TooLarge(0x7FFF_FFFF))
        ));
        assert_eq!(r.buf.len(), READ_BUF, "nothing was allocated");
    }

    #[test]
    fn a_trickling_peer_times_out_at_the_deadline_not_never() {
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut r = Reader::new(Stream::Unix(a), 1 << 20);
        r.set_timeout(Some(Duration::from_millis(300))).unwrap();
        r.rewind();
        // One byte every 50 ms: every read succeeds, the socket timeout never fires.
        let peer = std::thread::spawn(move || {
            for _ in 0..200 {
                if b.write_all(b"x").is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let start = Instant::now();
        assert!(matches!(r.fill(1000), Err(ReadError::TimedOut)));
        // Twice the timeout at most, with room for a loaded machine.
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        drop(r);
        peer.join().unwrap();
    }

    #[test]
    fn a_silent_peer_times_out_by_the_socket_timeout() {
        let (a, _b) = UnixStream::pair().unwrap();
        let mut r = Reader::new(Stream::Unix(a), 1 << 20);
        r.set_timeout(Some(Duration::from_millis(200))).unwrap();
        r.rewind();
        let start = Instant::now();
        assert!(matches!(r.fill(1), Err(ReadError::TimedOut)));
        assert!(start.elapsed() >= Duration::from_millis(150));
    }

    /// With the ring: commands wait for the read of their answer (two commands without an
    /// answer between them go out together, in order), a silent server times out by the
    /// command's deadline, and what is still queued when the connection closes is sent.
    #[test]
    fn ringed_commands_go_out_with_the_read_and_on_close() {
        use std::io::Read as _;

        let (a, mut b) = UnixStream::pair().unwrap();
        let mut r = Reader::new(Stream::Unix(a), 1 << 20);
        r.set_timeout(Some(Duration::from_millis(300))).unwrap();
        match crate::db::ring::Ring::create() {
            Ok(ring) => r.ring = Some(ring),
            Err(e) => return testing::skip(&format!("this kernel refuses io_uring: {e}")),
        }
        r.rewind();
        r.send(b"close 7;").unwrap();
        r.send(b"execute 8;").unwrap();
        b.set_nonblocking(true).unwrap();
        let mut early = [0u8; 1];
        assert!(
            b.read(&mut early).is_err(),
            "nothing is written before the read"
        );
        b.set_nonblocking(false).unwrap();
        let peer = std::thread::spawn(move || {
            let mut got = [0u8; 18];
            b.read_exact(&mut got).unwrap();
            b.write_all(b"ok").unwrap();
            (got, b)
        });
        r.fill(2).unwrap();
        assert_eq!(&r.buf[r.pos..r.end], b"ok");
        let (got, mut b) = peer.join().unwrap();
        assert_eq!(&got, b"close 7;execute 8;");
        r.pos = r.end;

        r.rewind();
        r.send(b"sleep;").unwrap();
        let start = Instant::now();
        assert!(matches!(r.fill(1), Err(ReadError::TimedOut)));
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        let mut got = [0u8; 6];
        b.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"sleep;");

        r.send(b"quit").unwrap();
        drop(r);
        let mut rest = Vec::new();
        b.read_to_end(&mut rest).unwrap();
        assert_eq!(rest, b"quit");
    }
}
