//! A parser for sysbench's text output: 1.1 (`Throughput:` with `events/s (eps):`, `time
//! elapsed:`, `total number of events:`), 1.0.x (`General statistics:` / `Latency (ms):`),
//! 0.5 and early 1.0 (`response time:`) and 0.4.12 (`OLTP test statistics:`,
//! `Test execution summary:`, `per-request statistics:`), with the interim `[ 10s ] …` lines of
//! each version and the cpu, memory, fileio and SQL blocks.
//!
//! Logs are what people kept from shell loops, so the parser is line-oriented and forgiving:
//! one file may hold several reports (each starts at a `sysbench X.Y` banner, or at the command
//! line that precedes it), prompts and other text between reports are ignored, and a value is
//! taken exactly as printed (a rate of `135.94` stays `135.94`, never recomputed from counts),
//! because the point of importing is comparing those very numbers.
//!
//! Two reports are never merged: a report whose banner was not kept starts where the previous
//! one's statistics are over (its `Running the test…` header, or a summary block after a
//! complete one, or a summary block seen twice — [`opens_another_report`]), since a merged row
//! would pair one test's throughput with another's events.
//!
//! Logs pasted from web pages and chat lose indentation and blank lines (harmless: lines are
//! trimmed and blank lines skipped) and sometimes run two fields together on one line
//! (`max: 387.8195th percentile: 155.80`): [`split_fields`] cuts such lines at the labels of the
//! final report. A field whose value still cannot be read is left empty and recorded in
//! [`Report::unread`], so the import can warn naming the line and the field; the row stays `ok`
//! as long as its throughput figures were read.

use crate::compat::args;
use crate::compat::convert::{redact, split_words};

/// The sysbench generation that printed a report (the formats differ in labels and units).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// 0.4.x: `Test execution summary:`, `per-request statistics:`, no interim lines.
    V04,
    /// 0.5 and pre-release 1.0: `response time:`, `[  10s] threads: …` interim lines.
    V05,
    /// 1.0.x: `General statistics:`, `Latency (ms):`, `[ 10s ] thds: …` interim lines.
    V10,
    /// 1.1 (built from git, `sysbench 1.1.0-df89d34 (…)`): 1.0's blocks, with `Throughput:`
    /// (`events/s (eps):`, `time elapsed:`, `total number of events:`) in place of
    /// `General statistics:`.
    V11,
}

impl Version {
    pub fn as_str(self) -> &'static str {
        match self {
            Version::V04 => "0.4",
            Version::V05 => "0.5",
            Version::V10 => "1.0",
            Version::V11 => "1.1",
        }
    }
}

/// The `SQL statistics:` / `OLTP test statistics:` block.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sql {
    pub reads: u64,
    pub writes: u64,
    pub other: u64,
    pub transactions: u64,
    /// Transactions per second as printed.
    pub tps: f64,
    /// Queries per second as printed (1.0 `queries:`; 0.4: `read/write requests` + `other
    /// operations` per second).
    pub qps: f64,
    /// 1.0 `ignored errors`, 0.4 `deadlocks`.
    pub errors: u64,
    /// 1.0 only; 0.4 has no reconnects.
    pub reconnects: Option<u64>,
}

/// Memory (`Total operations` / `MiB transferred`) or fileio (`File operations` /
/// `Throughput`) figures, named after the results.csv metric columns.
pub type Metrics = Vec<(&'static str, f64)>;

/// One interim report line (`[ 10s ] …`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Interval {
    pub time_s: f64,
    pub threads: Option<u64>,
    pub eps: Option<f64>,
    pub tps: Option<f64>,
    pub qps: Option<f64>,
    pub reads_ps: Option<f64>,
    pub writes_ps: Option<f64>,
    pub other_ps: Option<f64>,
    pub lat_pct_ms: Option<f64>,
    pub percentile: Option<f64>,
    pub errors_ps: Option<f64>,
    pub reconnects_ps: Option<f64>,
    pub metrics: Metrics,
}

/// A field of the final report whose value could not be read (a pasted log's damage).
#[derive(Clone, Debug, PartialEq)]
pub struct Unread {
    /// 1-based line of the field.
    pub line: usize,
    /// The field's label as printed (`max`, `time elapsed`).
    pub field: String,
    /// The text read for it.
    pub text: String,
    /// What was done instead: left empty, or derived from other printed figures.
    pub instead: &'static str,
}

/// What an unread field becomes by default.
const LEFT_EMPTY: &str = "left empty";

/// One report: the header, the interim lines and the final statistics.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// 1-based line where the report (or the command line before it) starts.
    pub line: usize,
    pub version: Option<Version>,
    /// The `sysbench …` command line found before the banner, passwords redacted.
    pub command: Option<String>,
    /// The workload, from the command line or the test's own banner lines.
    pub workload: Option<String>,
    pub threads: Option<u64>,
    /// The configured percentile (95 unless the report says otherwise).
    pub percentile: Option<f64>,
    pub seconds: Option<f64>,
    pub events: Option<u64>,
    /// `events per second:` (cpu, 1.0).
    pub eps: Option<f64>,
    pub sql: Option<Sql>,
    pub lat_min: Option<f64>,
    pub lat_avg: Option<f64>,
    pub lat_max: Option<f64>,
    pub lat_pct: Option<f64>,
    /// Sum of event latencies in ms (1.0 `sum:`; 0.4 `total time taken by event execution`,
    /// which is seconds).
    pub lat_sum: Option<f64>,
    pub fairness_events: Option<(f64, f64)>,
    pub fairness_time: Option<(f64, f64)>,
    pub metrics: Metrics,
    pub intervals: Vec<Interval>,
    /// A `FATAL:` line: the run failed and printed no final report.
    pub fatal: Option<String>,
    /// `[ Ns ] Checkpoint report:` made this report (statistics since the previous one).
    pub checkpoint: Option<f64>,
    /// Fields of the final report that were there but could not be read.
    pub unread: Vec<Unread>,
    /// The summary block headers seen so far: a second one of the same kind is another
    /// report's ([`opens_another_report`]).
    headers: Vec<&'static str>,
    /// 0.4/0.5 fileio totals (reads, writes, other) and MiB (read, written), turned into
    /// rates by [`finalize`].
    file_counts: Option<[Option<f64>; 3]>,
    file_mib: Option<(f64, f64)>,
}

