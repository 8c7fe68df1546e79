//! sysbench's random numbers: a per-thread xoroshiro128+ generator and the draws built on it.
//!
//! The generator and the float conversion follow sysbench 1.0.20 exactly (spec §1 "Random number
//! generation"), so distributions have the same shape. Seeding is better than sysbench's: a
//! non-zero `rand_seed` makes every thread's stream reproducible (thread `i` is seeded from
//! `(seed, i)` through splitmix64), whatever order threads start in.
//!
//! How a workload gets its generators: its builder takes `rand_seed` from the step's typed
//! general options (`RunConfig::seed`) and each worker calls [`Rng::for_thread`]`(seed, id)` in
//! `new_worker`; the key distribution is built from the `rand_*` options ([`RandOptions`], also
//! parsed once into `RunConfig`) by [`Distribution::new`] once per workload and is drawn with
//! [`Distribution::draw`]. Nothing here allocates or locks per draw (zipfian recomputes its
//! constants per draw — a few `ln`/`exp` — instead of caching per range, to stay `Copy`).
//!
//! The distributions are sysbench's formulas (spec §1): uniform, gaussian (Irwin–Hall with
//! `rand_spec_iter` terms), special (`rand_spec_iter/pct/res`), pareto (`rand_pareto_h`), and
//! sysbench master's zipfian (rejection-inversion of Hörmann & Derflinger, as in Apache Commons
//! RNG's `RejectionInversionZipfSampler`). [`UniqueSequence`] is preshing's quadratic-residue
//! permutation (sysbench's `rand.unique()`), [`Rng::string`] is `rand.string()`.
//!
//! The RNG lives with the engines, its only users, and imports nothing of them: errors are plain
//! messages that the caller wraps, so `engine` depends on `random` and never the reverse.

use std::sync::atomic::{AtomicU32, Ordering};

/// sysbench's per-thread generator (xoroshiro128+, out = s0 + s1).
#[derive(Clone, Debug)]
pub struct Rng {
    s0: u64,
    s1: u64,
}

/// splitmix64: turns one 64-bit seed into well-mixed generator state (Vigna's recommendation for
/// seeding the xoroshiro family).
fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Rng {
    /// The generator of thread `thread` for a run seeded with `seed` (0 = from the clock, like
    /// sysbench's default "Initializing random number generator from current time").
    pub fn for_thread(seed: u64, thread: usize) -> Rng {
        let base = if seed == 0 { time_seed() } else { seed };
        let mut x = base ^ (thread as u64).wrapping_mul(0xd1b5_4a32_d192_ed03);
        let s0 = splitmix64(&mut x);
        let s1 = splitmix64(&mut x);
        // The all-zero state is the one state xoroshiro must avoid.
        if s0 == 0 && s1 == 0 {
            Rng { s0: 1, s1: 0 }
        } else {
            Rng { s0, s1 }
        }
    }

    /// The next raw 64-bit output.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s0 = self.s0;
        let mut s1 = self.s1;
        let out = s0.wrapping_add(s1);
        s1 ^= s0;
        self.s0 = s0.rotate_left(55) ^ s1 ^ (s1 << 14);
        self.s1 = s1.rotate_left(36);
        out
    }

    /// A double in [0, 1): the top 52 bits as the mantissa of 1.x, minus 1 (sysbench's way).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        let bits = (self.next_u64() >> 12) | 0x3ff0_0000_0000_0000;
        f64::from_bits(bits) - 1.0
    }

    /// sysbench's `sb_rand_uniform(a, b)`: a + trunc(U·(b−a+1)), in [a, b].
    #[inline]
    pub fn uniform(&mut self, a: u64, b: u64) -> u64 {
        a + (self.unit() * width(a, b)) as u64
    }
}

impl Rng {
    /// sysbench's gaussian(a, b): the mean of `iter` uniform draws over [a, b] (Irwin–Hall).
    #[inline]
    pub fn gaussian(&mut self, a: u64, b: u64, iter: u32) -> u64 {
        let iter = iter.max(1);
        let width = width(a, b);
        let sum: f64 = (0..iter).map(|_| self.unit() * width).sum();
        a + ((sum / f64::from(iter)) as u64).min(b - a)
    }

