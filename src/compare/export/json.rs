//! JSON: `{"method": …, "comparisons": [Comparison…]}`, the serde shape of
//! [`Comparison`] (numbers unrounded), for scripts.

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
