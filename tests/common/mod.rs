//! Helpers shared by the integration tests.

use assert_cmd::Command;

pub mod db;
pub mod measure;
pub mod netns;
pub mod private_server;
pub mod server_lock;
mod skip;
pub mod suite_db;
pub use skip::skip;

/// The built `sbsuite` binary, with the developer's own SBSUITE_* variables removed (they
/// would override suite keys).
pub fn sbsuite() -> Command {
    Command::from_std(sbsuite_process())
}

/// [`sbsuite`] as a `std::process::Command`, for tests that spawn and wait for the child
/// themselves.
pub fn sbsuite_process() -> std::process::Command {
    use assert_cmd::cargo::CommandCargoExt;

    let mut cmd = std::process::Command::cargo_bin("sbsuite").unwrap();
    for (k, _) in std::env::vars() {
        if k.starts_with("SBSUITE_") {
            cmd.env_remove(k);
        }
    }
    cmd
}

/// Starts `sbsuite ARGS` with stdout piped and returns once its first step is running (its
/// report printed `Threads started!`), with what it printed so far.
pub fn spawn_until_started(args: &[&str]) -> (std::process::Child, Vec<u8>) {
    spawn_until_started_with(args, &[])
}

/// [`spawn_until_started`] with environment variables `env` set for the child.
pub fn spawn_until_started_with(
    args: &[&str],
    env: &[(&str, &str)],
) -> (std::process::Child, Vec<u8>) {
    use std::process::{Command as StdCommand, Stdio};

    use assert_cmd::cargo::CommandCargoExt;

    let mut child = StdCommand::cargo_bin("sbsuite")
        .unwrap()
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let seen = read_until_started(&mut child, 1);
    (child, seen)
}

/// Reads the child's piped stdout until its report has printed `Threads started!` `nth` times
/// (its `nth` measured step is running) and returns what it printed so far: the event to act
/// on, never a sleep.
pub fn read_until_started(child: &mut std::process::Child, nth: usize) -> Vec<u8> {
    use std::io::Read;

    let stdout = child.stdout.as_mut().expect("stdout piped");
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while String::from_utf8_lossy(&seen)
        .matches("Threads started!")
        .count()
        < nth
    {
        let n = stdout.read(&mut buf).unwrap();
        assert!(n > 0, "sbsuite ended before step {nth} started");
        seen.extend_from_slice(&buf[..n]);
    }
    seen
}

/// Sends SIGINT (Ctrl-C) to our own child process.
pub fn interrupt(pid: u32) {
    // SAFETY: sends a signal to our own child, identified by its pid.
    let rc = unsafe { libc::kill(pid as i32, libc::SIGINT) };
    assert_eq!(rc, 0);
}

/// Every file under `root` (missing directories are skipped).
fn files(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// The only run directory under `root/<suite>/` (a suite run once into `root`).
pub fn run_dir(root: &std::path::Path, suite: &str) -> std::path::PathBuf {
    let dirs: Vec<std::path::PathBuf> = std::fs::read_dir(root.join(suite))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

/// Every row of every results.csv under `root`, as column → value.
pub fn results(root: &std::path::Path) -> Vec<std::collections::HashMap<String, String>> {
    csv_rows(root, "results.csv")
}

/// Every row of every CSV file called `name` under `root`, as column → value.
pub fn csv_rows(
    root: &std::path::Path,
    name: &str,
) -> Vec<std::collections::HashMap<String, String>> {
    let mut out = Vec::new();
    for p in files(root).into_iter().filter(|p| p.ends_with(name)) {
        let mut r = csv::Reader::from_path(&p).unwrap();
        let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
        for rec in r.records() {
            let rec = rec.unwrap();
            out.push(
                header
                    .iter()
                    .cloned()
                    .zip(rec.iter().map(str::to_string))
                    .collect(),
            );
        }
    }
    out
}

/// The text of every file under `root` (to prove a secret is written nowhere).
pub fn all_files_text(root: &std::path::Path) -> String {
    files(root)
        .iter()
        .map(|p| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned())
        .collect()
}

/// The number after `label` on the sysbench report line that starts with it (e.g.
/// `"ignored errors:"`, `"read:"`).
pub fn report_count(stdout: &str, label: &str) -> u64 {
    stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix(label))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no `{label}` line: {stdout}"))
}
