//! `stop_when` threshold sweeps: stop raising an axis once a run meets a condition.
//!
//! A *sweep* is the runs that differ only in the axis: same variant, repetition and every
//! other matrix value. Runs execute in plan order, so each sweep sees its axis values in the
//! order the matrix lists them; after each run the conditions are checked against the run
//! (latency limits) or against the sweep's previous run (gains). When one holds, the sweep's
//! later runs are skipped and the previous value is its *knee*: the last value where throughput
//! still grew enough and latency stayed within the limit.

use std::collections::HashMap;

use crate::engine::StepOutcome;
use crate::plan::Step;
use crate::results::load::Row;
use crate::suite::StopWhen;

/// The state of every sweep of a run.
#[derive(Default)]
pub struct Sweeps {
    conds: Vec<StopWhen>,
    /// Per (condition, sweep): the previous run's axis value, tps and qps.
    prev: HashMap<(usize, String), (String, f64, Option<f64>)>,
    /// Per (condition, sweep): the knee text once stopped.
    stopped: HashMap<(usize, String), String>,
    /// Knees in the order they were found, for the end-of-suite report.
    pub knees: Vec<String>,
}

/// What the conditions read of a run: its rate (tps, or eps without SQL), qps and latencies.
#[derive(Clone, Copy)]
struct Measured {
    tps: f64,
    qps: Option<f64>,
    p95_ms: f64,
    p99_ms: f64,
    avg_ms: f64,
}

impl Measured {
    /// A results.csv row of an `ok` run (the columns `observe` would have computed).
    fn of_row(row: &Row) -> Option<Measured> {
        if row.get("status") != "ok" {
            return None;
        }
        Some(Measured {
            tps: row.num("tps").or_else(|| row.num("eps"))?,
            qps: row.num("qps"),
            p95_ms: row.num("lat_p95")?,
            p99_ms: row.num("lat_p99")?,
            avg_ms: row.num("lat_avg")?,
        })
    }
}

fn pct(new: f64, old: f64) -> Option<f64> {
    (old > 0.0).then(|| (new - old) / old * 100.0)
}

impl Sweeps {
    pub fn new(conds: Vec<StopWhen>) -> Sweeps {
        Sweeps {
            conds,
            ..Default::default()
        }
    }

    /// The sweep of `step` along `axis`, or `None` when the step has no such axis value.
    fn key(step: &Step, axis: &str) -> Option<String> {
        crate::plan::sweep_key(&step.variant, step.repetition, &step.params, axis)
    }

    /// Why `step` is not run: its sweep stopped at a knee.
    pub fn stopped(&self, step: &Step) -> Option<&str> {
        self.conds.iter().enumerate().find_map(|(i, c)| {
            let key = Self::key(step, &c.axis)?;
            self.stopped.get(&(i, key)).map(String::as_str)
        })
    }

    /// Records a finished run; returns the knee text when it stops its sweep.
    pub fn observe(&mut self, step: &Step, o: &StepOutcome) -> Option<String> {
        let secs = o.seconds.max(1e-9);
        let measured = Measured {
            tps: match &o.sql {
                Some(sql) => sql.transactions as f64 / secs,
                None => o.events as f64 / secs,
            },
            qps: o
                .sql
                .as_ref()
                .map(|s| (s.reads + s.writes + s.other) as f64 / secs),
            p95_ms: o.latency.p95_ms,
            p99_ms: o.latency.p99_ms,
            avg_ms: o.latency.avg_ms,
        };
        self.observe_measured(step, &measured)
    }

    /// `--resume`: the sweeps as the stopped run left them, from its `ok` rows (`rows`: the
    /// results.csv rows by step index), fed in plan order, so a sweep that had found its knee
    /// stays stopped instead of running the values it skipped (#14). The knees found again are
    /// listed at the end of the suite, as the run found them.
    pub fn replay(&mut self, plan: &crate::plan::Plan, rows: &HashMap<usize, Row>) {
        if self.conds.is_empty() {
            return;
        }
        for step in &plan.steps {
            if let Some(m) = rows.get(&step.index).and_then(Measured::of_row) {
                self.observe_measured(step, &m);
            }
        }
    }

