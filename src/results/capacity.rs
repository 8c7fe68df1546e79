//! `capacity.csv` (#30): the latency-vs-offered-load curve of a capacity search, a row per
//! probe repetition — what `sbsuite capacity` and a `[capacity]` suite write into their
//! directory, and what `sbsuite report` draws from it. One model ([`Curve`]), one writer
//! ([`Curve::to_csv`]) and one reader ([`Curve::read`]), so the file and the page cannot
//! drift apart.
//!
//! Each row carries the target (`p99<10ms`) and the probe's measured seconds, so that a row's
//! verdict can be recomputed from the row alone and the report needs no other file. Cells are
//! read by column name; columns added later go at the end.

use std::path::{Path, PathBuf};

use crate::suite::capacity::{Latencies, Target};

/// The file inside a capacity search's directory.
pub const CAPACITY_FILE: &str = "capacity.csv";

/// The columns of `capacity.csv`, in order.
pub const CAPACITY_COLUMNS: [&str; 12] = [
    "phase",
    "offered_rate",
    "achieved_rate",
    "lat_avg",
    "lat_p95",
    "lat_p99",
    "lat_max",
    "dropped",
    "pass",
    "run_dir",
    "seconds",
    "target",
];

/// What a probe was for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// As fast as the threads can (no rate): the bound of the search.
    ClosedLoop,
    /// Halving from the bound until a rate passes.
    Bracket,
    /// Bisection inside the bracket.
    Bisect,
    /// The rate found, repeated.
    Confirm,
}

impl Phase {
    const ALL: [Phase; 4] = [
        Phase::ClosedLoop,
        Phase::Bracket,
        Phase::Bisect,
        Phase::Confirm,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::ClosedLoop => "closed_loop",
            Phase::Bracket => "bracket",
            Phase::Bisect => "bisect",
            Phase::Confirm => "confirm",
        }
    }

    fn parse(text: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.as_str() == text)
    }
}

/// One measured repetition of a probe: its run step's row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sample {
    /// Transactions per second (events per second for workloads without SQL).
    pub achieved: f64,
    pub lat: Latencies,
    /// Arrivals dropped because the queue was full.
    pub dropped: f64,
    /// The measured window, in seconds.
    pub seconds: f64,
}

/// A row of `capacity.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub phase: Phase,
    /// The rate offered; `None` for the closed-loop run.
    pub offered: Option<f64>,
    pub sample: Sample,
    /// The verdict at the rate offered (`None` for the closed loop).
    pub pass: Option<bool>,
    /// The probe's own run directory.
    pub run_dir: PathBuf,
}

/// The whole search: its target and every probe repetition, in the order they ran.
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    pub target: Target,
    pub points: Vec<Point>,
}

/// A `capacity.csv` that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("{}: {message}", .path.display())]
pub struct CurveError {
    pub path: PathBuf,
    pub message: String,
}

impl Curve {
    /// The value of the target's percentile in `p`.
    pub fn metric(&self, p: &Point) -> Option<f64> {
        self.target.of(&p.sample.lat)
    }

    /// The closed-loop run's throughput: the bound of the rates tried.
    pub fn closed_loop(&self) -> Option<f64> {
        self.points
            .iter()
            .find(|p| p.phase == Phase::ClosedLoop)
            .map(|p| p.sample.achieved)
    }

    /// The rate found and its last confirmation's repetitions; `None` when no rate met the
    /// target (a search that found one always confirms it, stepping lower until it holds or
    /// it gives up, so the last confirmation's rate is the answer).
    pub fn found(&self) -> Option<(f64, Vec<&Point>)> {
        let rate = self
            .points
            .iter()
            .rfind(|p| p.phase == Phase::Confirm)?
            .offered?;
        let reps = self
            .points
            .iter()
            .rev()
            .take_while(|p| p.phase == Phase::Confirm && p.offered == Some(rate))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        Some((rate, reps))
    }

    /// The file's text.
    pub fn to_csv(&self) -> String {
        let mut w = ::csv::Writer::from_writer(Vec::new());
        let _ = w.write_record(CAPACITY_COLUMNS);
        let num = |v: Option<f64>| v.map(|v| format!("{v:.4}")).unwrap_or_default();
        let target = self.target.spec();
        for p in &self.points {
            let x = &p.sample;
            let _ = w.write_record([
                p.phase.as_str().to_string(),
                p.offered.map(|r| format!("{r:.0}")).unwrap_or_default(),
                format!("{:.4}", x.achieved),
                num(x.lat.avg),
                num(x.lat.p95),
                num(x.lat.p99),
                num(x.lat.max),
                format!("{}", x.dropped),
                match p.pass {
                    Some(true) => "yes".into(),
                    Some(false) => "no".into(),
                    None => String::new(),
                },
                p.run_dir.display().to_string(),
                format!("{:.3}", x.seconds),
                target.clone(),
            ]);
        }
        String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
    }

