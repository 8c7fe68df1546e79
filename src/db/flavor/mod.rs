//! Server flavors: which server speaks a wire protocol. sbsuite's clients speak three
//! protocols ([`Driver`]: MySQL, PostgreSQL, SQLite); behind the MySQL protocol stand servers
//! that differ where a benchmark notices: MariaDB, MySQL and OceanBase (later TiDB), with
//! their own error codes, limits, settings statements and what a capture reads. A
//! [`Flavor`] owns those differences, as a [`crate::db::Dialect`] owns the protocol's SQL.
//!
//! Why separate from the dialect: the dialect is known from `[target] driver` before any
//! connection (schema, placeholders, quoting: the same for every MySQL-protocol server); the
//! flavor is a fact of the server, read from its version string when a connection is made
//! ([`detect`], cached per [`crate::db::Connector`]: `5.5.5-10.11.6-MariaDB` in the
//! handshake, `5.7.25-OceanBase seekdb-v1.4.0.0` from `SELECT VERSION()`). Until then, and in
//! a dry run, the protocol's generic flavor stands in ([`generic`]).
//!
//! Adding a server: one file with a unit struct implementing [`Flavor`], and its line in
//! [`FLAVORS`] (before the generic flavor of its protocol, which recognizes every version).
//! Nothing outside `src/db` names a flavor: code asks the flavor it is given.

mod mariadb;
mod mysql;
mod oceanbase;
mod postgresql;
mod sqlite;

use crate::db::conn::{Connection, SqlError};
use crate::db::target::Driver;

pub use self::oceanbase::open_cursors_fix;

/// Every flavor, the specific ones of a protocol before its generic one: [`detect`] takes the
/// first of the protocol that recognizes the version.
pub static FLAVORS: &[&dyn Flavor] = &[
    &mariadb::MariaDb,
    &oceanbase::OceanBase,
    &mysql::MySql,
    &postgresql::PostgreSql,
    &sqlite::Sqlite,
];

/// What an error code means, whatever the protocol writes it as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorClass {
    /// The server broke a deadlock by rolling this transaction back.
    Deadlock,
    /// The transaction lost a conflict (serialization failure, a row changed since it was
    /// read, a transaction the server rolled back) and may succeed when re-run.
    Conflict,
    /// A lock wait or the statement ran out of time.
    Timeout,
    /// The session is gone (the server closed it, a restart, a kill).
    Lost,
    /// An error the server calls transient (an internal error, busy): re-running may help.
    Transient,
    /// A key the statement writes exists (unique violation).
    Duplicate,
    /// Anything else.
    Other,
}

/// One error code a flavor knows: its class, and whether a `[target]` without
/// `ignore_errors` counts and retries it.
#[derive(Clone, Copy, Debug)]
pub struct KnownError {
    pub code: &'static str,
    pub class: ErrorClass,
    pub ignorable: bool,
}

impl KnownError {
    const fn new(code: &'static str, class: ErrorClass, ignorable: bool) -> KnownError {
        KnownError {
            code,
            class,
            ignorable,
        }
    }
}

/// One server flavor's differences (see the module doc). Every method but the names and the
/// error table has a default: the generic server of the protocol.
pub trait Flavor: Sync {
    /// The flavor's name in lower case, as results and messages write it (`oceanbase`).
    fn name(&self) -> &'static str;

    /// The server's name as people write it (`OceanBase`).
    fn label(&self) -> &'static str;

    /// The wire protocol the server speaks.
    fn driver(&self) -> Driver;

    /// Whether `version` (the handshake's or `SELECT VERSION()`'s) is this server's. A
    /// protocol's generic flavor recognizes everything.
    fn recognizes(&self, version: &str) -> bool;

    /// The error codes the flavor knows; codes not listed are [`ErrorClass::Other`] and not
    /// ignorable by default.
    fn errors(&self) -> &'static [KnownError];

    /// What `code` means.
    fn class_of(&self, code: &str) -> ErrorClass {
        self.errors()
            .iter()
            .find(|k| k.code.eq_ignore_ascii_case(code))
            .map_or(ErrorClass::Other, |k| k.class)
    }

