//! Line charts as SVG text: scales, "nice" ticks, axes with units, a legend, tooltips, error
//! bars, and a caption under the title that says what a point is.
//!
//! Hand-written rather than a chart crate because the needs are small and fixed (x/y line
//! charts) and the output must be self-contained SVG that renders the same inline in HTML and
//! as a standalone file: no scripts, no web fonts, no external references. Every text is
//! escaped. Thread counts that are powers of two get a log2 x axis, where 1, 2, 4 … 1024 are
//! evenly spaced as people read them.

use std::fmt::Write as _;

/// Categorical colours (Tableau 10): distinguishable, and still distinct in grey print.
pub const PALETTE: &[&str] = &[
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

const WIDTH: f64 = 620.0;
const PLOT_HEIGHT: f64 = 260.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 36.0;
const AXIS_BELOW: f64 = 46.0;
const LEGEND_ROW: f64 = 18.0;
const LEGEND_COL: f64 = 290.0;
/// Share of the plot width left empty at each end of the x axis.
const X_PAD: f64 = 0.03;
/// Height of the caption line under the title.
const NOTE_ROW: f64 = 14.0;
/// An error bar reaching past this multiple of the highest point is cut at the frame (a
/// 2-sample interval can span 100×), so that it does not flatten every line.
const BAR_HEADROOM: f64 = 2.0;

/// Dash patterns of a series' repetition ([`Series::rep`]): the first solid, then each its
/// own, so that the repetitions of one step (one colour) stay apart in print too.
const REP_DASHES: &[&str] = &["", "8 3", "2 3", "8 3 2 3", "12 4", "1 4"];
/// The dash of the second run of an overlay ([`Series::dashed`]) at its first repetition.
const RUN_B_DASH: &str = "6 4";

/// A mapping from data to pixels along one axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    Linear {
        min: f64,
        max: f64,
    },
    /// Domain in data units (both > 0); positions are log2 of the value.
    Log2 {
        min: f64,
        max: f64,
    },
}

impl Scale {
    /// A linear scale over `values`, padded so one value or equal values still get a span.
    pub fn linear(values: &[f64], from_zero: bool) -> Scale {
        let (mut lo, mut hi) = bounds(values).unwrap_or((0.0, 1.0));
        if from_zero {
            lo = lo.min(0.0);
        }
        if hi <= lo {
            // One value (or all equal): centre it.
            let pad = if hi == 0.0 { 1.0 } else { hi.abs() * 0.5 };
            if from_zero && lo >= 0.0 {
                lo = 0.0;
                hi += pad;
            } else {
                lo -= pad;
                hi += pad;
            }
        }
        Scale::Linear { min: lo, max: hi }
    }

    /// A log2 scale over positive `values`, one octave of margin when there is a single value.
    pub fn log2(values: &[f64]) -> Scale {
        let (lo, hi) = bounds(values).unwrap_or((1.0, 2.0));
        if hi <= lo {
            Scale::Log2 {
                min: lo / 2.0,
                max: hi * 2.0,
            }
        } else {
            Scale::Log2 { min: lo, max: hi }
        }
    }

    /// The position of `v` in [0, 1].
    pub fn unit(&self, v: f64) -> f64 {
        match *self {
            Scale::Linear { min, max } => (v - min) / (max - min),
            Scale::Log2 { min, max } => (v.log2() - min.log2()) / (max.log2() - min.log2()),
        }
    }

    /// Tick values: "nice" steps (1, 2, 2.5, 5 × 10^k) for linear scales, every power of two
    /// (every other one when there are many) for log2 scales.
    pub fn ticks(&self) -> Vec<f64> {
        match *self {
            Scale::Linear { min, max } => {
                let step = nice_step((max - min) / 5.0);
                let first = (min / step).ceil() * step;
                let mut out = Vec::new();
                let mut i = 0.0;
                loop {
                    let v = first + i * step;
                    if v > max + step * 1e-9 {
                        break;
                    }
                    // -0.0 and 1e-17 noise print as 0.
                    out.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
                    i += 1.0;
                }
                out
            }
            Scale::Log2 { min, max } => {
                let (a, b) = (min.log2().ceil() as i32, max.log2().floor() as i32);
                let every = if b - a > 12 { 2 } else { 1 };
                (a..=b)
                    .filter(|e| (e - a) % every == 0)
                    .map(|e| 2f64.powi(e))
                    .collect()
            }
        }
    }

