//! The client against the real local MariaDB/MySQL (skipped with a note when none runs, unless
//! `CI` is set): statements over TCP and the socket in both result-end styles, bulk loads, 16 MiB
//! payloads, killed connections, passwords and auth switches.

use super::*;

const TCP: &str = "hosts = [\"127.0.0.1:3306\"]";

const SOCKET: &str = "socket = \"/run/mysqld/mysqld.sock\"";

/// Whether a server runs locally (else the test says why and passes, outside CI).
fn server() -> bool {
    crate::db::io::testing::server("127.0.0.1:3306", "MySQL/MariaDB")
}

fn connect(extra: &str, o: WireOptions) -> WireConnection {
    match WireConnection::open(&target(extra), 0, o) {
        Ok(c) => c,
        Err(WireError::Sql(e)) => panic!("{e}"),
        Err(WireError::Unsupported(m)) => panic!("unsupported: {m}"),
    }
}

/// A fresh database `sbsuite_t_wire_<name>`, dropped by the guard.
struct Db(String);

impl Db {
    fn new(name: &str) -> Db {
        let db = format!("sbsuite_t_wire_{name}");
        let mut c = connect(&format!("{TCP}\ndatabase = \"\""), WireOptions::default());
        c.query(&format!("DROP DATABASE IF EXISTS {db}")).unwrap();
        c.query(&format!("CREATE DATABASE {db}")).unwrap();
        Db(db)
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let mut c = connect(&format!("{TCP}\ndatabase = \"\""), WireOptions::default());
        let _ = c.query(&format!("DROP DATABASE IF EXISTS {}", self.0));
    }
}

