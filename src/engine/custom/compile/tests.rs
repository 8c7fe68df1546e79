//! Definitions compile into the model the runtime reads (slots, binds per driver, draws), and
//! each kind of bad definition is refused before anything runs, with its line and key. (What
//! the suite adds — the target's driver, the stored suite, layers — is tested in `suite`.)

use std::path::Path;

use super::*;
use crate::db::Driver;
use crate::engine::custom::model::{CheckExpect, GenSpec, Headline, Op, Val, VarKind};
use crate::engine::option::Kind;

pub(crate) const ORDERS: &str = r#"[suite]
name = "custom"

[defaults]
workload = "orders"
time = 1

[matrix]
customers = [10, 20]

[workloads.orders]
summary = "order entry"
headline = { name = "opm", transaction = "new_order", per = "minute" }
schema = ["CREATE TABLE customers (c_id INTEGER PRIMARY KEY, c_name TEXT)", { mysql = "CREATE TABLE lines (a INT, b INT, c INT)", pgsql = "CREATE TABLE lines (a int, b int, c int)", sqlite = "CREATE TABLE lines (a, b, c)" }]
cleanup = ["DROP TABLE IF EXISTS customers", "DROP TABLE IF EXISTS lines"]

[workloads.orders.options]
customers = { type = "int", default = 100, min = 1, dataset = true, help = "customers to load" }
mode = { type = "enum", choices = ["a", "b"], default = "a", help = "a mode" }

[workloads.orders.params]
cust = { uniform = [1, "customers"] }
qty = { uniform = [1, 10] }

[[workloads.orders.load]]
table = "customers"
rows = "customers"
columns = [
  { name = "c_id", gen = "row" },
  { name = "c_name", gen = { string = "@@@@ ###" } },
]

[workloads.orders.transactions.new_order]
weight = 3
let = { amount = "qty * 3" }
steps = [
  { sql = "SELECT c_name FROM customers WHERE c_id = :cust", capture = ["c_name"], expect_rows = 1 },
  { repeat = "qty", index = "i", let = { item = { uniform = [1, 100] } }, steps = [
      { sql = "INSERT INTO lines VALUES (:cust, :i, :item)" },
  ] },
  { when = "amount > 10", sql = "UPDATE customers SET c_name = :c_name WHERE c_id = :cust", name = "big" },
]

[workloads.orders.transactions.lookup]
weight = 1
steps = [{ sql = "SELECT count(*) FROM lines WHERE a = :cust" }]
"#;

/// Compiles the definitions of the suite text `text` into a catalog, as loading the suite does.
fn load(text: &str) -> Result<Catalog, ConfigErrors> {
    let table: toml::Table = toml::from_str(text).unwrap_or_else(|e| panic!("{e}"));
    Ok(super::load(Path::new("t.toml"), text, &table)?.catalog())
}

/// The 1-based line of the first line of `text` that contains `marker`.
pub(crate) fn line_of(text: &str, marker: &str) -> usize {
    text.lines()
        .position(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("no line with {marker:?}"))
        + 1
}

/// `text` is refused; an error is on the line of `marker`, its key ends with `key` and its
/// message contains `message`. Returns that error.
fn refused(text: &str, marker: &str, key: &str, message: &str) -> ConfigError {
    let errors = load(text).expect_err("the definitions must be rejected");
    error_at(&errors, text, marker, key, message)
}

/// The error of `errors` (of `text`) on the line of `marker` whose key ends with `key` and
/// whose message contains `message`; it must give a fix.
pub(crate) fn error_at(
    errors: &ConfigErrors,
    text: &str,
    marker: &str,
    key: &str,
    message: &str,
) -> ConfigError {
    let line = line_of(text, marker);
    let found = errors.0.iter().find(|e| {
        matches!(e.origin, Origin::File { line: l, .. } if l == line)
            && e.key.ends_with(key)
            && e.message.contains(message)
    });
    match found {
        Some(e) => {
            assert!(e.help.is_some(), "no fix given: {e}");
            e.clone()
        }
        None => panic!("no error on line {line} with key …{key} and {message:?}; got:\n{errors}"),
    }
}

