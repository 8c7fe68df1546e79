//! `repeat = { min, max, until = "ci95 < N%" }`: repetitions until the result is sure (#29).
//!
//! The plan holds `max` repetitions of every matrix cell (so `sbsuite plan`, the journal and
//! `--resume` see one fixed plan, as with a count); this is the runner's side: after each run
//! it adds the run's metric to its *cell* (the runs that differ only in repetition — and in
//! variant when variants are paired), and once every variant of the cell has at least `min`
//! repetitions and each interval is narrow enough, the cell's later repetitions are skipped
//! with the reason, as a `stop_when` sweep skips past its knee.
//!
//! The intervals are `compare`'s own ([`crate::compare::stats`]): per variant the 95 %
//! interval of the metric ([`stats::summarize`]: of the geometric mean for positive samples,
//! else the t-interval of the mean), its half-width taken as `(hi − lo) / (hi + lo)`, i.e. in %
//! of its centre; with two or more variants run back to back (`variant_order` `interleaved`
//! or `randomized`), also the paired t-interval of each variant's ratio to the first one
//! ([`stats::paired`]), whose half-width is in % already. With `blocked` variants each variant
//! is its own cell (its repetitions all run before the next variant's, so there is nothing to
//! pair yet when its own interval is decided).
//!
//! Failed runs add nothing, so a cell with failures repeats more, up to `max`. On `--resume`
//! the cells are rebuilt from the kept rows ([`Repeats::replay`]), so a cell that was sure
//! stays sure. What each cell took is written to `repetitions.csv` at the end of the run and
//! said in a line per cell.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::compare::stats;
use crate::engine::StepOutcome;
use crate::plan::{Plan, Step, StepKind};
use crate::results::load::Row;
use crate::suite::RepeatUntil;

/// The file that says how many repetitions each cell took.
pub const REPETITIONS_FILE: &str = "repetitions.csv";

/// The columns of [`REPETITIONS_FILE`].
pub const REPETITIONS_COLUMNS: &[&str] = &[
    "cell",
    "variants",
    "metric",
    "repetitions",
    "half_width_pct",
    "target_pct",
    "met",
];

/// One cell: its variants in plan order and their metric by repetition.
#[derive(Default)]
struct Cell {
    variants: Vec<String>,
    values: HashMap<String, BTreeMap<u32, f64>>,
    /// The widest half-width at the last check, and the repetitions it was over.
    last: Option<(f64, usize)>,
    met: bool,
}

/// The state of every cell of a run under a `repeat` rule.
pub struct Repeats {
    rule: Option<RepeatUntil>,
    /// Cells in plan order.
    order: Vec<String>,
    cells: HashMap<String, Cell>,
    /// Why a cell's remaining repetitions are skipped.
    stopped: HashMap<String, String>,
}

impl Repeats {
    /// The cells of `plan`'s runs, under `rule` (no rule: nothing is ever skipped).
    pub fn new(rule: Option<RepeatUntil>, plan: &Plan) -> Repeats {
        let mut r = Repeats {
            rule,
            order: Vec::new(),
            cells: HashMap::new(),
            stopped: HashMap::new(),
        };
        if r.rule.is_some() {
            for step in plan.steps.iter().filter(|s| s.kind == StepKind::Run) {
                let key = r.key(step);
                let cell = r.cells.entry(key.clone()).or_insert_with(|| {
                    r.order.push(key);
                    Cell::default()
                });
                if !cell.variants.contains(&step.variant) {
                    cell.variants.push(step.variant.clone());
                }
            }
        }
        r
    }

    /// The cell of `step`: its matrix values without the repetition, and its variant unless
    /// variants are paired.
    fn key(&self, step: &Step) -> String {
        let mut key = format!("dataset {}", step.dataset);
        for (k, v) in &step.params {
            if k != "repetition" {
                key.push_str(&format!(" {k}={v}"));
            }
        }
        if !self.rule.as_ref().is_some_and(|r| r.paired) {
            key.push_str(&format!(" variant={}", step.variant));
        }
        key
    }

