//! The one reader of a run directory: `results.csv` and `intervals.csv` by column name (matrix
//! axes make the header dynamic), the resolved `suite.toml`, the captured `server/<variant>.csv`
//! files, and the listing of every run under a results directory (`sbsuite runs`).
//!
//! `sbsuite compare`, `sbsuite report` and `sbsuite runs` all read through here, so a run that
//! one of them accepts the others accept too, and a change to the column contract
//! ([`super::csv`]) has one reader to follow. The writer side stays in [`super::ResultStore`].
//!
//! Which tool measured a run is [`Origin`]: `origin.json` when the directory has one (written by
//! `sbsuite import`), else the `suite.toml` header of imports made before that file existed,
//! else `sbsuite` — so every existing directory still says where its numbers came from.
//!
//! The client machine is `host.json` ([`super::host`]), unknown in directories without one.
//!
//! `transactions.csv` (custom workloads: a row per run step × transaction) is read when the
//! run has one ([`Run::transactions`], empty otherwise) and joined to the steps' rows by `step`
//! ([`Run::rows_with_transactions`]), so compare reads `new_order.lat_p95_ms` like any column.
//!
//! Everything but `results.csv` is optional, so runs written by older builds, imported logs and
//! hand-copied result files still load; a missing or malformed `results.csv` is a typed
//! [`LoadError`] that names the file and what to do. `intervals.csv` (the time series, the
//! biggest file of a long run) is read only when the caller asks for it ([`Parts`]).

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{INTERVALS_FILE, ORIGIN_FILE, PLAN_FILE, RESULTS_FILE, SUITE_FILE, TRANSACTIONS_FILE};

/// The first line of the `suite.toml` that `sbsuite import` writes: how directories imported
/// before `origin.json` existed are still known as sysbench's.
pub const IMPORTED_SUITE_HEADER: &str = "# Imported by `sbsuite import`";

/// The tool that measured a run (`origin.json`). Comparisons say when the two sides differ:
/// the clients of two tools do not cost the same, and on a small machine a client that uses
/// less CPU leaves more to the server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// `sbsuite` or `sysbench`.
    pub tool: String,
    /// The tool's version as its output said (`1.0`; `0.4, 1.0` when a log held several),
    /// when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The sbsuite that imported the run (`sbsuite 0.1.0`), for imported runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported_by: Option<String>,
}

impl Origin {
    /// A run of `sbsuite run` (directories without `origin.json`).
    pub fn sbsuite() -> Origin {
        Origin {
            tool: "sbsuite".into(),
            version: None,
            imported_by: None,
        }
    }

    /// `sysbench 1.0 (imported log)`, `sbsuite`.
    pub fn describe(&self) -> String {
        let mut t = self.tool.clone();
        if let Some(v) = &self.version {
            t.push(' ');
            t.push_str(v);
        }
        if self.tool != "sbsuite" {
            t.push_str(" (imported log)");
        }
        t
    }

    /// The origin of the run in `dir`: `origin.json`, else an imported `suite.toml`'s header,
    /// else `sbsuite run`. An unreadable `origin.json` falls back the same way: the record is
    /// context for a comparison, not a reason to refuse one.
    fn of(dir: &Path, suite_text: Option<&str>) -> Origin {
        if let Ok(text) = std::fs::read_to_string(dir.join(ORIGIN_FILE))
            && let Ok(o) = serde_json::from_str::<Origin>(&text)
        {
            return o;
        }
        if suite_text.is_some_and(|t| t.starts_with(IMPORTED_SUITE_HEADER)) {
            return Origin {
                tool: "sysbench".into(),
                version: None,
                imported_by: Some("sbsuite".into()),
            };
        }
        Origin::sbsuite()
    }
}

/// The directory of captured server variables inside a run directory.
pub const SERVER_DIR: &str = "server";

/// Columns every results.csv written by sbsuite (`run` or `import`) has; a file without one of
/// them is something else.
const REQUIRED_COLUMNS: &[&str] = &[
    "step",
    "name",
    "variant",
    "workload",
    "threads",
    "repetition",
    "status",
];

