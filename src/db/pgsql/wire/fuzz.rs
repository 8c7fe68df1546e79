//! Protocol fuzzing of the wire client on stable Rust (issue #13; cargo-fuzz needs nightly):
//! random and mutated server transcripts — valid startups (trust, cleartext, md5, SASL),
//! answers to queries, prepares, executes and COPY, then bytes flipped, message types and
//! lengths changed, slices cut, repeated or inserted, or pure random bytes — are fed to a
//! [`WireConnection`] over a socket pair, through the startup and every call. What must hold:
//! no panic, no call that waits past its deadline (a peer that stalls instead of closing is
//! part of the mix), no buffer beyond `max_packet`.
//!
//! `SBSUITE_FUZZ_SECS` sets how long it runs (default 15 s, so `cargo test` stays fast;
//! `bench/fuzz-wire.sh SECS pgsql` runs it for minutes), `SBSUITE_FUZZ_SEED` the seed (default: from
//! the clock, printed), `SBSUITE_FUZZ_CASE` one case to replay (its seed, as a failure prints
//! it).

use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use super::*;
use crate::db::io::testing::FuzzRng as Rng;

/// The bounds the fuzzed connections run with: small, so that a length near them is cheap.
const LIMITS: Limits = Limits {
    query_timeout: Some(Duration::from_millis(300)),
    max_packet: 1 << 20,
    kill_on_timeout: true,
};

/// The longest any case may take: a stalled peer costs one deadline per call (the calls of a
/// case after a timeout fail at once: the connection is broken), twice it at most; the rest is
/// a loaded machine.
const CASE_LIMIT: Duration = Duration::from_secs(5);

/// A server transcript being built: the bytes and where each message starts.
#[derive(Default)]
struct Transcript {
    bytes: Vec<u8>,
    starts: Vec<usize>,
}

impl Transcript {
    fn msg(&mut self, tag: u8, body: &[u8]) {
        self.starts.push(self.bytes.len());
        self.bytes.push(tag);
        self.bytes
            .extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
        self.bytes.extend_from_slice(body);
    }

    fn auth(&mut self, code: i32, data: &[u8]) {
        let mut b = code.to_be_bytes().to_vec();
        b.extend_from_slice(data);
        self.msg(b'R', &b);
    }

    fn ready(&mut self) {
        self.msg(b'Z', b"I");
    }

    fn error(&mut self, severity: &str, code: &str) {
        let mut b = Vec::new();
        for (f, v) in [
            (b'S', severity),
            (b'V', severity),
            (b'C', code),
            (b'M', "fuzzed"),
        ] {
            b.push(f);
            b.extend_from_slice(v.as_bytes());
            b.push(0);
        }
        b.push(0);
        self.msg(b'E', &b);
    }

    fn data_row(&mut self, g: &mut Rng, columns: usize) {
        let mut b = (columns as i16).to_be_bytes().to_vec();
        for _ in 0..columns {
            if g.chance(10) {
                b.extend_from_slice(&(-1i32).to_be_bytes());
            } else {
                let v = g.below(1000).to_string();
                b.extend_from_slice(&(v.len() as i32).to_be_bytes());
                b.extend_from_slice(v.as_bytes());
            }
        }
        self.msg(b'D', &b);
    }

    fn row_description(&mut self, columns: usize) {
        let mut b = (columns as i16).to_be_bytes().to_vec();
        for i in 0..columns {
            b.extend_from_slice(format!("c{i}\0").as_bytes());
            b.extend_from_slice(&[
                0, 0, 0, 0, 0, 1, 0, 0, 0, 23, 0, 4, 255, 255, 255, 255, 0, 0,
            ]);
        }
        self.msg(b'T', &b);
    }

    /// What a server may send at any time.
    fn noise(&mut self, g: &mut Rng) {
        while g.chance(15) {
            match g.below(3) {
                0 => self.msg(b'S', b"application_name\0fuzz\0"),
                1 => {
                    let mut b = b"SNOTICE\0VNOTICE\0C00000\0Mhi\0".to_vec();
                    b.push(0);
                    self.msg(b'N', &b);
                }
                _ => self.msg(b'A', b"\0\0\0\x01chan\0payload\0"),
            }
        }
    }

