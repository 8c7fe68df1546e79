//! The settings two variants differ in, and the variant that applies some of them on top of the
//! baseline.
//!
//! A setting is one name in one of a variant's maps: `set_global`, `settings` (applied by the
//! variant's `sql`), `restart.settings`, or the same maps of its `prepare` and `run` stages. A
//! name the baseline sets and the other variant does not is a difference too: the probe that
//! takes it leaves the name out, so the server keeps the value it had before the suite (which
//! is what the other variant measured).

use std::fmt;

use indexmap::IndexMap;

use crate::suite::raw::{RawRestart, RawStage, RawVariant, Stage};
use crate::value::Value;

/// Which map of a variant a setting is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `set_global`: set at runtime by the database's own statement.
    SetGlobal,
    /// `settings`: set by the variant's `sql` templates.
    Sql,
    /// `restart.settings`: rendered into the config file, applied by a restart.
    Restart,
}

/// One setting two variants differ in.
#[derive(Clone, Debug, PartialEq)]
pub struct Setting {
    /// `None`: the variant's own maps; `Some`: its `prepare` or `run` table.
    pub stage: Option<Stage>,
    pub kind: Kind,
    pub name: String,
    /// The baseline's value; `None` when it leaves the name to the server.
    pub from: Option<Value>,
    /// The other variant's value; `None` when it leaves the name to the server.
    pub to: Option<Value>,
}

impl Setting {
    /// Its key in a suite file: `set_global.sync_binlog`, `run.settings.x`,
    /// `restart.settings.innodb_buffer_pool_size`.
    pub fn key(&self) -> String {
        let map = match self.kind {
            Kind::SetGlobal => "set_global",
            Kind::Sql => "settings",
            Kind::Restart => "restart.settings",
        };
        match self.stage {
            Some(stage) => format!("{stage}.{map}.{}", self.name),
            None => format!("{map}.{}", self.name),
        }
    }
}

impl fmt::Display for Setting {
    /// `set_global.sync_binlog = 1 → 10` (`(server's)` for a value the variant leaves to the
    /// server).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = |v: &Option<Value>| match v {
            Some(v) => v.to_string(),
            None => "(server's)".to_string(),
        };
        write!(
            f,
            "{} = {} → {}",
            self.key(),
            side(&self.from),
            side(&self.to)
        )
    }
}

/// Why two variants cannot be bisected.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum DiffError {
    #[error(
        "variants `{base}` and `{other}` set the same server settings: there is nothing to bisect"
    )]
    Same { base: String, other: String },
    /// The `sql` templates differ: a probe has one set of templates for all its settings.
    #[error(
        "variants `{base}` and `{other}` apply their `settings` with different `sql`{}: bisect \
         applies both variants' settings with one set of statements",
        stage.map(|s| format!(" in [variant.{s}]")).unwrap_or_default()
    )]
    DifferentSql {
        base: String,
        other: String,
        stage: Option<Stage>,
    },
    /// The restart template, path or command differ (not just the settings it renders).
    #[error(
        "variants `{base}` and `{other}` restart the server differently (template, path or \
         command): bisect changes the settings a restart renders, with one template"
    )]
    DifferentRestart { base: String, other: String },
}

/// The settings `other` changes relative to `base`, in the order the files write them (the
/// baseline's names first).
pub fn differences(base: &RawVariant, other: &RawVariant) -> Result<Vec<Setting>, DiffError> {
    let mut out = Vec::new();
    let names = || (base.name.clone(), other.name.clone());
    maps(
        &mut out,
        None,
        Kind::SetGlobal,
        &base.set_global,
        &other.set_global,
    );
    maps(&mut out, None, Kind::Sql, &base.settings, &other.settings);
    if out.iter().any(|s| s.kind == Kind::Sql) && !same_sql(&base.sql, &other.sql) {
        let (base, other) = names();
        return Err(DiffError::DifferentSql {
            base,
            other,
            stage: None,
        });
    }
    let empty = IndexMap::new();
    match (&base.restart, &other.restart) {
        (Some(a), Some(b)) if !same_restart(a, b) => {
            let (base, other) = names();
            return Err(DiffError::DifferentRestart { base, other });
        }
        (a, b) => maps(
            &mut out,
            None,
            Kind::Restart,
            a.as_ref().map_or(&empty, |r| &r.settings),
            b.as_ref().map_or(&empty, |r| &r.settings),
        ),
    }
    for stage in Stage::ALL {
        let default = RawStage::default();
        let a = base.stage(stage).unwrap_or(&default);
        let b = other.stage(stage).unwrap_or(&default);
        let before = out.len();
        maps(
            &mut out,
            Some(stage),
            Kind::SetGlobal,
            &a.set_global,
            &b.set_global,
        );
        maps(&mut out, Some(stage), Kind::Sql, &a.settings, &b.settings);
        let sql_changed = out[before..].iter().any(|s| s.kind == Kind::Sql);
        if sql_changed
            && !same_sql(
                &base.stage_sql(stage).cloned(),
                &other.stage_sql(stage).cloned(),
            )
        {
            let (base, other) = names();
            return Err(DiffError::DifferentSql {
                base,
                other,
                stage: Some(stage),
            });
        }
    }
    if out.is_empty() {
        let (base, other) = names();
        return Err(DiffError::Same { base, other });
    }
    Ok(out)
}

