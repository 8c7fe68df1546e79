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
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::db::dialect::{first_value, value_text};
use crate::db::sql_settings::{self, Which, check_name};
use crate::db::{Connection, Connector, ServerAdmin, SqlError, Target};
use crate::suite::raw::{RawRestart, RawSqlSettings};
use crate::value::Value;

/// What a variant changes on the server.
#[derive(Clone, Debug, Default)]
pub struct VariantSettings {
    pub set_global: IndexMap<String, Value>,
    pub restart: Option<RawRestart>,
    /// Settings changed by the suite's own statements (`sql`), applied after `set_global`.
    pub settings: IndexMap<String, Value>,
    pub sql: Option<RawSqlSettings>,
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

fn connect(target: &Target) -> Result<Box<dyn Connection>, String> {
    Connector::new(target.clone())
        .connect_server(0)
        .map_err(|e| format!("cannot connect to {}: {e}", target.endpoint(0)))
}

/// The message of a server setting on a target without a server.
const NO_SERVER: &str = "set_global needs a MySQL/MariaDB or PostgreSQL [target]";

/// The target's server administration, if it has a server.
fn admin(target: &Target) -> Option<&'static dyn ServerAdmin> {
    target.driver.dialect().server()
}

/// Why [`check`] refused a variant.
#[derive(Debug)]
pub enum CheckError {
    /// The server could not be reached (nothing is known about the variables).
    Unreachable(String),
    /// A variable is unknown, read-only or needs a restart.
    Invalid(String),
}

impl std::fmt::Display for CheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckError::Unreachable(m) | CheckError::Invalid(m) => f.write_str(m),
        }
    }
}

/// Checks, before anything runs, that every variable exists and can be set at runtime.
pub fn check(target: &Target, set: &IndexMap<String, Value>) -> Result<(), CheckError> {
    for name in set.keys() {
        check_name(name).map_err(CheckError::Invalid)?;
    }
    let mut conn = connect(target).map_err(CheckError::Unreachable)?;
    let admin = admin(target);
    let result = (|| {
        for name in set.keys() {
            admin
                .ok_or_else(|| NO_SERVER.to_string())?
                .check_settable(conn.as_mut(), name)?;
        }
        Ok(())
    })();
    conn.close();
    result.map_err(CheckError::Invalid)
}

fn restore_file(run_dir: &Path, variant: &str) -> PathBuf {
    run_dir.join("server").join(format!(
        "restore-{}.json",
        crate::results::sanitise_name(variant)
    ))
}

/// Saves the originals, sets every variable, reads each back. On an error after some were
/// set, the ones set are restored before returning it.
/// `restart` is what an already applied `restart` of the same variant must undo; it is kept in
/// the restore file.
pub fn apply(
    target: &Target,
    variant: &str,
    v: &VariantSettings,
    run_dir: &Path,
    restart: Option<RestartSaved>,
) -> Result<Saved, String> {
    let mut conn = connect(target)?;
    let result = apply_on(conn.as_mut(), target, variant, v, run_dir, restart);
    conn.close();
    result
}

