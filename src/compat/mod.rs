//! sysbench compatibility: `sbsuite sysbench …` runs a sysbench command line as-is, and
//! `sbsuite convert` turns such lines into a suite file.
//!
//! Users arrive with years of sysbench command lines in scripts and guides (0.4's `--test=`,
//! `--num-threads`, `--oltp-*`; 0.5/1.0 script paths). Both commands share one parser
//! ([`args`]) that maps every form to a registered workload and 1.0 option names, so a
//! line means the same whether it is run here directly or converted into a suite. Running goes
//! through the same engines and the same option resolution as `sbsuite run`
//! ([`crate::engine::spec::WorkloadSpec::resolve_options`]), never a second copy of either.

pub mod args;
pub mod convert;
pub mod target;

use std::io::{Read, Write};
use std::path::Path;

use crate::db::DbError;
use crate::engine::EngineError;
use crate::engine::config::GENERAL;
use crate::engine::option::{Kind, OptSpec};
use crate::engine::registry;
use crate::runner::{RunError, RunSummary, SignalError};
use crate::suite::ConfigErrors;
use crate::value::Value;

use self::args::{Action, ArgsError, Invocation, Warning, placeholder};
use self::convert::ConvertError;

/// How `sbsuite sysbench` ended without an error.
#[derive(Debug)]
pub enum Outcome {
    /// Help, version, a dry run, or a step that ran to its end.
    Done,
    /// The step was stopped by Ctrl-C/SIGTERM.
    Interrupted,
    /// `--sbsuite-results`: the line ran as a one-step suite through the runner.
    Suite(RunSummary),
}

