//! `sbsuite compare`: two runs, or the variants (any column) inside one run, with a verdict on
//! whether each difference is more than noise, and regression gates for CI.
//!
//! Shape, and why:
//! - Everything comes from the stored CSV results (and `suite.toml`, `server/*.csv`), so old
//!   runs compare with new ones and nothing needs a server.
//! - Rows are matched by their matrix keys (variant, workload, threads and every other axis;
//!   the column compared `--by` is left out of the key); repetitions are the samples. Keys on
//!   one side only are listed, never dropped silently.
//! - Per metric: medians, a 95 % CI per side, delta in % of the baseline, and Welch's t-test
//!   ([`stats`]); with one sample a side there is no verdict, only the raw delta, and gates
//!   say so.

pub mod stats;

use std::collections::{BTreeMap, BTreeSet};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use serde::Serialize;

use self::stats::{ALPHA, Summary};

/// A metric and which way is better.
#[derive(Clone, Copy, Debug)]
pub struct Metric {
    pub name: &'static str,
    /// The results.csv column (`tps` falls back to `eps` for workloads without SQL).
    pub column: &'static str,
    pub higher_is_better: bool,
}

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

/// One loaded results.csv with what surrounds it.
pub struct Run {
    pub path: PathBuf,
    pub header: Vec<String>,
    pub rows: Vec<BTreeMap<String, String>>,
    pub suite_text: Option<String>,
    /// `server/<variant>.csv` → name → value.
    pub server: BTreeMap<String, BTreeMap<String, String>>,
}

/// Loads a run directory or a results.csv file.
pub fn load_run(path: &Path) -> Result<Run, String> {
    let (dir, csv) = if path.is_dir() {
        (path.to_path_buf(), path.join(crate::results::RESULTS_FILE))
    } else {
        (
            path.parent().map(Path::to_path_buf).unwrap_or_default(),
            path.to_path_buf(),
        )
    };
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(&csv)
        .map_err(|e| {
            format!(
                "{}: {e} (give a run directory results/<suite>/<run-id> or its results.csv; `sbsuite runs` lists them)",
                csv.display()
            )
        })?;
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| format!("{}: {e}", csv.display()))?
        .iter()
        .map(str::to_string)
        .collect();
    for needed in ["variant", "workload", "repetition", "status"] {
        if !header.iter().any(|h| h == needed) {
            return Err(format!(
                "{}: no `{needed}` column: not a results.csv written by sbsuite (old sysbench logs: `sbsuite import`)",
                csv.display()
            ));
        }
    }
    let mut rows = Vec::new();
    for rec in reader.records() {
        let rec = rec.map_err(|e| format!("{}: {e}", csv.display()))?;
        rows.push(
            header
                .iter()
                .cloned()
                .zip(rec.iter().map(str::to_string))
                .collect(),
        );
    }
    let suite_text = std::fs::read_to_string(dir.join(crate::results::SUITE_FILE)).ok();
    let mut server = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir(dir.join("server")) {
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "csv")
                && let Some(variant) = p.file_stem().and_then(|s| s.to_str())
                && let Ok(mut r) = csv::Reader::from_path(&p)
            {
                let vars: BTreeMap<String, String> = r
                    .records()
                    .flatten()
                    .filter(|rec| rec.len() >= 2)
                    .map(|rec| (rec[0].to_string(), rec[1].to_string()))
                    .collect();
                server.insert(variant.to_string(), vars);
            }
        }
    }
    Ok(Run {
        path: path.to_path_buf(),
        header,
        rows,
        suite_text,
        server,
    })
}

/// The matrix-key columns of a results.csv: from `variant` up to `repetition` (exclusive).
fn key_columns(header: &[String]) -> Vec<String> {
    let start = header.iter().position(|h| h == "variant").unwrap_or(0);
    let end = header
        .iter()
        .position(|h| h == "repetition")
        .unwrap_or(header.len());
    header[start..end].to_vec()
}

/// A regression gate: `tps:-5%` fails on a drop of 5 % or more, `p95:+10%` on a rise of 10 %.
#[derive(Clone, Debug, PartialEq)]
pub struct Gate {
    pub metric: &'static str,
    pub percent: f64,
}

