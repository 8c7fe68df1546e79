//! Suite-file fuzzing (#13): the loader and the planner, fed arbitrary bytes and structured
//! mutations of real suites, never panic, never hang, and every error they return points at a
//! line and column of the file.
//!
//! Why proptest rather than cargo-fuzz: it runs inside `cargo test` on stable Rust with no extra
//! tool, so CI fuzzes on every push, and its strategies can speak TOML: most random bytes die in
//! the TOML parser, while mutations of the shipped suites (a deleted or duplicated line, a value
//! swapped for a huge number, a deep nesting, a random axis shape) reach validation and plan
//! building, where the interesting bugs live.
//!
//! The seed corpus is `suites/*.toml`, `examples/*.toml` and `tests/fuzz/suite/` (inputs that
//! once broke the loader, each also a named regression test in `src/suite/tests.rs`).
//!
//! Knobs: `SBSUITE_FUZZ_CASES` (default 1000, about ten seconds in debug on a loaded 2-core machine) and `SBSUITE_FUZZ_SEED`
//! (default fixed, so CI is deterministic); `bench/fuzz-suite.sh` loops with fresh seeds for N
//! minutes. The run prints its case count and its slowest case.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use sbsuite::engine::Catalog;
use sbsuite::source::{ConfigErrors, Origin};
use sbsuite::suite;

const DEFAULT_CASES: u32 = 1000;
const DEFAULT_SEED: u64 = 13;
/// A case slower than this is a hang (debug build, loaded machine).
const SLOW: Duration = Duration::from_secs(10);

/// Keys that steer mutations into the loader's interesting corners.
const SECTION_KEYS: &[&str] = &[
    "suite",
    "name",
    "description",
    "repeat",
    "results_dir",
    "step_name",
    "on_error",
    "target",
    "driver",
    "host",
    "port",
    "user",
    "password",
    "database",
    "socket",
    "defaults",
    "matrix",
    "workload",
    "exclude",
    "include",
    "zip",
    "stop_when",
    "tps_gain_below",
    "p95_above",
    "from",
    "to",
    "step",
    "factor",
    "variant",
    "server",
    "hooks",
    "timeout",
    "before_step",
    "after_suite",
];

/// One edit of a seed file, applied line-wise.
#[derive(Clone, Debug)]
enum Mutation {
    DeleteLine(Index),
    DuplicateLine(Index),
    SwapLines(Index, Index),
    ReplaceValue(Index, String),
    ReplaceKey(Index, String),
    InsertLine(Index, String),
    Truncate(Index),
    InsertBytes(Index, Vec<u8>),
}

fn seeds() -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for dir in ["suites", "examples", "tests/fuzz/suite"] {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        files.sort();
        for p in files {
            let bytes = std::fs::read(&p).unwrap();
            out.push((p, bytes));
        }
    }
    assert!(out.len() >= 8, "the seed corpus is missing: {out:?}");
    out
}

fn known_key() -> impl Strategy<Value = String> {
    let options: Vec<&'static str> = Catalog::builtin().all_option_names().collect();
    prop_oneof![
        3 => proptest::sample::select(SECTION_KEYS).prop_map(str::to_string),
        3 => proptest::sample::select(options).prop_map(str::to_string),
        1 => "[a-z_]{1,10}",
        1 => "\"[ -~]{0,6}\"",
        1 => (1usize..120).prop_map(|n| vec!["a"; n].join(".")),
        1 => proptest::collection::vec(proptest::sample::select(SECTION_KEYS), 2..5)
            .prop_map(|v| v.join(".")),
    ]
}

fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|i| i.to_string()),
        (-3i64..70).prop_map(|i| i.to_string()),
        proptest::sample::select(
            &[
                "9223372036854775807",
                "-9223372036854775808",
                "99999999999999999999",
                "0",
                "-0",
                "0x7fffffffffffffff",
                "1e308",
                "-1e308",
                "5e-324",
                "-0.0",
                "nan",
                "inf",
                "-inf",
                "0.5",
                "true",
                "false",
                "1979-05-27T07:32:00Z",
                "07:32:00",
                "1979-05-27",
            ][..]
        )
        .prop_map(str::to_string),
        any::<f64>().prop_map(|x| if x.is_finite() {
            format!("{x:?}")
        } else {
            "inf".into()
        }),
        proptest::sample::select(
            &[
                "cpu",
                "memory",
                "fileio",
                "oltp_read_only",
                "oltp_read_write",
                "",
                "{{",
                "{{ env.DB_PASSWORD }}",
                "{{ workload }}-{{ nope(",
                "1G",
                "99999999999999999999T",
                "-1K",
                "0.5M",
                "seqwr",
                "stop",
                "skip",
                "mysql",
                "pgsql",
                "sqlite",
                "..",
                "a/b",
            ][..]
        )
        .prop_map(|s| format!("{s:?}")),
        "\"[ -~]{0,12}\"".prop_map(|s| s),
    ]
}

