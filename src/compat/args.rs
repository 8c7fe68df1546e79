//! sysbench command lines (1.0 syntax and the 0.4/0.5 forms) → a validated [`Invocation`].
//!
//! Shaped like sysbench's own parser so real command lines pass through untouched: options are
//! `--name=value` or a bare `--flag` (= on), `-` and `_` are interchangeable, and the test is
//! `--test=X`, a name or a script path. Everything sysbench users still type from old guides is
//! mapped here, in one table-driven pass, to a 1.0 option name plus the warning sysbench (or,
//! for options 1.0 dropped, sbsuite) prints — never silently: an option that changes nothing in
//! this build is reported as ignored. Values are checked against the workload's spec with its
//! own [`crate::engine::option::Kind`], so sizes, booleans and lists mean what the suite files mean.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;

use crate::engine::Catalog;
use crate::engine::config::GENERAL;
use crate::engine::lua::Script;
use crate::engine::lua::run::{LuaDef, lua_message, spec_with};
use crate::engine::lua::script::stock_workload;
use crate::engine::option::Kind;
use crate::engine::spec::WorkloadSpec;
use crate::source::did_you_mean;
use crate::value::{Options, Value};

/// What to do with the test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Prepare,
    Run,
    Cleanup,
    Prewarm,
    Help,
    /// A Lua script's own command (`sysbench.cmdline.commands`): [`Invocation::command`].
    Command,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Prepare => "prepare",
            Action::Run => "run",
            Action::Cleanup => "cleanup",
            Action::Prewarm => "prewarm",
            Action::Help => "help",
            Action::Command => "command",
        }
    }
}

/// One option as given: its normalised value and the text the user wrote (kept for `convert`,
/// so `8K` stays `8K` in the suite file).
#[derive(Clone, Debug, PartialEq)]
pub struct Given {
    pub value: Value,
    pub raw: String,
}

/// Database connection options (`--db-*`, `--mysql-*`, `--pgsql-*`), kept raw: system tests
/// ignore them, `convert` turns them into `[target]`, OLTP engines will read them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Connection {
    /// Option name (with `_`, e.g. `mysql_host`) → value as given, in command-line order.
    pub options: IndexMap<String, String>,
}

impl Connection {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.options.get(name).map(String::as_str)
    }

    /// A LIST option's items (`--mysql-host=a,b`).
    pub fn list(&self, name: &str) -> Vec<String> {
        super::target::split_list(self.get(name))
    }

    pub fn is_empty(&self) -> bool {
        self.options.is_empty()
    }
}

/// Connection options sysbench 1.0.20 accepts (its `--help` lists them).
const CONNECTION_OPTIONS: &[&str] = &[
    "db_driver",
    "db_ps_mode",
    "mysql_host",
    "mysql_port",
    "mysql_socket",
    "mysql_user",
    "mysql_password",
    "mysql_db",
    "mysql_ssl",
    "mysql_compression",
    "mysql_ignore_errors",
    "mysql_dry_run",
    "pgsql_host",
    "pgsql_port",
    "pgsql_user",
    "pgsql_password",
    "pgsql_db",
    // sysbench 1.1's; 1.0.20's libpq reads PGSSLMODE instead.
    "pgsql_sslmode",
];

/// Valid sysbench options that change nothing measured here; accepted with a warning.
const IGNORED: &[(&str, &str)] = &[
    (
        "mysql_ssl_cipher",
        "the TLS library (rustls) negotiates the strongest cipher both sides support and takes no OpenSSL cipher list",
    ),
    (
        "mysql_debug",
        "sbsuite has no client call trace; failing statements are in the error message",
    ),
    (
        "db_debug",
        "sbsuite has no client call trace; failing statements are in the error message",
    ),
    ("luajit_cmd", "sbsuite runs no Lua"),
    (
        "thread_init_timeout",
        "sbsuite threads start without a timeout",
    ),
    ("oltp_reconnect_mode", "sysbench 1.0 has no reconnect modes"),
    ("oltp_sp_name", "sysbench 1.0 has no stored-procedure test"),
    (
        "oltp_user_delay_min",
        "sysbench 1.0 has no think time: events run back to back",
    ),
    (
        "oltp_user_delay_max",
        "sysbench 1.0 has no think time: events run back to back",
    ),
    (
        "oltp_connect_delay",
        "sysbench 1.0 connects once per thread",
    ),
    (
        "oltp_table_name",
        "sysbench 1.0 tables are always sbtest1..N",
    ),
    ("mysql_engine_trx", "sysbench 1.0 always uses transactions"),
    (
        "myisam_max_rows",
        "sysbench 1.0 has no MyISAM table options",
    ),
    ("mysql_create_options", "use --create-table-options"),
];

/// Why sbsuite ignores the valid sysbench option `name` (it warns and goes on), if it does.
pub fn ignored(name: &str) -> Option<&'static str> {
    IGNORED.iter().find(|i| i.0 == name).map(|i| i.1)
}

/// 0.4/0.5 option → 1.0 option, warned as "a sysbench 0.4/0.5 option".
pub const RENAMED: &[(&str, &str)] = &[
    ("oltp_table_size", "table_size"),
    ("oltp_tables_count", "tables"),
    ("oltp_range_size", "range_size"),
    ("oltp_point_selects", "point_selects"),
    ("oltp_simple_ranges", "simple_ranges"),
    ("oltp_sum_ranges", "sum_ranges"),
    ("oltp_order_ranges", "order_ranges"),
    ("oltp_distinct_ranges", "distinct_ranges"),
    ("oltp_index_updates", "index_updates"),
    ("oltp_non_index_updates", "non_index_updates"),
    ("oltp_delete_inserts", "delete_inserts"),
    ("oltp_range_selects", "range_selects"),
    ("oltp_auto_inc", "auto_inc"),
    ("oltp_skip_trx", "skip_trx"),
    ("oltp_secondary", "secondary"),
    ("oltp_dist_type", "rand_type"),
    ("oltp_dist_iter", "rand_spec_iter"),
    ("oltp_dist_pct", "rand_spec_pct"),
    ("oltp_dist_res", "rand_spec_res"),
    ("mysql_table_engine", "mysql_storage_engine"),
];

