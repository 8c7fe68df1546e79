//! Who uses the shared database servers when (MariaDB 127.0.0.1:3306, PostgreSQL
//! 127.0.0.1:5432). The integration tests run in one process (`tests/all`), several at a time
//! in the order of their names, so a test of one area may overlap a test of any other.
//!
//! - [`server_lock`] holds the servers alone. Tests that read the servers' global counters
//!   (`Com_*`), change their global settings or move those counters with a heavy load take it,
//!   and no other test of the process uses the servers meanwhile. It is machine-wide too: the
//!   file lock `/tmp/sbsuite-tests.lock`, taken with `flock(2)` like `flock(1)` does, so that a
//!   test run of another checkout or a `bench/` script under `flock` cannot move those
//!   counters either (a shell script and a test exclude each other).
//! - [`share`] holds the servers shared, in this process only: every other test that uses them
//!   takes it, through its first admin call in [`super::db`] or explicitly, and keeps it until
//!   the test ends. Other processes are not held back by it (they never were).
//!
//! - [`oceanbase_lock`] holds the OceanBase server (seekdb on 127.0.0.1:2881, `bench/seekdb.sh`)
//!   alone, in this process and machine-wide (its own lock file): every test that uses it takes
//!   it, since they all change or read its global settings.
//!
//! The shared hold belongs to the test's thread (the harness runs each test on a thread of its
//! own) and goes when the thread ends: no guard to keep, so a helper can take it for its
//! caller. Take it on the test's own thread only: a helper thread that waited for it while its
//! test held the servers alone would wait forever.
//!
//! A run started as `flock /tmp/sbsuite-tests.lock cargo test …` already holds the file lock
//! through a descriptor its processes inherit; locking the file again would wait for ourselves
//! forever, so then only the in-process lock is taken.

use std::cell::RefCell;
use std::fs::File;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The lock file every test run and script of this repository agrees on.
pub const LOCK_FILE: &str = "/tmp/sbsuite-tests.lock";

static IN_PROCESS: RwLock<()> = RwLock::new(());

/// What the current thread holds.
enum Hold {
    None,
    /// Until the thread ends, or until it takes the servers alone.
    Shared {
        _guard: RwLockReadGuard<'static, ()>,
    },
    /// For as long as its [`ServerLock`] lives.
    Alone,
}

thread_local! {
    static HOLD: RefCell<Hold> = const { RefCell::new(Hold::None) };
}

/// Held for as long as it lives: the in-process lock and, unless an ancestor holds it
/// already, the machine-wide file lock.
pub struct ServerLock {
    _file: Option<File>,
    _guard: RwLockWriteGuard<'static, ()>,
}

impl Drop for ServerLock {
    fn drop(&mut self) {
        HOLD.with(|h| *h.borrow_mut() = Hold::None);
    }
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

/// Waits for the servers, then holds them alone: see the module doc. A shared hold of the
/// calling test is given up first.
pub fn server_lock() -> ServerLock {
    HOLD.with(|h| *h.borrow_mut() = Hold::None);
    let guard = IN_PROCESS.write().unwrap_or_else(|p| p.into_inner());
    HOLD.with(|h| *h.borrow_mut() = Hold::Alone);
    if inherited() {
        return ServerLock {
            _file: None,
            _guard: guard,
        };
    }
    ServerLock {
        _file: Some(flock(LOCK_FILE)),
        _guard: guard,
    }
}

/// `path` opened (created if missing) and locked with `flock(2)`, exclusively: the lock holds
/// while the file stays open.
fn flock(path: &str) -> File {
    use std::os::fd::AsRawFd;

    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("cannot open {path}: {e}"));
    // SAFETY: flock(2) on a descriptor we own, kept open (and so locked) by the caller.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(rc, 0, "flock {path}: {}", std::io::Error::last_os_error());
    file
}

/// The lock file of the tests that use the OceanBase server (seekdb on 127.0.0.1:2881).
pub const OCEANBASE_LOCK_FILE: &str = "/tmp/sbsuite-oceanbase-tests.lock";

static OCEANBASE_IN_PROCESS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Held for as long as it lives: the OceanBase server (seekdb) alone, see [`oceanbase_lock`].
pub struct OceanBaseLock {
    _file: File,
    _guard: std::sync::MutexGuard<'static, ()>,
}

/// Waits for the OceanBase server, then holds it alone, in this process and machine-wide
/// ([`OCEANBASE_LOCK_FILE`]): its tests change its global variables and parameters (`SET
/// GLOBAL`, `ALTER SYSTEM`) and read them back, so they take turns. Separate from
/// [`server_lock`]: seekdb is a server of its own, and its tests hold MariaDB and PostgreSQL
/// back from nobody.
pub fn oceanbase_lock() -> OceanBaseLock {
    let guard = OCEANBASE_IN_PROCESS
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    OceanBaseLock {
        _file: flock(OCEANBASE_LOCK_FILE),
        _guard: guard,
    }
}

/// Holds the servers shared until the calling test ends (see the module doc); nothing when
/// its test holds them already, shared or alone.
pub fn share() {
    HOLD.with(|h| {
        let mut h = h.borrow_mut();
        if let Hold::None = *h {
            *h = Hold::Shared {
                _guard: IN_PROCESS.read().unwrap_or_else(|p| p.into_inner()),
            };
        }
    });
}
