//! Watching a run from outside (#18): the `--metrics` OpenMetrics endpoint scraped while real
//! SQLite and MariaDB runs go on, and the refusal of an address in use before anything runs.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;

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
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    (child, addr)
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

const MARIADB: &str = "127.0.0.1:3306";

fn admin(sql: &[String]) -> Option<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let opts = mysql_async::OptsBuilder::default()
            .ip_or_hostname("127.0.0.1")
            .tcp_port(3306)
            .user(Some("root"));
        let mut c = mysql_async::Conn::new(opts).await.ok()?;
        for s in sql {
            c.query_drop(s).await.ok()?;
        }
        c.disconnect().await.ok()
    })
}

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
