//! Two captured server configurations as the two sides of a bisection: `server/<variant>.csv`
//! of two runs (say, the server where tps fell and the one where it did not) become a baseline
//! and another variant that set, at runtime, every variable whose values differ.
//!
//! Only what the target's server can set at runtime is bisected: facts (version, paths, host
//! names) and variables that are read-only or need a restart are listed with the reason, not
//! silently dropped. A variable only one capture has (another server version) cannot be set on
//! both sides and is listed too. Captured `parameter:` rows (OceanBase's `SHOW PARAMETERS`)
//! are applied by a variant's `sql`, which a capture does not carry: also listed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;

use crate::db::Target;
use crate::results::load::PARAMETER;
use crate::suite::raw::RawVariant;
use crate::value::Value;

/// Why two captures cannot be bisected.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error(
        "cannot read the capture {}: {source}; give a run's server/<variant>.csv",
        .path.display()
    )]
    Read {
        path: PathBuf,
        #[source]
        source: ::csv::Error,
    },
    #[error("bisecting captures needs a MySQL/MariaDB or PostgreSQL [target] to set them on")]
    NoServer,
    #[error("checking the captured variables against the server: {0}")]
    Check(#[from] crate::runner::server::CheckError),
    #[error(
        "the captures {} and {} differ in no variable this server can set at runtime{}",
        .a.display(),
        .b.display(),
        if .skipped.is_empty() { String::new() } else { format!(" (left out: {})", .skipped.join(", ")) }
    )]
    Nothing {
        a: PathBuf,
        b: PathBuf,
        skipped: Vec<String>,
    },
}

/// The baseline and the other side built from captures `a` and `b`, and the names left out
/// with why.
pub struct Sides {
    pub base: RawVariant,
    pub other: RawVariant,
    pub skipped: Vec<(String, String)>,
}

/// Reads captures `a` and `b` and checks their differing variables against the server of
/// `target`.
pub fn sides(target: &Target, a: &Path, b: &Path) -> Result<Sides, CaptureError> {
    let read = |p: &Path| {
        crate::results::load::capture(p).map_err(|source| CaptureError::Read {
            path: p.to_path_buf(),
            source,
        })
    };
    let (ca, cb) = (read(a)?, read(b)?);
    let (candidates, mut skipped) = differing(&ca, &cb);
    let why = crate::runner::server::settable(target, &candidates)?;
    let mut base = IndexMap::new();
    let mut other = IndexMap::new();
    for (name, why) in candidates.into_iter().zip(why) {
        match why {
            Some(why) => skipped.push((name, why)),
            None => {
                base.insert(name.clone(), typed(&ca[&name]));
                other.insert(name.clone(), typed(&cb[&name]));
            }
        }
    }
    skipped.sort();
    if base.is_empty() {
        return Err(CaptureError::Nothing {
            a: a.to_path_buf(),
            b: b.to_path_buf(),
            skipped: skipped.into_iter().map(|(n, _)| n).collect(),
        });
    }
    let (na, nb) = names(a, b);
    let variant = |name: String, path: &Path, set_global| RawVariant {
        name,
        description: Some(format!("captured in {}", path.display())),
        set_global,
        restart: None,
        settings: IndexMap::new(),
        sql: None,
        prepare: None,
        run: None,
    };
    Ok(Sides {
        base: variant(na, a, base),
        other: variant(nb, b, other),
        skipped,
    })
}

/// The variables whose captured values differ, and the differing names that are not
/// variables of both.
fn differing(
    a: &BTreeMap<String, String>,
    b: &BTreeMap<String, String>,
) -> (Vec<String>, Vec<(String, String)>) {
    let mut candidates = Vec::new();
    let mut skipped = Vec::new();
    let names: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for name in names {
        let (x, y) = (a.get(name), b.get(name));
        if x == y {
            continue;
        }
        if crate::compare::setup::SERVER_FACTS.contains(&name.as_str()) {
            skipped.push((name.clone(), "a fact of the server, not a setting".into()));
        } else if name.starts_with(PARAMETER) {
            skipped.push((
                name.clone(),
                "a parameter, set by a variant's `sql`: write the two variants by hand".into(),
            ));
        } else if x.is_none() || y.is_none() {
            skipped.push((name.clone(), "captured on one side only".into()));
        } else {
            candidates.push(name.clone());
        }
    }
    (candidates, skipped)
}

/// A captured value as a suite would write it: numbers as numbers (MySQL refuses a string for
/// a numeric variable), the rest as strings.
fn typed(text: &str) -> Value {
    if let Ok(i) = text.parse::<i64>() {
        return Value::Int(i);
    }
    match text.parse::<f64>() {
        Ok(f) if f.is_finite() && !text.contains(['e', 'E', 'n', 'N', 'i', 'I']) => Value::Float(f),
        _ => Value::Str(text.to_string()),
    }
}

/// The two sides' names: the captures' file stems (their variants), `…-a`/`…-b` when equal.
fn names(a: &Path, b: &Path) -> (String, String) {
    let stem = |p: &Path| {
        p.file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("capture")
            .to_string()
    };
    let (x, y) = (stem(a), stem(b));
    if x == y {
        (format!("{x}-a"), format!("{y}-b"))
    } else {
        (x, y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn differing_variables_facts_parameters_and_one_sided_names() {
        let a = map(&[
            ("version", "10.11.19-MariaDB"),
            ("sync_binlog", "0"),
            ("max_connections", "151"),
            ("parameter:enable_sql_audit", "True"),
            ("innodb_flush_log_at_trx_commit", "1"),
            ("only_here", "1"),
        ]);
        let b = map(&[
            ("version", "10.11.20-MariaDB"),
            ("sync_binlog", "10"),
            ("max_connections", "151"),
            ("parameter:enable_sql_audit", "False"),
            ("innodb_flush_log_at_trx_commit", "2"),
        ]);
        let (candidates, skipped) = differing(&a, &b);
        assert_eq!(
            candidates,
            ["innodb_flush_log_at_trx_commit", "sync_binlog"]
        );
        let skipped: Vec<&str> = skipped.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            skipped,
            ["only_here", "parameter:enable_sql_audit", "version"]
        );
    }

    #[test]
    fn captured_values_keep_their_type() {
        assert_eq!(typed("2"), Value::Int(2));
        assert_eq!(typed("10.000000"), Value::Float(10.0));
        assert_eq!(typed("ON"), Value::Str("ON".into()));
        assert_eq!(typed("inf"), Value::Str("inf".into()));
        assert_eq!(typed("1e3"), Value::Str("1e3".into()));
        assert_eq!(typed(""), Value::Str(String::new()));
        assert_eq!(
            names(
                Path::new("a/server/default.csv"),
                Path::new("b/server/default.csv")
            ),
            ("default-a".to_string(), "default-b".to_string())
        );
    }
}
