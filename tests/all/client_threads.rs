//! #32: `client_threads` — the workers of a step's connections run as coroutines on a few
//! carrier threads. What the servers see does not change: PostgreSQL counts the same index and
//! sequential scans for the same events with and without it (over TLS too), and both servers
//! hold one session per worker while the process runs only the carriers; what cannot share a
//! thread is refused with the reason. (A stopped step with it leaves nothing behind:
//! `stop::a_stopped_custom_step_on_client_threads_…`.)

use std::io::Read;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::db::{pg_client, rt};
use common::sbsuite;
use common::suite_db::Db;

/// The connection options of `sbsuite sysbench` for `db` on `driver`.
fn conn(driver: &str, db: &str) -> Vec<String> {
    match driver {
        "mysql" => vec![
            "--mysql-host=127.0.0.1".into(),
            "--mysql-user=root".into(),
            format!("--mysql-db={db}"),
        ],
        _ => vec![
            "--db-driver=pgsql".into(),
            "--pgsql-host=127.0.0.1".into(),
            "--pgsql-user=postgres".into(),
            format!("--pgsql-db={db}"),
        ],
    }
}

/// `sbsuite sysbench WORKLOAD` on one 1,000-row table of `db` with `args`: exit code and
/// stdout + stderr.
fn sysbench(driver: &str, db: &str, workload: &str, args: &[&str]) -> (i32, String) {
    let out = sbsuite()
        .args(["sysbench", workload, "--tables=1", "--table-size=1000"])
        .args(conn(driver, db))
        .args(args)
        .env_remove("SBSUITE_WIRE_IO")
        .env("PGSSLMODE", "disable")
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), text(&out))
}

/// A finished process's stdout and stderr, one after the other.
fn text(out: &std::process::Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `sbsuite run SUITE` into `results`, in the suite's directory (where a SQLite suite's
/// `sbtest.db` goes).
fn run_suite(suite: &std::path::Path, results: &std::path::Path) -> std::process::Output {
    sbsuite()
        .current_dir(suite.parent().unwrap())
        .arg("run")
        .arg(suite)
        .args(["--progress", "plain", "--results-dir"])
        .arg(results)
        .output()
        .unwrap()
}

/// sbtest1's index scans and sequential scans in `db`, as PostgreSQL counts them.
fn scans(db: &str) -> [i64; 2] {
    rt().block_on(async {
        let c = pg_client(db).await.expect("connect");
        let r = c
            .query_one(
                "SELECT COALESCE(idx_scan, 0), seq_scan FROM pg_stat_user_tables \
                 WHERE relname = 'sbtest1'",
                &[],
            )
            .await
            .unwrap();
        [r.get::<_, i64>(0), r.get::<_, i64>(1)]
    })
}

/// The scans once at least `idx` index scans are counted (a backend reports as it exits, a
/// moment after its client has gone), and a moment more for the sequential ones.
fn settled(db: &str, idx: i64) -> [i64; 2] {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let s = scans(db);
        if s[0] >= idx {
            std::thread::sleep(Duration::from_millis(700));
            return scans(db);
        }
        assert!(
            Instant::now() < deadline,
            "{db}: {} index scans, not {idx}, after 20 s",
            s[0]
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The `transactions:` count of a sysbench report.
fn transactions(out: &str) -> u64 {
    out.lines()
        .find_map(|l| l.trim().strip_prefix("transactions:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no transactions line:\n{out}"))
}

/// 400 `oltp_read_only` events of 8 threads make PostgreSQL count the same index and
/// sequential scans on one thread per connection, on 2 carriers, and over TLS on 3 carriers.
#[test]
fn client_threads_send_what_one_thread_per_connection_sends_as_postgresql_counts_it() {
    let db = "sbs_client_threads_pg";
    if Db::Pg.fresh(db).is_none() {
        return;
    }
    let (code, out) = sysbench("pgsql", db, "oltp_read_only", &["prepare"]);
    assert_eq!(code, 0, "{out}");
    let run = |extra: &[&str], events: &str| {
        let mut args = vec!["--threads=8", events, "--time=0", "--rand-seed=7"];
        args.extend_from_slice(extra);
        args.push("run");
        sysbench("pgsql", db, "oltp_read_only", &args)
    };
    let base = scans(db);
    let (code, threads_out) = run(&[], "--events=400");
    assert_eq!(code, 0, "{threads_out}");
    // 10 point selects and 4 ranges per event: at least 10 index scans each.
    let after_threads = settled(db, base[0] + 4000);
    let (code, mux_out) = run(&["--client-threads=2"], "--events=400");
    assert_eq!(code, 0, "{mux_out}");
    let per_run = after_threads[0] - base[0];
    let after_mux = settled(db, after_threads[0] + per_run);
    let (code, tls_out) = run(
        &["--client-threads=3", "--pgsql-sslmode=require"],
        "--events=400",
    );
    assert_eq!(code, 0, "{tls_out}");
    let after_tls = settled(db, after_mux[0] + per_run);
    Db::Pg.drop(db);

    let threads = [0, 1].map(|i| after_threads[i] - base[i]);
    let mux = [0, 1].map(|i| after_mux[i] - after_threads[i]);
    let tls = [0, 1].map(|i| after_tls[i] - after_mux[i]);
    assert_eq!(threads, mux, "index scans, sequential scans");
    assert_eq!(tls, mux, "over TLS: index scans, sequential scans");
    assert_eq!(transactions(&threads_out), 400, "{threads_out}");
    assert_eq!(transactions(&mux_out), 400, "{mux_out}");
    assert_eq!(transactions(&tls_out), 400, "{tls_out}");
    assert!(
        mux_out.contains("Client threads: 2 (the connections' workers share them as coroutines)"),
        "{mux_out}"
    );
    assert!(!threads_out.contains("Client threads:"), "{threads_out}");
}

/// The process's threads whose name starts with `prefix`.
fn threads_named(pid: u32, prefix: &str) -> usize {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|n| n.starts_with(prefix))
        })
        .count()
}

