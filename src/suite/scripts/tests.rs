//! Script workloads in suites: loading, typed option axes, errors with their line, the stored
//! form (the plan's command steps are tested in `plan::tests`).

use std::path::{Path, PathBuf};

use crate::source::{ConfigErrors, Origin};
use crate::suite::{Suite, load_text};
use crate::value::Value;

/// The script the integration tests use too.
pub(crate) const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lua/suite_demo.lua");

/// A directory holding `scripts/demo.lua` (a copy of [`DEMO`]) and the suite file's path in it.
pub(crate) fn dir() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(d.path().join("scripts")).expect("mkdir");
    std::fs::copy(DEMO, d.path().join("scripts/demo.lua")).expect("copy");
    let file = d.path().join("s.toml");
    (d, file)
}

fn load(file: &Path, text: &str) -> Result<Suite, ConfigErrors> {
    load_text(file, text, &[], &[])
}

pub(crate) const SUITE: &str = r#"[suite]
name = "lua"

[defaults]
time = 1
rows = 20

[matrix]
workload = ["cpu", { script = "scripts/demo.lua", dataset = ["tables", "rows"], before_runs = ["prewarm"], after_runs = ["check"] }]
tables = [1, 2]
read_share = [0.25, 0.75]
"#;

fn line_of(e: &crate::source::ConfigError) -> usize {
    match &e.origin {
        Origin::File { line, .. } => *line,
        other => panic!("expected a file position, got {other:?} for: {e}"),
    }
}

#[test]
fn script_options_are_typed_axes() {
    let (_d, file) = dir();
    let s = load(&file, SUITE).unwrap_or_else(|e| panic!("{e}"));
    let u = s
        .scripts
        .get("scripts/demo.lua")
        .expect("the script is known");
    assert_eq!(u.dataset, ["tables", "rows"]);
    assert_eq!(u.before_runs, ["prewarm"]);
    assert_eq!(u.after_runs, ["check"]);
    assert_eq!(u.spec.data.keys, ["rows", "tables"]);
    let workload = &s.matrix.axes[0];
    assert_eq!(
        workload.values,
        [
            Value::Str("cpu".into()),
            Value::Str("scripts/demo.lua".into())
        ]
    );
    // A DOUBLE option's axis holds numbers; a quoted number is coerced like any other.
    let share = s
        .matrix
        .axes
        .iter()
        .find(|a| a.name == "read_share")
        .expect("axis");
    assert_eq!(share.values, [Value::Float(0.25), Value::Float(0.75)]);
    let bad = SUITE.replace("read_share = [0.25, 0.75]", "read_share = [0.25, \"lots\"]");
    let e = load(&file, &bad).err().expect("refused");
    assert!(
        e.0[0].message.contains("invalid value for `read_share`"),
        "{e}"
    );
    assert_eq!(line_of(&e.0[0]), 11);
}

#[test]
fn a_misspelt_script_option_names_its_line_and_the_right_name() {
    let (_d, file) = dir();
    let e = load(&file, &SUITE.replace("read_share = [", "read_shere = ["))
        .err()
        .expect("refused");
    let first = &e.0[0];
    assert_eq!(line_of(first), 11, "{e}");
    assert_eq!(first.key, "matrix.read_shere");
    assert!(first.message.contains("unknown option `read_shere`"), "{e}");
    assert_eq!(first.help.as_deref(), Some("did you mean `read_share`?"));
}

#[test]
fn a_missing_script_names_its_key_and_where_it_was_looked_for() {
    let (d, file) = dir();
    let e = load(
        &file,
        &SUITE.replace("scripts/demo.lua", "scripts/nope.lua"),
    )
    .err()
    .expect("refused");
    let first = &e.0[0];
    assert_eq!(line_of(first), 9);
    assert_eq!(first.key, "matrix.workload[1].script");
    assert!(
        first
            .message
            .contains("cannot read script `scripts/nope.lua`")
            && first
                .message
                .contains(&d.path().join("scripts/nope.lua").display().to_string()),
        "{e}"
    );
    assert!(
        first
            .help
            .as_deref()
            .unwrap_or_default()
            .contains("relative to the suite file's directory"),
        "{e}"
    );
}

