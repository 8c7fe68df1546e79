//! `[workloads.NAME.options]`: the options a definition declares, each with a type, bounds,
//! a default and help, checked against the options every workload has (general options, the
//! built-in workloads' options of the same name) and against the other definitions.

use std::collections::HashMap;

use super::Loaded;
use super::compiler::{Compiler, key};
use crate::engine::Catalog;
use crate::engine::config::GENERAL;
use crate::engine::custom::COMMON;
use crate::engine::custom::expr::is_identifier;
use crate::engine::custom::model::{Def, OptionDef};
use crate::engine::option::Kind;
use crate::engine::session::connections::CONNECTION_OPTIONS;
use crate::source::{ConfigError, Seg, did_you_mean, path_text};
use crate::value::Value;

const OPTION_KEYS: &[&str] = &[
    "type", "default", "min", "max", "choices", "dataset", "help",
];
const OPTION_TYPES: &[&str] = &["int", "float", "bool", "string", "size", "enum"];

impl Compiler<'_> {
    pub(super) fn options(&mut self, path: &[Seg], v: &toml::Value) -> Vec<OptionDef> {
        let Some(t) = self.table(
            path,
            v,
            "`options`",
            "customers = { type = \"int\", default = 1000 }",
        ) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (name, ov) in t {
            let opath = key(path, name);
            if let Some(o) = self.option(&opath, name, ov) {
                out.push(o);
            }
        }
        out
    }

    /// One option, refused (`None`) when it cannot be declared as written.
    fn option(&mut self, path: &[Seg], name: &str, v: &toml::Value) -> Option<OptionDef> {
        let t = self.table(
            path,
            v,
            &format!("option `{name}`"),
            &format!("{name} = {{ type = \"int\", default = 10, help = \"…\" }}"),
        )?;
        self.keys(path, t, OPTION_KEYS, &format!("option `{name}`"));
        if !is_identifier(name) {
            self.err(
                path,
                true,
                format!("`{name}` is not a valid option name"),
                "use letters, digits and `_`, starting with a letter",
            );
            return None;
        }
        if name == "workload"
            || GENERAL
                .iter()
                .chain(COMMON)
                .chain(CONNECTION_OPTIONS)
                .any(|o| o.name == name)
        {
            self.err(
                path,
                true,
                format!("option `{name}` is a general option of every workload"),
                "rename the option (general options such as threads, time and check apply to every workload already)",
            );
            return None;
        }
        let Some(ty) = t.get("type") else {
            self.err(
                path,
                false,
                format!("option `{name}` has no `type`"),
                format!("add type = one of {}", OPTION_TYPES.join(", ")),
            );
            return None;
        };
        let tpath = key(path, "type");
        let ty = self.string(&tpath, ty, "type = \"int\"")?;
        let kind = self.option_kind(path, name, t, ty)?;
        if let Some(builtin) = Catalog::builtin().any_option(name)
            && !same_kind(&builtin.kind, &kind)
        {
            self.err(
                &tpath,
                false,
                format!(
                    "option `{name}` is {} here, but the built-in option `{name}` is {}",
                    kind.describe(),
                    builtin.kind.describe()
                ),
                format!(
                    "declare it as the built-in does ({}), or rename it",
                    declare_like(&builtin.kind)
                ),
            );
            return None;
        }
        let default = match t.get("default") {
            None => None,
            Some(d) => Some(self.option_default(&key(path, "default"), name, d, &kind)?),
        };
        let dataset = match t.get("dataset") {
            Some(v) => self.boolean(&key(path, "dataset"), v)?,
            None => false,
        };
        let help = match t.get("help") {
            Some(v) => self
                .string(&key(path, "help"), v, "help = \"customers to load\"")?
                .to_string(),
            None => String::new(),
        };
        Some(OptionDef {
            name: name.to_string(),
            kind,
            default,
            dataset,
            help,
        })
    }

    /// The kind of option `name` (table `t`) of type `ty`, with its bounds or choices.
    fn option_kind(&mut self, path: &[Seg], name: &str, t: &toml::Table, ty: &str) -> Option<Kind> {
        let num = |c: &mut Self, k: &str| -> Option<Option<f64>> {
            match t.get(k) {
                None => Some(None),
                Some(toml::Value::Integer(i)) => Some(Some(*i as f64)),
                Some(toml::Value::Float(f)) => Some(Some(*f)),
                Some(other) => {
                    c.err(
                        &key(path, k),
                        false,
                        format!("`{k}` must be a number, found {}", other.type_str()),
                        format!("e.g. {k} = 1"),
                    );
                    None
                }
            }
        };
        let (min, max) = (num(self, "min")?, num(self, "max")?);
        if !matches!(ty, "int" | "float") {
            for k in ["min", "max"] {
                if t.contains_key(k) {
                    self.err(
                        &key(path, k),
                        true,
                        format!("`{k}` applies to int and float options only"),
                        "remove it",
                    );
                }
            }
        }
        if ty != "enum" && t.contains_key("choices") {
            self.err(
                &key(path, "choices"),
                true,
                "`choices` applies to enum options only",
                "use type = \"enum\", or remove `choices`",
            );
        }
        let kind = match ty {
            "int" => {
                let bad = |x: Option<f64>| x.is_some_and(|x| x.fract() != 0.0);
                if bad(min) || bad(max) {
                    self.err(
                        path,
                        false,
                        "the bounds of an int option must be integers",
                        "e.g. min = 1, max = 100",
                    );
                    return None;
                }
                Kind::Int {
                    min: min.map_or(i64::MIN, |x| x as i64),
                    max: max.map_or(i64::MAX, |x| x as i64),
                }
            }
            "float" => Kind::Float {
                min: min.unwrap_or(f64::MIN),
                max: max.unwrap_or(f64::MAX),
            },
            "bool" => Kind::Bool,
            "string" => Kind::Str,
            "size" => Kind::Size,
            "enum" => self.choices(path, name, t)?,
            other => {
                let help = did_you_mean(other, OPTION_TYPES.iter().copied())
                    .unwrap_or_else(|| format!("types: {}", OPTION_TYPES.join(", ")));
                self.err(
                    &key(path, "type"),
                    false,
                    format!("unknown option type `{other}`"),
                    help,
                );
                return None;
            }
        };
        if let (Some(lo), Some(hi)) = (min, max)
            && lo > hi
        {
            self.err(
                &key(path, "min"),
                false,
                format!("min ({lo}) is greater than max ({hi})"),
                "swap them",
            );
            return None;
        }
        Some(kind)
    }

    /// The `choices` of enum option `name` (table `t`).
    fn choices(&mut self, path: &[Seg], name: &str, t: &toml::Table) -> Option<Kind> {
        let choices: Option<Vec<&str>> = t
            .get("choices")
            .and_then(toml::Value::as_array)
            .and_then(|a| a.iter().map(toml::Value::as_str).collect());
        match choices {
            Some(c) if !c.is_empty() => {
                let leaked: Vec<&'static str> = c
                    .iter()
                    .map(|s| &*Box::leak(s.to_string().into_boxed_str()))
                    .collect();
                Some(Kind::Enum(Box::leak(leaked.into_boxed_slice())))
            }
            _ => {
                self.err(
                    path,
                    false,
                    format!("enum option `{name}` needs `choices`, a list of strings"),
                    "e.g. choices = [\"a\", \"b\"]",
                );
                None
            }
        }
    }

    /// The default of option `name` (`d`, at `path`) as the text of a value of `kind`.
    fn option_default(
        &mut self,
        path: &[Seg],
        name: &str,
        d: &toml::Value,
        kind: &Kind,
    ) -> Option<String> {
        let Some(value) = Value::from_toml(d) else {
            self.err(
                path,
                false,
                "a default must be a number, a string or a boolean",
                "e.g. default = 10",
            );
            return None;
        };
        if let Err(e) = kind.coerce(&value) {
            self.err(
                path,
                false,
                format!("invalid default for `{name}`: {e}"),
                format!("the default must be {}", kind.describe()),
            );
            return None;
        }
        Some(match &value {
            // Quoted when the plain text would read back as another type ("10", "on").
            Value::Str(s) if Value::parse_loose(s) != value => {
                toml::Value::String(s.clone()).to_string()
            }
            other => other.to_string(),
        })
    }
}

