//! Run steps with worker groups (`[[groups]]`, #31): several workloads side by side, each
//! group one engine run of its own workload, options, threads and rate, started together and
//! merged into the step's outcome.
//!
//! Shape, and why:
//!
//! * Each group is a whole [`engine::execute`] on a thread of its own, so each keeps the
//!   driver as it is: its own workers, counters, histograms and collector. Nothing is shared
//!   on the hot path; the groups meet only at the start line and at the end.
//! * The start line is the engine's run gate (called once every worker of a run has connected
//!   and prepared its statements): each group's clock starts when every group is ready, as the
//!   clients of a multi-client step start at the coordinator's barrier. A group that ends
//!   before it (a failed connect, a stop) releases the others with an error rather than leave
//!   them waiting.
//! * The step's outcome is the groups' exact merge ([`crate::clients::merge::merge_outcomes`]:
//!   counts summed, HDR histograms added), with each group's own outcome kept for its row.
//! * What the groups print and report travels over one channel to this thread, which owns the
//!   step's output and observer: each line prefixed with `[group] `, each interval tagged with
//!   its group (intervals.csv's `group`). A stop request, or a group that failed, stops every
//!   group.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use crate::engine::{self, EngineError, GroupOutcome, IntervalSample, StepObserver, StepOutcome};
use crate::plan::Step;

/// What a group's thread tells the step's thread.
enum Msg {
    /// One line of its text (newline included).
    Line(usize, Vec<u8>),
    /// One interim report, tagged with its group.
    Interval(Box<IntervalSample>),
    /// Its measured part begins.
    Measuring,
}

/// Where every group waits until all are ready (or one gave up).
struct StartLine {
    groups: usize,
    /// (groups ready, a group ended before the start)
    state: Mutex<(usize, bool)>,
    cv: Condvar,
}

/// The error of a group released from the start line because another one ended first.
const RELEASED: &str = "another group of the step ended before the start";

impl StartLine {
    fn new(groups: usize) -> Self {
        StartLine {
            groups,
            state: Mutex::new((0, false)),
            cv: Condvar::new(),
        }
    }

    /// This group is ready: returns when every group is (or with an error when one ended).
    fn ready(&self) -> Result<(), EngineError> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.0 += 1;
        self.cv.notify_all();
        while s.0 < self.groups && !s.1 {
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        if s.0 < self.groups {
            return Err(EngineError::Failed(RELEASED.into()));
        }
        Ok(())
    }

    /// A group has ended: once every group has started this changes nothing; before, it
    /// releases those waiting.
    fn ended(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.1 = true;
        self.cv.notify_all();
    }
}

/// A group's text, sent a whole line at a time.
struct Lines {
    group: usize,
    tx: mpsc::Sender<Msg>,
    buf: Vec<u8>,
}

impl Write for Lines {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        while let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=end).collect();
            let _ = self.tx.send(Msg::Line(self.group, line));
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        if !self.buf.is_empty() {
            let mut line = std::mem::take(&mut self.buf);
            line.push(b'\n');
            let _ = self.tx.send(Msg::Line(self.group, line));
        }
    }
}

/// A group's observer: its samples, tagged, to the step's thread (on its collector thread,
/// once per interval: never on a worker's hot path).
struct Forward {
    group: usize,
    tx: mpsc::Sender<Msg>,
}

impl StepObserver for Forward {
    fn interval(&mut self, sample: &IntervalSample) {
        let mut s = sample.clone();
        s.group = Some(self.group);
        let _ = self.tx.send(Msg::Interval(Box::new(s)));
    }

    fn measuring(&mut self) {
        let _ = self.tx.send(Msg::Measuring);
    }
}

/// Runs run step `step`'s groups side by side; see the module comment.
pub fn run(
    step: &Step,
    out: &mut dyn Write,
    observer: &mut dyn StepObserver,
    stop: &AtomicBool,
) -> Result<StepOutcome, EngineError> {
    let n = step.groups.len();
    let start = StartLine::new(n);
    let halt = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<Msg>();
    let results: Vec<Result<StepOutcome, EngineError>> = std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(n);
        for (i, g) in step.groups.iter().enumerate() {
            let (tx, start, halt) = (tx.clone(), &start, &halt);
            let target = step.target.as_ref();
            let spawned = std::thread::Builder::new()
                .name(format!("group-{}", g.name))
                .spawn_scoped(scope, move || {
                    let result = (|| {
                        let spec = g
                            .spec
                            .ok_or_else(|| EngineError::NoEngine(g.workload.clone()))?;
                        let mut gate = || start.ready();
                        let run = engine::RunRequest {
                            gate: Some(&mut gate),
                            ..Default::default()
                        };
                        let request =
                            engine::StepRequest::new(spec, &g.options, engine::StepKind::Run(run))
                                .on(target);
                        let mut lines = Lines {
                            group: i,
                            tx: tx.clone(),
                            buf: Vec::new(),
                        };
                        let mut forward = Forward { group: i, tx };
                        engine::execute(request, &mut lines, &mut forward, halt)
                            .map(engine::Executed::into_outcome)
                    })();
                    start.ended();
                    if result.is_err() {
                        halt.store(true, Ordering::SeqCst);
                    }
                    result
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    start.ended();
                    halt.store(true, Ordering::SeqCst);
                    return vec![Err(EngineError::io(
                        format!("starting the thread of group `{}` failed", g.name),
                        e,
                    ))];
                }
            }
        }
        drop(tx);
        let mut measuring = false;
        loop {
            if stop.load(Ordering::Relaxed) {
                halt.store(true, Ordering::SeqCst);
            }
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(Msg::Line(i, line)) => {
                    let _ = write!(out, "[{}] ", step.groups[i].name);
                    let _ = out.write_all(&line);
                }
                Ok(Msg::Interval(s)) => observer.interval(&s),
                Ok(Msg::Measuring) => {
                    // The groups share the step's warmup: the first one's start is the step's.
                    if !measuring {
                        measuring = true;
                        observer.measuring();
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(EngineError::Failed("a group's thread panicked".into()))
                })
            })
            .collect()
    });
    let _ = out.flush();
    // The error that ended the step: a group's own before those it released.
    let mut outcomes = Vec::with_capacity(n);
    let mut released = None;
    for (i, r) in results.into_iter().enumerate() {
        match r {
            Ok(o) => outcomes.push(o),
            Err(EngineError::Failed(m)) if m == RELEASED => {
                released.get_or_insert(EngineError::Failed(m));
            }
            Err(e) => return Err(named(step, i, e)),
        }
    }
    if let Some(e) = released {
        return Err(e);
    }
    let mut merged = crate::clients::merge::merge_outcomes(&outcomes)
        .map_err(|e| EngineError::Failed(format!("merging the groups' results failed: {e}")))?;
    merged.groups = outcomes
        .into_iter()
        .enumerate()
        .map(|(index, outcome)| GroupOutcome { index, outcome })
        .collect();
    Ok(merged)
}

/// Group `i`'s error, its message naming the group where the error is a message.
fn named(step: &Step, i: usize, e: EngineError) -> EngineError {
    let name = step.groups.get(i).map_or("?", |g| g.name.as_str());
    match e {
        EngineError::Failed(m) => EngineError::Failed(format!("group `{name}`: {m}")),
        other => other,
    }
}
