//! What both MySQL clients share: what an error number means for the run, bulk loading,
//! and the server's connection limit.
//!
//! Why its own file: the wire client ([`super::wire`]) and the mysql_async client
//! ([`super::async_client`]) must classify errors identically and load rows the same way;
//! both import these, and neither imports the other.

use crate::db::conn::{Cell, Connection, DataRow, ErrKind, P, SqlError, StmtId};
use crate::db::target::Target;

/// The port a MySQL server listens on by default.
pub const DEFAULT_PORT: u16 = 3306;

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

/// Largest INSERT packet of [`Connection::load`] (also bounded by `max_allowed_packet`).
const MAX_BATCH: usize = 4 << 20;

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

/// Most placeholders of one prepared statement in MySQL's protocol.
const MAX_PARAMS: usize = 65_535;

/// [`Connection::load_rows`] for MySQL (both clients): as [`load_rows`], prepared multi-row
/// INSERTs of up to [`LOAD_ROWS`] rows with binary parameters, each within
/// `max_allowed_packet` (at most [`MAX_BATCH`]) and the protocol's 65,535 parameters, in
/// transactions of about [`LOAD_COMMIT_BYTES`]. Binary parameters need no escaping, whatever
/// the text (quotes, backslashes, `NO_BACKSLASH_ESCAPES`). A batch of another size (the last
/// rows, or rows cut short by a long row) gets its own statement.
pub fn load_cells(
    conn: &mut dyn Connection,
    table: &str,
    columns: &[String],
    fill: &mut dyn FnMut(&mut [Cell]) -> bool,
) -> Result<u64, SqlError> {
    let packet = conn.query_i64("SELECT @@max_allowed_packet")?;
    let budget = usize::try_from(packet.unwrap_or(1 << 20))
        .unwrap_or(MAX_BATCH)
        .saturating_sub(1024)
        .clamp(16 << 10, MAX_BATCH);
    let width = columns.len().max(1);
    let most = LOAD_ROWS.min(MAX_PARAMS / width).max(1);
    let one = format!("({})", vec!["?"; columns.len()].join(","));
    let head = format!("INSERT INTO {table} ({}) VALUES ", columns.join(", "));
    let mut stmts: Vec<(usize, StmtId)> = Vec::new();
    let mut cells: Vec<Cell> = vec![Cell::Null; most * width];
    let mut per_stmt = 0usize;
    let mut len = 0usize;
    let mut bytes = 0usize;
    let mut in_trx: Option<usize> = None;
    let mut loaded = 0u64;
    let mut send = |conn: &mut dyn Connection,
                    cells: &[Cell],
                    rows: usize,
                    bytes: usize,
                    in_trx: &mut Option<usize>|
     -> Result<(), SqlError> {
        if rows == 0 {
            return Ok(());
        }
        if in_trx.is_none() {
            conn.query("BEGIN")?;
        }
        let stmt = match stmts.iter().find(|(n, _)| *n == rows) {
            Some((_, s)) => *s,
            None => {
                let s = conn.prepare(&format!("{head}{}", vec![one.as_str(); rows].join(",")))?;
                stmts.push((rows, s));
                s
            }
        };
        let params: Vec<P<'_>> = cells[..rows * width].iter().map(Cell::param).collect();
        conn.execute(stmt, &params)?;
        let sent = in_trx.unwrap_or(0) + bytes;
        *in_trx = if sent >= LOAD_COMMIT_BYTES {
            conn.query("COMMIT")?;
            None
        } else {
            Some(sent)
        };
        Ok(())
    };
    loop {
        let at = len * width;
        if !fill(&mut cells[at..at + width]) {
            send(conn, &cells, len, bytes, &mut in_trx)?;
            loaded += len as u64;
            if in_trx.is_some() {
                conn.query("COMMIT")?;
            }
            return Ok(loaded);
        }
        let size: usize = cells[at..at + width]
            .iter()
            .map(|c| {
                3 + match c {
                    Cell::Null => 0,
                    Cell::Int(_) | Cell::Float(_) => 8,
                    Cell::Text(t) => t.len() + 9,
                }
            })
            .sum();
        if per_stmt == 0 {
            per_stmt = (budget / size.max(1)).clamp(1, most);
        }
        if len > 0 && bytes + size > budget {
            // A row longer than the first ones: send what is buffered, start over with it.
            send(conn, &cells, len, bytes, &mut in_trx)?;
            loaded += len as u64;
            for i in 0..width {
                cells.swap(i, at + i);
            }
            len = 0;
            bytes = 0;
        }
        len += 1;
        bytes += size;
        if len == per_stmt {
            send(conn, &cells, len, bytes, &mut in_trx)?;
            loaded += len as u64;
            len = 0;
            bytes = 0;
        }
    }
}

