//! The coordinator's side of a multi-client run step (#17): start one agent per client, hand
//! each its shard, release them together, merge what they measured, and never leave an agent
//! behind.
//!
//! Shape, and why:
//! * One reader thread per agent turns its stdout into messages on one channel, one more
//!   keeps its stderr (the agent's log) in `agent.log` and a tail for error messages. The step
//!   loop waits on that channel with a short timeout, so it notices silence as well as
//!   messages: an agent that sends nothing (not even its one-second beat) for
//!   `BEAT + timeout` is frozen or cut off, and the step fails naming it.
//! * The start barrier: every agent reports `ready` once its workers have connected and
//!   prepared their statements; then `go` goes to all of them back to back. Each agent answers
//!   `started` when its clock starts; the start of agent *i* on the coordinator's clock is
//!   estimated as the midpoint of its `go` and its `started` (half a round trip each way), and
//!   the recorded start skew is the spread of those midpoints.
//! * Agents are children of this process, held by [`Agents`], whose `Drop` closes their
//!   stdin (an agent stops its workers and exits when it does), waits a moment and kills and
//!   reaps what is left: on success, on every error path and on panics. A remote agent dies
//!   with its ssh or kubectl session for the same reason.
//! * Versions must match exactly: the hello is checked before any step is sent, so a
//!   mismatched client is refused before it loads anything.
//! * Nothing an agent sends is trusted to be small or timely (#26): the channel from the
//!   reader threads is a rendezvous, so an agent is read no faster than the step loop takes
//!   its messages (one parsed message per agent in flight, whatever it floods); each message
//!   and each interval counts against the step's budget, samples and outcomes are checked
//!   against the client's share before they are decoded, stderr is kept up to its budget
//!   ([`super::bounds`]), every wait (hello, pong, ready, outcome, the exit status of an agent
//!   whose output closed) has a deadline, a stop request (the first Ctrl-C) ends the waits
//!   before `go` at once and puts its own deadline on the outcomes, and the merge's sums are
//!   checked ([`merge::MergeError`]). An agent over any bound fails its step
//!   with a message naming it and the bound. What the coordinator writes to an agent (three
//!   pings, one step, `go`, `stop`) stays far below a pipe's buffer, so a send never waits
//!   on an agent that does not read.
//! * A local agent runs in a process group of its own, and the whole group is killed when it
//!   is reaped: a wrapper's children (a script given as `binary`) go with it.

use std::collections::VecDeque;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::agent::BEAT;
use super::bounds::{self, StepBounds};
use super::merge::{self, MergeError};
use super::protocol::{self, AgentMsg, CoordMsg, PROTOCOL, StepSpec, VERSION};
use super::transport::{self, Client, ClientKind};
use crate::db::Target;
use crate::engine::lua::bundle::ScriptBundle;
use crate::engine::spec::WorkloadSpec;
use crate::engine::{IntervalSample, Shard, StepObserver, StepOutcome, console};
use crate::suite::clients::TransportOptions;
use crate::value::{Options, Value};

/// How the clients are reached and how long they may stay silent.
#[derive(Clone, Debug)]
pub struct ClientsConfig {
    pub clients: Vec<Client>,
    pub transport: TransportOptions,
    /// `[clients] binary` as the user set it: local clients then run it instead of this
    /// executable (a wrapper, another build).
    pub local_binary: Option<String>,
    /// How long an agent may send nothing at all (beyond its beat) before it counts as gone.
    pub timeout: Duration,
    /// How long starting an agent and its hello may take.
    pub connect_timeout: Duration,
}

/// One client's part of a finished step.
#[derive(Clone, Debug)]
pub struct ShardRun {
    pub client: String,
    pub host: String,
    pub threads: usize,
    pub outcome: StepOutcome,
    pub intervals: Vec<IntervalSample>,
    /// Median ping round trip in ms.
    pub rtt_ms: f64,
}

/// A finished multi-client step: the merged outcome and the shards it came from.
#[derive(Clone, Debug)]
pub struct ClientsRun {
    pub merged: StepOutcome,
    pub shards: Vec<ShardRun>,
    pub start_skew_ms: f64,
}

/// Why a multi-client step failed; every message names the client.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("client {client}: cannot start its agent (`{command}`): {source}")]
    Spawn {
        client: String,
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "client {client} runs sbsuite {theirs} (protocol {protocol}), this is sbsuite {VERSION} \
         (protocol {PROTOCOL}): install the same version there (nothing was run)"
    )]
    Version {
        client: String,
        theirs: String,
        protocol: u32,
    },
    #[error("client {client}: {message}{}", context(last, tail))]
    Failed {
        client: String,
        message: String,
        last: String,
        tail: String,
    },
    #[error("{0}")]
    Setup(String),
}

