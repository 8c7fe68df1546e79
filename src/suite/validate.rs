//! Checks a merged [`RawSuite`] key by key against the workload specs and builds the typed [`Suite`].
//!
//! Validation keeps going after the first problem so that one `sbsuite validate` shows every
//! mistake in a file, each with its position and a fix.

mod groups;
mod phases;

use std::path::{Path, PathBuf};

use indexmap::IndexMap;

use super::clients::{ClientEntry, Clients, ServerHost, ServerHostAccess, TransportOptions};
use super::raw::{RawSuite, Repeat};
use super::scripts;
use super::{Axis, Matrix, Origins, RepeatUntil, STOP_WHEN_KEYS, StopWhen, Suite};
use crate::engine::Catalog;
use crate::engine::option::Kind;
use crate::source::{ConfigError, ConfigErrors, Seg, did_you_mean, path_text};
use crate::value::Value;

mod faults;

/// Most values one range axis may produce (a typo like `step = 0.001` should not hang `plan`).
const MAX_AXIS_VALUES: usize = 10_000;

struct Checker<'a> {
    file: &'a Path,
    origins: &'a Origins,
    /// The suite's workloads (built-in, declared, its scripts).
    catalog: &'a Catalog,
    errors: Vec<ConfigError>,
}

impl Checker<'_> {
    fn err(&mut self, path: &[Seg], key: bool, message: impl Into<String>, help: Option<String>) {
        let mut e = ConfigError::new(
            self.file,
            self.origins.origin(path, key),
            path_text(path),
            message,
        );
        e.help = help;
        self.errors.push(e);
    }

    /// Checks one option value; `name` must be a known option or `workload`.
    fn option_value(&mut self, path: &[Seg], name: &str, v: &toml::Value) -> Option<Value> {
        let Some(value) = Value::from_toml(v) else {
            self.err(
                path,
                false,
                format!("`{name}` cannot be a table or a date"),
                Some("write a number, a string or a boolean".into()),
            );
            return None;
        };
        self.typed(path, name, value)
    }

    fn typed(&mut self, path: &[Seg], name: &str, value: Value) -> Option<Value> {
        if name == groups::AXIS {
            // The names are checked against `[[groups]]` by `groups::check`.
            return match value {
                Value::Str(_) => Some(value),
                other => {
                    self.err(
                        path,
                        false,
                        format!("`groups` values are group names joined by `+`, found `{other}`"),
                        Some("e.g. groups = [\"oltp\", \"oltp+olap\"]: the [[groups]] each step runs".into()),
                    );
                    None
                }
            };
        }
        if name == "clients" {
            return match value {
                Value::Int(n) if n >= 1 => Some(value),
                other => {
                    self.err(
                        path,
                        false,
                        format!("`clients` must be a whole number of at least 1, found `{other}`"),
                        Some("the number of [clients] entries that run each step, e.g. clients = [1, 2, 3]".into()),
                    );
                    None
                }
            };
        }
        if name == "workload" {
            return match &value {
                Value::Str(w) if self.catalog.workload(w).is_some() => Some(value),
                Value::Str(w) if w.ends_with(".lua") => {
                    let help = format!(
                        "to run a sysbench Lua script, write workload = {{ script = \"{w}\" }} (the path relative to the suite file)"
                    );
                    self.err(path, false, format!("unknown workload `{w}`"), Some(help));
                    None
                }
                Value::Str(w) => {
                    let names = workload_names(self.catalog);
                    let help = did_you_mean(w, self.catalog.all().map(|w| w.name))
                        .map(|s| format!("{s} known workloads: {names}"))
                        .unwrap_or_else(|| format!("known workloads: {names}"));
                    self.err(path, false, format!("unknown workload `{w}`"), Some(help));
                    None
                }
                other => {
                    self.err(
                        path,
                        false,
                        format!(
                            "`workload` must be a string, found {} `{other}`",
                            other.type_name()
                        ),
                        Some(format!("known workloads: {}", workload_names(self.catalog))),
                    );
                    None
                }
            };
        }
        let spec = self.catalog.any_option(name)?;
        match spec.kind.coerce(&value) {
            Ok(v) => Some(v),
            Err(msg) => {
                let help = match spec.kind {
                    Kind::Int { min, .. } if value.as_i64().is_some_and(|i| i < min) => {
                        Some(format!("`{name}` must be at least {min}"))
                    }
                    _ => Some(format!("`{name}`: {}", spec.help)),
                };
                self.err(
                    path,
                    false,
                    format!("invalid value for `{name}`: {msg}"),
                    help,
                );
                None
            }
        }
    }

    /// Reports an option name that no workload knows.
    fn known_option(&mut self, path: &[Seg], name: &str) -> bool {
        if name == "workload" || self.catalog.any_option(name).is_some() {
            return true;
        }
        // Which of `[[groups]]` each step runs (#31): an axis of the matrix too.
        if name == groups::AXIS {
            if path.first() == Some(&Seg::key("matrix")) {
                return true;
            }
            self.err(
                path,
                true,
                "`groups` is a [matrix] axis, not a default".to_string(),
                Some("every step runs all of [[groups]]; to run some, write groups = [\"a\", \"a+b\"] in [matrix]".into()),
            );
            return false;
        }
        // How many clients run each step: an axis of the matrix, not an option of a step.
        if name == "clients" {
            if path.first() == Some(&Seg::key("matrix")) {
                return true;
            }
            self.err(
                path,
                true,
                "`clients` is a [matrix] axis, not a default".to_string(),
                Some("every step runs on all of [clients] list; to run on fewer, write clients = [N] in [matrix]".into()),
            );
            return false;
        }
        let keys: Vec<&str> = path
            .iter()
            .filter_map(|s| match s {
                Seg::Key(k) => Some(k.as_str()),
                Seg::Index(_) => None,
            })
            .collect();
        let names = || self.catalog.all_option_names().chain(["workload"]);
        let closest = crate::source::closest(name, names());
        let origin = self.origins.origin(path, true);
        let help = super::layers::unknown_key_help(self.catalog, &origin, &keys, closest)
            .or_else(|| did_you_mean(name, names()))
            .unwrap_or_else(|| {
                "run `sbsuite workloads` to list the options of each workload".into()
            });
        self.err(path, true, format!("unknown option `{name}`"), Some(help));
        false
    }
}

