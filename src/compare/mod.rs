//! `sbsuite compare`: two runs, or the variants (any column) inside one run, with a verdict on
//! whether each difference is more than noise, and regression gates for CI.
//!
//! Shape, and why:
//! - Everything comes from the stored results, read through the one reader of a run directory
//!   ([`crate::results::load`]): results.csv, `suite.toml`, `server/*.csv`, `host.json`. So old runs
//!   compare with new ones and nothing needs a server.
//! - Analysis only, split by concern: this file holds the request and the comparison types;
//!   [`matching`] matches rows by their matrix keys (variant, workload, threads and every other
//!   axis; the column compared `--by` is left out of the key) with the repetitions as samples,
//!   and turns them into lines with verdicts; keys on one side only are listed, never dropped
//!   silently. [`stats`] holds the statistics, [`gates`] the `--fail-on` regression gates,
//!   [`setup`] the differences shown above the numbers: the machines (the client's
//!   `host.json`, each variant's server build and host from its capture; "unknown" for a run
//!   without them, never an error), the suite and the server variables (and
//!   [`Tools`], when the two runs were measured by different tools: an imported sysbench log
//!   against a run of sbsuite);
//!   [`CompareError`] and [`GateError`] say why a comparison or a gate could not be made.
//! - Per metric: medians, a 95 % interval per side (of the geometric mean for positive
//!   samples), delta in % of the baseline with the 95 % interval of the ratio of geometric
//!   means, and Welch's t-test on the ln values ([`stats`]); with one sample a side there is
//!   no verdict, only the raw delta, and gates say so. A difference that is not significant
//!   says how many repetitions would detect a 5 % and a 10 % change at the noise measured.
//!   The variants of a run made with `variant_order = "interleaved"` or `"randomized"` (read
//!   from its suite.toml) ran each repetition back to back: `--by variant` pairs them by
//!   repetition and uses the paired t-test on their log ratios instead (its interval and
//!   repetitions needed too), and says so.
//! - A metric cell that is not a number (`abc`, `NaN`, `inf`: a hand-edited or foreign file)
//!   is never a sample. Each run is checked once before comparing (`check_cells`, reading
//!   cells through [`Metric::read`] like the comparison does): under a gate on that metric the
//!   comparison is refused, naming the file, line, step and column, since a gate that cannot
//!   evaluate must not pass; otherwise the cell is left out with a warning in the notes. For
//!   the same reason a gate whose metric no matched key has on both sides (disjoint keys, an
//!   empty column) is an error, not a pass.
//! - Metrics: by default tps, qps, p95, p99, avg, errors, a custom workload's headline
//!   (`headline`, shown under its own name, e.g. `tpmC`) and, when the runs recorded them, the
//!   cost per transaction ([`COST_METRICS`], #29); `--metric` picks others, among them
//!   a transaction's measures as `TXN.METRIC` (`new_order.p95`), read from transactions.csv
//!   joined to the step rows ([`Run::rows_with_transactions`]) so that they are samples like
//!   any column ([`resolve_metrics`]). Names given at run time are interned (`intern`).
//! - Output goes through one exporter per format ([`export`]: table, markdown, csv, json),
//!   which only read the [`Comparison`]s. Printing them and the failed gates, and the exit
//!   code, belong to the binary's edge (`app/compare.rs`).

mod error;
pub mod export;
pub mod gates;
pub mod headline;
pub mod matching;
pub mod setup;
pub mod stats;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;

use crate::results::load::{self, BadCell, Parts, Row, Run};

pub use self::error::{CompareError, GateError};
pub use self::export::{Exporter, Format, render};
pub use self::gates::{Gate, parse_gates};
pub use self::matching::compare_sides;

use self::stats::Summary;

/// A metric and which way is better.
#[derive(Clone, Copy, Debug)]
pub struct Metric {
    pub name: &'static str,
    /// The results.csv column (`tps` falls back to `eps` for workloads without SQL).
    pub column: &'static str,
    pub higher_is_better: bool,
}

