//! The codec on its own (byte vectors, a peer socket fed with crafted packets) and the bounds
//! a broken or hostile peer runs into; the client against the real local MariaDB/MySQL is in
//! `live`.

use std::io::Write as _;
use std::os::unix::net::UnixStream;
use std::time::Instant;

use sha1::{Digest, Sha1};

use super::codec::first_text_i64;
use super::handshake::{
    AuthStep, Plugin, auth_step, parse_handshake, scramble_native, scramble_sha256,
};
use super::results::{binary_row, text_row};
use super::*;
use crate::db::io::Stream;
use crate::db::mysql::shared::{
    TYPE_BIT, TYPE_DATE, TYPE_DATETIME, TYPE_LONG, TYPE_LONGLONG, TYPE_TIME, TYPE_TINY,
};

// ---------------------------------------------------------------------------------------------
// codec

#[test]
fn lenenc_ints_round_trip_with_the_protocol_encodings() {
    let cases: [(u64, &[u8]); 8] = [
        (0, &[0x00]),
        (250, &[0xFA]),
        (251, &[0xFC, 0xFB, 0x00]),
        (0xFFFF, &[0xFC, 0xFF, 0xFF]),
        (0x1_0000, &[0xFD, 0x00, 0x00, 0x01]),
        (0xFF_FFFF, &[0xFD, 0xFF, 0xFF, 0xFF]),
        (0x100_0000, &[0xFE, 0, 0, 0, 1, 0, 0, 0, 0]),
        (
            u64::MAX,
            &[0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
        ),
    ];
    for (v, bytes) in cases {
        let mut out = Vec::new();
        put_lenenc(&mut out, v);
        assert_eq!(out, bytes, "{v}");
        let mut at = 0;
        assert_eq!(lenenc(&out, &mut at), Some(v));
        assert_eq!(at, bytes.len());
    }
    // NULL, the invalid 0xFF and short input are not integers.
    for bad in [&[0xFB][..], &[0xFF], &[0xFC, 0x01], &[0xFE, 1, 2, 3], &[]] {
        assert_eq!(lenenc(bad, &mut 0), None, "{bad:?}");
    }
}

/// Splits framed bytes back into (length, seq, payload) packets.
fn unframe(mut b: &[u8]) -> Vec<(usize, u8, Vec<u8>)> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let len = usize::from(b[0]) | usize::from(b[1]) << 8 | usize::from(b[2]) << 16;
        out.push((len, b[3], b[4..4 + len].to_vec()));
        b = &b[4 + len..];
    }
    out
}

fn framed(payload: &[u8], seq: u8) -> (Vec<u8>, u8) {
    let mut out = vec![0; 4];
    out.extend_from_slice(payload);
    let next = frame(&mut out, seq);
    (out, next)
}

#[test]
fn packets_split_at_16_mib_and_a_full_last_chunk_gets_an_empty_packet() {
    let (small, next) = framed(b"\x03SELECT 1", 0);
    assert_eq!(small, b"\x09\x00\x00\x00\x03SELECT 1");
    assert_eq!(next, 1);

    let big: Vec<u8> = (0..MAX_PAYLOAD + 10).map(|i| (i % 251) as u8).collect();
    let (out, next) = framed(&big, 255);
    let p = unframe(&out);
    assert_eq!(
        p.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(),
        [(MAX_PAYLOAD, 255), (10, 0)],
        "the sequence id wraps"
    );
    assert_eq!(next, 1);
    assert_eq!([&p[0].2[..], &p[1].2[..]].concat(), big);

    let exact = vec![7u8; MAX_PAYLOAD];
    let (out, next) = framed(&exact, 0);
    let p = unframe(&out);
    assert_eq!(
        p.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(),
        [(MAX_PAYLOAD, 0), (0, 1)]
    );
    assert_eq!(next, 2);
}

#[test]
fn ok_eof_and_err_packets_parse() {
    // OK: affected 3 (lenenc), insert id 300 (0xFC 2c 01), status 0x0002, warnings 0.
    let ok = parse_ok(&[0x00, 0x03, 0xFC, 0x2C, 0x01, 0x02, 0x00, 0x00, 0x00]).unwrap();
    assert_eq!((ok.affected, ok.status), (3, 0x0002));
    // The same shape ends a result set with CLIENT_DEPRECATE_EOF (header 0xFE).
    let end = parse_ok(&[0xFE, 0x00, 0x00, 0x0A, 0x00, 0x00, 0x00]).unwrap();
    assert_eq!(end.status, 0x000A);
    assert!(parse_ok(&[0x00, 0x01]).is_none(), "short");
    // EOF: warnings 1, status SERVER_MORE_RESULTS_EXISTS | autocommit.
    assert_eq!(parse_eof(&[0xFE, 0x01, 0x00, 0x0A, 0x00]), Some(0x000A));
    assert_eq!(parse_eof(&[0xFE, 0x01]), None);

    let mut err = vec![0xFF, 0x7A, 0x04, b'#'];
    err.extend_from_slice(b"42S02Table 'x.t' doesn't exist");
    assert_eq!(parse_err(&err), (1146, "Table 'x.t' doesn't exist".into()));
    let e = server_error(1146, "m".into());
    assert_eq!((e.code.as_str(), e.kind), ("1146", ErrKind::NoTable));
    // Before the handshake (too many connections) there is no SQLSTATE marker.
    let mut early = vec![0xFF, 0x10, 0x04];
    early.extend_from_slice(b"Too many connections");
    assert_eq!(parse_err(&early), (1040, "Too many connections".into()));
    assert_eq!(server_error(1040, String::new()).kind, ErrKind::Unreachable);
    assert_eq!(server_error(1927, String::new()).kind, ErrKind::Lost);
    assert_eq!(server_error(1050, String::new()).kind, ErrKind::TableExists);
    assert_eq!(server_error(1213, String::new()).kind, ErrKind::Other);
}