/// A shell command template (a hook, a fault's `command`): it must parse, and may not use
/// `env`, which commands do not have (only `password` does): the shell expands `$X` itself, and
/// keeps a secret out of hooks.log, which records each command as run. Refused here rather than
/// when the command first runs, mid-suite (#14). `what` names it in the message.
fn shell_template(c: &mut Checker<'_>, path: &[Seg], what: &str, command: &str) {
    let jinja = minijinja::Environment::new();
    match jinja.template_from_str(command) {
        Err(e) => c.err(
            path,
            false,
            format!("invalid {what} template: {e}"),
            Some("commands are shell commands with minijinja placeholders, e.g. \"echo {{ step }} >> steps.txt\"".into()),
        ),
        Ok(t) if t.undeclared_variables(false).contains("env") => {
            let vars: Vec<String> = t
                .undeclared_variables(true)
                .iter()
                .filter_map(|v| v.strip_prefix("env."))
                .map(|v| format!("${v}"))
                .collect();
            let example = vars.first().map_or("$DB_HOST", String::as_str);
            c.err(
                path,
                false,
                format!("{what} uses `env`, which commands do not have"),
                Some(format!("commands run under sh -c with sbsuite's environment: write {example} instead of {{{{ env.… }}}} (the shell expands it, and a secret stays out of hooks.log)")),
            );
        }
        Ok(_) => {}
    }
}

fn workload_names(catalog: &Catalog) -> String {
    catalog.all().map(|w| w.name).collect::<Vec<_>>().join(", ")
}

