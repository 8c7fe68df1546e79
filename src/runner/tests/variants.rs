//! The step loop with variants and their stages: settings applied before their steps,
//! restored after, at every switch of an interleaved order, on failures and on a stop.

use super::*;

#[test]
fn stages_begin_before_their_steps_and_end_before_the_next_stage_or_the_cleanup() {
    let root = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(false);
    let mut script = Script {
        log_stages: true,
        ..Default::default()
    };
    let summary = run_plan_with(
        &variant_plan(),
        &ctx(root.path()),
        &mut script,
        &stop,
        Vec::new(),
    )
    .unwrap();
    assert_eq!(summary.steps_failed, 0);
    let expected = [
        "begin a",
        "begin a@prepare",
        "step 1",
        "end a@prepare",
        "begin a@run",
        "step 2",
        "step 3",
        "step 4",
        "end a@run",
        "step 5",
        "end a",
        "begin b",
        "begin b@prepare",
        "step 6",
        "end b@prepare",
        "begin b@run",
        "step 7",
        "end b@run",
        "step 8",
        "end b",
    ];
    assert_eq!(script.variant_calls, expected);
}

#[test]
fn interleaved_variants_end_their_stage_at_every_switch() {
    let root = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(false);
    let mut script = Script {
        log_stages: true,
        ..Default::default()
    };
    run_plan_with(
        &interleaved_plan(),
        &ctx(root.path()),
        &mut script,
        &stop,
        Vec::new(),
    )
    .unwrap();
    let calls = script.variant_calls.join(", ");
    assert_eq!(
        calls,
        "begin a, begin a@prepare, step 1, end a@prepare, begin a@run, step 2, end a@run, end a, \
         begin b, begin b@run, step 3, step 4, end b@run, end b, begin a, begin a@run, step 5, \
         end a@run, step 6, end a"
    );
}

#[test]
fn a_run_stage_that_cannot_be_applied_fails_its_runs_and_its_cleanup_still_runs() {
    let root = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(false);
    let mut script = Script {
        log_stages: true,
        fail_stage: Some(("a", Stage::Run)),
        ..Default::default()
    };
    let summary = run_plan_with(
        &variant_plan(),
        &ctx(root.path()),
        &mut script,
        &stop,
        Vec::new(),
    )
    .unwrap();
    assert_eq!(summary.steps_failed, 3, "runs a, b, c");
    assert_eq!(
        script.variant_calls[..6],
        [
            "begin a",
            "begin a@prepare",
            "step 1",
            "end a@prepare",
            "begin a@run",
            "step 5"
        ],
        "tried once, nothing to restore, the cleanup runs"
    );
    let run_dir = summary.results_csv.parent().unwrap().to_path_buf();
    let r = rows(&run_dir.join("results.csv"));
    assert_eq!(r.len(), 4);
    for row in &r[..3] {
        assert_eq!(row.1, "failed");
        assert!(
            row.2
                .contains("variant `a` not applied for its run steps: ALTER SYSTEM SET x: failed"),
            "{r:?}"
        );
    }
    assert_eq!(r[3].1, "ok", "variant b is not affected: {r:?}");
}

#[test]
fn a_prepare_stage_that_cannot_be_applied_fails_the_dataset() {
    let root = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(false);
    let mut script = Script {
        fail_stage: Some(("a", Stage::Prepare)),
        ..Default::default()
    };
    let summary = run_plan_with(
        &variant_plan(),
        &ctx(root.path()),
        &mut script,
        &stop,
        Vec::new(),
    )
    .unwrap();
    assert!(!script.calls.contains(&(1, StepKind::Prepare)));
    assert!(script.calls.contains(&(6, StepKind::Prepare)));
    let run_dir = summary.results_csv.parent().unwrap().to_path_buf();
    let r = rows(&run_dir.join("results.csv"));
    assert!(
        r[0].2.contains(
            "prepare failed: variant `a` not applied for its prepare steps: ALTER SYSTEM SET x: failed"
        ),
        "{r:?}"
    );
}

#[test]
fn a_stop_ends_the_run_stage_before_the_cleanup() {
    let root = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(false);
    let mut script = Script {
        log_stages: true,
        stop_during: Some(2),
        ..Default::default()
    };
    let summary = run_plan_with(
        &variant_plan(),
        &ctx(root.path()),
        &mut script,
        &stop,
        Vec::new(),
    )
    .unwrap();
    assert!(summary.interrupted);
    assert_eq!(
        script.variant_calls,
        [
            "begin a",
            "begin a@prepare",
            "step 1",
            "end a@prepare",
            "begin a@run",
            "step 2",
            "end a@run",
            "step 5",
            "end a"
        ]
    );
}

/// [`plan`] with dataset 1 in variant `a` and dataset 2 in variant `b`.
pub(super) fn variant_plan() -> Plan {
    let mut p = plan();
    for s in &mut p.steps {
        s.variant = if s.dataset == 1 { "a" } else { "b" }.into();
    }
    p
}

#[test]
fn variants_begin_before_their_first_step_and_end_after_their_cleanup() {
    let root = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(false);
    let mut script = Script::default();
    let summary = run_plan_with(
        &variant_plan(),
        &ctx(root.path()),
        &mut script,
        &stop,
        Vec::new(),
    )
    .unwrap();
    assert_eq!(summary.steps_failed, 0);
    let expected = [
        "begin a", "step 1", "step 2", "step 3", "step 4", "step 5", "end a", "begin b", "step 6",
        "step 7", "step 8", "end b",
    ];
    assert_eq!(script.variant_calls, expected);
}

