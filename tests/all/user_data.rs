//! Issue #26: a suite never touches what the user owns, asserted with the servers' own
//! catalogs (never sbsuite's report) on MariaDB, PostgreSQL and SQLite.
//!
//! * A prepare that meets a table of the user's fails before it creates anything, and its
//!   cleanup drops only what the run created (the built-in OLTP tables, a custom workload's
//!   schema, a sysbench Lua script's own `CREATE TABLE`/`DROP TABLE`).
//! * `[suite] dataset = "existing"`: no prepare, no cleanup; `sbsuite convert` of a loop that
//!   only runs makes one, and it runs on the user's sysbench tables and leaves them as they
//!   were; a missing or short table fails before anything runs.
//! * A resume after kill -9 in the middle of a prepare drops what that prepare created.
//! * A missing database is refused before anything runs, with the fix.
//! * `sbsuite sysbench … --mysql-password=… --sbsuite-results=DIR` logs in with the password of
//!   the line, which is stored nowhere.
//!
//! Each test has its own database `sbsuite_t26_<name>` (created and dropped here as root /
//! postgres on 127.0.0.1), so they run in parallel with everyone else's. Without a server a
//! test says why and passes, unless `CI` is set.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use tokio_postgres::SimpleQueryMessage;

use crate::common;

use common::db::{admin_my, admin_pg, my_opts, pg_client, rt};
use common::{all_files_text, results, run_dir, sbsuite, sbsuite_process};

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    My,
    Pg,
    Lite,
}

/// One test's database, read and written behind sbsuite's back; dropped with the test.
struct Db {
    kind: Kind,
    name: String,
    /// The SQLite file (SQLite only).
    file: PathBuf,
}

impl Db {
    /// A fresh database `sbsuite_t26_<name>` (a SQLite file in `dir`); `None` after saying why
    /// when its server is not reachable.
    fn fresh(kind: Kind, name: &str, dir: &Path) -> Option<Db> {
        let db = Db {
            kind,
            name: format!("sbsuite_t26_{name}"),
            file: dir.join(format!("{name}.db")),
        };
        let made = match kind {
            Kind::My => admin_my(&[
                format!("DROP DATABASE IF EXISTS {}", db.name),
                format!("CREATE DATABASE {}", db.name),
            ]),
            Kind::Pg => admin_pg(&[
                format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", db.name),
                format!("CREATE DATABASE {}", db.name),
            ]),
            Kind::Lite => Some(()),
        };
        if made.is_none() {
            common::skip(match kind {
                Kind::My => "no MySQL/MariaDB server accepts root@127.0.0.1:3306",
                _ => "no PostgreSQL server accepts postgres@127.0.0.1:5432",
            });
            return None;
        }
        Some(db)
    }

    /// The `[target]` section of a suite for this database.
    fn target(&self) -> String {
        match self.kind {
            Kind::My => format!(
                "[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:3306\"]\nuser = \"root\"\ndatabase = \"{}\"\n",
                self.name
            ),
            Kind::Pg => format!(
                "[target]\ndriver = \"pgsql\"\nhosts = [\"127.0.0.1:5432\"]\nuser = \"postgres\"\ndatabase = \"{}\"\nssl = \"disable\"\n",
                self.name
            ),
            Kind::Lite => format!("[target]\ndriver = \"sqlite\"\npath = {:?}\n", self.file),
        }
    }

    /// The connection options of a sysbench command line for this database.
    fn sysbench_options(&self) -> Vec<String> {
        match self.kind {
            Kind::My => vec![
                "--mysql-host=127.0.0.1".into(),
                "--mysql-user=root".into(),
                format!("--mysql-db={}", self.name),
            ],
            Kind::Pg => vec![
                "--db-driver=pgsql".into(),
                "--pgsql-host=127.0.0.1".into(),
                "--pgsql-user=postgres".into(),
                format!("--pgsql-db={}", self.name),
            ],
            Kind::Lite => unreachable!("sysbench has no SQLite driver"),
        }
    }

