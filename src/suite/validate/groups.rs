//! `[[groups]]` (#31): each group names a database workload, its threads and options that
//! workload knows; the matrix's `groups` axis names declared groups; and nothing else in the
//! suite sets what the groups set (threads, rate) or cannot run beside them (phases, clients).

use super::{Checker, workload_names};
use crate::source::{Seg, did_you_mean};
use crate::suite::Group;
use crate::suite::raw::RawSuite;

/// The matrix axis that picks the groups a step runs: `groups = ["oltp", "oltp+olap"]`.
pub const AXIS: &str = "groups";

/// What joins group names in a `groups` axis value.
pub const JOIN: char = '+';

/// Options a group sets with keys of its own, or that every group must share (the step's
/// clock): giving them in a group's `options` is refused with the fix.
const NOT_PER_GROUP: [(&str, &str); 6] = [
    ("threads", "write it as the group's own key: threads = 4"),
    ("rate", "write it as the group's own key: rate = 100"),
    (
        "workload",
        "write it as the group's own key: workload = \"oltp_read_only\"",
    ),
    (
        "time",
        "groups run for the step's `time`: set it in [defaults] or the matrix",
    ),
    (
        "events",
        "groups run for the step's `time`: set `time` in [defaults] instead",
    ),
    (
        "warmup_time",
        "groups share the step's warmup: set it in [defaults] so that they measure the same window",
    ),
];

