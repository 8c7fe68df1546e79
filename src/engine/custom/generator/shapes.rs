//! Distributions with parameters of their own (#31): a generator's `exponent`, `h`, `iter`,
//! `pct`, `res` over the run's `rand_*` options, YCSB's scrambled zipfian, and the negative
//! exponential of TPC-C's think times.

use crate::engine::custom::error::ValueError;
use crate::engine::custom::model::{Dist, DistParams};
use crate::engine::random::{Distribution, RandOptions, Rng};

/// YCSB's zipfian constant (`ZipfianGenerator.ZIPFIAN_CONSTANT`): the exponent of a scrambled
/// zipfian without `exponent`.
pub const YCSB_ZIPFIAN_EXP: f64 = 0.99;

/// The item space YCSB's ScrambledZipfianGenerator draws its zipfian over before hashing
/// (`ITEM_COUNT`, 10¹⁰): the popular items are spread over the whole range instead of
/// crowding its start.
pub const YCSB_ITEM_COUNT: u64 = 10_000_000_000;

/// TPC-C 5.2.5.4: a think time is at most 10 times its mean.
pub const TPCC_EXP_CAP: f64 = 10.0;

/// The distribution `dist` with `params` in place of the run's options (`rand`).
pub fn tuned(
    dist: Dist,
    params: &DistParams,
    rand: &RandOptions,
) -> Result<Distribution, ValueError> {
    let mut o = rand.clone();
    o.rand_type = match dist {
        Dist::Uniform => "uniform",
        Dist::Gaussian => "gaussian",
        Dist::Special => "special",
        Dist::Pareto => "pareto",
        Dist::Zipfian => "zipfian",
        Dist::Default => rand.rand_type.as_str(),
    }
    .to_string();
    if let Some(e) = params.exponent {
        o.zipfian_exp = e;
    }
    if let Some(h) = params.h {
        o.pareto_h = h;
    }
    if let Some(i) = params.iter {
        o.spec_iter = u64::from(i);
    }
    if let Some(p) = params.pct {
        o.spec_pct = u64::from(p);
    }
    if let Some(r) = params.res {
        o.spec_res = u64::from(r);
    }
    Distribution::new(&o).map_err(|m| {
        // The message names the run-wide option; the value came from the generator.
        ValueError::Distribution(
            m.replace("option `rand_pareto_h`", "`h`")
                .replace("option `rand_spec_iter`", "`iter`"),
        )
    })
}

/// YCSB's 64-bit FNV-1 hash of a value's 8 bytes, low byte first, as `Utils.fnvhash64`
/// (whose `Math.abs` we take as the absolute value of the signed result).
pub fn fnv_hash64(mut v: u64) -> u64 {
    const OFFSET_BASIS: u64 = 0xCBF2_9CE4_8422_2325;
    const PRIME: u64 = 1_099_511_628_211;
    let mut h = OFFSET_BASIS;
    for _ in 0..8 {
        h ^= v & 0xff;
        h = h.wrapping_mul(PRIME);
        v >>= 8;
    }
    (h as i64).unsigned_abs()
}

/// YCSB's ScrambledZipfianGenerator over the `n` values from `lo` (n ≥ 1): a zipfian rank
/// of exponent `exp` over [`YCSB_ITEM_COUNT`] items (rank 1 = item 0), FNV-hashed onto
/// [0, n).
pub fn scrambled_zipfian(rng: &mut Rng, lo: i64, n: u64, exp: f64) -> i64 {
    let item = rng.zipfian(0, YCSB_ITEM_COUNT - 1, exp);
    lo.wrapping_add((fnv_hash64(item) % n.max(1)) as i64)
}

/// A negative exponential draw of mean `mean` (TPC-C 5.2.5.4: −ln(r)·μ, r uniform in
/// (0, 1]), at most `cap`·`mean`.
pub fn exponential(rng: &mut Rng, mean: f64, cap: f64) -> f64 {
    let r = 1.0 - rng.unit();
    (-r.ln() * mean).min(cap * mean).max(0.0)
}

/// The mean of an exponential: a finite number ≥ 0.
pub fn check_mean(expr: &str, mean: f64) -> Result<f64, ValueError> {
    if mean.is_finite() && mean >= 0.0 {
        Ok(mean)
    } else {
        Err(ValueError::Distribution(format!(
            "the mean of `exponential` (`{expr}`) is {mean}: use a number ≥ 0"
        )))
    }
}
