//! What changed in the setup between the two sides of a comparison: the machines (the client's
//! `host.json`, the server's build and host from its capture), lines of the resolved
//! `suite.toml` and captured server variables, shown above the numbers (the resolved
//! configuration is stored with every run so that a comparison can say this).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::results::host::{HostFileError, HostRecord};

/// Captured server values that describe the server's build and machine rather than its
/// tuning: shown as a difference of server hosts ([`server_host_diff`]), not among the
/// variables ([`server_diff`]). MySQL/MariaDB's come from `SHOW GLOBAL VARIABLES`,
/// PostgreSQL's from `pg_settings` and `inet_server_addr()`; `version` is every capture's
/// `SELECT VERSION()`.
pub const SERVER_FACTS: &[&str] = &[
    "version",
    "version_comment",
    "version_compile_machine",
    "version_compile_os",
    "hostname",
    "server_version",
    "inet_server_addr",
];

/// A difference of machines between the two sides of a comparison (JSON: `hosts`).
#[derive(Clone, Debug, Serialize)]
pub struct HostDiff {
    /// `client` (`host.json`) or `server` (a variant's capture).
    pub host: &'static str,
    /// The variant whose server captures were compared; left out for the client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// The facts that differ.
    pub fields: Vec<FactDiff>,
    /// A side whose facts are unknown, and why (`base: no host.json`); left out when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<String>,
}

/// One fact that differs: its name and the value on each side.
#[derive(Clone, Debug, Serialize)]
pub struct FactDiff {
    pub fact: String,
    pub base: String,
    pub other: String,
}

impl HostDiff {
    /// The note line every text format prints: `client host differs: cpu 'A' vs 'B', cores 2
    /// vs 8`, or which side is unknown.
    pub fn text(&self) -> String {
        let what = match &self.variant {
            Some(v) => format!("{} host of variant {v}", self.host),
            None => format!("{} host", self.host),
        };
        let mut parts = Vec::new();
        if !self.fields.is_empty() {
            let quote = |v: &str| {
                if v.parse::<f64>().is_ok() || v == "unknown" {
                    v.to_string()
                } else {
                    format!("'{v}'")
                }
            };
            let fields: Vec<String> = self
                .fields
                .iter()
                .map(|f| format!("{} {} vs {}", f.fact, quote(&f.base), quote(&f.other)))
                .collect();
            parts.push(format!("{what} differs: {}", fields.join(", ")));
        }
        if !self.unknown.is_empty() {
            parts.push(format!("{what} unknown for {}", self.unknown.join("; ")));
        }
        parts.join("\n")
    }
}

/// The facts that differ between `a` and `b` (`(fact, value)` lists in one order).
fn fact_diffs(a: &[(&str, String)], b: &[(&str, String)]) -> Vec<FactDiff> {
    a.iter()
        .zip(b)
        .filter(|(x, y)| x.1 != y.1)
        .map(|(x, y)| FactDiff {
            fact: x.0.to_string(),
            base: x.1.clone(),
            other: y.1.clone(),
        })
        .collect()
}

/// The client machines of two runs (`host.json`), labelled `base` and `other`: the facts that
/// differ (the machines that resumed a run count as a fact), or the sides whose machine is
/// unknown, and why. `None` when both are known and equal.
pub fn client_diff(
    (base, a): (&str, &Result<HostRecord, HostFileError>),
    (other, b): (&str, &Result<HostRecord, HostFileError>),
) -> Option<HostDiff> {
    let facts = |r: &HostRecord| {
        let mut f = r.client.fields();
        let resumed: Vec<String> = r
            .resumed_on
            .iter()
            .map(|h| h.hostname.clone().unwrap_or_else(|| "unknown".into()))
            .collect();
        f.push((
            "resumed on",
            if resumed.is_empty() {
                "—".into()
            } else {
                resumed.join(", ")
            },
        ));
        f
    };
    let diff = match (a, b) {
        (Ok(a), Ok(b)) => HostDiff {
            host: "client",
            variant: None,
            fields: fact_diffs(&facts(a), &facts(b)),
            unknown: Vec::new(),
        },
        _ => HostDiff {
            host: "client",
            variant: None,
            fields: Vec::new(),
            unknown: [(base, a), (other, b)]
                .into_iter()
                .filter_map(|(label, r)| r.as_ref().err().map(|e| format!("{label} ({e})")))
                .collect(),
        },
    };
    (!diff.fields.is_empty() || !diff.unknown.is_empty()).then_some(diff)
}

