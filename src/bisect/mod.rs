//! `sbsuite bisect`: which of the settings two variants differ in makes a metric differ.
//!
//! Twelve settings changed between two configurations and tps fell 12 %: the answer people
//! find by a week of hand-made variants. Here each question is a *probe*: a run of the suite
//! with two variants, the baseline and the baseline plus a subset of the other variant's
//! settings, repeated and compared with the test `compare --by variant` uses (paired on the
//! log ratios, the two variants back to back in each repetition, unless a `restart` forces
//! them apart). [`ddmin`] picks the subsets.
//!
//! Why it is shaped this way:
//! - **Every probe is an ordinary run** of a suite generated from the user's (stored under
//!   the bisection's directory, with its own `suite.toml`, results and server captures): the
//!   settings are applied, checked and restored by the same code as `sbsuite run`, on every
//!   path, and any probe can be looked at with `compare` and `report`.
//! - **The baseline is measured again in every probe**, next to the subset: a drift between
//!   probes (a table growing, a cache warming) never reads as a setting's effect.
//! - **A subset reproduces the difference** when, at every matrix point where the two
//!   variants differ significantly, it differs significantly in the same direction, and its
//!   95 % interval reaches `share` of the full difference. "Significant" is `compare`'s
//!   verdict (α = 0.05). The interval and not the point estimate, because a write workload
//!   bound by fsyncs on a virtual disk swings by a factor of several between minutes: a
//!   probe whose effect is all of the difference can estimate below half of it.
//! - **The rest is measured too**: the settings outside the cause, applied together, get
//!   their own probe, so "no significant effect" is a measurement, not an inference.

pub mod captures;
pub mod ddmin;
pub mod settings;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::compare::{CompareError, Line, key_text};
use crate::results::ResultsError;
use crate::runner::derived::{self, DerivedError};
use crate::source::ConfigErrors;
use crate::suite::raw::RawVariant;
use crate::suite::{self, SetOverride, Suite};

use self::settings::{DiffError, Setting};

/// What `sbsuite bisect` was asked.
pub struct Request {
    pub file: PathBuf,
    pub sets: Vec<SetOverride>,
    /// The baseline variant; default: the suite's first.
    pub base: Option<String>,
    /// The variant whose settings are bisected; default: the suite's second.
    pub other: Option<String>,
    /// Two captures (`server/<variant>.csv`) as the two sides instead of the suite's variants.
    pub captures: Option<(PathBuf, PathBuf)>,
    /// The metric (`compare --metric` names); default `tps`.
    pub metric: String,
    /// The share of the full difference (0 < share ≤ 1) a subset must reproduce.
    pub share: f64,
    /// `--results-dir`: instead of the suite's `results_dir`.
    pub results_root: Option<PathBuf>,
    pub quiet: bool,
}

/// The default `Request::share`: half of the full difference.
pub const DEFAULT_SHARE: f64 = 0.5;

/// One probe: the baseline against the baseline plus `subset` (indices into the settings).
#[derive(Clone, Debug)]
pub struct Probe {
    /// `probe-01`…, also the name of its suite.
    pub name: String,
    pub subset: Vec<usize>,
    pub run_dir: PathBuf,
    /// The metric's comparison lines, one per matrix point.
    pub lines: Vec<Line>,
    /// The test of the verdicts (`paired t-test over 3 pairs per key`).
    pub test: String,
    /// Whether it reproduces the full difference (`None`: the full difference itself, and the
    /// probe of the rest, which nothing is decided on).
    pub reproduces: Option<Decision>,
}

impl Probe {
    /// Whether any matrix point differs significantly.
    pub fn significant(&self) -> bool {
        self.lines.iter().any(significant)
    }

    /// The repetitions a side at its matrix points (the fewest).
    pub fn pairs(&self) -> usize {
        self.lines
            .iter()
            .filter_map(|l| l.base.as_ref().map(|b| b.n))
            .min()
            .unwrap_or(0)
    }
}

/// What a bisection found.
#[derive(Debug)]
pub enum Verdict {
    /// The two variants do not differ significantly in the metric: nothing to bisect.
    NoDifference,
    /// `cause` (indices into the settings), the smallest subset found that reproduces the
    /// difference, measured alone in probe `cause_probe`; the other settings together in
    /// `rest_probe` (`None` when the cause is every setting).
    Found {
        cause: Vec<usize>,
        cause_probe: usize,
        rest_probe: Option<usize>,
    },
}