/// sysbench 1.0's deprecated aliases: `(alias, option, used only when the value is above)`.
/// sysbench applies them after the 1.0 names, so they win when both are given.
pub const DEPRECATED: &[(&str, &str, i64)] = &[
    ("num_threads", "threads", 1),
    ("max_requests", "events", 0),
    ("max_time", "time", 0),
    ("tx_rate", "rate", 0),
];

/// Options that choose the 1.0 workload of the legacy `oltp` test instead of setting a value.
const LEGACY_SELECTORS: &[&str] = &[
    "oltp_test_mode",
    "oltp_nontrx_mode",
    "oltp_read_only",
    "oltp_write_only",
];

/// 0.5 `tests/db/*.lua` scripts whose 1.0 script has another name.
const LEGACY_SCRIPTS: &[(&str, &str)] = &[
    ("oltp_simple", "oltp_point_select"),
    ("select", "oltp_point_select"),
    ("insert", "oltp_insert"),
    ("delete", "oltp_delete"),
    ("update_index", "oltp_update_index"),
    ("update_non_index", "oltp_update_non_index"),
];

#[derive(Debug, thiserror::Error)]
pub enum ArgsError {
    #[error("invalid option: --{}{}", dashed(name), hint.as_ref().map(|h| format!(" ({h})")).unwrap_or_default())]
    Unknown { name: String, hint: Option<String> },
    #[error("option --{} belongs to the {owner} test, not to {test}", dashed(name))]
    OtherTest {
        name: String,
        owner: String,
        test: String,
    },
    /// `script_bool`: the option is a BOOL option a Lua script declares, whose bad value
    /// sysbench's own parser refuses (before the script runs).
    #[error("invalid value for --{}: {reason}", dashed(name))]
    BadValue {
        name: String,
        reason: String,
        script_bool: bool,
    },
    #[error(
        "option --{} needs a value: --{}={}",
        dashed(name),
        dashed(name),
        placeholder(kind)
    )]
    NeedsValue { name: String, kind: Kind },
    #[error(
        "no test given: name one (cpu, memory, threads, mutex, fileio, oltp_read_write, a script \
         path such as oltp_read_write.lua) before the command, e.g. `sbsuite sysbench cpu run`"
    )]
    NoTest,
    #[error("unknown test `{test}`: no such built-in test or script; known tests: {known}")]
    UnknownTest { test: String, known: String },
    #[error("the '{0}' test requires a command argument: prepare, run, cleanup or help")]
    NoCommand(String),
    #[error("unknown command `{0}`: use prepare, run, cleanup or help")]
    UnknownCommand(String),
    /// A word that is neither a built-in command nor one of the Lua script's own.
    #[error("unknown command `{command}`: {sname} has run, help{}", commands.iter().map(|c| format!(", {c}")).collect::<String>())]
    UnknownScriptCommand {
        command: String,
        sname: String,
        commands: Vec<String>,
    },
    #[error("unexpected argument `{0}`: give the test and one command, e.g. `cpu run`")]
    Extra(String),
    #[error("cannot read --config-file {path}: {reason}")]
    ConfigFile { path: String, reason: String },
    /// `--lua NAME`: no `NAME.lua` on sysbench's module path.
    #[error(
        "--lua found no script `{test}`: sysbench's module path is {path} (LUA_PATH replaces \
         it); give the script's path instead"
    )]
    NoScript { test: String, path: String },
    /// The script does not load (a syntax error, an error at its top level, no such file):
    /// sysbench's `FATAL: file:line: msg`, with the Lua traceback.
    #[error("{0}")]
    Script(String),
    #[error("{0}")]
    NoEquivalent(String),
}

fn dashed(name: &str) -> String {
    name.replace('_', "-")
}

/// sysbench's placeholder for an option's value in help and errors.
pub fn placeholder(kind: &Kind) -> &'static str {
    match kind {
        Kind::Bool => "on|off",
        Kind::Int { .. } | Kind::IntOr { .. } | Kind::Float { .. } => "N",
        Kind::Size => "SIZE",
        Kind::Str | Kind::Enum(_) => "STRING",
        Kind::List(_) => "[LIST,...]",
    }
}

/// Where a warning goes: sysbench prints `--test`'s before its logger starts (stderr) and the
/// deprecated aliases' through it (stdout); warnings sysbench does not have go to stderr.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Warning {
    Stdout(String),
    Stderr(String),
}

/// What became of one option of the command line. Every option token gets exactly one, so
/// `convert` can account for all of them: an option either sets something a suite can say or
/// is reported with the reason it is left out, never dropped silently (#14).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Chose the test or the command (`--test`, `--help`, `--version`, the 0.4 mode selectors).
    Command,
    /// Set this 1.0 option in [`Invocation::given`].
    Set(String),
    /// Kept in [`Invocation::connection`] (a `[target]` key in a suite).
    Connection,
    /// Changes nothing here; the reason, for the user.
    Dropped(String),
}

