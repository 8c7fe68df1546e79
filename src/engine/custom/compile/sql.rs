//! SQL texts of a definition: one text for every driver or a per-driver table, and the
//! `:name` placeholders of transaction statements bound to variable slots, per driver (the
//! dialects quote and comment differently, so each text is scanned with its own lexer).

use super::DRIVERS;
use super::compiler::{Compiler, Scope, index, key};
use super::sites::SqlSite;
use crate::db::Driver;
use crate::db::sql_text::{self, Piece};
use crate::engine::custom::model::{Bound, BoundSql, Sql};
use crate::source::{Seg, did_you_mean};

/// A statement's text with `?` for each `:name` placeholder, and the names in order, for the
/// dialect of `driver`. Left alone: `::` (a PostgreSQL cast) and whatever the dialect's lexer
/// ([`crate::db::sql_text::pieces`], which `ps_mode = disable`'s substitution shares) finds
/// quoted or commented out.
pub fn placeholders(sql: &str, driver: Driver) -> (String, Vec<String>) {
    let mut out = String::with_capacity(sql.len());
    let mut names = Vec::new();
    for (kind, piece) in sql_text::pieces(sql, driver.dialect().syntax()) {
        if kind != Piece::Code {
            out.push_str(piece);
            continue;
        }
        let b = piece.as_bytes();
        let word = |i: usize| {
            b.get(i)
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
        };
        let (mut i, mut copied) = (0, 0);
        while i < b.len() {
            match (b[i], b.get(i + 1)) {
                (b':', Some(b':')) => i += 2,
                (b':', Some(c)) if c.is_ascii_alphabetic() || *c == b'_' => {
                    let mut end = i + 1;
                    while word(end) {
                        end += 1;
                    }
                    out.push_str(&piece[copied..i]);
                    out.push('?');
                    names.push(piece[i + 1..end].to_string());
                    (i, copied) = (end, end);
                }
                _ => i += 1,
            }
        }
        out.push_str(&piece[copied..]);
    }
    (out, names)
}

impl Compiler<'_> {
    fn sql(&mut self, path: &[Seg], v: &toml::Value) -> Option<Sql> {
        let sql = match v {
            toml::Value::String(s) => Sql::all(s.clone()),
            toml::Value::Table(t) => {
                self.keys(path, t, DRIVERS, "per-driver SQL");
                let mut sql = Sql::default();
                for name in DRIVERS {
                    if let Some(v) = t.get(*name)
                        && let Ok(d) = name.parse::<Driver>()
                    {
                        let text = self
                            .string(&key(path, name), v, "mysql = \"SELECT 1\"")?
                            .to_string();
                        sql.set(d, text);
                    }
                }
                sql
            }
            other => {
                self.err(
                    path,
                    false,
                    format!(
                        "SQL must be a string or a per-driver table, found {}",
                        other.type_str()
                    ),
                    "e.g. \"SELECT 1\" or { mysql = \"…\", pgsql = \"…\", sqlite = \"…\" }",
                );
                return None;
            }
        };
        self.sites.push(SqlSite {
            workload: self.name.clone(),
            file: self.file_index,
            path: path.to_vec(),
            sql: sql.clone(),
        });
        Some(sql)
    }

    /// SQL without placeholders (schema, after_load, cleanup, init, checks).
    pub(super) fn plain_sql(&mut self, path: &[Seg], v: &toml::Value) -> Option<Sql> {
        let sql = self.sql(path, v)?;
        for (d, text) in sql.iter() {
            if let Some(text) = text
                && let Some(name) = placeholders(text, d).1.first()
            {
                self.err(path, false, format!("`:{name}` is a placeholder, and only transaction statements bind values"), "write the value into the SQL (schema, after_load, cleanup, init and checks run as written), or quote it if it is text");
                return None;
            }
        }
        Some(sql)
    }

    pub(super) fn sql_list(&mut self, path: &[Seg], v: &toml::Value) -> Vec<Sql> {
        match v {
            toml::Value::Array(items) => items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| self.plain_sql(&index(path, i), item))
                .collect(),
            other => self.plain_sql(path, other).into_iter().collect(),
        }
    }

    /// A statement's SQL with its placeholders bound, per driver.
    pub(super) fn bound_sql(
        &mut self,
        path: &[Seg],
        v: &toml::Value,
        scope: &Scope,
    ) -> Option<BoundSql> {
        let sql = self.sql(path, v)?;
        let mut ok = true;
        // Each distinct text is bound (and its errors reported) once, not once per driver.
        let mut done: Vec<(String, Vec<String>, Bound)> = Vec::new();
        let mut bind = |c: &mut Self, d: Driver, text: &String| -> Bound {
            let (out, names) = placeholders(text, d);
            if let Some((_, _, b)) = done.iter().find(|(o, n, _)| *o == out && *n == names) {
                return b.clone();
            }
            let mut binds = Vec::new();
            for n in &names {
                match c.vars.slot(n) {
                    Some(s) => {
                        ok &= c.readable(path, s, scope, &format!("placeholder `:{n}`"));
                        binds.push(s);
                    }
                    None => {
                        let help = did_you_mean(n, c.vars.names.iter().map(String::as_str))
                            .map(|s| format!("{s} (placeholders name variables: options, params, lets, captures, indexes, thread)"))
                            .unwrap_or_else(|| format!("declare it (e.g. in [workloads.{}.params]) or use one of: {}", c.name, c.vars.names.join(", ")));
                        c.err(
                            path,
                            false,
                            format!("unknown placeholder `:{n}`: no variable of that name"),
                            help,
                        );
                        ok = false;
                    }
                }
            }
            let bound = Bound {
                text: out.clone(),
                binds,
            };
            done.push((out, names, bound.clone()));
            bound
        };
        let bound: BoundSql = sql.map(|d, text| bind(self, d, text));
        ok.then_some(bound)
    }
}
