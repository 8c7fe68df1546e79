//! One Lua state built on its own thread ([`StateConf::build`]), and [`Home`]: a thread that
//! keeps one state alive for the whole step and runs jobs on it.
//!
//! Why a thread of its own: a Lua state is bound to the thread that created it (it is
//! `!Send`, and the exported C functions find their [`ctx`] in a thread-local), while the
//! workload that owns the main state must be `Sync` and is called from the driver's calling
//! thread at several moments (`init()` before the banner, the final report hook, `done()`,
//! commands). Recreating the state per call would run the script's top level again each
//! time and lose what `init()` left in its globals (sysbench keeps one main state), so the
//! main state (tid 0) and the report state (tid = threads) each live on a [`Home`] thread;
//! a call sends a closure there and waits for its answer, so it behaves like a direct call.

use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use mlua::Lua;

use super::super::ctx::{self, CtxGuard, LuaShared};
use super::super::state::{self, StateSpec};
use super::super::stop::State;
use super::super::{LuaError, OptValues};
use super::{LuaDef, StateRole, lua_message};
use crate::db::interrupt::{self, Parts};
use crate::engine::EngineError;
use crate::engine::random::Rng;

/// Everything needed to build one state on the current thread.
#[derive(Clone)]
pub(super) struct StateConf {
    pub def: &'static LuaDef,
    pub role: StateRole,
    pub tid: usize,
    /// `sysbench.cmdline.command`.
    pub command: Option<String>,
    pub opts: Arc<OptValues>,
    pub shared: Arc<LuaShared>,
    pub seed: u64,
}

impl StateConf {
    /// Installs this thread's context and builds the state with its options exported
    /// (sysbench exports them before any function of the script is called). The state must
    /// drop before the guard: its finalizers may call exported functions.
    pub fn build(&self) -> Result<(CtxGuard, State), EngineError> {
        let guard = ctx::enter(
            self.tid,
            Arc::clone(&self.shared),
            Rng::for_thread(self.seed, self.tid),
        );
        let spec = StateSpec {
            script: &self.def.script,
            role: self.role.state(),
            tid: self.tid,
            argv: &self.def.argv,
            command: self.command.as_deref(),
            opts: &self.opts,
        };
        let lua = state::new_state(&spec)
            .and_then(|lua| state::export_options(&lua, &spec).map(|()| lua))
            .map_err(|e| EngineError::Failed(lua_message(&e)))?;
        Ok((guard, lua))
    }

    /// Re-exports `sysbench.opt` (sysbench does before the final report hook).
    pub fn export(&self, lua: &Lua) -> Result<(), LuaError> {
        state::export_options(
            lua,
            &StateSpec {
                script: &self.def.script,
                role: self.role.state(),
                tid: self.tid,
                argv: &self.def.argv,
                command: self.command.as_deref(),
                opts: &self.opts,
            },
        )
    }
}

type Job = Box<dyn FnOnce(&Lua, &StateConf) + Send>;

/// A thread owning one Lua state; dropped: the state is closed and the thread joined.
pub(super) struct Home {
    jobs: Mutex<Option<Sender<Job>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Home {
    /// Starts the thread and builds the state there; an error (the script does not load)
    /// is returned once the thread is gone.
    pub fn spawn(name: &str, conf: StateConf) -> Result<Home, EngineError> {
        let (tx, rx): (Sender<Job>, Receiver<Job>) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<(), EngineError>>(1);
        let thread = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                let (guard, lua) = match conf.build() {
                    Ok(built) => built,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                for job in rx {
                    // A call (init, done, a command, a report hook) stops at the first Ctrl-C
                    // however the script loops; the next call finds the state usable again.
                    let ctrl_c = interrupt::register_parts(Parts::cancel(lua.stopper()));
                    job(&lua, &conf);
                    drop(ctrl_c);
                    lua.clear_stop();
                }
                drop(lua);
                drop(guard);
            })
            .map_err(|e| EngineError::io("cannot start a thread for Lua", e))?;
        let ready = ready_rx.recv().unwrap_or_else(|_| {
            Err(EngineError::Failed(
                "the Lua state's thread ended while loading the script".into(),
            ))
        });
        let home = Home {
            jobs: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
        };
        ready.map(|()| home)
    }

    /// Runs `f` on the state and waits for its result.
    pub fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Lua, &StateConf) -> R + Send + 'static,
    ) -> Result<R, EngineError> {
        let (tx, rx): (SyncSender<R>, Receiver<R>) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |lua, conf| {
            let _ = tx.send(f(lua, conf));
        });
        let gone = || EngineError::Failed("the Lua state's thread is gone (a panic?)".into());
        self.jobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .ok_or_else(gone)?
            .send(job)
            .map_err(|_| gone())?;
        rx.recv().map_err(|_| gone())
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        drop(self.jobs.lock().unwrap_or_else(|p| p.into_inner()).take());
        if let Some(t) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = t.join();
        }
    }
}
