//! The server's process and host read on another machine (#29): `[target] server_host =
//! "ssh:DEST"` or `"kubernetes:NAMESPACE/POD[/CONTAINER]"`, for a server that sbsuite reaches
//! over the network but whose /proc is elsewhere.
//!
//! Why it is shaped this way:
//! - **The same numbers as on this host**: each reading is one remote command that prints
//!   the texts the local reading reads (`/proc/PID/stat`, its children's, `/proc/stat`,
//!   `/proc/diskstats`, the whole disks of `/sys/block`), separated by a marker line, and
//!   parsed by the parent module's pure functions ([`super::proc_stat`],
//!   [`super::server_values`]). Nothing is computed remotely; the remote needs a POSIX shell
//!   and `cat`, nothing of sbsuite.
//! - **The transports of `[clients]`** ([`crate::clients::transport`]'s `ssh_command` and
//!   `kubectl_exec_command`): the user's ssh config, keys and jump hosts, `BatchMode` (never a
//!   prompt), the kubeconfig context. No second way of building an ssh command line.
//! - **A warm session**: one ssh (or `kubectl exec -i`) session for the run, running `sh`
//!   on the host; each reading is one command line written to its input, its output read
//!   back up to an end marker. A reading then costs a round trip and the `cat`s, not a
//!   connection, nor a login shell (whose rc files may take longer than the reading), and
//!   kubectl is as cheap as ssh. The session's CPU (its ssh or kubectl process, from its
//!   /proc) is counted with the reading's own, in `client.cost_read_cpu_ms`. It ends when its
//!   input closes: when sbsuite ends, however it ends. A session that dies after it worked
//!   (a network blip) is started again once.
//! - **Finding the process** as the local path's fallback does: the server names it (MySQL's
//!   `@@pid_file`, read on the SQL connection and then `cat` remotely; PostgreSQL's backend's
//!   parent, from the remote /proc), and it must have one of the server's names. Once per run
//!   (again after a restart: its start time is in every reading).
//! - **Never fails a step**: a host that cannot be reached is a warning, once, and it is not
//!   tried again that run (a host that does not answer would otherwise cost its connect
//!   timeout before and after every step); a process not found is a warning and empty cells.
//!   Every remote command has a deadline.
//! - **Its own process group** for the session: the terminal's Ctrl-C reaches sbsuite alone,
//!   which reads the cost after the step it stopped on the session it has, without connecting
//!   again.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use crate::clients::transport::{kubectl_exec_command, shell_quote, ssh_command};
use crate::db::Connection;
use crate::db::counters::PidQuery;
use crate::suite::clients::{ServerHost, ServerHostAccess};

use super::{ProcStat, proc_stat, server_values};

/// The line between the texts of one remote command's output.
const MARK: &str = "@sbsuite-cost@";
/// The lines before and after one command's output in the session.
const BEGIN: &str = "@sbsuite-cost-begin@";
const END: &str = "@sbsuite-cost-end@";

/// How much longer than the connect timeout a remote command may take.
const GRACE: Duration = Duration::from_secs(10);

/// The server process found on the remote host.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct RemoteProcess {
    pub pid: i32,
    pub start: u64,
    /// Its name (`/proc/PID/comm`).
    pub name: String,
    /// The remote host's name (`/proc/sys/kernel/hostname`).
    pub hostname: String,
    /// Milliseconds per clock tick there (`getconf CLK_TCK`).
    pub tick_ms: f64,
}

/// What one reading gave: the values, or why there are none.
#[derive(Debug, Default)]
pub(super) struct Reading {
    pub values: Vec<(String, f64)>,
    /// For the step loop, each printed once per run by the caller.
    pub warning: Option<String>,
    /// The CPU this process's helpers (ssh, kubectl) spent on it, in ms.
    pub helper_cpu_ms: f64,
    /// A process found by this reading (first, or after a restart), for `host.json`.
    pub found: Option<RemoteProcess>,
}

/// The server's host, reached for each reading.
pub(super) struct Remote {
    access: ServerHostAccess,
    /// Before `dir`: fields drop in order, and the session writes into it until it ends.
    session: Option<Session>,
    /// The private directory of the session's messages (its stderr).
    dir: Option<tempfile::TempDir>,
    /// The host could not be reached: it is not tried again this run.
    unreachable: bool,
    process: Option<RemoteProcess>,
}

