//! Stop requests in every phase, and steps stuck on a server, through the real binary.
//!
//! A stuck server is made for real, without a hostile fake: the test's own admin connection to
//! the local MariaDB holds a table lock (`LOCK TABLES sbtest1 READ/WRITE`) on its own database
//! `sbsuite_t_<name>`, so the suite's prepare, cleanup or workers block exactly as they would
//! on an overloaded or wedged server. Every wait is on an event (the server's processlist, the
//! run directory's journal and rows, markers written by hooks, the report on stdout), never a
//! fixed sleep. Without a server at 127.0.0.1:3306 (root, no password) or PostgreSQL at
//! 127.0.0.1:5432 (postgres, trust) the database tests skip visibly ([`common::skip`]), and fail
//! under `CI`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command as StdCommand, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use assert_cmd::cargo::CommandCargoExt;
use mysql_async::prelude::Queryable;
use tokio_postgres::SimpleQueryMessage;

use crate::common;
use common::db::{admin_my as admin, my_opts as opts, pg_client, rt};

const HOST: &str = "127.0.0.1";
const PORT: u16 = 3306;

/// The first column of the first row of `sql` as an integer.
fn admin_i64(sql: &str) -> i64 {
    rt().block_on(async {
        let mut c = mysql_async::Conn::new(opts(None)).await.unwrap();
        let n: Option<i64> = c.query_first(sql).await.unwrap();
        let _ = c.disconnect().await;
        n.unwrap_or(0)
    })
}

/// A fresh database `sbsuite_t_<name>`, dropped again when the guard goes (also when the test
/// fails); `None` (after saying why) without a local server.
struct Database(String);

impl Database {
    fn new(name: &str) -> Option<Database> {
        let db = format!("sbsuite_t_{name}");
        if admin(&[
            format!("DROP DATABASE IF EXISTS {db}"),
            format!("CREATE DATABASE {db}"),
        ])
        .is_none()
        {
            common::skip(&format!(
                "no MySQL/MariaDB server accepts root@{HOST}:{PORT} (.ci/run starts one)"
            ));
            return None;
        }
        Some(Database(db))
    }

    fn table_exists(&self, table: &str) -> bool {
        admin_i64(&format!(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{}' AND TABLE_NAME = '{table}'",
            self.0
        )) > 0
    }

    /// Sessions other than `except` of this database waiting for a lock.
    fn waiting_sessions(&self, except: u64) -> i64 {
        admin_i64(&format!(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = '{}' AND ID <> {except} AND STATE LIKE 'Waiting for%lock%'",
            self.0
        ))
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        admin(&[format!("DROP DATABASE IF EXISTS {}", self.0)]);
    }
}

/// A lock held by the test's own session on its own thread until released (or dropped): taking
/// it waits, so it cannot run on the test's thread. `id` tells the session apart.
struct Held<T> {
    release: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    id: T,
}

impl<T: Send + 'static> Held<T> {
    /// Runs `hold` on a thread: it takes the lock, sends its session's id, and keeps the lock
    /// until its receiver says release. Returns once the lock is held.
    fn on_thread(
        what: &str,
        hold: impl FnOnce(mpsc::Sender<T>, mpsc::Receiver<()>) + Send + 'static,
    ) -> Held<T> {
        let (held_tx, held_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || hold(held_tx, release_rx));
        let id = held_rx
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| panic!("the test's {what} was not granted within 120 s"));
        Held {
            release: Some(release_tx),
            thread: Some(thread),
            id,
        }
    }
}

