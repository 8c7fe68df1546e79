//! The `sbsuite` binary: parse the command line, call the library, map the outcome to an exit
//! code (0 ok, 1 a step failed, 2 bad input, 130 interrupted).

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = sbsuite::cli::Cli::parse();
    ExitCode::from(sbsuite::commands::execute(cli))
}
