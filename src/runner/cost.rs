//! What a run step cost (#29): the server's own counters, its process CPU and the host's disk
//! I/O read before and after each run step, stored as deltas in `server_counters.csv` and as
//! per-transaction columns of results.csv.
//!
//! Why it is shaped this way:
//! - **Around the step, in the runner**: the step loop calls [`Cost::before`] just before the
//!   executor runs a step and [`Cost::after`] just after it, whatever ran it (this process or
//!   the clients of `[clients]`: the coordinator reads the server once). The engines know
//!   nothing of it.
//! - **Which counters is data** ([`crate::db::counters`]), read on one connection of the
//!   reader's own, kept open over the step (opening one costs more than reading) and closed
//!   after it. PostgreSQL reports a backend's statistics when it exits, so after a step the
//!   reader waits (at most [`SETTLE_MAX`]) until the step's backends are gone.
//! - **Never fails a step**: a server that cannot be read, a view that does not exist, a file
//!   that cannot be written are warnings (each once per run), and their cells stay empty.
//! - **The server process** is looked for when the target is on this host (a loopback address
//!   or a Unix socket): the process listening on the target's port or socket (/proc/net and
//!   each process's fds, which needs root or the server's user), else the process the server
//!   names itself (MySQL's pid file, PostgreSQL's backend's parent), checked by its name. Its
//!   CPU is utime + stime of it and its children (PostgreSQL's backends), plus what its reaped
//!   children used (cutime + cstime, so a backend that exited during the step still counts).
//!   The host's CPU (/proc/stat) and disk I/O (/proc/diskstats, whole disks) come with it.
//! - **Client CPU** is `getrusage(RUSAGE_SELF)` of this process over the step; for a
//!   multi-client step it would measure the coordinator alone, so it stays empty there. The
//!   reading's own CPU (`RUSAGE_THREAD` around it) is kept out of it and recorded as a counter
//!   of its own, `client.cost_read_cpu_ms`: what reading the cost costs, step by step
//!   (`bench/cost-overhead.sh`).
//! - **A server on another host** (`[target] server_host`, [`remote`]): the same /proc texts
//!   read there with one remote command per reading, parsed by the same functions; where
//!   they came from is recorded in `host.json` (`server_process`), the local process too.
//! - **At interval ticks too** ([`Ticks`], `cost/ticks.rs`): with `report_interval`, the same
//!   counters are read on the same connection at each tick, into intervals.csv's columns.
//! - The pure parts (deltas, per-transaction values, /proc parsing) are functions of their
//!   inputs, unit-tested below.

use std::collections::HashSet;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::db::counters::{self, CounterSet, PidQuery};
use crate::db::{Connection, Driver, Target};
use crate::engine::{Metrics, StepOutcome};
use crate::plan::Step;
use crate::results::csv::fmt_float;
use crate::results::host;
use crate::suite::clients::ServerHostAccess;

mod remote;

mod ticks;
pub use ticks::{SERVER_CPU_PCT, TICK_READ_MAX, Ticks, interval_metrics};

/// The file of a run directory with every run step's counter deltas.
pub const COUNTERS_FILE: &str = "server_counters.csv";

/// Its columns, in order.
pub const COUNTERS_COLUMNS: &[&str] = &[
    "run_id", "step", "name", "variant", "counter", "before", "after", "delta", "per_txn",
];

/// results.csv: server CPU (its process and children) in ms per transaction.
pub const SERVER_CPU_MS_PER_TXN: &str = "server_cpu_ms_per_txn";
/// results.csv: this process's CPU in µs per transaction.
pub const CLIENT_CPU_US_PER_TXN: &str = "client_cpu_us_per_txn";

/// The counters this module reads itself (beside the server's).
const SERVER_CPU: &str = "server_process.cpu_ms";
const CLIENT_CPU: &str = "client.cpu_ms";
/// The CPU this module spent reading the cost, over the run so far (its delta: this step's):
/// the reading thread's, and its helpers' (ssh, kubectl) for a `server_host`.
const READ_CPU: &str = "client.cost_read_cpu_ms";
/// The time this module spent reading the cost, over the run so far, in ms.
const READ_WALL: &str = "client.cost_read_wall_ms";
/// Of it, what the readings at this step's interval ticks took (0 before, the step's after).
const TICK_CPU: &str = "client.cost_tick_cpu_ms";

/// The longest wait for PostgreSQL's backends of a step to exit and report.
pub const SETTLE_MAX: Duration = Duration::from_secs(1);

