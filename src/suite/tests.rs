//! Bad-input tests: each kind of mistake gives a message naming the key, the right line and
//! column, and a fix.

use super::*;

mod capacity;
mod custom;

const GOOD: &str = r#"[suite]
name = "t"

[defaults]
time = 1

[matrix]
workload = ["cpu"]
threads = [1, 2]
"#;

fn load(text: &str) -> Result<Suite, ConfigErrors> {
    load_text(Path::new("t.toml"), text, &[], &[])
}

/// The first error, asserting it is located on `line`.
fn first_error(text: &str, line: usize) -> ConfigError {
    let errors = load(text).err().expect("the suite must be rejected");
    let e = errors.0[0].clone();
    match &e.origin {
        Origin::File { line: l, .. } => assert_eq!(*l, line, "wrong line for: {e}"),
        other => panic!("expected a file position, got {other:?} for: {e}"),
    }
    e
}

#[test]
fn good_suite_loads() {
    let s = load(GOOD).unwrap();
    assert_eq!(s.name, "t");
    assert_eq!(s.matrix.axes.len(), 2);
    assert_eq!(s.matrix.axes[1].values, vec![Value::Int(1), Value::Int(2)]);
}

#[test]
fn unknown_option_suggests_spelling() {
    let e = first_error(&GOOD.replace("threads = [1, 2]", "thraeds = [1, 2]"), 9);
    assert_eq!(e.key, "matrix.thraeds");
    assert!(e.message.contains("unknown option `thraeds`"), "{e}");
    assert_eq!(e.help.as_deref(), Some("did you mean `threads`?"));
}

#[test]
fn unknown_table_key_suggests_spelling() {
    let e = first_error(&GOOD.replace("name = \"t\"", "name = \"t\"\nrepeet = 2"), 3);
    assert_eq!(e.key, "suite.repeet");
    assert!(e.message.contains("unknown key `repeet` in [suite]"), "{e}");
    assert_eq!(e.help.as_deref(), Some("did you mean `repeat`?"));
}

#[test]
fn unknown_top_level_table() {
    let e = first_error(&format!("{GOOD}\n[defualts]\nx = 1\n"), 11);
    assert!(e.message.contains("unknown key `defualts`"), "{e}");
    assert_eq!(e.help.as_deref(), Some("did you mean `defaults`?"));
}

#[test]
fn wrong_type() {
    let e = first_error(&GOOD.replace("time = 1", "time = \"soon\""), 5);
    assert_eq!(e.key, "defaults.time");
    assert!(
        e.message
            .contains("invalid value for `time`: expected an integer"),
        "{e}"
    );
    let e = first_error(
        &GOOD.replace("name = \"t\"", "name = \"t\"\nrepeat = \"x\""),
        3,
    );
    assert!(e.message.contains("wrong type"), "{e}");
}

/// #14 item 5: `rate_overflow` takes `fail` (the default) or `record`; anything else names
/// the key, its line and the two values.
#[test]
fn rate_overflow_is_fail_or_record() {
    assert_eq!(load(GOOD).unwrap().rate_overflow, raw::RateOverflow::Fail);
    let record = GOOD.replace("name = \"t\"", "name = \"t\"\nrate_overflow = \"record\"");
    assert_eq!(
        load(&record).unwrap().rate_overflow,
        raw::RateOverflow::Record
    );
    let e = first_error(
        &GOOD.replace("name = \"t\"", "name = \"t\"\nrate_overflow = \"drop\""),
        3,
    );
    assert_eq!(e.key, "suite.rate_overflow");
    assert!(e.message.contains("unknown value `drop`"), "{e}");
    assert_eq!(e.help.as_deref(), Some("expected one of: fail, record"));
}

/// #26: `[suite] dataset` takes `prepare` (the default) or `existing`; anything else names the
/// key, its line and the two values.
#[test]
fn dataset_is_prepare_or_existing() {
    assert_eq!(load(GOOD).unwrap().dataset, raw::DatasetSource::Prepare);
    let existing = GOOD.replace("name = \"t\"", "name = \"t\"\ndataset = \"existing\"");
    assert_eq!(
        load(&existing).unwrap().dataset,
        raw::DatasetSource::Existing
    );
    let e = first_error(
        &GOOD.replace("name = \"t\"", "name = \"t\"\ndataset = \"mine\""),
        3,
    );
    assert_eq!(e.key, "suite.dataset");
    assert_eq!(
        e.help.as_deref(),
        Some("expected one of: prepare, existing")
    );
}

