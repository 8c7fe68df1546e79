//! `sbsuite agent`: one client of a multi-client run, driven over its stdin and stdout (#17).
//!
//! Shape, and why:
//! * Three threads besides the step: a reader (stdin → messages; `stop` and the end of the
//!   stream act at once, whatever the step is doing), a writer (the only one that touches
//!   stdout, so lines never interleave) and a beat (a [`AgentMsg::Beat`] every second, so the
//!   coordinator tells a busy agent from a frozen or dead one by silence alone).
//! * The end of stdin means the coordinator is gone (killed, its ssh session dropped): the
//!   step is stopped and the agent exits, and if the workers do not stop within
//!   [`EXIT_GRACE`] the process exits anyway. No orphan keeps loading the database.
//! * An agent only runs workload run steps with the options it is sent (and, for a workload
//!   the suite declares, its definition: SQL and expressions; for a sysbench Lua script, the
//!   script and its modules, each checked against the SHA-256 the coordinator recorded): it
//!   never runs a shell command, a hook or a template from the wire, and it logs no password
//!   (its stderr is the coordinator's `agent.log`).

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::protocol::{
    self, AgentMsg, CoordMsg, PROTOCOL, StepSpec, VERSION, WireLive, WireOutcome, WireSample,
};
use crate::engine::{self, Catalog, EngineError};

/// How long the workers get to stop after the coordinator went away before the process exits.
pub const EXIT_GRACE: Duration = Duration::from_secs(5);

/// How often an agent says it is alive.
pub const BEAT: Duration = Duration::from_secs(1);

/// What the reader hands to the step loop.
enum Inbound {
    Msg(CoordMsg),
    /// The stream ended or broke: the coordinator is gone.
    Closed,
}

/// Serves one coordinator on `input`/`output` until it closes the stream. Returns an error
/// only when the protocol itself broke (the coordinator sees it as a dead agent).
pub fn serve(
    input: impl BufRead + Send + 'static,
    output: impl Write + Send + 'static,
) -> Result<(), String> {
    let stop = Arc::new(AtomicBool::new(false));
    let (out_tx, out_rx) = mpsc::channel::<AgentMsg>();
    let writer = thread::Builder::new()
        .name("sbsuite-agent-writer".into())
        .spawn(move || write_loop(output, out_rx))
        .map_err(|e| e.to_string())?;
    let (in_tx, in_rx) = mpsc::channel::<Inbound>();
    // Set when `serve` returns: the reader's forced exit is then not needed.
    let finished = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        let finished = Arc::clone(&finished);
        thread::Builder::new()
            .name("sbsuite-agent-reader".into())
            .spawn(move || read_loop(input, in_tx, &stop, &finished))
            .map_err(|e| e.to_string())?;
    }
    let alive = Arc::new(AtomicBool::new(true));
    {
        let tx = out_tx.clone();
        let alive = Arc::clone(&alive);
        thread::Builder::new()
            .name("sbsuite-agent-beat".into())
            .spawn(move || {
                while alive.load(Ordering::Relaxed) {
                    thread::sleep(BEAT);
                    if tx.send(AgentMsg::Beat).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| e.to_string())?;
    }
    let _ = out_tx.send(AgentMsg::Hello {
        protocol: PROTOCOL,
        version: VERSION.into(),
        host: host_name(),
        cores: thread::available_parallelism().map_or(1, |n| n.get()),
    });
    let in_rx = Mutex::new(in_rx);
    loop {
        let next = in_rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
        match next {
            Ok(Inbound::Msg(CoordMsg::Ping { seq })) => {
                let _ = out_tx.send(AgentMsg::Pong { seq });
            }
            Ok(Inbound::Msg(CoordMsg::Step(spec))) => {
                stop.store(false, Ordering::SeqCst);
                let result = run_step(&spec, &out_tx, &in_rx, &stop);
                // Threads of the step that could not be stopped end with this process: the
                // agent runs no further step under them.
                let unstoppable = matches!(result, Err(EngineError::Unstoppable(_)));
                let msg = match result {
                    Ok(outcome) => match WireOutcome::from_outcome(&outcome) {
                        Ok(w) => AgentMsg::Outcome(Box::new(w)),
                        Err(e) => AgentMsg::Error {
                            message: e.to_string(),
                        },
                    },
                    Err(e) => AgentMsg::Error {
                        message: e.to_string(),
                    },
                };
                let _ = out_tx.send(msg);
                if unstoppable {
                    break;
                }
            }
            // `go` or `stop` outside a step: nothing to start or stop.
            Ok(Inbound::Msg(CoordMsg::Go | CoordMsg::Stop)) => {}
            Ok(Inbound::Closed) | Err(_) => break,
        }
    }
    alive.store(false, Ordering::Relaxed);
    drop(out_tx);
    let _ = writer.join();
    finished.store(true, Ordering::SeqCst);
    Ok(())
}

fn write_loop(mut output: impl Write, rx: Receiver<AgentMsg>) {
    for msg in rx {
        if protocol::send(&mut output, &msg).is_err() {
            // The coordinator is gone; the reader sees the end of stdin too.
            break;
        }
    }
}

fn read_loop(
    mut input: impl BufRead,
    tx: Sender<Inbound>,
    stop: &AtomicBool,
    finished: &AtomicBool,
) {
    loop {
        match protocol::recv::<CoordMsg>(&mut input) {
            Ok(Some(CoordMsg::Stop)) => {
                stop.store(true, Ordering::SeqCst);
                let _ = tx.send(Inbound::Msg(CoordMsg::Stop));
            }
            Ok(Some(msg)) => {
                if tx.send(Inbound::Msg(msg)).is_err() {
                    break;
                }
            }
            Ok(None) | Err(_) => break,
        }
    }
    // The coordinator is gone: stop the step, and make sure the process ends even if a
    // worker is stuck in a query or on a log nobody reads any more.
    stop.store(true, Ordering::SeqCst);
    let _ = tx.send(Inbound::Closed);
    thread::sleep(EXIT_GRACE);
    if finished.load(Ordering::SeqCst) {
        return;
    }
    log(format_args!(
        "the coordinator is gone and the workers did not stop: exiting"
    ));
    // SAFETY: `_exit` ends the process at once, running no atexit handler that could block
    // on a lock a stuck thread holds.
    unsafe { libc::_exit(3) }
}

/// A line on stderr (the coordinator's agent.log), never a panic: once the coordinator is
/// gone nobody reads it, and `eprintln!` would panic on the broken pipe.
fn log(args: std::fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr(), "[sbsuite agent] {args}");
}

