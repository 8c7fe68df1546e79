//! Workloads declared in TOML, run end to end through the real binary against the real
//! MariaDB (127.0.0.1:3306, root), PostgreSQL (127.0.0.1:5432, postgres) and SQLite (a temp
//! file): the server's own tables show the declared mix for a fixed number of events and agree
//! with transactions.csv exactly; captures flow into later statements; `repeat`/`index`,
//! `when`, `rollback` and `expect_rows` + `on_mismatch = "rollback"` leave exactly the rows
//! they should; the `check` step passes and then fails on a row corrupted by hand; a failing
//! statement names its transaction, statement, SQL and values; `ps_mode = "disable"` sends
//! the same data as text; and `--resume` after SIGINT adds no duplicate transactions.csv rows.
//!
//! The server tests use the database `sbs_e2e` on each server (dropped and created per test,
//! dropped at the end) and run one at a time. Without a reachable server they print why and
//! pass, unless `CI` is set: then they fail.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use mysql_async::prelude::Queryable;
use tokio_postgres::SimpleQueryMessage;

use crate::common;

use common::db::{admin_my, admin_pg, my_opts, pg_client, rt};
use common::suite_db::txn_counts;
use common::{interrupt, read_until_started, sbsuite};

const DB: &str = "sbs_e2e";

/// Serialises the server tests of this file: they share the database `sbs_e2e`.
static SERVER: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERVER.lock().unwrap_or_else(|p| p.into_inner())
}

/// One database the test reads and writes behind sbsuite's back.
enum Db {
    My,
    Pg,
    Lite(PathBuf),
}

impl Db {
    /// A fresh `sbs_e2e` on the server (or a SQLite file in `dir`); `None` after saying why
    /// when the server is not reachable.
    fn fresh(kind: &str, dir: &Path) -> Option<Db> {
        match kind {
            "mysql" => {
                let ok = admin_my(&[
                    format!("DROP DATABASE IF EXISTS {DB}"),
                    format!("CREATE DATABASE {DB}"),
                ]);
                if ok.is_none() {
                    common::skip("no MySQL/MariaDB server accepts root@127.0.0.1:3306");
                    return None;
                }
                Some(Db::My)
            }
            "pgsql" => {
                let ok = admin_pg(&[
                    format!("DROP DATABASE IF EXISTS {DB} WITH (FORCE)"),
                    format!("CREATE DATABASE {DB}"),
                ]);
                if ok.is_none() {
                    common::skip("no PostgreSQL server accepts postgres@127.0.0.1:5432");
                    return None;
                }
                Some(Db::Pg)
            }
            _ => Some(Db::Lite(dir.join("e2e.db"))),
        }
    }

    /// The `[target]` section of a suite for this database.
    fn target(&self) -> String {
        match self {
            Db::My => format!(
                "[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:3306\"]\nuser = \"root\"\ndatabase = \"{DB}\"\n"
            ),
            Db::Pg => format!(
                "[target]\ndriver = \"pgsql\"\nhosts = [\"127.0.0.1:5432\"]\nuser = \"postgres\"\ndatabase = \"{DB}\"\nssl = \"disable\"\n"
            ),
            Db::Lite(p) => format!("[target]\ndriver = \"sqlite\"\npath = {:?}\n", p.display()),
        }
    }

    /// The first column of every row of `sql`, as text (NULL → "NULL").
    fn column(&self, sql: &str) -> Vec<String> {
        match self {
            Db::My => rt().block_on(async {
                let mut c = mysql_async::Conn::new(my_opts(Some(DB))).await.unwrap();
                let rows: Vec<mysql_async::Row> =
                    c.query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
                let _ = c.disconnect().await;
                rows.into_iter()
                    .map(|r| match r.as_ref(0).unwrap() {
                        mysql_async::Value::NULL => "NULL".to_string(),
                        mysql_async::Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
                        v => v.as_sql(true).trim_matches('\'').to_string(),
                    })
                    .collect()
            }),
            Db::Pg => rt().block_on(async {
                let c = pg_client(DB).await.unwrap();
                let msgs = c
                    .simple_query(sql)
                    .await
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
                msgs.iter()
                    .filter_map(|m| match m {
                        SimpleQueryMessage::Row(r) => Some(r.get(0).unwrap_or("NULL").to_string()),
                        _ => None,
                    })
                    .collect()
            }),
            Db::Lite(p) => {
                let c = rusqlite::Connection::open(p).unwrap();
                let mut st = c.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
                st.query_map([], |r| {
                    Ok(match r.get_ref(0)? {
                        rusqlite::types::ValueRef::Null => "NULL".to_string(),
                        rusqlite::types::ValueRef::Integer(i) => i.to_string(),
                        rusqlite::types::ValueRef::Real(f) => f.to_string(),
                        rusqlite::types::ValueRef::Text(t) => {
                            String::from_utf8_lossy(t).into_owned()
                        }
                        rusqlite::types::ValueRef::Blob(b) => {
                            String::from_utf8_lossy(b).into_owned()
                        }
                    })
                })
                .unwrap()
                .map(Result::unwrap)
                .collect()
            }
        }
    }

