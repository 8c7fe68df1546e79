//! sysbench compatibility: `sbsuite sysbench …` runs a sysbench command line as-is, and
//! `sbsuite convert` turns such lines into a suite file.
//!
//! Users arrive with years of sysbench command lines in scripts and guides (0.4's `--test=`,
//! `--num-threads`, `--oltp-*`; 0.5/1.0 script paths). Both commands share one parser
//! ([`args`]) that maps every form to a registered workload and 1.0 option names, so a
//! line means the same whether it is run here directly or converted into a suite. Running goes
//! through the same engines and the same option resolution as `sbsuite run`
//! ([`crate::engine::spec::WorkloadSpec::resolve_options`]), never a second copy of either.
//! The help (`--help`, `TEST help`) keeps sysbench's layout for the tools that scrape it
//! ([`help`]).

pub mod args;
pub mod checks;
pub mod convert;
pub mod help;
pub mod obd;
pub mod target;

use std::io::{Read, Write};
use std::path::Path;

use crate::db::DbError;
use crate::engine::Catalog;
use crate::engine::config::GENERAL;
use crate::engine::lua;
use crate::engine::{EngineError, RateOverflow, RunRequest, StepKind, StepRequest, execute};
use crate::runner::{RunError, RunSummary, SignalError};
use crate::source::ConfigErrors;
use crate::value::Value;

use self::args::{Action, ArgsError, Invocation, Warning};
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
    /// A Lua script's `prepare`/`cleanup` that it defines neither as a function nor as a
    /// custom command.
    #[error(
        "{test} defines no `{command}` (neither a global function `{command}` nor \
         sysbench.cmdline.commands.{command})"
    )]
    ScriptLacks { test: String, command: &'static str },
    /// `bulk_insert help`: a script without options has no help, in sysbench as here.
    #[error("the {test} test has no options of its own, so it has no help: see `--help`")]
    NoHelp { test: String },
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
    /// `line` already holds sbsuite's explanation (a failed step's `FATAL: …`), so the edge
    /// prints no `error: …` after it.
    pub explained: bool,
}