/// Reads `child`'s stdout until it has printed `what`.
fn read_until(child: &mut Child, seen: &mut String, what: &str) {
    let out = child.stdout.as_mut().unwrap();
    let mut buf = [0u8; 4096];
    while !seen.contains(what) {
        let n = out.read(&mut buf).unwrap();
        assert!(n > 0, "the run ended before {what:?}:\n{seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
}

/// The sessions the server holds on `db` (other than the asking one).
fn sessions(driver: &str, db: &str) -> u64 {
    let out = match driver {
        "mysql" => std::process::Command::new("mysql")
            .args(["-h", "127.0.0.1", "-P", "3306", "-u", "root", "-N", "-e"])
            .arg(format!(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = '{db}' \
                 AND ID <> CONNECTION_ID()"
            ))
            .output()
            .unwrap(),
        _ => std::process::Command::new("psql")
            .args(["-h", "127.0.0.1", "-U", "postgres", "-d", db, "-tAc"])
            .arg(format!(
                "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = '{db}' \
                 AND pid <> pg_backend_pid()"
            ))
            .output()
            .unwrap(),
    };
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{driver}: {out:?}"))
}

/// A timed `oltp_read_write` run of 8 connections on 3 carriers: the server holds 8
/// sessions, the process runs 3 carrier threads and no worker thread, and the run ends with
/// transactions, no reconnect, and the table's rows where they were (every event deletes one
/// row and inserts it again).
fn eight_sessions_on_three_threads(driver: &str, db: &str, fresh: Option<String>) {
    if fresh.is_none() {
        return;
    }
    let (code, out) = sysbench(driver, db, "oltp_read_write", &["prepare"]);
    assert_eq!(code, 0, "{out}");
    let mut child = common::sbsuite_process()
        .args([
            "sysbench",
            "oltp_read_write",
            "--tables=1",
            "--table-size=1000",
        ])
        .args(conn(driver, db))
        .args(["--threads=8", "--client-threads=3", "--time=4", "run"])
        .env_remove("SBSUITE_WIRE_IO")
        .env("PGSSLMODE", "disable")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut seen = String::new();
    read_until(&mut child, &mut seen, "Threads started!");
    std::thread::sleep(Duration::from_millis(1000));
    let held = sessions(driver, db);
    let carriers = threads_named(pid, "sbsuite-carrier");
    let workers = threads_named(pid, "sbsuite-worker");
    let out = child.wait_with_output().unwrap();
    seen.push_str(&String::from_utf8_lossy(&out.stdout));
    let rows = match driver {
        "mysql" => std::process::Command::new("mysql")
            .args(["-h", "127.0.0.1", "-u", "root", "-N", db, "-e"])
            .arg("SELECT COUNT(*) FROM sbtest1")
            .output()
            .unwrap(),
        _ => std::process::Command::new("psql")
            .args(["-h", "127.0.0.1", "-U", "postgres", "-d", db, "-tAc"])
            .arg("SELECT COUNT(*) FROM sbtest1")
            .output()
            .unwrap(),
    };
    let rows = String::from_utf8_lossy(&rows.stdout).trim().to_string();
    match driver {
        "mysql" => Db::My.drop(db),
        _ => Db::Pg.drop(db),
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{seen}\n{stderr}");
    assert_eq!(held, 8, "{driver}: sessions during the run");
    assert_eq!(
        (carriers, workers),
        (3, 0),
        "{driver}: carrier and worker threads"
    );
    assert!(transactions(&seen) > 0, "{seen}");
    assert!(
        seen.contains("reconnects:                          0 "),
        "{seen}"
    );
    assert_eq!(rows, "1000", "{driver}: sbtest1's rows after the run");
}

#[test]
fn eight_sessions_on_three_threads_on_mariadb() {
    let db = "sbs_client_threads_my";
    eight_sessions_on_three_threads("mysql", db, Db::My.fresh(db));
}

#[test]
fn eight_sessions_on_three_threads_on_postgresql() {
    let db = "sbs_client_threads_pg_rw";
    eight_sessions_on_three_threads("pgsql", db, Db::Pg.fresh(db));
}

/// What cannot share a thread is refused before any event, with the reason and the fix.
#[test]
fn what_cannot_share_a_thread_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 2] = [
        (
            &[
                "cpu",
                "--threads=4",
                "--client-threads=2",
                "--time=1",
                "run",
            ],
            "option `client_threads`: its workers wait in ways that would block the thread they share",
        ),
        (
            &[
                "oltp_point_select",
                "--db-driver=mysql",
                "--mysql-host=127.0.0.1",
                "--mysql-user=root",
                "--mysql-db=test",
                "--threads=4",
                "--client-threads=2",
                "--rate=100",
                "--max-threads=8",
                "--time=1",
                "run",
            ],
            "option `client_threads` does not go with",
        ),
    ];
    for (args, says) in cases {
        let out = sbsuite().arg("sysbench").args(args).output().unwrap();
        let text = text(&out);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {text}");
        assert!(text.contains(says), "{args:?}: {text}");
        assert!(!text.contains("panicked"), "{args:?}: {text}");
    }
    // A suite without `[target]` runs OLTP on SQLite.
    let suite = dir.path().join("lite.toml");
    std::fs::write(
        &suite,
        "[suite]\nname = \"lite\"\n\n[defaults]\nworkload = \"oltp_point_select\"\n\
         table_size = 100\nthreads = 4\nclient_threads = 2\ntime = 1\n",
    )
    .unwrap();
    let out = run_suite(&suite, &dir.path().join("results"));
    let text = text(&out);
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("SQLite runs inside its workers' threads"),
        "{text}"
    );
    let rows = common::results(&dir.path().join("results"));
    assert!(
        rows.iter().any(|r| r["status"] == "failed"
            && r["error"].contains("option `client_threads`: SQLite runs inside")),
        "{rows:?}"
    );
}

