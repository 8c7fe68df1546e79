//! The SQL of a variant's `settings` + `sql` (#14): statements the suite writes as minijinja
//! templates, for servers whose settings are not MySQL variables or PostgreSQL parameters
//! (OceanBase `ALTER SYSTEM SET` / `SHOW PARAMETERS`, TiDB `SET CONFIG`, CockroachDB
//! `SET CLUSTER SETTING`).
//!
//! Why it is shaped this way:
//! - **Values reach the SQL only as literals.** `{{ value }}` is rendered by [`literal`]:
//!   numbers and booleans bare, everything else a string literal escaped by the target's
//!   [`ServerAdmin::string_literal`], so a suite value (which may come from `--set` or the
//!   environment) cannot end the statement. Names are checked by [`check_name`] (letters,
//!   digits, `_`, `.`), so `{{ name }}` is safe bare and inside quotes.
//! - **Templates are compiled and rendered with every setting when the suite loads**
//!   ([`check_templates`]): a syntax error or an unknown variable is a configuration error
//!   naming the key, before anything runs; `plan` shows the same rendering ([`describe`]).
//! - The bookkeeping (restore files, order, undo on errors) is the runner's
//!   (`crate::runner::server`), as for `set_global`.

use indexmap::IndexMap;

use crate::db::conn::Table;
use crate::db::dialect::{AdminError, ServerAdmin, quote, value_text};
use crate::value::Value;

/// The templates of a variant's `sql` (the fields of the suite's `sql = { … }`).
#[derive(Clone, Copy, Debug)]
pub struct Templates<'a> {
    pub apply: &'a str,
    pub read: &'a str,
    /// Default: `apply` with the original value.
    pub restore: Option<&'a str>,
    pub after: Option<&'a str>,
}

/// `name` is a plain setting name (letters, digits, `_`, `.`): it goes into SQL text.
pub fn check_name(name: &str) -> Result<(), AdminError> {
    if !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    {
        Ok(())
    } else {
        Err(AdminError::BadName(name.to_string()))
    }
}

/// How string literals are written: the target's dialect, or plain SQL quoting when the
/// target is not known yet (checks at load time).
pub type StringLiteral<'a> = &'a dyn Fn(&str) -> String;

/// The string literal of the dialect of `admin`, or standard quoting without one.
pub fn string_literal(admin: Option<&'static dyn ServerAdmin>) -> impl Fn(&str) -> String {
    move |text: &str| match admin {
        Some(a) => a.string_literal(text),
        None => quote(text),
    }
}

/// `v` as a SQL literal: integers, finite floats and booleans bare, anything else (strings,
/// lists joined with `,`) a string literal.
pub fn literal(v: &Value, string: StringLiteral) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::Float(f) if f.is_finite() => f.to_string(),
        Value::Bool(b) => b.to_string(),
        other => string(&value_text(other)),
    }
}

/// An original value read from the server as a SQL literal: `NULL` for NULL, a plain number
/// bare, anything else a string literal.
pub fn original_literal(original: Option<&str>, string: StringLiteral) -> String {
    match original {
        None => "NULL".into(),
        Some(s)
            if !s.is_empty()
                && s.chars().all(|c| c.is_ascii_digit() || "+-.eE".contains(c))
                && s.parse::<f64>().is_ok_and(f64::is_finite) =>
        {
            s.to_string()
        }
        Some(s) => string(s),
    }
}

/// Which template of `sql` (the key under `sql`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    Apply,
    Read,
    Restore,
    After,
}

impl Which {
    /// The key of the template in `sql = { … }`.
    pub fn key(self) -> &'static str {
        match self {
            Which::Apply => "apply",
            Which::Read => "read",
            Which::Restore => "restore",
            Which::After => "after",
        }
    }
}

/// Renders one template of `sql` for setting `name`; `value` is the literal for `apply` and
/// `restore`. Undefined variables are errors (a misspelt `{{ nmae }}` must not become empty).
pub fn render(
    sql: Templates,
    which: Which,
    variant: &str,
    name: &str,
    value: Option<&str>,
) -> Result<String, AdminError> {
    let source = match which {
        Which::Apply => sql.apply,
        Which::Read => sql.read,
        Which::Restore => sql.restore.unwrap_or(sql.apply),
        Which::After => sql.after.unwrap_or_default(),
    };
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    let mut ctx = std::collections::BTreeMap::new();
    ctx.insert("variant", minijinja::Value::from(variant));
    if which != Which::After {
        ctx.insert("name", minijinja::Value::from(name));
    }
    if let Some(v) = value {
        ctx.insert("value", minijinja::Value::from_safe_string(v.to_string()));
    }
    let text = env
        .template_from_str(source)
        .and_then(|t| t.render(ctx))
        .map_err(|e| AdminError::Template {
            template: source.to_string(),
            source: e,
            hint: if which == Which::Read && source.contains("value") {
                " (`read` sees `name` and `variant`, not `value`)"
            } else {
                ""
            },
        })?;
    if text.trim().is_empty() {
        return Err(AdminError::EmptyStatement(source.to_string()));
    }
    Ok(text)
}

