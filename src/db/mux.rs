//! Several connections on one thread (`client_threads`, #32): each worker is a stackful
//! coroutine on a *carrier* thread, and a wire socket that would block suspends its coroutine
//! instead of the thread. The carrier resumes whatever is ready and, when nothing is, waits for
//! every one of its sockets at once in one `epoll_wait`.
//!
//! Why this shape: on a virtual machine most of a round trip's client cost is the kernel
//! putting a thread to sleep in `recv` and waking it again, once per statement per
//! connection. A carrier sleeps only when all of its connections wait, and one wake serves
//! every connection whose answer came meanwhile (pgbench's `-j` threads do the same with
//! `ppoll`). Stackful coroutines keep the workloads, the protocol clients and rustls exactly as
//! they are: the only code that knows is [`crate::db::io::Reader`]'s socket I/O, the driver's
//! waits and the few sleeps of a worker ([`sleep`]).
//!
//! The rules that keep it correct:
//! * Sockets are registered edge-triggered for reading and writing once ([`register`]), after
//!   the handshake, and switched to non-blocking. A coroutine always tries its system call
//!   first and waits only on `EAGAIN` ([`wait`]); the one exception is the first read after a
//!   command was sent, whose answer cannot be there yet: an edge for it can only come after
//!   the send, and no `epoll_wait` runs between the send and the wait (one thread). A wake is
//!   only a hint: the caller retries its call, so a stale or spurious event costs one call.
//! * Every wait may carry a deadline (a command's `query_timeout`); the carrier's
//!   `epoll_wait` sleeps no longer than the nearest one.
//! * Nothing else on a carrier may block: a coroutine that blocked its thread would stall its
//!   siblings, and one holding a row lock another one waits for would deadlock them until a
//!   lock timeout. So only sbsuite's own wire clients run here (the library clients block on
//!   a runtime of their own and are refused, see [`active`]), and the driver's and the
//!   sessions' pauses go through [`sleep`]. Connecting (and a TLS handshake) still blocks the
//!   carrier: a few hundred microseconds on a reachable server, at most `connect_timeout` on
//!   one that is not.
//! * A panic in a worker ends that coroutine only: the carrier catches it at the resume and
//!   reports it as that worker's result.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

/// What a wait is for (a wait outside a carrier polls the socket for it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Interest {
    Read,
    Write,
}

/// How a coroutine's last wait ended.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Woken {
    /// Still waiting.
    No,
    /// Its socket had an event (or it only yielded).
    Event,
    /// Its deadline passed first.
    Timer,
}

/// One coroutine's wait.
struct Task {
    yielder: Cell<*const Yielder<(), ()>>,
    woken: Cell<Woken>,
    /// The socket it waits on (-1: none).
    fd: Cell<RawFd>,
    /// When its wait ends without an event.
    until: Cell<Option<Instant>>,
}

/// A carrier's doorbell: an eventfd on its epoll that any thread may ring to wake the
/// coroutines waiting in [`wait_bell`] (the `rate` generator, for workers waiting for an
/// arrival). A ring is a hint, as every wake: the woken look for their work and wait again.
pub struct Bell {
    fd: OwnedFd,
    /// The carrier's coroutines between announcing a wait and its end (the ringer skips a
    /// bell nobody waits at).
    pub sleepers: AtomicUsize,
}

impl Bell {
    fn new() -> io::Result<Bell> {
        // SAFETY: plain system call; the descriptor is owned from here on.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Bell {
            // SAFETY: a fresh descriptor nothing else owns.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            sleepers: AtomicUsize::new(0),
        })
    }

    /// Wakes the carrier's coroutines waiting at the bell (one `write`).
    pub fn ring(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64 to an eventfd; a full counter (never, at
        // one ring per arrival) would only fail the write, and the carrier is awake anyway.
        unsafe {
            libc::write(
                self.fd.as_raw_fd(),
                (&raw const one).cast::<libc::c_void>(),
                8,
            )
        };
    }

    /// Resets the counter (the carrier, after the ring woke it).
    fn drain(&self) {
        let mut n: u64 = 0;
        // SAFETY: reads 8 bytes into a valid u64; EAGAIN (nothing rung) is fine.
        unsafe { libc::read(self.fd.as_raw_fd(), (&raw mut n).cast::<libc::c_void>(), 8) };
    }
}

