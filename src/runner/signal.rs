//! Ctrl-C / SIGTERM handling: the first signal asks for a graceful stop, the second exits now.
//!
//! Exiting is the process edge's decision, not the library's: the app registers what a second
//! signal does ([`on_second_signal`]: say so and exit with 130) and this module only calls it.
//!
//! Engines are synchronous and poll an `AtomicBool`, so the handler flips one process-wide
//! flag (the `ctrlc` crate runs it on its own thread, never in signal context). A thread
//! blocked in a call never looks at a flag, so the handler also breaks every registered
//! blocking operation ([`crate::db::interrupt::interrupt_all`]: setup connections' sockets,
//! hooks' and restart commands' process groups): the first signal is seen in every phase, and
//! the second one kills those process groups before the app exits. The flag lives in
//! a `OnceLock` because `ctrlc` accepts one handler per process: [`install`] is idempotent and
//! every run of the process shares the flag, while tests reach it through [`stop_flag`] (or pass
//! their own flag to the runner's step loop) without sending real signals.
//!
//! Signals the parent set to *ignored* stay ignored: `nohup sbsuite run …` (SIGHUP ignored) must
//! survive a closed SSH session, and `sbsuite run … &` in a script (SIGINT ignored) must not be
//! stopped by the terminal's Ctrl-C. `ctrlc::try_set_handler` refuses to install at all in those
//! cases and `set_handler` would take the signals over, so the handler is installed with
//! `set_handler` and the previously ignored signals are put back to ignored right after.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();
static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
static ON_SECOND: OnceLock<fn()> = OnceLock::new();
static NOTE: Mutex<&str> = Mutex::new(RUN_NOTE);

/// What the first signal does while a suite runs.
pub const RUN_NOTE: &str = "interrupt: the current step stops and is recorded as interrupted; \
                            remaining runs are skipped, cleanups still run. Press Ctrl-C again \
                            to exit now.";

#[derive(Debug, thiserror::Error)]
pub enum SignalError {
    #[error(
        "cannot install the Ctrl-C/SIGTERM handler: {0} (sbsuite needs it to stop a run \
         gracefully and keep finished rows)"
    )]
    Install(String),
}

/// The process-wide stop flag that the handler sets; the runner passes it to every engine.
pub fn stop_flag() -> Arc<AtomicBool> {
    STOP.get_or_init(|| Arc::new(AtomicBool::new(false)))
        .clone()
}

/// Registers what a second signal does (the app says so and exits the process). Only the first
/// registration counts; without one, a second signal changes nothing (the stop is already
/// requested), which is what a library caller that owns the process wants.
pub fn on_second_signal(action: fn()) {
    let _ = ON_SECOND.set(action);
}

/// Says what the first signal means from now on until the guard is dropped (then it means
/// what it meant before): after a suite, `--metrics-hold` is ended by it.
pub fn note_while(note: &'static str) -> NoteGuard {
    let mut n = NOTE.lock().unwrap_or_else(|p| p.into_inner());
    let before = std::mem::replace(&mut *n, note);
    NoteGuard(before)
}

/// Puts the previous note back.
pub struct NoteGuard(&'static str);

impl Drop for NoteGuard {
    fn drop(&mut self) {
        *NOTE.lock().unwrap_or_else(|p| p.into_inner()) = self.0;
    }
}

/// Installs the handler once per process (later calls return the same flag) and returns the
/// stop flag.
pub fn install() -> Result<Arc<AtomicBool>, SignalError> {
    let flag = stop_flag();
    let installed = INSTALLED.get_or_init(|| {
        let handler_flag = flag.clone();
        let ignored = ignored_signals();
        let result = ctrlc::set_handler(move || {
            let action = on_signal(&handler_flag);
            crate::db::interrupt::interrupt_all();
            if action == SignalAction::ExitNow {
                if let Some(exit_now) = ON_SECOND.get() {
                    exit_now();
                }
                return;
            }
            let note = *NOTE.lock().unwrap_or_else(|p| p.into_inner());
            eprintln!("\n[sbsuite] {note}");
        })
        .map_err(|e| e.to_string());
        restore_ignored(&ignored);
        result
    });
    match installed {
        Ok(()) => Ok(flag),
        Err(e) => Err(SignalError::Install(e.clone())),
    }
}

/// The signals ctrlc takes over (SIGHUP comes with the `termination` feature).
#[cfg(unix)]
const HANDLED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The handled signals whose disposition is currently "ignore".
#[cfg(unix)]
fn ignored_signals() -> Vec<libc::c_int> {
    HANDLED
        .into_iter()
        .filter(|&sig| {
            // SAFETY: a zeroed sigaction is a valid out-parameter; a null `act` only queries the
            // current disposition and changes nothing.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                    && old.sa_sigaction == libc::SIG_IGN
            }
        })
        .collect()
}

#[cfg(unix)]
fn restore_ignored(signals: &[libc::c_int]) {
    for &sig in signals {
        // SAFETY: setting SIG_IGN installs no Rust code as a handler; it only undoes ctrlc's
        // takeover of a signal the parent chose to ignore.
        unsafe {
            libc::signal(sig, libc::SIG_IGN);
        }
    }
}

#[cfg(not(unix))]
fn ignored_signals() -> Vec<i32> {
    Vec::new()
}

#[cfg(not(unix))]
fn restore_ignored(_: &[i32]) {}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SignalAction {
    /// First signal: the flag is now set, the run winds down.
    Stop,
    /// The flag was already set: the user insists.
    ExitNow,
}

/// What a signal means given the flag's state (split out of the handler so it can be tested).
pub(crate) fn on_signal(flag: &AtomicBool) -> SignalAction {
    if flag.swap(true, Ordering::SeqCst) {
        SignalAction::ExitNow
    } else {
        SignalAction::Stop
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_signal_stops_second_exits() {
        let flag = AtomicBool::new(false);
        assert_eq!(on_signal(&flag), SignalAction::Stop);
        assert!(flag.load(Ordering::SeqCst));
        assert_eq!(on_signal(&flag), SignalAction::ExitNow);
    }

    #[test]
    fn install_is_idempotent_and_shares_the_flag() {
        let a = install().unwrap();
        let b = install().unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert!(Arc::ptr_eq(&a, &stop_flag()));
    }
}
