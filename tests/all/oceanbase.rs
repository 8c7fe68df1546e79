//! `suites/oceanbase.toml` and OceanBase's behaviour against a real OceanBase kernel: seekdb,
//! OceanBase's single-node server (`5.7.25-OceanBase seekdb-v…`: the OceanBase SQL and storage
//! engine, MySQL protocol, `SHOW PARAMETERS`, `ALTER SYSTEM SET`) on 127.0.0.1:2881 as root
//! without a password, started by `bench/seekdb.sh start` (and by `.ci/run`). Without it the
//! tests say why and pass, unless `CI` is set: then they fail.
//!
//! The suite runs as shipped, shortened with `--set` (a small dataset, 2 s per step, 2
//! threads) and with the variants its comments show: the tests read the server's variables and
//! parameters on their own connection while sbsuite runs and after it ends. Each test uses its
//! own database `sbsuite_t_ob_<name>` and holds seekdb alone (`common::db::oceanbase`): they
//! change its global variables and parameters.

use std::collections::HashMap;
use std::path::Path;

use mysql_async::prelude::Queryable;

use crate::common;

use common::db::{OCEANBASE_PORT, admin_my_at, my_opts_at, oceanbase, rt};
use common::{read_until_started, results, run_dir, sbsuite, sbsuite_process};

/// The suite's `sql` template for OceanBase parameters, as its comments write it.
const SQL_PARAMETERS: &str = "sql = { apply = \"ALTER SYSTEM SET {{ name }} = {{ value }}\", read = \"SHOW PARAMETERS LIKE '{{ name }}'\", column = \"value\" }";

/// A fresh database `sbsuite_t_ob_<name>` on seekdb.
fn database(name: &str) -> String {
    let db = format!("sbsuite_t_ob_{name}");
    admin_my_at(
        OCEANBASE_PORT,
        &[
            format!("DROP DATABASE IF EXISTS {db}"),
            format!("CREATE DATABASE {db}"),
        ],
    )
    .unwrap_or_else(|| panic!("cannot create database {db} on seekdb"));
    db
}

fn drop_database(db: &str) {
    admin_my_at(OCEANBASE_PORT, &[format!("DROP DATABASE IF EXISTS {db}")]);
}

/// The tables of `db`.
fn tables(db: &str) -> Vec<String> {
    query_strings(&format!("SHOW TABLES IN {db}"), 0)
}

/// Column `col` of every row of `sql` on a fresh connection to seekdb.
fn query_strings(sql: &str, col: usize) -> Vec<String> {
    rt().block_on(async {
        let mut c = mysql_async::Conn::new(my_opts_at(OCEANBASE_PORT, None))
            .await
            .unwrap();
        let rows: Vec<mysql_async::Row> = c.query(sql).await.unwrap();
        let _ = c.disconnect().await;
        rows.into_iter()
            .map(|r| r.get::<String, _>(col).unwrap())
            .collect()
    })
}

