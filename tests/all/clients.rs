//! One suite driven from several `local` client processes (`[clients]`, #17), through the real
//! binary: the merged row is the exact merge of the shards kept under `shards/`, ids never
//! collide, `clients` sweeps as a matrix axis, and faults (a killed or frozen agent, Ctrl-C,
//! a coordinator killed with -9, a client of another version) fail or stop within their bound
//! and leave no agent process behind.
//!
//! Agents of a test are found by their working directory: every local agent works in the
//! coordinator's, which is the test's own temporary directory.
//!
//! MariaDB and PostgreSQL tests use their own databases (`sbsuite_t_cl_*`, created and dropped
//! here); without a server they skip, under `CI` they fail.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common;

use common::{read_until_started, sbsuite, sbsuite_process};

/// The rows of one CSV file, as column → value.
fn rows(path: &Path) -> Vec<HashMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            header
                .iter()
                .cloned()
                .zip(rec.iter().map(str::to_string))
                .collect()
        })
        .collect()
}

/// The only run directory of `suite` under `dir/results`.
fn run_dir(dir: &Path, suite: &str) -> PathBuf {
    common::run_dir(&dir.join("results"), suite)
}

/// Processes whose working directory is `dir` (this test's agents, and the coordinator while
/// it runs).
fn processes_in(dir: &Path) -> Vec<u32> {
    let dir = dir.canonicalize().unwrap();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if std::fs::read_link(e.path().join("cwd")).is_ok_and(|c| c == dir) {
            out.push(pid);
        }
    }
    out
}

/// This test's agent processes (their command line ends with `agent`).
fn agents_in(dir: &Path) -> Vec<u32> {
    processes_in(dir)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("agent"))
        })
        .collect()
}

/// Waits (bounded) until no agent of this test is left.
fn assert_no_agents(dir: &Path) {
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        let left = agents_in(dir);
        if left.is_empty() {
            return;
        }
        if Instant::now() > until {
            let what: Vec<String> = left
                .iter()
                .map(|pid| {
                    let status =
                        std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                    let state = status
                        .lines()
                        .find(|l| l.starts_with("State:"))
                        .unwrap_or("");
                    let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                    format!(
                        "{pid} {state} {}",
                        String::from_utf8_lossy(&cmd).replace('\0', " ")
                    )
                })
                .collect();
            panic!("agents left running: {what:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn write_suite(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("suite.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn run_in(dir: &Path, suite: &Path, extra: &[&str]) -> assert_cmd::assert::Assert {
    sbsuite()
        .current_dir(dir)
        .arg("run")
        .arg(suite)
        .args(["--results-dir", "results", "--progress", "off"])
        .args(extra)
        .timeout(Duration::from_secs(240))
        .assert()
}

fn num(row: &HashMap<String, String>, key: &str) -> f64 {
    row[key]
        .parse()
        .unwrap_or_else(|_| panic!("{key} = {:?} in {row:?}", row[key]))
}

/// Checks the merged row of `step` against the shards kept under `shards/`: events and
/// queries add up, and the percentiles are those of the shards' histograms added by hand.
fn assert_exact_merge(run: &Path, step: &str, clients: usize) {
    let merged: Vec<_> = rows(&run.join("results.csv"))
        .into_iter()
        .filter(|r| r["step"] == step)
        .collect();
    assert_eq!(merged.len(), 1, "{merged:?}");
    let m = &merged[0];
    assert_eq!(m["status"], "ok", "{m:?}");
    assert_eq!(num(m, "shards") as usize, clients);
    assert!(num(m, "start_skew_ms") >= 0.0);
    let index = rows(&run.join("shards/clients.csv"));
    let mine: Vec<_> = index.iter().filter(|r| r["step"] == step).collect();
    assert_eq!(mine.len(), clients, "{index:?}");
    // Thread ids: each client's range starts where the previous one ended.
    let mut next = 0;
    for r in &mine {
        assert_eq!(num(r, "thread_offset") as usize, next, "{mine:?}");
        next += num(r, "threads") as usize;
    }
    assert_eq!(next, num(m, "threads") as usize);
    let mut events = 0u64;
    let mut reads = 0u64;
    let mut hist = hdrhistogram::Histogram::<u64>::new(3).unwrap();
    let (mut lo, mut hi) = (f64::MAX, 0.0f64);
    for r in &mine {
        let client = &r["client"];
        let shard_rows = rows(&run.join("shards").join(client).join("results.csv"));
        let s = shard_rows
            .iter()
            .find(|x| x["step"] == step)
            .expect("the shard's row");
        events += num(s, "events") as u64;
        if !s["reads"].is_empty() {
            reads += num(s, "reads") as u64;
        }
        lo = lo.min(num(s, "lat_min"));
        hi = hi.max(num(s, "lat_max"));
        let h = std::fs::read_dir(run.join("shards").join(client).join("histograms"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&format!("{step}-"))
            })
            .expect("the shard's histogram");
        hist.add(sbsuite::results::histogram::read_histogram(&h).unwrap())
            .unwrap();
        assert!(
            std::fs::metadata(run.join("shards").join(client).join("agent.log")).is_ok(),
            "agent.log of {client}"
        );
    }
    assert_eq!(
        num(m, "events") as u64,
        events,
        "merged events = sum of shards"
    );
    if !m["reads"].is_empty() {
        assert_eq!(num(m, "reads") as u64, reads);
    }
    assert_eq!(hist.len(), events, "one histogram entry per event");
    assert_eq!(num(m, "lat_min"), lo);
    assert_eq!(num(m, "lat_max"), hi);
    let (min_ns, max_ns) = ((lo * 1e6).round() as u64, (hi * 1e6).round() as u64);
    for (col, q) in [("lat_p50", 0.5), ("lat_p95", 0.95), ("lat_p99", 0.99)] {
        let by_hand = hist.value_at_quantile(q).clamp(min_ns, max_ns) as f64 / 1e6;
        assert!(
            (num(m, col) - by_hand).abs() < 1e-6,
            "{col}: merged {} vs shards added by hand {by_hand}",
            m[col]
        );
    }
}

const SQLITE_SUITE: &str = r#"
[suite]
name = "cl"

[clients]
list = ["local:3"]

[defaults]
workload = "oltp_read_write"
tables = 1
table_size = 500
time = 2
report_interval = 1

[matrix]
threads = [3, 5]
"#;

#[test]
fn sqlite_three_local_clients_merge_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let suite = write_suite(dir.path(), SQLITE_SUITE);
    let out = run_in(dir.path(), &suite, &[]).success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(stdout.contains("Running on 3 clients"), "{stdout}");
    assert!(stdout.contains("[ 1s ] thds: 5 tps: "), "{stdout}");
    let run = run_dir(dir.path(), "cl");
    // Steps 2 and 3 are the runs (1 prepares, 4 cleans up, here on the coordinator).
    assert_exact_merge(&run, "2", 3);
    assert_exact_merge(&run, "3", 3);
    assert!(!dir.path().join("sbtest.db").exists(), "cleanup ran");
    assert_no_agents(dir.path());
}

/// The shipped TPC-C, a workload the suite declares, runs on three local clients (#27): each
/// agent compiles the definition the coordinator sends, and the merged row, its
/// transactions.csv and the consistency checks after it are those of one process.
#[test]
fn a_custom_workload_runs_on_three_clients_and_merges_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("suites/tpcc.toml");
    let out = sbsuite()
        .current_dir(dir.path())
        .arg("run")
        .arg(&suite)
        .args([
            "--clients",
            "local:3",
            "--set",
            "time=3",
            "--set",
            "matrix.threads=[3]",
        ])
        .args(["--progress", "plain"])
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(stdout.contains("Running on 3 clients"), "{stdout}");
    let run = run_dir(dir.path(), "tpcc");
    assert_exact_merge(&run, "2", 3);
    let checks: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("check '"))
        .collect();
    assert!(
        checks.len() >= 10 && checks.iter().all(|l| l.ends_with("': ok")),
        "{stdout}"
    );
    let all = rows(&run.join("results.csv"));
    let merged = all.iter().find(|r| r["step"] == "2").unwrap();
    let txns = rows(&run.join("transactions.csv"));
    let names: Vec<&str> = txns.iter().map(|t| t["transaction"].as_str()).collect();
    assert_eq!(
        names,
        [
            "new_order",
            "payment",
            "order_status",
            "delivery",
            "stock_level"
        ],
        "{txns:?}"
    );
    // Every event committed or was rolled back on purpose (new_order's 1 %).
    let ended: f64 = txns
        .iter()
        .map(|t| num(t, "count") + num(t, "rollbacks"))
        .sum();
    assert_eq!(ended, num(merged, "events"), "{txns:?}\n{merged:?}");
    assert_no_agents(dir.path());
}

