//! Per-transaction results of custom workloads (#15) through the real binary: run directories
//! written by the results writer from synthetic outcomes (no engine, no server), then
//! `sbsuite compare --metric TXN.METRIC` / `--metric tpmC` / gates on them, and the
//! per-transaction table of `sbsuite report` in every format.

use crate::common;

use std::path::{Path, PathBuf};

use chrono::{TimeZone, Utc};
use hdrhistogram::Histogram;
use indexmap::IndexMap;
use sbsuite::engine::custom::model::{Def, Headline, Vars};
use sbsuite::engine::spec::WorkloadSpec;
use sbsuite::engine::{HEADLINE, LatencySummary, SqlCounters, StepOutcome, TxnStats};
use sbsuite::plan::{Plan, Step, StepKind};
use sbsuite::results::{ResultStore, RowStatus, RunRow};
use sbsuite::value::{Options, Value};

use common::sbsuite;

/// The custom workload `orders` (headline `tpmC`), as loading a suite that declares it makes.
fn orders() -> &'static WorkloadSpec {
    let def = Def {
        name: "orders".into(),
        summary: String::new(),
        source: "orders.toml".into(),
        options: Vec::new(),
        headline: Some(Headline {
            name: "tpmC".into(),
            transaction: 0,
            per_secs: 60.0,
        }),
        prepare_threads: 0,
        schema: Vec::new(),
        after_load: Vec::new(),
        cleanup: Vec::new(),
        init: Vec::new(),
        load: Vec::new(),
        fresh_per_run: false,
        checks: Vec::new(),
        vars: Vars {
            names: Vec::new(),
            kinds: Vec::new(),
        },
        params: Vec::new(),
        transactions: Vec::new(),
        statements: Vec::new(),
    };
    sbsuite::engine::custom::spec_for(def)
}

fn histogram(ms: f64, n: u64) -> Histogram<u64> {
    let mut h = Histogram::<u64>::new(3).unwrap();
    h.record_n((ms * 1e6) as u64, n).unwrap();
    h
}

/// A run step of `orders` whose new_order transactions all took `new_order_ms`, with
/// headline `tpm`.
fn outcome(new_order_ms: f64, tpm: f64) -> StepOutcome {
    StepOutcome {
        error_codes: Default::default(),
        seconds: 10.0,
        events: 300,
        sql: Some(SqlCounters {
            transactions: 300,
            reads: 900,
            writes: 600,
            ..Default::default()
        }),
        latency: LatencySummary {
            avg_ms: 5.0,
            p50_ms: 5.0,
            p95_ms: 9.0,
            p99_ms: 12.0,
            max_ms: 20.0,
            percentile: 95.0,
            pct_ms: 9.0,
            ..Default::default()
        },
        fairness_events_avg: 0.0,
        fairness_events_stddev: 0.0,
        fairness_time_avg: 0.0,
        fairness_time_stddev: 0.0,
        histogram: histogram(5.0, 300),
        interrupted: false,
        cut_short: None,
        metrics: vec![(HEADLINE, tpm)],
        per_thread: Vec::new(),
        phases: Vec::new(),
        groups: Vec::new(),
        transactions: vec![
            TxnStats {
                name: "new_order".into(),
                statement: false,
                count: 150,
                errors: 0,
                rollbacks: 2,
                histogram: histogram(new_order_ms, 150),
            },
            TxnStats {
                name: "payment".into(),
                statement: false,
                count: 150,
                errors: 1,
                rollbacks: 0,
                histogram: histogram(2.0, 150),
            },
            TxnStats {
                name: "new_order.1".into(),
                statement: true,
                count: 150,
                errors: 0,
                rollbacks: 0,
                histogram: histogram(1.0, 150),
            },
        ],
        steady: Default::default(),
        open_loop: None,
    }
}

fn step(orders: &'static WorkloadSpec, index: usize, variant: &str, repetition: u32) -> Step {
    let mut params = IndexMap::new();
    params.insert("threads".into(), Value::Int(4));
    let mut options = Options::default();
    options.0.insert("threads".into(), Value::Int(4));
    Step {
        index,
        kind: StepKind::Run,
        name: format!("orders {variant} r{repetition}"),
        variant: variant.into(),
        workload: "orders".into(),
        spec: Some(orders),
        dataset: 1,
        repetition,
        params,
        options,
        command: None,
        estimated_seconds: Some(10.0),
        phases: Vec::new(),
        groups: Vec::new(),
        target: None,
    }
}

