//! sysbench 1.0.20's console text: banner, interim lines and the final report.
//!
//! Every layout here was compared character by character with `sysbench cpu … run` (1.0.20):
//! general-statistics values start at column 42, latency lines are 53 characters wide with the
//! value right-aligned, the fairness values follow a 35-character label. The only intended
//! differences are the first banner line (`sysbench 1.0.20-compatible (sbsuite <version>)`) and
//! non-integer percentiles (sysbench rejects them): `99.9th percentile:` keeps the value column.
//! The general options' lines were captured from sysbench 1.0.20 too: the banner's optional
//! lines (`--rate`, `--report-checkpoints`, `--debug`, `--rand-seed`), the `--rate` queue line
//! (no comma in the non-DB form, as `sysbench cpu --rate` prints it), the `--histogram` block and
//! the `--debug` per-thread block.
//! Functions return `io::Result` and never flush except after interim lines, which people watch
//! live. It lives with the engines, its only users (the driver and the workloads' own blocks).

use std::io::{self, Write};

use super::config::RunConfig;
use super::{IntervalSample, StepOutcome, metric};
use crate::stats::WorkerStats;
use crate::stats::log_histogram;

/// Width of the latency lines (`         min:` … value).
const LATENCY_WIDTH: usize = 53;
/// Column (0-based) where general-statistics values start.
const VALUE_COLUMN: usize = 41;

/// Printed before the banner when neither `time` nor `events` limits the run.
pub fn write_endless_warning(out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "WARNING: Both event and time limits are disabled, running an endless test"
    )
}

/// sysbench's first line. It starts with `sysbench 1.0.20` because log parsers anchor on
/// `^sysbench <version>` to find a report (and its format); the rest says honestly that sbsuite
/// wrote it, where sysbench names its LuaJIT. One line for `sbsuite sysbench` and suite runs alike,
/// so a log reads the same whichever command produced it.
pub fn banner_line() -> String {
    format!(
        "sysbench 1.0.20-compatible (sbsuite {})",
        env!("CARGO_PKG_VERSION")
    )
}

/// The first line ([`banner_line`]) and the blank line after it.
pub fn write_banner(out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", banner_line())?;
    writeln!(out)
}

/// The general banner up to (and including) the blank lines before the test's own banner, with
/// sysbench's optional lines in sysbench's order (rate, interval, checkpoints, debug, seed).
pub fn write_header(out: &mut dyn Write, cfg: &RunConfig) -> io::Result<()> {
    write_banner(out)?;
    write_run_options(out, cfg)
}

/// [`write_header`] after the banner: `Running the test with following options:` and the
/// lines that follow it (a Lua script's `init()` prints between the two).
pub fn write_run_options(out: &mut dyn Write, cfg: &RunConfig) -> io::Result<()> {
    writeln!(out, "Running the test with following options:")?;
    writeln!(out, "Number of threads: {}", cfg.threads)?;
    // Not a sysbench line: only with `client_threads` (#32).
    if let Some(carriers) = cfg.carriers() {
        writeln!(
            out,
            "Client threads: {carriers} (the connections' workers share them as coroutines)"
        )?;
    }
    if cfg.rate > 0 {
        writeln!(out, "Target transaction rate: {}/sec", cfg.rate)?;
    }
    if let Some(every) = cfg.report_interval {
        writeln!(
            out,
            "Report intermediate results every {} second(s)",
            every.as_secs()
        )?;
    }
    if !cfg.checkpoints.is_empty() {
        let list: Vec<String> = cfg.checkpoints.iter().map(u64::to_string).collect();
        writeln!(out, "Report checkpoint(s) at {} seconds", list.join(", "))?;
    }
    if cfg.debug {
        writeln!(out, "Debug mode enabled.")?;
        writeln!(out)?;
    }
    if cfg.validate {
        writeln!(out, "Validation checks: on.")?;
        writeln!(out)?;
    }
    if cfg.seed == 0 {
        writeln!(
            out,
            "Initializing random number generator from current time"
        )?;
    } else {
        writeln!(
            out,
            "Initializing random number generator from seed ({}).",
            cfg.seed
        )?;
    }
    writeln!(out)?;
    writeln!(out)
}

/// Printed after the test's banner, before the workers are created.
pub fn write_workers_starting(out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "Initializing worker threads...")?;
    writeln!(out)
}

/// Printed once every worker is ready and the clock has started.
pub fn write_threads_started(out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "Threads started!")?;
    writeln!(out)
}

