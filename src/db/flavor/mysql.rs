//! MySQL, and the generic server of the MySQL protocol (any version string no other flavor
//! recognizes): sysbench's ignorable errors, `max_prepared_stmt_count`, `SET GLOBAL`.
//! MariaDB ([`super::mariadb`]) shares all of it; OceanBase starts from it.

use super::{ErrorClass, Flavor, KnownError, StatementRoom};
use crate::db::conn::{Connection, ErrKind, SqlError};
use crate::db::target::Driver;

/// The generic MySQL server.
pub struct MySql;

/// MySQL's and MariaDB's error codes: sysbench's `--mysql-ignore-errors` default first
/// (deadlock, record changed since last read, lock wait timeout), then the client's and
/// server's lost-session codes.
pub(super) const ERRORS: &[KnownError] = &[
    KnownError::new("1213", ErrorClass::Deadlock, true),
    KnownError::new("1020", ErrorClass::Conflict, true),
    KnownError::new("1205", ErrorClass::Timeout, true),
    KnownError::new("2013", ErrorClass::Lost, false),
    KnownError::new("2006", ErrorClass::Lost, false),
    KnownError::new("2011", ErrorClass::Lost, false),
    KnownError::new("2055", ErrorClass::Lost, false),
    KnownError::new("1927", ErrorClass::Lost, false),
    KnownError::new("4031", ErrorClass::Lost, false),
    KnownError::new("3024", ErrorClass::Timeout, false),
    KnownError::new("1062", ErrorClass::Duplicate, false),
];

impl Flavor for MySql {
    fn name(&self) -> &'static str {
        "mysql"
    }

    fn label(&self) -> &'static str {
        "MySQL"
    }

    fn driver(&self) -> Driver {
        Driver::Mysql
    }

    fn recognizes(&self, _version: &str) -> bool {
        true
    }

    fn errors(&self) -> &'static [KnownError] {
        ERRORS
    }

    fn statement_room(&self, conn: &mut dyn Connection) -> Result<Option<StatementRoom>, SqlError> {
        global_statement_room(conn)
    }

    fn advice(&self, e: &SqlError) -> Option<String> {
        max_prepared_stmt_count_advice(e).or_else(|| max_connections_advice(e))
    }

    fn set_variable_sql(&self, name: &str, value: &str) -> Option<String> {
        Some(format!("SET GLOBAL {name} = {value}"))
    }
}

/// `max_prepared_stmt_count` (all sessions together) with the server's current
/// `Prepared_stmt_count`. MySQL-compatible servers without the variable (some distributed
/// ones) have no limit to check.
pub(super) fn global_statement_room(
    conn: &mut dyn Connection,
) -> Result<Option<StatementRoom>, SqlError> {
    let max = match conn.query_i64("SELECT @@max_prepared_stmt_count") {
        Err(e) if e.kind == ErrKind::Other => return Ok(None),
        r => r?,
    };
    let Some(max) = max.and_then(|v| u64::try_from(v).ok()) else {
        return Ok(None);
    };
    let used = match conn.query_rows("SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'") {
        Err(e) if e.kind == ErrKind::Other => Vec::new(),
        r => r?,
    };
    let used = used
        .into_iter()
        .next()
        .and_then(|row| row.into_iter().nth(1).flatten())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    Ok(Some(StatementRoom::Global { max, used }))
}

/// Error 1040, "Too many connections": every connection `max_connections` allows is open
/// (the workers', `idle_connections`' and anyone else's).
pub(super) fn max_connections_advice(e: &SqlError) -> Option<String> {
    (e.code == "1040").then(|| {
        format!(
            "{e}: the server's max_connections is reached: lower threads or idle_connections, or raise it (SET GLOBAL max_connections = N)"
        )
    })
}

/// Error 1461: `max_prepared_stmt_count` limits the statements of all sessions together.
pub(super) fn max_prepared_stmt_count_advice(e: &SqlError) -> Option<String> {
    (e.code == "1461").then(|| {
        format!(
            "{e}: raise max_prepared_stmt_count (SET GLOBAL max_prepared_stmt_count = N) or set ps_mode = \"disable\" (--db-ps-mode=disable)"
        )
    })
}
