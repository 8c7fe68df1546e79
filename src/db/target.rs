//! The database under test as the user describes it (`[target]`, [`RawTarget`]) and as the
//! engines get it: a validated [`Target`].
//!
//! Why the database layer owns `[target]`: its keys are the databases' own settings (hosts,
//! TLS, ignorable error codes, SQLite's pragmas), so a new database adds its keys here and in
//! its dialect, not in the suite model (which only embeds the table). Everything is checked
//! once, in [`Target::from_raw`], before any step runs, so engines get typed hosts, ports and
//! modes and never parse connection text themselves; what differs per database (default port,
//! TLS default, error codes, file settings) comes from the [`crate::db::Dialect`]. A sysbench
//! command line builds its [`Target`] in `compat::target`.
//!
//! The password is the one secret: [`Target`] keeps it as the template the user wrote
//! (`{{ env.DB_PASSWORD }}`) or a command line's literal in an opaque [`Secret`], renders it
//! from the environment only when a connection is opened ([`Target::password`]), redacts it
//! in `Debug`, and is never serialised (plan steps skip the whole target). Error messages
//! never quote it.

use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::value::Value;

/// Seconds to wait for one connection. Generous: at 1,024 threads every worker connects at once
/// and a small server takes its time to accept them all (sysbench's client has no limit).
pub const DEFAULT_CONNECT_TIMEOUT: u64 = 60;

/// Seconds a connection waits for the server during a statement before giving up (`[target]
/// query_timeout`; 0 = wait forever). Generous: a statement of a benchmark answers in
/// milliseconds, and prepare's CREATE INDEX on ten million rows in about a minute here; a server
/// that says nothing for five minutes is stuck, and a night's suite should go on without it.
pub const DEFAULT_QUERY_TIMEOUT: u64 = 300;

/// The largest message or packet a client accepts from the server (`[target] max_packet`), in
/// bytes: far above any row of a benchmark (sysbench's rows are 200 bytes; MySQL's own
/// `max_allowed_packet` defaults to 16 MiB or 64 MiB), small enough that a broken or hostile
/// server cannot make the client allocate gigabytes per connection.
pub const DEFAULT_MAX_PACKET: usize = 64 << 20;

/// The most rows an administrative query collects (`SHOW GLOBAL VARIABLES`, `pg_settings`: a
/// few hundred on real servers): a server that never ends its result set is an error, not a
/// process that grows until it aborts.
pub const MAX_ADMIN_ROWS: usize = 100_000;

/// How long a connection may wait and how much it may take from the server: the bounds every
/// client applies after connecting (the handshake has `connect_timeout`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The longest wait for the server during one statement (reads and writes); `None`: no
    /// limit (`query_timeout = 0`).
    pub query_timeout: Option<Duration>,
    /// The largest message or packet accepted from the server, in bytes.
    pub max_packet: usize,
    /// Whether a statement that runs past `query_timeout` is killed from a second connection
    /// (MySQL's `KILL QUERY`): not on that kill's own connection, which would otherwise ask
    /// a hanging server for kills for ever. Not a `[target]` key.
    pub kill_on_timeout: bool,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            query_timeout: Some(Duration::from_secs(DEFAULT_QUERY_TIMEOUT)),
            max_packet: DEFAULT_MAX_PACKET,
            kill_on_timeout: true,
        }
    }
}

impl Limits {
    /// `query_timeout` and `max_packet` of a `[target]`, checked.
    fn from_raw(raw: &RawTarget) -> Result<Limits, DbError> {
        let max_packet = match &raw.max_packet {
            None => DEFAULT_MAX_PACKET as u64,
            Some(Value::Int(n)) if *n > 0 => *n as u64,
            Some(Value::Str(s)) => crate::value::parse_size(s).map_err(|e| {
                DbError::Invalid(format!(
                    "[target] max_packet = \"{s}\": {e}: write bytes (67108864) or a size (\"64M\")"
                ))
            })?,
            Some(v) => {
                return Err(DbError::Invalid(format!(
                    "[target] max_packet = {v}: write a positive number of bytes (67108864) or a size (\"64M\")"
                )));
            }
        };
        // Below 64 KiB even a server's greeting or a column definition may not fit.
        if max_packet < 64 << 10 {
            return Err(DbError::Invalid(format!(
                "[target] max_packet = {max_packet} bytes is too small for the protocol: use at least 64K (the default is 64M)"
            )));
        }
        Ok(Limits {
            query_timeout: match raw.query_timeout.unwrap_or(DEFAULT_QUERY_TIMEOUT) {
                0 => None,
                s => Some(Duration::from_secs(s)),
            },
            max_packet: usize::try_from(max_packet).unwrap_or(usize::MAX),
            kill_on_timeout: true,
        })
    }

    /// The text of a statement that outlived `query_timeout`, with the fix.
    pub fn timed_out(&self) -> String {
        match self.query_timeout {
            Some(d) => format!(
                "the server did not answer within query_timeout = {} s (raise [target] query_timeout, or set it to 0 to wait forever, if statements really take that long)",
                d.as_secs()
            ),
            None => "the server did not answer".to_string(),
        }
    }

    /// The text of a message larger than `max_packet`, with the fix.
    pub fn too_large(&self, server: &str, size: u64) -> String {
        format!(
            "the {server} server sent a message of {size} bytes, more than max_packet = {} bytes (raise [target] max_packet if rows really are that large)",
            self.max_packet
        )
    }
}

// The database of a `[target]` (`driver = "mysql" | "pgsql" | "sqlite"`); everything that
// differs between them is its `dialect()`. (A `//` comment: a doc comment would change
// schemas/suite.schema.json.)
#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Driver {
    Mysql,
    Pgsql,
    Sqlite,
}

