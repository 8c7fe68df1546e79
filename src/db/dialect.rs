//! [`Dialect`]: everything that differs between the databases above the wire, in one trait
//! with one implementation per database (`mysql/`, `pgsql/`, `sqlite.rs`).
//!
//! Why a trait rather than `match driver` where the difference shows: a database's SQL and
//! administration (the sysbench schema, how a transaction starts, `SET GLOBAL` against
//! `ALTER SYSTEM`, what a capture reads, default port, what sysbench's driver for it prints)
//! used to be spread over the engines, the runner and the planner as `match` arms; adding a
//! database meant finding them all. Now the rest of the program asks the target's dialect
//! ([`crate::db::Driver::dialect`], one `match` in the crate) and never names a database.
//! What differs between the servers of one protocol (MariaDB, MySQL, OceanBase: error codes,
//! limits, parameters) is their [`crate::db::flavor`], known once connected.
//!
//! What it is not for: the measured path. Every method here runs during setup, checks, DDL
//! or administration, or once when a workload is built (an engine keeps the `&'static str`
//! it needs, e.g. [`Dialect::begin`]); statements themselves go through [`Connection`], one
//! virtual call each, as before.
//!
//! The runtime server settings of variants (`set_global`) are a separate trait,
//! [`ServerAdmin`], reached through [`Dialect::server`]: a database without a server (SQLite)
//! simply has none, and the runner asks that instead of naming the driver.

use crate::db::conn::{Connection, SqlError};
pub use crate::db::flavor::StatementRoom;
use crate::db::sql_text::Syntax;
use crate::db::target::{DbError, RawTarget, SqliteOptions, SslMode, Target};
use crate::value::Value;

/// The sysbench table a dialect writes the DDL of (the shape options of the OLTP workloads).
#[derive(Clone, Copy, Debug)]
pub struct TableSpec<'a> {
    /// `secondary`: `id` is a plain indexed column instead of the primary key.
    pub secondary: bool,
    /// `auto_inc`: the server assigns `id`.
    pub auto_inc: bool,
    /// `create_secondary`: the index on `k`.
    pub create_secondary: bool,
    /// `mysql_storage_engine` (MySQL's `ENGINE =` clause).
    pub storage_engine: &'a str,
}

/// Why the file of a file database (SQLite) is not as a step needs it.
#[derive(Debug, thiserror::Error)]
pub enum FileDbError {
    /// A run or an existing-data check found no database file: a run does not create one.
    #[error("the SQLite database file {path} does not exist: run prepare first")]
    Missing { path: String },
    /// A cleanup could not remove the default file it emptied.
    #[error("removing {path} failed: {source}")]
    Remove {
        path: String,
        #[source]
        source: SqlError,
    },
}

/// One database's SQL and server differences. Implementations are unit structs in the
/// database's own module, reached through [`crate::db::Driver::dialect`].
pub trait Dialect: Sync {
    /// Opens connection number `n` of `t` (endpoint `n` modulo the endpoints) through the
    /// database's client.
    fn open(&self, t: &Target, n: usize) -> Result<Box<dyn Connection>, SqlError>;

    // ---- [target] defaults and checks ----

    /// The port a server listens on when `hosts` gives none (0: the database is a file).
    fn default_port(&self) -> u16;

    /// Whether the database is a file on this machine (no server: clients elsewhere cannot
    /// reach it).
    fn is_file(&self) -> bool {
        self.default_port() == 0
    }

    /// The TLS mode when `[target] ssl` is not set.
    fn default_ssl(&self) -> SslMode {
        SslMode::Disabled
    }

    /// Whether `code` is written like one of this database's error codes.
    fn is_error_code(&self, code: &str) -> bool;

    /// Whether the client can compress the protocol (`[target] compression`).
    fn compression(&self) -> bool {
        false
    }

