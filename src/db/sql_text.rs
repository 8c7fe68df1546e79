//! SQL text as each database reads it: one lexer that tells code from quoted text and comments
//! ([`pieces`]), and the literals that `ps_mode = disable` writes into statements in place of
//! their `?` placeholders ([`substitute`]).
//!
//! Why one module: whatever looks for placeholders in a statement (custom workloads' `:name`,
//! the `?` → `$n` numbering of PostgreSQL, the literal substitution) must agree with the server
//! about where a string or a comment ends, or a `'` inside a comment (`/* don't */`) hides the
//! placeholders after it, and a value that ends a string early becomes SQL. The lexer knows
//! each dialect's quoting: MySQL/MariaDB's backslash escapes in `'…'` and `"…"`, backticks,
//! `#` and `-- ` comments and executable `/*! … */` comments; PostgreSQL's `E'…'` strings,
//! dollar quotes and nested `/* */` comments; SQLite's `[…]` identifiers. Statement text is
//! read in each server's default syntax (MySQL with backslash escapes, PostgreSQL with
//! `standard_conforming_strings = on`), the same way when the suite is validated and when the
//! statement runs, so both find the same placeholders.
//!
//! Literals are written in a form that means the same whatever the session's settings, so that
//! no setting (nor a statement of the workload changing it mid-session) can turn a value into
//! SQL, and nothing has to be read from the server first. Text without a backslash or a NUL is
//! `'…'` with `'` doubled everywhere: that is read the same with and without MySQL's
//! `NO_BACKSLASH_ESCAPES` and PostgreSQL's `standard_conforming_strings`. Only the rest differs:
//! * PostgreSQL: `E'…'` with `\` doubled, whose backslashes mean the same whatever
//!   `standard_conforming_strings` is (as variants' literals, [`crate::db::ServerAdmin`]); a NUL
//!   is written `\000`, which the server refuses as it refuses a NUL bound to a prepared
//!   statement (text cannot hold one).
//! * MySQL/MariaDB: a backslash has no spelling inside quotes that both settings read the
//!   same, so the text is cut at its backslashes and joined again by the server:
//!   `CONCAT_WS(LEFT('\\', 1), 'C:', 'dir')`. `'\\'` is one backslash or two depending on
//!   `NO_BACKSLASH_ESCAPES`, its first character is one backslash in both. The result keeps a
//!   plain literal's character set, collation and coercibility (the connection's), which a
//!   hex literal (`X'…'`, binary) or an introducer (`_utf8mb4 X'…'`, the character set's
//!   default collation, not the connection's) would not. A NUL byte is written as is, which
//!   MySQL and MariaDB read as a NUL in either setting.
//! * SQLite (no escapes at all): a NUL ends SQLite's tokens, so text holding one is joined
//!   from pieces with `char(0)`: `('a' || char(0) || 'b')`.
//!
//! Values are `&str`, so always UTF-8: a captured value that was not valid UTF-8 on the server
//! had its bad bytes replaced by U+FFFD when the client read it, before any binding. Negative
//! numbers are parenthesised (`(-5)`), so `- ?` never becomes a `--` comment and `?::text` on
//! PostgreSQL casts the number rather than its absolute value; a literal is kept apart from a
//! word it would touch (`x?` → `x 5`).

use std::fmt::Write as _;

use crate::db::conn::P;

/// How one database reads SQL text: what the lexer must know, and how a string that a plain
/// `'…'` cannot carry under every setting is written. Each [`crate::db::Dialect`] has one
/// ([`crate::db::Dialect::syntax`]).
#[derive(Debug)]
pub struct Syntax {
    /// `'…'` and `"…"` take backslash escapes (MySQL's default `sql_mode`).
    pub backslash_escapes: bool,
    /// `` `…` `` quotes an identifier.
    pub backticks: bool,
    /// `[…]` quotes an identifier (SQLite).
    pub brackets: bool,
    /// `E'…'` is a string with backslash escapes, `$tag$ … $tag$` a quoted body, and block
    /// comments nest (PostgreSQL).
    pub escape_strings_and_dollar_quotes: bool,
    /// `#` starts a line comment, `--` does only before a blank or a control character, and
    /// the body of `/*! … */` (MariaDB's `/*M! … */` too) is code (MySQL).
    pub mysql_comments: bool,
    /// How text holding a backslash or a NUL is written.
    pub strings: Strings,
}

