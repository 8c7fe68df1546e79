//! `sbsuite capacity`: the highest arrival rate this server sustains with a latency
//! percentile under a target — the number a capacity planner needs, searched instead of
//! guessed one `--rate` at a time.
//!
//! Why it is shaped this way:
//! - **Open loop, latency from the intended start.** Each probe is a run of the user's suite
//!   at a fixed `rate` (sysbench's `--rate`: arrivals on a schedule, queued when every thread
//!   is busy, the latency counted from the arrival, so queueing shows as latency), with
//!   `rate_overflow = "record"` so that a rate the threads cannot serve is a measured "no",
//!   not a failed run. A closed-loop run (as many transactions as the threads can) would hide
//!   the queue and report the server's best case.
//! - **A rate passes** when the chosen percentile is at most the target, no arrival was
//!   dropped (the queue never overflowed) and the rate achieved is within 5 % of the rate
//!   offered, or within the chance variation of a Poisson count when that is more ([`shortfall`]):
//!   a queue growing without overflowing shows as a shortfall and as latency.
//! - **Search**: one closed-loop run first, whose throughput bounds what the threads can
//!   offer; then halving from there until a rate passes (the bracket), then bisection on the
//!   log scale until the bracket is narrower than `precision`. Each probe is a measured run
//!   with its own run directory. The rate found is then **confirmed** with repetitions, and
//!   the answer gives the percentile's median and interval over them.
//! - **The curve is kept**: `capacity.csv` has every probe's offered rate, achieved rate,
//!   latency percentiles and verdict — the latency-vs-offered-load curve (the hockey stick),
//!   drawn in `capacity.svg` with the target and the rate found.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::report::html::svg::{Bar, Chart, Series};
use crate::runner::derived::{self, DerivedError};
use crate::source::ConfigErrors;
use crate::suite::{self, SetOverride};

/// How many rates the confirmation tries, each one precision step below the last, before it
/// reports the last one as not confirmed.
const MAX_CONFIRMS: usize = 4;

/// What `sbsuite capacity` was asked.
pub struct Request {
    pub file: PathBuf,
    pub sets: Vec<SetOverride>,
    pub target: Target,
    /// Rates below this are not tried (transactions or events per second).
    pub min_rate: f64,
    /// The bracket's width at which the search stops, in % (5: hi/lo ≤ 1.05).
    pub precision: f64,
    /// Repetitions of the confirmation at the rate found.
    pub confirm: u32,
    pub results_root: Option<PathBuf>,
    pub quiet: bool,
}

/// `p99 < 10ms`: the percentile and its bound.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// The results.csv column: `lat_p95`, `lat_p99`, `lat_avg` or `lat_max`.
    pub column: &'static str,
    /// Its name as written (`p99`).
    pub name: &'static str,
    pub max_ms: f64,
}

impl Target {
    /// Parses `p99<10ms` (also `p95`, `avg`, `max`; `ms` optional; spaces allowed).
    pub fn parse(text: &str) -> Result<Target, String> {
        let bad = || {
            format!(
                "--target `{text}`: write PERCENTILE<MS, e.g. `p99<10ms` (p95, p99, avg or max)"
            )
        };
        let (name, bound) = text.split_once('<').ok_or_else(bad)?;
        let (column, name) = match name.trim() {
            "p95" => ("lat_p95", "p95"),
            "p99" => ("lat_p99", "p99"),
            "avg" => ("lat_avg", "avg"),
            "max" => ("lat_max", "max"),
            _ => return Err(bad()),
        };
        let bound = bound.trim();
        let number = bound.strip_suffix("ms").unwrap_or(bound).trim();
        let max_ms: f64 = number.parse().map_err(|_| bad())?;
        if !(max_ms.is_finite() && max_ms > 0.0) {
            return Err(bad());
        }
        Ok(Target {
            column,
            name,
            max_ms,
        })
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ≤ {} ms", self.name, self.max_ms)
    }
}

/// What a probe was for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// As fast as the threads can (no rate): the bound of the search.
    ClosedLoop,
    /// Halving from the bound until a rate passes.
    Bracket,
    /// Bisection inside the bracket.
    Bisect,
    /// The rate found, repeated.
    Confirm,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::ClosedLoop => "closed_loop",
            Phase::Bracket => "bracket",
            Phase::Bisect => "bisect",
            Phase::Confirm => "confirm",
        }
    }
}

