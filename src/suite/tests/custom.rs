//! Workloads declared in a suite: what the suite adds to their compiler
//! (`engine::custom::compile`, tested there): SQL for the target's driver, the stored suite
//! holding the definitions inline, layers that may set a definition's options but not the
//! definition, and each suite's catalog holding its own definitions only.

use std::path::Path;

use crate::engine::custom::compile::tests::{ORDERS, def_of, error_at};
use crate::source::{ConfigError, ConfigErrors};
use crate::suite::{SetOverride, Suite, load_text, load_with_env};
use crate::value::Value;

fn load(text: &str) -> Result<Suite, ConfigErrors> {
    load_text(Path::new("t.toml"), text, &[], &[])
}

/// `text` is refused with an error on the line of `marker` (see [`error_at`]).
fn refused(text: &str, marker: &str, key: &str, message: &str) -> ConfigError {
    let errors = load(text).err().expect("the suite must be rejected");
    error_at(&errors, text, marker, key, message)
}

#[test]
fn a_custom_workloads_options_are_matrix_axes() {
    let s = load(ORDERS).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.matrix.axes[0].name, "customers");
}

#[test]
fn a_statement_without_sql_for_the_targets_driver_is_refused() {
    let t = ORDERS.replace(
        "{ sql = \"SELECT count(*) FROM lines WHERE a = :cust\" }",
        "{ sql = { mysql = \"SELECT 1 FROM lines WHERE a = :cust\", pgsql = \"SELECT 1\" } }",
    );
    // No target: SQLite.
    let e = refused(
        &t,
        "SELECT 1 FROM lines",
        "lookup.steps[0].sql",
        "no SQL for sqlite",
    );
    assert!(e.message.contains("mysql, pgsql"), "{e}");
    // A PostgreSQL target has its text; the schema's per-driver table too.
    let pg = t.replace("[defaults]", "[target]\ndriver = \"pgsql\"\n\n[defaults]");
    load(&pg).unwrap_or_else(|e| panic!("{e}"));
    let partial = ORDERS.replace("pgsql = \"CREATE TABLE lines (a int, b int, c int)\", ", "");
    let partial = partial.replace("[defaults]", "[target]\ndriver = \"pgsql\"\n\n[defaults]");
    refused(
        &partial,
        "CREATE TABLE lines (a INT",
        "workloads.orders.schema[1]",
        "no SQL for pgsql",
    );
    // A workload the suite does not run is not checked.
    let unused = t
        .replace("workload = \"orders\"", "workload = \"cpu\"")
        .replace("customers = [10, 20]", "threads = [1]");
    load(&unused).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn definitions_in_files_load_and_the_stored_suite_inlines_them() {
    let dir = tempfile::tempdir().unwrap();
    let start = ORDERS.find("[workloads.orders]").unwrap();
    std::fs::create_dir(dir.path().join("w")).unwrap();
    std::fs::write(dir.path().join("w/orders.toml"), &ORDERS[start..]).unwrap();
    let suite = ORDERS[..start].replace(
        "name = \"custom\"",
        "name = \"custom\"\nworkloads = [\"w/orders.toml\"]",
    );
    let file = dir.path().join("suite.toml");
    std::fs::write(&file, &suite).unwrap();
    let s = load_with_env(&file, &[], &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        def_of(&s.catalog, "orders").source,
        dir.path().join("w/orders.toml")
    );
    assert!(
        !s.resolved_toml.contains("w/orders.toml"),
        "{}",
        s.resolved_toml
    );
    assert!(
        s.resolved_toml
            .contains("[workloads.orders.transactions.new_order]"),
        "{}",
        s.resolved_toml
    );
    assert!(
        s.resolved_toml.contains("headline = { name = \"opm\""),
        "{}",
        s.resolved_toml
    );

    // The run directory's copy loads without the file (the same plan on resume:
    // runner::command's tests).
    drop(dir);
    let run_dir = tempfile::tempdir().unwrap();
    let stored_file = run_dir.path().join("suite.toml");
    std::fs::write(&stored_file, &s.resolved_toml).unwrap();
    let stored = load_with_env(&stored_file, &[], &[])
        .unwrap_or_else(|e| panic!("{e}\n{}", s.resolved_toml));
    assert_eq!(stored.matrix.axes, s.matrix.axes);
    assert_eq!(stored.resolved_toml, s.resolved_toml, "a fixed point");
    let d = def_of(&stored.catalog, "orders");
    assert_eq!(d.statements.len(), 4);
    assert_eq!(d.transactions[0].draws, [3, 4]);
    assert!(d.headline.is_some());
}

#[test]
fn layers_cannot_change_a_definition() {
    let set = SetOverride::parse("workloads.orders.summary=x").unwrap();
    let errors = load_text(Path::new("t.toml"), ORDERS, &[set], &[])
        .err()
        .expect("refused");
    assert!(errors.0[0].message.contains("cannot be set"), "{errors}");
    // Its options can.
    let set = SetOverride::parse("customers=7").unwrap();
    let s = load_text(Path::new("t.toml"), ORDERS, &[set], &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.defaults.get("customers"), Some(&Value::Int(7)));
}

#[test]
fn each_suite_knows_its_own_definitions_only() {
    let custom = load(ORDERS).unwrap();
    assert!(custom.catalog.workload("orders").is_some());
    let plain = "[suite]\nname = \"p\"\n[defaults]\nworkload = \"cpu\"\ntime = 1\n";
    let plain = load(plain).unwrap();
    assert!(plain.catalog.workload("orders").is_none());
    // The first suite keeps its own, loaded before the other or not.
    assert!(custom.catalog.workload("orders").is_some());
    // A suite naming a workload another suite declared is refused.
    let other = "[suite]\nname = \"o\"\n[defaults]\nworkload = \"orders\"\ntime = 1\n";
    let errors = load(other).err().expect("refused");
    assert!(
        errors.0[0].message.contains("unknown workload `orders`"),
        "{errors}"
    );
}
