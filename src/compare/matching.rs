//! Matching the rows of two sides by their matrix keys and turning each matched key's
//! repetitions into per-metric lines with a delta, a p-value and a verdict.
//!
//! Repetitions are the samples; only `ok` rows count, but a key seen only in failed rows is
//! still a key (so it is matched, or listed as one-sided, never dropped silently). Keys keep
//! the order they first appear in, base first.

use std::collections::{BTreeMap, BTreeSet};

use crate::results::load::Row;

use super::gates::{self, Gate};
use super::stats::{self, ALPHA};
use super::{
    Comparison, Line, Metric, RepsNeeded, SideStats, TEST_LOG, TEST_PAIRED_LOG, TEST_PAIRED_RAW,
    TEST_RAW,
};

/// The rows of one side grouped by key: key → samples per metric.
type Side = BTreeMap<Vec<(String, String)>, BTreeMap<&'static str, Vec<f64>>>;

fn side(
    rows: &[&Row],
    key_cols: &[String],
    metrics: &[Metric],
) -> (Side, Vec<Vec<(String, String)>>) {
    let mut out: Side = BTreeMap::new();
    let mut order = Vec::new();
    for r in rows {
        let key: Vec<(String, String)> = key_cols
            .iter()
            .map(|c| (c.clone(), r.cell(c).unwrap_or_default().to_string()))
            .collect();
        if !out.contains_key(&key) {
            order.push(key.clone());
        }
        let entry = out.entry(key).or_default();
        if r.cell("status") != Some("ok") {
            continue;
        }
        // Bad cells (`NaN`, `abc`) are never samples: `compare` refused them before when a
        // gate watches the metric, or said in a note that they are left out.
        for m in metrics {
            if let Ok(Some(v)) = m.read(r) {
                entry.entry(m.name).or_default().push(v);
            }
        }
    }
    (out, order)
}

/// Per key and metric, the samples of the two sides paired by repetition: (base, other) for
/// each repetition with an `ok` row and a number on both sides.
type Pairs = BTreeMap<Vec<(String, String)>, BTreeMap<&'static str, Vec<(f64, f64)>>>;

fn pairs(
    base_rows: &[&Row],
    other_rows: &[&Row],
    key_cols: &[String],
    metrics: &[Metric],
) -> Pairs {
    let index = |rows: &[&Row]| -> BTreeMap<(Vec<(String, String)>, String), Row> {
        rows.iter()
            .filter(|r| r.cell("status") == Some("ok"))
            .map(|r| {
                let key = key_cols
                    .iter()
                    .map(|c| (c.clone(), r.cell(c).unwrap_or_default().to_string()))
                    .collect();
                ((key, r.get("repetition").to_string()), (*r).clone())
            })
            .collect()
    };
    let other = index(other_rows);
    let mut out = Pairs::new();
    for ((key, rep), b) in index(base_rows) {
        let Some(o) = other.get(&(key.clone(), rep)) else {
            continue;
        };
        for m in metrics {
            if let (Ok(Some(x)), Ok(Some(y))) = (m.read(&b), m.read(o)) {
                out.entry(key.clone())
                    .or_default()
                    .entry(m.name)
                    .or_default()
                    .push((x, y));
            }
        }
    }
    out
}

/// Compares `base_rows` with `other_rows`, keyed by `key_cols`, on `metrics` (in that order),
/// with Welch's t-test.
pub fn compare_sides(
    base_name: &str,
    other_name: &str,
    base_rows: &[&Row],
    other_rows: &[&Row],
    key_cols: &[String],
    metrics: &[Metric],
    gates: &[Gate],
) -> Comparison {
    compare_with(
        base_name, other_name, base_rows, other_rows, key_cols, metrics, gates, false,
    )
}

/// [`compare_sides`] for two sides whose repetitions ran back to back (variants of a run with
/// `variant_order = "interleaved"` or `"randomized"`): repetition i of one side is paired with
/// repetition i of the other, and the verdicts use the paired t-test ([`stats::paired_p`]).
pub fn compare_paired(
    base_name: &str,
    other_name: &str,
    base_rows: &[&Row],
    other_rows: &[&Row],
    key_cols: &[String],
    metrics: &[Metric],
    gates: &[Gate],
) -> Comparison {
    compare_with(
        base_name, other_name, base_rows, other_rows, key_cols, metrics, gates, true,
    )
}

