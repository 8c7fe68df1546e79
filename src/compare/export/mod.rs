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
//! every format is a contract pinned byte for byte by tests/golden (tests/all/compare.rs).

pub mod csv;
pub mod json;
pub mod markdown;
pub mod table;

use super::headline::Headline;
use super::stats::MAX_REPS;
use super::{Comparison, RepsNeeded, SideStats, delta_text, key_text, num};

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
pub const METHOD: &str = "Welch's two-sided t-test on the ln of the repetitions (α = 0.05; raw values when a sample is ≤ 0); medians; 95 % intervals: per side of the geometric mean (t-interval of the mean when a sample is ≤ 0), after the delta of the ratio of geometric means as a % change";

/// The assumptions of the repetitions-needed lines ([`crate::compare::RepsNeeded`]): a
/// footnote in the text formats, `power.assumptions` in JSON.
pub const POWER_NOTE: &str = "repetitions needed: the smallest n a side reaching power 0.8 in a two-sided two-sample t-test at α = 0.05 on ln values (exact noncentral t), equal n a side, the noise being the sd of ln values measured, pooled over both sides; a true change of the given size is then detected 4 times in 5; for variants run back to back, pairs needed in a paired t-test on the ln ratios, the noise being their sd";

/// The method line of a comparison: [`METHOD`], whose test is the paired t-test when the
/// comparison paired its repetitions.
pub fn method(c: &Comparison) -> String {
    if !c.paired {
        return METHOD.to_string();
    }
    format!(
        "{}, two-sided, on the ln ratios of repetitions run back to back (α = 0.05; differences when a value is ≤ 0); medians; 95 % intervals: per side of the geometric mean (t-interval of the mean when a sample is ≤ 0), after the delta of the geometric mean of the paired ratios as a % change",
        c.test
    )
}

/// The columns of the table and markdown grids.
const HEAD: [&str; 7] = ["key", "metric", "base", "other", "delta", "p", "verdict"];

/// The grid column that holds the verdict (and a failed gate).
const VERDICT: usize = 6;

/// Per metric with undecided lines, the repetitions needed at its noisiest key: the lines of
/// the text formats (their assumptions follow in [`POWER_NOTE`]).
fn reps_lines(c: &Comparison) -> Vec<String> {
    c.metrics
        .iter()
        .filter_map(|m| {
            let undecided: Vec<&RepsNeeded> = c
                .lines
                .iter()
                .filter(|l| l.metric == m.name)
                .filter_map(|l| l.reps_needed.as_ref())
                .collect();
            let worst = undecided
                .iter()
                .max_by(|a, b| a.sd_ln.total_cmp(&b.sd_ln))?;
            Some(format!(
                "not significant: {} ({} key{}): at the noise measured (sd of ln {:.4}{}) a 5 % change needs {} repetitions a side, a 10 % change {}",
                m.name,
                undecided.len(),
                if undecided.len() == 1 { "" } else { "s" },
                worst.sd_ln,
                if undecided.len() == 1 { "" } else { ", the noisiest key" },
                reps_count(worst.change_5pct),
                reps_count(worst.change_10pct),
            ))
        })
        .collect()
}

/// A repetitions-needed count: `>100000` beyond [`MAX_REPS`].
fn reps_count(n: Option<usize>) -> String {
    n.map_or(format!(">{MAX_REPS}"), |n| n.to_string())
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

/// The text shared by the table and markdown formats: per comparison a heading, the one-line
/// verdict ([`Headline`]), the method and warnings (a difference of tools first: it qualifies every number), the setup notes,
/// the grid (lines then geomeans) drawn by `grid`, the keys found on one side only, and the
/// repetitions needed where a difference was not significant, with their assumptions.
fn text_report(
    cs: &[Comparison],
    heading: impl Fn(&Comparison) -> String,
    grid: impl Fn(&[[String; 7]]) -> String,
) -> String {
    let mut out = String::new();
    for c in cs {
        out.push_str(&heading(c));
        out.push_str(&format!("verdict: {}\n", Headline::of(c).text()));
        out.push_str(&format!("method: {}\n", method(c)));
        if let Some(t) = &c.tools {
            out.push_str(&format!("warning: {}\n", t.note));
        }
        let reps = reps_lines(c);
        if c.few_samples {
            out.push_str(&format!(
                "warning: fewer than 6 samples on a side: verdicts have little power (raise [suite] repeat{})\n",
                if reps.is_empty() { "" } else { "; how far: below" }
            ));
        }
        if c.lines
            .iter()
            .any(|l| l.p_value.is_none() && l.delta_pct.is_some())
        {
            out.push_str("note: one sample per side for some rows: no verdict (n/a), gates use the raw delta\n");
        }
        for u in &c.unsteady {
            out.push_str(&format!("warning: {u}\n"));
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
        if !reps.is_empty() {
            for r in &reps {
                out.push_str(r);
                out.push('\n');
            }
            out.push_str(&format!("({POWER_NOTE})\n"));
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
                delta_text(l),
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