/// A percentile as sysbench's `%3d` field would show it; non-integers keep their decimals
/// (`99.9`), which widens the field by what they need.
pub fn percentile_field(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{:3}", p as u64)
    } else {
        format!("{p:3}")
    }
}

/// One interim line (sysbench's default format; DB workloads get the tps/qps form).
pub fn interval_line(s: &IntervalSample, percentile: f64) -> String {
    let pct = percentile_field(percentile);
    let pct = pct.trim_start();
    let stamp = format!("[ {:.0}s ] thds: {}", s.time_s, s.threads);
    match s.tps {
        Some(tps) => format!(
            "{stamp} tps: {tps:4.2} qps: {:4.2} (r/w/o: {:4.2}/{:4.2}/{:4.2}) lat (ms,{pct}%): {:4.2} err/s: {:4.2} reconn/s: {:4.2}",
            s.qps.unwrap_or(0.0),
            s.reads_ps.unwrap_or(0.0),
            s.writes_ps.unwrap_or(0.0),
            s.other_ps.unwrap_or(0.0),
            s.lat_pct_ms,
            s.errors_ps.unwrap_or(0.0),
            s.reconnects_ps.unwrap_or(0.0),
        ),
        None => format!(
            "{stamp} eps: {:4.2} lat (ms,{pct}%): {:4.2}",
            s.eps, s.lat_pct_ms
        ),
    }
}

/// The second interim line of a `--rate` run: `[ 1s ] queue length: 0 concurrency: 0`
/// (sysbench's non-DB form, no comma) or `[ 10s ] queue length: 0, concurrency: 0` (DB form).
pub fn queue_line(s: &IntervalSample) -> String {
    let q = metric(&s.metrics, "queue_length").unwrap_or(0.0);
    let c = metric(&s.metrics, "concurrency").unwrap_or(0.0);
    let sep = if s.tps.is_some() { "," } else { "" };
    format!(
        "[ {:.0}s ] queue length: {q:.0}{sep} concurrency: {c:.0}",
        s.time_s
    )
}

/// `--histogram`: sysbench's text histogram of the 1024 log buckets (non-empty ones only),
/// printed before the test's block and the final report.
pub fn write_histogram(out: &mut dyn Write, counts: &[u64]) -> io::Result<()> {
    writeln!(out, "Latency histogram (values are in milliseconds)")?;
    writeln!(
        out,
        "       value  ------------- distribution ------------- count"
    )?;
    let max = counts.iter().copied().max().unwrap_or(0).max(1) as f64;
    for (i, &c) in counts.iter().enumerate().filter(|(_, c)| **c > 0) {
        let stars = (40.0 * c as f64 / max).round() as usize;
        writeln!(
            out,
            "{:12.3} |{:<40} {c}",
            log_histogram::bucket_value_ms(i),
            "*".repeat(stars)
        )?;
    }
    writeln!(out, " ")
}

/// Verbosity 5 (`--debug`): the worker start lines sysbench prints before `Threads started!`.
pub fn write_debug_started(out: &mut dyn Write, threads: usize) -> io::Result<()> {
    for id in 0..threads {
        writeln!(out, "DEBUG: Worker thread (#{id}) started")?;
        writeln!(out, "DEBUG: Worker thread (#{id}) initialized")?;
    }
    Ok(())
}

/// Verbosity 4 and up: the lines after the workers stopped, one per worker that stopped on the
/// time limit and one per worker that stopped on the event limit, each repeat folded the way
/// sysbench's logger folds it (`(last message repeated N times)`).
pub fn write_debug_done(
    out: &mut dyn Write,
    time_exits: usize,
    event_exits: usize,
) -> io::Result<()> {
    for (exits, line) in [
        (time_exits, "Time limit exceeded, exiting..."),
        (event_exits, "Event limit exceeded, exiting..."),
    ] {
        if exits > 0 {
            writeln!(out, "{line}")?;
            if exits > 1 {
                writeln!(out, "(last message repeated {} times)", exits - 1)?;
            }
        }
    }
    writeln!(out, "Done.")?;
    writeln!(out)
}

/// sysbench's log levels for lines written at level 3 (everything this module prints) when
/// `verbosity` is below 3: sysbench prints a message only when its level is at most the
/// verbosity, so 0 keeps `FATAL:` lines, 1 adds `ALERT:`, 2 adds `WARNING:`, and the banner,
/// interim lines and reports (level 3) are dropped. Filtering whole lines at the edge of the
/// output keeps every writer in the engines free of level checks.
pub struct LevelFilter<'a> {
    inner: &'a mut dyn Write,
    verbosity: u8,
    /// The line being written, until its newline decides its fate.
    line: Vec<u8>,
}