/// [`crate::db::Dialect::max_connections`] for MySQL (both clients).
pub fn max_connections_of(conn: &mut dyn Connection) -> Result<Option<u64>, SqlError> {
    Ok(conn
        .query_i64("SELECT @@max_connections")?
        .and_then(|v| u64::try_from(v).ok()))
}

// ---------------------------------------------------------------------------------------------
// Values as text (both clients' `execute_fetch` / `query_fetch`)

pub const TYPE_DECIMAL: u8 = 0x00;
pub const TYPE_TINY: u8 = 0x01;
pub const TYPE_SHORT: u8 = 0x02;
pub const TYPE_LONG: u8 = 0x03;
pub const TYPE_FLOAT: u8 = 0x04;
pub const TYPE_DOUBLE: u8 = 0x05;
pub const TYPE_NULL: u8 = 0x06;
pub const TYPE_TIMESTAMP: u8 = 0x07;
pub const TYPE_LONGLONG: u8 = 0x08;
pub const TYPE_INT24: u8 = 0x09;
pub const TYPE_DATE: u8 = 0x0A;
pub const TYPE_TIME: u8 = 0x0B;
pub const TYPE_DATETIME: u8 = 0x0C;
pub const TYPE_YEAR: u8 = 0x0D;
pub const TYPE_NEWDATE: u8 = 0x0E;
pub const TYPE_BIT: u8 = 0x10;

/// UNSIGNED_FLAG and ZEROFILL_FLAG of a column definition.
pub const UNSIGNED_FLAG: u16 = 0x20;
pub const ZEROFILL_FLAG: u16 = 0x40;

/// A column's `decimals` above this means "not fixed" (MySQL's 31, MariaDB's 39).
const FIXED_DECIMALS_MAX: u8 = 30;

/// What the text of a value needs from its column definition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ColumnMeta {
    pub ty: u8,
    pub flags: u16,
    pub decimals: u8,
    /// The display width (ZEROFILL pads integers to it).
    pub length: u32,
}

impl ColumnMeta {
    pub fn unsigned(&self) -> bool {
        self.flags & UNSIGNED_FLAG != 0
    }

    /// An integer as the text protocol sends it: ZEROFILL columns padded to their width,
    /// YEAR as four digits.
    pub fn int_text(&self, v: impl std::fmt::Display) -> String {
        if self.ty == TYPE_YEAR {
            return format!("{v:0>4}");
        }
        if self.flags & ZEROFILL_FLAG != 0 {
            let w = self.length.min(64) as usize;
            return format!("{v:0>w$}");
        }
        v.to_string()
    }

    /// A FLOAT / DOUBLE: with the column's fixed decimals (`DOUBLE(10,2)`) as `1.50`, else
    /// the shortest text that reads back as the same number (exponent form outside
    /// 1e-4 .. 1e15, as MySQL's `%g`-like output).
    pub fn float_text(&self, v: f64, single: bool) -> String {
        if self.decimals <= FIXED_DECIMALS_MAX && self.decimals > 0 {
            return format!("{v:.*}", usize::from(self.decimals));
        }
        float_text(v, single)
    }

    /// DATE / DATETIME / TIMESTAMP parts as MySQL's text (`2024-01-31`,
    /// `2024-01-31 12:34:56`, with the column's fractional digits).
    #[allow(clippy::too_many_arguments)]
    pub fn date_text(&self, y: u16, mo: u8, d: u8, h: u8, mi: u8, s: u8, us: u32) -> String {
        let date = format!("{y:04}-{mo:02}-{d:02}");
        if self.ty == TYPE_DATE || self.ty == TYPE_NEWDATE {
            return date;
        }
        format!("{date} {h:02}:{mi:02}:{s:02}{}", self.fraction(us))
    }

    /// TIME parts as MySQL's text (`-838:59:59`, `12:00:00.500`): days count as hours.
    pub fn time_text(&self, negative: bool, days: u32, h: u8, mi: u8, s: u8, us: u32) -> String {
        let hours = u64::from(days) * 24 + u64::from(h);
        let sign = if negative { "-" } else { "" };
        format!("{sign}{hours:02}:{mi:02}:{s:02}{}", self.fraction(us))
    }

    /// `.` and the column's fractional digits of `us` microseconds (nothing for none).
    fn fraction(&self, us: u32) -> String {
        let digits = usize::from(self.decimals.min(6));
        if digits == 0 || self.decimals > FIXED_DECIMALS_MAX {
            return String::new();
        }
        let mut f = format!("{us:06}");
        f.truncate(digits);
        format!(".{f}")
    }

