//! Stop means stopped (#26): a step that is stopped leaves nothing running behind it. Each
//! test drives the real binary against the real servers and looks at what the servers and the
//! kernel say, not at sbsuite's report: the rows a runaway transaction keeps updating, the
//! sessions in `information_schema.PROCESSLIST` and `pg_stat_activity`, and the threads and
//! their states in `/proc/<pid>/task`.
//!
//! - a custom transaction that never ends (`repeat` of 10^12 statements) is stopped at
//!   `forced_shutdown` on MariaDB, PostgreSQL and SQLite: its connections are gone, its table
//!   stops changing, its cleanup drops the table, and the next step runs alone;
//! - a Lua `event()` that loops (`while true do end`, JIT-compiled) is stopped the same way;
//! - a statement running past `query_timeout` is cancelled on the server (MariaDB's
//!   `BENCHMARK`, PostgreSQL's `pg_sleep`) or interrupted (SQLite's endless recursive CTE);
//! - a script allocating without end fails its step with Lua's "not enough memory" within
//!   `lua_memory_limit`, and a script whose top level loops fails `validate` after 10 s;
//! - a looping `prepare()` ends at the first Ctrl-C;
//! - a step with a connection per transaction and idle connections (#30) leaves neither a
//!   session nor a thread behind, ended by its time limit or by Ctrl-C;
//! - a re-run after an ignored error rolls back the transaction the workload opened itself
//!   (the money of a bank stays whole), and an ignored error that recurs on every re-run fails
//!   the step after `max_retries`, counted in `error_codes`.
//!
//! Databases: `sbs_stop_*` on each server (dropped and created per test). Without a server the
//! tests print why and pass, unless `CI` is set: then they fail.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use tokio_postgres::SimpleQueryMessage;

use crate::common;

use common::db::{admin_my, admin_pg, my_opts, pg_client, rt};
use common::measure::measured;
use common::{results, sbsuite_process, skip};

/// A database on one of the servers, read behind sbsuite's back.
#[derive(Clone)]
enum Server {
    My(String),
    Pg(String),
    Lite(PathBuf),
}

impl Server {
    /// A fresh database `name` on the server of `driver` (a SQLite file in `dir`); `None`
    /// after saying why when the server cannot be reached.
    fn fresh(driver: &str, name: &str, dir: &Path) -> Option<Server> {
        let ok = match driver {
            "mysql" => admin_my(&[
                format!("DROP DATABASE IF EXISTS {name}"),
                format!("CREATE DATABASE {name}"),
            ]),
            "pgsql" => admin_pg(&[
                format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
                format!("CREATE DATABASE {name}"),
            ]),
            _ => return Some(Server::Lite(dir.join(format!("{name}.db")))),
        };
        match ok {
            Some(()) if driver == "mysql" => Some(Server::My(name.into())),
            Some(()) => Some(Server::Pg(name.into())),
            None => {
                skip(&format!("no {driver} server at its default address"));
                None
            }
        }
    }

    /// The suite's `[target]`.
    fn target(&self) -> String {
        match self {
            Server::My(db) => format!(
                "[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:3306\"]\nuser = \"root\"\ndatabase = \"{db}\"\n"
            ),
            Server::Pg(db) => format!(
                "[target]\ndriver = \"pgsql\"\nhosts = [\"127.0.0.1:5432\"]\nuser = \"postgres\"\ndatabase = \"{db}\"\n"
            ),
            Server::Lite(path) => format!(
                "[target]\ndriver = \"sqlite\"\npath = \"{}\"\n",
                path.display()
            ),
        }
    }

    /// The first column of the first row of `sql` as text (`None`: no row, or NULL).
    fn scalar(&self, sql: &str) -> Option<String> {
        match self {
            Server::My(db) => rt().block_on(async {
                let mut c = mysql_async::Conn::new(my_opts(Some(db))).await.unwrap();
                let v: Option<Option<String>> = c.query_first(sql).await.unwrap();
                c.disconnect().await.unwrap();
                v.flatten()
            }),
            Server::Pg(db) => rt().block_on(async {
                let c = pg_client(db).await.expect("postgres");
                let rows = c.simple_query(sql).await.unwrap();
                rows.into_iter().find_map(|m| match m {
                    SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
                    _ => None,
                })
            }),
            Server::Lite(path) => {
                let c = rusqlite::Connection::open(path).unwrap();
                c.query_row(sql, [], |r| r.get::<_, Option<i64>>(0))
                    .ok()
                    .flatten()
                    .map(|v| v.to_string())
            }
        }
    }