/// One value of what the tests watch: a global variable (`SHOW GLOBAL VARIABLES`) or a
/// parameter (`SHOW PARAMETERS`, its `value` column; one row per server, seekdb has one).
#[derive(Clone, Copy)]
enum Setting {
    Variable(&'static str),
    Parameter(&'static str),
}

impl Setting {
    async fn read(self, c: &mut mysql_async::Conn) -> String {
        let (sql, name) = match self {
            Setting::Variable(name) => (format!("SHOW GLOBAL VARIABLES LIKE '{name}'"), name),
            Setting::Parameter(name) => (format!("SHOW PARAMETERS LIKE '{name}'"), name),
        };
        let rows: Vec<mysql_async::Row> = c.query(&sql).await.unwrap();
        assert_eq!(rows.len(), 1, "{sql}: one row expected");
        let col = match self {
            Setting::Variable(_) => "Value",
            Setting::Parameter(_) => "value",
        };
        rows[0]
            .get::<String, _>(col)
            .unwrap_or_else(|| panic!("{sql}: no column {col} for {name}"))
    }
}

/// The current values of `settings`, in order.
fn read(settings: &[Setting]) -> Vec<String> {
    rt().block_on(async {
        let mut c = mysql_async::Conn::new(my_opts_at(OCEANBASE_PORT, None))
            .await
            .unwrap();
        let mut out = Vec::new();
        for s in settings {
            out.push(s.read(&mut c).await);
        }
        let _ = c.disconnect().await;
        out
    })
}

/// Polls `settings` on one connection while `child` runs (at most 120 s): the combinations of
/// values in the order seen, each change once (a combination seen again after another is
/// listed again).
fn watch(child: &mut std::process::Child, settings: &[Setting]) -> Vec<Vec<String>> {
    rt().block_on(async {
        let mut c = mysql_async::Conn::new(my_opts_at(OCEANBASE_PORT, None))
            .await
            .unwrap();
        let mut seen: Vec<Vec<String>> = Vec::new();
        let start = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() && start.elapsed().as_secs() < 120 {
            let mut now = Vec::new();
            for s in settings {
                now.push(s.read(&mut c).await);
            }
            if seen.last() != Some(&now) {
                seen.push(now);
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let _ = c.disconnect().await;
        seen
    })
}

/// `sbsuite run suites/oceanbase.toml` against seekdb, shortened: database `db`, results under
/// `results`, 2 tables × 1,000 rows, 2 threads, `time` seconds per run step, and `variants`
/// (an inline TOML array of variant tables) instead of the suite's. The suite's password
/// template reads `OB_PASSWORD`, empty here.
fn oceanbase_suite(db: &str, results: &Path, time: u32, variants: &str) -> std::process::Command {
    let mut cmd = shipped_suite(db, results, time);
    cmd.arg("--set").arg(format!("variant={variants}"));
    cmd
}

/// [`oceanbase_suite`] with the suite's own variants.
fn shipped_suite(db: &str, results: &Path, time: u32) -> std::process::Command {
    let mut cmd = sbsuite_process();
    cmd.args(["run", "suites/oceanbase.toml", "--progress", "off"])
        .arg("--results-dir")
        .arg(results)
        .arg("--set")
        .arg(format!("target.hosts=[\"127.0.0.1:{OCEANBASE_PORT}\"]"))
        .args(["--set", "target.user=root"])
        .arg("--set")
        .arg(format!("target.database={db}"))
        .arg("--set")
        .arg(format!("time={time}"))
        .args(["--set", "tables=2", "--set", "table_size=1000"])
        .args(["--set", "matrix.threads=[2]"])
        .env("OB_PASSWORD", "");
    cmd
}

/// The suite's commented variant examples are still the ones these tests run.
fn assert_suite_shows(lines: &[&str]) {
    let text = std::fs::read_to_string("suites/oceanbase.toml").unwrap();
    for line in lines {
        assert!(
            text.contains(line),
            "suites/oceanbase.toml no longer has `{line}`: update tests/all/oceanbase.rs"
        );
    }
}

#[test]
fn the_shortened_suite_applies_and_restores_a_set_global_and_a_two_stage_sql_variant() {
    let Some(_ob) = oceanbase() else {
        return;
    };
    assert_suite_shows(&[
        "#   set_global = { ob_query_timeout = 36_000_000_000, ob_trx_timeout = 36_000_000_000 }",
        "#   [variant.run]",
        "#   settings = { freeze_trigger_percentage = 40 }",
        "# sql = { apply = \"ALTER SYSTEM SET {{ name }} = {{ value }}\", read = \"SHOW PARAMETERS LIKE '{{ name }}'\", column = \"value\" }",
    ]);
    let db = database("suite");
    let watched = [
        Setting::Variable("ob_query_timeout"),
        Setting::Variable("ob_trx_timeout"),
        Setting::Parameter("freeze_trigger_percentage"),
        Setting::Parameter("open_cursors"),
    ];
    let before = read(&watched);
    assert_ne!(
        before[0], "36000000000",
        "seekdb must not start with the variant's value"
    );
    assert!(
        !["30", "40"].contains(&before[2].as_str()) && before[3] != "100",
        "seekdb must not start with the variant's values: {before:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("results");
    // The sql variant loads with one value and measures with others (#28).
    let variants = format!(
        "[{{ name = \"long-timeouts\", set_global = {{ ob_query_timeout = 36_000_000_000, ob_trx_timeout = 36_000_000_000 }} }}, \
         {{ name = \"parameters\", {SQL_PARAMETERS}, prepare = {{ settings = {{ freeze_trigger_percentage = 30 }} }}, \
         run = {{ settings = {{ freeze_trigger_percentage = 40, open_cursors = 100 }} }} }}]"
    );
    let mut child = oceanbase_suite(&db, &root, 2, &variants)
        .args(["--set", "table_size=20000"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let seen = watch(&mut child, &watched);
    let out = child.wait_with_output().unwrap();
    let after = read(&watched);
    let left = tables(&db);
    drop_database(&db);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // In force during their variant's steps and stage, never together, and restored after
    // the run: the timeouts, then freeze_trigger_percentage = 30 while the second variant
    // loads, then 40 with open_cursors = 100 while it measures.
    let with = |values: [Option<&str>; 4]| -> Vec<String> {
        values
            .iter()
            .zip(&before)
            .map(|(v, b)| v.map_or_else(|| b.clone(), str::to_string))
            .collect()
    };
    let timeouts = with([Some("36000000000"), Some("36000000000"), None, None]);
    let loading = with([None, None, Some("30"), None]);
    let measuring = with([None, None, Some("40"), Some("100")]);
    let at = |v: &Vec<String>| seen.iter().position(|s| s == v);
    let last = |v: &Vec<String>| seen.iter().rposition(|s| s == v);
    assert!(
        at(&timeouts).is_some(),
        "set_global never seen in force: {seen:?}"
    );
    let (Some(first_loading), Some(first_measuring)) = (at(&loading), at(&measuring)) else {
        panic!("the prepare and run settings were not both seen in force: {seen:?}");
    };
    assert!(
        last(&loading) < Some(first_measuring) && first_loading > last(&timeouts).unwrap(),
        "the stages' settings in another order than timeouts, prepare, run: {seen:?}"
    );
    assert!(
        seen.iter()
            .all(|v| v[0] == before[0] || (v[2] == before[2] && v[3] == before[3])),
        "the variants' settings overlapped: {seen:?}"
    );
    assert!(
        seen.iter().all(|v| v[3] == before[3] || v[2] != "30"),
        "open_cursors changed while the data loaded: {seen:?}"
    );
    assert_eq!(after, before, "every setting restored after the run");
    assert!(left.is_empty(), "the cleanup dropped the tables: {left:?}");

    // sysbench's statements per transaction (skip_trx: no BEGIN/COMMIT): read_only 14,
    // write_only 4, read_write 18, in both variants; every step ok.
    let rows = results(&root);
    let runs: Vec<&HashMap<String, String>> = rows.iter().collect();
    assert_eq!(runs.len(), 6, "{rows:?}");
    for r in &runs {
        assert_eq!(r["status"], "ok", "{r:?}");
        let n = |k: &str| -> u64 { r[k].parse().unwrap_or_else(|_| panic!("{k}: {r:?}")) };
        let per_trx = match r["workload"].as_str() {
            "oltp_read_only" => 14,
            "oltp_write_only" => 4,
            "oltp_read_write" => 18,
            w => panic!("unexpected workload {w}"),
        };
        let queries = n("reads") + n("writes") + n("other");
        assert!(n("events") > 0, "{r:?}");
        if n("errors") == 0 {
            assert_eq!(queries, per_trx * n("events"), "{r:?}");
        }
    }
    let variants: Vec<&str> = runs.iter().map(|r| r["variant"].as_str()).collect();
    assert_eq!(
        variants,
        [
            "long-timeouts",
            "long-timeouts",
            "long-timeouts",
            "parameters",
            "parameters",
            "parameters"
        ]
    );

    // The capture holds each variant's variables and parameters, the second variant's as its
    // runs measured; the restore files are gone.
    let run = run_dir(&root, "oceanbase-oltp");
    let timeouts_csv = std::fs::read_to_string(run.join("server/long-timeouts.csv")).unwrap();
    assert!(
        timeouts_csv.starts_with("name,value\nversion,5.7.25-OceanBase"),
        "{timeouts_csv}"
    );
    assert!(
        timeouts_csv.contains("\nob_query_timeout,36000000000\n")
            && timeouts_csv.contains(&format!(
                "\nparameter:freeze_trigger_percentage,{}\n",
                before[2]
            )),
        "{timeouts_csv}"
    );
    let parameters_csv = std::fs::read_to_string(run.join("server/parameters.csv")).unwrap();
    assert!(
        parameters_csv.contains(&format!("\nob_query_timeout,{}\n", before[0]))
            && parameters_csv.contains("\nparameter:freeze_trigger_percentage,40\n")
            && parameters_csv.contains("\nparameter:open_cursors,100\n"),
        "{parameters_csv}"
    );
    for f in [
        "restore-long-timeouts.json",
        "restore-parameters.json",
        "restore-parameters@prepare.json",
        "restore-parameters@run.json",
    ] {
        assert!(!run.join("server").join(f).exists(), "{f}");
    }

    // `compare --by variant` names the variables the set_global variant changed and the
    // parameters the sql variant changed.
    let cmp = sbsuite()
        .args(["compare", "--by", "variant"])
        .arg(&run)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&cmp.stdout);
    assert!(cmp.status.success(), "{cmp:?}");
    assert!(
        text.contains("server variables differ (long-timeouts → parameters):")
            && text.contains(&format!("ob_query_timeout: 36000000000 → {}", before[0])),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "server parameters differ (long-timeouts → parameters):\n  freeze_trigger_percentage: {} → 40\n  open_cursors: {} → 100\n",
            before[2], before[3]
        )),
        "{text}"
    );
}

#[test]
fn the_shipped_variants_run_on_seekdb_and_leave_every_setting_as_it_was() {
    let Some(_ob) = oceanbase() else {
        return;
    };
    let everything = || {
        let mut all = query_strings("SHOW GLOBAL VARIABLES", 0)
            .into_iter()
            .zip(query_strings("SHOW GLOBAL VARIABLES", 1))
            .collect::<Vec<_>>();
        all.extend(
            query_strings("SHOW PARAMETERS", 1)
                .into_iter()
                .zip(query_strings("SHOW PARAMETERS", 3)),
        );
        all
    };
    let before = everything();
    let db = database("shipped");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("results");
    let out = shipped_suite(&db, &root, 1)
        .args(["--set", "matrix.workload=[\"oltp_point_select\"]"])
        .output()
        .unwrap();
    let after = everything();
    drop_database(&db);
    assert!(out.status.success(), "{out:?}");
    let rows = results(&root);
    let variants: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["variant"].as_str(), r["status"].as_str()))
        .collect();
    assert_eq!(variants, [("defaults", "ok"), ("obd-sysbench", "ok")]);
    let changed: Vec<String> = before
        .iter()
        .zip(&after)
        .filter(|(b, a)| b != a)
        .map(|(b, a)| format!("{b:?} → {a:?}"))
        .collect();
    assert!(changed.is_empty(), "not restored: {changed:?}");
    assert_eq!(before.len(), after.len());
    let run = run_dir(&root, "oceanbase-oltp");
    let cmp = sbsuite()
        .args(["compare", "--by", "variant"])
        .arg(&run)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&cmp.stdout);
    assert!(
        text.contains("server parameters differ (defaults → obd-sysbench):")
            && text.contains("  syslog_level: ")
            && text.contains("  binlog_row_image: FULL → MINIMAL"),
        "{text}"
    );
}

#[test]
fn a_parameter_seekdb_lacks_is_refused_before_work() {
    let Some(_ob) = oceanbase() else {
        return;
    };
    // The suite's commented `sql` example, word for word: memstore_limit_percentage is an
    // OceanBase 4.x tenant parameter that seekdb does not have.
    assert_suite_shows(&[
        "# settings = { memstore_limit_percentage = 60, freeze_trigger_percentage = 40 }",
    ]);
    let db = database("lacks");
    let freeze = [Setting::Parameter("freeze_trigger_percentage")];
    let before = read(&freeze);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("results");
    let variants = format!(
        "[{{ name = \"big-memstore\", settings = {{ memstore_limit_percentage = 60, freeze_trigger_percentage = 40 }}, {SQL_PARAMETERS} }}]"
    );
    let out = oceanbase_suite(&db, &root, 1, &variants).output().unwrap();
    let left = tables(&db);
    let after = read(&freeze);
    drop_database(&db);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("reading memstore_limit_percentage with `SHOW PARAMETERS LIKE 'memstore_limit_percentage'`: the read query returned no row")
            && stderr.contains("nothing has run and no setting was changed"),
        "{stderr}"
    );
    assert!(left.is_empty(), "nothing was prepared: {left:?}");
    assert_eq!(after, before, "freeze_trigger_percentage untouched");
}