#[test]
fn dataset_and_commands_must_be_the_scripts_own() {
    let (_d, file) = dir();
    let text = SUITE
        .replace("dataset = [\"tables\", \"rows\"]", "dataset = [\"tabels\"]")
        .replace(
            "after_runs = [\"check\"]",
            "after_runs = [\"chek\", \"cleanup\"]",
        );
    let e = load(&file, &text).err().expect("refused");
    let messages: Vec<String> = e.0.iter().map(ToString::to_string).collect();
    assert_eq!(e.0.len(), 3, "{messages:?}");
    assert!(e.0[0].message.contains("`dataset` names `tabels`"), "{e}");
    assert_eq!(e.0[0].help.as_deref(), Some("did you mean `tables`?"));
    assert_eq!(e.0[1].key, "matrix.workload[1].after_runs[0]");
    assert!(e.0[1].message.contains("has no command `chek`"), "{e}");
    assert_eq!(e.0[1].help.as_deref(), Some("did you mean `check`?"));
    assert!(
        e.0[2].message.contains("`cleanup` is a step of every plan"),
        "{e}"
    );
    let typo = SUITE.replace("before_runs", "before_run");
    let e = load(&file, &typo).err().expect("refused");
    assert!(e.0[0].message.contains("unknown key `before_run`"), "{e}");
    assert_eq!(e.0[0].help.as_deref(), Some("did you mean `before_runs`?"));
}

#[test]
fn a_lua_path_as_a_name_points_at_the_table_form() {
    let (_d, file) = dir();
    let text = "[suite]\nname = \"l\"\n[defaults]\ntime = 1\nworkload = \"scripts/demo.lua\"\n";
    let e = load(&file, text).err().expect("refused");
    assert_eq!(line_of(&e.0[0]), 5);
    assert!(
        e.0[0]
            .help
            .as_deref()
            .unwrap_or_default()
            .contains("workload = { script = \"scripts/demo.lua\" }"),
        "{e}"
    );
}

#[test]
fn the_stored_suite_pins_the_script_and_refuses_a_changed_one() {
    let (d, file) = dir();
    let s = load(&file, SUITE).unwrap_or_else(|e| panic!("{e}"));
    let stored = s.resolved_toml.clone();
    let resolved = std::fs::canonicalize(d.path().join("scripts/demo.lua")).expect("canonical");
    assert!(
        stored.contains(&format!("resolved = {:?}", resolved.display().to_string())),
        "{stored}"
    );
    let hash = &s.scripts.get("scripts/demo.lua").expect("known").sha256;
    assert!(stored.contains(&format!("sha256 = \"{hash}\"")), "{stored}");

    // Read back from elsewhere (a run directory), it finds the script.
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let run_file = elsewhere.path().join("suite.toml");
    let again = load(&run_file, &stored).unwrap_or_else(|e| panic!("{e}\n{stored}"));
    assert_eq!(again.matrix.axes, s.matrix.axes);
    assert_eq!(again.resolved_toml, stored);

    // The script changed: refused, naming both hashes.
    let mut text = std::fs::read_to_string(&resolved).expect("read");
    text.push_str("\n-- edited\n");
    std::fs::write(&resolved, text).expect("write");
    let e = load(&run_file, &stored).err().expect("refused");
    assert_eq!(e.0[0].key, "matrix.workload[1].sha256");
    assert!(
        e.0[0].message.contains("changed") && e.0[0].message.contains(hash.as_str()),
        "{e}"
    );
    assert!(
        e.0[0]
            .help
            .as_deref()
            .unwrap_or_default()
            .contains("start a new run"),
        "{e}"
    );
}

#[test]
fn defaults_may_name_a_script_and_its_dataset_defaults_to_every_option() {
    let (_d, file) = dir();
    let text = "[suite]\nname = \"l\"\n[defaults]\ntime = 1\nworkload = { script = \"scripts/demo.lua\" }\n[matrix]\nlabel = [\"a\", \"b\"]\n";
    let s = load(&file, text).unwrap_or_else(|e| panic!("{e}"));
    let u = s.scripts.get("scripts/demo.lua").expect("known");
    assert_eq!(
        u.dataset,
        [
            "kinds",
            "label",
            "loud",
            "pad",
            "read_share",
            "rows",
            "tables"
        ]
    );
    assert_eq!(u.spec.data.keys, u.dataset);
    assert!(
        s.resolved_toml
            .contains("[defaults]\ntime = 1\nworkload = { script = \"scripts/demo.lua\""),
        "{}",
        s.resolved_toml
    );
}

