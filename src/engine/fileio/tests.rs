//! Unit tests of the fileio workload: option checks, sysbench's text, and small real runs in a
//! temporary directory through the driver.

use std::sync::atomic::AtomicBool;

use super::*;
use crate::engine::driver;
use crate::engine::metric;
use crate::value::{Options, Value};

/// The workload's typed configuration from hand-built options.
fn config(o: &Options) -> Result<Config, EngineError> {
    Config::new(&SPEC.reader(o), &RunConfig::for_prepare(o)?)
}

fn options(dir: &std::path::Path, mode: Option<&str>, extra: &[(&str, Value)]) -> Options {
    let mut o = Options::default();
    let base = [
        ("threads", Value::Int(1)),
        ("events", Value::Int(0)),
        ("time", Value::Int(1)),
        ("report_interval", Value::Int(0)),
        ("percentile", Value::Float(95.0)),
        ("rand_seed", Value::Int(3)),
        ("file_num", Value::Int(4)),
        ("file_block_size", Value::Int(4096)),
        ("file_total_size", Value::Int(256 * 1024)),
        ("file_io_mode", Value::Str("sync".into())),
        ("file_async_backlog", Value::Int(8)),
        ("file_extra_flags", Value::List(vec![])),
        ("file_fsync_freq", Value::Int(100)),
        ("file_fsync_all", Value::Bool(false)),
        ("file_fsync_end", Value::Bool(true)),
        ("file_fsync_mode", Value::Str("fsync".into())),
        ("file_merged_requests", Value::Int(0)),
        ("file_rw_ratio", Value::Float(1.5)),
        ("validate", Value::Bool(false)),
        ("file_dir", Value::Str(dir.display().to_string())),
    ];
    for (k, v) in base {
        o.0.insert(k.into(), v);
    }
    if let Some(m) = mode {
        o.0.insert("file_test_mode".into(), Value::Str(m.into()));
    }
    for (k, v) in extra {
        o.0.insert((*k).into(), v.clone());
    }
    o
}

fn prepare(o: &Options, cleanup: bool) -> String {
    let w = FileIo::new(config(o).expect("valid options"));
    let mut out = Vec::new();
    w.prepare(cleanup, &mut out, &AtomicBool::new(false))
        .expect("prepare");
    String::from_utf8(out).expect("utf8")
}

fn run(o: &Options) -> Result<(StepOutcome, String), EngineError> {
    let w = FileIo::new(config(o)?);
    let cfg = RunConfig::from_options(o)?;
    let mut out = Vec::new();
    let outcome = driver::run(
        &w,
        &cfg,
        &mut out,
        &mut |_: &crate::engine::IntervalSample| {},
        &AtomicBool::new(false),
    )?;
    Ok((outcome, String::from_utf8(out).expect("utf8")))
}

fn events(o: &Options, n: i64) -> Options {
    let mut o = o.clone();
    o.0.insert("events".into(), Value::Int(n));
    o.0.insert("time".into(), Value::Int(0));
    o
}

#[test]
fn sizes_print_like_sysbench() {
    assert_eq!(size_str(16384), "16KiB");
    assert_eq!(size_str(4 << 20), "4MiB");
    assert_eq!(size_str(2 << 30), "2GiB");
    assert_eq!(size_str(1 << 30), "1GiB");
    assert_eq!(size_str(1 << 20), "1MiB");
    assert_eq!(size_str(1024), "1KiB");
    assert_eq!(size_str(1000), "1000B");
    assert_eq!(size_str(5000), "4.8828KiB");
    assert_eq!(size_str(3_495_253), "3.3333MiB");
    assert_eq!(size_str(100_000 * 5000 / 25), "19.073MiB");
}

