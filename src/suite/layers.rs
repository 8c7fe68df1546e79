//! How errors about values from the `SBSUITE_*` environment variables and `--set` options speak:
//! in the syntax of the layer that brought the value, not the file's.
//!
//! A typo in `SBSUITE_DEFAULTS__TREADS` is fixed by renaming the variable, and `--set
//! matrix.threads=8,16` by writing a list, so the help names the variable or option to write
//! instead (#14). The file's own errors keep their position and help; these functions return
//! `None` for them.

use super::{ENV_PREFIX, TOP_LEVEL_KEYS};
use crate::engine::Catalog;
use crate::source::{ConfigError, Origin};
use crate::value::Value;

/// The environment variable that sets `path` (`["defaults", "threads"]` →
/// `SBSUITE_DEFAULTS__THREADS`).
pub fn env_name(path: &[&str]) -> String {
    let keys: Vec<String> = path.iter().map(|k| k.to_ascii_uppercase()).collect();
    format!("{ENV_PREFIX}{}", keys.join("__"))
}

/// Help for the unknown key `path` (its last element) when a layer brought it: the variable or
/// option to write instead, with `suggestion` (the closest known key) in place of the typo.
/// `catalog` tells options from other keys.
pub fn unknown_key_help(
    catalog: &Catalog,
    origin: &Origin,
    path: &[&str],
    suggestion: Option<&str>,
) -> Option<String> {
    let (name, parent) = path.split_last()?;
    match origin {
        Origin::Env(var) => {
            let suggest = || {
                let s = suggestion?;
                let fixed: Vec<&str> = parent.iter().copied().chain([s]).collect();
                Some(format!(
                    "did you mean `{s}`? set {} instead of {var}",
                    env_name(&fixed)
                ))
            };
            if !parent.is_empty() {
                return suggest();
            }
            // A top-level key: the usual mistakes are a missing table or a single underscore,
            // which a near name (`defaults_time` → `defaults`) would only hide.
            if *name == "workload" || catalog.any_option(name).is_some() {
                return Some(format!(
                    "`{name}` is an option: set {} (or {} for a matrix axis); `__` separates the keys of the path",
                    env_name(&["defaults", name]),
                    env_name(&["matrix", name])
                ));
            }
            if let Some((table, rest)) = TOP_LEVEL_KEYS
                .iter()
                .find_map(|t| Some((*t, name.strip_prefix(t)?.strip_prefix('_')?)))
                .filter(|(_, rest)| !rest.is_empty())
            {
                return Some(format!(
                    "two underscores separate keys: {}",
                    env_name(&[table, rest])
                ));
            }
            suggest().or_else(|| Some(format!(
                "{ENV_PREFIX}* variables spell a key path with `__` between keys, e.g. {}=30 for [defaults] time; top-level keys: {}",
                env_name(&["defaults", "time"]),
                TOP_LEVEL_KEYS.join(", ")
            )))
        }
        Origin::Set(text) => {
            let s = suggestion?;
            let (key, value) = text.split_once('=')?;
            // Only when the option names the key itself (not a whole table around it).
            let head = match key.rsplit_once('.') {
                Some((head, last)) if last == *name => format!("{head}."),
                None if key == *name => String::new(),
                _ => return None,
            };
            Some(format!("did you mean `{s}`? write --set {head}{s}={value}"))
        }
        Origin::File { .. } | Origin::Unknown => None,
    }
}

