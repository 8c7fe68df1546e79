//! `for_each_row`, `while`, `break_when` and `batch` (#31) compile into their ops, a batched
//! INSERT is cut around its row whatever its quotes hold, and each misuse is refused at its
//! line and key with a fix.

use std::path::Path;

use super::cut_row;
use crate::db::Driver;
use crate::engine::Catalog;
use crate::engine::custom::compile::tests::{def_of, error_at};
use crate::engine::custom::model::{Op, RowsShape};
use crate::source::ConfigErrors;

/// A driver by its `[target] driver` name.
fn drv(name: &str) -> Driver {
    name.parse().unwrap()
}

fn pg() -> Driver {
    drv("pgsql")
}

fn load(text: &str) -> Result<Catalog, ConfigErrors> {
    let table: toml::Table = toml::from_str(text).unwrap_or_else(|e| panic!("{e}"));
    Ok(super::super::load(Path::new("t.toml"), text, &table)?.catalog())
}

/// A suite declaring workload `flow` whose one transaction has `steps`.
fn suite(steps: &str) -> String {
    format!(
        r#"[suite]
name = "flow"

[defaults]
workload = "flow"
time = 1

[workloads.flow]
summary = "flow"
schema = ["CREATE TABLE t (a INT, b INT)"]

[workloads.flow.params]
n = {{ uniform = [1, 10] }}

[workloads.flow.transactions.go]
steps = [
{steps}
]
"#
    )
}

#[test]
fn loops_breaks_and_batches_compile_to_their_ops() {
    let text = suite(
        r#"  { while = "n > 0", limit = 50, index = "pass", steps = [
    { sql = "SELECT a, b AS bee FROM t WHERE a > :pass", capture = ["a", { b = "bee" }], for_each_row = [
      { break_when = "a > b" },
      { sql = "UPDATE t SET b = :b WHERE a = :a" },
    ] },
    { break_when = "pass > 3" },
  ] },
  { sql = "INSERT INTO t (a, b) VALUES (:k, :v)", batch = "n", index = "k", let = { v = { uniform = [1, 9] } } },"#,
    );
    let catalog = load(&text).unwrap_or_else(|e| panic!("{e}"));
    let d = def_of(&catalog, "flow");
    let body = &d.transactions[0].body;
    let Op::While {
        limit: 50,
        index: Some(_),
        body: inner,
        ..
    } = &body[0]
    else {
        panic!("{body:?}")
    };
    let Op::ForEach {
        stmt, body: rows, ..
    } = &inner[0]
    else {
        panic!("{inner:?}")
    };
    assert_eq!(d.statements[*stmt].capture.len(), 2);
    assert!(matches!(rows[0], Op::Break { .. }), "{rows:?}");
    assert!(matches!(rows[1], Op::Exec { .. }), "{rows:?}");
    assert!(matches!(inner[1], Op::Break { .. }), "{inner:?}");
    let Op::Batch {
        stmt,
        index,
        lets,
        shape,
        ..
    } = &body[1]
    else {
        panic!("{body:?}")
    };
    assert!(index.is_some());
    assert!(matches!(lets[..], [Op::Let { .. }]), "{lets:?}");
    let s = shape.get(pg()).unwrap();
    assert_eq!(s.prefix, "INSERT INTO t (a, b) VALUES ");
    assert_eq!(s.tuple, "(?, ?)");
    assert_eq!((s.before, s.per_row, s.suffix.as_str()), (0, 2, ""));
    assert_eq!(
        d.statements[*stmt]
            .sql
            .for_driver(pg())
            .unwrap()
            .binds
            .len(),
        2
    );
}

