//! A script's options the sysbench way: the `help` layout of its declared options, their
//! mapping onto sbsuite's typed options ([`Kind`], defaults as [`Value`]s, so suite matrices
//! check them like any workload's), and `sysbench.opt` — every option sysbench 1.0.20 exports,
//! under sysbench's names and Lua types — built from a step's resolved options and target.
//!
//! Why the general and database options are all here with sysbench's defaults: scripts read
//! them (`sysbench.opt.threads`, `sysbench.opt.db_driver == "pgsql"`, `mysql_storage_engine`),
//! and a script written for sysbench expects each of them to exist with sysbench's type
//! (`mysql_host` is a list, `pgsql_port` a number), whatever sbsuite calls them.

use std::cell::RefCell;

use super::ctx::Exports;
use super::{ArgType, DeclaredOpt, OptVal, OptValues, Script};
use crate::db::{PsMode, SslMode, Target};
use crate::engine::option::Kind;
use crate::value::{Options, Value, parse_size};

/// The suffix `help` prints after `--name` for a type.
fn suffix(kind: ArgType) -> &'static str {
    match kind {
        ArgType::Bool => "[=on|off]",
        ArgType::Int | ArgType::Double => "=N",
        ArgType::Size => "=SIZE",
        ArgType::String | ArgType::Null => "=STRING",
        ArgType::List => "=[LIST,...]",
        ArgType::File => "=FILENAME",
    }
}

/// The option lines of `help` and `sysbench.cmdline.print_test_options()`: `  --name` and its
/// suffix left-justified to a common width, the description, ` [default]`; a blank line after.
pub fn options_list(opts: &[DeclaredOpt]) -> String {
    let width = opts
        .iter()
        .map(|o| o.name.len() + suffix(o.kind).len())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for o in opts {
        let pad = width - o.name.len() + 1;
        out.push_str(&format!("  --{}{:<pad$}{}", o.name, suffix(o.kind), o.desc));
        if let Some(d) = &o.default {
            out.push_str(&format!(" [{d}]"));
        }
        out.push('\n');
    }
    out.push('\n');
    out
}

/// sysbench's help block for the script's options: `<sname> options:` and [`options_list`].
pub fn help_text(script: &Script) -> String {
    format!(
        "{} options:\n{}",
        script.sname,
        options_list(&script.options)
    )
}