fn value() -> impl Strategy<Value = String> {
    let tree = scalar().prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6)
                .prop_map(|v| format!("[{}]", v.join(", "))),
            proptest::collection::vec((known_key(), inner), 0..4).prop_map(|kv| {
                let body: Vec<String> = kv.into_iter().map(|(k, v)| format!("{k} = {v}")).collect();
                format!("{{ {} }}", body.join(", "))
            }),
        ]
    });
    let number = prop_oneof![(-5i64..100_000).prop_map(|i| i.to_string()), scalar()];
    let range = (
        number.clone(),
        number.clone(),
        prop_oneof![Just("step"), Just("factor"), Just("stp")],
        number,
    )
        .prop_map(|(f, t, k, s)| format!("{{ from = {f}, to = {t}, {k} = {s} }}"));
    let deep = (1usize..200, any::<bool>()).prop_map(|(n, arrays)| {
        if arrays {
            format!("{}{}", "[".repeat(n), "]".repeat(n))
        } else {
            format!("{}1{}", "{ a = ".repeat(n), " }".repeat(n))
        }
    });
    prop_oneof![4 => tree, 2 => range, 1 => deep]
}

fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (known_key(), value()).prop_map(|(k, v)| format!("{k} = {v}")),
        1 => known_key().prop_map(|k| format!("[{k}]")),
        1 => known_key().prop_map(|k| format!("[[{k}]]")),
        1 => Just("[[variant]]\nname = \"v\"".to_string()),
        1 => Just("# comment".to_string()),
        1 => Just(String::new()),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        2 => any::<Index>().prop_map(Mutation::DeleteLine),
        1 => any::<Index>().prop_map(Mutation::DuplicateLine),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        4 => (any::<Index>(), value()).prop_map(|(i, v)| Mutation::ReplaceValue(i, v)),
        2 => (any::<Index>(), known_key()).prop_map(|(i, k)| Mutation::ReplaceKey(i, k)),
        3 => (any::<Index>(), line()).prop_map(|(i, l)| Mutation::InsertLine(i, l)),
        1 => any::<Index>().prop_map(Mutation::Truncate),
        1 => (any::<Index>(), proptest::collection::vec(any::<u8>(), 1..4))
            .prop_map(|(i, b)| Mutation::InsertBytes(i, b)),
    ]
}

fn mutate(seed: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = seed.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
    for m in mutations {
        let n = lines.len().max(1);
        match m {
            Mutation::DeleteLine(i) if !lines.is_empty() => {
                lines.remove(i.index(n));
            }
            Mutation::DuplicateLine(i) if !lines.is_empty() => {
                let l = lines[i.index(n)].clone();
                lines.insert(i.index(n), l);
            }
            Mutation::SwapLines(a, b) if !lines.is_empty() => lines.swap(a.index(n), b.index(n)),
            Mutation::ReplaceValue(i, v) if !lines.is_empty() => {
                let l = &mut lines[i.index(n)];
                if let Some(eq) = l.iter().position(|b| *b == b'=') {
                    l.truncate(eq + 1);
                    l.push(b' ');
                    l.extend_from_slice(v.as_bytes());
                }
            }
            Mutation::ReplaceKey(i, k) if !lines.is_empty() => {
                let l = &mut lines[i.index(n)];
                if let Some(eq) = l.iter().position(|b| *b == b'=') {
                    let mut new = k.as_bytes().to_vec();
                    new.extend_from_slice(b" ");
                    new.extend_from_slice(&l[eq..]);
                    *l = new;
                }
            }
            Mutation::InsertLine(i, l) => {
                let at = i.index(lines.len() + 1);
                lines.insert(at, l.as_bytes().to_vec());
            }
            Mutation::Truncate(i) => {
                let mut all = lines.join(&b'\n');
                all.truncate(i.index(all.len() + 1));
                lines = all.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
            }
            Mutation::InsertBytes(i, bytes) => {
                let mut all = lines.join(&b'\n');
                let at = i.index(all.len() + 1);
                all.splice(at..at, bytes.iter().copied());
                lines = all.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
            }
            _ => {}
        }
    }
    lines.join(&b'\n')
}

