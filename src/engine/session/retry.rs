//! What a worker does when a statement of its event fails: one policy for the built-in OLTP
//! engine and custom workloads (sysbench's `--mysql-ignore-errors` semantics, made correct and
//! bounded).
//!
//! In order:
//! 1. **The step is stopping** ([`Scope::stopping`]): whatever the error, it is the stop's
//!    doing (a refused statement, a statement cancelled on the server); the worker leaves the
//!    event, uncounted, without retrying or failing the step.
//! 2. **The connection is lost**: the caller reconnects (bounded by its reconnect limit) and
//!    re-runs the event, as sysbench does.
//! 3. **An ignored code** (`ignore_errors`): the error is counted, under its code, and the
//!    event re-runs, after a `ROLLBACK` of whatever transaction is open on the connection,
//!    *whoever opened it*: a custom transaction that sends its own `START TRANSACTION` with
//!    `autocommit = true` would otherwise re-run inside the half-done transaction and commit
//!    it (a lock wait timeout, MySQL's 1205, rolls back only the statement). The connection
//!    says when it knows no transaction is open ([`Connection::in_transaction`]); otherwise
//!    the `ROLLBACK` is sent (harmless without a transaction on MySQL and PostgreSQL).
//!    After `max_retries` consecutive re-runs of one event, and at least [`MIN_RETRY_SPAN`] of
//!    them, the error is fatal like any other: an ignored error that always recurs (a
//!    duplicate key) would otherwise spin for ever. The time floor keeps legitimate contention
//!    alive: a writer re-running at once on SQLite's `SQLITE_BUSY` (`busy_timeout = 0`) fails
//!    thousands of times in a few milliseconds while another holds the lock, then gets in.
//! 4. **Anything else** is fatal: the caller names the workload, statement and values.
//!
//! Errors are also counted by code ([`ErrorCodes`]) for results.csv's `error_codes`: a step
//! with 40 errors reads differently when they are 40 deadlocks than when they are 40 lock
//! wait timeouts.

use std::time::{Duration, Instant};

use crate::db::interrupt::Scope;
use crate::db::{Connection, ErrKind, IgnoreErrors, SqlError};

/// The shortest time an event re-runs before `max_retries` can fail it (see the module doc).
pub const MIN_RETRY_SPAN: Duration = Duration::from_secs(1);

pub use crate::engine::config::DEFAULT_MAX_RETRIES;

/// What to do after a failed statement.
#[derive(Debug, PartialEq, Eq)]
pub enum OnError {
    /// The step is stopping: leave the event (uncounted) and end the worker.
    Stop,
    /// The connection is lost: reconnect, count a reconnect, re-run the event.
    Reconnect,
    /// Ignored and rolled back: re-run the event.
    Retry,
    /// Fail the step, with this much said about why (empty for an error that is not
    /// ignored: the caller's message says it all).
    Fatal(String),
}

/// Errors by code, in the order first seen (a handful of codes at most).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorCodes(pub Vec<(String, u64)>);

impl ErrorCodes {
    /// Counts one error of `code` (`""`: an error of the client without a server code).
    pub fn count(&mut self, code: &str) {
        self.add(code, 1);
    }

    fn add(&mut self, code: &str, n: u64) {
        match self.0.iter_mut().find(|(c, _)| c == code) {
            Some((_, k)) => *k = k.saturating_add(n),
            None => self.0.push((code.to_string(), n)),
        }
    }

    /// Adds `other`'s counts.
    pub fn absorb(&mut self, other: &ErrorCodes) {
        for (code, n) in &other.0 {
            self.add(code, *n);
        }
    }

    /// These counts less `base`'s (a period's counts from running totals); codes left at 0
    /// are dropped.
    pub fn minus(&self, base: &ErrorCodes) -> ErrorCodes {
        let before = |code: &str| base.0.iter().find(|(c, _)| c == code).map_or(0, |p| p.1);
        ErrorCodes(
            self.0
                .iter()
                .map(|(c, n)| (c.clone(), n.saturating_sub(before(c))))
                .filter(|(_, n)| *n > 0)
                .collect(),
        )
    }

