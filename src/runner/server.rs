//! Server configuration variants applied at runtime (`set_global`): check, apply, verify,
//! capture and restore.
//!
//! Why it is shaped this way:
//! - **Originals are saved before the first change**, in `server/restore-<variant>.json` of the
//!   run directory, and the file is removed only after a successful restore: even a kill -9
//!   leaves what `sbsuite restore RUN_DIR` needs to put the server back.
//! - **Every value is read back** after it is set: a server that silently rounds or refuses a
//!   value would otherwise label results with a configuration that never ran.
//! - **The effective variables are captured per variant** (`server/<variant>.csv`), so a
//!   comparison can show exactly what differed.
//! - The SQL and how to read the server's answers are the database's
//!   ([`crate::db::ServerAdmin`], reached through the target's dialect: MySQL/MariaDB's
//!   `SET GLOBAL`, PostgreSQL's `ALTER SYSTEM SET` + `pg_reload_conf()`); this module keeps the
//!   bookkeeping: names, restore files, the order of the steps, restart templates and
//!   commands, and the messages around them. A target without a server (SQLite) has no
//!   admin, and every entry point here says so.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::db::dialect::{first_value, value_text};
use crate::db::sql_settings::{self, Which, check_name};
use crate::db::{AdminError, Connection, Connector, ServerAdmin, SqlError, Target};
use crate::suite::raw::{RawRestart, RawSqlSettings, Stage};
use crate::value::Value;

/// What a variant changes on the server.
#[derive(Clone, Debug, Default)]
pub struct VariantSettings {
    pub set_global: IndexMap<String, Value>,
    pub restart: Option<RawRestart>,
    /// Settings changed by the suite's own statements (`sql`), applied after `set_global`.
    pub settings: IndexMap<String, Value>,
    pub sql: Option<RawSqlSettings>,
    /// What the variant changes during one stage only (`prepare`, `run`): no `restart`, and
    /// `sql` already the stage's own or the variant's.
    pub stages: Vec<(Stage, VariantSettings)>,
}

impl VariantSettings {
    /// The settings of `stage`, if the variant has some.
    pub fn stage(&self, stage: Stage) -> Option<&VariantSettings> {
        self.stages
            .iter()
            .find(|(s, _)| *s == stage)
            .map(|(_, v)| v)
    }

    /// Whether anything is set at runtime (`set_global`, or `settings` through `sql`).
    pub fn changes_at_runtime(&self) -> bool {
        !self.set_global.is_empty() || (self.sql.is_some() && !self.settings.is_empty())
    }

    /// Every setting `sql` changes, in this variant or one of its stages, with the statements
    /// that read it (for the capture).
    pub fn sql_settings(&self) -> impl Iterator<Item = (&String, &RawSqlSettings)> {
        std::iter::once(self)
            .chain(self.stages.iter().map(|(_, v)| v))
            .filter_map(|v| {
                v.sql
                    .as_ref()
                    .map(|sql| v.settings.keys().map(move |n| (n, sql)))
            })
            .flatten()
    }
}

/// The settings of one variant as they were before it changed them.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Saved {
    pub variant: String,
    /// `(name, original value)`; `None` for a NULL (MySQL) or a setting that came from no
    /// `ALTER SYSTEM` (PostgreSQL: restored with `ALTER SYSTEM RESET`).
    pub originals: Vec<(String, Option<String>)>,
    /// The config file a `restart` variant wrote, and how to undo it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart: Option<RestartSaved>,
    /// The statements that put the variant's `settings` back, rendered with the values read
    /// before the change (`after` last): a restore runs them in order, first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub statements: Vec<String>,
    /// The stage whose settings these are (`restore-<variant>@<stage>.json`); `None`: the
    /// variant's own, for both stages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
}

/// How to undo a `restart` variant: remove `path` (or put `backup` back), run `command`,
/// wait for the server.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RestartSaved {
    pub path: PathBuf,
    pub backup: Option<PathBuf>,
    pub command: String,
    pub ready_timeout: u64,
}