/// Appends the names whose values differ between `a` and `b` (a name only one side sets
/// differs).
fn maps(
    out: &mut Vec<Setting>,
    stage: Option<Stage>,
    kind: Kind,
    a: &IndexMap<String, Value>,
    b: &IndexMap<String, Value>,
) {
    let names = a.keys().chain(b.keys().filter(|k| !a.contains_key(*k)));
    for name in names {
        let (from, to) = (a.get(name), b.get(name));
        if from != to {
            out.push(Setting {
                stage,
                kind,
                name: name.clone(),
                from: from.cloned(),
                to: to.cloned(),
            });
        }
    }
}

/// Whether two `sql` tables would apply a setting the same way (a side without one borrows
/// the other's).
fn same_sql(
    a: &Option<crate::suite::raw::RawSqlSettings>,
    b: &Option<crate::suite::raw::RawSqlSettings>,
) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => {
            (&a.apply, &a.read, &a.column, &a.restore, &a.after, a.check)
                == (&b.apply, &b.read, &b.column, &b.restore, &b.after, b.check)
        }
        _ => true,
    }
}

fn same_restart(a: &RawRestart, b: &RawRestart) -> bool {
    (&a.template, &a.path, &a.command, a.ready_timeout)
        == (&b.template, &b.path, &b.command, b.ready_timeout)
}

/// The baseline with `subset`'s values of the other variant, named `name`: each setting takes
/// the other variant's value, or leaves the name to the server when the other variant does.
/// Templates (`sql`, `restart`) the baseline lacks are borrowed from the other variant.
pub fn probe(base: &RawVariant, other: &RawVariant, subset: &[&Setting], name: &str) -> RawVariant {
    let mut v = base.clone();
    v.name = name.to_string();
    v.description = Some(format!(
        "{} with {} of {}",
        base.name,
        subset
            .iter()
            .map(|s| s.key())
            .collect::<Vec<_>>()
            .join(", "),
        other.name
    ));
    for s in subset {
        match (s.stage, s.kind) {
            (None, Kind::SetGlobal) => put(&mut v.set_global, s),
            (None, Kind::Sql) => {
                put(&mut v.settings, s);
                if v.sql.is_none() {
                    v.sql.clone_from(&other.sql);
                }
            }
            (None, Kind::Restart) => {
                if v.restart.is_none() {
                    v.restart = other.restart.clone().map(|mut r| {
                        r.settings.clear();
                        r
                    });
                }
                if let Some(r) = &mut v.restart {
                    put(&mut r.settings, s);
                }
            }
            (Some(stage), kind) => {
                let slot = match stage {
                    Stage::Prepare => &mut v.prepare,
                    Stage::Run => &mut v.run,
                };
                let table = slot.get_or_insert_with(RawStage::default);
                match kind {
                    Kind::Sql => {
                        put(&mut table.settings, s);
                        if table.sql.is_none() && base.sql.is_none() {
                            table.sql = other.stage_sql(stage).cloned();
                        }
                    }
                    _ => put(&mut table.set_global, s),
                }
            }
        }
    }
    // A restart the baseline did not have and that renders nothing restarts for nothing.
    if base.restart.is_none() && v.restart.as_ref().is_some_and(|r| r.settings.is_empty()) {
        v.restart = None;
    }
    for stage in [&mut v.prepare, &mut v.run] {
        if stage.as_ref().is_some_and(RawStage::is_empty) {
            *stage = None;
        }
    }
    v
}

