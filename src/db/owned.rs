//! What a suite's run created in a database, so that its cleanup removes that and nothing
//! else (#26).
//!
//! Why it exists: a cleanup used to drop every table its workload names, whoever made them. A
//! suite whose prepare failed because the user's `sbtest1` was already there went on to its
//! cleanup, which dropped the user's table. Now the prepare and cleanup steps of a suite carry
//! a [`Ledger`] on their [`Target`] (the runner's, which writes it to the run directory and
//! reads it back on `--resume`), and:
//!
//! * before a prepare creates a table it records it ([`Ledger::creating`]: written and synced
//!   before the `CREATE TABLE` is sent, so a crash between the two leaves a record of a table
//!   that may exist, never a table without a record); a `CREATE TABLE` the server refuses
//!   (the table was there) withdraws the record ([`Ledger::not_created`]);
//! * a cleanup drops a table only when the ledger says the run created it
//!   ([`Ledger::owns`]), and records the drop ([`Ledger::dropped`]); a table of that name
//!   that is there all the same is kept, and told to the ledger ([`Ledger::kept`]), whose
//!   owner reports it.
//!
//! The built-in OLTP workloads name their tables (`sbtest1`…) and call the ledger directly,
//! after checking that none of their tables exists ([`exists`]), so a prepare that would
//! collide fails before it creates anything. The statements of custom workloads (`schema`,
//! `after_load`, `cleanup`) and of sysbench Lua scripts (what `prepare()` and `cleanup()` send
//! through `con:query()`) go through [`query`], which reads each one: `CREATE TABLE` is
//! recorded (`IF NOT EXISTS` on a table that is there is not the run's), `DROP TABLE` drops
//! only the run's tables of its list. Everything else runs as written: an index, a view, a
//! function or a `DELETE` is the workload's own code, and only tables are tracked. Temporary
//! tables live as long as their session and are left alone.
//!
//! Without a ledger (`sbsuite sysbench … prepare|cleanup`, the user's own command, and every
//! run step) nothing changes: sysbench's cleanup drops the tables it names.

pub use super::ledger::{Ledger, NotRecorded, TableKey};

use super::conn::{Connection, Done, ErrKind, SqlError};
use super::target::Target;

/// `table` of `t`'s database (on its first host, where prepare and cleanup run), folded as the
/// server stores it.
pub fn key(t: &Target, table: &str) -> TableKey {
    let d = t.driver.dialect();
    let parts = parts(table);
    let folded: Vec<String> = parts
        .iter()
        .map(|(p, quoted)| d.fold_identifier(p, *quoted))
        .collect();
    TableKey {
        at: format!("{} {}", d.endpoint(t, 0), d.database_label(&t.at(0))),
        table: folded.join("."),
    }
}

/// Whether `table` (as a statement writes it: quoted, schema-qualified) exists in `t`'s
/// database, read from the catalog (no statement that fails, so an open transaction of the
/// connection is not broken).
pub fn exists(conn: &mut dyn Connection, t: &Target, table: &str) -> Result<bool, SqlError> {
    let d = t.driver.dialect();
    let parts = parts(table);
    let folded: Vec<String> = parts
        .iter()
        .map(|(p, quoted)| d.fold_identifier(p, *quoted))
        .collect();
    let (schema, name) = match folded.as_slice() {
        [.., schema, name] => (Some(schema.as_str()), name.as_str()),
        [name] => (None, name.as_str()),
        [] => return Ok(false),
    };
    let sql = d.table_exists_sql(schema, name, table);
    Ok(conn.query_i64(&sql)?.unwrap_or(0) != 0)
}

/// Why a prepare refuses to start: `tables` (as written) are already in `t`'s database, and a
/// run does not take a table it did not create for its own (nor drop it).
pub fn already_there(t: &Target, tables: &[String]) -> String {
    let one = tables.len() == 1;
    let (s, it, it_is) = if one {
        ("", "it", "it is")
    } else {
        ("s", "them", "they are")
    };
    format!(
        "table{s} {} already exist{} in {} and this run did not create {it}: the prepare leaves \
         {it} as {it_is} and the cleanup keeps {it}. Drop {it} yourself, prepare into another \
         database, or set [suite] dataset = \"existing\" to run on the tables as they are",
        tables.join(", "),
        if one { "s" } else { "" },
        t.driver.dialect().database_label(t),
    )
}

