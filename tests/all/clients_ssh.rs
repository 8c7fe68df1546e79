//! The ssh transport for real (issue #17): client hosts are network namespaces running
//! Debian's sshd (tests/common/netns.rs), reached with the exact command line that
//! `clients::transport::agent_command` builds.

use crate::common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::netns::{NetnsHosts, unavailable};
use sbsuite::clients::transport::{Client, ClientKind, agent_command};
use sbsuite::suite::clients::TransportOptions;

/// How long a host may take to notice that its agent's session is gone.
const GONE_WITHIN: Duration = Duration::from_secs(10);

fn ssh_options(hosts: &NetnsHosts) -> TransportOptions {
    TransportOptions {
        ssh_options: vec!["-F".into(), hosts.ssh_config().display().to_string()],
        ..TransportOptions::default()
    }
}

fn ssh_client(hosts: &NetnsHosts, i: usize) -> Client {
    Client {
        name: hosts.alias(i),
        kind: ClientKind::Ssh {
            dest: hosts.alias(i),
        },
    }
}

/// Waits until host `i` runs nothing but its sshd listener: no session, no agent.
fn wait_idle(hosts: &NetnsHosts, i: usize) {
    let start = Instant::now();
    loop {
        let left = hosts.busy(i);
        if left.is_empty() {
            return;
        }
        assert!(
            start.elapsed() < GONE_WITHIN,
            "still running on {} after {GONE_WITHIN:?}: {left:?}",
            hosts.alias(i)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Spawns `client`'s agent command with stdin and stdout piped; returns it and its first line.
fn spawn(
    client: &Client,
    options: &TransportOptions,
) -> (Child, BufReader<std::process::ChildStdout>, String) {
    let mut child = agent_command(client, options)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn ssh");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    (child, out, first)
}

#[test]
fn the_agent_command_runs_the_binary_on_each_host_over_a_piped_session_that_dies_with_it() {
    if let Some(why) = unavailable() {
        return common::skip(&why);
    }
    let hosts = NetnsHosts::start(3);
    // A stand-in for `sbsuite agent` at a path the remote shell must get quoted: it prints its
    // arguments and the host's address, then echoes its stdin line by line.
    let dir = tempfile::tempdir().unwrap();
    let bin_dir = dir.path().join("my bin's dir");
    std::fs::create_dir(&bin_dir).unwrap();
    let bin = bin_dir.join("fake sbsuite");
    std::fs::write(
        &bin,
        "#!/bin/sh\necho \"args=$*;addr=$(ip -4 -o addr show dev eth0 | awk '{print $4}')\"\ncat\n",
    )
    .unwrap();
    std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let options = TransportOptions {
        binary: bin.display().to_string(),
        ..ssh_options(&hosts)
    };

    for i in 1..=hosts.len() {
        let client = ssh_client(&hosts, i);
        let (mut child, mut out, first) = spawn(&client, &options);
        assert_eq!(
            first.trim(),
            format!("args=agent;addr={}/24", hosts.addr(i))
        );
        let stdin = child.stdin.as_mut().unwrap();
        for n in 0..3 {
            writeln!(stdin, "{{\"line\":{n}}}").unwrap();
            let mut back = String::new();
            out.read_line(&mut back).unwrap();
            assert_eq!(back.trim(), format!("{{\"line\":{n}}}"));
        }
        let running = hosts.processes(i);
        let path = bin.display().to_string();
        assert!(
            running.iter().any(|(_, c)| c.contains(&path)),
            "{running:?}"
        );
        if i == 1 {
            // The coordinator closes stdin: the agent sees end of input and the session ends.
            drop(child.stdin.take());
            let status = child.wait().unwrap();
            assert!(status.success(), "{status}");
        } else {
            // The coordinator dies: the connection drops and sshd closes the agent's pipes.
            child.kill().unwrap();
            child.wait().unwrap();
        }
        wait_idle(&hosts, i);
    }
}

#[test]
fn an_unreachable_or_unauthorised_host_fails_at_once_without_prompting() {
    if let Some(why) = unavailable() {
        return common::skip(&why);
    }
    let hosts = NetnsHosts::start(1);
    let options = TransportOptions {
        connect_timeout: Duration::from_secs(2),
        ..ssh_options(&hosts)
    };
    // An address on the bridge where no host answers: ConnectTimeout bounds the wait.
    let nobody = Client {
        name: "nobody".into(),
        kind: ClientKind::Ssh {
            dest: format!("root@10.217.{}.200", hosts.slot()),
        },
    };
    // A host that answers but does not know the key: BatchMode fails instead of asking.
    let mut stranger = options.clone();
    stranger.ssh_options = [
        "-F",
        "/dev/null",
        "-o",
        "StrictHostKeyChecking=no",
        "-o",
        "UserKnownHostsFile=/dev/null",
    ]
    .map(String::from)
    .to_vec();
    let home = tempfile::tempdir().unwrap();
    for (client, options, env_home) in [
        (&nobody, &options, None),
        (
            &Client {
                name: "stranger".into(),
                kind: ClientKind::Ssh {
                    dest: format!("root@{}", hosts.addr(1)),
                },
            },
            &stranger,
            Some(home.path()),
        ),
    ] {
        let mut cmd = agent_command(client, options);
        if let Some(h) = env_home {
            cmd.env("HOME", h); // no key of the user's own either
        }
        let start = Instant::now();
        let out = cmd.stdin(Stdio::null()).output().unwrap();
        let took = start.elapsed();
        assert!(!out.status.success(), "{}", client.name);
        assert_eq!(
            out.status.code(),
            Some(255),
            "{}: ssh's own failure",
            client.name
        );
        assert!(
            took < Duration::from_secs(8),
            "{}: took {took:?}",
            client.name
        );
    }
}

/// The built `sbsuite`: the namespaces share this filesystem, so it is also the clients'.
fn binary() -> String {
    assert_cmd::cargo::cargo_bin("sbsuite")
        .display()
        .to_string()
}

/// A database of one test on one of the shared servers, made and dropped with the servers'
/// own command-line clients on 127.0.0.1 (the agents reach it through the forwarder).
struct Database {
    driver: &'static str,
    name: String,
}

impl Database {
    fn admin(driver: &str, sql: &str) -> bool {
        let mut cmd = match driver {
            "mysql" => {
                let mut c = Command::new("mysql");
                c.args(["--host=127.0.0.1", "--port=3306", "--user=root", "-e", sql]);
                c
            }
            _ => {
                let mut c = Command::new("psql");
                c.args(["--host=127.0.0.1", "--port=5432", "--username=postgres"])
                    .args(["--no-psqlrc", "-qAt", "-d", "postgres", "-c", sql]);
                c
            }
        };
        cmd.output().map(|o| o.status.success()).unwrap_or(false)
    }

    /// `None` (after saying why) when the server does not answer.
    fn create(driver: &'static str, test: &str) -> Option<Database> {
        common::server_lock::share();
        let name = format!("sbsuite_t_ssh_{test}");
        let _ = Self::admin(driver, &format!("DROP DATABASE IF EXISTS {name}"));
        if !Self::admin(driver, &format!("CREATE DATABASE {name}")) {
            common::skip(&format!(
                "no {driver} server accepts its admin user on 127.0.0.1 (.ci/run starts one)"
            ));
            return None;
        }
        Some(Database { driver, name })
    }

    /// `[target]` through the forwarder on the hosts' bridge.
    fn target(&self, hosts: &NetnsHosts) -> String {
        let (port, user) = match self.driver {
            "mysql" => (3306, "root"),
            _ => (5432, "postgres"),
        };
        format!(
            "[target]\ndriver = \"{}\"\nhosts = [\"{}:{port}\"]\nuser = \"{user}\"\ndatabase = \"{}\"\n",
            self.driver,
            hosts.gateway(),
            self.name
        )
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        let _ = Self::admin(
            self.driver,
            &format!("DROP DATABASE IF EXISTS {}", self.name),
        );
    }
}

/// A suite whose run steps run on every host over ssh.
fn ssh_suite(hosts: &NetnsHosts, db: &Database, name: &str, defaults: &str) -> String {
    let list: Vec<String> = (1..=hosts.len())
        .map(|i| format!("\"ssh:{}\"", hosts.alias(i)))
        .collect();
    format!(
        "[suite]\nname = \"{name}\"\n\n{}\n[clients]\nlist = [{}]\nssh_options = [\"-F\", \"{}\"]\n\
         binary = \"{}\"\ntimeout = 3\nconnect_timeout = 10\n\n[defaults]\n{defaults}\n",
        db.target(hosts),
        list.join(", "),
        hosts.ssh_config().display(),
        binary()
    )
}

/// The rows of one CSV file, as column → value.
fn rows(path: &Path) -> Vec<HashMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    r.records()
        .map(|rec| {
            header
                .iter()
                .cloned()
                .zip(rec.unwrap().iter().map(str::to_string))
                .collect()
        })
        .collect()
}

fn num(row: &HashMap<String, String>, col: &str) -> f64 {
    row[col]
        .parse()
        .unwrap_or_else(|_| panic!("{col} = {:?} in {row:?}", row[col]))
}

/// Every host idle, and no ssh of this harness left on this side either.
fn assert_no_agent_anywhere(hosts: &NetnsHosts) {
    for i in 1..=hosts.len() {
        wait_idle(hosts, i);
    }
    let config = hosts.ssh_config().display().to_string();
    let start = Instant::now();
    loop {
        let ours: Vec<String> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .bytes()
                    .all(|b| b.is_ascii_digit())
            })
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .map(|raw| String::from_utf8_lossy(&raw).replace('\0', " "))
            .filter(|c| c.starts_with("ssh ") && c.contains(&config))
            .collect();
        if ours.is_empty() {
            return;
        }
        assert!(
            start.elapsed() < GONE_WITHIN,
            "ssh processes left: {ours:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn three_ssh_clients_drive_mariadb_and_postgresql_and_the_row_is_the_sum_of_the_shards() {
    if let Some(why) = unavailable() {
        return common::skip(&why);
    }
    let hosts = NetnsHosts::start(3);
    for driver in ["mysql", "pgsql"] {
        let Some(db) = Database::create(driver, &format!("merge_{driver}")) else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let suite = dir.path().join("suite.toml");
        std::fs::write(
            &suite,
            ssh_suite(
                &hosts,
                &db,
                "ssh3",
                "workload = \"oltp_read_write\"\ntime = 2\nreport_interval = 1\ntables = 1\n\
                 table_size = 1000\nthreads = 7\n",
            ),
        )
        .unwrap();
        let results = dir.path().join("results");
        let out = common::sbsuite()
            .arg("run")
            .arg(&suite)
            .arg("--results-dir")
            .arg(&results)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{driver}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let run = common::run_dir(&results, "ssh3");
        let merged = rows(&run.join("results.csv"));
        assert_eq!(merged.len(), 1, "{driver}: one merged row per run step");
        let row = &merged[0];
        assert_eq!(row["status"], "ok", "{driver}: {row:?}");
        assert_eq!(row["shards"], "3", "{driver}");
        assert_eq!(row["threads"], "7", "{driver}");
        assert!(
            num(row, "start_skew_ms") >= 0.0,
            "{driver}: the start skew is recorded"
        );
        let mut sums: HashMap<&str, f64> = HashMap::new();
        let mut names = Vec::new();
        for entry in std::fs::read_dir(run.join("shards")).unwrap() {
            let entry = entry.unwrap();
            if !entry.path().is_dir() {
                continue;
            }
            names.push(entry.file_name().to_string_lossy().into_owned());
            let shard = rows(&entry.path().join("results.csv"));
            assert_eq!(shard.len(), 1, "{driver}: {}", entry.path().display());
            assert_eq!(shard[0]["status"], "ok");
            for col in ["events", "reads", "writes", "other", "errors", "reconnects"] {
                *sums.entry(col).or_default() += num(&shard[0], col);
            }
            *sums.entry("threads").or_default() += num(&shard[0], "threads");
        }
        names.sort();
        assert_eq!(
            names,
            ["client1", "client2", "client3"],
            "{driver}: shards kept"
        );
        for (col, sum) in &sums {
            assert_eq!(
                num(row, col) as u64,
                *sum as u64,
                "{driver}: merged {col} = sum of shards"
            );
        }
        assert!(num(row, "events") > 0.0);
        assert_no_agent_anywhere(&hosts);
    }
}

/// Starts `sbsuite run SUITE` with stdout piped and returns once every host runs its agent
/// and the step is measuring (its first interval report printed).
fn start_long_run(hosts: &NetnsHosts, suite: &Path, results: &Path) -> Child {
    let mut child = common::sbsuite_process()
        .arg("run")
        .arg(suite)
        .arg("--results-dir")
        .arg(results)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    common::read_until_started(&mut child, 1);
    for i in 1..=hosts.len() {
        assert!(
            hosts.busy(i).iter().any(|(_, c)| c.ends_with(" agent")),
            "no agent on {}: {:?}",
            hosts.alias(i),
            hosts.busy(i)
        );
    }
    child
}

/// A frozen agent keeps its database connection, and an open transaction keeps its metadata
/// locks until the agent is resumed: the cleanup's DROP TABLE would wait on them. The frozen
/// test's workload runs autocommit statements, which hold no lock between statements.
const LONG_AUTOCOMMIT: &str = "workload = \"oltp_point_select\"\ntime = 60\nreport_interval = 1\n\
                               tables = 1\ntable_size = 1000\nthreads = 3\n";

/// Resumes a stopped process when dropped, so that a failing assertion never leaves it
/// holding the database (the test's own cleanup would wait on it).
struct Resume(u32);

impl Drop for Resume {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the agent process the test stopped; harmless once it has exited.
        unsafe { libc::kill(self.0 as i32, libc::SIGCONT) };
    }
}

const LONG: &str = "workload = \"oltp_read_only\"\ntime = 60\nreport_interval = 1\ntables = 1\n\
                    table_size = 1000\nthreads = 3\n";

#[test]
fn a_remote_agent_killed_mid_run_fails_the_step_in_bound_and_leaves_no_agent() {
    if let Some(why) = unavailable() {
        return common::skip(&why);
    }
    let hosts = NetnsHosts::start(3);
    let Some(db) = Database::create("mysql", "agent_killed") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.toml");
    std::fs::write(&suite, ssh_suite(&hosts, &db, "killed", LONG)).unwrap();
    let results = dir.path().join("results");
    let mut child = start_long_run(&hosts, &suite, &results);
    let (pid, _) = hosts
        .busy(2)
        .into_iter()
        .find(|(_, c)| c.ends_with(" agent"))
        .unwrap();
    // SAFETY: kill(2) on the agent process this test started on client2.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    let killed = Instant::now();
    let status = child.wait().unwrap();
    let took = killed.elapsed();
    // report_interval (1 s) + the clients' timeout (3 s), with room for a loaded machine.
    assert!(
        took < Duration::from_secs(15),
        "the step took {took:?} to fail"
    );
    assert_eq!(status.code(), Some(1), "a failed run step");
    let run = common::run_dir(&results, "killed");
    let merged = rows(&run.join("results.csv"));
    assert_eq!(merged.len(), 1);
    assert_eq!(merged[0]["status"], "failed");
    assert!(
        merged[0]["error"].contains("client2"),
        "{:?}",
        merged[0]["error"]
    );
    assert_no_agent_anywhere(&hosts);
}

#[test]
fn a_killed_coordinator_leaves_no_agent_on_any_host() {
    if let Some(why) = unavailable() {
        return common::skip(&why);
    }
    let hosts = NetnsHosts::start(3);
    let Some(db) = Database::create("pgsql", "coordinator_killed") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.toml");
    std::fs::write(&suite, ssh_suite(&hosts, &db, "orphans", LONG)).unwrap();
    let mut child = start_long_run(&hosts, &suite, &dir.path().join("results"));
    // kill -9: no cleanup of its own runs; its ssh children see their stdin close.
    child.kill().unwrap();
    child.wait().unwrap();
    assert_no_agent_anywhere(&hosts);
}

#[test]
fn the_ssh_example_is_set_for_the_slot_0_hosts_and_runs_on_three_clients() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/clients-ssh.toml"
    ))
    .unwrap();
    let suite: toml::Table = text.parse().unwrap();
    // As written: the hosts `bench/netns-hosts.sh up` makes (slot 0).
    let strs = |v: &toml::Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        strs(&suite["clients"]["list"]),
        ["ssh:client1", "ssh:client2", "ssh:client3"]
    );
    assert_eq!(
        strs(&suite["clients"]["ssh_options"]),
        ["-F", "/tmp/sbsuite-netns-0/ssh_config"]
    );
    assert_eq!(strs(&suite["target"]["hosts"]), ["10.217.0.1:3306"]);
    assert_eq!(suite["target"]["driver"].as_str(), Some("mysql"));

    if let Some(why) = unavailable() {
        return common::skip(&why);
    }
    // Run as written, moved to this test's slot, database and binary.
    let hosts = NetnsHosts::start(3);
    let Some(db) = Database::create("mysql", "example") else {
        return;
    };
    let results = tempfile::tempdir().unwrap();
    let out = common::sbsuite()
        .args([
            "run",
            concat!(env!("CARGO_MANIFEST_DIR"), "/examples/clients-ssh.toml"),
        ])
        .arg("--results-dir")
        .arg(results.path())
        .arg("--set")
        .arg(format!(
            "clients.ssh_options=[\"-F\", \"{}\"]",
            hosts.ssh_config().display()
        ))
        .arg("--set")
        .arg(format!("clients.binary={}", binary()))
        .arg("--set")
        .arg(format!("target.hosts=[\"{}:3306\"]", hosts.gateway()))
        .arg("--set")
        .arg(format!("target.database={}", db.name))
        .args([
            "--set",
            "defaults.time=1",
            "--set",
            "defaults.table_size=1000",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let run = common::run_dir(results.path(), "clients-ssh");
    let merged = rows(&run.join("results.csv"));
    let threads: Vec<&str> = merged.iter().map(|r| r["threads"].as_str()).collect();
    assert_eq!(threads, ["3", "12"], "one merged row per step");
    for row in &merged {
        assert_eq!(
            (row["status"].as_str(), row["shards"].as_str()),
            ("ok", "3"),
            "{row:?}"
        );
    }
    for client in ["client1", "client2", "client3"] {
        assert_eq!(
            rows(&run.join("shards").join(client).join("results.csv")).len(),
            2
        );
    }
    assert_no_agent_anywhere(&hosts);
}

#[test]
fn a_remote_agent_that_stops_sending_fails_the_step_in_bound_and_exits_once_resumed() {
    if let Some(why) = unavailable() {
        return common::skip(&why);
    }
    let hosts = NetnsHosts::start(3);
    let Some(db) = Database::create("mysql", "agent_frozen") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.toml");
    std::fs::write(&suite, ssh_suite(&hosts, &db, "frozen", LONG_AUTOCOMMIT)).unwrap();
    let results = dir.path().join("results");
    let mut child = start_long_run(&hosts, &suite, &results);
    let (pid, _) = hosts
        .busy(3)
        .into_iter()
        .find(|(_, c)| c.ends_with(" agent"))
        .unwrap();
    let resume = Resume(pid);
    // SAFETY: kill(2) on the agent process this test started on client3.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGSTOP) }, 0);
    let frozen = Instant::now();
    let status = child.wait().unwrap();
    let took = frozen.elapsed();
    // Silence is noticed after the beat (1 s) + the clients' timeout (3 s).
    assert!(
        took >= Duration::from_secs(3),
        "failed after {took:?}, before the timeout"
    );
    assert!(
        took < Duration::from_secs(15),
        "the step took {took:?} to fail"
    );
    assert_eq!(status.code(), Some(1));
    let merged = rows(&common::run_dir(&results, "frozen").join("results.csv"));
    assert_eq!(merged[0]["status"], "failed");
    assert!(
        merged[0]["error"].contains("client3"),
        "{:?}",
        merged[0]["error"]
    );
    // Stopped, it cannot notice its session is gone; resumed, it finds its stdin closed.
    drop(resume);
    assert_no_agent_anywhere(&hosts);
}
