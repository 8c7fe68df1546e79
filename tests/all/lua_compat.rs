//! sysbench 1.0 Lua scripts run by `sbsuite sysbench` side by side with sysbench 1.0.20 itself
//! (issue #16): the scripts of `tests/lua/` (ours, one per API group) and sysbench's stock
//! OLTP scripts forced through Lua, run by both tools on the same servers, must print the same
//! deterministic lines, exit with the same codes, report the same SQL statistics and make the
//! servers count the same statements.
//!
//! What is compared, per script:
//! * lines starting with `@ ` (the scripts print every deterministic fact that way: values,
//!   properties of random draws, types, error messages), in order, or sorted where threads
//!   interleave;
//! * text sysbench prints itself whose layout is the contract: `help`, histograms,
//!   `FATAL:` lines, stderr of option errors; report lines by shape (numbers replaced, since
//!   they carry timings);
//! * the exit code, and the counts of the SQL statistics section;
//! * server-side counters around each run: MariaDB's global `Com_*` deltas, PostgreSQL's
//!   `pg_stat_user_tables` deltas of the script's tables.
//!
//! Both tools run from the repository root with the same relative script path, so
//! `sysbench.cmdline.script_path` and every `file:line` in a message are the same. Each test
//! uses its own database (`sbsuite_t_lua_*`), created and dropped here, and holds the shared
//! servers' lock (`common::server_lock`) while it runs. Without sysbench or a server a test
//! says why and passes, unless `CI` is set: then it fails.
//!
//! `LUA_COMPAT_SELF_CHECK=1 cargo test --test all lua_compat::` runs sysbench on both sides: every
//! test must pass then too, or it compares something that is not deterministic.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::measure::{Measured, measured};
use common::server_lock::server_lock;

/// Set (to anything), sysbench runs in place of sbsuite too (without `--lua`): every test
/// then compares sysbench with itself, which proves that what it compares is deterministic.
const SELF_CHECK_ENV: &str = "LUA_COMPAT_SELF_CHECK";

/// The longest any one run of a test script may take.
const LIMIT: Duration = Duration::from_secs(180);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tool {
    Sysbench,
    Sbsuite,
}

const TOOLS: [Tool; 2] = [Tool::Sysbench, Tool::Sbsuite];

/// Whether sysbench 1.0.20, the reference, is installed (else the caller skips).
fn have_sysbench() -> bool {
    let version = Command::new("sysbench").arg("--version").output();
    match version {
        Ok(out) if String::from_utf8_lossy(&out.stdout).starts_with("sysbench 1.0.20") => true,
        Ok(out) => {
            common::skip(&format!(
                "sysbench is not 1.0.20 but {:?}: install Debian's package (.ci/run does)",
                String::from_utf8_lossy(&out.stdout).trim()
            ));
            false
        }
        Err(e) => {
            common::skip(&format!(
                "sysbench 1.0.20 is not installed ({e}): apt-get install sysbench (.ci/run does)"
            ));
            false
        }
    }
}

/// `sysbench ARGS` or `sbsuite sysbench ARGS`, from the repository root, to its end.
fn run(tool: Tool, args: &[String]) -> Measured {
    let mut cmd = match tool {
        Tool::Sysbench => Command::new("sysbench"),
        // The determinism check of the module doc: sysbench on both sides.
        Tool::Sbsuite if std::env::var_os(SELF_CHECK_ENV).is_some() => Command::new("sysbench"),
        Tool::Sbsuite => {
            let mut c = common::sbsuite_process();
            c.arg("sysbench");
            c
        }
    };
    let self_mode = std::env::var_os(SELF_CHECK_ENV).is_some();
    cmd.args(args.iter().filter(|a| !(self_mode && *a == "--lua")))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        // sysbench 1.0.20's libpq and sbsuite both read it; the servers here speak plain TCP.
        .env("PGSSLMODE", "disable");
    measured(cmd, LIMIT)
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// What a test compares of one run.
#[derive(Debug)]
struct Seen {
    code: Option<i32>,
    /// The `@ ` lines, in order.
    marked: Vec<String>,
    stdout: String,
    stderr: String,
}

/// Splits a run's output into the `@ ` lines and the rest. A script's `print` may follow a
/// report on the same line (`report_json` ends its object without a newline): such a line is
/// split at its `@ `.
fn seen(m: &Measured) -> Seen {
    let mut marked = Vec::new();
    for line in m.stdout.lines() {
        if let Some(at) = line.find("@ ")
            && (at == 0 || line[..at].trim_end().ends_with(['}', ']']))
        {
            marked.push(line[at..].to_string());
        }
    }
    Seen {
        code: m.code,
        marked,
        stdout: m.stdout.clone(),
        stderr: m.stderr.clone(),
    }
}

/// Runs `args` with both tools; returns (sysbench's, sbsuite's).
fn both(args: &[String]) -> (Seen, Seen) {
    let a = seen(&run(Tool::Sysbench, args));
    let b = seen(&run(Tool::Sbsuite, args));
    (a, b)
}

fn context(what: &str, a: &Seen, b: &Seen) -> String {
    format!(
        "{what}\n--- sysbench (exit {:?}) ---\n{}\n{}\n--- sbsuite (exit {:?}) ---\n{}\n{}",
        a.code, a.stdout, a.stderr, b.code, b.stdout, b.stderr
    )
}

/// Same exit code and same `@ ` lines in the same order.
fn assert_same(what: &str, a: &Seen, b: &Seen) {
    assert_eq!(a.code, b.code, "exit codes differ: {}", context(what, a, b));
    assert_eq!(a.marked, b.marked, "{}", context(what, a, b));
    assert!(
        !a.marked.is_empty(),
        "sysbench printed nothing to compare: {}",
        context(what, a, b)
    );
}

/// Same exit code and the same `@ ` lines, in any order (threads interleave).
fn assert_same_sorted(what: &str, a: &Seen, b: &Seen) {
    assert_eq!(a.code, b.code, "exit codes differ: {}", context(what, a, b));
    let (mut x, mut y) = (a.marked.clone(), b.marked.clone());
    x.sort();
    y.sort();
    assert_eq!(x, y, "{}", context(what, a, b));
    assert!(
        !x.is_empty(),
        "sysbench printed nothing to compare: {}",
        context(what, a, b)
    );
}

/// Every line that starts with `prefix` (e.g. `FATAL:`), in order.
fn lines_with<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.starts_with(prefix)).collect()
}