    /// Sessions of this database on the server other than the asking one, and how many of
    /// them are running a statement.
    fn sessions(&self) -> (u64, u64) {
        let (all, busy) = match self {
            Server::My(db) => (
                format!(
                    "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = '{db}' AND ID <> CONNECTION_ID()"
                ),
                format!(
                    "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = '{db}' AND ID <> CONNECTION_ID() AND COMMAND = 'Query'"
                ),
            ),
            Server::Pg(db) => (
                format!(
                    "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = '{db}' AND pid <> pg_backend_pid()"
                ),
                format!(
                    "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = '{db}' AND pid <> pg_backend_pid() AND state = 'active'"
                ),
            ),
            Server::Lite(_) => return (0, 0),
        };
        let n = |sql: &str| self.scalar(sql).and_then(|v| v.parse().ok()).unwrap_or(0);
        (n(&all), n(&busy))
    }

    /// Whether table `t` exists.
    fn has_table(&self, t: &str) -> bool {
        let sql = match self {
            Server::My(db) => format!(
                "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{db}' AND TABLE_NAME = '{t}'"
            ),
            Server::Pg(_) => format!("SELECT COUNT(*) FROM pg_tables WHERE tablename = '{t}'"),
            Server::Lite(_) => {
                format!("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '{t}'")
            }
        };
        self.scalar(&sql).as_deref() != Some("0")
    }

    fn drop(&self) {
        match self {
            Server::My(db) => rt().block_on(async {
                if let Ok(mut c) = mysql_async::Conn::new(my_opts(None)).await {
                    let _ = c.query_drop(format!("DROP DATABASE IF EXISTS {db}")).await;
                    let _ = c.disconnect().await;
                }
            }),
            Server::Pg(db) => rt().block_on(async {
                if let Some(c) = pg_client("postgres").await {
                    let _ = c
                        .simple_query(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
                        .await;
                }
            }),
            Server::Lite(path) => {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

/// The threads of process `pid` whose name starts with `prefix`, with their states (`R`
/// running, `S` sleeping…).
fn threads(pid: u32, prefix: &str) -> Vec<(String, char)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for t in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
            continue;
        };
        // `pid (comm) S …`: the name is between the first `(` and the last `)`.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = &stat[open + 1..close];
        let state = stat[close + 1..].trim_start().chars().next().unwrap_or('?');
        if name.starts_with(prefix) {
            out.push((name.to_string(), state));
        }
    }
    out
}

/// `sbsuite run SUITE` from `dir` (results in `dir/results`) to its end, killed after `limit`.
fn measured_run(dir: &Path, suite: &Path, limit: Duration) -> common::measure::Measured {
    let mut cmd = sbsuite_process();
    cmd.current_dir(dir)
        .arg("run")
        .arg(suite)
        .args(["--progress", "plain", "--results-dir"])
        .arg(dir.join("results"));
    measured(cmd, limit)
}

/// `sbsuite run SUITE` started with its stdout piped; stderr goes to a file in `dir`.
fn start(dir: &Path, suite: &Path) -> Child {
    start_with(dir, suite, &[])
}

/// [`start`] with more environment variables.
fn start_with(dir: &Path, suite: &Path, env: &[(&str, &str)]) -> Child {
    sbsuite_process()
        .envs(env.iter().copied())
        .current_dir(dir)
        .args(["run"])
        .arg(suite)
        .args(["--progress", "plain", "--results-dir"])
        .arg(dir.join("results"))
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.join("stderr")).unwrap())
        .spawn()
        .expect("start sbsuite")
}

