use std::path::Path;

use proptest::prelude::*;

use super::*;
use crate::suite::{self, Axis, Matrix};

fn plan(text: &str) -> Plan {
    let s = suite::load_text(Path::new("t.toml"), text, &[], &[]).unwrap_or_else(|e| panic!("{e}"));
    build(&s).unwrap_or_else(|e| panic!("{e}"))
}

fn kinds(p: &Plan) -> Vec<&'static str> {
    p.steps.iter().map(|s| s.kind.as_str()).collect()
}

const OLTP: &str = r#"[suite]
name = "ob"
[target]
driver = "mysql"
[defaults]
time = 60
tables = 30
table_size = 1_000_000
[matrix]
workload = ["oltp_read_only", "oltp_write_only", "oltp_read_write"]
threads = { from = 32, to = 1024, factor = 2 }
"#;

#[test]
fn oltp_without_target_uses_the_default_sqlite_file() {
    let no_target = OLTP.replace("[target]\ndriver = \"mysql\"\n", "");
    let p = plan(&no_target);
    let t = p.steps[0].target.as_ref().expect("a target");
    assert_eq!(t.driver.name(), "sqlite");
    assert_eq!(t.sqlite.path, crate::db::DEFAULT_SQLITE_PATH);
    let text = render_text(&p, "t.toml");
    assert!(
        text.contains("Target: sqlite sbtest.db (journal_mode wal, synchronous normal, busy_timeout 5000 ms), the default: the suite has no [target]\n"),
        "{text}"
    );
    assert!(render_json(&p, "t.toml").contains("\"target\": \"sqlite sbtest.db"));
    let mysql = plan(OLTP);
    assert_eq!(
        mysql.target.as_deref(),
        Some("mysql 127.0.0.1:3306, database sbtest, user sbtest")
    );
    let cpu = plan("[suite]\nname = \"c\"\n[defaults]\nworkload = \"cpu\"\n");
    assert!(cpu.target.is_none() && cpu.steps[0].target.is_none());
    assert!(!render_text(&cpu, "t.toml").contains("Target:"));
}

/// #26: `[suite] dataset = "existing"` plans no prepare and no cleanup; the runs keep their
/// datasets (checks, hooks and the existing-data check go by them), `plan` says so, and the
/// stored plan.json of a default suite is unchanged (no `dataset` key: old runs resume).
#[test]
fn an_existing_dataset_is_neither_prepared_nor_cleaned_up() {
    let p = plan(&OLTP.replace("name = \"ob\"", "name = \"ob\"\ndataset = \"existing\""));
    assert_eq!(p.steps.len(), 18);
    assert!(
        p.steps
            .iter()
            .all(|s| s.kind == StepKind::Run && s.dataset == 1)
    );
    let text = render_text(&p, "t.toml");
    assert!(text.contains("(0 prepare, 18 run, 0 cleanup)"), "{text}");
    assert!(text.contains("\nDataset: existing ("), "{text}");
    assert!(render_json(&p, "t.toml").contains("\"dataset\": \"existing\""));
    assert!(
        serde_json::to_string(&p)
            .unwrap()
            .contains("\"dataset\":\"existing\"")
    );
    let prepared = plan(OLTP);
    assert!(
        !serde_json::to_string(&prepared)
            .unwrap()
            .contains("\"dataset\":\"")
    );
}

#[test]
fn oltp_sweep_prepares_once() {
    let p = plan(OLTP);
    let k = kinds(&p);
    assert_eq!(k.len(), 20);
    assert_eq!(k[0], "prepare");
    assert!(k[1..19].iter().all(|k| *k == "run"));
    assert_eq!(k[19], "cleanup");
    let names: Vec<&str> = p.steps[1..7].iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "oltp_read_only-t32",
            "oltp_read_only-t64",
            "oltp_read_only-t128",
            "oltp_read_only-t256",
            "oltp_read_only-t512",
            "oltp_read_only-t1024"
        ]
    );
    assert_eq!(p.steps[7].name, "oltp_write_only-t32");
    assert!(p.steps.iter().all(|s| s.dataset == 1));
    assert_eq!(
        p.steps.iter().map(|s| s.index).collect::<Vec<_>>(),
        (1..=20).collect::<Vec<_>>()
    );
    assert_eq!(p.steps[1].options.int("table_size"), 1_000_000);
    assert_eq!(
        p.steps[1].options.int("point_selects"),
        10,
        "spec default filled in"
    );
    assert_eq!(p.steps[1].estimated_seconds, Some(60.0));
}

