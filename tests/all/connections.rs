//! Connection models (#30), checked against what the servers themselves count:
//!
//! - `connect = "per_transaction"` opens one connection per transaction: the server's own count
//!   of connections over the run step (MariaDB's `Connections` status, PostgreSQL's
//!   `pg_stat_database.sessions` of the step's database, read by hooks around the step) is the
//!   results' `connects`, which is the transaction count, plus sbsuite's own connections in the
//!   step: one, the OLTP pre-run check (`server_cost = false` leaves out the connection that
//!   reads the server's counters around the step), and on MariaDB the after-hook's own `mysql`
//!   client (`Connections` is global; PostgreSQL's is per database, and the hooks
//!   read it from another one);
//! - `idle_connections = N` holds N more connections through the step: a side thread sees them
//!   on the server (`information_schema.PROCESSLIST` / `pg_stat_activity` of the step's
//!   database) next to the workers' during the step, none after it, and `idle_dead` is 0. N is
//!   200 where the server's `max_connections` allows it, else what fits below that limit with
//!   a margin (the shared servers' settings are never changed: PostgreSQL's default 100 fits
//!   about 80);
//! - idle connections the server drops during the step (`KILL`, `pg_terminate_backend`) are
//!   counted in `idle_dead`;
//! - a step that asks for more connections than `max_connections` fails before opening any,
//!   naming the limit.
//!
//! Every test here reads the servers' global counters or fills their connection slots, so it
//! holds them alone (`server_lock`). Databases: `sbs_conn_*`, dropped and made per test.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crate::common;

use common::db::{admin_my, admin_pg};
use common::{results, sbsuite};

/// One of the shared servers, read through its command-line client.
#[derive(Clone, Copy, PartialEq)]
enum Db {
    My,
    Pg,
}

impl Db {
    /// A fresh database `name`; `false` after a recorded skip when the server is not there.
    fn fresh(self, name: &str) -> bool {
        let made = match self {
            Db::My => admin_my(&[
                format!("DROP DATABASE IF EXISTS {name}"),
                format!("CREATE DATABASE {name}"),
            ]),
            Db::Pg => admin_pg(&[
                format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
                format!("CREATE DATABASE {name}"),
            ]),
        };
        if made.is_none() {
            common::skip(match self {
                Db::My => {
                    "no MySQL/MariaDB server accepts root@127.0.0.1:3306 (.ci/run starts one)"
                }
                Db::Pg => {
                    "no PostgreSQL server accepts postgres@127.0.0.1:5432 (.ci/run starts one)"
                }
            });
        }
        made.is_some()
    }

