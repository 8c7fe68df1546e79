//! `sbsuite plan` output: a numbered text listing for people and JSON for scripts.

use std::collections::HashMap;
use std::fmt::Write;

use serde::Serialize;

use super::{Plan, Step, StepKind};
use crate::suite::raw::{DatasetSource, VariantOrder};
use crate::value::Value;

/// Formats seconds as `1h02m03s`, `2m05s` or `45s`.
pub fn format_duration(seconds: f64) -> String {
    let s = seconds.round() as u64;
    let (h, m, sec) = (s / 3600, (s % 3600) / 60, s % 60);
    if h > 0 {
        format!("{h}h{m:02}m{sec:02}s")
    } else if m > 0 {
        format!("{m}m{sec:02}s")
    } else {
        format!("{sec}s")
    }
}

/// Total estimate and whether some steps have no estimate (events-limited runs, prepares).
pub fn total_estimate(plan: &Plan) -> (f64, usize) {
    let known: f64 = plan.steps.iter().filter_map(|s| s.estimated_seconds).sum();
    let unknown = plan
        .steps
        .iter()
        .filter(|s| s.estimated_seconds.is_none())
        .count();
    (known, unknown)
}

fn count(plan: &Plan, kind: StepKind) -> usize {
    plan.steps.iter().filter(|s| s.kind == kind).count()
}

pub fn render_text(plan: &Plan, file: &str) -> String {
    let mut out = String::new();
    let (known, unknown) = total_estimate(plan);
    let unknown_note = if unknown > 0 {
        format!(" + {unknown} step(s) of unknown length")
    } else {
        String::new()
    };
    // Checks are counted only in plans that have some: every other plan reads as before.
    let checks = match count(plan, StepKind::Check) {
        0 => String::new(),
        n => format!(", {n} check"),
    };
    let checks = match count(plan, StepKind::Command) {
        0 => checks,
        n => format!("{checks}, {n} command"),
    };
    let _ = writeln!(
        out,
        "Suite `{}` ({file}): {} steps ({} prepare, {} run{checks}, {} cleanup), estimated {}{unknown_note}",
        plan.suite,
        plan.steps.len(),
        count(plan, StepKind::Prepare),
        count(plan, StepKind::Run),
        count(plan, StepKind::Cleanup),
        format_duration(known),
    );
    if let Some(t) = &plan.target {
        let _ = writeln!(out, "Target: {t}");
    }
    if plan.dataset == DatasetSource::Existing {
        let _ = writeln!(
            out,
            "Dataset: existing (the tables are already there: no prepare, no cleanup; `run` checks them before anything runs)"
        );
    }
    match (plan.variant_order, plan.order_seed) {
        (VariantOrder::Blocked, _) => {}
        (VariantOrder::Randomized, Some(seed)) => {
            let _ = writeln!(
                out,
                "Variant order: randomized, seed {seed} (order_seed = {seed} in [suite] repeats this order): the variants of each matrix point and repetition run back to back on one dataset"
            );
        }
        (order, _) => {
            let _ = writeln!(
                out,
                "Variant order: {}: the variants of each matrix point and repetition run back to back on one dataset, alternating A B / B A",
                order.as_str()
            );
        }
    }
    let mut specs = SpecLookups::default();
    let width = plan.steps.len().to_string().len();
    let name_width = plan.steps.iter().map(|s| s.name.len()).max().unwrap_or(0);
    for s in &plan.steps {
        let est = s
            .estimated_seconds
            .map_or_else(|| "?".to_string(), format_duration);
        let rep = if s.kind == StepKind::Run {
            format!("  rep {}", s.repetition)
        } else {
            String::new()
        };
        let ds = if s.dataset > 0 {
            format!("  dataset {}", s.dataset)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "{:>width$}. {:<7} {:<name_width$}  variant {}{ds}{rep}  ~{est}",
            s.index,
            s.kind.as_str(),
            s.name,
            s.variant
        );
        let workload = match s.groups.as_slice() {
            [] => s.workload.clone(),
            groups => super::groups_workload(groups),
        };
        let mut opts = vec![format!("workload={workload}")];
        for (k, v) in &s.options.0 {
            // The phases set the time: the option's value would mislead.
            let by_phases = !s.phases.is_empty() && (k == "time" || k == "warmup_time");
            if specs.shown(s, k, v) && !by_phases {
                opts.push(format!("{k}={}", specs.display(s, k, v)));
            }
        }
        let _ = writeln!(out, "{:>width$}  {}", "", opts.join(" "));
        if !s.phases.is_empty() {
            let timeline = crate::engine::phases::timeline_text(&s.phases);
            let _ = writeln!(out, "{:>width$}  phases: {timeline}", "");
        }
        if !s.groups.is_empty() {
            let groups = super::groups_text(&s.groups);
            let _ = writeln!(out, "{:>width$}  groups: {groups}", "");
        }
    }
    let _ = writeln!(
        out,
        "(options at their sysbench default are not shown; --format json lists every option)"
    );
    out
}

