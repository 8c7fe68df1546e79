//! A transaction's own rules and a statement's own protocol (#31), checked by what the servers
//! store and count, on SQLite, MariaDB and PostgreSQL:
//!
//! - `retry` and `ignore_errors`: each transaction fails once on purpose (a duplicate key its
//!   own `ignore_errors` lists, not the target's) and commits on its re-run. Every try records
//!   the value it bound (autocommit, so a failed try's row stays): with `retry = "same"` both
//!   tries of every transaction stored the same value, with `"redraw"` never; the errors are
//!   counted on the transaction and by code. Without the transaction's list the error fails
//!   the step.
//! - `rollback_when`: a transaction rolls back when the value it read is odd: the rows it
//!   rolled back kept no write, and the mix counts the rollbacks.
//! - `ps_mode` per statement: MariaDB's own session counters (`Com_stmt_execute`), recorded by
//!   the workload, and PostgreSQL's `pg_prepared_statements` of the session show which
//!   statement was prepared; on SQLite the text protocol stores the same values.
//! - Checks bind `:option` placeholders to the run's option values.

use std::path::Path;

use crate::common;

use common::suite_db::{Db, run, txn_counts};
use common::{results, sbsuite};

/// The code of a duplicate key on `db`.
fn duplicate(db: Db) -> &'static str {
    match db {
        Db::Lite => "SQLITE_CONSTRAINT",
        Db::My => "1062",
        Db::Pg => "23505",
    }
}

/// A fresh database `name` and its `[target]`; PostgreSQL's target ignores deadlocks only, so
/// that a duplicate key is ignored only where a transaction says so.
fn fresh(db: Db, name: &str, dir: &Path) -> Option<String> {
    let target = db.fresh_in(name, dir)?;
    Some(match db {
        Db::Pg => format!("{target}ignore_errors = [\"40P01\"]\n"),
        _ => target,
    })
}

/// Each transaction records its try (`n`, per thread) and the value `k` it bound, then fails
/// with a duplicate key on its odd tries: the first fails, the re-run commits.
fn retry_suite(target: &str, retry: &str, ignore: &str) -> String {
    format!(
        r#"[suite]
name = "retry"
server_cost = false

{target}
[defaults]
workload = "retry"
threads = 1
events = 30
time = 0
check = true

[workloads.retry]
summary = "every transaction fails once, then commits"
schema = ["CREATE TABLE attempts (t INT, n INT, k BIGINT)", "CREATE TABLE gate (g INT PRIMARY KEY)"]
cleanup = ["DROP TABLE IF EXISTS attempts", "DROP TABLE IF EXISTS gate"]

[workloads.retry.options]
tries = {{ type = "int", default = 30, help = "transactions (the step's events)" }}

[[workloads.retry.load]]
table = "gate"
rows = 1
columns = [{{ name = "g", gen = {{ const = 0 }} }}]

[workloads.retry.params]
k = {{ uniform = [1, 1000000000] }}

[workloads.retry.transactions.twice]
autocommit = true
{retry}
{ignore}
steps = [
  {{ sql = "INSERT INTO attempts (t, n, k) SELECT :thread, COUNT(*) + 1, :k FROM attempts WHERE t = :thread" }},
  {{ sql = "INSERT INTO gate (g) SELECT g FROM gate WHERE (SELECT COUNT(*) FROM attempts WHERE t = :thread) % 2 = 1" }},
]

[[workloads.retry.checks]]
name = "two tries per transaction"
sql = "SELECT COUNT(*) FROM attempts WHERE n <= 2 * :tries"
expect = "2 * tries"

[[workloads.retry.checks]]
name = "no more"
sql = "SELECT COUNT(*) FROM attempts WHERE n > 2 * :tries"
expect = 0

[[workloads.retry.checks]]
name = "re-runs that bound the value of the first try"
sql = "SELECT COUNT(*) FROM attempts a JOIN attempts b ON b.t = a.t AND b.n = a.n + 1 WHERE a.n % 2 = 1 AND a.k = b.k"
expect = "{same}"
"#,
        same = if retry.contains("same") { "tries" } else { "0" },
    )
}

