//! `sbsuite sysbench` and `sbsuite convert` against the command lines users really type
//! (/work/shared/reference/user-scenarios.md): they parse, warn like sysbench, map to the right
//! workload and options, and convert into suites whose plans run exactly those lines.

use crate::common;

use common::sbsuite;

fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Runs `sbsuite sysbench LINE --sbsuite-dry-run` and returns its stdout.
fn dry(line: &str) -> String {
    let out = sbsuite()
        .arg("sysbench")
        .args(words(line))
        .arg("--sbsuite-dry-run")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{line}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs a line that must fail with sysbench's exit code 1; returns stderr.
fn bad(line: &str) -> String {
    let out = sbsuite()
        .arg("sysbench")
        .args(words(line))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{line}");
    String::from_utf8(out.stderr).unwrap()
}

const TEST_WARNING: &str = "WARNING: the --test option is deprecated. You can pass a script name or path on the command line without any options.\n";

#[test]
fn cpu_lines_of_the_guides_run_with_sysbench_warnings() {
    for line in [
        "--test=cpu --cpu-max-prime=2000 --max-time=1 run",
        "--test=cpu --cpu-max-prime=2000 --num-threads=2 --max-time=1 run",
    ] {
        let out = sbsuite()
            .arg("sysbench")
            .args(words(line))
            .output()
            .unwrap();
        assert!(out.status.success(), "{line}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.starts_with(TEST_WARNING), "{stderr}");
        assert!(
            stdout.starts_with("WARNING: --max-time is deprecated, use --time instead\nsysbench 1.0.20-compatible (sbsuite ")
                || stdout.starts_with(
                    "WARNING: --num-threads is deprecated, use --threads instead\n\
                     WARNING: --max-time is deprecated, use --time instead\nsysbench 1.0.20-compatible (sbsuite "
                ),
            "{stdout}"
        );
        assert!(stdout.contains("Prime numbers limit: 2000\n"), "{stdout}");
        assert!(stdout.contains("total number of events:"), "{stdout}");
        let threads = if line.contains("num-threads") { 2 } else { 1 };
        assert!(
            stdout.contains(&format!("Number of threads: {threads}\n")),
            "{stdout}"
        );
    }
}

#[test]
fn every_system_line_of_the_guides_parses_to_its_workload_and_options() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "--test=threads --num-threads=500 --thread-yields=100 --thread-locks=4 run",
            "threads",
            &["threads = 500", "thread_yields = 100", "thread_locks = 4"],
        ),
        (
            "--num-threads=64 --test=threads --thread-yields=100 --thread-locks=2 run",
            "threads",
            &["threads = 64", "thread_locks = 2"],
        ),
        (
            "--test=memory --memory-block-size=8k --memory-total-size=1G run",
            "memory",
            &["memory_block_size = 8192", "memory_total_size = 1073741824"],
        ),
        (
            "--test=memory --num-threads=2 run",
            "memory",
            &["threads = 2", "time = 10", "events = 0"],
        ),
        (
            "--test=mutex --num-threads=100 --mutex-num=1000 --mutex-locks=100000 --mutex-loops=10000 run",
            "mutex",
            &["threads = 100", "mutex_num = 1000", "mutex_loops = 10000"],
        ),
        (
            "--num-threads=1500 --max-requests=2000 --test=mutex --mutex-num=10240 --mutex-locks=100000 --mutex-loops=15000 run",
            "mutex",
            &["threads = 1500", "events = 2000", "mutex_num = 10240"],
        ),
        (
            "--test=fileio --num-threads=16 --file-total-size=2G --file-test-mode=rndrw prepare",
            "fileio",
            &[
                "threads = 16",
                "file_total_size = 2147483648",
                "file_test_mode = \"rndrw\"",
            ],
        ),
        (
            "--test=fileio --num-threads=16 --file-total-size=2G --file-test-mode=rndrw run",
            "fileio",
            &["command = \"run\""],
        ),
        (
            "--test=fileio --num-threads=16 --file-total-size=2G --file-test-mode=rndrw cleanup",
            "fileio",
            &["command = \"cleanup\""],
        ),
        (
            "--test=fileio --file-num=64 --file-total-size=1G --init-rng=on --file-extra-flags=direct prepare",
            "fileio",
            &[
                "file_num = 64",
                "file_extra_flags = [\"direct\"]",
                "rand_seed = 0",
            ],
        ),
        (
            "--test=fileio --max-time=10 --max-requests=100000 --num-threads=2 --file-num=64 --file-total-size=1G --file-block-size=16384 --file-test-mode=rndrw run",
            "fileio",
            &[
                "time = 10",
                "events = 100000",
                "threads = 2",
                "file_block_size = 16384",
            ],
        ),
    ];
    for (line, workload, expect) in cases {
        let out = dry(line);
        assert!(
            out.contains(&format!("workload = \"{workload}\"\n")),
            "{line}\n{out}"
        );
        for e in *expect {
            assert!(
                out.contains(&format!("{e}\n")),
                "{line}: `{e}` missing\n{out}"
            );
        }
    }
}