/// Why a variant's server change, its restore or a capture failed: the database's own
/// [`AdminError`], or the bookkeeping around it (restore files, restart templates and
/// commands, read-backs). Every message says what was being done; the underlying error is
/// the source. A failure while undoing a failure keeps both.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(transparent)]
    Admin(#[from] AdminError),
    /// A server setting on a target without a server.
    #[error("set_global needs a MySQL/MariaDB or PostgreSQL [target]")]
    NoServer,
    /// A variant with server settings on a target without a server.
    #[error("set_global, restart and sql need a MySQL/MariaDB or PostgreSQL [target]")]
    VariantWithoutServer,
    /// A variant's settings failed after its restart, and undoing the restart failed too.
    #[error("{error}; undoing the restart failed: {undo}")]
    RestartNotUndone {
        #[source]
        error: Box<ServerError>,
        undo: Box<ServerError>,
    },
    /// Restoring a variant's settings failed: the server keeps them.
    #[error(
        "{source}: the server keeps the variant's settings; run `sbsuite restore {}`",
        .run_dir.display()
    )]
    NotRestored {
        #[source]
        source: Box<ServerError>,
        run_dir: PathBuf,
    },
    #[error("reading back {name} failed: {source}")]
    ReadBack {
        name: String,
        #[source]
        source: SqlError,
    },
    /// The server took another value than the one set.
    #[error("the server set {name} to {actual} instead of {wanted}: use a value it accepts as is")]
    SetOtherwise {
        name: String,
        actual: String,
        wanted: String,
    },
    /// A change failed half-way and putting back what it changed failed too.
    #[error(
        "{error}; restoring the original values failed too ({restore}): run `sbsuite restore {}`",
        .run_dir.display()
    )]
    RestoreFailedToo {
        #[source]
        error: Box<ServerError>,
        restore: Box<ServerError>,
        run_dir: PathBuf,
    },
    #[error("restoring {name} failed: {source}")]
    Restoring {
        name: String,
        #[source]
        source: SqlError,
    },
    #[error("restoring with `{statement}` failed: {source}")]
    RestoringWith {
        statement: String,
        #[source]
        source: SqlError,
    },
    /// A variant's `sql.read` query failed.
    #[error("reading {name} with `{query}` failed: {source}")]
    ReadWith {
        name: String,
        query: String,
        #[source]
        source: SqlError,
    },
    /// A variant's `sql.read` query answered without the value.
    #[error("reading {name} with `{query}`: {source}")]
    ReadAnswer {
        name: String,
        query: String,
        #[source]
        source: AdminError,
    },
    #[error("setting {name} with `{statement}` failed: {source}")]
    SetWith {
        name: String,
        statement: String,
        #[source]
        source: SqlError,
    },
    #[error("`{statement}` (sql.after) failed: {source}")]
    After {
        statement: String,
        #[source]
        source: SqlError,
    },
    /// A variant's `sql` setting reads back as another value.
    #[error(
        "after `{statement}` the server reports {name} = {actual} instead of {wanted}: use a value it reports as is, or set `check = false` in the variant's `sql` if it reports this setting in another form"
    )]
    ReportsOtherwise {
        statement: String,
        name: String,
        actual: String,
        wanted: String,
    },
    /// A file of the bookkeeping (`action`: what was done to which file).
    #[error("{action}: {source}")]
    File {
        action: String,
        #[source]
        source: io::Error,
    },
    #[error(
        "writing the config file {} failed: {source} (does the directory exist, may sbsuite write there?)",
        .path.display()
    )]
    WriteConfig {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A restart variant failed and undoing it failed too.
    #[error("{error}; undoing it failed too ({undo}): check {} and the server", .path.display())]
    UndoFailedToo {
        #[source]
        error: Box<ServerError>,
        undo: Box<ServerError>,
        path: PathBuf,
    },
    #[error(
        "restart template {template} cannot be read: {source} (paths are relative to the working directory or the suite file)"
    )]
    TemplateUnreadable {
        template: String,
        #[source]
        source: io::Error,
    },
    #[error("restart template {}: {source}", .file.display())]
    Template {
        file: PathBuf,
        #[source]
        source: minijinja::Error,
    },
    /// A restart template reads `env.X` for variables that are not set.
    #[error(
        "restart template {} reads environment variable {} which is not set: export it (or write {{{{ env.{} | default('') }}}})",
        .file.display(),
        .vars.join(", "),
        .vars[0]
    )]
    TemplateEnv {
        file: PathBuf,
        vars: Vec<String>,
        #[source]
        source: minijinja::Error,
    },
    /// A restart template uses names it is not given (`known`: the variant's settings).
    #[error(
        "restart template {} uses {}, which is not defined: templates see variant, settings, env and each setting by name ({})",
        .file.display(),
        .names.join(", "),
        known_text(.known)
    )]
    TemplateUndefined {
        file: PathBuf,
        names: Vec<String>,
        known: Vec<String>,
        #[source]
        source: minijinja::Error,
    },
    /// The restart command could not be started ([`super::shell::run`]'s message).
    #[error("{0}")]
    Shell(String),
    #[error("`{command}` failed ({status}): {output}")]
    CommandFailed {
        command: String,
        status: ExitStatus,
        output: String,
    },
    #[error("`{command}` did not finish within {secs} s")]
    CommandTimedOut { command: String, secs: u64 },
    #[error("`{0}` was killed by a stop request")]
    CommandStopped(String),
    #[error("stopped waiting for the server after the restart (stop request): {0}")]
    StoppedWaiting(#[source] SqlError),
    #[error(
        "the server did not accept connections within {secs} s of the restart: {source} (raise ready_timeout?)"
    )]
    NotReady {
        secs: u64,
        #[source]
        source: SqlError,
    },
    /// A restart variant's setting reads back as another value.
    #[error(
        "after the restart {name} is {actual} instead of {wanted}: the server did not read the rendered file (is its directory included by the server's config?)"
    )]
    RestartedOtherwise {
        name: String,
        actual: String,
        wanted: String,
    },
    #[error("{0}")]
    Encode(#[source] serde_json::Error),
    #[error("{} is not a restore file: {source}", .path.display())]
    NotARestoreFile {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("no server variables to capture for SQLite")]
    NothingToCapture,
    #[error("reading the server variables failed: {0}")]
    Capture(#[source] SqlError),
    #[error("{}: {source}", .path.display())]
    CsvOpen {
        path: PathBuf,
        #[source]
        source: csv::Error,
    },
    #[error("writing {}: {source}", .path.display())]
    CsvWrite {
        path: PathBuf,
        #[source]
        source: csv::Error,
    },
}

/// The names a restart template may use besides `variant`, `settings` and `env`.
fn known_text(known: &[String]) -> String {
    if known.is_empty() {
        "this variant has no settings".to_string()
    } else {
        known.join(", ")
    }
}

fn connect(target: &Target) -> Result<Box<dyn Connection>, AdminError> {
    Connector::new(target.clone())
        .connect_server(0)
        .map_err(|source| AdminError::Connect {
            endpoint: target.endpoint(0),
            source,
        })
}

/// The target's server administration, if it has a server.
fn admin(target: &Target) -> Option<&'static dyn ServerAdmin> {
    target.driver.dialect().server()
}

