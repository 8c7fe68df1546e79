//! The protocol's byte-level pieces: packet framing, length-encoded integers and strings, and
//! the OK, EOF and ERR packets.
//!
//! Pure functions of byte slices, apart from the connection so that they are tested (and fuzzed)
//! on their own; every read is bounds-checked and a short packet is `None`, never a panic.

use super::MAX_PAYLOAD;
use crate::db::conn::{ErrKind, SqlError};

/// Writes the packet headers into `out` (4 placeholder bytes + payload), splitting payloads
/// of 16 MiB − 1 bytes and more into packets (a payload of exactly a multiple of that length
/// ends with an empty packet). Returns the sequence id after the last packet.
pub(super) fn frame(out: &mut Vec<u8>, mut seq: u8) -> u8 {
    let len = out.len() - 4;
    if len < MAX_PAYLOAD {
        out[..3].copy_from_slice(&(len as u32).to_le_bytes()[..3]);
        out[3] = seq;
        return seq.wrapping_add(1);
    }
    let payload = out.split_off(4);
    out.clear();
    out.reserve(payload.len() + 4 * (payload.len() / MAX_PAYLOAD + 1));
    let mut chunks = payload.chunks(MAX_PAYLOAD);
    loop {
        let c = chunks.next().unwrap_or(&[]);
        out.extend_from_slice(&(c.len() as u32).to_le_bytes()[..3]);
        out.push(seq);
        out.extend_from_slice(c);
        seq = seq.wrapping_add(1);
        if c.len() < MAX_PAYLOAD {
            return seq;
        }
    }
}

/// Reads a length-encoded integer at `*at` (advancing it); `None` for NULL (0xFB), the
/// invalid 0xFF or a short buffer.
pub(super) fn lenenc(p: &[u8], at: &mut usize) -> Option<u64> {
    let first = *p.get(*at)?;
    let (n, skip) = match first {
        0..=0xFA => (u64::from(first), 1),
        0xFC => (
            u64::from(u16::from_le_bytes(
                p.get(*at + 1..*at + 3)?.try_into().ok()?,
            )),
            3,
        ),
        0xFD => {
            let b = p.get(*at + 1..*at + 4)?;
            (
                u64::from(b[0]) | u64::from(b[1]) << 8 | u64::from(b[2]) << 16,
                4,
            )
        }
        0xFE => (
            u64::from_le_bytes(p.get(*at + 1..*at + 9)?.try_into().ok()?),
            9,
        ),
        _ => return None,
    };
    *at += skip;
    Some(n)
}

/// The length-encoded string at `at` (moving `at` past it).
pub(super) fn lenenc_bytes<'a>(p: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
    let n = usize::try_from(lenenc(p, at)?).ok()?;
    let bytes = p.get(*at..at.checked_add(n)?)?;
    *at += n;
    Some(bytes)
}

/// Appends `v` as a length-encoded integer.
pub(super) fn put_lenenc(out: &mut Vec<u8>, v: u64) {
    match v {
        0..=0xFA => out.push(v as u8),
        0xFB..=0xFFFF => {
            out.push(0xFC);
            out.extend_from_slice(&(v as u16).to_le_bytes());
        }
        0x1_0000..=0xFF_FFFF => {
            out.push(0xFD);
            out.extend_from_slice(&(v as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xFE);
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

pub(super) struct Ok_ {
    pub(super) affected: u64,
    pub(super) status: u16,
}

/// An OK packet (header 0x00, or 0xFE ending a result set with CLIENT_DEPRECATE_EOF).
pub(super) fn parse_ok(p: &[u8]) -> Option<Ok_> {
    let mut at = 1;
    let affected = lenenc(p, &mut at)?;
    let _insert_id = lenenc(p, &mut at)?;
    let status = u16::from_le_bytes(p.get(at..at + 2)?.try_into().ok()?);
    Some(Ok_ { affected, status })
}

/// An EOF packet's status flags (0xFE, warnings, status).
pub(super) fn parse_eof(p: &[u8]) -> Option<u16> {
    Some(u16::from_le_bytes(p.get(3..5)?.try_into().ok()?))
}

/// An ERR packet: errno and message (the `#` + SQLSTATE marker is optional: errors sent
/// before the handshake have none).
pub(super) fn parse_err(p: &[u8]) -> (u16, String) {
    let code = p.get(1..3).map_or(0, |b| u16::from_le_bytes([b[0], b[1]]));
    let mut msg = p.get(3..).unwrap_or(&[]);
    if msg.first() == Some(&b'#') && msg.len() >= 6 {
        msg = &msg[6..];
    }
    (code, String::from_utf8_lossy(msg).into_owned())
}

/// The first column of a text row as an integer (`None` for NULL).
pub(super) fn first_text_i64(p: &[u8]) -> Result<Option<i64>, SqlError> {
    if p.first() == Some(&0xFB) {
        return Ok(None);
    }
    let mut at = 0;
    let bad = || SqlError::client("the first column is not a text value", ErrKind::Other);
    let len = usize::try_from(lenenc(p, &mut at).ok_or_else(bad)?).map_err(|_| bad())?;
    let text = p
        .get(at..at.checked_add(len).ok_or_else(bad)?)
        .ok_or_else(bad)?;
    let text = std::str::from_utf8(text).map_err(|_| bad())?;
    text.trim().parse().map(Some).map_err(|_| {
        SqlError::client(
            format!("`{text}` is not an integer (expected a number in the first column)"),
            ErrKind::Other,
        )
    })
}
