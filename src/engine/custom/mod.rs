//! Workloads declared in TOML (`[workloads.NAME]`): the user's own schema, data, parameters
//! and transaction mix, run with the same driver, connections and reports as the built-in
//! OLTP workloads.
//!
//! Shape, and why:
//! * [`compile`] reads the definition (with file:line errors before anything runs, when the
//!   suite loads) and compiles it into a [`model::Def`]: variables are numbered slots,
//!   placeholders are slots in statement order, expressions are compiled ([`expr`]). It lives
//!   here, next to the engine that runs what it produces, and imports nothing of the suite
//!   (positions and errors come from [`crate::source`]). [`spec_for`] turns it into a
//!   [`WorkloadSpec`] (leaked: a definition lives as long as the process) that the suite's
//!   [`super::catalog::Catalog`] declares, so validation, planning, `sbsuite workloads`
//!   and the engine treat it like a built-in workload.
//! * [`generator`] draws values (load columns, parameters) from sysbench's generators; [`run`] is the
//!   [`super::driver::Workload`] (one OS thread and one connection per worker, statements
//!   prepared once per connection, as OLTP); [`load`] prepares (schema, parallel table load),
//!   cleans up and checks.

pub mod compile;
pub mod error;
pub mod expr;
pub mod frame;
pub mod generator;
pub mod load;
pub mod model;
pub mod run;

use super::driver::Workload;
use super::option::{Kind, OptSpec};
use super::session::connections::CONNECTION_OPTIONS;
use super::spec::{DataSpec, Setup, WorkloadSpec, never};
use super::{Definition, EngineError};

/// Options every custom workload has besides its own.
pub static COMMON: &[OptSpec] = &[
    OptSpec {
        name: "check",
        kind: Kind::Bool,
        default: Some("off"),
        help: "Run the workload's checks after the dataset's runs (a `check` step)",
    },
    OptSpec {
        name: "statement_stats",
        kind: Kind::Bool,
        default: Some("off"),
        help: "Keep a histogram per statement as well as per transaction",
    },
];

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

/// The spec of a compiled definition (leaked: definitions live as long as the process).
pub fn spec_for(def: model::Def) -> &'static WorkloadSpec {
    let def: &'static model::Def = Box::leak(Box::new(def));
    let own: Vec<OptSpec> = def
        .options
        .iter()
        .map(|o| OptSpec {
            name: leak(&o.name),
            kind: o.kind,
            default: o.default.as_deref().map(leak),
            help: leak(&o.help),
        })
        .collect();
    let own: &'static [OptSpec] = Box::leak(own.into_boxed_slice());
    let groups: &'static [&'static [OptSpec]] =
        Box::leak(vec![COMMON, CONNECTION_OPTIONS, own].into_boxed_slice());
    let keys: Vec<&'static str> = def
        .options
        .iter()
        .filter(|o| o.dataset)
        .map(|o| leak(&o.name))
        .collect();
    let has_data = !def.schema.is_empty() || !def.load.is_empty();
    Box::leak(Box::new(WorkloadSpec {
        name: leak(&def.name),
        summary: leak(&def.summary),
        options: groups,
        data: DataSpec {
            family: has_data.then(|| leak(&format!("custom:{}", def.name))),
            keys: Box::leak(keys.into_boxed_slice()),
            fresh_per_run: def.fresh_per_run,
        },
        needs_target: true,
        needs_local_files: false,
        ends_by_itself: never,
        build,
        definition: Definition::Custom(def),
    }))
}

/// The definition of a workload declared in TOML; `None` for a built-in one.
pub fn def(spec: &WorkloadSpec) -> Option<&'static model::Def> {
    match spec.definition {
        Definition::Custom(def) => Some(def),
        Definition::Builtin | Definition::Lua(_) => None,
    }
}

fn build(s: &Setup<'_>) -> Result<Box<dyn Workload>, EngineError> {
    let def = def(s.spec).ok_or_else(|| {
        EngineError::Failed(format!(
            "internal error: `{}` has no definition",
            s.spec.name
        ))
    })?;
    Ok(Box::new(run::Custom::new(def, s)?))
}
