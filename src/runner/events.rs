//! `--events jsonl[:PATH]`: the run as machine-readable events, one JSON object per line.
//!
//! Why it is shaped this way:
//! - **A contract, versioned**: every object has `"schema": 1`, `"event"` (its kind) and
//!   `"time"` (RFC 3339, UTC). The types below are the only definition of the shapes: the JSON
//!   Schema (`sbsuite schema events`, committed as `schemas/events.schema.json`, kept equal by
//!   a test) is generated from them, so the documentation cannot drift from the output. A
//!   change that breaks a consumer raises [`SCHEMA_VERSION`].
//! - **Written where things happen, by the thread they happen on**: the step loop (steps,
//!   variants, warnings), the hooks, and the driver's collector (interval samples, which run on
//!   the step loop's thread as well). A mutex around the writer keeps lines whole; each line
//!   is flushed as written, so a CI job tailing a file sees events as they come.
//! - **stdout stays pure**: with `jsonl` on stdout the sysbench-shaped reports go to stderr
//!   (the command decides that), so `sbsuite run --events jsonl | jq` always parses.
//! - A write error (a closed pipe) stops the events, never the benchmark.

use std::io::Write;
use std::sync::Mutex;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::Serialize;

use crate::engine::IntervalSample;
use crate::plan::{Plan, Step};
use crate::value::Value;

/// The version of the event shapes, in every object's `schema`.
pub const SCHEMA_VERSION: u32 = 1;

/// One line of `--events jsonl`.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "sbsuite run --events jsonl: one object per line")]
pub struct Event {
    /// The version of these shapes; a change that breaks a consumer raises it.
    #[schemars(extend("const" = 1))]
    pub schema: u32,
    /// When the event happened, RFC 3339 in UTC with milliseconds.
    #[schemars(extend("format" = "date-time"))]
    pub time: String,
    #[serde(flatten)]
    pub body: Body,
}

/// What happened; `event` names the kind.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Body {
    /// The run starts (after the suite was loaded and checked, before `before_suite`).
    SuiteStart {
        suite: String,
        run_id: String,
        /// The run directory.
        run_dir: String,
        /// Steps in the plan (prepare, run, check, command, cleanup).
        steps_total: usize,
        /// Run steps in the plan.
        runs_total: usize,
        /// Matrix axes in order, each with its values in plan order.
        #[schemars(with = "IndexMap<String, Vec<serde_json::Value>>")]
        matrix: IndexMap<String, Vec<Value>>,
        /// Variant names in plan order.
        variants: Vec<String>,
        /// `--resume`: a stopped run continues.
        resumed: bool,
    },
    /// A step begins executing (steps that are skipped or kept have only a `step_end`).
    StepStart {
        #[serde(flatten)]
        step: StepRef,
    },
    /// A step is over, however it ended: every step of the plan gets exactly one.
    StepEnd {
        #[serde(flatten)]
        step: StepRef,
        /// `done`, `failed`, `interrupted`, `skipped` (not executed: a stop request, a failed
        /// prepare or hook, a `stop_when` knee) or `kept` (finished before a `--resume`).
        status: StepStatus,
        /// Wall-clock seconds from `step_start`; absent for steps that did not start.
        #[serde(skip_serializing_if = "Option::is_none")]
        seconds: Option<f64>,
        /// The row this step wrote to results.csv (run steps): column name → cell, the text
        /// exactly as in the file (empty cells are empty strings).
        #[serde(skip_serializing_if = "Option::is_none")]
        row: Option<IndexMap<String, String>>,
    },
    /// An interim report of a run step (`report_interval`), as stored in intervals.csv.
    Interval {
        /// The step's number in the plan.
        step: usize,
        /// Seconds since the run step started (the `[ Ns ]` stamp).
        time_s: f64,
        threads: usize,
        eps: f64,
        #[serde(skip_serializing_if = "Option::is_none")]
        tps: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        qps: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reads_ps: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        writes_ps: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        other_ps: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        errors_ps: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reconnects_ps: Option<f64>,
        /// Latency at the step's `percentile` over the interval, in ms.
        lat_pct_ms: f64,
        /// Workload-specific measurements (memory's `mib_per_s`, a rate run's `queue_length`…).
        metrics: IndexMap<String, f64>,
        /// A step with `[[groups]]` (#31): the group whose interval this is; absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group: Option<String>,
    },
    /// A variant's server settings were applied (every variant, also one without settings),
    /// before the first step of each stretch of its steps.
    VariantApplied {
        variant: String,
        /// Why it could not be applied (its steps then do not run); absent when it was.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A variant's settings were put back after its last step.
    VariantRestored {
        variant: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A `[hooks]` command ran.
    Hook {
        /// The hook: `before_suite`, `before_step`, `after_dataset`, …
        hook: String,
        /// The command as run (rendered).
        command: String,
        /// Whether it exited 0.
        ok: bool,
        /// How it ended: its exit status, a timeout or a stop request.
        status: String,
        seconds: f64,
    },
    /// A warning or error line of the runner (also printed on stderr): a failed step, a hook
    /// failure and what `on_error` does about it, a variant that was not applied.
    Warning { message: String },
    /// The run is over: the counts of its summary and the process's exit status.
    SuiteEnd {
        run_id: String,
        steps_ok: usize,
        steps_failed: usize,
        steps_interrupted: usize,
        steps_skipped: usize,
        steps_kept: usize,
        /// A stop request (Ctrl-C, SIGTERM) ended the run.
        interrupted: bool,
        /// The exit status `sbsuite run` returns: 0, 1 (a step failed) or 130 (interrupted).
        exit_status: i32,
        /// Why the run could not go on (results could not be written), when it could not.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

/// How a step ended, in `step_end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Done,
    Failed,
    Interrupted,
    Skipped,
    Kept,
}

impl StepStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Done => "done",
            StepStatus::Failed => "failed",
            StepStatus::Interrupted => "interrupted",
            StepStatus::Skipped => "skipped",
            StepStatus::Kept => "kept",
        }
    }
}