/// Reads `child`'s stdout into `seen` until it contains `what` `nth` times.
fn read_until(child: &mut Child, seen: &mut String, what: &str, nth: usize) {
    let stdout = child.stdout.as_mut().expect("stdout piped");
    let mut buf = [0u8; 4096];
    while seen.matches(what).count() < nth {
        let n = stdout.read(&mut buf).unwrap();
        assert!(n > 0, "sbsuite ended before `{what}` #{nth}:\n{seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
}

/// Waits for `child` at most `limit`; its exit code and the rest of its stdout.
fn finish(mut child: Child, seen: &mut String, limit: Duration) -> Option<i32> {
    let start = Instant::now();
    let mut rest = String::new();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let _ = stdout.read_to_string(&mut rest);
        rest
    });
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            seen.push_str(&reader.join().unwrap());
            return status.code();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("sbsuite did not end within {limit:?}:\n{seen}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A workload whose only transaction never ends (10^12 updates of one row in one open
/// transaction, whose locks the cleanup's `DROP TABLE` must wait for), then a `cpu` step: the
/// plan is prepare, run `forever`, cleanup, run `cpu`. `query_timeout = 20` bounds what a
/// cleanup blocked by a leftover transaction waits (300 s by default).
fn endless_custom_suite(target: &str) -> String {
    format!(
        r#"[suite]
name = "stop"
on_error = "continue"

{target}
[defaults]
time = 2
forced_shutdown = 1
threads = 2
report_interval = 0

[matrix]
workload = ["forever", "cpu"]

[workloads.forever]
schema = ["CREATE TABLE spin (id INTEGER NOT NULL PRIMARY KEY, v BIGINT)"]
cleanup = ["DROP TABLE IF EXISTS spin"]

[[workloads.forever.load]]
table = "spin"
rows = 4
columns = [{{ name = "id", gen = "row" }}, {{ name = "v", gen = {{ const = 0 }} }}]

[workloads.forever.transactions.endless]
let = {{ row = "thread % 4 + 1" }}
steps = [{{ repeat = "1000000000000", steps = [{{ sql = "UPDATE spin SET v = v + 1 WHERE id = :row" }}] }}]
"#
    )
}

/// The plan is prepare, the stopped run, cleanup, the `cpu` run: while the `cpu` run runs, the
/// stopped step's sessions are gone, its table is gone (the cleanup could drop it), and the
/// process runs only the `cpu` step's one worker thread per thread. `wire_io`: the
/// `SBSUITE_WIRE_IO` of the run (#32), which `host.json` records; `carried`: the stopped step
/// runs its two workers on one carrier thread (`client_threads = 1`, #32), which is gone too.
fn a_stopped_step_leaves_nothing_behind(driver: &str, wire_io: Option<&str>, carried: bool) {
    let dir = tempfile::tempdir().unwrap();
    let name = format!(
        "sbs_stop_{driver}_{}{}",
        wire_io.unwrap_or("default"),
        if carried { "_carried" } else { "" }
    );
    let Some(server) = Server::fresh(driver, &name, dir.path()) else {
        return;
    };
    let suite = dir.path().join("stop.toml");
    let target = match server {
        Server::Lite(_) => server.target(),
        _ => server
            .target()
            .replace("[target]\n", "[target]\nquery_timeout = 20\n"),
    };
    let mut text = endless_custom_suite(&target);
    if carried {
        text = text.replace(
            "workload = [\"forever\", \"cpu\"]",
            "workload = [\"forever\"]\nclient_threads = [1]\ninclude = [{ workload = \"cpu\" }]",
        );
    }
    std::fs::write(&suite, text).unwrap();
    let started = Instant::now();
    let env: Vec<(&str, &str)> = wire_io
        .map(|v| ("SBSUITE_WIRE_IO", v))
        .into_iter()
        .collect();
    let mut child = start_with(dir.path(), &suite, &env);
    let pid = child.id();
    let mut seen = String::new();
    // The second measured step (`cpu`) has started: the first one has been stopped.
    read_until(&mut child, &mut seen, "Threads started!", 2);
    let stopped_after = started.elapsed();
    let sessions = server.sessions();
    let workers = threads(pid, "sbsuite-worker");
    let carriers = threads(pid, "sbsuite-carrier");
    let table_gone = !server.has_table("spin");
    let code = finish(child, &mut seen, Duration::from_secs(60));
    let rows = results(&dir.path().join("results"));
    let stderr = std::fs::read_to_string(dir.path().join("stderr")).unwrap();
    server.drop();

    assert_eq!(
        sessions,
        (0, 0),
        "{driver}: sessions of the stopped step still on the server during the next step"
    );
    assert_eq!(
        workers.len(),
        2,
        "{driver}: only the cpu step's two workers may run: {workers:?}"
    );
    assert!(carriers.is_empty(), "{driver}: {carriers:?}");
    assert!(
        table_gone,
        "{driver}: the cleanup dropped the table\n{stderr}"
    );
    // prepare + time 2 + forced_shutdown 1 + the cancel, well under the old 300 s wait.
    assert!(
        stopped_after < Duration::from_secs(20),
        "{driver}: {stopped_after:?}"
    );
    let run = |w: &str| {
        rows.iter()
            .find(|r| r["workload"] == w)
            .unwrap_or_else(|| panic!("{driver}: no row of {w}: {rows:?}"))
    };
    let forever = run("forever");
    assert_eq!(forever["status"], "interrupted", "{forever:?}");
    assert!(
        forever["error"].contains("were stopped, their statements cancelled on the server"),
        "{forever:?}"
    );
    assert_eq!(run("cpu")["status"], "ok", "{stderr}");
    if carried {
        assert_eq!(forever["client_threads"], "1", "{forever:?}");
    }
    let host = common::run_dir(&dir.path().join("results"), "stop").join("host.json");
    let host = std::fs::read_to_string(host).unwrap();
    let recorded = match wire_io {
        Some("uring") => "\"wire_io\": \"io_uring\"",
        _ => "\"wire_io\": \"blocking (the default)\"",
    };
    assert!(host.contains(recorded), "{driver}: {host}");
    // A forced shutdown is a failure of the suite (its row keeps the numbers).
    assert_eq!(code, Some(1), "{seen}\n{stderr}");
    assert!(
        !stderr.contains("failed to drop") && !stderr.contains("cleanup failed"),
        "{stderr}"
    );
}

#[test]
fn a_stopped_custom_step_leaves_nothing_on_mariadb() {
    a_stopped_step_leaves_nothing_behind("mysql", None, false);
}

/// The same over io_uring round trips (#32): a worker waiting in the ring for an answer is
/// reached by the same cancel and shutdown.
#[test]
fn a_stopped_custom_step_over_io_uring_leaves_nothing_on_mariadb() {
    a_stopped_step_leaves_nothing_behind("mysql", Some("uring"), false);
}

#[test]
fn a_stopped_custom_step_over_io_uring_leaves_nothing_on_postgresql() {
    a_stopped_step_leaves_nothing_behind("pgsql", Some("uring"), false);
}

#[test]
fn a_stopped_custom_step_leaves_nothing_on_postgresql() {
    a_stopped_step_leaves_nothing_behind("pgsql", None, false);
}

/// The same with the stopped step's two workers on one carrier thread (`client_threads`,
/// #32): the cancel ends the statements both coroutines wait for, and the carrier is gone.
#[test]
fn a_stopped_custom_step_on_client_threads_leaves_nothing_on_mariadb() {
    a_stopped_step_leaves_nothing_behind("mysql", None, true);
}

#[test]
fn a_stopped_custom_step_on_client_threads_leaves_nothing_on_postgresql() {
    a_stopped_step_leaves_nothing_behind("pgsql", None, true);
}

#[test]
fn a_stopped_custom_step_leaves_nothing_on_sqlite() {
    a_stopped_step_leaves_nothing_behind("sqlite", None, false);
}

/// Connection models (#30): a run whose workers open a connection per transaction and that
/// holds 20 idle connections, then `cpu`. Ended by its time limit: while `cpu` runs, no
/// session of the run's database is on the server and none of its threads (workers, idle
/// holders) is left. Stopped by Ctrl-C in the middle: its `after_step` hook, which runs once
/// the stopped step has ended, finds no session and no such thread either, and its row is
/// `interrupted` with the idle connections unchecked.
fn connection_models_leave_nothing_behind(driver: &str) {
    let dir = tempfile::tempdir().unwrap();
    let name = format!("sbs_stop_conn_{driver}");
    let Some(server) = Server::fresh(driver, &name, dir.path()) else {
        return;
    };
    let log = dir.path().join("after.log");
    let count = match &server {
        Server::My(db) => format!(
            "mysql -h 127.0.0.1 -P 3306 -u root -N -e \"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = '{db}'\""
        ),
        Server::Pg(db) => format!(
            "psql --host=127.0.0.1 --port=5432 --username=postgres --no-psqlrc -qAt -d postgres -c \"SELECT count(*) FROM pg_stat_activity WHERE datname = '{db}'\""
        ),
        Server::Lite(_) => "echo 0".to_string(),
    };
    // The hook waits up to 2 s for the sessions to go (a backend exits after its client).
    let hook = format!(
        "[hooks]\nafter_step = '''[ {{{{ workload }}}} = oltp_point_select ] && [ {{{{ kind }}}} = run ] && {{ n=0; while [ \"$({count})\" != 0 ] && [ $n -lt 20 ]; do sleep 0.1; n=$((n+1)); done; echo \"$(cat /proc/$PPID/task/*/comm | grep -c -e sbsuite-idle -e sbsuite-worker) $({count})\" >> {}; }} || true'''\n",
        log.display()
    );
    let suite_text = |time: u32, workloads: &str| {
        format!(
            "[suite]\nname = \"conn\"\n\n{}\n{hook}\n[defaults]\ntime = {time}\nthreads = 2\ntables = 1\ntable_size = 1000\nconnect = \"per_transaction\"\nidle_connections = 20\n\n[matrix]\nworkload = [{workloads}]\n",
            server.target()
        )
    };
    let suite = dir.path().join("conn.toml");

    // Ended by its time limit.
    std::fs::write(&suite, suite_text(2, "\"oltp_point_select\", \"cpu\"")).unwrap();
    let mut child = start(dir.path(), &suite);
    let pid = child.id();
    let mut seen = String::new();
    read_until(&mut child, &mut seen, "Threads started!", 2);
    let sessions = server.sessions();
    let holders = threads(pid, "sbsuite-idle");
    let workers = threads(pid, "sbsuite-worker");
    let code = finish(child, &mut seen, Duration::from_secs(60));
    let rows = results(&dir.path().join("results"));
    let after = std::fs::read_to_string(&log).unwrap_or_default();
    let stderr = std::fs::read_to_string(dir.path().join("stderr")).unwrap();
    assert_eq!(code, Some(0), "{seen}\n{stderr}");
    assert_eq!(
        sessions,
        (0, 0),
        "{driver}: sessions left during the next step"
    );
    assert!(holders.is_empty(), "{driver}: {holders:?}");
    assert_eq!(
        workers.len(),
        2,
        "{driver}: only cpu's workers: {workers:?}"
    );
    assert_eq!(after.trim(), "0 0", "{driver}: after the step: {after}");
    let oltp = rows
        .iter()
        .find(|r| r["workload"] == "oltp_point_select")
        .expect("a row");
    assert_eq!(oltp["status"], "ok", "{oltp:?}");
    assert_eq!(oltp["connects"], oltp["events"], "{oltp:?}");
    assert_eq!(
        (&*oltp["idle_connections"], &*oltp["idle_dead"]),
        ("20", "0")
    );

    // Stopped by Ctrl-C.
    std::fs::remove_dir_all(dir.path().join("results")).unwrap();
    std::fs::remove_file(&log).unwrap();
    std::fs::write(&suite, suite_text(60, "\"oltp_point_select\"")).unwrap();
    let mut child = start(dir.path(), &suite);
    let mut seen = String::new();
    read_until(&mut child, &mut seen, "Threads started!", 1);
    std::thread::sleep(Duration::from_millis(1500));
    let signalled = Instant::now();
    common::interrupt(child.id());
    let code = finish(child, &mut seen, Duration::from_secs(60));
    let stopped_in = signalled.elapsed();
    let rows = results(&dir.path().join("results"));
    let after = std::fs::read_to_string(&log).unwrap_or_default();
    server.drop();
    assert_eq!(code, Some(130), "{seen}");
    assert!(stopped_in < Duration::from_secs(15), "{stopped_in:?}");
    assert_eq!(
        after.trim(),
        "0 0",
        "{driver}: after the stopped step: {after}"
    );
    let r = &rows[0];
    assert_eq!(r["status"], "interrupted", "{r:?}");
    assert_eq!((&*r["idle_connections"], &*r["idle_dead"]), ("20", ""));
    assert!(
        seen.contains("idle: 20 held, not checked (the step was stopped)"),
        "{seen}"
    );
}

#[test]
fn issue_30_connection_models_leave_nothing_on_mariadb() {
    connection_models_leave_nothing_behind("mysql");
}

#[test]
fn issue_30_connection_models_leave_nothing_on_postgresql() {
    connection_models_leave_nothing_behind("pgsql");
}

#[test]
fn issue_30_connection_models_leave_nothing_on_sqlite() {
    connection_models_leave_nothing_behind("sqlite");
}

/// A Lua `event()` looping without end (compiled by LuaJIT after a few iterations), then `cpu`:
/// the looping workers are gone once the `cpu` step runs.
#[test]
fn a_looping_lua_event_is_stopped_and_its_threads_end() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("loop.lua"),
        "function event()\n  local x = 0\n  while true do x = x + 1 end\nend\n",
    )
    .unwrap();
    let suite = dir.path().join("loop.toml");
    std::fs::write(
        &suite,
        r#"[suite]
name = "loop"
on_error = "continue"

[defaults]
time = 2
forced_shutdown = 1
threads = 2

[matrix]
workload = [{ script = "loop.lua" }, "cpu"]
"#,
    )
    .unwrap();
    let started = Instant::now();
    let mut child = start(dir.path(), &suite);
    let pid = child.id();
    let mut seen = String::new();
    read_until(&mut child, &mut seen, "Threads started!", 2);
    let stopped_after = started.elapsed();
    // Sampled over a second: a looping thread would be running (R) in every sample.
    let mut samples = Vec::new();
    for _ in 0..5 {
        samples.push(threads(pid, "sbsuite-worker"));
        std::thread::sleep(Duration::from_millis(200));
    }
    let code = finish(child, &mut seen, Duration::from_secs(60));
    let rows = results(&dir.path().join("results"));
    for s in &samples {
        assert!(s.len() <= 2, "the looping workers are still there: {s:?}");
    }
    assert!(
        stopped_after < Duration::from_secs(10),
        "{stopped_after:?}\n{seen}"
    );
    let lua = rows
        .iter()
        .find(|r| r["workload"].ends_with("loop.lua"))
        .expect("the script's row");
    assert_eq!(lua["status"], "interrupted", "{lua:?}");
    assert!(lua["error"].contains("were stopped"), "{lua:?}");
    let cpu = rows
        .iter()
        .find(|r| r["workload"] == "cpu")
        .expect("cpu row");
    assert_eq!(cpu["status"], "ok", "{cpu:?}");
    assert_eq!(code, Some(1));
}

