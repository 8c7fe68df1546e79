//! What the C functions exported to Lua reach: the calling thread's [`ThreadCtx`] (its
//! sysbench thread id, its random generator, the event loop of a worker) and the run's
//! [`LuaShared`] (counters of every thread, the database, `rand.unique`'s sequence).
//!
//! Why a thread-local: LuaJIT's FFI calls plain C functions (`ffi.C.sb_counter_inc(tid, t)`)
//! with no handle to pass, exactly as sysbench's own functions are called; each Lua state lives
//! on one thread (sysbench's model), so the thread's context is the state's context. It is
//! installed by [`enter`] before any Lua code of a state runs and removed when the guard drops.
//!
//! Counters are sysbench's: one slot of six per thread id (`sb_counter_type`: OTHER, READ,
//! WRITE, TRX, ERROR, RECONNECT), bumped with relaxed atomic adds (a script may bump another
//! thread's slot), summed by the collector. Slot `threads` is the report thread's, which
//! sysbench leaves out of the reports.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub use super::{LuaShared, ThreadCtx};
use crate::engine::driver::EventLoop;
use crate::engine::random::Rng;

/// `sb_counter_type`'s values, as scripts pass them.
pub const CNT_OTHER: i32 = 0;
pub const CNT_READ: i32 = 1;
pub const CNT_WRITE: i32 = 2;
/// The event (transaction) counter.
pub const CNT_TRX: i32 = 3;
pub const CNT_ERROR: i32 = 4;
pub const CNT_RECONNECT: i32 = 5;
/// Counters per slot (`SB_CNT_MAX`).
pub const CNT_MAX: usize = 6;

/// One thread id's counters, alone on their cache lines.
#[repr(align(128))]
#[derive(Default)]
pub struct CounterSlot(pub [AtomicU64; CNT_MAX]);

/// Every thread id's counters for one run (or one command).
pub struct Counters {
    slots: Box<[CounterSlot]>,
}

impl Counters {
    /// Slots for thread ids `0..=threads` (the last one is the report thread's).
    pub fn new(threads: usize) -> Counters {
        Counters {
            slots: (0..=threads).map(|_| CounterSlot::default()).collect(),
        }
    }

    /// Adds one to counter `kind` of thread `tid`; out-of-range ids and kinds are ignored, as
    /// nothing reads them.
    #[inline]
    pub fn inc(&self, tid: usize, kind: i32) {
        self.add(tid, kind, 1);
    }