/// `[suite] server_cost` and `server_counters`: whether to read the cost, and the counters a
/// suite adds to the built-in ones.
#[derive(Clone, Debug)]
pub struct CostConfig {
    pub enabled: bool,
    pub extra: Vec<String>,
    /// `[target] server_host`: the server's process and host are read there.
    pub server_host: Option<ServerHostAccess>,
}

impl Default for CostConfig {
    fn default() -> CostConfig {
        CostConfig {
            enabled: true,
            extra: Vec::new(),
            server_host: None,
        }
    }
}

/// The server process found on this host: its pid and start time (a restarted server is a new
/// process, looked for again).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ServerProcess {
    pid: i32,
    start: u64,
}

/// What was found out about the server's process.
#[derive(Clone, Copy, Debug)]
enum Located {
    NotYet,
    /// Not on this host, or not found: no process CPU this run.
    Nowhere,
    At(ServerProcess),
}

/// The reading of one run step's cost, from the step loop's start to its end.
pub struct Cost {
    config: CostConfig,
    run_id: String,
    path: PathBuf,
    multi_client: bool,
    set: Option<CounterSet>,
    server: Located,
    warned: HashSet<String>,
    warnings: Vec<String>,
    /// The CPU spent reading so far (the reading thread's: the connection is blocking; and
    /// its helpers').
    read_cpu_ms: f64,
    /// The time spent reading so far, in ms.
    read_wall_ms: f64,
    /// `[target] server_host`: the server's host, read instead of this one.
    remote: Option<remote::Remote>,
    run_dir: PathBuf,
}

/// What [`Cost::before`] read, for [`Cost::after`].
pub struct Before {
    conn: Option<Box<dyn Connection>>,
    values: Vec<(String, f64)>,
    /// PostgreSQL: the other client backends of the database before the step.
    backends: Option<f64>,
    /// The server's counters could not be read: the reader does not try again after the step.
    unread: bool,
    /// [`Cost::read_cpu_ms`] and [`Cost::read_wall_ms`] before this step's reading.
    read_cpu_ms: f64,
    read_wall_ms: f64,
    /// The CPU of the readings at the step's interval ticks ([`Ticks`]), left out of its
    /// client CPU; `None` when it read none.
    tick_cpu_ms: Option<f64>,
}

impl Cost {
    pub fn new(config: CostConfig, run_dir: &Path, run_id: &str, multi_client: bool) -> Cost {
        Cost {
            remote: config.server_host.clone().map(remote::Remote::new),
            run_dir: run_dir.to_path_buf(),
            read_wall_ms: 0.0,
            config,
            run_id: run_id.to_string(),
            path: run_dir.join(COUNTERS_FILE),
            multi_client,
            set: None,
            server: Located::NotYet,
            warned: HashSet::new(),
            warnings: Vec::new(),
            read_cpu_ms: 0.0,
        }
    }

    /// A warning for the step loop to print, once per run for the same text.
    fn warn(&mut self, msg: String) {
        if self.warned.insert(msg.clone()) {
            self.warnings.push(msg);
        }
    }

    /// The target whose server is read: a real one with a server.
    fn target(step: &Step) -> Option<&Target> {
        step.target
            .as_ref()
            .filter(|t| !t.dry_run && !counters::sources(t.driver).is_empty())
    }

    /// Reads everything just before `step` runs.
    pub fn before(&mut self, step: &Step) -> Before {
        let mut b = Before {
            conn: None,
            values: Vec::new(),
            backends: None,
            unread: false,
            read_cpu_ms: self.read_cpu_ms,
            read_wall_ms: self.read_wall_ms,
            tick_cpu_ms: None,
        };
        let started = thread_cpu_ms();
        let wall = Instant::now();
        if self.config.enabled
            && let Some(target) = Self::target(step)
        {
            let set = self
                .set
                .get_or_insert_with(|| CounterSet::new(target.driver, &self.config.extra));
            let mut set = set.clone();
            match open(target) {
                Ok(mut conn) => {
                    let r = counters::read(conn.as_mut(), &mut set);
                    for f in r.failed {
                        self.warn(format!("server counters not read: {f}"));
                    }
                    b.values = r.values;
                    b.backends = settle_count(conn.as_mut(), target.driver);
                    if let Some(remote) = &mut self.remote {
                        let pid_query = counters::profile(target.driver).pid_query;
                        let r = remote.before(pid_query, conn.as_mut());
                        let source = remote.source();
                        self.take_remote(&source, r, &mut b.values);
                    } else {
                        self.locate(target, conn.as_mut());
                    }
                    b.conn = Some(conn);
                }
                Err(e) => {
                    b.unread = true;
                    self.warn(format!(
                        "server counters not read: no connection to {}: {e}",
                        target.endpoint(0)
                    ));
                }
            }
            self.set = Some(set);
            if let Located::At(p) = self.server {
                b.values.extend(process_values(p));
            }
        }
        self.read_cpu_ms += thread_cpu_ms() - started;
        self.read_wall_ms += wall.elapsed().as_secs_f64() * 1000.0;
        // Last, so that the reading above is not part of the step's client CPU.
        if self.config.enabled && !self.multi_client {
            b.values.push((CLIENT_CPU.into(), client_cpu_ms()));
        }
        b
    }

