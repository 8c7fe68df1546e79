//! The loader against real databases: SQLite always, MariaDB and PostgreSQL when they run
//! locally (under `flock /tmp/sbsuite-tests.lock`, tables of their own, dropped after).

use std::sync::atomic::AtomicBool;

use super::*;
use crate::db::{SqlError, Target};
use crate::engine::custom::expr::Expr;
use crate::engine::custom::model::{
    Check, CheckExpect, Def, Frame, GenSpec, LoadTable, OptionDef, Sql, Val, VarKind, Vars,
};
use crate::engine::option::Kind;

/// The text every driver gets in column `t`: a tab, a newline, a backslash, both quotes, a
/// carriage return and a non-ASCII letter.
const TRICKY: &str = "a\tb\nc\\d'e\"f\rg é";

fn vars() -> Vars {
    let names = ["parents", "row", "child", "parent_row", "twice"];
    let kinds = [
        VarKind::Option,
        VarKind::Load,
        VarKind::Load,
        VarKind::Load,
        VarKind::Load,
    ];
    Vars {
        names: names.iter().map(|n| n.to_string()).collect(),
        kinds: kinds.to_vec(),
    }
}

fn e(text: &str) -> Expr {
    Expr::compile(text, &vars()).unwrap_or_else(|e| panic!("{e}"))
}

fn per_driver(mysql: &str, pgsql: &str, sqlite: &str) -> Sql {
    let mut sql = Sql::default();
    for (name, text) in [("mysql", mysql), ("pgsql", pgsql), ("sqlite", sqlite)] {
        sql.set(name.parse().unwrap(), text.to_string());
    }
    sql
}

/// A parent table `<p>_p` (`parents` rows) and a child table `<p>_c` (4 rows per parent, with
/// a foreign key to the parent), an `after_load` marker table, and checks that hold on the
/// loaded data.
fn def(p: &str) -> Def {
    let vars = vars();
    Def {
        name: format!("{p}_wl"),
        summary: "loader test".into(),
        source: "t.toml".into(),
        options: vec![OptionDef {
            name: "parents".into(),
            kind: Kind::Int {
                min: 1,
                max: 1_000_000,
            },
            default: Some("3".into()),
            dataset: true,
            help: "parent rows".into(),
        }],
        headline: None,
        prepare_threads: 0,
        schema: vec![
            per_driver(
                &format!(
                    "CREATE TABLE {p}_p (id INT PRIMARY KEY, name VARCHAR(20), seq INT, score DOUBLE)"
                ),
                &format!(
                    "CREATE TABLE {p}_p (id INT PRIMARY KEY, name VARCHAR(20), seq INT, score DOUBLE PRECISION)"
                ),
                &format!("CREATE TABLE {p}_p (id INT PRIMARY KEY, name TEXT, seq INT, score REAL)"),
            ),
            Sql::all(format!(
                "CREATE TABLE {p}_c (pid INT NOT NULL REFERENCES {p}_p(id), n INT, fkv INT, t VARCHAR(40), nul VARCHAR(10), twice BIGINT, f FLOAT)"
            )),
        ],
        after_load: vec![
            Sql::all(format!("CREATE TABLE {p}_done (v INT)")),
            Sql::all(format!("INSERT INTO {p}_done VALUES (1)")),
            per_driver("", "", ""),
        ],
        cleanup: vec![
            Sql::all(format!("DROP TABLE IF EXISTS {p}_done")),
            Sql::all(format!("DROP TABLE IF EXISTS {p}_c")),
            Sql::all(format!("DROP TABLE IF EXISTS {p}_p")),
        ],
        init: Vec::new(),
        load: vec![
            LoadTable {
                table: format!("{p}_p"),
                rows: e("parents"),
                parent: None,
                lets: Vec::new(),
                columns: vec![
                    ("id".into(), GenSpec::Expr(e("row"))),
                    ("name".into(), GenSpec::Pattern("@@-##".into())),
                    (
                        "seq".into(),
                        GenSpec::Sequence {
                            start: 100,
                            per_thread: false,
                        },
                    ),
                    (
                        "score".into(),
                        GenSpec::Float {
                            min: e("0"),
                            max: e("10"),
                            scale: 2,
                        },
                    ),
                ],
            },
            LoadTable {
                table: format!("{p}_c"),
                rows: e("4"),
                parent: Some(0),
                lets: vec![(4, GenSpec::Expr(e("row * 2")))],
                columns: vec![
                    ("pid".into(), GenSpec::Expr(e("parent_row"))),
                    ("n".into(), GenSpec::Expr(e("child"))),
                    ("fkv".into(), GenSpec::Fk(format!("{p}_p"))),
                    ("t".into(), GenSpec::Const(Val::Str(TRICKY.into()))),
                    ("nul".into(), GenSpec::Const(Val::Null)),
                    ("twice".into(), GenSpec::Expr(e("twice"))),
                    ("f".into(), GenSpec::Const(Val::Float(0.25))),
                ],
            },
        ],
        fresh_per_run: false,
        checks: vec![
            Check {
                name: "parents".into(),
                bound: None,
                sql: Sql::all(format!("SELECT count(*) FROM {p}_p")),
                expect: CheckExpect::Value(e("parents")),
            },
            Check {
                name: "four children each".into(),
                bound: None,
                sql: Sql::all(format!(
                    "SELECT pid FROM {p}_c GROUP BY pid HAVING count(*) <> 4"
                )),
                expect: CheckExpect::Rows(0),
            },
            Check {
                name: "sum of twice".into(),
                bound: None,
                sql: Sql::all(format!("SELECT sum(twice) FROM {p}_c")),
                expect: CheckExpect::Value(e("156.0")),
            },
        ],
        vars,
        params: Vec::new(),
        transactions: Vec::new(),
        statements: Vec::new(),
    }
}

