//! The shipped workload library (#31, `suites/workloads/`): pgbench's TPC-B, SmallBank, TATP
//! and YCSB run on SQLite, MariaDB and PostgreSQL with their own consistency checks passing and
//! their declared mix; TPC-B sends what pgbench sends, counted by PostgreSQL itself
//! (`pg_stat_user_tables`) for pgbench `-M prepared` and sbsuite side by side, at 8 and 32
//! clients. A transaction's `weight` over options (pgbench's `-b` as an option) runs only the
//! script asked for, and weights that are all 0 for some option values are refused before
//! work at their line.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use crate::common;

use common::db::{admin_pg, pg_client, rt};
use common::suite_db::{Db, run, txn_counts};
use common::{results, sbsuite};

const WORKLOADS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/suites/workloads");

/// transaction → times picked (`count`, the commits, plus `rollbacks`) of the
/// transactions.csv rows under `root`.
fn counts(root: &Path) -> HashMap<String, u64> {
    txn_counts(root)
        .into_iter()
        .map(|(t, (count, _, rollbacks))| (t, (count + rollbacks) as u64))
        .collect()
}

/// The shares of `counts` are those of `weights` within 5 points, over enough transactions.
fn assert_mix(what: &str, counts: &HashMap<String, u64>, weights: &[(&str, u64)]) {
    let total: u64 = counts.values().sum();
    let wsum: u64 = weights.iter().map(|w| w.1).sum();
    assert!(
        total >= 500,
        "{what}: only {total} transactions: {counts:?}"
    );
    for (name, w) in weights {
        let share = *counts.get(*name).unwrap_or(&0) as f64 / total as f64;
        let want = *w as f64 / wsum as f64;
        assert!(
            (share - want).abs() < 0.05,
            "{what}: {name} is {:.1} % of {total}, declared {:.1} %: {counts:?}",
            share * 100.0,
            want * 100.0
        );
    }
}

const TPCB_MIX: &[(&str, u64)] = &[("tpcb_like", 1), ("simple_update", 0), ("select_only", 0)];
const SMALLBANK_MIX: &[(&str, u64)] = &[
    ("amalgamate", 15),
    ("balance", 15),
    ("deposit_checking", 15),
    ("send_payment", 25),
    ("transact_savings", 15),
    ("write_check", 15),
];
const YCSB_E_MIX: &[(&str, u64)] = &[("scan", 95), ("insert", 5), ("read", 0), ("update", 0)];
const TATP_MIX: &[(&str, u64)] = &[
    ("get_subscriber_data", 35),
    ("get_new_destination", 10),
    ("get_access_data", 35),
    ("update_subscriber_data", 2),
    ("update_location", 14),
    ("insert_call_forwarding", 2),
    ("delete_call_forwarding", 2),
];

/// TPC-B (scale 1), SmallBank, TATP and YCSB's workload E, one after the other on `driver`: every step ok,
/// every check of each passes on the data the server holds after the run, and each one's mix
/// is the declared one.
fn library_on(server: Db) {
    let driver = format!("{server:?}").to_lowercase();
    let db = format!("sbs_library_{driver}");
    let dir = tempfile::tempdir().unwrap();
    let Some(target) = server.fresh_in(&db, dir.path()) else {
        return;
    };
    for (workload, options, mix, checks) in [
        ("tpcb", "scale = 1", TPCB_MIX, 3),
        ("smallbank", "accounts = 1000", SMALLBANK_MIX, 3),
        ("tatp", "subscribers = 1000", TATP_MIX, 3),
        ("ycsb", "recordcount = 1000\nmix = \"e\"", YCSB_E_MIX, 2),
    ] {
        let sub = dir.path().join(workload);
        std::fs::create_dir_all(&sub).unwrap();
        let text = format!(
            "[suite]\nname = \"lib-{workload}\"\nworkloads = [\"{WORKLOADS}/{workload}.toml\"]\nserver_cost = false\n\n{target}\n[defaults]\nworkload = \"{workload}\"\n{options}\nthreads = 2\ntime = 2\ncheck = true\n"
        );
        let (code, stdout, stderr) = run(&sub, &text);
        assert_eq!(code, Some(0), "{workload} on {driver}:\n{stdout}\n{stderr}");
        let rows = results(&sub.join("results"));
        assert!(
            rows.iter().all(|r| r["status"] == "ok"),
            "{workload} on {driver}: {rows:?}"
        );
        let passed = stdout
            .lines()
            .filter(|l| l.starts_with("check '") && l.ends_with("': ok"))
            .count();
        assert_eq!(passed, checks, "{workload} on {driver}:\n{stdout}");
        assert_mix(
            &format!("{workload} on {driver}"),
            &counts(&sub.join("results")),
            mix,
        );
    }
    server.drop(&db);
}