    /// The codes `ignore_errors` means when a suite's `[target]` does not set it.
    fn default_ignore_errors(&self) -> Vec<&'static str> {
        self.errors()
            .iter()
            .filter(|k| k.ignorable)
            .map(|k| k.code)
            .collect()
    }

    /// The server's limit on the statements a run prepares, when it has one that can be read.
    fn statement_room(&self, conn: &mut dyn Connection) -> Result<Option<StatementRoom>, SqlError> {
        let _ = conn;
        Ok(None)
    }

    /// `e` with the server setting that fixes it, when that is what the error means (a limit
    /// on prepared statements); `None` for errors the flavor has no advice on.
    fn advice(&self, e: &SqlError) -> Option<String> {
        let _ = e;
        None
    }

    /// `e` as the user reads it: [`Flavor::advice`], else the error itself.
    fn explain(&self, e: &SqlError) -> String {
        self.advice(e).unwrap_or_else(|| e.to_string())
    }

    /// The query listing the server's parameters as `(name, value)`-bearing rows, for a
    /// capture beside its variables (OceanBase's `SHOW PARAMETERS`); `None` when the server's
    /// settings are all variables.
    fn parameters_query(&self) -> Option<&'static str> {
        None
    }

    /// Whether a capture records parameters ([`Flavor::parameters_query`]).
    fn captures_parameters(&self) -> bool {
        self.parameters_query().is_some()
    }

    /// The statement that sets server variable `name` to the SQL literal `value` for new
    /// sessions (`SET GLOBAL …`); `None` for a server without runtime settings.
    fn set_variable_sql(&self, name: &str, value: &str) -> Option<String> {
        let _ = (name, value);
        None
    }

    /// The statement that sets cluster parameter `name` (OceanBase's `ALTER SYSTEM SET …`);
    /// `None` when the server has no parameters apart from its variables.
    fn set_parameter_sql(&self, name: &str, value: &str) -> Option<String> {
        let _ = (name, value);
        None
    }
}

impl std::fmt::Debug for dyn Flavor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A server's limit on the statements a run prepares, for the check before a run
/// ([`crate::db::Flavor::statement_room`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatementRoom {
    /// MySQL/MariaDB's `max_prepared_stmt_count`: the statements of all sessions together,
    /// `used` of which exist now.
    Global { max: u64, used: u64 },
    /// OceanBase's `open_cursors`: the statements (open cursors) one session may hold
    /// (error 5930, "maximum open cursors exceeded", beyond it). `max_prepared_stmt_count`
    /// exists there too, but is not the limit that a run meets.
    PerSession { open_cursors: u64 },
}

impl StatementRoom {
    /// Why `connections` connections that prepare `per_connection` statements each do not
    /// fit, with the fix; `None` when they fit.
    pub fn shortfall(self, per_connection: u64, connections: u64) -> Option<String> {
        let needed = per_connection * connections;
        match self {
            StatementRoom::Global { max, used } => (used + needed > max).then(|| {
                format!(
                    "the run prepares {per_connection} statements on each of {connections} connections ({needed} in all), but the server allows max_prepared_stmt_count = {max} with {used} in use: raise it (SET GLOBAL max_prepared_stmt_count = {}) or set ps_mode = \"disable\" (--db-ps-mode=disable)",
                    used + needed
                )
            }),
            StatementRoom::PerSession { open_cursors } => (per_connection > open_cursors)
                .then(|| {
                    format!(
                        "the run prepares {per_connection} statements on each connection, but OceanBase allows open_cursors = {open_cursors} per session (error 5930, maximum open cursors exceeded): {} (fewer tables)",
                        open_cursors_fix(Some(per_connection))
                    )
                }),
        }
    }
}

/// The flavor of a `driver` server whose version string is `version`.
pub fn detect(driver: Driver, version: &str) -> &'static dyn Flavor {
    FLAVORS
        .iter()
        .copied()
        .find(|f| f.driver() == driver && f.recognizes(version))
        .unwrap_or_else(|| generic(driver))
}

/// The protocol's generic flavor: what stands in before a connection tells (and in a dry run).
pub fn generic(driver: Driver) -> &'static dyn Flavor {
    match FLAVORS
        .iter()
        .copied()
        .find(|f| f.driver() == driver && f.recognizes(""))
    {
        Some(f) => f,
        // Every protocol registers a generic flavor (tested); SQLite's is the smallest.
        None => &sqlite::Sqlite,
    }
}

/// Whether `version` names a server more precisely than its protocol's generic flavor does.
fn decisive(driver: Driver, version: &str) -> bool {
    detect(driver, version).name() != generic(driver).name()
}