impl Driver {
    /// Every driver, in the order messages list them (and [`ByDriver`] keeps them: each
    /// driver's index is its discriminant).
    pub const ALL: [Driver; 3] = [Driver::Mysql, Driver::Pgsql, Driver::Sqlite];

    /// The driver's name as `[target] driver` and sysbench's `--db-driver` write it (and
    /// sysbench's option prefixes: `mysql_host`, `pgsql_host`).
    pub fn name(self) -> &'static str {
        match self {
            Driver::Mysql => "mysql",
            Driver::Pgsql => "pgsql",
            Driver::Sqlite => "sqlite",
        }
    }
}

/// One optional value per driver: what a definition gives each database (a custom
/// workload's `sql = { mysql = "…", pgsql = "…" }`). Read with [`ByDriver::get`], so that
/// nothing outside `db` names the drivers one by one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ByDriver<T>([Option<T>; 3]);

impl<T> Default for ByDriver<T> {
    fn default() -> ByDriver<T> {
        ByDriver([None, None, None])
    }
}

impl<T> ByDriver<T> {
    /// `value` for every driver.
    pub fn all(value: T) -> ByDriver<T>
    where
        T: Clone,
    {
        ByDriver([Some(value.clone()), Some(value.clone()), Some(value)])
    }

    /// The value for `driver` (`None`: the definition has none).
    pub fn get(&self, driver: Driver) -> Option<&T> {
        self.0[driver as usize].as_ref()
    }

    /// Gives `driver` its value.
    pub fn set(&mut self, driver: Driver, value: T) {
        self.0[driver as usize] = Some(value);
    }

    /// Each driver with its value, in [`Driver::ALL`]'s order.
    pub fn iter(&self) -> impl Iterator<Item = (Driver, Option<&T>)> {
        Driver::ALL.into_iter().map(|d| (d, self.get(d)))
    }

    /// The values made by `f` from each driver's.
    pub fn map<U>(&self, mut f: impl FnMut(Driver, &T) -> U) -> ByDriver<U> {
        let mut out = ByDriver::default();
        for (d, v) in self.iter() {
            if let Some(v) = v {
                out.set(d, f(d, v));
            }
        }
        out
    }
}

impl std::str::FromStr for Driver {
    type Err = DbError;

    /// A driver by its [`Driver::name`].
    fn from_str(text: &str) -> Result<Driver, DbError> {
        Driver::ALL
            .into_iter()
            .find(|d| d.name() == text)
            .ok_or_else(|| {
                DbError::Invalid(format!(
                    "`{text}` is not a driver: use mysql, pgsql or sqlite"
                ))
            })
    }
}

// Server-side prepared statements (`auto`) or client-side literal substitution (`disable`).
// (Not a doc comment, as `Driver`.)
#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PsMode {
    Auto,
    Disable,
}

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

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IgnoreErrors {
    All,
    /// MySQL errnos (`"1213"`), PostgreSQL SQLSTATEs (`"40P01"`) or SQLite result code names
    /// (`"SQLITE_BUSY"`), compared case-insensitively.
    Codes(Vec<String>),
    /// Not set in `[target]`: the server flavor's default
    /// (`Flavor::default_ignore_errors`: OceanBase adds its own codes to MySQL's),
    /// known once connected ([`IgnoreErrors::resolve`]); until then the protocol's.
    ServerDefault(Driver),
}

impl IgnoreErrors {
    /// The protocol's default, as sysbench has it: `--mysql-ignore-errors` (deadlock, key not
    /// found, lock wait timeout); sysbench's pgsql list (deadlock, unique violation,
    /// serialization failure); SQLite's busy and locked database.
    pub fn default_for(driver: Driver) -> IgnoreErrors {
        IgnoreErrors::of(&driver.generic_flavor().default_ignore_errors())
    }

    /// A list of `codes`.
    fn of(codes: &[&str]) -> IgnoreErrors {
        IgnoreErrors::Codes(codes.iter().map(|c| c.to_string()).collect())
    }

    /// The list that applies on a server whose flavor ignores `server_default` by default:
    /// [`IgnoreErrors::ServerDefault`] becomes those codes, a list the user wrote stays.
    pub fn resolve(&self, server_default: &[&str]) -> IgnoreErrors {
        match self {
            IgnoreErrors::ServerDefault(_) => IgnoreErrors::of(server_default),
            other => other.clone(),
        }
    }

    /// The codes as written (`None`: all), the protocol's for an unresolved default.
    pub fn codes(&self) -> Option<Vec<String>> {
        match self {
            IgnoreErrors::All => None,
            IgnoreErrors::Codes(c) => Some(c.clone()),
            IgnoreErrors::ServerDefault(d) => IgnoreErrors::default_for(*d).codes(),
        }
    }