/// Adds the list syntax to the help of an error about a value with commas that a layer gave as
/// plain text (`--set matrix.threads=8,16` reads as the string "8,16"): several values are a
/// list in brackets, and only a matrix axis takes several. A value in brackets or braces is
/// TOML: the help says what is wrong with its syntax, or (a list or range for `[defaults]`)
/// where it goes, and never splits it at its commas. `env` is the layer's variables.
pub fn list_hint(e: &mut ConfigError, env: &[(String, String)]) {
    // The password is never repeated, not even as a list.
    if e.key == "target.password" {
        return;
    }
    let raw = match &e.origin {
        Origin::Set(text) => text.split_once('=').map(|(_, v)| v.trim().to_string()),
        Origin::Env(var) => env.iter().find(|(k, _)| k == var).map(|(_, v)| v.clone()),
        _ => None,
    };
    let Some(raw) = raw else {
        return;
    };
    let Some(axis) = e.key.rsplit('.').next().filter(|a| !a.is_empty()) else {
        return;
    };
    let write = |value: &str| match &e.origin {
        Origin::Env(_) => format!("{}='{value}'", env_name(&["matrix", axis])),
        _ => format!("--set 'matrix.{axis}={value}' (quoted for the shell)"),
    };
    // A list or a range written in TOML: say what is wrong with it, never split it at commas.
    if raw.starts_with(['[', '{']) {
        match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
            Err(err) => {
                let why = err
                    .message()
                    .lines()
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_string();
                e.help = Some(format!(
                    "`{raw}` is not a TOML value ({why}): a list is [8, 16], a range {{ from = 32, to = 1024, factor = 2 }}, e.g. {}",
                    write("{ from = 32, to = 1024, factor = 2 }")
                ));
            }
            Ok(_) if !e.key.starts_with("matrix.") => {
                e.help = Some(format!(
                    "a list or a range is several values, and goes to a matrix axis: {}",
                    write(&raw)
                ));
            }
            Ok(_) => {}
        }
        return;
    }
    if !raw.contains(',') {
        return;
    }
    let items: Vec<String> = raw
        .split(',')
        .map(str::trim)
        .map(|item| match Value::parse_loose(item) {
            Value::Str(s) => format!("\"{s}\""),
            _ => item.to_string(),
        })
        .collect();
    let list = format!("[{}]", items.join(","));
    e.help = Some(format!(
        "several values are a list in brackets, and go to a matrix axis: {}",
        write(&list)
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn unknown_keys_are_fixed_in_the_layers_own_syntax() {
        let env = |v: &str| Origin::Env(v.to_string());
        assert_eq!(
            unknown_key_help(
                Catalog::builtin(),
                &env("SBSUITE_DEFAULTS__TREADS"),
                &["defaults", "treads"],
                Some("threads")
            )
            .as_deref(),
            Some(
                "did you mean `threads`? set SBSUITE_DEFAULTS__THREADS instead of SBSUITE_DEFAULTS__TREADS"
            )
        );
        let top = unknown_key_help(
            Catalog::builtin(),
            &env("SBSUITE_THREADS"),
            &["threads"],
            None,
        )
        .unwrap();
        assert!(top.contains("SBSUITE_DEFAULTS__THREADS"), "{top}");
        let one = unknown_key_help(
            Catalog::builtin(),
            &env("SBSUITE_DEFAULTS_TIME"),
            &["defaults_time"],
            Some("defaults"),
        );
        assert!(one.unwrap().ends_with("SBSUITE_DEFAULTS__TIME"));
        let set = Origin::Set("matrix.treads=[1,2]".into());
        assert_eq!(
            unknown_key_help(
                Catalog::builtin(),
                &set,
                &["matrix", "treads"],
                Some("threads")
            )
            .as_deref(),
            Some("did you mean `threads`? write --set matrix.threads=[1,2]")
        );
        let file = Origin::Unknown;
        assert_eq!(
            unknown_key_help(Catalog::builtin(), &file, &["x"], Some("y")),
            None
        );
    }

    #[test]
    fn a_comma_list_from_a_layer_gets_the_bracket_syntax() {
        let mut e = ConfigError::new(
            Path::new("s.toml"),
            Origin::Set("matrix.workload=cpu, memory".into()),
            "matrix.workload",
            "unknown workload",
        );
        list_hint(&mut e, &[]);
        assert_eq!(
            e.help.as_deref(),
            Some(
                "several values are a list in brackets, and go to a matrix axis: --set 'matrix.workload=[\"cpu\",\"memory\"]' (quoted for the shell)"
            )
        );
        let var = "SBSUITE_DEFAULTS__THREADS".to_string();
        let mut e = ConfigError::new(
            Path::new("s.toml"),
            Origin::Env(var.clone()),
            "defaults.threads",
            "invalid value",
        );
        list_hint(&mut e, &[(var, "8,16".into())]);
        assert!(
            e.help
                .as_deref()
                .unwrap()
                .ends_with("SBSUITE_MATRIX__THREADS='[8,16]'"),
            "{:?}",
            e.help
        );
    }

    /// #26: a range or a list in TOML is never split at its commas.
    #[test]
    fn a_toml_range_or_list_is_kept_whole() {
        let hint = |set: &str, key: &str| {
            let mut e = ConfigError::new(
                Path::new("s.toml"),
                Origin::Set(set.into()),
                key,
                "invalid value",
            );
            list_hint(&mut e, &[]);
            e.help
        };
        assert_eq!(
            hint("threads={from=32,to=128,factor=2}", "defaults.threads").as_deref(),
            Some(
                "a list or a range is several values, and goes to a matrix axis: --set 'matrix.threads={from=32,to=128,factor=2}' (quoted for the shell)"
            )
        );
        let broken = hint("matrix.threads={from=32,to=128", "matrix.threads").unwrap();
        assert!(
            broken.starts_with("`{from=32,to=128` is not a TOML value (")
                && broken.ends_with(
                    "e.g. --set 'matrix.threads={ from = 32, to = 1024, factor = 2 }' (quoted for the shell)"
                ),
            "{broken}"
        );
        // A well-formed matrix value keeps the error's own help.
        assert_eq!(hint("matrix.threads=[0, 1]", "matrix.threads"), None);
    }
}
