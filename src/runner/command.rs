//! What `sbsuite run` needs from the runner before the step loop starts: the plan of a stopped
//! run for `--resume`, and the suite's variants checked against the server.
//!
//! Kept apart from the step loop so the loop stays free of suite loading and server checks. Both
//! return typed errors; the app prints them and picks the exit code.

use crate::source::{ConfigError, ConfigErrors, Seg};

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::plan::Plan;
use crate::suite::Suite;
use crate::suite::raw::Stage;

use super::server;

/// Why `--resume RUN_DIR` cannot continue a run.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    #[error(
        "--resume {}: not a run directory (it needs suite.toml, plan.json and results.csv, as `sbsuite run` writes them under results/<suite>/<run-id>/)",
        .0.display()
    )]
    NotRunDir(PathBuf),
    /// The run's own suite does not load or plan (rendered with file:line:col).
    #[error("{0}")]
    Config(ConfigErrors),
    #[error(
        "--resume {}: plan.json does not match the plan of its suite.toml (edited, or written by another sbsuite version): start a new run",
        .0.display()
    )]
    PlanChanged(PathBuf),
    /// The stored suite holds a literal password only redacted: the resumed steps would log in
    /// with the redaction mark (#13).
    #[error(
        "--resume {}: [target] password is a literal password, which the run's suite.toml stores only as \"{}\", so the resumed steps cannot log in. Give the password through the environment: write password = \"{{{{ env.DB_PASSWORD }}}}\" in {}, export DB_PASSWORD and resume again (and do the same in your suite file, so that its runs can be resumed); nothing has run",
        .0.display(),
        crate::source::REDACTED,
        .0.join(crate::results::SUITE_FILE).display()
    )]
    LiteralPassword(PathBuf),
    /// The password template cannot be rendered (its environment variable is not set): every
    /// resumed step would fail and keep a `failed` row.
    #[error("--resume {}: {}; nothing has run", .0.display(), .1)]
    Password(PathBuf, String),
    /// The run directory does not match its plan (hand-edited or damaged files).
    #[error("--resume {}: {}", .0.display(), .1)]
    RunDir(PathBuf, crate::results::check::RunDirError),
    /// The run's restore files cannot be read.
    #[error("{0}")]
    Pending(#[source] server::ServerError),
    #[error("{} has restore files but no [target]", .0.display())]
    NoTarget(PathBuf),
    #[error("restoring the settings of variant {variant} left by the stopped run failed: {source}")]
    Restore {
        variant: String,
        #[source]
        source: server::ServerError,
    },
}

/// `--resume RUN_DIR`: the plan from the run's own `suite.toml` (no environment or `--set`
/// layers: they would change the plan), checked against its `plan.json`; a suite whose literal
/// password was redacted, or whose password template cannot be rendered, is refused; the rows and the journal are checked against the plan
/// (and repaired when the repair is unambiguous); server settings a killed run left changed are
/// restored first.
pub fn load_for_resume(dir: &Path) -> Result<(Suite, Plan), ResumeError> {
    let suite_file = dir.join(crate::results::SUITE_FILE);
    let plan_file = dir.join(crate::results::PLAN_FILE);
    if !suite_file.exists()
        || !plan_file.exists()
        || !dir.join(crate::results::RESULTS_FILE).exists()
    {
        return Err(ResumeError::NotRunDir(dir.to_path_buf()));
    }
    let suite = crate::suite::load_with_env(&suite_file, &[], &[]).map_err(ResumeError::Config)?;
    let plan = crate::plan::build(&suite).map_err(ResumeError::Config)?;
    let stored = std::fs::read_to_string(&plan_file).unwrap_or_default();
    let rebuilt = serde_json::to_string_pretty(&plan).unwrap_or_default();
    if stored.trim_end() != rebuilt.trim_end() {
        return Err(ResumeError::PlanChanged(dir.to_path_buf()));
    }
    // The password, checked before anything connects (restores below, the variants' checks,
    // the steps): a step that cannot log in keeps a `failed` row, which no later resume redoes.
    if let Some(target) = plan
        .steps
        .iter()
        .filter_map(|s| s.target.as_ref())
        .find(|t| t.has_server())
    {
        if crate::suite::stored::has_literal_password(suite.target.as_ref()) {
            return Err(ResumeError::LiteralPassword(dir.to_path_buf()));
        }
        if let Err((host, e)) = target.check_password() {
            let key = host.map_or("password".to_string(), |i| format!("hosts[{i}]'s password"));
            return Err(ResumeError::Password(
                dir.to_path_buf(),
                format!("[target] {key}: {e}; {}", e.help()),
            ));
        }
    }
    // Rows and journal against the plan: repaired when there is one right answer, else refused.
    let notes = crate::results::check::before_resume(dir, &plan)
        .map_err(|e| ResumeError::RunDir(dir.to_path_buf(), e))?;
    for note in notes {
        eprintln!("[sbsuite] {note}");
    }
    let pending = server::pending(dir).map_err(ResumeError::Pending)?;
    if !pending.is_empty() {
        let Some(target) = plan.steps.iter().find_map(|s| s.target.clone()) else {
            return Err(ResumeError::NoTarget(dir.to_path_buf()));
        };
        for (_, saved) in pending {
            server::restore_and_forget(&target, &saved, dir).map_err(|source| {
                ResumeError::Restore {
                    variant: saved.variant.clone(),
                    source,
                }
            })?;
            eprintln!(
                "[sbsuite] restored the settings of variant {} left by the stopped run",
                saved.variant
            );
        }
    }
    Ok((suite, plan))
}