#[test]
fn first_text_value_parses_as_an_integer_or_null() {
    assert_eq!(first_text_i64(b"\x0216777216").unwrap(), None.or(Some(16)));
    assert_eq!(first_text_i64(b"\x0816777216").unwrap(), Some(16_777_216));
    assert_eq!(first_text_i64(b"\x02-5\x01x").unwrap(), Some(-5));
    assert_eq!(first_text_i64(b"\xFB\x01x").unwrap(), None);
    let e = first_text_i64(b"\x03abc").unwrap_err();
    assert!(e.message.contains("`abc` is not an integer"), "{e}");
    assert!(first_text_i64(b"\x09123").is_err(), "short value");
}

/// A MariaDB 10.11-shaped greeting: version, id, scramble 8 + 12 bytes, capabilities, plugin.
fn greeting(caps: u32, plugin: &str) -> Vec<u8> {
    let mut p = vec![10];
    p.extend_from_slice(b"5.5.5-10.11.19-MariaDB\0");
    p.extend_from_slice(&42u32.to_le_bytes());
    p.extend_from_slice(b"abcdefgh\0");
    p.extend_from_slice(&(caps as u16).to_le_bytes());
    p.push(45);
    p.extend_from_slice(&2u16.to_le_bytes());
    p.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
    p.push(21);
    p.extend_from_slice(&[0; 10]);
    p.extend_from_slice(b"ijklmnopqrst\0");
    p.extend_from_slice(plugin.as_bytes());
    p.push(0);
    p
}

