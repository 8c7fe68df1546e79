//! What the page says of comparisons: the verdict at its top (#29: one line per comparison,
//! each variant against the baseline variant, or run B against run A) and the Variants section
//! (per metric a table with a row per matrix point and a column per variant, then each matrix
//! point's steady state per variant).
//!
//! Every number and verdict is `sbsuite compare`'s: the comparisons are made once per page by
//! [`crate::compare::compare_by`] (`--by variant`) or [`crate::compare::compare_runs`] (two
//! runs) and the verdict line is [`Headline`], the line `compare`'s text formats print, so the
//! page and the command never disagree. What the page adds is only what it reads from the
//! rows: which cells hold a run that was not steady, and the warm-up and trend of each cell.

use std::fmt::Write as _;

use super::charts::Tagged;
use super::svg::escape;
use crate::compare::headline::Headline;
use crate::compare::{CompareError, Comparison, Line, key_text};
use crate::results::load::{Row, Run};
use crate::stats::steady::unsteady_text;

/// The comparisons of the page: each variant of a one-run page against its first, or run B
/// against run A; `None` when there is nothing to compare (one run of one variant).
pub fn comparisons(runs: &[Tagged]) -> Option<Result<Vec<Comparison>, CompareError>> {
    match runs {
        [one] => {
            let mut names: Vec<&str> = one.run.rows.iter().map(|r| r.get("variant")).collect();
            names.sort_unstable();
            names.dedup();
            (names.len() > 1).then(|| crate::compare::compare_by(one.run, "variant", &[], &[]))
        }
        [a, b] => Some(
            crate::compare::compare_runs(
                (&format!("run {}", a.tag), a.run),
                (&format!("run {}", b.tag), b.run),
                &[],
                &[],
            )
            .map(|c| vec![c]),
        ),
        _ => None,
    }
}

/// A side's name on the page: the variant alone (`relaxed`, not `variant=relaxed`).
fn side_name(side: &str) -> &str {
    side.strip_prefix("variant=").unwrap_or(side)
}

/// The verdict section: per comparison `relaxed vs baseline: tps +43.1% [+40.2, +46.0]
/// better, …`, each metric coloured by its direction, then a warning per compared run step
/// that was not steady.
pub fn verdict(h: &mut String, cs: &Result<Vec<Comparison>, CompareError>) {
    h.push_str("<h2 id=\"verdict\">Verdict</h2>\n");
    let cs = match cs {
        Ok(cs) => cs,
        Err(e) => {
            let _ = writeln!(
                h,
                "<p class=\"note\">No verdict: the runs cannot be compared: {}</p>",
                escape(&e.to_string())
            );
            return;
        }
    };
    for c in cs {
        let headline = Headline::of(c);
        let _ = write!(
            h,
            "<p class=\"headline\"><b>{} vs {}</b>: ",
            escape(side_name(&c.other)),
            escape(side_name(&c.base))
        );
        if headline.parts.is_empty() {
            h.push_str("nothing measured on both sides");
        }
        for (i, p) in headline.parts.iter().enumerate() {
            let _ = write!(
                h,
                "{}<span class=\"{}\">{}</span>",
                if i == 0 { "" } else { ", " },
                p.direction.as_str(),
                escape(&p.to_string())
            );
        }
        let _ = writeln!(
            h,
            " <span class=\"method\">({})</span></p>",
            escape(&headline.method)
        );
        for u in &c.unsteady {
            let _ = writeln!(h, "<p class=\"warn\">⚠ not steady: {}</p>", escape(u));
        }
    }
    h.push_str("<p class=\"note\">Each metric: its change in % of the baseline (of the medians) with the 95 % interval of the ratio and the verdict at α = 0.05; over several matrix points the geometric mean of the ratios and how many points went which way. The tables below (and <code>sbsuite compare</code>) hold every line.</p>\n");
}

/// The matrix point of a row, as compare keys it: every key column but `variant`.
fn point(run: &Run, row: &Row) -> Vec<(String, String)> {
    run.key_columns()
        .iter()
        .filter(|c| *c != "variant")
        .map(|c| (c.clone(), row.cell(c).unwrap_or_default().to_string()))
        .collect()
}