/// A stock-style sysbench Lua script: point selects on its own table, its helpers in a module
/// of its own in a subdirectory (`lib/cl_helpers.lua`). Each thread writes its thread ids,
/// its event count, `sysbench.opt.threads` and where its module was loaded from into
/// `cl_tids` when it ends; cleanup drops the rows, not `cl_tids`, for the test to read.
const LUA_CLIENTS_SCRIPT: &str = r#"
local h = require("lib.cl_helpers")

sysbench.cmdline.options = {
  rows = {"Rows in the table", 50},
}

function prepare()
  h.create(sysbench.sql.driver():connect(), sysbench.opt.rows)
end

function thread_init(tid)
  con = sysbench.sql.driver():connect()
  arg_tid = tid
  done = 0
end

function event()
  h.point_select(con, sysbench.rand.uniform(1, sysbench.opt.rows))
  done = done + 1
end

function thread_done()
  con:query(string.format("INSERT INTO cl_tids VALUES (%d, %d, %d, %d, '%s')",
    sysbench.tid, arg_tid, done, sysbench.opt.threads, h.origin))
  con:disconnect()
end

function cleanup()
  sysbench.sql.driver():connect():query("DROP TABLE IF EXISTS cl_rows")
end
"#;

const LUA_CLIENTS_MODULE: &str = r#"
local M = {}

-- The file this module was loaded from (`@path`).
M.origin = debug.getinfo(1, "S").source

function M.create(con, rows)
  con:query("CREATE TABLE cl_rows (id INTEGER PRIMARY KEY, k INTEGER NOT NULL)")
  con:query("CREATE TABLE cl_tids (tid INTEGER PRIMARY KEY, arg INTEGER, events INTEGER, " ..
    "threads INTEGER, origin VARCHAR(512))")
  for i = 1, rows do
    con:query(string.format("INSERT INTO cl_rows VALUES (%d, %d)", i, i * 3))
  end
end

function M.point_select(con, id)
  local k = con:query_row("SELECT k FROM cl_rows WHERE id = " .. id)
  assert(tonumber(k) == id * 3, "row " .. id .. " has k = " .. tostring(k))
end

return M
"#;

