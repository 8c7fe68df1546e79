//! The resolved suite as every run directory stores it (`suite.toml`): the user's key order,
//! literal passwords redacted.
//!
//! `run --resume` rebuilds the plan from this file and refuses to continue when it differs from
//! `plan.json`, and the plan nests matrix axes in the order the file writes them. So the stored
//! text must read back with every key where the user put it. Two things lose that order, and
//! both are undone here:
//! - figment keeps tables in `BTreeMap`s, so the merged suite comes out sorted:
//!   [`in_file_order`] puts the keys back in the order of the file (keys that only the
//!   environment or `--set` added follow, sorted), once, right after the layers merge — so the
//!   validated suite, its plan and the stored text all see one order.
//! - toml's document writer moves every table-valued key (`threads = { from = 1, to = 64,
//!   factor = 2 }`) below the plain keys of its table as a `[matrix.threads]` section, which
//!   reads back in another order: [`resolved_toml`] writes one `key = value` line per key, in
//!   order, with inline values.
//!
//! The one secret, `[target] password`, is replaced by [`REDACTED`] unless it is a template
//! (which names an environment variable, not a secret). A resumed run therefore cannot know a
//! literal password, and refuses up front ([`has_literal_password`]).

use super::raw::{RawSuite, RawTarget};
use crate::source::REDACTED;

/// Whether a `password` value is a literal (a secret, never stored) rather than a minijinja
/// template such as `"{{ env.DB_PASSWORD }}"`.
fn is_literal_password(password: &str) -> bool {
    !password.contains("{{")
}

/// Whether `target` has a `password` that is a literal, i.e. that the stored suite holds only
/// as [`REDACTED`].
pub fn has_literal_password(target: Option<&RawTarget>) -> bool {
    target.is_some_and(|t| {
        t.password
            .iter()
            .map(String::as_str)
            .chain(t.hosts.iter().filter_map(|h| h.password()))
            .any(is_literal_password)
    })
}

/// `raw` (merged by figment, keys sorted) with every table's keys in the order of `file` (the
/// suite file as parsed, in its order); keys `file` does not have keep their place after those
/// it has. Array items follow the file's item at the same index. When the suite does not
/// survive the round trip through a TOML value, it is returned as it was.
pub fn in_file_order(raw: RawSuite, file: &toml::Table) -> RawSuite {
    let Ok(mut value) = toml::Value::try_from(&raw) else {
        return raw;
    };
    if let toml::Value::Table(t) = &mut value {
        reorder_table(t, file);
    }
    value.try_into().unwrap_or(raw)
}

fn reorder_table(table: &mut toml::Table, file: &toml::Table) {
    let mut rest = std::mem::take(table);
    for key in file.keys() {
        if let Some((k, v)) = rest.remove_entry(key) {
            table.insert(k, v);
        }
    }
    table.extend(rest);
    for (k, v) in table.iter_mut() {
        if let Some(f) = file.get(k) {
            reorder(v, f);
        }
    }
}

fn reorder(value: &mut toml::Value, file: &toml::Value) {
    match (value, file) {
        (toml::Value::Table(t), toml::Value::Table(f)) => reorder_table(t, f),
        (toml::Value::Array(items), toml::Value::Array(f)) => {
            for (item, f) in items.iter_mut().zip(f) {
                reorder(item, f);
            }
        }
        _ => {}
    }
}

/// The suite as TOML text for `suite.toml`: literal passwords redacted, every key in the
/// suite's order on its own line (values inline), so that loading it again gives the same
/// suite and the same plan.
pub fn resolved_toml(raw: &RawSuite) -> String {
    let mut value = match toml::Value::try_from(raw) {
        Ok(v) => v,
        Err(e) => return format!("# could not serialise the resolved suite: {e}\n"),
    };
    if let Some(target) = value.get_mut("target") {
        redact(target);
    }
    match &value {
        toml::Value::Table(root) => document(root),
        _ => String::new(),
    }
}

/// Replaces the literal passwords of a serialised `[target]` (its own and those of its `hosts`
/// tables) with [`REDACTED`]; templates stay.
fn redact(target: &mut toml::Value) {
    let redact_one = |table: &mut toml::Value| {
        if let Some(pw) = table.get_mut("password")
            && pw.as_str().is_some_and(is_literal_password)
        {
            *pw = toml::Value::String(REDACTED.into());
        }
    };
    redact_one(target);
    if let Some(toml::Value::Array(hosts)) = target.get_mut("hosts") {
        hosts
            .iter_mut()
            .filter(|h| h.is_table())
            .for_each(redact_one);
    }
}

