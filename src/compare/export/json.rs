//! JSON: `{"method": …, "power": {…}, "comparisons": [Comparison…]}`, the serde shape of
//! [`Comparison`] (numbers unrounded), for scripts. A comparison has a `tools` object
//! (`base`, `other`, `note`) only when its two sides were measured by different tools, so the
//! shape of every other comparison is unchanged. `power` states the assumptions of every
//! line's `reps_needed` (left out of a line whose difference was significant or whose noise
//! was not measured).

use super::{Exporter, METHOD, POWER_NOTE};
use crate::compare::Comparison;
use crate::compare::stats::{ALPHA, POWER};

pub struct Json;

impl Exporter for Json {
    fn render(&self, cs: &[Comparison]) -> String {
        serde_json::to_string_pretty(&serde_json::json!({
            "method": METHOD,
            "power": {
                "alpha": ALPHA,
                "power": POWER,
                "changes_pct": [5, 10],
                "assumptions": POWER_NOTE,
            },
            "comparisons": cs,
        }))
        .unwrap_or_default()
            + "\n"
    }
}