    fn observe_measured(&mut self, step: &Step, m: &Measured) -> Option<String> {
        let Measured {
            tps,
            qps,
            p95_ms,
            p99_ms,
            avg_ms,
        } = *m;
        let mut knee = None;
        for (i, c) in self.conds.iter().enumerate() {
            let Some(key) = Self::key(step, &c.axis) else {
                continue;
            };
            let value = step
                .params
                .get(&c.axis)
                .map(|v| v.to_string())
                .unwrap_or_default();
            let prev = self.prev.get(&(i, key.clone()));
            let mut why: Option<String> = None;
            if let (Some(limit), Some((_, ptps, _))) = (c.tps_gain_below, prev)
                && let Some(g) = pct(tps, *ptps)
                && g < limit
            {
                why = Some(format!("tps {g:+.1}% < {limit}%"));
            }
            if why.is_none()
                && let (Some(limit), Some((_, _, Some(pq))), Some(q)) =
                    (c.qps_gain_below, prev, qps)
                && let Some(g) = pct(q, *pq)
                && g < limit
            {
                why = Some(format!("qps {g:+.1}% < {limit}%"));
            }
            for (name, limit, got) in [
                ("p95", c.p95_above, p95_ms),
                ("p99", c.p99_above, p99_ms),
                ("avg latency", c.avg_above, avg_ms),
            ] {
                if why.is_none()
                    && let Some(limit) = limit
                    && got > limit
                {
                    why = Some(format!("{name} {got:.2} ms > {limit} ms"));
                }
            }
            match why {
                Some(why) => {
                    let at = match prev {
                        Some((v, _, _)) => format!("{}={v}", c.axis),
                        None => format!("{} below {value}", c.axis),
                    };
                    let text = format!("{at} ({why} at {}={value})", c.axis);
                    self.knees.push(format!("{}: knee {text}", step.name));
                    self.stopped.insert((i, key), text.clone());
                    knee.get_or_insert(text);
                }
                None => {
                    self.prev.insert((i, key), (value, tps, qps));
                }
            }
        }
        knee
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{LatencySummary, SqlCounters};
    use crate::plan::StepKind;
    use crate::value::{Options, Value};
    use indexmap::IndexMap;

    fn step(workload: &str, threads: i64) -> Step {
        let mut params = IndexMap::new();
        params.insert("workload".into(), Value::Str(workload.into()));
        params.insert("threads".into(), Value::Int(threads));
        Step {
            index: 0,
            kind: StepKind::Run,
            name: format!("{workload}-t{threads}"),
            variant: "v".into(),
            workload: workload.into(),
            spec: crate::engine::Catalog::builtin().workload(workload),
            dataset: 1,
            repetition: 1,
            params,
            options: Options::default(),
            command: None,
            estimated_seconds: None,
            phases: Vec::new(),
            groups: Vec::new(),
            target: None,
        }
    }

    fn outcome(tps: f64, p95: f64) -> StepOutcome {
        StepOutcome {
            error_codes: Default::default(),
            seconds: 10.0,
            events: (tps * 10.0) as u64,
            sql: Some(SqlCounters {
                transactions: (tps * 10.0) as u64,
                reads: (tps * 140.0) as u64,
                ..Default::default()
            }),
            latency: LatencySummary {
                p95_ms: p95,
                ..Default::default()
            },
            fairness_events_avg: 0.0,
            fairness_events_stddev: 0.0,
            fairness_time_avg: 0.0,
            fairness_time_stddev: 0.0,
            histogram: hdrhistogram::Histogram::new(3).unwrap(),
            interrupted: false,
            cut_short: None,
            metrics: Vec::new(),
            transactions: Vec::new(),
            per_thread: Vec::new(),
            steady: Default::default(),
            phases: Vec::new(),
            groups: Vec::new(),
            open_loop: None,
        }
    }

    #[test]
    fn a_sweep_stops_where_tps_stops_growing_and_others_go_on() {
        let mut s = Sweeps::new(vec![StopWhen {
            axis: "threads".into(),
            tps_gain_below: Some(5.0),
            p95_above: Some(50.0),
            ..Default::default()
        }]);
        assert_eq!(s.observe(&step("ro", 8), &outcome(1000.0, 5.0)), None);
        assert_eq!(s.observe(&step("ro", 16), &outcome(1900.0, 8.0)), None);
        let knee = s.observe(&step("ro", 32), &outcome(1950.0, 12.0)).unwrap();
        assert_eq!(knee, "threads=16 (tps +2.6% < 5% at threads=32)");
        assert_eq!(s.stopped(&step("ro", 64)), Some(knee.as_str()));
        // Another sweep (other workload) is not affected, and stops on latency.
        assert_eq!(s.stopped(&step("rw", 64)), None);
        assert_eq!(s.observe(&step("rw", 8), &outcome(500.0, 20.0)), None);
        let knee = s.observe(&step("rw", 16), &outcome(900.0, 61.5)).unwrap();
        assert_eq!(knee, "threads=8 (p95 61.50 ms > 50 ms at threads=16)");
        assert_eq!(s.knees.len(), 2);
        // The first value already over the limit: no knee inside the sweep.
        let mut s = Sweeps::new(vec![StopWhen {
            axis: "threads".into(),
            p95_above: Some(1.0),
            ..Default::default()
        }]);
        let knee = s.observe(&step("ro", 8), &outcome(1000.0, 5.0)).unwrap();
        assert_eq!(knee, "threads below 8 (p95 5.00 ms > 1 ms at threads=8)");
    }
}