    /// Reads everything again after `step` ran, writes the deltas to server_counters.csv and
    /// the per-transaction columns into `outcome`'s metrics. Returns the warnings to print.
    pub fn after(
        &mut self,
        step: &Step,
        before: Before,
        outcome: Option<&mut StepOutcome>,
    ) -> Vec<String> {
        let mut after = Vec::new();
        // First, so that the reading below is not part of the step's client CPU (nor are the
        // readings at its ticks).
        if self.config.enabled && !self.multi_client {
            after.push((
                CLIENT_CPU.to_string(),
                client_cpu_ms() - before.tick_cpu_ms.unwrap_or(0.0),
            ));
        }
        let started = thread_cpu_ms();
        let wall = Instant::now();
        let Before {
            conn,
            mut values,
            backends,
            unread,
            read_cpu_ms,
            read_wall_ms,
            tick_cpu_ms,
        } = before;
        if self.config.enabled
            && !unread
            && let Some(target) = Self::target(step)
        {
            let mut set = self
                .set
                .clone()
                .unwrap_or_else(|| CounterSet::new(target.driver, &self.config.extra));
            // The connection kept over the step, else (the server dropped it) a new one.
            let mut conn = conn;
            let mut reading = None;
            for attempt in 0..2 {
                let c = match conn.take() {
                    Some(c) if attempt == 0 => c,
                    _ => match open(target) {
                        Ok(c) => c,
                        Err(e) => {
                            self.warn(format!(
                                "server counters not read after step {}: no connection to {}: {e}",
                                step.index,
                                target.endpoint(0)
                            ));
                            break;
                        }
                    },
                };
                let mut c = c;
                if let Some(n) = backends {
                    settle(c.as_mut(), target.driver, n);
                }
                let r = counters::read(c.as_mut(), &mut set);
                let failed_all = r.values.is_empty() && !r.failed.is_empty();
                if failed_all && attempt == 0 {
                    c.close();
                    continue;
                }
                for f in &r.failed {
                    self.warn(format!("server counters not read: {f}"));
                }
                reading = Some(r.values);
                conn = Some(c);
                break;
            }
            if let Some(c) = conn {
                c.close();
            }
            after.extend(reading.unwrap_or_default());
            if let Some(remote) = &mut self.remote {
                let r = remote.after();
                let source = remote.source();
                self.take_remote(&source, r, &mut after);
            } else if let Located::At(p) = self.server {
                if current_start(p.pid) == Some(p.start) {
                    after.extend(process_values(p));
                } else {
                    // Restarted during the step: its CPU before and after do not compare.
                    self.server = Located::NotYet;
                }
            }
            self.set = Some(set);
        } else if let Some(c) = conn {
            c.close();
        }
        self.read_cpu_ms += thread_cpu_ms() - started;
        self.read_wall_ms += wall.elapsed().as_secs_f64() * 1000.0;
        if self.config.enabled {
            values.push((READ_CPU.to_string(), read_cpu_ms));
            after.push((READ_CPU.to_string(), self.read_cpu_ms));
            values.push((READ_WALL.to_string(), read_wall_ms));
            after.push((READ_WALL.to_string(), self.read_wall_ms));
            if let Some(ms) = tick_cpu_ms {
                values.push((TICK_CPU.to_string(), 0.0));
                after.push((TICK_CPU.to_string(), ms));
            }
        }
        let txns = outcome.as_ref().map(|o| transactions(o));
        let deltas = deltas(&values, &after, txns);
        if let Some(o) = outcome {
            let driver = step.target.as_ref().map(|t| t.driver);
            o.metrics.extend(derived(driver, &deltas));
        }
        if !deltas.is_empty()
            && let Err(e) = self.write(step, &deltas)
        {
            self.warn(format!("{} not written: {e}", self.path.display()));
        }
        std::mem::take(&mut self.warnings)
    }

