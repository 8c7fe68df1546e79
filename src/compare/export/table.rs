//! The terminal table: aligned columns, failed gates and worse lines in red and better ones in
//! green when `color` is on (only when stdout is a terminal; never in a pipe or a file).

use super::{Exporter, HEAD, VERDICT, text_report};
use crate::compare::Comparison;

pub struct Table {
    pub color: bool,
}

impl Exporter for Table {
    fn render(&self, cs: &[Comparison]) -> String {
        text_report(
            cs,
            |c| format!("{} → {}\n", c.base, c.other),
            |rows| self.grid(rows),
        )
    }
}

impl Table {
    fn grid(&self, rows: &[[String; 7]]) -> String {
        let widths: Vec<usize> = (0..HEAD.len())
            .map(|i| {
                rows.iter()
                    .map(|r| r[i].chars().count())
                    .chain([HEAD[i].len()])
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
        let mut out = line(&HEAD.map(String::from));
        out.push('\n');
        for r in rows {
            let mut text = line(r);
            if self.color {
                let verdict = &r[VERDICT];
                let code = if verdict.contains("FAIL") || verdict.starts_with("worse") {
                    "31"
                } else if verdict.starts_with("better") {
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
        out
    }
}
