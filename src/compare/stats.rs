//! The statistics behind a verdict: per-side summaries and Welch's t-test.
//!
//! Why Welch's t-test: benchmark repetitions are few (3–10), and a rank test cannot reach
//! p < 0.05 with 3 samples a side at all (Mann-Whitney's smallest two-sided p for 3 vs 3 is
//! 0.1), while Welch's test does not assume equal variances (a configuration change often
//! changes the noise too). The verdict is reported with its p-value and method name.
//!
//! Why the log scale (#14): throughput and latency are positive and their noise is
//! multiplicative, and a t-interval of the mean of two samples (`118.1 [-184.2, 420.4]`) leaves
//! the metric's range. So when every sample of a side is positive, its interval is the 95 %
//! interval of the geometric mean (mean of ln ± t·se, back-transformed: it stays positive), and
//! when both sides are, the test is Welch's on the ln values: the difference of log means gives
//! the ratio of geometric means with its interval, shown as a % change ([`log_welch`]), and its
//! p-value is the verdict's, so a verdict is significant exactly when that interval excludes
//! 0 %. Sides with a zero or negative sample (an `errors` count of 0) keep the t-interval of
//! the mean and Welch's test on the raw values ([`welch_p`]).
//!
//! When a difference is not significant, [`reps_needed`] says how many repetitions a side would
//! detect a 5 % or 10 % change at the noise measured: the standard two-sample power calculation
//! (two-sided α = 0.05, power 0.8, equal repetitions a side, the sd of ln values pooled from
//! both sides), with the exact power from the noncentral t distribution.

use statrs::distribution::{ChiSquared, ContinuousCDF, Normal, StudentsT};

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
    /// Mean and sample sd of the ln values when every sample is positive (the log scale of the
    /// interval and the test); `None` otherwise.
    pub log: Option<(f64, f64)>,
    /// 95 % interval: of the geometric mean when [`Summary::log`] is set, else the t-interval
    /// of the mean ([`Summary::ci_method`] names which); `None` with fewer than 2 samples.
    pub ci: Option<(f64, f64)>,
}

impl Summary {
    /// The method of [`Summary::ci`], as the JSON `ci_method` field states it.
    pub fn ci_method(&self) -> &'static str {
        if self.log.is_some() {
            CI_GEOMETRIC
        } else {
            CI_MEAN
        }
    }
}

/// [`Summary::ci_method`] of a side with positive samples.
pub const CI_GEOMETRIC: &str = "geometric-mean";
/// [`Summary::ci_method`] of a side with a sample ≤ 0.
pub const CI_MEAN: &str = "t-mean";

/// The two-sided 95 % t quantile with `df` degrees of freedom (NaN for an invalid `df`).
fn t_quantile(df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df)
        .map(|d| d.inverse_cdf(1.0 - ALPHA / 2.0))
        .unwrap_or(f64::NAN)
}

