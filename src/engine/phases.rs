//! A run step's timeline of phases (#30): warm-up, then thread or rate steps and ramps, then a
//! cool-down, run by one driver over one pool of workers and measured per phase.
//!
//! Shape, and why:
//!
//! * A [`Phase`] is resolved: its threads and rates are numbers (the suite's `[[phases]]`
//!   fall back to the step's own `threads` and `rate`), so the driver never looks at options.
//! * The pool is the largest phase's threads, every worker created (connected, statements
//!   prepared) before the clock starts, as for any run. A phase with fewer threads *parks* the
//!   workers above its count: they run no event but keep their connections, so growing again
//!   costs no connect and the server sees the same sessions throughout (pgbench and sysbench
//!   cannot change their client count within a run at all).
//! * Workers find their phase from their own clock reading (which every event takes anyway)
//!   with [`Timeline::at`]: a handful of comparisons, no shared write. The collector cuts the
//!   statistics at each boundary of the measured part, as a checkpoint does.
//! * `warmup` phases form the leading part of the timeline: their total is the run's warmup
//!   (unmeasured, as `warmup_time`), the rest its time limit.
//! * A rate is Poisson arrivals at `from` per second rising (or falling) linearly to `to` over
//!   the phase; the generator draws them by thinning against the phase's larger rate, which is
//!   exact for a linear ramp (Lewis & Shedler), and restarts its draw at each boundary, which
//!   the process's memorylessness allows. A phase with rate 0 is closed-loop: its workers run
//!   back to back as a run without `rate` does.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One phase of a run step, resolved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    /// Its name (results.csv's `phase`, intervals.csv's `phase`).
    pub name: String,
    /// How long it runs.
    #[serde(with = "secs")]
    pub duration: Duration,
    /// Workers running events in it; the others of the pool are parked.
    pub threads: usize,
    /// Arrivals per second at its start; 0 with `rate_to` 0: closed loop.
    pub rate_from: f64,
    /// Arrivals per second at its end (equal to `rate_from`: a constant rate).
    pub rate_to: f64,
    /// Unmeasured (only leading phases may be).
    pub warmup: bool,
    /// Custom workloads: the transactions whose weight this phase changes, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub weights: Vec<(String, u32)>,
}

/// Durations as seconds in plan.json.
mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let v = f64::deserialize(d)?;
        Duration::try_from_secs_f64(v).map_err(serde::de::Error::custom)
    }
}

impl Phase {
    /// Whether arrivals drive this phase (a rate above 0 at some point of it).
    pub fn open_loop(&self) -> bool {
        self.rate_from > 0.0 || self.rate_to > 0.0
    }

    /// The largest rate of the phase (the thinning envelope).
    pub fn rate_max(&self) -> f64 {
        self.rate_from.max(self.rate_to)
    }

    /// The rate `into` the phase.
    pub fn rate_at(&self, into: Duration) -> f64 {
        let d = self.duration.as_secs_f64();
        if d <= 0.0 || self.rate_from == self.rate_to {
            return self.rate_from;
        }
        let f = (into.as_secs_f64() / d).clamp(0.0, 1.0);
        self.rate_from + (self.rate_to - self.rate_from) * f
    }

    /// The rate as people write it: `500/s`, `100→2000/s`, or `closed loop`.
    pub fn rate_text(&self) -> String {
        if !self.open_loop() {
            "closed loop".into()
        } else if self.rate_from == self.rate_to {
            format!("{}/s", self.rate_from)
        } else {
            format!("{}→{}/s", self.rate_from, self.rate_to)
        }
    }

    /// The mean target rate over the phase (the results' `target_rate`); `None` in closed loop.
    pub fn mean_rate(&self) -> Option<f64> {
        self.open_loop()
            .then(|| (self.rate_from + self.rate_to) / 2.0)
    }
}

