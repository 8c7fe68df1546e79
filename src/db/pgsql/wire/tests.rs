//! The codec on its own (byte fixtures, a peer socket fed with crafted messages, a TCP peer
//! that plays the server's side of the startup) and the client against the real local
//! PostgreSQL (skipped with a note when none runs, unless `CI` is set).

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};

use super::*;
use crate::db::MAX_ADMIN_ROWS;

// ---------------------------------------------------------------------------------------------
// codec

/// One backend message.
fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    out.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// An ErrorResponse / NoticeResponse body.
fn error_body(severity: &str, code: &str, message: &str, detail: Option<&str>) -> Vec<u8> {
    let mut b = Vec::new();
    for (f, v) in [
        (b'S', severity),
        (b'V', severity),
        (b'C', code),
        (b'M', message),
    ] {
        b.push(f);
        b.extend_from_slice(v.as_bytes());
        b.push(0);
    }
    if let Some(d) = detail {
        b.push(b'D');
        b.extend_from_slice(d.as_bytes());
        b.push(0);
    }
    b.push(0);
    b
}

/// A DataRow of text values (`None`: NULL).
fn data_row(values: &[Option<&str>]) -> Vec<u8> {
    let mut b = (values.len() as i16).to_be_bytes().to_vec();
    for v in values {
        match v {
            None => b.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(v) => {
                b.extend_from_slice(&(v.len() as i32).to_be_bytes());
                b.extend_from_slice(v.as_bytes());
            }
        }
    }
    msg(b'D', &b)
}

fn ready() -> Vec<u8> {
    msg(b'Z', b"I")
}

#[test]
fn error_fields_parse_and_map_to_what_the_engine_does() {
    let e = parse_error(&error_body(
        "ERROR",
        "23505",
        "duplicate key value violates unique constraint \"u\"",
        Some("Key (k)=(5) already exists."),
    ));
    assert!(!e.fatal());
    let s = e.into_sql(Phase::Use);
    assert_eq!((s.code.as_str(), s.kind), ("23505", ErrKind::Other));
    assert_eq!(
        s.message,
        "duplicate key value violates unique constraint \"u\": Key (k)=(5) already exists."
    );
    for (code, kind) in [
        ("42P01", ErrKind::NoTable),
        ("42P07", ErrKind::TableExists),
        ("40P01", ErrKind::Other),
    ] {
        let e = parse_error(&error_body("ERROR", code, "m", None));
        assert_eq!(e.into_sql(Phase::Use).kind, kind, "{code}");
    }
    // A FATAL error in use is a lost connection whatever its code; at connect time it keeps
    // the code's meaning (a wrong password does not heal, too many connections may).
    let term = parse_error(&error_body(
        "FATAL",
        "57P01",
        "terminating connection due to administrator command",
        None,
    ));
    assert!(term.fatal());
    let s = term.into_sql(Phase::Use);
    assert_eq!((s.code.as_str(), s.kind), ("57P01", ErrKind::Lost));
    assert!(
        s.message.starts_with("connection closed: terminating"),
        "{s}"
    );
    let idle = parse_error(&error_body("FATAL", "25P03", "idle timeout", None));
    assert_eq!(idle.into_sql(Phase::Use).kind, ErrKind::Lost);
    for (code, kind) in [
        ("28P01", ErrKind::Other),
        ("3D000", ErrKind::Other),
        ("53300", ErrKind::Unreachable),
        ("57P03", ErrKind::Unreachable),
    ] {
        let e = parse_error(&error_body("FATAL", code, "m", None));
        assert_eq!(e.into_sql(Phase::Connect).kind, kind, "{code}");
    }
    // Servers before 9.6 send only the localized severity; a truncated body is no panic.
    let old = parse_error(b"SFATAL\0C28P01\0Mno\0\0");
    assert_eq!(
        (
            old.severity.as_str(),
            old.code.as_str(),
            old.message.as_str()
        ),
        ("FATAL", "28P01", "no")
    );
    assert_eq!(
        parse_error(b"Mcut"),
        ServerError {
            message: "cut".into(),
            ..ServerError::default()
        }
    );
}

#[test]
fn tags_rows_and_parameter_types_parse() {
    assert_eq!(tag_count(b"INSERT 0 5\0"), 5);
    assert_eq!(tag_count(b"UPDATE 3\0"), 3);
    assert_eq!(tag_count(b"DELETE 0\0"), 0);
    assert_eq!(tag_count(b"SELECT 100\0"), 100);
    assert_eq!(tag_count(b"COPY 50000\0"), 50_000);
    assert_eq!(tag_count(b"BEGIN\0"), 0);
    assert_eq!(tag_count(b""), 0);

    let row = data_row(&[Some("42"), None, Some("")]);
    assert_eq!(
        row_values(&row[5..], usize::MAX).unwrap(),
        vec![Some("42".to_string()), None, Some(String::new())]
    );
    assert_eq!(row_values(&row[5..], 1).unwrap(), vec![Some("42".into())]);
    assert!(
        row_values(&row[5..row.len() - 1], usize::MAX).is_none(),
        "short"
    );
    assert!(row_values(&[0], 1).is_none());

    let mut pd = 3i16.to_be_bytes().to_vec();
    for oid in [23u32, 1042, 999_999] {
        pd.extend_from_slice(&oid.to_be_bytes());
    }
    assert_eq!(
        parameter_types(&pd).unwrap(),
        [Type::INT4, Type::BPCHAR, Type::UNKNOWN]
    );
    assert!(parameter_types(&pd[..7]).is_none());
}