    /// A valid startup: one of the authentication methods, the parameters, the key, ready.
    fn startup(&mut self, g: &mut Rng) {
        match g.below(5) {
            0 => {}
            1 => self.auth(AUTH_CLEARTEXT, &[]),
            2 => self.auth(AUTH_MD5, &g.bytes(4)),
            3 => {
                self.auth(AUTH_SASL, b"SCRAM-SHA-256\0\0");
                // A server-first message the client's nonce cannot match (or garbage).
                let first: &[u8] = if g.chance(50) {
                    b"r=abc,s=c2FsdA==,i=4096"
                } else {
                    b"garbage"
                };
                self.auth(AUTH_SASL_CONTINUE, first);
                self.auth(AUTH_SASL_FINAL, b"v=c2lnbmF0dXJl");
            }
            _ => self.auth(AUTH_SASL, b"OTHER\0\0"),
        }
        self.auth(AUTH_OK, &[]);
        for _ in 0..g.below(5) {
            self.msg(b'S', b"server_version\x0015.0\0");
        }
        self.noise(g);
        self.msg(b'K', &[0, 0, 0, 1, 0, 0, 0, 2]);
        if g.chance(5) {
            self.error("FATAL", "28P01");
        }
        self.ready();
    }

    /// The end of an answer: a command tag or an error, then ready.
    fn complete(&mut self, g: &mut Rng, tag: &str) {
        self.noise(g);
        match g.below(10) {
            0 => {
                let code = *g.pick(&["40P01", "23505", "42P01", "XX000"]);
                self.error("ERROR", code);
            }
            1 => self.error("FATAL", "57P01"),
            _ => {
                let mut b = tag.as_bytes().to_vec();
                b.push(0);
                self.msg(b'C', &b);
            }
        }
        self.ready();
    }

    fn rows(&mut self, g: &mut Rng) {
        let columns = g.below(4);
        self.row_description(columns);
        for _ in 0..g.below(20) {
            self.noise(g);
            self.data_row(g, columns);
        }
    }

    fn answer(&mut self, g: &mut Rng, call: Call) {
        match call {
            Call::Query | Call::QueryI64 | Call::QueryRows | Call::QueryFetch => {
                if g.chance(70) {
                    self.rows(g);
                    self.complete(g, "SELECT 3");
                } else if g.chance(50) {
                    self.complete(g, "UPDATE 2");
                } else {
                    self.msg(b'I', b"");
                    self.ready();
                }
            }
            Call::Prepare => {
                self.msg(b'1', b"");
                let n = g.below(4);
                let mut b = (n as i16).to_be_bytes().to_vec();
                for _ in 0..n {
                    let oid: u32 = *g.pick(&[23, 20, 21, 1042, 25, 1700, 999_999]);
                    b.extend_from_slice(&oid.to_be_bytes());
                }
                self.msg(b't', &b);
                if g.chance(50) {
                    self.row_description(g.below(3));
                } else {
                    self.msg(b'n', b"");
                }
                self.noise(g);
                self.ready();
            }
            Call::Execute | Call::ExecuteFetch => {
                self.msg(b'2', b"");
                for _ in 0..g.below(10) {
                    self.data_row(g, 2);
                }
                self.complete(g, "SELECT 5");
            }
            Call::Load => {
                self.msg(b'G', &[1, 0, 4, 0, 1, 0, 1, 0, 1, 0, 1]);
                self.noise(g);
                self.complete(g, "COPY 3");
            }
        }
    }
}

/// A call of the connection under test.
#[derive(Clone, Copy, Debug)]
enum Call {
    Query,
    QueryI64,
    QueryRows,
    Prepare,
    Execute,
    Load,
    /// `execute_fetch` and `query_fetch`: rows counted, the first one kept.
    ExecuteFetch,
    QueryFetch,
}

const CALLS: [Call; 8] = [
    Call::Query,
    Call::QueryI64,
    Call::QueryRows,
    Call::Prepare,
    Call::Execute,
    Call::Load,
    Call::ExecuteFetch,
    Call::QueryFetch,
];

/// Lengths worth trying in a header: the edges of the protocol and of `max_packet`.
fn interesting_length(g: &mut Rng) -> i32 {
    let max = LIMITS.max_packet as i32;
    let random = g.next() as i32;
    *g.pick(&[
        0,
        3,
        4,
        5,
        -1,
        i32::MIN,
        i32::MAX,
        max + 3,
        max + 4,
        max + 5,
        0x10000,
        random,
    ])
}