/// One measured run of the search (a row of `capacity.csv` per repetition).
#[derive(Clone, Debug)]
pub struct Probe {
    pub phase: Phase,
    /// The rate offered; `None` for the closed-loop run.
    pub rate: Option<f64>,
    pub run_dir: PathBuf,
    /// One per repetition.
    pub samples: Vec<Sample>,
}

/// One repetition of a probe.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    /// Transactions per second (events per second for workloads without SQL).
    pub achieved: f64,
    pub lat_avg: Option<f64>,
    pub lat_p95: Option<f64>,
    pub lat_p99: Option<f64>,
    pub lat_max: Option<f64>,
    pub dropped: f64,
    /// The measured window, in seconds.
    pub seconds: f64,
}

impl Sample {
    fn metric(&self, target: &Target) -> Option<f64> {
        match target.column {
            "lat_p95" => self.lat_p95,
            "lat_avg" => self.lat_avg,
            "lat_max" => self.lat_max,
            _ => self.lat_p99,
        }
    }

    /// Whether the sample meets the target at `rate` (see the module documentation).
    pub fn passes(&self, target: &Target, rate: f64) -> bool {
        self.metric(target).is_some_and(|v| v <= target.max_ms)
            && self.dropped == 0.0
            && self.achieved >= rate * (1.0 - shortfall(rate * self.seconds))
    }
}

/// The shortfall of the achieved rate that still counts as achieved, as a fraction, for
/// `expected` arrivals: 5 %, or three standard deviations of a Poisson count when that is more
/// (sysbench's arrivals are a Poisson process: 300 expected arrivals vary by ±17, 5.8 %).
pub fn shortfall(expected: f64) -> f64 {
    if expected <= 0.0 {
        return 1.0;
    }
    (3.0 / expected.sqrt()).max(0.05)
}

/// The answer.
#[derive(Debug)]
pub struct Outcome {
    /// `<results_dir>/<suite>-capacity/<id>/`.
    pub dir: PathBuf,
    pub target: Target,
    pub probes: Vec<Probe>,
    pub found: Found,
}

#[derive(Debug)]
pub enum Found {
    /// The highest rate that passed, and the lowest that did not (`None`: the closed-loop
    /// throughput itself passed — the threads, not the server, are the limit).
    Rate {
        rate: f64,
        failed_above: Option<f64>,
        /// The last confirmation's repetitions that passed, of how many (confirmed when most
        /// did; `(0, 0)` before the confirmation).
        confirmed: (usize, usize),
    },
    /// Not even `min_rate` passed.
    None { lowest_tried: f64 },
}

#[derive(Debug, thiserror::Error)]
pub enum CapacityError {
    #[error("{0}")]
    Config(#[from] ConfigErrors),
    #[error(
        "{file}: capacity searches one matrix point, the suite has {points}: fix the other \
         axes with --set (e.g. --set matrix.threads=[64])",
        file = .file.display()
    )]
    Points { file: PathBuf, points: usize },
    #[error(
        "{file}: capacity varies `rate` itself: remove `rate` from [matrix]",
        file = .file.display()
    )]
    RateAxis { file: PathBuf },
    #[error(
        "{file}: capacity measures one configuration, the suite has {count} [[variant]]s: \
         keep one (or run capacity once per variant with a suite each)",
        file = .file.display()
    )]
    Variants { file: PathBuf, count: usize },
    #[error("--precision must be above 0 (% of the rate), not {0}")]
    Precision(f64),
    #[error("--confirm must be at least 1")]
    Confirm,
    #[error("{probe}: {source}")]
    Run {
        probe: String,
        #[source]
        source: DerivedError,
    },
    #[error("{probe}: {what}; see {}", .run_dir.display())]
    Unreadable {
        probe: String,
        what: String,
        run_dir: PathBuf,
    },
    #[error(transparent)]
    Results(#[from] crate::results::ResultsError),
    #[error("writing {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl CapacityError {
    /// Whether the request itself is wrong (exit 2).
    pub fn is_bad_input(&self) -> bool {
        match self {
            CapacityError::Config(_)
            | CapacityError::Points { .. }
            | CapacityError::RateAxis { .. }
            | CapacityError::Variants { .. }
            | CapacityError::Precision(_)
            | CapacityError::Confirm => true,
            CapacityError::Run { source, .. } => source.is_bad_input(),
            _ => false,
        }
    }
}