impl<T> Held<T> {
    fn release(&mut self) {
        if let Some(tx) = self.release.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl<T> Drop for Held<T> {
    fn drop(&mut self) {
        self.release();
    }
}

/// `LOCK TABLES <table> <mode>` in `db`, held by the test's own session.
fn table_lock(db: &str, table: &str, mode: &str) -> Held<u64> {
    let (db, sql) = (db.to_string(), format!("LOCK TABLES {table} {mode}"));
    Held::on_thread("LOCK TABLES", move |held_tx, release_rx| {
        rt().block_on(async {
            let mut c = mysql_async::Conn::new(opts(Some(&db))).await.unwrap();
            let id: Option<u64> = c.query_first("SELECT CONNECTION_ID()").await.unwrap();
            c.query_drop(&sql).await.unwrap();
            held_tx.send(id.unwrap()).unwrap();
            let _ = release_rx.recv();
            let _ = c.query_drop("UNLOCK TABLES").await;
            let _ = c.disconnect().await;
        })
    })
}

/// Kills the child when the test fails before it ended.
struct Reap(Child);

impl Drop for Reap {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn sigterm(child: &Child) {
    // SAFETY: a signal to our own child, by its pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
}

/// Polls `done` every 20 ms until it holds, failing with `what` after `limit`.
fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits up to `limit` for the child to end; its exit code (`None` for a signal).
fn exit_within(child: &mut Child, limit: Duration) -> Result<Option<i32>, Duration> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Ok(status.code());
        }
        if start.elapsed() > limit {
            return Err(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn spawn_run(suite: &Path, results: &Path, stdout: Stdio, stderr: &Path) -> Reap {
    spawn_run_with(suite, results, stdout, stderr, &[])
}

fn spawn_run_with(
    suite: &Path,
    results: &Path,
    stdout: Stdio,
    stderr: &Path,
    env: &[(&str, &str)],
) -> Reap {
    Reap(
        StdCommand::cargo_bin("sbsuite")
            .unwrap()
            .env_remove("SBSUITE_MYSQL_CLIENT")
            .env_remove("SBSUITE_PGSQL_CLIENT")
            .envs(env.iter().copied())
            .arg("run")
            .arg(suite)
            .args(["--progress", "off", "--results-dir"])
            .arg(results)
            .stdout(stdout)
            .stderr(std::fs::File::create(stderr).unwrap())
            .spawn()
            .unwrap(),
    )
}

/// The run directory under `results` (the one run of the suite), once it exists.
fn run_dir(results: &Path, suite: &str) -> PathBuf {
    let parent = results.join(suite);
    let mut found = None;
    wait_for("the run directory", Duration::from_secs(60), || {
        found = std::fs::read_dir(&parent)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .map(|e| e.path());
        found.is_some()
    });
    found.unwrap()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn mysql_suite(dir: &Path, db: &str, defaults: &str, extra: &str) -> PathBuf {
    let path = dir.join("suite.toml");
    std::fs::write(
        &path,
        format!(
            "[suite]\nname = \"sig\"\n{extra}\n[target]\ndriver = \"mysql\"\nhosts = [\"{HOST}:{PORT}\"]\nuser = \"root\"\ndatabase = \"{db}\"\n\n[defaults]\n{defaults}\n"
        ),
    )
    .unwrap();
    path
}

/// Sets up a prepare blocked on the server: the suite starts loading a big table, the test
/// locks it, and the prepare's next statement waits for the lock. Returns the run directory.
fn blocked_prepare(
    db: &Database,
    dir: &Path,
    child_stderr: &Path,
    env: &[(&str, &str)],
) -> (Reap, Held<u64>, PathBuf) {
    let suite = mysql_suite(
        dir,
        &db.0,
        "workload = \"oltp_read_only\"\ntime = 5\nthreads = 1\ntable_size = 2000000\n",
        "",
    );
    let results = dir.join("results");
    let child = spawn_run_with(&suite, &results, Stdio::null(), child_stderr, env);
    wait_for(
        "the prepare created sbtest1",
        Duration::from_secs(60),
        || db.table_exists("sbtest1"),
    );
    let lock = table_lock(&db.0, "sbtest1", "READ");
    wait_for(
        "the prepare waits for the test's lock",
        Duration::from_secs(60),
        || db.waiting_sessions(lock.id) > 0,
    );
    let run = run_dir(&results, "sig");
    (child, lock, run)
}

/// The first SIGTERM breaks a prepare blocked on the server (its journal says interrupted),
/// and the cleanup still runs (here it waits for the same lock, as a cleanup must: only a
/// second signal may skip it); once the lock goes, the cleanup drops the table and the run
/// exits with 130.
#[test]
fn sigterm_breaks_a_blocked_prepare_and_the_cleanup_still_runs() {
    blocked_prepare_then_sigterm("sigsetup", &[]);
}

/// The same with the mysql_async fallback, whose socket sbsuite cannot reach: the stop kills
/// the blocked session from a second connection.
#[test]
fn sigterm_breaks_a_blocked_prepare_of_the_library_client() {
    blocked_prepare_then_sigterm("sigsetup_async", &[("SBSUITE_MYSQL_CLIENT", "async")]);
}

fn blocked_prepare_then_sigterm(name: &str, env: &[(&str, &str)]) {
    let Some(db) = Database::new(name) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let stderr = dir.path().join("stderr.txt");
    let (mut child, mut lock, run) = blocked_prepare(&db, dir.path(), &stderr, env);
    sigterm(&child.0);
    let journal = run.join("journal.log");
    wait_for(
        "the prepare recorded as interrupted after the first SIGTERM",
        Duration::from_secs(15),
        || read(&journal).contains("interrupted"),
    );
    let text = read(&journal);
    assert!(
        text.lines()
            .any(|l| l.contains("prepare") && l.contains("interrupted")),
        "{text}\n{}",
        read(&stderr)
    );
    // The cleanup started (it waits for the lock like the prepare did): graceful, not dead.
    wait_for("the cleanup starts", Duration::from_secs(15), || {
        read(&journal)
            .lines()
            .any(|l| l.contains("cleanup") && l.contains("start"))
    });
    assert!(child.0.try_wait().unwrap().is_none(), "{}", read(&stderr));
    lock.release();
    let code = exit_within(&mut child.0, Duration::from_secs(60))
        .unwrap_or_else(|t| panic!("still running {t:?} after the lock went: {}", read(&stderr)));
    assert_eq!(code, Some(130), "{}", read(&stderr));
    assert!(!db.table_exists("sbtest1"), "the cleanup dropped sbtest1");
    assert!(
        read(&journal)
            .lines()
            .any(|l| l.contains("cleanup") && l.contains("done")),
        "{}",
        read(&journal)
    );
    // The skipped run has no row; the header is there.
    let rows = read(&run.join("results.csv"));
    assert_eq!(rows.lines().count(), 1, "{rows}");
}

/// While the cleanup owed after a stop is blocked, the second SIGTERM exits at once with 130
/// (ignoring it would keep the process until the lock goes, and fail the bound).
#[test]
fn a_second_sigterm_exits_at_once_from_a_blocked_cleanup() {
    let Some(db) = Database::new("sigsecond") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let stderr = dir.path().join("stderr.txt");
    let (mut child, mut lock, run) = blocked_prepare(&db, dir.path(), &stderr, &[]);
    sigterm(&child.0);
    let journal = run.join("journal.log");
    wait_for("the cleanup starts", Duration::from_secs(15), || {
        read(&journal)
            .lines()
            .any(|l| l.contains("cleanup") && l.contains("start"))
    });
    // Blocked for real: the cleanup's DROP waits for the lock too.
    wait_for(
        "the cleanup waits for the lock",
        Duration::from_secs(15),
        || db.waiting_sessions(lock.id) > 0,
    );
    assert!(child.0.try_wait().unwrap().is_none(), "{}", read(&stderr));
    let start = Instant::now();
    sigterm(&child.0);
    let code = exit_within(&mut child.0, Duration::from_secs(5));
    lock.release();
    let code = code.unwrap_or_else(|t| {
        panic!(
            "the second SIGTERM was ignored: still running after {t:?}\n{}",
            read(&stderr)
        )
    });
    assert_eq!(code, Some(130), "{}", read(&stderr));
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(
        read(&stderr).contains("second interrupt: exiting now"),
        "{}",
        read(&stderr)
    );
}

/// `sbsuite sysbench … prepare` blocked on the server: the first SIGTERM ends it with 130, as
/// an interrupted line (it was `FATAL` and 1, after waiting for the server).
#[test]
fn sigterm_ends_a_blocked_sysbench_line_prepare_as_interrupted() {
    let Some(db) = Database::new("sigline") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let stderr_path = dir.path().join("stderr.txt");
    let mut child = Reap(
        StdCommand::cargo_bin("sbsuite")
            .unwrap()
            .env_remove("SBSUITE_MYSQL_CLIENT")
            .args([
                "sysbench",
                "oltp_read_only",
                "--db-driver=mysql",
                "--mysql-host=127.0.0.1",
                "--mysql-port=3306",
                "--mysql-user=root",
                &format!("--mysql-db={}", db.0),
                "--table-size=2000000",
                "prepare",
            ])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr_path).unwrap())
            .spawn()
            .unwrap(),
    );
    wait_for(
        "the prepare created sbtest1",
        Duration::from_secs(60),
        || db.table_exists("sbtest1"),
    );
    let lock = table_lock(&db.0, "sbtest1", "READ");
    wait_for(
        "the prepare waits for the test's lock",
        Duration::from_secs(60),
        || db.waiting_sessions(lock.id) > 0,
    );
    sigterm(&child.0);
    let code = exit_within(&mut child.0, Duration::from_secs(15));
    drop(lock);
    let code = code.unwrap_or_else(|t| {
        panic!(
            "the first SIGTERM did not end the blocked line within {t:?}: {}",
            read(&stderr_path)
        )
    });
    assert_eq!(code, Some(130), "{}", read(&stderr_path));
}

/// A before_step hook that would run for a minute is killed, with its children, by the first
/// SIGTERM; the step does not start, after_suite still runs, and the run ends with 130.
#[test]
fn sigterm_kills_a_long_hook_with_its_children_and_stops_gracefully() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("hook-started");
    let pidfile = dir.path().join("sleep.pid");
    let after = dir.path().join("after-suite");
    let suite = dir.path().join("hook.toml");
    std::fs::write(
        &suite,
        format!(
            "[suite]\nname = \"hook\"\n\n[defaults]\nworkload = \"cpu\"\ntime = 1\n\n\
             [matrix]\nthreads = [1, 2]\n\n[hooks]\ntimeout = 120\n\
             before_step = \"sleep 60 & echo $! > {pid}; touch {marker}; wait\"\n\
             after_suite = \"touch {after}\"\n",
            pid = pidfile.display(),
            marker = marker.display(),
            after = after.display()
        ),
    )
    .unwrap();
    let stderr = dir.path().join("stderr.txt");
    let results = dir.path().join("results");
    let mut child = spawn_run(&suite, &results, Stdio::piped(), &stderr);
    wait_for("the hook starts", Duration::from_secs(30), || {
        marker.exists()
    });
    let sleep_pid: i32 = read(&pidfile).trim().parse().unwrap();
    let start = Instant::now();
    sigterm(&child.0);
    let code = exit_within(&mut child.0, Duration::from_secs(15)).unwrap_or_else(|t| {
        panic!(
            "the first SIGTERM did not end a run stuck in a hook within {t:?}: {}",
            read(&stderr)
        )
    });
    assert_eq!(code, Some(130), "{}", read(&stderr));
    assert!(start.elapsed() < Duration::from_secs(15));
    assert!(after.exists(), "after_suite runs after the stop");
    // The hook's child went with it (dead or a zombie awaiting its reaper).
    wait_for("the hook's sleep is gone", Duration::from_secs(10), || {
        read(Path::new(&format!("/proc/{sleep_pid}/stat")))
            .rsplit(')')
            .next()
            .is_none_or(|r| r.trim().is_empty() || r.trim_start().starts_with('Z'))
    });
    let mut out = String::new();
    child
        .0
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(!out.contains("Threads started!"), "no step ran: {out}");
    let run = run_dir(&results, "hook");
    let log = read(&run.join("hooks.log"));
    assert!(log.contains("killed by a stop request"), "{log}");
    assert_eq!(read(&run.join("results.csv")).lines().count(), 1);
}

/// A run whose worker is stuck on the server (the test write-locks the table under it) ends at
/// `time` + the suite's default `forced_shutdown` (max(5 % of time, 10 s)), its row
/// `interrupted` with the reason; the suite goes on (`on_error = "continue"`) and the next run,
/// with the lock gone, is `ok`. The run exits 1: a step was cut short.
#[test]
fn a_stuck_run_is_forced_down_by_default_and_the_suite_goes_on() {
    let Some(db) = Database::new("sigforced") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let suite = mysql_suite(
        dir.path(),
        &db.0,
        "workload = \"oltp_write_only\"\ntime = 2\ntable_size = 1000\n",
        "on_error = \"continue\"\n[matrix]\nthreads = [1, 2]\n",
    );
    let stderr = dir.path().join("stderr.txt");
    let results = dir.path().join("results");
    let mut child = spawn_run(&suite, &results, Stdio::piped(), &stderr);
    common::read_until_started(&mut child.0, 1);
    let started = Instant::now();
    let mut lock = table_lock(&db.0, "sbtest1", "WRITE");
    let run = run_dir(&results, "sig");
    let csv = run.join("results.csv");
    wait_for("the first run's row", Duration::from_secs(60), || {
        read(&csv).lines().count() > 1
    });
    let took = started.elapsed();
    lock.release();
    // time (2 s) + the default forced_shutdown (10 s), with room for a loaded machine.
    assert!(
        took >= Duration::from_secs(11) && took < Duration::from_secs(45),
        "{took:?}"
    );
    let code = exit_within(&mut child.0, Duration::from_secs(90))
        .unwrap_or_else(|t| panic!("still running after {t:?}: {}", read(&stderr)));
    assert_eq!(code, Some(1), "{}", read(&stderr));
    let rows = common::results(&results);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0]["status"], "interrupted");
    assert!(
        rows[0]["error"].starts_with(
            "forced_shutdown: 1 worker(s) still in an event 10.0 s after the time limit"
        ),
        "{}",
        rows[0]["error"]
    );
    assert_eq!(rows[1]["status"], "ok", "{:?}", rows[1]);
    let mut out = String::new();
    child
        .0
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(
        out.contains("The --max-time limit has expired, forcing shutdown..."),
        "{out}"
    );
    assert!(!db.table_exists("sbtest1"), "cleanup ran");
}

