//! The machine-wide lock on the shared database servers (`/tmp/sbsuite-tests.lock`): tests that
//! read the servers' global counters, or measure time, hold it so that no other test run on
//! the machine (another checkout, another developer's `cargo test`) moves those counters
//! meanwhile. Taken with `flock(2)` like `flock(1)` does, so a shell script and a test exclude
//! each other.
//!
//! A run started as `flock /tmp/sbsuite-tests.lock cargo test …` already holds the lock through
//! a descriptor its processes inherit; locking the file again would wait for ourselves
//! forever, so then only the in-process mutex is taken (tests of one binary still run one at
//! a time).

use std::fs::File;
use std::sync::{Mutex, MutexGuard};

/// The lock file every test run and script of this repository agrees on.
pub const LOCK_FILE: &str = "/tmp/sbsuite-tests.lock";

static IN_PROCESS: Mutex<()> = Mutex::new(());

/// Held for as long as it lives: the in-process mutex and, unless an ancestor holds it
/// already, the machine-wide file lock.
pub struct ServerLock {
    _file: Option<File>,
    _guard: MutexGuard<'static, ()>,
}

/// Whether one of this process's descriptors is open on [`LOCK_FILE`] (inherited from a
/// `flock LOCK_FILE …` ancestor, which holds the lock through it).
fn inherited() -> bool {
    let Ok(fds) = std::fs::read_dir("/proc/self/fd") else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path())
            .map(|target| target == std::path::Path::new(LOCK_FILE))
            .unwrap_or(false)
    })
}

/// Waits for the servers: see the module doc.
pub fn server_lock() -> ServerLock {
    use std::os::fd::AsRawFd;

    let guard = IN_PROCESS.lock().unwrap_or_else(|p| p.into_inner());
    if inherited() {
        return ServerLock {
            _file: None,
            _guard: guard,
        };
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(LOCK_FILE)
        .unwrap_or_else(|e| panic!("cannot open {LOCK_FILE}: {e}"));
    // SAFETY: flock(2) on a descriptor we own, kept open (and so locked) by the returned value.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(
        rc,
        0,
        "flock {LOCK_FILE}: {}",
        std::io::Error::last_os_error()
    );
    ServerLock {
        _file: Some(file),
        _guard: guard,
    }
}
