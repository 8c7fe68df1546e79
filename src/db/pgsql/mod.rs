//! PostgreSQL: which client opens a connection, and the PostgreSQL [`Dialect`].
//!
//! [`open`] uses sbsuite's own blocking protocol client ([`wire`]), in plain text or TLS, and
//! tokio-postgres ([`tokio_client`]) when the server needs an authentication method the wire
//! client does not speak, or when `SBSUITE_PGSQL_CLIENT=tokio` asks for it. What both clients
//! share is in files of its own, so that neither imports the other: [`shared`] (SQLSTATE
//! kinds, sockets, the limits' catalog query), [`encode`] (placeholders, parameters, binary
//! COPY rows) and the rustls configuration ([`crate::db::tls`]).
//!
//! The dialect is sysbench's PostgreSQL schema (`SERIAL`, a separate index on `id` for
//! `secondary`, `ANALYZE` after loading), `ALTER SYSTEM` + `pg_reload_conf()` for variants
//! (settings that need a restart, `context = postmaster`, are refused; a reload is verified
//! from fresh sessions) and `pg_settings` for captures.

pub mod decode;
pub mod encode;
pub mod shared;
pub mod tokio_client;
pub mod wire;

use std::ffi::CStr;
use std::time::{Duration, Instant};

use crate::db::conn::{Connection, SqlError};
use crate::db::dialect::{
    AdminError, Dialect, ServerAdmin, TableSpec, first_value, quote, value_text,
};
use crate::db::io::Choice;
use crate::db::sql_text::{Strings, Syntax};
use crate::db::target::{SslMode, Target};
use crate::value::Value;

pub use self::shared::SOCKET_DIR;

/// The environment variable that picks the client: `wire` (default, sbsuite's own protocol
/// client [`wire`]) or `tokio` (tokio-postgres).
pub const CLIENT_ENV: &str = "SBSUITE_PGSQL_CLIENT";

static CHOICE: Choice = Choice::new(CLIENT_ENV, "tokio", "tokio-postgres", "PostgreSQL");

/// Opens connection number `n` of `t` (endpoint `n` modulo the endpoints): through the wire
/// client when the server's auth method is one it speaks, else through tokio-postgres.
pub fn open(t: &Target, n: usize) -> Result<Box<dyn Connection>, SqlError> {
    if let Some(c) = CHOICE.open_wire(|| wire::open(t, n))? {
        return Ok(c);
    }
    tokio_client::open_tokio(t, n)
}

/// PostgreSQL's SQL and administration.
pub struct PgsqlDialect;

impl Dialect for PgsqlDialect {
    fn open(&self, t: &Target, n: usize) -> Result<Box<dyn Connection>, SqlError> {
        open(t, n)
    }

    /// `BEGIN ISOLATION LEVEL …`: one statement.
    fn begin_at(
        &self,
        level: Option<crate::db::Isolation>,
        writes: bool,
    ) -> Option<crate::db::dialect::Begin> {
        Some((
            None,
            level.map_or(self.begin(writes), crate::db::Isolation::pgsql_begin),
        ))
    }

    /// `to_regclass` reads the name as the statement wrote it (quotes, schema, search_path).
    fn table_exists_sql(&self, _schema: Option<&str>, _name: &str, written: &str) -> String {
        format!(
            "SELECT CASE WHEN to_regclass(E{}) IS NULL THEN 0 ELSE 1 END",
            quote(written)
        )
    }

    fn fold_identifier(&self, part: &str, quoted: bool) -> String {
        if quoted {
            part.to_string()
        } else {
            part.to_lowercase()
        }
    }

    fn missing_database(&self, e: &SqlError) -> bool {
        e.code == "3D000"
    }

    fn default_port(&self) -> u16 {
        shared::DEFAULT_PORT
    }

    /// libpq's default.
    fn default_ssl(&self) -> SslMode {
        SslMode::Preferred
    }

    /// A SQLSTATE: five letters or digits.
    fn is_error_code(&self, code: &str) -> bool {
        code.len() == 5 && code.chars().all(|c| c.is_ascii_alphanumeric())
    }

    fn lua_driver_name(&self) -> (&'static CStr, &'static CStr) {
        (c"pgsql", c"PostgreSQL driver")
    }

    fn lua_always_ignorable(&self, code: &str) -> bool {
        matches!(code, "40P01" | "23505" | "40001")
    }

    fn lua_rolls_back_ignored(&self) -> bool {
        true
    }

    fn lua_can_reconnect(&self) -> bool {
        false
    }

