//! The statements of sysbench's `oltp_common.lua`, as text, and the literal substitution used
//! when server-side prepared statements are off (`ps_mode = disable`).
//!
//! Kept apart from the worker so the exact SQL (what the server's `Com_*` counters see) is in
//! one readable table, and so the substitution can be tested without a server.

use std::fmt::Write;

/// One statement kind of the OLTP scripts (index into per-table statement arrays).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Q {
    Point,
    Simple,
    Sum,
    Order,
    Distinct,
    IndexUpdate,
    NonIndexUpdate,
    Delete,
    Insert,
}

impl Q {
    pub const ALL: [Q; 9] = [
        Q::Point,
        Q::Simple,
        Q::Sum,
        Q::Order,
        Q::Distinct,
        Q::IndexUpdate,
        Q::NonIndexUpdate,
        Q::Delete,
        Q::Insert,
    ];

    /// The statement for table `sbtest<table>`, with `?` placeholders.
    pub fn sql(self, table: usize) -> String {
        let t = format!("sbtest{table}");
        match self {
            Q::Point => format!("SELECT c FROM {t} WHERE id=?"),
            Q::Simple => format!("SELECT c FROM {t} WHERE id BETWEEN ? AND ?"),
            Q::Sum => format!("SELECT SUM(k) FROM {t} WHERE id BETWEEN ? AND ?"),
            Q::Order => format!("SELECT c FROM {t} WHERE id BETWEEN ? AND ? ORDER BY c"),
            Q::Distinct => {
                format!("SELECT DISTINCT c FROM {t} WHERE id BETWEEN ? AND ? ORDER BY c")
            }
            Q::IndexUpdate => format!("UPDATE {t} SET k=k+1 WHERE id=?"),
            Q::NonIndexUpdate => format!("UPDATE {t} SET c=? WHERE id=?"),
            Q::Delete => format!("DELETE FROM {t} WHERE id=?"),
            Q::Insert => format!("INSERT INTO {t} (id, k, c, pad) VALUES (?, ?, ?, ?)"),
        }
    }
}

pub use crate::db::P;

/// sysbench's client-side emulation: each `?` becomes the next parameter as a literal
/// (strings in single quotes, unescaped: the generated strings are digits and dashes).
/// Writes into `out` (cleared first) so a worker reuses one buffer.
pub fn substitute(template: &str, params: &[P<'_>], out: &mut String) {
    out.clear();
    let mut next = params.iter();
    for ch in template.chars() {
        if ch == '?' {
            match next.next() {
                Some(P::Int(i)) => {
                    let _ = write!(out, "{i}");
                }
                Some(P::Float(f)) => {
                    let _ = write!(out, "{f}");
                }
                Some(P::Null) => out.push_str("NULL"),
                Some(P::Str(s)) => {
                    out.push('\'');
                    out.push_str(s);
                    out.push('\'');
                }
                None => out.push('?'),
            }
        } else {
            out.push(ch);
        }
    }
}

/// sysbench's `c` template: 10 groups of 11 digits joined by `-` (119 characters).
pub fn c_template() -> String {
    ["###########"; 10].join("-")
}

/// sysbench's `pad` template: 5 groups of 11 digits joined by `-` (59 characters).
pub fn pad_template() -> String {
    ["###########"; 5].join("-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitution_quotes_strings_and_keeps_order() {
        let mut out = String::from("junk");
        substitute(
            &Q::NonIndexUpdate.sql(3),
            &[P::Str("12-34"), P::Int(42)],
            &mut out,
        );
        assert_eq!(out, "UPDATE sbtest3 SET c='12-34' WHERE id=42");
        substitute(&Q::Simple.sql(1), &[P::Int(5), P::Int(104)], &mut out);
        assert_eq!(out, "SELECT c FROM sbtest1 WHERE id BETWEEN 5 AND 104");
    }

    #[test]
    fn templates_have_sysbench_lengths() {
        assert_eq!(c_template().len(), 119);
        assert_eq!(pad_template().len(), 59);
    }
}
