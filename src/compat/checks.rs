//! sysbench 1.0.20's own value checks and its words for them, so a line with a value out of
//! range is refused with sysbench's first line (`FATAL: Invalid value for --threads: 0.`), on
//! its stream (stdout, its logger) and with its exit code (1).
//!
//! sbsuite decides *whether* a value is refused (its option kinds and engines check at least
//! what sysbench checks); this table only says how sysbench words the refusal of each option it
//! checks itself, captured from sysbench 1.0.20 (`sysbench cpu --threads=0 run` and so on).
//! Options sysbench does not check (it hangs or crashes on `--thread-locks=0`, runs on with
//! `--time=-1`) keep sbsuite's own refusal. The general options are checked before sysbench
//! prints its banner, a test's options after it.

use crate::value::parse_size;

/// How sysbench's option parser reads a value before its check sees it.
#[derive(Clone, Copy)]
enum Read {
    /// An integer; the empty value reads as 0, anything else not an integer is refused by the
    /// parser itself (`Invalid value for the 'X' option`, on stderr).
    Int,
    /// A size: what does not read as one is 0.
    Size,
    /// A number, printed with six decimals (`%f`).
    Float,
    /// Any text.
    Text,
    /// A list of whole seconds: sysbench names the first item that is not one.
    Seconds,
}

/// One option sysbench checks itself.
struct Check {
    /// The option, `_` form.
    option: &'static str,
    read: Read,
    /// sysbench's line before and after the value as it read it.
    before: &'static str,
    after: &'static str,
    /// A value sbsuite's parser accepts but sysbench's check refuses (sbsuite's engine refuses
    /// it too, with its own explanation): `None` when the parser refuses every such value.
    refuses: Option<fn(&str) -> bool>,
}

const GENERAL_CHECKS: &[Check] = &[
    // sysbench ends this one with an empty line.
    check(
        "threads",
        Read::Int,
        "FATAL: Invalid value for --threads: ",
        ".\n",
    ),
    check(
        "percentile",
        Read::Int,
        "FATAL: Invalid value for --percentile: ",
        "",
    ),
    check("verbosity", Read::Int, "Invalid value for verbosity: ", ""),
    check(
        "rand_type",
        Read::Text,
        "FATAL: Invalid random numbers distribution: ",
        ".",
    ),
    Check {
        refuses: Some(|v| {
            !(v.is_empty() || v.eq_ignore_ascii_case("off") || v.parse::<u64>().is_ok())
                && v.strip_suffix('%')
                    .is_none_or(|p| p.parse::<f64>().is_err())
        }),
        ..check(
            "forced_shutdown",
            Read::Text,
            "FATAL: Invalid value for --forced-shutdown: '",
            "'",
        )
    },
    Check {
        refuses: Some(|v| {
            v.split(',')
                .any(|i| !i.trim().is_empty() && i.trim().parse::<u64>().is_err())
        }),
        ..check(
            "report_checkpoints",
            Read::Seconds,
            "FATAL: Invalid value for --report-checkpoints: '",
            "'",
        )
    },
    Check {
        refuses: Some(|v| parse_size(v).unwrap_or(0) == 0),
        ..check(
            "thread_stack_size",
            Read::Size,
            "FATAL: Invalid value for thread-stack-size: ",
            // sysbench ends this one with an empty line too.
            ".\n",
        )
    },
];

const TEST_CHECKS: &[Check] = &[
    check(
        "cpu_max_prime",
        Read::Int,
        "FATAL: Invalid value of cpu-max-prime: ",
        ".",
    ),
    check(
        "file_test_mode",
        Read::Text,
        "FATAL: Invalid IO operations mode: ",
        ".",
    ),
    check("file_io_mode", Read::Text, "FATAL: unknown I/O mode: ", ""),
    check(
        "file_fsync_mode",
        Read::Text,
        "FATAL: Invalid fsync mode: ",
        ".",
    ),
    check(
        "file_extra_flags",
        Read::Text,
        "FATAL: Invalid value for file-extra-flags: ",
        "",
    ),
    check(
        "file_num",
        Read::Int,
        "FATAL: Invalid value for file-num: ",
        "",
    ),
    Check {
        refuses: Some(|v| parse_size(v).unwrap_or(0) == 0),
        ..check(
            "file_block_size",
            Read::Size,
            "FATAL: Invalid value for file-block-size: ",
            ".",
        )
    },
    Check {
        refuses: Some(|v| parse_size(v).unwrap_or(0) == 0),
        ..check(
            "file_total_size",
            Read::Size,
            "FATAL: Invalid value for file-total-size: ",
            "",
        )
    },
    check(
        "file_rw_ratio",
        Read::Float,
        "FATAL: Invalid value for --file-rw-ratio: ",
        ".",
    ),
    check(
        "file_merged_requests",
        Read::Int,
        "FATAL: Invalid value for file-merged-requests: ",
        ".",
    ),
    check(
        "file_fsync_freq",
        Read::Int,
        "FATAL: Invalid value for file-fsync-freq: ",
        ".",
    ),
    check(
        "memory_oper",
        Read::Text,
        "FATAL: Invalid value for memory-oper: ",
        "",
    ),
    check(
        "memory_scope",
        Read::Text,
        "FATAL: Invalid value for memory-scope: ",
        "",
    ),
    check(
        "memory_access_mode",
        Read::Text,
        "FATAL: Invalid value for memory-access-mode: ",
        "",
    ),
    Check {
        refuses: Some(|v| parse_size(v).is_ok_and(|n| n < 8 || !n.is_power_of_two())),
        // sysbench's memory test names the value as typed (`-1`, `abc`), not as read.
        ..check(
            "memory_block_size",
            Read::Text,
            "FATAL: Invalid value for memory-block-size: ",
            "",
        )
    },
];

