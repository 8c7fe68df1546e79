//! `sbsuite capacity FILE --target "p99<10ms"`: the answer on stdout, a line per probe on
//! stderr; exit 0 with an answer (a rate, or none that meets the target), 2 for a request that
//! cannot be searched, 1 when a probe failed, 130 when stopped.

use super::plan::set_overrides;
use super::{Exit, fail, print};
use crate::capacity::{self, CapacityError, Request, Target};
use crate::cli::CapacityArgs;
use crate::runner::derived::DerivedError;

pub(super) fn capacity(args: &CapacityArgs) -> Exit {
    let sets = match set_overrides(&args.overrides) {
        Ok(s) => s,
        Err(exit) => return exit,
    };
    let target = match Target::parse(&args.target) {
        Ok(t) => t,
        Err(e) => return fail(Exit::BadInput, e),
    };
    let req = Request {
        file: args.file.clone(),
        sets,
        target,
        min_rate: args.min_rate,
        precision: args.precision,
        confirm: args.confirm,
        results_root: args.results_dir.clone(),
        quiet: args.quiet,
    };
    match capacity::capacity(&req, &mut |line| eprintln!("{line}")) {
        Ok(outcome) => print(&capacity::summary(&outcome)),
        Err(CapacityError::Config(e)) => super::fail_config(e),
        Err(
            e @ CapacityError::Run {
                source: DerivedError::Interrupted { .. },
                ..
            },
        ) => fail(Exit::Interrupted, e),
        Err(e) if e.is_bad_input() => fail(Exit::BadInput, e),
        Err(e) => fail(Exit::Failed, e),
    }
}
