//! The on-disk result store of one run: `results/<suite>/<run-id>/` with the resolved suite,
//! the plan, `results.csv`, `intervals.csv`, one HDR histogram per run step, and the client
//! machine's facts ([`host`]: `host.json`, written by `sbsuite run`). Runs of custom workloads
//! also get `transactions.csv` (a row per run step × transaction, and statement when asked)
//! and a histogram per transaction under `histograms/<step>-<name>/`; the file is created when
//! the first step that has transactions ends, so runs of the built-in workloads have none.
//!
//! Shaped for crash safety rather than speed: every file is created up front (so a run that
//! dies in its first step still leaves a readable, self-describing directory), and every row is
//! flushed and `fdatasync`ed when its step ends, because a benchmark that ran for hours must
//! never lose finished steps to a Ctrl-C, an OOM kill or a power cut. Writes happen between
//! steps (and at report intervals), never on the engines' hot path.
//!
//! Reading a run back (for `compare`, `report` and `runs`) is [`load`], the one reader of the
//! same files; it depends on nothing above this module. Before `run --resume` reopens a run,
//! [`check`] matches its rows and journal against the plan.
//!
//! Column documentation: [`csv::RESULTS_COLUMNS_DOC`]. A capacity search's directory holds
//! its curve instead, `capacity.csv` ([`capacity`]), beside one run directory per probe.

pub mod capacity;
pub mod check;
pub mod csv;
pub mod histogram;
pub mod host;
pub mod load;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::engine::IntervalSample;
use crate::plan::{Plan, Step};

pub use self::csv::{
    CsvFile, INTERVAL_COLUMNS, RESULTS_COLUMNS_DOC, RESULTS_LEADING_COLUMNS,
    RESULTS_TRAILING_COLUMNS, RowStatus, RunRow, TRANSACTION_COLUMNS, results_columns,
    transactions_columns,
};
pub use self::histogram::{
    histogram_file_name, read_histogram, sanitise_name, transaction_histogram_dir,
    transaction_histogram_files, write_histogram,
};

/// File names inside a run directory.
pub const SUITE_FILE: &str = "suite.toml";
pub const PLAN_FILE: &str = "plan.json";
pub const RESULTS_FILE: &str = "results.csv";
pub const INTERVALS_FILE: &str = "intervals.csv";
/// Per run step × transaction of a custom workload; absent in runs without transactions.
pub const TRANSACTIONS_FILE: &str = "transactions.csv";
pub const HISTOGRAMS_DIR: &str = "histograms";
/// Which tool produced the numbers of a run that `sbsuite run` did not measure
/// ([`load::Origin`]); absent in the directories of `sbsuite run`.
pub const ORIGIN_FILE: &str = "origin.json";
/// One line per prepare/cleanup step start and end: what `--resume` needs beyond the rows.
pub const JOURNAL_FILE: &str = "journal.log";
/// The events of the journal: a step started, finished, failed or was stopped.
pub const JOURNAL_EVENTS: [&str; 4] = [JOURNAL_START, "done", "failed", "interrupted"];
/// A prepare whose last event is `start` may have left part of its data: a resume drops it
/// before preparing again.
pub const JOURNAL_START: &str = "start";
/// The tables the run created and dropped ([`crate::db::owned`], #26): one record per line,
/// `<step index> <kind> <event> <table as JSON>`, each synced as it is written (a `creating`
/// record before its `CREATE TABLE` is sent). Created empty with the run directory: a
/// directory without it was written before it existed, and a resume of it cleans up as that
/// build did (every table its workload names).
pub const TABLES_FILE: &str = "tables.log";

/// What a record of [`TABLES_FILE`] says about a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableEvent {
    /// The run is about to create it (written before the statement is sent).
    Creating,
    /// Its `CREATE TABLE` failed: it is not the run's.
    NotCreated,
    Dropped,
}

impl TableEvent {
    pub fn as_str(self) -> &'static str {
        match self {
            TableEvent::Creating => "creating",
            TableEvent::NotCreated => "not-created",
            TableEvent::Dropped => "dropped",
        }
    }

    fn parse(word: &str) -> Option<TableEvent> {
        [
            TableEvent::Creating,
            TableEvent::NotCreated,
            TableEvent::Dropped,
        ]
        .into_iter()
        .find(|e| e.as_str() == word)
    }
}

/// How many `-N` suffixes are tried before giving up on a run id (runs started within the same
/// second).
const MAX_RUN_ID_SUFFIX: u32 = 1000;

#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("cannot write results to {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot write CSV {path}: {source}")]
    Csv {
        path: PathBuf,
        #[source]
        source: ::csv::Error,
    },
    #[error("cannot write {path}: {source}")]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("histogram {path}: {message}")]
    Histogram { path: PathBuf, message: String },
    #[error(
        "cannot pick a run id in {dir}: `{base}` and {MAX_RUN_ID_SUFFIX} suffixed names are taken"
    )]
    RunIdExhausted { dir: PathBuf, base: String },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> ResultsError + '_ {
    move |source| ResultsError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Creates a fresh run directory under `suite_dir` and returns (run id, path). The run id is the
