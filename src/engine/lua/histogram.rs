//! `sysbench.histogram` underneath: `sb_histogram_new/delete/update/print`, the C functions
//! `prelude/histogram.lua` wraps (`sysbench.histogram.new(size, min, max)`, `h:update(v)`,
//! `h:print()`).
//!
//! A script's histogram is sysbench's logarithmic one (reference §5): `size` buckets between
//! `min` and `max`, bucket `floor((ln v − ln min)·(size−1)/(ln max − ln min) + 0.5)` clamped to
//! the range, printed in sysbench's layout. It is cdata of one Lua state, so it is only ever
//! touched by that state's thread: plain counts, no atomics. (The run's latency histogram is
//! the driver's, not this one.)

use std::fmt::Write as _;

use super::ctx::Exports;

/// The C side of `sb_histogram_t` (opaque to Lua: `typedef struct histogram sb_histogram_t`).
pub struct Histogram {
    counts: Vec<u64>,
    ln_min: f64,
    /// `(size − 1) / (ln max − ln min)`: buckets per unit of `ln v`.
    mult: f64,
}

impl Histogram {
    /// `None` for a histogram with no bucket.
    pub fn new(size: usize, min: f64, max: f64) -> Option<Histogram> {
        if size == 0 {
            return None;
        }
        let (ln_min, ln_max) = (min.ln(), max.ln());
        let span = ln_max - ln_min;
        let mult = if size > 1 && span.is_finite() && span > 0.0 {
            (size - 1) as f64 / span
        } else {
            0.0
        };
        Some(Histogram {
            counts: vec![0; size],
            ln_min,
            mult,
        })
    }

    fn bucket(&self, v: f64) -> usize {
        let last = self.counts.len() - 1;
        let i = ((v.ln() - self.ln_min) * self.mult + 0.5).floor();
        // NaN (v < 0) and −inf (v = 0) go to the first bucket, as below-min values do.
        if i.is_nan() || i < 0.0 {
            0
        } else {
            (i as usize).min(last)
        }
    }

    pub fn update(&mut self, v: f64) {
        let i = self.bucket(v);
        self.counts[i] += 1;
    }

    /// The value a bucket stands for: the inverse of [`Histogram::bucket`].
    fn value(&self, i: usize) -> f64 {
        if self.mult == 0.0 {
            self.ln_min.exp()
        } else {
            (self.ln_min + i as f64 / self.mult).exp()
        }
    }

    /// sysbench's layout: a header, then `%12.3f |%-40.*s %lu` per non-empty bucket with
    /// `round(40·n/max)` stars; nothing at all when every bucket is empty.
    pub fn render(&self) -> String {
        let max = self.counts.iter().copied().max().unwrap_or(0);
        let mut out = String::new();
        if max == 0 {
            return out;
        }
        out.push_str("       value  ------------- distribution ------------- count\n");
        for (i, &n) in self.counts.iter().enumerate().filter(|(_, n)| **n > 0) {
            let stars = (40.0 * n as f64 / max as f64 + 0.5) as usize;
            let _ = writeln!(
                out,
                "{:12.3} |{:<40} {n}",
                self.value(i),
                "*".repeat(stars.min(40))
            );
        }
        out
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn sb_histogram_new(size: usize, min: f64, max: f64) -> *mut Histogram {
    Histogram::new(size, min, max).map_or(std::ptr::null_mut(), |h| Box::into_raw(Box::new(h)))
}

/// # Safety
/// `h` is null or came from [`sb_histogram_new`] and is not used afterwards (`ffi.gc`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sb_histogram_delete(h: *mut Histogram) {
    if !h.is_null() {
        // SAFETY: per the contract above.
        drop(unsafe { Box::from_raw(h) });
    }
}

/// # Safety
/// `h` is null or a live histogram of this thread's state.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sb_histogram_update(h: *mut Histogram, v: f64) {
    // SAFETY: per the contract above.
    if let Some(h) = unsafe { h.as_mut() } {
        h.update(v);
    }
}

/// # Safety
/// `h` is null or a live histogram of this thread's state.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sb_histogram_print(h: *mut Histogram) {
    // SAFETY: per the contract above.
    if let Some(h) = unsafe { h.as_ref() } {
        super::ctx::write_stdout(h.render().as_bytes());
    }
}

pub static EXPORTS: Exports = Exports(&[
    sb_histogram_new as *const (),
    sb_histogram_delete as *const (),
    sb_histogram_update as *const (),
    sb_histogram_print as *const (),
]);

#[cfg(test)]
mod tests {
    use super::*;

    /// The output of sysbench 1.0.20 for `h = sysbench.histogram.new(10, 1, 1000)`, updated
    /// with 7, 14, …, 700 and 0.5 and 5000 (both out of range).
    #[test]
    fn layout_matches_sysbench() {
        let mut h = Histogram::new(10, 1.0, 1000.0).expect("buckets");
        for i in 1..=100 {
            h.update(f64::from(i) * 7.0);
        }
        h.update(0.5);
        h.update(5000.0);
        let expected = "       value  ------------- distribution ------------- count
       1.000 |*                                        1
      10.000 |**                                       2
      21.544 |**                                       2
      46.416 |****                                     5
     100.000 |********                                 11
     215.443 |*******************                      25
     464.159 |**************************************** 52
    1000.000 |***                                      4
";
        assert_eq!(h.render(), expected);
    }

    #[test]
    fn empty_prints_nothing_and_odd_values_are_clamped() {
        let mut h = Histogram::new(4, 0.001, 100.0).expect("buckets");
        assert_eq!(h.render(), "");
        h.update(-1.0);
        h.update(0.0);
        h.update(f64::INFINITY);
        assert_eq!(h.counts, [2, 0, 0, 1]);
        assert!(Histogram::new(0, 1.0, 2.0).is_none());
        let mut one = Histogram::new(1, 1.0, 2.0).expect("one bucket");
        one.update(1.5);
        assert_eq!(
            one.render().lines().nth(1),
            Some("       1.000 |**************************************** 1")
        );
    }
}