impl<'a> LevelFilter<'a> {
    pub fn new(inner: &'a mut dyn Write, verbosity: u8) -> Self {
        LevelFilter {
            inner,
            verbosity,
            line: Vec::new(),
        }
    }

    fn keeps(&self, line: &[u8]) -> bool {
        let level = if line.starts_with(b"FATAL: ") {
            0
        } else if line.starts_with(b"ALERT: ") {
            1
        } else if line.starts_with(b"WARNING: ") {
            2
        } else if line.starts_with(b"DEBUG: ") {
            5
        } else {
            3
        };
        level <= self.verbosity
    }
}

impl Write for LevelFilter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = buf;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            self.line.extend_from_slice(&rest[..=end]);
            if self.keeps(&self.line) {
                self.inner.write_all(&self.line)?;
            }
            self.line.clear();
            rest = &rest[end + 1..];
        }
        self.line.extend_from_slice(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A last line without its newline is still a line.
impl Drop for LevelFilter<'_> {
    fn drop(&mut self) {
        if !self.line.is_empty() && self.keeps(&self.line) {
            let _ = self.inner.write_all(&self.line);
            let _ = self.inner.flush();
        }
    }
}

/// `--debug`: sysbench's per-thread statistics after the final report.
pub fn write_debug_per_thread(out: &mut dyn Write, workers: &[WorkerStats]) -> io::Result<()> {
    writeln!(out, "DEBUG: Verbose per-thread statistics:")?;
    writeln!(out)?;
    for (id, w) in workers.iter().enumerate() {
        let s = |ns: u64| ns as f64 / 1e9;
        let avg = if w.events > 0 {
            s(w.busy_ns) / w.events as f64
        } else {
            0.0
        };
        let min = if w.events > 0 { s(w.min_ns) } else { 0.0 };
        writeln!(
            out,
            "DEBUG:     thread #{id:3}: min: {min:.4}s  avg: {avg:.4}s  max: {:.4}s  events: {}",
            s(w.max_ns),
            w.events
        )?;
        writeln!(
            out,
            "DEBUG:                  total time taken by event execution: {:.4}s",
            s(w.busy_ns)
        )?;
    }
    writeln!(out)
}

fn value_line(out: &mut dyn Write, label: &str, value: &str) -> io::Result<()> {
    writeln!(out, "{label:<VALUE_COLUMN$}{value}")
}

fn latency_line(out: &mut dyn Write, label: &str, value_ms: f64) -> io::Result<()> {
    let width = LATENCY_WIDTH.saturating_sub(label.len());
    writeln!(out, "{label}{value_ms:>width$.2}")
}

fn count_rate(count: u64, seconds: f64) -> String {
    format!("{count:<6} ({:.2} per sec.)", per_second(count, seconds))
}

/// `count / seconds`, 0 for a zero-length run.
pub fn per_second(count: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        count as f64 / seconds
    } else {
        0.0
    }
}

/// The per-phase block after the final report of a run with phases (#30): one line per phase,
/// the measured ones with their events, rate, percentile latency and (in rate phases) the rate
/// achieved against the target.
pub fn write_phases(
    out: &mut dyn Write,
    phases: &[super::phases::Phase],
    measured: &[super::PhaseOutcome],
) -> io::Result<()> {
    writeln!(out, "Phases:")?;
    let width = phases.iter().map(|p| p.name.len()).max().unwrap_or(0);
    for (i, p) in phases.iter().enumerate() {
        let threads = format!(
            "{} thread{}",
            p.threads,
            if p.threads == 1 { "" } else { "s" }
        );
        let head = format!(
            "    {:<width$}  {:>6}s  {threads:>11}  {:<16}",
            p.name,
            p.duration.as_secs_f64(),
            p.rate_text()
        );
        match measured.iter().find(|m| m.index == i) {
            _ if p.warmup => writeln!(out, "{head}  warmup, not measured")?,
            None => writeln!(out, "{head}  not reached")?,
            Some(m) => {
                let o = &m.outcome;
                let eps = if o.seconds > 0.0 {
                    o.events as f64 / o.seconds
                } else {
                    0.0
                };
                let target = p
                    .mean_rate()
                    .map(|r| format!(" ({:.1}% of the target)", eps / r * 100.0))
                    .unwrap_or_default();
                let pct = o.latency.percentile;
                writeln!(
                    out,
                    "{head}  events: {} ({eps:.2} per sec.){target}, {}th percentile: {:.2} ms",
                    o.events,
                    percentile_field(pct).trim(),
                    o.latency.pct_ms
                )?;
            }
        }
    }
    writeln!(out)
}