#[test]
fn issue_31_the_library_keeps_its_checks_and_mix_on_sqlite() {
    library_on(Db::Lite);
}

#[test]
fn issue_31_the_library_keeps_its_checks_and_mix_on_mariadb() {
    library_on(Db::My);
}

#[test]
fn issue_31_the_library_keeps_its_checks_and_mix_on_postgresql() {
    library_on(Db::Pg);
}

/// Per table of database `db`: (rows inserted, rows updated, index and sequential scans), as
/// PostgreSQL's statistics say.
fn table_stats(db: &str) -> HashMap<String, [i64; 3]> {
    rt().block_on(async {
        let c = pg_client(db).await.expect("connect");
        c.batch_execute("SELECT pg_stat_clear_snapshot()")
            .await
            .unwrap();
        c.query(
            "SELECT relname::text, n_tup_ins, n_tup_upd, COALESCE(idx_scan, 0) + seq_scan \
             FROM pg_stat_user_tables",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), [r.get(1), r.get(2), r.get(3)]))
        .collect()
    })
}

/// The statistics of `db` once its backends have reported `history` rows inserted into
/// pgbench_history (a backend reports at exit, a moment after its client is gone).
fn settled_stats(db: &str, history: i64) -> HashMap<String, [i64; 3]> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let s = table_stats(db);
        let now = s.get("pgbench_history").map_or(0, |v| v[0]);
        if now >= history {
            return s;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "pgbench_history of {db} shows {now} inserts, not {history}, after 20 s: {s:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

fn delta(
    after: &HashMap<String, [i64; 3]>,
    before: &HashMap<String, [i64; 3]>,
) -> HashMap<String, [i64; 3]> {
    after
        .iter()
        .map(|(t, a)| {
            let b = before.get(t).copied().unwrap_or_default();
            (t.clone(), [a[0] - b[0], a[1] - b[1], a[2] - b[2]])
        })
        .collect()
}

/// pgbench's TPC-B-like script and the TOML one on the same `pgbench -i` data, each in its
/// own database: PostgreSQL counts the same rows inserted and updated per table, and the same
/// scans up to the one read each side makes before its run (pgbench counts the branches,
/// sbsuite checks that the tables it runs on are there).
#[test]
fn issue_31_tpcb_sends_what_pgbench_sends_as_postgresql_counts_it() {
    if admin_pg(&["SELECT 1".into()]).is_none() {
        return common::skip("no PostgreSQL server accepts postgres@127.0.0.1:5432");
    }
    let pgbench = |args: &[&str]| {
        let out = Command::new("pgbench")
            .args(["-h", "127.0.0.1", "-p", "5432", "-U", "postgres"])
            .args(args)
            .output()
            .expect("pgbench (postgresql-client) is installed");
        assert!(
            out.status.success(),
            "pgbench {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    for clients in [8u32, 32] {
        let per_client = 100u32;
        let txns = i64::from(clients * per_client);
        let (theirs, ours) = ("sbs_tpcb_pgbench", "sbs_tpcb_sbsuite");
        for db in [theirs, ours] {
            Db::Pg.fresh(db).unwrap();
            pgbench(&["-i", "-q", "-s", "1", db]);
        }
        let base_theirs = settled_stats(theirs, 0);
        let base_ours = settled_stats(ours, 0);
        pgbench(&[
            "-n",
            "-M",
            "prepared",
            "-c",
            &clients.to_string(),
            "-t",
            &per_client.to_string(),
            theirs,
        ]);
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "[suite]\nname = \"tpcb-vs-pgbench\"\nworkloads = [\"{WORKLOADS}/tpcb.toml\"]\ndataset = \"existing\"\nserver_cost = false\n\n[target]\ndriver = \"pgsql\"\nhosts = [\"127.0.0.1:5432\"]\nuser = \"postgres\"\ndatabase = \"{ours}\"\n\n[defaults]\nworkload = \"tpcb\"\nthreads = {clients}\ntime = 0\nevents = {txns}\n"
        );
        let (code, stdout, stderr) = run(dir.path(), &text);
        assert_eq!(code, Some(0), "{stdout}\n{stderr}");
        assert_eq!(
            counts(&dir.path().join("results"))["tpcb_like"],
            txns as u64
        );
        let theirs_d = delta(&settled_stats(theirs, txns), &base_theirs);
        let ours_d = delta(&settled_stats(ours, txns), &base_ours);
        for table in [
            "pgbench_accounts",
            "pgbench_tellers",
            "pgbench_branches",
            "pgbench_history",
        ] {
            let (t, o) = (theirs_d[table], ours_d[table]);
            assert_eq!(
                [t[0], t[1]],
                [o[0], o[1]],
                "{table} at {clients} clients: pgbench inserted/updated {t:?}, sbsuite {o:?}"
            );
            assert!(
                (t[2] - o[2]).abs() <= 1,
                "{table} at {clients} clients: pgbench scanned {} times, sbsuite {}",
                t[2],
                o[2]
            );
        }
        // Per transaction: one update of an account, a teller and a branch, one history row,
        // two reads of the account (the update's and the SELECT's).
        assert_eq!(ours_d["pgbench_accounts"][1], txns);
        assert_eq!(ours_d["pgbench_history"][0], txns);
        assert!((ours_d["pgbench_accounts"][2] - 2 * txns).abs() <= 1);
        for db in [theirs, ours] {
            Db::Pg.drop(db);
        }
    }
}

/// `builtin` chooses pgbench's script through the transactions' weights: a select-only run
/// runs nothing else; weights that are all 0 for some values are refused at their line.
#[test]
fn issue_31_weights_over_options_choose_the_mix_and_all_zero_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[suite]\nname = \"tpcb-select\"\nworkloads = [\"{WORKLOADS}/tpcb.toml\"]\n\n[defaults]\nworkload = \"tpcb\"\nscale = 1\nbuiltin = \"select-only\"\nthreads = 2\ntime = 1\n"
    );
    let (code, stdout, stderr) = run(dir.path(), &text);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let c = counts(&dir.path().join("results"));
    assert!(c["select_only"] > 100, "{c:?}");
    assert_eq!((c["tpcb_like"], c["simple_update"]), (0, 0), "{c:?}");

    let text = r#"[suite]
name = "weights"

[defaults]
workload = "w"
time = 1

[matrix]
mode = ["a", "c"]

[workloads.w]
schema = ["CREATE TABLE t (v INTEGER)"]
cleanup = ["DROP TABLE IF EXISTS t"]

[workloads.w.options]
mode = { type = "enum", choices = ["a", "b", "c"], default = "a", help = "which" }

[workloads.w.transactions.a]
weight = "1 if mode == 'a' else 0"
steps = [{ sql = "INSERT INTO t VALUES (1)" }]

[workloads.w.transactions.b]
weight = "1 if mode == 'b' else 0"
steps = [{ sql = "INSERT INTO t VALUES (2)" }]
"#;
    let path = dir.path().join("weights.toml");
    std::fs::write(&path, text).unwrap();
    let out = sbsuite().arg("validate").arg(&path).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("weights.toml:19"), "{err}");
    assert!(err.contains("workloads.w.transactions.a.weight"), "{err}");
    assert!(
        err.contains("every transaction of workload `w` weighs 0 with mode = 'c'"),
        "{err}"
    );
}
