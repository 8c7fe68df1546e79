//! `[[phases]]` (#30): each phase can run, the timeline has a measured part, and nothing else
//! in the suite sets what the phases set.

use super::Checker;
use crate::source::Seg;
use crate::suite::raw::RawSuite;

/// Options the timeline sets for every run step: giving them too would be ambiguous.
const SET_BY_PHASES: [&str; 4] = ["time", "warmup_time", "report_checkpoints", "events"];

/// Checks `[[phases]]` with the file's line of each mistake.
pub(super) fn check(c: &mut Checker<'_>, raw: &RawSuite) {
    if raw.phases.is_empty() {
        return;
    }
    let at = |i: usize, key: &str| [Seg::key("phases"), Seg::Index(i), Seg::key(key)];
    let mut names = std::collections::HashSet::new();
    let mut measured = false;
    for (i, p) in raw.phases.iter().enumerate() {
        let n = i + 1;
        let name = p.name.clone().unwrap_or_else(|| format!("phase{n}"));
        if name.trim().is_empty() {
            c.err(
                &at(i, "name"),
                false,
                format!("phase {n} has an empty name"),
                Some("name it, e.g. name = \"ramp\", or leave `name` out for `phaseN`".into()),
            );
        } else if !names.insert(name.clone()) {
            c.err(
                &at(i, "name"),
                false,
                format!("phase {n} is named `{name}` like an earlier phase"),
                Some(
                    "give every phase its own name: it is the `phase` column of the results".into(),
                ),
            );
        }
        if p.time == 0 {
            c.err(
                &at(i, "time"),
                false,
                format!("phase {n} (`{name}`) runs for 0 seconds"),
                Some("give it at least 1 second, e.g. time = 30".into()),
            );
        }
        if p.threads == Some(0) {
            c.err(
                &at(i, "threads"),
                false,
                format!("phase {n} (`{name}`) has threads = 0"),
                Some("give it at least 1 thread, or leave `threads` out for the step's".into()),
            );
        }
        if let Some(rate) = p.rate {
            let (from, to) = rate.bounds();
            if !(from.is_finite() && to.is_finite()) || from < 0.0 || to < 0.0 {
                c.err(
                    &at(i, "rate"),
                    false,
                    format!("phase {n} (`{name}`) has a negative rate"),
                    Some(
                        "give arrivals per second ≥ 0: rate = 500, a ramp rate = [100, 2000], \
                         or 0 for closed loop"
                            .into(),
                    ),
                );
            }
        }
        if p.warmup && measured {
            c.err(
                &at(i, "warmup"),
                false,
                format!("phase {n} (`{name}`) is a warmup after a measured phase"),
                Some(
                    "only the leading phases may be warmups (they are excluded from every \
                     statistic): move it to the front or drop `warmup = true`"
                        .into(),
                ),
            );
        }
        measured |= !p.warmup;
    }
    if !measured {
        c.err(
            &at(raw.phases.len() - 1, "warmup"),
            false,
            "every phase is a warmup: nothing would be measured",
            Some("drop `warmup = true` from the phases to measure".into()),
        );
    }
    let total: u64 = raw.phases.iter().map(|p| p.time).sum();
    for key in SET_BY_PHASES {
        for (table, present) in [
            ("defaults", raw.defaults.contains_key(key)),
            ("matrix", raw.matrix.contains_key(key)),
        ] {
            if present {
                c.err(
                    &[Seg::key(table), Seg::key(key)],
                    true,
                    format!("`{key}` and [[phases]] do not go together: the phases set it"),
                    Some(format!(
                        "remove `{key}`: each run step runs its phases ({total} s in all; a \
                         warmup is a leading phase with warmup = true)"
                    )),
                );
            }
        }
    }
    if raw.clients.is_some() {
        c.err(
            &at(0, "time"),
            true,
            "[[phases]] and [clients] do not go together yet",
            Some("run the phases from this process (remove [clients]), or drop [[phases]]".into()),
        );
    }
}