#[test]
fn open_cursors_is_the_per_session_limit_and_a_sql_variant_lifts_it() {
    let Some(_ob) = oceanbase() else {
        return;
    };
    let cursors = [Setting::Parameter("open_cursors")];
    let limit: u64 = read(&cursors)[0].parse().unwrap();

    // The server's own word: one session may hold `open_cursors` prepared statements, the next
    // is error 5930.
    let refused = rt().block_on(async {
        let opts = my_opts_at(OCEANBASE_PORT, None).stmt_cache_size(limit as usize + 10);
        let mut c = mysql_async::Conn::new(opts).await.unwrap();
        let mut held = Vec::new();
        let mut refused = None;
        for i in 0..=limit {
            match c.prep(format!("SELECT ? + {i}")).await {
                Ok(s) => held.push(s),
                Err(mysql_async::Error::Server(e)) => {
                    refused = Some((i, e.code, e.message));
                    break;
                }
                Err(e) => panic!("prepare {i}: {e}"),
            }
        }
        drop(held);
        let _ = c.disconnect().await;
        refused
    });
    let (at, code, message) = refused.expect("seekdb took more statements than open_cursors");
    assert_eq!((at, code), (limit, 5930), "{message}");

    // A run that prepares more per connection is refused before its threads start, naming the
    // fix; the same run in a variant that raises open_cursors with ALTER SYSTEM works.
    let tables = limit / 5 + 1;
    let needed = tables * 5;
    let db = database("cursors");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("results");
    let variants = format!(
        "[{{ name = \"defaults\" }}, {{ name = \"cursors\", settings = {{ open_cursors = {needed} }}, {SQL_PARAMETERS} }}]"
    );
    let out = oceanbase_suite(&db, &root, 1, &variants)
        .args(["--set", "target.ps_mode=auto"])
        .args(["--set", "matrix.workload=[\"oltp_read_only\"]"])
        .args(["--set", "matrix.threads=[1]"])
        .arg("--set")
        .arg(format!("tables={tables}"))
        .args(["--set", "table_size=10"])
        .output()
        .unwrap();
    let after: u64 = read(&cursors)[0].parse().unwrap();
    drop_database(&db);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(after, limit, "open_cursors restored");
    let rows = results(&root);
    let run = |variant: &str| {
        rows.iter()
            .find(|r| r["variant"] == variant)
            .unwrap_or_else(|| panic!("no run of {variant}: {rows:?}\n{stderr}"))
    };
    assert_eq!(rows.len(), 2, "one run step per variant: {rows:?}");
    let refused = run("defaults");
    assert_eq!(refused["status"], "failed", "{refused:?}");
    assert!(
        refused["error"].contains(&format!(
            "the run prepares {needed} statements on each connection, but OceanBase allows open_cursors = {limit} per session (error 5930"
        )) && refused["error"].contains(&format!("ALTER SYSTEM SET open_cursors = {needed} or more")),
        "{refused:?}"
    );
    let lifted = run("cursors");
    assert_eq!(lifted["status"], "ok", "{lifted:?}\n{stderr}");
}