/// Why [`check`] refused a variant.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The server could not be reached (nothing is known about the variables).
    #[error("{0}")]
    Unreachable(String),
    /// A variable is unknown, read-only or needs a restart.
    #[error(transparent)]
    Invalid(#[from] ServerError),
}

/// Checks, before anything runs, that every variable exists and can be set at runtime.
pub fn check(target: &Target, set: &IndexMap<String, Value>) -> Result<(), CheckError> {
    for name in set.keys() {
        check_name(name).map_err(ServerError::from)?;
    }
    let mut conn = connect(target).map_err(|e| CheckError::Unreachable(e.to_string()))?;
    let admin = admin(target);
    let result = (|| {
        for name in set.keys() {
            admin
                .ok_or(ServerError::NoServer)?
                .check_settable(conn.as_mut(), name)?;
        }
        Ok(())
    })();
    conn.close();
    result.map_err(CheckError::Invalid)
}

/// Which of `names` the target's server can set at runtime: for each, `None`, or why not (an
/// unknown name, a read-only variable, one that needs a restart), on one connection.
pub fn settable(target: &Target, names: &[String]) -> Result<Vec<Option<String>>, CheckError> {
    let admin = admin(target).ok_or(ServerError::NoServer)?;
    let mut conn = connect(target).map_err(|e| CheckError::Unreachable(e.to_string()))?;
    let out = names
        .iter()
        .map(|name| {
            check_name(name)
                .map_err(|e| e.to_string())
                .and_then(|()| {
                    admin
                        .check_settable(conn.as_mut(), name)
                        .map_err(|e| e.to_string())
                })
                .err()
        })
        .collect();
    conn.close();
    Ok(out)
}

/// `server/restore-<variant>.json`, or `restore-<variant>@<stage>.json` for a stage's settings.
fn restore_file(run_dir: &Path, variant: &str, stage: Option<Stage>) -> PathBuf {
    let stage = stage.map(|s| format!("@{s}")).unwrap_or_default();
    run_dir.join("server").join(format!(
        "restore-{}{stage}.json",
        crate::results::sanitise_name(variant)
    ))
}

/// Saves the originals, sets every variable, reads each back. On an error after some were
/// set, the ones set are restored before returning it.
/// `restart` is what an already applied `restart` of the same variant must undo; it is kept in
/// the restore file. `stage`: `v` holds the settings of that stage of the variant (#28),
/// saved in a restore file of their own.
pub fn apply(
    target: &Target,
    variant: &str,
    stage: Option<Stage>,
    v: &VariantSettings,
    run_dir: &Path,
    restart: Option<RestartSaved>,
) -> Result<Saved, ServerError> {
    let mut conn = connect(target)?;
    let result = apply_on(conn.as_mut(), target, (variant, stage), v, run_dir, restart);
    conn.close();
    result
}

fn apply_on(
    conn: &mut dyn Connection,
    target: &Target,
    (variant, stage): (&str, Option<Stage>),
    v: &VariantSettings,
    run_dir: &Path,
    restart: Option<RestartSaved>,
) -> Result<Saved, ServerError> {
    let set = &v.set_global;
    let mut saved = Saved {
        variant: variant.to_string(),
        originals: Vec::new(),
        restart,
        statements: Vec::new(),
        stage,
    };
    let admin = admin(target);
    for name in set.keys() {
        check_name(name)?;
        let original = admin.ok_or(ServerError::NoServer)?.original(conn, name)?;
        saved.originals.push((name.clone(), original));
    }
    let sql = match &v.sql {
        Some(sql) => Some(SqlChange::read(conn, target, variant, &v.settings, sql)?),
        None => None,
    };
    if let Some(sql) = &sql {
        saved.statements = sql.restore_all();
    }
    let effective = match admin {
        Some(a) => a.before_set(conn, &set.keys().map(String::as_str).collect::<Vec<_>>())?,
        None => Vec::new(),
    };
    let file = restore_file(run_dir, variant, stage);
    write_saved(&file, &saved)?;
    let mut done = 0;
    let result = (|| {
        let Some(admin) = admin else {
            return if set.is_empty() {
                Ok(())
            } else {
                Err(ServerError::NoServer)
            };
        };
        for (name, value) in set {
            admin.set(conn, name, value)?;
            done += 1;
            if admin.deferred() {
                continue;
            }
            let back = admin
                .read_back(conn, name)
                .map_err(|source| ServerError::ReadBack {
                    name: name.clone(),
                    source,
                })?;
            if !admin.matches(value, back.as_deref()) {
                return Err(ServerError::SetOtherwise {
                    name: name.clone(),
                    actual: back.as_deref().unwrap_or("NULL").to_string(),
                    wanted: value_text(value),
                });
            }
        }
        Ok(admin.commit(conn, &effective, &mut || connect(target))?)
    })()
    .and_then(|()| match &sql {
        Some(sql) => sql.apply(conn, run_dir),
        None => Ok(()),
    });
    if let Err(e) = result {
        if done > 0 {
            let partial = Saved {
                variant: saved.variant.clone(),
                originals: saved.originals[..done.min(saved.originals.len())].to_vec(),
                restart: None,
                statements: Vec::new(),
                stage,
            };
            if let Err(r) = restore_on(conn, target, &partial) {
                return Err(ServerError::RestoreFailedToo {
                    error: Box::new(e),
                    restore: Box::new(r),
                    run_dir: run_dir.to_path_buf(),
                });
            }
        }
        let _ = std::fs::remove_file(&file);
        return Err(e);
    }
    Ok(saved)
}

