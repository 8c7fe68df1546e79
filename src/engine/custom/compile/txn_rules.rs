//! A transaction's own error and rollback rules (#31) — `retry = "redraw" | "same"`,
//! `ignore_errors = [1213, "40001", "deadlock"]` (added to the target's list),
//! `rollback_when = "expr"` — and a statement's own `ps_mode = "auto" | "disable"`.

use std::collections::HashSet;

use super::DRIVERS;
use super::compiler::{Compiler, Scope, TXN_ALLOWED, key};
use crate::db::{Driver, PsMode};
use crate::engine::custom::model::{Retry, Slot, TxnRules};
use crate::source::Seg;

/// Portable names of the errors a transaction may ignore, and the codes each stands for on
/// MySQL/MariaDB, PostgreSQL and SQLite.
pub const ERROR_NAMES: &[(&str, &[&str])] = &[
    ("deadlock", &["1213", "40P01"]),
    ("serialization", &["40001"]),
    ("lock_timeout", &["1205", "55P03", "SQLITE_BUSY"]),
    ("busy", &["SQLITE_BUSY", "SQLITE_LOCKED"]),
    ("duplicate_key", &["1062", "23505", "SQLITE_CONSTRAINT"]),
];

impl Compiler<'_> {
    /// The rules of transaction `t` (at `path`); `set`: what its steps set (for
    /// `rollback_when`).
    pub(super) fn txn_rules(
        &mut self,
        path: &[Seg],
        t: &toml::Table,
        set: &HashSet<Slot>,
        autocommit: bool,
    ) -> TxnRules {
        let mut rules = TxnRules::default();
        if let Some(v) = t.get("retry") {
            match v.as_str() {
                Some("redraw") => rules.retry = Retry::Redraw,
                Some("same") => rules.retry = Retry::Same,
                _ => self.err(
                    &key(path, "retry"),
                    false,
                    format!("`retry` is \"redraw\" or \"same\", found {v}"),
                    "retry = \"same\" re-runs a transaction after an ignored error with the values of its first try; \"redraw\" (the default) draws new ones",
                ),
            }
        }
        if let Some(v) = t.get("ignore_errors") {
            rules.ignore_errors = self.error_codes(&key(path, "ignore_errors"), v);
        }
        if let Some(v) = t.get("rollback_when") {
            let at = key(path, "rollback_when");
            if autocommit {
                self.err(
                    &at,
                    false,
                    "`rollback_when` needs a transaction, and this one is `autocommit = true`",
                    "drop `autocommit = true`, or `rollback_when`",
                );
            } else if let Some(text) = self.string(&at, v, "rollback_when = \"balance < 0\"") {
                let scope = Scope {
                    set,
                    place: "`rollback_when`",
                    allowed: TXN_ALLOWED,
                };
                rules.rollback_when = self.expr(&at, text, &scope);
            }
        }
        rules
    }

    /// `ignore_errors` of a transaction: codes of any of the databases, a name of
    /// [`ERROR_NAMES`] (expanded), or "all".
    fn error_codes(&mut self, path: &[Seg], v: &toml::Value) -> Vec<String> {
        let items: Vec<&toml::Value> = match v {
            toml::Value::Array(a) => a.iter().collect(),
            other => vec![other],
        };
        let names = || {
            ERROR_NAMES
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut out = Vec::new();
        for item in items {
            let code = match item {
                toml::Value::Integer(i) if *i >= 0 => i.to_string(),
                toml::Value::String(s) => s.trim().to_string(),
                other => {
                    self.err(
                        path,
                        false,
                        format!("`ignore_errors` takes error codes (numbers or strings), found {other}"),
                        format!("e.g. ignore_errors = [1213, \"40001\", \"SQLITE_BUSY\"], or the names {}", names()),
                    );
                    continue;
                }
            };
            if let Some((_, codes)) = ERROR_NAMES
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(&code))
            {
                out.extend(codes.iter().map(|c| c.to_string()));
            } else if code.eq_ignore_ascii_case("all") {
                out.push("all".to_string());
            } else if DRIVERS
                .iter()
                .filter_map(|d| d.parse::<Driver>().ok())
                .any(|d| d.dialect().is_error_code(&code))
            {
                out.push(code);
            } else {
                self.err(
                    path,
                    false,
                    format!("`{code}` is not an error code"),
                    format!(
                        "use MySQL numbers such as 1213, PostgreSQL SQLSTATEs such as \"40001\", SQLite names such as \"SQLITE_BUSY\", \"all\", or one of the names {}",
                        names()
                    ),
                );
            }
        }
        out
    }

    /// A statement step's `ps_mode` (at `spath`).
    pub(super) fn stmt_ps_mode(&mut self, spath: &[Seg], s: &toml::Table) -> Option<PsMode> {
        let v = s.get("ps_mode")?;
        match v.as_str() {
            Some("auto") => Some(PsMode::Auto),
            Some("disable") => Some(PsMode::Disable),
            _ => {
                self.err(
                    &key(spath, "ps_mode"),
                    false,
                    format!("`ps_mode` is \"auto\" (prepared) or \"disable\" (text), found {v}"),
                    "ps_mode = \"disable\" sends this statement as text with its values written in; \"auto\" prepares it even when [target] ps_mode = \"disable\"",
                );
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::tests::{ORDERS, def_of, error_at};
    use crate::db::PsMode;
    use crate::engine::Catalog;
    use crate::engine::custom::model::{Dist, GenSpec, Retry};
    use crate::source::ConfigErrors;

    fn load(text: &str) -> Result<Catalog, ConfigErrors> {
        let table: toml::Table = toml::from_str(text).unwrap_or_else(|e| panic!("{e}"));
        Ok(super::super::load(Path::new("t.toml"), text, &table)?.catalog())
    }

    /// ORDERS with `lookup`'s table replaced by `lookup` (its keys) and `extra` appended.
    fn with(lookup: &str, extra: &str) -> String {
        let mut text = ORDERS.replace(
            "steps = [{ sql = \"SELECT count(*) FROM lines WHERE a = :cust\" }]",
            lookup,
        );
        text.push_str(extra);
        text
    }

    const GOOD: &str = r#"retry = "same"
ignore_errors = [1062, "deadlock", "SQLITE_BUSY"]
rollback_when = "n > 3"
think = { exponential = 100 }
let = { hot = { zipfian = [1, 100], exponent = 1.2 }, ycsb = { zipfian = [1, "customers"], scrambled = true }, wait = { exponential = "customers", cap = 4, scale = 0 } }
steps = [{ sql = "SELECT count(*) AS n FROM lines WHERE a = :cust", capture = ["n"], ps_mode = "disable" }]"#;

    #[test]
    fn rules_distributions_and_option_placeholders_compile() {
        let text = with(
            GOOD,
            "\n[[workloads.orders.checks]]\nname = \"enough\"\nsql = \"SELECT count(*) FROM customers WHERE c_id <= :customers\"\nexpect = \"customers\"\n",
        );
        let catalog = load(&text).unwrap_or_else(|e| panic!("{e}"));
        let def = def_of(&catalog, "orders");
        let t = def
            .transactions
            .iter()
            .find(|t| t.name == "lookup")
            .unwrap();
        assert_eq!(t.rules.retry, Retry::Same);
        assert_eq!(
            t.rules.ignore_errors,
            ["1062", "1213", "40P01", "SQLITE_BUSY"]
        );
        assert!(t.rules.rollback_when.is_some());
        assert!(matches!(t.think, Some(GenSpec::Exponential { cap, scale: 3, .. }) if cap == 10.0));
        let st = def.statements.iter().find(|s| s.txn == 1).unwrap();
        assert_eq!(st.ps_mode, Some(PsMode::Disable));
        let lets: Vec<&GenSpec> = t
            .body
            .iter()
            .filter_map(|op| match op {
                crate::engine::custom::model::Op::Let { value, .. } => Some(value),
                _ => None,
            })
            .collect();
        assert!(lets.iter().any(|g| matches!(g, GenSpec::Tuned { dist: Dist::Zipfian, params, .. } if params.exponent == Some(1.2) && !params.scrambled)));
        assert!(
            lets.iter()
                .any(|g| matches!(g, GenSpec::Tuned { params, .. } if params.scrambled))
        );
        assert!(
            lets.iter()
                .any(|g| matches!(g, GenSpec::Exponential { cap, scale: 0, .. } if *cap == 4.0))
        );
        let c = def.checks.iter().find(|c| c.name == "enough").unwrap();
        let b = c
            .bound
            .as_ref()
            .expect("bound")
            .for_driver(crate::db::Driver::Mysql)
            .unwrap();
        assert_eq!(b.text, "SELECT count(*) FROM customers WHERE c_id <= ?");
        assert_eq!(b.binds, [def.vars.slot("customers").unwrap()]);
        // Other workloads' transactions keep the defaults.
        let n = def
            .transactions
            .iter()
            .find(|t| t.name == "new_order")
            .unwrap();
        assert_eq!(n.rules.retry, Retry::Redraw);
        assert!(n.rules.ignore_errors.is_empty());
    }

    #[test]
    fn misuse_is_refused_at_its_key_with_the_fix() {
        let cases: &[(&str, &str, &str, &str)] = &[
            (
                "retry = \"same\"",
                "retry = \"again\"",
                "retry",
                "`retry` is \"redraw\" or \"same\"",
            ),
            (
                "ignore_errors = [1062, \"deadlock\", \"SQLITE_BUSY\"]",
                "ignore_errors = [\"oops!\"]",
                "ignore_errors",
                "`oops!` is not an error code",
            ),
            (
                "rollback_when = \"n > 3\"",
                "rollback_when = \"nothing > 3\"",
                "rollback_when",
                "not defined here",
            ),
            (
                "ps_mode = \"disable\"",
                "ps_mode = \"sometimes\"",
                "ps_mode",
                "`ps_mode` is \"auto\"",
            ),
            (
                "exponent = 1.2",
                "exponent = -1",
                "exponent",
                "a number ≥ 0",
            ),
            (
                "{ zipfian = [1, 100], exponent = 1.2 }",
                "{ uniform = [1, 100], exponent = 1.2 }",
                "exponent",
                "belongs to the `zipfian` generator",
            ),
            (
                "scrambled = true",
                "scrambled = 3",
                "scrambled",
                "true or false",
            ),
            (
                "think = { exponential = 100 }",
                "think = { exponential = -100 }",
                "exponential",
                "use a number ≥ 0",
            ),
            ("cap = 4", "cap = 0", "cap", "a number > 0"),
            (
                "{ zipfian = [1, 100], exponent = 1.2 }",
                "{ pareto = [1, 100], h = 1 }",
                "h",
                "between 0 and 1",
            ),
            (
                "{ zipfian = [1, 100], exponent = 1.2 }",
                "{ special = [1, 100], pct = 101 }",
                "pct",
                "from 0 to 100",
            ),
            (
                "{ zipfian = [1, 100], exponent = 1.2 }",
                "{ gaussian = [1, 100], iter = 0 }",
                "iter",
                "from 1 to",
            ),
        ];
        for (good, bad, key, message) in cases {
            let text = with(&GOOD.replace(good, bad), "");
            let errors = load(&text).expect_err(bad);
            let line = GOOD.replace(good, bad);
            let line = line.lines().find(|l| l.contains(bad)).unwrap();
            error_at(&errors, &text, line, key, message);
        }
        // `rollback_when` needs a transaction.
        let text = with(&format!("autocommit = true\n{GOOD}"), "");
        let errors = load(&text).expect_err("autocommit");
        error_at(
            &errors,
            &text,
            "rollback_when",
            "rollback_when",
            "autocommit = true",
        );
        // A check binds options only.
        let text = with(
            GOOD,
            "\n[[workloads.orders.checks]]\nsql = \"SELECT count(*) FROM lines WHERE a = :qty\"\nexpect = 0\n",
        );
        let errors = load(&text).expect_err("a param in a check");
        error_at(&errors, &text, ":qty", "sql", "`qty`");
    }
}
