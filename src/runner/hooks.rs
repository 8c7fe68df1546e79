//! `[hooks]`: shell commands before and after the suite, each variant, each dataset and each
//! step.
//!
//! Each hook is a minijinja template rendered with what is known at its level (the suite and
//! run directory; then the variant; then the dataset; then the step's kind, name, workload,
//! repetition and every option and matrix value), run with `sh -c` under the hooks' timeout.
//! Everything it prints goes to `hooks.log` in the run directory with a header naming the hook,
//! the rendered command, its exit status and duration, so the run's record says what ran
//! around the measurements. The caller decides what a failure does (`on_error`). A hook runs
//! through [`super::shell`]: in its own process group, killed with it at the timeout or by a
//! stop request (then the failure says it was interrupted, and is not the hook's fault).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::shell::{self, Ended};

use crate::plan::Step;
use crate::suite::raw::{OnError, RawHooks};
use crate::value::Value;

/// A hook that failed, and what its policy says to do.
#[derive(Debug)]
pub struct HookFailure {
    pub policy: OnError,
    pub message: String,
    /// A stop request killed the hook: the run is stopping, the hook did not fail.
    pub interrupted: bool,
}

/// The suite's hooks with where they log.
pub struct Hooks {
    raw: RawHooks,
    suite: String,
    log: PathBuf,
    /// `--events`: each hook that ran is also an event.
    events: Option<std::sync::Arc<super::events::Events>>,
}

/// Template values of one hook call.
pub type Context = BTreeMap<String, minijinja::Value>;

fn to_jinja(v: &Value) -> minijinja::Value {
    match v {
        Value::Bool(b) => (*b).into(),
        Value::Int(i) => (*i).into(),
        Value::Float(f) => (*f).into(),
        Value::Str(s) => s.clone().into(),
        Value::List(l) => l.iter().map(to_jinja).collect::<Vec<_>>().into(),
    }
}

impl Hooks {
    pub fn new(raw: RawHooks, suite: &str, run_dir: &Path) -> Hooks {
        Hooks {
            raw,
            suite: suite.to_string(),
            log: run_dir.join("hooks.log"),
            events: None,
        }
    }

    /// Also reports every hook that ran to `events`.
    pub fn with_events(mut self, events: Option<std::sync::Arc<super::events::Events>>) -> Self {
        self.events = events;
        self
    }

    fn command(&self, key: &str) -> Option<&str> {
        match key {
            "before_suite" => self.raw.before_suite.as_deref(),
            "after_suite" => self.raw.after_suite.as_deref(),
            "before_variant" => self.raw.before_variant.as_deref(),
            "after_variant" => self.raw.after_variant.as_deref(),
            "before_dataset" => self.raw.before_dataset.as_deref(),
            "after_dataset" => self.raw.after_dataset.as_deref(),
            "before_step" => self.raw.before_step.as_deref(),
            "after_step" => self.raw.after_step.as_deref(),
            _ => None,
        }
    }

    /// The suite-level context: `suite` and `run_dir`.
    pub fn base(&self, run_dir: &Path) -> Context {
        let mut c = Context::new();
        c.insert("suite".into(), self.suite.clone().into());
        c.insert("run_dir".into(), run_dir.display().to_string().into());
        c
    }

    /// The context of `step`'s variant (`variant`), dataset (`dataset`) or the step itself
    /// (`step`, `kind`, `workload`, `repetition` and every option and matrix value by name).
    pub fn context(&self, run_dir: &Path, step: &Step, level: Level) -> Context {
        let mut c = self.base(run_dir);
        c.insert("variant".into(), step.variant.clone().into());
        if level == Level::Variant {
            return c;
        }
        c.insert("dataset".into(), step.dataset.into());
        if level == Level::Dataset {
            return c;
        }
        for (k, v) in step.options.0.iter().chain(step.params.iter()) {
            c.insert(k.clone(), to_jinja(v));
        }
        c.insert("step".into(), step.name.clone().into());
        c.insert("kind".into(), step.kind.as_str().into());
        c.insert("workload".into(), step.workload.clone().into());
        c.insert("repetition".into(), step.repetition.into());
        c.insert("index".into(), step.index.into());
        c
    }