impl Report {
    /// The report has its final statistics (not only a banner, a prepare or a failed run).
    pub fn is_complete(&self) -> bool {
        self.seconds.is_some() && self.events.is_some()
    }

    fn has_content(&self) -> bool {
        self.is_complete()
            || !self.intervals.is_empty()
            || self.fatal.is_some()
            || self.sql.is_some()
            || self.lat_avg.is_some()
    }
}

/// Which block of the final report the following indented lines belong to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Block {
    None,
    Sql,
    Latency,
    Fairness,
    FileOps,
    Throughput,
}

/// Parses every report of a text. Text that holds none gives an empty list.
pub fn parse(text: &str) -> Vec<Report> {
    let mut reports = Vec::new();
    let mut cur = Report::default();
    let mut started = false;
    let mut block = Block::None;
    let mut pending_command: Option<(usize, String, Option<String>, Option<u64>)> = None;

    let finish = |cur: &mut Report, reports: &mut Vec<Report>| {
        let mut done = std::mem::take(cur);
        finalize(&mut done);
        if done.has_content() {
            reports.push(done);
        }
    };

    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        let line = raw.trim();

        if let Some((cmd, workload, threads)) = command_line(line) {
            // A command line opens the next report; the current one is over.
            if started {
                finish(&mut cur, &mut reports);
                started = false;
            }
            pending_command = Some((lineno, cmd, workload, threads));
            continue;
        }

        if let Some(version) = banner(line) {
            if started {
                finish(&mut cur, &mut reports);
            }
            cur = Report {
                line: lineno,
                version: Some(version),
                ..Report::default()
            };
            if let Some((l, cmd, workload, threads)) = pending_command.take() {
                cur.line = l;
                cur.command = Some(cmd);
                cur.workload = workload;
                cur.threads = threads;
            }
            started = true;
            block = Block::None;
            continue;
        }

        if line.is_empty() {
            continue;
        }

        // A report whose banner was not kept (a log cut at the top) starts at its first
        // recognised line.
        if !started {
            cur = Report {
                line: lineno,
                ..Report::default()
            };
            if let Some((l, cmd, workload, threads)) = pending_command.take() {
                cur.line = l;
                cur.command = Some(cmd);
                cur.workload = workload;
                cur.threads = threads;
            }
            started = true;
        }

        if let Some(rest) = line.strip_prefix('[')
            && let Some((stamp, body)) = rest.split_once(']')
            && let Some(time) = number(stamp.trim().trim_end_matches('s'))
        {
            let body = body.trim();
            if body.starts_with("Checkpoint report") {
                // The statistics that follow cover the period since the previous checkpoint:
                // they become their own report, the next period another one.
                let header = continuation(&cur, lineno);
                if cur.is_complete() {
                    finish(&mut cur, &mut reports);
                    cur = header;
                }
                cur.checkpoint = Some(time);
                block = Block::None;
                continue;
            }
            if cur.is_complete() {
                // Interim lines after a checkpoint's statistics belong to the next period.
                let next = continuation(&cur, lineno);
                finish(&mut cur, &mut reports);
                cur = next;
            }
            interim(&mut cur, time, body);
            continue;
        }

        for field in split_fields(line) {
            if opens_another_report(&cur, field) {
                // A report whose banner was not kept: never merged into the one before. The
                // final report after a checkpoint's statistics belongs to the same run.
                let next = Report {
                    line: lineno,
                    ..if cur.checkpoint.is_some() {
                        continuation(&cur, lineno)
                    } else {
                        Report::default()
                    }
                };
                finish(&mut cur, &mut reports);
                cur = next;
                block = Block::None;
            }
            header_line(&mut cur, field);
            block = final_line(&mut cur, field, block, lineno);
        }
    }
    if started {
        finish(&mut cur, &mut reports);
    }
    reports
}

/// The next period of the same run (after a checkpoint): its header, no statistics.
fn continuation(cur: &Report, line: usize) -> Report {
    Report {
        line,
        version: cur.version,
        command: cur.command.clone(),
        workload: cur.workload.clone(),
        threads: cur.threads,
        percentile: cur.percentile,
        ..Report::default()
    }
}

/// Summary block headers: each opens a report's final statistics once.
const SUMMARY_HEADERS: [&str; 9] = [
    "General statistics:",
    "Test execution summary:",
    "SQL statistics:",
    "OLTP test statistics:",
    "CPU speed:",
    "File operations:",
    "Latency (ms):",
    "per-request statistics:",
    "Threads fairness:",
];

/// Whether `field` starts another report than `cur` although no banner or command line said
/// so (a log pasted without its second banner): the header of a run (`Running the test with
/// following options:`, `Threads started!`) after `cur` has statistics or interim lines; a
/// block that precedes the totals (`General statistics:`, `SQL statistics:`, `Throughput:`,
/// memory's `Total operations:` …) after `cur` has its totals; or a summary header `cur` has
/// already seen (a first report whose totals were lost). 1.1 prints `Throughput:` twice in
/// fileio reports (volumes, then events/s) before its totals, so that one repeat is allowed.
fn opens_another_report(cur: &Report, field: &str) -> bool {
    if matches!(
        field,
        "Running the test with following options:"
            | "Initializing worker threads..."
            | "Threads started!"
    ) {
        return cur.has_content();
    }
    let before_totals = field == "Throughput:"
        || field.starts_with("Total operations:")
        || field.starts_with("Operations performed:")
        || field.contains(" transferred (")
        || (SUMMARY_HEADERS.contains(&field)
            && !matches!(
                field,
                "Latency (ms):" | "per-request statistics:" | "Threads fairness:"
            ));
    if before_totals && cur.is_complete() {
        return true;
    }
    SUMMARY_HEADERS.contains(&field) && cur.headers.contains(&field)
}