/// The definition of workload `name` in `catalog`.
pub(crate) fn def_of(catalog: &Catalog, name: &str) -> &'static Def {
    catalog
        .workload(name)
        .and_then(crate::engine::custom::def)
        .unwrap_or_else(|| panic!("`{name}` is not in the catalog"))
}

/// A driver by its `[target] driver` name.
fn drv(name: &str) -> Driver {
    name.parse().unwrap()
}

#[test]
fn a_definition_compiles_to_slots_binds_and_draws() {
    let catalog = load(ORDERS).unwrap_or_else(|e| panic!("{e}"));
    let d = def_of(&catalog, "orders");
    assert_eq!(
        d.vars.names,
        [
            "customers",
            "mode",
            "thread",
            "cust",
            "qty",
            "amount",
            "c_name",
            "i",
            "item",
            "row",
            "child",
            "parent_row"
        ]
    );
    assert_eq!(d.vars.kinds[2], VarKind::Thread);
    assert_eq!(d.vars.kinds[6], VarKind::Capture);
    let names: Vec<&str> = d.statements.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["new_order.1", "new_order.2", "big", "lookup.1"]);
    let lines = d.statements[1].sql.for_driver(drv("pgsql")).unwrap();
    assert_eq!(lines.text, "INSERT INTO lines VALUES (?, ?, ?)");
    assert_eq!(lines.binds, [3, 7, 8]);
    let big = d.statements[2].sql.for_driver(drv("sqlite")).unwrap();
    assert_eq!(big.binds, [6, 3]);
    assert_eq!(d.statements[0].capture, [(6, "c_name".to_string())]);
    assert!(d.statements[0].expect_rows.is_some());
    // new_order reads qty through its `let` and its repeat count.
    assert_eq!(d.transactions[0].draws, [3, 4]);
    assert_eq!(d.transactions[1].draws, [3]);
    assert_eq!(d.transactions[0].weight, 3);
    assert_eq!(
        d.headline,
        Some(Headline {
            name: "opm".into(),
            transaction: 0,
            per_secs: 60.0
        })
    );
    // let, exec, repeat { let, exec }, exec
    assert!(matches!(d.transactions[0].body[0], Op::Let { slot: 5, .. }));
    match &d.transactions[0].body[2] {
        Op::Repeat {
            index: Some(7),
            body,
            ..
        } => {
            assert!(matches!(body[0], Op::Let { slot: 8, .. }));
            assert!(matches!(
                body[1],
                Op::Exec {
                    stmt: 1,
                    when: None
                }
            ));
        }
        other => panic!("expected the repeat, got {other:?}"),
    }
    assert!(matches!(
        d.transactions[0].body[3],
        Op::Exec {
            stmt: 2,
            when: Some(_)
        }
    ));
    assert_eq!(d.schema.len(), 2);
    assert_eq!(
        d.schema[1].for_driver(drv("sqlite")),
        Some("CREATE TABLE lines (a, b, c)")
    );
    assert_eq!(d.load[0].columns.len(), 2);
    assert!(matches!(d.load[0].columns[1].1, GenSpec::Pattern(_)));
    let customers = &d.options[0];
    assert!(customers.dataset);
    assert_eq!(customers.default.as_deref(), Some("100"));
    assert!(matches!(d.options[1].kind, Kind::Enum(["a", "b"])));
    let spec = catalog.workload("orders").unwrap();
    assert_eq!(spec.data.keys, ["customers"]);
    assert!(catalog.any_option("mode").is_some());
}

