//! The mysql_async client: the fallback for what the wire client ([`super::wire`]) does not
//! do (TLS, compression, an auth plugin other than native / caching_sha2's fast path), or
//! every connection when `SBSUITE_MYSQL_CLIENT=async` asks for it.
//!
//! Each worker owns one [`mysql_async::Conn`] for the whole run on its own current-thread tokio
//! runtime ([`crate::db::io::runtime`]): MySQL has one command in flight per connection, and a
//! shared multi-thread runtime measurably costs client CPU (DESIGN.md "Measured facts").
//! Options are built with `OptsBuilder`, never by formatting a URL, so the password never
//! exists as text outside the one connect call. Error kinds and bulk loading are the ones the
//! wire client uses ([`super::shared`]).
//!
//! The same bounds as the wire client: every command waits at most `query_timeout` (then the
//! connection is dropped: it is mid-answer), mysql_async's `max_allowed_packet` is
//! `max_packet` (it refuses larger packets; its range is 1 KiB to 1 GiB), and `query_table`
//! collects at most [`MAX_ADMIN_ROWS`] rows and `max_packet` bytes (`query_each`, scripts'
//! result sets, hands the rows on without a bound).

use std::future::Future;
use std::sync::Arc;

use mysql_async::prelude::Queryable;
use mysql_async::{ClientIdentity, Conn, OptsBuilder, Params, SslOpts, Statement};

use super::shared::{ColumnMeta, Killer, TYPE_FLOAT, kind_of_code, load_cells, load_rows};
use crate::db::conn::{
    Collect, Connection, DataRow, Done, ErrKind, Fetched, P, RowSink, SqlError, StmtId, Table,
};
use crate::db::io;
use crate::db::target::{Limits, MAX_ADMIN_ROWS, SslMode, Target};

/// The MySQL error number of `e`, if the server gave one.
fn error_code(e: &mysql_async::Error) -> Option<u16> {
    match e {
        mysql_async::Error::Server(s) => Some(s.code),
        _ => None,
    }
}

