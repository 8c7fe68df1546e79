//! Stopping what is blocked or running: the scopes that a stop request (the first
//! Ctrl-C/SIGTERM, a step's `forced_shutdown`) uses to reach every blocking call, every
//! statement running on a server and every Lua state, wherever they are.
//!
//! Why it exists: the engines poll a flag between events, but a setup query, a prepare's
//! `INSERT`/`CREATE INDEX`, a statement of a worker, a hook or a restart command can block for
//! as long as the server (or the command) likes, and a Lua script can loop without ever
//! calling us. A flag is never looked at while a thread sits in `read(2)` or in a loop of its
//! own, and a client that gives up on a statement leaves it running on the server. So each
//! such thing registers how to stop it, in a [`Scope`]:
//! - **cancel** ([`Parts::cancel`]): stop the work itself, leaving the client usable: a
//!   server-side cancel of the statement in flight (`KILL QUERY` on MySQL/MariaDB/OceanBase,
//!   a cancel request on PostgreSQL, `sqlite3_interrupt`), or the stop hook of a Lua state;
//! - **sever** ([`Parts::sever`]): break the client's blocked call (shut a socket down, kill a
//!   process group), for what a cancel did not end.
//!
//! Two kinds of scope:
//! - **The process-wide one** ([`register`], [`guarded`], [`interrupt_all`]): setup
//!   connections (prepare, checks, cleanup, capture), hook and restart commands, Lua states
//!   running a script's top level or a command. The signal handler's [`interrupt_all`] severs
//!   and cancels everything in it at once. *Tripped until re-armed*: whatever registers while
//!   it is tripped is stopped at once, so a query that starts just after the signal (the next
//!   statement of a prepare, a hook) cannot slip through; the runner calls [`rearm`] before the
//!   work a stop still owes (cleanups, restores, after-hooks). *Shielded work* ([`shielded`]):
//!   what registers inside a cleanup or a restore is left alone by the first signal; only the
//!   second one ends it, by ending the process.
//! - **One per run step** ([`Scope::new`], owned by the driver): the workers' connections
//!   ([`guarded_in`]) and Lua states. [`Scope::stop`] raises the flag the workers poll between
//!   statements and in their waits, and from then on the scope's connections refuse new
//!   statements; [`Scope::cancel`] also cancels, on the server, every statement in flight and
//!   stops every Lua state; [`Scope::sever`] breaks what is still blocked. The driver goes
//!   through them in that order until every worker has left (see `engine::driver`).
//!
//! Shape, and why:
//! - **Registration is per connection, never per query**: a connection registers once when it
//!   opens and unregisters when it closes; its calls only mark it *busy* (two relaxed stores
//!   around each call), so a cancel goes to the statements that are really in flight and the
//!   hot path takes no lock.
//! - **A socket is shut down through its own duplicate** (`try_clone`, a second descriptor of
//!   the same socket): `shutdown(2)` acts on the socket, not on one descriptor, so the
//!   connection's blocked read returns at once, and the registry never acts on a descriptor
//!   number that may have been reused. The duplicate is dropped when the connection closes.
//! - **Cancels run outside the lock, several at a time**: a server-side cancel opens a
//!   connection of its own (bounded by `connect_timeout`), so the scope's lock only collects
//!   them, and a pool of threads sends them: stopping 1,024 stuck workers does not take 1,024
//!   round trips in a row, nor does it hold up a registration. Whatever an interrupter touches
//!   must therefore stay valid after its registration is dropped (a Lua state's pointer is
//!   behind a lock of its own, cleared before the state closes).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

pub use crate::db::conn::Interrupter;
use crate::db::conn::{Connection, DataRow, Done, ErrKind, P, SqlError, StmtId};

/// Most cancels sent at the same time (each opens a connection to the server).
const CANCEL_THREADS: usize = 16;

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

/// How to stop one registered thing (see the module doc); either may be missing.
#[derive(Default)]
pub struct Parts {
    /// Stops the work itself (a server-side cancel, a Lua stop hook).
    pub cancel: Option<Interrupter>,
    /// Breaks the client's blocked call (a socket shutdown, a process group kill).
    pub sever: Option<Interrupter>,
    /// Set while a call is under way: a cancel is sent only then. `None`: always.
    pub busy: Option<Arc<BusyFlag>>,
}

/// Whether a connection has a call under way: written twice per statement by its worker, read
/// by a cancel, alone on its cache lines so that no two workers' flags share one.
#[repr(align(128))]
#[derive(Debug, Default)]
pub struct BusyFlag(AtomicBool);

