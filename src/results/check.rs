//! Is a stopped run's directory what its plan says? Checked before `run --resume` continues it.
//!
//! A resume trusts two files: `results.csv` (a kept row means its run step is done) and
//! `journal.log` (how far each prepare and cleanup got). Hand edits and damaged files made it
//! do the wrong thing (#13): a duplicated row was kept twice, a row for a step the plan does not
//! have was kept, a renumbered row made another step look done so that it never ran, and a
//! journal that lost a prepare's record made the prepare run again on top of its data ("table
//! sbtest1 already exists", then `failed` rows).
//!
//! So before anything runs, every kept row is matched to its plan step (the cells from `step`
//! to `repetition` must be the ones the step writes), and every journal line to a prepare or
//! cleanup step of the plan. What has exactly one right answer is repaired, with a note:
//! - an exact copy of a row is dropped;
//! - a journal line that is no record of a plan step is dropped, and a dataset whose state the
//!   journal then no longer tells for sure is dropped and prepared again (the runner does that
//!   for a prepare whose last record is `start`): always correct, only slower.
//!
//! What has no single answer is refused, naming the file, the line and the fix: a row whose
//! cells are those of another step, two different rows for one step, a row for a step that
//! does not exist.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use super::csv::{GROUP, PHASE, extra_axis_columns, results_columns, step_cells};
use super::{
    JOURNAL_EVENTS, JOURNAL_FILE, JOURNAL_START, RESULTS_FILE, ResultsError, io_err, is_kept,
    journal_record, parse_journal_record, rewrite_csv, upgrade_columns,
};
use crate::plan::{Plan, Step, StepKind};

/// Why a run directory cannot be resumed as it is.
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    #[error(
        "{} line {line}: step `{step}` is not a run step of plan.json (a row of another run, or an edited file): remove the line, then resume again",
        .file.display()
    )]
    UnknownStep {
        file: PathBuf,
        line: u64,
        step: String,
    },
    #[error(
        "{} line {line}: this row of step {step} is not step {step} of plan.json: {differs} (was it renumbered?): fix or remove the line, then resume again",
        .file.display()
    )]
    NotItsStep {
        file: PathBuf,
        line: u64,
        step: usize,
        differs: String,
    },
    #[error(
        "{} lines {first} and {second}: two different results of step {step}: remove the one that is wrong, then resume again",
        .file.display()
    )]
    Duplicate {
        file: PathBuf,
        first: u64,
        second: u64,
        step: usize,
    },
    #[error(transparent)]
    Results(#[from] ResultsError),
}

/// Checks `dir` against `plan` and repairs what has one right answer (see the module doc).
/// Returns a note per repair, for the user.
pub fn before_resume(dir: &Path, plan: &Plan) -> Result<Vec<String>, RunDirError> {
    let rows = check_rows(dir, plan)?;
    let mut notes = rows.notes;
    notes.extend(check_journal(dir, plan, &rows.done, &rows.touched)?);
    Ok(notes)
}

/// What `results.csv` says about the runs.
struct Rows {
    /// Run steps with a kept row (`ok` or `failed`).
    done: HashSet<usize>,
    /// Datasets with a row of any kind (also `interrupted`, or cut short by a crash): their
    /// prepare ran, whatever the journal says.
    touched: HashSet<usize>,
    notes: Vec<String>,
}

