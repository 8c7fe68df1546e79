//! `sbsuite sysbench --help` and `sbsuite sysbench TEST help`, in sysbench 1.0.20's shape.
//!
//! Tools and wrapper scripts scrape sysbench's help for option names and defaults, so the layout
//! here is sysbench's (#14): the same headings in the same places, the same option names spelt
//! as sysbench spells them (`--file-num` for its compiled-in tests, `--table_size` for its Lua
//! scripts, sorted by name as sysbench sorts a script's options), in sysbench's order, each
//! line `  --name=TYPE` padded to the widest of its block, then a description and `[default]`.
//!
//! What is sbsuite's: every description (our words, saying what sbsuite does), every default
//! (read from the option specs, so it is the value a run uses), and the options sysbench does
//! not have, which follow sysbench's list under [`EXTENSIONS`]. An option sysbench lists and
//! sbsuite does not act on keeps its place and says so (ignored with a warning, or refused).
//!
//! The tables below are facts about sysbench 1.0.20 (which options it lists, where); facts about
//! an option come from its [`OptSpec`], or, for the options that have none here (sysbench's own
//! switches, the connection options a target is built from), from [`unspecced`].

use crate::engine::Catalog;
use crate::engine::config::GENERAL;
use crate::engine::option::{Kind, OptSpec};
use crate::engine::spec::WorkloadSpec;
use crate::value::Value;

use super::args::{self, placeholder};
use super::target;

/// sysbench 1.0.20's compiled-in tests, in the order its `--help` lists them. Every other test
/// is a Lua script to sysbench, whose help spells options with `_` and sorts them by name.
const C_TESTS: &[&str] = &["fileio", "cpu", "memory", "threads", "mutex"];

/// The heading of the options sysbench 1.0.20 does not have, after sysbench's own.
const EXTENSIONS: &str = "sbsuite extensions";

/// Options sbsuite has and sysbench 1.0.20 does not (general, per test, and the switches of
/// `sbsuite sysbench`): listed under [`EXTENSIONS`], never among sysbench's.
const SBSUITE_ONLY: &[&str] = &[
    "warmup_time",
    "max_retries",
    "lua_memory_limit",
    "rand_zipfian_exp",
    "sbsuite_dry_run",
    "sbsuite_results",
    "pgsql_sslmode",
    "file_dir",
    "reconnect",
    "prewarm",
    "create_table_options",
    "connect",
    "idle_connections",
    "max_threads",
    "client_threads",
];

/// Options of sysbench's `oltp_common.lua` that sbsuite's OLTP tests do not have.
const OLTP_COMMON_ONLY: &[&str] = &["pgsql_variant"];

/// sysbench 1.0.20's `General options:` block.
const GENERAL_OPTIONS: &[&str] = &[
    "threads",
    "events",
    "time",
    "forced_shutdown",
    "thread_stack_size",
    "rate",
    "report_interval",
    "report_checkpoints",
    "debug",
    "validate",
    "help",
    "version",
    "config_file",
    "tx_rate",
    "max_requests",
    "max_time",
    "num_threads",
];

/// sysbench 1.0.20's `Pseudo-Random Numbers Generator options:` block.
const RNG_OPTIONS: &[&str] = &[
    "rand_type",
    "rand_spec_iter",
    "rand_spec_pct",
    "rand_spec_res",
    "rand_seed",
    "rand_pareto_h",
];

/// sysbench 1.0.20's `Log options:` block, and the untitled block after it.
const LOG_OPTIONS: &[&str] = &["verbosity"];
const REPORT_OPTIONS: &[&str] = &["percentile", "histogram"];

/// sysbench 1.0.20's `General database options:` block and its two driver blocks.
const DB_OPTIONS: &[&str] = &["db_driver", "db_ps_mode", "db_debug"];
const MYSQL_OPTIONS: &[&str] = &[
    "mysql_host",
    "mysql_port",
    "mysql_socket",
    "mysql_user",
    "mysql_password",
    "mysql_db",
    "mysql_ssl",
    "mysql_ssl_cipher",
    "mysql_compression",
    "mysql_debug",
    "mysql_ignore_errors",
    "mysql_dry_run",
];
const PGSQL_OPTIONS: &[&str] = &[
    "pgsql_host",
    "pgsql_port",
    "pgsql_user",
    "pgsql_password",
    "pgsql_db",
];

