//! `sbsuite run` end to end: the real binary, the real cpu engine, results read back from disk.

use std::path::Path;
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use crate::common;

use assert_cmd::cargo::CommandCargoExt;
use common::{run_dir, sbsuite};

fn rows(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_path(path).unwrap();
    let header = r.headers().unwrap().iter().map(str::to_string).collect();
    let rows = r
        .records()
        .map(|rec| rec.unwrap().iter().map(str::to_string).collect())
        .collect();
    (header, rows)
}

fn col(header: &[String], name: &str) -> usize {
    header
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name} in {header:?}"))
}

#[test]
fn quickstart_runs_and_its_csv_holds_the_measurements() {
    // In an empty working directory: fileio's test files and the default SQLite file go there
    // and must be gone afterwards.
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let out = sbsuite()
        .current_dir(&work)
        .arg("run")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("suites/quickstart.toml"))
        .args(["--set", "time=1", "--progress", "plain", "--results-dir"])
        .arg(dir.path().join("results"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let left: Vec<_> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        left.is_empty(),
        "files left in the working directory: {left:?}"
    );
    // sysbench-shaped reports, one per run step.
    assert_eq!(stdout.matches("Threads started!").count(), 10, "{stdout}");
    assert_eq!(
        stdout.matches("CPU speed:\n    events per second:").count(),
        2,
        "{stdout}"
    );
    assert_eq!(stdout.matches("SQL statistics:").count(), 4, "{stdout}");
    assert!(stdout.contains("[ 1s ] thds: 2 eps: "), "{stdout}");
    assert!(stdout.contains("         95th percentile:"), "{stdout}");
    assert!(
        stdout.contains("Inserting 10000 records into 'sbtest1'"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Removed the empty default database file 'sbtest.db'"),
        "{stdout}"
    );
    assert!(
        stderr.contains("[sbsuite] step 14/14 cleanup sbtest"),
        "{stderr}"
    );

    let run = run_dir(&dir.path().join("results"), "quickstart");
    let (header, data) = rows(&run.join("results.csv"));
    assert_eq!(
        &header[..6],
        ["run_id", "step", "name", "variant", "workload", "threads"]
    );
    let workloads: Vec<&str> = data
        .iter()
        .map(|r| r[col(&header, "workload")].as_str())
        .collect();
    assert_eq!(
        workloads,
        [
            "cpu",
            "cpu",
            "memory",
            "memory",
            "fileio",
            "fileio",
            "oltp_read_only",
            "oltp_read_only",
            "oltp_read_write",
            "oltp_read_write"
        ]
    );
    for (i, row) in data.iter().enumerate() {
        let workload = row[col(&header, "workload")].as_str();
        assert_eq!(row[col(&header, "status")], "ok", "{row:?}");
        assert_eq!(row[col(&header, "threads")], (i % 2 + 1).to_string());
        let events: u64 = row[col(&header, "events")].parse().unwrap();
        assert!(events > 0);
        let seconds: f64 = row[col(&header, "seconds")].parse().unwrap();
        assert!((0.9..3.0).contains(&seconds), "{seconds}");
        let eps: f64 = row[col(&header, "eps")].parse().unwrap();
        assert!(
            (eps - events as f64 / seconds).abs() / eps < 0.05,
            "eps {eps} vs {events}/{seconds}"
        );
        let lat = |c: &str| -> f64 { row[col(&header, c)].parse().unwrap() };
        assert!(lat("lat_min") <= lat("lat_p50") && lat("lat_p50") <= lat("lat_p95"));
        assert!(lat("lat_p95") <= lat("lat_p99") && lat("lat_p99") <= lat("lat_max"));
        assert_eq!(
            lat("lat_pct"),
            lat("lat_p95"),
            "percentile = 95 in the quickstart"
        );
        let tps = &row[col(&header, "tps")];
        if workload.starts_with("oltp_") {
            assert!(tps.parse::<f64>().unwrap() > 0.0, "{row:?}");
            assert_eq!(row[col(&header, "errors")], "0", "{row:?}");
        } else {
            assert_eq!(tps, "", "{workload} has no transactions");
        }
        let metric = |c: &str| !row[col(&header, c)].is_empty();
        assert_eq!(metric("mib_per_s"), workload == "memory", "{row:?}");
        assert_eq!(metric("file_reads_ps"), workload == "fileio", "{row:?}");
    }
    let (_, intervals) = rows(&run.join("intervals.csv"));
    assert!(intervals.len() >= 10, "{intervals:?}");
    let hist: Vec<_> = std::fs::read_dir(run.join("histograms")).unwrap().collect();
    assert_eq!(hist.len(), 10);
    assert!(run.join("suite.toml").exists() && run.join("plan.json").exists());
}

#[test]
fn events_limit_is_exact_and_passwords_never_reach_the_results() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("s.toml");
    std::fs::write(
        &suite,
        "[suite]\nname = \"ev\"\n[target]\ndriver = \"mysql\"\npassword = \"hunter2\"\n[defaults]\nworkload = \"cpu\"\ntime = 0\nevents = 500\ncpu_max_prime = 2000\n[matrix]\nthreads = [1, 2]\n",
    )
    .unwrap();
    let out = sbsuite()
        .arg("run")
        .arg(&suite)
        .arg("--results-dir")
        .arg(dir.path())
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("hunter2"));
    let run = run_dir(dir.path(), "ev");
    let (header, data) = rows(&run.join("results.csv"));
    for row in &data {
        assert_eq!(row[col(&header, "events")], "500");
    }
    for entry in std::fs::read_dir(&run).unwrap() {
        let p = entry.unwrap().path();
        if p.is_file() {
            assert!(
                !std::fs::read_to_string(&p).unwrap().contains("hunter2"),
                "{p:?} leaks the password"
            );
        }
    }
    let plan = sbsuite().arg("plan").arg(&suite).output().unwrap();
    assert!(!String::from_utf8_lossy(&plan.stdout).contains("hunter2"));
}

