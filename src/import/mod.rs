//! `sbsuite import FILE…`: sysbench text logs (1.1, 1.0, 0.5, 0.4) → a results directory with the
//! same `results.csv` and `intervals.csv` columns `sbsuite run` writes, so years of kept
//! sysbench output can be compared with new runs by the same tools.
//!
//! Each report in a file becomes one run step; the values are the printed ones (see
//! [`parse`]). What a text log cannot give stays empty rather than invented: no histogram, no
//! p50/p99 unless the log's percentile was 99, no start time (the file's modification time is
//! used, the closest thing a log has to a clock).

pub mod parse;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use indexmap::IndexMap;

use crate::engine::{IntervalSample, LatencySummary, SqlCounters, StepOutcome};
use crate::plan::{Plan, Step, StepKind};
use crate::results::csv::fmt_float;
use crate::results::load::{IMPORTED_SUITE_HEADER, Origin};
use crate::results::{ResultStore, ResultsError, RowStatus, RunRow, write_origin};
use crate::value::{Options, Value};

use self::parse::Report;

/// What `sbsuite import` was asked to do.
#[derive(Clone, Debug)]
pub struct ImportRequest {
    pub files: Vec<PathBuf>,
    /// Results root: the run goes to `<out>/<suite>/<run-id>/`.
    pub out: PathBuf,
    pub suite: String,
    /// The workload of reports whose log does not name it (1.0 OLTP logs without their command
    /// line, `threads`, `mutex`).
    pub workload: Option<String>,
}

/// Variant name of imported rows: the one `sbsuite run` gives a suite without variants, so an
/// import and a new run match in a comparison.
const VARIANT: &str = "default";

/// A report and where it came from.
struct Source {
    file: PathBuf,
    report: Report,
    modified: DateTime<Utc>,
}

/// Why nothing (or not everything) was imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("cannot read {}: {source}; give the path of a saved sysbench output file", .file.display())]
    Unreadable {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{} holds no sysbench report (no `General statistics:` / `Throughput:` / `Test execution summary:` block and no `[ Ns ]` interim lines); give the saved output of `sysbench … run`",
        .0.display()
    )]
    NoReport(PathBuf),
    /// The run directory could not be written.
    #[error(transparent)]
    Store(#[from] ResultsError),
}

