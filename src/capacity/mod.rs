//! `sbsuite capacity` and a suite's `[capacity]` (#30): the highest arrival rate this server
//! sustains with a latency percentile under a target — the number a capacity planner needs,
//! searched instead of guessed one `--rate` at a time.
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
//!   latency percentiles and verdict — the latency-vs-offered-load curve (the hockey stick,
//!   [`crate::results::capacity`]), drawn in `capacity.svg` with the target and the rate found
//!   and told in `capacity.txt` by the functions `sbsuite report` draws its page with
//!   ([`crate::report::html::capacity`]).
//! - **Two ways in, one search**: `sbsuite capacity FILE` (its directory
//!   `<results_dir>/<suite>-capacity/<id>/`), and `sbsuite run` of a suite with a `[capacity]`
//!   section (the run directory `<results_dir>/<suite>/<id>/`). The section gives the
//!   defaults, the command line wins; the probes' suites are the user's without the section,
//!   so that each probe is an ordinary run at one rate.

use std::path::{Path, PathBuf};

use crate::plan::{Plan, StepKind};
use crate::report::html::capacity::{answer, charts};
use crate::results::capacity::{Curve, Point};
use crate::runner::derived::{self, DerivedError};
use crate::source::{ConfigErrors, Seg};
use crate::suite::capacity::{CONFIRM, Latencies, MIN_RATE, PRECISION};
use crate::suite::{self, SetOverride, Suite};

pub use crate::results::capacity::{Phase, Sample};
pub use crate::suite::capacity::Target;

/// How many rates the confirmation tries, each one precision step below the last, before it
/// reports the last one as not confirmed.
const MAX_CONFIRMS: usize = 4;

/// What the search was asked: by `sbsuite capacity`, or by `sbsuite run` of a suite with
/// `[capacity]`.
pub struct Request {
    pub file: PathBuf,
    pub sets: Vec<SetOverride>,
    /// The command line's choices; those unset come from the suite's `[capacity]`, else the
    /// defaults (the target has none).
    pub target: Option<Target>,
    /// Rates below this are not tried (transactions or events per second).
    pub min_rate: Option<f64>,
    /// The bracket's width at which the search stops, in % (5: hi/lo ≤ 1.05).
    pub precision: Option<f64>,
    /// Repetitions of the confirmation at the rate found.
    pub confirm: Option<u32>,
    pub home: Home,
    pub results_root: Option<PathBuf>,
    pub quiet: bool,
}

/// Where the search's directory goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Home {
    /// `sbsuite capacity`: `<results_dir>/<suite>-capacity/<id>/`.
    Own,
    /// `sbsuite run` of a `[capacity]` suite: the run directory, `<results_dir>/<suite>/<id>/`.
    Run,
}

/// The settings of one search, resolved.
struct Settings {
    target: Target,
    min_rate: f64,
    precision: f64,
    confirm: u32,
}

impl Sample {
    fn metric(&self, target: &Target) -> Option<f64> {
        target.of(&self.lat)
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

/// One measured run of the search (a row of `capacity.csv` per repetition).
#[derive(Clone, Debug)]
pub struct Probe {
    pub phase: Phase,
    /// The rate offered ([`offered`]: the rate searched at, whole); `None` for the
    /// closed-loop run.
    pub rate: Option<f64>,
    pub run_dir: PathBuf,
    /// One per repetition.
    pub samples: Vec<Sample>,
}

/// The rate a probe at `rate` offers: sysbench's rate is a whole number of events per second,
/// and 0 is none.
fn offered(rate: f64) -> f64 {
    rate.round().max(1.0)
}

/// The answer.
#[derive(Debug)]
pub struct Outcome {
    /// The search's directory ([`Home`]).
    pub dir: PathBuf,
    pub target: Target,
    pub probes: Vec<Probe>,
    pub found: Found,
}

impl Outcome {
    /// The curve of the search (`capacity.csv`): a point per probe repetition, in order.
    pub fn curve(&self) -> Curve {
        let points = self
            .probes
            .iter()
            .flat_map(|p| {
                p.samples.iter().map(|x| Point {
                    phase: p.phase,
                    offered: p.rate,
                    sample: x.clone(),
                    pass: p.rate.map(|r| x.passes(&self.target, r)),
                    run_dir: p.run_dir.clone(),
                })
            })
            .collect();
        Curve {
            target: self.target.clone(),
            points,
        }
    }
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
    #[error(
        "{file}: capacity runs each probe at one rate for `time` seconds: remove [[phases]]",
        file = .file.display()
    )]
    Phases { file: PathBuf },
    #[error("--precision must be above 0 (% of the rate), not {0}")]
    Precision(f64),
    #[error("--confirm must be at least 1")]
    Confirm,
    #[error("--min-rate must be above 0 (per second), not {0}")]
    MinRate(f64),
    #[error(
        "{file}: no latency target: give --target \"p99<10ms\" or a [capacity] section with \
         target = \"p99<10ms\"",
        file = .file.display()
    )]
    NoTarget { file: PathBuf },
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
            | CapacityError::Phases { .. }
            | CapacityError::Precision(_)
            | CapacityError::Confirm
            | CapacityError::MinRate(_)
            | CapacityError::NoTarget { .. } => true,
            CapacityError::Run { source, .. } => source.is_bad_input(),
            _ => false,
        }
    }
}

