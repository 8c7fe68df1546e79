//! `execute_fetch` / `query_fetch` and the `Float` / `Null` parameters of every client against
//! the real servers (custom workloads' `capture` and `expect_rows`): MariaDB through the wire
//! client and mysql_async, PostgreSQL through the wire client and tokio-postgres, SQLite.
//!
//! Each client reads a table with a column of each common type through a prepared SELECT
//! (the binary protocol for MySQL and tokio-postgres) and must return the exact text the
//! server writes for it: the test compares with hard-coded values and with the text
//! protocol's answer to the same query (`query_fetch`), so a decoder and the server agree on
//! every value. Tables are `sbs_db_*`, one set per client, dropped afterwards. Run under
//! `flock /tmp/sbsuite-tests.lock`.
//!
//! And `ps_mode = disable`'s literals, as a property: any text written into `SELECT ?` comes
//! back unchanged (and equal to the prepared statement's answer) on MariaDB with and without
//! `NO_BACKSLASH_ESCAPES`, PostgreSQL with `standard_conforming_strings` on and off, SQLite.

use crate::common;
use common::db::listening as server;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use sbsuite::db::sql_text::{self, Strings, Syntax};
use sbsuite::db::target::{RawTarget, Target};
use sbsuite::db::{Connection, Fetched, P, RowSink};

fn target(driver: &str, extra: &str) -> Target {
    let raw: RawTarget = toml::from_str(&format!("driver = \"{driver}\"\n{extra}")).unwrap();
    Target::from_raw(&raw).unwrap()
}

fn mysql_target() -> Target {
    target(
        "mysql",
        "hosts = [\"127.0.0.1:3306\"]\nuser = \"root\"\ndatabase = \"test\"\nssl = \"disabled\"",
    )
}

fn pgsql_target() -> Target {
    target(
        "pgsql",
        "hosts = [\"127.0.0.1:5432\"]\nuser = \"postgres\"\ndatabase = \"test\"\nssl = \"disabled\"",
    )
}

fn mysql_client(async_client: bool) -> Box<dyn Connection> {
    let t = mysql_target();
    if async_client {
        sbsuite::db::mysql::async_client::open_async(&t, 0).unwrap()
    } else {
        match sbsuite::db::mysql::wire::open(&t, 0) {
            Ok(c) => c,
            Err(sbsuite::db::mysql::wire::WireError::Sql(e)) => panic!("{e}"),
            Err(sbsuite::db::mysql::wire::WireError::Unsupported(m)) => panic!("{m}"),
        }
    }
}

fn pgsql_client(tokio: bool) -> Box<dyn Connection> {
    let t = pgsql_target();
    if tokio {
        sbsuite::db::pgsql::tokio_client::open_tokio(&t, 0).unwrap()
    } else {
        match sbsuite::db::pgsql::wire::open(&t, 0) {
            Ok(c) => c,
            Err(sbsuite::db::pgsql::wire::WireError::Sql(e)) => panic!("{e}"),
            Err(sbsuite::db::pgsql::wire::WireError::Unsupported(m)) => panic!("{m}"),
        }
    }
}

/// Drops `tables` when the test ends, however it ends.
struct Drop_<'a> {
    conn: Box<dyn FnMut() -> Box<dyn Connection> + 'a>,
    tables: Vec<String>,
}

impl Drop for Drop_<'_> {
    fn drop(&mut self) {
        let mut c = (self.conn)();
        for t in &self.tables {
            let _ = c.query(&format!("DROP TABLE IF EXISTS {t}"));
        }
    }
}