impl BusyFlag {
    pub fn new(busy: bool) -> BusyFlag {
        BusyFlag(AtomicBool::new(busy))
    }

    #[inline]
    pub fn set(&self, busy: bool) {
        self.0.store(busy, Ordering::Relaxed);
    }

    #[inline]
    pub fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

impl Parts {
    /// Something that is only ever broken (a socket, a process group).
    pub fn sever(i: Interrupter) -> Parts {
        Parts {
            sever: Some(i),
            ..Parts::default()
        }
    }

    /// Something that is only ever cancelled (a Lua state).
    pub fn cancel(i: Interrupter) -> Parts {
        Parts {
            cancel: Some(i),
            ..Parts::default()
        }
    }
}

struct Entry {
    cancel: Option<Arc<Interrupter>>,
    sever: Option<Arc<Interrupter>>,
    busy: Option<Arc<BusyFlag>>,
    /// Registered inside [`shielded`] work (process-wide scope only).
    shielded: bool,
}

impl Entry {
    fn busy(&self) -> bool {
        self.busy.as_ref().is_none_or(|b| b.get())
    }
}

#[derive(Default)]
struct Entries {
    next: u64,
    live: BTreeMap<u64, Entry>,
}

/// Where stoppable things register: the process-wide scope, or one run step's (see the module
/// doc). Cloning shares the scope.
#[derive(Clone)]
pub struct Scope(Arc<Inner>);

struct Inner {
    /// Stopping (a run step) or tripped (the process-wide scope, until re-armed).
    stopping: AtomicBool,
    entries: Mutex<Entries>,
}

impl Default for Scope {
    fn default() -> Scope {
        Scope::new()
    }
}

impl Scope {
    /// A run step's scope.
    pub fn new() -> Scope {
        Scope(Arc::new(Inner {
            stopping: AtomicBool::new(false),
            entries: Mutex::new(Entries::default()),
        }))
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        // A poisoned lock only means an interrupter panicked; the map itself is intact.
        self.0.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers `parts` until the returned guard drops. While the scope is stopping, the
    /// parts are also used at once (cancel, then sever), unless the registration is shielded:
    /// what they guard fails instead of starting.
    pub fn register(&self, parts: Parts) -> Registration {
        let shielded = self.is_global() && SHIELD.load(Ordering::SeqCst) > 0;
        let entry = Entry {
            cancel: parts.cancel.map(Arc::new),
            sever: parts.sever.map(Arc::new),
            busy: parts.busy,
            shielded,
        };
        let now =
            (self.stopping() && !shielded).then(|| (entry.cancel.clone(), entry.sever.clone()));
        let id = {
            let mut e = self.entries();
            let id = e.next;
            e.next += 1;
            e.live.insert(id, entry);
            id
        };
        if let Some((cancel, sever)) = now {
            cancel.into_iter().for_each(|c| c.interrupt());
            sever.into_iter().for_each(|s| s.interrupt());
        }
        Registration {
            scope: self.clone(),
            id,
        }
    }

    fn is_global(&self) -> bool {
        Arc::ptr_eq(&self.0, &GLOBAL.0)
    }

    /// Whether the scope is stopping (a run step) or tripped (the process-wide scope).
    #[inline]
    pub fn stopping(&self) -> bool {
        self.0.stopping.load(Ordering::Relaxed)
    }

    /// Raises the flag: workers leave at their next check, the scope's connections refuse new
    /// statements. Nothing under way is touched.
    pub fn stop(&self) {
        self.0.stopping.store(true, Ordering::Relaxed);
    }

    /// [`Scope::stop`], then cancels every statement in flight on a server and stops every Lua
    /// state of the scope; returns when every cancel has been sent (each bounded by its
    /// target's `connect_timeout`). Shielded registrations are left alone.
    pub fn cancel(&self) {
        self.stop();
        call_all(self.cancels());
    }

    /// The cancels of what is busy (a connection in a call, a Lua state), shielded ones left
    /// out.
    fn cancels(&self) -> Vec<Arc<Interrupter>> {
        self.entries()
            .live
            .values()
            .filter(|e| !e.shielded && e.busy())
            .filter_map(|e| e.cancel.clone())
            .collect()
    }

    /// Breaks every blocked call of the scope (sockets shut down, process groups killed).
    /// Shielded registrations are left alone.
    pub fn sever(&self) {
        let severs: Vec<_> = self
            .entries()
            .live
            .values()
            .filter(|e| !e.shielded)
            .filter_map(|e| e.sever.clone())
            .collect();
        for s in severs {
            s.interrupt();
        }
    }

    /// How many registrations are alive (connections open, Lua states, commands).
    pub fn alive(&self) -> usize {
        self.entries().live.len()
    }
}

/// Calls every interrupter, [`CANCEL_THREADS`] at a time, and returns when all have returned.
fn call_all(list: Vec<Arc<Interrupter>>) {
    if list.len() <= 1 {
        list.iter().for_each(|i| i.interrupt());
        return;
    }
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..list.len().min(CANCEL_THREADS) {
            s.spawn(|| {
                while let Some(i) = list.get(next.fetch_add(1, Ordering::Relaxed)) {
                    i.interrupt();
                }
            });
        }
    });
}

