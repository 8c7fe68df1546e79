//! Tests of the step loop's policy, run deterministically with a scripted [`StepExecutor`]
//! (variants, hooks, `on_error`, resume, checks, commands, stops and forced shutdowns) and a
//! few with the real engines.

use super::*;
use crate::engine::{IntervalSample, LatencySummary, SqlCounters};
use crate::value::{Options, Value};
use hdrhistogram::Histogram;
use indexmap::IndexMap;
use std::collections::HashSet;
use std::path::Path;

mod variants;

fn step(index: usize, kind: StepKind, name: &str, dataset: usize) -> Step {
    let mut params = IndexMap::new();
    params.insert("threads".into(), Value::Int(2));
    let mut options = Options::default();
    options.0.insert("threads".into(), Value::Int(2));
    Step {
        index,
        kind,
        name: name.into(),
        variant: "default".into(),
        workload: "fake".into(),
        spec: None,
        dataset,
        repetition: u32::from(kind == StepKind::Run),
        params,
        options,
        command: None,
        estimated_seconds: (kind == StepKind::Run).then_some(1.0),
        phases: Vec::new(),
        groups: Vec::new(),
        target: None,
    }
}

/// prepare ds1, three runs, cleanup ds1, prepare ds2, one run, cleanup ds2.
fn plan() -> Plan {
    use StepKind::*;
    let steps = [
        (Prepare, "prepare-1", 1),
        (Run, "a", 1),
        (Run, "b", 1),
        (Run, "c", 1),
        (Cleanup, "cleanup-1", 1),
        (Prepare, "prepare-2", 2),
        (Run, "d", 2),
        (Cleanup, "cleanup-2", 2),
    ];
    Plan {
        suite: "unit".into(),
        target: None,
        variant_order: Default::default(),
        order_seed: None,
        dataset: Default::default(),
        axes: vec!["threads".into()],
        steps: steps
            .iter()
            .enumerate()
            .map(|(i, (k, n, d))| step(i + 1, *k, n, *d))
            .collect(),
    }
}

fn outcome(interrupted: bool) -> StepOutcome {
    let mut histogram = Histogram::<u64>::new(3).unwrap();
    histogram.record(1_500_000).unwrap();
    StepOutcome {
        error_codes: Default::default(),
        seconds: 1.0,
        events: 10,
        sql: Some(SqlCounters {
            transactions: 10,
            ..Default::default()
        }),
        latency: LatencySummary {
            min_ms: 1.5,
            ..Default::default()
        },
        fairness_events_avg: 5.0,
        fairness_events_stddev: 0.0,
        fairness_time_avg: 0.5,
        fairness_time_stddev: 0.0,
        histogram,
        interrupted,
        cut_short: None,
        metrics: Vec::new(),
        transactions: Vec::new(),
        per_thread: Vec::new(),
        steady: Default::default(),
        phases: Vec::new(),
        groups: Vec::new(),
        open_loop: None,
    }
}

/// Scripted engine: records every call, fails or stops on chosen step indexes.
#[derive(Default)]
struct Script {
    no_engine: HashSet<&'static str>,
    fail: HashSet<usize>,
    /// Sets the stop flag while this step runs (like a Ctrl-C mid-step).
    stop_during: Option<usize>,
    /// Like `stop_during`, but the engine then returns an error instead of an outcome.
    stop_with_error: bool,
    calls: Vec<(usize, StepKind)>,
    /// The stop flag's value as each cleanup saw it.
    cleanup_saw_stop: Vec<bool>,
    /// When set: the results root, to count the rows already on disk as each run starts.
    peek_root: Option<PathBuf>,
    rows_on_disk: Vec<usize>,
    /// `begin x` / `end x` in call order, interleaved with steps as `step N`.
    variant_calls: Vec<String>,
    /// A variant whose `begin_variant` fails.
    fail_variant: Option<&'static str>,
    /// Runs cut short by forced_shutdown (no stop request), with this reason.
    cut_short: HashSet<usize>,
    /// Runs whose worker threads could not be stopped.
    unstoppable: HashSet<usize>,
    /// Prepares that cannot reach the server.
    unreachable: HashSet<usize>,
    /// The variant whose capture (in `begin_variant`) cannot reach the server.
    capture_unreachable: Option<&'static str>,
    /// Set by `begin_variant`, taken by `take_unreachable`.
    pending_unreachable: Option<String>,
    /// The commands of command steps, in call order.
    commands: Vec<String>,
    /// `begin x@stage` / `end x@stage` go into `variant_calls` too.
    log_stages: bool,
    /// A variant's stage whose `begin_stage` fails.
    fail_stage: Option<(&'static str, Stage)>,
}

impl StepExecutor for Script {
    fn has_engine(&self, step: &Step) -> bool {
        !self.no_engine.contains(step.workload.as_str())
    }