/// Checks `[[groups]]` and returns them typed (empty when the suite has none or they have
/// errors, which are in `c`).
pub(super) fn check(c: &mut Checker<'_>, raw: &RawSuite) -> Vec<Group> {
    if raw.groups.is_empty() {
        if raw.matrix.contains_key(AXIS) {
            c.err(
                &[Seg::key("matrix"), Seg::key(AXIS)],
                true,
                "the matrix has a `groups` axis but the suite has no [[groups]]",
                Some(
                    "declare the groups, e.g. [[groups]] name = \"oltp\" threads = 4, or remove \
                     the axis"
                        .into(),
                ),
            );
        }
        return Vec::new();
    }
    let errors = c.errors.len();
    let at = |i: usize, key: &str| [Seg::key("groups"), Seg::Index(i), Seg::key(key)];
    let mut out: Vec<Group> = Vec::new();
    for (i, g) in raw.groups.iter().enumerate() {
        let n = i + 1;
        let name = g.name.clone().unwrap_or_else(|| format!("group{n}"));
        if name.is_empty()
            || !name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_')
        {
            c.err(
                &at(i, "name"),
                false,
                format!("group {n} is named `{name}`"),
                Some(
                    "use letters, digits, `-` and `_` (the name is the `group` column and is \
                     joined with `+` in the `groups` axis), e.g. name = \"oltp\""
                        .into(),
                ),
            );
        } else if out.iter().any(|o| o.name == name) {
            c.err(
                &at(i, "name"),
                false,
                format!("group {n} is named `{name}` like an earlier group"),
                Some(
                    "give every group its own name: it is the `group` column of the results".into(),
                ),
            );
        }
        let threads = match g.threads {
            None => {
                c.err(
                    &[Seg::key("groups"), Seg::Index(i)],
                    false,
                    format!("group {n} (`{name}`) has no `threads`"),
                    Some("give every group its worker count, e.g. threads = 4".into()),
                );
                0
            }
            Some(0) => {
                c.err(
                    &at(i, "threads"),
                    false,
                    format!("group {n} (`{name}`) has threads = 0"),
                    Some("give it at least 1 thread, or remove the group".into()),
                );
                0
            }
            Some(t) => t,
        };
        let spec = match &g.workload {
            None => None,
            Some(w) => match c.catalog.workload(w) {
                Some(spec) => Some(spec),
                None => {
                    let names = workload_names(c.catalog);
                    let help = did_you_mean(w, c.catalog.all().map(|w| w.name))
                        .map(|s| format!("{s} known workloads: {names}"))
                        .unwrap_or_else(|| format!("known workloads: {names}"));
                    c.err(
                        &at(i, "workload"),
                        false,
                        format!("group {n} (`{name}`): unknown workload `{w}`"),
                        Some(help),
                    );
                    None
                }
            },
        };
        if let Some(spec) = spec
            && !spec.needs_target
        {
            c.err(
                &at(i, "workload"),
                false,
                format!(
                    "group {n} (`{name}`): `{}` is a system workload, which cannot share a step \
                     with other groups",
                    spec.name
                ),
                Some(
                    "groups run database workloads side by side on the target (OLTP, \
                     [workloads.NAME], Lua scripts); run a system workload as a step of its own"
                        .into(),
                ),
            );
        }
        let mut options = indexmap::IndexMap::new();
        for (key, v) in &g.options {
            let path = [
                Seg::key("groups"),
                Seg::Index(i),
                Seg::key("options"),
                Seg::key(key),
            ];
            if let Some((_, fix)) = NOT_PER_GROUP.iter().find(|(k, _)| k == key) {
                c.err(
                    &path,
                    true,
                    format!("group {n} (`{name}`) sets `{key}` in its options"),
                    Some((*fix).into()),
                );
                continue;
            }
            if let Some(spec) = spec
                && spec.option(key).is_none()
            {
                let help = did_you_mean(
                    key,
                    spec.options.iter().flat_map(|o| o.iter().map(|o| o.name)),
                )
                .unwrap_or_else(|| {
                    format!("run `sbsuite workloads {}` to list its options", spec.name)
                });
                c.err(
                    &path,
                    true,
                    format!(
                        "group {n} (`{name}`): workload `{}` has no option `{key}`",
                        spec.name
                    ),
                    Some(help),
                );
                continue;
            }
            if c.known_option(&path, key)
                && let Some(value) = c.option_value(&path, key, v)
            {
                options.insert(key.clone(), value);
            }
        }
        out.push(Group {
            name,
            workload: g.workload.clone(),
            threads,
            rate: g.rate.filter(|r| *r > 0),
            options,
        });
    }
    // What the groups set, or what cannot run beside them.
    for key in ["threads", "rate", "max_threads"] {
        for table in ["defaults", "matrix"] {
            let present = match table {
                "defaults" => raw.defaults.contains_key(key),
                _ => raw.matrix.contains_key(key),
            };
            if present {
                c.err(
                    &[Seg::key(table), Seg::key(key)],
                    true,
                    format!("`{key}` and [[groups]] do not go together: each group sets its own"),
                    Some(format!(
                        "remove `{key}` from [{table}] and give each [[groups]] entry its \
                         `threads` (and `rate`)"
                    )),
                );
            }
        }
    }
    if !raw.phases.is_empty() {
        c.err(
            &[Seg::key("phases")],
            true,
            "[[phases]] and [[groups]] do not go together yet",
            Some(
                "drop [[phases]] (the groups run for the step's `time`), or run the phases in a \
                 suite without [[groups]]"
                    .into(),
            ),
        );
    }
    for (present, what) in [
        (!raw.faults.is_empty(), "[[faults]]"),
        (raw.capacity.is_some(), "[capacity]"),
    ] {
        if present {
            c.err(
                &[Seg::key("groups")],
                true,
                format!("[[groups]] and {what} do not go together yet"),
                Some(format!(
                    "run {what} in a suite without [[groups]], or drop [[groups]]"
                )),
            );
        }
    }
    if raw.clients.is_some() {
        c.err(
            &[Seg::key("groups")],
            true,
            "[[groups]] and [clients] do not go together yet",
            Some("run the groups from this process (remove [clients]), or drop [[groups]]".into()),
        );
    }
    if let Some(axis) = raw.matrix.get(AXIS) {
        let values: Vec<&toml::Value> = match axis {
            toml::Value::Array(a) => a.iter().collect(),
            v => vec![v],
        };
        for (j, v) in values.into_iter().enumerate() {
            let Some(text) = v.as_str() else { continue };
            let mut seen = Vec::new();
            for part in text.split(JOIN) {
                if !raw.groups.iter().enumerate().any(|(i, g)| {
                    g.name.clone().unwrap_or_else(|| format!("group{}", i + 1)) == part
                }) {
                    let names: Vec<&str> = out.iter().map(|g| g.name.as_str()).collect();
                    c.err(
                        &[Seg::key("matrix"), Seg::key(AXIS), Seg::Index(j)],
                        false,
                        format!("`groups` value `{text}` names `{part}`, which is not a group"),
                        Some(format!(
                            "join names of [[groups]] with `+` ({}), e.g. \"{}\"",
                            names.join(", "),
                            names.join("+")
                        )),
                    );
                } else if seen.contains(&part) {
                    c.err(
                        &[Seg::key("matrix"), Seg::key(AXIS), Seg::Index(j)],
                        false,
                        format!("`groups` value `{text}` names `{part}` twice"),
                        Some("name each group once".into()),
                    );
                }
                seen.push(part);
            }
        }
    }
    if c.errors.len() > errors {
        return Vec::new();
    }
    out
}
