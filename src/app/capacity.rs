//! `sbsuite capacity FILE --target "p99<10ms"`, and `sbsuite run` of a suite with a
//! `[capacity]` section: the answer on stdout, a line per probe on stderr; exit 0 with an
//! answer (a rate, or none that meets the target), 2 for a request that cannot be searched, 1
//! when a probe failed, 130 when stopped.

use std::path::PathBuf;

use super::plan::set_overrides;
use super::{Exit, fail, print};
use crate::capacity::{self, CapacityError, Home, Request, Target};
use crate::cli::{CapacityArgs, RunArgs};
use crate::runner::derived::DerivedError;
use crate::suite::capacity::TARGET_FORM;

pub(super) fn capacity(args: &CapacityArgs) -> Exit {
    let sets = match set_overrides(&args.overrides) {
        Ok(s) => s,
        Err(exit) => return exit,
    };
    let target = match args.target.as_deref().map(|t| (t, Target::parse(t))) {
        None => None,
        Some((_, Some(t))) => Some(t),
        Some((text, None)) => {
            return fail(
                Exit::BadInput,
                format_args!("--target `{text}`: {TARGET_FORM}"),
            );
        }
    };
    search(&Request {
        file: args.file.clone(),
        sets,
        target,
        min_rate: args.min_rate,
        precision: args.precision,
        confirm: args.confirm,
        home: Home::Own,
        results_root: args.results_dir.clone(),
        quiet: args.quiet,
    })
}

/// `sbsuite run FILE` of a suite with `[capacity]` (already loaded and checked): the search,
/// from the section alone, into the run directory. What a run of steps offers around them
/// (resume, events, live metrics) a search does not.
pub(super) fn run(args: &RunArgs, file: PathBuf) -> Exit {
    let unsupported = [
        (args.resume.is_some(), "--resume"),
        (args.events.is_some(), "--events"),
        (args.metrics.is_some(), "--metrics"),
    ];
    if let Some((_, option)) = unsupported.iter().find(|(given, _)| *given) {
        return fail(
            Exit::BadInput,
            format_args!(
                "{option} is not available for a suite with [capacity]: its probes are runs of \
                 their own (run it again to search again)"
            ),
        );
    }
    let sets = match set_overrides(&args.overrides) {
        Ok(s) => s,
        Err(exit) => return exit,
    };
    search(&Request {
        file,
        sets,
        target: None,
        min_rate: None,
        precision: None,
        confirm: None,
        home: Home::Run,
        results_root: args.results_dir.clone(),
        quiet: args.quiet,
    })
}

/// Runs the search, prints its answer and maps its end to the exit code.
fn search(req: &Request) -> Exit {
    match capacity::capacity(req, &mut |line| eprintln!("{line}")) {
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
