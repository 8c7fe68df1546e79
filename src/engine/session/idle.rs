//! `idle_connections = N` (#30): N connections opened before a run's measured part, held idle
//! through it next to the workers' busy ones, and checked alive when the workers are done — how
//! a pooler or an application server with a large pool really loads a server (sysbench #73).
//!
//! Shape, and why:
//! * **Holder threads own the connections.** A [`Connection`] is owned by the thread that opened
//!   it (the trait is not `Send`), so a few holder threads (at most [`HOLDERS`]) open their share
//!   each, several at a time, so that 5,000 opens take seconds, not minutes, then sleep until
//!   the end of the step, when each answers `SELECT 1` on its connections and closes them. The
//!   workers never see them.
//! * **A failure to open fails the step**, after the connections already open are closed,
//!   naming the server's limit when the server said what it was (MySQL's 1040, PostgreSQL's
//!   53300: `max_connections`, through the flavor's advice). Before opening anything, the
//!   server's `max_connections` is read and a step that cannot fit (threads plus idle
//!   connections) is refused with the numbers; so is one that needs more file descriptors than
//!   the process may open (the soft limit is raised to the hard one first, as most load
//!   generators do).
//! * **Stops**: the connections are registered in the process-wide interrupt scope (the
//!   setup connections' scope, [`crate::db::interrupt`]): a Ctrl-C while they are being opened
//!   stops the opening (the holders look between opens) and fails the step; a Ctrl-C during the
//!   run severs them, and the end of the step then closes them without checking them. The pool
//!   is released by the workload's `after_run`, or when it is dropped: no connection and no
//!   holder thread outlives the step.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use super::connections::IdleEnd;
use crate::db::interrupt;
use crate::db::{Connection, Connector, SqlError, Target};
use crate::engine::EngineError;
use crate::engine::config::MIN_STACK;

/// Most holder threads (each opens its share of the connections one after the other).
pub const HOLDERS: usize = 16;

/// File descriptors kept free beside two per connection (its socket and the duplicate the
/// interrupt scope keeps): results, logs, the workers' own files.
const SPARE_FDS: u64 = 256;

/// The idle connections of one step, held by their holder threads until [`IdlePool::release`].
pub struct IdlePool {
    control: Arc<Control>,
    holders: Vec<JoinHandle<Held>>,
    /// Connections open.
    held: usize,
}

/// What the holders and the opener share.
#[derive(Default)]
struct Control {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    opened: usize,
    /// Holders done opening (all of their share, or stopped early).
    ready: usize,
    /// The first failure to open: the connection's number and the error.
    failed: Option<(usize, SqlError)>,
    /// Set at the end: `Some(true)` checks the connections before closing them.
    release: Option<bool>,
}

impl Control {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set(&self, f: impl FnOnce(&mut State)) {
        f(&mut self.lock());
        self.changed.notify_all();
    }

    /// Whether holders should stop opening.
    fn stop_opening(&self) -> bool {
        let s = self.lock();
        s.failed.is_some() || s.release.is_some() || interrupt::tripped()
    }