#[test]
fn data_keys_split_datasets_and_run_keys_do_not() {
    let text = OLTP.replace(
        "threads = { from = 32, to = 1024, factor = 2 }",
        "table_size = [1000, 2000]\nthreads = [1, 2]\nrange_size = [10, 100]",
    );
    let p = plan(&text);
    // 2 datasets × (1 prepare + 3 workloads × 2 threads × 2 range sizes + 1 cleanup)
    assert_eq!(p.steps.len(), 2 * (1 + 12 + 1));
    assert_eq!(p.steps[0].name, "sbtest (table_size=1000)");
    assert_eq!(kinds(&p).iter().filter(|k| **k == "prepare").count(), 2);
    assert_eq!(p.steps[13].kind, StepKind::Cleanup);
    assert_eq!(p.steps[14].options.int("table_size"), 2000);
}

#[test]
fn fresh_prepare_per_run_for_workloads_that_change_rows() {
    let text = OLTP
        .replace(
            "[\"oltp_read_only\", \"oltp_write_only\", \"oltp_read_write\"]",
            "[\"oltp_delete\"]",
        )
        .replace(
            "threads = { from = 32, to = 1024, factor = 2 }",
            "threads = [1, 2]",
        );
    assert_eq!(
        kinds(&plan(&text)),
        ["prepare", "run", "cleanup", "prepare", "run", "cleanup"]
    );
}

#[test]
fn a_run_after_a_fresh_per_run_workload_is_prepared_by_its_own_workload() {
    // oltp_insert with auto_inc off prepares empty tables: read_write must not reuse that.
    let text = OLTP
        .replace(
            "[\"oltp_read_only\", \"oltp_write_only\", \"oltp_read_write\"]",
            "[\"oltp_insert\", \"oltp_read_write\", \"oltp_read_only\"]",
        )
        .replace(
            "threads = { from = 32, to = 1024, factor = 2 }",
            "threads = 1\nauto_inc = false",
        );
    let p = plan(&text);
    let steps: Vec<(&str, &str)> = p
        .steps
        .iter()
        .map(|s| (s.kind.as_str(), s.workload.as_str()))
        .collect();
    assert_eq!(
        steps,
        [
            ("prepare", "oltp_insert"),
            ("run", "oltp_insert"),
            ("cleanup", "oltp_insert"),
            ("prepare", "oltp_read_write"),
            ("run", "oltp_read_write"),
            ("run", "oltp_read_only"),
            ("cleanup", "oltp_read_write"),
        ]
    );
}

#[test]
fn cpu_has_no_data_steps_and_repeat_repeats_the_sweep() {
    let text = "[suite]\nname = \"c\"\nrepeat = 2\n[defaults]\ntime = 1\n[matrix]\nworkload = \"cpu\"\nthreads = [1, 2]\n";
    let p = plan(text);
    let names: Vec<String> = p
        .steps
        .iter()
        .map(|s| format!("{}#{}", s.name, s.repetition))
        .collect();
    assert_eq!(
        names,
        ["cpu-t1-r1#1", "cpu-t2-r1#1", "cpu-t1-r2#2", "cpu-t2-r2#2"]
    );
}

#[test]
fn axes_that_do_not_apply_to_a_workload_do_not_multiply_its_runs() {
    let text = "[suite]\nname = \"s\"\n[defaults]\ntime = 1\n[matrix]\nworkload = [\"cpu\", \"memory\"]\nmemory_block_size = [\"1K\", \"1M\"]\nthreads = [1, 2]\n";
    let names: Vec<String> = plan(text).steps.iter().map(|s| s.name.clone()).collect();
    assert_eq!(
        names,
        [
            "cpu-t1",
            "cpu-t2",
            "memory-memory_block_size1K-t1",
            "memory-memory_block_size1K-t2",
            "memory-memory_block_size1M-t1",
            "memory-memory_block_size1M-t2"
        ]
    );
    let p = plan(text);
    assert_eq!(
        p.steps[0].params["memory_block_size"],
        crate::value::Value::Str(String::new())
    );
    assert_eq!(
        p.steps[2].params["memory_block_size"],
        crate::value::Value::Int(1024)
    );
}

#[test]
fn exclude_include_and_zip() {
    let text = r#"[suite]
name = "z"
step_name = "{{ workload }}/{{ threads }}/{{ cpu_max_prime }}/{{ variant }}"
[defaults]
time = 1
workload = "cpu"
[matrix]
threads = [1, 2, 4]
cpu_max_prime = [100, 200, 400]
zip = [["threads", "cpu_max_prime"]]
exclude = [{ threads = [2.0] }]
include = [{ threads = 8, cpu_max_prime = 800 }, { threads = 1, cpu_max_prime = 100 }]
[[variant]]
name = "a"
[[variant]]
name = "b"
"#;
    let names: Vec<String> = plan(text).steps.iter().map(|s| s.name.clone()).collect();
    assert_eq!(
        names,
        [
            "cpu/1/100/a",
            "cpu/4/400/a",
            "cpu/8/800/a",
            "cpu/1/100/b",
            "cpu/4/400/b",
            "cpu/8/800/b"
        ]
    );
}

