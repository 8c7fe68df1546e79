//! Reading a run directory back for the report: `results.csv` and `intervals.csv` by column
//! name (matrix axes make the header dynamic), the resolved `suite.toml` and the captured
//! `server/<variant>.csv` files.
//!
//! Everything but `results.csv` is optional, so runs written by older builds, imported logs
//! and hand-copied result files still make a page; a missing or malformed `results.csv` is an
//! error that names the file and what to do.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::results::{INTERVALS_FILE, RESULTS_FILE, SUITE_FILE};

/// Why a run could not be read. Every message names the path and the fix.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(
        "{0} does not exist: give a run directory (results/<suite>/<run-id>) or its results.csv"
    )]
    Missing(PathBuf),
    #[error(
        "{0} is not a run directory: it has no results.csv (run directories are written by `sbsuite run` and `sbsuite import` as results/<suite>/<run-id>/)"
    )]
    NotRun(PathBuf),
    #[error("cannot read {path}: {message}; is it a results.csv written by sbsuite?")]
    Csv { path: PathBuf, message: String },
    #[error(
        "{path} has no `{column}` column: it is not a results.csv of sbsuite (its header is: {header})"
    )]
    Column {
        path: PathBuf,
        column: String,
        header: String,
    },
}

/// One CSV row as (column → cell).
#[derive(Clone, Debug, Default)]
pub struct Row {
    cells: HashMap<String, String>,
}

impl Row {
    /// A row from (column, cell) pairs.
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Row {
        Row {
            cells: pairs
                .iter()
                .map(|(c, v)| (c.to_string(), v.to_string()))
                .collect(),
        }
    }

    pub fn get(&self, column: &str) -> &str {
        self.cells.get(column).map_or("", String::as_str)
    }

    /// The cell as a number; empty cells and non-numbers are `None`.
    pub fn num(&self, column: &str) -> Option<f64> {
        self.get(column)
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
    }
}

/// A run as the report needs it.
#[derive(Clone, Debug)]
pub struct Run {
    pub dir: PathBuf,
    /// `<suite>/<run-id>` as found in the path (or the run_id column).
    pub name: String,
    pub suite_text: Option<String>,
    /// Matrix axes with their own column (between `threads` and `repetition`).
    pub axes: Vec<String>,
    pub rows: Vec<Row>,
    pub intervals: Vec<Row>,
    /// `server/<variant>.csv`: (variant, [(name, value)]), variants sorted by name.
    pub servers: Vec<(String, Vec<(String, String)>)>,
}

/// Loads a run from a run directory or a `results.csv` path.
pub fn load(path: &Path) -> Result<Run, LoadError> {
    if !path.exists() {
        return Err(LoadError::Missing(path.to_path_buf()));
    }
    let (dir, results) = if path.is_dir() {
        let results = path.join(RESULTS_FILE);
        if !results.is_file() {
            return Err(LoadError::NotRun(path.to_path_buf()));
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
    let (header, rows) = read_csv(&results)?;
    for column in ["step", "name", "variant", "workload", "threads", "status"] {
        if !header.iter().any(|h| h == column) {
            return Err(LoadError::Column {
                path: results,
                column: column.into(),
                header: header.join(","),
            });
        }
    }
    let axes = match (
        header.iter().position(|h| h == "threads"),
        header.iter().position(|h| h == "repetition"),
    ) {
        (Some(a), Some(b)) if b > a => header[a + 1..b].to_vec(),
        _ => Vec::new(),
    };
    // intervals.csv is optional (a results.csv copied alone); a broken one is still an error.
    let intervals_path = dir.join(INTERVALS_FILE);
    let intervals = if intervals_path.is_file() {
        read_csv(&intervals_path)?.1
    } else {
        Vec::new()
    };
    let suite_text = std::fs::read_to_string(dir.join(SUITE_FILE)).ok();
    let name = run_name(&dir, &rows);
    Ok(Run {
        servers: servers(&dir.join("server")),
        dir,
        name,
        suite_text,
        axes,
        rows,
        intervals,
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
    let err = |e: &dyn std::fmt::Display| LoadError::Csv {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let mut reader = ::csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(path)
        .map_err(|e| err(&e))?;
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| err(&e))?
        .iter()
        .map(str::to_string)
        .collect();
    let mut rows = Vec::new();
    for rec in reader.records() {
        let rec = rec.map_err(|e| err(&e))?;
        // A row a crash cut short has fewer cells: the ones it has are still shown.
        let cells = header
            .iter()
            .cloned()
            .zip(rec.iter().map(str::to_string))
            .collect();
        rows.push(Row { cells });
    }
    Ok((header, rows))
}

/// Every readable `server/*.csv` (name,value), sorted by variant.
fn servers(dir: &Path) -> Vec<(String, Vec<(String, String)>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        if path.extension().and_then(|x| x.to_str()) != Some("csv") {
            continue;
        }
        let Some(variant) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let Ok((_, rows)) = read_csv(&path) else {
            continue;
        };
        let vars = rows
            .iter()
            .map(|r| (r.get("name").to_string(), r.get("value").to_string()))
            .collect();
        out.push((variant.to_string(), vars));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}
