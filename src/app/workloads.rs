//! `sbsuite workloads [NAME] [--suite FILE]`: the workload catalog as a list, or one workload
//! with its options. With `--suite`, the workloads the suite file declares in TOML are listed
//! (and described) instead: their options, which of them shape the dataset, and their
//! transaction mix.

use std::path::Path;

use super::{Exit, fail, fail_config, print};
use crate::engine::{Catalog, config::GENERAL, spec::WorkloadSpec};

pub(super) fn workloads(name: Option<&str>, suite: Option<&Path>) -> Exit {
    let mut scripts = crate::suite::scripts::Scripts::default();
    let mut catalog = Catalog::default();
    let own: Option<Vec<&'static WorkloadSpec>> = match suite {
        None => None,
        Some(file) => match crate::engine::custom::compile::load_file(file) {
            Ok(loaded) => {
                // The definitions first, then the scripts (named unlike any of them).
                catalog = loaded.catalog();
                scripts = match crate::suite::scripts::load_file(file, &mut catalog) {
                    Ok(s) => s,
                    Err(e) => return fail_config(e),
                };
                Some(catalog.declared().to_vec())
            }
            Err(e) => return fail_config(e),
        },
    };
    let mut text = String::new();
    let list: Vec<&WorkloadSpec> = match name {
        Some(n) => match catalog.workload(n) {
            Some(w) => vec![w],
            None => {
                let names: Vec<&str> = catalog.all().map(|w| w.name).collect();
                return fail(
                    Exit::BadInput,
                    format_args!(
                        "unknown workload `{n}`; known workloads: {}",
                        names.join(", ")
                    ),
                );
            }
        },
        None => own.clone().unwrap_or_else(|| catalog.all().collect()),
    };
    if let (Some(file), None, true) = (suite, name, list.is_empty()) {
        text.push_str(&format!("{} declares no workloads.\n", file.display()));
    }
    for w in list {
        text.push_str(&format!("{} - {}\n", w.name, w.summary));
        if let Some(def) = crate::engine::custom::def(w) {
            text.push_str(&format!("  declared in {}\n", def.source.display()));
        }
        if let Some(u) = scripts.get(w.name) {
            text.push_str(&script_lines(u, name.is_none()));
        }
        if name.is_some() {
            for o in w.all_options() {
                let default = o.default.map(|d| format!(" [{d}]")).unwrap_or_default();
                let dataset = if w.data.keys.contains(&o.name) {
                    " (dataset)"
                } else {
                    ""
                };
                text.push_str(&format!("  {:<22} {}{default}{dataset}\n", o.name, o.help));
            }
            if let Some(def) = crate::engine::custom::def(w) {
                text.push_str("\nTransactions (weight):\n");
                for t in &def.transactions {
                    match &t.weight_expr {
                        Some(e) => {
                            text.push_str(&format!("  {:<22} {}\n", t.name, e.text().trim()))
                        }
                        None => text.push_str(&format!("  {:<22} {}\n", t.name, t.weight)),
                    }
                }
                if let Some(h) = &def.headline {
                    let per = if h.per_secs == 60.0 {
                        "minute"
                    } else {
                        "second"
                    };
                    text.push_str(&format!(
                        "Headline: {} ({} per {per})\n",
                        h.name, def.transactions[h.transaction].name
                    ));
                }
            }
        }
    }
    if name.is_none() && own.is_none() {
        text.push_str("\nGeneral options (every workload):\n");
        for o in GENERAL {
            let default = o.default.map(|d| format!(" [{d}]")).unwrap_or_default();
            text.push_str(&format!("  {:<22} {}{default}\n", o.name, o.help));
        }
        text.push_str("\n`sbsuite workloads NAME` lists a workload's own options.\n");
    } else if name.is_none() {
        text.push_str(&format!(
            "\n`sbsuite workloads --suite {} NAME` lists a workload's options.\n",
            suite.map(|s| s.display().to_string()).unwrap_or_default()
        ));
    }
    print(&text)
}

/// What `workloads --suite` says of a sysbench Lua script: its file and hash, its commands,
/// and (in the list, where options are not shown otherwise) its own options as the script
/// declares them, with sysbench's type names.
fn script_lines(u: &crate::suite::scripts::ScriptUse, listing: bool) -> String {
    use crate::engine::lua::ArgType;
    let mut text = format!("  file: {} (sha256 {})\n", u.resolved.display(), u.sha256);
    for (path, sha256) in &u.modules {
        text.push_str(&format!("  module: {} (sha256 {sha256})\n", path.display()));
    }
    let Some(script) = crate::engine::lua::run::script(u.spec) else {
        return text;
    };
    if !script.commands.is_empty() {
        let names: Vec<&str> = script.commands.iter().map(|c| c.name.as_str()).collect();
        text.push_str(&format!("  commands: {}\n", names.join(", ")));
    }
    for (key, list) in [
        ("before_runs", &u.before_runs),
        ("after_runs", &u.after_runs),
    ] {
        if !list.is_empty() {
            text.push_str(&format!("  {key}: {}\n", list.join(", ")));
        }
    }
    if listing {
        for o in &script.options {
            let kind = match o.kind {
                ArgType::Bool => "bool",
                ArgType::Int => "int",
                ArgType::Size => "size",
                ArgType::Double => "double",
                ArgType::List => "list",
                ArgType::File => "file",
                ArgType::String | ArgType::Null => "string",
            };
            let name = o.name.replace('-', "_");
            let default = o
                .default
                .as_deref()
                .map(|d| format!(" [{d}]"))
                .unwrap_or_default();
            let dataset = if u.dataset.contains(&name) {
                " (dataset)"
            } else {
                ""
            };
            text.push_str(&format!(
                "    {name:<20} {kind:<6} {}{default}{dataset}\n",
                o.desc
            ));
        }
    }
    text
}