    /// libpq's PGRES_FATAL_ERROR is 7, as sysbench prints it.
    fn lua_failed(&self, e: &SqlError, sql: &str, prepared: bool) -> Vec<String> {
        vec![
            format!("{} failed: 7 {}", self.call_name(prepared), e.message),
            format!("failed query was: {sql}"),
        ]
    }

    fn lua_prepare_failed(&self, e: &SqlError, sql: &str) -> Vec<String> {
        vec![
            format!("PQprepare() failed: {}", e.message),
            format!("failed query was: {sql}"),
        ]
    }

    fn lua_connect_failed(&self, _t: &Target, e: &SqlError) -> Vec<String> {
        vec![format!("Connection to database failed: {}", e.message)]
    }

    fn call_name(&self, prepared: bool) -> &'static str {
        if prepared {
            "PQexecPrepared()"
        } else {
            "PQexec()"
        }
    }

    /// Standard strings (read as with `standard_conforming_strings = on`, the default),
    /// `E'…'`, dollar quotes, nested block comments; text with a backslash is an `E'…'`
    /// string, which means the same whatever `standard_conforming_strings` is.
    fn syntax(&self) -> &'static Syntax {
        &Syntax {
            backslash_escapes: false,
            backticks: false,
            brackets: false,
            escape_strings_and_dollar_quotes: true,
            mysql_comments: false,
            strings: Strings::Escape,
        }
    }

    fn create_table(&self, n: usize, t: &TableSpec<'_>) -> String {
        let id = if t.auto_inc {
            "SERIAL"
        } else {
            "INTEGER NOT NULL"
        };
        let key = if t.secondary {
            ""
        } else {
            ", PRIMARY KEY (id)"
        };
        format!(
            "CREATE TABLE sbtest{n}(id {id}, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL{key})"
        )
    }

    fn after_load(&self, n: usize) -> Option<String> {
        Some(format!("ANALYZE sbtest{n}"))
    }

    fn prewarm(&self, n: usize, _secondary: bool) -> Vec<String> {
        vec![
            format!("ANALYZE sbtest{n}"),
            format!("SELECT AVG(id), SUM(LENGTH(c)) FROM sbtest{n}"),
            format!("SELECT COUNT(k) FROM sbtest{n} WHERE k > 0"),
        ]
    }

    fn max_connections(&self, conn: &mut dyn Connection) -> Result<Option<u64>, SqlError> {
        shared::max_connections_of(conn)
    }

    fn server(&self) -> Option<&'static dyn ServerAdmin> {
        Some(&PgsqlAdmin)
    }
}

/// `ALTER SYSTEM`, `pg_settings` and `pg_file_settings`.
struct PgsqlAdmin;

/// The row of `pg_file_settings` that `ALTER SYSTEM` wrote for `name`, with `columns`.
fn auto_conf_sql(columns: &str, name: &str) -> String {
    format!(
        "SELECT {columns} FROM pg_file_settings WHERE name = {} AND sourcefile LIKE '%postgresql.auto.conf' ORDER BY seqno DESC LIMIT 1",
        quote(name)
    )
}

/// `name`'s effective value (`pg_settings.setting`).
fn pg_setting(conn: &mut dyn Connection, name: &str) -> Result<Option<String>, AdminError> {
    first_value(
        conn,
        &format!(
            "SELECT setting FROM pg_settings WHERE name = {}",
            quote(name)
        ),
    )
    .map_err(|source| AdminError::Read {
        what: name.to_string(),
        source,
    })
}

/// A failed `pg_reload_conf()` (after the settings changed, and after a restore).
fn reload_failed(source: SqlError) -> AdminError {
    AdminError::Statement {
        what: "pg_reload_conf()".into(),
        source,
    }
}

impl ServerAdmin for PgsqlAdmin {
    fn check_settable(&self, conn: &mut dyn Connection, name: &str) -> Result<(), AdminError> {
        let context = first_value(
            conn,
            &format!(
                "SELECT context FROM pg_settings WHERE name = {}",
                quote(name)
            ),
        )
        .map_err(|source| AdminError::Read {
            what: "pg_settings".into(),
            source,
        })?;
        match context.as_deref() {
            None => Err(AdminError::UnknownSetting(name.to_string())),
            Some("postmaster") => Err(AdminError::NeedsRestart(name.to_string())),
            Some("internal") => Err(AdminError::ReadOnly(name.to_string())),
            Some(_) => Ok(()),
        }
    }