    fn drop_database(self, name: &str) {
        match self {
            Db::My => admin_my(&[format!("DROP DATABASE IF EXISTS {name}")]),
            Db::Pg => admin_pg(&[format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")]),
        };
    }

    /// The command line that prints the one value `sql` returns (PostgreSQL: from database
    /// `postgres`, so that it is never a session of the step's database).
    fn client(self, sql: &str) -> String {
        match self {
            Db::My => format!("mysql -h 127.0.0.1 -P 3306 -u root -N -e \"{sql}\""),
            Db::Pg => format!(
                "psql --host=127.0.0.1 --port=5432 --username=postgres --no-psqlrc -qAt -d postgres -c \"{sql}\""
            ),
        }
    }

    /// The number `sql` returns (`SHOW STATUS`'s value column on MariaDB).
    fn number(self, sql: &str) -> u64 {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("{} | awk '{{print $NF}}'", self.client(sql)))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        text.trim()
            .parse()
            .unwrap_or_else(|_| panic!("`{sql}` printed {text:?}"))
    }

    /// The sessions of database `db` on the server (the asking client's are never in it).
    fn sessions_sql(self, db: &str) -> String {
        match self {
            Db::My => {
                format!("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = '{db}'")
            }
            Db::Pg => format!("SELECT count(*) FROM pg_stat_activity WHERE datname = '{db}'"),
        }
    }

    /// The connections a client may open: `max_connections`, less PostgreSQL's reserved ones.
    fn max_connections(self) -> u64 {
        match self {
            Db::My => self.number("SELECT @@max_connections"),
            Db::Pg => self.number(
                "SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int",
            ),
        }
    }

    /// Connections open on the whole server now.
    fn connected(self) -> u64 {
        match self {
            Db::My => self.number("SHOW GLOBAL STATUS LIKE 'Threads_connected'"),
            Db::Pg => self.number(
                "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'",
            ),
        }
    }

    fn target(self, db: &str) -> String {
        match self {
            Db::My => format!(
                "[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:3306\"]\nuser = \"root\"\ndatabase = \"{db}\"\n"
            ),
            Db::Pg => format!(
                "[target]\ndriver = \"pgsql\"\nhosts = [\"127.0.0.1:5432\"]\nuser = \"postgres\"\ndatabase = \"{db}\"\n"
            ),
        }
    }
}

/// An OLTP point-select suite on `db` with `defaults` added, and `hooks`.
fn suite(server: Db, db: &str, defaults: &str, hooks: &str) -> String {
    format!(
        "[suite]\nname = \"conn\"\nserver_cost = false\n\n{}\n{hooks}\n[defaults]\ntables = 1\ntable_size = 1000\n{defaults}\n\n[matrix]\nworkload = [\"oltp_point_select\"]\n",
        server.target(db)
    )
}

/// Runs `text` as a suite in `dir`; its exit code, stdout and stderr.
fn run(dir: &Path, text: &str) -> (Option<i32>, String, String) {
    let path = dir.join("suite.toml");
    std::fs::write(&path, text).unwrap();
    let out = sbsuite()
        .arg("run")
        .arg(&path)
        .arg("--results-dir")
        .arg(dir.join("results"))
        .args(["--progress", "off"])
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn num(row: &std::collections::HashMap<String, String>, column: &str) -> f64 {
    row[column]
        .parse()
        .unwrap_or_else(|_| panic!("{column} = {:?} in {row:?}", row[column]))
}

/// `connect = "per_transaction"` for 3 s on 2 threads: the server counts what results.csv
/// says, one connection per transaction, plus sbsuite's own and the hook's.
fn per_transaction_connects_are_the_servers(server: Db) {
    let _alone = common::server_lock::server_lock();
    let db = match server {
        Db::My => "sbs_conn_my_txn",
        Db::Pg => "sbs_conn_pg_txn",
    };
    if !server.fresh(db) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("own.log");
    let read = match server {
        Db::My => server.client("SHOW GLOBAL STATUS LIKE 'Connections'") + " | cut -f2",
        // A session reaches pg_stat_database when its backend exits: wait for the step's
        // backends to be gone (at most 10 s), then a little for their statistics.
        Db::Pg => format!(
            "n=0; while [ \"$({})\" != 0 ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n+1)); done; sleep 0.5; {}",
            server.client(&server.sessions_sql(db)),
            server.client(&format!(
                "SELECT sessions FROM pg_stat_database WHERE datname = '{db}'"
            ))
        ),
    };
    let line = |when: &str| {
        format!(
            "[ {{{{ kind }}}} = run ] && echo {when} $({read}) >> {} || true",
            log.display()
        )
    };
    let hooks = format!(
        "[hooks]\nbefore_step = '''{}'''\nafter_step = '''{}'''\n",
        line("before"),
        line("after")
    );
    let text = suite(
        server,
        db,
        "time = 3\nthreads = 2\nconnect = \"per_transaction\"\n",
        &hooks,
    );
    let (code, stdout, stderr) = run(dir.path(), &text);
    let own = std::fs::read_to_string(&log).unwrap_or_default();
    server.drop_database(db);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let rows = results(&dir.path().join("results"));
    assert_eq!(rows.len(), 1, "{rows:?}");
    let r = &rows[0];
    assert_eq!(r["status"], "ok", "{r:?}");
    let (events, connects) = (num(r, "events"), num(r, "connects"));
    assert!(events > 50.0, "{r:?}");
    assert_eq!(num(r, "reconnects"), 0.0, "{r:?}");
    assert_eq!(connects, events, "one connection per transaction: {r:?}");
    let (avg, p95, max) = (
        num(r, "connect_avg_ms"),
        num(r, "connect_p95_ms"),
        num(r, "connect_max_ms"),
    );
    assert!(0.0 < avg && avg <= max && p95 <= max, "{r:?}");
    assert_eq!(r["idle_connections"], "", "{r:?}");
    assert!(
        stdout.contains(&format!("Connections: {connects} connects (")),
        "{stdout}"
    );
    let reading = |when: &str| -> u64 {
        own.lines()
            .find_map(|l| l.strip_prefix(when))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no `{when}` reading in {own:?}"))
    };
    let delta = reading("before ").abs_diff(reading("after "));
    // sbsuite's own: the pre-run check; MariaDB also counts the after-hook's client.
    let own_connections = match server {
        Db::My => 2,
        Db::Pg => 1,
    };
    let expected = connects as u64 + own_connections;
    eprintln!(
        "{db}: {events} transactions, {connects} connects (avg {avg} ms, p95 {p95} ms), the \
         server counted {delta} connections over the step"
    );
    // `Connections` is the whole server's: a client of another process may slip in.
    let slack = match server {
        Db::My => 3,
        Db::Pg => 0,
    };
    assert!(
        expected <= delta && delta <= expected + slack,
        "the server counted {delta} connections over the step, results.csv {connects} connects \
         + {own_connections} of sbsuite's and the hooks' own"
    );
}

#[test]
fn issue_30_per_transaction_connects_are_the_servers_on_mariadb() {
    per_transaction_connects_are_the_servers(Db::My);
}

#[test]
fn issue_30_per_transaction_connects_are_the_servers_on_postgresql() {
    per_transaction_connects_are_the_servers(Db::Pg);
}

/// `idle_connections = N` beside 2 workers for 3 s: a side thread sees at least N more
/// sessions of the step's database during it, none are left after it, none died.
fn idle_connections_are_held_and_closed(server: Db) {
    let _alone = common::server_lock::server_lock();
    let db = match server {
        Db::My => "sbs_conn_my_idle",
        Db::Pg => "sbs_conn_pg_idle",
    };
    if !server.fresh(db) {
        return;
    }
    let threads = 2;
    // What fits under the server's limit beside everyone connected now, with a margin.
    let room = server
        .max_connections()
        .saturating_sub(server.connected() + threads + 10);
    let n = room.min(200);
    assert!(
        n >= 20,
        "the server has room for only {room} more connections"
    );
    let dir = tempfile::tempdir().unwrap();
    let peak = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (peak, done, sql) = (
            Arc::clone(&peak),
            Arc::clone(&done),
            server.sessions_sql(db),
        );
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(server.number(&sql), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(200));
            }
        })
    };
    let text = suite(
        server,
        db,
        &format!("time = 3\nthreads = {threads}\nidle_connections = {n}\n"),
        "",
    );
    let (code, stdout, stderr) = run(dir.path(), &text);
    done.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    let after = server.number(&server.sessions_sql(db));
    server.drop_database(db);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let rows = results(&dir.path().join("results"));
    let r = &rows[0];
    assert_eq!(r["status"], "ok", "{r:?}");
    assert_eq!(num(r, "idle_connections"), n as f64, "{r:?}");
    assert_eq!(num(r, "idle_dead"), 0.0, "{r:?}");
    assert_eq!(num(r, "connects"), 0.0, "{r:?}");
    let peak = peak.load(Ordering::Relaxed);
    eprintln!("{db}: {n} idle connections and {threads} workers, {peak} sessions seen at most");
    assert!(
        peak >= n + threads,
        "at most {peak} sessions of {db} seen during the step, with {n} idle and {threads} workers"
    );
    assert_eq!(after, 0, "sessions of {db} left after the run");
    assert!(
        stdout.contains(&format!("idle: {n} held, 0 dead at the end")),
        "{stdout}"
    );
}