#[test]
fn bind_encodes_integers_in_binary_and_other_types_as_text() {
    let mut out = BytesMut::new();
    put_bind(
        &mut out,
        "sbs0",
        &[Type::INT4, Type::BPCHAR, Type::NUMERIC, Type::INT8],
        &[P::Int(7), P::Str("ab"), P::Int(-5), P::Int(1 << 40)],
    )
    .unwrap();
    let mut want = vec![b'B'];
    let mut body = b"\0sbs0\0".to_vec();
    body.extend_from_slice(&[0, 4, 0, 1, 0, 1, 0, 0, 0, 1]); // formats: binary except NUMERIC
    body.extend_from_slice(&[0, 4]);
    body.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 7]);
    body.extend_from_slice(&[0, 0, 0, 2, b'a', b'b']);
    body.extend_from_slice(&[0, 0, 0, 2, b'-', b'5']);
    body.extend_from_slice(&[0, 0, 0, 8]);
    body.extend_from_slice(&(1i64 << 40).to_be_bytes());
    body.extend_from_slice(&[0, 0]); // results in text
    want.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
    want.extend_from_slice(&body);
    assert_eq!(&out[..], &want[..]);

    let mut out = BytesMut::new();
    let e = put_bind(&mut out, "s", &[Type::INT4], &[P::Int(1 << 40)]).unwrap_err();
    assert!(e.contains("does not fit the INTEGER placeholder"), "{e}");
    let e = put_bind(&mut out, "s", &[Type::INT4], &[P::Str("x")]).unwrap_err();
    assert!(e.contains("text `x` bound to a int4 placeholder"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// reading answers from a peer socket fed with crafted messages

/// A connection whose peer sends `bytes` (then closes); a 64-byte read buffer, so messages
/// straddle reads and the buffer grows.
fn fed(bytes: Vec<u8>) -> WireConnection {
    let (a, mut b) = UnixStream::pair().unwrap();
    std::thread::spawn(move || {
        let _ = b.write_all(&bytes);
        // End of the answer, but keep reading what the client sends (CopyFail, Terminate)
        // until it is gone.
        let _ = b.shutdown(std::net::Shutdown::Write);
        let _ = std::io::copy(&mut b, &mut std::io::sink());
    });
    WireConnection {
        // A tiny buffer, so that answers cross refills.
        io: {
            let mut r = Reader::new(Stream::Unix(a), Limits::default().max_packet);
            r.buf = vec![0; 64];
            r
        },
        limits: Limits::default(),
        phase: Phase::Use,
        out: BytesMut::new(),
        stmts: Vec::new(),
        broken: false,
        txn_status: b'I',
        cancel: None,
    }
}

#[test]
fn rows_are_skipped_by_length_and_asynchronous_messages_anywhere_are_ignored() {
    let long = "x".repeat(5000);
    let mut b = msg(b'2', b"");
    // A RowDescription of two columns: each a C string name and 18 bytes of attributes.
    let mut description = vec![0, 2];
    for name in ["name", "Value"] {
        description.extend(name.as_bytes());
        description.push(0);
        description.extend([7; 18]);
    }
    b.extend(msg(b'T', &description));
    b.extend(data_row(&[None, Some("a")]));
    b.extend(msg(b'N', &error_body("NOTICE", "00000", "hi", None)));
    for i in 0..300 {
        b.extend(data_row(&[Some(&i.to_string()), Some(&long[..i * 10])]));
    }
    b.extend(msg(b'S', b"application_name\0x\0"));
    b.extend(msg(b'A', b"\0\0\0\x01chan\0payload\0"));
    b.extend(msg(b'C', b"SELECT 301\0"));
    b.extend(ready());
    b.extend(msg(b'C', b"UPDATE 2\0"));
    b.extend(ready());

    let mut c = fed(b.clone());
    let a = c.answer(Want::Drain).unwrap();
    assert_eq!(
        a.done,
        Done {
            rows: true,
            affected: 301
        }
    );
    assert!(a.rows.is_empty() && a.first.is_none());
    // In step for the next answer.
    let a = c.answer(Want::Drain).unwrap();
    assert_eq!(
        a.done,
        Done {
            rows: false,
            affected: 2
        }
    );
    assert_eq!(c.io.pos, c.io.end, "everything consumed");
    assert!(!c.broken);

    // The first value of the first row (NULL here), and every row.
    let mut c = fed(b.clone());
    let a = c.answer(Want::First).unwrap();
    assert_eq!((a.first, a.done.affected), (None, 301));
    let mut c = fed(b.clone());
    let a = c.answer(Want::Rows).unwrap();
    assert_eq!(a.rows.len(), 301);
    assert_eq!(a.columns, ["name", "Value"]);
    assert_eq!(a.rows[0], [None, Some("a".to_string())]);
    assert_eq!(a.rows[300][1].as_deref().map(str::len), Some(2990));
    // A RowDescription cut short is a protocol error, not a guess at the names.
    let mut short = msg(b'T', &[0, 1, b'a', 0, 1, 2]);
    short.extend(ready());
    let e = fed(short).answer(Want::Rows).unwrap_err();
    assert!(e.message.contains("malformed RowDescription"), "{e:?}");
}

#[test]
fn an_error_is_read_to_ready_for_query_and_the_connection_stays_usable() {
    let mut b = msg(b'2', b"");
    b.extend(data_row(&[Some("1")]));
    b.extend(msg(
        b'E',
        &error_body("ERROR", "40P01", "deadlock detected", None),
    ));
    b.extend(ready());
    b.extend(msg(b'C', b"ROLLBACK\0"));
    b.extend(ready());
    let mut c = fed(b);
    let e = c.answer(Want::Drain).unwrap_err();
    assert_eq!((e.code.as_str(), e.kind), ("40P01", ErrKind::Other));
    assert!(!c.broken);
    assert_eq!(c.answer(Want::Drain).unwrap().done, Done::default());
}

#[test]
fn fatal_errors_closed_sockets_and_garbage_break_the_connection() {
    // pg_terminate_backend: FATAL 57P01, then the server closes the socket.
    let mut c = fed(msg(
        b'E',
        &error_body(
            "FATAL",
            "57P01",
            "terminating connection due to administrator command",
            None,
        ),
    ));
    let e = c.answer(Want::Drain).unwrap_err();
    assert_eq!((e.code.as_str(), e.kind), ("57P01", ErrKind::Lost));
    assert!(c.broken);
    let e = c.query("SELECT 1").unwrap_err();
    assert_eq!(
        (e.message.as_str(), e.kind),
        ("connection closed", ErrKind::Lost)
    );

    // The socket closing mid-message.
    let mut c = fed(data_row(&[Some("12345")])[..8].to_vec());
    let e = c.answer(Want::Drain).unwrap_err();
    assert_eq!(e.kind, ErrKind::Lost, "{e}");
    assert!(
        e.message.contains("the server closed the connection"),
        "{e}"
    );

    // An unknown message type, and a length below 4: out of step.
    for bytes in [msg(b'?', b""), b"C\0\0\0\x02".to_vec()] {
        let mut c = fed(bytes);
        let e = c.answer(Want::Drain).unwrap_err();
        assert!(e.message.contains("protocol error"), "{e}");
        assert!(c.broken);
    }
}

#[test]
fn copy_in_outside_load_is_refused_and_the_answer_goes_on() {
    let mut b = msg(b'G', &[1, 0, 0]);
    b.extend(msg(
        b'E',
        &error_body("ERROR", "57014", "COPY from stdin failed", None),
    ));
    b.extend(ready());
    let mut c = fed(b);
    let e = c.answer(Want::Drain).unwrap_err();
    assert_eq!(e.code, "57014");
    assert!(!c.broken);
}

// ---------------------------------------------------------------------------------------------
// the startup against a TCP peer playing the server

/// Reads one frontend message (`tag` 0: a startup-shaped message without a type byte).
fn read_frontend(s: &mut TcpStream, tagged: bool) -> (u8, Vec<u8>) {
    let mut tag = [0u8; 1];
    if tagged {
        s.read_exact(&mut tag).unwrap();
    }
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut body = vec![0; i32::from_be_bytes(len) as usize - 4];
    s.read_exact(&mut body).unwrap();
    (tag[0], body)
}

fn auth(code: i32, data: &[u8]) -> Vec<u8> {
    let mut b = code.to_be_bytes().to_vec();
    b.extend_from_slice(data);
    msg(b'R', &b)
}

/// A target for a peer on `port` (password and TLS mode as given).
fn peer_target(port: u16, extra: &str) -> Target {
    let timeout = if extra.contains("connect_timeout") {
        ""
    } else {
        "connect_timeout = 5\n"
    };
    target_as(
        "alice",
        &format!("hosts = [\"127.0.0.1:{port}\"]\ndatabase = \"db\"\n{timeout}{extra}"),
    )
}

/// Runs `server` on one accepted connection while the client opens `t`.
fn with_peer(
    extra: &str,
    server: impl FnOnce(TcpStream) + Send + 'static,
) -> Result<WireConnection, WireError> {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let peer = std::thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        server(s);
    });
    let r = WireConnection::open(&peer_target(port, extra), 0);
    peer.join().unwrap();
    r
}