/// Two custom workloads that declare one option name must give it one kind: validation checks
/// a value through the first workload that has the option.
pub(super) fn option_kinds_agree(loaded: &Loaded, errors: &mut Vec<ConfigError>) {
    let mut seen: HashMap<&str, (&Def, &OptionDef)> = HashMap::new();
    for def in &loaded.defs {
        for o in &def.options {
            match seen.get(o.name.as_str()) {
                Some((first, fo)) if !same_kind(&fo.kind, &o.kind) => {
                    let path = [
                        Seg::key("workloads"),
                        Seg::key(&def.name),
                        Seg::key("options"),
                        Seg::key(&o.name),
                    ];
                    let f = loaded
                        .files
                        .iter()
                        .find(|f| f.path == def.source)
                        .unwrap_or(&loaded.files[0]);
                    errors.push(
                        ConfigError::new(
                            &f.path,
                            f.map.origin(&path, true),
                            path_text(&path),
                            format!(
                                "option `{}` of workload `{}` is {}, but workload `{}` declares it as {}",
                                o.name,
                                def.name,
                                o.kind.describe(),
                                first.name,
                                fo.kind.describe()
                            ),
                        )
                        .with_help("give the option the same type and bounds in both, or rename one"),
                    );
                }
                Some(_) => {}
                None => {
                    seen.insert(&o.name, (def, o));
                }
            }
        }
    }
}

fn same_kind(a: &Kind, b: &Kind) -> bool {
    match (a, b) {
        (Kind::Bool, Kind::Bool) | (Kind::Size, Kind::Size) | (Kind::Str, Kind::Str) => true,
        (Kind::Int { min: a0, max: a1 }, Kind::Int { min: b0, max: b1 }) => a0 == b0 && a1 == b1,
        (Kind::Float { min: a0, max: a1 }, Kind::Float { min: b0, max: b1 }) => {
            a0 == b0 && a1 == b1
        }
        (Kind::Enum(a), Kind::Enum(b)) => a == b,
        (Kind::List(a), Kind::List(b)) => a == b,
        _ => false,
    }
}

/// How a built-in option is declared, in definition syntax (for the help of a clash).
fn declare_like(kind: &Kind) -> String {
    match kind {
        Kind::Bool => "type = \"bool\"".into(),
        Kind::Int { min, max } if *max == i64::MAX => format!("type = \"int\", min = {min}"),
        Kind::Int { min, max } => format!("type = \"int\", min = {min}, max = {max}"),
        Kind::IntOr { word, .. } => {
            format!("an integer or \"{word}\" (not available to custom workloads)")
        }
        Kind::Float { min, max } => format!("type = \"float\", min = {min}, max = {max}"),
        Kind::Size => "type = \"size\"".into(),
        Kind::Str => "type = \"string\"".into(),
        Kind::Enum(c) => format!("type = \"enum\", choices = {c:?}"),
        Kind::List(_) => "a list (not available to custom workloads)".into(),
    }
}
