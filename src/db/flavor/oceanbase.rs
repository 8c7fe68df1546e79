//! OceanBase (and seekdb, its single-node kernel) in MySQL mode: `5.7.25-OceanBase…` from
//! `SELECT VERSION()` (its handshake says `5.7.25` only).
//!
//! What differs from MySQL: its own error codes for transactions the server rolled back
//! (6002, 6004), timeouts (4012) and internal errors (4016), which obd's sysbench loop
//! ignores (`--mysql-ignore-errors=6002,6004,4012,2013,4016`) and so does a `[target]`
//! without `ignore_errors` here; the limit a run's prepared statements meet is the
//! per-session `open_cursors` parameter (error 5930), which no `max_prepared_stmt_count`
//! lifts; cluster parameters (`SHOW PARAMETERS`, `ALTER SYSTEM SET`) beside the tenant's
//! variables (`SET GLOBAL`).

use super::{ErrorClass, Flavor, KnownError, StatementRoom, mysql};
use crate::db::conn::{Connection, ErrKind, SqlError};
use crate::db::target::Driver;

/// OceanBase.
pub struct OceanBase;

/// MySQL's codes OceanBase returns too, and its own: the default ignorable ones are
/// sysbench's and obd's.
const ERRORS: &[KnownError] = &[
    KnownError::new("1213", ErrorClass::Deadlock, true),
    KnownError::new("1020", ErrorClass::Conflict, true),
    KnownError::new("1205", ErrorClass::Timeout, true),
    // Transaction rolled back by the server (killed, needs rollback, idle timeout, context
    // gone).
    KnownError::new("6002", ErrorClass::Conflict, true),
    KnownError::new("6004", ErrorClass::Conflict, true),
    // The statement or the transaction reached ob_query_timeout / ob_trx_timeout.
    KnownError::new("4012", ErrorClass::Timeout, true),
    KnownError::new("2013", ErrorClass::Lost, true),
    // OB_ERR_UNEXPECTED, transient under load (obd ignores it).
    KnownError::new("4016", ErrorClass::Transient, true),
    KnownError::new("2006", ErrorClass::Lost, false),
    KnownError::new("2011", ErrorClass::Lost, false),
    KnownError::new("2055", ErrorClass::Lost, false),
    KnownError::new("1927", ErrorClass::Lost, false),
    KnownError::new("4031", ErrorClass::Lost, false),
    KnownError::new("1062", ErrorClass::Duplicate, false),
];

impl Flavor for OceanBase {
    fn name(&self) -> &'static str {
        "oceanbase"
    }

    fn label(&self) -> &'static str {
        "OceanBase"
    }

    fn driver(&self) -> Driver {
        Driver::Mysql
    }

    fn recognizes(&self, version: &str) -> bool {
        version.to_ascii_lowercase().contains("oceanbase")
    }

    fn errors(&self) -> &'static [KnownError] {
        ERRORS
    }

    /// `open_cursors` from `SHOW PARAMETERS`, the lowest of the servers (one row each).
    fn statement_room(&self, conn: &mut dyn Connection) -> Result<Option<StatementRoom>, SqlError> {
        let table = match conn.query_table("SHOW PARAMETERS LIKE 'open_cursors'") {
            Err(e) if e.kind == ErrKind::Other => return Ok(None),
            r => r?,
        };
        let value = table
            .columns
            .iter()
            .position(|c| c.eq_ignore_ascii_case("value"));
        let open_cursors = table
            .rows
            .iter()
            .filter_map(|row| row.get(value?)?.as_deref()?.parse::<u64>().ok())
            .min();
        Ok(open_cursors.map(|open_cursors| StatementRoom::PerSession { open_cursors }))
    }

    /// 5930, "maximum open cursors exceeded": the per-session `open_cursors`; 1040: the
    /// tenant's `max_connections`.
    fn advice(&self, e: &SqlError) -> Option<String> {
        (e.code == "5930")
            .then(|| {
                format!(
                    "{e}: OceanBase's open_cursors limits the statements one session may prepare: {}",
                    open_cursors_fix(None)
                )
            })
            .or_else(|| mysql::max_connections_advice(e))
    }

    fn parameters_query(&self) -> Option<&'static str> {
        Some("SHOW PARAMETERS")
    }

    fn set_variable_sql(&self, name: &str, value: &str) -> Option<String> {
        Some(format!("SET GLOBAL {name} = {value}"))
    }

    fn set_parameter_sql(&self, name: &str, value: &str) -> Option<String> {
        Some(format!("ALTER SYSTEM SET {name} = {value}"))
    }
}

