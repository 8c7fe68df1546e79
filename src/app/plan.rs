//! `sbsuite plan` and `sbsuite validate`, and the suite loading every suite command shares.

use std::path::Path;

use super::{Exit, fail, fail_config, print};
use crate::cli::{Format, Overrides, PlanArgs, ValidateArgs};
use crate::plan::{self, Plan};
use crate::suite::{self, SetOverride, Suite};

/// `sbsuite plan FILE`: the ordered steps, as text or JSON.
pub(super) fn plan(args: &PlanArgs) -> Exit {
    match load_plan(&args.file, &args.overrides) {
        Ok((suite, plan)) => {
            let file = args.file.display().to_string();
            let text = match args.format {
                Format::Text => {
                    plan::render_text(&plan, &file)
                        + &crate::capacity::plan_text(&suite)
                        + &crate::runner::clients::plan_line(&suite).unwrap_or_default()
                        + &crate::runner::faults::plan_text(&suite.faults)
                        + &sql_statements(&suite, &plan)
                        + &server_note(&crate::runner::server_checks(&suite, &plan))
                }
                Format::Json => plan::render_json(&plan, &file),
            };
            print(&text)
        }
        Err(exit) => exit,
    }
}

/// `sbsuite validate FILE…`: every file is checked; the exit code is the last failure's.
pub(super) fn validate(args: &ValidateArgs) -> Exit {
    let mut exit = Exit::Ok;
    for file in &args.files {
        match load_plan(file, &args.overrides) {
            // Variants' server settings are checked when the server can be reached.
            Ok((suite, plan)) => match crate::runner::check_variants(&suite, &plan, true) {
                Ok(_) => {
                    println!("ok: {} ({} steps)", file.display(), plan.steps.len());
                    print!("{}", script_lines(&suite));
                    // The timeline of the first run step (the others differ only where a
                    // phase takes the step's own threads or rate).
                    if let Some(first) = plan.steps.iter().find(|s| !s.phases.is_empty()) {
                        let timeline = crate::engine::phases::timeline_text(&first.phases);
                        println!("  phases: {timeline}");
                    }
                    // The worker groups the run steps run (#31), each combination once.
                    let mut shown: Vec<String> = Vec::new();
                    for s in plan.steps.iter().filter(|s| !s.groups.is_empty()) {
                        let groups = crate::plan::groups_text(&s.groups);
                        if !shown.contains(&groups) {
                            println!("  groups: {groups}");
                            shown.push(groups);
                        }
                    }
                    print!("{}", crate::capacity::plan_text(&suite));
                }
                Err(e) => exit = fail_config(e),
            },
            Err(e) => exit = e,
        }
    }
    exit
}

/// One line per sysbench Lua script the suite runs: its file, hash and options (the axes a
/// suite may give it), for `validate`.
fn script_lines(suite: &Suite) -> String {
    let mut text = String::new();
    for u in suite.scripts.0.values() {
        text.push_str(&format!(
            "  script {}: {} (sha256 {}), options: {}\n",
            u.typed,
            u.resolved.display(),
            u.sha256,
            if u.options.is_empty() {
                "none".to_string()
            } else {
                u.options.join(", ")
            }
        ));
    }
    text
}

/// The statements of each variant's `settings` + `sql` (#14), rendered for the target's
/// dialect; a restore's value is the original, known only when the run reads it.
fn sql_statements(suite: &Suite, plan: &Plan) -> String {
    use crate::db::sql_settings::{self, string_literal};
    let admin = plan
        .steps
        .iter()
        .find_map(|s| s.target.as_ref())
        .and_then(|t| t.driver.dialect().server());
    let literal = string_literal(admin);
    let mut text = String::new();
    use crate::suite::raw::Stage;
    for v in &suite.variants {
        let own = v.sql.as_ref().map(|sql| (None, &v.settings, sql));
        let stages = Stage::ALL
            .into_iter()
            .filter_map(|s| Some((Some(s), &v.stage(s)?.settings, v.stage_sql(s)?)));
        for (stage, settings, sql) in own.into_iter().chain(stages) {
            if settings.is_empty() {
                continue;
            }
            // Load-time validation rendered them already: an error here cannot happen.
            let Ok(st) = sql_settings::statements(
                &v.name,
                settings,
                sql.templates(),
                &literal,
                "<original>",
            ) else {
                continue;
            };
            let what = match stage {
                Some(s) => format!("{s} settings (sql, during its {s} steps only)"),
                None => "settings (sql)".to_string(),
            };
            text.push_str(&format!("Variant `{}` {what}:\n", v.name));
            for (name, apply, read, restore) in &st.settings {
                text.push_str(&format!(
                    "  {name}: read `{read}`, apply `{apply}`, restore `{restore}`\n"
                ));
            }
            if let Some(after) = &st.after {
                text.push_str(&format!(
                    "  after applying and after restoring: `{after}`\n"
                ));
            }
            if !sql.check {
                text.push_str("  read-back not compared (check = false)\n");
            }
        }
        for stage in Stage::ALL {
            if let Some(set) = v
                .stage(stage)
                .map(|s| &s.set_global)
                .filter(|s| !s.is_empty())
            {
                let names: Vec<&str> = set.keys().map(String::as_str).collect();
                text.push_str(&format!(
                    "Variant `{}` {stage} set_global (during its {stage} steps only): {}\n",
                    v.name,
                    names.join(", ")
                ));
            }
        }
    }
    text
}

/// The end of `plan`'s text: what it could not check because that needs the server (#14).
/// Empty for a suite without a server (cpu, fileio, SQLite): `plan` then checked everything
/// `validate` does.
fn server_note(checks: &[&str]) -> String {
    if checks.is_empty() {
        return String::new();
    }
    let mut text = String::from("Not checked by plan (needs the server):\n");
    for c in checks {
        text.push_str(&format!("  - {c}\n"));
    }
    text
}

/// Loads a suite with its `--set` overrides, builds its plan and runs the checks that need no
/// server ([`crate::runner::check_offline`]: the password's environment variables, variants
/// against the target), so `plan`, `validate`, `run` and `restore` refuse the same suites
/// before anything runs; errors are printed here and `Err` holds the exit code.
pub(super) fn load_plan(file: &Path, overrides: &Overrides) -> Result<(Suite, Plan), Exit> {
    let sets = set_overrides(overrides)?;
    let suite = suite::load(file, &sets).map_err(fail_config)?;
    let plan = plan::build(&suite).map_err(fail_config)?;
    crate::runner::check_offline(&suite, &plan).map_err(fail_config)?;
    crate::runner::clients::check_clients(&suite, &plan).map_err(fail_config)?;
    crate::capacity::check_plan(&suite, &plan).map_err(fail_config)?;
    Ok((suite, plan))
}

/// `--set` and `--clients`, as the layer on top of the suite file.
pub(super) fn set_overrides(overrides: &Overrides) -> Result<Vec<SetOverride>, Exit> {
    let mut sets = Vec::new();
    for s in &overrides.set {
        sets.push(SetOverride::parse(s).map_err(|e| fail(Exit::BadInput, e))?);
    }
    if let Some(list) = &overrides.clients {
        let items: Vec<String> = list
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| format!("{:?}", s))
            .collect();
        sets.push(
            SetOverride::parse(&format!("clients.list=[{}]", items.join(",")))
                .map_err(|e| fail(Exit::BadInput, e))?,
        );
    }
    Ok(sets)
}