/// The literal of a text that holds a backslash or a NUL (the others are `'…'` with `'`
/// doubled everywhere).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strings {
    /// `E'…'`, backslashes doubled, a NUL as `\000` (PostgreSQL).
    Escape,
    /// `CONCAT_WS(LEFT('\\', 1), '…', '…')`: cut at the backslashes; a NUL as is (MySQL).
    JoinedAtBackslashes,
    /// `('…' || char(0) || '…')`: cut at the NULs; a backslash as is (SQLite).
    JoinedAtNuls,
}

/// What a piece of SQL text is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece {
    /// SQL: where placeholders are.
    Code,
    /// A string, a quoted identifier or a dollar-quoted body, quotes included.
    Quoted,
    /// A comment, its markers (and a line comment's newline) included.
    Comment,
}

/// The consecutive pieces of `sql` as a server of `syntax` reads them (concatenated, they give
/// `sql` back). An unterminated string or comment runs to the end of the text.
pub fn pieces<'a>(sql: &'a str, syntax: &'static Syntax) -> Pieces<'a> {
    Pieces {
        sql,
        syntax,
        at: 0,
        executable: false,
    }
}

/// The iterator of [`pieces`].
#[derive(Clone, Debug)]
pub struct Pieces<'a> {
    sql: &'a str,
    syntax: &'static Syntax,
    at: usize,
    /// Inside MySQL's `/*! … */` (or MariaDB's `/*M! … */`), whose body the server runs: the
    /// next `*/` is code.
    executable: bool,
}

/// What starts at a byte of the text.
#[derive(Clone, Copy, Debug)]
enum Open {
    /// A quote `q` whose body starts at byte `body` (after an `E` prefix on PostgreSQL);
    /// `backslash`: a backslash escapes the next byte.
    Quote { q: u8, body: usize, backslash: bool },
    /// SQLite's `[identifier]`.
    Bracket,
    /// `--` or `#` up to the end of the line.
    Line,
    /// `/* … */`.
    Block,
    /// MySQL's `/*!` or `/*M!` with the version digits after it, `len` bytes: code.
    Executable { len: usize },
    /// The `*/` ending an executable comment: code.
    ExecutableEnd,
    /// PostgreSQL's `$tag$`, `len` bytes.
    Dollar { len: usize },
}

impl<'a> Iterator for Pieces<'a> {
    type Item = (Piece, &'a str);

    fn next(&mut self) -> Option<(Piece, &'a str)> {
        let start = self.at;
        if start >= self.sql.len() {
            return None;
        }
        let (kind, end) = match self.open(start) {
            Some(open) => self.close(start, open),
            None => {
                let mut i = start + 1;
                while i < self.sql.len() && self.open(i).is_none() {
                    i += 1;
                }
                (Piece::Code, i)
            }
        };
        self.at = end;
        Some((kind, &self.sql[start..end]))
    }
}

impl Pieces<'_> {
    /// Whether byte `i` continues a word (an identifier or a keyword), for the prefixes that
    /// only open a string or a dollar quote when no word is before them.
    fn word(&self, i: usize) -> bool {
        let b = self.sql.as_bytes()[i];
        b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80 || b == b'$'
    }

