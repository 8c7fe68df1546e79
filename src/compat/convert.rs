//! sysbench command lines → one suite file (TOML text).
//!
//! A benchmark written as a shell loop of sysbench calls is a matrix in disguise: lines that
//! agree on most options and differ in a few become `[defaults]` plus `[matrix]` axes (test
//! names become the `workload` axis), with `exclude` entries for combinations the loop never
//! ran, so the suite's plan runs exactly the given lines. Each line goes through the same
//! parser as `sbsuite sysbench` ([`super::args`]), so a line that would not run does not
//! convert either. Passwords never reach the output: `[target]` gets an `{{ env.… }}` template
//! and the echoed command lines are redacted. No option is dropped silently: the parser gives
//! every option a [`args::Fate`], and each one the suite does not carry becomes a note naming
//! it and why.

use indexmap::IndexMap;

use super::args::{self, Action, ArgsError, Invocation};
use super::obd;
use super::target::{ignore_errors, toml_str};
use crate::value::Value;

#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    #[error("line {line}: {source}")]
    Line { line: usize, source: ArgsError },
    #[error("line {line}: unbalanced quote; quote whole words, e.g. --mysql-user='a b'")]
    Quote { line: usize },
    #[error("no sysbench command line given: pass one after `--`, or lines on stdin")]
    Empty,
    #[error(
        "the lines use different databases (line {line}: {what}); convert one target at a time"
    )]
    Targets { line: usize, what: String },
    #[error("line {line}: {message}")]
    Obd { line: usize, message: String },
    #[error("line {line}: {message}")]
    Loop { line: usize, message: String },
}

/// Splits a shell-style line into words: whitespace separates, '…' and "…" quote, `\` escapes.
pub fn split_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        ch => cur.push(ch),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => cur.push(chars.next()?),
                        ch => cur.push(ch),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(ch) = chars.next() {
                    cur.push(ch);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Some(words)
}

/// The command lines of a text: `#` comment lines and blanks skipped, `\` continuations joined,
/// `;` separating commands, shell `for NAME in A B C; do …; done` loops (nested too) expanded
/// with `$NAME`/`${NAME}` replaced, a leading `sysbench` dropped. Returns `(first line number,
/// words)`.
pub fn command_lines(text: &str) -> Result<Vec<(usize, Vec<String>)>, ConvertError> {
    let mut logical = Vec::new();
    let mut pending = String::new();
    let mut start = 0;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if pending.is_empty() && (t.is_empty() || t.starts_with('#')) {
            continue;
        }
        if pending.is_empty() {
            start = i + 1;
        }
        if let Some(body) = t.strip_suffix('\\') {
            pending.push_str(body);
            pending.push(' ');
            continue;
        }
        pending.push_str(t);
        logical.push((start, std::mem::take(&mut pending)));
    }
    if !pending.is_empty() {
        logical.push((start, pending));
    }
    let mut statements = Vec::new();
    for (line, text) in logical {
        for s in split_statements(&text).ok_or(ConvertError::Quote { line })? {
            statements.push((line, s));
        }
    }
    let mut expanded = Vec::new();
    let mut at = 0;
    expand_loops(&statements, &mut at, &[], &mut expanded, false)?;
    let mut out = Vec::new();
    for (line, text) in expanded {
        let mut words = split_words(&text).ok_or(ConvertError::Quote { line })?;
        if words
            .first()
            .is_some_and(|w| w.rsplit('/').next() == Some("sysbench"))
        {
            words.remove(0);
        }
        if !words.is_empty() {
            out.push((line, words));
        }
    }
    Ok(out)
}

/// The commands of one logical line: split at `;` outside quotes, and `do` at the start of a
/// command made a command of its own (`do sysbench …` → `do`, `sysbench …`). `None` for an
/// unbalanced quote.
fn split_statements(text: &str) -> Option<Vec<String>> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, ';') => parts.push(std::mem::take(&mut cur)),
            (None, '\'' | '"') => {
                quote = Some(c);
                cur.push(c);
            }
            (Some(q), c) if c == q => {
                quote = None;
                cur.push(c);
            }
            (_, '\\') => {
                cur.push(c);
                cur.extend(chars.next());
            }
            _ => cur.push(c),
        }
    }
    if quote.is_some() {
        return None;
    }
    parts.push(cur);
    let mut out = Vec::new();
    for p in parts {
        let p = p.trim();
        match p.strip_prefix("do ") {
            Some(rest) => out.extend(["do".to_string(), rest.trim().to_string()]),
            None if p.is_empty() => {}
            None => out.push(p.to_string()),
        }
    }
    Some(out)
}