#[test]
fn include_cells_fill_missing_axes_from_defaults() {
    let text = "[suite]\nname = \"c\"\n[defaults]\ntime = 1\nworkload = \"cpu\"\n[matrix]\nthreads = [1]\ncpu_max_prime = [100]\ninclude = [{ threads = 3 }]\n";
    let p = plan(text);
    assert_eq!(p.steps.len(), 2);
    assert_eq!(
        p.steps[1].params["cpu_max_prime"],
        crate::value::Value::Int(10000)
    );
    assert_eq!(p.axes, ["threads", "cpu_max_prime"]);
}

#[test]
fn plan_level_errors_point_at_their_key() {
    let bad = "[suite]\nname = \"c\"\n[defaults]\ntime = 0\n[matrix]\nworkload = [\"cpu\"]\n";
    let s = suite::load_text(Path::new("t.toml"), bad, &[], &[]).unwrap();
    let e = build(&s).unwrap_err();
    assert!(e.0[0].message.contains("would never end"), "{e}");
    assert!(e.to_string().contains("t.toml:4:8"), "{e}");

    let bad_tmpl =
        "[suite]\nname = \"c\"\nstep_name = \"{{ thread }}\"\n[defaults]\nworkload = \"cpu\"\n";
    let s = suite::load_text(Path::new("t.toml"), bad_tmpl, &[], &[]).unwrap();
    let e = build(&s).unwrap_err();
    assert!(e.to_string().contains("cannot render step_name"), "{e}");
    assert!(e.to_string().contains("t.toml:3:13"), "{e}");
}

#[test]
fn workloads_that_end_by_themselves_need_no_limit() {
    let text = "[suite]\nname = \"m\"\n[defaults]\ntime = 0\n[matrix]\nworkload = [\"mutex\", \"memory\"]\n";
    assert_eq!(plan(text).steps.len(), 2);
    let endless = text.replace(
        "[\"mutex\", \"memory\"]",
        "[\"memory\"]\nmemory_total_size = [0]",
    );
    let s = suite::load_text(Path::new("t.toml"), &endless, &[], &[]).unwrap();
    assert!(
        build(&s)
            .unwrap_err()
            .to_string()
            .contains("would never end")
    );
}

#[test]
fn json_plan_has_kinds() {
    let p = plan(OLTP);
    let v: serde_json::Value = serde_json::from_str(&render_json(&p, "t.toml")).unwrap();
    assert_eq!(v["steps"][0]["kind"], "prepare");
    assert_eq!(v["steps"][1]["kind"], "run");
    assert_eq!(v["steps"][19]["kind"], "cleanup");
    assert_eq!(v["estimated_seconds"], 1080.0);
    assert!(
        render_text(&p, "t.toml")
            .contains("20 steps (1 prepare, 18 run, 1 cleanup), estimated 18m00s")
    );
}

/// A custom workload `chk_orders` (an option `customers` that shapes its data, a schema, one
/// check) registered on this thread, as a suite's `[workloads.chk_orders]` would be.
/// A custom workload with a dataset option and a check, as a suite declares it.
const CHK_ORDERS: &str = r#"
[workloads.chk_orders]
summary = "orders with a check"
schema = ["CREATE TABLE chk_orders (id INT)"]
cleanup = ["DROP TABLE chk_orders"]
[workloads.chk_orders.options]
customers = { type = "int", default = 10, min = 1, max = 1000, dataset = true, help = "customers" }
[workloads.chk_orders.transactions.count]
steps = [{ sql = "SELECT count(*) FROM chk_orders" }]
[[workloads.chk_orders.checks]]
name = "empty"
sql = "SELECT count(*) FROM chk_orders"
expect = 0
"#;

#[test]
fn a_check_step_follows_the_runs_of_a_dataset_when_asked() {
    let suite = |check: &str| {
        format!(
            "[suite]\nname = \"c\"\n[defaults]\nworkload = \"chk_orders\"\ntime = 5\n{check}[matrix]\ncustomers = [10, 20]\nthreads = [1, 2]\n{CHK_ORDERS}"
        )
    };
    let p = plan(&suite("check = true\n"));
    assert_eq!(
        kinds(&p),
        [
            "prepare", "run", "run", "check", "cleanup", "prepare", "run", "run", "check",
            "cleanup"
        ]
    );
    let check = &p.steps[3];
    assert_eq!(
        (check.dataset, check.repetition, check.name.as_str()),
        (1, 0, "custom:chk_orders (customers=10)")
    );
    assert_eq!(check.options.int("customers"), 10);
    assert_eq!(p.steps[8].options.int("customers"), 20);
    let text = render_text(&p, "t.toml");
    assert!(
        text.contains("10 steps (2 prepare, 4 run, 2 check, 2 cleanup), estimated 20s + 6 step(s) of unknown length"),
        "{text}"
    );
    assert!(
        text.contains(
            " 4. check   custom:chk_orders (customers=10)  variant default  dataset 1  ~?\n"
        ),
        "{text}"
    );
    let v: serde_json::Value = serde_json::from_str(&render_json(&p, "t.toml")).unwrap();
    assert_eq!(v["steps"][3]["kind"], "check");

    // Off by default and when false: no check step, and the listing reads as before.
    for off in ["", "check = false\n"] {
        let p = plan(&suite(off));
        assert!(!kinds(&p).contains(&"check"), "{off}");
        assert!(render_text(&p, "t.toml").contains("(2 prepare, 4 run, 2 cleanup)"));
    }
    // As an axis: only the datasets whose runs ask for it get one.
    let p = plan(&suite("").replace("threads = [1, 2]", "threads = [1]\ncheck = [false, true]"));
    assert_eq!(
        kinds(&p),
        [
            "prepare", "run", "run", "check", "cleanup", "prepare", "run", "run", "check",
            "cleanup"
        ]
    );
    assert_eq!(
        p.steps[3].options.get("check"),
        Some(&crate::value::Value::Bool(true))
    );
}

