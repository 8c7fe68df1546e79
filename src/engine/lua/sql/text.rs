//! SQL text helpers of `sysbench.sql`: which text queries return rows, the statement text of
//! `--db-ps-mode=disable` (values pasted in), and MySQL's SQLSTATE for an errno.
//!
//! Why a keyword test: [`crate::db::Connection`] reads a result's rows (`query_table`) or
//! drains a statement and reports its affected rows (`query_fetch`), not both in one call.
//! `con:query()` must hand rows to `rs:fetch_row()` for SELECTs and count affected rows for
//! writes, so the first keyword of the statement picks the call, once per query.

use crate::db::P;

/// Whether a text statement returns a result set, judged by its first keyword (leading
/// blanks, comments and parentheses skipped), or for a write by a `RETURNING` clause
/// (PostgreSQL, SQLite, MariaDB).
pub fn returns_rows(sql: &str) -> bool {
    let word = first_word(sql);
    const ROWS: &[&str] = &[
        "SELECT", "SHOW", "WITH", "VALUES", "EXPLAIN", "DESCRIBE", "DESC", "PRAGMA", "TABLE",
        "CHECKSUM", "CHECK", "ANALYZE", "OPTIMIZE", "REPAIR", "HELP",
    ];
    ROWS.iter().any(|k| k.eq_ignore_ascii_case(word)) || (is_write(word) && has_returning(sql))
}

/// Whether a statement is known to return no result set, judged as [`returns_rows`] judges:
/// a write without `RETURNING`, DDL, or transaction control. A keyword it does not know
/// (`CALL`, a procedure's result) may return rows: `false`.
pub fn returns_no_rows(sql: &str) -> bool {
    const NONE: &[&str] = &[
        "CREATE",
        "DROP",
        "ALTER",
        "TRUNCATE",
        "RENAME",
        "BEGIN",
        "START",
        "COMMIT",
        "ROLLBACK",
        "SAVEPOINT",
        "RELEASE",
        "SET",
        "LOCK",
        "UNLOCK",
        "GRANT",
        "REVOKE",
    ];
    let word = first_word(sql);
    NONE.iter().any(|k| k.eq_ignore_ascii_case(word)) || (is_write(word) && !has_returning(sql))
}

fn is_write(word: &str) -> bool {
    ["INSERT", "UPDATE", "DELETE", "REPLACE", "MERGE"]
        .iter()
        .any(|k| k.eq_ignore_ascii_case(word))
}

fn has_returning(sql: &str) -> bool {
    sql.as_bytes()
        .windows(9)
        .any(|w| w.eq_ignore_ascii_case(b"RETURNING"))
}

/// The first keyword, past blanks, `--`/`#` line comments, `/* */` comments and `(`.
pub fn first_word(sql: &str) -> &str {
    let mut s = sql;
    loop {
        let t = s.trim_start_matches(|c: char| c.is_whitespace() || c == '(');
        if let Some(rest) = t.strip_prefix("/*") {
            s = rest.split_once("*/").map_or("", |(_, r)| r);
        } else if t.starts_with("--") || t.starts_with('#') {
            s = t.split_once('\n').map_or("", |(_, r)| r);
        } else {
            s = t;
            break;
        }
    }
    let end = s
        .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .unwrap_or(s.len());
    &s[..end]
}

/// A statement split at its `?` placeholders (outside quotes and comments) for
/// `--db-ps-mode=disable`: `parts.len()` is the number of placeholders plus one.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    parts: Vec<String>,
}

impl Template {
    pub fn new(sql: &str) -> Template {
        let mut parts = Vec::new();
        let mut cur = String::new();
        let mut quote: Option<char> = None;
        for c in sql.chars() {
            match quote {
                Some(q) => {
                    if c == q {
                        quote = None;
                    }
                    cur.push(c);
                }
                None if c == '?' => parts.push(std::mem::take(&mut cur)),
                None => {
                    if matches!(c, '\'' | '"' | '`') {
                        quote = Some(c);
                    }
                    cur.push(c);
                }
            }
        }
        parts.push(cur);
        Template { parts }
    }

