//! TPC-H's numerical quantities (TPC-H 2.18, clause 5.4): Power@Size, Throughput@Size and
//! QphH@Size, from the timing intervals of a run.
//!
//! * Every timing interval is taken in seconds rounded to 0.01 s and at least 0.01 s (the
//!   spec's resolution; a zero would zero the product).
//! * Power@Size = 3600 · SF / (Π QI(i,0) · Π RI(j,0))^(1/24) over the power test's 22 queries
//!   and 2 refresh functions; when the longest interval is more than 1000 times the shortest,
//!   the shorter ones are raised to longest / 1000 first (clause 5.4.1.4). Without refresh
//!   functions (validation parameters) the root is over the 22 queries.
//! * Throughput@Size = S · 22 · 3600 / Ts · SF, Ts the throughput test's measurement interval
//!   in seconds (clause 5.4.2).
//! * QphH@Size = √(Power@Size · Throughput@Size) (clause 5.4.3).

/// The spec's rounding of one timing interval: to 0.01 s, at least 0.01 s.
pub fn interval(seconds: f64) -> f64 {
    ((seconds * 100.0).round() / 100.0).max(0.01)
}

/// The geometric mean of the power test's intervals, after rounding and the 1000× rule.
pub fn power_geomean(seconds: &[f64]) -> Option<f64> {
    if seconds.is_empty() {
        return None;
    }
    let rounded: Vec<f64> = seconds.iter().map(|&s| interval(s)).collect();
    let longest = rounded.iter().copied().fold(0.0, f64::max);
    let floor = longest / 1000.0;
    let mean_ln = rounded.iter().map(|&s| s.max(floor).ln()).sum::<f64>() / rounded.len() as f64;
    Some(mean_ln.exp())
}

/// Power@Size from the power test's intervals (seconds).
pub fn power(sf: f64, seconds: &[f64]) -> Option<f64> {
    power_geomean(seconds).map(|g| 3600.0 * sf / g)
}

/// Throughput@Size of `streams` query streams whose test took `ts` seconds.
pub fn throughput(sf: f64, streams: usize, ts: f64) -> f64 {
    streams as f64 * 22.0 * 3600.0 / interval(ts) * sf
}

/// QphH@Size.
pub fn qphh(power: f64, throughput: f64) -> f64 {
    (power * throughput).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_is_3600_sf_over_the_geometric_mean() {
        // 24 intervals of 2 s: the geometric mean is 2 s, Power@1 = 1800.
        let p = power(1.0, &[2.0; 24]).expect("intervals");
        assert!((p - 1800.0).abs() < 1e-9, "{p}");
        // Half at 1 s, half at 4 s: geometric mean 2 s.
        let mut mixed = vec![1.0; 12];
        mixed.extend([4.0; 12]);
        assert!((power(10.0, &mixed).unwrap() - 18_000.0).abs() < 1e-6);
        assert_eq!(power(1.0, &[]), None);
    }

    #[test]
    fn intervals_round_to_hundredths_and_the_1000x_rule_lifts_short_ones() {
        assert_eq!(interval(0.0), 0.01);
        assert_eq!(interval(1.234), 1.23);
        // 100 s and 0.01 s: the short one is raised to 100 / 1000 = 0.1 s.
        let g = power_geomean(&[100.0, 0.01]).unwrap();
        assert!((g - (100.0f64 * 0.1).sqrt()).abs() < 1e-9, "{g}");
    }

    #[test]
    fn throughput_and_qphh() {
        // 2 streams of 22 queries in 3600 s at SF 1: 44 queries per hour.
        assert!((throughput(1.0, 2, 3600.0) - 44.0).abs() < 1e-9);
        assert!((throughput(0.01, 2, 36.0) - 44.0).abs() < 1e-9);
        assert!((qphh(100.0, 400.0) - 200.0).abs() < 1e-9);
    }
}
