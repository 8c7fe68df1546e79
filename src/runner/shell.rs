//! The shell commands the runner starts — hooks and a variant's restart command — run one way:
//! `sh -c` in a process group of their own, under a timeout, output to an anonymous file, and
//! breakable by a stop request.
//!
//! Why a process group: a hook is often a pipeline or a script that starts children
//! (`ssh host 'sleep 60'`, `sleep 60; echo`); killing `sh` alone would leave them running,
//! holding the output file and whatever they lock. So the command leads its own group and a
//! timeout or a stop request kills the whole group. The group is registered with
//! [`crate::db::interrupt`] while the command runs, so the first Ctrl-C/SIGTERM kills it at
//! once (the runner then records the stop) and the second one, which exits the process, does
//! not leave it behind. A command of its own group no longer gets the terminal's Ctrl-C
//! directly: the registry forwards it.
//!
//! What a command started in the background and left running when it ended by itself (a
//! restart command's server, a hook's monitor) is left alone; only a command still running at
//! its timeout or at a stop request has its group killed.
//!
//! Why an anonymous file and not a pipe: a chatty command could fill a pipe and block before
//! the runner reads it.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::db::interrupt::{self, Interrupter};

/// How a command ended.
#[derive(Debug)]
pub enum Ended {
    Exited(ExitStatus),
    /// It outlived its timeout and was killed with its process group.
    TimedOut,
    /// A stop request killed it with its process group.
    Interrupted,
}

/// How often a running command is checked (exit, timeout).
const POLL: Duration = Duration::from_millis(20);

/// Runs `command` with `sh -c` (stdin empty, stdout and stderr together); how it ended and
/// what it printed, or an error when it cannot start.
pub fn run(command: &str, timeout: Duration) -> Result<(Ended, Vec<u8>), String> {
    let out = tempfile::tempfile()
        .map_err(|e| format!("cannot create a file for the output of `{command}`: {e}"))?;
    let clone = || {
        out.try_clone()
            .map_err(|e| format!("cannot create a file for the output of `{command}`: {e}"))
    };
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(clone()?)
        .stderr(clone()?)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start `{command}`: {e}"))?;
    let group = child.id() as libc::pid_t;
    let killed = Arc::new(AtomicBool::new(false));
    let registration = {
        let killed = killed.clone();
        interrupt::register(Interrupter::new(move || {
            killed.store(true, Ordering::SeqCst);
            kill_group(group);
        }))
    };
    let deadline = Instant::now() + timeout;
    let ended = loop {
        match child.try_wait() {
            Ok(Some(_)) if killed.load(Ordering::SeqCst) => break Ended::Interrupted,
            Ok(Some(status)) => break Ended::Exited(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(POLL),
            Ok(None) => {
                kill_group(group);
                let _ = child.wait();
                break Ended::TimedOut;
            }
            Err(e) => {
                kill_group(group);
                let _ = child.wait();
                return Err(format!("waiting for `{command}`: {e}"));
            }
        }
    };
    drop(registration);
    // A command that ended by itself leaves what it started in the background alone: a restart
    // command starts the server that way (`mariadbd … &`), a hook a monitor (`iostat 1 > f &`).
    Ok((ended, read_back(out)))
}

/// SIGKILL to process group `group` (the command's `sh` leads it); an already empty group is
/// not an error worth reporting.
fn kill_group(group: libc::pid_t) {
    // SAFETY: kill(2) with a negative pid signals a process group; no memory is involved.
    unsafe {
        libc::kill(-group, libc::SIGKILL);
    }
}

fn read_back(mut f: std::fs::File) -> Vec<u8> {
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(0)).is_ok() {
        let _ = f.read_to_end(&mut buf);
    }
    buf
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn output_status_and_a_timeout_that_kills_the_whole_group() {
        let (ended, out) = run("echo out; echo err >&2; exit 3", Duration::from_secs(10)).unwrap();
        assert!(
            matches!(ended, Ended::Exited(s) if s.code() == Some(3)),
            "{ended:?}"
        );
        assert_eq!(String::from_utf8_lossy(&out), "out\nerr\n");
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        // A child of `sh` in the background: it must die with the group at the timeout.
        let started = Instant::now();
        let (ended, _) = run(
            &format!("sleep 60 & echo $! > {}; wait", pidfile.display()),
            Duration::from_millis(300),
        )
        .unwrap();
        assert!(matches!(ended, Ended::TimedOut), "{ended:?}");
        assert!(started.elapsed() < Duration::from_secs(20));
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            gone_within(pid, Duration::from_secs(10)),
            "sleep {pid} survived"
        );
    }

    #[test]
    fn what_a_finished_command_started_in_the_background_keeps_running() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let (ended, _) = run(
            &format!("sleep 60 >/dev/null 2>&1 & echo $! > {}", pidfile.display()),
            Duration::from_secs(10),
        )
        .unwrap();
        assert!(
            matches!(ended, Ended::Exited(s) if s.success()),
            "{ended:?}"
        );
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let alive = !gone_within(pid, Duration::from_millis(0));
        // SAFETY: kill(2) on the test's own background child, found by its pid.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
        assert!(
            alive,
            "the background daemon of a finished command was killed"
        );
    }

    /// Whether process `pid` is gone (or a zombie awaiting its reaper) within `bound`.
    pub(crate) fn gone_within(pid: i32, bound: Duration) -> bool {
        let deadline = Instant::now() + bound;
        loop {
            match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                Err(_) => return true,
                Ok(stat)
                    if stat
                        .rsplit(')')
                        .next()
                        .is_some_and(|r| r.trim_start().starts_with('Z')) =>
                {
                    return true;
                }
                Ok(_) if Instant::now() >= deadline => return false,
                Ok(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
}