    /// The first column of every row of `sql`, as text (NULL → "NULL").
    fn column(&self, sql: &str) -> Vec<String> {
        match self.kind {
            Kind::My => rt().block_on(async {
                let mut c = mysql_async::Conn::new(my_opts(Some(&self.name)))
                    .await
                    .unwrap();
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
            Kind::Pg => rt().block_on(async {
                let c = pg_client(&self.name).await.unwrap();
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
            Kind::Lite => {
                let c = rusqlite::Connection::open(&self.file).unwrap();
                let mut st = c.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
                st.query_map([], |r| {
                    Ok(match r.get_ref(0)? {
                        rusqlite::types::ValueRef::Null => "NULL".to_string(),
                        rusqlite::types::ValueRef::Integer(i) => i.to_string(),
                        rusqlite::types::ValueRef::Real(f) => f.to_string(),
                        rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                            String::from_utf8_lossy(t).into_owned()
                        }
                    })
                })
                .unwrap()
                .map(Result::unwrap)
                .collect()
            }
        }
    }

    fn exec(&self, sql: &str) {
        match self.kind {
            Kind::My => rt().block_on(async {
                let mut c = mysql_async::Conn::new(my_opts(Some(&self.name)))
                    .await
                    .unwrap();
                c.query_drop(sql)
                    .await
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
                let _ = c.disconnect().await;
            }),
            Kind::Pg => rt().block_on(async {
                let c = pg_client(&self.name).await.unwrap();
                c.batch_execute(sql)
                    .await
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
            }),
            Kind::Lite => {
                let c = rusqlite::Connection::open(&self.file).unwrap();
                c.execute_batch(sql)
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
            }
        }
    }

    /// The tables of the database, from the server's catalog, sorted.
    fn tables(&self) -> Vec<String> {
        let sql = match self.kind {
            Kind::My => format!(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = '{}' ORDER BY 1",
                self.name
            ),
            Kind::Pg => {
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1".into()
            }
            Kind::Lite => {
                if !self.file.exists() {
                    return Vec::new();
                }
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY 1".into()
            }
        };
        self.column(&sql)
    }

    /// The user's table `name`: two rows the test checks afterwards.
    fn user_table(&self, name: &str) {
        self.exec(&format!(
            "CREATE TABLE {name} (id INTEGER PRIMARY KEY, note VARCHAR(20))"
        ));
        self.exec(&format!(
            "INSERT INTO {name} (id, note) VALUES (1, 'mine'), (2, 'keep me')"
        ));
    }

    /// The rows of the user's table `name`, as `id:note`.
    fn user_rows(&self, name: &str) -> Vec<String> {
        let concat = match self.kind {
            Kind::My => "CONCAT(id, ':', note)",
            _ => "id || ':' || note",
        };
        self.column(&format!("SELECT {concat} FROM {name} ORDER BY id"))
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        match self.kind {
            Kind::My => {
                admin_my(&[format!("DROP DATABASE IF EXISTS {}", self.name)]);
            }
            Kind::Pg => {
                admin_pg(&[format!(
                    "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                    self.name
                )]);
            }
            Kind::Lite => {}
        }
    }
}

/// Writes `suite.toml` (named `name`) into `dir`.
fn suite(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, format!("[suite]\nname = \"{name}\"\n{body}")).unwrap();
    path
}

/// `sbsuite run FILE` in `dir` with results under `dir/results`: (exit code, stdout, stderr).
fn run(dir: &Path, file: &Path) -> (Option<i32>, String, String) {
    let out = sbsuite()
        .current_dir(dir)
        .arg("run")
        .arg(file)
        .args(["--progress", "off", "--results-dir"])
        .arg(dir.join("results"))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `sbsuite sysbench ARGS…` for `db`: must succeed.
fn sysbench(db: &Db, args: &[&str]) {
    let out = sbsuite()
        .arg("sysbench")
        .args(db.sysbench_options())
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "sysbench {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

const OLTP: &str = "[defaults]\nworkload = \"oltp_read_only\"\ntables = 3\ntable_size = 100\ntime = 1\nthreads = 1\n";

// ---------------------------------------------------------------------------------------
// 1. A user table of the same name survives a failed prepare and the cleanup after it.

fn oltp_prepare_leaves_the_users_table(kind: Kind, name: &str) {
    prepare_leaves_the_users_table(kind, name, OLTP);
}

/// A suite of `defaults` whose prepare makes sbtest1..3 meets the user's `sbtest2`.
fn prepare_leaves_the_users_table(kind: Kind, name: &str, defaults: &str) {
    let dir = tempfile::tempdir().unwrap();
    let Some(db) = Db::fresh(kind, name, dir.path()) else {
        return;
    };
    db.user_table("sbtest2");
    let file = suite(dir.path(), name, &format!("{}{defaults}", db.target()));
    let (code, stdout, stderr) = run(dir.path(), &file);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("table 'sbtest2' already exists in ")
            && stderr.contains("this run did not create it"),
        "{stderr}"
    );
    assert!(stderr.contains("kept 'sbtest2' in "), "{stderr}");
    // The server's catalog: the user's table alone, its rows as they were; the prepare created
    // nothing (it refused before its first table).
    assert_eq!(db.tables(), ["sbtest2"], "{stdout}\n{stderr}");
    assert_eq!(db.user_rows("sbtest2"), ["1:mine", "2:keep me"]);
    assert!(!stdout.contains("Dropping table"), "{stdout}");
    let tables_log =
        std::fs::read_to_string(run_dir(&dir.path().join("results"), name).join("tables.log"))
            .unwrap();
    assert_eq!(tables_log, "", "nothing was created");
}

#[test]
fn a_users_table_survives_a_failed_prepare_and_cleanup_on_mariadb() {
    oltp_prepare_leaves_the_users_table(Kind::My, "keep_my");
}

#[test]
fn a_users_table_survives_a_failed_prepare_and_cleanup_on_postgresql() {
    oltp_prepare_leaves_the_users_table(Kind::Pg, "keep_pg");
}

#[test]
fn a_users_table_survives_a_failed_prepare_and_cleanup_on_sqlite() {
    oltp_prepare_leaves_the_users_table(Kind::Lite, "keep_lite");
}

/// bulk_insert prepares with `CREATE TABLE IF NOT EXISTS` (as sysbench's script): in a suite it
/// must not take the user's table for its own either.
#[test]
fn bulk_insert_leaves_the_users_table_on_mariadb() {
    prepare_leaves_the_users_table(
        Kind::My,
        "keep_bulk",
        "[defaults]\nworkload = \"bulk_insert\"\nthreads = 3\ntime = 1\n",
    );
}

/// A custom workload: its schema creates `own_a` (the run's) and asks for `own_b` only if it
/// is not there (the user's, with rows); the cleanup drops `own_a` and keeps `own_b`.
fn custom_cleanup_keeps_the_users_table(kind: Kind, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let Some(db) = Db::fresh(kind, name, dir.path()) else {
        return;
    };
    db.user_table("own_b");
    let body = format!(
        r#"{}
[defaults]
workload = "owned"
threads = 1
events = 10
time = 0

[workloads.owned]
schema = ["CREATE TABLE own_a (v INTEGER)", "CREATE TABLE IF NOT EXISTS own_b (id INTEGER PRIMARY KEY, note VARCHAR(20))"]
cleanup = ["DROP TABLE IF EXISTS own_a", "DROP TABLE IF EXISTS own_b"]

[workloads.owned.params]
x = {{ uniform = [1, 1000] }}

[workloads.owned.transactions.put]
steps = [{{ sql = "INSERT INTO own_a VALUES (:x)" }}]
"#,
        db.target()
    );
    let file = suite(dir.path(), name, &body);
    let (code, stdout, stderr) = run(dir.path(), &file);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("kept 'own_b' in "), "{stderr}");
    assert_eq!(db.tables(), ["own_b"], "{stdout}\n{stderr}");
    assert_eq!(db.user_rows("own_b"), ["1:mine", "2:keep me"]);

    // The plain CREATE TABLE meets the user's `own_a`: the prepare refuses before its first
    // statement, and the cleanup drops nothing.
    db.user_table("own_a");
    std::fs::remove_dir_all(dir.path().join("results")).unwrap();
    let (code, stdout, stderr) = run(dir.path(), &file);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("workload `owned`: table 'own_a' already exists in "),
        "{stderr}"
    );
    assert!(stderr.contains("kept 'own_a', 'own_b' in "), "{stderr}");
    assert_eq!(db.tables(), ["own_a", "own_b"], "{stdout}\n{stderr}");
    assert_eq!(db.user_rows("own_a"), ["1:mine", "2:keep me"]);
    assert_eq!(db.user_rows("own_b"), ["1:mine", "2:keep me"]);
}

#[test]
fn a_custom_workloads_cleanup_keeps_the_users_table_on_mariadb() {
    custom_cleanup_keeps_the_users_table(Kind::My, "custom_my");
}

#[test]
fn a_custom_workloads_cleanup_keeps_the_users_table_on_sqlite() {
    custom_cleanup_keeps_the_users_table(Kind::Lite, "custom_lite");
}

/// A sysbench Lua script's prepare creates `lua_a`, then fails on `lua_b` (the user's); its
/// own cleanup drops both names: `lua_a` goes (the run created it), `lua_b` stays.
fn lua_cleanup_keeps_the_users_table(kind: Kind, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let Some(db) = Db::fresh(kind, name, dir.path()) else {
        return;
    };
    db.user_table("lua_b");
    std::fs::write(
        dir.path().join("two.lua"),
        r#"function prepare()
  local con = sysbench.sql.driver():connect()
  con:query("CREATE TABLE lua_a (v INTEGER)")
  con:query("CREATE TABLE lua_b (v INTEGER)")
end

function cleanup()
  local con = sysbench.sql.driver():connect()
  con:query("DROP TABLE IF EXISTS lua_a")
  con:query("DROP TABLE IF EXISTS lua_b")
end

function event()
end
"#,
    )
    .unwrap();
    let body = format!(
        "{}\n[defaults]\nworkload = {{ script = \"two.lua\" }}\nthreads = 1\nevents = 1\ntime = 0\n",
        db.target()
    );
    let file = suite(dir.path(), name, &body);
    let (code, stdout, stderr) = run(dir.path(), &file);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("kept 'lua_b' in "), "{stderr}");
    assert_eq!(db.tables(), ["lua_b"], "{stdout}\n{stderr}");
    assert_eq!(db.user_rows("lua_b"), ["1:mine", "2:keep me"]);
    let tables_log =
        std::fs::read_to_string(run_dir(&dir.path().join("results"), name).join("tables.log"))
            .unwrap();
    assert!(
        tables_log.contains(" prepare creating ") && tables_log.contains("\"table\":\"lua_a\""),
        "{tables_log}"
    );
    assert!(tables_log.contains(" cleanup dropped "), "{tables_log}");
    // `lua_b` was recorded before its CREATE TABLE, which the server refused: withdrawn.
    let lua_b: Vec<&str> = tables_log
        .lines()
        .filter(|l| l.contains("\"table\":\"lua_b\""))
        .map(|l| l.split(' ').nth(2).unwrap())
        .collect();
    assert_eq!(lua_b, ["creating", "not-created"], "{tables_log}");
}

