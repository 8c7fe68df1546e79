//! A capacity search told and drawn (#30), from its curve alone ([`Curve`], `capacity.csv`),
//! so that a search drawn later says what it said when it ended:
//! - [`answer`]: the text `sbsuite capacity` prints and `capacity.txt` keeps;
//! - [`charts`]: the hockey stick — the percentile against the rate offered with the target
//!   and the rate found, and the rate achieved against the rate offered — for `capacity.svg`
//!   and the page alike;
//! - [`render`]: the page of `sbsuite report DIR` on the directory of `sbsuite capacity` or of
//!   a `[capacity]` suite's `sbsuite run`, which holds the curve and one run directory per
//!   probe, not a `results.csv` of its own: the answer first, then the charts, then every
//!   probe with its verdict and its run directory (each an ordinary run: `sbsuite report` it
//!   for its time series), then the suite. Same style and rules as the run page
//!   ([`super::page`]): one file, inline SVG, no script.
//!
//! The x axis is the rate offered: on a log2 scale when the rates tried span more than two
//! octaves (the bracket halves from the closed-loop bound, so a search that had to go far
//! down is read best in octaves), linear otherwise, where the knee of the stick shows as it is.

use std::fmt::Write as _;
use std::path::Path;

use super::page::STYLE;
use super::svg::{Bar, Chart, Series, escape};
use crate::compare::stats::summarize;
use crate::results::capacity::{CAPACITY_FILE, Curve, Phase, Point};

/// Colours of the charts' series (indexes into [`super::svg::PALETTE`]).
const CURVE: usize = 0;
const BOUND: usize = 1;
const FOUND: usize = 2;
const TARGET: usize = 3;
const IDEAL: usize = 9;

/// The rates offered span at least this ratio before the x axis is drawn in octaves.
const LOG_SPAN: f64 = 4.0;

/// What the search found, as the curve records it.
struct Answer<'a> {
    rate: f64,
    /// The last confirmation's repetitions.
    reps: Vec<&'a Point>,
    /// How many of them passed.
    passed: usize,
    /// The lowest rate above `rate` where a repetition failed (`None`: none did, so the
    /// closed-loop throughput itself passed).
    failed_above: Option<f64>,
}

impl Answer<'_> {
    fn of(curve: &Curve) -> Option<Answer<'_>> {
        let (rate, reps) = curve.found()?;
        let passed = reps.iter().filter(|p| p.pass == Some(true)).count();
        let failed_above = curve
            .points
            .iter()
            .filter(|p| p.pass == Some(false))
            .filter_map(|p| p.offered)
            .filter(|r| *r > rate)
            .reduce(f64::min);
        Some(Answer {
            rate,
            reps,
            passed,
            failed_above,
        })
    }

    fn confirmed(&self) -> bool {
        2 * self.passed > self.reps.len()
    }

    /// The target's percentile over the confirmation's repetitions: median and interval.
    fn values(&self, curve: &Curve) -> Vec<f64> {
        self.reps.iter().filter_map(|p| curve.metric(p)).collect()
    }
}

/// The answer, as `sbsuite capacity` prints it and `capacity.txt` keeps it; `dir` is where
/// the curve is.
pub fn answer(curve: &Curve, dir: &Path) -> String {
    let mut t = String::new();
    let target = &curve.target;
    let tried = curve
        .points
        .iter()
        .filter(|p| p.phase != Phase::Confirm)
        .count();
    match Answer::of(curve) {
        Some(a) => {
            let _ = write!(t, "capacity at {target}: {:.0}/s", a.rate);
            match a.failed_above {
                Some(hi) => {
                    let _ = write!(t, " (fails at {hi:.0}/s)");
                }
                None => t.push_str(
                    " — the closed-loop throughput itself passed: the threads, not the server, \
                     are the limit (raise threads)",
                ),
            }
            t.push('\n');
            let _ = write!(
                t,
                "{} {} of {} repetitions passed at {:.0}/s",
                if a.confirmed() {
                    "confirmed:"
                } else {
                    "NOT confirmed (noisy at this run length: raise `time`):"
                },
                a.passed,
                a.reps.len(),
                a.rate
            );
            if let Some(s) = summarize(&a.values(curve)) {
                let _ = write!(t, ": {} median {:.2} ms", target.name, s.median);
                if let Some((lo, hi)) = s.ci {
                    let _ = write!(t, " [{lo:.2}, {hi:.2}]");
                }
            }
            t.push('\n');
        }
        None => {
            let lowest = curve
                .points
                .iter()
                .filter_map(|p| p.offered)
                .reduce(f64::min)
                .unwrap_or(0.0);
            let _ = writeln!(
                t,
                "no rate meets {target}: even {lowest:.0}/s failed (lower --min-rate, or the \
                 target is below what one transaction takes)"
            );
        }
    }
    let _ = writeln!(
        t,
        "{tried} probes (a rate passes when {target} and no arrival was dropped and 95 % of it \
         was achieved, less on short runs by the Poisson variation of the count); the curve is \
         in {}",
        dir.join(CAPACITY_FILE).display()
    );
    t
}

