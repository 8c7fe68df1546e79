//! What a run step cost the server (#29): a durability study on MariaDB
//! (`innodb_flush_log_at_trx_commit` 1 vs 2) and on PostgreSQL (`synchronous_commit` on vs
//! off) shows per variant fsyncs (WAL syncs) per transaction an order of magnitude apart, and
//! sbsuite's counters agree with the server's own, read independently by the test around each
//! run step (hooks on connections of their own, so the test's readings bracket sbsuite's).

use std::collections::HashMap;
use std::path::Path;

use crate::common;

use common::db::{RestoreMy, admin_my, admin_pg, my_global};
use common::{csv_rows, results, run_dir, sbsuite};

/// The hooks that read `counter` with `read` (a shell command printing its value) before and
/// after each run step, into `log` as `before|after VARIANT VALUE` lines.
fn hooks(read: &str, log: &Path) -> String {
    let line = |when: &str| {
        format!(
            "[ {{{{ kind }}}} = run ] && echo {when} {{{{ variant }}}} $({read}) >> {} || true",
            log.display()
        )
    };
    // TOML literal strings: the commands keep their quotes as written.
    format!(
        "[hooks]\nbefore_step = '''{}'''\nafter_step = '''{}'''\n",
        line("before"),
        line("after")
    )
}

/// The test's own readings: per variant, (before, after).
fn readings(log: &Path) -> HashMap<String, (f64, f64)> {
    let text = std::fs::read_to_string(log).unwrap();
    let mut out: HashMap<String, (f64, f64)> = HashMap::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(f.len(), 3, "hook line {l:?} of {text}");
        let v: f64 = f[2].parse().unwrap();
        let e = out.entry(f[1].to_string()).or_default();
        match f[0] {
            "before" => e.0 = v,
            _ => e.1 = v,
        }
    }
    out
}

/// Runs the suite; checks per variant that sbsuite's reading of `counter` lies within the
/// test's own and that their per-transaction values agree; returns sbsuite's
/// `server_fsyncs_per_txn` per variant.
fn study(suite: &str, dir: &Path, log: &Path, counter: &str) -> HashMap<String, f64> {
    let path = dir.join("suite.toml");
    std::fs::write(&path, suite).unwrap();
    let out = sbsuite()
        .arg("run")
        .arg(&path)
        .arg("--results-dir")
        .arg(dir.join("results"))
        .args(["--progress", "off"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("warning: server counters"), "{stderr}");
    let rows = results(&dir.join("results"));
    let counters = csv_rows(&dir.join("results"), "server_counters.csv");
    let own = readings(log);
    assert!(
        !counters
            .iter()
            .any(|c| c["counter"] == "client.cost_tick_cpu_ms"),
        "no ticks without report_interval"
    );
    let mut fsyncs = HashMap::new();
    for r in &rows {
        let variant = &r["variant"];
        assert_eq!(r["status"], "ok", "{r:?}");
        let txns: f64 = r["events"].parse().unwrap();
        let per_txn: f64 = r["server_fsyncs_per_txn"].parse().unwrap();
        let c = counters
            .iter()
            .find(|c| c["step"] == r["step"] && c["counter"] == counter)
            .unwrap_or_else(|| panic!("{counter} of step {}: {counters:?}", r["step"]));
        let (before, after): (f64, f64) =
            (c["before"].parse().unwrap(), c["after"].parse().unwrap());
        let (own_before, own_after) = own[variant.as_str()];
        assert!(
            own_before <= before && before <= after && after <= own_after,
            "{variant}: sbsuite's {before}..{after} within the test's {own_before}..{own_after}"
        );
        assert_eq!(c["delta"].parse::<f64>().unwrap(), after - before);
        assert!(
            (per_txn - (after - before) / txns).abs() < 1e-5,
            "{r:?} {c:?}"
        );
        // The test's window holds a few more idle moments (the hooks): a few syncs at most.
        let own_per_txn = (own_after - own_before) / txns;
        assert!(
            (own_per_txn - per_txn).abs() <= 0.02 + 0.05 * per_txn,
            "{variant}: {per_txn} by sbsuite, {own_per_txn} by the server's own counters"
        );
        // The server runs here: its CPU, and ours, per transaction.
        assert!(
            r["server_cpu_ms_per_txn"].parse::<f64>().unwrap() > 0.0,
            "{r:?}"
        );
        assert!(
            r["client_cpu_us_per_txn"].parse::<f64>().unwrap() > 0.0,
            "{r:?}"
        );
        assert!(
            r["server_log_bytes_per_txn"].parse::<f64>().unwrap() > 0.0,
            "{r:?}"
        );
        fsyncs.insert(variant.clone(), per_txn);
    }
    assert_eq!(fsyncs.len(), 2, "{rows:?}");
    // `compare` shows the cost by default, with its verdict.
    let run = run_dir(&dir.join("results"), "cost");
    // The process CPU came from this host (#29): host.json says so.
    let host: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("host.json")).unwrap()).unwrap();
    assert_eq!(host["server_process"]["source"], "local", "{host}");
    let cmp = sbsuite()
        .arg("compare")
        .arg(&run)
        .args(["--by", "variant"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&cmp.stdout);
    assert!(text.contains("server_fsyncs_per_txn"), "{text}");
    fsyncs
}