    /// Whether no error was counted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// results.csv's `error_codes` cell: `code:count` pairs by count, largest first, `;`
    /// between them (`1213:40;1205:3`); a client error without a code is `client`.
    pub fn cell(&self) -> String {
        let mut pairs: Vec<(&str, u64)> = self
            .0
            .iter()
            .map(|(code, n)| {
                (
                    if code.is_empty() {
                        "client"
                    } else {
                        code.as_str()
                    },
                    *n,
                )
            })
            .collect();
        pairs.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        pairs
            .iter()
            .map(|(code, n)| format!("{code}:{n}"))
            .collect::<Vec<_>>()
            .join(";")
    }

    /// Parses [`ErrorCodes::cell`]'s text (an empty cell is no error).
    pub fn parse(cell: &str) -> Option<ErrorCodes> {
        let mut codes = ErrorCodes::default();
        for pair in cell.split(';').filter(|p| !p.is_empty()) {
            let (code, n) = pair.rsplit_once(':')?;
            let code = if code == "client" { "" } else { code };
            codes.add(code, n.parse().ok()?);
        }
        Some(codes)
    }
}

/// One worker's error policy.
#[derive(Debug)]
pub struct Retries {
    /// `max_retries`: re-runs of one event allowed after ignored errors (0: no limit).
    limit: u64,
    /// The least time those re-runs take before the limit applies ([`MIN_RETRY_SPAN`]).
    span: Duration,
    /// Re-runs of the event under way, and when its first ignored error came.
    consecutive: u64,
    since: Option<Instant>,
}

impl Retries {
    pub fn new(limit: u64) -> Retries {
        Retries::with_span(limit, MIN_RETRY_SPAN)
    }

    /// [`Retries::new`] with another time floor (tests).
    pub fn with_span(limit: u64, span: Duration) -> Retries {
        Retries {
            limit,
            span,
            consecutive: 0,
            since: None,
        }
    }

    /// Whether `consecutive` re-runs, begun at `since`, are past `limit` (0: no limit) and
    /// `span`: the one rule for every engine (the Lua prelude's loop asks it through the FFI).
    pub fn exhausted(limit: u64, span: Duration, consecutive: u64, since: Instant) -> bool {
        limit > 0 && consecutive > limit && since.elapsed() >= span
    }

    /// The event ended (committed, rolled back on purpose, or failed): the next one starts
    /// with a fresh count of re-runs.
    #[inline]
    pub fn event_done(&mut self) {
        self.consecutive = 0;
        self.since = None;
    }