/// Why a run could not be read. Every message names the path and the fix.
///
/// The first three variants carry the I/O error behind them, so a caller that words "cannot
/// find the run" its own way (`sbsuite compare` does) can still say what the system said.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(
        "{path} does not exist: give a run directory (results/<suite>/<run-id>) or its results.csv"
    )]
    Missing {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "{dir} is not a run directory: it has no results.csv (run directories are written by `sbsuite run` and `sbsuite import` as results/<suite>/<run-id>/)"
    )]
    NotRun {
        dir: PathBuf,
        /// `<dir>/results.csv`, the file that is not there.
        results: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot read {path}: {source}; is it a results.csv written by sbsuite?")]
    Open {
        path: PathBuf,
        #[source]
        source: ::csv::Error,
    },
    #[error("cannot read {path}: {source}; is it a results.csv written by sbsuite?")]
    Csv {
        path: PathBuf,
        #[source]
        source: ::csv::Error,
    },
    #[error(
        "{path} has no `{column}` column: it is not a results.csv of sbsuite (its header is: {header})"
    )]
    Column {
        path: PathBuf,
        column: String,
        header: String,
    },
    #[error(
        "{}: {source} (runs live under the suite's results_dir, `results` by default; pass --results-dir)",
        root.display()
    )]
    NoResultsDir {
        root: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// One CSV row as (column → cell). A row a crash cut short has fewer cells: [`Row::cell`] tells
/// a missing cell from an empty one, [`Row::get`] reads both as "".
#[derive(Clone, Debug, Default)]
pub struct Row {
    cells: HashMap<String, String>,
    /// The row's line in its file (the header is line 1; 0 for a row not read from a file).
    line: u64,
}

/// A cell that should hold a number but holds something else (`abc`, `NaN`, `inf`): a row
/// edited by hand or written by something other than sbsuite. Read through [`Row::number`], the
/// one definition of a numeric cell, so every consumer sees the same cells as bad.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("line {line} (step {step}), column {column}: `{value}` is not a finite number")]
pub struct BadCell {
    pub line: u64,
    pub step: String,
    pub column: String,
    pub value: String,
}

impl Row {
    /// A row from (column, cell) pairs.
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Row {
        Row {
            cells: pairs
                .iter()
                .map(|(c, v)| (c.to_string(), v.to_string()))
                .collect(),
            line: 0,
        }
    }

    /// The cell, or "" when the row has none.
    pub fn get(&self, column: &str) -> &str {
        self.cell(column).unwrap_or("")
    }

    /// The cell, `None` when the row has no such cell (unknown column or a short row).
    pub fn cell(&self, column: &str) -> Option<&str> {
        self.cells.get(column).map(String::as_str)
    }

    /// The cell as a finite number, `Ok(None)` when it is empty or missing (not measured), and
    /// a [`BadCell`] naming the line, step and column when it is anything else — `NaN` and
    /// `inf` included, which Rust's float parser would accept.
    pub fn number(&self, column: &str) -> Result<Option<f64>, BadCell> {
        let text = self.get(column).trim();
        if text.is_empty() {
            return Ok(None);
        }
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Some(v)),
            _ => Err(BadCell {
                line: self.line,
                step: self.get("step").to_string(),
                column: column.to_string(),
                value: self.get(column).to_string(),
            }),
        }
    }

    /// The cell as a finite number; empty cells and bad cells are `None` (for consumers that
    /// draw what they can, such as charts).
    pub fn num(&self, column: &str) -> Option<f64> {
        self.number(column).ok().flatten()
    }
}

/// Which optional parts to read beyond results.csv, suite.toml and server/.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parts {
    /// results.csv, suite.toml and server/ only.
    Results,
    /// Also intervals.csv (the time series): a broken one is then an error.
    WithIntervals,
}