    /// Why `step` is not run: its cell is already sure.
    pub fn stopped(&self, step: &Step) -> Option<&str> {
        self.rule.as_ref()?;
        self.stopped.get(&self.key(step)).map(String::as_str)
    }

    /// Records a finished `ok` run; returns the reason when it makes its cell sure.
    pub fn observe(&mut self, step: &Step, o: &StepOutcome) -> Option<String> {
        let rule = self.rule.as_ref()?;
        let value = outcome_metric(o, &rule.metric)?;
        self.add(step, value)
    }

    /// `--resume`: the cells as the stopped run left them, from its `ok` rows (`rows`: the
    /// results.csv rows by step index), fed in plan order.
    pub fn replay(&mut self, plan: &Plan, rows: &HashMap<usize, Row>) {
        let Some(metric) = self.rule.as_ref().map(|r| r.metric.clone()) else {
            return;
        };
        for step in &plan.steps {
            if let Some(v) = rows
                .get(&step.index)
                .filter(|r| r.get("status") == "ok")
                .and_then(|r| row_metric(r, &metric))
            {
                self.add(step, v);
            }
        }
    }

    fn add(&mut self, step: &Step, value: f64) -> Option<String> {
        let rule = self.rule.clone()?;
        let key = self.key(step);
        let cell = self.cells.get_mut(&key)?;
        cell.values
            .entry(step.variant.clone())
            .or_default()
            .insert(step.repetition, value);
        let n = cell
            .variants
            .iter()
            .map(|v| cell.values.get(v).map_or(0, BTreeMap::len))
            .min()
            .unwrap_or(0);
        if cell.met || n < rule.min as usize {
            return None;
        }
        let widest = widest_half_width(cell)?;
        cell.last = Some((widest, n));
        if widest >= rule.target_pct {
            return None;
        }
        cell.met = true;
        let what = if rule.paired && cell.variants.len() > 1 {
            format!("{} and its paired differences", rule.metric)
        } else {
            rule.metric.clone()
        };
        let why = format!(
            "repeat: the 95 % interval of {what} is ±{widest:.2} % < {} % after {n} repetitions",
            rule.target_pct
        );
        self.stopped.insert(key, why.clone());
        Some(why)
    }

    /// One line per cell for the end of the run: how many repetitions it took, whether the
    /// target was met. Empty without a rule.
    pub fn summary(&self) -> Vec<String> {
        let Some(rule) = &self.rule else {
            return Vec::new();
        };
        self.rows()
            .map(|(key, cell, n)| {
                let width = cell
                    .last
                    .map_or("no interval".into(), |(w, _)| format!("±{w:.2} %"));
                format!(
                    "[sbsuite] repeat: {key}: {n} repetitions, 95 % interval of {} {width}: {}",
                    rule.metric,
                    if cell.met {
                        format!("target < {} % met", rule.target_pct)
                    } else {
                        format!("target < {} % NOT met (max {})", rule.target_pct, rule.max)
                    }
                )
            })
            .collect()
    }

    /// (key, cell, repetitions with a value on every variant) in plan order.
    fn rows(&self) -> impl Iterator<Item = (&str, &Cell, usize)> {
        self.order.iter().filter_map(|k| {
            let cell = self.cells.get(k)?;
            let n = cell
                .variants
                .iter()
                .map(|v| cell.values.get(v).map_or(0, BTreeMap::len))
                .min()
                .unwrap_or(0);
            Some((k.as_str(), cell, n))
        })
    }

    /// Writes [`REPETITIONS_FILE`] into the run directory (nothing without a rule).
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let Some(rule) = &self.rule else {
            return Ok(());
        };
        let mut w = ::csv::Writer::from_path(dir.join(REPETITIONS_FILE))?;
        w.write_record(REPETITIONS_COLUMNS)?;
        for (key, cell, n) in self.rows() {
            w.write_record([
                key.to_string(),
                cell.variants.join(";"),
                rule.metric.clone(),
                n.to_string(),
                cell.last
                    .map(|(h, _)| format!("{h:.4}"))
                    .unwrap_or_default(),
                rule.target_pct.to_string(),
                if cell.met { "yes" } else { "no" }.to_string(),
            ])?;
        }
        w.flush()
    }
}

