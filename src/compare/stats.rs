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
}