/// Labels of the final report's fields and blocks, where [`split_fields`] cuts a line into
/// which a paste ran two fields (`sum: 10001.78Threads fairness:`).
const FIELD_LABELS: [&str; 35] = [
    "General statistics:",
    "Test execution summary:",
    "SQL statistics:",
    "OLTP test statistics:",
    "Throughput:",
    "Latency (ms):",
    "Threads fairness:",
    "CPU speed:",
    "File operations:",
    "queries performed:",
    "read:",
    "write:",
    "other:",
    "total:",
    "transactions:",
    "queries:",
    "ignored errors:",
    "reconnects:",
    "events/s (eps):",
    "time elapsed:",
    "total time:",
    "total number of events:",
    "events per second:",
    "min:",
    "avg:",
    "max:",
    "sum:",
    "events (avg/stddev):",
    "execution time (avg/stddev):",
    "percentile stats:",
    "reads/s:",
    "writes/s:",
    "fsyncs/s:",
    "read, MiB/s:",
    "written, MiB/s:",
];

/// The fields of one line: the line itself, or its pieces when a paste ran fields together.
/// Only lines that start with a label are cut, and a label is a cut only where it cannot be the end of a word (`min:` in `admin:` is not; after
/// a number, `s` or `ms` it is: `10.0022stotal number of events:`). A percentile label glued
/// to a latency value (`max: 387.8195th percentile: 155.80`) is cut two decimals after the
/// point, because sysbench prints every latency with two (`%.2f`): `387.81` and `95th …`.
fn split_fields(line: &str) -> Vec<&str> {
    if line.starts_with("FATAL") || line.starts_with("WARNING") {
        return vec![line];
    }
    let mut found: Vec<(usize, usize)> = FIELD_LABELS
        .iter()
        .flat_map(|l| line.match_indices(l).map(|(i, m)| (i, m.len())))
        .collect();
    for (k, m) in line.match_indices("th percentile:") {
        let digits = line[..k]
            .bytes()
            .rev()
            .take_while(u8::is_ascii_digit)
            .count();
        let start = k - digits;
        if digits == 0 {
            continue;
        }
        if start > 0 && line.as_bytes()[start - 1] == b'.' {
            // `387.8195th`: the value's two decimals, then the percentile.
            if digits > 2 {
                found.push((start + 2, k + m.len() - start - 2));
            }
        } else {
            found.push((start, k + m.len() - start));
        }
    }
    found.sort_unstable();
    // Only a line that is itself a field of the report is cut: prose quoting fields is not.
    if found.first().is_none_or(|f| f.0 != 0) {
        return vec![line];
    }
    // A label inside another (none today, but `total:` could be inside a longer one) is not
    // a cut.
    let mut cuts: Vec<usize> = Vec::new();
    let mut end = 0;
    for (i, len) in found {
        if i < end {
            continue;
        }
        end = i + len;
        if i == 0 {
            continue;
        }
        let before: Vec<char> = line[..i].chars().rev().take(3).collect();
        let word_end = match before.as_slice() {
            [c, ..] if !c.is_alphabetic() => true,
            // A unit after a number: `10.0022s`, `0.87ms`.
            ['s', p, ..] if p.is_ascii_digit() => true,
            ['s', 'm', p, ..] if p.is_ascii_digit() => true,
            _ => false,
        };
        if word_end {
            cuts.push(i);
        }
    }
    if cuts.is_empty() {
        return vec![line];
    }
    let mut out = Vec::new();
    let mut from = 0;
    for c in cuts.into_iter().chain([line.len()]) {
        let piece = line[from..c].trim();
        if !piece.is_empty() {
            out.push(piece);
        }
        from = c;
    }
    out
}

/// `sysbench 1.0.20 (using …)`, `sysbench 0.4.12:  multi-threaded …`, `sysbench 0.5:  …`,
/// `sysbench 1.1.0-df89d34 (using bundled LuaJIT 2.1.0-beta3)` (1.1 is only built from git,
/// and says its commit), and sbsuite's own `sysbench 1.0.20-compatible (sbsuite …)` (1.0.20's
/// report format; the suffix after `-` is skipped like a commit).
fn banner(line: &str) -> Option<Version> {
    let rest = line.strip_prefix("sysbench ")?;
    let ver: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let after = &rest[ver.len()..];
    let after = after.strip_prefix('-').map_or(after, |commit| {
        commit.trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '.')
    });
    if ver.is_empty() || !(after.starts_with(':') || after.starts_with(" (") || after.is_empty()) {
        return None;
    }
    // "sysbench 1.0:  multi-threaded …" is the pre-release 1.0 with 0.5's output.
    Some(if ver.starts_with("0.4") || ver.starts_with("0.3") {
        Version::V04
    } else if ver.starts_with("0.5") || after.starts_with(':') {
        Version::V05
    } else if ver == "1" || ver.starts_with("1.0") {
        Version::V10
    } else {
        Version::V11
    })
}

/// A shell line running sysbench (`$ sysbench cpu --threads=2 run`, `root@h:~# sysbench …`):
/// the redacted command, its workload and `--threads`/`--num-threads`.
fn command_line(line: &str) -> Option<(String, Option<String>, Option<u64>)> {
    let words = split_words(line)?;
    let at = words
        .iter()
        .position(|w| w.rsplit('/').next() == Some("sysbench"))?;
    let args: Vec<String> = words[at + 1..].to_vec();
    // A command line ends with its action; a banner or prose mentioning sysbench does not.
    let action = args.last()?;
    if !matches!(action.as_str(), "run" | "prepare" | "cleanup" | "prewarm") {
        return None;
    }
    // Only prompts (`$`, `#`, `user@host:~$`, `[user@host ~]$`, `pi@pi ~ $`), `VAR=x`
    // assignments and wrappers may come before it.
    let prompt_or_wrapper = |w: &String| {
        w.ends_with(['$', '#', '>', '%'])
            || w.contains('@')
            || w.contains('=')
            || w.starts_with('~')
            || matches!(w.as_str(), "time" | "sudo" | "nice" | "exec" | "env")
    };
    if !words[..at].iter().all(prompt_or_wrapper) {
        return None;
    }
    let mut shown = vec!["sysbench".to_string()];
    shown.extend(redact(&args));
    let command = shown.join(" ");
    let (workload, threads) = match args::parse(&args) {
        Ok(inv) => (
            Some(inv.workload.name.to_string()),
            inv.options().get("threads").and_then(|v| v.as_i64()),
        ),
        // An option this build does not know: the test name as written.
        Err(_) => (test_name(&args), None),
    };
    let threads = threads.map(|t| t as u64).or_else(|| {
        args.iter().find_map(|a| {
            let (k, v) = a.trim_start_matches('-').split_once('=')?;
            matches!(k, "threads" | "num-threads" | "num_threads")
                .then(|| v.parse().ok())
                .flatten()
        })
    });
    Some((command, workload, threads))
}