/// stderr for the engine's sysbench text: a write that fails (the coordinator is gone) is
/// dropped, so the run stops through `stop`, not through a failed report.
struct LossyStderr;

impl Write for LossyStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = std::io::stderr().write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stderr().flush();
        Ok(())
    }
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

fn unix_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

/// Compiles the definition of workload `name` the coordinator sent (a suite's
/// `[workloads.NAME]`, which its coordinator compiled and checked already) and declares it in
/// `catalog`, the step's. A definition is SQL and expressions: nothing in it runs a command
/// here.
fn declare(catalog: &mut Catalog, name: &str, text: &str) -> Result<(), EngineError> {
    let failed = |why: String| {
        EngineError::Failed(format!(
            "the definition of workload `{name}` the coordinator sent does not compile here: {why}"
        ))
    };
    let table: toml::Table = toml::from_str(text).map_err(|e| failed(e.to_string()))?;
    let from = std::path::Path::new("<the coordinator's suite>");
    let loaded = crate::engine::custom::compile::load(from, text, &table)
        .map_err(|e| failed(e.to_string()))?;
    let declared = loaded.specs();
    if !declared.iter().any(|spec| spec.name == name) {
        return Err(failed("it does not declare it".into()));
    }
    declared.into_iter().for_each(|spec| catalog.declare(spec));
    Ok(())
}

/// Writes the Lua script the coordinator sent, with its modules, into a private temporary
/// directory (each file checked against its SHA-256 first), loads it as the coordinator did
/// (same name as typed in the suite, `run` as its command, its modules found in that
/// directory first) and declares it in `catalog` as workload `name`. The directory lives
/// as long as the returned guard: every worker's state `require`s the modules when it starts.
fn declare_script(
    catalog: &mut Catalog,
    name: &str,
    bundle: &crate::engine::lua::bundle::ScriptBundle,
) -> Result<tempfile::TempDir, EngineError> {
    let failed = |why: String| {
        EngineError::Failed(format!(
            "the Lua script of workload `{name}` the coordinator sent cannot run here: {why}"
        ))
    };
    let dir = tempfile::Builder::new()
        .prefix("sbsuite-agent-lua-")
        .tempdir()
        .map_err(|e| failed(format!("no temporary directory (set TMPDIR): {e}")))?;
    let files = bundle
        .materialize(dir.path())
        .map_err(|e| failed(e.to_string()))?;
    let script = crate::engine::lua::Script::load_with(
        &files.script,
        &bundle.typed,
        Some("run"),
        Some(&files.module_root),
    )
    .map_err(|e| failed(format!("it does not load: {}", e.message)))?;
    let spec = crate::engine::lua::run::spec_for(script);
    if spec.name != name {
        return Err(failed(format!("it loads as workload `{}`", spec.name)));
    }
    catalog.declare(spec);
    Ok(dir)
}