/// A TOML document that keeps every key where `root` has it: plain top-level keys first (TOML
/// needs them before any header), then one `[table]` or `[[array]]` section per table-valued
/// key, each holding one `key = inline value` line per key.
/// Workload `name`'s definition `def` as a suite of its own (`[workloads.NAME]` and nothing
/// else) that reads back as written: what the agents of `[clients]` compile (#27).
pub fn definition_document(name: &str, def: &toml::Value) -> String {
    let mut workloads = toml::Table::new();
    workloads.insert(name.to_string(), def.clone());
    let mut root = toml::Table::new();
    root.insert("workloads".into(), toml::Value::Table(workloads));
    document(&root)
}

fn document(root: &toml::Table) -> String {
    let mut out = String::new();
    for (k, v) in root {
        if !is_section(v) {
            push_line(&mut out, k, v);
        }
    }
    for (k, v) in root {
        match v {
            toml::Value::Table(defs) if k == "workloads" => {
                for (name, def) in defs {
                    if let toml::Value::Table(def) = def {
                        push_nested(&mut out, &[k.as_str(), name.as_str()], def);
                    }
                }
            }
            toml::Value::Table(t) => push_section(&mut out, &format!("[{}]", key(k)), t),
            toml::Value::Array(items) if is_section(v) => {
                for item in items.iter().filter_map(toml::Value::as_table) {
                    push_section(&mut out, &format!("[[{}]]", key(k)), item);
                }
            }
            _ => {}
        }
    }
    out
}

/// A table, or a non-empty array of tables (written as `[[key]]` sections).
fn is_section(v: &toml::Value) -> bool {
    match v {
        toml::Value::Table(_) => true,
        toml::Value::Array(items) => !items.is_empty() && items.iter().all(|i| i.is_table()),
        _ => false,
    }
}

fn push_section(out: &mut String, header: &str, table: &toml::Table) {
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(header);
    out.push('\n');
    for (k, v) in table {
        push_line(out, k, v);
    }
}

/// A workload definition (`path` = `["workloads", NAME]`) as sections that read back in the
/// same order: plain keys as lines; a table of tables (`options`, `transactions`) and each
/// table in it as sections; a list of tables (`load`, `checks`) as `[[…]]` sections. Order
/// matters only within a table (lets, steps, transactions), never between a table's plain
/// keys and its sections, so writing the sections after the lines is safe.
fn push_nested(out: &mut String, path: &[&str], table: &toml::Table) {
    let section = |v: &toml::Value| match (path.len(), v) {
        (2, toml::Value::Table(t)) => !t.is_empty() && t.values().all(toml::Value::is_table),
        (3, v) => v.is_table(),
        _ => false,
    };
    let listed = |v: &toml::Value| path.len() == 2 && v.is_array() && is_section(v);
    let header = |path: &[&str]| path.iter().map(|k| key(k)).collect::<Vec<_>>().join(".");
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(&format!("[{}]\n", header(path)));
    for (k, v) in table {
        if !section(v) && !listed(v) {
            push_line(out, k, v);
        }
    }
    for (k, v) in table {
        let mut sub = path.to_vec();
        sub.push(k);
        match v {
            toml::Value::Table(t) if section(v) => push_nested(out, &sub, t),
            toml::Value::Array(items) if listed(v) => {
                for item in items.iter().filter_map(toml::Value::as_table) {
                    push_section(out, &format!("[[{}]]", header(&sub)), item);
                }
            }
            _ => {}
        }
    }
}

fn push_line(out: &mut String, k: &str, v: &toml::Value) {
    // `Display` of a value writes it inline (tables as `{ … }`, arrays on one line).
    out.push_str(&format!("{} = {v}\n", key(k)));
}

/// A key as TOML writes it: bare when it can be, else quoted.
fn key(k: &str) -> String {
    let bare = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        k.to_string()
    } else {
        toml::Value::String(k.to_string()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_need_quotes_are_quoted() {
        assert_eq!(key("threads"), "threads");
        assert_eq!(key("a.b"), "\"a.b\"");
        assert_eq!(key(""), "\"\"");
    }

    #[test]
    fn a_document_reads_back_with_every_key_in_place() {
        let text = "top = 1\n[matrix]\nthreads = { from = 1, to = 8, factor = 2 }\nworkload = [\"cpu\"]\ninclude = [{ workload = \"cpu\", threads = 3 }]\n\n[[variant]]\nname = \"a\"\nset_global = { z = 1, a = \"two\\nlines\" }\n";
        let table: toml::Table = toml::from_str(text).unwrap();
        let written = document(&table);
        let back: toml::Table = toml::from_str(&written).unwrap();
        assert_eq!(back, table, "{written}");
        let order = |t: &toml::Table, k: &str| -> Vec<String> {
            t[k].as_table().unwrap().keys().cloned().collect()
        };
        assert_eq!(
            order(&back, "matrix"),
            ["threads", "workload", "include"],
            "{written}"
        );
        let set: Vec<&String> = back["variant"][0]["set_global"]
            .as_table()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(set, ["z", "a"], "{written}");
    }
}