fn check_rows(dir: &Path, plan: &Plan) -> Result<Rows, RunDirError> {
    let path = dir.join(RESULTS_FILE);
    let csv_err = |source| ResultsError::Csv {
        path: path.clone(),
        source,
    };
    let columns = results_columns(&plan.axes);
    // A run written by an earlier build lacks the columns added since: given them (empty)
    // first, so its rows are read like this build's.
    upgrade_columns(&path, &columns)?;
    let extra = extra_axis_columns(&plan.axes);
    let runs: HashMap<usize, &Step> = plan
        .steps
        .iter()
        .filter(|s| s.kind == StepKind::Run)
        .map(|s| (s.index, s))
        .collect();
    let mut reader = ::csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(&path)
        .map_err(csv_err)?;
    let mut done = HashMap::<usize, (u64, ::csv::StringRecord)>::new();
    let mut touched = HashSet::new();
    let mut copies = Vec::new();
    for rec in reader.records() {
        // A record a crash cut short: dropped when the run reopens, its step runs again.
        let Ok(rec) = rec else { continue };
        let line = rec.position().map_or(0, |p| p.line());
        let step = rec
            .get(1)
            .and_then(|c| c.parse().ok())
            .and_then(|i| runs.get(&i));
        if let Some(step) = step {
            touched.insert(step.dataset);
        }
        if !is_kept(&rec, &columns) {
            continue;
        }
        // A phase's or a group's row (#30, #31) follows its step's and stands or falls with
        // it: a resume writes the step's rows again together.
        let part_of_step = [PHASE, GROUP].iter().any(|c| {
            columns
                .iter()
                .position(|h| h == c)
                .and_then(|i| rec.get(i))
                .is_some_and(|cell| !cell.is_empty())
        });
        if part_of_step {
            continue;
        }
        let Some(step) = step else {
            return Err(RunDirError::UnknownStep {
                file: path,
                line,
                step: rec[1].to_string(),
            });
        };
        let expected = step_cells(&extra, step);
        let differs: Vec<String> = columns[1..]
            .iter()
            .zip(rec.iter().skip(1).zip(&expected))
            .filter(|(_, (found, wanted))| found != wanted)
            .map(|(c, (found, wanted))| format!("{c} is `{found}`, the plan's is `{wanted}`"))
            .collect();
        if !differs.is_empty() {
            return Err(RunDirError::NotItsStep {
                file: path,
                line,
                step: step.index,
                differs: differs.join(", "),
            });
        }
        match done.get(&step.index) {
            Some((_, first)) if *first == rec => copies.push((line, step.index)),
            Some((first, _)) => {
                return Err(RunDirError::Duplicate {
                    file: path,
                    first: *first,
                    second: line,
                    step: step.index,
                });
            }
            None => {
                done.insert(step.index, (line, rec));
            }
        }
    }
    let mut notes = Vec::new();
    if !copies.is_empty() {
        let lines: HashSet<u64> = copies.iter().map(|(l, _)| *l).collect();
        rewrite_csv(&path, &columns, |rec| {
            !rec.position().is_some_and(|p| lines.contains(&p.line()))
        })?;
        notes.extend(copies.iter().map(|(line, step)| {
            format!("results.csv line {line} was a copy of the row of step {step}: dropped")
        }));
    }
    Ok(Rows {
        done: done.into_keys().collect(),
        touched,
        notes,
    })
}

