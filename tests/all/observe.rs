//! Watching a run from outside (#18): the `--metrics` OpenMetrics endpoint scraped while real
//! SQLite and MariaDB runs go on, and the refusal of an address in use before anything runs.
//! The endpoint never costs the run memory or time whatever its clients do (#26): an endless
//! request line, a slowloris client, more clients than it serves at once; and the first
//! SIGTERM ends `--metrics-hold` with the run's own exit status.

use crate::common;
use common::db::admin_my as admin;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// `GET path` on `addr`: (status line, body).
fn get(addr: &str, path: &str) -> Option<(String, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    Some((head.lines().next()?.to_string(), body.to_string()))
}

/// The value of the first sample of `metric` whose labels contain every one of `labels`.
fn value(text: &str, metric: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{metric}{{")))
        .find(|l| labels.iter().all(|want| l.contains(want)))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

/// Starts `sbsuite run SUITE --metrics 127.0.0.1:0` in `dir` and returns it with the address
/// it printed it listens on.
fn start(dir: &Path, suite: &Path, extra: &[&str]) -> (Child, String) {
    let (child, addr, _) = start_with_lines(dir, suite, extra);
    (child, addr)
}

/// [`start`], and the rest of the child's stderr, line by line.
fn start_with_lines(
    dir: &Path,
    suite: &Path,
    extra: &[&str],
) -> (Child, String, std::sync::mpsc::Receiver<String>) {
    let mut child = common::sbsuite_process()
        .current_dir(dir)
        .arg("run")
        .arg(suite)
        .args(["--metrics", "127.0.0.1:0", "--progress", "plain"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "sbsuite ended first");
        if let Some(rest) = line.trim().strip_prefix("[sbsuite] metrics: http://") {
            break rest.trim_end_matches("/metrics").to_string();
        }
    };
    // Keep draining stderr so the child never blocks on a full pipe.
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        while err.read_line(&mut line).is_ok_and(|n| n > 0) {
            let _ = tx.send(std::mem::take(&mut line));
        }
    });
    (child, addr, lines)
}

/// Scrapes until `ready` holds for the text, or the deadline passes.
fn scrape_until(addr: &str, what: &str, ready: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some((status, body)) = get(addr, "/metrics") {
            assert_eq!(status, "HTTP/1.1 200 OK");
            if ready(&body) {
                return body;
            }
        }
        assert!(Instant::now() < deadline, "no scrape showed {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The common part of the SQLite and MariaDB tests: a 2-thread run of `time = 4` is step 2 of
/// the plan; its counters grow between two scrapes and its labels are the step's.
fn counters_grow_and_label_the_step(dir: &Path, suite: &Path, run_labels: &[&str]) {
    let (mut child, addr) = start(dir, suite, &[]);
    let events = |t: &str| value(t, "sbsuite_events_total", run_labels).unwrap_or(0.0);
    let first = scrape_until(&addr, "events of the run step", |t| events(t) > 0.0);
    let second = scrape_until(&addr, "more events", |t| events(t) > events(&first));
    let running = value(
        &first,
        "sbsuite_step_state",
        &[run_labels, &["state=\"running\""]].concat(),
    );
    assert_eq!(running, Some(1.0), "{first}");
    let reads = |t: &str| {
        value(
            t,
            "sbsuite_queries_total",
            &[run_labels, &["kind=\"read\""]].concat(),
        )
        .unwrap()
    };
    assert!(reads(&second) > reads(&first), "{second}");
    for m in [
        "sbsuite_transactions_total",
        "sbsuite_errors_total",
        "sbsuite_reconnects_total",
        "sbsuite_rate_events_per_second",
        "sbsuite_latency_seconds_count",
    ] {
        assert!(
            value(&second, m, run_labels).is_some(),
            "{m} missing:\n{second}"
        );
    }
    let p95 = value(
        &second,
        "sbsuite_interval_latency_seconds",
        &[run_labels, &["quantile=\"0.95\""]].concat(),
    );
    assert!(p95.is_some_and(|v| v > 0.0), "{second}");
    assert_eq!(value(&second, "sbsuite_steps", &[]), Some(3.0));
    assert!(second.ends_with("# EOF\n"));
    // The example dashboard only queries metrics that exist.
    let dashboard = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/grafana/sbsuite.json"),
    )
    .unwrap();
    let mut names: Vec<&str> = dashboard
        .match_indices("sbsuite_")
        .map(|(i, _)| {
            let rest = &dashboard[i..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .collect();
    names.dedup();
    assert!(names.len() >= 8, "{names:?}");
    for name in names {
        assert!(
            second.contains(&format!("\n{name}{{")),
            "the dashboard's {name} is not served"
        );
    }
    let (status, _) = get(&addr, "/other").unwrap();
    assert_eq!(status, "HTTP/1.1 404 Not Found");
    assert!(child.wait().unwrap().success());
}

#[test]
fn metrics_of_a_sqlite_run_grow_between_scrapes_with_the_steps_labels() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("s.toml");
    std::fs::write(
        &suite,
        "[suite]\nname = \"watched\"\n\n[defaults]\ntime = 4\ntables = 1\n\n\
         [matrix]\nworkload = [\"oltp_read_only\"]\nthreads = [2]\ntable_size = [500]\n",
    )
    .unwrap();
    let labels = [
        "suite=\"watched\"",
        "step=\"2\"",
        "step_kind=\"run\"",
        "variant=\"default\"",
        "workload=\"oltp_read_only\"",
        "threads=\"2\"",
        "table_size=\"500\"",
    ];
    counters_grow_and_label_the_step(tmp.path(), &suite, &labels);
}

/// A step split over several clients is watched like any other (#27): the agents send live
/// samples, the coordinator merges them, and the endpoint's counters grow during the step.
#[test]
fn metrics_of_a_multi_client_step_grow_between_scrapes() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("s.toml");
    std::fs::write(
        &suite,
        "[suite]\nname = \"watched\"\n\n[clients]\nlist = [\"local:2\"]\n\n\
         [defaults]\ntime = 4\ntables = 1\n\n\
         [matrix]\nworkload = [\"oltp_read_only\"]\nthreads = [2]\ntable_size = [500]\n",
    )
    .unwrap();
    let labels = [
        "suite=\"watched\"",
        "step=\"2\"",
        "step_kind=\"run\"",
        "workload=\"oltp_read_only\"",
        "threads=\"2\"",
    ];
    counters_grow_and_label_the_step(tmp.path(), &suite, &labels);
}

const MARIADB: &str = "127.0.0.1:3306";

#[test]
fn metrics_of_a_mariadb_run_grow_between_scrapes_with_the_steps_labels() {
    let db = "sbsuite_t_observe_metrics";
    let made = admin(&[
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ]);
    if made.is_none() {
        common::skip(&format!(
            "no MySQL/MariaDB server accepts root@{MARIADB} (.ci/run starts one)"
        ));
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("s.toml");
    std::fs::write(
        &suite,
        format!(
            "[suite]\nname = \"watched-mysql\"\n\n[target]\ndriver = \"mysql\"\n\
             hosts = [\"{MARIADB}\"]\nuser = \"root\"\ndatabase = \"{db}\"\n\n\
             [defaults]\ntime = 4\ntables = 1\ntable_size = 500\n\n\
             [matrix]\nworkload = [\"oltp_read_write\"]\nthreads = [2]\n"
        ),
    )
    .unwrap();
    let labels = [
        "suite=\"watched-mysql\"",
        "step=\"2\"",
        "workload=\"oltp_read_write\"",
        "threads=\"2\"",
    ];
    counters_grow_and_label_the_step(tmp.path(), &suite, &labels);
    admin(&[format!("DROP DATABASE IF EXISTS {db}")]);
}

/// A suite of one short cpu run in `dir`, with `[suite] metrics` when given.
fn cpu_suite(dir: &Path, metrics: Option<&str>) -> std::path::PathBuf {
    let key = metrics.map_or(String::new(), |m| format!("metrics = \"{m}\"\n"));
    let suite = dir.join("cpu.toml");
    std::fs::write(
        &suite,
        format!(
            "[suite]\nname = \"busy\"\n{key}\n[defaults]\ntime = 0\nevents = 50\n\n\
             [matrix]\nworkload = [\"cpu\"]\nthreads = [1]\n"
        ),
    )
    .unwrap();
    suite
}

#[test]
fn an_address_in_use_is_refused_before_anything_runs() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");

    // The flag.
    let suite = cpu_suite(tmp.path(), None);
    let out = common::sbsuite()
        .current_dir(tmp.path())
        .args(["run", "cpu.toml", "--metrics", &format!(":{port}")])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "error: --metrics `:{port}`: cannot listen on 127.0.0.1:{port}"
        )),
        "{err}"
    );
    assert!(err.contains("choose another port"), "{err}");
    assert!(out.stdout.is_empty(), "a step ran");
    assert!(!results.exists(), "a results directory was created");

    // The suite key, named as such.
    cpu_suite(tmp.path(), Some(&format!("127.0.0.1:{port}")));
    let out = common::sbsuite()
        .current_dir(tmp.path())
        .args(["run", "cpu.toml"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("error: [suite] metrics `127.0.0.1:"), "{err}");
    assert!(!results.exists());

    // The flag overrides the key.
    let out = common::sbsuite()
        .current_dir(tmp.path())
        .arg("run")
        .arg(&suite)
        .args(["--metrics", "127.0.0.1:0", "-q"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(results.join("busy").is_dir());

    // Not an address at all.
    let out = common::sbsuite()
        .current_dir(tmp.path())
        .args(["run", "cpu.toml", "--metrics", "localhost"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("give HOST:PORT"));
    drop(taken);
}

#[test]
fn metrics_hold_keeps_the_final_values_after_the_suite() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = cpu_suite(tmp.path(), None);
    let (mut child, addr) = start(tmp.path(), &suite, &["--metrics-hold", "30"]);
    let done = scrape_until(&addr, "the suite done", |t| {
        value(t, "sbsuite_steps_done", &[]) == Some(1.0)
    });
    assert_eq!(
        value(&done, "sbsuite_events_total", &["workload=\"cpu\""]),
        Some(50.0),
        "{done}"
    );
    assert_eq!(
        value(&done, "sbsuite_step_state", &["state=\"done\""]),
        Some(1.0)
    );
    child.kill().unwrap();
    let _ = child.wait();
}

/// The committed events schema, compiled with format checks on (`time` is a date-time).
fn events_validator() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/events.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap()
}

/// Every line of `text` parsed and validated against the schema; the events in order.
fn valid_events(text: &str) -> Vec<serde_json::Value> {
    let validator = events_validator();
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    for e in &events {
        let errors: Vec<String> = validator
            .iter_errors(e)
            .map(|err| format!("{} at {}", err, err.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{e}\n{errors:#?}");
        assert_eq!(e["schema"], 1);
    }
    events
}

fn kinds(events: &[serde_json::Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect()
}

/// What both runs must show: the suite's start first and its end last, one step_end per step
/// of the plan, the run step's row and interval samples, the variant applied and restored.
fn check_run_events(events: &[serde_json::Value], steps: usize, workload: &str) {
    let k = kinds(events);
    assert_eq!(k.first(), Some(&"suite_start"), "{k:?}");
    assert_eq!(k.last(), Some(&"suite_end"), "{k:?}");
    for kind in [
        "variant_applied",
        "variant_restored",
        "interval",
        "step_start",
    ] {
        assert!(k.contains(&kind), "no {kind}: {k:?}");
    }
    let start = &events[0];
    assert_eq!(start["steps_total"], steps);
    assert_eq!(start["matrix"]["workload"], serde_json::json!([workload]));
    let ends: Vec<&serde_json::Value> =
        events.iter().filter(|e| e["event"] == "step_end").collect();
    assert_eq!(ends.len(), steps);
    let run = ends.iter().find(|e| e["kind"] == "run").unwrap();
    assert_eq!(run["status"], "done");
    assert_eq!(run["row"]["workload"], workload);
    assert_eq!(run["row"]["status"], "ok");
    assert!(
        run["row"]["tps"].as_str().unwrap().parse::<f64>().unwrap() > 0.0,
        "{run}"
    );
    assert_eq!(run["row"]["run_id"], start["run_id"]);
    let end = events.last().unwrap();
    assert_eq!(end["exit_status"], 0);
    assert_eq!(end["steps_ok"], steps);
}

#[test]
fn events_of_a_sqlite_run_on_stdout_are_pure_json_lines_valid_against_the_schema() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("s.toml"),
        "[suite]\nname = \"evented\"\n\n[defaults]\ntime = 2\nreport_interval = 1\ntables = 1\n\
         table_size = 500\n\n[matrix]\nworkload = [\"oltp_read_only\"]\nthreads = [1]\n\n\
         [hooks]\nbefore_step = \"true\"\nafter_suite = \"false\"\non_error = \"continue\"\n",
    )
    .unwrap();
    let out = common::sbsuite()
        .current_dir(tmp.path())
        .args(["run", "s.toml", "--events", "jsonl"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The reports went to stderr.
    assert!(stderr.contains("SQL statistics:"), "{stderr}");
    let events = valid_events(&String::from_utf8(out.stdout).unwrap());
    check_run_events(&events, 3, "oltp_read_only");
    let hooks: Vec<_> = events.iter().filter(|e| e["event"] == "hook").collect();
    assert_eq!(hooks.len(), 4, "3 before_step and after_suite");
    let last_hook = hooks.last().unwrap();
    assert_eq!(
        (&last_hook["hook"], &last_hook["ok"]),
        (&serde_json::json!("after_suite"), &serde_json::json!(false))
    );
    let warning = events.iter().find(|e| e["event"] == "warning").unwrap();
    assert!(
        warning["message"]
            .as_str()
            .unwrap()
            .contains("after_suite hook failed"),
        "{warning}"
    );
    let intervals = events.iter().filter(|e| e["event"] == "interval").count();
    assert!(intervals >= 1, "report_interval = 1 over 2 s");
}

#[test]
fn events_of_a_mariadb_run_to_a_file_are_valid_against_the_schema() {
    let db = "sbsuite_t_observe_events";
    let made = admin(&[
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ]);
    if made.is_none() {
        common::skip(&format!(
            "no MySQL/MariaDB server accepts root@{MARIADB} (.ci/run starts one)"
        ));
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("s.toml"),
        format!(
            "[suite]\nname = \"evented-mysql\"\n\n[target]\ndriver = \"mysql\"\n\
             hosts = [\"{MARIADB}\"]\nuser = \"root\"\ndatabase = \"{db}\"\n\n\
             [defaults]\ntime = 2\nreport_interval = 1\ntables = 1\ntable_size = 500\n\n\
             [matrix]\nworkload = [\"oltp_read_write\"]\nthreads = [2]\n"
        ),
    )
    .unwrap();
    let out = common::sbsuite()
        .current_dir(tmp.path())
        .args(["run", "s.toml", "--events", "jsonl:events.jsonl"])
        .output()
        .unwrap();
    admin(&[format!("DROP DATABASE IF EXISTS {db}")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // To a file: stdout keeps the reports.
    assert!(String::from_utf8_lossy(&out.stdout).contains("SQL statistics:"));
    let text = std::fs::read_to_string(tmp.path().join("events.jsonl")).unwrap();
    let events = valid_events(&text);
    check_run_events(&events, 3, "oltp_read_write");
    let run_end = events
        .iter()
        .find(|e| e["event"] == "step_end" && e["kind"] == "run")
        .unwrap();
    assert!(
        run_end["row"]["writes"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > 0
    );
}

#[test]
fn the_committed_schemas_are_what_sbsuite_schema_prints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (args, file) in [
        (vec!["schema", "events"], "schemas/events.schema.json"),
        (vec!["schema"], "schemas/suite.schema.json"),
        (vec!["schema", "suite"], "schemas/suite.schema.json"),
    ] {
        let out = common::sbsuite().args(&args).output().unwrap();
        assert!(out.status.success());
        let committed = std::fs::read_to_string(root.join(file)).unwrap();
        assert!(
            String::from_utf8(out.stdout).unwrap() == committed,
            "{file} is stale: run `sbsuite {} > {file}`",
            args.join(" ")
        );
    }
    // The schema itself is a valid draft-07 schema that rejects what is not an event.
    let v = events_validator();
    assert!(!v.is_valid(&serde_json::json!({"schema": 1, "time": "x", "event": "nope"})));
    assert!(!v.is_valid(
        &serde_json::json!({"schema": 2, "time": "2026-12-04T00:00:00Z",
        "event": "warning", "message": "m"})
    ));
    assert!(v.is_valid(
        &serde_json::json!({"schema": 1, "time": "2026-12-04T00:00:00.000Z",
        "event": "warning", "message": "m"})
    ));
}

#[test]
fn a_bad_events_value_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    cpu_suite(tmp.path(), None);
    for bad in ["json", "jsonl:", "csv:x"] {
        let out = common::sbsuite()
            .current_dir(tmp.path())
            .args(["run", "cpu.toml", "--events", bad])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("--events `{bad}`: the format is `jsonl`")),
            "{err}"
        );
        assert!(!tmp.path().join("results").exists());
    }
}

/// Ctrl-C: the interrupted step ends `interrupted`, the rest `skipped` or cleaned up, and the
/// last event says the run was interrupted and exits 130.
#[test]
fn an_interrupted_run_ends_its_events_with_exit_status_130() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("s.toml"),
        "[suite]\nname = \"stopped\"\n\n[defaults]\ntime = 60\nevents = 0\n\n\
         [matrix]\nworkload = [\"cpu\"]\nthreads = [1, 2]\n",
    )
    .unwrap();
    let suite = dir.join("s.toml");
    let file = dir.join("events.jsonl");
    let (mut child, _) = common::spawn_until_started(&[
        "run",
        suite.to_str().unwrap(),
        "--results-dir",
        dir.join("results").to_str().unwrap(),
        "--events",
        &format!("jsonl:{}", file.display()),
    ]);
    common::interrupt(child.id());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let events = valid_events(&std::fs::read_to_string(&file).unwrap());
    let ends: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["event"] == "step_end")
        .map(|e| (e["name"].as_str().unwrap(), e["status"].as_str().unwrap()))
        .collect();
    assert_eq!(ends, [("cpu-t1", "interrupted"), ("cpu-t2", "skipped")]);
    let end = events.last().unwrap();
    assert_eq!(end["event"], "suite_end");
    assert_eq!(end["interrupted"], true);
    assert_eq!(end["exit_status"], 130);
    assert_eq!(end["steps_interrupted"], 1);
}

/// A cpu run of a minute, for the tests that attack its endpoint while it measures.
fn long_cpu_suite(dir: &Path) -> std::path::PathBuf {
    let suite = dir.join("long.toml");
    std::fs::write(
        &suite,
        "[suite]\nname = \"long\"\n\n[defaults]\ntime = 60\n\n[matrix]\nworkload = [\"cpu\"]\nthreads = [1]\n",
    )
    .unwrap();
    suite
}

/// Starts the long run and returns once its endpoint shows it measuring.
fn start_long(dir: &Path) -> (Child, String) {
    let suite = long_cpu_suite(dir);
    let (child, addr) = start(dir, &suite, &[]);
    scrape_until(&addr, "the run measuring", |t| {
        value(t, "sbsuite_events_total", &["workload=\"cpu\""]).is_some_and(|v| v > 0.0)
    });
    (child, addr)
}

fn stop(mut child: Child) {
    child.kill().unwrap();
    let _ = child.wait();
}

/// A client that sends a request line without end: the endpoint reads 8 KiB of it, answers
/// 431 and closes, and the run's peak resident set does not move (one such client grew the
/// process to 2.94 GB).
#[test]
fn an_endless_request_line_is_cut_and_costs_the_run_no_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let (child, addr) = start_long(tmp.path());
    let pid = child.id() as i32;
    let before = common::measure::status_kib(pid, "VmHWM");
    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    s.write_all(b"GET /metrics?").unwrap();
    let chunk = vec![b'a'; 64 << 10];
    let started = Instant::now();
    let mut sent = 0usize;
    // The kernel's buffers take a few MB before the close is seen; a server that keeps
    // reading never makes the writes fail (stopped at 256 MiB, to spare the machine).
    let closed = loop {
        match s.write(&chunk) {
            Ok(n) => sent += n,
            Err(_) => break true,
        }
        if sent > 256 << 20 || started.elapsed() > Duration::from_secs(20) {
            break false;
        }
    };
    let after = common::measure::status_kib(pid, "VmHWM");
    assert!(closed, "the connection stayed open after {sent} bytes");
    assert!(sent < 32 << 20, "{sent} bytes were taken before the close");
    assert!(
        after < before + (16 << 10),
        "the run's peak RSS went from {before} KiB to {after} KiB"
    );
    // The answer, if the client reads before it writes too much: 431.
    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET /metrics?").unwrap();
    s.write_all(&vec![b'a'; 9 << 10]).unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    assert!(
        text.starts_with("HTTP/1.1 431 Request Header Fields Too Large"),
        "{text}"
    );
    // The endpoint still serves.
    let (status, _) = get(&addr, "/metrics").expect("a scrape");
    assert_eq!(status, "HTTP/1.1 200 OK");
    stop(child);
}

/// A client that sends a byte every 1.5 s never completes its request: other scrapers are
/// answered at once meanwhile, and the endpoint closes the slow one at its deadline (5 s).
#[test]
fn a_slowloris_client_neither_blocks_scrapers_nor_stays() {
    let tmp = tempfile::tempdir().unwrap();
    let (child, addr) = start_long(tmp.path());
    let slow = {
        let addr = addr.clone();
        std::thread::spawn(move || {
            let mut s = TcpStream::connect(&addr).unwrap();
            s.set_read_timeout(Some(Duration::from_millis(1500)))
                .unwrap();
            let started = Instant::now();
            let mut buf = [0u8; 1024];
            for b in b"GET /metrics HTTP/1.1\r\nHost: slow\r\nX: ".iter().cycle() {
                if s.write_all(&[*b]).is_err() {
                    return Some(started.elapsed());
                }
                // The pause between bytes, and the server's close as soon as it comes.
                match s.read(&mut buf) {
                    Ok(0) => return Some(started.elapsed()),
                    Err(e)
                        if !matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) =>
                    {
                        return Some(started.elapsed());
                    }
                    _ => {}
                }
                if started.elapsed() > Duration::from_secs(30) {
                    return None;
                }
            }
            None
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    for _ in 0..4 {
        let asked = Instant::now();
        let (status, body) = get(&addr, "/metrics").expect("a scrape while the slow client waits");
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert!(body.contains("sbsuite_events_total"));
        assert!(
            asked.elapsed() < Duration::from_secs(1),
            "a scrape took {:?}",
            asked.elapsed()
        );
        std::thread::sleep(Duration::from_millis(700));
    }
    let cut = slow.join().unwrap().expect("the slow client was never cut");
    assert!(
        cut >= Duration::from_secs(4) && cut < Duration::from_secs(9),
        "cut after {cut:?}"
    );
    stop(child);
}

/// Many scrapers at once are all answered; with every connection slot held by idle clients,
/// one more gets 503 at once (not a hang), and scrapes succeed again once they leave.
#[test]
fn concurrent_scrapes_are_answered_and_a_full_endpoint_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let (child, addr) = start_long(tmp.path());
    let scrapers: Vec<_> = (0..8)
        .map(|_| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                (0..10)
                    .map(|_| get(&addr, "/metrics").map(|(status, _)| status))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for s in scrapers {
        for status in s.join().unwrap() {
            assert_eq!(status.as_deref(), Some("HTTP/1.1 200 OK"));
        }
    }
    let idle: Vec<TcpStream> = (0..sbsuite::runner::metrics::MAX_CONNECTIONS)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    // Once the accept thread has taken every idle connection (a busy machine may take it a
    // moment), one more is answered 503 at once; until then it is served.
    let full_by = Instant::now() + Duration::from_secs(10);
    loop {
        let asked = Instant::now();
        let (status, _) = get(&addr, "/metrics").expect("an answer");
        assert!(
            asked.elapsed() < Duration::from_secs(1),
            "{status} after {:?}",
            asked.elapsed()
        );
        if status == "HTTP/1.1 503 Service Unavailable" {
            break;
        }
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert!(
            Instant::now() < full_by,
            "never answered 503 with every slot held"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(idle);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (status, _) = get(&addr, "/metrics").expect("an answer");
        if status == "HTTP/1.1 200 OK" {
            break;
        }
        assert!(Instant::now() < deadline, "still {status}");
        std::thread::sleep(Duration::from_millis(50));
    }
    stop(child);
}

/// `--metrics-hold` is not part of the run: the first SIGTERM ends it, and the exit status
/// is the run's own (0 after a successful run, not 130).
#[test]
fn the_first_sigterm_ends_metrics_hold_with_the_runs_status() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = cpu_suite(tmp.path(), None);
    let (mut child, addr, lines) = start_with_lines(tmp.path(), &suite, &["--metrics-hold", "60"]);
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let line = lines
            .recv_timeout(until.saturating_duration_since(Instant::now()))
            .expect("the hold began");
        if line.contains("serving the final metrics") {
            break;
        }
    }
    let (status, _) = get(&addr, "/metrics").expect("served during the hold");
    assert_eq!(status, "HTTP/1.1 200 OK");
    let sent = Instant::now();
    // SAFETY: a signal to our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(5),
            "the hold ignored the first SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0), "the run succeeded");
    assert!(
        sent.elapsed() < Duration::from_secs(2),
        "{:?}",
        sent.elapsed()
    );
}
