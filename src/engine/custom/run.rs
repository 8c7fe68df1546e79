//! The runtime of a custom workload: the [`Workload`] and its workers (helper "run" writes it).

use super::model::Def;
use crate::engine::EngineError;
use crate::engine::driver::Workload;
use crate::engine::spec::Setup;

pub struct Custom {
    pub def: &'static Def,
}

impl Custom {
    pub fn new(def: &'static Def, s: &Setup<'_>) -> Result<Custom, EngineError> {
        let _ = s;
        Err(EngineError::Failed(format!(
            "workload `{}`: the custom engine is not built yet",
            def.name
        )))
    }
}

impl Workload for Custom {
    fn banner(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let _ = out;
        Ok(())
    }

    fn new_worker<'a>(
        &'a self,
        id: usize,
        stop: &'a std::sync::atomic::AtomicBool,
    ) -> Result<Box<dyn crate::engine::driver::Worker + 'a>, EngineError> {
        let _ = (id, stop);
        Err(EngineError::Failed("not built yet".into()))
    }
}