#[test]
fn placeholders_skip_casts_and_quoted_text() {
    let (text, names) = placeholders(
        "SELECT :x::int, ':y', \"col:z\", a::text, b[1:2] FROM t WHERE c = :c_1",
        drv("pgsql"),
    );
    assert_eq!(
        text,
        "SELECT ?::int, ':y', \"col:z\", a::text, b[1:2] FROM t WHERE c = ?"
    );
    assert_eq!(names, ["x", "c_1"]);
    // MySQL: a backslash escapes a quote inside a string; elsewhere it does not.
    let (text, names) = placeholders(r"SELECT 'it\'s :no', :yes", drv("mysql"));
    assert_eq!(text, r"SELECT 'it\'s :no', ?");
    assert_eq!(names, ["yes"]);
    let (_, names) = placeholders(r"SELECT 'C:\', :yes", drv("pgsql"));
    assert_eq!(names, ["yes"]);
    // Doubled quotes stay inside the string.
    let (_, names) = placeholders("SELECT 'a '':no'' b', :yes", drv("sqlite"));
    assert_eq!(names, ["yes"]);
    // Comments and dollar quotes.
    let sql = "SELECT :a -- :no\n, /* :no */ :b";
    assert_eq!(placeholders(sql, drv("sqlite")).1, ["a", "b"]);
    assert_eq!(placeholders("SELECT 5--:a", drv("mysql")).1, ["a"]);
    assert_eq!(placeholders("SELECT :a # :no\n", drv("mysql")).1, ["a"]);
    let body = "DO $f$ BEGIN x := :no; END $f$; SELECT $$:no$$, $1, :c";
    let (text, names) = placeholders(body, drv("pgsql"));
    assert_eq!(names, ["c"]);
    assert!(text.ends_with("$1, ?"), "{text}");
}

#[test]
fn a_pgsql_cast_and_a_quoted_placeholder_bind_nothing() {
    let text = ORDERS.replace(
        "SELECT count(*) FROM lines WHERE a = :cust",
        "SELECT count(*)::int, ':x' FROM lines WHERE a = :cust",
    );
    let catalog = load(&text).unwrap_or_else(|e| panic!("{e}"));
    let d = def_of(&catalog, "orders");
    let b = d.statements[3].sql.for_driver(drv("pgsql")).unwrap();
    assert_eq!(b.text, "SELECT count(*)::int, ':x' FROM lines WHERE a = ?");
    assert_eq!(b.binds, [3]);
}

#[test]
fn unknown_keys_are_refused_in_every_table() {
    let t = ORDERS.replace("summary = \"order entry\"", "summery = \"order entry\"");
    let e = refused(
        &t,
        "summery",
        "workloads.orders.summery",
        "unknown key `summery`",
    );
    assert!(e.help.unwrap().contains("summary"));
    let t = ORDERS.replace("weight = 3", "wieght = 3");
    refused(&t, "wieght", "new_order.wieght", "unknown key");
    let t = ORDERS.replace("expect_rows = 1 }", "expct_rows = 1 }");
    refused(&t, "expct_rows", "steps[0].expct_rows", "unknown key");
    let t = ORDERS.replace("dataset = true,", "datset = true,");
    refused(&t, "datset", "options.customers.datset", "unknown key");
    let t = ORDERS.replace("rows = \"customers\"", "rows = \"customers\"\nrowz = 1");
    refused(&t, "rowz", "load[0].rowz", "unknown key");
}

#[test]
fn an_unknown_placeholder_is_refused() {
    let t = ORDERS.replace("WHERE a = :cust", "WHERE a = :nope");
    let e = refused(
        &t,
        ":nope",
        "lookup.steps[0].sql",
        "unknown placeholder `:nope`",
    );
    assert!(
        e.to_string()
            .contains("key: workloads.orders.transactions.lookup"),
        "{e}"
    );
}

#[test]
fn a_variable_never_defined_is_refused() {
    let t = ORDERS.replace(
        "qty = { uniform = [1, 10] }",
        "qty = { uniform = [1, \"max_qty\"] }",
    );
    refused(&t, "max_qty", "params.qty.uniform[1]", "`max_qty`");
    let t = ORDERS.replace("when = \"amount > 10\"", "when = \"amont > 10\"");
    refused(&t, "amont", "steps[2].when", "`amont`");
}

