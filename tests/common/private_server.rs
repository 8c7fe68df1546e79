//! Private throwaway database servers, for the tests that restart a server, change its static
//! configuration or turn TLS on.
//!
//! Everything else in `cargo test` shares the developer's MariaDB (127.0.0.1:3306) and
//! PostgreSQL (127.0.0.1:5432) and only creates and drops its own databases there. A test that
//! must restart or reconfigure a server may not do that to a shared one (it would cut off the
//! other tests and change the developer's setup), so it starts its own here: a fresh data
//! directory in a temporary directory, a free port on 127.0.0.1, a Unix socket in the same
//! directory, and nothing read from the system's option files. The guard stops the server and
//! removes the directory when it is dropped — also when the test panics, since drops run while
//! a panic unwinds. Nothing is cached across test processes: a MariaDB costs about five seconds
//! (`mariadb-install-db`), a PostgreSQL about two.
//!
//! Both servers run as daemons whose parent (`sh`, `pg_ctl`) exits at once. The test process
//! makes itself a child subreaper, so an orphaned server becomes its child and the guard can
//! reap it: a stopped server leaves no zombie behind (PID 1 of a container often reaps none).
//!
//! Whether a test may skip when no private server can start is [`or_skip`]'s business: it may
//! on a developer's machine without the server packages, never under `CI`.
//!
//! This file is also compiled into the library's unit tests (`src/db/pgsql/wire/tests.rs`
//! includes it with `#[path]`), so it uses only dependencies the library has too.

// The library's unit tests include this file for PostgreSQL alone (see above).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to become ready, on a loaded 2-core machine.
const START_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a server may take to exit after SIGTERM before it gets SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// How often a state (ready, exited) is polled where no event can be awaited.
const POLL: Duration = Duration::from_millis(20);

/// The server, or `None` after saying why the test is skipped. Under `CI` a server that cannot
/// start fails the test with the reason instead: CI must never pass by skipping.
pub fn or_skip<T>(server: Result<T, String>) -> Option<T> {
    match server {
        Ok(s) => Some(s),
        Err(e) => {
            // Fails under CI; else logged for `.ci/run`'s summary.
            super::skip(&format!("the test's private server did not start: {e}"));
            None
        }
    }
}

// ---------------------------------------------------------------------------------------------
// MariaDB

/// The server binary: Debian's path, as `.ci/run` starts the shared server.
const MARIADBD: &str = "/usr/sbin/mariadbd";

/// Keep the throwaway server small and quick to start: no binary log, a 16 MiB buffer pool, an
/// 8 MiB redo log (the default 96 MiB would be written out at install).
const MARIADB_SMALL: [&str; 3] = [
    "--skip-log-bin",
    "--innodb-buffer-pool-size=16M",
    "--innodb-log-file-size=8M",
];

/// A private MariaDB (root, no password, on `127.0.0.1:port()`), stopped and removed on drop.
///
/// It is started by the script `restart.sh` in its directory, which a `restart` variant can
/// run as its command (see [`PrivateMariaDb::restart_command`]).
pub struct PrivateMariaDb {
    dir: tempfile::TempDir,
    port: u16,
}

