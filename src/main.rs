//! The `sbsuite` binary: parse the command line and hand it to [`sbsuite::app`], which runs the
//! command, prints its errors and picks the exit code (0 ok, 1 a step failed, 2 bad input, 130
//! interrupted).

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    sbsuite::app::run(sbsuite::cli::Cli::parse())
}
