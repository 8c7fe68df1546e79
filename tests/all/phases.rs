//! Phases (#30): a run step that follows a timeline of rates and thread counts, on the shared
//! MariaDB and PostgreSQL servers.
//!
//! - A rate ramp over four phases (a warmup, a ramp, a hold with more threads, a step down
//!   with fewer) delivers each measured phase's mean target rate within 5 %; results.csv has
//!   the step's row plus one per measured phase (their events add up to the step's, the
//!   warmup is in none), and intervals.csv tags every interval with its phase.
//! - The pool is opened once: the server shows the largest phase's connections on the step's
//!   database in the ramp (4 threads) and in the step down (2 threads) alike, and nothing
//!   reconnected.
//! - `plan` shows the timeline; options that the phases set are refused with their line.
//!
//! The arrivals are seeded (`rand_seed`), so the counts the rates are judged on are the same
//! from run to run. Databases: `sbs_phases_*`, dropped and made per test.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::common;

use common::db::{admin_my, admin_pg};
use common::{csv_rows, results, sbsuite, sbsuite_process};

#[derive(Clone, Copy)]
enum Db {
    My,
    Pg,
}

impl Db {
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
            common::skip(
                "the shared server does not answer (.ci/run starts MariaDB and PostgreSQL)",
            );
        }
        made.is_some()
    }

    fn drop_database(self, name: &str) {
        match self {
            Db::My => admin_my(&[format!("DROP DATABASE IF EXISTS {name}")]),
            Db::Pg => admin_pg(&[format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")]),
        };
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

    /// The server's count of sessions on database `db` now (never the asking client's).
    fn sessions(self, db: &str) -> u64 {
        let cmd = match self {
            Db::My => format!(
                "mysql -h 127.0.0.1 -P 3306 -u root -N -e \"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = '{db}'\""
            ),
            Db::Pg => format!(
                "psql --host=127.0.0.1 --port=5432 --username=postgres --no-psqlrc -qAt -d postgres -c \"SELECT count(*) FROM pg_stat_activity WHERE datname = '{db}'\""
            ),
        };
        let out = Command::new("sh").arg("-c").arg(&cmd).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        text.trim()
            .parse()
            .unwrap_or_else(|_| panic!("`{cmd}` printed {text:?}"))
    }
}

const TIMELINE: &str = r#"
[[phases]]
name = "warm"
time = 2
rate = 200
warmup = true

[[phases]]
name = "ramp"
time = 6
rate = [200, 1000]

[[phases]]
name = "hold"
time = 5
threads = 8
rate = 1000

[[phases]]
name = "low"
time = 5
threads = 2
rate = 400
"#;

fn suite(server: Db, db: &str) -> String {
    format!(
        "[suite]\nname = \"phases\"\nserver_cost = false\n\n{}\n[defaults]\nworkload = \"oltp_point_select\"\ntables = 1\ntable_size = 1000\nthreads = 4\nrand_seed = 42\nreport_interval = 1\n{TIMELINE}",
        server.target(db)
    )
}

fn num(row: &std::collections::HashMap<String, String>, column: &str) -> f64 {
    row[column]
        .parse()
        .unwrap_or_else(|_| panic!("{column} = {:?} in {row:?}", row[column]))
}

fn a_rate_ramp_over_phases_is_delivered_on_one_pool(server: Db, db: &str) {
    if !server.fresh(db) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("suite.toml");
    std::fs::write(&path, suite(server, db)).unwrap();

    let plan = sbsuite().arg("plan").arg(&path).output().unwrap();
    let plan_text = String::from_utf8_lossy(&plan.stdout).into_owned();
    assert!(
        plan_text.contains(
            "phases: warm 2s 4 thr 200/s (warmup) | ramp 6s 4 thr 200→1000/s | hold 5s 8 thr 1000/s | low 5s 2 thr 400/s"
        ),
        "{plan_text}"
    );

    let validate = sbsuite().arg("validate").arg(&path).output().unwrap();
    let validate_text = String::from_utf8_lossy(&validate.stdout).into_owned();
    assert!(
        validate_text.contains("  phases: warm 2s 4 thr 200/s (warmup) | ramp 6s"),
        "{validate_text}"
    );

    let mut child = sbsuite_process()
        .arg("run")
        .arg(&path)
        .arg("--results-dir")
        .arg(dir.path().join("results"))
        .args(["--progress", "off"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The server's sessions on the step's database a second into the ramp (4 threads run)
    // and into the step down (2 threads run): the step's pool of 8 both times.
    let mut sessions = Vec::new();
    let mut log = String::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if line.contains("Phase 2/4 `ramp`") || line.contains("Phase 4/4 `low`") {
            std::thread::sleep(std::time::Duration::from_secs(1));
            sessions.push(server.sessions(db));
        }
        log.push_str(&line);
        log.push('\n');
    }
    let status = child.wait().unwrap();
    server.drop_database(db);
    assert!(status.success(), "{log}");
    assert_eq!(sessions, [8, 8], "the pool stays open: {log}");

    let rows = results(&dir.path().join("results"));
    assert_eq!(
        rows.len(),
        4,
        "the step and its three measured phases: {rows:?}"
    );
    let step = &rows[0];
    assert_eq!(step["phase"], "", "{step:?}");
    assert_eq!(num(step, "warmup_s"), 2.0, "{step:?}");
    assert_eq!(num(step, "reconnects"), 0.0, "{step:?}");
    assert_eq!(num(step, "connects"), 0.0, "{step:?}");
    let phases: Vec<_> = rows[1..].iter().collect();
    let names: Vec<&str> = phases.iter().map(|r| r["phase"].as_str()).collect();
    assert_eq!(names, ["ramp", "hold", "low"]);
    let threads: Vec<&str> = phases.iter().map(|r| r["threads"].as_str()).collect();
    assert_eq!(threads, ["4", "8", "2"]);
    let mut events = 0.0;
    for (r, (target, secs)) in phases
        .iter()
        .zip([(600.0, 6.0), (1000.0, 5.0), (400.0, 5.0)])
    {
        assert_eq!(num(r, "target_rate"), target, "{r:?}");
        assert_eq!(r["status"], "ok", "{r:?}");
        assert!((num(r, "seconds") - secs).abs() < 0.3, "{r:?}");
        let achieved = num(r, "eps");
        assert!(
            (achieved / target - 1.0).abs() < 0.05,
            "phase {} ran {achieved}/s for a target of {target}/s: {log}",
            r["phase"]
        );
        assert_eq!(num(r, "dropped"), 0.0, "{r:?}");
        events += num(r, "events");
    }
    assert_eq!(num(step, "events"), events, "{rows:?}");

    let intervals = csv_rows(&dir.path().join("results"), "intervals.csv");
    let tagged: Vec<&str> = intervals.iter().map(|r| r["phase"].as_str()).collect();
    for name in ["ramp", "hold", "low"] {
        assert!(
            tagged.iter().filter(|&&p| p == name).count() >= 4,
            "{tagged:?}"
        );
    }
    assert!(
        !tagged.contains(&"warm") && !tagged.contains(&""),
        "{tagged:?}"
    );
    // The ramp's target over each 1 s interval is its exact mean: 200 + 800 × (t − ½) / 6.
    for r in intervals.iter().filter(|r| r["phase"] == "ramp") {
        let t = num(r, "time").round();
        let want = 200.0 + 800.0 * (t - 0.5) / 6.0;
        assert!((num(r, "target_rate") - want).abs() < 15.0, "{r:?}");
    }
    assert!(log.contains("Phases:\n"), "{log}");

    // The report draws each step's target rate next to its throughput, and the phases.
    let run = common::run_dir(&dir.path().join("results"), "phases");
    let html = dir.path().join("report.html");
    let report = sbsuite()
        .arg("report")
        .arg(&run)
        .arg("--out")
        .arg(&html)
        .output()
        .unwrap();
    assert!(report.status.success(), "{report:?}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("phases: ramp to 6 s, hold to 11 s, low to 16 s"),
        "no phases note"
    );
    assert!(page.contains("· target"), "no target series");
}

#[test]
fn a_rate_ramp_over_phases_is_delivered_on_one_pool_on_mariadb() {
    a_rate_ramp_over_phases_is_delivered_on_one_pool(Db::My, "sbs_phases_my");
}

#[test]
fn a_rate_ramp_over_phases_is_delivered_on_one_pool_on_postgresql() {
    a_rate_ramp_over_phases_is_delivered_on_one_pool(Db::Pg, "sbs_phases_pg");
}

/// What the phases set cannot also be given, and a phase that cannot run is refused, each
/// with the file's line, before anything runs.
#[test]
fn phases_that_contradict_the_suite_are_refused_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "[defaults]\nworkload = \"cpu\"\ntime = 30\n[[phases]]\ntime = 5\n",
            "defaults.time",
            "`time` and [[phases]] do not go together",
        ),
        (
            "[defaults]\nworkload = \"cpu\"\n[[phases]]\ntime = 5\n[[phases]]\ntime = 5\nwarmup = true\n",
            "phases[1].warmup",
            "is a warmup after a measured phase",
        ),
        (
            "[defaults]\nworkload = \"cpu\"\n[[phases]]\nname = \"a\"\ntime = 5\n[[phases]]\nname = \"a\"\ntime = 0\n",
            "phases[1].name",
            "named `a` like an earlier phase",
        ),
        (
            "[defaults]\nworkload = \"cpu\"\n[[phases]]\ntime = 5\nrate = [-1, 5]\n",
            "phases[0].rate",
            "negative rate",
        ),
        (
            "[defaults]\nworkload = \"cpu\"\n[[phases]]\ntime = 5\nweights = { a = 1 }\n",
            "phases[0].weights",
            "workload `cpu` has no transactions to weigh",
        ),
    ];
    for (body, key, message) in cases {
        let path = dir.path().join("s.toml");
        std::fs::write(&path, format!("[suite]\nname = \"p\"\n{body}")).unwrap();
        let out = sbsuite().arg("validate").arg(&path).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{body}: {err}");
        assert!(err.contains(key) && err.contains(message), "{body}: {err}");
        assert!(err.contains("s.toml:"), "names the file and line: {err}");
    }
}

