//! `sbsuite report RUN [RUN2]`: the HTML page, or with `--format text|markdown|json` the
//! per-transaction tables of custom workloads on stdout (2 when a run cannot be read or has
//! no transactions, 1 when writing fails).

use std::path::PathBuf;

use super::{Exit, fail, print};
use crate::cli::ReportFormat;
use crate::report::html::{self, ReportError};
use crate::report::transactions;
use crate::results::load::{self, Parts};

pub(super) fn report(
    runs: &[PathBuf],
    out: Option<PathBuf>,
    svg: Option<PathBuf>,
    format: ReportFormat,
) -> Exit {
    if format != ReportFormat::Html {
        return tables(runs, format);
    }
    match html::command(runs, out, svg) {
        Ok(()) => Exit::Ok,
        Err(e @ (ReportError::Load(_) | ReportError::Curve(_) | ReportError::CapacityAlone(_))) => {
            fail(Exit::BadInput, e)
        }
        Err(e @ ReportError::Write { .. }) => fail(Exit::Failed, e),
    }
}

/// The per-transaction table of each run, in `format`.
fn tables(paths: &[PathBuf], format: ReportFormat) -> Exit {
    let mut tables = Vec::new();
    for p in paths {
        let run = match load::load(p, Parts::Results) {
            Ok(r) => r,
            Err(e) => return fail(Exit::BadInput, e),
        };
        match transactions::table(&run) {
            Some(t) => tables.push(t),
            None => {
                return fail(
                    Exit::BadInput,
                    format_args!(
                        "{}: no transactions.csv: only runs of custom workloads record transactions (the page, without --format, shows every run)",
                        p.display()
                    ),
                );
            }
        }
    }
    let text = match format {
        ReportFormat::Json => serde_json::to_string_pretty(&tables).unwrap_or_default() + "\n",
        ReportFormat::Markdown => tables
            .iter()
            .map(transactions::markdown)
            .collect::<Vec<_>>()
            .join("\n"),
        ReportFormat::Text | ReportFormat::Html => tables
            .iter()
            .map(transactions::text)
            .collect::<Vec<_>>()
            .join("\n"),
    };
    print(&text)
}