/// The checks before a run that need no server, shared by `plan`, `validate` and `run` (#14):
/// the password template renders in this environment (an unset `env.X` is named with the line
/// of `password`; the password itself is never shown), a variant that changes server
/// settings has a MySQL/MariaDB or PostgreSQL `[target]`, and each restart variant's template
/// exists and renders (every name defined, every `env.X` set), and `[[faults]]` fit every run
/// step ([`super::faults::check_plan`]). What needs the server is [`SERVER_CHECKS`].
pub fn check_offline(suite: &Suite, plan: &Plan) -> Result<(), ConfigError> {
    let target = plan.steps.iter().find_map(|s| s.target.as_ref());
    // SQLite has no login: a password there is never rendered, so it is not checked either.
    if let Some(t) = target.filter(|t| t.has_server())
        && let Err((host, e)) = t.check_password()
    {
        // `[target] password`, or the one of `hosts` entry `host` (a table with its own).
        let path = match host {
            Some(i)
                if suite
                    .target
                    .as_ref()
                    .is_some_and(|r| r.hosts.get(i).and_then(|h| h.password()).is_some()) =>
            {
                vec![
                    Seg::key("target"),
                    Seg::key("hosts"),
                    Seg::Index(i),
                    Seg::key("password"),
                ]
            }
            _ => vec![Seg::key("target"), Seg::key("password")],
        };
        return Err(suite
            .error(
                &path,
                format!("the password template cannot be rendered: {e}"),
            )
            .with_help(format!("{}; nothing has run", e.help())));
    }
    for (i, v) in suite.variants.iter().enumerate() {
        let key = if !v.set_global.is_empty() {
            "set_global"
        } else if v.restart.is_some() {
            "restart"
        } else if v.sql.is_some() {
            "sql"
        } else if let Some(stage) = Stage::ALL.into_iter().find(|s| v.stage(*s).is_some()) {
            stage.as_str()
        } else {
            continue;
        };
        if !target.is_some_and(|t| t.has_server()) {
            let path = [Seg::key("variant"), Seg::Index(i), Seg::key(key)];
            return Err(suite
                .error(&path, format!("variant `{}` changes server settings, but the suite has no MySQL/MariaDB or PostgreSQL [target]", v.name))
                .with_help("add [target] with driver = \"mysql\" or \"pgsql\", or remove the variant's set_global/restart/sql (SQLite has no server settings; a PRAGMA belongs in the workload)"));
        }
        // The template is rendered now, not when the variant's turn comes hours later: a
        // missing file, a typo in a name or an unset `env.X` stops the suite before it starts.
        if let Some(r) = &v.restart {
            let base_dir = suite.file.parent().unwrap_or(Path::new("."));
            if let Err(e) = server::render_template(&v.name, r, base_dir) {
                let path = [
                    Seg::key("variant"),
                    Seg::Index(i),
                    Seg::key("restart"),
                    Seg::key("template"),
                ];
                return Err(suite
                    .error(&path, e.to_string())
                    .with_help("fix the template or the variant's settings; nothing has run"));
            }
        }
    }
    super::faults::check_plan(suite, plan)
}

