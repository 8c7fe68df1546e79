//! `sbsuite report RUN [RUN2]`: the HTML page (2 when a run cannot be read, 1 when writing
//! fails).

use std::path::PathBuf;

use super::{Exit, fail};
use crate::report::html::{self, ReportError};

pub(super) fn report(runs: &[PathBuf], out: Option<PathBuf>, svg: Option<PathBuf>) -> Exit {
    match html::command(runs, out, svg) {
        Ok(()) => Exit::Ok,
        Err(e @ ReportError::Load(_)) => fail(Exit::BadInput, e),
        Err(e @ ReportError::Write { .. }) => fail(Exit::Failed, e),
    }
}