/// Expands the `for` loops of `statements` from `*at`, until the `done` that closes the loop
/// being expanded (`in_loop`) or the end. `vars` are the enclosing loops' variables.
fn expand_loops(
    statements: &[(usize, String)],
    at: &mut usize,
    vars: &[(String, String)],
    out: &mut Vec<(usize, String)>,
    in_loop: bool,
) -> Result<(), ConvertError> {
    while let Some((line, text)) = statements.get(*at) {
        let line = *line;
        if text == "done" {
            if in_loop {
                *at += 1;
                return Ok(());
            }
            return Err(ConvertError::Loop {
                line,
                message: "`done` without a `for … do`".into(),
            });
        }
        let Some(header) = text.strip_prefix("for ") else {
            out.push((line, substitute(text, vars)));
            *at += 1;
            continue;
        };
        let words = split_words(&substitute(header, vars)).ok_or(ConvertError::Quote { line })?;
        let (name, values) = match words.split_first() {
            Some((name, rest)) if rest.first().is_some_and(|w| w == "in") => (name, &rest[1..]),
            _ => {
                return Err(ConvertError::Loop {
                    line,
                    message: format!("`for {header}` is not `for NAME in VALUES…`"),
                });
            }
        };
        if let Some(v) = values.iter().find(|v| v.contains("$(") || v.contains('`')) {
            return Err(ConvertError::Loop {
                line,
                message: format!(
                    "`{v}`: command substitution is not run by convert; list the values (for t in 8 16 32; do …)"
                ),
            });
        }
        *at += 1;
        if statements.get(*at).map(|s| s.1.as_str()) != Some("do") {
            return Err(ConvertError::Loop {
                line,
                message: format!("`for {name} in …` needs `; do` before its commands"),
            });
        }
        *at += 1;
        let body = *at;
        // An empty list still has to skip its body.
        let mut end = body;
        expand_loops(statements, &mut end, vars, &mut Vec::new(), true)?;
        for v in values {
            let mut inner = vars.to_vec();
            inner.push((name.clone(), v.clone()));
            let mut pos = body;
            expand_loops(statements, &mut pos, &inner, out, true)?;
        }
        *at = end;
    }
    if in_loop {
        let line = statements.last().map_or(0, |s| s.0);
        return Err(ConvertError::Loop {
            line,
            message: "a `for` loop has no `done`".into(),
        });
    }
    Ok(())
}

/// `text` with `$NAME` and `${NAME}` of the loop variables replaced (innermost first).
fn substitute(text: &str, vars: &[(String, String)]) -> String {
    let mut text = text.to_string();
    for (name, value) in vars.iter().rev() {
        text = text.replace(&format!("${{{name}}}"), value);
        let mut out = String::new();
        let mut rest = text.as_str();
        while let Some(i) = rest.find(&format!("${name}")) {
            let after = &rest[i + 1 + name.len()..];
            out.push_str(&rest[..i]);
            // `$t` but not `$threads` when the variable is `t`.
            if after
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                out.push_str(&rest[i..i + 1 + name.len()]);
            } else {
                out.push_str(value);
            }
            rest = after;
        }
        out.push_str(rest);
        text = out;
    }
    text
}