/// A `rate` on carriers (open loop): 400 arrivals a second of a 10 ms server-side sleep need
/// four sleeps at once, which two carriers can only serve if the coroutines of each overlap
/// theirs; an arrival finds an idle worker at once (it waits at its carrier's bell, not on a
/// lock), and the response time is the service time.
#[test]
fn a_rate_is_served_by_coroutines_waiting_at_their_carriers_bell() {
    common::server_lock::share();
    let db = "sbs_client_threads_rate";
    if Db::Pg.fresh(db).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("nap.toml");
    std::fs::write(
        &suite,
        format!(
            r#"[suite]
name = "nap"
server_cost = false

[target]
driver = "pgsql"
hosts = ["127.0.0.1:5432"]
user = "postgres"
database = "{db}"
ssl = "disabled"

[defaults]
workload = "nap"
threads = 8
client_threads = 2
rate = 400
time = 5
rand_seed = 42

[workloads.nap]
summary = "a 10 ms server-side sleep per transaction"

[workloads.nap.transactions.nap]
steps = [{{ sql = "SELECT pg_sleep(0.01)" }}]
"#
        ),
    )
    .unwrap();
    let out = run_suite(&suite, &dir.path().join("results"));
    Db::Pg.drop(db);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", text(&out));
    let rows = common::results(&dir.path().join("results"));
    let r = &rows[0];
    let num = |c: &str| -> f64 {
        r[c].parse()
            .unwrap_or_else(|_| panic!("`{c}` is {:?}: {r:?}", r[c]))
    };
    assert!((380.0..=420.0).contains(&num("eps")), "{r:?}");
    assert_eq!(num("dropped"), 0.0, "{r:?}");
    assert!(num("service_p50") >= 10.0, "{r:?}");
    assert!(num("lag_p50") < 5.0, "{r:?}");
    assert!((num("lat_p50") - num("service_p50")).abs() < 5.0, "{r:?}");
    assert!(stdout.contains("Client threads: 2"), "{stdout}");
}