#[test]
fn a_capture_used_before_it_is_set_is_refused() {
    let t = ORDERS.replace("WHERE a = :cust\" }]", "WHERE a = :c_name\" }]");
    // `lookup` reads the capture of `new_order`, which is not set in its own transaction.
    let e = refused(
        &t,
        ":c_name\" }]",
        "lookup.steps[0].sql",
        "before it is set",
    );
    assert!(e.message.contains("`c_name`"), "{e}");
    let t = ORDERS.replace(
        "SELECT c_name FROM customers WHERE c_id = :cust\"",
        "SELECT c_name FROM customers WHERE c_id = :i\"",
    );
    refused(
        &t,
        "c_id = :i",
        "new_order.steps[0].sql",
        "`i` before it is set",
    );
}

#[test]
fn zero_weights_or_no_transactions_are_refused() {
    let t = ORDERS
        .replace("weight = 3", "weight = 0")
        .replace("weight = 1", "weight = 0");
    refused(
        &t,
        "[workloads.orders.transactions.new_order]",
        "orders.transactions",
        "weight 0",
    );
    let start = ORDERS
        .find("[workloads.orders.transactions.new_order]")
        .unwrap();
    let t = ORDERS[..start].to_string();
    refused(
        &t,
        "[workloads.orders]",
        "workloads.orders",
        "no transactions",
    );
}

#[test]
fn a_weight_over_options_is_kept_and_anything_else_in_it_is_refused() {
    let t = ORDERS.replace("weight = 3", "weight = \"3 if mode == 'a' else 0\"");
    let catalog = load(&t).unwrap();
    let d = def_of(&catalog, "orders");
    let txn = &d.transactions[0];
    assert!(txn.weight_expr.is_some());
    let mut frame = crate::engine::custom::model::Frame {
        vals: vec![Val::Null; d.vars.len()],
    };
    let mode = d.vars.slot("mode").unwrap();
    frame.vals[mode] = Val::Str("a".into());
    assert_eq!(txn.weight_in(&frame), Ok(3));
    frame.vals[mode] = Val::Str("b".into());
    assert_eq!(txn.weight_in(&frame), Ok(0));
    // Constants are folded and checked here; a weight reads options only.
    let t = ORDERS.replace("weight = 3", "weight = \"2 * 4\"");
    assert_eq!(
        def_of(&load(&t).unwrap(), "orders").transactions[0].weight,
        8
    );
    let t = ORDERS.replace("weight = 3", "weight = \"1 - 2\"");
    refused(&t, "weight = \"1 - 2\"", "new_order.weight", "whole number");
    let t = ORDERS.replace("weight = 3", "weight = \"qty\"");
    refused(&t, "weight = \"qty\"", "new_order.weight", "qty");
}

#[test]
fn a_bad_expression_is_refused() {
    let t = ORDERS.replace(
        "let = { amount = \"qty * 3\" }",
        "let = { amount = \"qty *\" }",
    );
    refused(
        &t,
        "qty *",
        "new_order.let.amount",
        "not a valid expression",
    );
}

#[test]
fn a_built_in_workload_name_is_refused() {
    let t = ORDERS.replace(
        "[workloads.orders]",
        "[workloads.cpu]\nsummary = \"x\"\n\n[workloads.orders]",
    );
    refused(
        &t,
        "[workloads.cpu]",
        "workloads.cpu",
        "is a built-in workload",
    );
}

#[test]
fn option_names_of_general_or_built_in_options_are_refused() {
    let t = ORDERS.replace(
        "mode = { type = \"enum\"",
        "threads = { type = \"int\", default = 1 }\nmode = { type = \"enum\"",
    );
    refused(&t, "threads = { type", "options.threads", "general option");
    let t = ORDERS.replace(
        "mode = { type = \"enum\"",
        "table_size = { type = \"string\", default = \"x\" }\nmode = { type = \"enum\"",
    );
    let e = refused(
        &t,
        "table_size = { type",
        "options.table_size.type",
        "built-in option `table_size`",
    );
    assert!(e.help.unwrap().contains("type = \"int\""));
    let t = ORDERS.replace(
        "mode = { type = \"enum\"",
        "table_size = { type = \"int\", min = 1, default = 5 }\nmode = { type = \"enum\"",
    );
    let e = refused(
        &t,
        "table_size = { type",
        "options.table_size.type",
        "integer >= 0",
    );
    assert!(e.help.unwrap().contains("type = \"int\", min = 0"));
    // Declared as the built-in is, it is the same option (with its own default).
    let t = ORDERS.replace(
        "mode = { type = \"enum\"",
        "table_size = { type = \"int\", min = 0, default = 5 }\nmode = { type = \"enum\"",
    );
    let catalog = load(&t).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        def_of(&catalog, "orders").options[1].default.as_deref(),
        Some("5")
    );
}