/// How a test's help spells option names: sysbench's C tests with `-`, its Lua scripts with `_`.
#[derive(Clone, Copy)]
enum Spelling {
    Dashes,
    Underscores,
}

/// What the help says about one option: the text after `--name` (`=N`, `[=on|off]`), the
/// default (`None`: no `[…]`), and the description.
struct Entry {
    value: String,
    default: Option<String>,
    help: String,
}

impl Entry {
    fn new(kind: Kind, default: Option<&str>, help: impl Into<String>) -> Self {
        Entry {
            value: value_column(&kind),
            default: default.map(str::to_string),
            help: help.into(),
        }
    }
}

/// `[=on|off]` for a boolean, `=TYPE` otherwise, as sysbench writes them.
fn value_column(kind: &Kind) -> String {
    match kind {
        Kind::Bool => "[=on|off]".into(),
        k => format!("={}", placeholder(k)),
    }
}

/// An option's entry from its spec: the default as sysbench prints it (sizes as written,
/// lists comma-separated) and an enum's choices in braces after the description.
fn from_spec(o: &OptSpec) -> Entry {
    let default = match o.default_value() {
        Some(Value::Int(_)) if matches!(o.kind, Kind::Size) => o.default.map(str::to_string),
        Some(v) => Some(v.to_string()),
        None => None,
    };
    let choices = match o.kind {
        Kind::Enum(c) => format!(" {{{}}}", c.join(",")),
        _ => String::new(),
    };
    Entry {
        value: value_column(&o.kind),
        default,
        help: format!("{}{choices}", o.help),
    }
}