/// Every statement of a variant's settings, rendered with `string` literals: per setting
/// `(name, apply, read, restore)`, the restore with `restore_value` standing for the original
/// (unknown until the run reads it), then `after`.
pub struct Statements {
    pub settings: Vec<(String, String, String, String)>,
    pub after: Option<String>,
}

/// Renders every statement of a variant, checking names and templates (the load-time check
/// and `plan`'s listing). The error is `(key under the variant, message)`.
pub fn statements(
    variant: &str,
    settings: &IndexMap<String, Value>,
    sql: Templates,
    string: StringLiteral,
    restore_value: &str,
) -> Result<Statements, (String, String)> {
    let mut out = Vec::new();
    for (name, value) in settings {
        check_name(name).map_err(|e| (format!("settings.{name}"), e.to_string()))?;
        let at =
            |which: Which| move |e: AdminError| (format!("sql.{}", which.key()), e.to_string());
        let apply = render(
            sql,
            Which::Apply,
            variant,
            name,
            Some(&literal(value, string)),
        )
        .map_err(at(Which::Apply))?;
        let read = render(sql, Which::Read, variant, name, None).map_err(at(Which::Read))?;
        let restore_key = if sql.restore.is_some() {
            Which::Restore
        } else {
            Which::Apply
        };
        let restore = render(sql, Which::Restore, variant, name, Some(restore_value))
            .map_err(at(restore_key))?;
        out.push((name.clone(), apply, read, restore));
    }
    let after = match &sql.after {
        Some(_) => Some(
            render(sql, Which::After, variant, "", None)
                .map_err(|e| ("sql.after".to_string(), e.to_string()))?,
        ),
        None => None,
    };
    Ok(Statements {
        settings: out,
        after,
    })
}

/// The values of setting `name` in the answer to its `read` query: the `column` of every row
/// that names the setting in some column (OceanBase lists a parameter once per server), or of
/// the first row when none does. An error says what is missing.
pub fn values(
    table: &Table,
    column: Option<&str>,
    name: &str,
) -> Result<Vec<Option<String>>, AdminError> {
    let width = table.rows.first().map_or(0, Vec::len);
    let index = match column {
        Some(c) => {
            if table.columns.is_empty() && !table.rows.is_empty() {
                return Err(AdminError::NoColumnNames(c.to_string()));
            }
            table
                .columns
                .iter()
                .position(|n| n.eq_ignore_ascii_case(c))
                .ok_or_else(|| AdminError::NoSuchColumn {
                    column: c.to_string(),
                    columns: table.columns.clone(),
                })?
        }
        None if width > 1 => {
            return Err(AdminError::WhichColumn {
                width,
                columns: table.columns.clone(),
            });
        }
        None => 0,
    };
    let naming: Vec<&Vec<Option<String>>> = table
        .rows
        .iter()
        .filter(|r| {
            r.iter()
                .flatten()
                .any(|cell| cell.trim().eq_ignore_ascii_case(name))
        })
        .collect();
    let rows = if naming.is_empty() {
        table.rows.iter().take(1).collect()
    } else {
        naming
    };
    if rows.is_empty() {
        return Err(AdminError::NoRow(name.to_string()));
    }
    rows.into_iter()
        .map(|r| {
            r.get(index)
                .cloned()
                .ok_or_else(|| AdminError::ShortRow(name.to_string()))
        })
        .collect()
}