fn suite(target: &str, settings: [&str; 2], hooks: &str) -> String {
    format!(
        "[suite]\nname = \"cost\"\n\n{target}\n[defaults]\nworkload = \"oltp_update_index\"\n\
         table_size = 1000\ntime = 3\nthreads = 2\nreport_interval = 0\n\n{hooks}\n\
         [[variant]]\nname = \"durable\"\nset_global = {{ {} }}\n\n\
         [[variant]]\nname = \"relaxed\"\nset_global = {{ {} }}\n",
        settings[0], settings[1]
    )
}

#[test]
fn issue_29_mariadb_durability_study_shows_fsyncs_per_transaction() {
    let _alone = common::server_lock::server_lock();
    let db = "sbsuite_t_cost";
    if admin_my(&[
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ])
    .is_none()
    {
        common::skip("no MySQL/MariaDB server accepts root@127.0.0.1:3306 (.ci/run starts one)");
        return;
    }
    let setting = "innodb_flush_log_at_trx_commit";
    let restore = RestoreMy::save(setting);
    let original = restore.original().to_string();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("own.log");
    let read = r#"mysql -h 127.0.0.1 -P 3306 -u root -N -e "SHOW GLOBAL STATUS LIKE 'Innodb_data_fsyncs'" | cut -f2"#;
    let text = suite(
        &format!(
            "[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:3306\"]\nuser = \"root\"\n\
             database = \"{db}\"\n"
        ),
        [&format!("{setting} = 1"), &format!("{setting} = 2")],
        &hooks(read, &log),
    );
    let fsyncs = study(&text, dir.path(), &log, "Innodb_data_fsyncs");
    let restored = my_global(setting);
    admin_my(&[format!("DROP DATABASE IF EXISTS {db}")]);
    assert_eq!(restored, original, "the runner restored {setting}");
    assert!(fsyncs["durable"] >= 0.5, "{fsyncs:?}");
    assert!(fsyncs["relaxed"] <= 0.1, "{fsyncs:?}");
    assert!(fsyncs["durable"] >= 10.0 * fsyncs["relaxed"], "{fsyncs:?}");
}

