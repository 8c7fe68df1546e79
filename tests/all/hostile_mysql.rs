//! Hostile MySQL servers against the real binary (#13): each case is a scripted fake server
//! (a `TcpListener` thread) that misbehaves in one way a broken server, proxy or attacker
//! could — endless 16 MiB greeting packets, silence, a partial greeting, an auth-switch
//! loop, a header promising bytes that never come, garbage after an OK, 2^40 columns, an
//! endless answer to the startup capture, a trickle of one byte per second — and `sbsuite`
//! must end with a clear error within twice its deadlines (plus a startup allowance) and a
//! peak RSS under 100 MB, through `sbsuite run` (connect_timeout = query_timeout = 2 s) and
//! through the sysbench drop-in (its defaults: only the cases that end by a bound of size).
//!
//! The peak RSS is the child's own (`wait4`'s `ru_maxrss`). `SBSUITE_HOSTILE_BIN` runs the
//! cases against another build (e.g. one from before the fix, to see them fail).

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

// ---------------------------------------------------------------------------------------------
// the fake server

/// One packet of `payload` with sequence id `seq`.
fn pk(seq: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as u32).to_le_bytes()[..3].to_vec();
    out.push(seq);
    out.extend_from_slice(payload);
    out
}

/// A MariaDB-shaped greeting offering protocol 4.1, plugin auth and CLIENT_DEPRECATE_EOF.
fn greeting() -> Vec<u8> {
    let caps: u32 = 1
        | 1 << 2
        | 1 << 3
        | 1 << 9
        | 1 << 13
        | 1 << 15
        | 1 << 16
        | 1 << 17
        | 1 << 18
        | 1 << 19
        | 1 << 24;
    let mut p = vec![10];
    p.extend_from_slice(b"5.5.5-10.11.0-Hostile\0");
    p.extend_from_slice(&7u32.to_le_bytes());
    p.extend_from_slice(b"abcdefgh\0");
    p.extend_from_slice(&(caps as u16).to_le_bytes());
    p.push(45);
    p.extend_from_slice(&2u16.to_le_bytes());
    p.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
    p.push(21);
    p.extend_from_slice(&[0; 10]);
    p.extend_from_slice(b"ijklmnopqrst\0");
    p.extend_from_slice(b"mysql_native_password\0");
    pk(0, &p)
}

const OK: &[u8] = &[0, 0, 0, 2, 0, 0, 0];

/// Reads one packet's payload; `None` when the client has gone.
fn read_packet(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut h = [0u8; 4];
    s.read_exact(&mut h).ok()?;
    let len = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
    let mut p = vec![0; len];
    s.read_exact(&mut p).ok()?;
    Some(p)
}

/// Says nothing and waits until the client has gone.
fn silence(s: &mut TcpStream) {
    let mut buf = [0u8; 4096];
    while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
}

/// Greets and accepts any login.
fn login(s: &mut TcpStream) -> Option<()> {
    s.write_all(&greeting()).ok()?;
    read_packet(s)?;
    s.write_all(&pk(2, OK)).ok()
}

/// After a login, answers commands: `special` gets each COM_QUERY text first and says
/// whether it took over (then the connection is its own); the rest get an OK, except
/// prepare and the statements of `prepare`, which get an error (so that no step goes on for
/// long against this fake).
fn serve(mut s: TcpStream, special: fn(&mut TcpStream, &str) -> bool) {
    if login(&mut s).is_none() {
        return;
    }
    while let Some(p) = read_packet(&mut s) {
        let answer = match p.first() {
            Some(0x01) | None => return,
            Some(0x03) => {
                let sql = String::from_utf8_lossy(&p[1..]).into_owned();
                if special(&mut s, &sql) {
                    return;
                }
                if sql.starts_with("SELECT") || sql.starts_with("SHOW") {
                    pk(1, OK)
                } else {
                    pk(1, b"\xFF\x51\x04#HY000the hostile server does not do that")
                }
            }
            Some(0x19) => continue,
            Some(_) => pk(1, b"\xFF\x51\x04#HY000the hostile server does not do that"),
        };
        if s.write_all(&answer).is_err() {
            return;
        }
    }
}

/// Starts a fake server running `script` for every connection; returns its port.
fn hostile(script: fn(TcpStream)) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || script(s));
        }
    });
    port
}

// The scripts.

fn endless_greeting(mut s: TcpStream) {
    // 16 MiB continuation packets for ever: the client must refuse the first header.
    let chunk = vec![b'g'; 0xFF_FFFF];
    for seq in 0u8.. {
        if s.write_all(&[0xFF, 0xFF, 0xFF, seq]).is_err() || s.write_all(&chunk).is_err() {
            return;
        }
    }
}