impl PrivateMariaDb {
    /// Installs a data directory and starts `mariadbd` with the server `options` (e.g.
    /// `--ssl-cert=…`) added to its own; returns once it answers a query.
    pub fn start(options: &[&str]) -> Result<PrivateMariaDb, String> {
        if !Path::new(MARIADBD).exists() {
            return Err(format!(
                "{MARIADBD} is not installed (apt-get install mariadb-server)"
            ));
        }
        become_subreaper();
        let dir = temp_dir("sbsuite-mariadb-")?;
        let data = dir.path().join("data");
        // mariadbd refuses to run as root unless told to, and only root may name a user.
        let user: &[&str] = if is_root() { &["--user=root"] } else { &[] };
        let install = Command::new("mariadb-install-db")
            .arg("--no-defaults")
            .arg("--auth-root-authentication-method=normal")
            .arg(format!("--datadir={}", data.display()))
            .args(["--skip-test-db", "--skip-name-resolve"])
            .args(user)
            .args(MARIADB_SMALL)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .output();
        check("mariadb-install-db", install)?;
        let port = free_port()?;
        let d = dir.path().display();
        let mut server_options = vec![
            format!("--datadir={d}/data"),
            format!("--socket={d}/mariadbd.sock"),
            format!("--port={port}"),
            "--bind-address=127.0.0.1".to_string(),
            format!("--pid-file={d}/mariadbd.pid"),
        ];
        server_options.extend(MARIADB_SMALL.iter().chain(user).map(|s| s.to_string()));
        server_options.extend(options.iter().map(|s| s.to_string()));
        let quoted: Vec<String> = server_options.iter().map(|o| shell_quote(o)).collect();
        std::fs::write(
            dir.path().join("restart.sh"),
            restart_script(dir.path(), &quoted.join(" ")),
        )
        .map_err(|e| format!("writing restart.sh: {e}"))?;
        // From here on, dropping `server` stops whatever was started.
        let server = PrivateMariaDb { dir, port };
        let started = Command::new("sh")
            .arg(server.dir.path().join("restart.sh"))
            .stdin(Stdio::null())
            .output();
        check("restart.sh", started)?;
        server.wait_ready()?;
        Ok(server)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:PORT`, as a suite's `hosts` entry.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The shell command that restarts this server with `--defaults-file=FILE` while FILE
    /// exists, and with no option file once it is gone: the command of a `restart` variant
    /// that renders FILE (sbsuite runs it to apply the file and again after removing it).
    pub fn restart_command(&self, file: &Path) -> String {
        format!(
            "sh {} {}",
            shell_quote(&self.dir.path().join("restart.sh").display().to_string()),
            shell_quote(&file.display().to_string())
        )
    }

    /// How many times `restart.sh` started the server (1 until something restarts it).
    pub fn starts(&self) -> usize {
        read_pids(&self.dir.path().join("started.pids")).len()
    }

    /// The pid of the running server, as `restart.sh` recorded it.
    fn pid(&self) -> Option<i32> {
        read_pids(&self.dir.path().join("server.pid")).pop()
    }

    /// Polls until the server answers `SELECT 1` over TCP; fails at once if it exits.
    fn wait_ready(&self) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("tokio runtime: {e}"))?;
        let opts = mysql_async::OptsBuilder::default()
            .ip_or_hostname("127.0.0.1")
            .tcp_port(self.port)
            .user(Some("root"));
        loop {
            let answer = rt.block_on(async {
                let attempt = async {
                    let mut c = mysql_async::Conn::new(opts.clone()).await?;
                    use mysql_async::prelude::Queryable;
                    let one: Option<i64> = c.query_first("SELECT 1").await?;
                    let _ = c.disconnect().await;
                    Ok::<_, mysql_async::Error>(one)
                };
                tokio::time::timeout(Duration::from_secs(10), attempt).await
            });
            let why = match answer {
                Ok(Ok(Some(1))) => return Ok(()),
                Ok(Ok(other)) => format!("SELECT 1 answered {other:?}"),
                Ok(Err(e)) => e.to_string(),
                Err(_) => "no answer within 10 s".to_string(),
            };
            if !self.pid().is_some_and(running) {
                return Err(format!(
                    "mariadbd exited while starting ({why}); its log ends:\n{}",
                    log_tail(&self.dir.path().join("mariadbd.log"))
                ));
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "mariadbd did not answer within {START_TIMEOUT:?} ({why}); its log ends:\n{}",
                    log_tail(&self.dir.path().join("mariadbd.log"))
                ));
            }
            std::thread::sleep(POLL);
        }
    }
}

impl Drop for PrivateMariaDb {
    fn drop(&mut self) {
        // Every server restart.sh ever started (a restart leaves the old one to be reaped).
        for pid in read_pids(&self.dir.path().join("started.pids")) {
            stop(pid);
        }
    }
}

/// The script that (re)starts the private MariaDB: stops the running one (SIGTERM, waiting for
/// it to exit, SIGKILL after 60 s), then starts `mariadbd` in the background with `options`,
/// reading `--defaults-file=$1` when the file `$1` exists and no option file otherwise. The
/// server's output goes to its log, so a caller that reads the script's output until it ends
/// (as sbsuite does with a restart command) does not wait for the server.
fn restart_script(dir: &Path, options: &str) -> String {
    let d = shell_quote(&dir.display().to_string());
    format!(
        r#"#!/bin/sh
# Restarts the private MariaDB of an sbsuite test (tests/common/private_server.rs).
set -eu
dir={d}
gone() {{ [ ! -e "/proc/$1" ] || [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" = Z ]; }}
if [ -f "$dir/server.pid" ]; then
  pid=$(cat "$dir/server.pid")
  kill -TERM "$pid" 2>/dev/null || true
  waited=0
  until gone "$pid"; do
    waited=$((waited + 1))
    [ "$waited" -ne 3000 ] || kill -KILL "$pid" 2>/dev/null || true
    sleep 0.02
  done
  rm -f "$dir/server.pid"
fi
if [ -n "${{1:-}}" ] && [ -f "$1" ]; then files="--defaults-file=$1"; else files=--no-defaults; fi
{MARIADBD} "$files" {options} </dev/null >>"$dir/mariadbd.log" 2>&1 &
echo $! >>"$dir/started.pids"
echo $! >"$dir/server.pid"
"#
    )
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL

/// A private PostgreSQL with TLS on (superuser `postgres`, trust, on `127.0.0.1:port()` and a
/// socket in its directory), stopped and removed on drop.
///
/// Its certificate is self-signed for `localhost` only (like Debian's snakeoil one), so it is
/// its own CA, `verify-full` passes for `localhost` and fails for `127.0.0.1`.
pub struct PrivatePostgres {
    dir: tempfile::TempDir,
    port: u16,
    bin: PathBuf,
}

impl PrivatePostgres {
    /// Makes the certificate, runs `initdb` and starts the server with `pg_ctl -w` (which
    /// returns once the server accepts connections). As root, both run as the `postgres` user
    /// (initdb refuses root), which then owns the directory.
    pub fn start() -> Result<PrivatePostgres, String> {
        let bin = postgres_bin()?;
        become_subreaper();
        let dir = temp_dir("sbsuite-pgsql-")?;
        let d = dir.path().display().to_string();
        let cert = Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
            .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"])
            .args([
                "-subj",
                "/CN=localhost",
                "-addext",
                "subjectAltName=DNS:localhost",
            ])
            .args(["-addext", "basicConstraints=critical,CA:FALSE"])
            .args(["-keyout", &format!("{d}/server.key")])
            .args(["-out", &format!("{d}/server.pem")])
            .stdin(Stdio::null())
            .output();
        check("openssl (the server certificate)", cert)?;
        // The server refuses a key others can read.
        std::fs::set_permissions(
            dir.path().join("server.key"),
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )
        .map_err(|e| format!("chmod server.key: {e}"))?;
        if is_root() {
            let chown = Command::new("chown")
                .args(["-R", "postgres:", &d])
                .stdin(Stdio::null())
                .output();
            check("chown -R postgres: (no `postgres` user?)", chown)?;
        }
        let port = free_port()?;
        let server = PrivatePostgres { dir, port, bin };
        let initdb = server
            .as_postgres("initdb")
            .args(["-D", &format!("{d}/data"), "-U", "postgres", "--auth=trust"])
            .args(["--no-sync", "--no-locale", "-E", "UTF8"])
            .output();
        check("initdb", initdb)?;
        // From here on, dropping `server` stops whatever was started.
        let options = format!(
            "-p {port} -k {d} -c listen_addresses=127.0.0.1 -c ssl=on -c ssl_cert_file={d}/server.pem -c ssl_key_file={d}/server.key -c fsync=off -c shared_buffers=16MB"
        );
        let started = server
            .as_postgres("pg_ctl")
            .args([
                "-D",
                &format!("{d}/data"),
                "-l",
                &format!("{d}/postgres.log"),
            ])
            .args(["-w", "-t", &START_TIMEOUT.as_secs().to_string()])
            .args(["-o", &options, "start"])
            .output();
        check("pg_ctl start", started).map_err(|e| {
            format!(
                "{e}; the server log ends:\n{}",
                log_tail(&server.dir.path().join("postgres.log"))
            )
        })?;
        Ok(server)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:PORT`, as a suite's `hosts` entry.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The server's certificate, which is also the CA to trust.
    pub fn cert(&self) -> PathBuf {
        self.dir.path().join("server.pem")
    }

    /// The directory of the server's Unix socket (its own temporary directory).
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The server's Unix socket, `DIR/.s.PGSQL.PORT`.
    pub fn socket(&self) -> PathBuf {
        self.socket_dir().join(format!(".s.PGSQL.{}", self.port))
    }

    /// `program` of the server's installation, run as `postgres` when we are root.
    fn as_postgres(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        let mut cmd = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        };
        cmd.stdin(Stdio::null());
        cmd
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        let Some(pid) = read_pids(&data.join("postmaster.pid")).first().copied() else {
            return; // never started
        };
        // Immediate: nothing in a throwaway cluster is worth a checkpoint.
        let _ = self
            .as_postgres("pg_ctl")
            .arg("-D")
            .arg(&data)
            .args(["-m", "immediate", "-w", "-t", "30", "stop"])
            .output();
        // Reaps the postmaster (our child, as the subreaper), or kills it if pg_ctl could not.
        stop(pid);
    }
}