    fn int(&self, sql: &str) -> i64 {
        let v = self.column(sql);
        v[0].parse().unwrap_or_else(|e| panic!("{sql}: {v:?}: {e}"))
    }

    fn exec(&self, sql: &str) {
        match self {
            Db::My => rt().block_on(async {
                let mut c = mysql_async::Conn::new(my_opts(Some(DB))).await.unwrap();
                c.query_drop(sql)
                    .await
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
                let _ = c.disconnect().await;
            }),
            Db::Pg => rt().block_on(async {
                let c = pg_client(DB).await.unwrap();
                c.batch_execute(sql)
                    .await
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
            }),
            Db::Lite(p) => {
                let c = rusqlite::Connection::open(p).unwrap();
                c.execute_batch(sql)
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
            }
        }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        match self {
            Db::My => {
                rt().block_on(async {
                    if let Ok(mut c) = mysql_async::Conn::new(my_opts(None)).await {
                        let _ = c.query_drop(format!("DROP DATABASE IF EXISTS {DB}")).await;
                        let _ = c.disconnect().await;
                    }
                });
            }
            Db::Pg => {
                rt().block_on(async {
                    if let Some(c) = pg_client("postgres").await {
                        let _ = c
                            .batch_execute(&format!("DROP DATABASE IF EXISTS {DB} WITH (FORCE)"))
                            .await;
                    }
                });
            }
            Db::Lite(_) => {}
        }
    }
}

/// Writes the suite `name.toml` (target + `target_extra` + `[defaults]` + the workload text)
/// into `dir`.
fn write_suite(
    dir: &Path,
    name: &str,
    db: &Db,
    target_extra: &str,
    defaults: &str,
    workload: &str,
) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "[suite]\nname = \"{name}\"\n\n{}{target_extra}\n[defaults]\n{defaults}\n\n{workload}",
            db.target()
        ),
    )
    .unwrap();
    path
}