    pub fn contains(&self, code: &str) -> bool {
        match self {
            IgnoreErrors::All => true,
            IgnoreErrors::Codes(c) => c.iter().any(|x| x.eq_ignore_ascii_case(code)),
            IgnoreErrors::ServerDefault(d) => d
                .generic_flavor()
                .default_ignore_errors()
                .iter()
                .any(|x| x.eq_ignore_ascii_case(code)),
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
        let dialect = driver.dialect();
        for code in &codes {
            if !dialect.is_error_code(code) {
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

/// A password as written: a suite's template, or a command line's literal text. Opaque:
/// only [`Target::password`] reads it, and its `Debug` is redacted.
#[derive(Clone)]
pub struct Secret(SecretText);

#[derive(Clone)]
enum SecretText {
    Template(String),
    Literal(String),
}

impl Secret {
    /// A minijinja template rendered with `env` at connect time (a suite's `password`).
    pub fn template(text: String) -> Secret {
        Secret(SecretText::Template(text))
    }

    /// Literal text, never a template (a command line's `--mysql-password`).
    pub fn literal(text: String) -> Secret {
        Secret(SecretText::Literal(text))
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

/// Why a password template cannot be rendered. Holds variable names, never the template's
/// output.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PasswordError {
    /// The template reads environment variables that are not set.
    #[error("environment variable {} is not set", .0.join(", "))]
    Unset(Vec<String>),
    /// Any other rendering error (minijinja's error kind).
    #[error("the template could not be rendered ({0})")]
    Render(String),
}

impl PasswordError {
    /// What to do about it.
    pub fn help(&self) -> String {
        match self {
            PasswordError::Unset(vars) => format!(
                "export {} before running (for an empty password write {{{{ env.{} | default('') }}}})",
                vars.join(" and "),
                vars[0]
            ),
            PasswordError::Render(_) => {
                "write password = \"{{ env.DB_PASSWORD }}\" and export DB_PASSWORD".into()
            }
        }
    }
}

/// Renders a password template with `env` as the `env` value, strictly: an unset variable is
/// an error (unless the template gives it a default: `{{ env.X | default('') }}`), named by
/// the variables the template reads (`env.X`) that `env` lacks.
pub fn render_password(
    template: &str,
    env: &std::collections::BTreeMap<String, String>,
) -> Result<String, PasswordError> {
    let mut jinja = minijinja::Environment::new();
    jinja.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    let compiled = jinja
        .template_from_str(template)
        .map_err(|e| PasswordError::Render(format!("{:?}", e.kind())))?;
    compiled
        .render(minijinja::context! { env => env })
        .map_err(|e| {
            let mut unset: Vec<String> = compiled
                .undeclared_variables(true)
                .iter()
                .filter_map(|v| v.strip_prefix("env."))
                .filter(|v| !env.contains_key(*v))
                .map(str::to_string)
                .collect();
            unset.sort();
            if unset.is_empty() {
                PasswordError::Render(format!("{:?}", e.kind()))
            } else {
                PasswordError::Unset(unset)
            }
        })
}

/// A validated connection target. Cloning is cheap enough for once-per-step use.
#[derive(Clone)]
pub struct Target {
    pub driver: Driver,
    /// `(host, port)` pairs in round-robin order; ignored when `sockets` is not empty.
    pub hosts: Vec<(String, u16)>,
    /// The login of each of `hosts` (same order) when some `hosts` entry is a table with its
    /// own `user`, `password` or `database`; empty when every connection logs in with
    /// `user`, `secret` and `database`. Read through [`Target::at`].
    pub logins: Vec<Login>,
    /// Where prepare and cleanup steps run: the first host, or each of `hosts`.
    pub prepare_on: PrepareOn,
    pub sockets: Vec<String>,
    pub user: String,
    /// The password (opaque: read it through [`Target::password`]).
    pub secret: Option<Secret>,
    pub database: String,
    pub ps_mode: PsMode,
    pub ignore_errors: IgnoreErrors,
    pub ssl: SslMode,
    pub ssl_ca: Option<PathBuf>,
    pub ssl_cert: Option<PathBuf>,
    pub ssl_key: Option<PathBuf>,
    pub connect_timeout: Duration,
    /// `query_timeout` and `max_packet`: what a connection waits for and accepts after connecting.
    pub limits: Limits,
    /// MySQL: compressed protocol (through mysql_async; the wire client does not compress).
    pub compression: bool,
    /// Every workload call pretends to succeed without a server (sysbench's
    /// `--mysql-dry-run`); see [`crate::db::dry_run`].
    pub dry_run: bool,
    /// SQLite: the database file (`:memory:` for one in-memory database shared by the
    /// workers) and its pragmas.
    pub sqlite: SqliteOptions,
    /// A suite's prepare and cleanup steps: the tables its run created, which its prepare
    /// records and its cleanup drops alone ([`crate::db::owned`]). `None` everywhere else,
    /// `sbsuite sysbench … cleanup` included (the user's own command drops what it names).
    pub ledger: Option<std::sync::Arc<dyn crate::db::ledger::Ledger>>,
}

/// The login of one host of a target whose `hosts` entries carry their own credentials.
#[derive(Clone, Debug)]
pub struct Login {
    pub user: String,
    pub secret: Option<Secret>,
    pub database: String,
}

// Where prepare and cleanup steps run: on the first host (`first`, the default: the hosts
// share the data, as replicas or nodes of one cluster) or on each host (`each`: sharded
// setups where every host has its own tables). (Not a doc comment, as `Driver`.)
#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum PrepareOn {
    #[default]
    First,
    Each,
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

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("driver", &self.driver)
            .field("hosts", &self.hosts)
            .field("logins", &self.logins)
            .field("prepare_on", &self.prepare_on)
            .field("sockets", &self.sockets)
            .field("user", &self.user)
            .field("password", &self.secret.as_ref().map(|_| "***"))
            .field("database", &self.database)
            .field("ps_mode", &self.ps_mode)
            .field("ignore_errors", &self.ignore_errors)
            .field("ssl", &self.ssl)
            .finish_non_exhaustive()
    }
}

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
        let dialect = raw.driver.dialect();
        let port = dialect.default_port();
        let user = raw.user.clone().unwrap_or_else(|| "sbtest".into());
        let database = raw.database.clone().unwrap_or_else(|| "sbtest".into());
        let mut hosts = Vec::new();
        let mut logins = Vec::new();
        for (i, h) in raw.hosts.iter().enumerate() {
            match h {
                HostEntry::Address(text) => {
                    hosts.push(parse_host(text, port)?);
                    logins.push(Login {
                        user: user.clone(),
                        secret: raw.password.clone().map(Secret::template),
                        database: database.clone(),
                    });
                }
                HostEntry::Login(l) => {
                    hosts.push(l.endpoint(i, port)?);
                    logins.push(l.login(i, &user, raw.password.as_deref(), &database)?);
                }
            }
        }
        // Only entries with their own login need per-host logins; plain strings log in alike.
        if !raw.hosts.iter().any(|h| matches!(h, HostEntry::Login(_))) {
            logins.clear();
        }
        let sockets: Vec<String> = raw.socket.iter().flat_map(|s| s.paths()).collect();
        if !sockets.is_empty() && !logins.is_empty() {
            return Err(DbError::Invalid(
                "[target] socket wins over hosts, so the logins of the hosts tables would be ignored: remove socket, or give user and password in [target]".into(),
            ));
        }
        if raw.socket.is_some() && sockets.iter().all(|s| s.trim().is_empty()) {
            return Err(DbError::Invalid(
                "[target] socket is empty: write socket = \"/run/mysqld/mysqld.sock\" or a list of socket paths, or remove it to use hosts".into(),
            ));
        }
        if raw.compression == Some(true) && !dialect.compression() {
            return Err(DbError::Invalid(
                "[target] compression is a MySQL protocol option: remove it for this driver".into(),
            ));
        }
        if hosts.is_empty() && sockets.is_empty() {
            hosts.push(("127.0.0.1".to_string(), port));
        }
        let sqlite = dialect.file_options(raw)?;
        let ssl = match &raw.ssl {
            // libpq's default is `prefer`; MySQL clients start plain.
            None => dialect.default_ssl(),
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
            None => IgnoreErrors::ServerDefault(raw.driver),
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
            logins,
            prepare_on: raw.prepare_on.unwrap_or_default(),
            sockets,
            user,
            secret: raw.password.clone().map(Secret::template),
            database,
            ps_mode: raw.ps_mode.unwrap_or(PsMode::Auto),
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
            limits: Limits::from_raw(raw)?,
            compression: raw.compression.unwrap_or(false),
            dry_run: raw.dry_run.unwrap_or(false),
            sqlite,
            ledger: None,
        })
    }

    /// The target of a suite without `[target]`: a SQLite file in the working directory.
    pub fn sqlite_default() -> Target {
        Target {
            driver: Driver::Sqlite,
            hosts: Vec::new(),
            logins: Vec::new(),
            prepare_on: PrepareOn::First,
            sockets: Vec::new(),
            user: String::new(),
            secret: None,
            database: String::new(),
            ps_mode: PsMode::Auto,
            ignore_errors: IgnoreErrors::default_for(Driver::Sqlite),
            ssl: SslMode::Disabled,
            ssl_ca: None,
            ssl_cert: None,
            ssl_key: None,
            connect_timeout: Duration::from_secs(DEFAULT_CONNECT_TIMEOUT),
            limits: Limits::default(),
            compression: false,
            dry_run: false,
            sqlite: SqliteOptions::default(),
            ledger: None,
        }
    }

    /// Renders the password template with `env` = the process environment. Called at connect
    /// time only; the error never quotes the template's output.
    pub fn password(&self) -> Result<Option<String>, DbError> {
        self.render_password()
            .map_err(|e| DbError::Invalid(format!("[target] password: {e}; {}", e.help())))
    }

    /// Whether the password templates render in this process's environment, checked before
    /// anything runs (`validate`, `plan`, `run`) so that an unset variable is found at once,
    /// not at the first login after the results directory exists: `[target] password`, then
    /// each `hosts` entry's own (the error names the entry's index). The passwords are
    /// rendered and dropped, never shown.
    pub fn check_password(&self) -> Result<(), (Option<usize>, PasswordError)> {
        if self.logins.is_empty() {
            return self.render_password().map(drop).map_err(|e| (None, e));
        }
        for i in 0..self.logins.len() {
            self.at(i).render_password().map_err(|e| (Some(i), e))?;
        }
        Ok(())
    }

    /// The target connection number `n` (0-based, in opening order) logs in to: this one when
    /// every connection logs in alike, else the `n`-th host round-robin with its own login, as
    /// a target of that one host (so `hosts[n % 1]` in the clients picks it).
    pub fn at(&self, n: usize) -> std::borrow::Cow<'_, Target> {
        if self.logins.is_empty() {
            return std::borrow::Cow::Borrowed(self);
        }
        let i = n % self.logins.len();
        let login = &self.logins[i];
        let mut one = self.clone();
        one.hosts = vec![self.hosts[i].clone()];
        one.logins = Vec::new();
        one.user = login.user.clone();
        one.secret = login.secret.clone();
        one.database = login.database.clone();
        std::borrow::Cow::Owned(one)
    }