/// Runs the search; `note` receives a line per probe as it ends.
pub fn capacity(req: &Request, note: &mut dyn FnMut(&str)) -> Result<Outcome, CapacityError> {
    if !(req.precision.is_finite() && req.precision > 0.0) {
        return Err(CapacityError::Precision(req.precision));
    }
    if req.confirm == 0 {
        return Err(CapacityError::Confirm);
    }
    let text = suite::read_text(&req.file)?;
    let env = suite::env_layer();
    let user = suite::load_text(&req.file, &text, &req.sets, &env)?;
    if user.matrix.axes.iter().any(|a| a.name == "rate") {
        return Err(CapacityError::RateAxis {
            file: req.file.clone(),
        });
    }
    if user.variants.len() > 1 {
        return Err(CapacityError::Variants {
            file: req.file.clone(),
            count: user.variants.len(),
        });
    }
    let root = req
        .results_root
        .clone()
        .unwrap_or_else(|| user.results_dir.clone());
    let mut s = Search {
        req,
        text: &text,
        env: &env,
        dir: PathBuf::new(),
        probes: Vec::new(),
        note,
    };
    // Checked before anything is created: the closed-loop probe's suite is every probe's
    // but for `rate`.
    let loaded = s.load("closed-loop", None, 1)?;
    let points = loaded
        .plan
        .steps
        .iter()
        .filter(|st| st.kind == crate::plan::StepKind::Run && st.repetition == 1)
        .count();
    if points != 1 {
        return Err(CapacityError::Points {
            file: req.file.clone(),
            points,
        });
    }
    let parent = root.join(format!(
        "{}-capacity",
        crate::results::sanitise_name(&user.name)
    ));
    let (_, dir) = crate::results::create_run_dir(&parent, chrono::Utc::now())?;
    s.dir = dir.clone();

    let closed = s.probe(Phase::ClosedLoop, None, 1)?;
    let bound = s.probes[closed].samples[0].achieved;
    let step = 1.0 + req.precision / 100.0;
    let found = if s.passes(Phase::Bracket, bound)? {
        // The threads cannot offer more than they did closed-loop.
        Found::Rate {
            rate: bound,
            failed_above: None,
            confirmed: (0, 0),
        }
    } else {
        let mut hi = bound;
        let mut lo = None;
        let mut rate = bound / 2.0;
        while rate >= req.min_rate {
            if s.passes(Phase::Bracket, rate)? {
                lo = Some(rate);
                break;
            }
            hi = rate;
            rate /= 2.0;
        }
        match lo {
            None => Found::None { lowest_tried: hi },
            Some(mut lo) => {
                while hi / lo > step {
                    let mid = (lo * hi).sqrt();
                    if s.passes(Phase::Bisect, mid)? {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                Found::Rate {
                    rate: lo,
                    failed_above: Some(hi),
                    confirmed: (0, 0),
                }
            }
        }
    };
    // Confirmed when most repetitions pass; otherwise one precision step lower, a few times.
    let found = match found {
        Found::Rate {
            mut rate,
            mut failed_above,
            ..
        } => {
            let mut tries = 0;
            loop {
                let i = s.probe(Phase::Confirm, Some(rate), req.confirm)?;
                let samples = &s.probes[i].samples;
                let passed = samples
                    .iter()
                    .filter(|x| x.passes(&req.target, rate))
                    .count();
                tries += 1;
                if 2 * passed > samples.len() || tries == MAX_CONFIRMS || rate / step < req.min_rate
                {
                    break Found::Rate {
                        rate,
                        failed_above,
                        confirmed: (passed, samples.len()),
                    };
                }
                failed_above = Some(rate);
                rate /= step;
            }
        }
        none => none,
    };
    let outcome = Outcome {
        dir: dir.clone(),
        target: req.target.clone(),
        probes: s.probes,
        found,
    };
    write_file(&dir.join("capacity.csv"), &csv(&outcome))?;
    write_file(&dir.join("capacity.txt"), &summary(&outcome))?;
    write_file(&dir.join("capacity.svg"), &chart(&outcome).to_svg(true))?;
    Ok(outcome)
}

/// The state of one search.
struct Search<'a> {
    req: &'a Request,
    text: &'a str,
    env: &'a [(String, String)],
    dir: PathBuf,
    probes: Vec<Probe>,
    note: &'a mut dyn FnMut(&str),
}

impl Search<'_> {
    fn origin(&self) -> derived::Origin<'_> {
        derived::Origin {
            file: &self.req.file,
            sets: &self.req.sets,
            env: self.env,
            results_root: self.dir.clone(),
            quiet: self.req.quiet,
        }
    }

    /// The suite of a probe: the user's, named `name`, at `rate` (none: closed loop),
    /// repeated `repeat` times, dropped arrivals recorded instead of failing the run.
    fn load(
        &self,
        name: &str,
        rate: Option<f64>,
        repeat: u32,
    ) -> Result<derived::Loaded, CapacityError> {
        let text = derived::edit(self.text, |table| {
            derived::with_suite_section(table, |s| {
                s.insert("name".into(), toml::Value::String(name.into()));
                s.insert("repeat".into(), toml::Value::Integer(i64::from(repeat)));
                s.insert("rate_overflow".into(), toml::Value::String("record".into()));
            });
            let defaults = table
                .entry("defaults")
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            if let toml::Value::Table(d) = defaults {
                // sysbench's rate is a whole number of events per second; 0 is no rate.
                let r = rate.map_or(0, |r| r.round().max(1.0) as i64);
                d.insert("rate".into(), toml::Value::Integer(r));
            }
        });
        Ok(derived::load(&self.origin(), &text)?)
    }

    /// Runs a probe and returns its index.
    fn probe(
        &mut self,
        phase: Phase,
        rate: Option<f64>,
        repeat: u32,
    ) -> Result<usize, CapacityError> {
        let name = match rate {
            None => "closed-loop".to_string(),
            Some(r) => format!("{:02}-rate-{}", self.probes.len() + 1, r.round()),
        };
        let loaded = self.load(&name, rate, repeat)?;
        let summary =
            derived::run(&self.origin(), loaded).map_err(|source| CapacityError::Run {
                probe: name.clone(),
                source,
            })?;
        let samples = read_samples(&summary.run_dir).map_err(|what| CapacityError::Unreadable {
            probe: name.clone(),
            what,
            run_dir: summary.run_dir.clone(),
        })?;
        let target = &self.req.target;
        for x in &samples {
            let verdict = match rate {
                None => String::new(),
                Some(r) if x.passes(target, r) => " pass".into(),
                Some(_) => " fail".into(),
            };
            (self.note)(&format!(
                "[capacity] {}: offered {}, achieved {:.1}/s, {} {}, dropped {}{verdict}",
                phase.as_str(),
                rate.map_or("max (closed loop)".to_string(), |r| format!(
                    "{}/s",
                    r.round()
                )),
                x.achieved,
                target.name,
                x.metric(target)
                    .map_or("-".to_string(), |v| format!("{v:.2} ms")),
                x.dropped
            ));
        }
        self.probes.push(Probe {
            phase,
            rate,
            run_dir: summary.run_dir,
            samples,
        });
        Ok(self.probes.len() - 1)
    }

    /// Probes `rate` once and says whether it passed.
    fn passes(&mut self, phase: Phase, rate: f64) -> Result<bool, CapacityError> {
        let i = self.probe(phase, Some(rate), 1)?;
        Ok(self.probes[i].samples[0].passes(&self.req.target, rate))
    }
}

