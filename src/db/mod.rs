//! The database under test: a validated connection [`Target`] shared by every DB engine.
//!
//! Why its own module: the suite's `[target]` (raw TOML text) and a sysbench command line's
//! `--mysql-*` options both end up here, checked once, before any step runs, so engines get
//! typed hosts, ports and modes and never parse connection text themselves.
//!
//! The password is the one secret: [`Target`] keeps it as the template the user wrote
//! (`{{ env.DB_PASSWORD }}` or a literal) in a private field, renders it from the environment
//! only when a connection is opened ([`Target::password`]), redacts it in `Debug`, and is never
//! serialised (plan steps skip the whole target). Error messages never quote it.

pub mod conn;
pub mod dry_run;
pub mod mysql;
pub mod mysql_wire;
pub mod pgsql;
pub mod pgsql_wire;
pub mod sqlite;
pub mod wire;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

pub use self::conn::{Connection, DataRow, Done, ErrKind, P, SqlError, StmtId};

use crate::suite::{Driver, RawTarget};
use crate::value::Value;

/// Seconds to wait for one connection. Generous: at 1,024 threads every worker connects at once
/// and a small server takes its time to accept them all (sysbench's client has no limit).
pub const DEFAULT_CONNECT_TIMEOUT: u64 = 60;

/// Server-side prepared statements (`auto`) or client-side literal substitution (`disable`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PsMode {
    Auto,
    Disable,
}

/// TLS requirement, from weakest to strictest (MySQL's `--ssl-mode` names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    Disabled,
    Preferred,
    Required,
    VerifyCa,
    VerifyIdentity,
}

impl SslMode {
    pub fn parse(text: &str) -> Option<SslMode> {
        Some(match text.to_ascii_lowercase().replace('-', "_").as_str() {
            "disabled" | "off" | "disable" => SslMode::Disabled,
            "preferred" | "prefer" => SslMode::Preferred,
            "required" | "on" | "require" => SslMode::Required,
            "verify_ca" => SslMode::VerifyCa,
            "verify_identity" | "verify_full" => SslMode::VerifyIdentity,
            _ => return None,
        })
    }
}

/// Error codes that count as ignored errors and re-run the event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IgnoreErrors {
    All,
    /// MySQL errnos (`"1213"`), PostgreSQL SQLSTATEs (`"40P01"`) or SQLite result code names
    /// (`"SQLITE_BUSY"`), compared case-insensitively.
    Codes(Vec<String>),
}

impl IgnoreErrors {
    /// The driver's default: sysbench's `--mysql-ignore-errors` (deadlock, key not found, lock
    /// wait timeout); sysbench's pgsql list (deadlock, unique violation, serialization
    /// failure); SQLite's busy and locked database.
    pub fn default_for(driver: Driver) -> IgnoreErrors {
        let codes: &[&str] = match driver {
            Driver::Mysql => &["1213", "1020", "1205"],
            Driver::Pgsql => &["40P01", "23505", "40001"],
            Driver::Sqlite => &["SQLITE_BUSY", "SQLITE_LOCKED"],
        };
        IgnoreErrors::Codes(codes.iter().map(|c| c.to_string()).collect())
    }

    pub fn contains(&self, code: &str) -> bool {
        match self {
            IgnoreErrors::All => true,
            IgnoreErrors::Codes(c) => c.iter().any(|x| x.eq_ignore_ascii_case(code)),
        }
    }

    /// Parses `"all"`, `"1213,1020"`, a number or a list of those.
    pub fn from_value(v: &Value, driver: Driver) -> Result<IgnoreErrors, DbError> {
        let mut codes = Vec::new();
        let mut items: Vec<&Value> = Vec::new();
        match v {
            Value::List(l) => items.extend(l.iter()),
            other => items.push(other),
        }
        for item in items {
            match item {
                Value::Int(i) if *i >= 0 => codes.push(i.to_string()),
                Value::Str(s) => {
                    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                        if part.eq_ignore_ascii_case("all") {
                            return Ok(IgnoreErrors::All);
                        }
                        codes.push(part.to_string());
                    }
                }
                other => return Err(bad_ignore(&format!("{other:?}"))),
            }
        }
        for code in &codes {
            let ok = match driver {
                Driver::Mysql => code.parse::<u32>().is_ok(),
                Driver::Pgsql => code.len() == 5 && code.chars().all(|c| c.is_ascii_alphanumeric()),
                Driver::Sqlite => {
                    let up = code.to_ascii_uppercase();
                    up.starts_with("SQLITE_")
                        && up[7..].chars().all(|c| c.is_ascii_alphabetic() || c == '_')
                }
            };
            if !ok {
                return Err(bad_ignore(code));
            }
        }
        Ok(IgnoreErrors::Codes(codes))
    }
}