/// A suite's Lua script runs on three local clients (#27): each agent loads the script and
/// the module the coordinator sent (from its own private copy), its threads carry the step's
/// global ids (0..6, each once) and see the step's thread count, the merged row is the exact
/// merge of the shards, and the server's own counters agree: every thread's events, written
/// by the script itself, add up to its shard's and to the merged row, and the server ran at
/// least that many SELECTs.
#[test]
fn a_lua_script_runs_on_three_clients_and_merges_exactly() {
    common::server_lock::share();
    let db = "sbsuite_t_cl_lua";
    let created = cli_sql("mysql", "mysql", &format!("DROP DATABASE IF EXISTS {db}"))
        .and_then(|_| cli_sql("mysql", "mysql", &format!("CREATE DATABASE {db}")));
    if created.is_none() {
        common::skip("no MariaDB reachable through its command-line client (.ci/run starts one)");
        return;
    }
    // The test reads the server's global Com_select: nobody else loads it meanwhile.
    let _lock = common::server_lock::server_lock();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("scripts")).unwrap();
    std::fs::create_dir_all(dir.path().join("lib")).unwrap();
    std::fs::write(dir.path().join("scripts/cl_select.lua"), LUA_CLIENTS_SCRIPT).unwrap();
    std::fs::write(dir.path().join("lib/cl_helpers.lua"), LUA_CLIENTS_MODULE).unwrap();
    let suite = write_suite(
        dir.path(),
        &format!(
            r#"
[suite]
name = "cl_lua"

[clients]
list = ["local:3"]

[target]
driver = "mysql"
hosts = ["127.0.0.1:3306"]
user = "root"
database = "{db}"

[defaults]
workload = {{ script = "scripts/cl_select.lua" }}
rows = 40
threads = 6
time = 0
events = 600
"#
        ),
    );
    let com_select = || -> u64 {
        cli_sql("mysql", db, "SHOW GLOBAL STATUS LIKE 'Com_select'")
            .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            .expect("Com_select")
    };
    let before = com_select();
    let out = run_in(dir.path(), &suite, &[]).success();
    let selects = com_select() - before;
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(stdout.contains("Running on 3 clients"), "{stdout}");
    let run = run_dir(dir.path(), "cl_lua");
    // 1 prepares (here), 2 runs on the clients, 3 cleans up (here).
    assert_exact_merge(&run, "2", 3);
    let merged = rows(&run.join("results.csv"));
    let m = merged.iter().find(|r| r["step"] == "2").unwrap();
    assert_eq!(num(m, "events"), 600.0, "{m:?}");
    assert_eq!(num(m, "reads"), 600.0, "one point select per event: {m:?}");
    assert!(selects >= 600, "the server ran {selects} SELECTs");
    let tids = cli_sql(
        "mysql",
        db,
        "SELECT tid, arg, events, threads, origin FROM cl_tids ORDER BY tid",
    )
    .expect("cl_tids");
    let tids: Vec<Vec<&str>> = tids.lines().map(|l| l.split('\t').collect()).collect();
    let ids: Vec<&str> = tids.iter().map(|t| t[0]).collect();
    assert_eq!(ids, ["0", "1", "2", "3", "4", "5"], "{tids:?}");
    for t in &tids {
        assert_eq!(
            t[1], t[0],
            "thread_init's argument is sysbench.tid: {tids:?}"
        );
        assert_eq!(t[3], "6", "sysbench.opt.threads is the step's: {tids:?}");
        assert!(
            t[4].contains("/sbsuite-agent-lua-") && t[4].ends_with("/modules/lib/cl_helpers.lua"),
            "the module is the agent's copy of the coordinator's: {tids:?}"
        );
    }
    let events_of = |from: usize, n: usize| -> u64 {
        tids[from..from + n]
            .iter()
            .map(|t| t[2].parse::<u64>().unwrap())
            .sum()
    };
    assert_eq!(events_of(0, 6), 600, "{tids:?}");
    // Each client's threads are its range of ids, and their events are its row's.
    for r in rows(&run.join("shards/clients.csv"))
        .iter()
        .filter(|r| r["step"] == "2")
    {
        let (offset, threads) = (num(r, "thread_offset") as usize, num(r, "threads") as usize);
        assert_eq!(events_of(offset, threads), num(r, "events") as u64, "{r:?}");
    }
    let _ = cli_sql("mysql", "mysql", &format!("DROP DATABASE IF EXISTS {db}"));
    assert_no_agents(dir.path());
}

/// A module changed after the suite was loaded (here by the run step's `before_step` hook) is
/// not sent to the clients (#27): the step fails on the coordinator naming the module, and no
/// agent ran the new code.
#[test]
fn a_lua_module_changed_since_the_suite_loaded_is_not_sent() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("lib")).unwrap();
    std::fs::write(
        dir.path().join("changing.lua"),
        "local m = require('lib.changing_mod')\nfunction event() m.f() end\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("lib/changing_mod.lua"),
        "return { f = function() end }\n",
    )
    .unwrap();
    let suite = write_suite(
        dir.path(),
        r#"
[suite]
name = "cl_changed"
on_error = "continue"

[clients]
list = ["local:2"]

[hooks]
before_step = "{% if kind == 'run' %}echo '-- changed' >> lib/changing_mod.lua{% endif %}"

[defaults]
workload = { script = "changing.lua" }
threads = 2
time = 0
events = 10
"#,
    );
    let out = run_in(dir.path(), &suite, &[]).code(1);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.get_output().stdout),
        String::from_utf8_lossy(&out.get_output().stderr)
    );
    assert!(
        text.contains("cannot send its script to the clients: module ")
            && text.contains(
                "lib/changing_mod.lua of script `changing.lua` changed since the suite was loaded"
            ),
        "{text}"
    );
    assert!(!text.contains("Running on 2 clients"), "{text}");
    assert_no_agents(dir.path());
}

#[test]
fn clients_is_a_matrix_axis() {
    let dir = tempfile::tempdir().unwrap();
    let suite = write_suite(
        dir.path(),
        &SQLITE_SUITE
            .replace("threads = [3, 5]", "threads = 4\nclients = [1, 2, 3]")
            .replace("time = 2", "time = 1"),
    );
    let plan = sbsuite()
        .current_dir(dir.path())
        .args(["plan"])
        .arg(&suite)
        .assert()
        .success();
    let text = String::from_utf8_lossy(&plan.get_output().stdout).to_string();
    assert!(text.contains("Clients: local:3"), "{text}");
    run_in(dir.path(), &suite, &[]).success();
    let run = run_dir(dir.path(), "cl");
    let merged = rows(&run.join("results.csv"));
    let shards: Vec<(String, String)> = merged
        .iter()
        .map(|r| (r["clients"].clone(), r["shards"].clone()))
        .collect();
    assert_eq!(
        shards,
        [("1", "1"), ("2", "2"), ("3", "3")].map(|(a, b)| (a.to_string(), b.to_string()))
    );
    for (i, r) in merged.iter().enumerate() {
        assert_exact_merge(&run, &r["step"], i + 1);
    }
}

