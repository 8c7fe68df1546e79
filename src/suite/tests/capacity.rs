//! `[capacity]` (#30): a section that loads with its defaults, layers that set its keys, and
//! each mistake refused at the line that wrote it, with what to write instead.

use std::path::Path;

use crate::source::{ConfigErrors, Origin};
use crate::suite::capacity::Target;
use crate::suite::{SetOverride, Suite, load_text};

const CPU: &str = r#"[suite]
name = "t"

[defaults]
workload = "cpu"
time = 1

[capacity]
target = "p95<5ms"
"#;

fn load(text: &str) -> Result<Suite, ConfigErrors> {
    load_text(Path::new("t.toml"), text, &[], &[])
}

/// The errors of `text`, as (line, key, message, help).
fn errors(text: &str) -> Vec<(usize, String, String, String)> {
    let errors = load(text).err().expect("the suite must be rejected");
    errors
        .0
        .iter()
        .map(|e| {
            let line = match &e.origin {
                Origin::File { line, .. } => *line,
                other => panic!("expected a file position, got {other:?} for: {e}"),
            };
            (
                line,
                e.key.clone(),
                e.message.clone(),
                e.help.clone().unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn a_capacity_section_loads_with_its_defaults_and_layers_set_its_keys() {
    let s = load(CPU).unwrap_or_else(|e| panic!("{e}"));
    let c = s.capacity.as_ref().unwrap();
    assert_eq!(c.target, Target::parse("p95<5ms").unwrap());
    assert_eq!((c.min_rate, c.precision, c.confirm), (1.0, 5.0, 3));
    // Stored resolved, so that the run directory says what was searched.
    assert!(
        s.resolved_toml.contains(
            "[capacity]\ntarget = \"p95<5ms\"\nmin_rate = 1.0\nprecision = 5.0\nconfirm = 3"
        ),
        "{}",
        s.resolved_toml
    );
    let sets = [
        SetOverride::parse("capacity.confirm=5").unwrap(),
        SetOverride::parse("capacity.min_rate=10").unwrap(),
    ];
    let env = [(
        "SBSUITE_CAPACITY__TARGET".to_string(),
        "p99<2ms".to_string(),
    )];
    let s = load_text(Path::new("t.toml"), CPU, &sets, &env).unwrap_or_else(|e| panic!("{e}"));
    let c = s.capacity.unwrap();
    assert_eq!(
        (c.target.spec(), c.min_rate, c.confirm),
        ("p99<2ms".into(), 10.0, 5)
    );
    assert!(
        load(&CPU.replace("[capacity]\ntarget = \"p95<5ms\"\n", ""))
            .unwrap()
            .capacity
            .is_none()
    );
}

#[test]
fn each_mistake_in_the_section_is_refused_at_its_line() {
    let text = CPU.replace(
        "target = \"p95<5ms\"",
        "target = \"p98<5ms\"\nmin_rate = 0\nprecision = -1\nconfirm = 0",
    );
    let e = errors(&text);
    assert_eq!(e.len(), 4, "{e:?}");
    assert_eq!(e[0].0, 9);
    assert_eq!(e[0].1, "capacity.target");
    assert_eq!(e[0].2, "invalid capacity target `p98<5ms`");
    assert!(
        e[0].3.contains("e.g. `p99<10ms` (p95, p99, avg or max)"),
        "{e:?}"
    );
    assert_eq!((e[1].0, e[1].1.as_str()), (10, "capacity.min_rate"));
    assert!(e[1].2.contains("must be above 0"), "{e:?}");
    assert_eq!((e[2].0, e[2].1.as_str()), (11, "capacity.precision"));
    assert_eq!((e[3].0, e[3].1.as_str()), (12, "capacity.confirm"));
    assert!(e[3].2.contains("between 1 and 10000, not 0"), "{e:?}");

    let e = errors(&CPU.replace("target = \"p95<5ms\"", "target = \"p95<5ms\"\nconfrim = 2"));
    assert_eq!((e[0].0, e[0].1.as_str()), (10, "capacity.confrim"));
    assert!(
        e[0].2.contains("unknown key `confrim` in [capacity]"),
        "{e:?}"
    );
    assert_eq!(e[0].3, "did you mean `confirm`?");

    let e = errors(&CPU.replace("target = \"p95<5ms\"", "min_rate = 5"));
    assert!(
        e[0].2.contains("missing key `target` in [capacity]"),
        "{e:?}"
    );
}

#[test]
fn what_the_search_cannot_vary_is_refused_where_it_is_written() {
    // `rate` is the search's own axis.
    let e = errors(&CPU.replace("time = 1", "time = 1\n\n[matrix]\nrate = [10, 20]"));
    assert_eq!((e[0].0, e[0].1.as_str()), (9, "matrix.rate"));
    assert!(e[0].2.contains("[capacity] varies `rate` itself"), "{e:?}");
    assert!(e[0].3.starts_with("remove `rate` from [matrix]"), "{e:?}");
    // One configuration.
    let e = errors(&format!(
        "{CPU}\n[[variant]]\nname = \"a\"\n\n[[variant]]\nname = \"b\"\n"
    ));
    assert_eq!((e[0].0, e[0].1.as_str()), (8, "capacity"));
    assert!(e[0].2.contains("the suite has 2 [[variant]]s"), "{e:?}");
    // A probe is one rate for `time` seconds, not a timeline.
    let e = errors(&format!("{CPU}\n[[phases]]\ntime = 1\n"));
    let phases = e.iter().find(|e| e.1 == "phases").expect("refused");
    assert_eq!(phases.0, 11);
    assert!(
        phases
            .2
            .contains("`[[phases]]` (a timeline of rates and threads) does not apply"),
        "{e:?}"
    );
    // Probes run once; the answer is repeated by `confirm`.
    let e = errors(&CPU.replace("name = \"t\"", "name = \"t\"\nrepeat = 3"));
    assert_eq!((e[0].0, e[0].1.as_str()), (3, "suite.repeat"));
    assert!(e[0].3.contains("set capacity.confirm instead"), "{e:?}");
}