#[test]
fn live_statements_over_tcp_and_socket_in_both_end_styles() {
    if !server() {
        return;
    }
    let db = Db::new("stmts");
    let mut setup = connect(
        &format!("{TCP}\ndatabase = \"{}\"", db.0),
        WireOptions::default(),
    );
    assert_eq!(
        setup
            .query("CREATE TABLE t (id INT PRIMARY KEY, c VARCHAR(300))")
            .unwrap(),
        Done::default()
    );
    assert_eq!(
        setup
            .query("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, NULL)")
            .unwrap()
            .affected,
        3
    );
    for endpoint in [TCP, SOCKET] {
        for deprecate_eof in [true, false] {
            let what = format!("{endpoint} deprecate_eof={deprecate_eof}");
            let o = WireOptions {
                deprecate_eof,
                ..WireOptions::default()
            };
            let mut c = connect(&format!("{endpoint}\ndatabase = \"{}\"", db.0), o);
            assert_eq!(
                c.deprecate_eof(),
                deprecate_eof,
                "{what}: the server offers it"
            );
            let read = Done {
                rows: true,
                affected: 0,
            };
            assert_eq!(c.query("SELECT * FROM t").unwrap(), read, "{what}");
            assert_eq!(c.query("SELECT * FROM t WHERE id > 9").unwrap(), read);
            assert_eq!(c.query_i64("SELECT COUNT(*) FROM t").unwrap(), Some(3));
            assert_eq!(c.query_i64("SELECT c FROM t WHERE id = 3").unwrap(), None);
            assert_eq!(c.query_i64("SELECT id FROM t WHERE id > 9").unwrap(), None);
            assert_eq!(c.query_i64("DO 1").unwrap(), None);
            assert!(c.query_i64("SELECT 'x'").is_err());
            assert!(c.query_i64("SELECT @@max_connections").unwrap().is_some());

            // Prepared: integers and strings, reads and changed-row counts.
            let range = c
                .prepare("SELECT id, c FROM t WHERE id BETWEEN ? AND ?")
                .unwrap();
            assert_eq!(c.execute(range, &[P::Int(1), P::Int(3)]).unwrap(), read);
            let by_c = c.prepare("SELECT COUNT(*) FROM t WHERE c = ?").unwrap();
            assert_eq!(c.execute(by_c, &[P::Str("a")]).unwrap(), read);
            let upd = c.prepare("UPDATE t SET c = ? WHERE id = ?").unwrap();
            assert_eq!(
                c.execute(upd, &[P::Str("q"), P::Int(2)]).unwrap().affected,
                1
            );
            assert_eq!(
                c.execute(upd, &[P::Str("q"), P::Int(2)]).unwrap().affected,
                0
            );
            // The same statement with other parameter types (types are sent every time).
            assert_eq!(
                c.execute(upd, &[P::Int(7), P::Str("2")]).unwrap().affected,
                1
            );
            assert_eq!(
                c.execute(upd, &[P::Str("b"), P::Int(2)]).unwrap().affected,
                1
            );
            let e = c.execute(upd, &[P::Int(1)]).unwrap_err();
            assert!(e.message.contains("takes 2 parameters, 1 given"), "{e}");
            let none = c.prepare("SELECT 1").unwrap();
            assert_eq!(c.execute(none, &[]).unwrap(), read);

            // Several statements and results in one command.
            let multi = c
                .query("SELECT 1; UPDATE t SET c = 'z' WHERE id = 1; SELECT 2")
                .unwrap();
            assert!(multi.rows);
            c.query("UPDATE t SET c = 'a' WHERE id = 1").unwrap();

            // Server errors keep the connection usable.
            let e = c.query("SELECT * FROM missing").unwrap_err();
            assert_eq!((e.code.as_str(), e.kind), ("1146", ErrKind::NoTable));
            let e = c.query("CREATE TABLE t (id INT)").unwrap_err();
            assert_eq!((e.code.as_str(), e.kind), ("1050", ErrKind::TableExists));
            let e = c.query("SELEC 1").unwrap_err();
            assert_eq!((e.code.as_str(), e.kind), ("1064", ErrKind::Other));
            let e = c.prepare("SELECT * FROM missing WHERE id = ?").unwrap_err();
            assert_eq!(e.code, "1146");
            c.close_statement(range).unwrap();
            let e = c.execute(range, &[P::Int(1), P::Int(3)]).unwrap_err();
            assert_eq!(e.code, "1243", "unknown prepared statement handler: {e}");

            // Many rows: the read buffer refills and compacts; then still in step.
            let many = "SELECT seq, REPEAT('x', 200) FROM seq_1_to_20000";
            assert_eq!(c.query(many).unwrap(), read);
            let p = c
                .prepare("SELECT seq, REPEAT('x', ?) FROM seq_1_to_20000")
                .unwrap();
            assert_eq!(c.execute(p, &[P::Int(200)]).unwrap(), read);
            assert_eq!(c.query_i64("SELECT 5").unwrap(), Some(5), "{what}");
            assert!(
                crate::db::mysql::shared::max_connections_of(&mut c)
                    .unwrap()
                    .is_some()
            );
            Box::new(c).close();
        }
    }
}

#[test]
fn live_load_inserts_every_row_in_full_batches_cut_batches_and_the_rest() {
    if !server() {
        return;
    }
    let db = Db::new("load");
    let mut c = connect(
        &format!("{TCP}\ndatabase = \"{}\"", db.0),
        WireOptions::default(),
    );
    c.query("CREATE TABLE sbtest1 (id INT PRIMARY KEY, k INT, c CHAR(120), pad CHAR(60))")
        .unwrap();
    let mut n = 0;
    let mut fill = |r: &mut DataRow| {
        n += 1;
        r.id = n;
        r.k = n * 2;
        r.c = "c".repeat(119);
        r.pad = "p".repeat(59);
        n <= 50_000
    };
    c.load("sbtest1", true, &mut fill).unwrap();
    assert_eq!(
        c.query_i64("SELECT COUNT(*) FROM sbtest1").unwrap(),
        Some(50_000)
    );
    assert_eq!(
        c.query_i64("SELECT SUM(k) FROM sbtest1").unwrap(),
        Some(50_000 * 50_001)
    );

    // Ids from the server, and rows that grow past the packet budget (4 MiB) before a batch
    // of 1,000 is full: the buffered rows go as text INSERTs, the next ones prepared again.
    c.query("CREATE TABLE sbtest2 (id INT AUTO_INCREMENT PRIMARY KEY, k INT, c MEDIUMTEXT, pad CHAR(60))")
        .unwrap();
    let mut n = 0;
    let mut fill = |r: &mut DataRow| {
        n += 1;
        r.k = n;
        r.c = "c".repeat(if (1001..=2000).contains(&n) {
            10_000
        } else {
            119
        });
        r.pad = "p".repeat(59);
        n <= 3_456
    };
    c.load("sbtest2", false, &mut fill).unwrap();
    assert_eq!(
        c.query_i64("SELECT COUNT(*) + MIN(id) + MAX(id) FROM sbtest2 WHERE id = k")
            .unwrap(),
        Some(3_456 + 1 + 3_456)
    );
    assert_eq!(
        c.query_i64("SELECT SUM(LENGTH(c)) FROM sbtest2").unwrap(),
        Some(1_000 * 10_000 + 2_456 * 119)
    );
}

