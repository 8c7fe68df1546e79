//! Steady state of a run's throughput: where its start-up transient ends ([`mser5`]) and
//! whether what follows drifts ([`trend`]), both on the per-second series the driver samples.
//!
//! Both work on *batch means* of [`BATCH`] seconds rather than on the seconds themselves:
//! per-second throughput is autocorrelated (a slow second is followed by a slow second), and
//! means of consecutive batches are close to independent (the batch-means method, Law & Kelton,
//! *Simulation Modeling and Analysis*, ch. 9), which both statistics assume.
//!
//! * **Truncation (`warmup_time = "auto"`): MSER-5** (White, "An effective truncation heuristic
//!   for bias reduction in simulation output", *Simulation* 69(6), 1997; White, Cobb & Spratt,
//!   *Simulation* 75, 2000). With batch means `Z_1..Z_k`, the truncation point `d*` minimises
//!   `MSER(d) = Σ_{j>d} (Z_j − Z̄_d)² / (k − d)²` (the squared standard error of the mean of
//!   what is left) over `d ≤ k/2`: cutting more of the start lowers the variance of the rest
//!   only while what is cut differs from it. Hoad, Robinson & Davies ("Automating warm-up
//!   length estimation", *J. Oper. Res. Soc.* 61, 2010) apply it sequentially: when the minimum
//!   is not clearly inside the first half, the series is too short to tell and the run goes
//!   on. [`Mser::settled`] is that test (the minimum lies before the last candidate, `⌊k/2⌋`:
//!   a minimum on the edge means the statistic was still falling, the series still settling).
//! * **Stationarity verdict: OLS trend of the batch means with Student's t-test at 95 %.** The
//!   slope `b` of the least-squares line through `(j, Z_j)` and its standard error
//!   `s / √Σ(j − j̄)²` give `t = b / se` with `m − 2` degrees of freedom (the textbook test of a
//!   regression slope, e.g. Montgomery & Runger, *Applied Statistics and Probability for
//!   Engineers*, §11.4). A run is **not steady** when the slope is significant *and* the fitted
//!   line moves by at least [`TREND_TOLERANCE`] of the mean over the window: a very quiet
//!   workload makes a 0.5 % drift significant without it mattering to anyone. With fewer than
//!   [`MIN_BATCHES`] batches (20 s) the verdict is unknown. Why not Mann-Kendall: it says
//!   whether, not how much; the OLS slope is also the `trend_pct_per_min` that is reported.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// Seconds per batch (the "5" of MSER-5).
pub const BATCH: usize = 5;

/// Batches a verdict or a truncation needs at least (20 s of a per-second series).
pub const MIN_BATCHES: usize = 4;

/// The drift over the measured window, as a fraction of its mean, from which a significant
/// trend makes a run "not steady".
pub const TREND_TOLERANCE: f64 = 0.05;

/// Means of consecutive batches of `size` values; a last, partial batch is left out.
pub fn batch_means(series: &[f64], size: usize) -> Vec<f64> {
    if size == 0 {
        return Vec::new();
    }
    series
        .chunks_exact(size)
        .map(|c| c.iter().sum::<f64>() / size as f64)
        .collect()
}

/// MSER-5's result on a series.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mser {
    /// Batches of [`BATCH`] values the series had.
    pub batches: usize,
    /// The truncation point `d*`, in batches.
    pub truncate_batches: usize,
    /// Whether the minimum lies strictly inside the first half (before `⌊k/2⌋`): the transient
    /// is over within the series. `false`: the series is too short to tell.
    pub settled: bool,
}

impl Mser {
    /// The truncation point in values of the series (seconds of a per-second series).
    pub fn truncate(&self) -> usize {
        self.truncate_batches * BATCH
    }
}

/// MSER-5 on `series` (one value per second): `None` with fewer than [`MIN_BATCHES`] batches.
pub fn mser5(series: &[f64]) -> Option<Mser> {
    let z = batch_means(series, BATCH);
    let k = z.len();
    if k < MIN_BATCHES {
        return None;
    }
    let last = k / 2;
    let mut best = (0, f64::INFINITY);
    for d in 0..=last {
        let rest = &z[d..];
        let n = rest.len() as f64;
        let mean = rest.iter().sum::<f64>() / n;
        let ss: f64 = rest.iter().map(|v| (v - mean).powi(2)).sum();
        let mser = ss / (n * n);
        // Ties keep the smaller truncation: nothing is cut without a reason.
        if mser < best.1 {
            best = (d, mser);
        }
    }
    Some(Mser {
        batches: k,
        truncate_batches: best.0,
        settled: best.0 < last,
    })
}