/// Runs the command: reads and parses every file first (a bad file writes nothing), then
/// stores every report. Warnings about incomplete logs go to stderr and the imported steps to
/// stdout as it goes; errors are returned.
pub fn command(req: &ImportRequest) -> Result<(), ImportError> {
    let sources = read_all(&req.files)?;
    for s in &sources {
        if s.report.workload.is_none() && req.workload.is_none() {
            eprintln!(
                "warning: {}:{}: the log does not name its workload (no command line before the report); recorded as `unknown` — pass --workload NAME",
                s.file.display(),
                s.report.line
            );
        }
        for u in &s.report.unread {
            eprintln!(
                "warning: {}:{}: cannot read the `{}` field (`{}`); {}",
                s.file.display(),
                u.line,
                u.field,
                u.text,
                u.instead
            );
        }
        if !s.report.is_complete() {
            eprintln!(
                "warning: {}:{}: no final report (the run failed or was cut short); recorded as failed",
                s.file.display(),
                s.report.line
            );
        }
    }
    let plan = build_plan(&req.suite, &sources, req.workload.as_deref());
    let suite_text = suite_text(&req.suite, &sources, &plan);
    let dir = store(&req.out, &plan, &suite_text, &sources)?;
    println!(
        "imported {} report{} from {} file{} into {}",
        sources.len(),
        plural(sources.len()),
        req.files.len(),
        plural(req.files.len()),
        dir.display()
    );
    for (step, s) in plan.steps.iter().zip(&sources) {
        println!(
            "  step {:>3}  {:<28} {}:{} (sysbench {}, {} interim line{})",
            step.index,
            step.name,
            s.file.display(),
            s.report.line,
            s.report.version.map_or("?", |v| v.as_str()),
            s.report.intervals.len(),
            plural(s.report.intervals.len())
        );
    }
    Ok(())
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Reads and parses every file; the first unreadable file or file without a report is the
/// error.
fn read_all(files: &[PathBuf]) -> Result<Vec<Source>, ImportError> {
    let mut out = Vec::new();
    for file in files {
        let bytes = std::fs::read(file).map_err(|source| ImportError::Unreadable {
            file: file.clone(),
            source,
        })?;
        // Logs copied from terminals are not always UTF-8 (a stray Latin-1 byte): keep the rest.
        let text = String::from_utf8_lossy(&bytes);
        let reports = parse::parse(&text);
        if reports.is_empty() {
            return Err(ImportError::NoReport(file.clone()));
        }
        let modified = std::fs::metadata(file)
            .and_then(|m| m.modified())
            .map(DateTime::<Utc>::from)
            .unwrap_or_else(|_| Utc::now());
        out.extend(reports.into_iter().map(|report| Source {
            file: file.clone(),
            report,
            modified,
        }));
    }
    Ok(out)
}

/// One run step per report; `repetition` counts reports of the same workload and threads.
fn build_plan(suite: &str, sources: &[Source], default_workload: Option<&str>) -> Plan {
    let mut seen: IndexMap<(String, Option<u64>), u32> = IndexMap::new();
    let steps = sources
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let r = &s.report;
            let workload = r
                .workload
                .clone()
                .or_else(|| default_workload.map(str::to_string))
                .unwrap_or_else(|| "unknown".into());
            let rep = seen.entry((workload.clone(), r.threads)).or_insert(0);
            *rep += 1;
            let mut params = IndexMap::new();
            params.insert("workload".into(), Value::Str(workload.clone()));
            let mut options = Options::default();
            if let Some(t) = r.threads {
                params.insert("threads".into(), Value::Int(t as i64));
                options.0.insert("threads".into(), Value::Int(t as i64));
            }
            let pct = r.percentile.unwrap_or(95.0);
            options.0.insert(
                "percentile".into(),
                if pct.fract() == 0.0 {
                    Value::Int(pct as i64)
                } else {
                    Value::Float(pct)
                },
            );
            let mut name = match r.threads {
                Some(t) => format!("{workload}-t{t}"),
                None => workload.clone(),
            };
            if let Some(at) = r.checkpoint {
                let _ = write!(name, "-checkpoint{at}s");
            }
            Step {
                index: i + 1,
                kind: StepKind::Run,
                name,
                variant: VARIANT.into(),
                // Never run: the spec only tells the listing the options' kinds and defaults.
                spec: crate::engine::Catalog::builtin().workload(&workload),
                workload,
                dataset: 0,
                repetition: *rep,
                params,
                options,
                command: None,
                estimated_seconds: None,
                phases: Vec::new(),
                groups: Vec::new(),
                target: None,
            }
        })
        .collect();
    Plan {
        suite: suite.to_string(),
        axes: vec!["workload".into(), "threads".into()],
        steps,
        target: None,
        variant_order: Default::default(),
        order_seed: None,
        dataset: Default::default(),
    }
}

/// The run's `suite.toml`: not a runnable suite (a log does not hold every option), but the
/// record of where each step came from, shown by `sbsuite report` and compared by `compare`.
fn suite_text(suite: &str, sources: &[Source], plan: &Plan) -> String {
    let mut t = String::new();
    t.push_str(IMPORTED_SUITE_HEADER);
    t.push_str(" from sysbench text output: a record of the sources,\n");
    t.push_str("# not a runnable suite. One run step per report:\n");
    for (step, s) in plan.steps.iter().zip(sources) {
        let _ = writeln!(
            t,
            "#   step {}: {}:{} (sysbench {}){}",
            step.index,
            s.file.display(),
            s.report.line,
            s.report.version.map_or("?", |v| v.as_str()),
            s.report
                .command
                .as_deref()
                .map(|c| format!(": {c}"))
                .unwrap_or_default()
        );
    }
    let files: Vec<String> = {
        let mut f: Vec<String> = sources
            .iter()
            .map(|s| s.file.display().to_string())
            .collect();
        f.dedup();
        f
    };
    let _ = writeln!(t, "\n[suite]");
    let _ = writeln!(t, "name = {}", toml::Value::String(suite.to_string()));
    let _ = writeln!(
        t,
        "description = {}",
        toml::Value::String(format!("sysbench logs imported: {}", files.join(", ")))
    );
    t
}

/// Writes the run directory; returns its path.
fn store(
    root: &Path,
    plan: &Plan,
    suite_text: &str,
    sources: &[Source],
) -> Result<PathBuf, crate::results::ResultsError> {
    let mut store = ResultStore::create(root, plan, suite_text, Utc::now())?;
    write_origin(store.dir(), &origin(sources))?;
    for (step, s) in plan.steps.iter().zip(sources) {
        let r = &s.report;
        for iv in &r.intervals {
            store.write_interval(step, &interval_sample(r, iv))?;
        }
        let outcome = outcome(r);
        let error = r.fatal.clone().unwrap_or_else(|| {
            "the log has no final report (the run failed or was cut short)".to_string()
        });
        let row = RunRow {
            step,
            started_at: s.modified,
            status: if outcome.is_some() {
                RowStatus::Ok
            } else {
                RowStatus::Failed
            },
            outcome: outcome.as_ref(),
            error: outcome.is_none().then_some(error.as_str()),
            knee: None,
        };
        store.write_foreign_run(&row, &printed_cells(r))?;
    }
    Ok(store.dir().to_path_buf())
}