    fn prepare(
        &mut self,
        step: &Step,
        cleanup: bool,
        out: &mut dyn Write,
        stop: &AtomicBool,
    ) -> Result<(), EngineError> {
        assert_eq!(cleanup, step.kind == StepKind::Cleanup);
        self.calls.push((step.index, step.kind));
        self.variant_calls.push(format!("step {}", step.index));
        if cleanup {
            self.cleanup_saw_stop.push(stop.load(Ordering::SeqCst));
        }
        writeln!(out, "{} done", step.kind.as_str()).unwrap();
        if self.fail.contains(&step.index) {
            return Err(EngineError::Failed("table sbtest1 exists".into()));
        }
        if self.unreachable.contains(&step.index) {
            return Err(EngineError::Unreachable("connect timed out".into()));
        }
        Ok(())
    }

    fn run(
        &mut self,
        step: &Step,
        out: &mut dyn Write,
        on_interval: &mut dyn StepObserver,
        stop: &AtomicBool,
    ) -> Result<StepOutcome, EngineError> {
        self.calls.push((step.index, step.kind));
        self.variant_calls.push(format!("step {}", step.index));
        if let Some(root) = &self.peek_root {
            let run_dir = std::fs::read_dir(root.join("unit"))
                .unwrap()
                .next()
                .unwrap()
                .unwrap()
                .path();
            self.rows_on_disk
                .push(rows(&run_dir.join("results.csv")).len());
        }
        write!(out, "report of {}", step.name).unwrap();
        writeln!(out).unwrap();
        for t in [1.0, 2.0] {
            on_interval.interval(&IntervalSample {
                time_s: t,
                threads: 2,
                eps: 10.0,
                ..Default::default()
            });
        }
        if self.fail.contains(&step.index) {
            return Err(EngineError::Failed("connection refused".into()));
        }
        if self.stop_during == Some(step.index) {
            stop.store(true, Ordering::SeqCst);
            if self.stop_with_error {
                return Err(EngineError::Failed("query interrupted".into()));
            }
            return Ok(outcome(true));
        }
        if self.unstoppable.contains(&step.index) {
            return Err(EngineError::Unstoppable(
                "2 worker thread(s) of this step did not stop".into(),
            ));
        }
        if self.cut_short.contains(&step.index) {
            return Ok(StepOutcome {
                cut_short: Some("forced_shutdown: 1 worker(s) still in an event".into()),
                ..outcome(true)
            });
        }
        Ok(outcome(false))
    }

    fn check(
        &mut self,
        step: &Step,
        out: &mut dyn Write,
        _stop: &AtomicBool,
    ) -> Result<(), EngineError> {
        self.calls.push((step.index, step.kind));
        self.variant_calls.push(format!("step {}", step.index));
        writeln!(out, "check 'x': ok").unwrap();
        if self.fail.contains(&step.index) {
            return Err(EngineError::Failed(
                "check 'x' failed: `SELECT 1`: expected 0, found '1'".into(),
            ));
        }
        Ok(())
    }

    fn command(
        &mut self,
        step: &Step,
        out: &mut dyn Write,
        _stop: &AtomicBool,
    ) -> Result<(), EngineError> {
        self.calls.push((step.index, step.kind));
        let name = step.command.clone().unwrap_or_default();
        writeln!(out, "{name}: ok").unwrap();
        self.commands.push(name);
        if self.fail.contains(&step.index) {
            return Err(EngineError::Failed("demo1 has 3 rows, expected 20".into()));
        }
        Ok(())
    }

    fn begin_variant(&mut self, variant: &str, _run_dir: &Path) -> Result<(), ServerError> {
        self.variant_calls.push(format!("begin {variant}"));
        if self.fail_variant == Some(variant) {
            return Err(ServerError::File {
                action: "SET GLOBAL x".into(),
                source: std::io::Error::other("failed"),
            });
        }
        if self.capture_unreachable == Some(variant) {
            self.pending_unreachable = Some("capture timed out".into());
        }
        Ok(())
    }

    fn take_unreachable(&mut self) -> Option<String> {
        self.pending_unreachable.take()
    }

    fn end_variant(&mut self, variant: &str, _run_dir: &Path) -> Result<(), ServerError> {
        self.variant_calls.push(format!("end {variant}"));
        Ok(())
    }

    fn begin_stage(
        &mut self,
        variant: &str,
        stage: Stage,
        _run_dir: &Path,
    ) -> Result<(), ServerError> {
        if self.log_stages {
            self.variant_calls.push(format!("begin {variant}@{stage}"));
        }
        if self
            .fail_stage
            .is_some_and(|(v, s)| v == variant && s == stage)
        {
            return Err(ServerError::File {
                action: "ALTER SYSTEM SET x".into(),
                source: std::io::Error::other("failed"),
            });
        }
        Ok(())
    }