/// `sbsuite run SUITE --results-dir DIR/results` → (success, exit code, stdout + stderr).
fn run(suite: &Path, dir: &Path) -> (Option<i32>, String) {
    let out = sbsuite()
        .arg("run")
        .arg(suite)
        .arg("--results-dir")
        .arg(dir.join("results"))
        .args(["--progress", "plain"])
        .output()
        .unwrap();
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn run_ok(suite: &Path, dir: &Path) -> String {
    let (code, text) = run(suite, dir);
    assert_eq!(code, Some(0), "{text}");
    text
}

/// Every transactions.csv row under `root`, as column → value.
fn transactions(root: &Path) -> Vec<HashMap<String, String>> {
    common::csv_rows(root, "transactions.csv")
}

// ---------------------------------------------------------------------------------------
// 1. The declared mix, counted by the server.

const MIX: &str = r#"[workloads.mix]
schema = ["CREATE TABLE ta (v INTEGER)", "CREATE TABLE tb (v INTEGER)"]

[workloads.mix.params]
x = { uniform = [1, 1000] }

[workloads.mix.transactions.a]
weight = 3
steps = [{ sql = "INSERT INTO ta VALUES (:x)" }]

[workloads.mix.transactions.b]
weight = 1
autocommit = true
steps = [{ sql = "INSERT INTO tb VALUES (:x)" }]
"#;

fn mix_is_counted_by_the_server(kind: &str) {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let Some(db) = Db::fresh(kind, dir.path()) else {
        return;
    };
    let suite = write_suite(
        dir.path(),
        "mix",
        &db,
        "",
        "workload = \"mix\"\nthreads = 2\nevents = 400\ntime = 0\nrand_seed = 7\nreport_interval = 0",
        MIX,
    );
    let text = run_ok(&suite, dir.path());
    assert!(text.contains("Transactions:"), "{text}");
    let a = db.int("SELECT count(*) FROM ta");
    let b = db.int("SELECT count(*) FROM tb");
    assert_eq!(a + b, 400, "{text}");
    // 3:1 over 400 draws: 300 ± 4σ (σ = √75 ≈ 8.7).
    assert!((265..=335).contains(&a), "a = {a}, b = {b}");
    let t = txn_counts(&dir.path().join("results"));
    assert_eq!(t["a"], (a, 0, 0), "{t:?}");
    assert_eq!(t["b"], (b, 0, 0), "{t:?}");
    if let Db::Pg = db {
        // PostgreSQL's own counters agree (the backends flush their statistics as they end).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let ins = db.int(
                "SELECT coalesce(sum(n_tup_ins), 0) FROM pg_stat_user_tables WHERE relname = 'ta'",
            );
            if ins == a {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "n_tup_ins {ins} != {a}"
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }
}

#[test]
fn mix_counted_by_sqlite() {
    mix_is_counted_by_the_server("sqlite");
}

#[test]
fn mix_counted_by_mariadb() {
    mix_is_counted_by_the_server("mysql");
}

#[test]
fn mix_counted_by_postgresql() {
    mix_is_counted_by_the_server("pgsql");
}

// ---------------------------------------------------------------------------------------
// 2. Captures, repeat, when, rollback, expect_rows; 4. ps_mode = "disable".

const FLOW: &str = r#"[workloads.flow]
schema = [
  "CREATE TABLE src (id INTEGER PRIMARY KEY, amount DECIMAL(10,2), name VARCHAR(20))",
  "CREATE TABLE dst (id INTEGER, amount DECIMAL(10,2), name VARCHAR(20))",
  "CREATE TABLE hdr (s INTEGER, n INTEGER)",
  "CREATE TABLE rep (s INTEGER, i INTEGER)",
  "CREATE TABLE big (s INTEGER)",
  "CREATE TABLE rb (s INTEGER)",
  "CREATE TABLE em (s INTEGER)",
]

[[workloads.flow.load]]
table = "src"
rows = "5"
columns = [
  { name = "id", gen = "row" },
  { name = "amount", gen = { float = [1, 1000], scale = 2 } },
  { name = "name", gen = { choice = ["O'Brien", "back\\slash", "x?y:z", "plain"] } },
]

[workloads.flow.params]
k = { uniform = [1, 5] }
k10 = { uniform = [1, 10] }
s = { sequence = 1 }

[workloads.flow.transactions.cap]
steps = [
  { sql = "SELECT amount, name FROM src WHERE id = :k", capture = ["amount", { label = "name" }] },
  { sql = "INSERT INTO dst VALUES (:k, :amount, :label)" },
]

[workloads.flow.transactions.loop]
let = { n = { uniform = [0, 6] } }
steps = [
  { sql = "INSERT INTO hdr VALUES (:s, :n)" },
  { repeat = "n", index = "i", steps = [{ sql = "INSERT INTO rep VALUES (:s, :i)" }] },
  { when = "n > 3", sql = "INSERT INTO big VALUES (:s)" },
]

[workloads.flow.transactions.maybe]
rollback = 0.5
steps = [{ sql = "INSERT INTO rb VALUES (:s)" }]

[workloads.flow.transactions.expect]
steps = [
  { sql = "INSERT INTO em VALUES (:s)" },
  { sql = "SELECT id FROM src WHERE id = :k10", expect_rows = 1, on_mismatch = "rollback" },
]

[[workloads.flow.checks]]
name = "every copy matches its source"
sql = "SELECT count(*) FROM dst d WHERE NOT EXISTS (SELECT 1 FROM src s WHERE s.id = d.id AND s.amount = d.amount AND s.name = d.name)"
expect = 0
"#;

fn flow_runs_as_declared(kind: &str, ps_disable: bool) {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let Some(db) = Db::fresh(kind, dir.path()) else {
        return;
    };
    let path = write_suite(
        dir.path(),
        "flow",
        &db,
        if ps_disable {
            "ps_mode = \"disable\"\n"
        } else {
            ""
        },
        "workload = \"flow\"\nthreads = 1\nevents = 400\ntime = 0\nrand_seed = 11\nreport_interval = 0\ncheck = true",
        FLOW,
    );
    let text = run_ok(&path, dir.path());
    let t = txn_counts(&dir.path().join("results"));
    let total: i64 = t.values().map(|(c, e, r)| c + e + r).sum();
    assert_eq!(total, 400, "{t:?}\n{text}");
    assert!(t.values().all(|&(_, e, _)| e == 0), "{t:?}");

    // Captures: every copy carries its source's DECIMAL and VARCHAR (quotes, backslash, ?, :).
    let cap = t["cap"];
    assert_eq!(db.int("SELECT count(*) FROM dst"), cap.0);
    assert!(cap.0 > 50, "{t:?}");
    assert_eq!(
        db.int("SELECT count(*) FROM dst d JOIN src s ON s.id = d.id AND s.amount = d.amount AND s.name = d.name"),
        cap.0
    );
    assert_eq!(
        db.int(
            "SELECT count(*) FROM src WHERE name IN ('O''Brien', 'back\\slash', 'x?y:z', 'plain')"
        ) + if let Db::My = db {
            // MySQL reads '\\s' in the test's own literal as an escape; count that row apart.
            db.int("SELECT count(*) FROM src WHERE name = 'back\\\\slash'")
        } else {
            0
        },
        5
    );

    // repeat: each header's n rows with index 0..n-1; when: big only for n > 3.
    let lp = t["loop"];
    assert_eq!(db.int("SELECT count(*) FROM hdr"), lp.0);
    assert_eq!(
        db.int("SELECT count(*) FROM hdr h WHERE (SELECT count(*) FROM rep r WHERE r.s = h.s) <> h.n OR (SELECT coalesce(sum(r.i), 0) FROM rep r WHERE r.s = h.s) <> h.n * (h.n - 1) / 2 OR (SELECT coalesce(max(r.i), -1) FROM rep r WHERE r.s = h.s) <> h.n - 1"),
        0
    );
    assert_eq!(
        db.int("SELECT sum(n) FROM hdr"),
        db.int("SELECT count(*) FROM rep")
    );
    assert_eq!(
        db.int("SELECT count(*) FROM big"),
        db.int("SELECT count(*) FROM hdr WHERE n > 3")
    );
    assert_eq!(
        db.int("SELECT count(*) FROM big b JOIN hdr h ON h.s = b.s WHERE h.n > 3"),
        db.int("SELECT count(*) FROM big")
    );

    // rollback = 0.5: only committed transactions left rows; rollbacks binomial (±4σ).
    let (c, _, r) = t["maybe"];
    assert_eq!(db.int("SELECT count(*) FROM rb"), c);
    let n = (c + r) as f64;
    let sigma = (n * 0.25).sqrt();
    assert!(
        ((r as f64) - n / 2.0).abs() <= 4.0 * sigma,
        "rollbacks {r} of {n}"
    );

    // expect_rows mismatch (ids 6..10 do not exist) → rolled back, counted as rollbacks.
    let (c, _, r) = t["expect"];
    assert_eq!(db.int("SELECT count(*) FROM em"), c);
    assert!(c > 0 && r > 0, "{t:?}");
    let n = (c + r) as f64;
    assert!(
        ((r as f64) - n / 2.0).abs() <= 4.0 * (n * 0.25).sqrt(),
        "{t:?}"
    );

    // The check ran and passed.
    assert!(text.contains("every copy matches its source"), "{text}");
}

#[test]
fn flow_on_sqlite() {
    flow_runs_as_declared("sqlite", false);
}

#[test]
fn flow_on_mariadb() {
    flow_runs_as_declared("mysql", false);
}

#[test]
fn flow_on_postgresql() {
    flow_runs_as_declared("pgsql", false);
}

#[test]
fn flow_on_mariadb_with_text_statements() {
    flow_runs_as_declared("mysql", true);
}

#[test]
fn flow_on_postgresql_with_text_statements() {
    flow_runs_as_declared("pgsql", true);
}

// ---------------------------------------------------------------------------------------
// 4b. ps_mode = "disable" under every string setting: a captured value comes back unchanged
// and never becomes SQL; a quote in a comment hides no placeholder (#26).

/// A stored value that ends a `'…'` literal early when backslashes are escapes but the
/// substitution only doubled quotes (PostgreSQL with `standard_conforming_strings = off`).
const EVIL: &str = r"\'; CREATE TABLE sbs_pwned(x int); --";

const LITERALS: &str = r#"[workloads.lit]
schema = [
  "CREATE TABLE vals (id INTEGER, v VARCHAR(100))",
  "CREATE TABLE hits (id INTEGER)",
  "CREATE TABLE notes (k INTEGER)",
  "CREATE TABLE seen (s VARCHAR(200))",
]

[[workloads.lit.load]]
table = "vals"
rows = "1"
columns = [{ name = "id", gen = "row" }, { name = "v", gen = { choice = [EVIL] } }]

[workloads.lit.params]
k = { uniform = [1, 9] }

# autocommit: what a statement did stays, even when a later one fails.
[workloads.lit.transactions.t]
autocommit = true
steps = [
  { sql = { mysql = "SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES'", pgsql = "SET standard_conforming_strings = off", sqlite = "" } },
  { sql = { mysql = "INSERT INTO seen SELECT @@SESSION.sql_mode", pgsql = "INSERT INTO seen SELECT current_setting('standard_conforming_strings')", sqlite = "" } },
  { sql = "SELECT v FROM vals WHERE id = 1", capture = ["v"] },
  { sql = "INSERT INTO hits SELECT id FROM vals WHERE v = :v" },
  { sql = "INSERT INTO notes /* don't */ VALUES (:k)" },
]
"#;

fn literals_survive_every_setting(kind: &str, ps_disable: bool) {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let Some(db) = Db::fresh(kind, dir.path()) else {
        return;
    };
    let workload = LITERALS.replace("[EVIL]", &format!("[{}]", toml::Value::String(EVIL.into())));
    let suite = write_suite(
        dir.path(),
        "lit",
        &db,
        if ps_disable {
            "ps_mode = \"disable\"\n"
        } else {
            ""
        },
        "workload = \"lit\"\nthreads = 1\nevents = 20\ntime = 0\nreport_interval = 0",
        &workload,
    );
    let (code, text) = run(&suite, dir.path());
    // The server's catalog: the value's SQL never ran.
    let pwned = match db {
        Db::My => "SELECT count(*) FROM information_schema.tables WHERE table_name = 'sbs_pwned'",
        Db::Pg => "SELECT count(*) FROM pg_catalog.pg_class WHERE relname = 'sbs_pwned'",
        Db::Lite(_) => "SELECT count(*) FROM sqlite_master WHERE name = 'sbs_pwned'",
    };
    assert_eq!(db.int(pwned), 0, "the captured value ran as SQL\n{text}");
    assert_eq!(code, Some(0), "{text}");
    // The setting was in force, the value matched itself every time, and the statement
    // with a quote in its comment ran.
    match db {
        Db::My => assert!(
            db.column("SELECT s FROM seen")
                .iter()
                .all(|s| s.contains("NO_BACKSLASH_ESCAPES")),
            "{text}"
        ),
        Db::Pg => assert_eq!(db.column("SELECT DISTINCT s FROM seen"), ["off"]),
        Db::Lite(_) => {}
    }
    assert_eq!(db.int("SELECT count(*) FROM hits"), 20, "{text}");
    // SQLite binds NULL to a `?` left in the text: the values must be there.
    assert_eq!(
        db.int("SELECT count(*) FROM notes WHERE k BETWEEN 1 AND 9"),
        20,
        "{text}"
    );
}

#[test]
fn literals_on_postgresql_without_standard_conforming_strings() {
    literals_survive_every_setting("pgsql", true);
}

#[test]
fn literals_on_mariadb_with_no_backslash_escapes() {
    literals_survive_every_setting("mysql", true);
}

#[test]
fn literals_on_sqlite() {
    literals_survive_every_setting("sqlite", true);
}

#[test]
fn comments_hide_no_placeholder_from_postgresql_prepared_statements() {
    literals_survive_every_setting("pgsql", false);
}

// ---------------------------------------------------------------------------------------
// 3. The check step passes after a run, fails after a row is corrupted by hand.

const CHECKED: &str = r#"[workloads.checked]
schema = ["CREATE TABLE IF NOT EXISTS pos (v INTEGER)"]

[workloads.checked.params]
x = { uniform = [1, 1000] }

[workloads.checked.transactions.put]
steps = [{ sql = "INSERT INTO pos VALUES (:x)" }]

[[workloads.checked.checks]]
name = "no value below one"
sql = "SELECT count(*) FROM pos WHERE v < 1"
expect = 0
"#;

fn check_fails_on_a_corrupted_row(kind: &str) {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let Some(db) = Db::fresh(kind, dir.path()) else {
        return;
    };
    let defaults = "workload = \"checked\"\nthreads = 1\nevents = 50\ntime = 0\nreport_interval = 0\ncheck = true";
    let suite = write_suite(dir.path(), "checked", &db, "", defaults, CHECKED);
    let first = dir.path().join("first");
    std::fs::create_dir(&first).unwrap();
    run_ok(&suite, &first);
    assert_eq!(db.int("SELECT count(*) FROM pos"), 50);

    // The largest value may have been drawn more than once: every copy is corrupted.
    let corrupted = db.int("SELECT count(*) FROM pos WHERE v = (SELECT max(v) FROM pos)");
    assert!(corrupted >= 1);
    db.exec("UPDATE pos SET v = -5 WHERE v = (SELECT m FROM (SELECT max(v) AS m FROM pos) t)");
    let second = dir.path().join("second");
    std::fs::create_dir(&second).unwrap();
    let (code, text) = run(&suite, &second);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("no value below one"), "{text}");
    // The values: the expected one and what the server returned (shown as the server's text).
    assert!(text.contains("expected 0, found"), "{text}");
    assert!(
        text.contains(&format!("found '{corrupted}'"))
            || text.contains(&format!("found {corrupted}")),
        "{text}"
    );
}

