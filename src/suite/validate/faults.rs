//! `[[faults]]` (#30): what can be checked from the suite file alone. What depends on each run
//! step (`at` below its `time`, a target for `sql`) is checked on the plan, by
//! `runner::faults::check_plan`, with the same positions.

use super::{Checker, shell_template};
use crate::source::Seg;
use crate::suite::raw::{RawSuite, Statements};

/// The earliest `at`: the figures compare the fault with at least a second before it.
pub const MIN_AT_S: f64 = 1.0;

/// Every fault: a valid unique name, `at` a number of seconds from [`MIN_AT_S`], exactly one of
/// `command` and `sql` with templates that parse, a tolerance and a timeout that make sense;
/// and no faults with `[clients]`, whose agents run the workers where no fault can be timed.
pub(super) fn check(c: &mut Checker<'_>, raw: &RawSuite) {
    if raw.clients.is_some()
        && let Some(first) = (!raw.faults.is_empty()).then_some(0)
    {
        c.err(
            &[Seg::key("faults"), Seg::Index(first)],
            false,
            "[[faults]] cannot be combined with [clients]".to_string(),
            Some(
                "a fault is timed against the measured part of one process's workers; run the \
                 fault suite without [clients] (one client), or drop [[faults]]"
                    .into(),
            ),
        );
    }
    let mut seen = std::collections::HashSet::new();
    for (i, f) in raw.faults.iter().enumerate() {
        let path = |k: &str| [Seg::key("faults"), Seg::Index(i), Seg::key(k)];
        let name = f.label(i);
        if f.name.is_some() {
            let ok = !name.is_empty()
                && name
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch));
            if !ok {
                c.err(
                    &path("name"),
                    false,
                    format!("invalid fault name `{name}`"),
                    Some("use letters, digits, `-`, `_` and `.` (it becomes a CSV value)".into()),
                );
            }
        }
        if !seen.insert(name.clone()) {
            c.err(
                &path("name"),
                f.name.is_none(),
                format!("duplicate fault name `{name}`"),
                Some("give each [[faults]] entry its own name".into()),
            );
        }
        if !(f.at.is_finite() && f.at >= MIN_AT_S) {
            c.err(
                &path("at"),
                false,
                format!(
                    "faults.at must be at least {MIN_AT_S} second, found {}",
                    f.at
                ),
                Some(
                    "`at` counts seconds from the start of the measured part (after \
                     warmup_time); the figures compare the fault with the time before it, \
                     e.g. at = 10"
                        .into(),
                ),
            );
        }
        match (&f.command, &f.sql) {
            (Some(_), Some(_)) => c.err(
                &path("sql"),
                true,
                format!("fault `{name}` has both `command` and `sql`"),
                Some(
                    "a fault runs one thing: keep one of them, or write two [[faults]] entries"
                        .into(),
                ),
            ),
            (None, None) => c.err(
                &[Seg::key("faults"), Seg::Index(i)],
                false,
                format!("fault `{name}` has neither `command` nor `sql`"),
                Some(
                    "add command = \"…\" (a shell command, e.g. \"./failover.sh\") \
                     or sql = \"…\" (run on a connection of its own)"
                        .into(),
                ),
            ),
            _ => {}
        }
        if let Some(command) = &f.command {
            shell_template(c, &path("command"), "faults.command", command);
        }
        if let Some(sql) = &f.sql {
            let statements = sql.list();
            if statements.is_empty() || statements.iter().any(|s| s.trim().is_empty()) {
                c.err(
                    &path("sql"),
                    false,
                    format!("fault `{name}` has an empty statement"),
                    Some("write the statement(s) to run, e.g. sql = \"DO SLEEP(0)\"".into()),
                );
            }
            for (j, s) in statements.iter().enumerate() {
                let mut at = path("sql").to_vec();
                if matches!(sql, Statements::Many(_)) {
                    at.push(Seg::Index(j));
                }
                match minijinja::Environment::new().template_from_str(s) {
                    Err(e) => c.err(
                        &at,
                        false,
                        format!("invalid faults.sql template: {e}"),
                        Some("statements are minijinja templates that see the step's values, e.g. \"KILL {{ id }}\"; write {{ '{{' }} for a literal {{".into()),
                    ),
                    Ok(t) if t.undeclared_variables(false).contains("env") => c.err(
                        &at,
                        false,
                        "faults.sql uses `env`, which fault statements do not have".to_string(),
                        Some("a statement sees the step's values (options, matrix values, `step`, `variant`, `fault`, `at`), not the environment".into()),
                    ),
                    Ok(_) => {}
                }
            }
        }
        if !(f.tolerance.is_finite() && f.tolerance >= 0.0) {
            c.err(
                &path("tolerance"),
                false,
                format!(
                    "faults.tolerance must be a percentage of at least 0, found {}",
                    f.tolerance
                ),
                Some("e.g. tolerance = 20: the per-second p99 counts as recovered within 20 % of its pre-fault value".into()),
            );
        }
        if f.timeout == 0 {
            c.err(
                &path("timeout"),
                false,
                "faults.timeout must be at least 1 second".to_string(),
                Some("e.g. timeout = 60".into()),
            );
        }
    }
}