    /// The file settings of `[target]` (`path`, `journal_mode`, …): only a file database
    /// takes them; the others refuse them by name.
    fn file_options(&self, raw: &RawTarget) -> Result<SqliteOptions, DbError> {
        for (key, set) in [
            ("path", raw.path.is_some()),
            ("journal_mode", raw.journal_mode.is_some()),
            ("synchronous", raw.synchronous.is_some()),
            ("busy_timeout", raw.busy_timeout.is_some()),
        ] {
            if set {
                return Err(DbError::Invalid(format!(
                    "[target] {key} is a SQLite setting: remove it, or set driver = \"sqlite\""
                )));
            }
        }
        Ok(SqliteOptions::default())
    }

    // ---- words for messages ----

    /// Where connection number `n` (0-based, in opening order) goes.
    fn endpoint(&self, t: &Target, n: usize) -> String {
        if !t.sockets.is_empty() {
            t.sockets[n % t.sockets.len()].clone()
        } else {
            let (h, p) = &t.hosts[n % t.hosts.len()];
            format!("{h}:{p}")
        }
    }

    /// The database in "table 'sbtest1' does not exist in …".
    fn database_label(&self, t: &Target) -> String {
        format!("database `{}`", t.database)
    }

    /// Why the setup connection could not be opened.
    fn connect_failed(&self, t: &Target, e: &SqlError) -> String {
        let t = t.at(0);
        format!(
            "cannot connect to {} as user `{}`, database `{}`: {e}",
            self.endpoint(&t, 0),
            t.user,
            t.database
        )
    }

    /// The client call sysbench names in a fatal error of a prepared (`true`) or plain
    /// statement.
    fn call_name(&self, prepared: bool) -> &'static str;

    // ---- sysbench's driver for the database (Lua scripts' `sysbench.sql`) ----

    /// sysbench's short and long names of its driver (`sql_driver.sname`, `.lname`).
    fn lua_driver_name(&self) -> (&'static std::ffi::CStr, &'static std::ffi::CStr);

    /// The `sql_errno` a script reads for error `code` (MySQL's number); `None` when the
    /// driver has no numbers (`sql_errno` 0, `sql_state` is the code).
    fn lua_errno(&self, code: &str) -> Option<i32> {
        let _ = code;
        None
    }

