//! The module graph of `src/` as a test: no module imports from a module that imports it back,
//! and the layers read top-down (issue #12).
//!
//! Why a test and not `cargo modules`: it runs with `cargo test` everywhere, needs no extra
//! tool, and fails with the exact `use` that closed a cycle. It reads the sources as text:
//! comments and string literals are blanked, then every path that starts at `crate::`,
//! `super::` or `self::` (in `use` trees, braces expanded, and inline in code), and every path
//! through a name a `use` or `mod` brought into scope, is resolved to the longest module it
//! names.
//!
//! Two checks follow:
//! - **No cycles among siblings**, at every level of the tree: inside each folder (and at the
//!   crate root) the children — each standing for its whole subtree — form a DAG. A child using
//!   its parent's items (`super::Target`) is the parent's vocabulary, not a cycle, so references
//!   between a module and its own ancestors are not edges.
//! - **Layers**: the lower layers (`db`, `stats`, `value`, `source`, `results`, `suite`, …)
//!   never import from the layers that drive them (see [`FORBIDDEN`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

/// `(from module, to module, the path as written)`.
type Reference = (Module, Module, String);

/// `(module, modules it must not import)`, top-level names. The intended order is
/// `app → runner → plan → suite`, `runner → engine → db`, `engine → stats`,
/// `compare/report → results`, `bisect/capacity → runner/compare`, `runner → clients →
/// engine/suite/results`, and `suite/engine → source → value` (positions in TOML files and
/// the errors that point there).
const FORBIDDEN: &[(&str, &[&str])] = &[
    (
        "value",
        &[
            "app", "bisect", "capacity", "cli", "compat", "import", "runner", "plan", "suite",
            "engine", "db", "stats", "results", "compare", "report", "clients", "source",
        ],
    ),
    (
        "source",
        &[
            "app", "bisect", "capacity", "cli", "compat", "import", "runner", "plan", "suite",
            "engine", "db", "stats", "results", "compare", "report", "clients",
        ],
    ),
    (
        "stats",
        &[
            "app", "bisect", "capacity", "cli", "compat", "import", "runner", "plan", "suite",
            "engine", "db", "results", "compare", "report", "clients",
        ],
    ),
    (
        "db",
        &[
            "app", "bisect", "capacity", "cli", "compat", "import", "runner", "plan", "suite",
            "engine", "results", "compare", "report", "clients",
        ],
    ),
    (
        "engine",
        &[
            "app", "bisect", "capacity", "cli", "compat", "import", "runner", "plan", "suite",
            "results", "compare", "report", "clients",
        ],
    ),
    (
        "suite",
        &[
            "app", "bisect", "capacity", "cli", "compat", "import", "runner", "plan", "results",
            "compare", "report", "clients",
        ],
    ),
    (
        "plan",
        &[
            "app", "bisect", "capacity", "cli", "compat", "import", "runner", "compare", "report",
        ],
    ),
    (
        "results",
        &[
            "app", "bisect", "capacity", "cli", "compat", "import", "runner", "compare", "report",
            "clients",
        ],
    ),
    (
        "clients",
        &[
            "app", "bisect", "capacity", "cli", "compat", "import", "runner", "compare", "report",
        ],
    ),
    (
        "compare",
        &[
            "app", "bisect", "capacity", "cli", "compat", "import", "runner",
        ],
    ),
    (
        "report",
        &[
            "app", "bisect", "capacity", "cli", "compat", "import", "runner",
        ],
    ),
    (
        "runner",
        &["app", "bisect", "capacity", "cli", "compat", "import"],
    ),
    ("compat", &["app", "bisect", "capacity", "cli"]),
    ("import", &["app", "bisect", "capacity", "cli"]),
];

/// Every module of the library: its path segments → its file.
fn modules(src: &Path) -> BTreeMap<Module, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap();
            let mut segs: Module = rel
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect();
            let last = segs.pop().unwrap();
            match last.as_str() {
                "main.rs" if segs.is_empty() => continue, // the binary: it uses `sbsuite::`
                "lib.rs" if segs.is_empty() => {}
                "mod.rs" => {}
                file => segs.push(file.trim_end_matches(".rs").to_string()),
            }
            out.insert(segs, path);
        }
    }
    out
}

