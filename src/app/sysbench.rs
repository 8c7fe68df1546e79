//! `sbsuite sysbench ARGS…` (a sysbench command line run as-is) and `sbsuite convert` (such
//! lines turned into a suite file).

use std::io::Write;

use super::{Exit, fail, print};
use crate::compat::{self, ConvertCommandError, Outcome, SysbenchError};

/// Exit codes follow sysbench, not the suite commands: 0, or 1 for every refused line and
/// failed step (sysbench has no "bad input" code; scripts test for 1), 130 when interrupted.
pub(super) fn sysbench(raw: &[String]) -> Exit {
    match compat::sysbench(raw) {
        Ok(Outcome::Done) => Exit::Ok,
        Ok(Outcome::Interrupted) => Exit::Interrupted,
        // Unlike `sbsuite run`, a step that ended early without a stop request is not a failure
        // here: the line behaves as the same line run by sysbench.
        Ok(Outcome::Suite(s)) if s.interrupted => Exit::Interrupted,
        Ok(Outcome::Suite(s)) if s.steps_failed > 0 => Exit::Failed,
        Ok(Outcome::Suite(_)) => Exit::Ok,
        Err(e) => {
            refuse(raw, &e);
            Exit::Failed
        }
    }
}

/// sysbench's own report of the refusal (banner, line, stream), then sbsuite's explanation on
/// stderr unless the line already holds it (a failed step's `FATAL: …`).
fn refuse(raw: &[String], e: &SysbenchError) {
    let Some(r) = e.refusal(raw) else {
        match e {
            SysbenchError::Config(c) => eprint!("{c}"),
            e => eprintln!("error: {e}"),
        }
        return;
    };
    let mut stdout = std::io::stdout().lock();
    if r.banner && !compat::banner_shown() && compat::verbosity_of(raw) >= 3 {
        let _ = writeln!(stdout, "{}\n", compat::banner_line());
    }
    if r.stdout {
        let _ = writeln!(stdout, "{}", r.line);
    } else {
        eprintln!("{}", r.line);
    }
    let _ = stdout.flush();
    if let Some(hint) = e.hint() {
        eprintln!("error: {hint}");
    } else if !r.explained {
        eprintln!("error: {e}");
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