/// Keeps a registration alive; dropping it unregisters (and drops the interrupters, closing
/// a duplicated socket, once no cancel under way holds them).
pub struct Registration {
    scope: Scope,
    id: u64,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Registration").field(&self.id).finish()
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let gone = self.scope.entries().live.remove(&self.id);
        drop(gone);
    }
}

/// The process-wide scope.
static GLOBAL: LazyLock<Scope> = LazyLock::new(Scope::new);

/// How many [`shielded`] scopes are open (process-wide: a cleanup's helper threads count too).
static SHIELD: AtomicUsize = AtomicUsize::new(0);

/// Runs `f` shielded: what registers in the process-wide scope during it is not stopped by
/// [`interrupt_all`].
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

/// Registers `i` in the process-wide scope as something to break (a process group, a
/// socket) until the returned guard drops. While the scope is tripped, `i` is also called at
/// once: the operation it guards fails instead of starting.
pub fn register(i: Interrupter) -> Registration {
    GLOBAL.register(Parts::sever(i))
}

/// Registers `parts` in the process-wide scope (see [`register`]).
pub fn register_parts(parts: Parts) -> Registration {
    GLOBAL.register(parts)
}

/// Breaks every operation of the process-wide scope and trips it (see the module doc): the
/// blocked calls return at once; the server-side cancels are sent from a thread of their own,
/// so a signal handler never waits for a server.
pub fn interrupt_all() {
    let scope = &*GLOBAL;
    scope.stop();
    scope.sever();
    let cancels = scope.cancels();
    if !cancels.is_empty() {
        let sent = std::thread::Builder::new()
            .name("sbsuite-cancel".into())
            .spawn(move || call_all(cancels));
        if let Err(e) = sent {
            eprintln!("[sbsuite] cannot start a thread to cancel server statements: {e}");
        }
    }
}

/// Whether a stop request has interrupted blocking calls and the runner has not re-armed yet.
pub fn tripped() -> bool {
    GLOBAL.stopping()
}

/// Whether a loop that waits (a restart's readiness poll) should give up now: the registry is
/// tripped and the loop is not part of [`shielded`] work (a restore).
pub fn breaking() -> bool {
    SHIELD.load(Ordering::SeqCst) == 0 && tripped()
}

/// Ends the tripped state: operations registered from now on work normally. The runner calls
/// it before the work a stop does not skip (cleanups, restores, after-hooks) and before a run.
pub fn rearm() {
    GLOBAL.0.stopping.store(false, Ordering::Relaxed);
}

/// The error of a call on a connection whose run step is stopping.
pub fn stopped_error() -> SqlError {
    SqlError::client(
        "the step is stopping: no new statement is sent",
        ErrKind::Other,
    )
}

/// A connection registered in a scope while it is open: its server-side cancel, its socket
/// (or its driver's own way to break a call) and whether a call is under way.
pub struct Guarded {
    inner: Box<dyn Connection>,
    busy: Arc<BusyFlag>,
    /// A run step's connection: no new call once the step is stopping.
    refuse: bool,
    registration: Registration,
}

/// Wraps a setup connection so that [`interrupt_all`] can break its blocked calls and cancel
/// its statement on the server (when its driver can say how).
pub fn guarded(conn: Box<dyn Connection>) -> Box<dyn Connection> {
    wrap(conn, &GLOBAL, false)
}

/// Wraps a worker's connection in its run step's scope: [`Scope::cancel`] cancels its
/// statement in flight on the server, [`Scope::sever`] breaks its blocked call, and once the
/// scope is stopping every new call fails at once ([`stopped_error`]).
pub fn guarded_in(conn: Box<dyn Connection>, scope: &Scope) -> Box<dyn Connection> {
    wrap(conn, scope, true)
}

