//! What both PostgreSQL clients share: what a SQLSTATE means for the run, where a socket
//! entry points, and the catalog queries answered the same way by either client.
//!
//! Why its own file: the wire client ([`super::wire`]) and the tokio-postgres client
//! ([`super::tokio_client`]) must classify errors identically (a lost connection reconnects,
//! a missing table says "run prepare first") and must not borrow from each other: both import
//! these, and neither imports the other.

use std::path::{Path, PathBuf};

use crate::db::conn::{Connection, ErrKind, SqlError};
use crate::db::target::{Limits, MAX_ADMIN_ROWS};

/// The port a PostgreSQL server listens on by default.
pub const DEFAULT_PORT: u16 = 5432;

/// The libpq default socket directory of Debian/Ubuntu and most packages.
pub const SOCKET_DIR: &str = "/var/run/postgresql";

/// A `socket` entry: a directory (port 5432) or a socket file `<dir>/.s.PGSQL.<port>`.
pub fn socket_dir_and_port(entry: &str) -> (PathBuf, u16) {
    let path = Path::new(entry);
    if let Some(port) = path
        .file_name()
        .and_then(|f| f.to_str())
        .and_then(|f| f.strip_prefix(".s.PGSQL."))
        .and_then(|p| p.parse().ok())
    {
        let dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
        return (dir, port);
    }
    (path.to_path_buf(), DEFAULT_PORT)
}

/// When an error happened: opening a connection, or using an open one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Connect,
    Use,
}

/// What a SQLSTATE means for the run.
pub fn kind_of_state(state: &str) -> ErrKind {
    match state {
        // admin_shutdown, crash_shutdown, and the whole connection exception class.
        "57P01" | "57P02" | "57P03" => ErrKind::Lost,
        s if s.starts_with("08") => ErrKind::Lost,
        "42P01" => ErrKind::NoTable,
        "42P07" => ErrKind::TableExists,
        "53300" => ErrKind::Unreachable,
        _ => ErrKind::Other,
    }
}

/// A server error (SQLSTATE `state`) as the engines see it (both clients).
pub fn state_error(state: &str, message: String, phase: Phase) -> SqlError {
    let mut kind = kind_of_state(state);
    if phase == Phase::Connect && kind == ErrKind::Lost {
        // "the database system is starting up / shutting down": try again later.
        kind = ErrKind::Unreachable;
    }
    SqlError::new(state, message, kind)
}

/// The error of an administrative query (a capture's `pg_settings`, `SHOW`) whose answer
/// passed [`MAX_ADMIN_ROWS`] rows or `max_packet` bytes (both clients' `query_rows`): a server
/// that never ends its result would otherwise grow the process until it aborts. The client
/// drops the connection (the rest of the answer may never end).
pub fn too_many_rows(limits: &Limits) -> SqlError {
    SqlError::client(
        format!(
            "the server answered an administrative query with more than {MAX_ADMIN_ROWS} rows or max_packet = {} bytes (sbsuite reads no more)",
            limits.max_packet
        ),
        ErrKind::Other,
    )
}

/// The first column of `sql`'s first row as an integer (both clients' `query_i64`).
pub fn parse_i64(sql: &str, value: Option<&str>) -> Result<Option<i64>, SqlError> {
    match value {
        None => Ok(None),
        Some(v) => v.trim().parse().map(Some).map_err(|_| {
            SqlError::client(
                format!("`{sql}` returned `{v}`, not an integer"),
                ErrKind::Other,
            )
        }),
    }
}

/// The connections a benchmark may open (the dialect's `max_connections`, whichever client).
pub fn max_connections_of(c: &mut dyn Connection) -> Result<Option<u64>, SqlError> {
    // Slots reserved for superusers (and, from PostgreSQL 16, for pg_use_reserved_connections)
    // are not for the benchmark's connections.
    Ok(c.query_i64(
        "SELECT current_setting('max_connections')::int \
         - current_setting('superuser_reserved_connections')::int \
         - COALESCE(current_setting('reserved_connections', true)::int, 0)",
    )?
    .and_then(|v| u64::try_from(v).ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlstates_map_to_what_the_engine_does() {
        for s in ["57P01", "57P02", "57P03", "08006", "08003"] {
            assert_eq!(kind_of_state(s), ErrKind::Lost, "{s}");
        }
        assert_eq!(kind_of_state("42P01"), ErrKind::NoTable);
        assert_eq!(kind_of_state("42P07"), ErrKind::TableExists);
        assert_eq!(kind_of_state("53300"), ErrKind::Unreachable);
        for s in ["40P01", "23505", "40001", "28P01", "3D000"] {
            assert_eq!(kind_of_state(s), ErrKind::Other, "{s}");
        }
    }

    #[test]
    fn socket_entries_are_directories_or_socket_files() {
        assert_eq!(
            socket_dir_and_port("/var/run/postgresql"),
            (PathBuf::from("/var/run/postgresql"), 5432)
        );
        assert_eq!(
            socket_dir_and_port("/tmp/.s.PGSQL.5433"),
            (PathBuf::from("/tmp"), 5433)
        );
    }
}