/// `stmt`'s first row through `execute_fetch` (`first`), as (column, value) pairs.
fn fetch_first(c: &mut dyn Connection, stmt: usize, params: &[P<'_>]) -> Fetched {
    let mut out = Fetched::default();
    let done = c.execute_fetch(stmt, params, true, &mut out).unwrap();
    assert!(done.rows);
    out
}

/// Asserts that `got`'s first row holds `want` (column name → text; `None`: NULL) and that
/// the text protocol's answer to `text_sql` is the same row.
fn check_row(
    c: &mut dyn Connection,
    what: &str,
    got: &Fetched,
    want: &[(&str, Option<&str>)],
    text_sql: &str,
) {
    assert_eq!(got.rows, 1, "{what}");
    assert_eq!(got.columns.len(), got.first.len(), "{what}");
    for (col, v) in want {
        let i = got
            .columns
            .iter()
            .position(|c| c == col)
            .unwrap_or_else(|| panic!("{what}: no column {col} in {:?}", got.columns));
        assert_eq!(got.first[i].as_deref(), *v, "{what}: column {col}");
        assert_eq!(got.value(col), *v, "{what}: value({col})");
    }
    let mut text = Fetched::default();
    let done = c.query_fetch(text_sql, true, &mut text).unwrap();
    assert!(done.rows);
    assert_eq!(text.rows, 1, "{what}: {text_sql}");
    assert_eq!(text.columns, got.columns, "{what}: text protocol's columns");
    assert_eq!(text.first, got.first, "{what}: text protocol's row");
}

/// Row counts of a many-row result, an empty one, `first = false` and a write.
fn check_counts(c: &mut dyn Connection, what: &str, many: &str, table: &str) {
    let mut out = Fetched::default();
    let s = c.prepare(many).unwrap();
    c.execute_fetch(s, &[P::Int(1500)], true, &mut out).unwrap();
    assert_eq!(out.rows, 1500, "{what}");
    assert_eq!(out.first.len(), 1, "{what}");
    assert_eq!(out.first[0].as_deref(), Some("1"), "{what}");
    c.execute_fetch(s, &[P::Int(0)], true, &mut out).unwrap();
    assert_eq!(out.rows, 0, "{what}: empty");
    assert_eq!(out.columns.len(), 1, "{what}: names without rows");
    assert!(out.first.is_empty(), "{what}: no row");
    c.execute_fetch(s, &[P::Int(20)], false, &mut out).unwrap();
    assert_eq!(out.rows, 20, "{what}: counted only");
    assert!(out.columns.is_empty() && out.first.is_empty(), "{what}");
    // The connection stays in step, and a plain execute still drains.
    let d = c.execute(s, &[P::Int(7)]).unwrap();
    assert!(d.rows);

    let upd = c
        .prepare(&format!("UPDATE {table} SET i = i WHERE id > ?"))
        .unwrap();
    let d = c
        .execute_fetch(upd, &[P::Int(-100)], true, &mut out)
        .unwrap();
    assert!(!d.rows, "{what}: a write");
    assert_eq!(out.rows, 0, "{what}: a write returns no rows");
    assert!(out.columns.is_empty());

    let mut q = Fetched::default();
    let text = many.replace('?', "3");
    c.query_fetch(&text, true, &mut q).unwrap();
    assert_eq!((q.rows, q.first.len()), (3, 1), "{what}: text");
    c.query_fetch(&text, false, &mut q).unwrap();
    assert_eq!(q.rows, 3, "{what}: text, counted only");
    assert!(q.columns.is_empty());
}

// ---------------------------------------------------------------------------------------------
// MariaDB

fn mysql_types(async_client: bool) {
    let what = if async_client {
        "mysql_async"
    } else {
        "mysql wire"
    };
    let name = if async_client { "async" } else { "wire" };
    let types = format!("sbs_db_types_{name}");
    let binds = format!("sbs_db_binds_{name}");
    let floats = format!("sbs_db_floats_{name}");
    let _guard = Drop_ {
        conn: Box::new(move || mysql_client(async_client)),
        tables: vec![types.clone(), binds.clone(), floats.clone()],
    };
    let mut c = mysql_client(async_client);
    let c = c.as_mut();
    for t in [&types, &binds, &floats] {
        c.query(&format!("DROP TABLE IF EXISTS {t}")).unwrap();
    }
    c.query(&format!(
        "CREATE TABLE {types} (id INT PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT, \
         su SMALLINT UNSIGNED, mi MEDIUMINT, i INT, iu INT UNSIGNED, bi BIGINT, bu BIGINT UNSIGNED, \
         f FLOAT, d DOUBLE, d2 DOUBLE(10,2), de DECIMAL(12,3), de0 DECIMAL(20,0), vc VARCHAR(50), \
         ch CHAR(5), tx TEXT, bl BLOB, vb VARBINARY(10), dt DATE, dtm DATETIME, dtm3 DATETIME(3), \
         ts TIMESTAMP(6) NULL, tm TIME, tm6 TIME(6), yr YEAR, bt BIT(10), en ENUM('a','bee'), \
         st SET('x','y'), zf INT(5) ZEROFILL, js JSON)"
    ))
    .unwrap();
    c.query(&format!(
        "INSERT INTO {types} VALUES (1, -128, 255, -32768, 65535, -8388608, -2147483648, \
         4294967295, -9223372036854775808, 18446744073709551615, 1.5, -0.1, 2.5, -123.450, \
         12345678901234567890, 'héllo', 'ab', 'long text', 'bytes', 'vb', '2024-02-29', \
         '2024-02-29 23:59:58', '2024-02-29 23:59:58.125', '2024-01-02 03:04:05.000006', \
         '-838:59:59', '12:00:00.5', 2024, b'101', 'bee', 'x,y', 42, '{{\"a\": 1}}')"
    ))
    .unwrap();
    c.query(&format!(
        "INSERT INTO {types} (id, ti, yr, dt, dtm, tm, d) VALUES (2, 127, 1999, '0000-00-00', \
         '0000-00-00 00:00:00', '00:00:00', 1e300)"
    ))
    .unwrap();
    let all = format!("SELECT * FROM {types} WHERE id = ?");
    let sel = c.prepare(&all).unwrap();
    let got = fetch_first(c, sel, &[P::Int(1)]);
    check_row(
        c,
        &format!("{what} row 1"),
        &got,
        &[
            ("id", Some("1")),
            ("ti", Some("-128")),
            ("tu", Some("255")),
            ("si", Some("-32768")),
            ("su", Some("65535")),
            ("mi", Some("-8388608")),
            ("i", Some("-2147483648")),
            ("iu", Some("4294967295")),
            ("bi", Some("-9223372036854775808")),
            ("bu", Some("18446744073709551615")),
            ("f", Some("1.5")),
            ("d", Some("-0.1")),
            ("d2", Some("2.50")),
            ("de", Some("-123.450")),
            ("de0", Some("12345678901234567890")),
            ("vc", Some("héllo")),
            ("ch", Some("ab")),
            ("tx", Some("long text")),
            ("bl", Some("bytes")),
            ("vb", Some("vb")),
            ("dt", Some("2024-02-29")),
            ("dtm", Some("2024-02-29 23:59:58")),
            ("dtm3", Some("2024-02-29 23:59:58.125")),
            ("ts", Some("2024-01-02 03:04:05.000006")),
            ("tm", Some("-838:59:59")),
            ("tm6", Some("12:00:00.500000")),
            ("yr", Some("2024")),
            ("bt", Some("5")),
            ("en", Some("bee")),
            ("st", Some("x,y")),
            ("zf", Some("00042")),
            ("js", Some("{\"a\": 1}")),
        ],
        &all.replace('?', "1"),
    );
    let got = fetch_first(c, sel, &[P::Int(2)]);
    check_row(
        c,
        &format!("{what} row 2"),
        &got,
        &[
            ("ti", Some("127")),
            ("tu", None),
            ("bu", None),
            ("de", None),
            ("vc", None),
            ("bl", None),
            ("yr", Some("1999")),
            ("dt", Some("0000-00-00")),
            ("dtm", Some("0000-00-00 00:00:00")),
            ("tm", Some("00:00:00")),
            ("d", Some("1e300")),
            ("bt", None),
            ("js", None),
        ],
        &all.replace('?', "2"),
    );
    // Floats in both notations: the binary protocol's numbers written as the server writes
    // them.
    c.query(&format!(
        "CREATE TABLE {floats} (id INT PRIMARY KEY, d DOUBLE, f FLOAT)"
    ))
    .unwrap();
    let values = [
        "0.1",
        "-2.5",
        "1e14",
        "1e15",
        "123456789012345678",
        "0.00001",
        "1e-15",
        "1e-16",
        "1/3",
        "1234567",
        "3.14159265",
        "1e20",
        "1e-30",
        "0",
    ];
    for (n, v) in values.iter().enumerate() {
        c.query(&format!("INSERT INTO {floats} VALUES ({n}, {v}, {v})"))
            .unwrap();
    }
    let fsel = format!("SELECT d, f FROM {floats} WHERE id = ?");
    let fs = c.prepare(&fsel).unwrap();
    for (n, v) in values.iter().enumerate() {
        let got = fetch_first(c, fs, &[P::Int(n as i64)]);
        let mut text = Fetched::default();
        c.query_fetch(&fsel.replace('?', &n.to_string()), true, &mut text)
            .unwrap();
        assert_eq!(got.first, text.first, "{what}: {v}");
    }

    // Binds: every parameter kind into matching and converting columns, read back.
    c.query(&format!(
        "CREATE TABLE {binds} (id INT PRIMARY KEY, i BIGINT, s VARCHAR(20), f DOUBLE, \
         n DECIMAL(10,2), r INT, d DATE, z VARCHAR(5))"
    ))
    .unwrap();
    let ins = c
        .prepare(&format!(
            "INSERT INTO {binds} VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        ))
        .unwrap();
    let params = [
        P::Int(1),
        P::Int(-9_000_000_000),
        P::Str("it's"),
        P::Float(0.1),
        P::Float(12.34),
        P::Float(7.0),
        P::Str("2024-03-01"),
        P::Null,
    ];
    assert_eq!(c.execute(ins, &params).unwrap().affected, 1);
    let nulls = [
        P::Int(2),
        P::Null,
        P::Null,
        P::Null,
        P::Null,
        P::Null,
        P::Null,
        P::Null,
    ];
    let mut out = Fetched::default();
    assert_eq!(
        c.execute_fetch(ins, &nulls, true, &mut out)
            .unwrap()
            .affected,
        1
    );
    // Text into numeric columns, a float into an INT (the server rounds).
    let strs = [
        P::Str("3"),
        P::Str("42"),
        P::Int(5),
        P::Str("2.5"),
        P::Str("-0.5"),
        P::Float(2.6),
        P::Null,
        P::Str("z"),
    ];
    c.execute(ins, &strs).unwrap();
    let bsel = c
        .prepare(&format!("SELECT * FROM {binds} WHERE id = ?"))
        .unwrap();
    let row = |c: &mut dyn Connection, id| fetch_first(c, bsel, &[P::Int(id)]).first;
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        row(c, 1),
        [
            s("1"),
            s("-9000000000"),
            s("it's"),
            s("0.1"),
            s("12.34"),
            s("7"),
            s("2024-03-01"),
            None
        ],
        "{what}"
    );
    assert_eq!(
        row(c, 2),
        [s("2"), None, None, None, None, None, None, None],
        "{what}"
    );
    assert_eq!(
        row(c, 3),
        [
            s("3"),
            s("42"),
            s("5"),
            s("2.5"),
            s("-0.50"),
            s("3"),
            None,
            s("z")
        ],
        "{what}"
    );
    // NULL compared with `=` matches nothing; a NULL bound to IS NULL's partner does.
    let by_null = c
        .prepare(&format!("SELECT id FROM {binds} WHERE i <=> ?"))
        .unwrap();
    c.execute_fetch(by_null, &[P::Null], true, &mut out)
        .unwrap();
    assert_eq!((out.rows, out.value("id")), (1, Some("2")), "{what}");
    let by_float = c
        .prepare(&format!("SELECT id FROM {binds} WHERE f = ?"))
        .unwrap();
    c.execute_fetch(by_float, &[P::Float(0.1)], true, &mut out)
        .unwrap();
    assert_eq!(out.value("id"), Some("1"), "{what}");

    check_counts(
        c,
        what,
        "SELECT seq FROM seq_1_to_100000 WHERE seq <= ?",
        &types,
    );
    // A statement of several results (text): the first result set's rows.
    let mut q = Fetched::default();
    c.query_fetch("SELECT 1 UNION SELECT 2; SELECT 3", true, &mut q)
        .unwrap();
    assert_eq!((q.rows, q.first.clone()), (2, vec![s("1")]), "{what}");
    let e = c.query_fetch("SELECT * FROM sbs_db_missing", true, &mut q);
    assert_eq!(e.unwrap_err().code, "1146");
    c.query_fetch("SELECT 5", true, &mut q).unwrap();
    assert_eq!(q.first, [s("5")], "{what}: in step after an error");
}

#[test]
fn mysql_wire_fetches_every_type_as_text() {
    if !server("127.0.0.1:3306", "MariaDB") {
        return;
    }
    mysql_types(false);
}

#[test]
fn mysql_async_fetches_every_type_as_text() {
    if !server("127.0.0.1:3306", "MariaDB") {
        return;
    }
    mysql_types(true);
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL

fn pgsql_types(tokio: bool) {
    let what = if tokio {
        "tokio-postgres"
    } else {
        "pgsql wire"
    };
    let name = if tokio { "tokio" } else { "wire" };
    let types = format!("sbs_db_types_{name}");
    let binds = format!("sbs_db_binds_{name}");
    let _guard = Drop_ {
        conn: Box::new(move || pgsql_client(tokio)),
        tables: vec![types.clone(), binds.clone()],
    };
    let mut c = pgsql_client(tokio);
    let c = c.as_mut();
    for t in [&types, &binds] {
        c.query(&format!("DROP TABLE IF EXISTS {t}")).unwrap();
    }
    c.query(&format!(
        "CREATE TABLE {types} (id INT PRIMARY KEY, sm SMALLINT, i INT, bi BIGINT, r REAL, \
         d DOUBLE PRECISION, n NUMERIC(12,3), nn NUMERIC, b BOOLEAN, vc VARCHAR(50), ch CHAR(5), \
         tx TEXT, dt DATE, ts TIMESTAMP, ts3 TIMESTAMP(3), tm TIME, by BYTEA, u UUID, js JSONB, \
         j JSON, o OID)"
    ))
    .unwrap();
    c.query(&format!(
        "INSERT INTO {types} VALUES (1, -32768, -2147483648, -9223372036854775808, 1.5, -0.1, \
         -123.450, 0.000012345678901234567890, true, 'héllo', 'ab', 'long', '2024-02-29', \
         '2024-02-29 23:59:58.125', '1999-12-31 23:59:59.9995', '12:00:00.5', '\\x0aff', \
         'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{{\"a\": [1, 2]}}', '{{\"b\":  1}}', 4000000000)"
    ))
    .unwrap();
    c.query(&format!(
        "INSERT INTO {types} (id, d, nn, dt, b, r) VALUES (2, 1e300, 'NaN', '0044-03-15 BC', \
         false, 1234567)"
    ))
    .unwrap();
    c.query(&format!(
        "INSERT INTO {types} (id, d, nn, dt, ts) VALUES (3, 1e-5, 100000000, 'infinity', \
         '0001-01-01 00:00:00')"
    ))
    .unwrap();
    let all = format!("SELECT * FROM {types} WHERE id = ?");
    let sel = c.prepare(&all).unwrap();
    let got = fetch_first(c, sel, &[P::Int(1)]);
    check_row(
        c,
        &format!("{what} row 1"),
        &got,
        &[
            ("sm", Some("-32768")),
            ("i", Some("-2147483648")),
            ("bi", Some("-9223372036854775808")),
            ("r", Some("1.5")),
            ("d", Some("-0.1")),
            ("n", Some("-123.450")),
            ("nn", Some("0.000012345678901234567890")),
            ("b", Some("t")),
            ("vc", Some("héllo")),
            ("ch", Some("ab   ")),
            ("tx", Some("long")),
            ("dt", Some("2024-02-29")),
            ("ts", Some("2024-02-29 23:59:58.125")),
            ("ts3", Some("1999-12-31 23:59:59.999")),
            ("tm", Some("12:00:00.5")),
            ("by", Some("\\x0aff")),
            ("u", Some("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")),
            ("js", Some("{\"a\": [1, 2]}")),
            ("j", Some("{\"b\":  1}")),
            ("o", Some("4000000000")),
        ],
        &all.replace('?', "1"),
    );
    let got = fetch_first(c, sel, &[P::Int(2)]);
    check_row(
        c,
        &format!("{what} row 2"),
        &got,
        &[
            ("d", Some("1e+300")),
            ("nn", Some("NaN")),
            ("dt", Some("0044-03-15 BC")),
            ("b", Some("f")),
            ("r", Some("1.234567e+06")),
            ("sm", None),
            ("ts", None),
        ],
        &all.replace('?', "2"),
    );
    let got = fetch_first(c, sel, &[P::Int(3)]);
    check_row(
        c,
        &format!("{what} row 3"),
        &got,
        &[
            ("d", Some("1e-05")),
            ("nn", Some("100000000")),
            ("dt", Some("infinity")),
            ("ts", Some("0001-01-01 00:00:00")),
        ],
        &all.replace('?', "3"),
    );
    // A type neither side converts the same way: the wire client hands on the server's
    // text; tokio-postgres names the type.
    let iv = c.prepare("SELECT INTERVAL '1 day' AS iv").unwrap();
    let mut out = Fetched::default();
    match c.execute_fetch(iv, &[], true, &mut out) {
        Ok(_) if !tokio => assert_eq!(out.value("iv"), Some("1 day")),
        Ok(_) => panic!("tokio-postgres read an interval"),
        Err(e) => {
            assert!(tokio, "{e}");
            assert!(
                e.message.contains("column `iv`: values of type interval"),
                "{e}"
            );
        }
    }
    c.query_fetch("SELECT 1", true, &mut out).unwrap();
    assert_eq!(out.first, [Some("1".to_string())], "{what}: in step");

    // Binds: every parameter kind into matching and converting placeholders, read back.
    c.query(&format!(
        "CREATE TABLE {binds} (id INT PRIMARY KEY, i BIGINT, s VARCHAR(20), f DOUBLE PRECISION, \
         n NUMERIC(10,2), r INT, d DATE, z VARCHAR(5), re REAL, ts TIMESTAMP, b BOOLEAN)"
    ))
    .unwrap();
    let ins = c
        .prepare(&format!(
            "INSERT INTO {binds} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        ))
        .unwrap();
    let params = [
        P::Int(1),
        P::Int(-9_000_000_000),
        P::Str("it's"),
        P::Float(0.1),
        P::Float(12.34),
        P::Float(7.0),
        P::Str("2024-03-01"),
        P::Null,
        P::Float(2.5),
        P::Str("2024-03-01 10:11:12"),
        P::Int(1),
    ];
    assert_eq!(c.execute(ins, &params).unwrap().affected, 1);
    let mut nulls = vec![P::Int(2)];
    nulls.extend([P::Null; 10]);
    assert_eq!(
        c.execute_fetch(ins, &nulls, true, &mut out)
            .unwrap()
            .affected,
        1
    );
    // Text into integer and numeric placeholders (captured values are text).
    let strs = [
        P::Str("3"),
        P::Str(" 42"),
        P::Int(5),
        P::Str("2.5"),
        P::Str("-0.5"),
        P::Str("8"),
        P::Null,
        P::Str("z"),
        P::Int(3),
        P::Null,
        P::Str("false"),
    ];
    c.execute(ins, &strs).unwrap();
    let bsel = c
        .prepare(&format!("SELECT * FROM {binds} WHERE id = ?"))
        .unwrap();
    let row = |c: &mut dyn Connection, id: &str| fetch_first(c, bsel, &[P::Str(id)]).first;
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        row(c, "1"),
        [
            s("1"),
            s("-9000000000"),
            s("it's"),
            s("0.1"),
            s("12.34"),
            s("7"),
            s("2024-03-01"),
            None,
            s("2.5"),
            s("2024-03-01 10:11:12"),
            s("t")
        ],
        "{what}"
    );
    assert_eq!(row(c, "2")[0], s("2"), "{what}");
    assert!(row(c, "2")[1..].iter().all(Option::is_none), "{what}");
    assert_eq!(
        row(c, "3"),
        [
            s("3"),
            s("42"),
            s("5"),
            s("2.5"),
            s("-0.50"),
            s("8"),
            None,
            s("z"),
            s("3"),
            None,
            s("f")
        ],
        "{what}"
    );
    // A float with a fraction or a word into an integer placeholder: a clear error, and the
    // connection stays usable.
    let e = c.execute(bsel, &[P::Float(2.5)]).unwrap_err();
    assert!(
        e.message
            .contains("2.5 bound to a int4 placeholder is not an integer"),
        "{e}"
    );
    let e = c.execute(bsel, &[P::Str("x1")]).unwrap_err();
    assert!(
        e.message.contains("text `x1` bound to a int4 placeholder"),
        "{e}"
    );
    let by_float = c
        .prepare(&format!("SELECT id FROM {binds} WHERE f = ? AND n = ?"))
        .unwrap();
    c.execute_fetch(by_float, &[P::Float(0.1), P::Float(12.34)], true, &mut out)
        .unwrap();
    assert_eq!((out.rows, out.value("id")), (1, Some("1")), "{what}");
    let by_null = c
        .prepare(&format!(
            "SELECT id FROM {binds} WHERE i IS NOT DISTINCT FROM ?"
        ))
        .unwrap();
    c.execute_fetch(by_null, &[P::Null], true, &mut out)
        .unwrap();
    assert_eq!((out.rows, out.value("id")), (1, Some("2")), "{what}");

    check_counts(
        c,
        what,
        "SELECT g FROM generate_series(1, 100000) g WHERE g <= ?",
        &types,
    );
    let mut q = Fetched::default();
    // A text query of several: the first result set's rows and names.
    c.query_fetch(
        "BEGIN; SELECT 1 AS a UNION SELECT 2; SELECT 3 AS b; COMMIT",
        true,
        &mut q,
    )
    .unwrap();
    assert_eq!(
        (q.rows, q.columns.clone(), q.first.clone()),
        (2, vec!["a".to_string()], vec![s("1")]),
        "{what}"
    );
    let e = c.query_fetch("SELECT * FROM sbs_db_missing", true, &mut q);
    assert_eq!(e.unwrap_err().code, "42P01");
    c.query_fetch("SELECT 5 AS five", true, &mut q).unwrap();
    assert_eq!(
        (q.columns.clone(), q.first.clone()),
        (vec!["five".to_string()], vec![s("5")]),
        "{what}: in step after an error"
    );
}

#[test]
fn pgsql_wire_fetches_every_type_as_text() {
    if !server("127.0.0.1:5432", "PostgreSQL") {
        return;
    }
    pgsql_types(false);
}

#[test]
fn pgsql_tokio_fetches_every_type_as_text() {
    if !server("127.0.0.1:5432", "PostgreSQL") {
        return;
    }
    pgsql_types(true);
}

// ---------------------------------------------------------------------------------------------
// SQLite and the dry run

#[test]
fn sqlite_fetches_values_as_its_own_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fetch.db");
    let t = target("sqlite", &format!("path = {:?}", path.to_str().unwrap()));
    let mut c = sbsuite::db::sqlite::open(&t).unwrap();
    let c = c.as_mut();
    c.query("CREATE TABLE sbs_db_types (id INTEGER PRIMARY KEY, i INTEGER, r REAL, t TEXT, b BLOB, n NUMERIC)")
        .unwrap();
    let ins = c
        .prepare("INSERT INTO sbs_db_types VALUES (?, ?, ?, ?, ?, ?)")
        .unwrap();
    let reals = [
        0.1,
        -2.5,
        1.0,
        1e15,
        1e20,
        0.0001,
        0.00001,
        1.0 / 3.0,
        123456.789,
        0.0,
        -1e-300,
    ];
    for (n, r) in reals.iter().enumerate() {
        c.execute(
            ins,
            &[
                P::Int(n as i64),
                P::Int(i64::MIN + n as i64),
                P::Float(*r),
                P::Str("héllo"),
                P::Str("b"),
                P::Str("12.50"),
            ],
        )
        .unwrap();
    }
    c.execute(
        ins,
        &[P::Int(100), P::Null, P::Null, P::Null, P::Null, P::Null],
    )
    .unwrap();
    let sel = c
        .prepare("SELECT i, r, t, b, n FROM sbs_db_types WHERE id = ?")
        .unwrap();
    let cast = c
        .prepare("SELECT CAST(i AS TEXT), CAST(r AS TEXT), t, CAST(b AS TEXT), CAST(n AS TEXT) FROM sbs_db_types WHERE id = ?")
        .unwrap();
    for n in 0..reals.len() as i64 {
        let got = fetch_first(c, sel, &[P::Int(n)]);
        let want = fetch_first(c, cast, &[P::Int(n)]);
        assert_eq!(got.first, want.first, "row {n}");
        assert_eq!(got.columns, ["i", "r", "t", "b", "n"]);
    }
    let got = fetch_first(c, sel, &[P::Int(0)]);
    assert_eq!(got.value("r"), Some("0.1"));
    assert_eq!(got.value("n"), Some("12.5"));
    assert_eq!(got.value("i"), Some("-9223372036854775808"));
    let got = fetch_first(c, sel, &[P::Int(100)]);
    assert_eq!(got.first, [None, None, None, None, None]);

    let mut out = Fetched::default();
    let many = c
        .prepare("WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < ?) SELECT x FROM s")
        .unwrap();
    c.execute_fetch(many, &[P::Int(1500)], true, &mut out)
        .unwrap();
    assert_eq!((out.rows, out.value("x")), (1500, Some("1")));
    let empty = c
        .prepare("SELECT id FROM sbs_db_types WHERE id > ?")
        .unwrap();
    c.execute_fetch(empty, &[P::Int(1000)], true, &mut out)
        .unwrap();
    assert_eq!((out.rows, out.columns.len(), out.first.len()), (0, 1, 0));
    c.execute_fetch(empty, &[P::Int(-1)], false, &mut out)
        .unwrap();
    assert_eq!(out.rows, reals.len() as u64 + 1);
    assert!(out.columns.is_empty());
    let upd = c
        .prepare("UPDATE sbs_db_types SET i = ? WHERE id < 3")
        .unwrap();
    let d = c
        .execute_fetch(upd, &[P::Float(2.0)], true, &mut out)
        .unwrap();
    assert_eq!((d.rows, d.affected, out.rows), (false, 3, 0));
    c.query_fetch("SELECT count(*) AS n FROM sbs_db_types", true, &mut out)
        .unwrap();
    assert_eq!((out.rows, out.value("n")), (1, Some("12")));
    c.query("DROP TABLE sbs_db_types").unwrap();
}

#[test]
fn dry_run_fetches_one_row_without_columns() {
    let mut c = sbsuite::db::dry_run::DryRun::default();
    let s = c.prepare("SELECT x FROM t WHERE id = ?").unwrap();
    let mut out = Fetched::default();
    c.execute_fetch(s, &[P::Null], true, &mut out).unwrap();
    assert_eq!((out.rows, out.columns.len(), out.value("x")), (1, 0, None));
    c.query_fetch("SELECT 1", true, &mut out).unwrap();
    assert_eq!(out.rows, 1);
}

// ---------------------------------------------------------------------------------------------
// ps_mode = "disable": any text bound as a literal comes back unchanged (#26)

/// Text that meets every quoting rule: quotes, backslashes, NULs, comment, dollar and
/// placeholder characters, line ends, multi-byte characters; and any other character.
fn text_strategy() -> impl Strategy<Value = String> {
    let special = vec![
        '\'', '\\', '\0', '"', '`', '$', '-', '#', '/', '*', '?', ':', '\n', '\r', '\x1a', '%',
        '_', 'E', 'é', '€', '😀',
    ];
    let ch = prop_oneof![
        3 => proptest::sample::select(special),
        1 => any::<char>(),
    ];
    proptest::collection::vec(ch, 0..24).prop_map(|v| v.into_iter().collect())
}

/// `text` bound into `SELECT ?` (behind a comment holding a quote) as `ps_mode = disable`
/// writes it, and as a prepared statement binds it: both give `text` back, or, for a NUL on
/// PostgreSQL (text cannot hold one), both fail with the server's 22021.
fn round_trip(
    c: &mut dyn Connection,
    syntax: &'static Syntax,
    stmt: usize,
    text: &str,
) -> Result<(), TestCaseError> {
    let template = "SELECT /* it's */ ? AS v -- it's";
    let mut sql = String::new();
    sql_text::substitute(template, &[P::Str(text)], syntax, &mut sql);
    let mut out = Fetched::default();
    let literal = c
        .query_fetch(&sql, true, &mut out)
        .map(|_| out.first.clone());
    let bound = c
        .execute_fetch(stmt, &[P::Str(text)], true, &mut out)
        .map(|_| out.first.clone());
    if syntax.strings == Strings::Escape && text.contains('\0') {
        let code = |r: &Result<Vec<Option<String>>, sbsuite::db::SqlError>| {
            r.as_ref().err().map(|e| e.code.clone()).unwrap_or_default()
        };
        prop_assert_eq!(code(&literal), "22021", "{}", sql);
        prop_assert_eq!(code(&bound), "22021");
        return Ok(());
    }
    let literal = literal.map_err(|e| TestCaseError::fail(format!("{sql}: {e}")))?;
    prop_assert_eq!(literal, vec![Some(text.to_string())], "{}", sql);
    let bound = bound.map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(bound, vec![Some(text.to_string())]);
    Ok(())
}

/// Runs [`round_trip`] on `cases` generated texts (a fixed seed: CI is deterministic) and on
/// the values that once broke the substitution, after `setup` on the session.
fn literals_round_trip(mut c: Box<dyn Connection>, syntax: &'static Syntax, setup: &[&str]) {
    for sql in setup {
        c.query(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    let stmt = c.prepare("SELECT /* it's */ ? AS v -- it's").unwrap();
    let c = std::cell::RefCell::new(c);
    for text in [
        r"\'; CREATE TABLE sbs_pwned(x int); --",
        r"C:\",
        "it's",
        "",
        "\\\\'\\",
    ] {
        round_trip(c.borrow_mut().as_mut(), syntax, stmt, text)
            .unwrap_or_else(|e| panic!("{setup:?} {text:?}: {e}"));
    }
    let mut runner = TestRunner::new(Config {
        cases: 300,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(26),
        ..Config::default()
    });
    runner
        .run(&text_strategy(), |text| {
            round_trip(c.borrow_mut().as_mut(), syntax, stmt, &text)
        })
        .unwrap_or_else(|e| panic!("{setup:?}: {e}"));
}

#[test]
fn literals_round_trip_on_mariadb_in_both_sql_modes() {
    if !server("127.0.0.1:3306", "MySQL/MariaDB") {
        return;
    }
    let syntax = sbsuite::db::Driver::Mysql.dialect().syntax();
    for async_client in [false, true] {
        literals_round_trip(
            mysql_client(async_client),
            syntax,
            &["SET SESSION sql_mode = ''"],
        );
        let mut c = mysql_client(async_client);
        c.query("SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES'")
            .unwrap();
        let mut out = Fetched::default();
        c.query_fetch("SELECT @@SESSION.sql_mode", true, &mut out)
            .unwrap();
        assert_eq!(out.first, [Some("NO_BACKSLASH_ESCAPES".to_string())]);
        literals_round_trip(c, syntax, &[]);
    }
}

#[test]
fn literals_round_trip_on_postgresql_with_both_string_settings() {
    if !server("127.0.0.1:5432", "PostgreSQL") {
        return;
    }
    let syntax = sbsuite::db::Driver::Pgsql.dialect().syntax();
    for tokio in [false, true] {
        for scs in ["on", "off"] {
            literals_round_trip(
                pgsql_client(tokio),
                syntax,
                &[&format!("SET standard_conforming_strings = {scs}")],
            );
        }
    }
}

#[test]
fn literals_round_trip_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("literals.db");
    let t = target("sqlite", &format!("path = {:?}", path.to_str().unwrap()));
    let syntax = sbsuite::db::Driver::Sqlite.dialect().syntax();
    literals_round_trip(sbsuite::db::sqlite::open(&t).unwrap(), syntax, &[]);
}

// ---------------------------------------------------------------------------------------------
// query_each: scripts' result sets have no row bound; administrative queries keep theirs (#26)

/// Counts what [`Connection::query_each`] hands on, keeping nothing.
#[derive(Default)]
struct Count {
    columns: Vec<String>,
    rows: u64,
    values: u64,
    nulls: u64,
    bytes: u64,
    last: Vec<u8>,
}

impl RowSink for Count {
    fn columns(&mut self, names: &[String]) {
        self.columns = names.to_vec();
    }

    fn value(&mut self, value: Option<&[u8]>) {
        self.values += 1;
        match value {
            Some(v) => {
                self.bytes += v.len() as u64;
                self.last = v.to_vec();
            }
            None => self.nulls += 1,
        }
    }

    fn end_row(&mut self) -> bool {
        self.rows += 1;
        true
    }
}

/// 150,001 rows of `(n, NULL)` from `sql` through `query_each`, every one; the same query
/// through `query_table` fails at the bound of administrative queries.
fn each_row_of_a_big_result(mut c: Box<dyn Connection>, sql: &str) {
    let mut count = Count::default();
    let done = c.query_each(sql, &mut count).unwrap();
    assert!(done.rows);
    assert_eq!(count.columns, ["n", "z"]);
    assert_eq!(
        (count.rows, count.values, count.nulls),
        (150_001, 300_002, 150_001)
    );
    assert_eq!(count.last, b"150001");
    // 9 one-digit numbers, 90 of two digits, …, 50,002 of six.
    assert_eq!(count.bytes, 9 + 180 + 2700 + 36000 + 450_000 + 6 * 50_002);
    // A result without rows still has its columns.
    let mut count = Count::default();
    let done = c
        .query_each("SELECT 1 AS n WHERE 1 = 0", &mut count)
        .unwrap();
    assert_eq!(
        (done.rows, &count.columns[..], count.rows),
        (true, &["n".to_string()][..], 0)
    );
    // (The connection is dropped after this: the rest of the answer was not read.)
    let e = c.query_table(sql).unwrap_err();
    assert!(e.message.contains("more than 100000 rows"), "{e}");
}

#[test]
fn query_each_reads_every_row_of_every_client() {
    if server("127.0.0.1:3306", "MySQL/MariaDB") {
        for async_client in [false, true] {
            each_row_of_a_big_result(
                mysql_client(async_client),
                "SELECT seq AS n, NULL AS z FROM seq_1_to_150001",
            );
        }
    }
    if server("127.0.0.1:5432", "PostgreSQL") {
        for tokio in [false, true] {
            each_row_of_a_big_result(
                pgsql_client(tokio),
                "SELECT n, NULL AS z FROM generate_series(1, 150001) AS n",
            );
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let t = target(
        "sqlite",
        &format!("path = {:?}", dir.path().join("each.db").to_str().unwrap()),
    );
    each_row_of_a_big_result(
        sbsuite::db::sqlite::open(&t).unwrap(),
        "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 150001) SELECT n, NULL AS z FROM s",
    );
}