/// Changes `t` in one of the ways a broken server or a broken network would.
fn mutate(g: &mut Rng, t: &mut Transcript) {
    let len = t.bytes.len();
    if len == 0 {
        let n = g.below(64);
        t.bytes = g.bytes(n);
        return;
    }
    // A message start (they move as bytes are cut or inserted: then any offset).
    let start = match t.starts.is_empty() {
        true => g.below(len),
        false => *g.pick(&t.starts) % len,
    };
    match g.below(8) {
        // A byte anywhere.
        0 => {
            let at = g.below(len);
            t.bytes[at] = g.next() as u8;
        }
        // A message's type.
        1 => {
            t.bytes[start] = if g.chance(50) {
                *g.pick(b"RSKZNETDCtn123IsHdcGAv")
            } else {
                g.next() as u8
            };
        }
        // A message's length.
        2 => {
            let at = start + 1;
            if at + 4 <= len {
                t.bytes[at..at + 4].copy_from_slice(&interesting_length(g).to_be_bytes());
            }
        }
        // Cut short.
        3 => t.bytes.truncate(g.below(len)),
        // Random bytes inserted.
        4 => {
            let at = g.below(len + 1);
            let n = 1 + g.below(16);
            let junk = g.bytes(n);
            t.bytes.splice(at..at, junk);
        }
        // A slice repeated.
        5 => {
            let a = g.below(len);
            let b = (a + 1 + g.below(64)).min(len);
            let copy = t.bytes[a..b].repeat(1 + g.below(4));
            t.bytes.splice(b..b, copy);
        }
        // A slice removed.
        6 => {
            let a = g.below(len);
            let b = (a + 1 + g.below(16)).min(len);
            t.bytes.drain(a..b);
        }
        // A 16-bit count (fields, columns, parameters) anywhere.
        _ => {
            let at = g.below(len);
            if at + 2 <= len {
                let v: i16 = *g.pick(&[-1, i16::MIN, i16::MAX, 0, 1000]);
                t.bytes[at..at + 2].copy_from_slice(&v.to_be_bytes());
            }
        }
    }
}

/// A connection whose peer sends `bytes`, then closes its side (or, `stall`, says nothing
/// more until the client goes); what the client sends is read and dropped.
fn connection(bytes: Vec<u8>, stall: bool, small_buffer: bool) -> WireConnection {
    let (a, mut b) = UnixStream::pair().unwrap();
    let mut r = b.try_clone().unwrap();
    std::thread::spawn(move || {
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while matches!(r.read(&mut buf), Ok(n) if n > 0) {}
        });
        let _ = b.write_all(&bytes);
        if !stall {
            let _ = b.shutdown(std::net::Shutdown::Write);
        }
        let _ = reader.join();
    });
    let mut io = Reader::new(Stream::Unix(a), LIMITS.max_packet);
    if small_buffer {
        io.buf = vec![0; 64];
    }
    WireConnection {
        io,
        limits: LIMITS,
        phase: Phase::Connect,
        out: BytesMut::new(),
        stmts: Vec::new(),
        broken: true,
        txn_status: b'I',
        cancel: None,
    }
}

/// One case: its transcript from `seed`, run through the startup and the calls.
fn run_case(seed: u64, tally: &mut Tally) {
    tally.cases += 1;
    let g = &mut Rng(seed);
    let with_startup = g.chance(80);
    let calls: Vec<Call> = (0..1 + g.below(6)).map(|_| *g.pick(&CALLS)).collect();
    let mut t = Transcript::default();
    if g.chance(5) {
        let n = g.below(512);
        t.bytes = g.bytes(n);
    } else {
        if with_startup {
            t.startup(g);
        }
        for &call in &calls {
            t.answer(g, call);
        }
        for _ in 0..g.below(5) {
            mutate(g, &mut t);
        }
    }
    let stall = g.chance(2);
    let mut c = connection(t.bytes, stall, g.chance(50));
    if with_startup {
        c.io.set_timeout(LIMITS.query_timeout).unwrap();
        c.io.set_deadline(Some(Instant::now() + LIMITS.query_timeout.unwrap()));
        let target = crate::db::io::testing::target("pgsql", "fuzz", "");
        if c.startup(&target, Some("pw")).is_err() {
            return;
        }
        tally.startups_ok += 1;
    }
    c.io.set_timeout(LIMITS.query_timeout).unwrap();
    c.phase = Phase::Use;
    c.broken = false;
    let mut stmt = 0;
    for call in calls {
        let start = Instant::now();
        let ok = match call {
            Call::Query => c.query("SELECT 1").is_ok(),
            Call::QueryI64 => c.query_i64("SELECT 1").is_ok(),
            Call::QueryRows => c.query_rows("SELECT 1").is_ok(),
            Call::Prepare => match c.prepare("SELECT c FROM t WHERE id = ? AND k = ?") {
                Ok(s) => {
                    stmt = s;
                    true
                }
                Err(_) => false,
            },
            Call::Execute | Call::ExecuteFetch => {
                let n = c.stmts.get(stmt).map_or(0, |s| s.types.len());
                let params: Vec<P<'_>> = (0..n)
                    .map(|i| match i % 4 {
                        0 => P::Int(7),
                        1 => P::Str("x"),
                        2 => P::Float(2.5),
                        _ => P::Null,
                    })
                    .collect();
                match call {
                    Call::Execute => c.execute(stmt, &params).is_ok(),
                    _ => c
                        .execute_fetch(stmt, &params, true, &mut Fetched::default())
                        .is_ok(),
                }
            }
            Call::QueryFetch => c
                .query_fetch("SELECT 1", g.chance(50), &mut Fetched::default())
                .is_ok(),
            Call::Load => {
                let mut n = 0;
                c.load("sbtest1", true, &mut |r: &mut DataRow| {
                    n += 1;
                    r.id = n;
                    n <= 3
                })
                .is_ok()
            }
        };
        if ok {
            tally.calls_ok += 1;
        } else {
            tally.calls_failed += 1;
        }
        let took = start.elapsed();
        assert!(took < CASE_LIMIT, "{call:?} took {took:?}");
        assert!(
            c.io.buf.len() <= 4 * LIMITS.max_packet,
            "{call:?}: a read buffer of {} bytes",
            c.io.buf.len()
        );
    }
}