/// The two charts: the percentile against the rate offered (`capacity`, with the target and
/// the rate found), and the rate achieved against the rate offered (`capacity-rate`, with the
/// closed-loop bound and the line where they are equal). A point is a rate offered: the
/// median of every run at it (the search's probe, the confirmation's repetitions) with their
/// 95 % interval when there are several, computed as `sbsuite compare` computes it.
pub fn charts(curve: &Curve) -> [Chart; 2] {
    let answer = Answer::of(curve);
    let mut rates: Vec<f64> = curve.points.iter().filter_map(|p| p.offered).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    let (lo, hi) = (rates.first().copied(), rates.last().copied());
    let log2 = matches!((lo, hi), (Some(lo), Some(hi)) if lo > 0.0 && hi / lo >= LOG_SPAN);
    let x_label = if log2 {
        "rate offered (per second, log2 scale)"
    } else {
        "rate offered (per second)"
    };
    let name = curve.target.name;
    let max_ms = curve.target.max_ms;
    // Per rate offered, the median of `f` over its runs, and their interval.
    let series = |label: String, f: &dyn Fn(&Point) -> Option<f64>| -> Series {
        let mut s = Series {
            label,
            color: CURVE,
            ..Series::default()
        };
        for &rate in &rates {
            let values: Vec<f64> = curve
                .points
                .iter()
                .filter(|p| p.offered == Some(rate))
                .filter_map(f)
                .collect();
            let Some(sum) = summarize(&values) else {
                continue;
            };
            s.points.push((rate, sum.median));
            if let Some((low, high)) = sum.ci {
                s.bars.push(Bar {
                    x: rate,
                    low,
                    high,
                    n: sum.n,
                });
            }
        }
        s
    };
    let span = |y: f64| match (lo, hi) {
        (Some(lo), Some(hi)) => vec![(lo, y), (hi, y)],
        _ => Vec::new(),
    };
    // The rate found: a vertical line up to where it meets `top`.
    let found = |top: f64| {
        answer.as_ref().map(|a| Series {
            label: format!(
                "capacity {:.0}/s ({} of {} confirmed)",
                a.rate,
                a.passed,
                a.reps.len()
            ),
            points: vec![(a.rate, 0.0), (a.rate, top)],
            color: FOUND,
            dashed: true,
            ..Series::default()
        })
    };

    let mut latency = vec![
        series(format!("{name} at each rate offered"), &|p| curve.metric(p)),
        Series {
            label: format!("target: {name} ≤ {max_ms} ms"),
            points: span(max_ms),
            color: TARGET,
            dashed: true,
            ..Series::default()
        },
    ];
    latency.extend(found(max_ms));

    // Equal rates: a straight line on a linear axis, a curve on a log2 one.
    let ideal = match (lo, hi) {
        (Some(lo), Some(hi)) if log2 => (0..=24)
            .map(|i| lo * (hi / lo).powf(f64::from(i) / 24.0))
            .map(|x| (x, x))
            .collect(),
        (Some(lo), Some(hi)) => vec![(lo, lo), (hi, hi)],
        _ => Vec::new(),
    };
    let mut rate = vec![
        series("achieved at each rate offered".into(), &|p| {
            Some(p.sample.achieved)
        }),
        Series {
            label: "achieved = offered".into(),
            points: ideal,
            color: IDEAL,
            dashed: true,
            ..Series::default()
        },
    ];
    if let Some(bound) = curve.closed_loop() {
        rate.push(Series {
            label: format!("closed loop (the bound): {bound:.1}/s"),
            points: span(bound),
            color: BOUND,
            dashed: true,
            ..Series::default()
        });
    }
    rate.extend(found(answer.as_ref().map_or(0.0, |a| a.rate)));
    let note = "a point: the median of the runs at a rate offered (open loop, latency from \
                the scheduled arrival)";
    [
        Chart {
            id: "capacity".into(),
            title: format!("{name} latency vs offered load"),
            x_label: x_label.into(),
            y_label: format!("{name} latency (ms)"),
            x_log2: log2,
            series: latency,
            note: note.into(),
            ..Chart::default()
        },
        Chart {
            id: "capacity-rate".into(),
            title: "Achieved vs offered rate".into(),
            x_label: x_label.into(),
            y_label: "rate achieved (per second)".into(),
            x_log2: log2,
            series: rate,
            note: note.into(),
            ..Chart::default()
        },
    ]
}