impl Remote {
    pub fn new(access: ServerHostAccess) -> Remote {
        Remote {
            access,
            dir: None,
            session: None,
            unreachable: false,
            process: None,
        }
    }

    /// `ssh:DEST` or `kubernetes:NS/POD[/C]`, for messages and `host.json`.
    pub fn source(&self) -> String {
        self.access.host.to_string()
    }

    /// Before a step: finds the server's process when not yet found (on `conn`, the reader's
    /// SQL connection), or again when it restarted, then reads.
    pub fn before(
        &mut self,
        pid_query: Option<(PidQuery, &[&str])>,
        conn: &mut dyn Connection,
    ) -> Reading {
        let mut r = Reading::default();
        if self.unreachable {
            return r;
        }
        for attempt in 0..2 {
            if self.process.is_none() {
                let Some((query, names)) = pid_query else {
                    return r;
                };
                match self.locate(query, names, conn, &mut r.helper_cpu_ms) {
                    Ok(p) => {
                        r.found = Some(p.clone());
                        self.process = Some(p);
                    }
                    Err(why) => {
                        r.warning = Some(why);
                        return r;
                    }
                }
            }
            match self.read(&mut r.helper_cpu_ms) {
                Ok(Some(values)) => {
                    r.values = values;
                    return r;
                }
                // Gone or restarted since it was found: look for it again, once.
                Ok(None) if attempt == 0 => self.process = None,
                Ok(None) => return r,
                Err(why) => {
                    r.warning = Some(why);
                    return r;
                }
            }
        }
        r
    }

    /// After a step: reads again; a process restarted during the step gives nothing (its CPU
    /// before and after do not compare) and is looked for at the next step.
    pub fn after(&mut self) -> Reading {
        let mut r = Reading::default();
        if self.unreachable || self.process.is_none() {
            return r;
        }
        match self.read(&mut r.helper_cpu_ms) {
            Ok(Some(values)) => r.values = values,
            Ok(None) => self.process = None,
            Err(why) => r.warning = Some(why),
        }
        r
    }

    /// One reading of the process found: `None` when it is gone or is another process now.
    fn read(&mut self, cpu: &mut f64) -> Result<Option<Vec<(String, f64)>>, String> {
        let Some(p) = self.process.clone() else {
            return Ok(None);
        };
        let out = self
            .run(&reading_script(p.pid), cpu)
            .map_err(|e| self.fail(e))?;
        Ok(parse_reading(&out, &p))
    }

    /// Finds the server's process: its pid as the server names it, then its name, start
    /// time, host name and clock tick in one more command.
    fn locate(
        &mut self,
        query: PidQuery,
        names: &[&str],
        conn: &mut dyn Connection,
        cpu: &mut f64,
    ) -> Result<RemoteProcess, String> {
        let source = self.source();
        let first = |conn: &mut dyn Connection, sql: &str| -> Option<String> {
            conn.query_rows(sql).ok()?.first()?.first()?.clone()
        };
        let (sql, script) = match query {
            PidQuery::PidFile(sql) => (sql, None),
            PidQuery::BackendParent(sql) => (sql, Some(())),
        };
        let Some(answer) = first(conn, sql) else {
            return Err(format!(
                "server process on {source} not found: `{sql}` answered nothing"
            ));
        };
        let answer = answer.trim().to_string();
        let pid = match script {
            // MySQL: the pid file's path, read there.
            None => {
                let out = self
                    .run(&format!("cat -- {}; true", shell_quote(&answer)), cpu)
                    .map_err(|e| self.fail(e))?;
                out.trim().parse::<i32>().map_err(|_| {
                    format!(
                        "server process on {source} not found: its pid file {answer} (`{sql}`) \
                         is not readable there (as the ssh user) or holds no pid"
                    )
                })?
            }
            // PostgreSQL: the reader's backend's parent, the postmaster.
            Some(()) => {
                let backend: i32 = answer.parse().map_err(|_| {
                    format!("server process on {source} not found: `{sql}` answered `{answer}`")
                })?;
                let out = self
                    .run(&format!("cat /proc/{backend}/stat; true"), cpu)
                    .map_err(|e| self.fail(e))?;
                proc_stat(&out).map(|s| s.ppid).ok_or_else(|| {
                    format!(
                        "server process on {source} not found: no process {backend} (the \
                         reader's backend) there: is {source} the host of this server?"
                    )
                })?
            }
        };
        let out = self
            .run(&identity_script(pid), cpu)
            .map_err(|e| self.fail(e))?;
        let p = parse_identity(&out, pid).ok_or_else(|| {
            format!("server process on {source} not found: no process {pid} there")
        })?;
        if !names.contains(&p.name.as_str()) {
            return Err(format!(
                "server process on {source} not found: process {pid} there is `{}`, not {}: is \
                 {source} the host of this server?",
                p.name,
                names.join(" or ")
            ));
        }
        Ok(p)
    }

