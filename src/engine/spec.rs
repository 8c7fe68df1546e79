//! What a workload declares about itself ([`WorkloadSpec`]) and what its builder receives
//! ([`Setup`]).
//!
//! Each workload module holds one `pub static SPEC: WorkloadSpec` (OLTP one per script): name,
//! help line, option tables, the data it prepares, whether it needs a database, whether it ends
//! by itself, and its [`Build`] function. Facts about a workload are fields here, never matches
//! on its name elsewhere, so that [`super::catalog`] can list every workload in one line each.
//!
//! A builder gets its options already split: the general ones parsed once into
//! [`RunConfig`], its own through a [`Reader`] that only admits keys its spec declares. It turns
//! them into its typed configuration in one function; nothing reads the option bag per event.

use super::config::{GENERAL, RunConfig};
use super::driver::Workload;
use super::option::{OptSpec, Reader};
use super::{Definition, EngineError};
use crate::db::Target;
use crate::value::{Options, Value};

/// Builds a workload for one step.
pub type Build = fn(&Setup<'_>) -> Result<Box<dyn Workload>, EngineError>;

/// What a workload's [`Build`] function receives.
pub struct Setup<'a> {
    pub spec: &'static WorkloadSpec,
    /// The workload's own options ([`WorkloadSpec::options`]).
    pub options: Reader<'a>,
    /// The general options, parsed.
    pub run: &'a RunConfig,
    /// The database: the step's target, else the default SQLite file (ignored by workloads that
    /// do not need one).
    pub target: &'a Target,
}

impl<'a> Setup<'a> {
    pub fn new(
        spec: &'static WorkloadSpec,
        options: &'a Options,
        run: &'a RunConfig,
        target: &'a Target,
    ) -> Self {
        Self {
            spec,
            options: spec.reader(options),
            run,
            target,
        }
    }
}

/// [`WorkloadSpec::ends_by_itself`] of a workload that always needs `time` or `events`.
pub fn never(_: &Options) -> bool {
    false
}

/// [`WorkloadSpec::ends_by_itself`] of a workload whose runs always end on their own.
pub fn always(_: &Options) -> bool {
    true
}

/// [`WorkloadSpec::data`] of a workload with nothing to prepare.
pub const NO_DATA: DataSpec = DataSpec {
    family: None,
    keys: &[],
    fresh_per_run: false,
};

/// What a workload prepares, so the planner knows which steps can share one prepare.
#[derive(Debug)]
pub struct DataSpec {
    /// Workloads with the same family and the same values of `keys` share one dataset
    /// (e.g. every `oltp_*` workload reads the same `sbtest` tables). `None`: nothing to prepare.
    pub family: Option<&'static str>,
    /// Options whose values shape the data (a new value means a new prepare).
    pub keys: &'static [&'static str],
    /// The workload changes its data (deletes or inserts rows), so each run gets a fresh prepare.
    pub fresh_per_run: bool,
}

/// Everything sbsuite knows about one workload, declared by the workload's own module and listed
/// once in [`super::catalog`] (or declared by a suite, [`super::catalog::Catalog`]).
#[derive(Debug)]
pub struct WorkloadSpec {
    pub name: &'static str,
    pub summary: &'static str,
    /// Options of this workload besides the [`GENERAL`] ones, in help order.
    pub options: &'static [&'static [OptSpec]],
    pub data: DataSpec,
    /// Needs a database: the suite's `[target]`, else the default SQLite file.
    pub needs_target: bool,
    /// Works on files this process prepared on this machine (fileio's test files): a run
    /// step cannot be split over `[clients]`, whose agents would not find them.
    pub needs_local_files: bool,
    /// Whether a run with these options ends without `time` or `events` (sysbench's mutex runs
    /// one event per thread; memory stops after `memory_total_size`). [`never()`] for most.
    pub ends_by_itself: fn(&Options) -> bool,
    /// Builds the workload for one step.
    pub build: Build,
    /// Built in, or the definition a suite declared (a `[workloads.NAME]` table, a Lua
    /// script), read through `custom::def` and `lua::run::def`.
    pub definition: Definition,
}

impl WorkloadSpec {
    /// Every option this workload accepts, general ones first.
    pub fn all_options(&self) -> impl Iterator<Item = &'static OptSpec> {
        GENERAL
            .iter()
            .chain(self.options.iter().flat_map(|group| group.iter()))
    }

    pub fn option(&self, name: &str) -> Option<&'static OptSpec> {
        self.all_options().find(|o| o.name == name)
    }

    /// This workload's own options (not the general ones), read through its spec.
    pub fn reader<'a>(&'static self, options: &'a Options) -> Reader<'a> {
        Reader::new(self.name, self.options, options)
    }

    /// Every option of this workload resolved: the value `given` returns (already normalised by
    /// [`super::option::Kind::coerce`]) or else the spec default; options without either stay unset. The
    /// planner and `sbsuite sysbench` both build a step's options with this one function.
    pub fn resolve_options(&self, given: impl Fn(&str) -> Option<Value>) -> Options {
        let mut options = Options::default();
        for opt in self.all_options() {
            if let Some(v) = given(opt.name).or_else(|| opt.default_value()) {
                options.0.insert(opt.name.to_string(), v);
            }
        }
        options
    }
}
