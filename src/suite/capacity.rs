//! `[capacity]` (#30): a suite that asks for the highest arrival rate whose latency stays
//! under a target, instead of a fixed matrix of runs. `sbsuite run` then runs the search of
//! `sbsuite capacity` (which takes its defaults from the section, its options winning).
//!
//! The section is checked here with the rest of the file, so that `validate` and `plan`
//! refuse a bad target or a suite the search cannot vary (a `rate` axis, several variants, a
//! timeline of phases, a repetition count) at the line that wrote it. Whether the suite is one matrix point is known
//! only once it is planned: `crate::capacity::check_plan` says so. [`Target`] lives here, next
//! to the key that writes it, for the search, its file (`capacity.csv`) and the report alike.

use super::raw::{RawSuite, Repeat};
use crate::source::Seg;

pub use super::raw::{CONFIRM, MIN_RATE, PRECISION, RawCapacity};

/// `[capacity]`, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Capacity {
    pub target: Target,
    pub min_rate: f64,
    pub precision: f64,
    pub confirm: u32,
}

/// How a target is written, for errors.
pub const TARGET_FORM: &str = "write PERCENTILE<MS, e.g. `p99<10ms` (p95, p99, avg or max)";

/// `p99 < 10ms`: the percentile and its bound.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// The results.csv column: `lat_p95`, `lat_p99`, `lat_avg` or `lat_max`.
    pub column: &'static str,
    /// Its name as written (`p99`).
    pub name: &'static str,
    pub max_ms: f64,
}

/// The latency columns of a measured run (ms), of which a target bounds one.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Latencies {
    pub avg: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

impl Target {
    /// Parses `p99<10ms` (also `p95`, `avg`, `max`; `ms` optional; spaces allowed); `None`
    /// for anything else ([`TARGET_FORM`] says what to write).
    pub fn parse(text: &str) -> Option<Target> {
        let (name, bound) = text.split_once('<')?;
        let (column, name) = match name.trim() {
            "p95" => ("lat_p95", "p95"),
            "p99" => ("lat_p99", "p99"),
            "avg" => ("lat_avg", "avg"),
            "max" => ("lat_max", "max"),
            _ => return None,
        };
        let bound = bound.trim();
        let number = bound.strip_suffix("ms").unwrap_or(bound).trim();
        let max_ms: f64 = number.parse().ok()?;
        (max_ms.is_finite() && max_ms > 0.0).then_some(Target {
            column,
            name,
            max_ms,
        })
    }

    /// The target as it is written (`p99<10ms`), which [`Target::parse`] reads back.
    pub fn spec(&self) -> String {
        format!("{}<{}ms", self.name, self.max_ms)
    }

    /// The value of `lat` the target bounds.
    pub fn of(&self, lat: &Latencies) -> Option<f64> {
        match self.column {
            "lat_p95" => lat.p95,
            "lat_avg" => lat.avg,
            "lat_max" => lat.max,
            _ => lat.p99,
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ≤ {} ms", self.name, self.max_ms)
    }
}

/// An error at a key: its path, whether the key itself (not its value) is meant, the message
/// and the help.
pub(super) type Report<'a> = &'a mut dyn FnMut(&[Seg], bool, String, Option<String>);

/// Checks `[capacity]` of `raw` and what the search needs of the rest of the suite; `None`
/// without the section or when something is wrong (each problem reported through `err`).
pub(super) fn check(raw: &RawSuite, err: Report) -> Option<Capacity> {
    let section = raw.capacity.as_ref()?;
    let path = |k: &str| [Seg::key("capacity"), Seg::key(k)];
    let mut ok = true;
    let mut bad = |p: &[Seg], key: bool, message: String, help: String| {
        err(p, key, message, Some(help));
        ok = false;
    };
    let target = Target::parse(&section.target);
    if target.is_none() {
        bad(
            &path("target"),
            false,
            format!("invalid capacity target `{}`", section.target),
            TARGET_FORM.into(),
        );
    }
    if !(section.min_rate.is_finite() && section.min_rate > 0.0) {
        bad(
            &path("min_rate"),
            false,
            format!(
                "capacity.min_rate must be above 0 (per second), not {}",
                section.min_rate
            ),
            "the lowest arrival rate worth trying, e.g. min_rate = 1".into(),
        );
    }
    if !(section.precision.is_finite() && section.precision > 0.0) {
        bad(
            &path("precision"),
            false,
            format!(
                "capacity.precision must be above 0 (% of the rate), not {}",
                section.precision
            ),
            "e.g. precision = 5: stop once the bracket is within 5 %".into(),
        );
    }
    let confirm = u32::try_from(section.confirm)
        .ok()
        .filter(|n| (1..=10_000).contains(n));
    if confirm.is_none() {
        bad(
            &path("confirm"),
            false,
            format!(
                "capacity.confirm must be between 1 and 10000, not {}",
                section.confirm
            ),
            "the repetitions of the rate found, e.g. confirm = 3".into(),
        );
    }
    if raw.matrix.contains_key("rate") {
        bad(
            &[Seg::key("matrix"), Seg::key("rate")],
            true,
            "[capacity] varies `rate` itself: `rate` cannot be a [matrix] axis".into(),
            "remove `rate` from [matrix] (or remove [capacity] to run the rates listed)".into(),
        );
    }
    if raw.variant.len() > 1 {
        bad(
            &[Seg::key("capacity")],
            true,
            format!(
                "[capacity] measures one configuration, the suite has {} [[variant]]s",
                raw.variant.len()
            ),
            "keep one [[variant]] (a suite per variant, each with its [capacity])".into(),
        );
    }
    if !raw.phases.is_empty() {
        bad(
            &[Seg::key("phases")],
            true,
            "[capacity] runs each probe at one rate for `time` seconds: `[[phases]]` (a \
             timeline of rates and threads) does not apply"
                .into(),
            "remove [[phases]] (or [capacity] to run the timeline)".into(),
        );
    }
    if raw.suite.repeat != Repeat::Count(1) {
        bad(
            &[Seg::key("suite"), Seg::key("repeat")],
            false,
            "[capacity] runs each probe once and repeats the rate found `confirm` times: \
             `repeat` does not apply"
                .into(),
            "remove `repeat` from [suite]; set capacity.confirm instead".into(),
        );
    }
    Some(Capacity {
        target: target?,
        min_rate: section.min_rate,
        precision: section.precision,
        confirm: confirm?,
    })
    .filter(|_| ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_with_or_without_ms_and_refuse_the_rest() {
        let t = Target::parse("p99<10ms").unwrap();
        assert_eq!((t.column, t.max_ms), ("lat_p99", 10.0));
        assert_eq!(Target::parse(" p95 < 2.5 ").unwrap().column, "lat_p95");
        assert_eq!(t.to_string(), "p99 ≤ 10 ms");
        assert_eq!(t.spec(), "p99<10ms");
        assert_eq!(Target::parse("avg<0.5ms").unwrap().spec(), "avg<0.5ms");
        for bad in [
            "p98<10ms",
            "p99>10",
            "p99<",
            "p99<-1ms",
            "p99<nanms",
            "p99<infms",
            "10ms",
        ] {
            assert_eq!(Target::parse(bad), None, "{bad}");
        }
        let lat = Latencies {
            avg: Some(1.0),
            p95: Some(2.0),
            p99: Some(3.0),
            max: None,
        };
        assert_eq!(Target::parse("p95<1").unwrap().of(&lat), Some(2.0));
        assert_eq!(Target::parse("max<1").unwrap().of(&lat), None);
    }
}