/// Whether the server's `actual` value is the `wanted` one: both trimmed, then equal ignoring
/// ASCII case, or equal as numbers, or equal as booleans (on/off, true/false, yes/no, 1/0).
pub fn matches(wanted: &Value, actual: Option<&str>) -> bool {
    let Some(actual) = actual.map(str::trim) else {
        return false;
    };
    let want = value_text(wanted);
    let want = want.trim();
    if want.eq_ignore_ascii_case(actual) {
        return true;
    }
    if let (Ok(a), Ok(b)) = (want.parse::<f64>(), actual.parse::<f64>()) {
        return a == b;
    }
    let boolean = |t: &str| match t.to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Some(true),
        "off" | "false" | "no" | "0" => Some(false),
        _ => None,
    };
    boolean(want).is_some() && boolean(want) == boolean(actual)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sql(apply: &'static str, read: &'static str) -> Templates<'static> {
        Templates {
            apply,
            read,
            restore: None,
            after: None,
        }
    }

    #[test]
    fn names_are_plain_identifiers() {
        assert!(check_name("innodb_flush_log_at_trx_commit").is_ok());
        assert!(check_name("x; DROP TABLE t").is_err());
        assert!(check_name("").is_err());
    }

    #[test]
    fn values_become_literals_that_cannot_end_the_statement() {
        let q: StringLiteral = &quote;
        assert_eq!(literal(&Value::Int(60), q), "60");
        assert_eq!(literal(&Value::Float(1.5), q), "1.5");
        assert_eq!(literal(&Value::Bool(true), q), "true");
        assert_eq!(literal(&Value::Str("4G".into()), q), "'4G'");
        assert_eq!(
            literal(&Value::Str("1'; DROP TABLE t; --".into()), q),
            "'1''; DROP TABLE t; --'"
        );
        assert_eq!(literal(&Value::Float(f64::NAN), q), "'NaN'");
        assert_eq!(original_literal(None, q), "NULL");
        assert_eq!(original_literal(Some("128"), q), "128");
        assert_eq!(original_literal(Some("-1.5e3"), q), "-1.5e3");
        assert_eq!(original_literal(Some("inf"), q), "'inf'");
        assert_eq!(original_literal(Some("10G"), q), "'10G'");
        assert_eq!(original_literal(Some("a\\'b"), q), "'a\\\\''b'");
    }

    #[test]
    fn statements_render_each_setting_and_name_the_bad_key() {
        let mut settings = IndexMap::new();
        settings.insert("memstore_limit_percentage".to_string(), Value::Int(60));
        let mut s = sql(
            "ALTER SYSTEM SET {{ name }} = {{ value }}",
            "SHOW PARAMETERS LIKE '{{ name }}'",
        );
        s.after = Some("SELECT '{{ variant }}'");
        let st = statements("big", &settings, s, &quote, "<original>").unwrap();
        assert_eq!(
            st.settings,
            [(
                "memstore_limit_percentage".to_string(),
                "ALTER SYSTEM SET memstore_limit_percentage = 60".to_string(),
                "SHOW PARAMETERS LIKE 'memstore_limit_percentage'".to_string(),
                "ALTER SYSTEM SET memstore_limit_percentage = <original>".to_string(),
            )]
        );
        assert_eq!(st.after.as_deref(), Some("SELECT 'big'"));

        let broken = sql(
            "ALTER SYSTEM SET {{ name }} = {{ value }",
            "SHOW {{ name }}",
        );
        let (key, e) = statements("v", &settings, broken, &quote, "x")
            .err()
            .unwrap();
        assert_eq!(key, "sql.apply");
        assert!(e.contains("syntax error"), "{e}");
        let typo = sql("SET {{ name }} = {{ value }}", "SHOW {{ nmae }}");
        let (key, e) = statements("v", &settings, typo, &quote, "x").err().unwrap();
        assert_eq!(key, "sql.read");
        assert!(e.contains("undefined"), "{e}");
        let mut restore = sql("SET {{ name }} = {{ value }}", "SHOW {{ name }}");
        restore.restore = Some("{% if %}");
        let (key, _) = statements("v", &settings, restore, &quote, "x")
            .err()
            .unwrap();
        assert_eq!(key, "sql.restore");
        settings.insert("x; DROP".to_string(), Value::Int(1));
        let ok = sql("SET {{ name }} = {{ value }}", "SHOW {{ name }}");
        let (key, e) = statements("v", &settings, ok, &quote, "x").err().unwrap();
        assert_eq!(key, "settings.x; DROP");
        assert!(e.contains("not a server variable name"), "{e}");
    }

    #[test]
    fn values_pick_the_named_column_of_the_rows_naming_the_setting() {
        let table = Table {
            columns: vec!["Variable_name".into(), "Value".into()],
            rows: vec![
                vec![Some("max_connect_errors".into()), Some("100".into())],
                vec![Some("max_connect_errorsX".into()), Some("7".into())],
            ],
        };
        assert_eq!(
            values(&table, Some("value"), "max_connect_errors").unwrap(),
            [Some("100".to_string())]
        );
        let e = values(&table, None, "max_connect_errors")
            .unwrap_err()
            .to_string();
        assert!(e.contains("say which holds the value with `column`"), "{e}");
        let e = values(&table, Some("val"), "max_connect_errors")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no column `val`") && e.contains("Variable_name, Value"),
            "{e}"
        );
        let e = values(&Table::default(), None, "nope")
            .unwrap_err()
            .to_string();
        assert!(e.contains("returned no row for `nope`"), "{e}");
        let one = Table {
            columns: vec!["work_mem".into()],
            rows: vec![vec![Some("4MB".into())]],
        };
        assert_eq!(
            values(&one, None, "work_mem").unwrap(),
            [Some("4MB".to_string())]
        );
    }

    #[test]
    fn read_back_compares_trimmed_numbers_and_booleans() {
        assert!(matches(&Value::Int(60), Some(" 60 ")));
        assert!(matches(&Value::Float(1.5), Some("1.50")));
        assert!(matches(&Value::Str("ROW".into()), Some("row")));
        assert!(matches(&Value::Bool(true), Some("ON")));
        assert!(matches(&Value::Bool(false), Some("0")));
        assert!(!matches(&Value::Int(60), Some("61")));
        assert!(!matches(&Value::Str("4G".into()), Some("4294967296")));
        assert!(!matches(&Value::Int(1), None));
    }
}