    /// Marks the host unreachable for the run; the warning says so.
    fn fail(&mut self, why: String) -> String {
        self.unreachable = true;
        self.session = None;
        format!(
            "server process on {} not read: {why}; not tried again this run",
            self.source()
        )
    }

    /// Runs `script` on the host, in the session (started when there is none, again once
    /// when one that worked has died); its standard output.
    fn run(&mut self, script: &str, cpu: &mut f64) -> Result<String, String> {
        let deadline = self.access.transport.connect_timeout + GRACE;
        for attempt in 0..2 {
            if self.session.is_none() {
                let s = self.start()?;
                self.session = Some(s);
            }
            let Some(session) = self.session.as_mut() else {
                break;
            };
            let out = session.run(script, deadline);
            *cpu += session.cpu_delta();
            match out {
                Ok(text) => {
                    session.worked = true;
                    return Ok(text);
                }
                Err(_) if attempt == 0 && session.worked => self.session = None,
                Err(why) => return Err(why),
            }
        }
        Err("the session could not be started again".into())
    }

    /// Starts the session: `sh` on the host through ssh or `kubectl exec -i`.
    fn start(&mut self) -> Result<Session, String> {
        if self.dir.is_none() {
            let dir = tempfile::Builder::new()
                .prefix("sbsuite-cost-")
                .tempdir()
                .map_err(|e| format!("no private directory: {e}"))?;
            self.dir = Some(dir);
        }
        let log = self
            .dir
            .as_ref()
            .map(|d| d.path().join("session.log"))
            .unwrap_or_default();
        let cmd = match &self.access.host {
            ServerHost::Ssh { dest } => ssh_command(dest, &self.access.transport, &[], "sh"),
            ServerHost::Kubernetes {
                namespace,
                pod,
                container,
            } => kubectl_exec_command(
                namespace,
                pod,
                container.as_deref(),
                &self.access.transport,
                true,
                &["sh"],
            ),
        };
        Session::start(cmd, log)
    }
}

/// `sh` on the host, fed one command line per reading.
struct Session {
    child: Child,
    /// `None` once closed.
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
    /// Its stderr (ssh's and kubectl's messages, the remote shell's).
    log: PathBuf,
    /// Its CPU (ms) when last looked at.
    cpu_ms: f64,
    /// It answered once: a later failure may be a blip worth one new session.
    worked: bool,
    program: String,
}

impl Session {
    /// Spawns `cmd` (in its own process group), its stderr into `log`.
    fn start(mut cmd: Command, log: PathBuf) -> Result<Session, String> {
        let program = cmd.get_program().to_string_lossy().into_owned();
        let err = File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let mut child = cmd
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot run `{program}`: {e}"))?;
        let Some(stdout) = child.stdout.take() else {
            stop(&mut child);
            return Err(format!("`{program}` has no output pipe"));
        };
        Ok(Session {
            stdin: child.stdin.take(),
            child,
            stdout,
            log,
            cpu_ms: 0.0,
            worked: false,
            program,
        })
    }

    /// Writes `script` framed by the markers, reads its output up to the end marker within
    /// `deadline`. A session that fails is stopped (the caller drops it).
    fn run(&mut self, script: &str, deadline: Duration) -> Result<String, String> {
        let out = self.exchange(script, deadline);
        if out.is_err() {
            stop(&mut self.child);
        }
        out
    }