/// A check whose statement runs past `query_timeout` fails its step at the timeout, and the
/// statement is no longer running on the server once sbsuite has gone.
fn a_statement_past_query_timeout_is_cancelled_on_the_server(driver: &str, slow: &str) {
    let dir = tempfile::tempdir().unwrap();
    let name = format!("sbs_stop_qt_{driver}");
    let Some(server) = Server::fresh(driver, &name, dir.path()) else {
        return;
    };
    let target = server
        .target()
        .replace("[target]\n", "[target]\nquery_timeout = 2\n");
    let suite = dir.path().join("slow.toml");
    std::fs::write(
        &suite,
        format!(
            r#"[suite]
name = "slow"

{target}
[defaults]
workload = "slow"
time = 1
check = true

[workloads.slow]
schema = ["CREATE TABLE t (id INTEGER NOT NULL PRIMARY KEY)"]
cleanup = ["DROP TABLE IF EXISTS t"]

[workloads.slow.transactions.one]
steps = [{{ sql = "SELECT COUNT(*) FROM t" }}]

[[workloads.slow.checks]]
name = "a statement that never ends"
sql = "{slow}"
expect = 0
"#
        ),
    )
    .unwrap();
    let m = measured_run(dir.path(), &suite, Duration::from_secs(120));
    // The server needs a moment to finish closing the killed session.
    let settled = Instant::now();
    let mut after = server.sessions();
    while after != (0, 0) && settled.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(100));
        after = server.sessions();
    }
    server.drop();
    assert_eq!(m.code, Some(1), "{}\n{}", m.stdout, m.stderr);
    assert!(
        m.stderr.contains("query_timeout = 2 s") || m.stdout.contains("query_timeout = 2 s"),
        "{}\n{}",
        m.stdout,
        m.stderr
    );
    assert!(m.elapsed < Duration::from_secs(60), "{:?}", m.elapsed);
    assert_eq!(
        after,
        (0, 0),
        "{driver}: the statement is still running on the server"
    );
}