fn context(last: &str, tail: &str) -> String {
    let mut s = String::new();
    if !last.is_empty() {
        s.push_str(&format!("; its last message: {last}"));
    }
    if !tail.is_empty() {
        s.push_str(&format!("; its agent.log ends: {tail}"));
    }
    s
}

enum Event {
    Msg(AgentMsg),
    /// stdout ended: the agent exited or its session dropped.
    Eof,
    Bad(String),
    /// The agent went beyond a bound its reader threads check (its stderr).
    Overrun(String),
}

struct Agent {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    /// A local agent leads a process group of its own, killed with it.
    group: bool,
    tail: Arc<Mutex<VecDeque<String>>>,
    last: String,
    last_at: Instant,
    host: String,
    spawned: Instant,
    /// Messages and intervals received so far, against [`bounds::messages_allowed`] and
    /// [`StepBounds::intervals_allowed`].
    messages: u64,
    intervals: u64,
    /// Live samples received so far, against [`StepBounds::lives_allowed`].
    lives: u64,
    /// Its share of the step, once the step is sent.
    bounds: Option<StepBounds>,
    go_at: Option<Instant>,
}

/// The agents of one step; dropping it stops and reaps every one of them.
struct Agents {
    agents: Vec<Agent>,
    /// Taken (and so closed) first when the agents are dropped, which releases reader threads
    /// blocked on the rendezvous.
    rx: Option<Receiver<(usize, Event)>>,
}

/// How many lines of an agent's stderr an error message quotes.
const TAIL_LINES: usize = 5;

/// How much of one stderr line (and of any text an agent sends) a message quotes.
const QUOTE_MAX: usize = 300;

/// How much of an agent's own error message the step's error keeps (an engine's error, with
/// the statement it ran, is a few hundred bytes).
const ERROR_MAX: usize = 4096;

/// How long a stopped agent gets to exit on its own before it is killed.
const REAP_GRACE: Duration = Duration::from_secs(3);

/// How long an agent whose output closed gets to report its exit status.
const EXIT_WAIT: Duration = Duration::from_secs(1);

impl Drop for Agents {
    fn drop(&mut self) {
        drop(self.rx.take());
        for a in &mut self.agents {
            // Closing stdin is the agent's signal to stop and exit.
            drop(a.stdin.take());
        }
        let until = Instant::now() + REAP_GRACE;
        for a in &mut self.agents {
            // Waited for without reaping: while the leader is unreaped its pid, and so its
            // group's id, cannot be taken by another process.
            while exited(&a.child).is_none() && Instant::now() < until {
                thread::sleep(Duration::from_millis(20));
            }
            if a.group {
                // The whole group: the agent and whatever it started (a wrapper's children).
                // SAFETY: kill(2) of the process group this agent leads, not reaped yet.
                unsafe { libc::kill(-(a.child.id() as libc::pid_t), libc::SIGKILL) };
            } else if exited(&a.child).is_none() {
                let _ = a.child.kill();
            }
            let _ = a.child.wait();
        }
    }
}

/// How `child` ended, if it has, without reaping it.
fn exited(child: &Child) -> Option<String> {
    // SAFETY: an all-zero siginfo_t is a valid out-parameter of waitid(2).
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid(2) on our own child; WNOWAIT leaves it unreaped, WNOHANG never blocks.
    let rc = unsafe {
        libc::waitid(
            libc::P_PID,
            child.id(),
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: filled by waitid for a child that changed state (si_pid 0 otherwise).
    let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
    if rc != 0 || pid == 0 {
        return None;
    }
    Some(match info.si_code {
        libc::CLD_EXITED => format!("exit status: {status}"),
        _ => format!("killed by signal {status}"),
    })
}

/// `text` cut to [`QUOTE_MAX`] bytes (at a character boundary), saying how much was left out.
fn clip(text: &str) -> String {
    clip_to(text, QUOTE_MAX)
}

/// `text` cut to `max` bytes, saying how much was left out.
fn clip_to(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} more bytes)", &text[..end], text.len() - end)
}

fn describe(msg: &AgentMsg) -> String {
    match msg {
        AgentMsg::Hello { version, host, .. } => {
            format!("hello (sbsuite {} on {})", clip(version), clip(host))
        }
        AgentMsg::Pong { .. } => "pong".into(),
        AgentMsg::Ready => "ready".into(),
        AgentMsg::Started { .. } => "started".into(),
        AgentMsg::Beat => "beat".into(),
        AgentMsg::Interval(s) => format!("interval at {:.0} s", s.time_s),
        AgentMsg::Live(s) => format!("live sample at {:.0} s", s.elapsed_s),
        AgentMsg::Outcome(_) => "outcome".into(),
        AgentMsg::Error { message } => format!("error: {}", clip(message)),
    }
}

