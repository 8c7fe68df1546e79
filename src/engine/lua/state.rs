//! Building one Lua state the way sysbench 1.0.20 builds each of its states (reference §1):
//! every standard library (LuaJIT's `ffi`, `bit`, `jit` included) → `package.path`/`cpath`
//! → the global `sysbench` table (`tid`, `version`, `cmdline.argv/command/script_path`) → the
//! prelude chunks, our own Lua for sysbench's internal modules, under sysbench's chunk names
//! (`sysbench.rand.lua`, `sysbench.lua`, `sysbench.compat.lua`, `sysbench.cmdline.lua`,
//! `sysbench.sql.lua`, `sysbench.db.lua`, `sysbench.histogram.lua`) → the script's main chunk
//! → the option export. So `sysbench.opt` is nil while the script's top level runs, but
//! `sysbench.tid` and `sysbench.cmdline.*` are set (scripts branch on the command there).
//!
//! A state is created on the thread that runs it, after [`super::ctx::enter`]: the C functions
//! the prelude calls through `ffi.C` reach that thread's context. Nothing is shared between
//! states, as in sysbench.
//!
//! Errors keep Lua's own text, which names the chunk and line (`tpcc.lua:12: attempt to call
//! a nil value`), and add the traceback, so the caller prints them as they are.

use mlua::{Function, IntoLuaMulti, Lua, LuaOptions, MultiValue, StdLib, Table, Value};

use super::stop::{self, State};
use super::{LuaError, OptVal, OptValues, Script, ctx, histogram, options, rand, sql};
use crate::db::interrupt::{self, Parts};

/// What a state is for; the caller picks `tid` accordingly (the report state's is `threads`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Top level, `prepare`/`cleanup`/`help`, serial commands, `init`, `done`.
    Main,
    /// One per worker thread of `run`.
    Worker,
    /// One per thread of a parallel custom command.
    Command,
    /// Intermediate and checkpoint report hooks.
    Report,
    /// [`super::script::Script::load`] reading what a script declares: what its top level
    /// prints (`print`, `io.write`) is dropped, as the state that then runs the command prints
    /// it once, as sysbench does.
    Probe,
}

/// Everything a new state needs.
pub struct StateSpec<'a> {
    pub script: &'a Script,
    pub role: Role,
    /// `sysbench.tid`.
    pub tid: usize,
    /// `sysbench.cmdline.argv` (`[0]` = program), verbatim.
    pub argv: &'a [String],
    /// `sysbench.cmdline.command`.
    pub command: Option<&'a str>,
    /// Exported as `sysbench.opt` after the main chunk (and as globals for a legacy script).
    pub opts: &'a OptValues,
}

/// The prelude in sysbench's order, with sysbench's chunk names (errors read
/// `[string "sysbench.sql.lua"]:N`). `sysbench.cmdline.lua` returns the option reader.
const PRELUDE: &[(&str, &str)] = &[
    ("sysbench.rand.lua", include_str!("prelude/rand.lua")),
    ("sysbench.lua", include_str!("prelude/sysbench.lua")),
    ("sysbench.compat.lua", include_str!("prelude/compat.lua")),
    (CMDLINE_CHUNK, include_str!("prelude/cmdline.lua")),
    ("sysbench.sql.lua", sql::SQL_LUA),
    ("sysbench.db.lua", sql::DB_LEGACY_LUA),
    (
        "sysbench.histogram.lua",
        include_str!("prelude/histogram.lua"),
    ),
];

const CMDLINE_CHUNK: &str = "sysbench.cmdline.lua";

/// Registry key of the function returning the script's declared options (sorted
/// `{name, desc, type, default}` tables), out of the scripts' sight.
pub(super) const DECLARED_OPTIONS: &str = "sbsuite.cmdline.declared";

/// Registry key of `call(f, …)`: `f(…)` under `xpcall`, returning `true, results…` or
/// `false, message` with the traceback.
const CALL: &str = "sbsuite.call";

/// The protected call behind [`call_global`] and the main chunk. An error value that is not a
/// string (a table such as `{errcode = 1}` outside the event loop) reads `(not a string)`, as
/// in sysbench; mlua would print the table's address.
const CALL_LUA: &str = r#"
local traceback, type, tostring, xpcall = debug.traceback, type, tostring, xpcall
local function handler(err)
  local t = type(err)
  if t ~= "string" and t ~= "number" then
    err = "(not a string)"
  end
  return traceback(tostring(err), 1)