    /// sysbench's special(a, b): with probability (100 − res) % a gaussian-like draw over the
    /// whole range, otherwise a value from the upper part of a `pct` %-wide window at the centre.
    #[inline]
    pub fn special(&mut self, a: u64, b: u64, iter: u32, pct: u32, res: u32) -> u64 {
        let t = (b - a) as f64;
        let r = self.unit();
        let v = if r * t * 100.0 / f64::from(100 - res.min(100)) < t {
            let iter = iter.max(1);
            let sum: f64 = (0..iter).map(|_| self.unit()).sum();
            t * sum / f64::from(iter)
        } else {
            let d = t * f64::from(pct) / 100.0;
            r * (d + 1.0) + t / 2.0 - t * f64::from(pct) / 200.0
        };
        a + (v.max(0.0) as u64).min(b - a)
    }

    /// sysbench's pareto(a, b) with exponent `p = ln(h) / ln(1 − h)` (see [`pareto_power`]).
    #[inline]
    pub fn pareto(&mut self, a: u64, b: u64, p: f64) -> u64 {
        let v = width(a, b) * self.unit().powf(p);
        a + (v as u64).min(b - a)
    }

    /// Zipfian over [a, b] (rank 1 = a), P(k) ∝ k^−exp: rejection-inversion sampling
    /// (Hörmann & Derflinger 1996), the algorithm of Apache Commons RNG and sysbench master.
    pub fn zipfian(&mut self, a: u64, b: u64, exp: f64) -> u64 {
        let n = width(a, b);
        let z = Zipf::new(n, exp);
        loop {
            let u = z.h_int_n + self.unit() * (z.h_int_x1 - z.h_int_n);
            let x = z.h_int_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, n);
            if k - x <= z.s || u >= z.h_int(k + 0.5) - z.h(k) {
                return a + (k as u64 - 1).min(b - a);
            }
        }
    }

    /// sysbench's rand.string(template): `#` → a digit, `@` → a lowercase letter, anything else
    /// copied. Writes into `out` (cleared first), which allocates only if it is too small.
    pub fn string(&mut self, template: &str, out: &mut String) {
        out.clear();
        for c in template.chars() {
            match c {
                '#' => out.push(char::from(b'0' + self.uniform(0, 9) as u8)),
                '@' => out.push(char::from(b'a' + self.uniform(0, 25) as u8)),
                c => out.push(c),
            }
        }
    }
}

/// The number of values in [a, b] (`a <= b`) as a double: b − a + 1, computed so that the whole
/// u64 range (2⁶⁴ values, which `b - a + 1` would overflow) works too. Equal to
/// `(b - a + 1) as f64` below 2⁵³ values, so every draw there is unchanged.
#[inline]
fn width(a: u64, b: u64) -> f64 {
    (b - a) as f64 + 1.0
}

/// The pareto exponent for sysbench's `rand_pareto_h`: ln(h) / ln(1 − h).
pub fn pareto_power(h: f64) -> f64 {
    h.ln() / (1.0 - h).ln()
}

/// Constants of rejection-inversion for n elements and exponent e.
struct Zipf {
    e: f64,
    h_int_x1: f64,
    h_int_n: f64,
    s: f64,
}

impl Zipf {
    fn new(n: f64, e: f64) -> Self {
        let mut z = Zipf {
            e,
            h_int_x1: 0.0,
            h_int_n: 0.0,
            s: 0.0,
        };
        z.h_int_x1 = z.h_int(1.5) - 1.0;
        z.h_int_n = z.h_int(n + 0.5);
        z.s = 2.0 - z.h_int_inv(z.h_int(2.5) - z.h(2.0));
        z
    }

    fn h(&self, x: f64) -> f64 {
        (-self.e * x.ln()).exp()
    }

    fn h_int(&self, x: f64) -> f64 {
        let log_x = x.ln();
        helper2((1.0 - self.e) * log_x) * log_x
    }

    fn h_int_inv(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.e)).max(-1.0);
        (helper1(t) * x).exp()
    }
}

/// ln(1 + x) / x, accurate near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// (e^x − 1) / x, accurate near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

/// The distribution chosen by `rand_type` and its parameters (sysbench's `rand.default`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Distribution {
    Uniform,
    Gaussian { iter: u32 },
    Special { iter: u32, pct: u32, res: u32 },
    Pareto { power: f64 },
    Zipfian { exp: f64 },
}

