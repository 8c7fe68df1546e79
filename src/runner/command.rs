//! `sbsuite run`: the glue between parsed arguments and [`super::run_plan`].
//!
//! Kept apart from the step loop so the loop stays free of CLI types and exit codes; this is the
//! one place where a run's outcome becomes an exit code (0 ok, 1 a step failed or results could
//! not be written, 2 bad input, 130 interrupted) and where run errors are printed, once.

use crate::cli::{ProgressArg, RunArgs};
use crate::commands::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, load_plan};
use crate::suite::source::Seg;

use super::{ProgressMode, RunContext, RunError, run_plan};

pub fn command(args: RunArgs) -> u8 {
    let (suite, plan) = match load_plan(&args.file, &args.overrides) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    // Results labelled with a variant whose settings were never applied would be wrong, so a
    // suite that asks for server changes is refused until this build can make them.
    for (i, v) in suite.variants.iter().enumerate() {
        let key = if v.restart.is_some() {
            "restart"
        } else {
            "set_global"
        };
        if !v.set_global.is_empty() || v.restart.is_some() {
            let path = [Seg::key("variant"), Seg::Index(i), Seg::key(key)];
            let e = suite
                .error(&path, format!("variant `{}` changes server settings, which this build cannot apply yet", v.name))
                .with_help("`sbsuite plan` and `validate` accept it; to run now, remove set_global/restart from the variant");
            eprint!("{e}");
            return EXIT_BAD_INPUT;
        }
    }
    let ctx = RunContext {
        results_root: args.results_dir.unwrap_or(suite.results_dir),
        suite_text: suite.resolved_toml,
        quiet: args.quiet,
        progress: match args.progress {
            ProgressArg::Auto => ProgressMode::Auto,
            ProgressArg::Bar => ProgressMode::Bar,
            ProgressArg::Plain => ProgressMode::Plain,
            ProgressArg::Off => ProgressMode::Off,
        },
    };
    match run_plan(&plan, &ctx) {
        Ok(summary) if summary.interrupted => EXIT_INTERRUPTED,
        // A step that ended early without a stop request (forced_shutdown) did not finish its
        // run: the suite did not succeed, though its row keeps the numbers.
        Ok(summary) if summary.steps_failed > 0 || summary.steps_interrupted > 0 => EXIT_FAILED,
        Ok(_) => EXIT_OK,
        Err(e @ RunError::NoEngine { .. }) => {
            eprintln!("error: {e}");
            EXIT_BAD_INPUT
        }
        Err(e) => {
            eprintln!("error: {e}");
            EXIT_FAILED
        }
    }
}
