//! Which charts a run gets, and their data: throughput, qps and p95/p99 latency against the
//! swept axis, and each step's interim time series.
//!
//! The x axis is the first axis that actually varies — `threads`, else another numeric matrix
//! axis, else the matrix point in a run of several variants (one line per variant), else the
//! step number — so a sweep over table sizes is drawn against table size and a list of
//! unrelated steps still gets a readable chart. One line per workload × variant × the
//! other varying axes (× run when two runs are overlaid). The same line keeps its colour in
//! both runs; the second run is dashed.
//!
//! A point of the "vs" charts stands for its repetitions as the tables do (#29): their median,
//! with their 95 % interval as an error bar, computed by the function behind `sbsuite compare`
//! and the report's Variants tables ([`crate::compare::stats::summarize`]), so that a chart
//! never shows a mean beside a table of medians. The time series draw every repetition of a
//! step as a line of its own: one colour per step (its x value), and per repetition its own
//! dash and marker, named `rep N` in the legend.

use indexmap::IndexMap;

use super::svg::{Bar, Chart, Missing, Series, all_powers_of_two};
use crate::compare::stats::summarize;
use crate::results::csv::{GROUP, PHASE, TARGET_RATE};
use crate::results::load::{Row, Run};
use crate::results::sanitise_name;

/// A run with the tag the legend uses for it (`A`, `B`; empty for a single run).
pub struct Tagged<'a> {
    pub tag: String,
    pub run: &'a Run,
}

/// The x axis of the "vs" charts.
#[derive(Clone, Debug, PartialEq)]
pub struct XAxis {
    /// The results.csv column, `None` for the step number (or the matrix point).
    pub column: Option<String>,
    pub log2: bool,
    /// A run of several variants without a varying numeric axis is drawn against its matrix
    /// points, not its step numbers (which interleaved variants share out between them): the
    /// points' texts (`workload=… threads=…`) in first-seen order, x being the 1-based
    /// position. Empty otherwise.
    pub points: Vec<String>,
    /// The columns that make a matrix point (the key columns but `variant`).
    pub point_columns: Vec<String>,
}

impl XAxis {
    pub fn name(&self) -> &str {
        if !self.points.is_empty() {
            return "matrix point";
        }
        self.column.as_deref().unwrap_or("step")
    }

    pub fn label(&self) -> String {
        if self.log2 {
            format!("{} (log2 scale)", self.name())
        } else {
            self.name().to_string()
        }
    }

    fn value(&self, row: &Row) -> Option<f64> {
        match &self.column {
            Some(c) => row.num(c),
            None if !self.points.is_empty() => {
                let point = point_text(row, &self.point_columns);
                let at = self.points.iter().position(|p| *p == point)?;
                Some(at as f64 + 1.0)
            }
            None => row.num("step"),
        }
    }
}