/// A parsed, checked sysbench command line.
#[derive(Clone, Debug)]
pub struct Invocation {
    /// The test as written (`--test=oltp`, `oltp_read_write.lua`, `cpu`).
    pub test: String,
    pub workload: &'static WorkloadSpec,
    /// `None` only with `--help` / `--version`.
    pub action: Option<Action>,
    /// Options given, by 1.0 name, in first-appearance order.
    pub given: IndexMap<String, Given>,
    pub connection: Connection,
    pub warnings: Vec<Warning>,
    /// Every option as typed (`_` form, e.g. `oltp_user_delay_min`), in order, with its fate.
    pub fates: Vec<(String, Fate)>,
    /// `--sbsuite-dry-run`: print the resolved workload and options instead of running.
    pub dry_run: bool,
    /// `--sbsuite-results=DIR`: also store results like `sbsuite run`.
    pub results_dir: Option<PathBuf>,
    pub version: bool,
    /// [`Action::Command`]'s name (a Lua script's custom command).
    pub command: Option<String>,
}

impl Invocation {
    /// Every option of the workload: spec default < command line (sysbench 1.0 defaults).
    pub fn options(&self) -> Options {
        self.workload
            .resolve_options(|name| self.given.get(name).map(|g| g.value.clone()))
    }
}

/// A token after the program name: an option (`name` with `_`) or a positional word.
enum Token {
    Opt(String, Option<String>),
    Word(String),
}

fn tokenize(args: &[String]) -> Result<Vec<Token>, ArgsError> {
    let mut out = Vec::new();
    for a in args {
        if let Some(body) = a.strip_prefix("--") {
            let (name, value) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (body, None),
            };
            let name = name.replace('-', "_");
            if name == "config_file" {
                // sysbench reads the file's `name=value` lines as if given first.
                let path = value.clone().unwrap_or_default();
                let text = std::fs::read_to_string(&path).map_err(|e| ArgsError::ConfigFile {
                    path: path.clone(),
                    reason: e.to_string(),
                })?;
                let mut file = Vec::new();
                for line in text.lines().map(str::trim) {
                    if line.is_empty() || line.starts_with('#') {
                        continue;
                    }
                    let (n, v) = match line.split_once('=') {
                        Some((n, v)) => (n.trim(), Some(v.trim().to_string())),
                        None => (line, None),
                    };
                    file.push(Token::Opt(n.replace('-', "_"), v));
                }
                out.splice(0..0, file);
                continue;
            }
            out.push(Token::Opt(name, value));
        } else {
            out.push(Token::Word(a.clone()));
        }
    }
    Ok(out)
}

/// What the test argument names, before the built-in names are looked up.
enum Chosen {
    /// A Lua script, loaded.
    Script(Box<Script>),
    /// One of sysbench's stock scripts, unmodified: its native workload.
    Native(&'static str),
    /// Anything else: a built-in name (or an unknown test) for [`lookup_test`].
    Builtin,
}

/// Issue #16's rule: a path to a `.lua` file runs it in Lua, except sysbench's stock scripts
/// (byte-identical, [`stock_workload`]) which keep their native engine unless `--lua`; a
/// bare built-in name keeps the native engine unless `--lua`, which looks the script up as
/// sysbench does (`require`: [`find_module`]); any other name is looked up the same way.
fn lookup_script(test: &str, forced: bool, command: Option<&str>) -> Result<Chosen, ArgsError> {
    match script_file(test, forced) {
        Err(name) => Ok(Chosen::Native(name)),
        Ok(Some(file)) => Script::load(&file, test, command)
            .map(|s| Chosen::Script(Box::new(s)))
            .map_err(|e| ArgsError::Script(lua_message(&e))),
        Ok(None) if forced => Err(ArgsError::NoScript {
            test: test.to_string(),
            path: module_path().join(";"),
        }),
        Ok(None) => Ok(Chosen::Builtin),
    }
}

/// The script file the test argument names under [`lookup_script`]'s rule: `Ok(None)` for
/// none, `Err(name)` for a stock script that keeps its native workload `name`.
fn script_file(test: &str, forced: bool) -> Result<Option<PathBuf>, &'static str> {
    let path = Path::new(test);
    if path.is_file() {
        if !forced && let Some(name) = stock_workload(path) {
            return Err(name);
        }
        Ok(Some(path.to_path_buf()))
    } else if forced || lookup_test(test).is_err() {
        Ok(find_module(test))
    } else {
        Ok(None)
    }
}

/// Whether the line runs a Lua script (without loading it): `sbsuite sysbench` then prints
/// sysbench's banner before the script's top level runs, as sysbench does.
pub fn names_script(args: &[String]) -> bool {
    let Ok(tokens) = tokenize(args) else {
        return false;
    };
    let mut test = None;
    let mut forced = false;
    for t in &tokens {
        match t {
            Token::Opt(n, v) if n == "test" => test = Some(v.clone().unwrap_or_default()),
            Token::Opt(n, v) if n == "lua" => forced = v.as_deref().is_none_or(is_on),
            Token::Word(w) if test.is_none() => test = Some(w.clone()),
            _ => {}
        }
    }
    test.is_some_and(|t| matches!(script_file(&t, forced), Ok(Some(_))))
}

/// sysbench's `package.path` (reference §2.1): `LUA_PATH` when set (`;;` = the default), else
/// the current directory, LuaRocks' and the system's Lua directories, and sysbench's scripts.
fn module_path() -> Vec<String> {
    crate::engine::lua::state::package_paths()
        .0
        .split(';')
        .filter(|t| !t.is_empty())
        .map(String::from)
        .collect()
}

/// `require(name)`'s file: the first template of [`module_path`] that names a file, with
/// `?` replaced by the name (dots as directory separators, as `require` does).
fn find_module(name: &str) -> Option<PathBuf> {
    let module = name.replace('.', "/");
    module_path()
        .iter()
        .map(|t| PathBuf::from(t.replace('?', &module)))
        .find(|p| p.is_file())
}

