//! #32: how the wire clients drive their sockets (`SBSUITE_WIRE_IO`). Over io_uring the server
//! receives what the blocking sockets send — the same statements, counted by PostgreSQL itself
//! — and MariaDB runs the same; an unknown mode is an error that names the variable and the
//! fix. (The stop path over io_uring: `stop::a_stopped_custom_step_over_io_uring_…`.)

use std::time::{Duration, Instant};

use crate::common;
use common::db::{pg_client, rt};
use common::sbsuite;
use common::suite_db::Db;

/// `sbsuite sysbench oltp_read_write CMD` on `db` of `driver` with `SBSUITE_WIRE_IO=io`
/// (`None`: unset): exit code, stdout, stderr.
fn sysbench(driver: &str, db: &str, io: Option<&str>, cmd: &[&str]) -> (i32, String, String) {
    let conn = match driver {
        "mysql" => vec![
            "--mysql-host=127.0.0.1".to_string(),
            "--mysql-user=root".into(),
            format!("--mysql-db={db}"),
        ],
        _ => vec![
            "--db-driver=pgsql".to_string(),
            "--pgsql-host=127.0.0.1".into(),
            "--pgsql-user=postgres".into(),
            format!("--pgsql-db={db}"),
        ],
    };
    let mut c = sbsuite();
    c.args([
        "sysbench",
        "oltp_read_write",
        "--tables=1",
        "--table-size=1000",
    ])
    .args(conn)
    .args(cmd)
    .env_remove("SBSUITE_WIRE_IO");
    if let Some(io) = io {
        c.env("SBSUITE_WIRE_IO", io);
    }
    let out = c.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// sbtest1's counters in `db`: inserted, updated, deleted rows, index and sequential scans,
/// rows fetched by index.
fn sbtest1(db: &str) -> [i64; 6] {
    rt().block_on(async {
        let c = pg_client(db).await.expect("connect");
        c.batch_execute("SELECT pg_stat_clear_snapshot()")
            .await
            .unwrap();
        let r = c
            .query_one(
                "SELECT n_tup_ins, n_tup_upd, n_tup_del, COALESCE(idx_scan, 0), seq_scan, \
                 COALESCE(idx_tup_fetch, 0) FROM pg_stat_user_tables WHERE relname = 'sbtest1'",
                &[],
            )
            .await
            .unwrap();
        [0, 1, 2, 3, 4, 5].map(|i| r.get::<_, i64>(i))
    })
}

/// The counters once `updated` rows have been reported (a backend reports as it exits, a
/// moment after its client has gone).
fn settled(db: &str, updated: i64) -> [i64; 6] {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let s = sbtest1(db);
        if s[1] >= updated {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "sbtest1 of {db} shows {} updates, not {updated}, after 20 s: {s:?}",
            s[1]
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// One thread and one seed make the statements of two runs the same; PostgreSQL counts the
/// same rows inserted, updated and deleted and the same scans for the blocking sockets and for
/// io_uring, and the rows are what oltp_read_write's 200 events make.
#[test]
fn io_uring_sends_what_the_blocking_sockets_send_as_postgresql_counts_it() {
    let db = "sbs_wire_io_pg";
    if Db::Pg.fresh(db).is_none() {
        return;
    }
    let (code, out, err) = sysbench("pgsql", db, None, &["prepare"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let run = [
        "--threads=1",
        "--events=200",
        "--time=0",
        "--rand-seed=7",
        "run",
    ];
    let base = sbtest1(db);
    let (code, blocking_out, err) = sysbench("pgsql", db, Some("blocking"), &run);
    assert_eq!(code, 0, "{blocking_out}\n{err}");
    let after_blocking = settled(db, base[1] + 400);
    let (code, uring_out, err) = sysbench("pgsql", db, Some("uring"), &run);
    assert_eq!(code, 0, "{uring_out}\n{err}");
    let after_uring = settled(db, after_blocking[1] + 400);
    Db::Pg.drop(db);

    let blocking: Vec<i64> = (0..6).map(|i| after_blocking[i] - base[i]).collect();
    let uring: Vec<i64> = (0..6).map(|i| after_uring[i] - after_blocking[i]).collect();
    assert_eq!(
        blocking, uring,
        "inserted, updated, deleted, index scans, sequential scans, fetched"
    );
    // Per event: two updates, one delete, one insert.
    assert_eq!(&uring[..3], &[200, 400, 200], "{uring:?}");
    for out in [&blocking_out, &uring_out] {
        assert!(
            out.contains("transactions:                        200 "),
            "{out}"
        );
    }
}

#[test]
fn io_uring_runs_oltp_on_mariadb() {
    let db = "sbs_wire_io_my";
    if Db::My.fresh(db).is_none() {
        return;
    }
    let (code, out, err) = sysbench("mysql", db, Some("uring"), &["prepare"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let (code, out, err) = sysbench(
        "mysql",
        db,
        Some("uring"),
        &["--threads=4", "--events=400", "--time=0", "run"],
    );
    Db::My.drop(db);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("transactions:                        400 "),
        "{out}"
    );
    // 18 statements an event, more where a deadlock was ignored and the event retried.
    let queries: u64 = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("queries:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("a queries line");
    assert!(queries >= 7200, "{out}");
    assert!(
        out.contains("reconnects:                          0 "),
        "{out}"
    );
}

#[test]
fn an_unknown_wire_io_mode_is_an_error_naming_the_variable() {
    let (code, out, err) = sysbench("mysql", "test", Some("epoll"), &["run", "--time=1"]);
    assert_ne!(code, 0, "{out}\n{err}");
    let text = format!("{out}\n{err}");
    assert!(
        text.contains(
            "SBSUITE_WIRE_IO=epoll is not a wire I/O mode: use blocking (the default) or uring"
        ),
        "{text}"
    );
}