#[test]
fn live_payloads_of_16_mib_and_more_both_ways() {
    if !server() {
        return;
    }
    let db = Db::new("big");
    let _big = BigPackets::new();
    for deprecate_eof in [true, false] {
        let o = WireOptions {
            deprecate_eof,
            ..WireOptions::default()
        };
        let mut c = connect(&format!("{TCP}\ndatabase = \"{}\"", db.0), o);
        // A command of 17 MiB (two packets).
        let n = 17 << 20;
        let sql = format!("SELECT LENGTH('{}')", "x".repeat(n));
        assert_eq!(c.query_i64(&sql).unwrap(), Some(n as i64));
        // Rows around the packet boundary, text and binary: a text row of one value of
        // length L is lenenc(L) (4 bytes) + L, so L = MAX_PAYLOAD − 4 fills exactly one packet
        // and an empty one follows.
        let p = c.prepare("SELECT REPEAT('y', ?)").unwrap();
        for len in [
            MAX_PAYLOAD - 6,
            MAX_PAYLOAD - 5,
            MAX_PAYLOAD - 4,
            MAX_PAYLOAD - 3,
            n,
        ] {
            let read = Done {
                rows: true,
                affected: 0,
            };
            assert_eq!(
                c.query(&format!("SELECT REPEAT('y', {len})")).unwrap(),
                read
            );
            assert_eq!(c.execute(p, &[P::Int(len as i64)]).unwrap(), read);
            assert_eq!(
                c.query_i64(&format!("SELECT {len}, REPEAT('y', {len})"))
                    .unwrap(),
                Some(len as i64),
                "{len}"
            );
        }
        // A parameter of 17 MiB (COM_STMT_EXECUTE split into packets).
        c.query("CREATE TABLE IF NOT EXISTS big (b LONGBLOB)")
            .unwrap();
        c.query("DELETE FROM big").unwrap();
        let ins = c.prepare("INSERT INTO big VALUES (?)").unwrap();
        let value = "z".repeat(n);
        assert_eq!(c.execute(ins, &[P::Str(&value)]).unwrap().affected, 1);
        assert_eq!(
            c.query_i64("SELECT LENGTH(b) FROM big").unwrap(),
            Some(n as i64)
        );
    }
}

#[test]
fn live_killed_connection_is_lost_and_stays_closed() {
    if !server() {
        return;
    }
    let extra = format!("{TCP}\ndatabase = \"\"");
    let mut a = connect(&extra, WireOptions::default());
    let id = a.query_i64("SELECT CONNECTION_ID()").unwrap().unwrap();
    let mut b = connect(&extra, WireOptions::default());
    b.query(&format!("KILL {id}")).unwrap();
    let e = a.query("SELECT 1").unwrap_err();
    assert_eq!(e.kind, ErrKind::Lost, "{e}");
    let e = a.query("SELECT 1").unwrap_err();
    assert_eq!(e.kind, ErrKind::Lost, "{e}");
}