/// The server facts ([`SERVER_FACTS`]) that differ between the captures of `variant` on two
/// sides; `None` when none does. A fact one capture lacks is `unknown` there.
pub fn server_host_diff(
    variant: &str,
    a: &BTreeMap<String, String>,
    b: &BTreeMap<String, String>,
) -> Option<HostDiff> {
    let facts = |m: &BTreeMap<String, String>| -> Vec<(&str, String)> {
        SERVER_FACTS
            .iter()
            .filter(|f| a.contains_key(**f) || b.contains_key(**f))
            .map(|f| (*f, m.get(*f).cloned().unwrap_or_else(|| "unknown".into())))
            .collect()
    };
    let fields = fact_diffs(&facts(a), &facts(b));
    (!fields.is_empty()).then(|| HostDiff {
        host: "server",
        variant: Some(variant.to_string()),
        fields,
        unknown: Vec::new(),
    })
}

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

/// Server variables that differ between two captures, as note lines `  name: a → b`; the
/// build and host facts ([`SERVER_FACTS`]) are [`server_host_diff`]'s, the parameters
/// ([`crate::results::load::PARAMETER`]) [`parameter_diff`]'s.
pub fn server_diff(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<String> {
    settings_diff(a, b, |n| {
        (!SERVER_FACTS.contains(&n) && !n.starts_with(crate::results::load::PARAMETER)).then_some(n)
    })
}

/// Server parameters (`parameter:<name>` in a capture: OceanBase's `SHOW PARAMETERS`, a
/// variant's `sql` settings) that differ between two captures, as note lines
/// `  name: a → b` without the prefix.
pub fn parameter_diff(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<String> {
    settings_diff(a, b, |n| n.strip_prefix(crate::results::load::PARAMETER))
}

/// The captured values that differ between `a` and `b`, among the names `shown` gives a
/// label to.
fn settings_diff<'n>(
    a: &'n BTreeMap<String, String>,
    b: &'n BTreeMap<String, String>,
    shown: impl Fn(&'n str) -> Option<&'n str>,
) -> Vec<String> {
    let names: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    names
        .into_iter()
        .filter_map(|n| {
            let label = shown(n.as_str())?;
            let (x, y) = (a.get(n), b.get(n));
            (x != y).then(|| {
                format!(
                    "  {label}: {} → {}",
                    x.map_or("—", String::as_str),
                    y.map_or("—", String::as_str)
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn server_facts_are_a_host_difference_not_a_variable_one() {
        let a = capture(&[
            ("version", "10.11.19-MariaDB"),
            ("hostname", "db-1"),
            ("sync_binlog", "0"),
        ]);
        let b = capture(&[
            ("version", "11.4.2-MariaDB"),
            ("hostname", "db-1"),
            ("sync_binlog", "1"),
            ("inet_server_addr", "10.0.0.2"),
        ]);
        let h = server_host_diff("default", &a, &b).unwrap();
        assert_eq!(
            h.text(),
            "server host of variant default differs: version '10.11.19-MariaDB' vs '11.4.2-MariaDB', inet_server_addr unknown vs '10.0.0.2'"
        );
        assert_eq!(server_diff(&a, &b), ["  sync_binlog: 0 → 1"]);
        assert!(server_host_diff("default", &a, &a).is_none());
    }

    #[test]
    fn parameters_differ_apart_from_variables() {
        let a = capture(&[
            ("version", "5.7.25-OceanBase seekdb-v1.4.0.0"),
            ("ob_query_timeout", "10000000"),
            ("parameter:freeze_trigger_percentage", "20"),
            ("parameter:open_cursors", "50"),
        ]);
        let b = capture(&[
            ("version", "5.7.25-OceanBase seekdb-v1.4.0.0"),
            ("ob_query_timeout", "36000000000"),
            ("parameter:freeze_trigger_percentage", "40"),
            ("parameter:open_cursors", "50"),
            ("parameter:syslog_level", "ERROR"),
        ]);
        assert_eq!(
            server_diff(&a, &b),
            ["  ob_query_timeout: 10000000 → 36000000000"]
        );
        assert_eq!(
            parameter_diff(&a, &b),
            [
                "  freeze_trigger_percentage: 20 → 40",
                "  syslog_level: — → ERROR"
            ]
        );
        assert!(parameter_diff(&a, &a).is_empty());
    }

    #[test]
    fn an_unknown_client_is_said_with_the_reason() {
        let none: Result<HostRecord, HostFileError> = Err(HostFileError::Missing);
        let h = client_diff(("a", &none), ("b", &none)).unwrap();
        assert_eq!(
            h.text(),
            "client host unknown for a (no host.json); b (no host.json)"
        );
    }
}
