//! Prepare (schema, parallel table load), cleanup and the check step of a custom workload
//! (helper "load" writes it; until then each entry point says so).

use std::io::Write;
use std::sync::atomic::AtomicBool;

use super::model::{Def, Frame};
use crate::db::Target;
use crate::engine::EngineError;
use crate::engine::random::RandOptions;

/// What the loader needs from a built workload ([`super::run::Custom`]).
pub struct LoadCtx<'a> {
    pub def: &'static Def,
    pub target: &'a Target,
    pub options: &'a Frame,
    pub rand: &'a RandOptions,
    pub seed: u64,
}

fn not_built(ctx: &LoadCtx<'_>, what: &str) -> EngineError {
    EngineError::Failed(format!(
        "workload `{}`: the {what} of custom workloads is not built yet",
        ctx.def.name
    ))
}

pub fn prepare(
    ctx: &LoadCtx<'_>,
    out: &mut dyn Write,
    stop: &AtomicBool,
) -> Result<(), EngineError> {
    let _ = (out, stop);
    Err(not_built(ctx, "prepare"))
}

pub fn cleanup(ctx: &LoadCtx<'_>, out: &mut dyn Write) -> Result<(), EngineError> {
    let _ = out;
    Err(not_built(ctx, "cleanup"))
}

pub fn check(ctx: &LoadCtx<'_>, out: &mut dyn Write, stop: &AtomicBool) -> Result<(), EngineError> {
    let _ = (out, stop);
    Err(not_built(ctx, "check step"))
}