/// Runs one shard: ready at the gate, `go` opens it; intervals go out as they come.
fn run_step(
    spec: &StepSpec,
    out: &Sender<AgentMsg>,
    inbound: &Mutex<Receiver<Inbound>>,
    stop: &AtomicBool,
) -> Result<engine::StepOutcome, EngineError> {
    if !spec.cwd.is_empty() {
        std::env::set_current_dir(&spec.cwd)
            .map_err(|e| EngineError::Failed(format!("cannot work in `{}`: {e}", spec.cwd)))?;
    }
    let target = match &spec.target {
        Some(t) => Some(
            t.clone()
                .into_target(spec.password.clone(), spec.login_passwords.clone())
                .map_err(|e| EngineError::Failed(e.to_string()))?
                // Its workers are threads `thread_offset..` of the step: they start on the
                // host those threads would have in one process.
                .rotated(spec.shard.thread_offset),
        ),
        None => None,
    };
    // The workloads the step can name: the built-in ones and the definition sent with it.
    let mut catalog = Catalog::default();
    if let Some(text) = &spec.definition {
        declare(&mut catalog, &spec.workload, text)?;
    }
    // Kept until the step ends: the workers load the script's modules from there.
    let _script_dir = match &spec.script {
        Some(bundle) => Some(declare_script(&mut catalog, &spec.workload, bundle)?),
        None => None,
    };
    let workload = catalog
        .workload(&spec.workload)
        .ok_or_else(|| EngineError::NoEngine(spec.workload.clone()))?;
    log(format_args!(
        "step {}: shard {}/{} threads {}.. of {}",
        spec.workload,
        spec.shard.index + 1,
        spec.shard.count,
        spec.shard.thread_offset,
        spec.shard.total_threads
    ));
    let mut gate = || -> Result<(), EngineError> {
        let _ = out.send(AgentMsg::Ready);
        let rx = inbound.lock().unwrap_or_else(|e| e.into_inner());
        let waited = Instant::now();
        loop {
            match rx.recv() {
                Ok(Inbound::Msg(CoordMsg::Go)) => {
                    let _ = out.send(AgentMsg::Started {
                        clock_ms: unix_ms(),
                    });
                    log(format_args!(
                        "go after {:.1} ms at the gate",
                        waited.elapsed().as_secs_f64() * 1e3
                    ));
                    return Ok(());
                }
                Ok(Inbound::Msg(CoordMsg::Ping { seq })) => {
                    let _ = out.send(AgentMsg::Pong { seq });
                }
                Ok(Inbound::Msg(CoordMsg::Stop)) => {
                    return Err(EngineError::Failed("stopped before the start".into()));
                }
                Ok(Inbound::Msg(CoordMsg::Step(_))) => {
                    return Err(EngineError::Failed(
                        "a second step arrived before `go`".into(),
                    ));
                }
                Ok(Inbound::Closed) | Err(_) => {
                    return Err(EngineError::Failed("the coordinator is gone".into()));
                }
            }
        }
    };
    let mut observer = Forward {
        out,
        live_every: spec.live_every_ms.map(Duration::from_millis),
    };
    // The engine's sysbench text goes to stderr (the coordinator's agent.log): stdout is
    // the protocol's.
    let mut text = LossyStderr;
    let run = engine::RunRequest {
        shard: Some(spec.shard),
        gate: Some(&mut gate),
        ..Default::default()
    };
    let request = engine::StepRequest::new(workload, &spec.options, engine::StepKind::Run(run))
        .on(target.as_ref());
    engine::execute(request, &mut text, &mut observer, stop).map(engine::Executed::into_outcome)
}

/// Sends the step's interim reports, and its live samples when the coordinator asked for them,
/// to the coordinator.
struct Forward<'a> {
    out: &'a Sender<AgentMsg>,
    live_every: Option<Duration>,
}

