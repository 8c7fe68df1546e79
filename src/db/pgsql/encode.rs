//! What both PostgreSQL clients put on the wire the same way: `?` placeholders numbered as
//! `$n`, parameters in the binary format of the type the server inferred, and the rows of a
//! binary `COPY … FROM STDIN`.
//!
//! Why its own file: the wire client ([`super::wire`]) and the tokio-postgres client
//! ([`super::tokio_client`]) must send byte-identical parameters and COPY data (the server
//! sees the same statements whichever client a connection uses); one encoder serves both and
//! neither client borrows from the other. Integers go as sysbench's `INTEGER` columns
//! expect (INT4), text as is; the COPY format is PostgreSQL's binary one, so the server
//! parses no integers while loading.

use bytes::{BufMut, BytesMut};
use tokio_postgres::types::Type;

use crate::db::conn::{Cell, DataRow, P};
use crate::db::dialect::Dialect;
use crate::db::pgsql::PgsqlDialect;
use crate::db::sql_text::{self, Piece};

/// `?` placeholders → `$1`, `$2`, … (in code: not inside quotes, dollar quotes or comments,
/// as PostgreSQL's lexer reads them, [`sql_text::pieces`]).
pub fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for (kind, piece) in sql_text::pieces(sql, PgsqlDialect.syntax()) {
        if kind != Piece::Code {
            out.push_str(piece);
            continue;
        }
        for (i, part) in piece.split('?').enumerate() {
            if i > 0 {
                n += 1;
                out.push('$');
                out.push_str(&n.to_string());
            }
            out.push_str(part);
        }
    }
    out
}

/// The placeholder types [`put_param`] encodes in binary.
pub fn binary_type(ty: &Type) -> bool {
    matches!(
        *ty,
        Type::INT2
            | Type::INT4
            | Type::INT8
            | Type::TEXT
            | Type::BPCHAR
            | Type::VARCHAR
            | Type::NAME
            | Type::UNKNOWN
    )
}

/// Appends `p` in the binary format of `ty` (one of [`binary_type`]) (both clients).
pub fn put_param(p: P<'_>, ty: &Type, out: &mut BytesMut) -> Result<(), String> {
    match p {
        P::Int(i) => match *ty {
            Type::INT4 => out.put_i32(
                i32::try_from(i)
                    .map_err(|_| format!("{i} does not fit the INTEGER placeholder"))?,
            ),
            Type::INT8 => out.put_i64(i),
            Type::INT2 => out.put_i16(
                i16::try_from(i)
                    .map_err(|_| format!("{i} does not fit the SMALLINT placeholder"))?,
            ),
            // A text-typed placeholder (`c = ?` compared with a number): the digits.
            _ => out.put_slice(i.to_string().as_bytes()),
        },
        // Text bound to an integer placeholder (a value captured from a row is text): its
        // number.
        P::Str(s) => match *ty {
            Type::INT2 | Type::INT4 | Type::INT8 => match s.trim().parse::<i64>() {
                Ok(i) => return put_param(P::Int(i), ty, out),
                Err(_) => {
                    return Err(format!(
                        "text `{s}` bound to a {ty} placeholder is not an integer"
                    ));
                }
            },
            _ => out.put_slice(s.as_bytes()),
        },
        P::Float(f) => match *ty {
            Type::INT2 | Type::INT4 | Type::INT8 if f.fract() == 0.0 && f.abs() < 9.2e18 => {
                return put_param(P::Int(f as i64), ty, out);
            }
            Type::INT2 | Type::INT4 | Type::INT8 => {
                return Err(format!(
                    "{f} bound to a {ty} placeholder is not an integer (round it first)"
                ));
            }
            _ => put_float_text(f, out),
        },
        // The callers send NULL as a length of -1 without calling this.
        P::Null => {}
    }
    Ok(())
}