fn bad_ignore(text: &str) -> DbError {
    DbError::Invalid(format!(
        "[target] ignore_errors: `{text}` is not an error code: use MySQL numbers such as [1213, 1205], PostgreSQL SQLSTATEs such as [\"40P01\"], SQLite names such as [\"SQLITE_BUSY\"], or \"all\""
    ))
}

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("{0}")]
    Invalid(String),
}

/// A password as written: a suite's template, or a command line's literal text.
#[derive(Clone)]
enum Secret {
    Template(String),
    Literal(String),
}

/// A validated connection target. Cloning is cheap enough for once-per-step use.
#[derive(Clone)]
pub struct Target {
    pub driver: Driver,
    /// `(host, port)` pairs in round-robin order; ignored when `sockets` is not empty.
    pub hosts: Vec<(String, u16)>,
    pub sockets: Vec<String>,
    pub user: String,
    /// The password (private: read it through [`Target::password`]).
    password: Option<Secret>,
    pub database: String,
    pub ps_mode: PsMode,
    pub ignore_errors: IgnoreErrors,
    pub ssl: SslMode,
    pub ssl_ca: Option<PathBuf>,
    pub ssl_cert: Option<PathBuf>,
    pub ssl_key: Option<PathBuf>,
    pub connect_timeout: Duration,
    /// MySQL: compressed protocol (through mysql_async; the wire client does not compress).
    pub compression: bool,
    /// Every workload call pretends to succeed without a server (sysbench's
    /// `--mysql-dry-run`); see [`dry_run`].
    pub dry_run: bool,
    /// SQLite: the database file (`:memory:` for one in-memory database shared by the
    /// workers) and its pragmas.
    pub sqlite: SqliteOptions,
}

/// The SQLite-only settings of a target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqliteOptions {
    pub path: String,
    pub journal_mode: String,
    pub synchronous: String,
    pub busy_timeout: Duration,
}

impl Default for SqliteOptions {
    fn default() -> SqliteOptions {
        SqliteOptions {
            path: DEFAULT_SQLITE_PATH.into(),
            journal_mode: "wal".into(),
            synchronous: "normal".into(),
            busy_timeout: Duration::from_millis(5000),
        }
    }
}

/// The SQLite file of a suite that asks for an OLTP workload without a `[target]`.
pub const DEFAULT_SQLITE_PATH: &str = "sbtest.db";

const JOURNAL_MODES: &[&str] = &["wal", "delete", "truncate", "persist", "memory", "off"];
const SYNCHRONOUS: &[&str] = &["off", "normal", "full", "extra"];

/// The port a driver listens on by default.
pub fn default_port(driver: Driver) -> u16 {
    match driver {
        Driver::Pgsql => 5432,
        _ => 3306,
    }
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("driver", &self.driver)
            .field("hosts", &self.hosts)
            .field("sockets", &self.sockets)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("database", &self.database)
            .field("ps_mode", &self.ps_mode)
            .field("ignore_errors", &self.ignore_errors)
            .field("ssl", &self.ssl)
            .finish_non_exhaustive()
    }
}