pub(super) fn validate(
    file: &Path,
    mut raw: RawSuite,
    origins: Origins,
    custom: crate::engine::custom::compile::Loaded,
    mut catalog: Catalog,
) -> Result<Suite, ConfigErrors> {
    // Scripts first: their options are known only once they are loaded and in the catalog. A
    // script that cannot be loaded leaves a table where a name should be, which every later
    // check would report again: its errors come alone.
    let origin = |p: &[Seg], k| origins.origin(p, k);
    let scripts = match scripts::load(file, slots(&mut raw), &origin, &mut catalog) {
        Ok(s) => s,
        Err(errors) => return Err(ConfigErrors(errors)),
    };
    let mut c = Checker {
        file,
        origins: &origins,
        catalog: &catalog,
        errors: Vec::new(),
    };
    let suite_path = |k: &str| [Seg::key("suite"), Seg::key(k)];

    let name = raw.suite.name.trim().to_string();
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\']) {
        c.err(
            &suite_path("name"),
            false,
            format!("invalid suite name `{}`", raw.suite.name),
            Some(
                "use a plain name such as \"oltp-sweep\" (it becomes a directory under results/)"
                    .into(),
            ),
        );
    }
    match &raw.suite.repeat {
        Repeat::Count(n) if !(1..=10_000).contains(n) => {
            c.err(
                &suite_path("repeat"),
                false,
                format!("repeat must be between 1 and 10000, found {n}"),
                Some("use repeat = 1 for a single pass, 3 or more to judge noise".into()),
            );
        }
        Repeat::Count(_) => {}
        Repeat::Rule(r) => {
            let path = |k: &str| [Seg::key("suite"), Seg::key("repeat"), Seg::key(k)];
            if !(2..=10_000).contains(&r.min) {
                c.err(
                    &path("min"),
                    false,
                    format!("repeat.min must be between 2 and 10000, found {}", r.min),
                    Some("a confidence interval needs at least 2 repetitions: use min = 3".into()),
                );
            }
            if !(2..=10_000).contains(&r.max) || r.max < r.min {
                c.err(
                    &path("max"),
                    false,
                    format!(
                        "repeat.max must be between repeat.min ({}) and 10000, found {}",
                        r.min, r.max
                    ),
                    Some("raise max above min, e.g. { min = 3, max = 20, … }".into()),
                );
            }
            if r.target_pct().is_none() {
                c.err(
                    &path("until"),
                    false,
                    format!("repeat.until `{}` is not a rule sbsuite knows", r.until),
                    Some(
                        "write \"ci95 < N%\", e.g. until = \"ci95 < 2%\": stop once the 95 % \
                         confidence interval is narrower than ± 2 % of the metric"
                            .into(),
                    ),
                );
            }
            if let Some(m) = &r.metric
                && !super::raw::REPEAT_METRICS.contains(&m.as_str())
            {
                c.err(
                    &path("metric"),
                    false,
                    format!("repeat.metric `{m}` is not one sbsuite can repeat on"),
                    Some(format!(
                        "use one of {} (default tps)",
                        super::raw::REPEAT_METRICS.join(", ")
                    )),
                );
            }
        }
    }
    if let Some(t) = &raw.suite.step_name
        && let Err(e) = minijinja::Environment::new().template_from_str(t)
    {
        c.err(
            &suite_path("step_name"),
            false,
            format!("invalid step_name template: {e}"),
            Some("e.g. step_name = \"{{ workload }}-t{{ threads }}\"".into()),
        );
    }
    if let Some(target) = &raw.target {
        // `[target] password`, then each `hosts` table's own.
        let passwords = target
            .password
            .as_deref()
            .map(|pw| (vec![Seg::key("target"), Seg::key("password")], pw))
            .into_iter()
            .chain(target.hosts.iter().enumerate().filter_map(|(i, h)| {
                let path = vec![
                    Seg::key("target"),
                    Seg::key("hosts"),
                    Seg::Index(i),
                    Seg::key("password"),
                ];
                h.password().map(|pw| (path, pw))
            }));
        for (path, pw) in passwords {
            if let Err(e) = minijinja::Environment::new().template_from_str(pw) {
                c.err(
                    &path,
                    false,
                    format!("invalid password template: {e}"),
                    Some(
                        "write password = \"{{ env.DB_PASSWORD }}\" and export DB_PASSWORD".into(),
                    ),
                );
            }
        }
    }

    if let Some(hooks) = &raw.hooks {
        for (key, command) in hooks.all() {
            shell_template(&mut c, &[Seg::key("hooks"), Seg::key(key)], key, command);
        }
        if hooks.timeout == 0 {
            c.err(
                &[Seg::key("hooks"), Seg::key("timeout")],
                false,
                "hooks.timeout must be at least 1 second".to_string(),
                Some("e.g. timeout = 60".into()),
            );
        }
    }

    faults::check(&mut c, &raw);

    let mut seen = std::collections::HashSet::new();
    for (i, v) in raw.variant.iter().enumerate() {
        let path = [Seg::key("variant"), Seg::Index(i), Seg::key("name")];
        let ok = !v.name.is_empty()
            && v.name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch));
        if !ok {
            c.err(&path, false, format!("invalid variant name `{}`", v.name), Some("use letters, digits, `-`, `_` and `.` (it becomes a CSV value and a file name)".into()));
        } else if !seen.insert(v.name.clone()) {
            c.err(
                &path,
                false,
                format!("duplicate variant name `{}`", v.name),
                Some("give each [[variant]] its own name".into()),
            );
        }
        sql_settings(&mut c, i, v);
    }

    variant_order(&mut c, &mut raw);
    metrics_address(&mut c, &raw);
    server_counters(&mut c, &raw);
    phases::check(&mut c, &raw);
    let groups = groups::check(&mut c, &raw);
    let clients = raw.clients.as_ref().and_then(|r| clients(&mut c, r));
    let capacity = super::capacity::check(&raw, &mut |p, k, m, h| c.err(p, k, m, h));
    let server_host = server_host(&mut c, &raw, clients.as_ref());
    let mut defaults = IndexMap::new();
    for (key, v) in &raw.defaults {
        let path = [Seg::key("defaults"), Seg::key(key)];
        if c.known_option(&path, key)
            && let Some(value) = c.option_value(&path, key, v)
        {
            defaults.insert(key.clone(), value);
        }
    }

    let matrix = matrix(&mut c, &raw.matrix);
    no_workload(&mut c, &raw);
    if !custom.defs.is_empty() {
        let driver = raw
            .target
            .as_ref()
            .map_or_else(|| crate::db::Target::sqlite_default().driver, |t| t.driver);
        let mut used = used_workloads(&defaults, &matrix);
        used.extend(groups.iter().filter_map(|g| g.workload.clone()));
        c.errors
            .extend(custom.check_drivers(&used, driver, raw.target.is_none()));
    }
    if c.errors.is_empty() {
        plan_size(&mut c, &raw, &matrix);
    }

    if !c.errors.is_empty() {
        return Err(ConfigErrors(c.errors));
    }
    // The stored suite holds the definitions themselves, not the paths of their files: a run
    // directory resumes and re-plans without them.
    raw.workloads = custom.inline.clone();
    raw.suite.workloads.clear();
    // Agents compile the suite's own workloads from their definitions, and load its scripts
    // from what the coordinator sends (#27).
    let clients = clients.map(|c| Clients {
        definitions: custom
            .inline
            .iter()
            .map(|(name, def)| (name.clone(), super::stored::definition_document(name, def)))
            .collect(),
        scripts: scripts.clone(),
        ..c
    });
    // Scripts likewise: their resolved path and hash, so that a resume finds them and can tell
    // a changed one.
    scripts.restore(slots(&mut raw));
    let resolved_toml = super::stored::resolved_toml(&raw);
    Ok(Suite {
        file: file.to_path_buf(),
        name,
        description: raw.suite.description,
        repeat: match &raw.suite.repeat {
            Repeat::Count(n) => *n as u32,
            Repeat::Rule(r) => r.max as u32,
        },
        repeat_rule: match &raw.suite.repeat {
            Repeat::Rule(r) => r.target_pct().map(|target_pct| RepeatUntil {
                min: r.min as u32,
                max: r.max as u32,
                target_pct,
                metric: r.metric.clone().unwrap_or_else(|| "tps".into()),
                paired: raw.suite.variant_order.pairs_repetitions(),
            }),
            Repeat::Count(_) => None,
        },
        results_dir: PathBuf::from(raw.suite.results_dir),
        step_name: raw.suite.step_name,
        on_error: raw.suite.on_error,
        variant_order: raw.suite.variant_order,
        order_seed: raw.suite.order_seed.unwrap_or(0) as u64,
        rate_overflow: raw.suite.rate_overflow,
        dataset: raw.suite.dataset,
        metrics: raw.suite.metrics.clone(),
        server_cost: raw.suite.server_cost,
        server_counters: raw.suite.server_counters.clone(),
        server_host,
        hooks: raw.hooks.unwrap_or_default(),
        faults: raw.faults,
        target: raw.target,
        defaults,
        matrix,
        variants: raw.variant,
        resolved_toml,
        scripts,
        clients,
        phases: raw.phases,
        groups,
        capacity,
        origins,
        custom,
        catalog,
    })
}

/// `[clients]`: every entry parses, the timeouts are at least a second.
fn clients(c: &mut Checker<'_>, raw: &super::raw::RawClients) -> Option<Clients> {
    let mut entries = Vec::new();
    if raw.list.is_empty() {
        c.err(
            &[Seg::key("clients"), Seg::key("list")],
            false,
            "clients.list is empty".to_string(),
            Some("list at least one client, e.g. list = [\"local:3\"], or remove [clients] to run in this process".into()),
        );
    }
    for (i, text) in raw.list.iter().enumerate() {
        match ClientEntry::parse(text) {
            Ok(e) => entries.push(e),
            Err(e) => c.err(
                &[Seg::key("clients"), Seg::key("list"), Seg::Index(i)],
                false,
                e,
                None,
            ),
        }
    }
    for (key, v) in [
        ("timeout", raw.timeout),
        ("connect_timeout", raw.connect_timeout),
    ] {
        if v == 0 {
            c.err(
                &[Seg::key("clients"), Seg::key(key)],
                false,
                format!("clients.{key} must be at least 1 second"),
                Some(format!("e.g. {key} = 10")),
            );
        }
    }
    let defaults = TransportOptions::default();
    let connect_timeout = std::time::Duration::from_secs(raw.connect_timeout.max(1));
    Some(Clients {
        entries,
        transport: TransportOptions {
            binary: raw.binary.clone().unwrap_or(defaults.binary),
            ssh_options: raw.ssh_options.clone(),
            kubectl: raw.kubectl.clone().unwrap_or(defaults.kubectl),
            kube_context: raw.kube_context.clone(),
            kube_container: raw.kube_container.clone(),
            connect_timeout,
        },
        binary: raw.binary.clone(),
        timeout: std::time::Duration::from_secs(raw.timeout.max(1)),
        definitions: Default::default(),
        scripts: Default::default(),
        connect_timeout,
    })
}