    /// Writes the statement with `params` pasted in, as sysbench does: numbers as written,
    /// strings between single quotes unescaped, NULL for a null value; a placeholder without
    /// a value stays `NULL`.
    pub fn render(&self, params: &[P<'_>], out: &mut String) {
        use std::fmt::Write;
        out.clear();
        for (i, part) in self.parts.iter().enumerate() {
            out.push_str(part);
            if i + 1 == self.parts.len() {
                break;
            }
            match params.get(i) {
                Some(P::Int(v)) => {
                    let _ = write!(out, "{v}");
                }
                Some(P::Float(v)) => {
                    let _ = write!(out, "{v}");
                }
                Some(P::Str(s)) => {
                    out.push('\'');
                    out.push_str(s);
                    out.push('\'');
                }
                Some(P::Null) | None => out.push_str("NULL"),
            }
        }
    }
}

/// The SQLSTATE MySQL sends with an errno, for the errors scripts meet (sysbench prints
/// `mysql_sqlstate()`); `HY000`, MySQL's own default, for the others and client errors.
pub fn mysql_sqlstate(errno: i32) -> &'static str {
    match errno {
        1062 | 1048 | 1216 | 1217 | 1451 | 1452 | 1169 | 1557 => "23000",
        1213 => "40001",
        1146 | 1051 => "42S02",
        1050 => "42S01",
        1054 => "42S22",
        1064 | 1049 | 1149 | 1044 | 1142 | 1143 => "42000",
        1045 => "28000",
        1136 => "21S01",
        1264 => "22003",
        1406 => "22001",
        _ => "HY000",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_keyword_says_whether_rows_come_back() {
        assert!(returns_rows("SELECT 1"));
        assert!(returns_rows("  select c from t"));
        assert!(returns_rows("(SELECT 1) UNION (SELECT 2)"));
        assert!(returns_rows("/* hint */ SELECT 1"));
        assert!(returns_rows("-- note\nSHOW TABLES"));
        assert!(!returns_rows("INSERT INTO t VALUES (1)"));
        assert!(!returns_rows("BEGIN"));
        assert!(!returns_rows("SELECTED"));
        assert!(!returns_rows(""));
        assert!(!returns_rows("UPDATE t SET a = 'SELECT'"));
        assert!(returns_rows("INSERT INTO t VALUES (1) RETURNING id"));
        assert!(returns_rows("delete from t returning *"));
    }

    #[test]
    fn writes_ddl_and_transaction_control_are_known_to_return_no_rows() {
        for sql in [
            "UPDATE t SET a = 1",
            "/* x */ insert into t values (1)",
            "DELETE FROM t",
            "CREATE TABLE t (a int)",
            "COMMIT",
        ] {
            assert!(returns_no_rows(sql), "{sql}");
        }
        for sql in [
            "SELECT 1",
            "INSERT INTO t VALUES (1) RETURNING id",
            "CALL p()",
            "WITH x AS (SELECT 1) UPDATE t SET a = 1",
            "",
        ] {
            assert!(!returns_no_rows(sql), "{sql}");
        }
    }

    #[test]
    fn disabled_prepared_statements_paste_values_unescaped() {
        let t = Template::new("SELECT c FROM t WHERE id = ? AND c = '?' AND k IN (?, ?) -- ?");
        let mut out = String::new();
        t.render(&[P::Int(7), P::Str("a'b"), P::Null], &mut out);
        // The quoted `?` is text; the one in the comment is a placeholder to sysbench as well
        // as here (sysbench does not parse comments either); a missing value is NULL.
        assert_eq!(
            out,
            "SELECT c FROM t WHERE id = 7 AND c = '?' AND k IN ('a'b', NULL) -- NULL"
        );
        let t = Template::new("UPDATE t SET f = ?");
        t.render(&[P::Float(1.5)], &mut out);
        assert_eq!(out, "UPDATE t SET f = 1.5");
    }

    #[test]
    fn mysql_sqlstates_of_common_errors() {
        assert_eq!(mysql_sqlstate(1062), "23000");
        assert_eq!(mysql_sqlstate(1213), "40001");
        assert_eq!(mysql_sqlstate(1146), "42S02");
        assert_eq!(mysql_sqlstate(2013), "HY000");
    }
}