/// The source with comments, string and char literals blanked (lines kept).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |out: &mut String, s: &[u8]| {
        for &c in s {
            out.push(if c == b'\n' { '\n' } else { ' ' });
        }
    };
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (0usize, 0usize);
            while j < rest.len() {
                if rest[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &rest[..j]);
            i += j;
        } else if (rest.starts_with(b"r#") || rest.starts_with(b"r\""))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            let hashes = rest[1..].iter().take_while(|&&c| c == b'#').count();
            if rest.get(1 + hashes) != Some(&b'"') {
                out.push(rest[0] as char);
                i += 1;
                continue;
            }
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let start = 2 + hashes;
            let end = rest[start..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map(|p| start + p + close.len())
                .unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest[0] == b'"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest[0] == b'\'' {
            // A char literal ('x', '\n', '\''), else a lifetime.
            let end = if rest.get(1) == Some(&b'\\') {
                rest[2..].iter().position(|&c| c == b'\'').map(|p| p + 3)
            } else {
                let ch = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (rest.get(1 + ch) == Some(&b'\'')).then_some(2 + ch)
            };
            match end {
                Some(e) => {
                    blank(&mut out, &rest[..e]);
                    i += e;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let ch = text[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// Expands a `use` tree (`crate::a::{self, b::C, d}`) into its paths.
fn expand_use(tree: &str) -> Vec<String> {
    // One space between words (`f as g`), none around punctuation.
    let words: Vec<&str> = tree.split_whitespace().collect();
    let mut tree = words.join(" ");
    for p in ["::", "{", "}", ","] {
        tree = tree
            .replace(&format!(" {p}"), p)
            .replace(&format!("{p} "), p);
    }
    let mut out = Vec::new();
    expand_into("", &tree, &mut out);
    out
}

fn expand_into(prefix: &str, tree: &str, out: &mut Vec<String>) {
    // Split at top-level commas.
    let (mut depth, mut start) = (0, 0);
    let mut parts = Vec::new();
    for (i, c) in tree.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&tree[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&tree[start..]);
    for part in parts.into_iter().filter(|p| !p.is_empty()) {
        let join = |p: &str| {
            if prefix.is_empty() {
                p.to_string()
            } else {
                format!("{prefix}::{p}")
            }
        };
        match part.find('{') {
            Some(open) => {
                let head = part[..open].trim_end_matches("::");
                let inner = &part[open + 1..part.rfind('}').unwrap_or(part.len())];
                expand_into(&join(head), inner, out);
            }
            None => {
                let path = part.split(" as ").next().unwrap_or(part);
                if path == "self" {
                    out.push(prefix.to_string());
                } else {
                    out.push(join(path));
                }
            }
        }
    }
}

/// The absolute segments of `path` as written in module `at`, or `None` when it does not
/// start at the crate (`std::…`, a local name not brought in by `use`).
fn absolute(at: &Module, path: &[&str], aliases: &BTreeMap<String, Module>) -> Option<Module> {
    let mut cur: Module;
    let mut rest = path;
    match path.first()? {
        &"crate" => {
            cur = Vec::new();
            rest = &path[1..];
        }
        &"self" => {
            cur = at.clone();
            rest = &path[1..];
        }
        &"super" => {
            cur = at.clone();
            while rest.first() == Some(&"super") {
                cur.pop()?;
                rest = &rest[1..];
            }
        }
        first => {
            cur = aliases.get(*first)?.clone();
            rest = &path[1..];
        }
    }
    cur.extend(rest.iter().map(|s| s.to_string()));
    Some(cur)
}

/// The longest known module that `path` names.
fn module_of(path: &Module, known: &BTreeMap<Module, PathBuf>) -> Option<Module> {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|m| known.contains_key(m))
}

fn is_ancestor(a: &Module, b: &Module) -> bool {
    a.len() < b.len() && b[..a.len()] == a[..]
}

/// `(from module, to module, the path as written)` for every reference in the library.
fn references(known: &BTreeMap<Module, PathBuf>) -> Vec<Reference> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = Vec::new();
    for (at, file) in known {
        let code = code_only(&std::fs::read_to_string(file).unwrap());
        let mut aliases: BTreeMap<String, Module> = BTreeMap::new();
        // Child modules declared here (`mod wire;`) are names in scope.
        for line in code.lines() {
            let t = line.trim_start();
            let t = t.strip_prefix("pub ").unwrap_or(t);
            let t = t.strip_prefix("pub(crate) ").unwrap_or(t);
            if let Some(name) = t.strip_prefix("mod ") {
                let name: String = name.chars().take_while(|&c| ident(c)).collect();
                let mut m = at.clone();
                m.push(name.clone());
                aliases.insert(name, m);
            }
        }
        // `use` statements: every expanded path is a reference; names that are modules
        // become aliases for the inline scan.
        let mut rest = code.as_str();
        let mut uses = Vec::new();
        while let Some(pos) = rest.find("use ") {
            let before = rest[..pos].chars().last();
            let stmt_start = pos + 4;
            let end = rest[stmt_start..]
                .find(';')
                .map_or(rest.len(), |e| stmt_start + e);
            if before.is_none_or(|c| !ident(c)) {
                uses.push(rest[stmt_start..end].to_string());
            }
            rest = &rest[end.min(rest.len())..];
            if rest.is_empty() {
                break;
            }
            rest = &rest[1..];
        }
        for u in &uses {
            for p in expand_use(u) {
                let segs: Vec<&str> = p.split("::").collect();
                let Some(abs) = absolute(at, &segs, &aliases) else {
                    continue;
                };
                if known.contains_key(&abs) {
                    aliases.insert(segs.last().unwrap().to_string(), abs.clone());
                }
                if let Some(m) = module_of(&abs, known) {
                    out.push((at.clone(), m, format!("use {p}")));
                }
            }
        }
        // Inline paths: `crate::a::b`, `super::x`, `alias::y` anywhere in code.
        let chars: Vec<char> = code.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            if !ident(chars[i]) || (i > 0 && (ident(chars[i - 1]) || chars[i - 1] == ':')) {
                i += 1;
                continue;
            }
            let mut segs = Vec::new();
            let mut j = i;
            loop {
                let s = j;
                while j < chars.len() && ident(chars[j]) {
                    j += 1;
                }
                segs.push(chars[s..j].iter().collect::<String>());
                if j + 2 < chars.len()
                    && chars[j] == ':'
                    && chars[j + 1] == ':'
                    && ident(chars[j + 2])
                {
                    j += 2;
                } else {
                    break;
                }
            }
            i = j;
            if segs.len() < 2 {
                continue;
            }
            let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
            if let Some(abs) = absolute(at, &segs, &aliases)
                && let Some(m) = module_of(&abs, known)
            {
                out.push((at.clone(), m, segs.join("::")));
            }
        }
    }
    out.retain(|(from, to, _)| from != to && !is_ancestor(from, to) && !is_ancestor(to, from));
    out
}

fn name(m: &Module) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

/// The first cycle of a directed graph, if any.
fn cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            match state.get(m.as_str()).copied().unwrap_or(0) {
                1 => {
                    let at = stack.iter().position(|s| s == m).unwrap();
                    let mut c = stack[at..].to_vec();
                    c.push(m.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(m, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0
            && let Some(c) = visit(n, edges, &mut state, &mut Vec::new())
        {
            return Some(c);
        }
    }
    None
}

fn graph() -> (BTreeMap<Module, PathBuf>, Vec<Reference>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let known = modules(&src);
    let refs = references(&known);
    (known, refs)
}

#[test]
fn siblings_never_import_each_other_in_a_cycle() {
    let (known, refs) = graph();
    let mut problems = Vec::new();
    for parent in known.keys() {
        // Each child of `parent` stands for its subtree.
        let child_of = |m: &Module| -> Option<String> {
            (is_ancestor(parent, m)).then(|| m[parent.len()].clone())
        };
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut why: BTreeMap<(String, String), String> = BTreeMap::new();
        for (from, to, text) in &refs {
            if let (Some(a), Some(b)) = (child_of(from), child_of(to))
                && a != b
            {
                edges.entry(a.clone()).or_default().insert(b.clone());
                why.entry((a, b))
                    .or_insert_with(|| format!("{}: {text}", name(from)));
            }
        }
        if let Some(c) = cycle(&edges) {
            let steps: Vec<String> = c
                .windows(2)
                .map(|w| {
                    format!(
                        "  {} -> {} ({})",
                        w[0],
                        w[1],
                        why[&(w[0].clone(), w[1].clone())]
                    )
                })
                .collect();
            problems.push(format!(
                "cycle among the children of {}:\n{}",
                name(parent),
                steps.join("\n")
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn lower_layers_never_import_the_layers_that_drive_them() {
    let (_, refs) = graph();
    let mut problems = BTreeSet::new();
    for (from, to, text) in &refs {
        let (Some(a), Some(b)) = (from.first(), to.first()) else {
            continue;
        };
        if let Some((_, banned)) = FORBIDDEN.iter().find(|(m, _)| m == a)
            && banned.contains(&b.as_str())
        {
            problems.insert(format!("{} imports {} ({text})", name(from), name(to)));
        }
    }
    assert!(
        problems.is_empty(),
        "imports that run up the layers:\n{}",
        problems.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn the_reader_finds_the_references_it_must() {
    // The checker itself: a `use` tree with braces, `self`, `super` chains and aliases.
    let paths = expand_use("crate::a::{self, b::C, d::{e, f as g}}");
    assert_eq!(
        paths,
        [
            "crate::a",
            "crate::a::b::C",
            "crate::a::d::e",
            "crate::a::d::f"
        ]
    );
    let code = code_only("let s = \"crate::x::y\"; // crate::z\nlet c = '\"'; crate::w::v();");
    assert!(!code.contains("crate::x") && !code.contains("crate::z"));
    assert!(code.contains("crate::w::v"));
    let (known, refs) = graph();
    assert!(known.len() > 20, "found only {} modules", known.len());
    assert!(
        refs.iter().any(
            |(from, to, _)| from.first().map(String::as_str) == Some("runner")
                && to.first().map(String::as_str) == Some("engine")
        ),
        "the runner's use of the engines was not seen"
    );
}

/// The most lines outside `src/db` that may name a driver variant (`Driver::…`): where a
/// command line's `--db-driver` is turned into one (issue #28).
const MAX_DRIVER_LINES: usize = 3;

/// Nothing outside `src/db` matches on the driver (issue #28): engines, Lua and custom
/// workloads ask the dialect (`Driver::dialect`) or the server's flavor
/// (`Connector::flavor`), so that a new database or server is a change inside `db` alone, and
/// no `==` on a driver keeps compiling, wrong, when a variant is added. What is left is
/// argument parsing, at most [`MAX_DRIVER_LINES`] lines. The same lines as
/// `grep -rn 'Driver::' src | grep -v '^src/db/'`.
#[test]
fn only_the_database_layer_names_the_drivers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut lines = Vec::new();
    for file in modules(&src).into_values().chain([src.join("main.rs")]) {
        let rel = file.strip_prefix(&src).unwrap();
        if rel.starts_with("db") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, line) in text.lines().enumerate() {
            if line.contains("Driver::") {
                lines.push(format!("src/{}:{}: {}", rel.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        lines.len() <= MAX_DRIVER_LINES,
        "{} lines outside src/db name a driver (at most {MAX_DRIVER_LINES}, for argument parsing): ask the dialect (`driver.dialect()`) or the server's flavor (`Connector::flavor()`) instead, or add a method there:\n{}",
        lines.len(),
        lines.join("\n")
    );
}
