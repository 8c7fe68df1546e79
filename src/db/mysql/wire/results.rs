//! Reading the answer to a command: OK and ERR packets, result sets (skipped by length on the hot
//! path), multi-results, and the first row of a result decoded as text in both the text and the
//! binary protocol.
//!
//! Apart from packet I/O because this is where the protocol's result shapes live: the end of a
//! result set (EOF packet or OK with CLIENT_DEPRECATE_EOF) and the binary encoding of each
//! column type.

use super::codec::{first_text_i64, lenenc, lenenc_bytes, parse_eof, parse_err, parse_ok};
use super::{MAX_COLUMNS, MAX_PAYLOAD, MAX_RESULTS, SERVER_MORE_RESULTS_EXISTS, WireConnection};
use crate::db::conn::{Done, Fetched, SqlError};
use crate::db::mysql::shared::{
    ColumnMeta, TYPE_BIT, TYPE_DATE, TYPE_DATETIME, TYPE_DOUBLE, TYPE_FLOAT, TYPE_INT24, TYPE_LONG,
    TYPE_LONGLONG, TYPE_NEWDATE, TYPE_NULL, TYPE_SHORT, TYPE_TIME, TYPE_TIMESTAMP, TYPE_TINY,
    TYPE_YEAR,
};

impl WireConnection {
    /// Reads the answer to COM_QUERY / COM_STMT_EXECUTE (every result of a multi-result),
    /// skipping rows; with `value`, also the first column of the first row (text protocol).
    pub(super) fn result(&mut self, value: bool) -> Result<(Done, Option<i64>), SqlError> {
        let mut done = Done::default();
        let mut first: Result<Option<i64>, SqlError> = Ok(None);
        let mut captured = !value;
        for _ in 0..MAX_RESULTS {
            let r = self.packet()?;
            let p = &self.io.buf[r];
            let status = match p.first() {
                Some(0x00) => {
                    let ok = parse_ok(p);
                    match ok {
                        Some(ok) => {
                            done.affected = ok.affected;
                            ok.status
                        }
                        None => return Err(self.protocol("short OK packet")),
                    }
                }
                Some(0xFF) => {
                    let (code, message) = parse_err(p);
                    return Err(self.failed(code, message));
                }
                Some(0xFB) => {
                    return Err(self.protocol("the server asked for LOCAL INFILE data"));
                }
                _ => {
                    let mut at = 0;
                    let Some(columns) = lenenc(p, &mut at) else {
                        return Err(self.protocol("bad column count"));
                    };
                    self.skip_definitions(columns)?;
                    done.rows = true;
                    done.affected = 0;
                    let capture = !captured;
                    captured = true;
                    let (status, v) = self.rows(capture)?;
                    if capture {
                        first = v;
                    }
                    status
                }
            };
            if status & SERVER_MORE_RESULTS_EXISTS == 0 {
                return first.map(|v| (done, v));
            }
        }
        Err(self.protocol(format!(
            "the server sent more than {MAX_RESULTS} results for one statement"
        )))
    }