impl SysbenchError {
    /// sbsuite's explanation after sysbench's line, when sysbench's own names no fix.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            SysbenchError::Step(EngineError::RateOverflow) => Some(
                "--rate asks for more events per second than --threads can start, so the \
                 requested load was never offered: lower --rate or raise --threads",
            ),
            _ => None,
        }
    }

    /// sysbench's report of the same refusal (checked side by side with sysbench 1.0.20), or
    /// `None` for sbsuite's own failures (`--sbsuite-results`, suite conversion, signals).
    /// `raw` is the command line, for the option as typed (sysbench quotes it verbatim).
    pub fn refusal(&self, raw: &[String]) -> Option<Refusal> {
        let after_banner = |stdout: bool, line: String| {
            Some(Refusal {
                banner: true,
                stdout,
                line,
                explained: false,
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
                    // sysbench's parser refuses a bad BOOL value of a script's option
                    // itself (the other types fail later, at export, with the line below).
                    let script_bool = matches!(
                        e,
                        ArgsError::BadValue {
                            script_bool: true,
                            ..
                        }
                    );
                    if script_bool {
                        let typed = typed_option(raw, name)
                            .map_or_else(|| format!("--{name}"), str::to_string);
                        return after_banner(false, format!("invalid option: {typed}"));
                    }
                    if let Some(r) = checks::refused_value(name, value) {
                        return Some(Refusal {
                            banner: !r.general,
                            stdout: true,
                            line: r.line,
                            explained: false,
                        });
                    }
                    Some(Refusal {
                        banner: !GENERAL.iter().any(|o| o.name == name),
                        stdout: false,
                        line: format!("Invalid value for the '{name}' option: '{value}'"),
                        explained: false,
                    })
                }
                ArgsError::UnknownTest { test, .. } | ArgsError::NoScript { test, .. } => {
                    after_banner(
                        true,
                        format!(
                            "FATAL: Cannot find benchmark '{test}': no such built-in test, file or module"
                        ),
                    )
                }
                ArgsError::NoCommand(test) => after_banner(
                    false,
                    format!(
                        "The '{test}' test requires a command argument. See 'sysbench {test} help'"
                    ),
                ),
                ArgsError::UnknownCommand(command)
                | ArgsError::UnknownScriptCommand { command, .. } => {
                    after_banner(false, format!("Unknown command: {command}"))
                }
                ArgsError::Extra(word) => Some(Refusal {
                    banner: false,
                    stdout: false,
                    line: format!("Unrecognized command line argument: {word}"),
                    explained: false,
                }),
                // A script that does not load: sysbench's `FATAL: file:line: msg` after its
                // banner (sbsuite's message is the same, with the Lua traceback).
                ArgsError::Script(message) => Some(Refusal {
                    banner: true,
                    stdout: true,
                    line: format!("FATAL: {message}"),
                    explained: true,
                }),
                // sysbench reads a script from stdin without a test; the rest are sbsuite's.
                ArgsError::NoTest | ArgsError::ConfigFile { .. } | ArgsError::NoEquivalent(_) => {
                    None
                }
            },
            SysbenchError::NotImplemented { test, command }
            | SysbenchError::ScriptLacks { test, command } => after_banner(
                false,
                format!("'{test}' test does not implement the '{command}' command."),
            ),
            SysbenchError::NoHelp { test } => after_banner(
                false,
                format!("'{test}' test does not implement the 'help' command."),
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
            // A value sysbench checks itself, refused by sbsuite's engine before the step
            // printed anything, gets sysbench's words (sbsuite's explanation follows on
            // stderr). Any other failed step goes to stdout, sysbench's logger's stream, after
            // what the step printed (for a run, the preamble up to `Initializing worker
            // threads...`); a server that cannot be reached first gets sysbench's own line for
            // it, which parsers match, then sbsuite's.
            // sysbench prints nothing: the explanation goes to stderr.
            SysbenchError::Step(EngineError::Silent(_)) => None,
            // sysbench's own lines (its logger drops WARNING below verbosity 2), then, for a
            // missing required option, the test's options as sysbench lists them; sbsuite's
            // explanation goes to stderr.
            SysbenchError::Step(EngineError::Sysbench {
                sysbench, usage, ..
            }) => {
                let verbosity = verbosity_of(raw);
                let mut line: Vec<&str> = sysbench
                    .lines()
                    .filter(|l| verbosity >= 2 || !l.starts_with("WARNING: "))
                    .collect();
                let help = usage
                    .then(|| {
                        let test = raw.iter().find(|w| !w.starts_with('-'))?;
                        help::test(test, Catalog::builtin().workload(test)?)
                    })
                    .flatten();
                if let Some(help) = &help {
                    line.push("");
                    line.push(help.trim_end_matches('\n'));
                    line.push("");
                }
                Some(Refusal {
                    banner: false,
                    stdout: true,
                    line: line.join("\n"),
                    explained: false,
                })
            }
            SysbenchError::Step(e) => {
                let typed: Vec<(String, &str)> = typed_values(raw).collect();
                let refused = checks::first_refused(typed.iter().map(|(n, v)| (n.as_str(), *v)));
                Some(match refused {
                    Some(r) => Refusal {
                        banner: !r.general,
                        stdout: true,
                        line: r.line,
                        explained: false,
                    },
                    None => {
                        let ours = format!("FATAL: {e}");
                        let theirs = match e {
                            EngineError::Unreachable(_) => unreachable_line(raw),
                            EngineError::NoTable { table, .. } => no_table_lines(raw, table),
                            _ => None,
                        };
                        let line = match theirs {
                            Some(theirs) => format!("{theirs}\n{ours}"),
                            None => ours,
                        };
                        Refusal {
                            banner: false,
                            stdout: true,
                            line,
                            explained: true,
                        }
                    }
                })
            }
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

/// Every `--name=value` of the command line as `(name in `_` form, value)`, in order.
fn typed_values(raw: &[String]) -> impl Iterator<Item = (String, &str)> {
    raw.iter().filter_map(|w| {
        let (name, value) = w.strip_prefix("--")?.split_once('=')?;
        Some((name.replace('-', "_"), value))
    })
}

/// sysbench's first line when the database server cannot be reached, with the line's host and
/// port (sysbench's defaults when absent): MySQL's
/// `FATAL: unable to connect to MySQL server on host 'H', port P, aborting...`, PostgreSQL's
/// `FATAL: Connection to database failed: …` (libpq's message follows it in sysbench).
fn unreachable_line(raw: &[String]) -> Option<String> {
    let value = |name: &str| {
        typed_option(raw, name)
            .and_then(|t| t.split_once('='))
            .map(|(_, v)| v)
    };
    match value("db_driver").unwrap_or("mysql") {
        "mysql" => Some(format!(
            "FATAL: unable to connect to MySQL server on host '{}', port {}, aborting...",
            value("mysql_host").unwrap_or("localhost"),
            value("mysql_port").unwrap_or("3306")
        )),
        "pgsql" => Some(format!(
            "FATAL: Connection to database failed: connection to server at \"{}\", port {} failed",
            value("pgsql_host").unwrap_or("localhost"),
            value("pgsql_port").unwrap_or("5432")
        )),
        _ => None,
    }
}

/// sysbench's lines when a run's first statement finds `table` missing (it prepares its
/// statements in `thread_init`): MySQL's `mysql_stmt_prepare() failed` and the server's error
/// 1146 naming `database.table`, PostgreSQL's `PQprepare() failed: ERROR:  relation … does not
/// exist`.
fn no_table_lines(raw: &[String], table: &str) -> Option<String> {
    let value = |name: &str| {
        typed_option(raw, name)
            .and_then(|t| t.split_once('='))
            .map(|(_, v)| v)
    };
    match value("db_driver").unwrap_or("mysql") {
        "mysql" => Some(format!(
            "FATAL: mysql_stmt_prepare() failed\nFATAL: MySQL error: 1146 \"Table '{}.{table}' doesn't exist\"",
            value("mysql_db").unwrap_or("sbtest")
        )),
        "pgsql" => Some(format!(
            "FATAL: PQprepare() failed: ERROR:  relation \"{table}\" does not exist"
        )),
        _ => None,
    }
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
    if let Some(script) = lua::run::script(inv.workload) {
        // A Lua script's `prepare`/`cleanup`: a custom command of that name, else the
        // function; without either sysbench refuses it (after its banner).
        let name = action.as_str();
        let defined = script.commands.iter().any(|c| c.name == name)
            || match action {
                Action::Prepare => script.has_prepare,
                Action::Cleanup => script.has_cleanup,
                _ => true,
            };
        return match defined {
            true => Ok(()),
            false => Err(SysbenchError::ScriptLacks {
                test: script.sname.clone(),
                command: name,
            }),
        };
    }
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
    // Not locked for the whole line: a Lua script prints from its own threads (each state
    // lives on its thread), which would wait forever for a lock this thread holds.
    let mut stdout = std::io::stdout();
    // sysbench prints its general help for `--help` whatever else the line says.
    if args::wants_help(raw) {
        let _ = write!(stdout, "{}", help::general());
        return Ok(Outcome::Done);
    }
    // sysbench prints its banner before a Lua script's top level runs (which may print):
    // here the script loads while the line is parsed, so the banner comes first, and the one
    // the step would print is dropped.
    let banner_first = args::names_script(raw) && verbosity_of(raw) >= 3;
    if banner_first {
        let _ = writeln!(stdout, "{}\n", banner());
        let _ = stdout.flush();
        BANNER_SHOWN.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let mut stdout: Box<dyn Write> = if banner_first {
        Box::new(AfterBanner::new(stdout))
    } else {
        Box::new(stdout)
    };
    let inv = args::parse(raw)?;
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
        // A script without a command: sysbench loads it (its top level ran) and stops.
        if let Some(script) = lua::run::script(inv.workload) {
            if verbosity_of(raw) >= 3 {
                let _ = writeln!(stdout, "{}\n", banner());
            }
            let _ = stdout.flush();
            let argv: Vec<String> = std::iter::once("sysbench".to_string())
                .chain(raw.iter().cloned())
                .collect();
            script
                .run_top_level(&argv)
                .map_err(|e| ArgsError::Script(lua::run::lua_message(&e)))?;
        }
        return Ok(Outcome::Done);
    };
    let script = lua::run::script(inv.workload);
    // A script's `help`: its custom `help` command (an `Action::Command`), else its `help()`
    // function, else the options it declares (sysbench's order).
    // A script's help runs in its main state (sysbench loads the script there first).
    let help_function =
        action == Action::Help && script.is_some_and(|s| s.has_help || !s.options.is_empty());
    if action == Action::Help && !help_function {
        let text = match script {
            Some(s) if !s.options.is_empty() => Some(lua::options::help_text(s)),
            Some(_) => None,
            None => help::test(&inv.test, inv.workload),
        }
        .ok_or_else(|| match script {
            Some(s) => SysbenchError::ScriptLacks {
                test: s.sname.clone(),
                command: "help",
            },
            None => SysbenchError::NoHelp {
                test: inv.test.clone(),
            },
        })?;
        // The banner, as before sysbench's other output, from verbosity 3 on.
        if verbosity_of(raw) >= 3 {
            let _ = writeln!(stdout, "{}\n", banner());
        }
        let _ = write!(stdout, "{text}");
        return Ok(Outcome::Done);
    }
    refuse_command(&inv, action)?;
    let options = inv.options();
    if inv.dry_run {
        let _ = write!(stdout, "{}", dry_run(&inv, action));
        return Ok(Outcome::Done);
    }
    // `inv.workload` is a built-in workload or the script the line names: either has an engine.
    let workload = inv.workload;
    if let Some(dir) = &inv.results_dir {
        return with_results(raw, &inv, action, dir).map(Outcome::Suite);
    }
    // Database tests connect with the line's --mysql-* options (sysbench's defaults otherwise).
    let target = if workload.needs_target {
        let conn = &inv.connection;
        match target::from_sysbench(&|name| conn.get(name).map(str::to_string)) {
            Ok(t) => Some(t),
            Err(e) => return Err(SysbenchError::Target(e)),
        }
    } else {
        None
    };
    let stop = crate::runner::signal::install()?;
    let request = |kind| StepRequest::new(workload, &options, kind).on(target.as_ref());
    let result = match action {
        Action::Run => {
            if options.int("time") == 0 && options.int("events") == 0 {
                let _ = writeln!(
                    stdout,
                    "WARNING: Both event and time limits are disabled, running an endless test"
                );
            }
            let run = RunRequest {
                overflow: RateOverflow::Fatal,
                ..RunRequest::default()
            };
            execute(request(StepKind::Run(run)), &mut stdout, &mut (), &stop)
                .map(|o| o.into_outcome().interrupted)
        }
        Action::Prepare | Action::Cleanup => {
            let kind = match action {
                Action::Cleanup => StepKind::Cleanup,
                _ => StepKind::Prepare,
            };
            execute(request(kind), &mut stdout, &mut (), &stop)
                .map(|_| stop.load(std::sync::atomic::Ordering::SeqCst))
        }
        Action::Prewarm => execute(request(StepKind::Prewarm), &mut stdout, &mut (), &stop)
            .map(|_| stop.load(std::sync::atomic::Ordering::SeqCst)),
        Action::Command | Action::Help => {
            let name = match (&inv.command, action) {
                (Some(name), _) => name.as_str(),
                (None, Action::Help) => "help",
                (None, _) => "run",
            };
            // sysbench's banner, as before a prepare.
            if verbosity_of(raw) >= 3 {
                let _ = writeln!(stdout, "{}\n", banner());
            }
            execute(
                request(StepKind::Command(name)),
                &mut stdout,
                &mut (),
                &stop,
            )
            .map(|_| stop.load(std::sync::atomic::Ordering::SeqCst))
        }
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

/// Set once `sbsuite sysbench` printed sysbench's banner ahead of a Lua script.
static BANNER_SHOWN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether this line's banner is already printed (the edge then prints no second one before
/// a refusal).
pub fn banner_shown() -> bool {
    BANNER_SHOWN.load(std::sync::atomic::Ordering::Relaxed)
}

/// A writer that drops the first banner (`banner_line()` and its blank line) written through
/// it, which a Lua line already printed ([`sysbench`]); everything else passes. Bytes that may
/// start the banner are held until they match it or not.
struct AfterBanner<W: Write> {
    inner: W,
    expect: Vec<u8>,
    held: Vec<u8>,
    dropped: bool,
}

impl<W: Write> AfterBanner<W> {
    fn new(inner: W) -> Self {
        AfterBanner {
            inner,
            expect: format!("{}\n\n", banner()).into_bytes(),
            held: Vec::new(),
            dropped: false,
        }
    }
}

impl<W: Write> Write for AfterBanner<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.dropped {
            return self.inner.write(buf);
        }
        self.held.extend_from_slice(buf);
        if self.expect.starts_with(&self.held) {
            if self.held.len() == self.expect.len() {
                self.held.clear();
                self.dropped = true;
            }
        } else {
            let held = std::mem::take(&mut self.held);
            self.inner.write_all(&held)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// `--sbsuite-results=DIR`: the line becomes a one-step suite (as `convert` writes it) and goes
/// through the runner, which stores results.csv like `sbsuite run`.
///
/// The line's `--mysql-password`/`--pgsql-password` logs the steps in (#26): the suite, like
/// every converted one, says `password = "{{ env.MYSQL_PASSWORD }}"`, which is what the run
/// directory's suite.toml stores (never the password), and the plan's target gets the line's
/// literal password instead of rendering that template. A `--resume` of the run reads the
/// stored suite, so it needs the variable exported: a note says so.
fn with_results(
    raw: &[String],
    inv: &Invocation,
    action: Action,
    dir: &Path,
) -> Result<RunSummary, SysbenchError> {
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
    let (suite, mut plan) =
        crate::suite::load_text(Path::new("<sysbench command line>"), &text, &[], &env)
            .and_then(|s| crate::plan::build(&s).map(|p| (s, p)))
            .map_err(SysbenchError::Config)?;
    if plan.steps.iter().any(|s| s.target.is_some()) {
        let conn = &inv.connection;
        let line = target::from_sysbench(&|name| conn.get(name).map(str::to_string))
            .map_err(SysbenchError::Target)?;
        // An empty `--mysql-password=` converts to no password at all.
        if line
            .password()
            .ok()
            .flatten()
            .is_some_and(|p| !p.is_empty())
        {
            for t in plan.steps.iter_mut().filter_map(|s| s.target.as_mut()) {
                t.secret.clone_from(&line.secret);
            }
            // As `convert` names it: the driver's option prefix (`--pgsql-password`).
            let var = format!("{}_PASSWORD", line.driver.name().to_ascii_uppercase());
            eprintln!(
                "[sbsuite] note: the password is not stored with the results; \
                 `sbsuite run --resume` of this run reads it from ${var}"
            );
        }
    }
    let ctx = crate::runner::RunContext {
        base_dir: std::path::PathBuf::from("."),
        hooks: Default::default(),
        faults: Vec::new(),
        on_error: Default::default(),
        rate_overflow: suite.rate_overflow,
        resume: None,
        stop_when: Vec::new(),
        repeat_until: None,
        clients: None,
        cost: Default::default(),
        results_root: dir.to_path_buf(),
        suite_text: suite.resolved_toml,
        quiet: false,
        progress: crate::runner::ProgressMode::Off,
        watch: Default::default(),
    };
    Ok(crate::runner::run_plan(&plan, &ctx, Default::default())?)
}

fn banner() -> String {
    crate::engine::console::banner_line()
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