    /// Finds the server's process once (again after a restart), when it runs on this host.
    fn locate(&mut self, target: &Target, conn: &mut dyn Connection) {
        if let Located::At(p) = self.server
            && current_start(p.pid) == Some(p.start)
        {
            return;
        }
        if matches!(self.server, Located::Nowhere) {
            return;
        }
        self.server = match local_endpoint(target) {
            None => Located::Nowhere,
            Some(endpoint) => {
                let pid = listener_pid(&endpoint).or_else(|| pid_by_query(target.driver, conn));
                match pid.and_then(|pid| Some((pid, current_start(pid)?))) {
                    Some((pid, start)) => {
                        let read = |p: String| std::fs::read_to_string(p).ok();
                        let comm = read(format!("/proc/{pid}/comm")).unwrap_or_default();
                        self.record_server(
                            "local",
                            read("/proc/sys/kernel/hostname".into()),
                            comm.trim(),
                            pid,
                        );
                        Located::At(ServerProcess { pid, start })
                    }
                    None => Located::Nowhere,
                }
            }
        };
    }

    /// What a reading of `server_host` gave: its values into `values`, its warning, its
    /// helpers' CPU into the reading's, the process it found into `host.json`.
    fn take_remote(&mut self, source: &str, r: remote::Reading, values: &mut Vec<(String, f64)>) {
        values.extend(r.values);
        self.read_cpu_ms += r.helper_cpu_ms;
        if let Some(w) = r.warning {
            self.warn(w);
        }
        if let Some(p) = r.found {
            self.record_server(source, Some(p.hostname), &p.name, p.pid);
        }
    }

    /// Records in `host.json` where the process counters come from (a warning when it cannot).
    fn record_server(&mut self, source: &str, hostname: Option<String>, process: &str, pid: i32) {
        let facts = host::ServerProcess {
            recorded_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            source: source.to_string(),
            hostname: hostname
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty()),
            process: process.to_string(),
            pid,
        };
        if let Err(e) = host::record_server_process(&self.run_dir, facts) {
            self.warn(format!("{} not updated: {e}", host::HOST_FILE));
        }
    }

    fn write(&self, step: &Step, deltas: &[Delta]) -> std::io::Result<()> {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        let new = file.metadata()?.len() == 0;
        let mut w = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(Vec::new());
        if new {
            w.write_record(COUNTERS_COLUMNS)?;
        }
        let cell = |v: Option<f64>| v.map(|v| fmt_float(v, 6)).unwrap_or_default();
        for d in deltas {
            w.write_record([
                self.run_id.clone(),
                step.index.to_string(),
                step.name.clone(),
                step.variant.clone(),
                d.counter.clone(),
                cell(Some(d.before)),
                cell(Some(d.after)),
                cell(Some(d.delta)),
                cell(d.per_txn),
            ])?;
        }
        let bytes = w.into_inner().map_err(|e| e.into_error())?;
        file.write_all(&bytes)?;
        file.sync_data()
    }
}

/// A connection of the reader's own to the target's first endpoint, not registered for
/// interruption: a stop request during the step must not break the reading after it.
fn open(target: &Target) -> Result<Box<dyn Connection>, crate::db::SqlError> {
    target.driver.dialect().open(&target.at(0), 0)
}

/// PostgreSQL: the other client backends of the database now.
fn settle_count(conn: &mut dyn Connection, driver: Driver) -> Option<f64> {
    let sql = counters::profile(driver).settle_sql?;
    let rows = conn.query_rows(sql).ok()?;
    counters::parse_value(rows.first()?.first()?.as_deref()?)
}

/// Waits (at most [`SETTLE_MAX`]) until no more backends than `before` are left.
fn settle(conn: &mut dyn Connection, driver: Driver, before: f64) {
    let start = Instant::now();
    while start.elapsed() < SETTLE_MAX {
        match settle_count(conn, driver) {
            Some(n) if n > before => std::thread::sleep(Duration::from_millis(10)),
            _ => return,
        }
    }
}

/// The transactions a step's counters are divided by: its SQL transactions, else its events.
fn transactions(o: &StepOutcome) -> f64 {
    o.sql.as_ref().map_or(o.events, |s| s.transactions) as f64
}