/// The `rand_*` general options as given (sysbench's names), before [`Distribution::new`]
/// checks them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RandOptions {
    /// `rand_type`; empty means sysbench's default, `special`.
    pub rand_type: String,
    pub spec_iter: u64,
    pub spec_pct: u64,
    pub spec_res: u64,
    pub pareto_h: f64,
    pub zipfian_exp: f64,
}

impl Distribution {
    /// The distribution of `rand_type` with its parameters; the error names the offending
    /// option and the fix.
    pub fn new(o: &RandOptions) -> Result<Self, String> {
        let small = |key: &str, v: u64| {
            u32::try_from(v)
                .map_err(|_| format!("option `{key}` is too large: use at most {}", u32::MAX))
        };
        Ok(match o.rand_type.as_str() {
            "uniform" => Self::Uniform,
            "gaussian" => Self::Gaussian {
                iter: small("rand_spec_iter", o.spec_iter)?.max(1),
            },
            "special" | "" => Self::Special {
                iter: small("rand_spec_iter", o.spec_iter)?.max(1),
                pct: small("rand_spec_pct", o.spec_pct)?.min(100),
                res: small("rand_spec_res", o.spec_res)?.min(100),
            },
            "pareto" => {
                let h = o.pareto_h;
                if !(h > 0.0 && h < 1.0) {
                    return Err(format!(
                        "option `rand_pareto_h` is {h}: use a value between 0 and 1 (exclusive)"
                    ));
                }
                Self::Pareto {
                    power: pareto_power(h),
                }
            }
            "zipfian" => Self::Zipfian {
                exp: o.zipfian_exp.max(0.0),
            },
            other => {
                return Err(format!(
                    "option `rand_type` is `{other}`: use uniform, gaussian, special, pareto or zipfian"
                ));
            }
        })
    }

    /// One draw in [a, b] (`a > b` is treated as `b..=a`).
    #[inline]
    pub fn draw(&self, rng: &mut Rng, a: u64, b: u64) -> u64 {
        let (a, b) = if a <= b { (a, b) } else { (b, a) };
        if a == b {
            return a;
        }
        match *self {
            Self::Uniform => rng.uniform(a, b),
            Self::Gaussian { iter } => rng.gaussian(a, b, iter),
            Self::Special { iter, pct, res } => rng.special(a, b, iter, pct, res),
            Self::Pareto { power } => rng.pareto(a, b, power),
            Self::Zipfian { exp } => rng.zipfian(a, b, exp),
        }
    }
}

/// sysbench's `rand.unique()`: a shared sequence of distinct 32-bit values in pseudo-random order
/// (preshing's quadratic-residue permutation). Any thread may call [`UniqueSequence::next`]: one
/// relaxed atomic increment, no lock.
#[derive(Debug)]
pub struct UniqueSequence {
    /// Where the walk starts.
    start: u32,
    /// Values taken so far (by this process).
    taken: AtomicU32,
    offset: u32,
    /// One multi-client shard's part of the walk: positions `start + k·stride + phase`, so
    /// that the shards of a step (same seed) never draw the same value (#17). 1 and 0 alone.
    stride: u32,
    phase: u32,
}

const UNIQUE_PRIME: u64 = 4_294_967_291;

/// x² mod p, mirrored above p/2 so that it is a permutation of [0, p); values ≥ p (the five
/// largest u32s) map to themselves.
fn permute_qpr(x: u32) -> u32 {
    let x64 = u64::from(x);
    if x64 >= UNIQUE_PRIME {
        return x;
    }
    let residue = (x64 * x64 % UNIQUE_PRIME) as u32;
    if x64 <= UNIQUE_PRIME / 2 {
        residue
    } else {
        (UNIQUE_PRIME - u64::from(residue)) as u32
    }
}

impl UniqueSequence {
    /// A sequence started from `seed_base` with offset `seed_offset` (preshing's two seeds).
    pub fn new(seed_base: u32, seed_offset: u32) -> Self {
        Self {
            start: permute_qpr(permute_qpr(seed_base).wrapping_add(0x682f_0161)),
            taken: AtomicU32::new(0),
            offset: permute_qpr(permute_qpr(seed_offset).wrapping_add(0x4679_0905)),
            stride: 1,
            phase: 0,
        }
    }

    /// A sequence seeded from `rng`.
    pub fn from_rng(rng: &mut Rng) -> Self {
        let x = rng.next_u64();
        Self::new(x as u32, (x >> 32) as u32)
    }