impl Agents {
    fn spawn(cfg: &ClientsConfig, log_dir: Option<&Path>) -> Result<Agents, ClientError> {
        // A rendezvous: a reader parses an agent's next message only once the step loop took
        // the previous one.
        let (tx, rx) = mpsc::sync_channel(0);
        let mut agents = Agents {
            agents: Vec::new(),
            rx: Some(rx),
        };
        for (i, client) in cfg.clients.iter().enumerate() {
            let mut cmd = match (&client.kind, &cfg.local_binary) {
                (ClientKind::Local, Some(bin)) => {
                    let mut c = Command::new(bin);
                    c.arg("agent");
                    c
                }
                _ => transport::agent_command(client, &cfg.transport),
            };
            let group = matches!(client.kind, ClientKind::Local);
            if group {
                // Its own process group: the terminal's Ctrl-C reaches the coordinator only,
                // which stops the agents through the protocol.
                std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
            }
            let shown = format!("{cmd:?}");
            let mut child = cmd
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|source| ClientError::Spawn {
                    client: client.name.clone(),
                    command: shown,
                    source,
                })?;
            let stdout = child.stdout.take();
            let stderr = child.stderr.take();
            let tail = Arc::new(Mutex::new(VecDeque::new()));
            let spawned = Instant::now();
            agents.agents.push(Agent {
                name: client.name.clone(),
                stdin: child.stdin.take(),
                child,
                group,
                tail: Arc::clone(&tail),
                last: String::new(),
                last_at: spawned,
                host: String::new(),
                spawned,
                messages: 0,
                intervals: 0,
                lives: 0,
                bounds: None,
                go_at: None,
            });
            if let Some(out) = stdout {
                let tx = tx.clone();
                thread::spawn(move || read_agent(i, BufReader::new(out), &tx));
            }
            if let Some(err) = stderr {
                let log = log_dir.map(|d| d.join(&client.name).join("agent.log"));
                let tx = tx.clone();
                thread::spawn(move || keep_log(i, err, log, &tail, spawned, &tx));
            }
        }
        Ok(agents)
    }

    fn send(&mut self, i: usize, msg: &CoordMsg) -> Result<(), ClientError> {
        let a = &mut self.agents[i];
        let sent = match a.stdin.as_mut() {
            Some(w) => protocol::send(w, msg).map_err(|e| e.to_string()),
            None => Err("its input is closed".into()),
        };
        sent.map_err(|e| self.failed(i, format!("cannot send to its agent: {e}")))
    }

    /// When the first agent was sent `go` (the merged lines' clock); now before that.
    fn origin(&self) -> Instant {
        self.agents
            .first()
            .and_then(|a| a.go_at)
            .unwrap_or_else(Instant::now)
    }

    fn failed(&self, i: usize, message: String) -> ClientError {
        let a = &self.agents[i];
        // Give the stderr thread a moment to take the agent's last words.
        thread::sleep(Duration::from_millis(50));
        let tail = a.tail.lock().unwrap_or_else(|e| e.into_inner());
        ClientError::Failed {
            client: format!("{} ({})", a.name, client_kind(&a.name, &a.host)),
            message,
            last: a.last.clone(),
            tail: tail.iter().cloned().collect::<Vec<_>>().join(" | "),
        }
    }

    /// The next message of any agent, or the failure that ended the wait: an agent that
    /// exited, sent garbage or an error, stayed silent for `BEAT + timeout`, or went beyond its
    /// budget of messages or intervals.
    fn next(
        &mut self,
        timeout: Duration,
        waiting_for: &str,
    ) -> Result<Option<(usize, AgentMsg)>, ClientError> {
        let bound = BEAT + timeout;
        if let Some(i) = self.agents.iter().position(|a| a.last_at.elapsed() > bound) {
            return Err(self.failed(
                i,
                format!(
                    "no message for {:.0} s (beat {} s + timeout {} s) while the coordinator \
                     waited for {waiting_for}: the agent is frozen or cut off",
                    self.agents[i].last_at.elapsed().as_secs_f64(),
                    BEAT.as_secs(),
                    timeout.as_secs()
                ),
            ));
        }
        let Some(rx) = self.rx.as_ref() else {
            return Err(ClientError::Setup("the agents are closed".into()));
        };
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok((i, Event::Msg(msg))) => {
                let a = &mut self.agents[i];
                a.last_at = Instant::now();
                if !matches!(msg, AgentMsg::Beat) {
                    a.last = describe(&msg);
                }
                if let Some(why) = a.count(&msg) {
                    return Err(self.failed(i, why));
                }
                if let AgentMsg::Error { message } = &msg {
                    return Err(self.failed(i, clip_to(message, ERROR_MAX)));
                }
                Ok(Some((i, msg)))
            }
            Ok((i, Event::Eof)) => {
                let status = exit_status(&self.agents[i].child);
                Err(self.failed(
                    i,
                    format!(
                        "its agent ended ({status}) while the coordinator waited for {waiting_for}"
                    ),
                ))
            }
            Ok((i, Event::Bad(e))) => Err(self.failed(i, format!("protocol error: {}", clip(&e)))),
            Ok((i, Event::Overrun(why))) => Err(self.failed(i, why)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => {
                Err(ClientError::Setup("every agent's output closed".into()))
            }
        }
    }
}

