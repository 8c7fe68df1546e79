//! `sbsuite restore RUN_DIR`: applies the restore files a stopped run left behind, so a run
//! killed before it could put the server settings back does not leave the server changed.

use std::path::Path;

use super::plan::load_plan;
use super::{Exit, fail};
use crate::cli::Overrides;
use crate::runner::server;

pub(super) fn restore(run_dir: &Path) -> Exit {
    let pending = match server::pending(run_dir) {
        Ok(p) => p,
        Err(e) => return fail(Exit::BadInput, e),
    };
    if pending.is_empty() {
        println!(
            "nothing to restore: {} has no pending server settings",
            run_dir.display()
        );
        return Exit::Ok;
    }
    let suite_file = run_dir.join("suite.toml");
    if !suite_file.exists() {
        return fail(
            Exit::BadInput,
            format_args!(
                "{} is missing: restore needs the run's suite to find the server",
                suite_file.display()
            ),
        );
    }
    let (_, plan) = match load_plan(
        &suite_file,
        &Overrides {
            set: Vec::new(),
            clients: None,
        },
    ) {
        Ok(loaded) => loaded,
        Err(exit) => return exit,
    };
    let Some(target) = plan.steps.iter().find_map(|s| s.target.clone()) else {
        return fail(
            Exit::BadInput,
            format_args!(
                "{} has no [target]: there is no server to restore",
                suite_file.display()
            ),
        );
    };
    let mut exit = Exit::Ok;
    for (_, saved) in pending {
        // A stage's settings (#28) are named with their stage.
        let what = match saved.stage {
            Some(stage) => format!("variant {} ({stage} settings)", saved.variant),
            None => format!("variant {}", saved.variant),
        };
        match server::restore_and_forget(&target, &saved, run_dir) {
            Ok(()) => println!(
                "restored {what}: {}",
                saved
                    .originals
                    .iter()
                    .map(|(n, v)| format!("{n} = {}", v.as_deref().unwrap_or("(default)")))
                    .chain(saved.statements.iter().map(|s| format!("`{s}`")))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Err(e) => exit = fail(Exit::Failed, format_args!("{what}: {e}")),
        }
    }
    exit
}