/// A run read back.
#[derive(Clone, Debug)]
pub struct Run {
    /// The path as given (a run directory or a results.csv).
    pub path: PathBuf,
    /// The run directory (the results.csv's parent when a file was given).
    pub dir: PathBuf,
    /// `<suite>/<run-id>` as found in the path (or the run_id column).
    pub name: String,
    /// The header of results.csv, in file order.
    pub header: Vec<String>,
    /// One row per run step (what compare, report and the gates read).
    pub rows: Vec<Row>,
    /// The rows of the steps' phases (#30: a `phase` cell), kept apart from the steps' own so
    /// that nothing counts a phase as a repetition.
    pub phase_rows: Vec<Row>,
    /// The rows of the steps' worker groups (#31: a `group` cell), kept apart as the phases'.
    pub group_rows: Vec<Row>,
    /// intervals.csv rows; empty unless [`Parts::WithIntervals`] and the file exists.
    pub intervals: Vec<Row>,
    /// transactions.csv rows (custom workloads); empty when the run has none.
    pub transactions: Vec<Row>,
    pub suite_text: Option<String>,
    /// `server/<variant>.csv`: variant → variable name → value.
    pub servers: BTreeMap<String, BTreeMap<String, String>>,
    /// The tool that measured the run.
    pub origin: Origin,
    /// The client machine (`host.json`), or why it is unknown (`no host.json`: an older
    /// build or an imported run; a file that does not parse).
    pub host: Result<super::host::HostRecord, super::host::HostFileError>,
}

impl Run {
    /// Matrix axes with their own column (between `threads` and `repetition`).
    pub fn axes(&self) -> &[String] {
        match (self.column("threads"), self.column("repetition")) {
            (Some(a), Some(b)) if b > a => &self.header[a + 1..b],
            _ => &[],
        }
    }

    /// The matrix-key columns: from `variant` up to `repetition` (exclusive).
    pub fn key_columns(&self) -> &[String] {
        let start = self.column("variant").unwrap_or(0);
        let end = self.column("repetition").unwrap_or(self.header.len());
        &self.header[start..end]
    }

    fn column(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }

    /// The transaction (and statement) names of transactions.csv, transactions first, each in
    /// the order it first appears.
    pub fn transaction_names(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for kind in [super::csv::KIND_TRANSACTION, super::csv::KIND_STATEMENT] {
            for r in self.transactions.iter().filter(|r| r.get("kind") == kind) {
                let name = r.get("transaction");
                if !name.is_empty() && !out.iter().any(|n| n == name) {
                    out.push(name.to_string());
                }
            }
        }
        out
    }

    /// The name the workload gives its headline (`tpmC`): the first `headline_name` cell
    /// that has one.
    pub fn headline_name(&self) -> Option<&str> {
        self.rows
            .iter()
            .map(|r| r.get("headline_name"))
            .find(|n| !n.is_empty())
    }

    /// The results.csv rows, each with its step's transaction cells added as
    /// `<transaction>.<column>` (`new_order.lat_p95_ms`, `new_order.count`) for every measure
    /// of [`super::TRANSACTION_COLUMNS`] (those after `kind`).
    pub fn rows_with_transactions(&self) -> Vec<Row> {
        let mut by_step: HashMap<&str, Vec<&Row>> = HashMap::new();
        for t in &self.transactions {
            by_step.entry(t.get("step")).or_default().push(t);
        }
        let measures = &super::TRANSACTION_COLUMNS[2..];
        self.rows
            .iter()
            .map(|r| {
                let mut row = r.clone();
                for t in by_step.get(r.get("step")).into_iter().flatten() {
                    let name = t.get("transaction");
                    for m in measures {
                        if let Some(cell) = t.cell(m) {
                            row.cells.insert(format!("{name}.{m}"), cell.to_string());
                        }
                    }
                }
                row
            })
            .collect()
    }

