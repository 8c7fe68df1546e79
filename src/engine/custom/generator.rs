//! Value generators of custom workloads: load columns, `[params]` and `let`s.
//!
//! A [`GenSpec`] (as declared) becomes a [`Gen`] once per step ([`Gens::add`]): bounds that are
//! constants are resolved (and checked) then, sysbench's distributions take the run's `rand_*`
//! options, each NURand constant `A` gets its constant `C` for the phase ([`nurand_c`]), global
//! sequences get their shared counter. Drawing ([`Gens::draw`]) then takes the worker's own
//! [`Rng`] (seeded per thread as the built-in workloads do: same seed, same values), its
//! [`Frame`] for bounds that are variables, and its [`Local`] state (per-thread sequences).
//!
//! Every bound is an `i64` and any pair drawn from the data is valid: `lo > hi` is read as
//! `hi..=lo` (a pair written as constants is refused when the suite loads), and the span of
//! `[i64::MIN, i64::MAX]` (2⁶⁴ values) is computed without overflow. What cannot be honoured is
//! an error naming the generator, never a panic or a value out of range: a sequence that would
//! pass `i64::MAX`, a string longer than [`MAX_TEXT`], a `float` range holding no number with
//! `scale` decimals.

use std::sync::atomic::{AtomicI64, Ordering};

use super::error::ValueError;
use super::expr::Expr;
use super::model::{Dist, Frame, GenSpec, Val};
use crate::engine::random::{Distribution, RandOptions, Rng};

/// A generator's index in [`Gens`].
pub type GenId = usize;

/// The longest `astring`/`nstring` (characters): far above any column a benchmark loads
/// (TPC-C's longest is 500), low enough that a bound mistaken for a row count is an error
/// instead of gigabytes per value.
pub const MAX_TEXT: i64 = 1 << 24;

/// The most decimals of `float`: a double holds 15 significant decimal digits.
pub const MAX_SCALE: u32 = 15;

/// A bound: resolved when constant, else evaluated per draw.
#[derive(Clone, Debug)]
enum Bound {
    Const(i64),
    Expr(Expr),
}

impl Bound {
    fn new(e: &Expr) -> Result<Bound, ValueError> {
        match e.as_const() {
            Some(v) => v
                .as_i64()
                .map(Bound::Const)
                .ok_or_else(|| ValueError::NotInteger {
                    expr: e.text().to_string(),
                    value: v.to_string(),
                }),
            None => Ok(Bound::Expr(e.clone())),
        }
    }

    #[inline]
    fn get(&self, frame: &Frame) -> Result<i64, ValueError> {
        match self {
            Bound::Const(i) => Ok(*i),
            Bound::Expr(e) => e.eval_i64(frame),
        }
    }
}

/// A float bound.
fn float_of(e: &Expr, frame: &Frame) -> Result<f64, ValueError> {
    let v = e.eval(frame)?;
    v.as_f64()
        .filter(|f| f.is_finite())
        .ok_or_else(|| ValueError::NotFinite {
            expr: e.text().to_string(),
            value: v.to_string(),
        })
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
    /// Row count of the table (at least 1).
    Fk(u64),
    Thread,
    /// YCSB's scrambled zipfian over [lo, hi] (#31).
    Scrambled {
        exp: f64,
        lo: Bound,
        hi: Bound,
    },
    /// A negative exponential of mean `mean`, capped at `cap`·mean, `scale` decimals (#31).
    Exponential {
        mean: Expr,
        cap: f64,
        scale: u32,
    },
}

/// Which side of a dataset the generators serve: TPC-C 2.1.6.1 wants the NURand constant C of
/// customer last names to differ between the load and the runs (see [`nurand_c`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Prepare: the generators of `[[load]]` columns and `let`s.
    Load,
    /// A run step: `[params]`, transaction `let`s, think and keying times.
    Run,
}

/// What a step's generators need from the run.
pub struct Context<'a> {
    /// The run's `rand_*` options (the `rand` generator and the parameters of the others).
    pub rand: &'a RandOptions,
    /// The run's seed (0: from the clock), for the run's NURand C.
    pub seed: u64,
    /// Rows of a loaded table (for `fk`), `None` when the workload loads no such table.
    pub table_rows: &'a dyn Fn(&str) -> Option<u64>,
    /// Load or run (NURand's C differs).
    pub phase: Phase,
    /// What stays the same for the whole step (the options' values, and which slots are
    /// options): generators' expressions over only those are settled when added.
    pub constants: Option<(&'a Frame, &'a dyn Fn(usize) -> bool)>,
}