#[test]
fn oltp_lines_of_the_guides_map_to_1_0_workloads_and_options() {
    let out = dry(
        "--test=oltp --mysql-table-engine=innodb --mysql-port=3307 --mysql-db=test \
         --oltp-table-size=10000000 --mysql-socket=/tmp/mysql.sock prepare",
    );
    for e in [
        "workload = \"oltp_read_write\"",
        "table_size = 10000000",
        "mysql_storage_engine = \"innodb\"",
        "mysql_socket = \"/tmp/mysql.sock\"",
    ] {
        assert!(out.contains(e), "`{e}`\n{out}");
    }
    let out = dry(
        "--test=/path/sysbench/tests/db/oltp.lua --mysql-host=127.0.0.1 --mysql-port=3306 \
         --mysql-user=root --mysql-db=sbtest --oltp-tables-count=10 --oltp-table-size=500000 \
         --report-interval=3 --oltp-dist-type=uniform --rand-init=on --max-requests=0 \
         --oltp-read-only=on --oltp-skip-trx=on --max-time=120 --num-threads=12 run",
    );
    for e in [
        "workload = \"oltp_read_only\"",
        "tables = 10",
        "table_size = 500000",
        "rand_type = \"uniform\"",
        "skip_trx = true",
        "time = 120",
        "threads = 12",
        "events = 0",
        "report_interval = 3",
    ] {
        assert!(out.contains(&format!("{e}\n")), "`{e}`\n{out}");
    }
}

#[test]
fn script_paths_map_by_file_name() {
    for (test, workload) in [
        ("/usr/share/sysbench/oltp_read_write.lua", "oltp_read_write"),
        (
            "/opt/sysbench/src/lua/oltp_write_only.lua",
            "oltp_write_only",
        ),
        ("select_random_points.lua", "select_random_points"),
        ("tests/db/oltp.lua", "oltp_read_write"),
        ("oltp_delete", "oltp_delete"),
    ] {
        let out = dry(&format!("{test} run"));
        assert!(
            out.contains(&format!("workload = \"{workload}\"\n")),
            "{test}\n{out}"
        );
    }
}

#[test]
fn legacy_options_print_their_warnings() {
    let out = sbsuite()
        .args(words(
            "sysbench --test=oltp --oltp-table-size=100 --oltp-user-delay-min=5 --verbosity=4 \
             --sbsuite-dry-run run",
        ))
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    for w in [
        TEST_WARNING,
        "WARNING: `oltp` is sysbench 0.4/0.5's OLTP test: running its sysbench 1.0 equivalent `oltp_read_write`",
        "WARNING: --oltp-table-size is a sysbench 0.4/0.5 option, use --table-size instead\n",
        "WARNING: --oltp-user-delay-min is ignored: sysbench 1.0 has no think time",
    ] {
        assert!(stderr.contains(w), "`{w}`\n{stderr}");
    }
    // --verbosity is honoured now (#14), so it draws no warning.
    assert!(!stderr.contains("--verbosity"), "{stderr}");
    // A connection option on a system test is accepted but reported as ignored.
    let out = sbsuite()
        .args(words("sysbench cpu --mysql-host=db1 --sbsuite-dry-run run"))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("WARNING: --mysql-host is ignored: the cpu test uses no database")
    );
}

