//! MySQL/MariaDB connections through `mysql_async`, shaped for a load generator.
//!
//! Each worker owns one [`mysql_async::Conn`] for the whole run on its own current-thread tokio
//! runtime ([`runtime`]): MySQL has one command in flight per connection, and a shared
//! multi-thread runtime measurably costs client CPU (DESIGN.md "Measured facts"). Options are
//! built with `OptsBuilder`, never by formatting a URL, so the password never exists as text
//! outside the one connect call. Connections take the next endpoint round-robin
//! ([`Connector`]), as sysbench does.

use std::sync::atomic::{AtomicUsize, Ordering};

use mysql_async::{ClientIdentity, Conn, OptsBuilder, SslOpts};

use super::{DbError, SslMode, Target};

/// A single-threaded tokio runtime for one worker (I/O and timers enabled).
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// The MySQL error number of `e`, if the server (or the client library's conventions) gave one.
pub fn error_code(e: &mysql_async::Error) -> Option<u32> {
    match e {
        mysql_async::Error::Server(s) => Some(u32::from(s.code)),
        _ => None,
    }
}

/// Whether `e` means the connection is gone (server errors 2013/2006/2011/2055 or a client
/// I/O / closed-connection error): the worker reconnects instead of failing.
pub fn is_connection_lost(e: &mysql_async::Error) -> bool {
    match e {
        mysql_async::Error::Server(s) => matches!(s.code, 2013 | 2006 | 2011 | 2055 | 1927 | 4031),
        mysql_async::Error::Io(_) => true,
        mysql_async::Error::Driver(d) => matches!(
            d,
            mysql_async::DriverError::ConnectionClosed | mysql_async::DriverError::PoolDisconnected
        ),
        _ => false,
    }
}

/// `error N (message)` for a server error, the client's text otherwise.
pub fn describe(e: &mysql_async::Error) -> String {
    match e {
        mysql_async::Error::Server(s) => format!("error {} ({})", s.code, s.message),
        other => format!("error ({other})"),
    }
}

/// Opens connections to a [`Target`], each to the next endpoint in round-robin order.
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

    /// Opens the next connection. `stmt_cache` must exceed the statements a worker keeps, or
    /// the driver closes evicted ones behind its back.
    pub async fn connect(&self, stmt_cache: usize) -> Result<Conn, ConnectError> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.connect_at(n, stmt_cache).await
    }

    /// Opens a connection to endpoint `n` (modulo the endpoints) without moving the
    /// round-robin: setup work (prepare, checks, cleanup) goes to the first endpoint, so the
    /// workers still start at the first one as in sysbench.
    pub async fn connect_at(&self, n: usize, stmt_cache: usize) -> Result<Conn, ConnectError> {
        let t = &self.target;
        let password = t.password().map_err(ConnectError::Config)?;
        let mut b = OptsBuilder::default()
            .user(Some(t.user.clone()))
            .pass(password)
            .db_name(Some(t.database.clone()))
            .stmt_cache_size(stmt_cache.max(32))
            .tcp_keepalive(Some(std::time::Duration::from_secs(30)))
            .prefer_socket(false);
        if t.sockets.is_empty() {
            let (host, port) = &t.hosts[n % t.hosts.len()];
            b = b.ip_or_hostname(host.clone()).tcp_port(*port);
        } else {
            b = b.socket(Some(t.sockets[n % t.sockets.len()].clone()));
        }
        let tls = ssl_opts(t);
        let attempt = |b: OptsBuilder| async {
            match tokio::time::timeout(t.connect_timeout, Conn::new(b)).await {
                Ok(r) => r.map_err(ConnectError::Server),
                Err(_) => Err(ConnectError::Timeout(t.connect_timeout.as_secs())),
            }
        };
        match (t.ssl, tls) {
            (SslMode::Preferred, Some(opts)) => match attempt(b.clone().ssl_opts(opts)).await {
                Ok(c) => Ok(c),
                Err(_) => attempt(b).await,
            },
            (_, Some(opts)) => attempt(b.ssl_opts(opts)).await,
            (_, None) => attempt(b).await,
        }
    }
}

fn ssl_opts(t: &Target) -> Option<SslOpts> {
    let mut o = SslOpts::default();
    match t.ssl {
        SslMode::Disabled => return None,
        SslMode::Preferred | SslMode::Required => {
            o = o
                .with_danger_accept_invalid_certs(true)
                .with_danger_skip_domain_validation(true);
        }
        SslMode::VerifyCa => o = o.with_danger_skip_domain_validation(true),
        SslMode::VerifyIdentity => {}
    }
    if let Some(ca) = &t.ssl_ca {
        o = o.with_root_certs(vec![ca.clone().into()]);
    }
    if let (Some(cert), Some(key)) = (&t.ssl_cert, &t.ssl_key) {
        o = o.with_client_identity(Some(ClientIdentity::new(
            cert.clone().into(),
            key.clone().into(),
        )));
    }
    Some(o)
}

/// Why a connection could not be opened. The text names the endpoint's problem, never the
/// password.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("{0}")]
    Config(DbError),
    #[error("connection timed out after {0} s (raise [target] connect_timeout or check the host)")]
    Timeout(u64),
    #[error("{}", describe(.0))]
    Server(mysql_async::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(extra: &str) -> Target {
        let raw: crate::suite::RawTarget =
            toml::from_str(&format!("driver = \"mysql\"\n{extra}")).expect("raw target");
        Target::from_raw(&raw).expect("valid target")
    }

    #[test]
    fn tls_modes_map_to_verification_levels() {
        assert!(ssl_opts(&target("")).is_none());
        assert!(ssl_opts(&target("ssl = \"disabled\"")).is_none());
        let req = ssl_opts(&target("ssl = \"required\"")).expect("tls");
        assert!(req.accept_invalid_certs() && req.skip_domain_validation());
        let ca = ssl_opts(&target(
            "ssl = \"verify_ca\"\nssl_ca = \"/ca.pem\"\nssl_cert = \"/c.pem\"\nssl_key = \"/k.pem\"",
        ))
        .expect("tls");
        assert!(!ca.accept_invalid_certs() && ca.skip_domain_validation());
        assert_eq!(ca.root_certs().len(), 1);
        assert!(ca.client_identity().is_some());
        let full = ssl_opts(&target("ssl = \"verify_identity\"")).expect("tls");
        assert!(!full.accept_invalid_certs() && !full.skip_domain_validation());
    }

    #[test]
    fn lost_connection_codes_reconnect_and_others_do_not() {
        let server = |code| {
            mysql_async::Error::Server(mysql_async::ServerError {
                code,
                message: "m".into(),
                state: "HY000".into(),
            })
        };
        for code in [2013, 2006, 2011, 2055, 1927] {
            assert!(is_connection_lost(&server(code)), "{code}");
        }
        assert!(!is_connection_lost(&server(1213)));
        assert_eq!(error_code(&server(1213)), Some(1213));
        assert_eq!(describe(&server(1045)), "error 1045 (m)");
    }
}
