//! Stopping a Lua state from another thread, and bounding what a script may take: every state
//! sbsuite builds is a [`State`], which can be stopped ([`State::stopper`]), has a memory
//! limit, and runs its top level under a deadline.
//!
//! Why an instruction hook: a script can loop without ever calling sbsuite (`while true do
//! end` in `event()`, in `prepare()`, at its top level), and a thread is never cancelled from
//! outside. Lua's own answer is a count hook set from another thread (`lua_sethook` is meant
//! to be called asynchronously: LuaJIT's own Ctrl-C handler does it): at the next instruction
//! the hook raises an error in the state, which unwinds the script like any Lua error. The
//! hook stays set, so a script that catches the error (`pcall`) meets it again at its next
//! instruction: the state is done for. LuaJIT calls hooks from JIT-compiled code only when it
//! is built with `LUAJIT_ENABLE_CHECKHOOK` (`.cargo/config.toml`): a compiled loop then checks
//! the hook mask once per iteration (one load and a branch), which is what makes `while true
//! do end` stoppable at all.
//!
//! Why the pointer sits behind a lock: the stopper is called from other threads (the driver's
//! forced shutdown, the signal handler's [`crate::db::interrupt::interrupt_all`], the top-level
//! watchdog) while the state may be closing. [`State`]'s drop clears the pointer under the lock
//! before the state closes, and a stopper finding it cleared does nothing.
//!
//! Memory: each state gets `lua_memory_limit` bytes (mlua's allocator counts them); an
//! allocation past it is Lua's "not enough memory" error in the script, which fails the step,
//! instead of the machine's memory filling up until the process aborts.

use std::ffi::CStr;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mlua::{Lua, ffi};

use crate::db::interrupt::Interrupter;

/// `lua_memory_limit`'s default: bytes each Lua state may allocate.
pub use crate::engine::config::DEFAULT_LUA_MEMORY_LIMIT as DEFAULT_MEMORY_LIMIT;

/// How long a script's top level (what runs when the file is loaded, in every state) may take
/// before it is stopped: definitions and option tables take microseconds.
pub const TOP_LEVEL_LIMIT: Duration = Duration::from_secs(10);

/// The message of a state stopped by the step's stop (a forced shutdown, a stop request).
pub const STOPPED: &CStr = c"sbsuite: the step is stopping: the script was stopped";

/// The message of a top level that ran past [`TOP_LEVEL_LIMIT`].
pub const TOP_LEVEL_TIMED_OUT: &CStr = c"sbsuite: the script's top level did not finish within 10 s (a loop at the top level of the file?): move the work into a function such as prepare() or init()";

/// The state's pointer, while it is open, and whether a stopper has been at it.
struct Cell {
    ptr: Mutex<Option<StatePtr>>,
    stopped: AtomicBool,
}

/// A `lua_State` pointer that may cross threads: only [`ffi::lua_sethook`] is ever called on
/// it from another thread, under [`Cell::ptr`]'s lock.
struct StatePtr(*mut ffi::lua_State);

// SAFETY: the pointer is only dereferenced by `lua_sethook` (made for asynchronous use) while
// the lock that `State::drop` takes before closing the state is held.
unsafe impl Send for StatePtr {}

unsafe extern "C-unwind" fn stopped_hook(l: *mut ffi::lua_State, _ar: *mut ffi::lua_Debug) {
    // SAFETY: called by the Lua VM on the state's own thread, where raising an error is what
    // a hook may do; the format is a literal "%s" and the argument a NUL-terminated constant.
    unsafe {
        ffi::luaL_error(l, c"%s".as_ptr(), STOPPED.as_ptr());
    }
}

unsafe extern "C-unwind" fn top_level_hook(l: *mut ffi::lua_State, _ar: *mut ffi::lua_Debug) {
    // SAFETY: as `stopped_hook`.
    unsafe {
        ffi::luaL_error(l, c"%s".as_ptr(), TOP_LEVEL_TIMED_OUT.as_ptr());
    }
}

/// One Lua state built by sbsuite: the state (through `Deref`), its stopper and its memory
/// limit. Dropping it makes every stopper a no-op, then closes the state.
pub struct State {
    lua: Lua,
    cell: Arc<Cell>,
}

impl State {
    /// Wraps a new state, limiting its memory to `limit` bytes (0: no limit).
    pub fn new(lua: Lua, limit: u64) -> Result<State, mlua::Error> {
        if limit > 0 {
            lua.set_memory_limit(usize::try_from(limit).unwrap_or(usize::MAX))?;
        }
        let ptr = lua.exec_raw_lua(|raw| raw.state());
        Ok(State {
            lua,
            cell: Arc::new(Cell {
                ptr: Mutex::new(Some(StatePtr(ptr))),
                stopped: AtomicBool::new(false),
            }),
        })
    }

    /// Stops the state from any thread: its next instruction raises [`STOPPED`], and so does
    /// every one after it.
    pub fn stopper(&self) -> Interrupter {
        let cell = Arc::clone(&self.cell);
        Interrupter::new(move || set_hook(&cell, stopped_hook))
    }