fn wrap(conn: Box<dyn Connection>, scope: &Scope, refuse: bool) -> Box<dyn Connection> {
    let cancel = conn.canceller();
    let sever = conn.interrupter();
    if cancel.is_none() && sever.is_none() && !refuse {
        return conn;
    }
    let busy = Arc::new(BusyFlag::default());
    let registration = scope.register(Parts {
        cancel,
        sever,
        busy: Some(Arc::clone(&busy)),
    });
    Box::new(Guarded {
        inner: conn,
        busy,
        refuse,
        registration,
    })
}

/// Marks the connection idle again when the call returns, however it returns.
struct Busy<'a>(&'a BusyFlag);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

impl Guarded {
    /// Runs `f` on the connection marked busy, or refuses it when the run step is stopping.
    #[inline]
    fn call<T>(
        &mut self,
        f: impl FnOnce(&mut dyn Connection) -> Result<T, SqlError>,
    ) -> Result<T, SqlError> {
        if self.refuse && self.registration.scope.stopping() {
            return Err(stopped_error());
        }
        self.busy.set(true);
        let _idle = Busy(&self.busy);
        f(&mut *self.inner)
    }
}

impl Connection for Guarded {
    fn server_version(&self) -> Option<String> {
        self.inner.server_version()
    }

    fn prepare(&mut self, sql: &str) -> Result<StmtId, SqlError> {
        self.call(|c| c.prepare(sql))
    }

    fn execute(&mut self, stmt: StmtId, params: &[P<'_>]) -> Result<Done, SqlError> {
        self.call(|c| c.execute(stmt, params))
    }

    fn query(&mut self, sql: &str) -> Result<Done, SqlError> {
        self.call(|c| c.query(sql))
    }

    fn query_i64(&mut self, sql: &str) -> Result<Option<i64>, SqlError> {
        self.call(|c| c.query_i64(sql))
    }

    fn load(
        &mut self,
        table: &str,
        with_id: bool,
        fill: &mut dyn FnMut(&mut DataRow) -> bool,
    ) -> Result<(), SqlError> {
        self.call(|c| c.load(table, with_id, fill))
    }

    fn load_rows(
        &mut self,
        table: &str,
        columns: &[String],
        fill: &mut dyn FnMut(&mut [crate::db::Cell]) -> bool,
    ) -> Result<u64, SqlError> {
        self.call(|c| c.load_rows(table, columns, fill))
    }

    fn execute_fetch(
        &mut self,
        stmt: StmtId,
        params: &[P<'_>],
        first: bool,
        out: &mut crate::db::Fetched,
    ) -> Result<Done, SqlError> {
        self.call(|c| c.execute_fetch(stmt, params, first, out))
    }

    fn query_fetch(
        &mut self,
        sql: &str,
        first: bool,
        out: &mut crate::db::Fetched,
    ) -> Result<Done, SqlError> {
        self.call(|c| c.query_fetch(sql, first, out))
    }

    fn query_rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, SqlError> {
        self.call(|c| c.query_rows(sql))
    }

    fn query_table(&mut self, sql: &str) -> Result<crate::db::conn::Table, SqlError> {
        self.call(|c| c.query_table(sql))
    }

    fn query_each(
        &mut self,
        sql: &str,
        sink: &mut dyn crate::db::conn::RowSink,
    ) -> Result<Done, SqlError> {
        self.call(|c| c.query_each(sql, sink))
    }

    fn interrupter(&self) -> Option<Interrupter> {
        self.inner.interrupter()
    }

    fn canceller(&self) -> Option<Interrupter> {
        self.inner.canceller()
    }

    fn in_transaction(&self) -> Option<bool> {
        self.inner.in_transaction()
    }

    fn close(self: Box<Self>) {
        let Guarded {
            inner,
            registration,
            ..
        } = *self;
        drop(registration);
        inner.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The process-wide scope is shared: tests that trip it must not overlap.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn counting(calls: &Arc<AtomicUsize>) -> Interrupter {
        let counter = calls.clone();
        Interrupter::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        })
    }

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
        let late = register(counting(&calls));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        drop(late);

        // Re-armed: a new registration is left alone, and dropping unregisters.
        rearm();
        let fresh = register(counting(&calls));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        drop(fresh);

        // Shielded: neither a trip nor a registration while tripped breaks it.
        let shielded_one = shielded(|| register(counting(&calls)));
        interrupt_all();
        let shielded_late = shielded(|| register(counting(&calls)));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        drop((shielded_one, shielded_late));
        rearm();
        drop(registration);
        interrupt_all();
        assert_eq!(calls.load(Ordering::SeqCst), 1, "unregistered: not called");
        rearm();
        assert!(!tripped());
    }