/// Whether a run's throughput held steady over its measured window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Verdict {
    /// No significant trend, or one smaller than [`TREND_TOLERANCE`] over the window.
    Yes,
    /// A significant trend of at least [`TREND_TOLERANCE`] over the window.
    No,
    /// Too short a series (fewer than [`MIN_BATCHES`] batches), no events, or no series.
    #[default]
    Unknown,
}

impl Verdict {
    /// The `steady` cell of results.csv.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Yes => "yes",
            Verdict::No => "no",
            Verdict::Unknown => "unknown",
        }
    }

    /// The verdict a `steady` cell names (`None` for an empty or unknown cell).
    pub fn parse(cell: &str) -> Option<Verdict> {
        match cell {
            "yes" => Some(Verdict::Yes),
            "no" => Some(Verdict::No),
            "unknown" => Some(Verdict::Unknown),
            _ => None,
        }
    }
}

/// The trend test's result on a per-second series.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Trend {
    /// The fitted change per minute, as % of the window's mean.
    pub pct_per_min: f64,
    /// The fitted change over the whole window, as % of its mean.
    pub pct_over_window: f64,
    /// Two-sided p-value of the slope's t-test.
    pub p: f64,
    pub verdict: Verdict,
}

/// The stationarity verdict of `series` (one value per second): `None` when it is unknown
/// (fewer than [`MIN_BATCHES`] batches, or a mean of 0).
pub fn trend(series: &[f64]) -> Option<Trend> {
    let z = batch_means(series, BATCH);
    let m = z.len();
    if m < MIN_BATCHES {
        return None;
    }
    let n = m as f64;
    let mean = z.iter().sum::<f64>() / n;
    if mean.abs() <= f64::EPSILON || !mean.is_finite() {
        return None;
    }
    let xbar = (n - 1.0) / 2.0;
    let sxx: f64 = (0..m).map(|j| (j as f64 - xbar).powi(2)).sum();
    let sxy: f64 = z
        .iter()
        .enumerate()
        .map(|(j, v)| (j as f64 - xbar) * (v - mean))
        .sum();
    let slope = sxy / sxx; // per batch
    let sse: f64 = z
        .iter()
        .enumerate()
        .map(|(j, v)| (v - mean - slope * (j as f64 - xbar)).powi(2))
        .sum();
    let df = n - 2.0;
    let se = (sse / df / sxx).sqrt();
    let p = if se <= f64::EPSILON * mean.abs() {
        if slope.abs() <= f64::EPSILON * mean.abs() {
            1.0
        } else {
            0.0
        }
    } else {
        let dist = StudentsT::new(0.0, 1.0, df).ok()?;
        (2.0 * (1.0 - dist.cdf((slope / se).abs()))).clamp(0.0, 1.0)
    };
    let per_second = slope / BATCH as f64;
    let window = (m * BATCH) as f64;
    let over_window = per_second * window / mean;
    let verdict = if p < 0.05 && over_window.abs() >= TREND_TOLERANCE {
        Verdict::No
    } else {
        Verdict::Yes
    };
    Some(Trend {
        pct_per_min: per_second * 60.0 / mean * 100.0,
        pct_over_window: over_window * 100.0,
        p,
        verdict,
    })
}

