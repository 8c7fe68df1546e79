//! The database under test: the [`Connection`] the engines drive, the validated [`Target`]
//! it connects to, and one [`Dialect`] per database for everything else that differs.
//!
//! Layout, and why: one folder (or file) per database — `mysql/` (sbsuite's wire client, the
//! mysql_async fallback and what both share), `pgsql/` (wire client, tokio-postgres fallback,
//! the encoding both share), `sqlite.rs` — each with its [`Dialect`]; beside them what every
//! client shares: [`conn`] (the trait), [`target`] (`[target]` and its validation), [`sql_text`]
//! (each dialect's quoting: the lexer of placeholders and the literals of `ps_mode = disable`), [`io`]
//! (sockets, the read buffer, the per-connection runtime), [`tls`] (rustls), [`dry_run`],
//! [`owned`] (the tables a suite's run created, which its cleanup alone drops, through the
//! [`ledger`] a [`Target`] carries), [`counters`] (the server counters that say what a run step
//! cost it).
//! The `match`es on the driver are here ([`Driver::dialect`], [`Driver::name`],
//! [`counters::profile`]); a new database is a new folder, a [`Driver`] variant and its arms
//! there. A [`Driver`] is a wire protocol; which server speaks it (MariaDB, MySQL, OceanBase…)
//! is its [`flavor`], detected when the [`Connector`] first connects; a new server is a file in
//! `flavor/` and its line there. Nothing outside `db` matches on either: it asks the dialect or
//! the flavor.
//!
//! `db` is the bottom layer beside `value`: it imports nothing from the suite, the plan, the
//! engines or the runner (the suite embeds [`RawTarget`]; a sysbench command line's target is
//! built in `compat::target`).

pub mod conn;
pub mod counters;
pub mod dialect;
pub mod dry_run;
pub mod flavor;
pub mod interrupt;
pub mod io;
pub mod ledger;
pub mod mux;
pub mod mysql;
pub mod owned;
pub mod pgsql;
pub mod ring;
/// What the wire clients' unit tests share with the integration tests: one way to skip.
#[cfg(test)]
#[path = "../../tests/common/skip.rs"]
pub mod skip;
pub mod sql_settings;
pub mod sql_text;
pub mod sqlite;
pub mod target;
pub mod tls;

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

pub use self::conn::{
    Cell, Collect, Connection, DataRow, Done, ErrKind, Fetched, KeepAll, P, RowSink, SqlError,
    StmtId,
};
pub use self::dialect::{
    AdminError, Dialect, FileDbError, Isolation, ServerAdmin, StatementRoom, TableSpec,
};
pub use self::flavor::{ErrorClass, Flavor};
pub use self::target::{
    ByDriver, DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_PACKET, DEFAULT_QUERY_TIMEOUT,
    DEFAULT_SQLITE_PATH, DbError, Driver, HostEntry, HostLogin, IgnoreErrors, Limits, Login,
    MAX_ADMIN_ROWS, PrepareOn, PsMode, RawTarget, Secret, Sockets, SqliteOptions, SslMode, Target,
    WireTarget, parse_host,
};

/// The `SBSUITE_*` environment variables that pick a database's client and how its sockets
/// are driven (process switches, not suite keys).
pub const CLIENT_ENVS: &[&str] = &[mysql::CLIENT_ENV, pgsql::CLIENT_ENV, ring::ENV];

impl Driver {
    /// The database's [`Dialect`]: the one place that names each driver.
    pub fn dialect(self) -> &'static dyn Dialect {
        match self {
            Driver::Mysql => &mysql::MysqlDialect,
            Driver::Pgsql => &pgsql::PgsqlDialect,
            Driver::Sqlite => &sqlite::SqliteDialect,
        }
    }

    /// The protocol's generic server flavor ([`flavor::generic`]): what stands in before a
    /// connection tells which server it is.
    pub fn generic_flavor(self) -> &'static dyn Flavor {
        flavor::generic(self)
    }
}

/// Opens connections to a [`Target`], each to the next endpoint in round-robin order (with
/// that host's own login when its `hosts` entry has one, [`Target::at`]), through the target's
/// driver.
///
/// The first connection tells the server's [`Flavor`] ([`flavor::detect_on`]), which the
/// connector keeps with the `ignore_errors` that apply on it.
#[derive(Debug)]
pub struct Connector {
    pub target: Target,
    next: AtomicUsize,
    /// The server's flavor and the resolved `ignore_errors`, from the first connection.
    server: OnceLock<(&'static dyn Flavor, IgnoreErrors)>,
}

impl Connector {
    pub fn new(target: Target) -> Connector {
        Connector {
            target,
            next: AtomicUsize::new(0),
            server: OnceLock::new(),
        }
    }

    /// The server's flavor: detected by the first connection, the protocol's generic one
    /// before it (and in a dry run).
    pub fn flavor(&self) -> &'static dyn Flavor {
        self.server
            .get()
            .map_or_else(|| flavor::generic(self.target.driver), |s| s.0)
    }

    /// The errors counted and retried: `[target] ignore_errors`, or the server flavor's
    /// default when it is not set.
    pub fn ignore_errors(&self) -> &IgnoreErrors {
        self.server
            .get()
            .map_or(&self.target.ignore_errors, |s| &s.1)
    }

    /// `e` as the user reads it: with the server setting that fixes it
    /// ([`Flavor::explain`]).
    pub fn explain(&self, e: &SqlError) -> String {
        self.flavor().explain(e)
    }

    /// Learns the server's flavor from `conn` unless known; an error is the connection's own
    /// (see [`flavor::detect_on`]).
    fn learn(&self, conn: &mut dyn Connection) -> Result<(), SqlError> {
        if self.server.get().is_none() {
            let f = flavor::detect_on(conn, self.target.driver)?;
            let ignore = self
                .target
                .ignore_errors
                .resolve(&f.default_ignore_errors());
            let _ = self.server.set((f, ignore));
        }
        Ok(())
    }

    /// Opens the next connection (round-robin over the endpoints): a worker's, not registered
    /// for interruption (see [`interrupt`]).
    pub fn connect(&self) -> Result<Box<dyn Connection>, SqlError> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        if self.target.dry_run {
            return Ok(Box::<dry_run::DryRun>::default());
        }
        let mut conn = self.target.driver.dialect().open(&self.target.at(n), n)?;
        self.learn(conn.as_mut())?;
        Ok(conn)
    }

    /// Opens a connection to endpoint `n` (modulo the endpoints) without moving the
    /// round-robin: setup work (prepare, checks, cleanup) goes to the first endpoint, so the
    /// workers still start at the first one as in sysbench. The connection is registered so
    /// that a stop request breaks a call blocked in it ([`interrupt`]).
    pub fn connect_at(&self, n: usize) -> Result<Box<dyn Connection>, SqlError> {
        if self.target.dry_run {
            return Ok(Box::<dry_run::DryRun>::default());
        }
        self.connect_server(n)
    }

    /// Opens a real connection to endpoint `n` even for a `dry_run` target: server settings
    /// of variants are applied and read back for real.
    pub fn connect_server(&self, n: usize) -> Result<Box<dyn Connection>, SqlError> {
        let mut conn = self.target.driver.dialect().open(&self.target.at(n), n)?;
        self.learn(conn.as_mut())?;
        Ok(interrupt::guarded(conn))
    }
}
