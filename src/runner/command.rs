//! `sbsuite run`: the glue between parsed arguments and [`super::run_plan`].
//!
//! Kept apart from the step loop so the loop stays free of CLI types and exit codes; this is the
//! one place where a run's outcome becomes an exit code (0 ok, 1 a step failed or results could
//! not be written, 2 bad input, 130 interrupted) and where run errors are printed, once.

use crate::cli::{ProgressArg, RunArgs};
use crate::commands::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, load_plan};
use crate::suite::source::Seg;

use std::collections::HashMap;

use crate::suite::Driver;

use super::{ProgressMode, RunContext, RunError, run_plan, server};

pub fn command(args: RunArgs) -> u8 {
    let (suite, plan) = match load_plan(&args.file, &args.overrides) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    // Results labelled with a variant whose settings were never applied would be wrong, so a
    // suite that asks for server changes this build cannot make is refused, and every
    // `set_global` is checked against the server (exists, settable at runtime) before anything
    // runs.
    let target = plan.steps.iter().find_map(|s| s.target.clone());
    let mut variants = HashMap::new();
    for (i, v) in suite.variants.iter().enumerate() {
        if v.set_global.is_empty() && v.restart.is_none() {
            continue;
        }
        let key = if v.set_global.is_empty() {
            "restart"
        } else {
            "set_global"
        };
        let path = [Seg::key("variant"), Seg::Index(i), Seg::key(key)];
        let Some(t) = target.as_ref().filter(|t| t.driver != Driver::Sqlite) else {
            let e = suite
                .error(&path, format!("variant `{}` changes server settings, but the suite has no MySQL/MariaDB or PostgreSQL [target]", v.name))
                .with_help("add [target] with driver = \"mysql\" or \"pgsql\", or remove the variant's set_global/restart");
            eprint!("{e}");
            return EXIT_BAD_INPUT;
        };
        // Runtime settings are checked now; a restart variant's settings can only be checked
        // once the server runs with its file.
        if v.restart.is_none()
            && let Err(msg) = server::check(t, &v.set_global)
        {
            let e = suite
                .error(&path, format!("variant `{}`: {msg}", v.name))
                .with_help("fix or remove the setting; nothing has run and no setting was changed");
            eprint!("{e}");
            return EXIT_BAD_INPUT;
        }
        variants.insert(
            v.name.clone(),
            server::VariantSettings {
                set_global: v.set_global.clone(),
                restart: v.restart.clone(),
            },
        );
    }
    let base_dir = args
        .file
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let ctx = RunContext {
        base_dir,
        hooks: suite.hooks.clone(),
        on_error: suite.on_error,
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
    match run_plan(&plan, &ctx, variants) {
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