/// The widest half-width (in %) of the cell's intervals over its complete repetitions: each
/// variant's, and with paired variants each one's paired ratio to the first. `None` when an
/// interval cannot be had (a constant 0, a non-positive paired value).
fn widest_half_width(cell: &Cell) -> Option<f64> {
    let series = |v: &String| -> Vec<(u32, f64)> {
        cell.values
            .get(v)
            .map(|m| m.iter().map(|(&r, &x)| (r, x)).collect())
            .unwrap_or_default()
    };
    let mut widest: f64 = 0.0;
    for v in &cell.variants {
        let xs: Vec<f64> = series(v).into_iter().map(|(_, x)| x).collect();
        let s = stats::summarize(&xs)?;
        let (lo, hi) = s.ci?;
        let half = if hi + lo > 0.0 {
            (hi - lo) / (hi + lo) * 100.0
        } else {
            return None;
        };
        widest = widest.max(half);
    }
    if let [base, others @ ..] = cell.variants.as_slice() {
        let b: BTreeMap<u32, f64> = series(base).into_iter().collect();
        for v in others {
            let pairs: Vec<(f64, f64)> = series(v)
                .into_iter()
                .filter_map(|(r, x)| b.get(&r).map(|&y| (y, x)))
                .collect();
            let (lo, hi) = stats::paired(&pairs)?.ratio_ci_pct?;
            widest = widest.max((hi - lo) / 2.0);
        }
    }
    Some(widest)
}

/// The metric of a finished run, as results.csv would have it (`tps` falls back to `eps` for
/// workloads without SQL).
fn outcome_metric(o: &StepOutcome, metric: &str) -> Option<f64> {
    let secs = o.seconds;
    if secs <= 0.0 {
        return None;
    }
    let v = match metric {
        "tps" => match &o.sql {
            Some(sql) => sql.transactions as f64 / secs,
            None => o.events as f64 / secs,
        },
        "eps" => o.events as f64 / secs,
        "qps" => o
            .sql
            .as_ref()
            .map(|s| (s.reads + s.writes + s.other) as f64 / secs)?,
        "lat_avg" => o.latency.avg_ms,
        "lat_p95" => o.latency.p95_ms,
        "lat_p99" => o.latency.p99_ms,
        _ => return None,
    };
    v.is_finite().then_some(v)
}

/// The metric of a results.csv row ([`outcome_metric`]'s counterpart for `--resume`).
fn row_metric(row: &Row, metric: &str) -> Option<f64> {
    match metric {
        "tps" => row.num("tps").or_else(|| row.num("eps")),
        m => row.num(m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(variants: &[&str], values: &[&[f64]]) -> Cell {
        let mut c = Cell {
            variants: variants.iter().map(|v| v.to_string()).collect(),
            ..Cell::default()
        };
        for (v, xs) in variants.iter().zip(values) {
            c.values.insert(
                v.to_string(),
                xs.iter()
                    .enumerate()
                    .map(|(i, &x)| (i as u32 + 1, x))
                    .collect(),
            );
        }
        c
    }

    #[test]
    fn quiet_cells_are_narrow_and_noisy_ones_wide() {
        let quiet = cell(&["a"], &[&[1000.0, 1001.0, 999.0]]);
        assert!(widest_half_width(&quiet).unwrap() < 1.0);
        let noisy = cell(&["a"], &[&[500.0, 1500.0, 900.0]]);
        assert!(widest_half_width(&noisy).unwrap() > 20.0);
        // Each variant quiet, but their ratio is not: the paired interval is wide.
        let pair = cell(
            &["a", "b"],
            &[&[1000.0, 1001.0, 999.0], &[1000.0, 1200.0, 800.0]],
        );
        assert!(widest_half_width(&pair).unwrap() > 20.0);
        let pair = cell(
            &["a", "b"],
            &[&[1000.0, 1100.0, 900.0], &[2000.0, 2200.0, 1800.0]],
        );
        // Drift shared by both sides: each side is wide, the ratio is exact.
        let each = widest_half_width(&pair).unwrap();
        assert!(each > 10.0, "{each}");
    }
}