#[test]
fn a_lua_scripts_cleanup_keeps_the_users_table_on_postgresql() {
    lua_cleanup_keeps_the_users_table(Kind::Pg, "lua_pg");
}

#[test]
fn a_lua_scripts_cleanup_keeps_the_users_table_on_sqlite() {
    lua_cleanup_keeps_the_users_table(Kind::Lite, "lua_lite");
}

// ---------------------------------------------------------------------------------------
// 2. `convert` of a loop that only runs: the user's sysbench tables are used and left intact.

/// (rows, sum of k) of each sbtest table: what a read-only run must leave as it found it.
fn fingerprint(db: &Db, tables: usize) -> Vec<String> {
    let concat = |t: usize| match db.kind {
        Kind::My => format!("SELECT CONCAT(COUNT(*), '/', SUM(k)) FROM sbtest{t}"),
        _ => format!("SELECT COUNT(*) || '/' || SUM(k) FROM sbtest{t}"),
    };
    (1..=tables).flat_map(|t| db.column(&concat(t))).collect()
}

fn converted_run_only_loop_keeps_the_tables(kind: Kind, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let Some(db) = Db::fresh(kind, name, dir.path()) else {
        return;
    };
    sysbench(
        &db,
        &[
            "oltp_read_only",
            "--tables=2",
            "--table-size=200",
            "prepare",
        ],
    );
    let before = fingerprint(&db, 2);
    assert_eq!(before.len(), 2);
    assert!(before.iter().all(|f| f.starts_with("200/")), "{before:?}");

    let line = format!(
        "for t in 1 2; do sysbench oltp_read_only {} --tables=2 --table-size=200 --time=1 \
         --threads=$t run; done\n",
        db.sysbench_options().join(" ")
    );
    let out = sbsuite().arg("convert").write_stdin(line).output().unwrap();
    let converted = String::from_utf8_lossy(&out.stdout).into_owned();
    let notes = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{notes}");
    assert!(
        converted.contains("\ndataset = \"existing\"\n"),
        "{converted}"
    );
    assert!(!converted.contains("password"), "{converted}");
    assert!(
        notes.contains("no line prepares") && notes.contains("dataset = \"existing\""),
        "{notes}"
    );
    let file = dir.path().join("converted.toml");
    // PostgreSQL's shared server speaks plain text.
    let converted = match kind {
        Kind::Pg => converted.replace("[target]\n", "[target]\nssl = \"disable\"\n"),
        _ => converted,
    };
    std::fs::write(&file, &converted).unwrap();
    let plan = sbsuite().arg("plan").arg(&file).output().unwrap();
    let plan = String::from_utf8_lossy(&plan.stdout);
    assert!(plan.contains("(0 prepare, 2 run, 0 cleanup)"), "{plan}");

    let (code, stdout, stderr) = run(dir.path(), &file);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let rows = results(&dir.path().join("results"));
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows.iter().all(|r| r["status"] == "ok"), "{rows:?}");
    assert!(!stdout.contains("Creating table") && !stdout.contains("Dropping table"));
    assert_eq!(db.tables(), ["sbtest1", "sbtest2"]);
    assert_eq!(
        fingerprint(&db, 2),
        before,
        "the tables as the user left them"
    );
}