fn options(parents: i64) -> Frame {
    Frame {
        vals: vec![Val::Int(parents)],
    }
}

struct Setup {
    def: &'static Def,
    target: Target,
    frame: Frame,
    rand: RandOptions,
}

impl Setup {
    fn new(def: Def, target: Target, parents: i64) -> Setup {
        Setup {
            def: Box::leak(Box::new(def)),
            target,
            frame: options(parents),
            rand: RandOptions {
                rand_type: "uniform".into(),
                ..RandOptions::default()
            },
        }
    }

    fn ctx(&self, seed: u64) -> LoadCtx<'_> {
        LoadCtx {
            def: self.def,
            target: &self.target,
            options: &self.frame,
            rand: &self.rand,
            seed,
        }
    }

    fn prepare(&self, seed: u64) -> Result<String, EngineError> {
        let mut out = Vec::new();
        prepare(&self.ctx(seed), &mut out, &AtomicBool::new(false))?;
        Ok(String::from_utf8(out).unwrap())
    }

    fn check(&self) -> Result<String, (String, EngineError)> {
        let mut out = Vec::new();
        let r = check(&self.ctx(1), &mut out, &AtomicBool::new(false));
        let text = String::from_utf8(out).unwrap();
        r.map(|()| text.clone()).map_err(|e| (text, e))
    }

    fn cleanup(&self) {
        cleanup(&self.ctx(1), &mut Vec::new()).unwrap();
    }

    fn conn(&self) -> Box<dyn Connection> {
        Connector::new(self.target.clone()).connect_at(0).unwrap()
    }
}

