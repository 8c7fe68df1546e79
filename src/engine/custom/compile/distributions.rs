//! A distribution's own parameters (#31): `exponent` and `scrambled` of `zipfian`, `h` of
//! `pareto`, `iter` of `gaussian` and `special`, `pct` and `res` of `special` — each in place
//! of the run-wide `rand_*` option for that generator only — and the `exponential`
//! generator (`{ exponential = mean, cap = 10, scale = 3 }`).

use super::compiler::{Compiler, Scope, key};
use crate::engine::custom::generator::shapes::TPCC_EXP_CAP;
use crate::engine::custom::model::{DistParams, GenSpec};
use crate::source::Seg;

impl Compiler<'_> {
    /// The parameters generator table `t` (at `path`) gives its distribution; `Some(None)`:
    /// none (the run's `rand_*` options), `None`: one is wrong (reported).
    pub(super) fn dist_params(
        &mut self,
        path: &[Seg],
        t: &toml::Table,
    ) -> Option<Option<DistParams>> {
        let mut p = DistParams::default();
        let mut any = false;
        let mut ok = true;
        if let Some(v) = t.get("exponent") {
            any = true;
            match number(v).filter(|e| e.is_finite() && *e >= 0.0) {
                Some(e) => p.exponent = Some(e),
                None => {
                    self.err(
                        &key(path, "exponent"),
                        false,
                        format!("`exponent` is the zipfian exponent, a number ≥ 0, found {v}"),
                        "e.g. { zipfian = [1, 1000], exponent = 0.99 } (YCSB's; sysbench's default is 0.8)",
                    );
                    ok = false;
                }
            }
        }
        if let Some(v) = t.get("h") {
            any = true;
            match number(v).filter(|h| *h > 0.0 && *h < 1.0) {
                Some(h) => p.h = Some(h),
                None => {
                    self.err(
                        &key(path, "h"),
                        false,
                        format!("`h` of `pareto` is between 0 and 1 (exclusive), found {v}"),
                        "e.g. { pareto = [1, 1000], h = 0.2 } (sysbench's rand_pareto_h)",
                    );
                    ok = false;
                }
            }
        }
        for (name, max, eg) in [
            (
                "iter",
                u32::MAX as i64,
                "{ gaussian = [1, 1000], iter = 6 }",
            ),
            ("pct", 100, "{ special = [1, 1000], pct = 5, res = 75 }"),
            ("res", 100, "{ special = [1, 1000], pct = 5, res = 75 }"),
        ] {
            let Some(v) = t.get(name) else { continue };
            any = true;
            let min = i64::from(name == "iter");
            match v.as_integer().filter(|i| (min..=max).contains(i)) {
                Some(i) => {
                    let i = i as u32;
                    match name {
                        "iter" => p.iter = Some(i),
                        "pct" => p.pct = Some(i),
                        _ => p.res = Some(i),
                    }
                }
                None => {
                    self.err(
                        &key(path, name),
                        false,
                        format!("`{name}` is an integer from {min} to {max}, found {v}"),
                        format!("e.g. {eg}"),
                    );
                    ok = false;
                }
            }
        }
        if let Some(v) = t.get("scrambled") {
            any = true;
            match self.boolean(&key(path, "scrambled"), v) {
                Some(b) => p.scrambled = b,
                None => ok = false,
            }
        }
        ok.then_some(any.then_some(p))
    }

    /// `{ exponential = mean, cap = 10, scale = 3 }` (table `t` at `path`).
    pub(super) fn exponential(
        &mut self,
        path: &[Seg],
        t: &toml::Table,
        arg: &toml::Value,
        scope: &Scope,
    ) -> Option<GenSpec> {
        let gpath = key(path, "exponential");
        let mean = match arg {
            toml::Value::Integer(_) | toml::Value::Float(_) | toml::Value::String(_) => {
                self.bound(&gpath, arg, scope)?
            }
            _ => {
                self.err(
                    &gpath,
                    false,
                    format!("`exponential` takes its mean (a number or an expression), found {arg}"),
                    "e.g. think = { exponential = 12000 } (TPC-C's new-order think time: mean 12 s, at most 120 s)",
                );
                return None;
            }
        };
        if let Some(m) = mean.as_const().and_then(|v| v.as_f64())
            && !(m.is_finite() && m >= 0.0)
        {
            self.err(
                &gpath,
                false,
                format!("the mean of `exponential` is {m}: use a number ≥ 0"),
                "e.g. { exponential = 12000 }",
            );
            return None;
        }
        let cap = match t.get("cap") {
            None => TPCC_EXP_CAP,
            Some(v) => match number(v).filter(|c| c.is_finite() && *c > 0.0) {
                Some(c) => c,
                None => {
                    self.err(
                        &key(path, "cap"),
                        false,
                        format!("`cap` is the largest value as a multiple of the mean, a number > 0, found {v}"),
                        "e.g. cap = 10 (TPC-C's: at most 10 times the mean; the default)",
                    );
                    return None;
                }
            },
        };
        let scale = match t.get("scale") {
            None => 3,
            Some(v) => self.integer(&key(path, "scale"), v, 0)?.min(18) as u32,
        };
        Some(GenSpec::Exponential { mean, cap, scale })
    }
}

/// An integer or a float as a float.
fn number(v: &toml::Value) -> Option<f64> {
    v.as_float().or_else(|| v.as_integer().map(|i| i as f64))
}