#[test]
fn the_schema_accepts_the_table_form_with_every_key() {
    let schema: serde_json::Value =
        serde_json::from_str(&crate::suite::raw::json_schema()).expect("json");
    let one = &schema["properties"]["defaults"]["properties"]["workload"];
    let forms = one["anyOf"].as_array().expect("anyOf");
    assert!(
        forms[0]["enum"]
            .as_array()
            .is_some_and(|n| n.contains(&"cpu".into()))
    );
    let table = forms
        .iter()
        .find(|f| f["type"] == "object")
        .expect("the table form");
    let mut keys: Vec<&str> = table["properties"]
        .as_object()
        .expect("properties")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    let mut want = super::SCRIPT_KEYS.to_vec();
    want.sort_unstable();
    assert_eq!(keys, want);
    assert_eq!(table["required"], serde_json::json!(["script"]));
    assert_eq!(table["additionalProperties"], false);
    // The matrix axis takes a list mixing both forms.
    let axis = &schema["properties"]["matrix"]["properties"]["workload"]["anyOf"][0];
    assert_eq!(axis["type"], "array");
    assert_eq!(&axis["items"], one);
}

#[test]
fn an_include_cell_may_name_a_script_given_once_alike() {
    let (_d, file) = dir();
    let table = "{ script = \"scripts/demo.lua\", after_runs = [\"check\"] }";
    let text = format!(
        "[suite]\nname = \"l\"\n[defaults]\ntime = 1\n[matrix]\nworkload = [\"cpu\"]\nthreads = [1, 2]\ninclude = [{{ workload = {table}, threads = 4 }}]\n"
    );
    let s = load(&file, &text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        s.matrix.include[0]["workload"],
        Value::Str("scripts/demo.lua".into())
    );
    assert!(
        s.resolved_toml
            .contains("include = [{ workload = { script = \"scripts/demo.lua\"")
    );

    // The same script again with other keys is refused at the second place.
    let twice = text.replace(
        "workload = [\"cpu\"]",
        "workload = [\"cpu\", { script = \"scripts/demo.lua\" }]",
    );
    let e = load(&file, &twice).err().expect("refused");
    assert_eq!(e.0[0].key, "matrix.include[0].workload");
    assert!(
        e.0[0].message.contains("is given again with other keys"),
        "{e}"
    );
}

#[test]
fn a_script_that_does_not_load_names_its_file_and_line() {
    let (d, file) = dir();
    std::fs::write(
        d.path().join("scripts/broken.lua"),
        "sysbench.cmdline.options = {\n  rows = {\"Rows\", 10},\n  tables = {\"Tables\" 1},\n}\n",
    )
    .expect("write");
    let text = "[suite]\nname = \"l\"\n[defaults]\ntime = 1\nworkload = { script = \"scripts/broken.lua\" }\n";
    let e = load(&file, text).err().expect("refused");
    assert_eq!(line_of(&e.0[0]), 5);
    assert_eq!(e.0[0].key, "defaults.workload.script");
    assert!(
        e.0[0]
            .message
            .starts_with("script `scripts/broken.lua` does not load: ")
            && e.0[0].message.contains("broken.lua:3:"),
        "{e}"
    );
}

#[test]
fn a_module_not_found_points_at_the_working_directory_and_lua_path() {
    let (d, file) = dir();
    std::fs::write(
        d.path().join("scripts/needs.lua"),
        "require(\"suite_demo_missing_common\")\n",
    )
    .expect("write");
    let text = "[suite]\nname = \"l\"\n[defaults]\ntime = 1\nworkload = { script = \"scripts/needs.lua\" }\n";
    let e = load(&file, text).err().expect("refused");
    let scripts = std::fs::canonicalize(d.path().join("scripts")).expect("canonical");
    assert!(e.0[0].message.contains("suite_demo_missing_common"), "{e}");
    assert_eq!(
        e.0[0].help.as_deref(),
        Some(
            format!(
                "modules are looked for in the working directory and LUA_PATH, as sysbench does: run sbsuite from {0}, or set LUA_PATH=\"{0}/?.lua;;\"",
                scripts.display()
            )
            .as_str()
        ),
        "{e}"
    );
}

#[test]
fn required_module_names_are_read_from_literal_requires() {
    let src = "local c = require(\"tpcc_common\")\nrequire 'lib.util'\nrequire ( \"x-y\" )\n\
               local r = myrequire(\"no\")\nx:require(\"no2\")\nrequire(name)\nrequire(\"bad name\")\n";
    assert_eq!(
        super::required_names(src),
        ["tpcc_common", "lib.util", "x-y"]
    );
}