    /// Decides what follows `e` (see the module doc); `count` is called with the code of an
    /// error that counts (not a stop's, not a lost connection's). For an ignored error,
    /// `conn`'s open transaction is rolled back before [`OnError::Retry`] is returned.
    pub fn on_error(
        &mut self,
        e: &SqlError,
        ignore: &IgnoreErrors,
        stop: &Scope,
        conn: Option<&mut (dyn Connection + '_)>,
        count: impl FnOnce(&str),
    ) -> OnError {
        if stop.stopping() {
            return OnError::Stop;
        }
        if e.kind == ErrKind::Lost {
            return OnError::Reconnect;
        }
        count(&e.code);
        if !ignore.contains(&e.code) {
            return OnError::Fatal(String::new());
        }
        self.consecutive += 1;
        let since = *self.since.get_or_insert_with(Instant::now);
        if Retries::exhausted(self.limit, self.span, self.consecutive, since) {
            return OnError::Fatal(format!(
                "the event failed {} times in a row in {:.1} s with ignored errors \
                 (max_retries = {}): an error that recurs on every re-run (a duplicate key?) \
                 is not a transient one: take its code out of ignore_errors, fix the \
                 workload, or raise max_retries (0: no limit)",
                self.consecutive,
                since.elapsed().as_secs_f64(),
                self.limit
            ));
        }
        if let Some(conn) = conn
            && conn.in_transaction() != Some(false)
        {
            // A failed ROLLBACK surfaces on the re-run's first statement.
            let _ = conn.query("ROLLBACK");
        }
        OnError::Retry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_spec_has_the_default() {
        let spec = crate::engine::config::GENERAL
            .iter()
            .find(|o| o.name == "max_retries")
            .expect("max_retries is a general option");
        assert_eq!(spec.default, Some(DEFAULT_MAX_RETRIES.to_string().as_str()));
    }

    #[test]
    fn codes_count_and_print_largest_first_and_parse_back() {
        let mut c = ErrorCodes::default();
        for code in ["1205", "1213", "1213", "", "1213"] {
            c.count(code);
        }
        assert_eq!(c.cell(), "1213:3;1205:1;client:1");
        assert_eq!(ErrorCodes::parse(&c.cell()).unwrap().cell(), c.cell());
        let mut d = ErrorCodes::default();
        d.count("1205");
        c.absorb(&d);
        assert_eq!(c.cell(), "1213:3;1205:2;client:1");
        assert_eq!(c.minus(&d).cell(), "1213:3;1205:1;client:1");
        assert!(c.minus(&c).is_empty());
        assert_eq!(ErrorCodes::parse("").unwrap(), ErrorCodes::default());
        assert!(ErrorCodes::parse("1213").is_none());
    }

    #[test]
    fn a_stop_wins_then_lost_then_ignored_codes_up_to_the_limit() {
        let stop = Scope::new();
        let ignore = IgnoreErrors::Codes(vec!["1213".into()]);
        let mut r = Retries::with_span(2, Duration::ZERO);
        let mut codes = ErrorCodes::default();
        let deadlock = SqlError::new("1213", "deadlock", ErrKind::Other);
        let lost = SqlError::new("2013", "lost", ErrKind::Lost);
        let other = SqlError::new("1064", "syntax", ErrKind::Other);
        let mut on = |r: &mut Retries, e: &SqlError, stop: &Scope| {
            r.on_error(e, &ignore, stop, None, |c| codes.count(c))
        };
        assert_eq!(on(&mut r, &lost, &stop), OnError::Reconnect);
        assert_eq!(on(&mut r, &deadlock, &stop), OnError::Retry);
        assert_eq!(on(&mut r, &deadlock, &stop), OnError::Retry);
        assert!(matches!(
            on(&mut r, &deadlock, &stop),
            OnError::Fatal(m) if m.contains("3 times in a row in") && m.contains("max_retries = 2")
        ));
        r.event_done();
        assert_eq!(on(&mut r, &deadlock, &stop), OnError::Retry);
        assert_eq!(on(&mut r, &other, &stop), OnError::Fatal(String::new()));
        stop.stop();
        assert_eq!(on(&mut r, &other, &stop), OnError::Stop);
        let mut unlimited = Retries::new(0);
        let going = Scope::new();
        for _ in 0..10_000 {
            assert_eq!(on(&mut unlimited, &deadlock, &going), OnError::Retry);
        }
        assert_eq!(
            codes.cell(),
            "1213:10004;1064:1",
            "neither a stop's nor a lost connection's error counts"
        );
    }

    #[test]
    fn the_limit_waits_for_the_time_floor() {
        let stop = Scope::new();
        let ignore = IgnoreErrors::Codes(vec!["SQLITE_BUSY".into()]);
        let busy = SqlError::new("SQLITE_BUSY", "database is locked", ErrKind::Other);
        let mut r = Retries::with_span(3, Duration::from_millis(200));
        let t = Instant::now();
        let fatal = loop {
            match r.on_error(&busy, &ignore, &stop, None, |_| {}) {
                OnError::Retry => continue,
                other => break other,
            }
        };
        assert!(matches!(fatal, OnError::Fatal(_)), "{fatal:?}");
        assert!(
            t.elapsed() >= Duration::from_millis(200),
            "{:?}",
            t.elapsed()
        );
        assert!(r.consecutive > 3);
    }
}