/// Every error names a line and column inside the file, and renders them.
fn positioned(bytes: &[u8], errors: &ConfigErrors) -> Result<(), TestCaseError> {
    prop_assert!(!errors.0.is_empty(), "an empty error list");
    let lines = bytes.iter().filter(|b| **b == b'\n').count() + 1;
    let rendered = errors.to_string();
    for e in &errors.0 {
        match &e.origin {
            Origin::File { line, col, .. } => {
                prop_assert!(
                    *line >= 1 && *line <= lines && *col >= 1,
                    "position {line}:{col} outside the file ({lines} lines): {e}"
                );
                prop_assert!(
                    rendered.contains(&format!("fuzz.toml:{line}:{col}")),
                    "{rendered}"
                );
            }
            other => prop_assert!(false, "an error without a position ({other:?}): {e}"),
        }
    }
    Ok(())
}

/// How far an input got.
#[derive(Clone, Copy)]
enum Outcome {
    Planned,
    PlanError,
    SyntaxError,
    LoadError,
}

/// The loader, then the planner and its renderings: never a panic, every error positioned.
fn check(bytes: &[u8]) -> Result<Outcome, TestCaseError> {
    let file = Path::new("fuzz.toml");
    match suite::load_bytes(file, bytes, &[], &[]) {
        Ok(s) => match sbsuite::plan::build(&s) {
            Ok(plan) => {
                sbsuite::plan::render_text(&plan, "fuzz.toml");
                sbsuite::plan::render_json(&plan, "fuzz.toml");
                Ok(Outcome::Planned)
            }
            Err(errors) => positioned(bytes, &errors).map(|_| Outcome::PlanError),
        },
        Err(errors) => {
            positioned(bytes, &errors)?;
            let syntax = errors.0[0].message.starts_with("TOML syntax error");
            Ok(if syntax {
                Outcome::SyntaxError
            } else {
                Outcome::LoadError
            })
        }
    }
}

fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn suite_loader_never_panics_and_always_points_at_the_file() {
    let cases: u32 = env_number("SBSUITE_FUZZ_CASES", DEFAULT_CASES);
    let seed: u64 = env_number("SBSUITE_FUZZ_SEED", DEFAULT_SEED);
    let corpus = seeds();
    // The corpus itself first: every seed loads without a panic.
    for (path, bytes) in &corpus {
        if let Err(e) = check(bytes) {
            panic!("{}: {e}", path.display());
        }
    }
    let texts: Vec<Vec<u8>> = corpus.into_iter().map(|(_, b)| b).collect();
    let input = prop_oneof![
        1 => proptest::collection::vec(any::<u8>(), 0..256),
        1 => "[\\[\\]{}=.,\"'#\\n a-z0-9_-]{0,200}".prop_map(String::into_bytes),
        8 => (proptest::sample::select(texts), proptest::collection::vec(mutation(), 1..4))
            .prop_map(|(seed, ms)| mutate(&seed, &ms)),
    ];
    let config = Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        max_shrink_time: 30_000,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let started = Instant::now();
    let slowest = RefCell::new((Duration::ZERO, Vec::new()));
    let run = Cell::new(0u64);
    let outcomes = Cell::new([0u64; 4]);
    let result = runner.run(&input, |bytes| {
        let start = Instant::now();
        let outcome = check(&bytes);
        let took = start.elapsed();
        run.set(run.get() + 1);
        if let Ok(o) = outcome {
            let mut counts = outcomes.get();
            counts[o as usize] += 1;
            outcomes.set(counts);
        }
        if took > slowest.borrow().0 {
            *slowest.borrow_mut() = (took, bytes.clone());
        }
        prop_assert!(took < SLOW, "a case took {took:?}");
        outcome.map(|_| ())
    });
    let (run, slowest, [planned, plan_errors, syntax, load_errors]) =
        (run.get(), slowest.into_inner(), outcomes.get());
    println!(
        "fuzz-suite: seed {seed}, {run} cases run ({planned} planned, {plan_errors} plan errors, \
         {load_errors} load errors, {syntax} TOML syntax errors), slowest {:?} ({} bytes): {}",
        slowest.0,
        slowest.1.len(),
        String::from_utf8_lossy(&slowest.1[..slowest.1.len().min(300)]).escape_debug()
    );
    // For bench/fuzz-suite.sh.
    println!(
        "fuzz-suite-stats: seed={seed} cases={run} planned={planned} slowest_us={} elapsed_ms={}",
        slowest.0.as_micros(),
        started.elapsed().as_millis()
    );
    if let Err(e) = result {
        panic!("fuzz-suite: seed {seed}: {e}");
    }
}