#[test]
fn sbsuite_restore_puts_parameters_back_after_a_kill() {
    let Some(_ob) = oceanbase() else {
        return;
    };
    // The variant's own parameter and a variable of its run stage (#28): each has its
    // restore file.
    let freeze = [
        Setting::Parameter("freeze_trigger_percentage"),
        Setting::Variable("ob_query_timeout"),
    ];
    let before = read(&freeze);
    assert!(
        before[0] != "40" && before[1] != "36000000000",
        "seekdb must not start with the variant's values: {before:?}"
    );
    let db = database("killed");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("results");
    let variants = format!(
        "[{{ name = \"freeze\", settings = {{ freeze_trigger_percentage = 40 }}, {SQL_PARAMETERS}, run = {{ set_global = {{ ob_query_timeout = 36_000_000_000 }} }} }}]"
    );
    let mut child = oceanbase_suite(&db, &root, 60, &variants)
        .args(["--set", "matrix.workload=[\"oltp_point_select\"]"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    read_until_started(&mut child, 1);
    let during = read(&freeze);
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = read(&freeze);
    let run = run_dir(&root, "oceanbase-oltp");
    let restore_files = [
        run.join("server/restore-freeze.json"),
        run.join("server/restore-freeze@run.json"),
    ];
    let left: Vec<bool> = restore_files.iter().map(|f| f.exists()).collect();
    let out = sbsuite()
        .arg("restore")
        .arg(&run)
        .env("OB_PASSWORD", "")
        .output()
        .unwrap();
    let after = read(&freeze);
    drop_database(&db);
    assert_eq!(
        during,
        ["40", "36000000000"],
        "the variant's values in force while it runs"
    );
    assert_eq!(killed, during, "kill -9 leaves the settings changed");
    assert_eq!(left, [true, true], "the restore files stay after kill -9");
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!(
            "restored variant freeze (run settings): ob_query_timeout = {}",
            before[1]
        )) && said
            .contains("restored variant freeze: `ALTER SYSTEM SET freeze_trigger_percentage = "),
        "{said}"
    );
    assert_eq!(after, before, "sbsuite restore put the settings back");
    assert!(
        restore_files.iter().all(|f| !f.exists()),
        "the restore files go once restored"
    );
}