    fn exchange(&mut self, script: &str, deadline: Duration) -> Result<String, String> {
        let ended = |s: &mut Session, what: &str| {
            let _ = s.child.try_wait();
            let log = std::fs::read_to_string(&s.log).unwrap_or_default();
            format!("`{}` {what}: {}", s.program, last_line(&log))
        };
        let written = self
            .stdin
            .as_mut()
            .is_some_and(|i| i.write_all(frame(script).as_bytes()).is_ok() && i.flush().is_ok());
        if !written {
            return Err(ended(self, "ended"));
        }
        let start = Instant::now();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 64 * 1024];
        loop {
            if let Some(text) = unframe(&buf) {
                return Ok(text);
            }
            let left = deadline.saturating_sub(start.elapsed());
            if left.is_zero() {
                return Err(format!(
                    "`{}` gave no answer within {} s",
                    self.program,
                    deadline.as_secs()
                ));
            }
            let mut fd = libc::pollfd {
                fd: self.stdout.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: poll reads and writes the one pollfd it is given.
            let ready = unsafe { libc::poll(&mut fd, 1, left.as_millis().min(1000) as i32) };
            if ready < 0
                && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
            {
                return Err(ended(self, "could not be read"));
            }
            if ready <= 0 {
                continue;
            }
            match self.stdout.read(&mut chunk) {
                Ok(0) | Err(_) => return Err(ended(self, "ended")),
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// Its CPU since the last look, in ms.
    fn cpu_delta(&mut self) -> f64 {
        let now = process_cpu_ms(self.child.id());
        let delta = (now - self.cpu_ms).max(0.0);
        self.cpu_ms = now;
        delta
    }
}

impl Drop for Session {
    /// Closes its input (the remote `sh` ends, and with it the session), then makes sure it
    /// is gone.
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        stop(&mut self.child);
    }
}

/// `script` between a start and an end marker: whatever the remote login prints first (a
/// banner, an rc file's output) is left out, and the end says the output is complete.
fn frame(script: &str) -> String {
    format!("echo {BEGIN}; {script}\necho; echo {END}\n")
}

/// The output between the markers, once the end marker is there.
fn unframe(buf: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(buf).ok()?;
    let end = text.find(&format!("\n{END}\n"))?;
    let begin = text[..end].find(&format!("{BEGIN}\n"))? + BEGIN.len() + 1;
    // The `echo` before the end marker gives the newline the pattern above takes, so the
    // output is exact, with or without a final newline.
    Some(text.get(begin..end)?.to_string())
}

/// Kills a helper of ours and reaps it.
fn stop(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// A process of ours' CPU so far (utime + stime), in ms; 0 when it cannot be read.
fn process_cpu_ms(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|t| proc_stat(&t))
        .map_or(0.0, |s| (s.utime + s.stime) as f64 * super::tick_ms())
}

/// The last line of a helper's messages, for a warning.
fn last_line(text: &str) -> String {
    match text.lines().rev().map(str::trim).find(|l| !l.is_empty()) {
        Some(l) => l.to_string(),
        None => "no message".to_string(),
    }
}

/// The command of one reading of process `pid`: its stat; its children's (the main thread's
/// `children` list, else every process's: the caller keeps those whose parent is `pid`);
/// `/proc/stat`; `/proc/diskstats`; the whole disks (block devices with a device behind them).
fn reading_script(pid: i32) -> String {
    format!(
        "cat /proc/{pid}/stat; echo {MARK}; \
         {{ c=$(cat /proc/{pid}/task/{pid}/children) && {{ for p in $c; do cat /proc/$p/stat; done; true; }} \
         || cat /proc/[0-9]*/stat; }} 2>/dev/null; echo {MARK}; \
         cat /proc/stat; echo {MARK}; cat /proc/diskstats; echo {MARK}; \
         for d in /sys/block/*; do [ -e \"$d/device\" ] && echo \"${{d##*/}}\"; done; true"
    )
}

/// The command that tells who process `pid` is: its name, its stat, the clock tick and the
/// host's name.
fn identity_script(pid: i32) -> String {
    format!(
        "cat /proc/{pid}/comm; echo {MARK}; cat /proc/{pid}/stat; echo {MARK}; \
         getconf CLK_TCK; echo {MARK}; cat /proc/sys/kernel/hostname; true"
    )
}

/// The texts of a command's output, between the marker lines.
fn sections(out: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut rest = out;
    while let Some(i) = rest.find(MARK) {
        parts.push(&rest[..i]);
        rest = rest[i + MARK.len()..]
            .strip_prefix('\n')
            .unwrap_or(&rest[i + MARK.len()..]);
    }
    parts.push(rest);
    parts
}

/// Parses [`identity_script`]'s output; `None` when process `pid` is not there.
fn parse_identity(out: &str, pid: i32) -> Option<RemoteProcess> {
    let s = sections(out);
    let [comm, stat, tick, hostname] = s.as_slice() else {
        return None;
    };
    let stat = proc_stat(stat)?;
    let hz: f64 = tick
        .trim()
        .parse()
        .ok()
        .filter(|hz: &f64| *hz > 0.0)
        .unwrap_or(100.0);
    Some(RemoteProcess {
        pid,
        start: stat.start,
        name: comm.trim().to_string(),
        hostname: hostname.trim().to_string(),
        tick_ms: 1000.0 / hz,
    })
}

/// Parses [`reading_script`]'s output into the same values as a reading on this host;
/// `None` when the process is gone or another one has its pid (its start time differs).
fn parse_reading(out: &str, p: &RemoteProcess) -> Option<Vec<(String, f64)>> {
    let s = sections(out);
    let [main, children, stat, disks, whole] = s.as_slice() else {
        return None;
    };
    let main = proc_stat(main).filter(|m| m.start == p.start)?;
    let children: Vec<ProcStat> = children.lines().filter_map(proc_stat).collect();
    let whole: Vec<&str> = whole.lines().map(str::trim).collect();
    Some(server_values(
        p.pid,
        main,
        children,
        Some(stat),
        Some(disks),
        |name| whole.contains(&name),
        p.tick_ms,
    ))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn process() -> RemoteProcess {
        RemoteProcess {
            pid: 700,
            start: 5000,
            name: "mariadbd".into(),
            hostname: "db1".into(),
            tick_ms: 10.0,
        }
    }

    /// A stat line of process `pid` with parent `ppid`, times and start.
    fn stat(pid: i32, ppid: i32, utime: u64, stime: u64, cutime: u64, start: u64) -> String {
        format!(
            "{pid} (proc {pid}) S {ppid} {pid} {pid} 0 -1 4194560 100 0 0 0 {utime} {stime} \
             {cutime} 0 20 0 30 0 {start} 1000000 200 18446744073709551615"
        )
    }

    fn reading(main: &str, children: &[String]) -> String {
        format!(
            "{main}\n{MARK}\n{}{MARK}\ncpu  100 10 50 1000 7 3 2 1 0 0\ncpu0 1 2 3 4 5 6 7 8\n{MARK}\n\
             \x20  8       0 sda 10 0 100 5 20 0 200 9 0 30 40 0 0 0 0\n\
             \x20  8       1 sda1 10 0 100 5 20 0 200 9 0 30 40 0 0 0 0\n{MARK}\nsda\n",
            children
                .iter()
                .map(|c| format!("{c}\n"))
                .collect::<String>()
        )
    }

    fn value(values: &[(String, f64)], name: &str) -> f64 {
        values
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} in {values:?}"))
            .1
    }

    #[test]
    fn a_remote_reading_gives_the_local_readings_values() {
        let p = process();
        // Two children of the server, one process of another parent (the fallback lists
        // every process): left out.
        let out = reading(
            &stat(700, 1, 250, 75, 3, 5000),
            &[
                stat(701, 700, 10, 5, 0, 5001),
                stat(702, 700, 1, 1, 0, 5002),
                stat(900, 1, 1000, 1000, 0, 10),
            ],
        );
        let v = parse_reading(&out, &p).unwrap();
        // (250 + 75 + 3 + 0) + (10 + 5) + (1 + 1) ticks of 10 ms.
        assert_eq!(value(&v, "server_process.cpu_ms"), 3450.0);
        assert_eq!(value(&v, "host.cpu_busy_ms"), 1660.0);
        assert_eq!(value(&v, "host.cpu_iowait_ms"), 70.0);
        // sda alone is a whole disk: sda1 is not counted twice.
        assert_eq!(value(&v, "host.disk_reads"), 10.0);
        assert_eq!(value(&v, "host.disk_write_bytes"), 102400.0);
        assert_eq!(value(&v, "host.disk_io_ms"), 30.0);
        // The same order of names as the local reading: server, host CPU, disks.
        let names: Vec<&str> = v.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names[0], "server_process.cpu_ms");
        assert_eq!(names.len(), 8);
    }