#[test]
fn query_timeout_kills_the_statement_on_mariadb() {
    a_statement_past_query_timeout_is_cancelled_on_the_server(
        "mysql",
        "SELECT BENCHMARK(100000000000, MD5(RAND()))",
    );
}

#[test]
fn query_timeout_cancels_the_statement_on_postgresql() {
    a_statement_past_query_timeout_is_cancelled_on_the_server(
        "pgsql",
        "SELECT pg_sleep(100000)::text::int",
    );
}

#[test]
fn query_timeout_interrupts_an_endless_sqlite_statement() {
    a_statement_past_query_timeout_is_cancelled_on_the_server(
        "sqlite",
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT COUNT(*) FROM r",
    );
}

/// `sbsuite run` of a suite whose only step runs `script` (written to `dir/s.lua`) with
/// `extra` options, measured.
fn run_script(dir: &Path, script: &str, extra: &str) -> common::measure::Measured {
    std::fs::write(dir.join("s.lua"), script).unwrap();
    let suite = dir.join("s.toml");
    std::fs::write(
        &suite,
        format!(
            "[suite]\nname = \"s\"\n\n[defaults]\nworkload = {{ script = \"s.lua\" }}\ntime = 3\nthreads = 1\n{extra}\n"
        ),
    )
    .unwrap();
    measured_run(dir, &suite, Duration::from_secs(120))
}