/// UTC time `YYYYMMDD-HHMMSS`, with `-2`, `-3`… appended when that directory already exists.
/// `create_dir` (not `create_dir_all`) makes the choice atomic between concurrent runs.
pub fn create_run_dir(
    suite_dir: &Path,
    now: DateTime<Utc>,
) -> Result<(String, PathBuf), ResultsError> {
    fs::create_dir_all(suite_dir).map_err(io_err(suite_dir))?;
    let base = now.format("%Y%m%d-%H%M%S").to_string();
    for n in 1..=MAX_RUN_ID_SUFFIX {
        let id = if n == 1 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        let dir = suite_dir.join(&id);
        match fs::create_dir(&dir) {
            Ok(()) => return Ok((id, dir)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(source) => return Err(ResultsError::Io { path: dir, source }),
        }
    }
    Err(ResultsError::RunIdExhausted {
        dir: suite_dir.to_path_buf(),
        base,
    })
}

/// An open run directory. Created with [`ResultStore::create`]; rows are added as steps end.
pub struct ResultStore {
    run_id: String,
    dir: PathBuf,
    extra_axes: Vec<(String, String)>,
    results: CsvFile,
    intervals: CsvFile,
    /// `transactions.csv`, opened when the first step with transactions ends.
    transactions: Option<CsvFile>,
}

impl ResultStore {
    /// Creates `<root>/<suite>/<run-id>/` with `suite.toml` (`suite_text` as given: the caller
    /// has already redacted secrets), `plan.json`, the two CSV headers and `histograms/`.
    pub fn create(
        root: &Path,
        plan: &Plan,
        suite_text: &str,
        now: DateTime<Utc>,
    ) -> Result<Self, ResultsError> {
        let (run_id, dir) = create_run_dir(&root.join(sanitise_name(&plan.suite)), now)?;

        let suite_path = dir.join(SUITE_FILE);
        fs::write(&suite_path, suite_text).map_err(io_err(&suite_path))?;

        let plan_path = dir.join(PLAN_FILE);
        let mut json = serde_json::to_string_pretty(plan).map_err(|source| ResultsError::Json {
            path: plan_path.clone(),
            source,
        })?;
        json.push('\n');
        fs::write(&plan_path, json).map_err(io_err(&plan_path))?;

        let hist_dir = dir.join(HISTOGRAMS_DIR);
        fs::create_dir(&hist_dir).map_err(io_err(&hist_dir))?;
        let tables = dir.join(TABLES_FILE);
        fs::write(&tables, "").map_err(io_err(&tables))?;

        let results = CsvFile::create(&dir.join(RESULTS_FILE), &results_columns(&plan.axes))?;
        let intervals = CsvFile::create(&dir.join(INTERVALS_FILE), &csv::interval_columns())?;
        Ok(ResultStore {
            run_id,
            extra_axes: csv::extra_axis_columns(&plan.axes),
            dir,
            results,
            intervals,
            transactions: None,
        })
    }

    /// Reopens the run directory of a stopped run for `--resume`: rows of finished run steps
    /// (`ok`, `failed`) are kept, `interrupted` rows, rows cut short by a crash and the
    /// interval and transaction rows of every step that did not finish are dropped (the files
    /// are rewritten atomically), and the files are opened for appending. Returns the store and the indexes
    /// of the finished run steps.
    pub fn reopen(
        dir: &Path,
        plan: &Plan,
    ) -> Result<(Self, std::collections::HashSet<usize>), ResultsError> {
        let run_id = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let results_path = dir.join(RESULTS_FILE);
        let columns = results_columns(&plan.axes);
        let step_col = columns.iter().position(|c| c == "step");
        let mut finished = std::collections::HashSet::new();
        rewrite_csv(&results_path, &columns, |rec| {
            let Some(sc) = step_col else {
                return false;
            };
            if is_kept(rec, &columns)
                && let Ok(i) = rec[sc].parse::<usize>()
            {
                finished.insert(i);
                return true;
            }
            false
        })?;
        let interval_cols = csv::interval_columns();
        let istep = interval_cols.iter().position(|c| c == "step");
        let intervals_path = dir.join(INTERVALS_FILE);
        rewrite_csv(&intervals_path, &interval_cols, |rec| {
            rec.len() == interval_cols.len()
                && istep
                    .and_then(|c| rec[c].parse::<usize>().ok())
                    .is_some_and(|i| finished.contains(&i))
        })?;
        let extra_axes = csv::extra_axis_columns(&plan.axes);
        // A step's transaction rows are written before its results.csv row: a step that did
        // not finish may have some, and runs again.
        let transactions_path = dir.join(TRANSACTIONS_FILE);
        let transactions = if transactions_path.is_file() {
            let txn_cols = transactions_columns(&extra_axes);
            let tstep = txn_cols.iter().position(|c| c == "step");
            rewrite_csv(&transactions_path, &txn_cols, |rec| {
                rec.len() == txn_cols.len()
                    && tstep
                        .and_then(|c| rec[c].parse::<usize>().ok())
                        .is_some_and(|i| finished.contains(&i))
            })?;
            Some(CsvFile::append(&transactions_path)?)
        } else {
            None
        };
        let hist_dir = dir.join(HISTOGRAMS_DIR);
        fs::create_dir_all(&hist_dir).map_err(io_err(&hist_dir))?;
        Ok((
            ResultStore {
                run_id,
                extra_axes,
                dir: dir.to_path_buf(),
                results: CsvFile::append(&results_path)?,
                intervals: CsvFile::append(&intervals_path)?,
                transactions,
            },
            finished,
        ))
    }

    /// Appends `<index> <kind> <event>` to the journal and syncs it.
    pub fn journal(&self, step: &Step, event: &str) -> Result<(), ResultsError> {
        use std::io::Write as _;
        let path = self.dir.join(JOURNAL_FILE);
        let mut f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io_err(&path))?;
        f.write_all(journal_record(step, event).as_bytes())
            .map_err(io_err(&path))?;
        f.sync_data().map_err(io_err(&path))
    }

    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn results_path(&self) -> &Path {
        self.results.path()
    }

    pub fn intervals_path(&self) -> &Path {
        self.intervals.path()
    }

    /// Where the histogram of `step` goes.
    pub fn histogram_path(&self, step: &Step) -> PathBuf {
        self.dir
            .join(HISTOGRAMS_DIR)
            .join(histogram_file_name(step.index, &step.name))
    }

    /// Appends one interim sample to `intervals.csv` (flushed to the OS, synced by
    /// [`ResultStore::write_run`]).
    pub fn write_interval(
        &mut self,
        step: &Step,
        sample: &IntervalSample,
    ) -> Result<(), ResultsError> {
        self.intervals
            .write(csv::interval_record(&self.run_id, step, sample))
    }

    /// Where the histograms of `step`'s transactions go (one file each, named by
    /// [`transaction_histogram_files`]).
    pub fn transaction_histogram_dir(&self, step: &Step) -> PathBuf {
        self.dir
            .join(HISTOGRAMS_DIR)
            .join(transaction_histogram_dir(step.index, &step.name))
    }

    /// `transactions.csv` (`None` until a step with transactions has ended).
    pub fn transactions_path(&self) -> Option<&Path> {
        self.transactions.as_ref().map(CsvFile::path)
    }

    /// The results.csv row of `row` as column → cell (what [`ResultStore::write_run`] writes).
    pub fn row_object(&self, row: &RunRow) -> indexmap::IndexMap<String, String> {
        csv::columns_with(&self.extra_axes)
            .into_iter()
            .zip(csv::results_record(&self.run_id, &self.extra_axes, row))
            .collect()
    }

    /// Records a finished run step: its histograms (when measured) first, then its
    /// transaction rows (custom workloads), then its row in `results.csv`, syncing each CSV
    /// file — a row on disk always has its histograms, and a results.csv row its transaction
    /// rows (a resume drops transaction rows without one).
    pub fn write_run(&mut self, row: &RunRow) -> Result<(), ResultsError> {
        if let Some(outcome) = row.outcome {
            write_histogram(&self.histogram_path(row.step), &outcome.histogram)?;
            self.write_transactions(row.step, outcome)?;
        }
        self.results
            .write(csv::results_record(&self.run_id, &self.extra_axes, row))?;
        // A step with phases (#30): one more row per measured phase, after the step's own.
        for p in row.outcome.map(|o| o.phases.as_slice()).unwrap_or_default() {
            let Some(phase) = row.step.phases.get(p.index) else {
                continue;
            };
            let phase_row = RunRow {
                outcome: Some(&p.outcome),
                error: None,
                knee: None,
                ..*row
            };
            self.results.write(csv::phase_record(
                &self.run_id,
                &self.extra_axes,
                &phase_row,
                phase,
            ))?;
        }
        // A step with groups (#31): one more row per group, after the step's own.
        for g in row.outcome.map(|o| o.groups.as_slice()).unwrap_or_default() {
            let Some(group) = row.step.groups.get(g.index) else {
                continue;
            };
            let group_row = RunRow {
                outcome: Some(&g.outcome),
                error: None,
                knee: None,
                ..*row
            };
            self.results.write(csv::group_record(
                &self.run_id,
                &self.extra_axes,
                &group_row,
                group,
            ))?;
        }
        self.results.sync()?;
        self.intervals.sync()
    }

    /// The histograms and `transactions.csv` rows of `outcome`'s transactions, synced.
    fn write_transactions(
        &mut self,
        step: &Step,
        outcome: &crate::engine::StepOutcome,
    ) -> Result<(), ResultsError> {
        if outcome.transactions.is_empty() {
            return Ok(());
        }
        let dir = self.transaction_histogram_dir(step);
        fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        let files =
            transaction_histogram_files(outcome.transactions.iter().map(|t| t.name.as_str()));
        for (t, file) in outcome.transactions.iter().zip(files) {
            write_histogram(&dir.join(file), &t.histogram)?;
        }
        let file = match &mut self.transactions {
            Some(f) => f,
            None => {
                let path = self.dir.join(TRANSACTIONS_FILE);
                let columns = transactions_columns(&self.extra_axes);
                self.transactions.insert(CsvFile::create(&path, &columns)?)
            }
        };
        for rec in csv::transaction_records(&self.run_id, &self.extra_axes, step, outcome) {
            file.write(rec)?;
        }
        file.sync()
    }

    /// Records a run step measured elsewhere (`sbsuite import`): no histogram (a text log has
    /// none), and each `(column, cell)` of `cells` replaces the cell [`ResultStore::write_run`]
    /// would compute — rates as the log printed them (sysbench divides by its own timer).
    pub fn write_foreign_run(
        &mut self,
        row: &RunRow,
        cells: &[(&str, String)],
    ) -> Result<(), ResultsError> {
        let mut record = csv::results_record(&self.run_id, &self.extra_axes, row);
        let columns = csv::columns_with(&self.extra_axes);
        for (column, cell) in cells {
            if let Some(i) = columns.iter().position(|c| c == column) {
                record[i] = cell.clone();
            }
        }
        self.results.write(record)?;
        self.results.sync()?;
        self.intervals.sync()
    }
}