fn greeting_then_silence(mut s: TcpStream) {
    if s.write_all(&greeting()).is_ok() {
        silence(&mut s);
    }
}

fn partial_greeting(mut s: TcpStream) {
    if s.write_all(&greeting()[..20]).is_ok() {
        silence(&mut s);
    }
}

fn trickle(mut s: TcpStream) {
    for b in greeting() {
        if s.write_all(&[b]).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    silence(&mut s);
}

fn auth_switch_loop(mut s: TcpStream) {
    if s.write_all(&greeting()).is_err() {
        return;
    }
    let mut seq = 2u8;
    while read_packet(&mut s).is_some() {
        let mut p = vec![0xFE];
        p.extend_from_slice(b"mysql_native_password\0abcdefghijklmnopqrst\0");
        if s.write_all(&pk(seq, &p)).is_err() {
            return;
        }
        seq = seq.wrapping_add(2);
    }
}

fn ok_then_silence(s: TcpStream) {
    serve(s, |s, _| {
        silence(s);
        true
    });
}

fn ok_then_silence_after_setup(s: TcpStream) {
    // mysql_async reads `@@wait_timeout` when it connects: answered (an OK, no row).
    serve(s, |s, sql| {
        if sql.contains("@@wait_timeout") {
            return false;
        }
        silence(s);
        true
    });
}

fn protocol_9(mut s: TcpStream) {
    if s.write_all(&pk(0, b"\x095.0.0\0")).is_ok() {
        silence(&mut s);
    }
}

fn header_promise(s: TcpStream) {
    serve(s, |s, _| {
        // 1,000 bytes announced, 10 sent.
        let _ = s.write_all(&[0xE8, 0x03, 0x00, 0x01]);
        let _ = s.write_all(b"0123456789");
        silence(s);
        true
    });
}

fn garbage_after_ok(s: TcpStream) {
    serve(s, |s, _| {
        let mut answer = pk(1, OK);
        answer.extend_from_slice(b"\x01\x02\x03");
        let _ = s.write_all(&answer);
        // The client's next command finds the garbage; it gets no answer.
        let _ = read_packet(s);
        silence(s);
        true
    });
}

fn endless_columns(s: TcpStream) {
    serve(s, |s, _| {
        // 2^40 columns, then column definitions for ever.
        let mut head = vec![0xFE];
        head.extend_from_slice(&(1u64 << 40).to_le_bytes());
        if s.write_all(&pk(1, &head)).is_err() {
            return true;
        }
        let def =
            b"\x03def\x00\x00\x00\x01x\x01x\x0c\x3f\x00\x0b\x00\x00\x00\x08\x81\x00\x00\x00\x00";
        let mut seq = 2u8;
        while s.write_all(&pk(seq, def)).is_ok() {
            seq = seq.wrapping_add(1);
        }
        true
    });
}

fn endless_capture(s: TcpStream) {
    serve(s, |s, sql| {
        if !sql.contains("VARIABLES") {
            return false;
        }
        // Two columns, then rows for ever (CLIENT_DEPRECATE_EOF: no EOF after the columns).
        let def =
            b"\x03def\x00\x00\x00\x01x\x01x\x0c\x3f\x00\x0b\x00\x00\x00\x08\x81\x00\x00\x00\x00";
        let mut out = pk(1, &[2]);
        out.extend(pk(2, def));
        out.extend(pk(3, def));
        if s.write_all(&out).is_err() {
            return true;
        }
        let mut seq = 4u8;
        let mut batch = Vec::new();
        loop {
            batch.clear();
            for _ in 0..1000 {
                batch.extend(pk(seq, b"\x0finnodb_variable\x0512345"));
                seq = seq.wrapping_add(1);
            }
            if s.write_all(&batch).is_err() {
                return true;
            }
        }
    });
}

// ---------------------------------------------------------------------------------------------
// the client

/// How a child ended.
use common::measure::Measured as Outcome;

/// The binary under test.
fn binary() -> PathBuf {
    match std::env::var_os("SBSUITE_HOSTILE_BIN") {
        Some(p) => p.into(),
        None => assert_cmd::cargo::cargo_bin("sbsuite"),
    }
}

/// Runs `sbsuite ARGS` in `dir`, killed after `limit` (a hang is a failure, not a hung test),
/// and measures its time and peak RSS.
fn run(dir: &Path, args: &[&str], env: &[(&str, &str)], limit: Duration) -> Outcome {
    let mut cmd = Command::new(binary());
    for (k, _) in std::env::vars() {
        if k.starts_with("SBSUITE_") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(env.iter().copied());
    cmd.args(args).current_dir(dir);
    common::measure::measured(cmd, limit)
}

/// The suite of a case: OLTP read-only on a tiny table, deadlines of 2 s.
fn suite(port: u16) -> String {
    format!(
        "[suite]\nname = \"hostile\"\n\n[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:{port}\"]\nuser = \"root\"\ndatabase = \"sbtest\"\nconnect_timeout = 2\nquery_timeout = 2\n\n[defaults]\nworkload = \"oltp_read_only\"\ntable_size = 10\ntime = 1\nthreads = 1\nreport_interval = 0\n"
    )
}

/// The deadlines of the suite: 2 s. A case may pay them once per connection of a step that
/// fails (setup capture, prepare, cleanup), so the bound is twice the deadline per step plus
/// the startup allowance of the issue: 3 × 2 × 2 s + 10 s.
const SUITE_BOUND: Duration = Duration::from_secs(3 * 2 * 2 + 10);

/// The cases that end by a bound of size, not of time, also end fast with sysbench's
/// defaults (no deadline of 2 s there).
const SIZE_BOUND: Duration = Duration::from_secs(10);

/// 100 MB, in KiB as `ru_maxrss`.
const MAX_RSS_KIB: i64 = 100 * 1000;

struct Case {
    name: &'static str,
    script: fn(TcpStream),
    /// What stderr must say (one of these).
    says: &'static [&'static str],
    /// Whether the sysbench drop-in (default deadlines of 60 s and 300 s) runs it too.
    sysbench: bool,
    /// The environment of the client (`SBSUITE_MYSQL_CLIENT=async`: mysql_async's bounds).
    env: &'static [(&'static str, &'static str)],
}

const CASES: &[Case] = &[
    Case {
        name: "greeting of endless 16 MiB packets",
        script: endless_greeting,
        says: &["sent a handshake packet of 16777215 bytes"],
        sysbench: true,
        env: &[],
    },
    Case {
        name: "greeting, then silence",
        script: greeting_then_silence,
        says: &["did not finish the authentication within connect_timeout = 2 s"],
        sysbench: false,
        env: &[],
    },
    Case {
        name: "partial greeting",
        script: partial_greeting,
        says: &["sent 20 bytes of its greeting but not the rest within connect_timeout = 2 s"],
        sysbench: false,
        env: &[],
    },
    Case {
        name: "greeting at 1 byte per second",
        script: trickle,
        says: &["of its greeting but not the rest within connect_timeout = 2 s"],
        sysbench: false,
        env: &[],
    },
    Case {
        name: "auth-switch loop",
        script: auth_switch_loop,
        says: &[
            "neither accepted nor refused the login after 4 authentication rounds (auth plugins used: mysql_native_password",
        ],
        sysbench: true,
        env: &[],
    },
    Case {
        name: "OK, then silence on the first query",
        script: ok_then_silence,
        says: &["did not answer within query_timeout = 2 s"],
        sysbench: false,
        env: &[],
    },
    Case {
        name: "a header promising bytes that never come",
        script: header_promise,
        says: &["did not answer within query_timeout = 2 s"],
        sysbench: false,
        env: &[],
    },
    Case {
        name: "garbage after an OK",
        script: garbage_after_ok,
        // Found before the next command when it came with the OK, else that command's
        // answer never comes.
        says: &[
            "bytes that answer no command",
            "did not answer within query_timeout = 2 s",
        ],
        sysbench: false,
        env: &[],
    },
    Case {
        name: "endless column definitions",
        script: endless_columns,
        says: &["announced 1099511627776 columns (MySQL allows at most 4096)"],
        sysbench: true,
        env: &[],
    },
    Case {
        name: "endless answer to SHOW GLOBAL VARIABLES",
        script: endless_capture,
        // Whichever bound comes first: the row cap, or (on a loaded machine, where the client
        // reads fewer than 100,000 rows in 2 s) the deadline; both end the endless answer.
        says: &[
            "the answer to `SHOW GLOBAL VARIABLES` has more than 100000 rows",
            "did not answer within query_timeout = 2 s",
        ],
        sysbench: false,
        env: &[],
    },
    Case {
        name: "mysql_async: OK, then silence on the first query after its setup",
        script: ok_then_silence_after_setup,
        says: &["did not answer within query_timeout = 2 s"],
        sysbench: false,
        env: &[("SBSUITE_MYSQL_CLIENT", "async")],
    },
    Case {
        name: "a greeting the wire client does not speak (protocol 9): mysql_async's error with why",
        script: protocol_9,
        says: &["(through mysql_async, used because the wire client found: protocol version 9)"],
        sysbench: true,
        env: &[],
    },
];

/// Runs one case through `sbsuite run`; returns what is wrong (empty: nothing).
fn suite_case(c: &Case) -> Vec<String> {
    let port = hostile(c.script);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("suite.toml"), suite(port)).unwrap();
    let o = run(
        dir.path(),
        &[
            "run",
            "suite.toml",
            "--results-dir",
            "res",
            "--progress",
            "off",
        ],
        c.env,
        Duration::from_secs(60),
    );
    let mut wrong = judge(c.says, &o, SUITE_BOUND);
    // The results: every row failed (none ok), one with an error text.
    let csv = std::fs::read_dir(dir.path().join("res/hostile"))
        .ok()
        .and_then(|mut d| d.next())
        .and_then(|e| std::fs::read_to_string(e.ok()?.path().join("results.csv")).ok());
    match csv {
        None => wrong.push("no results.csv".into()),
        Some(csv) => {
            let mut lines = csv.lines();
            let head: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
            let col = |name: &str| head.iter().position(|h| *h == name);
            let (Some(status), Some(error)) = (col("status"), col("error")) else {
                return vec![format!("results.csv has no status/error column: {csv}")];
            };
            let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
            if rows.is_empty() {
                wrong.push(format!("results.csv has no rows: {csv}"));
            }
            for r in &rows {
                let st = r.get(status).copied().unwrap_or("");
                let er = r.get(error).copied().unwrap_or("");
                if st == "ok" || er.is_empty() {
                    wrong.push(format!("a row is `{st}` with error `{er}`: {csv}"));
                }
            }
        }
    }
    wrong
}