#[test]
fn a_script_that_eats_memory_fails_its_step_within_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let m = run_script(
        dir.path(),
        "function event()\n  local t = {}\n  for i = 1, 100 do t[i] = string.rep('x', 256 * 1024 * 1024) .. i end\nend\n",
        "",
    );
    let rows = results(&dir.path().join("results"));
    assert_eq!(m.code, Some(1), "{}\n{}", m.stdout, m.stderr);
    assert_eq!(rows[0]["status"], "failed", "{rows:?}");
    assert!(rows[0]["error"].contains("not enough memory"), "{rows:?}");
    // The default lua_memory_limit (512 MiB) for the state, and what the process needs besides.
    assert!(
        m.max_rss_kib < (512 + 200) * 1024,
        "peak RSS {} MiB",
        m.max_rss_kib / 1024
    );
}

#[test]
fn a_script_whose_top_level_loops_fails_validate_in_bounded_time() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.lua"), "while true do end\n").unwrap();
    let suite = dir.path().join("s.toml");
    std::fs::write(
        &suite,
        "[suite]\nname = \"s\"\n\n[defaults]\nworkload = { script = \"s.lua\" }\ntime = 1\n",
    )
    .unwrap();
    let mut cmd = sbsuite_process();
    cmd.current_dir(dir.path()).arg("validate").arg(&suite);
    let m = measured(cmd, Duration::from_secs(60));
    assert_eq!(m.code, Some(2), "{}\n{}", m.stdout, m.stderr);
    assert!(
        m.stderr.contains("top level did not finish within 10 s"),
        "{}",
        m.stderr
    );
    assert!(m.elapsed < Duration::from_secs(25), "{:?}", m.elapsed);
}

