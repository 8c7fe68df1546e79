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

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::agent::BEAT;
use super::merge;
use super::protocol::{self, AgentMsg, CoordMsg, PROTOCOL, StepSpec, VERSION};
use super::transport::{self, Client, ClientKind, TransportOptions};
use crate::db::Target;
use crate::engine::{IntervalSample, Shard, StepObserver, StepOutcome, console};
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
}

struct Agent {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    tail: Arc<Mutex<VecDeque<String>>>,
    last: String,
    last_at: Instant,
    host: String,
}

/// The agents of one step; dropping it stops and reaps every one of them.
struct Agents {
    agents: Vec<Agent>,
    rx: Receiver<(usize, Event)>,
}

/// How many lines of an agent's stderr an error message quotes.
const TAIL_LINES: usize = 5;

/// How long a stopped agent gets to exit on its own before it is killed.
const REAP_GRACE: Duration = Duration::from_secs(3);

impl Drop for Agents {
    fn drop(&mut self) {
        for a in &mut self.agents {
            // Closing stdin is the agent's signal to stop and exit.
            drop(a.stdin.take());
        }
        let until = Instant::now() + REAP_GRACE;
        for a in &mut self.agents {
            loop {
                match a.child.try_wait() {
                    Ok(Some(_)) => break,
                    Ok(None) if Instant::now() < until => thread::sleep(Duration::from_millis(20)),
                    _ => {
                        let _ = a.child.kill();
                        let _ = a.child.wait();
                        break;
                    }
                }
            }
        }
    }
}

fn describe(msg: &AgentMsg) -> String {
    match msg {
        AgentMsg::Hello { version, host, .. } => format!("hello (sbsuite {version} on {host})"),
        AgentMsg::Pong { .. } => "pong".into(),
        AgentMsg::Ready => "ready".into(),
        AgentMsg::Started { .. } => "started".into(),
        AgentMsg::Beat => "beat".into(),
        AgentMsg::Interval(s) => format!("interval at {:.0} s", s.time_s),
        AgentMsg::Outcome(_) => "outcome".into(),
        AgentMsg::Error { message } => format!("error: {message}"),
    }
}

