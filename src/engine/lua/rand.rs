//! `sysbench.rand` underneath: the `sb_rand_*` C functions scripts reach through `ffi.C`, over
//! the calling thread's generator ([`super::ctx::ThreadCtx::rng`]) and the run's `rand_*`
//! options ([`super::ctx::LuaShared`]).
//!
//! The draws are sysbench's formulas on [`crate::engine::random`]'s xoroshiro128+ and its
//! `[0, 1)` conversion, like the native engines, but in sysbench's C types: arguments and
//! results are `uint32_t`, so `b − a + 1` wraps (`uniform(0, 4294967295)` is always 0,
//! `uniform(5, 3)` draws from 2³² − 1 values above 5) exactly as scripts see under sysbench
//! (reference §3). That is why these are not [`crate::engine::random::Distribution::draw`],
//! which orders its bounds and works in 64 bits.
//!
//! Without a state on the calling thread (a thread a script made itself) the functions return
//! 0 and write nothing.

use std::ffi::{CStr, c_char};

use super::ctx::{self, Exports};
use crate::engine::random::{Distribution, Rng, pareto_power};

/// `b − a + 1` in sysbench's `uint32_t` arithmetic, as a double.
#[inline]
fn width(a: u32, b: u32) -> f64 {
    f64::from(b.wrapping_sub(a).wrapping_add(1))
}

/// `a + (uint32_t) v`: the C conversion truncates; a value beyond `u32` (impossible for the
/// formulas below, as `v < width`) saturates instead of being undefined.
#[inline]
fn offset(a: u32, v: f64) -> u32 {
    a.wrapping_add(v as u32)
}

fn uniform(rng: &mut Rng, a: u32, b: u32) -> u32 {
    offset(a, rng.unit() * width(a, b))
}

fn gaussian(rng: &mut Rng, a: u32, b: u32, iter: u32) -> u32 {
    let iter = iter.max(1);
    let w = width(a, b);
    let sum: f64 = (0..iter).map(|_| rng.unit() * w).sum();
    offset(a, sum / f64::from(iter))
}

fn special(rng: &mut Rng, a: u32, b: u32, iter: u32, pct: u32, res: u32) -> u32 {
    let t = f64::from(b.wrapping_sub(a));
    let r = rng.unit();
    let v = if r * t * 100.0 / f64::from(100 - res.min(100)) < t {
        let iter = iter.max(1);
        let sum: f64 = (0..iter).map(|_| rng.unit()).sum();
        t * sum / f64::from(iter)
    } else {
        let pct = f64::from(pct);
        r * (t * pct / 100.0 + 1.0) + t / 2.0 - t * pct / 200.0
    };
    offset(a, v.max(0.0))
}

fn pareto(rng: &mut Rng, a: u32, b: u32, power: f64) -> u32 {
    offset(a, width(a, b) * rng.unit().powf(power))
}