fn int_axis(name: &str, n: usize) -> Axis {
    Axis {
        name: name.into(),
        values: (0..n as i64).map(crate::value::Value::Int).collect(),
    }
}

proptest! {
    /// The cross product has exactly the product of the axis lengths, no duplicates, and the
    /// first axis varies slowest.
    #[test]
    fn expansion_count_order_uniqueness(lens in proptest::collection::vec(1usize..5, 1..5)) {
        let names: Vec<String> = (0..lens.len()).map(|i| format!("a{i}")).collect();
        let m = Matrix { axes: names.iter().zip(&lens).map(|(n, l)| int_axis(n, *l)).collect(), ..Matrix::default() };
        let out = cells(&m);
        prop_assert_eq!(out.len(), lens.iter().product::<usize>());
        for (i, a) in out.iter().enumerate() {
            for b in &out[i + 1..] {
                prop_assert_ne!(a, b);
            }
        }
        // Lexicographic order over the axes' value indexes.
        let keys: Vec<Vec<i64>> = out.iter().map(|c| c.values().map(|v| v.as_i64().unwrap()).collect()).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        prop_assert_eq!(keys, sorted);
        prop_assert_eq!(cells(&m), out, "expansion is deterministic");
    }

    /// Excluding one value of an axis removes exactly its share of the cells.
    #[test]
    fn exclude_removes_matching_cells(lens in proptest::collection::vec(1usize..5, 1..4), pick in 0usize..5) {
        let names: Vec<String> = (0..lens.len()).map(|i| format!("a{i}")).collect();
        let mut m = Matrix { axes: names.iter().zip(&lens).map(|(n, l)| int_axis(n, *l)).collect(), ..Matrix::default() };
        let v = (pick % lens[0]) as i64;
        m.exclude.push([("a0".to_string(), crate::value::Value::Int(v))].into_iter().collect());
        let total: usize = lens.iter().product();
        prop_assert_eq!(cells(&m).len(), total - total / lens[0]);
    }

    /// Zipped axes advance together: the count divides by the zipped length.
    #[test]
    fn zip_moves_axes_together(n in 1usize..6, other in 1usize..4) {
        let m = Matrix {
            axes: vec![int_axis("a", n), int_axis("b", other), int_axis("c", n)],
            zip: vec![vec!["a".into(), "c".into()]],
            ..Matrix::default()
        };
        let out = cells(&m);
        prop_assert_eq!(out.len(), n * other);
        for c in &out {
            prop_assert_eq!(&c["a"], &c["c"]);
            prop_assert_eq!(c.keys().cloned().collect::<Vec<_>>(), vec!["a".to_string(), "b".into(), "c".into()]);
        }
    }
}

/// #13: `run --resume` rebuilds the plan from the run's stored suite.toml and refuses to go on
/// when it differs from plan.json; unsorted axes, a range axis written first and keys only the
/// environment or `--set` added must all come back in the same order.
#[test]
fn the_stored_suite_rebuilds_the_same_plan() {
    let text = OLTP.replace(
        "workload = [\"oltp_read_only\", \"oltp_write_only\", \"oltp_read_write\"]\nthreads = { from = 32, to = 1024, factor = 2 }",
        "threads = { from = 32, to = 1024, factor = 2 }\nworkload = [\"oltp_write_only\", \"oltp_read_only\"]\ntables = [30, 2]",
    );
    let env = [("SBSUITE_DEFAULTS__PERCENTILE".to_string(), "99".to_string())];
    let set = suite::SetOverride::parse("matrix.range_size=[100,10]").unwrap();
    let s = suite::load_text(Path::new("t.toml"), &text, &[set], &env).unwrap();
    let stored = suite::load_text(Path::new("suite.toml"), &s.resolved_toml, &[], &[]).unwrap();
    let json = |s: &suite::Suite| serde_json::to_string_pretty(&build(s).unwrap()).unwrap();
    assert_eq!(json(&stored), json(&s), "{}", s.resolved_toml);
    assert_eq!(
        build(&s).unwrap().axes,
        ["threads", "workload", "tables", "range_size"]
    );
}