impl Agent {
    /// Counts `msg` against the agent's budgets; the overrun, if any.
    fn count(&mut self, msg: &AgentMsg) -> Option<String> {
        self.messages += 1;
        let is_interval = matches!(msg, AgentMsg::Interval(_));
        if is_interval {
            self.intervals += 1;
        }
        let since_go = self.go_at.map(|g| g.elapsed());
        let intervals = self
            .bounds
            .as_ref()
            .map_or(0, |b| b.intervals_allowed(since_go));
        if is_interval && self.intervals > intervals {
            let every = self
                .bounds
                .as_ref()
                .and_then(|b| b.report_interval)
                .map_or("off".to_string(), |d| format!("{} s", d.as_secs()));
            return Some(match since_go {
                Some(t) => format!(
                    "sent {} intervals {:.1} s after `go`, more than report_interval ({every}) \
                     allows ({intervals}, with {} to spare): not a correct agent",
                    self.intervals,
                    t.as_secs_f64(),
                    bounds::INTERVAL_SLACK
                ),
                None => "sent an interval before `go`: not a correct agent".into(),
            });
        }
        let lives = self
            .bounds
            .as_ref()
            .map_or(0, |b| b.lives_allowed(since_go));
        if matches!(msg, AgentMsg::Live(_)) {
            self.lives += 1;
            if self.lives > lives {
                return Some(format!(
                    "sent {} live samples, more than asked for ({lives} by now, with {} to \
                     spare): not a correct agent",
                    self.lives,
                    bounds::INTERVAL_SLACK
                ));
            }
        }
        let alive = self.spawned.elapsed();
        let allowed = bounds::messages_allowed(alive, intervals.saturating_add(lives));
        if self.messages > allowed {
            return Some(format!(
                "sent {} messages in {:.1} s, more than an agent sends (a beat a second, its \
                 intervals and a few others: at most {allowed} by now): not a correct agent",
                self.messages,
                alive.as_secs_f64()
            ));
        }
        None
    }
}

/// The exit status of an agent whose output closed, waited for at most [`EXIT_WAIT`] (a
/// process may close its stdout and go on); it is reaped with the others.
fn exit_status(child: &Child) -> String {
    let until = Instant::now() + EXIT_WAIT;
    loop {
        if let Some(status) = exited(child) {
            return status;
        }
        if Instant::now() >= until {
            return "its output closed, the process still runs".into();
        }
        thread::sleep(Duration::from_millis(20));
    }
}

fn client_kind(name: &str, host: &str) -> String {
    if host.is_empty() {
        name.to_string()
    } else {
        format!("host {host}")
    }
}

fn read_agent(
    i: usize,
    mut out: BufReader<std::process::ChildStdout>,
    tx: &SyncSender<(usize, Event)>,
) {
    loop {
        let ev = match protocol::recv::<AgentMsg>(&mut out) {
            Ok(Some(m)) => Event::Msg(m),
            Ok(None) => Event::Eof,
            Err(e) => Event::Bad(e.to_string()),
        };
        let end = !matches!(ev, Event::Msg(_));
        if tx.send((i, ev)).is_err() || end {
            return;
        }
    }
}

