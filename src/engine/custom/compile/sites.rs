//! What of a definition is checked after it compiles, once the suite around it is known: SQL
//! texts against the target's driver ([`Loaded::check_drivers`]), and values over options
//! against each run's option values ([`Loaded::check_run`]). The compiler keeps each such
//! value with its file and key path (a site), so the error still points at the line that wrote
//! it.

use std::collections::HashSet;

use super::Loaded;
use crate::db::Driver;
use crate::engine::custom::expr::Expr;
use crate::engine::custom::load::table_rows_at;
use crate::engine::custom::model::{Def, Frame, Sql};
use crate::source::{ConfigError, Seg, path_text};

/// A SQL text of a definition, kept with its position so that a driver without text is
/// reported where the text is.
pub(super) struct SqlSite {
    pub(super) workload: String,
    pub(super) file: usize,
    pub(super) path: Vec<Seg>,
    pub(super) sql: Sql,
}

/// A transaction's `isolation`: refused where it is written when the target's database does
/// not have the level (SQLite has only serializable).
pub(super) struct IsolationSite {
    pub(super) workload: String,
    pub(super) file: usize,
    pub(super) path: Vec<Seg>,
    pub(super) level: crate::db::Isolation,
}

/// A value of a definition that reads options and nothing a run draws: fixed for a run, so
/// the plan evaluates it with each run's options ([`Loaded::check_run`]) and refuses what
/// fails there, at the line that wrote it, before anything runs (#26).
pub(super) struct OptionSite {
    pub(super) workload: String,
    pub(super) file: usize,
    pub(super) path: Vec<Seg>,
    pub(super) check: OptionCheck,
}

pub(super) enum OptionCheck {
    /// An expression over options (a bound, `when`, `repeat`, a check's `expect`…): it must
    /// evaluate.
    Value(Expr),
    /// A bound over options of a generator that takes integers (`generator`): it must be one.
    /// (Bounds over options may be inverted: a range is then read backwards, as TPC-C's
    /// `[1, "warehouses - 1"]` is with one warehouse, where the draw is not used.)
    Int { generator: String, bound: Expr },
    /// A transaction's `weight` over options (#31): a whole number ≥ 0, and not every
    /// transaction 0.
    Weight(Expr),
    /// Load entry `entry`'s `rows` or `per_parent`: with its parents', a count of rows that
    /// `row` (an i64) can number.
    Rows { entry: usize },
}

impl Loaded {
    /// Every SQL text of the workloads in `used` must have text for `driver` (the suite's
    /// target, SQLite without one).
    pub fn check_drivers(
        &self,
        used: &HashSet<String>,
        driver: Driver,
        default_target: bool,
    ) -> Vec<ConfigError> {
        let name = driver.name();
        let whose = if default_target {
            "the driver of the default target (the suite has no [target])"
        } else {
            "the target's driver"
        };
        let isolation = self
            .isolation_sites
            .iter()
            .filter(|s| {
                used.contains(&s.workload)
                    && driver.dialect().begin_at(Some(s.level), true).is_none()
            })
            .map(|s| {
                self.error_at(
                    s.file,
                    &s.path,
                    format!(
                        "workload `{}` sets isolation {}, which {name}, {whose}, does not have{}",
                        s.workload,
                        s.level.sql().to_lowercase(),
                        if driver
                            .dialect()
                            .begin_at(Some(crate::db::Isolation::Serializable), true)
                            .is_some()
                        {
                            ": SQLite runs every transaction serializable"
                        } else {
                            ""
                        }
                    ),
                    format!("remove `isolation` (or choose a level {name} has) to run on {name}"),
                )
            });
        let mut out: Vec<ConfigError> = isolation.collect();
        out.extend(
        self.sites
            .iter()
            .filter(|s| used.contains(&s.workload) && s.sql.for_driver(driver).is_none())
            .map(|s| {
                let have: Vec<&str> = s
                    .sql
                    .iter()
                    .filter(|(_, text)| text.is_some())
                    .map(|(d, _)| d.name())
                    .collect();
                self.error_at(
                    s.file,
                    &s.path,
                    format!(
                        "workload `{}` has no SQL for {name}, {whose} (it has: {})",
                        s.workload,
                        if have.is_empty() {
                            "none".to_string()
                        } else {
                            have.join(", ")
                        }
                    ),
                    format!(
                        "add `{name} = \"…\"` to this table (\"\" runs nothing on {name}), or run the suite on a target whose driver has SQL here"
                    ),
                )
            }),
        );
        out
    }