end
return function(f, ...)
  return xpcall(f, handler, ...)
end
"#;

/// sysbench's data directory (Debian's `pkgdatadir`): `require "oltp_common"` finds the
/// stock scripts' module there.
const PKGDATADIR: &str = "/usr/share/sysbench";

/// Builds a state on the calling thread, which has entered its context ([`ctx::enter`]),
/// with its memory limit (`lua_memory_limit` in `spec.opts`, else the default). Its top level
/// runs under [`stop::TOP_LEVEL_LIMIT`] and stops at the first Ctrl-C.
pub fn new_state(spec: &StateSpec<'_>) -> Result<State, LuaError> {
    keep_exports();
    // SAFETY: sysbench scripts need the whole of LuaJIT: `ffi` to call the functions this
    // module exports, `debug`, and C modules through `package.cpath`. The state never leaves
    // this thread, and the FFI surface is the same as under sysbench.
    let lua = unsafe { Lua::unsafe_new_with(StdLib::ALL, LuaOptions::default()) };
    let limit = ctx::with(|c| c.shared.limits.memory).unwrap_or(stop::DEFAULT_MEMORY_LIMIT);
    let lua = State::new(lua, limit)?;
    set_package_paths(&lua, spec.script.module_root.as_deref())?;
    let call: Function = lua.load(CALL_LUA).set_name("=sbsuite").eval()?;
    lua.set_named_registry_value(CALL, call)?;
    lua.globals().set("sysbench", sysbench_table(&lua, spec)?)?;
    for (name, source) in PRELUDE {
        if source.is_empty() {
            continue;
        }
        let chunk = lua.load(*source).set_name(*name);
        if *name == CMDLINE_CHUNK {
            let reader: Function = chunk.eval().map_err(lua_error)?;
            lua.set_named_registry_value(DECLARED_OPTIONS, reader)?;
        } else {
            chunk.exec().map_err(lua_error)?;
        }
    }
    options::set_test_options(spec.script);
    if matches!(spec.role, Role::Probe) {
        lua.load("print = function() end; io.write = function() return io.stdout end")
            .set_name("=sbsuite")
            .exec()?;
    }
    let main = lua
        .load(spec.script.source.as_str())
        .set_name(format!("@{}", spec.script.typed))
        .into_function()
        .map_err(lua_error)?;
    {
        let _ctrl_c = interrupt::register_parts(Parts::cancel(lua.stopper()));
        lua.with_deadline(|| protected_call(&lua, main, ()))?;
    }
    // A top level stopped by Ctrl-C: the state is not used (the step is interrupted).
    export_options(&lua, spec)?;
    Ok(lua)
}

/// Every module's exported C functions, read so the linker keeps them for `ffi.C`.
fn keep_exports() {
    for e in [
        &ctx::EXPORTS,
        &rand::EXPORTS,
        &histogram::EXPORTS,
        &options::EXPORTS,
        &sql::EXPORTS,
    ] {
        std::hint::black_box(e.0);
    }
}

/// sysbench's `package.path` and `package.cpath`, or `LUA_PATH`/`LUA_CPATH` when set (`;;`
/// in them stands for the default); `module_root` (an agent's copy of its coordinator's
/// modules) goes first.
fn set_package_paths(lua: &Lua, module_root: Option<&std::path::Path>) -> Result<(), LuaError> {
    let (mut path, cpath) = package_paths();
    if let Some(root) = module_root {
        let root = root.display();
        path = format!("{root}/?.lua;{root}/?/init.lua;{path}");
    }
    let package: Table = lua.globals().get("package")?;
    package.set("path", path)?;
    package.set("cpath", cpath)?;
    Ok(())
}

/// sysbench's `package.path` and `package.cpath` as a state gets them: its defaults, or
/// `LUA_PATH`/`LUA_CPATH` when set (`;;` in them stands for the default). `sbsuite sysbench`
/// looks scripts up (`--lua NAME`) through the same path.
pub fn package_paths() -> (String, String) {
    let home = std::env::var("HOME").unwrap_or_default();
    let rocks = format!("{home}/.luarocks");
    let path = format!(
        "./?.lua;./?/init.lua;./src/lua/?.lua;{rocks}/share/lua/5.1/?.lua;\
         {rocks}/share/lua/5.1/?/init.lua;{rocks}/share/lua/?.lua;{rocks}/share/lua/?/init.lua;\
         /usr/local/share/lua/5.1/?.lua;/usr/share/lua/5.1/?.lua;{PKGDATADIR}/?.lua;"
    );
    let cpath = format!(
        "./?.so;{rocks}/lib/lua/5.1/?.so;{rocks}/lib/lua/?.so;/usr/local/lib/lua/5.1/?.so;\
         /usr/lib/lua/5.1/?.so;"
    );
    let pick = |env: &str, default: String| match std::env::var(env) {
        Ok(v) => v.replace(";;", &format!(";{default};")),
        Err(_) => default,
    };
    (pick("LUA_PATH", path), pick("LUA_CPATH", cpath))
}

