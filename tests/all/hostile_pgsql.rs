//! A hostile PostgreSQL server against the real binary (issue #13): for every way a broken or
//! malicious server can misbehave — a message header promising 2 GiB, an endless md5
//! challenge, endless ParameterStatus, a startup trickled a byte per second, silence after
//! ReadyForQuery, a header whose body never comes, garbage, an endless result to the server
//! capture, a huge RowDescription — `sbsuite run` and `sbsuite sysbench … run` must end within
//! twice the configured deadline plus a startup allowance, say why, exit non-zero and stay
//! small (peak RSS from `wait4`).
//!
//! Each case is a scripted server on its own port (one thread per connection: the binary
//! connects for the capture, the prepare and the cleanup), and the cases run in parallel so
//! the file takes about as long as its slowest case.

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::time::Duration;

/// What a hostile server does on each connection.
#[derive(Clone, Copy, Debug)]
enum Script {
    /// `R` with length 0x7FFFFFFF right after the startup message.
    HugeAuth,
    /// An md5 challenge after every password.
    EndlessMd5,
    /// AuthenticationOk, then ParameterStatus forever.
    EndlessParameterStatus,
    /// The startup answer, one byte a second.
    TrickleStartup,
    /// A normal startup, then silence on the first query.
    SilentAfterReady,
    /// A normal startup, then a DataRow header promising 1000 bytes, 10 of them, silence.
    HeaderWithoutBody,
    /// A normal startup, then garbage instead of an answer.
    GarbageAfterReady,
    /// A normal startup, then DataRows without end to every query.
    EndlessRows,
    /// A normal startup, then a RowDescription of 2^15 fields announced as 200 MB.
    HugeRowDescription,
}

fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    out.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
    out.extend_from_slice(body);
    out
}

fn auth(code: i32, data: &[u8]) -> Vec<u8> {
    let mut b = code.to_be_bytes().to_vec();
    b.extend_from_slice(data);
    msg(b'R', &b)
}

/// A real server's greeting after authentication.
fn greeting() -> Vec<u8> {
    let mut b = auth(0, &[]);
    b.extend(msg(b'S', b"server_version\x0015.0\0"));
    b.extend(msg(b'S', b"client_encoding\0UTF8\0"));
    b.extend(msg(b'K', &[0, 0, 0, 1, 0, 0, 0, 2]));
    b.extend(msg(b'Z', b"I"));
    b
}

/// Reads the startup message, answering an SSLRequest with `N` first. `None`: the client went.
fn read_startup(s: &mut TcpStream) -> Option<()> {
    loop {
        let mut len = [0u8; 4];
        s.read_exact(&mut len).ok()?;
        let len = i32::from_be_bytes(len);
        let mut body = vec![0; usize::try_from(len).ok()?.checked_sub(4)?];
        s.read_exact(&mut body).ok()?;
        if body == [0x04, 0xd2, 0x16, 0x2f] {
            s.write_all(b"N").ok()?;
            continue;
        }
        return Some(());
    }
}

/// Reads one tagged frontend message: its type. `None`: the client went.
fn read_message(s: &mut TcpStream) -> Option<u8> {
    let mut head = [0u8; 5];
    s.read_exact(&mut head).ok()?;
    let len = i32::from_be_bytes([head[1], head[2], head[3], head[4]]);
    let mut body = vec![0; usize::try_from(len).ok()?.checked_sub(4)?];
    s.read_exact(&mut body).ok()?;
    Some(head[0])
}

/// Reads until the client closes the socket (or the test process ends).
fn hold(s: &mut TcpStream) {
    let _ = std::io::copy(s, &mut std::io::sink());
}

/// Writes `bytes` again and again until the client goes.
fn flood(s: &mut TcpStream, bytes: &[u8]) {
    while s.write_all(bytes).is_ok() {}
}

fn serve(script: Script, mut s: TcpStream) {
    if read_startup(&mut s).is_none() {
        return;
    }
    match script {
        Script::HugeAuth => {
            let mut b = vec![b'R'];
            b.extend_from_slice(&0x7FFF_FFFFi32.to_be_bytes());
            b.extend_from_slice(&[0; 64 << 10]);
            let _ = s.write_all(&b);
            hold(&mut s);
        }
        Script::EndlessMd5 => loop {
            if s.write_all(&auth(5, &[1, 2, 3, 4])).is_err() || read_message(&mut s).is_none() {
                return;
            }
        },
        Script::EndlessParameterStatus => {
            let _ = s.write_all(&auth(0, &[]));
            flood(&mut s, &msg(b'S', b"application_name\0x\0").repeat(100));
        }
        Script::TrickleStartup => {
            for b in greeting() {
                if s.write_all(&[b]).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_secs(1));
            }
            hold(&mut s);
        }
        _ => {
            if s.write_all(&greeting()).is_err() {
                return;
            }
            // The extended protocol sends Parse, Describe, Sync: answer after the Sync (or a
            // simple Query).
            loop {
                match read_message(&mut s) {
                    None | Some(b'X') => return,
                    Some(b'Q' | b'S') => break,
                    Some(_) => {}
                }
            }
            answer(script, &mut s);
        }
    }
}

