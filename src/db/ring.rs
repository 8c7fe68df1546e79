//! One kernel entry per round trip on the wire clients' plain sockets (#32): a command's bytes
//! and the first read of its answer go to the kernel together, on an io_uring of the
//! connection's own, instead of a `write` and a blocking `read`.
//!
//! Why: on a virtual machine most of a round trip's client cost is the kernel (the issue's
//! strace of sbsuite's TPC-B: user 52 µs, system 117 µs a transaction of 7 round trips). A command is always followed by
//! a read of its answer, so the write is only queued ([`Ring::queue`]) and [`Ring::round_trip`]
//! submits a send linked to a receive (and, with a timeout, a linked timer) and waits for all
//! of them in one `io_uring_enter`. What the server receives does not change: the same bytes in
//! the same order (commands that get no answer, MySQL's `COM_STMT_CLOSE`, go out with the next
//! one, as one write); the rest of a long answer is read as before, with `read`.
//!
//! The choice is per process: `SBSUITE_WIRE_IO=blocking` (the default) or `uring`;
//! [`describe`] says which one ran and why, for the run's `host.json`. TLS connections always
//! block (rustls owns their reads and writes).
//!
//! Why blocking is the default: measured side by side (`bench/client-cpu.py --uring`,
//! BENCHMARKS.md), the ring saves the `write` but not the sleep and the wake a round trip
//! costs, and the receive it arms (a poll, then the read from task work) costs more system time
//! than a blocking `read` does; on this project's 2-core KVM guest the ring used 1.13–1.44× the
//! client CPU per transaction of the blocking sockets, and lowered throughput. It stays for
//! kernels where a system call costs more than a wake (heavy mitigations), and to measure that.
//!
//! Timeouts: the linked timer bounds the wait for the answer as `query_timeout` bounds a
//! blocking read. The send has no timer of its own: it waits only while the socket's buffer is
//! full (a server that stopped reading, with a command of at most [`MAX_QUEUED`] bytes queued),
//! and a stop still ends it (its shutdown of the socket fails the send).
//!
//! Soundness: the kernel holds pointers into the queued bytes and the read buffer while the
//! requests are in flight, so [`Ring::round_trip`] returns only once every request it
//! submitted has completed, whatever interrupts its wait (a signal, a stop: a shut-down socket
//! completes the receive with 0 bytes).

use std::io;
use std::os::fd::RawFd;
use std::sync::OnceLock;
use std::time::Duration;

use io_uring::{IoUring, opcode, squeue, types};

/// The environment switch: `blocking` (the default) or `uring`.
pub const ENV: &str = "SBSUITE_WIRE_IO";

/// Queued bytes above this go out at once with a plain `write` (a bulk INSERT, a COPY chunk):
/// the ring saves one system call, which only matters for small commands.
pub const MAX_QUEUED: usize = 64 << 10;

const SEND: u64 = 1;
const RECV: u64 = 2;
const TIMER: u64 = 3;

/// The process's choice, made once.
enum Mode {
    Uring,
    /// The sockets block, and why.
    Blocking(String),
    /// The switch names no mode: every connection fails with this message.
    Invalid(String),
}

fn mode() -> &'static Mode {
    static MODE: OnceLock<Mode> = OnceLock::new();
    MODE.get_or_init(|| match std::env::var(ENV).as_deref() {
        Err(_) | Ok("") => Mode::Blocking("the default".into()),
        Ok("blocking") => Mode::Blocking(format!("{ENV}=blocking")),
        Ok("uring") => match IoUring::new(4) {
            Ok(_) => Mode::Uring,
            Err(e) => Mode::Blocking(format!("{ENV}=uring, but io_uring is refused: {e}")),
        },
        Ok(other) => Mode::Invalid(format!(
            "{ENV}={other} is not a wire I/O mode: use blocking (the default) or uring"
        )),
    })
}

/// How the wire clients' plain sockets are driven in this process, for `host.json`:
/// `io_uring`, or `blocking (why)`.
pub fn describe() -> String {
    match mode() {
        Mode::Uring => "io_uring".into(),
        Mode::Blocking(why) | Mode::Invalid(why) => format!("blocking ({why})"),
    }
}

/// How a round trip ended.
#[derive(Debug)]
pub enum Trip {
    /// Everything was sent and this many bytes were read (0: the server closed).
    Read(usize),
    /// Everything was sent; the read did not happen (interrupted): read as usual.
    Sent,
    /// Not everything was sent and nothing was read: write the rest (still queued), then read.
    Short,
    /// The answer did not start within the timeout.
    TimedOut,
    /// The send failed.
    SendFailed(io::Error),
    /// The receive failed.
    RecvFailed(io::Error),
}

/// A connection's ring and the bytes queued for its next round trip.
pub struct Ring {
    ring: IoUring,
    queued: Vec<u8>,
}