    /// The code of a connection the client saw drop without a server error, as the
    /// database's own client names it (MySQL's 2013); `None`: no code.
    fn lost_code(&self) -> Option<&'static str> {
        None
    }

    /// Whether sysbench's driver reconnects after the ignorable error `code` (a lost
    /// connection) instead of only reporting it.
    fn lua_reconnects_after(&self, code: &str) -> bool {
        let _ = code;
        false
    }

    /// Whether sysbench's driver treats `code` as ignorable whatever `ignore_errors` says
    /// (its pgsql driver: deadlock, unique violation, serialization failure).
    fn lua_always_ignorable(&self, code: &str) -> bool {
        let _ = code;
        false
    }

    /// Whether sysbench's driver rolls the transaction back after an ignorable error (its
    /// pgsql driver ends the failed transaction).
    fn lua_rolls_back_ignored(&self) -> bool {
        false
    }

    /// Whether `con:reconnect()` opens a new session (sysbench's pgsql driver only logs that
    /// it cannot).
    fn lua_can_reconnect(&self) -> bool {
        true
    }

    /// sysbench's `FATAL:` lines (without the prefix) for statement `sql` failing with `e`.
    fn lua_failed(&self, e: &SqlError, sql: &str, prepared: bool) -> Vec<String> {
        vec![format!(
            "{} returned {e} for query '{sql}'",
            self.call_name(prepared)
        )]
    }

    /// sysbench's `FATAL:` lines (without the prefix) for a statement that could not be
    /// prepared.
    fn lua_prepare_failed(&self, e: &SqlError, sql: &str) -> Vec<String>;

    /// sysbench's `FATAL:` lines (without the prefix) for a connection that could not be
    /// opened to `t`.
    fn lua_connect_failed(&self, t: &Target, e: &SqlError) -> Vec<String>;

    // ---- SQL text ----

    /// How the server reads SQL text (quotes, comments) and how a string literal is written
    /// so that it means the same under every setting: for placeholders and `ps_mode =
    /// disable`'s literals ([`crate::db::sql_text`]).
    fn syntax(&self) -> &'static Syntax;

    /// Most placeholders one statement may have (a custom workload's `batch`, #31): the
    /// 16-bit count of MySQL's and PostgreSQL's protocols.
    fn max_params(&self) -> usize {
        65_535
    }

    // ---- the sysbench schema ----

    /// The CREATE TABLE statement of table `sbtest{n}` (without `table_options`).
    fn create_table(&self, n: usize, t: &TableSpec<'_>) -> String;

    /// The statements run after loading table `n`: the index on `id` of `secondary` where
    /// the CREATE TABLE has none, and sysbench's secondary index on `k`.
    fn create_indexes(&self, n: usize, t: &TableSpec<'_>) -> Vec<String> {
        let mut out = Vec::new();
        if t.secondary {
            out.push(format!("CREATE INDEX xid_{n} ON sbtest{n}(id)"));
        }
        if t.create_secondary {
            out.push(format!("CREATE INDEX k_{n} ON sbtest{n}(k)"));
        }
        out
    }

    /// A statement after the indexes of a freshly loaded table (statistics), if any.
    fn after_load(&self, n: usize) -> Option<String> {
        let _ = n;
        None
    }

    /// The statements that warm table `n` (statistics, then full scans of its indexes).
    fn prewarm(&self, n: usize, secondary: bool) -> Vec<String>;

    /// How an event's transaction starts; `writes` is false for a read-only script.
    fn begin(&self, writes: bool) -> &'static str {
        let _ = writes;
        "BEGIN"
    }

    /// How a transaction at `level` (`None`: the session's) begins; `writes`: it may write
    /// ([`Dialect::begin`]). `None` when the database has no such level. The default is
    /// MySQL's: `SET TRANSACTION ISOLATION LEVEL …` (only the next transaction's), then BEGIN.
    fn begin_at(&self, level: Option<Isolation>, writes: bool) -> Option<Begin> {
        Some((level.map(Isolation::mysql_set), self.begin(writes)))
    }

    /// Whether rows are inserted without `id` and the database assigns it.
    fn assigns_ids(&self, auto_inc: bool, secondary: bool) -> bool {
        let _ = secondary;
        auto_inc
    }

    /// The `id` a text INSERT sends when the database assigns ids (`None`: leave the column
    /// out).
    fn auto_id(&self) -> Option<&'static str> {
        None
    }

    /// Whether only one writer at a time makes progress (more loader threads would wait).
    fn single_writer(&self) -> bool {
        false
    }

    // ---- what exists (a suite's run drops only what it created: `db::owned`) ----

    /// A query whose one integer is non-zero when table `name` (folded as
    /// [`Dialect::fold_identifier`] folds it) exists in `schema`, or in the connection's own
    /// database when `schema` is `None`; `written` is the name as the statement spelled it.
    fn table_exists_sql(&self, schema: Option<&str>, name: &str, written: &str) -> String;

    /// An identifier as the server stores it: `quoted` tells whether the statement quoted
    /// it. MySQL keeps the case of table names; PostgreSQL folds unquoted names to lower case;
    /// SQLite compares them without case.
    fn fold_identifier(&self, part: &str, quoted: bool) -> String;

    /// Whether a connection failed because the target's database does not exist (MySQL
    /// 1049, PostgreSQL 3D000): the run refuses to start and says how to create it.
    fn missing_database(&self, e: &SqlError) -> bool {
        let _ = e;
        false
    }

    // ---- files of a file database ----

    /// Before a run: the database exists (a file database is not created by a run).
    fn check_exists(&self, t: &Target) -> Result<(), FileDbError> {
        let _ = t;
        Ok(())
    }

    /// After a cleanup: removes what the database left behind; `Some(line)` says what.
    fn after_cleanup(&self, t: &Target) -> Result<Option<String>, FileDbError> {
        let _ = t;
        Ok(None)
    }

    // ---- server limits ----

    /// The server's connection limit, when it has one.
    fn max_connections(&self, conn: &mut dyn Connection) -> Result<Option<u64>, SqlError> {
        let _ = conn;
        Ok(None)
    }

    // ---- administration ----

    /// Runtime server settings and captures; `None` for a database without a server.
    fn server(&self) -> Option<&'static dyn ServerAdmin> {
        None
    }

    /// One line about the target for `sbsuite plan`: driver and where (never the password);
    /// `default` when the suite has no `[target]`.
    fn describe(&self, t: &Target, default: bool) -> String {
        let _ = default;
        let n = t.sockets.len().max(t.hosts.len()).max(1);
        let driver = format!("{:?}", t.driver).to_ascii_lowercase();
        let each = if t.prepare_on == crate::db::PrepareOn::Each && t.hosts.len() > 1 {
            ", prepare and cleanup on each host"
        } else {
            ""
        };
        if !t.logins.is_empty() {
            // Hosts with their own login show it: `127.0.0.1:3306 (user u1, database d1)`.
            let eps: Vec<String> = (0..n)
                .map(|i| {
                    let own = t.at(i);
                    format!(
                        "{} (user {}, database {})",
                        self.endpoint(t, i),
                        own.user,
                        own.database
                    )
                })
                .collect();
            return format!("{driver} {}{each}", eps.join(" "));
        }
        let eps: Vec<String> = (0..n).map(|i| self.endpoint(t, i)).collect();
        format!(
            "{driver} {}, database {}, user {}{each}",
            eps.join(" "),
            t.database,
            t.user
        )
    }
}