/// Sets every saved variable back, then undoes a restart variant's config file (and restarts).
pub fn restore(target: &Target, saved: &Saved) -> Result<(), ServerError> {
    if !saved.originals.is_empty() || !saved.statements.is_empty() {
        let mut conn = connect(target)?;
        // The `sql` settings were applied last: they go back first.
        let r = run_all(conn.as_mut(), &saved.statements).and_then(|()| {
            if saved.originals.is_empty() {
                Ok(())
            } else {
                restore_on(conn.as_mut(), target, saved)
            }
        });
        conn.close();
        r?;
    }
    if let Some(r) = &saved.restart {
        undo_restart(target, r)?;
    }
    Ok(())
}

fn restore_on(
    conn: &mut dyn Connection,
    target: &Target,
    saved: &Saved,
) -> Result<(), ServerError> {
    let admin = admin(target);
    for (name, original) in &saved.originals {
        check_name(name)?;
        let Some(admin) = admin else {
            return Ok(());
        };
        conn.query(&admin.restore_sql(name, original.as_deref()))
            .map_err(|source| ServerError::Restoring {
                name: name.clone(),
                source,
            })?;
    }
    match admin {
        Some(a) => Ok(a.after_restore(conn)?),
        None => Ok(()),
    }
}

/// Runs `statements` in order, stopping at the first that fails.
fn run_all(conn: &mut dyn Connection, statements: &[String]) -> Result<(), ServerError> {
    for s in statements {
        conn.query(s).map_err(|source| ServerError::RestoringWith {
            statement: s.clone(),
            source,
        })?;
    }
    Ok(())
}

/// How long a read-back that differs is read again: a reload (`sql.after`) and cluster
/// parameters (OceanBase spreads them to every server) take effect asynchronously.
const SETTLE: Duration = Duration::from_secs(5);

/// A variant's `settings` + `sql`, rendered for the target once the originals were read.
struct SqlChange<'a> {
    sql: &'a RawSqlSettings,
    variant: &'a str,
    /// Per setting: name, wanted value, apply statement, restore statement.
    settings: Vec<(&'a str, &'a Value, String, String)>,
    after: Option<String>,
}

/// The values `read` finds for `name` (one per row naming it).
fn read_values(
    conn: &mut dyn Connection,
    sql: &RawSqlSettings,
    variant: &str,
    name: &str,
) -> Result<Vec<Option<String>>, ServerError> {
    let query = sql_settings::render(sql.templates(), Which::Read, variant, name, None)?;
    let table = match conn.query_table(&query) {
        Ok(table) => table,
        Err(source) => {
            return Err(ServerError::ReadWith {
                name: name.to_string(),
                query,
                source,
            });
        }
    };
    sql_settings::values(&table, sql.column.as_deref(), name).map_err(|source| {
        ServerError::ReadAnswer {
            name: name.to_string(),
            query,
            source,
        }
    })
}

impl<'a> SqlChange<'a> {
    /// Reads every setting's value before anything changes and renders the statements.
    fn read(
        conn: &mut dyn Connection,
        target: &Target,
        variant: &'a str,
        settings: &'a IndexMap<String, Value>,
        sql: &'a RawSqlSettings,
    ) -> Result<SqlChange<'a>, ServerError> {
        let literal = sql_settings::string_literal(admin(target));
        if admin(target).is_none() {
            return Err(ServerError::NoServer);
        }
        let mut out = Vec::new();
        for (name, value) in settings {
            check_name(name)?;
            let original = read_values(conn, sql, variant, name)?.swap_remove(0);
            let wanted = sql_settings::literal(value, &literal);
            let apply =
                sql_settings::render(sql.templates(), Which::Apply, variant, name, Some(&wanted))?;
            let back = sql_settings::original_literal(original.as_deref(), &literal);
            let restore =
                sql_settings::render(sql.templates(), Which::Restore, variant, name, Some(&back))?;
            out.push((name.as_str(), value, apply, restore));
        }
        let after = match sql.after {
            Some(_) => Some(sql_settings::render(
                sql.templates(),
                Which::After,
                variant,
                "",
                None,
            )?),
            None => None,
        };
        Ok(SqlChange {
            sql,
            variant,
            settings: out,
            after,
        })
    }

    /// The restore statements of the first `n` settings, then `after`.
    fn restore_first(&self, n: usize) -> Vec<String> {
        self.settings[..n]
            .iter()
            .map(|s| s.3.clone())
            .chain(self.after.clone())
            .collect()
    }

    fn restore_all(&self) -> Vec<String> {
        self.restore_first(self.settings.len())
    }

    /// Applies every setting, runs `after`, reads each back (unless `check = false`). On an
    /// error after something changed, the settings changed so far are restored first.
    fn apply(&self, conn: &mut dyn Connection, run_dir: &Path) -> Result<(), ServerError> {
        let mut done = 0;
        let result = (|| {
            for (name, _, apply, _) in &self.settings {
                conn.query(apply).map_err(|source| ServerError::SetWith {
                    name: name.to_string(),
                    statement: apply.clone(),
                    source,
                })?;
                done += 1;
            }
            if let Some(after) = &self.after {
                conn.query(after).map_err(|source| ServerError::After {
                    statement: after.clone(),
                    source,
                })?;
            }
            if self.sql.check {
                self.check(conn)?;
            }
            Ok(())
        })();
        if let Err(e) = result {
            if done > 0
                && let Err(r) = run_all(conn, &self.restore_first(done))
            {
                return Err(ServerError::RestoreFailedToo {
                    error: Box::new(e),
                    restore: Box::new(r),
                    run_dir: run_dir.to_path_buf(),
                });
            }
            return Err(e);
        }
        Ok(())
    }

    /// Reads every setting back: each row naming it must hold the wanted value.
    fn check(&self, conn: &mut dyn Connection) -> Result<(), ServerError> {
        let deadline = Instant::now() + SETTLE;
        for (name, value, apply, _) in &self.settings {
            loop {
                let back = read_values(conn, self.sql, self.variant, name)?;
                let wrong = back
                    .iter()
                    .find(|b| !sql_settings::matches(value, b.as_deref()));
                let Some(wrong) = wrong else {
                    break;
                };
                if Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(100));
                    continue;
                }
                return Err(ServerError::ReportsOtherwise {
                    statement: apply.clone(),
                    name: name.to_string(),
                    actual: wrong.as_deref().unwrap_or("NULL").to_string(),
                    wanted: value_text(value),
                });
            }
        }
        Ok(())
    }
}