    /// The HDR histogram file (ns) of transactions.csv row `i`, for merging or recomputing its
    /// percentiles exactly: named from the step's rows up to it, as the writer named it
    /// ([`super::transaction_histogram_files`]). `None` for no such row or a row without a
    /// step number; the file itself may be missing (a hand-copied transactions.csv).
    pub fn transaction_histogram_path(&self, i: usize) -> Option<PathBuf> {
        let row = self.transactions.get(i)?;
        let step = row.get("step");
        let index: usize = step.parse().ok()?;
        let names = self.transactions[..=i]
            .iter()
            .filter(|r| r.get("step") == step)
            .map(|r| r.get("transaction"));
        let file = super::transaction_histogram_files(names).pop()?;
        Some(
            self.dir
                .join(super::HISTOGRAMS_DIR)
                .join(super::transaction_histogram_dir(index, row.get("name")))
                .join(file),
        )
    }

    /// The results.csv read: the path as given, or its `results.csv` when a directory was given.
    pub fn results_file(&self) -> PathBuf {
        if self.path.is_dir() {
            self.path.join(RESULTS_FILE)
        } else {
            self.path.clone()
        }
    }
}

/// Loads a run from a run directory or a `results.csv` path.
pub fn load(path: &Path, parts: Parts) -> Result<Run, LoadError> {
    let meta = std::fs::metadata(path).map_err(|source| LoadError::Missing {
        path: path.to_path_buf(),
        source,
    })?;
    let (dir, results) = if meta.is_dir() {
        let results = path.join(RESULTS_FILE);
        match std::fs::metadata(&results) {
            Ok(m) if m.is_file() => {}
            other => {
                return Err(LoadError::NotRun {
                    dir: path.to_path_buf(),
                    source: other.err().unwrap_or_else(|| {
                        io::Error::new(io::ErrorKind::InvalidInput, "not a file")
                    }),
                    results,
                });
            }
        }
        (path.to_path_buf(), results)
    } else {
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        (dir, path.to_path_buf())
    };
    let (header, all_rows) = read_csv(&results)?;
    let (phase_rows, rows): (Vec<Row>, Vec<Row>) = all_rows
        .into_iter()
        .partition(|r| r.cell(super::csv::PHASE).is_some_and(|p| !p.is_empty()));
    let (group_rows, rows): (Vec<Row>, Vec<Row>) = rows
        .into_iter()
        .partition(|r| r.cell(super::csv::GROUP).is_some_and(|g| !g.is_empty()));
    for column in REQUIRED_COLUMNS {
        if !header.iter().any(|h| h == column) {
            return Err(LoadError::Column {
                path: results,
                column: column.to_string(),
                header: header.join(","),
            });
        }
    }
    // intervals.csv is optional (a results.csv copied alone); a broken one is still an error.
    let intervals_path = dir.join(INTERVALS_FILE);
    let intervals = if parts == Parts::WithIntervals && intervals_path.is_file() {
        read_csv(&intervals_path)?.1
    } else {
        Vec::new()
    };
    // transactions.csv: only custom workloads have one; a broken one is an error.
    let transactions_path = dir.join(TRANSACTIONS_FILE);
    let transactions = if transactions_path.is_file() {
        read_csv(&transactions_path)?.1
    } else {
        Vec::new()
    };
    let suite_text = std::fs::read_to_string(dir.join(SUITE_FILE)).ok();
    let name = run_name(&dir, &rows);
    let origin = Origin::of(&dir, suite_text.as_deref());
    Ok(Run {
        origin,
        host: super::host::read(&dir),
        path: path.to_path_buf(),
        servers: servers(&dir.join(SERVER_DIR)),
        dir,
        name,
        header,
        rows,
        phase_rows,
        group_rows,
        intervals,
        transactions,
        suite_text,
    })
}

/// `<suite>/<run-id>` from the directory, else the run_id column.
fn run_name(dir: &Path, rows: &[Row]) -> String {
    let canon = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut parts = canon
        .components()
        .rev()
        .take(2)
        .map(|c| c.as_os_str().to_string_lossy().into_owned());
    let id = parts.next().unwrap_or_default();
    let suite = parts.next().unwrap_or_default();
    match rows.first().map(|r| r.get("run_id")) {
        Some(run_id) if !run_id.is_empty() && run_id != id => run_id.to_string(),
        _ if suite.is_empty() => id,
        _ => format!("{suite}/{id}"),
    }
}

