//! MySQL/MariaDB: which client opens a connection, and the MySQL [`Dialect`].
//!
//! [`open`] uses sbsuite's own blocking protocol client ([`wire`]) when TLS and compression
//! are off, and mysql_async ([`async_client`]) otherwise, or when the server needs what the
//! wire client does not speak (an auth plugin other than native / caching_sha2 fast path), or
//! when `SBSUITE_MYSQL_CLIENT=async` asks for it. What both clients share (error kinds, bulk
//! loading, the limits' catalog queries) is [`shared`]; neither client imports the other.
//! Connections take the next endpoint round-robin ([`crate::db::Connector`]), as sysbench
//! does.
//!
//! The dialect is sysbench's MySQL schema (`AUTO_INCREMENT`, the `ENGINE` clause, `KEY xid`
//! for `secondary`), `SET GLOBAL` for variants (checked with the no-op
//! `SET GLOBAL x = @@GLOBAL.x`, which fails for unknown or read-only variables, and read back
//! after every change) and `SHOW GLOBAL VARIABLES` for captures.

pub mod async_client;
pub mod shared;
pub mod wire;

use std::ffi::CStr;

use crate::db::conn::{Connection, SqlError};
use crate::db::dialect::{
    AdminError, Dialect, ServerAdmin, TableSpec, first_value, quote, value_text,
};
use crate::db::io::Choice;
use crate::db::sql_text::{Strings, Syntax};
use crate::db::target::{SslMode, Target};
use crate::value::Value;

/// The environment variable that picks the client: `wire` (default, sbsuite's own protocol
/// client [`wire`]) or `async` (mysql_async).
pub const CLIENT_ENV: &str = "SBSUITE_MYSQL_CLIENT";

static CHOICE: Choice = Choice::new(CLIENT_ENV, "async", "mysql_async", "MySQL");

/// Opens connection number `n` of `t` (endpoint `n` modulo the endpoints): through the wire
/// client when TLS and compression are off and it speaks the server's auth, else through
/// mysql_async.
pub fn open(t: &Target, n: usize) -> Result<Box<dyn Connection>, SqlError> {
    if t.ssl == SslMode::Disabled
        && !t.compression
        && let Some(c) = CHOICE.open_wire(|| {
            wire::open(t, n).inspect_err(|e| {
                if let wire::WireError::Unsupported(why) = e {
                    let _ = FALLBACK.set(why.clone());
                }
            })
        })?
    {
        return Ok(c);
    }
    async_client::open_async(t, n).map_err(|mut e| {
        // What mysql_async says about a server the wire client could not speak to ("Driver
        // error: Unexpected packet") means little without the reason it was used.
        if let Some(why) = FALLBACK.get() {
            e.message = format!(
                "{} (through mysql_async, used because the wire client found: {why})",
                e.message
            );
        }
        e
    })
}

/// Why the wire client handed the process's connections to mysql_async (the first reason).
static FALLBACK: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// MySQL/MariaDB's SQL and administration.
pub struct MysqlDialect;

impl Dialect for MysqlDialect {
    fn open(&self, t: &Target, n: usize) -> Result<Box<dyn Connection>, SqlError> {
        open(t, n)
    }

    fn table_exists_sql(&self, schema: Option<&str>, name: &str, _written: &str) -> String {
        format!(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
            schema.map_or_else(|| "DATABASE()".to_string(), quote),
            quote(name)
        )
    }

    fn fold_identifier(&self, part: &str, _quoted: bool) -> String {
        part.to_string()
    }

    fn missing_database(&self, e: &SqlError) -> bool {
        e.code == "1049"
    }

    fn default_port(&self) -> u16 {
        shared::DEFAULT_PORT
    }

    fn is_error_code(&self, code: &str) -> bool {
        code.parse::<u32>().is_ok()
    }

    fn compression(&self) -> bool {
        true
    }

