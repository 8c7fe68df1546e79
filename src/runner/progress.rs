//! Suite progress on stderr: "step k of N, elapsed, ETA".
//!
//! stdout belongs to the sysbench-shaped reports (scripts parse them), so progress goes to
//! stderr: an indicatif bar on a terminal, one plain line per step start otherwise (logs and CI
//! stay readable, no carriage-return spam), nothing with `--quiet`. The ETA comes from the
//! plan's `estimated_seconds`, not from indicatif's rate estimate: steps have wildly different
//! lengths (a prepare vs a 60 s run), so "steps per second" would mislead (indicatif #580). The
//! report writer ([`ReportOut`]) suspends the bar while it writes complete lines to stdout, so a
//! bar and a report sharing one terminal do not clobber each other.

use std::io::{self, IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use crate::plan::{Plan, Step};

/// How progress is shown on stderr.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProgressMode {
    /// A bar when stderr is a terminal, plain lines otherwise.
    #[default]
    Auto,
    Bar,
    Plain,
    Off,
}

/// The plan-based ETA of the step in progress, shared with the bar's template.
#[derive(Clone, Copy, Debug)]
struct EtaState {
    step_started: Instant,
    /// Estimate of the current step, if known.
    current: Option<f64>,
    /// Sum of the known estimates of the steps after the current one.
    rest: f64,
    /// Some step (current or later) has no estimate: the ETA is a lower bound.
    unknown: bool,
}

impl EtaState {
    fn text(&self, now: Instant) -> String {
        let in_step = now
            .saturating_duration_since(self.step_started)
            .as_secs_f64();
        let current_left = self.current.map_or(0.0, |c| (c - in_step).max(0.0));
        let left = current_left + self.rest;
        if self.unknown && left == 0.0 {
            "?".into()
        } else if self.unknown {
            format!("{}+", fmt_duration(left))
        } else {
            fmt_duration(left)
        }
    }
}

/// `m:ss`, or `h:mm:ss` from an hour on.
pub fn fmt_duration(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    let (h, m, s) = (s / 3600, (s / 60) % 60, s % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

enum Display {
    Off,
    Plain,
    Bar(ProgressBar, Arc<Mutex<EtaState>>),
}

pub(crate) struct Progress {
    display: Display,
    quiet: bool,
    events: Option<std::sync::Arc<super::events::Events>>,
    started: Instant,
    total: usize,
    estimates: Vec<Option<f64>>,
    /// Per position: the sum of the known estimates of the steps after it, and whether some
    /// step from it on has none (suffix sums, so that a step start costs O(1), not O(steps)).
    rest_after: Vec<f64>,
    unknown_from: Vec<bool>,
}

impl Progress {
    pub fn new(mode: ProgressMode, quiet: bool, plan: &Plan) -> Self {
        let estimates: Vec<_> = plan.steps.iter().map(|s| s.estimated_seconds).collect();
        let total = plan.steps.len();
        let (mut rest_after, mut unknown_from) = (vec![0.0; total], vec![false; total]);
        let (mut rest, mut unknown) = (0.0, false);
        for (i, e) in estimates.iter().enumerate().rev() {
            rest_after[i] = rest;
            unknown |= e.is_none();
            unknown_from[i] = unknown;
            rest += e.unwrap_or(0.0);
        }
        let mode = match mode {
            _ if quiet => ProgressMode::Off,
            ProgressMode::Auto if io::stderr().is_terminal() => ProgressMode::Bar,
            ProgressMode::Auto => ProgressMode::Plain,
            m => m,
        };
        let display = match mode {
            ProgressMode::Off | ProgressMode::Auto => Display::Off,
            ProgressMode::Plain => Display::Plain,
            ProgressMode::Bar => {
                let eta = Arc::new(Mutex::new(EtaState {
                    step_started: Instant::now(),
                    current: None,
                    rest: 0.0,
                    unknown: true,
                }));
                let shared = eta.clone();
                let style = ProgressStyle::with_template(
                    "{bar:24.cyan/blue} step {msg} · elapsed {elapsed_precise} · eta {plan_eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .with_key(
                    "plan_eta",
                    move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                        let text = shared
                            .lock()
                            .map(|e| e.text(Instant::now()))
                            .unwrap_or_default();
                        let _ = w.write_str(&text);
                    },
                )
                .progress_chars("=> ");
                let bar =
                    ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr())
                        .with_style(style);
                bar.enable_steady_tick(Duration::from_millis(500));
                Display::Bar(bar, eta)
            }
        };
        Progress {
            display,
            quiet,
            events: None,
            started: Instant::now(),
            total,
            estimates,
            rest_after,
            unknown_from,
        }
    }

    /// The bar, for writers that must suspend it.
    pub fn bar(&self) -> Option<ProgressBar> {
        match &self.display {
            Display::Bar(bar, _) => Some(bar.clone()),
            _ => None,
        }
    }

    /// Called when the step at 0-based `position` starts executing.
    pub fn step_started(&self, position: usize, step: &Step) {
        let eta = EtaState {
            step_started: Instant::now(),
            current: self.estimates.get(position).copied().flatten(),
            rest: self.rest_after.get(position).copied().unwrap_or(0.0),
            unknown: self.unknown_from.get(position).copied().unwrap_or(false),
        };
        let label = format!(
            "{}/{} {} {}",
            position + 1,
            self.total,
            step.kind.as_str(),
            step.name
        );
        match &self.display {
            Display::Off => {}
            Display::Plain => {
                let line = format!(
                    "[sbsuite] step {label} · elapsed {} · eta {}",
                    fmt_duration(self.started.elapsed().as_secs_f64()),
                    eta.text(eta.step_started)
                );
                let _ = writeln!(io::stderr().lock(), "{line}");
            }
            Display::Bar(bar, shared) => {
                if let Ok(mut e) = shared.lock() {
                    *e = eta;
                }
                bar.set_position(position as u64);
                bar.set_message(label);
            }
        }
    }

    /// A message on stderr that must not be torn by the bar (failures, the summary). Shown
    /// whatever the progress mode, except with `--quiet`.
    pub fn note(&self, msg: &str) {
        if self.quiet {
            return;
        }
        self.print(msg);
    }

    /// Like [`Progress::note`], but printed even with `--quiet`: a failed step must say why.
    /// With `--events` it is also a `warning` event.
    pub fn error(&self, msg: &str) {
        if let Some(events) = &self.events {
            events.emit(super::events::Body::Warning {
                message: msg.strip_prefix("[sbsuite] ").unwrap_or(msg).to_string(),
            });
        }
        self.print(msg);
    }

    /// Sends [`Progress::error`]'s lines to `events` too.
    pub fn set_events(&mut self, events: Option<std::sync::Arc<super::events::Events>>) {
        self.events = events;
    }

    fn print(&self, msg: &str) {
        let print = || {
            let _ = writeln!(io::stderr().lock(), "{msg}");
        };
        match &self.display {
            Display::Bar(bar, _) => bar.suspend(print),
            _ => print(),
        }
    }

    /// Removes the bar (the summary follows as plain lines).
    pub fn finish(&self) {
        if let Display::Bar(bar, _) = &self.display {
            bar.finish_and_clear();
        }
    }
}