#[test]
fn bad_client_configs_name_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    for (from, to, expect) in [
        (
            "list = [\"local:3\"]",
            "list = [\"local:0\"]",
            "clients.list",
        ),
        (
            "threads = [3, 5]",
            "threads = 2\nclients = [4]",
            "clients = 4",
        ),
        (
            "threads = [3, 5]",
            "threads = 2",
            "cannot be split over 3 clients",
        ),
        (
            "workload = \"oltp_read_write\"",
            "workload = \"fileio\"\nfile_test_mode = \"seqwr\"",
            "cannot run on [clients]",
        ),
        (
            "list = [\"local:3\"]",
            "list = [\"ssh:bench@client-1\"]",
            "SQLite target is a file on this machine",
        ),
        (
            "list = [\"local:3\"]",
            "list = [\"local:3\"]\ntimeout = 0",
            "timeout",
        ),
    ] {
        let text = SQLITE_SUITE.replace(from, to);
        assert_ne!(text, SQLITE_SUITE);
        let suite = write_suite(dir.path(), &text);
        let out = sbsuite()
            .current_dir(dir.path())
            .arg("validate")
            .arg(&suite)
            .assert()
            .code(2);
        let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(err.contains(expect), "{to}: {err}");
        assert!(err.contains("suite.toml:"), "file and line: {err}");
    }
    // --clients replaces the list (and is checked the same way).
    let suite = write_suite(dir.path(), SQLITE_SUITE);
    let out = sbsuite()
        .current_dir(dir.path())
        .args(["plan", "--clients", "local:2,local"])
        .arg(&suite)
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(text.contains("Clients: local:2, local (3 agents"), "{text}");
    let out = sbsuite()
        .current_dir(dir.path())
        .args(["validate", "--clients", "tcp:x"])
        .arg(&suite)
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("tcp:x"), "{err}");
}

/// A client that says it runs another version is refused before anything is loaded.
#[test]
fn a_version_mismatch_is_refused_before_any_load() {
    let dir = tempfile::tempdir().unwrap();
    // `binary = "/bin/sh"` runs `sh agent`: the script `agent` in the working directory (a
    // script interpreted, not executed, so no other test's fork can hold it open for writing).
    std::fs::write(
        dir.path().join("agent"),
        "echo '{\"type\":\"hello\",\"protocol\":1,\"version\":\"0.0.0-fake\",\"host\":\"old\",\"cores\":1}'\nexec cat >/dev/null\n",
    )
    .unwrap();
    let suite = write_suite(
        dir.path(),
        &SQLITE_SUITE.replace(
            "list = [\"local:3\"]",
            "list = [\"local:3\"]\nbinary = \"/bin/sh\"",
        ),
    );
    let out = run_in(dir.path(), &suite, &[]).code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        err.contains("0.0.0-fake") && err.contains("client local-"),
        "{err}"
    );
    assert!(
        !dir.path().join("sbtest.db").exists(),
        "nothing was prepared"
    );
    assert!(!dir.path().join("results").exists(), "no run directory");
    assert_no_agents(dir.path());
}

/// Starts a long multi-client run in `dir` and returns once its first run step has started.
fn start_long_run(dir: &Path, extra_clients: &str, time: u32) -> std::process::Child {
    let suite = write_suite(
        dir,
        &SQLITE_SUITE
            .replace("threads = [3, 5]", "threads = 3")
            .replace("time = 2", &format!("time = {time}"))
            .replace(
                "list = [\"local:3\"]",
                &format!("list = [\"local:3\"]\n{extra_clients}"),
            ),
    );
    let mut child = sbsuite_process()
        .current_dir(dir)
        .arg("run")
        .arg(&suite)
        .args(["--results-dir", "results", "--progress", "off"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    read_until_started(&mut child, 1);
    child
}

/// Reads the coordinator's stdout until an interval report counts a transaction.
fn read_until_an_event(child: &mut std::process::Child) {
    use std::io::BufRead;

    let stdout = std::io::BufReader::new(child.stdout.as_mut().expect("stdout piped"));
    for line in stdout.lines() {
        let line = line.unwrap();
        let tps = line
            .split_once(" tps: ")
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .and_then(|t| t.parse::<f64>().ok());
        if tps.is_some_and(|t| t > 0.0) {
            return;
        }
    }
    panic!("sbsuite ended before an interval report counted a transaction");
}

fn wait_bounded(child: &mut std::process::Child, bound: Duration) -> std::process::ExitStatus {
    let until = Instant::now() + bound;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("sbsuite did not end within {bound:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn stderr_of(child: &mut std::process::Child) -> String {
    let mut s = String::new();
    use std::io::Read;
    child.stderr.take().unwrap().read_to_string(&mut s).unwrap();
    s
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: a signal to a process of this test.
    assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0);
}

#[test]
fn a_killed_agent_fails_the_step_within_the_bound_and_leaves_no_agent() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = start_long_run(dir.path(), "timeout = 3", 60);
    let agents = agents_in(dir.path());
    assert_eq!(agents.len(), 3, "{agents:?}");
    let killed = Instant::now();
    signal(agents[1], libc::SIGKILL);
    let status = wait_bounded(&mut child, Duration::from_secs(30));
    let took = killed.elapsed();
    assert_eq!(status.code(), Some(1));
    // Detected at once (its output closes), the others stopped and reaped, cleanup run.
    assert!(took < Duration::from_secs(20), "{took:?}");
    let run = run_dir(dir.path(), "cl");
    let row = &rows(&run.join("results.csv"))[0];
    assert_eq!(row["status"], "failed", "{row:?}");
    assert!(row["error"].contains("client local-"), "{row:?}");
    assert!(row["error"].contains("agent ended"), "{row:?}");
    let _ = stderr_of(&mut child);
    assert_no_agents(dir.path());
}

#[test]
fn a_frozen_agent_fails_the_step_within_beat_plus_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = start_long_run(dir.path(), "timeout = 2", 60);
    let agents = agents_in(dir.path());
    assert_eq!(agents.len(), 3, "{agents:?}");
    let frozen = Instant::now();
    signal(agents[2], libc::SIGSTOP);
    let status = wait_bounded(&mut child, Duration::from_secs(30));
    let took = frozen.elapsed();
    assert_eq!(status.code(), Some(1));
    // Beat 1 s + timeout 2 s, then the stop, reap and cleanup.
    assert!(took >= Duration::from_secs(2), "{took:?}");
    assert!(took < Duration::from_secs(15), "{took:?}");
    let run = run_dir(dir.path(), "cl");
    let row = &rows(&run.join("results.csv"))[0];
    assert_eq!(row["status"], "failed", "{row:?}");
    assert!(row["error"].contains("no message for"), "{row:?}");
    assert!(row["error"].contains("its last message"), "{row:?}");
    let _ = stderr_of(&mut child);
    assert_no_agents(dir.path());
}