impl Metric {
    /// This metric's sample in `row`: its column, or `eps` for `tps` when the tps cell is empty
    /// (workloads without SQL); `Ok(None)` when not measured. The one place a metric cell is
    /// read, so the comparison and the check of bad cells (`check_cells`) agree.
    pub fn read(&self, row: &Row) -> Result<Option<f64>, BadCell> {
        match row.number(self.column)? {
            None if self.name == "tps" => row.number("eps"),
            v => Ok(v),
        }
    }
}

/// The metrics compared by default; the headline's ([`headline_metric`]) follows them.
pub const METRICS: &[Metric] = &[
    Metric {
        name: "tps",
        column: "tps",
        higher_is_better: true,
    },
    Metric {
        name: "qps",
        column: "qps",
        higher_is_better: true,
    },
    Metric {
        name: "p95",
        column: "lat_p95",
        higher_is_better: false,
    },
    Metric {
        name: "p99",
        column: "lat_p99",
        higher_is_better: false,
    },
    Metric {
        name: "avg",
        column: "lat_avg",
        higher_is_better: false,
    },
    Metric {
        name: "errors",
        column: "errors",
        higher_is_better: false,
    },
];

/// What a transaction cost (#29: the server's counters and the CPU of both sides, per
/// transaction), lower is better: compared by default when the runs recorded them, and by name
/// with `--metric` and `--fail-on`.
pub const COST_METRICS: &[Metric] = &[
    Metric {
        name: "server_fsyncs_per_txn",
        column: "server_fsyncs_per_txn",
        higher_is_better: false,
    },
    Metric {
        name: "server_log_bytes_per_txn",
        column: "server_log_bytes_per_txn",
        higher_is_better: false,
    },
    Metric {
        name: "server_cpu_ms_per_txn",
        column: "server_cpu_ms_per_txn",
        higher_is_better: false,
    },
    Metric {
        name: "client_cpu_us_per_txn",
        column: "client_cpu_us_per_txn",
        higher_is_better: false,
    },
];

/// The results.csv column of a custom workload's headline (`engine::HEADLINE`).
pub const HEADLINE: &str = crate::engine::HEADLINE;

/// The measures of a transaction as `TXN.NAME`: (name, transactions.csv column, higher is
/// better).
pub const TRANSACTION_METRICS: &[(&str, &str, bool)] = &[
    ("count", "count", true),
    ("rate", "rate", true),
    ("errors", "errors", false),
    ("rollbacks", "rollbacks", false),
    ("avg", "lat_avg_ms", false),
    ("p50", "lat_p50_ms", false),
    ("p95", "lat_p95_ms", false),
    ("p99", "lat_p99_ms", false),
    ("max", "lat_max_ms", false),
];

/// A metric name or column made at run time (`new_order.p95`, `tpmC`) as the `&'static str`
/// every metric carries: each distinct name is leaked once per process (a handful: the names
/// on the command line and the headline names of the runs read).
fn intern(s: &str) -> &'static str {
    static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.get(s) {
        return n;
    }
    let n: &'static str = Box::leak(s.into());
    names.insert(n);
    n
}

/// The headline metric of `runs`: named by the first run's headline name (`tpmC`), else
/// `headline`.
fn headline_metric(runs: &[&Run]) -> Metric {
    Metric {
        name: runs
            .iter()
            .find_map(|r| r.headline_name())
            .map_or(HEADLINE, intern),
        column: HEADLINE,
        higher_is_better: true,
    }
}

/// The metrics of a comparison of `runs`: `names` (`--metric`; the defaults when empty), then
/// the metric of each gate not among them; `gates` must be [`canonical_gates`]. A name is one
/// of [`METRICS`], `headline` or the headline's own name (`tpmC`; both are the one metric
/// [`headline_metric`]), or `TXN.METRIC` with TXN a transaction (or statement) of the runs'
/// transactions.csv and METRIC one of [`TRANSACTION_METRICS`]; anything else is an error
/// naming what exists.
pub fn resolve_metrics(
    names: &[String],
    gates: &[Gate],
    runs: &[&Run],
) -> Result<Vec<Metric>, CompareError> {
    let wanted: Vec<Metric> = if names.is_empty() {
        let recorded = |m: &&Metric| {
            runs.iter()
                .any(|r| r.rows.iter().any(|row| !row.get(m.column).is_empty()))
        };
        METRICS
            .iter()
            .copied()
            .chain([headline_metric(runs)])
            .chain(COST_METRICS.iter().filter(recorded).copied())
            .collect()
    } else {
        names
            .iter()
            .map(|n| resolve_metric(n.trim(), "--metric", runs))
            .collect::<Result<_, _>>()?
    };
    let mut out: Vec<Metric> = Vec::new();
    for m in wanted {
        if !out.iter().any(|o| o.name == m.name) {
            out.push(m);
        }
    }
    for g in gates {
        if !out.iter().any(|m| m.name == g.metric) {
            out.push(resolve_metric(g.metric, "--fail-on", runs)?);
        }
    }
    Ok(out)
}

