//! Fuzzing the MySQL protocol decoder on a stable toolchain (#13): cargo-fuzz needs nightly,
//! so this is a test that feeds the real client ([`WireConnection`]) random and mutated server
//! transcripts over a socket pair, for a time budget, and asserts what a fuzzer would: no
//! panic (an arithmetic overflow or a slice out of range in a debug build), and every exchange
//! ends — with a result or an error — within a bound (no hang), with a small `max_packet`
//! (1 MiB) and short timeouts (100 ms per command, 300 ms per handshake).
//!
//! Transcripts start valid (greeting + auth answers, OK / ERR / result sets in both end
//! styles and with several results, prepare answers, binary rows) and are then mutated the
//! way a broken server or a network could: bytes flipped or set to the protocol's marker
//! values (0x00, 0xFB–0xFF), packet lengths and sequence ids rewritten, cut short, chunks
//! repeated or inserted; a tenth are random bytes. The peer sends each segment after the
//! client has sent something, then usually ends its side (so a cut transcript ends at once)
//! and sometimes stays silent (so the deadlines are exercised too).
//!
//! `SBSUITE_FUZZ_SECS` sets the budget (default 15 s, so `cargo test` stays fast;
//! `bench/fuzz-wire.sh` runs it for minutes) and `SBSUITE_FUZZ_SEED` the seed (printed on
//! failure and in the summary line `fuzz-mysql-stats: …`, which the script reads); a failure
//! names its case seed, and `SBSUITE_FUZZ_CASE_SEED=<it>` reruns that case alone.
//!
//! It finds what it is for: with `query_rows`' unchecked `at + n` put back (the overflow a
//! value length of 2^64 − 1 caused), a 30 s run panicked at case 1,205 of 15,941.

use std::io::{Read as _, Write as _};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

use super::tests::{limits, peer_conn};
use super::*;
use crate::db::io::Stream;
use crate::db::io::testing::FuzzRng as Rng;

/// The exchange a case drives.
#[derive(Clone, Copy, Debug)]
enum Path {
    Handshake,
    Query,
    QueryI64,
    QueryRows,
    Prepare,
    Execute,
    /// `execute_fetch` (binary rows decoded) and `query_fetch` (text rows decoded).
    ExecuteFetch,
    QueryFetch,
}

const PATHS: [Path; 8] = [
    Path::Handshake,
    Path::Query,
    Path::QueryI64,
    Path::QueryRows,
    Path::Prepare,
    Path::Execute,
    Path::ExecuteFetch,
    Path::QueryFetch,
];

/// A server transcript being built: packets with their sequence ids, and where each packet
/// header starts (for mutations that aim at lengths and sequence ids).
#[derive(Default)]
struct Transcript {
    bytes: Vec<u8>,
    headers: Vec<usize>,
    seq: u8,
}

impl Transcript {
    fn starting_at(seq: u8) -> Transcript {
        Transcript {
            seq,
            ..Transcript::default()
        }
    }

    fn packet(&mut self, payload: &[u8]) {
        self.headers.push(self.bytes.len());
        self.bytes
            .extend_from_slice(&(payload.len() as u32).to_le_bytes()[..3]);
        self.bytes.push(self.seq);
        self.bytes.extend_from_slice(payload);
        self.seq = self.seq.wrapping_add(1);
    }
}

const DEF: &[u8] =
    b"\x03def\x00\x00\x00\x01x\x01x\x0c\x3f\x00\x0b\x00\x00\x00\x08\x81\x00\x00\x00\x00";

fn ok(status: u16) -> Vec<u8> {
    let s = status.to_le_bytes();
    vec![0x00, 0x01, 0x00, s[0], s[1], 0, 0]
}

fn end(t: &mut Transcript, deprecate_eof: bool, status: u16) {
    let s = status.to_le_bytes();
    if deprecate_eof {
        t.packet(&[0xFE, 0, 0, s[0], s[1], 0, 0]);
    } else {
        t.packet(&[0xFE, 0, 0, s[0], s[1]]);
    }
}