/// A `[target]` of seekdb, or of the MariaDB at 3306, as the library reads it.
fn lib_target(port: u16, database: &str) -> sbsuite::db::Target {
    let raw: sbsuite::db::RawTarget = toml::from_str(&format!(
        "driver = \"mysql\"\nhosts = [\"127.0.0.1:{port}\"]\nuser = \"root\"\ndatabase = \"{database}\""
    ))
    .unwrap();
    sbsuite::db::Target::from_raw(&raw).unwrap()
}

/// The wire protocol is MySQL's for both; the server flavor is told from the server when
/// the first connection is made (issue #28): seekdb's `VERSION()` says OceanBase (its
/// handshake only `5.7.25`), MariaDB's handshake says MariaDB. A `[target]` without
/// `ignore_errors` then takes the flavor's list: obd's codes on OceanBase, sysbench's on
/// MariaDB.
#[test]
fn the_server_flavor_is_detected_on_connect_and_owns_the_ignorable_errors() {
    let Some(_ob) = oceanbase() else {
        return;
    };
    let ob = sbsuite::db::Connector::new(lib_target(OCEANBASE_PORT, "test"));
    assert_eq!(
        ob.flavor().name(),
        "mysql",
        "before a connection: the protocol's"
    );
    let mut c = ob.connect_at(0).unwrap();
    assert_eq!(
        sbsuite::db::dialect::first_value(c.as_mut(), "SELECT 1")
            .unwrap()
            .as_deref(),
        Some("1"),
        "the detection leaves the connection usable"
    );
    c.close();
    assert_eq!(ob.flavor().name(), "oceanbase");
    assert_eq!(ob.flavor().parameters_query(), Some("SHOW PARAMETERS"));
    for code in ["6002", "6004", "4012", "2013", "4016", "1213", "1205"] {
        assert!(ob.ignore_errors().contains(code), "{code} on OceanBase");
    }
    assert_eq!(
        ob.flavor().class_of("4012"),
        sbsuite::db::ErrorClass::Timeout
    );

    if let Ok(c) = sbsuite::db::Connector::new(lib_target(3306, "test")).connect_at(0) {
        c.close();
        let maria = sbsuite::db::Connector::new(lib_target(3306, "test"));
        maria.connect_at(0).unwrap().close();
        assert_eq!(maria.flavor().name(), "mariadb");
        assert!(maria.ignore_errors().contains("1213"));
        assert!(!maria.ignore_errors().contains("4012"), "not MariaDB's");
    }
}

