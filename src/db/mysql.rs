//! MySQL/MariaDB connections, shaped for a load generator.
//!
//! [`open`] uses sbsuite's own blocking protocol client ([`super::mysql_wire`]) when TLS and
//! compression are off, and mysql_async otherwise, or when the server needs what the wire
//! client does not speak (an auth plugin other than native / caching_sha2 fast path), or when
//! `SBSUITE_MYSQL_CLIENT=async` asks for it. The rest of this file is the mysql_async path and what both share (error
//! kinds, bulk loading).
//!
//! Each worker owns one [`mysql_async::Conn`] for the whole run on its own current-thread tokio
//! runtime ([`runtime`]): MySQL has one command in flight per connection, and a shared
//! multi-thread runtime measurably costs client CPU (DESIGN.md "Measured facts"). Options are
//! built with `OptsBuilder`, never by formatting a URL, so the password never exists as text
//! outside the one connect call. Connections take the next endpoint round-robin
//! ([`Connector`]), as sysbench does.

use mysql_async::prelude::Queryable;
use mysql_async::{ClientIdentity, Conn, OptsBuilder, Params, SslOpts, Statement};

use super::{Connection, DataRow, Done, ErrKind, P, SqlError, SslMode, StmtId, Target};

/// A single-threaded tokio runtime for one connection (I/O and timers enabled).
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

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