/// One counter of one step.
#[derive(Clone, Debug, PartialEq)]
pub struct Delta {
    pub counter: String,
    pub before: f64,
    pub after: f64,
    pub delta: f64,
    /// `delta / transactions`; `None` without transactions.
    pub per_txn: Option<f64>,
}

/// The counters read both before and after, in the order they were read before.
pub fn deltas(before: &[(String, f64)], after: &[(String, f64)], txns: Option<f64>) -> Vec<Delta> {
    before
        .iter()
        .filter_map(|(name, b)| {
            let (_, a) = after.iter().find(|(n, _)| n == name)?;
            let delta = a - b;
            Some(Delta {
                counter: name.clone(),
                before: *b,
                after: *a,
                delta,
                per_txn: txns.filter(|t| *t > 0.0).map(|t| delta / t),
            })
        })
        .collect()
}

/// The delta of counter `name`, unless it went backwards (a reset).
fn usable<'d>(deltas: &'d [Delta], name: &str) -> Option<&'d Delta> {
    deltas.iter().find(|d| d.counter == name && d.delta >= 0.0)
}

/// The results.csv columns of a step from its deltas: `driver`'s derived counters (the first
/// one read of each, not when it went backwards: a reset), the server's and the client's CPU.
pub fn derived(driver: Option<Driver>, deltas: &[Delta]) -> Metrics {
    let per_txn = |name: &str| usable(deltas, name).and_then(|d| d.per_txn);
    let mut out: Metrics = Vec::new();
    if let Some(driver) = driver {
        for d in counters::profile(driver).derived {
            if let Some(v) = d.from.iter().find_map(|f| per_txn(f)) {
                out.push((d.column, v));
            }
        }
    }
    if let Some(v) = per_txn(SERVER_CPU) {
        out.push((SERVER_CPU_MS_PER_TXN, v));
    }
    if let Some(v) = per_txn(CLIENT_CPU) {
        out.push((CLIENT_CPU_US_PER_TXN, v * 1000.0));
    }
    out
}

/// This process's user + system CPU so far, in ms.
fn client_cpu_ms() -> f64 {
    // SAFETY: getrusage writes the struct it is given and nothing else.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return f64::NAN;
    }
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    ms(ru.ru_utime) + ms(ru.ru_stime)
}

/// The calling thread's user + system CPU so far, in ms (the reading runs on it: its
/// connection is blocking, a library client's runtime is the thread's own).
fn thread_cpu_ms() -> f64 {
    // SAFETY: as in `client_cpu_ms`.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return 0.0;
    }
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    ms(ru.ru_utime) + ms(ru.ru_stime)
}

/// Milliseconds per clock tick of /proc's CPU times.
fn tick_ms() -> f64 {
    // SAFETY: sysconf only reads a constant of the system.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    1000.0 / if hz > 0 { hz as f64 } else { 100.0 }
}

/// Where a target on this host listens: its Unix socket, or its TCP port on a loopback host.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Endpoint {
    Unix(String),
    Tcp(u16),
}

fn local_endpoint(target: &Target) -> Option<Endpoint> {
    if let Some(s) = target.sockets.first() {
        return Some(Endpoint::Unix(s.clone()));
    }
    let [(host, port)] = target.hosts.as_slice() else {
        return None;
    };
    let loopback = host == "localhost"
        || host == "::1"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|a| a.is_loopback());
    loopback.then_some(Endpoint::Tcp(*port))
}

/// The socket inodes listening on `endpoint` (/proc/net/tcp, tcp6 or unix).
fn listening_inodes(endpoint: &Endpoint) -> Vec<String> {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    match endpoint {
        Endpoint::Tcp(port) => [read("/proc/net/tcp"), read("/proc/net/tcp6")]
            .iter()
            .flat_map(|t| tcp_listeners(t, *port))
            .collect(),
        Endpoint::Unix(path) => unix_listeners(&read("/proc/net/unix"), path),
    }
}

/// The inodes of the sockets in LISTEN state (`0A`) on local port `port` in a /proc/net/tcp
/// table.
fn tcp_listeners(table: &str, port: u16) -> Vec<String> {
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let local_port = f.get(1)?.rsplit_once(':')?.1;
            let ok = u16::from_str_radix(local_port, 16).ok()? == port && *f.get(3)? == "0A";
            ok.then(|| f.get(9).map(|s| s.to_string()))?
        })
        .collect()
}