/// `max_threads` on MariaDB: one thread that sleeps 10 ms per transaction cannot serve 300
/// arrivals a second; the pool grows (up to 12) until it does. The server shows it: several of
/// the step's sessions sleeping at once, where one thread could only ever show one.
#[test]
fn max_threads_grows_the_pool_until_the_rate_is_served_on_mariadb() {
    let db = "sbs_phases_grow";
    if !Db::My.fresh(db) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("suite.toml");
    std::fs::write(
        &path,
        format!(
            "[suite]\nname = \"grow\"\nserver_cost = false\n\n{}\n[defaults]\nworkload = \"nap\"\nthreads = 1\nmax_threads = 12\nrate = 300\ntime = 6\nrand_seed = 7\n\n[workloads.nap]\nsummary = \"a 10 ms server-side sleep\"\n\n[workloads.nap.transactions.nap]\nweight = 1\nsteps = [{{ sql = \"SELECT SLEEP(0.01)\" }}]\n",
            Db::My.target(db)
        ),
    )
    .unwrap();
    let mut child = sbsuite_process()
        .arg("run")
        .arg(&path)
        .arg("--results-dir")
        .arg(dir.path().join("results"))
        .args(["--progress", "off"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut seen = common::read_until_started(&mut child, 1);
    std::thread::sleep(std::time::Duration::from_secs(1));
    let sleeping = format!(
        "mysql -h 127.0.0.1 -P 3306 -u root -N -e \"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = '{db}' AND INFO LIKE 'SELECT SLEEP%'\""
    );
    let mut most = 0;
    for _ in 0..20 {
        let out = Command::new("sh")
            .arg("-c")
            .arg(&sleeping)
            .output()
            .unwrap();
        let n: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        most = most.max(n);
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    use std::io::Read;
    child.stdout.take().unwrap().read_to_end(&mut seen).unwrap();
    let status = child.wait().unwrap();
    Db::My.drop_database(db);
    let log = String::from_utf8_lossy(&seen);
    assert!(status.success(), "{log}");
    assert!(
        most >= 2,
        "the server saw at most {most} sleeping sessions: {log}"
    );

    let rows = results(&dir.path().join("results"));
    assert_eq!(rows.len(), 1, "{rows:?}");
    let r = &rows[0];
    assert_eq!(r["status"], "ok", "{r:?}");
    let peak = num(r, "threads_peak");
    assert!((3.0..=12.0).contains(&peak), "{r:?}");
    assert!((num(r, "eps") / 300.0 - 1.0).abs() < 0.05, "{r:?}");
    assert_eq!(num(r, "dropped"), 0.0, "{r:?}");
    assert!(log.contains("Threads: 1 at the start, "), "{log}");
}

/// A phase's `weights` (custom workloads) changes the transaction mix at its boundary: only
/// `a` runs in the first phase and only `b` in the second, and PostgreSQL's own tables say so
/// (each transaction inserts one row into its table; an after-step hook counts them before the
/// cleanup drops them). A transaction under way at the boundary may land in the other phase's
/// count: at most one per thread.
#[test]
fn a_phase_changes_the_transaction_mix_on_postgresql() {
    let db = "sbs_phases_mix";
    if !Db::Pg.fresh(db) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let counts = dir.path().join("counts.txt");
    let count = |t: &str| {
        format!(
            "psql --host=127.0.0.1 --port=5432 --username=postgres --no-psqlrc -qAt -d {db} -c 'SELECT count(*) FROM {t}'"
        )
    };
    let text = format!(
        r#"[suite]
name = "mix"
server_cost = false

{}
[hooks]
after_step = '''[ {{{{ kind }}}} = run ] && echo $({}) $({}) > {} || true'''

[defaults]
workload = "mix"
threads = 2

[[phases]]
name = "only_a"
time = 3
weights = {{ a = 1, b = 0 }}

[[phases]]
name = "only_b"
time = 3
weights = {{ a = 0, b = 1 }}

[workloads.mix]
summary = "two transactions, each inserting into its own table"
schema = ["CREATE TABLE ta (x INT)", "CREATE TABLE tb (x INT)"]
cleanup = ["DROP TABLE IF EXISTS ta", "DROP TABLE IF EXISTS tb"]

[workloads.mix.transactions.a]
weight = 1
steps = [{{ sql = "INSERT INTO ta VALUES (1)" }}]

[workloads.mix.transactions.b]
weight = 1
steps = [{{ sql = "INSERT INTO tb VALUES (1)" }}]
"#,
        Db::Pg.target(db),
        count("ta"),
        count("tb"),
        counts.display()
    );
    let path = dir.path().join("suite.toml");
    std::fs::write(&path, text).unwrap();
    let out = sbsuite()
        .arg("run")
        .arg(&path)
        .arg("--results-dir")
        .arg(dir.path().join("results"))
        .args(["--progress", "off"])
        .output()
        .unwrap();
    Db::Pg.drop_database(db);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let seen = std::fs::read_to_string(&counts).unwrap();
    let server: Vec<f64> = seen
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    let rows = results(&dir.path().join("results"));
    let phase_events: Vec<f64> = rows[1..].iter().map(|r| num(r, "events")).collect();
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(phase_events.iter().all(|&e| e > 100.0), "{rows:?}");
    for (rows_of, events) in server.iter().zip(&phase_events) {
        assert!(
            (rows_of - events).abs() <= 2.0,
            "the server has {server:?} rows for phases of {phase_events:?} events"
        );
    }
}