/// The run steps' rows of a probe's results.csv.
fn read_samples(run_dir: &Path) -> Result<Vec<Sample>, String> {
    let run = crate::results::load::load(run_dir, crate::results::load::Parts::Results)
        .map_err(|e| e.to_string())?;
    let samples: Vec<Sample> = run
        .rows
        .iter()
        .filter(|r| r.get("status") == "ok")
        .map(|r| Sample {
            achieved: r
                .num("tps")
                .filter(|t| *t > 0.0)
                .or_else(|| r.num("eps"))
                .unwrap_or(0.0),
            lat_avg: r.num("lat_avg"),
            lat_p95: r.num("lat_p95"),
            lat_p99: r.num("lat_p99"),
            lat_max: r.num("lat_max"),
            dropped: r.num("dropped").unwrap_or(0.0),
            seconds: r.num("seconds").unwrap_or(0.0),
        })
        .collect();
    if samples.is_empty() {
        return Err("no run step finished ok".into());
    }
    Ok(samples)
}

/// The answer, as `sbsuite capacity` prints it and `capacity.txt` keeps it.
pub fn summary(o: &Outcome) -> String {
    let mut t = String::new();
    let tried = o
        .probes
        .iter()
        .filter(|p| p.phase != Phase::Confirm)
        .count();
    match &o.found {
        Found::Rate {
            rate,
            failed_above,
            confirmed,
        } => {
            let _ = write!(t, "capacity at {}: {:.0}/s", o.target, rate);
            match failed_above {
                Some(hi) => {
                    let _ = write!(t, " (fails at {hi:.0}/s)");
                }
                None => t.push_str(
                    " — the closed-loop throughput itself passed: the threads, not the server, \
                     are the limit (raise threads)",
                ),
            }
            t.push('\n');
            if let Some(confirm) = o.probes.iter().rfind(|p| p.phase == Phase::Confirm) {
                let values: Vec<f64> = confirm
                    .samples
                    .iter()
                    .filter_map(|x| x.metric(&o.target))
                    .collect();
                let _ = write!(
                    t,
                    "{} {} of {} repetitions passed at {:.0}/s",
                    if 2 * confirmed.0 > confirmed.1 {
                        "confirmed:"
                    } else {
                        "NOT confirmed (noisy at this run length: raise `time`):"
                    },
                    confirmed.0,
                    confirmed.1,
                    rate
                );
                if let Some(s) = crate::compare::stats::summarize(&values) {
                    let _ = write!(t, ": {} median {:.2} ms", o.target.name, s.median);
                    if let Some((lo, hi)) = s.ci {
                        let _ = write!(t, " [{lo:.2}, {hi:.2}]");
                    }
                }
                t.push('\n');
            }
        }
        Found::None { lowest_tried } => {
            let _ = writeln!(
                t,
                "no rate meets {}: even {lowest_tried:.0}/s failed (lower --min-rate, or the \
                 target is below what one transaction takes)",
                o.target
            );
        }
    }
    let _ = writeln!(
        t,
        "{tried} probes (a rate passes when {} and no arrival was dropped and 95 % of it was \
         achieved, less on short runs by the Poisson variation of the count); the curve is in {}",
        o.target,
        o.dir.join("capacity.csv").display()
    );
    t
}