#[test]
fn a_batched_insert_is_cut_around_its_row_whatever_its_quotes_hold() {
    let s = cut_row(
        "INSERT INTO t (a, `b)`) VALUES (?, '(values ?)', f(?, 2)) ON DUPLICATE KEY UPDATE b = ?",
        drv("mysql"),
    )
    .unwrap();
    assert_eq!(s.prefix, "INSERT INTO t (a, `b)`) VALUES ");
    assert_eq!(s.tuple, "(?, '(values ?)', f(?, 2))");
    assert_eq!(s.suffix, " ON DUPLICATE KEY UPDATE b = ?");
    assert_eq!((s.before, s.per_row), (0, 2));
    let s = cut_row(
        "insert into t (a) select 1 where ? > 0 union all values (?) returning a",
        pg(),
    );
    assert!(s.unwrap_err().contains("SELECT"));
    let s = cut_row(
        "WITH x AS (SELECT ? AS v) INSERT INTO t (a) VALUES (?)",
        pg(),
    );
    assert!(s.unwrap_err().contains("not an INSERT"));
    let s = cut_row("REPLACE INTO t VALUES(?) RETURNING a", drv("sqlite")).unwrap();
    let mut text = String::new();
    s.text(3, &mut text);
    assert_eq!(text, "REPLACE INTO t VALUES(?), (?), (?) RETURNING a");
    let shape = RowsShape {
        prefix: "P ".into(),
        tuple: "(?)".into(),
        suffix: String::new(),
        before: 0,
        per_row: 1,
    };
    shape.text(1, &mut text);
    assert_eq!(text, "P (?)");
}

#[test]
fn misuse_is_refused_at_its_line() {
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            r#"  { break_when = "n > 1" },"#,
            "break_when",
            "break_when",
            "outside a loop",
        ),
        (
            r#"  { repeat = 2, steps = [{ when = "n > 1", steps = [{ break_when = "n > 2" }] }] },"#,
            "break_when",
            "break_when",
            "inside a `when` block",
        ),
        (
            r#"  { sql = "SELECT a FROM t", for_each_row = [{ sql = "SELECT 1" }] },"#,
            "for_each_row",
            "for_each_row",
            "without `capture`",
        ),
        (
            r#"  { sql = "SELECT a FROM t", capture = ["a"], for_each_row = [] },"#,
            "for_each_row",
            "for_each_row",
            "non-empty list",
        ),
        (
            r#"  { sql = "UPDATE t SET a = 1", batch = "n" },"#,
            "batch",
            "sql",
            "is a UPDATE, not an INSERT",
        ),
        (
            r#"  { sql = "INSERT INTO t (a) VALUES (1), (2)", batch = "n" },"#,
            "batch",
            "sql",
            "several rows",
        ),
        (
            r#"  { sql = "INSERT INTO t (a) VALUES (:v)", let = { v = 1 } },"#,
            "let = ",
            "let",
            "belongs to a `batch`",
        ),
        (
            r#"  { sql = "INSERT INTO t (a) VALUES (1) RETURNING a", batch = 2, capture = ["a"] },"#,
            "batch",
            "capture",
            "returns no rows",
        ),
        (
            r#"  { sql = "INSERT INTO t (a) VALUES (1)", batch = -1 },"#,
            "batch",
            "batch",
            "number of rows",
        ),
        (
            r#"  { while = "n > 1" },"#,
            "while",
            "steps[0]",
            "needs `steps`",
        ),
        (
            r#"  { while = "n > 1", limit = 0, steps = [{ sql = "SELECT 1" }] },"#,
            "while",
            "limit",
            "at least 1",
        ),
        (
            r#"  { while = "m > 1", steps = [{ sql = "SELECT 1" }] },"#,
            "while",
            "while",
            "`m`",
        ),
        (
            r#"  { while = "n > 1", step = [{ sql = "SELECT 1" }] },"#,
            "while",
            "step",
            "unknown key",
        ),
    ];
    for (steps, marker, key, message) in cases {
        let text = suite(steps);
        let errors = load(&text).expect_err(steps);
        error_at(&errors, &text, marker, key, message);
    }
}