#[test]
fn a_looping_prepare_ends_at_the_first_ctrl_c() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("s.lua"),
        "function prepare()\n  print('preparing')\n  io.stdout:flush()\n  while true do end\nend\nfunction event() end\n",
    )
    .unwrap();
    let suite = dir.path().join("s.toml");
    std::fs::write(
        &suite,
        "[suite]\nname = \"s\"\n\n[defaults]\nworkload = { script = \"s.lua\" }\ntime = 1\n",
    )
    .unwrap();
    let mut child = start(dir.path(), &suite);
    let mut seen = String::new();
    read_until(&mut child, &mut seen, "preparing", 1);
    std::thread::sleep(Duration::from_millis(300));
    let signalled = Instant::now();
    common::interrupt(child.id());
    let code = finish(child, &mut seen, Duration::from_secs(30));
    assert!(
        signalled.elapsed() < Duration::from_secs(10),
        "{:?}",
        signalled.elapsed()
    );
    assert_eq!(code, Some(130), "{seen}");
}

/// A bank on MariaDB whose transfers open their own transaction (`autocommit = true` and a
/// `START TRANSACTION`: the way to pick an isolation level per transaction there) while
/// another transaction holds the credited account for longer than the lock wait timeout:
/// 1205 (ignored) rolls back the statement only, so a re-run that did not roll back first
/// would commit half a transfer. The bank's total stays what it was.
#[test]
fn a_rerun_rolls_back_the_transaction_the_workload_opened() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = Server::fresh("mysql", "sbs_stop_bank", dir.path()) else {
        return;
    };
    let suite = dir.path().join("bank.toml");
    std::fs::write(
        &suite,
        format!(
            r#"[suite]
name = "bank"

{target}ignore_errors = [1205, 1213]

[defaults]
workload = "bank"
time = 6
threads = 4
check = true

[workloads.bank]
schema = ["CREATE TABLE acc (id INTEGER NOT NULL PRIMARY KEY, bal BIGINT) ENGINE = InnoDB"]
cleanup = ["DROP TABLE IF EXISTS acc"]

[[workloads.bank.load]]
table = "acc"
rows = 2
columns = [{{ name = "id", gen = "row" }}, {{ name = "bal", gen = {{ const = 1000 }} }}]

[workloads.bank.transactions.hog]
weight = 1
autocommit = true
steps = [
  {{ sql = "SET SESSION innodb_lock_wait_timeout = 1" }},
  {{ sql = "START TRANSACTION" }},
  {{ sql = "UPDATE acc SET bal = bal WHERE id = 1" }},
  {{ sql = "SELECT SLEEP(1.5)" }},
  {{ sql = "COMMIT" }},
]

[workloads.bank.transactions.transfer]
weight = 3
autocommit = true
steps = [
  {{ sql = "SET SESSION innodb_lock_wait_timeout = 1" }},
  {{ sql = "START TRANSACTION" }},
  {{ sql = "UPDATE acc SET bal = bal - 1 WHERE id = 2" }},
  {{ sql = "UPDATE acc SET bal = bal + 1 WHERE id = 1" }},
  {{ sql = "COMMIT" }},
]

[[workloads.bank.checks]]
name = "no money is made or lost"
sql = "SELECT SUM(bal) FROM acc"
expect = 2000
"#,
            target = server.target()
        ),
    )
    .unwrap();
    let m = measured_run(dir.path(), &suite, Duration::from_secs(120));
    let rows = results(&dir.path().join("results"));
    server.drop();
    assert_eq!(m.code, Some(0), "{}\n{}", m.stdout, m.stderr);
    let run = &rows[0];
    // The lock waits did time out, and were re-run: the case the check is about happened.
    assert!(run["error_codes"].contains("1205:"), "{run:?}");
    assert!(run["errors"].parse::<u64>().unwrap() > 0, "{run:?}");
}