/// The answer of a server that started up normally to the first command.
fn answer(script: Script, s: &mut TcpStream) {
    match script {
        Script::SilentAfterReady => hold(s),
        Script::HeaderWithoutBody => {
            let mut b = vec![b'D'];
            b.extend_from_slice(&1004i32.to_be_bytes());
            b.extend_from_slice(&[0; 10]);
            let _ = s.write_all(&b);
            hold(s);
        }
        Script::GarbageAfterReady => {
            let _ = s.write_all(b"\xff\xfe garbage, not a message \x00\x01\x02");
            hold(s);
        }
        Script::EndlessRows => {
            let mut row = 2i16.to_be_bytes().to_vec();
            for v in ["max_connections", "100"] {
                row.extend_from_slice(&(v.len() as i32).to_be_bytes());
                row.extend_from_slice(v.as_bytes());
            }
            let mut b = msg(b'T', &[0, 0]);
            b.extend(msg(b'D', &row).repeat(1000));
            let _ = s.write_all(&b);
            flood(s, &msg(b'D', &row).repeat(1000));
        }
        Script::HugeRowDescription => {
            let mut b = vec![b'T'];
            b.extend_from_slice(&200_000_000i32.to_be_bytes());
            b.extend_from_slice(&i16::MAX.to_be_bytes());
            let _ = s.write_all(&b);
            // The fields: a name and 18 bytes each, for as long as the client reads.
            let mut field = b"f\0".to_vec();
            field.extend_from_slice(&[0; 18]);
            flood(s, &field.repeat(10_000));
        }
        _ => unreachable!("{script:?} answers during the startup"),
    }
}

/// Starts a hostile server running `script` on every connection; its port.
fn hostile(script: Script) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Detached: the threads end with the test process.
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(s) = s else { return };
            std::thread::spawn(move || serve(script, s));
        }
    });
    port
}

use common::measure::Measured as Ended;

/// Runs `sbsuite ARGS` to its end (killed after `limit`), with its peak RSS from `wait4`.
fn run(args: &[&str], limit: Duration) -> Ended {
    let mut cmd = common::sbsuite_process();
    cmd.args(args);
    common::measure::measured(cmd, limit)
}

/// Connect and query timeouts of the suite runs, seconds.
const DEADLINE: u64 = 2;

/// A suite on the hostile server on `port`, run to its end; also its results rows.
fn run_suite(dir: &Path, port: u16) -> (Ended, Vec<std::collections::HashMap<String, String>>) {
    let suite = dir.join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            "[suite]\nname = \"hostile\"\n\n[target]\ndriver = \"pgsql\"\nhosts = [\"127.0.0.1:{port}\"]\nuser = \"postgres\"\npassword = \"pw\"\nssl = \"disabled\"\nconnect_timeout = {DEADLINE}\nquery_timeout = {DEADLINE}\n\n[defaults]\nworkload = \"oltp_read_only\"\ntable_size = 10\ntime = 1\n"
        ),
    )
    .unwrap();
    let results = dir.join("results");
    let ended = run(
        &[
            "run",
            suite.to_str().unwrap(),
            "--results-dir",
            results.to_str().unwrap(),
            "--progress",
            "off",
        ],
        Duration::from_secs(120),
    );
    (ended, common::results(&results))
}

/// Which text each case's error must show.
fn expected(script: Script) -> &'static [&'static str] {
    match script {
        Script::HugeAuth | Script::HugeRowDescription => &["more than max_packet"],
        Script::EndlessMd5 => &["asked for authentication more than"],
        Script::EndlessParameterStatus => &["messages during the startup"],
        Script::TrickleStartup => &["within connect_timeout"],
        Script::SilentAfterReady | Script::HeaderWithoutBody => &["within query_timeout = 2 s"],
        Script::GarbageAfterReady => &["protocol error"],
        // Whichever bound comes first: the row cap, or (on a loaded machine, where the client
        // reads fewer than 100,000 rows in 2 s) the deadline; both end the endless answer.
        Script::EndlessRows => &["more than 100000 rows", "within query_timeout = 2 s"],
    }
}

/// Whether `text` says one of `want`.
fn says(text: &str, want: &[&str]) -> bool {
    want.iter().any(|w| text.contains(w))
}

/// Peak RSS allowed, KiB: a bloated client (one 2 GiB buffer, every row of an endless result)
/// is far above, the binary itself far below.
const MAX_RSS_KIB: i64 = 100 << 10;