/// #18: `[suite] metrics` is checked for the shape of a listen address with its line.
#[test]
fn metrics_is_a_listen_address() {
    for ok in [":9464", "9464", "127.0.0.1:9464", "[::1]:9464"] {
        let text = GOOD.replace("name = \"t\"", &format!("name = \"t\"\nmetrics = \"{ok}\""));
        assert_eq!(load(&text).unwrap().metrics.as_deref(), Some(ok));
    }
    let e = first_error(
        &GOOD.replace("name = \"t\"", "name = \"t\"\nmetrics = \"localhost\""),
        3,
    );
    assert_eq!(e.key, "suite.metrics");
    assert!(e.message.contains("no port"), "{e}");
    assert!(e.help.as_deref().unwrap().contains(":9464"));
}

#[test]
fn empty_axis() {
    let e = first_error(&GOOD.replace("threads = [1, 2]", "threads = []"), 9);
    assert!(e.message.contains("axis `threads` is empty"), "{e}");
    assert!(e.to_string().contains("t.toml:9:11"), "{e}");
}

#[test]
fn zero_threads_points_at_the_value() {
    let e = first_error(&GOOD.replace("threads = [1, 2]", "threads = [1, 0]"), 9);
    assert!(e.message.contains("0 is out of range"), "{e}");
    assert_eq!(e.help.as_deref(), Some("`threads` must be at least 1"));
    assert!(matches!(e.origin, Origin::File { col: 15, .. }), "{e}");
}

#[test]
fn range_from_greater_than_to() {
    let e = first_error(
        &GOOD.replace(
            "threads = [1, 2]",
            "threads = { from = 64, to = 8, factor = 2 }",
        ),
        9,
    );
    assert!(e.message.contains("`from` is greater than `to`"), "{e}");
}

#[test]
fn factor_must_grow() {
    let e = first_error(
        &GOOD.replace(
            "threads = [1, 2]",
            "threads = { from = 1, to = 8, factor = 1 }",
        ),
        9,
    );
    assert!(e.message.contains("factor must be greater than 1"), "{e}");
    let e = first_error(
        &GOOD.replace(
            "threads = [1, 2]",
            "threads = { from = 1, to = 8, step = 0 }",
        ),
        9,
    );
    assert!(e.message.contains("step must be greater than 0"), "{e}");
}

#[test]
fn unknown_workload() {
    let e = first_error(&GOOD.replace("[\"cpu\"]", "[\"cpuu\"]"), 8);
    assert!(e.message.contains("unknown workload `cpuu`"), "{e}");
    assert!(
        e.help
            .as_deref()
            .unwrap()
            .starts_with("did you mean `cpu`?"),
        "{e}"
    );
}

#[test]
fn toml_syntax_error() {
    let e = first_error(&GOOD.replace("time = 1", "time = = 1"), 5);
    assert!(e.message.starts_with("TOML syntax error"), "{e}");
}

#[test]
fn empty_file() {
    let errors = load("  \n").err().unwrap();
    assert!(errors.0[0].message.contains("the suite file is empty"));
    assert!(errors.to_string().contains("t.toml"));
    // Errors without a line (#13): even an empty file is pointed at, line 1.
    let e = first_error("  \n", 1);
    assert!(e.to_string().contains("--> t.toml:1:1"), "{e}");
    let e = first_error("", 1);
    assert!(e.help.as_deref().unwrap().contains("[suite]"), "{e}");
}

#[test]
fn missing_suite_table() {
    let errors = load("[defaults]\ntime = 1\n").err().unwrap();
    assert!(
        errors.0[0].message.contains("missing key `suite`"),
        "{}",
        errors
    );
    // Errors without a line (#13): the missing table is reported at line 1, with what to add.
    let e = first_error("[defaults]\ntime = 1\n", 1);
    assert!(e.to_string().contains("--> t.toml:1:1"), "{e}");
    assert!(
        e.help.as_deref().unwrap().contains("add a `[suite]` table"),
        "{e}"
    );
    let e = first_error("# only a comment\n", 1);
    assert!(e.message.contains("missing key `suite`"), "{e}");
}