/// The inodes of the sockets bound to `path` in /proc/net/unix.
fn unix_listeners(table: &str, path: &str) -> Vec<String> {
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(7) == Some(&path)).then(|| f.get(6).map(|s| s.to_string()))?
        })
        .collect()
}

/// The process holding a socket listening on `endpoint` (its lowest pid: the main process of
/// a server whose children inherited the socket).
fn listener_pid(endpoint: &Endpoint) -> Option<i32> {
    let inodes: Vec<String> = listening_inodes(endpoint)
        .into_iter()
        .map(|i| format!("socket:[{i}]"))
        .collect();
    if inodes.is_empty() {
        return None;
    }
    let mut pids: Vec<i32> = std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .collect();
    pids.sort_unstable();
    pids.into_iter().find(|pid| {
        std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
            fds.flatten().any(|fd| {
                std::fs::read_link(fd.path())
                    .is_ok_and(|l| inodes.iter().any(|i| l.as_os_str() == i.as_str()))
            })
        })
    })
}

/// The server process as the server names it, if a process of that pid and an expected name
/// runs here.
fn pid_by_query(driver: Driver, conn: &mut dyn Connection) -> Option<i32> {
    let (query, names) = counters::profile(driver).pid_query?;
    let first = |conn: &mut dyn Connection, sql: &str| -> Option<String> {
        conn.query_rows(sql).ok()?.first()?.first()?.clone()
    };
    let pid = match query {
        PidQuery::PidFile(sql) => std::fs::read_to_string(first(conn, sql)?)
            .ok()?
            .trim()
            .parse()
            .ok()?,
        PidQuery::BackendParent(sql) => {
            let backend: i32 = first(conn, sql)?.trim().parse().ok()?;
            proc_stat(&std::fs::read_to_string(format!("/proc/{backend}/stat")).ok()?)?.ppid
        }
    };
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    names.contains(&comm.trim()).then_some(pid)
}

/// The fields of /proc/PID/stat this module uses (times in ticks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ProcStat {
    ppid: i32,
    utime: u64,
    stime: u64,
    cutime: u64,
    cstime: u64,
    start: u64,
}

/// Parses /proc/PID/stat: the fields after the command name (which may hold spaces and
/// parentheses, hence the last `)`), numbered as in proc(5).
fn proc_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // f[0] is field 3 (state).
    let n = |i: usize| f.get(i - 3)?.parse::<i64>().ok();
    Some(ProcStat {
        ppid: n(4)? as i32,
        utime: n(14)? as u64,
        stime: n(15)? as u64,
        cutime: n(16)?.max(0) as u64,
        cstime: n(17)?.max(0) as u64,
        start: n(22)? as u64,
    })
}

fn current_start(pid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(proc_stat(&text)?.start)
}

/// The server's CPU (it, its living children, its reaped ones) and the host's CPU and disks.
fn process_values(p: ServerProcess) -> Vec<(String, f64)> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let stat_of = |pid: i32| read(&format!("/proc/{pid}/stat")).and_then(|t| proc_stat(&t));
    let Some(main) = stat_of(p.pid) else {
        return Vec::new();
    };
    server_values(
        p.pid,
        main,
        children(p.pid).into_iter().filter_map(stat_of),
        read("/proc/stat").as_deref(),
        read("/proc/diskstats").as_deref(),
        |name| Path::new("/sys/block").join(name).join("device").exists(),
        tick_ms(),
    )
}

/// The values of the server process `pid` (its stat `main`, the stats of its children: others
/// are left out) and of its host (`/proc/stat`, `/proc/diskstats`), from the texts of this
/// host's /proc or another's ([`remote`]).
fn server_values(
    pid: i32,
    main: ProcStat,
    children: impl IntoIterator<Item = ProcStat>,
    stat: Option<&str>,
    diskstats: Option<&str>,
    is_disk: impl Fn(&str) -> bool,
    tick_ms: f64,
) -> Vec<(String, f64)> {
    let ticks = main.utime
        + main.stime
        + main.cutime
        + main.cstime
        + children
            .into_iter()
            .filter(|s| s.ppid == pid)
            .map(|s| s.utime + s.stime)
            .sum::<u64>();
    let mut out = vec![(SERVER_CPU.to_string(), ticks as f64 * tick_ms)];
    if let Some(stat) = stat {
        out.extend(host_cpu(stat, tick_ms));
    }
    if let Some(disks) = diskstats {
        out.extend(disk_io(disks, is_disk));
    }
    out
}