/// Writes `origin.json` into run directory `dir`: the record of a run measured by another
/// tool (`sbsuite import`), read back by [`load::load`].
pub fn write_origin(dir: &Path, origin: &load::Origin) -> Result<(), ResultsError> {
    let path = dir.join(ORIGIN_FILE);
    let mut json = serde_json::to_string_pretty(origin).map_err(|source| ResultsError::Json {
        path: path.clone(),
        source,
    })?;
    json.push('\n');
    fs::write(&path, json).map_err(io_err(&path))
}

/// The journal's last event per step index (`start`, `done`, `failed`, `interrupted`).
pub fn read_journal(dir: &Path) -> std::collections::HashMap<usize, String> {
    let mut out = std::collections::HashMap::new();
    if let Ok(text) = fs::read_to_string(dir.join(JOURNAL_FILE)) {
        for line in text.lines() {
            if let Some((i, _, event, _)) = parse_journal_record(line) {
                out.insert(i, event.to_string());
            }
        }
    }
    out
}

/// Appends a record to `dir`'s [`TABLES_FILE`] and syncs it.
pub fn record_table(
    dir: &Path,
    index: usize,
    kind: crate::plan::StepKind,
    event: TableEvent,
    key: &crate::db::owned::TableKey,
) -> Result<(), ResultsError> {
    use std::io::Write as _;
    let path = dir.join(TABLES_FILE);
    let json = serde_json::to_string(key).map_err(|source| ResultsError::Json {
        path: path.clone(),
        source,
    })?;
    let line = format!("{index} {} {} {json}\n", kind.as_str(), event.as_str());
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .map_err(io_err(&path))?;
    f.write_all(line.as_bytes()).map_err(io_err(&path))?;
    f.sync_data().map_err(io_err(&path))
}

/// The records of `dir`'s [`TABLES_FILE`] in the order they were written (a line that does not
/// read as one, as a crash may leave the last, is skipped); `None` when the run directory has
/// no such file (an older build's).
pub fn read_tables(dir: &Path) -> Option<Vec<(TableEvent, crate::db::owned::TableKey)>> {
    let text = fs::read_to_string(dir.join(TABLES_FILE)).ok()?;
    Some(
        text.lines()
            .filter_map(|line| {
                let mut words = line.splitn(4, ' ');
                let (_index, _kind) = (words.next()?, words.next()?);
                let event = TableEvent::parse(words.next()?)?;
                Some((event, serde_json::from_str(words.next()?).ok()?))
            })
            .collect(),
    )
}

/// The prepare, cleanup, check and command steps whose last journal event is `failed`, as
/// (index, kind), by index: what `sbsuite runs` and a resumed run's exit code count beside the
/// `failed` rows (#26).
pub fn failed_in_journal(dir: &Path) -> Vec<(usize, String)> {
    let mut last: std::collections::BTreeMap<usize, (String, String)> = Default::default();
    if let Ok(text) = fs::read_to_string(dir.join(JOURNAL_FILE)) {
        for line in text.lines() {
            if let Some((i, kind, event, _)) = parse_journal_record(line)
                && JOURNAL_EVENTS.contains(&event)
            {
                last.insert(i, (kind.to_string(), event.to_string()));
            }
        }
    }
    last.into_iter()
        .filter(|(_, (_, event))| event == "failed")
        .map(|(i, (kind, _))| (i, kind))
        .collect()
}

/// One journal line: `<index> <kind> <event>`.
fn journal_record(step: &Step, event: &str) -> String {
    format!("{} {} {event}\n", step.index, step.kind.as_str())
}