thread_local! {
    /// The option lines of the script whose state was last built on this thread, printed by
    /// `sb_print_test_options` (a C function: no handle to the script but the thread).
    static TEST_OPTIONS: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Makes `script`'s options those `sysbench.cmdline.print_test_options()` prints on this thread.
pub(super) fn set_test_options(script: &Script) {
    TEST_OPTIONS.with_borrow_mut(|t| *t = options_list(&script.options));
}

/// `sysbench.cmdline.print_test_options()`.
#[unsafe(no_mangle)]
pub extern "C" fn sb_print_test_options() {
    TEST_OPTIONS.with_borrow(|t| super::ctx::write_stdout(t.as_bytes()));
}

pub static EXPORTS: Exports = Exports(&[sb_print_test_options as *const ()]);

/// The sbsuite type of a script option.
pub fn kind_of(o: &DeclaredOpt) -> Kind {
    match o.kind {
        ArgType::Int => Kind::Int {
            min: i64::from(i32::MIN),
            max: i64::from(i32::MAX),
        },
        ArgType::Double => Kind::Float {
            min: f64::NEG_INFINITY,
            max: f64::INFINITY,
        },
        ArgType::Size => Kind::Size,
        ArgType::Bool => Kind::Bool,
        ArgType::String | ArgType::File | ArgType::Null => Kind::Str,
        ArgType::List => Kind::List(None),
    }
}

/// The default of a script option as sysbench exports it when the option is not given: a
/// BOOL without default is on, numbers 0, a string `""`, a list empty. A default text that
/// does not parse as its type (`2.5` for an INT) stays a string, so that checking it with
/// [`kind_of`] fails as sysbench's export does.
pub fn default_value(o: &DeclaredOpt) -> Option<Value> {
    let text = o.default.as_deref();
    let raw = |t: &str| Value::Str(t.to_string());
    Some(match (o.kind, text) {
        (ArgType::Null, _) => return None,
        (ArgType::Bool, None) => Value::Bool(true),
        (ArgType::Bool, Some(t)) => match t {
            "on" => Value::Bool(true),
            "off" => Value::Bool(false),
            t => crate::value::parse_bool(t).map_or_else(|| raw(t), Value::Bool),
        },
        (ArgType::Int | ArgType::Size, None) => Value::Int(0),
        (ArgType::Int, Some(t)) => t
            .parse::<i32>()
            .map_or_else(|_| raw(t), |i| Value::Int(i64::from(i))),
        (ArgType::Size, Some(t)) => match parse_size(t).map(i64::try_from) {
            Ok(Ok(n)) => Value::Int(n),
            _ => raw(t),
        },
        (ArgType::Double, None) => Value::Float(0.0),
        (ArgType::Double, Some(t)) => t.parse::<f64>().map_or_else(|_| raw(t), Value::Float),
        (ArgType::String | ArgType::File, t) => raw(t.unwrap_or("")),
        (ArgType::List, t) => Value::List(split_list(t.unwrap_or("")).map(|s| raw(&s)).collect()),
    })
}

/// A LIST's items: split on `,`, empty items dropped (sysbench's parsing).
fn split_list(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// An option value in sysbench's Lua type for `kind`.
fn to_opt(kind: ArgType, v: &Value) -> OptVal {
    match kind {
        ArgType::Bool => OptVal::Bool(match v {
            Value::Bool(b) => *b,
            Value::Str(s) => crate::value::parse_bool(s).unwrap_or(false),
            other => other.as_f64().is_some_and(|x| x != 0.0),
        }),
        ArgType::Int | ArgType::Double | ArgType::Size => OptVal::Number(match v {
            Value::Str(s) => s.trim().parse().unwrap_or(0.0),
            Value::Bool(b) => f64::from(u8::from(*b)),
            other => other.as_f64().unwrap_or(0.0),
        }),
        ArgType::List => OptVal::List(match v {
            Value::List(items) => items.iter().map(Value::to_string).collect(),
            Value::Str(s) => split_list(s).collect(),
            other => vec![other.to_string()],
        }),
        ArgType::String | ArgType::File | ArgType::Null => OptVal::Str(v.to_string()),
    }
}

/// sysbench 1.0.20's general options: name, type, default as sysbench exports it. The values
/// of those sbsuite also has come from the step's options.
const GENERAL: &[(&str, ArgType, &str)] = &[
    ("threads", ArgType::Int, "1"),
    ("events", ArgType::Int, "0"),
    ("time", ArgType::Int, "10"),
    ("forced_shutdown", ArgType::String, "off"),
    ("thread_stack_size", ArgType::Size, "65536"),
    ("rate", ArgType::Int, "0"),
    ("report_interval", ArgType::Int, "0"),
    ("report_checkpoints", ArgType::List, ""),
    ("debug", ArgType::Bool, "off"),
    ("validate", ArgType::Bool, "off"),
    ("help", ArgType::Bool, "off"),
    ("version", ArgType::Bool, "off"),
    // Deprecated aliases keep their own (default) values in sysbench.
    ("tx_rate", ArgType::Int, "0"),
    ("max_requests", ArgType::Int, "0"),
    ("max_time", ArgType::Int, "0"),
    ("num_threads", ArgType::Int, "1"),
    ("rand_type", ArgType::String, "special"),
    ("rand_spec_iter", ArgType::Int, "12"),
    ("rand_spec_pct", ArgType::Int, "1"),
    ("rand_spec_res", ArgType::Int, "75"),
    ("rand_seed", ArgType::Int, "0"),
    ("rand_pareto_h", ArgType::Double, "0.2"),
    ("verbosity", ArgType::Int, "3"),
    ("percentile", ArgType::Int, "95"),
    ("histogram", ArgType::Bool, "off"),
];

/// `sysbench.opt` for one step: sysbench's general options (the step's values where sbsuite
/// has the option), the database options of `target` under sysbench's `db_*`, `mysql_*` and
/// `pgsql_*` names (the other driver's at sysbench's defaults), then the script's own options
/// (given value, else default; FILE options are not exported, as in sysbench). A script that
/// declares no option gets every other option of `options` as a string.
pub fn values(script: &Script, options: &Options, target: &Target) -> OptValues {
    let mut out = OptValues::new();
    for &(name, kind, default) in GENERAL {
        let v = options.get(name).map_or_else(
            || to_opt(kind, &Value::Str(default.into())),
            |v| to_opt(kind, v),
        );
        out.insert(name.to_string(), v);
    }
    database(&mut out, target);
    if script.options.is_empty() {
        // A legacy script declares nothing and takes any option, as a string (its code calls
        // `tonumber`); sbsuite's own general options are not sysbench's.
        for (key, v) in &options.0 {
            let key = key.replace('-', "_");
            let general = crate::engine::config::GENERAL.iter().any(|g| g.name == key);
            if !general && !out.contains_key(&key) {
                out.insert(key, OptVal::Str(v.to_string()));
            }
        }
    }
    for o in &script.options {
        if o.kind == ArgType::File {
            continue;
        }
        let key = o.name.replace('-', "_");
        let given = options.get(&key).or_else(|| options.get(&o.name)).cloned();
        if let Some(v) = given.or_else(|| default_value(o)) {
            out.insert(key, to_opt(o.kind, &v));
        }
    }
    out
}

/// The database options sysbench exports, from the target.
fn database(out: &mut OptValues, t: &Target) {
    let s = |v: &str| OptVal::Str(v.to_string());
    let list = |v: Vec<String>| OptVal::List(v);
    let driver = t.driver.name();
    // The login a script reads is the one its first connection uses: with per-host logins
    // (`hosts` tables) that of the first host, else `[target]`'s. Each connection the script
    // opens still logs in with its own host's.
    let first = t.at(0);
    let login = (&first.user, &first.database);
    // A password that does not render here fails at connect time with the fix; scripts
    // reading it see "" meanwhile.
    let password = first.password().ok().flatten().unwrap_or_default();
    out.insert("db_driver".into(), s(driver));
    out.insert(
        "db_ps_mode".into(),
        s(match t.ps_mode {
            PsMode::Auto => "auto",
            PsMode::Disable => "disable",
        }),
    );
    out.insert("db_debug".into(), OptVal::Bool(false));

    // sysbench's options are named after its drivers: `mysql_*` take the target's values
    // when it is a MySQL one, `pgsql_*` when it is a PostgreSQL one, else their defaults.
    let mysql = driver == "mysql";
    // sysbench's `localhost` reaches the server's socket; the target holds it as 127.0.0.1
    // plus that socket, and the script sees the name the user gave.
    let hosts: Vec<String> = t
        .hosts
        .iter()
        .map(|(h, _)| {
            if h == "127.0.0.1" && mysql && !t.sockets.is_empty() {
                "localhost".to_string()
            } else {
                h.clone()
            }
        })
        .collect();
    let ports: Vec<String> = t.hosts.iter().map(|(_, p)| p.to_string()).collect();
    let pick = |ours: bool, v: &str, default: &str| s(if ours { v } else { default });
    out.insert(
        "mysql_host".into(),
        list(if mysql && !hosts.is_empty() {
            hosts.clone()
        } else {
            vec!["localhost".into()]
        }),
    );
    out.insert(
        "mysql_port".into(),
        list(if mysql && !ports.is_empty() {
            ports.clone()
        } else {
            vec!["3306".into()]
        }),
    );
    out.insert(
        "mysql_socket".into(),
        list(if mysql { t.sockets.clone() } else { Vec::new() }),
    );
    out.insert("mysql_user".into(), pick(mysql, login.0, "sbtest"));
    out.insert("mysql_password".into(), pick(mysql, &password, ""));
    out.insert("mysql_db".into(), pick(mysql, login.1, "sbtest"));
    out.insert(
        "mysql_ssl".into(),
        OptVal::Bool(mysql && t.ssl != SslMode::Disabled),
    );
    out.insert("mysql_ssl_cipher".into(), s(""));
    out.insert(
        "mysql_compression".into(),
        OptVal::Bool(mysql && t.compression),
    );
    out.insert("mysql_debug".into(), OptVal::Bool(false));
    out.insert(
        "mysql_ignore_errors".into(),
        list(match (t.ignore_errors.codes(), mysql) {
            (None, true) => vec!["all".into()],
            (Some(c), true) => c,
            (_, false) => vec!["1213".into(), "1020".into(), "1205".into()],
        }),
    );
    out.insert("mysql_dry_run".into(), OptVal::Bool(mysql && t.dry_run));

    let pg = driver == "pgsql";
    let (host, port) = t
        .hosts
        .first()
        .filter(|_| pg)
        .map_or(("localhost".to_string(), 5432), |(h, p)| (h.clone(), *p));
    out.insert("pgsql_host".into(), s(&host));
    out.insert("pgsql_port".into(), OptVal::Number(f64::from(port)));
    out.insert("pgsql_user".into(), pick(pg, login.0, "sbtest"));
    out.insert("pgsql_password".into(), pick(pg, &password, ""));
    out.insert("pgsql_db".into(), pick(pg, login.1, "sbtest"));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opt(name: &str, kind: ArgType, default: Option<&str>) -> DeclaredOpt {
        DeclaredOpt {
            name: name.into(),
            desc: format!("about {name}"),
            kind,
            default: default.map(str::to_string),
        }
    }

    #[test]
    fn list_pads_to_the_longest_name_and_suffix() {
        let opts = [
            opt("x", ArgType::Double, Some("1")),
            opt("yy-z", ArgType::String, Some("s")),
            opt("f", ArgType::Bool, None),
        ];
        assert_eq!(
            options_list(&opts),
            "  --x=N         about x [1]\n  --yy-z=STRING about yy-z [s]\n  --f[=on|off]  about f\n\n"
        );
    }

    /// With per-host logins a script reads the first host's login (the one its first
    /// connection uses), not `[target]`'s, which may be no login at all.
    #[test]
    fn database_options_show_the_first_hosts_own_login() {
        use crate::db::target::{Login, Secret};
        let script = Script {
            path: "x.lua".into(),
            typed: "x.lua".into(),
            sname: "x.lua".into(),
            source: String::new(),
            options: Vec::new(),
            commands: Vec::new(),
            has_prepare: false,
            has_cleanup: false,
            has_help: false,
            module_root: None,
        };
        let mut t = Target::sqlite_default();
        t.driver = "mysql".parse().unwrap();
        t.hosts = vec![("10.0.0.1".into(), 3306), ("10.0.0.2".into(), 3306)];
        t.user = "nobody".into();
        t.logins = (1..=2)
            .map(|i| Login {
                user: format!("u{i}"),
                secret: Some(Secret::literal(format!("p{i}"))),
                database: format!("d{i}"),
            })
            .collect();
        let v = values(&script, &Options::default(), &t);
        let s = |x: &str| OptVal::Str(x.into());
        assert_eq!(v["mysql_user"], s("u1"));
        assert_eq!(v["mysql_password"], s("p1"));
        assert_eq!(v["mysql_db"], s("d1"));
        assert_eq!(
            v["mysql_host"],
            OptVal::List(vec!["10.0.0.1".into(), "10.0.0.2".into()])
        );
    }

    #[test]
    fn database_options_take_sysbench_names_and_types() {
        let script = Script {
            path: "x.lua".into(),
            typed: "x.lua".into(),
            sname: "x.lua".into(),
            source: String::new(),
            options: vec![opt("tables", ArgType::Int, Some("1"))],
            commands: Vec::new(),
            has_prepare: false,
            has_cleanup: false,
            has_help: false,
            module_root: None,
        };
        let mut t = Target::sqlite_default();
        t.driver = "pgsql".parse().unwrap();
        t.hosts = vec![("db1".into(), 5433)];
        t.user = "bench".into();
        t.database = "tpcc".into();
        let mut given = Options::default();
        given.0.insert("tables".into(), Value::Int(10));
        given.0.insert("warmup_time".into(), Value::Int(5));
        let v = values(&script, &given, &t);
        let s = |x: &str| OptVal::Str(x.into());
        assert_eq!(v["db_driver"], s("pgsql"));
        assert_eq!(v["pgsql_host"], s("db1"));
        assert_eq!(v["pgsql_port"], OptVal::Number(5433.0));
        assert_eq!(v["pgsql_user"], s("bench"));
        assert_eq!(v["pgsql_db"], s("tpcc"));
        assert_eq!(v["mysql_host"], OptVal::List(vec!["localhost".into()]));
        assert_eq!(v["mysql_user"], s("sbtest"));
        assert_eq!(v["tables"], OptVal::Number(10.0));
        assert_eq!(v["threads"], OptVal::Number(1.0));
        // sbsuite's own general options are not sysbench's.
        assert!(!v.contains_key("warmup_time"));
    }

    #[test]
    fn defaults_follow_sysbench() {
        let v = |k, d| default_value(&opt("o", k, d));
        assert_eq!(v(ArgType::Bool, None), Some(Value::Bool(true)));
        assert_eq!(v(ArgType::Bool, Some("off")), Some(Value::Bool(false)));
        assert_eq!(v(ArgType::Int, None), Some(Value::Int(0)));
        assert_eq!(v(ArgType::Int, Some("2.5")), Some(Value::Str("2.5".into())));
        assert_eq!(v(ArgType::Double, Some("1e+15")), Some(Value::Float(1e15)));
        assert_eq!(v(ArgType::Size, Some("16K")), Some(Value::Int(16384)));
        assert_eq!(v(ArgType::String, None), Some(Value::Str(String::new())));
        assert_eq!(
            v(ArgType::List, Some("a,,b")),
            Some(Value::List(vec![
                Value::Str("a".into()),
                Value::Str("b".into())
            ]))
        );
        // The INT default that sysbench refuses at export is refused by the kind's check.
        let int = opt("o", ArgType::Int, Some("2.5"));
        let d = default_value(&int).expect("a value");
        assert!(kind_of(&int).coerce(&d).is_err());
    }
}