    /// Waits for the end of the step: whether to check the connections.
    fn wait_release(&self) -> bool {
        let mut s = self.lock();
        loop {
            if let Some(check) = s.release {
                return check;
            }
            s = self.changed.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// What one holder's connections said at the end.
#[derive(Clone, Copy, Debug, Default)]
struct Held {
    dead: usize,
    /// The check was skipped or cut short (the step was stopped).
    unchecked: bool,
}

impl IdlePool {
    /// Opens `n` idle connections to `target`, spread over its endpoints as workers are,
    /// after checking that the whole step (`threads` workers and `idle_total` idle connections
    /// over every client) fits the server's `max_connections` and the process's file
    /// descriptors.
    pub fn open(
        target: &Target,
        n: usize,
        threads: usize,
        idle_total: usize,
    ) -> Result<IdlePool, EngineError> {
        let connector = Arc::new(Connector::new(target.clone()));
        fit_fd_limit(n, threads)?;
        fit_max_connections(&connector, threads, idle_total)?;
        let control = Arc::new(Control::default());
        let mut pool = IdlePool {
            control: Arc::clone(&control),
            holders: Vec::new(),
            held: 0,
        };
        let holders = n.clamp(1, HOLDERS);
        for h in 0..holders {
            let (connector, control) = (Arc::clone(&connector), Arc::clone(&control));
            let spawned = std::thread::Builder::new()
                .name(format!("sbsuite-idle-{h}"))
                .stack_size(MIN_STACK)
                .spawn(move || hold(&connector, &control, (h..n).step_by(holders)));
            match spawned {
                Ok(handle) => pool.holders.push(handle),
                Err(e) => {
                    pool.release(false);
                    return Err(EngineError::io(
                        "could not start the threads that hold the idle connections",
                        e,
                    ));
                }
            }
        }
        let (opened, failed, stopped) = {
            let mut s = control.lock();
            while s.ready < holders {
                if interrupt::tripped() {
                    // Holders stop at their next open; the connections open are closed below.
                    s.release.get_or_insert(false);
                    control.changed.notify_all();
                }
                s = control
                    .changed
                    .wait_timeout(s, Duration::from_millis(50))
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            (s.opened, s.failed.take(), s.release.is_some())
        };
        pool.held = opened;
        if let Some((i, e)) = failed {
            pool.release(false);
            return Err(EngineError::Failed(format!(
                "idle_connections = {n}: {opened} idle connections were open when connection {} to {} failed: {}",
                i + 1,
                target.endpoint(i),
                connector.explain(&e)
            )));
        }
        if stopped || opened < n {
            pool.release(false);
            return Err(EngineError::Failed(format!(
                "the step was stopped while its idle connections were being opened ({opened} of {n} open)"
            )));
        }
        Ok(pool)
    }

    /// Ends the pool: with `check`, every connection answers `SELECT 1` first (one that does
    /// not is dead); then all are closed and the holder threads joined.
    pub fn release(&mut self, check: bool) -> IdleEnd {
        self.control.set(|s| {
            s.release.get_or_insert(check);
        });
        let mut dead = 0;
        let mut checked = check;
        for h in self.holders.drain(..) {
            // A holder that panicked closed nothing it could check: its connections dropped.
            let held = h.join().unwrap_or(Held {
                dead: 0,
                unchecked: true,
            });
            dead += held.dead;
            checked &= !held.unchecked;
        }
        IdleEnd {
            held: self.held,
            dead: checked.then_some(dead),
        }
    }
}

impl Drop for IdlePool {
    fn drop(&mut self) {
        if !self.holders.is_empty() {
            self.release(false);
        }
    }
}

/// Counts its holder as done opening when dropped, also when the holder panics, so that the
/// opener never waits for a holder that is gone.
struct Ready<'a>(&'a Control);

impl Drop for Ready<'_> {
    fn drop(&mut self) {
        self.0.set(|s| s.ready += 1);
    }
}

/// One holder: opens connections `numbers`, waits for the end of the step, checks and closes.
fn hold(connector: &Connector, control: &Control, numbers: impl Iterator<Item = usize>) -> Held {
    let ready = Ready(control);
    let mut conns: Vec<Box<dyn Connection>> = Vec::new();
    for i in numbers {
        if control.stop_opening() {
            break;
        }
        // Registered in the process-wide scope (a Ctrl-C severs it).
        match connector.connect_at(i) {
            Ok(c) => {
                conns.push(c);
                control.set(|s| s.opened += 1);
            }
            Err(e) => {
                control.set(|s| {
                    s.failed.get_or_insert((i, e));
                });
                break;
            }
        }
    }
    drop(ready);
    let check = control.wait_release();
    let mut held = Held {
        dead: 0,
        unchecked: !check,
    };
    for mut c in conns {
        if !held.unchecked {
            if interrupt::tripped() {
                held.unchecked = true;
            } else if c.query("SELECT 1").is_err() {
                held.dead += 1;
            }
        }
        c.close();
    }
    held
}

/// Refuses a step whose connections do not fit the server's `max_connections`, before any is
/// opened (a server that has no such limit, or a dry run, has nothing to check).
fn fit_max_connections(
    connector: &Connector,
    threads: usize,
    idle: usize,
) -> Result<(), EngineError> {
    let t = &connector.target;
    if t.dry_run {
        return Ok(());
    }
    let mut conn = super::connect(connector, 0)?;
    let max = t
        .driver
        .dialect()
        .max_connections(conn.as_mut())
        .map_err(|e| EngineError::Failed(format!("reading max_connections failed: {e}")))?;
    conn.close();
    let needed = threads.saturating_add(idle);
    match max {
        Some(max) if (max as usize) < needed => Err(EngineError::Failed(format!(
            "the server allows max_connections = {max}, fewer than threads = {threads} plus idle_connections = {idle}: lower them or raise max_connections on the server"
        ))),
        _ => Ok(()),
    }
}

/// Makes room for two file descriptors per connection (workers' and idle ones): raises the
/// soft limit up to the hard one when needed, or says what to change.
fn fit_fd_limit(idle: usize, threads: usize) -> Result<(), EngineError> {
    let needed = (idle as u64)
        .saturating_add(threads as u64)
        .saturating_mul(2)
        .saturating_add(SPARE_FDS);
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid out-parameter for getrlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Ok(());
    }
    if lim.rlim_cur == libc::RLIM_INFINITY || lim.rlim_cur >= needed {
        return Ok(());
    }
    if lim.rlim_max != libc::RLIM_INFINITY && lim.rlim_max < needed {
        return Err(EngineError::Failed(format!(
            "idle_connections = {idle} with threads = {threads} needs about {needed} open files, but this process may open at most {} (ulimit -Hn): raise the limit or lower idle_connections",
            lim.rlim_max
        )));
    }
    let raised = libc::rlimit {
        rlim_cur: needed.max(lim.rlim_cur),
        rlim_max: lim.rlim_max,
    };
    // SAFETY: `raised` is a valid rlimit within the hard limit.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
        return Err(EngineError::Failed(format!(
            "idle_connections = {idle} with threads = {threads} needs about {needed} open files, but this process may open {} and could not raise it (ulimit -n): {}",
            lim.rlim_cur,
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Target;

    /// SQLite connections are files of this process: the pool opens, holds, checks and closes
    /// them without a server.
    #[test]
    fn a_pool_holds_checks_and_closes_its_connections() {
        let dir = tempfile::tempdir().unwrap();
        let mut target = Target::sqlite_default();
        target.sqlite.path = dir.path().join("idle.db").display().to_string();
        let mut pool = IdlePool::open(&target, 40, 2, 40).expect("opens");
        let end = pool.release(true);
        assert_eq!(
            end,
            IdleEnd {
                held: 40,
                dead: Some(0)
            }
        );
        assert!(pool.holders.is_empty());
    }

    #[test]
    fn a_step_that_needs_more_files_than_the_hard_limit_is_refused() {
        let e = fit_fd_limit(usize::MAX / 4, 1).unwrap_err().to_string();
        assert!(
            e.contains("open files") && e.contains("idle_connections"),
            "{e}"
        );
    }
}
