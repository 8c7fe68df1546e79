//! Runs a child process to its end under a time limit and measures what the hostile-server
//! tests bound: its wall time and its peak resident set size (`wait4`'s `ru_maxrss`, which
//! std's `wait` does not return). A child still running at the limit is killed, so a hang
//! fails the test instead of hanging it; [`measured_capped`] also kills a child whose resident
//! set grows past a cap, so that a regression fails its test without taking the memory of a
//! machine that others share.
//!
//! A child's `ru_maxrss` starts from the memory of the process it was forked from: the kernel
//! counts the pages it inherits at the fork (the whole test process with `posix_spawn`). All
//! integration tests share one process whose memory holds what every running test holds
//! (a hostile fake server's buffers, tens of MB), so the child is not started by this process:
//! `sh` starts it in the background and exits at once, and the child, orphaned, comes back to
//! this process, a child subreaper, which reaps it with `wait4`. Its peak then starts from a
//! small shell's, whatever this process holds.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How a measured child ended.
pub struct Measured {
    /// The exit code; `None` when a signal ended it (the limit's SIGKILL among them).
    pub code: Option<i32>,
    pub elapsed: Duration,
    /// Peak resident set size, KiB (`ru_maxrss`: the child's own, see the module doc).
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

/// What `sh` runs: the command (`$@`) in the background, its pid written to the file `$0`.
/// A background command of a non-interactive shell ignores SIGINT and SIGQUIT; `env` gives
/// them back their default, as the test process would have passed them.
const LAUNCH: &str = r#"env --default-signal=INT,QUIT "$@" & echo $! >"$0""#;

/// Makes this process the reaper of its orphaned descendants, so that a child whose starter
/// exited is ours to wait for.
fn become_subreaper() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: sets a flag of this process; no memory is passed.
        let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) };
        assert_eq!(rc, 0, "prctl: {}", std::io::Error::last_os_error());
    });
}

/// [`measured`], and killed as soon as its resident set exceeds `rss_cap_kib` (checked every
/// 20 ms).
pub fn measured_capped(cmd: Command, limit: Duration, rss_cap_kib: Option<i64>) -> Measured {
    become_subreaper();
    let pid_file = tempfile::NamedTempFile::new().expect("a file for the child's pid");
    let mut launcher = Command::new("sh");
    launcher
        .args(["-c", LAUNCH])
        .arg(pid_file.path())
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => launcher.env(key, value),
            None => launcher.env_remove(key),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        launcher.current_dir(dir);
    }
    let start = Instant::now();
    let mut sh = launcher.spawn().expect("spawn sh");
    let collect = |mut from: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = from.read_to_string(&mut s);
            s
        })
    };
    // The child writes into the same pipes; they end when it does.
    let stdout = collect(Box::new(sh.stdout.take().unwrap()));
    let stderr = collect(Box::new(sh.stderr.take().unwrap()));
    let started = sh.wait().expect("wait for sh");
    assert!(started.success(), "sh could not start the child: {started}");
    // sh has exited: the child is ours now (reparented before sh's exit was reported).
    let pid: libc::pid_t = std::fs::read_to_string(pid_file.path())
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .expect("the child's pid from sh");
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
    Measured {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        elapsed,
        max_rss_kib: usage.ru_maxrss,
        hwm_kib: hwm.load(std::sync::atomic::Ordering::SeqCst),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}