#[test]
fn bad_generators_are_refused() {
    let t = ORDERS.replace("qty = { uniform = [1, 10] }", "qty = { unifrom = [1, 10] }");
    let e = refused(&t, "unifrom", "params.qty.unifrom", "unknown generator key");
    assert!(e.help.unwrap().contains("uniform"));
    let t = ORDERS.replace("qty = { uniform = [1, 10] }", "qty = { uniform = [1] }");
    refused(
        &t,
        "uniform = [1] }",
        "params.qty.uniform",
        "takes 2 values",
    );
    let t = ORDERS.replace(
        "qty = { uniform = [1, 10] }",
        "qty = { syllables = \"cust\", words = [\"A\", \"B\"] }",
    );
    refused(&t, "syllables", "params.qty.words", "10 strings");
    let t = ORDERS.replace(
        "qty = { uniform = [1, 10] }",
        "qty = { uniform = [1, 10], per_thread = true }",
    );
    refused(
        &t,
        "per_thread",
        "params.qty.per_thread",
        "belongs to the `sequence` generator",
    );
    let t = ORDERS.replace("qty = { uniform = [1, 10] }", "qty = { uniform = [10, 1] }");
    refused(
        &t,
        "uniform = [10, 1]",
        "params.qty.uniform",
        "greater than the second",
    );
}

#[test]
fn load_parents_must_exist_and_form_no_cycle() {
    let t = ORDERS.replace(
        "rows = \"customers\"",
        "parent = \"warehouse\"\nper_parent = 10",
    );
    refused(
        &t,
        "parent = \"warehouse\"",
        "load[0].parent",
        "`warehouse`",
    );
    let cycle = ORDERS.replace("rows = \"customers\"", "parent = \"b\"\nper_parent = 2")
        + "\n[[workloads.orders.load]]\ntable = \"b\"\nparent = \"customers\"\nper_parent = 2\ncolumns = [{ name = \"x\", gen = \"child\" }]\n";
    refused(&cycle, "parent = \"b\"", "load[0].parent", "cycle");
}

#[test]
fn a_headline_naming_no_transaction_is_refused() {
    let t = ORDERS.replace("transaction = \"new_order\"", "transaction = \"neworder\"");
    let e = refused(&t, "neworder", "headline.transaction", "`neworder`");
    assert!(e.help.unwrap().contains("new_order"));
}

#[test]
fn a_missing_workloads_file_names_the_suite_line_and_the_path() {
    let t = ORDERS.replace(
        "name = \"custom\"",
        "name = \"custom\"\nworkloads = [\"w/nope.toml\"]",
    );
    let e = refused(
        &t,
        "w/nope.toml",
        "suite.workloads[0]",
        "cannot read workloads file",
    );
    assert!(e.message.contains("nope.toml"), "{e}");
}

#[test]
fn an_error_in_a_workloads_file_points_into_that_file() {
    let dir = tempfile::tempdir().unwrap();
    let start = ORDERS.find("[workloads.orders]").unwrap();
    let defs = ORDERS[start..].replace("WHERE a = :cust", "WHERE a = :nope");
    std::fs::write(dir.path().join("orders.toml"), &defs).unwrap();
    let suite = ORDERS[..start].replace(
        "name = \"custom\"",
        "name = \"custom\"\nworkloads = [\"orders.toml\"]",
    );
    let file = dir.path().join("suite.toml");
    std::fs::write(&file, &suite).unwrap();
    let errors = load_file(&file).err().expect("refused");
    let e = &errors.0[0];
    assert_eq!(e.file, dir.path().join("orders.toml"));
    assert!(
        matches!(e.origin, Origin::File { line, .. } if line == line_of(&defs, ":nope")),
        "{e}"
    );
    // A workloads file holds only definitions.
    std::fs::write(
        dir.path().join("orders.toml"),
        format!("[defaults]\ntime = 1\n\n{}", &ORDERS[start..]),
    )
    .unwrap();
    let errors = load_file(&file).err().expect("refused");
    assert!(
        errors.0[0]
            .message
            .contains("`defaults` in a workloads file"),
        "{errors}"
    );
}