/// The test of a command line that `compat::args` cannot parse: `--test=X` or the first word,
/// a script path reduced to its name (`/usr/share/sysbench/oltp_read_write.lua` → `oltp_read_write`).
fn test_name(args: &[String]) -> Option<String> {
    let raw = args
        .iter()
        .find_map(|a| a.strip_prefix("--test="))
        .or_else(|| {
            args.iter()
                .find(|a| !a.starts_with('-'))
                .map(String::as_str)
        })?;
    let name = raw.rsplit('/').next().unwrap_or(raw);
    Some(name.trim_end_matches(".lua").to_string())
}

/// Lines of the header (options and the test's own banner) that name the workload.
fn header_line(r: &mut Report, line: &str) {
    if let Some(v) = line.strip_prefix("Number of threads:") {
        if let Some(n) = number(v) {
            r.threads = Some(n as u64);
        }
        return;
    }
    let detected = match line {
        l if l.starts_with("Prime numbers limit:")
            || l.starts_with("Doing CPU performance benchmark")
            || l.starts_with("Maximum prime number checked in CPU test") =>
        {
            "cpu"
        }
        l if l.starts_with("Running memory speed test")
            || l.starts_with("Doing memory operations speed test") =>
        {
            "memory"
        }
        l if l.starts_with("Doing thread subsystem performance test") => "threads",
        l if l.starts_with("Doing mutex performance test") => "mutex",
        l if l.starts_with("Extra file open flags:") => "fileio",
        // 0.4 `--test=oltp`, mapped like `sbsuite sysbench --test=oltp` does.
        l if l.starts_with("Running mixed OLTP test") || l.starts_with("Running complex OLTP") => {
            "oltp_read_write"
        }
        l if l.starts_with("Running simple OLTP test") => "oltp_point_select",
        l if l.starts_with("Doing read-only test") => {
            if r.workload.is_none() || r.workload.as_deref() == Some("oltp_read_write") {
                r.workload = Some("oltp_read_only".into());
            }
            return;
        }
        _ => return,
    };
    // The command line, when there is one, already named it (and knows a script's name).
    if r.workload.is_none() {
        r.workload = Some(detected.into());
    }
}

/// The number of a field, or `None` recorded in [`Report::unread`] (line `at`).
fn field(r: &mut Report, at: usize, label: &str, value: &str, read: Option<f64>) -> Option<f64> {
    if read.is_none() {
        r.unread.push(Unread {
            line: at,
            field: label.to_string(),
            text: format!("{label}:{value}").trim().to_string(),
            instead: LEFT_EMPTY,
        });
    }
    read
}

/// One line (field) of the final report at line `at`; returns the block the next lines
/// belong to.
fn final_line(r: &mut Report, line: &str, block: Block, at: usize) -> Block {
    if let Some(msg) = line.strip_prefix("FATAL:") {
        r.fatal.get_or_insert_with(|| msg.trim().to_string());
        return block;
    }
    if let Some(h) = SUMMARY_HEADERS.iter().find(|h| **h == line) {
        r.headers.push(h);
    }
    // Blocks only one test prints name it when nothing before the report did.
    let named = match line {
        "CPU speed:" => Some("cpu"),
        "File operations:" => Some("fileio"),
        l if l.starts_with("Total operations:") || l.contains("MiB transferred (") => {
            Some("memory")
        }
        _ => None,
    };
    if let Some(w) = named
        && r.workload.is_none()
    {
        r.workload = Some(w.into());
    }
    match line {
        "SQL statistics:" | "OLTP test statistics:" => {
            r.sql.get_or_insert_with(Sql::default);
            return Block::Sql;
        }
        "Latency (ms):" | "per-request statistics:" | "response time:" => return Block::Latency,
        "Threads fairness:" => return Block::Fairness,
        "File operations:" => return Block::FileOps,
        "Throughput:" => return Block::Throughput,
        "General statistics:" | "Test execution summary:" | "CPU speed:" => return Block::None,
        _ => {}
    }
    let Some((label, value)) = line.split_once(':') else {
        // `2048.00 MiB transferred (1031.04 MiB/sec)` (1.0) / `10240.00 MB transferred (…)`
        // (0.4); `Read 8Gb  Written 0b  Total transferred 8Gb  (167.07Mb/sec)` (0.4 fileio);
        // `10692.66 Requests/sec executed` (0.4 fileio).
        memory_transferred(r, line);
        fileio_04_sizes(r, line);
        return block;
    };
    let label = label.trim();
    let num = |r: &mut Report| field(r, at, label, value, number(value));
    let metric = match (block, label) {
        (Block::FileOps, "reads/s") => Some("file_reads_ps"),
        (Block::FileOps, "writes/s") => Some("file_writes_ps"),
        (Block::FileOps, "fsyncs/s") => Some("file_fsyncs_ps"),
        (Block::Throughput, "read, MiB/s") => Some("read_mib_per_s"),
        (Block::Throughput, "written, MiB/s") => Some("written_mib_per_s"),
        _ => None,
    };
    if let Some(name) = metric {
        let v = num(r);
        push_metric(r, name, v);
        return block;
    }
    match (block, label) {
        (_, "total time") => r.seconds = num(r),
        (_, "total number of events") => r.events = num(r).map(|v| v as u64),
        (_, "total time taken by event execution") => {
            r.lat_sum = num(r).map(|s| s * 1000.0);
        }
        (_, "events per second") => r.eps = num(r),
        // 1.1's Throughput block; its eps (four decimals) replaces cpu's `events per second`.
        (_, "events/s (eps)") => {
            r.eps = num(r);
            r.version.get_or_insert(Version::V11);
        }
        (_, "time elapsed") => {
            r.seconds = num(r);
            r.version.get_or_insert(Version::V11);
        }
        (Block::Sql, _) => sql_line(r, label, value, at),
        (Block::Latency, "min") => r.lat_min = num(r),
        (Block::Latency, "avg") => r.lat_avg = num(r),
        (Block::Latency, "max") => r.lat_max = num(r),
        (Block::Latency, "sum") => r.lat_sum = num(r),
        (Block::Latency, "percentile stats") => r.percentile = Some(0.0),
        (Block::Latency, l) if l.ends_with("percentile") => {
            // `95th percentile` (1.0), `approx.  95 percentile` (0.4/0.5).
            let p = l
                .trim_end_matches("percentile")
                .trim()
                .trim_start_matches("approx.")
                .trim()
                .trim_end_matches("th")
                .trim_end_matches("st")
                .trim_end_matches("nd")
                .trim_end_matches("rd");
            r.percentile = number(p).or(r.percentile);
            r.lat_pct = num(r);
        }
        (Block::Fairness, l) if l.starts_with("events") => {
            r.fairness_events = pair(value);
            field(r, at, label, value, r.fairness_events.map(|p| p.0));
        }
        (Block::Fairness, l) if l.starts_with("execution time") => {
            r.fairness_time = pair(value);
            field(r, at, label, value, r.fairness_time.map(|p| p.0));
        }
        (_, "Operations performed") => operations_performed(r, value),
        _ => {}
    }
    block
}