/// Mean and sample standard deviation (0 for one value).
fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let sd = if xs.len() > 1 {
        (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    (mean, sd)
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
    let (mean, sd) = mean_sd(samples);
    let log = samples
        .iter()
        .all(|x| *x > 0.0)
        .then(|| mean_sd(&samples.iter().map(|x| x.ln()).collect::<Vec<_>>()));
    let ci = (n > 1).then(|| {
        let t = t_quantile((n - 1) as f64);
        let (centre, spread) = log.unwrap_or((mean, sd));
        let half = t * spread / (n as f64).sqrt();
        match log {
            Some(_) => ((centre - half).exp(), (centre + half).exp()),
            None => (centre - half, centre + half),
        }
    });
    Some(Summary {
        n,
        median,
        mean,
        sd,
        log,
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
    welch((a.mean, a.sd, a.n), (b.mean, b.sd, b.n)).map(|w| w.p)
}

/// Welch's two-sided test of the means of two sides given as (mean, sd, n), n ≥ 2 each: the
/// p-value, the difference b − a, its standard error and the Welch–Satterthwaite degrees of
/// freedom (`None` when there is no spread). Without any spread the sides differ for certain
/// when their means differ (p = 0) and not at all when equal (p = 1).
fn welch(a: (f64, f64, usize), b: (f64, f64, usize)) -> Option<Welch> {
    let va = a.1.powi(2) / a.2 as f64;
    let vb = b.1.powi(2) / b.2 as f64;
    let se = (va + vb).sqrt();
    let diff = b.0 - a.0;
    if se == 0.0 {
        let p = if diff == 0.0 { 1.0 } else { 0.0 };
        return Some(Welch {
            p,
            diff,
            se,
            df: None,
        });
    }
    let df = (va + vb).powi(2) / (va.powi(2) / (a.2 - 1) as f64 + vb.powi(2) / (b.2 - 1) as f64);
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    let p = (2.0 * (1.0 - dist.cdf((diff / se).abs()))).clamp(0.0, 1.0);
    Some(Welch {
        p,
        diff,
        se,
        df: Some(df),
    })
}

/// What [`welch`] returns.
struct Welch {
    p: f64,
    diff: f64,
    se: f64,
    df: Option<f64>,
}

/// Welch's test of the ln values of two positive sides (`b` against `a`): the p-value and the
/// 95 % interval of the ratio of geometric means b/a, as a % change. `None` unless both sides
/// have 2 samples or more, all positive.
pub fn log_welch(a: &Summary, b: &Summary) -> Option<LogWelch> {
    let ((ma, sa), (mb, sb)) = (a.log?, b.log?);
    if a.n < 2 || b.n < 2 {
        return None;
    }
    let w = welch((ma, sa, a.n), (mb, sb, b.n))?;
    let half = w.df.map_or(0.0, |df| t_quantile(df) * w.se);
    let pct = |x: f64| (x.exp() - 1.0) * 100.0;
    Some(LogWelch {
        p: w.p,
        ratio_ci_pct: (pct(w.diff - half), pct(w.diff + half)),
    })
}

/// The result of [`log_welch`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogWelch {
    /// Two-sided p-value of Welch's test on the ln values.
    pub p: f64,
    /// 95 % interval of (geometric mean b / geometric mean a − 1) · 100.
    pub ratio_ci_pct: (f64, f64),
}

/// Power of the repetitions-needed calculation ([`reps_needed`]).
pub const POWER: f64 = 0.8;

/// The most repetitions [`reps_needed`] reports; beyond it the answer is "more than this".
pub const MAX_REPS: usize = 100_000;

/// Repetitions a side that detect a change of `change_pct` % (of the geometric mean) with
/// probability [`POWER`] in a two-sided two-sample t-test at [`ALPHA`], when the ln values
/// of each side have standard deviation `sd_log`. The smallest n ≥ 2 whose exact power (noncentral
/// t, [`power`]) reaches [`POWER`]; `None` for no noise to measure (`sd_log` 0 or not finite)
/// or more than [`MAX_REPS`].
///
/// `paired`: the repetitions are pairs run back to back and `sd_log` is the sd of the ln
/// ratios within pairs; the test is then the paired t-test (n − 1 degrees of freedom,
/// noncentrality effect / (sd/√n)), and the answer is the number of pairs.
pub fn reps_needed(sd_log: f64, change_pct: f64, paired: bool) -> Option<usize> {
    let effect = (1.0 + change_pct / 100.0).ln().abs();
    if !(sd_log.is_finite() && sd_log > 0.0 && effect > 0.0) {
        return None;
    }
    // Start just below the normal approximation 2·((z_α/2 + z_β)·σ/δ)², which the exact
    // answer never undercuts by more than a couple of repetitions.
    let z = Normal::standard();
    let zs = z.inverse_cdf(1.0 - ALPHA / 2.0) + z.inverse_cdf(POWER);
    let sides = if paired { 1.0 } else { 2.0 };
    let approx = sides * (zs * sd_log / effect).powi(2);
    if approx > MAX_REPS as f64 {
        return None;
    }
    let mut n = (approx as usize).saturating_sub(2).max(2);
    while power(n, sd_log, effect, paired) < POWER {
        n += 1;
        if n > MAX_REPS {
            return None;
        }
    }
    Some(n)
}

/// The power of the two-sided two-sample t-test at [`ALPHA`] with `n` samples a side, noise sd
/// `sd` and a true difference `effect` (same scale): P(|T′| > t_crit) for T′ noncentral t with
/// 2n − 2 degrees of freedom and noncentrality effect / (sd·√(2/n)). Computed as
/// E_V[Φ(−c·√(V/df) + λ) + Φ(−c·√(V/df) − λ)] over V ~ χ²(df), the expectation by the midpoint
/// rule on 400 quantiles of V (accurate to about 1e-4, checked against statsmodels'
/// `TTestIndPower.power`).
/// Paired (`paired`): n − 1 degrees of freedom and noncentrality effect / (sd·√(1/n)), as
/// statsmodels' `TTestPower`.
fn power(n: usize, sd: f64, effect: f64, paired: bool) -> f64 {
    const STEPS: usize = 400;
    let (df, spread) = if paired {
        ((n - 1) as f64, (1.0 / n as f64).sqrt())
    } else {
        ((2 * n - 2) as f64, (2.0 / n as f64).sqrt())
    };
    let lambda = effect / (sd * spread);
    let crit = t_quantile(df);
    let (Ok(chi), z) = (ChiSquared::new(df), Normal::standard()) else {
        return f64::NAN;
    };
    (0..STEPS)
        .map(|i| {
            let v = chi.inverse_cdf((i as f64 + 0.5) / STEPS as f64);
            let c = crit * (v / df).sqrt();
            z.cdf(lambda - c) + z.cdf(-c - lambda)
        })
        .sum::<f64>()
        / STEPS as f64
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
    paired(pairs).map(|p| p.p)
}

/// The paired test of [`paired_p`] with what goes with it: on log ratios (all values
/// positive) the 95 % interval of the geometric mean ratio − 1 in % and the sd of the ln
/// ratios (the noise of [`reps_needed`] with `paired`); on differences neither.
pub fn paired(pairs: &[(f64, f64)]) -> Option<Paired> {
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
    let df = (s.n - 1) as f64;
    let p = if se == 0.0 {
        if s.mean == 0.0 { 1.0 } else { 0.0 }
    } else {
        let dist = StudentsT::new(0.0, 1.0, df).ok()?;
        (2.0 * (1.0 - dist.cdf((s.mean / se).abs()))).clamp(0.0, 1.0)
    };
    let half = t_quantile(df) * se;
    let pct = |x: f64| (x.exp() - 1.0) * 100.0;
    Some(Paired {
        p,
        ratio_ci_pct: logs.then(|| (pct(s.mean - half), pct(s.mean + half))),
        sd_ln: logs.then_some(s.sd),
    })
}

/// [`paired`]'s result.
#[derive(Clone, Copy, Debug)]
pub struct Paired {
    /// Two-sided p-value of the paired t-test.
    pub p: f64,
    /// 95 % interval of (geometric mean of other/base − 1) · 100, on log ratios only.
    pub ratio_ci_pct: Option<(f64, f64)>,
    /// The sd of the ln ratios within pairs, on log ratios only.
    pub sd_ln: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_and_confidence_intervals() {
        let s = summarize(&[10.0, 12.0, 11.0, 13.0]).unwrap();
        assert_eq!((s.n, s.median, s.mean), (4, 11.5, 11.5));
        assert!((s.sd - 1.290_994).abs() < 1e-5);
        // Positive samples: the geometric-mean interval. Reference (python3, scipy 1.17):
        // l = np.log(x); t = stats.t.ppf(0.975, 3); exp(l.mean() ± t·l.std(ddof=1)/2).
        assert_eq!(s.ci_method(), CI_GEOMETRIC);
        let (lo, hi) = s.ci.unwrap();
        assert!(
            (lo - 9.562_825_5).abs() < 1e-6 && (hi - 13.698_480_9).abs() < 1e-6,
            "{lo} {hi}"
        );
        // Two noisy samples (30, 206.2): the t-interval of the mean was [-437.8, 674.0]; the
        // geometric one stays positive (same scipy recipe with t(0.975, 1)).
        let (lo, hi) = summarize(&[30.0, 206.2]).unwrap().ci.unwrap();
        assert!(
            (lo / 3.776_545_5e-4 - 1.0).abs() < 1e-6 && (hi / 1.638_004_87e7 - 1.0).abs() < 1e-6,
            "{lo} {hi}"
        );
        // A zero sample: the t-interval of the mean. t(0.975, 3) = 3.182446:
        // 1.5 ± 3.182446 · 1.290994 / 2.
        let z = summarize(&[0.0, 2.0, 1.0, 3.0]).unwrap();
        assert_eq!((z.ci_method(), z.log), (CI_MEAN, None));
        let (lo, hi) = z.ci.unwrap();
        assert!(
            (lo + 0.554_261).abs() < 1e-4 && (hi - 3.554_261).abs() < 1e-4,
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
    fn the_paired_test_gives_the_ratio_interval_and_pairs_needed_of_a_reference_computation() {
        // scipy 1.17.1: r = ttest_rel(np.log(b), np.log(a)); r.pvalue = 0.0013365611,
        // (exp(r.confidence_interval(0.95)) - 1) * 100 = [3.5179753, 6.2226415] %,
        // np.log(b / a).std(ddof=1) = 0.0081044608.
        let a = [718.0, 843.0, 951.0, 1010.0];
        let b = [760.0, 880.0, 1001.0, 1050.0];
        let pairs: Vec<(f64, f64)> = a.into_iter().zip(b).collect();
        let r = paired(&pairs).unwrap();
        assert!((r.p - 0.001_336_561).abs() < 1e-8, "{r:?}");
        let (lo, hi) = r.ratio_ci_pct.unwrap();
        assert!(
            (lo - 3.517_975).abs() < 1e-5 && (hi - 6.222_641).abs() < 1e-5,
            "{r:?}"
        );
        assert!((r.sd_ln.unwrap() - 0.008_104_461).abs() < 1e-8, "{r:?}");
        // Differences (a zero count) have no ratio interval.
        let counts = paired(&[(0.0, 2.0), (1.0, 3.0), (0.0, 1.0)]).unwrap();
        assert_eq!((counts.ratio_ci_pct, counts.sd_ln), (None, None));
        // Pairs needed: the smallest n with statsmodels' TTestPower().power(effect_size =
        // ln(1 + change) / sd, nobs = n, alpha = 0.05, two-sided) >= 0.8 (0.1, 5 %: 0.8007 at 35).
        for (sd, five, ten) in [(0.03, 6, 4), (0.05, 11, 5), (0.1, 35, 11)] {
            assert_eq!(reps_needed(sd, 5.0, true), Some(five), "sd {sd}, 5 %");
            assert_eq!(reps_needed(sd, 10.0, true), Some(ten), "sd {sd}, 10 %");
        }
    }

    #[test]
    fn log_welch_matches_a_reference_computation() {
        // scipy.stats.ttest_ind(np.log(b), np.log(a), equal_var=False): t = 5.2578,
        // df = 7.752, p = 0.000848610; .confidence_interval(0.95) back-transformed with
        // (exp(x) - 1) * 100: [5.879699, 15.869599] %.
        let a = summarize(&[19.1, 20.3, 18.7, 20.0, 19.6]).unwrap();
        let b = summarize(&[21.2, 22.0, 20.9, 21.7, 22.4]).unwrap();
        let r = log_welch(&a, &b).unwrap();
        assert!((r.p - 0.000_848_610).abs() < 1e-8, "{r:?}");
        let (lo, hi) = r.ratio_ci_pct;
        assert!(
            (lo - 5.879_699).abs() < 1e-5 && (hi - 15.869_599).abs() < 1e-5,
            "{r:?}"
        );
        // The reverse is the reciprocal ratio: same p, the interval of a/b − 1.
        let back = log_welch(&b, &a).unwrap();
        assert!((back.p - r.p).abs() < 1e-12);
        assert!((back.ratio_ci_pct.1 - (100.0 / (1.0 + lo / 100.0) - 100.0)).abs() < 1e-9);
        // No variance: certain either way; a non-positive sample or a single one: no log test.
        let flat = summarize(&[3.0, 3.0]).unwrap();
        assert_eq!(log_welch(&flat, &flat).unwrap().p, 1.0);
        assert_eq!(
            log_welch(&flat, &summarize(&[4.0, 4.0]).unwrap())
                .unwrap()
                .p,
            0.0
        );
        assert_eq!(log_welch(&flat, &summarize(&[0.0, 4.0]).unwrap()), None);
        assert_eq!(log_welch(&flat, &summarize(&[4.0]).unwrap()), None);
    }

    #[test]
    fn repetitions_needed_match_the_exact_power_calculation() {
        // Reference: statsmodels 0.15 TTestIndPower().solve_power(effect_size=ln(1+c)/sd,
        // alpha=0.05, power=0.8), rounded up (it uses the exact noncentral t power):
        // sd 0.02: 3.878 (5 %), 2.171 (10 % → the minimum 2 is not enough: power(2) < 0.8,
        // power(3) = 0.988); sd 0.03: 7.038 → 8, 2.904 → 3; sd 0.05: 17.50 → 18, 5.470 → 6;
        // sd 0.1: 66.92 → 67, 18.29 → 19; sd 0.2: 264.7 → 265, 70.10 → 71.
        let cases = [
            (0.02, 4, 3),
            (0.03, 8, 3),
            (0.05, 18, 6),
            (0.1, 67, 19),
            (0.2, 265, 71),
        ];
        for (sd, five, ten) in cases {
            assert_eq!(reps_needed(sd, 5.0, false), Some(five), "sd {sd}, 5 %");
            assert_eq!(reps_needed(sd, 10.0, false), Some(ten), "sd {sd}, 10 %");
        }
        // statsmodels TTestIndPower().power(effect_size=ln(1.05)/0.1, nobs1=67, alpha=0.05) = 0.800490.
        assert!((power(67, 0.1, 1.05f64.ln(), false) - 0.800_490).abs() < 2e-4);
        assert_eq!(reps_needed(0.0, 5.0, false), None, "no noise measured");
        assert_eq!(reps_needed(50.0, 5.0, false), None, "beyond MAX_REPS");
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