#[test]
fn a_suite_run_forces_shutdown_by_default_unless_the_suite_sets_it() {
    let forced = |text: &str| -> Vec<String> {
        plan(text)
            .steps
            .iter()
            .map(|s| {
                s.options
                    .get("forced_shutdown")
                    .map(|v| v.to_string())
                    .unwrap_or_default()
            })
            .collect()
    };
    // 5 % of `time`, at least 10 s; per cell when `time` is an axis.
    let cpu =
        "[suite]\nname = \"c\"\n[defaults]\nworkload = \"cpu\"\n[matrix]\ntime = [5, 600, 1000]\n";
    assert_eq!(forced(cpu), ["10", "30", "50"]);
    assert_eq!(suite_forced_shutdown(0), None);
    assert_eq!(suite_forced_shutdown(201), Some(11), "rounded up");
    // The user's value wins, from [defaults] or the matrix, `off` included.
    let off = cpu.replace("[matrix]", "forced_shutdown = \"off\"\n[matrix]");
    assert_eq!(forced(&off), ["off", "off", "off"]);
    let axis = cpu.replace(
        "time = [5, 600, 1000]",
        "time = 5\nforced_shutdown = [\"1\", \"2%\"]",
    );
    assert_eq!(forced(&axis), ["1", "2%"]);
    // Without a time limit there is nothing to force: sysbench's default stays.
    let events = "[suite]\nname = \"c\"\n[defaults]\nworkload = \"cpu\"\ntime = 0\nevents = 100\n";
    assert_eq!(forced(events), ["off"]);
}

/// Two variants over two thread counts, repeated twice, in the given order.
fn ordered(order: &str, extra: &str) -> Plan {
    plan(&format!(
        "[suite]\nname = \"v\"\nrepeat = 2\nvariant_order = \"{order}\"\n{extra}\n[target]\ndriver = \"mysql\"\n[defaults]\nworkload = \"oltp_read_only\"\ntime = 10\n[matrix]\nthreads = [1, 2]\n[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\nset_global = {{ sync_binlog = 3 }}\n"
    ))
}

/// `kind variant threads repetition` per step.
fn order_of(p: &Plan) -> Vec<String> {
    p.steps
        .iter()
        .map(|s| match s.kind {
            StepKind::Run => format!(
                "run {} t{} r{}",
                s.variant,
                s.options.int("threads"),
                s.repetition
            ),
            k => format!("{} {} ds{}", k.as_str(), s.variant, s.dataset),
        })
        .collect()
}

#[test]
fn blocked_variants_are_the_outer_loop_each_with_its_own_dataset() {
    let p = ordered("blocked", "");
    assert_eq!(
        order_of(&p),
        [
            "prepare a ds1",
            "run a t1 r1",
            "run a t2 r1",
            "run a t1 r2",
            "run a t2 r2",
            "cleanup a ds1",
            "prepare b ds2",
            "run b t1 r1",
            "run b t2 r1",
            "run b t1 r2",
            "run b t2 r2",
            "cleanup b ds2",
        ]
    );
    assert!(!render_text(&p, "t.toml").contains("Variant order"));
    assert!(render_json(&p, "t.toml").contains("\"variant_order\": \"blocked\""));
    assert!(
        !serde_json::to_string(&p).unwrap().contains("variant_order"),
        "stored plans stay as before"
    );
}

#[test]
fn interleaved_variants_alternate_per_point_and_repetition_on_one_dataset() {
    let p = ordered("interleaved", "");
    // Each point's repetitions alternate a b / b a, and neighbouring blocks meet on the same
    // variant.
    assert_eq!(
        order_of(&p),
        [
            "prepare a ds1",
            "run a t1 r1",
            "run b t1 r1",
            "run b t2 r1",
            "run a t2 r1",
            "run b t1 r2",
            "run a t1 r2",
            "run a t2 r2",
            "run b t2 r2",
            "cleanup b ds1",
        ]
    );
    let text = render_text(&p, "t.toml");
    assert!(text.contains("Variant order: interleaved: the variants of each matrix point and repetition run back to back on one dataset, alternating A B / B A"), "{text}");
    assert!(render_json(&p, "t.toml").contains("\"variant_order\": \"interleaved\""));
    // Every run of the blocked plan is there, once.
    let runs = |p: &Plan| {
        let mut r: Vec<String> = order_of(p)
            .into_iter()
            .filter(|s| s.starts_with("run"))
            .collect();
        r.sort();
        r
    };
    assert_eq!(runs(&p), runs(&ordered("blocked", "")));
}