fn read_csv(path: &Path) -> Result<(Vec<String>, Vec<Row>), LoadError> {
    let err = |source| LoadError::Csv {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = ::csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(path)
        .map_err(|source| LoadError::Open {
            path: path.to_path_buf(),
            source,
        })?;
    // Bytes, not strings: a row cut inside a multi-byte character (a crash or a full disk
    // while writing a non-ASCII error message) must not make the whole run unreadable, so an
    // invalid sequence reads as U+FFFD instead of failing the file.
    let text = |field: &[u8]| String::from_utf8_lossy(field).into_owned();
    let header: Vec<String> = reader
        .byte_headers()
        .map_err(err)?
        .iter()
        .map(text)
        .collect();
    let mut rows = Vec::new();
    for rec in reader.byte_records() {
        let rec = rec.map_err(err)?;
        // A row a crash cut short has fewer cells: the ones it has are still read.
        let cells = header.iter().cloned().zip(rec.iter().map(text)).collect();
        let line = rec.position().map_or(0, ::csv::Position::line);
        rows.push(Row { cells, line });
    }
    Ok((header, rows))
}

/// The prefix of a captured server parameter's name in `server/<variant>.csv`
/// (`parameter:freeze_trigger_percentage`): a setting that is not a variable (OceanBase's
/// `SHOW PARAMETERS`, a variant's `sql` settings), kept apart from a variable of the same name.
pub const PARAMETER: &str = "parameter:";

/// Every readable `server/*.csv` (`name,value` after a header line), by variant. Captures are
/// context, not results: an unreadable file or record is left out rather than failing the run.
fn servers(dir: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.extension().and_then(|x| x.to_str()) != Some("csv") {
            continue;
        }
        let Some(variant) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let Ok(vars) = capture(&path) else {
            continue;
        };
        out.insert(variant.to_string(), vars);
    }
    out
}

/// One capture, `server/<variant>.csv`: name → value (records with fewer than two fields are
/// left out).
pub fn capture(path: &Path) -> Result<BTreeMap<String, String>, ::csv::Error> {
    let mut reader = ::csv::ReaderBuilder::new().flexible(true).from_path(path)?;
    Ok(reader
        .records()
        .flatten()
        .filter(|rec| rec.len() >= 2)
        .map(|rec| (rec[0].to_string(), rec[1].to_string()))
        .collect())
}

/// One line of `sbsuite runs`.
#[derive(Debug, Serialize)]
pub struct RunInfo {
    pub suite: String,
    pub run_id: String,
    pub started: String,
    pub runs: usize,
    pub planned: Option<usize>,
    /// Planned runs that a `stop_when` sweep skipped past its knee: finished by design, so
    /// they do not make the run incomplete (#14).
    pub skipped_by_stop_when: usize,
    pub failed: usize,
    pub interrupted: usize,
    /// The kinds of the prepare, check, command and cleanup steps that failed (their last
    /// `journal.log` record), in plan order: a run whose rows are all `ok` but whose check
    /// failed did not succeed (#26).
    pub failed_steps: Vec<String>,
    pub status: String,
    pub path: PathBuf,
}