/// One result of a text or binary result set, or an OK / ERR.
fn result(r: &mut Rng, t: &mut Transcript, deprecate_eof: bool, binary: bool, more: bool) {
    let status = if more { 0x000A } else { 0x0002 };
    match r.below(4) {
        0 => t.packet(&ok(status)),
        1 => t.packet(b"\xFF\x7A\x04#42S02Table 'x.t' doesn't exist"),
        _ => {
            let columns = 1 + r.below(4);
            t.packet(&[columns as u8]);
            for _ in 0..columns {
                t.packet(DEF);
            }
            if !deprecate_eof {
                end(t, false, 0x0002);
            }
            for _ in 0..r.below(6) {
                let mut row = Vec::new();
                if binary {
                    row.push(0x00);
                    row.extend(std::iter::repeat_n(0, (columns + 9) / 8));
                    for _ in 0..columns {
                        row.extend_from_slice(&r.next().to_le_bytes());
                    }
                } else {
                    for _ in 0..columns {
                        if r.chance(15) {
                            row.push(0xFB);
                        } else {
                            let v = r.below(1_000_000).to_string();
                            put_lenenc(&mut row, v.len() as u64);
                            row.extend_from_slice(v.as_bytes());
                        }
                    }
                }
                t.packet(&row);
            }
            end(t, deprecate_eof, status);
        }
    }
    if more {
        let again = r.chance(30);
        result(r, t, deprecate_eof, binary, again);
    }
}

/// A valid transcript for `path`, in segments (each sent after the client has written
/// something; the handshake's first segment at once).
fn transcript(r: &mut Rng, path: Path, deprecate_eof: bool) -> Vec<Transcript> {
    match path {
        Path::Handshake => {
            let mut caps = CLIENT_PROTOCOL_41
                | CLIENT_SECURE_CONNECTION
                | CLIENT_PLUGIN_AUTH
                | CLIENT_CONNECT_WITH_DB
                | CLIENT_MULTI_RESULTS;
            if deprecate_eof {
                caps |= CLIENT_DEPRECATE_EOF;
            }
            let plugin = if r.chance(50) {
                "mysql_native_password"
            } else {
                "caching_sha2_password"
            };
            let mut g = vec![10];
            g.extend_from_slice(b"5.5.5-10.11.19-MariaDB\0");
            g.extend_from_slice(&42u32.to_le_bytes());
            g.extend_from_slice(b"abcdefgh\0");
            g.extend_from_slice(&(caps as u16).to_le_bytes());
            g.push(45);
            g.extend_from_slice(&2u16.to_le_bytes());
            g.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
            g.push(21);
            g.extend_from_slice(&[0; 10]);
            g.extend_from_slice(b"ijklmnopqrst\0");
            g.extend_from_slice(plugin.as_bytes());
            g.push(0);
            let mut greeting = Transcript::starting_at(0);
            greeting.packet(&g);
            let mut segments = vec![greeting];
            let mut seq = 2;
            for _ in 0..r.below(3) {
                let mut t = Transcript::starting_at(seq);
                match r.below(3) {
                    0 => {
                        let mut p = vec![0xFE];
                        p.extend_from_slice(b"mysql_native_password\0abcdefghijklmnopqrst\0");
                        t.packet(&p);
                    }
                    1 => {
                        let mut p = vec![0xFE];
                        p.extend_from_slice(b"caching_sha2_password\0abcdefghijklmnopqrst\0");
                        t.packet(&p);
                    }
                    _ => t.packet(&[0x01, 0x03]),
                }
                seq = t.seq.wrapping_add(1);
                segments.push(t);
            }
            let mut last = Transcript::starting_at(seq);
            if r.chance(80) {
                last.packet(&ok(2));
            } else {
                last.packet(b"\xFF\x15\x04#28000Access denied for user");
            }
            segments.push(last);
            segments
        }
        Path::Prepare => {
            let mut t = Transcript::starting_at(1);
            if r.chance(20) {
                t.packet(b"\xFF\x28\x04#42000You have an error in your SQL syntax");
                return vec![t];
            }
            let columns = r.below(4) as u16;
            let params = r.below(4) as u16;
            let mut p = vec![0x00, 1, 0, 0, 0];
            p.extend_from_slice(&columns.to_le_bytes());
            p.extend_from_slice(&params.to_le_bytes());
            p.extend_from_slice(&[0, 0, 0]);
            t.packet(&p);
            for n in [params, columns] {
                if n > 0 {
                    for _ in 0..n {
                        t.packet(DEF);
                    }
                    if !deprecate_eof {
                        end(&mut t, false, 2);
                    }
                }
            }
            vec![t]
        }
        _ => {
            let mut t = Transcript::starting_at(1);
            let more = r.chance(20);
            result(
                r,
                &mut t,
                deprecate_eof,
                matches!(path, Path::Execute | Path::ExecuteFetch),
                more,
            );
            vec![t]
        }
    }
}

