//! Regression gates for CI (`--fail-on tps:-5%,p95:+10%`): parsing, and deciding whether a
//! compared line crosses one.
//!
//! A gate fails only on a difference that counts: significant at [`ALPHA`] when there is a
//! test (for positive metrics Welch's test on the ln values, so significant exactly when the
//! delta's ratio interval excludes 0 %; the crossing itself is judged on the delta of the
//! medians, as before), or the raw delta when each side has a single sample (no test is possible then; the
//! failure text says which), so noise never fails a build. A gate that cannot be evaluated at
//! all (a metric cell that is not a number, or no values to compare) is refused by
//! [`super::compare`] before any line is checked here, so it never reads as a pass.
//!
//! A gate's metric is any name `--metric` takes: the fixed ones, `headline` or the headline's
//! own name, `TXN.METRIC`. Which of these the runs have is only known once they are read, so
//! a name is checked here for its shape only and resolved by [`super::resolve_metrics`].

use super::error::GateError;
use super::stats::ALPHA;
use super::{Comparison, METRICS, intern, key_text};

/// A regression gate: `tps:-5%` fails on a drop of 5 % or more, `p95:+10%` on a rise of 10 %.
#[derive(Clone, Debug, PartialEq)]
pub struct Gate {
    pub metric: &'static str,
    pub percent: f64,
}

impl std::fmt::Display for Gate {
    /// As written on the command line: `tps:-5%`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{:+}%", self.metric, self.percent)
    }
}

/// Parses `--fail-on` (`tps:-5%,p95:+10%`).
pub fn parse_gates(text: &str) -> Result<Vec<Gate>, GateError> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || GateError::Bad {
            part: part.to_string(),
        };
        let (name, pct) = part.split_once(':').ok_or_else(bad)?;
        let name = name.trim();
        let plausible = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-'));
        if !plausible {
            return Err(bad());
        }
        let metric = METRICS
            .iter()
            .chain(super::COST_METRICS)
            .map(|m| m.name)
            .find(|m| *m == name)
            .unwrap_or_else(|| intern(name));
        let pct = pct.trim().trim_end_matches('%');
        if !pct.starts_with('+') && !pct.starts_with('-') {
            return Err(bad());
        }
        let percent: f64 = pct.parse().map_err(|_| bad())?;
        out.push(Gate { metric, percent });
    }
    if out.is_empty() {
        return Err(GateError::Empty);
    }
    Ok(out)
}

/// The failure text of the last of `gates` on `metric` that a line with `delta` (in %; ±∞ for a
/// change from a zero baseline) and `p` crosses, if any.
pub(super) fn check(
    gates: &[Gate],
    metric: &str,
    delta: Option<f64>,
    p: Option<f64>,
) -> Option<String> {
    let mut failed = None;
    for g in gates.iter().filter(|g| g.metric == metric) {
        let Some(d) = delta else { continue };
        let crossed = if g.percent < 0.0 {
            d <= g.percent
        } else {
            d >= g.percent
        };
        let counts = match p {
            Some(p) => p < ALPHA,
            None => true, // one sample a side: the raw delta decides (said in the output)
        };
        if crossed && counts {
            let by = if d.is_finite() {
                format!("{d:+.1}%")
            } else {
                "from 0".to_string()
            };
            failed = Some(format!(
                "{g} crossed ({by}{})",
                if p.is_none() {
                    ", raw delta of single samples"
                } else {
                    ", significant"
                }
            ));
        }
    }
    failed
}

/// Every failed gate of `cs`, one line each: `base → other: key gate-text`.
pub fn failures(cs: &[Comparison]) -> Vec<String> {
    cs.iter()
        .flat_map(|c| {
            c.lines.iter().filter_map(move |l| {
                l.gate_failed
                    .as_ref()
                    .map(|g| format!("{} → {}: {} {}", c.base, c.other, key_text(&l.key), g))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_parse_or_say_how() {
        assert_eq!(
            parse_gates("tps:-5%, p95:+10%").unwrap(),
            vec![
                Gate {
                    metric: "tps",
                    percent: -5.0
                },
                Gate {
                    metric: "p95",
                    percent: 10.0
                }
            ]
        );
        assert!(
            parse_gates("tps:5%")
                .unwrap_err()
                .to_string()
                .contains("METRIC:±N%")
        );
        assert!(
            parse_gates("sp eed:-5%")
                .unwrap_err()
                .to_string()
                .contains("metrics: tps")
        );
        // A name of the runs' own (a headline, a transaction): resolved once they are read.
        assert_eq!(
            parse_gates("new_order.p95:+10%").unwrap()[0].metric,
            "new_order.p95"
        );
    }
}