    /// Skips row packets up to the end of a result set and returns the end's status flags;
    /// with `capture`, the first row's first text value as an integer.
    ///
    /// The end is a packet starting with 0xFE that is shorter than a row that could start with
    /// 0xFE: below 9 bytes for an EOF packet, and below 16 MiB for an OK packet with
    /// CLIENT_DEPRECATE_EOF (a text row starting with 0xFE holds a value of 16 MiB or more,
    /// a binary row starts with 0x00). A packet continuing a 16 MiB one is always row data.
    fn rows(&mut self, capture: bool) -> Result<(u16, Result<Option<i64>, SqlError>), SqlError> {
        let end_limit = if self.deprecate_eof() { MAX_PAYLOAD } else { 9 };
        let mut continued = false;
        let mut value: Result<Option<i64>, SqlError> = Ok(None);
        let mut want = capture;
        // The length of the current row so far (a row of several packets).
        let mut row = 0usize;
        loop {
            let len = self.header()?;
            row = if continued { row + len } else { len };
            if row > self.limits.max_packet {
                return Err(self.too_large(row));
            }
            if !continued && len > 0 {
                self.fill(1)?;
                match self.io.buf[self.io.pos] {
                    0xFE if len < end_limit => {
                        self.fill(len)?;
                        let p = &self.io.buf[self.io.pos..self.io.pos + len];
                        let status = if self.deprecate_eof() {
                            parse_ok(p).map(|ok| ok.status)
                        } else {
                            parse_eof(p)
                        };
                        self.io.pos += len;
                        return match status {
                            Some(s) => Ok((s, value)),
                            None => Err(self.protocol("short end-of-rows packet")),
                        };
                    }
                    0xFF => {
                        self.fill(len)?;
                        let (code, message) =
                            parse_err(&self.io.buf[self.io.pos..self.io.pos + len]);
                        self.io.pos += len;
                        return Err(self.failed(code, message));
                    }
                    _ if want => {
                        // The first value is at the start of the row, so the first packet
                        // of a long row is enough.
                        want = false;
                        self.fill(len)?;
                        value = first_text_i64(&self.io.buf[self.io.pos..self.io.pos + len]);
                    }
                    _ => {}
                }
            }
            self.discard(len)?;
            continued = len == MAX_PAYLOAD;
        }
    }
}

impl WireConnection {
    /// Reads the answer to COM_QUERY (`binary` false: text rows) or COM_STMT_EXECUTE (binary
    /// rows) into `out`: the rows of the first result set counted (skipped by length), and
    /// with `first` its column names and first row as text. Further results are drained.
    pub(super) fn fetch(
        &mut self,
        binary: bool,
        first: bool,
        out: &mut Fetched,
    ) -> Result<Done, SqlError> {
        let mut done = Done::default();
        let mut seen = false;
        for _ in 0..MAX_RESULTS {
            let r = self.packet()?;
            let p = &self.io.buf[r];
            let status = match p.first() {
                Some(0x00) => match parse_ok(p) {
                    Some(ok) => {
                        if !seen {
                            done.affected = ok.affected;
                        }
                        ok.status
                    }
                    None => return Err(self.protocol("short OK packet")),
                },
                Some(0xFF) => {
                    let (code, message) = parse_err(p);
                    return Err(self.failed(code, message));
                }
                Some(0xFB) => {
                    return Err(self.protocol("the server asked for LOCAL INFILE data"));
                }
                _ => {
                    let mut at = 0;
                    let Some(columns) = lenenc(p, &mut at) else {
                        return Err(self.protocol("bad column count"));
                    };
                    if seen {
                        self.skip_definitions(columns)?;
                        self.rows(false)?.0
                    } else {
                        seen = true;
                        done = Done {
                            rows: true,
                            affected: 0,
                        };
                        if first {
                            self.definitions(columns, out)?;
                        } else {
                            self.skip_definitions(columns)?;
                        }
                        self.fetch_rows(binary, first, out)?
                    }
                }
            };
            if status & SERVER_MORE_RESULTS_EXISTS == 0 {
                return Ok(done);
            }
        }
        Err(self.protocol(format!(
            "the server sent more than {MAX_RESULTS} results for one statement"
        )))
    }

    /// Reads `columns` column definitions (and their end) into `self.meta` and their names
    /// into `out.columns`.
    fn definitions(&mut self, columns: u64, out: &mut Fetched) -> Result<(), SqlError> {
        if columns > MAX_COLUMNS {
            return Err(self.protocol(format!(
                "the server announced {columns} columns (MySQL allows at most {MAX_COLUMNS})"
            )));
        }
        self.meta.clear();
        for _ in 0..columns {
            let r = self.packet()?;
            let Some((name, meta)) = column_definition(&self.io.buf[r]) else {
                return Err(self.protocol("bad column definition"));
            };
            out.columns.push(name);
            self.meta.push(meta);
        }
        if !self.deprecate_eof() {
            self.skip_packet()?;
        }
        Ok(())
    }

