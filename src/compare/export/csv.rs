//! CSV: one record per compared line and per geomean (key `geomean`), numbers unrounded, for
//! spreadsheets. The columns are a contract (tests/golden).

use super::{Exporter, reps_count};
use crate::compare::{Comparison, RepsNeeded, key_text};

/// The header, in order.
pub const COLUMNS: [&str; 16] = [
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
    "delta_ci_low",
    "delta_ci_high",
    "reps_5pct",
    "reps_10pct",
];

pub struct Csv;

impl Exporter for Csv {
    fn render(&self, cs: &[Comparison]) -> String {
        let mut w = ::csv::Writer::from_writer(Vec::new());
        let _ = w.write_record(COLUMNS);
        for c in cs {
            for l in &c.lines {
                let f = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
                // Empty where no repetitions are needed (a verdict, or no noise measured).
                let reps = |n: fn(&RepsNeeded) -> Option<usize>| {
                    l.reps_needed
                        .as_ref()
                        .map_or(String::new(), |r| reps_count(n(r)))
                };
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
                    f(l.delta_ci_low),
                    f(l.delta_ci_high),
                    reps(|r| r.change_5pct),
                    reps(|r| r.change_10pct),
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
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                ]);
            }
        }
        String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
    }
}