#[test]
fn startup_sends_the_parameters_and_a_cleartext_or_md5_password() {
    for (code, extra) in [(AUTH_CLEARTEXT, &[][..]), (AUTH_MD5, &[1, 2, 3, 4][..])] {
        let data = extra.to_vec();
        let c = with_peer("password = \"s3cret\"\nssl = \"disabled\"", move |mut s| {
            let (_, startup) = read_frontend(&mut s, false);
            assert_eq!(&startup[..4], &[0, 3, 0, 0], "protocol 3.0");
            let text = String::from_utf8_lossy(&startup[4..]).into_owned();
            for kv in [
                "user\0alice\0",
                "database\0db\0",
                "application_name\0sbsuite\0",
            ] {
                assert!(text.contains(kv), "{kv:?} in {text:?}");
            }
            s.write_all(&auth(code, &data)).unwrap();
            let (tag, pw) = read_frontend(&mut s, true);
            assert_eq!(tag, b'p');
            let expected = if code == AUTH_MD5 {
                md5_hash(b"alice", b"s3cret", [1, 2, 3, 4])
            } else {
                "s3cret".to_string()
            };
            assert_eq!(pw, [expected.as_bytes(), &[0]].concat());
            let mut rest = auth(AUTH_OK, &[]);
            rest.extend(msg(b'S', b"server_version\x0015.0\0"));
            rest.extend(msg(b'K', &[0, 0, 0, 1, 0, 0, 0, 2]));
            rest.extend(msg(b'N', &error_body("NOTICE", "00000", "hi", None)));
            rest.extend(ready());
            s.write_all(&rest).unwrap();
        });
        let c = c.unwrap_or_else(|e| panic!("{e:?}"));
        assert!(!c.broken);
    }
}

#[test]
fn tls_request_refused_is_plain_for_prefer_and_an_error_otherwise_and_accepted_starts_tls() {
    for mode in ["preferred", "required", "verify_ca", "verify_identity"] {
        for answer in [b'N', b'S'] {
            let r = with_peer(&format!("ssl = \"{mode}\""), move |mut s| {
                let mut req = [0u8; 8];
                s.read_exact(&mut req).unwrap();
                assert_eq!(req, [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f], "SSLRequest");
                s.write_all(&[answer]).unwrap();
                if answer == b'N' && mode == "preferred" {
                    read_frontend(&mut s, false);
                    let mut rest = auth(AUTH_OK, &[]);
                    rest.extend(ready());
                    s.write_all(&rest).unwrap();
                } else if answer == b'S' {
                    // A ClientHello (a TLS handshake record) follows, answered with garbage;
                    // the verify modes without a CA file stop before it.
                    let mut hello = [0u8; 1];
                    if s.read_exact(&mut hello).is_ok() {
                        assert_eq!(hello[0], 0x16, "TLS handshake record");
                        let _ = s.write_all(b"not TLS at all");
                    }
                }
            });
            match (answer, mode, r) {
                (b'N', "preferred", Ok(c)) => assert!(matches!(c.io.stream, Stream::Tcp(_))),
                (b'N', _, Err(WireError::Sql(e))) => {
                    assert_eq!(
                        e.message,
                        "error performing TLS handshake: server does not support TLS"
                    );
                    assert_eq!(e.kind, ErrKind::Other);
                }
                (b'S', _, Err(WireError::Sql(e))) => {
                    assert!(
                        e.message.starts_with("error performing TLS handshake: ")
                            || (mode.starts_with("verify") && e.message.contains("ssl_ca")),
                        "{mode}: {e}"
                    );
                    assert_eq!(e.kind, ErrKind::Other, "{mode}: {e}");
                }
                (_, _, r) => panic!("{mode} {answer}: {:?}", r.map(|_| ())),
            }
        }
    }
}