/// A run directory under `root/<suite>/` with a step per (variant, new_order ms, tpm):
/// repetitions numbered per variant.
fn write_run(root: &Path, suite: &str, second: u32, steps: &[(&str, f64, f64)]) -> PathBuf {
    let orders = orders();
    let mut reps: IndexMap<&str, u32> = IndexMap::new();
    let planned: Vec<Step> = steps
        .iter()
        .enumerate()
        .map(|(i, (variant, _, _))| {
            let rep = reps.entry(variant).or_default();
            *rep += 1;
            step(orders, i + 1, variant, *rep)
        })
        .collect();
    let plan = Plan {
        suite: suite.into(),
        axes: vec!["threads".into()],
        steps: planned.clone(),
        target: None,
        variant_order: Default::default(),
        order_seed: None,
        dataset: Default::default(),
    };
    let now = Utc.with_ymd_and_hms(2026, 12, 1, 10, 0, second).unwrap();
    let mut store = ResultStore::create(root, &plan, "[suite]\n", now).unwrap();
    for (s, (_, ms, tpm)) in planned.iter().zip(steps) {
        let o = outcome(*ms, *tpm);
        store
            .write_run(&RunRow {
                step: s,
                started_at: now,
                status: RowStatus::Ok,
                outcome: Some(&o),
                error: None,
                knee: None,
            })
            .unwrap();
    }
    store.dir().to_path_buf()
}

const FAST: [f64; 6] = [10.0, 10.2, 9.8, 10.1, 9.9, 10.05];
const SLOW: [f64; 6] = [15.0, 15.3, 14.8, 15.1, 14.9, 15.2];
const TPM_A: [f64; 6] = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1002.0];
const TPM_B: [f64; 6] = [800.0, 810.0, 790.0, 805.0, 795.0, 802.0];

/// Two runs of six repetitions: B's new_order is 50 % slower and its tpmC 20 % lower.
fn two_runs(root: &Path) -> (PathBuf, PathBuf) {
    let steps = |ms: [f64; 6], tpm: [f64; 6]| -> Vec<(&str, f64, f64)> {
        ms.iter()
            .zip(tpm)
            .map(|(m, t)| ("default", *m, t))
            .collect()
    };
    (
        write_run(root, "orders", 1, &steps(FAST, TPM_A)),
        write_run(root, "orders", 2, &steps(SLOW, TPM_B)),
    )
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = sbsuite().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The table line of `metric` (`<key>  <metric>  …`).
fn line<'a>(text: &'a str, metric: &str) -> &'a str {
    text.lines()
        .find(|l| l.split_whitespace().nth(3) == Some(metric))
        .unwrap_or_else(|| panic!("no line of {metric} in:\n{text}"))
}

#[test]
fn the_writer_stores_a_row_per_step_and_transaction_with_the_headline() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_run(dir.path(), "orders", 1, &[("default", 10.0, 1000.0)]);
    let text = std::fs::read_to_string(a.join("transactions.csv")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "run_id,step,name,variant,workload,threads,repetition,transaction,kind,count,errors,\
         rollbacks,rate,lat_avg_ms,lat_p50_ms,lat_p95_ms,lat_p99_ms,lat_max_ms"
    );
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines[1].starts_with(
            "20261201-100001,1,orders default r1,default,orders,4,1,new_order,transaction,150,0,2,15,"
        ),
        "{text}"
    );
    assert!(lines[3].contains(",new_order.1,statement,150,"), "{text}");
    let results = std::fs::read_to_string(a.join("results.csv")).unwrap();
    // By name: the columns around these grow with every issue (#30: `threads_peak`, the
    // fault columns, `phase`, `target_rate`, the open-loop columns; #31: `group` last).
    let header: Vec<&str> = results.lines().next().unwrap().split(',').collect();
    let row: Vec<&str> = results.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(header.len(), row.len(), "{results}");
    let cell = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
    let at = |name: &str| header.iter().position(|h| *h == name).unwrap();
    assert!(at("headline") < at("status") && at("status") < at("headline_name"));
    assert_eq!(header.last(), Some(&"group"), "{results}");
    assert_eq!(
        [
            "headline",
            "shards",
            "status",
            "error",
            "headline_name",
            "warmup_s",
            "steady"
        ]
        .map(cell),
        ["1000", "", "ok", "", "tpmC", "0", "unknown"],
        "{results}"
    );
    // No `rate`: the open-loop columns (#30) are empty.
    assert!(
        header[at("service_p50")..]
            .iter()
            .all(|h| cell(h).is_empty()),
        "{results}"
    );
    assert!(
        a.join("histograms/1-orders_default_r1/new_order.hdr")
            .is_file()
    );
}

#[test]
fn compare_on_a_transaction_metric_and_on_the_headline_between_two_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_runs(dir.path());

    let (code, out, err) = run(&["compare", s(&a), s(&b), "--metric", "new_order.p95"]);
    assert_eq!(code, 0, "{err}");
    let l = line(&out, "new_order.p95");
    assert!(l.contains("+50.") && l.ends_with("worse"), "{l}");
    assert!(!out.contains(" tps "), "only the metric asked for: {out}");

    // The headline by its own name, by `headline`, and among the defaults.
    for m in ["tpmC", "headline"] {
        let (code, out, err) = run(&["compare", s(&a), s(&b), "--metric", m]);
        assert_eq!(code, 0, "{err}");
        let l = line(&out, "tpmC");
        assert!(l.contains("-20.") && l.ends_with("worse"), "{m}: {l}");
    }
    let (_, out, _) = run(&["compare", s(&a), s(&b)]);
    assert!(line(&out, "tpmC").ends_with("worse"), "{out}");
    assert!(line(&out, "tps").ends_with('~'), "{out}");

    // Several at once, and JSON.
    let (code, out, err) = run(&[
        "compare",
        s(&a),
        s(&b),
        "--metric",
        "payment.errors,new_order.rollbacks",
        "--metric",
        "new_order.1.avg",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let metrics: Vec<&str> = v["comparisons"][0]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["metric"].as_str().unwrap())
        .collect();
    assert_eq!(
        metrics,
        ["payment.errors", "new_order.rollbacks", "new_order.1.avg"]
    );
}

