//! The [`Ledger`] of the tables a suite's run created, as the database layer sees it: the trait
//! the runner implements and [`super::Target`] carries (#26). Apart from [`super::owned`], which
//! uses it, so that `target` and `owned` do not import each other.

/// A table of a database: where (`at`: the endpoint and database, as messages name them) and
/// its name as the server stores it ([`super::Dialect::fold_identifier`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct TableKey {
    pub at: String,
    pub table: String,
}

impl std::fmt::Display for TableKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "'{}' ({})", self.table, self.at)
    }
}

/// A record of the ledger could not be written, so `table` is not created. Why the record
/// failed is the ledger owner's to report (the run's results error), once for the step.
#[derive(Debug, thiserror::Error)]
#[error("the run's table ledger could not record {table}, so it is not created")]
pub struct NotRecorded {
    pub table: TableKey,
}

/// The tables a suite's run created and has not dropped. Implemented by the runner over the
/// run directory; shared by the loader threads of one prepare.
pub trait Ledger: Send + Sync {
    /// Before creating `key`: records it durably. An error (the record could not be written)
    /// means the table must not be created.
    fn creating(&self, key: &TableKey) -> Result<(), NotRecorded>;

    /// The `CREATE TABLE` of `key` failed on the server: the run did not create it.
    fn not_created(&self, key: &TableKey);

    /// Whether a cleanup may drop `key`: the run created it and has not dropped it.
    fn owns(&self, key: &TableKey) -> bool;

    /// A cleanup left `key`, which is there, in place: the run did not create it. The
    /// ledger's owner reports it.
    fn kept(&self, key: &TableKey);

    /// `key` was dropped.
    fn dropped(&self, key: &TableKey);
}