fn retries(db: Db, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let Some(target) = fresh(db, name, dir.path()) else {
        return;
    };
    let ignore = "ignore_errors = [\"duplicate_key\"]";
    for retry in ["retry = \"same\"", "retry = \"redraw\"", ""] {
        let sub = dir.path().join(if retry.is_empty() {
            "default"
        } else {
            &retry[9..retry.len() - 1]
        });
        std::fs::create_dir_all(&sub).unwrap();
        let (code, stdout, stderr) = run(&sub, &retry_suite(&target, retry, ignore));
        assert_eq!(code, Some(0), "{db:?} {retry}: {stdout}\n{stderr}");
        assert!(
            stdout.contains("re-runs that bound the value of the first try': ok"),
            "{db:?} {retry}: {stdout}"
        );
        let counts = txn_counts(&sub.join("results"));
        // Every transaction failed once (counted) and committed once.
        assert_eq!(counts["twice"], (30, 30, 0), "{db:?} {retry}: {counts:?}");
        let rows = results(&sub.join("results"));
        assert_eq!(
            rows[0]["error_codes"],
            format!("{}:30", duplicate(db)),
            "{db:?} {retry}: {rows:?}"
        );
    }
    // Without the transaction's list, the duplicate key fails the step.
    let sub = dir.path().join("unlisted");
    std::fs::create_dir_all(&sub).unwrap();
    let (code, stdout, stderr) = run(&sub, &retry_suite(&target, "retry = \"same\"", ""));
    assert_ne!(code, Some(0), "{db:?}: {stdout}\n{stderr}");
    let rows = results(&sub.join("results"));
    assert_eq!(rows[0]["status"], "failed", "{rows:?}");
    db.drop(name);
}

#[test]
fn retry_same_or_redraw_and_own_ignore_errors_on_sqlite() {
    retries(Db::Lite, "rules_retry");
}

#[test]
fn retry_same_or_redraw_and_own_ignore_errors_on_mariadb() {
    retries(Db::My, "sbs_rules_retry_my");
}

#[test]
fn retry_same_or_redraw_and_own_ignore_errors_on_postgresql() {
    retries(Db::Pg, "sbs_rules_retry_pg");
}

/// Each transaction adds a hit to a row, reads its value and rolls back when it is odd.
fn rollback_when(db: Db, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let Some(target) = fresh(db, name, dir.path()) else {
        return;
    };
    let text = format!(
        r#"[suite]
name = "rbw"
server_cost = false

{target}
[defaults]
workload = "rbw"
rand_seed = 7
threads = 2
events = 200
time = 0
check = true

[workloads.rbw]
summary = "roll back what read an odd value"
schema = ["CREATE TABLE t (id INT PRIMARY KEY, v INT, hits INT)"]
cleanup = ["DROP TABLE IF EXISTS t"]

[[workloads.rbw.load]]
table = "t"
rows = 20
columns = [{{ name = "id", gen = "row" }}, {{ name = "v", gen = "row" }}, {{ name = "hits", gen = {{ const = 0 }} }}]

[workloads.rbw.params]
k = {{ uniform = [1, 20] }}

[workloads.rbw.transactions.maybe]
rollback_when = "v % 2 == 1"
steps = [
  {{ sql = "UPDATE t SET hits = hits + 1 WHERE id = :k" }},
  {{ sql = "SELECT v FROM t WHERE id = :k", capture = ["v"] }},
]

[[workloads.rbw.checks]]
name = "odd rows kept no write"
sql = "SELECT COUNT(*) FROM t WHERE v % 2 = 1 AND hits > 0"
expect = 0

[[workloads.rbw.checks]]
name = "even rows kept theirs"
sql = "SELECT COUNT(*) FROM t WHERE v % 2 = 0 AND hits > 0"
expect = 10
"#
    );
    let (code, stdout, stderr) = run(dir.path(), &text);
    assert_eq!(code, Some(0), "{db:?}: {stdout}\n{stderr}");
    assert!(
        stdout.contains("odd rows kept no write': ok"),
        "{db:?}: {stdout}"
    );
    assert!(
        stdout.contains("even rows kept theirs': ok"),
        "{db:?}: {stdout}"
    );
    let (count, errors, rollbacks) = txn_counts(&dir.path().join("results"))["maybe"];
    assert_eq!(errors, 0);
    assert_eq!(count + rollbacks, 200, "{db:?}");
    // Half the rows are odd: 100 ± 5σ (σ ≈ 7).
    assert!((65..=135).contains(&rollbacks), "{db:?}: {rollbacks}");
    db.drop(name);
}