/// Runs one case through `sbsuite sysbench … prepare`.
fn sysbench_case(c: &Case) -> Vec<String> {
    let port = hostile(c.script);
    let dir = tempfile::tempdir().unwrap();
    let port_arg = format!("--mysql-port={port}");
    let o = run(
        dir.path(),
        &[
            "sysbench",
            "oltp_read_only",
            "--mysql-host=127.0.0.1",
            &port_arg,
            "--mysql-user=root",
            "--tables=1",
            "--table-size=10",
            "prepare",
        ],
        c.env,
        Duration::from_secs(60),
    );
    // A failed step's `FATAL:` is on stdout, as sysbench prints it (#14): judged as stderr.
    let o = Outcome {
        stderr: format!("{}{}", o.stderr, o.stdout),
        ..o
    };
    judge(c.says, &o, SIZE_BOUND)
}

/// What is wrong with an outcome.
fn judge(says: &[&str], o: &Outcome, bound: Duration) -> Vec<String> {
    let mut wrong = Vec::new();
    if o.code.is_none_or(|c| c == 0) {
        wrong.push(format!("exit status {:?} (killed or 0)", o.code));
    }
    if o.elapsed > bound {
        wrong.push(format!("took {:?}, more than {bound:?}", o.elapsed));
    }
    if o.max_rss_kib > MAX_RSS_KIB {
        wrong.push(format!("peak RSS {} KiB", o.max_rss_kib));
    }
    if !says.iter().any(|s| o.stderr.contains(s)) {
        wrong.push(format!("stderr does not say any of {says:?}"));
    }
    if !wrong.is_empty() {
        wrong.push(format!(
            "stderr:\n{}\nstdout:\n{}",
            o.stderr.trim_end(),
            o.stdout.trim_end()
        ));
    }
    eprintln!(
        "  {:?} in {:.1} s, peak RSS {} KiB: {}",
        o.code,
        o.elapsed.as_secs_f64(),
        o.max_rss_kib,
        o.stderr.lines().next().unwrap_or("")
    );
    wrong
}