    /// The targets a prepare or cleanup step runs on: this one (its first host) with
    /// `prepare_on = "first"`, or each host with its login with `prepare_on = "each"`.
    pub fn prepare_targets(&self) -> Vec<Target> {
        if self.prepare_on == PrepareOn::First || self.hosts.len() < 2 || !self.sockets.is_empty() {
            return vec![self.clone()];
        }
        (0..self.hosts.len())
            .map(|i| {
                let mut one = self.at(i).into_owned();
                one.hosts = vec![self.hosts[i].clone()];
                one
            })
            .collect()
    }

    fn render_password(&self) -> Result<Option<String>, PasswordError> {
        match &self.secret {
            None => Ok(None),
            Some(Secret(SecretText::Literal(p))) => Ok(Some(p.clone())),
            Some(Secret(SecretText::Template(t))) => {
                let env: std::collections::BTreeMap<String, String> = std::env::vars().collect();
                render_password(t, &env).map(Some)
            }
        }
    }
    /// Where connection number `n` (0-based, in opening order) goes, for messages.
    pub fn endpoint(&self, n: usize) -> String {
        self.driver.dialect().endpoint(self, n)
    }

    /// Whether the database is a server with settings a variant can change
    /// ([`crate::db::Dialect::server`]).
    pub fn has_server(&self) -> bool {
        self.driver.dialect().server().is_some()
    }
}