/// (index, kind, event, the rest) of a journal line; `None` unless it starts with a number and
/// has at least three words.
fn parse_journal_record(line: &str) -> Option<(usize, &str, &str, Vec<&str>)> {
    let mut words = line.split_whitespace();
    let index = words.next()?.parse().ok()?;
    let kind = words.next()?;
    let event = words.next()?;
    Some((index, kind, event, words.collect()))
}

/// Whether a `results.csv` record is the row of a finished run step (`ok` or `failed`, every
/// field present), which a resume keeps; `columns` is the file's header.
fn is_kept(rec: &::csv::StringRecord, columns: &[String]) -> bool {
    let status = columns.iter().position(|c| c == "status");
    rec.len() == columns.len() && status.is_some_and(|c| matches!(&rec[c], "ok" | "failed"))
}

/// Rewrites `path` (header `columns`) with the records `keep` accepts, through a temporary
/// file and a rename, so a crash leaves either the old or the new file.
/// Rewrites `path` in this build's `columns` when it was written before one of
/// [`ADDED_COLUMNS`] existed (the cell empty in every row); a file already in `columns` is left
/// as it is, and any other difference is the error of [`rewrite_csv`].
pub(crate) fn upgrade_columns(path: &Path, columns: &[String]) -> Result<(), ResultsError> {
    let header: Vec<String> = ::csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(path)
        .and_then(|mut r| Ok(r.headers()?.iter().map(str::to_string).collect()))
        .map_err(|source| ResultsError::Csv {
            path: path.to_path_buf(),
            source,
        })?;
    if header == columns {
        return Ok(());
    }
    rewrite_csv(path, columns, |_| true)
}

/// Columns added to results.csv and intervals.csv after their first release: a run directory
/// written before one was added still resumes, its rows with the cell empty (#14: `dropped`;
/// #15: `headline`, `headline_name`; #17: `shards`, `start_skew_ms`; #26: `error_codes`; #29:
/// the cost columns, `warmup_s`, `steady`, `trend_pct_per_min`, the server's rates per
/// interval; #30: the connection columns, `phase`, `target_rate`, `threads_peak`, the fault
/// columns, the open-loop columns; #31: `group`).
const ADDED_COLUMNS: [&str; 41] = [
    "dropped",
    "headline",
    "headline_name",
    "shards",
    "start_skew_ms",
    "error_codes",
    "server_fsyncs_per_txn",
    "server_log_bytes_per_txn",
    "server_cpu_ms_per_txn",
    "client_cpu_us_per_txn",
    "warmup_s",
    "steady",
    "trend_pct_per_min",
    "server_fsyncs_ps",
    "server_log_bytes_ps",
    "server_cpu_pct",
    "connects",
    "connect_avg_ms",
    "connect_p95_ms",
    "connect_max_ms",
    "idle_connections",
    "idle_dead",
    "phase",
    "target_rate",
    "threads_peak",
    "fault_at_s",
    "fault_error_window_s",
    "fault_first_ok_s",
    "fault_p99_recovered_s",
    "fault_lost_txn",
    "service_p50",
    "service_p95",
    "service_p99",
    "service_max",
    "lag_p50",
    "lag_p95",
    "lag_p99",
    "lag_max",
    "late",
    "skipped",
    "group",
];

