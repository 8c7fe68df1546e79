//! Workloads declared in TOML through the binary: `plan` shows their prepare/run/cleanup steps
//! and option axes on the default SQLite target, `validate` refuses a bad definition with
//! exit 2 and its line, and `workloads --suite` lists and describes them. Nothing here runs a
//! workload (the runtime is tested on its own).

use std::path::Path;

use crate::common;

use common::sbsuite;
use predicates::prelude::*;

const SUITE: &str = r#"[suite]
name = "custom-def"
workloads = ["workloads/orders.toml"]

[defaults]
workload = "orders"
time = 1

[matrix]
customers = [10, 20]
"#;

const ORDERS: &str = r#"[workloads.orders]
summary = "order entry on my own schema"
schema = ["CREATE TABLE customers (c_id INTEGER PRIMARY KEY, c_name TEXT)"]
cleanup = ["DROP TABLE IF EXISTS customers"]

[workloads.orders.options]
customers = { type = "int", default = 100, min = 1, dataset = true, help = "customers to load" }
hot = { type = "float", default = 10.0, min = 0, max = 100, help = "hot share" }

[workloads.orders.params]
cust = { uniform = [1, "customers"] }

[[workloads.orders.load]]
table = "customers"
rows = "customers"
columns = [{ name = "c_id", gen = "row" }, { name = "c_name", gen = { string = "@@@@" } }]

[workloads.orders.transactions.lookup]
weight = 3
steps = [{ sql = "SELECT c_name FROM customers WHERE c_id = :cust", capture = ["c_name"] }]

[workloads.orders.transactions.touch]
steps = [{ sql = "UPDATE customers SET c_name = 'x' WHERE c_id = :cust" }]
"#;

fn setup(orders: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("workloads")).unwrap();
    std::fs::write(dir.path().join("workloads/orders.toml"), orders).unwrap();
    std::fs::write(dir.path().join("suite.toml"), SUITE).unwrap();
    dir
}

fn suite(dir: &Path) -> String {
    dir.join("suite.toml").display().to_string()
}

#[test]
fn plan_shows_the_custom_workload_steps_and_its_option_axis() {
    let dir = setup(ORDERS);
    let out = sbsuite()
        .args(["plan", &suite(dir.path())])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("6 steps (2 prepare, 2 run, 2 cleanup)"),
        "{text}"
    );
    assert!(text.contains("Target: sqlite"), "{text}");
    for needle in [
        "prepare custom:orders (customers=10)",
        "run     orders-customers10",
        "cleanup custom:orders (customers=10)",
        "prepare custom:orders (customers=20)",
        "run     orders-customers20",
        "workload=orders",
    ] {
        assert!(text.contains(needle), "{needle:?} missing:\n{text}");
    }
    // An option of the workload set with --set is checked by its declared type.
    sbsuite()
        .args(["plan", &suite(dir.path()), "--set", "hot=200"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("hot"));
}

#[test]
fn validate_refuses_a_bad_definition_with_exit_2_and_its_line() {
    let bad = ORDERS.replace(
        "WHERE c_id = :cust\", capture",
        "WHERE c_id = :nope\", capture",
    );
    let dir = setup(&bad);
    let line = bad.lines().position(|l| l.contains(":nope")).unwrap() + 1;
    sbsuite()
        .args(["validate", &suite(dir.path())])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown placeholder `:nope`"))
        .stderr(predicate::str::contains(format!("orders.toml:{line}:")))
        .stderr(predicate::str::contains(
            "key: workloads.orders.transactions.lookup.steps[0].sql",
        ));
    // Nothing ran: no results directory.
    assert!(!dir.path().join("results").exists());
    sbsuite()
        .current_dir(dir.path())
        .args(["run", "suite.toml"])
        .assert()
        .code(2);
    assert!(!dir.path().join("results").exists());
}