/// Where `raw` holds workload values.
fn slots(raw: &mut RawSuite) -> scripts::Slots<'_> {
    let mut matrix = None;
    let mut include = None;
    for (k, v) in raw.matrix.iter_mut() {
        match k.as_str() {
            "workload" => matrix = Some(v),
            "include" => include = Some(v),
            _ => {}
        }
    }
    scripts::Slots {
        defaults: raw.defaults.get_mut("workload"),
        matrix,
        include,
    }
}

/// Every workload a step of the suite may run: `[defaults]`, the matrix axis and `include`.
fn used_workloads(
    defaults: &IndexMap<String, Value>,
    m: &Matrix,
) -> std::collections::HashSet<String> {
    let mut used = std::collections::HashSet::new();
    let mut add = |v: &Value| {
        if let Value::Str(w) = v {
            used.insert(w.clone());
        }
    };
    defaults.get("workload").into_iter().for_each(&mut add);
    for axis in m.axes.iter().filter(|a| a.name == "workload") {
        axis.values.iter().for_each(&mut add);
    }
    m.include
        .iter()
        .filter_map(|cell| cell.get("workload"))
        .for_each(&mut add);
    used
}

/// `[suite] metrics`: the shape of a listen address, `HOST:PORT`, `:PORT` or `PORT`, checked
/// here so that `validate` and `plan` catch a typo with its line. Whether it can be listened on
/// is found out by `run` before its first step.
fn metrics_address(c: &mut Checker<'_>, raw: &RawSuite) {
    let Some(addr) = raw.suite.metrics.as_deref() else {
        return;
    };
    let text = addr.trim();
    let port = text.rsplit_once(':').map_or(text, |(_, p)| p);
    if port.parse::<u16>().is_err() {
        c.err(
            &[Seg::key("suite"), Seg::key("metrics")],
            false,
            format!("metrics = \"{addr}\" is not an address to listen on: no port (0-65535) after the last `:`"),
            Some("e.g. metrics = \":9464\" (loopback) or metrics = \"0.0.0.0:9464\" (every interface)".into()),
        );
    }
}

/// `[suite] server_counters`: each name is one the target's server can have
/// ([`crate::db::counters::check_name`]), and there is a server to read them from.
fn server_counters(c: &mut Checker<'_>, raw: &RawSuite) {
    let names = &raw.suite.server_counters;
    if names.is_empty() {
        return;
    }
    let Some(target) = raw.target.as_ref() else {
        c.err(
            &[Seg::key("suite"), Seg::key("server_counters")],
            false,
            "server_counters needs a database server to read them from, and the suite has no [target]".to_string(),
            Some("add a [target] with driver = \"mysql\" or \"pgsql\", or remove server_counters".into()),
        );
        return;
    };
    for (i, name) in names.iter().enumerate() {
        if let Err(e) = crate::db::counters::check_name(target.driver, name) {
            c.err(
                &[
                    Seg::key("suite"),
                    Seg::key("server_counters"),
                    Seg::Index(i),
                ],
                false,
                e,
                None,
            );
        }
    }
    if !raw.suite.server_cost {
        c.err(
            &[Seg::key("suite"), Seg::key("server_counters")],
            false,
            "server_counters are never read with server_cost = false".to_string(),
            Some("remove server_cost = false, or server_counters".into()),
        );
    }
}

/// `[target] server_host` and `server_ssh_options`: a host form sbsuite can reach, on a
/// target with a server whose cost is read. The transport is `[clients]`' (kubectl, context,
/// connect timeout, ssh options), `server_ssh_options` taking the place of the ssh options.
fn server_host(
    c: &mut Checker<'_>,
    raw: &RawSuite,
    clients: Option<&Clients>,
) -> Option<ServerHostAccess> {
    let target = raw.target.as_ref()?;
    let path = [Seg::key("target"), Seg::key("server_host")];
    let Some(text) = &target.server_host else {
        if target.server_ssh_options.is_some() {
            c.err(
                &[Seg::key("target"), Seg::key("server_ssh_options")],
                false,
                "server_ssh_options is for server_host, which is not set".to_string(),
                Some("add server_host = \"ssh:user@db-host\", or remove server_ssh_options".into()),
            );
        }
        return None;
    };
    let host = match ServerHost::parse(text) {
        Ok(h) => h,
        Err(e) => {
            c.err(&path, false, e, None);
            return None;
        }
    };
    if crate::db::counters::profile(target.driver)
        .pid_query
        .is_none()
    {
        c.err(
            &path,
            false,
            format!(
                "server_host: a {} target has no server process to read (it runs inside sbsuite)",
                target.driver.name()
            ),
            Some("remove server_host".into()),
        );
        return None;
    }
    if !raw.suite.server_cost {
        c.err(
            &path,
            false,
            "server_host is never read with server_cost = false".to_string(),
            Some("remove server_cost = false, or server_host".into()),
        );
        return None;
    }
    if target.dry_run == Some(true) {
        c.err(
            &path,
            false,
            "server_host is never read with dry_run = true (no server is reached)".to_string(),
            Some("remove dry_run, or server_host".into()),
        );
        return None;
    }
    let mut transport = clients.map(|c| c.transport.clone()).unwrap_or_default();
    if let Some(o) = &target.server_ssh_options {
        transport.ssh_options = o.clone();
    }
    Some(ServerHostAccess { host, transport })
}