/// Runs `sql` on `conn` for a step whose target has `ledger`: a `CREATE TABLE` is recorded
/// before it is sent, a `DROP TABLE` drops only the tables the run created (all of them
/// kept: nothing is sent and it succeeds, as `DROP TABLE IF EXISTS` would), anything else
/// runs as written.
pub fn query(
    ledger: &dyn Ledger,
    t: &Target,
    conn: &mut dyn Connection,
    sql: &str,
) -> Result<Done, SqlError> {
    match parse(sql) {
        Statement::Create {
            table,
            if_not_exists,
            or_replace,
        } => {
            let k = key(t, table);
            if (if_not_exists || or_replace) && !ledger.owns(&k) && exists(conn, t, table)? {
                if or_replace {
                    return Err(SqlError::client(
                        format!(
                            "`{}` would replace table {k}, which this run did not create: it \
                             is left as it is (drop it yourself, or prepare into another \
                             database)",
                            sql.trim()
                        ),
                        ErrKind::Other,
                    ));
                }
                // Someone else's table: the statement does nothing, and the run does not own it.
                return conn.query(sql);
            }
            create(ledger, &k, || conn.query(sql))
        }
        Statement::Drop { tables, suffix } => {
            let keys: Vec<TableKey> = tables.iter().map(|n| key(t, n)).collect();
            let mine: Vec<bool> = keys.iter().map(|k| ledger.owns(k)).collect();
            if mine.iter().all(|m| *m) {
                let done = conn.query(sql)?;
                keys.iter().for_each(|k| ledger.dropped(k));
                return Ok(done);
            }
            let mut done = Done::default();
            for ((name, k), mine) in tables.iter().zip(&keys).zip(&mine) {
                if *mine {
                    done = conn.query(&format!("DROP TABLE IF EXISTS {name}{suffix}"))?;
                    ledger.dropped(k);
                } else if exists(conn, t, name)? {
                    ledger.kept(k);
                }
            }
            Ok(done)
        }
        Statement::Other => conn.query(sql),
    }
}

/// The tables a `DROP TABLE` statement names, as written.
pub fn dropped_tables(sql: &str) -> Option<Vec<&str>> {
    match parse(sql) {
        Statement::Drop { tables, .. } => Some(tables),
        _ => None,
    }
}

/// The table a `CREATE TABLE` statement creates (not a temporary one), as written.
pub fn created_table(sql: &str) -> Option<&str> {
    match parse(sql) {
        Statement::Create { table, .. } => Some(table),
        _ => None,
    }
}

/// The table a `CREATE TABLE` statement without `IF NOT EXISTS` creates (such a statement
/// fails on a table that is there, so a prepare can refuse it before it creates anything).
pub fn plain_create(sql: &str) -> Option<&str> {
    match parse(sql) {
        Statement::Create {
            table,
            if_not_exists: false,
            or_replace: false,
        } => Some(table),
        _ => None,
    }
}

/// Records `key`, then runs `create`; a server error withdraws the record (the server refused
/// the statement, so the run created nothing). A lost connection or a client error keeps it:
/// the server may have created the table after all, and a cleanup drops it if it is there.
pub fn create<T>(
    ledger: &dyn Ledger,
    key: &TableKey,
    create: impl FnOnce() -> Result<T, SqlError>,
) -> Result<T, SqlError> {
    if ledger.owns(key) {
        // Already the run's (an earlier dataset's cleanup failed): a failure here does not
        // make it anyone else's.
        return create();
    }
    ledger
        .creating(key)
        .map_err(|e| SqlError::client(e.to_string(), ErrKind::Other))?;
    create().inspect_err(|e| {
        let refused =
            e.kind == ErrKind::TableExists || (e.kind == ErrKind::Other && !e.code.is_empty());
        if refused {
            ledger.not_created(key);
        }
    })
}

/// What [`query`] makes of a statement.
#[derive(Debug, PartialEq, Eq)]
enum Statement<'a> {
    /// `CREATE [OR REPLACE] [UNLOGGED] TABLE [IF NOT EXISTS] name …` (not a temporary table).
    Create {
        table: &'a str,
        if_not_exists: bool,
        or_replace: bool,
    },
    /// `DROP TABLE [IF EXISTS] a [, b …] [CASCADE|RESTRICT]`: the names as written, and what
    /// follows them.
    Drop {
        tables: Vec<&'a str>,
        suffix: String,
    },
    Other,
}

/// Reads the head of a statement (after leading blanks and comments).
fn parse(sql: &str) -> Statement<'_> {
    let tokens = tokens(sql);
    let upper: Vec<String> = tokens.iter().map(|t| t.to_ascii_uppercase()).collect();
    let at = |i: usize| upper.get(i).map(String::as_str);
    let name = |i: usize| {
        tokens
            .get(i)
            .copied()
            .filter(|t| !matches!(*t, "(" | "," | ";"))
    };
    match (at(0), at(1)) {
        (Some("CREATE"), _) => {
            let mut i = 1;
            let or_replace = at(1) == Some("OR") && at(2) == Some("REPLACE");
            if or_replace {
                i += 2;
            }
            if at(i) == Some("UNLOGGED") {
                i += 1;
            }
            if at(i) != Some("TABLE") {
                // Not a table, or a temporary one (`TEMPORARY`, `GLOBAL TEMP`…).
                return Statement::Other;
            }
            let if_not_exists =
                at(i + 1) == Some("IF") && at(i + 2) == Some("NOT") && at(i + 3) == Some("EXISTS");
            i += if if_not_exists { 4 } else { 1 };
            match name(i) {
                Some(table) => Statement::Create {
                    table,
                    if_not_exists,
                    or_replace,
                },
                None => Statement::Other,
            }
        }
        (Some("DROP"), Some("TABLE")) => {
            let mut i = if at(2) == Some("IF") && at(3) == Some("EXISTS") {
                4
            } else {
                2
            };
            let mut tables = Vec::new();
            while let Some(t) = name(i) {
                tables.push(t);
                if tokens.get(i + 1) != Some(&",") {
                    break;
                }
                i += 2;
            }
            if tables.is_empty() {
                return Statement::Other;
            }
            let rest: Vec<&str> = tokens[i + 1..]
                .iter()
                .copied()
                .filter(|t| *t != ";")
                .collect();
            let suffix = match rest.as_slice() {
                [] => String::new(),
                words => format!(" {}", words.join(" ")),
            };
            Statement::Drop { tables, suffix }
        }
        _ => Statement::Other,
    }
}