    /// A string-typed value's bytes as text: BIT as its unsigned number (`b'101'` → `5`),
    /// anything else as UTF-8 (invalid bytes replaced).
    pub fn bytes_text(&self, b: &[u8]) -> String {
        if self.ty == TYPE_BIT {
            let n = b.iter().fold(0u128, |n, &byte| (n << 8) | u128::from(byte));
            return n.to_string();
        }
        String::from_utf8_lossy(b).into_owned()
    }
}

/// A FLOAT or DOUBLE as MySQL/MariaDB write it: a DOUBLE in the shortest digits that read
/// back as the same number, a FLOAT (`single`) in 6 significant digits (`1234567` →
/// `1234570`), both in plain notation for 1e-15 ≤ |v| < 1e15 and as `1e15`, `1.5e-20`
/// outside (measured on MariaDB 10.11's text protocol).
pub fn float_text(v: f64, single: bool) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = if single {
        format!("{v:.5e}")
    } else {
        format!("{v:e}")
    };
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let mut digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    if !(-15..=14).contains(&exp) {
        let (head, tail) = digits.split_at(1);
        let dot = if tail.is_empty() { "" } else { "." };
        return format!("{sign}{head}{dot}{tail}e{exp}");
    }
    if exp < 0 {
        let zeros = "0".repeat((-exp - 1) as usize);
        return format!("{sign}0.{zeros}{digits}");
    }
    let int_len = exp as usize + 1;
    if digits.len() <= int_len {
        let zeros = "0".repeat(int_len - digits.len());
        format!("{sign}{digits}{zeros}")
    } else {
        let (int, frac) = digits.split_at(int_len);
        format!("{sign}{int}.{frac}")
    }
}

/// What `KILL QUERY` from a second connection needs: where this connection went, with which
/// login, and the server's id of it.
pub struct Killer {
    /// The connection's target, its waits cut to [`KILL_WAIT`], and no kill of its own
    /// ([`crate::db::Limits::kill_on_timeout`]).
    pub target: Target,
    pub n: usize,
    pub id: u64,
    /// Whether this connection's statements are killed at all: not when it is itself a kill's
    /// connection (a server that hangs would be asked for ever).
    kills: bool,
}

/// The longest a kill waits to connect, and then for the server's answer: a server that does
/// not answer a `KILL` in seconds will not end the statement either.
const KILL_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

impl Killer {
    /// The killer of connection `id`, made through endpoint `n` of `target`.
    pub fn new(target: &Target, n: usize, id: u64) -> Killer {
        let kills = target.limits.kill_on_timeout;
        let mut target = target.clone();
        target.connect_timeout = target.connect_timeout.min(KILL_WAIT);
        target.limits.query_timeout = Some(
            target
                .limits
                .query_timeout
                .map_or(KILL_WAIT, |q| q.min(KILL_WAIT)),
        );
        target.limits.kill_on_timeout = false;
        Killer {
            target,
            n,
            id,
            kills,
        }
    }

    /// Cancels the statement running on the connection: `KILL QUERY id` from a connection of
    /// its own (at most [`KILL_WAIT`] to connect and as much for the answer), which the
    /// server answers at once; the statement then fails with error 1317
    /// (ER_QUERY_INTERRUPTED). Best effort: a server that cannot be reached has nothing left
    /// to run for us either.
    pub fn kill_query(&self) {
        if !self.kills {
            return;
        }
        if let Ok(mut c) = super::open(&self.target, self.n) {
            let _ = c.query(&format!("KILL QUERY {}", self.id));
            c.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_read_as_mariadb_writes_them() {
        // What MariaDB 10.11's text protocol sent for these DOUBLE and FLOAT values.
        for (v, want) in [
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (1e14, "100000000000000"),
            (1e15, "1e15"),
            (1.234_567_890_123_456_8e17, "1.2345678901234568e17"),
            (0.00001, "0.00001"),
            (1e-15, "0.000000000000001"),
            (1e-16, "1e-16"),
            (1.5e-20, "1.5e-20"),
            (1.0 / 3.0, "0.3333333333333333"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e308"),
            (0.0, "0"),
        ] {
            assert_eq!(float_text(v, false), want, "{v}");
        }
        for (v, want) in [
            (1234567f32, "1234570"),
            (2.718_281_7, "2.71828"),
            (1e20, "1e20"),
            (0.00001, "0.00001"),
            (f32::MIN_POSITIVE, "1.17549e-38"),
            (16777217.0, "16777200"),
            (0.1, "0.1"),
            (-1.5, "-1.5"),
        ] {
            assert_eq!(float_text(f64::from(v), true), want, "{v}");
        }
        let fixed = ColumnMeta {
            ty: TYPE_DOUBLE,
            decimals: 2,
            ..ColumnMeta::default()
        };
        assert_eq!(fixed.float_text(0.125, false), "0.12");
        assert_eq!(fixed.float_text(-2.0, false), "-2.00");
    }
}
