//! Runs a child process to its end under a time limit and measures what the hostile-server
//! tests bound: its wall time and its peak resident set size (`wait4`'s `ru_maxrss`, which
//! std's `wait` does not return). A child still running at the limit is killed, so a hang
//! fails the test instead of hanging it.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How a measured child ended.
pub struct Measured {
    /// The exit code; `None` when a signal ended it (the limit's SIGKILL among them).
    pub code: Option<i32>,
    pub elapsed: Duration,
    /// Peak resident set size, KiB.
    pub max_rss_kib: i64,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `cmd` (stdin closed, stdout and stderr collected) to its end, killed after `limit`.
#[allow(clippy::zombie_processes)] // reaped by wait4 below, which std's `wait` cannot replace
pub fn measured(mut cmd: Command, limit: Duration) -> Measured {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the child");
    let start = Instant::now();
    let pid = child.id() as libc::pid_t;
    let collect = |mut from: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = from.read_to_string(&mut s);
            s
        })
    };
    let stdout = collect(Box::new(child.stdout.take().unwrap()));
    let stderr = collect(Box::new(child.stderr.take().unwrap()));
    // Set under the lock once the child is reaped: the watchdog never signals a pid that
    // may have been reused.
    let reaped = Arc::new(Mutex::new(false));
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let watchdog = {
        let reaped = reaped.clone();
        std::thread::spawn(move || {
            if finished.recv_timeout(limit).is_err() {
                let reaped = reaped.lock().unwrap();
                if !*reaped {
                    // SAFETY: kill(2) of our own child, not reaped yet (at most a zombie).
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
        })
    };
    // First wait without reaping (the exited child stays a zombie, so its pid cannot be
    // reused), then reap it under the lock, with its resource usage.
    // SAFETY: an all-zero siginfo_t is a valid out-parameter of waitid(2).
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child; `info` is a valid out-pointer.
    let rc = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOWAIT,
        )
    };
    assert_eq!(rc, 0, "waitid: {}", std::io::Error::last_os_error());
    let elapsed = start.elapsed();
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    {
        let mut reaped = reaped.lock().unwrap();
        // SAFETY: reaps our own exited child; `status` and `usage` are valid out-pointers.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        assert_eq!(rc, pid, "wait4: {}", std::io::Error::last_os_error());
        *reaped = true;
    }
    let _ = done.send(());
    watchdog.join().unwrap();
    // Reaped already: `Child` must not wait again, and dropping it does not.
    drop(child);
    Measured {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        elapsed,
        max_rss_kib: usage.ru_maxrss,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}