/// The first words of a statement: identifiers (quoted ones whole, with their quotes,
/// `schema.table` as one), and `(`, `,`, `;` on their own; leading `--` and `/* */` comments
/// skipped. Stops at the first `(`, enough for the head of a CREATE or DROP.
fn tokens(sql: &str) -> Vec<&str> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            c if c.is_ascii_whitespace() => i += 1,
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 2;
            }
            b'(' => {
                out.push("(");
                break;
            }
            b',' | b';' => {
                out.push(&sql[i..i + 1]);
                i += 1;
            }
            _ => {
                let start = i;
                while i < b.len() {
                    match b[i] {
                        q @ (b'`' | b'"' | b'[') => {
                            let close = if q == b'[' { b']' } else { q };
                            i += 1;
                            while i < b.len() && b[i] != close {
                                i += 1;
                            }
                            i += 1;
                        }
                        c if c.is_ascii_whitespace() || matches!(c, b'(' | b',' | b';') => break,
                        _ => i += 1,
                    }
                }
                out.push(&sql[start..i.min(b.len())]);
            }
        }
    }
    out
}

/// The parts of a (possibly schema-qualified) name, each without its quotes and whether it
/// had them.
fn parts(name: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '`' | '"' | '[' => {
                let close = if c == '[' { ']' } else { c };
                quoted = true;
                while let Some(ch) = chars.next() {
                    if ch == close {
                        // A doubled quote inside a quoted name is one quote.
                        if chars.peek() == Some(&close) && close != ']' {
                            chars.next();
                            cur.push(ch);
                            continue;
                        }
                        break;
                    }
                    cur.push(ch);
                }
            }
            '.' => out.push((std::mem::take(&mut cur), std::mem::take(&mut quoted))),
            c => cur.push(c),
        }
    }
    out.push((cur, quoted));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_are_read_after_comments_with_their_names_as_written() {
        assert_eq!(
            parse("CREATE TABLE sbtest1(id INT)"),
            Statement::Create {
                table: "sbtest1",
                if_not_exists: false,
                or_replace: false
            }
        );
        assert_eq!(
            parse("CREATE OR REPLACE UNLOGGED TABLE t2 (a int)"),
            Statement::Create {
                table: "t2",
                if_not_exists: false,
                or_replace: true
            }
        );
        assert_eq!(
            parse("CREATE GLOBAL TEMPORARY TABLE t (a int)"),
            Statement::Other
        );
        assert_eq!(
            parse("-- the table\n /* c */ create table if not exists `My Tab` (id int)"),
            Statement::Create {
                table: "`My Tab`",
                if_not_exists: true,
                or_replace: false
            }
        );
        assert_eq!(parse("CREATE TEMPORARY TABLE t (a int)"), Statement::Other);
        assert_eq!(parse("CREATE INDEX k ON t(a)"), Statement::Other);
        assert_eq!(
            parse("DROP TABLE IF EXISTS a, \"B\" , s.c CASCADE;"),
            Statement::Drop {
                tables: vec!["a", "\"B\"", "s.c"],
                suffix: " CASCADE".into()
            }
        );
        assert_eq!(
            parse("drop table sbtest3"),
            Statement::Drop {
                tables: vec!["sbtest3"],
                suffix: String::new()
            }
        );
        assert_eq!(parse("DROP TABLE"), Statement::Other);
        assert_eq!(parse("DELETE FROM sbtest1"), Statement::Other);
    }

    #[test]
    fn names_fold_as_each_server_stores_them() {
        let mut t = Target::sqlite_default();
        assert_eq!(key(&t, "SBtest1").table, "sbtest1");
        t.driver = crate::db::Driver::Pgsql;
        t.hosts = vec![("h".into(), 5432)];
        t.database = "d".into();
        assert_eq!(key(&t, "SBtest1").table, "sbtest1");
        assert_eq!(key(&t, "\"SBtest1\"").table, "SBtest1");
        assert_eq!(key(&t, "public.\"A\"\"b\"").table, "public.A\"b");
        assert_eq!(key(&t, "x").at, "h:5432 database `d`");
        t.driver = crate::db::Driver::Mysql;
        assert_eq!(key(&t, "`SBtest1`").table, "SBtest1");
    }
}