fn apply_on(
    conn: &mut dyn Connection,
    target: &Target,
    variant: &str,
    v: &VariantSettings,
    run_dir: &Path,
    restart: Option<RestartSaved>,
) -> Result<Saved, String> {
    let set = &v.set_global;
    let mut saved = Saved {
        variant: variant.to_string(),
        originals: Vec::new(),
        restart,
        statements: Vec::new(),
    };
    let admin = admin(target);
    for name in set.keys() {
        check_name(name)?;
        let original = admin
            .ok_or_else(|| NO_SERVER.to_string())?
            .original(conn, name)?;
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
    let file = restore_file(run_dir, variant);
    write_saved(&file, &saved)?;
    let mut done = 0;
    let result = (|| {
        let Some(admin) = admin else {
            return if set.is_empty() {
                Ok(())
            } else {
                Err(NO_SERVER.to_string())
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
                .map_err(|e| format!("reading back {name} failed: {e}"))?;
            if !admin.matches(value, back.as_deref()) {
                return Err(format!(
                    "the server set {name} to {} instead of {}: use a value it accepts as is",
                    back.as_deref().unwrap_or("NULL"),
                    value_text(value)
                ));
            }
        }
        admin.commit(conn, &effective, &mut || connect(target))
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
            };
            if let Err(r) = restore_on(conn, target, &partial) {
                return Err(format!(
                    "{e}; restoring the original values failed too ({r}): run `sbsuite restore {}`",
                    run_dir.display()
                ));
            }
        }
        let _ = std::fs::remove_file(&file);
        return Err(e);
    }
    Ok(saved)
}

/// Sets every saved variable back, then undoes a restart variant's config file (and restarts).
pub fn restore(target: &Target, saved: &Saved) -> Result<(), String> {
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

fn restore_on(conn: &mut dyn Connection, target: &Target, saved: &Saved) -> Result<(), String> {
    let admin = admin(target);
    for (name, original) in &saved.originals {
        check_name(name)?;
        let Some(admin) = admin else {
            return Ok(());
        };
        conn.query(&admin.restore_sql(name, original.as_deref()))
            .map_err(|e| format!("restoring {name} failed: {e}"))?;
    }
    match admin {
        Some(a) => a.after_restore(conn),
        None => Ok(()),
    }
}

/// Runs `statements` in order, stopping at the first that fails.
fn run_all(conn: &mut dyn Connection, statements: &[String]) -> Result<(), String> {
    for s in statements {
        conn.query(s)
            .map_err(|e| format!("restoring with `{s}` failed: {e}"))?;
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
) -> Result<Vec<Option<String>>, String> {
    let query = sql_settings::render(sql.templates(), Which::Read, variant, name, None)?;
    let table = conn
        .query_table(&query)
        .map_err(|e| format!("reading {name} with `{query}` failed: {e}"))?;
    sql_settings::values(&table, sql.column.as_deref(), name)
        .map_err(|e| format!("reading {name} with `{query}`: {e}"))
}

impl<'a> SqlChange<'a> {
    /// Reads every setting's value before anything changes and renders the statements.
    fn read(
        conn: &mut dyn Connection,
        target: &Target,
        variant: &'a str,
        settings: &'a IndexMap<String, Value>,
        sql: &'a RawSqlSettings,
    ) -> Result<SqlChange<'a>, String> {
        let literal = sql_settings::string_literal(admin(target));
        if admin(target).is_none() {
            return Err(NO_SERVER.to_string());
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
    fn apply(&self, conn: &mut dyn Connection, run_dir: &Path) -> Result<(), String> {
        let mut done = 0;
        let result = (|| {
            for (name, _, apply, _) in &self.settings {
                conn.query(apply)
                    .map_err(|e| format!("setting {name} with `{apply}` failed: {e}"))?;
                done += 1;
            }
            if let Some(after) = &self.after {
                conn.query(after)
                    .map_err(|e| format!("`{after}` (sql.after) failed: {e}"))?;
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
                return Err(format!(
                    "{e}; restoring the original values failed too ({r}): run `sbsuite restore {}`",
                    run_dir.display()
                ));
            }
            return Err(e);
        }
        Ok(())
    }

    /// Reads every setting back: each row naming it must hold the wanted value.
    fn check(&self, conn: &mut dyn Connection) -> Result<(), String> {
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
                return Err(format!(
                    "after `{apply}` the server reports {name} = {} instead of {}: use a value it reports as is, or set `check = false` in the variant's `sql` if it reports this setting in another form",
                    wrong.as_deref().unwrap_or("NULL"),
                    value_text(value)
                ));
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
    let mut conn = connect(target).map_err(CheckError::Unreachable)?;
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
) -> Result<RestartSaved, String> {
    let text = render_template(variant, restart, base_dir)?;
    let path = PathBuf::from(&restart.path);
    let backup = if path.exists() {
        let b = run_dir.join("server").join(format!(
            "restart-{}.orig",
            crate::results::sanitise_name(variant)
        ));
        std::fs::create_dir_all(b.parent().unwrap_or(run_dir))
            .map_err(|e| format!("creating {}: {e}", run_dir.display()))?;
        std::fs::copy(&path, &b)
            .map_err(|e| format!("saving {} to {}: {e}", path.display(), b.display()))?;
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
    let file = restore_file(run_dir, variant);
    write_saved(
        &file,
        &Saved {
            variant: variant.to_string(),
            originals: Vec::new(),
            restart: Some(saved.clone()),
            statements: Vec::new(),
        },
    )?;
    let result = (|| {
        std::fs::write(&path, &text).map_err(|e| {
            format!(
                "writing the config file {} failed: {e} (does the directory exist, may sbsuite write there?)",
                path.display()
            )
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
            return Err(format!(
                "{e}; undoing it failed too ({u}): check {} and the server",
                path.display()
            ));
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
) -> Result<String, String> {
    let mut file = PathBuf::from(&restart.template);
    if !file.exists() && file.is_relative() && base_dir.join(&file).exists() {
        file = base_dir.join(&file);
    }
    let source = std::fs::read_to_string(&file).map_err(|e| {
        format!(
            "restart template {} cannot be read: {e} (paths are relative to the working directory or the suite file)",
            restart.template
        )
    })?;
    let mut jinja = minijinja::Environment::new();
    jinja.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    let template = jinja
        .template_from_str(&source)
        .map_err(|e| format!("restart template {}: {e}", file.display()))?;
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
        let file = file.display();
        if !unset.is_empty() {
            format!(
                "restart template {file} reads environment variable {} which is not set: export it (or write {{{{ env.{} | default('') }}}})",
                unset.join(", "),
                unset[0]
            )
        } else if !undefined.is_empty() {
            let known: Vec<&str> = settings.keys().map(String::as_str).collect();
            format!(
                "restart template {file} uses {}, which is not defined: templates see variant, settings, env and each setting by name ({})",
                undefined.join(", "),
                if known.is_empty() {
                    "this variant has no settings".to_string()
                } else {
                    known.join(", ")
                }
            )
        } else {
            format!("restart template {file}: {e}")
        }
    })
}

/// Runs `command` with `sh -c` ([`super::shell`]: its own process group, killed by a stop
/// request), failing on a non-zero exit or after `timeout_s` seconds.
fn run_command(command: &str, timeout_s: u64) -> Result<(), String> {
    let timeout_s = timeout_s.max(1);
    let (ended, output) = super::shell::run(command, Duration::from_secs(timeout_s))?;
    match ended {
        super::shell::Ended::Exited(status) if status.success() => Ok(()),
        super::shell::Ended::Exited(status) => Err(format!(
            "`{command}` failed ({status}): {}",
            String::from_utf8_lossy(&output).trim()
        )),
        super::shell::Ended::TimedOut => {
            Err(format!("`{command}` did not finish within {timeout_s} s"))
        }
        super::shell::Ended::Interrupted => {
            Err(format!("`{command}` was killed by a stop request"))
        }
    }
}

/// Waits until the server accepts a connection (and a query), at most `timeout_s` seconds.
fn wait_ready(target: &Target, timeout_s: u64) -> Result<(), String> {
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
                return Err(format!(
                    "stopped waiting for the server after the restart (stop request): {e}"
                ));
            }
            Err(e) if Instant::now() > deadline => {
                return Err(format!(
                    "the server did not accept connections within {timeout_s} s of the restart: {e} (raise ready_timeout?)"
                ));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// Reads every setting back after a restart.
fn verify(target: &Target, settings: &IndexMap<String, Value>) -> Result<(), String> {
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
            let back = admin
                .read_back(conn.as_mut(), name)
                .map_err(|e| format!("reading back {name} failed: {e}"))?;
            let ok = admin.matches(value, back.as_deref());
            if !ok {
                return Err(format!(
                    "after the restart {name} is {} instead of {}: the server did not read the rendered file (is its directory included by the server's config?)",
                    back.as_deref().unwrap_or("NULL"),
                    value_text(value)
                ));
            }
        }
        Ok(())
    })();
    conn.close();
    result
}

/// Removes the rendered file (or puts the saved one back), restarts, waits for the server.
fn undo_restart(target: &Target, r: &RestartSaved) -> Result<(), String> {
    match &r.backup {
        Some(b) => std::fs::copy(b, &r.path)
            .map(|_| ())
            .map_err(|e| format!("putting {} back failed: {e}", r.path.display()))?,
        None => match std::fs::remove_file(&r.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("removing {} failed: {e}", r.path.display())),
        },
    }
    run_command(&r.command, r.ready_timeout)?;
    wait_ready(target, r.ready_timeout)
}

/// Restores and removes the variant's restore file.
pub fn restore_and_forget(target: &Target, saved: &Saved, run_dir: &Path) -> Result<(), String> {
    restore(target, saved)?;
    let _ = std::fs::remove_file(restore_file(run_dir, &saved.variant));
    Ok(())
}

fn write_saved(file: &Path, saved: &Saved) -> Result<(), String> {
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let text = serde_json::to_string_pretty(saved).map_err(|e| e.to_string())?;
    let tmp = file.with_extension("json.tmp");
    std::fs::write(&tmp, text).map_err(|e| format!("writing {}: {e}", tmp.display()))?;
    if let Ok(f) = std::fs::File::open(&tmp) {
        let _ = f.sync_all();
    }
    std::fs::rename(&tmp, file).map_err(|e| format!("writing {}: {e}", file.display()))
}

/// The restore files a run left behind (a variant that never got restored).
pub fn pending(run_dir: &Path) -> Result<Vec<(PathBuf, Saved)>, String> {
    let dir = run_dir.join("server");
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(format!("reading {}: {e}", dir.display())),
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("restore-") && name.ends_with(".json") {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("reading {}: {e}", path.display()))?;
            let saved: Saved = serde_json::from_str(&text)
                .map_err(|e| format!("{} is not a restore file: {e}", path.display()))?;
            out.push((path, saved));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Writes the server's effective variables and version to `server/<variant>.csv`
/// (`name,value`, sorted as the server lists them), then the host facts its variables lack
/// ([`ServerAdmin::host_facts_sql`]): the server side of what `host.json` records for the
/// client, read back by `compare` ([`crate::compare::setup::SERVER_FACTS`]). [`CheckError::Unreachable`] when no
/// connection could be opened at all, so that the runner does not wait for it again.
pub fn capture(target: &Target, variant: &str, run_dir: &Path) -> Result<PathBuf, CheckError> {
    let conn = Connector::new(target.clone())
        .connect_server(0)
        .map_err(|e| {
            let message = format!("cannot connect to {}: {e}", target.endpoint(0));
            if e.host_unreachable() {
                CheckError::Unreachable(message)
            } else {
                CheckError::Invalid(message)
            }
        })?;
    capture_on(conn, target, variant, run_dir).map_err(CheckError::Invalid)
}

fn capture_on(
    mut conn: Box<dyn Connection>,
    target: &Target,
    variant: &str,
    run_dir: &Path,
) -> Result<PathBuf, String> {
    let Some(admin) = admin(target) else {
        conn.close();
        return Err("no server variables to capture for SQLite".into());
    };
    let (version_sql, vars_sql) = admin.capture_sql();
    let rows = (|| {
        let version = first_value(conn.as_mut(), version_sql)?.unwrap_or_default();
        let mut rows = vec![("version".to_string(), version)];
        for r in conn.query_rows(vars_sql)? {
            let mut it = r.into_iter();
            let name = it.next().flatten().unwrap_or_default();
            let value = it.next().flatten().unwrap_or_default();
            rows.push((name, value));
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
    let rows = rows.map_err(|e| format!("reading the server variables failed: {e}"))?;
    let dir = run_dir.join("server");
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let path = dir.join(format!("{}.csv", crate::results::sanitise_name(variant)));
    let mut w = csv::Writer::from_path(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut write = || -> Result<(), csv::Error> {
        w.write_record(["name", "value"])?;
        for (n, v) in &rows {
            w.write_record([n, v])?;
        }
        w.flush()?;
        Ok(())
    };
    write().map_err(|e| format!("writing {}: {e}", path.display()))?;
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
        let e = render_template("v", &missing, dir.path()).unwrap_err();
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
            .unwrap_err();
        assert!(
            e.contains("uses `innodb_log_fle_size`, which is not defined")
                && e.contains("innodb_log_file_size"),
            "{e}"
        );
        let e = render_template(
            "v",
            &restart("datadir = {{ env.SBSUITE_TEST_SURELY_UNSET_VAR }}"),
            dir.path(),
        )
        .unwrap_err();
        assert!(
            e.contains("environment variable SBSUITE_TEST_SURELY_UNSET_VAR which is not set"),
            "{e}"
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
        let e = run_command("echo boom >&2; exit 3", 5).unwrap_err();
        assert!(e.contains("failed") && e.contains("boom"), "{e}");
        let e = run_command("sleep 5", 1).unwrap_err();
        assert!(e.contains("did not finish within 1 s"), "{e}");
        assert!(run_command("true", 5).is_ok());
    }
}
