//! `sbsuite sysbench ARGS…` (a sysbench command line run as-is) and `sbsuite convert` (such
//! lines turned into a suite file).

use super::{Exit, fail, fail_config, print};
use crate::compat::{self, ConvertCommandError, Outcome, SysbenchError};

pub(super) fn sysbench(raw: &[String]) -> Exit {
    match compat::sysbench(raw) {
        Ok(Outcome::Done) => Exit::Ok,
        Ok(Outcome::Interrupted) => Exit::Interrupted,
        // Unlike `sbsuite run`, a step that ended early without a stop request is not a failure
        // here: the line behaves as the same line run by sysbench.
        Ok(Outcome::Suite(s)) if s.interrupted => Exit::Interrupted,
        Ok(Outcome::Suite(s)) if s.steps_failed > 0 => Exit::Failed,
        Ok(Outcome::Suite(_)) => Exit::Ok,
        Err(e) => match e {
            SysbenchError::Step(e) => {
                eprintln!("FATAL: {e}");
                Exit::Failed
            }
            SysbenchError::Config(e) => fail_config(e),
            e @ (SysbenchError::Signal(_) | SysbenchError::Run(_)) => fail(Exit::Failed, e),
            e @ (SysbenchError::Args(_)
            | SysbenchError::Target(_)
            | SysbenchError::ResultsNeedRun(_)
            | SysbenchError::Convert(_)) => fail(Exit::BadInput, e),
        },
    }
}

pub(super) fn convert(raw: &[String]) -> Exit {
    match compat::convert(raw) {
        Ok((text, notes)) => {
            for n in notes {
                eprintln!("{n}");
            }
            print(&text)
        }
        Err(e @ ConvertCommandError::Stdin(_)) => fail(Exit::Failed, e),
        Err(e @ ConvertCommandError::Convert(_)) => fail(Exit::BadInput, e),
    }
}