#[test]
fn a_variant_that_cannot_be_applied_fails_its_runs_and_the_next_one_still_runs() {
    let root = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(false);
    let mut p = variant_plan();
    // Variant order b (fails), then a.
    p.steps.rotate_left(5);
    for (i, s) in p.steps.iter_mut().enumerate() {
        s.index = i + 1;
    }
    let mut script = Script {
        fail_variant: Some("b"),
        ..Default::default()
    };
    let summary = run_plan_with(&p, &ctx(root.path()), &mut script, &stop, Vec::new()).unwrap();
    assert_eq!(summary.steps_failed, 1, "run d");
    assert_eq!(
        script.variant_calls,
        [
            "begin b", "begin a", "step 4", "step 5", "step 6", "step 7", "step 8", "end a"
        ]
    );
    let run_dir = summary.results_csv.parent().unwrap().to_path_buf();
    let r = rows(&run_dir.join("results.csv"));
    assert_eq!(r[0].0, "2", "step 2 is run d");
    assert_eq!(r[0].1, "failed");
    assert!(
        r[0].2
            .contains("variant `b` not applied: SET GLOBAL x: failed"),
        "{r:?}"
    );
    assert_eq!(r.len(), 4);
}

#[test]
fn a_stop_ends_the_current_variant_after_its_cleanup_and_begins_no_other() {
    let root = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(false);
    let mut script = Script {
        stop_during: Some(2),
        ..Default::default()
    };
    let summary = run_plan_with(
        &variant_plan(),
        &ctx(root.path()),
        &mut script,
        &stop,
        Vec::new(),
    )
    .unwrap();
    assert!(summary.interrupted);
    assert_eq!(
        script.variant_calls,
        ["begin a", "step 1", "step 2", "step 5", "end a"]
    );
}

/// An interleaved plan: one dataset prepared under `a`, runs a b b a, cleanup under `a`.
fn interleaved_plan() -> Plan {
    use StepKind::*;
    let steps = [
        (Prepare, "prepare-1", "a"),
        (Run, "x", "a"),
        (Run, "x", "b"),
        (Run, "x", "b"),
        (Run, "x", "a"),
        (Cleanup, "cleanup-1", "a"),
    ];
    Plan {
        suite: "unit".into(),
        target: None,
        variant_order: crate::suite::raw::VariantOrder::Interleaved,
        order_seed: None,
        dataset: Default::default(),
        axes: vec!["threads".into()],
        steps: steps
            .iter()
            .enumerate()
            .map(|(i, (k, n, v))| Step {
                variant: v.to_string(),
                ..step(i + 1, *k, n, 1)
            })
            .collect(),
    }
}

#[test]
fn interleaved_variants_switch_settings_inside_one_dataset() {
    let root = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(false);
    let log = root.path().join("hooks.txt");
    let mut c = ctx(root.path());
    c.hooks = hooks_logging_to(&log, OnError::Stop);
    let mut script = Script::default();
    let summary = run_plan_with(&interleaved_plan(), &c, &mut script, &stop, Vec::new()).unwrap();
    assert_eq!(summary.steps_failed, 0);
    assert_eq!(
        script.variant_calls,
        [
            "begin a", "step 1", "step 2", "end a", "begin b", "step 3", "step 4", "end b",
            "begin a", "step 5", "step 6", "end a"
        ]
    );
    // The dataset is entered once, whatever the variants do inside it.
    let hooks = std::fs::read_to_string(&log).unwrap();
    assert_eq!(hooks.matches("before_dataset 1").count(), 1, "{hooks}");
    assert_eq!(hooks.matches("after_dataset 1").count(), 1, "{hooks}");
    assert_eq!(hooks.matches("before_variant b").count(), 1, "{hooks}");
    assert_eq!(hooks.matches("before_variant a").count(), 2, "{hooks}");
}

#[test]
fn an_interleaved_variant_that_cannot_be_applied_fails_only_its_runs() {
    let root = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(false);
    let mut script = Script {
        fail_variant: Some("b"),
        ..Default::default()
    };
    let summary = run_plan_with(
        &interleaved_plan(),
        &ctx(root.path()),
        &mut script,
        &stop,
        Vec::new(),
    )
    .unwrap();
    assert_eq!(summary.steps_failed, 2, "b's two runs");
    assert_eq!(
        script.variant_calls,
        [
            "begin a", "step 1", "step 2", "end a", "begin b", "begin a", "step 5", "step 6",
            "end a"
        ]
    );
    // The first variant fails: its prepare is skipped, so b's runs fail with that reason
    // and there is nothing to clean up.
    let root = tempfile::tempdir().unwrap();
    let mut script = Script {
        fail_variant: Some("a"),
        ..Default::default()
    };
    let summary = run_plan_with(
        &interleaved_plan(),
        &ctx(root.path()),
        &mut script,
        &stop,
        Vec::new(),
    )
    .unwrap();
    assert_eq!(summary.steps_failed, 4);
    assert_eq!(
        script.variant_calls,
        ["begin a", "begin b", "end b", "begin a"]
    );
    let run_dir = summary.results_csv.parent().unwrap().to_path_buf();
    let r = rows(&run_dir.join("results.csv"));
    assert!(
        r[1].2.contains("prepare failed: variant `a` not applied"),
        "{r:?}"
    );
}
