//! The HTML page around the charts: header, the verdict of each comparison (variants of a
//! run, or two runs), the variants compared, results table, suites, server variables.
//!
//! One file with inline CSS and inline SVG and no script, so it opens from disk, from a mail
//! attachment or from a CI artifact with no network, and prints as it shows. Long lists
//! (every server variable, each suite file) sit in `<details>` so the page stays short.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::charts::{Charts, Tagged};
use super::svg::escape;
use super::variants;
use crate::report::transactions;
use crate::results::load::Row;

/// The page's CSS (also the capacity page's, [`super::capacity`]).
pub(super) const STYLE: &str = "
body{font-family:sans-serif;margin:24px;color:#222;background:#fff;max-width:1320px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
.meta{color:#555;font-size:13px;margin:2px 0}
.charts{display:flex;flex-wrap:wrap;gap:12px}
.charts svg{width:600px;max-width:100%;height:auto;border:1px solid #e3e3e3}
table{border-collapse:collapse;font-size:12px;margin:6px 0}
th,td{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f4f4f4} td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.failed td{background:#fdecea} tr.interrupted td{background:#fff6e0}
td.better{color:#176f2c;font-weight:bold} td.worse{color:#b3261e;font-weight:bold}
tr.unsteady td{background:#fff6e0} .warn{color:#8a4b00;font-weight:bold}
p.headline{font-size:15px;margin:6px 0;line-height:1.5}
.headline .better{color:#176f2c;font-weight:bold} .headline .worse{color:#b3261e;font-weight:bold}
.headline .mixed{color:#8a4b00;font-weight:bold} .headline .unclear{color:#444}
.headline .method{color:#555;font-size:13px}
pre{background:#f7f7f7;border:1px solid #e3e3e3;padding:8px;font-size:12px;overflow:auto;max-height:480px}
details{margin:6px 0} summary{cursor:pointer;color:#245}
.note{color:#666;font-size:12px}
";

/// The whole page.
pub fn render(runs: &[Tagged], charts: &Charts, generated: &str) -> String {
    let mut h = String::new();
    let title = match runs {
        [one] => format!("sbsuite report: {}", one.run.name),
        _ => format!(
            "sbsuite report: {} vs {}",
            runs[0].run.name,
            runs.get(1).map_or("", |t| t.run.name.as_str())
        ),
    };
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&title)
    );
    for t in runs {
        let rows = &t.run.rows;
        let count = |s: &str| rows.iter().filter(|r| r.get("status") == s).count();
        let started = rows
            .iter()
            .map(|r| r.get("started_at"))
            .filter(|s| !s.is_empty())
            .min()
            .unwrap_or("?");
        let tag = if t.tag.is_empty() {
            String::new()
        } else {
            format!("run {}: ", t.tag)
        };
        let _ = writeln!(
            h,
            "<p class=\"meta\">{}<b>{}</b> — {} — started {} — {} run step{}: {} ok, {} failed, {} interrupted</p>",
            escape(&tag),
            escape(&t.run.name),
            escape(&t.run.dir.display().to_string()),
            escape(started),
            rows.len(),
            if rows.len() == 1 { "" } else { "s" },
            count("ok"),
            count("failed"),
            count("interrupted")
        );
    }
    let _ = writeln!(
        h,
        "<p class=\"meta\">generated {} by sbsuite {}{}</p>",
        escape(generated),
        env!("CARGO_PKG_VERSION"),
        if runs.len() > 1 {
            " — run B is drawn dashed, in the same colours as run A"
        } else {
            ""
        }
    );
    // #29: then the verdict; runs whose throughput drifted are drawn and tabled like the
    // others, but said so (in the verdict when they were compared).
    let comparisons = variants::comparisons(runs);
    if let Some(cs) = &comparisons {
        variants::verdict(&mut h, cs);
    }
    if !matches!(comparisons, Some(Ok(_))) {
        for t in runs {
            let run = if t.tag.is_empty() {
                String::new()
            } else {
                format!("run {} ", t.tag)
            };
            for r in t.run.rows.iter().filter(|r| r.get("steady") == "no") {
                let _ = writeln!(
                    h,
                    "<p class=\"warn\">⚠ not steady: {}step {} ({}): {}</p>",
                    escape(&run),
                    escape(r.get("step")),
                    escape(r.get("name")),
                    escape(&variants::unsteady_of(r))
                );
            }
        }
    }

    h.push_str("<h2 id=\"throughput\">Throughput and latency</h2>\n");
    if charts.sweep.iter().any(|c| !c.missing.is_empty()) {
        h.push_str("<p class=\"note\">A red × on the x axis marks a step without a measurement (failed or interrupted); hover it for the error.</p>\n");
    }
    if !charts.x.points.is_empty() {
        let points: Vec<String> = charts
            .x
            .points
            .iter()
            .enumerate()
            .map(|(i, p)| format!("{} = {}", i + 1, escape(p)))
            .collect();
        let _ = writeln!(
            h,
            "<p class=\"note\">No numeric matrix axis varies, so the x axis numbers the matrix points, one line per variant: {}.</p>",
            points.join(", ")
        );
    } else if charts.x.column.is_none() {
        h.push_str(
            "<p class=\"note\">No matrix axis varies, so the x axis is the step number.</p>\n",
        );
    }
    h.push_str("<div class=\"charts\">\n");
    for c in &charts.sweep {
        h.push_str(&c.to_svg(false));
    }
    h.push_str("</div>\n");

    if let ([one], Some(cs)) = (runs, &comparisons) {
        variants::variants(&mut h, one.run, cs);
    }

    h.push_str("<h2 id=\"time-series\">Time series</h2>\n");
    if charts.series.is_empty() {
        h.push_str("<p class=\"note\">No interim reports: intervals.csv is empty (set <code>report_interval</code> in the suite to record them).</p>\n");
    }
    for (title, throughput, latency) in &charts.series {
        let _ = writeln!(h, "<h3>{}</h3>\n<div class=\"charts\">", escape(title));
        for c in [throughput, latency].into_iter().flatten() {
            h.push_str(&c.to_svg(false));
        }
        h.push_str("</div>\n");
    }

    h.push_str("<h2 id=\"results\">Results</h2>\n");
    results_table(&mut h, runs);

    let tables: Vec<(String, transactions::Table)> = runs
        .iter()
        .filter_map(|t| Some((t.tag.clone(), transactions::table(t.run)?)))
        .collect();
    transactions_section(&mut h, &tables);

    h.push_str("<h2 id=\"suite\">Suite</h2>\n");
    for t in runs {
        let name = format!(
            "{}suite.toml of {}",
            if t.tag.is_empty() {
                String::new()
            } else {
                format!("run {}: ", t.tag)
            },
            t.run.name
        );
        match &t.run.suite_text {
            Some(text) => {
                let _ = writeln!(
                    h,
                    "<details open><summary>{}</summary>\n<pre>{}</pre></details>",
                    escape(&name),
                    escape(text)
                );
            }
            None => {
                let _ = writeln!(
                    h,
                    "<p class=\"note\">{}: not found in the run directory.</p>",
                    escape(&name)
                );
            }
        }
    }

    h.push_str("<h2 id=\"server-variables\">Server variables</h2>\n");
    server_variables(&mut h, runs);
    h.push_str("</body>\n</html>\n");
    h
}

/// Rates with 2 decimals, latencies with 2 (3 below 10 ms), counts as integers, costs per
/// transaction as `compare` prints them (4 decimals below 1: 0.0031 fsyncs).
fn cell(row: &Row, column: &str) -> String {
    let Some(v) = row.num(column) else {
        return String::new();
    };
    match column {
        c if c.starts_with("lat_") && v < 10.0 => format!("{v:.3}"),
        "errors" | "events" => format!("{v:.0}"),
        "warmup_s" => crate::results::csv::fmt_float(v, 1),
        c if c.ends_with("_per_txn") => crate::compare::num(v),
        _ => format!("{v:.2}"),
    }
}

fn results_table(h: &mut String, runs: &[Tagged]) {
    let all: Vec<(&str, &Row)> = runs
        .iter()
        .flat_map(|t| t.run.rows.iter().map(move |r| (t.tag.as_str(), r)))
        .collect();
    let any = |col: &str| all.iter().any(|(_, r)| !r.get(col).is_empty());
    let mut axes: Vec<&str> = Vec::new();
    for t in runs {
        for a in t.run.axes() {
            if !axes.contains(&a.as_str()) {
                axes.push(a);
            }
        }
    }
    let two = runs.len() > 1;
    let knee = any("knee");
    let steady = any("steady");
    let warmup = any("warmup_s");
    // #29: what a transaction cost, in the columns the run recorded.
    let costs: Vec<&str> = crate::compare::COST_METRICS
        .iter()
        .map(|m| m.column)
        .filter(|c| any(c))
        .collect();
    let has_tps = any("tps");
    let has_qps = any("qps");
    let has_errors = any("errors");
    // A custom workload's headline, under its own name (`tpmC`).
    let headline = any("headline").then(|| {
        runs.iter()
            .find_map(|t| t.run.headline_name())
            .unwrap_or("headline")
            .to_string()
    });

    h.push_str("<table>\n<tr>");
    let mut head: Vec<String> = Vec::new();
    if two {
        head.push("run".into());
    }
    for c in ["step", "name", "variant", "workload", "threads"] {
        head.push(c.into());
    }
    head.extend(axes.iter().map(|a| a.to_string()));
    head.extend(["rep", "status", "eps (events/s)"].map(String::from));
    if has_tps {
        head.push("tps (transactions/s)".into());
    }
    if has_qps {
        head.push("qps (queries/s)".into());
    }
    head.extend(
        ["avg (ms)", "p95 (ms)", "p99 (ms)"]
            .into_iter()
            .map(String::from),
    );
    if let Some(name) = &headline {
        head.push(name.clone());
    }
    if has_errors {
        head.push("errors".into());
    }
    head.extend(costs.iter().map(|c| c.to_string()));
    if knee {
        head.push("knee".into());
    }
    if warmup {
        head.push("warm-up (s)".into());
    }
    if steady {
        head.push("steady (trend %/min)".into());
    }
    head.push("error".into());
    for c in &head {
        let _ = write!(h, "<th>{}</th>", escape(c));
    }
    h.push_str("</tr>\n");

    for (tag, r) in &all {
        let status = r.get("status");
        let unsteady = r.get("steady") == "no";
        let _ = write!(
            h,
            "<tr class=\"{}{}\">",
            escape(status),
            if unsteady { " unsteady" } else { "" }
        );
        let text = |h: &mut String, v: &str| {
            let _ = write!(h, "<td>{}</td>", escape(v));
        };
        let num = |h: &mut String, v: String| {
            let _ = write!(h, "<td class=\"n\">{}</td>", escape(&v));
        };
        if two {
            text(h, tag);
        }
        for c in ["step", "name", "variant", "workload", "threads"] {
            text(h, r.get(c));
        }
        for a in &axes {
            text(h, r.get(a));
        }
        text(h, r.get("repetition"));
        text(h, status);
        num(h, cell(r, "eps"));
        if has_tps {
            num(h, cell(r, "tps"));
        }
        if has_qps {
            num(h, cell(r, "qps"));
        }
        for c in ["lat_avg", "lat_p95", "lat_p99"] {
            num(h, cell(r, c));
        }
        if headline.is_some() {
            num(h, cell(r, "headline"));
        }
        if has_errors {
            num(h, cell(r, "errors"));
        }
        for c in &costs {
            num(h, cell(r, c));
        }
        if knee {
            text(h, r.get("knee"));
        }
        if warmup {
            num(h, cell(r, "warmup_s"));
        }
        if unsteady {
            let _ = write!(
                h,
                "<td class=\"warn\">⚠ no: {}</td>",
                escape(&variants::unsteady_of(r))
            );
        } else if steady {
            match r.num("trend_pct_per_min") {
                Some(t) => text(h, &format!("{} ({t:+.1})", r.get("steady"))),
                None => text(h, r.get("steady")),
            }
        }
        text(h, r.get("error"));
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    if all.is_empty() {
        h.push_str("<p class=\"note\">results.csv has no rows yet.</p>\n");
    }
}

/// Variables that differ between the captured variants (of both runs) in full, then every
/// variable in a collapsed table.
fn server_variables(h: &mut String, runs: &[Tagged]) {
    let mut columns: Vec<(String, BTreeMap<&str, &str>)> = Vec::new();
    for t in runs {
        for (variant, vars) in &t.run.servers {
            let name = if t.tag.is_empty() {
                variant.clone()
            } else {
                format!("run {} · {variant}", t.tag)
            };
            columns.push((
                name,
                vars.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect(),
            ));
        }
    }
    if columns.is_empty() {
        h.push_str("<p class=\"note\">No server variables were captured (no <code>server/</code> directory: system workloads, SQLite, or an imported log).</p>\n");
        return;
    }
    let mut names: Vec<&str> = columns
        .iter()
        .flat_map(|(_, m)| m.keys().copied())
        .collect();
    names.sort_unstable();
    names.dedup();
    let differs = |n: &str| {
        let first = columns[0].1.get(n);
        columns.iter().any(|(_, m)| m.get(n) != first)
    };
    let differing: Vec<&str> = names.iter().copied().filter(|n| differs(n)).collect();

    let table = |h: &mut String, names: &[&str]| {
        h.push_str("<table>\n<tr><th>variable</th>");
        for (c, _) in &columns {
            let _ = write!(h, "<th>{}</th>", escape(c));
        }
        h.push_str("</tr>\n");
        for n in names {
            let _ = write!(h, "<tr><td>{}</td>", escape(n));
            for (_, m) in &columns {
                match m.get(n) {
                    Some(v) => {
                        let _ = write!(h, "<td>{}</td>", escape(v));
                    }
                    None => h.push_str("<td class=\"note\">(not captured)</td>"),
                }
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table>\n");
    };

    if columns.len() == 1 {
        h.push_str("<p class=\"note\">One variant was captured: nothing to compare.</p>\n");
    } else if differing.is_empty() {
        h.push_str(
            "<p class=\"note\">Every captured variable has the same value in every variant.</p>\n",
        );
    } else {
        let _ = writeln!(
            h,
            "<h3>{} variable{} differ{}</h3>",
            differing.len(),
            if differing.len() == 1 { "" } else { "s" },
            if differing.len() == 1 { "s" } else { "" }
        );
        table(h, &differing);
    }
    let _ = writeln!(
        h,
        "<details><summary>All {} captured variables</summary>",
        names.len()
    );
    table(h, &names);
    h.push_str("</details>\n");
}

/// The HTML section of the page: a table per run that has transactions (nothing otherwise).
pub(super) fn transactions_section(h: &mut String, tables: &[(String, transactions::Table)]) {
    if tables.is_empty() {
        return;
    }
    h.push_str("<h2 id=\"transactions\">Transactions</h2>\n");
    for (tag, t) in tables {
        if tables.len() > 1 || !tag.is_empty() {
            let _ = writeln!(h, "<h3>run {}: {}</h3>", escape(tag), escape(&t.run));
        }
        h.push_str("<table>\n<tr>");
        for (_, head) in transactions::COLUMNS {
            let _ = write!(h, "<th>{}</th>", escape(head));
        }
        h.push_str("</tr>\n");
        for r in &t.rows {
            h.push_str("<tr>");
            for (col, cell) in r {
                let class = if transactions::numeric(col) {
                    " class=\"n\""
                } else {
                    ""
                };
                let _ = write!(h, "<td{class}>{}</td>", escape(cell));
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table>\n");
    }
}