    #[test]
    fn a_gone_or_restarted_process_gives_nothing() {
        let p = process();
        // Another process now has the pid (another start time).
        let restarted = reading(&stat(700, 1, 1, 1, 0, 9999), &[]);
        assert_eq!(parse_reading(&restarted, &p), None);
        // `cat /proc/700/stat` failed: the first section is empty.
        let gone = reading("", &[]);
        assert_eq!(parse_reading(&gone, &p), None);
        // A cut output (the connection dropped mid-way).
        assert_eq!(parse_reading(&stat(700, 1, 1, 1, 0, 5000), &p), None);
    }

    #[test]
    fn identity_gives_name_start_tick_and_host() {
        let out = format!(
            "mariadbd\n{MARK}\n{}\n{MARK}\n250\n{MARK}\ndb1.example\n",
            stat(700, 1, 1, 1, 0, 5000)
        );
        let p = parse_identity(&out, 700).unwrap();
        assert_eq!(
            p,
            RemoteProcess {
                pid: 700,
                start: 5000,
                name: "mariadbd".into(),
                hostname: "db1.example".into(),
                tick_ms: 4.0
            }
        );
        // No process: its comm and stat are empty.
        let none = format!("{MARK}\n{MARK}\n100\n{MARK}\ndb1\n");
        assert_eq!(parse_identity(&none, 700), None);
        // No getconf there: the usual 100 Hz.
        let out = format!(
            "postgres\n{MARK}\n{}\n{MARK}\n\n{MARK}\ndb1\n",
            stat(700, 1, 1, 1, 0, 5000)
        );
        assert_eq!(parse_identity(&out, 700).unwrap().tick_ms, 10.0);
    }