#[test]
fn ctrl_c_stops_every_agent() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = start_long_run(dir.path(), "", 60);
    assert_eq!(agents_in(dir.path()).len(), 3);
    // Interrupt once events have finished (on a loaded machine, none may have by the time the
    // three agents exist), so the interrupted row must carry them.
    read_until_an_event(&mut child);
    common::interrupt(child.id());
    let status = wait_bounded(&mut child, Duration::from_secs(30));
    assert_eq!(status.code(), Some(130));
    let run = run_dir(dir.path(), "cl");
    let row = &rows(&run.join("results.csv"))[0];
    assert_eq!(row["status"], "interrupted", "{row:?}");
    assert_eq!(row["shards"], "3", "{row:?}");
    assert!(num(row, "events") > 0.0);
    assert_no_agents(dir.path());
}

#[test]
fn a_coordinator_killed_with_9_leaves_no_agent_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = start_long_run(dir.path(), "", 4);
    assert_eq!(agents_in(dir.path()).len(), 3);
    child.kill().unwrap();
    child.wait().unwrap();
    // The agents' stdin closed with the coordinator: they stop and exit on their own.
    assert_no_agents(dir.path());
    let run = run_dir(dir.path(), "cl");
    let out = sbsuite()
        .current_dir(dir.path())
        .args(["run", "--progress", "off", "--resume"])
        .arg(&run)
        .timeout(Duration::from_secs(240))
        .assert();
    let out = out.success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(stdout.contains("Running on 3 clients"), "{stdout}");
    assert_exact_merge(&run, "2", 3);
    assert_no_agents(dir.path());
}

/// `sql` through the server's own command-line client; `None` when it cannot run.
fn cli_sql(driver: &str, db: &str, sql: &str) -> Option<String> {
    let out = match driver {
        "mysql" => std::process::Command::new("mysql")
            .args(["--user=root", "--host=127.0.0.1", "--port=3306", "-N", "-B"])
            .args(["-e", sql])
            .arg(db)
            .output(),
        _ => std::process::Command::new("psql")
            .args(["--host=127.0.0.1", "--port=5432", "--username=postgres"])
            .args([
                "--no-psqlrc",
                "-qAt",
                "-v",
                "ON_ERROR_STOP=1",
                "-d",
                db,
                "-c",
                sql,
            ])
            .output(),
    }
    .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// On a real server: three clients' oltp_insert with ids from the shared unique sequence
/// (`auto_inc = false`) never collide (the server counts every row once, and a duplicate
/// key would have failed the step), and the merged rows are exact.
fn server_clients(driver: &str) {
    common::server_lock::share();
    let db = format!("sbsuite_t_cl_{driver}");
    let admin = if driver == "mysql" {
        "mysql"
    } else {
        "postgres"
    };
    let created = cli_sql(driver, admin, &format!("DROP DATABASE IF EXISTS {db}"))
        .and_then(|_| cli_sql(driver, admin, &format!("CREATE DATABASE {db}")));
    if created.is_none() {
        common::skip(&format!(
            "no {driver} server reachable through its command-line client (.ci/run starts one)"
        ));
        return;
    }
    // The load moves the servers' global counters, which other tests read under this lock.
    let _lock = common::server_lock::server_lock();
    let dir = tempfile::tempdir().unwrap();
    let count = match driver {
        "mysql" => format!(
            "mysql --user=root --host=127.0.0.1 --port=3306 -N -B -e 'SELECT COUNT(*), COUNT(DISTINCT id) FROM sbtest1' {db}"
        ),
        _ => format!(
            "psql --host=127.0.0.1 --port=5432 --username=postgres --no-psqlrc -qAt -F ' ' -d {db} -c 'SELECT COUNT(*), COUNT(DISTINCT id) FROM sbtest1'"
        ),
    };
    let (user, port) = if driver == "mysql" {
        ("root", 3306)
    } else {
        ("postgres", 5432)
    };
    let suite = write_suite(
        dir.path(),
        &format!(
            r#"
[suite]
name = "cl"

[clients]
list = ["local:3"]

[target]
driver = "{driver}"
hosts = ["127.0.0.1:{port}"]
user = "{user}"
database = "{db}"

[hooks]
before_step = "echo {{{{ step }}}} $({count}) >> counts.txt"

[defaults]
tables = 1
table_size = 100
auto_inc = false
time = 2
report_interval = 1
threads = 6

[matrix]
workload = ["oltp_insert", "oltp_read_write"]
"#
        ),
    );
    run_in(dir.path(), &suite, &[]).success();
    let run = run_dir(dir.path(), "cl");
    // oltp_insert gets a fresh dataset: prepare 1, run 2, cleanup 3; then 4, 5, 6.
    assert_exact_merge(&run, "2", 3);
    assert_exact_merge(&run, "5", 3);
    let merged = rows(&run.join("results.csv"));
    let insert = merged.iter().find(|r| r["step"] == "2").unwrap();
    assert_eq!(insert["errors"], "0", "{insert:?}");
    let inserted = num(insert, "events") as u64;
    assert!(inserted > 0);
    // Before the insert run's cleanup: the prepared rows plus every insert, all distinct.
    let counts = std::fs::read_to_string(dir.path().join("counts.txt")).unwrap();
    let lines: Vec<&str> = counts.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("oltp_insert"))
        .unwrap_or_else(|| panic!("{counts}"));
    let before_3 = lines[at + 1];
    let count = |line: &str| -> Vec<u64> {
        line.split_whitespace()
            .skip(1)
            .map(|x| x.parse().unwrap())
            .collect()
    };
    let base = count(lines[at]);
    assert_eq!(base.len(), 2, "{counts}");
    assert_eq!(
        count(before_3),
        [base[0] + inserted, base[0] + inserted],
        "rows before the cleanup: every insert once, all ids distinct\n{counts}"
    );
    let _ = cli_sql(driver, admin, &format!("DROP DATABASE IF EXISTS {db}"));
    assert_no_agents(dir.path());
}