    fn end_stage(
        &mut self,
        variant: &str,
        stage: Stage,
        _run_dir: &Path,
    ) -> Result<(), ServerError> {
        if self.log_stages {
            self.variant_calls.push(format!("end {variant}@{stage}"));
        }
        Ok(())
    }
}

fn run_with(script: &mut Script, c: RunContext) -> RunSummary {
    let stop = AtomicBool::new(false);
    run_plan_with(&variants::variant_plan(), &c, script, &stop, Vec::new()).unwrap()
}

fn hooks_logging_to(file: &Path, on_error: OnError) -> RawHooks {
    let log = |what: &str| Some(format!("echo '{what}' >> {}", file.display()));
    RawHooks {
        timeout: 10,
        on_error,
        before_suite: log("before_suite {{ suite }}"),
        after_suite: log("after_suite"),
        before_variant: log("before_variant {{ variant }}"),
        after_variant: log("after_variant {{ variant }}"),
        before_dataset: log("before_dataset {{ dataset }}"),
        after_dataset: log("after_dataset {{ dataset }}"),
        before_step: log("before_step {{ kind }} {{ step }} t{{ threads }}"),
        after_step: log("after_step {{ index }}"),
    }
}

#[test]
fn hooks_run_around_the_suite_variants_datasets_and_steps() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("hooks.txt");
    let mut c = ctx(root.path());
    c.hooks = hooks_logging_to(&file, OnError::Stop);
    let summary = run_with(&mut Script::default(), c);
    assert_eq!(summary.steps_failed, 0);
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "before_suite unit",
            "before_variant a",
            "before_dataset 1",
            "before_step prepare prepare-1 t2",
            "after_step 1",
            "before_step run a t2",
            "after_step 2",
            "before_step run b t2",
            "after_step 3",
            "before_step run c t2",
            "after_step 4",
            "before_step cleanup cleanup-1 t2",
            "after_step 5",
            "after_dataset 1",
            "after_variant a",
            "before_variant b",
            "before_dataset 2",
            "before_step prepare prepare-2 t2",
            "after_step 6",
            "before_step run d t2",
            "after_step 7",
            "before_step cleanup cleanup-2 t2",
            "after_step 8",
            "after_dataset 2",
            "after_variant b",
            "after_suite",
        ]
    );
    let log = std::fs::read_to_string(summary.run_dir.join("hooks.log")).unwrap();
    assert!(
        log.contains("before_step: echo 'before_step run d t2'"),
        "{log}"
    );
}

#[test]
fn a_failing_before_step_hook_with_skip_fails_that_step_only() {
    let root = tempfile::tempdir().unwrap();
    let mut c = ctx(root.path());
    c.hooks = RawHooks {
        timeout: 10,
        on_error: OnError::Skip,
        before_step: Some("test {{ step }} != b".into()),
        ..Default::default()
    };
    let mut script = Script::default();
    let summary = run_with(&mut script, c);
    assert_eq!(summary.steps_failed, 2, "the hook and step b");
    let r = rows(&summary.results_csv);
    let b = r.iter().find(|x| x.0 == "3").unwrap();
    assert_eq!(b.1, "failed");
    assert!(b.2.contains("before_step hook failed"), "{r:?}");
    assert!(!script.calls.contains(&(3, StepKind::Run)));
    assert_eq!(script.calls.len(), 7, "every other step ran");
}

#[test]
fn a_failing_hook_with_stop_halts_but_cleans_up_and_restores() {
    let root = tempfile::tempdir().unwrap();
    let mut c = ctx(root.path());
    c.hooks = RawHooks {
        timeout: 10,
        on_error: OnError::Stop,
        after_step: Some("test {{ index }} != 2".into()),
        ..Default::default()
    };
    let mut script = Script::default();
    let summary = run_with(&mut script, c);
    assert!(!summary.interrupted);
    assert_eq!(summary.steps_failed, 1);
    assert_eq!(
        script.variant_calls,
        ["begin a", "step 1", "step 2", "step 5", "end a"]
    );
}

#[test]
fn on_error_skip_skips_the_rest_of_the_dataset_and_stop_halts_the_suite() {
    let root = tempfile::tempdir().unwrap();
    let mut c = ctx(root.path());
    c.on_error = OnError::Skip;
    let mut script = Script {
        fail: [2].into(),
        ..Default::default()
    };
    let summary = run_with(&mut script, c.clone());
    assert_eq!(summary.steps_failed, 1);
    assert_eq!(
        script.variant_calls,
        [
            "begin a", "step 1", "step 2", "step 5", "end a", "begin b", "step 6", "step 7",
            "step 8", "end b"
        ]
    );
    c.on_error = OnError::Stop;
    let mut script = Script {
        fail: [2].into(),
        ..Default::default()
    };
    let summary = run_with(&mut script, c);
    assert_eq!(summary.steps_failed, 1);
    assert_eq!(
        script.variant_calls,
        ["begin a", "step 1", "step 2", "step 5", "end a"]
    );
}

#[test]
fn resume_keeps_finished_work_and_prepares_only_what_is_missing() {
    let p = plan(); // ds1: 1 prepare, 2-4 runs, 5 cleanup; ds2: 6 prepare, 7 run, 8 cleanup
    let journal = |events: &[(usize, &str)]| -> HashMap<usize, String> {
        events.iter().map(|(i, e)| (*i, e.to_string())).collect()
    };
    // Killed during run 3: ds1's data is in place, run 2 kept.
    let r = resume_plan(&p, &[2].into(), &journal(&[(1, "done")]));
    let mut todo: Vec<usize> = r.todo.iter().copied().collect();
    todo.sort();
    assert_eq!(todo, [3, 4, 5, 6, 7, 8]);
    assert!(r.prepared.contains(&1) && r.half_prepared.is_empty());
    // Killed during ds2's prepare: ds1 complete, ds2 dropped and prepared again.
    let r = resume_plan(
        &p,
        &[2, 3, 4].into(),
        &journal(&[(1, "done"), (5, "done"), (6, "start")]),
    );
    let mut todo: Vec<usize> = r.todo.iter().copied().collect();
    todo.sort();
    assert_eq!(todo, [6, 7, 8]);
    assert!(r.half_prepared.contains(&2));
    // A fresh run does everything.
    assert_eq!(
        resume_plan(&p, &Default::default(), &HashMap::new())
            .todo
            .len(),
        8
    );
}