/// How a run that is not steady is described to the user (the runner's warning, `compare`,
/// `report`): "throughput fell 30.0 % over its 60 s window (-30.0 %/min, not steady)", from
/// results.csv's `trend_pct_per_min` and `seconds`.
pub fn unsteady_text(pct_per_min: f64, seconds: f64) -> String {
    let over = pct_per_min * seconds / 60.0;
    let dir = if over < 0.0 { "fell" } else { "rose" };
    format!(
        "throughput {dir} {:.1} % over its {seconds:.0} s window ({pct_per_min:+.1} %/min, not steady)",
        over.abs()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic noise source (a linear congruential generator mapped to ±`amp`), so
    /// the tests need no seed handling and never flake.
    fn noise(n: usize, amp: f64, seed: u64) -> Vec<f64> {
        let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * amp
            })
            .collect()
    }

    #[test]
    fn batch_means_drop_the_partial_batch() {
        let s = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0];
        assert_eq!(batch_means(&s, 5), vec![3.0]);
        assert_eq!(batch_means(&s, 2), vec![1.5, 3.5, 5.5]);
        assert!(batch_means(&s, 0).is_empty());
    }

    #[test]
    fn a_known_transient_is_trimmed() {
        // 30 s ramping up from 20 % to the level, then 90 s at 1000 ± 2 %. The whole ramp is
        // always cut; noise may make MSER cut more now and then, never past the first half.
        let mut cuts = Vec::new();
        for seed in 1..20 {
            let mut s: Vec<f64> = (0..30).map(|i| 200.0 + 800.0 * i as f64 / 30.0).collect();
            s.extend(noise(90, 20.0, seed).iter().map(|e| 1000.0 + e));
            let m = mser5(&s).expect("24 batches");
            assert!(m.settled, "seed {seed}: {m:?}");
            assert!(
                (25..=60).contains(&m.truncate()),
                "seed {seed}: truncated {} s, the transient is 30 s",
                m.truncate()
            );
            cuts.push(m.truncate());
            // What is left is steady.
            let t = trend(&s[m.truncate()..]).expect("enough");
            assert_eq!(t.verdict, Verdict::Yes, "seed {seed}: {t:?}");
        }
        cuts.sort_unstable();
        assert!((25..=35).contains(&cuts[cuts.len() / 2]), "{cuts:?}");
    }

    #[test]
    fn an_exponential_warmup_is_trimmed_where_it_flattens() {
        // A cache warming: 1000·(1 − e^(−t/6)) ± 1 %, 120 s.
        let e = noise(120, 10.0, 7);
        let s: Vec<f64> = (0..120)
            .map(|t| 1000.0 * (1.0 - (-(t as f64) / 6.0).exp()) + e[t])
            .collect();
        let m = mser5(&s).expect("enough");
        assert!(m.settled);
        assert!((10..=35).contains(&m.truncate()), "{m:?}");
    }

    #[test]
    fn a_steady_series_is_not_trimmed_and_not_flagged() {
        // MSER cuts a little of a stationary series now and then (a run of low batches at the
        // start is indistinguishable from a short transient); typically nothing.
        let mut cuts = Vec::new();
        for seed in 1..20 {
            let s: Vec<f64> = noise(60, 50.0, seed).iter().map(|e| 1000.0 + e).collect();
            let m = mser5(&s).expect("12 batches");
            assert!(m.truncate() <= 30, "seed {seed}: {m:?}");
            cuts.push(m.truncate());
            let t = trend(&s).expect("enough");
            assert_eq!(t.verdict, Verdict::Yes, "seed {seed}: {t:?}");
            assert!(t.pct_over_window.abs() < 5.0, "seed {seed}: {t:?}");
        }
        cuts.sort_unstable();
        assert!(cuts[cuts.len() / 2] <= 5, "{cuts:?}");
    }

    #[test]
    fn a_still_rising_series_is_not_settled() {
        let s: Vec<f64> = (0..40).map(|i| 100.0 + 10.0 * i as f64).collect();
        let m = mser5(&s).expect("8 batches");
        assert!(!m.settled, "{m:?}");
        assert_eq!(m.truncate_batches, 4);
    }

    #[test]
    fn a_known_trend_is_flagged_with_its_size() {
        // Throughput falling 30 % over a minute, with 2 % noise.
        let e = noise(60, 20.0, 3);
        let s: Vec<f64> = (0..60).map(|t| 1000.0 - 5.0 * t as f64 + e[t]).collect();
        let t = trend(&s).expect("12 batches");
        assert_eq!(t.verdict, Verdict::No, "{t:?}");
        // −5/s over a mean of ≈ 852: −35 %/min.
        assert!((-38.0..=-32.0).contains(&t.pct_per_min), "{t:?}");
        assert!(t.p < 0.001);
    }

    #[test]
    fn a_significant_but_tiny_drift_is_steady() {
        // 1 % over the window with almost no noise: significant, below the tolerance.
        let e = noise(60, 0.5, 5);
        let s: Vec<f64> = (0..60).map(|t| 1000.0 + t as f64 / 6.0 + e[t]).collect();
        let t = trend(&s).expect("enough");
        assert!(t.p < 0.05, "{t:?}");
        assert_eq!(t.verdict, Verdict::Yes, "{t:?}");
    }

    #[test]
    fn short_or_empty_series_are_unknown() {
        assert!(trend(&[1000.0; 19]).is_none());
        assert!(mser5(&[1000.0; 19]).is_none());
        assert!(trend(&[0.0; 60]).is_none());
        let flat = trend(&[1000.0; 60]).expect("enough");
        assert_eq!((flat.verdict, flat.p), (Verdict::Yes, 1.0));
        assert_eq!(Verdict::parse("no"), Some(Verdict::No));
        assert_eq!(Verdict::default().as_str(), "unknown");
        assert_eq!(
            unsteady_text(-30.0, 60.0),
            "throughput fell 30.0 % over its 60 s window (-30.0 %/min, not steady)"
        );
    }
}