#[test]
fn mariadb_three_clients_merge_exactly_and_ids_never_collide() {
    server_clients("mysql");
}

#[test]
fn postgresql_three_clients_merge_exactly_and_ids_never_collide() {
    server_clients("pgsql");
}

/// examples/clients-local.toml runs as it is on a fresh clone (shortened with --set).
#[test]
fn the_local_clients_example_runs() {
    let dir = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/clients-local.toml");
    sbsuite()
        .current_dir(dir.path())
        .arg("run")
        .arg(&example)
        .args(["--results-dir", "results", "--progress", "off"])
        .args(["--set", "time=1", "--set", "table_size=1000"])
        .timeout(Duration::from_secs(240))
        .assert()
        .success();
    let run = run_dir(dir.path(), "clients-local");
    let merged = rows(&run.join("results.csv"));
    assert_eq!(merged.len(), 4, "{merged:?}");
    for r in &merged {
        assert_exact_merge(&run, &r["step"], num(r, "clients") as usize);
    }
    assert_no_agents(dir.path());
}

// ---------------------------------------------------------------------------------------------
// Hostile agents (#26): a client `binary` that speaks the protocol badly. The coordinator must
// fail that client's step with a message naming it and the bound, within a bounded time and
// without growing: each case runs the real binary with its resident set capped (a regression
// is killed at the cap instead of taking the memory of a shared machine).

/// The most the coordinator may hold while it deals with a hostile agent, KiB: its own
/// baseline is ~20 MB.
const HOSTILE_RSS_KIB: i64 = 150 << 10;

/// The cap at which a regressed coordinator is killed, KiB.
const RSS_CAP_KIB: i64 = 1 << 20;

/// A cpu suite on `clients` whose agent is `sh agent` in the test's directory; `defaults`
/// sets at least `time`.
fn fake_suite(dir: &Path, clients: &str, defaults: &str) -> PathBuf {
    write_suite(
        dir,
        &format!(
            r#"
[suite]
name = "fake"

[clients]
list = ["{clients}"]
binary = "/bin/sh"
timeout = 2

[defaults]
workload = "cpu"
threads = 2
{defaults}
"#
        ),
    )
}

/// Writes the fake agent: it says hello, beats every second in the background (`$B` is the
/// beat's pid, to stop it before a long line that a beat must not cut), answers pings, and
/// runs `on_step` when it gets its step and `on_go` at `go`. It touches `step-received` and
/// `go-received` as it goes, for the tests that act at those moments.
fn fake_agent(dir: &Path, on_step: &str, on_go: &str) {
    let version = env!("CARGO_PKG_VERSION");
    let protocol = sbsuite::clients::protocol::PROTOCOL;
    std::fs::write(
        dir.join("agent"),
        format!(
            r#"echo '{{"type":"hello","protocol":{protocol},"version":"{version}","host":"fake-host","cores":1}}'
(while :; do echo '{{"type":"beat"}}' || exit; sleep 1; done) &
B=$!
while IFS= read -r line; do
  case "$line" in
    *'"type":"ping"'*) seq=${{line##*:}}; echo "{{\"type\":\"pong\",\"seq\":${{seq%\}}}}}}" ;;
    *'"type":"step"'*) : > step-received; {on_step} ;;
    *'"type":"go"'*) : > go-received; {on_go} ;;
  esac
done
"#
        ),
    )
    .unwrap();
}

/// What an agent that starts at once says at `go`.
const STARTED: &str = r#"echo '{"type":"started","clock_ms":0}'"#;

/// One protocol message as the agent's line.
fn line_of(msg: &sbsuite::clients::protocol::AgentMsg) -> String {
    serde_json::to_string(msg).unwrap()
}

/// An interval as an agent of one thread sends it.
fn interval_line() -> String {
    let sample = sbsuite::engine::IntervalSample {
        time_s: 1.0,
        threads: 1,
        eps: 10.0,
        lat_buckets: vec![1; 1024],
        ..Default::default()
    };
    line_of(&sbsuite::clients::protocol::AgentMsg::Interval(Box::new(
        sbsuite::clients::protocol::WireSample::from_sample(&sample),
    )))
}

/// A well-formed outcome of `events` events with `histogram` (base64 V2) and `transactions`.
fn outcome_line(
    events: u64,
    histogram: &str,
    transactions: Vec<sbsuite::clients::protocol::WireTxn>,
) -> String {
    use sbsuite::clients::protocol::{AgentMsg, WireLatency, WireOutcome};
    line_of(&AgentMsg::Outcome(Box::new(WireOutcome {
        seconds: 1.0,
        events,
        sql: None,
        latency: WireLatency {
            min_ms: 0.0,
            avg_ms: 0.0,
            max_ms: 0.0,
            p50_ms: 0.0,
            p95_ms: 0.0,
            p99_ms: 0.0,
            percentile: 95.0,
            pct_ms: 0.0,
            sum_ms: 0.0,
        },
        fairness: [0.0; 4],
        histogram: histogram.to_string(),
        interrupted: false,
        cut_short: None,
        metrics: Vec::new(),
        transactions,
        per_thread: vec![(events, 1)],
        error_codes: Vec::new(),
        open_loop: None,
    })))
}

/// An empty histogram as the engines encode it.
fn empty_histogram() -> String {
    sbsuite::clients::protocol::encode_histogram(&hdrhistogram::Histogram::new(3).unwrap()).unwrap()
}