#[test]
fn rollback_when_rolls_back_on_sqlite() {
    rollback_when(Db::Lite, "rules_rbw");
}

#[test]
fn rollback_when_rolls_back_on_mariadb() {
    rollback_when(Db::My, "sbs_rules_rbw_my");
}

#[test]
fn rollback_when_rolls_back_on_postgresql() {
    rollback_when(Db::Pg, "sbs_rules_rbw_pg");
}

/// Statement `a` runs with its own `ps_mode`, statement `b` with the target's: both write the
/// same values, and the server counts the executions of prepared statements — MariaDB's
/// session `Com_stmt_execute`, PostgreSQL's executions of the session's prepared INSERTs
/// (`pg_prepared_statements`) — recorded by the workload's last step (as text itself).
fn ps_mode_suite(target: &str, target_mode: &str, a_mode: &str, prepared: u32) -> String {
    format!(
        r#"[suite]
name = "psm"
server_cost = false

{target}{target_mode}
[defaults]
workload = "psm"
threads = 1
events = 40
time = 0
check = true

[workloads.psm]
summary = "ps_mode per statement"
schema = ["CREATE TABLE a (id INT PRIMARY KEY, k INT, s VARCHAR(20))", "CREATE TABLE b (id INT PRIMARY KEY, k INT, s VARCHAR(20))", "CREATE TABLE snap (n BIGINT)"]
cleanup = ["DROP TABLE IF EXISTS a", "DROP TABLE IF EXISTS b", "DROP TABLE IF EXISTS snap"]

[[workloads.psm.load]]
table = "snap"
rows = 1
columns = [{{ name = "n", gen = {{ const = -1 }} }}]

[workloads.psm.params]
id = {{ sequence = 1 }}
k = {{ uniform = [-1000, 1000] }}
s = {{ choice = ["it's", "a\\b", "x\"y", "plain"] }}

[workloads.psm.transactions.probe]
steps = [
  {{ sql = "INSERT INTO a (id, k, s) VALUES (:id, :k, :s)", ps_mode = "{a_mode}" }},
  {{ sql = "INSERT INTO b (id, k, s) VALUES (:id, :k, :s)" }},
  {{ ps_mode = "disable", sql = {{ mysql = "UPDATE snap SET n = (SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'COM_STMT_EXECUTE')", pgsql = "UPDATE snap SET n = (SELECT COALESCE(SUM(generic_plans + custom_plans), 0) FROM pg_prepared_statements WHERE statement LIKE 'INSERT INTO%')", sqlite = "UPDATE snap SET n = {prepared}" }} }},
]

[[workloads.psm.checks]]
name = "both wrote every value alike"
sql = "SELECT COUNT(*) FROM a JOIN b ON b.id = a.id AND b.k = a.k AND b.s = a.s"
expect = 40

[[workloads.psm.checks]]
name = "prepared executions"
sql = "SELECT n FROM snap"
expect = {prepared}
"#
    )
}