#[test]
fn suite_runs_against_a_hostile_server_fail_fast_clearly_and_small() {
    let cases = [
        Script::HugeAuth,
        Script::EndlessMd5,
        Script::EndlessParameterStatus,
        Script::TrickleStartup,
        Script::SilentAfterReady,
        Script::HeaderWithoutBody,
        Script::GarbageAfterReady,
        Script::EndlessRows,
        Script::HugeRowDescription,
    ];
    let runs: Vec<_> = cases
        .iter()
        .map(|&script| {
            std::thread::spawn(move || {
                let dir = tempfile::tempdir().unwrap();
                let port = hostile(script);
                let (ended, rows) = run_suite(dir.path(), port);
                (script, ended, rows)
            })
        })
        .collect();
    let mut failures = Vec::new();
    for r in runs {
        let (script, e, rows) = r.join().unwrap();
        let want = expected(script);
        let mut problems = Vec::new();
        // Each connection of the run (capture, prepare, cleanup) may wait twice its deadline;
        // the rest is the binary's own start and a loaded machine.
        if e.elapsed > Duration::from_secs(3 * 2 * DEADLINE + 10) {
            problems.push(format!("took {:?}", e.elapsed));
        }
        if e.code == Some(0) || e.code.is_none() {
            problems.push(format!("exit {:?}", e.code));
        }
        if !says(&e.stderr, want) && !says(&e.stdout, want) {
            problems.push(format!("none of {want:?} in the output"));
        }
        if e.max_rss_kib > MAX_RSS_KIB {
            problems.push(format!("peak RSS {} KiB", e.max_rss_kib));
        }
        let failed = rows
            .iter()
            .find(|r| r.get("status").map(String::as_str) == Some("failed"));
        match failed {
            None => problems.push(format!("no failed row in results.csv: {rows:?}")),
            Some(r) if script_fails_a_step(script) && !says(&r["error"], want) => {
                problems.push(format!("results.csv error: {}", r["error"]))
            }
            Some(_) => {}
        }
        eprintln!(
            "{script:?}: {:.1} s, exit {:?}, peak RSS {} KiB",
            e.elapsed.as_secs_f64(),
            e.code,
            e.max_rss_kib
        );
        if !problems.is_empty() {
            failures.push(format!(
                "{script:?}: {}\n--- stderr:\n{}\n--- stdout:\n{}",
                problems.join("; "),
                e.stderr,
                e.stdout
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Whether the case's own error is a step's (in results.csv): the endless result is the
/// capture's (a warning), after which the prepare fails on the same server otherwise.
fn script_fails_a_step(script: Script) -> bool {
    !matches!(script, Script::EndlessRows)
}

/// The sysbench command line with its defaults (connect_timeout 60 s, query_timeout 300 s):
/// the cases a bound ends at once.
#[test]
fn sysbench_runs_against_a_hostile_server_fail_fast_clearly_and_small() {
    let cases = [
        Script::HugeAuth,
        Script::EndlessMd5,
        Script::EndlessParameterStatus,
        Script::GarbageAfterReady,
        Script::HugeRowDescription,
    ];
    let runs: Vec<_> = cases
        .iter()
        .map(|&script| {
            std::thread::spawn(move || {
                let port = hostile(script).to_string();
                let ended = run(
                    &[
                        "sysbench",
                        "oltp_read_only",
                        "--db-driver=pgsql",
                        "--pgsql-host=127.0.0.1",
                        &format!("--pgsql-port={port}"),
                        "--pgsql-user=postgres",
                        "--pgsql-password=pw",
                        "--tables=1",
                        "--table-size=10",
                        "--time=1",
                        "run",
                    ],
                    Duration::from_secs(120),
                );
                (script, ended)
            })
        })
        .collect();
    let mut failures = Vec::new();
    for r in runs {
        let (script, e) = r.join().unwrap();
        let want = expected(script);
        eprintln!(
            "sysbench {script:?}: {:.1} s, exit {:?}, peak RSS {} KiB",
            e.elapsed.as_secs_f64(),
            e.code,
            e.max_rss_kib
        );
        let mut problems = Vec::new();
        if e.elapsed > Duration::from_secs(15) {
            problems.push(format!("took {:?}", e.elapsed));
        }
        if e.code == Some(0) || e.code.is_none() {
            problems.push(format!("exit {:?}", e.code));
        }
        if !says(&e.stderr, want) && !says(&e.stdout, want) {
            problems.push(format!("none of {want:?} in the output"));
        }
        if e.max_rss_kib > MAX_RSS_KIB {
            problems.push(format!("peak RSS {} KiB", e.max_rss_kib));
        }
        if !problems.is_empty() {
            failures.push(format!(
                "sysbench {script:?}: {}\n--- stderr:\n{}\n--- stdout:\n{}",
                problems.join("; "),
                e.stderr,
                e.stdout
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
