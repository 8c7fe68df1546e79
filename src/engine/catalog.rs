//! The one list of built-in workloads ([`WORKLOADS`]: one line per workload, pointing at the
//! [`WorkloadSpec`] its module declares) and the [`Catalog`] that adds the workloads a suite
//! declares. Everything that needs to know workloads is handed a catalog: suite validation, the
//! planner (options, dataset keys, fresh prepares), `sbsuite sysbench` and `convert`, the
//! `workloads` command, the JSON schema and the agents. Plan steps carry the spec they resolved
//! to, so the engine ([`super::execute`]) never looks a name up.
//!
//! A catalog is a value, never a global: a suite owns its own (built while it loads), so
//! suites loaded side by side (unit tests on many threads, a coordinator and its local agents)
//! never see each other's workloads.
//!
//! The order is the help order (`sbsuite workloads`, the schema's enum), so it is part of the
//! output contract: append new workloads at the end of their group.

use super::option::OptSpec;
use super::spec::WorkloadSpec;
use super::{cpu, fileio, memory, mutex, oltp, threads, tpch};

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
    &tpch::SPEC,
];

/// The workloads a suite (or a `sbsuite sysbench` command line, or an agent) can name: the
/// built-in ones of [`WORKLOADS`], then the ones it declares (`[workloads.NAME]` definitions,
/// Lua scripts). Built while the suite loads and owned by it; whoever needs a workload by name
/// is handed the catalog, so two suites loaded at once never see each other's workloads.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    /// Declared workloads, in declaration order (names unique).
    declared: Vec<&'static WorkloadSpec>,
}

/// The catalog of the built-in workloads alone ([`Catalog::builtin`]).
static BUILTIN: Catalog = Catalog {
    declared: Vec::new(),
};

impl Catalog {
    /// The built-in workloads alone, for places that know no suite (help of `sbsuite sysbench`,
    /// option typing before a suite's workloads are compiled).
    pub fn builtin() -> &'static Catalog {
        &BUILTIN
    }

    /// The built-in workloads and `declared`, in that order (a later one of the same name
    /// replaces an earlier one).
    pub fn with(declared: impl IntoIterator<Item = &'static WorkloadSpec>) -> Catalog {
        let mut catalog = Catalog::default();
        for spec in declared {
            catalog.declare(spec);
        }
        catalog
    }

    /// Makes `spec` (a workload declared in TOML, a Lua script) known, replacing one of the
    /// same name.
    pub fn declare(&mut self, spec: &'static WorkloadSpec) {
        self.declared.retain(|w| w.name != spec.name);
        self.declared.push(spec);
    }

    /// The workloads declared beyond the built-in ones, in declaration order.
    pub fn declared(&self) -> &[&'static WorkloadSpec] {
        &self.declared
    }

    /// Every workload: the built-in ones in help order, then the declared ones.
    pub fn all(&self) -> impl Iterator<Item = &'static WorkloadSpec> + '_ {
        WORKLOADS
            .iter()
            .copied()
            .chain(self.declared.iter().copied())
    }

    /// The workload called `name` (built-in or declared).
    pub fn workload(&self, name: &str) -> Option<&'static WorkloadSpec> {
        self.all().find(|w| w.name == name)
    }

    /// Every option name any workload accepts, sorted, for "did you mean" suggestions.
    pub fn all_option_names(&self) -> impl Iterator<Item = &'static str> + use<> {
        let mut names: Vec<&'static str> = self
            .all()
            .flat_map(|w| w.all_options().map(|o| o.name))
            .collect();
        names.sort_unstable();
        names.dedup();
        names.into_iter()
    }

    /// Finds an option spec by name in any workload (types agree across workloads).
    pub fn any_option(&self, name: &str) -> Option<&'static OptSpec> {
        self.all().find_map(|w| w.option(name))
    }
}

/// Whether `name` is a built-in workload's.
pub fn is_builtin(name: &str) -> bool {
    WORKLOADS.iter().any(|w| w.name == name)
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

    /// A declared workload is known to its catalog alone, after the built-in ones; declaring
    /// a name again replaces the first.
    #[test]
    fn declared_workloads_belong_to_their_catalog() {
        let spec = |summary: &'static str| {
            &*Box::leak(Box::new(WorkloadSpec {
                name: "mine",
                summary,
                ..cloned(&super::cpu::SPEC)
            }))
        };
        let mut catalog = Catalog::default();
        catalog.declare(spec("first"));
        catalog.declare(spec("second"));
        assert_eq!(catalog.declared().len(), 1);
        assert_eq!(catalog.workload("mine").map(|w| w.summary), Some("second"));
        assert_eq!(catalog.all().count(), WORKLOADS.len() + 1);
        assert_eq!(catalog.all().last().map(|w| w.name), Some("mine"));
        assert!(Catalog::builtin().workload("mine").is_none());
        assert!(Catalog::default().workload("mine").is_none());
    }

    /// A copy of a built-in spec, to declare under another name.
    fn cloned(w: &WorkloadSpec) -> WorkloadSpec {
        WorkloadSpec {
            name: w.name,
            summary: w.summary,
            options: w.options,
            data: crate::engine::spec::DataSpec {
                family: w.data.family,
                keys: w.data.keys,
                fresh_per_run: w.data.fresh_per_run,
            },
            needs_target: w.needs_target,
            needs_local_files: w.needs_local_files,
            ends_by_itself: w.ends_by_itself,
            build: w.build,
            definition: w.definition,
        }
    }

    #[test]
    fn the_builtin_catalog_knows_every_engine() {
        let catalog = Catalog::builtin();
        for name in ["cpu", "oltp_read_only", "bulk_insert"] {
            assert_eq!(catalog.workload(name).map(|w| w.name), Some(name));
        }
        assert!(catalog.workload("nope").is_none());
        // The name leads to the script's own spec; bulk_insert is not a script.
        let spec = catalog.workload("oltp_point_select").expect("listed");
        assert!(std::ptr::eq(spec, &super::oltp::POINT_SELECT));
        let bulk = catalog.workload("bulk_insert").expect("listed");
        assert!(std::ptr::eq(bulk, &super::oltp::bulk::SPEC));
    }
}