/// The entries of the options that have no [`OptSpec`]: sysbench's own switches, the
/// connection options (their defaults are [`target::from_sysbench`]'s), and the ones sbsuite
/// lists in sysbench's place without having them.
fn unspecced(name: &str) -> Option<Entry> {
    const ANY: Kind = Kind::Int {
        min: 0,
        max: i64::MAX,
    };
    let list = Kind::List(None);
    // sysbench's list: what a command line without --mysql-ignore-errors gets.
    let mysql_ignore_default = target::mysql_ignore_default()
        .codes()
        .unwrap_or_default()
        .join(",");
    let entry = match name {
        "help" => Entry::new(Kind::Bool, Some("off"), "print the option list and exit"),
        "version" => Entry::new(Kind::Bool, Some("off"), "print the version line and exit"),
        "config_file" => Entry {
            value: "=FILENAME".into(),
            default: None,
            help: "read `name=value` lines from this file as options given before all others"
                .into(),
        },
        "db_driver" => Entry::new(
            Kind::Str,
            Some("mysql"),
            "database driver of the OLTP tests: mysql (also MariaDB) or pgsql",
        ),
        "db_ps_mode" => Entry::new(
            Kind::Str,
            Some("auto"),
            "auto prepares statements on the server, disable sends them as plain text {auto,disable}",
        ),
        "mysql_host" => Entry::new(
            list,
            Some(target::DEFAULT_HOST),
            "server host names; with several, threads take turns over them",
        ),
        "mysql_port" => Entry::new(
            list,
            Some(target::MYSQL_DEFAULT_PORT),
            "server ports, combined with every host",
        ),
        "mysql_socket" => Entry::new(
            list,
            None,
            "Unix socket paths; without one, `localhost` means the local server's usual socket",
        ),
        "mysql_user" | "pgsql_user" => {
            Entry::new(Kind::Str, Some(target::DEFAULT_USER), "user to log in as")
        }
        "mysql_password" | "pgsql_password" => {
            Entry::new(Kind::Str, Some(""), "password of that user")
        }
        "mysql_db" | "pgsql_db" => Entry::new(
            Kind::Str,
            Some(target::DEFAULT_DATABASE),
            "database that holds the test tables",
        ),
        "mysql_ssl" => Entry::new(
            Kind::Bool,
            Some("off"),
            "connect over TLS (rustls; `required`, `verify_ca` and `verify_identity` work too)",
        ),
        "mysql_ssl_cipher" | "mysql_debug" | "db_debug" => {
            let reason = args::ignored(name).unwrap_or_default();
            let (kind, default) = match name {
                "mysql_ssl_cipher" => (Kind::Str, ""),
                _ => (Kind::Bool, "off"),
            };
            Entry::new(
                kind,
                Some(default),
                format!("accepted and ignored with a warning: {reason}"),
            )
        }
        "mysql_compression" => Entry::new(
            Kind::Bool,
            Some("off"),
            "compress the client/server protocol",
        ),
        "mysql_ignore_errors" => Entry::new(
            list,
            Some(&mysql_ignore_default),
            "server error codes that roll back and retry the event instead of failing the run \
             (counted as errors), or `all`",
        ),
        "mysql_dry_run" => Entry::new(
            Kind::Bool,
            Some("off"),
            "send nothing to the server: every statement counts as succeeded",
        ),
        "pgsql_host" => Entry::new(
            Kind::Str,
            Some(target::DEFAULT_HOST),
            "server host; `localhost` is the local socket directory when there is one, a path \
             starting with / a socket directory",
        ),
        "pgsql_port" => Entry::new(ANY, Some(target::PGSQL_DEFAULT_PORT), "server port"),
        "pgsql_sslmode" => Entry::new(
            Kind::Str,
            None,
            "TLS mode as libpq names them (disable, prefer, require, verify-ca, verify-full); \
             default: PGSSLMODE, else prefer",
        ),
        "pgsql_variant" => Entry::new(
            Kind::Str,
            None,
            "refused: sbsuite has no PostgreSQL variants (Redshift is not supported)",
        ),
        "sbsuite_dry_run" => Entry::new(
            Kind::Bool,
            Some("off"),
            "print the test, command and resolved options in suite-file syntax instead of running",
        ),
        "sbsuite_results" => Entry {
            value: "=DIR".into(),
            default: None,
            help: "also store the run's results under DIR, as `sbsuite run` does (run only)".into(),
        },
        _ => {
            let &(_, option, above) = args::DEPRECATED.iter().find(|d| d.0 == name)?;
            let kind = Catalog::builtin().any_option(option)?.kind;
            Entry::new(
                kind,
                Some(&above.to_string()),
                format!(
                    "old name of --{}, taking effect only above {above}",
                    option.replace('_', "-")
                ),
            )
        }
    };
    Some(entry)
}

/// One option's line in two columns: `--name=TYPE` and the description with `[default]`.
/// `workload` is the test whose help this is: a Lua script's own options are found there.
fn row(name: &str, spelling: Spelling, workload: Option<&WorkloadSpec>) -> (String, String) {
    let entry = Catalog::builtin()
        .any_option(name)
        .or_else(|| workload?.option(name))
        .map(from_spec)
        .or_else(|| unspecced(name))
        .expect("every listed option has an entry (tested)");
    let shown = match spelling {
        Spelling::Dashes => name.replace('_', "-"),
        Spelling::Underscores => name.to_string(),
    };
    let default = entry.default.map(|d| format!(" [{d}]")).unwrap_or_default();
    (
        format!("--{shown}{}", entry.value),
        format!("{}{default}", entry.help),
    )
}

/// A block of option lines, the left column padded to the block's widest, as sysbench aligns.
fn block(names: &[&str], spelling: Spelling, workload: Option<&WorkloadSpec>) -> String {
    let rows: Vec<(String, String)> = names.iter().map(|n| row(n, spelling, workload)).collect();
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    rows.iter()
        .map(|(left, right)| format!("  {left:<width$} {right}\n"))
        .collect()
}