    /// This sequence as shard `shard` of a multi-client step sees it: every `count`-th value
    /// of the walk, from its `index`-th.
    pub fn sharded(self, shard: Option<super::Shard>) -> Self {
        match shard {
            Some(s) if s.count > 1 => Self {
                stride: s.count as u32,
                phase: s.index as u32,
                ..self
            },
            _ => self,
        }
    }

    /// The next value; 2³² calls return every u32 once (over all shards of a step).
    #[inline]
    pub fn next(&self) -> u32 {
        let k = self.taken.fetch_add(1, Ordering::Relaxed);
        let i = self
            .start
            .wrapping_add(k.wrapping_mul(self.stride).wrapping_add(self.phase));
        permute_qpr(permute_qpr(i).wrapping_add(self.offset) ^ 0x5bf0_3635)
    }
}

fn time_seed() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0x5eed);
    now ^ u64::from(std::process::id()).rotate_left(32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sharded_unique_sequences_never_collide() {
        let one = UniqueSequence::new(7, 9);
        let whole: Vec<u32> = (0..300).map(|_| one.next()).collect();
        let mut parts: Vec<u32> = Vec::new();
        for index in 0..3 {
            let shard = super::super::Shard {
                index,
                count: 3,
                total_threads: 3,
                thread_offset: index,
            };
            let s = UniqueSequence::new(7, 9).sharded(Some(shard));
            parts.extend((0..100).map(|_| s.next()));
        }
        parts.sort_unstable();
        let mut sorted = whole.clone();
        sorted.sort_unstable();
        // The three shards draw exactly the values one process draws, each once.
        assert_eq!(parts, sorted);
    }

    #[test]
    fn seeded_streams_are_reproducible_per_thread() {
        let mut a = Rng::for_thread(42, 3);
        let mut b = Rng::for_thread(42, 3);
        let mut c = Rng::for_thread(42, 4);
        let xs: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        assert_eq!(xs, (0..8).map(|_| b.next_u64()).collect::<Vec<_>>());
        assert_ne!(xs, (0..8).map(|_| c.next_u64()).collect::<Vec<_>>());
    }

    #[test]
    fn xoroshiro128plus_reference_step() {
        // One step from a known state, computed by hand from the recurrence.
        let mut r = Rng { s0: 1, s1: 2 };
        assert_eq!(r.next_u64(), 3);
        let s1 = 2u64 ^ 1;
        assert_eq!(r.s0, 1u64.rotate_left(55) ^ s1 ^ (s1 << 14));
        assert_eq!(r.s1, s1.rotate_left(36));
    }

    /// Frequencies of `n` draws over [1, 10000].
    fn histogram(d: Distribution, n: usize) -> Vec<u32> {
        let mut r = Rng::for_thread(1234, 0);
        let mut seen = vec![0u32; 10_001];
        for _ in 0..n {
            let v = d.draw(&mut r, 1, 10_000);
            assert!((1..=10_000).contains(&v), "{v}");
            seen[v as usize] += 1;
        }
        seen
    }

    #[test]
    fn special_sends_three_quarters_to_the_centre() {
        let d = Distribution::Special {
            iter: 12,
            pct: 1,
            res: 75,
        };
        let n = 200_000;
        let seen = histogram(d, n);
        let hot: u32 = seen[4975..=5051].iter().sum();
        let share = f64::from(hot) / n as f64;
        // 75 % special + the gaussian part's small mass there.
        assert!((0.75..0.78).contains(&share), "{share}");
        assert!(
            seen[4974] + seen[5052] > 0,
            "the gaussian part reaches beyond"
        );
    }

    #[test]
    fn pareto_puts_80_percent_in_the_lowest_20_percent() {
        let n = 100_000;
        let seen = histogram(
            Distribution::Pareto {
                power: pareto_power(0.2),
            },
            n,
        );
        let low: u32 = seen[1..=2000].iter().sum();
        let share = f64::from(low) / n as f64;
        assert!((0.78..0.82).contains(&share), "{share}");
    }

    #[test]
    fn zipfian_has_the_power_law_shape() {
        let n = 200_000;
        let seen = histogram(Distribution::Zipfian { exp: 0.8 }, n);
        let ratio = f64::from(seen[1]) / f64::from(seen[2]);
        assert!((ratio - 2f64.powf(0.8)).abs() < 0.1, "{ratio}");
        let ratio = f64::from(seen[1]) / f64::from(seen[4]);
        assert!((ratio - 4f64.powf(0.8)).abs() < 0.25, "{ratio}");
        assert!(seen[1] > seen[100] * 20);
    }

    #[test]
    fn gaussian_centres_with_a_small_spread() {
        let mut r = Rng::for_thread(99, 1);
        let n = 50_000;
        let xs: Vec<f64> = (0..n).map(|_| r.gaussian(1, 10_000, 12) as f64).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
        assert!((mean - 5000.5).abs() < 30.0, "{mean}");
        // Irwin–Hall: σ = width / sqrt(12 · iter) ≈ 833.
        assert!((sd - 833.0).abs() < 40.0, "{sd}");
    }

    #[test]
    fn distribution_from_options() {
        let mut o = RandOptions {
            rand_type: "pareto".into(),
            pareto_h: 0.2,
            ..RandOptions::default()
        };
        assert_eq!(
            Distribution::new(&o).expect("valid"),
            Distribution::Pareto {
                power: pareto_power(0.2)
            }
        );
        o.rand_type = "weird".into();
        let e = Distribution::new(&o).expect_err("rejected");
        assert!(e.contains("rand_type"), "{e}");
        let mut r = Rng::for_thread(3, 0);
        assert_eq!(Distribution::Uniform.draw(&mut r, 7, 7), 7);
        assert!((3..=9).contains(&Distribution::Uniform.draw(&mut r, 9, 3)));
    }

    /// Regression (#15): the whole u64 range (what a custom generator's `[i64::MIN, i64::MAX]`
    /// becomes) overflowed `b - a + 1`: a panic in debug builds, a width of 0 (`a` every time)
    /// in release.
    #[test]
    fn the_whole_u64_range_is_drawable() {
        let mut r = Rng::for_thread(11, 0);
        for d in [
            Distribution::Uniform,
            Distribution::Gaussian { iter: 12 },
            Distribution::Special {
                iter: 12,
                pct: 1,
                res: 75,
            },
            Distribution::Pareto {
                power: pareto_power(0.2),
            },
            Distribution::Zipfian { exp: 0.8 },
        ] {
            let xs: Vec<u64> = (0..64).map(|_| d.draw(&mut r, 0, u64::MAX)).collect();
            let distinct: std::collections::HashSet<_> = xs.iter().collect();
            // Zipfian's rank 1 has probability 1/H(2^64, 0.8) ≈ 1/(5·2^12.8): still rarely twice.
            assert!(distinct.len() > 32, "{d:?}: {xs:?}");
        }
        assert!(r.uniform(u64::MAX - 1, u64::MAX) >= u64::MAX - 1);
        assert_eq!(r.uniform(u64::MAX, u64::MAX), u64::MAX);
    }

    #[test]
    fn unique_never_repeats() {
        assert_eq!(permute_qpr(0), 0);
        assert_eq!(permute_qpr(4_294_967_295), 4_294_967_295);
        let q = UniqueSequence::new(1, 2);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..100_000 {
            assert!(seen.insert(q.next()));
        }
        // The mirrored residues are a permutation of [0, p) on a small prefix too.
        let vals: std::collections::HashSet<u32> = (0..1000).map(permute_qpr).collect();
        assert_eq!(vals.len(), 1000);
    }

    #[test]
    fn string_templates() {
        let mut r = Rng::for_thread(5, 0);
        let mut out = String::with_capacity(16);
        r.string("##-@@x", &mut out);
        let b = out.as_bytes();
        assert_eq!(out.len(), 6);
        assert!(b[0].is_ascii_digit() && b[1].is_ascii_digit() && b[2] == b'-');
        assert!(b[3].is_ascii_lowercase() && b[4].is_ascii_lowercase() && b[5] == b'x');
        let cap = out.capacity();
        r.string("@@@@", &mut out);
        assert_eq!((out.len(), out.capacity()), (4, cap), "reuses the buffer");
    }

    #[test]
    fn uniform_stays_in_range_and_covers_it() {
        let mut r = Rng::for_thread(7, 0);
        let mut seen = [0u32; 10];
        for _ in 0..100_000 {
            let v = r.uniform(1, 10);
            assert!((1..=10).contains(&v));
            seen[(v - 1) as usize] += 1;
        }
        assert!(
            seen.iter().all(|&n| (9_000..11_000).contains(&n)),
            "{seen:?}"
        );
        let u = r.unit();
        assert!((0.0..1.0).contains(&u));
    }
}
