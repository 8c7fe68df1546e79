//! `sbsuite workloads [NAME]`: the workload registry as a list, or one workload with its
//! options.

use super::{Exit, fail, print};
use crate::engine::{config::GENERAL, registry, spec::WorkloadSpec};

pub(super) fn workloads(name: Option<&str>) -> Exit {
    let mut text = String::new();
    let list: Vec<&WorkloadSpec> = match name {
        Some(n) => match registry::workload(n) {
            Some(w) => vec![w],
            None => {
                let names: Vec<&str> = registry::all().iter().map(|w| w.name).collect();
                return fail(
                    Exit::BadInput,
                    format_args!(
                        "unknown workload `{n}`; known workloads: {}",
                        names.join(", ")
                    ),
                );
            }
        },
        None => registry::all(),
    };
    for w in list {
        text.push_str(&format!("{} - {}\n", w.name, w.summary));
        if name.is_some() {
            for o in w.all_options() {
                let default = o.default.map(|d| format!(" [{d}]")).unwrap_or_default();
                text.push_str(&format!("  {:<22} {}{default}\n", o.name, o.help));
            }
        }
    }
    if name.is_none() {
        text.push_str("\nGeneral options (every workload):\n");
        for o in GENERAL {
            let default = o.default.map(|d| format!(" [{d}]")).unwrap_or_default();
            text.push_str(&format!("  {:<22} {}{default}\n", o.name, o.help));
        }
        text.push_str("\n`sbsuite workloads NAME` lists a workload's own options.\n");
    }
    print(&text)
}