/// [`plan`] with a check step after each dataset's runs: ds1: 1 prepare, 2-4 runs,
/// 5 check, 6 cleanup; ds2: 7 prepare, 8 run, 9 check, 10 cleanup.
fn check_plan() -> Plan {
    let mut p = plan();
    for at in [3, 7] {
        let d = p.steps[at].dataset;
        p.steps.insert(at + 1, step(0, StepKind::Check, "check", d));
    }
    for (i, s) in p.steps.iter_mut().enumerate() {
        s.index = i + 1;
    }
    p
}

#[test]
fn a_check_runs_after_the_runs_is_journaled_and_a_failed_one_is_a_failed_step() {
    let root = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(false);
    let mut script = Script::default();
    let mut report = Vec::new();
    let summary = run_plan_with(
        &check_plan(),
        &ctx(root.path()),
        &mut script,
        &stop,
        &mut report,
    )
    .unwrap();
    assert_eq!((summary.steps_ok, summary.steps_failed), (10, 0));
    let calls: Vec<usize> = script.calls.iter().map(|c| c.0).collect();
    assert_eq!(calls, (1..=10).collect::<Vec<_>>());
    let report = String::from_utf8(report).unwrap();
    assert!(
        report.contains("==> [5/10] check check (variant default)\ncheck 'x': ok\n"),
        "{report}"
    );
    let journal = crate::results::read_journal(summary.results_csv.parent().unwrap());
    assert_eq!(journal[&5], "done");
    assert_eq!(journal[&9], "done");

    // A failed check with on_error = "stop": a failed step, no further runs; the cleanup
    // of the data in place still runs.
    let root = tempfile::tempdir().unwrap();
    let mut script = Script {
        fail: [5].into(),
        ..Default::default()
    };
    let c = RunContext {
        on_error: OnError::Stop,
        ..ctx(root.path())
    };
    let summary = run_plan_with(&check_plan(), &c, &mut script, &stop, Vec::new()).unwrap();
    assert_eq!(summary.steps_failed, 1);
    let calls: Vec<usize> = script.calls.iter().map(|c| c.0).collect();
    assert_eq!(calls, [1, 2, 3, 4, 5, 6]);
    let journal = crate::results::read_journal(summary.results_csv.parent().unwrap());
    assert_eq!(journal[&5], "failed");

    // A dataset whose prepare failed is not checked.
    let root = tempfile::tempdir().unwrap();
    let mut script = Script {
        fail: [7].into(),
        ..Default::default()
    };
    let mut report = Vec::new();
    run_plan_with(
        &check_plan(),
        &ctx(root.path()),
        &mut script,
        &stop,
        &mut report,
    )
    .unwrap();
    assert!(!script.calls.contains(&(9, StepKind::Check)));
    let report = String::from_utf8(report).unwrap();
    assert!(
        report.contains(
            "==> [9/10] check check (variant default): skipped, the dataset was not prepared"
        ),
        "{report}"
    );
}

/// #26: a plan of `dataset = "existing"` has no prepare: its data is ready, so its checks
/// run, and nothing is cleaned up.
#[test]
fn the_checks_of_an_existing_dataset_run_without_a_prepare() {
    let mut p = check_plan();
    p.steps
        .retain(|s| !matches!(s.kind, StepKind::Prepare | StepKind::Cleanup));
    for (i, s) in p.steps.iter_mut().enumerate() {
        s.index = i + 1;
    }
    p.dataset = crate::suite::raw::DatasetSource::Existing;
    let root = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(false);
    let mut script = Script::default();
    let summary = run_plan_with(&p, &ctx(root.path()), &mut script, &stop, Vec::new()).unwrap();
    assert_eq!((summary.steps_ok, summary.steps_failed), (6, 0));
    let kinds: Vec<StepKind> = script.calls.iter().map(|c| c.1).collect();
    use StepKind::*;
    assert_eq!(kinds, [Run, Run, Run, Check, Run, Check]);
}

/// [`plan`] with a script's `prewarm` after dataset 1's prepare (step 2) and, last, a
/// `check` of a script without data (dataset 0, step 10).
fn command_plan() -> Plan {
    let mut p = plan();
    let mut prewarm = step(0, StepKind::Command, "prewarm demo", 1);
    prewarm.command = Some("prewarm".into());
    p.steps.insert(1, prewarm);
    let mut check = step(0, StepKind::Command, "check demo", 0);
    check.command = Some("check".into());
    p.steps.push(check);
    for (i, s) in p.steps.iter_mut().enumerate() {
        s.index = i + 1;
    }
    p
}

