//! Ctrl-C / SIGTERM handling: the first signal asks for a graceful stop, the second exits now.
//!
//! Engines are synchronous and poll an `AtomicBool`, so the handler only flips one process-wide
//! flag (the `ctrlc` crate runs it on its own thread, never in signal context). The flag lives in
//! a `OnceLock` because `ctrlc` accepts one handler per process: [`install`] is idempotent and
//! every run of the process shares the flag, while tests reach it through [`stop_flag`] (or pass
//! their own flag to the runner's step loop) without sending real signals.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// Exit code after a second Ctrl-C (128 + SIGINT, the shell convention).
pub const EXIT_INTERRUPTED: i32 = 130;

static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();
static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();

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

/// Installs the handler once per process (later calls return the same flag) and returns the
/// stop flag.
pub fn install() -> Result<Arc<AtomicBool>, SignalError> {
    let flag = stop_flag();
    let installed = INSTALLED.get_or_init(|| {
        let handler_flag = flag.clone();
        ctrlc::try_set_handler(move || {
            if on_signal(&handler_flag) == SignalAction::ExitNow {
                eprintln!("\n[sbsuite] second interrupt: exiting now (finished rows are on disk)");
                std::process::exit(EXIT_INTERRUPTED);
            }
            eprintln!(
                "\n[sbsuite] interrupt: the current step stops and is recorded as interrupted; \
                 remaining runs are skipped, cleanups still run. Press Ctrl-C again to exit now."
            );
        })
        .map_err(|e| e.to_string())
    });
    match installed {
        Ok(()) => Ok(flag),
        Err(e) => Err(SignalError::Install(e.clone())),
    }
}

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