/// What only a reachable server can tell, so `plan` cannot check it: each entry is when it
/// applies and what is checked, by which command. `plan` lists the ones that apply to its
/// suite, so a user knows what its clean result does not promise.
pub const SERVER_CHECKS: [(ServerCheck, &str); 5] = [
    (
        ServerCheck::Target,
        "the target's database exists (`run`, before anything runs); the server is reachable and the user can log in (`run`, at the first step)",
    ),
    (
        ServerCheck::Existing,
        "the data of [suite] dataset = \"existing\" is there: every table the runs read, with its rows (`run`, before anything runs)",
    ),
    (
        ServerCheck::SetGlobal,
        "each variant's set_global variable exists and is settable at runtime (`validate` when the server is reachable, `run` before anything runs)",
    ),
    (
        ServerCheck::Sql,
        "each variant's `sql.read` finds its settings on the server (`validate` when the server is reachable, `run` before anything runs); the read-back after `sql.apply` (`run`)",
    ),
    (
        ServerCheck::Restart,
        "each restart variant's settings read back as written (`run`, after the restart)",
    ),
];

/// When a [`SERVER_CHECKS`] entry applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerCheck {
    /// The suite has a MySQL/MariaDB or PostgreSQL target.
    Target,
    /// A variant has `set_global`.
    SetGlobal,
    /// A variant has `restart`.
    Restart,
    /// A variant has `settings` + `sql`.
    Sql,
    /// `[suite] dataset = "existing"`.
    Existing,
}

/// The [`SERVER_CHECKS`] that apply to `suite`'s plan.
pub fn server_checks(suite: &Suite, plan: &Plan) -> Vec<&'static str> {
    let server = plan
        .steps
        .iter()
        .find_map(|s| s.target.as_ref())
        .is_some_and(|t| t.has_server());
    let applies = |c: ServerCheck| match c {
        ServerCheck::Target => server,
        ServerCheck::SetGlobal => {
            server
                && suite.variants.iter().any(|v| {
                    !v.set_global.is_empty()
                        || Stage::ALL
                            .iter()
                            .any(|s| v.stage(*s).is_some_and(|st| !st.set_global.is_empty()))
                })
        }
        ServerCheck::Restart => server && suite.variants.iter().any(|v| v.restart.is_some()),
        ServerCheck::Sql => {
            server
                && suite.variants.iter().any(|v| {
                    v.sql.is_some() || Stage::ALL.iter().any(|s| v.stage_sql(*s).is_some())
                })
        }
        ServerCheck::Existing => {
            server && plan.dataset == crate::suite::raw::DatasetSource::Existing
        }
    };
    SERVER_CHECKS
        .iter()
        .filter(|(c, _)| applies(*c))
        .map(|(_, text)| *text)
        .collect()
}