// PostgreSQL: the same stop of a blocked prepare through the wire client (socket shut down)
// and the tokio-postgres fallback (a cancel request).

const PG_PORT: u16 = 5432;

/// Runs `sql` as `postgres` on `db` on its own runtime: `None` when it cannot, else the first
/// column of the first row, if any.
fn pg(db: &str, sql: &str) -> Option<Option<String>> {
    rt().block_on(async {
        let client = pg_client(db).await?;
        let msgs = client.simple_query(sql).await.ok()?;
        Some(
            msgs.iter()
                .find_map(|m| match m {
                    SimpleQueryMessage::Row(r) => Some(r.get(0).map(str::to_string)),
                    _ => None,
                })
                .flatten(),
        )
    })
}

fn pg_int(db: &str, sql: &str) -> i64 {
    pg(db, sql)
        .flatten()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// A fresh PostgreSQL database, dropped by the guard.
struct PgDatabase(String);

impl PgDatabase {
    fn new(name: &str) -> Option<PgDatabase> {
        common::server_lock::share();
        let db = format!("sbsuite_t_{name}");
        let made = pg(
            "postgres",
            &format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"),
        )
        .and_then(|_| pg("postgres", &format!("CREATE DATABASE {db}")));
        if made.is_none() {
            common::skip(&format!(
                "no PostgreSQL server accepts postgres@{HOST}:{PG_PORT} (.ci/run starts one)"
            ));
            return None;
        }
        Some(PgDatabase(db))
    }

    fn table_exists(&self, table: &str) -> bool {
        pg_int(
            &self.0,
            &format!("SELECT count(*) FROM pg_tables WHERE tablename = '{table}'"),
        ) > 0
    }

    /// Sessions of this database other than `except` waiting for a lock.
    fn waiting_sessions(&self, except: i64) -> i64 {
        pg_int(
            "postgres",
            &format!(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = '{}' AND pid <> {except} AND wait_event_type = 'Lock'",
                self.0
            ),
        )
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        pg(
            "postgres",
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.0),
        );
    }
}