/// Mutates `t` in place (several times, or not at all: valid transcripts are cases too).
fn mutate(r: &mut Rng, t: &mut Transcript) {
    for _ in 0..r.below(5) {
        let len = t.bytes.len();
        if len == 0 {
            let n = 1 + r.below(64);
            t.bytes = r.bytes(n);
            continue;
        }
        match r.below(9) {
            0 => {
                let at = r.below(len);
                t.bytes[at] = r.next() as u8;
            }
            8 => {
                // A length-encoded integer at its extremes (AFL's "interesting values").
                let v = [
                    u64::MAX,
                    1 << 63,
                    u64::from(u32::MAX),
                    0xFF_FFFF,
                    0x1_0000,
                    251,
                ][r.below(6)];
                let mut enc = Vec::new();
                put_lenenc(&mut enc, v);
                // Mostly where a packet's payload starts (a row's first value, a column
                // count), else anywhere.
                let at = match t.headers.len() {
                    0 => r.below(len),
                    n if r.chance(70) => (t.headers[r.below(n)] + 4 + r.below(3)).min(len - 1),
                    _ => r.below(len),
                };
                let to = (at + enc.len()).min(len);
                t.bytes.splice(at..to, enc);
            }
            1 => {
                let at = r.below(len);
                t.bytes[at] = [0x00, 0x01, 0xFA, 0xFB, 0xFC, 0xFD, 0xFE, 0xFF][r.below(8)];
            }
            2 if !t.headers.is_empty() => {
                // A packet length: random, around the limits, or the 16 MiB continuation.
                let h = t.headers[r.below(t.headers.len())];
                let v: u32 = match r.below(4) {
                    0 => r.next() as u32 & 0xFF_FFFF,
                    1 => 0xFF_FFFF,
                    2 => (1 << 20) + r.below(16) as u32,
                    _ => r.below(32) as u32,
                };
                if h + 3 <= len {
                    t.bytes[h..h + 3].copy_from_slice(&v.to_le_bytes()[..3]);
                }
            }
            3 if !t.headers.is_empty() => {
                let h = t.headers[r.below(t.headers.len())];
                if h + 3 < len {
                    t.bytes[h + 3] = r.next() as u8;
                }
            }
            4 => t.bytes.truncate(r.below(len)),
            5 => {
                let at = r.below(len + 1);
                let n = 1 + r.below(16);
                let extra = r.bytes(n);
                t.bytes.splice(at..at, extra);
            }
            6 => {
                let from = r.below(len);
                let to = (from + 1 + r.below(64)).min(len);
                let chunk = t.bytes[from..to].to_vec();
                for _ in 0..1 + r.below(4) {
                    t.bytes.extend_from_slice(&chunk);
                }
            }
            _ => {
                let at = r.below(len);
                t.bytes[at] ^= 1 << r.below(8);
            }
        }
    }
}

/// The peer of a case: sends each segment (the first at once when `first_now`, the others
/// after the client wrote something), then ends its side unless `silent`, and reads until
/// the client goes.
fn peer(
    segments: Vec<Vec<u8>>,
    first_now: bool,
    silent: bool,
) -> impl FnOnce(UnixStream) + Send + 'static {
    move |mut s| {
        let mut buf = [0u8; 4096];
        for (i, seg) in segments.iter().enumerate() {
            if (i > 0 || !first_now) && !matches!(s.read(&mut buf), Ok(n) if n > 0) {
                return;
            }
            if s.write_all(seg).is_err() {
                return;
            }
        }
        if !silent {
            let _ = s.shutdown(Shutdown::Write);
        }
        while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
    }
}

/// The largest message a case accepts, and its command timeout.
const MAX_PACKET: usize = 1 << 20;
const QUERY_TIMEOUT_MS: u64 = 100;
const HANDSHAKE_TIMEOUT: Duration = Duration::from_millis(300);

/// A case that takes longer than this hangs: a command fails within twice its timeout, plus
/// room for a loaded machine.
const HANG: Duration = Duration::from_secs(5);