/// Appends `p` as text, for a placeholder of a type not in [`binary_type`] (NUMERIC, REAL,
/// DOUBLE PRECISION, DATE, TIMESTAMP, BOOLEAN, …): the server parses it as it parses a literal
/// (both clients). NULL is sent as a length of -1 by the callers.
pub fn put_text(p: P<'_>, out: &mut BytesMut) {
    match p {
        P::Int(i) => out.put_slice(i.to_string().as_bytes()),
        P::Str(s) => out.put_slice(s.as_bytes()),
        P::Float(f) => put_float_text(f, out),
        P::Null => {}
    }
}

/// A float as PostgreSQL reads it back exactly: the shortest digits (never an exponent, which
/// NUMERIC would keep as written), `NaN`, `Infinity`, `-Infinity`.
fn put_float_text(f: f64, out: &mut BytesMut) {
    if f.is_nan() {
        out.put_slice(b"NaN");
    } else if f.is_infinite() {
        out.put_slice(if f > 0.0 { b"Infinity" } else { b"-Infinity" });
    } else {
        out.put_slice(f.to_string().as_bytes());
    }
}

/// Bytes of COPY data buffered before they are sent.
pub const COPY_CHUNK: usize = 256 << 10;

/// The COPY statement of [`crate::db::Connection::load`] (both clients).
pub fn copy_sql(table: &str, with_id: bool) -> String {
    if with_id {
        format!("COPY {table} (id, k, c, pad) FROM STDIN (FORMAT binary)")
    } else {
        format!("COPY {table} (k, c, pad) FROM STDIN (FORMAT binary)")
    }
}

/// The COPY statement of [`crate::db::Connection::load_rows`] (both clients): the text format,
/// so that the server converts each value to its column's type (the columns of a custom
/// workload may be of any type, which binary COPY would have to know).
pub fn copy_text_sql(table: &str, columns: &[String]) -> String {
    format!("COPY {table} ({}) FROM STDIN", columns.join(", "))
}

/// One row of text COPY (both clients): values separated by tabs, `\N` for NULL, a newline at
/// the end; in text, backslash, tab, newline and carriage return are escaped as the format
/// requires.
pub fn text_row(buf: &mut BytesMut, cells: &[Cell]) {
    use std::io::Write as _;
    for (i, c) in cells.iter().enumerate() {
        if i > 0 {
            buf.put_u8(b'\t');
        }
        match c {
            Cell::Null => buf.put_slice(b"\\N"),
            Cell::Int(v) => {
                let _ = write!(buf.writer(), "{v}");
            }
            Cell::Float(f) => {
                let _ = write!(buf.writer(), "{f}");
            }
            Cell::Text(t) => {
                let bytes = t.as_bytes();
                let mut from = 0;
                for (at, b) in bytes.iter().enumerate() {
                    let escaped: &[u8] = match b {
                        b'\\' => b"\\\\",
                        b'\t' => b"\\t",
                        b'\n' => b"\\n",
                        b'\r' => b"\\r",
                        _ => continue,
                    };
                    buf.put_slice(&bytes[from..at]);
                    buf.put_slice(escaped);
                    from = at + 1;
                }
                buf.put_slice(&bytes[from..]);
            }
        }
    }
    buf.put_u8(b'\n');
}

/// The binary COPY header: signature, flags, header extension length.
pub fn copy_header(buf: &mut BytesMut) {
    buf.put_slice(b"PGCOPY\n\xff\r\n\0");
    buf.put_i32(0);
    buf.put_i32(0);
}

