//! The report of every system test has exactly sysbench 1.0.20's shape: the same command line
//! through real sysbench and through `sbsuite sysbench`, numbers masked, must print the same
//! lines (except the first banner line, which names sbsuite).
//!
//! Needs sysbench on the PATH. Without it the tests print why and pass, except under CI
//! (`CI=true`), where a missing sysbench is a failure: `.ci/run` installs it.

mod common;

use std::path::Path;
use std::process::Command;

fn sysbench_available() -> bool {
    let found = Command::new("sysbench")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        common::skip("sysbench is not installed (apt-get install -y sysbench, as .ci/run does)");
    }
    found
}

/// Numbers (and the spaces that align them) become ` N`; the first line is dropped.
fn mask(text: &str) -> Vec<String> {
    text.lines()
        .skip(1)
        .map(|line| {
            let mut out = String::new();
            let mut chars = line.chars().peekable();
            let mut pending_spaces = String::new();
            while let Some(c) = chars.next() {
                if c == ' ' {
                    pending_spaces.push(c);
                    continue;
                }
                if c.is_ascii_digit() {
                    while chars
                        .peek()
                        .is_some_and(|d| d.is_ascii_digit() || *d == '.')
                    {
                        chars.next();
                    }
                    out.push_str(" N");
                    pending_spaces.clear();
                    continue;
                }
                out.push_str(&pending_spaces);
                pending_spaces.clear();
                out.push(c);
            }
            out.push_str(&pending_spaces);
            out
        })
        .collect()
}

/// Runs the same command line through sysbench in `dirs.0` and through sbsuite in `dirs.1`.
fn run_both(dirs: (&Path, &Path), args: &[&str]) -> (Vec<String>, Vec<String>) {
    let theirs = Command::new("sysbench")
        .args(args)
        .current_dir(dirs.0)
        .output()
        .unwrap();
    assert!(
        theirs.status.success(),
        "sysbench {args:?}: {}",
        String::from_utf8_lossy(&theirs.stderr)
    );
    let ours = common::sbsuite()
        .arg("sysbench")
        .args(args)
        .current_dir(dirs.1)
        .output()
        .unwrap();
    assert!(
        ours.status.success(),
        "sbsuite sysbench {args:?}: {}",
        String::from_utf8_lossy(&ours.stderr)
    );
    (
        mask(&String::from_utf8_lossy(&theirs.stdout)),
        mask(&String::from_utf8_lossy(&ours.stdout)),
    )
}

fn assert_same_shape(dirs: (&Path, &Path), args: &[&str]) {
    let (theirs, ours) = run_both(dirs, args);
    assert_eq!(
        ours,
        theirs,
        "output shape differs for {args:?}\n--- sbsuite ---\n{}\n--- sysbench ---\n{}",
        ours.join("\n"),
        theirs.join("\n")
    );
}

#[test]
fn cpu_memory_threads_mutex_reports_have_sysbench_shape() {
    if !sysbench_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &[
            "cpu",
            "--cpu-max-prime=2000",
            "--events=300",
            "--time=0",
            "run",
        ][..],
        &[
            "cpu",
            "--threads=2",
            "--events=300",
            "--time=0",
            "--percentile=99",
            "run",
        ],
        &["memory", "--memory-total-size=4M", "run"],
        &[
            "memory",
            "--memory-block-size=64K",
            "--memory-total-size=8M",
            "--memory-oper=read",
            "--memory-access-mode=rnd",
            "--threads=2",
            "run",
        ],
        &[
            "memory",
            "--memory-total-size=1M",
            "--memory-oper=none",
            "run",
        ],
        &[
            "threads",
            "--events=50",
            "--time=0",
            "--thread-yields=10",
            "run",
        ],
        &["mutex", "--threads=2", "--mutex-locks=1000", "run"],
    ] {
        assert_same_shape((dir.path(), dir.path()), args);
    }
}

#[test]
fn fileio_lifecycle_has_sysbench_shape() {
    if !sysbench_available() {
        return;
    }
    // Each tool prepares, runs and cleans up its own files, in its own directory.
    let (theirs, ours) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let size = ["--file-total-size=4M", "--file-num=4"];
    let with = |extra: &[&'static str]| -> Vec<&str> {
        size.iter().copied().chain(extra.iter().copied()).collect()
    };
    for mode in ["rndrw", "seqrd", "seqwr"] {
        let test_mode = format!("--file-test-mode={mode}");
        for cmd in ["prepare", "run", "cleanup"] {
            let mut args = vec!["fileio"];
            args.extend(with(&["--events=200", "--time=0"]));
            args.push(&test_mode);
            args.push(cmd);
            assert_same_shape((theirs.path(), ours.path()), &args);
        }
    }
    // The other io modes and fsync options, between one prepare and one cleanup.
    let prepare: Vec<&str> = ["fileio"]
        .into_iter()
        .chain(size)
        .chain(["prepare"])
        .collect();
    assert_same_shape((theirs.path(), ours.path()), &prepare);
    for extra in [
        &["--file-test-mode=rndrd", "--file-io-mode=async"][..],
        &["--file-test-mode=rndwr", "--file-io-mode=mmap"],
        &[
            "--file-test-mode=rndwr",
            "--file-fsync-all=on",
            "--file-fsync-mode=fdatasync",
        ],
        &[
            "--file-test-mode=seqrewr",
            "--file-merged-requests=4",
            "--file-extra-flags=dsync",
        ],
    ] {
        let args: Vec<&str> = ["fileio"]
            .into_iter()
            .chain(size)
            .chain(["--events=100", "--time=0"])
            .chain(extra.iter().copied())
            .chain(["run"])
            .collect();
        assert_same_shape((theirs.path(), ours.path()), &args);
    }
    let cleanup: Vec<&str> = ["fileio"]
        .into_iter()
        .chain(size)
        .chain(["cleanup"])
        .collect();
    assert_same_shape((theirs.path(), ours.path()), &cleanup);
    assert_eq!(
        std::fs::read_dir(ours.path()).unwrap().count(),
        0,
        "cleanup removes every file"
    );
}