#[test]
fn ctrl_c_keeps_finished_rows_and_marks_the_current_step() {
    let dir = tempfile::tempdir().unwrap();
    // Steps of 5 s: the interrupt comes as soon as step 2 reports `Threads started!`, so the
    // step ends well before its 5 s even when the machine is slow to deliver it.
    let mut child = StdCommand::cargo_bin("sbsuite")
        .unwrap()
        .args([
            "run",
            "suites/quickstart.toml",
            "--set",
            "matrix.threads=[1,2,4]",
            "--set",
            "time=5",
            "--progress",
            "off",
            "--results-dir",
        ])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    common::read_until_started(&mut child, 2);
    common::interrupt(child.id());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = run_dir(dir.path(), "quickstart").join("results.csv");
    let (header, data) = rows(&results);
    assert_eq!(data.len(), 2, "{data:?}");
    assert_eq!(data[0][col(&header, "status")], "ok");
    assert_eq!(data[1][col(&header, "status")], "interrupted");
    let seconds: f64 = data[1][col(&header, "seconds")].parse().unwrap();
    assert!(seconds < 4.5, "step 2 stopped early, ran {seconds}s");
}

/// The first Ctrl-C stops the step but lets the cleanup phase finish (here an `after_suite`
/// hook that takes 20 s); a second Ctrl-C during that cleanup exits at once with 130 and says
/// so. Ignoring the second signal would keep the process for the whole hook and fail the bound.
#[test]
fn second_ctrl_c_exits_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("cleanup-started");
    let suite = dir.path().join("ctrlc.toml");
    std::fs::write(
        &suite,
        format!(
            "[suite]\nname = \"ctrlc\"\n\n[defaults]\nworkload = \"cpu\"\ntime = 60\n\n\
             [matrix]\nthreads = [1]\n\n[hooks]\ntimeout = 120\n\
             after_suite = \"touch {} && sleep 20\"\n",
            marker.display()
        ),
    )
    .unwrap();
    let stderr_path = dir.path().join("stderr.txt");
    let mut child = StdCommand::cargo_bin("sbsuite")
        .unwrap()
        .arg("run")
        .arg(&suite)
        .args(["--progress", "off", "--results-dir"])
        .arg(dir.path().join("results"))
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    common::read_until_started(&mut child, 1);
    // Waits up to `limit` for the child to end.
    let wait = |child: &mut std::process::Child, limit: Duration| {
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Some(status) = child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    };
    common::interrupt(child.id());
    // The step stops and the cleanup (the hook) starts: the process is busy for 20 s.
    let start = Instant::now();
    while !marker.exists() {
        if start.elapsed() > Duration::from_secs(30) || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            panic!(
                "the first Ctrl-C must stop the step gracefully and still run after_suite: {}",
                std::fs::read_to_string(&stderr_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "the first Ctrl-C lets the cleanup run"
    );
    let start = Instant::now();
    common::interrupt(child.id());
    let status = wait(&mut child, Duration::from_secs(10));
    let elapsed = start.elapsed();
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    let status = status.unwrap_or_else(|| {
        panic!("the second Ctrl-C was ignored: still running after {elapsed:?}\n{stderr}")
    });
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(
        elapsed < Duration::from_secs(10),
        "took {elapsed:?}: {stderr}"
    );
    assert!(
        stderr.contains("interrupt: the current step stops")
            && stderr.contains("second interrupt: exiting now"),
        "{stderr}"
    );
}

#[test]
fn hooks_run_with_the_step_values_and_a_failing_hook_sets_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let marks = dir.path().join("marks.txt");
    let suite = dir.path().join("hooks.toml");
    let write = |policy: &str, fail_on: u32| {
        std::fs::write(
            &suite,
            format!(
                "[suite]\nname = \"hooks\"\n\n[defaults]\nworkload = \"cpu\"\ntime = 0\nevents = 10\n\n[matrix]\nthreads = [1, 2, 3]\n\n[hooks]\non_error = \"{policy}\"\nbefore_step = \"echo {{{{ kind }}}} {{{{ step }}}} {{{{ threads }}}} >> {m}; test {{{{ threads }}}} != {fail_on}\"\nafter_suite = \"echo done >> {m}\"\n",
                m = marks.display()
            ),
        )
        .unwrap();
    };
    write("stop", 0);
    let out = sbsuite()
        .arg("run")
        .arg(&suite)
        .arg("--results-dir")
        .arg(dir.path().join("ok"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&marks).unwrap();
    assert_eq!(text, "run cpu-t1 1\nrun cpu-t2 2\nrun cpu-t3 3\ndone\n");
    let log = std::fs::read_to_string(run_dir(&dir.path().join("ok"), "hooks").join("hooks.log"))
        .unwrap();
    assert_eq!(
        log.matches("=== before_step: exit status: 0").count(),
        3,
        "{log}"
    );

    std::fs::remove_file(&marks).unwrap();
    write("stop", 2);
    let out = sbsuite()
        .arg("run")
        .arg(&suite)
        .arg("--results-dir")
        .arg(dir.path().join("stop"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("before_step hook failed"), "{stderr}");
    assert!(stderr.contains("on_error = stop"), "{stderr}");
    let text = std::fs::read_to_string(&marks).unwrap();
    assert_eq!(
        text, "run cpu-t1 1\nrun cpu-t2 2\ndone\n",
        "t3 never starts"
    );
    let (_, r) = rows(&run_dir(&dir.path().join("stop"), "hooks").join("results.csv"));
    assert_eq!(r.len(), 1, "only t1 ran: {r:?}");

    std::fs::remove_file(&marks).unwrap();
    write("skip", 2);
    let out = sbsuite()
        .arg("run")
        .arg(&suite)
        .arg("--results-dir")
        .arg(dir.path().join("skip"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let (header, r) = rows(&run_dir(&dir.path().join("skip"), "hooks").join("results.csv"));
    let status: Vec<&str> = r
        .iter()
        .map(|x| x[col(&header, "status")].as_str())
        .collect();
    assert_eq!(status, ["ok", "failed", "ok"]);
    assert!(r[1][col(&header, "error")].contains("before_step hook failed"));
}

#[test]
fn stop_when_skips_the_rest_of_a_sweep_and_marks_the_knee() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("sweep.toml");
    // One cpu event at cpu_max_prime 100 or 200 takes microseconds, at 400000 tens of ms: the
    // latency limit stops the sweep there whatever the machine, with the knee at 200.
    std::fs::write(
        &suite,
        "[suite]\nname = \"sweep\"\n\n[defaults]\nworkload = \"cpu\"\ntime = 0\nevents = 10\nthreads = 1\n\n[matrix]\ncpu_max_prime = [100, 200, 400000, 800000]\nstop_when = { cpu_max_prime = { p95_above = 20 } }\n",
    )
    .unwrap();
    let out = sbsuite()
        .arg("run")
        .arg(&suite)
        .args(["--progress", "plain", "--results-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("skipped, stop_when: knee cpu_max_prime=200"),
        "{stdout}"
    );
    assert!(stderr.contains("stop_when: cpu-"), "{stderr}");
    let (header, r) = rows(&run_dir(dir.path(), "sweep").join("results.csv"));
    let primes: Vec<&str> = r
        .iter()
        .map(|x| x[col(&header, "cpu_max_prime")].as_str())
        .collect();
    assert_eq!(primes, ["100", "200", "400000"], "800000 never ran");
    let knee = col(&header, "knee");
    assert_eq!(r[0][knee], "");
    assert!(
        r[2][knee].starts_with("cpu_max_prime=200 (p95 ")
            && r[2][knee].ends_with("> 20 ms at cpu_max_prime=400000)"),
        "{}",
        r[2][knee]
    );
    // #14: `sbsuite runs` lists the finished sweep as complete, with the run it skipped.
    let listed = sbsuite()
        .args(["runs", "--results-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&listed.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("sweep "))
        .unwrap_or_default();
    assert!(
        line.contains(" 3 (+1 skipped by stop_when) ") && line.contains(" ok "),
        "{text}"
    );
    assert!(!line.contains("incomplete"), "{text}");
    let listed = sbsuite()
        .args(["runs", "--format", "json", "--results-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(json[0]["status"], "ok", "{json}");
    assert_eq!(json[0]["runs"], 3, "{json}");
    assert_eq!(json[0]["planned"], 4, "{json}");
    assert_eq!(json[0]["skipped_by_stop_when"], 1, "{json}");
    // #14: resuming it rebuilds the sweep from the kept rows: the value the knee skipped stays
    // skipped (it used to run, judged by nothing), and no row is added or lost.
    let out = sbsuite()
        .arg("run")
        .arg("--resume")
        .arg(run_dir(dir.path(), "sweep"))
        .args(["--progress", "plain"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("skipped, stop_when: knee cpu_max_prime=200"),
        "{stdout}"
    );
    let (header, again) = rows(&run_dir(dir.path(), "sweep").join("results.csv"));
    let primes: Vec<&str> = again
        .iter()
        .map(|x| x[col(&header, "cpu_max_prime")].as_str())
        .collect();
    assert_eq!(primes, ["100", "200", "400000"], "800000 never ran");
}

/// A host that accepts connections and never answers (the listener is never `accept`ed: the
/// kernel completes the handshakes, nothing replies): the capture waits out `connect_timeout`
/// once and fails the first dataset, whose prepare and cleanup do not connect again; the second
/// dataset tries its prepare once. Two timeouts in all, where each capture, prepare and cleanup
/// used to wait out its own (five, 10 s).
#[test]
fn an_unreachable_host_costs_one_connect_timeout_per_dataset() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            "[suite]\nname = \"unreach\"\n[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:{port}\"]\n\
             user = \"root\"\nconnect_timeout = 2\n[defaults]\nworkload = \"oltp_read_only\"\n\
             time = 1\n[matrix]\ntable_size = [10, 20]\nthreads = [1, 2]\n"
        ),
    )
    .unwrap();
    let started = Instant::now();
    let out = sbsuite()
        .arg("run")
        .arg(&suite)
        .args(["--progress", "plain", "--results-dir"])
        .arg(dir.path().join("results"))
        .output()
        .unwrap();
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    // Two timeouts of 2 s, with room for a loaded machine; five (10 s) before.
    assert!(
        took < Duration::from_secs(7),
        "took {took:?}\n{stdout}\n{stderr}"
    );
    let cleanups: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("] cleanup sbtest"))
        .collect();
    assert_eq!(cleanups.len(), 2, "{stdout}");
    for (line, at) in cleanups.iter().zip(["capture", "prepare"]) {
        assert!(
            line.ends_with(&format!(": skipped, the server was unreachable at {at}")),
            "{stdout}"
        );
    }
    let (header, rows) = rows(&run_dir(&dir.path().join("results"), "unreach").join("results.csv"));
    let (status, error) = (col(&header, "status"), col(&header, "error"));
    assert_eq!(rows.len(), 4, "{rows:?}");
    let why = |r: &Vec<String>| (r[status].clone(), r[error].clone());
    for (i, r) in rows.iter().enumerate() {
        let (s, e) = why(r);
        let at = if i < 2 { "capture" } else { "prepare" };
        assert_eq!(s, "failed", "{r:?}");
        assert!(
            e.starts_with(&format!(
                "skipped: the server was unreachable at {at}: cannot connect to 127.0.0.1:{port}"
            )),
            "{r:?}"
        );
        assert!(e.contains("connect_timeout = 2 s"), "{r:?}");
    }
    drop(listener);
}

/// Issue #14, item 19: every run directory records its client machine in `host.json` (the
/// facts read where Linux keeps them), and `compare` shows the facts that differ between two
/// runs above the table and in JSON; a run without the file (an older build, an import) still
/// compares, its machine "unknown".
#[test]
fn issue_14_a_run_records_its_client_host_and_compare_shows_the_difference() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("h.toml");
    std::fs::write(
        &suite,
        "[suite]\nname = \"h\"\n[defaults]\nworkload = \"cpu\"\ntime = 0\nevents = 50\ncpu_max_prime = 200\n[matrix]\nthreads = [1]\n",
    )
    .unwrap();
    let out = sbsuite()
        .arg("run")
        .arg(&suite)
        .arg("--results-dir")
        .arg(dir.path())
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = run_dir(dir.path(), "h");
    let text = std::fs::read_to_string(run.join("host.json")).unwrap();
    let host: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(host["schema"], 1, "{text}");
    let client = &host["client"];
    // The facts as this machine states them.
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    let processors = cpuinfo
        .lines()
        .filter(|l| l.split(':').next().map(str::trim) == Some("processor"))
        .count();
    assert_eq!(client["logical_cores"], processors, "{text}");
    let model = client["cpu_model"].as_str().unwrap_or_default();
    assert!(
        !model.is_empty() && cpuinfo.contains(model),
        "cpu model from /proc/cpuinfo: {text}"
    );
    assert!(client["memory_bytes"].as_u64().unwrap() > 1 << 20, "{text}");
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(client["kernel"], kernel.trim(), "{text}");
    assert_eq!(client["sbsuite_version"], env!("CARGO_PKG_VERSION"));
    assert!(!client["hostname"].as_str().unwrap_or_default().is_empty());
    assert!(!run.join("host.json.tmp").exists());

    // Another machine (the file edited) and an older run (no file).
    let copy = |name: &str| {
        let to = dir.path().join(name);
        std::fs::create_dir(&to).unwrap();
        for e in std::fs::read_dir(&run).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() {
                std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
            }
        }
        to
    };
    let other = copy("other");
    let mut edited = host.clone();
    edited["client"]["cpu_model"] = "Intel(R) Xeon(R) Platinum 8481C".into();
    edited["client"]["logical_cores"] = 64.into();
    std::fs::write(other.join("host.json"), edited.to_string()).unwrap();
    let old = copy("old");
    std::fs::remove_file(old.join("host.json")).unwrap();
    let compare = |a: &Path, b: &Path, format: &str| {
        let out = sbsuite()
            .arg("compare")
            .arg(a)
            .arg(b)
            .args(["--format", format])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let table = compare(&run, &other, "table");
    let expect = format!(
        "client host differs: cpu '{model}' vs 'Intel(R) Xeon(R) Platinum 8481C', cores {processors} vs 64\n"
    );
    assert!(table.contains(&expect), "{table}");
    let table_pos = table.find("key ").unwrap();
    assert!(table.find(&expect).unwrap() < table_pos, "above the table");
    let md = compare(&run, &other, "markdown");
    assert!(md.contains(&expect), "{md}");
    let json: serde_json::Value = serde_json::from_str(&compare(&run, &other, "json")).unwrap();
    let hosts = &json["comparisons"][0]["hosts"];
    assert_eq!(hosts[0]["host"], "client", "{hosts}");
    assert_eq!(hosts[0]["fields"][0]["fact"], "cpu");
    assert_eq!(hosts[0]["fields"][1]["other"], "64");
    assert_eq!(hosts[0]["fields"].as_array().unwrap().len(), 2, "{hosts}");
    // The same machine: no line.
    assert!(!compare(&run, &copy("same"), "table").contains("client host"));
    // No host.json: loads, and says the machine is unknown.
    let table = compare(&run, &old, "table");
    assert!(
        table.contains(&format!(
            "client host unknown for {} (no host.json)",
            old.display()
        )),
        "{table}"
    );
}

/// What [`run_cpu_suite`] returns: exit code, stderr, the rows of results.csv by column, and
/// the file's text.
type SuiteRun = (
    Option<i32>,
    String,
    Vec<std::collections::HashMap<String, String>>,
    String,
);

/// Runs `suite_text` (suite `name`) in a scratch results directory.
fn run_cpu_suite(name: &str, suite_text: &str) -> SuiteRun {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join(format!("{name}.toml"));
    std::fs::write(&suite, suite_text).unwrap();
    let out = sbsuite()
        .arg("run")
        .arg(&suite)
        .args(["--progress", "plain", "--results-dir"])
        .arg(dir.path().join("results"))
        .output()
        .unwrap();
    let results = dir.path().join("results");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        common::results(&results),
        std::fs::read_to_string(run_dir(&results, name).join("results.csv")).unwrap(),
    )
}

/// A one-thread cpu suite over the `rate` values `rates`, 1 s each, plus `suite_extra` lines
/// in `[suite]`. 10^8 arrivals/s is far beyond one thread (an event takes about a
/// millisecond), 10/s is far below it.
fn rate_suite(rates: &str, suite_extra: &str) -> String {
    format!(
        "[suite]\nname = \"rate\"\n{suite_extra}\n[defaults]\nworkload = \"cpu\"\ntime = 1\n\
         threads = 1\ncpu_max_prime = 20000\n\n[matrix]\nrate = [{rates}]\n"
    )
}

/// #14 item 5: a run that could not offer its `rate` is `failed` with the dropped count in
/// `dropped` and the reason in `error`, keeps its numbers, and counts as a failure for
/// `on_error` (here `stop`: the next run never starts) and the exit code.
#[test]
fn a_rate_that_cannot_be_offered_fails_the_row_with_the_dropped_count() {
    let (code, stderr, rows, _) = run_cpu_suite(
        "rate",
        &rate_suite("100000000, 10", "on_error = \"stop\"\n"),
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(
        rows.len(),
        1,
        "on_error = stop: the second run never ran: {rows:?}"
    );
    let r = &rows[0];
    assert_eq!(r["status"], "failed", "{r:?}");
    let dropped: u64 = r["dropped"].parse().expect("a count");
    assert!(dropped > 0, "{r:?}");
    assert_eq!(
        r["error"],
        format!(
            "the target rate 100000000/s could not be offered: {dropped} arrivals were dropped \
             because all 1 threads were busy and the event queue (131072 slots) was full; lower \
             `rate` or raise `threads`, or set [suite] rate_overflow = \"record\" to keep the \
             row ok with the count in `dropped`"
        )
    );
    assert!(r["events"].parse::<u64>().expect("measured") > 0, "{r:?}");
    assert!(stderr.contains("on_error = stop"), "{stderr}");
}

/// #14 item 5: with `rate_overflow = "record"` the overloaded run stays `ok` with its count;
/// a rate the thread keeps up with shows 0; a run without `rate` leaves the column empty. An
/// ok row of a built-in workload has an empty error, knee and `headline_name`; the open-loop
/// columns (#30, last in the row) are filled for the rate runs only.
#[test]
fn rate_overflow_record_keeps_the_row_ok_with_the_count() {
    let (code, stderr, rows, text) = run_cpu_suite(
        "rate",
        &rate_suite("100000000, 10, 0", "rate_overflow = \"record\"\n"),
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(rows.iter().all(|r| r["status"] == "ok"), "{rows:?}");
    let dropped: Vec<&str> = rows.iter().map(|r| r["dropped"].as_str()).collect();
    assert!(
        dropped[0].parse::<u64>().expect("a count") > 0,
        "{dropped:?}"
    );
    assert_eq!(dropped[1..], ["0", ""]);
    for r in &rows {
        let cells = ["error", "knee", "headline_name", "warmup_s", "steady"].map(|c| &*r[c]);
        assert_eq!(cells, ["", "", "", "0", "unknown"], "{r:?}");
    }
    assert!(
        text.lines().next().unwrap().ends_with(",lag_max,group"),
        "{text}"
    );
    let open_loop = [
        "service_p50",
        "service_p95",
        "service_p99",
        "service_max",
        "lag_p50",
        "lag_p95",
        "lag_p99",
        "lag_max",
    ];
    let filled: Vec<Vec<bool>> = rows
        .iter()
        .map(|r| open_loop.iter().map(|c| !r[*c].is_empty()).collect())
        .collect();
    assert_eq!(filled, [[true; 8], [true; 8], [false; 8]], "{text}");
}