/// `origin.json` of an import: sysbench, with the versions the reports' banners gave, so a
/// comparison with a run of sbsuite says that the tools differ.
fn origin(sources: &[Source]) -> Origin {
    let mut versions: Vec<&str> = sources
        .iter()
        .filter_map(|s| s.report.version.map(|v| v.as_str()))
        .collect();
    versions.sort_unstable();
    versions.dedup();
    Origin {
        tool: "sysbench".into(),
        version: (!versions.is_empty()).then(|| versions.join(", ")),
        imported_by: Some(format!("sbsuite {}", env!("CARGO_PKG_VERSION"))),
    }
}

/// The cells taken as printed instead of recomputed from counts and the total time.
fn printed_cells(r: &Report) -> Vec<(&'static str, String)> {
    let mut cells = Vec::new();
    if !r.is_complete() {
        return cells;
    }
    if let Some(eps) = r.eps {
        cells.push(("eps", fmt_float(eps, 4)));
    }
    if let Some(sql) = &r.sql {
        cells.push(("tps", fmt_float(sql.tps, 4)));
        cells.push(("qps", fmt_float(sql.qps, 4)));
        if sql.reconnects.is_none() {
            cells.push(("reconnects", String::new()));
        }
    }
    cells
}

fn nan(v: Option<f64>) -> f64 {
    v.unwrap_or(f64::NAN)
}

/// The measurements of a complete report, shaped like an engine's.
fn outcome(r: &Report) -> Option<StepOutcome> {
    let (seconds, events) = (r.seconds?, r.events?);
    let percentile = r.percentile.unwrap_or(95.0);
    let pct = if percentile > 0.0 {
        nan(r.lat_pct)
    } else {
        f64::NAN
    };
    let at = |p: f64| if percentile == p { pct } else { f64::NAN };
    let (ev_avg, ev_sd) = r.fairness_events.unwrap_or((f64::NAN, f64::NAN));
    let (t_avg, t_sd) = r.fairness_time.unwrap_or((f64::NAN, f64::NAN));
    Some(StepOutcome {
        error_codes: Default::default(),
        seconds,
        events,
        sql: r.sql.as_ref().map(|s| SqlCounters {
            transactions: s.transactions,
            reads: s.reads,
            writes: s.writes,
            other: s.other,
            errors: s.errors,
            reconnects: s.reconnects.unwrap_or(0),
        }),
        latency: LatencySummary {
            min_ms: nan(r.lat_min),
            avg_ms: nan(r.lat_avg),
            max_ms: nan(r.lat_max),
            p50_ms: at(50.0),
            p95_ms: at(95.0),
            p99_ms: at(99.0),
            percentile,
            pct_ms: pct,
            sum_ms: nan(r.lat_sum),
        },
        fairness_events_avg: ev_avg,
        fairness_events_stddev: ev_sd,
        fairness_time_avg: t_avg,
        fairness_time_stddev: t_sd,
        // A text log holds no histogram; write_foreign_run writes none.
        histogram: hdrhistogram::Histogram::new(1).ok()?,
        interrupted: false,
        cut_short: None,
        metrics: r.metrics.clone(),
        transactions: Vec::new(),
        per_thread: Vec::new(),
        steady: Default::default(),
        phases: Vec::new(),
        groups: Vec::new(),
        open_loop: None,
    })
}

fn interval_sample(r: &Report, iv: &parse::Interval) -> IntervalSample {
    IntervalSample {
        time_s: iv.time_s,
        threads: iv.threads.or(r.threads).unwrap_or(0) as usize,
        eps: nan(iv.eps),
        tps: iv.tps,
        qps: iv.qps,
        reads_ps: iv.reads_ps,
        writes_ps: iv.writes_ps,
        other_ps: iv.other_ps,
        lat_pct_ms: nan(iv.lat_pct_ms),
        errors_ps: iv.errors_ps,
        reconnects_ps: iv.reconnects_ps,
        metrics: iv.metrics.clone(),
        phase: None,
        group: None,
        target_rate: None,
        lat_buckets: Vec::new(),
    }
}