/// Why `sbsuite sysbench` could not run its line, or the step failed.
#[derive(Debug, thiserror::Error)]
pub enum SysbenchError {
    #[error(transparent)]
    Args(#[from] ArgsError),
    /// The line's `--mysql-*`/`--pgsql-*` options do not make a target.
    #[error(transparent)]
    Target(DbError),
    #[error(transparent)]
    Signal(#[from] SignalError),
    /// The step itself failed (sysbench reports it as `FATAL: …`).
    #[error(transparent)]
    Step(#[from] EngineError),
    #[error(
        "--sbsuite-results stores run results; drop it for `{0}` (a suite's plan \
         prepares and cleans up around its runs)"
    )]
    ResultsNeedRun(&'static str),
    #[error(transparent)]
    Convert(#[from] ConvertError),
    /// The converted one-step suite does not load or plan (rendered with its position).
    #[error("{0}")]
    Config(ConfigErrors),
    #[error(transparent)]
    Run(#[from] RunError),
}

/// `sbsuite sysbench ARGS…`: parse like sysbench, then help, prepare/cleanup or run. What
/// sysbench prints (warnings, help, reports) goes to stdout/stderr as sysbench does; errors are
/// returned.
pub fn sysbench(raw: &[String]) -> Result<Outcome, SysbenchError> {
    let inv = args::parse(raw)?;
    let mut stdout = std::io::stdout().lock();
    for w in &inv.warnings {
        match w {
            Warning::Stdout(t) => {
                let _ = writeln!(stdout, "{t}");
            }
            Warning::Stderr(t) => eprintln!("{t}"),
        }
    }
    if inv.version {
        let _ = writeln!(stdout, "{}", banner());
        return Ok(Outcome::Done);
    }
    let Some(action) = inv.action else {
        return Ok(Outcome::Done);
    };
    if action == Action::Help {
        let _ = write!(stdout, "{}", help(&inv, raw.iter().any(|a| a == "--help")));
        return Ok(Outcome::Done);
    }
    let options = inv.options();
    if inv.dry_run {
        let _ = write!(stdout, "{}", dry_run(&inv, action));
        return Ok(Outcome::Done);
    }
    // `inv.workload` is a registry entry, and every registered workload has an engine.
    let workload = inv.workload.name;
    if let Some(dir) = &inv.results_dir {
        drop(stdout);
        return with_results(raw, action, dir).map(Outcome::Suite);
    }
    // Database tests connect with the line's --mysql-* options (sysbench's defaults otherwise).
    let target = if registry::workload(workload).is_some_and(|w| w.needs_target) {
        let conn = &inv.connection;
        match target::from_sysbench(&|name| conn.get(name).map(str::to_string)) {
            Ok(t) => Some(t),
            Err(e) => return Err(SysbenchError::Target(e)),
        }
    } else {
        None
    };
    let stop = crate::runner::signal::install()?;
    let result = match action {
        Action::Run => {
            if options.int("time") == 0 && options.int("events") == 0 {
                let _ = writeln!(
                    stdout,
                    "WARNING: Both event and time limits are disabled, running an endless test"
                );
            }
            crate::engine::run_step_with_target(
                workload,
                &options,
                target.as_ref(),
                &mut stdout,
                &mut |_| {},
                &stop,
            )
            .map(|o| o.interrupted)
        }
        Action::Prepare | Action::Cleanup => {
            let cleanup = action == Action::Cleanup;
            crate::engine::prepare_step_with_target(
                workload,
                &options,
                target.as_ref(),
                cleanup,
                &mut stdout,
                &stop,
            )
            .map(|()| stop.load(std::sync::atomic::Ordering::SeqCst))
        }
        Action::Prewarm => crate::engine::prewarm_step_with_target(
            workload,
            &options,
            target.as_ref(),
            &mut stdout,
            &stop,
        )
        .map(|()| stop.load(std::sync::atomic::Ordering::SeqCst)),
        Action::Help => Ok(false),
    };
    let _ = stdout.flush();
    // A stop request breaks a blocked prepare or query (`crate::db::interrupt`): its error is
    // the stop's doing, and the line ends as interrupted.
    if result.is_err() && stop.load(std::sync::atomic::Ordering::SeqCst) {
        return Ok(Outcome::Interrupted);
    }
    match result? {
        true => Ok(Outcome::Interrupted),
        false => Ok(Outcome::Done),
    }
}

/// `--sbsuite-results=DIR`: the line becomes a one-step suite (as `convert` writes it) and goes
/// through the runner, which stores results.csv like `sbsuite run`.
fn with_results(raw: &[String], action: Action, dir: &Path) -> Result<RunSummary, SysbenchError> {
    if action != Action::Run {
        return Err(SysbenchError::ResultsNeedRun(action.as_str()));
    }
    let mut words: Vec<String> = raw
        .iter()
        .filter(|w| !w.replace('_', "-").starts_with("--sbsuite-results"))
        .cloned()
        .collect();
    // A suite run defaults `forced_shutdown` on (`crate::plan::suite_forced_shutdown`);
    // the line keeps sysbench's default, off, unless it says otherwise.
    if !words
        .iter()
        .any(|w| w.replace('_', "-").starts_with("--forced-shutdown"))
    {
        words.push("--forced-shutdown=off".into());
    }
    let (text, _) = convert::convert(&[(1, words)])?;
    let env: Vec<(String, String)> = Vec::new();
    let (suite, plan) =
        crate::suite::load_text(Path::new("<sysbench command line>"), &text, &[], &env)
            .and_then(|s| crate::plan::build(&s).map(|p| (s, p)))
            .map_err(SysbenchError::Config)?;
    let ctx = crate::runner::RunContext {
        base_dir: std::path::PathBuf::from("."),
        hooks: Default::default(),
        on_error: Default::default(),
        resume: None,
        stop_when: Vec::new(),
        results_root: dir.to_path_buf(),
        suite_text: suite.resolved_toml,
        quiet: false,
        progress: crate::runner::ProgressMode::Off,
    };
    Ok(crate::runner::run_plan(&plan, &ctx, Default::default())?)
}

fn banner() -> String {
    format!(
        "sbsuite {} (sysbench 1.0.20 compatible)",
        env!("CARGO_PKG_VERSION")
    )
}

/// sysbench's help layout: `  --name=TYPE` padded to the section's widest, then the
/// description and `[default]`.
fn help(inv: &Invocation, general: bool) -> String {
    let mut text = format!("{}\n\n", banner());
    let section = |title: &str, opts: &mut dyn Iterator<Item = &OptSpec>| {
        let rows: Vec<(String, String)> = opts
            .map(|o| {
                let name = o.name.replace('_', "-");
                let left = match o.kind {
                    Kind::Bool => format!("--{name}[=on|off]"),
                    k => format!("--{name}={}", placeholder(&k)),
                };
                let default = match o.default_value() {
                    Some(Value::List(items)) => format!(
                        " [{}]",
                        items
                            .iter()
                            .map(Value::to_string)
                            .collect::<Vec<_>>()
                            .join(",")
                    ),
                    Some(Value::Int(_)) if matches!(o.kind, Kind::Size) => {
                        format!(" [{}]", o.default.unwrap_or_default())
                    }
                    Some(v) => format!(" [{v}]"),
                    None => String::new(),
                };
                // sysbench lists an enum's choices in braces after the description.
                let choices = match o.kind {
                    Kind::Enum(c) if !o.help.contains('{') => format!(" {{{}}}", c.join(",")),
                    _ => String::new(),
                };
                (left, format!("{}{choices}{default}", o.help))
            })
            .collect();
        let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
        let mut s = format!("{title}:\n");
        for (left, right) in rows {
            s.push_str(&format!("  {left:<width$} {right}\n"));
        }
        s.push('\n');
        s
    };
    if general {
        text.push_str(
            "Usage:\n  sbsuite sysbench [options]... [testname] [command]\n\n\
             Commands implemented by most tests: prepare run cleanup help\n\n",
        );
        text.push_str(&section("General options", &mut GENERAL.iter()));
        text.push_str("sysbench 0.4/0.5 forms (accepted with a warning):\n");
        let mut aliases: Vec<(String, String)> = args::DEPRECATED
            .iter()
            .map(|(a, t, _)| (format!("--{}", a.replace('_', "-")), t.to_string()))
            .chain(
                args::RENAMED
                    .iter()
                    .map(|(a, t)| (format!("--{}", a.replace('_', "-")), t.to_string())),
            )
            .collect();
        aliases.push((
            "--init-rng, --rand-init, --seed-rng".into(),
            "rand_seed".into(),
        ));
        aliases.push(("--batch, --batch-delay".into(), "report_interval".into()));
        let width = aliases.iter().map(|a| a.0.len()).max().unwrap_or(0);
        for (alias, target) in aliases {
            text.push_str(&format!(
                "  {alias:<width$} alias for --{}\n",
                target.replace('_', "-")
            ));
        }
        text.push('\n');
    } else {
        let own = inv.workload.options.iter().flat_map(|g| g.iter());
        text.push_str(&section(
            &format!("{} options", inv.workload.name),
            &mut own.into_iter(),
        ));
    }
    text
}

/// `--sbsuite-dry-run`: what would run, in suite-file syntax.
fn dry_run(inv: &Invocation, action: Action) -> String {
    let mut s = format!(
        "test = {}\nworkload = {}\ncommand = {}\n",
        convert::toml_value(&Value::Str(inv.test.clone())),
        convert::toml_value(&Value::Str(inv.workload.name.into())),
        convert::toml_value(&Value::Str(action.as_str().into())),
    );
    s.push_str("\n[options]\n");
    for (k, v) in &inv.options().0 {
        s.push_str(&format!("{k} = {}\n", convert::toml_value(v)));
    }
    if !inv.connection.is_empty() {
        s.push_str("\n[connection]\n");
        for (k, v) in &inv.connection.options {
            let shown = if k.ends_with("_password") { "***" } else { v };
            s.push_str(&format!(
                "{k} = {}\n",
                convert::toml_value(&Value::Str(shown.into()))
            ));
        }
    }
    s
}

/// Why `sbsuite convert` produced no suite.
#[derive(Debug, thiserror::Error)]
pub enum ConvertCommandError {
    #[error("cannot read stdin: {0}")]
    Stdin(std::io::Error),
    #[error(transparent)]
    Convert(#[from] ConvertError),
}

/// `sbsuite convert`: one line after `--`, or lines from stdin. Returns the suite text and the
/// notes about what the conversion decided (for stderr).
pub fn convert(raw: &[String]) -> Result<(String, Vec<String>), ConvertCommandError> {
    let lines = if raw.is_empty() || raw == ["-"] {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(ConvertCommandError::Stdin)?;
        convert::command_lines(&text)
    } else if raw.len() == 1 {
        // One quoted argument holding the whole line.
        convert::command_lines(&raw[0])
    } else {
        let mut words = raw.to_vec();
        if words
            .first()
            .is_some_and(|w| w.rsplit('/').next() == Some("sysbench"))
        {
            words.remove(0);
        }
        Ok(vec![(1, words)])
    };
    Ok(lines.and_then(|l| convert::convert(&l))?)
}