/// A custom workload whose statement reaches OceanBase's query timeout half of the time
/// (error 4012: a `QUERY_TIMEOUT` hint of 50 ms on a sleep of 1 to 100 ms) runs on with the
/// errors counted and the events re-run, as the
/// flavor's default `ignore_errors` says; the same workload with a list that lacks 4012 fails
/// on it.
#[test]
fn a_custom_workload_gets_oceanbases_timeout_as_an_ignorable_error() {
    let Some(_ob) = oceanbase() else {
        return;
    };
    let db = database("flavor");
    let dir = tempfile::tempdir().unwrap();
    let suite = |name: &str, ignore: &str| {
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "[suite]\nname = \"{name}\"\n\n[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:{OCEANBASE_PORT}\"]\nuser = \"root\"\ndatabase = \"{db}\"\n{ignore}\n\
                 [defaults]\nworkload = \"slow\"\nthreads = 1\ntime = 1\nreport_interval = 0\n\n\
                 [workloads.slow.params]\nms = {{ uniform = [1, 100] }}\n\n\
                 [workloads.slow.transactions.t]\nautocommit = true\n\
                 steps = [{{ sql = \"SELECT /*+ QUERY_TIMEOUT(50000) */ SLEEP(:ms / 1000)\" }}]\n"
            ),
        )
        .unwrap();
        let root = dir.path().join(name);
        let out = sbsuite()
            .arg("run")
            .arg(&path)
            .arg("--results-dir")
            .arg(&root)
            .args(["--progress", "off"])
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (results(&root), text)
    };
    let (rows, text) = suite("flavor_default", "");
    let (strict, strict_text) = suite("flavor_strict", "ignore_errors = [1213]\n");
    drop_database(&db);
    assert_eq!(rows.len(), 1, "{rows:?}\n{text}");
    let run = &rows[0];
    assert_eq!(run["status"], "ok", "{run:?}\n{text}");
    assert!(run["error_codes"].starts_with("4012:"), "{run:?}\n{text}");
    assert_ne!(run["errors"], "0", "{run:?}");
    assert_ne!(run["events"], "0", "{run:?}");

    assert_eq!(strict.len(), 1, "{strict:?}\n{strict_text}");
    assert_eq!(strict[0]["status"], "failed", "{strict:?}\n{strict_text}");
    assert!(strict[0]["error"].contains("4012"), "{strict:?}");
}