/// What lifts OceanBase's per-session `open_cursors` limit; `needed`: the statements one
/// connection prepares, when known. `max_prepared_stmt_count` does not help there.
pub fn open_cursors_fix(needed: Option<u64>) -> String {
    let set = match needed {
        Some(n) => OceanBase
            .set_parameter_sql("open_cursors", &format!("{n} or more"))
            .unwrap_or_default(),
        None => format!(
            "{}, at least the statements one connection prepares",
            OceanBase
                .set_parameter_sql("open_cursors", "N")
                .unwrap_or_default()
        ),
    };
    format!(
        "raise the tenant's limit ({set}), set ps_mode = \"disable\" (--db-ps-mode=disable), or prepare fewer statements per connection"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::flavor::mariadb::MariaDb;
    use crate::db::flavor::mysql::MySql;

    /// OceanBase's error 5930 and its per-session `open_cursors` get their own fix, never
    /// `max_prepared_stmt_count` (which does not lift it); MySQL's limit keeps its own.
    #[test]
    fn each_limit_on_prepared_statements_names_its_own_fix() {
        let ob = StatementRoom::PerSession { open_cursors: 50 };
        assert_eq!(ob.shortfall(50, 64), None, "50 statements fit 50 cursors");
        let why = ob.shortfall(60, 4).unwrap();
        assert_eq!(
            why,
            "the run prepares 60 statements on each connection, but OceanBase allows open_cursors = 50 per session (error 5930, maximum open cursors exceeded): raise the tenant's limit (ALTER SYSTEM SET open_cursors = 60 or more), set ps_mode = \"disable\" (--db-ps-mode=disable), or prepare fewer statements per connection (fewer tables)"
        );
        let e = SqlError::new("5930", "maximum open cursors exceeded", ErrKind::Other);
        let told = OceanBase.explain(&e);
        assert!(
            told.starts_with(
                "error 5930 (maximum open cursors exceeded): OceanBase's open_cursors"
            ) && told.contains("ALTER SYSTEM SET open_cursors = N")
                && told.contains("ps_mode = \"disable\""),
            "{told}"
        );
        for text in [&why, &told] {
            assert!(!text.contains("max_prepared_stmt_count"), "{text}");
        }
        assert_eq!(
            MySql.explain(&e),
            e.to_string(),
            "5930 means nothing to MySQL"
        );

        let my = StatementRoom::Global { max: 30, used: 4 };
        assert_eq!(my.shortfall(13, 2), None);
        let why = my.shortfall(18, 2).unwrap();
        assert!(
            why.contains("prepares 18 statements on each of 2 connections (36 in all)")
                && why.contains("max_prepared_stmt_count = 30 with 4 in use")
                && why.contains("SET GLOBAL max_prepared_stmt_count = 40"),
            "{why}"
        );
        let e = SqlError::new(
            "1461",
            "Can't create more than max_prepared_stmt_count statements (current value: 30)",
            ErrKind::Other,
        );
        assert!(
            MariaDb
                .explain(&e)
                .contains("SET GLOBAL max_prepared_stmt_count = N")
        );
        let e = SqlError::new("1213", "Deadlock found", ErrKind::Other);
        assert_eq!(OceanBase.explain(&e), "error 1213 (Deadlock found)");
    }
}
