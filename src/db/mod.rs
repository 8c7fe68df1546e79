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
//! The one `match` on the driver in the program is [`Driver::dialect`]; a new database is a
//! new folder, a [`Driver`] variant and its arm there.
//!
//! `db` is the bottom layer beside `value`: it imports nothing from the suite, the plan, the
//! engines or the runner (the suite embeds [`RawTarget`]; a sysbench command line's target is
//! built in `compat::target`).

pub mod conn;
pub mod counters;
pub mod dialect;
pub mod dry_run;
pub mod interrupt;
pub mod io;
pub mod ledger;
pub mod mysql;
pub mod owned;
pub mod pgsql;
pub mod sql_settings;
pub mod sql_text;
pub mod sqlite;
pub mod target;
pub mod tls;

use std::sync::atomic::{AtomicUsize, Ordering};

pub use self::conn::{
    Cell, Collect, Connection, DataRow, Done, ErrKind, Fetched, P, RowSink, SqlError, StmtId,
};
pub use self::dialect::{AdminError, Dialect, FileDbError, ServerAdmin, StatementRoom, TableSpec};
pub use self::target::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_PACKET, DEFAULT_QUERY_TIMEOUT, DEFAULT_SQLITE_PATH,
    DbError, Driver, HostEntry, HostLogin, IgnoreErrors, Limits, Login, MAX_ADMIN_ROWS, PrepareOn,
    PsMode, RawTarget, Secret, Sockets, SqliteOptions, SslMode, Target, WireTarget, parse_host,
};

/// The `SBSUITE_*` environment variables that pick a database's client (process switches,
/// not suite keys).
pub const CLIENT_ENVS: &[&str] = &[mysql::CLIENT_ENV, pgsql::CLIENT_ENV];

impl Driver {
    /// The database's [`Dialect`]: the one place that names each driver.
    pub fn dialect(self) -> &'static dyn Dialect {
        match self {
            Driver::Mysql => &mysql::MysqlDialect,
            Driver::Pgsql => &pgsql::PgsqlDialect,
            Driver::Sqlite => &sqlite::SqliteDialect,
        }
    }
}

/// Opens connections to a [`Target`], each to the next endpoint in round-robin order (with
/// that host's own login when its `hosts` entry has one, [`Target::at`]), through the target's
/// driver.
#[derive(Debug)]
pub struct Connector {
    pub target: Target,
    next: AtomicUsize,
}

impl Connector {
    pub fn new(target: Target) -> Connector {
        Connector {
            target,
            next: AtomicUsize::new(0),
        }
    }

    /// Opens the next connection (round-robin over the endpoints): a worker's, not registered
    /// for interruption (see [`interrupt`]).
    pub fn connect(&self) -> Result<Box<dyn Connection>, SqlError> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        if self.target.dry_run {
            return Ok(Box::<dry_run::DryRun>::default());
        }
        self.target.driver.dialect().open(&self.target.at(n), n)
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
        let conn = self.target.driver.dialect().open(&self.target.at(n), n)?;
        Ok(interrupt::guarded(conn))
    }
}