/// The runs under a results directory (`<root>/<suite>/<run-id>/`), oldest first. Directories
/// that are not runs are skipped.
pub fn list(root: &Path) -> Result<Vec<RunInfo>, LoadError> {
    let mut out = Vec::new();
    let suites = std::fs::read_dir(root).map_err(|source| LoadError::NoResultsDir {
        root: root.to_path_buf(),
        source,
    })?;
    for s in suites.flatten() {
        let Ok(runs) = std::fs::read_dir(s.path()) else {
            continue;
        };
        for r in runs.flatten() {
            let dir = r.path();
            let Ok(run) = load(&dir, Parts::Results) else {
                continue;
            };
            let steps = planned_runs(&dir);
            let planned = steps.as_ref().map(Vec::len);
            let skipped = steps
                .as_deref()
                .map_or(0, |steps| skipped_by_stop_when(steps, &run.rows));
            let count = |st: &str| run.rows.iter().filter(|r| r.get("status") == st).count();
            let (failed, interrupted) = (count("failed"), count("interrupted"));
            let failed_steps: Vec<String> = super::failed_in_journal(&dir)
                .into_iter()
                .map(|(_, kind)| kind)
                .collect();
            let status = if interrupted > 0 {
                "interrupted"
            } else if planned.is_some_and(|p| p > run.rows.len() + skipped) {
                "incomplete"
            } else if failed > 0 || !failed_steps.is_empty() {
                "failed"
            } else {
                "ok"
            };
            out.push(RunInfo {
                suite: s.file_name().to_string_lossy().into_owned(),
                run_id: r.file_name().to_string_lossy().into_owned(),
                started: run
                    .rows
                    .first()
                    .and_then(|r| r.cell("started_at"))
                    .unwrap_or_default()
                    .to_string(),
                runs: run.rows.len(),
                planned,
                skipped_by_stop_when: skipped,
                failed,
                interrupted,
                failed_steps,
                status: status.into(),
                path: dir,
            });
        }
    }
    out.sort_by(|a, b| (&a.run_id, &a.suite).cmp(&(&b.run_id, &b.suite)));
    Ok(out)
}

/// A run step of the stored plan.json, with what places it in a `stop_when` sweep.
#[derive(Debug, serde::Deserialize)]
struct PlannedRun {
    index: usize,
    kind: String,
    variant: String,
    repetition: u32,
    params: indexmap::IndexMap<String, crate::value::Value>,
}

/// The run steps of the stored plan.json (`None` without a readable plan).
fn planned_runs(dir: &Path) -> Option<Vec<PlannedRun>> {
    let text = std::fs::read_to_string(dir.join(PLAN_FILE)).ok()?;
    let plan: serde_json::Value = serde_json::from_str(&text).ok()?;
    let steps = plan.get("steps")?.as_array()?;
    Some(
        steps
            .iter()
            .filter_map(|s| serde_json::from_value::<PlannedRun>(s.clone()).ok())
            .filter(|s| s.kind == "run")
            .collect(),
    )
}

