//! Client "hosts" for the ssh transport's tests (issue #17): Linux network namespaces with their
//! own addresses, each running Debian's OpenSSH sshd, set up by `bench/netns-hosts.sh` — one
//! implementation for the tests and for the slot-0 hosts that `examples/clients-ssh.toml` uses.
//!
//! Each [`NetnsHosts`] owns a slot (subnet `10.217.S.0/24`, namespaces `sbsuite-sS-cI`, files in
//! `/tmp/sbsuite-netns-S/`) under an exclusive `flock` on `/tmp/sbsuite-netns-slot-S.lock`, so
//! tests running in parallel, in several binaries or checkouts, never share one; the lock dies
//! with the process, and `up` first removes whatever a crashed run of the slot left behind
//! (its sshd, forwarders, agents, namespaces and bridge). Dropping the hosts tears them down.
//! The databases are reached at [`NetnsHosts::gateway`] (a forwarder to 127.0.0.1).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The script that sets the hosts up and down.
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/bench/netns-hosts.sh");

/// Slot 0 belongs to `bench/netns-hosts.sh up` run by hand, 250 to its `time`.
const SLOTS: std::ops::RangeInclusive<u32> = 1..=249;

/// N client hosts in network namespaces, torn down on drop.
pub struct NetnsHosts {
    slot: u32,
    hosts: usize,
    _lock: File,
}

/// Why the hosts cannot be made on this machine (the caller skips with it), or `None`.
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("network-namespace client hosts need root".into());
    }
    for tool in ["ip", "ssh", "ssh-keygen", "socat"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if !found {
            return Some(format!(
                "{tool} is missing (apt-get install -y iproute2 openssh-client openssh-server socat)"
            ));
        }
    }
    if !Path::new("/usr/sbin/sshd").exists() {
        return Some("/usr/sbin/sshd is missing (apt-get install -y openssh-server)".into());
    }
    None
}

impl NetnsHosts {
    /// Sets up `hosts` client hosts on a free slot; panics with the script's output when that
    /// fails on a machine where [`unavailable`] said it could work.
    pub fn start(hosts: usize) -> NetnsHosts {
        let (slot, lock) = take_slot();
        let out = Command::new("bash")
            .args([
                SCRIPT,
                "up",
                "--slot",
                &slot.to_string(),
                "--hosts",
                &hosts.to_string(),
            ])
            .output()
            .expect("run bench/netns-hosts.sh");
        let me = NetnsHosts {
            slot,
            hosts,
            _lock: lock,
        };
        assert!(
            out.status.success(),
            "bench/netns-hosts.sh up --slot {slot} failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        me
    }

    pub fn slot(&self) -> u32 {
        self.slot
    }

    pub fn len(&self) -> usize {
        self.hosts
    }

    /// The directory with the keys, the configs and the daemons' logs.
    pub fn dir(&self) -> PathBuf {
        PathBuf::from(format!("/tmp/sbsuite-netns-{}", self.slot))
    }

    /// The ssh_config that names the hosts `client1` … `clientN`.
    pub fn ssh_config(&self) -> PathBuf {
        self.dir().join("ssh_config")
    }

    /// The host side of the bridge, where the database forwarders listen (3306, 5432).
    pub fn gateway(&self) -> String {
        format!("10.217.{}.1", self.slot)
    }

    /// The ssh alias of host `i` (1-based).
    pub fn alias(&self, i: usize) -> String {
        format!("client{i}")
    }

    /// The address of host `i`.
    pub fn addr(&self, i: usize) -> String {
        format!("10.217.{}.{}", self.slot, 10 + i)
    }

    /// The network namespace of host `i`.
    pub fn netns(&self, i: usize) -> String {
        format!("sbsuite-s{}-c{i}", self.slot)
    }

    /// `ssh -F ssh_config clientI` (append the remote command).
    pub fn ssh(&self, i: usize) -> Command {
        let mut cmd = Command::new("ssh");
        cmd.arg("-F").arg(self.ssh_config()).arg(self.alias(i));
        cmd
    }

    /// Every process in host `i`'s namespace, as `(pid, command line)`: its sshd and
    /// whatever runs in its sessions.
    pub fn processes(&self, i: usize) -> Vec<(u32, String)> {
        netns_processes(&self.netns(i))
    }

    /// The pid of host `i`'s sshd listener.
    pub fn sshd_pid(&self, i: usize) -> u32 {
        let file = self.dir().join(format!("sshd-{i}.pid"));
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        text.trim().parse().unwrap()
    }

    /// What runs on host `i` besides its sshd listener: ssh sessions and what they started
    /// (an agent). Empty when the host is idle.
    pub fn busy(&self, i: usize) -> Vec<(u32, String)> {
        let listener = self.sshd_pid(i);
        self.processes(i)
            .into_iter()
            .filter(|(pid, _)| *pid != listener)
            .collect()
    }
}

impl Drop for NetnsHosts {
    fn drop(&mut self) {
        let out = Command::new("bash")
            .args([SCRIPT, "down", "--slot", &self.slot.to_string()])
            .output();
        match out {
            Ok(o) if o.status.success() => {}
            Ok(o) => eprintln!(
                "bench/netns-hosts.sh down --slot {} failed: {}",
                self.slot,
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) => eprintln!("cannot run bench/netns-hosts.sh down: {e}"),
        }
    }
}

/// The processes in network namespace `ns` (`ip netns pids`), with their command lines.
pub fn netns_processes(ns: &str) -> Vec<(u32, String)> {
    let out = Command::new("ip")
        .args(["netns", "pids", ns])
        .output()
        .expect("run ip netns pids");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse::<u32>().ok())
        .filter_map(|pid| {
            let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&raw)
                .split('\0')
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
            Some((pid, cmd))
        })
        .collect()
}

/// Whether process `pid` runs (a zombie, dead but not yet reaped, does not).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/status")) {
        Ok(status) => !status
            .lines()
            .any(|l| l.starts_with("State:") && l.contains('Z')),
        Err(_) => false,
    }
}

/// The first free slot, locked for as long as the returned file is open.
fn take_slot() -> (u32, File) {
    use std::os::fd::AsRawFd;

    for slot in SLOTS {
        let path = format!("/tmp/sbsuite-netns-slot-{slot}.lock");
        let file = File::create(&path).unwrap_or_else(|e| panic!("cannot open {path}: {e}"));
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return (slot, file);
        }
    }
    panic!("every netns slot {SLOTS:?} is taken (/tmp/sbsuite-netns-slot-*.lock)");
}