fn put(map: &mut IndexMap<String, Value>, s: &Setting) {
    match &s.to {
        Some(value) => {
            map.insert(s.name.clone(), value.clone());
        }
        None => {
            map.shift_remove(&s.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variant(text: &str) -> RawVariant {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn differences_cover_every_map_and_names_set_on_one_side_only() {
        let a = variant(
            r#"name = "strict"
               set_global = { innodb_flush_log_at_trx_commit = 1, sync_binlog = 1, max_connections = 200 }
               run = { set_global = { innodb_lock_wait_timeout = 50 } }"#,
        );
        let b = variant(
            r#"name = "relaxed"
               set_global = { innodb_flush_log_at_trx_commit = 2, max_connections = 200, long_query_time = 5 }
               run = { set_global = { innodb_lock_wait_timeout = 10 } }"#,
        );
        let d = differences(&a, &b).unwrap();
        let text: Vec<String> = d.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "set_global.innodb_flush_log_at_trx_commit = 1 → 2",
                "set_global.sync_binlog = 1 → (server's)",
                "set_global.long_query_time = (server's) → 5",
                "run.set_global.innodb_lock_wait_timeout = 50 → 10",
            ]
        );
        assert_eq!(
            differences(&a, &a),
            Err(DiffError::Same {
                base: "strict".into(),
                other: "strict".into()
            })
        );
    }

    #[test]
    fn a_probe_is_the_baseline_with_the_subset_of_the_other() {
        let a = variant(
            r#"name = "strict"
               set_global = { innodb_flush_log_at_trx_commit = 1, sync_binlog = 1 }"#,
        );
        let b = variant(
            r#"name = "relaxed"
               set_global = { innodb_flush_log_at_trx_commit = 2, long_query_time = 5 }
               run = { set_global = { innodb_lock_wait_timeout = 10 } }"#,
        );
        let d = differences(&a, &b).unwrap();
        let p = probe(&a, &b, &[&d[1], &d[2]], "probe-02");
        assert_eq!(p.name, "probe-02");
        let sg: Vec<(String, String)> = p
            .set_global
            .iter()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect();
        // sync_binlog left to the server, long_query_time taken, the flush setting kept.
        assert_eq!(
            sg,
            [
                (
                    "innodb_flush_log_at_trx_commit".to_string(),
                    "1".to_string()
                ),
                ("long_query_time".to_string(), "5".to_string())
            ]
        );
        assert!(p.run.is_none());
        let p = probe(&a, &b, &[&d[3]], "probe-03");
        assert_eq!(
            p.run.unwrap().set_global["innodb_lock_wait_timeout"],
            Value::Int(10)
        );
        // Every difference applied: the other variant's settings exactly.
        let all: Vec<&Setting> = d.iter().collect();
        let p = probe(&a, &b, &all, "all");
        assert_eq!(p.set_global, b.set_global);
        assert_eq!(
            differences(&b, &p).unwrap_err(),
            DiffError::Same {
                base: "relaxed".into(),
                other: "all".into()
            }
        );
    }

    #[test]
    fn sql_settings_borrow_the_other_variants_statements_but_never_mix_two() {
        let a = variant(r#"name = "a""#);
        let b = variant(
            r#"name = "b"
               settings = { enable_sql_audit = false }
               sql = { apply = "ALTER SYSTEM SET {{ name }} = {{ value }}", read = "SHOW PARAMETERS LIKE '{{ name }}'", column = "value" }"#,
        );
        let d = differences(&a, &b).unwrap();
        assert_eq!(d.len(), 1);
        let p = probe(&a, &b, &[&d[0]], "p");
        assert_eq!(p.sql.unwrap().apply, b.sql.as_ref().unwrap().apply);
        let c = variant(
            r#"name = "c"
               settings = { enable_sql_audit = true }
               sql = { apply = "ALTER SYSTEM SET {{ name }} = {{ value }} TENANT = sys", read = "SHOW PARAMETERS LIKE '{{ name }}'", column = "value" }"#,
        );
        assert!(matches!(
            differences(&b, &c),
            Err(DiffError::DifferentSql { stage: None, .. })
        ));
    }

    #[test]
    fn restart_settings_are_settings_and_a_probe_without_one_does_not_restart() {
        let r = |settings: &str| {
            format!(
                r#"restart = {{ template = "my.cnf.j2", path = "/etc/mysql/conf.d/x.cnf", command = "systemctl restart mariadb", settings = {{ {settings} }} }}"#
            )
        };
        let a = variant("name = \"a\"\nset_global = { sync_binlog = 1 }");
        let b = variant(&format!(
            "name = \"b\"\nset_global = {{ sync_binlog = 0 }}\n{}",
            r("innodb_buffer_pool_size = \"1G\"")
        ));
        let d = differences(&a, &b).unwrap();
        assert_eq!(d[1].key(), "restart.settings.innodb_buffer_pool_size");
        assert!(probe(&a, &b, &[&d[0]], "p").restart.is_none());
        let p = probe(&a, &b, &[&d[1]], "p");
        assert_eq!(p.restart.unwrap().settings.len(), 1);
        let c = variant(&format!(
            "name = \"c\"\n{}",
            r("innodb_buffer_pool_size = \"2G\"").replace("my.cnf.j2", "other.j2")
        ));
        assert!(matches!(
            differences(&b, &c),
            Err(DiffError::DifferentRestart { .. })
        ));
    }
}