#[test]
fn an_fk_to_a_table_not_loaded_is_refused() {
    let t = ORDERS.replace(
        "let = { amount = \"qty * 3\" }",
        "let = { amount = { fk = \"custmers\" } }",
    );
    let e = refused(&t, "custmers", "new_order.let.amount.fk", "`custmers`");
    assert!(e.help.unwrap().contains("customers"));
    let t = ORDERS.replace(
        "let = { amount = \"qty * 3\" }",
        "let = { amount = { fk = \"customers\" } }",
    );
    let catalog = load(&t).unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(
        def_of(&catalog, "orders").transactions[0].body[0],
        Op::Let {
            value: GenSpec::Fk(_),
            ..
        }
    ));
}

#[test]
fn other_shapes_are_refused_with_their_key() {
    let t = ORDERS.replace("expect_rows = 1 }", "on_mismatch = \"rollback\" }");
    refused(
        &t,
        "on_mismatch",
        "steps[0].on_mismatch",
        "without `expect_rows`",
    );
    let t = ORDERS.replace("name = \"big\"", "name = \"lookup.1\"");
    refused(
        &t,
        "[workloads.orders.transactions.lookup]",
        "transactions.lookup",
        "used twice",
    );
    let t = ORDERS.replace("DROP TABLE IF EXISTS lines", "DROP TABLE :lines");
    refused(
        &t,
        "DROP TABLE :lines",
        "cleanup[1]",
        "only transaction statements bind",
    );
    let t = ORDERS.replace("cust = { uniform", "customers = { uniform");
    refused(
        &t,
        "customers = { uniform",
        "params.customers",
        "declared twice",
    );
    let t = ORDERS.replace("capture = [\"c_name\"]", "capture = [1]");
    refused(
        &t,
        "capture = [1]",
        "steps[0].capture",
        "list of column names",
    );
    let t = ORDERS.replace("rows = \"customers\"", "rows = \"cust\"");
    refused(
        &t,
        "rows = \"cust\"",
        "load[0].rows",
        "which a row count cannot read",
    );
    let t = ORDERS.replace("{ repeat = \"qty\", index = \"i\",", "{ index = \"i\",");
    refused(&t, "{ index = \"i\",", "steps[1].index", "without `repeat`");
    let t = ORDERS.replace("per = \"minute\"", "per = \"hour\"");
    refused(
        &t,
        "per = \"hour\"",
        "headline.per",
        "\"second\" or \"minute\"",
    );
}

