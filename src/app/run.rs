//! `sbsuite run FILE` / `sbsuite run --resume RUN_DIR`: load and check, then the step loop; a
//! run's summary becomes the exit code (130 interrupted, else 1 when a step failed or ended
//! early, else 0).

use std::path::{Path, PathBuf};

use super::plan::load_plan;
use super::{Exit, fail, fail_config};
use crate::cli::{ProgressArg, RunArgs};
use std::sync::Arc;

use crate::runner::events::{Body, Events};
use crate::runner::metrics::MetricsServer;
use crate::runner::{ProgressMode, Reports, ResumeError, RunContext, RunError, RunSummary, Watch};

pub(super) fn run(args: RunArgs) -> Exit {
    let loaded = match &args.resume {
        Some(dir) => resume(dir, &args),
        None => match &args.file {
            Some(file) => load_plan(file, &args.overrides),
            None => Err(Exit::BadInput),
        },
    };
    let (suite, plan) = match loaded {
        Ok(loaded) => loaded,
        Err(exit) => return exit,
    };
    // #30: a suite that asks for its capacity runs the search instead of its plan.
    if suite.capacity.is_some() {
        return super::capacity::run(&args, suite.file.clone());
    }
    // Bound before anything else runs: an address in use is bad input, with nothing done.
    let server = match metrics_server(&args, suite.metrics.as_deref()) {
        Ok(server) => server,
        Err(exit) => return exit,
    };
    let (events, events_on_stdout) = match events_sink(args.events.as_deref()) {
        Ok(sink) => sink,
        Err(exit) => return exit,
    };
    // Results labelled with a variant whose settings were never applied would be wrong, so a
    // suite that asks for server changes this build cannot make is refused, and every
    // `set_global` is checked against the server (exists, settable at runtime) before anything
    // runs.
    let variants = match crate::runner::check_variants(&suite, &plan, false) {
        Ok(v) => v,
        Err(e) => return fail_config(e),
    };
    let base_dir = match &args.file {
        Some(f) => f.parent().map(Path::to_path_buf).unwrap_or_default(),
        None => PathBuf::from("."),
    };
    let ctx = RunContext {
        resume: args.resume.clone(),
        results_root: args.results_dir.unwrap_or(suite.results_dir.clone()),
        quiet: args.quiet,
        progress: match args.progress {
            ProgressArg::Auto => ProgressMode::Auto,
            ProgressArg::Bar => ProgressMode::Bar,
            ProgressArg::Plain => ProgressMode::Plain,
            ProgressArg::Off => ProgressMode::Off,
        },
        watch: Watch {
            metrics: server.as_ref().map(MetricsServer::metrics),
            events: events.clone(),
            reports: if events_on_stdout {
                Reports::Stderr
            } else {
                Reports::Stdout
            },
        },
        ..RunContext::for_suite(&suite, base_dir)
    };
    let result = crate::runner::run_plan(&plan, &ctx, variants);
    let exit = match &result {
        Ok(summary) => exit_of(summary),
        Err(e @ (RunError::NoEngine { .. } | RunError::Clients(_) | RunError::Preflight(_))) => {
            fail(Exit::BadInput, e)
        }
        Err(e) => fail(Exit::Failed, e),
    };
    if let Some(events) = events.filter(|e| e.started()) {
        events.emit(suite_end(&result, exit));
    }
    if let (Some(server), Some(secs)) = (&server, args.metrics_hold) {
        hold(server, secs, args.quiet);
    }
    exit
}

