//! The engine's place in the layers (#12): `engine` may import `stats`, `db` and `value`, never
//! the layers above it; `stats` imports neither `engine` nor `report`; the RNG imports nothing of
//! the engines. A grep over the source, so that an import running up the layers fails a test.

use std::fs;
use std::path::Path;

/// Every `.rs` file under `dir`, with its text.
fn sources(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in fs::read_dir(&d).expect("read src dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = fs::read_to_string(&path).expect("read source");
                out.push((path.display().to_string(), text));
            }
        }
    }
    out
}

/// `(file, line)` of every code line (not a comment) naming one of `modules` as `crate::<m>`.
fn uses(dir: &str, modules: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (file, text) in sources(Path::new(dir)) {
        for line in text.lines() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            for m in modules {
                let needle = format!("crate::{m}");
                if code.match_indices(&needle).any(|(i, _)| {
                    !code[i + needle.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
                }) {
                    found.push(format!("{file}: {code}"));
                }
            }
        }
    }
    found
}

#[test]
fn engine_does_not_import_the_layers_above_it() {
    let up = [
        "runner", "plan", "commands", "app", "compat", "results", "report", "compare", "import",
        "cli",
    ];
    let found = uses("src/engine", &up);
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn stats_imports_neither_engine_nor_report() {
    let found = uses("src/stats", &["engine", "report", "runner"]);
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn the_rng_imports_nothing_of_the_engines() {
    let text = fs::read_to_string("src/engine/random.rs").expect("read random.rs");
    let code: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .filter(|l| l.contains("crate::") || l.contains("super::"))
        .filter(|l| !l.contains("use super::*;"))
        .collect();
    assert!(code.is_empty(), "{code:#?}");
}