    fn call_name(&self, prepared: bool) -> &'static str {
        if prepared {
            "mysql_stmt_execute()"
        } else {
            "mysql_drv_query()"
        }
    }

    fn lua_driver_name(&self) -> (&'static CStr, &'static CStr) {
        (c"mysql", c"MySQL driver")
    }

    fn lua_errno(&self, code: &str) -> Option<i32> {
        Some(code.parse().unwrap_or(0))
    }

    /// What libmysqlclient says when the server went away.
    fn lost_code(&self) -> Option<&'static str> {
        Some("2013")
    }

    /// sysbench's MySQL driver reconnects on its lost-connection errors when they are
    /// ignorable.
    fn lua_reconnects_after(&self, code: &str) -> bool {
        matches!(code, "2013" | "2006" | "2011" | "2055")
    }

    fn lua_prepare_failed(&self, e: &SqlError, _sql: &str) -> Vec<String> {
        vec![
            "mysql_stmt_prepare() failed".to_string(),
            format!("MySQL error: {} \"{}\"", e.code, e.message),
        ]
    }

    fn lua_connect_failed(&self, t: &Target, e: &SqlError) -> Vec<String> {
        let place = match (t.sockets.first(), t.hosts.first()) {
            (Some(socket), _) => format!("socket '{socket}'"),
            (None, Some((host, port))) => format!("host '{host}', port {port}"),
            (None, None) => "the default host".to_string(),
        };
        vec![
            format!("unable to connect to MySQL server on {place}, aborting..."),
            format!("error {}: {}", e.code, e.message),
        ]
    }

    /// Backslash escapes (read as `sql_mode`'s default, without `NO_BACKSLASH_ESCAPES`),
    /// backticks, `#` and `-- ` comments, `/*! … */`; text with a backslash is joined by the
    /// server, which reads it the same whatever `NO_BACKSLASH_ESCAPES` is.
    fn syntax(&self) -> &'static Syntax {
        &Syntax {
            backslash_escapes: true,
            backticks: true,
            brackets: false,
            escape_strings_and_dollar_quotes: false,
            mysql_comments: true,
            strings: Strings::JoinedAtBackslashes,
        }
    }

    fn create_table(&self, n: usize, t: &TableSpec<'_>) -> String {
        let key = if t.secondary {
            "KEY xid (id)"
        } else {
            "PRIMARY KEY (id)"
        };
        let inc = if t.auto_inc { " AUTO_INCREMENT" } else { "" };
        format!(
            "CREATE TABLE sbtest{n}(id INTEGER NOT NULL{inc}, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, {key}) /*! ENGINE = {} */",
            t.storage_engine
        )
    }

    /// Only the index on `k`: `secondary`'s index on `id` is the CREATE TABLE's `KEY xid`.
    fn create_indexes(&self, n: usize, t: &TableSpec<'_>) -> Vec<String> {
        let mut out = Vec::new();
        if t.create_secondary {
            out.push(format!("CREATE INDEX k_{n} ON sbtest{n}(k)"));
        }
        out
    }

    fn prewarm(&self, n: usize, secondary: bool) -> Vec<String> {
        let mut q = vec![
            format!("ANALYZE TABLE sbtest{n}"),
            format!("SELECT AVG(id), SUM(LENGTH(c)) FROM sbtest{n} FORCE INDEX (PRIMARY)"),
        ];
        if secondary {
            q.push(format!(
                "SELECT COUNT(k) FROM sbtest{n} FORCE INDEX (k_{n})"
            ));
        }
        q
    }

    /// `id` 0: the server assigns the next AUTO_INCREMENT value (sysbench's insert).
    fn auto_id(&self) -> Option<&'static str> {
        Some("0")
    }

    fn max_connections(&self, conn: &mut dyn Connection) -> Result<Option<u64>, SqlError> {
        shared::max_connections_of(conn)
    }

    fn server(&self) -> Option<&'static dyn ServerAdmin> {
        Some(&MysqlAdmin)
    }
}

/// `SET GLOBAL` and `@@GLOBAL` reads.
struct MysqlAdmin;

impl ServerAdmin for MysqlAdmin {
    fn check_settable(&self, conn: &mut dyn Connection, name: &str) -> Result<(), AdminError> {
        conn.query(&format!("SET GLOBAL {name} = @@GLOBAL.{name}"))
            .map_err(|source| {
                let name = name.to_string();
                match source.code.as_str() {
                    "1193" => AdminError::UnknownVariable { name, source },
                    "1238" => AdminError::ReadOnlyAtRuntime { name, source },
                    _ => AdminError::NotSettable { name, source },
                }
            })?;
        Ok(())
    }