    #[test]
    fn the_scripts_are_one_command_for_a_posix_shell() {
        let s = reading_script(42);
        assert!(
            s.starts_with("cat /proc/42/stat; echo @sbsuite-cost@;"),
            "{s}"
        );
        assert!(s.contains("/proc/42/task/42/children"), "{s}");
        assert!(s.ends_with("; true"), "{s}");
        // Run here (this host's /proc, through sh) it parses like a reading of this process.
        let me = std::process::id() as i32;
        let out = Command::new("sh")
            .args(["-c", &reading_script(me)])
            .output()
            .unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        let id = Command::new("sh")
            .args(["-c", &identity_script(me)])
            .output()
            .unwrap();
        let p = parse_identity(&String::from_utf8(id.stdout).unwrap(), me).unwrap();
        assert!(!p.name.is_empty() && p.start > 0, "{p:?}");
        let v = parse_reading(&text, &p).unwrap();
        assert!(value(&v, "server_process.cpu_ms") >= 0.0);
        assert!(value(&v, "host.cpu_busy_ms") > 0.0);
    }

    #[test]
    fn a_session_answers_each_framed_command_and_skips_what_the_login_printed() {
        assert_eq!(
            frame("cat /proc/stat"),
            "echo @sbsuite-cost-begin@; cat /proc/stat\necho; echo @sbsuite-cost-end@\n"
        );
        // A banner before the output, an output without a final newline.
        let out = "Welcome!\n@sbsuite-cost-begin@\nabc\n\n@sbsuite-cost-end@\n";
        assert_eq!(unframe(out.as_bytes()).as_deref(), Some("abc\n"));
        assert_eq!(unframe(b"@sbsuite-cost-begin@\nabc\n"), None);
        // A local `sh` stands for the remote one: two commands on one session.
        let dir = tempfile::tempdir().unwrap();
        let cmd = Command::new("sh");
        let mut s = Session::start(cmd, dir.path().join("log")).unwrap();
        let second = Duration::from_secs(5);
        assert_eq!(s.run("echo one; printf two", second).unwrap(), "one\ntwo");
        assert_eq!(s.run("cat /proc/self/comm", second).unwrap(), "cat\n");
        let pid = s.child.id();
        drop(s);
        // Its input closed, the shell ended and was reaped.
        assert!(!Path::new(&format!("/proc/{pid}")).exists());
    }

    #[test]
    fn a_session_that_ends_or_hangs_is_an_error_within_its_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "echo 'ssh: connect to host db1 port 22: Connection refused' >&2; exit 255",
        ]);
        let mut s = Session::start(cmd, dir.path().join("log")).unwrap();
        let err = s.run("true", Duration::from_secs(5)).unwrap_err();
        assert!(
            err.contains("`sh` ended: ssh: connect to host db1 port 22: Connection refused"),
            "{err}"
        );
        let mut s = Session::start(Command::new("sh"), dir.path().join("log2")).unwrap();
        let start = Instant::now();
        let err = s.run("sleep 5", Duration::from_millis(300)).unwrap_err();
        assert!(err.contains("gave no answer within"), "{err}");
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
    }
}