/// A finished bisection.
#[derive(Debug)]
pub struct Outcome {
    /// `<results_dir>/<suite>-bisect/<id>/`: `bisect.csv`, `bisect.txt` and a run per probe.
    pub dir: PathBuf,
    pub base: String,
    pub other: String,
    pub metric: &'static str,
    pub share: f64,
    pub settings: Vec<Setting>,
    /// Names two captures differ in that are not bisected, with why.
    pub skipped: Vec<(String, String)>,
    /// In the order they ran; the first is the full difference.
    pub probes: Vec<Probe>,
    pub verdict: Verdict,
}

#[derive(Debug, thiserror::Error)]
pub enum BisectError {
    #[error("{0}")]
    Config(#[from] ConfigErrors),
    #[error(
        "{file}: bisect needs two [[variant]]s to compare, the suite has {count}; add the \
         variant whose settings to bisect, or name them with --base and --other",
        file = .file.display()
    )]
    NeedTwo { file: PathBuf, count: usize },
    #[error(
        "{file}: no [[variant]] named `{name}` (the suite has {known}); fix --{option}",
        file = .file.display()
    )]
    NoVariant {
        file: PathBuf,
        name: String,
        known: String,
        option: &'static str,
    },
    #[error(transparent)]
    Captures(#[from] captures::CaptureError),
    /// `--metric` names no metric (checked before the first probe when the suite runs no
    /// custom workload).
    #[error(transparent)]
    Metric(CompareError),
    #[error("{file}: {source}", file = .file.display())]
    Diff {
        file: PathBuf,
        #[source]
        source: DiffError,
    },
    #[error(
        "--share must be above 0 and at most 100 (% of the full difference), not {}",
        .0 * 100.0
    )]
    Share(f64),
    #[error("{probe}: {source}")]
    Run {
        probe: String,
        #[source]
        source: DerivedError,
    },
    #[error("stopped during {probe}; the probes so far are in {}", .dir.display())]
    Interrupted { probe: String, dir: PathBuf },
    #[error("{probe}: {source}")]
    Compare {
        probe: String,
        #[source]
        source: CompareError,
    },
    #[error(
        "{probe}: `{metric}` was not measured at any matrix point on both sides; choose \
         another --metric"
    )]
    NotMeasured { probe: String, metric: String },
    #[error(transparent)]
    Results(#[from] ResultsError),
    #[error("writing {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl BisectError {
    /// Whether the request itself is wrong (exit 2), as opposed to a probe that failed.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            BisectError::Config(_)
                | BisectError::NeedTwo { .. }
                | BisectError::NoVariant { .. }
                | BisectError::Diff { .. }
                | BisectError::Captures(_)
                | BisectError::Metric(_)
                | BisectError::Share(_)
                | BisectError::NotMeasured { .. }
        ) || matches!(self, BisectError::Run { source, .. } if source.is_bad_input())
            || matches!(
                self,
                BisectError::Compare { source, .. } if matches!(source, CompareError::UnknownMetric { .. })
            )
    }
}