/// The report stream handed to engines: writes complete lines to `inner`, suspending the bar
/// around each write. A partial line is held back until its newline (or a flush), because the
/// bar would otherwise be drawn after it on the same terminal row.
pub(crate) struct ReportOut<W: Write> {
    bar: Option<ProgressBar>,
    inner: W,
    pending: Vec<u8>,
}

impl<W: Write> ReportOut<W> {
    pub fn new(bar: Option<ProgressBar>, inner: W) -> Self {
        ReportOut {
            bar,
            inner,
            pending: Vec::new(),
        }
    }

    fn emit(&mut self, upto: usize) -> io::Result<()> {
        let chunk: Vec<u8> = self.pending.drain(..upto).collect();
        let inner = &mut self.inner;
        let mut write = || {
            inner.write_all(&chunk)?;
            inner.flush()
        };
        match &self.bar {
            Some(bar) => bar.suspend(write),
            None => write(),
        }
    }
}

impl<W: Write> Write for ReportOut<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        if let Some(last_nl) = self.pending.iter().rposition(|&b| b == b'\n') {
            self.emit(last_nl + 1)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let n = self.pending.len();
        self.emit(n)
    }
}

impl<W: Write> Drop for ReportOut<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_a_clock() {
        assert_eq!(fmt_duration(0.0), "0:00");
        assert_eq!(fmt_duration(12.4), "0:12");
        assert_eq!(fmt_duration(125.0), "2:05");
        assert_eq!(fmt_duration(3725.0), "1:02:05");
    }

    #[test]
    fn eta_counts_the_current_step_and_the_rest() {
        let t0 = Instant::now();
        let eta = EtaState {
            step_started: t0,
            current: Some(30.0),
            rest: 10.0,
            unknown: false,
        };
        assert_eq!(eta.text(t0), "0:40");
        assert_eq!(eta.text(t0 + Duration::from_secs(25)), "0:15");
        assert_eq!(eta.text(t0 + Duration::from_secs(90)), "0:10");
        let lower_bound = EtaState {
            unknown: true,
            ..eta
        };
        assert_eq!(lower_bound.text(t0), "0:40+");
    }

    #[test]
    fn eta_sums_are_the_known_estimates_after_each_step() {
        let estimates = [Some(10.0), None, Some(5.0), Some(1.0)];
        let step = |i: usize, e: Option<f64>| Step {
            index: i + 1,
            kind: crate::plan::StepKind::Run,
            name: format!("s{i}"),
            variant: "default".into(),
            workload: "cpu".into(),
            spec: crate::engine::Catalog::builtin().workload("cpu"),
            dataset: 0,
            repetition: 1,
            params: Default::default(),
            options: Default::default(),
            command: None,
            estimated_seconds: e,
            phases: Vec::new(),
            groups: Vec::new(),
            target: None,
        };
        let plan = Plan {
            suite: "unit".into(),
            axes: Vec::new(),
            steps: estimates
                .iter()
                .enumerate()
                .map(|(i, e)| step(i, *e))
                .collect(),
            target: None,
            variant_order: Default::default(),
            order_seed: None,
            dataset: Default::default(),
        };
        let p = Progress::new(ProgressMode::Off, true, &plan);
        assert_eq!(p.rest_after, [6.0, 6.0, 1.0, 0.0]);
        assert_eq!(p.unknown_from, [true, true, false, false]);
    }

    #[test]
    fn report_out_passes_lines_and_flushes_the_tail() {
        let mut sink = Vec::new();
        {
            let mut out = ReportOut::new(None, &mut sink);
            out.write_all(b"a\nb").unwrap();
            assert_eq!(out.inner.as_slice(), b"a\n");
            out.write_all(b"c\n").unwrap();
            out.write_all(b"tail").unwrap();
        }
        assert_eq!(sink, b"a\nbc\ntail");
    }
}