/// Checks, changing nothing, that `read` finds every setting of a variant's `sql` on the
/// server (`validate` and `run` before anything runs).
pub fn check_sql(
    target: &Target,
    variant: &str,
    settings: &IndexMap<String, Value>,
    sql: &RawSqlSettings,
) -> Result<(), CheckError> {
    let mut conn = connect(target).map_err(|e| CheckError::Unreachable(e.to_string()))?;
    let result = SqlChange::read(conn.as_mut(), target, variant, settings, sql).map(|_| ());
    conn.close();
    result.map_err(CheckError::Invalid)
}

/// Applies a `restart` variant: saves how to undo it, renders the template to `path` (saving a
/// file already there), runs the restart command, waits until the server accepts connections
/// and reads every `settings` value back. On an error after the file was written, the change
/// is undone (file removed or put back, server restarted) before returning it.
pub fn apply_restart(
    target: &Target,
    variant: &str,
    restart: &RawRestart,
    base_dir: &Path,
    run_dir: &Path,
) -> Result<RestartSaved, ServerError> {
    let text = render_template(variant, restart, base_dir)?;
    let path = PathBuf::from(&restart.path);
    let backup = if path.exists() {
        let b = run_dir.join("server").join(format!(
            "restart-{}.orig",
            crate::results::sanitise_name(variant)
        ));
        std::fs::create_dir_all(b.parent().unwrap_or(run_dir)).map_err(|source| {
            ServerError::File {
                action: format!("creating {}", run_dir.display()),
                source,
            }
        })?;
        std::fs::copy(&path, &b).map_err(|source| ServerError::File {
            action: format!("saving {} to {}", path.display(), b.display()),
            source,
        })?;
        Some(b)
    } else {
        None
    };
    let saved = RestartSaved {
        path: path.clone(),
        backup,
        command: restart.command.clone(),
        ready_timeout: restart.ready_timeout,
    };
    let file = restore_file(run_dir, variant, None);
    write_saved(
        &file,
        &Saved {
            variant: variant.to_string(),
            originals: Vec::new(),
            restart: Some(saved.clone()),
            statements: Vec::new(),
            stage: None,
        },
    )?;
    let result = (|| {
        std::fs::write(&path, &text).map_err(|source| ServerError::WriteConfig {
            path: path.clone(),
            source,
        })?;
        run_command(&restart.command, restart.ready_timeout)?;
        wait_ready(target, restart.ready_timeout)?;
        verify(target, &restart.settings)
    })();
    if let Err(e) = result {
        // Owed even when a stop request broke the restart: the first signal must not leave
        // the server stopped or on the variant's file.
        let undone = crate::db::interrupt::shielded(|| undo_restart(target, &saved));
        if let Err(u) = undone {
            return Err(ServerError::UndoFailedToo {
                error: Box::new(e),
                undo: Box::new(u),
                path,
            });
        }
        let _ = std::fs::remove_file(&file);
        return Err(e);
    }
    Ok(saved)
}