#[test]
fn gates_take_transaction_metrics_and_the_headline() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_runs(dir.path());
    for (gate, crossed) in [
        ("new_order.p95:+10%", "new_order.p95:+10% crossed (+50."),
        ("tpmC:-5%", "tpmC:-5% crossed (-20."),
        ("headline:-5%", "tpmC:-5% crossed (-20."),
    ] {
        let (code, _, err) = run(&["compare", s(&a), s(&b), "--fail-on", gate]);
        assert_eq!(code, 1, "{gate}: {err}");
        assert!(
            err.contains("gate failed:") && err.contains(crossed),
            "{gate}: {err}"
        );
    }
    let (code, _, err) = run(&["compare", s(&b), s(&a), "--fail-on", "new_order.p95:+10%"]);
    assert_eq!(code, 0, "faster passes: {err}");
}

#[test]
fn by_variant_compares_transaction_metrics_inside_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let steps: Vec<(&str, f64, f64)> = FAST
        .iter()
        .zip(TPM_A)
        .map(|(m, t)| ("baseline", *m, t))
        .chain(SLOW.iter().zip(TPM_B).map(|(m, t)| ("tuned", *m, t)))
        .collect();
    let r = write_run(dir.path(), "variants", 3, &steps);
    let (code, out, err) = run(&[
        "compare",
        s(&r),
        "--by",
        "variant",
        "--metric",
        "new_order.p95,tpmC",
        "--fail-on",
        "new_order.p95:+10%",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        out.starts_with("variant=baseline → variant=tuned\n"),
        "{out}"
    );
    let l = out
        .lines()
        .find(|l| l.starts_with("workload=orders threads=4") && l.contains("new_order.p95"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(l.contains("+50."), "{l}");
    assert!(out.contains("tpmC"), "{out}");
}

#[test]
fn an_unknown_transaction_or_measure_is_an_error_naming_what_exists() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_runs(dir.path());
    let (code, _, err) = run(&["compare", s(&a), s(&b), "--metric", "neworder.p95"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("no transaction or statement `neworder`")
            && err.contains("use one of new_order, payment, new_order.1"),
        "{err}"
    );
    let (code, _, err) = run(&["compare", s(&a), s(&b), "--metric", "new_order.p42"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("`p42` is not a measure") && err.contains("count, rate, errors"),
        "{err}"
    );
    let (code, _, err) = run(&["compare", s(&a), s(&b), "--fail-on", "speed:-5%"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--fail-on: `speed` is not a metric") && err.contains("tpmC"),
        "{err}"
    );
    // Runs of built-in workloads have no transactions.csv.
    let fx = "tests/fixtures/compare";
    let (code, _, err) = run(&[
        "compare",
        &format!("{fx}/baseline"),
        &format!("{fx}/relaxed"),
        "--metric",
        "new_order.p95",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("they have no transactions.csv"), "{err}");
}

#[test]
fn report_shows_the_transactions_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = two_runs(dir.path());
    let (code, out, err) = run(&["report", s(&a), "--format", "text"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("Transactions of orders/20261201-100001:\n"),
        "{out}"
    );
    let head = out.lines().nth(1).unwrap();
    assert!(
        head.starts_with("step  name")
            && head.contains("transaction  kind")
            && head.ends_with("max (ms)"),
        "{head}"
    );
    assert_eq!(out.lines().count(), 2 + 6 * 3, "{out}");
    assert!(out.contains("new_order.1  statement"), "{out}");

    let (code, out, _) = run(&["report", s(&a), "--format", "markdown"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("| step | name | variant | rep | transaction | kind |"),
        "{out}"
    );
    assert!(
        out.contains("| new_order | transaction | 150 | 0 | 2 | 15 |"),
        "{out}"
    );

    let (code, out, _) = run(&["report", s(&a), "--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v[0]["headline"], "tpmC");
    assert_eq!(v[0]["rows"].as_array().unwrap().len(), 18);
    assert_eq!(v[0]["rows"][0]["transaction"], "new_order");
    assert_eq!(v[0]["rows"][0]["lat_p95_ms"], "10.002431");

    let page = dir.path().join("page.html");
    let (code, _, err) = run(&["report", s(&a), "--out", s(&page)]);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<h2 id=\"transactions\">Transactions</h2>"),
        "{html}"
    );
    assert!(
        html.contains("<td>new_order.1</td><td>statement</td>"),
        "{html}"
    );
    assert!(
        html.contains("<th>tpmC</th>"),
        "the headline in the results table"
    );

    // A run of a built-in workload has no table: said, exit 2.
    let (code, _, err) = run(&[
        "report",
        "tests/fixtures/compare/baseline",
        "--format",
        "text",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("no transactions.csv"), "{err}");
}