    /// Counts the row packets up to the end of a result set into `out.rows` (skipping them by
    /// length, each row bounded by `max_packet`), with `first` decoding the first one (every
    /// one with [`Fetched::all`]) as text into `out.first` (the column definitions are in `self.meta`); returns the end's status
    /// flags. The end is recognized as in [`Self::rows`].
    fn fetch_rows(
        &mut self,
        binary: bool,
        first: bool,
        out: &mut Fetched,
    ) -> Result<u16, SqlError> {
        let end_limit = if self.deprecate_eof() { MAX_PAYLOAD } else { 9 };
        let mut want = first;
        loop {
            let mut len = self.header()?;
            if len > 0 {
                self.fill(1)?;
                match self.io.buf[self.io.pos] {
                    0xFE if len < end_limit => {
                        self.fill(len)?;
                        let p = &self.io.buf[self.io.pos..self.io.pos + len];
                        let status = if self.deprecate_eof() {
                            parse_ok(p).map(|ok| ok.status)
                        } else {
                            parse_eof(p)
                        };
                        self.io.pos += len;
                        return status.ok_or_else(|| self.protocol("short end-of-rows packet"));
                    }
                    0xFF => {
                        self.fill(len)?;
                        let (code, message) =
                            parse_err(&self.io.buf[self.io.pos..self.io.pos + len]);
                        self.io.pos += len;
                        return Err(self.failed(code, message));
                    }
                    _ => {}
                }
            }
            if want {
                want = out.all;
                out.rows += 1;
                let r = self.packet_from(len)?;
                let p = &self.io.buf[r];
                let row = if binary {
                    binary_row(&self.meta, p)
                } else {
                    text_row(&self.meta, p)
                };
                match row {
                    Ok(row) => out.first.extend(row),
                    Err(what) => return Err(self.protocol(what)),
                }
                continue;
            }
            out.rows += 1;
            // A row of several packets: each continuation is row data.
            let mut row = len;
            loop {
                if row > self.limits.max_packet {
                    return Err(self.too_large(row));
                }
                self.discard(len)?;
                if len < MAX_PAYLOAD {
                    break;
                }
                len = self.header()?;
                row += len;
            }
        }
    }
}

/// A ColumnDefinition41 packet: the column name and what its values' text needs (catalog,
/// schema, table, org_table, name, org_name, the length of the fixed fields, charset, length,
/// type, flags, decimals).
fn column_definition(p: &[u8]) -> Option<(String, ColumnMeta)> {
    let mut at = 0;
    let mut name = &[][..];
    for i in 0..6 {
        let s = lenenc_bytes(p, &mut at)?;
        if i == 4 {
            name = s;
        }
    }
    let _fixed = lenenc(p, &mut at)?;
    let f = p.get(at..at + 10)?;
    let meta = ColumnMeta {
        length: u32::from_le_bytes([f[2], f[3], f[4], f[5]]),
        ty: f[6],
        flags: u16::from_le_bytes([f[7], f[8]]),
        decimals: f[9],
    };
    Some((String::from_utf8_lossy(name).into_owned(), meta))
}

/// A text-protocol row as text (`None`: NULL); BIT values as numbers.
pub(super) fn text_row(meta: &[ColumnMeta], p: &[u8]) -> Result<Vec<Option<String>>, String> {
    let mut at = 0;
    let mut row = Vec::with_capacity(meta.len());
    for m in meta {
        if p.get(at) == Some(&0xFB) {
            at += 1;
            row.push(None);
            continue;
        }
        let bytes = lenenc_bytes(p, &mut at).ok_or("bad text row")?;
        row.push(Some(m.bytes_text(bytes)));
    }
    Ok(row)
}

/// A binary-protocol row (0x00, the NULL bitmap with an offset of 2 bits, the non-NULL
/// values) as MySQL's text of each value (`None`: NULL).
pub(super) fn binary_row(meta: &[ColumnMeta], p: &[u8]) -> Result<Vec<Option<String>>, String> {
    let bitmap_len = (meta.len() + 9) / 8;
    let bitmap = p.get(1..1 + bitmap_len).ok_or("short binary row")?;
    if p[0] != 0x00 {
        return Err(format!("a binary row starting with {:#04x}", p[0]));
    }
    let mut at = 1 + bitmap_len;
    let mut row = Vec::with_capacity(meta.len());
    for (i, m) in meta.iter().enumerate() {
        let bit = i + 2;
        if bitmap[bit / 8] & (1 << (bit % 8)) != 0 || m.ty == TYPE_NULL {
            row.push(None);
            continue;
        }
        let v = binary_value(m, p, &mut at)
            .ok_or_else(|| format!("a short value of type {:#04x} in a binary row", m.ty))?;
        row.push(Some(v?));
    }
    Ok(row)
}

