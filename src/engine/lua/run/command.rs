//! A script's commands (reference §1.3): `prepare`/`cleanup` (a custom command of that name
//! wins over the global function), `help`, and the custom ones of
//! `sysbench.cmdline.commands` — serial in the main state, or PARALLEL: one fresh state per
//! thread (tid 0..threads-1) when `--threads` > 1.
//!
//! Exit semantics follow sysbench: a serial command fails on an error or on returning
//! `false`; a parallel one logs each thread's error and succeeds anyway [obs].

use std::io::Write;
use std::sync::atomic::AtomicBool;

use mlua::Lua;

use super::super::{LuaError, options, state};
use super::{LuaWorkload, StateRole, failed};
use crate::db::interrupt::{self, Parts};
use crate::engine::EngineError;

/// What sysbench's `sysbench.cmdline.call_command(name)` does in one state: run the
/// command's function; `false` is a failure, anything else success.
fn call_command(lua: &Lua, name: &str) -> Result<bool, LuaError> {
    let sb: mlua::Table = lua.globals().get("sysbench")?;
    let cmdline: mlua::Table = sb.get("cmdline")?;
    let commands: mlua::Table = cmdline.get("commands")?;
    let entry: mlua::Table = commands.get(name)?;
    let f: mlua::Function = entry.get(1)?;
    let r: mlua::Value = f.call(())?;
    Ok(!matches!(r, mlua::Value::Boolean(false)))
}

impl LuaWorkload {
    /// `prepare` or `cleanup`: the custom command of that name, else the global function,
    /// else sysbench's refusal.
    pub(super) fn builtin_command(
        &self,
        name: &'static str,
        out: &mut dyn Write,
        stop: &AtomicBool,
    ) -> Result<(), EngineError> {
        let script = &self.def.script;
        if script.commands.iter().any(|c| c.name == name) {
            return self.custom_command(name, out, stop);
        }
        let defined = match name {
            "prepare" => script.has_prepare,
            "cleanup" => script.has_cleanup,
            _ => script.has_help,
        };
        if !defined {
            return Err(EngineError::Failed(not_implemented(&script.sname, name)));
        }
        let main = self.main(name)?;
        main.call(move |lua, _| state::call_global(lua, name, ()).map(|_| ()))?
            .map_err(|e| EngineError::Failed(failed(name, &e)))
    }

    /// The script's `help()` function (its failure is only logged: exit 0, as in sysbench).
    fn help(&self, out: &mut dyn Write) -> Result<(), EngineError> {
        let main = self.main("help")?;
        let r = main.call(|lua, _| state::call_global(lua, "help", ()).map(|_| ()))?;
        if let Err(e) = r {
            let _ = writeln!(out, "FATAL: {}", failed("help", &e));
        }
        Ok(())
    }

    /// A custom command of `sysbench.cmdline.commands`.
    pub(super) fn custom_command(
        &self,
        name: &str,
        out: &mut dyn Write,
        _stop: &AtomicBool,
    ) -> Result<(), EngineError> {
        let Some(cmd) = self.def.script.commands.iter().find(|c| c.name == name) else {
            if name == "help" && self.def.script.has_help {
                return self.help(out);
            }
            if name == "help" && !self.def.script.options.is_empty() {
                // The options' list, after the main state loaded the script (its top level
                // runs, as in sysbench).
                self.main("help")?;
                return write!(out, "{}", options::help_text(&self.def.script))
                    .map_err(|e| EngineError::io("writing the output failed", e));
            }
            return Err(EngineError::Failed(format!(
                "Unknown command: {name} ({} defines {})",
                self.def.script.sname,
                defined(&self.def.script.commands)
            )));
        };
        if cmd.parallel && self.threads > 1 {
            // sysbench's main state loads the script first, then each thread's.
            self.main(name)?;
            return self.parallel_command(name, out);
        }
        let main = self.main(name)?;
        let owned = name.to_string();
        match main.call(move |lua, _| call_command(lua, &owned))? {
            Ok(true) => Ok(()),
            Ok(false) => Err(EngineError::Silent(format!(
                "the `{name}' command of {} returned false",
                self.def.script.sname
            ))),
            Err(e) => Err(EngineError::Failed(failed(
                "sysbench.cmdline.call_command",
                &e,
            ))),
        }
    }

    /// A PARALLEL command with `threads` > 1: one state per thread, errors logged.
    fn parallel_command(&self, name: &str, out: &mut dyn Write) -> Result<(), EngineError> {
        let io = |e: std::io::Error| EngineError::io("writing the output failed", e);
        writeln!(out, "Initializing worker threads...\n").map_err(io)?;
        out.flush().map_err(io)?;
        let errors: Vec<String> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..self.threads)
                .map(|tid| {
                    let conf = self.conf(StateRole::Command, tid, name);
                    std::thread::Builder::new()
                        .name(format!("sbsuite-lua-command-{tid}"))
                        .spawn_scoped(s, move || -> Option<String> {
                            let (guard, lua) = match conf.build() {
                                Ok(built) => built,
                                Err(e) => return Some(e.to_string()),
                            };
                            let r = {
                                // Stops at the first Ctrl-C, however the command loops.
                                let _ctrl_c =
                                    interrupt::register_parts(Parts::cancel(lua.stopper()));
                                call_command(&lua, name)
                            };
                            drop(lua);
                            drop(guard);
                            r.err().map(|e| failed("sysbench.cmdline.call_command", &e))
                        })
                })
                .collect();
            handles
                .into_iter()
                .filter_map(|h| match h {
                    Ok(h) => h
                        .join()
                        .unwrap_or_else(|_| Some(format!("a thread of command `{name}' panicked"))),
                    Err(e) => Some(format!("cannot start a thread for `{name}': {e}")),
                })
                .collect()
        });
        // sysbench's log prints a repeated message once.
        let mut last: Option<&String> = None;
        for e in &errors {
            if last != Some(e) {
                writeln!(out, "FATAL: {e}").map_err(io)?;
            }
            last = Some(e);
        }
        out.flush().map_err(io)
    }
}

/// sysbench's refusal of a command the script does not implement.
pub(crate) fn not_implemented(sname: &str, command: &str) -> String {
    format!("'{sname}' test does not implement the '{command}' command.")
}

fn defined(commands: &[super::super::Command]) -> String {
    if commands.is_empty() {
        "no commands".into()
    } else {
        commands
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}
