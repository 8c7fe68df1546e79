//! `sbsuite run`: the glue between parsed arguments and [`super::run_plan`].
//!
//! Kept apart from the step loop so the loop stays free of CLI types and exit codes; this is the
//! one place where a run's outcome becomes an exit code (0 ok, 1 a step failed or results could
//! not be written, 2 bad input, 130 interrupted) and where run errors are printed, once.

use crate::cli::{ProgressArg, RunArgs};
use crate::commands::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, load_plan};
use crate::suite::source::Seg;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{ProgressMode, RunContext, RunError, run_plan, server};

pub fn command(args: RunArgs) -> u8 {
    let loaded = match &args.resume {
        Some(dir) => load_for_resume(dir, &args),
        None => match &args.file {
            Some(file) => load_plan(file, &args.overrides),
            None => Err(EXIT_BAD_INPUT),
        },
    };
    let (suite, plan) = match loaded {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    // Results labelled with a variant whose settings were never applied would be wrong, so a
    // suite that asks for server changes this build cannot make is refused, and every
    // `set_global` is checked against the server (exists, settable at runtime) before anything
    // runs.
    let variants = match check_variants(&suite, &plan, false) {
        Ok(v) => v,
        Err(code) => return code,
    };
    let base_dir = match &args.file {
        Some(f) => f.parent().map(Path::to_path_buf).unwrap_or_default(),
        None => PathBuf::from("."),
    };
    let ctx = RunContext {
        base_dir,
        hooks: suite.hooks.clone(),
        on_error: suite.on_error,
        resume: args.resume.clone(),
        stop_when: suite.matrix.stop_when.clone(),
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

/// `--resume RUN_DIR`: the plan from the run's own `suite.toml` (no environment or `--set`
/// layers: they would change the plan), checked against its `plan.json`; server settings a
/// killed run left changed are restored first.
fn load_for_resume(
    dir: &Path,
    args: &RunArgs,
) -> Result<(crate::suite::Suite, crate::plan::Plan), u8> {
    if !args.overrides.set.is_empty() {
        eprintln!(
            "error: --resume continues the run as it was planned: remove --set (start a new run to change the suite)"
        );
        return Err(EXIT_BAD_INPUT);
    }
    let suite_file = dir.join(crate::results::SUITE_FILE);
    let plan_file = dir.join(crate::results::PLAN_FILE);
    if !suite_file.exists()
        || !plan_file.exists()
        || !dir.join(crate::results::RESULTS_FILE).exists()
    {
        eprintln!(
            "error: --resume {}: not a run directory (it needs suite.toml, plan.json and results.csv, as `sbsuite run` writes them under results/<suite>/<run-id>/)",
            dir.display()
        );
        return Err(EXIT_BAD_INPUT);
    }
    let suite = crate::suite::load_with_env(&suite_file, &[], &[]).map_err(|e| {
        eprint!("{e}");
        EXIT_BAD_INPUT
    })?;
    let plan = crate::plan::build(&suite).map_err(|e| {
        eprint!("{e}");
        EXIT_BAD_INPUT
    })?;
    let stored = std::fs::read_to_string(&plan_file).unwrap_or_default();
    let rebuilt = serde_json::to_string_pretty(&plan).unwrap_or_default();
    if stored.trim_end() != rebuilt.trim_end() {
        eprintln!(
            "error: --resume {}: plan.json does not match the plan of its suite.toml (edited, or written by another sbsuite version): start a new run",
            dir.display()
        );
        return Err(EXIT_BAD_INPUT);
    }
    let pending = super::server::pending(dir).map_err(|e| {
        eprintln!("error: {e}");
        EXIT_FAILED
    })?;
    if !pending.is_empty() {
        let Some(target) = plan.steps.iter().find_map(|s| s.target.clone()) else {
            eprintln!("error: {} has restore files but no [target]", dir.display());
            return Err(EXIT_FAILED);
        };
        for (_, saved) in pending {
            if let Err(e) = super::server::restore_and_forget(&target, &saved, dir) {
                eprintln!(
                    "error: restoring the settings of variant {} left by the stopped run failed: {e}",
                    saved.variant
                );
                return Err(EXIT_FAILED);
            }
            eprintln!(
                "[sbsuite] restored the settings of variant {} left by the stopped run",
                saved.variant
            );
        }
    }
    Ok((suite, plan))
}

/// The server changes of the suite's variants, checked: a variant with `set_global` or
/// `restart` needs a MySQL/MariaDB or PostgreSQL `[target]`, and every runtime variable must
/// exist and be settable on the server (a restart variant's settings can only be checked once
/// the server runs with its file). Errors are printed with the file, line and key. With
/// `unreachable_ok` (`sbsuite validate`), a server that cannot be reached is a note, not an
/// error.
pub fn check_variants(
    suite: &crate::suite::Suite,
    plan: &crate::plan::Plan,
    unreachable_ok: bool,
) -> Result<HashMap<String, server::VariantSettings>, u8> {
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
        let Some(t) = target.as_ref().filter(|t| t.has_server()) else {
            let e = suite
                .error(&path, format!("variant `{}` changes server settings, but the suite has no MySQL/MariaDB or PostgreSQL [target]", v.name))
                .with_help("add [target] with driver = \"mysql\" or \"pgsql\", or remove the variant's set_global/restart");
            eprint!("{e}");
            return Err(EXIT_BAD_INPUT);
        };
        if v.restart.is_none() {
            match server::check(t, &v.set_global) {
                Ok(()) => {}
                Err(server::CheckError::Unreachable(msg)) if unreachable_ok => {
                    eprintln!(
                        "note: variant `{}`: set_global not checked against the server: {msg}",
                        v.name
                    );
                }
                Err(e) => {
                    let e = suite
                        .error(&path, format!("variant `{}`: {e}", v.name))
                        .with_help(
                            "fix or remove the setting; nothing has run and no setting was changed",
                        );
                    eprint!("{e}");
                    return Err(EXIT_BAD_INPUT);
                }
            }
        }
        variants.insert(
            v.name.clone(),
            server::VariantSettings {
                set_global: v.set_global.clone(),
                restart: v.restart.clone(),
            },
        );
    }
    Ok(variants)
}