fn ps_mode_per_statement(db: Db, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let Some(target) = fresh(db, name, dir.path()) else {
        return;
    };
    // (the target's ps_mode, statement a's, the prepared executions: b's 40, a's 40 if it is).
    for (i, (target_mode, a_mode, prepared)) in [
        ("", "disable", 40),
        ("", "auto", 80),
        ("ps_mode = \"disable\"\n", "auto", 40),
    ]
    .into_iter()
    .enumerate()
    {
        // With the target's `disable`, b runs as text and a alone is prepared.
        let prepared = if target_mode.is_empty() { prepared } else { 40 };
        let sub = dir.path().join(i.to_string());
        std::fs::create_dir_all(&sub).unwrap();
        let text = ps_mode_suite(&target, target_mode, a_mode, prepared);
        let (code, stdout, stderr) = run(&sub, &text);
        assert_eq!(
            code,
            Some(0),
            "{db:?} {target_mode} {a_mode}: {stdout}\n{stderr}"
        );
        assert!(
            stdout.contains("'prepared executions': ok")
                && stdout.contains("'both wrote every value alike': ok"),
            "{db:?} {target_mode} {a_mode}: {stdout}"
        );
    }
    db.drop(name);
}

#[test]
fn ps_mode_per_statement_on_sqlite() {
    ps_mode_per_statement(Db::Lite, "rules_psm");
}

#[test]
fn ps_mode_per_statement_on_mariadb() {
    ps_mode_per_statement(Db::My, "sbs_rules_psm_my");
}

#[test]
fn ps_mode_per_statement_on_postgresql() {
    ps_mode_per_statement(Db::Pg, "sbs_rules_psm_pg");
}

/// Distributions with parameters of their own, seen in the data the server stores: a load of
/// 20,000 rows whose columns draw a zipfian of exponent 1.5 next to one of the run's (0.8),
/// YCSB's scrambled zipfian and an exponential; and think times from an exponential that the
/// transaction also stores. The checks bound the shares by the exact laws (±5σ), with
/// `:rows` placeholders for the row count.
fn distributions(db: Db, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let Some(target) = fresh(db, name, dir.path()) else {
        return;
    };
    let text = format!(
        r#"[suite]
name = "dist"
server_cost = false

{target}
[defaults]
workload = "dist"
rand_seed = 7
threads = 1
events = 300
time = 0
check = true

[workloads.dist]
summary = "per-generator distributions"
schema = ["CREATE TABLE d (id INT PRIMARY KEY, hot INT, cold INT, ycsb INT, e INT)", "CREATE TABLE waits (w NUMERIC(10,3))"]
cleanup = ["DROP TABLE IF EXISTS d", "DROP TABLE IF EXISTS waits"]

[workloads.dist.options]
rows = {{ type = "int", default = 20000, dataset = true, help = "rows of d" }}

[[workloads.dist.load]]
table = "d"
rows = "rows"
columns = [
  {{ name = "id", gen = "row" }},
  {{ name = "hot", gen = {{ zipfian = [1, 1000], exponent = 1.5 }} }},
  {{ name = "cold", gen = {{ zipfian = [1, 1000] }} }},
  {{ name = "ycsb", gen = {{ zipfian = [1, 1000], scrambled = true }} }},
  {{ name = "e", gen = {{ exponential = 100, scale = 0 }} }},
]

[workloads.dist.transactions.think]
let = {{ w = {{ exponential = 5 }} }}
think = "w"
steps = [{{ sql = "INSERT INTO waits (w) VALUES (:w)" }}]

[[workloads.dist.checks]]
name = "exponent 1.5: rank 1 holds 39.2 %"
sql = "SELECT CASE WHEN COUNT(*) BETWEEN :rows * 0.375 AND :rows * 0.4096 THEN 1 ELSE 0 END FROM d WHERE hot = 1"
expect = 1

[[workloads.dist.checks]]
name = "the run's exponent 0.8: rank 1 holds 6.5 %"
sql = "SELECT CASE WHEN COUNT(*) BETWEEN :rows * 0.0559 AND :rows * 0.0734 THEN 1 ELSE 0 END FROM d WHERE cold = 1"
expect = 1

[[workloads.dist.checks]]
name = "scrambled: in range"
sql = "SELECT COUNT(*) FROM d WHERE ycsb < 1 OR ycsb > 1000"
expect = 0

[[workloads.dist.checks]]
name = "scrambled: the hottest value holds 1/26.47 (+ what hashes onto it)"
sql = "SELECT CASE WHEN MAX(c) BETWEEN :rows * 0.0335 AND :rows * 0.045 THEN 1 ELSE 0 END FROM (SELECT COUNT(*) AS c FROM d GROUP BY ycsb) x"
expect = 1

[[workloads.dist.checks]]
name = "scrambled: the start of the range is not hot"
sql = "SELECT CASE WHEN COUNT(*) < :rows * 0.1 THEN 1 ELSE 0 END FROM d WHERE ycsb <= 10"
expect = 1

[[workloads.dist.checks]]
name = "exponential: mean 100, e^-1 above it, at most 10 times it"
sql = "SELECT CASE WHEN AVG(e) BETWEEN 96 AND 104 AND SUM(CASE WHEN e > 100 THEN 1 ELSE 0 END) BETWEEN :rows * 0.3490 AND :rows * 0.3831 AND MAX(e) <= 1000 AND MIN(e) >= 0 THEN 1 ELSE 0 END FROM d"
expect = 1

[[workloads.dist.checks]]
name = "think times: exponential of mean 5 ms, at most 50"
sql = "SELECT CASE WHEN COUNT(*) = 300 AND AVG(w) BETWEEN 3.5 AND 6.5 AND MAX(w) <= 50 AND MIN(w) >= 0 THEN 1 ELSE 0 END FROM waits"
expect = 1
"#
    );
    let (code, stdout, stderr) = run(dir.path(), &text);
    assert_eq!(code, Some(0), "{db:?}: {stdout}\n{stderr}");
    assert_eq!(
        stdout.matches("': ok").count(),
        7,
        "{db:?}: {stdout}\n{stderr}"
    );
    db.drop(name);
}