/// A `u64` option as the `u32` the formulas take (larger values were refused when the run's
/// distribution was built; clamp rather than wrap if one slips through).
fn small(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// One draw of `f` with the thread's generator and the run's shared options; 0 without a state.
#[inline]
fn draw(f: impl FnOnce(&mut ctx::ThreadCtx) -> u32) -> u32 {
    ctx::with(f).unwrap_or(0)
}

#[unsafe(no_mangle)]
pub extern "C" fn sb_rand_uniform(a: u32, b: u32) -> u32 {
    draw(|c| uniform(&mut c.rng, a, b))
}

#[unsafe(no_mangle)]
pub extern "C" fn sb_rand_gaussian(a: u32, b: u32) -> u32 {
    draw(|c| {
        let iter = small(c.shared.rand.spec_iter);
        gaussian(&mut c.rng, a, b, iter)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn sb_rand_special(a: u32, b: u32) -> u32 {
    draw(|c| {
        let o = &c.shared.rand;
        let (iter, pct, res) = (small(o.spec_iter), small(o.spec_pct), small(o.spec_res));
        special(&mut c.rng, a, b, iter, pct, res)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn sb_rand_pareto(a: u32, b: u32) -> u32 {
    draw(|c| {
        let power = pareto_power(c.shared.rand.pareto_h);
        pareto(&mut c.rng, a, b, power)
    })
}

/// `--rand-type`'s distribution ([`super::ctx::LuaShared::default_dist`]).
#[unsafe(no_mangle)]
pub extern "C" fn sb_rand_default(a: u32, b: u32) -> u32 {
    draw(|c| match c.shared.default_dist {
        Distribution::Uniform => uniform(&mut c.rng, a, b),
        Distribution::Gaussian { iter } => gaussian(&mut c.rng, a, b, iter),
        Distribution::Special { iter, pct, res } => special(&mut c.rng, a, b, iter, pct, res),
        Distribution::Pareto { power } => pareto(&mut c.rng, a, b, power),
        // sysbench master's; 1.0.20 has no zipfian, so there are no wrap semantics to keep.
        d @ Distribution::Zipfian { .. } => d.draw(&mut c.rng, u64::from(a), u64::from(b)) as u32,
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn sb_rand_uniform_uint64() -> u64 {
    ctx::with(|c| c.rng.next_u64()).unwrap_or(0)
}

#[unsafe(no_mangle)]
pub extern "C" fn sb_rand_uniform_double() -> f64 {
    ctx::with(|c| c.rng.unit()).unwrap_or(0.0)
}

/// `rand.unique()`: the run's shared sequence, never repeating.
#[unsafe(no_mangle)]
pub extern "C" fn sb_rand_unique() -> u32 {
    ctx::with(|c| c.shared.unique.next()).unwrap_or(0)
}

/// `rand.string(template)`: writes `strlen(template)` bytes to `buf`: `#` → a digit, `@` → a
/// lowercase letter, other bytes copied. No terminating NUL (the Lua side knows the length).
///
/// # Safety
/// `template` is a NUL-terminated string and `buf` has room for its length, as the FFI
/// caller (`prelude/rand.lua`) guarantees.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sb_rand_str(template: *const c_char, buf: *mut c_char) {
    if template.is_null() || buf.is_null() {
        return;
    }
    // SAFETY: per the contract above.
    let tpl = unsafe { CStr::from_ptr(template) }.to_bytes();
    // SAFETY: `buf` holds at least `tpl.len()` bytes.
    let out = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), tpl.len()) };
    ctx::with(|c| fill_template(&mut c.rng, tpl, out));
}

fn fill_template(rng: &mut Rng, tpl: &[u8], out: &mut [u8]) {
    for (o, &t) in out.iter_mut().zip(tpl) {
        *o = match t {
            b'#' => b'0' + uniform(rng, 0, 9) as u8,
            b'@' => b'a' + uniform(rng, 0, 25) as u8,
            other => other,
        };
    }
}

pub static EXPORTS: Exports = Exports(&[
    sb_rand_uniform as *const (),
    sb_rand_gaussian as *const (),
    sb_rand_special as *const (),
    sb_rand_pareto as *const (),
    sb_rand_default as *const (),
    sb_rand_uniform_uint64 as *const (),
    sb_rand_uniform_double as *const (),
    sb_rand_unique as *const (),
    sb_rand_str as *const (),
]);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uint32_wrap_semantics() {
        let mut r = Rng::for_thread(1, 0);
        // b − a + 1 wraps to 0: always a (sysbench prints 0 for uniform(0, 4294967295)).
        for _ in 0..100 {
            assert_eq!(uniform(&mut r, 0, u32::MAX), 0);
        }
        // a > b: the width wraps to 2³² − 1, so values run past b (and wrap through 0).
        let xs: Vec<u32> = (0..1000).map(|_| uniform(&mut r, 5, 3)).collect();
        assert!(xs.iter().any(|&x| x > 1_000_000), "{xs:?}");
        // −1 arrives as 4294967295: uniform(-1, 3) draws from 5 values that wrap through 0.
        for _ in 0..1000 {
            let v = uniform(&mut r, u32::MAX, 3);
            assert!(v == u32::MAX || v <= 3, "{v}");
        }
    }

    #[test]
    fn draws_stay_in_range() {
        let mut r = Rng::for_thread(2, 0);
        for _ in 0..10_000 {
            assert!((10..=20).contains(&uniform(&mut r, 10, 20)));
            assert!((10..=20).contains(&gaussian(&mut r, 10, 20, 12)));
            assert!((10..=20).contains(&special(&mut r, 10, 20, 12, 1, 75)));
            assert!((10..=20).contains(&pareto(&mut r, 10, 20, pareto_power(0.2))));
        }
        assert_eq!(uniform(&mut r, 7, 7), 7);
    }

    #[test]
    fn templates_keep_length_and_class() {
        let mut r = Rng::for_thread(3, 0);
        let tpl = b"##-@@x";
        let mut out = [0u8; 6];
        fill_template(&mut r, tpl, &mut out);
        assert!(out[0].is_ascii_digit() && out[1].is_ascii_digit() && out[2] == b'-');
        assert!(out[3].is_ascii_lowercase() && out[4].is_ascii_lowercase() && out[5] == b'x');
    }
}