/// Renders a restart variant's template strictly: it sees `variant`, `settings`, each setting
/// by name and `env` (the process environment); a name it uses that none of these defines, or
/// an unset `env.X`, is an error naming it (#14) — a typo must not write an empty value into
/// the server's configuration. [`check_offline`](super::command::check_offline) renders it
/// once before anything runs, so these errors come from `validate`, `plan` and `run` at once.
pub(crate) fn render_template(
    variant: &str,
    restart: &RawRestart,
    base_dir: &Path,
) -> Result<String, ServerError> {
    let mut file = PathBuf::from(&restart.template);
    if !file.exists() && file.is_relative() && base_dir.join(&file).exists() {
        file = base_dir.join(&file);
    }
    let source =
        std::fs::read_to_string(&file).map_err(|source| ServerError::TemplateUnreadable {
            template: restart.template.clone(),
            source,
        })?;
    let mut jinja = minijinja::Environment::new();
    jinja.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    let template = jinja
        .template_from_str(&source)
        .map_err(|source| ServerError::Template {
            file: file.clone(),
            source,
        })?;
    let settings: BTreeMap<String, String> = restart
        .settings
        .iter()
        .map(|(k, v)| (k.clone(), value_text(v)))
        .collect();
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let mut ctx: BTreeMap<String, minijinja::Value> = settings
        .iter()
        .map(|(k, v)| (k.clone(), minijinja::Value::from(v.clone())))
        .collect();
    ctx.insert("variant".into(), minijinja::Value::from(variant));
    ctx.insert("settings".into(), minijinja::Value::from(settings.clone()));
    ctx.insert("env".into(), minijinja::Value::from(env.clone()));
    template.render(&ctx).map_err(|e| {
        let mut unset = Vec::new();
        let mut undefined = Vec::new();
        for name in template.undeclared_variables(true) {
            match name.strip_prefix("env.") {
                Some(var) if !env.contains_key(var) => unset.push(var.to_string()),
                Some(_) => {}
                None => {
                    let top = name.split('.').next().unwrap_or(&name);
                    if !ctx.contains_key(top) {
                        undefined.push(format!("`{top}`"));
                    }
                }
            }
        }
        unset.sort();
        undefined.sort();
        undefined.dedup();
        let file = file.clone();
        if !unset.is_empty() {
            ServerError::TemplateEnv {
                file,
                vars: unset,
                source: e,
            }
        } else if !undefined.is_empty() {
            ServerError::TemplateUndefined {
                file,
                names: undefined,
                known: settings.keys().cloned().collect(),
                source: e,
            }
        } else {
            ServerError::Template { file, source: e }
        }
    })
}

/// Runs `command` with `sh -c` ([`super::shell`]: its own process group, killed by a stop
/// request), failing on a non-zero exit or after `timeout_s` seconds.
fn run_command(command: &str, timeout_s: u64) -> Result<(), ServerError> {
    let timeout_s = timeout_s.max(1);
    let (ended, output) =
        super::shell::run(command, Duration::from_secs(timeout_s)).map_err(ServerError::Shell)?;
    match ended {
        super::shell::Ended::Exited(status) if status.success() => Ok(()),
        super::shell::Ended::Exited(status) => Err(ServerError::CommandFailed {
            command: command.to_string(),
            status,
            output: String::from_utf8_lossy(&output).trim().to_string(),
        }),
        super::shell::Ended::TimedOut => Err(ServerError::CommandTimedOut {
            command: command.to_string(),
            secs: timeout_s,
        }),
        super::shell::Ended::Interrupted => Err(ServerError::CommandStopped(command.to_string())),
    }
}