/// Whether `e` means the connection is gone (server errors 2013/2006/2011/2055 or a client
/// I/O / closed-connection error): the worker reconnects instead of failing.
fn is_connection_lost(e: &mysql_async::Error) -> bool {
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

/// A driver error as the engines see it: errno as the code, and what it means for the run.
pub fn sql_error(e: &mysql_async::Error) -> SqlError {
    let kind = if is_connection_lost(e) {
        ErrKind::Lost
    } else {
        match error_code(e) {
            Some(code) => kind_of_code(code),
            None if matches!(e, mysql_async::Error::Other(_)) => ErrKind::Unreachable,
            None => ErrKind::Other,
        }
    };
    match e {
        mysql_async::Error::Server(s) => SqlError::new(s.code.to_string(), s.message.clone(), kind),
        other => SqlError::client(other.to_string(), kind),
    }
}

/// Statements a connection may keep prepared before the driver starts closing the oldest
/// behind our back: far more than any workload prepares (tables × 9 + a few).
const STMT_CACHE: usize = 1 << 16;

/// Opens connection number `n` of `t` through mysql_async.
pub fn open_async(t: &Target, n: usize) -> Result<Box<dyn Connection>, SqlError> {
    let rt = io::runtime()
        .map_err(|e| SqlError::client(format!("tokio runtime: {e}"), ErrKind::Other))?;
    let conn = rt.block_on(connect(t, n))?;
    let killer = Arc::new(Killer::new(t, n, u64::from(conn.id())));
    Ok(Box::new(MysqlConnection {
        rt,
        conn: Some(conn),
        stmts: Vec::new(),
        values: Vec::with_capacity(8),
        killer,
        limits: t.limits,
        endpoint: t.endpoint(n),
    }))
}

async fn connect(t: &Target, n: usize) -> Result<Conn, SqlError> {
    let password = t
        .password()
        .map_err(|e| SqlError::client(e.to_string(), ErrKind::Other))?;
    let mut b = OptsBuilder::default()
        .user(Some(t.user.clone()))
        .pass(password)
        .db_name(Some(t.database.clone()))
        .stmt_cache_size(STMT_CACHE)
        .tcp_keepalive(Some(std::time::Duration::from_secs(30)))
        .prefer_socket(false)
        .max_allowed_packet(Some(t.limits.max_packet))
        .compression(t.compression.then(mysql_async::Compression::default));
    if t.sockets.is_empty() {
        let (host, port) = &t.hosts[n % t.hosts.len()];
        b = b.ip_or_hostname(host.clone()).tcp_port(*port);
    } else {
        b = b.socket(Some(t.sockets[n % t.sockets.len()].clone()));
    }
    let tls = ssl_opts(t);
    let attempt = |b: OptsBuilder| async {
        match tokio::time::timeout(t.connect_timeout, Conn::new(b)).await {
            Ok(r) => r.map_err(|e| sql_error(&e)),
            Err(_) => Err(SqlError::client(
                format!(
                    "connection timed out after {} s (raise [target] connect_timeout or check the host)",
                    t.connect_timeout.as_secs()
                ),
                ErrKind::Unreachable,
            )),
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

/// A `mysql_async` connection driven from one OS thread through its own runtime.
struct MysqlConnection {
    rt: tokio::runtime::Runtime,
    /// `None` after an error that closed it.
    conn: Option<Conn>,
    stmts: Vec<Statement>,
    /// Reused parameter vector.
    values: Vec<mysql_async::Value>,
    /// Where it connected (endpoint `n` of the target), as whom, and the server's id of the
    /// connection: a stop request kills this session ([`Connection::interrupter`]) or its
    /// statement ([`Connection::canceller`]) from a second connection there.
    killer: Arc<Killer>,
    /// `query_timeout` and `max_packet` of the target.
    limits: Limits,
    /// The server (`host:port` or the socket path), for messages.
    endpoint: String,
}

fn closed() -> SqlError {
    SqlError::client("connection closed", ErrKind::Lost)
}

/// The command was not answered within `query_timeout`.
struct TimedOut;

/// Runs one command on the connection's runtime, for at most `timeout`.
fn bounded<T>(
    rt: &tokio::runtime::Runtime,
    timeout: Option<std::time::Duration>,
    command: impl Future<Output = Result<T, mysql_async::Error>>,
) -> Result<Result<T, mysql_async::Error>, TimedOut> {
    rt.block_on(async {
        match timeout {
            Some(d) => tokio::time::timeout(d, command).await.map_err(|_| TimedOut),
            None => Ok(command.await),
        }
    })
}

impl MysqlConnection {
    /// The result of a [`bounded`] command: a timeout drops the connection (it is mid-answer)
    /// and is an error of kind `Other` without a code, as in the wire client.
    fn done<T>(
        &mut self,
        r: Result<Result<T, mysql_async::Error>, TimedOut>,
    ) -> Result<T, SqlError> {
        match r {
            Ok(r) => r.map_err(|e| sql_error(&e)),
            Err(TimedOut) => {
                self.conn = None;
                // The server runs the statement on unless it is killed.
                self.killer.kill_query();
                Err(SqlError::client(
                    format!(
                        "MySQL server at {}: {}",
                        self.endpoint,
                        self.limits.timed_out()
                    ),
                    ErrKind::Other,
                ))
            }
        }
    }
}

/// `params` as mysql_async values, in the reused vector `reused`.
fn values(reused: &mut Vec<mysql_async::Value>, params: &[P<'_>]) -> Vec<mysql_async::Value> {
    let mut values = std::mem::take(reused);
    values.clear();
    values.extend(params.iter().map(|p| match *p {
        P::Int(i) => mysql_async::Value::Int(i),
        P::Str(s) => mysql_async::Value::Bytes(s.as_bytes().to_vec()),
        P::Float(f) => mysql_async::Value::Double(f),
        P::Null => mysql_async::Value::NULL,
    }));
    values
}

impl MysqlConnection {
    /// What a [`fetch`] did: a read, or the rows a statement without a result set changed.
    fn fetched(
        &mut self,
        r: Result<Result<bool, mysql_async::Error>, TimedOut>,
    ) -> Result<Done, SqlError> {
        let rows = self.done(r)?;
        let conn = self.conn.as_mut().ok_or_else(closed)?;
        Ok(Done {
            rows,
            affected: if rows { 0 } else { conn.affected_rows() },
        })
    }
}

/// Counts the rows of `result`'s first result set into `out.rows` and, with `first`, keeps
/// its column names and first row as text (the wire client's text of each type:
/// [`ColumnMeta`]); drains the rest. Returns whether there was a result set.
async fn fetch<P: mysql_async::prelude::Protocol>(
    mut result: mysql_async::QueryResult<'_, '_, P>,
    first: bool,
    out: &mut Fetched,
) -> Result<bool, mysql_async::Error> {
    let columns = result.columns().unwrap_or_else(|| Vec::new().into());
    let meta: Vec<ColumnMeta> = columns
        .iter()
        .map(|c| ColumnMeta {
            ty: c.column_type() as u8,
            flags: c.flags().bits(),
            decimals: c.decimals(),
            length: c.column_length(),
        })
        .collect();
    if first {
        out.columns = columns.iter().map(|c| c.name_str().into_owned()).collect();
    }
    while let Some(row) = result.next().await? {
        if first && out.keeps_row() {
            out.first.extend(
                row.unwrap()
                    .into_iter()
                    .zip(&meta)
                    .map(|(v, m)| value_text(v, m)),
            );
        }
        out.rows += 1;
    }
    result.drop_result().await?;
    Ok(!columns.is_empty())
}

/// A value of a row as the wire client's text of its column type.
fn value_text(v: mysql_async::Value, m: &ColumnMeta) -> Option<String> {
    use mysql_async::Value;
    Some(match v {
        Value::NULL => return None,
        Value::Bytes(b) => m.bytes_text(&b),
        Value::Int(i) => m.int_text(i),
        Value::UInt(u) => m.int_text(u),
        Value::Float(f) => m.float_text(f64::from(f), true),
        Value::Double(d) => m.float_text(d, m.ty == TYPE_FLOAT),
        Value::Date(y, mo, d, h, mi, s, us) => m.date_text(y, mo, d, h, mi, s, us),
        Value::Time(neg, days, h, mi, s, us) => m.time_text(neg, days, h, mi, s, us),
    })
}

impl Connection for MysqlConnection {
    /// `KILL <id>` from a second connection, on its own thread: the library keeps its socket
    /// to itself, and the server then ends the blocked statement too.
    fn interrupter(&self) -> Option<crate::db::interrupt::Interrupter> {
        self.conn.as_ref()?;
        let k = Arc::clone(&self.killer);
        Some(crate::db::interrupt::Interrupter::new(move || {
            let k = Arc::clone(&k);
            std::thread::spawn(move || {
                if let Ok(mut c) = super::open(&k.target, k.n) {
                    let _ = c.query(&format!("KILL {}", k.id));
                    c.close();
                }
            });
        }))
    }

    /// `KILL QUERY` from a second connection ([`Killer::kill_query`]).
    fn canceller(&self) -> Option<crate::db::interrupt::Interrupter> {
        let k = Arc::clone(&self.killer);
        Some(crate::db::interrupt::Interrupter::new(move || {
            k.kill_query()
        }))
    }

    fn prepare(&mut self, sql: &str) -> Result<StmtId, SqlError> {
        let conn = self.conn.as_mut().ok_or_else(closed)?;
        let r = bounded(&self.rt, self.limits.query_timeout, conn.prep(sql));
        let stmt = self.done(r)?;
        self.stmts.push(stmt);
        Ok(self.stmts.len() - 1)
    }

    fn execute(&mut self, stmt: StmtId, params: &[P<'_>]) -> Result<Done, SqlError> {
        let conn = self.conn.as_mut().ok_or_else(closed)?;
        let stmt = self.stmts.get(stmt).ok_or_else(|| {
            SqlError::client(format!("no prepared statement {stmt}"), ErrKind::Other)
        })?;
        let values = values(&mut self.values, params);
        let r = bounded(&self.rt, self.limits.query_timeout, async {
            let result = conn.exec_iter(stmt, Params::Positional(values)).await?;
            let rows = !result.columns_ref().is_empty();
            result.drop_result().await?;
            Ok::<bool, mysql_async::Error>(rows)
        });
        let rows = self.done(r)?;
        let conn = self.conn.as_mut().ok_or_else(closed)?;
        Ok(Done {
            rows,
            affected: conn.affected_rows(),
        })
    }

    fn execute_fetch(
        &mut self,
        stmt: StmtId,
        params: &[P<'_>],
        first: bool,
        out: &mut Fetched,
    ) -> Result<Done, SqlError> {
        out.clear();
        let values = values(&mut self.values, params);
        let conn = self.conn.as_mut().ok_or_else(closed)?;
        let stmt = self.stmts.get(stmt).ok_or_else(|| {
            SqlError::client(format!("no prepared statement {stmt}"), ErrKind::Other)
        })?;
        let r = bounded(&self.rt, self.limits.query_timeout, async {
            let result = conn.exec_iter(stmt, Params::Positional(values)).await?;
            fetch(result, first, out).await
        });
        self.fetched(r)
    }

    fn query_fetch(&mut self, sql: &str, first: bool, out: &mut Fetched) -> Result<Done, SqlError> {
        out.clear();
        let conn = self.conn.as_mut().ok_or_else(closed)?;
        let r = bounded(&self.rt, self.limits.query_timeout, async {
            let result = conn.query_iter(sql).await?;
            fetch(result, first, out).await
        });
        self.fetched(r)
    }

    fn query(&mut self, sql: &str) -> Result<Done, SqlError> {
        let conn = self.conn.as_mut().ok_or_else(closed)?;
        let r = bounded(&self.rt, self.limits.query_timeout, async {
            let result = conn.query_iter(sql).await?;
            let rows = !result.columns_ref().is_empty();
            result.drop_result().await?;
            Ok::<bool, mysql_async::Error>(rows)
        });
        let rows = self.done(r)?;
        let conn = self.conn.as_mut().ok_or_else(closed)?;
        Ok(Done {
            rows,
            affected: conn.affected_rows(),
        })
    }

    fn query_i64(&mut self, sql: &str) -> Result<Option<i64>, SqlError> {
        let conn = self.conn.as_mut().ok_or_else(closed)?;
        let r = bounded(
            &self.rt,
            self.limits.query_timeout,
            conn.query_first::<Option<i64>, _>(sql),
        );
        Ok(self.done(r)?.flatten())
    }

    fn query_rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, SqlError> {
        Ok(self.query_table(sql)?.rows)
    }

    fn query_table(&mut self, sql: &str) -> Result<Table, SqlError> {
        let mut kept = Collect::admin(self.limits.max_packet);
        self.query_each(sql, &mut kept)?;
        Ok(kept.table)
    }

    fn query_each(&mut self, sql: &str, sink: &mut dyn RowSink) -> Result<Done, SqlError> {
        let conn = self.conn.as_mut().ok_or_else(closed)?;
        let r = bounded(&self.rt, self.limits.query_timeout, async {
            let mut result = conn.query_iter(sql).await?;
            let columns = result.columns().unwrap_or_else(|| Vec::new().into());
            let rows = !columns.is_empty();
            if rows {
                let names: Vec<String> =
                    columns.iter().map(|c| c.name_str().into_owned()).collect();
                sink.columns(&names);
            }
            while let Some(row) = result.next().await? {
                for v in row.unwrap() {
                    match v {
                        mysql_async::Value::Bytes(b) => sink.value(Some(&b)),
                        other => sink.value(text(other).as_deref().map(str::as_bytes)),
                    }
                }
                if !sink.end_row() {
                    // Mid-result: the connection is dropped below.
                    return Ok(None);
                }
            }
            let affected = result.affected_rows();
            result.drop_result().await?;
            Ok::<_, mysql_async::Error>(Some(Done { rows, affected }))
        });
        match self.done(r)? {
            Some(done) => Ok(done),
            None => {
                self.conn = None;
                Err(SqlError::client(
                    format!(
                        "the answer to `{sql}` has more than {MAX_ADMIN_ROWS} rows or {} bytes (max_packet): a server that never ends its result set",
                        self.limits.max_packet
                    ),
                    ErrKind::Other,
                ))
            }
        }
    }

    fn load(
        &mut self,
        table: &str,
        with_id: bool,
        fill: &mut dyn FnMut(&mut DataRow) -> bool,
    ) -> Result<(), SqlError> {
        load_rows(self, table, with_id, fill)
    }

    fn load_rows(
        &mut self,
        table: &str,
        columns: &[String],
        fill: &mut dyn FnMut(&mut [crate::db::Cell]) -> bool,
    ) -> Result<u64, SqlError> {
        load_cells(self, table, columns, fill)
    }

    fn close(mut self: Box<Self>) {
        if let Some(conn) = self.conn.take() {
            // sysbench closes its connection in thread_done; a failure here changes nothing
            // measured.
            let _ = self.rt.block_on(conn.disconnect());
        }
    }
}

/// A value of an admin query as text.
fn text(v: mysql_async::Value) -> Option<String> {
    match v {
        mysql_async::Value::NULL => None,
        mysql_async::Value::Bytes(b) => Some(String::from_utf8_lossy(&b).into_owned()),
        mysql_async::Value::Int(i) => Some(i.to_string()),
        mysql_async::Value::UInt(u) => Some(u.to_string()),
        mysql_async::Value::Float(f) => Some(f.to_string()),
        mysql_async::Value::Double(d) => Some(d.to_string()),
        other => Some(other.as_sql(true).trim_matches('\'').to_string()),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn target(extra: &str) -> Target {
        let raw: crate::db::target::RawTarget =
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
    fn a_command_waits_at_most_query_timeout() {
        let rt = io::runtime().unwrap();
        let start = std::time::Instant::now();
        let never = std::future::pending::<Result<(), mysql_async::Error>>();
        let d = std::time::Duration::from_millis(100);
        assert!(matches!(bounded(&rt, Some(d), never), Err(TimedOut)));
        assert!(start.elapsed() >= d && start.elapsed() < std::time::Duration::from_secs(5));
        let now = std::future::ready(Ok::<_, mysql_async::Error>(7));
        assert!(matches!(bounded(&rt, None, now), Ok(Ok(7))));
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
            assert_eq!(sql_error(&server(code)).kind, ErrKind::Lost, "{code}");
        }
        let deadlock = sql_error(&server(1213));
        assert_eq!(
            (deadlock.code.as_str(), deadlock.kind),
            ("1213", ErrKind::Other)
        );
        assert_eq!(sql_error(&server(1146)).kind, ErrKind::NoTable);
        assert_eq!(sql_error(&server(1045)).to_string(), "error 1045 (m)");
    }
}
