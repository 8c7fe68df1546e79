//! The ssh transport for real (issue #17): client hosts are network namespaces running
//! Debian's sshd (tests/common/netns.rs), reached with the exact command line that
//! `clients::transport::agent_command` builds.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::netns::{NetnsHosts, unavailable};
use sbsuite::clients::transport::{Client, ClientKind, TransportOptions, agent_command};

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