/// `--metrics-hold SECS`: the endpoint keeps serving the final values for SECS seconds after
/// the suite. The hold is not part of the run, so it never changes the run's exit status: the
/// first Ctrl-C/SIGTERM during it ends it, and sbsuite exits with the status the run had (0
/// after a successful run). After a run that a first signal already stopped, a signal during
/// the hold is the second one: it exits at once with 130, which is that run's status anyway.
fn hold(server: &MetricsServer, secs: u64, quiet: bool) {
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};
    if !quiet {
        eprintln!(
            "[sbsuite] serving the final metrics on http://{}/metrics for {secs} s (Ctrl-C ends it)",
            server.addr()
        );
    }
    let until = Instant::now() + Duration::from_secs(secs);
    // Installed already unless the run failed before its first step; without a handler the
    // signal's default action ends the process, which is a stop too.
    let stop = crate::runner::signal::install().ok();
    let stopped_before = stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst));
    let _note = crate::runner::signal::note_while(
        "stop: the metrics hold ends; sbsuite exits with the suite's own status",
    );
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        if !stopped_before && stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst)) {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

/// The `suite_end` event of a run that ended with `result` and exits with `exit`.
fn suite_end(result: &Result<RunSummary, RunError>, exit: Exit) -> Body {
    let (s, error) = match result {
        Ok(s) => (Some(s), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let count = |f: fn(&RunSummary) -> usize| s.map_or(0, f);
    Body::SuiteEnd {
        run_id: s.map(|s| s.run_id.clone()).unwrap_or_default(),
        steps_ok: count(|s| s.steps_ok),
        steps_failed: count(|s| s.steps_failed),
        steps_interrupted: count(|s| s.steps_interrupted),
        steps_skipped: count(|s| s.steps_skipped),
        steps_kept: count(|s| s.steps_kept),
        interrupted: s.is_some_and(|s| s.interrupted),
        exit_status: exit as i32,
        error,
    }
}

/// `--events jsonl` (stdout: true) or `--events jsonl:PATH`; `None` without the flag.
fn events_sink(spec: Option<&str>) -> Result<(Option<Arc<Events>>, bool), Exit> {
    let Some(spec) = spec else {
        return Ok((None, false));
    };
    let bad = || {
        fail(
            Exit::BadInput,
            format_args!(
                "--events `{spec}`: the format is `jsonl` (to stdout) or `jsonl:PATH` (to a file)"
            ),
        )
    };
    match spec.split_once(':') {
        None if spec == "jsonl" => Ok((
            Some(Arc::new(Events::new(Box::new(std::io::stdout())))),
            true,
        )),
        Some(("jsonl", path)) if !path.is_empty() => match std::fs::File::create(path) {
            Ok(f) => Ok((Some(Arc::new(Events::new(Box::new(f)))), false)),
            Err(e) => Err(fail(
                Exit::BadInput,
                format_args!("--events `{spec}`: cannot create {path}: {e}"),
            )),
        },
        _ => Err(bad()),
    }
}

/// The `--metrics` endpoint (or `[suite] metrics`), listening; `None` without either.
fn metrics_server(args: &RunArgs, from_suite: Option<&str>) -> Result<Option<MetricsServer>, Exit> {
    let (addr, source) = match (&args.metrics, from_suite) {
        (Some(a), _) => (a.as_str(), "--metrics"),
        (None, Some(a)) => (a, "[suite] metrics"),
        (None, None) if args.metrics_hold.is_some() => {
            return Err(fail(
                Exit::BadInput,
                "--metrics-hold keeps the metrics endpoint open after the suite: add --metrics ADDR \
                 (or set [suite] metrics)",
            ));
        }
        (None, None) => return Ok(None),
    };
    let server = MetricsServer::bind(addr, source).map_err(|e| fail(Exit::BadInput, e))?;
    if !args.quiet {
        eprintln!("[sbsuite] metrics: http://{}/metrics", server.addr());
    }
    Ok(Some(server))
}

/// How a run ended: 130 when it was interrupted, else 1 when a step failed — or ended early
/// without a stop request (forced_shutdown: the suite did not succeed, though its row keeps the
/// numbers), or, resumed, kept a failed step from before — else 0.
fn exit_of(summary: &RunSummary) -> Exit {
    if summary.interrupted {
        Exit::Interrupted
    } else if summary.steps_failed > 0
        || summary.steps_kept_failed > 0
        || summary.steps_interrupted > 0
    {
        Exit::Failed
    } else {
        Exit::Ok
    }
}

/// `--resume RUN_DIR`: `--set` would change the plan of the run being continued.
fn resume(dir: &Path, args: &RunArgs) -> Result<(crate::suite::Suite, crate::plan::Plan), Exit> {
    if !args.overrides.set.is_empty() {
        return Err(fail(
            Exit::BadInput,
            "--resume continues the run as it was planned: remove --set (start a new run to change the suite)",
        ));
    }
    let (suite, plan) = crate::runner::load_for_resume(dir).map_err(|e| match e {
        ResumeError::Config(e) => fail_config(e),
        e @ (ResumeError::NotRunDir(_)
        | ResumeError::PlanChanged(_)
        | ResumeError::LiteralPassword(_)
        | ResumeError::Password(..)
        | ResumeError::RunDir(..)) => fail(Exit::BadInput, e),
        e @ (ResumeError::Pending(_) | ResumeError::NoTarget(_) | ResumeError::Restore { .. }) => {
            fail(Exit::Failed, e)
        }
    })?;
    // The stored suite's [clients] is checked as a new run's is.
    crate::runner::clients::check_clients(&suite, &plan).map_err(fail_config)?;
    Ok((suite, plan))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(failed: usize, cut_short: usize, interrupted: bool) -> RunSummary {
        RunSummary {
            run_dir: PathBuf::new(),
            steps_ok: 1,
            steps_failed: failed,
            interrupted,
            run_id: String::new(),
            results_csv: PathBuf::new(),
            steps_skipped: 0,
            steps_interrupted: cut_short,
            steps_kept: 0,
            steps_kept_failed: 0,
        }
    }

    #[test]
    fn interrupted_wins_then_any_failed_or_cut_short_step_fails_the_run() {
        assert_eq!(exit_of(&summary(0, 0, false)), Exit::Ok);
        assert_eq!(exit_of(&summary(2, 0, false)), Exit::Failed);
        assert_eq!(exit_of(&summary(0, 1, false)), Exit::Failed);
        assert_eq!(exit_of(&summary(2, 1, true)), Exit::Interrupted);
        // #26: a resume that kept a failed step fails as the same run would have.
        let kept = RunSummary {
            steps_kept: 3,
            steps_kept_failed: 1,
            ..summary(0, 0, false)
        };
        assert_eq!(exit_of(&kept), Exit::Failed);
        assert_eq!(Exit::Interrupted as u8, 130);
    }
}