/// A row's matrix point as `column=value …` (empty cells left out).
fn point_text(row: &Row, columns: &[String]) -> String {
    columns
        .iter()
        .filter(|c| !row.get(c).is_empty())
        .map(|c| format!("{c}={}", row.get(c)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Picks the x axis: the first of `threads` and the other matrix axes with more than one
/// distinct numeric value, else the step number.
pub fn x_axis(runs: &[Tagged]) -> XAxis {
    let mut candidates = vec!["threads".to_string()];
    for t in runs {
        for a in t.run.axes() {
            if !candidates.contains(a) {
                candidates.push(a.clone());
            }
        }
    }
    for c in candidates {
        let mut values: Vec<f64> = runs
            .iter()
            .flat_map(|t| t.run.rows.iter().filter_map(|r| r.num(&c)))
            .collect();
        values.sort_by(f64::total_cmp);
        values.dedup();
        if values.len() > 1 {
            return XAxis {
                log2: all_powers_of_two(&values),
                column: Some(c),
                points: Vec::new(),
                point_columns: Vec::new(),
            };
        }
    }
    let mut variants: Vec<&str> = runs
        .iter()
        .flat_map(|t| t.run.rows.iter().map(|r| r.get("variant")))
        .collect();
    variants.sort_unstable();
    variants.dedup();
    let mut points = Vec::new();
    let mut point_columns: Vec<String> = Vec::new();
    if variants.len() > 1 {
        for t in runs {
            for c in t.run.key_columns() {
                if c != "variant" && !point_columns.contains(c) {
                    point_columns.push(c.clone());
                }
            }
        }
        for r in runs.iter().flat_map(|t| &t.run.rows) {
            let p = point_text(r, &point_columns);
            if !points.contains(&p) {
                points.push(p);
            }
        }
    }
    XAxis {
        column: None,
        log2: false,
        points,
        point_columns,
    }
}

/// What tells lines apart, and how much of it the legend must say.
struct Keys {
    x: XAxis,
    /// More than one variant across the runs.
    variants: bool,
    /// Axes (other than x) with more than one value.
    axes: Vec<String>,
    two_runs: bool,
}

impl Keys {
    fn new(runs: &[Tagged], x: &XAxis) -> Keys {
        let distinct = |col: &str| {
            let mut v: Vec<&str> = runs
                .iter()
                .flat_map(|t| t.run.rows.iter().map(move |r| r.get(col)))
                .collect();
            v.sort_unstable();
            v.dedup();
            v.len()
        };
        let mut axes = Vec::new();
        for t in runs {
            for a in t.run.axes() {
                if Some(a) != x.column.as_ref() && !axes.contains(a) && distinct(a) > 1 {
                    axes.push(a.clone());
                }
            }
        }
        if x.column.as_deref() != Some("threads") && distinct("threads") > 1 {
            axes.insert(0, "threads".into());
        }
        Keys {
            x: x.clone(),
            variants: distinct("variant") > 1,
            axes,
            two_runs: runs.len() > 1,
        }
    }

    /// The line a row belongs to, without the run (so both runs share its colour): its
    /// variant alone when x is the matrix point (which says everything else).
    fn line(&self, row: &Row) -> String {
        if !self.x.points.is_empty() {
            return row.get("variant").to_string();
        }
        let mut parts = vec![row.get("workload").to_string()];
        if self.variants {
            parts.push(row.get("variant").to_string());
        }
        for a in &self.axes {
            parts.push(format!("{a}={}", row.get(a)));
        }
        parts.join(" · ")
    }

    fn label(&self, line: &str, tag: &str) -> String {
        if self.two_runs {
            format!("{line} · run {tag}")
        } else {
            line.to_string()
        }
    }
}

/// Every chart of the page.
pub struct Charts {
    pub x: XAxis,
    /// Throughput, qps, p95, p99 against x.
    pub sweep: Vec<Chart>,
    /// (group title, throughput over time, latency over time), one per line of the sweep.
    pub series: Vec<(String, Option<Chart>, Option<Chart>)>,
}

/// A metric of results.csv drawn against x.
struct Metric {
    id: &'static str,
    column: &'static str,
    title: &'static str,
    y_label: &'static str,
}

const TPS: Metric = Metric {
    id: "throughput-tps",
    column: "tps",
    title: "Transactions per second",
    y_label: "tps (transactions/s)",
};
const EPS: Metric = Metric {
    id: "throughput-eps",
    column: "eps",
    title: "Events per second",
    y_label: "eps (events/s)",
};
const QPS: Metric = Metric {
    id: "qps",
    column: "qps",
    title: "Queries per second",
    y_label: "qps (queries/s)",
};
const P95: Metric = Metric {
    id: "latency-p95",
    column: "lat_p95",
    title: "p95 latency",
    y_label: "p95 latency (ms)",
};
const P99: Metric = Metric {
    id: "latency-p99",
    column: "lat_p99",
    title: "p99 latency",
    y_label: "p99 latency (ms)",
};

pub fn build(runs: &[Tagged]) -> Charts {
    let x = x_axis(runs);
    let keys = Keys::new(runs, &x);

    // line → colour, in first-seen order across both runs.
    let mut colours: IndexMap<String, usize> = IndexMap::new();
    // line → does it have tps (SQL) anywhere?
    let mut sql: IndexMap<String, bool> = IndexMap::new();
    for t in runs {
        for r in &t.run.rows {
            let line = keys.line(r);
            let n = colours.len();
            colours.entry(line.clone()).or_insert(n);
            *sql.entry(line).or_insert(false) |= r.num("tps").is_some();
        }
    }

    // Chart families: the SQL workloads together (transactions and queries compare across
    // OLTP workloads), each other workload alone (a cpu event, a memory block and a file
    // request are different units, often 1000× apart).
    let mut families: IndexMap<String, bool> = IndexMap::new();
    for t in runs {
        for r in &t.run.rows {
            let is_sql = sql[&keys.line(r)];
            let family = if is_sql {
                String::new()
            } else {
                r.get("workload").to_string()
            };
            families.entry(family).or_insert(is_sql);
        }
    }
    let several = families.len() > 1;
    let mut sweep = Vec::new();
    for (family, is_sql) in &families {
        let include = |line: &str, row: &Row| {
            sql[line] == *is_sql && (*is_sql || row.get("workload") == family)
        };
        let metrics: &[&Metric] = if *is_sql {
            &[&TPS, &QPS, &P95, &P99]
        } else {
            &[&EPS, &P95, &P99]
        };
        for (i, m) in metrics.iter().enumerate() {
            let mut chart = sweep_chart(runs, &keys, &colours, m, include);
            if !*is_sql {
                chart.id = format!("{}-{}", chart.id, sanitise_name(family));
                if several {
                    chart.title = format!("{family}: {}", chart.title);
                }
            }
            // The throughput chart stays even when empty (it shows the failed steps); others
            // with nothing to draw go (imported logs often have no p99).
            if i == 0 || chart.series.iter().any(|s| !s.points.is_empty()) {
                sweep.push(chart);
            }
        }
    }

    let mut series = time_series(runs, &keys);
    series.extend(group_series(runs));
    Charts { x, sweep, series }
}

fn sweep_chart(
    runs: &[Tagged],
    keys: &Keys,
    colours: &IndexMap<String, usize>,
    metric: &Metric,
    include: impl Fn(&str, &Row) -> bool,
) -> Chart {
    // (line, tag) → x (by its bits) → (x, the values of its repetitions)
    type Points = IndexMap<u64, (f64, Vec<f64>)>;
    let mut lines: IndexMap<(String, String), Points> = IndexMap::new();
    let mut missing = Vec::new();
    for t in runs {
        for r in &t.run.rows {
            let line = keys.line(r);
            if !include(&line, r) {
                continue;
            }
            let Some(x) = keys.x.value(r) else { continue };
            let entry = lines.entry((line, t.tag.clone())).or_default();
            if r.get("status") != "ok" {
                missing.push(Missing {
                    x,
                    what: missing_text(t, r),
                });
                continue;
            }
            if let Some(y) = r.num(metric.column) {
                entry
                    .entry(x.to_bits())
                    .or_insert_with(|| (x, Vec::new()))
                    .1
                    .push(y);
            }
        }
    }
    // The most repetitions behind a point, for the caption and the axis.
    let most = lines
        .values()
        .flat_map(|points| points.values().map(|(_, ys)| ys.len()))
        .max()
        .unwrap_or(0);
    let series = lines
        .into_iter()
        .filter(|(_, points)| !points.is_empty())
        .map(|((line, tag), points)| {
            let mut s = Series {
                label: keys.label(&line, &tag),
                color: colours.get(&line).copied().unwrap_or(0),
                dashed: tag == "B",
                ..Series::default()
            };
            for (x, ys) in points.into_values() {
                let Some(sum) = summarize(&ys) else { continue };
                s.points.push((x, sum.median));
                if let Some((low, high)) = sum.ci {
                    s.bars.push(Bar {
                        x,
                        low,
                        high,
                        n: sum.n,
                    });
                }
            }
            s
        })
        .collect();
    let (y_label, note) = if most > 1 {
        (
            format!("median {}", metric.y_label),
            format!(
                "each point: the median of its repetitions (up to {most}), bars: their 95 % interval, as in the tables"
            ),
        )
    } else {
        (metric.y_label.to_string(), String::new())
    };
    Chart {
        id: metric.id.to_string(),
        title: format!("{} vs {}", metric.title, keys.x.name()),
        x_label: keys.x.label(),
        y_label,
        x_log2: keys.x.log2,
        series,
        missing,
        note,
    }
}

fn missing_text(t: &Tagged, r: &Row) -> String {
    let run = if t.tag.is_empty() {
        String::new()
    } else {
        format!("run {}: ", t.tag)
    };
    let err = r.get("error");
    format!(
        "{run}step {} {}: {}{}",
        r.get("step"),
        r.get("name"),
        r.get("status"),
        if err.is_empty() {
            String::new()
        } else {
            format!(" ({err})")
        }
    )
}

/// One group per line of the sweep; one series per step (and run) inside it.
fn time_series(runs: &[Tagged], keys: &Keys) -> Vec<(String, Option<Chart>, Option<Chart>)> {
    // group line → [(tag, results row or None, its interval rows)]
    type Step<'a> = (String, Option<&'a Row>, String, Vec<&'a Row>);
    let mut groups: IndexMap<String, Vec<Step>> = IndexMap::new();
    for t in runs {
        let by_step: IndexMap<&str, &Row> = t.run.rows.iter().map(|r| (r.get("step"), r)).collect();
        let mut steps: IndexMap<&str, Vec<&Row>> = IndexMap::new();
        for iv in &t.run.intervals {
            steps.entry(iv.get("step")).or_default().push(iv);
        }
        for (step, ivs) in steps {
            let row = by_step.get(step).copied();
            let line = match row {
                Some(r) => keys.line(r),
                // An interval without its results row (the run was killed mid-step).
                None => format!("{} (no results row)", ivs[0].get("name")),
            };
            groups
                .entry(line)
                .or_default()
                .push((t.tag.clone(), row, step.to_string(), ivs));
        }
    }

    // Colour by the step's x value across all groups, so threads=8 has one colour everywhere
    // (and in both runs).
    let mut step_colours: IndexMap<String, usize> = IndexMap::new();
    for steps in groups.values() {
        for (_, row, step, _) in steps {
            let n = step_colours.len();
            step_colours
                .entry(step_label(keys, *row, step))
                .or_insert(n);
        }
    }
    let mut out = Vec::new();
    for (gi, (line, steps)) in groups.into_iter().enumerate() {
        let all: Vec<&Row> = steps.iter().flat_map(|s| s.3.iter().copied()).collect();
        let (column, y_label) = if all.iter().any(|r| r.num("tps").is_some()) {
            ("tps", "tps (transactions/s)")
        } else if all.iter().any(|r| r.num("eps").is_some()) {
            ("eps", "eps (events/s)")
        } else if all.iter().any(|r| r.num("mib_per_s").is_some()) {
            ("mib_per_s", "MiB/s")
        } else {
            ("", "")
        };
        let pct = all
            .iter()
            .map(|r| r.get("percentile"))
            .find(|p| !p.is_empty())
            .unwrap_or("95")
            .to_string();
        // The repetitions of one step label (threads=8) share its colour: each gets its
        // ordinal among them (marker and dash) and `rep N` in its label.
        let labels: Vec<String> = steps
            .iter()
            .map(|(_, row, step, _)| step_label(keys, *row, step))
            .collect();
        let reps: Vec<Option<usize>> = steps
            .iter()
            .zip(&labels)
            .enumerate()
            .map(|(i, ((tag, ..), label))| {
                let same = |j: usize| steps[j].0 == *tag && labels[j] == *label;
                let several = (0..steps.len()).filter(|&j| same(j)).count() > 1;
                several.then(|| (0..i).filter(|&j| same(j)).count())
            })
            .collect();
        let colours = step_colours.len();
        let series_of = |col: &str| -> Vec<Series> {
            steps
                .iter()
                .zip(labels.iter().zip(&reps))
                .flat_map(|((tag, row, _, ivs), (label, rep))| {
                    let color = step_colours.get(label).copied().unwrap_or(0);
                    let label = match (rep, row) {
                        (None, _) => label.clone(),
                        (Some(_), Some(r)) if !r.get("repetition").is_empty() => {
                            format!("{label} · rep {}", r.get("repetition"))
                        }
                        (Some(i), _) => format!("{label} · rep {}", i + 1),
                    };
                    // A step with `[[groups]]` (#31): a line per group, side by side in time,
                    // so that one group's throughput shows what the others' activity cost it.
                    group_names(ivs)
                        .into_iter()
                        .enumerate()
                        .map(|(k, group)| Series {
                            label: match group {
                                "" => keys.label(&label, tag),
                                g => keys.label(&format!("{label} · {g}"), tag),
                            },
                            points: ivs
                                .iter()
                                .filter(|iv| iv.get(GROUP) == group)
                                .filter_map(|iv| Some((iv.num("time")?, iv.num(col)?)))
                                .collect(),
                            color: color + k * colours,
                            dashed: tag == "B",
                            rep: rep.unwrap_or(0),
                            bars: Vec::new(),
                        })
                        .collect::<Vec<_>>()
                })
                .collect()
        };
        let slug = sanitise_name(&line);
        // Steps with `[[phases]]` (#30): their target rate over time next to what they did,
        // and where each phase ended.
        let mut series = series_of(column);
        let targets: Vec<Series> = series_of(TARGET_RATE)
            .into_iter()
            .filter(|s| !s.points.is_empty())
            .map(|s| Series {
                label: format!("{} · target", s.label),
                dashed: true,
                ..s
            })
            .collect();
        let mut timeline = phase_spans(&all);
        if all.iter().any(|r| !r.get(GROUP).is_empty()) {
            timeline.push_str(
                "; steps with [[groups]]: a line per group (its own throughput), so a group's \
                 drop shows what the other groups' activity cost it",
            );
        }
        series.extend(targets);
        let throughput = (!column.is_empty()).then(|| Chart {
            id: format!("timeseries-{:02}-{slug}-throughput", gi + 1),
            title: format!("{line}: {} over time", column_title(column)),
            x_label: "time (s)".into(),
            y_label: y_label.into(),
            x_log2: false,
            series,
            missing: Vec::new(),
            note: format!(
                "each point: the {column} of one interim report; a line per step and repetition{timeline}"
            ),
        });
        let latency_series = series_of("lat_pct");
        let latency = latency_series
            .iter()
            .any(|s| !s.points.is_empty())
            .then(|| Chart {
                id: format!("timeseries-{:02}-{slug}-latency", gi + 1),
                title: format!("{line}: p{pct} latency over time"),
                x_label: "time (s)".into(),
                y_label: format!("p{pct} latency (ms)"),
                x_log2: false,
                series: latency_series,
                missing: Vec::new(),
                note: format!(
                    "each point: the p{pct} latency of one interim report, not of the whole step"
                ),
            });
        out.push((line, throughput, latency));
    }
    out
}

/// Steps with `[[groups]]` (#31): per group, its throughput over time in every step that ran
/// it, one line per step (and run), so that the group alone and beside others share one chart:
/// the interference at a glance.
fn group_series(runs: &[Tagged]) -> Vec<(String, Option<Chart>, Option<Chart>)> {
    // group → [(label, tag, intervals)]
    type Lines<'a> = Vec<(String, String, Vec<&'a Row>)>;
    let mut groups: IndexMap<&str, Lines> = IndexMap::new();
    for t in runs {
        for iv in t.run.intervals.iter().filter(|r| !r.get(GROUP).is_empty()) {
            let label = format!("step {} {}", iv.get("step"), iv.get("name"));
            let lines = groups.entry(iv.get(GROUP)).or_default();
            match lines
                .iter_mut()
                .find(|(l, tag, _)| *l == label && *tag == t.tag)
            {
                Some((_, _, ivs)) => ivs.push(iv),
                None => lines.push((label, t.tag.clone(), vec![iv])),
            }
        }
    }
    let two_runs = runs.len() > 1;
    groups
        .into_iter()
        .enumerate()
        .map(|(gi, (group, lines))| {
            let column = if lines
                .iter()
                .flat_map(|l| &l.2)
                .any(|r| r.num("tps").is_some())
            {
                "tps"
            } else {
                "eps"
            };
            let series_of = |col: &str| -> Vec<Series> {
                let mut colours: Vec<&str> = Vec::new();
                lines
                    .iter()
                    .map(|(label, tag, ivs)| {
                        let color = colours.iter().position(|l| l == label).unwrap_or_else(|| {
                            colours.push(label);
                            colours.len() - 1
                        });
                        Series {
                            label: if two_runs {
                                format!("{label} · run {tag}")
                            } else {
                                label.clone()
                            },
                            points: ivs
                                .iter()
                                .filter_map(|iv| Some((iv.num("time")?, iv.num(col)?)))
                                .collect(),
                            color,
                            dashed: tag == "B",
                            rep: 0,
                            bars: Vec::new(),
                        }
                    })
                    .collect()
            };
            let slug = sanitise_name(group);
            let title = format!("group {group}");
            let chart = |kind: &str, col: &str, y: &str, what: &str| Chart {
                id: format!("group-{:02}-{slug}-{kind}", gi + 1),
                title: format!("{title}: {what} over time, in each step that ran it"),
                x_label: "time (s)".into(),
                y_label: y.into(),
                x_log2: false,
                series: series_of(col),
                missing: Vec::new(),
                note: format!(
                    "each line: the group's own {what} in one step; its steps alone and beside \
                     other groups side by side show what the others cost it"
                ),
            };
            let throughput = chart(
                "throughput",
                column,
                &format!("{column} of the group"),
                column,
            );
            let latency = chart(
                "latency",
                "lat_pct",
                "latency at the percentile (ms)",
                "latency",
            );
            (title, Some(throughput), Some(latency))
        })
        .collect()
}

/// The worker groups of a step's interval rows in the order they first report (`[""]`
/// without groups).
fn group_names<'a>(intervals: &[&'a Row]) -> Vec<&'a str> {
    let mut names: Vec<&str> = Vec::new();
    for r in intervals {
        let g = r.get(GROUP);
        if !names.contains(&g) {
            names.push(g);
        }
    }
    if names.is_empty() {
        names.push("");
    }
    names
}

