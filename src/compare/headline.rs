//! The one-line verdict of a comparison (#29): `tps +43.1% [+40.2, +46.0] better, p99 -30.0%
//! [-33.0, -26.9] better, server_fsyncs_per_txn -97.0% [-97.4, -96.5] better (paired t-test
//! over 3 pairs per key)`.
//!
//! A study's grid holds a line per metric and matrix point; this is the sentence a reader takes
//! away, so it says nothing the lines do not: at one matrix point the line's delta, interval
//! and verdict as the grid prints them; over several points the geometric mean of the ratios
//! ([`Comparison::geomean`], the grid's `geomean` row) and how many points went which way.
//! "not significant" is said where it was not, and the test is named. One source for the text
//! formats of `sbsuite compare` and the top of the HTML report, so the two never disagree.
//!
//! Its metrics are what a study of a setting is about: throughput (tps; eps for workloads
//! without SQL; a custom workload's headline rate such as `tpmC`), the tail latencies p95 and
//! p99, and the cost per transaction that the run recorded. Average latency, qps and errors stay
//! in the grid. When `--metric` picked none of these, the headline speaks of the metrics picked.

use super::{COST_METRICS, Comparison, HEADLINE, Line, Metric, delta_text, num};

/// Which way a part of the headline went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Better,
    Worse,
    /// Better at some matrix points and worse at others.
    Mixed,
    /// Significant nowhere (not significant, or no test possible).
    Unclear,
}

impl Direction {
    /// `better`, `worse`, `mixed`, `unclear`: a CSS class of the report.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Better => "better",
            Direction::Worse => "worse",
            Direction::Mixed => "mixed",
            Direction::Unclear => "unclear",
        }
    }
}

/// One metric of a headline: `{metric} {text}`.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    /// The metric's name as the grid shows it (`tps`, `p99`, `server_fsyncs_per_txn`); `eps`
    /// for the throughput of a workload without SQL ([`Comparison::throughput`]).
    pub metric: String,
    /// What happened: `+43.1% [+40.2, +46.0] better`, `geomean +12.0% over 2 points: 2 better`.
    pub text: String,
    pub direction: Direction,
}

impl std::fmt::Display for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.metric, self.text)
    }
}

/// The headline of one comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Headline {
    pub parts: Vec<Part>,
    /// The test behind the verdicts ([`Comparison::test`]), and a warning when a side has
    /// fewer than 6 samples.
    pub method: String,
}

impl Headline {
    pub fn of(c: &Comparison) -> Headline {
        let measured = |m: &&Metric| c.lines.iter().any(|l| l.metric == m.name);
        let mut wanted: Vec<&Metric> = c
            .metrics
            .iter()
            .filter(|m| rank(m).is_some())
            .filter(measured)
            .collect();
        wanted.sort_by_key(|m| rank(m));
        if wanted.is_empty() {
            wanted = c.metrics.iter().filter(measured).collect();
        }
        let parts = wanted.into_iter().map(|m| part(c, m)).collect();
        let mut method = c.test.clone();
        if c.few_samples {
            method.push_str("; fewer than 6 samples on a side");
        }
        Headline { parts, method }
    }

    /// The whole line: `tps +43.1% [+40.2, +46.0] better, p99 … (Welch's t-test)`.
    pub fn text(&self) -> String {
        if self.parts.is_empty() {
            return format!("nothing measured on both sides ({})", self.method);
        }
        let parts: Vec<String> = self.parts.iter().map(Part::to_string).collect();
        format!("{} ({})", parts.join(", "), self.method)
    }
}

/// The place of a headline metric (throughput, tail latency, cost), `None` for the others.
fn rank(m: &Metric) -> Option<usize> {
    match m.name {
        "tps" => Some(0),
        _ if m.column == HEADLINE => Some(1),
        "p95" => Some(2),
        "p99" => Some(3),
        name => COST_METRICS
            .iter()
            .position(|c| c.name == name)
            .map(|i| 4 + i),
    }
}

fn part(c: &Comparison, m: &Metric) -> Part {
    let lines: Vec<&Line> = c.lines.iter().filter(|l| l.metric == m.name).collect();
    let metric = if m.name == "tps" {
        c.throughput
    } else {
        m.name
    }
    .to_string();
    let (text, direction) = match lines.as_slice() {
        [one] => at_one_point(one),
        _ => over_points(c, m.name, &lines),
    };
    Part {
        metric,
        text,
        direction,
    }
}

/// One matrix point: the grid's delta cell and its verdict in words.
fn at_one_point(l: &Line) -> (String, Direction) {
    let change = match l.delta_pct {
        Some(_) => delta_text(l),
        // From a zero median (or one side unmeasured) there is no percentage: the medians.
        None => {
            let side =
                |s: &Option<super::SideStats>| s.as_ref().map_or("—".into(), |s| num(s.median));
            format!("{} → {}", side(&l.base), side(&l.other))
        }
    };
    let (word, direction) = match l.verdict.as_str() {
        "better" => ("better", Direction::Better),
        "worse" => ("worse", Direction::Worse),
        "~" => ("not significant", Direction::Unclear),
        _ => ("untested (one sample a side)", Direction::Unclear),
    };
    (format!("{change} {word}"), direction)
}