    /// Extends a linear scale's top to a tick above its highest value, so the highest point is
    /// not on the frame and the frame ends on a labelled tick.
    pub fn nice_top(self) -> Scale {
        match self {
            Scale::Linear { min, max } => {
                let mut top = max;
                // The step depends on the span, which depends on the top: settle it.
                for _ in 0..4 {
                    let step = nice_step((top - min) / 5.0);
                    let mut t = (max / step).ceil() * step;
                    if t <= max {
                        t += step;
                    }
                    if t == top {
                        break;
                    }
                    top = t;
                }
                Scale::Linear { min, max: top }
            }
            s => s,
        }
    }
}

fn bounds(values: &[f64]) -> Option<(f64, f64)> {
    let mut it = values.iter().copied().filter(|v| v.is_finite());
    let first = it.next()?;
    Some(it.fold((first, first), |(lo, hi), v| (lo.min(v), hi.max(v))))
}

/// The smallest of 1, 2, 2.5, 5, 10 × 10^k that is ≥ `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 2.5 {
        2.5
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// True when every value is a power of two (1, 2, 4 …): thread counts that read best on a log2
/// axis.
pub fn all_powers_of_two(values: &[f64]) -> bool {
    !values.is_empty()
        && values
            .iter()
            .all(|&v| v >= 1.0 && v.fract() == 0.0 && (v as u64).is_power_of_two())
}

/// A tick label: compact and exact enough to read (`0.25`, `12`, `2.5k`, `1.2M`).
pub fn tick_label(v: f64) -> String {
    let a = v.abs();
    let (n, suffix) = if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let mut s = format!("{n:.3}");
    if s.contains('.') {
        s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    if s == "-0" {
        s = "0".into();
    }
    s + suffix
}

/// XML/HTML text escaping (also safe inside attribute values).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are not allowed in XML 1.0.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// One line of a chart.
#[derive(Clone, Debug, Default)]
pub struct Series {
    pub label: String,
    /// (x, y) points, drawn in x order and joined by a line.
    pub points: Vec<(f64, f64)>,
    pub color: usize,
    /// Dashed line with hollow markers (the second run of an overlay).
    pub dashed: bool,
    /// Which repetition of a step the line is (0-based; 0 for a line that is not one): sets
    /// its marker shape and dash pattern, so that repetitions drawn in one colour differ.
    pub rep: usize,
    /// The interval drawn around a point, with what the point summarises.
    pub bars: Vec<Bar>,
}

/// An error bar at a point: the 95 % interval of the samples whose median the point is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bar {
    pub x: f64,
    pub low: f64,
    pub high: f64,
    /// The samples (repetitions) behind the point.
    pub n: usize,
}

/// The marker shapes of [`Series::rep`], in order.
const SHAPES: usize = 5;

/// A marker of shape `rep` (circle, square, triangle, diamond, cross) at (`x`, `y`).
fn marker(rep: usize, x: f64, y: f64, paint: &str, title: &str) -> String {
    let body = format!("{paint}><title>{title}</title>");
    match rep % SHAPES {
        0 => format!("<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3.5\" {body}</circle>"),
        1 => format!(
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"6.4\" height=\"6.4\" {body}</rect>",
            x - 3.2,
            y - 3.2
        ),
        shape => {
            let pts: [(f64, f64); 4] = match shape {
                2 => [(0.0, -4.4), (4.0, 2.8), (-4.0, 2.8), (0.0, -4.4)],
                3 => [(0.0, -4.6), (4.0, 0.0), (0.0, 4.6), (-4.0, 0.0)],
                _ => [(-3.6, -3.6), (3.6, 3.6), (3.6, -3.6), (-3.6, 3.6)],
            };
            let pts: Vec<String> = pts
                .iter()
                .map(|(dx, dy)| format!("{:.1},{:.1}", x + dx, y + dy))
                .collect();
            // The cross is two strokes (a polyline through its corners would close it).
            let element = if shape == 4 { "polyline" } else { "polygon" };
            format!(
                "<{element} points=\"{}\" {body}</{element}>",
                if shape == 4 {
                    format!("{} {} {} {}", pts[0], pts[1], pts[2], pts[3])
                } else {
                    pts.join(" ")
                }
            )
        }
    }
}