#[test]
fn a_converted_run_only_loop_runs_on_the_users_tables_on_mariadb() {
    converted_run_only_loop_keeps_the_tables(Kind::My, "convert_my");
}

#[test]
fn a_converted_run_only_loop_runs_on_the_users_tables_on_postgresql() {
    converted_run_only_loop_keeps_the_tables(Kind::Pg, "convert_pg");
}

// ---------------------------------------------------------------------------------------
// 3. An existing dataset is checked before anything runs: a missing table, a short table.

fn existing_data_is_checked_before_anything(kind: Kind, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let Some(db) = Db::fresh(kind, name, dir.path()) else {
        return;
    };
    let body = format!(
        "dataset = \"existing\"\n{}[defaults]\nworkload = \"oltp_point_select\"\ntables = 2\ntable_size = 100\ntime = 1\n",
        db.target()
    );
    let file = suite(dir.path(), name, &body);
    let results_dir = dir.path().join("results");
    // The SQLite file holds one table of the two: one prepared by sbsuite sysbench elsewhere
    // would need a SQLite driver sysbench does not have, so the table is made by hand.
    let insert = |n: usize, ids: std::ops::RangeInclusive<usize>| {
        let values: Vec<String> = ids.map(|id| format!("({id}, {id})")).collect();
        db.exec(&format!(
            "INSERT INTO sbtest{n} (id, k) VALUES {}",
            values.join(", ")
        ));
    };
    let make = |n: usize, rows: usize| {
        db.exec(&format!(
            "CREATE TABLE sbtest{n} (id INTEGER PRIMARY KEY, k INTEGER NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '')"
        ));
        insert(n, 1..=rows);
    };
    make(1, 100);
    let (code, stdout, stderr) = run(dir.path(), &file);
    assert_eq!(code, Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("[suite] dataset = \"existing\": table 'sbtest2' does not exist in ")
            && stderr.contains("(tables = 2)")
            && stderr.contains("nothing has run"),
        "{stderr}"
    );
    assert!(!results_dir.exists(), "nothing was written");
    assert_eq!(stdout, "");

    make(2, 40);
    let (code, stdout, stderr) = run(dir.path(), &file);
    assert_eq!(code, Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("table 'sbtest2' in ")
            && stderr.contains("has rows up to id 40, fewer than table_size = 100"),
        "{stderr}"
    );
    assert!(!results_dir.exists(), "nothing was written");
    assert_eq!(db.tables(), ["sbtest1", "sbtest2"]);
    assert_eq!(db.column("SELECT COUNT(*) FROM sbtest2"), ["40"]);

    insert(2, 41..=100);
    let (code, stdout, stderr) = run(dir.path(), &file);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert_eq!(db.tables(), ["sbtest1", "sbtest2"], "no cleanup");
}

