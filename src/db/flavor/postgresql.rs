//! PostgreSQL, the one server of its protocol for now (CockroachDB would be a second, told
//! apart by `SELECT version()`): sysbench's pgsql ignorable errors.

use super::{ErrorClass, Flavor, KnownError};
use crate::db::conn::SqlError;
use crate::db::target::Driver;

/// PostgreSQL.
pub struct PostgreSql;

/// sysbench's pgsql list first (deadlock, unique violation, serialization failure), then
/// lock and statement timeouts and the lost-session states.
const ERRORS: &[KnownError] = &[
    KnownError::new("40P01", ErrorClass::Deadlock, true),
    KnownError::new("23505", ErrorClass::Duplicate, true),
    KnownError::new("40001", ErrorClass::Conflict, true),
    KnownError::new("55P03", ErrorClass::Timeout, false),
    KnownError::new("57014", ErrorClass::Timeout, false),
    KnownError::new("57P01", ErrorClass::Lost, false),
    KnownError::new("57P02", ErrorClass::Lost, false),
    KnownError::new("57P03", ErrorClass::Lost, false),
];

impl Flavor for PostgreSql {
    fn name(&self) -> &'static str {
        "postgresql"
    }

    fn label(&self) -> &'static str {
        "PostgreSQL"
    }

    fn driver(&self) -> Driver {
        Driver::Pgsql
    }

    fn recognizes(&self, _version: &str) -> bool {
        true
    }

    fn errors(&self) -> &'static [KnownError] {
        ERRORS
    }

    /// 53300, "too many connections" (or "remaining connection slots are reserved"): every
    /// connection `max_connections` allows a non-superuser is open.
    fn advice(&self, e: &SqlError) -> Option<String> {
        (e.code == "53300").then(|| {
            format!(
                "{e}: the server's max_connections (less superuser_reserved_connections) is reached: lower threads or idle_connections, or raise max_connections (ALTER SYSTEM SET max_connections = N, then restart the server)"
            )
        })
    }

    fn set_variable_sql(&self, name: &str, value: &str) -> Option<String> {
        Some(format!("ALTER SYSTEM SET {name} = {value}"))
    }
}
