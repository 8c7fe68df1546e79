//! Interrupting blocking calls outside the timed run: the process-wide registry that a stop
//! request (the first Ctrl-C/SIGTERM) uses to wake whatever the runner is blocked in.
//!
//! Why it exists: the engines poll a stop flag between events, but a setup query, a prepare's
//! `INSERT`/`CREATE INDEX`, a hook or a restart command can block for as long as the server
//! (or the command) likes, and a flag is never looked at while a thread sits in `read(2)`. So
//! each blocking thing registers how to break it ([`Interrupter`]: shut a socket down, kill a
//! process group), and the signal's watcher thread calls [`interrupt_all`]: the blocked call
//! returns at once with an error, which the runner records as `interrupted` because the stop
//! flag is set.
//!
//! Shape, and why:
//! - **Registration is per connection, never per query**: a connection opened for setup work
//!   ([`crate::db::Connector::connect_at`]) is wrapped in [`Guarded`], which registers once
//!   when it opens and unregisters when it closes; each call forwards to the driver's
//!   connection. Worker connections of the timed run ([`crate::db::Connector::connect`]) are
//!   not registered: the hot path stays free of it, the workers watch the stop flag between
//!   events, and a worker stuck in an event is the driver's `forced_shutdown` business.
//! - **A socket is shut down through its own duplicate** (`try_clone`, a second descriptor of
//!   the same socket): `shutdown(2)` acts on the socket, not on one descriptor, so the
//!   connection's blocked read returns at once, and the registry never acts on a descriptor
//!   number that may have been reused. The duplicate is dropped when the connection closes.
//! - **Tripped until re-armed**: [`interrupt_all`] marks the registry tripped, and whatever
//!   registers while it is tripped is interrupted at once, so a query that starts just after
//!   the signal (the next statement of a prepare, a hook) cannot slip through. The runner
//!   calls [`rearm`] when it turns to the work that must run after a stop (cleanups, restores,
//!   after-hooks), whose connections and commands then work normally; a second signal is the
//!   user's escape hatch from those.
//! - **Shielded work** ([`shielded`]): a cleanup or a restore must not be broken by the first
//!   signal (it is what the graceful stop still owes), so what registers inside it is left
//!   alone by [`interrupt_all`]; only the second signal ends it, by ending the process.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

pub use crate::db::conn::Interrupter;
use crate::db::conn::{Connection, DataRow, Done, P, SqlError, StmtId};

/// Shuts `stream`'s socket down for reading and writing (a blocked read returns 0 or an
/// error at once), through a duplicate of its descriptor; `None` if it cannot be duplicated.
pub fn stream_interrupter(stream: &crate::db::io::Stream) -> Option<Interrupter> {
    use crate::db::io::Stream;
    use std::net::Shutdown;
    match stream {
        Stream::Tcp(s) => {
            let s = s.try_clone().ok()?;
            Some(Interrupter::new(move || {
                let _ = s.shutdown(Shutdown::Both);
            }))
        }
        Stream::Tls(s) => {
            let s = s.sock.try_clone().ok()?;
            Some(Interrupter::new(move || {
                let _ = s.shutdown(Shutdown::Both);
            }))
        }
        Stream::Unix(s) => {
            let s = s.try_clone().ok()?;
            Some(Interrupter::new(move || {
                let _ = s.shutdown(Shutdown::Both);
            }))
        }
    }
}

#[derive(Default)]
struct Registry {
    next: u64,
    /// Each registered interrupter, and whether it was registered inside [`shielded`] work.
    live: HashMap<u64, (Interrupter, bool)>,
    tripped: bool,
}

/// How many [`shielded`] scopes are open (process-wide: a cleanup's helper threads count too).
static SHIELD: AtomicUsize = AtomicUsize::new(0);

/// Runs `f` shielded: what registers during it is not broken by [`interrupt_all`].
pub fn shielded<T>(f: impl FnOnce() -> T) -> T {
    struct Open;
    impl Drop for Open {
        fn drop(&mut self) {
            SHIELD.fetch_sub(1, Ordering::SeqCst);
        }
    }
    SHIELD.fetch_add(1, Ordering::SeqCst);
    let _open = Open;
    f()
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

fn with<T>(f: impl FnOnce(&mut Registry) -> T) -> T {
    // A poisoned lock only means an interrupter panicked; the map itself is intact.
    let mut guard = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(Registry::default))
}

/// Keeps an [`Interrupter`] registered; dropping it unregisters (and drops the interrupter,
/// closing a duplicated socket).
#[derive(Debug)]
pub struct Registration(u64);

impl Drop for Registration {
    fn drop(&mut self) {
        let gone = with(|r| r.live.remove(&self.0));
        drop(gone);
    }
}

/// Registers `i` until the returned guard drops. While the registry is tripped, `i` is also
/// called at once: the operation it guards fails instead of starting.
pub fn register(i: Interrupter) -> Registration {
    let shielded = SHIELD.load(Ordering::SeqCst) > 0;
    with(|r| {
        if r.tripped && !shielded {
            i.interrupt();
        }
        let id = r.next;
        r.next += 1;
        r.live.insert(id, (i, shielded));
        Registration(id)
    })
}

/// Breaks every registered operation and trips the registry (see the module comment).
pub fn interrupt_all() {
    with(|r| {
        r.tripped = true;
        for (i, shielded) in r.live.values() {
            if !shielded {
                i.interrupt();
            }
        }
    });
}

