//! Markdown: the terminal table's text with a `##` heading per comparison and a pipe table,
//! for pull requests and CI summaries.

use super::{Exporter, HEAD, text_report};
use crate::compare::Comparison;

pub struct Markdown;

impl Exporter for Markdown {
    fn render(&self, cs: &[Comparison]) -> String {
        text_report(
            cs,
            |c| format!("## {} → {}\n\n", c.base, c.other),
            |rows| {
                let mut out = format!("| {} |\n", HEAD.join(" | "));
                out.push_str(&format!("|{}\n", "---|".repeat(HEAD.len())));
                for r in rows {
                    out.push_str(&format!("| {} |\n", r.join(" | ")));
                }
                out
            },
        )
    }
}