/// `LOCK TABLE <table> IN ACCESS EXCLUSIVE MODE` in an open transaction of the test's own
/// session (its backend pid is the id).
fn pg_lock(db: &str, table: &str) -> Held<i64> {
    let (db, table) = (db.to_string(), table.to_string());
    Held::on_thread("LOCK TABLE", move |held_tx, release_rx| {
        rt().block_on(async {
            let client = pg_client(&db).await.unwrap();
            let pid: i32 = client
                .query_one("SELECT pg_backend_pid()", &[])
                .await
                .unwrap()
                .get(0);
            client
                .batch_execute(&format!(
                    "BEGIN; LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE"
                ))
                .await
                .unwrap();
            held_tx.send(i64::from(pid)).unwrap();
            let _ = tokio::task::spawn_blocking(move || release_rx.recv()).await;
            let _ = client.batch_execute("ROLLBACK").await;
        })
    })
}

/// A prepare blocked by the test's lock on PostgreSQL: the first SIGTERM breaks it (journal
/// `interrupted`), the cleanup waits for the lock like any cleanup, then drops the table, and
/// the run exits 130.
fn pg_blocked_prepare_then_sigterm(name: &str, client: &str) {
    let Some(db) = PgDatabase::new(name) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            "[suite]\nname = \"sig\"\n[target]\ndriver = \"pgsql\"\nhosts = [\"{HOST}:{PG_PORT}\"]\nuser = \"postgres\"\ndatabase = \"{}\"\n\n[defaults]\nworkload = \"oltp_read_only\"\ntime = 5\nthreads = 1\ntable_size = 2000000\n",
            db.0
        ),
    )
    .unwrap();
    let stderr = dir.path().join("stderr.txt");
    let results = dir.path().join("results");
    let mut child = spawn_run_with(
        &suite,
        &results,
        Stdio::null(),
        &stderr,
        &[("SBSUITE_PGSQL_CLIENT", client)],
    );
    wait_for(
        "the prepare created sbtest1",
        Duration::from_secs(60),
        || db.table_exists("sbtest1"),
    );
    let mut lock = pg_lock(&db.0, "sbtest1");
    wait_for(
        "the prepare waits for the test's lock",
        Duration::from_secs(60),
        || db.waiting_sessions(lock.id) > 0,
    );
    let run = run_dir(&results, "sig");
    sigterm(&child.0);
    let journal = run.join("journal.log");
    wait_for(
        "the prepare recorded as interrupted after the first SIGTERM",
        Duration::from_secs(15),
        || {
            read(&journal)
                .lines()
                .any(|l| l.contains("prepare") && l.contains("interrupted"))
        },
    );
    wait_for("the cleanup starts", Duration::from_secs(15), || {
        read(&journal)
            .lines()
            .any(|l| l.contains("cleanup") && l.contains("start"))
    });
    lock.release();
    let code = exit_within(&mut child.0, Duration::from_secs(60))
        .unwrap_or_else(|t| panic!("still running {t:?} after the lock went: {}", read(&stderr)));
    assert_eq!(code, Some(130), "{}", read(&stderr));
    assert!(!db.table_exists("sbtest1"), "the cleanup dropped sbtest1");
}

#[test]
fn sigterm_breaks_a_blocked_pgsql_prepare_of_the_wire_client() {
    pg_blocked_prepare_then_sigterm("sigpg_wire", "wire");
}

#[test]
fn sigterm_breaks_a_blocked_pgsql_prepare_of_the_library_client() {
    pg_blocked_prepare_then_sigterm("sigpg_tokio", "tokio");
}