    /// Reads `<dir>/capacity.csv`.
    pub fn read(dir: &Path) -> Result<Curve, CurveError> {
        let path = dir.join(CAPACITY_FILE);
        let bad = |message: String| CurveError {
            path: path.clone(),
            message,
        };
        let mut reader = ::csv::Reader::from_path(&path).map_err(|e| bad(e.to_string()))?;
        let header: Vec<String> = reader
            .headers()
            .map_err(|e| bad(e.to_string()))?
            .iter()
            .map(str::to_string)
            .collect();
        for column in ["phase", "offered_rate", "achieved_rate", "target"] {
            if !header.iter().any(|h| h == column) {
                return Err(bad(format!(
                    "no `{column}` column: not a capacity.csv of sbsuite (its header is: {})",
                    header.join(",")
                )));
            }
        }
        let mut target = None;
        let mut points = Vec::new();
        for (i, rec) in reader.records().enumerate() {
            let rec = rec.map_err(|e| bad(e.to_string()))?;
            let line = i + 2;
            let cell = |c: &str| {
                header
                    .iter()
                    .position(|h| h == c)
                    .and_then(|at| rec.get(at))
                    .unwrap_or("")
            };
            let num = |c: &str| -> Result<Option<f64>, CurveError> {
                match cell(c) {
                    "" => Ok(None),
                    v => v
                        .parse()
                        .map(Some)
                        .map_err(|_| bad(format!("line {line}: `{c}` is `{v}`, not a number"))),
                }
            };
            let spec = cell("target");
            let t = Target::parse(spec)
                .ok_or_else(|| bad(format!("line {line}: target `{spec}` is not a target")))?;
            target.get_or_insert(t);
            let phase = Phase::parse(cell("phase"))
                .ok_or_else(|| bad(format!("line {line}: unknown phase `{}`", cell("phase"))))?;
            points.push(Point {
                phase,
                offered: num("offered_rate")?,
                sample: Sample {
                    achieved: num("achieved_rate")?.unwrap_or(0.0),
                    lat: Latencies {
                        avg: num("lat_avg")?,
                        p95: num("lat_p95")?,
                        p99: num("lat_p99")?,
                        max: num("lat_max")?,
                    },
                    dropped: num("dropped")?.unwrap_or(0.0),
                    seconds: num("seconds")?.unwrap_or(0.0),
                },
                pass: match cell("pass") {
                    "yes" => Some(true),
                    "no" => Some(false),
                    _ => None,
                },
                run_dir: PathBuf::from(cell("run_dir")),
            });
        }
        let target = target.ok_or_else(|| bad("no probe: the file has no rows".into()))?;
        Ok(Curve { target, points })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A point at `offered` (closed loop: 91/s) that achieved 1/s less, with its p99.
    pub(crate) fn point(phase: Phase, offered: Option<f64>, p99: f64, pass: Option<bool>) -> Point {
        Point {
            phase,
            offered,
            sample: Sample {
                achieved: offered.unwrap_or(91.0) - 1.0,
                lat: Latencies {
                    p99: Some(p99),
                    ..Latencies::default()
                },
                dropped: 0.0,
                seconds: 4.0,
            },
            pass,
            run_dir: PathBuf::from(format!("r/{}", phase.as_str())),
        }
    }

    #[test]
    fn the_curve_reads_back_as_written_and_names_its_answer() {
        let curve = Curve {
            target: Target::parse("p99<200ms").unwrap(),
            points: vec![
                point(Phase::ClosedLoop, None, 11.0, None),
                point(Phase::Bracket, Some(91.0), 247.0, Some(false)),
                point(Phase::Bracket, Some(46.0), 45.0, Some(true)),
                point(Phase::Confirm, Some(80.0), 300.0, Some(false)),
                point(Phase::Confirm, Some(80.0), 250.0, Some(false)),
                point(Phase::Confirm, Some(77.0), 120.0, Some(true)),
                point(Phase::Confirm, Some(77.0), 130.0, Some(true)),
            ],
        };
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(CAPACITY_FILE), curve.to_csv()).unwrap();
        let back = Curve::read(tmp.path()).unwrap();
        assert_eq!(back, curve);
        let (rate, reps) = back.found().unwrap();
        assert_eq!(rate, 77.0);
        assert_eq!(reps.len(), 2);
        assert_eq!(back.closed_loop(), Some(90.0));
        let none = Curve {
            points: curve.points[..3].to_vec(),
            ..curve
        };
        assert!(none.found().is_none());
    }

    #[test]
    fn a_file_that_is_not_a_curve_is_refused_with_its_path_and_line() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(CAPACITY_FILE);
        std::fs::write(&path, "a,b\n1,2\n").unwrap();
        let e = Curve::read(tmp.path()).unwrap_err().to_string();
        assert!(e.contains("no `phase` column"), "{e}");
        std::fs::write(
            &path,
            "phase,offered_rate,achieved_rate,lat_p99,target\nbisect,10,9,x,p99<5ms\n",
        )
        .unwrap();
        let e = Curve::read(tmp.path()).unwrap_err().to_string();
        assert!(e.contains("line 2: `lat_p99` is `x`"), "{e}");
        assert!(e.contains(&path.display().to_string()), "{e}");
    }
}