/// Runs the search; `note` receives a line per probe as it ends.
pub fn capacity(req: &Request, note: &mut dyn FnMut(&str)) -> Result<Outcome, CapacityError> {
    if let Some(p) = req.precision.filter(|p| !(p.is_finite() && *p > 0.0)) {
        return Err(CapacityError::Precision(p));
    }
    if req.confirm == Some(0) {
        return Err(CapacityError::Confirm);
    }
    if let Some(r) = req.min_rate.filter(|r| !(r.is_finite() && *r > 0.0)) {
        return Err(CapacityError::MinRate(r));
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
    if !user.phases.is_empty() {
        return Err(CapacityError::Phases {
            file: req.file.clone(),
        });
    }
    let section = user.capacity.as_ref();
    let settings = Settings {
        target: req
            .target
            .clone()
            .or_else(|| section.map(|c| c.target.clone()))
            .ok_or_else(|| CapacityError::NoTarget {
                file: req.file.clone(),
            })?,
        min_rate: req
            .min_rate
            .or(section.map(|c| c.min_rate))
            .unwrap_or(MIN_RATE),
        precision: req
            .precision
            .or(section.map(|c| c.precision))
            .unwrap_or(PRECISION),
        confirm: req
            .confirm
            .or(section.map(|c| c.confirm))
            .unwrap_or(CONFIRM),
    };
    let root = req
        .results_root
        .clone()
        .unwrap_or_else(|| user.results_dir.clone());
    // The probes' suites have no [capacity]: each is a run at one rate. A layer that sets a
    // key of the section would bring it back.
    let sets: Vec<SetOverride> = req
        .sets
        .iter()
        .filter(|o| o.path.first().map(String::as_str) != Some("capacity"))
        .cloned()
        .collect();
    let section_var = format!("{}CAPACITY__", suite::ENV_PREFIX);
    let env: Vec<(String, String)> = env
        .into_iter()
        .filter(|(k, _)| !k.to_ascii_uppercase().starts_with(&section_var))
        .collect();
    let mut s = Search {
        req,
        settings: &settings,
        text: &text,
        sets: &sets,
        env: &env,
        dir: PathBuf::new(),
        probes: Vec::new(),
        note,
    };
    // Checked before anything is created: the closed-loop probe's suite is every probe's
    // but for `rate`.
    let loaded = s.load("closed-loop", None, 1)?;
    let points = points(&loaded.plan);
    if points != 1 {
        return Err(CapacityError::Points {
            file: req.file.clone(),
            points,
        });
    }
    let name = crate::results::sanitise_name(&user.name);
    let parent = match req.home {
        Home::Own => root.join(format!("{name}-capacity")),
        Home::Run => root.join(name),
    };
    let (_, dir) = crate::results::create_run_dir(&parent, chrono::Utc::now())?;
    // What was searched, as every run directory keeps its suite.
    write_file(&dir.join(crate::results::SUITE_FILE), &user.resolved_toml)?;
    s.dir = dir.clone();

    let closed = s.probe(Phase::ClosedLoop, None, 1)?;
    let bound = s.probes[closed].samples[0].achieved;
    let step = 1.0 + settings.precision / 100.0;
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
        while rate >= settings.min_rate {
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
                let i = s.probe(Phase::Confirm, Some(rate), settings.confirm)?;
                let samples = &s.probes[i].samples;
                let passed = samples
                    .iter()
                    .filter(|x| x.passes(&settings.target, offered(rate)))
                    .count();
                tries += 1;
                if 2 * passed > samples.len()
                    || tries == MAX_CONFIRMS
                    || rate / step < settings.min_rate
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
        target: settings.target.clone(),
        probes: s.probes,
        found,
    };
    let curve = outcome.curve();
    let [latency, _] = charts(&curve);
    write_file(
        &dir.join(crate::results::capacity::CAPACITY_FILE),
        &curve.to_csv(),
    )?;
    write_file(&dir.join("capacity.txt"), &answer(&curve, &dir))?;
    write_file(&dir.join("capacity.svg"), &latency.to_svg(true))?;
    Ok(outcome)
}

/// How many matrix points `plan` runs (its run steps of the first repetition).
fn points(plan: &Plan) -> usize {
    plan.steps
        .iter()
        .filter(|st| st.kind == StepKind::Run && st.repetition == 1)
        .count()
}

/// What the search of a `[capacity]` suite needs of its plan, for `plan`, `validate` and
/// `run`: one matrix point (the section's other checks are the suite's own).
pub fn check_plan(suite: &Suite, plan: &Plan) -> Result<(), ConfigErrors> {
    let n = points(plan);
    if suite.capacity.is_none() || n == 1 {
        return Ok(());
    }
    Err(suite
        .error(
            &[Seg::key("capacity")],
            format!("[capacity] searches the rate of one matrix point, the suite has {n}"),
        )
        .with_help(
            "give every [matrix] axis one value (e.g. threads = [64]), or pick one with --set \
             (e.g. --set matrix.threads=[64])",
        )
        .into())
}

/// What `sbsuite plan` and `validate` say of a `[capacity]` suite: the search the run will do
/// instead of the plan's runs.
pub fn plan_text(suite: &Suite) -> String {
    let Some(c) = &suite.capacity else {
        return String::new();
    };
    format!(
        "Capacity search ([capacity]): `sbsuite run` searches the highest rate with {} \
         instead of running the plan once: a closed-loop run for the bound, then its run step \
         at fixed rates (open loop, rate_overflow = \"record\") halved from the bound down to \
         {}/s until one passes, bisection until within {} %, and the rate found repeated {} \
         times\n",
        c.target, c.min_rate, c.precision, c.confirm
    )
}

/// The state of one search.
struct Search<'a> {
    req: &'a Request,
    settings: &'a Settings,
    text: &'a str,
    /// The `--set` and `SBSUITE_*` layers of the probes (no `[capacity]` key).
    sets: &'a [SetOverride],
    env: &'a [(String, String)],
    dir: PathBuf,
    probes: Vec<Probe>,
    note: &'a mut dyn FnMut(&str),
}

