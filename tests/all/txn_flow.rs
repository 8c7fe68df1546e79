//! Result sets, loops and batching in the transaction language (#31), checked by what the
//! servers store and count:
//!
//! - A queue processed until it is empty: a `while` loop takes the lowest id left, a
//!   `for_each_row` over a window of 7 ids moves each row to `done` and deletes it, a
//!   `break_when` leaves the window at every tenth id and another leaves the loop when the
//!   queue is empty. The server ends with an empty queue, all 50 items in `done` once, and
//!   exactly 10 passes recorded (8 without the break); PostgreSQL's own table statistics
//!   count the 50 deletes and inserts.
//! - A `batch` INSERT of 0–12 rows per transaction, each row with a fresh `let`: every batch
//!   is ONE statement — MariaDB's session `Com_insert` grows by exactly one per non-empty
//!   batch while `ROW_COUNT()` says it inserted all n rows; on PostgreSQL a statement-level
//!   trigger fires once per batch and `pg_stat_user_tables.n_tup_ins` counts the rows; on
//!   SQLite `changes()` after the batch is n. Both prepared and `ps_mode = "disable"`.
//! - A `while` whose condition never turns false stops the run at its `limit` with a message
//!   that says so; misuse is refused by `validate` at its line.

use std::path::Path;

use crate::common;
use common::suite_db::{Db, run};