/// `gates` with a gate on `headline` or on the headline's own name renamed to the name of
/// [`headline_metric`], the name of its lines.
pub fn canonical_gates(gates: &[Gate], runs: &[&Run]) -> Vec<Gate> {
    gates
        .iter()
        .map(|g| Gate {
            metric: if is_headline(g.metric, runs) {
                headline_metric(runs).name
            } else {
                g.metric
            },
            percent: g.percent,
        })
        .collect()
}

fn is_headline(name: &str, runs: &[&Run]) -> bool {
    name == HEADLINE || runs.iter().any(|r| r.headline_name() == Some(name))
}

fn resolve_metric(name: &str, option: &'static str, runs: &[&Run]) -> Result<Metric, CompareError> {
    if let Some(m) = METRICS.iter().chain(COST_METRICS).find(|m| m.name == name) {
        return Ok(*m);
    }
    let headline = headline_metric(runs);
    if is_headline(name, runs) {
        return Ok(headline);
    }
    let mut known: Vec<String> = Vec::new();
    for r in runs {
        for n in r.transaction_names() {
            if !known.contains(&n) {
                known.push(n);
            }
        }
    }
    let Some((txn, measure)) = name.rsplit_once('.') else {
        return Err(CompareError::UnknownMetric {
            option,
            name: name.to_string(),
            headline: headline.name,
            example: known.first().cloned(),
        });
    };
    let Some(&(_, column, higher_is_better)) =
        TRANSACTION_METRICS.iter().find(|(m, _, _)| *m == measure)
    else {
        return Err(CompareError::UnknownTransactionMetric {
            option,
            name: name.to_string(),
            measure: measure.to_string(),
        });
    };
    if !known.iter().any(|k| k == txn) {
        return Err(CompareError::UnknownTransaction {
            option,
            name: name.to_string(),
            txn: txn.to_string(),
            known,
        });
    }
    Ok(Metric {
        name: intern(name),
        column: intern(&format!("{txn}.{column}")),
        higher_is_better,
    })
}

/// One metric of one matched key.
#[derive(Clone, Debug, Serialize)]
pub struct Line {
    pub key: Vec<(String, String)>,
    pub metric: &'static str,
    pub base: Option<SideStats>,
    pub other: Option<SideStats>,
    /// (other − base) / base in %, of the medians.
    pub delta_pct: Option<f64>,
    /// 95 % interval of the change of geometric means (other / base − 1, in %): both sides
    /// positive with 2 samples or more ([`stats::log_welch`]); `None` otherwise.
    pub delta_ci_low: Option<f64>,
    pub delta_ci_high: Option<f64>,
    pub p_value: Option<f64>,
    /// The pairs of repetitions the paired t-test used (JSON: left out under Welch's test).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pairs: Option<usize>,
    /// The test behind `p_value`: [`TEST_LOG`], [`TEST_RAW`], [`TEST_PAIRED_LOG`] or
    /// [`TEST_PAIRED_RAW`]; `None` without a test.
    pub test: Option<&'static str>,
    /// `better`, `worse`, `~` (not significant), `n/a` (one sample a side).
    pub verdict: String,
    pub gate_failed: Option<String>,
    /// For a difference that is not significant (`~`) between two positive sides whose noise
    /// was measured: the repetitions a side that would detect a 5 % and a 10 % change (JSON:
    /// left out otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reps_needed: Option<RepsNeeded>,
}