    /// The `ALTER SYSTEM` value when the setting came from postgresql.auto.conf, else `None`
    /// (restored by `ALTER SYSTEM RESET`).
    fn original(
        &self,
        conn: &mut dyn Connection,
        name: &str,
    ) -> Result<Option<String>, AdminError> {
        first_value(conn, &auto_conf_sql("setting", name)).map_err(|source| AdminError::Read {
            what: name.to_string(),
            source,
        })
    }

    fn before_set(
        &self,
        conn: &mut dyn Connection,
        names: &[&str],
    ) -> Result<Vec<(String, Option<String>)>, AdminError> {
        names
            .iter()
            .map(|name| Ok((name.to_string(), pg_setting(conn, name)?)))
            .collect()
    }

    fn set(&self, conn: &mut dyn Connection, name: &str, value: &Value) -> Result<(), AdminError> {
        conn.query(&format!(
            "ALTER SYSTEM SET {name} = {}",
            quote(&value_text(value))
        ))
        .map_err(|source| AdminError::Statement {
            what: format!("ALTER SYSTEM SET {name}"),
            source,
        })?;
        Ok(())
    }

    fn deferred(&self) -> bool {
        true
    }

    /// Reload, then wait until fresh sessions see every new value. `before` holds each
    /// setting's effective value before the change; a value that stays equal is accepted
    /// once the server says the file's value is applied (the user asked for the value it
    /// already had).
    fn commit(
        &self,
        conn: &mut dyn Connection,
        before: &[(String, Option<String>)],
        connect: &mut dyn FnMut() -> Result<Box<dyn Connection>, AdminError>,
    ) -> Result<(), AdminError> {
        let file_state = |conn: &mut dyn Connection, name: &str| {
            conn.query_rows(&auto_conf_sql("applied::text, error", name))
                .map_err(|source| AdminError::Read {
                    what: "pg_file_settings".into(),
                    source,
                })
                .map(|rows| rows.into_iter().next().unwrap_or_default())
        };
        for (name, _) in before {
            if let Some(Some(err)) = file_state(conn, name)?.get(1) {
                return Err(AdminError::Refused {
                    name: name.clone(),
                    reason: err.clone(),
                });
            }
        }
        conn.query("SELECT pg_reload_conf()")
            .map_err(reload_failed)?;
        let start = Instant::now();
        loop {
            let mut fresh = connect()?;
            let mut waiting = Vec::new();
            for (name, old) in before {
                if pg_setting(fresh.as_mut(), name)? == *old {
                    let applied = file_state(fresh.as_mut(), name)?.first().cloned().flatten();
                    if !(start.elapsed() > Duration::from_secs(1)
                        && applied.as_deref() == Some("true"))
                    {
                        waiting.push(name.as_str());
                    }
                }
            }
            fresh.close();
            if waiting.is_empty() {
                return Ok(());
            }
            if start.elapsed() > Duration::from_secs(10) {
                return Err(AdminError::NotApplied(
                    waiting.into_iter().map(str::to_string).collect(),
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn read_back(&self, conn: &mut dyn Connection, name: &str) -> Result<Option<String>, SqlError> {
        first_value(conn, &format!("SELECT current_setting({})", quote(name)))
    }

    fn matches(&self, wanted: &Value, actual: Option<&str>) -> bool {
        actual.is_some_and(|b| b.eq_ignore_ascii_case(&value_text(wanted)))
    }

    fn restore_sql(&self, name: &str, original: Option<&str>) -> String {
        match original {
            None => format!("ALTER SYSTEM RESET {name}"),
            Some(v) => format!("ALTER SYSTEM SET {name} = {}", quote(v)),
        }
    }

    /// An escape string (`E'…'`): [`quote`]'s backslashes mean the same whatever
    /// `standard_conforming_strings` is.
    fn string_literal(&self, text: &str) -> String {
        format!("E{}", quote(text))
    }

    fn after_restore(&self, conn: &mut dyn Connection) -> Result<(), AdminError> {
        conn.query("SELECT pg_reload_conf()")
            .map_err(reload_failed)?;
        Ok(())
    }

    fn capture_sql(&self) -> (&'static str, &'static str) {
        (
            "SELECT version()",
            "SELECT name, setting || COALESCE(unit, '') FROM pg_settings ORDER BY name",
        )
    }

    /// The address the server answered on (`unix socket` for a local socket connection):
    /// PostgreSQL does not tell its host name without privileges.
    fn host_facts_sql(&self) -> &'static [(&'static str, &'static str)] {
        &[(
            "inet_server_addr",
            "SELECT COALESCE(host(inet_server_addr()), 'unix socket')",
        )]
    }
}