impl engine::StepObserver for Forward<'_> {
    fn interval(&mut self, s: &engine::IntervalSample) {
        let _ = self
            .out
            .send(AgentMsg::Interval(Box::new(WireSample::from_sample(s))));
    }

    fn live_every(&self) -> Option<Duration> {
        self.live_every
    }

    fn live(&mut self, s: &engine::LiveSample<'_>) {
        let _ = self
            .out
            .send(AgentMsg::Live(Box::new(WireLive::from_live(s))));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Collects what the agent writes.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn session(input: &[CoordMsg]) -> Vec<AgentMsg> {
        let mut lines = Vec::new();
        for m in input {
            protocol::send(&mut lines, m).unwrap();
        }
        let sink = Sink::default();
        serve(std::io::Cursor::new(lines), sink.clone()).expect("serves");
        let out = sink.0.lock().unwrap().clone();
        let mut reader = out.as_slice();
        let mut msgs = Vec::new();
        while let Some(m) = protocol::recv::<AgentMsg>(&mut reader).unwrap() {
            msgs.push(m);
        }
        msgs
    }

    /// Hello first, a pong per ping, and the end of stdin ends the session.
    #[test]
    fn hello_pong_and_the_end_of_input_ends_it() {
        let msgs = session(&[CoordMsg::Ping { seq: 4 }, CoordMsg::Go]);
        assert!(
            matches!(&msgs[0], AgentMsg::Hello { version, protocol, .. }
                if version == VERSION && *protocol == PROTOCOL),
            "{msgs:?}"
        );
        assert!(msgs.contains(&AgentMsg::Pong { seq: 4 }), "{msgs:?}");
    }

    fn step(workload: &str) -> StepSpec {
        let mut options = crate::value::Options::default();
        options
            .0
            .insert("threads".into(), crate::value::Value::Int(1));
        StepSpec {
            workload: workload.into(),
            options,
            shard: crate::engine::Shard {
                index: 0,
                count: 1,
                total_threads: 1,
                thread_offset: 0,
            },
            target: None,
            password: None,
            login_passwords: Vec::new(),
            definition: None,
            script: None,
            cwd: String::new(),
            live_every_ms: None,
        }
    }

    /// A step the agent cannot run is an error message, not a crash, and nothing runs.
    #[test]
    fn a_step_it_cannot_run_is_an_error_message() {
        let msgs = session(&[CoordMsg::Step(Box::new(step("no_such_workload")))]);
        assert!(
            msgs.iter().any(|m| matches!(m, AgentMsg::Error { .. })),
            "{msgs:?}"
        );
        assert!(!msgs.contains(&AgentMsg::Ready), "{msgs:?}");
    }

    /// A Lua script whose module does not match the hash the coordinator sent is refused
    /// before anything loads (#27): the error names the module and the script, the agent
    /// never reports ready, and the untampered bundle loads and is declared under the step's
    /// workload name.
    #[test]
    fn a_tampered_lua_module_is_refused() {
        use crate::engine::lua::bundle::{BundleFile, ScriptBundle};
        let bundle = ScriptBundle {
            typed: "agent_tamper_check.lua".into(),
            script: BundleFile::new(
                "agent_tamper_check.lua",
                b"local m = require('lib.tamper_mod')\nfunction event() end\n",
            ),
            modules: vec![BundleFile::new("lib/tamper_mod.lua", b"return {}\n")],
        };
        let mut tampered = bundle.clone();
        tampered.modules[0] = BundleFile {
            sha256: bundle.modules[0].sha256.clone(),
            ..BundleFile::new("lib/tamper_mod.lua", b"os.exit(1)\n")
        };
        let spec = StepSpec {
            script: Some(tampered),
            ..step("agent_tamper_check.lua")
        };
        let msgs = session(&[CoordMsg::Step(Box::new(spec))]);
        let refused = msgs.iter().any(|m| {
            matches!(m, AgentMsg::Error { message } if message.contains(
                "module `lib/tamper_mod.lua` of script `agent_tamper_check.lua` does not match its sha256"
            ))
        });
        assert!(refused, "{msgs:?}");
        assert!(!msgs.contains(&AgentMsg::Ready), "{msgs:?}");
        let mut catalog = Catalog::default();
        let dir = declare_script(&mut catalog, "agent_tamper_check.lua", &bundle).expect("loads");
        assert!(dir.path().join("modules/lib/tamper_mod.lua").is_file());
        assert!(catalog.workload("agent_tamper_check.lua").is_some());
    }
}