impl Series {
    /// The `stroke-dasharray` of its line (empty: solid).
    fn dash(&self) -> &'static str {
        match (self.dashed, self.rep) {
            (true, 0) => RUN_B_DASH,
            (_, r) => REP_DASHES[r % REP_DASHES.len()],
        }
    }
}

/// A mark on the x axis for a run without a measurement (failed or interrupted).
#[derive(Clone, Debug)]
pub struct Missing {
    pub x: f64,
    pub what: String,
}

/// A line chart.
#[derive(Clone, Debug, Default)]
pub struct Chart {
    /// File stem of the standalone SVG (`throughput-tps`).
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_log2: bool,
    pub series: Vec<Series>,
    pub missing: Vec<Missing>,
    /// The caption under the title: what a point is (`median of 3 repetitions …`); empty for
    /// none.
    pub note: String,
}

impl Chart {
    fn x_scale(&self) -> Scale {
        let xs: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .chain(self.missing.iter().map(|m| m.x))
            .collect();
        if self.x_log2 && xs.iter().all(|&x| x > 0.0) {
            Scale::log2(&xs)
        } else {
            Scale::linear(&xs, false)
        }
    }

    fn y_scale(&self) -> Scale {
        let mut ys: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .collect();
        let top = ys.iter().copied().fold(0.0, f64::max);
        ys.extend(
            self.series
                .iter()
                .flat_map(|s| s.bars.iter().map(|b| b.high.min(top * BAR_HEADROOM))),
        );
        Scale::linear(&ys, true).nice_top()
    }

    /// The top of the plot area: below the title, and below the caption when there is one.
    fn top(&self) -> f64 {
        if self.note.is_empty() {
            TOP
        } else {
            TOP + NOTE_ROW
        }
    }

    fn legend_rows(&self) -> usize {
        self.series.len().div_ceil(legend_cols())
    }

    /// Total height in pixels.
    pub fn height(&self) -> f64 {
        self.top() + PLOT_HEIGHT + AXIS_BELOW + self.legend_rows() as f64 * LEGEND_ROW + 8.0
    }

    /// The chart as SVG. `standalone` adds the XML namespace (and declaration) a file needs;
    /// inline in HTML5 neither is wanted.
    pub fn to_svg(&self, standalone: bool) -> String {
        let (w, h) = (WIDTH, self.height());
        let mut s = String::new();
        if standalone {
            s.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
            let _ = write!(
                s,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" "
            );
        } else {
            s.push_str("<svg ");
        }
        let _ = writeln!(
            s,
            "viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{}\" font-family=\"sans-serif\" font-size=\"12\">",
            escape(&self.title)
        );
        let _ = writeln!(s, "<title>{}</title>", escape(&self.title));
        let _ = writeln!(
            s,
            "<rect x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\" fill=\"#ffffff\"/>"
        );
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"20\" font-size=\"14\" font-weight=\"bold\" text-anchor=\"middle\">{}</text>",
            w / 2.0,
            escape(&self.title)
        );
        if !self.note.is_empty() {
            let _ = writeln!(
                s,
                "<text class=\"note\" x=\"{}\" y=\"36\" font-size=\"11\" text-anchor=\"middle\" fill=\"#555555\">{}</text>",
                w / 2.0,
                escape(&self.note)
            );
        }

        let (x0, x1) = (LEFT, WIDTH - RIGHT);
        let top = self.top();
        let (y0, y1) = (top + PLOT_HEIGHT, top);
        let xs = self.x_scale();
        let ys = self.y_scale();
        // A little air left and right, so end points and their markers clear the frame.
        let px = |x: f64| x0 + (X_PAD + xs.unit(x) * (1.0 - 2.0 * X_PAD)) * (x1 - x0);
        let py = |y: f64| y0 - ys.unit(y) * (y0 - y1);