#[test]
fn randomized_variants_shuffle_each_block_reproducibly_from_the_seed() {
    let p = ordered("randomized", "order_seed = 7");
    assert_eq!(p.order_seed, Some(7));
    let again = ordered("randomized", "order_seed = 7");
    assert_eq!(order_of(&p), order_of(&again));
    let text = render_text(&p, "t.toml");
    assert!(
        text.contains(
            "Variant order: randomized, seed 7 (order_seed = 7 in [suite] repeats this order)"
        ),
        "{text}"
    );
    assert!(render_json(&p, "t.toml").contains("\"order_seed\": 7"));
    // Blocks of one run per variant, on one dataset.
    let runs: Vec<&Step> = p.steps.iter().filter(|s| s.kind == StepKind::Run).collect();
    assert_eq!(runs.len(), 8);
    for block in runs.chunks(2) {
        assert_eq!(block[0].params, block[1].params);
        assert_eq!(block[0].repetition, block[1].repetition);
        assert_ne!(block[0].variant, block[1].variant);
    }
    assert!(p.steps.iter().all(|s| s.dataset == 1));
    // Some seed gives another order than interleaving's, and seeds differ from each other.
    let orders: std::collections::HashSet<Vec<String>> = (0..20)
        .map(|seed| order_of(&ordered("randomized", &format!("order_seed = {seed}"))))
        .collect();
    assert!(orders.len() > 5, "{orders:?}");
}

#[test]
fn a_randomized_order_without_a_seed_gets_one_stored_with_the_suite() {
    let s = suite::load_text(
        Path::new("t.toml"),
        "[suite]\nname = \"v\"\nvariant_order = \"randomized\"\n[defaults]\nworkload = \"cpu\"\ntime = 1\n[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\n",
        &[],
        &[],
    )
    .unwrap();
    let seed = s.order_seed;
    assert!(
        s.resolved_toml.contains(&format!("order_seed = {seed}")),
        "{}",
        s.resolved_toml
    );
    // The stored suite plans the same order (what --resume rebuilds).
    let stored = suite::load_text(Path::new("suite.toml"), &s.resolved_toml, &[], &[]).unwrap();
    assert_eq!(stored.order_seed, seed);
    assert_eq!(
        order_of(&build(&s).unwrap()),
        order_of(&build(&stored).unwrap())
    );
}

#[test]
fn interleaving_a_restart_variant_or_a_negative_seed_is_refused() {
    let text = "[suite]\nname = \"v\"\nvariant_order = \"interleaved\"\n[target]\ndriver = \"mysql\"\n[defaults]\nworkload = \"oltp_read_only\"\n[[variant]]\nname = \"a\"\n[[variant]]\nname = \"big-redo\"\nrestart = { template = \"t.j2\", path = \"/tmp/x.cnf\", command = \"true\" }\n";
    let e = suite::load_text(Path::new("t.toml"), text, &[], &[])
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("t.toml:3:"), "{e}");
    assert!(e.contains("variant_order = \"interleaved\" cannot switch variant `big-redo`: it has a `restart` section"), "{e}");
    assert!(e.contains("use variant_order = \"blocked\""), "{e}");
    let e = suite::load_text(
        Path::new("t.toml"),
        "[suite]\nname = \"v\"\nvariant_order = \"randomized\"\norder_seed = -1\n[defaults]\nworkload = \"cpu\"\n",
        &[],
        &[],
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("order_seed must be 0 or more, found -1"), "{e}");
}

#[test]
fn interleaved_fresh_per_run_workloads_prepare_per_run() {
    // oltp_insert without auto_inc prepares empty tables for each run.
    let p = plan(
        "[suite]\nname = \"v\"\nrepeat = 2\nvariant_order = \"interleaved\"\n[target]\ndriver = \"mysql\"\n[defaults]\nworkload = \"oltp_insert\"\nauto_inc = false\ntime = 10\n[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\n",
    );
    assert_eq!(
        order_of(&p),
        [
            "prepare a ds1",
            "run a t1 r1",
            "cleanup a ds1",
            "prepare b ds2",
            "run b t1 r1",
            "cleanup b ds2",
            "prepare b ds3",
            "run b t1 r2",
            "cleanup b ds3",
            "prepare a ds4",
            "run a t1 r2",
            "cleanup a ds4",
        ]
    );
}

/// sysbench Lua scripts (#16): their command steps around their dataset's runs.
mod lua_scripts {
    use super::*;
    use crate::suite::scripts::tests::{SUITE, dir};