/// A [`Target`] as the coordinator of a multi-client run sends it to an agent (#17): every
/// setting resolved, and no password (the coordinator renders it and sends it beside, so it
/// is never in anything an agent logs). [`Target::to_wire`] and [`WireTarget::into_target`]
/// round-trip every field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireTarget {
    pub driver: Driver,
    pub hosts: Vec<(String, u16)>,
    pub sockets: Vec<String>,
    pub user: String,
    pub database: String,
    pub ps_mode: PsMode,
    /// `None`: every error is ignored (`"all"`).
    pub ignore_errors: Option<Vec<String>>,
    /// `ignore_errors` was not set: the server flavor's default applies
    /// ([`IgnoreErrors::ServerDefault`]; `ignore_errors` then holds the protocol's).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignore_errors_default: bool,
    /// [`SslMode`] by its name (`verify_ca`…).
    pub ssl: String,
    pub ssl_ca: Option<PathBuf>,
    pub ssl_cert: Option<PathBuf>,
    pub ssl_key: Option<PathBuf>,
    pub connect_timeout_ms: u64,
    pub query_timeout_ms: Option<u64>,
    pub max_packet: usize,
    pub compression: bool,
    pub dry_run: bool,
    pub sqlite_path: String,
    pub journal_mode: String,
    pub synchronous: String,
    pub busy_timeout_ms: u64,
    /// Each host's own login, without its password (same order as `hosts`; empty when every
    /// host logs in with `user` and `database`).
    #[serde(default)]
    pub logins: Vec<WireLogin>,
}

