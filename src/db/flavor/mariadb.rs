//! MariaDB: MySQL's errors, limits and settings statements ([`super::mysql`]); told apart by
//! its version string (`5.5.5-10.11.6-MariaDB`, already in the handshake), so results and
//! messages name it.

use super::{Flavor, KnownError, StatementRoom, mysql};
use crate::db::conn::{Connection, SqlError};
use crate::db::target::Driver;

/// MariaDB.
pub struct MariaDb;

impl Flavor for MariaDb {
    fn name(&self) -> &'static str {
        "mariadb"
    }

    fn label(&self) -> &'static str {
        "MariaDB"
    }

    fn driver(&self) -> Driver {
        Driver::Mysql
    }

    fn recognizes(&self, version: &str) -> bool {
        version.contains("MariaDB")
    }

    fn errors(&self) -> &'static [KnownError] {
        mysql::ERRORS
    }

    fn statement_room(&self, conn: &mut dyn Connection) -> Result<Option<StatementRoom>, SqlError> {
        mysql::global_statement_room(conn)
    }

    fn advice(&self, e: &SqlError) -> Option<String> {
        mysql::max_prepared_stmt_count_advice(e).or_else(|| mysql::max_connections_advice(e))
    }

    fn set_variable_sql(&self, name: &str, value: &str) -> Option<String> {
        Some(format!("SET GLOBAL {name} = {value}"))
    }
}