/// Where a test reads what a server stored: integer cells of a query's rows.
enum At<'a> {
    My(&'a str),
    Pg(&'a str),
    Lite(&'a Path),
}

impl At<'_> {
    fn ints(&self, sql: &str) -> Vec<Vec<i64>> {
        let cell = |v: &str| -> i64 { v.trim().parse().unwrap_or_else(|_| panic!("{sql}: {v:?}")) };
        match self {
            At::My(db) => {
                let out = std::process::Command::new("mysql")
                    .args([
                        "-h",
                        "127.0.0.1",
                        "-P",
                        "3306",
                        "-u",
                        "root",
                        "-N",
                        "-B",
                        "-e",
                    ])
                    .arg(sql)
                    .arg(db)
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{sql}: {out:?}");
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .map(|l| l.split('\t').map(cell).collect())
                    .collect()
            }
            At::Pg(db) => common::db::rt().block_on(async {
                let c = common::db::pg_client(db).await.unwrap();
                c.simple_query(sql)
                    .await
                    .unwrap()
                    .into_iter()
                    .filter_map(|m| match m {
                        tokio_postgres::SimpleQueryMessage::Row(r) => {
                            Some((0..r.len()).map(|i| cell(r.get(i).unwrap())).collect())
                        }
                        _ => None,
                    })
                    .collect()
            }),
            At::Lite(path) => {
                let c = rusqlite::Connection::open(path).unwrap();
                let mut s = c.prepare(sql).unwrap();
                let n = s.column_count();
                s.query_map([], |r| (0..n).map(|i| r.get::<_, i64>(i)).collect())
                    .unwrap()
                    .map(Result::unwrap)
                    .collect()
            }
        }
    }

    fn int(&self, sql: &str) -> i64 {
        self.ints(sql)[0][0]
    }

    /// PostgreSQL's statistics of `table` (`column` of pg_stat_user_tables), once they reach
    /// `want` (a backend reports them when it ends, the collector shortly after), at most 10 s.
    fn pg_stat(&self, table: &str, column: &str, want: i64) -> i64 {
        let sql = format!("SELECT {column} FROM pg_stat_user_tables WHERE relname = '{table}'");
        let mut got = 0;
        for _ in 0..50 {
            got = self.int(&sql);
            if got == want {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        got
    }
}

const QUEUE: &str = r#"[suite]
name = "queue"
server_cost = false

@TARGET@
[defaults]
workload = "queue"
threads = 1
events = 3
time = 0
report_interval = 0
check = true

[workloads.queue]
summary = "process a queue until empty, in windows of 7, breaking at each tenth id"
schema = [
  "CREATE TABLE queue (id INT PRIMARY KEY, amount INT)",
  "CREATE TABLE done (id INT PRIMARY KEY, amount INT, pass INT)",
  "CREATE TABLE passes (pass INT)",
]

[[workloads.queue.load]]
table = "queue"
rows = 50
columns = [{ name = "id", gen = "row" }, { name = "amount", gen = "row * 2" }]

[workloads.queue.transactions.drain]
steps = [
  { while = "true", limit = 100, index = "pass", steps = [
    { sql = "SELECT MIN(id) AS next_id FROM queue", capture = ["next_id"] },
    { break_when = "next_id is none" },
    { sql = "INSERT INTO passes (pass) VALUES (:pass)" },
    { sql = "SELECT id, amount FROM queue WHERE id >= :next_id AND id < :next_id + 7 ORDER BY id", capture = ["id", { amt = "amount" }], for_each_row = [
      { sql = "INSERT INTO done (id, amount, pass) VALUES (:id, :amt, :pass)" },
      { sql = "DELETE FROM queue WHERE id = :id", expect_rows = 1 },
      { break_when = "id % 10 == 0" },
    ] },
  ] },
]

[[workloads.queue.checks]]
name = "the queue is empty"
sql = "SELECT COUNT(*) FROM queue"
expect = 0
"#;

/// The queue workload on `target`; returns the server's (queue rows, done rows, sum of done
/// amounts, passes) — and the same with the window's `break_when` removed, on `again` (a
/// fresh target).
fn queue_drains(target: &str, at: &At<'_>) -> (i64, i64, i64, i64) {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = run(dir.path(), &QUEUE.replace("@TARGET@", target));
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("check 'the queue is empty': ok"),
        "{stdout}"
    );
    let rows = common::results(&dir.path().join("results"));
    assert_eq!(rows[0]["errors"], "0", "{rows:?}");
    (
        at.int("SELECT COUNT(*) FROM queue"),
        at.int("SELECT COUNT(*) FROM done"),
        at.int("SELECT SUM(amount) FROM done"),
        at.int("SELECT COUNT(*) FROM passes"),
    )
}

/// Without the window's `break_when`, a pass takes all 7 rows of its window: 8 passes.
fn passes_without_break(target: &str, at: &At<'_>) -> i64 {
    let dir = tempfile::tempdir().unwrap();
    let text = QUEUE
        .replace("@TARGET@", target)
        .replace(r#"      { break_when = "id % 10 == 0" },"#, "");
    let (code, stdout, stderr) = run(dir.path(), &text);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    at.int("SELECT COUNT(*) FROM passes")
}

/// 50 items of amounts 2, 4, … 100, in 10 passes.
const DRAINED: (i64, i64, i64, i64) = (0, 50, 2550, 10);

#[test]
fn a_queue_drains_until_empty_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let target = |name: &str| {
        let path = dir.path().join(name);
        (
            format!(
                "[target]\ndriver = \"sqlite\"\npath = \"{}\"\n",
                path.display()
            ),
            path,
        )
    };
    let (t, path) = target("q.db");
    assert_eq!(queue_drains(&t, &At::Lite(&path)), DRAINED);
    let (t, path) = target("q2.db");
    assert_eq!(passes_without_break(&t, &At::Lite(&path)), 8);
}

#[test]
fn a_queue_drains_until_empty_on_mariadb() {
    let db = "sbs_flow_queue_my";
    let Some(target) = Db::My.fresh(db) else {
        return;
    };
    assert_eq!(queue_drains(&target, &At::My(db)), DRAINED);
    let target = Db::My.fresh(db).unwrap();
    assert_eq!(passes_without_break(&target, &At::My(db)), 8);
    Db::My.drop(db);
}

#[test]
fn a_queue_drains_until_empty_on_postgresql() {
    let db = "sbs_flow_queue_pg";
    let Some(target) = Db::Pg.fresh(db) else {
        return;
    };
    let at = At::Pg(db);
    assert_eq!(queue_drains(&target, &at), DRAINED);
    // The server's own counts: 50 rows deleted from the queue, 50 inserted into done.
    assert_eq!(at.pg_stat("queue", "n_tup_del", 50), 50);
    assert_eq!(at.pg_stat("done", "n_tup_ins", 50), 50);
    let target = Db::Pg.fresh(db).unwrap();
    assert_eq!(passes_without_break(&target, &at), 8);
    Db::Pg.drop(db);
}

const BATCH: &str = r#"[suite]
name = "batch"
server_cost = false

@TARGET@
[defaults]
workload = "fill"
threads = 1
events = 40
time = 0
rand_seed = 5
report_interval = 0

[workloads.fill]
summary = "a multi-row INSERT of 0-12 rows per transaction"
schema = [
  "CREATE TABLE hist (ev INT, k INT, note VARCHAR(20), PRIMARY KEY (ev, k))",
  "CREATE TABLE ev_log (ev INT PRIMARY KEY, n INT, rc INT, com INT)",
  @SCHEMA@
]

[workloads.fill.params]
ev = { sequence = 1 }
n = { uniform = [0, 12] }

[workloads.fill.transactions.fill]
steps = [
  { sql = "INSERT INTO hist (ev, k, note) VALUES (:ev, :k, :note)", batch = "n", index = "k", let = { note = { astring = [10, 16] } } },
  { sql = "@LOG@" },
]
"#;

/// The batch workload on `target` (`schema`: more schema; `log`: the statement that logs
/// (ev, n, rc, com) after each batch); returns the server's `ev_log` rows in order and checks
/// the rows of `hist`.
fn batches(target: &str, schema: &str, log: &str, at: &At<'_>) -> Vec<Vec<i64>> {
    let dir = tempfile::tempdir().unwrap();
    let text = BATCH
        .replace("@TARGET@", target)
        .replace("@SCHEMA@", schema)
        .replace("@LOG@", log);
    let (code, stdout, stderr) = run(dir.path(), &text);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let log = at.ints("SELECT ev, n, rc, com FROM ev_log ORDER BY ev");
    assert_eq!(log.len(), 40, "{log:?}");
    let total: i64 = log.iter().map(|r| r[1]).sum();
    assert!(
        log.iter().any(|r| r[1] == 0) && log.iter().any(|r| r[1] > 1),
        "{log:?}"
    );
    assert_eq!(at.int("SELECT COUNT(*) FROM hist"), total);
    // Each batch's rows have k = 0..n-1 and a note of their own (a fresh `let` per row).
    assert_eq!(
        at.int("SELECT COUNT(*) FROM ev_log l WHERE l.n <> (SELECT COUNT(*) FROM hist h WHERE h.ev = l.ev) OR (l.n > 0 AND l.n - 1 <> (SELECT MAX(k) FROM hist h WHERE h.ev = l.ev))"),
        0
    );
    assert_eq!(at.int("SELECT COUNT(DISTINCT note) FROM hist"), total);
    log
}

#[test]
fn a_batch_is_one_statement_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.db");
    let target = format!(
        "[target]\ndriver = \"sqlite\"\npath = \"{}\"\n",
        path.display()
    );
    // changes() in the next statement: the rows the batch's one statement inserted.
    let log = batches(
        &target,
        "",
        "INSERT INTO ev_log (ev, n, rc, com) VALUES (:ev, :n, changes(), 0)",
        &At::Lite(&path),
    );
    for r in log.iter().filter(|r| r[1] > 0) {
        assert_eq!(r[2], r[1], "{log:?}");
    }
}

#[test]
fn a_batch_is_one_statement_on_mariadb() {
    let db = "sbs_flow_batch_my";
    for ps in ["auto", "disable"] {
        let Some(target) = Db::My.fresh(db) else {
            return;
        };
        // The session's Com_insert, read by an INSERT … SELECT (Com_insert_select): one more
        // per non-empty batch, and ROW_COUNT() the batch's n rows.
        let log = batches(
            &format!("{target}ps_mode = \"{ps}\"\n"),
            "",
            "INSERT INTO ev_log (ev, n, rc, com) SELECT :ev, :n, ROW_COUNT(), VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'COM_INSERT'",
            &At::My(db),
        );
        let mut statements = 0;
        for r in &log {
            statements += i64::from(r[1] > 0);
            assert_eq!(
                r[3], statements,
                "{ps}: Com_insert after ev {}: {log:?}",
                r[0]
            );
            if r[1] > 0 {
                assert_eq!(r[2], r[1], "{ps}: ROW_COUNT() of ev {}: {log:?}", r[0]);
            }
        }
    }
    Db::My.drop(db);
}

#[test]
fn a_batch_is_one_statement_on_postgresql() {
    let db = "sbs_flow_batch_pg";
    for ps in ["auto", "disable"] {
        let Some(target) = Db::Pg.fresh(db) else {
            return;
        };
        let at = At::Pg(db);
        // A statement-level trigger counts the INSERT statements on hist.
        let log = batches(
            &format!("{target}ps_mode = \"{ps}\"\n"),
            r#""CREATE TABLE stmts (id SERIAL PRIMARY KEY)",
  "CREATE FUNCTION count_stmt() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO stmts DEFAULT VALUES; RETURN NULL; END $$",
  "CREATE TRIGGER hist_stmt AFTER INSERT ON hist FOR EACH STATEMENT EXECUTE FUNCTION count_stmt()","#,
            "INSERT INTO ev_log (ev, n, rc, com) VALUES (:ev, :n, 0, (SELECT COUNT(*) FROM stmts))",
            &at,
        );
        let mut statements = 0;
        for r in &log {
            // An empty batch sends nothing; a non-empty one is one statement.
            statements += i64::from(r[1] > 0);
            assert_eq!(
                r[3], statements,
                "{ps}: statements after ev {}: {log:?}",
                r[0]
            );
        }
        let total: i64 = log.iter().map(|r| r[1]).sum();
        assert_eq!(at.pg_stat("hist", "n_tup_ins", total), total, "{ps}");
    }
    Db::Pg.drop(db);
}

/// A loop whose condition never turns false stops at its `limit`, saying so.
#[test]
fn a_while_that_never_ends_stops_at_its_limit() {
    let dir = tempfile::tempdir().unwrap();
    let target = format!(
        "[target]\ndriver = \"sqlite\"\npath = \"{}\"\n",
        dir.path().join("l.db").display()
    );
    let text = QUEUE.replace("@TARGET@", &target).replace(
        r#"{ while = "true", limit = 100,"#,
        r#"{ while = "true", limit = 4,"#,
    );
    let (code, stdout, stderr) = run(dir.path(), &text);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    let rows = common::results(&dir.path().join("results"));
    assert_eq!(rows[0]["status"], "failed", "{rows:?}");
    assert!(
        rows[0]["error"].contains("the loop `while = \"true\"` ran its limit of 4 passes"),
        "{rows:?}"
    );
}

/// `validate` refuses a `break_when` outside a loop and a batched SELECT, at their lines.
#[test]
fn validate_refuses_flow_misuse_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = QUEUE.replace("@TARGET@", "").replace(
        "steps = [\n  { while",
        "steps = [\n  { break_when = \"1\" },\n  { sql = \"SELECT 1\", batch = 2 },\n  { while",
    );
    let path = dir.path().join("suite.toml");
    std::fs::write(&path, &text).unwrap();
    let out = common::sbsuite()
        .arg("validate")
        .arg(&path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let line = |marker: &str| text.lines().position(|l| l.contains(marker)).unwrap() + 1;
    assert!(
        err.contains(&format!("suite.toml:{}:", line("{ break_when = \"1\" }")))
            && err.contains("`break_when` outside a loop"),
        "{err}"
    );
    assert!(
        err.contains(&format!("suite.toml:{}:", line("batch = 2")))
            && err.contains("is a SELECT, not an INSERT"),
        "{err}"
    );
}

/// A batch with more placeholders than the server takes in one statement stops the run with
/// the largest size that fits (SQLite: 32766 placeholders, 3 per row).
#[test]
fn a_batch_beyond_the_placeholder_limit_says_the_largest_that_fits() {
    let dir = tempfile::tempdir().unwrap();
    let target = format!(
        "[target]\ndriver = \"sqlite\"\npath = \"{}\"\n",
        dir.path().join("big.db").display()
    );
    let text = BATCH
        .replace("@TARGET@", &target)
        .replace("@SCHEMA@", "")
        .replace("@LOG@", "SELECT 1")
        .replace("n = { uniform = [0, 12] }", "n = 20000");
    let (code, stdout, stderr) = run(dir.path(), &text);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    let rows = common::results(&dir.path().join("results"));
    assert!(
        rows[0]["error"].contains("a batch of 20000 rows has 60000 placeholders")
            && rows[0]["error"].contains("make `batch` at most 10922"),
        "{rows:?}"
    );
}

/// A batch the server refuses fails the run with the server's error, saying it was a batch
/// of n rows whose last row's values the message shows.
#[test]
fn a_failing_batch_says_it_was_a_batch() {
    let dir = tempfile::tempdir().unwrap();
    let target = format!(
        "[target]\ndriver = \"sqlite\"\npath = \"{}\"\n",
        dir.path().join("dup.db").display()
    );
    let text = BATCH
        .replace("@TARGET@", &target)
        .replace("@SCHEMA@", "")
        .replace("@LOG@", "SELECT 1")
        .replace("PRIMARY KEY (ev, k)", "PRIMARY KEY (ev)")
        .replace("n = { uniform = [0, 12] }", "n = 3");
    let (code, stdout, stderr) = run(dir.path(), &text);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    let rows = common::results(&dir.path().join("results"));
    let error = &rows[0]["error"];
    assert!(
        error.contains("UNIQUE constraint failed")
            && error.contains("a batch of 3 rows, the values shown are its last row's")
            && error.contains("k = 2"),
        "{error}"
    );
}