/// The `bin` directory of the newest PostgreSQL under /usr/lib/postgresql (Debian's layout).
fn postgres_bin() -> Result<PathBuf, String> {
    let versions = std::fs::read_dir("/usr/lib/postgresql")
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let v: u32 = e.file_name().to_str()?.parse().ok()?;
                    let bin = e.path().join("bin");
                    bin.join("initdb").exists().then_some((v, bin))
                })
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    versions
        .into_iter()
        .max_by_key(|(v, _)| *v)
        .map(|(_, bin)| bin)
        .ok_or_else(|| {
            "no /usr/lib/postgresql/*/bin/initdb (apt-get install postgresql)".to_string()
        })
}

// ---------------------------------------------------------------------------------------------
// processes

/// Makes this process the reaper of its orphaned descendants (servers whose starter exited),
/// so that [`stop`] can wait for them instead of leaving zombies.
fn become_subreaper() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: sets a flag of this process; no memory is passed.
        unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0);
        }
    });
}

/// Whether `pid` still runs. Reaps it when it is our child and has exited; a process that is
/// not our child and has exited (a zombie) counts as gone.
fn running(pid: i32) -> bool {
    let mut status = 0;
    // SAFETY: waits, without blocking, only for this pid.
    if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        // `pid (comm) STATE …`: comm may hold spaces and parentheses, the last `)` ends it.
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Stops `pid`: SIGTERM, then SIGKILL if it has not exited within [`STOP_TIMEOUT`]; waits
/// for it to be gone (and reaped, when it is our child).
fn stop(pid: i32) {
    if !running(pid) {
        return;
    }
    let signal = |sig| {
        // SAFETY: signals one process, recorded as a server this guard started.
        unsafe { libc::kill(pid, sig) };
    };
    signal(libc::SIGTERM);
    let deadline = Instant::now() + STOP_TIMEOUT;
    while running(pid) {
        if Instant::now() > deadline {
            signal(libc::SIGKILL);
            let killed = Instant::now();
            while running(pid) && killed.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(POLL);
            }
            return;
        }
        std::thread::sleep(POLL);
    }
}

/// The pids in `file`, one a line (the first line of a PostgreSQL pid file).
fn read_pids(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map_while(|l| l.trim().parse().ok())
        .collect()
}

fn is_root() -> bool {
    // SAFETY: reads this process's effective uid.
    unsafe { libc::geteuid() == 0 }
}

/// A fresh directory under the system's temp dir, removed when dropped.
fn temp_dir(prefix: &str) -> Result<tempfile::TempDir, String> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .map_err(|e| format!("cannot create a temporary directory: {e}"))
}

/// A port nobody listens on now: the kernel's pick for 127.0.0.1:0.
fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("cannot pick a free port: {e}"))
}

/// `Ok` when `what` ran and succeeded, else why not, with what it printed.
fn check(what: &str, out: std::io::Result<Output>) -> Result<(), String> {
    match out {
        Err(e) => Err(format!("cannot run {what}: {e}")),
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "{what} failed ({}): {}{}",
            o.status,
            String::from_utf8_lossy(&o.stdout).trim(),
            String::from_utf8_lossy(&o.stderr).trim()
        )),
    }
}

/// The last lines of a server log, for an error message.
fn log_tail(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// `s` as one single-quoted shell word.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}
