//! Runs a child process to its end under a time limit and measures what the hostile-server
//! tests bound: its wall time and its peak resident set size (`wait4`'s `ru_maxrss`, which
//! std's `wait` does not return). A child still running at the limit is killed, so a hang
//! fails the test instead of hanging it; [`measured_capped`] also kills a child whose resident
//! set grows past a cap, so that a regression fails its test without taking the memory of a
//! machine that others share.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How a measured child ended.
pub struct Measured {
    /// The exit code; `None` when a signal ended it (the limit's SIGKILL among them).
    pub code: Option<i32>,
    pub elapsed: Duration,
    /// Peak resident set size, KiB (`ru_maxrss`: it counts the memory of the test process
    /// the child was forked from before its exec, so it is never below the test's own).
    pub max_rss_kib: i64,
    /// The child's own peak resident set after its exec, KiB: its `VmHWM` as last read
    /// (every 20 ms) while it lived, so growth in its last 20 ms may be missed.
    pub hwm_kib: i64,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `cmd` (stdin closed, stdout and stderr collected) to its end, killed after `limit`.
pub fn measured(cmd: Command, limit: Duration) -> Measured {
    measured_capped(cmd, limit, None)
}

/// Field `key` (`VmRSS`, `VmHWM`) of process `pid`'s status, KiB; 0 once it is gone.
pub fn status_kib(pid: libc::pid_t, key: &str) -> i64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// [`measured`], and killed as soon as its resident set exceeds `rss_cap_kib` (checked every
/// 20 ms).
#[allow(clippy::zombie_processes)] // reaped by wait4 below, which std's `wait` cannot replace
pub fn measured_capped(mut cmd: Command, limit: Duration, rss_cap_kib: Option<i64>) -> Measured {
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
    let hwm = Arc::new(std::sync::atomic::AtomicI64::new(0));
    let watchdog = {
        let reaped = reaped.clone();
        let hwm = hwm.clone();
        std::thread::spawn(move || {
            let until = Instant::now() + limit;
            loop {
                let tick = until
                    .saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(20));
                if finished.recv_timeout(tick).is_ok() {
                    return;
                }
                hwm.fetch_max(
                    status_kib(pid, "VmHWM"),
                    std::sync::atomic::Ordering::SeqCst,
                );
                let over = rss_cap_kib.is_some_and(|cap| status_kib(pid, "VmRSS") > cap);
                if over || Instant::now() >= until {
                    let reaped = reaped.lock().unwrap();
                    if !*reaped {
                        // SAFETY: kill(2) of our own child, not reaped yet (at most a zombie).
                        unsafe { libc::kill(pid, libc::SIGKILL) };
                    }
                    return;
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
        hwm_kib: hwm.load(std::sync::atomic::Ordering::SeqCst),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}
