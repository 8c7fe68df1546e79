//! What a run step cost, read on the server's host over ssh (#29, `[target] server_host`): the
//! real binary against the shared MariaDB and PostgreSQL, the "remote" host being a network
//! namespace running Debian's sshd (tests/common/netns.rs, as the ssh clients' tests). Such a
//! host shares this machine's /proc, so what sbsuite reads over ssh is checked against the
//! test's own reading of the same process, here, taken by hooks just before and after each
//! step: sbsuite's values lie within the test's, and its deltas agree with them.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use crate::common;

use common::db::{admin_my, admin_pg};
use common::netns::{NetnsHosts, unavailable};
use common::{csv_rows, results, run_dir, sbsuite};

/// The test's own reading of the server's CPU (ticks of process `$PID` and its reaped
/// children), the host's busy CPU (ticks) and its disks' completed writes, appended to `log`
/// as `WHEN STEP server busy writes`.
fn reader(dir: &Path, pid_file: &str, log: &Path) -> std::path::PathBuf {
    let script = dir.join("read.sh");
    std::fs::write(
        &script,
        format!(
            "pid=$(cat {pid_file})\n\
             server=$(sed 's/.*) //' /proc/$pid/stat | awk '{{print $12+$13+$14+$15}}')\n\
             busy=$(awk '/^cpu /{{print $2+$3+$4+$7+$8+$9}}' /proc/stat)\n\
             disks=$(for d in /sys/block/*; do [ -e \"$d/device\" ] && echo \"${{d##*/}}\"; done)\n\
             writes=$(awk -v d=\"$disks\" 'BEGIN{{n=split(d,a,\"\\n\"); for(i=1;i<=n;i++) w[a[i]]=1}} ($3 in w){{s+=$8}} END{{print s+0}}' /proc/diskstats)\n\
             echo \"$1 $2 $server $busy $writes\" >> {}\n",
            log.display()
        ),
    )
    .unwrap();
    script
}

/// The test's readings: per step index, (before, after) of (server ms, busy ms, writes).
fn readings(log: &Path, tick_ms: f64) -> HashMap<String, ([f64; 3], [f64; 3])> {
    let text = std::fs::read_to_string(log).unwrap();
    let mut out: HashMap<String, ([f64; 3], [f64; 3])> = HashMap::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(f.len(), 5, "reader line {l:?} of {text}");
        let n = |i: usize| f[i].parse::<f64>().unwrap();
        let v = [n(2) * tick_ms, n(3) * tick_ms, n(4)];
        let e = out.entry(f[1].to_string()).or_default();
        match f[0] {
            "before" => e.0 = v,
            _ => e.1 = v,
        }
    }
    out
}

fn clk_tck_ms() -> f64 {
    let out = Command::new("getconf").arg("CLK_TCK").output().unwrap();
    1000.0
        / String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse::<f64>()
            .unwrap()
}

