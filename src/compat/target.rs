//! A database [`Target`] from a sysbench command line: `--db-driver`, `--mysql-*`,
//! `--pgsql-*` and `--db-*` options, with libmysqlclient's and libpq's defaults (the local
//! server's socket for `localhost`, `PGSSLMODE`, `PGSSLROOTCERT`).
//!
//! Why here and not in `db`: these are sysbench's option names and conventions, which only
//! the sysbench front ends (`sbsuite sysbench`, `convert`) read; the database layer gets a
//! validated [`Target`] and never parses command-line text. A suite's `[target]` is
//! validated by [`Target::from_raw`] instead.

use std::path::PathBuf;
use std::time::Duration;

use crate::db::{
    DEFAULT_CONNECT_TIMEOUT, DbError, Driver, IgnoreErrors, Limits, PsMode, Secret, SqliteOptions,
    SslMode, Target,
};
use crate::value::Value;

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

/// sysbench's defaults for the connection options (`sbsuite sysbench --help` prints them).
pub const DEFAULT_HOST: &str = "localhost";
pub const MYSQL_DEFAULT_PORT: &str = "3306";
pub const PGSQL_DEFAULT_PORT: &str = "5432";
pub const DEFAULT_USER: &str = "sbtest";
pub const DEFAULT_DATABASE: &str = "sbtest";

/// The drivers of sysbench's `--db-driver` (sysbench has no SQLite driver).
const MYSQL: Driver = Driver::Mysql;
const PGSQL: Driver = Driver::Pgsql;

/// sysbench's `--mysql-ignore-errors` default (`sbsuite sysbench --help` prints it).
pub fn mysql_ignore_default() -> IgnoreErrors {
    IgnoreErrors::default_for(MYSQL)
}

/// Where MySQL/MariaDB packages put the server socket (libmysqlclient's "localhost").
const DEFAULT_SOCKETS: &[&str] = &[
    "/run/mysqld/mysqld.sock",
    "/var/run/mysqld/mysqld.sock",
    "/tmp/mysql.sock",
];

/// A target from sysbench's `--db-driver`, `--mysql-*` / `--pgsql-*` and `--db-*` options
/// (option name with `_` → text).
pub fn from_sysbench(get: &dyn Fn(&str) -> Option<String>) -> Result<Target, DbError> {
    match get("db_driver").as_deref() {
        None | Some("mysql") => {}
        Some("pgsql") => return from_sysbench_pgsql(get),
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
            vec![DEFAULT_HOST.to_string()]
        } else {
            h
        }
    };
    let ports = {
        let p = list("mysql_port");
        if p.is_empty() {
            vec![MYSQL_DEFAULT_PORT.to_string()]
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
        None => mysql_ignore_default(),
        Some(v) => IgnoreErrors::from_value(&Value::Str(v), MYSQL)?,
    };
    let ps_mode = sysbench_ps_mode(get)?;
    let ssl = match get("mysql_ssl").as_deref() {
        None => SslMode::Disabled,
        Some(s) => SslMode::parse(s)
            .ok_or_else(|| DbError::Invalid(format!("--mysql-ssl={s}: use on or off")))?,
    };
    // A command-line password is literal text, never a template.
    let password = get("mysql_password").map(Secret::literal);
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
        driver: MYSQL,
        hosts,
        logins: Vec::new(),
        prepare_on: crate::db::PrepareOn::First,
        sockets,
        user: get("mysql_user").unwrap_or_else(|| DEFAULT_USER.into()),
        secret: password,
        database: get("mysql_db").unwrap_or_else(|| DEFAULT_DATABASE.into()),
        ps_mode,
        ignore_errors,
        ssl,
        ssl_ca: None,
        ssl_cert: None,
        ssl_key: None,
        connect_timeout: Duration::from_secs(DEFAULT_CONNECT_TIMEOUT),
        limits: Limits::default(),
        compression: sysbench_bool(get, "mysql_compression")?,
        dry_run: sysbench_bool(get, "mysql_dry_run")?,
        sqlite: SqliteOptions::default(),
        ledger: None,
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
    for h in or("pgsql_host", DEFAULT_HOST) {
        for p in or("pgsql_port", PGSQL_DEFAULT_PORT) {
            let port: u16 = p.parse().map_err(|_| {
                DbError::Invalid(format!("--pgsql-port: `{p}` is not a port number"))
            })?;
            let local_socket =
                h == "localhost" && std::path::Path::new(crate::db::pgsql::SOCKET_DIR).is_dir();
            if h.starts_with('/') || local_socket {
                let dir = if local_socket {
                    crate::db::pgsql::SOCKET_DIR
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
        driver: PGSQL,
        hosts,
        logins: Vec::new(),
        prepare_on: crate::db::PrepareOn::First,
        sockets,
        user: get("pgsql_user").unwrap_or_else(|| DEFAULT_USER.into()),
        secret: get("pgsql_password").map(Secret::literal),
        database: get("pgsql_db").unwrap_or_else(|| DEFAULT_DATABASE.into()),
        ps_mode: sysbench_ps_mode(get)?,
        ignore_errors: IgnoreErrors::default_for(PGSQL),
        ssl,
        // libpq's environment, which sysbench 1.0.20's pgsql driver inherits.
        ssl_ca: std::env::var_os("PGSSLROOTCERT").map(PathBuf::from),
        ssl_cert: None,
        ssl_key: None,
        connect_timeout: Duration::from_secs(DEFAULT_CONNECT_TIMEOUT),
        limits: Limits::default(),
        compression: false,
        dry_run: false,
        sqlite: SqliteOptions::default(),
        ledger: None,
    })
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

/// The `ignore_errors` line of `[target]` for a `--mysql-ignore-errors` value: `"all"`, or a
/// list of codes (numbers bare, names quoted).
pub(super) fn ignore_errors(value: &str) -> String {
    if value == "all" {
        return "ignore_errors = \"all\"\n".into();
    }
    let codes: Vec<String> = split_list(Some(value))
        .into_iter()
        .map(|e| match e.parse::<i64>() {
            Ok(n) => n.to_string(),
            Err(_) => toml_str(&e),
        })
        .collect();
    format!("ignore_errors = [{}]\n", codes.join(", "))
}

pub(super) fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let t = from_sysbench(&get).unwrap();
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
        let t = from_sysbench(&get).unwrap();
        assert_eq!(t.driver, PGSQL);
        assert_eq!(t.hosts, vec![("db".to_string(), 6432)]);
        assert_eq!(t.sockets, ["/tmp/pg/.s.PGSQL.6432"]);
        assert_eq!((t.user.as_str(), t.database.as_str()), ("sbtest", "sbtest"));
        assert_eq!(t.ssl, SslMode::VerifyIdentity);
        assert_eq!(t.ignore_errors, IgnoreErrors::default_for(PGSQL));
        let bad = |n: &str| (n == "db_driver").then(|| "oracle".to_string());
        assert!(from_sysbench(&bad).is_err());
    }

    #[test]
    fn sockets_compression_and_dry_run_from_command_lines() {
        let opts = [("mysql_compression", "on"), ("mysql_dry_run", "off")];
        let get = |n: &str| {
            opts.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        };
        let t = from_sysbench(&get).unwrap();
        assert!(t.compression && !t.dry_run);
        let bad = |n: &str| (n == "mysql_dry_run").then(|| "maybe".to_string());
        let e = from_sysbench(&bad).unwrap_err();
        assert!(e.to_string().contains("--mysql-dry-run=maybe"), "{e}");
    }
}