#[test]
fn issue_30_idle_connections_are_held_and_closed_on_mariadb() {
    idle_connections_are_held_and_closed(Db::My);
}

#[test]
fn issue_30_idle_connections_are_held_and_closed_on_postgresql() {
    idle_connections_are_held_and_closed(Db::Pg);
}

/// More connections than `max_connections` fail the step before any is opened, naming the
/// limit and the numbers.
#[test]
fn issue_30_idle_connections_past_max_connections_fail_the_step_before_opening() {
    let _alone = common::server_lock::server_lock();
    let server = Db::My;
    let db = "sbs_conn_my_over";
    if !server.fresh(db) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let max = server.max_connections();
    let text = suite(
        server,
        db,
        &format!("time = 1\nidle_connections = {}\n", max + 10),
        "",
    );
    let (code, stdout, stderr) = run(dir.path(), &text);
    let after = server.number(&server.sessions_sql(db));
    server.drop_database(db);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    let rows = results(&dir.path().join("results"));
    let r = &rows[0];
    assert_eq!(r["status"], "failed", "{r:?}");
    assert!(
        r["error"].contains(&format!("max_connections = {max}"))
            && r["error"].contains(&format!("idle_connections = {}", max + 10)),
        "{r:?}"
    );
    assert_eq!(after, 0);
}

