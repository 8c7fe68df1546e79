//! `obd test sysbench DEPLOY …` lines (the OceanBase Deployer's sysbench loop) for
//! `sbsuite convert` (#14).
//!
//! obd runs sysbench itself: for each `--script-name` (a comma list) it cleans up, prepares
//! and runs once per `--threads` value (a comma list), with `--mysql-user=USER@TENANT`, its
//! own defaults (30 tables × 20,000 rows, 16 threads, 60 s, a report every 10 s) and
//! `--db-ps-mode=disable`. So an obd line is translated into the sysbench lines obd would run
//! (one per script × threads value), which then go through the same conversion as typed
//! sysbench lines ([`super::convert`]): the lines become matrix axes, and every option is
//! checked by the sysbench parser. What only obd knows (the deployment's hosts and ports) is
//! a `[target]` the user completes ([`ObdTarget::toml`]). Every obd option is mapped or named
//! in a note; an option obd does not have is an error, as obd would refuse it too.

use super::target::{ignore_errors, toml_str};

/// What the `[target]` of an obd line is made of.
#[derive(Clone, Debug, PartialEq)]
pub struct ObdTarget {
    pub deploy: String,
    /// `--component`: `obproxy` (default port 2883) or `oceanbase-ce` (2881); obd tries the
    /// proxy first.
    pub component: Option<String>,
    pub test_server: Option<String>,
    pub user: String,
    pub tenant: String,
    pub database: String,
    /// `--mysql-ignore-errors` as given.
    pub ignore_errors: Option<String>,
}

/// One obd line, translated.
#[derive(Debug)]
pub struct ObdLine {
    /// The sysbench command lines obd runs (the `run` ones), one per script × threads value.
    pub lines: Vec<Vec<String>>,
    pub target: ObdTarget,
    /// The line as typed, the password masked, for the suite's header.
    pub echo: String,
    /// One note per option the suite does not carry, naming it and why.
    pub notes: Vec<String>,
}

/// Whether `words` is an `obd test sysbench` line.
pub fn is_obd(words: &[String]) -> bool {
    words.len() >= 3
        && words[0].rsplit('/').next() == Some("obd")
        && words[1] == "test"
        && words[2] == "sysbench"
}