/// [`Line::test`] of Welch's test on the ln values (both sides positive).
pub const TEST_LOG: &str = "welch-ln";
/// [`Line::test`] of Welch's test on the raw values (a side with a sample ≤ 0).
pub const TEST_RAW: &str = "welch";
/// [`Line::test`] of the paired t-test on the ln ratios (every value positive).
pub const TEST_PAIRED_LOG: &str = "paired-ln";
/// [`Line::test`] of the paired t-test on the differences (a value ≤ 0, e.g. errors 0).
pub const TEST_PAIRED_RAW: &str = "paired";

/// How many repetitions a side would detect a change at the noise measured
/// ([`stats::reps_needed`]; the assumptions are [`export::POWER_NOTE`]).
#[derive(Clone, Debug, Serialize)]
pub struct RepsNeeded {
    /// The sd of the ln values, pooled over both sides: √((s²_base + s²_other) / 2).
    pub sd_ln: f64,
    /// Repetitions a side for a 5 % change; `None` (JSON null) for more than
    /// [`stats::MAX_REPS`].
    pub change_5pct: Option<usize>,
    /// The same for a 10 % change.
    pub change_10pct: Option<usize>,
}

impl RepsNeeded {
    /// The repetitions needed between two positive sides with measured noise, when the
    /// samples are too few for it: `None` when the repetitions of the smaller side already
    /// detect a 5 % change (then "not significant" means no such change), when a side has a
    /// sample ≤ 0 or a single sample, or when neither has any spread.
    pub fn between(a: &Summary, b: &Summary) -> Option<RepsNeeded> {
        let ((_, sa), (_, sb)) = (a.log?, b.log?);
        if a.n < 2 || b.n < 2 {
            return None;
        }
        let sd_ln = ((sa.powi(2) + sb.powi(2)) / 2.0).sqrt();
        if sd_ln == 0.0 {
            return None;
        }
        let change_5pct = stats::reps_needed(sd_ln, 5.0, false);
        if change_5pct.is_some_and(|n| n <= a.n.min(b.n)) {
            return None;
        }
        Some(RepsNeeded {
            sd_ln,
            change_5pct,
            change_10pct: stats::reps_needed(sd_ln, 10.0, false),
        })
    }