/// How many planned runs without a row come after the knee of their `stop_when` sweep: the
/// runner writes no row for them, and marks the run that stopped the sweep with its `knee`
/// cell, which begins with the axis (`threads=64 (…)`, or `threads below 1 (…)` when the first
/// value already met the condition; see `runner::sweep`).
fn skipped_by_stop_when(steps: &[PlannedRun], rows: &[Row]) -> usize {
    let by_index: HashMap<usize, &PlannedRun> = steps.iter().map(|s| (s.index, s)).collect();
    let mut stopped: Vec<(&str, String, usize)> = Vec::new();
    let mut with_row = std::collections::HashSet::new();
    for row in rows {
        let Some(step) = row.get("step").parse().ok().and_then(|i| by_index.get(&i)) else {
            continue;
        };
        with_row.insert(step.index);
        let knee = row.get("knee");
        if knee.is_empty() {
            continue;
        }
        let axis = step.params.keys().find(|axis| {
            knee.strip_prefix(axis.as_str())
                .is_some_and(|rest| rest.starts_with('=') || rest.starts_with(" below "))
        });
        if let Some(axis) = axis
            && let Some(key) =
                crate::plan::sweep_key(&step.variant, step.repetition, &step.params, axis)
        {
            stopped.push((axis.as_str(), key, step.index));
        }
    }
    steps
        .iter()
        .filter(|s| !with_row.contains(&s.index))
        .filter(|s| {
            stopped.iter().any(|(axis, key, at)| {
                s.index > *at
                    && crate::plan::sweep_key(&s.variant, s.repetition, &s.params, axis).as_ref()
                        == Some(key)
            })
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_directory_reads_by_column_name_with_its_optional_parts() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("suite").join("run-1");
        std::fs::create_dir_all(dir.join(SERVER_DIR)).unwrap();
        std::fs::write(
            dir.join(RESULTS_FILE),
            "run_id,step,name,variant,workload,threads,tables,repetition,tps,status\n\
             run-1,1,a,default,cpu,4,8,1,10.5,ok\n\
             run-1,2,b,default,cpu,8\n",
        )
        .unwrap();
        std::fs::write(dir.join(INTERVALS_FILE), "step,time,eps\n1,1,3\n").unwrap();
        std::fs::write(
            dir.join(SERVER_DIR).join("default.csv"),
            "name,value\nx,1\n",
        )
        .unwrap();
        let run = load(&dir, Parts::Results).unwrap();
        assert_eq!(run.name, "suite/run-1");
        assert_eq!(run.axes(), ["tables"]);
        assert_eq!(
            run.key_columns(),
            ["variant", "workload", "threads", "tables"]
        );
        assert_eq!(run.rows[0].num("tps"), Some(10.5));
        assert_eq!(run.rows[1].cell("status"), None, "a short row");
        assert_eq!(run.rows[1].get("status"), "");
        assert!(run.intervals.is_empty(), "not asked for");
        assert_eq!(run.servers["default"]["x"], "1");
        assert!(run.suite_text.is_none());
        let full = load(&dir.join(RESULTS_FILE), Parts::WithIntervals).unwrap();
        assert_eq!(full.intervals.len(), 1);
        assert_eq!(full.dir, dir);
    }

    #[test]
    fn a_numeric_cell_is_finite_or_empty_and_anything_else_names_its_line() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(RESULTS_FILE);
        std::fs::write(
            &path,
            "step,name,variant,workload,threads,repetition,tps,status\n\
             1,a,v,cpu,1,1,10.5,ok\n\
             2,b,v,cpu,1,2,,ok\n\
             3,c,v,cpu,1,3,NaN,ok\n\
             4,d,v,cpu,1,4, inf ,ok\n\
             5,e,v,cpu,1,5,abc,ok\n",
        )
        .unwrap();
        let run = load(&path, Parts::Results).unwrap();
        assert_eq!(run.rows[0].number("tps"), Ok(Some(10.5)));
        assert_eq!(run.rows[1].number("tps"), Ok(None), "empty: not measured");
        assert_eq!(
            run.rows[1].number("nope"),
            Ok(None),
            "missing: not measured"
        );
        for (row, value) in [(2, "NaN"), (3, " inf "), (4, "abc")] {
            let bad = run.rows[row].number("tps").unwrap_err();
            assert_eq!(
                bad,
                BadCell {
                    line: row as u64 + 2,
                    step: (row + 1).to_string(),
                    column: "tps".into(),
                    value: value.into(),
                }
            );
            assert_eq!(run.rows[row].num("tps"), None);
        }
        assert_eq!(run.results_file(), path);
    }

    #[test]
    fn errors_name_the_path_and_keep_the_cause() {
        let tmp = tempfile::tempdir().unwrap();
        let e = load(&tmp.path().join("nope"), Parts::Results).unwrap_err();
        assert!(matches!(e, LoadError::Missing { .. }), "{e}");
        assert!(e.to_string().contains("nope does not exist"), "{e}");
        let e = load(tmp.path(), Parts::Results).unwrap_err();
        assert!(
            matches!(&e, LoadError::NotRun { results, .. } if results.ends_with(RESULTS_FILE)),
            "{e}"
        );
        let bad = tmp.path().join(RESULTS_FILE);
        std::fs::write(&bad, "a,b\n1,2\n").unwrap();
        let e = load(&bad, Parts::Results).unwrap_err();
        assert!(e.to_string().contains("has no `step` column"), "{e}");
        let e = list(&tmp.path().join("nope")).unwrap_err();
        assert!(e.to_string().contains("pass --results-dir"), "{e}");
    }
}