#[test]
fn live_passwords_auth_switch_and_unreachable_hosts() {
    if !server() {
        return;
    }
    let user = "sbsuite_t_wire_pw";
    let pw = "Wire-pw-1!";
    let mut root = connect(&format!("{TCP}\ndatabase = \"\""), WireOptions::default());
    let dropped = DropUser(user);
    for host in ["127.0.0.1", "localhost"] {
        root.query(&format!("DROP USER IF EXISTS '{user}'@'{host}'"))
            .unwrap();
        root.query(&format!(
            "CREATE USER '{user}'@'{host}' IDENTIFIED BY '{pw}'"
        ))
        .unwrap();
    }
    let login = |endpoint: &str, password: &str, o: WireOptions| {
        let t = target_as(
            user,
            &format!("{endpoint}\ndatabase = \"\"\npassword = \"{password}\"\n"),
        );
        WireConnection::open(&t, 0, o)
    };
    let mut results = Vec::new();
    for endpoint in [TCP, SOCKET] {
        // Right password; and the same with a first answer for caching_sha2_password, which
        // MariaDB answers with an auth switch to mysql_native_password.
        for start_with_sha2 in [false, true] {
            let o = WireOptions {
                start_with_sha2,
                ..WireOptions::default()
            };
            results.push(login(endpoint, pw, o).map(|mut c| c.query_i64("SELECT 1")));
        }
        results.push(
            login(endpoint, "not-the-password", WireOptions::default())
                .map(|mut c| c.query_i64("SELECT 1")),
        );
    }
    drop(dropped);
    for (i, r) in results.into_iter().enumerate() {
        match (i % 3, r) {
            (0 | 1, Ok(v)) => assert_eq!(v.unwrap(), Some(1)),
            (2, Err(WireError::Sql(e))) => {
                assert_eq!((e.code.as_str(), e.kind), ("1045", ErrKind::Other));
                assert!(e.message.contains("Access denied"), "{e}");
                assert!(!e.message.contains("not-the-password"));
            }
            (_, Err(WireError::Sql(e))) => panic!("{i}: {e}"),
            (_, Err(WireError::Unsupported(m))) => panic!("{i}: unsupported: {m}"),
            (_, Ok(_)) => panic!("{i}: a wrong password was accepted"),
        }
    }

    let e = match WireConnection::open(
        &target("hosts = [\"127.0.0.1:1\"]"),
        0,
        WireOptions::default(),
    ) {
        Err(WireError::Sql(e)) => e,
        other => panic!("{:?}", other.map(|_| ())),
    };
    assert_eq!(
        (e.code.as_str(), e.kind),
        ("2003", ErrKind::Unreachable),
        "{e}"
    );
    let e = match WireConnection::open(
        &target("socket = \"/nonexistent/mysqld.sock\""),
        0,
        WireOptions::default(),
    ) {
        Err(WireError::Sql(e)) => e,
        other => panic!("{:?}", other.map(|_| ())),
    };
    assert_eq!(
        (e.code.as_str(), e.kind),
        ("2002", ErrKind::Unreachable),
        "{e}"
    );
}

/// Raises `max_allowed_packet` for the connections opened while it lives.
struct BigPackets(i64);

impl BigPackets {
    fn new() -> BigPackets {
        let mut c = connect(&format!("{TCP}\ndatabase = \"\""), WireOptions::default());
        let old = c
            .query_i64("SELECT @@GLOBAL.max_allowed_packet")
            .unwrap()
            .unwrap();
        c.query("SET GLOBAL max_allowed_packet = 67108864").unwrap();
        BigPackets(old)
    }
}

impl Drop for BigPackets {
    fn drop(&mut self) {
        let mut c = connect(&format!("{TCP}\ndatabase = \"\""), WireOptions::default());
        let _ = c.query(&format!("SET GLOBAL max_allowed_packet = {}", self.0));
    }
}

/// Drops the test's user (at both hosts) when dropped, also when the test panics.
struct DropUser(&'static str);

impl Drop for DropUser {
    fn drop(&mut self) {
        let mut c = connect(&format!("{TCP}\ndatabase = \"\""), WireOptions::default());
        for host in ["127.0.0.1", "localhost"] {
            let _ = c.query(&format!("DROP USER IF EXISTS '{}'@'{host}'", self.0));
        }
    }
}
