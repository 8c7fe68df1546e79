//! The per-transaction table of a run of a custom workload (its transactions.csv): one row per
//! run step × transaction (and statement), in every format `sbsuite report` prints — the HTML
//! page's section, and `--format text|markdown|json` on stdout.
//!
//! One list of columns and one list of rows ([`table`]) feed every format, so they never
//! disagree; the cells are transactions.csv's own (already formatted by the writer), never
//! re-rounded here.

use serde::Serialize;

use crate::results::load::Run;

/// The columns shown: the step's identity, then the transaction's measures.
pub const COLUMNS: &[(&str, &str)] = &[
    ("step", "step"),
    ("name", "name"),
    ("variant", "variant"),
    ("repetition", "rep"),
    ("transaction", "transaction"),
    ("kind", "kind"),
    ("count", "count"),
    ("errors", "errors"),
    ("rollbacks", "rollbacks"),
    ("rate", "rate (/s)"),
    ("lat_avg_ms", "avg (ms)"),
    ("lat_p50_ms", "p50 (ms)"),
    ("lat_p95_ms", "p95 (ms)"),
    ("lat_p99_ms", "p99 (ms)"),
    ("lat_max_ms", "max (ms)"),
];

/// Columns whose cells are numbers (right-aligned).
pub fn numeric(column: &str) -> bool {
    !matches!(
        column,
        "name" | "variant" | "transaction" | "kind" | "step" | "repetition"
    )
}

/// The table of one run: (transactions.csv column, cell) per row, in file order.
#[derive(Debug, Serialize)]
pub struct Table {
    /// `<suite>/<run-id>`.
    pub run: String,
    /// The name of the workload's headline (`tpmC`), when it has one: its values are
    /// results.csv's `headline` column.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headline: Option<String>,
    pub rows: Vec<indexmap::IndexMap<&'static str, String>>,
}

/// The table of `run`; `None` when it has no transactions (built-in workloads, old runs).
pub fn table(run: &Run) -> Option<Table> {
    if run.transactions.is_empty() {
        return None;
    }
    let rows = run
        .transactions
        .iter()
        .map(|r| {
            COLUMNS
                .iter()
                .map(|(c, _)| (*c, r.get(c).to_string()))
                .collect()
        })
        .collect();
    Some(Table {
        run: run.name.clone(),
        headline: run.headline_name().map(str::to_string),
        rows,
    })
}

/// The cells of `t` as a grid with its header first.
fn grid(t: &Table) -> Vec<Vec<String>> {
    let mut g = vec![COLUMNS.iter().map(|(_, h)| h.to_string()).collect()];
    g.extend(t.rows.iter().map(|r| r.values().cloned().collect()));
    g
}

/// Aligned plain text: a title line, the header, then a line per row.
pub fn text(t: &Table) -> String {
    let g = grid(t);
    let widths: Vec<usize> = (0..COLUMNS.len())
        .map(|i| g.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = format!("Transactions of {}:\n", t.run);
    for r in &g {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .zip(COLUMNS)
            .map(|((c, w), (col, _))| {
                if numeric(col) {
                    format!("{c:>w$}")
                } else {
                    format!("{c:<w$}")
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// A Markdown table under a `### Transactions of …` heading.
pub fn markdown(t: &Table) -> String {
    let g = grid(t);
    let mut out = format!("### Transactions of {}\n\n", t.run);
    let line = |cells: &[String]| format!("| {} |\n", cells.join(" | ").replace('\n', " "));
    out.push_str(&line(&g[0]));
    let rule: Vec<String> = COLUMNS
        .iter()
        .map(|(c, _)| if numeric(c) { "---:" } else { "---" }.to_string())
        .collect();
    out.push_str(&line(&rule));
    for r in &g[1..] {
        let cells: Vec<String> = r.iter().map(|c| c.replace('|', "\\|")).collect();
        out.push_str(&line(&cells));
    }
    out
}