/// The rows of a side whose throughput was not steady (results.csv's `steady = no`, #29), as
/// "SIDE step N (NAME): throughput fell 30.0 % over its 60 s window (…)": their numbers are
/// compared like the others, but never silently.
fn unsteady<'r>(side: &'r str, rows: &'r [&'r Row]) -> impl Iterator<Item = String> + 'r {
    rows.iter()
        .filter(|r| r.get("steady") == "no")
        .map(move |r| {
            let what = match (r.num("trend_pct_per_min"), r.num("seconds")) {
                (Some(t), Some(s)) => crate::stats::steady::unsteady_text(t, s),
                _ => "throughput not steady".into(),
            };
            format!("{side} step {} ({}): {what}", r.get("step"), r.get("name"))
        })
}

#[allow(clippy::too_many_arguments)]
fn compare_with(
    base_name: &str,
    other_name: &str,
    base_rows: &[&Row],
    other_rows: &[&Row],
    key_cols: &[String],
    metrics: &[Metric],
    gates: &[Gate],
    paired: bool,
) -> Comparison {
    let pairs = if paired {
        pairs(base_rows, other_rows, key_cols, metrics)
    } else {
        Pairs::new()
    };
    let (base, base_order) = side(base_rows, key_cols, metrics);
    let (other, other_order) = side(other_rows, key_cols, metrics);
    let mut lines = Vec::new();
    let mut ratios: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    let mut few = false;
    let mut measured = BTreeSet::new();
    let mut seen = BTreeSet::new();
    for key in base_order.iter().chain(other_order.iter()) {
        if !seen.insert(key.clone()) {
            continue;
        }
        let (Some(b), Some(o)) = (base.get(key), other.get(key)) else {
            continue;
        };
        for m in metrics {
            let bs = b.get(m.name).and_then(|v| stats::summarize(v));
            let os = o.get(m.name).and_then(|v| stats::summarize(v));
            if bs.is_none() && os.is_none() {
                continue;
            }
            if bs.is_some() && os.is_some() {
                measured.insert(m.name);
            }
            // errors: only worth a line when some side had any.
            if m.name == "errors"
                && bs.as_ref().is_none_or(|s| s.mean == 0.0)
                && os.as_ref().is_none_or(|s| s.mean == 0.0)
            {
                continue;
            }
            // The change in % of the baseline, for the verdict and the gates. From a zero
            // median (errors 0 → 50) it is infinite in its direction, not "no difference":
            // otherwise `errors:+10%` could never fire on a baseline without errors. Only a
            // finite change is shown as the delta.
            let change = match (&bs, &os) {
                (Some(b), Some(o)) if b.median != 0.0 => {
                    Some((o.median - b.median) / b.median * 100.0)
                }
                (Some(_), Some(o)) if o.median != 0.0 => Some(o.median.signum() * f64::INFINITY),
                _ => None,
            };
            let delta = change.filter(|d| d.is_finite());
            if let (Some(b), Some(o)) = (&bs, &os) {
                if b.n < 6 || o.n < 6 {
                    few = true;
                }
                if b.median > 0.0 && o.median > 0.0 {
                    ratios.entry(m.name).or_default().push(o.median / b.median);
                }
            }
            let these = paired.then(|| {
                pairs
                    .get(key)
                    .and_then(|p| p.get(m.name))
                    .map_or(&[][..], Vec::as_slice)
            });
            // The ln-scale tests where every value is positive, so that the verdict is
            // significant exactly when the interval of the ratio excludes 0 %.
            let (ratio, p, test, reps_needed) = match (&bs, &os, these) {
                (Some(_), Some(_), Some(these)) => match stats::paired(these) {
                    Some(t) => match t.ratio_ci_pct {
                        Some(ci) => (
                            Some(ci),
                            Some(t.p),
                            Some(TEST_PAIRED_LOG),
                            RepsNeeded::paired(t.sd_ln, these.len()),
                        ),
                        None => (None, Some(t.p), Some(TEST_PAIRED_RAW), None),
                    },
                    None => (None, None, None, None),
                },
                (Some(b), Some(o), None) => match stats::log_welch(b, o) {
                    Some(r) => (
                        Some(r.ratio_ci_pct),
                        Some(r.p),
                        Some(TEST_LOG),
                        RepsNeeded::between(b, o),
                    ),
                    None => {
                        let p = stats::welch_p(b, o);
                        (None, p, p.map(|_| TEST_RAW), None)
                    }
                },
                _ => (None, None, None, None),
            };
            let verdict = match (p, change) {
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
            lines.push(Line {
                key: key.clone(),
                metric: m.name,
                base: bs.as_ref().map(SideStats::from),
                other: os.as_ref().map(SideStats::from),
                delta_pct: delta,
                delta_ci_low: ratio.map(|r| r.0),
                delta_ci_high: ratio.map(|r| r.1),
                p_value: p,
                pairs: these.map(<[_]>::len),
                test,
                reps_needed: reps_needed.filter(|_| verdict == "~"),
                verdict,
                gate_failed: gates::check(gates, m.name, change, p),
            });
        }
    }
    let geomean = metrics
        .iter()
        .filter_map(|m| {
            let r = ratios.get(m.name)?;
            stats::geomean(r).map(|g| (m.name, (g - 1.0) * 100.0))
        })
        .collect();
    let test = if paired {
        let counts = lines.iter().filter_map(|l| l.pairs);
        let (least, most) = (counts.clone().min().unwrap_or(0), counts.max().unwrap_or(0));
        let n = if least == most {
            least.to_string()
        } else {
            format!("{least}–{most}")
        };
        format!("paired t-test over {n} pairs per key")
    } else {
        "Welch's t-test".to_string()
    };
    // Workloads without SQL have no tps: the `tps` metric reads their eps (`Metric::read`),
    // and a headline names it so.
    let has = |col: &str| {
        base_rows
            .iter()
            .chain(other_rows)
            .any(|r| r.num(col).is_some())
    };
    let throughput = if !has("tps") && has("eps") {
        "eps"
    } else {
        "tps"
    };
    Comparison {
        base: base_name.to_string(),
        other: other_name.to_string(),
        test,
        paired,
        throughput,
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
        unsteady: unsteady(base_name, base_rows)
            .chain(unsteady(other_name, other_rows))
            .collect(),
        hosts: Vec::new(),
        tools: None,
        few_samples: few,
        measured: metrics
            .iter()
            .map(|m| m.name)
            .filter(|m| measured.contains(m))
            .collect(),
        metrics: metrics.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::gates::parse_gates;
    use crate::compare::{Format, METRICS, key_text, render};

    fn row(variant: &str, threads: &str, rep: u32, tps: f64, p95: f64) -> Row {
        Row::from_pairs(&[
            ("variant", variant),
            ("workload", "oltp_read_write"),
            ("threads", threads),
            ("repetition", &rep.to_string()),
            ("tps", &tps.to_string()),
            ("lat_p95", &p95.to_string()),
            ("status", "ok"),
        ])
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
            METRICS,
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
            METRICS,
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
            METRICS,
            &gates,
        );
        let tps = back.lines.iter().find(|l| l.metric == "tps").unwrap();
        assert_eq!(tps.verdict, "worse");
        assert!(tps.gate_failed.as_deref().unwrap().contains("significant"));
        assert!((back.geomean.iter().find(|g| g.0 == "tps").unwrap().1 + 12.46).abs() < 0.01);
    }

    #[test]
    fn a_rise_from_zero_is_worse_and_crosses_a_gate() {
        let rows = |errors: &[&str]| -> Vec<Row> {
            errors
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    Row::from_pairs(&[
                        ("workload", "oltp_read_write"),
                        ("threads", "8"),
                        ("repetition", &(i + 1).to_string()),
                        ("errors", e),
                        ("status", "ok"),
                    ])
                })
                .collect()
        };
        let none = rows(&["0", "0", "0"]);
        let some = rows(&["48", "50", "52"]);
        let gates = parse_gates("errors:+10%").unwrap();
        let (none, some): (Vec<&Row>, Vec<&Row>) = (none.iter().collect(), some.iter().collect());
        let c = compare_sides("a", "b", &none, &some, &keys(), METRICS, &gates);
        let errors = c.lines.iter().find(|l| l.metric == "errors").unwrap();
        assert_eq!(errors.delta_pct, None, "no finite percentage from 0");
        assert_eq!(errors.verdict, "worse");
        assert_eq!(
            errors.gate_failed.as_deref(),
            Some("errors:+10% crossed (from 0, significant)")
        );
        assert_eq!(c.measured, ["errors"]);
        // Back to zero: better, and a rise gate does not fire.
        let c = compare_sides("b", "a", &some, &none, &keys(), METRICS, &gates);
        let errors = c.lines.iter().find(|l| l.metric == "errors").unwrap();
        assert_eq!(
            (errors.delta_pct, errors.verdict.as_str()),
            (Some(-100.0), "better")
        );
        assert_eq!(errors.gate_failed, None);
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
            METRICS,
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
}