/// One carrier thread's scheduler: its epoll instance, its coroutines' waits and the queue of
/// the ones to resume.
struct Carrier {
    epoll: OwnedFd,
    tasks: Box<[Task]>,
    /// The coroutine waiting on each descriptor (`usize::MAX`: none), indexed by descriptor.
    waiting: RefCell<Vec<usize>>,
    ready: RefCell<VecDeque<usize>>,
    bell: Arc<Bell>,
    /// Coroutines waiting at the bell (possibly some that stopped waiting: a wake of a
    /// coroutine that waits for something else is only spurious).
    at_bell: RefCell<Vec<usize>>,
}

const NONE: usize = usize::MAX;

/// The epoll token of the carrier's bell (descriptors are the other tokens).
const BELL: u64 = u64::MAX;

thread_local! {
    /// The carrier of this thread and the coroutine it is running, while it runs one.
    static CURRENT: Cell<Option<(*const Carrier, usize)>> = const { Cell::new(None) };
}

/// The carrier and coroutine this code runs in, if it runs in one.
fn current() -> Option<(&'static Carrier, usize)> {
    // SAFETY: `CURRENT` is set only by `run` around a resume, to a carrier that outlives the
    // resume; it is read here only from inside that resume (this thread, the coroutine).
    CURRENT.with(Cell::get).map(|(c, i)| (unsafe { &*c }, i))
}

/// Whether this code runs as a coroutine on a carrier: its sockets must never block.
pub fn active() -> bool {
    CURRENT.with(Cell::get).is_some()
}