/// Runs a bisection; `note` receives a line per probe as it ends.
pub fn bisect(req: &Request, note: &mut dyn FnMut(&str)) -> Result<Outcome, BisectError> {
    if !(req.share > 0.0 && req.share <= 1.0) {
        return Err(BisectError::Share(req.share));
    }
    let text = suite::read_text(&req.file)?;
    let env = suite::env_layer();
    let suite = suite::load_text(&req.file, &text, &req.sets, &env)?;
    let (base, other, skipped) = match &req.captures {
        Some((a, b)) => {
            let plan = crate::plan::build(&suite)?;
            let target = plan
                .steps
                .iter()
                .find_map(|s| s.target.clone())
                .filter(|t| t.has_server())
                .ok_or(captures::CaptureError::NoServer)?;
            let sides = captures::sides(&target, a, b)?;
            (sides.base, sides.other, sides.skipped)
        }
        None => {
            let (base, other) = pick(&suite, req)?;
            (base, other, Vec::new())
        }
    };
    let settings = settings::differences(&base, &other).map_err(|source| BisectError::Diff {
        file: req.file.clone(),
        source,
    })?;
    let root = req
        .results_root
        .clone()
        .unwrap_or_else(|| suite.results_dir.clone());
    let parent = root.join(format!(
        "{}-bisect",
        crate::results::sanitise_name(&suite.name)
    ));
    let mut b = Bisection {
        req,
        text: &text,
        env: &env,
        suite: &suite,
        base: &base,
        other: &other,
        settings: &settings,
        dir: PathBuf::new(),
        probes: Vec::new(),
        metric: None,
        note,
    };
    let all: Vec<usize> = (0..settings.len()).collect();
    // Everything a probe needs is checked before anything is created or run: the probe of
    // every setting names them all.
    let loaded = b.load("probe-01", &all, None)?;
    // A typo in --metric is found now, not after the first probe: every metric but a custom
    // workload's own (its headline's name, `TXN.METRIC`) is known without results.
    let custom = loaded.plan.steps.iter().any(|s| {
        s.spec
            .is_some_and(|w| matches!(w.definition, crate::engine::Definition::Custom(_)))
    });
    if !custom {
        crate::compare::resolve_metrics(std::slice::from_ref(&req.metric), &[], &[])
            .map_err(BisectError::Metric)?;
    }
    let (_, dir) = crate::results::create_run_dir(&parent, chrono::Utc::now())?;
    b.dir.clone_from(&dir);
    let full = b.probe(&all, None)?;
    let verdict = if !b.probes[full].significant() {
        Verdict::NoDifference
    } else {
        let cause = ddmin::ddmin::<BisectError>(settings.len(), &mut |subset| {
            let mut i = b.probe(subset, None)?;
            let mut decision = b.decide(i);
            b.probes[i].reproduces = Some(decision);
            if decision == Decision::Inconclusive {
                let again = u32::try_from(2 * b.probes[i].pairs().max(3)).unwrap_or(u32::MAX);
                (b.note)(&format!(
                    "  inconclusive: measuring again with {again} repetitions"
                ));
                i = b.probe(subset, Some(again))?;
                decision = b.decide(i);
                b.probes[i].reproduces = Some(decision);
            }
            (b.note)(&format!(
                "  {}",
                match decision {
                    Decision::Yes => "reproduces the difference",
                    Decision::No => "does not reproduce the difference",
                    Decision::Inconclusive => "still inconclusive: taken as not reproducing",
                }
            ));
            Ok(decision == Decision::Yes)
        })?;
        let cause_probe = b
            .probes
            .iter()
            .rposition(|p| p.subset == cause)
            .unwrap_or(full);
        let rest: Vec<usize> = all.iter().copied().filter(|i| !cause.contains(i)).collect();
        let rest_probe = if rest.is_empty() {
            None
        } else {
            Some(b.probe(&rest, None)?)
        };
        Verdict::Found {
            cause,
            cause_probe,
            rest_probe,
        }
    };
    let outcome = Outcome {
        dir: dir.clone(),
        base: base.name.clone(),
        other: other.name.clone(),
        metric: b.metric.unwrap_or("tps"),
        share: req.share,
        probes: b.probes,
        settings,
        skipped,
        verdict,
    };
    write_file(&dir.join("bisect.csv"), &csv(&outcome))?;
    write_file(&dir.join("bisect.txt"), &summary(&outcome))?;
    Ok(outcome)
}

/// The baseline and the other variant of the request.
fn pick(suite: &Suite, req: &Request) -> Result<(RawVariant, RawVariant), BisectError> {
    let find = |name: &Option<String>, index: usize, option: &'static str| match name {
        Some(n) => suite
            .variants
            .iter()
            .find(|v| &v.name == n)
            .cloned()
            .ok_or_else(|| BisectError::NoVariant {
                file: req.file.clone(),
                name: n.clone(),
                known: if suite.variants.is_empty() {
                    "none".into()
                } else {
                    suite
                        .variants
                        .iter()
                        .map(|v| format!("`{}`", v.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                },
                option,
            }),
        None => suite
            .variants
            .get(index)
            .cloned()
            .ok_or(BisectError::NeedTwo {
                file: req.file.clone(),
                count: suite.variants.len(),
            }),
    };
    Ok((find(&req.base, 0, "base")?, find(&req.other, 1, "other")?))
}

/// The state of one bisection.
struct Bisection<'a> {
    req: &'a Request,
    text: &'a str,
    env: &'a [(String, String)],
    suite: &'a Suite,
    base: &'a RawVariant,
    other: &'a RawVariant,
    settings: &'a [Setting],
    /// The bisection's directory (created once the request is checked).
    dir: PathBuf,
    probes: Vec<Probe>,
    /// The metric's canonical name, once the first probe resolved it.
    metric: Option<&'static str>,
    note: &'a mut dyn FnMut(&str),
}