    #[test]
    fn the_plan_runs_the_scripts_commands_around_its_runs() {
        let (_d, file) = dir();
        let s = suite::load_text(&file, SUITE, &[], &[]).unwrap_or_else(|e| panic!("{e}"));
        let p = build(&s).unwrap_or_else(|e| panic!("{e}"));
        let shape: Vec<(&str, Option<&str>, usize)> = p
            .steps
            .iter()
            .filter(|st| st.workload == "scripts/demo.lua")
            .map(|st| (st.kind.as_str(), st.command.as_deref(), st.dataset))
            .collect();
        // One dataset per `tables` value (a dataset key); `read_share` is not one, so both of its
        // values run on the same data.
        let per = |ds: usize| {
            vec![
                ("prepare", None, ds),
                ("command", Some("prewarm"), ds),
                ("run", None, ds),
                ("run", None, ds),
                ("command", Some("check"), ds),
                ("cleanup", None, ds),
            ]
        };
        assert_eq!(shape, [per(1), per(2)].concat());
        let check = p
            .steps
            .iter()
            .find(|st| st.command.as_deref() == Some("check"))
            .expect("a check command");
        assert_eq!(check.options.get("rows"), Some(&Value::Int(20)));
        assert_eq!(check.options.get("read_share"), Some(&Value::Float(0.75)));
        let text = render_text(&p, "s.toml");
        assert!(text.contains(", 4 command, "), "{text}");
        assert!(
            text.contains(" command check scripts/demo.lua (tables=2) "),
            "{text}"
        );
        assert!(
            text.contains(" prepare scripts/demo.lua (tables=1) "),
            "{text}"
        );
        let json = render_json(&p, "s.toml");
        assert!(
            json.contains("\"kind\": \"command\"") && json.contains("\"command\": \"prewarm\"")
        );
        // The cpu runs carry no command.
        assert!(
            p.steps
                .iter()
                .filter(|st| st.kind == StepKind::Command)
                .all(|st| st.workload == "scripts/demo.lua")
        );
    }