/// #26: what validate refuses now, each with exit 2, the file and line of the value (in the
/// workloads file, or the suite's own line for `check`), its key and a fix: a `capture` on a
/// statement that returns no rows, a check's `expect` that is an expression reading what does
/// not exist, an expression that fails whatever the data, a constant range that is inverted,
/// an expression over options that fails with the run's values (found by the plan), a row
/// count past 2⁶³ − 1, and `check = true` on a workload without checks.
#[test]
fn validate_refuses_what_fails_whatever_the_data_with_its_line() {
    let touch = "steps = [{ sql = \"UPDATE customers SET c_name = 'x' WHERE c_id = :cust\" }]";
    let check =
        "\n[[workloads.orders.checks]]\nname = \"all\"\nsql = \"SELECT count(*) FROM customers\"\n";
    let cases: Vec<(String, &str, &str, &str)> = vec![
        (
            ORDERS.replace(
                touch,
                "steps = [{ sql = \"UPDATE customers SET c_name = 'x' WHERE c_id = :cust\", capture = [\"c_id\"] }]",
            ),
            "capture = [\"c_id\"] }]",
            "workloads.orders.transactions.touch.steps[0].capture",
            "this UPDATE returns no rows",
        ),
        (
            format!("{ORDERS}{check}expect = \"accounts * 100\"\n"),
            "expect = ",
            "workloads.orders.checks[0].expect",
            "`accounts`, which is not defined here",
        ),
        (
            ORDERS.replace(
                "cust = { uniform = [1, \"customers\"] }",
                "cust = { uniform = [1, \"customers\"] }\nbig = \"2 ** 100000000\"",
            ),
            "big = ",
            "workloads.orders.params.big",
            "unable to calculate 2 ** 100000000",
        ),
        (
            ORDERS.replace(
                "cust = { uniform = [1, \"customers\"] }",
                "cust = { uniform = [1, \"customers\"] }\nzero = \"cust / 0\"",
            ),
            "zero = ",
            "workloads.orders.params.zero",
            "divides by zero",
        ),
        (
            ORDERS.replace(
                "cust = { uniform = [1, \"customers\"] }",
                "cust = { uniform = [\"100 * 10\", 1] }",
            ),
            "cust = ",
            "workloads.orders.params.cust.uniform",
            "goes from 1000 to 1",
        ),
        (
            ORDERS.replace(
                "cust = { uniform = [1, \"customers\"] }",
                "cust = { uniform = [1, \"customers\"] }\nshare = \"customers / (hot - 10.0)\"",
            ),
            "share = ",
            "workloads.orders.params.share",
            "with customers = 10, hot = 10",
        ),
        (
            ORDERS.replace("rows = \"customers\"", "rows = \"customers * 1000000000000000000\""),
            "rows = ",
            "workloads.orders.load[0].rows",
            "is 20000000000000000000, too large for a 64-bit integer with customers = 20",
        ),
    ];
    for (orders, marker, key, message) in &cases {
        let dir = setup(orders);
        let line = orders.lines().position(|l| l.contains(marker)).unwrap() + 1;
        sbsuite()
            .args(["validate", &suite(dir.path())])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(*message))
            .stderr(predicate::str::contains(format!("orders.toml:{line}:")))
            .stderr(predicate::str::contains(format!("key: {key}")))
            .stderr(predicate::str::contains("= help: "));
    }
    // `check = true` on a workload without checks: at the suite's own line.
    let dir = setup(ORDERS);
    let with_check = SUITE.replace("time = 1", "time = 1\ncheck = true");
    std::fs::write(dir.path().join("suite.toml"), &with_check).unwrap();
    let line = with_check
        .lines()
        .position(|l| l == "check = true")
        .unwrap()
        + 1;
    sbsuite()
        .args(["validate", &suite(dir.path())])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "check = true, but workload `orders` declares no checks",
        ))
        .stderr(predicate::str::contains(format!("suite.toml:{line}:")));
}

#[test]
fn workloads_lists_and_describes_the_suites_own() {
    let dir = setup(ORDERS);
    sbsuite()
        .args(["workloads", "--suite", &suite(dir.path())])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "orders - order entry on my own schema",
        ))
        .stdout(predicate::str::contains("oltp_read_only").not());
    let out = sbsuite()
        .args(["workloads", "--suite", &suite(dir.path()), "orders"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("customers") && l.contains("[100]") && l.contains("(dataset)")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("hot") && !l.contains("(dataset)")),
        "{text}"
    );
    assert!(text.contains("lookup                 3"), "{text}");
    // Without --suite, the suite's workload is unknown.
    sbsuite()
        .args(["workloads", "orders"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown workload `orders`"));
    // A bad definition is reported as `validate` does.
    let bad = setup(&ORDERS.replace("weight = 3", "weight = -1"));
    sbsuite()
        .args(["workloads", "--suite", &suite(bad.path())])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("`weight` must be an integer"));
}
