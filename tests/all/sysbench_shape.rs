//! The report of every system test has exactly sysbench 1.0.20's shape: the same command line
//! through real sysbench and through `sbsuite sysbench`, numbers masked, must print the same
//! lines; the banner line must start with `sysbench 1.0.20` in both (sbsuite's names sbsuite).
//! Lines sysbench refuses must be refused the same way: same exit code, same stdout, same first
//! stderr line (#14).
//!
//! Needs sysbench on the PATH. Without it the tests print why and pass, except under CI
//! (`CI=true`), where a missing sysbench is a failure: `.ci/run` installs it.

use crate::common;

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

/// sysbench's banner and sbsuite's (`sysbench 1.0.20-compatible (sbsuite …)`, #14) become one
/// line, so a parser anchoring on `^sysbench 1.0.20` reads both; any other first line differs.
fn mask_banner(line: &str) -> Option<&'static str> {
    (line.starts_with("sysbench 1.0.20 (using ")
        || line.starts_with("sysbench 1.0.20-compatible (sbsuite "))
    .then_some("sysbench 1.0.20 <banner>")
}

/// Numbers (and the spaces that align them) become ` N`; the banner is masked by
/// [`mask_banner`].
fn mask(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| {
            if let Some(banner) = mask_banner(line) {
                return banner.to_string();
            }
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

/// One command line through both tools, in an empty directory: (exit code, masked stdout,
/// stderr lines).
fn refused_by_both(args: &[&str]) -> [(Option<i32>, Vec<String>, Vec<String>); 2] {
    refused_by_both_in(tempfile::tempdir().unwrap().path(), args)
}

/// [`refused_by_both`] in `dir`, which both tools read (sysbench first).
fn refused_by_both_in(dir: &Path, args: &[&str]) -> [(Option<i32>, Vec<String>, Vec<String>); 2] {
    let theirs = Command::new("sysbench")
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let ours = common::sbsuite()
        .arg("sysbench")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    [theirs, ours].map(|o| {
        (
            o.status.code(),
            mask(&String::from_utf8_lossy(&o.stdout)),
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .map(str::to_string)
                .collect(),
        )
    })
}

/// The line is refused by both with exit code 1, the same masked stdout and the same first
/// stderr line; when sysbench's stderr is empty, sbsuite's holds only its `error: …` explanation.
fn assert_refused_as_sysbench(args: &[&str]) {
    assert_refused_as_sysbench_in(tempfile::tempdir().unwrap().path(), args);
}

/// [`assert_refused_as_sysbench`] in `dir`.
fn assert_refused_as_sysbench_in(dir: &Path, args: &[&str]) {
    let [theirs, ours] = refused_by_both_in(dir, args);
    assert_eq!(ours.0, Some(1), "exit code of {args:?}");
    assert_eq!(ours.0, theirs.0, "exit code of {args:?}");
    assert_eq!(ours.1, theirs.1, "stdout of {args:?}");
    match theirs.2.first() {
        Some(line) => assert_eq!(
            ours.2.first(),
            Some(line),
            "first stderr line of {args:?}: {:?}",
            ours.2
        ),
        // sysbench said it all on stdout; only sbsuite's explanation may follow.
        None => assert!(
            ours.2.iter().all(|l| l.starts_with("error: ")),
            "stderr of {args:?}: {:?}",
            ours.2
        ),
    }
}

/// #14: a value sysbench 1.0.20 checks itself is refused in its words, on its stream (stdout,
/// before the banner for a general option, after it for a test's) and with its exit code:
/// the whole stdout is compared, masked, and sbsuite's explanation follows on stderr only.
/// fileio lines are all `run`: sysbench's `prepare` with a bad mode creates its 2G of files.
#[test]
fn values_sysbench_checks_are_refused_in_its_words() {
    if !sysbench_available() {
        return;
    }
    let fileio = |extra: &'static str| ["fileio", "--file-test-mode=rndrd", extra, "run"];
    for args in [
        &["cpu", "--threads=0", "run"][..],
        &["cpu", "--threads=", "run"],
        &["cpu", "--threads=0", "help"],
        &["cpu", "--rand-type=bogus", "run"],
        &["cpu", "--percentile=101", "run"],
        &["cpu", "--verbosity=9", "run"],
        &["cpu", "--forced-shutdown=bogus", "run"],
        &["cpu", "--report-checkpoints=5,x", "run"],
        &["cpu", "--thread-stack-size=0", "run"],
        &["cpu", "--cpu-max-prime=0", "run"],
        &["fileio", "--file-test-mode=bogus", "run"],
        &fileio("--file-io-mode=bogus"),
        &fileio("--file-fsync-mode=bogus"),
        &fileio("--file-extra-flags=bogus"),
        &fileio("--file-num=0"),
        &fileio("--file-block-size=0"),
        &fileio("--file-total-size=0"),
        &fileio("--file-rw-ratio=-1"),
        &fileio("--file-merged-requests=-1"),
        &fileio("--file-fsync-freq=-1"),
        &["memory", "--memory-oper=bogus", "run"],
        &["memory", "--memory-scope=bogus", "run"],
        &["memory", "--memory-access-mode=bogus", "run"],
        &["memory", "--memory-block-size=3", "run"],
        // sysbench names these as typed (#26).
        &["memory", "--memory-block-size=-1", "run"],
        &["memory", "--memory-block-size=abc", "run"],
        // sysbench's parser refuses this before its check (stderr), as sbsuite does.
        &["cpu", "--threads=1.5", "run"],
    ] {
        assert_refused_as_sysbench(args);
    }
}

/// #26: fileio's run without its files, with files shorter than the run expects, and without
/// `--file-test-mode` prints sysbench 1.0.20's FATAL and WARNING lines where sysbench does
/// (right after `Doing … test`, without `Initializing worker threads...`), its WARNING only
/// from verbosity 2, and exits 1; `--validate` prints `Validation checks: on.` and fileio's
/// `Using checksums validation.`.
#[test]
fn fileio_without_usable_files_or_test_mode_fails_as_sysbench() {
    if !sysbench_available() {
        return;
    }
    let run = |extra: &[&'static str]| -> Vec<&'static str> {
        ["fileio", "--file-num=4", "--file-total-size=32M"]
            .into_iter()
            .chain(extra.iter().copied())
            .chain(["run"])
            .collect()
    };
    // No files: an empty directory per tool.
    for extra in [
        &["--file-test-mode=seqrd"][..],
        &["--file-test-mode=rndrw", "--verbosity=2"],
        &["--file-test-mode=rndwr", "--verbosity=1"],
        &["--file-test-mode=rndrd", "--file-io-mode=mmap"],
    ] {
        assert_refused_as_sysbench(&run(extra));
    }
    // Short files: 4 files of 256K (sysbench's prepare of 1M), read by both tools at 32M, and
    // sysbench's GH-196 case of 8 files of 4M read as 4 files of 8M.
    for prepared in ["--file-total-size=1M", "--file-num=8"] {
        let dir = tempfile::tempdir().unwrap();
        let made = Command::new("sysbench")
            .args(["fileio", "--file-num=4", "--file-total-size=32M", prepared])
            .arg("prepare")
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(made.status.success());
        for extra in [
            &["--file-test-mode=rndwr", "--events=1"][..],
            &["--file-test-mode=seqrd"],
            &["--file-test-mode=rndrd", "--verbosity=2"],
        ] {
            assert_refused_as_sysbench_in(dir.path(), &run(extra));
        }
    }

    // No --file-test-mode: sysbench's FATAL after its banner, then fileio's options (sbsuite's
    // descriptions, and its extensions after sysbench's list).
    let [theirs, ours] = refused_by_both(&run(&[]));
    assert_eq!((ours.0, theirs.0), (Some(1), Some(1)));
    assert!(
        ours.2.iter().all(|l| l.starts_with("error: ")),
        "{:?}",
        ours.2
    );
    let fatal = "FATAL: Missing required argument: --file-test-mode";
    assert_eq!(theirs.1[..4], ["sysbench 1.0.20 <banner>", "", fatal, ""]);
    assert_eq!(ours.1[..4], theirs.1[..4], "{:?}", ours.1);
    let shape = |lines: &[String]| help_shape(&lines[4..].join("\n"));
    let (their_help, our_help) = (shape(&theirs.1), shape(&ours.1));
    assert!(our_help.len() > their_help.len());
    for (o, t) in our_help.iter().zip(&their_help) {
        match (o, t) {
            // The value column: sbsuite's --file-block-size says SIZE (see assert_help_shape).
            (HelpLine::Option { left: ol, .. }, HelpLine::Option { left: tl, .. }) => {
                assert_eq!(ol.split('=').next(), tl.split('=').next())
            }
            _ => assert_eq!(o, t, "{:?}", ours.1),
        }
    }

    // --validate: the general line and fileio's.
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let small = ["fileio", "--file-num=2", "--file-total-size=4M"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        small.into_iter().chain(extra.iter().copied()).collect()
    };
    assert_same_shape((a.path(), b.path()), &with(&["prepare"]));
    let (theirs, ours) = run_both(
        (a.path(), b.path()),
        &with(&[
            "--file-test-mode=rndwr",
            "--validate=on",
            "--events=50",
            "--time=0",
            "run",
        ]),
    );
    assert_eq!(ours, theirs);
    assert!(
        ours.contains(&"Validation checks: on.".to_string()),
        "{ours:?}"
    );
    assert!(
        ours.contains(&"Using checksums validation.".to_string()),
        "{ours:?}"
    );
    // seqwr re-creates the files (and leaves them as long as it wrote).
    assert_same_shape(
        (a.path(), b.path()),
        &with(&[
            "--file-test-mode=seqwr",
            "--validate",
            "--events=50",
            "--time=0",
            "run",
        ]),
    );
    assert_same_shape(
        (a.path(), b.path()),
        &["cpu", "--validate", "--events=10", "--time=0", "run"],
    );
}

/// A scratch database on the shared MariaDB or PostgreSQL server, dropped by
/// [`ScratchDb::drop`]; `None` after saying why when the server does not accept the test's user
/// (root@127.0.0.1:3306, postgres@127.0.0.1:5432).
struct ScratchDb {
    name: &'static str,
    pgsql: bool,
}

impl ScratchDb {
    fn mysql(name: &'static str) -> Option<ScratchDb> {
        ScratchDb::create(name, false)
    }

    fn pgsql(name: &'static str) -> Option<ScratchDb> {
        ScratchDb::create(name, true)
    }

    fn create(name: &'static str, pgsql: bool) -> Option<ScratchDb> {
        let created = admin(
            pgsql,
            &[
                format!("DROP DATABASE IF EXISTS {name}"),
                format!("CREATE DATABASE {name}"),
            ],
        );
        if created.is_none() {
            common::skip(if pgsql {
                "no PostgreSQL server accepts postgres@127.0.0.1:5432 (.ci/run starts one)"
            } else {
                "no MySQL/MariaDB server accepts root@127.0.0.1:3306 (.ci/run starts one)"
            });
        }
        created.map(|()| ScratchDb { name, pgsql })
    }
}

impl Drop for ScratchDb {
    fn drop(&mut self) {
        admin(
            self.pgsql,
            &[format!("DROP DATABASE IF EXISTS {}", self.name)],
        );
    }
}

/// Runs `sql` on a fresh admin connection; `None` when the server is unreachable or refuses.
fn admin(pgsql: bool, sql: &[String]) -> Option<()> {
    if pgsql {
        common::db::admin_pg(sql)
    } else {
        common::db::admin_my(sql)
    }
}

/// #14: a run that cannot start (no server, no tables) prints what sysbench prints before it
/// fails (banner, `Running the test with following options:` header, `Initializing worker
/// threads...`), then `FATAL:` lines on stdout, nothing on stderr, and exits 1. Compared,
/// masked: the exit code; every stdout line before the first `FATAL:` line; sysbench's first
/// `FATAL:` lines that have a fixed form (MySQL's `unable to connect to MySQL server on host
/// …, port …, aborting...`; for a missing table MySQL's `mysql_stmt_prepare() failed` and
/// `MySQL error: 1146 "Table 'db.sbtest1' doesn't exist"`, PostgreSQL's `PQprepare() failed:
/// ERROR:  relation "sbtest1" does not exist`) are sbsuite's first ones, equal; for PostgreSQL's
/// `Connection to database failed: …` sbsuite's line is a prefix of sysbench's, which goes on
/// with libpq's message. Then exactly one more line, sbsuite's explanation. sysbench crashes
/// (SIGSEGV) after PostgreSQL's missing-table line, so the exit code is not compared there.
#[test]
fn failed_connection_and_missing_table_print_as_sysbench() {
    if !sysbench_available() {
        return;
    }
    let mysql = [
        "--db-driver=mysql",
        "--mysql-host=127.0.0.1",
        "--mysql-user=root",
    ];
    let pgsql = [
        "--db-driver=pgsql",
        "--pgsql-host=127.0.0.1",
        "--pgsql-user=postgres",
    ];
    let line = |driver: &[&'static str], extra: &[&'static str]| -> Vec<&'static str> {
        ["oltp_point_select"]
            .into_iter()
            .chain(driver.iter().copied())
            .chain(extra.iter().copied())
            .chain(["run"])
            .collect()
    };
    let before_fatal = |out: &[String]| -> Vec<String> {
        out.iter()
            .take_while(|l| !l.starts_with("FATAL:"))
            .cloned()
            .collect()
    };
    let check =
        |args: &[&str], theirs_n: usize, prefix: bool, explanation: &str, same_exit: bool| {
            let [theirs, ours] = refused_by_both(args);
            assert_eq!(ours.0, Some(1), "exit code of {args:?}");
            if same_exit {
                assert_eq!(ours.0, theirs.0, "exit code of {args:?}");
            }
            assert_eq!(
                before_fatal(&ours.1),
                before_fatal(&theirs.1),
                "stdout of {args:?}"
            );
            assert!(
                before_fatal(&ours.1)
                    .iter()
                    .any(|l| l == "Initializing worker threads..."),
                "{args:?}: {:?}",
                ours.1
            );
            assert!(ours.2.is_empty(), "stderr of {args:?}: {:?}", ours.2);
            // sysbench's first `theirs_n` FATAL lines, then sbsuite's explanation, nothing else.
            let fatals = |out: &[String]| -> Vec<String> {
                out.iter()
                    .filter(|l| l.starts_with("FATAL:"))
                    .cloned()
                    .collect()
            };
            let (our_fatals, their_fatals) = (fatals(&ours.1), fatals(&theirs.1));
            assert_eq!(our_fatals.len(), theirs_n + 1, "{args:?}: {our_fatals:?}");
            for (o, t) in our_fatals.iter().zip(&their_fatals).take(theirs_n) {
                if prefix {
                    assert!(
                        t.starts_with(o.as_str()),
                        "{args:?}: sysbench's {t:?}, sbsuite's {o:?}"
                    );
                } else {
                    assert_eq!(o, t, "{args:?}");
                }
            }
            assert!(
                our_fatals[theirs_n].starts_with(explanation),
                "{args:?}: {our_fatals:?}"
            );
        };
    let (unreachable, no_table) = (
        "FATAL: cannot connect",
        "FATAL: table 'sbtest N' does not exist",
    );
    check(
        &line(&mysql, &["--mysql-port=1"]),
        1,
        false,
        unreachable,
        true,
    );
    if let Some(db) = ScratchDb::mysql("sbsuite_t_shape_no_tables") {
        let db_opt = format!("--mysql-db={}", db.name);
        let args: Vec<&str> = line(&mysql, &[])
            .into_iter()
            .take(4)
            .chain([db_opt.as_str(), "run"])
            .collect();
        check(&args, 2, false, no_table, true);
    }
    if let Some(db) = ScratchDb::pgsql("sbsuite_t_shape_no_tables") {
        let unreachable_pg = "FATAL: cannot connect";
        check(
            &line(&pgsql, &["--pgsql-port=1", "--pgsql-db=postgres"]),
            1,
            true,
            unreachable_pg,
            true,
        );
        let db_opt = format!("--pgsql-db={}", db.name);
        let args: Vec<&str> = line(&pgsql, &[])
            .into_iter()
            .take(4)
            .chain([db_opt.as_str(), "run"])
            .collect();
        check(&args, 1, false, no_table, false);
    }
}

/// #14 items 3 and 4: a line sysbench refuses is refused with sysbench's exit code (1, never
/// sbsuite's 2), sysbench's stdout (banner and `FATAL:` lines) and sysbench's first stderr line;
/// sbsuite's own explanation may follow on stderr.
#[test]
fn refused_lines_exit_and_print_as_sysbench() {
    if !sysbench_available() {
        return;
    }
    for args in [
        &["cpu", "prepare"][..],
        &["cpu", "cleanup"],
        &["memory", "prepare"],
        &["threads", "cleanup"],
        &["mutex", "prepare"],
        &["cpu", "prewarm"],
        &["fileio", "prewarm"],
        &["bulk_insert", "prewarm"],
        &["run"],
        &["nosuch", "run"],
        &["cpu", "--bogus=1", "run"],
        &["cpu", "--thraeds=2", "run"],
        &["cpu", "--threads=abc", "run"],
        &["cpu", "--time=abc", "run"],
        &["cpu", "--cpu-max-prime=abc", "run"],
        &["cpu", "frob"],
        &["cpu", "--verbosity=0", "frob"],
        &["memory", "--verbosity=0", "cleanup"],
        &["cpu", "run", "extra"],
        &["cpu"],
    ] {
        assert_refused_as_sysbench(args);
    }
    // An unknown driver: sysbench gets further (the header, then three FATAL lines) before it
    // fails; the first FATAL line and the exit code are the same.
    let [theirs, ours] = refused_by_both(&["oltp_read_write", "--db-driver=nosuch", "run"]);
    let first_fatal = |out: &[String]| out.iter().find(|l| l.starts_with("FATAL:")).cloned();
    assert_eq!(ours.0, Some(1));
    assert_eq!(ours.0, theirs.0);
    assert_eq!(first_fatal(&ours.1), first_fatal(&theirs.1));
    assert_eq!(ours.1.first(), theirs.1.first(), "the banner");
}

/// #14 item 5: a `--rate` the threads cannot keep up with stops both tools as soon as the
/// event queue is full: no report, sysbench's `FATAL: The event queue is full…` line on
/// stdout, exit code 1 (sbsuite's explanation may follow on stderr). 10^6 arrivals/s against
/// one thread whose events take a millisecond (cpu) or much longer (threads): both fill the
/// 131072 slots within a fraction of a second, so the hour-long time limit is never reached.
#[test]
fn a_rate_that_cannot_be_offered_is_fatal_as_in_sysbench() {
    if !sysbench_available() {
        return;
    }
    for args in [
        &["cpu", "--threads=1", "--rate=1000000", "--time=3600", "run"][..],
        &[
            "threads",
            "--threads=1",
            "--rate=1000000",
            "--time=3600",
            "run",
        ],
        &[
            "cpu",
            "--threads=1",
            "--rate=1000000",
            "--time=3600",
            "--verbosity=0",
            "run",
        ],
    ] {
        let [theirs, ours] = refused_by_both(args);
        assert_eq!(ours.0, Some(1), "exit code of {args:?}");
        assert_eq!(ours.0, theirs.0, "exit code of {args:?}");
        assert_eq!(ours.1, theirs.1, "stdout of {args:?}");
        assert_eq!(
            ours.1.last().map(String::as_str),
            Some(
                "FATAL: The event queue is full. This means the worker threads are unable to keep \
                 up with the specified event generation rate"
            ),
            "{args:?}"
        );
        assert!(theirs.2.is_empty(), "sysbench's stderr: {:?}", theirs.2);
        assert!(
            ours.2.iter().all(|l| l.starts_with("error: ")),
            "stderr of {args:?}: {:?}",
            ours.2
        );
    }
}

/// #14 item 2: `--verbosity` 0–5 prints what sysbench prints at that level: nothing below 3
/// (no warnings or errors occur here), the report at 3, the progress notes (`Doing …`,
/// `Event limit exceeded, exiting...`, `Done.`) at 4, the `DEBUG:` lines at 5 and with
/// `--debug`. One thread, so sysbench's DEBUG lines come in a fixed order.
#[test]
fn verbosity_levels_print_what_sysbench_prints() {
    if !sysbench_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for level in ["0", "1", "2", "3", "4", "5"] {
        let v = format!("--verbosity={level}");
        for args in [
            &[
                "cpu",
                "--events=20",
                "--time=0",
                "--cpu-max-prime=2000",
                &v,
                "run",
            ][..],
            &["memory", "--memory-total-size=1M", &v, "run"],
            &["threads", "--events=10", "--time=0", &v, "run"],
            &["mutex", "--mutex-locks=100", &v, "run"],
        ] {
            assert_same_shape((dir.path(), dir.path()), args);
        }
    }
    assert_same_shape(
        (dir.path(), dir.path()),
        &[
            "cpu",
            "--events=5",
            "--time=0",
            "--verbosity=1",
            "--debug",
            "run",
        ],
    );
    // fileio: prepare and cleanup report through sysbench's logger (silent below 3); at 5 the
    // run also names each file it opens.
    let (theirs, ours) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for level in ["0", "3", "4", "5"] {
        let v = format!("--verbosity={level}");
        for cmd in ["prepare", "run", "cleanup"] {
            let args = [
                "fileio",
                "--file-total-size=1M",
                "--file-num=2",
                "--events=10",
                "--time=0",
                "--file-test-mode=rndrd",
                &v,
                cmd,
            ];
            assert_same_shape((theirs.path(), ours.path()), &args);
        }
    }
}

/// One line of a help text as tools scrape it (#14 item 6): headings as written, an option line
/// as its `--name=TYPE` column, the column its description starts at (the alignment) and its
/// `[default]`, a list entry (`  cpu - …`) as its name. Descriptions are sbsuite's own words,
/// so they are not compared; other text lines (usage, the closing hint) only by kind.
#[derive(Debug, PartialEq)]
enum HelpLine {
    Blank,
    Banner,
    Heading(String),
    Option {
        left: String,
        column: usize,
        default: Option<String>,
    },
    Entry(String),
    Text,
}

/// An option line's description, without its `[default]`.
fn description(line: &str) -> &str {
    let rest = line
        .trim_start()
        .split_once(' ')
        .map_or("", |r| r.1)
        .trim_start();
    match rest.rfind(" [") {
        Some(i) if rest.ends_with(']') => &rest[..i],
        _ if rest.starts_with('[') && rest.ends_with(']') => "",
        _ => rest,
    }
}

fn help_shape(text: &str) -> Vec<HelpLine> {
    text.lines()
        .map(|line| {
            if line.is_empty() {
                return HelpLine::Blank;
            }
            if mask_banner(line).is_some() {
                return HelpLine::Banner;
            }
            if let Some(opt) = line.strip_prefix("  --") {
                let left = opt.split(' ').next().unwrap_or(opt);
                let after = 2 + 2 + left.len();
                let column = after + line[after..].len() - line[after..].trim_start().len();
                let default = line
                    .rfind(" [")
                    .filter(|&i| i >= after && line.ends_with(']'))
                    .map(|i| line[i + 2..line.len() - 1].to_string());
                return HelpLine::Option {
                    left: format!("--{left}"),
                    column,
                    default,
                };
            }
            if let Some(entry) = line.strip_prefix("  ")
                && let Some((name, _)) = entry.split_once(" - ")
                && !name.contains(' ')
            {
                return HelpLine::Entry(name.to_string());
            }
            if !line.starts_with(' ') && line.ends_with(':') {
                return HelpLine::Heading(line.to_string());
            }
            HelpLine::Text
        })
        .collect()
}

/// sysbench's help for these arguments and sbsuite's, each with its shape: same exit code,
/// same first stderr line, sysbench's lines first and in sysbench's shape, then only
/// sbsuite's extras under headings sysbench does not have. Returns the extra lines.
fn assert_help_shape(dir: &Path, args: &[&str]) -> Vec<HelpLine> {
    let theirs = Command::new("sysbench")
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let ours = common::sbsuite()
        .arg("sysbench")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert_eq!(
        ours.status.code(),
        theirs.status.code(),
        "exit code of {args:?}"
    );
    let first_err = |o: &std::process::Output| {
        String::from_utf8_lossy(&o.stderr)
            .lines()
            .next()
            .map(str::to_string)
    };
    assert_eq!(first_err(&ours), first_err(&theirs), "stderr of {args:?}");
    let (their_text, our_text) = (
        String::from_utf8_lossy(&theirs.stdout).to_string(),
        String::from_utf8_lossy(&ours.stdout).to_string(),
    );
    let theirs = help_shape(&their_text);
    let mut ours = help_shape(&our_text);
    for line in &mut ours {
        // sbsuite's --file-block-size also takes sizes such as 16K (so does sysbench's, though
        // it prints N): the value column says SIZE, as for every size option.
        if let HelpLine::Option { left, .. } = line
            && left == "--file-block-size=SIZE"
        {
            *left = "--file-block-size=N".into();
        }
    }
    let show = || format!("--- sbsuite ---\n{our_text}\n--- sysbench ---\n{their_text}");
    assert!(
        ours.len() >= theirs.len(),
        "{args:?} is shorter\n{}",
        show()
    );
    for (i, (o, t)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(o, t, "{args:?}: line {}\n{}", i + 1, show());
    }
    // Descriptions are ours: none is sysbench's text.
    let options = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("  --"))
            .map(|l| description(l).to_lowercase())
            .collect()
    };
    for (o, t) in options(&our_text).iter().zip(options(&their_text)) {
        assert!(
            o != &t || o.is_empty(),
            "{args:?}: sysbench's description `{t}`"
        );
    }
    // The rest is sbsuite's own, under its own headings, with no option sysbench listed.
    let extra = ours.split_off(theirs.len());
    let name = |l: &HelpLine| match l {
        HelpLine::Option { left, .. } => Some(
            left.split(['=', '['])
                .next()
                .unwrap_or(left)
                .replace('_', "-"),
        ),
        _ => None,
    };
    let listed: Vec<String> = theirs.iter().filter_map(name).collect();
    if let Some(first) = extra.iter().find(|l| **l != HelpLine::Blank) {
        assert_eq!(
            first,
            &HelpLine::Heading("sbsuite extensions:".into()),
            "{args:?}\n{}",
            show()
        );
    }
    for line in &extra {
        if let Some(n) = name(line) {
            assert!(!listed.contains(&n), "{args:?}: {n} is listed twice");
        }
        if let HelpLine::Heading(h) = line {
            assert!(
                !theirs.contains(line),
                "{args:?}: heading {h} is sysbench's"
            );
        }
    }
    extra
}