pub fn parse_gates(text: &str) -> Result<Vec<Gate>, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || {
            format!(
                "--fail-on: `{part}` is not METRIC:±N%: write e.g. \"tps:-5%,p95:+10%\" (metrics: {})",
                METRICS
                    .iter()
                    .map(|m| m.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let (name, pct) = part.split_once(':').ok_or_else(bad)?;
        let metric = METRICS
            .iter()
            .find(|m| m.name == name.trim())
            .ok_or_else(bad)?;
        let pct = pct.trim().trim_end_matches('%');
        if !pct.starts_with('+') && !pct.starts_with('-') {
            return Err(bad());
        }
        let percent: f64 = pct.parse().map_err(|_| bad())?;
        out.push(Gate {
            metric: metric.name,
            percent,
        });
    }
    if out.is_empty() {
        return Err("--fail-on is empty: write e.g. \"tps:-5%,p95:+10%\"".into());
    }
    Ok(out)
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
    pub p_value: Option<f64>,
    /// `better`, `worse`, `~` (not significant), `n/a` (one sample a side).
    pub verdict: String,
    pub gate_failed: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SideStats {
    pub n: usize,
    pub median: f64,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
}

impl From<&Summary> for SideStats {
    fn from(s: &Summary) -> SideStats {
        SideStats {
            n: s.n,
            median: s.median,
            ci_low: s.ci.map(|c| c.0),
            ci_high: s.ci.map(|c| c.1),
        }
    }
}

/// One baseline-vs-other comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub base: String,
    pub other: String,
    pub lines: Vec<Line>,
    /// Per metric: the geometric mean of other/base medians over matched keys, as a delta %.
    pub geomean: Vec<(&'static str, f64)>,
    pub only_base: Vec<Vec<(String, String)>>,
    pub only_other: Vec<Vec<(String, String)>>,
    /// Differences above the table: suite lines and server variables.
    pub notes: Vec<String>,
    pub few_samples: bool,
}

/// The rows of one side grouped by key: key → samples per metric.
type Side = BTreeMap<Vec<(String, String)>, BTreeMap<&'static str, Vec<f64>>>;

fn side(
    rows: &[&BTreeMap<String, String>],
    key_cols: &[String],
) -> (Side, Vec<Vec<(String, String)>>) {
    let mut out: Side = BTreeMap::new();
    let mut order = Vec::new();
    for r in rows {
        let key: Vec<(String, String)> = key_cols
            .iter()
            .map(|c| (c.clone(), r.get(c).cloned().unwrap_or_default()))
            .collect();
        if !out.contains_key(&key) {
            order.push(key.clone());
        }
        let entry = out.entry(key).or_default();
        if r.get("status").map(String::as_str) != Some("ok") {
            continue;
        }
        for m in METRICS {
            let cell = r.get(m.column).filter(|v| !v.is_empty()).or_else(|| {
                (m.name == "tps")
                    .then(|| r.get("eps"))
                    .flatten()
                    .filter(|v| !v.is_empty())
            });
            if let Some(v) = cell.and_then(|v| v.parse::<f64>().ok()) {
                entry.entry(m.name).or_default().push(v);
            }
        }
    }
    (out, order)
}

/// Compares `base_rows` with `other_rows`, keyed by `key_cols`.
pub fn compare_sides(
    base_name: &str,
    other_name: &str,
    base_rows: &[&BTreeMap<String, String>],
    other_rows: &[&BTreeMap<String, String>],
    key_cols: &[String],
    gates: &[Gate],
) -> Comparison {
    let (base, base_order) = side(base_rows, key_cols);
    let (other, other_order) = side(other_rows, key_cols);
    let mut lines = Vec::new();
    let mut ratios: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    let mut few = false;
    let mut seen = BTreeSet::new();
    for key in base_order.iter().chain(other_order.iter()) {
        if !seen.insert(key.clone()) {
            continue;
        }
        let (Some(b), Some(o)) = (base.get(key), other.get(key)) else {
            continue;
        };
        for m in METRICS {
            let bs = b.get(m.name).and_then(|v| stats::summarize(v));
            let os = o.get(m.name).and_then(|v| stats::summarize(v));
            if bs.is_none() && os.is_none() {
                continue;
            }
            // errors: only worth a line when some side had any.
            if m.name == "errors"
                && bs.as_ref().is_none_or(|s| s.mean == 0.0)
                && os.as_ref().is_none_or(|s| s.mean == 0.0)
            {
                continue;
            }
            let delta = match (&bs, &os) {
                (Some(b), Some(o)) if b.median != 0.0 => {
                    Some((o.median - b.median) / b.median * 100.0)
                }
                _ => None,
            };
            if let (Some(b), Some(o)) = (&bs, &os) {
                if b.n < 6 || o.n < 6 {
                    few = true;
                }
                if b.median > 0.0 && o.median > 0.0 {
                    ratios.entry(m.name).or_default().push(o.median / b.median);
                }
            }
            let p = match (&bs, &os) {
                (Some(b), Some(o)) => stats::welch_p(b, o),
                _ => None,
            };
            let verdict = match (p, delta) {
                (_, None) => "n/a".to_string(),
                (None, Some(_)) => "n/a".to_string(),
                (Some(p), Some(d)) if p < ALPHA && d != 0.0 => if (d > 0.0) == m.higher_is_better {
                    "better"
                } else {
                    "worse"
                }
                .to_string(),
                _ => "~".to_string(),
            };
            let mut gate_failed = None;
            for g in gates.iter().filter(|g| g.metric == m.name) {
                let Some(d) = delta else { continue };
                let crossed = if g.percent < 0.0 {
                    d <= g.percent
                } else {
                    d >= g.percent
                };
                let counts = match p {
                    Some(p) => p < ALPHA,
                    None => true, // one sample a side: the raw delta decides (said in the output)
                };
                if crossed && counts {
                    gate_failed = Some(format!(
                        "{}:{:+}% crossed ({d:+.1}%{})",
                        g.metric,
                        g.percent,
                        if p.is_none() {
                            ", raw delta of single samples"
                        } else {
                            ", significant"
                        }
                    ));
                }
            }
            lines.push(Line {
                key: key.clone(),
                metric: m.name,
                base: bs.as_ref().map(SideStats::from),
                other: os.as_ref().map(SideStats::from),
                delta_pct: delta,
                p_value: p,
                verdict,
                gate_failed,
            });
        }
    }
    let geomean = METRICS
        .iter()
        .filter_map(|m| {
            let r = ratios.get(m.name)?;
            stats::geomean(r).map(|g| (m.name, (g - 1.0) * 100.0))
        })
        .collect();
    Comparison {
        base: base_name.to_string(),
        other: other_name.to_string(),
        lines,
        geomean,
        only_base: base_order
            .into_iter()
            .filter(|k| !other.contains_key(k))
            .collect(),
        only_other: other_order
            .into_iter()
            .filter(|k| !base.contains_key(k))
            .collect(),
        notes: Vec::new(),
        few_samples: few,
    }
}

/// Lines of `a` missing in `b` and the reverse (order kept), for the suite difference.
fn line_diff(a: &str, b: &str) -> Vec<String> {
    let bl: BTreeSet<&str> = b.lines().collect();
    let al: BTreeSet<&str> = a.lines().collect();
    let mut out: Vec<String> = a
        .lines()
        .filter(|l| !bl.contains(l) && !l.trim().is_empty())
        .map(|l| format!("- {l}"))
        .collect();
    out.extend(
        b.lines()
            .filter(|l| !al.contains(l) && !l.trim().is_empty())
            .map(|l| format!("+ {l}")),
    );
    out
}

/// Server variables that differ between two captures (`version` included).
fn server_diff(
    a: &BTreeMap<String, String>,
    b: &BTreeMap<String, String>,
) -> Vec<(String, String, String)> {
    let names: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    names
        .into_iter()
        .filter_map(|n| {
            let (x, y) = (a.get(n), b.get(n));
            (x != y).then(|| {
                (
                    n.clone(),
                    x.cloned().unwrap_or_else(|| "—".into()),
                    y.cloned().unwrap_or_else(|| "—".into()),
                )
            })
        })
        .collect()
}

/// What `sbsuite compare` was asked.
pub struct Request {
    pub runs: Vec<PathBuf>,
    pub by: Option<String>,
    pub gates: Vec<Gate>,
}

/// Runs the comparisons of a request.
pub fn compare(req: &Request) -> Result<Vec<Comparison>, String> {
    match (req.runs.as_slice(), &req.by) {
        ([a, b], None) => {
            let ra = load_run(a)?;
            let rb = load_run(b)?;
            if key_columns(&ra.header) != key_columns(&rb.header) {
                return Err(format!(
                    "the runs have different matrix columns ({} vs {}): compare runs of the same suite, or the variants inside one run with --by variant",
                    key_columns(&ra.header).join(", "),
                    key_columns(&rb.header).join(", ")
                ));
            }
            let keys = key_columns(&ra.header);
            let ar: Vec<_> = ra.rows.iter().collect();
            let br: Vec<_> = rb.rows.iter().collect();
            let mut c = compare_sides(
                &a.display().to_string(),
                &b.display().to_string(),
                &ar,
                &br,
                &keys,
                &req.gates,
            );
            if let (Some(sa), Some(sb)) = (&ra.suite_text, &rb.suite_text) {
                let d = line_diff(sa, sb);
                if !d.is_empty() {
                    c.notes.push("suite.toml differs:".into());
                    c.notes.extend(d.into_iter().map(|l| format!("  {l}")));
                }
            }
            for (variant, va) in &ra.server {
                if let Some(vb) = rb.server.get(variant) {
                    let d = server_diff(va, vb);
                    if !d.is_empty() {
                        c.notes
                            .push(format!("server variables of variant {variant} differ:"));
                        c.notes
                            .extend(d.into_iter().map(|(n, x, y)| format!("  {n}: {x} → {y}")));
                    }
                }
            }
            Ok(vec![c])
        }
        ([one], Some(by)) => {
            let r = load_run(one)?;
            if !r.header.iter().any(|h| h == by) {
                return Err(format!(
                    "--by {by}: {} has no such column: use one of {}",
                    r.path.display(),
                    key_columns(&r.header).join(", ")
                ));
            }
            let keys: Vec<String> = key_columns(&r.header)
                .into_iter()
                .filter(|k| k != by)
                .collect();
            let mut values: Vec<String> = Vec::new();
            for row in &r.rows {
                let v = row.get(by).cloned().unwrap_or_default();
                if !values.contains(&v) {
                    values.push(v);
                }
            }
            if values.len() < 2 {
                return Err(format!(
                    "--by {by}: {} has only one value ({}) in {}: nothing to compare",
                    by,
                    values.first().cloned().unwrap_or_default(),
                    r.path.display()
                ));
            }
            let base_rows: Vec<_> = r
                .rows
                .iter()
                .filter(|row| row.get(by) == Some(&values[0]))
                .collect();
            let mut out = Vec::new();
            for v in &values[1..] {
                let rows: Vec<_> = r.rows.iter().filter(|row| row.get(by) == Some(v)).collect();
                let mut c = compare_sides(
                    &format!("{by}={}", values[0]),
                    &format!("{by}={v}"),
                    &base_rows,
                    &rows,
                    &keys,
                    &req.gates,
                );
                if by == "variant"
                    && let (Some(a), Some(b)) = (r.server.get(&values[0]), r.server.get(v))
                {
                    let d = server_diff(a, b);
                    if !d.is_empty() {
                        c.notes.push(format!(
                            "server variables differ ({} → {v}):",
                            values[0]
                        ));
                        c.notes
                            .extend(d.into_iter().map(|(n, x, y)| format!("  {n}: {x} → {y}")));
                    }
                }
                out.push(c);
            }
            Ok(out)
        }
        (_, Some(_)) => Err("--by compares the groups inside ONE run: give one run".into()),
        _ => Err(
            "give two runs (`sbsuite compare A B`) or one run and --by (`sbsuite compare RUN --by variant`)"
                .into(),
        ),
    }
}

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Markdown,
    Csv,
    Json,
}

const METHOD: &str =
    "Welch's two-sided t-test on the repetitions (α = 0.05); medians; 95 % t-interval of the mean";

fn key_text(key: &[(String, String)]) -> String {
    key.iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn num(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

fn side_text(s: &Option<SideStats>) -> String {
    match s {
        None => "—".into(),
        Some(s) => match (s.ci_low, s.ci_high) {
            (Some(l), Some(h)) => format!("{} [{}, {}] n={}", num(s.median), num(l), num(h), s.n),
            _ => format!("{} n={}", num(s.median), s.n),
        },
    }
}

/// Renders comparisons in `format`; `color` only for the terminal table.
pub fn render(cs: &[Comparison], format: Format, color: bool) -> String {
    match format {
        Format::Json => {
            serde_json::to_string_pretty(&serde_json::json!({
                "method": METHOD,
                "comparisons": cs,
            }))
            .unwrap_or_default()
                + "\n"
        }
        Format::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            let _ = w.write_record([
                "base",
                "other",
                "key",
                "metric",
                "base_median",
                "base_n",
                "other_median",
                "other_n",
                "delta_pct",
                "p_value",
                "verdict",
                "gate",
            ]);
            for c in cs {
                for l in &c.lines {
                    let f = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
                    let _ = w.write_record([
                        c.base.clone(),
                        c.other.clone(),
                        key_text(&l.key),
                        l.metric.to_string(),
                        f(l.base.as_ref().map(|s| s.median)),
                        l.base.as_ref().map(|s| s.n.to_string()).unwrap_or_default(),
                        f(l.other.as_ref().map(|s| s.median)),
                        l.other
                            .as_ref()
                            .map(|s| s.n.to_string())
                            .unwrap_or_default(),
                        f(l.delta_pct),
                        f(l.p_value),
                        l.verdict.clone(),
                        l.gate_failed.clone().unwrap_or_default(),
                    ]);
                }
                for (m, g) in &c.geomean {
                    let _ = w.write_record([
                        c.base.clone(),
                        c.other.clone(),
                        "geomean".into(),
                        m.to_string(),
                        String::new(),
                        String::new(),
                        String::new(),
                        String::new(),
                        g.to_string(),
                        String::new(),
                        String::new(),
                        String::new(),
                    ]);
                }
            }
            String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
        }
        Format::Table | Format::Markdown => {
            let md = format == Format::Markdown;
            let mut out = String::new();
            for c in cs {
                if md {
                    out.push_str(&format!("## {} → {}\n\n", c.base, c.other));
                } else {
                    out.push_str(&format!("{} → {}\n", c.base, c.other));
                }
                out.push_str(&format!("method: {METHOD}\n"));
                if c.few_samples {
                    out.push_str("warning: fewer than 6 samples on a side: verdicts have little power (raise [suite] repeat)\n");
                }
                if c.lines
                    .iter()
                    .any(|l| l.p_value.is_none() && l.delta_pct.is_some())
                {
                    out.push_str("note: one sample per side for some rows: no verdict (n/a), gates use the raw delta\n");
                }
                for n in &c.notes {
                    out.push_str(n);
                    out.push('\n');
                }
                out.push('\n');
                let head = ["key", "metric", "base", "other", "delta", "p", "verdict"];
                let mut rows: Vec<[String; 7]> = c
                    .lines
                    .iter()
                    .map(|l| {
                        let mut verdict = l.verdict.clone();
                        if let Some(g) = &l.gate_failed {
                            verdict.push_str(&format!(" FAIL {g}"));
                        }
                        [
                            key_text(&l.key),
                            l.metric.to_string(),
                            side_text(&l.base),
                            side_text(&l.other),
                            l.delta_pct.map(|d| format!("{d:+.1}%")).unwrap_or_default(),
                            l.p_value.map(|p| format!("{p:.3}")).unwrap_or_default(),
                            verdict,
                        ]
                    })
                    .collect();
                for (m, g) in &c.geomean {
                    rows.push([
                        "geomean".into(),
                        m.to_string(),
                        String::new(),
                        String::new(),
                        format!("{g:+.1}%"),
                        String::new(),
                        String::new(),
                    ]);
                }
                if md {
                    out.push_str(&format!("| {} |\n", head.join(" | ")));
                    out.push_str(&format!("|{}\n", "---|".repeat(head.len())));
                    for r in &rows {
                        out.push_str(&format!("| {} |\n", r.join(" | ")));
                    }
                } else {
                    let widths: Vec<usize> = (0..head.len())
                        .map(|i| {
                            rows.iter()
                                .map(|r| r[i].chars().count())
                                .chain([head[i].len()])
                                .max()
                                .unwrap_or(0)
                        })
                        .collect();
                    let line = |cells: &[String]| {
                        cells
                            .iter()
                            .zip(&widths)
                            .map(|(c, w)| format!("{c:<w$}"))
                            .collect::<Vec<_>>()
                            .join("  ")
                            .trim_end()
                            .to_string()
                    };
                    out.push_str(&line(&head.map(String::from)));
                    out.push('\n');
                    for r in &rows {
                        let mut text = line(r);
                        if color {
                            let code = if r[6].contains("FAIL") || r[6].starts_with("worse") {
                                "31"
                            } else if r[6].starts_with("better") {
                                "32"
                            } else {
                                ""
                            };
                            if !code.is_empty() {
                                text = format!("\x1b[{code}m{text}\x1b[0m");
                            }
                        }
                        out.push_str(&text);
                        out.push('\n');
                    }
                }
                for (label, keys) in [(&c.base, &c.only_base), (&c.other, &c.only_other)] {
                    for k in keys {
                        out.push_str(&format!("only in {label}: {}\n", key_text(k)));
                    }
                }
                out.push('\n');
            }
            out
        }
    }
}

/// `sbsuite compare`: prints the comparison; exit 1 when a gate failed.
pub fn command(req: &Request, format: Format) -> Result<bool, String> {
    let cs = compare(req)?;
    let color = format == Format::Table && std::io::stdout().is_terminal();
    print!("{}", render(&cs, format, color));
    let failed: Vec<String> = cs
        .iter()
        .flat_map(|c| {
            c.lines.iter().filter_map(move |l| {
                l.gate_failed
                    .as_ref()
                    .map(|g| format!("{} → {}: {} {}", c.base, c.other, key_text(&l.key), g))
            })
        })
        .collect();
    for f in &failed {
        eprintln!("gate failed: {f}");
    }
    Ok(failed.is_empty())
}

/// One line of `sbsuite runs`.
#[derive(Debug, Serialize)]
pub struct RunInfo {
    pub suite: String,
    pub run_id: String,
    pub started: String,
    pub runs: usize,
    pub planned: Option<usize>,
    pub failed: usize,
    pub interrupted: usize,
    pub status: String,
    pub path: PathBuf,
}

/// The runs under a results directory, oldest first.
pub fn list_runs(root: &Path) -> Result<Vec<RunInfo>, String> {
    let mut out = Vec::new();
    let suites = std::fs::read_dir(root).map_err(|e| {
        format!(
            "{}: {e} (runs live under the suite's results_dir, `results` by default; pass --results-dir)",
            root.display()
        )
    })?;
    for s in suites.flatten() {
        let Ok(runs) = std::fs::read_dir(s.path()) else {
            continue;
        };
        for r in runs.flatten() {
            let dir = r.path();
            let Ok(run) = load_run(&dir) else { continue };
            let planned = std::fs::read_to_string(dir.join(crate::results::PLAN_FILE))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .and_then(|v| {
                    v.get("steps")?.as_array().map(|steps| {
                        steps
                            .iter()
                            .filter(|s| s.get("kind").and_then(|k| k.as_str()) == Some("run"))
                            .count()
                    })
                });
            let count = |st: &str| run.rows.iter().filter(|r| r["status"] == st).count();
            let (failed, interrupted) = (count("failed"), count("interrupted"));
            let status = if interrupted > 0 {
                "interrupted"
            } else if planned.is_some_and(|p| p > run.rows.len()) {
                "incomplete"
            } else if failed > 0 {
                "failed"
            } else {
                "ok"
            };
            out.push(RunInfo {
                suite: s.file_name().to_string_lossy().into_owned(),
                run_id: r.file_name().to_string_lossy().into_owned(),
                started: run
                    .rows
                    .first()
                    .and_then(|r| r.get("started_at").cloned())
                    .unwrap_or_default(),
                runs: run.rows.len(),
                planned,
                failed,
                interrupted,
                status: status.into(),
                path: dir,
            });
        }
    }
    out.sort_by(|a, b| (&a.run_id, &a.suite).cmp(&(&b.run_id, &b.suite)));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(variant: &str, threads: &str, rep: u32, tps: f64, p95: f64) -> BTreeMap<String, String> {
        [
            ("variant", variant.to_string()),
            ("workload", "oltp_read_write".to_string()),
            ("threads", threads.to_string()),
            ("repetition", rep.to_string()),
            ("tps", tps.to_string()),
            ("lat_p95", p95.to_string()),
            ("status", "ok".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    fn keys() -> Vec<String> {
        vec!["workload".into(), "threads".into()]
    }

    #[test]
    fn a_real_difference_is_significant_and_noise_is_not() {
        let base: Vec<_> = [4043.0, 4010.0, 4071.0, 3990.0, 4055.0, 4021.0]
            .iter()
            .enumerate()
            .map(|(i, t)| row("baseline", "100", i as u32 + 1, *t, 30.0 + i as f64 * 0.1))
            .collect();
        let faster: Vec<_> = [4613.0, 4580.0, 4650.0, 4599.0, 4621.0, 4570.0]
            .iter()
            .enumerate()
            .map(|(i, t)| row("relaxed", "100", i as u32 + 1, *t, 30.0 + i as f64 * 0.1))
            .collect();
        let same: Vec<_> = [4021.0, 4055.0, 3990.0, 4071.0, 4010.0, 4043.0]
            .iter()
            .enumerate()
            .map(|(i, t)| row("again", "100", i as u32 + 1, *t, 30.5 - i as f64 * 0.1))
            .collect();
        let b: Vec<_> = base.iter().collect();
        let gates = parse_gates("tps:-5%,p95:+10%").unwrap();
        let c = compare_sides(
            "a",
            "b",
            &b,
            &faster.iter().collect::<Vec<_>>(),
            &keys(),
            &gates,
        );
        let tps = c.lines.iter().find(|l| l.metric == "tps").unwrap();
        assert_eq!(tps.verdict, "better");
        assert!(
            (tps.delta_pct.unwrap() - 14.1).abs() < 0.2,
            "{:?}",
            tps.delta_pct
        );
        assert!(tps.p_value.unwrap() < 1e-6);
        assert!(
            tps.gate_failed.is_none(),
            "faster never fails a tps drop gate"
        );
        let p95 = c.lines.iter().find(|l| l.metric == "p95").unwrap();
        assert_eq!(p95.verdict, "~", "identical samples: no difference");
        assert_eq!(p95.p_value, Some(1.0));
        assert!(!c.few_samples, "6 a side");
        let n = compare_sides(
            "a",
            "c",
            &b,
            &same.iter().collect::<Vec<_>>(),
            &keys(),
            &gates,
        );
        let tps = n.lines.iter().find(|l| l.metric == "tps").unwrap();
        assert_eq!(tps.verdict, "~");
        assert!(tps.p_value.unwrap() > 0.5);
        // The other way round a gate fails: a significant 12 % drop.
        let back = compare_sides(
            "b",
            "a",
            &faster.iter().collect::<Vec<_>>(),
            &b,
            &keys(),
            &gates,
        );
        let tps = back.lines.iter().find(|l| l.metric == "tps").unwrap();
        assert_eq!(tps.verdict, "worse");
        assert!(tps.gate_failed.as_deref().unwrap().contains("significant"));
        assert!((back.geomean.iter().find(|g| g.0 == "tps").unwrap().1 + 12.46).abs() < 0.01);
    }

    #[test]
    fn single_samples_have_no_verdict_but_gate_on_the_raw_delta_and_keys_are_kept() {
        let a = [row("v", "1", 1, 100.0, 1.0), row("v", "2", 1, 200.0, 1.0)];
        let b = [row("v", "1", 1, 90.0, 1.0), row("v", "4", 1, 300.0, 1.0)];
        let c = compare_sides(
            "a",
            "b",
            &a.iter().collect::<Vec<_>>(),
            &b.iter().collect::<Vec<_>>(),
            &keys(),
            &parse_gates("tps:-5%").unwrap(),
        );
        let tps = c.lines.iter().find(|l| l.metric == "tps").unwrap();
        assert_eq!(tps.verdict, "n/a");
        assert!(tps.gate_failed.as_deref().unwrap().contains("raw delta"));
        assert!(c.few_samples);
        assert_eq!(
            key_text(&c.only_base[0]),
            "workload=oltp_read_write threads=2"
        );
        assert_eq!(
            key_text(&c.only_other[0]),
            "workload=oltp_read_write threads=4"
        );
        let text = render(&[c], Format::Table, false);
        assert!(
            text.contains("only in a: workload=oltp_read_write threads=2"),
            "{text}"
        );
        assert!(text.contains("one sample per side"), "{text}");
        assert!(text.contains("Welch"), "{text}");
    }

    #[test]
    fn gates_parse_or_say_how() {
        assert_eq!(
            parse_gates("tps:-5%, p95:+10%").unwrap(),
            vec![
                Gate {
                    metric: "tps",
                    percent: -5.0
                },
                Gate {
                    metric: "p95",
                    percent: 10.0
                }
            ]
        );
        assert!(parse_gates("tps:5%").unwrap_err().contains("METRIC:±N%"));
        assert!(
            parse_gates("speed:-5%")
                .unwrap_err()
                .contains("metrics: tps")
        );
    }
}