fn sql_line(r: &mut Report, label: &str, value: &str, at: usize) {
    let counted = matches!(
        label,
        "read"
            | "write"
            | "other"
            | "transactions"
            | "queries"
            | "read/write requests"
            | "other operations"
            | "ignored errors"
            | "deadlocks"
            | "reconnects"
    );
    if !counted {
        return;
    }
    let count = field(r, at, label, value, number(value)).map_or(0, |v| v as u64);
    let rate = if matches!(
        label,
        "transactions" | "queries" | "read/write requests" | "other operations"
    ) {
        field(r, at, label, value, per_sec(value))
    } else {
        None
    };
    let sql = r.sql.get_or_insert_with(Sql::default);
    match label {
        "read" => sql.reads = count,
        "write" => sql.writes = count,
        "other" => sql.other = count,
        "transactions" => {
            sql.transactions = count;
            sql.tps = rate.unwrap_or(f64::NAN);
        }
        "queries" => sql.qps = rate.unwrap_or(f64::NAN),
        // 0.4 splits queries per second into two lines.
        "read/write requests" | "other operations" => sql.qps += rate.unwrap_or(f64::NAN),
        "ignored errors" | "deadlocks" => sql.errors = count,
        "reconnects" => sql.reconnects = Some(count),
        _ => {}
    }
}

/// `X MiB transferred (Y MiB/sec)` (1.0) and `X MB transferred (Y MB/sec)` (0.4).
fn memory_transferred(r: &mut Report, line: &str) {
    let Some((total, rest)) = line.split_once(" transferred (") else {
        return;
    };
    let total = total.trim_end_matches("MiB").trim_end_matches("MB").trim();
    if let (Some(t), Some(rate)) = (number(total), number(rest)) {
        push_metric(r, "total_mib", Some(t));
        push_metric(r, "mib_per_s", Some(rate));
    }
}

/// 0.4/0.5 fileio: `Operations performed:  R Read, W Write, O Other = T Total`; rates once
/// `total time:` is known ([`finalize`]).
fn operations_performed(r: &mut Report, value: &str) {
    // Memory 0.4: `Operations performed: 10240 ( 3855.80 ops/sec)`: nothing the columns hold
    // that `MB transferred` does not give.
    if !value.contains("Total") {
        return;
    }
    let mut counts = [None; 3];
    for part in value.split([',', '=']) {
        let part = part.trim().to_ascii_lowercase();
        let n = number(&part);
        if part.ends_with("read") || part.ends_with("reads") {
            counts[0] = n;
        } else if part.ends_with("write") || part.ends_with("writes") {
            counts[1] = n;
        } else if part.ends_with("other") {
            counts[2] = n;
        }
    }
    r.file_counts = Some(counts);
}

/// 0.4/0.5 fileio: `Read 8Gb  Written 0b  Total transferred 8Gb  (167.07Mb/sec)`.
fn fileio_04_sizes(r: &mut Report, line: &str) {
    let Some(rest) = line.strip_prefix("Read ") else {
        return;
    };
    let Some((read, rest)) = rest.split_once("Written ") else {
        return;
    };
    let written = rest.split("Total").next().unwrap_or("");
    if let (Some(rd), Some(wr)) = (size_mib(read.trim()), size_mib(written.trim())) {
        r.file_mib = Some((rd, wr));
    }
}

/// Derives what 0.4/0.5 fileio reports print as totals into the per-second columns 1.0 prints
/// (count or volume / total time).
fn finalize(r: &mut Report) {
    // A pasted 1.1 report whose `time elapsed` was lost still printed its throughput: the
    // time is the one those figures imply.
    if r.seconds.is_none()
        && let (Some(events), Some(eps)) = (r.events, r.eps.filter(|e| *e > 0.0))
        && let Some(u) = r
            .unread
            .iter_mut()
            .find(|u| u.field == "time elapsed" || u.field == "total time")
    {
        r.seconds = Some(events as f64 / eps);
        u.instead = "taken as total number of events / events/s";
    }
    let Some(secs) = r.seconds.filter(|s| *s > 0.0) else {
        return;
    };
    if let Some(counts) = r.file_counts.take() {
        for (name, n) in ["file_reads_ps", "file_writes_ps", "file_fsyncs_ps"]
            .into_iter()
            .zip(counts)
        {
            push_metric(r, name, n.map(|n| n / secs));
        }
    }
    if let Some((rd, wr)) = r.file_mib.take() {
        push_metric(r, "read_mib_per_s", Some(rd / secs));
        push_metric(r, "written_mib_per_s", Some(wr / secs));
    }
}

/// `8Gb`, `0b`, `93.875Mb`, `512Kb` (sysbench 0.4 prints binary units with a lowercase b).
fn size_mib(text: &str) -> Option<f64> {
    let digits: String = text
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let n: f64 = digits.parse().ok()?;
    let unit = text[digits.len()..].trim().to_ascii_lowercase();
    let factor = match unit.trim_end_matches('b').trim_end_matches('i') {
        "" => 1.0 / 1024.0 / 1024.0,
        "k" => 1.0 / 1024.0,
        "m" => 1.0,
        "g" => 1024.0,
        "t" => 1024.0 * 1024.0,
        _ => return None,
    };
    Some(n * factor)
}