/// The suite text for these command lines, plus notes for stderr.
pub fn convert(lines: &[(usize, Vec<String>)]) -> Result<(String, Vec<String>), ConvertError> {
    let mut notes = Vec::new();
    // Each command line as sysbench words, with the line as typed for the header: an obd line
    // stands for the sysbench lines obd runs, and its target for all of them.
    let mut lines_of: Vec<(usize, Vec<String>, String)> = Vec::new();
    let mut obd_target: Option<obd::ObdTarget> = None;
    for (line, words) in lines {
        if !obd::is_obd(words) {
            if obd_target.is_some() {
                return Err(mixed(*line));
            }
            lines_of.push((
                *line,
                words.clone(),
                format!("sysbench {}", redact(words).join(" ")),
            ));
            continue;
        }
        if !lines_of.is_empty() && obd_target.is_none() {
            return Err(mixed(*line));
        }
        let o = obd::translate(words).map_err(|message| ConvertError::Obd {
            line: *line,
            message,
        })?;
        match &obd_target {
            Some(t) if *t != o.target => {
                return Err(ConvertError::Targets {
                    line: *line,
                    what: "the deployment, component, server, user, tenant, database or ignored errors differ from the first line".into(),
                });
            }
            _ => obd_target = Some(o.target.clone()),
        }
        for n in o.notes {
            if !notes.contains(&n) {
                notes.push(n);
            }
        }
        for l in o.lines {
            lines_of.push((*line, l, o.echo.clone()));
        }
    }
    let mut parsed: Vec<(usize, Invocation, String)> = Vec::new();
    for (line, words, echo) in lines_of {
        let inv = args::parse(&words).map_err(|source| ConvertError::Line { line, source })?;
        parsed.push((line, inv, echo));
    }
    if parsed.is_empty() {
        return Err(ConvertError::Empty);
    }
    // prepare/cleanup are part of every plan; the run lines define the runs. sysbench lines
    // that run without a prepare line run on data already there (the user's, #26): so does
    // the suite, which then neither prepares nor cleans up. obd prepares before it runs.
    let mut existing = false;
    if parsed.iter().any(|p| p.1.action == Some(Action::Run)) {
        existing = obd_target.is_none()
            && !parsed.iter().any(|p| p.1.action == Some(Action::Prepare))
            && parsed
                .iter()
                .any(|p| p.1.action == Some(Action::Run) && p.1.workload.data.family.is_some());
        let before = parsed.len();
        parsed.retain(|p| p.1.action == Some(Action::Run));
        if parsed.len() < before {
            notes.push(format!(
                "note: {} prepare/cleanup/help line(s) skipped: {}",
                before - parsed.len(),
                if existing {
                    "the suite runs on the data in place and leaves it there"
                } else {
                    "the suite's plan prepares and cleans up around its runs"
                }
            ));
        }
        if existing {
            notes.push(
                "note: no line prepares, so the suite runs on the data already in place \
                 ([suite] dataset = \"existing\": no prepare and no cleanup, and `run` checks \
                 the tables or files before anything runs); remove that line to have the suite \
                 prepare its own data and clean it up"
                    .into(),
            );
        }
    }
    let first = &parsed[0].1;
    for (line, inv, _) in &parsed[1..] {
        if inv.connection != first.connection {
            return Err(ConvertError::Targets {
                line: *line,
                what: "connection options differ from the first line".into(),
            });
        }
    }

    // Every option any line sets, in first-appearance order, with each line's resolved value.
    let mut names: Vec<String> = Vec::new();
    for (_, inv, _) in &parsed {
        for k in inv.given.keys() {
            if !names.contains(k) {
                names.push(k.clone());
            }
        }
    }
    let rows: Vec<IndexMap<String, Value>> = parsed
        .iter()
        .map(|(_, inv, _)| {
            let resolved = inv.options();
            let mut row = IndexMap::new();
            row.insert(
                "workload".to_string(),
                Value::Str(inv.workload.name.to_string()),
            );
            for n in &names {
                // An option a line left out has its spec default there.
                let v = inv
                    .given
                    .get(n)
                    .map(|g| suite_value(inv, n, &g.value, &g.raw))
                    .or_else(|| resolved.get(n).cloned())
                    .unwrap_or(Value::Str(String::new()));
                row.insert(n.clone(), v);
            }
            row
        })
        .collect();
    let mut keys = vec!["workload".to_string()];
    keys.extend(names.iter().cloned());
    let mut axes: Vec<(String, Vec<Value>)> = Vec::new();
    let mut defaults: Vec<(String, Value)> = Vec::new();
    for k in &keys {
        let mut values: Vec<Value> = Vec::new();
        for r in &rows {
            if let Some(v) = r.get(k)
                && !values.contains(v)
            {
                values.push(v.clone());
            }
        }
        if values.len() > 1 {
            axes.push((k.clone(), values));
        } else if let Some(v) = values.pop() {
            defaults.push((k.clone(), v));
        }
    }
    // Combinations of the axes that no line ran.
    let mut excluded: Vec<Vec<(String, Value)>> = Vec::new();
    let mut combos: Vec<Vec<(String, Value)>> = vec![Vec::new()];
    for (name, values) in &axes {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push((name.clone(), v.clone()));
                    c
                })
            })
            .collect();
    }
    if axes.len() > 1 {
        for c in combos {
            let ran = rows
                .iter()
                .any(|r| c.iter().all(|(k, v)| r.get(k) == Some(v)));
            if !ran {
                excluded.push(c);
            }
        }
    }

    notes.extend(unconsumed(&parsed, &keys));

    let mut out = String::from("#:schema ../schemas/suite.schema.json\n");
    out.push_str("# Converted by `sbsuite convert` from:\n");
    let mut echoed: Vec<&str> = Vec::new();
    for (_, _, echo) in &parsed {
        if !echoed.contains(&echo.as_str()) {
            echoed.push(echo);
            out.push_str(&format!("#   {echo}\n"));
        }
    }
    let workloads: Vec<&str> = rows
        .iter()
        .filter_map(|r| r.get("workload").and_then(Value::as_str))
        .collect();
    out.push_str(&format!(
        "\n[suite]\nname = {}\n",
        toml_str(&suite_name(&workloads))
    ));
    if existing {
        out.push_str("# The lines only run: the data is already there, and stays.\n");
        out.push_str("dataset = \"existing\"\n");
    }

    let needs_target = parsed.iter().any(|p| p.1.workload.needs_target);
    if needs_target {
        out.push('\n');
        match &obd_target {
            Some(t) => out.push_str(&t.toml(&mut notes)),
            None => out.push_str(&target(first, &mut notes)),
        }
    } else if !first.connection.is_empty() {
        notes.push("note: database options dropped: system tests use no database".into());
    }

    out.push_str("\n[defaults]\n");
    for (k, v) in &defaults {
        out.push_str(&format!("{k} = {}\n", toml_value(v)));
    }
    if !axes.is_empty() {
        out.push_str("\n[matrix]\n");
        for (k, values) in &axes {
            let items: Vec<String> = values.iter().map(toml_value).collect();
            out.push_str(&format!("{k} = [{}]\n", items.join(", ")));
        }
        if !excluded.is_empty() {
            out.push_str("exclude = [\n");
            for c in &excluded {
                let kv: Vec<String> = c
                    .iter()
                    .map(|(k, v)| format!("{k} = {}", toml_value(v)))
                    .collect();
                out.push_str(&format!("    {{ {} }},\n", kv.join(", ")));
            }
            out.push_str("]\n");
        }
    }
    Ok((out, notes))
}