impl Carrier {
    fn new(n: usize) -> io::Result<Carrier> {
        // SAFETY: plain system call; the descriptor is owned from here on.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor nothing else owns.
        let epoll = unsafe { OwnedFd::from_raw_fd(fd) };
        let bell = Arc::new(Bell::new()?);
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLET) as u32,
            u64: BELL,
        };
        // SAFETY: both descriptors are open; `ev` is a valid event.
        let added = unsafe {
            libc::epoll_ctl(
                epoll.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                bell.fd.as_raw_fd(),
                &mut ev,
            )
        };
        if added < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Carrier {
            epoll,
            bell,
            at_bell: RefCell::new(Vec::new()),
            tasks: (0..n)
                .map(|_| Task {
                    yielder: Cell::new(std::ptr::null()),
                    woken: Cell::new(Woken::No),
                    fd: Cell::new(-1),
                    until: Cell::new(None),
                })
                .collect(),
            waiting: RefCell::new(Vec::new()),
            ready: RefCell::new(VecDeque::with_capacity(n)),
        })
    }

    fn wake(&self, i: usize, how: Woken) {
        let t = &self.tasks[i];
        if t.woken.get() != Woken::No {
            return;
        }
        t.woken.set(how);
        t.until.set(None);
        let fd = t.fd.replace(-1);
        if fd >= 0
            && let Some(w) = self.waiting.borrow_mut().get_mut(fd as usize)
            && *w == i
        {
            *w = NONE;
        }
        self.ready.borrow_mut().push_back(i);
    }

    /// Suspends coroutine `i` until `fd` has an event (`fd` < 0: none), `until` passes, or
    /// (neither) it is resumed at once after the others ready now.
    fn suspend(&self, i: usize, fd: RawFd, until: Option<Instant>) -> Woken {
        let t = &self.tasks[i];
        t.woken.set(Woken::No);
        t.until.set(until);
        t.fd.set(fd);
        if fd >= 0 {
            let mut w = self.waiting.borrow_mut();
            let at = fd as usize;
            if w.len() <= at {
                w.resize(at + 1, NONE);
            }
            w[at] = i;
        } else if until.is_none() {
            self.wake(i, Woken::Event);
        }
        let y = t.yielder.get();
        // SAFETY: set by the coroutine's own body before it could get here, and valid for as
        // long as the coroutine lives (corosensei's yielder lives on its stack).
        unsafe { &*y }.suspend(());
        t.woken.get()
    }

    /// The nearest deadline of a waiting coroutine (`None`: none waits with one).
    fn nearest(&self) -> Option<Instant> {
        self.tasks.iter().filter_map(|t| t.until.get()).min()
    }

    /// Waits for socket events (until the nearest deadline) and readies what they and the
    /// deadlines passed free.
    fn poll(&self, events: &mut [libc::epoll_event]) -> io::Result<()> {
        let nearest = self.nearest();
        let timeout = nearest.map_or(-1, millis_until);
        // SAFETY: `events` is a valid buffer of its length.
        let n = unsafe {
            libc::epoll_wait(
                self.epoll.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as i32,
                timeout,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        for ev in &events[..n.max(0) as usize] {
            if ev.u64 == BELL {
                self.bell.drain();
                let waiting = std::mem::take(&mut *self.at_bell.borrow_mut());
                for i in waiting {
                    self.wake(i, Woken::Event);
                }
                continue;
            }
            let fd = ev.u64 as usize;
            let i = self.waiting.borrow().get(fd).copied().unwrap_or(NONE);
            if i != NONE {
                self.wake(i, Woken::Event);
            }
        }
        // Only when the wait ended by the nearest deadline (or it was due already): most wakes
        // are sockets' alone, and a deadline that passed during a wait that sockets ended is
        // due at the next wait, which then waits 0 ms and comes here.
        let Some(nearest) = nearest else {
            return Ok(());
        };
        if n > 0 && timeout > 0 {
            return Ok(());
        }
        let now = Instant::now();
        if nearest <= now {
            for i in 0..self.tasks.len() {
                if self.tasks[i].until.get().is_some_and(|at| at <= now) {
                    self.wake(i, Woken::Timer);
                }
            }
        }
        Ok(())
    }
}

/// The milliseconds until `at` for `epoll_wait` and `poll`, rounded up (waking before the
/// deadline would only wait again), 0 once it passed.
fn millis_until(at: Instant) -> i32 {
    let left = at.saturating_duration_since(Instant::now());
    i32::try_from(left.as_nanos().div_ceil(1_000_000)).unwrap_or(i32::MAX)
}

/// Registers a connected socket with this thread's carrier, edge-triggered for reading and
/// writing, and makes it non-blocking. Outside a carrier, nothing happens (`Ok(false)`).
pub fn register(fd: RawFd) -> io::Result<bool> {
    let Some((c, _)) = current() else {
        return Ok(false);
    };
    let mut ev = libc::epoll_event {
        events: (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32,
        u64: fd as u64,
    };
    // SAFETY: both descriptors are open; `ev` is a valid event.
    if unsafe { libc::epoll_ctl(c.epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is an open socket; only its status flags change.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(true)
}

/// Takes a socket off this thread's carrier before it closes (a duplicate of it, kept to shut
/// it down from outside, would keep its registration alive). Outside a carrier: nothing.
pub fn deregister(fd: RawFd) {
    if let Some((c, _)) = current() {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: plain system call; an error (not registered) changes nothing.
        unsafe { libc::epoll_ctl(c.epoll.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, &mut ev) };
        if let Some(w) = c.waiting.borrow_mut().get_mut(fd as usize) {
            *w = NONE;
        }
    }
}

/// Waits until `fd` may be ready for `interest` or `until` passes (then `TimedOut`). On a
/// carrier the coroutine is suspended; elsewhere the thread polls the socket. A return is a
/// hint, not a promise: retry the call, wait again on `EAGAIN`.
pub fn wait(fd: RawFd, interest: Interest, until: Option<Instant>) -> io::Result<()> {
    let timed_out = || {
        io::Error::new(
            io::ErrorKind::TimedOut,
            "no answer within the command's timeout",
        )
    };
    // A deadline already passed needs no look of its own: the carrier's `epoll_wait` (or
    // `poll`) then waits 0 ms and the deadline ends the wait.
    match current() {
        Some((c, i)) => match c.suspend(i, fd, until) {
            Woken::Timer => Err(timed_out()),
            _ => Ok(()),
        },
        None => {
            let mut p = libc::pollfd {
                fd,
                events: match interest {
                    Interest::Read => libc::POLLIN,
                    Interest::Write => libc::POLLOUT,
                },
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            match unsafe { libc::poll(&mut p, 1, until.map_or(-1, millis_until)) } {
                0 => Err(timed_out()),
                n if n < 0 => {
                    let e = io::Error::last_os_error();
                    if e.kind() == io::ErrorKind::Interrupted {
                        Ok(())
                    } else {
                        Err(e)
                    }
                }
                _ => Ok(()),
            }
        }
    }
}

/// This thread's carrier's bell (`None`: not on a carrier).
pub fn bell() -> Option<Arc<Bell>> {
    current().map(|(c, _)| Arc::clone(&c.bell))
}

/// Suspends this coroutine until its carrier's bell rings or `until` passes (then `false`).
/// Announce the wait in [`Bell::sleepers`] first and look for the work once more after it, so
/// that a ring cannot fall between the look and the wait. Outside a carrier: sleeps until
/// `until`.
pub fn wait_bell(until: Instant) -> bool {
    match current() {
        Some((c, i)) => {
            c.at_bell.borrow_mut().push(i);
            c.suspend(i, -1, Some(until)) != Woken::Timer
        }
        None => {
            std::thread::sleep(until.saturating_duration_since(Instant::now()));
            false
        }
    }
}

/// Sleeps `d`: on a carrier only this coroutine (the others run meanwhile), elsewhere the
/// thread.
pub fn sleep(d: Duration) {
    match current() {
        Some((c, i)) => {
            let until = Instant::now() + d;
            while c.suspend(i, -1, Some(until)) != Woken::Timer {}
        }
        None => std::thread::sleep(d),
    }
}

/// A coroutine's work: borrowed data allowed (see [`run`]).
pub type Body<'a, R> = Box<dyn FnOnce() -> R + 'a>;

/// Runs `bodies` as coroutines on this thread, each on a stack of `stack` bytes, until every
/// one has returned; their results in order (`Err`: it panicked, with the panic's payload).
/// The error: the carrier could not be set up (no epoll, no memory for a stack), before any
/// body ran.
pub fn run<'a, R: 'a>(
    bodies: Vec<Body<'a, R>>,
    stack: usize,
) -> io::Result<Vec<std::thread::Result<R>>> {
    let carrier = Carrier::new(bodies.len())?;
    let mut coroutines = Vec::with_capacity(bodies.len());
    for (i, body) in bodies.into_iter().enumerate() {
        let task: *const Task = &carrier.tasks[i];
        let stack = DefaultStack::new(stack)?;
        // SAFETY: the coroutine borrows `body`'s data (lifetime 'a) and `carrier`; it is run to
        // its end (or dropped, unwinding it) before this function returns, while both live.
        let co = unsafe {
            Coroutine::<(), (), R, DefaultStack>::with_stack_unchecked(stack, move |y, ()| {
                (*task).yielder.set(y);
                body()
            })
        };
        coroutines.push(co);
    }
    let mut results: Vec<Option<std::thread::Result<R>>> =
        (0..coroutines.len()).map(|_| None).collect();
    let mut left = coroutines.len();
    carrier.ready.borrow_mut().extend(0..coroutines.len());
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 64];
    let me: *const Carrier = &carrier;
    while left > 0 {
        loop {
            let Some(i) = carrier.ready.borrow_mut().pop_front() else {
                break;
            };
            if results[i].is_some() {
                continue;
            }
            CURRENT.with(|c| c.set(Some((me, i))));
            let r = catch_unwind(AssertUnwindSafe(|| coroutines[i].resume(())));
            CURRENT.with(|c| c.set(None));
            match r {
                Ok(CoroutineResult::Yield(())) => {}
                Ok(CoroutineResult::Return(v)) => {
                    results[i] = Some(Ok(v));
                    left -= 1;
                }
                Err(panic) => {
                    results[i] = Some(Err(panic));
                    left -= 1;
                }
            }
        }
        if left > 0 {
            carrier.poll(&mut events)?;
        }
    }
    Ok(results
        .into_iter()
        .map(|r| r.expect("every coroutine ended"))
        .collect())
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;

    use super::*;

    fn read_some(s: &mut UnixStream, buf: &mut [u8], until: Option<Instant>) -> io::Result<usize> {
        loop {
            match s.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    wait(s.as_raw_fd(), Interest::Read, until)?;
                }
                r => return r,
            }
        }
    }

    /// Eight coroutines on one thread each wait for their own socket: the peer reads all eight
    /// commands before it answers any, so each can only finish if the others ran while it
    /// waited (a wait that blocked the thread would time out).
    #[test]
    fn waiting_coroutines_share_one_thread() {
        let pairs: Vec<(UnixStream, UnixStream)> =
            (0..8).map(|_| UnixStream::pair().unwrap()).collect();
        let (ours, mut theirs): (Vec<_>, Vec<_>) = pairs.into_iter().unzip();
        let peer = std::thread::spawn(move || {
            let mut got = vec![];
            for s in theirs.iter_mut() {
                let mut b = [0u8; 1];
                s.read_exact(&mut b).unwrap();
                got.push(b[0]);
            }
            for s in theirs.iter_mut().rev() {
                s.write_all(b"ok").unwrap();
            }
            got
        });
        let order = RefCell::new(vec![]);
        let bodies: Vec<Body<'_, usize>> = ours
            .into_iter()
            .enumerate()
            .map(|(n, mut s)| {
                let order = &order;
                Box::new(move || {
                    assert!(active());
                    register(s.as_raw_fd()).unwrap();
                    s.write_all(&[n as u8]).unwrap();
                    let mut b = [0u8; 8];
                    let until = Some(Instant::now() + Duration::from_secs(10));
                    let got = read_some(&mut s, &mut b, until).unwrap();
                    assert_eq!(&b[..got], b"ok");
                    order.borrow_mut().push(n);
                    deregister(s.as_raw_fd());
                    n
                }) as Body<'_, usize>
            })
            .collect();
        let results = run(bodies, 256 << 10).unwrap();
        let got: Vec<usize> = results.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(got, (0..8).collect::<Vec<_>>());
        assert_eq!(peer.join().unwrap(), (0..8).collect::<Vec<u8>>());
        let mut order = order.into_inner();
        order.sort_unstable();
        assert_eq!(order, (0..8).collect::<Vec<_>>());
        assert!(!active());
    }

    /// A silent peer ends a wait at its deadline; a coroutine sleeps its time while the others
    /// run; a panic ends its own coroutine only.
    #[test]
    fn deadlines_sleeps_and_panics_stay_with_their_coroutine() {
        let (mut a, _b) = UnixStream::pair().unwrap();
        let log = RefCell::new(vec![]);
        let bodies: Vec<Body<'_, &str>> = vec![
            Box::new(|| {
                register(a.as_raw_fd()).unwrap();
                let start = Instant::now();
                let until = Some(start + Duration::from_millis(100));
                let e = read_some(&mut a, &mut [0u8; 4], until).unwrap_err();
                assert_eq!(e.kind(), io::ErrorKind::TimedOut);
                assert!(start.elapsed() >= Duration::from_millis(100));
                log.borrow_mut().push("timed out");
                "a"
            }),
            Box::new(|| {
                let start = Instant::now();
                sleep(Duration::from_millis(20));
                assert!(start.elapsed() >= Duration::from_millis(20));
                log.borrow_mut().push("slept");
                "b"
            }),
            Box::new(|| panic!("worker 2 broke")),
        ];
        let results = run(bodies, 256 << 10).unwrap();
        let mut log = log.into_inner();
        log.sort_unstable();
        assert_eq!(log, ["slept", "timed out"]);
        assert_eq!(results[0].as_ref().unwrap(), &"a");
        assert_eq!(results[1].as_ref().unwrap(), &"b");
        let payload = results[2].as_ref().unwrap_err();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"worker 2 broke"));
    }

    /// Outside a carrier a wait polls the socket: a deadline still ends it.
    #[test]
    fn a_wait_outside_a_carrier_polls() {
        let (a, mut b) = UnixStream::pair().unwrap();
        assert!(!register(a.as_raw_fd()).unwrap());
        let until = Some(Instant::now() + Duration::from_millis(50));
        let e = wait(a.as_raw_fd(), Interest::Read, until).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        b.write_all(b"x").unwrap();
        wait(a.as_raw_fd(), Interest::Read, None).unwrap();
    }
}