/// Why a server setting could not be checked, read, changed or put back: the errors of
/// [`ServerAdmin`] and of a variant's `sql` templates ([`crate::db::sql_settings`]). Each
/// message names the setting, statement or template and, where there is one, the fix; the
/// server's own error is the source. The runner adds its bookkeeping around it
/// (`crate::runner::server::ServerError`).
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// No session could be opened to the server.
    #[error("cannot connect to {endpoint}: {source}")]
    Connect {
        endpoint: String,
        #[source]
        source: SqlError,
    },
    /// A name that cannot go into SQL text ([`crate::db::sql_settings::check_name`]).
    #[error("`{0}` is not a server variable name (letters, digits, `_` and `.` only)")]
    BadName(String),
    /// MySQL: the server has no such variable.
    #[error("`{name}` is not a variable of this server ({source})")]
    UnknownVariable {
        name: String,
        #[source]
        source: SqlError,
    },
    /// MySQL: a variable that only a restart changes.
    #[error(
        "`{name}` is read-only at runtime ({source}): use a `restart` variant with a config template"
    )]
    ReadOnlyAtRuntime {
        name: String,
        #[source]
        source: SqlError,
    },
    /// MySQL: any other refusal of the assignment that changes nothing.
    #[error("`{name}` cannot be set: {source}")]
    NotSettable {
        name: String,
        #[source]
        source: SqlError,
    },
    /// PostgreSQL: the server has no such setting.
    #[error("`{0}` is not a setting of this server")]
    UnknownSetting(String),
    /// PostgreSQL: a setting of context `postmaster`.
    #[error("`{0}` needs a server restart: use a `restart` variant with a config template")]
    NeedsRestart(String),
    /// PostgreSQL: a setting of context `internal`.
    #[error("`{0}` is read-only")]
    ReadOnly(String),
    /// Reading a setting (or the catalog `what` names) failed.
    #[error("reading {what} failed: {source}")]
    Read {
        what: String,
        #[source]
        source: SqlError,
    },
    /// A statement that changes or reloads settings failed (`what`: its head, as
    /// `SET GLOBAL name`).
    #[error("{what} failed: {source}")]
    Statement {
        what: String,
        #[source]
        source: SqlError,
    },
    /// PostgreSQL: the configuration file holds an error for `name`.
    #[error("PostgreSQL refuses {name}: {reason}")]
    Refused { name: String, reason: String },
    /// PostgreSQL: fresh sessions still see the old values of these settings.
    #[error("PostgreSQL did not apply {} within 10 s of pg_reload_conf()", .0.join(", "))]
    NotApplied(Vec<String>),
    /// An `sql` template does not compile or render; `hint` says what the template sees when
    /// that is the likely mistake.
    #[error("template `{template}`: {source}{hint}")]
    Template {
        template: String,
        #[source]
        source: minijinja::Error,
        hint: &'static str,
    },
    #[error("template `{0}` renders to an empty statement")]
    EmptyStatement(String),
    /// The `read` query's answer has no column names to find `column` by.
    #[error(
        "this connection (a TLS fallback driver) reports no column names, so `column = \"{0}\"` cannot be found: read one column (e.g. `SELECT …`) and leave out `column`"
    )]
    NoColumnNames(String),
    #[error("the read query has no column `{column}` (its columns: {})", .columns.join(", "))]
    NoSuchColumn {
        column: String,
        columns: Vec<String>,
    },
    #[error(
        "the read query returns {width} columns ({}): say which holds the value with `column`",
        .columns.join(", ")
    )]
    WhichColumn { width: usize, columns: Vec<String> },
    #[error(
        "the read query returned no row for `{0}`: is it a setting of this server (and the query right)?"
    )]
    NoRow(String),
    #[error("the read query's row for `{0}` is too short")]
    ShortRow(String),
}