/// `[suite] variant_order` and `order_seed`. Interleaving switches the server's settings
/// between runs, which a `restart` variant would do by restarting the server before every run
/// (and cold caches would then be part of every measurement): refused, since `blocked` is
/// the order that suits it. A randomized order without a seed gets one drawn here, written
/// into the resolved suite (stored with the run), so `--resume` rebuilds the same plan and a
/// later run can repeat the order.
fn variant_order(c: &mut Checker<'_>, raw: &mut RawSuite) {
    use super::raw::VariantOrder;
    let order = raw.suite.variant_order;
    if order != VariantOrder::Blocked
        && let Some(i) = raw.variant.iter().position(|v| v.restart.is_some())
    {
        c.err(
            &[Seg::key("suite"), Seg::key("variant_order")],
            false,
            format!(
                "variant_order = \"{}\" cannot switch variant `{}`: it has a `restart` section, and switching to it restarts the server before every run",
                order.as_str(),
                raw.variant[i].name
            ),
            Some("use variant_order = \"blocked\" (the default) for restart variants, or move settings the server can change at runtime to `set_global`".into()),
        );
    }
    match raw.suite.order_seed {
        Some(seed) if seed < 0 => c.err(
            &[Seg::key("suite"), Seg::key("order_seed")],
            false,
            format!("order_seed must be 0 or more, found {seed}"),
            Some("e.g. order_seed = 42".into()),
        ),
        None if order == VariantOrder::Randomized => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64);
            // Positive and well below 2^53, so it survives TOML and JSON readers alike.
            raw.suite.order_seed = Some((nanos % 1_000_000_000_000) as i64);
        }
        _ => {}
    }
}

/// A variant's `settings` and `sql` come together, and every template compiles and renders
/// with every setting (#14): a syntax error or a misspelt variable is caught before anything
/// runs, naming the key. The same holds for the `settings` of its `prepare` and `run` tables
/// (#28), whose `sql` defaults to the variant's.
fn sql_settings(c: &mut Checker, i: usize, v: &super::raw::RawVariant) {
    use super::raw::Stage;
    // A variant-level `sql` also serves the stages' `settings` that have none of their own.
    let serves_a_stage = Stage::ALL.iter().any(|s| {
        v.stage(*s)
            .is_some_and(|st| st.sql.is_none() && !st.settings.is_empty())
    });
    let at = [Seg::key("variant"), Seg::Index(i)];
    let sql = v.sql.as_ref().map(|sql| (sql, &at[..]));
    settings_block(c, &at, &v.name, &v.settings, sql, serves_a_stage);
    for stage in Stage::ALL {
        if let Some(st) = v.stage(stage) {
            stage_block(c, i, v, stage, st);
        }
    }
}

/// One `settings` + `sql` pair at `at` (a variant, or its `prepare`/`run` table): they come
/// together (`sql` alone is fine when `sql_serves` other tables), and the templates render.
/// `sql` is where it was written: `at`'s own, or the variant's for a stage without one.
fn settings_block(
    c: &mut Checker,
    at: &[Seg],
    variant: &str,
    settings: &IndexMap<String, Value>,
    sql: Option<(&super::raw::RawSqlSettings, &[Seg])>,
    sql_serves: bool,
) {
    let path = |base: &[Seg], key: &str| {
        let mut path = base.to_vec();
        // `sql.apply`, or `settings.<name>` (a name may hold dots itself).
        match key.split_once('.') {
            Some((table, rest)) => path.extend([Seg::key(table), Seg::key(rest)]),
            None => path.push(Seg::key(key)),
        }
        path
    };
    match sql {
        None if !settings.is_empty() => c.err(
            &path(at, "settings"),
            false,
            format!("variant `{variant}` has `settings` but no `sql` to apply them"),
            Some("add sql = { apply = \"…{{ name }} = {{ value }}\", read = \"…\" } (to the variant: its `prepare` and `run` use it too), or use set_global for MySQL variables and PostgreSQL parameters".into()),
        ),
        None => {}
        Some(_) if settings.is_empty() && !sql_serves => c.err(
            &path(at, "sql"),
            false,
            format!("variant `{variant}` has `sql` but no `settings`"),
            Some("add settings = { name = value, … }".into()),
        ),
        Some(_) if settings.is_empty() => {}
        Some((sql, sql_at)) => {
            let quote: crate::db::sql_settings::StringLiteral = &crate::db::dialect::quote;
            let checked =
                crate::db::sql_settings::statements(variant, settings, sql.templates(), quote, "NULL");
            if let Err((key, message)) = checked {
                let (help, base) = if key.starts_with("settings.") {
                    ("name the setting as the server does (letters, digits, `_` and `.`)", at)
                } else {
                    ("templates see `name`, `variant` and, in apply/restore, `value` (a SQL literal)", sql_at)
                };
                c.err(&path(base, &key), true, message, Some(help.into()));
            }
        }
    }
}

/// A variant's `prepare` or `run` table (#28): not empty, no `restart` (it applies to the whole
/// variant), no name the variant already sets for both stages, and its `settings` with its own
/// `sql` or the variant's.
fn stage_block(
    c: &mut Checker,
    i: usize,
    v: &super::raw::RawVariant,
    stage: super::raw::Stage,
    st: &super::raw::RawStage,
) {
    let at = [Seg::key("variant"), Seg::Index(i), Seg::key(stage.as_str())];
    let key = |k: &str| {
        let mut p = at.to_vec();
        p.push(Seg::key(k));
        p
    };
    if st.restart.is_some() {
        c.err(
            &key("restart"),
            true,
            format!(
                "variant `{}`: `restart` cannot be limited to the {stage} stage: a restart applies to the whole variant (restarting between loading and measuring would also empty the caches the prepare filled)",
                v.name
            ),
            Some(format!(
                "move `restart` to the variant itself, and put what the server can change at runtime in `{stage}.set_global` or `{stage}.settings`"
            )),
        );
    }
    if st.is_empty() && st.restart.is_none() {
        c.err(
            &at,
            false,
            format!("variant `{}`: `{stage}` sets nothing", v.name),
            Some(format!(
                "add set_global = {{ … }} or settings = {{ … }} to `{stage}`, or remove it"
            )),
        );
    }
    for (table, own, whole) in [
        ("set_global", &st.set_global, &v.set_global),
        ("settings", &st.settings, &v.settings),
    ] {
        for name in own.keys() {
            if whole.contains_key(name) {
                c.err(
                    &[at.to_vec(), vec![Seg::key(table), Seg::key(name)]].concat(),
                    true,
                    format!(
                        "variant `{}` sets {name} both for the whole variant and in `{stage}`",
                        v.name
                    ),
                    Some(format!(
                        "set {name} in one place: in the variant's {table} for both stages, or in `prepare.{table}` and `run.{table}` for a value per stage"
                    )),
                );
            }
        }
    }
    let whole_at = [Seg::key("variant"), Seg::Index(i)];
    let sql = match (&st.sql, &v.sql) {
        (Some(own), _) => Some((own, &at[..])),
        (None, Some(whole)) => Some((whole, &whole_at[..])),
        (None, None) => None,
    };
    // The variant's `sql` without settings here is no mistake: it serves the other table.
    let serves = st.sql.is_none();
    settings_block(c, &at, &v.name, &st.settings, sql, serves);
}