/// An ignored error that recurs on every re-run (a duplicate key) fails the step after
/// `max_retries` re-runs, instead of spinning until the forced shutdown; the errors are
/// counted by code.
#[test]
fn an_ignored_error_that_always_recurs_fails_after_max_retries() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = Server::fresh("pgsql", "sbs_stop_dup", dir.path()) else {
        return;
    };
    let suite = dir.path().join("dup.toml");
    std::fs::write(
        &suite,
        format!(
            r#"[suite]
name = "dup"

{target}ignore_errors = ["23505"]

[defaults]
workload = "dup"
time = 60
threads = 1

[workloads.dup]
schema = ["CREATE TABLE d (id INTEGER NOT NULL PRIMARY KEY)"]
cleanup = ["DROP TABLE IF EXISTS d"]

[[workloads.dup.load]]
table = "d"
rows = 1
columns = [{{ name = "id", gen = "row" }}]

[workloads.dup.transactions.insert]
steps = [{{ sql = "INSERT INTO d VALUES (1)" }}]
"#,
            target = server.target()
        ),
    )
    .unwrap();
    let m = measured_run(dir.path(), &suite, Duration::from_secs(120));
    let rows = results(&dir.path().join("results"));
    server.drop();
    assert_eq!(m.code, Some(1), "{}\n{}", m.stdout, m.stderr);
    assert!(m.elapsed < Duration::from_secs(30), "{:?}", m.elapsed);
    let run = &rows[0];
    assert_eq!(run["status"], "failed", "{run:?}");
    assert!(
        run["error"].contains("times in a row in") && run["error"].contains("max_retries = 1000"),
        "{run:?}"
    );
}