/// Waits until the server accepts a connection (and a query), at most `timeout_s` seconds.
fn wait_ready(target: &Target, timeout_s: u64) -> Result<(), ServerError> {
    let deadline = Instant::now() + Duration::from_secs(timeout_s.max(1));
    loop {
        let attempt = Connector::new(target.clone())
            .connect_server(0)
            .and_then(|mut c| {
                let r = c.query_i64("SELECT 1");
                c.close();
                r
            });
        match attempt {
            Ok(_) => return Ok(()),
            // A stop request: waiting longer would only delay the restore.
            Err(e) if crate::db::interrupt::breaking() => {
                return Err(ServerError::StoppedWaiting(e));
            }
            Err(source) if Instant::now() > deadline => {
                return Err(ServerError::NotReady {
                    secs: timeout_s,
                    source,
                });
            }
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// Reads every setting back after a restart.
fn verify(target: &Target, settings: &IndexMap<String, Value>) -> Result<(), ServerError> {
    if settings.is_empty() {
        return Ok(());
    }
    let mut conn = connect(target)?;
    let result = (|| {
        for (name, value) in settings {
            check_name(name)?;
            let Some(admin) = admin(target) else {
                return Ok(());
            };
            let back =
                admin
                    .read_back(conn.as_mut(), name)
                    .map_err(|source| ServerError::ReadBack {
                        name: name.clone(),
                        source,
                    })?;
            let ok = admin.matches(value, back.as_deref());
            if !ok {
                return Err(ServerError::RestartedOtherwise {
                    name: name.clone(),
                    actual: back.as_deref().unwrap_or("NULL").to_string(),
                    wanted: value_text(value),
                });
            }
        }
        Ok(())
    })();
    conn.close();
    result
}

/// Removes the rendered file (or puts the saved one back), restarts, waits for the server.
fn undo_restart(target: &Target, r: &RestartSaved) -> Result<(), ServerError> {
    match &r.backup {
        Some(b) => std::fs::copy(b, &r.path)
            .map(|_| ())
            .map_err(|source| ServerError::File {
                action: format!("putting {} back failed", r.path.display()),
                source,
            })?,
        None => match std::fs::remove_file(&r.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(ServerError::File {
                    action: format!("removing {} failed", r.path.display()),
                    source,
                });
            }
        },
    }
    run_command(&r.command, r.ready_timeout)?;
    wait_ready(target, r.ready_timeout)
}

/// Restores and removes the variant's restore file.
pub fn restore_and_forget(
    target: &Target,
    saved: &Saved,
    run_dir: &Path,
) -> Result<(), ServerError> {
    restore(target, saved)?;
    let _ = std::fs::remove_file(restore_file(run_dir, &saved.variant, saved.stage));
    Ok(())
}

fn write_saved(file: &Path, saved: &Saved) -> Result<(), ServerError> {
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|source| ServerError::File {
        action: format!("creating {}", dir.display()),
        source,
    })?;
    let text = serde_json::to_string_pretty(saved).map_err(ServerError::Encode)?;
    let tmp = file.with_extension("json.tmp");
    std::fs::write(&tmp, text).map_err(|source| ServerError::File {
        action: format!("writing {}", tmp.display()),
        source,
    })?;
    if let Ok(f) = std::fs::File::open(&tmp) {
        let _ = f.sync_all();
    }
    std::fs::rename(&tmp, file).map_err(|source| ServerError::File {
        action: format!("writing {}", file.display()),
        source,
    })
}

/// The restore files a run left behind (a variant that never got restored).
pub fn pending(run_dir: &Path) -> Result<Vec<(PathBuf, Saved)>, ServerError> {
    let dir = run_dir.join("server");
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(source) => {
            return Err(ServerError::File {
                action: format!("reading {}", dir.display()),
                source,
            });
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("restore-") && name.ends_with(".json") {
            let text = std::fs::read_to_string(&path).map_err(|source| ServerError::File {
                action: format!("reading {}", path.display()),
                source,
            })?;
            let saved: Saved =
                serde_json::from_str(&text).map_err(|source| ServerError::NotARestoreFile {
                    path: path.clone(),
                    source,
                })?;
            out.push((path, saved));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// A setting a variant's `sql` changes, for [`capture`]: read with `sql.read` as rendered for
/// `variant` (the variant that sets it).
#[derive(Clone, Copy, Debug)]
pub struct SqlRead<'a> {
    pub variant: &'a str,
    pub name: &'a str,
    pub sql: &'a RawSqlSettings,
}

/// Writes the server's effective variables and version to `server/<variant>.csv`
/// (`name,value`, sorted as the server lists them), then its parameters when it has some
/// besides its variables ([`ServerAdmin::parameters_sql`]: OceanBase's `SHOW PARAMETERS`, named
/// `parameter:<name>`, [`crate::results::load::PARAMETER`]), then every setting of `reads`
/// (each `sql` variant's settings, read with its `read` query, so that every variant's capture
/// has the value the others change) not captured already, also as `parameter:<name>`, then the
/// host facts its variables lack ([`ServerAdmin::host_facts_sql`]): the server side of what
/// `host.json` records for the client, read back by `compare`
/// ([`crate::compare::setup::SERVER_FACTS`]). [`CheckError::Unreachable`] when no connection
/// could be opened at all, so that the runner does not wait for it again.
pub fn capture(
    target: &Target,
    variant: &str,
    run_dir: &Path,
    reads: &[SqlRead<'_>],
) -> Result<PathBuf, CheckError> {
    let conn = Connector::new(target.clone())
        .connect_server(0)
        .map_err(|source| {
            let unreachable = source.host_unreachable();
            let e = AdminError::Connect {
                endpoint: target.endpoint(0),
                source,
            };
            if unreachable {
                CheckError::Unreachable(e.to_string())
            } else {
                CheckError::Invalid(e.into())
            }
        })?;
    capture_on(conn, target, variant, run_dir, reads).map_err(CheckError::Invalid)
}

/// One value for the rows of a setting that lists it once per server: the value when they
/// agree, else `server=value` for each (`server`: the row's `svr_ip:svr_port`, or its number).
fn one_value(rows: &[(String, String)]) -> String {
    let first = rows.first().map(|r| r.1.clone()).unwrap_or_default();
    if rows.iter().all(|r| r.1 == first) {
        return first;
    }
    rows.iter()
        .map(|(server, value)| format!("{server}={value}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The answer of a `parameters_sql` query: `(name, value)` in the server's order, one per
/// name ([`one_value`] of its rows).
fn parameter_rows(table: &crate::db::conn::Table) -> Vec<(String, String)> {
    let col = |name: &str| {
        table
            .columns
            .iter()
            .position(|c| c.eq_ignore_ascii_case(name))
    };
    let (Some(name), Some(value)) = (col("name"), col("value")) else {
        return Vec::new();
    };
    let (ip, port) = (col("svr_ip"), col("svr_port"));
    let cell = |r: &Vec<Option<String>>, i: Option<usize>| {
        i.and_then(|i| r.get(i).cloned().flatten())
            .unwrap_or_default()
    };
    let mut by_name: IndexMap<String, Vec<(String, String)>> = IndexMap::new();
    for (n, r) in table.rows.iter().enumerate() {
        let server = match (ip, port) {
            (Some(_), Some(_)) => format!("{}:{}", cell(r, ip), cell(r, port)),
            _ => format!("server {}", n + 1),
        };
        by_name
            .entry(cell(r, Some(name)))
            .or_default()
            .push((server, cell(r, Some(value))));
    }
    by_name
        .into_iter()
        .map(|(n, rows)| (n, one_value(&rows)))
        .collect()
}

fn capture_on(
    mut conn: Box<dyn Connection>,
    target: &Target,
    variant: &str,
    run_dir: &Path,
    reads: &[SqlRead<'_>],
) -> Result<PathBuf, ServerError> {
    use crate::results::load::PARAMETER;
    let Some(admin) = admin(target) else {
        conn.close();
        return Err(ServerError::NothingToCapture);
    };
    let (version_sql, vars_sql) = admin.capture_sql();
    let rows = (|| {
        let version = first_value(conn.as_mut(), version_sql)?.unwrap_or_default();
        let parameters_sql = admin.parameters_sql(&version);
        let mut rows = vec![("version".to_string(), version)];
        for r in conn.query_rows(vars_sql)? {
            let mut it = r.into_iter();
            let name = it.next().flatten().unwrap_or_default();
            let value = it.next().flatten().unwrap_or_default();
            rows.push((name, value));
        }
        if let Some(sql) = parameters_sql {
            let table = conn.query_table(sql)?;
            rows.extend(
                parameter_rows(&table)
                    .into_iter()
                    .map(|(n, v)| (format!("{PARAMETER}{n}"), v)),
            );
        }
        for read in reads {
            let key = format!("{PARAMETER}{}", read.name);
            if rows.iter().any(|(n, _)| *n == key || n == read.name) {
                continue;
            }
            let value = match read_values(conn.as_mut(), read.sql, read.variant, read.name) {
                Ok(values) => {
                    let rows: Vec<(String, String)> = values
                        .into_iter()
                        .enumerate()
                        .map(|(i, v)| (format!("row {}", i + 1), v.unwrap_or_default()))
                        .collect();
                    one_value(&rows)
                }
                Err(e) => format!("unreadable: {e}"),
            };
            rows.push((key, value));
        }
        for (name, sql) in admin.host_facts_sql() {
            let value = match first_value(conn.as_mut(), sql) {
                Ok(v) => v.unwrap_or_default(),
                Err(e) => format!("unreadable: {e}"),
            };
            rows.push((name.to_string(), value));
        }
        Ok::<_, SqlError>(rows)
    })();
    conn.close();
    let rows = rows.map_err(ServerError::Capture)?;
    let dir = run_dir.join("server");
    std::fs::create_dir_all(&dir).map_err(|source| ServerError::File {
        action: format!("creating {}", dir.display()),
        source,
    })?;
    let path = dir.join(format!("{}.csv", crate::results::sanitise_name(variant)));
    let mut w = csv::Writer::from_path(&path).map_err(|source| ServerError::CsvOpen {
        path: path.clone(),
        source,
    })?;
    let mut write = || -> Result<(), csv::Error> {
        w.write_record(["name", "value"])?;
        for (n, v) in &rows {
            w.write_record([n, v])?;
        }
        w.flush()?;
        Ok(())
    };
    write().map_err(|source| ServerError::CsvWrite {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_templates_see_the_variant_and_its_settings() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("t.j2"),
            "# {{ variant }}\n[mysqld]\ninnodb_log_file_size = {{ innodb_log_file_size }}\n{{ settings.innodb_log_file_size }}",
        )
        .unwrap();
        let mut settings = IndexMap::new();
        settings.insert("innodb_log_file_size".to_string(), Value::Str("2G".into()));
        let r = RawRestart {
            template: "t.j2".into(),
            path: "/x".into(),
            command: "true".into(),
            ready_timeout: 1,
            settings,
        };
        let text = render_template("redo-2g", &r, dir.path()).unwrap();
        assert_eq!(text, "# redo-2g\n[mysqld]\ninnodb_log_file_size = 2G\n2G");
        let missing = RawRestart {
            template: "nope.j2".into(),
            ..r
        };
        let e = render_template("v", &missing, dir.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("restart template nope.j2 cannot be read"), "{e}");
    }

    #[test]
    fn restart_templates_refuse_undefined_names_and_unset_environment_variables() {
        let dir = tempfile::tempdir().unwrap();
        let restart = |text: &str| {
            std::fs::write(dir.path().join("t.j2"), text).unwrap();
            let mut settings = IndexMap::new();
            settings.insert("innodb_log_file_size".to_string(), Value::Str("2G".into()));
            RawRestart {
                template: "t.j2".into(),
                path: "/x".into(),
                command: "true".into(),
                ready_timeout: 1,
                settings,
            }
        };
        // A typo would otherwise write `innodb_log_file_size = ` into the server's file.
        let e = render_template("v", &restart("x = {{ innodb_log_fle_size }}"), dir.path())
            .unwrap_err()
            .to_string();
        let file = dir.path().join("t.j2");
        assert_eq!(
            e,
            format!(
                "restart template {} uses `innodb_log_fle_size`, which is not defined: templates see variant, settings, env and each setting by name (innodb_log_file_size)",
                file.display()
            )
        );
        let e = render_template(
            "v",
            &restart("datadir = {{ env.SBSUITE_TEST_SURELY_UNSET_VAR }}"),
            dir.path(),
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            format!(
                "restart template {} reads environment variable SBSUITE_TEST_SURELY_UNSET_VAR which is not set: export it (or write {{{{ env.SBSUITE_TEST_SURELY_UNSET_VAR | default('') }}}})",
                file.display()
            )
        );
        let with_default = "d = {{ env.SBSUITE_TEST_SURELY_UNSET_VAR | default('none') }}";
        assert_eq!(
            render_template("v", &restart(with_default), dir.path()).unwrap(),
            "d = none"
        );
        // PATH is set in every test environment.
        let path = std::env::var("PATH").unwrap();
        assert_eq!(
            render_template("v", &restart("p = {{ env.PATH }}"), dir.path()).unwrap(),
            format!("p = {path}")
        );
    }

    #[test]
    fn a_failing_or_slow_command_is_an_error_with_its_output() {
        let e = run_command("echo boom >&2; exit 3", 5)
            .unwrap_err()
            .to_string();
        assert!(e.contains("failed") && e.contains("boom"), "{e}");
        let e = run_command("sleep 5", 1).unwrap_err().to_string();
        assert!(e.contains("did not finish within 1 s"), "{e}");
        assert!(run_command("true", 5).is_ok());
    }
}