impl<'a> Context<'a> {
    /// The context of a dataset's load (prepare).
    pub fn load(
        rand: &'a RandOptions,
        seed: u64,
        table_rows: &'a dyn Fn(&str) -> Option<u64>,
    ) -> Context<'a> {
        Context {
            rand,
            seed,
            table_rows,
            phase: Phase::Load,
            constants: None,
        }
    }

    /// The context of a run step.
    pub fn run(
        rand: &'a RandOptions,
        seed: u64,
        table_rows: &'a dyn Fn(&str) -> Option<u64>,
    ) -> Context<'a> {
        Context {
            rand,
            seed,
            table_rows,
            phase: Phase::Run,
            constants: None,
        }
    }

    /// `e` with the run's constants put in ([`Expr::settle`]); as it is without them.
    fn settle(&self, e: &Expr) -> Expr {
        match self.constants {
            Some((frame, constant)) => e.settle(frame, constant),
            None => e.clone(),
        }
    }

    /// The context with the run's constants: the options' values in `frame`, `constant`
    /// saying which slots hold them ([`Expr::settle`]).
    pub fn with_constants(
        self,
        frame: &'a Frame,
        constant: &'a dyn Fn(usize) -> bool,
    ) -> Context<'a> {
        Context {
            constants: Some((frame, constant)),
            ..self
        }
    }
}

/// A global sequence: its start and how many values this process took. The `k`-th value
/// taken is `start + k·stride + phase` ([`Gens::shard`]): `start + k` in one process.
#[derive(Debug)]
struct Shared {
    start: i64,
    taken: AtomicI64,
}

