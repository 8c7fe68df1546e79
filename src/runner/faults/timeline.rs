//! What a run step did around its faults, and the figures of each fault (#30): the collector's
//! live samples, every [`TICK`] of the measured part, become a series of ticks (transactions and
//! failures so far) and of 1-second windows (their p99), and [`Timeline::figures`] reads one
//! fault's error window, first success, p99 recovery and lost transactions from them.
//!
//! Shape, and why:
//! * Everything comes from the live samples the driver's collector already takes ([`TICK`]
//!   apart while the step has faults), on the collector thread: the workers' hot path is
//!   untouched. A tick keeps three numbers; a window keeps its p99, and only the last
//!   [`REFERENCE_S`] windows keep their latency buckets, for the reference taken when a fault
//!   fires ([`Timeline::fired`]): a long step costs a few bytes a tick, not a histogram.
//! * A tick *fails* when it saw a lost connection (`reconnects`, counted when the connection
//!   is lost) or more ignored errors (`errors`) than the step had before the fault: above the
//!   reference's rate by more than 4 standard deviations of a Poisson count (any error at all
//!   when there were none before, or without a reference). A workload whose deadlocks or
//!   duplicate keys are ignored all along (a sysbench Lua script with `ignore_errors`) thus
//!   does not look failed from start to end. A *success* is a finished transaction (an
//!   event). Times are those of the ticks that saw them, so every figure is exact to a tick
//!   (0.1 s).
//! * The windows are 1 s long and start at the first fault's `at` (plus whole seconds), so a
//!   fault fired on time begins a window; they are judged against the p99 of the (at most)
//!   [`REFERENCE_S`] whole windows before the fault, merged (after the previous fault only).
//!
//! The figures of a fault fired at `f` (seconds from the start of the measured part):
//! * first error: the first tick after `f` that saw a failure, as seconds from `f`.
//! * error window: from the first tick after `f` that saw a failure to the later of the last
//!   failure of that burst (a burst ends once a success was seen and a second passed without a
//!   failure) and the first success after the first failure; `0` when nothing failed; to the
//!   end of the step when nothing succeeded again.
//! * first success: the first tick after the first failure that saw a transaction finish and
//!   no failure (after `f` when nothing failed), as seconds from `f`.
//! * p99 recovered: from `f` to the start of the first [`STEADY_WINDOWS`] windows in a row,
//!   none before the window where the error window ends, whose p99 is within the tolerance of
//!   the reference (a window where nothing finished is not), and never before the error window
//!   ends: a window's p99 is that of the transactions that finished, and an outage shorter than
//!   a window leaves it alone (the few transactions it held up are under 1 % of them). `0`
//!   when the fault moved nothing; none when the step ended first.
//! * lost transactions: the reference throughput times the recovery period (to the end of the
//!   step if the p99 never recovered) less the transactions finished in it, at least 0.

use std::collections::VecDeque;
use std::time::Duration;

use crate::stats::{BUCKETS, log_histogram};

/// How often the collector samples a step with faults.
pub const TICK: Duration = Duration::from_millis(100);

/// At most this many seconds before a fault make its reference.
pub const REFERENCE_S: usize = 10;

/// Windows in a row within the tolerance that make the p99 recovered.
pub const STEADY_WINDOWS: usize = 3;

/// Windows the ring keeps beyond the reference: a fault is seen fired at the tick after it.
const RING_SLACK: usize = 2;

/// One live sample: seconds from the start of the measured part, transactions (events),
/// ignored errors and reconnects so far.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tick {
    pub t: f64,
    pub events: u64,
    pub errors: u64,
    pub reconnects: u64,
}

/// What the step did before a fault, its yardstick.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reference {
    /// The p99 of the reference windows merged, ms.
    pub p99_ms: f64,
    /// Transactions per second over them.
    pub tps: f64,
    /// Ignored errors per second over them.
    pub errors_per_s: f64,
}

/// One fault's figures (see the module doc); `None`: could not be measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Figures {
    /// From the fault to the first failure after it (none: nothing failed).
    pub first_error_s: Option<f64>,
    pub error_window_s: Option<f64>,
    pub first_ok_s: Option<f64>,
    pub p99_recovered_s: Option<f64>,
    pub lost_txn: Option<f64>,
}

