//! sysbench 1.0 Lua scripts, run unchanged on an embedded LuaJIT (`mlua`, vendored).
//!
//! sysbench's own API is mostly Lua calling C through the LuaJIT FFI; scripts written for it
//! declare sysbench's C functions with `ffi.cdef` and call them through `ffi.C`
//! (`sb_counter_inc`). So this module does what sysbench does, over sbsuite's own parts:
//!
//! * [`ctx`]: the thread's context the exported C functions reach (thread id, random
//!   generator, the driver's event loop), the run's shared counters, and the exported loop and
//!   counter functions (`sb_more_events`, `sb_event_start`/`stop`, `sb_counter_inc`/`val`).
//! * [`sql`]: `db_*` over sbsuite's [`crate::db::Connection`]s with sysbench's C struct
//!   layouts (`sql_connection`, `sql_result`, `sql_bind`…), and `prelude/sql.lua` on top.
//! * [`rand`], [`histogram`]: `sb_rand_*` on [`crate::engine::random`], `sb_histogram_*`.
//! * [`options`]: sysbench's option types, parsing, `sysbench.opt` export and `help` layout.
//! * [`state`]: building one Lua state (std libs, `package.path`, the `sysbench` table, the
//!   prelude chunks in `prelude/`, the script, the options).
//! * [`script`]: a script file loaded once on the main thread: its declared options, custom
//!   commands and functions ([`Script`]), and whether it is one of sysbench's stock scripts.
//! * [`bundle`]: a script and the modules it `require`s as one value an agent of a
//!   multi-client run receives, checks against their hashes and writes back to disk.
//! * [`run`]: the [`crate::engine::driver::Workload`] of a script (one state per worker,
//!   `thread_run` driving the driver's [`crate::engine::driver::EventLoop`], hooks, reports,
//!   commands) and its [`crate::engine::spec::WorkloadSpec`].
//!
//! One Lua state per thread, created on it, nothing shared between states (sysbench's model):
//! globals set in `init()` are not seen by workers.

pub mod bundle;
pub mod ctx;
pub mod histogram;
pub mod options;
pub mod rand;
pub mod run;
pub mod script;
pub mod sql;
pub mod state;
pub mod stop;

use std::path::PathBuf;

/// sysbench's option types (`sysbench.cmdline.ARG_*`), numbered as in sysbench.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgType {
    Null = 0,
    Bool = 1,
    Int = 2,
    Size = 3,
    Double = 4,
    String = 5,
    List = 6,
    File = 7,
}

/// One option a script declares in `sysbench.cmdline.options`.
#[derive(Clone, Debug, PartialEq)]
pub struct DeclaredOpt {
    /// As declared (dashes kept: `--table-size` and `--table_size` both set it).
    pub name: String,
    pub desc: String,
    pub kind: ArgType,
    /// sysbench's text of the default (`on`/`off`, `tostring(n)`, a list joined by `,`);
    /// `None` when there is none to show.
    pub default: Option<String>,
}

/// One value of `sysbench.opt`: BOOL → boolean, INT/SIZE/DOUBLE → number, STRING → string,
/// LIST → array of strings.
#[derive(Clone, Debug, PartialEq)]
pub enum OptVal {
    Bool(bool),
    Number(f64),
    Str(String),
    List(Vec<String>),
}

/// `sysbench.opt` as exported to every state: option name (with `_`) → value, general
/// options (`threads`, `time`, `rand_type`, `mysql_host`…) and the script's.
pub type OptValues = indexmap::IndexMap<String, OptVal>;

/// A custom command of `sysbench.cmdline.commands`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    pub name: String,
    /// `sysbench.cmdline.PARALLEL_COMMAND`: one state per thread runs it.
    pub parallel: bool,
}

/// A script file, loaded once on the main thread to learn what it declares.
#[derive(Clone, Debug)]
pub struct Script {
    /// The path the file was read from.
    pub path: PathBuf,
    /// The test argument as typed (`sysbench.cmdline.script_path`).
    pub typed: String,
    /// sysbench's `<sname>`: the basename of the argument (`tpcc.lua`).
    pub sname: String,
    pub source: String,
    /// Declared options, sorted by name as sysbench lists them; empty for a legacy script.
    pub options: Vec<DeclaredOpt>,
    /// Custom commands, sorted by name.
    pub commands: Vec<Command>,
    /// Which of `prepare`, `cleanup`, `help` the script defines as global functions.
    pub has_prepare: bool,
    pub has_cleanup: bool,
    pub has_help: bool,
    /// A directory searched before sysbench's `package.path` for the modules the script
    /// `require`s: an agent's copy of the modules its coordinator loaded
    /// ([`bundle::ScriptBundle`]); `None` everywhere else.
    pub module_root: Option<PathBuf>,
}

// The thread context's types live here, not in `ctx`, so that `ctx` (which every exported
// function uses) imports no sibling: `sql` uses `ctx`, and `LuaShared` holds `sql`'s `DbSetup`.

/// What every state of one run (or one command) shares, read by the exported functions.
pub struct LuaShared {
    pub counters: ctx::Counters,
    /// `sysbench.rand.default`'s distribution (`rand_type` and its parameters).
    pub default_dist: crate::engine::random::Distribution,
    /// `rand_spec_iter`, `rand_spec_pct`, `rand_spec_res`, `rand_pareto_h` as the native
    /// engines read them, for `sysbench.rand.gaussian/special/pareto`.
    pub rand: crate::engine::random::RandOptions,
    /// `sysbench.rand.unique()`'s process-wide sequence.
    pub unique: crate::engine::random::UniqueSequence,
    /// The database of `sysbench.sql.driver():connect()` (`None`: the default SQLite file of
    /// a suite without a target is still a target; `None` only for states that may not
    /// connect, such as `sbsuite workloads` reading a script's options).
    pub db: Option<sql::DbSetup>,
    /// What the states may take: `lua_memory_limit` and `max_retries`.
    pub limits: Limits,
    /// The SQL errors of every state by code, since the start (results.csv's `error_codes`).
    pub codes: std::sync::Mutex<crate::engine::session::retry::ErrorCodes>,
}

/// The general options that bound a script ([`stop`], the prelude's event loop).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes each state may allocate (0: no limit).
    pub memory: u64,
    /// Re-runs of one event after ignored errors (0: no limit).
    pub max_retries: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            memory: stop::DEFAULT_MEMORY_LIMIT,
            max_retries: crate::engine::session::retry::DEFAULT_MAX_RETRIES,
        }
    }
}

/// The calling thread's part: set by [`enter`] for as long as one Lua state runs on it.
pub struct ThreadCtx {
    /// `sysbench.tid`.
    pub tid: usize,
    pub shared: std::sync::Arc<LuaShared>,
    pub rng: crate::engine::random::Rng,
    /// The driver's loop while a worker runs `thread_run` (`sb_more_events`…); null otherwise.
    lp: *mut crate::engine::driver::EventLoop<'static>,
    /// A worker's run step scope: its connections open there, so that the step's stop
    /// reaches their statements. `None` outside a run (commands, the top level): connections
    /// then register in the process-wide scope.
    pub scope: Option<crate::db::interrupt::Scope>,
    /// When the event the prelude's loop is re-running first failed.
    pub retry_since: Option<std::time::Instant>,
}

/// A Lua error (syntax or runtime) with the script position and the traceback, as printed.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{message}")]
pub struct LuaError {
    pub message: String,
}

impl From<mlua::Error> for LuaError {
    fn from(e: mlua::Error) -> LuaError {
        LuaError {
            message: e.to_string(),
        }
    }
}
