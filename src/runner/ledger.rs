//! The run's [`Ledger`]: the tables this run created and has not dropped, kept in the run
//! directory's `tables.log` so that a `--resume` knows them too (#26).
//!
//! One [`Tables`] per run, replayed from the file when a run resumes; each prepare or cleanup
//! step gets a [`StepLedger`] on its target ([`Tables::for_step`]), which writes that step's
//! records and remembers what the step kept (a cleanup's tables the run did not create) and
//! whether a record could not be written, for the step loop to report after the step. The
//! ownership itself is the run's, not the dataset's: a table a failed cleanup left behind is
//! dropped by the next cleanup that names it.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::db::owned::{Ledger, NotRecorded, TableKey};
use crate::plan::{Step, StepKind};
use crate::results::{self, ResultsError, TableEvent};

/// The tables the run owns, shared by the ledgers of its steps.
pub(super) struct Tables {
    dir: PathBuf,
    owned: Arc<Mutex<HashSet<TableKey>>>,
}

impl Tables {
    /// The run's tables as `dir`'s `tables.log` tells them (a new run's file is empty);
    /// `None` for a run directory an older build wrote without one: its prepare and cleanup
    /// steps then run without a ledger, as that build ran them.
    pub(super) fn open(dir: &Path) -> Option<Tables> {
        let mut owned = HashSet::new();
        for (event, key) in results::read_tables(dir)? {
            match event {
                TableEvent::Creating => {
                    owned.insert(key);
                }
                TableEvent::NotCreated | TableEvent::Dropped => {
                    owned.remove(&key);
                }
            }
        }
        Some(Tables {
            dir: dir.to_path_buf(),
            owned: Arc::new(Mutex::new(owned)),
        })
    }

    /// The ledger of one prepare or cleanup step.
    pub(super) fn for_step(&self, step: &Step) -> Arc<StepLedger> {
        Arc::new(StepLedger {
            dir: self.dir.clone(),
            index: step.index,
            kind: step.kind,
            owned: Arc::clone(&self.owned),
            kept: Mutex::new(Vec::new()),
            error: Mutex::new(None),
        })
    }
}

/// The ledger of one step: the run's tables, and what this step kept or failed to record.
pub(super) struct StepLedger {
    dir: PathBuf,
    index: usize,
    kind: StepKind,
    owned: Arc<Mutex<HashSet<TableKey>>>,
    kept: Mutex<Vec<TableKey>>,
    error: Mutex<Option<ResultsError>>,
}

/// A lock that a panicking holder did not poison for the others (the set stays consistent:
/// every change is one insert or remove).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl StepLedger {
    /// The tables this step did not drop because the run had not created them, in the order
    /// it met them, each once.
    pub(super) fn kept_tables(&self) -> Vec<TableKey> {
        lock(&self.kept).clone()
    }

    /// The first record this step could not write: the run cannot vouch for its tables, so it
    /// ends like on any results write error.
    pub(super) fn take_error(&self) -> Option<ResultsError> {
        lock(&self.error).take()
    }

    /// Writes one record; the first error is kept for [`StepLedger::take_error`].
    fn record(&self, event: TableEvent, key: &TableKey) -> Result<(), NotRecorded> {
        results::record_table(&self.dir, self.index, self.kind, event, key).map_err(|e| {
            lock(&self.error).get_or_insert(e);
            NotRecorded { table: key.clone() }
        })
    }
}

impl Ledger for StepLedger {
    fn creating(&self, key: &TableKey) -> Result<(), NotRecorded> {
        // Held while the record is written: one prepare's loader threads record one at a time.
        let mut owned = lock(&self.owned);
        self.record(TableEvent::Creating, key)?;
        owned.insert(key.clone());
        Ok(())
    }

    fn not_created(&self, key: &TableKey) {
        let mut owned = lock(&self.owned);
        let _ = self.record(TableEvent::NotCreated, key);
        owned.remove(key);
    }

    fn owns(&self, key: &TableKey) -> bool {
        lock(&self.owned).contains(key)
    }

    fn kept(&self, key: &TableKey) {
        let mut kept = lock(&self.kept);
        if !kept.contains(key) {
            kept.push(key.clone());
        }
    }

    fn dropped(&self, key: &TableKey) {
        let mut owned = lock(&self.owned);
        let _ = self.record(TableEvent::Dropped, key);
        owned.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(index: usize, kind: StepKind) -> Step {
        Step {
            index,
            kind,
            name: "sbtest".into(),
            variant: "default".into(),
            workload: "oltp_read_only".into(),
            spec: crate::engine::Catalog::builtin().workload("oltp_read_only"),
            dataset: 1,
            repetition: 0,
            params: Default::default(),
            options: Default::default(),
            command: None,
            estimated_seconds: None,
            phases: Vec::new(),
            groups: Vec::new(),
            target: None,
        }
    }

    fn key(table: &str) -> TableKey {
        TableKey {
            at: "127.0.0.1:3306 database `d`".into(),
            table: table.into(),
        }
    }

    /// What a prepare records survives into a resumed run: the tables it created and did not
    /// withdraw are owned, a dropped one is not, and a run directory without the file has no
    /// ledger at all.
    #[test]
    fn a_resume_owns_what_the_file_says_the_run_created() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            Tables::open(dir.path()).is_none(),
            "an older build's directory"
        );
        std::fs::write(dir.path().join(results::TABLES_FILE), "").unwrap();
        let tables = Tables::open(dir.path()).unwrap();
        let prepare = tables.for_step(&step(1, StepKind::Prepare));
        prepare.creating(&key("sbtest1")).unwrap();
        prepare.creating(&key("sbtest2")).unwrap();
        prepare.not_created(&key("sbtest2"));
        prepare.creating(&key("sbtest3")).unwrap();
        let cleanup = tables.for_step(&step(3, StepKind::Cleanup));
        cleanup.dropped(&key("sbtest3"));

        let resumed = Tables::open(dir.path()).unwrap();
        let cleanup = resumed.for_step(&step(3, StepKind::Cleanup));
        assert!(cleanup.owns(&key("sbtest1")));
        assert!(!cleanup.owns(&key("sbtest2")));
        assert!(!cleanup.owns(&key("sbtest3")));
        cleanup.kept(&key("sbtest2"));
        cleanup.kept(&key("sbtest3"));
        cleanup.kept(&key("sbtest2"));
        assert_eq!(cleanup.kept_tables(), [key("sbtest2"), key("sbtest3")]);
        assert!(cleanup.take_error().is_none());
        let text = std::fs::read_to_string(dir.path().join(results::TABLES_FILE)).unwrap();
        assert!(
            text.starts_with(
                "1 prepare creating {\"at\":\"127.0.0.1:3306 database `d`\",\"table\":\"sbtest1\"}\n"
            ),
            "{text}"
        );
    }
}