        // Grid and ticks.
        for t in ys.ticks() {
            let y = py(t);
            let _ = writeln!(
                s,
                "<line x1=\"{x0}\" y1=\"{y:.1}\" x2=\"{x1}\" y2=\"{y:.1}\" stroke=\"#e6e6e6\"/>\n<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#333333\">{}</text>",
                x0 - 6.0,
                y + 4.0,
                escape(&tick_label(t))
            );
        }
        // Whole-number data (threads, seconds, steps) gets whole-number ticks only.
        let integral = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .all(|x| x.fract() == 0.0);
        for t in xs.ticks() {
            if integral && t.fract() != 0.0 {
                continue;
            }
            let x = px(t);
            if !(x0 - 0.5..=x1 + 0.5).contains(&x) {
                continue;
            }
            let _ = writeln!(
                s,
                "<line x1=\"{x:.1}\" y1=\"{y1}\" x2=\"{x:.1}\" y2=\"{y0}\" stroke=\"#f0f0f0\"/>\n<line x1=\"{x:.1}\" y1=\"{y0}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#333333\"/>\n<text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#333333\">{}</text>",
                y0 + 4.0,
                y0 + 17.0,
                escape(&tick_label(t))
            );
        }
        // Axes and their labels (with units).
        let _ = writeln!(
            s,
            "<line x1=\"{x0}\" y1=\"{y0}\" x2=\"{x1}\" y2=\"{y0}\" stroke=\"#333333\"/>\n<line x1=\"{x0}\" y1=\"{y1}\" x2=\"{x0}\" y2=\"{y0}\" stroke=\"#333333\"/>"
        );
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            (x0 + x1) / 2.0,
            y0 + 36.0,
            escape(&self.x_label)
        );
        let (lx, ly) = (16.0, (y0 + y1) / 2.0);
        let _ = writeln!(
            s,
            "<text x=\"{lx}\" y=\"{ly:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 {lx} {ly:.1})\">{}</text>",
            escape(&self.y_label)
        );

        if self.series.iter().all(|s| s.points.is_empty()) {
            let _ = writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#777777\">no measurements</text>",
                (x0 + x1) / 2.0,
                (y0 + y1) / 2.0
            );
        }

        // Lines, error bars and points, one group per series (its label in `data-series`).
        let (y_lo, y_hi) = match ys {
            Scale::Linear { min, max } | Scale::Log2 { min, max } => (min, max),
        };
        for series in &self.series {
            let color = PALETTE[series.color % PALETTE.len()];
            let _ = writeln!(
                s,
                "<g class=\"series\" data-series=\"{}\">",
                escape(&series.label)
            );
            let mut pts = series.points.clone();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let dash = match series.dash() {
                "" => String::new(),
                d => format!(" stroke-dasharray=\"{d}\""),
            };
            if pts.len() > 1 {
                let path: Vec<String> = pts
                    .iter()
                    .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
                    .collect();
                let _ = writeln!(
                    s,
                    "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"{dash}/>",
                    path.join(" ")
                );
            }
            for b in &series.bars {
                // Cut at the frame (no cap there: the interval goes on).
                let (lo, hi) = (b.low.max(y_lo), b.high.min(y_hi));
                if !(lo.is_finite() && hi.is_finite()) || hi < lo {
                    continue;
                }
                let x = px(b.x);
                let _ = write!(
                    s,
                    "<line class=\"bar\" x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"{color}\" stroke-width=\"1.2\"/>",
                    py(lo),
                    py(hi)
                );
                for (v, cut) in [(lo, b.low < y_lo), (hi, b.high > y_hi)] {
                    if !cut {
                        let _ = write!(
                            s,
                            "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{color}\" stroke-width=\"1.2\"/>",
                            x - 4.0,
                            py(v),
                            x + 4.0,
                            py(v)
                        );
                    }
                }
                s.push('\n');
            }
            // Fewer markers when a time series has many points; one point is always marked.
            let mark_every = (pts.len() / 60).max(1);
            for (i, &(x, y)) in pts.iter().enumerate() {
                if i % mark_every != 0 && pts.len() > 1 {
                    continue;
                }
                let fill = if series.dashed { "#ffffff" } else { color };
                let mut title = format!(
                    "{}: {} = {}, {} = {}",
                    series.label,
                    self.x_label,
                    plain(x),
                    self.y_label,
                    plain(y)
                );
                if let Some(b) = series.bars.iter().find(|b| b.x == x) {
                    title.push_str(&format!(
                        " (median of {}, 95 % interval {} to {})",
                        b.n,
                        plain(b.low),
                        plain(b.high)
                    ));
                }
                let paint = format!("fill=\"{fill}\" stroke=\"{color}\" stroke-width=\"1.5\"");
                let _ = writeln!(
                    s,
                    "{}",
                    marker(series.rep, px(x), py(y), &paint, &escape(&title))
                );
            }
            s.push_str("</g>\n");
        }
        for m in &self.missing {
            let x = px(m.x);
            let _ = writeln!(
                s,
                "<text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#d62728\" font-size=\"14\" font-weight=\"bold\">×<title>{}</title></text>",
                y0 - 3.0,
                escape(&m.what)
            );
        }

        // Legend below the axis label: each line's dash and marker.
        let cols = legend_cols();
        for (i, series) in self.series.iter().enumerate() {
            let color = PALETTE[series.color % PALETTE.len()];
            let lx = LEFT + (i % cols) as f64 * LEGEND_COL;
            let ly = top + PLOT_HEIGHT + AXIS_BELOW + (i / cols) as f64 * LEGEND_ROW + 6.0;
            let dash = match series.dash() {
                "" => String::new(),
                d => format!(" stroke-dasharray=\"{d}\""),
            };
            let fill = if series.dashed { "#ffffff" } else { color };
            let _ = writeln!(
                s,
                "<g class=\"legend\"><line x1=\"{lx}\" y1=\"{ly}\" x2=\"{:.1}\" y2=\"{ly}\" stroke=\"{color}\" stroke-width=\"2\"{dash}/>{}<text x=\"{:.1}\" y=\"{:.1}\">{}</text></g>",
                lx + 22.0,
                marker(
                    series.rep,
                    lx + 11.0,
                    ly,
                    &format!("fill=\"{fill}\" stroke=\"{color}\" stroke-width=\"1.5\""),
                    &escape(&series.label)
                ),
                lx + 28.0,
                ly + 4.0,
                escape(&truncate(&series.label, 44))
            );
        }
        s.push_str("</svg>\n");
        s
    }
}

