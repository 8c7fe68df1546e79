//! JSON: `{"method": …, "comparisons": [Comparison…]}`, the serde shape of
//! [`Comparison`] (numbers unrounded), for scripts. A comparison has a `tools` object
//! (`base`, `other`, `note`) only when its two sides were measured by different tools, so the
//! shape of every other comparison is unchanged.

use super::{Exporter, METHOD};
use crate::compare::Comparison;

pub struct Json;

impl Exporter for Json {
    fn render(&self, cs: &[Comparison]) -> String {
        serde_json::to_string_pretty(&serde_json::json!({
            "method": METHOD,
            "comparisons": cs,
        }))
        .unwrap_or_default()
            + "\n"
    }
}