#[test]
fn other_auth_methods_fall_back_and_a_missing_password_says_so() {
    let gss = with_peer("ssl = \"disabled\"", |mut s| {
        read_frontend(&mut s, false);
        s.write_all(&auth(7, &[])).unwrap();
    });
    assert!(matches!(gss, Err(WireError::Unsupported(m)) if m.contains("method 7")));
    let plus = with_peer("ssl = \"disabled\"\npassword = \"pw\"", |mut s| {
        read_frontend(&mut s, false);
        s.write_all(&auth(AUTH_SASL, b"SCRAM-SHA-256-PLUS\0\0"))
            .unwrap();
    });
    assert!(matches!(plus, Err(WireError::Unsupported(m)) if m.contains("SCRAM-SHA-256-PLUS")));
    let nopw = with_peer("ssl = \"disabled\"", |mut s| {
        read_frontend(&mut s, false);
        s.write_all(&auth(AUTH_MD5, &[1, 2, 3, 4])).unwrap();
    });
    match nopw {
        Err(WireError::Sql(e)) => assert!(e.message.contains("set [target] password"), "{e}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
    // The server closing the socket during the startup: unreachable (try again), not lost.
    let closed = with_peer("ssl = \"disabled\"", |mut s| {
        read_frontend(&mut s, false);
    });
    match closed {
        Err(WireError::Sql(e)) => assert_eq!(e.kind, ErrKind::Unreachable, "{e}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

// ---------------------------------------------------------------------------------------------
// against the real server

const TCP: &str = "hosts = [\"127.0.0.1:5432\"]\nssl = \"disabled\"";
const SOCKET: &str = "socket = \"/var/run/postgresql\"";

fn target(extra: &str) -> Target {
    target_as("postgres", extra)
}

fn target_as(user: &str, extra: &str) -> Target {
    crate::db::io::testing::target("pgsql", user, extra)
}

/// Whether a server runs locally (else the test says why and passes, outside CI).
fn server() -> bool {
    crate::db::io::testing::server("127.0.0.1:5432", "PostgreSQL")
}

fn connect(extra: &str) -> WireConnection {
    match WireConnection::open(&target(extra), 0) {
        Ok(c) => c,
        Err(WireError::Sql(e)) => panic!("{e}"),
        Err(WireError::Unsupported(m)) => panic!("unsupported: {m}"),
    }
}

/// A fresh database `sbsuite_pgw_<name>`, dropped by the guard.
struct Db(String);

impl Db {
    fn new(name: &str) -> Db {
        let db = format!("sbsuite_pgw_{name}");
        let mut c = connect(&format!("{TCP}\ndatabase = \"postgres\""));
        c.query(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
            .unwrap();
        c.query(&format!("CREATE DATABASE {db}")).unwrap();
        Db(db)
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let mut c = connect(&format!("{TCP}\ndatabase = \"postgres\""));
        let _ = c.query(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.0));
    }
}

#[test]
fn live_statements_over_tcp_and_socket() {
    if !server() {
        return;
    }
    let db = Db::new("stmts");
    let read = |affected| Done {
        rows: true,
        affected,
    };
    for endpoint in [TCP, SOCKET] {
        let mut c = connect(&format!("{endpoint}\ndatabase = \"{}\"", db.0));
        c.query("DROP TABLE IF EXISTS t").unwrap();
        assert_eq!(
            c.query("CREATE TABLE t (id INTEGER PRIMARY KEY, c CHAR(20), big BIGINT, num NUMERIC)")
                .unwrap(),
            Done::default()
        );
        assert_eq!(
            c.query("INSERT INTO t VALUES (1, 'a', 1, 1), (2, 'b', 2, 2), (3, NULL, 3, 3)")
                .unwrap(),
            Done {
                rows: false,
                affected: 3
            }
        );
        assert_eq!(c.query("SELECT * FROM t").unwrap(), read(3), "{endpoint}");
        assert_eq!(c.query("SELECT * FROM t WHERE id > 9").unwrap(), read(0));
        assert_eq!(c.query("").unwrap(), Done::default(), "empty query");
        assert_eq!(c.query_i64("SELECT COUNT(*) FROM t").unwrap(), Some(3));
        assert_eq!(c.query_i64("SELECT c FROM t WHERE id = 3").unwrap(), None);
        assert_eq!(c.query_i64("SELECT id FROM t WHERE id > 9").unwrap(), None);
        let e = c.query_i64("SELECT 'x'").unwrap_err();
        assert!(e.message.contains("returned `x`, not an integer"), "{e}");
        assert_eq!(
            c.query_rows("SELECT id, c FROM t ORDER BY id").unwrap(),
            [
                [Some("1".to_string()), Some(format!("{:20}", "a"))],
                [Some("2".to_string()), Some(format!("{:20}", "b"))],
                [Some("3".to_string()), None],
            ]
        );
        assert!(
            super::super::shared::max_connections_of(&mut c)
                .unwrap()
                .is_some_and(|m| m > 0)
        );
        // Notices, ParameterStatus (a changed reported setting) and several statements.
        c.query("DO $$ BEGIN RAISE NOTICE 'hello'; END $$").unwrap();
        c.query("SET application_name = 'sbsuite_pgw'").unwrap();
        let multi = c
            .query("SELECT 1; UPDATE t SET c = 'z' WHERE id = 1; UPDATE t SET c = 'a' WHERE id = 1")
            .unwrap();
        assert_eq!(multi, read(1));

        // Prepared: integers and strings, reads and changed-row counts.
        let range = c
            .prepare("SELECT id, c FROM t WHERE id BETWEEN ? AND ?")
            .unwrap();
        assert_eq!(c.execute(range, &[P::Int(1), P::Int(3)]).unwrap(), read(3));
        assert_eq!(c.execute(range, &[P::Int(5), P::Int(9)]).unwrap(), read(0));
        let by_c = c.prepare("SELECT COUNT(*) FROM t WHERE c = ?").unwrap();
        assert_eq!(c.execute(by_c, &[P::Str("a")]).unwrap(), read(1));
        // A number into a text placeholder (the digits), a BIGINT and a NUMERIC placeholder.
        assert_eq!(c.execute(by_c, &[P::Int(5)]).unwrap(), read(1));
        let upd = c
            .prepare("UPDATE t SET c = ?, big = ?, num = ? WHERE id = ?")
            .unwrap();
        let changed = |affected| Done {
            rows: false,
            affected,
        };
        assert_eq!(
            c.execute(upd, &[P::Str("q"), P::Int(1 << 40), P::Int(7), P::Int(2)])
                .unwrap(),
            changed(1)
        );
        assert_eq!(
            c.execute(upd, &[P::Str("q"), P::Int(1), P::Int(7), P::Int(99)])
                .unwrap(),
            changed(0)
        );
        assert_eq!(
            c.query_i64("SELECT big + num FROM t WHERE id = 2").unwrap(),
            Some((1 << 40) + 7)
        );
        let ins = c.prepare("INSERT INTO t (id, c) VALUES (?, ?)").unwrap();
        assert_eq!(
            c.execute(ins, &[P::Int(4), P::Str("d")]).unwrap(),
            changed(1)
        );
        let del = c.prepare("DELETE FROM t WHERE id >= ?").unwrap();
        assert_eq!(c.execute(del, &[P::Int(3)]).unwrap(), changed(2));
        // Wrong parameters: refused before anything is sent, the connection stays usable.
        let e = c.execute(upd, &[P::Int(1)]).unwrap_err();
        assert!(e.message.contains("takes 4 parameters, 1 given"), "{e}");
        let e = c.execute(range, &[P::Str("x"), P::Int(1)]).unwrap_err();
        assert!(e.message.contains("bound to a int4 placeholder"), "{e}");
        let e = c.execute(range, &[P::Int(1 << 40), P::Int(1)]).unwrap_err();
        assert!(e.message.contains("does not fit"), "{e}");
        let none = c.prepare("SELECT 1").unwrap();
        assert_eq!(c.execute(none, &[]).unwrap(), read(1));

        // Server errors keep the connection usable.
        let e = c.query("SELECT * FROM missing").unwrap_err();
        assert_eq!((e.code.as_str(), e.kind), ("42P01", ErrKind::NoTable));
        assert!(e.message.contains("\"missing\" does not exist"), "{e}");
        let e = c.query("CREATE TABLE t (id INT)").unwrap_err();
        assert_eq!((e.code.as_str(), e.kind), ("42P07", ErrKind::TableExists));
        let e = c.query("SELEC 1").unwrap_err();
        assert_eq!((e.code.as_str(), e.kind), ("42601", ErrKind::Other));
        let e = c.prepare("SELECT * FROM missing WHERE id = ?").unwrap_err();
        assert_eq!(e.code, "42P01");
        let e = c.execute(ins, &[P::Int(1), P::Str("dup")]).unwrap_err();
        assert_eq!((e.code.as_str(), e.kind), ("23505", ErrKind::Other));
        assert!(e.message.contains("Key (id)=(1) already exists"), "{e}");
        let e = c.query("COPY t FROM STDIN").unwrap_err();
        assert_eq!(e.code, "57014", "{e}");
        assert_eq!(c.query_i64("SELECT 5").unwrap(), Some(5));

        // An error inside a transaction: everything fails until ROLLBACK (the engine's job).
        c.query("BEGIN").unwrap();
        assert!(c.execute(ins, &[P::Int(1), P::Str("dup")]).is_err());
        let e = c.execute(range, &[P::Int(1), P::Int(3)]).unwrap_err();
        assert_eq!(e.code, "25P02", "{e}");
        c.query("ROLLBACK").unwrap();
        assert_eq!(c.execute(range, &[P::Int(1), P::Int(3)]).unwrap(), read(2));

        // Many rows: the read buffer refills and compacts; then still in step.
        let many = "SELECT g, repeat('x', 200) FROM generate_series(1, 20000) g";
        assert_eq!(c.query(many).unwrap(), read(20_000));
        let p = c
            .prepare("SELECT g, repeat('x', ?) FROM generate_series(1, 20000) g")
            .unwrap();
        assert_eq!(c.execute(p, &[P::Int(200)]).unwrap(), read(20_000));
        // One value larger than the read buffer.
        assert_eq!(
            c.query_i64("SELECT 1000000, repeat('y', 1000000)").unwrap(),
            Some(1_000_000)
        );
        assert_eq!(
            c.query_rows("SELECT repeat('y', 100000)").unwrap()[0][0]
                .as_ref()
                .map(String::len),
            Some(100_000)
        );
        assert_eq!(c.query_i64("SELECT 6").unwrap(), Some(6), "{endpoint}");
        Box::new(c).close();
    }
}

#[test]
fn live_load_copies_every_row() {
    if !server() {
        return;
    }
    let db = Db::new("load");
    let mut c = connect(&format!("{TCP}\ndatabase = \"{}\"", db.0));
    c.query("CREATE TABLE sbtest1 (id SERIAL PRIMARY KEY, k INTEGER, c CHAR(120), pad CHAR(60))")
        .unwrap();
    for with_id in [true, false] {
        let mut n = 0;
        let mut fill = |r: &mut DataRow| {
            n += 1;
            r.id = n;
            r.k = n * 2;
            r.c = "c".repeat(119);
            r.pad = "p".repeat(59);
            n <= 50_000
        };
        if !with_id {
            c.query("TRUNCATE sbtest1").unwrap();
        }
        c.load("sbtest1", with_id, &mut fill).unwrap();
        assert_eq!(
            c.query_i64("SELECT COUNT(*) FROM sbtest1").unwrap(),
            Some(50_000)
        );
        assert_eq!(
            c.query_i64("SELECT SUM(k) FROM sbtest1").unwrap(),
            Some(50_000 * 50_001)
        );
    }
    // A row that does not fit the INTEGER columns: the COPY is abandoned, nothing stays.
    c.query("TRUNCATE sbtest1").unwrap();
    let mut n = 0;
    let mut fill = |r: &mut DataRow| {
        n += 1;
        r.id = if n == 3 { 1 << 40 } else { n };
        n <= 5
    };
    let e = c.load("sbtest1", true, &mut fill).unwrap_err();
    assert!(
        e.message.contains("does not fit sysbench's INTEGER column"),
        "{e}"
    );
    assert_eq!(
        c.query_i64("SELECT COUNT(*) FROM sbtest1").unwrap(),
        Some(0)
    );
    let e = c
        .load("missing", true, &mut |_: &mut DataRow| false)
        .unwrap_err();
    assert_eq!(e.code, "42P01");
    assert_eq!(c.query_i64("SELECT 1").unwrap(), Some(1));
}

#[test]
fn live_terminated_backend_is_lost_and_stays_closed() {
    if !server() {
        return;
    }
    let extra = format!("{TCP}\ndatabase = \"postgres\"");
    let mut a = connect(&extra);
    let pid = a.query_i64("SELECT pg_backend_pid()").unwrap().unwrap();
    let mut b = connect(&extra);
    b.query(&format!("SELECT pg_terminate_backend({pid})"))
        .unwrap();
    let e = a.query("SELECT 1").unwrap_err();
    assert_eq!((e.code.as_str(), e.kind), ("57P01", ErrKind::Lost), "{e}");
    let e = a.query("SELECT 1").unwrap_err();
    assert_eq!(e.kind, ErrKind::Lost, "{e}");
}

#[test]
fn live_connect_failures_and_tls_modes() {
    if !server() {
        return;
    }
    let failed = |extra: &str| match WireConnection::open(&target(extra), 0) {
        Err(WireError::Sql(e)) => e,
        other => panic!("{extra}: {:?}", other.map(|_| ())),
    };
    let e = failed("hosts = [\"127.0.0.1:1\"]\nssl = \"disabled\"");
    assert_eq!(e.kind, ErrKind::Unreachable, "{e}");
    assert!(
        e.message.contains("127.0.0.1:1") && e.message.contains("refused"),
        "{e}"
    );
    let e = failed("socket = \"/nonexistent\"");
    assert_eq!(e.kind, ErrKind::Unreachable, "{e}");
    assert!(e.message.contains("/nonexistent/.s.PGSQL.5432"), "{e}");
    let e = failed(&format!("{TCP}\ndatabase = \"sbsuite_pgw_does_not_exist\""));
    assert_eq!((e.code.as_str(), e.kind), ("3D000", ErrKind::Other), "{e}");
    // prefer: plain text when the server has no TLS, else TLS.
    let mut admin = connect(&format!("{TCP}\ndatabase = \"postgres\""));
    let ssl = admin.query_rows("SHOW ssl").unwrap()[0][0].clone();
    let mut prefer =
        connect("hosts = [\"127.0.0.1:5432\"]\nssl = \"preferred\"\ndatabase = \"postgres\"");
    assert_eq!(encrypted(&mut prefer), ssl.as_deref() == Some("on"));
}

/// Whether the connection's own backend is encrypted, as the server sees it.
fn encrypted(c: &mut WireConnection) -> bool {
    let v = c
        .query_i64("SELECT ssl::int FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        .unwrap();
    v == Some(1)
}

/// Private throwaway servers (shared with the integration tests), for the TLS test.
#[path = "../../../../tests/common/private_server.rs"]
mod private_server;
/// The one skip, which `private_server::or_skip` calls as `super::skip`.
use crate::db::io::testing::skip;

#[test]
fn live_tls_modes_encrypt_verify_and_sockets_stay_plain() {
    // A private server with TLS on: the shared one may have none, or a certificate this user
    // cannot read, and the test must never skip under CI.
    let Some(server) = private_server::or_skip(private_server::PrivatePostgres::start()) else {
        return;
    };
    let port = server.port();
    let cert = server.cert().display().to_string();
    let mut admin = connect(&format!(
        "hosts = [\"{}\"]\nssl = \"disabled\"\ndatabase = \"postgres\"",
        server.addr()
    ));
    let ssl = admin.query_rows("SHOW ssl").unwrap()[0][0].clone();
    assert_eq!(ssl.as_deref(), Some("on"));
    // The server's certificate is self-signed for `localhost` only: its own CA.
    let tls = |host: &str, mode: &str, ca: &str| {
        WireConnection::open(
            &target(&format!(
                "hosts = [\"{host}:{port}\"]\nssl = \"{mode}\"\nssl_ca = \"{ca}\"\ndatabase = \"postgres\""
            )),
            0,
        )
    };
    for (host, mode) in [
        ("127.0.0.1", "preferred"),
        ("127.0.0.1", "required"),
        ("127.0.0.1", "verify_ca"),
        ("localhost", "verify_identity"),
    ] {
        let mut c = tls(host, mode, &cert).unwrap_or_else(|e| panic!("{mode}: {e:?}"));
        assert!(matches!(c.io.stream, Stream::Tls(_)), "{mode}");
        assert!(encrypted(&mut c), "{mode}: pg_stat_ssl.ssl");
        // Answers larger than a TLS record (16 KiB) and than the read buffer arrive whole.
        let rows = c
            .query_rows("SELECT repeat('x', 50000) FROM generate_series(1, 3)")
            .unwrap();
        assert_eq!(rows.len(), 3, "{mode}");
        assert!(
            rows.iter()
                .all(|r| r[0].as_deref().map(str::len) == Some(50000))
        );
    }
    let failed = |host: &str, mode: &str, ca: &str| match tls(host, mode, ca) {
        Err(WireError::Sql(e)) => e,
        other => panic!("{host} {mode}: {:?}", other.map(|_| ())),
    };
    let e = failed("127.0.0.1", "verify_identity", &cert);
    assert!(
        e.message.contains("not valid for name \"127.0.0.1\""),
        "{e}"
    );
    assert_eq!(e.kind, ErrKind::Other);
    // A CA that did not sign the server's certificate: tests/all/pgsql_oltp.rs.
    // libpq ignores sslmode on Unix sockets: plain text even when TLS is required.
    for mode in ["preferred", "required"] {
        let mut c = connect(&format!(
            "socket = \"{}\"\nssl = \"{mode}\"\ndatabase = \"postgres\"",
            server.socket().display()
        ));
        assert!(matches!(c.io.stream, Stream::Unix(_)), "{mode}");
        assert!(!encrypted(&mut c), "{mode}: socket");
    }
}

/// Drops the test's roles when dropped, also when the test panics.
struct DropRoles(Vec<&'static str>);

impl Drop for DropRoles {
    fn drop(&mut self) {
        let mut admin = connect(&format!("{TCP}\ndatabase = \"postgres\""));
        for role in &self.0 {
            let _ = admin.query(&format!("DROP ROLE IF EXISTS {role}"));
        }
    }
}

/// Roles whose password the server checks over TCP, one per stored hash: `.ci/run` adds their
/// pg_hba.conf lines (`md5` and `scram-sha-256`).
#[test]
fn live_md5_and_scram_passwords() {
    if !server() {
        return;
    }
    let pw = "Pgw-pw-1!";
    let mut admin = connect(&format!("{TCP}\ndatabase = \"postgres\""));
    let roles = [
        ("sbsuite_pgw_md5", "md5"),
        ("sbsuite_pgw_scram", "scram-sha-256"),
    ];
    let dropped = DropRoles(roles.iter().map(|&(role, _)| role).collect());
    for (role, method) in roles {
        admin
            .query(&format!(
                "SET password_encryption = '{method}'; DROP ROLE IF EXISTS {role}; CREATE ROLE {role} LOGIN PASSWORD '{pw}'"
            ))
            .unwrap();
    }
    // In plain text and over TLS (when the server has it on: SCRAM without channel binding).
    let login = |role: &str, ssl: &str, password: &str| {
        let t = target_as(
            role,
            &format!(
                "hosts = [\"127.0.0.1:5432\"]\nssl = \"{ssl}\"\ndatabase = \"postgres\"\npassword = \"{password}\""
            ),
        );
        WireConnection::open(&t, 0).map(|mut c| c.query_i64("SELECT 1"))
    };
    let cases: Vec<_> = roles
        .iter()
        .flat_map(|&r| ["disabled", "preferred"].map(|ssl| (r, ssl)))
        .collect();
    let results: Vec<_> = cases
        .iter()
        .map(|&((role, _), ssl)| (login(role, ssl, pw), login(role, ssl, "not-the-password")))
        .collect();
    drop(dropped);
    for (((role, method), ssl), (right, wrong)) in cases.into_iter().zip(results) {
        if wrong.is_ok() {
            crate::db::io::testing::skip(&format!(
                "pg_hba.conf does not check {role}'s password over TCP (add `host all {role} 127.0.0.1/32 {method}` first, as .ci/run does)"
            ));
            continue;
        }
        match right {
            Ok(v) => assert_eq!(v.unwrap(), Some(1)),
            Err(WireError::Sql(e)) => panic!("{role} {ssl}: {e}"),
            Err(WireError::Unsupported(m)) => panic!("{role} {ssl}: unsupported: {m}"),
        }
        match wrong {
            Err(WireError::Sql(e)) => {
                assert_eq!((e.code.as_str(), e.kind), ("28P01", ErrKind::Other), "{e}");
                assert!(e.message.contains("password authentication failed"), "{e}");
                assert!(!e.message.contains("not-the-password"));
            }
            Err(WireError::Unsupported(m)) => panic!("{role}: unsupported: {m}"),
            Ok(_) => unreachable!(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// bounds and deadlines against a broken or hostile server (issue #13)

/// [`fed`] with `limits`.
fn fed_with(bytes: Vec<u8>, limits: Limits) -> WireConnection {
    let mut c = fed(bytes);
    c.io = Reader::new(
        std::mem::replace(
            &mut c.io.stream,
            Stream::Unix(UnixStream::pair().unwrap().0),
        ),
        limits.max_packet,
    );
    c.io.set_timeout(limits.query_timeout).unwrap();
    c.limits = limits;
    c
}

fn small_limits() -> Limits {
    Limits {
        query_timeout: Some(Duration::from_secs(1)),
        max_packet: 1 << 20,
        kill_on_timeout: true,
    }
}

/// An answer that asks for more than max_packet: refused from the header alone, in every mode
/// (the rows skipped by length too), with the size and the key in the message.
#[test]
fn a_message_larger_than_max_packet_is_refused_from_its_header() {
    for (tag, want) in [
        (b'R', Want::Drain),
        (b'D', Want::Drain),
        (b'D', Want::Rows),
        (b'T', Want::First),
        (b'd', Want::Drain),
    ] {
        let mut b = vec![tag];
        b.extend_from_slice(&0x7FFF_FFFFi32.to_be_bytes());
        b.extend_from_slice(&[0; 100]);
        let mut c = fed_with(b, small_limits());
        let e = c.answer(want).unwrap_err();
        assert!(
            e.message.contains("message of 2147483648 bytes")
                && e.message.contains("max_packet = 1048576"),
            "{e}"
        );
        assert_eq!(e.kind, ErrKind::Other);
        assert!(c.broken);
        assert!(c.io.buf.len() <= 64 << 10, "nothing was allocated");
    }
    // Just above the limit: refused; at the limit: read.
    for (size, ok) in [((1 << 20) + 1, false), (1 << 20, true)] {
        let mut b = msg(b'D', &vec![0; size]);
        b.extend(ready());
        let r = fed_with(b, small_limits()).answer(Want::Drain);
        assert_eq!(r.is_ok(), ok, "{size}: {:?}", r.err());
    }
}

#[test]
fn an_endless_admin_result_is_cut_at_max_admin_rows_or_max_packet() {
    // Rows of no columns: 7 bytes each, so the row count is the bound that ends it.
    let rows: Vec<u8> = (0..MAX_ADMIN_ROWS + 1)
        .flat_map(|_| msg(b'D', &[0, 0]))
        .collect();
    let mut c = fed_with(rows.clone(), small_limits());
    let e = c.answer(Want::Rows).unwrap_err();
    assert!(e.message.contains("more than 100000 rows"), "{e}");
    assert!(c.broken);
    // Exactly the limit is fine.
    let mut ok = rows[..rows.len() - 7].to_vec();
    ok.extend(ready());
    let a = fed_with(ok, small_limits()).answer(Want::Rows).unwrap();
    assert_eq!(a.rows.len(), MAX_ADMIN_ROWS);
    // Big rows: max_packet bytes in all.
    let big = data_row(&[Some(&"x".repeat(100 << 10))]);
    let mut c = fed_with(big.repeat(11), small_limits());
    let e = c.answer(Want::Rows).unwrap_err();
    assert!(e.message.contains("max_packet = 1048576 bytes"), "{e}");
    // The rows a benchmark skips are not counted.
    let mut b = big.repeat(11);
    b.extend(ready());
    assert!(fed_with(b, small_limits()).answer(Want::Drain).is_ok());
}

/// Runs `server` on one accepted connection while the client opens `t`; the peer thread is
/// returned, for tests that go on using the connection.
fn open_peer(
    extra: &str,
    server: impl FnOnce(TcpStream) + Send + 'static,
) -> (
    Result<WireConnection, WireError>,
    std::thread::JoinHandle<()>,
    Duration,
) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let peer = std::thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        server(s);
    });
    let start = Instant::now();
    let r = WireConnection::open(&peer_target(port, extra), 0);
    (r, peer, start.elapsed())
}

/// A peer's startup up to ReadyForQuery (trust).
fn accept_startup(s: &mut TcpStream) {
    read_frontend(s, false);
    let mut b = auth(AUTH_OK, &[]);
    b.extend(ready());
    s.write_all(&b).unwrap();
}

fn sql_error(r: Result<WireConnection, WireError>) -> SqlError {
    match r {
        Err(WireError::Sql(e)) => e,
        Err(WireError::Unsupported(m)) => panic!("unsupported: {m}"),
        Ok(_) => panic!("connected"),
    }
}

#[test]
fn startup_loops_of_a_server_end_at_a_bound() {
    // An endless md5 challenge: refused after a few rounds, not after connect_timeout.
    let (r, peer, took) = open_peer("password = \"pw\"\nssl = \"disabled\"", |mut s| {
        read_frontend(&mut s, false);
        loop {
            if s.write_all(&auth(AUTH_MD5, &[1, 2, 3, 4])).is_err() {
                return;
            }
            let mut b = [0u8; 256];
            if matches!(s.read(&mut b), Ok(0) | Err(_)) {
                return;
            }
        }
    });
    let e = sql_error(r);
    assert!(
        e.message.contains("authentication more than 8 times"),
        "{e}"
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
    peer.join().unwrap();

    // Endless ParameterStatus (and AuthenticationOk, notices): a message count ends it.
    let (r, peer, took) = open_peer("ssl = \"disabled\"", |mut s| {
        read_frontend(&mut s, false);
        s.write_all(&auth(AUTH_OK, &[])).unwrap();
        let mut b = Vec::new();
        for _ in 0..100 {
            b.extend(msg(b'S', b"server_version\x0015.0\0"));
            b.extend(msg(b'N', &error_body("NOTICE", "00000", "hi", None)));
        }
        while s.write_all(&b).is_ok() {}
    });
    let e = sql_error(r);
    assert!(e.message.contains("more than 10000 messages"), "{e}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    peer.join().unwrap();
}

/// A peer that sends `bytes` one at a time, every 50 ms, until the client goes.
fn trickle(s: &mut TcpStream, bytes: &[u8]) {
    for b in bytes.iter().cycle() {
        if s.write_all(&[*b]).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_trickling_or_silent_startup_ends_at_connect_timeout() {
    let mut endless = auth(AUTH_OK, &[]);
    endless.extend(msg(b'S', b"a\0b\0"));
    for (what, extra) in [
        ("trickle", "ssl = \"disabled\""),
        ("silent", "ssl = \"disabled\""),
        ("tls trickle", "ssl = \"required\""),
    ] {
        let bytes = endless.clone();
        let (r, peer, took) = open_peer(&format!("connect_timeout = 1\n{extra}"), move |mut s| {
            match what {
                "trickle" => {
                    read_frontend(&mut s, false);
                    trickle(&mut s, &bytes);
                }
                "silent" => {
                    read_frontend(&mut s, false);
                    let _ = s.read_to_end(&mut Vec::new());
                }
                _ => {
                    let mut req = [0u8; 8];
                    s.read_exact(&mut req).unwrap();
                    s.write_all(b"S").unwrap();
                    // A handshake record that promises 16 KiB and never completes it.
                    trickle(&mut s, &[0x16, 3, 3, 0x40, 0]);
                }
            }
        });
        let e = sql_error(r);
        assert!(e.message.contains("connect_timeout"), "{what}: {e}");
        assert!(took >= Duration::from_millis(900), "{what}: {took:?}");
        assert!(took < Duration::from_secs(4), "{what}: {took:?}");
        peer.join().unwrap();
    }
}

#[test]
fn a_statement_the_server_never_finishes_fails_at_query_timeout() {
    let mut rows = Vec::new();
    for _ in 0..100 {
        rows.extend(data_row(&[Some("1")]));
    }
    for what in ["silent", "trickle", "endless rows"] {
        let bytes = rows.clone();
        let (r, peer, _) = open_peer("ssl = \"disabled\"\nquery_timeout = 1", move |mut s| {
            accept_startup(&mut s);
            read_frontend(&mut s, true);
            match what {
                "silent" => {
                    let _ = s.read_to_end(&mut Vec::new());
                }
                "trickle" => trickle(&mut s, &bytes),
                _ => while s.write_all(&bytes).is_ok() {},
            }
        });
        let mut c = r.unwrap_or_else(|e| panic!("{e:?}"));
        let start = Instant::now();
        let e = c.query("SELECT 1").unwrap_err();
        let took = start.elapsed();
        assert!(
            e.message.contains("within query_timeout = 1 s"),
            "{what}: {e}"
        );
        assert_eq!((e.code.as_str(), e.kind), ("", ErrKind::Other), "{what}");
        assert!(took >= Duration::from_millis(900), "{what}: {took:?}");
        assert!(took < Duration::from_secs(4), "{what}: {took:?}");
        // The connection is gone: the next call says so at once.
        let e = c.query("SELECT 1").unwrap_err();
        assert_eq!(e.kind, ErrKind::Lost, "{what}: {e}");
        drop(c);
        peer.join().unwrap();
    }
}

#[test]
fn a_server_that_stops_reading_fails_the_write_at_query_timeout() {
    let (r, peer, _) = open_peer("ssl = \"disabled\"\nquery_timeout = 1", |mut s| {
        accept_startup(&mut s);
        // Reads nothing more until the client is gone.
        let mut b = [0u8; 1];
        let _ = s.peek(&mut b);
        std::thread::sleep(Duration::from_secs(4));
    });
    let mut c = r.unwrap_or_else(|e| panic!("{e:?}"));
    // Far more than the socket buffers hold.
    let sql = format!("SELECT '{}'", "x".repeat(64 << 20));
    let start = Instant::now();
    let e = c.query(&sql).unwrap_err();
    assert!(e.message.contains("within query_timeout = 1 s"), "{e}");
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
    drop(c);
    peer.join().unwrap();
}

#[test]
fn a_huge_message_during_the_startup_is_refused_at_once() {
    let (r, peer, took) = open_peer("ssl = \"disabled\"", |mut s| {
        read_frontend(&mut s, false);
        let mut b = vec![b'R'];
        b.extend_from_slice(&0x7FFF_FFFFi32.to_be_bytes());
        let _ = s.write_all(&b);
        let _ = s.read_to_end(&mut Vec::new());
    });
    let e = sql_error(r);
    assert!(
        e.message.contains("message of 2147483648 bytes") && e.message.contains("max_packet"),
        "{e}"
    );
    assert_eq!(e.kind, ErrKind::Other, "not retried");
    assert!(took < Duration::from_secs(3), "{took:?}");
    peer.join().unwrap();
}