#[test]
fn greeting_gives_capabilities_nonce_and_plugin() {
    let caps = CLIENT_PROTOCOL_41
        | CLIENT_SECURE_CONNECTION
        | CLIENT_PLUGIN_AUTH
        | CLIENT_DEPRECATE_EOF
        | CLIENT_CONNECT_WITH_DB;
    let hs = parse_handshake(&greeting(caps, "mysql_native_password")).unwrap();
    assert_eq!(hs.caps, caps);
    assert_eq!(hs.nonce, b"abcdefghijklmnopqrst");
    assert_eq!(hs.plugin, "mysql_native_password");

    let mut err = vec![0xFF, 0x10, 0x04];
    err.extend_from_slice(b"Too many connections");
    match parse_handshake(&err) {
        Err(WireError::Sql(e)) => {
            assert_eq!((e.code.as_str(), e.kind), ("1040", ErrKind::Unreachable))
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        parse_handshake(&[9, b'x', 0]),
        Err(WireError::Unsupported(_))
    ));
    assert!(matches!(
        parse_handshake(&[10, b'x']),
        Err(WireError::Unsupported(_))
    ));
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

#[test]
fn scrambles_match_known_vectors() {
    // MySQL's PASSWORD('password') is '*' + hex(SHA1(SHA1('password'))) (MySQL manual,
    // "Password Hashing in MySQL"): the inner stages of mysql_native_password.
    let stage2 = Sha1::digest(Sha1::digest(b"password"));
    assert_eq!(hex(&stage2), "2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19");
    // Vectors of mysql_common's scramble tests (the protocol core of mysql_async).
    let nonce = [
        0x4e, 0x52, 0x33, 0x48, 0x50, 0x3a, 0x71, 0x49, 0x59, 0x61, 0x5f, 0x39, 0x3d, 0x64, 0x62,
        0x3f, 0x53, 0x64, 0x7b, 0x60,
    ];
    let password = [0x47, 0x21, 0x69, 0x64, 0x65, 0x72, 0x32, 0x37];
    assert_eq!(
        scramble_native(&nonce, &password),
        [
            0x09, 0xcf, 0xf8, 0x85, 0x5e, 0x9e, 0x70, 0x53, 0x40, 0xff, 0x22, 0x70, 0xd8, 0xfb,
            0x9f, 0xad, 0xba, 0x90, 0x6b, 0x70,
        ]
    );
    assert_eq!(
        scramble_sha256(&nonce, &password),
        [
            0x4f, 0x97, 0xbb, 0xfd, 0x20, 0x24, 0x01, 0xc4, 0x2a, 0x69, 0xde, 0xaa, 0xe5, 0x3b,
            0xda, 0x07, 0x7e, 0xd7, 0x57, 0x85, 0x63, 0xc1, 0xa8, 0x0e, 0xb8, 0x16, 0xc8, 0x21,
            0x19, 0xb6, 0x8d, 0x2e,
        ]
    );
    // An empty password sends an empty response; a longer nonce is cut to 20 bytes.
    assert!(Plugin::Native.scramble(&nonce, "").is_empty());
    let mut long = nonce.to_vec();
    long.push(0);
    assert_eq!(
        Plugin::CachingSha2.scramble(&long, "G!ider27"),
        scramble_sha256(&nonce, &password).to_vec()
    );
}

#[test]
fn auth_exchange_steps_and_what_falls_back() {
    let mut plugin = Plugin::Native;
    assert_eq!(
        auth_step(&[0, 0, 0, 2, 0, 0, 0], &mut plugin, "pw").unwrap(),
        AuthStep::Done
    );
    // Switch to caching_sha2 with a fresh nonce (NUL-terminated, as servers send it).
    let mut switch = vec![0xFE];
    switch.extend_from_slice(b"caching_sha2_password\0");
    switch.extend_from_slice(b"abcdefghijklmnopqrst\0");
    assert_eq!(
        auth_step(&switch, &mut plugin, "pw").unwrap(),
        AuthStep::Send(scramble_sha256(b"abcdefghijklmnopqrst", b"pw").to_vec())
    );
    assert_eq!(plugin, Plugin::CachingSha2);
    assert_eq!(
        auth_step(&[0x01, 0x03], &mut plugin, "pw").unwrap(),
        AuthStep::Wait
    );
    // Full caching_sha2 auth needs TLS or RSA; other plugins and the old scramble: fallback.
    assert!(matches!(
        auth_step(&[0x01, 0x04], &mut plugin, "pw"),
        Err(WireError::Unsupported(_))
    ));
    let mut ed = vec![0xFE];
    ed.extend_from_slice(b"client_ed25519\0nonce");
    assert!(matches!(
        auth_step(&ed, &mut plugin, "pw"),
        Err(WireError::Unsupported(m)) if m.contains("client_ed25519")
    ));
    assert!(matches!(
        auth_step(&[0xFE], &mut plugin, "pw"),
        Err(WireError::Unsupported(_))
    ));
    let mut denied = vec![0xFF, 0x15, 0x04, b'#'];
    denied.extend_from_slice(b"28000Access denied for user 'u'@'h' (using password: YES)");
    match auth_step(&denied, &mut plugin, "pw") {
        Err(WireError::Sql(e)) => {
            assert_eq!((e.code.as_str(), e.kind), ("1045", ErrKind::Other));
            assert!(e.message.starts_with("Access denied"));
        }
        other => panic!("{other:?}"),
    }
}

/// A server that accepts connections and never greets: the client connects again after
/// short waits, then gives up at connect_timeout as unreachable.
#[test]
fn a_connection_without_greeting_is_retried_until_connect_timeout() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (done, wait_done) = std::sync::mpsc::channel::<()>();
    let accepted = std::thread::spawn(move || {
        // Held open (never greeted) until the client has given up.
        let held: Vec<_> = listener.incoming().take(2).collect();
        let _ = wait_done.recv();
        held.iter().filter(|s| s.is_ok()).count()
    });
    let t = target(&format!(
        "hosts = [\"127.0.0.1:{port}\"]\nconnect_timeout = 3"
    ));
    let r = WireConnection::open(&t, 0, WireOptions::default());
    done.send(()).unwrap();
    match r {
        Err(WireError::Sql(e)) => {
            assert_eq!(e.kind, ErrKind::Unreachable, "{e}");
            assert!(
                e.message.contains("did not answer within connect_timeout"),
                "{e}"
            );
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    assert_eq!(
        accepted.join().unwrap(),
        2,
        "a second connection after the first wait"
    );
}

#[test]
fn tls_targets_are_left_to_mysql_async() {
    let t = target("hosts = [\"127.0.0.1:1\"]\nssl = \"required\"");
    assert!(matches!(
        WireConnection::open(&t, 0, WireOptions::default()),
        Err(WireError::Unsupported(_))
    ));
}

// ---------------------------------------------------------------------------------------------
// reading answers from a peer socket fed with crafted packets

/// One packet of `payload` (below 16 MiB) with sequence id `seq`.
fn pk(seq: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as u32).to_le_bytes()[..3].to_vec();
    out.push(seq);
    out.extend_from_slice(payload);
    out
}

/// A connection whose peer sends `bytes` (then closes), expecting an answer from seq 1.
fn fed(bytes: Vec<u8>, caps: u32) -> WireConnection {
    let (a, mut b) = UnixStream::pair().unwrap();
    std::thread::spawn(move || {
        let _ = b.write_all(&bytes);
    });
    WireConnection {
        // A tiny buffer, so that answers cross refills.
        io: {
            let mut r = Reader::new(Stream::Unix(a), Limits::default().max_packet);
            r.buf = vec![0; 64];
            r
        },
        limits: Limits::default(),
        out: Vec::new(),
        seq: 1,
        caps,
        stmts: Vec::new(),
        meta: Vec::new(),
        broken: false,
        timed_out: false,
        stage: Stage::Ready,
        endpoint: "peer".into(),
        connect_timeout: Duration::from_secs(60),
        killer: None,
        version: String::new(),
    }
}

/// A text result set with one column: header, column definition, (EOF), rows, end.
fn result_set(deprecate_eof: bool, rows: &[Vec<u8>], status: u16) -> (Vec<u8>, u8) {
    let mut b = pk(1, &[1]);
    b.extend(pk(
        2,
        b"\x03def\x00\x00\x00\x01x\x01x\x0c\x3f\x00\x0b\x00\x00\x00\x08\x81\x00\x00\x00\x00",
    ));
    let mut seq = 3u8;
    if !deprecate_eof {
        b.extend(pk(seq, &[0xFE, 0, 0, 2, 0]));
        seq += 1;
    }
    for r in rows {
        let (f, next) = framed(r, seq);
        b.extend(f);
        seq = next;
    }
    let s = status.to_le_bytes();
    if deprecate_eof {
        b.extend(pk(seq, &[0xFE, 0, 0, s[0], s[1], 0, 0]));
    } else {
        b.extend(pk(seq, &[0xFE, 0, 0, s[0], s[1]]));
    }
    (b, seq.wrapping_add(1))
}

#[test]
fn rows_are_skipped_by_length_in_both_end_styles() {
    // A row of 16 MiB + 3 bytes: its continuation packet is 3 bytes starting with 0xFE and
    // must not be taken for the end. 300 more rows wrap the sequence id.
    let mut long = vec![0xFD, 0x02, 0x00, 0x00];
    long.resize(MAX_PAYLOAD, b'y');
    long.extend_from_slice(&[0xFE, 0x00, 0x00]);
    let mut rows = vec![b"\x0242".to_vec(), long];
    rows.extend((0..300).map(|i| format!("\x03{i:03}").into_bytes()));
    for deprecate in [true, false] {
        let caps = if deprecate { CLIENT_DEPRECATE_EOF } else { 0 };
        let (mut bytes, seq) = result_set(deprecate, &rows, 0x0008);
        // A second result: an OK with 2 affected rows.
        bytes.extend(pk(seq, &[0x00, 0x02, 0x00, 0x02, 0x00, 0x00, 0x00]));
        let mut c = fed(bytes.clone(), caps);
        let (done, _) = c.result(false).unwrap();
        assert_eq!(
            done,
            Done {
                rows: true,
                affected: 2
            },
            "deprecate_eof {deprecate}"
        );
        assert_eq!(c.io.pos, c.io.end, "everything consumed");
        assert!(!c.broken);
        // The first value of the first row, for query_i64.
        let mut c = fed(bytes, caps);
        assert_eq!(c.result(true).unwrap().1, Some(42));
    }
}

#[test]
fn an_error_inside_rows_is_a_server_error_and_the_connection_stays_usable() {
    let mut b = pk(1, &[1]);
    b.extend(pk(2, b"\x03def"));
    b.extend(pk(3, b"\x011"));
    let mut err = vec![0xFF, 0x14, 0x05, b'#'];
    err.extend_from_slice(b"70100Query execution was interrupted");
    b.extend(pk(4, &err));
    let mut c = fed(b, CLIENT_DEPRECATE_EOF);
    let e = c.result(false).unwrap_err();
    assert_eq!((e.code.as_str(), e.kind), ("1300", ErrKind::Other));
    assert!(!c.broken);
}

#[test]
fn out_of_order_packets_break_the_connection_and_an_unsolicited_error_is_lost() {
    let mut c = fed(pk(5, &[0x00, 0, 0, 2, 0, 0, 0]), 0);
    let e = c.result(false).unwrap_err();
    assert!(e.message.contains("sequence 5, expected 1"), "{e}");
    assert!(c.broken);
    assert_eq!(c.query("SELECT 1").unwrap_err().kind, ErrKind::Lost);

    // MariaDB tells a killed connection why, with sequence id 0, and closes it.
    let mut err = vec![0xFF, 0x87, 0x07, b'#'];
    err.extend_from_slice(b"70100Connection was killed");
    let mut c = fed(pk(0, &err), 0);
    let e = c.result(false).unwrap_err();
    assert_eq!((e.code.as_str(), e.kind), ("1927", ErrKind::Lost));

    // The server closing the socket mid-answer.
    let mut c = fed(pk(1, &[1])[..3].to_vec(), 0);
    let e = c.result(false).unwrap_err();
    assert_eq!((e.code.as_str(), e.kind), ("2013", ErrKind::Lost));
}

#[test]
fn a_packet_over_16_mib_is_joined_in_place() {
    let payload: Vec<u8> = (0..MAX_PAYLOAD + 1000).map(|i| (i % 253) as u8).collect();
    let (mut bytes, seq) = framed(&payload, 1);
    bytes.extend(pk(seq, b"next"));
    let mut c = fed(bytes, 0);
    let r = c.packet().unwrap();
    assert_eq!(c.io.buf[r].len(), payload.len());
    let r = c.packet().unwrap();
    assert_eq!(&c.io.buf[r], b"next");
    // Check the content of a fresh copy (the buffer above was reused).
    let (bytes, _) = framed(&payload, 1);
    let mut c = fed(bytes, 0);
    let r = c.packet().unwrap();
    assert!(c.io.buf[r] == payload[..]);
}

// ---------------------------------------------------------------------------------------------
// bounds and deadlines (#13): what a broken or hostile peer can make the client do

/// `Limits` of `max_packet` bytes and a `query_timeout` of `timeout_ms` (0: none).
pub(super) fn limits(max_packet: usize, timeout_ms: u64) -> Limits {
    Limits {
        query_timeout: (timeout_ms > 0).then(|| Duration::from_millis(timeout_ms)),
        max_packet,
        kill_on_timeout: true,
    }
}

/// An authenticated connection (`caps`, `limits`) to a peer run by `peer` on its own thread.
pub(super) fn peer_conn(
    limits: Limits,
    caps: u32,
    peer: impl FnOnce(UnixStream) + Send + 'static,
) -> WireConnection {
    let (a, b) = UnixStream::pair().unwrap();
    std::thread::spawn(move || peer(b));
    let mut io = Reader::new(Stream::Unix(a), limits.max_packet);
    io.set_timeout(limits.query_timeout).unwrap();
    WireConnection {
        io,
        limits,
        out: Vec::new(),
        seq: 0,
        caps,
        stmts: Vec::new(),
        meta: Vec::new(),
        broken: false,
        timed_out: false,
        stage: Stage::Ready,
        endpoint: "peer".into(),
        connect_timeout: Duration::from_secs(60),
        killer: None,
        version: String::new(),
    }
}

/// Reads (and drops) what the client sends until it goes.
pub(super) fn drain(s: &mut UnixStream) {
    let mut buf = [0u8; 4096];
    while matches!(std::io::Read::read(s, &mut buf), Ok(n) if n > 0) {}
}

/// A peer that sends `bytes` and stays until the client goes.
pub(super) fn answers(bytes: Vec<u8>) -> impl FnOnce(UnixStream) + Send + 'static {
    move |mut s| {
        let _ = s.write_all(&bytes);
        drain(&mut s);
    }
}