/// Keeps an agent's stderr: in `agent.log` (when the step has a run directory) and its last
/// lines for error messages, up to [`bounds::stderr_allowed`]. Read in chunks, never by line:
/// a line without an end must not grow a buffer. Beyond the budget the log says what was
/// dropped, the step loop is told (the agent fails) and the pipe is closed.
fn keep_log(
    i: usize,
    mut err: std::process::ChildStderr,
    log: Option<PathBuf>,
    tail: &Mutex<VecDeque<String>>,
    spawned: Instant,
    tx: &SyncSender<(usize, Event)>,
) {
    let mut file = log.and_then(|p| {
        if let Some(d) = p.parent() {
            let _ = std::fs::create_dir_all(d);
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .ok()
    });
    let mut buf = [0u8; 8192];
    let mut kept = 0u64;
    let mut line = LineTail::default();
    loop {
        let n = match err.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let alive = spawned.elapsed();
        let allowed = bounds::stderr_allowed(alive);
        let fits = usize::try_from(allowed.saturating_sub(kept)).map_or(n, |f| f.min(n));
        if let Some(f) = file.as_mut() {
            let _ = f.write_all(&buf[..fits]);
        }
        kept += fits as u64;
        for &b in &buf[..fits] {
            if let Some(done) = line.push(b) {
                push_tail(tail, done);
            }
        }
        if fits < n {
            let why = format!(
                "wrote more than {allowed} bytes to stderr in {:.1} s (an agent may write {} KiB \
                 plus {} KiB a second alive); the rest was dropped: not a correct agent",
                alive.as_secs_f64(),
                bounds::STDERR_BASE >> 10,
                bounds::STDERR_PER_SECOND >> 10
            );
            if let Some(f) = file.as_mut() {
                let _ = writeln!(f, "\n[sbsuite] agent.log ends here: this agent {why}");
            }
            let _ = tx.send((i, Event::Overrun(why)));
            return;
        }
    }
    if let Some(done) = line.finish() {
        push_tail(tail, done);
    }
}

/// The line of stderr being read, its first [`QUOTE_MAX`] bytes kept for the tail.
#[derive(Default)]
struct LineTail {
    head: Vec<u8>,
    len: usize,
}

impl LineTail {
    /// Adds a byte; the finished line at its end.
    fn push(&mut self, b: u8) -> Option<String> {
        if b == b'\n' {
            return self.finish();
        }
        if self.head.len() < QUOTE_MAX {
            self.head.push(b);
        }
        self.len += 1;
        None
    }

    fn finish(&mut self) -> Option<String> {
        let mut text = String::from_utf8_lossy(&self.head).trim_end().to_string();
        if self.len > self.head.len() {
            text.push_str(&format!("… ({} more bytes)", self.len - self.head.len()));
        }
        self.head.clear();
        self.len = 0;
        (!text.trim().is_empty()).then_some(text)
    }
}

fn push_tail(tail: &Mutex<VecDeque<String>>, line: String) {
    let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
    t.push_back(line);
    while t.len() > TAIL_LINES {
        t.pop_front();
    }
}

/// Starts every client's agent, checks its version and drops it: `run` calls this before
/// anything runs, so a client that cannot be reached or runs another version fails the run
/// before the first prepare.
pub fn preflight(cfg: &ClientsConfig, stop: &AtomicBool) -> Result<Vec<String>, ClientError> {
    let mut agents = Agents::spawn(cfg, None)?;
    hello(&mut agents, cfg, stop)?;
    Ok(agents.agents.iter().map(|a| a.host.clone()).collect())
}

/// The error of a wait ended by a stop request.
fn stopped(during: &str) -> ClientError {
    ClientError::Setup(format!("stopped {during}"))
}

fn hello(agents: &mut Agents, cfg: &ClientsConfig, stop: &AtomicBool) -> Result<(), ClientError> {
    let n = agents.agents.len();
    let mut seen = vec![false; n];
    let until = Instant::now() + cfg.connect_timeout;
    while seen.iter().any(|s| !s) {
        if stop.load(Ordering::Relaxed) {
            return Err(stopped("while the agents started"));
        }
        if Instant::now() > until {
            let i = seen.iter().position(|s| !s).unwrap_or(0);
            return Err(agents.failed(
                i,
                format!(
                    "its agent did not say hello within connect_timeout ({} s)",
                    cfg.connect_timeout.as_secs()
                ),
            ));
        }
        // The agents say nothing before their hello: no silence bound yet, only the deadline.
        if let Some((
            i,
            AgentMsg::Hello {
                protocol,
                version,
                host,
                ..
            },
        )) = agents.next(cfg.connect_timeout, "the agent's hello")?
        {
            if version != VERSION || protocol != PROTOCOL {
                return Err(ClientError::Version {
                    client: agents.agents[i].name.clone(),
                    theirs: clip(&version),
                    protocol,
                });
            }
            agents.agents[i].host = clip(&host);
            seen[i] = true;
        }
    }
    Ok(())
}

/// Median round trip of three pings per agent, in ms. Each pong is due within the silence
/// bound (`BEAT + timeout`): an agent that beats but never answers is not waited for longer.
fn ping(
    agents: &mut Agents,
    cfg: &ClientsConfig,
    stop: &AtomicBool,
) -> Result<Vec<f64>, ClientError> {
    let n = agents.agents.len();
    let mut rtts: Vec<Vec<f64>> = vec![Vec::new(); n];
    let bound = BEAT + cfg.timeout;
    for seq in 0..3u64 {
        for (i, rtt) in rtts.iter_mut().enumerate() {
            let sent = Instant::now();
            agents.send(i, &CoordMsg::Ping { seq })?;
            loop {
                if stop.load(Ordering::Relaxed) {
                    return Err(stopped("while the agents were pinged"));
                }
                if sent.elapsed() > bound {
                    return Err(agents.failed(
                        i,
                        format!(
                            "no answer to ping {seq} within {} s (beat {} s + timeout {} s)",
                            bound.as_secs(),
                            BEAT.as_secs(),
                            cfg.timeout.as_secs()
                        ),
                    ));
                }
                if let Some((j, AgentMsg::Pong { seq: s })) = agents.next(cfg.timeout, "a pong")?
                    && j == i
                    && s == seq
                {
                    rtt.push(sent.elapsed().as_secs_f64() * 1e3);
                    break;
                }
            }
        }
    }
    Ok(rtts
        .into_iter()
        .map(|mut r| {
            r.sort_by(f64::total_cmp);
            r.get(r.len() / 2).copied().unwrap_or(0.0)
        })
        .collect())
}

/// A seed every shard shares when the step has none (`rand_seed = 0` reads the clock, and
/// each client's clock would give its own, so shared sequences could collide).
fn shared_seed() -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    ((now ^ u64::from(std::process::id()).rotate_left(32)) >> 1).max(1) as i64
}