/// The series of a step with faults.
pub struct Timeline {
    /// Where window 0 starts, seconds from the start of the measured part (≤ 0).
    w0: f64,
    ticks: Vec<Tick>,
    /// The p99 (ms) of every closed window; `None`: nothing finished in it.
    p99: Vec<Option<f64>>,
    /// The latency buckets of the window being filled.
    buckets: Vec<u64>,
    /// The latest closed windows' buckets, oldest first, with their index.
    ring: VecDeque<(usize, Vec<u64>)>,
}

impl Timeline {
    /// A timeline whose windows start at `first_at` plus whole seconds.
    pub fn new(first_at: f64) -> Timeline {
        let frac = first_at.fract();
        Timeline {
            w0: if frac > 0.0 { frac - 1.0 } else { 0.0 },
            ticks: vec![Tick {
                t: 0.0,
                events: 0,
                errors: 0,
                reconnects: 0,
            }],
            p99: Vec::new(),
            buckets: vec![0; BUCKETS],
            ring: VecDeque::new(),
        }
    }

    /// The window that holds time `t`.
    fn window(&self, t: f64) -> usize {
        (t - self.w0).max(0.0).floor() as usize
    }

    /// The window of a tick at `t`, which covers the tick before it up to `t`: a tick on a
    /// window's start belongs to the window before.
    fn tick_window(&self, t: f64) -> usize {
        self.window(t - 1e-9)
    }

    /// Where window `k` starts.
    fn start(&self, k: usize) -> f64 {
        (self.w0 + k as f64).max(0.0)
    }

    /// A live sample at `t`: the totals so far and the latency buckets since the previous one.
    pub fn tick(&mut self, tick: Tick, latency: &[u64]) {
        let k = self.tick_window(tick.t);
        while self.p99.len() < k {
            self.close();
        }
        for (b, l) in self.buckets.iter_mut().zip(latency) {
            *b += l;
        }
        self.ticks.push(tick);
    }

    /// Closes the window being filled.
    fn close(&mut self) {
        let done = std::mem::replace(&mut self.buckets, vec![0; BUCKETS]);
        let any = done.iter().any(|&c| c > 0);
        self.p99
            .push(any.then(|| log_histogram::percentile_ms(&done, 99.0)));
        self.ring.push_back((self.p99.len() - 1, done));
        while self.ring.len() > REFERENCE_S + RING_SLACK {
            self.ring.pop_front();
        }
    }

    /// A fault fired at `f`: its reference, from the whole windows before it and not before
    /// `not_before` (the previous fault), at most [`REFERENCE_S`] of them; `None` without a
    /// second of them or without a transaction in them. Called at the first tick after `f`.
    pub fn fired(&self, f: f64, not_before: f64) -> Option<Reference> {
        let k0 = self.window(f);
        // The first window that starts at or after `not_before`.
        let after = self.window(not_before);
        let after = after + usize::from(self.start(after) < not_before);
        let first = k0.saturating_sub(REFERENCE_S).max(after);
        let mut merged = vec![0u64; BUCKETS];
        for (_, b) in self.ring.iter().filter(|(k, _)| (first..k0).contains(k)) {
            for (m, c) in merged.iter_mut().zip(b) {
                *m += c;
            }
        }
        let (from, to) = (self.start(first), self.start(k0));
        if to - from < 1.0 - 1e-9 || merged.iter().all(|&c| c == 0) {
            return None;
        }
        let per_s = |count: fn(&Tick) -> u64| {
            (self.count_at(to, count) - self.count_at(from, count)) / (to - from)
        };
        Some(Reference {
            p99_ms: log_histogram::percentile_ms(&merged, 99.0),
            tps: per_s(|x| x.events),
            errors_per_s: per_s(|x| x.errors),
        })
    }

    /// Transactions finished by `t`.
    fn events_at(&self, t: f64) -> f64 {
        self.count_at(t, |x| x.events)
    }