#[test]
fn bad_input_exits_1_naming_the_option_or_test() {
    assert!(
        bad("cpu --thraeds=2 run").contains("invalid option: --thraeds (did you mean --threads?)")
    );
    let e = bad("nope run");
    assert!(
        e.contains("unknown test `nope`") && e.contains("known tests: cpu, memory"),
        "{e}"
    );
    assert!(bad("--test=memory --memory-block-size=8q run").contains("--memory-block-size"));
    assert!(bad("memory --memory-hugetlb=perhaps run").contains("--memory-hugetlb"));
    assert!(bad("cpu --num-threads=many run").contains("--num-threads"));
    assert!(bad("cpu --cpu-max-prime run").contains("--cpu-max-prime needs a value"));
    assert!(bad("cpu --file-num=3 run").contains("belongs to the fileio test"));
    assert!(bad("cpu").contains("requires a command argument"));
    // #30: a suite option sysbench has nothing like is no option of the drop-in.
    let e = bad("cpu --rate=10 --latency-limit=10 run");
    assert!(e.contains("invalid option: --latency-limit"), "{e}");
    assert!(!e.contains("did you mean"), "{e}");
}

/// #30: a `--rate` run's report is sysbench's, without the open-loop lines a suite's run
/// prints after it.
#[test]
fn a_rate_run_keeps_sysbenchs_report() {
    let out = sbsuite()
        .args(words("sysbench cpu --rate=50 --time=1 run"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Target transaction rate: 50/sec\n"), "{text}");
    assert!(!text.contains("Open-loop"), "{text}");
    let last = text.trim_end().lines().last().unwrap_or_default();
    assert!(
        last.starts_with("    execution time (avg/stddev):"),
        "{text}"
    );
}

#[test]
fn help_lists_options_in_sysbench_layout() {
    let out = sbsuite()
        .args(["sysbench", "cpu", "help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.ends_with(
            "\n\ncpu options:\n  --cpu-max-prime=N each event tests every number up to this one \
             for primality [10000]\n\n"
        ),
        "{text}"
    );
    let out = sbsuite()
        .args(["sysbench", "memory", "help"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(
            "  --memory-hugetlb[=on|off]   back the buffers with huge pages (HugeTLB) [off]\n"
        ),
        "{text}"
    );
    // sbsuite's own options follow sysbench's list, under their own heading (#14).
    let out = sbsuite()
        .args(["sysbench", "fileio", "help"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let (theirs, ours) = text
        .split_once("\nsbsuite extensions:\n")
        .expect("extensions");
    assert!(theirs.contains("  --file-rw-ratio=N ") && !theirs.contains("--file-dir"));
    assert!(ours.starts_with("  --file-dir=STRING "), "{ours}");
}

fn convert(stdin: &str) -> (String, String) {
    let out = sbsuite()
        .args(["convert", "-"])
        .write_stdin(stdin)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn oceanbase_loop_converts_to_one_matrix_suite_with_the_same_steps() {
    let mut lines = String::new();
    for script in ["oltp_read_only", "oltp_write_only", "oltp_read_write"] {
        for threads in [32, 64, 128, 256, 512, 1024] {
            lines.push_str(&format!(
                "sysbench /opt/sysbench/src/lua/{script}.lua --mysql-host=127.1 --mysql-port=2883 \
                 --mysql-db=test --mysql-user=root@sysbench_tenant#obce-demo \
                 --mysql-password=Pa55word --tables=30 --table_size=1000000 --threads={threads} \
                 --time=60 --report-interval=10 --db-driver=mysql --db-ps-mode=disable \
                 --skip-trx=on --mysql-ignore-errors=6002,6004,4012,2013,4016 --secondary=on run\n"
            ));
        }
    }
    let (toml, notes) = convert(&lines);
    assert!(!toml.contains("Pa55word") && !notes.contains("Pa55word"));
    assert!(toml.starts_with("#:schema ../schemas/suite.schema.json\n"));
    assert!(
        toml.contains("user = \"root@sysbench_tenant#obce-demo\"\n"),
        "{toml}"
    );
    assert!(
        toml.contains("password = \"{{ env.MYSQL_PASSWORD }}\"\n"),
        "{toml}"
    );
    assert!(toml.contains("ignore_errors = [6002, 6004, 4012, 2013, 4016]\n"));
    // #26: the loop only runs, on tables prepared before it: so does the suite, which keeps
    // them (no prepare, no cleanup) and says so.
    assert!(toml.contains("\ndataset = \"existing\"\n"), "{toml}");
    assert!(notes.contains("no line prepares"), "{notes}");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ob.toml");
    std::fs::write(&file, &toml).unwrap();
    // Valid once the password variable convert names is exported (#14: unset, it is an error).
    sbsuite()
        .env("MYSQL_PASSWORD", "x")
        .arg("validate")
        .arg(&file)
        .assert()
        .success();
    let out = sbsuite()
        .env("MYSQL_PASSWORD", "x")
        .args(["plan", "--format", "json"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success());
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let steps = plan["steps"].as_array().unwrap();
    assert_eq!(plan["dataset"], "existing");
    assert_eq!(steps.len(), 18);
    let runs: Vec<(String, i64)> = steps
        .iter()
        .map(|s| {
            assert_eq!(s["kind"], "run");
            assert_eq!(s["options"]["tables"], 30);
            assert_eq!(s["options"]["secondary"], true);
            (
                s["workload"].as_str().unwrap().to_string(),
                s["options"]["threads"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(runs[0], ("oltp_read_only".into(), 32));
    assert_eq!(runs[5], ("oltp_read_only".into(), 1024));
    assert_eq!(runs[6], ("oltp_write_only".into(), 32));
    assert_eq!(runs[17], ("oltp_read_write".into(), 1024));

    // With the prepare line of the loop, the suite prepares and cleans up its own tables.
    let prepare = lines.lines().next().unwrap().replace(" run", " prepare");
    let (toml, notes) = convert(&format!("{prepare}\n{lines}"));
    assert!(!toml.contains("dataset ="), "{toml}");
    assert!(notes.contains("1 prepare/cleanup/help line(s) skipped: the suite's plan prepares"));
    std::fs::write(&file, &toml).unwrap();
    let out = sbsuite()
        .env("MYSQL_PASSWORD", "x")
        .args(["plan", "--format", "json"])
        .arg(&file)
        .output()
        .unwrap();
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let steps = plan["steps"].as_array().unwrap();
    assert_eq!(plan["dataset"], "prepare");
    assert_eq!(steps.len(), 20);
    assert_eq!(steps[0]["kind"], "prepare");
    assert_eq!(steps[19]["kind"], "cleanup");
}

#[test]
fn partial_loops_exclude_the_combinations_never_run() {
    let (toml, _) = convert(
        "sysbench cpu --threads=1 --cpu-max-prime=1000 run\n\
         sysbench cpu --threads=2 --cpu-max-prime=1000 run\n\
         sysbench cpu --threads=2 --cpu-max-prime=2000 run\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cpu.toml");
    std::fs::write(&file, &toml).unwrap();
    let out = sbsuite()
        .args(["plan", "--format", "json"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{toml}");
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cells: Vec<(i64, i64)> = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["options"]["threads"].as_i64().unwrap(),
                s["options"]["cpu_max_prime"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(cells, [(1, 1000), (2, 1000), (2, 2000)]);
}

/// #14: every option of a converted line becomes a suite key or a note naming it and why.
#[test]
fn convert_maps_or_names_every_option() {
    let line = "sysbench --test=oltp --oltp-reconnect-mode=transaction --oltp-user-delay-min=1 \
                --oltp-user-delay-max=9 --oltp-connect-delay=5 --num-threads=4 --init-rng=off \
                --max-requests=0 run";
    let (toml, notes) = convert(line);
    // 0.4's per-transaction reconnect is 1.0's reconnect after every event.
    assert!(toml.contains("reconnect = 1\n"), "{toml}");
    assert!(toml.contains("threads = 4\n"), "{toml}");
    for (option, why) in [
        ("--oltp-user-delay-min", "no think time"),
        ("--oltp-user-delay-max", "no think time"),
        ("--oltp-connect-delay", "connects once per thread"),
        ("--init-rng", "--rand-seed"),
        ("--max-requests", "only above 0"),
    ] {
        assert!(
            notes.contains(&format!("note: {option} is left out: "))
                && notes.lines().any(|l| l.contains(option) && l.contains(why)),
            "{option}: {notes}"
        );
    }
    // Modes 1.0 cannot express are named, not mapped.
    let (toml, notes) = convert("sysbench --test=oltp --oltp-reconnect-mode=query run");
    assert!(!toml.contains("reconnect ="), "{toml}");
    assert!(
        notes.contains("note: --oltp-reconnect-mode is left out: ")
            && notes.contains("`query` has no equivalent"),
        "{notes}"
    );
    // The converted suite validates, and the same line run directly means the same.
    let (toml, _) = convert("sysbench --test=oltp --oltp-reconnect-mode=transaction run");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.toml");
    std::fs::write(&file, &toml).unwrap();
    sbsuite().arg("validate").arg(&file).assert().success();
    assert!(dry("--test=oltp --oltp-reconnect-mode=transaction run").contains("reconnect = 1\n"));
}

#[test]
fn convert_after_double_dash_keeps_sizes_and_validates() {
    let out = sbsuite()
        .args(words(
            "convert -- sysbench --test=memory --memory-block-size=8k --memory-total-size=1G \
             --num-threads=2 run",
        ))
        .output()
        .unwrap();
    assert!(out.status.success());
    let toml = String::from_utf8(out.stdout).unwrap();
    assert!(toml.contains("name = \"memory\"\n"), "{toml}");
    assert!(toml.contains("memory_block_size = \"8k\"\n"), "{toml}");
    assert!(toml.contains("threads = 2\n"), "{toml}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.toml");
    std::fs::write(&file, &toml).unwrap();
    sbsuite().arg("validate").arg(&file).assert().success();
}

#[test]
fn results_dir_stores_the_run_like_sbsuite_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = sbsuite()
        .args(["sysbench", "cpu", "--cpu-max-prime=500", "--events=50"])
        .arg(format!("--sbsuite-results={}", dir.path().display()))
        .arg("run")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let suite_dir = dir.path().join("cpu");
    let run = std::fs::read_dir(&suite_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let csv = std::fs::read_to_string(run.path().join("results.csv")).unwrap();
    assert_eq!(csv.lines().count(), 2, "{csv}");
    // A sysbench line keeps sysbench's `forced_shutdown` (off), though it runs as a suite,
    // whose default is on.
    let plan = std::fs::read_to_string(run.path().join("plan.json")).unwrap();
    assert!(plan.contains("\"forced_shutdown\": \"off\""), "{plan}");
}

#[test]
fn ctrl_c_stops_an_endless_run_with_exit_130() {
    use std::io::Read;

    let args = words("sysbench cpu --cpu-max-prime=1000 --time=0 run");
    let (mut child, mut seen) = common::spawn_until_started(&args);
    let mut stdout = child.stdout.take().unwrap();
    common::interrupt(child.id());
    stdout.read_to_end(&mut seen).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let text = String::from_utf8_lossy(&seen);
    assert!(
        text.starts_with(
            "WARNING: Both event and time limits are disabled, running an endless test\n"
        ),
        "{text}"
    );
}

/// The OceanBase deployer's loop of user-scenarios.md §3 (scripts × threads) written as a shell
/// loop over `obd test sysbench` lines: one matrix suite with the same 18 runs as the sysbench
/// form above, a `[target]` to complete, and every obd option mapped or named (#14 item 11).
#[test]
fn obd_test_sysbench_loop_converts_to_a_matrix_suite_with_a_target_to_complete() {
    let script = "#!/bin/bash\n\
        for script in oltp_read_only oltp_write_only oltp_read_write; do\n\
          for threads in 32 64 128 256 512 1024; do\n\
            obd test sysbench obce-demo --component=obproxy --tenant=sysbench_tenant \\\n\
              --password='Pa55word' --database=test --script-name=${script}.lua \\\n\
              --table-size=1000000 --tables=30 --threads=$threads --time=60 --interval=10 \\\n\
              --skip-trx=on --rand-type=uniform --percentile=99 -O 2 -S \\\n\
              --mysql-ignore-errors=6002,6004,4012,2013,4016 \\\n\
              --sysbench-bin=/usr/bin/sysbench --sysbench-script-dir=/usr/sysbench/share/sysbench \\\n\
              --obclient-bin=obclient\n\
          done\n\
        done\n";
    let (toml, notes) = convert(script);
    assert!(
        !toml.contains("Pa55word") && !notes.contains("Pa55word"),
        "{toml}{notes}"
    );
    for expect in [
        "hosts = [\"OBPROXY_HOST:2883\"]\n",
        "user = \"root@sysbench_tenant\"\n",
        "password = \"{{ env.OB_PASSWORD }}\"\n",
        "database = \"test\"\n",
        "ps_mode = \"disable\"\n",
        "ignore_errors = [6002, 6004, 4012, 2013, 4016]\n",
        "`obd cluster display obce-demo` lists it",
        "[defaults]\ntable_size = 1000000\ntables = 30\ntime = 60\nreport_interval = 10\nskip_trx = true\nrand_type = \"uniform\"\npercentile = 99.0\n",
        "[matrix]\nworkload = [\"oltp_read_only\", \"oltp_write_only\", \"oltp_read_write\"]\nthreads = [32, 64, 128, 256, 512, 1024]\n",
        "#   obd test sysbench obce-demo --component=obproxy --tenant=sysbench_tenant --password=*** ",
    ] {
        assert!(toml.contains(expect), "{expect}\n---\n{toml}");
    }
    assert!(!toml.contains("exclude"), "every combination ran: {toml}");
    // Every obd option the suite does not carry is named.
    for option in [
        "--optimization",
        "--skip-cluster-status-check",
        "--sysbench-bin",
        "--sysbench-script-dir",
        "--obclient-bin",
        "--component/--test-server",
        "$OB_PASSWORD",
    ] {
        assert!(notes.contains(option), "{option}: {notes}");
    }

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ob.toml");
    std::fs::write(&file, &toml).unwrap();
    let out = sbsuite()
        .env("OB_PASSWORD", "x")
        .args(["plan", "--format", "json"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let steps = plan["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 20);
    let runs: Vec<(String, i64)> = steps[1..19]
        .iter()
        .map(|s| {
            assert_eq!(s["options"]["table_size"], 1_000_000);
            assert_eq!(s["options"]["percentile"].as_f64(), Some(99.0));
            (
                s["workload"].as_str().unwrap().to_string(),
                s["options"]["threads"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(runs[0], ("oltp_read_only".into(), 32));
    assert_eq!(runs[17], ("oltp_read_write".into(), 1024));
    // Without the variable it names, the suite is refused before anything runs.
    let out = sbsuite()
        .env_remove("OB_PASSWORD")
        .arg("validate")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("OB_PASSWORD"));
}

/// obd's own lists (`--script-name=a,b --threads=32,64`, obd ≥ 2.x) and its defaults (30 × 20,000
/// rows, 60 s, a report every 10 s, tenant `test`): the suite runs what obd runs.
#[test]
fn obd_lists_and_defaults_become_axes_and_defaults() {
    let (toml, notes) = convert(
        "obd test sysbench demo -t tpcc --script-name=oltp_point_select,oltp_read_only.lua --threads=8,16\n",
    );
    assert!(
        toml.contains(
            "[defaults]\ntable_size = 20000\ntables = 30\ntime = 60\nreport_interval = 10\n"
        ),
        "{toml}"
    );
    assert!(
        toml.contains(
            "workload = [\"oltp_point_select\", \"oltp_read_only\"]\nthreads = [8, 16]\n"
        ),
        "{toml}"
    );
    assert!(toml.contains("user = \"root@tpcc\"\n"), "{toml}");
    assert!(
        notes.contains("obd's default --optimization=1 tunes tenant variables"),
        "{notes}"
    );
}

#[test]
fn obd_lines_with_unknown_options_or_mixed_with_sysbench_lines_are_refused() {
    for (input, expect) in [
        (
            "obd test sysbench demo --thread=8\n",
            "line 1: `obd test sysbench` has no option --thread;",
        ),
        (
            "sysbench oltp_read_only run\nobd test sysbench demo\n",
            "line 2: obd test sysbench lines and sysbench lines mixed",
        ),
        (
            "obd test sysbench a --threads=8\nobd test sysbench b --threads=16\n",
            "line 2: the deployment",
        ),
    ] {
        let out = sbsuite()
            .args(["convert", "-"])
            .write_stdin(input)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(expect), "{expect}: {stderr}");
    }
}