/// The options of shard `index`: its share of `threads`, `rate` and `events`.
fn shard_options(options: &Options, shard: Shard, threads: usize, seed: i64) -> Options {
    let mut o = options.clone();
    let share = |key: &str| {
        let total = options.int(key).max(0) as u64;
        Value::Int(Shard::share(total, shard.count, shard.index) as i64)
    };
    o.0.insert("threads".into(), Value::Int(threads as i64));
    for key in ["rate", "events"] {
        if options.get(key).is_some() {
            let v = share(key);
            o.0.insert(key.into(), v);
        }
    }
    o.0.insert("rand_seed".into(), Value::Int(seed));
    o
}

/// Runs one run step on every client and merges it. `definition` is the workload's own, when
/// the suite declares it ([`StepSpec::definition`]); `script` the sysbench Lua script it is,
/// with its modules ([`StepSpec::script`]). `out` gets the merged interval lines and
/// the merged final report; `log_dir` (`shards/` of the run) the agents' logs.
#[allow(clippy::too_many_arguments)]
pub fn run_step(
    cfg: &ClientsConfig,
    workload: &WorkloadSpec,
    definition: Option<&str>,
    script: Option<&ScriptBundle>,
    options: &Options,
    target: Option<&Target>,
    out: &mut dyn Write,
    on_interval: &mut dyn StepObserver,
    stop: &AtomicBool,
    log_dir: Option<&Path>,
) -> Result<ClientsRun, ClientError> {
    let n = cfg.clients.len();
    let threads = options.int("threads").max(0) as usize;
    if threads < n {
        return Err(ClientError::Setup(format!(
            "threads = {threads} cannot be split over {n} clients: use at least one thread per client"
        )));
    }
    let (password, login_passwords) = match target {
        Some(t) => t
            .wire_passwords()
            .map_err(|e| ClientError::Setup(e.to_string()))?,
        None => (None, Vec::new()),
    };
    let seed = match options.int("rand_seed") {
        0 => shared_seed(),
        s => s,
    };
    let cwd = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    let shards = Shard::split(threads, n);
    let live_every = on_interval.live_every().filter(|d| !d.is_zero());
    let specs = shards
        .iter()
        .enumerate()
        .map(|(i, (shard, mine))| {
            let options = shard_options(options, *shard, *mine, seed);
            let bounds = StepBounds::of(workload, &options, target, *mine, cfg.timeout)
                .map_err(|e| ClientError::Setup(e.to_string()))?
                .watched(live_every);
            let spec = StepSpec {
                workload: workload.name.to_string(),
                options,
                shard: *shard,
                target: target.map(Target::to_wire),
                password: password.clone(),
                login_passwords: login_passwords.clone(),
                definition: definition.map(str::to_string),
                script: script.cloned(),
                cwd: match cfg.clients[i].kind {
                    ClientKind::Local => cwd.clone(),
                    _ => String::new(),
                },
                live_every_ms: live_every.map(|d| d.as_millis().max(1) as u64),
            };
            Ok((spec, bounds))
        })
        .collect::<Result<Vec<_>, ClientError>>()?;
    let mut agents = Agents::spawn(cfg, log_dir)?;
    hello(&mut agents, cfg, stop)?;
    let rtts = ping(&mut agents, cfg, stop)?;
    for (i, (spec, bounds)) in specs.into_iter().enumerate() {
        agents.agents[i].bounds = Some(bounds);
        agents.send(i, &CoordMsg::Step(Box::new(spec)))?;
    }
    barrier(&mut agents, cfg, stop)?;
    for i in 0..n {
        agents.agents[i].go_at = Some(Instant::now());
        agents.send(i, &CoordMsg::Go)?;
    }
    let percentile = options
        .get("percentile")
        .and_then(Value::as_f64)
        .unwrap_or(95.0);
    writeln!(
        out,
        "Running on {n} clients: {}",
        cfg.clients
            .iter()
            .zip(&shards)
            .map(|(c, (_, t))| format!("{} ({t} threads)", c.name))
            .collect::<Vec<_>>()
            .join(", ")
    )
    .map_err(report_failed)?;
    writeln!(out, "Threads started!\n").map_err(report_failed)?;
    out.flush().map_err(report_failed)?;
    let mut run = Collect::new(n, percentile, live_every);
    // Without a warmup the measured part begins with the last agent's clock: then the
    // observer is told (the server counters' baseline, #29); after a warmup the coordinator
    // does not know when each agent's ends.
    run.tell_measuring = match options.get("warmup_time") {
        None => true,
        Some(w) => w.as_f64() == Some(0.0),
    };
    run.until_outcomes(&mut agents, cfg, stop, out, on_interval)?;
    let start_skew_ms = run.start_skew_ms();
    let outcomes: Vec<StepOutcome> = run.outcomes.into_iter().flatten().collect();
    let mut merged = merge::merge_outcomes(&outcomes).map_err(|e| merge_failed(&agents, e))?;
    merged.metrics.push(("shards", n as f64));
    merged.metrics.push(("start_skew_ms", start_skew_ms));
    console::write_final_report(out, &merged).map_err(report_failed)?;
    writeln!(out, "Clients: {n}, start skew {start_skew_ms:.3} ms\n").map_err(report_failed)?;
    out.flush().map_err(report_failed)?;
    let shards = agents
        .agents
        .iter()
        .zip(outcomes)
        .zip(run.intervals)
        .zip(shards.iter().zip(rtts))
        .map(
            |(((a, outcome), intervals), ((_, threads), rtt_ms))| ShardRun {
                client: a.name.clone(),
                host: a.host.clone(),
                threads: *threads,
                outcome,
                intervals,
                rtt_ms,
            },
        )
        .collect();
    Ok(ClientsRun {
        merged,
        shards,
        start_skew_ms,
    })
}