/// Every generator of a workload for one step, shared (read-only but for the global
/// sequences' atomics) by its workers.
#[derive(Debug, Default)]
pub struct Gens {
    gens: Vec<Gen>,
    /// Global sequences.
    shared: Vec<Shared>,
    /// Per-thread sequences' starts.
    per_thread: Vec<i64>,
    /// NURand's C per (A, phase) once chosen: every generator with the same A shares it, as
    /// TPC-C wants one C per field for all terminals (this matters with `rand_seed = 0`, where
    /// each choice would otherwise read the clock afresh).
    nurand_cs: Vec<(i64, Phase, i64)>,
    /// The global sequences' stride and phase: 1 and 0, or the shard count and index of a
    /// step driven from several clients, so that no two clients draw the same value (#17).
    stride: i64,
    phase: i64,
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
    pub fn add(&mut self, spec: &GenSpec, ctx: &Context<'_>) -> Result<GenId, ValueError> {
        let g = match spec {
            GenSpec::Expr(e) => {
                let e = ctx.settle(e);
                match e.as_const() {
                    Some(v) => Gen::Const(v.clone()),
                    None => Gen::Expr(e),
                }
            }
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
                    dist: Distribution::new(&o).map_err(ValueError::Distribution)?,
                    lo: Bound::new(&ctx.settle(lo))?,
                    hi: Bound::new(&ctx.settle(hi))?,
                }
            }
            GenSpec::Sequence { start, per_thread } => {
                let index = if *per_thread {
                    self.per_thread.push(*start);
                    self.per_thread.len() - 1
                } else {
                    self.shared.push(Shared {
                        start: *start,
                        taken: AtomicI64::new(0),
                    });
                    self.shared.len() - 1
                };
                Gen::Sequence {
                    per_thread: *per_thread,
                    index,
                }
            }
            GenSpec::NuRand { a, lo, hi } => {
                if *a < 0 {
                    return Err(ValueError::NurandA(*a));
                }
                let c = match self
                    .nurand_cs
                    .iter()
                    .find(|(ca, p, _)| ca == a && *p == ctx.phase)
                {
                    Some(&(_, _, c)) => c,
                    None => {
                        let c = nurand_c(*a, ctx.phase, ctx.seed);
                        self.nurand_cs.push((*a, ctx.phase, c));
                        c
                    }
                };
                Gen::NuRand {
                    a: *a,
                    c,
                    lo: Bound::new(&ctx.settle(lo))?,
                    hi: Bound::new(&ctx.settle(hi))?,
                }
            }
            GenSpec::Choice { values, weights } => {
                if values.is_empty() {
                    return Err(ValueError::NoChoice);
                }
                let mut cumulative = Vec::new();
                if !weights.is_empty() {
                    if weights.len() != values.len() {
                        return Err(ValueError::Weights {
                            weights: weights.len(),
                            values: values.len(),
                        });
                    }
                    let mut sum = 0u64;
                    for w in weights {
                        sum += u64::from(*w);
                        cumulative.push(sum);
                    }
                    if sum == 0 {
                        return Err(ValueError::ZeroWeights);
                    }
                }
                Gen::Choice {
                    values: values.clone(),
                    cumulative,
                }
            }
            GenSpec::Pattern(p) => Gen::Pattern(p.clone()),
            GenSpec::AString { min, max } | GenSpec::NString { min, max } => {
                let (min, max) = (Bound::new(&ctx.settle(min))?, Bound::new(&ctx.settle(max))?);
                if let (Bound::Const(lo), Bound::Const(hi)) = (&min, &max) {
                    text_len_range(*lo, *hi)?;
                }
                Gen::Chars {
                    digits_only: matches!(spec, GenSpec::NString { .. }),
                    min,
                    max,
                }
            }
            GenSpec::Float { min, max, scale } => {
                if *scale > MAX_SCALE {
                    return Err(ValueError::Scale {
                        scale: *scale,
                        max: MAX_SCALE,
                    });
                }
                let (min, max) = (ctx.settle(min), ctx.settle(max));
                if min.as_const().is_some() && max.as_const().is_some() {
                    let empty = Frame::default();
                    grid(float_of(&min, &empty)?, float_of(&max, &empty)?, *scale)?;
                }
                Gen::Float {
                    min,
                    max,
                    scale: *scale,
                }
            }
            GenSpec::Syllables { of, words } => {
                if words.len() != 10 {
                    return Err(ValueError::Words(words.len()));
                }
                Gen::Syllables {
                    of: ctx.settle(of),
                    words: words.clone(),
                }
            }
            GenSpec::Now => Gen::Now,
            GenSpec::Const(v) => Gen::Const(v.clone()),
            GenSpec::Fk(table) => match (ctx.table_rows)(table) {
                // Row numbers are i64 values: a (theoretical) larger table draws from the first
                // i64::MAX rows.
                Some(rows) => Gen::Fk(rows.clamp(1, i64::MAX as u64)),
                None => {
                    return Err(ValueError::UnknownTable(table.clone()));
                }
            },
            GenSpec::Thread => Gen::Thread,
            // The compiler allows `scrambled` on `zipfian` only.
            GenSpec::Tuned { lo, hi, params, .. } if params.scrambled => Gen::Scrambled {
                exp: params.exponent.unwrap_or(shapes::YCSB_ZIPFIAN_EXP).max(0.0),
                lo: Bound::new(&ctx.settle(lo))?,
                hi: Bound::new(&ctx.settle(hi))?,
            },
            GenSpec::Tuned {
                dist,
                lo,
                hi,
                params,
            } => Gen::Dist {
                dist: shapes::tuned(*dist, params, ctx.rand)?,
                lo: Bound::new(&ctx.settle(lo))?,
                hi: Bound::new(&ctx.settle(hi))?,
            },
            GenSpec::Exponential { mean, cap, scale } => {
                if *scale > MAX_SCALE {
                    return Err(ValueError::Scale {
                        scale: *scale,
                        max: MAX_SCALE,
                    });
                }
                let mean = ctx.settle(mean);
                if mean.as_const().is_some() {
                    shapes::check_mean(mean.text(), float_of(&mean, &Frame::default())?)?;
                }
                Gen::Exponential {
                    mean,
                    cap: *cap,
                    scale: *scale,
                }
            }
        };
        self.gens.push(g);
        Ok(self.gens.len() - 1)
    }

    /// Makes the global sequences this client's share of a multi-client step: every
    /// `count`-th value from the `index`-th.
    pub fn shard(&mut self, shard: Option<crate::engine::Shard>) {
        if let Some(s) = shard {
            self.stride = s.count as i64;
            self.phase = s.index as i64;
        }
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
    ) -> Result<Val, ValueError> {
        Ok(match &self.gens[id] {
            Gen::Expr(e) => e.eval(frame)?,
            Gen::Const(v) => v.clone(),
            Gen::Dist { dist, lo, hi } => {
                let (a, b) = ordered(lo.get(frame)?, hi.get(frame)?);
                Val::Int(a.wrapping_add(dist.draw(rng, 0, span(a, b)) as i64))
            }
            Gen::Sequence { per_thread, index } => {
                // A counter that passed i64::MAX wrapped below its start: an error rather than
                // values that repeat or go negative.
                let (v, start) = if *per_thread {
                    let v = local.sequences[*index];
                    local.sequences[*index] = v.wrapping_add(1);
                    (Some(v), self.per_thread[*index])
                } else {
                    let s = &self.shared[*index];
                    let k = s.taken.fetch_add(1, Ordering::Relaxed);
                    let v = k
                        .checked_mul(self.stride.max(1))
                        .and_then(|o| o.checked_add(self.phase))
                        .and_then(|o| s.start.checked_add(o))
                        .filter(|_| k >= 0);
                    (v, s.start)
                };
                let v = v.filter(|&v| v >= start);
                let Some(v) = v else {
                    return Err(ValueError::Exhausted { start });
                };
                Val::Int(v)
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
                let (lo, hi) = text_len_range(min.get(frame)?, max.get(frame)?)?;
                let len = rng.uniform(lo, hi) as usize;
                let set: &[u8] = if *digits_only { &ALNUM[..10] } else { ALNUM };
                let mut s = String::with_capacity(len);
                for _ in 0..len {
                    s.push(char::from(
                        set[rng.uniform(0, set.len() as u64 - 1) as usize],
                    ));
                }
                Val::Str(s)
            }
            Gen::Float { min, max, scale } => {
                let (k0, k1, m) = grid(float_of(min, frame)?, float_of(max, frame)?, *scale)?;
                // Uniform over the numbers with `scale` decimals in the range, each k/m the
                // double nearest k·10^−scale.
                let k = (k0 + (rng.unit() * (k1 - k0 + 1.0)).floor()).min(k1);
                Val::Float(k / m)
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
            Gen::Fk(rows) => Val::Int(rng.uniform(1, *rows) as i64),
            Gen::Thread => Val::Int(local.thread as i64),
            Gen::Scrambled { exp, lo, hi } => {
                let (a, b) = ordered(lo.get(frame)?, hi.get(frame)?);
                // 2⁶⁴ values do not fit a u64 count: hashed onto [a, a + 2⁶⁴ − 2] then.
                let n = span(a, b).saturating_add(1);
                Val::Int(shapes::scrambled_zipfian(rng, a, n, *exp))
            }
            Gen::Exponential { mean, cap, scale } => {
                let m = shapes::check_mean(mean.text(), float_of(mean, frame)?)?;
                let x = shapes::exponential(rng, m, *cap);
                if *scale == 0 {
                    Val::Int(x.round() as i64)
                } else {
                    let k = 10f64.powi(*scale as i32);
                    Val::Float((x * k).round() / k)
                }
            }
        })
    }
}