/// Several matrix points: the geometric mean of the ratios and the count of each verdict.
fn over_points(c: &Comparison, metric: &str, lines: &[&Line]) -> (String, Direction) {
    let count = |v: &str| lines.iter().filter(|l| l.verdict == v).count();
    let (better, worse, same) = (count("better"), count("worse"), count("~"));
    let untested = lines.len() - better - worse - same;
    let counts: Vec<String> = [
        (better, "better"),
        (worse, "worse"),
        (same, "not significant"),
        (untested, "untested"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    let mean = c
        .geomean
        .iter()
        .find(|(m, _)| *m == metric)
        .map(|(_, g)| format!("geomean {g:+.1}% "))
        .unwrap_or_default();
    let direction = match (better > 0, worse > 0) {
        (true, false) => Direction::Better,
        (false, true) => Direction::Worse,
        (true, true) => Direction::Mixed,
        (false, false) => Direction::Unclear,
    };
    (
        format!("{mean}over {} points: {}", lines.len(), counts.join(", ")),
        direction,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{METRICS, SideStats};

    fn side(median: f64) -> Option<SideStats> {
        Some(SideStats {
            n: 3,
            median,
            ci_low: None,
            ci_high: None,
            ci_method: "geometric-mean",
        })
    }

    fn line(threads: &str, metric: &'static str, delta: Option<f64>, verdict: &str) -> Line {
        Line {
            key: vec![("threads".into(), threads.into())],
            metric,
            base: side(100.0),
            other: side(100.0 * (1.0 + delta.unwrap_or(0.0) / 100.0)),
            delta_pct: delta,
            delta_ci_low: delta.map(|d| d - 2.0),
            delta_ci_high: delta.map(|d| d + 2.0),
            p_value: Some(0.01),
            pairs: None,
            test: Some(crate::compare::TEST_LOG),
            verdict: verdict.into(),
            gate_failed: None,
            reps_needed: None,
        }
    }

    fn comparison(lines: Vec<Line>, geomean: Vec<(&'static str, f64)>) -> Comparison {
        Comparison {
            base: "variant=baseline".into(),
            other: "variant=relaxed".into(),
            test: "Welch's t-test".into(),
            paired: false,
            throughput: "tps",
            lines,
            geomean,
            only_base: Vec::new(),
            only_other: Vec::new(),
            notes: Vec::new(),
            unsteady: Vec::new(),
            hosts: Vec::new(),
            tools: None,
            few_samples: false,
            measured: Vec::new(),
            metrics: METRICS.iter().chain(COST_METRICS).copied().collect(),
        }
    }

    #[test]
    fn one_point_says_the_grids_delta_interval_and_verdict_in_words() {
        let c = comparison(
            vec![
                line("8", "tps", Some(43.1), "better"),
                line("8", "qps", Some(43.0), "better"),
                line("8", "p95", Some(1.24), "~"),
                line("8", "p99", Some(-30.0), "better"),
                line("8", "avg", Some(-9.0), "better"),
                line("8", "server_fsyncs_per_txn", Some(-97.0), "better"),
            ],
            vec![("tps", 43.1)],
        );
        assert_eq!(
            Headline::of(&c).text(),
            "tps +43.1% [+41.1, +45.1] better, p95 +1.2% [-0.8, +3.2] not significant, \
             p99 -30.0% [-32.0, -28.0] better, server_fsyncs_per_txn -97.0% [-99.0, -95.0] \
             better (Welch's t-test)"
        );
        let h = Headline::of(&c);
        assert_eq!(h.parts[1].direction, Direction::Unclear);
        assert_eq!(h.parts[3].metric, "server_fsyncs_per_txn");
    }

    #[test]
    fn several_points_give_the_geomean_and_count_the_verdicts() {
        let mut c = comparison(
            vec![
                line("8", "tps", Some(10.0), "better"),
                line("16", "tps", Some(2.0), "~"),
                line("32", "tps", Some(-5.0), "worse"),
                line("8", "p99", Some(1.0), "~"),
                line("16", "p99", Some(-1.0), "~"),
                line("32", "p99", Some(1.0), "n/a"),
            ],
            vec![("tps", 2.1), ("p99", 0.3)],
        );
        c.few_samples = true;
        c.paired = true;
        c.test = "paired t-test over 3 pairs per key".into();
        c.throughput = "eps";
        let h = Headline::of(&c);
        assert_eq!(
            h.text(),
            "eps geomean +2.1% over 3 points: 1 better, 1 worse, 1 not significant, \
             p99 geomean +0.3% over 3 points: 2 not significant, 1 untested \
             (paired t-test over 3 pairs per key; fewer than 6 samples on a side)"
        );
        assert_eq!(h.parts[0].direction, Direction::Mixed);
        assert_eq!(h.parts[1].direction, Direction::Unclear);
    }

    #[test]
    fn without_a_percentage_the_medians_are_given_and_one_sample_is_untested() {
        let mut from_zero = line("8", "server_fsyncs_per_txn", None, "worse");
        from_zero.base = side(0.0);
        from_zero.other = side(0.52);
        let c = comparison(
            vec![line("8", "tps", Some(3.0), "n/a"), from_zero],
            Vec::new(),
        );
        assert_eq!(
            Headline::of(&c).text(),
            "tps +3.0% [+1.0, +5.0] untested (one sample a side), \
             server_fsyncs_per_txn 0.0000 → 0.5200 worse (Welch's t-test)"
        );
    }

    #[test]
    fn metrics_picked_outside_the_headlines_are_spoken_of_and_nothing_is_said_so() {
        let mut c = comparison(vec![line("8", "avg", Some(-4.0), "better")], Vec::new());
        assert_eq!(
            Headline::of(&c).text(),
            "avg -4.0% [-6.0, -2.0] better (Welch's t-test)"
        );
        c.lines.clear();
        assert_eq!(
            Headline::of(&c).text(),
            "nothing measured on both sides (Welch's t-test)"
        );
    }
}