/// [`parse`] for a Lua script: its commands, its declared options (a legacy script without
/// any takes the line's unknown options as strings), registered so that the engine finds it
/// by [`Invocation::test`].
fn parse_script(
    args: &[String],
    tokens: Vec<Token>,
    test: String,
    script: Script,
    mut words: std::vec::IntoIter<String>,
    warnings: Vec<Warning>,
    version: bool,
) -> Result<Invocation, ArgsError> {
    let custom = |name: &str| script.commands.iter().any(|c| c.name == name);
    let (action, command) = match words.next() {
        None => (None, None),
        Some(word) => match word.as_str() {
            "prepare" => (Some(Action::Prepare), None),
            "cleanup" => (Some(Action::Cleanup), None),
            "help" | "run" if !custom(&word) => (
                Some(if word == "help" {
                    Action::Help
                } else {
                    Action::Run
                }),
                None,
            ),
            w if custom(w) => (Some(Action::Command), Some(word)),
            _ => {
                let mut commands: Vec<String> =
                    script.commands.iter().map(|c| c.name.clone()).collect();
                for (name, defined) in [
                    ("prepare", script.has_prepare),
                    ("cleanup", script.has_cleanup),
                ] {
                    if defined && !commands.iter().any(|c| c == name) {
                        commands.push(name.to_string());
                    }
                }
                return Err(ArgsError::UnknownScriptCommand {
                    command: word,
                    sname: script.sname.clone(),
                    commands,
                });
            }
        },
    };
    if let Some(extra) = words.next() {
        return Err(ArgsError::Extra(extra));
    }
    let extra = if script.options.is_empty() {
        let mut names: Vec<String> = Vec::new();
        for t in &tokens {
            if let Token::Opt(n, _) = t
                && !read_before_the_script(n)
                && !names.contains(n)
            {
                names.push(n.clone());
            }
        }
        names
    } else {
        Vec::new()
    };
    let argv = std::iter::once("sysbench".to_string())
        .chain(args.iter().cloned())
        .collect();
    let spec = spec_with(LuaDef {
        script,
        argv,
        extra,
    });
    let inv = Invocation::new(test, spec, action, warnings, version, command);
    read_options(inv, &tokens, false, true)
}

/// Options [`read_options`] handles before it looks at the test's own (general, connection,
/// deprecated and ignored ones, sbsuite's switches): a legacy script does not get them as
/// strings of its own.
fn read_before_the_script(name: &str) -> bool {
    matches!(
        name,
        "test"
            | "help"
            | "version"
            | "lua"
            | "sbsuite_dry_run"
            | "sbsuite_results"
            | "init_rng"
            | "rand_init"
            | "seed_rng"
            | "batch"
            | "batch_delay"
    ) || GENERAL.iter().any(|o| o.name == name)
        || CONNECTION_OPTIONS.contains(&name)
        || DEPRECATED.iter().any(|d| d.0 == name)
        || ignored(name).is_some()
}

/// The workload a test name or script path stands for; `Ok(None)` = the legacy `oltp` test,
/// whose workload depends on `--oltp-test-mode` and friends.
fn lookup_test(test: &str) -> Result<Option<&'static WorkloadSpec>, ArgsError> {
    let file = test.rsplit('/').next().unwrap_or(test);
    let stem = file.strip_suffix(".lua").unwrap_or(file);
    if stem == "oltp" {
        return Ok(None);
    }
    let name = LEGACY_SCRIPTS
        .iter()
        .find(|(old, _)| *old == stem)
        .map(|&(_, new)| new)
        .unwrap_or(stem);
    let builtin = Catalog::builtin();
    builtin.workload(name).map(Some).ok_or_else(|| {
        let mut known: Vec<&str> = builtin.all().map(|w| w.name).collect();
        known.push("oltp (0.4/0.5)");
        ArgsError::UnknownTest {
            test: test.to_string(),
            known: known.join(", "),
        }
    })
}

/// sysbench 0.4's `--test=oltp` (and 0.5's `oltp.lua`) → the 1.0 workload (spec §3 mapping).
fn legacy_oltp(sel: &IndexMap<String, String>) -> Result<&'static str, ArgsError> {
    let on = |k: &str| sel.get(k).is_some_and(|v| is_on(v));
    let mode = sel.get("oltp_test_mode").map_or("complex", String::as_str);
    let name = match mode {
        "complex" if on("oltp_read_only") => "oltp_read_only",
        "complex" if on("oltp_write_only") => "oltp_write_only",
        "complex" => "oltp_read_write",
        "simple" => "oltp_point_select",
        "nontrx" => match sel.get("oltp_nontrx_mode").map_or("select", String::as_str) {
            "select" => "oltp_point_select",
            "update_key" => "oltp_update_index",
            "update_nokey" => "oltp_update_non_index",
            "insert" => "oltp_insert",
            "delete" => "oltp_delete",
            other => {
                return Err(ArgsError::BadValue {
                    script_bool: false,
                    name: "oltp_nontrx_mode".into(),
                    reason: format!(
                        "`{other}`: expected one of select, update_key, update_nokey, insert, delete"
                    ),
                });
            }
        },
        "sp" => {
            return Err(ArgsError::NoEquivalent(
                "--oltp-test-mode=sp (stored procedures) has no sysbench 1.0 equivalent; use \
                 --oltp-test-mode=complex or a 1.0 script such as oltp_read_write"
                    .into(),
            ));
        }
        other => {
            return Err(ArgsError::BadValue {
                script_bool: false,
                name: "oltp_test_mode".into(),
                reason: format!("`{other}`: expected one of simple, complex, nontrx, sp"),
            });
        }
    };
    Ok(name)
}

/// General options of suites that `sbsuite sysbench` refuses as unknown, as sysbench would:
/// sysbench has nothing like them, and they change what a run measures or prints (#30:
/// `latency_limit` skips arrivals), so a sysbench line keeps meaning a sysbench run.
pub(super) const NOT_SYSBENCH: &[&str] = &["latency_limit"];