#[test]
fn a_command_step_runs_the_scripts_command_journaled_like_a_check() {
    let root = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(false);
    let mut script = Script::default();
    let mut report = Vec::new();
    let summary = run_plan_with(
        &command_plan(),
        &ctx(root.path()),
        &mut script,
        &stop,
        &mut report,
    )
    .unwrap();
    assert_eq!((summary.steps_ok, summary.steps_failed), (10, 0));
    assert_eq!(script.commands, ["prewarm", "check"]);
    assert!(script.calls.contains(&(2, StepKind::Command)));
    assert!(script.calls.contains(&(10, StepKind::Command)));
    let report = String::from_utf8(report).unwrap();
    assert!(
        report.contains("==> [2/10] command prewarm demo (variant default)\nprewarm: ok\n"),
        "{report}"
    );
    let journal = crate::results::read_journal(summary.results_csv.parent().unwrap());
    assert_eq!(
        (journal[&2].as_str(), journal[&10].as_str()),
        ("done", "done")
    );

    // A failing command is a failed step; a command on data whose prepare failed is
    // skipped.
    let root = tempfile::tempdir().unwrap();
    let mut script = Script {
        fail: [1, 10].into(),
        ..Default::default()
    };
    let mut report = Vec::new();
    let summary = run_plan_with(
        &command_plan(),
        &ctx(root.path()),
        &mut script,
        &stop,
        &mut report,
    )
    .unwrap();
    assert_eq!(script.commands, ["check"]);
    let report = String::from_utf8(report).unwrap();
    assert!(
        report.contains("==> [2/10] command prewarm demo (variant default): skipped, the dataset was not prepared"),
        "{report}"
    );
    let journal = crate::results::read_journal(summary.results_csv.parent().unwrap());
    assert_eq!(journal[&10], "failed");

    // On resume a command that passed is not run again, one that did not is.
    let p = command_plan();
    let events: HashMap<usize, String> = [(1, "done"), (2, "done"), (10, "failed")]
        .iter()
        .map(|(i, e)| (*i, e.to_string()))
        .collect();
    let todo = resume_plan(&p, &HashSet::new(), &events).todo;
    assert!(!todo.contains(&2) && todo.contains(&10), "{todo:?}");
}

#[test]
fn resume_checks_again_unless_the_check_passed_or_the_data_is_gone() {
    let p = check_plan();
    let journal = |events: &[(usize, &str)]| -> HashMap<usize, String> {
        events.iter().map(|(i, e)| (*i, e.to_string())).collect()
    };
    let todo = |finished: &[usize], events: &[(usize, &str)]| {
        let finished: HashSet<usize> = finished.iter().copied().collect();
        let mut t: Vec<usize> = resume_plan(&p, &finished, &journal(events))
            .todo
            .into_iter()
            .collect();
        t.sort();
        t
    };
    // Killed during the check: the data is in place, the check runs again on it.
    assert_eq!(
        todo(&[2, 3, 4], &[(1, "done"), (5, "start")]),
        [5, 6, 7, 8, 9, 10]
    );
    // A failed check runs again too; a passed one does not.
    assert_eq!(
        todo(&[2, 3, 4], &[(1, "done"), (5, "failed")]),
        [5, 6, 7, 8, 9, 10]
    );
    assert_eq!(
        todo(&[2, 3, 4], &[(1, "done"), (5, "done")]),
        [6, 7, 8, 9, 10]
    );
    // After the cleanup there is nothing left to check.
    assert_eq!(
        todo(&[2, 3, 4], &[(1, "done"), (5, "failed"), (6, "done")]),
        [7, 8, 9, 10]
    );
}

fn ctx(root: &Path) -> RunContext {
    RunContext {
        results_root: root.to_path_buf(),
        suite_text: "[suite]\nname = \"unit\"\n".into(),
        quiet: true,
        progress: ProgressMode::Auto,
        base_dir: PathBuf::from("."),
        hooks: RawHooks::default(),
        faults: Vec::new(),
        on_error: OnError::Continue,
        rate_overflow: RateOverflow::Fail,
        resume: None,
        stop_when: Vec::new(),
        repeat_until: None,
        watch: Watch::default(),
        clients: None,
        cost: Default::default(),
    }
}

fn run(script: &mut Script, root: &Path) -> (RunSummary, String) {
    let stop = AtomicBool::new(false);
    let mut report = Vec::new();
    let summary = run_plan_with(&plan(), &ctx(root), script, &stop, &mut report).unwrap();
    (summary, String::from_utf8(report).unwrap())
}

/// (step, status, error) of every results.csv row.
fn rows(path: &Path) -> Vec<(String, String, String)> {
    let mut r = ::csv::Reader::from_path(path).unwrap();
    let h = r.headers().unwrap().clone();
    let at = |name: &str| h.iter().position(|c| c == name).unwrap();
    let (step, status, error) = (at("step"), at("status"), at("error"));
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            (
                rec[step].to_string(),
                rec[status].to_string(),
                rec[error].to_string(),
            )
        })
        .collect()
}

fn row(step: &str, status: &str, error: &str) -> (String, String, String) {
    (step.into(), status.into(), error.into())
}