    /// What of workload `def` fails with a run's `options`, each error at the line that wrote
    /// it: an expression over options that fails for these values (`n / m` with `m = 0`), an
    /// integer generator's bound that is not an integer, a row count that is negative, not an
    /// integer or, times its parents', more than `row` numbers. The plan calls this once per
    /// distinct set of the workload's option values.
    pub fn check_run(&self, def: &Def, options: &crate::value::Options) -> Vec<ConfigError> {
        let frame = def.option_frame(options);
        let mut errors = Vec::new();
        // The paths whose expression failed (a row count that fails is reported once).
        let mut failed: Vec<&[Seg]> = Vec::new();
        let sites = || self.option_sites.iter().filter(|s| s.workload == def.name);
        for site in sites() {
            let refuse =
                |message: String, help: &str| self.error_at(site.file, &site.path, message, help);
            match &site.check {
                OptionCheck::Value(e) => {
                    if let Err(m) = e.eval(&frame) {
                        failed.push(&site.path);
                        errors.push(refuse(
                            format!("{m}{}", values_read(def, &frame, e)),
                            "the expression reads only options, so it fails in every run with these values: fix it, or the options' values",
                        ));
                    }
                }
                OptionCheck::Int { generator, bound } => {
                    // An expression that fails is reported by its own `Value` site.
                    if let Ok(v) = bound.eval(&frame)
                        && v.as_i64().is_none()
                    {
                        errors.push(refuse(
                            format!(
                                "`{generator}` takes integer bounds, but `{}` is {v}{}",
                                bound.text().trim(),
                                values_read(def, &frame, bound)
                            ),
                            "make the bound a whole number for these option values (e.g. with `// 2` instead of `/ 2`)",
                        ));
                    }
                }
                OptionCheck::Weight(e) => {
                    // An expression that fails is reported by its own `Value` site.
                    if let Ok(v) = e.eval(&frame)
                        && v.as_i64().and_then(|i| u32::try_from(i).ok()).is_none()
                    {
                        errors.push(refuse(
                            format!(
                                "`weight` = `{}` is {v}{}, not a whole number ≥ 0",
                                e.text().trim(),
                                values_read(def, &frame, e)
                            ),
                            "make the weight a whole number ≥ 0 for these option values",
                        ));
                    }
                }
                OptionCheck::Rows { .. } => {}
            }
        }
        let weights: Vec<Result<u32, String>> = def
            .transactions
            .iter()
            .map(|t| t.weight_in(&frame))
            .collect();
        if weights.iter().all(|w| matches!(w, Ok(0)))
            && let Some(site) = sites().find(|s| matches!(s.check, OptionCheck::Weight(_)))
        {
            let read: Vec<String> = def
                .transactions
                .iter()
                .filter_map(|t| t.weight_expr.as_ref())
                .map(|e| values_read(def, &frame, e))
                .filter(|s| !s.is_empty())
                .collect();
            errors.push(self.error_at(
                site.file,
                &site.path,
                format!(
                    "every transaction of workload `{}` weighs 0{}: nothing would run",
                    def.name,
                    read.first().map_or("", String::as_str)
                ),
                "give at least one transaction a weight above 0 for these option values",
            ));
        }
        if let Err((entry, m)) = table_rows_at(def, &frame) {
            let site =
                sites().find(|s| matches!(s.check, OptionCheck::Rows { entry: e } if e == entry));
            if let Some(site) = site.filter(|s| !failed.contains(&s.path.as_slice())) {
                let shown = def
                    .load
                    .get(entry)
                    .map(|t| values_read(def, &frame, &t.rows))
                    .unwrap_or_default();
                errors.push(self.error_at(
                    site.file,
                    &site.path,
                    format!("{m}{shown}"),
                    format!(
                        "a table's rows are a whole number from 0 to {} (its parent's rows times `per_parent` with a parent): fix the expression or the options' values",
                        i64::MAX
                    ),
                ));
            }
        }
        errors
    }

    /// An error at `path` of file `file` (an index into [`Loaded::files`]).
    fn error_at(
        &self,
        file: usize,
        path: &[Seg],
        message: String,
        help: impl Into<String>,
    ) -> ConfigError {
        let f = &self.files[file];
        ConfigError::new(&f.path, f.map.origin(path, false), path_text(path), message)
            .with_help(help)
    }
}

/// ` with customers = 0`: the values `e` read in `frame`, for a message (empty when it reads
/// none).
fn values_read(def: &Def, frame: &Frame, e: &Expr) -> String {
    let mut slots = e.slots();
    slots.sort_unstable();
    slots.dedup();
    let values: Vec<String> = slots
        .iter()
        .map(|&s| {
            let name = def.vars.names.get(s).map_or("?", String::as_str);
            let v = frame.vals.get(s).cloned().unwrap_or_default();
            format!("{name} = {v}")
        })
        .collect();
    if values.is_empty() {
        String::new()
    } else {
        format!(" with {}", values.join(", "))
    }
}