fn rows(conn: &mut dyn Connection, sql: &str) -> Vec<Vec<Option<String>>> {
    conn.query_rows(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn sqlite(dir: &std::path::Path, name: &str) -> Target {
    let path = dir.join(name).display().to_string();
    let raw: crate::db::RawTarget =
        toml::from_str(&format!("driver = \"sqlite\"\npath = {path:?}")).unwrap();
    Target::from_raw(&raw).unwrap()
}

#[test]
fn rows_multiply_through_parents_and_cycles_are_refused() {
    let d = def("x");
    assert_eq!(table_rows(&d, &options(3)).unwrap(), vec![3, 12]);
    assert_eq!(
        table_rows(&d, &options(50_000)).unwrap(),
        vec![50_000, 200_000]
    );
    let mut cyclic = def("x");
    cyclic.load[0].parent = Some(1);
    let err = table_rows(&cyclic, &options(3)).unwrap_err();
    assert!(err.contains("cycle"), "{err}");
    let mut negative = def("x");
    negative.load[0].rows = e("0 - parents");
    let err = table_rows(&negative, &options(3)).unwrap_err();
    assert!(err.contains("`0 - parents` is -3, not a count"), "{err}");
}

#[test]
fn rows_past_i64_are_refused_not_wrapped() {
    // 3·10¹⁸ parents × 4 per parent: more rows than `row` (an i64) can number.
    let mut big = def("x");
    big.load[0].rows = e("3000000000000000000");
    let err = table_rows(&big, &options(3)).unwrap_err();
    assert!(
        err.contains("3000000000000000000 parent rows × 4 per parent row is more than"),
        "{err}"
    );
    big.load[0].rows = e("parents * 1000000000000000000");
    let err = table_rows(&big, &options(10)).unwrap_err();
    assert!(err.contains("too large for a 64-bit integer"), "{err}");
}

/// The ranges a loader takes by number are the ones an eager list of every range held (the
/// list the loader made before #26): same tables, rows and generator streams, in order.
#[test]
fn ranges_by_number_are_the_eager_list() {
    let rows = [45_000u64, 0, 20_000, 1, 0];
    let tables = [0, 1, 2, 3, 4];
    let r = Ranges::new(&tables, |t| rows[t]);
    let mut eager = Vec::new();
    for &t in &tables {
        let (mut start, mut k) = (0, 0usize);
        while start < rows[t] {
            let end = (start + RANGE_ROWS).min(rows[t]);
            eager.push(Unit {
                table: t,
                start,
                end,
                stream: (1 << 40) | (t << 24) | k,
            });
            start = end;
            k += 1;
        }
    }
    let lazy: Vec<Unit> = (0..).map_while(|i| r.get(i)).collect();
    assert_eq!(lazy, eager);
    assert_eq!(r.count, 5);
    assert_eq!(r.get(5), None);
    assert_eq!(Ranges::new(&[], |_| 0).get(0), None);
}

/// A table of 10¹⁴ rows is 5·10⁹ ranges: taking any of them costs nothing up front, and the
/// streams of ranges past 2²⁴ stay distinct from the next table's.
#[test]
fn huge_tables_are_numbered_without_a_list() {
    let r = Ranges::new(&[0, 1], |t| if t == 0 { 100_000_000_000_000 } else { 7 });
    assert_eq!(r.count, 5_000_000_001);
    let last = r.get(4_999_999_999).unwrap();
    assert_eq!((last.table, last.end), (0, 100_000_000_000_000));
    assert_eq!(r.get(5_000_000_000).unwrap().table, 1);
    let past = r.get(1 << 24).unwrap();
    assert_ne!(past.stream, r.get(5_000_000_000).unwrap().stream);
    assert_ne!(past.stream, r.get(0).unwrap().stream);
}

#[test]
fn sqlite_prepare_loads_parents_children_sequences_and_checks_pass() {
    let dir = tempfile::tempdir().unwrap();
    let s = Setup::new(def("ld"), sqlite(dir.path(), "a.db"), 3);
    let text = s.prepare(7).unwrap();
    for line in [
        "Creating table 'ld_p'...",
        "Creating table 'ld_c'...",
        "Loading 3 rows into 'ld_p'...",
        "Loading 12 rows into 'ld_c'...",
        "Loaded 15 rows into 2 tables in ",
        "Creating table 'ld_done'...",
    ] {
        assert!(text.contains(line), "{line}: {text}");
    }
    let mut c = s.conn();
    assert_eq!(
        rows(c.as_mut(), "SELECT id, seq FROM ld_p ORDER BY id"),
        [["1", "100"], ["2", "101"], ["3", "102"]].map(|r| r.map(|v| Some(v.to_string())).to_vec())
    );
    // child runs 1..=4 within each parent, parent_row is the parent's row, `let` set `twice`.
    let children = rows(
        c.as_mut(),
        "SELECT pid, n, twice, t, nul, f FROM ld_c ORDER BY rowid",
    );
    assert_eq!(children.len(), 12);
    for (i, r) in children.iter().enumerate() {
        let want = [
            Some(((i / 4) + 1).to_string()),
            Some(((i % 4) + 1).to_string()),
            Some(((i + 1) * 2).to_string()),
            Some(TRICKY.to_string()),
            None,
            Some("0.25".to_string()),
        ];
        assert_eq!(r, &want.to_vec(), "row {i}");
    }
    // fk draws stay within the parent's rows; the float keeps its scale.
    assert_eq!(
        c.query_i64("SELECT count(*) FROM ld_c WHERE fkv BETWEEN 1 AND 3")
            .unwrap(),
        Some(12)
    );
    assert_eq!(
        c.query_i64(
            "SELECT count(*) FROM ld_p WHERE score >= 0 AND score <= 10 AND round(score, 2) = score"
        )
        .unwrap(),
        Some(3)
    );
    assert_eq!(c.query_i64("SELECT v FROM ld_done").unwrap(), Some(1));
    let text = s.check().unwrap();
    assert_eq!(
        text,
        "check 'parents': ok\ncheck 'four children each': ok\ncheck 'sum of twice': ok\n"
    );

    // A row corrupted by hand: every failing check is named with its SQL and values.
    c.query("DELETE FROM ld_c WHERE pid = 2 AND n = 3").unwrap();
    c.query("INSERT INTO ld_p (id, seq) VALUES (4, 0)").unwrap();
    let (text, err) = s.check().unwrap_err();
    assert!(
        text.contains("check 'parents': FAILED (expected 3, found '4')"),
        "{text}"
    );
    assert!(
        text.contains("check 'four children each': FAILED (expected 0 rows, found 1 rows)"),
        "{text}"
    );
    let err = err.to_string();
    assert!(
        err.contains("3 of 3 checks failed")
            && err.contains("check 'parents' failed: `SELECT count(*) FROM ld_p`: expected 3, found '4'")
            && err.contains("check 'four children each' failed: `SELECT pid FROM ld_c GROUP BY pid HAVING count(*) <> 4`: expected 0 rows, found 1 rows")
            && err.contains("check 'sum of twice' failed: `SELECT sum(twice) FROM ld_c`: expected 156, found '142'"),
        "{err}"
    );
    c.close();

    // Loading again onto the tables fails with the fix; cleanup drops them.
    let err = s.prepare(7).unwrap_err().to_string();
    assert!(
        err.contains("schema statement 1 failed") && err.contains("ld_p"),
        "{err}"
    );
    s.cleanup();
    let mut c = s.conn();
    assert_eq!(
        c.query_i64("SELECT count(*) FROM sqlite_master WHERE name LIKE 'ld_%'")
            .unwrap(),
        Some(0)
    );
    c.close();
}

#[test]
fn a_fixed_seed_loads_the_same_data_whatever_the_connections() {
    let dir = tempfile::tempdir().unwrap();
    let dump = |file: &str, seed: u64, threads: usize| {
        let mut d = def("sd");
        d.prepare_threads = threads;
        let s = Setup::new(d, sqlite(dir.path(), file), 24_000);
        s.prepare(seed).unwrap();
        let mut c = s.conn();
        let p = rows(
            c.as_mut(),
            "SELECT id, name, seq, score FROM sd_p ORDER BY id",
        );
        let ch = rows(c.as_mut(), "SELECT pid, n, fkv FROM sd_c ORDER BY pid, n");
        c.close();
        (p, ch)
    };
    let a = dump("a.db", 42, 1);
    let b = dump("b.db", 42, 3);
    assert_eq!(a.0.len(), 24_000);
    assert_eq!(a.1.len(), 96_000);
    assert_eq!(a, b, "same seed, same data");
    // Each range draws from its own stream: the second range does not repeat the first.
    let names = |from: usize| {
        a.0[from..from + 50]
            .iter()
            .map(|r| r[1].clone())
            .collect::<Vec<_>>()
    };
    assert_ne!(names(0), names(RANGE_ROWS as usize));
    let c = dump("c.db", 43, 1);
    assert_ne!(a.0, c.0, "another seed, other data");
    // Sequences follow the row across ranges.
    assert_eq!(a.0[23_999][2].as_deref(), Some("24099"));
    let fks: std::collections::HashSet<_> = a.1.iter().map(|r| r[2].clone()).collect();
    assert!(fks.len() > 15_000, "fk spreads over the parent's rows");
    assert!(a.1.iter().all(|r| {
        r[2].as_deref()
            .and_then(|v| v.parse::<u64>().ok())
            .is_some_and(|v| (1..=24_000).contains(&v))
    }));
}

#[test]
fn a_stop_request_interrupts_the_load() {
    let dir = tempfile::tempdir().unwrap();
    let s = Setup::new(def("st"), sqlite(dir.path(), "s.db"), 50_000);
    let stop = AtomicBool::new(true);
    let err = prepare(&s.ctx(1), &mut Vec::new(), &stop).unwrap_err();
    assert!(err.to_string().contains("interrupted"), "{err}");
}

/// Loads the test tables through load.rs on a live server, then checks values through the
/// driver's own answers (text as sent, NULL as NULL, floats as numbers).
fn live(target: Target, prefix: &str) {
    let s = Setup::new(def(prefix), target, 3);
    s.cleanup();
    let text = s.prepare(5).unwrap();
    assert!(
        text.contains(&format!("Loading 12 rows into '{prefix}_c'...")),
        "{text}"
    );
    let mut c = s.conn();
    let children = rows(
        c.as_mut(),
        &format!("SELECT pid, n, twice, t, nul, f FROM {prefix}_c ORDER BY pid, n"),
    );
    assert_eq!(children.len(), 12);
    for (i, r) in children.iter().enumerate() {
        assert_eq!(r[0], Some(((i / 4) + 1).to_string()));
        assert_eq!(r[1], Some(((i % 4) + 1).to_string()));
        assert_eq!(r[2], Some(((i + 1) * 2).to_string()));
        assert_eq!(r[3].as_deref(), Some(TRICKY), "text through the load path");
        assert_eq!(r[4], None, "NULL stays NULL");
        assert_eq!(
            r[5].as_deref().and_then(|f| f.parse::<f64>().ok()),
            Some(0.25)
        );
    }
    assert_eq!(
        c.query_i64(&format!("SELECT count(*) FROM {prefix}_p WHERE seq BETWEEN 100 AND 102 AND score BETWEEN 0 AND 10"))
            .unwrap(),
        Some(3)
    );
    assert_eq!(
        c.query_i64(&format!("SELECT v FROM {prefix}_done"))
            .unwrap(),
        Some(1)
    );
    s.check().unwrap();
    c.query(&format!(
        "UPDATE {prefix}_c SET twice = twice + 1 WHERE pid = 1 AND n = 1"
    ))
    .unwrap();
    let (_, err) = s.check().unwrap_err();
    let err = err.to_string();
    assert!(
        err.contains("1 of 3 checks failed")
            && err.contains(&format!("check 'sum of twice' failed: `SELECT sum(twice) FROM {prefix}_c`: expected 156, found '157'")),
        "{err}"
    );
    c.close();
    s.cleanup();
}

#[test]
fn live_mariadb_load_and_check() {
    if !crate::db::io::testing::server("127.0.0.1:3306", "MySQL/MariaDB") {
        return;
    }
    let t = crate::db::io::testing::target(
        "mysql",
        "root",
        "hosts = [\"127.0.0.1:3306\"]\ndatabase = \"test\"",
    );
    assert_eq!(t.driver.name(), "mysql");
    live(t, "sbs_load_my");
}

#[test]
fn live_postgresql_load_and_check() {
    if !crate::db::io::testing::server("127.0.0.1:5432", "PostgreSQL") {
        return;
    }
    let t = crate::db::io::testing::target(
        "pgsql",
        "postgres",
        "hosts = [\"127.0.0.1:5432\"]\nssl = \"disabled\"\ndatabase = \"test\"",
    );
    live(t, "sbs_load_pg");
}

/// Each client's own `load_rows` (the wire clients and the library fallbacks): every value,
/// escaping included, arrives as sent.
#[test]
fn live_every_client_loads_tricky_values() {
    type Open = fn(&Target, usize) -> Result<Box<dyn Connection>, SqlError>;
    let wire_my: Open = |t, n| {
        crate::db::mysql::wire::open(t, n).map_err(|e| match e {
            crate::db::io::WireError::Sql(e) => e,
            crate::db::io::WireError::Unsupported(m) => SqlError::client(m, ErrKind::Other),
        })
    };
    let wire_pg: Open = |t, n| {
        crate::db::pgsql::wire::open(t, n).map_err(|e| match e {
            crate::db::io::WireError::Sql(e) => e,
            crate::db::io::WireError::Unsupported(m) => SqlError::client(m, ErrKind::Other),
        })
    };
    let clients: [(&str, &str, &str, &str, Open); 4] = [
        (
            "mysql",
            "root",
            "hosts = [\"127.0.0.1:3306\"]\ndatabase = \"test\"",
            "127.0.0.1:3306",
            wire_my,
        ),
        (
            "mysql",
            "root",
            "hosts = [\"127.0.0.1:3306\"]\ndatabase = \"test\"",
            "127.0.0.1:3306",
            crate::db::mysql::async_client::open_async,
        ),
        (
            "pgsql",
            "postgres",
            "hosts = [\"127.0.0.1:5432\"]\nssl = \"disabled\"\ndatabase = \"test\"",
            "127.0.0.1:5432",
            wire_pg,
        ),
        (
            "pgsql",
            "postgres",
            "hosts = [\"127.0.0.1:5432\"]\nssl = \"disabled\"\ndatabase = \"test\"",
            "127.0.0.1:5432",
            crate::db::pgsql::tokio_client::open_tokio,
        ),
    ];
    let texts = [
        TRICKY,
        "",
        "\\N",
        "\\",
        "tab\tonly",
        "'; DROP TABLE x; --",
        "\u{1a}\0nul",
    ];
    for (n, (driver, user, extra, addr, open)) in clients.into_iter().enumerate() {
        if !crate::db::io::testing::server(addr, driver) {
            continue;
        }
        let t = crate::db::io::testing::target(driver, user, extra);
        let mut c = open(&t, 0).unwrap();
        let table = format!("sbs_load_cl{n}");
        let float = if driver == "pgsql" {
            "DOUBLE PRECISION"
        } else {
            "DOUBLE"
        };
        c.query(&format!("DROP TABLE IF EXISTS {table}")).unwrap();
        c.query(&format!(
            "CREATE TABLE {table} (i BIGINT, f {float}, t TEXT, z TEXT)"
        ))
        .unwrap();
        let columns: Vec<String> = ["i", "f", "t", "z"].map(String::from).to_vec();
        let total = 3_000usize;
        let mut k = 0usize;
        let mut fill = |cells: &mut [Cell]| {
            if k == total {
                return false;
            }
            cells[0] = Cell::Int(k as i64 - 1_000);
            cells[1] = Cell::Float(k as f64 / 8.0);
            let text = texts[k % texts.len()];
            // PostgreSQL's text columns take no NUL byte: that value goes to MariaDB only.
            cells[2] = if driver == "pgsql" && text.contains('\0') {
                Cell::Text(text.replace('\0', ""))
            } else {
                Cell::Text(text.to_string())
            };
            cells[3] = if k.is_multiple_of(3) {
                Cell::Null
            } else {
                Cell::Text(format!("z{k}"))
            };
            k += 1;
            true
        };
        assert_eq!(
            c.load_rows(&table, &columns, &mut fill).unwrap(),
            total as u64
        );
        let got = c
            .query_rows(&format!("SELECT i, f, t, z FROM {table} ORDER BY i"))
            .unwrap();
        assert_eq!(got.len(), total, "client {n}");
        for (k, r) in got.iter().enumerate() {
            assert_eq!(r[0], Some((k as i64 - 1_000).to_string()), "client {n}");
            assert_eq!(
                r[1].as_deref().and_then(|f| f.parse::<f64>().ok()),
                Some(k as f64 / 8.0)
            );
            let text = texts[k % texts.len()];
            let want = if driver == "pgsql" {
                text.replace('\0', "")
            } else {
                text.to_string()
            };
            assert_eq!(r[2].as_deref(), Some(want.as_str()), "client {n} row {k}");
            assert_eq!(
                r[3],
                (k % 3 != 0).then(|| format!("z{k}")),
                "client {n} row {k}"
            );
        }
        c.query(&format!("DROP TABLE {table}")).unwrap();
        c.close();
    }
}

/// sysbench's table shape loaded through load.rs: `tables` tables of `rows` rows (id, k, c,
/// pad as sysbench draws them), on the target `SBS_LOAD_BENCH` names (`mysql`, `pgsql` or
/// `sqlite`). Prints rows/s; compare with the built-in prepare of the same shape (notes-load.md):
/// `flock /tmp/sbsuite-tests.lock cargo test --release --lib engine::custom::load::tests::bench -- --ignored --nocapture`
#[test]
#[ignore = "a measurement, run by hand"]
fn bench_sysbench_shaped_load() {
    let driver = std::env::var("SBS_LOAD_BENCH").unwrap_or_else(|_| "sqlite".into());
    let tables: usize = std::env::var("SBS_LOAD_TABLES").map_or(4, |v| v.parse().unwrap());
    let rows: i64 = std::env::var("SBS_LOAD_ROWS").map_or(100_000, |v| v.parse().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let target = match driver.as_str() {
        "mysql" => crate::db::io::testing::target(
            "mysql",
            "root",
            "hosts = [\"127.0.0.1:3306\"]\ndatabase = \"test\"",
        ),
        "pgsql" => crate::db::io::testing::target(
            "pgsql",
            "postgres",
            "hosts = [\"127.0.0.1:5432\"]\nssl = \"disabled\"\ndatabase = \"test\"",
        ),
        _ => sqlite(dir.path(), "bench.db"),
    };
    let names: Vec<String> = (1..=tables).map(|n| format!("sbs_load_bench{n}")).collect();
    let vars = vars();
    let c_pattern = "###########-".repeat(10)[..119].to_string();
    let pad_pattern = "###########-".repeat(5)[..59].to_string();
    let def = Def {
        name: "bench".into(),
        summary: String::new(),
        source: "t.toml".into(),
        options: Vec::new(),
        headline: None,
        prepare_threads: tables.min(4),
        schema: names
            .iter()
            .map(|t| {
                Sql::all(format!(
                    "CREATE TABLE {t} (id INTEGER NOT NULL PRIMARY KEY, k INTEGER DEFAULT 0 NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL)"
                ))
            })
            .collect(),
        after_load: Vec::new(),
        cleanup: names
            .iter()
            .map(|t| Sql::all(format!("DROP TABLE IF EXISTS {t}")))
            .collect(),
        init: Vec::new(),
        load: names
            .iter()
            .map(|t| LoadTable {
                table: t.clone(),
                rows: Expr::constant("rows", Val::Int(rows)),
                parent: None,
                lets: Vec::new(),
                columns: vec![
                    ("id".into(), GenSpec::Expr(e("row"))),
                    (
                        "k".into(),
                        GenSpec::Dist {
                            dist: crate::engine::custom::model::Dist::Uniform,
                            lo: e("1"),
                            hi: Expr::constant("rows", Val::Int(rows)),
                        },
                    ),
                    ("c".into(), GenSpec::Pattern(c_pattern.clone())),
                    ("pad".into(), GenSpec::Pattern(pad_pattern.clone())),
                ],
            })
            .collect(),
        fresh_per_run: false,
        checks: Vec::new(),
        vars,
        params: Vec::new(),
        transactions: Vec::new(),
        statements: Vec::new(),
    };
    let s = Setup::new(def, target, 0);
    s.cleanup();
    let started = Instant::now();
    let text = s.prepare(1).unwrap();
    let secs = started.elapsed().as_secs_f64();
    print!("{text}");
    println!(
        "{driver}: {} rows in {secs:.2}s: {:.0} rows/s",
        rows * tables as i64,
        (rows * tables as i64) as f64 / secs
    );
    s.cleanup();
}

/// MySQL's `load_rows` (prepared multi-row INSERTs, binary parameters) against text multi-row
/// INSERTs with escaped literals, one connection, the same sysbench-shaped rows, in
/// transactions of the same size: the measurement behind keeping the prepared path.
/// `flock /tmp/sbsuite-tests.lock cargo test --release --lib engine::custom::load::tests::bench_mysql -- --ignored --nocapture`
#[test]
#[ignore = "a measurement, run by hand"]
fn bench_mysql_prepared_against_text_inserts() {
    let rows: usize = std::env::var("SBS_LOAD_ROWS").map_or(200_000, |v| v.parse().unwrap());
    let t = crate::db::io::testing::target(
        "mysql",
        "root",
        "hosts = [\"127.0.0.1:3306\"]\ndatabase = \"test\"",
    );
    let mut c = Connector::new(t).connect_at(0).unwrap();
    let columns: Vec<String> = ["id", "k", "c", "pad"].map(String::from).to_vec();
    let make = |c: &mut dyn Connection| {
        c.query("DROP TABLE IF EXISTS sbs_load_bm").unwrap();
        c.query("CREATE TABLE sbs_load_bm (id INTEGER NOT NULL PRIMARY KEY, k INTEGER DEFAULT 0 NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL)").unwrap();
    };
    let c_pattern = "###########-".repeat(10)[..119].to_string();
    let pad_pattern = "###########-".repeat(5)[..59].to_string();
    let row = |rng: &mut Rng, n: usize, cells: &mut [Cell]| {
        let mut s = String::new();
        cells[0] = Cell::Int(n as i64 + 1);
        cells[1] = Cell::Int(rng.uniform(1, rows as u64) as i64);
        rng.string(&c_pattern, &mut s);
        cells[2] = Cell::Text(s.clone());
        rng.string(&pad_pattern, &mut s);
        cells[3] = Cell::Text(s);
    };
    for round in 0..2 {
        make(c.as_mut());
        let mut rng = Rng::for_thread(1, 0);
        let mut n = 0;
        let started = Instant::now();
        c.load_rows("sbs_load_bm", &columns, &mut |cells| {
            if n == rows {
                return false;
            }
            row(&mut rng, n, cells);
            n += 1;
            true
        })
        .unwrap();
        let prepared = rows as f64 / started.elapsed().as_secs_f64();

        make(c.as_mut());
        let mut rng = Rng::for_thread(1, 0);
        let started = Instant::now();
        let mut cells = vec![Cell::Null; 4];
        let mut sql = String::with_capacity(1 << 20);
        let mut in_trx = 0usize;
        c.query("BEGIN").unwrap();
        for n in 0..rows {
            row(&mut rng, n, &mut cells);
            if sql.is_empty() {
                sql.push_str("INSERT INTO sbs_load_bm (id, k, c, pad) VALUES ");
            } else {
                sql.push(',');
            }
            sql.push('(');
            for (i, cell) in cells.iter().enumerate() {
                if i > 0 {
                    sql.push(',');
                }
                match cell {
                    Cell::Null => sql.push_str("NULL"),
                    Cell::Int(v) => sql.push_str(&v.to_string()),
                    Cell::Float(f) => sql.push_str(&f.to_string()),
                    Cell::Text(t) => {
                        sql.push('\'');
                        for ch in t.chars() {
                            match ch {
                                '\\' => sql.push_str("\\\\"),
                                '\'' => sql.push_str("\\'"),
                                '\0' => sql.push_str("\\0"),
                                '\n' => sql.push_str("\\n"),
                                '\r' => sql.push_str("\\r"),
                                '\u{1a}' => sql.push_str("\\Z"),
                                ch => sql.push(ch),
                            }
                        }
                        sql.push('\'');
                    }
                }
            }
            sql.push(')');
            if sql.len() >= 1 << 20 || n + 1 == rows {
                c.query(&sql).unwrap();
                in_trx += sql.len();
                sql.clear();
                if in_trx >= 16 << 20 {
                    c.query("COMMIT").unwrap();
                    c.query("BEGIN").unwrap();
                    in_trx = 0;
                }
            }
        }
        c.query("COMMIT").unwrap();
        let text = rows as f64 / started.elapsed().as_secs_f64();
        assert_eq!(
            c.query_i64("SELECT count(*) FROM sbs_load_bm").unwrap(),
            Some(rows as i64)
        );
        println!(
            "round {round}: {rows} rows: prepared {prepared:.0} rows/s, text {text:.0} rows/s"
        );
    }
    c.query("DROP TABLE sbs_load_bm").unwrap();
    c.close();
}
