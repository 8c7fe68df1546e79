//! `sbsuite import FILE…`: sysbench text logs into a run directory (2 when a file is unreadable
//! or holds no report, 1 when the run directory cannot be written).

use super::{Exit, fail};
use crate::cli::ImportArgs;
use crate::import::{self, ImportError, ImportRequest};

pub(super) fn import(args: ImportArgs) -> Exit {
    let req = ImportRequest {
        files: args.files,
        out: args.out,
        suite: args.suite,
        workload: args.workload,
    };
    match import::command(&req) {
        Ok(()) => Exit::Ok,
        Err(e @ (ImportError::Unreadable { .. } | ImportError::NoReport(_))) => {
            fail(Exit::BadInput, e)
        }
        Err(e @ ImportError::Store(_)) => fail(Exit::Failed, e),
    }
}
