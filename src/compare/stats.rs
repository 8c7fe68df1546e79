//! The statistics behind a verdict: per-side summaries and Welch's t-test.
//!
//! Why Welch's t-test: benchmark repetitions are few (3–10), and a rank test cannot reach
//! p < 0.05 with 3 samples a side at all (Mann-Whitney's smallest two-sided p for 3 vs 3 is
//! 0.1), while Welch's test does not assume equal variances (a configuration change often
//! changes the noise too). The verdict is reported with its p-value and method name.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// Two-sided significance level of every verdict.
pub const ALPHA: f64 = 0.05;

/// A side's samples summarised.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub mean: f64,
    /// Sample standard deviation (0 for one sample).
    pub sd: f64,
    /// 95 % t-interval of the mean; `None` with fewer than 2 samples.
    pub ci: Option<(f64, f64)>,
}

pub fn summarize(samples: &[f64]) -> Option<Summary> {
    let n = samples.len();
    if n == 0 {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    let mean = samples.iter().sum::<f64>() / n as f64;
    let sd = if n > 1 {
        (samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    let ci = (n > 1).then(|| {
        let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
            .map(|d| d.inverse_cdf(1.0 - ALPHA / 2.0))
            .unwrap_or(f64::NAN);
        let half = t * sd / (n as f64).sqrt();
        (mean - half, mean + half)
    });
    Some(Summary {
        n,
        median,
        mean,
        sd,
        ci,
    })
}

/// Welch's two-sided t-test of `a` and `b`: the p-value, or `None` with fewer than 2
/// samples on a side. Two sides without any variance differ for certain when their means
/// differ (p = 0) and not at all when they are equal (p = 1).
pub fn welch_p(a: &Summary, b: &Summary) -> Option<f64> {
    if a.n < 2 || b.n < 2 {
        return None;
    }
    let va = a.sd.powi(2) / a.n as f64;
    let vb = b.sd.powi(2) / b.n as f64;
    let se = (va + vb).sqrt();
    if se == 0.0 {
        return Some(if a.mean == b.mean { 1.0 } else { 0.0 });
    }
    let t = (b.mean - a.mean) / se;
    let df = (va + vb).powi(2) / (va.powi(2) / (a.n - 1) as f64 + vb.powi(2) / (b.n - 1) as f64);
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    Some((2.0 * (1.0 - dist.cdf(t.abs()))).clamp(0.0, 1.0))
}

/// The geometric mean of positive ratios (others are left out); `None` when none is left.
pub fn geomean(ratios: &[f64]) -> Option<f64> {
    let logs: Vec<f64> = ratios
        .iter()
        .filter(|r| r.is_finite() && **r > 0.0)
        .map(|r| r.ln())
        .collect();
    (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
}

/// The paired two-sided t-test (Student's t on the differences within pairs, as
/// `scipy.stats.ttest_rel`) of `pairs` = (base, other): the p-value, or `None` with fewer than
/// 2 pairs.
///
/// Why paired, when the order allows it: variants run back to back (`variant_order =
/// "interleaved"` or `"randomized"`) share whatever drifts during a run (caches warming,
/// tables growing, other load), and the test on the differences within pairs removes that
/// drift instead of counting it as noise, as Welch's test must. Why on log ratios: drift
/// scales throughput and latency multiplicatively (718 → 843 → 951 tps over three
/// repetitions), so the ratio within a pair stays steady where the difference grows with the
/// level. Pairs with a value that is not positive (an `errors` count of 0) have no log: the
/// differences are tested instead. Why not Wilcoxon's signed-rank test: with 3 to 5 pairs its
/// smallest two-sided p is 0.25 to 0.0625, so it could never reach α = 0.05.
pub fn paired_p(pairs: &[(f64, f64)]) -> Option<f64> {
    if pairs.len() < 2 {
        return None;
    }
    let logs = pairs.iter().all(|(a, b)| *a > 0.0 && *b > 0.0);
    let d: Vec<f64> = pairs
        .iter()
        .map(|(a, b)| if logs { (b / a).ln() } else { b - a })
        .collect();
    let s = summarize(&d)?;
    let se = s.sd / (s.n as f64).sqrt();
    if se == 0.0 {
        return Some(if s.mean == 0.0 { 1.0 } else { 0.0 });
    }
    let dist = StudentsT::new(0.0, 1.0, (s.n - 1) as f64).ok()?;
    Some((2.0 * (1.0 - dist.cdf((s.mean / se).abs()))).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_and_confidence_intervals() {
        let s = summarize(&[10.0, 12.0, 11.0, 13.0]).unwrap();
        assert_eq!((s.n, s.median, s.mean), (4, 11.5, 11.5));
        assert!((s.sd - 1.290_994).abs() < 1e-5);
        // t(0.975, 3) = 3.182446: 11.5 ± 3.182446 · 1.290994 / 2.
        let (lo, hi) = s.ci.unwrap();
        assert!(
            (lo - 9.445_739).abs() < 1e-4 && (hi - 13.554_261).abs() < 1e-4,
            "{lo} {hi}"
        );
        assert_eq!(summarize(&[5.0]).unwrap().ci, None);
        assert_eq!(summarize(&[]), None);
    }

    #[test]
    fn welch_matches_a_reference_computation() {
        // scipy.stats.ttest_ind(a, b, equal_var=False): t = -5.2965, df = 7.954, p = 0.000745
        let a = summarize(&[19.1, 20.3, 18.7, 20.0, 19.6]).unwrap();
        let b = summarize(&[21.2, 22.0, 20.9, 21.7, 22.4]).unwrap();
        let p = welch_p(&a, &b).unwrap();
        assert!((p - 0.000_745_5).abs() < 0.000_001, "{p}");
        // Same distribution, shuffled: far from significant.
        let c = summarize(&[19.6, 18.7, 20.3, 19.1, 20.0]).unwrap();
        assert!(welch_p(&a, &c).unwrap() > 0.99);
        // Ties and no variance.
        let flat = summarize(&[3.0, 3.0, 3.0]).unwrap();
        assert_eq!(welch_p(&flat, &flat), Some(1.0));
        let other = summarize(&[4.0, 4.0, 4.0]).unwrap();
        assert_eq!(welch_p(&flat, &other), Some(0.0));
        assert_eq!(welch_p(&flat, &summarize(&[4.0]).unwrap()), None);
    }

    #[test]
    fn geometric_mean_skips_non_positive_ratios() {
        assert!((geomean(&[2.0, 0.5]).unwrap() - 1.0).abs() < 1e-12);
        assert!((geomean(&[1.1, 1.1, 0.0]).unwrap() - 1.1).abs() < 1e-12);
        assert_eq!(geomean(&[0.0]), None);
    }

    #[test]
    fn the_paired_test_removes_drift_that_welch_counts_as_noise() {
        // Both variants drift upwards together; the other side is ~5 % faster in every pair.
        let a = [718.0, 843.0, 951.0, 1010.0];
        let b = [760.0, 880.0, 1001.0, 1050.0];
        // scipy.stats.ttest_rel(log(b), log(a)): t = 11.7148, df = 3, p = 0.0013366.
        let pairs: Vec<(f64, f64)> = a.iter().copied().zip(b).collect();
        let p = paired_p(&pairs).unwrap();
        assert!((p - 0.001_336_6).abs() < 1e-6, "{p}");
        // scipy.stats.ttest_ind(a, b, equal_var=False): p = 0.660.
        let welch = welch_p(&summarize(&a).unwrap(), &summarize(&b).unwrap()).unwrap();
        assert!((welch - 0.660_09).abs() < 1e-4, "{welch}");
        // A zero: differences (scipy.stats.ttest_rel([2, 3, 3], [0, 0, 1]): p = 0.019804).
        let p = paired_p(&[(0.0, 2.0), (0.0, 3.0), (1.0, 3.0)]).unwrap();
        assert!((p - 0.019_804).abs() < 1e-5, "{p}");
        assert_eq!(paired_p(&[(1.0, 2.0)]), None);
        assert_eq!(
            paired_p(&[(1.0, 2.0), (2.0, 4.0)]),
            Some(0.0),
            "the same ratio twice"
        );
        assert_eq!(paired_p(&[(1.0, 1.0), (2.0, 2.0)]), Some(1.0));
    }
}