/// The workload-spec facts the listing needs, looked up once per workload and option name
/// rather than once per step: a plan of 100,000 steps repeats the same few, and making a
/// spec default parses its text.
#[derive(Default)]
struct SpecLookups<'a> {
    /// Per workload and option name: the workload's option of that name (the step's spec's;
    /// a step without one, of an imported log, reads the built-in workloads').
    options: HashMap<(&'a str, &'a str), Option<&'static crate::engine::option::OptSpec>>,
    /// Per workload and option name: the option's default.
    defaults: HashMap<(&'a str, &'a str), Option<Value>>,
}

impl<'a> SpecLookups<'a> {
    /// The option `key` of `step`'s workload.
    fn option(
        &mut self,
        step: &'a Step,
        key: &'a str,
    ) -> Option<&'static crate::engine::option::OptSpec> {
        *self
            .options
            .entry((&step.workload, key))
            .or_insert_with(|| match step.spec {
                Some(spec) => spec.option(key),
                None => crate::engine::Catalog::builtin().any_option(key),
            })
    }

    /// Sizes read as the user writes them (`16K`, `8G`), everything else as is.
    fn display(&mut self, step: &'a Step, key: &'a str, value: &Value) -> String {
        let option = self.option(step, key);
        match (option.map(|o| &o.kind), value.as_i64()) {
            (Some(crate::engine::option::Kind::Size), Some(bytes)) if bytes >= 0 => {
                crate::value::format_size(bytes as u64)
            }
            _ => value.to_string(),
        }
    }

    /// Options worth showing in the text listing: the ones away from the default, and the
    /// limits.
    fn shown(&mut self, step: &'a Step, key: &'a str, value: &Value) -> bool {
        if matches!(key, "threads" | "time" | "events") {
            return true;
        }
        self.defaults
            .entry((&step.workload, key))
            .or_insert_with(|| {
                step.spec
                    .and_then(|w| w.option(key))
                    .and_then(|o| o.default_value())
            })
            .as_ref()
            .is_none_or(|d| d != value)
    }
}

#[derive(Serialize)]
struct JsonPlan<'a> {
    suite: &'a str,
    file: &'a str,
    axes: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<&'a str>,
    estimated_seconds: f64,
    steps_without_estimate: usize,
    variant_order: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    order_seed: Option<u64>,
    /// `prepare` or `existing`.
    dataset: &'static str,
    steps: &'a [super::Step],
}

pub fn render_json(plan: &Plan, file: &str) -> String {
    let (known, unknown) = total_estimate(plan);
    let json = JsonPlan {
        suite: &plan.suite,
        file,
        axes: &plan.axes,
        target: plan.target.as_deref(),
        estimated_seconds: known,
        steps_without_estimate: unknown,
        variant_order: plan.variant_order.as_str(),
        order_seed: plan.order_seed,
        dataset: plan.dataset.as_str(),
        steps: &plan.steps,
    };
    serde_json::to_string_pretty(&json).unwrap_or_default() + "\n"
}