    #[test]
    fn a_stored_suite_with_scripts_plans_alike_from_elsewhere() {
        let (_d, file) = dir();
        let s = suite::load_text(&file, SUITE, &[], &[]).unwrap_or_else(|e| panic!("{e}"));
        let elsewhere = tempfile::tempdir().expect("tempdir");
        let again = suite::load_text(
            &elsewhere.path().join("suite.toml"),
            &s.resolved_toml,
            &[],
            &[],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let json =
            |s: &suite::Suite| serde_json::to_string(&build(s).expect("plan")).expect("json");
        assert_eq!(json(&s), json(&again));
    }

    #[test]
    fn a_scripts_dataset_defaults_to_every_option_and_include_may_name_it() {
        let (_d, file) = dir();
        let text = "[suite]\nname = \"l\"\n[defaults]\ntime = 1\nworkload = { script = \"scripts/demo.lua\" }\n[matrix]\nlabel = [\"a\", \"b\"]\n";
        let p = build(&suite::load_text(&file, text, &[], &[]).unwrap_or_else(|e| panic!("{e}")))
            .unwrap_or_else(|e| panic!("{e}"));
        // `label` shapes the data by default: one prepare per value.
        let prepares = p
            .steps
            .iter()
            .filter(|st| st.kind == StepKind::Prepare)
            .count();
        assert_eq!(prepares, 2);

        let text = "[suite]\nname = \"l\"\n[defaults]\ntime = 1\n[matrix]\nworkload = [\"cpu\"]\nthreads = [1, 2]\ninclude = [{ workload = { script = \"scripts/demo.lua\" }, threads = 4 }]\n";
        let p = build(&suite::load_text(&file, text, &[], &[]).unwrap_or_else(|e| panic!("{e}")))
            .unwrap_or_else(|e| panic!("{e}"));
        let script_runs: Vec<&Value> = p
            .steps
            .iter()
            .filter(|st| st.kind == StepKind::Run && st.workload == "scripts/demo.lua")
            .map(|st| &st.params["threads"])
            .collect();
        assert_eq!(script_runs, [&Value::Int(4)]);
    }
}

// ---------------------------------------------------------------------------------------
// #26: what a custom workload's options decide, refused by the plan at the definition's line.

use crate::engine::custom::compile::tests::ORDERS;
use crate::source::{ConfigError, Origin};

/// The 1-based line of the first line of `text` that contains `marker`.
fn line_of(text: &str, marker: &str) -> usize {
    text.lines()
        .position(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("no line with {marker:?}"))
        + 1
}

fn load(text: &str) -> suite::Suite {
    suite::load_text(Path::new("t.toml"), text, &[], &[]).unwrap_or_else(|e| panic!("{e}"))
}

/// `text` loads, and its plan is refused: an error is on the line of `marker`, its key ends
/// with `key` and its message contains `message` (the errors the options' values decide).
fn refused_by_plan(text: &str, marker: &str, key: &str, message: &str) -> ConfigError {
    let s = load(text);
    let errors = build(&s).expect_err("the plan must be refused");
    let line = line_of(text, marker);
    errors
        .0
        .iter()
        .find(|e| {
            matches!(e.origin, Origin::File { line: l, .. } if l == line)
                && e.key.ends_with(key)
                && e.message.contains(message)
        })
        .cloned()
        .unwrap_or_else(|| {
            panic!("no error on line {line} with key …{key} and {message:?}; got:\n{errors}")
        })
}

/// A check's `expect` that fails for the run's options is refused by the plan, at its line.
#[test]
fn a_checks_expect_that_fails_for_the_options_is_refused() {
    let t = format!(
        "{ORDERS}\n[[workloads.orders.checks]]\nname = \"c\"\nsql = \"SELECT 1\"\nexpect = \"customers // (customers - 10)\"\n"
    );
    let e = refused_by_plan(
        &t,
        "expect = \"customers //",
        "checks[0].expect",
        "with customers = 10",
    );
    assert!(e.message.contains("failed"), "{e}");
}

/// #26: what the options decide is checked by the plan with each run's values, at the line
/// of the definition: an expression over options that fails, a bound that is not an integer,
/// a row count past what `row` numbers (the product of a parent's rows and `per_parent`).
#[test]
fn expressions_over_options_are_checked_with_each_runs_values() {
    let t = ORDERS.replace(
        "mode = { type",
        "per = { type = \"int\", default = 0 }\nmode = { type",
    );
    let with = |from: &str, to: &str| t.replace(from, to);
    let e = refused_by_plan(
        &with(
            "let = { amount = \"qty * 3\" }",
            "let = { amount = \"customers / per\" }",
        ),
        "customers / per",
        "new_order.let.amount",
        "with customers = 10, per = 0",
    );
    assert!(e.help.unwrap().contains("only options"));
    refused_by_plan(
        &with(
            "qty = { uniform = [1, 10] }",
            "qty = { uniform = [1, \"customers / 4\"] }",
        ),
        "customers / 4",
        "params.qty.uniform[1]",
        "is 2.5 with customers = 10",
    );
    // Inverted bounds from options are read backwards (TPC-C's [1, "warehouses - 1"]).
    let ok = with(
        "qty = { uniform = [1, 10] }",
        "qty = { uniform = [1, \"customers - 20\"] }",
    );
    build(&load(&ok)).unwrap_or_else(|e| panic!("{e}"));
    let child = format!(
        "{}\n[[workloads.orders.load]]\ntable = \"lines\"\nparent = \"customers\"\nper_parent = \"1000000000000000000\"\ncolumns = [{{ name = \"a\", gen = \"row\" }}]\n",
        t.replace(
            "[workloads.orders.transactions.new_order]",
            "[workloads.orders.transactions.zz_placeholder]\nweight = 0\nsteps = [{ sql = \"SELECT 1\" }]\n\n[workloads.orders.transactions.new_order]"
        )
    );
    let e = refused_by_plan(
        &child,
        "per_parent = \"1000000000000000000\"",
        "load[1].per_parent",
        "20 parent rows × 1000000000000000000 per parent row is more than",
    );
    assert!(e.help.unwrap().contains("9223372036854775807"));
}

/// #8/#26: `check = true` on a workload whose checks could not run is refused, not silently
/// ignored: without `schema`/`load` there is no check step, without checks nothing to check.
#[test]
fn check_true_without_a_dataset_or_checks_is_refused() {
    let no_checks = ORDERS.replace("time = 1", "time = 1\ncheck = true");
    let e = refused_by_plan(
        &no_checks,
        "check = true",
        "defaults.check",
        "workload `orders` declares no checks",
    );
    assert!(e.help.unwrap().contains("[[workloads.orders.checks]]"));
    let checks = "\n[[workloads.orders.checks]]\nsql = \"SELECT 1\"\nexpect = 1\n";
    let no_data = format!(
        "{}{checks}",
        no_checks
            .replace("schema = [", "zschema = [")
            .lines()
            .filter(|l| !l.starts_with("zschema") && !l.starts_with("cleanup"))
            .collect::<Vec<_>>()
            .join("\n")
            .replace(
                "[[workloads.orders.load]]\ntable = \"customers\"\nrows = \"customers\"\ncolumns = [\n  { name = \"c_id\", gen = \"row\" },\n  { name = \"c_name\", gen = { string = \"@@@@ ###\" } },\n]\n",
                ""
            )
    );
    assert!(!no_data.contains("[[workloads.orders.load]]"), "{no_data}");
    refused_by_plan(
        &no_data,
        "check = true",
        "defaults.check",
        "workload `orders` has no `schema` or `load`",
    );
    // With data and checks it plans a check step.
    let fine = format!("{no_checks}{checks}");
    let plan = build(&load(&fine)).unwrap_or_else(|e| panic!("{e}"));
    assert!(plan.steps.iter().any(|s| s.kind == StepKind::Check));
}