/// Idle connections the server drops during the step are found dead at its end: a side
/// thread ends 4 of 10 once they have been idle for 2 s (MariaDB's `KILL`, PostgreSQL's
/// `pg_terminate_backend`), while the one worker's connection is never idle that long.
fn idle_connections_dropped_by_the_server_are_counted_dead(server: Db) {
    let _alone = common::server_lock::server_lock();
    let db = match server {
        Db::My => "sbs_conn_my_dead",
        Db::Pg => "sbs_conn_pg_dead",
    };
    if !server.fresh(db) {
        return;
    }
    let (n, killed) = (10, 4);
    let idle = match server {
        Db::My => format!(
            "FROM information_schema.PROCESSLIST WHERE DB = '{db}' AND COMMAND = 'Sleep' AND TIME >= 2"
        ),
        Db::Pg => format!(
            "FROM pg_stat_activity WHERE datname = '{db}' AND state = 'idle' AND state_change < now() - interval '2 seconds'"
        ),
    };
    let kill = match server {
        Db::My => format!(
            "{} | mysql -h 127.0.0.1 -P 3306 -u root",
            server.client(&format!(
                "SELECT CONCAT('KILL ', ID, ';') {idle} LIMIT {killed}"
            ))
        ),
        Db::Pg => server.client(&format!(
            "SELECT count(pg_terminate_backend(pid)) FROM (SELECT pid {idle} LIMIT {killed}) t"
        )),
    };
    let done = Arc::new(AtomicBool::new(false));
    let killer = {
        let (done, count) = (Arc::clone(&done), format!("SELECT COUNT(*) {idle}"));
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if server.number(&count) >= n {
                    let out = Command::new("sh").arg("-c").arg(&kill).output().unwrap();
                    return out.status.success();
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            false
        })
    };
    let dir = tempfile::tempdir().unwrap();
    let text = suite(
        server,
        db,
        &format!("time = 5\nthreads = 1\nidle_connections = {n}\n"),
        "",
    );
    let (code, stdout, stderr) = run(dir.path(), &text);
    done.store(true, Ordering::Relaxed);
    let killed_them = killer.join().unwrap();
    server.drop_database(db);
    assert!(
        killed_them,
        "the side thread ended {killed} idle connections"
    );
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let rows = results(&dir.path().join("results"));
    let r = &rows[0];
    assert_eq!(r["status"], "ok", "{r:?}");
    assert_eq!(num(r, "idle_connections"), n as f64, "{r:?}");
    assert_eq!(num(r, "idle_dead"), killed as f64, "{r:?}");
    assert!(
        stdout.contains(&format!("idle: {n} held, {killed} dead at the end")),
        "{stdout}"
    );
}

#[test]
fn issue_30_idle_connections_dropped_by_mariadb_are_counted_dead() {
    idle_connections_dropped_by_the_server_are_counted_dead(Db::My);
}

#[test]
fn issue_30_idle_connections_dropped_by_postgresql_are_counted_dead() {
    idle_connections_dropped_by_the_server_are_counted_dead(Db::Pg);
}