    fn original(
        &self,
        conn: &mut dyn Connection,
        name: &str,
    ) -> Result<Option<String>, AdminError> {
        self.read_back(conn, name)
            .map_err(|source| AdminError::Read {
                what: name.to_string(),
                source,
            })
    }

    fn set(&self, conn: &mut dyn Connection, name: &str, value: &Value) -> Result<(), AdminError> {
        conn.query(&format!("SET GLOBAL {name} = {}", mysql_literal(value)))
            .map_err(|source| AdminError::Statement {
                what: format!("SET GLOBAL {name}"),
                source,
            })?;
        Ok(())
    }

    fn read_back(&self, conn: &mut dyn Connection, name: &str) -> Result<Option<String>, SqlError> {
        first_value(conn, &format!("SELECT @@GLOBAL.{name}"))
    }

    fn matches(&self, wanted: &Value, actual: Option<&str>) -> bool {
        mysql_matches(wanted, actual)
    }

    fn restore_sql(&self, name: &str, original: Option<&str>) -> String {
        match original {
            None => format!("SET GLOBAL {name} = NULL"),
            Some(v) if v.parse::<f64>().is_ok() => format!("SET GLOBAL {name} = {v}"),
            Some(v) => format!("SET GLOBAL {name} = {}", quote(v)),
        }
    }

    fn capture_sql(&self) -> (&'static str, &'static str) {
        ("SELECT VERSION()", "SHOW GLOBAL VARIABLES")
    }

    fn parameters_sql(&self, version: &str) -> Option<&'static str> {
        // The server's flavor says (OceanBase and seekdb: `SHOW PARAMETERS`).
        crate::db::flavor::detect(crate::db::Driver::Mysql, version).parameters_query()
    }
}

/// The SQL literal of a suite value for MySQL's `SET GLOBAL`: numbers bare, booleans ON/OFF,
/// sizes with a K/M/G/T suffix as bytes (SET GLOBAL does not take suffixes), text quoted.
fn mysql_literal(v: &Value) -> String {
    match v {
        Value::Bool(b) => if *b { "ON" } else { "OFF" }.into(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Str(s) => match size_bytes(s) {
            Some(n) => n.to_string(),
            None if s.parse::<f64>().is_ok() => s.clone(),
            None => quote(s),
        },
        Value::List(l) => quote(&l.iter().map(value_text).collect::<Vec<_>>().join(",")),
    }
}

/// `2G` → 2147483648 (K, M, G, T; case-insensitive); `None` for anything else.
fn size_bytes(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.len().checked_sub(1)?);
    let mult: u64 = match unit.to_ascii_uppercase().as_str() {
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        "T" => 1 << 40,
        _ => return None,
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

/// Whether MySQL's read-back `actual` is the value that was asked for.
fn mysql_matches(wanted: &Value, actual: Option<&str>) -> bool {
    let Some(actual) = actual else {
        return false;
    };
    let norm = |t: &str| match t.to_ascii_uppercase().as_str() {
        "ON" | "TRUE" | "YES" => "1".to_string(),
        "OFF" | "FALSE" | "NO" => "0".to_string(),
        other => other.to_string(),
    };
    let want = match wanted {
        Value::Str(s) => size_bytes(s)
            .map(|n| n.to_string())
            .unwrap_or_else(|| s.clone()),
        other => value_text(other),
    };
    if let (Ok(a), Ok(b)) = (want.parse::<f64>(), actual.parse::<f64>()) {
        return a == b;
    }
    norm(&want) == norm(actual)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_and_read_back_comparison() {
        assert_eq!(mysql_literal(&Value::Int(2)), "2");
        assert_eq!(mysql_literal(&Value::Bool(true)), "ON");
        assert_eq!(mysql_literal(&Value::Str("2G".into())), "2147483648");
        assert_eq!(mysql_literal(&Value::Str("O'Brien".into())), "'O''Brien'");
        assert!(mysql_matches(&Value::Bool(false), Some("OFF")));
        assert!(mysql_matches(&Value::Bool(true), Some("1")));
        assert!(mysql_matches(&Value::Int(10), Some("10")));
        assert!(mysql_matches(&Value::Str("1G".into()), Some("1073741824")));
        assert!(mysql_matches(&Value::Str("row".into()), Some("ROW")));
        assert!(!mysql_matches(&Value::Int(10), Some("8")));
        assert!(!mysql_matches(&Value::Int(10), None));
    }
}