    /// The total `count` of the ticks at `t`, interpolated between the ticks around it.
    fn count_at(&self, t: f64, count: fn(&Tick) -> u64) -> f64 {
        let after = self.ticks.partition_point(|x| x.t < t);
        match (
            after.checked_sub(1).map(|i| self.ticks[i]),
            self.ticks.get(after),
        ) {
            (Some(a), Some(b)) if b.t > a.t => {
                let (ca, cb) = (count(&a) as f64, count(b) as f64);
                ca + (cb - ca) * (t - a.t) / (b.t - a.t)
            }
            (_, Some(b)) => count(b) as f64,
            (Some(a), None) => count(&a) as f64,
            (None, None) => 0.0,
        }
    }

    /// The end of the measured part as sampled: the last tick.
    pub fn end(&self) -> f64 {
        self.ticks.last().map_or(0.0, |t| t.t)
    }

    /// The figures of a fault fired at `f`, judged against `reference` with `tolerance_pct`.
    pub fn figures(&self, f: f64, reference: Option<Reference>, tolerance_pct: f64) -> Figures {
        let ticks = &self.ticks;
        let end = self.end();
        let background = reference.map_or(0.0, |r| r.errors_per_s);
        let failed = |i: usize| {
            let (a, b) = (&ticks[i - 1], &ticks[i]);
            // Errors expected in this tick at the rate before the fault (Poisson: variance =
            // mean), and the count above which they are the fault's.
            let expected = background * (b.t - a.t);
            b.reconnects > a.reconnects
                || (b.errors - a.errors) as f64 > expected + 4.0 * expected.sqrt()
        };
        let finished = |i: usize| ticks[i].events > ticks[i - 1].events;
        // The first tick that can hold what the fault did.
        let from = ticks.partition_point(|x| x.t <= f).max(1);
        let first_failure = (from..ticks.len()).find(|&i| failed(i));
        let first_ok = match first_failure {
            Some(a) => (a + 1..ticks.len()).find(|&i| finished(i) && !failed(i)),
            None => (from..ticks.len()).find(|&i| finished(i)),
        };
        let error_end = first_failure.map(|a| match first_ok {
            None => end,
            Some(ok) => {
                // The burst's last failure: it ends once a success was seen and a second
                // passed without one.
                let mut last = ticks[a].t;
                for (i, tick) in ticks.iter().enumerate().skip(a + 1) {
                    if failed(i) {
                        last = tick.t;
                    } else if i >= ok && tick.t - last >= 1.0 - 1e-9 {
                        break;
                    }
                }
                last.max(ticks[ok].t)
            }
        });
        let error_window_s = Some(match (first_failure, error_end) {
            (Some(a), Some(e)) => e - ticks[a].t,
            _ => 0.0,
        });
        let first_ok_s = first_ok.map(|i| ticks[i].t - f);
        let p99_recovered_s = reference.and_then(|r| {
            let limit = r.p99_ms * (1.0 + tolerance_pct / 100.0);
            let within = |k: usize| self.p99[k].is_some_and(|p| p <= limit);
            let k0 = match error_end {
                Some(e) => self.tick_window(e).max(self.window(f)),
                None => self.window(f),
            };
            (k0..=self.p99.len().saturating_sub(STEADY_WINDOWS))
                .find(|&k| (k..k + STEADY_WINDOWS).all(within))
                .map(|k| {
                    (self.start(k) - f)
                        .max(error_end.map_or(0.0, |e| e - f))
                        .max(0.0)
                })
        });
        let lost_txn = reference.map(|r| {
            let until = p99_recovered_s.map_or(end, |s| f + s);
            let done = self.events_at(until) - self.events_at(f);
            (r.tps * (until - f) - done).max(0.0).round()
        });
        Figures {
            first_error_s: first_failure.map(|a| ticks[a].t - f),
            error_window_s,
            first_ok_s,
            p99_recovered_s,
            lost_txn,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bucket holding latency `ms`.
    fn bucket(ms: f64) -> usize {
        (0..BUCKETS)
            .find(|&i| log_histogram::bucket_value_ms(i) >= ms)
            .unwrap()
    }

    /// A timeline of 0.1 s ticks to `secs`: `rate(t)` transactions per tick at latency
    /// `lat(t)` ms, `fail(t)` lost connections per tick; with the reference of a fault fired
    /// at `fire`,
    /// taken at the first tick after it as the step's observer does.
    fn series(
        fire: f64,
        secs: f64,
        rate: impl Fn(f64) -> u64,
        lat: impl Fn(f64) -> f64,
        fail: impl Fn(f64) -> u64,
    ) -> (Timeline, Option<Reference>) {
        series_with_errors(fire, secs, rate, lat, fail, |_| 0)
    }

    /// [`series`] with `errs(t)` ignored errors per tick.
    fn series_with_errors(
        fire: f64,
        secs: f64,
        rate: impl Fn(f64) -> u64,
        lat: impl Fn(f64) -> f64,
        fail: impl Fn(f64) -> u64,
        errs: impl Fn(f64) -> u64,
    ) -> (Timeline, Option<Reference>) {
        let mut tl = Timeline::new(fire);
        let (mut events, mut reconnects, mut errors) = (0, 0, 0);
        let mut reference = None;
        let mut t = 0.0;
        while t < secs - 1e-9 {
            t = ((t + 0.1) * 10.0).round() / 10.0;
            let n = rate(t);
            events += n;
            reconnects += fail(t);
            errors += errs(t);
            let mut b = vec![0u64; BUCKETS];
            b[bucket(lat(t))] += n;
            tl.tick(
                Tick {
                    t,
                    events,
                    errors,
                    reconnects,
                },
                &b,
            );
            if t > fire && reference.is_none() {
                reference = Some(tl.fired(fire, 0.0));
            }
        }
        (tl, reference.flatten())
    }

    #[test]
    fn a_restart_has_an_error_window_a_first_success_a_recovery_and_a_cost() {
        // 100 tps at 2 ms; the server is down from 6.05 to 8.0 (every worker fails at once,
        // nothing finishes), then 2 s of 20 ms (cold caches), then 2 ms again.
        let down = |t: f64| t > 6.0 && t <= 8.0;
        let (tl, r) = series(
            6.0,
            20.0,
            |t| if down(t) { 0 } else { 10 },
            |t| if t > 8.0 && t <= 10.0 { 20.0 } else { 2.0 },
            |t| u64::from((t - 6.1).abs() < 1e-9) * 4,
        );
        let r = r.unwrap();
        assert!((r.tps - 100.0).abs() < 1e-6, "{r:?}");
        assert!((r.p99_ms - 2.0).abs() < 0.1, "{r:?}");
        let f = tl.figures(6.0, Some(r), 20.0);
        // Failures seen at 6.1; the first tick with a success and no failure: 8.1.
        assert!((f.first_error_s.unwrap() - 0.1).abs() < 1e-9, "{f:?}");
        assert!((f.error_window_s.unwrap() - 2.0).abs() < 1e-9, "{f:?}");
        assert!((f.first_ok_s.unwrap() - 2.1).abs() < 1e-9, "{f:?}");
        // Windows (8,9] and (9,10] are slow; (10,11] and on are back.
        assert!((f.p99_recovered_s.unwrap() - 4.0).abs() < 1e-9, "{f:?}");
        // 4 s at 100 tps expected, 2 s × 100 finished.
        assert!((f.lost_txn.unwrap() - 200.0).abs() < 1.0, "{f:?}");
    }

    #[test]
    fn an_outage_shorter_than_a_window_still_counts_until_service_is_back() {
        // Down from 6.0 to 6.3 only: every window's p99 stays at 2 ms.
        let (tl, r) = series(
            6.0,
            15.0,
            |t| if t > 6.0 && t <= 6.3 { 0 } else { 10 },
            |_| 2.0,
            |t| u64::from((t - 6.1).abs() < 1e-9) * 4,
        );
        let f = tl.figures(6.0, r, 20.0);
        assert!((f.error_window_s.unwrap() - 0.3).abs() < 1e-9, "{f:?}");
        assert!((f.first_ok_s.unwrap() - 0.4).abs() < 1e-9, "{f:?}");
        assert!((f.p99_recovered_s.unwrap() - 0.4).abs() < 1e-9, "{f:?}");
        // 0.4 s at 100 tps expected, 10 finished (at 6.4).
        assert!((f.lost_txn.unwrap() - 30.0).abs() < 1.0, "{f:?}");
    }

    #[test]
    fn errors_at_the_rate_before_the_fault_are_not_the_faults() {
        // 5 ignored errors a tick all along (50/s); the connections are lost at 6.1 and the
        // server is back at 8.1; a burst of 40 errors a tick from 12.1 to 12.3 (a second
        // fault's doing) is well above the background.
        let down = |t: f64| t > 6.0 && t <= 8.0;
        let (tl, r) = series_with_errors(
            6.0,
            20.0,
            |t| if down(t) { 0 } else { 10 },
            |_| 2.0,
            |t| u64::from((t - 6.1).abs() < 1e-9) * 4,
            |t| match t {
                _ if down(t) => 0,
                _ if t > 12.0 && t <= 12.3 => 40,
                _ => 5,
            },
        );
        let r = r.unwrap();
        assert!((r.errors_per_s - 50.0).abs() < 1e-6, "{r:?}");
        let f = tl.figures(6.0, Some(r), 20.0);
        assert!((f.error_window_s.unwrap() - 2.0).abs() < 1e-9, "{f:?}");
        assert!((f.first_ok_s.unwrap() - 2.1).abs() < 1e-9, "{f:?}");
        let g = tl.figures(12.0, Some(r), 20.0);
        assert!((g.first_error_s.unwrap() - 0.1).abs() < 1e-9, "{g:?}");
        assert!((g.error_window_s.unwrap() - 0.3).abs() < 1e-9, "{g:?}");
    }

    #[test]
    fn a_harmless_fault_measures_nothing_lost() {
        let (tl, r) = series(3.5, 12.0, |_| 10, |_| 2.0, |_| 0);
        let f = tl.figures(3.5, r, 20.0);
        assert_eq!((f.first_error_s, f.error_window_s), (None, Some(0.0)));
        assert!(f.first_ok_s.unwrap() <= 0.1 + 1e-9, "{f:?}");
        assert_eq!(f.p99_recovered_s, Some(0.0));
        assert_eq!(f.lost_txn, Some(0.0));
    }

    #[test]
    fn windows_start_at_the_first_faults_at() {
        let (tl, _) = series(3.5, 6.0, |_| 1, |_| 2.0, |_| 0);
        // (−0.5, 0.5], (0.5, 1.5] … (4.5, 5.5]; the window of 5.6…6.0 is still open.
        assert_eq!(tl.p99.len(), 6);
        assert_eq!(tl.window(3.5), 4);
        assert!((tl.start(4) - 3.5).abs() < 1e-9);
        assert_eq!(tl.start(0), 0.0);
    }

    #[test]
    fn no_reference_without_a_whole_second_before_the_fault() {
        let (tl, r) = series(1.0, 5.0, |_| 10, |_| 2.0, |_| 0);
        assert!(r.is_some());
        // A second fault at 1.5 s after one at 1.0: half a second between them.
        assert!(tl.fired(1.5, 1.0).is_none());
        let f = tl.figures(1.5, None, 20.0);
        assert_eq!((f.p99_recovered_s, f.lost_txn), (None, None));
        assert_eq!(f.error_window_s, Some(0.0));
    }

    #[test]
    fn a_server_that_never_comes_back_has_an_open_window_and_no_recovery() {
        let (tl, r) = series(
            4.0,
            10.0,
            |t| u64::from(t <= 4.0) * 10,
            |_| 2.0,
            |t| u64::from((t - 4.2).abs() < 1e-9),
        );
        let f = tl.figures(4.0, r, 20.0);
        assert!((f.error_window_s.unwrap() - 5.8).abs() < 1e-9, "{f:?}");
        assert_eq!((f.first_ok_s, f.p99_recovered_s), (None, None));
        // 6 s at 100 tps, nothing finished.
        assert!((f.lost_txn.unwrap() - 600.0).abs() < 1.0, "{f:?}");
    }

    #[test]
    fn sporadic_failures_extend_the_window_until_a_quiet_second() {
        // Failures at 5.1, 5.5 and 6.2 (successes all along), none after.
        let at = [5.1, 5.5, 6.2];
        let (tl, r) = series(
            5.0,
            12.0,
            |_| 10,
            |_| 2.0,
            |t| u64::from(at.iter().any(|a| (t - a).abs() < 1e-9)),
        );
        let f = tl.figures(5.0, r, 20.0);
        assert!((f.error_window_s.unwrap() - 1.1).abs() < 1e-9, "{f:?}");
        assert!((f.first_ok_s.unwrap() - 0.2).abs() < 1e-9, "{f:?}");
    }
}