fn report_failed(e: std::io::Error) -> ClientError {
    ClientError::Setup(format!("writing the report failed: {e}"))
}

/// A merge that failed: an overflow is the failure of the client whose value did not fit.
fn merge_failed(agents: &Agents, e: MergeError) -> ClientError {
    match e {
        MergeError::Overflow { shard, .. } if shard < agents.agents.len() => {
            agents.failed(shard, e.to_string())
        }
        e => ClientError::Setup(e.to_string()),
    }
}

/// The start barrier: every agent connected and prepared, each within its step's
/// [`StepBounds::ready_within`] of the step being sent; a stop request ends the wait.
fn barrier(agents: &mut Agents, cfg: &ClientsConfig, stop: &AtomicBool) -> Result<(), ClientError> {
    let sent = Instant::now();
    let mut ready = vec![false; agents.agents.len()];
    while ready.iter().any(|r| !r) {
        if stop.load(Ordering::Relaxed) {
            return Err(stopped("before the start"));
        }
        let late = agents.agents.iter().zip(&ready).position(|(a, r)| {
            !r && a
                .bounds
                .as_ref()
                .is_some_and(|b| sent.elapsed() > b.ready_within)
        });
        if let Some(i) = late {
            let why = agents.agents[i]
                .bounds
                .as_ref()
                .map(|b| b.why.setup.clone())
                .unwrap_or_default();
            return Err(agents.failed(
                i,
                format!(
                    "not ready {:.0} s after its step was sent (the step's bound: {why})",
                    sent.elapsed().as_secs_f64()
                ),
            ));
        }
        if let Some((i, AgentMsg::Ready)) = agents.next(cfg.timeout, "every agent to be ready")? {
            ready[i] = true;
        }
    }
    Ok(())
}

/// What the coordinator gathers between `go` and the last outcome.
struct Collect {
    percentile: f64,
    /// Each agent's estimated start (s after the first `go`), for the start skew.
    started: Vec<Option<f64>>,
    /// Samples not merged yet: a tick is printed once every agent sent it.
    queues: Vec<VecDeque<IntervalSample>>,
    /// Each agent's samples for its intervals.csv (without their latency buckets, which only
    /// the merged line needs).
    intervals: Vec<Vec<IntervalSample>>,
    outcomes: Vec<Option<StepOutcome>>,
    stop_at: Option<Instant>,
    /// The agents' live samples, merged for `--metrics`.
    live: merge::LiveMerge,
    /// Tell the observer the measured part began once every agent's clock started.
    tell_measuring: bool,
}

impl Collect {
    fn new(n: usize, percentile: f64, live_every: Option<Duration>) -> Collect {
        Collect {
            live: merge::LiveMerge::new(n, live_every.unwrap_or_default()),
            percentile,
            started: vec![None; n],
            queues: vec![VecDeque::new(); n],
            intervals: vec![Vec::new(); n],
            outcomes: vec![None; n],
            stop_at: None,
            tell_measuring: false,
        }
    }