fn mysql_value(sql: &str) -> String {
    let out = Command::new("mysql")
        .args([
            "-h",
            "127.0.0.1",
            "-P",
            "3306",
            "-u",
            "root",
            "-N",
            "-e",
            sql,
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A suite of two run steps (threads 1 and 2) on `target`, with `extra` in `[target]`.
fn suite(target: &str, extra: &str, hooks: &str) -> String {
    format!(
        "[suite]\nname = \"remote\"\n\n{target}{extra}\n[defaults]\nworkload = \"oltp_read_only\"\n\
         table_size = 1000\ntime = 2\nreport_interval = 0\n\n[matrix]\nthreads = [1, 2]\n\n{hooks}"
    )
}

/// What a run left: its stderr, the results' rows, server_counters.csv's rows, host.json.
struct Ran {
    stderr: String,
    rows: Vec<HashMap<String, String>>,
    counters: Vec<HashMap<String, String>>,
    host: serde_json::Value,
}

/// Runs `text` in `dir`; it must succeed.
fn run(dir: &Path, text: &str) -> Ran {
    let path = dir.join("suite.toml");
    std::fs::write(&path, text).unwrap();
    let root = dir.join("results");
    let out = sbsuite()
        .arg("run")
        .arg(&path)
        .arg("--results-dir")
        .arg(&root)
        .args(["--progress", "off"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let host = serde_json::from_str(
        &std::fs::read_to_string(run_dir(&root, "remote").join("host.json")).unwrap(),
    )
    .unwrap();
    Ran {
        stderr,
        rows: results(&root),
        counters: csv_rows(&root, "server_counters.csv"),
        host,
    }
}

/// The counter `name` of `step`: (before, after).
fn counter(counters: &[HashMap<String, String>], step: &str, name: &str) -> Option<(f64, f64)> {
    let c = counters
        .iter()
        .find(|c| c["step"] == step && c["counter"] == name)?;
    Some((c["before"].parse().unwrap(), c["after"].parse().unwrap()))
}

#[test]
fn issue_29_server_host_over_ssh_reads_the_same_server_process_as_this_host() {
    if let Some(why) = unavailable() {
        return common::skip(&why);
    }
    let db = "sbsuite_t_cost_remote";
    if admin_my(&[
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ])
    .is_none()
    {
        return common::skip("no MySQL/MariaDB server accepts root@127.0.0.1:3306");
    }
    // Alone on the servers: the test compares the server's CPU over each step.
    let _alone = common::server_lock::server_lock();
    let hosts = NetnsHosts::start(1);
    let ssh = format!(
        "server_host = \"ssh:{}\"\nserver_ssh_options = [\"-F\", \"{}\"]\n",
        hosts.alias(1),
        hosts.ssh_config().display()
    );
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("own.log");
    let pid_file = mysql_value("SELECT @@pid_file");
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let script = reader(dir.path(), &pid_file, &log);
    let line = |when: &str| {
        format!(
            "[ {{{{ kind }}}} = run ] && sh {} {when} {{{{ index }}}} || true",
            script.display()
        )
    };
    let hooks = format!(
        "[hooks]\nbefore_step = '''{}'''\nafter_step = '''{}'''\n",
        line("before"),
        line("after")
    );
    let target = format!(
        "[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:3306\"]\nuser = \"root\"\n\
         database = \"{db}\"\n"
    );
    let Ran {
        stderr,
        rows,
        counters,
        host,
    } = run(dir.path(), &suite(&target, &ssh, &hooks));
    admin_my(&[format!("DROP DATABASE IF EXISTS {db}")]);
    assert!(!stderr.contains("warning: server"), "{stderr}");

    // Where the numbers came from: the host reached over ssh, its mariadbd.
    let sp = &host["server_process"];
    assert_eq!(sp["source"], format!("ssh:{}", hosts.alias(1)), "{host}");
    assert_eq!(sp["pid"], pid, "{host}");
    assert!(
        ["mariadbd", "mysqld"].contains(&sp["process"].as_str().unwrap()),
        "{host}"
    );
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(sp["hostname"], hostname.trim(), "{host}");

    let own = readings(&log, clk_tck_ms());
    assert_eq!(rows.len(), 2, "{rows:?}");
    let mut costs = Vec::new();
    for r in &rows {
        assert_eq!(r["status"], "ok", "{r:?}");
        let step = &r["step"];
        let txns: f64 = r["events"].parse().unwrap();
        let per_txn: f64 = r["server_cpu_ms_per_txn"]
            .parse()
            .unwrap_or_else(|_| panic!("server_cpu_ms_per_txn of step {step}: {r:?}\n{stderr}"));
        assert!(per_txn > 0.0, "{r:?}");
        let (own_before, own_after) = own
            .get(step.as_str())
            .unwrap_or_else(|| panic!("step {step} in {own:?}"));
        for (i, name) in [
            "server_process.cpu_ms",
            "host.cpu_busy_ms",
            "host.disk_writes",
        ]
        .iter()
        .enumerate()
        {
            let (before, after) = counter(&counters, step, name)
                .unwrap_or_else(|| panic!("{name} of step {step}: {counters:?}"));
            assert!(
                own_before[i] <= before && before <= after && after <= own_after[i],
                "step {step} {name}: sbsuite's {before}..{after} over ssh within the test's \
                 own {}..{} here",
                own_before[i],
                own_after[i]
            );
        }
        // The server's CPU over the step: the test's window holds the readings and hooks
        // too, which cost the server little (a tick is 10 ms).
        let (before, after) = counter(&counters, step, "server_process.cpu_ms").unwrap();
        let own_delta = own_after[0] - own_before[0];
        let delta = after - before;
        assert!(
            own_delta - delta <= 60.0 + 0.1 * own_delta,
            "step {step}: {delta} ms over ssh, {own_delta} ms here"
        );
        assert!(
            (per_txn - delta / txns).abs() < 1e-5,
            "{per_txn} vs {delta}/{txns}"
        );
        for name in ["host.cpu_iowait_ms", "host.disk_reads", "host.disk_io_ms"] {
            assert!(counter(&counters, step, name).is_some(), "{name}");
        }
        let read_cpu = counter(&counters, step, "client.cost_read_cpu_ms").unwrap();
        let read_wall = counter(&counters, step, "client.cost_read_wall_ms").unwrap();
        costs.push((read_cpu.1 - read_cpu.0, read_wall.1 - read_wall.0));
    }
    // What reading costs over ssh (BENCHMARKS.md): the first step finds the process and
    // starts the master connection; the second pays two multiplexed readings.
    eprintln!("cost of reading per step (cpu ms, wall ms): {costs:?}");
    assert!(costs.iter().all(|(c, w)| *c > 0.0 && *w > 0.0), "{costs:?}");

    // PostgreSQL: the postmaster, found as its backend's parent in the remote /proc.
    if admin_pg(&[
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ])
    .is_none()
    {
        return common::skip("no PostgreSQL server accepts postgres@127.0.0.1:5432");
    }
    let pg_dir = tempfile::tempdir().unwrap();
    let target = format!(
        "[target]\ndriver = \"pgsql\"\nhosts = [\"127.0.0.1:5432\"]\nuser = \"postgres\"\n\
         database = \"{db}\"\n"
    );
    let Ran {
        stderr, rows, host, ..
    } = run(pg_dir.path(), &suite(&target, &ssh, ""));
    admin_pg(&[format!("DROP DATABASE IF EXISTS {db}")]);
    assert!(!stderr.contains("warning: server"), "{stderr}");
    assert_eq!(host["server_process"]["process"], "postgres", "{host}");
    for r in &rows {
        assert!(
            r["server_cpu_ms_per_txn"].parse::<f64>().unwrap() > 0.0,
            "{r:?}"
        );
    }
}

/// A server host that cannot be reached is one warning for the run and empty cells; every
/// step succeeds and the server's own counters are read as ever.
#[test]
fn issue_29_an_unreachable_server_host_is_a_warning_and_empty_cells() {
    let db = "sbsuite_t_cost_unreachable";
    if admin_my(&[
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ])
    .is_none()
    {
        return common::skip("no MySQL/MariaDB server accepts root@127.0.0.1:3306");
    }
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on port 9 here: ssh is refused at once.
    let target = format!(
        "[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:3306\"]\nuser = \"root\"\n\
         database = \"{db}\"\nserver_host = \"ssh:root@127.0.0.1\"\n\
         server_ssh_options = [\"-F\", \"/dev/null\", \"-o\", \"Port=9\"]\n"
    );
    let Ran {
        stderr,
        rows,
        counters,
        host,
    } = run(dir.path(), &suite(&target, "", ""));
    admin_my(&[format!("DROP DATABASE IF EXISTS {db}")]);
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("server process on ssh:root@127.0.0.1 not read"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(warnings[0].contains("not tried again this run"), "{stderr}");
    assert_eq!(rows.len(), 2, "{rows:?}");
    for r in &rows {
        assert_eq!(r["status"], "ok", "{r:?}");
        assert_eq!(r["server_cpu_ms_per_txn"], "", "{r:?}");
        assert!(
            r["server_fsyncs_per_txn"].parse::<f64>().is_ok(),
            "the server's own counters are read: {r:?}"
        );
        assert!(
            counter(&counters, &r["step"], "host.cpu_busy_ms").is_none(),
            "{counters:?}"
        );
    }
    assert!(host.get("server_process").is_none(), "{host}");
}

/// `server_host` is checked before anything runs: the file, the line, the key and the fix.
#[test]
fn issue_29_server_host_is_validated_with_file_line_and_fix() {
    let dir = tempfile::tempdir().unwrap();
    for (target, expect) in [
        (
            "driver = \"mysql\"\nserver_host = \"scp:db1\"\n",
            "invalid server_host `scp:db1`: it names no kind of host; expected `ssh:DEST`",
        ),
        (
            "driver = \"mysql\"\nserver_host = \"ssh:-oProxyCommand=x\"\n",
            "an ssh destination cannot start with `-`",
        ),
        (
            "driver = \"pgsql\"\nserver_host = \"kubernetes:Bench/pg-0\"\n",
            "the namespace is not a Kubernetes name",
        ),
        (
            "driver = \"sqlite\"\nserver_host = \"ssh:db1\"\n",
            "a sqlite target has no server process to read",
        ),
        (
            "driver = \"mysql\"\nserver_ssh_options = [\"-F\", \"x\"]\n",
            "server_ssh_options is for server_host, which is not set",
        ),
    ] {
        let path = dir.path().join("s.toml");
        std::fs::write(
            &path,
            format!(
                "[suite]\nname = \"v\"\n\n[target]\n{target}\n[defaults]\nworkload = \"oltp_point_select\"\n"
            ),
        )
        .unwrap();
        let out = sbsuite().arg("validate").arg(&path).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(expect), "{expect}: {stderr}");
        assert!(stderr.contains("s.toml:6"), "the line: {stderr}");
    }
}

/// The session on the server's host lives as long as sbsuite: a run killed with `kill -9`
/// leaves nothing running there.
#[test]
fn issue_29_a_killed_run_leaves_no_session_on_the_server_host() {
    if let Some(why) = unavailable() {
        return common::skip(&why);
    }
    let db = "sbsuite_t_cost_killed";
    if admin_my(&[
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ])
    .is_none()
    {
        return common::skip("no MySQL/MariaDB server accepts root@127.0.0.1:3306");
    }
    let hosts = NetnsHosts::start(1);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("suite.toml");
    std::fs::write(
        &path,
        format!(
            "[suite]\nname = \"remote\"\n\n[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:3306\"]\n\
             user = \"root\"\ndatabase = \"{db}\"\nserver_host = \"ssh:{}\"\n\
             server_ssh_options = [\"-F\", \"{}\"]\n\n[defaults]\nworkload = \"oltp_point_select\"\n\
             table_size = 100\ntime = 60\nthreads = 1\nreport_interval = 0\n",
            hosts.alias(1),
            hosts.ssh_config().display()
        ),
    )
    .unwrap();
    let mut child = common::sbsuite_process()
        .arg("run")
        .arg(&path)
        .arg("--results-dir")
        .arg(dir.path().join("results"))
        .args(["--progress", "off"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The run step started: its session runs `sh` on the host.
    let start = std::time::Instant::now();
    while !hosts.busy(1).iter().any(|(_, c)| c.trim() == "sh") {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "no session on the host: {:?}",
            hosts.busy(1)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let start = std::time::Instant::now();
    loop {
        let left = hosts.busy(1);
        if left.is_empty() {
            break;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "still running on the host after sbsuite was killed: {left:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    admin_my(&[format!("DROP DATABASE IF EXISTS {db}")]);
}

/// The terminal's Ctrl-C goes to sbsuite's whole process group: the step it stopped still gets
/// its reading after (the session has a group of its own; were it killed, it would be started
/// again once, so this checks what the user sees, not which of the two happened).
#[test]
fn issue_29_ctrl_c_to_the_process_group_still_reads_the_stopped_step_over_ssh() {
    use std::os::unix::process::CommandExt;

    if let Some(why) = unavailable() {
        return common::skip(&why);
    }
    let db = "sbsuite_t_cost_ctrl_c";
    if admin_my(&[
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ])
    .is_none()
    {
        return common::skip("no MySQL/MariaDB server accepts root@127.0.0.1:3306");
    }
    let hosts = NetnsHosts::start(1);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("suite.toml");
    std::fs::write(
        &path,
        format!(
            "[suite]\nname = \"remote\"\n\n[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:3306\"]\n\
             user = \"root\"\ndatabase = \"{db}\"\nserver_host = \"ssh:{}\"\n\
             server_ssh_options = [\"-F\", \"{}\"]\n\n[defaults]\nworkload = \"oltp_point_select\"\n\
             table_size = 100\ntime = 60\nthreads = 1\nreport_interval = 0\n",
            hosts.alias(1),
            hosts.ssh_config().display()
        ),
    )
    .unwrap();
    let root = dir.path().join("results");
    let stderr_path = dir.path().join("stderr");
    let mut child = common::sbsuite_process()
        .arg("run")
        .arg(&path)
        .arg("--results-dir")
        .arg(&root)
        .args(["--progress", "off"])
        .process_group(0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    common::read_until_started(&mut child, 1);
    // SAFETY: signals the process group of our own child, which it leads.
    assert_eq!(unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) }, 0);
    let status = child.wait().unwrap();
    admin_my(&[format!("DROP DATABASE IF EXISTS {db}")]);
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(!stderr.contains("warning: server"), "{stderr}");
    let counters = csv_rows(&root, "server_counters.csv");
    let run_steps: Vec<&String> = counters
        .iter()
        .filter(|c| c["counter"] == "server_process.cpu_ms")
        .map(|c| &c["step"])
        .collect();
    assert_eq!(
        run_steps.len(),
        1,
        "the stopped step's reading: {counters:?}\n{stderr}"
    );
}