/// A peer that answers each command with the next of `answers`, then stays until the
/// client goes.
pub(super) fn replies(answers: Vec<Vec<u8>>) -> impl FnOnce(UnixStream) + Send + 'static {
    move |mut s| {
        for a in answers {
            let mut h = [0u8; 4];
            if std::io::Read::read_exact(&mut s, &mut h).is_err() {
                return;
            }
            let len = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
            let mut p = vec![0; len];
            if std::io::Read::read_exact(&mut s, &mut p).is_err() || s.write_all(&a).is_err() {
                return;
            }
        }
        drain(&mut s);
    }
}

/// A peer that sends `head` and then `unit` for ever (until the client goes).
fn endless(
    head: Vec<u8>,
    unit: impl Fn(u8) -> Vec<u8> + Send + 'static,
) -> impl FnOnce(UnixStream) + Send + 'static {
    move |mut s| {
        if s.write_all(&head).is_err() {
            return;
        }
        let mut seq = 0u8;
        let mut batch = Vec::new();
        loop {
            batch.clear();
            while batch.len() < 64 << 10 {
                batch.extend(unit(seq));
                seq = seq.wrapping_add(1);
            }
            if s.write_all(&batch).is_err() {
                return;
            }
        }
    }
}

/// Asserts that `r` failed with a message containing `says`, in less than `within`.
#[track_caller]
fn fails<T>(r: Result<T, SqlError>, start: Instant, within: Duration, says: &str) -> SqlError {
    let took = start.elapsed();
    let Err(e) = r else {
        panic!("no error (after {took:?})");
    };
    assert!(e.message.contains(says), "{e}");
    assert!(took < within, "took {took:?}: {e}");
    e
}