#[test]
fn all_steps_ok() {
    let tmp = tempfile::tempdir().unwrap();
    let mut script = Script {
        peek_root: Some(tmp.path().to_path_buf()),
        ..Default::default()
    };
    let (summary, report) = run(&mut script, tmp.path());
    // Each row is on disk (and readable) before the next step starts.
    assert_eq!(script.rows_on_disk, [0, 1, 2, 3]);
    assert_eq!(summary.steps_ok, 8);
    assert_eq!(summary.steps_failed, 0);
    assert!(!summary.interrupted);
    assert_eq!(
        summary.run_dir,
        tmp.path().join("unit").join(&summary.run_id)
    );
    assert_eq!(
        rows(&summary.results_csv),
        ["2", "3", "4", "7"].map(|s| row(s, "ok", ""))
    );
    assert!(report.starts_with("==> [1/8] prepare prepare-1 (variant default)\nprepare done\n"));
    assert!(report.contains("==> [3/8] run b (variant default)\nreport of b\n"));
    let intervals = std::fs::read_to_string(summary.run_dir.join("intervals.csv")).unwrap();
    assert_eq!(intervals.lines().count(), 1 + 4 * 2);
    assert!(summary.run_dir.join("histograms/7-d.hdr").is_file());
}

/// A writer tests can read back after handing it away.
#[derive(Clone, Default)]
struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The server's rates of a step's last interval (#29) are gauges of the running step, the
/// server's CPU in seconds per second; they go when the step is over.
#[test]
fn server_rates_are_gauges_of_the_running_step_only() {
    let m = metrics::Metrics::new();
    m.suite_started(&plan(), "r1");
    m.step_state(1, "running", false);
    m.server(
        1,
        &vec![
            (crate::db::counters::FSYNCS_PS, 12.5),
            (super::cost::SERVER_CPU_PCT, 150.0),
            ("tps", 9.0),
        ],
    );
    let line = |text: &str, name: &str| {
        text.lines()
            .find(|l| l.starts_with(name) && l.contains("step=\"2\""))
            .map(str::to_string)
    };
    let scrape = m.encode();
    let fsyncs = line(&scrape, "sbsuite_server_fsyncs_per_second{").expect("fsyncs");
    assert!(fsyncs.ends_with(" 12.5"), "{fsyncs}");
    let cpu = line(&scrape, "sbsuite_server_cpu_seconds_per_second{").expect("cpu");
    assert!(cpu.ends_with(" 1.5"), "{cpu}");
    // Not read this interval: no series.
    assert_eq!(line(&scrape, "sbsuite_server_log_bytes_per_second{"), None);
    m.step_state(1, "done", true);
    let scrape = m.encode();
    assert_eq!(
        line(&scrape, "sbsuite_server_fsyncs_per_second{"),
        None,
        "{scrape}"
    );
}

/// The watchers see every step end once, with how it ended: one `step_end` per step of
/// the plan (the failed run's with its `failed` row), the run steps' interval samples, the
/// failure as a warning; the metrics' step states and progress agree.
#[test]
fn watchers_see_every_step_end_once_with_its_status() {
    let tmp = tempfile::tempdir().unwrap();
    let buffer = Shared::default();
    let metrics = std::sync::Arc::new(metrics::Metrics::new());
    let c = RunContext {
        watch: Watch {
            metrics: Some(metrics.clone()),
            events: Some(std::sync::Arc::new(events::Events::new(Box::new(
                buffer.clone(),
            )))),
            reports: Reports::Stdout,
        },
        ..ctx(tmp.path())
    };
    let mut script = Script {
        fail: HashSet::from([3]),
        ..Default::default()
    };
    let stop = AtomicBool::new(false);
    run_plan_with(&plan(), &c, &mut script, &stop, io::sink()).unwrap();
    let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ends: Vec<(u64, String)> = events
        .iter()
        .filter(|e| e["event"] == "step_end")
        .map(|e| {
            (
                e["step"].as_u64().unwrap(),
                e["status"].as_str().unwrap().into(),
            )
        })
        .collect();
    let expected: Vec<(u64, String)> = (1..=8)
        .map(|i| (i, if i == 3 { "failed" } else { "done" }.to_string()))
        .collect();
    assert_eq!(ends, expected);
    let failed = events
        .iter()
        .find(|e| e["event"] == "step_end" && e["step"] == 3)
        .unwrap();
    assert_eq!(failed["row"]["status"], "failed");
    assert_eq!(failed["row"]["error"], "connection refused");
    let intervals = events.iter().filter(|e| e["event"] == "interval").count();
    assert_eq!(intervals, 4 * 2, "two samples per run step");
    assert!(events.iter().any(|e| {
        e["event"] == "warning"
            && e["message"]
                .as_str()
                .unwrap()
                .contains("step 3/8 run b failed")
    }));
    assert_eq!(events[0]["event"], "suite_start");
    assert_eq!(events[0]["runs_total"], 4);

    let scrape = metrics.encode();
    assert!(
        scrape.contains("sbsuite_steps_done{suite=\"unit\""),
        "{scrape}"
    );
    let state = |step: usize, state: &str| {
        scrape.lines().any(|l| {
            l.starts_with("sbsuite_step_state{")
                && l.contains(&format!("step=\"{step}\""))
                && l.contains(&format!("state=\"{state}\""))
                && l.ends_with(" 1")
        })
    };
    assert!(
        state(3, "failed") && state(2, "done") && state(8, "done"),
        "{scrape}"
    );
    assert!(!scrape.contains("state=\"pending\"") && !scrape.contains("state=\"running\""));
    let done = scrape
        .lines()
        .find(|l| l.starts_with("sbsuite_steps_done{"))
        .unwrap();
    assert!(done.ends_with(" 8"), "{done}");
    // A run's counters end on its outcome's totals, even without live samples.
    let events_of = |step: usize| {
        scrape
            .lines()
            .find(|l| {
                l.starts_with("sbsuite_events_total{") && l.contains(&format!("step=\"{step}\""))
            })
            .map(|l| l.rsplit(' ').next().unwrap().to_string())
    };
    assert_eq!(events_of(2).as_deref(), Some("10"));
    assert_eq!(events_of(3), None, "the failed run measured nothing");
}

#[test]
fn a_failed_run_is_recorded_and_the_suite_continues() {
    let tmp = tempfile::tempdir().unwrap();
    let mut script = Script {
        fail: HashSet::from([3]),
        ..Default::default()
    };
    let (summary, _) = run(&mut script, tmp.path());
    assert_eq!((summary.steps_ok, summary.steps_failed), (7, 1));
    assert_eq!(
        rows(&summary.results_csv),
        [
            row("2", "ok", ""),
            row("3", "failed", "connection refused"),
            row("4", "ok", ""),
            row("7", "ok", ""),
        ]
    );
    assert_eq!(script.calls.len(), 8);
    assert!(!summary.run_dir.join("histograms/3-b.hdr").exists());
}

#[test]
fn a_failed_prepare_fails_its_runs_but_still_cleans_up() {
    let tmp = tempfile::tempdir().unwrap();
    let mut script = Script {
        fail: HashSet::from([1]),
        ..Default::default()
    };
    let (summary, report) = run(&mut script, tmp.path());
    let failed = "prepare failed: table sbtest1 exists";
    assert_eq!(
        rows(&summary.results_csv),
        [
            row("2", "failed", failed),
            row("3", "failed", failed),
            row("4", "failed", failed),
            row("7", "ok", ""),
        ]
    );
    use StepKind::*;
    assert_eq!(
        script.calls,
        [
            (1, Prepare),
            (5, Cleanup),
            (6, Prepare),
            (7, Run),
            (8, Cleanup)
        ]
    );
    assert_eq!((summary.steps_ok, summary.steps_failed), (4, 4));
    assert!(report.contains("==> [2/8] run a (variant default): skipped, prepare failed\n"));
}

#[test]
fn an_unreachable_prepare_fails_its_runs_and_skips_its_cleanup() {
    let tmp = tempfile::tempdir().unwrap();
    let mut script = Script {
        unreachable: HashSet::from([1]),
        ..Default::default()
    };
    let (summary, report) = run(&mut script, tmp.path());
    let why = "skipped: the server was unreachable at prepare: connect timed out";
    assert_eq!(
        rows(&summary.results_csv),
        [
            row("2", "failed", why),
            row("3", "failed", why),
            row("4", "failed", why),
            row("7", "ok", ""),
        ]
    );
    // The next dataset tries again.
    use StepKind::*;
    assert_eq!(
        script.calls,
        [(1, Prepare), (6, Prepare), (7, Run), (8, Cleanup)]
    );
    assert_eq!(
        (
            summary.steps_ok,
            summary.steps_failed,
            summary.steps_skipped
        ),
        (3, 4, 1)
    );
    assert!(report.contains(
        "==> [5/8] cleanup cleanup-1 (variant default): skipped, the server was unreachable at prepare\n"
    ));
}

#[test]
fn an_unreachable_capture_fails_the_first_dataset_without_connecting_again() {
    let tmp = tempfile::tempdir().unwrap();
    let mut script = Script {
        capture_unreachable: Some("a"),
        ..Default::default()
    };
    let summary = run_with(&mut script, ctx(tmp.path()));
    let why = "skipped: the server was unreachable at capture: capture timed out";
    assert_eq!(
        rows(&summary.results_csv),
        [
            row("2", "failed", why),
            row("3", "failed", why),
            row("4", "failed", why),
            row("7", "ok", ""),
        ]
    );
    let expected = [
        "begin a", "end a", "begin b", "step 6", "step 7", "step 8", "end b",
    ];
    assert_eq!(script.variant_calls, expected);
    assert_eq!(
        (
            summary.steps_ok,
            summary.steps_failed,
            summary.steps_skipped
        ),
        (3, 4, 1)
    );
}

#[test]
fn stop_during_a_run_records_it_skips_the_rest_and_cleans_up() {
    let tmp = tempfile::tempdir().unwrap();
    let mut script = Script {
        stop_during: Some(3),
        ..Default::default()
    };
    let (summary, report) = run(&mut script, tmp.path());
    assert!(summary.interrupted);
    assert_eq!(
        rows(&summary.results_csv),
        [row("2", "ok", ""), row("3", "interrupted", "")]
    );
    use StepKind::*;
    // Run 4 and all of dataset 2 (never prepared) are skipped; dataset 1 is cleaned up,
    // and the cleanup does not see the stop flag.
    assert_eq!(
        script.calls,
        [(1, Prepare), (2, Run), (3, Run), (5, Cleanup)]
    );
    assert_eq!(script.cleanup_saw_stop, [false]);
    assert_eq!(
        (
            summary.steps_ok,
            summary.steps_failed,
            summary.steps_interrupted
        ),
        (3, 0, 1)
    );
    assert_eq!(summary.steps_skipped, 4);
    assert!(!report.contains("run c"));
    // The interrupted step's partial measurements are kept.
    assert!(summary.run_dir.join("histograms/3-b.hdr").is_file());
}

#[test]
fn a_forced_shutdown_keeps_its_numbers_says_why_and_goes_on_per_on_error() {
    let forced = "forced_shutdown: 1 worker(s) still in an event";
    // continue: the row says why, the suite goes on, the step counts as cut short.
    let tmp = tempfile::tempdir().unwrap();
    let mut script = Script {
        cut_short: [3].into(),
        ..Default::default()
    };
    let (summary, _) = run(&mut script, tmp.path());
    assert!(!summary.interrupted);
    assert_eq!(
        rows(&summary.results_csv),
        [
            row("2", "ok", ""),
            row("3", "interrupted", forced),
            row("4", "ok", ""),
            row("7", "ok", ""),
        ]
    );
    assert_eq!((summary.steps_interrupted, summary.steps_failed), (1, 0));
    assert!(summary.run_dir.join("histograms/3-b.hdr").is_file());
    // stop: no further runs after it, cleanups and restores still run.
    let mut c = ctx(tmp.path());
    c.on_error = OnError::Stop;
    let mut script = Script {
        cut_short: [3].into(),
        ..Default::default()
    };
    let summary = run_with(&mut script, c);
    assert_eq!(
        rows(&summary.results_csv),
        [row("2", "ok", ""), row("3", "interrupted", forced)]
    );
    assert_eq!(
        script.variant_calls,
        ["begin a", "step 1", "step 2", "step 3", "step 5", "end a"]
    );
}

#[test]
fn threads_that_could_not_be_stopped_end_the_runs_whatever_on_error_says() {
    // on_error = continue, but nothing more is measured under the stuck threads: the
    // remaining runs are skipped, cleanups and restores still run, the run failed.
    let tmp = tempfile::tempdir().unwrap();
    let mut script = Script {
        unstoppable: [3].into(),
        ..Default::default()
    };
    let (summary, _) = run(&mut script, tmp.path());
    assert!(!summary.interrupted);
    assert_eq!(
        rows(&summary.results_csv),
        [
            row("2", "ok", ""),
            row(
                "3",
                "failed",
                "2 worker thread(s) of this step did not stop"
            ),
        ]
    );
    assert_eq!(summary.steps_failed, 1);
    assert_eq!(
        script.variant_calls,
        [
            "begin default",
            "step 1",
            "step 2",
            "step 3",
            "step 5",
            "end default"
        ],
        "the cleanup (5) and the restore still ran"
    );
}

#[test]
fn an_engine_error_after_a_stop_request_counts_as_interrupted() {
    let tmp = tempfile::tempdir().unwrap();
    let mut script = Script {
        stop_during: Some(2),
        stop_with_error: true,
        ..Default::default()
    };
    let (summary, _) = run(&mut script, tmp.path());
    assert!(summary.interrupted);
    assert_eq!(summary.steps_failed, 0);
    assert_eq!(
        rows(&summary.results_csv),
        [row("2", "interrupted", "query interrupted")]
    );
}

#[test]
fn a_stop_before_the_run_skips_everything_and_writes_only_headers() {
    let tmp = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(true);
    let mut script = Script::default();
    let summary = run_plan_with(&plan(), &ctx(tmp.path()), &mut script, &stop, io::sink()).unwrap();
    assert!(summary.interrupted);
    assert!(script.calls.is_empty());
    assert!(rows(&summary.results_csv).is_empty());
    assert_eq!(summary.steps_skipped, 8);
}

#[test]
fn preflight_lists_workloads_without_engine_and_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("results");
    let mut p = plan();
    p.steps[1].workload = "oltp_insert".into();
    p.steps[2].workload = "oltp_insert".into();
    p.steps[6].workload = "fileio".into();
    let mut script = Script {
        no_engine: HashSet::from(["oltp_insert", "fileio"]),
        ..Default::default()
    };
    let err = run_plan_with(
        &p,
        &ctx(&root),
        &mut script,
        &AtomicBool::new(false),
        io::sink(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "workloads `oltp_insert`, `fileio` can be planned and validated but have no engine \
             in this build yet; remove them from the suite's matrix or filter them out to run \
             the rest"
    );
    assert!(script.calls.is_empty());
    assert!(!root.exists());
}

#[test]
fn run_plan_with_the_real_engines_refuses_an_unknown_workload_before_touching_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("results");
    let mut p = plan();
    for s in &mut p.steps {
        s.workload = "no_such_workload".into();
    }
    let err = run_plan(&p, &ctx(&root), Default::default()).unwrap_err();
    assert!(matches!(&err, RunError::NoEngine { workloads } if workloads == &["no_such_workload"]));
    assert!(
        err.to_string()
            .starts_with("workload `no_such_workload` can be planned")
    );
    assert!(!root.exists());
}