const fn check(
    option: &'static str,
    read: Read,
    before: &'static str,
    after: &'static str,
) -> Check {
    Check {
        option,
        read,
        before,
        after,
        refuses: None,
    }
}

/// sysbench's refusal of a value.
#[derive(Debug, PartialEq, Eq)]
pub struct Refused {
    /// A general option: sysbench refuses it before its banner.
    pub general: bool,
    /// sysbench's line (it may end in `\n`: sysbench then prints an empty line after it).
    pub line: String,
}

impl Check {
    /// sysbench's line for `value` as typed, or `None` when sysbench's parser itself refuses
    /// the text (its `Invalid value for the 'X' option`, sbsuite's usual refusal).
    fn line(&self, value: &str) -> Option<String> {
        let v = value.trim();
        let shown = match self.read {
            Read::Int if v.is_empty() => "0".to_string(),
            Read::Int => v.parse::<i64>().ok()?.to_string(),
            Read::Size => parse_size(v).unwrap_or(0).to_string(),
            Read::Float => format!("{:.6}", v.parse::<f64>().ok()?),
            Read::Text => value.to_string(),
            Read::Seconds => value
                .split(',')
                .map(str::trim)
                .find(|i| !i.is_empty() && i.parse::<u64>().is_err())
                .unwrap_or(value)
                .to_string(),
        };
        Some(format!("{}{shown}{}", self.before, self.after))
    }
}

fn find(option: &str) -> Option<(&'static Check, bool)> {
    let general = GENERAL_CHECKS.iter().find(|c| c.option == option);
    general.map(|c| (c, true)).or_else(|| {
        TEST_CHECKS
            .iter()
            .find(|c| c.option == option)
            .map(|c| (c, false))
    })
}

/// sysbench's words for refusing `value` of `option`, which sbsuite's parser refused: `None`
/// when sysbench does not check that option itself, or its parser refuses the text first.
pub fn refused_value(option: &str, value: &str) -> Option<Refused> {
    let (c, general) = find(option)?;
    c.line(value).map(|line| Refused { general, line })
}

/// The first option of `given` (`(option, value as typed)`, in command-line order) whose value
/// sysbench's own check refuses, as sysbench finds it: general options first, then the test's.
/// Only for values sbsuite's parser accepted (those its engine refuses later).
pub fn first_refused<'a>(
    given: impl Iterator<Item = (&'a str, &'a str)> + Clone,
) -> Option<Refused> {
    let hit = |general: bool| {
        given.clone().find_map(|(option, value)| {
            let (c, g) = find(option)?;
            (g == general && c.refuses.is_some_and(|r| r(value.trim())))
                .then(|| c.line(value))
                .flatten()
                .map(|line| Refused { general, line })
        })
    };
    hit(true).or_else(|| hit(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_in_sysbench_words() {
        let line = |o, v| refused_value(o, v).map(|r| (r.general, r.line));
        assert_eq!(
            line("threads", "0"),
            Some((true, "FATAL: Invalid value for --threads: 0.\n".into()))
        );
        assert_eq!(
            line("threads", ""),
            Some((true, "FATAL: Invalid value for --threads: 0.\n".into()))
        );
        // sysbench's parser refuses these itself.
        assert_eq!(line("threads", "abc"), None);
        assert_eq!(line("percentile", "99.5"), None);
        assert_eq!(
            line("file_rw_ratio", "-1"),
            Some((
                false,
                "FATAL: Invalid value for --file-rw-ratio: -1.000000.".into()
            ))
        );
        assert_eq!(
            line("file_block_size", "-1"),
            Some((false, "FATAL: Invalid value for file-block-size: 0.".into()))
        );
        assert_eq!(line("time", "-1"), None, "sysbench does not check --time");
    }

    #[test]
    fn general_checks_come_first() {
        let given = [
            ("memory_block_size", "3"),
            ("report_checkpoints", "5,x"),
            ("thread_stack_size", "64K"),
        ];
        assert_eq!(
            first_refused(given.iter().copied()).map(|r| r.line),
            Some("FATAL: Invalid value for --report-checkpoints: 'x'".into())
        );
        assert_eq!(
            first_refused(given[..1].iter().copied()).map(|r| r.line),
            Some("FATAL: Invalid value for memory-block-size: 3".into())
        );
        assert_eq!(first_refused(given[2..].iter().copied()), None);
        assert_eq!(
            first_refused([("forced_shutdown", "5%"), ("report_checkpoints", "0")].into_iter()),
            None,
            "sysbench accepts both"
        );
    }
}