    /// What starts at byte `i`, if anything other than plain code.
    fn open(&self, i: usize) -> Option<Open> {
        let b = self.sql.as_bytes();
        let at = |k: usize| b.get(k).copied();
        let Syntax {
            backslash_escapes,
            backticks,
            brackets,
            escape_strings_and_dollar_quotes: pgsql,
            mysql_comments: mysql,
            ..
        } = *self.syntax;
        let after_word = i > 0 && self.word(i - 1);
        Some(match (b[i], at(i + 1)) {
            (q @ (b'\'' | b'"'), _) => Open::Quote {
                q,
                body: i + 1,
                backslash: backslash_escapes,
            },
            (b'`', _) if backticks => Open::Quote {
                q: b'`',
                body: i + 1,
                backslash: false,
            },
            (b'[', _) if brackets => Open::Bracket,
            (b'E' | b'e', Some(b'\'')) if pgsql && !after_word => Open::Quote {
                q: b'\'',
                body: i + 2,
                backslash: true,
            },
            // MySQL's `--` comment needs a blank or a control character after it (`5--1`
            // is arithmetic).
            (b'-', Some(b'-')) if !mysql || at(i + 2).is_none_or(|c| c <= b' ') => Open::Line,
            (b'#', _) if mysql => Open::Line,
            (b'/', Some(b'*'))
                if mysql && (at(i + 2) == Some(b'!') || b[i + 2..].starts_with(b"M!")) =>
            {
                let mut len = if at(i + 2) == Some(b'!') { 3 } else { 4 };
                while at(i + len).is_some_and(|c| c.is_ascii_digit()) {
                    len += 1;
                }
                Open::Executable { len }
            }
            (b'/', Some(b'*')) => Open::Block,
            (b'*', Some(b'/')) if self.executable => Open::ExecutableEnd,
            (b'$', next) if pgsql && !after_word && !next.is_some_and(|c| c.is_ascii_digit()) => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'$' && self.word(j) {
                    j += 1;
                }
                if at(j) != Some(b'$') {
                    return None;
                }
                Open::Dollar { len: j + 1 - i }
            }
            _ => return None,
        })
    }

    /// The piece that `open` starts at `i` and the index just past it.
    fn close(&mut self, i: usize, open: Open) -> (Piece, usize) {
        let b = self.sql.as_bytes();
        let end = b.len();
        let find = |from: usize, what: &[u8]| {
            (from..end)
                .find(|&j| b[j..].starts_with(what))
                .map_or(end, |j| j + what.len())
        };
        match open {
            Open::Quote { q, body, backslash } => {
                let mut j = body;
                while j < end {
                    // An escaped character, or a doubled quote: two bytes of the body.
                    if (backslash && b[j] == b'\\') || (b[j] == q && b.get(j + 1) == Some(&q)) {
                        j += 2;
                    } else if b[j] == q {
                        return (Piece::Quoted, j + 1);
                    } else {
                        j += 1;
                    }
                }
                (Piece::Quoted, end)
            }
            Open::Bracket => (Piece::Quoted, find(i + 1, b"]")),
            Open::Line => (Piece::Comment, find(i, b"\n")),
            Open::Block if self.syntax.escape_strings_and_dollar_quotes => {
                // PostgreSQL's block comments nest.
                let mut depth = 0usize;
                let mut j = i;
                while j < end {
                    if b[j..].starts_with(b"/*") {
                        depth += 1;
                        j += 2;
                    } else if b[j..].starts_with(b"*/") {
                        depth -= 1;
                        j += 2;
                        if depth == 0 {
                            return (Piece::Comment, j);
                        }
                    } else {
                        j += 1;
                    }
                }
                (Piece::Comment, end)
            }
            Open::Block => (Piece::Comment, find(i + 2, b"*/")),
            Open::Executable { len } => {
                self.executable = true;
                (Piece::Code, i + len)
            }
            Open::ExecutableEnd => {
                self.executable = false;
                (Piece::Code, i + 2)
            }
            Open::Dollar { len } => (Piece::Quoted, find(i + len, &b[i..i + len])),
        }
    }
}