    /// [`RepsNeeded::between`] for a paired comparison: the pairs needed at the sd of the ln
    /// ratios within the `n` pairs measured (`None` under the same conditions).
    pub fn paired(sd_ln: Option<f64>, n: usize) -> Option<RepsNeeded> {
        let sd_ln = sd_ln.filter(|sd| *sd > 0.0)?;
        let change_5pct = stats::reps_needed(sd_ln, 5.0, true);
        if n < 2 || change_5pct.is_some_and(|needed| needed <= n) {
            return None;
        }
        Some(RepsNeeded {
            sd_ln,
            change_5pct,
            change_10pct: stats::reps_needed(sd_ln, 10.0, true),
        })
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct SideStats {
    pub n: usize,
    pub median: f64,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// The method of the interval: `geometric-mean` (all samples positive) or `t-mean`.
    pub ci_method: &'static str,
}

impl From<&Summary> for SideStats {
    fn from(s: &Summary) -> SideStats {
        SideStats {
            n: s.n,
            median: s.median,
            ci_low: s.ci.map(|c| c.0),
            ci_high: s.ci.map(|c| c.1),
            ci_method: s.ci_method(),
        }
    }
}

/// One baseline-vs-other comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub base: String,
    pub other: String,
    /// The significance test of the verdicts: `Welch's t-test`, or `paired t-test over N pairs
    /// per key` for variants of a run whose repetitions ran back to back.
    pub test: String,
    /// Whether the verdicts come from the paired t-test.
    #[serde(skip)]
    pub paired: bool,
    /// What the `tps` metric measured: `tps`, or `eps` when no compared row has a tps (a
    /// workload without SQL: [`Metric::read`] falls back to its eps). The headline
    /// ([`headline`]) names it so.
    #[serde(skip)]
    pub throughput: &'static str,
    pub lines: Vec<Line>,
    /// Per metric: the geometric mean of other/base medians over matched keys, as a delta %.
    pub geomean: Vec<(&'static str, f64)>,
    pub only_base: Vec<Vec<(String, String)>>,
    pub only_other: Vec<Vec<(String, String)>>,
    /// Differences above the table: machines, suite lines and server variables.
    pub notes: Vec<String>,
    /// The compared rows whose throughput was not steady over their window (results.csv's
    /// `steady = no`, #29), one sentence each (JSON: left out when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unsteady: Vec<String>,
    /// The machines that differ (client `host.json`, each variant's server build and host),
    /// or are unknown; their lines are also in `notes`.
    pub hosts: Vec<setup::HostDiff>,
    /// Set when the two sides were measured by different tools (JSON: `tools`, left out when
    /// they were not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Tools>,
    pub few_samples: bool,
    /// The metrics with samples on both sides of at least one matched key: a gate on any other
    /// metric has nothing to evaluate ([`CompareError::GateHasNothing`]).
    #[serde(skip)]
    pub measured: Vec<&'static str>,
    /// The metrics compared, in order ([`resolve_metrics`]).
    #[serde(skip)]
    pub metrics: Vec<Metric>,
}

/// The tools of the two sides of a comparison, when they differ. Said above the numbers
/// because a tool is part of what is measured: its clients' CPU cost differs (sbsuite's OLTP
/// clients use less CPU than sysbench's, which on a small machine shows as higher server
/// throughput), so part of a difference may be the tool and not the system.
#[derive(Clone, Debug, Serialize)]
pub struct Tools {
    /// The baseline's tool (`sysbench 1.0 (imported log)`).
    pub base: String,
    /// The other side's tool (`sbsuite`).
    pub other: String,
    /// The sentence every text format prints.
    pub note: String,
}

impl Tools {
    /// `Some` when `a` and `b` name different tools (versions of one tool do not count).
    pub fn differ(a: &load::Origin, b: &load::Origin) -> Option<Tools> {
        (a.tool != b.tool).then(|| {
            let (base, other) = (a.describe(), b.describe());
            Tools {
                note: format!(
                    "different tools: the baseline was measured by {base}, the other side by {other}; their clients' CPU cost differs (sbsuite's OLTP clients use less CPU than sysbench's, which on a small machine shows as higher server throughput), so part of a difference may be the tool, not the system"
                ),
                base,
                other,
            }
        })
    }
}

/// A matrix key as `column=value …` (empty cells left out).
pub fn key_text(key: &[(String, String)]) -> String {
    key.iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A number as the text formats print it: 1 decimal from 100, 2 from 1, else 4.
pub(crate) fn num(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

/// A delta cell: the change of the medians, and the interval of the ratio of geometric means
/// when there is one.
pub(crate) fn delta_text(l: &Line) -> String {
    let Some(d) = l.delta_pct else {
        return String::new();
    };
    match (l.delta_ci_low, l.delta_ci_high) {
        (Some(lo), Some(hi)) => format!("{d:+.1}% [{lo:+.1}, {hi:+.1}]"),
        _ => format!("{d:+.1}%"),
    }
}

/// Reads a run for a comparison (read failures worded for `compare`: [`CompareError`]).
pub fn load_run(path: &Path) -> Result<Run, CompareError> {
    Ok(load::load(path, Parts::Results)?)
}

/// The metric cells of `run`'s `ok` rows that are not numbers (`abc`, `NaN`, `inf`), checked
/// once per run before anything is compared, so no metric and no gate needs a case of its own.
/// A bad cell in a metric that a gate watches fails the comparison
/// ([`CompareError::GateCannotEvaluate`]): the gate would otherwise pass on what it never
/// saw. Any other bad cell is left out of the comparison and said in a note (returned).
fn check_cells(
    run: &Run,
    rows: &[Row],
    metrics: &[Metric],
    gates: &[Gate],
) -> Result<Vec<String>, CompareError> {
    let mut notes = Vec::new();
    for row in rows.iter().filter(|r| r.cell("status") == Some("ok")) {
        for m in metrics {
            let Err(cell) = m.read(row) else { continue };
            if let Some(gate) = gates.iter().find(|g| g.metric == m.name) {
                return Err(CompareError::GateCannotEvaluate {
                    path: run.results_file(),
                    cell,
                    gate: gate.to_string(),
                    metric: m.name,
                });
            }
            notes.push(format!(
                "warning: {}: {cell}: left out of the comparison",
                run.results_file().display()
            ));
        }
    }
    Ok(notes)
}

/// What `sbsuite compare` was asked.
pub struct Request {
    pub runs: Vec<PathBuf>,
    pub by: Option<String>,
    pub gates: Vec<Gate>,
    /// `--metric`: the metrics to compare ([`resolve_metrics`]); empty: the defaults.
    pub metrics: Vec<String>,
}

/// Runs the comparisons of a request. A gate that cannot be evaluated is an error, never a
/// pass: a bad cell in its metric (`check_cells`) or no key with its metric on both sides
/// (disjoint keys, a column that is empty everywhere).
pub fn compare(req: &Request) -> Result<Vec<Comparison>, CompareError> {
    let cs = match (req.runs.as_slice(), &req.by) {
        ([a, b], None) => vec![two_runs(a, b, &req.metrics, &req.gates)?],
        ([one], Some(by)) => compare_by(&load_run(one)?, by, &req.metrics, &req.gates)?,
        (_, Some(_)) => return Err(CompareError::ByNeedsOneRun),
        _ => return Err(CompareError::Usage),
    };
    Ok(cs)
}

/// [`CompareError::GateHasNothing`] for the first of `gates` (canonical) whose metric `c` has
/// no values of on both sides.
fn check_measured(c: &Comparison, gates: &[Gate]) -> Result<(), CompareError> {
    match gates.iter().find(|g| !c.measured.contains(&g.metric)) {
        Some(g) => Err(CompareError::GateHasNothing {
            gate: g.to_string(),
            metric: g.metric,
            base: c.base.clone(),
            other: c.other.clone(),
        }),
        None => Ok(()),
    }
}

/// Run `a` as the baseline against run `b`, with what changed in the suite and the servers.
fn two_runs(
    a: &Path,
    b: &Path,
    names: &[String],
    gates: &[Gate],
) -> Result<Comparison, CompareError> {
    let (ra, rb) = (load_run(a)?, load_run(b)?);
    let (a, b) = (a.display().to_string(), b.display().to_string());
    compare_runs((&a, &ra), (&b, &rb), names, gates)
}

/// Two runs already read, each with the name its side goes by, the first as the baseline,
/// on the metrics `names` ([`resolve_metrics`]; the defaults when empty). `sbsuite compare A
/// B`, and the report's verdict on two runs.
pub fn compare_runs(
    (a, ra): (&str, &Run),
    (b, rb): (&str, &Run),
    names: &[String],
    gates: &[Gate],
) -> Result<Comparison, CompareError> {
    let gates = &canonical_gates(gates, &[ra, rb]);
    let metrics = resolve_metrics(names, gates, &[ra, rb])?;
    let (rows_a, rows_b) = (ra.rows_with_transactions(), rb.rows_with_transactions());
    let mut bad = check_cells(ra, &rows_a, &metrics, gates)?;
    bad.extend(check_cells(rb, &rows_b, &metrics, gates)?);
    if ra.key_columns() != rb.key_columns() {
        return Err(CompareError::DifferentKeys {
            base: ra.key_columns().to_vec(),
            other: rb.key_columns().to_vec(),
        });
    }
    let ar: Vec<_> = rows_a.iter().collect();
    let br: Vec<_> = rows_b.iter().collect();
    let mut c = compare_sides(a, b, &ar, &br, ra.key_columns(), &metrics, gates);
    c.notes = bad;
    c.tools = Tools::differ(&ra.origin, &rb.origin);
    c.hosts.extend(setup::client_diff(
        (&c.base, &ra.host),
        (&c.other, &rb.host),
    ));
    for (variant, va) in &ra.servers {
        if let Some(vb) = rb.servers.get(variant) {
            c.hosts.extend(setup::server_host_diff(variant, va, vb));
        }
    }
    c.notes.extend(c.hosts.iter().map(setup::HostDiff::text));
    if let (Some(sa), Some(sb)) = (&ra.suite_text, &rb.suite_text) {
        let d = setup::line_diff(sa, sb);
        if !d.is_empty() {
            c.notes.push("suite.toml differs:".into());
            c.notes.extend(d.into_iter().map(|l| format!("  {l}")));
        }
    }
    for (variant, va) in &ra.servers {
        if let Some(vb) = rb.servers.get(variant) {
            let d = setup::server_diff(va, vb);
            if !d.is_empty() {
                c.notes
                    .push(format!("server variables of variant {variant} differ:"));
                c.notes.extend(d);
            }
            let d = setup::parameter_diff(va, vb);
            if !d.is_empty() {
                c.notes
                    .push(format!("server parameters of variant {variant} differ:"));
                c.notes.extend(d);
            }
        }
    }
    check_measured(&c, gates)?;
    Ok(c)
}

/// `--by COLUMN` on a run already read: the first value of column `by` as the baseline
/// against each other value, on the metrics `names` ([`resolve_metrics`]; the defaults when
/// empty). The report's section on variants shows these comparisons.
pub fn compare_by(
    r: &Run,
    by: &str,
    names: &[String],
    gates: &[Gate],
) -> Result<Vec<Comparison>, CompareError> {
    let gates = &canonical_gates(gates, &[r]);
    let metrics = resolve_metrics(names, gates, &[r])?;
    let all_rows = r.rows_with_transactions();
    let bad = check_cells(r, &all_rows, &metrics, gates)?;
    if !r.header.iter().any(|h| h == by) {
        return Err(CompareError::NoSuchColumn {
            by: by.to_string(),
            path: r.path.clone(),
            columns: r.key_columns().to_vec(),
        });
    }
    let keys: Vec<String> = r
        .key_columns()
        .iter()
        .filter(|k| *k != by)
        .cloned()
        .collect();
    let mut values: Vec<&str> = Vec::new();
    for row in &all_rows {
        let v = row.cell(by).unwrap_or_default();
        if !values.contains(&v) {
            values.push(v);
        }
    }
    let [first, rest @ ..] = values.as_slice() else {
        return Err(one_value(by, "", r));
    };
    if rest.is_empty() {
        return Err(one_value(by, first, r));
    }
    let with = |v: &str| -> Vec<_> {
        all_rows
            .iter()
            .filter(|row| row.cell(by) == Some(v))
            .collect()
    };
    let base_rows = with(first);
    // Variants of an interleaved or randomized run ran each repetition back to back.
    let compare = if by == "variant" && variant_order(r).pairs_repetitions() {
        matching::compare_paired
    } else {
        compare_sides
    };
    let mut out = Vec::new();
    for v in rest {
        let mut c = compare(
            &format!("{by}={first}"),
            &format!("{by}={v}"),
            &base_rows,
            &with(v),
            &keys,
            &metrics,
            gates,
        );
        c.notes.clone_from(&bad);
        if by == "variant"
            && let (Some(a), Some(b)) = (r.servers.get(*first), r.servers.get(*v))
        {
            if let Some(h) = setup::server_host_diff(&format!("{first} → {v}"), a, b) {
                c.notes.push(h.text());
                c.hosts.push(h);
            }
            let d = setup::server_diff(a, b);
            if !d.is_empty() {
                c.notes
                    .push(format!("server variables differ ({first} → {v}):"));
                c.notes.extend(d);
            }
            let d = setup::parameter_diff(a, b);
            if !d.is_empty() {
                c.notes
                    .push(format!("server parameters differ ({first} → {v}):"));
                c.notes.extend(d);
            }
        }
        out.push(c);
    }
    for c in &out {
        check_measured(c, gates)?;
    }
    Ok(out)
}

/// The `[suite] variant_order` of a run, from its stored suite.toml: `blocked` when it says
/// none (runs made before the key existed, imported logs).
fn variant_order(r: &Run) -> crate::suite::raw::VariantOrder {
    r.suite_text
        .as_deref()
        .and_then(|t| toml::from_str::<toml::Table>(t).ok())
        .and_then(|t| t.get("suite")?.get("variant_order").cloned())
        .and_then(|v| v.try_into().ok())
        .unwrap_or_default()
}

fn one_value(by: &str, value: &str, r: &Run) -> CompareError {
    CompareError::OneValue {
        by: by.to_string(),
        value: value.to_string(),
        path: r.path.clone(),
    }
}
