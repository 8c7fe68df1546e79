//! Rendering comparisons: one exporter per format behind one trait, as hyperfine does
//! (`hyperfine/src/export/`): [`table`] (the terminal text, with or without colour),
//! [`markdown`], [`csv`] and [`json`]. Adding a format is one new file and one arm in
//! [`Format::exporter`].
//!
//! Why here and not in `src/report/`: these exporters render [`Comparison`]s, the output of
//! compare's analysis, and nothing else; `report/` draws runs (the HTML page). Kept under
//! `compare/`, the layering stays one-way and acyclic: `compare → results` and
//! `report → results`, and `report → compare` only for the page's section on variants (the
//! verdicts of `compare --by variant`, with [`side_text`] and [`method`]); `compare` never
//! imports `report`.
//!
//! Exporters only format: every number and verdict is decided by the analysis. The text of
//! every format is a contract pinned byte for byte by tests/golden (tests/compare.rs).

pub mod csv;
pub mod json;
pub mod markdown;
pub mod table;

use super::{Comparison, SideStats, key_text};

/// Renders comparisons in one format.
pub trait Exporter {
    /// The whole output for `comparisons`, ending with a newline.
    fn render(&self, comparisons: &[Comparison]) -> String;
}

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Markdown,
    Csv,
    Json,
}

impl Format {
    /// The exporter of this format; `color` only matters for the terminal table.
    pub fn exporter(self, color: bool) -> Box<dyn Exporter> {
        match self {
            Format::Table => Box::new(table::Table { color }),
            Format::Markdown => Box::new(markdown::Markdown),
            Format::Csv => Box::new(csv::Csv),
            Format::Json => Box::new(json::Json),
        }
    }
}

/// Renders comparisons in `format`; `color` only for the terminal table.
pub fn render(cs: &[Comparison], format: Format, color: bool) -> String {
    format.exporter(color).render(cs)
}

/// The method line every format states.
pub const METHOD: &str =
    "Welch's two-sided t-test on the repetitions (α = 0.05); medians; 95 % t-interval of the mean";

/// The method line of a comparison: [`METHOD`], whose test is the paired t-test when the
/// comparison paired its repetitions.
pub fn method(c: &Comparison) -> String {
    if !c.paired {
        return METHOD.to_string();
    }
    let rest = METHOD.split_once(';').map_or("", |(_, rest)| rest);
    format!(
        "{}, two-sided, on the log ratios of repetitions run back to back (α = 0.05);{rest}",
        c.test
    )
}

/// The columns of the table and markdown grids.
const HEAD: [&str; 7] = ["key", "metric", "base", "other", "delta", "p", "verdict"];

/// The grid column that holds the verdict (and a failed gate).
const VERDICT: usize = 6;

fn num(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

/// A side of a line as the grids show it: `median [ci] n=N`, or `—` when not measured.
pub fn side_text(s: &Option<SideStats>) -> String {
    match s {
        None => "—".into(),
        Some(s) => match (s.ci_low, s.ci_high) {
            (Some(l), Some(h)) => format!("{} [{}, {}] n={}", num(s.median), num(l), num(h), s.n),
            _ => format!("{} n={}", num(s.median), s.n),
        },
    }
}

/// The text shared by the table and markdown formats: per comparison a heading, the method
/// and warnings (a difference of tools first: it qualifies every number), the setup notes, the grid (lines then geomeans) drawn by `grid`, and the keys
/// found on one side only.
fn text_report(
    cs: &[Comparison],
    heading: impl Fn(&Comparison) -> String,
    grid: impl Fn(&[[String; 7]]) -> String,
) -> String {
    let mut out = String::new();
    for c in cs {
        out.push_str(&heading(c));
        out.push_str(&format!("method: {}\n", method(c)));
        if let Some(t) = &c.tools {
            out.push_str(&format!("warning: {}\n", t.note));
        }
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
        out.push_str(&grid(&grid_rows(c)));
        for (label, keys) in [(&c.base, &c.only_base), (&c.other, &c.only_other)] {
            for k in keys {
                out.push_str(&format!("only in {label}: {}\n", key_text(k)));
            }
        }
        out.push('\n');
    }
    out
}

/// The grid cells of one comparison: one row per line, then one per geomean.
fn grid_rows(c: &Comparison) -> Vec<[String; 7]> {
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
    rows
}