/// `sbsuite sysbench --help`: sysbench 1.0.20's sections in its order (no banner, as sysbench),
/// then sbsuite's: its extensions, the sysbench 0.4/0.5 forms it accepts, and the tests that
/// are Lua scripts in sysbench.
pub fn general() -> String {
    let d = Spelling::Dashes;
    let mut s = String::from(
        "Usage:\n  sbsuite sysbench [options]... [testname] [command]\n\n\
         Commands implemented by most tests: prepare run cleanup help\n\n",
    );
    s += &format!("General options:\n{}\n", block(GENERAL_OPTIONS, d, None));
    s += &format!(
        "Pseudo-Random Numbers Generator options:\n{}\n",
        block(RNG_OPTIONS, d, None)
    );
    s += &format!(
        "Log options:\n{}\n{}\n",
        block(LOG_OPTIONS, d, None),
        block(REPORT_OPTIONS, d, None)
    );
    s += &format!(
        "General database options:\n\n{}\n\n",
        block(DB_OPTIONS, d, None)
    );
    s += "Compiled-in database drivers:\n  mysql - MySQL and MariaDB (native client)\n  \
          pgsql - PostgreSQL (native client)\n\n";
    s += &format!("mysql options:\n{}\n", block(MYSQL_OPTIONS, d, None));
    s += &format!("pgsql options:\n{}\n", block(PGSQL_OPTIONS, d, None));
    s += "Compiled-in tests:\n";
    let summary = |name: &str| Catalog::builtin().workload(name).map_or("", |w| w.summary);
    for t in C_TESTS {
        s += &format!("  {t} - {}\n", summary(t));
    }
    s += "\nSee 'sbsuite sysbench <testname> help' for the options of one test.\n\n";

    let general_only: Vec<&str> = SBSUITE_ONLY
        .iter()
        .copied()
        .filter(|n| {
            GENERAL.iter().any(|o| o.name == *n) || Catalog::builtin().any_option(n).is_none()
        })
        .collect();
    s += &format!("{EXTENSIONS}:\n{}\n", block(&general_only, d, None));

    s += "sysbench 0.4/0.5 forms (accepted with a warning):\n";
    let mut aliases: Vec<(String, String)> = args::RENAMED
        .iter()
        .map(|(a, t)| (format!("--{}", a.replace('_', "-")), t.to_string()))
        .collect();
    aliases.push((
        "--init-rng, --rand-init, --seed-rng".into(),
        "rand_seed".into(),
    ));
    aliases.push(("--batch, --batch-delay".into(), "report_interval".into()));
    let width = aliases.iter().map(|a| a.0.len()).max().unwrap_or(0);
    for (alias, target) in aliases {
        s += &format!("  {alias:<width$} same as --{}\n", target.replace('_', "-"));
    }
    s += "\nBuilt-in tests that are Lua scripts in sysbench (name or path, e.g. oltp_read_write.lua):\n";
    for w in Catalog::builtin()
        .all()
        .filter(|w| !C_TESTS.contains(&w.name))
    {
        s += &format!("  {} - {}\n", w.name, w.summary);
    }
    s.push('\n');
    s
}

/// The options sysbench 1.0.20's help lists for `workload`, in its order, and sbsuite's extra
/// ones. A Lua script's list is `oltp_common.lua`'s and its own, sorted by name.
fn test_options(workload: &WorkloadSpec) -> (Vec<&'static str>, Vec<&'static str>) {
    let (mut theirs, ours): (Vec<&str>, Vec<&str>) = workload
        .options
        .iter()
        .flat_map(|g| g.iter())
        .map(|o| o.name)
        .partition(|n| !SBSUITE_ONLY.contains(n));
    if !C_TESTS.contains(&workload.name) {
        if workload.data.family == Some(crate::engine::oltp::DATA_FAMILY) {
            theirs.extend(OLTP_COMMON_ONLY);
        }
        theirs.sort_unstable();
    }
    (theirs, ours)
}