/// Lines of `obd test sysbench` and of sysbench together: their targets cannot be compared.
fn mixed(line: usize) -> ConvertError {
    ConvertError::Targets {
        line,
        what: "obd test sysbench lines and sysbench lines mixed".into(),
    }
}

/// One note for every option of the converted lines that the suite does not carry, naming it
/// and why (#14: `convert` never drops an option silently). It reads each option's
/// [`args::Fate`], so an option a future parser branch adds is covered without a list here:
/// settings must reach a suite key in `written`, connection options are accounted for by
/// [`target`], and everything else is reported with the parser's reason.
fn unconsumed(parsed: &[(usize, Invocation, String)], written: &[String]) -> Vec<String> {
    let mut notes: Vec<String> = Vec::new();
    for (_, inv, _) in parsed {
        for (name, fate) in &inv.fates {
            let why = match fate {
                args::Fate::Command | args::Fate::Connection => continue,
                args::Fate::Set(key) if written.contains(key) => continue,
                args::Fate::Set(key) => format!("its setting `{key}` has no place in the suite"),
                args::Fate::Dropped(why) => why.clone(),
            };
            let note = format!("note: --{} is left out: {why}", name.replace('_', "-"));
            if !notes.contains(&note) {
                notes.push(note);
            }
        }
    }
    notes
}

/// The value as a suite file writes it: sizes keep the user's suffix (`8K`), the rest is the
/// normalised value.
fn suite_value(inv: &Invocation, name: &str, value: &Value, raw: &str) -> Value {
    match inv.workload.option(name).map(|o| o.kind) {
        Some(crate::engine::option::Kind::Size) => Value::Str(raw.to_string()),
        _ => value.clone(),
    }
}

fn suite_name(workloads: &[&str]) -> String {
    let Some(first) = workloads.first() else {
        return "sysbench".into();
    };
    if workloads.iter().all(|w| w == first) {
        return first.replace('_', "-");
    }
    let mut prefix = first.to_string();
    for w in workloads {
        while !w.starts_with(&prefix) {
            prefix.pop();
        }
    }
    let prefix = prefix.trim_end_matches(['_', '-']);
    if prefix.is_empty() {
        "sysbench".into()
    } else {
        format!("{}-sweep", prefix.replace('_', "-"))
    }
}