fn ordered(a: i64, b: i64) -> (i64, i64) {
    if a <= b { (a, b) } else { (b, a) }
}

/// b − a for a ≤ b, exact over the whole i64 range (up to 2⁶⁴ − 1).
#[inline]
fn span(a: i64, b: i64) -> u64 {
    b.wrapping_sub(a) as u64
}

/// The length range of `astring`/`nstring`: ordered, negative lengths read as 0, at most
/// [`MAX_TEXT`].
fn text_len_range(min: i64, max: i64) -> Result<(u64, u64), ValueError> {
    let (lo, hi) = ordered(min.max(0), max.max(0));
    if hi > MAX_TEXT {
        return Err(ValueError::TooLong {
            len: hi,
            max: MAX_TEXT,
        });
    }
    Ok((lo as u64, hi as u64))
}

/// The numbers with `scale` decimals in [lo, hi] (either order) as k/m for k in [k0, k1]
/// (m = 10^scale); an error when there is none or when k·10^−scale cannot be told apart from
/// its neighbours in a double (|k| beyond 2⁵³).
fn grid(lo: f64, hi: f64, scale: u32) -> Result<(f64, f64, f64), ValueError> {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
    let m = 10f64.powi(scale as i32);
    let (mut k0, mut k1) = ((lo * m).ceil(), (hi * m).floor());
    if k0.abs() > EXACT || k1.abs() > EXACT {
        return Err(ValueError::FloatPrecision { lo, hi, scale });
    }
    // lo·m is rounded: step inwards when k/m fell (by an ulp) outside the range.
    if k0 / m < lo {
        k0 += 1.0;
    }
    if k1 / m > hi {
        k1 -= 1.0;
    }
    if k0 > k1 {
        return Err(ValueError::FloatEmpty { lo, hi, scale });
    }
    Ok((k0, k1, m))
}

