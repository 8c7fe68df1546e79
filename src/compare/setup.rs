//! What changed in the setup between the two sides of a comparison: lines of the resolved
//! `suite.toml` and captured server variables, shown above the numbers (the resolved
//! configuration is stored with every run so that a comparison can say this).

use std::collections::{BTreeMap, BTreeSet};

/// Lines of `a` missing in `b` and the reverse (order kept), for the suite difference.
pub fn line_diff(a: &str, b: &str) -> Vec<String> {
    let bl: BTreeSet<&str> = b.lines().collect();
    let al: BTreeSet<&str> = a.lines().collect();
    let mut out: Vec<String> = a
        .lines()
        .filter(|l| !bl.contains(l) && !l.trim().is_empty())
        .map(|l| format!("- {l}"))
        .collect();
    out.extend(
        b.lines()
            .filter(|l| !al.contains(l) && !l.trim().is_empty())
            .map(|l| format!("+ {l}")),
    );
    out
}

/// Server variables that differ between two captures (`version` included), as note lines
/// `  name: a → b`.
pub fn server_diff(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<String> {
    let names: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    names
        .into_iter()
        .filter_map(|n| {
            let (x, y) = (a.get(n), b.get(n));
            (x != y).then(|| {
                format!(
                    "  {n}: {} → {}",
                    x.map_or("—", String::as_str),
                    y.map_or("—", String::as_str)
                )
            })
        })
        .collect()
}