fn coerce(spec: &WorkloadSpec, name: &str, raw: Option<&str>) -> Result<Given, ArgsError> {
    if NOT_SYSBENCH.contains(&name) {
        return Err(unknown(spec, name));
    }
    let Some(opt) = spec.option(name) else {
        return Err(
            match Catalog::builtin().all().find(|w| w.option(name).is_some()) {
                Some(owner) => ArgsError::OtherTest {
                    name: name.into(),
                    owner: owner.name.into(),
                    test: spec.name.into(),
                },
                None => unknown(spec, name),
            },
        );
    };
    let raw = match (raw, opt.kind) {
        (Some(r), _) => r.to_string(),
        (None, Kind::Bool) => "on".to_string(),
        // sysbench gives a script's bare STRING or LIST option the empty value.
        (None, Kind::Str | Kind::List(_)) if crate::engine::lua::run::script(spec).is_some() => {
            String::new()
        }
        (None, kind) => {
            return Err(ArgsError::NeedsValue {
                name: name.into(),
                kind,
            });
        }
    };
    let value = opt
        .kind
        .coerce(&Value::Str(raw.clone()))
        .map_err(|reason| ArgsError::BadValue {
            name: name.into(),
            reason,
            script_bool: matches!(opt.kind, Kind::Bool)
                && crate::engine::lua::run::script(spec).is_some(),
        })?;
    Ok(Given { value, raw })
}

fn unknown(spec: &WorkloadSpec, name: &str) -> ArgsError {
    let mut candidates: Vec<String> = spec
        .all_options()
        .filter(|o| !NOT_SYSBENCH.contains(&o.name))
        .map(|o| dashed(o.name))
        .collect();
    candidates.extend(DEPRECATED.iter().map(|(a, _, _)| dashed(a)));
    candidates.extend(CONNECTION_OPTIONS.iter().map(|c| dashed(c)));
    ArgsError::Unknown {
        name: name.into(),
        hint: did_you_mean(&dashed(name), candidates.iter().map(String::as_str))
            .map(|h| h.replace('`', "").replace("mean ", "mean --")),
    }
}

/// Whether the line asks for sysbench's general help (`--help`, `--help=on`): sysbench prints it
/// and exits 0 whatever else the line holds, before it looks at the test or any other option.
pub fn wants_help(args: &[String]) -> bool {
    args.iter().any(|a| {
        a.strip_prefix("--help")
            .is_some_and(|rest| rest.is_empty() || rest.strip_prefix('=').is_some_and(is_on))
    })
}

impl Invocation {
    /// A line's test, workload and command before its options are read.
    fn new(
        test: String,
        workload: &'static WorkloadSpec,
        action: Option<Action>,
        warnings: Vec<Warning>,
        version: bool,
        command: Option<String>,
    ) -> Invocation {
        Invocation {
            test,
            workload,
            action,
            given: IndexMap::new(),
            connection: Connection::default(),
            warnings,
            fates: Vec::new(),
            dry_run: false,
            results_dir: None,
            version,
            command,
        }
    }
}

/// Parses everything after `sysbench` (or `sbsuite sysbench`).
pub fn parse(args: &[String]) -> Result<Invocation, ArgsError> {
    let tokens = tokenize(args)?;
    let mut warnings = Vec::new();

    // Pass 1: the test and the command, so options can be checked against the workload.
    let mut test_opt = None;
    let mut words = Vec::new();
    let mut help = false;
    let mut version = false;
    let mut forced_lua = false;
    for t in &tokens {
        match t {
            Token::Opt(n, v) if n == "test" => test_opt = Some(v.clone().unwrap_or_default()),
            Token::Opt(n, v) if n == "help" => help = v.as_deref().is_none_or(is_on),
            Token::Opt(n, v) if n == "version" => version = v.as_deref().is_none_or(is_on),
            Token::Opt(n, v) if n == "lua" => forced_lua = v.as_deref().is_none_or(is_on),
            Token::Opt(..) => {}
            Token::Word(w) => words.push(w.clone()),
        }
    }
    let mut words = words.into_iter();
    let test = match test_opt {
        Some(t) => {
            warnings.push(Warning::Stderr(
                "WARNING: the --test option is deprecated. You can pass a script name or path on \
                 the command line without any options."
                    .into(),
            ));
            t
        }
        None => match words.next() {
            Some(w) => w,
            None if help || version => "cpu".into(),
            None => return Err(ArgsError::NoTest),
        },
    };
    // A Lua script (a `.lua` file that is not one of sysbench's stock scripts, a name
    // `--lua` forces, or a script found on sysbench's module path) is loaded first, as
    // sysbench loads it before it reads the options; it has its own commands.
    let command_word = words.clone().next();
    let key = match lookup_script(&test, forced_lua, command_word.as_deref())? {
        Chosen::Script(script) => {
            return parse_script(args, tokens, test, *script, words, warnings, version);
        }
        Chosen::Native(name) => name.to_string(),
        Chosen::Builtin => test.clone(),
    };
    // sysbench looks the test up before the command: `sysbench run` is an unknown test `run`.
    lookup_test(&key)?;
    let action = match words.next().as_deref() {
        Some("prepare") => Some(Action::Prepare),
        Some("run") => Some(Action::Run),
        Some("cleanup") => Some(Action::Cleanup),
        Some("prewarm") => Some(Action::Prewarm),
        Some("help") => Some(Action::Help),
        Some(other) => return Err(ArgsError::UnknownCommand(other.into())),
        None if help => Some(Action::Help),
        None if version => None,
        None => return Err(ArgsError::NoCommand(test)),
    };
    if let Some(extra) = words.next() {
        return Err(ArgsError::Extra(extra));
    }

    let legacy = lookup_test(&key)?.is_none();
    let mut selectors = IndexMap::new();
    for t in &tokens {
        if let Token::Opt(n, v) = t
            && LEGACY_SELECTORS.contains(&n.as_str())
        {
            selectors.insert(n.clone(), v.clone().unwrap_or_else(|| "on".into()));
        }
    }
    let workload = match lookup_test(&key)? {
        Some(w) => w,
        None => {
            let name = legacy_oltp(&selectors)?;
            warnings.push(Warning::Stderr(format!(
                "WARNING: `{test}` is sysbench 0.4/0.5's OLTP test: running its sysbench 1.0 \
                 equivalent `{name}` (1.0 schema and query mix, --tables tables)"
            )));
            Catalog::builtin()
                .workload(name)
                .ok_or_else(|| ArgsError::UnknownTest {
                    test: name.into(),
                    known: String::new(),
                })?
        }
    };

    // Pass 2: the options, in order (a later value wins, as in sysbench).
    let inv = Invocation::new(test, workload, action, warnings, version, None);
    read_options(inv, &tokens, legacy, false)
}