/// The global `sysbench` before any prelude chunk: `tid`, versions, `cmdline` with `argv`
/// (index 0 = program), `command` and `script_path`.
fn sysbench_table(lua: &Lua, spec: &StateSpec<'_>) -> Result<Table, LuaError> {
    let sb = lua.create_table()?;
    sb.set("tid", spec.tid)?;
    sb.set("version", "1.0.20")?;
    sb.set("version_string", "sysbench 1.0.20")?;
    let cmdline = lua.create_table()?;
    let argv = lua.create_table()?;
    for (i, a) in spec.argv.iter().enumerate() {
        argv.raw_set(i, a.as_str())?;
    }
    cmdline.set("argv", argv)?;
    cmdline.set("command", spec.command)?;
    let typed = spec.script.typed.as_str();
    cmdline.set(
        "script_path",
        (!typed.is_empty() && typed != "-").then_some(typed),
    )?;
    sb.set("cmdline", cmdline)?;
    Ok(sb)
}

/// A fresh `sysbench.opt` from `spec.opts`; for a script that declares no option, every
/// option also becomes a global, unless a function of that name exists (`help`).
pub fn export_options(lua: &Lua, spec: &StateSpec<'_>) -> Result<(), LuaError> {
    let opt = lua.create_table()?;
    let legacy = spec.script.options.is_empty();
    let globals = lua.globals();
    for (name, v) in spec.opts {
        let value = to_lua(lua, v)?;
        opt.set(name.as_str(), value.clone())?;
        if legacy && !matches!(globals.get::<Value>(name.as_str())?, Value::Function(_)) {
            globals.set(name.as_str(), value)?;
        }
    }
    let sb: Table = globals.get("sysbench")?;
    sb.set("opt", opt)?;
    Ok(())
}

fn to_lua(lua: &Lua, v: &OptVal) -> Result<Value, LuaError> {
    Ok(match v {
        OptVal::Bool(b) => Value::Boolean(*b),
        OptVal::Number(n) => Value::Number(*n),
        OptVal::Str(s) => Value::String(lua.create_string(s)?),
        OptVal::List(items) => {
            Value::Table(lua.create_sequence_from(items.iter().map(String::as_str))?)
        }
    })
}

/// Calls the global function `name(args…)`; `Ok(None)` when the global is not a function.
pub fn call_global(
    lua: &Lua,
    name: &str,
    args: impl IntoLuaMulti,
) -> Result<Option<MultiValue>, LuaError> {
    match lua.globals().get::<Value>(name)? {
        Value::Function(f) => protected_call(lua, f, args).map(Some),
        _ => Ok(None),
    }
}

/// `f(args…)` through [`CALL_LUA`]: its results, or the error text with the traceback.
fn protected_call(lua: &Lua, f: Function, args: impl IntoLuaMulti) -> Result<MultiValue, LuaError> {
    let call: Function = lua.named_registry_value(CALL)?;
    let mut args = args.into_lua_multi(lua)?;
    args.push_front(Value::Function(f));
    let mut out = call.call::<MultiValue>(args).map_err(lua_error)?;
    match out.pop_front() {
        Some(Value::Boolean(true)) => Ok(out),
        _ => Err(LuaError {
            message: match out.pop_front() {
                Some(Value::String(s)) => s.to_string_lossy(),
                _ => "(not a string)".into(),
            },
        }),
    }
}

/// Lua's message as sysbench prints it (`file:line: message`), with the traceback when Lua
/// gave one.
pub(super) fn lua_error(e: mlua::Error) -> LuaError {
    let message = match e {
        mlua::Error::SyntaxError { message, .. } => message,
        mlua::Error::RuntimeError(m) => m,
        mlua::Error::CallbackError { traceback, cause } => format!("{cause}\n{traceback}"),
        other => other.to_string(),
    };
    LuaError { message }
}