/// The column definition of the crafted result sets.
const DEF: &[u8] =
    b"\x03def\x00\x00\x00\x01x\x01x\x0c\x3f\x00\x0b\x00\x00\x00\x08\x81\x00\x00\x00\x00";

#[test]
fn a_packet_over_max_packet_is_refused_before_it_is_read() {
    // One header announcing 16 MiB − 1 with max_packet = 1 MiB: refused at the header, the
    // read buffer never grows.
    let mut c = peer_conn(
        limits(1 << 20, 0),
        0,
        endless(Vec::new(), |seq| {
            let mut p = vec![0xFF, 0xFF, 0xFF, seq.wrapping_add(1)];
            p.resize(4 + MAX_PAYLOAD, b'x');
            p
        }),
    );
    let e = fails(
        c.query("SELECT 1"),
        Instant::now(),
        Duration::from_secs(5),
        "16777215 bytes, more than max_packet = 1048576 bytes",
    );
    assert_eq!(e.kind, ErrKind::Other);
    assert!(c.broken);
    assert!(c.io.buf.len() <= READ_BUF_TEST, "{}", c.io.buf.len());
    assert_eq!(c.query("SELECT 1").unwrap_err().kind, ErrKind::Lost);
}

/// The read buffer's initial size ([`crate::db::io::READ_BUF`]).
const READ_BUF_TEST: usize = crate::db::io::READ_BUF;

#[test]
fn continuation_packets_are_joined_only_up_to_max_packet() {
    // max_packet = 20 MiB: the first 16 MiB packet is read, its continuation (32 MiB in all)
    // refused before it is; the buffer stays within max_packet.
    let mut c = peer_conn(
        limits(20 << 20, 0),
        0,
        endless(Vec::new(), |seq| {
            let mut p = vec![0xFF, 0xFF, 0xFF, seq.wrapping_add(1)];
            p.resize(4 + MAX_PAYLOAD, b'x');
            p
        }),
    );
    let start = Instant::now();
    fails(
        c.query("SELECT 1"),
        start,
        Duration::from_secs(10),
        &format!("{} bytes, more than max_packet", 2 * MAX_PAYLOAD),
    );
    assert!(
        c.io.buf.len() <= (20 << 20) + (4 << 10),
        "{}",
        c.io.buf.len()
    );
    // A skipped packet (a column definition) is bounded the same way.
    let mut head = pk(1, &[1]);
    head.extend_from_slice(&[0xFF, 0xFF, 0xFF, 2]);
    head.resize(head.len() + MAX_PAYLOAD, b'd');
    let mut c = peer_conn(
        limits(20 << 20, 0),
        0,
        endless(head, |seq| {
            let mut p = vec![0xFF, 0xFF, 0xFF, seq.wrapping_add(3)];
            p.resize(4 + MAX_PAYLOAD, b'd');
            p
        }),
    );
    fails(
        c.query("SELECT 1"),
        start,
        Duration::from_secs(10),
        "more than max_packet",
    );
    assert!(
        c.io.buf.len() <= 1 << 20,
        "skipped, not kept: {}",
        c.io.buf.len()
    );
}