/// Pass 2 of [`parse`]: the options, in order (a later value wins, as in sysbench), read
/// against `inv.workload`. `legacy`: the 0.4 `oltp` test (its selectors choose the workload);
/// `lua`: a Lua script, which gets the 0.4/0.5 OLTP names as typed (sysbench passes them on).
fn read_options(
    mut inv: Invocation,
    tokens: &[Token],
    legacy: bool,
    lua: bool,
) -> Result<Invocation, ArgsError> {
    let workload = inv.workload;
    let action = inv.action;
    let mut deprecated: Vec<(&str, &str, Given)> = Vec::new();
    let mut batch = None;
    let mut batch_delay = None;
    for t in tokens {
        let Token::Opt(name, raw) = t else { continue };
        let name = name.as_str();
        let raw = raw.as_deref();
        let system = !workload.needs_target;
        // Every branch says what became of the option, so none can vanish unreported.
        let fate = if matches!(name, "test" | "help" | "version" | "lua") {
            Fate::Command
        } else if name == "sbsuite_dry_run" || name == "sbsuite_results" {
            if name == "sbsuite_dry_run" {
                inv.dry_run = raw.is_none_or(is_on);
            } else {
                inv.results_dir = raw.filter(|r| !r.is_empty()).map(PathBuf::from);
            }
            Fate::Dropped("it is a switch of `sbsuite sysbench`, not a suite setting".into())
        } else if let Some(&(alias, target, above)) = DEPRECATED.iter().find(|d| d.0 == name) {
            let g = coerce(workload, target, raw).map_err(|e| rename_err(e, alias))?;
            if g.value.as_i64().is_some_and(|v| v > above) {
                deprecated.push((alias, target, g));
                Fate::Set(target.to_string())
            } else {
                if alias == "max_time" {
                    inv.warnings.push(Warning::Stderr(format!(
                        "WARNING: --max-time={} is ignored, as in sysbench 1.0: the run still \
                         stops after --time seconds (default 10); use --time=0 for no time limit",
                        g.raw
                    )));
                }
                Fate::Dropped(format!(
                    "sysbench 1.0 applies it only above {above}; set --{} instead",
                    dashed(target)
                ))
            }
        } else if let Some(&(old, new)) = RENAMED.iter().find(|r| r.0 == name).filter(|_| !lua) {
            let g = coerce(workload, new, raw).map_err(|e| rename_err(e, old))?;
            inv.warnings.push(Warning::Stderr(format!(
                "WARNING: --{} is a sysbench 0.4/0.5 option, use --{} instead",
                dashed(old),
                dashed(new)
            )));
            inv.given.insert(new.to_string(), g);
            Fate::Set(new.to_string())
        } else if LEGACY_SELECTORS.contains(&name) && !lua {
            if legacy {
                inv.warnings.push(Warning::Stderr(format!(
                    "WARNING: --{} is a sysbench 0.4/0.5 option and selects `{}`",
                    dashed(name),
                    workload.name
                )));
                Fate::Command
            } else {
                let why = format!("the test `{}` is already chosen", workload.name);
                inv.warnings.push(Warning::Stderr(format!(
                    "WARNING: --{} is a sysbench 0.4/0.5 option and is ignored: {why}",
                    dashed(name)
                )));
                Fate::Dropped(why)
            }
        } else if name == "oltp_reconnect_mode" && workload.option("reconnect").is_some() {
            reconnect_mode(workload, raw, &mut inv)?
        } else if matches!(name, "init_rng" | "rand_init" | "seed_rng") {
            let (seed, note) = if name == "seed_rng" {
                let g = coerce(workload, "rand_seed", raw).map_err(|e| rename_err(e, name))?;
                (Some(g), String::new())
            } else if raw.is_none_or(is_on) {
                let g = Given {
                    value: Value::Int(0),
                    raw: "0".into(),
                };
                (
                    Some(g),
                    " (on = --rand-seed=0: seeded from the current time)".into(),
                )
            } else {
                (
                    None,
                    " (off is ignored: use --rand-seed=N for repeatable numbers)".into(),
                )
            };
            inv.warnings.push(Warning::Stderr(format!(
                "WARNING: --{} is a sysbench 0.4/0.5 option, use --rand-seed instead{note}",
                dashed(name)
            )));
            match seed {
                Some(g) => {
                    inv.given.insert("rand_seed".into(), g);
                    Fate::Set("rand_seed".into())
                }
                None => Fate::Dropped("off is the default; use --rand-seed=N".into()),
            }
        } else if name == "batch" {
            batch = Some(raw.is_none_or(is_on));
            // Settled after the loop, when --batch and --batch-delay are both known.
            Fate::Set("report_interval".into())
        } else if name == "batch_delay" {
            batch_delay =
                Some(coerce(workload, "report_interval", raw).map_err(|e| rename_err(e, name))?);
            Fate::Set("report_interval".into())
        } else if CONNECTION_OPTIONS.contains(&name) {
            if system {
                inv.warnings.push(Warning::Stderr(format!(
                    "WARNING: --{} is ignored: the {} test uses no database",
                    dashed(name),
                    workload.name
                )));
            }
            inv.connection
                .options
                .insert(name.to_string(), raw.unwrap_or("on").to_string());
            Fate::Connection
        } else if let Some(why) = ignored(name) {
            inv.warnings.push(Warning::Stderr(format!(
                "WARNING: --{} is ignored: {why}",
                dashed(name)
            )));
            Fate::Dropped(why.to_string())
        } else {
            match coerce(workload, name, raw) {
                Ok(g) => {
                    inv.given.insert(name.to_string(), g);
                    Fate::Set(name.to_string())
                }
                // sysbench's `TEST help` lists the test's options without reading their values
                // (it still refuses unknown options and bad general values).
                Err(ArgsError::BadValue { .. } | ArgsError::NeedsValue { .. })
                    if action == Some(Action::Help) && !GENERAL.iter().any(|o| o.name == name) =>
                {
                    Fate::Dropped("`help` does not read the test's option values".into())
                }
                Err(e) => return Err(e),
            }
        };
        inv.fates.push((name.to_string(), fate));
    }
    for (alias, target, g) in deprecated {
        inv.warnings.push(Warning::Stdout(format!(
            "WARNING: --{} is deprecated, use --{} instead",
            dashed(alias),
            dashed(target)
        )));
        inv.given.insert(target.to_string(), g);
    }
    if batch == Some(true) {
        let g = batch_delay.unwrap_or(Given {
            value: Value::Int(300),
            raw: "300".into(),
        });
        inv.warnings.push(Warning::Stderr(format!(
            "WARNING: --batch is a sysbench 0.4 option, use --report-interval instead (set to {})",
            g.raw
        )));
        inv.given.insert("report_interval".into(), g);
    } else {
        if batch_delay.is_some() {
            inv.warnings.push(Warning::Stderr(
                "WARNING: --batch-delay is ignored without --batch (use --report-interval)".into(),
            ));
        }
        for (name, fate) in &mut inv.fates {
            if name == "batch" || name == "batch_delay" {
                *fate = Fate::Dropped("--batch is off; use --report-interval".into());
            }
        }
    }
    Ok(inv)
}