/// TPC-C's NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y − x + 1)) + x, for
/// `0 <= a` and `x <= y`. Computed in i128 with a Euclidean remainder, so that any bounds
/// (negative, or spanning all of i64) give a value in [x, y]; for TPC-C's non-negative
/// ranges this is the textbook formula, draw for draw.
pub fn nurand(rng: &mut Rng, a: i64, c: i64, x: i64, y: i64) -> i64 {
    let r1 = rng.uniform(0, a.max(0) as u64) as i64;
    let r2 = x.wrapping_add(rng.uniform(0, span(x, y)) as i64);
    let modulus = i128::from(span(x, y)) + 1;
    let v = (i128::from(r1 | r2) + i128::from(c)).rem_euclid(modulus);
    (i128::from(x) + v) as i64
}

/// TPC-C 2.1.6.1: the C of NURand(255, …) (C_LAST) at run time must differ from the one used
/// by the load by a delta in [65, 119] that is neither 96 nor 112.
pub const C_LAST_A: i64 = 255;

/// The allowed |C_run − C_load| for [`C_LAST_A`] (2.1.6.1).
pub fn c_last_delta_ok(delta: i64) -> bool {
    (65..=119).contains(&delta) && delta != 96 && delta != 112
}

/// The seed of every load-time C. Fixed, not the run's `rand_seed`: a dataset is loaded once
/// and then run with any seed (or with `rand_seed = 0`, the clock), and each run must know the C
/// the load used to keep 2.1.6.1's distance from it (BenchBase fixes the same four constants
/// in its source for the same reason).
const LOAD_C_SEED: u64 = 0x4e55_5261_6e64_4c64;

/// NURand's run constant C in [0, A] for `phase` (TPC-C 2.1.6): at load, a fixed pseudo-random
/// value per A; at run time, a value from the run's seed (so a seeded run repeats; with seed 0,
/// from the clock), except for A = 255, where C_run = C_load ± a delta allowed by 2.1.6.1,
/// chosen from the run's seed.
pub fn nurand_c(a: i64, phase: Phase, seed: u64) -> i64 {
    let a = a.max(0);
    // One stream per A, far from the worker threads' ids.
    let stream = usize::MAX.wrapping_sub(1).wrapping_sub(a as usize);
    let load = Rng::for_thread(LOAD_C_SEED, stream).uniform(0, a as u64) as i64;
    if phase == Phase::Load {
        return load;
    }
    let mut rng = Rng::for_thread(seed, stream);
    if a == C_LAST_A {
        c_last_run(load, &mut rng)
    } else {
        rng.uniform(0, a as u64) as i64
    }
}

/// A run C for C_LAST at an allowed distance (2.1.6.1) from `load` (in [0, 255]): a random
/// allowed delta, added or subtracted (whichever fits, at random when both do).
fn c_last_run(load: i64, rng: &mut Rng) -> i64 {
    let deltas: Vec<i64> = (65..=119).filter(|&d| c_last_delta_ok(d)).collect();
    let delta = deltas[rng.uniform(0, deltas.len() as u64 - 1) as usize];
    // C_load ≥ 119 can go down, C_load < 119 can go up (≤ 118 + 119 < 255): one always fits.
    let (up, down) = (load + delta <= C_LAST_A, load - delta >= 0);
    if up && (!down || rng.uniform(0, 1) == 1) {
        load + delta
    } else {
        load - delta
    }
}

pub mod shapes;

#[cfg(test)]
mod tests;