#[test]
fn check_on_sqlite() {
    check_fails_on_a_corrupted_row("sqlite");
}

#[test]
fn check_on_mariadb() {
    check_fails_on_a_corrupted_row("mysql");
}

#[test]
fn check_on_postgresql() {
    check_fails_on_a_corrupted_row("pgsql");
}

// ---------------------------------------------------------------------------------------
// 4. A failing statement names the transaction, the statement, the SQL and the values.

const DUP: &str = r#"[workloads.dup]
schema = ["CREATE TABLE u (id INTEGER PRIMARY KEY, note VARCHAR(20))"]

[workloads.dup.params]
c = { uniform = [1, 3] }

[workloads.dup.transactions.put]
steps = [{ sql = "INSERT INTO u VALUES (:c, 'it''s')", name = "put_row" }]
"#;

fn duplicate_key_fails_with_the_statement(kind: &str) {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let Some(db) = Db::fresh(kind, dir.path()) else {
        return;
    };
    let suite = write_suite(
        dir.path(),
        "dup",
        &db,
        // PostgreSQL ignores unique violations by default (as sysbench): not here.
        "ignore_errors = []\n",
        "workload = \"dup\"\nthreads = 1\nevents = 50\ntime = 0\nreport_interval = 0",
        DUP,
    );
    let (code, text) = run(&suite, dir.path());
    assert_ne!(code, Some(0), "{text}");
    for needle in [
        "transaction `put`",
        "put_row",
        "INSERT INTO u VALUES",
        "c = ",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    let rows = common::results(&dir.path().join("results"));
    assert!(rows.iter().any(|r| r["status"] == "failed"), "{rows:?}");
    assert!(db.int("SELECT count(*) FROM u") <= 3);
}

#[test]
fn run_error_on_sqlite() {
    duplicate_key_fails_with_the_statement("sqlite");
}

#[test]
fn run_error_on_mariadb() {
    duplicate_key_fails_with_the_statement("mysql");
}

#[test]
fn run_error_on_postgresql() {
    duplicate_key_fails_with_the_statement("pgsql");
}

// ---------------------------------------------------------------------------------------
// 5. --resume after SIGINT: every run's transaction rows exactly once.

#[test]
fn resume_after_sigint_writes_each_transaction_row_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::Lite(dir.path().join("e2e.db"));
    let suite = write_suite(
        dir.path(),
        "mixr",
        &db,
        "",
        "workload = \"mix\"\ntime = 2\nreport_interval = 0\n\n[matrix]\nthreads = [1, 2]",
        &MIX.replace(
            "[workloads.mix.params]",
            "cleanup = [\"DROP TABLE IF EXISTS ta\", \"DROP TABLE IF EXISTS tb\"]\n\n[workloads.mix.params]",
        ),
    );
    let results = dir.path().join("results");
    let mut child = common::sbsuite_process()
        .arg("run")
        .arg(&suite)
        .arg("--results-dir")
        .arg(&results)
        .args(["--progress", "plain"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    read_until_started(&mut child, 1);
    std::thread::sleep(std::time::Duration::from_millis(300));
    interrupt(child.id());
    let status = child.wait().unwrap();
    assert!(!status.success());
    let run_dir = common::run_dir(&results, "mixr");
    let before = common::results(&run_dir);
    // The interrupted run left its own transaction rows, which the resume must replace.
    assert!(
        before.iter().any(|r| r["status"] == "interrupted"),
        "{before:?}"
    );
    assert_eq!(transactions(&run_dir).len(), 2);
    assert!(
        before
            .iter()
            .all(|r| r["status"] != "ok" || r["step"] == "1"),
        "stopped in the first run: {before:?}"
    );

    let out = sbsuite()
        .args(["run", "--progress", "plain", "--resume"])
        .arg(&run_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = transactions(&run_dir);
    let ok: Vec<_> = common::results(&run_dir)
        .into_iter()
        .filter(|r| r["status"] == "ok")
        .collect();
    assert_eq!(ok.len(), 2, "{ok:?}");
    let mut seen = std::collections::HashSet::new();
    for r in &rows {
        assert!(
            seen.insert((r["step"].clone(), r["transaction"].clone())),
            "duplicate transaction row {r:?}"
        );
    }
    // Two runs × two transactions, each with the step's own counts.
    assert_eq!(rows.len(), 4, "{rows:?}");
    for r in &rows {
        assert!(r["count"].parse::<i64>().unwrap() > 0, "{r:?}");
    }
}

// ---------------------------------------------------------------------------------------
// 6. A huge load streams (#26): memory flat in the row count, stopped by the first Ctrl-C.

/// The peak resident set of process `pid`, KiB (`VmHWM` of /proc/PID/status).
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in {status}"))
}

/// Runs a suite whose load declares `loading` rows (the `Loading N rows into 'T'` line it
/// waits for) on SQLite, lets the loader work for two seconds, then sends one SIGINT: the peak
/// RSS stays small, the process ends at once with 130 and the prepare is `interrupted`.
/// Before #26 the loader listed every 20,000-row range first: 4.3 GB in 13 s, then abort.
fn huge_load_is_streamed_and_stopped(name: &str, load: &str, loading: &str) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::Lite(dir.path().join("e2e.db"));
    let workload = format!(
        "[workloads.{name}]\nschema = [\"CREATE TABLE hp (id INTEGER PRIMARY KEY)\", \"CREATE TABLE hc (id INTEGER, v TEXT)\"]\n\
         cleanup = [\"DROP TABLE IF EXISTS hc\", \"DROP TABLE IF EXISTS hp\"]\n\n\
         [workloads.{name}.options]\nn = {{ type = \"int\", default = 2, dataset = true }}\n\n{load}\n\
         [workloads.{name}.transactions.t]\nsteps = [{{ sql = \"SELECT 1\" }}]\n"
    );
    let suite = write_suite(
        dir.path(),
        name,
        &db,
        "",
        &format!("workload = \"{name}\"\ntime = 1"),
        &workload,
    );
    let results = dir.path().join("results");
    let mut child = common::sbsuite_process()
        .arg("run")
        .arg(&suite)
        .arg("--results-dir")
        .arg(&results)
        .args(["--progress", "plain"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut seen = Vec::new();
    {
        use std::io::Read;
        let stdout = child.stdout.as_mut().unwrap();
        let mut buf = [0u8; 256];
        while !String::from_utf8_lossy(&seen).contains(loading) {
            let n = stdout.read(&mut buf).unwrap();
            assert!(
                n > 0,
                "ended before loading: {}",
                String::from_utf8_lossy(&seen)
            );
            seen.extend_from_slice(&buf[..n]);
        }
    }
    let file = dir.path().join("e2e.db");
    let size = || std::fs::metadata(&file).map_or(0, |m| m.len());
    let at_start = size();
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(
        size() > at_start,
        "the loader wrote nothing in 2 s ({at_start} bytes)"
    );
    let peak = peak_rss_kib(pid);
    assert!(peak < 150 * 1024, "peak RSS {peak} KiB while loading");
    let asked = std::time::Instant::now();
    interrupt(pid);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if asked.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            panic!("still running 20 s after SIGINT");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130));
    let journal =
        std::fs::read_to_string(common::run_dir(&results, name).join("journal.log")).unwrap();
    assert!(journal.contains("1 prepare interrupted"), "{journal}");
}

#[test]
fn huge_row_count_loads_in_flat_memory_and_stops_at_the_first_sigint() {
    huge_load_is_streamed_and_stopped(
        "hugerows",
        "[[workloads.hugerows.load]]\ntable = \"hc\"\nrows = \"n * 100000000000000\"\n\
         columns = [{ name = \"id\", gen = \"row\" }, { name = \"v\", gen = { astring = [10, 20] } }]\n",
        "Loading 200000000000000 rows into 'hc'",
    );
}

#[test]
fn huge_per_parent_loads_in_flat_memory_and_stops_at_the_first_sigint() {
    huge_load_is_streamed_and_stopped(
        "hugechild",
        "[[workloads.hugechild.load]]\ntable = \"hp\"\nrows = \"n * 5\"\ncolumns = [{ name = \"id\", gen = \"row\" }]\n\n\
         [[workloads.hugechild.load]]\ntable = \"hc\"\nparent = \"hp\"\nper_parent = \"1000000000000\"\n\
         columns = [{ name = \"id\", gen = \"parent_row\" }, { name = \"v\", gen = { astring = [10, 20] } }]\n",
        "Loading 10000000000000 rows into 'hc'",
    );
}

/// A keying or think time longer than the run ends with the run: the step ends in time and is
/// ok (not failed by `forced_shutdown` for workers "still in an event"), and a transaction whose
/// keying time the end cut short never runs.
#[test]
fn keying_and_think_times_end_with_the_run() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let Some(db) = Db::fresh("sqlite", dir.path()) else {
        return;
    };
    let workload = r#"[workloads.slow]
schema = ["CREATE TABLE ta (v INTEGER)"]
cleanup = ["DROP TABLE IF EXISTS ta"]

[workloads.slow.transactions.typed]
keying = 60000
steps = [{ sql = "INSERT INTO ta VALUES (1)" }]

[workloads.slow.transactions.thought]
think = 60000
steps = [{ sql = "INSERT INTO ta VALUES (2)" }]
"#;
    let suite = write_suite(
        dir.path(),
        "slow",
        &db,
        "",
        "workload = \"slow\"\nthreads = 4\ntime = 2\nforced_shutdown = 30\nreport_interval = 0",
        workload,
    );
    let started = std::time::Instant::now();
    let text = run_ok(&suite, dir.path());
    assert!(
        started.elapsed() < std::time::Duration::from_secs(25),
        "the run waited for the 60 s keying and think times: {text}"
    );
    let rows = common::results(&dir.path().join("results"));
    assert!(rows.iter().all(|r| r["status"] == "ok"), "{rows:?}");
    // Each thread ran at most one transaction (then slept until the end); the keyed ones
    // never ran: the run ended during their keying time.
    let t = txn_counts(&dir.path().join("results"));
    assert_eq!(t.get("typed").map_or(0, |c| c.0), 0, "{t:?}");
    assert!(t.get("thought").map_or(0, |c| c.0) <= 4, "{t:?}");
    drop(db);
}