#[test]
fn column_counts_above_mysqls_limit_are_a_protocol_error() {
    // 2^40 columns, then definitions for ever.
    let mut head = vec![0xFE];
    head.extend_from_slice(&(1u64 << 40).to_le_bytes());
    let mut c = peer_conn(
        limits(1 << 20, 0),
        CLIENT_DEPRECATE_EOF,
        endless(pk(1, &head), |seq| pk(seq.wrapping_add(2), DEF)),
    );
    let start = Instant::now();
    fails(
        c.query("SELECT 1"),
        start,
        Duration::from_secs(5),
        "announced 1099511627776 columns (MySQL allows at most 4096)",
    );
    let mut c = peer_conn(
        limits(1 << 20, 0),
        CLIENT_DEPRECATE_EOF,
        endless(pk(1, &head), |seq| pk(seq.wrapping_add(2), DEF)),
    );
    fails(
        c.query_rows("SHOW GLOBAL VARIABLES"),
        start,
        Duration::from_secs(5),
        "announced 1099511627776 columns",
    );
    // A prepared statement of 5,000 columns.
    let mut ok = vec![0x00, 1, 0, 0, 0];
    ok.extend_from_slice(&5000u16.to_le_bytes());
    ok.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    let mut c = peer_conn(
        limits(1 << 20, 0),
        CLIENT_DEPRECATE_EOF,
        endless(pk(1, &ok), |seq| pk(seq.wrapping_add(2), DEF)),
    );
    fails(
        c.prepare("SELECT 1"),
        start,
        Duration::from_secs(5),
        "5000 columns for a statement",
    );
}

/// A one-column result set's head (CLIENT_DEPRECATE_EOF), rows from sequence id 3.
fn one_column() -> Vec<u8> {
    let mut b = pk(1, &[1]);
    b.extend(pk(2, DEF));
    b
}

#[test]
fn admin_queries_collect_at_most_max_admin_rows_and_max_packet_bytes() {
    let start = Instant::now();
    // Endless small rows: the row cap.
    let mut c = peer_conn(
        limits(64 << 20, 0),
        CLIENT_DEPRECATE_EOF,
        endless(one_column(), |seq| pk(seq.wrapping_add(3), b"\x05value")),
    );
    let e = fails(
        c.query_rows("SHOW GLOBAL VARIABLES"),
        start,
        Duration::from_secs(20),
        "the answer to `SHOW GLOBAL VARIABLES` has more than 100000 rows",
    );
    assert_eq!(e.kind, ErrKind::Other);
    assert!(c.broken, "the rest of the answer is unread");
    // Endless rows of 60 KiB: the byte cap (64 KiB × 1 MiB … here 1 MiB) long before the row cap.
    let mut row = vec![0xFC, 0x60, 0xEA];
    row.resize(3 + 60_000, b'v');
    let mut c = peer_conn(
        limits(1 << 20, 0),
        CLIENT_DEPRECATE_EOF,
        endless(one_column(), move |seq| pk(seq.wrapping_add(3), &row)),
    );
    fails(
        c.query_rows("SELECT VERSION()"),
        start,
        Duration::from_secs(20),
        "or 1048576 bytes (max_packet)",
    );
}

#[test]
fn further_results_of_an_admin_query_are_read_so_the_connection_stays_in_step() {
    let mut b = one_column();
    b.extend(pk(3, b"\x01a"));
    // End of the first result: SERVER_MORE_RESULTS_EXISTS; then an OK.
    b.extend(pk(4, &[0xFE, 0, 0, 0x0A, 0, 0, 0]));
    b.extend(pk(5, &[0x00, 0, 0, 0x02, 0, 0, 0]));
    let next = pk(1, &[0x00, 0, 0, 0x02, 0, 0, 0]);
    let mut c = peer_conn(
        limits(1 << 20, 300),
        CLIENT_DEPRECATE_EOF,
        replies(vec![b, next]),
    );
    assert_eq!(
        c.query_rows("CALL p()").unwrap(),
        vec![vec![Some("a".to_string())]]
    );
    assert_eq!(c.query("DO 1").unwrap(), Done::default());
    assert!(!c.broken);
}