/// The base64 of an uncompressed V2 histogram header of 3 digits from 1 to `u64::MAX` whose
/// payload length says `claimed`, followed by `payload`.
fn v2_histogram(claimed: u32, payload: &[u8]) -> String {
    use base64::Engine as _;
    let mut b = Vec::new();
    b.extend_from_slice(&0x1c84_9313u32.to_be_bytes());
    b.extend_from_slice(&claimed.to_be_bytes());
    b.extend_from_slice(&0u32.to_be_bytes());
    b.extend_from_slice(&3u32.to_be_bytes());
    b.extend_from_slice(&1u64.to_be_bytes());
    b.extend_from_slice(&u64::MAX.to_be_bytes());
    b.extend_from_slice(&1.0f64.to_be_bytes());
    b.extend_from_slice(payload);
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// Runs `suite` in `dir` to its end (at most `limit`, its RSS capped) and checks what every
/// hostile case must show: exit status 1, the step failed naming the client and `expect`,
/// the coordinator's peak RSS bounded, and no agent left. Returns the failed row's error.
fn hostile_run(dir: &Path, suite: &Path, limit: Duration, expect: &[&str]) -> (Duration, String) {
    let mut cmd = sbsuite_process();
    cmd.current_dir(dir).arg("run").arg(suite).args([
        "--results-dir",
        "results",
        "--progress",
        "off",
    ]);
    let m = common::measure::measured_capped(cmd, limit, Some(RSS_CAP_KIB));
    let shown = format!(
        "exit {:?} after {:?}, peak RSS {} KiB\nstderr: {}",
        m.code,
        m.elapsed,
        m.hwm_kib,
        m.stderr.chars().take(3000).collect::<String>()
    );
    assert!(m.hwm_kib > 0, "its peak was read: {shown}");
    assert!(m.hwm_kib < HOSTILE_RSS_KIB, "the coordinator grew: {shown}");
    assert_eq!(m.code, Some(1), "{shown}");
    let row = rows(&run_dir(dir, "fake").join("results.csv"))
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no row: {shown}"));
    assert_eq!(row["status"], "failed", "{row:?}");
    let error = row["error"].clone();
    assert!(error.contains("client local"), "names the client: {error}");
    for want in expect {
        assert!(error.contains(want), "{want:?} in {error}");
    }
    assert!(m.stderr.contains(expect[0]), "said on stderr: {shown}");
    assert_no_agents(dir);
    (m.elapsed, error)
}

#[test]
fn an_agent_flooding_intervals_is_failed_at_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("interval.json"), interval_line()).unwrap();
    fake_agent(
        dir.path(),
        r#"echo '{"type":"ready"}'"#,
        &format!(r#"{STARTED}; kill $B; yes "$(cat interval.json)""#),
    );
    let suite = fake_suite(dir.path(), "local", "time = 30\nreport_interval = 1");
    let (took, _) = hostile_run(
        dir.path(),
        &suite,
        Duration::from_secs(60),
        &["intervals", "report_interval (1 s) allows"],
    );
    assert!(took < Duration::from_secs(20), "{took:?}");
}

#[test]
fn an_agent_flooding_messages_is_failed_at_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    fake_agent(
        dir.path(),
        r#"echo '{"type":"ready"}'"#,
        &format!(r#"{STARTED}; kill $B; yes '{{"type":"beat"}}'"#),
    );
    let suite = fake_suite(dir.path(), "local", "time = 30");
    let (took, _) = hostile_run(
        dir.path(),
        &suite,
        Duration::from_secs(60),
        &["messages in", "more than an agent sends"],
    );
    assert!(took < Duration::from_secs(20), "{took:?}");
}

/// A histogram whose header claims 0xFFFFFFF0 bytes (the HDR decoder zero-filled 4 GiB).
#[test]
fn a_histogram_that_claims_gigabytes_is_refused_before_it_is_decoded() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("outcome.json"),
        outcome_line(1, &v2_histogram(0xFFFF_FFF0, &[0; 64]), Vec::new()),
    )
    .unwrap();
    fake_agent(
        dir.path(),
        r#"echo '{"type":"ready"}'"#,
        &format!("{STARTED}; kill $B; cat outcome.json; echo"),
    );
    let suite = fake_suite(dir.path(), "local", "time = 1");
    let (took, _) = hostile_run(
        dir.path(),
        &suite,
        Duration::from_secs(60),
        &["does not decode", "claims a payload of 4294967280 bytes"],
    );
    assert!(took < Duration::from_secs(20), "{took:?}");
}

/// 20,000 small histograms, each decoding into the widest HDR range (11.4 GB in all).
#[test]
fn an_outcome_with_thousands_of_histograms_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let small = v2_histogram(2, &[0, 0]);
    let transactions = (0..20_000)
        .map(|i| sbsuite::clients::protocol::WireTxn {
            name: format!("t{i}"),
            statement: false,
            count: 1,
            errors: 0,
            rollbacks: 0,
            histogram: small.clone(),
        })
        .collect();
    std::fs::write(
        dir.path().join("outcome.json"),
        outcome_line(1, &empty_histogram(), transactions),
    )
    .unwrap();
    fake_agent(
        dir.path(),
        r#"echo '{"type":"ready"}'"#,
        &format!("{STARTED}; kill $B; cat outcome.json; echo"),
    );
    let suite = fake_suite(dir.path(), "local", "time = 1");
    hostile_run(
        dir.path(),
        &suite,
        Duration::from_secs(60),
        &["more than 1024 transactions"],
    );
    // Fewer than the protocol's cap, but more than the workload declares (cpu: none).
    let dir = tempfile::tempdir().unwrap();
    let few = (0..3)
        .map(|i| sbsuite::clients::protocol::WireTxn {
            name: format!("t{i}"),
            statement: false,
            count: 1,
            errors: 0,
            rollbacks: 0,
            histogram: empty_histogram(),
        })
        .collect();
    std::fs::write(
        dir.path().join("outcome.json"),
        outcome_line(1, &empty_histogram(), few),
    )
    .unwrap();
    fake_agent(
        dir.path(),
        r#"echo '{"type":"ready"}'"#,
        &format!("{STARTED}; kill $B; cat outcome.json; echo"),
    );
    let suite = fake_suite(dir.path(), "local", "time = 1");
    hostile_run(
        dir.path(),
        &suite,
        Duration::from_secs(60),
        &["3 per-transaction statistics, the workload declares 0"],
    );
}