/// The phases of interval rows tagged with them (`[[phases]]`, #30), for a chart's note:
/// `; phases: ramp to 6 s, hold to 11 s, low to 16 s` in the order they ran (the first
/// step's, as every step of a suite has the same), or nothing.
fn phase_spans(intervals: &[&Row]) -> String {
    let Some(first_step) = intervals
        .iter()
        .find(|r| !r.get(PHASE).is_empty())
        .map(|r| r.get("step"))
    else {
        return String::new();
    };
    let mut spans: Vec<(&str, f64)> = Vec::new();
    for r in intervals.iter().filter(|r| r.get("step") == first_step) {
        let (phase, Some(time)) = (r.get(PHASE), r.num("time")) else {
            continue;
        };
        match spans.last_mut() {
            Some((name, end)) if *name == phase => *end = time,
            _ if phase.is_empty() => {}
            _ => spans.push((phase, time)),
        }
    }
    let text: Vec<String> = spans
        .iter()
        .map(|(name, end)| format!("{name} to {end:.0} s"))
        .collect();
    format!(
        "; dashed with a target: the phases' target rate; phases: {}",
        text.join(", ")
    )
}

fn column_title(column: &str) -> &str {
    match column {
        "mib_per_s" => "MiB/s",
        c => c,
    }
}