/// Which step an event is about.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StepRef {
    /// The step's number in the plan (1-based, as in `sbsuite plan` and results.csv).
    pub step: usize,
    /// `prepare`, `run`, `check`, `command` or `cleanup`.
    pub kind: String,
    pub name: String,
    pub variant: String,
    pub workload: String,
    pub dataset: usize,
    /// 1-based for run steps, 0 for the others.
    pub repetition: u32,
    /// The step's matrix cell: every axis and its value.
    #[schemars(with = "IndexMap<String, serde_json::Value>")]
    pub params: IndexMap<String, Value>,
}

impl StepRef {
    pub fn of(step: &Step) -> StepRef {
        StepRef {
            step: step.index,
            kind: step.kind.as_str().to_string(),
            name: step.name.clone(),
            variant: step.variant.clone(),
            workload: step.workload.clone(),
            dataset: step.dataset,
            repetition: step.repetition,
            params: step.params.clone(),
        }
    }
}

/// Where `--events` goes: stdout or a file.
pub struct Events {
    out: Mutex<Option<Box<dyn Write + Send>>>,
    /// `suite_start` was written: a `suite_end` is owed.
    started: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Events")
    }
}

impl Events {
    pub fn new(out: Box<dyn Write + Send>) -> Events {
        Events {
            out: Mutex::new(Some(out)),
            started: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Writes one event as a line. After a write error (a closed pipe) nothing more is
    /// written.
    pub fn emit(&self, body: Body) {
        let event = Event {
            schema: SCHEMA_VERSION,
            time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            body,
        };
        let Ok(mut line) = serde_json::to_string(&event) else {
            return;
        };
        line.push('\n');
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(w) = out.as_mut()
            && w.write_all(line.as_bytes())
                .and_then(|_| w.flush())
                .is_err()
        {
            *out = None;
        }
    }

    /// Whether `suite_start` was written (a run that was refused before it starts has
    /// neither a start nor an end).
    pub fn started(&self) -> bool {
        self.started.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn suite_start(&self, plan: &Plan, run_id: &str, run_dir: &str, resumed: bool) {
        self.started
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let mut matrix: IndexMap<String, Vec<Value>> =
            plan.axes.iter().map(|a| (a.clone(), Vec::new())).collect();
        let mut variants: Vec<String> = Vec::new();
        for s in &plan.steps {
            for (axis, values) in matrix.iter_mut() {
                if let Some(v) = s.params.get(axis)
                    && !values.contains(v)
                {
                    values.push(v.clone());
                }
            }
            if !variants.contains(&s.variant) {
                variants.push(s.variant.clone());
            }
        }
        self.emit(Body::SuiteStart {
            suite: plan.suite.clone(),
            run_id: run_id.to_string(),
            run_dir: run_dir.to_string(),
            steps_total: plan.steps.len(),
            runs_total: plan
                .steps
                .iter()
                .filter(|s| s.kind == crate::plan::StepKind::Run)
                .count(),
            matrix,
            variants,
            resumed,
        });
    }

    pub fn interval(&self, step: &Step, s: &IntervalSample) {
        self.emit(Body::Interval {
            step: step.index,
            time_s: s.time_s,
            threads: s.threads,
            eps: s.eps,
            tps: s.tps,
            qps: s.qps,
            reads_ps: s.reads_ps,
            writes_ps: s.writes_ps,
            other_ps: s.other_ps,
            errors_ps: s.errors_ps,
            reconnects_ps: s.reconnects_ps,
            lat_pct_ms: s.lat_pct_ms,
            metrics: s.metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            group: s
                .group
                .and_then(|i| step.groups.get(i))
                .map(|g| g.name.clone()),
        });
    }
}

/// The JSON Schema of one event line (draft-07, as the suite schema), pretty-printed with a
/// trailing newline: what `sbsuite schema events` prints and `schemas/events.schema.json` holds.
pub fn json_schema() -> String {
    let generator = schemars::generate::SchemaSettings::draft07().into_generator();
    let schema = generator.into_root_schema_for::<Event>();
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}