/// Whether a stop request has interrupted blocking calls and the runner has not re-armed yet.
pub fn tripped() -> bool {
    with(|r| r.tripped)
}

/// Whether a loop that waits (a restart's readiness poll) should give up now: the registry is
/// tripped and the loop is not part of [`shielded`] work (a restore).
pub fn breaking() -> bool {
    SHIELD.load(Ordering::SeqCst) == 0 && tripped()
}

/// Ends the tripped state: operations registered from now on work normally. The runner calls
/// it before the work a stop does not skip (cleanups, restores, after-hooks) and before a run.
pub fn rearm() {
    with(|r| r.tripped = false);
}

/// A setup connection registered for interruption while it is open.
pub struct Guarded {
    inner: Box<dyn Connection>,
    _registration: Option<Registration>,
}

/// Wraps `conn` so that [`interrupt_all`] can break its blocked calls (when its driver can say
/// how: [`Connection::interrupter`]).
pub fn guarded(conn: Box<dyn Connection>) -> Box<dyn Connection> {
    match conn.interrupter() {
        Some(i) => Box::new(Guarded {
            inner: conn,
            _registration: Some(register(i)),
        }),
        None => conn,
    }
}

impl Connection for Guarded {
    fn prepare(&mut self, sql: &str) -> Result<StmtId, SqlError> {
        self.inner.prepare(sql)
    }

    fn execute(&mut self, stmt: StmtId, params: &[P<'_>]) -> Result<Done, SqlError> {
        self.inner.execute(stmt, params)
    }

    fn query(&mut self, sql: &str) -> Result<Done, SqlError> {
        self.inner.query(sql)
    }

    fn query_i64(&mut self, sql: &str) -> Result<Option<i64>, SqlError> {
        self.inner.query_i64(sql)
    }

    fn load(
        &mut self,
        table: &str,
        with_id: bool,
        fill: &mut dyn FnMut(&mut DataRow) -> bool,
    ) -> Result<(), SqlError> {
        self.inner.load(table, with_id, fill)
    }

    fn load_rows(
        &mut self,
        table: &str,
        columns: &[String],
        fill: &mut dyn FnMut(&mut [crate::db::Cell]) -> bool,
    ) -> Result<u64, SqlError> {
        self.inner.load_rows(table, columns, fill)
    }

    fn execute_fetch(
        &mut self,
        stmt: StmtId,
        params: &[P<'_>],
        first: bool,
        out: &mut crate::db::Fetched,
    ) -> Result<Done, SqlError> {
        self.inner.execute_fetch(stmt, params, first, out)
    }

    fn query_fetch(
        &mut self,
        sql: &str,
        first: bool,
        out: &mut crate::db::Fetched,
    ) -> Result<Done, SqlError> {
        self.inner.query_fetch(sql, first, out)
    }

    fn query_rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, SqlError> {
        self.inner.query_rows(sql)
    }

    fn query_table(&mut self, sql: &str) -> Result<crate::db::conn::Table, SqlError> {
        self.inner.query_table(sql)
    }

    fn query_each(
        &mut self,
        sql: &str,
        sink: &mut dyn crate::db::conn::RowSink,
    ) -> Result<Done, SqlError> {
        self.inner.query_each(sql, sink)
    }

    fn interrupter(&self) -> Option<Interrupter> {
        self.inner.interrupter()
    }

    fn close(self: Box<Self>) {
        let Guarded {
            inner,
            _registration,
        } = *self;
        drop(_registration);
        inner.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The registry is process-wide: tests that trip it must not overlap.
    static SERIAL: Mutex<()> = Mutex::new(());

    #[test]
    fn a_blocked_read_returns_when_interrupted_and_later_registrations_fail_until_rearmed() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        rearm();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let client = TcpStream::connect(addr).unwrap();
        let (_server_side, _) = listener.accept().unwrap();
        let stream = crate::db::io::Stream::Tcp(client.try_clone().unwrap());
        let registration = register(stream_interrupter(&stream).unwrap());
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 16];
            (&client).read(&mut buf)
        });
        // The reader blocks: the server side never writes. Interrupting must wake it.
        interrupt_all();
        let read = reader.join().unwrap();
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
        assert!(tripped());

        // Registered while tripped: interrupted at once.
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = calls.clone();
        let late = register(Interrupter::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        }));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        drop(late);

        // Re-armed: a new registration is left alone, and dropping unregisters.
        rearm();
        let counter = calls.clone();
        let fresh = register(Interrupter::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        }));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        drop(fresh);

        // Shielded: neither a trip nor a registration while tripped breaks it.
        let counter = calls.clone();
        let shielded_one = shielded(|| {
            register(Interrupter::new(move || {
                counter.fetch_add(1, Ordering::SeqCst);
            }))
        });
        interrupt_all();
        let counter = calls.clone();
        let shielded_late = shielded(|| {
            register(Interrupter::new(move || {
                counter.fetch_add(1, Ordering::SeqCst);
            }))
        });
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        drop((shielded_one, shielded_late));
        rearm();
        drop(registration);
        interrupt_all();
        assert_eq!(calls.load(Ordering::SeqCst), 1, "unregistered: not called");
        rearm();
        assert!(!tripped());
    }
}