/// `[target]` from the connection options, with sysbench's defaults spelled out.
fn target(inv: &Invocation, notes: &mut Vec<String>) -> String {
    let c = &inv.connection;
    let driver = c.get("db_driver").unwrap_or("mysql");
    let mut t = String::from("[target]\n");
    t.push_str(&format!("driver = {}\n", toml_str(driver)));
    let (prefix, default_port) = if driver == "pgsql" {
        ("pgsql", "5432")
    } else {
        ("mysql", "3306")
    };
    let mut sockets = c.list("mysql_socket");
    if prefix == "pgsql" {
        // libpq: a host that starts with `/` is the server's socket directory.
        let port = c.get("pgsql_port").unwrap_or(default_port);
        sockets = c
            .list("pgsql_host")
            .into_iter()
            .filter(|h| h.starts_with('/'))
            .map(|h| format!("{}/.s.PGSQL.{port}", h.trim_end_matches('/')))
            .collect();
    }
    if !sockets.is_empty() {
        if sockets.len() == 1 {
            t.push_str(&format!("socket = {}\n", toml_str(&sockets[0])));
        } else {
            let list: Vec<String> = sockets.iter().map(|s| toml_str(s)).collect();
            t.push_str(&format!("socket = [{}]\n", list.join(", ")));
        }
    } else {
        let mut hosts = c.list(&format!("{prefix}_host"));
        if hosts.is_empty() {
            hosts.push("localhost".into());
        }
        let mut ports = c.list(&format!("{prefix}_port"));
        if ports.is_empty() {
            ports.push(default_port.into());
        }
        // sysbench pairs hosts and ports with ports varying fastest.
        let pairs: Vec<String> = hosts
            .iter()
            .flat_map(|h| ports.iter().map(move |p| toml_str(&format!("{h}:{p}"))))
            .collect();
        t.push_str(&format!("hosts = [{}]\n", pairs.join(", ")));
    }
    let user = c.get(&format!("{prefix}_user")).unwrap_or("sbtest");
    t.push_str(&format!("user = {}\n", toml_str(user)));
    if c.get(&format!("{prefix}_password"))
        .is_some_and(|p| !p.is_empty())
    {
        let var = format!("{}_PASSWORD", prefix.to_ascii_uppercase());
        t.push_str(&format!("password = \"{{{{ env.{var} }}}}\"\n"));
        notes.push(format!(
            "note: the password is read from ${var} when the suite runs; it is not written here"
        ));
    }
    let db = c.get(&format!("{prefix}_db")).unwrap_or("sbtest");
    t.push_str(&format!("database = {}\n", toml_str(db)));
    if let Some(ignore) = c.get("mysql_ignore_errors") {
        t.push_str(&ignore_errors(ignore));
    }
    if let Some(mode) = c.get("db_ps_mode") {
        t.push_str(&format!("ps_mode = {}\n", toml_str(mode)));
    }
    // sysbench 1.0's --mysql-ssl=on asks for TLS without verifying the certificate.
    if let Some(ssl) = c.get("mysql_ssl")
        && crate::db::SslMode::parse(ssl).is_some_and(|m| m != crate::db::SslMode::Disabled)
    {
        t.push_str("ssl = \"required\"\n");
    }
    if let Some(mode) = c.get("pgsql_sslmode") {
        t.push_str(&format!("ssl = {}\n", toml_str(mode)));
    }
    for (option, key) in [
        ("mysql_compression", "compression"),
        ("mysql_dry_run", "dry_run"),
    ] {
        if c.get(option)
            .is_some_and(|v| crate::value::parse_bool(v) == Some(true))
        {
            t.push_str(&format!("{key} = true\n"));
        }
    }
    for k in c.options.keys() {
        let used = [
            "db_driver",
            "db_ps_mode",
            "mysql_host",
            "mysql_port",
            "mysql_socket",
            "mysql_user",
            "mysql_password",
            "mysql_db",
            "mysql_ignore_errors",
            "mysql_ssl",
            "mysql_compression",
            "mysql_dry_run",
            "pgsql_host",
            "pgsql_port",
            "pgsql_user",
            "pgsql_password",
            "pgsql_db",
            "pgsql_sslmode",
        ];
        if !used.contains(&k.as_str()) {
            notes.push(format!(
                "note: --{} has no [target] key yet and is left out",
                k.replace('_', "-")
            ));
        }
    }
    t
}