/// What a MySQL error number means for the run (both clients).
pub fn kind_of_code(code: u16) -> ErrKind {
    match code {
        2013 | 2006 | 2011 | 2055 | 1927 | 4031 => ErrKind::Lost,
        1146 => ErrKind::NoTable,
        1050 => ErrKind::TableExists,
        1040 | 1053 | 2002 | 2003 => ErrKind::Unreachable,
        _ => ErrKind::Other,
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

/// The environment variable that picks the client: `wire` (default, sbsuite's own protocol
/// client [`super::mysql_wire`]) or `async` (mysql_async).
pub const CLIENT_ENV: &str = "SBSUITE_MYSQL_CLIENT";

static CHOICE: super::wire::Choice =
    super::wire::Choice::new(CLIENT_ENV, "async", "mysql_async", "MySQL");

/// Opens connection number `n` of `t` (endpoint `n` modulo the endpoints): through the wire
/// client when TLS and compression are off and it speaks the server's auth, else through
/// mysql_async.
pub fn open(t: &Target, n: usize) -> Result<Box<dyn Connection>, SqlError> {
    if t.ssl == SslMode::Disabled
        && !t.compression
        && let Some(c) = CHOICE.open_wire(|| super::mysql_wire::open(t, n))?
    {
        return Ok(c);
    }
    open_async(t, n)
}

/// Opens connection number `n` of `t` through mysql_async.
pub fn open_async(t: &Target, n: usize) -> Result<Box<dyn Connection>, SqlError> {
    let rt =
        runtime().map_err(|e| SqlError::client(format!("tokio runtime: {e}"), ErrKind::Other))?;
    let conn = rt.block_on(connect(t, n))?;
    Ok(Box::new(MysqlConnection {
        rt,
        conn: Some(conn),
        stmts: Vec::new(),
        values: Vec::with_capacity(8),
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

/// Largest INSERT packet of [`Connection::load`] (also bounded by `max_allowed_packet`).
const MAX_BATCH: usize = 4 << 20;

/// A `mysql_async` connection driven from one OS thread through its own runtime.
struct MysqlConnection {
    rt: tokio::runtime::Runtime,
    /// `None` after an error that closed it.
    conn: Option<Conn>,
    stmts: Vec<Statement>,
    /// Reused parameter vector.
    values: Vec<mysql_async::Value>,
}

fn closed() -> SqlError {
    SqlError::client("connection closed", ErrKind::Lost)
}

impl Connection for MysqlConnection {
    fn prepare(&mut self, sql: &str) -> Result<StmtId, SqlError> {
        let conn = self.conn.as_mut().ok_or_else(closed)?;
        let stmt = self
            .rt
            .block_on(conn.prep(sql))
            .map_err(|e| sql_error(&e))?;
        self.stmts.push(stmt);
        Ok(self.stmts.len() - 1)
    }

    fn execute(&mut self, stmt: StmtId, params: &[P<'_>]) -> Result<Done, SqlError> {
        let conn = self.conn.as_mut().ok_or_else(closed)?;
        let stmt = self.stmts.get(stmt).ok_or_else(|| {
            SqlError::client(format!("no prepared statement {stmt}"), ErrKind::Other)
        })?;
        let mut values = std::mem::take(&mut self.values);
        values.clear();
        values.extend(params.iter().map(|p| match *p {
            P::Int(i) => mysql_async::Value::Int(i),
            P::Str(s) => mysql_async::Value::Bytes(s.as_bytes().to_vec()),
        }));
        let r = self.rt.block_on(async {
            let result = conn.exec_iter(stmt, Params::Positional(values)).await?;
            let rows = !result.columns_ref().is_empty();
            result.drop_result().await?;
            Ok::<bool, mysql_async::Error>(rows)
        });
        let rows = r.map_err(|e| sql_error(&e))?;
        Ok(Done {
            rows,
            affected: conn.affected_rows(),
        })
    }

    fn query(&mut self, sql: &str) -> Result<Done, SqlError> {
        let conn = self.conn.as_mut().ok_or_else(closed)?;
        let r = self.rt.block_on(async {
            let result = conn.query_iter(sql).await?;
            let rows = !result.columns_ref().is_empty();
            result.drop_result().await?;
            Ok::<bool, mysql_async::Error>(rows)
        });
        let rows = r.map_err(|e| sql_error(&e))?;
        Ok(Done {
            rows,
            affected: conn.affected_rows(),
        })
    }

    fn query_i64(&mut self, sql: &str) -> Result<Option<i64>, SqlError> {
        let conn = self.conn.as_mut().ok_or_else(closed)?;
        let row: Option<Option<i64>> = self
            .rt
            .block_on(conn.query_first(sql))
            .map_err(|e| sql_error(&e))?;
        Ok(row.flatten())
    }

    fn query_rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, SqlError> {
        let conn = self.conn.as_mut().ok_or_else(closed)?;
        let rows: Vec<mysql_async::Row> = self
            .rt
            .block_on(conn.query(sql))
            .map_err(|e| sql_error(&e))?;
        Ok(rows
            .into_iter()
            .map(|row| {
                row.unwrap()
                    .into_iter()
                    .map(|v| match v {
                        mysql_async::Value::NULL => None,
                        mysql_async::Value::Bytes(b) => {
                            Some(String::from_utf8_lossy(&b).into_owned())
                        }
                        mysql_async::Value::Int(i) => Some(i.to_string()),
                        mysql_async::Value::UInt(u) => Some(u.to_string()),
                        mysql_async::Value::Float(f) => Some(f.to_string()),
                        mysql_async::Value::Double(d) => Some(d.to_string()),
                        other => Some(other.as_sql(true).trim_matches('\'').to_string()),
                    })
                    .collect()
            })
            .collect())
    }

    fn load(
        &mut self,
        table: &str,
        with_id: bool,
        fill: &mut dyn FnMut(&mut DataRow) -> bool,
    ) -> Result<(), SqlError> {
        load_rows(self, table, with_id, fill)
    }

    fn prepared_statement_room(&mut self) -> Result<Option<(u64, u64)>, SqlError> {
        prepared_statement_room_of(self)
    }

    fn max_connections(&mut self) -> Result<Option<u64>, SqlError> {
        max_connections_of(self)
    }

    fn close(mut self: Box<Self>) {
        if let Some(conn) = self.conn.take() {
            // sysbench closes its connection in thread_done; a failure here changes nothing
            // measured.
            let _ = self.rt.block_on(conn.disconnect());
        }
    }
}

/// [`Connection::load`] for MySQL (both clients): prepared multi-row INSERTs of
/// [`LOAD_ROWS`] rows with binary parameters, parameter packets within `max_allowed_packet` (at
/// most [`MAX_BATCH`]), committed every [`LOAD_COMMIT_BYTES`].
///
/// Why transactions of several INSERTs: each commit waits for a redo log flush, and with one
/// commit per INSERT (as sysbench's autocommit INSERTs) a load on a disk shared with other
/// work waits for over a thousand flushes per 1 M rows; bounded transactions keep the undo log
/// and a replica's apply unit small all the same.
///
/// Why prepared: the server is the limit of a prepare, and text INSERTs spend about half of
/// its CPU in the SQL parser (every literal becomes an `Item` with a converted name), where a
/// prepared statement is parsed once. Measured on MariaDB 10.11 (BENCHMARKS.md, #4): server
/// CPU per 1 M rows 6.1 s against 9.6 s for sysbench's text INSERTs and 7.9 s for `LOAD DATA
/// LOCAL INFILE` (whose field reader copies byte by byte).
pub fn load_rows(
    conn: &mut dyn Connection,
    table: &str,
    with_id: bool,
    fill: &mut dyn FnMut(&mut DataRow) -> bool,
) -> Result<(), SqlError> {
    let packet = conn.query_i64("SELECT @@max_allowed_packet")?;
    let budget = usize::try_from(packet.unwrap_or(1 << 20))
        .unwrap_or(MAX_BATCH)
        .saturating_sub(1024)
        .clamp(16 << 10, MAX_BATCH);
    let head = if with_id {
        format!("INSERT INTO {table}(id, k, c, pad) VALUES")
    } else {
        format!("INSERT INTO {table}(k, c, pad) VALUES")
    };
    let mut batch = Batch {
        head,
        with_id,
        budget,
        rows: Vec::new(),
        len: 0,
        bytes: 0,
        per_stmt: 0,
        stmt: None,
        in_trx: None,
    };
    loop {
        if batch.len == batch.rows.len() {
            batch.rows.push(DataRow::default());
        }
        let at = batch.len;
        if !fill(&mut batch.rows[at]) {
            batch.flush(conn)?;
            if batch.in_trx.is_some() {
                conn.query("COMMIT")?;
            }
            return Ok(());
        }
        let size = binary_size(&batch.rows[at], with_id);
        if batch.per_stmt == 0 {
            batch.per_stmt = (budget / size).clamp(1, LOAD_ROWS);
        }
        if at > 0 && batch.bytes + size > budget {
            // A row longer than the first ones: send what is buffered, start over with it.
            batch.flush(conn)?;
            batch.rows.swap(0, at);
        }
        batch.len += 1;
        batch.bytes += size;
        if batch.len == batch.per_stmt {
            batch.flush(conn)?;
        }
    }
}

/// Rows per prepared INSERT of [`load_rows`]: 300 and 1,000 rows cost the server the same
/// (BENCHMARKS.md, #4), 4,000 slightly more; far below the protocol's 65,535 parameters.
const LOAD_ROWS: usize = 1000;

/// Rows (binary bytes, [`binary_size`]) per transaction of [`load_rows`]: about 88,000
/// sysbench rows, so a 250,000-row table commits 3 times instead of 250.
const LOAD_COMMIT_BYTES: usize = 16 << 20;

/// The rows [`load_rows`] has buffered for its next INSERT.
struct Batch {
    head: String,
    with_id: bool,
    /// Largest parameter payload (or text statement) to send.
    budget: usize,
    /// Reused rows; the first `len` are buffered.
    rows: Vec<DataRow>,
    len: usize,
    /// Their binary size ([`binary_size`]).
    bytes: usize,
    /// Rows per prepared statement, from the first row's size (0 before it).
    per_stmt: usize,
    /// The statement for `per_stmt` rows, prepared with the first full batch.
    stmt: Option<StmtId>,
    /// Bytes sent in the open transaction (`None`: none is open).
    in_trx: Option<usize>,
}

impl Batch {
    /// Sends the buffered rows: a full batch through the prepared statement, a shorter one
    /// (the table's last rows, or rows cut short by a long row) as a text INSERT, which needs
    /// no statement of its own.
    fn flush(&mut self, conn: &mut dyn Connection) -> Result<(), SqlError> {
        if self.len == 0 {
            return Ok(());
        }
        if self.in_trx.is_none() {
            conn.query("BEGIN")?;
        }
        let rows = &self.rows[..self.len];
        if rows.len() == self.per_stmt {
            let stmt = match self.stmt {
                Some(s) => s,
                None => {
                    let one = if self.with_id { "(?,?,?,?)" } else { "(?,?,?)" };
                    let values = vec![one; self.per_stmt].join(",");
                    let s = conn.prepare(&format!("{}{values}", self.head))?;
                    self.stmt = Some(s);
                    s
                }
            };
            let mut params = Vec::with_capacity(rows.len() * 4);
            for r in rows {
                if self.with_id {
                    params.push(P::Int(r.id));
                }
                params.extend([P::Int(r.k), P::Str(&r.c), P::Str(&r.pad)]);
            }
            conn.execute(stmt, &params)?;
        } else {
            insert_text(conn, &self.head, rows, self.with_id, self.budget)?;
        }
        let sent = self.in_trx.unwrap_or(0) + self.bytes;
        self.in_trx = if sent >= LOAD_COMMIT_BYTES {
            conn.query("COMMIT")?;
            None
        } else {
            Some(sent)
        };
        self.len = 0;
        self.bytes = 0;
        Ok(())
    }
}

/// A row's share of a COM_STMT_EXECUTE packet: 8-byte integers, strings behind a length
/// prefix of at most 9 bytes, and per parameter 2 type bytes and a null-bitmap bit.
fn binary_size(r: &DataRow, with_id: bool) -> usize {
    let params = if with_id { 4 } else { 3 };
    8 * (params - 2) + r.c.len() + r.pad.len() + 2 * 9 + 3 * params
}

/// `rows` as multi-row text INSERTs of at most `budget` bytes each.
fn insert_text(
    conn: &mut dyn Connection,
    head: &str,
    rows: &[DataRow],
    with_id: bool,
    budget: usize,
) -> Result<(), SqlError> {
    use std::fmt::Write as _;
    let mut sql = String::with_capacity(budget.min(1 << 20) + 256);
    let mut row = String::with_capacity(256);
    sql.push_str(head);
    let mut pending = 0usize;
    for r in rows {
        row.clear();
        let sep = if pending == 0 { "" } else { "," };
        if with_id {
            let _ = write!(row, "{sep}({}, {}, '{}', '{}')", r.id, r.k, r.c, r.pad);
        } else {
            let _ = write!(row, "{sep}({}, '{}', '{}')", r.k, r.c, r.pad);
        }
        if pending > 0 && sql.len() + row.len() > budget {
            conn.query(&sql)?;
            sql.clear();
            sql.push_str(head);
            pending = 0;
            row.remove(0);
        }
        sql.push_str(&row);
        pending += 1;
    }
    if pending > 0 {
        conn.query(&sql)?;
    }
    Ok(())
}

/// [`Connection::max_connections`] for MySQL (both clients).
pub fn max_connections_of(conn: &mut dyn Connection) -> Result<Option<u64>, SqlError> {
    Ok(conn
        .query_i64("SELECT @@max_connections")?
        .and_then(|v| u64::try_from(v).ok()))
}

/// `max_prepared_stmt_count` and the server's current `Prepared_stmt_count` (both clients).
pub fn prepared_statement_room_of(
    conn: &mut dyn Connection,
) -> Result<Option<(u64, u64)>, SqlError> {
    // MySQL-compatible servers without the variable (some distributed ones) have no limit to
    // check.
    let max = match conn.query_i64("SELECT @@max_prepared_stmt_count") {
        Err(e) if e.kind == ErrKind::Other => return Ok(None),
        r => r?,
    };
    let Some(max) = max.and_then(|v| u64::try_from(v).ok()) else {
        return Ok(None);
    };
    let used = match conn.query_rows("SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'") {
        Err(e) if e.kind == ErrKind::Other => Vec::new(),
        r => r?,
    };
    let used = used
        .into_iter()
        .next()
        .and_then(|row| row.into_iter().nth(1).flatten())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    Ok(Some((max, used)))
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