#[test]
fn distributions_per_generator_on_sqlite() {
    distributions(Db::Lite, "rules_dist");
}

#[test]
fn distributions_per_generator_on_mariadb() {
    distributions(Db::My, "sbs_rules_dist_my");
}

#[test]
fn distributions_per_generator_on_postgresql() {
    distributions(Db::Pg, "sbs_rules_dist_pg");
}

/// `validate` refuses each misuse at its line and key, with the fix, before anything runs.
#[test]
fn validate_refuses_misuse_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let target = format!(
        "[target]\ndriver = \"sqlite\"\npath = \"{}\"\n",
        dir.path().join("v.db").display()
    );
    let good = retry_suite(
        &target,
        "retry = \"same\"",
        "ignore_errors = [\"duplicate_key\"]",
    );
    let cases = [
        (
            "retry = \"same\"",
            "retry = \"again\"",
            "`retry` is \"redraw\" or \"same\"",
        ),
        (
            "ignore_errors = [\"duplicate_key\"]",
            "ignore_errors = [\"dup\"]",
            "`dup` is not an error code",
        ),
        (
            "k = { uniform = [1, 1000000000] }",
            "k = { uniform = [1, 1000000000], exponent = 2 }",
            "`exponent` belongs to the `zipfian` generator",
        ),
        (
            "k = { uniform = [1, 1000000000] }",
            "k = { exponential = -3 }",
            "the mean of `exponential` is -3",
        ),
        (
            "sql = \"SELECT COUNT(*) FROM attempts WHERE n > 2 * :tries\"",
            "sql = \"SELECT COUNT(*) FROM attempts WHERE n > 2 * :k\"",
            "`k`",
        ),
        (
            "autocommit = true",
            "autocommit = true\nrollback_when = \"k > 3\"",
            "`rollback_when` needs a transaction",
        ),
    ];
    for (from, to, message) in cases {
        let text = good.replacen(from, to, 1);
        let path = dir.path().join("suite.toml");
        std::fs::write(&path, &text).unwrap();
        let out = sbsuite().arg("validate").arg(&path).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{to}: {err}");
        let last = to.lines().last().unwrap();
        let line = text.lines().position(|l| l == last).unwrap() + 1;
        assert!(
            err.contains(message) && err.contains(&format!("suite.toml:{line}:")),
            "{to}: line {line}: {err}"
        );
        assert!(err.contains("help:"), "{err}");
    }
}