/// Every run the plan may hold: cells × repetitions × variants, for any combination of axes
/// (each below [`MAX_AXIS_VALUES`]) and `repeat`. The product is bounded before the plan is
/// built: nine million cells took gigabytes and minutes to plan, and even 100,000 runs of one
/// second each last more than a day.
const MAX_RUNS: u128 = 100_000;

fn plan_size(c: &mut Checker<'_>, raw: &RawSuite, m: &Matrix) {
    // Zipped axes advance together (validation made their lengths equal): one factor each.
    let mut cells: u128 = 1;
    let mut zipped: Vec<&str> = Vec::new();
    for axis in &m.axes {
        if zipped.contains(&axis.name.as_str()) {
            continue;
        }
        if let Some(group) = m.zip.iter().find(|z| z.contains(&axis.name)) {
            zipped.extend(group.iter().map(String::as_str));
        }
        cells = cells.saturating_mul(axis.values.len() as u128);
    }
    let cells = cells.saturating_add(m.include.len() as u128);
    let repeat = match &raw.suite.repeat {
        Repeat::Count(n) => *n,
        Repeat::Rule(r) => r.max,
    }
    .max(1) as u128;
    let variants = raw.variant.len().max(1) as u128;
    let runs = cells.saturating_mul(repeat).saturating_mul(variants);
    if runs > MAX_RUNS {
        let table = if m.axes.is_empty() { "suite" } else { "matrix" };
        c.err(
            &[Seg::key(table)],
            true,
            format!(
                "the suite plans {runs} runs ({cells} matrix cells × {repeat} repetitions × \
                 {variants} variants), more than {MAX_RUNS}"
            ),
            Some("narrow the axes or their ranges, lower `repeat`, or split the suite".into()),
        );
    }
}

/// Every step needs a workload: from `[defaults]`, a matrix axis or `include` cells. Without
/// any, the error points at the table to add it to (or the start of the file) instead of
/// surfacing later in the plan with no line to show.
fn no_workload(c: &mut Checker<'_>, raw: &RawSuite) {
    let names_one = |v: &toml::Value| v.as_table().is_some_and(|t| t.contains_key("workload"));
    let included = raw
        .matrix
        .get("include")
        .and_then(toml::Value::as_array)
        .is_some_and(|cells| cells.iter().any(names_one));
    if raw.defaults.contains_key("workload") || raw.matrix.contains_key("workload") || included {
        return;
    }
    let table = if raw.defaults.is_empty() && !raw.matrix.is_empty() {
        "matrix"
    } else {
        "defaults"
    };
    c.err(
        &[Seg::key(table), Seg::key("workload")],
        true,
        "no workload: every step needs one",
        Some(
            "set `workload = \"cpu\"` in [defaults], or an axis `workload = [...]` in [matrix] \
             (`sbsuite workloads` lists them)"
                .into(),
        ),
    );
}

const RESERVED: [&str; 4] = ["exclude", "include", "zip", "stop_when"];

fn matrix(c: &mut Checker<'_>, raw: &IndexMap<String, toml::Value>) -> Matrix {
    // Axes nest in the order the file wrote them, axes added only by the environment or
    // --set after them: the order `raw` has (see `stored::in_file_order`).
    let mut m = Matrix::default();
    for (key, v) in raw.iter().filter(|(k, _)| !RESERVED.contains(&k.as_str())) {
        let path = [Seg::key("matrix"), Seg::key(key)];
        if !c.known_option(&path, key) {
            continue;
        }
        if let Some(values) = axis(c, &path, key, v) {
            m.axes.push(Axis {
                name: key.clone(),
                values,
            });
        }
    }
    let axis_names: Vec<&str> = m.axes.iter().map(|a| a.name.as_str()).collect();
    let axis_names: Vec<String> = axis_names.iter().map(|s| s.to_string()).collect();

    for which in ["exclude", "include"] {
        let Some(v) = raw.get(which) else { continue };
        let path = [Seg::key("matrix"), Seg::key(which)];
        let Some(entries) = v.as_array() else {
            c.err(
                &path,
                false,
                format!("`{which}` must be a list of tables"),
                Some(format!(
                    "e.g. {which} = [{{ workload = \"cpu\", threads = 64 }}]"
                )),
            );
            continue;
        };
        for (i, entry) in entries.iter().enumerate() {
            let epath = [Seg::key("matrix"), Seg::key(which), Seg::Index(i)];
            let Some(table) = entry.as_table() else {
                c.err(
                    &epath,
                    false,
                    format!("each `{which}` entry must be a table"),
                    Some("e.g. { threads = 64 }".to_string()),
                );
                continue;
            };
            if table.is_empty() {
                c.err(
                    &epath,
                    false,
                    format!("empty `{which}` entry"),
                    Some("name at least one axis and its value".into()),
                );
            }
            let mut cell = IndexMap::new();
            for (k, val) in table {
                let kpath = [
                    Seg::key("matrix"),
                    Seg::key(which),
                    Seg::Index(i),
                    Seg::key(k),
                ];
                if which == "exclude" && !axis_names.contains(k) {
                    let help = did_you_mean(k, axis_names.iter().map(String::as_str))
                        .unwrap_or_else(|| format!("matrix axes: {}", axis_names.join(", ")));
                    c.err(
                        &kpath,
                        true,
                        format!("exclude key `{k}` is not a matrix axis"),
                        Some(help),
                    );
                    continue;
                }
                if !c.known_option(&kpath, k) {
                    continue;
                }
                let typed = match val {
                    toml::Value::Array(items) if which == "exclude" => {
                        let vals: Vec<Value> = items
                            .iter()
                            .enumerate()
                            .filter_map(|(j, item)| {
                                let ipath = [
                                    Seg::key("matrix"),
                                    Seg::key(which),
                                    Seg::Index(i),
                                    Seg::key(k),
                                    Seg::Index(j),
                                ];
                                c.option_value(&ipath, k, item)
                            })
                            .collect();
                        Some(Value::List(vals))
                    }
                    _ => c.option_value(&kpath, k, val),
                };
                if let Some(t) = typed {
                    cell.insert(k.clone(), t);
                }
            }
            if which == "exclude" {
                m.exclude.push(cell);
            } else {
                m.include.push(cell);
            }
        }
    }

    if let Some(v) = raw.get("zip") {
        zip(c, v, &mut m);
    }
    if let Some(v) = raw.get("stop_when") {
        stop_when(c, v, &mut m);
    }
    m
}

