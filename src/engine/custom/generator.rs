//! Value generators of custom workloads: load columns, `[params]` and `let`s.
//!
//! A [`GenSpec`] (as declared) becomes a [`Gen`] once per step ([`Gens::add`]): bounds that are
//! constants are resolved then, sysbench's distributions take the run's `rand_*` options, each
//! NURand constant `A` gets its run constant `C` from the run's seed (TPC-C 2.1.6), global
//! sequences get their shared counter. Drawing ([`Gens::draw`]) then takes the worker's own
//! [`Rng`] (seeded per thread as the built-in workloads do: same seed, same values), its
//! [`Frame`] for bounds that are variables, and its [`Local`] state (per-thread sequences).

use std::sync::atomic::{AtomicI64, Ordering};

use super::expr::Expr;
use super::model::{Dist, Frame, GenSpec, Val};
use crate::engine::random::{Distribution, RandOptions, Rng};

/// A generator's index in [`Gens`].
pub type GenId = usize;

/// A bound: resolved when constant, else evaluated per draw.
#[derive(Clone, Debug)]
enum Bound {
    Const(i64),
    Expr(Expr),
}

impl Bound {
    fn new(e: &Expr) -> Result<Bound, String> {
        match e.as_const() {
            Some(v) => v
                .as_i64()
                .map(Bound::Const)
                .ok_or_else(|| format!("`{}` is {v}, not an integer", e.text())),
            None => Ok(Bound::Expr(e.clone())),
        }
    }

    #[inline]
    fn get(&self, frame: &Frame) -> Result<i64, String> {
        match self {
            Bound::Const(i) => Ok(*i),
            Bound::Expr(e) => e.eval_i64(frame),
        }
    }
}

/// A float bound.
fn float_of(e: &Expr, frame: &Frame) -> Result<f64, String> {
    let v = e.eval(frame)?;
    v.as_f64()
        .ok_or_else(|| format!("`{}` is {v}, not a number", e.text()))
}

#[derive(Clone, Debug)]
enum Gen {
    Expr(Expr),
    Dist {
        dist: Distribution,
        lo: Bound,
        hi: Bound,
    },
    /// Index into [`Gens::shared`] (global) or [`Local::sequences`] (per thread).
    Sequence {
        per_thread: bool,
        index: usize,
    },
    NuRand {
        a: i64,
        c: i64,
        lo: Bound,
        hi: Bound,
    },
    /// Cumulative weights (empty: equal).
    Choice {
        values: Vec<Val>,
        cumulative: Vec<u64>,
    },
    Pattern(String),
    Chars {
        digits_only: bool,
        min: Bound,
        max: Bound,
    },
    Float {
        min: Expr,
        max: Expr,
        scale: u32,
    },
    Syllables {
        of: Expr,
        words: Vec<String>,
    },
    Now,
    Const(Val),
    /// Row count of the table.
    Fk(i64),
    Thread,
}

/// What a step's generators need from the run.
pub struct Context<'a> {
    /// The run's `rand_*` options (the `rand` generator and the parameters of the others).
    pub rand: &'a RandOptions,
    /// The run's seed (0: from the clock), for NURand's C.
    pub seed: u64,
    /// Rows of a loaded table (for `fk`), `None` when the workload loads no such table.
    pub table_rows: &'a dyn Fn(&str) -> Option<u64>,
}

/// Every generator of a workload for one step, shared (read-only but for the global
/// sequences' atomics) by its workers.
#[derive(Debug, Default)]
pub struct Gens {
    gens: Vec<Gen>,
    /// Global sequences' next values.
    shared: Vec<AtomicI64>,
    /// Per-thread sequences' starts.
    per_thread: Vec<i64>,
}

/// A worker's own generator state.
#[derive(Clone, Debug, Default)]
pub struct Local {
    /// Global thread id (the `thread` generator and variable).
    pub thread: usize,
    sequences: Vec<i64>,
    text: String,
}