/// How a step is named inside its group: by its x value (`threads=8`), else its step number.
fn step_label(keys: &Keys, row: Option<&Row>, step: &str) -> String {
    match (row, &keys.x.column) {
        (Some(r), Some(c)) if !r.get(c).is_empty() => format!("{c}={}", r.get(c)),
        _ => format!("step {step}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn run(axes: &[&str], rows: Vec<Row>, intervals: Vec<Row>) -> Run {
        let header = ["step", "name", "variant", "workload", "threads"]
            .iter()
            .chain(axes)
            .chain(&["repetition", "status"])
            .map(|c| c.to_string())
            .collect();
        Run {
            path: PathBuf::from("r"),
            dir: PathBuf::from("r"),
            name: "s/r".into(),
            header,
            rows,
            phase_rows: Vec::new(),
            group_rows: Vec::new(),
            intervals,
            transactions: Vec::new(),
            suite_text: None,
            servers: Default::default(),
            origin: crate::results::load::Origin::sbsuite(),
            host: Err(crate::results::host::HostFileError::Missing),
        }
    }

    fn row(step: &str, workload: &str, threads: &str, extra: &[(&str, &str)]) -> Row {
        let mut pairs = vec![
            ("step", step),
            ("name", workload),
            ("variant", "default"),
            ("workload", workload),
            ("threads", threads),
            ("repetition", "1"),
            ("status", "ok"),
        ];
        for (c, v) in extra {
            pairs.retain(|(k, _)| k != c);
            pairs.push((c, v));
        }
        Row::from_pairs(&pairs)
    }

    fn tagged(r: &Run) -> Vec<Tagged<'_>> {
        vec![Tagged {
            tag: String::new(),
            run: r,
        }]
    }

    #[test]
    fn x_axis_is_threads_then_another_numeric_axis_then_the_step() {
        let r = run(
            &[],
            vec![row("1", "cpu", "1", &[]), row("2", "cpu", "4", &[])],
            vec![],
        );
        assert_eq!(
            x_axis(&tagged(&r)),
            XAxis {
                column: Some("threads".into()),
                log2: true,
                points: Vec::new(),
                point_columns: Vec::new(),
            }
        );
        let r = run(
            &[],
            vec![row("1", "cpu", "3", &[]), row("2", "cpu", "4", &[])],
            vec![],
        );
        assert!(!x_axis(&tagged(&r)).log2, "3 is not a power of two");
        let r = run(
            &["table_size"],
            vec![
                row("1", "oltp_read_only", "8", &[("table_size", "1000")]),
                row("2", "oltp_read_only", "8", &[("table_size", "5000")]),
            ],
            vec![],
        );
        let x = x_axis(&tagged(&r));
        assert_eq!(x.column.as_deref(), Some("table_size"));
        assert_eq!(x.label(), "table_size");
        let r = run(
            &[],
            vec![row("1", "cpu", "8", &[]), row("2", "threads", "8", &[])],
            vec![],
        );
        let x = x_axis(&tagged(&r));
        assert_eq!(x.column, None);
        assert_eq!(x.label(), "step");
    }

    /// #29: the trial user's report drew the mean of the repetitions (p95 12.5 ms, one slow
    /// repetition) next to a table of medians (4.65 ms): a point is now the median, its bar
    /// the interval the tables print.
    #[test]
    fn a_point_is_the_median_of_its_repetitions_with_their_interval_and_failed_steps_are_marked() {
        let r = run(
            &[],
            vec![
                row("1", "cpu", "1", &[("eps", "100"), ("lat_p95", "4.6")]),
                row(
                    "2",
                    "cpu",
                    "1",
                    &[("eps", "200"), ("lat_p95", "4.65"), ("repetition", "2")],
                ),
                row(
                    "3",
                    "cpu",
                    "1",
                    &[("eps", "120"), ("lat_p95", "28.25"), ("repetition", "3")],
                ),
                row("4", "cpu", "2", &[("eps", "300")]),
                row("5", "cpu", "4", &[("status", "failed"), ("error", "boom")]),
            ],
            vec![],
        );
        let charts = build(&tagged(&r));
        let eps = &charts.sweep[0];
        assert_eq!(eps.id, "throughput-eps-cpu");
        assert_eq!(eps.series.len(), 1);
        assert_eq!(eps.series[0].points, vec![(1.0, 120.0), (2.0, 300.0)]);
        assert_eq!(eps.y_label, "median eps (events/s)");
        assert!(
            eps.note
                .starts_with("each point: the median of its repetitions (up to 3)")
        );
        assert_eq!(eps.missing.len(), 1);
        assert_eq!(eps.missing[0].x, 4.0);
        assert_eq!(eps.missing[0].what, "step 5 cpu: failed (boom)");
        let p95 = &charts.sweep[1];
        assert_eq!(
            p95.series[0].points,
            vec![(1.0, 4.65)],
            "not the mean, 12.5"
        );
        // The bar is the interval of `compare`'s side at that point; one sample: no bar.
        let side = crate::compare::stats::summarize(&[4.6, 4.65, 28.25]).unwrap();
        let bar = &p95.series[0].bars;
        assert_eq!(bar.len(), 1);
        assert_eq!(
            (bar[0].low, bar[0].high, bar[0].n),
            (side.ci.unwrap().0, side.ci.unwrap().1, 3)
        );
        assert_eq!(eps.series[0].bars.len(), 1, "threads=2 has one repetition");
        // No p99 measured: no p99 chart.
        assert_eq!(charts.sweep.len(), 2);
    }

    #[test]
    fn a_single_repetition_is_drawn_as_its_value_without_a_caption() {
        let r = run(
            &[],
            vec![
                row("1", "cpu", "1", &[("eps", "100")]),
                row("2", "cpu", "2", &[("eps", "150")]),
            ],
            vec![],
        );
        let eps = &build(&tagged(&r)).sweep[0];
        assert_eq!(eps.y_label, "eps (events/s)");
        assert!(eps.note.is_empty() && eps.series[0].bars.is_empty());
    }

    /// #29: the repetitions of one thread count were drawn in one colour with nothing to tell
    /// them apart.
    #[test]
    fn repetitions_in_a_time_series_are_lines_of_their_own() {
        let iv = |step: &str, t: &str, tps: &str| {
            Row::from_pairs(&[("step", step), ("time", t), ("tps", tps), ("lat_pct", "5")])
        };
        let r = run(
            &[],
            vec![
                row("1", "oltp_read_only", "1", &[("tps", "10")]),
                row("2", "oltp_read_only", "2", &[("tps", "20")]),
                row(
                    "3",
                    "oltp_read_only",
                    "1",
                    &[("tps", "11"), ("repetition", "2")],
                ),
                row(
                    "4",
                    "oltp_read_only",
                    "2",
                    &[("tps", "21"), ("repetition", "2")],
                ),
                row(
                    "5",
                    "oltp_read_only",
                    "1",
                    &[("tps", "12"), ("repetition", "3")],
                ),
            ],
            (1..=5).map(|s| iv(&s.to_string(), "1", "10")).collect(),
        );
        let charts = build(&tagged(&r));
        let tput = charts.series[0].1.as_ref().unwrap();
        let lines: Vec<(&str, usize, usize)> = tput
            .series
            .iter()
            .map(|s| (s.label.as_str(), s.color, s.rep))
            .collect();
        assert_eq!(
            lines,
            [
                ("threads=1 · rep 1", 0, 0),
                ("threads=2 · rep 1", 1, 0),
                ("threads=1 · rep 2", 0, 1),
                ("threads=2 · rep 2", 1, 1),
                ("threads=1 · rep 3", 0, 2),
            ]
        );
        assert_eq!(
            tput.note,
            "each point: the tps of one interim report; a line per step and repetition"
        );
    }

    #[test]
    fn sql_workloads_share_charts_and_lines_name_what_differs() {
        let r = run(
            &["table_size"],
            vec![
                row(
                    "1",
                    "oltp_read_only",
                    "1",
                    &[
                        ("tps", "10"),
                        ("qps", "160"),
                        ("table_size", "1000"),
                        ("lat_p95", "3"),
                    ],
                ),
                row(
                    "2",
                    "oltp_read_write",
                    "2",
                    &[
                        ("tps", "20"),
                        ("qps", "400"),
                        ("table_size", "1000"),
                        ("variant", "v2"),
                    ],
                ),
                row(
                    "3",
                    "oltp_read_write",
                    "2",
                    &[("tps", "30"), ("table_size", "1000")],
                ),
            ],
            vec![],
        );
        let charts = build(&tagged(&r));
        let ids: Vec<&str> = charts.sweep.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["throughput-tps", "qps", "latency-p95"]);
        let labels: Vec<&str> = charts.sweep[0]
            .series
            .iter()
            .map(|s| s.label.as_str())
            .collect();
        // table_size does not vary: not in the labels; the variant does.
        assert_eq!(
            labels,
            [
                "oltp_read_only · default",
                "oltp_read_write · v2",
                "oltp_read_write · default"
            ]
        );
    }

    #[test]
    fn two_runs_share_colours_and_the_second_is_dashed() {
        let a = run(&[], vec![row("1", "cpu", "1", &[("eps", "1")])], vec![]);
        let b = run(&[], vec![row("1", "cpu", "1", &[("eps", "2")])], vec![]);
        let runs = vec![
            Tagged {
                tag: "A".into(),
                run: &a,
            },
            Tagged {
                tag: "B".into(),
                run: &b,
            },
        ];
        let charts = build(&runs);
        let s = &charts.sweep[0].series;
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].label.as_str(), s[0].dashed), ("cpu · run A", false));
        assert_eq!((s[1].label.as_str(), s[1].dashed), ("cpu · run B", true));
        assert_eq!(s[0].color, s[1].color);
    }

    #[test]
    fn time_series_group_steps_by_line_and_colour_them_by_x() {
        let iv = |step: &str, t: &str, tps: &str| {
            Row::from_pairs(&[
                ("step", step),
                ("time", t),
                ("tps", tps),
                ("eps", tps),
                ("lat_pct", "5"),
                ("percentile", "99"),
            ])
        };
        let r = run(
            &[],
            vec![
                row("1", "oltp_read_only", "1", &[("tps", "10")]),
                row("2", "oltp_read_only", "2", &[("tps", "20")]),
                row("3", "oltp_point_select", "2", &[("tps", "30")]),
            ],
            vec![
                iv("1", "1", "9"),
                iv("1", "2", "11"),
                iv("2", "1", "20"),
                iv("3", "1", "30"),
                // A step without a results row.
                Row::from_pairs(&[("step", "9"), ("name", "lost"), ("time", "1"), ("eps", "1")]),
            ],
        );
        let charts = build(&tagged(&r));
        let titles: Vec<&str> = charts.series.iter().map(|g| g.0.as_str()).collect();
        assert_eq!(
            titles,
            [
                "oltp_read_only",
                "oltp_point_select",
                "lost (no results row)"
            ]
        );
        let (_, tput, lat) = &charts.series[0];
        let tput = tput.as_ref().unwrap();
        assert_eq!(tput.title, "oltp_read_only: tps over time");
        assert_eq!(tput.series.len(), 2);
        assert_eq!(tput.series[0].label, "threads=1");
        assert_eq!(tput.series[0].points, vec![(1.0, 9.0), (2.0, 11.0)]);
        let lat = lat.as_ref().unwrap();
        assert_eq!(lat.y_label, "p99 latency (ms)");
        // threads=2 has the same colour in both groups.
        let point_select = charts.series[1].1.as_ref().unwrap();
        assert_eq!(point_select.series[0].label, "threads=2");
        assert_eq!(point_select.series[0].color, tput.series[1].color);
        // The lost step has eps but no latency.
        assert!(charts.series[2].1.is_some() && charts.series[2].2.is_none());
    }

    #[test]
    fn several_variants_without_a_numeric_axis_are_drawn_per_variant_against_the_matrix_point() {
        // Interleaved: the variants share out the step numbers.
        let r = run(
            &[],
            vec![
                row("1", "cpu", "4", &[("eps", "10"), ("variant", "a")]),
                row("2", "cpu", "4", &[("eps", "12"), ("variant", "b")]),
                row("3", "threads", "4", &[("eps", "30"), ("variant", "b")]),
                row("4", "threads", "4", &[("eps", "33"), ("variant", "a")]),
            ],
            vec![],
        );
        let charts = build(&tagged(&r));
        assert_eq!(charts.x.name(), "matrix point");
        assert_eq!(
            charts.x.points,
            ["workload=cpu threads=4", "workload=threads threads=4"]
        );
        let cpu = &charts.sweep[0];
        assert_eq!(cpu.title, "cpu: Events per second vs matrix point");
        let lines: Vec<(&str, &[(f64, f64)])> = cpu
            .series
            .iter()
            .map(|s| (s.label.as_str(), s.points.as_slice()))
            .collect();
        assert_eq!(
            lines,
            [("a", &[(1.0, 10.0)][..]), ("b", &[(1.0, 12.0)][..])]
        );
        let threads = &charts.sweep[1];
        assert_eq!(threads.series[0].label, "b");
        assert_eq!(threads.series[0].points, [(2.0, 30.0)]);
        // One variant: still the step number.
        let one = run(
            &[],
            vec![
                row("1", "cpu", "4", &[("eps", "1")]),
                row("2", "threads", "4", &[("eps", "2")]),
            ],
            vec![],
        );
        assert_eq!(build(&tagged(&one)).x.name(), "step");
    }
}
