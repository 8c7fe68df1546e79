//! The network-namespace client hosts the ssh transport is tested on (issue #17,
//! tests/common/netns.rs): each answers ssh with its own address and reaches the databases
//! through the forwarder, and nothing is left behind, even after a crashed run.

use crate::common;

use common::netns::{NetnsHosts, alive, netns_processes, unavailable};

fn run(cmd: &mut std::process::Command) -> String {
    let out = cmd.output().expect("spawn");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn every_host_answers_ssh_at_its_own_address_and_reaches_both_databases() {
    if let Some(why) = unavailable() {
        return common::skip(&why);
    }
    let hosts = NetnsHosts::start(3);
    let gw = hosts.gateway();
    for i in 1..=hosts.len() {
        // Its own address, and no other host's: the namespace is its own network.
        let addrs = run(hosts.ssh(i).arg("ip -4 -o addr show"));
        assert!(
            addrs.contains(&format!("inet {}/24", hosts.addr(i))),
            "{addrs}"
        );
        for j in (1..=hosts.len()).filter(|&j| j != i) {
            assert!(
                !addrs.contains(&format!("inet {}/", hosts.addr(j))),
                "{addrs}"
            );
        }
        assert!(!addrs.contains(&format!("inet {gw}/")), "{addrs}");
        // MariaDB and PostgreSQL through the forwarder, which they see as 127.0.0.1.
        common::server_lock::share();
        let my = run(hosts.ssh(i).arg(format!(
            "mysql --host={gw} --port=3306 --user=root -Nse 'SELECT CURRENT_USER()'"
        )));
        assert_eq!(my.trim(), "root@127.0.0.1", "host {i}");
        let pg = run(hosts.ssh(i).arg(format!(
            "psql --host={gw} --port=5432 --username=postgres --no-psqlrc -Atc 'SELECT 40 + 2'"
        )));
        assert_eq!(pg.trim(), "42", "host {i}");
        // The session runs inside the host's namespace.
        let sshd: Vec<_> = hosts.processes(i);
        assert!(
            sshd.iter()
                .any(|(_, c)| c.starts_with("sshd") || c.contains("/sshd")),
            "{sshd:?}"
        );
    }
    // BatchMode: without the harness's key (a config that does not name it, an empty HOME)
    // ssh fails at once instead of prompting for a password.
    let home = tempfile::tempdir().unwrap();
    let known = hosts.dir().join("known_hosts");
    let out = std::process::Command::new("ssh")
        .env("HOME", home.path())
        .args([
            "-F",
            "/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=yes",
        ])
        .arg("-o")
        .arg(format!("UserKnownHostsFile={}", known.display()))
        .arg(format!("root@{}", hosts.addr(1)))
        .arg("true")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Permission denied"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn teardown_leaves_no_namespace_link_or_process_and_a_crashed_slot_is_reclaimed() {
    if let Some(why) = unavailable() {
        return common::skip(&why);
    }
    let hosts = NetnsHosts::start(2);
    let slot = hosts.slot().to_string();
    let first: Vec<u32> = hosts.processes(1).into_iter().map(|(p, _)| p).collect();
    assert!(!first.is_empty());
    // A process left running in a host, as an orphaned agent would be.
    run(hosts
        .ssh(2)
        .arg("nohup sleep 600 >/dev/null 2>&1 </dev/null &"));
    // ssh returns once the shell has forked; the `sleep` may exec a moment later on a
    // loaded machine, so wait for it (bounded) before relying on it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !hosts.processes(2).iter().any(|(_, c)| c == "sleep 600") {
        assert!(
            std::time::Instant::now() < deadline,
            "sleep 600 never appeared in host 2: {:?}",
            hosts.processes(2)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // A run that crashed holding this slot: `up` again must reclaim it whole.
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/bench/netns-hosts.sh");
    run(std::process::Command::new("bash").args([script, "up", "--slot", &slot, "--hosts", "2"]));
    for pid in &first {
        assert!(!alive(*pid), "{pid} survived");
    }
    assert!(!hosts.processes(2).iter().any(|(_, c)| c == "sleep 600"));
    assert_eq!(run(hosts.ssh(1).arg("echo ok")).trim(), "ok");
    let namespaces = [hosts.netns(1), hosts.netns(2)];
    let pids: Vec<u32> = (1..=2)
        .flat_map(|i| hosts.processes(i))
        .map(|(p, _)| p)
        .collect();
    let forwarders: Vec<String> = ["3306", "5432"]
        .iter()
        .map(|p| std::fs::read_to_string(hosts.dir().join(format!("fwd-{p}.pid"))).unwrap())
        .collect();
    let dir = hosts.dir();
    drop(hosts);
    let listed = run(std::process::Command::new("ip").args(["netns", "list"]));
    for ns in &namespaces {
        assert!(
            !listed.split_whitespace().any(|w| w == ns),
            "{ns} left: {listed}"
        );
        assert!(netns_processes(ns).is_empty());
    }
    let links = run(std::process::Command::new("ip").args(["-o", "link"]));
    assert!(!links.contains(&format!("sbsbr{slot}:")), "{links}");
    let forwarders = forwarders.iter().map(|p| p.trim().parse::<u32>().unwrap());
    for pid in pids.into_iter().chain(forwarders) {
        assert!(!alive(pid), "{pid} survived");
    }
    assert!(!dir.exists());
}