const ALNUM: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

impl Gens {
    /// Compiles `spec`; the error says what is wrong with it (the caller adds the key).
    pub fn add(&mut self, spec: &GenSpec, ctx: &Context<'_>) -> Result<GenId, String> {
        let g = match spec {
            GenSpec::Expr(e) => match e.as_const() {
                Some(v) => Gen::Const(v.clone()),
                None => Gen::Expr(e.clone()),
            },
            GenSpec::Dist { dist, lo, hi } => {
                let mut o = ctx.rand.clone();
                o.rand_type = match dist {
                    Dist::Uniform => "uniform",
                    Dist::Gaussian => "gaussian",
                    Dist::Special => "special",
                    Dist::Pareto => "pareto",
                    Dist::Zipfian => "zipfian",
                    Dist::Default => ctx.rand.rand_type.as_str(),
                }
                .to_string();
                Gen::Dist {
                    dist: Distribution::new(&o)?,
                    lo: Bound::new(lo)?,
                    hi: Bound::new(hi)?,
                }
            }
            GenSpec::Sequence { start, per_thread } => {
                let index = if *per_thread {
                    self.per_thread.push(*start);
                    self.per_thread.len() - 1
                } else {
                    self.shared.push(AtomicI64::new(*start));
                    self.shared.len() - 1
                };
                Gen::Sequence {
                    per_thread: *per_thread,
                    index,
                }
            }
            GenSpec::NuRand { a, lo, hi } => {
                // TPC-C 2.1.6: C is a run constant in [0, A]; drawn from the run's seed so that
                // a seeded run repeats.
                let mut rng = Rng::for_thread(ctx.seed, usize::MAX - 1 - *a as usize);
                Gen::NuRand {
                    a: *a,
                    c: rng.uniform(0, *a as u64) as i64,
                    lo: Bound::new(lo)?,
                    hi: Bound::new(hi)?,
                }
            }
            GenSpec::Choice { values, weights } => {
                if values.is_empty() {
                    return Err("`choice` needs at least one value".into());
                }
                let mut cumulative = Vec::new();
                if !weights.is_empty() {
                    if weights.len() != values.len() {
                        return Err(format!(
                            "`weights` has {} entries for {} values",
                            weights.len(),
                            values.len()
                        ));
                    }
                    let mut sum = 0u64;
                    for w in weights {
                        sum += u64::from(*w);
                        cumulative.push(sum);
                    }
                    if sum == 0 {
                        return Err("every weight of `choice` is 0".into());
                    }
                }
                Gen::Choice {
                    values: values.clone(),
                    cumulative,
                }
            }
            GenSpec::Pattern(p) => Gen::Pattern(p.clone()),
            GenSpec::AString { min, max } => Gen::Chars {
                digits_only: false,
                min: Bound::new(min)?,
                max: Bound::new(max)?,
            },
            GenSpec::NString { min, max } => Gen::Chars {
                digits_only: true,
                min: Bound::new(min)?,
                max: Bound::new(max)?,
            },
            GenSpec::Float { min, max, scale } => Gen::Float {
                min: min.clone(),
                max: max.clone(),
                scale: *scale,
            },
            GenSpec::Syllables { of, words } => {
                if words.len() != 10 {
                    return Err(format!(
                        "`words` needs 10 words (one per digit), not {}",
                        words.len()
                    ));
                }
                Gen::Syllables {
                    of: of.clone(),
                    words: words.clone(),
                }
            }
            GenSpec::Now => Gen::Now,
            GenSpec::Const(v) => Gen::Const(v.clone()),
            GenSpec::Fk(table) => match (ctx.table_rows)(table) {
                Some(rows) => Gen::Fk(rows as i64),
                None => {
                    return Err(format!(
                        "`fk` names `{table}`, which this workload does not load"
                    ));
                }
            },
            GenSpec::Thread => Gen::Thread,
        };
        self.gens.push(g);
        Ok(self.gens.len() - 1)
    }