    /// Whether a stopper (or the top-level watchdog) has been at the state: its errors since
    /// are the stop's, not the script's.
    pub fn was_stopped(&self) -> bool {
        self.cell.stopped.load(Ordering::Acquire)
    }

    /// Makes the state usable again after a stop (on its own thread, once nothing can stop
    /// it any more): the work the stop broke is over, the next may run.
    pub fn clear_stop(&self) {
        if self.cell.stopped.swap(false, Ordering::AcqRel) {
            let guard = self.cell.ptr.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(p) = guard.as_ref() {
                // SAFETY: the state is open (the pointer is set) and this is its own thread.
                unsafe {
                    ffi::lua_sethook(p.0, None, 0, 0);
                }
            }
        }
    }

    /// Runs `f` (the script's top level) with a watchdog that stops it after
    /// [`TOP_LEVEL_LIMIT`] with [`TOP_LEVEL_TIMED_OUT`].
    pub fn with_deadline<R>(&self, f: impl FnOnce() -> R) -> R {
        let (done, wait) = mpsc::channel::<()>();
        let cell = Arc::clone(&self.cell);
        let watchdog = std::thread::Builder::new()
            .name("sbsuite-lua-watchdog".into())
            .spawn(move || {
                if let Err(mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(TOP_LEVEL_LIMIT) {
                    set_hook(&cell, top_level_hook);
                }
            });
        let r = f();
        drop(done);
        if let Ok(w) = watchdog {
            let _ = w.join();
        }
        r
    }
}

/// Sets `hook` on the state of `cell` if it is still open.
fn set_hook(cell: &Cell, hook: ffi::lua_Hook) {
    let guard = cell.ptr.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(p) = guard.as_ref() {
        cell.stopped.store(true, Ordering::Release);
        // SAFETY: the state is open while the pointer is set (cleared under this lock before
        // it closes); lua_sethook only stores the hook and its mask, which LuaJIT documents as
        // safe to do from another thread or a signal handler.
        unsafe {
            ffi::lua_sethook(p.0, Some(hook), ffi::LUA_MASKCOUNT, 1);
        }
    }
}

impl Deref for State {
    type Target = Lua;

    fn deref(&self) -> &Lua {
        &self.lua
    }
}

impl Drop for State {
    fn drop(&mut self) {
        // Before the state closes (the `lua` field drops after this).
        self.cell
            .ptr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(limit: u64) -> State {
        State::new(Lua::new(), limit).expect("state")
    }

    #[test]
    fn the_option_spec_has_the_default() {
        let spec = crate::engine::config::GENERAL
            .iter()
            .find(|o| o.name == "lua_memory_limit")
            .expect("lua_memory_limit is a general option");
        assert_eq!(spec.default, Some("512M"));
        assert_eq!(DEFAULT_MEMORY_LIMIT, 512 << 20);
    }

    #[test]
    fn a_compiled_endless_loop_stops_when_another_thread_asks() {
        let (tx, rx) = mpsc::channel();
        let worker = std::thread::spawn(move || {
            let s = state(0);
            tx.send(s.stopper()).unwrap();
            // Compiled by LuaJIT after a few iterations: stoppable only with CHECKHOOK.
            let plain = s
                .load("local x = 0 while true do x = x + 1 end")
                .exec()
                .map_err(|e| e.to_string());
            // A script that catches the error meets it again at its next instruction.
            let caught = s
                .load("while true do pcall(function() while true do end end) end")
                .exec()
                .map_err(|e| e.to_string());
            let stopped = s.was_stopped();
            s.clear_stop();
            let after = s
                .load("return 1 + 1")
                .eval::<i64>()
                .map_err(|e| e.to_string());
            (plain, caught, stopped, after)
        });
        let stop = rx.recv().unwrap();
        std::thread::sleep(Duration::from_millis(300));
        stop.interrupt();
        let (plain, caught, stopped, after) = worker.join().unwrap();
        for r in [plain, caught] {
            let e = r.expect_err("stopped");
            assert!(e.contains("the script was stopped"), "{e}");
        }
        assert!(stopped);
        assert_eq!(after.unwrap(), 2, "usable again once the stop is cleared");
    }

    #[test]
    fn a_stopper_of_a_closed_state_does_nothing() {
        let s = state(0);
        let stop = s.stopper();
        drop(s);
        stop.interrupt();
    }

    #[test]
    fn memory_past_the_limit_is_a_lua_error() {
        let s = state(64 << 20);
        let e = s
            .load(
                "local t = {} for i = 1, 100 do t[i] = string.rep('x', 16 * 1024 * 1024) .. i end",
            )
            .exec()
            .expect_err("over the limit");
        assert!(e.to_string().contains("not enough memory"), "{e}");
        // The state survives and frees what the failed chunk held.
        s.gc_collect().unwrap();
        assert_eq!(s.load("return 40 + 2").eval::<i64>().unwrap(), 42);
    }
}