/// `ps_mode = disable`: `template` with each `?` of its code replaced by the next value of
/// `params` as a literal ([`push_literal`]); a `?` without a value stays. Writes into `out`
/// (cleared first), so a worker reuses one buffer.
pub fn substitute(template: &str, params: &[P<'_>], syntax: &'static Syntax, out: &mut String) {
    out.clear();
    let mut next = params.iter();
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    for (kind, piece) in pieces(template, syntax) {
        if kind != Piece::Code {
            out.push_str(piece);
            continue;
        }
        let mut rest = piece;
        while let Some(q) = rest.find('?') {
            out.push_str(&rest[..q]);
            rest = &rest[q + 1..];
            let Some(&p) = next.next() else {
                out.push('?');
                continue;
            };
            if word(out.chars().next_back()) {
                out.push(' ');
            }
            push_literal(out, p, syntax);
            if word(rest.chars().next()) {
                out.push(' ');
            }
        }
        out.push_str(rest);
    }
}

/// Appends `p` as a literal that means the same under every session setting (see the
/// module's doc): integers and finite floats as numbers (negative ones in parentheses),
/// non-finite floats (which SQL cannot write) and NULL as `NULL`, text as a string
/// ([`push_string`]).
pub fn push_literal(out: &mut String, p: P<'_>, syntax: &Syntax) {
    match p {
        P::Int(i) if i < 0 => {
            let _ = write!(out, "({i})");
        }
        P::Int(i) => {
            let _ = write!(out, "{i}");
        }
        P::Float(f) if f.is_finite() && f.is_sign_negative() => {
            let _ = write!(out, "({f:?})");
        }
        P::Float(f) if f.is_finite() => {
            let _ = write!(out, "{f:?}");
        }
        P::Float(_) | P::Null => out.push_str("NULL"),
        P::Str(s) => push_string(out, s, syntax),
    }
}

/// Appends `s` as a string literal that means the same under every session setting: `'…'`
/// with `'` doubled, or [`Syntax::strings`]' form when `s` holds a backslash or a NUL.
pub fn push_string(out: &mut String, s: &str, syntax: &Syntax) {
    match syntax.strings {
        Strings::Escape if s.contains(['\\', '\0']) => {
            out.push_str("E'");
            for c in s.chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    '\'' => out.push_str("''"),
                    '\0' => out.push_str("\\000"),
                    c => out.push(c),
                }
            }
            out.push('\'');
        }
        Strings::JoinedAtBackslashes if s.contains('\\') => {
            out.push_str("CONCAT_WS(LEFT('\\\\', 1)");
            for part in s.split('\\') {
                out.push_str(", ");
                push_quoted(out, part);
            }
            out.push(')');
        }
        Strings::JoinedAtNuls if s.contains('\0') => {
            out.push('(');
            for (i, part) in s.split('\0').enumerate() {
                if i > 0 {
                    out.push_str(" || char(0) || ");
                }
                push_quoted(out, part);
            }
            out.push(')');
        }
        _ => push_quoted(out, s),
    }
}