/// The page of the search in `dir` whose curve is `curve`; `suite_text` is its `suite.toml`
/// when it has one. Returns the page and its charts (for `--svg`).
pub fn render(
    dir: &Path,
    curve: &Curve,
    suite_text: Option<&str>,
    generated: &str,
) -> (String, Vec<Chart>) {
    let mut h = String::new();
    let name = run_name(dir);
    let title = format!("sbsuite report: {name} (capacity search)");
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&title)
    );
    let probes = curve
        .points
        .iter()
        .filter(|p| p.phase != Phase::Confirm)
        .count();
    let _ = writeln!(
        h,
        "<p class=\"meta\"><b>{}</b> — {} — target {} — {} probes and {} confirmation run{}</p>",
        escape(&name),
        escape(&dir.display().to_string()),
        escape(&curve.target.to_string()),
        probes,
        curve.points.len() - probes,
        if curve.points.len() - probes == 1 {
            ""
        } else {
            "s"
        }
    );
    let _ = writeln!(
        h,
        "<p class=\"meta\">generated {} by sbsuite {}</p>",
        escape(generated),
        env!("CARGO_PKG_VERSION")
    );
    let text = answer(curve, dir);
    let mut lines = text.lines();
    if let Some(first) = lines.next() {
        let _ = writeln!(h, "<p class=\"headline\"><b>{}</b></p>", escape(first));
    }
    for line in lines {
        let _ = writeln!(h, "<p class=\"meta\">{}</p>", escape(line));
    }

    h.push_str("<h2 id=\"capacity\">Latency vs offered load</h2>\n");
    h.push_str("<p class=\"note\">Each probe is a run at a fixed arrival rate (open loop: latency counted from each arrival's scheduled time, so queueing shows). A point is the median of the runs at one rate, with their 95 % interval when there are several; the dashed line marks the rate found.</p>\n");
    let charts = charts(curve);
    h.push_str("<div class=\"charts\">\n");
    for c in &charts {
        h.push_str(&c.to_svg(false));
    }
    h.push_str("</div>\n");

    h.push_str("<h2 id=\"probes\">Probes</h2>\n");
    probes_table(&mut h, curve);

    h.push_str("<h2 id=\"suite\">Suite</h2>\n");
    match suite_text {
        Some(text) => {
            let _ = writeln!(
                h,
                "<details open><summary>suite.toml of {}</summary>\n<pre>{}</pre></details>",
                escape(&name),
                escape(text)
            );
        }
        None => h.push_str(
            "<p class=\"note\">suite.toml: not found in the directory (each probe's run directory has its own).</p>\n",
        ),
    }
    h.push_str("</body>\n</html>\n");
    (h, charts.into())
}

/// `<suite>/<id>` from the directory's last two components.
fn run_name(dir: &Path) -> String {
    let canon = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let parts: Vec<String> = canon
        .components()
        .rev()
        .take(2)
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.into_iter().rev().collect::<Vec<_>>().join("/")
}

