//! `sbsuite workloads [NAME]`: the catalog as a list, or one workload with its options.

use super::{Exit, fail, print};
use crate::catalog;

pub(super) fn workloads(name: Option<&str>) -> Exit {
    let mut text = String::new();
    let list: Vec<&catalog::WorkloadSpec> = match name {
        Some(n) => match catalog::workload(n) {
            Some(w) => vec![w],
            None => {
                let names: Vec<&str> = catalog::WORKLOADS.iter().map(|w| w.name).collect();
                return fail(
                    Exit::BadInput,
                    format_args!(
                        "unknown workload `{n}`; known workloads: {}",
                        names.join(", ")
                    ),
                );
            }
        },
        None => catalog::WORKLOADS.iter().collect(),
    };
    for w in list {
        let runnable = if crate::engine::engine_for(w.name).is_some() {
            ""
        } else {
            "  [plan/validate only in this build]"
        };
        text.push_str(&format!("{} - {}{runnable}\n", w.name, w.summary));
        if name.is_some() {
            for o in w.all_options() {
                let default = o.default.map(|d| format!(" [{d}]")).unwrap_or_default();
                text.push_str(&format!("  {:<22} {}{default}\n", o.name, o.help));
            }
        }
    }
    if name.is_none() {
        text.push_str("\nGeneral options (every workload):\n");
        for o in catalog::GENERAL {
            let default = o.default.map(|d| format!(" [{d}]")).unwrap_or_default();
            text.push_str(&format!("  {:<22} {}{default}\n", o.name, o.help));
        }
        text.push_str("\n`sbsuite workloads NAME` lists a workload's own options.\n");
    }
    print(&text)
}