    /// Runs hook `key` when it is set. `Err` carries the hook's policy.
    pub fn run(&self, key: &str, ctx: &Context) -> Result<(), HookFailure> {
        let Some(template) = self.command(key) else {
            return Ok(());
        };
        let fail = |message: String| HookFailure {
            policy: self.raw.on_error,
            message: format!("{key} hook failed: {message}"),
            interrupted: false,
        };
        let mut env = minijinja::Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        let command = env
            .render_str(template, ctx)
            .map_err(|e| fail(format!("its template cannot be rendered here: {e}")))?;
        let started = Instant::now();
        let timeout_s = self.raw.timeout.max(1);
        let result = shell::run(&command, Duration::from_secs(timeout_s));
        let status = match &result {
            Ok((Ended::Exited(s), _)) => {
                format!("{s}{}", if s.success() { "" } else { " (failed)" })
            }
            Ok((Ended::TimedOut, _)) => {
                format!("killed after {timeout_s} s (hooks.timeout) (failed)")
            }
            Ok((Ended::Interrupted, _)) => "killed by a stop request (interrupted)".into(),
            Err(e) => e.clone(),
        };
        let output = result.as_ref().map(|r| r.1.as_slice()).unwrap_or_default();
        self.log(key, &command, &status, started.elapsed(), output);
        if let Some(events) = &self.events {
            events.emit(super::events::Body::Hook {
                hook: key.to_string(),
                command: command.clone(),
                ok: matches!(&result, Ok((Ended::Exited(s), _)) if s.success()),
                status: status.clone(),
                seconds: started.elapsed().as_secs_f64(),
            });
        }
        match result {
            Ok((Ended::Exited(s), _)) if s.success() => Ok(()),
            Ok((Ended::TimedOut, _)) => Err(fail(format!(
                "`{command}` did not finish within {timeout_s} s (hooks.timeout) and was killed"
            ))),
            Ok((Ended::Interrupted, _)) => Err(HookFailure {
                policy: self.raw.on_error,
                message: format!("{key} hook `{command}` was killed by a stop request"),
                interrupted: true,
            }),
            Ok((Ended::Exited(status), output)) => {
                let tail = String::from_utf8_lossy(&output);
                let tail = tail.trim();
                let tail: String = tail
                    .chars()
                    .rev()
                    .take(300)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                Err(fail(format!(
                    "`{command}` exited with {status}{}{tail} (full output in {})",
                    if tail.is_empty() { "" } else { ": " },
                    self.log.display()
                )))
            }
            Err(e) => Err(fail(e)),
        }
    }

    fn log(&self, key: &str, command: &str, status: &str, took: Duration, output: &[u8]) {
        append_log(&self.log, key, command, status, took, output);
    }

    /// Where hooks (and faults' commands) log: `hooks.log` in the run directory.
    pub fn log_path(&self) -> &Path {
        &self.log
    }
}

/// Appends one command's record to `log` (`hooks.log`): a header naming `key` and the command
/// as run, its output, and how it ended after how long. A write error is a warning: the
/// command ran either way.
pub fn append_log(
    log: &Path,
    key: &str,
    command: &str,
    status: &str,
    took: Duration,
    output: &[u8],
) {
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)?;
        writeln!(
            f,
            "=== {} {key}: {command}",
            chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ")
        )?;
        f.write_all(output)?;
        if !output.is_empty() && !output.ends_with(b"\n") {
            writeln!(f)?;
        }
        writeln!(f, "=== {key}: {status} after {:.3} s", took.as_secs_f64())?;
        f.flush()
    };
    if let Err(e) = write() {
        eprintln!("[sbsuite] warning: cannot write {}: {e}", log.display());
    }
}

/// Which context a hook gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Variant,
    Dataset,
    Step,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hooks(dir: &Path, before_step: &str, policy: OnError, timeout: u64) -> Hooks {
        Hooks::new(
            RawHooks {
                timeout,
                on_error: policy,
                before_step: Some(before_step.into()),
                ..Default::default()
            },
            "s",
            dir,
        )
    }

    #[test]
    fn a_hook_renders_runs_and_logs_its_output() {
        let dir = tempfile::tempdir().unwrap();
        let h = hooks(
            dir.path(),
            "echo hello {{ suite }} {{ n }}",
            OnError::Stop,
            5,
        );
        let mut ctx = h.base(dir.path());
        ctx.insert("n".into(), 3.into());
        h.run("before_step", &ctx).unwrap();
        h.run("after_step", &ctx).unwrap(); // unset: nothing to do
        let log = std::fs::read_to_string(dir.path().join("hooks.log")).unwrap();
        assert!(
            log.contains("before_step: echo hello s 3\nhello s 3\n"),
            "{log}"
        );
        assert!(
            log.contains("=== before_step: exit status: 0 after"),
            "{log}"
        );
    }

    #[test]
    fn failures_carry_the_policy_and_the_output() {
        let dir = tempfile::tempdir().unwrap();
        let h = hooks(dir.path(), "echo oops >&2; exit 4", OnError::Skip, 5);
        let e = h.run("before_step", &h.base(dir.path())).unwrap_err();
        assert_eq!(e.policy, OnError::Skip);
        assert!(
            e.message.contains("exited with exit status: 4: oops"),
            "{}",
            e.message
        );
        let h = hooks(dir.path(), "sleep 3", OnError::Continue, 1);
        let e = h.run("before_step", &h.base(dir.path())).unwrap_err();
        assert!(
            e.message.contains("did not finish within 1 s"),
            "{}",
            e.message
        );
        let h = hooks(dir.path(), "echo {{ threads }}", OnError::Stop, 1);
        let e = h.run("before_step", &h.base(dir.path())).unwrap_err();
        assert!(e.message.contains("cannot be rendered"), "{}", e.message);
    }
}