/// sysbench 0.4's `--oltp-reconnect-mode`: `transaction` (reconnect after every transaction)
/// is 1.0's `--reconnect=1`, since an OLTP event is one transaction; `session` (the 0.4
/// default) is `--reconnect=0`. `query` and `random` have no 1.0 form and are reported.
fn reconnect_mode(
    workload: &WorkloadSpec,
    raw: Option<&str>,
    inv: &mut Invocation,
) -> Result<Fate, ArgsError> {
    let mode = raw.unwrap_or("");
    let every = match mode {
        "session" => "0",
        "transaction" => "1",
        "query" | "random" => {
            let why = format!(
                "sysbench 1.0 reconnects only after every N transactions (--reconnect=N); \
                 `{mode}` has no equivalent"
            );
            inv.warnings.push(Warning::Stderr(format!(
                "WARNING: --oltp-reconnect-mode={mode} is ignored: {why}"
            )));
            return Ok(Fate::Dropped(why));
        }
        other => {
            return Err(ArgsError::BadValue {
                script_bool: false,
                name: "oltp_reconnect_mode".into(),
                reason: format!("`{other}`: expected one of session, transaction, query, random"),
            });
        }
    };
    let g = coerce(workload, "reconnect", Some(every))?;
    inv.warnings.push(Warning::Stderr(format!(
        "WARNING: --oltp-reconnect-mode is a sysbench 0.4/0.5 option, use --reconnect={every} \
         instead"
    )));
    inv.given.insert("reconnect".into(), g);
    Ok(Fate::Set("reconnect".into()))
}

/// Errors about an alias name the option the user typed, not its 1.0 target.
fn rename_err(e: ArgsError, typed: &str) -> ArgsError {
    match e {
        ArgsError::BadValue {
            reason,
            script_bool,
            ..
        } => ArgsError::BadValue {
            name: typed.into(),
            reason,
            script_bool,
        },
        ArgsError::NeedsValue { kind, .. } => ArgsError::NeedsValue {
            name: typed.into(),
            kind,
        },
        other => other,
    }
}