impl Agents {
    fn spawn(cfg: &ClientsConfig, log_dir: Option<&Path>) -> Result<Agents, ClientError> {
        let (tx, rx) = mpsc::channel();
        let mut agents = Agents {
            agents: Vec::new(),
            rx,
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
            if matches!(client.kind, ClientKind::Local) {
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
            agents.agents.push(Agent {
                name: client.name.clone(),
                stdin: child.stdin.take(),
                child,
                tail: Arc::clone(&tail),
                last: String::new(),
                last_at: Instant::now(),
                host: String::new(),
            });
            if let Some(out) = stdout {
                let tx = tx.clone();
                thread::spawn(move || read_agent(i, BufReader::new(out), &tx));
            }
            if let Some(err) = stderr {
                let log = log_dir.map(|d| d.join(&client.name).join("agent.log"));
                thread::spawn(move || keep_log(BufReader::new(err), log, &tail));
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
    /// exited, sent garbage or an error, or stayed silent for `BEAT + timeout`.
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
        match self.rx.recv_timeout(Duration::from_millis(50)) {
            Ok((i, Event::Msg(msg))) => {
                let a = &mut self.agents[i];
                a.last_at = Instant::now();
                if !matches!(msg, AgentMsg::Beat) {
                    a.last = describe(&msg);
                }
                if let AgentMsg::Error { message } = &msg {
                    return Err(self.failed(i, message.clone()));
                }
                Ok(Some((i, msg)))
            }
            Ok((i, Event::Eof)) => {
                let status = self.agents[i]
                    .child
                    .wait()
                    .map_or_else(|e| e.to_string(), |s| s.to_string());
                Err(self.failed(
                    i,
                    format!(
                        "its agent ended ({status}) while the coordinator waited for {waiting_for}"
                    ),
                ))
            }
            Ok((i, Event::Bad(e))) => Err(self.failed(i, format!("protocol error: {e}"))),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => {
                Err(ClientError::Setup("every agent's output closed".into()))
            }
        }
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
    tx: &Sender<(usize, Event)>,
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

fn keep_log(
    err: BufReader<std::process::ChildStderr>,
    log: Option<PathBuf>,
    tail: &Mutex<VecDeque<String>>,
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
    for line in err.lines() {
        let Ok(line) = line else { break };
        if let Some(f) = file.as_mut() {
            let _ = writeln!(f, "{line}");
        }
        let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
        if !line.trim().is_empty() {
            t.push_back(line);
        }
        while t.len() > TAIL_LINES {
            t.pop_front();
        }
    }
    let _: Option<File> = file;
}

/// Starts every client's agent, checks its version and drops it: `run` calls this before
/// anything runs, so a client that cannot be reached or runs another version fails the run
/// before the first prepare.
pub fn preflight(cfg: &ClientsConfig) -> Result<Vec<String>, ClientError> {
    let mut agents = Agents::spawn(cfg, None)?;
    hello(&mut agents, cfg)?;
    Ok(agents.agents.iter().map(|a| a.host.clone()).collect())
}

fn hello(agents: &mut Agents, cfg: &ClientsConfig) -> Result<(), ClientError> {
    let n = agents.agents.len();
    let mut seen = vec![false; n];
    let until = Instant::now() + cfg.connect_timeout;
    while seen.iter().any(|s| !s) {
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
                    theirs: version,
                    protocol,
                });
            }
            agents.agents[i].host = host;
            seen[i] = true;
        }
    }
    Ok(())
}

/// Median round trip of three pings per agent, in ms.
fn ping(agents: &mut Agents, cfg: &ClientsConfig) -> Result<Vec<f64>, ClientError> {
    let n = agents.agents.len();
    let mut rtts: Vec<Vec<f64>> = vec![Vec::new(); n];
    for seq in 0..3u64 {
        for (i, rtt) in rtts.iter_mut().enumerate() {
            let sent = Instant::now();
            agents.send(i, &CoordMsg::Ping { seq })?;
            loop {
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

/// Runs one run step on every client and merges it. `out` gets the merged interval lines
/// and the merged final report; `log_dir` (`shards/` of the run) the agents' logs.
#[allow(clippy::too_many_arguments)]
pub fn run_step(
    cfg: &ClientsConfig,
    workload: &str,
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
    let password = match target {
        Some(t) => t
            .password()
            .map_err(|e| ClientError::Setup(e.to_string()))?,
        None => None,
    };
    let seed = match options.int("rand_seed") {
        0 => shared_seed(),
        s => s,
    };
    let cwd = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    let mut agents = Agents::spawn(cfg, log_dir)?;
    hello(&mut agents, cfg)?;
    let rtts = ping(&mut agents, cfg)?;
    let shards = Shard::split(threads, n);
    for (i, (shard, mine)) in shards.iter().enumerate() {
        let spec = StepSpec {
            workload: workload.to_string(),
            options: shard_options(options, *shard, *mine, seed),
            shard: *shard,
            target: target.map(Target::to_wire),
            password: password.clone(),
            cwd: match cfg.clients[i].kind {
                ClientKind::Local => cwd.clone(),
                _ => String::new(),
            },
        };
        agents.send(i, &CoordMsg::Step(Box::new(spec)))?;
    }
    // The barrier: every agent connected and prepared.
    let mut ready = vec![false; n];
    while ready.iter().any(|r| !r) {
        if stop.load(Ordering::Relaxed) {
            return Err(ClientError::Setup("stopped before the start".into()));
        }
        if let Some((i, AgentMsg::Ready)) = agents.next(cfg.timeout, "every agent to be ready")? {
            ready[i] = true;
        }
    }
    let mut go_at = Vec::with_capacity(n);
    for i in 0..n {
        go_at.push(Instant::now());
        agents.send(i, &CoordMsg::Go)?;
    }
    let origin = go_at[0];
    let mut started: Vec<Option<f64>> = vec![None; n];
    let mut queues: Vec<VecDeque<IntervalSample>> = vec![VecDeque::new(); n];
    let mut intervals: Vec<Vec<IntervalSample>> = vec![Vec::new(); n];
    let mut outcomes: Vec<Option<StepOutcome>> = vec![None; n];
    let percentile = options
        .get("percentile")
        .and_then(Value::as_f64)
        .unwrap_or(95.0);
    let io = |e: std::io::Error| ClientError::Setup(format!("writing the report failed: {e}"));
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
    .map_err(io)?;
    writeln!(out, "Threads started!\n").map_err(io)?;
    out.flush().map_err(io)?;
    let mut stop_sent = false;
    while outcomes.iter().any(Option::is_none) {
        if stop.load(Ordering::Relaxed) && !stop_sent {
            stop_sent = true;
            for i in 0..n {
                agents.send(i, &CoordMsg::Stop)?;
            }
        }
        let Some((i, msg)) = agents.next(cfg.timeout, "the run's reports")? else {
            continue;
        };
        match msg {
            AgentMsg::Started { .. } => {
                let now = origin.elapsed().as_secs_f64();
                let go = go_at[i].duration_since(origin).as_secs_f64();
                started[i] = Some(go + (now - go) / 2.0);
            }
            AgentMsg::Interval(s) => {
                let s = s.into_sample();
                intervals[i].push(s.clone());
                queues[i].push_back(s);
                while queues.iter().all(|q| !q.is_empty()) {
                    let tick: Vec<IntervalSample> =
                        queues.iter_mut().filter_map(VecDeque::pop_front).collect();
                    let at = origin.elapsed().as_secs_f64();
                    let merged = merge::merge_samples(&tick, at, percentile);
                    writeln!(out, "{}", console::interval_line(&merged, percentile)).map_err(io)?;
                    out.flush().map_err(io)?;
                    on_interval.interval(&merged);
                }
            }
            AgentMsg::Outcome(o) => {
                let o = o
                    .into_outcome()
                    .map_err(|e| agents.failed(i, format!("its outcome does not decode: {e}")))?;
                outcomes[i] = Some(o);
            }
            _ => {}
        }
    }
    let mids: Vec<f64> = started.iter().flatten().copied().collect();
    let start_skew_ms = match (
        mids.iter().copied().reduce(f64::min),
        mids.iter().copied().reduce(f64::max),
    ) {
        (Some(lo), Some(hi)) => (hi - lo) * 1e3,
        _ => 0.0,
    };
    let outcomes: Vec<StepOutcome> = outcomes.into_iter().flatten().collect();
    let mut merged = merge::merge_outcomes(&outcomes).map_err(ClientError::Setup)?;
    merged.metrics.push(("shards", n as f64));
    merged.metrics.push(("start_skew_ms", start_skew_ms));
    console::write_final_report(out, &merged).map_err(io)?;
    writeln!(out, "Clients: {n}, start skew {start_skew_ms:.3} ms\n").map_err(io)?;
    out.flush().map_err(io)?;
    let shards = agents
        .agents
        .iter()
        .zip(outcomes)
        .zip(intervals)
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