fn push_metric(r: &mut Report, name: &'static str, v: Option<f64>) {
    if let Some(v) = v {
        r.metrics.retain(|(n, _)| *n != name);
        r.metrics.push((name, v));
    }
}

/// One interim line's body (after `[ Ns ]`), in any of the known forms.
fn interim(r: &mut Report, time: f64, body: &str) {
    // `queue length: Q, concurrency: C` belongs to the line before it (same stamp).
    if body.starts_with("queue length:") {
        let q = after(body, "queue length:");
        let c = after(body, "concurrency:");
        if let Some(last) = r.intervals.last_mut()
            && last.time_s == time
        {
            if let Some(q) = q {
                last.metrics.push(("queue_length", q));
            }
            if let Some(c) = c {
                last.metrics.push(("concurrency", c));
            }
        }
        return;
    }
    let mut iv = Interval {
        time_s: time,
        ..Interval::default()
    };
    if let Some(mib) = body.strip_suffix("MiB/sec") {
        // memory, 1.0: `[ 1s ] 1174.53 MiB/sec`.
        iv.metrics
            .push(("mib_per_s", number(mib).unwrap_or(f64::NAN)));
        iv.threads = r.threads;
        r.intervals.push(iv);
        return;
    }
    if body.starts_with("reads:") && body.contains("MiB/s") {
        // fileio, 1.0: `reads: 50.91 MiB/s writes: 33.94 MiB/s fsyncs: 215.54/s latency (ms,95%): 0.147`.
        for (key, name) in [
            ("reads:", "read_mib_per_s"),
            ("writes:", "written_mib_per_s"),
            ("fsyncs:", "file_fsyncs_ps"),
        ] {
            if let Some(v) = after(body, key) {
                iv.metrics.push((name, v));
            }
        }
        (iv.percentile, iv.lat_pct_ms) = latency_10(body, "latency (ms,");
        iv.threads = r.threads;
        r.intervals.push(iv);
        return;
    }
    if body.starts_with("thds:") {
        // 1.0: `thds: 8 tps: … qps: … (r/w/o: …) lat (ms,95%): … err/s: … reconn/s: …` or
        // `thds: 1 eps: … lat (ms,95%): …`.
        iv.threads = after(body, "thds:").map(|t| t as u64);
        iv.eps = after(body, "eps:");
        iv.tps = after(body, "tps:");
        iv.qps = after(body, "qps:");
        if let Some(rwo) = body.split("(r/w/o:").nth(1) {
            let mut it = rwo.split(')').next().unwrap_or("").split('/');
            iv.reads_ps = it.next().and_then(number);
            iv.writes_ps = it.next().and_then(number);
            iv.other_ps = it.next().and_then(number);
        }
        (iv.percentile, iv.lat_pct_ms) = latency_10(body, "lat (ms,");
        iv.errors_ps = after(body, "err/s:");
        iv.reconnects_ps = after(body, "reconn/s:");
    } else if body.starts_with("threads:") {
        // 0.5: `threads: 1, tps: 448.09, reads/s: 6273.34, writes/s: 1792.35 response time:
        // 2.71ms (99%)`; pre-1.0: `… reads: …, writes: …, response time: 70.10ms (95%),
        // errors: 0.00, reconnects:  0.00`.
        iv.threads = after(body, "threads:").map(|t| t as u64);
        iv.tps = after(body, "tps:");
        iv.reads_ps = after(body, "reads/s:").or_else(|| after(body, "reads:"));
        iv.writes_ps = after(body, "writes/s:").or_else(|| after(body, "writes:"));
        // No qps: these lines leave out "other" queries (BEGIN/COMMIT), which 1.0's qps counts.
        iv.errors_ps = after(body, "errors:");
        iv.reconnects_ps = after(body, "reconnects:");
        if let Some(rt) = body.split("response time:").nth(1) {
            iv.lat_pct_ms = number(rt);
            iv.percentile = rt
                .split('(')
                .nth(1)
                .and_then(|p| number(p.trim_end_matches([')', '%'])));
        }
    } else {
        return;
    }
    if iv.eps.is_none() && iv.tps.is_some() {
        // OLTP events are transactions.
        iv.eps = iv.tps;
    }
    if iv.percentile.is_some() && r.percentile.is_none() {
        r.percentile = iv.percentile;
    }
    r.intervals.push(iv);
}

/// `lat (ms,95%): 12.34` → (95, 12.34).
fn latency_10(body: &str, key: &str) -> (Option<f64>, Option<f64>) {
    let Some(rest) = body.split(key).nth(1) else {
        return (None, None);
    };
    let pct = rest.split('%').next().and_then(number);
    let value = rest.split_once("):").and_then(|(_, v)| number(v));
    (pct, value)
}

/// The number right after `key` in `body`, where `key` starts a word (`reads:` is not the
/// end of `threads:`).
fn after(body: &str, key: &str) -> Option<f64> {
    let (idx, _) = body.match_indices(key).find(|&(i, _)| {
        body[..i]
            .chars()
            .next_back()
            .is_none_or(|c| matches!(c, ' ' | ',' | '(' | '\t'))
    })?;
    number(&body[idx + key.len()..])
}

/// `N (X per sec.)` / `N (X per second)` → X.
fn per_sec(value: &str) -> Option<f64> {
    number(value.split_once('(')?.1)
}

/// `125.0000/3.20` → (125.0, 3.2).
fn pair(value: &str) -> Option<(f64, f64)> {
    let (a, b) = value.trim().split_once('/')?;
    Some((number(a)?, number(b)?))
}

