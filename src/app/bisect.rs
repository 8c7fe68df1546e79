//! `sbsuite bisect FILE`: the answer on stdout, a line per probe on stderr; exit 0 with an
//! answer (a cause, or no difference to bisect), 2 for a request that cannot be bisected, 1
//! when a probe failed, 130 when stopped.

use super::plan::set_overrides;
use super::{Exit, fail, print};
use crate::bisect::{self, BisectError, Request};
use crate::cli::BisectArgs;

pub(super) fn bisect(args: &BisectArgs) -> Exit {
    let sets = match set_overrides(&args.overrides) {
        Ok(s) => s,
        Err(exit) => return exit,
    };
    let req = Request {
        file: args.file.clone(),
        sets,
        base: args.base.clone(),
        other: args.other.clone(),
        captures: args
            .captures
            .as_deref()
            .and_then(|c| Some((c.first()?.clone(), c.get(1)?.clone()))),
        metric: args.metric.clone(),
        share: args.share / 100.0,
        results_root: args.results_dir.clone(),
        quiet: args.quiet,
    };
    match bisect::bisect(&req, &mut |line| eprintln!("{line}")) {
        Ok(outcome) => print(&bisect::summary(&outcome)),
        Err(BisectError::Config(e)) => super::fail_config(e),
        Err(e @ BisectError::Interrupted { .. }) => fail(Exit::Interrupted, e),
        Err(e) if e.is_bad_input() => fail(Exit::BadInput, e),
        Err(e) => fail(Exit::Failed, e),
    }
}