impl Bisection<'_> {
    /// Runs the probe of `subset` and returns its index in `probes`.
    /// `repeat`: a count instead of the suite's (a probe measured again).
    fn probe(&mut self, subset: &[usize], repeat: Option<u32>) -> Result<usize, BisectError> {
        let name = format!("probe-{:02}", self.probes.len() + 1);
        let chosen: Vec<&Setting> = subset.iter().map(|i| &self.settings[*i]).collect();
        (self.note)(&format!(
            "[bisect] {name}: {} with {}",
            self.base.name,
            if subset.len() == self.settings.len() {
                format!("every setting of {} ({})", self.other.name, subset.len())
            } else {
                chosen
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ));
        let loaded = self.load(&name, subset, repeat)?;
        let summary = derived::run(&self.origin(), loaded).map_err(|e| match e {
            DerivedError::Interrupted { .. } => BisectError::Interrupted {
                probe: name.clone(),
                dir: self.dir.clone(),
            },
            source => BisectError::Run {
                probe: name.clone(),
                source,
            },
        })?;
        let compared = crate::compare::load_run(&summary.run_dir).and_then(|run| {
            crate::compare::compare_by(&run, "variant", std::slice::from_ref(&self.req.metric), &[])
        });
        let c = compared
            .map_err(|source| BisectError::Compare {
                probe: name.clone(),
                source,
            })?
            .into_iter()
            .next()
            .ok_or_else(|| BisectError::NotMeasured {
                probe: name.clone(),
                metric: self.req.metric.clone(),
            })?;
        let metric = c.metrics.first().map_or("tps", |m| m.name);
        self.metric = Some(metric);
        let lines: Vec<Line> = c
            .lines
            .iter()
            .filter(|l| l.metric == metric && l.delta_pct.is_some())
            .cloned()
            .collect();
        if lines.is_empty() {
            return Err(BisectError::NotMeasured {
                probe: name,
                metric: self.req.metric.clone(),
            });
        }
        (self.note)(&format!("  {metric}: {}", effect_text(&lines)));
        self.probes.push(Probe {
            name,
            subset: subset.to_vec(),
            run_dir: summary.run_dir,
            lines,
            test: c.test,
            reproduces: None,
        });
        Ok(self.probes.len() - 1)
    }

    /// The suite of the probe of `subset`, loaded, planned and checked against the server
    /// (every `set_global` exists and is settable) as `sbsuite run` checks it.
    fn load(
        &self,
        name: &str,
        subset: &[usize],
        repeat: Option<u32>,
    ) -> Result<derived::Loaded, BisectError> {
        let chosen: Vec<&Setting> = subset.iter().map(|i| &self.settings[*i]).collect();
        let probe_variant = settings::probe(self.base, self.other, &chosen, "probe");
        let text = self.probe_text(name, &probe_variant, repeat);
        Ok(derived::load(&self.origin(), &text)?)
    }

    fn origin(&self) -> derived::Origin<'_> {
        derived::Origin {
            file: &self.req.file,
            sets: &self.req.sets,
            env: self.env,
            results_root: self.dir.clone(),
            quiet: self.req.quiet,
        }
    }

    /// The suite of a probe: the user's file with its variants replaced by the baseline and
    /// `probe`, named `name`, repeated enough for a verdict, the two variants back to back
    /// unless one restarts the server.
    fn probe_text(&self, name: &str, probe: &RawVariant, repeat: Option<u32>) -> String {
        derived::edit(self.text, |table| {
            derived::with_suite_section(table, |s| {
                s.insert("name".into(), toml::Value::String(name.into()));
                let restarts = self.base.restart.is_some() || probe.restart.is_some();
                let order = if restarts { "blocked" } else { "interleaved" };
                s.insert("variant_order".into(), toml::Value::String(order.into()));
                s.remove("order_seed");
                if let Some(n) = repeat {
                    s.insert("repeat".into(), toml::Value::Integer(i64::from(n)));
                } else if self.suite.repeat_rule.is_none() && self.suite.repeat < 3 {
                    s.insert("repeat".into(), default_repeat(&self.req.metric));
                }
            });
            let variants = [self.base, probe]
                .into_iter()
                .filter_map(|v| toml::Value::try_from(v).ok())
                .collect();
            table.insert("variant".into(), toml::Value::Array(variants));
        })
    }

    /// Whether probe `i` reproduces the full difference (probe 0). At each matrix point where
    /// that is significant: yes when the probe is significant in the same direction and the
    /// far end of its interval reaches `share` of it; no when even the far end falls short, or
    /// it is significant the other way; inconclusive otherwise (not significant, but its
    /// interval does not rule the share out). Any no is no; all yes is yes.
    fn decide(&self, i: usize) -> Decision {
        let full = &self.probes[0];
        let probe = &self.probes[i];
        let mut decision = Decision::No;
        for f in full.lines.iter().filter(|l| significant(l)) {
            let Some(p) = probe.lines.iter().find(|l| l.key == f.key) else {
                return Decision::No;
            };
            let (Some(fd), Some(pd)) = (f.delta_pct, p.delta_pct) else {
                return Decision::No;
            };
            let dir = fd.signum();
            let reach = match (p.delta_ci_low, p.delta_ci_high) {
                (Some(lo), Some(hi)) => (lo * dir).max(hi * dir),
                _ => pd * dir,
            };
            let point = if reach < self.req.share * fd.abs() || (significant(p) && pd * dir < 0.0) {
                return Decision::No;
            } else if significant(p) {
                Decision::Yes
            } else {
                Decision::Inconclusive
            };
            decision = match (decision, point) {
                (Decision::Inconclusive, _) | (_, Decision::Inconclusive) => Decision::Inconclusive,
                _ => Decision::Yes,
            };
        }
        decision
    }
}