/// A server's runtime settings (`set_global` of a variant) and what a capture reads. The
/// runner keeps the bookkeeping (restore files, the order of the steps, messages around
/// them); this is the SQL and how to read the server's answers.
pub trait ServerAdmin: Sync {
    /// Checks, changing nothing, that `name` exists and can be set at runtime.
    fn check_settable(&self, conn: &mut dyn Connection, name: &str) -> Result<(), AdminError>;

    /// The value that puts `name` back as it was (`None`: a NULL, or nothing to keep).
    fn original(&self, conn: &mut dyn Connection, name: &str)
    -> Result<Option<String>, AdminError>;

    /// What [`ServerAdmin::commit`] needs to know before the settings change (PostgreSQL:
    /// each setting's effective value).
    fn before_set(
        &self,
        conn: &mut dyn Connection,
        names: &[&str],
    ) -> Result<Vec<(String, Option<String>)>, AdminError> {
        let _ = (conn, names);
        Ok(Vec::new())
    }

    /// Sets `name` to `value`.
    fn set(&self, conn: &mut dyn Connection, name: &str, value: &Value) -> Result<(), AdminError>;

    /// Whether a value set by [`ServerAdmin::set`] takes effect only at
    /// [`ServerAdmin::commit`] (else it is read back at once).
    fn deferred(&self) -> bool {
        false
    }

    /// After every `set`: makes the values take effect and waits until fresh sessions see
    /// them; `connect` opens such a session.
    fn commit(
        &self,
        conn: &mut dyn Connection,
        before: &[(String, Option<String>)],
        connect: &mut dyn FnMut() -> Result<Box<dyn Connection>, AdminError>,
    ) -> Result<(), AdminError> {
        let _ = (conn, before, connect);
        Ok(())
    }

    /// The current value of `name` as the server reports it.
    fn read_back(&self, conn: &mut dyn Connection, name: &str) -> Result<Option<String>, SqlError>;

    /// Whether the server's `actual` value is the `wanted` one.
    fn matches(&self, wanted: &Value, actual: Option<&str>) -> bool;

    /// The statement that puts `name` back to `original`.
    fn restore_sql(&self, name: &str, original: Option<&str>) -> String;

    /// After the restore statements (PostgreSQL: reload).
    fn after_restore(&self, conn: &mut dyn Connection) -> Result<(), AdminError> {
        let _ = conn;
        Ok(())
    }

