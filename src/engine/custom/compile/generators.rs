//! Values a definition draws or computes (`[params]`, `let`s, load columns, `keying`,
//! `think`): an expression, a number, or a generator table with one generator key
//! (`{ uniform = [1, 100] }`) and the modifiers of that generator (`per_thread`, `weights`,
//! `scale`, `words`). Each generator's arguments are checked here, with constant bounds that
//! are inverted or not integers refused where they are written.

use super::compiler::{Compiler, Scope, index, key};
use crate::engine::custom::expr::Expr;
use crate::engine::custom::model::{Dist, GenSpec, Val};
use crate::source::{Seg, did_you_mean};

/// The generator keys, one per generator table.
const GENERATORS: &[&str] = &[
    "uniform",
    "gaussian",
    "special",
    "pareto",
    "zipfian",
    "rand",
    "sequence",
    "nurand",
    "choice",
    "string",
    "astring",
    "nstring",
    "float",
    "syllables",
    "date",
    "null",
    "const",
    "fk",
    "thread",
    "exponential",
];
/// Keys that modify a generator: (key, the generators it belongs to).
const MODIFIERS: &[(&str, &[&str])] = &[
    ("per_thread", &["sequence"]),
    ("weights", &["choice"]),
    ("scale", &["float", "exponential"]),
    ("words", &["syllables"]),
    ("exponent", &["zipfian"]),
    ("scrambled", &["zipfian"]),
    ("h", &["pareto"]),
    ("iter", &["gaussian", "special"]),
    ("pct", &["special"]),
    ("res", &["special"]),
    ("cap", &["exponential"]),
];

/// A TOML value as a variable's value (`None` for tables, arrays and dates).
pub(super) fn val_of(v: &toml::Value) -> Option<Val> {
    match v {
        toml::Value::Integer(i) => Some(Val::Int(*i)),
        toml::Value::Float(f) => Some(Val::Float(*f)),
        toml::Value::String(s) => Some(Val::Str(s.clone())),
        toml::Value::Boolean(b) => Some(Val::Int(i64::from(*b))),
        _ => None,
    }
}