/// The flavor of the server behind `conn`: from the version its client read at the handshake
/// when that names the server (MariaDB's does), else from the protocol's version query
/// (OceanBase's handshake says `5.7.25`, its `VERSION()` says OceanBase). A protocol with one
/// flavor asks nothing. A version the server refuses to tell (an error with its own code) is
/// the generic flavor; an error of the connection itself (lost, a malformed or oversized
/// answer) is returned, as the statement that met it would have returned it.
pub fn detect_on(
    conn: &mut dyn Connection,
    driver: Driver,
) -> Result<&'static dyn Flavor, SqlError> {
    if FLAVORS.iter().filter(|f| f.driver() == driver).count() < 2 {
        return Ok(generic(driver));
    }
    if let Some(v) = conn.server_version()
        && decisive(driver, &v)
    {
        return Ok(detect(driver, &v));
    }
    let Some(query) = driver.dialect().server().map(|s| s.capture_sql().0) else {
        return Ok(generic(driver));
    };
    match conn.query_rows(query) {
        Ok(rows) => Ok(
            match rows
                .into_iter()
                .next()
                .and_then(|r| r.into_iter().next().flatten())
            {
                Some(v) => detect(driver, &v),
                None => generic(driver),
            },
        ),
        Err(e) if e.code.is_empty() => Err(e),
        Err(_) => Ok(generic(driver)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_are_told_apart_by_their_version_strings() {
        for (driver, version, name) in [
            (
                Driver::Mysql,
                "5.7.25-OceanBase seekdb-v1.4.0.0",
                "oceanbase",
            ),
            (Driver::Mysql, "5.7.25-OceanBase_CE-v4.2.1.8", "oceanbase"),
            (Driver::Mysql, "5.5.5-10.11.6-MariaDB-0+deb12u1", "mariadb"),
            (Driver::Mysql, "10.11.6-MariaDB-log", "mariadb"),
            (Driver::Mysql, "8.0.36", "mysql"),
            (Driver::Mysql, "", "mysql"),
            (Driver::Pgsql, "PostgreSQL 16.2 on x86_64", "postgresql"),
            (Driver::Sqlite, "3.45.0", "sqlite"),
        ] {
            let f = detect(driver, version);
            assert_eq!(f.name(), name, "{version}");
            assert_eq!(f.driver(), driver);
        }
        for driver in [Driver::Mysql, Driver::Pgsql, Driver::Sqlite] {
            assert_eq!(
                generic(driver).driver(),
                driver,
                "{driver:?} has a generic flavor"
            );
        }
        assert!(decisive(Driver::Mysql, "5.5.5-10.11.6-MariaDB"));
        assert!(!decisive(Driver::Mysql, "5.7.25"));
    }

    /// A server at its connection limit says so, and the advice names the setting (#30).
    #[test]
    fn too_many_connections_names_max_connections() {
        use crate::db::conn::ErrKind;
        for (driver, version, code) in [
            (Driver::Mysql, "10.11.6-MariaDB", "1040"),
            (Driver::Mysql, "8.0.36", "1040"),
            (Driver::Mysql, "5.7.25-OceanBase_CE-v4.2.1.8", "1040"),
            (Driver::Pgsql, "PostgreSQL 15.2", "53300"),
        ] {
            let e = SqlError::new(code, "too many", ErrKind::Unreachable);
            let said = detect(driver, version).explain(&e);
            assert!(
                said.contains("max_connections") && said.contains(code),
                "{version}: {said}"
            );
        }
    }

    /// The defaults of the protocols' servers are sysbench's lists; OceanBase adds obd's.
    #[test]
    fn each_flavor_has_its_ignorable_errors_and_classes() {
        let codes = |driver, version| detect(driver, version).default_ignore_errors();
        assert_eq!(codes(Driver::Mysql, "8.0.36"), ["1213", "1020", "1205"]);
        assert_eq!(
            codes(Driver::Mysql, "10.11.6-MariaDB"),
            ["1213", "1020", "1205"]
        );
        assert_eq!(
            codes(Driver::Mysql, "5.7.25-OceanBase seekdb-v1.4.0.0"),
            [
                "1213", "1020", "1205", "6002", "6004", "4012", "2013", "4016"
            ]
        );
        assert_eq!(codes(Driver::Pgsql, ""), ["40P01", "23505", "40001"]);
        assert_eq!(codes(Driver::Sqlite, ""), ["SQLITE_BUSY", "SQLITE_LOCKED"]);

        let ob = detect(Driver::Mysql, "5.7.25-OceanBase");
        assert_eq!(ob.class_of("4012"), ErrorClass::Timeout);
        assert_eq!(ob.class_of("6002"), ErrorClass::Conflict);
        assert_eq!(ob.class_of("1213"), ErrorClass::Deadlock);
        assert_eq!(generic(Driver::Mysql).class_of("4012"), ErrorClass::Other);
        assert_eq!(
            generic(Driver::Pgsql).class_of("40001"),
            ErrorClass::Conflict
        );
        assert_eq!(
            generic(Driver::Sqlite).class_of("sqlite_busy"),
            ErrorClass::Timeout
        );
    }
}