    #[test]
    fn a_run_scope_cancels_only_busy_calls_then_severs_and_stops_late_registrations() {
        let scope = Scope::new();
        let (cancels, severs) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let busy = Arc::new(BusyFlag::new(false));
        let idle_one = scope.register(Parts {
            cancel: Some(counting(&cancels)),
            sever: Some(counting(&severs)),
            busy: Some(Arc::clone(&busy)),
        });
        let busy_flag = Arc::new(BusyFlag::new(true));
        let busy_one = scope.register(Parts {
            cancel: Some(counting(&cancels)),
            sever: Some(counting(&severs)),
            busy: Some(Arc::clone(&busy_flag)),
        });
        // Untracked (a Lua state): always cancelled.
        let lua = scope.register(Parts::cancel(counting(&cancels)));
        assert_eq!(scope.alive(), 3);
        assert!(!scope.stopping());
        scope.cancel();
        assert!(scope.stopping());
        assert_eq!(
            cancels.load(Ordering::SeqCst),
            2,
            "the busy one and the Lua state"
        );
        assert_eq!(severs.load(Ordering::SeqCst), 0);
        scope.sever();
        assert_eq!(severs.load(Ordering::SeqCst), 2);
        // A registration while stopping is cancelled and severed at once.
        let late = scope.register(Parts {
            cancel: Some(counting(&cancels)),
            sever: Some(counting(&severs)),
            busy: None,
        });
        assert_eq!(
            (
                cancels.load(Ordering::SeqCst),
                severs.load(Ordering::SeqCst)
            ),
            (3, 3)
        );
        drop((idle_one, busy_one, lua, late));
        assert_eq!(scope.alive(), 0);
        // The process-wide scope is another one: a run scope's stop does not trip it.
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        assert!(!tripped());
    }

    #[test]
    fn many_cancels_run_concurrently() {
        let scope = Scope::new();
        let started = Arc::new(AtomicUsize::new(0));
        let registrations: Vec<_> = (0..32)
            .map(|_| {
                let started = started.clone();
                scope.register(Parts::cancel(Interrupter::new(move || {
                    started.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(100));
                })))
            })
            .collect();
        let t0 = std::time::Instant::now();
        scope.cancel();
        let took = t0.elapsed();
        assert_eq!(started.load(Ordering::SeqCst), 32);
        // 32 cancels of 100 ms each, 16 at a time: about 200 ms, far from 3.2 s in a row.
        assert!(took < std::time::Duration::from_millis(1500), "{took:?}");
        drop(registrations);
    }

    /// A connection that records calls, for [`Guarded`].
    struct Fake(Arc<AtomicUsize>);

    impl Connection for Fake {
        fn prepare(&mut self, _: &str) -> Result<StmtId, SqlError> {
            Ok(0)
        }
        fn execute(&mut self, _: StmtId, _: &[P<'_>]) -> Result<Done, SqlError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(Done::default())
        }
        fn query(&mut self, _: &str) -> Result<Done, SqlError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(Done::default())
        }
        fn query_i64(&mut self, _: &str) -> Result<Option<i64>, SqlError> {
            Ok(None)
        }
        fn load(
            &mut self,
            _: &str,
            _: bool,
            _: &mut dyn FnMut(&mut DataRow) -> bool,
        ) -> Result<(), SqlError> {
            Ok(())
        }
        fn close(self: Box<Self>) {}
    }

    #[test]
    fn a_run_scopes_connection_refuses_statements_once_the_scope_stops() {
        let scope = Scope::new();
        let calls = Arc::new(AtomicUsize::new(0));
        let mut conn = guarded_in(Box::new(Fake(calls.clone())), &scope);
        conn.query("SELECT 1").unwrap();
        assert_eq!(scope.alive(), 1);
        scope.stop();
        let e = conn.query("SELECT 1").unwrap_err();
        assert!(e.message.contains("stopping"), "{e}");
        assert_eq!(
            calls.load(Ordering::SeqCst),
            1,
            "the refused call never reached it"
        );
        conn.close();
        assert_eq!(scope.alive(), 0, "closing unregisters");
    }
}