/// The final report after the test-specific block: `SQL statistics:` (DB workloads only),
/// `General statistics:`, `Latency (ms):` and `Threads fairness:`, ending with a blank line.
pub fn write_final_report(out: &mut dyn Write, o: &StepOutcome) -> io::Result<()> {
    if let Some(sql) = &o.sql {
        let total = sql.reads + sql.writes + sql.other;
        writeln!(out, "SQL statistics:")?;
        writeln!(out, "    queries performed:")?;
        value_line(out, "        read:", &sql.reads.to_string())?;
        value_line(out, "        write:", &sql.writes.to_string())?;
        value_line(out, "        other:", &sql.other.to_string())?;
        value_line(out, "        total:", &total.to_string())?;
        value_line(
            out,
            "    transactions:",
            &count_rate(sql.transactions, o.seconds),
        )?;
        value_line(out, "    queries:", &count_rate(total, o.seconds))?;
        value_line(
            out,
            "    ignored errors:",
            &count_rate(sql.errors, o.seconds),
        )?;
        value_line(
            out,
            "    reconnects:",
            &count_rate(sql.reconnects, o.seconds),
        )?;
        writeln!(out)?;
    }
    writeln!(out, "General statistics:")?;
    value_line(out, "    total time:", &format!("{:.4}s", o.seconds))?;
    value_line(out, "    total number of events:", &o.events.to_string())?;
    writeln!(out)?;

    let l = &o.latency;
    writeln!(out, "Latency (ms):")?;
    latency_line(out, "         min:", l.min_ms)?;
    latency_line(out, "         avg:", l.avg_ms)?;
    latency_line(out, "         max:", l.max_ms)?;
    if l.percentile > 0.0 {
        let label = format!("        {}th percentile:", percentile_field(l.percentile));
        latency_line(out, &label, l.pct_ms)?;
    } else {
        writeln!(out, "         percentile stats:               disabled")?;
    }
    latency_line(out, "         sum:", l.sum_ms)?;
    writeln!(out)?;

    writeln!(out, "Threads fairness:")?;
    writeln!(
        out,
        "    {:<31}{:.4}/{:.2}",
        "events (avg/stddev):", o.fairness_events_avg, o.fairness_events_stddev
    )?;
    writeln!(
        out,
        "    {:<31}{:.4}/{:.2}",
        "execution time (avg/stddev):", o.fairness_time_avg, o.fairness_time_stddev
    )?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{LatencySummary, SqlCounters};

    fn outcome(percentile: f64, pct_ms: f64) -> StepOutcome {
        StepOutcome {
            error_codes: Default::default(),
            seconds: 3.0022,
            events: 18432,
            sql: None,
            latency: LatencySummary {
                min_ms: 0.29,
                avg_ms: 0.32,
                max_ms: 5.54,
                p50_ms: 0.31,
                p95_ms: 0.35,
                p99_ms: 0.44,
                percentile,
                pct_ms,
                sum_ms: 5977.15,
            },
            fairness_events_avg: 9216.0,
            fairness_events_stddev: 23.0,
            fairness_time_avg: 2.9886,
            fairness_time_stddev: 0.0,
            histogram: hdrhistogram::Histogram::new(3).expect("valid sigfig"),
            interrupted: false,
            cut_short: None,
            metrics: Vec::new(),
            transactions: Vec::new(),
            per_thread: Vec::new(),
            steady: Default::default(),
            phases: Vec::new(),
            groups: Vec::new(),
            open_loop: None,
        }
    }

    fn render(o: &StepOutcome) -> String {
        let mut buf = Vec::new();
        write_final_report(&mut buf, o).expect("write to Vec");
        String::from_utf8(buf).expect("utf8")
    }

    /// Captured from `sysbench cpu --threads=2 --time=3 run` (1.0.20), after `CPU speed:`.
    const SYSBENCH_95: &str = "\
General statistics:
    total time:                          3.0022s
    total number of events:              18432

Latency (ms):
         min:                                    0.29
         avg:                                    0.32
         max:                                    5.54
         95th percentile:                        0.35
         sum:                                 5977.15

Threads fairness:
    events (avg/stddev):           9216.0000/23.00
    execution time (avg/stddev):   2.9886/0.00

";

    #[test]
    fn final_report_matches_sysbench() {
        assert_eq!(render(&outcome(95.0, 0.35)), SYSBENCH_95);
    }

    #[test]
    fn percentile_labels_keep_the_value_column() {
        let line = |p, v| {
            render(&outcome(p, v))
                .lines()
                .find(|l| l.contains("percentile"))
                .expect("percentile line")
                .to_string()
        };
        // sysbench 1.0.20 with --percentile=5 / 100 / 0:
        assert_eq!(
            line(5.0, 0.30),
            "          5th percentile:                        0.30"
        );
        assert_eq!(
            line(100.0, 4.41),
            "        100th percentile:                        4.41"
        );
        assert_eq!(
            line(0.0, 0.0),
            "         percentile stats:               disabled"
        );
        // sysbench rejects 99.9; we widen the label and keep the value column:
        assert_eq!(
            line(99.9, 0.44),
            "        99.9th percentile:                       0.44"
        );
    }

    #[test]
    fn interval_lines() {
        let s = IntervalSample {
            time_s: 1.0004,
            threads: 2,
            eps: 6058.04,
            lat_pct_ms: 0.3612,
            ..IntervalSample::default()
        };
        assert_eq!(
            interval_line(&s, 95.0),
            "[ 1s ] thds: 2 eps: 6058.04 lat (ms,95%): 0.36"
        );
        assert_eq!(
            interval_line(&s, 99.9),
            "[ 1s ] thds: 2 eps: 6058.04 lat (ms,99.9%): 0.36"
        );
        assert_eq!(
            interval_line(&s, 0.0),
            "[ 1s ] thds: 2 eps: 6058.04 lat (ms,0%): 0.36"
        );
        let db = IntervalSample {
            time_s: 10.0,
            threads: 8,
            tps: Some(123.45),
            qps: Some(2469.0),
            reads_ps: Some(1728.3),
            writes_ps: Some(493.8),
            other_ps: Some(246.9),
            lat_pct_ms: 12.34,
            errors_ps: Some(0.0),
            reconnects_ps: Some(0.0),
            ..IntervalSample::default()
        };
        assert_eq!(
            interval_line(&db, 95.0),
            "[ 10s ] thds: 8 tps: 123.45 qps: 2469.00 (r/w/o: 1728.30/493.80/246.90) lat (ms,95%): 12.34 err/s: 0.00 reconn/s: 0.00"
        );
    }

    #[test]
    fn sql_block_follows_the_spec_layout() {
        let mut o = outcome(95.0, 0.35);
        o.seconds = 10.0;
        o.sql = Some(SqlCounters {
            transactions: 1000,
            reads: 14000,
            writes: 4000,
            other: 2000,
            errors: 0,
            reconnects: 0,
        });
        let text = render(&o);
        let expected = "\
SQL statistics:
    queries performed:
        read:                            14000
        write:                           4000
        other:                           2000
        total:                           20000
    transactions:                        1000   (100.00 per sec.)
    queries:                             20000  (2000.00 per sec.)
    ignored errors:                      0      (0.00 per sec.)
    reconnects:                          0      (0.00 per sec.)

General statistics:
";
        assert!(text.starts_with(expected), "{text}");
    }

    #[test]
    fn header_matches_sysbench_banner() {
        let mut buf = Vec::new();
        let cfg = RunConfig {
            threads: 2,
            report_interval: Some(std::time::Duration::from_secs(1)),
            ..RunConfig::default()
        };
        write_header(&mut buf, &cfg).expect("write");
        write_workers_starting(&mut buf).expect("write");
        write_threads_started(&mut buf).expect("write");
        let text = String::from_utf8(buf).expect("utf8");
        let expected = format!(
            "sysbench 1.0.20-compatible (sbsuite {})\n\nRunning the test with following options:\nNumber of threads: 2\nReport intermediate results every 1 second(s)\nInitializing random number generator from current time\n\n\nInitializing worker threads...\n\nThreads started!\n\n",
            env!("CARGO_PKG_VERSION")
        );
        assert_eq!(text, expected);

        // Every optional line, in sysbench's order (captured from sysbench 1.0.20 with
        // --rate=1000 --report-interval=1 --report-checkpoints=5,3 --debug --rand-seed=7).
        let cfg = RunConfig {
            threads: 1,
            rate: 1000,
            report_interval: Some(std::time::Duration::from_secs(1)),
            checkpoints: vec![3, 5],
            debug: true,
            seed: 7,
            ..RunConfig::default()
        };
        let mut buf = Vec::new();
        write_header(&mut buf, &cfg).expect("write");
        let text = String::from_utf8(buf).expect("utf8");
        assert!(text.ends_with("Running the test with following options:\nNumber of threads: 1\nTarget transaction rate: 1000/sec\nReport intermediate results every 1 second(s)\nReport checkpoint(s) at 3, 5 seconds\nDebug mode enabled.\n\nInitializing random number generator from seed (7).\n\n\n"), "{text}");
    }

    #[test]
    fn histogram_and_queue_and_debug_lines_match_sysbench() {
        let mut counts = vec![0u64; crate::stats::BUCKETS];
        let b = |ms: f64| log_histogram::bucket_of_ns((ms * 1e6) as u64);
        counts[b(0.029)] = 10002;
        counts[b(0.0282)] = 4063;
        counts[b(1.925)] = 1;
        let mut buf = Vec::new();
        write_histogram(&mut buf, &counts).expect("write");
        let text = String::from_utf8(buf).expect("utf8");
        // Lines as sysbench 1.0.20 prints them (`--histogram`).
        let expected = "Latency histogram (values are in milliseconds)\n       value  ------------- distribution ------------- count\n       0.028 |****************                         4063\n       0.029 |**************************************** 10002\n       1.925 |                                         1\n \n";
        assert_eq!(text, expected);

        let mut s = IntervalSample {
            time_s: 2.0003,
            metrics: vec![("queue_length", 3.0), ("concurrency", 2.0)],
            ..IntervalSample::default()
        };
        assert_eq!(queue_line(&s), "[ 2s ] queue length: 3 concurrency: 2");
        s.tps = Some(1.0);
        assert_eq!(queue_line(&s), "[ 2s ] queue length: 3, concurrency: 2");

        let mut w = WorkerStats::new().expect("sigfig");
        w.record(30_000);
        w.record(16_100_000);
        let mut buf = Vec::new();
        write_debug_per_thread(&mut buf, &[w]).expect("write");
        write_debug_done(&mut buf, 2, 0).expect("write");
        let text = String::from_utf8(buf).expect("utf8");
        assert_eq!(
            text,
            "DEBUG: Verbose per-thread statistics:\n\nDEBUG:     thread #  0: min: 0.0000s  avg: 0.0081s  max: 0.0161s  events: 2\nDEBUG:                  total time taken by event execution: 0.0161s\n\nTime limit exceeded, exiting...\n(last message repeated 1 times)\nDone.\n\n"
        );
    }

    /// sysbench's rule: a line is printed when its level (FATAL 0, ALERT 1, WARNING 2, plain
    /// 3, DEBUG 5) is at most the verbosity; lines split across writes are judged whole, and a
    /// last line without a newline is judged when the filter goes away.
    #[test]
    fn level_filter_keeps_the_lines_sysbench_prints_at_each_level() {
        let text = "sysbench 1.0.20-compatible\nFATAL: f\nALERT: a\nWARNING: w\nDEBUG: d\nDone.";
        let at = |verbosity: u8| {
            let mut buf = Vec::new();
            {
                let mut f = LevelFilter::new(&mut buf, verbosity);
                for chunk in text.as_bytes().chunks(5) {
                    f.write_all(chunk).expect("write");
                }
            }
            String::from_utf8(buf).expect("utf-8")
        };
        assert_eq!(at(0), "FATAL: f\n");
        assert_eq!(at(1), "FATAL: f\nALERT: a\n");
        assert_eq!(at(2), "FATAL: f\nALERT: a\nWARNING: w\n");
        assert_eq!(
            at(3),
            "sysbench 1.0.20-compatible\nFATAL: f\nALERT: a\nWARNING: w\nDone."
        );
        assert_eq!(at(5), text);
    }

    #[test]
    fn done_lines_count_time_and_event_exits() {
        let mut buf = Vec::new();
        write_debug_done(&mut buf, 0, 3).expect("write");
        assert_eq!(
            String::from_utf8_lossy(&buf),
            "Event limit exceeded, exiting...\n(last message repeated 2 times)\nDone.\n\n"
        );
    }
}