/// Command-line words with password values replaced by `***`.
pub fn redact(words: &[String]) -> Vec<String> {
    words
        .iter()
        .map(|w| {
            let name = w.split('=').next().unwrap_or("").replace('_', "-");
            if name.ends_with("-password") && w.contains('=') {
                format!("{}=***", w.split('=').next().unwrap_or(""))
            } else {
                w.clone()
            }
        })
        .collect()
}

/// A value in TOML syntax.
pub fn toml_value(v: &Value) -> String {
    fn conv(v: &Value) -> toml::Value {
        match v {
            Value::Bool(b) => toml::Value::Boolean(*b),
            Value::Int(i) => toml::Value::Integer(*i),
            Value::Float(x) => toml::Value::Float(*x),
            Value::Str(s) => toml::Value::String(s.clone()),
            Value::List(items) => toml::Value::Array(items.iter().map(conv).collect()),
        }
    }
    conv(v).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_follow_shell_quoting() {
        assert_eq!(
            split_words(r#"a 'b c' "d\"e" f\ g"#).unwrap(),
            ["a", "b c", "d\"e", "f g"]
        );
        assert!(split_words("a 'b").is_none());
    }

    #[test]
    fn loop_lines_become_matrix_axes_with_excludes() {
        let text = "sysbench cpu --threads=1 --cpu-max-prime=100 run\n\
                    # comment\n\
                    sysbench cpu --threads=2 --cpu-max-prime=100 run\n\
                    sysbench cpu --threads=2 --cpu-max-prime=200 run\n";
        let lines = command_lines(text).unwrap();
        let (toml, _) = convert(&lines).unwrap();
        assert!(toml.contains("[suite]\nname = \"cpu\"\n"), "{toml}");
        assert!(toml.contains("[defaults]\nworkload = \"cpu\"\n"), "{toml}");
        assert!(
            toml.contains("threads = [1, 2]\ncpu_max_prime = [100, 200]\n"),
            "{toml}"
        );
        assert!(
            toml.contains("{ threads = 1, cpu_max_prime = 200 }"),
            "{toml}"
        );
        assert!(!toml.contains("[target]"), "{toml}");
    }

    #[test]
    fn shell_for_loops_expand_nested_with_their_variables() {
        let text = "for s in cpu memory; do\n  for t in 1 2; do sysbench $s --threads=$t --time=${t}0 run; done\ndone\n\
                    for t in; do sysbench cpu --threads=$t run; done\n\
                    sysbench cpu --threads=4 run; sysbench cpu --threads=5 run\n";
        let lines: Vec<String> = command_lines(text)
            .unwrap()
            .into_iter()
            .map(|(n, w)| format!("{n}: {}", w.join(" ")))
            .collect();
        assert_eq!(
            lines,
            [
                "2: cpu --threads=1 --time=10 run",
                "2: cpu --threads=2 --time=20 run",
                "2: memory --threads=1 --time=10 run",
                "2: memory --threads=2 --time=20 run",
                "5: cpu --threads=4 run",
                "5: cpu --threads=5 run",
            ]
        );
        // `$threads` is not `$t` followed by `hreads`.
        assert_eq!(
            substitute("$threads $t", &[("t".into(), "8".into())]),
            "$threads 8"
        );
        for (bad, expect) in [
            ("for t in 1 2; sysbench cpu run; done", "needs `; do`"),
            ("for t in 1 2; do sysbench cpu run", "has no `done`"),
            ("done", "`done` without"),
            (
                "for t in $(seq 1 4); do sysbench cpu run; done",
                "command substitution",
            ),
            (
                "for t; do sysbench cpu run; done",
                "not `for NAME in VALUES",
            ),
        ] {
            let e = command_lines(bad).unwrap_err().to_string();
            assert!(
                e.contains(expect) && e.starts_with("line 1: "),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn passwords_become_templates() {
        let words: Vec<String> = "oltp_read_only --mysql-password=s3cret --mysql-host=h run"
            .split(' ')
            .map(String::from)
            .collect();
        let (toml, notes) = convert(&[(1, words)]).unwrap();
        assert!(!toml.contains("s3cret"), "{toml}");
        assert!(
            toml.contains("password = \"{{ env.MYSQL_PASSWORD }}\""),
            "{toml}"
        );
        assert!(toml.contains("hosts = [\"h:3306\"]"), "{toml}");
        assert!(notes.iter().any(|n| n.contains("MYSQL_PASSWORD")));
    }
}