/// The server changes of the suite's variants, checked: a variant with `set_global` or
/// `restart` needs a MySQL/MariaDB or PostgreSQL `[target]`, and every runtime variable must
/// exist and be settable on the server (a restart variant's settings can only be checked once
/// the server runs with its file). The error names the file, line and key. With
/// `unreachable_ok` (`sbsuite validate`), a server that cannot be reached is a note on stderr,
/// not an error.
pub fn check_variants(
    suite: &Suite,
    plan: &Plan,
    unreachable_ok: bool,
) -> Result<HashMap<String, server::VariantSettings>, ConfigError> {
    check_offline(suite, plan)?;
    let target = plan.steps.iter().find_map(|s| s.target.clone());
    let mut variants = HashMap::new();
    for (i, v) in suite.variants.iter().enumerate() {
        if !v.changes_server() {
            continue;
        }
        // check_offline refused server changes without a server target.
        if let Some(t) = target.as_ref().filter(|t| t.has_server()) {
            // The variant's own settings, then each stage's; a restart variant's own once it
            // ran (they may exist only with its file), its stages' now.
            let own =
                (v.restart.is_none()).then_some((None, &v.set_global, &v.settings, v.sql.as_ref()));
            let stages = Stage::ALL.into_iter().filter_map(|s| {
                let st = v.stage(s)?;
                Some((Some(s), &st.set_global, &st.settings, v.stage_sql(s)))
            });
            for (stage, set_global, settings, sql) in own.into_iter().chain(stages) {
                let at = |key: &str| {
                    let mut path = vec![Seg::key("variant"), Seg::Index(i)];
                    path.extend(stage.map(|s| Seg::key(s.as_str())));
                    path.push(Seg::key(key));
                    path
                };
                // Each kind of runtime change, checked on its own.
                let checks = [
                    (!set_global.is_empty(), "set_global"),
                    (sql.is_some() && !settings.is_empty(), "sql"),
                ];
                for (applies, key) in checks {
                    if !applies {
                        continue;
                    }
                    let checked = match sql {
                        Some(sql) if key == "sql" => server::check_sql(t, &v.name, settings, sql),
                        _ => server::check(t, set_global),
                    };
                    // Where the error points: the stage's settings may use the variant's sql.
                    let table = match (key, stage) {
                        ("sql", None) => "sql",
                        ("sql", Some(_)) => "settings",
                        _ => "set_global",
                    };
                    let key = match stage {
                        Some(s) => format!("{s}.{key}"),
                        None => key.to_string(),
                    };
                    match checked {
                        Ok(()) => {}
                        Err(server::CheckError::Unreachable(msg)) if unreachable_ok => {
                            eprintln!(
                                "note: variant `{}`: {key} not checked against the server: {msg}",
                                v.name
                            );
                        }
                        Err(e) => {
                            let e = suite
                                .error(&at(table), format!("variant `{}`: {e}", v.name))
                                .with_help(
                                    "fix or remove the setting; nothing has run and no setting was changed",
                                );
                            return Err(e);
                        }
                    }
                }
            }
        }
        let stages = Stage::ALL
            .into_iter()
            .filter_map(|s| {
                let st = v.stage(s)?;
                Some((
                    s,
                    server::VariantSettings {
                        set_global: st.set_global.clone(),
                        restart: None,
                        settings: st.settings.clone(),
                        sql: v.stage_sql(s).filter(|_| !st.settings.is_empty()).cloned(),
                        stages: Vec::new(),
                    },
                ))
            })
            .collect();
        variants.insert(
            v.name.clone(),
            server::VariantSettings {
                set_global: v.set_global.clone(),
                restart: v.restart.clone(),
                settings: v.settings.clone(),
                sql: v.sql.clone().filter(|_| !v.settings.is_empty()),
                stages,
            },
        );
    }
    Ok(variants)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::custom::compile::tests::ORDERS;

    /// `--resume` reloads the run directory's own suite.toml, which holds the definitions of
    /// the suite's `workloads` files inline: the files are not needed, and the rebuilt plan
    /// equals the stored plan.json.
    #[test]
    fn a_run_directory_with_custom_workloads_resumes_without_their_files() {
        let dir = tempfile::tempdir().unwrap();
        let start = ORDERS.find("[workloads.orders]").unwrap();
        std::fs::write(dir.path().join("orders.toml"), &ORDERS[start..]).unwrap();
        let file = dir.path().join("suite.toml");
        let suite = ORDERS[..start].replace(
            "name = \"custom\"",
            "name = \"custom\"\nworkloads = [\"orders.toml\"]",
        );
        std::fs::write(&file, suite).unwrap();
        let s = crate::suite::load_with_env(&file, &[], &[]).unwrap_or_else(|e| panic!("{e}"));
        let plan = crate::plan::build(&s).unwrap();

        let run = tempfile::tempdir().unwrap();
        std::fs::write(
            run.path().join(crate::results::SUITE_FILE),
            &s.resolved_toml,
        )
        .unwrap();
        std::fs::write(
            run.path().join(crate::results::PLAN_FILE),
            serde_json::to_string_pretty(&plan).unwrap(),
        )
        .unwrap();
        let header = crate::results::csv::results_columns(&plan.axes).join(",");
        std::fs::write(run.path().join(crate::results::RESULTS_FILE), header + "\n").unwrap();
        drop(dir);
        let (resumed, replanned) =
            load_for_resume(run.path()).unwrap_or_else(|e| panic!("{e}\n{}", s.resolved_toml));
        assert_eq!(replanned.steps.len(), plan.steps.len());
        assert_eq!(resumed.resolved_toml, s.resolved_toml);
        let orders = resumed
            .catalog
            .workload("orders")
            .and_then(crate::engine::custom::def)
            .unwrap();
        assert_eq!(orders.transactions.len(), 2);
    }
}
