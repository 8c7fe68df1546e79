//! The binary's edge: runs one subcommand, prints its errors once, and turns how it ended into
//! the process exit code.
//!
//! Why it is shaped this way: the library returns typed outcomes and `thiserror` errors and
//! never decides what the user sees, so it can be called from tests and from other commands
//! (`sbsuite sysbench --sbsuite-results` goes through the runner) without printing twice or
//! exiting. This module is the only place that knows the exit codes — [`Exit`]: 0 ok, 1 a step
//! failed or a regression was found, 2 bad input, 130 interrupted — and the only place that
//! writes `error: …` lines. One file per command or command group, each thin: call the library,
//! map its outcome or error to an [`Exit`], print.

mod bisect;
mod capacity;
mod compare;
mod import;
mod plan;
mod report;
mod restore;
mod run;
mod sysbench;
mod workloads;

use std::fmt::Display;
use std::io::Write;
use std::process::ExitCode;

use crate::cli::{Cli, Command, SchemaKind};

/// How a command ended, as the process reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Ok = 0,
    /// A step failed, results could not be written, or a comparison gate failed.
    Failed = 1,
    /// Bad input: the suite, the command line or a file given on it.
    BadInput = 2,
    /// Stopped by Ctrl-C/SIGTERM (128 + SIGINT, the shell convention).
    Interrupted = 130,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit as u8)
    }
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    // A second Ctrl-C means "exit now": only the edge may end the process.
    crate::runner::signal::on_second_signal(exit_now);
    let exit = match cli.command {
        Command::Plan(args) => plan::plan(&args),
        Command::Validate(args) => plan::validate(&args),
        Command::Workloads(args) => {
            workloads::workloads(args.name.as_deref(), args.suite.as_deref())
        }
        Command::Schema(args) => print(&match args.kind {
            SchemaKind::Suite => crate::suite::raw::json_schema(),
            SchemaKind::Events => crate::runner::events::json_schema(),
        }),
        Command::Run(args) => run::run(args),
        Command::Sysbench(args) => sysbench::sysbench(&args.args),
        Command::Convert(args) => sysbench::convert(&args.args),
        Command::Restore(args) => restore::restore(&args.run_dir),
        Command::Compare(args) => compare::compare(args),
        Command::Bisect(args) => bisect::bisect(&args),
        Command::Capacity(args) => capacity::capacity(&args),
        Command::Runs(args) => compare::runs(&args.results_dir, args.format),
        Command::Report(args) => report::report(&args.runs, args.out, args.svg, args.format),
        Command::Import(args) => import::import(args),
        Command::Completions(args) => print_bytes(&crate::cli::completions(args.shell)),
        Command::Man(args) => man(args.dir.as_deref()),
        Command::Agent => agent(),
    };
    exit.into()
}

/// `sbsuite agent`: serves a coordinator on stdin/stdout until it closes them.
fn agent() -> Exit {
    let input = std::io::BufReader::new(std::io::stdin());
    match crate::clients::agent::serve(input, std::io::stdout()) {
        Ok(()) => Exit::Ok,
        Err(e) => fail(Exit::Failed, format_args!("agent: {e}")),
    }
}

fn exit_now() {
    eprintln!("\n[sbsuite] second interrupt: exiting now (finished rows are on disk)");
    std::process::exit(Exit::Interrupted as i32);
}

/// Prints `error: {e}` and returns `exit`.
fn fail(exit: Exit, e: impl Display) -> Exit {
    eprintln!("error: {e}");
    exit
}

/// Prints a configuration error as it renders itself (`error: …` with file:line:col and the
/// source line, already newline-terminated); bad input.
fn fail_config(e: impl Display) -> Exit {
    eprint!("{e}");
    Exit::BadInput
}

/// `sbsuite man`: sbsuite.1 to stdout, or every page into `dir` (each file written is listed).
fn man(dir: Option<&std::path::Path>) -> Exit {
    let Some(dir) = dir else {
        return print_bytes(&crate::cli::man_page());
    };
    match crate::cli::write_man_pages(dir) {
        Ok(files) => print(
            &files
                .iter()
                .map(|f| format!("{}\n", f.display()))
                .collect::<String>(),
        ),
        Err(e) => fail(
            Exit::Failed,
            format_args!("cannot write the man pages into {}: {e}", dir.display()),
        ),
    }
}

/// Writes a command's output to stdout. A closed pipe (`sbsuite plan x | head`) is not an error
/// worth a message.
fn print(text: &str) -> Exit {
    print_bytes(text.as_bytes())
}

/// [`print`] for output that is bytes already (a generated completion script or man page).
fn print_bytes(bytes: &[u8]) -> Exit {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|_| out.flush()) {
        Ok(()) => Exit::Ok,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Exit::Ok,
        Err(e) => fail(Exit::Failed, format_args!("cannot write to stdout: {e}")),
    }
}