/// Whether a probe reproduced the full difference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Yes,
    No,
    /// Not significant, with an interval that does not rule the difference out: measured
    /// again with twice the repetitions; when still inconclusive, taken as no.
    Inconclusive,
}

impl Decision {
    fn as_str(self) -> &'static str {
        match self {
            Decision::Yes => "yes",
            Decision::No => "no",
            Decision::Inconclusive => "inconclusive",
        }
    }
}

/// `repeat` of a probe when the suite asks for fewer than 3 repetitions: a comparison needs
/// pairs, and a quiet workload stops at the minimum.
fn default_repeat(metric: &str) -> toml::Value {
    let mut rule = toml::Table::new();
    rule.insert("min".into(), toml::Value::Integer(3));
    rule.insert("max".into(), toml::Value::Integer(8));
    rule.insert("until".into(), toml::Value::String("ci95 < 3%".into()));
    if crate::suite::raw::REPEAT_METRICS.contains(&metric) {
        rule.insert("metric".into(), toml::Value::String(metric.into()));
    }
    toml::Value::Table(rule)
}

fn significant(l: &Line) -> bool {
    l.verdict == "better" || l.verdict == "worse"
}

/// `+43.1 % [+40.2, +46.0] better (p 0.0012)`, one per matrix point (`threads=8: …; …`).
pub fn effect_text(lines: &[Line]) -> String {
    let one = |l: &Line| {
        let mut s = format!("{:+.1} %", l.delta_pct.unwrap_or(f64::NAN));
        if let (Some(lo), Some(hi)) = (l.delta_ci_low, l.delta_ci_high) {
            let _ = write!(s, " [{lo:+.1}, {hi:+.1}]");
        }
        let verdict = if significant(l) {
            l.verdict.as_str()
        } else {
            "not significant"
        };
        let _ = write!(s, " {verdict}");
        if let Some(p) = l.p_value {
            let _ = write!(s, " (p {p:.3})");
        }
        s
    };
    if lines.len() == 1 {
        return one(&lines[0]);
    }
    lines
        .iter()
        .map(|l| format!("{}: {}", key_text(&l.key), one(l)))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The answer, as `sbsuite bisect` prints it and `bisect.txt` keeps it.
pub fn summary(o: &Outcome) -> String {
    let mut t = String::new();
    let list = |idx: &[usize]| {
        idx.iter()
            .map(|i| format!("  {}\n", o.settings[*i]))
            .collect::<String>()
    };
    let full = &o.probes[0];
    let _ = writeln!(
        t,
        "bisect of {}: `{}` → `{}`, {} setting{} differ",
        o.metric,
        o.base,
        o.other,
        o.settings.len(),
        if o.settings.len() == 1 { "" } else { "s" }
    );
    if !o.skipped.is_empty() {
        let _ = writeln!(
            t,
            "not bisected ({} captured difference{}):",
            o.skipped.len(),
            if o.skipped.len() == 1 { "" } else { "s" }
        );
        for (name, why) in &o.skipped {
            let _ = writeln!(t, "  {name}: {why}");
        }
    }
    let _ = writeln!(
        t,
        "full difference: {} {}; {}",
        o.metric,
        effect_text(&full.lines),
        full.test
    );
    match &o.verdict {
        Verdict::NoDifference => {
            t.push_str(
                "no significant difference between the two variants: nothing to bisect (more \
                 repetitions may show one: --set 'suite.repeat={ min = 5, max = 20, until = \
                 \"ci95 < 1%\" }')\n",
            );
        }
        Verdict::Found {
            cause,
            cause_probe,
            rest_probe,
        } => {
            let p = &o.probes[*cause_probe];
            let _ = writeln!(
                t,
                "cause: {} setting{} ({} alone: {} {})",
                cause.len(),
                if cause.len() == 1 { "" } else { "s" },
                p.name,
                o.metric,
                effect_text(&p.lines)
            );
            t.push_str(&list(cause));
            if let Some(r) = rest_probe {
                let rp = &o.probes[*r];
                let rest: Vec<usize> = (0..o.settings.len())
                    .filter(|i| !cause.contains(i))
                    .collect();
                let head = if rp.significant() {
                    "the other settings also have a significant effect"
                } else {
                    "no significant effect"
                };
                let _ = writeln!(
                    t,
                    "{head} ({} together: {} {})",
                    rp.name,
                    o.metric,
                    effect_text(&rp.lines)
                );
                t.push_str(&list(&rest));
            }
        }
    }
    let _ = writeln!(
        t,
        "{} probes (a subset reproduces the difference when it changes {} significantly in the \
         same direction and its interval reaches {:.0} % of the full difference); details in {}",
        o.probes.len(),
        o.metric,
        o.share * 100.0,
        o.dir.join("bisect.csv").display()
    );
    t
}

/// `bisect.csv`: a row per probe and matrix point.
pub fn csv(o: &Outcome) -> String {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    let _ = w.write_record([
        "probe",
        "settings",
        "key",
        "metric",
        "base_median",
        "probe_median",
        "delta_pct",
        "ci_low",
        "ci_high",
        "p_value",
        "test",
        "verdict",
        "reproduces",
        "run_dir",
    ]);
    let num = |v: Option<f64>| v.map(|v| format!("{v:.4}")).unwrap_or_default();
    for p in &o.probes {
        let names: Vec<String> = p.subset.iter().map(|i| o.settings[*i].key()).collect();
        for l in &p.lines {
            let _ = w.write_record([
                p.name.clone(),
                names.join(";"),
                key_text(&l.key),
                o.metric.to_string(),
                num(l.base.as_ref().map(|s| s.median)),
                num(l.other.as_ref().map(|s| s.median)),
                num(l.delta_pct),
                num(l.delta_ci_low),
                num(l.delta_ci_high),
                num(l.p_value),
                l.test.unwrap_or_default().to_string(),
                l.verdict.clone(),
                p.reproduces
                    .map(Decision::as_str)
                    .unwrap_or_default()
                    .to_string(),
                p.run_dir.display().to_string(),
            ]);
        }
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

fn write_file(path: &Path, text: &str) -> Result<(), BisectError> {
    std::fs::write(path, text).map_err(|source| BisectError::Write {
        path: path.to_path_buf(),
        source,
    })
}