    #[inline]
    pub fn add(&self, tid: usize, kind: i32, n: u64) {
        if let (Some(slot), Ok(k)) = (self.slots.get(tid), usize::try_from(kind))
            && let Some(c) = slot.0.get(k)
        {
            c.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Counter `kind` of thread `tid` (0 when out of range).
    pub fn get(&self, tid: usize, kind: i32) -> u64 {
        match (self.slots.get(tid), usize::try_from(kind)) {
            (Some(slot), Ok(k)) => slot.0.get(k).map_or(0, |c| c.load(Ordering::Relaxed)),
            _ => 0,
        }
    }

    /// The sum over the worker threads `0..threads` (the report thread's slot left out, as in
    /// sysbench's reports), indexed by counter kind.
    pub fn sum(&self) -> [u64; CNT_MAX] {
        let mut out = [0; CNT_MAX];
        for slot in self.slots.iter().take(self.slots.len().saturating_sub(1)) {
            for (o, c) in out.iter_mut().zip(&slot.0) {
                *o += c.load(Ordering::Relaxed);
            }
        }
        out
    }
}

thread_local! {
    static CTX: RefCell<Option<ThreadCtx>> = const { RefCell::new(None) };
}

/// Removes the thread's context when dropped.
pub struct CtxGuard(());

impl Drop for CtxGuard {
    fn drop(&mut self) {
        CTX.with_borrow_mut(|c| *c = None);
    }
}

/// Installs the context of a state about to run on this thread as thread id `tid`.
pub fn enter(tid: usize, shared: Arc<LuaShared>, rng: Rng) -> CtxGuard {
    CTX.with_borrow_mut(|c| {
        *c = Some(ThreadCtx {
            tid,
            shared,
            rng,
            lp: std::ptr::null_mut(),
            scope: None,
            retry_since: None,
        })
    });
    CtxGuard(())
}

/// Runs `f` with the thread's context; `None` when no state is running on this thread (a
/// script calling an exported function from a thread of its own making).
#[inline]
pub fn with<R>(f: impl FnOnce(&mut ThreadCtx) -> R) -> Option<R> {
    CTX.with(|c| c.try_borrow_mut().ok()?.as_mut().map(f))
}

/// Makes `lp` the loop of this thread's `sb_more_events`/`sb_event_start`/`sb_event_stop` for
/// the duration of `f` (a worker's `thread_run`).
pub fn with_loop<R>(lp: &mut EventLoop<'_>, f: impl FnOnce() -> R) -> R {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            with(|c| c.lp = std::ptr::null_mut());
        }
    }
    // SAFETY: the pointer is cleared by `Reset` before `lp`'s borrow ends, and only this
    // thread reads it, inside `f`.
    let ptr = (lp as *mut EventLoop<'_>).cast::<EventLoop<'static>>();
    with(|c| c.lp = ptr);
    let _reset = Reset;
    f()
}

/// The worker's loop, if this thread is running `thread_run`.
fn with_lp<R>(f: impl FnOnce(&mut EventLoop<'static>) -> R) -> Option<R> {
    with(|c| c.lp).and_then(|lp| {
        // SAFETY: set by `with_loop` on this thread and valid until it returns.
        unsafe { lp.as_mut() }.map(f)
    })
}

thread_local! {
    /// An error of the driver inside `sb_more_events` (a failed checkpoint hand-over), kept
    /// for the worker to return after `thread_run`.
    static LOOP_ERROR: RefCell<Option<crate::engine::EngineError>> = const { RefCell::new(None) };
}

/// Takes the error `sb_more_events` met, if any.
pub fn take_loop_error() -> Option<crate::engine::EngineError> {
    LOOP_ERROR.with_borrow_mut(Option::take)
}

/// Writes `bytes` to the process's standard output directly (file descriptor 1), as a
/// script's `print` does through C stdio: never through Rust's `stdout()` lock, which the
/// suite runner holds while a step runs (a worker waiting for it would never finish). Errors
/// are ignored, as `printf`'s are.
pub fn write_stdout(mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: a plain write of an initialised buffer to fd 1.
        let n = unsafe { libc::write(1, bytes.as_ptr().cast(), bytes.len()) };
        match usize::try_from(n) {
            Ok(n) if n > 0 => bytes = &bytes[n..],
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => return,
        }
    }
}

// ---- exported C functions: the event loop and the counters ----

#[unsafe(no_mangle)]
pub extern "C" fn sb_more_events(_tid: i32) -> bool {
    with_lp(|lp| match lp.more_events() {
        Ok(more) => more,
        Err(e) => {
            LOOP_ERROR.with_borrow_mut(|slot| *slot = Some(e));
            false
        }
    })
    .unwrap_or(false)
}

#[unsafe(no_mangle)]
pub extern "C" fn sb_event_start(_tid: i32) {
    with_lp(|lp| lp.event_start());
}

#[unsafe(no_mangle)]
pub extern "C" fn sb_event_stop(tid: i32) {
    if with_lp(|lp| lp.event_stop(0)).is_some() {
        sb_counter_inc(tid, CNT_TRX);
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn sb_counter_inc(tid: i32, kind: i32) {
    with(|c| {
        if let Ok(t) = usize::try_from(tid) {
            c.shared.counters.inc(t, kind);
        }
    });
}

/// Whether the prelude's event loop has re-run its event too often (`restarts` re-runs so
/// far): `max_retries` and the time floor of [`crate::engine::session::retry::Retries::exhausted`],
/// timed from the first re-run of the event.
#[unsafe(no_mangle)]
pub extern "C" fn sbsuite_retries_exhausted(restarts: u64) -> bool {
    with(|c| {
        let now = std::time::Instant::now();
        if restarts <= 1 {
            c.retry_since = Some(now);
        }
        let since = *c.retry_since.get_or_insert(now);
        crate::engine::session::retry::Retries::exhausted(
            c.shared.limits.max_retries,
            crate::engine::session::retry::MIN_RETRY_SPAN,
            restarts,
            since,
        )
    })
    .unwrap_or(false)
}

#[unsafe(no_mangle)]
pub extern "C" fn sb_counter_val(tid: i32, kind: i32) -> u64 {
    with(|c| usize::try_from(tid).map_or(0, |t| c.shared.counters.get(t, kind))).unwrap_or(0)
}

/// Function addresses the binary exports for `ffi.C`, listed so that the linker keeps them
/// (and `-rdynamic` puts them in the dynamic symbol table) although no Rust code calls them:
/// [`super::state`] reads every module's list when it creates a state.
pub struct Exports(pub &'static [*const ()]);

// SAFETY: plain function addresses, never written.
unsafe impl Sync for Exports {}

pub static EXPORTS: Exports = Exports(&[
    sb_more_events as *const (),
    sb_event_start as *const (),
    sb_event_stop as *const (),
    sb_counter_inc as *const (),
    sb_counter_val as *const (),
    sbsuite_retries_exhausted as *const (),
]);