/// The items of a sysbench LIST option (`a,b`), trimmed, empty ones dropped.
pub fn split_list(value: Option<&str>) -> Vec<String> {
    value
        .map(|v| {
            v.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// A sysbench BOOL connection option (`on`/`off`, absent = off).
fn sysbench_bool(get: &dyn Fn(&str) -> Option<String>, name: &str) -> Result<bool, DbError> {
    match get(name) {
        None => Ok(false),
        Some(v) => match crate::value::parse_bool(&v) {
            Some(b) => Ok(b),
            None => Err(DbError::Invalid(format!(
                "--{}={v}: use on or off",
                name.replace('_', "-")
            ))),
        },
    }
}

/// Where MySQL/MariaDB packages put the server socket (libmysqlclient's "localhost").
const DEFAULT_SOCKETS: &[&str] = &[
    "/run/mysqld/mysqld.sock",
    "/var/run/mysqld/mysqld.sock",
    "/tmp/mysql.sock",
];

/// Parses `host`, `host:port` or `[v6]:port` (port 3306 when absent).
pub fn parse_host(text: &str, default_port: u16) -> Result<(String, u16), DbError> {
    let bad = || {
        DbError::Invalid(format!(
            "[target] hosts: `{text}` is not `host:port`: write e.g. \"127.0.0.1:3306\" or \"db.example:4000\""
        ))
    };
    let text = text.trim();
    if text.is_empty() {
        return Err(bad());
    }
    if let Some(rest) = text.strip_prefix('[') {
        let (host, tail) = rest.split_once(']').ok_or_else(bad)?;
        let port = match tail.strip_prefix(':') {
            Some(p) => p.parse().map_err(|_| bad())?,
            None if tail.is_empty() => default_port,
            None => return Err(bad()),
        };
        return Ok((host.to_string(), port));
    }
    match text.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => Ok((h.to_string(), p.parse().map_err(|_| bad())?)),
        Some(_) => Ok((text.to_string(), default_port)),
        None => Ok((text.to_string(), default_port)),
    }
}

impl Target {
    /// Validates a suite's `[target]`.
    pub fn from_raw(raw: &RawTarget) -> Result<Target, DbError> {
        let port = default_port(raw.driver);
        let mut hosts = Vec::new();
        for h in &raw.hosts {
            hosts.push(parse_host(h, port)?);
        }
        let sockets: Vec<String> = raw.socket.iter().flat_map(|s| s.paths()).collect();
        if raw.socket.is_some() && sockets.iter().all(|s| s.trim().is_empty()) {
            return Err(DbError::Invalid(
                "[target] socket is empty: write socket = \"/run/mysqld/mysqld.sock\" or a list of socket paths, or remove it to use hosts".into(),
            ));
        }
        if raw.compression == Some(true) && raw.driver != Driver::Mysql {
            return Err(DbError::Invalid(
                "[target] compression is a MySQL protocol option: remove it for this driver".into(),
            ));
        }
        if hosts.is_empty() && sockets.is_empty() {
            hosts.push(("127.0.0.1".to_string(), port));
        }
        let sqlite = sqlite_options(raw)?;
        let ssl = match &raw.ssl {
            // libpq's default; MySQL clients start plain.
            None if raw.driver == Driver::Pgsql => SslMode::Preferred,
            None => SslMode::Disabled,
            Some(s) => SslMode::parse(s).ok_or_else(|| {
                DbError::Invalid(format!(
                    "[target] ssl = \"{s}\" is not a TLS mode: use disabled, preferred, required, verify_ca or verify_identity (or PostgreSQL's disable, prefer, require, verify-ca, verify-full)"
                ))
            })?,
        };
        if matches!(ssl, SslMode::VerifyCa | SslMode::VerifyIdentity) && raw.ssl_ca.is_none() {
            // rustls falls back to the bundled web roots; that is fine for public CAs but a
            // private CA needs ssl_ca, which is what a database usually has. Allowed either way.
        }
        if raw.ssl_cert.is_some() != raw.ssl_key.is_some() {
            return Err(DbError::Invalid(
                "[target] ssl_cert and ssl_key go together: set both (client certificate and its key) or neither".into(),
            ));
        }
        let ignore_errors = match &raw.ignore_errors {
            None => IgnoreErrors::default_for(raw.driver),
            Some(v) => IgnoreErrors::from_value(v, raw.driver)?,
        };
        if let Some(pw) = &raw.password
            && minijinja::Environment::new().template_from_str(pw).is_err()
        {
            return Err(DbError::Invalid(
                "[target] password is not a valid template: write password = \"{{ env.DB_PASSWORD }}\" and export DB_PASSWORD".into(),
            ));
        }
        Ok(Target {
            driver: raw.driver,
            hosts,
            sockets,
            user: raw.user.clone().unwrap_or_else(|| "sbtest".into()),
            password: raw.password.clone().map(Secret::Template),
            database: raw.database.clone().unwrap_or_else(|| "sbtest".into()),
            ps_mode: match raw.ps_mode {
                Some(crate::suite::raw::PsMode::Disable) => PsMode::Disable,
                _ => PsMode::Auto,
            },
            ignore_errors,
            ssl,
            ssl_ca: raw.ssl_ca.as_ref().map(PathBuf::from),
            ssl_cert: raw.ssl_cert.as_ref().map(PathBuf::from),
            ssl_key: raw.ssl_key.as_ref().map(PathBuf::from),
            connect_timeout: Duration::from_secs(
                raw.connect_timeout
                    .unwrap_or(DEFAULT_CONNECT_TIMEOUT)
                    .max(1),
            ),
            compression: raw.compression.unwrap_or(false),
            dry_run: raw.dry_run.unwrap_or(false),
            sqlite,
        })
    }

    /// The target of a suite without `[target]`: a SQLite file in the working directory.
    pub fn sqlite_default() -> Target {
        Target {
            driver: Driver::Sqlite,
            hosts: Vec::new(),
            sockets: Vec::new(),
            user: String::new(),
            password: None,
            database: String::new(),
            ps_mode: PsMode::Auto,
            ignore_errors: IgnoreErrors::default_for(Driver::Sqlite),
            ssl: SslMode::Disabled,
            ssl_ca: None,
            ssl_cert: None,
            ssl_key: None,
            connect_timeout: Duration::from_secs(DEFAULT_CONNECT_TIMEOUT),
            compression: false,
            dry_run: false,
            sqlite: SqliteOptions::default(),
        }
    }

    /// A target from sysbench's `--db-driver`, `--mysql-*` / `--pgsql-*` and `--db-*` options
    /// (option name with `_` → text).
    pub fn from_sysbench(get: &dyn Fn(&str) -> Option<String>) -> Result<Target, DbError> {
        match get("db_driver").as_deref() {
            None | Some("mysql") => {}
            Some("pgsql") => return Target::from_sysbench_pgsql(get),
            Some(other) => {
                return Err(DbError::Invalid(format!(
                    "--db-driver={other}: use mysql or pgsql"
                )));
            }
        }
        let list = |name: &str| split_list(get(name).as_deref());
        let mut hosts = Vec::new();
        let names = {
            let h = list("mysql_host");
            if h.is_empty() {
                vec!["localhost".to_string()]
            } else {
                h
            }
        };
        let ports = {
            let p = list("mysql_port");
            if p.is_empty() {
                vec!["3306".to_string()]
            } else {
                p
            }
        };
        for h in &names {
            for p in &ports {
                let port = p.parse().map_err(|_| {
                    DbError::Invalid(format!("--mysql-port: `{p}` is not a port number"))
                })?;
                // libmysqlclient treats "localhost" as the default socket; over TCP it is the
                // loopback address.
                let host = if h == "localhost" { "127.0.0.1" } else { h };
                hosts.push((host.to_string(), port));
            }
        }
        let ignore_errors = match get("mysql_ignore_errors") {
            None => IgnoreErrors::default_for(Driver::Mysql),
            Some(v) => IgnoreErrors::from_value(&Value::Str(v), Driver::Mysql)?,
        };
        let ps_mode = sysbench_ps_mode(get)?;
        let ssl = match get("mysql_ssl").as_deref() {
            None => SslMode::Disabled,
            Some(s) => SslMode::parse(s)
                .ok_or_else(|| DbError::Invalid(format!("--mysql-ssl={s}: use on or off")))?,
        };
        // A command-line password is literal text, never a template.
        let password = get("mysql_password").map(Secret::Literal);
        let mut sockets = list("mysql_socket");
        if sockets.is_empty() && names.iter().all(|h| h == "localhost") {
            // libmysqlclient reaches "localhost" through the server's default socket.
            if let Some(s) = DEFAULT_SOCKETS
                .iter()
                .find(|s| std::path::Path::new(s).exists())
            {
                sockets.push((*s).to_string());
            }
        }
        Ok(Target {
            driver: Driver::Mysql,
            hosts,
            sockets,
            user: get("mysql_user").unwrap_or_else(|| "sbtest".into()),
            password,
            database: get("mysql_db").unwrap_or_else(|| "sbtest".into()),
            ps_mode,
            ignore_errors,
            ssl,
            ssl_ca: None,
            ssl_cert: None,
            ssl_key: None,
            connect_timeout: Duration::from_secs(DEFAULT_CONNECT_TIMEOUT),
            compression: sysbench_bool(get, "mysql_compression")?,
            dry_run: sysbench_bool(get, "mysql_dry_run")?,
            sqlite: SqliteOptions::default(),
        })
    }

    /// A target from sysbench's `--pgsql-*` options: host `localhost` (the default) is the
    /// local server's Unix socket directory when it exists (else 127.0.0.1), a host starting
    /// with `/` is a socket directory, port 5432, user and database `sbtest`, the TLS mode
    /// from `--pgsql-sslmode`, else `PGSSLMODE`, else libpq's `prefer`, and the CA of the
    /// verify modes from `PGSSLROOTCERT`.
    fn from_sysbench_pgsql(get: &dyn Fn(&str) -> Option<String>) -> Result<Target, DbError> {
        let or = |name: &str, default: &str| {
            let l = split_list(get(name).as_deref());
            if l.is_empty() {
                vec![default.to_string()]
            } else {
                l
            }
        };
        let mut hosts = Vec::new();
        let mut sockets = Vec::new();
        for h in or("pgsql_host", "localhost") {
            for p in or("pgsql_port", "5432") {
                let port: u16 = p.parse().map_err(|_| {
                    DbError::Invalid(format!("--pgsql-port: `{p}` is not a port number"))
                })?;
                let local_socket =
                    h == "localhost" && std::path::Path::new(pgsql::SOCKET_DIR).is_dir();
                if h.starts_with('/') || local_socket {
                    let dir = if local_socket {
                        pgsql::SOCKET_DIR
                    } else {
                        h.as_str()
                    };
                    sockets.push(format!("{}/.s.PGSQL.{port}", dir.trim_end_matches('/')));
                } else {
                    let host = if h == "localhost" {
                        "127.0.0.1"
                    } else {
                        h.as_str()
                    };
                    hosts.push((host.to_string(), port));
                }
            }
        }
        let mode = get("pgsql_sslmode").or_else(|| std::env::var("PGSSLMODE").ok());
        let ssl = match mode.as_deref() {
            None => SslMode::Preferred,
            Some(s) => SslMode::parse(s).ok_or_else(|| {
                DbError::Invalid(format!(
                    "--pgsql-sslmode={s}: use disable, prefer, require, verify-ca or verify-full"
                ))
            })?,
        };
        Ok(Target {
            driver: Driver::Pgsql,
            hosts,
            sockets,
            user: get("pgsql_user").unwrap_or_else(|| "sbtest".into()),
            password: get("pgsql_password").map(Secret::Literal),
            database: get("pgsql_db").unwrap_or_else(|| "sbtest".into()),
            ps_mode: sysbench_ps_mode(get)?,
            ignore_errors: IgnoreErrors::default_for(Driver::Pgsql),
            ssl,
            // libpq's environment, which sysbench 1.0.20's pgsql driver inherits.
            ssl_ca: std::env::var_os("PGSSLROOTCERT").map(PathBuf::from),
            ssl_cert: None,
            ssl_key: None,
            connect_timeout: Duration::from_secs(DEFAULT_CONNECT_TIMEOUT),
            compression: false,
            dry_run: false,
            sqlite: SqliteOptions::default(),
        })
    }

    /// Renders the password template with `env` = the process environment. Called at connect
    /// time only; the error never quotes the template's output.
    pub fn password(&self) -> Result<Option<String>, DbError> {
        let template = match &self.password {
            None => return Ok(None),
            Some(Secret::Literal(p)) => return Ok(Some(p.clone())),
            Some(Secret::Template(t)) => t,
        };
        let env: std::collections::BTreeMap<String, String> = std::env::vars().collect();
        let mut jinja = minijinja::Environment::new();
        jinja.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        jinja
            .render_str(template, minijinja::context! { env => env })
            .map(Some)
            .map_err(|e| {
                DbError::Invalid(format!(
                    "[target] password: the template could not be rendered ({:?}): export the environment variable it names",
                    e.kind()
                ))
            })
    }

    /// Where connection number `n` (0-based, in opening order) goes, for messages.
    pub fn endpoint(&self, n: usize) -> String {
        if self.driver == Driver::Sqlite {
            self.sqlite.path.clone()
        } else if !self.sockets.is_empty() {
            self.sockets[n % self.sockets.len()].clone()
        } else {
            let (h, p) = &self.hosts[n % self.hosts.len()];
            format!("{h}:{p}")
        }
    }
}

/// `--db-ps-mode`.
fn sysbench_ps_mode(get: &dyn Fn(&str) -> Option<String>) -> Result<PsMode, DbError> {
    match get("db_ps_mode").as_deref() {
        None | Some("auto") => Ok(PsMode::Auto),
        Some("disable") => Ok(PsMode::Disable),
        Some(other) => Err(DbError::Invalid(format!(
            "--db-ps-mode={other}: use auto or disable"
        ))),
    }
}

fn sqlite_options(raw: &RawTarget) -> Result<SqliteOptions, DbError> {
    let mut o = SqliteOptions::default();
    if raw.driver != Driver::Sqlite {
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
        return Ok(o);
    }
    let pick = |key: &str, v: &Option<String>, allowed: &[&str], into: &mut String| {
        if let Some(v) = v {
            let low = v.to_ascii_lowercase();
            if !allowed.contains(&low.as_str()) {
                return Err(DbError::Invalid(format!(
                    "[target] {key} = \"{v}\" is not a SQLite {key}: use one of {}",
                    allowed.join(", ")
                )));
            }
            *into = low;
        }
        Ok(())
    };
    pick(
        "journal_mode",
        &raw.journal_mode,
        JOURNAL_MODES,
        &mut o.journal_mode,
    )?;
    pick(
        "synchronous",
        &raw.synchronous,
        SYNCHRONOUS,
        &mut o.synchronous,
    )?;
    if let Some(ms) = raw.busy_timeout {
        o.busy_timeout = Duration::from_millis(ms);
    }
    if let Some(path) = &raw.path {
        if path.trim().is_empty() {
            return Err(DbError::Invalid(
                "[target] path is empty: write path = \"sbtest.db\" (or \":memory:\")".into(),
            ));
        }
        o.path = path.clone();
    }
    Ok(o)
}

/// Opens connections to a [`Target`], each to the next endpoint in round-robin order, through
/// the target's driver.
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

    /// Opens the next connection (round-robin over the endpoints).
    pub fn connect(&self) -> Result<Box<dyn Connection>, SqlError> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.connect_at(n)
    }

    /// Opens a connection to endpoint `n` (modulo the endpoints) without moving the
    /// round-robin: setup work (prepare, checks, cleanup) goes to the first endpoint, so the
    /// workers still start at the first one as in sysbench.
    pub fn connect_at(&self, n: usize) -> Result<Box<dyn Connection>, SqlError> {
        if self.target.dry_run {
            return Ok(Box::<dry_run::DryRun>::default());
        }
        self.connect_server(n)
    }

    /// Opens a real connection to endpoint `n` even for a `dry_run` target: server settings
    /// of variants are applied and read back for real.
    pub fn connect_server(&self, n: usize) -> Result<Box<dyn Connection>, SqlError> {
        match self.target.driver {
            Driver::Mysql => mysql::open(&self.target, n),
            Driver::Pgsql => pgsql::open(&self.target, n),
            Driver::Sqlite => sqlite::open(&self.target),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> RawTarget {
        toml::from_str(text).expect("raw target")
    }

    #[test]
    fn hosts_parse_and_default() {
        assert_eq!(parse_host("db:4000", 3306).unwrap(), ("db".into(), 4000));
        assert_eq!(parse_host("db", 3306).unwrap(), ("db".into(), 3306));
        assert_eq!(
            parse_host("[::1]:3307", 3306).unwrap(),
            ("::1".into(), 3307)
        );
        assert!(parse_host("db:x", 3306).is_err());
        let t = Target::from_raw(&raw("driver = \"mysql\"")).unwrap();
        assert_eq!(t.hosts, vec![("127.0.0.1".to_string(), 3306)]);
        assert_eq!(t.ignore_errors, IgnoreErrors::default_for(Driver::Mysql));
        assert!(t.ignore_errors.contains("1213") && !t.ignore_errors.contains("1062"));
        let pg = Target::from_raw(&raw("driver = \"pgsql\"\nhosts = [\"db\"]")).unwrap();
        assert_eq!(pg.hosts, vec![("db".to_string(), 5432)]);
        assert!(pg.ignore_errors.contains("40p01"));
    }

    #[test]
    fn password_renders_from_env_and_never_shows_in_debug() {
        let t = Target::from_raw(&raw(
            "driver = \"mysql\"\npassword = \"{{ env.SBSUITE_TEST_PW_XYZ }}\"",
        ))
        .unwrap();
        assert!(t.password().is_err(), "unset variable is an error");
        let t =
            Target::from_raw(&raw("driver = \"mysql\"\npassword = \"s3cr3t-literal\"")).unwrap();
        assert_eq!(t.password().unwrap().as_deref(), Some("s3cr3t-literal"));
        assert!(!format!("{t:?}").contains("s3cr3t"));
    }

    #[test]
    fn sysbench_options_round_robin_ports_fastest_and_literal_password() {
        let opts = [
            ("mysql_host", "a,b"),
            ("mysql_port", "1,2"),
            ("mysql_password", "{{ x }}'\"p"),
            ("mysql_ignore_errors", "all"),
        ];
        let get = |n: &str| {
            opts.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        };
        let t = Target::from_sysbench(&get).unwrap();
        let eps: Vec<String> = (0..4).map(|i| t.endpoint(i)).collect();
        assert_eq!(eps, ["a:1", "a:2", "b:1", "b:2"]);
        assert_eq!(t.password().unwrap().as_deref(), Some("{{ x }}'\"p"));
        assert_eq!(t.ignore_errors, IgnoreErrors::All);
    }

    #[test]
    fn sysbench_pgsql_options_pick_sockets_ports_and_tls() {
        let opts = [
            ("db_driver", "pgsql"),
            ("pgsql_host", "db,/tmp/pg/"),
            ("pgsql_port", "6432"),
            ("pgsql_password", "pw"),
            ("pgsql_sslmode", "verify-full"),
        ];
        let get = |n: &str| {
            opts.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        };
        let t = Target::from_sysbench(&get).unwrap();
        assert_eq!(t.driver, Driver::Pgsql);
        assert_eq!(t.hosts, vec![("db".to_string(), 6432)]);
        assert_eq!(t.sockets, ["/tmp/pg/.s.PGSQL.6432"]);
        assert_eq!((t.user.as_str(), t.database.as_str()), ("sbtest", "sbtest"));
        assert_eq!(t.ssl, SslMode::VerifyIdentity);
        assert_eq!(t.ignore_errors, IgnoreErrors::default_for(Driver::Pgsql));
        let bad = |n: &str| (n == "db_driver").then(|| "oracle".to_string());
        assert!(Target::from_sysbench(&bad).is_err());
        let pg = Target::from_raw(&raw("driver = \"pgsql\"")).unwrap();
        assert_eq!(pg.ssl, SslMode::Preferred, "libpq's default");
    }

    #[test]
    fn sockets_compression_and_dry_run_from_suites_and_command_lines() {
        let t = Target::from_raw(&raw(
            "driver = \"mysql\"\nsocket = [\"/a.sock\", \"/b.sock\"]\ncompression = true\ndry_run = true",
        ))
        .unwrap();
        assert_eq!(t.sockets, ["/a.sock", "/b.sock"]);
        assert!(t.compression && t.dry_run);
        let one = Target::from_raw(&raw("driver = \"mysql\"\nsocket = \"/a.sock\"")).unwrap();
        assert_eq!(one.sockets, ["/a.sock"]);
        assert!(!one.compression && !one.dry_run);
        let e = Target::from_raw(&raw("driver = \"mysql\"\nsocket = []")).unwrap_err();
        assert!(e.to_string().contains("[target] socket is empty"), "{e}");
        let e = Target::from_raw(&raw("driver = \"pgsql\"\ncompression = true")).unwrap_err();
        assert!(e.to_string().contains("compression is a MySQL"), "{e}");
        let opts = [("mysql_compression", "on"), ("mysql_dry_run", "off")];
        let get = |n: &str| {
            opts.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        };
        let t = Target::from_sysbench(&get).unwrap();
        assert!(t.compression && !t.dry_run);
        let bad = |n: &str| (n == "mysql_dry_run").then(|| "maybe".to_string());
        let e = Target::from_sysbench(&bad).unwrap_err();
        assert!(e.to_string().contains("--mysql-dry-run=maybe"), "{e}");
    }

    #[test]
    fn bad_values_name_the_key() {
        let e = Target::from_raw(&raw("driver = \"mysql\"\nssl = \"maybe\"")).unwrap_err();
        assert!(e.to_string().contains("[target] ssl"));
        let e = Target::from_raw(&raw("driver = \"mysql\"\nignore_errors = [\"x\"]")).unwrap_err();
        assert!(e.to_string().contains("ignore_errors"));
    }
}