fn legend_cols() -> usize {
    (((WIDTH - LEFT - RIGHT) / LEGEND_COL).floor() as usize).max(1)
}

/// A value for a tooltip: up to 4 decimals, trailing zeros trimmed.
fn plain(v: f64) -> String {
    crate::results::csv::fmt_float(v, 4)
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let mut t: String = text.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(1.3), 2.0);
        assert_eq!(nice_step(2.2), 2.5);
        assert_eq!(nice_step(4.0), 5.0);
        assert_eq!(nice_step(7.0), 10.0);
        assert_eq!(nice_step(230.0), 250.0);
        assert_eq!(nice_step(0.0), 1.0);
        assert_eq!(nice_step(f64::NAN), 1.0);
    }

    #[test]
    fn linear_scale_starts_at_zero_and_ends_on_a_tick() {
        let s = Scale::linear(&[120.0, 980.0], true).nice_top();
        assert_eq!(
            s,
            Scale::Linear {
                min: 0.0,
                max: 1000.0
            }
        );
        assert_eq!(s.ticks(), vec![0.0, 200.0, 400.0, 600.0, 800.0, 1000.0]);
        assert_eq!(s.unit(500.0), 0.5);
        // A top that is itself a tick gets one more step of headroom, and the frame still
        // ends on a tick.
        let s = Scale::linear(&[100.0], true).nice_top();
        assert_eq!(
            s,
            Scale::Linear {
                min: 0.0,
                max: 125.0
            }
        );
        assert_eq!(s.ticks().last(), Some(&125.0));
    }

    #[test]
    fn one_point_or_equal_points_still_get_a_span() {
        let s = Scale::linear(&[5.0], true);
        assert_eq!(s, Scale::Linear { min: 0.0, max: 5.0 });
        let s = Scale::linear(&[3.0, 3.0], false);
        assert_eq!(s, Scale::Linear { min: 1.5, max: 4.5 });
        let s = Scale::linear(&[0.0], true);
        assert_eq!(s, Scale::Linear { min: 0.0, max: 1.0 });
        let s = Scale::linear(&[], true);
        assert_eq!(s, Scale::Linear { min: 0.0, max: 1.0 });
        let s = Scale::log2(&[8.0]);
        assert_eq!(
            s,
            Scale::Log2 {
                min: 4.0,
                max: 16.0
            }
        );
        assert_eq!(s.ticks(), vec![4.0, 8.0, 16.0]);
        assert!((s.unit(8.0) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn log2_scale_spaces_powers_of_two_evenly() {
        let s = Scale::log2(&[32.0, 1024.0]);
        assert_eq!(s.ticks(), vec![32.0, 64.0, 128.0, 256.0, 512.0, 1024.0]);
        assert!((s.unit(64.0) - 0.2).abs() < 1e-12);
        assert!((s.unit(1024.0) - 1.0).abs() < 1e-12);
        // Many octaves: every other power.
        let s = Scale::log2(&[1.0, 65536.0]);
        assert_eq!(s.ticks().len(), 9);
    }

    #[test]
    fn powers_of_two_are_recognised() {
        assert!(all_powers_of_two(&[1.0, 2.0, 4.0, 1024.0]));
        assert!(!all_powers_of_two(&[1.0, 3.0]));
        assert!(!all_powers_of_two(&[0.0, 2.0]));
        assert!(!all_powers_of_two(&[2.5]));
        assert!(!all_powers_of_two(&[]));
    }

    #[test]
    fn tick_labels_are_compact() {
        assert_eq!(tick_label(0.0), "0");
        assert_eq!(tick_label(0.25), "0.25");
        assert_eq!(tick_label(2500.0), "2500");
        assert_eq!(tick_label(25000.0), "25k");
        assert_eq!(tick_label(1_250_000.0), "1.25M");
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            escape("a<b & \"c\" 'd'>"),
            "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;"
        );
        assert_eq!(escape("x\u{1}y"), "x y");
    }

    #[test]
    fn a_chart_draws_lines_points_missing_marks_and_a_legend() {
        let chart = Chart {
            id: "t".into(),
            title: "tps <vs> threads".into(),
            x_label: "threads".into(),
            y_label: "tps (transactions/s)".into(),
            x_log2: true,
            series: vec![
                Series {
                    label: "oltp_read_only".into(),
                    points: vec![(4.0, 300.0), (1.0, 100.0), (2.0, 180.0)],
                    color: 0,
                    ..Series::default()
                },
                Series {
                    label: "one point".into(),
                    points: vec![(2.0, 50.0)],
                    color: 1,
                    dashed: true,
                    ..Series::default()
                },
            ],
            missing: vec![Missing {
                x: 8.0,
                what: "step 4 failed".into(),
            }],
            note: String::new(),
        };
        let svg = chart.to_svg(true);
        assert!(svg.starts_with("<?xml"));
        assert!(svg.contains("xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.contains("tps &lt;vs&gt; threads"));
        assert_eq!(svg.matches("<polyline").count(), 1);
        // 4 points and a marker per legend entry.
        assert_eq!(svg.matches("<circle").count(), 6);
        assert_eq!(svg.matches("<g class=\"series\"").count(), 2);
        assert!(svg.contains("data-series=\"one point\""));
        assert!(svg.contains("stroke-dasharray"));
        assert!(svg.contains("step 4 failed"));
        // Points are drawn in x order: the polyline goes left to right.
        let poly = svg.split("<polyline points=\"").nth(1).unwrap();
        let xs: Vec<f64> = poly
            .split('"')
            .next()
            .unwrap()
            .split(' ')
            .map(|p| p.split(',').next().unwrap().parse().unwrap())
            .collect();
        assert!(xs.windows(2).all(|w| w[0] < w[1]), "{xs:?}");
        let inline = chart.to_svg(false);
        assert!(!inline.contains("http"));
        assert!(inline.starts_with("<svg "));
    }

    /// The y pixel of `value` read back from a chart's own tick labels (two ticks fix the
    /// linear map), as a reader would read it.
    fn y_of(svg: &str, value: f64) -> f64 {
        let ticks: Vec<(f64, f64)> = svg
            .lines()
            .filter(|l| l.contains("text-anchor=\"end\""))
            .map(|l| {
                let y: f64 = l
                    .split("y=\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                let v: f64 = l
                    .split('>')
                    .nth(1)
                    .unwrap()
                    .split('<')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                (v, y - 4.0)
            })
            .collect();
        let ((v0, y0), (v1, y1)) = (ticks[0], ticks[1]);
        y0 + (value - v0) / (v1 - v0) * (y1 - y0)
    }

    #[test]
    fn error_bars_span_the_interval_and_a_caption_says_what_a_point_is() {
        let chart = Chart {
            id: "t".into(),
            title: "p95".into(),
            x_label: "threads".into(),
            y_label: "median p95 latency (ms)".into(),
            series: vec![Series {
                label: "a".into(),
                points: vec![(1.0, 4.65), (2.0, 5.0)],
                bars: vec![
                    Bar {
                        x: 1.0,
                        low: 4.0,
                        high: 6.0,
                        n: 3,
                    },
                    // Far beyond the points: cut at the frame, without a cap there.
                    Bar {
                        x: 2.0,
                        low: 1.0,
                        high: 500.0,
                        n: 2,
                    },
                ],
                ..Series::default()
            }],
            note: "each point: the median of its repetitions".into(),
            ..Chart::default()
        };
        let svg = chart.to_svg(false);
        assert!(svg.contains(">each point: the median of its repetitions</text>"));
        assert!(svg.contains("(median of 3, 95 % interval 4 to 6)"), "{svg}");
        let bars: Vec<(f64, f64)> = svg
            .lines()
            .filter(|l| l.starts_with("<line class=\"bar\""))
            .map(|l| {
                let attr = |a: &str| -> f64 {
                    l.split(&format!(" {a}=\""))
                        .nth(1)
                        .unwrap()
                        .split('"')
                        .next()
                        .unwrap()
                        .parse()
                        .unwrap()
                };
                (attr("y1"), attr("y2"))
            })
            .collect();
        assert_eq!(bars.len(), 2);
        assert!((bars[0].0 - y_of(&svg, 4.0)).abs() < 0.2, "{bars:?}");
        assert!((bars[0].1 - y_of(&svg, 6.0)).abs() < 0.2, "{bars:?}");
        // The y axis stops near twice the highest point: the second bar is cut at the frame
        // (the plot's top, under the title and the caption).
        assert!((bars[1].1 - (TOP + NOTE_ROW)).abs() < 0.1, "{bars:?}");
        assert!(y_of(&svg, 10.0) > TOP + NOTE_ROW && y_of(&svg, 13.0) < TOP + NOTE_ROW);
        let caps = svg.matches("stroke-width=\"1.2\"/>").count();
        assert_eq!(caps, 2 + 3, "two bars, three caps: {svg}");
    }

    #[test]
    fn repetitions_get_their_own_marker_and_dash() {
        let rep = |r: usize, dashed: bool| Series {
            label: format!("threads=8 · rep {}", r + 1),
            points: vec![(1.0, 10.0), (2.0, 11.0)],
            rep: r,
            dashed,
            ..Series::default()
        };
        let chart = Chart {
            series: vec![rep(0, false), rep(1, false), rep(2, false), rep(0, true)],
            ..Chart::default()
        };
        let svg = chart.to_svg(false);
        let group = |label: &str| {
            let start = svg.find(&format!("data-series=\"{label}\"")).unwrap();
            &svg[start..start + svg[start..].find("</g>").unwrap()]
        };
        let first = group("threads=8 · rep 1");
        assert!(
            first.contains("<circle") && !first.contains("dasharray"),
            "{first}"
        );
        let second = group("threads=8 · rep 2");
        assert!(second.contains("<rect") && second.contains("stroke-dasharray=\"8 3\""));
        let third = group("threads=8 · rep 3");
        assert!(third.contains("<polygon") && third.contains("stroke-dasharray=\"2 3\""));
        // The legend shows each line's dash and marker.
        assert_eq!(svg.matches("<g class=\"legend\">").count(), 4);
        assert!(svg.contains("stroke-dasharray=\"6 4\""), "run B");
    }
}