fn stop_when(c: &mut Checker<'_>, v: &toml::Value, m: &mut Matrix) {
    let path = [Seg::key("matrix"), Seg::key("stop_when")];
    let help = Some(
        "e.g. stop_when = { threads = { tps_gain_below = 5, p95_above = 50 } } (percent; milliseconds)"
            .to_string(),
    );
    let Some(table) = v.as_table() else {
        c.err(
            &path,
            false,
            "`stop_when` must be a table of axis = { condition = number }",
            help,
        );
        return;
    };
    for (axis, conds) in table {
        let apath = [Seg::key("matrix"), Seg::key("stop_when"), Seg::key(axis)];
        let Some(a) = m.axes.iter().find(|a| &a.name == axis) else {
            let known: Vec<&str> = m.axes.iter().map(|a| a.name.as_str()).collect();
            let h = did_you_mean(axis, known.iter().copied())
                .unwrap_or_else(|| format!("matrix axes: {}", known.join(", ")));
            c.err(
                &apath,
                true,
                format!("`{axis}` is not a matrix axis"),
                Some(h),
            );
            continue;
        };
        if !a
            .values
            .iter()
            .all(|v| matches!(v, Value::Int(_) | Value::Float(_)))
        {
            c.err(
                &apath,
                true,
                format!("`stop_when` needs a numeric axis, and `{axis}` has other values"),
                Some("use it on threads, table_size, rate and similar axes".into()),
            );
            continue;
        }
        let Some(conds) = conds.as_table() else {
            c.err(&apath, false, "conditions must be a table", help.clone());
            continue;
        };
        let mut s = StopWhen {
            axis: axis.clone(),
            ..Default::default()
        };
        for (k, val) in conds {
            let kpath = [
                Seg::key("matrix"),
                Seg::key("stop_when"),
                Seg::key(axis),
                Seg::key(k),
            ];
            let number = match val {
                toml::Value::Integer(i) => Some(*i as f64),
                toml::Value::Float(f) => Some(*f),
                _ => None,
            };
            let Some(n) = number.filter(|n| n.is_finite() && *n >= 0.0) else {
                c.err(
                    &kpath,
                    false,
                    format!("`{k}` must be a number ≥ 0"),
                    help.clone(),
                );
                continue;
            };
            match k.as_str() {
                "tps_gain_below" => s.tps_gain_below = Some(n),
                "qps_gain_below" => s.qps_gain_below = Some(n),
                "p95_above" => s.p95_above = Some(n),
                "p99_above" => s.p99_above = Some(n),
                "avg_above" => s.avg_above = Some(n),
                _ => {
                    let h = did_you_mean(k, STOP_WHEN_KEYS.iter().copied())
                        .unwrap_or_else(|| format!("conditions: {}", STOP_WHEN_KEYS.join(", ")));
                    c.err(
                        &kpath,
                        true,
                        format!("unknown stop_when condition `{k}`"),
                        Some(h),
                    );
                }
            }
        }
        if conds.is_empty() {
            c.err(&apath, false, "no condition given", help.clone());
        }
        m.stop_when.push(s);
    }
}

fn zip(c: &mut Checker<'_>, v: &toml::Value, m: &mut Matrix) {
    let path = [Seg::key("matrix"), Seg::key("zip")];
    let help = Some("e.g. zip = [[\"tables\", \"table_size\"]] with tables = [1, 10] and table_size = [1000000, 100000]".to_string());
    let Some(groups) = v.as_array() else {
        c.err(
            &path,
            false,
            "`zip` must be a list of lists of axis names",
            help,
        );
        return;
    };
    let mut used: Vec<String> = Vec::new();
    for (i, g) in groups.iter().enumerate() {
        let gpath = [Seg::key("matrix"), Seg::key("zip"), Seg::Index(i)];
        let names: Option<Vec<String>> = g
            .as_array()
            .and_then(|a| a.iter().map(|n| n.as_str().map(str::to_string)).collect());
        let Some(names) = names else {
            c.err(
                &gpath,
                false,
                "each `zip` group must be a list of axis names",
                help.clone(),
            );
            continue;
        };
        if names.len() < 2 {
            c.err(
                &gpath,
                false,
                "a `zip` group needs at least two axes",
                help.clone(),
            );
            continue;
        }
        let mut len = None;
        for n in &names {
            let Some(axis) = m.axes.iter().find(|a| &a.name == n) else {
                let known: Vec<&str> = m.axes.iter().map(|a| a.name.as_str()).collect();
                let h = did_you_mean(n, known.iter().copied())
                    .unwrap_or_else(|| format!("matrix axes: {}", known.join(", ")));
                c.err(
                    &gpath,
                    false,
                    format!("zip names `{n}`, which is not a matrix axis"),
                    Some(h),
                );
                continue;
            };
            if used.contains(n) {
                c.err(
                    &gpath,
                    false,
                    format!("axis `{n}` is in more than one zip group"),
                    None,
                );
            }
            used.push(n.clone());
            match len {
                None => len = Some((n.clone(), axis.values.len())),
                Some((ref first, l)) if l != axis.values.len() => {
                    c.err(&gpath, false, format!("zipped axes must have the same length: `{first}` has {l} values, `{n}` has {}", axis.values.len()), Some("give each zipped axis one value per combination".into()));
                }
                _ => {}
            }
        }
        m.zip.push(names);
    }
}

