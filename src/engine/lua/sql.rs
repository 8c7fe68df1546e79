//! `sysbench.sql` underneath: `db_*` over sbsuite's connections (being written).

use crate::db::Connector;

/// The database the states of one run connect to.
pub struct DbSetup {
    pub connector: Connector,
}

/// A thread's SQL state (open connections, the result slots).
#[derive(Default)]
pub struct ThreadSql {}

/// `sysbench.sql` in Lua (chunk `sysbench.sql.lua`), loaded by [`super::state`] (being written).
pub const SQL_LUA: &str = "";

/// `sysbench.db.*` and the legacy `db_*` globals (chunk `sysbench.db.lua`) (being written).
pub const DB_LEGACY_LUA: &str = "";
