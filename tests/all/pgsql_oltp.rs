//! The OLTP engine against the real local PostgreSQL server (never a mock): the statement mix
//! PostgreSQL's own statistics count, COPY-exact prepares with ANALYZE and the `k` index,
//! reconnects after `pg_terminate_backend`, unique violations ignored and counted (inside a
//! transaction, which must then be rolled back, and outside one), TLS modes, and clear failures
//! for a wrong password, a missing database and an unreachable host.
//!
//! Connections are in plain text (`sslmode = disable`) unless a test says otherwise, so they go
//! through sbsuite's own protocol client (`src/db/pgsql/wire.rs`); the statement mix, the
//! reconnects, the wrong password and the TLS modes run through tokio-postgres as well
//! (`SBSUITE_PGSQL_CLIENT=tokio`).
//!
//! Each test uses its own database `sbsuite_t_<name>` (created and dropped here through the
//! `postgres` superuser over 127.0.0.1:5432), and the tests of this file run one at a time.
//! Without a reachable server the tests print why and pass, unless `CI` is set: then they fail
//! (`.ci/run` starts the server and adds the password-checked roles to pg_hba.conf).
//!
//! The TLS test runs against a private throwaway PostgreSQL with TLS on
//! (`common::private_server`), never the shared one: it must not depend on how the shared
//! server is configured, and never skips under CI.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

use crate::common;

use common::db::{pg_client_at, rt};
use common::private_server::{PrivatePostgres, or_skip};
use common::{all_files_text, report_count, results, run_dir, sbsuite};

const HOST: &str = "127.0.0.1";
const PORT: u16 = 5432;

/// An admin session as `postgres` to `db` on its own runtime (dropped together).
struct Admin {
    rt: tokio::runtime::Runtime,
    client: Client,
}

impl Admin {
    fn connect(db: &str) -> Option<Admin> {
        common::server_lock::share();
        Admin::connect_at(PORT, db)
    }

    /// [`Admin::connect`] to the server on `port` (a test's private server).
    fn connect_at(port: u16, db: &str) -> Option<Admin> {
        let rt = rt();
        let client = rt.block_on(pg_client_at(port, db))?;
        Some(Admin { rt, client })
    }

    fn exec(&self, sql: &str) {
        self.rt
            .block_on(self.client.batch_execute(sql))
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }

    /// The first column of every row, as text.
    fn column(&self, sql: &str) -> Vec<Option<String>> {
        let msgs = self
            .rt
            .block_on(self.client.simple_query(sql))
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        msgs.iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => Some(r.get(0).map(str::to_string)),
                _ => None,
            })
            .collect()
    }

    fn int(&self, sql: &str) -> i64 {
        self.column(sql)[0]
            .as_deref()
            .unwrap_or_else(|| panic!("{sql}: NULL"))
            .parse()
            .unwrap()
    }
}