#[test]
fn option_errors_name_the_options() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tiny = options(dir.path(), None, &[("file_total_size", Value::Int(8192))]);
    let e = config(&tiny).unwrap_err().to_string();
    assert!(
        e.contains("file_total_size") && e.contains("file_block_size"),
        "{e}"
    );
    let direct = options(
        dir.path(),
        None,
        &[
            ("file_block_size", Value::Int(1000)),
            (
                "file_extra_flags",
                Value::List(vec![Value::Str("direct".into())]),
            ),
        ],
    );
    let e = config(&direct).unwrap_err().to_string();
    assert!(e.contains("file_extra_flags=direct"), "{e}");
    // no mode: prepare works, run refuses before printing anything
    let o = options(dir.path(), None, &[]);
    prepare(&o, false);
    let e = run(&o).unwrap_err().to_string();
    assert!(e.contains("file_test_mode") && e.contains("rndrw"), "{e}");
}

#[test]
fn prepare_prints_sysbench_lines_and_cleanup_removes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = options(dir.path(), None, &[]);
    let text = prepare(&o, false);
    assert!(text.starts_with(
        "4 files, 64Kb each, 0Mb total\nCreating files for the test...\nExtra file open flags: (none)\nCreating file test_file.0\nCreating file test_file.1\n"
    ), "{text}");
    assert!(text.contains("262144 bytes written in "), "{text}");
    for i in 0..4 {
        let len = std::fs::metadata(dir.path().join(format!("test_file.{i}")))
            .expect("file")
            .len();
        assert_eq!(len, 65536);
    }
    let again = prepare(&o, false);
    assert!(
        again.contains("Reusing existing file test_file.3\nNo bytes written.\n"),
        "{again}"
    );
    assert_eq!(prepare(&o, true), "Removing test files...\n");
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
}

#[test]
fn run_without_prepare_fails_and_creates_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = options(dir.path(), Some("rndrd"), &[]);
    let e = run(&events(&o, 10)).unwrap_err().to_string();
    assert!(e.contains("run `prepare` first"), "{e}");
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
}

#[test]
fn rndrw_counts_reads_writes_and_fsync_bursts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = options(dir.path(), Some("rndrw"), &[]);
    prepare(&o, false);
    // 208 events = 2 cycles of 100 r/w + 4 fsyncs: 120 reads, 80 writes, 8 + 4 (end) fsyncs.
    let (outcome, text) = run(&events(&o, 208)).expect("run");
    assert_eq!(outcome.events, 208);
    let secs = outcome.seconds;
    let count = |name| (metric(&outcome.metrics, name).expect(name) * secs).round() as u64;
    assert_eq!(count("file_reads_ps"), 120);
    assert_eq!(count("file_writes_ps"), 80);
    assert_eq!(count("file_fsyncs_ps"), 12);
    assert!(text.contains(
        "Extra file open flags: (none)\n4 files, 64KiB each\n256KiB total file size\nBlock size 4KiB\nNumber of IO requests: 208\nRead/Write ratio for combined random IO test: 1.50\nPeriodic FSYNC enabled, calling fsync() each 100 requests.\nCalling fsync() at the end of test, Enabled.\nUsing synchronous I/O mode\nDoing random r/w test\nInitializing worker threads...\n"
    ), "{text}");
    assert!(
        text.contains("Threads started!\n\n\nFile operations:\n    reads/s:                      "),
        "{text}"
    );
    assert!(
        text.contains("\n\nThroughput:\n    read, MiB/s:                  "),
        "{text}"
    );
    assert!(text.contains("\n\nGeneral statistics:\n"), "{text}");
}

