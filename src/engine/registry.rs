//! The one list of workloads: one line per workload, pointing at the [`WorkloadSpec`] its module
//! declares. Everything that needs to know workloads reads them here: suite validation, the
//! planner (options, dataset keys, fresh prepares), `sbsuite sysbench` and `convert`, the
//! `workloads` command, the JSON schema and the engine itself ([`super::execute`]).
//!
//! The order is the help order (`sbsuite workloads`, the schema's enum), so it is part of the
//! output contract: append new workloads at the end of their group.

use super::option::OptSpec;
use super::spec::WorkloadSpec;
use super::{cpu, fileio, memory, mutex, oltp, threads};

/// Every workload sbsuite knows, in help order.
pub static WORKLOADS: &[&WorkloadSpec] = &[
    &cpu::SPEC,
    &memory::SPEC,
    &threads::SPEC,
    &mutex::SPEC,
    &fileio::SPEC,
    &oltp::READ_ONLY,
    &oltp::READ_WRITE,
    &oltp::WRITE_ONLY,
    &oltp::POINT_SELECT,
    &oltp::UPDATE_INDEX,
    &oltp::UPDATE_NON_INDEX,
    &oltp::INSERT,
    &oltp::DELETE,
    &oltp::SELECT_RANDOM_POINTS,
    &oltp::SELECT_RANDOM_RANGES,
    &oltp::bulk::SPEC,
];

thread_local! {
    /// Workloads declared in the suite being loaded or run (`[workloads.NAME]`), registered by
    /// [`register`] when the suite loads: per thread, because the suite is loaded and run on
    /// one thread and unit tests load different suites on many threads at once.
    static CUSTOM: std::cell::RefCell<Vec<&'static WorkloadSpec>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Makes `spec` (a workload declared in TOML) known on this thread, replacing one of the same
/// name.
pub fn register(spec: &'static WorkloadSpec) {
    CUSTOM.with_borrow_mut(|c| {
        c.retain(|w| w.name != spec.name);
        c.push(spec);
    });
}

/// Forgets the workloads [`register`] made known on this thread.
pub fn clear_custom() {
    CUSTOM.with_borrow_mut(Vec::clear);
}

/// Every workload: the built-in ones in help order, then the suite's own.
pub fn all() -> Vec<&'static WorkloadSpec> {
    let mut all = WORKLOADS.to_vec();
    CUSTOM.with_borrow(|c| all.extend(c.iter().copied()));
    all
}

/// The workload called `name` (built-in or declared in the suite).
pub fn workload(name: &str) -> Option<&'static WorkloadSpec> {
    WORKLOADS
        .iter()
        .copied()
        .find(|w| w.name == name)
        .or_else(|| CUSTOM.with_borrow(|c| c.iter().copied().find(|w| w.name == name)))
}

/// Whether this build can execute `workload` (every listed workload has an engine; the name is
/// returned as the registry spells it).
pub fn engine_for(workload: &str) -> Option<&'static str> {
    self::workload(workload).map(|w| w.name)
}

/// Every option name any workload accepts, for "did you mean" suggestions.
pub fn all_option_names() -> impl Iterator<Item = &'static str> {
    let mut names: Vec<&'static str> = all()
        .into_iter()
        .flat_map(|w| w.all_options().map(|o| o.name))
        .collect();
    names.sort_unstable();
    names.dedup();
    names.into_iter()
}

/// Finds an option spec by name in any workload (types agree across workloads).
pub fn any_option(name: &str) -> Option<&'static OptSpec> {
    all().into_iter().find_map(|w| w.option(name))
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::db::Target;
    use crate::engine::config::RunConfig;
    use crate::engine::spec::Setup;
    use crate::value::Value;

    #[test]
    fn every_default_is_valid_for_its_kind() {
        for w in WORKLOADS {
            for o in w.all_options() {
                if let Some(d) = o.default {
                    assert!(
                        o.kind.coerce(&Value::parse_loose(d)).is_ok(),
                        "{}.{}",
                        w.name,
                        o.name
                    );
                }
            }
        }
    }

    #[test]
    fn dataset_keys_are_options_of_their_workload() {
        for w in WORKLOADS {
            for key in w.data.keys {
                assert!(w.option(key).is_some(), "{}: data key `{key}`", w.name);
            }
        }
    }

    #[test]
    fn names_are_unique() {
        let mut seen = HashSet::new();
        for w in WORKLOADS {
            assert!(seen.insert(w.name), "{} listed twice", w.name);
        }
    }

    /// Building a workload reads every option its code reads, through its spec: a key the spec
    /// does not declare (a typo) fails here instead of reading 0 in a real run.
    #[test]
    fn every_workload_builds_from_its_defaults() {
        let dir = tempfile::tempdir().expect("tempdir");
        for w in WORKLOADS {
            let mut options = w.resolve_options(|_| None);
            if w.name == "fileio" {
                options
                    .0
                    .insert("file_total_size".into(), Value::Int(1 << 20));
                options.0.insert("file_num".into(), Value::Int(4));
                options.0.insert(
                    "file_dir".into(),
                    Value::Str(dir.path().display().to_string()),
                );
            }
            let run = RunConfig::from_options(&options).expect("general defaults parse");
            let target = Target::sqlite_default();
            let setup = Setup::new(w, &options, &run, &target);
            if let Err(e) = (w.build)(&setup) {
                panic!("{} does not build from its defaults: {e}", w.name);
            }
        }
    }

    #[test]
    fn registry_knows_every_engine() {
        assert_eq!(engine_for("cpu"), Some("cpu"));
        assert_eq!(engine_for("oltp_read_only"), Some("oltp_read_only"));
        assert_eq!(engine_for("bulk_insert"), Some("bulk_insert"));
        assert_eq!(engine_for("nope"), None);
        // The registry's name leads to the script's own spec; bulk_insert is not a script.
        let spec = workload("oltp_point_select").expect("listed");
        assert!(std::ptr::eq(spec, &super::oltp::POINT_SELECT));
        let bulk = workload("bulk_insert").expect("listed");
        assert!(std::ptr::eq(bulk, &super::oltp::bulk::SPEC));
    }
}