/// stderr is kept up to its budget, what is dropped is said in agent.log, and the agent
/// fails: without a newline (which grew one line to 4.2 GB) and as a flood of lines.
#[test]
fn an_agent_flooding_stderr_is_cut_at_its_budget() {
    for flood in [
        r"head -c 300000000 /dev/zero | tr '\0' x >&2",
        "yes 'a line of a chatty agent' >&2",
    ] {
        let dir = tempfile::tempdir().unwrap();
        fake_agent(
            dir.path(),
            r#"echo '{"type":"ready"}'"#,
            &format!("{STARTED}; {flood}"),
        );
        let suite = fake_suite(dir.path(), "local", "time = 30");
        let (took, _) = hostile_run(
            dir.path(),
            &suite,
            Duration::from_secs(60),
            &["bytes to stderr", "the rest was dropped"],
        );
        assert!(took < Duration::from_secs(20), "{flood}: {took:?}");
        let log = run_dir(dir.path(), "fake").join("shards/local/agent.log");
        let size = std::fs::metadata(&log).unwrap().len();
        // 1 MiB plus 64 KiB per second alive, and the closing note.
        let budget = (1 << 20) + (64 << 10) * (took.as_secs() + 1) + 4096;
        assert!(size <= budget, "{flood}: agent.log has {size} bytes");
        let text = std::fs::read(&log).unwrap();
        let end = String::from_utf8_lossy(&text[text.len().saturating_sub(600)..]).to_string();
        assert!(
            end.contains("[sbsuite] agent.log ends here") && end.contains("the rest was dropped"),
            "{flood}: {end}"
        );
    }
}

/// An agent that beats but never says `ready` is failed at the step's setup bound (no target:
/// 10 s + beat 1 s + timeout 2 s).
#[test]
fn an_agent_never_ready_is_failed_at_its_deadline() {
    let dir = tempfile::tempdir().unwrap();
    fake_agent(dir.path(), ":", ":");
    let suite = fake_suite(dir.path(), "local", "time = 1");
    let (took, error) = hostile_run(
        dir.path(),
        &suite,
        Duration::from_secs(60),
        &["not ready", "the step's bound"],
    );
    assert!(took >= Duration::from_secs(12), "{took:?}: {error}");
    assert!(took < Duration::from_secs(30), "{took:?}: {error}");
}

/// An agent that beats but never sends its outcome is failed at the run's bound: time 1 s
/// (and 1 % for its clock) + forced_shutdown 1 s + beat 1 s + timeout 2 s after `go`.
#[test]
fn an_agent_that_never_sends_its_outcome_is_failed_at_its_deadline() {
    let dir = tempfile::tempdir().unwrap();
    fake_agent(dir.path(), r#"echo '{"type":"ready"}'"#, STARTED);
    let suite = fake_suite(dir.path(), "local", "time = 1\nforced_shutdown = \"1\"");
    let (took, error) = hostile_run(
        dir.path(),
        &suite,
        Duration::from_secs(60),
        &["no outcome", "time 1 s) × 1.01 + forced_shutdown 1 s"],
    );
    assert!(took >= Duration::from_secs(5), "{took:?}: {error}");
    assert!(took < Duration::from_secs(25), "{took:?}: {error}");
}

/// The first Ctrl-C ends a wait for an agent that never gets ready, and one for an agent that
/// never sends its outcome (after the stop's grace: forced_shutdown 2 s + beat 1 s + timeout
/// 2 s, as a single process gives a stuck worker forced_shutdown after a stop).
#[test]
fn the_first_ctrl_c_ends_every_wait_on_an_agent() {
    for (on_step, on_go, marker, bound) in [
        (":", ":", "step-received", Duration::from_secs(8)),
        (
            r#"echo '{"type":"ready"}'"#,
            STARTED,
            "go-received",
            Duration::from_secs(15),
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        fake_agent(dir.path(), on_step, on_go);
        let suite = fake_suite(dir.path(), "local", "time = 3600\nforced_shutdown = \"2\"");
        let mut child = sbsuite_process()
            .current_dir(dir.path())
            .arg("run")
            .arg(&suite)
            .args(["--results-dir", "results", "--progress", "off"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let until = Instant::now() + Duration::from_secs(30);
        while !dir.path().join(marker).exists() {
            assert!(Instant::now() < until, "the agent never got its {marker}");
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(200));
        let sent = Instant::now();
        common::interrupt(child.id());
        let status = wait_bounded(&mut child, Duration::from_secs(40));
        let took = sent.elapsed();
        let err = stderr_of(&mut child);
        assert_eq!(status.code(), Some(130), "{marker}: {err}");
        assert!(took < bound, "{marker}: {took:?}\n{err}");
        assert_no_agents(dir.path());
    }
}

/// Two agents whose events add beyond 2^64 - 1: the merge fails naming the second, instead of
/// a wrapped total in the row.
#[test]
fn a_merged_sum_that_overflows_fails_the_step() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("outcome.json"),
        outcome_line(u64::MAX / 2 + 1, &empty_histogram(), Vec::new()),
    )
    .unwrap();
    fake_agent(
        dir.path(),
        r#"echo '{"type":"ready"}'"#,
        &format!("{STARTED}; kill $B; cat outcome.json; echo"),
    );
    let suite = fake_suite(dir.path(), "local:2", "time = 1");
    hostile_run(
        dir.path(),
        &suite,
        Duration::from_secs(60),
        &["client local-2", "events overflow the merged total"],
    );
}

/// An agent that closes its output and lives on fails the step at once: its exit is waited
/// for a moment, not forever, and its process group (the `sleep` it started) is killed.
#[test]
fn an_agent_that_closes_its_output_and_lives_on_is_not_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    fake_agent(
        dir.path(),
        r#"echo '{"type":"ready"}'"#,
        &format!("{STARTED}; kill $B; exec >&-; sleep 600"),
    );
    let suite = fake_suite(dir.path(), "local", "time = 30");
    let (took, _) = hostile_run(
        dir.path(),
        &suite,
        Duration::from_secs(60),
        &["agent ended", "its output closed, the process still runs"],
    );
    assert!(took < Duration::from_secs(15), "{took:?}");
    // Its `sleep` too: nothing works in the test's directory any more.
    let left = processes_in(dir.path());
    assert!(left.is_empty(), "left running: {left:?}");
}
