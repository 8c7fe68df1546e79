//! `sbsuite import`: real sysbench 1.0.20 output (tests/fixtures/sysbench/*.txt, captured from
//! Debian's package) and reconstructed 0.4.12 / 0.5 output (tests/fixtures/sysbench/
//! reconstructed/, see its README) become results.csv / intervals.csv rows whose numbers are
//! exactly the printed ones.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::common;

use common::sbsuite;

const FIX: &str = "tests/fixtures/sysbench";

type Rows = Vec<HashMap<String, String>>;

fn read(path: &Path) -> (Vec<String>, Rows) {
    let mut r = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    let rows = r
        .records()
        .map(|rec| {
            header
                .iter()
                .cloned()
                .zip(rec.unwrap().iter().map(str::to_string))
                .collect()
        })
        .collect();
    (header, rows)
}

struct Imported {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    header: Vec<String>,
    rows: Rows,
    intervals: Rows,
    stdout: String,
    stderr: String,
}

/// Imports `files` (relative to the fixture directory) with `extra` options.
fn import(files: &[&str], extra: &[&str]) -> Imported {
    let tmp = tempfile::tempdir().unwrap();
    let out = sbsuite()
        .arg("import")
        .args(files.iter().map(|f| format!("{FIX}/{f}")))
        .args(extra)
        .arg("--out")
        .arg(tmp.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let suite = tmp.path().join("imported");
    let dirs: Vec<PathBuf> = std::fs::read_dir(&suite)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let dir = dirs[0].clone();
    let (header, rows) = read(&dir.join("results.csv"));
    let (_, intervals) = read(&dir.join("intervals.csv"));
    Imported {
        _tmp: tmp,
        dir,
        header,
        rows,
        intervals,
        stdout,
        stderr,
    }
}

/// Asserts `row[column] == want` for each pair.
fn check(row: &HashMap<String, String>, want: &[(&str, &str)]) {
    for (col, v) in want {
        assert_eq!(
            row.get(*col).map(String::as_str),
            Some(*v),
            "column {col} of {row:?}"
        );
    }
}

fn column(rows: &Rows, col: &str) -> Vec<String> {
    rows.iter().map(|r| r[col].clone()).collect()
}

#[test]
fn results_have_the_columns_sbsuite_run_writes() {
    let imp = import(&["cpu.txt"], &[]);
    let want = sbsuite::results::results_columns(&["workload".into(), "threads".into()]);
    assert_eq!(imp.header, want);
    let (iheader, _) = read(&imp.dir.join("intervals.csv"));
    assert_eq!(iheader, sbsuite::results::csv::interval_columns());
    assert!(imp.dir.join("suite.toml").is_file());
    assert!(imp.dir.join("plan.json").is_file());
    assert!(
        imp.stdout.contains("imported 1 report from 1 file into"),
        "{}",
        imp.stdout
    );
}

#[test]
fn sysbench_1_0_cpu() {
    let imp = import(&["cpu.txt"], &[]);
    assert_eq!(imp.rows.len(), 1);
    check(
        &imp.rows[0],
        &[
            ("step", "1"),
            ("name", "cpu-t2"),
            ("variant", "default"),
            ("workload", "cpu"),
            ("threads", "2"),
            ("repetition", "1"),
            ("seconds", "3.0082"),
            ("events", "2661"),
            ("eps", "883.25"),
            ("tps", ""),
            ("qps", ""),
            ("lat_min", "0.3"),
            ("lat_avg", "2.24"),
            ("lat_max", "342.01"),
            ("lat_p95", "11.04"),
            ("lat_p50", ""),
            ("lat_p99", ""),
            ("percentile", "95"),
            ("lat_pct", "11.04"),
            ("lat_sum", "5958.18"),
            ("fairness_events_stddev", "9.5"),
            ("fairness_time_stddev", "0.02"),
            ("status", "ok"),
            ("error", ""),
        ],
    );
    assert_eq!(imp.intervals.len(), 3);
    assert_eq!(column(&imp.intervals, "time"), ["1", "2", "3"]);
    assert_eq!(column(&imp.intervals, "eps"), ["998.1", "973.61", "684.06"]);
    assert_eq!(
        column(&imp.intervals, "lat_pct"),
        ["10.65", "11.24", "11.04"]
    );
    assert_eq!(column(&imp.intervals, "threads"), ["2", "2", "2"]);
    assert_eq!(column(&imp.intervals, "step"), ["1", "1", "1"]);
}

#[test]
fn sysbench_1_0_cpu_with_rate_and_99th_percentile() {
    let imp = import(&["cpu_rate_p99.txt"], &[]);
    check(
        &imp.rows[0],
        &[
            ("eps", "131.88"),
            ("events", "281"),
            ("percentile", "99"),
            ("lat_pct", "493.24"),
            ("lat_p99", "493.24"),
            ("lat_p95", ""),
            ("lat_avg", "104.94"),
            ("fairness_time_stddev", "6.22"),
        ],
    );
    assert_eq!(imp.intervals.len(), 1);
    check(
        &imp.intervals[0],
        &[
            ("eps", "149.68"),
            ("lat_pct", "59.99"),
            ("percentile", "99"),
            ("queue_length", "30"),
            ("concurrency", "2"),
        ],
    );
}

#[test]
fn sysbench_1_0_oltp_read_write_on_mariadb() {
    let imp = import(&["oltp_read_write.txt"], &["--workload", "oltp_read_write"]);
    check(
        &imp.rows[0],
        &[
            ("workload", "oltp_read_write"),
            ("threads", "2"),
            ("seconds", "4.2877"),
            ("events", "583"),
            ("tps", "135.94"),
            ("qps", "2718.74"),
            ("reads", "8162"),
            ("writes", "2332"),
            ("other", "1166"),
            ("errors", "0"),
            ("reconnects", "0"),
            ("lat_min", "1.2"),
            ("lat_avg", "14.25"),
            ("lat_max", "1673.74"),
            ("lat_p95", "21.89"),
            ("lat_sum", "8306.45"),
            ("fairness_events_stddev", "2.5"),
            ("fairness_time_stddev", "0.13"),
        ],
    );
    assert_eq!(imp.intervals.len(), 4);
    assert_eq!(
        column(&imp.intervals, "tps"),
        ["549.92", "12.81", "13.85", "2.22"]
    );
    assert_eq!(
        column(&imp.intervals, "qps"),
        ["11036.33", "234.46", "276.13", "52.13"]
    );
    check(
        &imp.intervals[0],
        &[
            ("reads_ps", "7726.83"),
            ("writes_ps", "2207.66"),
            ("other_ps", "1101.84"),
            ("lat_pct", "8.13"),
            ("errors_ps", "0"),
            ("reconnects_ps", "0"),
        ],
    );
    assert_eq!(
        column(&imp.intervals, "lat_pct"),
        ["8.13", "77.19", "170.48", "669.89"]
    );
    // The workload came from --workload: no warning.
    assert!(!imp.stderr.contains("warning"), "{}", imp.stderr);
}

#[test]
fn sysbench_1_0_point_select_and_pgsql_read_only() {
    let imp = import(&["oltp_point_select.txt", "pgsql_oltp_read_only.txt"], &[]);
    assert_eq!(imp.rows.len(), 2);
    check(
        &imp.rows[0],
        &[
            ("workload", "unknown"),
            ("threads", "4"),
            ("tps", "2579.03"),
            ("qps", "2579.03"),
            ("reads", "7978"),
            ("events", "7978"),
            ("lat_min", "0.01"),
            ("lat_avg", "1.52"),
            ("lat_max", "2066.5"),
            ("lat_p95", "0.83"),
        ],
    );
    check(
        &imp.rows[1],
        &[
            ("step", "2"),
            ("threads", "2"),
            ("repetition", "1"),
            ("tps", "257.3"),
            ("qps", "4116.73"),
            ("reads", "11060"),
            ("other", "1580"),
            ("events", "790"),
            ("seconds", "3.0635"),
            ("lat_p95", "13.7"),
        ],
    );
    let steps = column(&imp.intervals, "step");
    assert_eq!(steps.iter().filter(|s| *s == "1").count(), 2);
    assert_eq!(steps.iter().filter(|s| *s == "2").count(), 3);
    assert_eq!(imp.intervals[0]["tps"], "2684.05");
    assert_eq!(imp.intervals[2]["other_ps"], "397.37");
    // No command line, no --workload: said on stderr, once per report.
    assert_eq!(
        imp.stderr.matches("does not name its workload").count(),
        2,
        "{}",
        imp.stderr
    );
}

#[test]
fn sysbench_1_0_memory_and_fileio() {
    let imp = import(&["memory.txt", "fileio.txt"], &[]);
    check(
        &imp.rows[0],
        &[
            ("workload", "memory"),
            ("events", "2010859"),
            ("seconds", "3.0166"),
            ("mib_per_s", "650.75"),
            ("total_mib", "1963.73"),
            ("lat_max", "1391.37"),
            ("fairness_events_stddev", "15795.5"),
        ],
    );
    check(
        &imp.rows[1],
        &[
            ("workload", "fileio"),
            ("events", "15598"),
            ("file_reads_ps", "2646.27"),
            ("file_writes_ps", "1764.18"),
            ("file_fsyncs_ps", "178.18"),
            ("read_mib_per_s", "41.35"),
            ("written_mib_per_s", "27.57"),
            ("lat_p95", "0.17"),
        ],
    );
    let mem: Rows = imp
        .intervals
        .iter()
        .filter(|r| r["step"] == "1")
        .cloned()
        .collect();
    assert_eq!(column(&mem, "mib_per_s"), ["246.55", "49.7"]);
    assert_eq!(column(&mem, "eps"), ["", ""]);
    let fio: Rows = imp
        .intervals
        .iter()
        .filter(|r| r["step"] == "2")
        .cloned()
        .collect();
    assert_eq!(fio.len(), 2);
    check(
        &fio[1],
        &[
            ("time", "3"),
            ("read_mib_per_s", "31.31"),
            ("written_mib_per_s", "20.87"),
            ("file_fsyncs_ps", "133.57"),
            ("lat_pct", "0.402"),
        ],
    );
}

#[test]
fn shell_loop_logs_split_into_one_step_per_report() {
    let imp = import(&["cpu_loop.txt", "threads_mutex_loop.txt"], &[]);
    assert_eq!(
        column(&imp.rows, "name"),
        ["cpu-t1", "cpu-t2", "threads-t2", "mutex-t2"]
    );
    assert_eq!(column(&imp.rows, "events"), ["315", "353", "256", "2"]);
    assert_eq!(column(&imp.rows, "eps")[..2], ["149.82", "174.54"]);
    check(
        &imp.rows[3],
        &[
            ("lat_min", "7207.02"),
            ("lat_p95", "7346.49"),
            ("seconds", "7.2845"),
        ],
    );
    assert_eq!(column(&imp.intervals, "step"), ["1", "1", "2"]);
    assert!(!imp.stderr.contains("warning"), "{}", imp.stderr);
    let suite = std::fs::read_to_string(imp.dir.join("suite.toml")).unwrap();
    assert!(
        suite.contains("sysbench cpu --threads=2 --time=2 --report-interval=1 run"),
        "{suite}"
    );
}

#[test]
fn workload_option_names_logs_that_do_not() {
    let imp = import(&["threads.txt", "mutex.txt"], &["--workload", "threads"]);
    assert_eq!(column(&imp.rows, "workload"), ["threads", "threads"]);
    // Same workload and threads twice: two repetitions of one cell.
    assert_eq!(column(&imp.rows, "repetition"), ["1", "2"]);
    check(&imp.rows[1], &[("events", "2"), ("lat_min", "4800.53")]);
    assert_eq!(imp.intervals.len(), 1);
}

#[test]
fn sysbench_0_4_oltp_complex_with_command_line() {
    let imp = import(&["reconstructed/oltp_complex_0.4.12.txt"], &[]);
    check(
        &imp.rows[0],
        &[
            ("workload", "oltp_read_write"),
            ("threads", "16"),
            ("seconds", "60.0041"),
            ("events", "88180"),
            ("tps", "1469.56"),
            // read/write requests + other operations per second.
            ("qps", "30860.75"),
            ("reads", "1234520"),
            ("writes", "440900"),
            ("other", "176360"),
            ("errors", "3"),
            ("reconnects", ""),
            ("lat_min", "4.12"),
            ("lat_avg", "10.88"),
            ("lat_max", "212.47"),
            ("lat_p95", "17.03"),
            ("lat_sum", "959741.2"),
            ("fairness_events_stddev", "31.08"),
            ("fairness_time_stddev", "0"),
        ],
    );
    assert!(imp.intervals.is_empty());
    // The password on the command line is not stored anywhere.
    for f in ["suite.toml", "plan.json", "results.csv", "intervals.csv"] {
        let text = std::fs::read_to_string(imp.dir.join(f)).unwrap();
        assert!(!text.contains("hunter2"), "{f}: {text}");
    }
    assert!(!imp.stdout.contains("hunter2"));
    let suite = std::fs::read_to_string(imp.dir.join("suite.toml")).unwrap();
    assert!(suite.contains("--mysql-password=***"), "{suite}");
}

#[test]
fn sysbench_0_4_simple_loop() {
    let imp = import(&["reconstructed/oltp_simple_loop_0.4.12.txt"], &[]);
    assert_eq!(column(&imp.rows, "threads"), ["8", "32"]);
    assert_eq!(
        column(&imp.rows, "workload"),
        ["oltp_point_select", "oltp_point_select"]
    );
    assert_eq!(column(&imp.rows, "tps"), ["28538.71", "49793.22"]);
    assert_eq!(column(&imp.rows, "events"), ["1712345", "2987654"]);
    assert_eq!(column(&imp.rows, "lat_p95"), ["0.36", "1.21"]);
    assert_eq!(
        column(&imp.rows, "fairness_events_stddev"),
        ["4210.77", "1893.4"]
    );
}

#[test]
fn sysbench_0_4_cpu_memory_fileio() {
    let imp = import(
        &[
            "reconstructed/cpu_0.4.12.txt",
            "reconstructed/memory_0.4.12.txt",
            "reconstructed/fileio_0.4.12.txt",
        ],
        &[],
    );
    assert_eq!(column(&imp.rows, "workload"), ["cpu", "memory", "fileio"]);
    assert_eq!(column(&imp.rows, "threads"), ["4", "2", "1"]);
    check(
        &imp.rows[0],
        &[
            ("seconds", "12.3456"),
            ("events", "10000"),
            ("lat_min", "4.83"),
            ("lat_avg", "4.94"),
            ("lat_max", "21.07"),
            ("lat_p95", "5.02"),
            ("lat_sum", "49352"),
            ("fairness_events_stddev", "12.35"),
        ],
    );
    check(
        &imp.rows[1],
        &[
            ("mib_per_s", "4012.54"),
            ("total_mib", "10240"),
            ("events", "10240"),
            ("lat_p95", "0.52"),
        ],
    );
    // 0.4 prints totals; the per-second columns are total / total time (60 s).
    check(
        &imp.rows[2],
        &[
            ("events", "50000"),
            ("file_reads_ps", "500"),
            ("file_writes_ps", "333.3333"),
            ("file_fsyncs_ps", "1066.6667"),
            ("read_mib_per_s", "7.8125"),
            ("written_mib_per_s", "5.2083"),
            ("lat_p95", "2.35"),
            ("lat_max", "45.18"),
        ],
    );
}

#[test]
fn sysbench_0_5_with_interim_lines() {
    let imp = import(
        &["reconstructed/oltp_ro_0.5.txt"],
        &["--workload", "oltp_read_only"],
    );
    check(
        &imp.rows[0],
        &[
            ("workload", "oltp_read_only"),
            ("threads", "4"),
            ("tps", "1329.79"),
            ("qps", "21276.66"),
            ("percentile", "99"),
            ("lat_p99", "4.02"),
            ("lat_p95", ""),
            ("lat_avg", "3"),
            ("lat_sum", "119856.1"),
            ("errors", "0"),
            ("reconnects", "0"),
        ],
    );
    assert_eq!(imp.intervals.len(), 3);
    assert_eq!(column(&imp.intervals, "time"), ["10", "20", "30"]);
    assert_eq!(
        column(&imp.intervals, "tps"),
        ["1325.72", "1343.41", "1320.81"]
    );
    assert_eq!(
        column(&imp.intervals, "reads_ps"),
        ["18560.08", "18807.74", "18491.34"]
    );
    assert_eq!(column(&imp.intervals, "lat_pct"), ["4.09", "3.79", "3.98"]);
    // 0.5 interim lines leave out "other" queries: no qps is made up.
    assert_eq!(column(&imp.intervals, "qps"), ["", "", ""]);
}

/// Issue #14 item 8: sysbench 1.1's report (`Throughput:` with events/s, time elapsed and the
/// total number of events in place of 1.0's `General statistics:`) and its banner
/// (`sysbench 1.1.0-<commit> (…)`).
#[test]
fn sysbench_1_1_cpu_and_oltp_read_write() {
    let imp = import(
        &[
            "reconstructed/cpu_1.1.txt",
            "reconstructed/oltp_read_write_1.1.txt",
        ],
        &[],
    );
    assert_eq!(column(&imp.rows, "status"), ["ok", "ok"], "{}", imp.stderr);
    check(
        &imp.rows[0],
        &[
            ("name", "cpu-t2"),
            ("workload", "cpu"),
            ("seconds", "10.0012"),
            ("events", "8814"),
            // The Throughput block's eps (four decimals), not CPU speed's rounded one.
            ("eps", "881.2942"),
            ("lat_min", "2.12"),
            ("lat_avg", "2.27"),
            ("lat_max", "14.95"),
            ("lat_p95", "2.48"),
            ("lat_sum", "19996.67"),
            ("fairness_events_stddev", "12"),
            ("error", ""),
        ],
    );
    check(
        &imp.rows[1],
        &[
            ("name", "oltp_read_write-t4"),
            ("seconds", "10.0552"),
            ("events", "4296"),
            ("eps", "427.2416"),
            ("tps", "427.24"),
            ("qps", "8544.83"),
            ("reads", "60144"),
            ("lat_p95", "17.63"),
            ("lat_max", "185.66"),
            ("fairness_time_stddev", "0"),
        ],
    );
    assert_eq!(column(&imp.intervals, "step"), ["1", "1", "2", "2"]);
    assert_eq!(
        column(&imp.intervals, "eps"),
        ["880.95", "881.64", "425.97", "428.6"]
    );
    assert!(
        imp.stdout.contains("(sysbench 1.1, 2 interim lines)"),
        "{}",
        imp.stdout
    );
    assert!(!imp.stderr.contains("warning"), "{}", imp.stderr);
    let suite = std::fs::read_to_string(imp.dir.join("suite.toml")).unwrap();
    assert!(!suite.contains("secret"), "{suite}");
}

/// Issue #14 item 8: a 1.1 report pasted from a web page (indentation and blank lines gone,
/// fields run together, the last field cut): everything readable is read, the row stays ok,
/// and the field that could not be read is named with its file and line.
#[test]
fn a_pasted_sysbench_1_1_log_is_read_field_by_field() {
    let file = "reconstructed/oltp_read_only_1.1_pasted.txt";
    let imp = import(&[file], &[]);
    check(
        &imp.rows[0],
        &[
            ("status", "ok"),
            ("workload", "oltp_read_only"),
            ("threads", "16"),
            // `time elapsed: 20.0049stotal number of events: 23194`
            ("seconds", "20.0049"),
            ("events", "23194"),
            ("eps", "1159.4159"),
            ("tps", "1159.42"),
            ("qps", "18550.66"),
            ("reads", "324716"),
            ("lat_min", "4.12"),
            ("lat_avg", "13.79"),
            // `max: 387.8195th percentile: 20.37`
            ("lat_max", "387.81"),
            ("lat_p95", "20.37"),
            ("percentile", "95"),
            // `sum: 319843.52Threads fairness:`
            ("lat_sum", "319843.52"),
            ("fairness_events_stddev", "21.37"),
            ("fairness_time_stddev", ""),
        ],
    );
    assert_eq!(imp.intervals.len(), 2);
    let warnings: Vec<&str> = imp
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning"))
        .collect();
    assert_eq!(
        warnings,
        [format!(
            "warning: {FIX}/{file}:30: cannot read the `execution time (avg/stddev)` field (`execution time (avg/stddev):`); left empty"
        )],
        "{}",
        imp.stderr
    );
}

/// Issue #14 item 9: a memory report followed by a mutex report whose banner was not kept
/// (real 1.0.20 output: memory.txt, then mutex.txt without its first line) are two rows, not
/// one with memory's MiB/s and mutex's events; the report whose test cannot be told is named
/// in a warning.
#[test]
fn a_report_without_banner_after_another_is_never_merged() {
    let imp = import(&["memory_then_mutex.txt"], &[]);
    assert_eq!(imp.rows.len(), 2, "{:?}", imp.rows);
    check(
        &imp.rows[0],
        &[
            ("workload", "memory"),
            ("events", "2010859"),
            ("seconds", "3.0166"),
            ("mib_per_s", "650.75"),
            ("lat_max", "1391.37"),
        ],
    );
    check(
        &imp.rows[1],
        &[
            ("workload", "unknown"),
            ("threads", "2"),
            ("events", "2"),
            ("seconds", "4.9186"),
            ("mib_per_s", ""),
            ("total_mib", ""),
            ("lat_min", "4800.53"),
            ("status", "ok"),
        ],
    );
    assert!(
        imp.stderr.contains(&format!(
            "warning: {FIX}/memory_then_mutex.txt:42: the log does not name its workload"
        )),
        "{}",
        imp.stderr
    );
    assert_eq!(imp.stderr.matches("warning").count(), 1, "{}", imp.stderr);

    // 1.1: the second report pasted from its `Throughput:` block on, nothing before it.
    let imp = import(&["reconstructed/memory_mutex_1.1.txt"], &[]);
    assert_eq!(column(&imp.rows, "workload"), ["memory", "unknown"]);
    assert_eq!(column(&imp.rows, "events"), ["52428800", "2"]);
    assert_eq!(column(&imp.rows, "mib_per_s"), ["5119.59", ""]);
    assert_eq!(column(&imp.rows, "lat_max"), ["12.41", "4891.49"]);
    assert!(
        imp.stderr
            .contains("memory_mutex_1.1.txt:39: the log does not name its workload"),
        "{}",
        imp.stderr
    );
}

#[test]
fn an_imported_run_can_be_reported() {
    let imp = import(&["cpu_loop.txt"], &[]);
    let out = sbsuite().arg("report").arg(&imp.dir).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(imp.dir.join("report.html")).unwrap();
    assert!(html.contains("cpu-t1"));
}

#[test]
fn bad_input_exits_2_naming_the_file_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = sbsuite()
        .args(["import", "no/such/file.txt", "--out"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot read no/such/file.txt"), "{err}");

    let out = sbsuite()
        .args([
            "import",
            &format!("{FIX}/cpu.txt"),
            &format!("{FIX}/README.md"),
            "--out",
        ])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("README.md holds no sysbench report"), "{err}");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}
