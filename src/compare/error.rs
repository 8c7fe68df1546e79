//! Why a comparison could not be made. Every message names the run or option at fault and
//! what to do instead; the texts are the ones `sbsuite compare` has always printed (tests
//! pin several of them).

use std::path::PathBuf;

use crate::results::load::{BadCell, LoadError};

use super::{COST_METRICS, METRICS, TRANSACTION_METRICS};

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// A run that cannot be found or opened, with the system's reason.
    #[error(
        "{}: {reason} (give a run directory results/<suite>/<run-id> or its results.csv; `sbsuite runs` lists them)",
        path.display()
    )]
    NotFound { path: PathBuf, reason: String },
    #[error(
        "{}: no `{column}` column: not a results.csv written by sbsuite (old sysbench logs: `sbsuite import`)",
        path.display()
    )]
    NotResults { path: PathBuf, column: String },
    /// Any other failure to read a run, worded by the reader.
    #[error(transparent)]
    Load(LoadError),
    #[error(
        "the runs have different matrix columns ({} vs {}): compare runs of the same suite, or the variants inside one run with --by variant",
        base.join(", "),
        other.join(", ")
    )]
    DifferentKeys {
        base: Vec<String>,
        other: Vec<String>,
    },
    #[error("--by {by}: {} has no such column: use one of {}", path.display(), columns.join(", "))]
    NoSuchColumn {
        by: String,
        path: PathBuf,
        columns: Vec<String>,
    },
    #[error("--by {by}: {by} has only one value ({value}) in {}: nothing to compare", path.display())]
    OneValue {
        by: String,
        value: String,
        path: PathBuf,
    },
    /// A gate whose metric has a cell that is not a number: it cannot be evaluated, and
    /// passing it silently would let a broken run through CI.
    #[error(
        "{}: {cell}: the gate {gate} cannot be evaluated: fix or delete that row, or leave {metric} out of --fail-on",
        path.display()
    )]
    GateCannotEvaluate {
        path: PathBuf,
        cell: BadCell,
        gate: String,
        metric: &'static str,
    },
    /// A gate whose metric no matched key has on both sides: nothing to evaluate, which must
    /// not read as a pass.
    #[error(
        "the gate {gate} cannot be evaluated: no key has {metric} values in both {base} and {other} (compare runs with matrix keys in common, or leave {metric} out of --fail-on)"
    )]
    GateHasNothing {
        gate: String,
        metric: &'static str,
        base: String,
        other: String,
    },
    /// A metric name that is none of the metrics, nor `TXN.METRIC`.
    #[error(
        "{option}: `{name}` is not a metric: use one of {}, {headline}, or TXN.METRIC for a transaction of a custom workload (e.g. {}.p95; METRIC: {})",
        metric_names(),
        example.as_deref().unwrap_or("new_order"),
        transaction_metric_names()
    )]
    UnknownMetric {
        option: &'static str,
        name: String,
        /// The headline's name in these runs (`tpmC`), or `headline`.
        headline: &'static str,
        /// A transaction of the runs, for the example.
        example: Option<String>,
    },
    #[error(
        "{option}: `{name}`: `{measure}` is not a measure of a transaction: use one of {}",
        transaction_metric_names()
    )]
    UnknownTransactionMetric {
        option: &'static str,
        name: String,
        measure: String,
    },
    /// `TXN.METRIC` whose TXN is no transaction (or statement) of the runs.
    #[error(
        "{option}: `{name}`: no transaction or statement `{txn}` in the runs compared: {}",
        if known.is_empty() {
            "they have no transactions.csv (only custom workloads record transactions)".to_string()
        } else {
            format!("use one of {}", known.join(", "))
        }
    )]
    UnknownTransaction {
        option: &'static str,
        name: String,
        txn: String,
        known: Vec<String>,
    },
    #[error("--by compares the groups inside ONE run: give one run")]
    ByNeedsOneRun,
    #[error(
        "give two runs (`sbsuite compare A B`) or one run and --by (`sbsuite compare RUN --by variant`)"
    )]
    Usage,
}

impl From<LoadError> for CompareError {
    /// `compare` words two read failures its own way, as it always has: a run that cannot be
    /// found or opened (the system's reason and where runs are listed) and a file that is not
    /// sbsuite's results (how old sysbench logs get in).
    fn from(e: LoadError) -> CompareError {
        match e {
            LoadError::Missing { path, source }
            | LoadError::NotRun {
                results: path,
                source,
                ..
            } => CompareError::NotFound {
                path,
                reason: source.to_string(),
            },
            LoadError::Open { path, source } => CompareError::NotFound {
                path,
                reason: source.to_string(),
            },
            LoadError::Column { path, column, .. } => CompareError::NotResults { path, column },
            other => CompareError::Load(other),
        }
    }
}

/// A `--fail-on` that does not parse.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum GateError {
    #[error(
        "--fail-on: `{part}` is not METRIC:±N%: write e.g. \"tps:-5%,p95:+10%\" (metrics: {}, headline, TXN.METRIC)",
        metric_names()
    )]
    Bad { part: String },
    #[error("--fail-on is empty: write e.g. \"tps:-5%,p95:+10%\"")]
    Empty,
}

fn metric_names() -> String {
    METRICS
        .iter()
        .chain(COST_METRICS)
        .map(|m| m.name)
        .collect::<Vec<_>>()
        .join(", ")
}

fn transaction_metric_names() -> String {
    TRANSACTION_METRICS
        .iter()
        .map(|m| m.0)
        .collect::<Vec<_>>()
        .join(", ")
}