    fn until_outcomes(
        &mut self,
        agents: &mut Agents,
        cfg: &ClientsConfig,
        stop: &AtomicBool,
        out: &mut dyn Write,
        on_interval: &mut dyn StepObserver,
    ) -> Result<(), ClientError> {
        while self.outcomes.iter().any(Option::is_none) {
            if stop.load(Ordering::Relaxed) && self.stop_at.is_none() {
                self.stop_at = Some(Instant::now());
                for i in 0..agents.agents.len() {
                    agents.send(i, &CoordMsg::Stop)?;
                }
            }
            self.check_deadlines(agents)?;
            let Some((i, msg)) = agents.next(cfg.timeout, "the run's reports")? else {
                continue;
            };
            match msg {
                AgentMsg::Started { .. } => {
                    let origin = agents.origin();
                    let go = agents.agents[i].go_at.unwrap_or(origin);
                    let now = origin.elapsed().as_secs_f64();
                    let go = go.duration_since(origin).as_secs_f64();
                    self.started[i] = Some(go + (now - go) / 2.0);
                    if self.tell_measuring && self.started.iter().all(Option::is_some) {
                        self.tell_measuring = false;
                        on_interval.measuring();
                    }
                }
                AgentMsg::Interval(s) => self.interval(agents, i, *s, out, on_interval)?,
                AgentMsg::Live(s) => {
                    let (totals, buckets) = s.into_parts().map_err(|e| {
                        agents.failed(i, format!("its live sample does not decode: {e}"))
                    })?;
                    if let Some(merged) = self.live.add(i, totals, &buckets, Instant::now()) {
                        on_interval.live(&merged.sample());
                    }
                }
                AgentMsg::Outcome(o) => {
                    if self.outcomes[i].is_some() {
                        return Err(agents.failed(i, "sent a second outcome".into()));
                    }
                    if let Some(b) = &agents.agents[i].bounds {
                        b.check_outcome(&o)
                            .map_err(|e| agents.failed(i, e.to_string()))?;
                    }
                    let o = o.into_outcome().map_err(|e| {
                        agents.failed(i, format!("its outcome does not decode: {e}"))
                    })?;
                    self.outcomes[i] = Some(o);
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Fails the first agent whose outcome is overdue: [`StepBounds::outcome_within`] after
    /// its `go`, or [`StepBounds::stop_within`] after a stop.
    fn check_deadlines(&self, agents: &Agents) -> Result<(), ClientError> {
        for (i, a) in agents.agents.iter().enumerate() {
            let (Some(b), Some(go), None) = (&a.bounds, a.go_at, &self.outcomes[i]) else {
                continue;
            };
            if let Some(within) = b.outcome_within
                && go.elapsed() > within
            {
                return Err(agents.failed(
                    i,
                    format!(
                        "no outcome {:.0} s after `go` (the step's bound: {})",
                        go.elapsed().as_secs_f64(),
                        b.why.run
                    ),
                ));
            }
            if let Some(at) = self.stop_at
                && at.elapsed() > b.stop_within
            {
                return Err(agents.failed(
                    i,
                    format!(
                        "no outcome {:.0} s after the stop (the bound: {})",
                        at.elapsed().as_secs_f64(),
                        b.why.stop
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Agent `i`'s sample: checked, queued, and every tick all agents sent printed merged.
    fn interval(
        &mut self,
        agents: &Agents,
        i: usize,
        wire: protocol::WireSample,
        out: &mut dyn Write,
        on_interval: &mut dyn StepObserver,
    ) -> Result<(), ClientError> {
        if let Some(b) = &agents.agents[i].bounds {
            b.check_sample(&wire)
                .map_err(|e| agents.failed(i, e.to_string()))?;
        }
        let s = wire
            .into_sample()
            .map_err(|e| agents.failed(i, e.to_string()))?;
        self.intervals[i].push(IntervalSample {
            lat_buckets: Vec::new(),
            ..s.clone()
        });
        self.queues[i].push_back(s);
        while self.queues.iter().all(|q| !q.is_empty()) {
            let tick: Vec<IntervalSample> = self
                .queues
                .iter_mut()
                .filter_map(VecDeque::pop_front)
                .collect();
            let at = agents.origin().elapsed().as_secs_f64();
            let merged = merge::merge_samples(&tick, at, self.percentile)
                .map_err(|e| merge_failed(agents, e))?;
            writeln!(out, "{}", console::interval_line(&merged, self.percentile))
                .map_err(report_failed)?;
            out.flush().map_err(report_failed)?;
            on_interval.interval(&merged);
        }
        Ok(())
    }

    /// The spread of the agents' estimated starts, ms.
    fn start_skew_ms(&self) -> f64 {
        let mids: Vec<f64> = self.started.iter().flatten().copied().collect();
        match (
            mids.iter().copied().reduce(f64::min),
            mids.iter().copied().reduce(f64::max),
        ) {
            (Some(lo), Some(hi)) => (hi - lo) * 1e3,
            _ => 0.0,
        }
    }
}