impl Ring {
    /// A ring for one connection, or `None` when the process blocks (or this ring could not be
    /// created: that connection blocks); the error when the switch names no mode.
    pub fn new() -> Result<Option<Ring>, String> {
        match mode() {
            Mode::Uring => Ok(Ring::create().ok()),
            Mode::Blocking(_) => Ok(None),
            Mode::Invalid(m) => Err(m.clone()),
        }
    }

    /// A ring whatever the switch says (the kernel may still refuse it).
    pub fn create() -> io::Result<Ring> {
        let ring = IoUring::builder()
            .setup_coop_taskrun()
            .build(4)
            .or_else(|_| IoUring::new(4))?;
        Ok(Ring {
            ring,
            queued: Vec::with_capacity(256),
        })
    }

    /// Bytes waiting for the next round trip.
    pub fn queued(&self) -> &[u8] {
        &self.queued
    }

    /// Queues `data` for the next round trip; `false` (nothing queued) when it would make the
    /// queue larger than [`MAX_QUEUED`]: the caller writes the queue and `data` itself.
    pub fn queue(&mut self, data: &[u8]) -> bool {
        if self.queued.len() + data.len() > MAX_QUEUED {
            return false;
        }
        self.queued.extend_from_slice(data);
        true
    }

    /// Forgets the queued bytes (after the caller wrote them).
    pub fn clear(&mut self) {
        self.queued.clear();
        if self.queued.capacity() > MAX_QUEUED {
            self.queued = Vec::with_capacity(256);
        }
    }