/// The children of `pid`: its main thread's `children` file (a server forks from its main
/// thread: PostgreSQL's postmaster; a multi-threaded MariaDB has none), else every process.
fn children(pid: i32) -> Vec<i32> {
    match std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")) {
        Ok(text) => text
            .split_whitespace()
            .filter_map(|c| c.parse().ok())
            .collect(),
        Err(_) => std::fs::read_dir("/proc")
            .map(|dir| {
                dir.flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
                    .filter(|&c| c != pid)
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// The host's busy and iowait CPU in ms from /proc/stat's `cpu` line.
fn host_cpu(stat: &str, tick_ms: f64) -> Vec<(String, f64)> {
    let Some(line) = stat.lines().find(|l| l.starts_with("cpu ")) else {
        return Vec::new();
    };
    let v: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    if v.len() < 8 {
        return Vec::new();
    }
    // user nice system idle iowait irq softirq steal
    let busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    vec![
        ("host.cpu_busy_ms".into(), busy * tick_ms),
        ("host.cpu_iowait_ms".into(), v[4] * tick_ms),
    ]
}

/// The host's disk I/O from /proc/diskstats, summed over the whole disks (`is_disk`: a block
/// device with a device behind it, so that partitions and device-mapper volumes are not
/// counted twice).
fn disk_io(diskstats: &str, is_disk: impl Fn(&str) -> bool) -> Vec<(String, f64)> {
    let mut sum = [0f64; 5];
    for l in diskstats.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 14 || !is_disk(f[2]) {
            continue;
        }
        let n = |i: usize| f[i].parse::<f64>().unwrap_or(0.0);
        // reads completed, sectors read, writes completed, sectors written, ms doing I/O
        for (s, v) in sum
            .iter_mut()
            .zip([n(3), n(5) * 512.0, n(7), n(9) * 512.0, n(12)])
        {
            *s += v;
        }
    }
    [
        "host.disk_reads",
        "host.disk_read_bytes",
        "host.disk_writes",
        "host.disk_write_bytes",
        "host.disk_io_ms",
    ]
    .into_iter()
    .map(String::from)
    .zip(sum)
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(pairs: &[(&str, f64)]) -> Vec<(String, f64)> {
        pairs.iter().map(|(n, x)| (n.to_string(), *x)).collect()
    }

    #[test]
    fn deltas_pair_the_counters_read_both_times_and_divide_by_transactions() {
        let before = v(&[("a", 10.0), ("b", 5.0), ("gone", 1.0)]);
        let after = v(&[("b", 25.0), ("a", 110.0), ("new", 3.0)]);
        let d = deltas(&before, &after, Some(50.0));
        assert_eq!(d.len(), 2);
        assert_eq!(
            d[0],
            Delta {
                counter: "a".into(),
                before: 10.0,
                after: 110.0,
                delta: 100.0,
                per_txn: Some(2.0)
            }
        );
        assert_eq!(d[1].per_txn, Some(0.4));
        // No transactions (a failed step, or zero): deltas without per_txn.
        assert!(
            deltas(&before, &after, None)
                .iter()
                .all(|d| d.per_txn.is_none())
        );
        assert!(
            deltas(&before, &after, Some(0.0))
                .iter()
                .all(|d| d.per_txn.is_none())
        );
    }

    #[test]
    fn derived_columns_take_the_first_counter_read_and_skip_resets() {
        let before = v(&[
            ("Innodb_os_log_fsyncs", 0.0),
            ("Innodb_os_log_written", 1000.0),
            (SERVER_CPU, 100.0),
            (CLIENT_CPU, 50.0),
        ]);
        let after = v(&[
            ("Innodb_os_log_fsyncs", 200.0),
            ("Innodb_os_log_written", 900.0),
            (SERVER_CPU, 300.0),
            (CLIENT_CPU, 70.0),
        ]);
        let m = derived(
            Some("mysql".parse::<Driver>().unwrap()),
            &deltas(&before, &after, Some(100.0)),
        );
        // Innodb_data_fsyncs was not read: the next of the list; log bytes went backwards.
        assert_eq!(
            m,
            vec![
                (counters::FSYNCS_PER_TXN, 2.0),
                (SERVER_CPU_MS_PER_TXN, 2.0),
                (CLIENT_CPU_US_PER_TXN, 200.0),
            ]
        );
        let pg = v(&[
            ("pg_stat_wal.wal_sync", 5.0),
            ("pg_stat_wal.wal_bytes", 0.0),
        ]);
        let pg2 = v(&[
            ("pg_stat_wal.wal_sync", 15.0),
            ("pg_stat_wal.wal_bytes", 4000.0),
        ]);
        let m = derived(
            Some("pgsql".parse::<Driver>().unwrap()),
            &deltas(&pg, &pg2, Some(10.0)),
        );
        assert_eq!(
            m,
            vec![
                (counters::FSYNCS_PER_TXN, 1.0),
                (counters::LOG_BYTES_PER_TXN, 400.0)
            ]
        );
        assert!(derived(None, &deltas(&pg, &pg2, Some(10.0))).is_empty());
    }

    #[test]
    fn proc_stat_reads_a_command_with_spaces_and_parentheses() {
        let text = "1234 (my (odd) cmd) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 3 4 20 0 \
                    30 0 98765 1000000 200 18446744073709551615";
        assert_eq!(
            proc_stat(text),
            Some(ProcStat {
                ppid: 1,
                utime: 250,
                stime: 75,
                cutime: 3,
                cstime: 4,
                start: 98765
            })
        );
        assert_eq!(proc_stat("garbage"), None);
    }

    #[test]
    fn listeners_are_found_by_port_state_and_path() {
        let tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
                   0: 0100007F:0CEA 00000000:0000 0A 00000000:00000000 00:00000000 00000000   106        0 31337 1\n\
                   1: 0100007F:0CEA 0100007F:9C40 01 00000000:00000000 00:00000000 00000000   106        0 4242 1\n\
                   2: 00000000:1538 00000000:0000 0A 00000000:00000000 00:00000000 00000000   105        0 555 1\n";
        assert_eq!(tcp_listeners(tcp, 3306), vec!["31337".to_string()]);
        assert_eq!(tcp_listeners(tcp, 5432), vec!["555".to_string()]);
        assert!(tcp_listeners(tcp, 1).is_empty());
        let unix = "Num       RefCount Protocol Flags    Type St Inode Path\n\
                    0000: 00000002 00000000 00010000 0001 01 777 /run/mysqld/mysqld.sock\n\
                    0000: 00000002 00000000 00010000 0001 01 778 /tmp/.s.PGSQL.5432\n";
        assert_eq!(
            unix_listeners(unix, "/tmp/.s.PGSQL.5432"),
            vec!["778".to_string()]
        );
    }

    #[test]
    fn host_cpu_and_whole_disks_are_summed() {
        let stat = "cpu  100 10 50 1000 7 3 2 1 0 0\ncpu0 1 2 3 4 5 6 7 8\n";
        assert_eq!(
            host_cpu(stat, 10.0),
            v(&[("host.cpu_busy_ms", 1660.0), ("host.cpu_iowait_ms", 70.0)])
        );
        let disks = "   8       0 sda 10 0 100 5 20 0 200 9 0 30 40 0 0 0 0\n\
                        8       1 sda1 10 0 100 5 20 0 200 9 0 30 40 0 0 0 0\n\
                      253       0 vda 1 0 8 1 2 0 16 1 0 3\n";
        let io = disk_io(disks, |n| n == "sda" || n == "vda");
        // vda's line is too short (an old kernel's format would have 14 fields): skipped.
        assert_eq!(
            io,
            v(&[
                ("host.disk_reads", 10.0),
                ("host.disk_read_bytes", 51200.0),
                ("host.disk_writes", 20.0),
                ("host.disk_write_bytes", 102400.0),
                ("host.disk_io_ms", 30.0),
            ])
        );
    }

    #[test]
    fn only_loopback_hosts_and_sockets_are_local() {
        let mut t = Target::sqlite_default();
        t.hosts = vec![("127.0.0.1".into(), 3306)];
        assert_eq!(local_endpoint(&t), Some(Endpoint::Tcp(3306)));
        t.hosts = vec![("localhost".into(), 5432)];
        assert_eq!(local_endpoint(&t), Some(Endpoint::Tcp(5432)));
        t.hosts = vec![("db.example".into(), 3306)];
        assert_eq!(local_endpoint(&t), None);
        t.hosts = vec![("127.0.0.1".into(), 1), ("127.0.0.1".into(), 2)];
        assert_eq!(local_endpoint(&t), None);
        t.sockets = vec!["/run/mysqld/mysqld.sock".into()];
        assert_eq!(
            local_endpoint(&t),
            Some(Endpoint::Unix("/run/mysqld/mysqld.sock".into()))
        );
    }
}