#[test]
fn seqwr_recreates_and_walks_the_cursor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = options(
        dir.path(),
        Some("seqwr"),
        &[
            ("file_fsync_freq", Value::Int(0)),
            ("file_fsync_end", Value::Bool(false)),
        ],
    );
    prepare(&o, false);
    // 18 blocks of 4 KiB: file 0 complete (16 blocks), 2 blocks of file 1, files 2-3 empty.
    let (outcome, _) = run(&events(&o, 18)).expect("run");
    assert_eq!(outcome.events, 18);
    let len = |i| {
        std::fs::metadata(dir.path().join(format!("test_file.{i}")))
            .expect("file")
            .len()
    };
    assert_eq!([len(0), len(1), len(2), len(3)], [65536, 8192, 0, 0]);
    // mmap cannot extend a file: the re-created files get their full size first
    let mut mmap = o.clone();
    mmap.0
        .insert("file_io_mode".into(), Value::Str("mmap".into()));
    let (outcome, text) = run(&events(&mmap, 18)).expect("mmap run");
    assert_eq!(outcome.events, 18);
    assert!(text.contains("Using fast mmaped I/O mode\n"), "{text}");
    assert_eq!([len(0), len(1), len(2), len(3)], [65536; 4]);
}

#[test]
fn validate_round_trips_and_catches_corruption() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = options(
        dir.path(),
        Some("rndrw"),
        &[("validate", Value::Bool(true))],
    );
    prepare(&o, false);
    run(&events(&o, 300)).expect("validated run");
    let mmap = options(
        dir.path(),
        Some("seqrd"),
        &[
            ("validate", Value::Bool(true)),
            ("file_io_mode", Value::Str("mmap".into())),
        ],
    );
    run(&events(&mmap, 64)).expect("validated mmap reads");
    // corrupt one byte of block 3 of file 0: a sequential read of file 0 must fail
    let path = dir.path().join("test_file.0");
    let mut data = std::fs::read(&path).expect("read");
    data[3 * 4096 + 10] ^= 0xff;
    std::fs::write(&path, data).expect("write");
    let e = run(&events(
        &options(
            dir.path(),
            Some("seqrd"),
            &[("validate", Value::Bool(true))],
        ),
        8,
    ))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("validation failed on file test_file.0, block offset 12288"),
        "{e}"
    );
}

#[test]
fn async_mode_runs_or_says_why_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = options(
        dir.path(),
        Some("rndrd"),
        &[
            ("file_io_mode", Value::Str("async".into())),
            ("validate", Value::Bool(true)),
        ],
    );
    prepare(&o, false);
    let (outcome, text) = run(&events(&o, 500)).expect("async run");
    assert_eq!(outcome.events, 500);
    let secs = outcome.seconds;
    let reads = (metric(&outcome.metrics, "file_reads_ps").expect("reads") * secs).round();
    assert_eq!(reads, 500.0, "all submitted reads completed by the end");
    if uring::probe().is_ok() {
        assert!(text.contains("Using asynchronous I/O mode\n"), "{text}");
    } else {
        assert!(text.contains("NOTE: io_uring is not available"), "{text}");
    }
}

#[test]
fn interim_line_has_sysbench_shape() {
    let dir = tempfile::tempdir().expect("tempdir");
    let w = FileIo::new(config(&options(dir.path(), Some("rndrd"), &[])).expect("ok"));
    w.slots[0].publish(&Tally {
        reads: 100,
        writes: 50,
        fsyncs: 10,
        read_bytes: 2 << 20,
        written_bytes: 1 << 20,
    });
    let mut s = IntervalSample {
        time_s: 2.0,
        lat_pct_ms: 0.0123,
        ..IntervalSample::default()
    };
    let line = w.interim(&mut s).expect("own line");
    assert_eq!(
        line,
        "[ 2s ] reads: 1.00 MiB/s writes: 0.50 MiB/s fsyncs: 5.00/s latency (ms,95%): 0.012"
    );
    assert_eq!(metric(&s.metrics, "file_reads_ps"), Some(50.0));
    // the next interval reports only what happened since
    let mut s2 = IntervalSample {
        time_s: 3.0,
        ..IntervalSample::default()
    };
    w.interim(&mut s2);
    assert_eq!(metric(&s2.metrics, "file_reads_ps"), Some(0.0));
}