/// A [`Login`] on the wire: its password travels apart, rendered (see [`WireTarget`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireLogin {
    pub user: String,
    pub database: String,
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Target {
    /// This target without its passwords, for the wire: [`Target::wire_passwords`] renders
    /// them to send beside.
    pub fn to_wire(&self) -> WireTarget {
        WireTarget {
            driver: self.driver,
            hosts: self.hosts.clone(),
            sockets: self.sockets.clone(),
            user: self.user.clone(),
            database: self.database.clone(),
            ps_mode: self.ps_mode,
            ignore_errors: self.ignore_errors.codes(),
            ignore_errors_default: matches!(self.ignore_errors, IgnoreErrors::ServerDefault(_)),
            ssl: match self.ssl {
                SslMode::Disabled => "disabled",
                SslMode::Preferred => "preferred",
                SslMode::Required => "required",
                SslMode::VerifyCa => "verify_ca",
                SslMode::VerifyIdentity => "verify_identity",
            }
            .into(),
            ssl_ca: self.ssl_ca.clone(),
            ssl_cert: self.ssl_cert.clone(),
            ssl_key: self.ssl_key.clone(),
            connect_timeout_ms: millis(self.connect_timeout),
            query_timeout_ms: self.limits.query_timeout.map(millis),
            max_packet: self.limits.max_packet,
            compression: self.compression,
            dry_run: self.dry_run,
            sqlite_path: self.sqlite.path.clone(),
            journal_mode: self.sqlite.journal_mode.clone(),
            synchronous: self.sqlite.synchronous.clone(),
            busy_timeout_ms: millis(self.sqlite.busy_timeout),
            logins: self
                .logins
                .iter()
                .map(|l| WireLogin {
                    user: l.user.clone(),
                    database: l.database.clone(),
                })
                .collect(),
        }
    }

    /// The passwords an agent needs beside [`Target::to_wire`], rendered here: `[target]`'s,
    /// and each per-host login's (same order as [`Target::logins`]).
    pub fn wire_passwords(&self) -> Result<(Option<String>, Vec<Option<String>>), DbError> {
        let own = (0..self.logins.len())
            .map(|i| {
                self.at(i).render_password().map_err(|e| {
                    DbError::Invalid(format!("[target] hosts[{i}].password: {e}; {}", e.help()))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok((self.password()?, own))
    }

    /// This target with its hosts (sockets, logins) rotated left by `by`: connection `n` of
    /// the result goes where connection `by + n` of this one goes. A client of a multi-client
    /// step whose workers are threads `by..` of the step starts where they would have started
    /// in one process, so the clients together spread over the hosts as one process does.
    pub fn rotated(&self, by: usize) -> Target {
        fn rotate<T>(list: &mut [T], by: usize) {
            if !list.is_empty() {
                let n = by % list.len();
                list.rotate_left(n);
            }
        }
        let mut t = self.clone();
        rotate(&mut t.hosts, by);
        rotate(&mut t.logins, by);
        rotate(&mut t.sockets, by);
        t
    }

    /// The inverse of [`Target::rotated`]: `t.rotated(by).unrotated(by)` is `t`. What a Lua
    /// script of a multi-client shard reads as its options (`mysql_host`, the first host's
    /// login) is the step's, not its client's rotation.
    pub fn unrotated(&self, by: usize) -> Target {
        fn rotate<T>(list: &mut [T], by: usize) {
            if !list.is_empty() {
                let n = by % list.len();
                list.rotate_right(n);
            }
        }
        let mut t = self.clone();
        rotate(&mut t.hosts, by);
        rotate(&mut t.logins, by);
        rotate(&mut t.sockets, by);
        t
    }
}

impl WireTarget {
    /// The target an agent connects with; `password` and `own` (each host's login's, in
    /// order) are the coordinator's rendering of its passwords ([`Target::wire_passwords`]).
    pub fn into_target(
        self,
        password: Option<String>,
        own: Vec<Option<String>>,
    ) -> Result<Target, DbError> {
        if own.len() != self.logins.len() {
            return Err(DbError::Invalid(format!(
                "{} per-host logins arrived with {} passwords",
                self.logins.len(),
                own.len()
            )));
        }
        if !self.logins.is_empty() && self.logins.len() != self.hosts.len() {
            return Err(DbError::Invalid(format!(
                "{} per-host logins arrived for {} hosts",
                self.logins.len(),
                self.hosts.len()
            )));
        }
        let logins = self
            .logins
            .into_iter()
            .zip(own)
            .map(|(l, pw)| Login {
                user: l.user,
                secret: pw.map(Secret::literal),
                database: l.database,
            })
            .collect();
        let ssl = SslMode::parse(&self.ssl)
            .ok_or_else(|| DbError::Invalid(format!("unknown TLS mode `{}`", self.ssl)))?;
        Ok(Target {
            driver: self.driver,
            hosts: self.hosts,
            logins,
            // Agents only run; prepare and cleanup stay with the coordinator.
            prepare_on: PrepareOn::First,
            sockets: self.sockets,
            user: self.user,
            secret: password.map(Secret::literal),
            database: self.database,
            ps_mode: self.ps_mode,
            ignore_errors: match self.ignore_errors {
                _ if self.ignore_errors_default => IgnoreErrors::ServerDefault(self.driver),
                None => IgnoreErrors::All,
                Some(c) => IgnoreErrors::Codes(c),
            },
            ssl,
            ssl_ca: self.ssl_ca,
            ssl_cert: self.ssl_cert,
            ssl_key: self.ssl_key,
            connect_timeout: Duration::from_millis(self.connect_timeout_ms),
            limits: Limits {
                query_timeout: self.query_timeout_ms.map(Duration::from_millis),
                max_packet: self.max_packet,
                kill_on_timeout: true,
            },
            compression: self.compression,
            dry_run: self.dry_run,
            sqlite: SqliteOptions {
                path: self.sqlite_path,
                journal_mode: self.journal_mode,
                synchronous: self.synchronous,
                busy_timeout: Duration::from_millis(self.busy_timeout_ms),
            },
            ledger: None,
        })
    }
}

/// Connection to the database under test.
#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct RawTarget {
    pub driver: Driver,
    /// `host:port` pairs, or tables with a host's own login (`{ host = "10.0.0.1:2881", user
    /// = "u1", password = "{{ env.PW1 }}" }`); connections are spread round-robin as sysbench
    /// does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostEntry>,
    /// Where prepare and cleanup run with several hosts: `"first"` (default) or `"each"`
    /// (sharded setups where every host has its own tables).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prepare_on: Option<PrepareOn>,
    /// Unix socket path, or a list of them (connections spread round-robin, as sysbench's
    /// `--mysql-socket=a,b`); wins over `hosts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<Sockets>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Use a template such as `"{{ env.DB_PASSWORD }}"`; literal passwords are redacted from
    /// everything sbsuite writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<String>,
    /// SQLite database file (`:memory:` for a shared in-memory database).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ps_mode: Option<PsMode>,
    /// Error codes to count and retry (MySQL errno, PostgreSQL SQLSTATE), or `"all"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_errors: Option<Value>,
    /// SQLite journal mode: `"wal"` (default), `"delete"`, `"truncate"`, `"persist"`,
    /// `"memory"` or `"off"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_mode: Option<String>,
    /// SQLite `PRAGMA synchronous`: `"off"`, `"normal"` (default), `"full"` or `"extra"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synchronous: Option<String>,
    /// SQLite busy timeout in milliseconds (default 5000): how long a writer waits for the
    /// lock before the statement fails with SQLITE_BUSY (an ignorable error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_timeout: Option<u64>,
    /// Seconds to wait for a connection (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_timeout: Option<u64>,
    /// Seconds to wait for the server during a statement before the step fails (default 300;
    /// 0 waits forever). Raise it when single statements (CREATE INDEX on huge tables) take
    /// longer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_timeout: Option<u64>,
    /// The largest message the server may send, in bytes or with a unit (`"64M"`, `"1G"`;
    /// default 64 MiB): a bound on what one connection allocates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_packet: Option<Value>,
    /// TLS: `"disabled"` (default), `"preferred"`, `"required"`, `"verify_ca"` or
    /// `"verify_identity"` (PostgreSQL's sslmode names disable, prefer, require, verify-ca and
    /// verify-full work too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssl: Option<String>,
    /// PEM file of the CA that signed the server certificate (verify_ca, verify_identity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssl_ca: Option<String>,
    /// PEM client certificate (with `ssl_key`) for servers that require one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssl_cert: Option<String>,
    /// PEM private key of `ssl_cert`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssl_key: Option<String>,
    /// MySQL: compress the client/server protocol (`--mysql-compression=on`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression: Option<bool>,
    /// Every database call pretends to succeed without reaching the server
    /// (`--mysql-dry-run`): measures the client's own cost per event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    /// Where the server runs when it is not this host, for its process CPU and the host's
    /// CPU and disk I/O in `server_counters.csv` (read from that host's /proc before and after
    /// each run step): `"ssh:DEST"` (user@host or an ssh_config alias, through the system's
    /// ssh) or `"kubernetes:NAMESPACE/POD"` (optionally `/CONTAINER`, through `kubectl
    /// exec`). Absent: read on this host when the target is a loopback address or a socket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_host: Option<String>,
    /// Extra ssh arguments for `server_host`, before the destination (e.g. `["-F",
    /// "ssh_config"]`); default: `[clients] ssh_options`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_ssh_options: Option<Vec<String>>,
}

/// One entry of `[target] hosts`: `"host:port"`, or a table with the host's own login.
#[derive(Debug, Serialize, JsonSchema, Clone)]
#[serde(untagged)]
pub enum HostEntry {
    Address(String),
    Login(HostLogin),
}

/// A `hosts` entry with its own login; what it leaves out comes from `[target]`.
#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct HostLogin {
    /// `host` or `host:port`.
    pub host: String,
    /// The port, when `host` has none (default: the driver's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// A template such as `"{{ env.PW1 }}"`, as `[target] password`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<String>,
}

// By hand rather than `#[serde(untagged)]`: an untagged enum reports a misspelt key of a table
// entry only as "did not match any variant"; this keeps `deny_unknown_fields`' message (and
// toml's position of the key).
impl<'de> Deserialize<'de> for HostEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<HostEntry, D::Error> {
        struct Entry;
        impl<'de> serde::de::Visitor<'de> for Entry {
            type Value = HostEntry;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("\"host:port\" or a table such as { host = \"10.0.0.1:3306\", user = \"u1\", password = \"{{ env.PW1 }}\" }")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<HostEntry, E> {
                Ok(HostEntry::Address(s.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<HostEntry, A::Error> {
                HostLogin::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(HostEntry::Login)
            }
        }
        d.deserialize_any(Entry)
    }
}

impl HostEntry {
    /// The entry's password template, if it has its own.
    pub fn password(&self) -> Option<&str> {
        match self {
            HostEntry::Login(l) => l.password.as_deref(),
            HostEntry::Address(_) => None,
        }
    }
}

impl HostLogin {
    /// `(host, port)` of entry `i`: its `port` wins over a port in `host`.
    fn endpoint(&self, i: usize, default_port: u16) -> Result<(String, u16), DbError> {
        if self.host.trim().is_empty() {
            return Err(DbError::Invalid(format!(
                "[target] hosts[{i}].host is empty: write host = \"10.0.0.1:3306\" (or host = \"db.example\" with port = 3306)"
            )));
        }
        let (host, port) = parse_host(&self.host, default_port).map_err(|_| {
            DbError::Invalid(format!(
                "[target] hosts[{i}].host = \"{}\" is not `host` or `host:port`: write e.g. \"10.0.0.1:3306\"",
                self.host
            ))
        })?;
        match self.port {
            None => Ok((host, port)),
            Some(p) => match u16::try_from(p) {
                Ok(p) if p > 0 => Ok((host, p)),
                _ => Err(DbError::Invalid(format!(
                    "[target] hosts[{i}].port = {p} is not a TCP port: use 1 to 65535"
                ))),
            },
        }
    }

    /// The login of entry `i`, each key it leaves out from `[target]`.
    fn login(
        &self,
        i: usize,
        user: &str,
        password: Option<&str>,
        database: &str,
    ) -> Result<Login, DbError> {
        if let Some(pw) = &self.password
            && minijinja::Environment::new().template_from_str(pw).is_err()
        {
            return Err(DbError::Invalid(format!(
                "[target] hosts[{i}].password is not a valid template: write password = \"{{{{ env.PW{} }}}}\" and export PW{}",
                i + 1,
                i + 1
            )));
        }
        Ok(Login {
            user: self.user.clone().unwrap_or_else(|| user.to_string()),
            secret: self
                .password
                .as_deref()
                .or(password)
                .map(|p| Secret::template(p.to_string())),
            database: self
                .database
                .clone()
                .unwrap_or_else(|| database.to_string()),
        })
    }
}

/// `socket = "/path"` or `socket = ["/a", "/b"]`.
#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone)]
#[serde(untagged)]
pub enum Sockets {
    One(String),
    Many(Vec<String>),
}

impl Sockets {
    pub fn paths(&self) -> Vec<String> {
        match self {
            Sockets::One(p) => vec![p.clone()],
            Sockets::Many(l) => l.clone(),
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
        assert_eq!(t.ignore_errors, IgnoreErrors::ServerDefault(Driver::Mysql));
        assert!(t.ignore_errors.contains("1213") && !t.ignore_errors.contains("1062"));
        let pg = Target::from_raw(&raw("driver = \"pgsql\"\nhosts = [\"db\"]")).unwrap();
        assert_eq!(pg.hosts, vec![("db".to_string(), 5432)]);
        assert!(pg.ignore_errors.contains("40p01"));
    }

    #[test]
    fn limits_default_parse_and_refuse_nonsense() {
        let l = |extra: &str| Target::from_raw(&raw(&format!("driver = \"mysql\"\n{extra}")));
        let d = l("").unwrap().limits;
        assert_eq!(d.query_timeout, Some(Duration::from_secs(300)));
        assert_eq!(d.max_packet, 64 << 20);
        let t = l("query_timeout = 0\nmax_packet = \"1G\"").unwrap().limits;
        assert_eq!((t.query_timeout, t.max_packet), (None, 1 << 30));
        assert_eq!(
            l("max_packet = 1048576").unwrap().limits.max_packet,
            1 << 20
        );
        for bad in [
            "max_packet = \"lots\"",
            "max_packet = -1",
            "max_packet = 100",
        ] {
            let e = l(bad).expect_err(bad).to_string();
            assert!(e.contains("[target] max_packet"), "{bad}: {e}");
        }
        let m = d.too_large("MySQL", 1 << 31);
        assert!(m.contains("2147483648") && m.contains("max_packet"), "{m}");
        assert!(d.timed_out().contains("query_timeout = 300 s"));
    }

    #[test]
    fn an_unset_password_variable_is_named_and_a_default_is_allowed() {
        let env: std::collections::BTreeMap<String, String> =
            [("SET".to_string(), "s3cret".to_string())].into();
        assert_eq!(
            render_password("{{ env.UNSET_PW }}", &env),
            Err(PasswordError::Unset(vec!["UNSET_PW".into()]))
        );
        assert_eq!(
            render_password("{{ env.UNSET_PW | default('') }}", &env).as_deref(),
            Ok("")
        );
        assert_eq!(
            render_password("{{ env.SET }}", &env).as_deref(),
            Ok("s3cret")
        );
        let e = render_password("{{ env.SET }}{{ env.B }}{{ env.A }}", &env).unwrap_err();
        assert_eq!(e, PasswordError::Unset(vec!["A".into(), "B".into()]));
        assert!(e.help().contains("export A and B"), "{}", e.help());
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

    /// An agent's target logs in as the coordinator's does (#27): the per-host logins travel
    /// without their passwords, which are rendered beside; rotated by a shard's first thread,
    /// connection `n` goes where connection `first + n` of the whole step goes.
    #[test]
    fn per_host_logins_travel_to_agents_and_rotate_with_the_shard() {
        let t = Target::from_raw(&raw(
            "driver = \"mysql\"\nuser = \"top\"\npassword = \"top-pw\"\nhosts = [{ host = \"a:1\", user = \"u1\", password = \"pw1\" }, \"b:2\", { host = \"c:3\", user = \"u3\", database = \"d3\" }]",
        ))
        .unwrap();
        let wire = t.to_wire();
        assert!(!format!("{wire:?}").contains("pw1"), "{wire:?}");
        let (password, own) = t.wire_passwords().unwrap();
        assert_eq!(password.as_deref(), Some("top-pw"));
        let agent = wire
            .clone()
            .into_target(password.clone(), own.clone())
            .unwrap();
        let who = |t: &Target, n: usize| {
            let one = t.at(n);
            (
                one.endpoint(0),
                one.user.clone(),
                one.password().unwrap(),
                one.database.clone(),
            )
        };
        for n in 0..6 {
            assert_eq!(who(&agent, n), who(&t, n), "connection {n}");
        }
        let shard = agent.rotated(4);
        for n in 0..6 {
            assert_eq!(
                who(&shard, n),
                who(&t, 4 + n),
                "connection {n} of the shard"
            );
        }
        // What a shard's Lua script reads as its options is the step's order again.
        let back = shard.unrotated(4);
        for n in 0..6 {
            assert_eq!(who(&back, n), who(&agent, n), "connection {n} unrotated");
        }
        let e = wire.into_target(password, Vec::new()).unwrap_err();
        assert!(
            e.to_string()
                .contains("3 per-host logins arrived with 0 passwords")
        );
        let plain =
            Target::from_raw(&raw("driver = \"mysql\"\nhosts = [\"a\", \"b\", \"c\"]")).unwrap();
        let hosts: Vec<String> = (0..3).map(|n| plain.rotated(2).endpoint(n)).collect();
        assert_eq!(hosts, ["c:3306", "a:3306", "b:3306"]);
    }

    #[test]
    fn hosts_tables_carry_their_own_login_and_the_rest_comes_from_target() {
        let t = Target::from_raw(&raw(
            "driver = \"mysql\"\nuser = \"top\"\npassword = \"top-pw\"\ndatabase = \"d\"\nhosts = [{ host = \"a:1\", user = \"u1\", password = \"pw1\" }, \"b:2\", { host = \"c\", port = 3, database = \"d3\" }]",
        ))
        .unwrap();
        assert_eq!(
            t.hosts,
            [("a".into(), 1), ("b".into(), 2), ("c".into(), 3)] as [(String, u16); 3]
        );
        let login = |n: usize| {
            let one = t.at(n);
            assert_eq!(one.hosts.len(), 1);
            (
                one.endpoint(n),
                one.user.clone(),
                one.password().unwrap().unwrap(),
                one.database.clone(),
            )
        };
        assert_eq!(
            login(0),
            ("a:1".into(), "u1".into(), "pw1".into(), "d".into())
        );
        assert_eq!(
            login(1),
            ("b:2".into(), "top".into(), "top-pw".into(), "d".into())
        );
        assert_eq!(
            login(5),
            ("c:3".into(), "top".into(), "top-pw".into(), "d3".into())
        );
        // Round-robin by connection, as over plain hosts.
        assert_eq!(login(3), login(0));
        assert!(!format!("{t:?}").contains("pw1"), "{t:?}");
        assert_eq!(t.prepare_targets().len(), 1, "prepare_on defaults to first");
        // Plain strings only: one login, no per-host copies.
        let plain = Target::from_raw(&raw("driver = \"mysql\"\nhosts = [\"a\", \"b\"]")).unwrap();
        assert!(plain.logins.is_empty());
        assert!(matches!(plain.at(1), std::borrow::Cow::Borrowed(_)));
        let each = Target::from_raw(&raw(
            "driver = \"mysql\"\nprepare_on = \"each\"\nhosts = [\"a\", \"b\"]",
        ))
        .unwrap();
        let on: Vec<_> = each
            .prepare_targets()
            .iter()
            .map(|t| t.hosts.clone())
            .collect();
        assert_eq!(on, [[("a".to_string(), 3306)], [("b".to_string(), 3306)]]);
        let e = Target::from_raw(&raw(
            "driver = \"mysql\"\nsocket = \"/s\"\nhosts = [{ host = \"a\", user = \"u\" }]",
        ))
        .unwrap_err();
        assert!(e.to_string().contains("socket wins over hosts"), "{e}");
    }

    #[test]
    fn pgsql_targets_default_to_prefer() {
        let pg = Target::from_raw(&raw("driver = \"pgsql\"")).unwrap();
        assert_eq!(pg.ssl, SslMode::Preferred, "libpq's default");
    }

    #[test]
    fn sockets_compression_and_dry_run_from_suites() {
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
    }

    #[test]
    fn bad_values_name_the_key() {
        let e = Target::from_raw(&raw("driver = \"mysql\"\nssl = \"maybe\"")).unwrap_err();
        assert!(e.to_string().contains("[target] ssl"));
        let e = Target::from_raw(&raw("driver = \"mysql\"\nignore_errors = [\"x\"]")).unwrap_err();
        assert!(e.to_string().contains("ignore_errors"));
    }
}