/// Errors without a line (#13): invalid UTF-8 names the line and column of the first bad byte.
#[test]
fn invalid_utf8_names_the_first_bad_byte() {
    let bytes = b"[suite]\nname = \"caf\xe9\"\n\n[defaults]\nworkload = \"cpu\"\n";
    let errors = load_bytes(Path::new("t.toml"), bytes, &[], &[])
        .err()
        .unwrap();
    let e = &errors.0[0];
    assert!(e.message.contains("not valid UTF-8"), "{e}");
    assert!(e.message.contains("0xE9"), "{e}");
    assert!(
        matches!(
            e.origin,
            Origin::File {
                line: 2,
                col: 12,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("t.toml:2:12"), "{e}");
    assert!(e.help.as_deref().unwrap().contains("UTF-8"), "{e}");
    // A bad byte at the very start, and one cut off at the end of the file.
    let errors = load_bytes(Path::new("t.toml"), b"\xff", &[], &[])
        .err()
        .unwrap();
    assert!(matches!(
        errors.0[0].origin,
        Origin::File {
            line: 1,
            col: 1,
            ..
        }
    ));
    let errors = load_bytes(Path::new("t.toml"), b"[suite]\n\n# \xe2\x82", &[], &[])
        .err()
        .unwrap();
    assert!(
        matches!(
            errors.0[0].origin,
            Origin::File {
                line: 3,
                col: 3,
                ..
            }
        ),
        "{}",
        errors
    );
}

/// Errors without a line (#13): toml reports its recursion limit for dotted keys without a
/// position ("at the marked position" with nothing marked); the line of the key is found.
#[test]
fn recursion_limit_of_dotted_keys_points_at_the_key() {
    let deep = vec!["a"; 300].join(".");
    for text in [
        format!("{GOOD}x.{deep} = 1\n"),
        format!("{GOOD}[{deep}]\nx = 1\n"),
        format!("{GOOD}[[{deep}]]\nx = 1\n"),
        format!("{GOOD}  x = {{ {deep} = 1 }}\n"),
    ] {
        let e = first_error(&text, 10);
        assert!(e.message.contains("recursion limit"), "{e}");
        let text = e.to_string();
        assert!(text.contains("t.toml:10:"), "{text}");
        assert!(e.help.as_deref().unwrap().contains("nest"), "{e}");
    }
    // Nested arrays already carried a position; they keep it.
    let text = format!("{GOOD}x = {}{}\n", "[".repeat(200), "]".repeat(200));
    let e = first_error(&text, 10);
    assert!(e.message.contains("recurse"), "{e}");
}

/// A suite that nests thousands of levels (dotted keys inside inline tables, each within toml's
/// own limits) overflowed the stack in toml's conversion and aborted the process; it is refused
/// at the line where the nesting goes too deep.
#[test]
fn nesting_bomb_is_refused_without_overflowing_the_stack() {
    let key = vec!["a"; 79].join(".");
    let value = format!("{}1{}", format!("{{ {key} = ").repeat(78), " }".repeat(78));
    let text = format!("{GOOD}[{key}]\n{key} = {value}\n");
    let e = first_error(&text, 10);
    assert!(e.message.contains("nests deeper than"), "{e}");
    assert!(e.help.as_deref().unwrap().contains("flatten"), "{e}");
    // A few levels are fine for the parser (and then refused by validation as usual).
    let e = first_error(&format!("{GOOD}[matrix.a.b.c]\nd = 1\n"), 10);
    assert!(!e.message.contains("nests deeper"), "{e}");
}

/// Errors without a line (#13): a suite with no workload at all points at the file and says
/// what to add.
#[test]
fn no_workload_anywhere() {
    let e = first_error("[suite]\nname = \"t\"\n", 1);
    assert!(e.message.contains("no workload"), "{e}");
    assert!(
        e.help.as_deref().unwrap().contains("workload = \"cpu\""),
        "{e}"
    );
    // With [defaults] or [matrix], at its header.
    let e = first_error("[suite]\nname = \"t\"\n\n[defaults]\ntime = 1\n", 4);
    assert!(e.message.contains("no workload"), "{e}");
    let e = first_error("[suite]\nname = \"t\"\n\n[matrix]\nthreads = [1, 2]\n", 4);
    assert!(e.message.contains("no workload"), "{e}");
    assert_eq!(e.key, "matrix.workload");
}

#[test]
fn zip_lengths_must_match() {
    let text = GOOD.replace(
        "threads = [1, 2]",
        "threads = [1, 2]\ncpu_max_prime = [10, 20, 30]\nzip = [[\"threads\", \"cpu_max_prime\"]]",
    );
    let e = first_error(&text, 11);
    assert!(e.message.contains("same length"), "{e}");
}

#[test]
fn exclude_names_an_axis() {
    let text = GOOD.replace(
        "threads = [1, 2]",
        "threads = [1, 2]\nexclude = [{ thread = 2 }]",
    );
    let e = first_error(&text, 10);
    assert!(
        e.message
            .contains("exclude key `thread` is not a matrix axis"),
        "{e}"
    );
    assert_eq!(e.help.as_deref(), Some("did you mean `threads`?"));
}

#[test]
fn duplicate_variant_and_bad_size() {
    let text = format!("{GOOD}\n[[variant]]\nname = \"a\"\n\n[[variant]]\nname = \"a\"\n");
    let e = first_error(&text, 15);
    assert!(e.message.contains("duplicate variant name"), "{e}");
}

#[test]
fn several_errors_are_reported_together() {
    let text = GOOD
        .replace("time = 1", "time = -1")
        .replace("threads = [1, 2]", "threads = []");
    let errors = load(&text).err().unwrap();
    assert_eq!(errors.0.len(), 2, "{errors}");
}

#[test]
fn env_and_set_layers_override_the_file_in_order() {
    let env = vec![("SBSUITE_DEFAULTS__TIME".to_string(), "7".to_string())];
    let s = load_text(Path::new("t.toml"), GOOD, &[], &env).unwrap();
    assert_eq!(s.defaults["time"], Value::Int(7));
    let set = SetOverride::parse("time=9").unwrap();
    let s = load_text(Path::new("t.toml"), GOOD, &[set], &env).unwrap();
    assert_eq!(s.defaults["time"], Value::Int(9));
    let set = SetOverride::parse("matrix.threads=[4, 8]").unwrap();
    let s = load_text(Path::new("t.toml"), GOOD, &[set], &[]).unwrap();
    assert_eq!(s.matrix.axes[1].values, vec![Value::Int(4), Value::Int(8)]);
    // #26: the range form, an inline table, as in the file.
    let set = SetOverride::parse("matrix.threads={from=2,to=8,factor=2}").unwrap();
    let env = vec![(
        "SBSUITE_MATRIX__THREADS".to_string(),
        "{ from = 1, to = 3 }".to_string(),
    )];
    let s = load_text(Path::new("t.toml"), GOOD, &[set], &env).unwrap();
    assert_eq!(
        s.matrix.axes[1].values,
        vec![Value::Int(2), Value::Int(4), Value::Int(8)]
    );
    let s = load_text(Path::new("t.toml"), GOOD, &[], &env).unwrap();
    assert_eq!(
        s.matrix.axes[1].values,
        vec![Value::Int(1), Value::Int(2), Value::Int(3)]
    );
}

#[test]
fn errors_from_layers_name_their_source() {
    let env = vec![("SBSUITE_DEFAULTS__TIME".to_string(), "soon".to_string())];
    let errors = load_text(Path::new("t.toml"), GOOD, &[], &env)
        .err()
        .unwrap();
    assert_eq!(
        errors.0[0].origin,
        Origin::Env("SBSUITE_DEFAULTS__TIME".into())
    );
    let set = SetOverride::parse("matrix.threads=[0]").unwrap();
    let errors = load_text(Path::new("t.toml"), GOOD, &[set], &[])
        .err()
        .unwrap();
    assert_eq!(errors.0[0].origin, Origin::Set("matrix.threads=[0]".into()));
}

#[test]
fn literal_passwords_are_redacted_templates_kept() {
    let text = format!("{GOOD}\n[target]\ndriver = \"mysql\"\npassword = \"hunter2\"\n");
    let s = load(&text).unwrap();
    assert!(!s.resolved_toml.contains("hunter2"), "{}", s.resolved_toml);
    assert!(s.resolved_toml.contains("***"));
    let text =
        format!("{GOOD}\n[target]\ndriver = \"mysql\"\npassword = \"{{{{ env.DB_PASSWORD }}}}\"\n");
    let s = load(&text).unwrap();
    assert!(
        s.resolved_toml.contains("{{ env.DB_PASSWORD }}"),
        "{}",
        s.resolved_toml
    );
}

#[test]
fn literal_passwords_of_hosts_entries_are_redacted_templates_kept() {
    let text = format!(
        "{GOOD}\n[target]\ndriver = \"mysql\"\nhosts = [{{ host = \"a\", password = \"hunter2\" }}, \"b\", {{ host = \"c\", password = \"{{{{ env.PW3 }}}}\" }}]\n"
    );
    let s = load(&text).unwrap();
    assert!(!s.resolved_toml.contains("hunter2"), "{}", s.resolved_toml);
    assert!(s.resolved_toml.contains("***"), "{}", s.resolved_toml);
    assert!(
        s.resolved_toml.contains("{{ env.PW3 }}"),
        "{}",
        s.resolved_toml
    );
    assert!(crate::suite::stored::has_literal_password(
        s.target.as_ref()
    ));
}

#[test]
fn sizes_and_numbers_are_typed() {
    let text = GOOD.replace(
        "threads = [1, 2]",
        "threads = [1.0, 2]\nexclude = [{ threads = 2.0 }]",
    );
    let s = load(&text).unwrap();
    assert_eq!(s.matrix.axes[1].values, vec![Value::Int(1), Value::Int(2)]);
    assert_eq!(s.matrix.exclude[0]["threads"], Value::Int(2));
}

#[test]
fn stop_when_names_an_axis_and_known_conditions() {
    let ok = GOOD.replace(
        "threads = [1, 2]",
        "threads = [1, 2]\nstop_when = { threads = { tps_gain_below = 5, p95_above = 50.5 } }",
    );
    let s = load(&ok).unwrap();
    assert_eq!(s.matrix.stop_when.len(), 1);
    assert_eq!(s.matrix.stop_when[0].p95_above, Some(50.5));
    assert_eq!(s.matrix.axes.len(), 2, "stop_when is not an axis");
    let bad_axis = GOOD.replace(
        "threads = [1, 2]",
        "threads = [1, 2]\nstop_when = { thread = { tps_gain_below = 5 } }",
    );
    let e = first_error(&bad_axis, 10);
    assert!(e.message.contains("`thread` is not a matrix axis"), "{e}");
    assert_eq!(e.help.as_deref(), Some("did you mean `threads`?"));
    let bad_cond = GOOD.replace(
        "threads = [1, 2]",
        "threads = [1, 2]\nstop_when = { threads = { tps_gain_bellow = 5 } }",
    );
    let e = first_error(&bad_cond, 10);
    assert!(
        e.message
            .contains("unknown stop_when condition `tps_gain_bellow`"),
        "{e}"
    );
    assert_eq!(e.help.as_deref(), Some("did you mean `tps_gain_below`?"));
    let text_axis = GOOD.replace(
        "[matrix]",
        "[matrix]\nstop_when = { workload = { p95_above = 1 } }",
    );
    let e = load(&text_axis).err().unwrap();
    assert!(
        e.0[0].message.contains("needs a numeric axis"),
        "{}",
        e.0[0]
    );
}

/// #13: the stored suite.toml keeps the user's key and axis order (`run --resume` refused every
/// suite whose axes were not in alphabetical order).
#[test]
fn stored_suite_keeps_the_file_order() {
    let text = r#"[suite]
name = "t"

[defaults]
time = 1
table_size = 1000
cpu_max_prime = 2000

[matrix]
workload = ["cpu", "oltp_read_only"]
threads = { from = 1, to = 4, factor = 2 }
tables = [2, 1]

[[variant]]
name = "v"
set_global = { sync_binlog = 1, autocommit = 1 }
"#;
    let env = [("SBSUITE_DEFAULTS__PERCENTILE".to_string(), "99".to_string())];
    let set = SetOverride::parse("matrix.threads=[2,1]").unwrap();
    let s = load_text(Path::new("t.toml"), text, &[set], &env).unwrap();
    let axes: Vec<&str> = s.matrix.axes.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(
        axes,
        ["workload", "threads", "tables"],
        "axes nest as written"
    );
    let defaults: Vec<&str> = s.defaults.keys().map(String::as_str).collect();
    assert_eq!(
        defaults,
        ["time", "table_size", "cpu_max_prime", "percentile"],
        "file order, then keys only the environment added"
    );
    let set_global: Vec<&str> = s.variants[0]
        .set_global
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(set_global, ["sync_binlog", "autocommit"]);

    let stored = load(&s.resolved_toml).unwrap();
    let axes: Vec<&str> = stored.matrix.axes.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(
        axes,
        ["workload", "threads", "tables"],
        "{}",
        s.resolved_toml
    );
    assert_eq!(stored.resolved_toml, s.resolved_toml, "a fixed point");
    // That it rebuilds the same plan: plan::tests::the_stored_suite_rebuilds_the_same_plan.
}

#[test]
fn a_range_axis_written_first_stays_first_in_the_stored_suite() {
    let text = GOOD.replace(
        "workload = [\"cpu\"]\nthreads = [1, 2]",
        "threads = { from = 1, to = 2, step = 1 }\nworkload = [\"cpu\"]",
    );
    let s = load(&text).unwrap();
    let stored = load(&s.resolved_toml).unwrap();
    let axes: Vec<&str> = stored.matrix.axes.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(axes, ["threads", "workload"], "{}", s.resolved_toml);
}

/// Every shipped suite survives the round trip the run directory makes (written to suite.toml,
/// loaded again by `--resume`): the same text and the same axes, in the same order.
#[test]
fn every_shipped_suite_reads_back_from_its_stored_text() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = ["suites", "examples"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root.join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 8, "{files:?}");
    for file in files {
        let s = load_with_env(&file, &[], &[]).unwrap_or_else(|e| panic!("{e}"));
        let back = load_text(Path::new("suite.toml"), &s.resolved_toml, &[], &[])
            .unwrap_or_else(|e| panic!("{}: {e}\n{}", file.display(), s.resolved_toml));
        assert_eq!(back.resolved_toml, s.resolved_toml, "{}", file.display());
        assert_eq!(back.matrix.axes, s.matrix.axes, "{}", file.display());
        let names: Vec<&str> = s.matrix.axes.iter().map(|a| a.name.as_str()).collect();
        let text = std::fs::read_to_string(&file).unwrap();
        let mut at: Vec<usize> = names
            .iter()
            .map(|n| text.find(&format!("\n{n} =")).unwrap_or(usize::MAX))
            .collect();
        let written = at.clone();
        at.sort();
        assert_eq!(
            written,
            at,
            "{}: axes {names:?} in file order",
            file.display()
        );
    }
}

/// Found by the suite fuzzer (#13): two ranges of 3,000 values (nine million cells) took
/// gigabytes and minutes in `sbsuite plan`, and `repeat = 10000` over a 10,000-value axis never
/// finished; the size of the plan is bounded before it is built.
#[test]
fn huge_plan_is_refused_before_it_is_built() {
    let text = GOOD.replace(
        "threads = [1, 2]",
        "threads = { from = 1, to = 3000 }\ncpu_max_prime = { from = 1, to = 3000 }",
    );
    let e = first_error(&text, 7);
    assert!(e.message.contains("plans 9000000 runs"), "{e}");
    assert!(e.message.contains("more than 100000"), "{e}");
    let text = GOOD
        .replace("name = \"t\"", "name = \"t\"\nrepeat = 10000")
        .replace("threads = [1, 2]", "threads = { from = 1, to = 10000 }");
    let e = first_error(&text, 8);
    assert!(
        e.message.contains("10000 matrix cells × 10000 repetitions"),
        "{e}"
    );
    // Zipped axes advance together: 3,000 cells, not nine million.
    let text = GOOD.replace(
        "threads = [1, 2]",
        "threads = { from = 1, to = 3000 }\ncpu_max_prime = { from = 1, to = 3000 }\nzip = [[\"threads\", \"cpu_max_prime\"]]",
    );
    assert!(load(&text).is_ok());
}

/// A suite with a MySQL target and `variant` (TOML lines after `[[variant]]`).
fn with_variant(variant: &str) -> String {
    format!(
        "[suite]\nname = \"t\"\n\n[target]\ndriver = \"mysql\"\n\n[matrix]\nworkload = [\"oltp_point_select\"]\n\n[[variant]]\n{variant}"
    )
}

const OB_SQL: &str = "sql = { apply = \"ALTER SYSTEM SET {{ name }} = {{ value }}\", read = \"SHOW PARAMETERS LIKE '{{ name }}'\", column = \"value\" }";

#[test]
fn stages_parse_with_their_own_or_the_variants_sql() {
    let s = load(&with_variant(&format!(
        "name = \"obd\"\nset_global = {{ ob_query_timeout = 1 }}\n{OB_SQL}\nprepare = {{ settings = {{ freeze_trigger_percentage = 30 }} }}\n\n[variant.run]\nset_global = {{ ob_trx_timeout = 2 }}\nsettings = {{ freeze_trigger_percentage = 40 }}\n"
    )))
    .unwrap();
    use raw::Stage;
    let v = &s.variants[0];
    assert!(v.settings.is_empty(), "the variant's sql serves its stages");
    let prepare = v.stage(Stage::Prepare).unwrap();
    assert_eq!(
        prepare.settings["freeze_trigger_percentage"],
        Value::Int(30)
    );
    assert!(v.stage_sql(Stage::Prepare).is_some());
    let run = v.stage(Stage::Run).unwrap();
    assert_eq!(run.set_global["ob_trx_timeout"], Value::Int(2));
    assert_eq!(run.settings["freeze_trigger_percentage"], Value::Int(40));
    assert!(v.changes_server());
}

#[test]
fn a_stage_with_settings_needs_sql() {
    let e = first_error(
        &with_variant("name = \"obd\"\n\n[variant.run]\nsettings = { open_cursors = 100 }\n"),
        14,
    );
    assert_eq!(e.key, "variant[0].run.settings");
    assert!(
        e.message
            .contains("variant `obd` has `settings` but no `sql` to apply them"),
        "{e}"
    );
    assert!(
        e.help
            .as_deref()
            .unwrap_or_default()
            .contains("prepare` and `run` use it too"),
        "{e:?}"
    );
}

#[test]
fn a_variant_sql_that_serves_no_settings_is_refused() {
    let e = first_error(
        &with_variant(&format!(
            "name = \"obd\"\n{OB_SQL}\nrun = {{ set_global = {{ ob_trx_timeout = 2 }} }}\n"
        )),
        12,
    );
    assert_eq!(e.key, "variant[0].sql");
    assert!(e.message.contains("has `sql` but no `settings`"), "{e}");
}

#[test]
fn a_setting_for_the_whole_variant_and_a_stage_is_refused() {
    let e = first_error(
        &with_variant(
            "name = \"obd\"\nset_global = { ob_query_timeout = 1 }\n\n[variant.prepare]\nset_global = { ob_query_timeout = 2 }\n",
        ),
        15,
    );
    assert_eq!(e.key, "variant[0].prepare.set_global.ob_query_timeout");
    assert_eq!(
        e.message,
        "variant `obd` sets ob_query_timeout both for the whole variant and in `prepare`"
    );
    assert!(
        e.help
            .as_deref()
            .unwrap_or_default()
            .contains("in `prepare.set_global` and `run.set_global` for a value per stage"),
        "{e:?}"
    );
}

#[test]
fn a_stage_cannot_restart_nor_be_empty_nor_have_unknown_keys() {
    let e = first_error(
        &with_variant(
            "name = \"obd\"\n\n[variant.run]\nrestart = { template = \"t.j2\", path = \"/x\", command = \"true\" }\n",
        ),
        14,
    );
    assert_eq!(e.key, "variant[0].run.restart");
    assert!(
        e.message.contains(
            "`restart` cannot be limited to the run stage: a restart applies to the whole variant"
        ),
        "{e}"
    );
    assert!(
        e.help
            .as_deref()
            .unwrap_or_default()
            .starts_with("move `restart` to the variant itself"),
        "{e:?}"
    );
    let e = first_error(&with_variant("name = \"obd\"\nprepare = {}\n"), 12);
    assert_eq!(e.key, "variant[0].prepare");
    assert_eq!(e.message, "variant `obd`: `prepare` sets nothing");
    let errors = load(&with_variant(
        "name = \"obd\"\nrun = { set_globl = { x = 1 } }\n",
    ))
    .err()
    .expect("an unknown key is refused");
    let text = errors.to_string();
    assert!(text.contains("set_globl"), "{text}");
}

#[test]
fn a_stage_sql_template_error_names_where_the_template_is() {
    let e = first_error(
        &with_variant(&format!(
            "name = \"obd\"\n{}\n\n[variant.run]\nsettings = {{ open_cursors = 100 }}\n",
            OB_SQL.replace("{{ name }} = {{ value }}", "{{ nam }} = {{ value }}")
        )),
        12,
    );
    assert_eq!(e.key, "variant[0].sql.apply");
}
