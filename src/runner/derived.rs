//! Suites derived from the user's, run one after another by the commands that ask the server
//! questions (`sbsuite bisect`, `sbsuite capacity`): each is the user's file with a few keys
//! changed, loaded with the same `--set` and `SBSUITE_*` layers, checked against the server as
//! `sbsuite run` checks it, and run as an ordinary run (its own run directory, `suite.toml`,
//! results and server captures; settings applied and restored on every path).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::server::VariantSettings;
use super::{RunContext, RunError, RunSummary};
use crate::plan::Plan;
use crate::source::ConfigErrors;
use crate::suite::{self, SetOverride, Suite};

/// Where a derived suite comes from and where its runs go.
pub struct Origin<'a> {
    /// The user's suite file: relative paths resolve against its directory, errors name it.
    pub file: &'a Path,
    pub sets: &'a [SetOverride],
    /// The `SBSUITE_*` layer ([`suite::env_layer`]).
    pub env: &'a [(String, String)],
    /// Runs go to `<results_root>/<derived suite name>/<run-id>/`.
    pub results_root: PathBuf,
    /// No progress on stderr.
    pub quiet: bool,
}

/// A derived suite, loaded, planned and checked.
pub struct Loaded {
    pub suite: Suite,
    pub plan: Plan,
    variants: HashMap<String, VariantSettings>,
}

/// Why a derived suite did not run to the end.
#[derive(Debug, thiserror::Error)]
pub enum DerivedError {
    #[error("{0}")]
    Config(#[from] ConfigErrors),
    #[error(transparent)]
    Run(#[from] RunError),
    /// Stopped by Ctrl-C or SIGTERM (the run's own stop).
    #[error("stopped")]
    Interrupted { run_dir: PathBuf },
    #[error("{failed} step(s) failed; see {}", .run_dir.display())]
    Failed { failed: usize, run_dir: PathBuf },
}

impl DerivedError {
    /// Whether the derived suite itself is wrong (exit 2), as opposed to a run that failed.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            DerivedError::Config(_)
                | DerivedError::Run(
                    RunError::NoEngine { .. } | RunError::Clients(_) | RunError::Preflight(_)
                )
        )
    }
}

/// Loads `text` as a suite of `origin`, plans it and checks its variants against the server.
pub fn load(origin: &Origin, text: &str) -> Result<Loaded, ConfigErrors> {
    let suite = suite::load_text(origin.file, text, origin.sets, origin.env)?;
    let plan = crate::plan::build(&suite)?;
    super::clients::check_clients(&suite, &plan)?;
    let variants = super::check_variants(&suite, &plan, false)?;
    Ok(Loaded {
        suite,
        plan,
        variants,
    })
}

/// Runs a loaded derived suite; the steps' sysbench-shaped reports are discarded (the run
/// holds their numbers). A stopped run or a failed step is an error naming the run directory.
pub fn run(origin: &Origin, loaded: Loaded) -> Result<RunSummary, DerivedError> {
    let base_dir = origin
        .file
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut ctx = RunContext::for_suite(&loaded.suite, base_dir);
    ctx.results_root.clone_from(&origin.results_root);
    ctx.quiet = origin.quiet;
    ctx.watch.reports = super::Reports::Discard;
    let summary = super::run_plan(&loaded.plan, &ctx, loaded.variants)?;
    if summary.interrupted {
        return Err(DerivedError::Interrupted {
            run_dir: summary.run_dir,
        });
    }
    if summary.steps_failed > 0 {
        return Err(DerivedError::Failed {
            failed: summary.steps_failed,
            run_dir: summary.run_dir,
        });
    }
    Ok(summary)
}

/// The user's suite text with `edit` applied to its TOML table (a file that does not parse
/// was refused when it was first loaded).
pub fn edit(text: &str, edit: impl FnOnce(&mut toml::Table)) -> String {
    let mut table: toml::Table = toml::from_str(text).unwrap_or_default();
    edit(&mut table);
    toml::to_string(&table).unwrap_or_default()
}

/// Applies `f` to the `[suite]` table of `table` (created when missing).
pub fn with_suite_section(table: &mut toml::Table, f: impl FnOnce(&mut toml::Table)) {
    let mut section = match table.remove("suite") {
        Some(toml::Value::Table(t)) => t,
        _ => toml::Table::new(),
    };
    f(&mut section);
    table.insert("suite".into(), toml::Value::Table(section));
}