/// #26: `capture` reads the first row of a result; a statement that returns none on every
/// driver (a write without RETURNING, DDL) is refused at its `capture`.
#[test]
fn a_capture_on_a_statement_without_rows_is_refused() {
    let t = ORDERS.replace(
        "{ when = \"amount > 10\", sql = \"UPDATE customers SET c_name = :c_name WHERE c_id = :cust\", name = \"big\" }",
        "{ when = \"amount > 10\", sql = \"UPDATE customers SET c_name = :c_name WHERE c_id = :cust\", name = \"big\", capture = [\"c_id\"] }",
    );
    let e = refused(
        &t,
        "name = \"big\"",
        "steps[2].capture",
        "this UPDATE returns no rows (on mysql, pgsql, sqlite)",
    );
    assert!(e.help.unwrap().contains("RETURNING"));
    // RETURNING returns rows; so does per-driver SQL that returns them on some drivers (the
    // capture is NULL on the others).
    for sql in [
        "sql = \"UPDATE customers SET c_name = :c_name WHERE c_id = :cust RETURNING c_id\"",
        "sql = { mysql = \"UPDATE customers SET c_name = :c_name WHERE c_id = :cust\", pgsql = \"UPDATE customers SET c_name = :c_name WHERE c_id = :cust RETURNING c_id\", sqlite = \"\" }",
    ] {
        let t = ORDERS.replace(
            "{ when = \"amount > 10\", sql = \"UPDATE customers SET c_name = :c_name WHERE c_id = :cust\", name = \"big\" }",
            &format!("{{ when = \"amount > 10\", {sql}, name = \"big\", capture = [\"c_id\"] }}"),
        );
        load(&t).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}

/// #26: a check's `expect` is an expression over the options, as strings are everywhere else;
/// numbers and booleans stay literal, text is quoted inside the expression.
#[test]
fn a_checks_expect_is_an_expression_over_the_options() {
    let with_check = |expect: &str| {
        format!(
            "{ORDERS}\n[[workloads.orders.checks]]\nname = \"c\"\nsql = \"SELECT count(*) FROM customers\"\nexpect = {expect}\n"
        )
    };
    let frame = |def: &Def, customers: i64| crate::engine::custom::model::Frame {
        vals: vec![Val::Int(customers); def.vars.len()],
    };
    for (expect, want) in [
        ("\"customers * 100\"", Val::Int(1000)),
        ("3", Val::Int(3)),
        ("2.5", Val::Float(2.5)),
        ("true", Val::Int(1)),
        ("\"'open'\"", Val::Str("open".into())),
    ] {
        let catalog = load(&with_check(expect)).unwrap_or_else(|e| panic!("{expect}: {e}"));
        let def = def_of(&catalog, "orders");
        let CheckExpect::Value(e) = &def.checks[0].expect else {
            panic!("{expect}: not a value");
        };
        assert_eq!(e.eval(&frame(def, 10)), Ok(want), "{expect}");
    }
    let t = with_check("\"open\"");
    let e = refused(&t, "expect = \"open\"", "checks[0].expect", "`open`");
    assert!(e.help.unwrap().contains("expect = \"'open'\""));
    // A check runs outside any transaction: it reads options only.
    let t = with_check("\"cust\"");
    let e = refused(&t, "expect = \"cust\"", "checks[0].expect", "`cust`");
    assert!(e.help.unwrap().contains("options only"));
}

/// #26: what fails whatever the data is refused where it is written: a division by a literal
/// zero, a power too large for any number, a range written as constants that is inverted.
#[test]
fn expressions_that_fail_whatever_the_data_are_refused() {
    for (from, to, marker, key, message) in [
        (
            "let = { amount = \"qty * 3\" }",
            "let = { amount = \"qty / 0\" }",
            "qty / 0",
            "new_order.let.amount",
            "divides by zero",
        ),
        (
            "let = { amount = \"qty * 3\" }",
            "let = { amount = \"2 ** 100000000\" }",
            "100000000",
            "new_order.let.amount",
            "failed",
        ),
        (
            "qty = { uniform = [1, 10] }",
            "qty = { uniform = [\"5 * 2\", 1] }",
            "5 * 2",
            "params.qty.uniform",
            "goes from 10 to 1",
        ),
        (
            "qty = { uniform = [1, 10] }",
            "qty = { float = [10.5, 1.0] }",
            "10.5",
            "params.qty.float",
            "goes from 10.5 to 1",
        ),
        (
            "qty = { uniform = [1, 10] }",
            "qty = { uniform = [1, \"7 / 2\"] }",
            "7 / 2",
            "params.qty.uniform[1]",
            "integer bounds",
        ),
    ] {
        let t = ORDERS.replace(from, to);
        refused(&t, marker, key, message);
    }
    // Constants fold: the compiled expression is its value.
    let t = ORDERS.replace(
        "let = { amount = \"qty * 3\" }",
        "let = { amount = \"2 ** 10\" }",
    );
    let catalog = load(&t).unwrap_or_else(|e| panic!("{e}"));
    let Op::Let {
        value: GenSpec::Expr(e),
        ..
    } = &def_of(&catalog, "orders").transactions[0].body[0]
    else {
        panic!("not a let");
    };
    assert_eq!(e.as_const(), Some(&Val::Int(1024)));
}