/// One binary-protocol value at `*at` (moving past it) as text; `None` for a short row, an
/// error for a type the protocol does not send.
fn binary_value(m: &ColumnMeta, p: &[u8], at: &mut usize) -> Option<Result<String, String>> {
    let mut take = |n: usize| {
        let b = p.get(*at..*at + n)?;
        *at += n;
        Some(b)
    };
    let unsigned = m.unsigned();
    let text = match m.ty {
        TYPE_TINY => {
            let b = take(1)?[0];
            if unsigned {
                m.int_text(b)
            } else {
                m.int_text(b as i8)
            }
        }
        TYPE_SHORT | TYPE_YEAR => {
            let b = take(2)?;
            let v = [b[0], b[1]];
            if unsigned {
                m.int_text(u16::from_le_bytes(v))
            } else {
                m.int_text(i16::from_le_bytes(v))
            }
        }
        TYPE_LONG | TYPE_INT24 => {
            let v: [u8; 4] = take(4)?.try_into().ok()?;
            if unsigned {
                m.int_text(u32::from_le_bytes(v))
            } else {
                m.int_text(i32::from_le_bytes(v))
            }
        }
        TYPE_LONGLONG => {
            let v: [u8; 8] = take(8)?.try_into().ok()?;
            if unsigned {
                m.int_text(u64::from_le_bytes(v))
            } else {
                m.int_text(i64::from_le_bytes(v))
            }
        }
        TYPE_FLOAT => {
            let v: [u8; 4] = take(4)?.try_into().ok()?;
            m.float_text(f64::from(f32::from_le_bytes(v)), true)
        }
        TYPE_DOUBLE => {
            let v: [u8; 8] = take(8)?.try_into().ok()?;
            m.float_text(f64::from_le_bytes(v), false)
        }
        TYPE_DATE | TYPE_NEWDATE | TYPE_DATETIME | TYPE_TIMESTAMP => {
            let n = usize::from(take(1)?[0]);
            let b = take(n)?;
            let (mut y, mut mo, mut d, mut h, mut mi, mut s, mut us) = (0, 0, 0, 0, 0, 0, 0);
            if n >= 4 {
                (y, mo, d) = (u16::from_le_bytes([b[0], b[1]]), b[2], b[3]);
            }
            if n >= 7 {
                (h, mi, s) = (b[4], b[5], b[6]);
            }
            if n >= 11 {
                us = u32::from_le_bytes([b[7], b[8], b[9], b[10]]);
            }
            m.date_text(y, mo, d, h, mi, s, us)
        }
        TYPE_TIME => {
            let n = usize::from(take(1)?[0]);
            let b = take(n)?;
            let (mut neg, mut days, mut h, mut mi, mut s, mut us) = (false, 0, 0, 0, 0, 0);
            if n >= 8 {
                neg = b[0] == 1;
                days = u32::from_le_bytes([b[1], b[2], b[3], b[4]]);
                (h, mi, s) = (b[5], b[6], b[7]);
            }
            if n >= 12 {
                us = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
            }
            m.time_text(neg, days, h, mi, s, us)
        }
        // DECIMAL, NEWDECIMAL, VARCHAR, BIT, JSON, ENUM, SET, the BLOBs, the strings,
        // GEOMETRY, VECTOR: a length-encoded string.
        0x00 | 0x0F | TYPE_BIT | 0xF2..=0xFF => {
            let mut i = *at;
            let b = lenenc_bytes(p, &mut i)?;
            *at = i;
            m.bytes_text(b)
        }
        other => {
            return Some(Err(format!(
                "a value of MySQL column type {other:#04x}, which the binary protocol does not send"
            )));
        }
    };
    Some(Ok(text))
}