/// `sbsuite sysbench TEST help` after the banner: `TEST options:` (the test as typed, without
/// its directory, as sysbench heads it) with sysbench's list, then sbsuite's extra options.
/// `None` for a script without options, which sysbench has no help for (`bulk_insert`).
pub fn test(test: &str, workload: &WorkloadSpec) -> Option<String> {
    let (theirs, ours) = test_options(workload);
    let c = C_TESTS.contains(&workload.name);
    if !c && theirs.is_empty() && ours.is_empty() {
        return None;
    }
    let spelling = if c {
        Spelling::Dashes
    } else {
        Spelling::Underscores
    };
    let heading = test.rsplit('/').next().unwrap_or(test);
    let mut s = format!(
        "{heading} options:\n{}\n",
        block(&theirs, spelling, Some(workload))
    );
    if !ours.is_empty() {
        s += &format!(
            "{EXTENSIONS}:\n{}\n",
            block(&ours, spelling, Some(workload))
        );
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every option of the layout has an entry, and every option sbsuite has is either in
    /// sysbench's layout or listed as an extension: none is left out of the help.
    #[test]
    fn every_option_is_listed_once() {
        let layout: Vec<&str> = [
            GENERAL_OPTIONS,
            RNG_OPTIONS,
            LOG_OPTIONS,
            REPORT_OPTIONS,
            DB_OPTIONS,
            MYSQL_OPTIONS,
            PGSQL_OPTIONS,
            SBSUITE_ONLY,
            OLTP_COMMON_ONLY,
        ]
        .concat();
        for name in &layout {
            let _ = row(name, Spelling::Dashes, None);
        }
        for o in GENERAL {
            assert!(
                layout.contains(&o.name) || args::NOT_SYSBENCH.contains(&o.name),
                "{} is in no help block",
                o.name
            );
        }
        let text = general();
        for o in GENERAL {
            let shown = format!("  --{}", o.name.replace('_', "-"));
            if args::NOT_SYSBENCH.contains(&o.name) {
                assert!(!text.contains(&shown), "{shown} is not an option here");
                continue;
            }
            assert_eq!(
                text.lines()
                    .filter(|l| l.starts_with(&format!("{shown}="))
                        || l.starts_with(&format!("{shown}[")))
                    .count(),
                1,
                "{shown}"
            );
        }
    }

    /// What the help says about the options sbsuite does not act on is what the parser does.
    #[test]
    fn ignored_and_refused_options_are_described_as_they_are_treated() {
        let line =
            |words: &[&str]| -> Vec<String> { words.iter().map(|w| w.to_string()).collect() };
        for name in OLTP_COMMON_ONLY {
            assert!(
                Catalog::builtin().any_option(name).is_none(),
                "{name} is implemented now"
            );
            let option = format!("--{name}=x");
            assert!(args::parse(&line(&["oltp_read_write", &option, "run"])).is_err());
            assert!(
                row(name, Spelling::Underscores, None)
                    .1
                    .starts_with("refused: ")
            );
        }
        for name in MYSQL_OPTIONS.iter().chain(DB_OPTIONS) {
            let described = row(name, Spelling::Dashes, None)
                .1
                .starts_with("accepted and ignored");
            assert_eq!(described, args::ignored(name).is_some(), "{name}");
        }
    }

    #[test]
    fn lua_scripts_list_underscored_sorted_names_and_extensions_after() {
        let w = Catalog::builtin().workload("select_random_points").unwrap();
        let text = test("/usr/share/sysbench/select_random_points.lua", w).unwrap();
        assert!(
            text.starts_with("select_random_points.lua options:\n  --auto_inc[=on|off] "),
            "{text}"
        );
        let names: Vec<&str> = text
            .lines()
            .take_while(|l| !l.is_empty())
            .filter_map(|l| l.strip_prefix("  --"))
            .map(|l| l.split(['=', '[']).next().unwrap())
            .collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        assert!(names.contains(&"random_points") && names.contains(&"pgsql_variant"));
        let ext = text
            .split(&format!("\n{EXTENSIONS}:\n"))
            .nth(1)
            .expect(EXTENSIONS);
        assert!(ext.starts_with("  --reconnect=N "), "{ext}");
        assert!(
            test(
                "bulk_insert",
                Catalog::builtin().workload("bulk_insert").unwrap()
            )
            .is_none()
        );
    }
}