    /// Sends the queued bytes on `fd` and reads the start of the answer into `buf` in one
    /// kernel entry; the read waits at most `timeout`. The queue is empty afterwards except
    /// for [`Trip::Short`], where the unsent rest stays queued.
    pub fn round_trip(&mut self, fd: RawFd, buf: &mut [u8], timeout: Option<Duration>) -> Trip {
        let len = u32::try_from(self.queued.len()).unwrap_or(u32::MAX);
        let ts = timeout.map(|t| types::Timespec::from(t.max(Duration::from_micros(1))));
        let send = opcode::Send::new(types::Fd(fd), self.queued.as_ptr(), len)
            .flags(libc::MSG_NOSIGNAL | libc::MSG_WAITALL)
            .build()
            .flags(squeue::Flags::IO_LINK)
            .user_data(SEND);
        let recv_len = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        let mut recv = opcode::Recv::new(types::Fd(fd), buf.as_mut_ptr(), recv_len)
            .build()
            .user_data(RECV);
        let mut want = 2;
        // SAFETY: the entries point into `self.queued`, `buf` and `ts`, all alive and untouched
        // until every submitted request has completed (`reap` waits for all of them).
        let pushed = unsafe {
            let mut sq = self.ring.submission();
            match &ts {
                Some(ts) => {
                    recv = recv.flags(squeue::Flags::IO_LINK);
                    let timer = opcode::LinkTimeout::new(ts).build().user_data(TIMER);
                    want = 3;
                    sq.push_multiple(&[send, recv, timer])
                }
                None => sq.push_multiple(&[send, recv]),
            }
        };
        if pushed.is_err() {
            // No room in the submission queue (never expected: every round trip reaps what it
            // submitted): nothing was sent, the caller writes and reads as usual.
            return Trip::Short;
        }
        let (sent, got, timer) = self.reap(want);
        let sent = match sent {
            Ok(n) => n,
            Err(e) => return Trip::SendFailed(e),
        };
        if sent < self.queued.len() {
            self.queued.drain(..sent);
            return Trip::Short;
        }
        self.clear();
        match got {
            Ok(n) => Trip::Read(n),
            Err(e) if e.raw_os_error() == Some(libc::ECANCELED) => {
                if timer.is_some_and(|t| t == -libc::ETIME) {
                    Trip::TimedOut
                } else {
                    Trip::Sent
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                ) =>
            {
                Trip::Sent
            }
            Err(e) => Trip::RecvFailed(e),
        }
    }

    /// Waits until all `want` requests have completed: (send, receive, timer result).
    fn reap(&mut self, want: usize) -> (io::Result<usize>, io::Result<usize>, Option<i32>) {
        let mut sent = Err(io::Error::other("the send did not complete"));
        let mut got = Err(io::Error::from_raw_os_error(libc::ECANCELED));
        let mut timer = None;
        let mut seen = 0;
        let mut submitted = false;
        let mut failures = 0u32;
        while seen < want {
            let wait = if submitted {
                self.ring.submitter().submit_and_wait(1)
            } else {
                self.ring.submit_and_wait(want)
            };
            match wait {
                Ok(_) => submitted = true,
                // A signal or a full completion queue: the requests stay in flight (or still
                // queued, for a failed submit); wait again.
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
                    ) => {}
                // Anything else (ENOMEM…) leaves the requests queued or in flight, pointing
                // into the caller's buffers: wait again, a while, rather than return.
                Err(e) => {
                    failures += 1;
                    if failures > 10_000 {
                        eprintln!("[sbsuite] io_uring wait failed 10,000 times: {e}; aborting");
                        std::process::abort();
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            for cqe in self.ring.completion() {
                seen += 1;
                let res = cqe.result();
                let r = if res < 0 {
                    Err(io::Error::from_raw_os_error(-res))
                } else {
                    Ok(res as usize)
                };
                match cqe.user_data() {
                    SEND => sent = r,
                    RECV => got = r,
                    _ => timer = Some(res),
                }
            }
        }
        (sent, got, timer)
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;
    use std::time::{Duration, Instant};

    use super::{MAX_QUEUED, Ring, Trip};

    /// A ring, or `None` (said) where this kernel refuses io_uring.
    fn ring() -> Option<Ring> {
        match Ring::create() {
            Ok(r) => Some(r),
            Err(e) => {
                crate::db::skip::skip(&format!("this kernel refuses io_uring: {e}"));
                None
            }
        }
    }

    #[test]
    fn a_command_and_the_start_of_its_answer_in_one_round_trip() {
        let Some(mut ring) = ring() else { return };
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        let server = std::thread::spawn(move || {
            let mut got = [0u8; 9];
            theirs.read_exact(&mut got).unwrap();
            theirs.write_all(b"answer").unwrap();
            got
        });
        assert!(ring.queue(b"one;"));
        assert!(ring.queue(b"two;"));
        assert!(ring.queue(b"!"));
        let mut buf = [0u8; 64];
        let n = match ring.round_trip(ours.as_raw_fd(), &mut buf, Some(Duration::from_secs(10))) {
            Trip::Read(n) => n,
            other => panic!("{other:?}"),
        };
        assert_eq!(&buf[..n], b"answer");
        assert_eq!(
            &server.join().unwrap(),
            b"one;two;!",
            "the queued commands, in order"
        );
        assert!(ring.queued().is_empty());
    }

    #[test]
    fn no_answer_within_the_timeout_is_a_timeout_after_the_command_was_sent() {
        let Some(mut ring) = ring() else { return };
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        assert!(ring.queue(b"SELECT SLEEP(60)"));
        let mut buf = [0u8; 64];
        let start = Instant::now();
        let trip = ring.round_trip(ours.as_raw_fd(), &mut buf, Some(Duration::from_millis(100)));
        assert!(matches!(trip, Trip::TimedOut), "{trip:?}");
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        let mut got = [0u8; 16];
        theirs.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"SELECT SLEEP(60)");
    }

    #[test]
    fn a_closed_peer_reads_zero_bytes() {
        let Some(mut ring) = ring() else { return };
        let (ours, theirs) = UnixStream::pair().unwrap();
        let server = std::thread::spawn(move || {
            let mut theirs = theirs;
            let mut got = [0u8; 4];
            theirs.read_exact(&mut got).unwrap();
            drop(theirs);
        });
        assert!(ring.queue(b"QUIT"));
        let mut buf = [0u8; 64];
        let trip = ring.round_trip(ours.as_raw_fd(), &mut buf, None);
        assert!(matches!(trip, Trip::Read(0)), "{trip:?}");
        server.join().unwrap();
    }

    /// A stop shuts the socket down from another thread (`db::interrupt`): a round trip
    /// waiting for an answer that never comes returns at once.
    #[test]
    fn a_socket_shut_down_by_a_stop_ends_the_wait() {
        let Some(mut ring) = ring() else { return };
        let (ours, _theirs) = UnixStream::pair().unwrap();
        let severer = ours.try_clone().unwrap();
        let stop = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            severer.shutdown(std::net::Shutdown::Both).unwrap();
        });
        assert!(ring.queue(b"SELECT 1"));
        let mut buf = [0u8; 64];
        let start = Instant::now();
        let trip = ring.round_trip(ours.as_raw_fd(), &mut buf, None);
        assert!(matches!(trip, Trip::Read(0)), "{trip:?}");
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        stop.join().unwrap();
    }

    #[test]
    fn a_failed_send_is_reported_and_nothing_is_read() {
        let Some(mut ring) = ring() else { return };
        let (ours, theirs) = UnixStream::pair().unwrap();
        drop(theirs);
        assert!(ring.queue(b"SELECT 1"));
        let mut buf = [0u8; 64];
        let trip = ring.round_trip(ours.as_raw_fd(), &mut buf, Some(Duration::from_secs(5)));
        match trip {
            Trip::SendFailed(e) => assert_eq!(e.raw_os_error(), Some(libc::EPIPE), "{e}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_large_command_is_not_queued() {
        let Some(mut ring) = ring() else { return };
        assert!(ring.queue(&vec![b'x'; MAX_QUEUED - 1]));
        assert!(!ring.queue(b"yy"), "over the bound");
        assert_eq!(
            ring.queued().len(),
            MAX_QUEUED - 1,
            "nothing of it was queued"
        );
    }
}