/// The value of `synchronous_commit` written by ALTER SYSTEM, if any.
fn pg(sql: &str) -> String {
    let out = std::process::Command::new("psql")
        .args([
            "--host=127.0.0.1",
            "--port=5432",
            "--username=postgres",
            "--no-psqlrc",
            "-qAt",
            "-d",
            "postgres",
            "-c",
            sql,
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Puts `synchronous_commit` in postgresql.auto.conf back as it was when dropped, also when
/// the test panics.
struct RestorePg(Option<String>);

impl Drop for RestorePg {
    fn drop(&mut self) {
        let sql = match &self.0 {
            Some(v) => format!("ALTER SYSTEM SET synchronous_commit = '{v}'"),
            None => "ALTER SYSTEM RESET synchronous_commit".to_string(),
        };
        admin_pg(&[sql, "SELECT pg_reload_conf()".to_string()]);
    }
}

const AUTO_CONF: &str = "SELECT setting FROM pg_file_settings WHERE sourcefile LIKE \
                         '%postgresql.auto.conf' AND name = 'synchronous_commit' ORDER BY \
                         seqno DESC LIMIT 1";

#[test]
fn issue_29_postgresql_durability_study_shows_wal_syncs_per_transaction() {
    let _alone = common::server_lock::server_lock();
    let db = "sbsuite_t_cost";
    if admin_pg(&[
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ])
    .is_none()
    {
        common::skip("no PostgreSQL server accepts postgres@127.0.0.1:5432 (.ci/run starts one)");
        return;
    }
    let auto = pg(AUTO_CONF);
    let effective = pg("SHOW synchronous_commit");
    let _restore = RestorePg(Some(auto.clone()).filter(|a| !a.is_empty()));
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("own.log");
    let read = "psql --host=127.0.0.1 --port=5432 --username=postgres --no-psqlrc -qAt -d \
                postgres -c 'SELECT wal_sync FROM pg_stat_wal'";
    let text = suite(
        &format!(
            "[target]\ndriver = \"pgsql\"\nhosts = [\"127.0.0.1:5432\"]\nuser = \"postgres\"\n\
             database = \"{db}\"\n"
        ),
        [
            "synchronous_commit = \"on\"",
            "synchronous_commit = \"off\"",
        ],
        &hooks(read, &log),
    );
    let syncs = study(&text, dir.path(), &log, "pg_stat_wal.wal_sync");
    let (auto_after, effective_after) = (pg(AUTO_CONF), pg("SHOW synchronous_commit"));
    admin_pg(&[format!("DROP DATABASE IF EXISTS {db}")]);
    assert_eq!(
        (auto_after, effective_after),
        (auto, effective),
        "the runner restored synchronous_commit"
    );
    assert!(syncs["durable"] >= 0.5, "{syncs:?}");
    assert!(syncs["relaxed"] <= 0.1, "{syncs:?}");
    assert!(syncs["durable"] >= 10.0 * syncs["relaxed"], "{syncs:?}");
}

/// A suite's extra counters are checked before anything runs, and read when they exist.
#[test]
fn issue_29_server_counters_are_validated_by_database() {
    let dir = tempfile::tempdir().unwrap();
    for (target, name, expect) in [
        (
            "[target]\ndriver = \"pgsql\"\nhosts = [\"127.0.0.1:5432\"]\nuser = \"postgres\"\ndatabase = \"x\"\n",
            "wal_sync",
            "is not VIEW.COLUMN of a view sbsuite reads",
        ),
        (
            "[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:3306\"]\nuser = \"root\"\ndatabase = \"x\"\n",
            "Innodb log",
            "is not a status variable name",
        ),
        (
            "[target]\ndriver = \"sqlite\"\n",
            "x",
            "SQLite has no server counters",
        ),
    ] {
        let path = dir.path().join("s.toml");
        std::fs::write(
            &path,
            format!(
                "[suite]\nname = \"v\"\nserver_counters = [\"{name}\"]\n\n{target}\n[defaults]\nworkload = \"oltp_point_select\"\n"
            ),
        )
        .unwrap();
        let out = sbsuite().arg("validate").arg(&path).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(expect), "{stderr}");
        assert!(stderr.contains("server_counters"), "{stderr}");
    }
}

/// The server columns of intervals.csv (#29), all filled at each tick.
const TICK_COLUMNS: [&str; 7] = [
    "server_fsyncs_ps",
    "server_log_bytes_ps",
    "server_cpu_pct",
    "server_fsyncs_per_txn",
    "server_log_bytes_per_txn",
    "server_cpu_ms_per_txn",
    "client_cpu_us_per_txn",
];

/// The rows of a CSV file, column → cell.
type Rows = Vec<HashMap<String, String>>;

/// Runs `suite` (written to `dir`) with `--events` to a file; returns its stderr, the rows
/// of its intervals.csv, of its server_counters.csv (none without the file) and its interval
/// events.
fn run_ticks(suite: &str, dir: &Path) -> (String, Rows, Rows, Vec<serde_json::Value>) {
    let path = dir.join("suite.toml");
    std::fs::write(&path, suite).unwrap();
    let events = dir.join("events.jsonl");
    let out = sbsuite()
        .arg("run")
        .arg(&path)
        .arg("--results-dir")
        .arg(dir.join("results"))
        .args(["--progress", "off", "--events"])
        .arg(format!("jsonl:{}", events.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stderr}");
    // The run's own files (a multi-client step's shards/ have theirs).
    let run = run_dir(&dir.join("results"), "ticks");
    let rows = |name: &str| -> Rows {
        let Ok(mut r) = csv::Reader::from_path(run.join(name)) else {
            return Rows::new();
        };
        let header = r.headers().unwrap().clone();
        r.records()
            .map(|rec| {
                let rec = rec.unwrap();
                header
                    .iter()
                    .zip(rec.iter())
                    .map(|(h, c)| (h.to_string(), c.to_string()))
                    .collect()
            })
            .collect()
    };
    let (intervals, counters) = (rows("intervals.csv"), rows("server_counters.csv"));
    let events = std::fs::read_to_string(events)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["event"] == "interval")
        .collect();
    (stderr, intervals, counters, events)
}

/// With `report_interval = 1`, `time = 4`: each interval of the run step has every server
/// column (`--events` too); the fsyncs over the intervals add up to no more than the step's
/// delta in server_counters.csv, itself within the test's own readings of `counter` around
/// the step, and to most of it; the server's CPU is there. Then `server_cost = false`: the
/// same columns empty, no server_counters.csv.
fn ticks_study(target: &str, durable: &str, read: &str, counter: &str) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("own.log");
    let suite = format!(
        "[suite]\nname = \"ticks\"\n\n{target}\n[defaults]\nworkload = \"oltp_update_index\"\n\
         table_size = 1000\ntime = 4\nthreads = 2\nreport_interval = 1\n\n{}\n\
         [[variant]]\nname = \"durable\"\nset_global = {{ {durable} }}\n",
        hooks(read, &log)
    );
    let (stderr, intervals, counters, events) = run_ticks(&suite, dir.path());
    assert!(!stderr.contains("warning: server counters"), "{stderr}");
    assert!(
        intervals.len() >= 3,
        "report_interval = 1 over 4 s: {intervals:?}"
    );
    let num = |r: &HashMap<String, String>, c: &str| -> f64 {
        r[c].parse()
            .unwrap_or_else(|_| panic!("{c} of interval {} is a number: {r:?}", r["time"]))
    };
    let mut sum = 0.0;
    let mut prev_time = 0.0;
    for r in &intervals {
        for c in TICK_COLUMNS {
            assert!(num(r, c) >= 0.0, "{c}: {r:?}");
        }
        assert!(num(r, "server_cpu_pct") > 0.0, "the server works: {r:?}");
        assert!(num(r, "client_cpu_us_per_txn") > 0.0, "{r:?}");
        // The interval's fsyncs: its rate over its length.
        let time = num(r, "time");
        sum += num(r, "server_fsyncs_ps") * (time - prev_time);
        prev_time = time;
    }
    let c = counters
        .iter()
        .find(|c| c["counter"] == counter)
        .unwrap_or_else(|| panic!("{counter}: {counters:?}"));
    let (before, after): (f64, f64) = (c["before"].parse().unwrap(), c["after"].parse().unwrap());
    let (own_before, own_after) = readings(&log)["durable"];
    assert!(
        own_before <= before && after <= own_after,
        "sbsuite's {before}..{after} within the test's {own_before}..{own_after}"
    );
    let delta = after - before;
    // What the readings at the ticks cost, on its own and within all the readings'.
    let cpu = |name: &str| -> f64 {
        let c = counters.iter().find(|c| c["counter"] == name);
        c.unwrap_or_else(|| panic!("{name}: {counters:?}"))["delta"]
            .parse()
            .unwrap()
    };
    let (tick, read) = (
        cpu("client.cost_tick_cpu_ms"),
        cpu("client.cost_read_cpu_ms"),
    );
    assert!(tick > 0.0 && tick <= read, "{tick} of {read}");
    // Each interval's rate is over the time between its readings, its length here the
    // stamps': a few milliseconds apart at most.
    assert!(
        sum <= delta * 1.03 + 2.0,
        "{sum} fsyncs over the intervals, {delta} over the step"
    );
    assert!(
        sum >= delta * 0.5,
        "the intervals cover most of the step: {sum} of {delta}"
    );
    assert_eq!(events.len(), intervals.len(), "{events:?}");
    for e in &events {
        for c in ["server_fsyncs_ps", "server_cpu_pct"] {
            assert!(e["metrics"][c].is_number(), "{c} in {e}");
        }
    }

    // Without the cost, no server cells.
    let dir = tempfile::tempdir().unwrap();
    let suite = format!(
        "[suite]\nname = \"ticks\"\nserver_cost = false\n\n{target}\n[defaults]\n\
         workload = \"oltp_update_index\"\ntable_size = 1000\ntime = 2\nthreads = 2\n\
         report_interval = 1\n"
    );
    let (_, intervals, counters, events) = run_ticks(&suite, dir.path());
    assert!(!intervals.is_empty());
    assert!(counters.is_empty(), "{counters:?}");
    for r in &intervals {
        for c in TICK_COLUMNS {
            assert_eq!(r[c], "", "{c}: {r:?}");
        }
    }
    assert!(
        events
            .iter()
            .all(|e| e["metrics"].get("server_fsyncs_ps").is_none()),
        "{events:?}"
    );
}

#[test]
fn issue_29_mariadb_interval_ticks_read_the_server() {
    let _alone = common::server_lock::server_lock();
    let db = "sbsuite_t_cost_ticks";
    if admin_my(&[
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ])
    .is_none()
    {
        common::skip("no MySQL/MariaDB server accepts root@127.0.0.1:3306 (.ci/run starts one)");
        return;
    }
    let setting = "innodb_flush_log_at_trx_commit";
    let restore = RestoreMy::save(setting);
    let original = restore.original().to_string();
    let read = r#"mysql -h 127.0.0.1 -P 3306 -u root -N -e "SHOW GLOBAL STATUS LIKE 'Innodb_data_fsyncs'" | cut -f2"#;
    ticks_study(
        &format!(
            "[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:3306\"]\nuser = \"root\"\n\
             database = \"{db}\"\n"
        ),
        &format!("{setting} = 1"),
        read,
        "Innodb_data_fsyncs",
    );
    let restored = my_global(setting);
    admin_my(&[format!("DROP DATABASE IF EXISTS {db}")]);
    assert_eq!(restored, original, "the runner restored {setting}");
}

#[test]
fn issue_29_postgresql_interval_ticks_read_the_server() {
    let _alone = common::server_lock::server_lock();
    let db = "sbsuite_t_cost_ticks";
    if admin_pg(&[
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ])
    .is_none()
    {
        common::skip("no PostgreSQL server accepts postgres@127.0.0.1:5432 (.ci/run starts one)");
        return;
    }
    let auto = pg(AUTO_CONF);
    let _restore = RestorePg(Some(auto.clone()).filter(|a| !a.is_empty()));
    let read = "psql --host=127.0.0.1 --port=5432 --username=postgres --no-psqlrc -qAt -d \
                postgres -c 'SELECT wal_sync FROM pg_stat_wal'";
    ticks_study(
        &format!(
            "[target]\ndriver = \"pgsql\"\nhosts = [\"127.0.0.1:5432\"]\nuser = \"postgres\"\n\
             database = \"{db}\"\n"
        ),
        "synchronous_commit = \"on\"",
        read,
        "pg_stat_wal.wal_sync",
    );
    let auto_after = pg(AUTO_CONF);
    admin_pg(&[format!("DROP DATABASE IF EXISTS {db}")]);
    assert_eq!(auto_after, auto, "the runner restored synchronous_commit");
}

/// A multi-client step (#17) passes its merged ticks through the coordinator, which reads
/// the server once per tick; without a warmup its baseline is the last agent's start, so every
/// interval has the server's cells. The client's CPU is not one process's: empty.
#[test]
fn issue_29_the_coordinator_reads_the_server_at_each_merged_tick() {
    let _alone = common::server_lock::server_lock();
    let db = "sbsuite_t_cost_ticks_mc";
    if admin_my(&[
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ])
    .is_none()
    {
        common::skip("no MySQL/MariaDB server accepts root@127.0.0.1:3306 (.ci/run starts one)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let suite = format!(
        "[suite]\nname = \"ticks\"\n\n[clients]\nlist = [\"local:2\"]\ntimeout = 20\n\n\
         [target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:3306\"]\nuser = \"root\"\n\
         database = \"{db}\"\n\n[defaults]\nworkload = \"oltp_update_index\"\n\
         table_size = 1000\ntime = 3\nthreads = 2\nreport_interval = 1\n"
    );
    let (stderr, intervals, counters, _) = run_ticks(&suite, dir.path());
    admin_my(&[format!("DROP DATABASE IF EXISTS {db}")]);
    assert!(!stderr.contains("warning: server counters"), "{stderr}");
    assert!(intervals.len() >= 2, "{intervals:?}");
    for r in &intervals {
        for c in [
            "server_fsyncs_ps",
            "server_cpu_pct",
            "server_fsyncs_per_txn",
        ] {
            assert!(r[c].parse::<f64>().is_ok(), "{c}: {r:?}");
        }
        assert_eq!(r["client_cpu_us_per_txn"], "", "{r:?}");
    }
    assert!(
        counters
            .iter()
            .any(|c| c["counter"] == "client.cost_tick_cpu_ms"),
        "{counters:?}"
    );
}