/// Every case at once (each case is mostly waiting), then one report of all failures.
fn all(cases: Vec<&'static Case>, f: fn(&Case) -> Vec<String>) {
    let handles: Vec<_> = cases
        .into_iter()
        .map(|c| (c.name, std::thread::spawn(move || f(c))))
        .collect();
    let mut failures = Vec::new();
    for (name, h) in handles {
        let wrong = h.join().unwrap();
        if !wrong.is_empty() {
            failures.push(format!("--- {name}:\n{}", wrong.join("\n")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn suite_runs_end_with_a_clear_error_in_time_and_memory() {
    all(CASES.iter().collect(), suite_case);
}

#[test]
fn the_sysbench_drop_in_ends_with_a_clear_error_on_size_bounds() {
    all(CASES.iter().filter(|c| c.sysbench).collect(), sysbench_case);
}

#[test]
fn a_fake_that_behaves_lets_a_suite_get_past_the_handshake() {
    // The fake itself is sound: a well-behaved variant gets to the statements (whose errors it
    // makes up), so the failures above are the misbehaviour's.
    let port = hostile(|s| serve(s, |_, _| false));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("suite.toml"), suite(port)).unwrap();
    let o = run(
        dir.path(),
        &[
            "run",
            "suite.toml",
            "--results-dir",
            "res",
            "--progress",
            "off",
        ],
        &[],
        Duration::from_secs(60),
    );
    assert!(
        o.stderr.contains("the hostile server does not do that"),
        "{}",
        o.stderr
    );
    let _ = common::sbsuite;
}