/// Runs one case; `Err` says what went wrong.
fn case(seed: u64) -> Result<Duration, String> {
    let mut r = Rng(seed);
    let path = PATHS[r.below(PATHS.len())];
    let deprecate_eof = r.chance(50);
    let mut segments = transcript(&mut r, path, deprecate_eof);
    let segments: Vec<Vec<u8>> = if r.chance(10) {
        let n = r.below(200);
        vec![r.bytes(n)]
    } else {
        for s in &mut segments {
            if r.chance(60) {
                mutate(&mut r, s);
            }
        }
        segments.into_iter().map(|s| s.bytes).collect()
    };
    let silent = r.chance(10);
    let caps = if deprecate_eof {
        CLIENT_DEPRECATE_EOF
    } else {
        0
    };
    let start = Instant::now();
    let run = catch_unwind(AssertUnwindSafe(|| match path {
        Path::Handshake => {
            let (a, b) = UnixStream::pair().unwrap();
            std::thread::spawn(move || peer(segments, true, silent)(b));
            let t = crate::db::io::testing::target("mysql", "root", "database = \"db\"");
            let mut c = WireConnection {
                io: Reader::new(Stream::Unix(a), MAX_PACKET),
                limits: limits(MAX_PACKET, QUERY_TIMEOUT_MS),
                out: Vec::new(),
                seq: 0,
                caps: 0,
                stmts: Vec::new(),
                meta: Vec::new(),
                broken: true,
                timed_out: false,
                stage: Stage::Greeting,
                endpoint: "peer".into(),
                connect_timeout: HANDSHAKE_TIMEOUT,
                killer: None,
                version: String::new(),
            };
            let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
            c.io.set_deadline(Some(deadline));
            let _ = c.socket_timeout(HANDSHAKE_TIMEOUT);
            let password = if r.chance(50) { "pw" } else { "" };
            let _ = c.handshake(&t, password, WireOptions::default(), deadline);
        }
        _ => {
            let mut c = peer_conn(
                limits(MAX_PACKET, QUERY_TIMEOUT_MS),
                caps,
                peer(segments, false, silent),
            );
            c.stmts.push(Stmt { id: 1, params: 2 });
            let _ = match path {
                Path::Query => c.query("SELECT 1").map(|_| ()),
                Path::QueryI64 => c.query_i64("SELECT 1").map(|_| ()),
                Path::QueryRows => c.query_rows("SHOW GLOBAL VARIABLES").map(|_| ()),
                Path::Prepare => c.prepare("SELECT ?").map(|_| ()),
                Path::ExecuteFetch => c
                    .execute_fetch(0, &[P::Int(1), P::Str("x")], true, &mut Fetched::default())
                    .map(|_| ()),
                Path::QueryFetch => c
                    .query_fetch("SELECT 1", r.chance(50), &mut Fetched::default())
                    .map(|_| ()),
                _ => c.execute(0, &[P::Int(1), P::Str("x")]).map(|_| ()),
            };
            // A second command on what is left: in step, or refused cleanly.
            let _ = c.query("DO 1");
        }
    }));
    let took = start.elapsed();
    match run {
        Err(p) => Err(format!(
            "{path:?} panicked: {}",
            p.downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| p.downcast_ref::<&str>().copied())
                .unwrap_or("?")
        )),
        Ok(()) if took > HANG => Err(format!("{path:?} took {took:?} (a hang)")),
        Ok(()) => Ok(took),
    }
}

#[test]
fn random_and_mutated_server_transcripts_never_panic_or_hang() {
    // One case alone (its "case seed" from a failure report).
    if let Some(one) = std::env::var("SBSUITE_FUZZ_CASE_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        let r = case(one);
        println!("fuzz-mysql case seed {one}: {r:?}");
        assert!(r.is_ok(), "{r:?}");
        return;
    }
    let secs: u64 = std::env::var("SBSUITE_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(15);
    let seed: u64 = std::env::var("SBSUITE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    // Cases mostly wait (for a peer, for a timeout): several run at once, each from its own
    // seed, so a failing case reruns alone with the same transcript.
    let budget = Duration::from_secs(secs);
    let start = Instant::now();
    let next = std::sync::atomic::AtomicU64::new(0);
    let slowest = std::sync::Mutex::new(Duration::ZERO);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| {
                while start.elapsed() < budget && failures.lock().unwrap().len() < 10 {
                    let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let case_seed = seed.wrapping_add(n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
                    match case(case_seed) {
                        Ok(took) => {
                            let mut s = slowest.lock().unwrap();
                            *s = (*s).max(took);
                        }
                        Err(why) => failures
                            .lock()
                            .unwrap()
                            .push(format!("case {n} (case seed {case_seed}): {why}")),
                    }
                }
            });
        }
    });
    let cases = next.into_inner();
    let slowest = slowest.into_inner().unwrap();
    let failures = failures.into_inner().unwrap();
    println!(
        "fuzz-mysql-stats: seed={seed} cases={cases} failures={} slowest_us={} elapsed_ms={}",
        failures.len(),
        slowest.as_micros(),
        start.elapsed().as_millis()
    );
    assert!(
        failures.is_empty(),
        "seed {seed} (rerun with SBSUITE_FUZZ_SEED={seed}):\n{}",
        failures.join("\n")
    );
}