    /// The state of worker `thread` (its global thread id).
    pub fn local(&self, thread: usize) -> Local {
        Local {
            thread,
            sequences: self.per_thread.clone(),
            text: String::new(),
        }
    }

    /// Draws a value of generator `id`.
    pub fn draw(
        &self,
        id: GenId,
        rng: &mut Rng,
        frame: &Frame,
        local: &mut Local,
    ) -> Result<Val, String> {
        Ok(match &self.gens[id] {
            Gen::Expr(e) => e.eval(frame)?,
            Gen::Const(v) => v.clone(),
            Gen::Dist { dist, lo, hi } => {
                let (a, b) = ordered(lo.get(frame)?, hi.get(frame)?);
                Val::Int(a + dist.draw(rng, 0, (b - a) as u64) as i64)
            }
            Gen::Sequence {
                per_thread, index, ..
            } => {
                if *per_thread {
                    let v = local.sequences[*index];
                    local.sequences[*index] += 1;
                    Val::Int(v)
                } else {
                    Val::Int(self.shared[*index].fetch_add(1, Ordering::Relaxed))
                }
            }
            Gen::NuRand { a, c, lo, hi } => {
                let (x, y) = ordered(lo.get(frame)?, hi.get(frame)?);
                Val::Int(nurand(rng, *a, *c, x, y))
            }
            Gen::Choice { values, cumulative } => {
                if cumulative.is_empty() {
                    values[rng.uniform(0, values.len() as u64 - 1) as usize].clone()
                } else {
                    let total = *cumulative.last().unwrap_or(&1);
                    let r = rng.uniform(1, total);
                    let i = cumulative.partition_point(|&c| c < r);
                    values[i.min(values.len() - 1)].clone()
                }
            }
            Gen::Pattern(p) => {
                rng.string(p, &mut local.text);
                Val::Str(local.text.clone())
            }
            Gen::Chars {
                digits_only,
                min,
                max,
            } => {
                let (lo, hi) = ordered(min.get(frame)?.max(0), max.get(frame)?.max(0));
                let len = rng.uniform(lo as u64, hi as u64) as usize;
                let set: &[u8] = if *digits_only { &ALNUM[..10] } else { ALNUM };
                let s: String = (0..len)
                    .map(|_| char::from(set[rng.uniform(0, set.len() as u64 - 1) as usize]))
                    .collect();
                Val::Str(s)
            }
            Gen::Float { min, max, scale } => {
                let (lo, hi) = (float_of(min, frame)?, float_of(max, frame)?);
                let x = lo + rng.unit() * (hi - lo);
                let m = 10f64.powi(*scale as i32);
                Val::Float((x * m).round() / m)
            }
            Gen::Syllables { of, words } => {
                let n = of.eval_i64(frame)?.rem_euclid(1000);
                let mut s = String::new();
                for d in [n / 100, n / 10 % 10, n % 10] {
                    s.push_str(&words[d as usize]);
                }
                Val::Str(s)
            }
            Gen::Now => Val::Str(chrono::Local::now().format("%Y-%m-%d %H:%M:%S").to_string()),
            Gen::Fk(rows) => Val::Int(rng.uniform(1, (*rows).max(1) as u64) as i64),
            Gen::Thread => Val::Int(local.thread as i64),
        })
    }
}

fn ordered(a: i64, b: i64) -> (i64, i64) {
    if a <= b { (a, b) } else { (b, a) }
}

/// TPC-C's NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y − x + 1)) + x.
pub fn nurand(rng: &mut Rng, a: i64, c: i64, x: i64, y: i64) -> i64 {
    let r1 = rng.uniform(0, a as u64) as i64;
    let r2 = x + rng.uniform(0, (y - x) as u64) as i64;
    (((r1 | r2) + c) % (y - x + 1)) + x
}