/// The `ok` rows of variant `variant` at matrix point `key`.
fn cell_rows<'r>(run: &'r Run, variant: &str, key: &[(String, String)]) -> Vec<&'r Row> {
    run.rows
        .iter()
        .filter(|r| r.get("variant") == variant && r.get("status") == "ok")
        .filter(|r| point(run, r) == key)
        .collect()
}

/// ` ⚠` with the steps that were not steady as its tooltip, when any of `rows` was not.
fn unsteady_mark(rows: &[&Row]) -> String {
    let steps: Vec<String> = rows
        .iter()
        .filter(|r| r.get("steady") == "no")
        .map(|r| format!("step {}: {}", r.get("step"), unsteady_of(r)))
        .collect();
    if steps.is_empty() {
        return String::new();
    }
    format!(
        " <span class=\"warn\" title=\"{}\">⚠ not steady</span>",
        escape(&steps.join("; "))
    )
}

/// The warning sentence of a row that was not steady.
pub(super) fn unsteady_of(r: &Row) -> String {
    match (r.num("trend_pct_per_min"), r.num("seconds")) {
        (Some(t), Some(s)) => unsteady_text(t, s),
        _ => "throughput not steady".into(),
    }
}

/// A variant study (a run of several variants): per metric, one table with a row per matrix
/// point and a column per variant, each other variant with its change against the first one
/// and the verdict, then the steady state of each cell. `cs` are the page's comparisons.
pub fn variants(h: &mut String, run: &Run, cs: &Result<Vec<Comparison>, CompareError>) {
    h.push_str("<h2 id=\"variants\">Variants</h2>\n");
    let cs = match cs {
        Ok(cs) => cs,
        Err(e) => {
            let _ = writeln!(
                h,
                "<p class=\"note\">The variants cannot be compared: {}</p>",
                escape(&e.to_string())
            );
            return;
        }
    };
    for c in cs {
        let _ = writeln!(
            h,
            "<p class=\"meta\">{} → {}: {}</p>",
            escape(&c.base),
            escape(&c.other),
            escape(&crate::compare::export::method(c))
        );
    }
    if cs.iter().any(|c| c.few_samples) {
        h.push_str("<p class=\"note\">Fewer than 6 samples on a side: verdicts have little power (raise [suite] repeat).</p>\n");
    }
    let base = side_name(&cs[0].base);
    // Matrix points in the order the comparisons met them.
    let mut all_keys: Vec<&Vec<(String, String)>> = Vec::new();
    for m in &cs[0].metrics {
        let mut keys: Vec<&Vec<(String, String)>> = Vec::new();
        for c in cs {
            for l in c.lines.iter().filter(|l| l.metric == m.name) {
                if !keys.contains(&&l.key) {
                    keys.push(&l.key);
                }
            }
        }
        if keys.is_empty() {
            continue;
        }
        let name = if m.name == "tps" {
            cs[0].throughput
        } else {
            m.name
        };
        let _ = write!(
            h,
            "<h3>{} ({} is better)</h3>\n<table>\n<tr><th>matrix point</th><th>{}</th>",
            escape(name),
            if m.higher_is_better {
                "higher"
            } else {
                "lower"
            },
            escape(base)
        );
        for c in cs {
            let _ = write!(
                h,
                "<th>{}</th><th>change</th><th>verdict</th>",
                escape(side_name(&c.other))
            );
        }
        h.push_str("</tr>\n");
        for key in keys {
            if !all_keys.contains(&key) {
                all_keys.push(key);
            }
            let line = |c| line_of(c, m.name, key);
            let base_side = cs.iter().find_map(|c| line(c)?.base.clone());
            let _ = write!(
                h,
                "<tr><td>{}</td><td class=\"n\">{}{}</td>",
                escape(&key_text(key)),
                escape(&crate::compare::export::side_text(&base_side)),
                unsteady_mark(&cell_rows(run, base, key))
            );
            for c in cs {
                let Some(l) = line(c) else {
                    h.push_str("<td></td><td></td><td></td>");
                    continue;
                };
                let p = l
                    .p_value
                    .map(|p| format!(" (p {p:.3})"))
                    .unwrap_or_default();
                let _ = write!(
                    h,
                    "<td class=\"n\">{}{}</td><td class=\"n\">{}</td><td class=\"{}\">{}{}</td>",
                    escape(&crate::compare::export::side_text(&l.other)),
                    unsteady_mark(&cell_rows(run, side_name(&c.other), key)),
                    l.delta_pct.map(|d| format!("{d:+.1}%")).unwrap_or_default(),
                    match l.verdict.as_str() {
                        v @ ("better" | "worse") => v,
                        _ => "",
                    },
                    escape(&l.verdict),
                    p
                );
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table>\n");
    }
    steady_table(h, run, base, cs, &all_keys);
}

/// Per matrix point and variant: how many of its repetitions were steady, the warm-up cut
/// before the measured window and the throughput trend (results.csv's `steady`, `warmup_s`,
/// `trend_pct_per_min`). Left out when the run recorded none of them.
fn steady_table(
    h: &mut String,
    run: &Run,
    base: &str,
    cs: &[Comparison],
    keys: &[&Vec<(String, String)>],
) {
    let recorded = |c: &str| run.rows.iter().any(|r| !r.get(c).is_empty());
    if !recorded("steady") && !recorded("warmup_s") {
        return;
    }
    let variants: Vec<&str> = std::iter::once(base)
        .chain(cs.iter().map(|c| side_name(&c.other)))
        .collect();
    h.push_str("<h3>Steady state</h3>\n<table>\n<tr><th>matrix point</th>");
    for v in &variants {
        let _ = write!(h, "<th>{}</th>", escape(v));
    }
    h.push_str("</tr>\n");
    for key in keys {
        let _ = write!(h, "<tr><td>{}</td>", escape(&key_text(key)));
        for v in &variants {
            let rows = cell_rows(run, v, key);
            let unsteady = rows.iter().any(|r| r.get("steady") == "no");
            let _ = write!(
                h,
                "<td{}>{}</td>",
                if unsteady { " class=\"warn\"" } else { "" },
                escape(&steady_cell(&rows))
            );
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}

/// `steady 3 of 3, warm-up 10 s, trend -0.4 to +1.2 %/min`; `⚠ not steady 1 of 3: …` first
/// when a repetition was not, with its sentence.
fn steady_cell(rows: &[&Row]) -> String {
    let mut parts = Vec::new();
    let count = |v: &str| rows.iter().filter(|r| r.get("steady") == v).count();
    let unsteady: Vec<String> = rows
        .iter()
        .filter(|r| r.get("steady") == "no")
        .map(|r| unsteady_of(r))
        .collect();
    if !unsteady.is_empty() {
        parts.push(format!(
            "⚠ not steady {} of {}: {}",
            unsteady.len(),
            rows.len(),
            unsteady.join("; ")
        ));
    }
    if count("yes") > 0 {
        parts.push(format!("steady {} of {}", count("yes"), rows.len()));
    }
    if count("unknown") > 0 {
        parts.push(format!("unknown {} of {}", count("unknown"), rows.len()));
    }
    let range = |col: &str, fmt: &dyn Fn(f64) -> String| {
        let vs: Vec<f64> = rows.iter().filter_map(|r| r.num(col)).collect();
        let lo = vs.iter().copied().reduce(f64::min)?;
        let hi = vs.iter().copied().reduce(f64::max)?;
        Some(if fmt(lo) == fmt(hi) {
            fmt(lo)
        } else {
            format!("{} to {}", fmt(lo), fmt(hi))
        })
    };
    if let Some(w) = range("warmup_s", &|v| format!("{v:.0}")) {
        parts.push(format!("warm-up {w} s"));
    }
    if let Some(t) = range("trend_pct_per_min", &|v| format!("{v:+.1}")) {
        parts.push(format!("trend {t} %/min"));
    }
    parts.join(", ")
}

/// The line of `metric` at matrix point `key` in comparison `c`.
fn line_of<'c>(c: &'c Comparison, metric: &str, key: &[(String, String)]) -> Option<&'c Line> {
    c.lines
        .iter()
        .find(|l| l.metric == metric && l.key.as_slice() == key)
}