impl Compiler<'_> {
    /// A generator or an expression (a string or a number).
    pub(super) fn generated(
        &mut self,
        path: &[Seg],
        v: &toml::Value,
        scope: &Scope,
    ) -> Option<GenSpec> {
        match v {
            toml::Value::String(s) => self.expr(path, s, scope).map(GenSpec::Expr),
            toml::Value::Integer(i) => {
                Some(GenSpec::Expr(Expr::constant(&i.to_string(), Val::Int(*i))))
            }
            toml::Value::Float(f) => Some(GenSpec::Expr(Expr::constant(
                &f.to_string(),
                Val::Float(*f),
            ))),
            toml::Value::Table(t) => self.generator(path, t, scope),
            other => {
                self.err(
                    path,
                    false,
                    format!("a value must be an expression (a string), a number or a generator table, found {}", other.type_str()),
                    "e.g. \"qty * 3\", 10 or { uniform = [1, 100] }",
                );
                None
            }
        }
    }

    /// A generator's bound: a number or an expression.
    pub(super) fn bound(&mut self, path: &[Seg], v: &toml::Value, scope: &Scope) -> Option<Expr> {
        match v {
            toml::Value::Integer(i) => Some(Expr::constant(&i.to_string(), Val::Int(*i))),
            toml::Value::Float(f) => Some(Expr::constant(&f.to_string(), Val::Float(*f))),
            toml::Value::String(s) => self.expr(path, s, scope),
            other => {
                self.err(
                    path,
                    false,
                    format!(
                        "a bound must be a number or an expression, found {}",
                        other.type_str()
                    ),
                    "e.g. 1 or \"customers\"",
                );
                None
            }
        }
    }

    /// A generator table `t`: its one generator, with that generator's arguments and
    /// modifiers.
    fn generator(&mut self, path: &[Seg], t: &toml::Table, scope: &Scope) -> Option<GenSpec> {
        let g = self.generator_key(path, t)?;
        let gpath = key(path, g);
        let arg = &t[g];
        Some(match g {
            "uniform" | "gaussian" | "special" | "pareto" | "zipfian" | "rand" => {
                let b = self.bounds(&gpath, g, arg, 2, "[1, 100]", scope)?;
                if !self.int_bounds(&gpath, g, &b) {
                    return None;
                }
                let d = match g {
                    "uniform" => Dist::Uniform,
                    "gaussian" => Dist::Gaussian,
                    "special" => Dist::Special,
                    "pareto" => Dist::Pareto,
                    "zipfian" => Dist::Zipfian,
                    _ => Dist::Default,
                };
                let [lo, hi]: [Expr; 2] = b.try_into().ok()?;
                match self.dist_params(path, t)? {
                    Some(params) => GenSpec::Tuned {
                        dist: d,
                        lo,
                        hi,
                        params,
                    },
                    None => GenSpec::Dist { dist: d, lo, hi },
                }
            }
            "exponential" => self.exponential(path, t, arg, scope)?,
            "sequence" => {
                let Some(start) = arg.as_integer() else {
                    self.err(
                        &gpath,
                        false,
                        format!("`sequence` takes the first value, an integer, found {arg}"),
                        "e.g. { sequence = 1 }",
                    );
                    return None;
                };
                let per_thread = match t.get("per_thread") {
                    Some(v) => self.boolean(&key(path, "per_thread"), v)?,
                    None => false,
                };
                GenSpec::Sequence { start, per_thread }
            }
            "nurand" => self.nurand(&gpath, arg, scope)?,
            "choice" => self.choice(path, t, arg)?,
            "string" => GenSpec::Pattern(
                self.string(&gpath, arg, "{ string = \"###-@@@\" }")?
                    .to_string(),
            ),
            "astring" | "nstring" => self.random_string(&gpath, g, arg, scope)?,
            "float" => {
                let b = self.bounds(&gpath, g, arg, 2, "[1.0, 100.0]", scope)?;
                if !self.range(&gpath, g, &b[0], &b[1], false) {
                    return None;
                }
                let scale = match t.get("scale") {
                    Some(v) => self.integer(&key(path, "scale"), v, 0)?.min(18) as u32,
                    None => 2,
                };
                let [min, max]: [Expr; 2] = b.try_into().ok()?;
                GenSpec::Float { min, max, scale }
            }
            "syllables" => self.syllables(path, t, arg, scope)?,
            "date" => {
                if arg.as_str() != Some("now") {
                    self.err(
                        &gpath,
                        false,
                        format!("`date` takes \"now\", found {arg}"),
                        "write { date = \"now\" } (the current timestamp)",
                    );
                    return None;
                }
                GenSpec::Now
            }
            "null" | "thread" => {
                if arg.as_bool() != Some(true) {
                    self.err(
                        &gpath,
                        false,
                        format!("`{g}` takes true, found {arg}"),
                        format!("write {{ {g} = true }}"),
                    );
                    return None;
                }
                if g == "null" {
                    GenSpec::Const(Val::Null)
                } else {
                    GenSpec::Thread
                }
            }
            "const" => match val_of(arg) {
                Some(v) => GenSpec::Const(v),
                None => {
                    self.err(
                        &gpath,
                        false,
                        format!("`const` takes a number, a string or a boolean, found {arg}"),
                        "e.g. { const = \"open\" }",
                    );
                    return None;
                }
            },
            "fk" => {
                let table = self.string(&gpath, arg, "{ fk = \"customers\" }")?;
                if !self.tables.iter().any(|t| t == table) {
                    let tables = self.tables.clone();
                    self.not_loaded(&gpath, "fk", table, &tables);
                    return None;
                }
                GenSpec::Fk(table.to_string())
            }
            _ => return None,
        })
    }

    /// The one generator key of table `t`; every other key must be a modifier of it.
    fn generator_key<'t>(&mut self, path: &[Seg], t: &'t toml::Table) -> Option<&'t str> {
        let gens: Vec<&str> = t
            .keys()
            .map(String::as_str)
            .filter(|k| GENERATORS.contains(k))
            .collect();
        let mut ok = true;
        for k in t.keys() {
            if GENERATORS.contains(&k.as_str()) {
                continue;
            }
            match MODIFIERS.iter().find(|(m, _)| m == k) {
                Some((_, owners)) if owners.iter().any(|o| gens.contains(o)) => {}
                Some((_, owners)) => {
                    let names: Vec<String> = owners.iter().map(|o| format!("`{o}`")).collect();
                    self.err(
                        &key(path, k),
                        true,
                        format!(
                            "`{k}` belongs to the {} generator{}",
                            names.join(" or "),
                            if owners.len() > 1 { "s" } else { "" }
                        ),
                        format!("use it as {{ {} = …, {k} = … }}, or remove it", owners[0]),
                    );
                    ok = false;
                }
                None => {
                    let all = GENERATORS
                        .iter()
                        .copied()
                        .chain(MODIFIERS.iter().map(|(m, _)| *m));
                    let help = did_you_mean(k, all)
                        .unwrap_or_else(|| format!("generators: {}", GENERATORS.join(", ")));
                    self.err(
                        &key(path, k),
                        true,
                        format!("unknown generator key `{k}`"),
                        help,
                    );
                    ok = false;
                }
            }
        }
        match gens.as_slice() {
            [g] => ok.then_some(*g),
            [] => {
                if ok {
                    self.err(
                        path,
                        false,
                        "a generator table needs one generator key",
                        format!("generators: {}", GENERATORS.join(", ")),
                    );
                }
                None
            }
            many => {
                self.err(
                    path,
                    false,
                    format!(
                        "a generator table has one generator, this one has {}",
                        many.join(", ")
                    ),
                    "split it into several variables",
                );
                None
            }
        }
    }

    /// Generator `g`'s argument `arg` (at `gpath`) as a list of `n` bounds.
    fn bounds(
        &mut self,
        gpath: &[Seg],
        g: &str,
        arg: &toml::Value,
        n: usize,
        eg: &str,
        scope: &Scope,
    ) -> Option<Vec<Expr>> {
        match arg.as_array() {
            Some(items) if items.len() == n => {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    out.push(self.bound(&index(gpath, i), item, scope)?);
                }
                Some(out)
            }
            _ => {
                self.err(
                    gpath,
                    false,
                    format!("`{g}` takes {n} values, found {arg}"),
                    format!("e.g. {g} = {eg}"),
                );
                None
            }
        }
    }

    /// Whether the bounds `e` of integer generator `g` are integers where they are constants,
    /// and, as a pair, a range (see [`Compiler::range`]).
    fn int_bounds(&mut self, gpath: &[Seg], g: &str, e: &[Expr]) -> bool {
        let mut ok = true;
        for (i, x) in e.iter().enumerate() {
            if let Some(v) = x.as_const()
                && v.as_i64().is_none()
            {
                self.err(
                    &index(gpath, i),
                    false,
                    format!("`{g}` takes integer bounds, found {v}"),
                    "write a whole number",
                );
                ok = false;
            }
        }
        if ok && let [lo, hi] = e {
            ok = self.range(gpath, g, lo, hi, true);
        }
        ok
    }

    /// `nurand = [A, x, y]`: TPC-C's non-uniform random number.
    fn nurand(&mut self, gpath: &[Seg], arg: &toml::Value, scope: &Scope) -> Option<GenSpec> {
        let items = arg.as_array();
        let a = items
            .and_then(|i| i.first())
            .and_then(toml::Value::as_integer);
        let (Some(items), Some(a)) = (items.filter(|i| i.len() == 3), a.filter(|a| *a >= 0)) else {
            self.err(
                gpath,
                false,
                format!("`nurand` takes [A, x, y] with A an integer ≥ 0, found {arg}"),
                "e.g. nurand = [1023, 1, 3000] (TPC-C's customer id)",
            );
            return None;
        };
        let lo = self.bound(&index(gpath, 1), &items[1], scope)?;
        let hi = self.bound(&index(gpath, 2), &items[2], scope)?;
        if !self.int_bounds(gpath, "nurand", &[lo.clone(), hi.clone()]) {
            return None;
        }
        Some(GenSpec::NuRand { a, lo, hi })
    }

    /// `{ choice = [...], weights = [...] }` (table `t` at `path`).
    fn choice(&mut self, path: &[Seg], t: &toml::Table, arg: &toml::Value) -> Option<GenSpec> {
        let values: Option<Vec<Val>> = arg
            .as_array()
            .filter(|a| !a.is_empty())
            .and_then(|a| a.iter().map(val_of).collect());
        let Some(values) = values else {
            self.err(
                &key(path, "choice"),
                false,
                format!(
                    "`choice` takes a non-empty list of numbers, strings or booleans, found {arg}"
                ),
                "e.g. { choice = [\"a\", \"b\"], weights = [3, 1] }",
            );
            return None;
        };
        let weights = match t.get("weights") {
            None => Vec::new(),
            Some(w) => {
                let ws: Option<Vec<u32>> = w.as_array().and_then(|a| {
                    a.iter()
                        .map(|x| x.as_integer().and_then(|i| u32::try_from(i).ok()))
                        .collect()
                });
                match ws {
                    Some(ws) if ws.len() == values.len() && ws.iter().any(|w| *w > 0) => ws,
                    _ => {
                        self.err(
                            &key(path, "weights"),
                            false,
                            format!(
                                "`weights` needs one integer ≥ 0 per choice ({} here), not all 0",
                                values.len()
                            ),
                            "e.g. weights = [3, 1]",
                        );
                        return None;
                    }
                }
            }
        };
        Some(GenSpec::Choice { values, weights })
    }

    /// `astring` or `nstring` (`g`) = [min, max]: a random string of a length in that range.
    fn random_string(
        &mut self,
        gpath: &[Seg],
        g: &str,
        arg: &toml::Value,
        scope: &Scope,
    ) -> Option<GenSpec> {
        let b = self.bounds(gpath, g, arg, 2, "[8, 16]", scope)?;
        if !self.int_bounds(gpath, g, &b) {
            return None;
        }
        for (i, x) in b.iter().enumerate() {
            if x.as_const().and_then(Val::as_i64).is_some_and(|n| n < 0) {
                self.err(
                    &index(gpath, i),
                    false,
                    "a length cannot be negative",
                    "e.g. [8, 16]",
                );
                return None;
            }
        }
        let [min, max]: [Expr; 2] = b.try_into().ok()?;
        Some(if g == "astring" {
            GenSpec::AString { min, max }
        } else {
            GenSpec::NString { min, max }
        })
    }

    /// `{ syllables = "n", words = [10 words] }` (table `t` at `path`): `n` spelled digit by
    /// digit, as TPC-C's last names.
    fn syllables(
        &mut self,
        path: &[Seg],
        t: &toml::Table,
        arg: &toml::Value,
        scope: &Scope,
    ) -> Option<GenSpec> {
        let gpath = key(path, "syllables");
        let of = match arg {
            toml::Value::Integer(_) | toml::Value::String(_) => self.bound(&gpath, arg, scope)?,
            _ => {
                self.err(
                    &gpath,
                    false,
                    "`syllables` takes an expression (the number to spell)",
                    "e.g. { syllables = \"c_last\", words = [\"BAR\", \"OUGHT\", …] }",
                );
                return None;
            }
        };
        let words: Option<Vec<String>> = t
            .get("words")
            .and_then(toml::Value::as_array)
            .and_then(|a| a.iter().map(|w| w.as_str().map(str::to_string)).collect());
        match words {
            Some(words) if words.len() == 10 => Some(GenSpec::Syllables { of, words }),
            _ => {
                let at = if t.contains_key("words") {
                    key(path, "words")
                } else {
                    path.to_vec()
                };
                self.err(&at, false, "`syllables` needs `words`, a list of 10 strings (one per digit 0–9)", "e.g. words = [\"BAR\", \"OUGHT\", \"ABLE\", \"PRI\", \"PRES\", \"ESE\", \"ANTI\", \"CALLY\", \"ATION\", \"EING\"]");
                None
            }
        }
    }
}