/// A Lua script that prepares more statements on one connection than OceanBase's
/// per-session `open_cursors` gets error 5930 with OceanBase's fix, never MySQL's
/// `max_prepared_stmt_count` advice.
#[test]
fn a_lua_script_past_open_cursors_is_told_about_open_cursors() {
    let Some(_ob) = oceanbase() else {
        return;
    };
    let limit: u64 = read(&[Setting::Parameter("open_cursors")])[0]
        .parse()
        .unwrap();
    let db = database("lua_cursors");
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("cursors.lua");
    std::fs::write(
        &script,
        format!(
            "function thread_init()\n  local con = sysbench.sql.driver():connect()\n  held = {{}}\n  for i = 1, {} do\n    held[i] = con:prepare(\"SELECT \" .. i)\n  end\nend\n\nfunction event()\nend\n",
            limit + 1
        ),
    )
    .unwrap();
    let path = dir.path().join("lua.toml");
    std::fs::write(
        &path,
        format!(
            "[suite]\nname = \"lua_cursors\"\n\n[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:{OCEANBASE_PORT}\"]\nuser = \"root\"\ndatabase = \"{db}\"\nps_mode = \"auto\"\n\n\
             [defaults]\nworkload = {{ script = \"{}\" }}\nthreads = 1\ntime = 1\nreport_interval = 0\n",
            script.display()
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
    drop_database(&db);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("5930") && text.contains("ALTER SYSTEM SET open_cursors"),
        "{text}"
    );
    assert!(!text.contains("max_prepared_stmt_count"), "{text}");
}
