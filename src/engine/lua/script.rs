//! A script file, loaded once on the main thread to learn what it declares ([`Script::load`]):
//! its options (`sysbench.cmdline.options`, typed and sorted as sysbench reads them), its
//! custom commands, and which of `prepare`/`cleanup`/`help` it defines. The suite validator,
//! `help` and the run all start from that.
//!
//! [`stock_workload`] recognises sysbench's own stock scripts by content, so that a command
//! line naming `/usr/share/sysbench/oltp_read_write.lua` keeps running the native engine; a
//! modified copy (or one beside a modified `oltp_common.lua`) runs as Lua.

use std::path::Path;
use std::sync::Arc;

use mlua::{Function, Table, Value};
use sha2::{Digest, Sha256};

use super::ctx::{self, Counters, LuaShared};
use super::state::{self, DECLARED_OPTIONS, Role, StateSpec};
use super::{ArgType, Command, DeclaredOpt, LuaError, OptValues, Script};
use crate::engine::random::{Distribution, RandOptions, Rng, UniqueSequence};

impl Script {
    /// Reads the file at `path` (`typed` is the argument as written), runs its top level in a
    /// main state without a database, with `sysbench.cmdline.command = command`, and reads
    /// what it declares. Errors name the file (and line, for Lua errors).
    pub fn load(path: &Path, typed: &str, command: Option<&str>) -> Result<Script, LuaError> {
        Script::load_with(path, typed, command, None)
    }

    /// [`Script::load`] with `module_root` searched first for the modules it `require`s
    /// ([`Script::module_root`]): an agent loading the bundle its coordinator sent.
    pub fn load_with(
        path: &Path,
        typed: &str,
        command: Option<&str>,
        module_root: Option<&Path>,
    ) -> Result<Script, LuaError> {
        let source = std::fs::read_to_string(path).map_err(|e| LuaError {
            message: format!("cannot read the script {}: {e}", path.display()),
        })?;
        let sname = Path::new(typed)
            .file_name()
            .map_or_else(|| typed.to_string(), |n| n.to_string_lossy().into_owned());
        let mut script = Script {
            path: path.to_path_buf(),
            typed: typed.to_string(),
            sname,
            source,
            options: Vec::new(),
            commands: Vec::new(),
            has_prepare: false,
            has_cleanup: false,
            has_help: false,
            module_root: module_root.map(Path::to_path_buf),
        };
        // A caller already running a state on this thread keeps its context.
        let _guard = ctx::with(|_| ()).is_none().then(enter_without_db);
        let mut argv = vec!["sysbench".to_string(), typed.to_string()];
        argv.extend(command.map(str::to_string));
        let opts = OptValues::new();
        let lua = state::new_state(&StateSpec {
            script: &script,
            role: Role::Probe,
            tid: 0,
            argv: &argv,
            command,
            opts: &opts,
        })?;
        let options = declared_options(&lua).map_err(|e| LuaError {
            message: format!(
                "`sysbench.cmdline.read_cmdline_options' function failed: {}",
                e.message
            ),
        })?;
        let commands = declared_commands(&lua)?;
        let is_function =
            |name: &str| matches!(lua.globals().get::<Value>(name), Ok(Value::Function(_)));
        script.has_prepare = is_function("prepare");
        script.has_cleanup = is_function("cleanup");
        script.has_help = is_function("help");
        script.options = options;
        script.commands = commands;
        Ok(script)
    }
}

impl Script {
    /// Runs the script's top level once more in a main state, printing what it prints: what
    /// sysbench does for a script given without a command. `argv` is sysbench's argv (`[0]` the
    /// program).
    pub fn run_top_level(&self, argv: &[String]) -> Result<(), LuaError> {
        let _guard = ctx::with(|_| ()).is_none().then(enter_without_db);
        state::new_state(&StateSpec {
            script: self,
            role: Role::Main,
            tid: 0,
            argv,
            command: None,
            opts: &OptValues::new(),
        })
        .map(drop)
    }
}

/// The context of a loading state: sysbench's default `rand_*` options, no database.
fn enter_without_db() -> ctx::CtxGuard {
    let mut rng = Rng::for_thread(0, 0);
    let rand = RandOptions {
        rand_type: "special".into(),
        spec_iter: 12,
        spec_pct: 1,
        spec_res: 75,
        pareto_h: 0.2,
        zipfian_exp: 0.8,
    };
    let shared = LuaShared {
        counters: Counters::new(1),
        default_dist: Distribution::Special {
            iter: 12,
            pct: 1,
            res: 75,
        },
        rand,
        unique: UniqueSequence::from_rng(&mut rng),
        db: None,
        limits: super::Limits::default(),
        codes: Default::default(),
    };
    ctx::enter(0, Arc::new(shared), rng)
}