/// The leading decimal number of `text` after blanks: `  10.0094s` → 10.0094, `3.20ms` → 3.2.
pub fn number(text: &str) -> Option<f64> {
    let t = text.trim_start();
    let end = t
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || (i == 0 && c == '-')))
        .map_or(t.len(), |(i, _)| i);
    t[..end].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_read_as_printed() {
        assert_eq!(number("  10.0094s"), Some(10.0094));
        assert_eq!(number("3.20ms"), Some(3.2));
        assert_eq!(number(" 1166 "), Some(1166.0));
        assert_eq!(number("x"), None);
        assert_eq!(per_sec("583    (135.94 per sec.)"), Some(135.94));
        assert_eq!(per_sec("2097152 (1055787.70 per second)"), Some(1055787.7));
        assert_eq!(pair(" 291.5000/2.50"), Some((291.5, 2.5)));
        assert_eq!(size_mib("8Gb"), Some(8192.0));
        assert_eq!(size_mib("93.875Mb"), Some(93.875));
        assert_eq!(size_mib("0b"), Some(0.0));
        assert_eq!(size_mib("512Kb"), Some(0.5));
    }

    #[test]
    fn banners_tell_the_version() {
        assert_eq!(
            banner("sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)"),
            Some(Version::V10)
        );
        assert_eq!(
            banner("sysbench 0.4.12:  multi-threaded system evaluation benchmark"),
            Some(Version::V04)
        );
        assert_eq!(
            banner("sysbench 0.5:  multi-threaded system evaluation benchmark"),
            Some(Version::V05)
        );
        assert_eq!(
            banner("sysbench 1.0:  multi-threaded system evaluation benchmark"),
            Some(Version::V05)
        );
        assert_eq!(
            banner("sysbench 1.1.0-df89d34 (using bundled LuaJIT 2.1.0-beta3)"),
            Some(Version::V11)
        );
        assert_eq!(banner("sysbench 1.1.0-bbee5d5"), Some(Version::V11));
        assert_eq!(
            banner("sysbench 1.0.20-compatible (sbsuite 0.1.0)"),
            Some(Version::V10)
        );
        assert_eq!(banner("sysbench is great"), None);
    }

    #[test]
    fn command_lines_after_prompts_name_workload_and_threads() {
        let (cmd, w, t) =
            command_line("$ sysbench cpu --threads=4 --time=2 run").expect("a command line");
        assert_eq!(cmd, "sysbench cpu --threads=4 --time=2 run");
        assert_eq!(w.as_deref(), Some("cpu"));
        assert_eq!(t, Some(4));
        let (cmd, w, t) = command_line(
            "[ec2-user@ip ~]$ sysbench --test=oltp --mysql-password=secret --oltp-read-only=on --num-threads=8 run",
        )
        .expect("a command line");
        assert!(!cmd.contains("secret"), "{cmd}");
        assert!(cmd.contains("--mysql-password=***"), "{cmd}");
        assert_eq!(w.as_deref(), Some("oltp_read_only"));
        assert_eq!(t, Some(8));
        assert!(command_line("sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)").is_none());
        assert!(command_line("we ran sysbench and it was fine to run").is_none());
    }

    #[test]
    fn interim_forms_of_every_version() {
        let mut r = Report::default();
        interim(
            &mut r,
            10.0,
            "thds: 8 tps: 123.45 qps: 2469.00 (r/w/o: 1728.30/493.80/246.90) lat (ms,95%): 12.34 err/s: 0.50 reconn/s: 0.25",
        );
        let iv = &r.intervals[0];
        assert_eq!(iv.threads, Some(8));
        assert_eq!(iv.tps, Some(123.45));
        assert_eq!(iv.eps, Some(123.45));
        assert_eq!(iv.qps, Some(2469.0));
        assert_eq!(
            (iv.reads_ps, iv.writes_ps, iv.other_ps),
            (Some(1728.3), Some(493.8), Some(246.9))
        );
        assert_eq!((iv.percentile, iv.lat_pct_ms), (Some(95.0), Some(12.34)));
        assert_eq!((iv.errors_ps, iv.reconnects_ps), (Some(0.5), Some(0.25)));

        interim(&mut r, 11.0, "queue length: 30, concurrency: 2");
        interim(&mut r, 12.0, "thds: 1 eps: 3240.11 lat (ms,99%): 0.37");
        interim(&mut r, 12.0, "queue length: 3 concurrency: 1");
        assert_eq!(r.intervals[0].metrics, vec![]);
        let iv = &r.intervals[1];
        assert_eq!((iv.eps, iv.tps), (Some(3240.11), None));
        assert_eq!((iv.percentile, iv.lat_pct_ms), (Some(99.0), Some(0.37)));
        assert_eq!(
            iv.metrics,
            vec![("queue_length", 3.0), ("concurrency", 1.0)]
        );

        interim(&mut r, 13.0, "1174.53 MiB/sec");
        assert_eq!(r.intervals[2].metrics, vec![("mib_per_s", 1174.53)]);
        interim(
            &mut r,
            14.0,
            "reads: 50.91 MiB/s writes: 33.94 MiB/s fsyncs: 215.54/s latency (ms,95%): 0.147",
        );
        assert_eq!(
            r.intervals[3].metrics,
            vec![
                ("read_mib_per_s", 50.91),
                ("written_mib_per_s", 33.94),
                ("file_fsyncs_ps", 215.54)
            ]
        );
        assert_eq!(r.intervals[3].lat_pct_ms, Some(0.147));

        interim(
            &mut r,
            10.0,
            "threads: 1, tps: 448.09, reads/s: 6273.34, writes/s: 1792.35 response time: 2.71ms (99%)",
        );
        let iv = &r.intervals[4];
        assert_eq!((iv.threads, iv.tps), (Some(1), Some(448.09)));
        assert_eq!((iv.reads_ps, iv.writes_ps), (Some(6273.34), Some(1792.35)));
        assert_eq!((iv.lat_pct_ms, iv.percentile), (Some(2.71), Some(99.0)));
        interim(
            &mut r,
            1.0,
            "threads: 16, tps: 308.64, reads: 4454.82, writes: 929.92, response time: 70.10ms (95%), errors: 0.00, reconnects:  0.00",
        );
        let iv = &r.intervals[5];
        assert_eq!((iv.reads_ps, iv.writes_ps), (Some(4454.82), Some(929.92)));
        assert_eq!((iv.errors_ps, iv.reconnects_ps), (Some(0.0), Some(0.0)));
        assert_eq!((iv.lat_pct_ms, iv.percentile), (Some(70.1), Some(95.0)));
    }

    #[test]
    fn a_file_with_several_reports_splits_at_each_command_line() {
        let text = "$ sysbench threads --threads=2 run\nsysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n\nGeneral statistics:\n    total time:                          2.0135s\n    total number of events:              1108\n\n$ sysbench mutex run\nsysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\nGeneral statistics:\n    total time:                          4.0000s\n    total number of events:              1\n";
        let reports = parse(text);
        assert_eq!(reports.len(), 2);
        assert_eq!(reports[0].workload.as_deref(), Some("threads"));
        assert_eq!(reports[0].threads, Some(2));
        assert_eq!(reports[0].line, 1);
        assert_eq!(reports[1].workload.as_deref(), Some("mutex"));
        assert_eq!(reports[1].line, 8);
        assert_eq!(reports[1].events, Some(1));
    }

    #[test]
    fn prepare_output_and_prose_are_not_reports() {
        let text = "sysbench 0.4.12:  multi-threaded system evaluation benchmark\n\nCreating table 'sbtest'...\nCreating 1000000 records in table 'sbtest'...\n";
        assert!(parse(text).is_empty());
        assert!(parse("nothing to see\n").is_empty());
    }

    #[test]
    fn a_failed_run_keeps_its_interim_lines_and_error() {
        let text = "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\nThreads started!\n\n[ 1s ] thds: 2 tps: 10.00 qps: 200.00 (r/w/o: 140.00/40.00/20.00) lat (ms,95%): 8.13 err/s: 0.00 reconn/s: 0.00\nFATAL: mysql_drv_query() returned error 2013 (Lost connection to MySQL server during query) for query 'COMMIT'\n";
        let reports = parse(text);
        assert_eq!(reports.len(), 1);
        assert!(!reports[0].is_complete());
        assert_eq!(reports[0].intervals.len(), 1);
        assert!(reports[0].fatal.as_deref().unwrap().contains("error 2013"));
    }

    #[test]
    fn fields_run_together_by_a_paste_are_cut_at_their_labels() {
        assert_eq!(
            split_fields("max: 387.8195th percentile: 155.80"),
            ["max: 387.81", "95th percentile: 155.80"]
        );
        assert_eq!(
            split_fields("max: 2133.89999th percentile: 816.63"),
            ["max: 2133.89", "999th percentile: 816.63"]
        );
        assert_eq!(
            split_fields("time elapsed: 20.0049stotal number of events: 23194"),
            ["time elapsed: 20.0049s", "total number of events: 23194"]
        );
        assert_eq!(
            split_fields("sum: 319843.52Threads fairness:"),
            ["sum: 319843.52", "Threads fairness:"]
        );
        assert_eq!(
            split_fields("min: 0.87msavg: 1.20ms"),
            ["min: 0.87ms", "avg: 1.20ms"]
        );
        // Whole fields and words that end like a label stay whole.
        assert_eq!(
            split_fields("95th percentile:                        0.30"),
            ["95th percentile:                        0.30"]
        );
        assert_eq!(split_fields("admin: yes"), ["admin: yes"]);
        assert_eq!(
            split_fields("a paste (`time elapsed: 2.0stotal number of events: 9`)"),
            ["a paste (`time elapsed: 2.0stotal number of events: 9`)"]
        );
        assert_eq!(
            split_fields("execution time (avg/stddev):   10.0018/0.00"),
            ["execution time (avg/stddev):   10.0018/0.00"]
        );
        assert_eq!(
            split_fields("FATAL: thread 1 max: 3 avg: 2"),
            ["FATAL: thread 1 max: 3 avg: 2"]
        );
    }

    #[test]
    fn a_lost_time_elapsed_is_implied_by_the_printed_throughput() {
        let text = "Throughput:\nevents/s (eps): 100.0000\ntime elapsed: ??s\ntotal number of events: 1000\nLatency (ms):\nmin: 1.00\navg:\n";
        let reports = parse(text);
        assert_eq!(reports.len(), 1);
        let r = &reports[0];
        assert!(r.is_complete());
        assert_eq!(r.seconds, Some(10.0));
        assert_eq!(r.version, Some(Version::V11));
        assert_eq!(r.lat_min, Some(1.0));
        let unread: Vec<_> = r
            .unread
            .iter()
            .map(|u| (u.line, u.field.as_str(), u.instead))
            .collect();
        assert_eq!(
            unread,
            [
                (
                    3,
                    "time elapsed",
                    "taken as total number of events / events/s"
                ),
                (7, "avg", LEFT_EMPTY)
            ]
        );
    }

    #[test]
    fn a_1_1_fileio_report_with_two_throughput_blocks_is_one_report() {
        let text = "sysbench 1.1.0-df89d34 (using bundled LuaJIT 2.1.0-beta3)\nFile operations:\n    reads/s:                      2646.27\n    writes/s:                     1764.18\n    fsyncs/s:                     178.18\n\nThroughput:\n    read, MiB/s:                  41.35\n    written, MiB/s:               27.57\n\nThroughput:\n    events/s (eps):                      5199.3333\n    time elapsed:                        3.0000s\n    total number of events:              15598\n";
        let reports = parse(text);
        assert_eq!(reports.len(), 1);
        assert_eq!(reports[0].workload.as_deref(), Some("fileio"));
        assert_eq!(reports[0].events, Some(15598));
        assert!(reports[0].metrics.contains(&("read_mib_per_s", 41.35)));
    }

    #[test]
    fn the_final_report_after_a_checkpoint_is_a_report_of_the_same_run() {
        let text = "$ sysbench cpu --threads=2 run\nsysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n[ 5s ] Checkpoint report:\nGeneral statistics:\n    total time:                          5.0000s\n    total number of events:              100\nGeneral statistics:\n    total time:                          10.0000s\n    total number of events:              210\n";
        let reports = parse(text);
        assert_eq!(reports.len(), 2);
        assert_eq!(reports[0].checkpoint, Some(5.0));
        assert_eq!(reports[1].checkpoint, None);
        assert_eq!(reports[1].workload.as_deref(), Some("cpu"));
        assert_eq!(reports[1].events, Some(210));
        assert_eq!(reports[1].line, 7);
    }
}