/// One row of binary COPY: field count, then each field as length + big-endian value (both
/// clients).
pub fn binary_row(buf: &mut BytesMut, r: &DataRow, with_id: bool) -> Result<(), String> {
    let int = |v: i64, col: &str| {
        i32::try_from(v).map_err(|_| {
            format!("{col} = {v} does not fit sysbench's INTEGER column: lower table_size")
        })
    };
    let id = int(r.id, "id")?;
    let k = int(r.k, "k")?;
    if with_id {
        buf.put_i16(4);
        buf.put_i32(4);
        buf.put_i32(id);
    } else {
        buf.put_i16(3);
    }
    buf.put_i32(4);
    buf.put_i32(k);
    buf.put_i32(r.c.len() as i32);
    buf.put_slice(r.c.as_bytes());
    buf.put_i32(r.pad.len() as i32);
    buf.put_slice(r.pad.as_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_marks_become_numbered_placeholders_outside_literals() {
        assert_eq!(
            numbered("SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?"),
            "SELECT c FROM sbtest1 WHERE id BETWEEN $1 AND $2"
        );
        assert_eq!(
            numbered("INSERT INTO t (id, k, c, pad) VALUES (?, ?, ?, ?)"),
            "INSERT INTO t (id, k, c, pad) VALUES ($1, $2, $3, $4)"
        );
        assert_eq!(
            numbered("SELECT '?', \"a?\" WHERE x=?"),
            "SELECT '?', \"a?\" WHERE x=$1"
        );
        // Comments and dollar quotes too: a quote in a comment hides nothing.
        assert_eq!(
            numbered("/* don't? */ SELECT $$?$$, ? -- why?\n, E'\\'?', ?"),
            "/* don't? */ SELECT $$?$$, $1 -- why?\n, E'\\'?', $2"
        );
    }

    #[test]
    fn captured_text_binds_to_integer_placeholders_and_floats_go_as_exact_text() {
        let mut out = BytesMut::new();
        put_param(P::Str(" 42"), &Type::INT4, &mut out).unwrap();
        assert_eq!(&out[..], &42i32.to_be_bytes());
        out.clear();
        put_param(P::Float(7.0), &Type::INT8, &mut out).unwrap();
        assert_eq!(&out[..], &7i64.to_be_bytes());
        let e = put_param(P::Float(2.5), &Type::INT4, &mut out).unwrap_err();
        assert!(
            e.contains("2.5 bound to a int4 placeholder is not an integer"),
            "{e}"
        );
        let e = put_param(P::Str("4.0"), &Type::INT2, &mut out).unwrap_err();
        assert!(e.contains("text `4.0`"), "{e}");
        for (p, want) in [
            (P::Float(0.1), "0.1"),
            (P::Float(1e20), "100000000000000000000"),
            (P::Float(f64::NAN), "NaN"),
            (P::Float(f64::NEG_INFINITY), "-Infinity"),
            (P::Int(-3), "-3"),
            (P::Str("2024-01-01"), "2024-01-01"),
        ] {
            out.clear();
            put_text(p, &mut out);
            assert_eq!(&out[..], want.as_bytes());
        }
    }

    #[test]
    fn text_copy_rows_escape_backslash_tab_newline_and_write_null() {
        let mut buf = BytesMut::new();
        let cells = [
            Cell::Int(-7),
            Cell::Null,
            Cell::Float(2.5),
            Cell::Text("a\tb\nc\\d\re'f\"".into()),
            Cell::Text(String::new()),
        ];
        text_row(&mut buf, &cells);
        assert_eq!(
            &buf[..],
            b"-7\t\\N\t2.5\ta\\tb\\nc\\\\d\\re'f\"\t\n".as_slice()
        );
        assert_eq!(
            copy_text_sql("t", &["a".into(), "b".into()]),
            "COPY t (a, b) FROM STDIN"
        );
    }

    #[test]
    fn binary_copy_rows_have_sysbench_columns() {
        let mut buf = BytesMut::new();
        let row = DataRow {
            id: 1,
            k: 2,
            c: "c".into(),
            pad: "pp".into(),
        };
        binary_row(&mut buf, &row, true).unwrap();
        assert_eq!(buf.len(), 2 + 8 + 8 + 5 + 6);
        buf.clear();
        binary_row(&mut buf, &row, false).unwrap();
        assert_eq!(&buf[..2], &[0, 3]);
    }
}
