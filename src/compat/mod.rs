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
pub mod obd;
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
    /// `cpu prepare`, `memory cleanup`…: the test has no data, and sysbench refuses the line.
    #[error("the {test} test has no data to {command}: only `run` (and `help`) apply to it")]
    NotImplemented { test: String, command: &'static str },
}

/// How sysbench 1.0.20 reports a line it refuses, so scripts that grep its text, read its
/// stream or test for exit code 1 keep working: the edge prints this, then sbsuite's own
/// explanation (which names the fix) on stderr.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal {
    /// sysbench prints its banner first: it parses the general options' values (and extra
    /// words) before the banner, everything else after it.
    pub banner: bool,
    /// sysbench's logger (`FATAL: …`) writes to stdout, its option parser to stderr.
    pub stdout: bool,
    /// sysbench's first error line, with the same wording.
    pub line: String,
}

impl SysbenchError {
    /// sysbench's report of the same refusal (checked side by side with sysbench 1.0.20), or
    /// `None` for sbsuite's own failures (`--sbsuite-results`, suite conversion, signals).
    /// `raw` is the command line, for the option as typed (sysbench quotes it verbatim).
    pub fn refusal(&self, raw: &[String]) -> Option<Refusal> {
        let after_banner = |stdout: bool, line: String| {
            Some(Refusal {
                banner: true,
                stdout,
                line,
            })
        };
        match self {
            SysbenchError::Args(e) => match e {
                ArgsError::Unknown { name, .. } | ArgsError::OtherTest { name, .. } => {
                    let typed =
                        typed_option(raw, name).map_or_else(|| format!("--{name}"), str::to_string);
                    after_banner(false, format!("invalid option: {typed}"))
                }
                ArgsError::BadValue { name, .. } | ArgsError::NeedsValue { name, .. } => {
                    let value = typed_option(raw, name)
                        .and_then(|t| t.split_once('=').map(|(_, v)| v))
                        .unwrap_or_default();
                    Some(Refusal {
                        banner: !GENERAL.iter().any(|o| o.name == name),
                        stdout: false,
                        line: format!("Invalid value for the '{name}' option: '{value}'"),
                    })
                }
                ArgsError::UnknownTest { test, .. } => after_banner(
                    true,
                    format!(
                        "FATAL: Cannot find benchmark '{test}': no such built-in test, file or module"
                    ),
                ),
                ArgsError::NoCommand(test) => after_banner(
                    false,
                    format!(
                        "The '{test}' test requires a command argument. See 'sysbench {test} help'"
                    ),
                ),
                ArgsError::UnknownCommand(command) => {
                    after_banner(false, format!("Unknown command: {command}"))
                }
                ArgsError::Extra(word) => Some(Refusal {
                    banner: false,
                    stdout: false,
                    line: format!("Unrecognized command line argument: {word}"),
                }),
                // sysbench reads a script from stdin without a test; the rest are sbsuite's.
                ArgsError::NoTest | ArgsError::ConfigFile { .. } | ArgsError::NoEquivalent(_) => {
                    None
                }
            },
            SysbenchError::NotImplemented { test, command } => after_banner(
                false,
                format!("'{test}' test does not implement the '{command}' command."),
            ),
            SysbenchError::Target(e) => {
                let driver = typed_option(raw, "db_driver")
                    .and_then(|t| t.split_once('=').map(|(_, v)| v))
                    .filter(|d| !matches!(*d, "mysql" | "pgsql"));
                let line = match driver {
                    Some(d) => format!("FATAL: invalid database driver name: '{d}'"),
                    None => format!("FATAL: {e}"),
                };
                after_banner(true, line)
            }
            // The step printed the banner already. sysbench's logger would print this on
            // stdout; it stays on stderr, where sbsuite's step errors have always been (scripts
            // and tests read them there) and where its own wording differs from sysbench's anyway.
            SysbenchError::Step(e) => Some(Refusal {
                banner: false,
                stdout: false,
                line: format!("FATAL: {e}"),
            }),
            SysbenchError::Signal(_)
            | SysbenchError::ResultsNeedRun(_)
            | SysbenchError::Convert(_)
            | SysbenchError::Config(_)
            | SysbenchError::Run(_) => None,
        }
    }
}

/// The last command-line word setting option `name` (`_` form), as typed: `--cpu-max-prime=x`.
fn typed_option<'a>(raw: &'a [String], name: &str) -> Option<&'a str> {
    raw.iter().rev().map(String::as_str).find(|w| {
        w.strip_prefix("--")
            .map(|body| body.split('=').next().unwrap_or(body).replace('-', "_"))
            .is_some_and(|n| n == name)
    })
}

/// `--verbosity` as typed (sysbench's default 3 when absent or unreadable): decides whether a
/// refused line gets the banner, which sysbench prints at level 3 and above.
pub fn verbosity_of(raw: &[String]) -> u8 {
    typed_option(raw, "verbosity")
        .and_then(|t| t.split_once('=').map(|(_, v)| v))
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

/// The banner sysbench prints before refusing a line (see [`Refusal::banner`]).
pub fn banner_line() -> String {
    banner()
}

/// sysbench 1.0.20's refusal of a command a test does not have: the built-in tests without data
/// have no `prepare`/`cleanup`, and only the OLTP scripts sharing `oltp_common.lua` (the
/// `sbtest` data family) have `prewarm`; sysbench calls any other command unknown.
fn refuse_command(inv: &Invocation, action: Action) -> Result<(), SysbenchError> {
    let family = inv.workload.data.family;
    match action {
        Action::Prepare | Action::Cleanup if family.is_none() => {
            Err(SysbenchError::NotImplemented {
                test: inv.test.clone(),
                command: action.as_str(),
            })
        }
        Action::Prewarm if family != Some(crate::engine::oltp::DATA_FAMILY) => {
            Err(ArgsError::UnknownCommand(action.as_str().to_string()).into())
        }
        _ => Ok(()),
    }
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
    refuse_command(&inv, action)?;
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
    crate::engine::console::banner_line()
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
