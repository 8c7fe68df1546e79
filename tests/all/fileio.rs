//! fileio end to end: the real binary in a temporary working directory, through the plan's
//! prepare → run → cleanup steps, with results read back from the CSV.

use std::path::Path;

use crate::common;

use common::sbsuite;

const SUITE: &str = "[suite]\nname = \"fio\"\n\n[defaults]\nworkload = \"fileio\"\n";

/// Files in `dir` other than the suite file and the results directory.
fn stray(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "suite.toml" && n != "res")
        .collect()
}

fn run_in(dir: &Path, sets: &[&str]) -> std::process::Output {
    std::fs::write(dir.join("suite.toml"), SUITE).unwrap();
    let mut cmd = sbsuite();
    cmd.current_dir(dir).args([
        "run",
        "suite.toml",
        "--progress",
        "plain",
        "--results-dir",
        "res",
    ]);
    for s in [
        "workload=fileio",
        "file_total_size=8M",
        "file_num=4",
        "time=1",
    ]
    .iter()
    .chain(sets)
    {
        cmd.args(["--set", s]);
    }
    cmd.output().unwrap()
}

#[test]
fn prepare_run_cleanup_in_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(dir.path(), &["file_test_mode=rndrw"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("4 files, 2048Kb each, 8Mb total\nCreating files for the test...\n"),
        "{stdout}"
    );
    assert!(stdout.contains("Creating file test_file.3\n"), "{stdout}");
    assert!(stdout.contains("Doing random r/w test\n"), "{stdout}");
    assert!(
        stdout.contains("\nFile operations:\n    reads/s:                      "),
        "{stdout}"
    );
    assert!(
        stdout.contains("\nThroughput:\n    read, MiB/s:                  "),
        "{stdout}"
    );
    assert!(stdout.contains("Removing test files...\n"), "{stdout}");
    // cleanup removed every test file; nothing else was created
    assert!(stray(dir.path()).is_empty(), "{:?}", stray(dir.path()));

    let csv_path = walk(&dir.path().join("res"), "results.csv").expect("results.csv");
    let mut r = csv::Reader::from_path(csv_path).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    let rows: Vec<Vec<String>> = r
        .records()
        .map(|rec| rec.unwrap().iter().map(str::to_string).collect())
        .collect();
    assert_eq!(rows.len(), 1);
    for name in [
        "file_reads_ps",
        "file_writes_ps",
        "file_fsyncs_ps",
        "read_mib_per_s",
        "written_mib_per_s",
    ] {
        let i = header.iter().position(|h| h == name).expect(name);
        let v: f64 = rows[0][i].parse().unwrap_or_else(|_| panic!("{name}"));
        assert!(v > 0.0, "{name} = {v}");
    }
}

fn walk(dir: &Path, name: &str) -> Option<std::path::PathBuf> {
    for e in std::fs::read_dir(dir).ok()? {
        let p = e.ok()?.path();
        if p.is_dir() {
            if let Some(f) = walk(&p, name) {
                return Some(f);
            }
        } else if p.file_name().is_some_and(|n| n == name) {
            return Some(p);
        }
    }
    None
}

#[test]
fn a_run_without_a_mode_fails_clearly_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(dir.path(), &[]);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{all}");
    assert!(
        all.contains("file_test_mode") && all.contains("rndrw"),
        "{all}"
    );
    assert!(stray(dir.path()).is_empty(), "{:?}", stray(dir.path()));
}

/// `sbsuite run` always plans the prepare of a fileio dataset, so a run without prepared files
/// cannot be reached through the binary (the engine's "run `prepare` first" error is covered by
/// the unit tests); a configuration whose files would be smaller than one block must fail
/// before any file is created.
#[test]
fn files_smaller_than_a_block_fail_before_touching_disk() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(dir.path(), &["file_test_mode=rndrd", "file_block_size=4M"]);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{all}");
    assert!(
        all.contains("file_total_size") && all.contains("file_block_size"),
        "{all}"
    );
    assert!(stray(dir.path()).is_empty(), "{:?}", stray(dir.path()));
}

/// sysbench's own command line, run before prepare: a clear error, non-zero, no stray files.
#[test]
fn sysbench_command_line_run_before_prepare_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::sbsuite()
        .args([
            "sysbench",
            "fileio",
            "--file-test-mode=rndrd",
            "--file-total-size=4M",
            "run",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("run `prepare` first"), "{text}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