/// #14 item 6: `--help` and each test's `help` have sysbench 1.0.20's shape — the same
/// headings, option names (`-` for the compiled-in tests, `_` for the Lua scripts, sorted as
/// sysbench sorts them), alignment, `[default]` values, stream and exit code — and sbsuite's
/// extra options come after them under `sbsuite extensions:`.
#[test]
fn help_has_sysbench_shape() {
    if !sysbench_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scripts = Path::new("/usr/share/sysbench");
    let has_extensions =
        |extra: &[HelpLine]| extra.iter().any(|l| matches!(l, HelpLine::Option { .. }));
    for args in [
        &["--help"][..],
        &["cpu", "--help"],
        &["cpu", "run", "--help"],
    ] {
        let extra = assert_help_shape(dir.path(), args);
        assert!(
            has_extensions(&extra),
            "{args:?}: sbsuite's extensions are listed"
        );
    }
    for test in ["cpu", "memory", "threads", "mutex"] {
        let extra = assert_help_shape(dir.path(), &[test, "help"]);
        assert!(extra.is_empty(), "{test}: {extra:?}");
    }
    assert!(has_extensions(&assert_help_shape(
        dir.path(),
        &["fileio", "help"]
    )));
    assert_help_shape(dir.path(), &["--verbosity=0", "memory", "help"]);
    // `--help` wins over everything else on the line; `TEST help` does not read the test's
    // option values, but refuses unknown options and bad general values.
    for args in [
        &["nosuch", "--help"][..],
        &["cpu", "--bogus=1", "--help"],
        &["cpu", "--threads=x", "--help"],
        &["cpu", "--cpu-max-prime=x", "help"],
        &["fileio", "--file-num=0", "--file-test-mode=zzz", "help"],
        &["cpu", "--help=off", "help"],
        &["cpu", "--bogus=1", "help"],
        &["cpu", "--threads=x", "help"],
        &["cpu", "--memory-block-size=1K", "help"],
    ] {
        assert_help_shape(dir.path(), args);
    }
    // bulk_insert has no options, and sysbench refuses its help.
    assert_help_shape(dir.path(), &["bulk_insert", "help"]);
    for script in [
        "oltp_read_write",
        "oltp_read_only",
        "oltp_write_only",
        "oltp_point_select",
        "oltp_update_index",
        "oltp_update_non_index",
        "oltp_insert",
        "oltp_delete",
        "select_random_points",
        "select_random_ranges",
    ] {
        let extra = assert_help_shape(dir.path(), &[script, "help"]);
        assert!(has_extensions(&extra), "{script}");
        let path = scripts.join(format!("{script}.lua"));
        if path.exists() {
            assert_help_shape(dir.path(), &[path.to_str().unwrap(), "help"]);
            assert_help_shape(scripts, &[&format!("{script}.lua"), "help"]);
        }
    }
}