/// One axis: a list, a single value, or a `{ from, to, step | factor }` range.
fn axis(c: &mut Checker<'_>, path: &[Seg], key: &str, v: &toml::Value) -> Option<Vec<Value>> {
    let raw_values: Vec<(Vec<Seg>, Value)> = match v {
        toml::Value::Array(items) => {
            if items.is_empty() {
                c.err(path, false, format!("axis `{key}` is empty"), Some(format!("give at least one value, e.g. {key} = [1, 2]; to use the default, remove the axis")));
                return None;
            }
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let mut ipath = path.to_vec();
                ipath.push(Seg::Index(i));
                match Value::from_toml(item) {
                    Some(Value::List(_)) | None => {
                        c.err(
                            &ipath,
                            false,
                            format!("values of axis `{key}` must be numbers, strings or booleans"),
                            None,
                        );
                    }
                    Some(val) => out.push((ipath, val)),
                }
            }
            out
        }
        toml::Value::Table(t) => range(c, path, key, t)?
            .into_iter()
            .map(|val| (path.to_vec(), val))
            .collect(),
        other => match Value::from_toml(other) {
            Some(val) => vec![(path.to_vec(), val)],
            None => {
                c.err(path, false, format!("axis `{key}` cannot be a date"), None);
                return None;
            }
        },
    };
    let before = c.errors.len();
    let mut values: Vec<Value> = Vec::new();
    for (p, val) in raw_values {
        if let Some(t) = c.typed(&p, key, val) {
            if values.contains(&t) {
                c.err(
                    &p,
                    false,
                    format!("axis `{key}` lists the value `{t}` twice"),
                    Some("remove the duplicate".into()),
                );
            }
            values.push(t);
        }
    }
    (c.errors.len() == before).then_some(values)
}

fn range(c: &mut Checker<'_>, path: &[Seg], key: &str, t: &toml::Table) -> Option<Vec<Value>> {
    const RANGE_KEYS: [&str; 4] = ["from", "to", "step", "factor"];
    let mut ok = true;
    for k in t.keys() {
        if !RANGE_KEYS.contains(&k.as_str()) {
            let mut p = path.to_vec();
            p.push(Seg::key(k));
            let help = did_you_mean(k, RANGE_KEYS)
                .unwrap_or_else(|| "a range has `from`, `to` and either `step` or `factor`".into());
            c.err(
                &p,
                true,
                format!("unknown key `{k}` in the range of axis `{key}`"),
                Some(help),
            );
            ok = false;
        }
    }
    let mut num = |k: &str, required: bool| -> Option<Option<f64>> {
        let mut p = path.to_vec();
        p.push(Seg::key(k));
        match t.get(k) {
            None if required => {
                c.err(
                    path,
                    false,
                    format!("the range of axis `{key}` needs `{k}`"),
                    Some(format!(
                        "e.g. {key} = {{ from = 32, to = 1024, factor = 2 }}"
                    )),
                );
                None
            }
            None => Some(None),
            Some(toml::Value::Integer(i)) => Some(Some(*i as f64)),
            Some(toml::Value::Float(x)) => Some(Some(*x)),
            Some(other) => {
                c.err(
                    &p,
                    false,
                    format!("`{k}` must be a number, found {}", other.type_str()),
                    None,
                );
                None
            }
        }
    };
    let from = num("from", true);
    let to = num("to", true);
    let step = num("step", false);
    let factor = num("factor", false);
    let (Some(Some(from)), Some(Some(to)), Some(step), Some(factor)) = (from, to, step, factor)
    else {
        return None;
    };
    if !ok {
        return None;
    }
    let all_int = t.values().all(|v| v.is_integer());
    let sub = |k: &str| {
        let mut p = path.to_vec();
        p.push(Seg::key(k));
        p
    };
    if from > to {
        c.err(
            &sub("from"),
            false,
            format!("range of axis `{key}` goes from {from} to {to}: `from` is greater than `to`"),
            Some("swap them, or list the values in the order you want".into()),
        );
        return None;
    }
    let mut values = Vec::new();
    match (step, factor) {
        (Some(_), Some(_)) => {
            c.err(
                path,
                false,
                format!("the range of axis `{key}` has both `step` and `factor`"),
                Some("use `step` for 1,2,3… or `factor` for 32,64,128…".into()),
            );
            return None;
        }
        (_, Some(f)) => {
            if f <= 1.0 {
                c.err(
                    &sub("factor"),
                    false,
                    format!("factor must be greater than 1, found {f}"),
                    Some("e.g. factor = 2 for 32, 64, 128, …".into()),
                );
                return None;
            }
            if from <= 0.0 {
                c.err(
                    &sub("from"),
                    false,
                    format!("a geometric range must start above 0, found {from}"),
                    None,
                );
                return None;
            }
            let mut x = from;
            while x <= to * (1.0 + 1e-12) && values.len() <= MAX_AXIS_VALUES {
                values.push(x);
                x *= f;
            }
        }
        (step, None) => {
            let s = step.unwrap_or(1.0);
            if s <= 0.0 {
                c.err(
                    &sub("step"),
                    false,
                    format!("step must be greater than 0, found {s}"),
                    None,
                );
                return None;
            }
            let mut i = 0.0;
            loop {
                let x = from + i * s;
                if x > to * (1.0 + 1e-12) + 1e-12 || values.len() > MAX_AXIS_VALUES {
                    break;
                }
                values.push(x);
                i += 1.0;
            }
        }
    }
    if values.len() > MAX_AXIS_VALUES {
        c.err(
            path,
            false,
            format!("the range of axis `{key}` has more than {MAX_AXIS_VALUES} values"),
            Some("use a larger step or factor".into()),
        );
        return None;
    }
    Some(
        values
            .into_iter()
            .map(|x| {
                if all_int {
                    Value::Int(x.round() as i64)
                } else {
                    Value::Float(x)
                }
            })
            .collect(),
    )
}