/// `sysbench.cmdline.options` as the prelude's reader returns it.
fn declared_options(lua: &mlua::Lua) -> Result<Vec<DeclaredOpt>, LuaError> {
    let reader: Function = lua.named_registry_value(DECLARED_OPTIONS)?;
    let list: Table = reader.call(()).map_err(state::lua_error)?;
    let mut out = Vec::new();
    for entry in list.sequence_values::<Table>() {
        let entry = entry?;
        let name: String = entry.get("name")?;
        let kind = match entry.get::<i64>("type")? {
            1 => ArgType::Bool,
            2 => ArgType::Int,
            3 => ArgType::Size,
            4 => ArgType::Double,
            5 => ArgType::String,
            6 => ArgType::List,
            7 => ArgType::File,
            0 => ArgType::Null,
            other => {
                return Err(LuaError {
                    message: format!(
                        "option `{name}` has type {other}: use one of sysbench.cmdline.ARG_BOOL … ARG_FILE"
                    ),
                });
            }
        };
        out.push(DeclaredOpt {
            desc: entry.get("desc")?,
            default: entry.get("default")?,
            kind,
            name,
        });
    }
    Ok(out)
}

/// `sysbench.cmdline.commands`: the entries with a function (`[1] ~= nil`), sorted.
fn declared_commands(lua: &mlua::Lua) -> Result<Vec<Command>, LuaError> {
    let sb: Table = lua.globals().get("sysbench")?;
    let cmdline: Table = sb.get("cmdline")?;
    let Value::Table(commands) = cmdline.get::<Value>("commands")? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for pair in commands.pairs::<Value, Value>() {
        let (name, def) = pair?;
        if let (Value::String(name), Value::Table(def)) = (name, def)
            && !matches!(def.get::<Value>(1)?, Value::Nil)
        {
            out.push(Command {
                name: name.to_str()?.to_string(),
                parallel: matches!(def.get::<Value>(2)?, Value::Boolean(true)),
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// SHA-256 of sysbench 1.0.20's stock scripts as Debian's `1.0.20+ds-5` installs them in
/// `/usr/share/sysbench`, with the built-in workload each one is.
const STOCK: &[(&str, &str)] = &[
    (
        "90ef17c63b8f959fa85f7c459b106b26d44d7f1686bfff467837a4c41d0a84de",
        "bulk_insert",
    ),
    (
        "11dc20862684615384145641e0114c1ea76b80d7c9ba8c755e0fd9ad0fe62711",
        "oltp_delete",
    ),
    (
        "46d250ef3be841b1a349b23e6390d6f7adfb2435a239802ef4ceed9873d1cd68",
        "oltp_insert",
    ),
    (
        "5002f6d702e1099fff451cfba06b03b77fc6a3110144c9a1102bfdb5de14b83d",
        "oltp_point_select",
    ),
    (
        "25eeb32f5877c254c7fceb5f0bc23a2da9ed708a9f07df5b95f0a9fdfe4817eb",
        "oltp_read_only",
    ),
    (
        "d3d68413ecce348242308cf693d5db7a320292e1def93ecc9cb080b2b4f32b45",
        "oltp_read_write",
    ),
    (
        "b79f401177f44f02dacf88175327e5bfd9410c54c75faf347b9458ae638fd21a",
        "oltp_update_index",
    ),
    (
        "5c6c923cc000bb6d4a535dd2dafbd3c4da2003c411ad8e585f146be4d713b984",
        "oltp_update_non_index",
    ),
    (
        "fcb462e264097d93c1d8cd0f7b55151c42261a5ab84ce553e41d6bd8bec8d690",
        "oltp_write_only",
    ),
    (
        "028832d7ce71e1bd615eaa61149ef1652d828ccfe2dec8d5c39fe35075f06c54",
        "select_random_points",
    ),
    (
        "be269a98a901e1305e69653c5fc977299a97487e5ef673051bcacee3c16dfaa0",
        "select_random_ranges",
    ),
];

/// SHA-256 of the stock `oltp_common.lua`, which every stock script but `bulk_insert`
/// requires.
const STOCK_COMMON: &str = "710c3b38027668c83e46f3c0814dc7cfd67cc8c4012df6cab461e46d62b5996a";

fn sha256_hex(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    Some(
        Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    )
}

/// The built-in workload `path` is when it is byte for byte one of sysbench 1.0.20's stock
/// scripts, with an unmodified `oltp_common.lua` beside it when it requires one; else `None`.
pub fn stock_workload(path: &Path) -> Option<&'static str> {
    let hash = sha256_hex(path)?;
    let &(_, name) = STOCK.iter().find(|(h, _)| *h == hash)?;
    if name == "bulk_insert" {
        return Some(name);
    }
    let common = path.with_file_name("oltp_common.lua");
    (sha256_hex(&common)?.as_str() == STOCK_COMMON).then_some(name)
}