fn rewrite_csv(
    path: &Path,
    columns: &[String],
    mut keep: impl FnMut(&::csv::StringRecord) -> bool,
) -> Result<(), ResultsError> {
    let mut reader = ::csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(path)
        .map_err(|source| ResultsError::Csv {
            path: path.to_path_buf(),
            source,
        })?;
    let header: Vec<String> = reader
        .headers()
        .map_err(|source| ResultsError::Csv {
            path: path.to_path_buf(),
            source,
        })?
        .iter()
        .map(str::to_string)
        .collect();
    // Where each column of this build is in the file: a file written before a column was
    // added (ADDED_COLUMNS) lacks it, and its rows get an empty cell there.
    let from: Option<Vec<Option<usize>>> = columns
        .iter()
        .map(|c| match header.iter().position(|h| h == c) {
            Some(i) => Some(Some(i)),
            None if ADDED_COLUMNS.contains(&c.as_str()) => Some(None),
            None => None,
        })
        .collect();
    let Some(from) = from.filter(|f| f.iter().flatten().count() == header.len()) else {
        return Err(ResultsError::Io {
            path: path.to_path_buf(),
            source: io::Error::other(
                "its columns are not the ones this suite writes: was the suite changed? resume needs the run's own suite.toml",
            ),
        });
    };
    let tmp = path.with_extension("csv.tmp");
    let _ = fs::remove_file(&tmp);
    {
        let mut out = CsvFile::create(&tmp, columns)?;
        for rec in reader.records() {
            // A record a crash cut short does not parse or has too few fields: dropped.
            let Ok(rec) = rec else { continue };
            if rec.len() != header.len() {
                continue;
            }
            let mut mapped: ::csv::StringRecord =
                from.iter().map(|i| i.map_or("", |i| &rec[i])).collect();
            // `keep` may judge a record by its line in the file.
            mapped.set_position(rec.position().cloned());
            let rec = mapped;
            if keep(&rec) {
                out.write(rec.iter())?;
            }
        }
        out.sync()?;
    }
    fs::rename(&tmp, path).map_err(io_err(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{LatencySummary, SqlCounters, StepOutcome, TxnStats};
    use crate::plan::StepKind;
    use crate::value::{Options, Value};
    use chrono::TimeZone;
    use hdrhistogram::Histogram;
    use indexmap::IndexMap;

    fn step(index: usize, name: &str, threads: i64, table_size: i64) -> Step {
        let mut params = IndexMap::new();
        params.insert("workload".into(), Value::Str("oltp_read_only".into()));
        params.insert("threads".into(), Value::Int(threads));
        params.insert("table_size".into(), Value::Int(table_size));
        params.insert("status".into(), Value::Str("weird".into()));
        let mut options = Options::default();
        options.0.insert("threads".into(), Value::Int(threads));
        options.0.insert("percentile".into(), Value::Int(95));
        options
            .0
            .insert("mode".into(), Value::Str("uniform".into()));
        Step {
            index,
            kind: StepKind::Run,
            name: name.into(),
            variant: "baseline".into(),
            workload: "oltp_read_only".into(),
            spec: crate::engine::Catalog::builtin().workload("oltp_read_only"),
            dataset: 1,
            repetition: 1,
            params,
            options,
            command: None,
            estimated_seconds: Some(10.0),
            phases: Vec::new(),
            groups: Vec::new(),
            target: None,
        }
    }

    fn plan(steps: Vec<Step>) -> Plan {
        Plan {
            suite: "my suite/x".into(),
            target: None,
            variant_order: Default::default(),
            order_seed: None,
            dataset: Default::default(),
            axes: vec![
                "workload".into(),
                "table_size".into(),
                "threads".into(),
                "mode".into(),
                "status".into(),
            ],
            steps,
        }
    }

    pub(crate) fn outcome(sql: bool) -> StepOutcome {
        let mut histogram = Histogram::<u64>::new(3).unwrap();
        for v in [1_000_000u64, 2_000_000, 2_500_000, 40_000_000] {
            histogram.record(v).unwrap();
        }
        StepOutcome {
            error_codes: Default::default(),
            seconds: 10.0002,
            events: 1234,
            sql: sql.then_some(SqlCounters {
                transactions: 100,
                reads: 1400,
                writes: 400,
                other: 200,
                errors: 1,
                reconnects: 0,
            }),
            latency: LatencySummary {
                min_ms: 1.0,
                avg_ms: 11.375,
                max_ms: 40.0,
                p50_ms: 2.0,
                p95_ms: 40.0,
                p99_ms: 40.0,
                percentile: 95.0,
                pct_ms: 40.0,
                sum_ms: 45.5,
            },
            fairness_events_avg: 617.0,
            fairness_events_stddev: 3.5,
            fairness_time_avg: 5.0,
            fairness_time_stddev: 0.01,
            histogram,
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

    fn read_rows(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
        let mut r = ::csv::Reader::from_path(path).unwrap();
        let header = r.headers().unwrap().iter().map(String::from).collect();
        let rows = r
            .records()
            .map(|rec| rec.unwrap().iter().map(String::from).collect())
            .collect();
        (header, rows)
    }

    fn col(header: &[String], row: &[String], name: &str) -> String {
        let i = header.iter().position(|h| h == name).unwrap();
        row[i].clone()
    }

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 3, 14, 5, 9).unwrap()
    }

    #[test]
    fn header_puts_extra_axes_between_threads_and_repetition() {
        let cols = results_columns(&plan(vec![]).axes);
        let expected_start = [
            "run_id",
            "step",
            "name",
            "variant",
            "workload",
            "threads",
            "table_size",
            "mode",
            "axis_status",
            "repetition",
            "started_at",
            "seconds",
        ];
        assert_eq!(&cols[..expected_start.len()], &expected_start[..]);
        assert_eq!(cols.last().unwrap(), "group");
        assert_eq!(
            cols.len(),
            RESULTS_LEADING_COLUMNS.len()
                + 3
                + RESULTS_TRAILING_COLUMNS.len()
                + crate::engine::METRICS.len()
        );
        let status = cols.iter().position(|c| c == "status").unwrap();
        assert_eq!(
            cols[status - 6..status].join(","),
            "idle_dead,fault_at_s,fault_error_window_s,fault_first_ok_s,fault_p99_recovered_s,\
             fault_lost_txn",
            "metrics sit just before status, the faults' last (#30)"
        );
        assert_eq!(
            cols[status - 12..status - 6].join(","),
            "server_cpu_pct,connects,connect_avg_ms,connect_p95_ms,connect_max_ms,idle_connections",
            "the connection metrics follow the cost's (#30)"
        );
        assert_eq!(
            cols[status - crate::engine::METRICS.len() - 1],
            "fairness_time_stddev"
        );
        // The documented contract: these exact trailing names, in this order.
        assert_eq!(
            RESULTS_TRAILING_COLUMNS.join(","),
            "repetition,started_at,seconds,events,eps,tps,qps,reads,writes,other,errors,\
             reconnects,lat_min,lat_avg,lat_p50,lat_p95,lat_p99,lat_max,lat_sum,percentile,\
             lat_pct,fairness_events_stddev,fairness_time_stddev,status,error,knee,headline_name,\
             error_codes,warmup_s,steady,trend_pct_per_min,phase,target_rate,service_p50,\
             service_p95,service_p99,service_max,lag_p50,lag_p95,lag_p99,lag_max,group",
            "phase, target_rate and the open-loop columns (#30), then group (#31), come last"
        );
    }

    #[test]
    fn floats_are_trimmed_and_non_finite_is_empty() {
        assert_eq!(csv::fmt_float(1.5, 4), "1.5");
        assert_eq!(csv::fmt_float(2.0, 4), "2");
        assert_eq!(csv::fmt_float(0.0000004, 6), "0");
        assert_eq!(csv::fmt_float(0.1234567, 6), "0.123457");
        assert_eq!(csv::fmt_float(f64::NAN, 4), "");
        assert_eq!(csv::fmt_float(f64::INFINITY, 4), "");
    }

    #[test]
    fn rows_are_readable_after_each_write_without_closing() {
        let tmp = tempfile::tempdir().unwrap();
        let s1 = step(2, "ro t8", 8, 1000);
        let s2 = step(3, "ro t16", 16, 1000);
        let p = plan(vec![s1.clone(), s2.clone()]);
        let mut store = ResultStore::create(tmp.path(), &p, "[suite]\n", now()).unwrap();
        assert_eq!(store.run_id(), "20261103-140509");
        assert!(store.dir().ends_with("my_suite_x/20261103-140509"));
        assert_eq!(
            fs::read_to_string(store.dir().join(SUITE_FILE)).unwrap(),
            "[suite]\n"
        );
        let plan_json: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(store.dir().join(PLAN_FILE)).unwrap())
                .unwrap();
        assert_eq!(plan_json["steps"][0]["name"], "ro t8");

        // Header only, right after creation.
        let (header, rows) = read_rows(store.results_path());
        assert_eq!(header, results_columns(&p.axes));
        assert!(rows.is_empty());

        let o = outcome(true);
        store
            .write_interval(
                &s1,
                &IntervalSample {
                    time_s: 1.0,
                    threads: 8,
                    eps: 120.5,
                    tps: Some(10.0),
                    qps: Some(200.0),
                    lat_pct_ms: 3.25,
                    ..Default::default()
                },
            )
            .unwrap();
        store
            .write_run(&RunRow {
                step: &s1,
                started_at: now(),
                status: RowStatus::Ok,
                outcome: Some(&o),
                error: None,
                knee: None,
            })
            .unwrap();
        let (_, rows) = read_rows(store.results_path());
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!(r.len(), header.len());
        assert_eq!(col(&header, r, "run_id"), "20261103-140509");
        assert_eq!(col(&header, r, "step"), "2");
        assert_eq!(col(&header, r, "threads"), "8");
        assert_eq!(col(&header, r, "table_size"), "1000");
        assert_eq!(col(&header, r, "mode"), "uniform"); // from options, not the cell
        assert_eq!(col(&header, r, "axis_status"), "weird");
        assert_eq!(col(&header, r, "started_at"), "2026-11-03T14:05:09.000Z");
        assert_eq!(col(&header, r, "seconds"), "10.0002");
        assert_eq!(col(&header, r, "events"), "1234");
        assert_eq!(col(&header, r, "tps"), "9.9998");
        assert_eq!(col(&header, r, "qps"), "199.996");
        assert_eq!(col(&header, r, "reads"), "1400");
        assert_eq!(col(&header, r, "lat_avg"), "11.375");
        assert_eq!(col(&header, r, "percentile"), "95");
        assert_eq!(col(&header, r, "status"), "ok");
        assert_eq!(col(&header, r, "error"), "");
        for c in ["service_p99", "lag_max", "late", "skipped"] {
            assert_eq!(col(&header, r, c), "", "no rate, no limit: {c}");
        }

        let (iheader, irows) = read_rows(store.intervals_path());
        assert_eq!(iheader.join(","), csv::interval_columns().join(","));
        assert_eq!(
            irows[0][..16],
            [
                "20261103-140509",
                "2",
                "ro t8",
                "baseline",
                "1",
                "8",
                "120.5",
                "10",
                "200",
                "",
                "",
                "",
                "3.25",
                "95",
                "",
                ""
            ]
        );

        // Second row: no SQL counters → SQL columns empty; still readable without closing.
        // A `rate` run with `latency_limit` (#30): its service time and lag, late and skipped.
        let mut o2 = outcome(false);
        let timing = |p50_ms, max_ms| crate::engine::Timing {
            summary: LatencySummary {
                p50_ms,
                p95_ms: max_ms / 2.0,
                p99_ms: max_ms,
                max_ms,
                ..LatencySummary::default()
            },
            histogram: Histogram::new(3).unwrap(),
        };
        o2.open_loop = Some(crate::engine::OpenLoop {
            service: timing(0.25, 1.5),
            lag: timing(3.0, 38.5),
        });
        o2.metrics = vec![(crate::engine::LATE, 7.0), (crate::engine::SKIPPED, 2.0)];
        store
            .write_run(&RunRow {
                step: &s2,
                started_at: now(),
                status: RowStatus::Interrupted,
                outcome: Some(&o2),
                error: None,
                knee: None,
            })
            .unwrap();
        let (_, rows) = read_rows(store.results_path());
        assert_eq!(rows.len(), 2);
        let r = &rows[1];
        for c in [
            "tps",
            "qps",
            "reads",
            "writes",
            "other",
            "errors",
            "reconnects",
        ] {
            assert_eq!(col(&header, r, c), "", "column {c}");
        }
        assert_eq!(col(&header, r, "eps"), "123.3975");
        assert_eq!(col(&header, r, "status"), "interrupted");
        let cells =
            |names: &[&str]| -> Vec<String> { names.iter().map(|c| col(&header, r, c)).collect() };
        assert_eq!(
            cells(&["service_p50", "service_p95", "service_p99", "service_max"]),
            ["0.25", "0.75", "1.5", "1.5"]
        );
        assert_eq!(
            cells(&[
                "lag_p50", "lag_p95", "lag_p99", "lag_max", "late", "skipped"
            ]),
            ["3", "19.25", "38.5", "38.5", "7", "2"]
        );

        let back = read_histogram(&store.histogram_path(&s2)).unwrap();
        assert_eq!(back.len(), 4);
        assert!(
            store
                .histogram_path(&s2)
                .ends_with("histograms/3-ro_t16.hdr")
        );
    }

    #[test]
    fn failed_row_has_empty_measurements_and_the_error() {
        let tmp = tempfile::tempdir().unwrap();
        let s = step(1, "x", 4, 10);
        let p = plan(vec![s.clone()]);
        let mut store = ResultStore::create(tmp.path(), &p, "", now()).unwrap();
        store
            .write_run(&RunRow {
                step: &s,
                started_at: now(),
                status: RowStatus::Failed,
                outcome: None,
                error: Some("prepare failed: table exists, \"sbtest1\""),
                knee: None,
            })
            .unwrap();
        let (header, rows) = read_rows(store.results_path());
        let r = &rows[0];
        assert_eq!(r.len(), header.len());
        let first_measure = header.iter().position(|h| h == "seconds").unwrap();
        let status = header.iter().position(|h| h == "status").unwrap();
        assert!(r[first_measure..status].iter().all(String::is_empty));
        assert_eq!(r[status], "failed");
        assert_eq!(
            col(&header, r, "error"),
            "prepare failed: table exists, \"sbtest1\""
        );
        assert_eq!(col(&header, r, "threads"), "4");
        assert!(!store.histogram_path(&s).exists());
    }

    /// `--resume` reopens a stopped run: finished rows (`ok`, `failed`) and their interval rows
    /// stay, an `interrupted` row, a row a crash cut short and the intervals of unfinished
    /// steps go, and new rows are appended under the same run id.
    #[test]
    fn reopen_keeps_finished_rows_and_drops_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        let steps: Vec<Step> = (1..=4)
            .map(|i| step(i, &format!("s{i}"), i as i64, 10))
            .collect();
        let p = plan(steps.clone());
        let mut store = ResultStore::create(tmp.path(), &p, "", now()).unwrap();
        let o = outcome(true);
        let sample = IntervalSample {
            time_s: 1.0,
            threads: 1,
            eps: 1.0,
            ..Default::default()
        };
        for (s, status) in
            steps[..3]
                .iter()
                .zip([RowStatus::Ok, RowStatus::Failed, RowStatus::Interrupted])
        {
            store.write_interval(s, &sample).unwrap();
            store
                .write_run(&RunRow {
                    step: s,
                    started_at: now(),
                    status,
                    outcome: (status != RowStatus::Failed).then_some(&o),
                    error: None,
                    knee: None,
                })
                .unwrap();
        }
        store.write_interval(&steps[3], &sample).unwrap();
        let dir = store.dir().to_path_buf();
        let run_id = store.run_id().to_string();
        drop(store);
        // A crash in the middle of step 4's row.
        let mut f = fs::OpenOptions::new()
            .append(true)
            .open(dir.join(RESULTS_FILE))
            .unwrap();
        io::Write::write_all(&mut f, format!("{run_id},4,s4,baseline").as_bytes()).unwrap();
        drop(f);
        fs::remove_dir_all(dir.join(HISTOGRAMS_DIR)).unwrap();

        let (mut store, finished) = ResultStore::reopen(&dir, &p).unwrap();
        assert_eq!(finished, [1, 2].into());
        assert_eq!(store.run_id(), run_id);
        assert!(dir.join(HISTOGRAMS_DIR).is_dir(), "recreated");
        let (header, rows) = read_rows(store.results_path());
        let steps_of = |rows: &[Vec<String>], header: &[String]| -> Vec<String> {
            rows.iter().map(|r| col(header, r, "step")).collect()
        };
        assert_eq!(steps_of(&rows, &header), ["1", "2"]);
        let (iheader, irows) = read_rows(store.intervals_path());
        assert_eq!(steps_of(&irows, &iheader), ["1", "2"]);

        store
            .write_run(&RunRow {
                step: &steps[2],
                started_at: now(),
                status: RowStatus::Ok,
                outcome: Some(&o),
                error: None,
                knee: None,
            })
            .unwrap();
        let (_, rows) = read_rows(store.results_path());
        assert_eq!(steps_of(&rows, &header), ["1", "2", "3"]);
        assert_eq!(col(&header, &rows[2], "run_id"), run_id);
        assert!(!dir.join("results.csv.tmp").exists());
    }

    #[test]
    fn histogram_round_trip() {
        let tmp = tempfile::tempdir().unwrap();
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in (1..5000u64).map(|i| i * 997) {
            h.record(v).unwrap();
        }
        h.record_n(3_600_000_000_000, 3).unwrap();
        let path = tmp.path().join("h.hdr");
        write_histogram(&path, &h).unwrap();
        let back = read_histogram(&path).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.value_at_quantile(0.95), h.value_at_quantile(0.95));
        assert!(!tmp.path().join("h.hdr.tmp").exists());

        fs::write(&path, b"garbage").unwrap();
        let err = read_histogram(&path).unwrap_err().to_string();
        assert!(err.contains("h.hdr"), "{err}");
    }

    #[test]
    fn run_id_gets_a_suffix_when_taken() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, _) = create_run_dir(tmp.path(), now()).unwrap();
        let (b, _) = create_run_dir(tmp.path(), now()).unwrap();
        let (c, dir_c) = create_run_dir(tmp.path(), now()).unwrap();
        assert_eq!(a, "20261103-140509");
        assert_eq!(b, "20261103-140509-2");
        assert_eq!(c, "20261103-140509-3");
        assert!(dir_c.is_dir());
    }

    #[test]
    fn names_are_sanitised_for_files() {
        assert_eq!(sanitise_name("oltp ro/t=8"), "oltp_ro_t_8");
        assert_eq!(sanitise_name(".."), "_.");
        assert_eq!(sanitise_name(""), "step");
        assert_eq!(histogram_file_name(12, "cpu-t2"), "12-cpu-t2.hdr");
    }

    #[test]
    fn transaction_histogram_names_stay_apart_once_sanitised() {
        assert_eq!(
            transaction_histogram_files(["a b", "a_b", "new_order.1", "a_b"]),
            ["a_b.hdr", "a_b-2.hdr", "new_order.1.hdr", "a_b-3.hdr"]
        );
        assert_eq!(transaction_histogram_dir(3, "ro t8"), "3-ro_t8");
    }

    /// The spec of a custom workload `name` whose headline is `headline`, as a suite declaring
    /// it would have.
    pub(crate) fn headline_workload(
        name: &str,
        headline: &str,
    ) -> &'static crate::engine::spec::WorkloadSpec {
        use crate::engine::custom::model::{Def, Headline, Vars};
        let def = Def {
            name: name.into(),
            summary: String::new(),
            source: "orders.toml".into(),
            options: Vec::new(),
            headline: Some(Headline {
                name: headline.into(),
                transaction: 0,
                per_secs: 60.0,
            }),
            prepare_threads: 0,
            schema: Vec::new(),
            after_load: Vec::new(),
            cleanup: Vec::new(),
            init: Vec::new(),
            load: Vec::new(),
            fresh_per_run: false,
            checks: Vec::new(),
            vars: Vars {
                names: Vec::new(),
                kinds: Vec::new(),
            },
            params: Vec::new(),
            transactions: Vec::new(),
            statements: Vec::new(),
        };
        crate::engine::custom::spec_for(def)
    }

    fn txn(name: &str, statement: bool, counts: [u64; 3], lat_ms: &[u64]) -> TxnStats {
        let mut histogram = Histogram::<u64>::new(3).unwrap();
        for ms in lat_ms {
            histogram.record(ms * 1_000_000).unwrap();
        }
        TxnStats {
            name: name.into(),
            statement,
            count: counts[0],
            errors: counts[1],
            rollbacks: counts[2],
            histogram,
        }
    }

    /// A custom workload's outcome: two transactions (one that never committed), one statement
    /// line and a headline of 123.5.
    fn custom_outcome() -> StepOutcome {
        let mut o = outcome(true);
        o.metrics = vec![(crate::engine::HEADLINE, 123.5)];
        o.transactions = vec![
            txn("new_order", false, [4, 1, 2], &[1, 2, 3, 40]),
            txn("payment", false, [0, 3, 0], &[]),
            txn("new_order.1", true, [4, 0, 0], &[1, 1, 1, 2]),
        ];
        o
    }

    fn custom_step(index: usize, name: &str) -> Step {
        Step {
            workload: "orders".into(),
            spec: Some(headline_workload("orders", "tpmC")),
            ..step(index, name, 4, 10)
        }
    }

    fn ok_row<'a>(s: &'a Step, o: &'a StepOutcome, status: RowStatus) -> RunRow<'a> {
        RunRow {
            step: s,
            started_at: now(),
            status,
            outcome: Some(o),
            error: None,
            knee: None,
        }
    }

    #[test]
    fn transactions_csv_gets_a_row_per_transaction_with_each_step_and_joins_its_row() {
        let tmp = tempfile::tempdir().unwrap();
        let steps = [custom_step(2, "orders t4"), custom_step(3, "orders t8")];
        let p = plan(steps.to_vec());
        let mut store = ResultStore::create(tmp.path(), &p, "", now()).unwrap();
        let path = store.dir().join(TRANSACTIONS_FILE);
        assert!(
            !path.exists(),
            "created with the first step that has transactions"
        );
        assert!(store.transactions_path().is_none());
        let o = custom_outcome();
        store
            .write_run(&ok_row(&steps[0], &o, RowStatus::Ok))
            .unwrap();

        // Readable at once, without closing the store.
        let (header, rows) = read_rows(&path);
        assert_eq!(
            header.join(","),
            "run_id,step,name,variant,workload,threads,table_size,mode,axis_status,repetition,\
             transaction,kind,count,errors,rollbacks,rate,lat_avg_ms,lat_p50_ms,lat_p95_ms,\
             lat_p99_ms,lat_max_ms"
        );
        assert_eq!(rows.len(), 3);
        let (rheader, rrows) = read_rows(store.results_path());
        // The identity cells are the results.csv row's, so the rows join.
        let identity = header.iter().position(|h| h == "transaction").unwrap();
        for r in &rows {
            assert_eq!(r[..identity], rrows[0][..identity]);
        }
        let cells = |r: &[String]| -> Vec<String> { r[identity..].to_vec() };
        assert_eq!(
            cells(&rows[0])[..6],
            ["new_order", "transaction", "4", "1", "2", "0.4"]
        );
        let ms = |r: &[String], c: &str| col(&header, r, c).parse::<f64>().unwrap();
        assert!((ms(&rows[0], "lat_p50_ms") - 2.0).abs() < 0.01);
        assert!((ms(&rows[0], "lat_p95_ms") - 40.0).abs() < 0.05);
        assert!((ms(&rows[0], "lat_max_ms") - 40.0).abs() < 0.05);
        assert!((ms(&rows[0], "lat_avg_ms") - 11.5).abs() < 0.05);
        assert_eq!(
            cells(&rows[1]),
            [
                "payment",
                "transaction",
                "0",
                "3",
                "0",
                "0",
                "",
                "",
                "",
                "",
                ""
            ],
            "nothing counted: no latency"
        );
        assert_eq!(cells(&rows[2])[..3], ["new_order.1", "statement", "4"]);
        // The headline and its name in results.csv.
        assert_eq!(col(&rheader, &rrows[0], "headline"), "123.5");
        assert_eq!(col(&rheader, &rrows[0], "headline_name"), "tpmC");
        // A histogram per transaction, next to the step's own.
        let hdir = store.transaction_histogram_dir(&steps[0]);
        assert!(hdir.ends_with("histograms/2-orders_t4"), "{hdir:?}");
        for (file, t) in ["new_order.hdr", "payment.hdr", "new_order.1.hdr"]
            .iter()
            .zip(&o.transactions)
        {
            assert_eq!(read_histogram(&hdir.join(file)).unwrap(), t.histogram);
        }

        store
            .write_run(&ok_row(&steps[1], &o, RowStatus::Ok))
            .unwrap();
        let (_, rows) = read_rows(&path);
        let step_of: Vec<String> = rows.iter().map(|r| col(&header, r, "step")).collect();
        assert_eq!(step_of, ["2", "2", "2", "3", "3", "3"]);

        // Read back: the rows, the names, the headline and the join compare reads.
        let run = load::load(store.dir(), load::Parts::Results).unwrap();
        assert_eq!(run.transactions.len(), 6);
        assert_eq!(
            run.transaction_names(),
            ["new_order", "payment", "new_order.1"]
        );
        assert_eq!(run.headline_name(), Some("tpmC"));
        let joined = run.rows_with_transactions();
        assert_eq!(
            joined[1].get("new_order.lat_p95_ms"),
            run.transactions[3].get("lat_p95_ms")
        );
        assert_eq!(joined[0].get("payment.errors"), "3");
        // Each row's histogram, found from the row as the writer named it.
        for (i, t) in o.transactions.iter().enumerate() {
            let path = run.transaction_histogram_path(3 + i).unwrap();
            assert!(path.starts_with(store.transaction_histogram_dir(&steps[1])));
            assert_eq!(read_histogram(&path).unwrap(), t.histogram);
        }
        assert_eq!(run.transaction_histogram_path(6), None);
        assert_eq!(joined[0].get("new_order.1.count"), "4");
    }

    #[test]
    fn a_built_in_workload_has_no_transactions_file_nor_headline() {
        let tmp = tempfile::tempdir().unwrap();
        let s = step(1, "x", 4, 10);
        let p = plan(vec![s.clone()]);
        let mut store = ResultStore::create(tmp.path(), &p, "", now()).unwrap();
        let o = outcome(true);
        store.write_run(&ok_row(&s, &o, RowStatus::Ok)).unwrap();
        assert!(!store.dir().join(TRANSACTIONS_FILE).exists());
        let (header, rows) = read_rows(store.results_path());
        assert_eq!(col(&header, &rows[0], "headline"), "");
        assert_eq!(col(&header, &rows[0], "headline_name"), "");
        let run = load::load(store.dir(), load::Parts::Results).unwrap();
        assert!(run.transactions.is_empty() && run.transaction_names().is_empty());
        assert_eq!(run.headline_name(), None);
    }

    /// A resume keeps the transaction rows of finished steps only: an interrupted step's and
    /// those of a step whose results.csv row a crash never wrote go, and the steps that run
    /// again add theirs once.
    #[test]
    fn reopen_keeps_the_transactions_of_finished_steps_only() {
        let tmp = tempfile::tempdir().unwrap();
        let steps: Vec<Step> = (1..=3).map(|i| custom_step(i, &format!("s{i}"))).collect();
        let p = plan(steps.clone());
        let mut store = ResultStore::create(tmp.path(), &p, "", now()).unwrap();
        let o = custom_outcome();
        store
            .write_run(&ok_row(&steps[0], &o, RowStatus::Ok))
            .unwrap();
        store
            .write_run(&ok_row(&steps[1], &o, RowStatus::Interrupted))
            .unwrap();
        // Step 3: its transaction rows are on disk, then the process dies before its row.
        store.write_transactions(&steps[2], &o).unwrap();
        let dir = store.dir().to_path_buf();
        drop(store);
        let path = dir.join(TRANSACTIONS_FILE);
        let steps_in = |path: &Path| -> Vec<String> {
            let (header, rows) = read_rows(path);
            rows.iter().map(|r| col(&header, r, "step")).collect()
        };
        assert_eq!(
            steps_in(&path),
            ["1", "1", "1", "2", "2", "2", "3", "3", "3"]
        );

        let (mut store, finished) = ResultStore::reopen(&dir, &p).unwrap();
        assert_eq!(finished, [1].into());
        assert_eq!(steps_in(&path), ["1", "1", "1"]);
        for s in &steps[1..] {
            store.write_run(&ok_row(s, &o, RowStatus::Ok)).unwrap();
        }
        assert_eq!(
            steps_in(&path),
            ["1", "1", "1", "2", "2", "2", "3", "3", "3"]
        );
        assert!(!dir.join("transactions.csv.tmp").exists());
    }
}