/// A timeline in one line, as `plan` and `validate` show it:
/// `warm 2s 4 thr 200/s (warmup) | ramp 6s 4 thr 200→1000/s | …`.
pub fn timeline_text(phases: &[Phase]) -> String {
    phases
        .iter()
        .map(|p| {
            format!(
                "{} {}s {} thr {}{}",
                p.name,
                p.duration.as_secs_f64(),
                p.threads,
                p.rate_text(),
                if p.warmup { " (warmup)" } else { "" }
            )
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The phases of a run with their end offsets from the start of the run's clock.
#[derive(Clone, Debug)]
pub struct Timeline {
    phases: Vec<Phase>,
    /// `ends[i]`: where phase `i` ends, from the run's start (warmup included).
    ends: Vec<Duration>,
}

impl Timeline {
    /// The timeline of `phases` (none: `None`).
    pub fn new(phases: &[Phase]) -> Option<Self> {
        if phases.is_empty() {
            return None;
        }
        let mut end = Duration::ZERO;
        let ends = phases
            .iter()
            .map(|p| {
                end = end.saturating_add(p.duration);
                end
            })
            .collect();
        Some(Timeline {
            phases: phases.to_vec(),
            ends,
        })
    }

    pub fn phases(&self) -> &[Phase] {
        &self.phases
    }

    /// The index of the phase under way `offset` after the run's start (the last one from its
    /// end on).
    pub fn at(&self, offset: Duration) -> usize {
        self.ends
            .iter()
            .position(|&e| offset < e)
            .unwrap_or(self.phases.len() - 1)
    }

    /// Where phase `i` starts, from the run's start.
    pub fn start_of(&self, i: usize) -> Duration {
        if i == 0 {
            Duration::ZERO
        } else {
            self.ends[i - 1]
        }
    }

    /// Where phase `i` ends, from the run's start.
    pub fn end_of(&self, i: usize) -> Duration {
        self.ends[i]
    }

    /// The warmup: the leading `warmup` phases' total.
    pub fn warmup(&self) -> Duration {
        self.phases
            .iter()
            .take_while(|p| p.warmup)
            .map(|p| p.duration)
            .sum()
    }

    /// The measured time: every phase after the warmup.
    pub fn measured(&self) -> Duration {
        self.phases
            .iter()
            .skip_while(|p| p.warmup)
            .map(|p| p.duration)
            .sum()
    }

    /// The mean target rate between `from` and `to` (offsets from the run's start), across
    /// the phases that span them (a ramp's exact average, closed-loop phases counting 0);
    /// `None` when the span has no open-loop phase in it.
    pub fn mean_rate(&self, from: Duration, to: Duration) -> Option<f64> {
        let span = to.saturating_sub(from).as_secs_f64();
        if span <= 0.0 {
            return None;
        }
        let mut area = 0.0;
        let mut open = false;
        for (i, p) in self.phases.iter().enumerate() {
            let (s, e) = (self.start_of(i), self.end_of(i));
            let (a, b) = (from.max(s), to.min(e));
            if a >= b || !p.open_loop() {
                continue;
            }
            open = true;
            let (ra, rb) = (p.rate_at(a - s), p.rate_at(b - s));
            area += (ra + rb) / 2.0 * (b - a).as_secs_f64();
        }
        open.then(|| area / span)
    }

    /// The pool: the largest phase's threads.
    pub fn pool(&self) -> usize {
        self.phases.iter().map(|p| p.threads).max().unwrap_or(1)
    }

    /// The largest rate of any phase (0: every phase is closed-loop).
    pub fn rate_max(&self) -> f64 {
        self.phases.iter().map(Phase::rate_max).fold(0.0, f64::max)
    }
}

/// What a run's phases may not be, as the message that says how to fix it; `None` when they
/// are fine. Checked by `validate` (with the suite file's line) and again by the engine.
pub fn check(phases: &[Phase]) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    let mut measured = false;
    for (i, p) in phases.iter().enumerate() {
        let n = i + 1;
        if !seen.insert(p.name.as_str()) {
            return Some(format!(
                "phase {n} is named `{}` like an earlier one: give every phase its own name",
                p.name
            ));
        }
        if p.duration.is_zero() {
            return Some(format!(
                "phase {n} (`{}`) has no `time`: give it the seconds it runs, e.g. time = 30",
                p.name
            ));
        }
        if p.threads == 0 {
            return Some(format!(
                "phase {n} (`{}`) has `threads = 0`: give it at least 1",
                p.name
            ));
        }
        if !(p.rate_from.is_finite() && p.rate_to.is_finite())
            || p.rate_from < 0.0
            || p.rate_to < 0.0
        {
            return Some(format!(
                "phase {n} (`{}`) has a negative rate: use arrivals per second ≥ 0, e.g. \
                 rate = 500 or rate = [100, 2000] for a ramp",
                p.name
            ));
        }
        if p.warmup && measured {
            return Some(format!(
                "phase {n} (`{}`) is a warmup after a measured phase: only the leading phases \
                 may be `warmup = true` (they are excluded from every statistic)",
                p.name
            ));
        }
        measured |= !p.warmup;
    }
    if !phases.is_empty() && !measured {
        return Some(
            "every phase is a warmup: at least one phase must be measured (drop `warmup = true` \
             from the last)"
                .into(),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(name: &str, secs: u64, threads: usize, rate: (f64, f64), warmup: bool) -> Phase {
        Phase {
            name: name.into(),
            duration: Duration::from_secs(secs),
            threads,
            rate_from: rate.0,
            rate_to: rate.1,
            warmup,
            weights: Vec::new(),
        }
    }

    #[test]
    fn the_timeline_places_each_moment_in_its_phase() {
        let t = Timeline::new(&[
            phase("w", 5, 2, (0.0, 0.0), true),
            phase("a", 10, 8, (100.0, 300.0), false),
            phase("b", 5, 4, (50.0, 50.0), false),
        ])
        .unwrap();
        assert_eq!(t.at(Duration::ZERO), 0);
        assert_eq!(t.at(Duration::from_millis(4999)), 0);
        assert_eq!(t.at(Duration::from_secs(5)), 1);
        assert_eq!(t.at(Duration::from_secs(15)), 2);
        assert_eq!(t.at(Duration::from_secs(99)), 2, "after the end: the last");
        assert_eq!(t.start_of(2), Duration::from_secs(15));
        assert_eq!(t.end_of(2), Duration::from_secs(20));
        assert_eq!(t.warmup(), Duration::from_secs(5));
        assert_eq!(t.measured(), Duration::from_secs(15));
        assert_eq!(t.pool(), 8);
        let secs = Duration::from_secs;
        assert_eq!(t.mean_rate(secs(5), secs(10)), Some(150.0), "half the ramp");
        assert_eq!(t.mean_rate(secs(0), secs(5)), None, "closed loop only");
        assert_eq!(
            t.mean_rate(secs(14), secs(16)),
            Some((280.0 + 300.0) / 2.0 / 2.0 + 50.0 / 2.0),
            "across a boundary"
        );
        assert_eq!(t.rate_max(), 300.0);
        let a = &t.phases()[1];
        assert_eq!(a.rate_at(Duration::ZERO), 100.0);
        assert_eq!(a.rate_at(Duration::from_secs(5)), 200.0);
        assert_eq!(a.rate_at(Duration::from_secs(10)), 300.0);
        assert_eq!(a.mean_rate(), Some(200.0));
        assert_eq!(a.rate_text(), "100→300/s");
        assert_eq!(t.phases()[0].rate_text(), "closed loop");
        assert_eq!(t.phases()[0].mean_rate(), None);
    }

    #[test]
    fn phases_that_cannot_run_say_why() {
        let ok = phase("a", 1, 1, (0.0, 0.0), false);
        assert_eq!(check(std::slice::from_ref(&ok)), None);
        let twice = check(&[ok.clone(), ok.clone()]).unwrap();
        assert!(twice.contains("named `a` like an earlier one"), "{twice}");
        let late = check(&[ok.clone(), phase("w", 1, 1, (0.0, 0.0), true)]).unwrap();
        assert!(late.contains("only the leading phases"), "{late}");
        let all = check(&[phase("w", 1, 1, (0.0, 0.0), true)]).unwrap();
        assert!(all.contains("at least one phase must be measured"), "{all}");
        let zero = check(&[phase("z", 0, 1, (0.0, 0.0), false)]).unwrap();
        assert!(zero.contains("has no `time`"), "{zero}");
        let neg = check(&[phase("n", 1, 1, (-1.0, 0.0), false)]).unwrap();
        assert!(neg.contains("negative rate"), "{neg}");
    }
}