/// The run's length and seed, from the environment.
fn settings() -> (Duration, u64) {
    let secs = std::env::var("SBSUITE_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(15);
    let seed = std::env::var("SBSUITE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    (Duration::from_secs(secs), seed)
}

/// What the cases did, to show the mix reaches every path (not only the first error).
#[derive(Default, Clone, Copy)]
struct Tally {
    cases: u64,
    startups_ok: u64,
    calls_ok: u64,
    calls_failed: u64,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.cases += o.cases;
        self.startups_ok += o.startups_ok;
        self.calls_ok += o.calls_ok;
        self.calls_failed += o.calls_failed;
    }
}

/// The case each worker is running and since when (for the watchdog).
type Running = std::sync::Mutex<Option<(u64, Instant)>>;

#[test]
fn fuzzed_server_transcripts_never_panic_hang_or_bloat() {
    if let Some(case) = std::env::var("SBSUITE_FUZZ_CASE")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        run_case(case, &mut Tally::default());
        return;
    }
    let (secs, seed) = settings();
    eprintln!("fuzzing the PostgreSQL wire client for {secs:?}: SBSUITE_FUZZ_SEED={seed}");
    let workers: Vec<_> = (0..2u64)
        .map(|w| {
            let running = std::sync::Arc::new(Running::default());
            let mine = std::sync::Arc::clone(&running);
            let worker = std::thread::spawn(move || {
                let mut g = Rng(seed ^ (w << 48));
                let start = Instant::now();
                let (mut tally, mut failed) = (Tally::default(), Vec::new());
                while start.elapsed() < secs {
                    let case = g.next();
                    *mine.lock().unwrap() = Some((case, Instant::now()));
                    let run = AssertUnwindSafe(|| run_case(case, &mut tally));
                    if std::panic::catch_unwind(run).is_err() {
                        failed.push(format!("panic: SBSUITE_FUZZ_CASE={case}"));
                    }
                }
                *mine.lock().unwrap() = None;
                (tally, failed)
            });
            (running, worker)
        })
        .collect();
    // A case that never returns is a hang: say which, rather than wait for ever.
    while workers.iter().any(|(_, w)| !w.is_finished()) {
        for (running, _) in &workers {
            if let Some((case, since)) = *running.lock().unwrap() {
                assert!(
                    since.elapsed() < CASE_LIMIT * 6,
                    "hang: SBSUITE_FUZZ_CASE={case} has run for {:?} (SBSUITE_FUZZ_SEED={seed})",
                    since.elapsed()
                );
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let (mut tally, mut failed) = (Tally::default(), Vec::new());
    for (_, w) in workers {
        let (t, f) = w.join().unwrap();
        tally.add(&t);
        failed.extend(f);
    }
    eprintln!(
        "fuzzed {} cases ({} startups completed, {} calls answered, {} failed cleanly), {} panics or slow calls (SBSUITE_FUZZ_SEED={seed})",
        tally.cases,
        tally.startups_ok,
        tally.calls_ok,
        tally.calls_failed,
        failed.len()
    );
    assert!(tally.cases > 0 && tally.calls_ok > 0 && tally.calls_failed > 0);
    assert!(
        failed.is_empty(),
        "SBSUITE_FUZZ_SEED={seed}: replay one with SBSUITE_FUZZ_CASE:\n{}",
        failed.join("\n")
    );
}