    /// The queries of a capture: the server version, then `(name, value)` rows.
    fn capture_sql(&self) -> (&'static str, &'static str);

    /// The query of a capture's parameters, for a server (by its `version`) whose settings
    /// are not all variables: OceanBase's `SHOW PARAMETERS` (a `name` and a `value` column,
    /// one row per server). `None` by default.
    fn parameters_sql(&self, version: &str) -> Option<&'static str> {
        let _ = version;
        None
    }

    /// Host facts a capture adds that its variables lack, as `(name, single-value query)`;
    /// each is cheap and needs no privilege, and one that fails is recorded as
    /// `unreadable: <error>` instead of failing the capture. MySQL/MariaDB's variables already
    /// hold `hostname`, `version_comment`, `innodb_buffer_pool_size`…: none by default.
    fn host_facts_sql(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// `text` as a string literal of this server's SQL, for values rendered into a variant's
    /// `sql` templates.
    fn string_literal(&self, text: &str) -> String {
        quote(text)
    }
}

/// `text` as a SQL string literal (quotes doubled, backslashes escaped).
pub fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "''"))
}

/// The value as the user meant it: for PostgreSQL (always a quoted string), templates and
/// messages.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::Bool(b) => if *b { "on" } else { "off" }.into(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Str(s) => s.clone(),
        Value::List(l) => l.iter().map(value_text).collect::<Vec<_>>().join(","),
    }
}

/// The first column of the first row of `sql` (`None`: no row, or NULL).
pub fn first_value(conn: &mut dyn Connection, sql: &str) -> Result<Option<String>, SqlError> {
    Ok(conn
        .query_rows(sql)?
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next().flatten()))
}

/// A transaction's `isolation`: the SQL standard's four levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isolation {
    ReadUncommitted,
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

impl Isolation {
    /// The level from its name (`"read committed"`, any case, `_` or `-` for spaces).
    pub fn parse(text: &str) -> Option<Isolation> {
        let norm = text.trim().to_ascii_lowercase().replace(['_', '-'], " ");
        Some(match norm.as_str() {
            "read uncommitted" => Isolation::ReadUncommitted,
            "read committed" => Isolation::ReadCommitted,
            "repeatable read" => Isolation::RepeatableRead,
            "serializable" => Isolation::Serializable,
            _ => return None,
        })
    }

    /// The level as SQL writes it: `READ COMMITTED`.
    pub fn sql(self) -> &'static str {
        match self {
            Isolation::ReadUncommitted => "READ UNCOMMITTED",
            Isolation::ReadCommitted => "READ COMMITTED",
            Isolation::RepeatableRead => "REPEATABLE READ",
            Isolation::Serializable => "SERIALIZABLE",
        }
    }

    /// MySQL's (MariaDB's, OceanBase's) statement that sets the next transaction's level,
    /// sent before its BEGIN (inside a transaction the server refuses it: error 1568).
    pub fn mysql_set(self) -> &'static str {
        match self {
            Isolation::ReadUncommitted => "SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED",
            Isolation::ReadCommitted => "SET TRANSACTION ISOLATION LEVEL READ COMMITTED",
            Isolation::RepeatableRead => "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",
            Isolation::Serializable => "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
        }
    }

    /// PostgreSQL's BEGIN at this level.
    pub fn pgsql_begin(self) -> &'static str {
        match self {
            Isolation::ReadUncommitted => "BEGIN ISOLATION LEVEL READ UNCOMMITTED",
            Isolation::ReadCommitted => "BEGIN ISOLATION LEVEL READ COMMITTED",
            Isolation::RepeatableRead => "BEGIN ISOLATION LEVEL REPEATABLE READ",
            Isolation::Serializable => "BEGIN ISOLATION LEVEL SERIALIZABLE",
        }
    }
}

/// How a transaction begins ([`Dialect::begin_at`]): a statement sent before the BEGIN, if
/// any, and the BEGIN.
pub type Begin = (Option<&'static str>, &'static str);