/// `'s'` with `'` doubled: the same text in every dialect and setting when `s` holds neither a
/// backslash nor a NUL.
fn push_quoted(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('\'');
    for (i, part) in s.split('\'').enumerate() {
        if i > 0 {
            out.push_str("''");
        }
        out.push_str(part);
    }
    out.push('\'');
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::db::Driver;

    const ALL: [Driver; 3] = [Driver::Mysql, Driver::Pgsql, Driver::Sqlite];

    /// The pieces of `sql` that are not code, in order.
    fn skipped(sql: &str, driver: Driver) -> Vec<(Piece, &str)> {
        let all: Vec<_> = pieces(sql, driver.dialect().syntax()).collect();
        assert_eq!(all.iter().map(|p| p.1).collect::<String>(), sql, "lossless");
        all.into_iter().filter(|p| p.0 != Piece::Code).collect()
    }

    fn code(sql: &str, driver: Driver) -> String {
        pieces(sql, driver.dialect().syntax())
            .filter(|p| p.0 == Piece::Code)
            .map(|p| p.1)
            .collect()
    }

    #[test]
    fn quotes_end_where_each_server_ends_them() {
        use Piece::*;
        // MySQL: a backslash escapes the quote; doubled quotes stay inside; backticks.
        assert_eq!(
            skipped(r"SELECT 'it\'s', 'a''b', `x``y`, ? ", Driver::Mysql),
            [(Quoted, r"'it\'s'"), (Quoted, "'a''b'"), (Quoted, "`x``y`")]
        );
        assert_eq!(
            skipped(r#"SELECT "a\"b", ?"#, Driver::Mysql),
            [(Quoted, r#""a\"b""#)]
        );
        // PostgreSQL and SQLite: a backslash is a character; `E'…'` escapes on PostgreSQL.
        assert_eq!(
            skipped(r"SELECT 'C:\', ?", Driver::Pgsql),
            [(Quoted, r"'C:\'")]
        );
        assert_eq!(
            skipped(r"SELECT E'it\'s ?', e'\\', ?", Driver::Pgsql),
            [(Quoted, r"E'it\'s ?'"), (Quoted, r"e'\\'")]
        );
        // A word ending in E before a quote is not an escape string.
        assert_eq!(
            code(r"SELECT typE'\' , ?", Driver::Pgsql),
            "SELECT typE , ?"
        );
        assert_eq!(
            skipped("SELECT [a?b], ?", Driver::Sqlite),
            [(Quoted, "[a?b]")]
        );
        assert_eq!(code("SELECT [a?b], ?", Driver::Mysql), "SELECT [a?b], ?");
        // A backslash before a multi-byte character.
        assert_eq!(
            skipped("SELECT '\\é', ?", Driver::Mysql),
            [(Quoted, "'\\é'")]
        );
        // Unterminated: to the end.
        assert_eq!(skipped("SELECT 'a?", Driver::Sqlite), [(Quoted, "'a?")]);
    }

    /// Text of the characters the lexer looks at, and any others.
    fn sql_text() -> impl Strategy<Value = String> {
        let special: Vec<char> = "-'\"`$#/*?:\\[]!Ma E\u{e9}\n".chars().collect();
        let ch = prop_oneof![3 => proptest::sample::select(special), 1 => any::<char>()];
        proptest::collection::vec(ch, 0..40).prop_map(|v| v.into_iter().collect())
    }

    proptest! {
        /// Any text splits into pieces on character boundaries that give it back, and a
        /// template without `?` is its own substitution, in every dialect.
        #[test]
        fn pieces_are_lossless(sql in sql_text()) {
            let sql = sql.replace('?', "");
            for d in ALL {
                let back: String = pieces(&sql, d.dialect().syntax()).map(|p| p.1).collect();
                prop_assert_eq!(&back, &sql);
                let mut out = String::new();
                substitute(&sql, &[P::Int(1)], d.dialect().syntax(), &mut out);
                prop_assert_eq!(&out, &sql);
            }
        }
    }

    #[test]
    fn comments_of_each_dialect() {
        use Piece::*;
        let sql = "/* don't */ SELECT ? -- it's\n, ?";
        for d in ALL {
            assert_eq!(
                skipped(sql, d),
                [(Comment, "/* don't */"), (Comment, "-- it's\n")],
                "{d:?}"
            );
        }
        // MySQL: `#`; `--` only before a blank.
        assert_eq!(
            code("SELECT 5--? # it's ?\n", Driver::Mysql),
            "SELECT 5--? "
        );
        assert_eq!(code("SELECT 5--?", Driver::Pgsql), "SELECT 5");
        assert_eq!(code("SELECT 1 #?", Driver::Pgsql), "SELECT 1 #?");
        // PostgreSQL's block comments nest; MySQL's and SQLite's do not.
        let nested = "/* a /* b */ ' */ ?";
        assert_eq!(code(nested, Driver::Pgsql), " ?");
        assert_eq!(code(nested, Driver::Sqlite), " ");
        // MySQL runs the body of `/*! … */` and `/*M! … */`.
        assert_eq!(
            code(
                "SELECT /*!50100 ?, */ ? /*M!100100 '?' */ /* ? */",
                Driver::Mysql
            ),
            "SELECT /*!50100 ?, */ ? /*M!100100  */ "
        );
        assert_eq!(code("/*!", Driver::Mysql), "/*!");
    }

    #[test]
    fn dollar_quotes_on_postgresql() {
        let sql = "DO $f$ BEGIN x := '?'; END $f$; SELECT $$?$$, $1, a$b$, ?";
        assert_eq!(code(sql, Driver::Pgsql), "DO ; SELECT , $1, a$b$, ?");
        // Elsewhere `$` is an ordinary character.
        assert_eq!(code("SELECT $$?$$", Driver::Sqlite), "SELECT $$?$$");
        // A body holding another tag, and an unterminated body.
        assert_eq!(code("$a$ $b$ ? $a$?", Driver::Pgsql), "?");
        assert_eq!(code("$a$ ?", Driver::Pgsql), "");
    }

    #[test]
    fn strings_are_written_for_every_setting() {
        let lit = |s: &str, d: Driver| {
            let mut out = String::new();
            push_string(&mut out, s, d.dialect().syntax());
            out
        };
        for d in ALL {
            assert_eq!(lit("it's", d), "'it''s'");
            assert_eq!(lit("", d), "''");
        }
        let evil = r"\'; CREATE TABLE pwned(x int); --";
        assert_eq!(
            lit(evil, Driver::Pgsql),
            r"E'\\''; CREATE TABLE pwned(x int); --'"
        );
        assert_eq!(
            lit(evil, Driver::Mysql),
            r"CONCAT_WS(LEFT('\\', 1), '', '''; CREATE TABLE pwned(x int); --')"
        );
        assert_eq!(
            lit(evil, Driver::Sqlite),
            format!("'{}'", evil.replace('\'', "''"))
        );
        assert_eq!(lit("a\0b", Driver::Pgsql), r"E'a\000b'");
        assert_eq!(lit("a\0b", Driver::Mysql), "'a\0b'");
        assert_eq!(lit("a\0'", Driver::Sqlite), "('a' || char(0) || '''')");
        assert_eq!(
            lit("é\\", Driver::Mysql),
            r"CONCAT_WS(LEFT('\\', 1), 'é', '')"
        );
    }

    #[test]
    fn substitution_fills_the_placeholders_of_the_code() {
        let mut out = String::from("junk");
        let params = [P::Str("a'b"), P::Int(-3), P::Float(1e300), P::Null];
        substitute(
            "/* don't */ x = ? AND y = '?' AND z IN (?, ?, ?) -- ?",
            &params,
            Driver::Mysql.dialect().syntax(),
            &mut out,
        );
        assert_eq!(
            out,
            format!(
                "/* don't */ x = 'a''b' AND y = '?' AND z IN ((-3), {:?}, NULL) -- ?",
                1e300
            )
        );
        // A value never glues to a word, nor a minus to a minus.
        substitute(
            "SELECT x?y, 1-?",
            &[P::Int(5), P::Int(-1)],
            Driver::Pgsql.dialect().syntax(),
            &mut out,
        );
        assert_eq!(out, "SELECT x 5 y, 1-(-1)");
        substitute(
            "SELECT ?::text",
            &[P::Float(-0.5)],
            Driver::Pgsql.dialect().syntax(),
            &mut out,
        );
        assert_eq!(out, "SELECT (-0.5)::text");
        // Non-finite floats are NULL; a placeholder without a value stays.
        substitute(
            "? ?",
            &[P::Float(f64::NAN)],
            Driver::Sqlite.dialect().syntax(),
            &mut out,
        );
        assert_eq!(out, "NULL ?");
    }
}
