//! `sysbench.sql` underneath: `db_*` over sbsuite's connections (being written).

use crate::db::Connector;

/// The database the states of one run connect to.
pub struct DbSetup {
    pub connector: Connector,
}

/// A thread's SQL state (open connections, the result slots).
#[derive(Default)]
pub struct ThreadSql {}