impl Search<'_> {
    fn origin(&self) -> derived::Origin<'_> {
        derived::Origin {
            file: &self.req.file,
            sets: self.sets,
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
            table.remove("capacity");
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
                let r = rate.map_or(0, |r| offered(r) as i64);
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
        // Judged at the rate the run offers.
        let rate = rate.map(offered);
        let name = match rate {
            None => "closed-loop".to_string(),
            Some(r) => format!("{:02}-rate-{r}", self.probes.len() + 1),
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
        let target = &self.settings.target;
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
        Ok(self.probes[i].samples[0].passes(&self.settings.target, offered(rate)))
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
            lat: Latencies {
                avg: r.num("lat_avg"),
                p95: r.num("lat_p95"),
                p99: r.num("lat_p99"),
                max: r.num("lat_max"),
            },
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
    answer(&o.curve(), &o.dir)
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
    fn a_rate_passes_under_the_target_with_nothing_dropped_and_the_rate_achieved() {
        let t = Target::parse("p99<10").unwrap();
        let ok = Sample {
            achieved: 960.0,
            lat: Latencies {
                p99: Some(9.9),
                ..Latencies::default()
            },
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
            lat: Latencies {
                p99: Some(10.1),
                ..Latencies::default()
            },
            ..ok.clone()
        };
        assert!(!slow.passes(&t, 1000.0));
        let dropped = Sample {
            dropped: 3.0,
            ..ok.clone()
        };
        assert!(!dropped.passes(&t, 1000.0));
        let unmeasured = Sample {
            lat: Latencies::default(),
            ..ok
        };
        assert!(!unmeasured.passes(&t, 1000.0));
    }
}