/// The 1-based number of the first line of `script` (relative to the repository) that
/// contains `needle`.
fn line_of(script: &str, needle: &str) -> usize {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(script))
        .unwrap_or_else(|e| panic!("{script}: {e}"));
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{script} has no line with {needle}"))
        + 1
}

/// The output without sysbench's banner (`sysbench 1.0.20 (using …)` and the blank line after
/// it), which names the binary and its LuaJIT.
fn without_banner(stdout: &str) -> String {
    let mut lines = stdout.lines().peekable();
    if lines.peek().is_some_and(|l| l.starts_with("sysbench ")) {
        lines.next();
        if lines.peek().is_some_and(|l| l.is_empty()) {
            lines.next();
        }
    }
    lines.map(|l| format!("{l}\n")).collect()
}

/// A report line with every number replaced by `N`: its layout without the timings.
fn shape(line: &str) -> String {
    let mut out = String::new();
    let mut in_number = false;
    for c in line.chars() {
        if c.is_ascii_digit() || (in_number && c == '.') {
            if !in_number {
                out.push('N');
                in_number = true;
            }
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

/// The distinct shapes of the lines between `Threads started!` and the end that are not `@ `
/// lines: the report lines the hooks print (how many intervals fit depends on timing, their
/// layout does not).
fn report_shapes(stdout: &str) -> Vec<String> {
    let after = stdout
        .split_once("Threads started!")
        .map(|(_, rest)| rest)
        .unwrap_or("");
    let mut shapes: Vec<String> = after
        .lines()
        .map(|l| match l.find("@ ") {
            Some(at) => &l[..at],
            None => l,
        })
        .filter(|l| !l.trim().is_empty())
        .map(shape)
        .collect();
    shapes.sort();
    shapes.dedup();
    shapes
}

/// The counts of sysbench's SQL statistics section (`read:`, `write:`, `other:`, `total:`,
/// `transactions:`, `queries:`, `ignored errors:`, `reconnects:`).
fn sql_statistics(stdout: &str) -> Vec<(&'static str, u64)> {
    [
        "read:",
        "write:",
        "other:",
        "total:",
        "transactions:",
        "queries:",
        "ignored errors:",
        "reconnects:",
    ]
    .into_iter()
    .map(|label| (label, common::report_count(stdout, label)))
    .collect()
}

// ---------------------------------------------------------------------------------------------
// Servers

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Driver {
    Mysql,
    Pgsql,
}

const MYSQL_COUNTERS: [&str; 11] = [
    "Com_select",
    "Com_insert",
    "Com_update",
    "Com_delete",
    "Com_begin",
    "Com_commit",
    "Com_rollback",
    "Com_stmt_execute",
    "Com_create_table",
    "Com_drop_table",
    "Com_stmt_prepare",
];

/// A database of its own for one test on the local server of `driver`, dropped with it.
struct Database {
    driver: Driver,
    name: String,
}

/// Runs the server's command-line client: `mysql` as root over 127.0.0.1:3306, or `psql` as
/// postgres over 127.0.0.1:5432 into `db`. Returns stdout, or the error text.
fn client(driver: Driver, db: Option<&str>, sql: &str) -> Result<String, String> {
    let out = match driver {
        Driver::Mysql => {
            let mut c = Command::new("mysql");
            c.args(["--user=root", "--host=127.0.0.1", "--port=3306", "-N", "-B"]);
            if let Some(db) = db {
                c.arg(format!("--database={db}"));
            }
            c.arg("-e").arg(sql).output()
        }
        Driver::Pgsql => Command::new("psql")
            .args([
                "--host=127.0.0.1",
                "--port=5432",
                "--username=postgres",
                "--no-psqlrc",
                "-v",
                "ON_ERROR_STOP=1",
                "-qAt",
                "-F",
                "\t",
            ])
            .arg(format!("--dbname={}", db.unwrap_or("postgres")))
            .arg("-c")
            .arg(sql)
            .env("PGSSLMODE", "disable")
            .output(),
    }
    .map_err(|e| format!("cannot run the {driver:?} client: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

impl Database {
    /// A fresh `sbsuite_t_lua_<name>`, or `None` (after saying why) without a server.
    fn create(driver: Driver, name: &str) -> Option<Database> {
        let name = format!("sbsuite_t_lua_{name}");
        let created = match driver {
            Driver::Mysql => client(
                driver,
                None,
                &format!("DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}"),
            ),
            Driver::Pgsql => client(
                driver,
                None,
                &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            )
            .and_then(|_| client(driver, None, &format!("CREATE DATABASE {name}"))),
        };
        if let Err(e) = created {
            let server = match driver {
                Driver::Mysql => "MariaDB/MySQL as root@127.0.0.1:3306",
                Driver::Pgsql => "PostgreSQL as postgres@127.0.0.1:5432",
            };
            common::skip(&format!(
                "cannot create database {name} on {server} (.ci/run starts both): {}",
                e.trim()
            ));
            return None;
        }
        Some(Database { driver, name })
    }

    /// The connection options of both tools for this database.
    fn args(&self) -> Vec<String> {
        match self.driver {
            Driver::Mysql => strings(&[
                "--db-driver=mysql",
                "--mysql-host=127.0.0.1",
                "--mysql-port=3306",
                "--mysql-user=root",
                &format!("--mysql-db={}", self.name),
            ]),
            Driver::Pgsql => strings(&[
                "--db-driver=pgsql",
                "--pgsql-host=127.0.0.1",
                "--pgsql-port=5432",
                "--pgsql-user=postgres",
                &format!("--pgsql-db={}", self.name),
            ]),
        }
    }

    /// The server's statement counters: MariaDB's global `Com_*` ([`MYSQL_COUNTERS`]); for
    /// PostgreSQL the sums over this database's tables of rows inserted, updated, deleted and
    /// of sequential and index scans, once every other session of the database has ended and
    /// the numbers stopped moving (a backend reports its counts as it exits, a moment after
    /// the client is gone).
    fn counters(&self) -> BTreeMap<String, i64> {
        match self.driver {
            Driver::Mysql => {
                let list = MYSQL_COUNTERS
                    .iter()
                    .map(|c| format!("'{c}'"))
                    .collect::<Vec<_>>()
                    .join(",");
                let out = client(
                    self.driver,
                    None,
                    &format!("SHOW GLOBAL STATUS WHERE Variable_name IN ({list})"),
                )
                .unwrap_or_else(|e| panic!("SHOW GLOBAL STATUS: {e}"));
                parse_counters(&out)
            }
            Driver::Pgsql => {
                let sql = "SELECT 'n_tup_ins', COALESCE(sum(n_tup_ins), 0) FROM pg_stat_user_tables \
                    UNION ALL SELECT 'n_tup_upd', COALESCE(sum(n_tup_upd), 0) FROM pg_stat_user_tables \
                    UNION ALL SELECT 'n_tup_del', COALESCE(sum(n_tup_del), 0) FROM pg_stat_user_tables \
                    UNION ALL SELECT 'seq_scan', COALESCE(sum(seq_scan), 0) FROM pg_stat_user_tables \
                    UNION ALL SELECT 'idx_scan', COALESCE(sum(idx_scan), 0) FROM pg_stat_user_tables";
                let others = format!(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = '{}' AND pid <> pg_backend_pid()",
                    self.name
                );
                let start = Instant::now();
                let mut last: Option<BTreeMap<String, i64>> = None;
                loop {
                    let busy = client(self.driver, Some(&self.name), &others)
                        .unwrap_or_else(|e| panic!("pg_stat_activity: {e}"));
                    let now = parse_counters(
                        &client(self.driver, Some(&self.name), sql)
                            .unwrap_or_else(|e| panic!("pg_stat_user_tables: {e}")),
                    );
                    let settled = busy.trim() == "0" && last.as_ref() == Some(&now);
                    if settled || start.elapsed() > Duration::from_secs(60) {
                        return now;
                    }
                    last = Some(now);
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        }
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        let sql = match self.driver {
            Driver::Mysql => format!("DROP DATABASE IF EXISTS {}", self.name),
            Driver::Pgsql => format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        };
        let _ = client(self.driver, None, &sql);
    }
}

/// `name<TAB>value` lines → map.
fn parse_counters(out: &str) -> BTreeMap<String, i64> {
    out.lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(k, v)| {
            (
                k.to_string(),
                v.trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("counter {k}: {v}")),
            )
        })
        .collect()
}

fn delta(before: &BTreeMap<String, i64>, after: &BTreeMap<String, i64>) -> BTreeMap<String, i64> {
    after
        .iter()
        .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0)))
        .collect()
}

/// The counters where sbsuite may count a few more than sysbench: its session setup (the
/// MySQL client's settings query per connection) and the native engine's checks before a run
/// (`max_connections`, `MAX(id)` of each table) are reads the scripts never asked for.
const SETUP_READS: [&str; 2] = ["Com_select", "idx_scan"];

/// At most this many setup reads (see [`SETUP_READS`]).
const SETUP_SLACK: i64 = 8;

/// The server counted the same statements for sysbench (`reference`) and sbsuite (`got`):
/// every counter equal, except that [`SETUP_READS`] may exceed sysbench's by up to
/// [`SETUP_SLACK`].
fn assert_same_statements(
    reference: &BTreeMap<String, i64>,
    got: &BTreeMap<String, i64>,
    context: &str,
) {
    assert_same_statements_but(reference, got, &[], context);
}

/// [`assert_same_statements`] without the counters named in `ignore`.
fn assert_same_statements_but(
    reference: &BTreeMap<String, i64>,
    got: &BTreeMap<String, i64>,
    ignore: &[&str],
    context: &str,
) {
    let keys: std::collections::BTreeSet<&String> = reference
        .keys()
        .chain(got.keys())
        .filter(|k| !ignore.contains(&k.as_str()))
        .collect();
    for k in keys {
        let (r, g) = (
            reference.get(k).copied().unwrap_or(0),
            got.get(k).copied().unwrap_or(0),
        );
        let ok = if SETUP_READS.contains(&k.as_str()) {
            (r..=r + SETUP_SLACK).contains(&g)
        } else {
            r == g
        };
        assert!(
            ok,
            "the server counted {k} = {g} for sbsuite, {r} for sysbench\nsysbench: {reference:?}\nsbsuite:  {got:?}\n{context}"
        );
    }
}

/// One measured run: what it printed and how the server's counters moved meanwhile.
struct Measurement {
    seen: Seen,
    counters: BTreeMap<String, i64>,
}

fn measure(tool: Tool, db: &Database, args: &[String]) -> Measurement {
    let before = db.counters();
    let seen = seen(&run(tool, args));
    let after = db.counters();
    Measurement {
        seen,
        counters: delta(&before, &after),
    }
}

/// `script prepare`, a measured `script run`, `script cleanup` with `tool`; asserts prepare
/// and cleanup succeed.
fn prepare_run_cleanup(
    tool: Tool,
    db: &Database,
    script: &str,
    options: &[&str],
    run_options: &[&str],
) -> Measurement {
    let mut common_args = vec![script.to_string()];
    common_args.extend(db.args());
    common_args.extend(strings(options));
    let with = |command: &str, extra: &[&str]| {
        let mut a = common_args.clone();
        a.extend(strings(extra));
        a.push(command.to_string());
        a
    };
    // leftovers of an interrupted earlier run
    run(tool, &with("cleanup", &[]));
    let prepared = run(tool, &with("prepare", &[]));
    assert_eq!(
        prepared.code,
        Some(0),
        "{tool:?} {script} prepare: {}\n{}",
        prepared.stdout,
        prepared.stderr
    );
    let m = measure(tool, db, &with("run", run_options));
    let cleaned = run(tool, &with("cleanup", &[]));
    assert_eq!(
        cleaned.code,
        Some(0),
        "{tool:?} {script} cleanup: {}\n{}",
        cleaned.stdout,
        cleaned.stderr
    );
    m
}

/// [`prepare_run_cleanup`] with both tools: the same `@ ` lines, exit code, SQL statistics and
/// server counters.
fn compare_db_script(
    driver: Driver,
    db_name: &str,
    script: &str,
    options: &[&str],
    run_options: &[&str],
) {
    if !have_sysbench() {
        return;
    }
    let _lock = server_lock();
    let Some(db) = Database::create(driver, db_name) else {
        return;
    };
    let mut a = prepare_run_cleanup(Tool::Sysbench, &db, script, options, run_options);
    let b = prepare_run_cleanup(Tool::Sbsuite, &db, script, options, run_options);
    let what = format!("{script} on {driver:?}");
    if matches!(driver, Driver::Pgsql) && script.ends_with("/sql.lua") {
        // The one deliberate difference: sysbench 1.0.20's pgsql driver ignores a NULL bind
        // (`p:set(nil)`) and inserts the values bound before; sbsuite binds NULL, as both
        // tools' MySQL drivers do.
        for line in &mut a.seen.marked {
            if line.starts_with("@ types 2|") {
                *line = "@ types 2|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL".into();
            }
        }
    }
    assert_same(&what, &a.seen, &b.seen);
    assert_eq!(a.seen.code, Some(0), "{}", context(&what, &a.seen, &b.seen));
    assert_eq!(
        sql_statistics(&a.seen.stdout),
        sql_statistics(&b.seen.stdout),
        "SQL statistics differ: {}",
        context(&what, &a.seen, &b.seen)
    );
    assert_same_statements(&a.counters, &b.counters, &context(&what, &a.seen, &b.seen));
    assert!(
        a.counters.values().any(|&v| v > 0),
        "the server counted nothing: {:?}",
        a.counters
    );
}

// ---------------------------------------------------------------------------------------------
// Scripts without a server

#[test]
fn rand_draws_have_sysbench_ranges_shapes_and_formats() {
    if !have_sysbench() {
        return;
    }
    for rand_type in ["", "uniform", "gaussian", "pareto", "special"] {
        let mut args = strings(&["tests/lua/rand.lua", "--threads=1", "--events=1"]);
        if !rand_type.is_empty() {
            args.push(format!("--rand-type={rand_type}"));
        }
        args.push("run".into());
        let (a, b) = both(&args);
        assert_same(&format!("rand.lua --rand-type={rand_type}"), &a, &b);
        assert_eq!(a.code, Some(0));
        assert_eq!(a.marked.last().map(String::as_str), Some("@ done"));
    }
}

#[test]
fn rand_seed_makes_one_worker_stream_reproducible() {
    if !have_sysbench() {
        return;
    }
    // The raw draws (`# ` lines) differ between the tools, but each tool repeats its own.
    let draws = |tool: Tool, seed: &str| {
        let m = run(
            tool,
            &strings(&[
                "tests/lua/rand.lua",
                "--threads=1",
                "--events=1",
                &format!("--rand-seed={seed}"),
                "run",
            ]),
        );
        assert_eq!(m.code, Some(0), "{tool:?}: {}\n{}", m.stdout, m.stderr);
        let raw: Vec<String> = lines_with(&m.stdout, "# ")
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(raw.len(), 1, "{tool:?}: {}", m.stdout);
        raw[0].clone()
    };
    for tool in TOOLS {
        assert_eq!(draws(tool, "42"), draws(tool, "42"), "{tool:?}");
        assert_ne!(draws(tool, "42"), draws(tool, "43"), "{tool:?}");
    }
}

#[test]
fn rand_type_unknown_fails_like_sysbench() {
    if !have_sysbench() {
        return;
    }
    let (a, b) = both(&strings(&[
        "tests/lua/rand.lua",
        "--events=1",
        "--rand-type=foo",
        "run",
    ]));
    assert_eq!(a.code, Some(1));
    assert_eq!(a.code, b.code, "{}", context("--rand-type=foo", &a, &b));
    assert_eq!(
        lines_with(&a.stdout, "FATAL:"),
        lines_with(&b.stdout, "FATAL:"),
        "{}",
        context("--rand-type=foo", &a, &b)
    );
}

#[test]
fn help_lists_declared_options_byte_for_byte() {
    if !have_sysbench() {
        return;
    }
    let (a, b) = both(&strings(&["tests/lua/cmdline.lua", "help"]));
    assert_eq!(a.code, Some(0));
    assert_eq!(a.code, b.code, "{}", context("help", &a, &b));
    assert_eq!(
        without_banner(&a.stdout),
        without_banner(&b.stdout),
        "{}",
        context("help", &a, &b)
    );
    assert!(
        a.stdout.contains("cmdline.lua options:\n  --big-number=N "),
        "{}",
        a.stdout
    );
}

#[test]
fn options_of_every_type_reach_sysbench_opt_with_their_types() {
    if !have_sysbench() {
        return;
    }
    for extra in [
        &[][..],
        &[
            "--int-opt=5",
            "--list-opt=a,,b",
            "--bool-opt",
            "--bool-on=off",
            "--size-opt=2M",
            "--string-empty",
            "--string-opt=",
            "--late-opt=x",
            "--threads=2",
            "--events=7",
            "--rand-type=pareto",
        ][..],
        &[
            "--size-opt=3G",
            "--double-opt=2.5e3",
            "--bool-opt=true",
            "--list-untyped=",
        ][..],
    ] {
        let mut args = strings(&["tests/lua/cmdline.lua", "show"]);
        args.extend(strings(extra));
        let (a, b) = both(&args);
        assert_same(&format!("cmdline.lua show {extra:?}"), &a, &b);
        assert_eq!(a.code, Some(0));
    }
}

#[test]
fn custom_commands_serial_parallel_and_failing_match_sysbench() {
    if !have_sysbench() {
        return;
    }
    // PARALLEL: one state per thread, lines interleave
    let (a, b) = both(&strings(&["tests/lua/cmdline.lua", "par", "--threads=3"]));
    assert_same_sorted("par --threads=3", &a, &b);
    assert_eq!(a.code, Some(0));
    assert_eq!(
        a.marked
            .iter()
            .filter(|l| l.starts_with("@ par tid="))
            .count(),
        3
    );
    // parallel on one thread runs in the main state
    let (a, b) = both(&strings(&["tests/lua/cmdline.lua", "par", "--threads=1"]));
    assert_same("par --threads=1", &a, &b);
    // returning false fails; an error fails naming file and line
    for (cmd, code) in [("fail", 1), ("raise", 1)] {
        let (a, b) = both(&strings(&["tests/lua/cmdline.lua", cmd]));
        assert_same(cmd, &a, &b);
        assert_eq!(a.code, Some(code), "{}", context(cmd, &a, &b));
        assert_eq!(
            lines_with(&a.stdout, "FATAL:"),
            lines_with(&b.stdout, "FATAL:"),
            "{}",
            context(cmd, &a, &b)
        );
    }
    let fatal = run(
        Tool::Sysbench,
        &strings(&["tests/lua/cmdline.lua", "raise"]),
    );
    let line = line_of("tests/lua/cmdline.lua", "error(\"raised by a command\")");
    assert!(
        fatal.stdout.contains(&format!(
            "tests/lua/cmdline.lua:{line}: raised by a command"
        )),
        "{}",
        fatal.stdout
    );
}

#[test]
fn command_line_errors_exit_and_say_what_sysbench_says() {
    if !have_sysbench() {
        return;
    }
    for (extra, command) in [
        (&["--int-opt=abc"][..], "show"),
        (&["--int-opt=99999999999"][..], "show"),
        (&["--bool-opt=maybe"][..], "show"),
        (&["--nope=1"][..], "show"),
        (&[][..], "nosuch"),
        (&[][..], "prepare"),
        (&[][..], ""),
    ] {
        let mut args = strings(&["tests/lua/cmdline.lua"]);
        args.extend(strings(extra));
        if !command.is_empty() {
            args.push(command.to_string());
        }
        let what = format!("cmdline.lua {extra:?} {command}");
        let (a, b) = both(&args);
        assert_eq!(a.code, b.code, "{}", context(&what, &a, &b));
        // sysbench's lines first, then only sbsuite's own explanation (`error: …`), as for
        // every line `sbsuite sysbench` refuses.
        let ours: Vec<&str> = b.stderr.trim().lines().collect();
        let theirs: Vec<&str> = a.stderr.trim().lines().collect();
        assert!(
            ours.len() >= theirs.len()
                && ours[..theirs.len()] == theirs[..]
                && ours[theirs.len()..]
                    .iter()
                    .all(|l| l.starts_with("error: ")),
            "{}",
            context(&what, &a, &b)
        );
        // A refused line: sbsuite checks the options before it runs the script's top level
        // (sysbench runs it first, so its prints come before the error).
        if a.code == Some(0) {
            assert_eq!(a.marked, b.marked, "{}", context(&what, &a, &b));
        }
    }
}

#[test]
fn report_hooks_print_sysbench_report_layouts() {
    if !have_sysbench() {
        return;
    }
    // Timings: one measured run at a time on this machine.
    let _lock = server_lock();
    for format in ["csv", "json", "default", "none"] {
        let args = strings(&[
            "tests/lua/hooks.lua",
            "--threads=1",
            "--events=300",
            "--report-interval=1",
            &format!("--format={format}"),
            "run",
        ]);
        let (a, b) = both(&args);
        let what = format!("hooks.lua --format={format}");
        assert_same(&what, &a, &b);
        assert_eq!(a.code, Some(0));
        assert_eq!(
            report_shapes(&a.stdout),
            report_shapes(&b.stdout),
            "{}",
            context(&what, &a, &b)
        );
        assert!(
            a.marked
                .contains(&"@ thread_done attempts=306 restarts=6".to_string()),
            "{}",
            a.stdout
        );
    }
}

#[test]
fn histogram_prints_sysbench_layout_byte_for_byte() {
    if !have_sysbench() {
        return;
    }
    let (a, b) = both(&strings(&[
        "tests/lua/histogram.lua",
        "--threads=1",
        "--events=1",
        "run",
    ]));
    assert_same("histogram.lua", &a, &b);
    // from the first `@ ` line to the last `@ end`: the histograms between the markers
    let part = |s: &str| -> String {
        let start = s
            .find("@ new type=")
            .expect("histogram.lua printed its markers");
        let end = s.rfind("@ end").expect("histogram.lua printed its markers");
        s[start..end].to_string()
    };
    assert_eq!(
        part(&a.stdout),
        part(&b.stdout),
        "{}",
        context("histogram", &a, &b)
    );
    assert!(
        a.stdout
            .contains("       value  ------------- distribution ------------- count\n"),
        "{}",
        a.stdout
    );
}

#[test]
fn lua_errors_name_the_script_and_line_with_sysbench_exit_codes() {
    if !have_sysbench() {
        return;
    }
    let raise = line_of("tests/lua/errors.lua", "error(\"failing in \" .. where)");
    let top = line_of(
        "tests/lua/errors.lua",
        "error(\"failing at the top level\")",
    );
    let nil_call = line_of("tests/lua/errors.lua", "t.missing.field = 1");
    for (args, code) in [
        (&["--where=top", "run"][..], 1),
        (&["--where=init", "run"][..], 1),
        (&["--where=thread_init", "run"][..], 1),
        (&["--where=event", "run"][..], 1),
        (&["--where=nil_call", "run"][..], 1),
        (&["--where=done", "run"][..], 0),
        (&["--where=prepare", "prepare"][..], 1),
        (&["--where=cleanup", "cleanup"][..], 1),
        (&["--where=command", "explode"][..], 1),
        (&["--where=none", "explode"][..], 0),
    ] {
        let mut all = strings(&["tests/lua/errors.lua", "--threads=1", "--events=3"]);
        all.extend(strings(args));
        let what = format!("errors.lua {args:?}");
        let (a, b) = both(&all);
        assert_eq!(a.code, Some(code), "{}", context(&what, &a, &b));
        assert_eq!(a.code, b.code, "{}", context(&what, &a, &b));
        assert_eq!(a.marked, b.marked, "{}", context(&what, &a, &b));
        let fatal_a = lines_with(&a.stdout, "FATAL:");
        assert_eq!(
            fatal_a,
            lines_with(&b.stdout, "FATAL:"),
            "{}",
            context(&what, &a, &b)
        );
        if args[0] != "--where=none" {
            let at = match args[0] {
                "--where=top" => format!("errors.lua:{}: failing at the top level", top),
                "--where=nil_call" => {
                    format!("errors.lua:{nil_call}: attempt to index field 'missing'")
                }
                w => format!("errors.lua:{raise}: failing in {}", &w["--where=".len()..]),
            };
            assert!(
                fatal_a
                    .iter()
                    .any(|l| l.contains(&format!("tests/lua/{at}"))),
                "no FATAL line names tests/lua/{at}: {}",
                context(&what, &a, &b)
            );
        }
    }
    for args in [&["run"][..], &[][..]] {
        let mut all = strings(&["tests/lua/errors_syntax.lua"]);
        all.extend(strings(args));
        let (a, b) = both(&all);
        let what = format!("errors_syntax.lua {args:?}");
        assert_eq!(a.code, Some(1), "{}", context(&what, &a, &b));
        assert_eq!(a.code, b.code, "{}", context(&what, &a, &b));
        assert_eq!(
            lines_with(&a.stdout, "FATAL:"),
            vec!["FATAL: tests/lua/errors_syntax.lua:6: unexpected symbol near '='"]
        );
        assert_eq!(
            lines_with(&a.stdout, "FATAL:"),
            lines_with(&b.stdout, "FATAL:"),
            "{}",
            context(&what, &a, &b)
        );
    }
    let (a, b) = both(&strings(&["tests/lua/no_such_script.lua", "run"]));
    assert_eq!(a.code, Some(1));
    assert_eq!(a.code, b.code, "{}", context("missing script", &a, &b));
}

// ---------------------------------------------------------------------------------------------
// Scripts against the servers

#[test]
fn sql_api_matches_sysbench_on_mariadb() {
    compare_db_script(
        Driver::Mysql,
        "sql",
        "tests/lua/sql.lua",
        &[],
        &["--threads=1", "--events=3"],
    );
}

#[test]
fn sql_api_with_mysql_ignore_errors_matches_sysbench() {
    // 1062 ignorable through the option: the hook is not asked, the event still restarts
    compare_db_script(
        Driver::Mysql,
        "sql_ignore",
        "tests/lua/sql.lua",
        &["--mysql-ignore-errors=1062"],
        &["--threads=1", "--events=3"],
    );
}

#[test]
fn sql_api_matches_sysbench_on_postgresql() {
    compare_db_script(
        Driver::Pgsql,
        "sql",
        "tests/lua/sql.lua",
        &[],
        &["--threads=1", "--events=3"],
    );
}

#[test]
fn legacy_api_matches_sysbench_on_mariadb() {
    compare_db_script(
        Driver::Mysql,
        "legacy",
        "tests/lua/legacy.lua",
        &["--legacy-rows=20", "--legacy-name=abc"],
        &["--threads=1", "--events=5"],
    );
}

#[test]
fn legacy_api_matches_sysbench_on_postgresql() {
    compare_db_script(
        Driver::Pgsql,
        "legacy",
        "tests/lua/legacy.lua",
        &["--legacy-rows=20", "--legacy-name=abc"],
        &["--threads=1", "--events=5"],
    );
}

/// ffi.lua has no prepare or cleanup: one measured run per tool.
fn compare_ffi(driver: Driver) {
    if !have_sysbench() {
        return;
    }
    let _lock = server_lock();
    let Some(db) = Database::create(driver, "ffi") else {
        return;
    };
    let mut args = strings(&["tests/lua/ffi.lua"]);
    args.extend(db.args());
    args.extend(strings(&["--threads=2", "--events=20", "run"]));
    let a = measure(Tool::Sysbench, &db, &args);
    let b = measure(Tool::Sbsuite, &db, &args);
    let what = format!("ffi.lua on {driver:?}");
    assert_same(&what, &a.seen, &b.seen);
    let stats = sql_statistics(&a.seen.stdout);
    // 20 real SELECTs + 40 FFI reads, 20 writes, 20 other, 20 errors, 20 reconnects
    assert_eq!(
        stats,
        vec![
            ("read:", 60),
            ("write:", 20),
            ("other:", 20),
            ("total:", 100),
            ("transactions:", 20),
            ("queries:", 100),
            ("ignored errors:", 20),
            ("reconnects:", 20),
        ]
    );
    assert_eq!(
        stats,
        sql_statistics(&b.seen.stdout),
        "{}",
        context(&what, &a.seen, &b.seen)
    );
    assert_same_statements(&a.counters, &b.counters, &context(&what, &a.seen, &b.seen));
}

#[test]
fn ffi_counter_increments_count_as_under_sysbench_on_mariadb() {
    compare_ffi(Driver::Mysql);
}

#[test]
fn ffi_counter_increments_count_as_under_sysbench_on_postgresql() {
    compare_ffi(Driver::Pgsql);
}

/// `con:query()` of 150,000 rows (over the 100,000-row bound of administrative queries, which
/// once failed it): the same `rs.nrows`, rows and statements as sysbench, and the result costs
/// sbsuite no more memory than sysbench's (peak RSS of a run that reads it, less that of a run
/// that only selects 1: about 8 MB against sysbench's 11 MB here).
fn big_result(driver: Driver) {
    compare_db_script(
        driver,
        "big",
        "tests/lua/big_result.lua",
        &[],
        &["--threads=1", "--events=1"],
    );
    if !have_sysbench() {
        return;
    }
    let _lock = server_lock();
    let Some(db) = Database::create(driver, "big_rss") else {
        return;
    };
    let mut args = strings(&["tests/lua/big_result.lua"]);
    args.extend(db.args());
    let with = |extra: &[&str]| {
        let mut a = args.clone();
        a.extend(strings(extra));
        a
    };
    let prepared = run(Tool::Sysbench, &with(&["prepare"]));
    assert_eq!(prepared.code, Some(0), "{}", prepared.stderr);
    let mut growth = Vec::new();
    for tool in TOOLS {
        let all = run(tool, &with(&["--threads=1", "--events=1", "run"]));
        let none = run(
            tool,
            &with(&["--threads=1", "--events=1", "--big-fetch=off", "run"]),
        );
        assert_eq!(
            (all.code, none.code),
            (Some(0), Some(0)),
            "{tool:?}: {}",
            all.stderr
        );
        assert!(
            all.stdout.contains("@ nrows=150000 nfields=2"),
            "{}",
            all.stdout
        );
        growth.push(all.max_rss_kib - none.max_rss_kib);
    }
    run(Tool::Sysbench, &with(&["cleanup"]));
    let (theirs, ours) = (growth[0], growth[1]);
    assert!(
        ours <= theirs + 2048,
        "150,000 rows cost sbsuite {ours} KiB, sysbench {theirs} KiB"
    );
}

#[test]
fn a_result_of_150000_rows_reads_as_under_sysbench_on_mariadb() {
    big_result(Driver::Mysql);
}

#[test]
fn a_result_of_150000_rows_reads_as_under_sysbench_on_postgresql() {
    big_result(Driver::Pgsql);
}

// ---------------------------------------------------------------------------------------------
// sysbench's stock scripts forced through Lua

/// How a stock script is named on the command line.
#[derive(Clone, Copy)]
enum Named {
    Name,
    Lua,
    Path,
}

/// `oltp_point_select` and `oltp_read_write` for a fixed number of events on one thread: run by
/// sysbench from /usr/share/sysbench, by `sbsuite sysbench --lua NAME` and by the native engine
/// (`sbsuite sysbench NAME`, and the stock file's path, which maps to it), on the same
/// prepared table; the server must count the same statements for all of them.
fn stock_scripts_statement_mix(driver: Driver) {
    if !have_sysbench() {
        return;
    }
    if !Path::new("/usr/share/sysbench/oltp_read_write.lua").exists() {
        common::skip(
            "sysbench's stock scripts are not in /usr/share/sysbench (apt-get install sysbench)",
        );
        return;
    }
    let _lock = server_lock();
    let Some(db) = Database::create(driver, "stock") else {
        return;
    };
    let table = strings(&["--tables=1", "--table-size=1000"]);
    for script in ["oltp_point_select", "oltp_read_write"] {
        let stock_path = format!("/usr/share/sysbench/{script}.lua");
        // How the script is named: `Name` (sysbench finds it on its path), `Lua` (`--lua
        // NAME`), `Path` (the stock file's path, which sbsuite maps to its native engine).
        let with = |how: Named, command: &str, extra: &[&str]| {
            let mut a = Vec::new();
            match how {
                Named::Name => a.push(script.to_string()),
                Named::Lua => a.extend(["--lua".to_string(), script.to_string()]),
                Named::Path => a.push(stock_path.clone()),
            }
            a.extend(db.args());
            a.extend(table.clone());
            a.extend(strings(extra));
            a.push(command.to_string());
            a
        };
        let prepared = run(Tool::Sysbench, &with(Named::Name, "prepare", &[]));
        assert_eq!(
            prepared.code,
            Some(0),
            "{}\n{}",
            prepared.stdout,
            prepared.stderr
        );
        let events = ["--threads=1", "--events=200", "--time=0"];
        let runs = [
            ("sysbench", Tool::Sysbench, Named::Name),
            ("sbsuite --lua", Tool::Sbsuite, Named::Lua),
            ("sbsuite native", Tool::Sbsuite, Named::Name),
            (
                "sbsuite with the stock script's path",
                Tool::Sbsuite,
                Named::Path,
            ),
        ];
        let mut seen_counts = Vec::new();
        for (name, tool, how) in runs {
            let m = measure(tool, &db, &with(how, "run", &events));
            assert_eq!(
                m.seen.code,
                Some(0),
                "{name} {script}: {}\n{}",
                m.seen.stdout,
                m.seen.stderr
            );
            // On MySQL an UPDATE that leaves its row as it was counts as "other", so the
            // split of writes and others depends on the data: compare their sum.
            let stats: Vec<(&str, u64)> = sql_statistics(&m.seen.stdout)
                .into_iter()
                .filter_map(|(label, n)| match label {
                    "write:" => None,
                    "other:" => Some((
                        "write: + other:",
                        n + common::report_count(&m.seen.stdout, "write:"),
                    )),
                    _ => Some((label, n)),
                })
                .collect();
            seen_counts.push((name, how, m.counters, stats));
        }
        let cleaned = run(Tool::Sysbench, &with(Named::Name, "cleanup", &[]));
        assert_eq!(
            cleaned.code,
            Some(0),
            "{}\n{}",
            cleaned.stdout,
            cleaned.stderr
        );
        let (_, _, reference, reference_stats) = &seen_counts[0];
        assert!(
            reference.values().any(|&v| v > 0),
            "{script}: the server counted nothing: {reference:?}"
        );
        for (name, how, counts, stats) in &seen_counts[1..] {
            // The native engine sends BEGIN and COMMIT as plain queries where sysbench's
            // script prepares them: the same statements, through another protocol command.
            let protocol: &[&str] = match how {
                Named::Lua => &[],
                Named::Name | Named::Path => &["Com_stmt_execute", "Com_stmt_prepare"],
            };
            assert_same_statements_but(
                reference,
                counts,
                protocol,
                &format!("{script} on {driver:?}: sysbench's statement mix vs {name}'s"),
            );
            assert_eq!(
                reference_stats, stats,
                "{script} on {driver:?}: sysbench's SQL statistics (left) vs {name}'s (right)"
            );
        }
    }
}

#[test]
fn stock_scripts_through_lua_match_sysbench_and_native_on_mariadb() {
    stock_scripts_statement_mix(Driver::Mysql);
}

#[test]
fn stock_scripts_through_lua_match_sysbench_and_native_on_postgresql() {
    stock_scripts_statement_mix(Driver::Pgsql);
}

#[test]
fn shapes_replace_numbers_only() {
    assert_eq!(
        shape("[ 1s ] thds: 4 tps: 12.50 lat (ms,95%): 1.2"),
        "[ Ns ] thds: N tps: N lat (ms,N%): N"
    );
    assert_eq!(shape("1,1,192.42,0.00"), "N,N,N,N");
    assert_eq!(shape("    \"time\":    1,"), "    \"time\":    N,");
}