/// Four workers on one carrier whose statements all pass `query_timeout` at once: each one's
/// statement is killed on the server, the step fails with the timeout, and no session of the
/// step's database is left on MariaDB. `BENCHMARK` runs on after its client has gone (unlike
/// `SLEEP`, which notices): only a kill ends it. When "this is a kill's own connection" was a
/// thread-local flag, a sibling coroutine whose statement timed out while another's kill
/// waited for its answer took the flag for its own and sent no kill: this test left two of
/// the four running. The flag is the connection's now (`Limits::kill_on_timeout`).
#[test]
fn statements_past_query_timeout_on_one_carrier_are_all_killed() {
    let db = "sbs_client_threads_kill";
    if Db::My.fresh(db).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("hang.toml");
    std::fs::write(
        &suite,
        format!(
            r#"[suite]
name = "hang"
server_cost = false

[target]
driver = "mysql"
hosts = ["127.0.0.1:3306"]
user = "root"
database = "{db}"
query_timeout = 2

[defaults]
workload = "hang"
threads = 4
client_threads = 1
time = 5

[workloads.hang.transactions.hang]
steps = [{{ sql = "SELECT BENCHMARK(100000000000, MD5(RAND()))" }}]
"#
        ),
    )
    .unwrap();
    let started = Instant::now();
    let out = run_suite(&suite, &dir.path().join("results"));
    let took = started.elapsed();
    let settled = Instant::now();
    let mut left = sessions("mysql", db);
    while left > 0 && settled.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(100));
        left = sessions("mysql", db);
    }
    if left > 0 {
        // Not left burning the shared server's CPU when the test fails.
        let ids = std::process::Command::new("mysql")
            .args(["-h", "127.0.0.1", "-u", "root", "-N", "-e"])
            .arg(format!(
                "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = '{db}'"
            ))
            .output()
            .unwrap();
        for id in String::from_utf8_lossy(&ids.stdout).split_whitespace() {
            let _ = std::process::Command::new("mysql")
                .args(["-h", "127.0.0.1", "-u", "root", "-e"])
                .arg(format!("KILL {id}"))
                .output();
        }
    }
    Db::My.drop(db);
    let text = text(&out);
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("query_timeout = 2 s"), "{text}");
    assert!(took < Duration::from_secs(25), "{took:?}\n{text}");
    assert_eq!(left, 0, "sessions still on the server:\n{text}");
}