#[test]
fn a_text_row_announcing_more_than_it_holds_is_an_error_not_a_panic() {
    // EOF style, where a 9-byte packet starting with 0xFE is a row: a value length of
    // 2^64 − 1 (an overflow if added unchecked).
    let mut b = one_column();
    b.extend(pk(3, &[0xFE, 0, 0, 2, 0]));
    b.extend(pk(
        4,
        &[0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
    ));
    b.extend(pk(5, &[0xFE, 0, 0, 2, 0]));
    let mut c = peer_conn(limits(1 << 20, 300), 0, answers(b.clone()));
    fails(
        c.query_rows("SHOW GLOBAL VARIABLES"),
        Instant::now(),
        Duration::from_secs(5),
        "bad text row",
    );
    let mut c = peer_conn(limits(1 << 20, 300), 0, answers(b));
    fails(
        c.query_i64("SELECT 1"),
        Instant::now(),
        Duration::from_secs(5),
        "not a text value",
    );
}

#[test]
fn endless_multi_results_end_at_max_results() {
    // OK packets with SERVER_MORE_RESULTS_EXISTS for ever.
    let mut c = peer_conn(
        limits(1 << 20, 0),
        CLIENT_DEPRECATE_EOF,
        endless(Vec::new(), |seq| {
            pk(seq.wrapping_add(1), &[0x00, 0, 0, 0x0A, 0, 0, 0])
        }),
    );
    let e = fails(
        c.query("CALL p()"),
        Instant::now(),
        Duration::from_secs(60),
        "more than 1048576 results",
    );
    assert_eq!(e.kind, ErrKind::Other);
}

#[test]
fn a_silent_server_fails_the_command_at_query_timeout_and_the_connection_is_closed() {
    for what in ["query", "query_i64", "query_rows", "prepare", "execute"] {
        let mut c = peer_conn(limits(1 << 20, 300), 0, |mut s| drain(&mut s));
        c.stmts.push(Stmt { id: 1, params: 0 });
        let start = Instant::now();
        let r = match what {
            "query" => c.query("SELECT 1").map(|_| ()),
            "query_i64" => c.query_i64("SELECT 1").map(|_| ()),
            "query_rows" => c.query_rows("SELECT 1").map(|_| ()),
            "prepare" => c.prepare("SELECT 1").map(|_| ()),
            _ => c.execute(0, &[]).map(|_| ()),
        };
        let e = fails(
            r,
            start,
            Duration::from_secs(5),
            "MySQL server at peer: the server did not answer within query_timeout = 0 s",
        );
        assert!(
            start.elapsed() >= Duration::from_millis(250),
            "{what}: {:?}",
            start.elapsed()
        );
        // Not `Lost` (the engine would reconnect to a server that hangs again), no code
        // (never in ignore_errors unless `all`).
        assert_eq!((e.code.as_str(), e.kind), ("", ErrKind::Other), "{what}");
        assert!(c.broken, "{what}");
        assert_eq!(c.query("SELECT 1").unwrap_err().kind, ErrKind::Lost);
    }
}

#[test]
fn a_trickle_or_a_header_promising_more_fails_within_twice_the_timeout() {
    // A row stream at one byte per 20 ms: every read succeeds, the deadline ends it.
    let mut c = peer_conn(limits(1 << 20, 300), CLIENT_DEPRECATE_EOF, |mut s| {
        let mut b = one_column();
        b.extend((0..10_000u32).flat_map(|i| pk((i % 250 + 3) as u8, b"\x01x")));
        for byte in b {
            if s.write_all(&[byte]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let start = Instant::now();
    fails(
        c.query("SELECT 1"),
        start,
        Duration::from_secs(5),
        "did not answer within query_timeout",
    );
    // 1,000 bytes announced, 10 sent.
    let mut b = vec![0xE8, 0x03, 0x00, 0x01];
    b.extend_from_slice(b"0123456789");
    let mut c = peer_conn(limits(1 << 20, 300), 0, answers(b));
    let start = Instant::now();
    fails(
        c.query("SELECT 1"),
        start,
        Duration::from_secs(5),
        "did not answer within query_timeout",
    );
}

#[test]
fn bytes_before_a_command_are_a_protocol_error_but_a_killed_connections_error_is_reported() {
    let mut b = pk(1, &[0x00, 0, 0, 2, 0, 0, 0]);
    b.extend_from_slice(b"\x01\x02\x03");
    let mut c = peer_conn(limits(1 << 20, 300), 0, answers(b));
    c.query("DO 1").unwrap();
    // Wait until the garbage is in (it came with the OK, so it is read with it).
    fails(
        c.query("DO 1"),
        Instant::now(),
        Duration::from_secs(5),
        "sent 3 bytes that answer no command",
    );
    // An error packet sent on its own (MariaDB's KILL) is the next command's error.
    let mut b = pk(1, &[0x00, 0, 0, 2, 0, 0, 0]);
    let mut err = vec![0xFF, 0x87, 0x07, b'#'];
    err.extend_from_slice(b"70100Connection was killed");
    b.extend(pk(0, &err));
    let mut c = peer_conn(limits(1 << 20, 300), 0, answers(b));
    c.query("DO 1").unwrap();
    let e = c.query("DO 1").unwrap_err();
    assert_eq!((e.code.as_str(), e.kind), ("1927", ErrKind::Lost), "{e}");
}

/// A fake server running `script` for each connection; its port.
fn tcp_server(script: fn(std::net::TcpStream)) -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || script(s));
        }
    });
    port
}

fn tcp_silence(s: &mut std::net::TcpStream) {
    let mut buf = [0u8; 4096];
    while matches!(std::io::Read::read(s, &mut buf), Ok(n) if n > 0) {}
}

const FAKE_CAPS: u32 = CLIENT_PROTOCOL_41
    | CLIENT_SECURE_CONNECTION
    | CLIENT_PLUGIN_AUTH
    | CLIENT_DEPRECATE_EOF
    | CLIENT_CONNECT_WITH_DB;

/// Opens a connection to `port` with connect_timeout = 1 s; the error.
fn open_error(port: u16) -> (SqlError, Duration) {
    let t = target(&format!(
        "hosts = [\"127.0.0.1:{port}\"]\nconnect_timeout = 1"
    ));
    let start = Instant::now();
    match WireConnection::open(&t, 0, WireOptions::default()) {
        Err(WireError::Sql(e)) => (e, start.elapsed()),
        Err(WireError::Unsupported(m)) => panic!("unsupported: {m}"),
        Ok(_) => panic!("connected"),
    }
}