/// sysbench's BOOL, read the way suite files read it; an empty value (`--flag=`) is on.
fn is_on(v: &str) -> bool {
    v.is_empty()
        || matches!(
            Kind::Bool.coerce(&Value::Str(v.into())),
            Ok(Value::Bool(true))
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(line: &str) -> Result<Invocation, ArgsError> {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        parse(&args)
    }

    #[test]
    fn legacy_cpu_line_maps_aliases_with_sysbench_warnings() {
        let inv = p("--test=cpu --cpu-max-prime=20000 --num-threads=2 --max-time=10 run").unwrap();
        assert_eq!(inv.workload.name, "cpu");
        assert_eq!(inv.action, Some(Action::Run));
        let o = inv.options();
        assert_eq!(o.int("threads"), 2);
        assert_eq!(o.int("time"), 10);
        assert_eq!(o.int("cpu_max_prime"), 20000);
        assert_eq!(o.int("events"), 0);
        assert!(inv.warnings.contains(&Warning::Stdout(
            "WARNING: --num-threads is deprecated, use --threads instead".into()
        )));
        assert!(inv.warnings.iter().any(|w| matches!(w,
            Warning::Stderr(t) if t.starts_with("WARNING: the --test option is deprecated."))));
    }

    #[test]
    fn deprecated_alias_wins_only_above_its_threshold() {
        let inv = p("cpu --threads=4 --num-threads=1 --max-requests=0 run").unwrap();
        assert_eq!(inv.options().int("threads"), 4);
        assert!(inv.warnings.is_empty(), "{:?}", inv.warnings);
        let inv = p("cpu --threads=4 --num-threads=8 run").unwrap();
        assert_eq!(inv.options().int("threads"), 8);
    }

    #[test]
    fn sizes_bools_lists_and_underscores() {
        let inv =
            p("memory --memory_block_size=8k --memory-total-size=1G --memory-hugetlb run").unwrap();
        let o = inv.options();
        assert_eq!(o.int("memory_block_size"), 8192);
        assert_eq!(o.int("memory_total_size"), 1 << 30);
        assert!(o.flag("memory_hugetlb"));
        let inv = p("fileio --file-extra-flags=direct,sync --file-fsync-end=off prepare").unwrap();
        assert_eq!(inv.options().list("file_extra_flags"), ["direct", "sync"]);
        assert!(!inv.options().flag("file_fsync_end"));
    }

    #[test]
    fn bad_values_and_unknown_options_name_the_option() {
        let e = p("memory --memory-block-size=8x run").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("invalid value for --memory-block-size"),
            "{e}"
        );
        let e = p("cpu --thraeds=2 run").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid option: --thraeds (did you mean --threads?)"
        );
        let e = p("cpu --memory-block-size=1K run").unwrap_err();
        assert!(e.to_string().contains("belongs to the memory test"), "{e}");
        assert!(matches!(p("nope run"), Err(ArgsError::UnknownTest { .. })));
        assert!(matches!(p("cpu"), Err(ArgsError::NoCommand(_))));
        assert!(matches!(p("cpu go"), Err(ArgsError::UnknownCommand(_))));
        // As in sysbench, the first word is the test even when it is a command (#14).
        assert!(matches!(p("run"), Err(ArgsError::UnknownTest { test, .. }) if test == "run"));
    }

    #[test]
    fn scripts_and_legacy_oltp_map_to_1_0_workloads() {
        for (line, want) in [
            (
                "/usr/share/sysbench/oltp_read_write.lua run",
                "oltp_read_write",
            ),
            (
                "tests/db/oltp.lua --oltp-read-only=on run",
                "oltp_read_only",
            ),
            ("--test=oltp run", "oltp_read_write"),
            (
                "--test=oltp --oltp-test-mode=nontrx --oltp-nontrx-mode=update_key run",
                "oltp_update_index",
            ),
            (
                "--test=oltp --oltp-test-mode=simple run",
                "oltp_point_select",
            ),
            ("select_random_points.lua run", "select_random_points"),
            ("tests/db/update_non_index.lua run", "oltp_update_non_index"),
        ] {
            assert_eq!(p(line).unwrap().workload.name, want, "{line}");
        }
        let inv = p("--test=oltp --oltp-table-size=1000 --oltp-tables-count=3 --oltp-dist-type=uniform --mysql-table-engine=myisam --mysql-db=test run").unwrap();
        let o = inv.options();
        assert_eq!(o.int("table_size"), 1000);
        assert_eq!(o.int("tables"), 3);
        assert_eq!(o.text("rand_type"), "uniform");
        assert_eq!(o.text("mysql_storage_engine"), "myisam");
        assert_eq!(inv.connection.get("mysql_db"), Some("test"));
        assert!(p("--test=oltp --oltp-test-mode=sp run").is_err());
    }

    #[test]
    fn every_option_gets_a_fate() {
        let line = "--test=oltp --oltp-reconnect-mode=transaction --oltp-user-delay-min=1 \
                    --num-threads=1 --batch-delay=5 --mysql-host=h --oltp-read-only=on \
                    --table-size=10 run";
        let inv = p(line).unwrap();
        assert_eq!(inv.fates.len(), line.matches("--").count());
        assert_eq!(inv.options().int("reconnect"), 1);
        let fate = |n: &str| inv.fates.iter().find(|f| f.0 == n).map(|f| f.1.clone());
        assert_eq!(
            fate("oltp_reconnect_mode"),
            Some(Fate::Set("reconnect".into()))
        );
        assert_eq!(fate("mysql_host"), Some(Fate::Connection));
        assert_eq!(fate("oltp_read_only"), Some(Fate::Command));
        for dropped in ["oltp_user_delay_min", "num_threads", "batch_delay"] {
            assert!(matches!(fate(dropped), Some(Fate::Dropped(_))), "{dropped}");
        }
        assert!(p("--test=oltp --oltp-reconnect-mode=often run").is_err());
    }

    #[test]
    fn help_skips_the_tests_option_values_but_not_unknown_options() {
        let args =
            |line: &str| -> Vec<String> { line.split_whitespace().map(String::from).collect() };
        assert!(wants_help(&args("nosuch --bogus=1 --help")));
        assert!(wants_help(&args("cpu run --help=on")));
        assert!(!wants_help(&args("cpu --help=off help")));
        let inv = p("fileio --file-num=0 --file-test-mode=zzz help").unwrap();
        assert_eq!(inv.action, Some(Action::Help));
        assert!(matches!(
            p("fileio --file-num=0 run"),
            Err(ArgsError::BadValue { .. })
        ));
        assert!(matches!(
            p("cpu --threads=x help"),
            Err(ArgsError::BadValue { .. })
        ));
        assert!(matches!(
            p("cpu --bogus=1 help"),
            Err(ArgsError::Unknown { .. })
        ));
    }

    #[test]
    fn rng_and_batch_aliases() {
        let inv = p("fileio --init-rng=on --batch --batch-delay=5 prepare").unwrap();
        assert_eq!(inv.options().int("rand_seed"), 0);
        assert_eq!(inv.options().int("report_interval"), 5);
        let inv = p("cpu --seed-rng=42 run").unwrap();
        assert_eq!(inv.options().int("rand_seed"), 42);
    }
}