/// What obd does with an option.
#[derive(Clone, Copy)]
enum Kind {
    /// A sysbench option obd passes on, under this name.
    Sysbench(&'static str),
    /// A comma list: one sysbench line per item.
    Threads,
    Scripts,
    /// A `[target]` key.
    Target,
    /// Nothing sbsuite does; why, for the note.
    Dropped(&'static str),
    /// A flag without a value, dropped (why).
    Flag(&'static str),
}

/// obd 2.x's `test sysbench` options: long name, short name, what becomes of it.
const OPTIONS: [(&str, Option<char>, Kind); 23] = [
    ("component", Some('c'), Kind::Target),
    ("test-server", None, Kind::Target),
    ("user", None, Kind::Target),
    ("password", None, Kind::Target),
    ("tenant", Some('t'), Kind::Target),
    ("database", None, Kind::Target),
    ("mysql-ignore-errors", None, Kind::Target),
    ("script-name", None, Kind::Scripts),
    ("threads", None, Kind::Threads),
    ("table-size", None, Kind::Sysbench("table-size")),
    ("tables", None, Kind::Sysbench("tables")),
    ("time", None, Kind::Sysbench("time")),
    ("interval", None, Kind::Sysbench("report-interval")),
    ("events", None, Kind::Sysbench("events")),
    ("rand-type", None, Kind::Sysbench("rand-type")),
    ("percentile", None, Kind::Sysbench("percentile")),
    ("skip-trx", None, Kind::Sysbench("skip-trx")),
    (
        "obclient-bin",
        None,
        Kind::Dropped("sbsuite needs no obclient (it connects itself)"),
    ),
    (
        "sysbench-bin",
        None,
        Kind::Dropped("sbsuite runs its own engines, not a sysbench binary"),
    ),
    (
        "sysbench-script-dir",
        None,
        Kind::Dropped("the workloads are built in; no Lua script is read"),
    ),
    (
        "optimization",
        Some('O'),
        Kind::Dropped(
            "obd tunes tenant variables and cluster parameters before its test (level 1 at runtime, 2 with restarts); sbsuite changes nothing it is not told to: put the settings you want in a [[variant]] (set_global for tenant variables, settings + sql for ALTER SYSTEM parameters, see suites/oceanbase.toml)",
        ),
    ),
    (
        "skip-cluster-status-check",
        Some('S'),
        Kind::Flag(
            "sbsuite checks no cluster status; a server that cannot be reached fails its dataset",
        ),
    ),
    (
        "help",
        Some('h'),
        Kind::Flag("help prints obd's usage; nothing to convert"),
    ),
];

/// obd's defaults, which it always passes to sysbench (`--interval` as `report-interval`).
const DEFAULTS: [(&str, &str); 4] = [
    ("table-size", "20000"),
    ("tables", "30"),
    ("time", "60"),
    ("report-interval", "10"),
];

/// Translates one `obd test sysbench` line; the error names the option and the fix.
pub fn translate(words: &[String]) -> Result<ObdLine, String> {
    let mut deploy: Option<String> = None;
    let mut given: Vec<(&'static str, Kind, String)> = Vec::new();
    let mut echo = words[..3].to_vec();
    let mut rest = words[3..].iter();
    while let Some(w) = rest.next() {
        let (spec, inline) = if let Some(long) = w.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let name = name.replace('_', "-");
            let spec = OPTIONS.iter().find(|o| o.0 == name).ok_or_else(|| {
                format!(
                    "`obd test sysbench` has no option --{name}; its options: {}",
                    OPTIONS.map(|o| format!("--{}", o.0)).join(", ")
                )
            })?;
            (spec, value)
        } else if let Some(short) = w.strip_prefix('-').filter(|s| !s.is_empty()) {
            let c = short.chars().next().unwrap_or_default();
            let spec = OPTIONS
                .iter()
                .find(|o| o.1 == Some(c))
                .ok_or_else(|| format!("`obd test sysbench` has no option -{c}"))?;
            let attached = &short[c.len_utf8()..];
            (spec, (!attached.is_empty()).then(|| attached.to_string()))
        } else {
            if let Some(d) = &deploy {
                return Err(format!(
                    "`{w}` after the deployment name `{d}`: `obd test sysbench` takes one deployment; quote values with spaces"
                ));
            }
            deploy = Some(w.clone());
            echo.push(w.clone());
            continue;
        };
        let (name, _, kind) = *spec;
        let value = match (kind, inline) {
            (Kind::Flag(_), Some(v)) => {
                return Err(format!("--{name} takes no value (given `{v}`)"));
            }
            (Kind::Flag(_), None) => String::new(),
            (_, Some(v)) => v,
            (_, None) => rest
                .next()
                .cloned()
                .ok_or_else(|| format!("--{name} needs a value, e.g. --{name}=VALUE"))?,
        };
        echo.push(match (kind, name) {
            (Kind::Flag(_), _) => format!("--{name}"),
            (_, "password") => "--password=***".to_string(),
            _ => format!("--{name}={value}"),
        });
        given.push((name, kind, value));
    }
    let deploy = deploy.ok_or_else(|| {
        "`obd test sysbench` needs the deployment name: obd test sysbench DEPLOY …".to_string()
    })?;
    let last = |name: &str| {
        given
            .iter()
            .rev()
            .find(|g| g.0 == name)
            .map(|g| g.2.clone())
    };
    let target = ObdTarget {
        deploy,
        component: last("component"),
        test_server: last("test-server"),
        user: last("user").unwrap_or_else(|| "root".into()),
        tenant: last("tenant").unwrap_or_else(|| "test".into()),
        database: last("database").unwrap_or_else(|| "test".into()),
        ignore_errors: last("mysql-ignore-errors"),
    };
    let list = |name: &str, default: &str| -> Vec<String> {
        last(name)
            .unwrap_or_else(|| default.to_string())
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    };
    let scripts = list("script-name", "oltp_point_select");
    let threads = list("threads", "16");
    let mut options: Vec<(String, String)> = DEFAULTS
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut notes = Vec::new();
    for (name, kind, value) in &given {
        match kind {
            Kind::Sysbench(key) => {
                // obd passes --skip-trx only when it is on or off.
                if *key == "skip-trx" && !["on", "off"].contains(&value.as_str()) {
                    notes.push(format!(
                        "note: --skip-trx={value} is left out: obd passes only on or off"
                    ));
                    continue;
                }
                match options.iter_mut().find(|o| o.0 == *key) {
                    Some(o) => o.1 = value.clone(),
                    None => options.push((key.to_string(), value.clone())),
                }
            }
            Kind::Dropped(_) if *name == "optimization" && value == "0" => notes.push(
                "note: --optimization=0 is left out: obd tunes nothing at level 0, and neither does sbsuite".into(),
            ),
            Kind::Dropped(why) | Kind::Flag(why) => {
                notes.push(format!("note: --{name} is left out: {why}"))
            }
            Kind::Target | Kind::Threads | Kind::Scripts => {}
        }
    }
    if last("optimization").is_none() {
        notes.push(
            "note: obd's default --optimization=1 tunes tenant variables and cluster parameters before its test; the suite changes none: add a [[variant]] with the settings you want (see suites/oceanbase.toml)".into(),
        );
    }
    if target.test_server.is_some() || target.component.is_some() {
        notes.push(format!(
            "note: --component/--test-server name a server of obd's deployment `{}`: put its address in [target] hosts",
            target.deploy
        ));
    }
    let mut lines = Vec::new();
    for script in &scripts {
        let script = script.trim_end_matches(".lua");
        for t in &threads {
            let mut line = vec![script.to_string()];
            line.extend(options.iter().map(|(k, v)| format!("--{k}={v}")));
            line.push(format!("--threads={t}"));
            line.push("run".to_string());
            lines.push(line);
        }
    }
    Ok(ObdLine {
        lines,
        target,
        echo: echo.join(" "),
        notes,
    })
}

impl ObdTarget {
    /// The `[target]` section: what obd's line says, and placeholders (with a comment) for the
    /// address only obd's deployment knows. The password is always an environment template.
    pub fn toml(&self, notes: &mut Vec<String>) -> String {
        let (component, host, port) = match self.component.as_deref() {
            Some("oceanbase-ce" | "oceanbase") => ("an observer", "OBSERVER_HOST", 2881),
            _ => ("obproxy", "OBPROXY_HOST", 2883),
        };
        let server = self
            .test_server
            .as_deref()
            .map(|s| format!(" (server `{s}`)"))
            .unwrap_or_default();
        let mut t = String::from("[target]\n");
        t.push_str(&format!(
            "# obd connected to {component}{server} of its deployment `{deploy}`: replace {host} with\n\
             # its address (`obd cluster display {deploy}` lists it; obproxy listens on 2883, an\n\
             # observer on 2881). Through obproxy to a named cluster the user is USER@TENANT#CLUSTER.\n",
            deploy = self.deploy
        ));
        t.push_str("driver = \"mysql\"\n");
        t.push_str(&format!("hosts = [\"{host}:{port}\"]\n"));
        t.push_str(&format!(
            "user = {}\n",
            toml_str(&format!("{}@{}", self.user, self.tenant))
        ));
        t.push_str("password = \"{{ env.OB_PASSWORD }}\"\n");
        t.push_str(&format!("database = {}\n", toml_str(&self.database)));
        t.push_str("# obd runs sysbench with --db-ps-mode=disable.\nps_mode = \"disable\"\n");
        if let Some(ignore) = &self.ignore_errors {
            t.push_str(&ignore_errors(ignore));
        }
        notes.push(format!(
            "note: [target] hosts is a placeholder ({host}:{port}): obd finds the address in its deployment `{}`; the password is read from $OB_PASSWORD",
            self.deploy
        ));
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn lists_expand_defaults_are_spelled_out_and_the_password_is_masked() {
        let o = translate(&words(
            "obd test sysbench obtest --tenant sb -c obproxy --script-name=oltp_read_only.lua,oltp_write_only --threads=32,64 --table-size=1000 --interval 5 --password s3cret -O 2 -S",
        ))
        .unwrap();
        assert_eq!(o.lines.len(), 4);
        assert_eq!(
            o.lines[0].join(" "),
            "oltp_read_only --table-size=1000 --tables=30 --time=60 --report-interval=5 --threads=32 run"
        );
        assert_eq!(o.lines[3][0], "oltp_write_only");
        assert_eq!(o.lines[3][5], "--threads=64");
        assert_eq!(o.target.user, "root");
        assert_eq!(o.target.tenant, "sb");
        assert_eq!(o.target.component.as_deref(), Some("obproxy"));
        assert!(!o.echo.contains("s3"), "{}", o.echo);
        assert!(o.echo.contains("--password=***"), "{}", o.echo);
        assert!(
            o.notes
                .iter()
                .any(|n| n.contains("--optimization is left out")),
            "{:?}",
            o.notes
        );
        assert!(
            o.notes
                .iter()
                .any(|n| n.contains("--skip-cluster-status-check is left out")),
            "{:?}",
            o.notes
        );
    }

    #[test]
    fn unknown_options_and_a_missing_deployment_are_errors() {
        let e = translate(&words("obd test sysbench d --thread=8")).unwrap_err();
        assert!(e.contains("no option --thread;"), "{e}");
        let e = translate(&words("obd test sysbench --threads=8")).unwrap_err();
        assert!(e.contains("needs the deployment name"), "{e}");
        let e = translate(&words("obd test sysbench d --time")).unwrap_err();
        assert!(e.contains("--time needs a value"), "{e}");
        let e = translate(&words("obd test sysbench d -S=1")).unwrap_err();
        assert!(e.contains("takes no value"), "{e}");
    }

    #[test]
    fn the_target_has_placeholders_and_an_environment_password() {
        let o = translate(&words(
            "obd test sysbench prod --component=oceanbase-ce --test-server=server2 --user=bench -t tpcc --database=sb --mysql-ignore-errors=6002,4012",
        ))
        .unwrap();
        let mut notes = Vec::new();
        let t = o.target.toml(&mut notes);
        assert!(t.contains("hosts = [\"OBSERVER_HOST:2881\"]\n"), "{t}");
        assert!(
            t.contains("an observer (server `server2`) of its deployment `prod`"),
            "{t}"
        );
        assert!(t.contains("user = \"bench@tpcc\"\n"), "{t}");
        assert!(t.contains("password = \"{{ env.OB_PASSWORD }}\"\n"), "{t}");
        assert!(t.contains("database = \"sb\"\n"), "{t}");
        assert!(t.contains("ignore_errors = [6002, 4012]\n"), "{t}");
        assert!(notes[0].contains("placeholder"), "{notes:?}");
    }
}