/// Puts `ALTER SYSTEM` settings back when dropped, also when the test panics: each setting's
/// line in postgresql.auto.conf as it was (set again, or reset when there was none), then a
/// reload. A test that changes the shared server (here through a variant under test) restores
/// it on its own, without relying on the product it tests.
struct RestoreSystem(Vec<(&'static str, Option<String>)>);

impl RestoreSystem {
    /// Saves the postgresql.auto.conf values of `names`.
    fn save(admin: &Admin, names: &[&'static str]) -> RestoreSystem {
        RestoreSystem(
            names
                .iter()
                .map(|&name| {
                    let set = admin.column(&format!(
                        "SELECT setting FROM pg_file_settings WHERE sourcefile LIKE '%postgresql.auto.conf' AND name = '{name}' ORDER BY seqno DESC LIMIT 1"
                    ));
                    (name, set.into_iter().next().flatten())
                })
                .collect(),
        )
    }
}

impl Drop for RestoreSystem {
    fn drop(&mut self) {
        let Some(admin) = Admin::connect("postgres") else {
            return;
        };
        for (name, value) in &self.0 {
            let sql = match value {
                Some(v) => format!("ALTER SYSTEM SET {name} = '{}'", v.replace('\'', "''")),
                None => format!("ALTER SYSTEM RESET {name}"),
            };
            let _ = admin.rt.block_on(admin.client.batch_execute(&sql));
        }
        let _ = admin
            .rt
            .block_on(admin.client.batch_execute("SELECT pg_reload_conf()"));
    }
}

/// Drops a role when dropped, also when the test panics: a test leaves no role of its own on the
/// shared server.
struct DropRole(&'static str);

impl Drop for DropRole {
    fn drop(&mut self) {
        if let Some(admin) = Admin::connect("postgres") {
            let _ = admin.rt.block_on(
                admin
                    .client
                    .batch_execute(&format!("DROP ROLE IF EXISTS {}", self.0)),
            );
        }
    }
}

/// Serialises the tests of this file: they create databases and read server statistics.
static SERVER: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERVER.lock().unwrap_or_else(|p| p.into_inner())
}

/// A fresh database for one test, or `None` (after saying why) when no server runs locally.
fn database(name: &str) -> Option<String> {
    let db = format!("sbsuite_t_{name}");
    let Some(admin) = Admin::connect("postgres") else {
        common::skip(&format!(
            "no PostgreSQL server accepts postgres@{HOST}:{PORT} (.ci/run starts one)"
        ));
        return None;
    };
    admin.exec(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"));
    admin.exec(&format!("CREATE DATABASE {db}"));
    Some(db)
}

fn drop_database(db: &str) {
    if let Some(admin) = Admin::connect("postgres") {
        admin.exec(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"));
    }
}

/// `sbsuite sysbench WORKLOAD --db-driver=pgsql …` against `db` over TCP as `postgres`, in
/// plain text, through the default client.
fn line(db: &str, workload: &str, extra: &[&str], action: &str) -> std::process::Output {
    line_with("wire", db, workload, extra, action)
}

/// [`line`] through `client` (`SBSUITE_PGSQL_CLIENT`: `wire` or `tokio`).
fn line_with(
    client: &str,
    db: &str,
    workload: &str,
    extra: &[&str],
    action: &str,
) -> std::process::Output {
    sbsuite()
        .env("SBSUITE_PGSQL_CLIENT", client)
        .arg("sysbench")
        .arg(workload)
        .args([
            "--db-driver=pgsql",
            &format!("--pgsql-host={HOST}"),
            &format!("--pgsql-port={PORT}"),
            "--pgsql-user=postgres",
            &format!("--pgsql-db={db}"),
            "--pgsql-sslmode=disable",
        ])
        .args(extra)
        .arg(action)
        .output()
        .unwrap()
}

fn ok(what: &str, out: &std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Rows inserted, updated, deleted in the sbtest tables, as PostgreSQL's statistics count
/// them, once every other session of `db` has ended and the counts satisfy `done` (server
/// backends report their counts when they exit, a moment after the client disconnects).
/// Returns the last counts seen when that does not happen within a minute.
fn settled_counts(db: &str, done: impl Fn([i64; 3]) -> bool) -> [i64; 3] {
    let admin = Admin::connect(db).unwrap();
    let start = Instant::now();
    loop {
        let others = admin.int(&format!(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = '{db}' AND pid <> pg_backend_pid()"
        ));
        let v = admin.column(
            "SELECT concat_ws(',', COALESCE(sum(n_tup_ins), 0), COALESCE(sum(n_tup_upd), 0), COALESCE(sum(n_tup_del), 0)) FROM pg_stat_user_tables WHERE relname LIKE 'sbtest%'",
        );
        let n: Vec<i64> = v[0]
            .as_deref()
            .unwrap()
            .split(',')
            .map(|x| x.parse().unwrap())
            .collect();
        let counts = [n[0], n[1], n[2]];
        if (others == 0 && done(counts)) || start.elapsed() > Duration::from_secs(60) {
            return counts;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Writes a pgsql suite for `db` and runs it; returns (output, results rows).
fn run_suite(
    dir: &Path,
    db: &str,
    target_extra: &str,
    defaults: &str,
) -> (std::process::Output, Vec<HashMap<String, String>>) {
    let path = dir.join("suite.toml");
    std::fs::write(
        &path,
        format!(
            "[suite]\nname = \"t\"\n\n[target]\ndriver = \"pgsql\"\nhosts = [\"{HOST}:{PORT}\"]\nuser = \"postgres\"\ndatabase = \"{db}\"\nssl = \"disable\"\n{target_extra}\n\n[defaults]\n{defaults}\n"
        ),
    )
    .unwrap();
    let results_dir = dir.join("results");
    let out = sbsuite()
        .arg("run")
        .arg(&path)
        .arg("--results-dir")
        .arg(&results_dir)
        .args(["--progress", "plain"])
        .output()
        .unwrap();
    let rows = results(&results_dir);
    (out, rows)
}

#[test]
fn read_write_events_show_sysbench_mix_in_pg_stat_user_tables() {
    let _serial = serial();
    let Some(db) = database("mix") else { return };
    let prep = line(
        &db,
        "oltp_read_write",
        &["--tables=2", "--table-size=1000"],
        "prepare",
    );
    ok("prepare", &prep);
    // COPY counts as inserts: 2 × 1,000 rows.
    let base = settled_counts(&db, |c| c[0] >= 2000);
    assert_eq!(base, [2000, 0, 0]);
    let mut expect = base;
    for (client, threads) in [("wire", "1"), ("wire", "2"), ("tokio", "1"), ("tokio", "2")] {
        let run = line_with(
            client,
            &db,
            "oltp_read_write",
            &[
                "--tables=2",
                "--table-size=1000",
                &format!("--threads={threads}"),
                "--events=100",
                "--time=0",
            ],
            "run",
        );
        let stdout = ok("run", &run);
        let errors = report_count(&stdout, "ignored errors:") as i64;
        let writes = report_count(&stdout, "write:") as i64;
        // Every write statement changed exactly one row (by id), and PostgreSQL counts the
        // rows of rolled-back attempts too: the server's row counts add up to sbsuite's
        // writes, whatever ran concurrently, plus one per INSERT that failed on the unique
        // key (its heap tuple was written before the index refused it).
        let got = settled_counts(&db, |c| {
            (0..3).map(|i| c[i] - expect[i]).sum::<i64>() >= writes
        });
        let d: Vec<i64> = (0..3).map(|i| got[i] - expect[i]).collect();
        let sum: i64 = d.iter().sum();
        assert!(
            (writes..=writes + errors).contains(&sum),
            "{client}, threads {threads}: {d:?}, {writes} writes, {errors} errors\n{stdout}"
        );
        if threads == "1" {
            // One thread: sysbench's exact mix, 1 insert, 2 updates, 1 delete per transaction.
            assert_eq!(errors, 0, "{stdout}");
            assert_eq!(d, [100, 200, 100], "{stdout}");
        } else {
            // Two threads: an UPDATE or DELETE that waited for the other thread's delete and
            // re-insert of its id finds no row (an "other" query), and an ignored error
            // re-runs the event.
            for (i, per_trx) in [1, 2, 1].into_iter().enumerate() {
                assert!(d[i] <= per_trx * (100 + errors), "{d:?} {errors}\n{stdout}");
            }
            assert!(
                d[0] >= 100,
                "every committed transaction inserted once: {d:?}"
            );
        }
        assert!(
            stdout.contains("    transactions:                        100    ("),
            "{stdout}"
        );
        assert!(
            stdout.contains("        read:                            1400\n") || errors > 0,
            "{stdout}"
        );
        expect = got;
    }
    let admin = Admin::connect(&db).unwrap();
    assert_eq!(admin.int("SELECT count(*) FROM sbtest1"), 1000);
    drop(admin);
    ok(
        "cleanup",
        &line(&db, "oltp_read_write", &["--tables=2"], "cleanup"),
    );
    drop_database(&db);
}

#[test]
fn prepare_copies_exact_rows_indexes_analyzes_and_cleanup_drops() {
    let _serial = serial();
    let Some(db) = database("prepare") else {
        return;
    };
    for auto_inc in ["on", "off"] {
        let args = [
            "--tables=3",
            "--table-size=2500",
            "--threads=2",
            &format!("--auto-inc={auto_inc}"),
        ];
        let prep = line(&db, "oltp_read_only", &args, "prepare");
        let stdout = ok("prepare", &prep);
        assert!(
            stdout.contains("Inserting 2500 records into 'sbtest3'"),
            "{stdout}"
        );
        let admin = Admin::connect(&db).unwrap();
        for n in 1..=3 {
            let t = format!("sbtest{n}");
            assert_eq!(admin.int(&format!("SELECT count(*) FROM {t}")), 2500);
            assert_eq!(
                admin.int(&format!("SELECT count(DISTINCT id) FROM {t}")),
                2500
            );
            assert_eq!(admin.int(&format!("SELECT max(id) FROM {t}")), 2500);
            assert_eq!(
                admin.int(&format!(
                    "SELECT count(*) FROM {t} WHERE octet_length(c) = 120 AND length(c) = 119 AND length(pad) = 59"
                )),
                2500,
                "c and pad follow sysbench's templates"
            );
            // ANALYZE fills pg_statistic (COPY and CREATE INDEX do not).
            assert!(
                admin.int(&format!(
                    "SELECT count(*) FROM pg_stats WHERE tablename = '{t}'"
                )) >= 4,
                "{t} was analyzed"
            );
            assert_eq!(
                admin.column(&format!(
                    "SELECT indexdef FROM pg_indexes WHERE indexname = 'k_{n}'"
                )),
                vec![Some(format!(
                    "CREATE INDEX k_{n} ON public.{t} USING btree (k)"
                ))]
            );
            if auto_inc == "on" {
                // SERIAL ids were assigned by the server, so its sequence continues after them.
                assert_eq!(
                    admin.int(&format!("SELECT last_value FROM {t}_id_seq")),
                    2500
                );
            }
        }
        drop(admin);
        let cleanup = line(&db, "oltp_read_only", &args, "cleanup");
        assert!(
            ok("cleanup", &cleanup).contains("Dropping table 'sbtest3'..."),
            "{cleanup:?}"
        );
        let admin = Admin::connect(&db).unwrap();
        assert_eq!(
            admin.int("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'sbtest%'"),
            0
        );
    }
    drop_database(&db);
}

#[test]
fn suite_runs_on_pgsql_and_stores_results_with_ps_mode_disable_too() {
    let _serial = serial();
    let Some(db) = database("suite") else { return };
    let dir = tempfile::tempdir().unwrap();
    let (out, rows) = run_suite(
        dir.path(),
        &db,
        "",
        "tables = 2\ntable_size = 500\nevents = 50\ntime = 0\n\n[matrix]\nworkload = [\"oltp_read_only\", \"oltp_point_select\", \"select_random_ranges\"]\nthreads = [1, 2]",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(rows.len(), 6, "{rows:?}");
    for r in &rows {
        assert_eq!(r["status"], "ok", "{r:?}");
        assert_eq!(r["events"], "50", "{r:?}");
        let per_event = match r["workload"].as_str() {
            "oltp_read_only" => 14,
            _ => 1,
        };
        assert_eq!(r["reads"], (50 * per_event).to_string(), "{r:?}");
        assert_eq!(r["writes"], "0", "{r:?}");
    }
    // The suite's cleanup dropped the tables.
    let admin = Admin::connect(&db).unwrap();
    assert_eq!(
        admin.int("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'sbtest%'"),
        0
    );
    drop(admin);

    // The simple query protocol with literal parameters.
    let dir = tempfile::tempdir().unwrap();
    let (out, rows) = run_suite(
        dir.path(),
        &db,
        "ps_mode = \"disable\"",
        "workload = \"oltp_read_write\"\ntables = 1\ntable_size = 500\nevents = 30\ntime = 0",
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["status"], "ok");
    assert_eq!(rows[0]["reads"], "420", "{:?}", rows[0]);
    drop_database(&db);
}

#[test]
fn unique_violations_are_ignored_counted_and_rolled_back() {
    let _serial = serial();
    let Some(db) = database("unique") else {
        return;
    };
    // oltp_insert (no transaction): a partial unique index, created with the table through
    // the simple query protocol, over the k of rows with a negative id (oltp_insert's ids
    // with auto_inc off are unique() − 2³¹, so about half are negative); k is drawn from
    // 1..=10, so the eleventh such row collides (23505, ignored by sysbench's default).
    // oltp_read_write (inside a transaction, which must be rolled back before the event
    // re-runs, or every later statement fails with 25P02): two threads deleting and
    // re-inserting the same hot ids of a 10-row table; the one that waited for the other's
    // DELETE finds no row to delete and its INSERT then collides with the row the other one
    // committed.
    let dir = tempfile::tempdir().unwrap();
    let (out, rows) = run_suite(
        dir.path(),
        &db,
        "",
        "tables = 1\ntable_size = 10\nauto_inc = false\nthreads = 2\nevents = 200\ntime = 0\nindex_updates = 0\nnon_index_updates = 0\nrange_selects = false\ncreate_table_options = \"; CREATE UNIQUE INDEX u_k ON sbtest1 (k) WHERE id < 0\"\n\n[matrix]\nworkload = [\"oltp_insert\", \"oltp_read_write\"]",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    drop_database(&db);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(rows.len(), 2, "{rows:?}");
    for r in &rows {
        assert_eq!(r["status"], "ok", "{r:?}");
        assert_eq!(r["events"], "200", "{r:?}");
        let errors: u64 = r["errors"].parse().unwrap();
        assert!(errors > 0, "no unique violation was hit: {r:?}");
    }
}

#[test]
fn deadlocks_are_rolled_back_ignored_counted_and_the_event_rerun() {
    let _serial = serial();
    let Some(db) = database("deadlock") else {
        return;
    };
    let common = ["--tables=1", "--table-size=100"];
    ok("prepare", &line(&db, "oltp_write_only", &common, "prepare"));
    // A real deadlock between two workers cannot be scheduled deterministically, so the server
    // reports one on purpose: every fifth UPDATE of sbtest1 fails with SQLSTATE 40P01. The
    // sequence is not transactional, so the failed attempts count too.
    let admin = Admin::connect(&db).unwrap();
    admin.exec(
        "CREATE SEQUENCE updates; \
         CREATE FUNCTION deadlock_every_fifth() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN \
           IF nextval('updates') % 5 = 0 THEN \
             RAISE EXCEPTION 'injected deadlock' USING ERRCODE = 'deadlock_detected'; \
           END IF; \
           RETURN NEW; \
         END $$; \
         CREATE TRIGGER deadlock BEFORE UPDATE ON sbtest1 \
           FOR EACH ROW EXECUTE FUNCTION deadlock_every_fifth()",
    );
    let run = line(
        &db,
        "oltp_write_only",
        &[&common[..], &["--threads=1", "--events=100", "--time=0"]].concat(),
        "run",
    );
    let stdout = ok("run", &run);
    // A write_only event is BEGIN, two UPDATEs, DELETE, INSERT, COMMIT; every fifth UPDATE
    // fails inside the transaction, which must be rolled back before the event re-runs (else
    // every later statement fails with 25P02 and stops the run): 100 committed events take
    // 249 UPDATEs, of which 49 failed.
    assert_eq!(report_count(&stdout, "ignored errors:"), 49, "{stdout}");
    assert_eq!(admin.int("SELECT last_value FROM updates"), 249);
    assert!(
        stdout.contains("    transactions:                        100    ("),
        "{stdout}"
    );
    ok("cleanup", &line(&db, "oltp_write_only", &common, "cleanup"));
    drop(admin);
    // Not in ignore_errors: the run stops at the first one with code, message and statement
    // in a failed row (the trigger comes with the table, through create_table_options).
    let dir = tempfile::tempdir().unwrap();
    let (out, rows) = run_suite(
        dir.path(),
        &db,
        "ignore_errors = [\"23505\"]",
        "workload = \"oltp_write_only\"\ntables = 1\ntable_size = 100\nthreads = 1\nevents = 100\ntime = 0\ncreate_table_options = \"; CREATE TRIGGER deadlock BEFORE UPDATE ON sbtest1 FOR EACH ROW EXECUTE FUNCTION deadlock_every_fifth()\"",
    );
    drop_database(&db);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["status"], "failed", "{rows:?}");
    let error = &rows[0]["error"];
    assert!(
        error.contains("40P01")
            && error.contains("injected deadlock")
            && error.contains("UPDATE sbtest1"),
        "{error}"
    );
}

#[test]
fn terminated_backends_reconnect_and_are_counted() {
    let _serial = serial();
    for client in ["wire", "tokio"] {
        let Some(db) = database("terminate") else {
            return;
        };
        let common = [
            "sysbench".to_string(),
            "oltp_point_select".into(),
            "--db-driver=pgsql".into(),
            format!("--pgsql-host={HOST}"),
            "--pgsql-user=postgres".into(),
            format!("--pgsql-db={db}"),
            "--pgsql-sslmode=disable".into(),
            "--table-size=200".into(),
            "--threads=2".into(),
        ];
        let prep = sbsuite().args(&common).arg("prepare").output().unwrap();
        ok("prepare", &prep);
        let mut args: Vec<&str> = common.iter().map(String::as_str).collect();
        args.extend(["--time=4", "run"]);
        let (child, _) =
            common::spawn_until_started_with(&args, &[("SBSUITE_PGSQL_CLIENT", client)]);
        let admin = Admin::connect("postgres").unwrap();
        // The two workers, by the statement they run (setup sessions ran other statements).
        let workers = format!(
            "FROM pg_stat_activity WHERE datname = '{db}' AND application_name = 'sbsuite' AND query LIKE 'SELECT c FROM sbtest1 WHERE id=$1'"
        );
        let start = Instant::now();
        while admin.int(&format!("SELECT count(*) {workers}")) < 2
            && start.elapsed() < Duration::from_secs(30)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        let killed = admin.column(&format!("SELECT pg_terminate_backend(pid) {workers}"));
        let out = child.wait_with_output().unwrap();
        drop(admin);
        drop_database(&db);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{client}: {stdout}");
        assert_eq!(
            killed,
            vec![Some("t".to_string()); 2],
            "{client}: two workers were running"
        );
        assert_eq!(
            report_count(&stdout, "reconnects:"),
            2,
            "{client}: {stdout}"
        );
        assert_eq!(
            report_count(&stdout, "ignored errors:"),
            0,
            "{client}: {stdout}"
        );
    }
}

#[test]
fn wrong_password_fails_clearly_without_leaking_it() {
    let _serial = serial();
    let Some(db) = database("badpw") else { return };
    let admin = Admin::connect("postgres").unwrap();
    let role = "sbsuite_t_pw";
    let secret = "not-the-Pa55word";
    let _role = DropRole(role);
    admin.exec(&format!(
        "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{role}') THEN CREATE ROLE {role} LOGIN; END IF; END $$; ALTER ROLE {role} LOGIN PASSWORD 'the-right-one-42'"
    ));
    // Does the server check this role's password over TCP (pg_hba.conf)? .ci/run sets it up.
    let checked = rt().block_on(async {
        let mut c = tokio_postgres::Config::new();
        c.host(HOST)
            .port(PORT)
            .user(role)
            .password(secret)
            .dbname(&db);
        c.connect(NoTls).await.is_err()
    });
    if !checked {
        drop_database(&db);
        common::skip(&format!(
            "pg_hba.conf does not check {role}'s password over TCP (add `host all {role} 127.0.0.1/32 scram-sha-256` first, as .ci/run does)"
        ));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("suite.toml");
    std::fs::write(
        &path,
        format!(
            "[suite]\nname = \"t\"\n[target]\ndriver = \"pgsql\"\nhosts = [\"{HOST}:{PORT}\"]\nuser = \"{role}\"\npassword = \"{{{{ env.SBT_PG_TEST_PASSWORD }}}}\"\ndatabase = \"{db}\"\nssl = \"disable\"\n[defaults]\nworkload = \"oltp_point_select\"\ntable_size = 100\ntime = 1\n"
        ),
    )
    .unwrap();
    let results_dir = dir.path().join("results");
    let out = sbsuite()
        .env("SBT_PG_TEST_PASSWORD", secret)
        .arg("run")
        .arg(&path)
        .arg("--results-dir")
        .arg(&results_dir)
        .args(["--progress", "plain"])
        .output()
        .unwrap();
    // The sysbench command line path, with the password on the command line, in libpq's
    // default TLS mode (prefer): TLS when the server offers it (the suite above is plain
    // text).
    let line_out = sbsuite()
        .args([
            "sysbench",
            "oltp_point_select",
            "--db-driver=pgsql",
            "--pgsql-host=127.0.0.1",
            &format!("--pgsql-user={role}"),
            &format!("--pgsql-password={secret}"),
            &format!("--pgsql-db={db}"),
            "run",
        ])
        .output()
        .unwrap();
    drop_database(&db);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        all.contains("28P01") && all.contains("password authentication failed"),
        "{all}"
    );
    assert!(!all.contains(secret), "the password leaked: {all}");
    assert!(!all_files_text(&results_dir).contains(secret));
    let rows = results(&results_dir);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["status"], "failed");
    assert!(rows[0]["error"].contains("28P01"), "{:?}", rows[0]);
    assert_eq!(rows[0]["tps"], "", "no measurements in a failed row");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&line_out.stdout),
        String::from_utf8_lossy(&line_out.stderr)
    );
    assert_eq!(line_out.status.code(), Some(1), "{text}");
    assert!(text.contains("password authentication failed"), "{text}");
    assert!(!text.contains(secret), "the password leaked: {text}");
}

#[test]
fn missing_database_tables_and_connections_fail_with_the_fix() {
    let _serial = serial();
    let Some(db) = database("missing") else {
        return;
    };
    let nodb = line(
        "sbsuite_t_does_not_exist",
        "oltp_read_only",
        &["--time=1"],
        "run",
    );
    let empty = line(&db, "oltp_read_only", &["--time=1"], "run");
    ok(
        "prepare",
        &line(&db, "oltp_point_select", &["--table-size=10"], "prepare"),
    );
    let too_many = line(
        &db,
        "oltp_point_select",
        &["--threads=100000", "--time=1"],
        "run",
    );
    drop_database(&db);
    assert_eq!(nodb.status.code(), Some(1));
    let e = String::from_utf8_lossy(&nodb.stdout);
    assert!(
        e.contains("3D000") && e.contains("\"sbsuite_t_does_not_exist\" does not exist"),
        "{e}"
    );
    assert_eq!(empty.status.code(), Some(1));
    let e = String::from_utf8_lossy(&empty.stdout);
    assert!(
        e.contains("'sbtest1' does not exist") && e.contains("run prepare first"),
        "{e}"
    );
    assert!(!String::from_utf8_lossy(&empty.stdout).contains("Threads started!"));
    assert_eq!(too_many.status.code(), Some(1));
    let e = String::from_utf8_lossy(&too_many.stdout);
    assert!(
        e.contains("max_connections") && e.contains("fewer than threads = 100000"),
        "{e}"
    );
}

#[test]
fn unreachable_host_fails_clearly_with_a_failed_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.toml");
    std::fs::write(
        &path,
        "[suite]\nname = \"down\"\n[target]\ndriver = \"pgsql\"\nhosts = [\"127.0.0.1:1\"]\nuser = \"postgres\"\ndatabase = \"postgres\"\nconnect_timeout = 5\n[defaults]\nworkload = \"oltp_point_select\"\ntime = 1\n",
    )
    .unwrap();
    let out = sbsuite()
        .arg("run")
        .arg(&path)
        .arg("--results-dir")
        .arg(dir.path().join("r"))
        .arg("--quiet")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("cannot connect to 127.0.0.1:1") && text.contains("refused"),
        "{text}"
    );
    let rows = results(&dir.path().join("r"));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["status"], "failed");
}

#[test]
fn tls_modes_encrypt_and_verify_as_libpq() {
    // A private server with TLS on: the shared one may have none, or a certificate this user
    // cannot read, and the test must never skip under CI. Nothing shared is read: no `serial()`.
    let Some(server) = or_skip(PrivatePostgres::start()) else {
        return;
    };
    let port = server.port();
    let db = "sbsuite_t_tls";
    let admin = Admin::connect_at(port, "postgres").expect("the private server accepts postgres");
    admin.exec(&format!("CREATE DATABASE {db}"));
    assert_eq!(admin.column("SHOW ssl"), [Some("on".to_string())]);
    drop(admin);
    let cert = server.cert().to_str().unwrap().to_string();
    // The server's own certificate (self-signed, for `localhost` only) is its CA; another
    // self-signed certificate is a wrong one.
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other.pem");
    let made = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args(["-subj", "/CN=sbsuite other CA", "-keyout"])
        .arg(dir.path().join("other.key"))
        .arg("-out")
        .arg(&other)
        .output()
        .unwrap();
    assert!(made.status.success(), "openssl: {made:?}");
    let other = other.to_str().unwrap().to_string();
    let args = |host: &str, mode: &str| {
        [
            "sysbench",
            "oltp_point_select",
            "--db-driver=pgsql",
            &format!("--pgsql-host={host}"),
            &format!("--pgsql-port={port}"),
            "--pgsql-user=postgres",
            &format!("--pgsql-db={db}"),
            "--table-size=10",
            &format!("--pgsql-sslmode={mode}"),
        ]
        .map(String::from)
    };
    ok(
        "prepare",
        &sbsuite()
            .args(args(HOST, "disable"))
            .arg("prepare")
            .output()
            .unwrap(),
    );
    let run = |client: &str, host: &str, mode: &str, ca: &str| {
        sbsuite()
            .env("SBSUITE_PGSQL_CLIENT", client)
            .env("PGSSLROOTCERT", ca)
            .args(args(host, mode))
            .args(["--events=5", "--time=0", "run"])
            .output()
            .unwrap()
    };
    // Each case through both clients: the same verification, the same errors. `localhost` in a
    // sysbench line is the local server's socket directory, where libpq ignores sslmode: here
    // the private server's (verify-full by name over TCP: src/db/pgsql/wire/tests.rs).
    let socket_dir = server.socket_dir().to_str().unwrap().to_string();
    let mut outcomes: Vec<(&str, &str, &str, &str, std::process::Output)> = Vec::new();
    for client in ["wire", "tokio"] {
        for (host, mode, ca) in [
            ("127.0.0.1", "prefer", cert.as_str()),
            ("127.0.0.1", "require", &cert),
            ("127.0.0.1", "verify-ca", &cert),
            (&socket_dir, "verify-full", &cert),
            ("127.0.0.1", "verify-full", &cert),
            ("127.0.0.1", "verify-ca", &other),
        ] {
            outcomes.push((client, host, mode, ca, run(client, host, mode, ca)));
        }
    }
    // While a run goes on: the worker's backend is encrypted (pg_stat_ssl), for `prefer` (the
    // default of libpq) as for `require`.
    let mut encrypted = Vec::new();
    for mode in ["prefer", "require"] {
        let mut a: Vec<String> = args(HOST, mode).into();
        a.extend(["--time=30".into(), "run".into()]);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let (mut child, _) = common::spawn_until_started_with(&a, &[]);
        let admin = Admin::connect_at(port, "postgres").unwrap();
        let ssl = admin.column(&format!(
            "SELECT s.ssl::text FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.datname = '{db}' AND a.application_name = 'sbsuite'"
        ));
        common::interrupt(child.id());
        let _ = child.wait();
        encrypted.push((mode, ssl));
    }
    for (mode, ssl) in encrypted {
        assert_eq!(ssl, [Some("true".to_string())], "{mode}: pg_stat_ssl.ssl");
    }
    for (client, host, mode, ca, out) in &outcomes {
        let text = format!(
            "{client}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if *mode == "verify-full" && *host == "127.0.0.1" {
            // The certificate names no IP address: the host name check fails.
            assert_eq!(out.status.code(), Some(1), "{host} {mode}: {text}");
            assert!(text.contains("not valid for name \"127.0.0.1\""), "{text}");
        } else if *ca == other {
            // Not signed by the given CA: the chain check fails.
            assert_eq!(out.status.code(), Some(1), "{host} {mode}: {text}");
            assert!(
                text.contains("error performing TLS handshake: invalid peer certificate"),
                "{text}"
            );
        } else {
            assert!(out.status.success(), "{host} {mode}: {text}");
            assert!(
                text.contains("        read:                            5\n"),
                "{text}"
            );
        }
        // sbsuite's own client speaks every mode: no fallback to tokio-postgres.
        if *client == "wire" {
            assert!(!text.contains("tokio-postgres"), "{host} {mode}: {text}");
        }
    }
}

#[test]
fn convert_turns_a_pgsql_line_into_a_pgsql_target() {
    let out = sbsuite()
        .args([
            "convert",
            "--",
            "sysbench",
            "oltp_read_write",
            "--db-driver=pgsql",
            "--pgsql-host=db.example",
            "--pgsql-port=6432",
            "--pgsql-user=bench",
            "--pgsql-password=s3cret-pg",
            "--pgsql-db=oltp",
            "--pgsql-sslmode=verify-full",
            "--threads=8",
            "run",
        ])
        .output()
        .unwrap();
    let toml = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        toml.contains(
            "[target]\ndriver = \"pgsql\"\nhosts = [\"db.example:6432\"]\nuser = \"bench\"\npassword = \"{{ env.PGSQL_PASSWORD }}\"\ndatabase = \"oltp\"\nssl = \"verify-full\"\n"
        ),
        "{toml}"
    );
    assert!(!toml.contains("s3cret"), "{toml}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("PGSQL_PASSWORD"));
    // The suite it prints is valid as written, once the variable it names is exported (#14).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.toml");
    std::fs::write(&path, toml.as_bytes()).unwrap();
    let v = sbsuite()
        .env("PGSQL_PASSWORD", "x")
        .arg("validate")
        .arg(&path)
        .output()
        .unwrap();
    assert!(v.status.success(), "{v:?}");
}

/// `set_global` on PostgreSQL (ALTER SYSTEM + reload), and the same change written as
/// `settings` + `sql` templates (#14): applied while the variant runs, restored after it with
/// postgresql.auto.conf as before.
#[test]
fn set_global_variant_uses_alter_system_and_is_restored() {
    let _serial = serial();
    let Some(db) = database("setglobal") else {
        return;
    };
    let admin = Admin::connect("postgres").unwrap();
    let _restore = RestoreSystem::save(&admin, &["work_mem", "random_page_cost"]);
    let in_auto_conf = "SELECT count(*) FROM pg_file_settings WHERE sourcefile LIKE '%postgresql.auto.conf' AND name IN ('work_mem', 'random_page_cost')";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("suite.toml");
    let sql = "settings = { work_mem = \"24MB\", random_page_cost = 1.5 }\nsql = { apply = \"ALTER SYSTEM SET {{ name }} = {{ value }}\", read = \"SHOW {{ name }}\", restore = \"ALTER SYSTEM RESET {{ name }}\", after = \"SELECT pg_reload_conf()\" }";
    for tuned in [
        "set_global = { work_mem = \"24MB\", random_page_cost = 1.5 }",
        sql,
    ] {
        let before = admin.column("SHOW work_mem")[0].clone().unwrap();
        let auto_before = admin.int(in_auto_conf);
        if tuned == sql {
            // The `restore` template resets: right only for settings not in the file before.
            assert_eq!(
                auto_before, 0,
                "work_mem/random_page_cost in postgresql.auto.conf"
            );
        }
        std::fs::write(
            &path,
            format!(
                "[suite]\nname = \"t\"\n\n[target]\ndriver = \"pgsql\"\nhosts = [\"{HOST}:{PORT}\"]\nuser = \"postgres\"\ndatabase = \"{db}\"\n\n[defaults]\nworkload = \"oltp_point_select\"\ntable_size = 200\ntime = 1\nthreads = 1\n\n[[variant]]\nname = \"baseline\"\n\n[[variant]]\nname = \"tuned\"\n{tuned}\n"
            ),
        )
        .unwrap();
        if tuned == sql {
            let plan = sbsuite().arg("plan").arg(&path).output().unwrap();
            assert!(
                String::from_utf8_lossy(&plan.stdout)
                    .contains("work_mem: read `SHOW work_mem`, apply `ALTER SYSTEM SET work_mem = E'24MB'`, restore `ALTER SYSTEM RESET work_mem`"),
                "{plan:?}"
            );
        }
        let results_dir = dir
            .path()
            .join(if tuned == sql { "sql" } else { "results" });
        let out = sbsuite()
            .arg("run")
            .arg(&path)
            .arg("--results-dir")
            .arg(&results_dir)
            .args(["--progress", "off"])
            .output()
            .unwrap();
        let after = admin.column("SHOW work_mem")[0].clone().unwrap();
        let auto_after = admin.int(in_auto_conf);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(after, before, "work_mem restored");
        assert_eq!(auto_after, auto_before, "postgresql.auto.conf as before");
        let run = run_dir(&results_dir, "t");
        let tuned = std::fs::read_to_string(run.join("server/tuned.csv")).unwrap();
        assert!(
            tuned.contains("\nwork_mem,24576kB\n"),
            "applied while the variant ran: {tuned}"
        );
        assert!(tuned.contains("\nrandom_page_cost,1.5\n"), "{tuned}");
        assert!(
            tuned.starts_with("name,value\nversion,\"PostgreSQL "),
            "{tuned}"
        );
        // #14: the server's host facts: its version and the address it answered on (TCP here).
        assert!(tuned.contains("\nserver_version,"), "{tuned}");
        assert!(tuned.contains("\ninet_server_addr,127.0.0.1\n"), "{tuned}");
        let rows = results(&results_dir);
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|r| r["status"] == "ok"), "{rows:?}");
    }
    drop_database(&db);

    // A setting that needs a restart, and an unknown one: refused before anything runs.
    for (set, expect) in [
        ("shared_buffers = \"256MB\"", "needs a server restart"),
        ("work_memm = \"1MB\"", "is not a setting of this server"),
    ] {
        std::fs::write(
            &path,
            format!(
                "[suite]\nname = \"bad\"\n\n[target]\ndriver = \"pgsql\"\nhosts = [\"{HOST}:{PORT}\"]\nuser = \"postgres\"\ndatabase = \"postgres\"\n\n[defaults]\nworkload = \"oltp_point_select\"\n\n[[variant]]\nname = \"x\"\nset_global = {{ {set} }}\n"
            ),
        )
        .unwrap();
        let out = sbsuite()
            .arg("run")
            .arg(&path)
            .arg("--results-dir")
            .arg(dir.path().join("bad"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(expect), "{stderr}");
        assert!(!dir.path().join("bad").exists());
    }
}

/// Issue #14, item 19: the same suite against the shared PostgreSQL and MariaDB servers; each
/// run's capture holds its server's build and host facts, and `compare` shows the server facts
/// that differ above the table (and in JSON), while the client (one machine) does not differ.
#[test]
fn issue_14_compare_shows_the_server_host_facts_that_differ() {
    let _serial = serial();
    let Some(db) = database("hostfacts") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, target: &str| {
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "[suite]\nname = \"{name}\"\n\n[target]\n{target}\n\n[defaults]\nworkload = \"oltp_point_select\"\ntable_size = 100\ntime = 1\nthreads = 1\n"
            ),
        )
        .unwrap();
        let out = sbsuite()
            .arg("run")
            .arg(&path)
            .arg("--results-dir")
            .arg(dir.path().join("results"))
            .args(["--progress", "off"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        run_dir(&dir.path().join("results"), name)
    };
    let pg = run(
        "pg",
        &format!(
            "driver = \"pgsql\"\nhosts = [\"{HOST}:{PORT}\"]\nuser = \"postgres\"\ndatabase = \"{db}\""
        ),
    );
    // The MariaDB side in a database of its own (created and dropped here).
    let maria_admin = |sql: &str| {
        use mysql_async::prelude::Queryable;
        rt().block_on(async {
            let opts = mysql_async::OptsBuilder::default()
                .ip_or_hostname(HOST)
                .tcp_port(3306)
                .user(Some("root"));
            let mut c = mysql_async::Conn::new(opts).await.ok()?;
            c.query_drop(sql).await.ok()?;
            let _ = c.disconnect().await;
            Some(())
        })
    };
    let maria_db = "sbsuite_t_hostfacts";
    if maria_admin(&format!("CREATE DATABASE IF NOT EXISTS {maria_db}")).is_none() {
        drop_database(&db);
        common::skip("no MariaDB server accepts root@127.0.0.1:3306 (.ci/run starts one)");
        return;
    }
    let maria = run(
        "maria",
        &format!(
            "driver = \"mysql\"\nhosts = [\"{HOST}:3306\"]\nuser = \"root\"\ndatabase = \"{maria_db}\""
        ),
    );
    maria_admin(&format!("DROP DATABASE IF EXISTS {maria_db}"));
    drop_database(&db);
    let compare = |format: &str| {
        let out = sbsuite()
            .arg("compare")
            .arg(&maria)
            .arg(&pg)
            .args(["--format", format])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let text = compare("table");
    let line = text
        .lines()
        .find(|l| l.starts_with("server host of variant default differs: version '"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("MariaDB") && line.contains("vs 'PostgreSQL "),
        "{line}"
    );
    // MariaDB tells its hostname, PostgreSQL the address it answered on.
    assert!(
        line.contains(", hostname '") && line.contains(" vs unknown"),
        "{line}"
    );
    assert!(
        line.contains("inet_server_addr unknown vs '127.0.0.1'"),
        "{line}"
    );
    assert!(!text.contains("client host"), "one machine: {text}");
    assert!(text.find(line).unwrap() < text.find("key ").unwrap());
    let json: serde_json::Value = serde_json::from_str(&compare("json")).unwrap();
    let hosts = &json["comparisons"][0]["hosts"];
    assert_eq!(hosts[0]["host"], "server", "{hosts}");
    assert_eq!(hosts[0]["variant"], "default", "{hosts}");
    assert_eq!(hosts[0]["fields"][0]["fact"], "version", "{hosts}");
}