/// `capacity.csv`: a row per probe repetition, the latency-vs-offered-load curve.
pub fn csv(o: &Outcome) -> String {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    let _ = w.write_record([
        "phase",
        "offered_rate",
        "achieved_rate",
        "lat_avg",
        "lat_p95",
        "lat_p99",
        "lat_max",
        "dropped",
        "pass",
        "run_dir",
    ]);
    let num = |v: Option<f64>| v.map(|v| format!("{v:.4}")).unwrap_or_default();
    for p in &o.probes {
        for x in &p.samples {
            let _ = w.write_record([
                p.phase.as_str().to_string(),
                p.rate.map(|r| format!("{r:.0}")).unwrap_or_default(),
                format!("{:.4}", x.achieved),
                num(x.lat_avg),
                num(x.lat_p95),
                num(x.lat_p99),
                num(x.lat_max),
                format!("{}", x.dropped),
                match p.rate {
                    Some(r) if x.passes(&o.target, r) => "yes".into(),
                    Some(_) => "no".into(),
                    None => String::new(),
                },
                p.run_dir.display().to_string(),
            ]);
        }
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// The latency-vs-offered-load curve (`capacity.svg`): the percentile of each probe of the
/// search against the rate offered, the target as a horizontal line, the rate found as a
/// vertical one, and the confirmation's median with its interval.
pub fn chart(o: &Outcome) -> Chart {
    let mut curve: Vec<(f64, f64)> = o
        .probes
        .iter()
        .filter(|p| matches!(p.phase, Phase::Bracket | Phase::Bisect))
        .filter_map(|p| Some((p.rate?, p.samples.first()?.metric(&o.target)?)))
        .collect();
    curve.sort_by(|a, b| a.0.total_cmp(&b.0));
    // The target spans every rate drawn, the confirmed one too.
    let found = match o.found {
        Found::Rate { rate, .. } => Some(rate),
        Found::None { .. } => None,
    };
    let xs: Vec<f64> = curve.iter().map(|p| p.0).chain(found).collect();
    let (lo, hi) = (
        xs.iter()
            .copied()
            .fold(f64::INFINITY, f64::min)
            .min(f64::MAX),
        xs.iter().copied().fold(0.0, f64::max),
    );
    let name = o.target.name;
    let mut series = vec![Series {
        label: format!("{name} at each rate offered"),
        points: curve,
        color: 0,
        ..Series::default()
    }];
    if lo.is_finite() && hi > 0.0 {
        series.push(Series {
            label: format!("target: {name} ≤ {} ms", o.target.max_ms),
            points: vec![(lo, o.target.max_ms), (hi, o.target.max_ms)],
            color: 3,
            dashed: true,
            ..Series::default()
        });
    }
    if let Found::Rate { rate, .. } = o.found
        && let Some(confirm) = o.probes.iter().rfind(|p| p.phase == Phase::Confirm)
    {
        let values: Vec<f64> = confirm
            .samples
            .iter()
            .filter_map(|x| x.metric(&o.target))
            .collect();
        if let Some(sum) = crate::compare::stats::summarize(&values) {
            let (low, high) = sum.ci.unwrap_or((sum.median, sum.median));
            series.push(Series {
                label: format!(
                    "capacity {rate:.0}/s: {name} median of {} repetitions",
                    sum.n
                ),
                points: vec![(rate, sum.median)],
                color: 2,
                bars: vec![Bar {
                    x: rate,
                    low,
                    high,
                    n: sum.n,
                }],
                ..Series::default()
            });
        }
    }
    Chart {
        id: "capacity".into(),
        title: format!("{name} latency vs offered load"),
        x_label: "rate offered (per second)".into(),
        y_label: format!("{name} latency (ms)"),
        series,
        note: "each point: one probe of the search (open loop, latency from the scheduled \
               arrival)"
            .into(),
        ..Chart::default()
    }
}

fn write_file(path: &Path, text: &str) -> Result<(), CapacityError> {
    std::fs::write(path, text).map_err(|source| CapacityError::Write {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_with_or_without_ms_and_refuse_the_rest() {
        let t = Target::parse("p99<10ms").unwrap();
        assert_eq!((t.column, t.max_ms), ("lat_p99", 10.0));
        assert_eq!(Target::parse(" p95 < 2.5 ").unwrap().column, "lat_p95");
        assert_eq!(t.to_string(), "p99 ≤ 10 ms");
        for bad in [
            "p98<10ms",
            "p99>10",
            "p99<",
            "p99<-1ms",
            "p99<nanms",
            "10ms",
        ] {
            let e = Target::parse(bad).unwrap_err();
            assert!(e.contains("e.g. `p99<10ms`"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_rate_passes_under_the_target_with_nothing_dropped_and_the_rate_achieved() {
        let t = Target::parse("p99<10").unwrap();
        let ok = Sample {
            achieved: 960.0,
            lat_p99: Some(9.9),
            seconds: 60.0,
            ..Sample::default()
        };
        assert!(ok.passes(&t, 1000.0));
        assert!(!ok.passes(&t, 1020.0), "below 95 % of the offered rate");
        // 3 s at 22/s: 66 arrivals, whose count varies by ±8 (±12 %) by chance alone.
        let short = Sample {
            achieved: 17.3,
            seconds: 3.0,
            ..ok.clone()
        };
        assert!(short.passes(&t, 22.0), "{}", shortfall(66.0));
        assert!(!short.passes(&t, 30.0));
        assert!((shortfall(300.0) - 0.1732).abs() < 1e-3);
        assert_eq!(shortfall(1e6), 0.05);
        let slow = Sample {
            lat_p99: Some(10.1),
            ..ok.clone()
        };
        assert!(!slow.passes(&t, 1000.0));
        let dropped = Sample {
            dropped: 3.0,
            ..ok.clone()
        };
        assert!(!dropped.passes(&t, 1000.0));
        let unmeasured = Sample {
            lat_p99: None,
            ..ok
        };
        assert!(!unmeasured.passes(&t, 1000.0));
    }
}
