//! Expansion of a validated suite into an ordered plan of prepare / run / cleanup steps.
//!
//! Order: variant → dataset (the options that shape data) → prepare → every run of that
//! dataset (matrix order, the whole sweep once per repetition) → check (custom workloads with
//! `check = true`: their `[[checks]]` queries on the data the runs left) → cleanup. With
//! `variant_order = "interleaved"` or `"randomized"` the variants move inside the dataset:
//! each run (matrix point and repetition) becomes a block of one run per variant. A dataset is prepared
//! once for all runs that share it; a workload that changes its data gets a fresh prepare per run.
//! A sysbench Lua script's `before_runs` commands follow its prepare and its `after_runs`
//! precede the check and cleanup (one step per command, [`StepKind::Command`]).

use serde::Serialize;

use crate::engine::spec::WorkloadSpec;
use crate::value::{Options, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StepKind {
    Prepare,
    Run,
    /// A custom workload's `[[checks]]` after a dataset's runs, before its cleanup.
    Check,
    Cleanup,
    /// A custom command of a sysbench Lua script (`sysbench.cmdline.commands`, named by
    /// [`Step::command`]): the script's `before_runs` after the prepare, its `after_runs`
    /// before the cleanup. Journaled and resumed like a check.
    Command,
}

impl StepKind {
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Prepare => "prepare",
            StepKind::Run => "run",
            StepKind::Check => "check",
            StepKind::Cleanup => "cleanup",
            StepKind::Command => "command",
        }
    }
}

/// One step of a plan.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    /// 1-based position in the plan.
    pub index: usize,
    pub kind: StepKind,
    /// Rendered from the suite's `step_name` template (runs) or derived (prepare/check/cleanup).
    pub name: String,
    pub variant: String,
    /// The workload's name (the results' `workload` column, and what a stored plan holds).
    pub workload: String,
    /// The workload itself, resolved through the suite's catalog when the plan was built, so
    /// that nothing after the planner looks its name up again. Never serialised (the name
    /// stands for it); `None` only in plans built from imported sysbench logs of workloads
    /// this build does not know, which are never run.
    #[serde(skip)]
    pub spec: Option<&'static WorkloadSpec>,
    /// 1-based id of the dataset this step prepares, uses or cleans up (0: none).
    pub dataset: usize,
    /// 1-based repetition for run steps, 0 for prepare/check/cleanup.
    pub repetition: u32,
    /// The matrix cell: the value of every matrix axis for this step, in axis order.
    pub params: indexmap::IndexMap<String, Value>,
    /// Every option of the workload, resolved through all layers and normalised.
    pub options: Options,
    /// The script's command a [`StepKind::Command`] step runs (left out of other steps' JSON,
    /// so plans stored before it existed still match on `--resume`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Expected duration in seconds, when it can be known in advance.
    pub estimated_seconds: Option<f64>,
    /// A run step's timeline (`[[phases]]`, #30), resolved against its options (left out of
    /// the JSON when empty, so plans stored before it existed still match on `--resume`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<crate::engine::phases::Phase>,
    /// A run step's worker groups (`[[groups]]`, #31), each resolved against its own
    /// workload; empty: one workload, the step's (left out of the JSON when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<StepGroup>,
    /// The database connection, for workloads that need one (from the suite's `[target]`).
    /// Never serialised: it holds the password template.
    #[serde(skip)]
    pub target: Option<crate::db::Target>,
}

/// One worker group of a run step (#31): a workload with its own options (its `threads` and
/// `rate` among them), run beside the step's other groups.
#[derive(Clone, Debug, Serialize)]
pub struct StepGroup {
    /// Its name (results.csv's and intervals.csv's `group`).
    pub name: String,
    /// Its workload's name.
    pub workload: String,
    /// The workload itself (never serialised, as [`Step::spec`]).
    #[serde(skip)]
    pub spec: Option<&'static WorkloadSpec>,
    /// Every option of its workload, resolved: the group's own over the step's.
    pub options: Options,
}

impl StepGroup {
    /// Its worker threads.
    pub fn threads(&self) -> u64 {
        self.options.uint("threads")
    }
}

/// The workloads of `groups`, each once, joined by `+` (`tpcc+ch_analytic`): the `workload`
/// of a step with groups in results.csv and `plan`.
pub fn groups_workload(groups: &[StepGroup]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for g in groups {
        if !names.contains(&g.workload.as_str()) {
            names.push(&g.workload);
        }
    }
    names.join("+")
}

/// The groups of `step` in one line, as `plan` and `validate` show them:
/// `oltp: tpcc 4 thr | olap: ch_analytic 1 thr 2/s`.
pub fn groups_text(groups: &[StepGroup]) -> String {
    groups
        .iter()
        .map(|g| {
            let rate = g.options.uint("rate");
            format!(
                "{}: {} {} thr{}",
                g.name,
                g.workload,
                g.threads(),
                if rate > 0 {
                    format!(" {rate}/s")
                } else {
                    String::new()
                }
            )
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// A whole plan: the steps and the matrix axes (which become result columns).
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub suite: String,
    /// Matrix axis names in order (`workload` and `threads` included when they are axes).
    pub axes: Vec<String>,
    pub steps: Vec<Step>,
    /// The database the steps use, described for people (no password), when a step needs
    /// one; says so when it is the default SQLite file of a suite without `[target]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// `[suite] variant_order` (left out of the JSON when `blocked`, the order of every plan
    /// before it existed, so their stored plans still match on `--resume`).
    #[serde(skip_serializing_if = "is_blocked")]
    pub variant_order: crate::suite::raw::VariantOrder,
    /// The seed of a `randomized` order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_seed: Option<u64>,
    /// `[suite] dataset` (left out of the JSON when `prepare`, as `variant_order`): with
    /// `existing` the plan has no prepare and no cleanup steps, and its datasets are the data
    /// already in place.
    #[serde(skip_serializing_if = "crate::suite::raw::DatasetSource::is_default")]
    pub dataset: crate::suite::raw::DatasetSource,
}

fn is_blocked(order: &crate::suite::raw::VariantOrder) -> bool {
    *order == crate::suite::raw::VariantOrder::Blocked
}

/// The `stop_when` sweep a run belongs to along `axis`: the runs that share the variant, the
/// repetition and every other matrix value (`None` when the run has no such axis value). One
/// function for the runner, which stops sweeps, and for `sbsuite runs`, which must tell a run
/// skipped by a stopped sweep from one that never ran.
pub fn sweep_key(
    variant: &str,
    repetition: u32,
    params: &indexmap::IndexMap<String, Value>,
    axis: &str,
) -> Option<String> {
    params.get(axis)?;
    let mut k = format!("{variant}|{repetition}");
    for (name, v) in params {
        if name != axis {
            k.push_str(&format!("|{name}={v}"));
        }
    }
    Some(k)
}

mod expand;
mod render;

pub use expand::{build, cells, suite_forced_shutdown};
pub use render::{format_duration, render_json, render_text, total_estimate};

#[cfg(test)]
mod tests;