#[test]
fn existing_data_is_checked_before_anything_on_mariadb() {
    existing_data_is_checked_before_anything(Kind::My, "existing_my");
}

#[test]
fn existing_data_is_checked_before_anything_on_postgresql() {
    existing_data_is_checked_before_anything(Kind::Pg, "existing_pg");
}

#[test]
fn existing_data_is_checked_before_anything_on_sqlite() {
    existing_data_is_checked_before_anything(Kind::Lite, "existing_lite");
}

// ---------------------------------------------------------------------------------------
// 4. kill -9 in the middle of a prepare, then --resume: what the prepare created is dropped.

#[test]
fn a_resume_after_a_crash_mid_prepare_drops_what_the_prepare_created() {
    let dir = tempfile::tempdir().unwrap();
    let Some(db) = Db::fresh(Kind::My, "crash", dir.path()) else {
        return;
    };
    db.user_table("keep_me");
    let body = format!(
        "{}[defaults]\nworkload = \"oltp_point_select\"\ntables = 2\ntable_size = 200000\ntime = 1\nthreads = 2\n",
        db.target()
    );
    let file = suite(dir.path(), "crash", &body);
    let results_dir = dir.path().join("results");
    let mut child = sbsuite_process()
        .current_dir(dir.path())
        .arg("run")
        .arg(&file)
        .args(["--progress", "off", "--results-dir"])
        .arg(&results_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once both tables are recorded (before each CREATE TABLE) and made on the server,
    // while they load, before the prepare ends.
    let started = Instant::now();
    let log = loop {
        let log = std::fs::read_dir(results_dir.join("crash"))
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| std::fs::read_to_string(e.unwrap().path().join("tables.log")).ok())
            .unwrap_or_default();
        if log.matches(" prepare creating ").count() == 2 && db.tables().len() == 3 {
            break log;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no table recorded: {log}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let run = run_dir(&results_dir, "crash");
    let journal = std::fs::read_to_string(run.join("journal.log")).unwrap();
    assert_eq!(
        journal, "1 prepare start\n",
        "killed inside the prepare: {log}"
    );
    assert_eq!(db.tables(), ["keep_me", "sbtest1", "sbtest2"]);

    let out = sbsuite()
        .current_dir(dir.path())
        .args(["run", "--progress", "off", "--resume"])
        .arg(&run)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(db.tables(), ["keep_me"], "{stderr}");
    assert_eq!(db.user_rows("keep_me"), ["1:mine", "2:keep me"]);
    let log = std::fs::read_to_string(run.join("tables.log")).unwrap();
    // Created, dropped by the resume before its prepare, created again, dropped by the cleanup.
    assert_eq!(log.matches(" prepare creating ").count(), 4, "{log}");
    assert_eq!(log.matches(" dropped ").count(), 4, "{log}");
    assert!(!stderr.contains("kept"), "{stderr}");
}

// ---------------------------------------------------------------------------------------
// 5. A missing database is refused before anything runs, with the fix.

fn missing_database_is_refused(kind: Kind) {
    if kind == Kind::My && admin_my(&[]).is_none() {
        common::skip("no MySQL/MariaDB server accepts root@127.0.0.1:3306");
        return;
    }
    if kind == Kind::Pg && admin_pg(&[]).is_none() {
        common::skip("no PostgreSQL server accepts postgres@127.0.0.1:5432");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let name = "sbsuite_t26_no_such_db";
    let target = match kind {
        Kind::My => format!(
            "[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:3306\"]\nuser = \"root\"\ndatabase = \"{name}\"\n"
        ),
        _ => format!(
            "[target]\ndriver = \"pgsql\"\nhosts = [\"127.0.0.1:5432\"]\nuser = \"postgres\"\ndatabase = \"{name}\"\nssl = \"disable\"\n"
        ),
    };
    let file = suite(dir.path(), "nodb", &format!("{target}{OLTP}"));
    let (code, stdout, stderr) = run(dir.path(), &file);
    assert_eq!(code, Some(2), "{stdout}\n{stderr}");
    let port = if kind == Kind::My { 3306 } else { 5432 };
    assert!(
        stderr.contains(&format!(
            "[target] database `{name}` does not exist on 127.0.0.1:{port}: error "
        )) && stderr.contains(&format!("Create it first (CREATE DATABASE {name};)"))
            && stderr.contains("nothing has run"),
        "{stderr}"
    );
    assert_eq!(stdout, "", "no step ran");
    assert!(!dir.path().join("results").exists(), "nothing was written");
}

#[test]
fn a_missing_database_is_refused_before_anything_on_mariadb() {
    missing_database_is_refused(Kind::My);
}

#[test]
fn a_missing_database_is_refused_before_anything_on_postgresql() {
    missing_database_is_refused(Kind::Pg);
}

// ---------------------------------------------------------------------------------------
// 6. `sbsuite sysbench … --mysql-password=… --sbsuite-results=DIR`.

/// The login of the password test, made idempotently: rights on `sbsuite_t26_pw%` only.
const PW_USER: &str = "sbsuite_t26_pw";
const PW: &str = "sbsuite-t26-secret-9";

#[test]
fn a_command_line_password_logs_in_with_sbsuite_results_and_is_stored_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let Some(db) = Db::fresh(Kind::My, "pw", dir.path()) else {
        return;
    };
    admin_my(&[
        format!("CREATE USER IF NOT EXISTS '{PW_USER}'@'%' IDENTIFIED BY '{PW}'"),
        format!("ALTER USER '{PW_USER}'@'%' IDENTIFIED BY '{PW}'"),
        format!("GRANT ALL ON `sbsuite\\_t26\\_pw%`.* TO '{PW_USER}'@'%'"),
    ])
    .expect("creating the password user");
    let line = [
        "oltp_point_select".to_string(),
        "--mysql-host=127.0.0.1".into(),
        format!("--mysql-user={PW_USER}"),
        format!("--mysql-password={PW}"),
        format!("--mysql-db={}", db.name),
        "--tables=1".into(),
        "--table-size=100".into(),
        "--time=1".into(),
    ];
    let prepare = sbsuite()
        .arg("sysbench")
        .args(&line)
        .arg("prepare")
        .env_remove("MYSQL_PASSWORD")
        .output()
        .unwrap();
    assert!(prepare.status.success(), "{prepare:?}");
    let results_dir = dir.path().join("results");
    let out = sbsuite()
        .current_dir(dir.path())
        .arg("sysbench")
        .args(&line)
        .arg(format!("--sbsuite-results={}", results_dir.display()))
        .arg("run")
        .env_remove("MYSQL_PASSWORD")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(!stderr.contains("MYSQL_PASSWORD is not set"), "{stderr}");
    assert!(
        stderr.contains("`sbsuite run --resume` of this run reads it from $MYSQL_PASSWORD"),
        "{stderr}"
    );
    let rows = results(&results_dir);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["status"], "ok", "{rows:?}");
    // The run's own data, not a prepare of its own: the table the line prepared is still there.
    assert_eq!(db.tables(), ["sbtest1"]);
    // The password: in no file of the run, on no output.
    let files = all_files_text(&results_dir);
    assert!(!files.contains(PW), "the password is stored");
    assert!(!stdout.contains(PW) && !stderr.contains(PW));
    let run = run_dir(&results_dir, "oltp-point-select");
    let stored = std::fs::read_to_string(run.join("suite.toml")).unwrap();
    assert!(
        stored.contains("password = \"{{ env.MYSQL_PASSWORD }}\""),
        "{stored}"
    );

    // A resume reads the stored suite: without the variable it is refused with the fix, with
    // it it logs in (the row is kept; nothing is left to run).
    let resume = |env: Option<&str>| {
        let mut cmd = sbsuite();
        cmd.current_dir(dir.path())
            .args(["run", "--progress", "off", "--resume"])
            .arg(&run)
            .env_remove("MYSQL_PASSWORD");
        if let Some(pw) = env {
            cmd.env("MYSQL_PASSWORD", pw);
        }
        let out = cmd.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stderr) = resume(None);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("environment variable MYSQL_PASSWORD is not set")
            && stderr.contains("export MYSQL_PASSWORD"),
        "{stderr}"
    );
    let (code, stderr) = resume(Some(PW));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains(PW));
}

/// fileio's test files are data too: with `dataset = "existing"` they are checked before
/// anything runs, used, and left in place (no prepare rewrites them, no cleanup removes them).
#[test]
fn existing_fileio_files_are_checked_used_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let file = suite(
        dir.path(),
        "files",
        "dataset = \"existing\"\n[defaults]\nworkload = \"fileio\"\nfile_num = 2\nfile_total_size = \"1M\"\nfile_test_mode = \"rndrd\"\ntime = 1\n",
    );
    let (code, stdout, stderr) = run(dir.path(), &file);
    assert_eq!(code, Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("[suite] dataset = \"existing\": test file ")
            && stderr.contains("test_file.0 cannot be read"),
        "{stderr}"
    );
    assert!(!dir.path().join("results").exists());
    let out = sbsuite()
        .current_dir(dir.path())
        .args([
            "sysbench",
            "fileio",
            "--file-num=2",
            "--file-total-size=1M",
            "prepare",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let (code, stdout, stderr) = run(dir.path(), &file);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(!stdout.contains("Removing test files"), "{stdout}");
    for f in ["test_file.0", "test_file.1"] {
        assert_eq!(
            std::fs::metadata(dir.path().join(f)).unwrap().len(),
            512 * 1024
        );
    }
}