fn check_journal(
    dir: &Path,
    plan: &Plan,
    done: &HashSet<usize>,
    touched: &HashSet<usize>,
) -> Result<Vec<String>, RunDirError> {
    let path = dir.join(JOURNAL_FILE);
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(io_err(&path)(e).into()),
    };
    let text = String::from_utf8_lossy(&bytes);
    let steps: HashMap<usize, &Step> = plan
        .steps
        .iter()
        .filter(|s| s.kind != StepKind::Run)
        .map(|s| (s.index, s))
        .collect();
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    let mut last = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match parse_journal_record(line) {
            Some((i, kind, event, rest))
                if rest.is_empty()
                    && JOURNAL_EVENTS.contains(&event)
                    && steps.get(&i).is_some_and(|s| s.kind.as_str() == kind) =>
            {
                kept.push(line);
                last.insert(i, event);
            }
            _ => dropped.push((n + 1, line)),
        }
    }
    // Datasets with runs still to do whose data the journal does not vouch for: after a lost
    // line any record may be stale (a `done` prepare whose cleanup's record was lost); with an
    // intact journal, a prepare without a record whose runs have rows.
    let open: HashSet<usize> = plan
        .steps
        .iter()
        .filter(|s| s.kind == StepKind::Run && !done.contains(&s.index))
        .map(|s| s.dataset)
        .collect();
    let again: Vec<&Step> = plan
        .steps
        .iter()
        .filter(|s| s.kind == StepKind::Prepare && open.contains(&s.dataset))
        .filter(|s| {
            let event = last.get(&s.index).copied();
            if dropped.is_empty() {
                event.is_none() && touched.contains(&s.dataset)
            } else {
                event != Some(JOURNAL_START)
            }
        })
        .collect();
    if dropped.is_empty() && again.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = String::new();
    for line in kept {
        out.push_str(line);
        out.push('\n');
    }
    for s in &again {
        out.push_str(&journal_record(s, JOURNAL_START));
    }
    let tmp = path.with_extension("log.tmp");
    fs::write(&tmp, out).map_err(io_err(&tmp))?;
    fs::rename(&tmp, &path).map_err(io_err(&path))?;
    let mut notes: Vec<String> = dropped
        .iter()
        .map(|(n, line)| {
            format!("journal.log line {n} (`{}`) is no record of a prepare or cleanup step of plan.json: dropped", line.escape_debug())
        })
        .collect();
    notes.extend(again.iter().map(|s| {
        format!(
            "dataset {}: journal.log does not tell whether its data is complete: it is dropped and prepared again (step {})",
            s.dataset, s.index
        )
    }));
    Ok(notes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Options;
    use chrono::TimeZone;

    fn step(index: usize, kind: StepKind, name: &str, dataset: usize) -> Step {
        Step {
            index,
            kind,
            name: name.into(),
            variant: "default".into(),
            workload: "oltp_read_only".into(),
            spec: crate::engine::Catalog::builtin().workload("oltp_read_only"),
            dataset,
            repetition: 1,
            params: Default::default(),
            options: Options::default(),
            command: None,
            estimated_seconds: None,
            phases: Vec::new(),
            groups: Vec::new(),
            target: None,
        }
    }

    /// prepare 1, runs 2 and 3, cleanup 4; then a second dataset: prepare 5, run 6, cleanup 7.
    fn plan() -> Plan {
        use StepKind::*;
        Plan {
            suite: "s".into(),
            target: None,
            variant_order: Default::default(),
            order_seed: None,
            dataset: Default::default(),
            axes: vec!["workload".into(), "threads".into()],
            steps: vec![
                step(1, Prepare, "sbtest", 1),
                step(2, Run, "ro-a", 1),
                step(3, Run, "ro-b", 1),
                step(4, Cleanup, "sbtest", 1),
                step(5, Prepare, "sbtest", 2),
                step(6, Run, "ro-c", 2),
                step(7, Cleanup, "sbtest", 2),
            ],
        }
    }

    /// A run directory of `plan()` whose finished steps are `rows` (index, status).
    fn run_dir(rows: &[(usize, crate::results::RowStatus)], journal: &str) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let p = plan();
        let now = chrono::Utc.with_ymd_and_hms(2026, 12, 1, 4, 0, 0).unwrap();
        let mut store = crate::results::ResultStore::create(tmp.path(), &p, "", now).unwrap();
        for (i, status) in rows {
            let s = p.steps.iter().find(|s| s.index == *i).unwrap();
            store
                .write_run(&crate::results::RunRow {
                    step: s,
                    started_at: now,
                    status: *status,
                    outcome: None,
                    error: None,
                    knee: None,
                })
                .unwrap();
        }
        fs::write(store.dir().join(JOURNAL_FILE), journal).unwrap();
        tmp
    }

    fn dir_of(tmp: &tempfile::TempDir) -> PathBuf {
        fs::read_dir(tmp.path().join("s"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path()
    }

    fn results(dir: &Path) -> Vec<String> {
        fs::read_to_string(dir.join(RESULTS_FILE))
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    use crate::results::RowStatus::{Failed, Interrupted, Ok as Done};

    #[test]
    fn the_rows_of_a_steps_groups_and_phases_follow_its_row() {
        let tmp = run_dir(&[(2, Done)], "1 prepare start\n1 prepare done\n");
        let dir = dir_of(&tmp);
        // After step 2's row, a row of a group of it (#31) and of a phase of it (#30): their
        // own workload and threads, the step's index.
        let columns = results_columns(&plan().axes);
        let cell = |name: &str| columns.iter().position(|c| c == name).unwrap();
        let row: Vec<String> = results(&dir)[1].split(',').map(str::to_string).collect();
        let mut text = results(&dir).join("\n");
        for (col, name) in [(GROUP, "readers"), (PHASE, "ramp")] {
            let mut part = row.clone();
            part[cell("workload")] = "oltp_point_select".into();
            part[cell("threads")] = "7".into();
            part[cell(col)] = name.into();
            text.push('\n');
            text.push_str(&part.join(","));
        }
        text.push('\n');
        fs::write(dir.join(RESULTS_FILE), &text).unwrap();
        assert_eq!(before_resume(&dir, &plan()).unwrap(), Vec::<String>::new());
        assert_eq!(results(&dir).len(), 4, "kept: {:?}", results(&dir));
    }

    #[test]
    fn a_consistent_run_directory_is_left_as_it_is() {
        let tmp = run_dir(
            &[(2, Done), (3, Failed)],
            "1 prepare start\n1 prepare done\n",
        );
        let dir = dir_of(&tmp);
        let before = results(&dir);
        assert_eq!(before_resume(&dir, &plan()).unwrap(), Vec::<String>::new());
        assert_eq!(results(&dir), before);
        assert_eq!(
            fs::read_to_string(dir.join(JOURNAL_FILE)).unwrap(),
            "1 prepare start\n1 prepare done\n"
        );
    }

    #[test]
    fn an_exact_copy_of_a_row_is_dropped_a_different_one_refused() {
        let tmp = run_dir(&[(2, Done)], "1 prepare done\n");
        let dir = dir_of(&tmp);
        let lines = results(&dir);
        fs::write(
            dir.join(RESULTS_FILE),
            format!("{}\n{}\n{}\n", lines[0], lines[1], lines[1]),
        )
        .unwrap();
        let notes = before_resume(&dir, &plan()).unwrap();
        assert_eq!(
            notes,
            ["results.csv line 3 was a copy of the row of step 2: dropped"]
        );
        assert_eq!(results(&dir), lines);

        let other = lines[1].replace(",ok,", ",failed,");
        assert_ne!(other, lines[1]);
        fs::write(
            dir.join(RESULTS_FILE),
            format!("{}\n{}\n{other}\n", lines[0], lines[1]),
        )
        .unwrap();
        let e = before_resume(&dir, &plan()).unwrap_err().to_string();
        assert!(
            e.contains("lines 2 and 3: two different results of step 2"),
            "{e}"
        );
    }

    #[test]
    fn a_row_of_a_step_the_plan_does_not_have_is_refused() {
        let tmp = run_dir(&[(2, Done)], "1 prepare done\n");
        let dir = dir_of(&tmp);
        let lines = results(&dir);
        for (bad, shown) in [(",2,ro-a,", "`99`"), (",2,ro-a,", "`4`")] {
            let step = shown.trim_matches('`');
            let row = lines[1].replace(bad, &format!(",{step},ro-a,"));
            fs::write(dir.join(RESULTS_FILE), format!("{}\n{row}\n", lines[0])).unwrap();
            let e = before_resume(&dir, &plan()).unwrap_err().to_string();
            assert!(
                e.contains(&format!(
                    "line 2: step {shown} is not a run step of plan.json"
                )),
                "{e}"
            );
        }
    }

    #[test]
    fn a_renumbered_row_is_refused_naming_what_differs() {
        let tmp = run_dir(&[(2, Done)], "1 prepare done\n");
        let dir = dir_of(&tmp);
        let lines = results(&dir);
        // Step 2's row claims to be step 3: step 3 would look done and never run.
        let row = lines[1].replace(",2,ro-a,", ",3,ro-a,");
        fs::write(dir.join(RESULTS_FILE), format!("{}\n{row}\n", lines[0])).unwrap();
        let e = before_resume(&dir, &plan()).unwrap_err().to_string();
        assert!(
            e.contains("line 2: this row of step 3 is not step 3 of plan.json: name is `ro-a`, the plan's is `ro-b`"),
            "{e}"
        );
    }

    #[test]
    fn a_garbled_journal_is_repaired_and_open_datasets_prepared_again() {
        // Run 3 was interrupted and cleanup 4 started, but its record is garbled: whether
        // dataset 1's data is still there is unknown. Dataset 2 has not started.
        let tmp = run_dir(
            &[(2, Done), (3, Interrupted)],
            "1 prepare start\n1 prepare done\n4 cleanup st\u{fffd}rt\n\u{0}\u{0}garbage\n",
        );
        let dir = dir_of(&tmp);
        let notes = before_resume(&dir, &plan()).unwrap();
        assert_eq!(notes.len(), 4, "{notes:?}");
        assert!(
            notes[0].starts_with("journal.log line 3 (`4 cleanup st"),
            "{notes:?}"
        );
        assert!(
            notes[1].starts_with("journal.log line 4 (`\\0\\0garbage`)"),
            "{notes:?}"
        );
        assert!(notes[2].starts_with("dataset 1: "), "{notes:?}");
        assert!(notes[3].starts_with("dataset 2: "), "{notes:?}");
        assert_eq!(
            fs::read_to_string(dir.join(JOURNAL_FILE)).unwrap(),
            "1 prepare start\n1 prepare done\n1 prepare start\n5 prepare start\n"
        );
        let journal = crate::results::read_journal(&dir);
        assert_eq!(
            journal[&1], "start",
            "dataset 1 is dropped, then prepared again"
        );
        // Repaired once, the journal is consistent.
        assert_eq!(before_resume(&dir, &plan()).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn a_lost_prepare_record_with_rows_of_its_runs_means_prepare_again() {
        // The journal lost everything, but run 2 has a row: dataset 1's data is (partly) there.
        let tmp = run_dir(&[(2, Done)], "");
        let dir = dir_of(&tmp);
        let notes = before_resume(&dir, &plan()).unwrap();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].starts_with("dataset 1: "), "{notes:?}");
        assert_eq!(
            fs::read_to_string(dir.join(JOURNAL_FILE)).unwrap(),
            "1 prepare start\n"
        );
        // A journal that lost nothing is trusted: dataset 2 never started, nothing to redo.
        let tmp = run_dir(&[(2, Done), (3, Done)], "1 prepare done\n4 cleanup done\n");
        assert_eq!(
            before_resume(&dir_of(&tmp), &plan()).unwrap(),
            Vec::<String>::new()
        );
    }
}