#[test]
fn the_handshake_has_one_deadline_and_says_what_went_wrong() {
    // A partial greeting, then silence: after connect_timeout, and the message says so.
    let (e, took) = open_error(tcp_server(|mut s| {
        let g = pk(0, &greeting(FAKE_CAPS, "mysql_native_password"));
        if std::io::Write::write_all(&mut s, &g[..20]).is_ok() {
            tcp_silence(&mut s);
        }
    }));
    assert!(
        e.message.contains(
            "sent 20 bytes of its greeting but not the rest within connect_timeout = 1 s"
        ),
        "{e}"
    );
    assert_eq!(e.kind, ErrKind::Unreachable);
    assert!(took < Duration::from_secs(4), "{took:?}");
    // The greeting at one byte per 100 ms: the overall deadline, not a timeout per read.
    let (e, took) = open_error(tcp_server(|mut s| {
        for b in pk(0, &greeting(FAKE_CAPS, "mysql_native_password")) {
            if std::io::Write::write_all(&mut s, &[b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        tcp_silence(&mut s);
    }));
    assert!(
        e.message
            .contains("of its greeting but not the rest within connect_timeout = 1 s"),
        "{e}"
    );
    assert!(took < Duration::from_secs(4), "{took:?}");
    // A greeting, then nothing after the login.
    let (e, took) = open_error(tcp_server(|mut s| {
        let g = pk(0, &greeting(FAKE_CAPS, "mysql_native_password"));
        if std::io::Write::write_all(&mut s, &g).is_ok() {
            tcp_silence(&mut s);
        }
    }));
    assert!(
        e.message
            .contains("did not finish the authentication within connect_timeout = 1 s"),
        "{e}"
    );
    assert!(took < Duration::from_secs(4), "{took:?}");
    // Endless 16 MiB packets as a greeting: refused at the first header.
    let (e, took) = open_error(tcp_server(|mut s| {
        let mut p = vec![0xFF, 0xFF, 0xFF, 0];
        p.resize(4 + MAX_PAYLOAD, b'g');
        while std::io::Write::write_all(&mut s, &p).is_ok() {
            p[3] = p[3].wrapping_add(1);
        }
    }));
    assert!(
        e.message
            .contains("sent a handshake packet of 16777215 bytes"),
        "{e}"
    );
    assert!(took < Duration::from_secs(4), "{took:?}");
}

#[test]
fn an_endless_auth_switch_loop_is_an_error_naming_the_plugins_not_a_fallback() {
    let (e, took) = open_error(tcp_server(|mut s| {
        let g = pk(0, &greeting(FAKE_CAPS, "mysql_native_password"));
        if std::io::Write::write_all(&mut s, &g).is_err() {
            return;
        }
        let mut seq = 2u8;
        let mut switch = vec![0xFE];
        switch.extend_from_slice(b"caching_sha2_password\0abcdefghijklmnopqrst\0");
        loop {
            let mut h = [0u8; 4];
            if std::io::Read::read_exact(&mut s, &mut h).is_err() {
                return;
            }
            let len = usize::from(h[0]) | usize::from(h[1]) << 8;
            let mut p = vec![0; len];
            if std::io::Read::read_exact(&mut s, &mut p).is_err()
                || std::io::Write::write_all(&mut s, &pk(seq, &switch)).is_err()
            {
                return;
            }
            seq = seq.wrapping_add(2);
        }
    }));
    assert!(
        e.message.contains("neither accepted nor refused the login after 4 authentication rounds (auth plugins used: mysql_native_password, caching_sha2_password)"),
        "{e}"
    );
    assert_eq!(e.kind, ErrKind::Other);
    assert!(took < Duration::from_secs(4), "{took:?}");
}

// ---------------------------------------------------------------------------------------------
// targets (the tests against the real server are in `live`)

fn target(extra: &str) -> Target {
    target_as("root", extra)
}

fn target_as(user: &str, extra: &str) -> Target {
    crate::db::io::testing::target("mysql", user, extra)
}

#[test]
fn binary_rows_decode_to_mysql_text_and_short_rows_are_errors() {
    use super::super::shared::UNSIGNED_FLAG;
    const NEWDECIMAL: u8 = 0xF6;
    let col = |ty: u8, flags: u16, decimals: u8| ColumnMeta {
        ty,
        flags,
        decimals,
        length: 0,
    };
    let meta = [
        col(TYPE_TINY, 0, 0),
        col(TYPE_LONGLONG, UNSIGNED_FLAG, 0),
        col(TYPE_LONG, 0, 0),
        col(TYPE_DATETIME, 0, 3),
        col(TYPE_TIME, 0, 0),
        col(NEWDECIMAL, 0, 2),
        col(TYPE_DATE, 0, 0),
        col(TYPE_BIT, UNSIGNED_FLAG, 0),
    ];
    // Columns 2 (LONG) is NULL: bit 2 + 2 of the bitmap.
    let mut row = vec![0x00, 0b0001_0000, 0x00];
    row.push(0x80); // -128
    row.extend_from_slice(&u64::MAX.to_le_bytes());
    row.extend_from_slice(&[11, 0xE8, 0x07, 2, 29, 23, 59, 58]);
    row.extend_from_slice(&125_000u32.to_le_bytes());
    row.extend_from_slice(&[8, 1, 34, 0, 0, 0, 22, 59, 59]); // -838:59:59
    row.extend_from_slice(b"\x05-1.50");
    row.push(0); // 0000-00-00
    row.extend_from_slice(b"\x02\x01\x01");
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        binary_row(&meta, &row).unwrap(),
        [
            s("-128"),
            s("18446744073709551615"),
            None,
            s("2024-02-29 23:59:58.125"),
            s("-838:59:59"),
            s("-1.50"),
            s("0000-00-00"),
            s("257"),
        ]
    );
    for cut in 0..row.len() {
        assert!(binary_row(&meta, &row[..cut]).is_err(), "cut at {cut}");
    }
    let e = binary_row(&[col(0x11, 0, 0)], &[0, 0, 1]).unwrap_err();
    assert!(e.contains("0x11"), "{e}");
    // The text protocol: NULL and BIT as a number.
    let text = text_row(&meta[6..], b"\xFB\x02\x00\x05").unwrap();
    assert_eq!(text, [None, s("5")]);
    assert!(text_row(&meta[6..], b"\xFB\x05ab").is_err());
}

mod live;