/// A row per probe repetition, as `capacity.csv` has them.
fn probes_table(h: &mut String, curve: &Curve) {
    let name = curve.target.name;
    h.push_str("<table>\n<tr>");
    for c in [
        "#",
        "phase",
        "offered (/s)",
        "achieved (/s)",
        &format!("{name} (ms)"),
        "avg (ms)",
        "p95 (ms)",
        "p99 (ms)",
        "max (ms)",
        "dropped",
        "seconds",
        "pass",
        "run directory",
    ] {
        let _ = write!(h, "<th>{}</th>", escape(c));
    }
    h.push_str("</tr>\n");
    let ms = |v: Option<f64>| v.map(|v| format!("{v:.2}")).unwrap_or_default();
    for (i, p) in curve.points.iter().enumerate() {
        let class = match p.pass {
            Some(false) => " class=\"failed\"",
            _ => "",
        };
        let _ = write!(
            h,
            "<tr{class}><td class=\"n\">{}</td><td>{}</td>",
            i + 1,
            p.phase.as_str()
        );
        let lat = &p.sample.lat;
        for v in [
            p.offered.map_or("max".into(), |r| format!("{r:.0}")),
            format!("{:.1}", p.sample.achieved),
            ms(curve.metric(p)),
            ms(lat.avg),
            ms(lat.p95),
            ms(lat.p99),
            ms(lat.max),
            format!("{}", p.sample.dropped),
            format!("{:.1}", p.sample.seconds),
        ] {
            let _ = write!(h, "<td class=\"n\">{}</td>", escape(&v));
        }
        let pass = match p.pass {
            Some(true) => "yes",
            Some(false) => "no",
            None => "",
        };
        let _ = writeln!(
            h,
            "<td>{pass}</td><td>{}</td></tr>",
            escape(&p.run_dir.display().to_string())
        );
    }
    h.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::capacity::tests::point;
    use crate::suite::capacity::Target;

    fn search() -> Curve {
        Curve {
            target: Target::parse("p99<200ms").unwrap(),
            points: vec![
                point(Phase::ClosedLoop, None, 11.0, None),
                point(Phase::Bracket, Some(91.0), 247.0, Some(false)),
                point(Phase::Bracket, Some(46.0), 45.0, Some(true)),
                point(Phase::Bisect, Some(65.0), 57.0, Some(true)),
                point(Phase::Bisect, Some(77.0), 167.0, Some(true)),
                point(Phase::Confirm, Some(77.0), 77.0, Some(true)),
                point(Phase::Confirm, Some(77.0), 164.0, Some(true)),
            ],
        }
    }

    #[test]
    fn the_answer_is_told_from_the_curve() {
        let text = answer(&search(), Path::new("out"));
        assert!(
            text.starts_with("capacity at p99 ≤ 200 ms: 77/s (fails at 91/s)\nconfirmed: 2 of 2 repetitions passed at 77/s: p99 median 120.50 ms ["),
            "{text}"
        );
        assert!(text.contains("5 probes ("), "{text}");
        assert!(
            text.ends_with("the curve is in out/capacity.csv\n"),
            "{text}"
        );

        // The closed-loop bound itself passed: no failure above the rate found.
        let mut easy = search();
        easy.points = vec![
            point(Phase::ClosedLoop, None, 11.0, None),
            point(Phase::Bracket, Some(90.0), 20.0, Some(true)),
            point(Phase::Confirm, Some(90.0), 20.0, Some(true)),
            point(Phase::Confirm, Some(90.0), 250.0, Some(false)),
            point(Phase::Confirm, Some(90.0), 20.0, Some(true)),
        ];
        let text = answer(&easy, Path::new("out"));
        assert!(
            text.contains("90/s — the closed-loop throughput itself passed"),
            "{text}"
        );
        assert!(text.contains("confirmed: 2 of 3 repetitions"), "{text}");

        let mut none = search();
        none.points.truncate(2);
        let text = answer(&none, Path::new("out"));
        assert!(
            text.starts_with("no rate meets p99 ≤ 200 ms: even 91/s failed"),
            "{text}"
        );
    }

    #[test]
    fn the_charts_mark_the_target_and_the_rate_found_on_a_fitting_x_axis() {
        let [latency, rate] = charts(&search());
        assert!(!latency.x_log2, "46 to 91 is one octave: linear");
        let labels: Vec<&str> = latency.series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "p99 at each rate offered",
                "target: p99 ≤ 200 ms",
                "capacity 77/s (2 of 2 confirmed)",
            ]
        );
        // A point per rate offered (not the closed loop); at 77/s the median of the probe
        // and the two confirmations, with their interval.
        let curve = &latency.series[0];
        assert_eq!(
            curve.points,
            [(46.0, 45.0), (65.0, 57.0), (77.0, 164.0), (91.0, 247.0)]
        );
        assert_eq!(curve.bars.len(), 1);
        assert_eq!((curve.bars[0].x, curve.bars[0].n), (77.0, 3));
        assert_eq!(latency.series[1].points, [(46.0, 200.0), (91.0, 200.0)]);
        assert_eq!(latency.series[2].points, [(77.0, 0.0), (77.0, 200.0)]);
        assert_eq!(rate.series[0].points[3], (91.0, 90.0));
        assert_eq!(rate.series[1].points, [(46.0, 46.0), (91.0, 91.0)]);
        assert_eq!(rate.series[2].label, "closed loop (the bound): 90.0/s");
        assert_eq!(rate.series[3].points, [(77.0, 0.0), (77.0, 77.0)]);

        let mut far = search();
        far.points
            .insert(2, point(Phase::Bracket, Some(11.0), 5.0, Some(true)));
        let [latency, rate] = charts(&far);
        assert!(latency.x_log2 && rate.x_log2);
        // The equal-rates line follows the log2 axis in small steps.
        assert_eq!(rate.series[1].points.len(), 25);

        // No rate found: no mark.
        let mut none = search();
        none.points.truncate(2);
        let [latency, _] = charts(&none);
        assert_eq!(latency.series.len(), 2);
    }
}
