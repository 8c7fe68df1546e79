//! The README and the guide (`docs/*.md`) as checked documentation (#33): what they show must
//! work with the binary they describe, so a snippet that stops validating, a flag that is
//! renamed, a file that moves or a link that breaks fails here instead of misleading a reader.
//!
//! - Every ` ```toml ` block is validated with `sbsuite validate` (a block of only
//!   `[workloads.X]` tables inside a minimal suite). A block that is a fragment, or wrong on
//!   purpose, is exempt when the line before it says so: `<!-- fragment -->` or
//!   `<!-- invalid: why -->`.
//!   A part of a suite (`[matrix]`, `[[variant]]`…) is validated inside a minimal one.
//! - Every `sbsuite SUBCOMMAND --flag …` in ` ```sh `/` ```console ` blocks, in inline code and
//!   in the comments of `suites/` and `examples/`: the subcommand exists and each `--flag` is in
//!   `sbsuite SUBCOMMAND --help` (`sbsuite sysbench`'s flags are sysbench's, checked by the
//!   compat tests).
//! - Every relative link (and its `#anchor`) and every repository path in backticks
//!   (`suites/…`, `examples/…`, `bench/…`, `src/…`, `docs/…`, `schemas/…`, `tests/all/…`)
//!   exists; BENCHMARKS.md is checked with the guide.
//! - The import formats of `sbsuite import --help` are the guide's.
//! - Every `##`/`###` heading the README had before the guide existed is a heading somewhere.
//!
//! The parsing is deliberately small (fences, inline code, a shell-word splitter): the
//! documents are ours, and a construct it does not understand shows up as a failure to look at.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use crate::common::sbsuite;

/// The documents checked: the README and every page of the guide.
fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir("docs")
        .expect("docs/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    docs.insert(0, PathBuf::from("README.md"));
    docs.push(PathBuf::from("BENCHMARKS.md"));
    assert!(docs.len() > 10, "{docs:?}");
    docs
}

/// The shipped suites and examples (`suites/`, `examples/` and their folders).
fn suite_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![PathBuf::from("suites"), PathBuf::from("examples")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "toml") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

/// The `sbsuite …` command lines in a suite file's comments (`#   sbsuite run suites/x.toml`,
/// `` `sbsuite compare --by variant RUN_DIR` ``), `\` continuations joined; (line, text).
fn comment_commands(path: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let Some(comment) = line.trim_start().strip_prefix('#') else {
            pending = None;
            continue;
        };
        let comment = comment.trim();
        let (n, cmd) = match pending.take() {
            Some((n, acc)) => (n, format!("{acc} {comment}")),
            None => {
                let Some(at) = comment.find("sbsuite ") else {
                    continue;
                };
                // A command: in inline code, or the line's command after `VAR=…` assignments
                // (not prose such as "sbsuite in ~/.cargo/bin").
                let before = &comment[..at];
                let command =
                    before.ends_with('`') || before.split_whitespace().all(|w| w.contains('='));
                if !command {
                    continue;
                }
                let cmd = &comment[at..];
                // Inside inline code: up to its closing backtick.
                let cmd = if comment[..at].matches('`').count() % 2 == 1 {
                    cmd.split('`').next().unwrap()
                } else {
                    cmd
                };
                (i + 1, cmd.to_string())
            }
        };
        match cmd.strip_suffix('\\') {
            Some(cont) => pending = Some((n, cont.trim_end().to_string())),
            None => out.push((n, cmd)),
        }
    }
    out
}

/// A fenced code block: its language, first line number (1-based, the fence's), text (the
/// fence's indentation removed) and the HTML comment on the line before it, if any.
struct Block {
    lang: String,
    line: usize,
    text: String,
    marker: Option<String>,
}

/// A document split into its fenced blocks and the prose between them (code blocks blanked,
/// so line numbers stay).
struct Doc {
    path: PathBuf,
    blocks: Vec<Block>,
    prose: Vec<String>,
}

fn read_doc(path: &Path) -> Doc {
    let text = std::fs::read_to_string(path).unwrap();
    let mut blocks = Vec::new();
    let mut prose = Vec::new();
    let mut open: Option<(Block, usize)> = None;
    let mut last_prose = String::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match open.take() {
            Some((mut block, ind)) => {
                if trimmed.starts_with("```") {
                    // Markdown does not close a block at "``` text": the rest of the page
                    // would render as code.
                    assert!(
                        trimmed.trim_end().chars().all(|c| c == '`'),
                        "{}:{}: a closing fence holds nothing else: {line:?}",
                        path.display(),
                        i + 1
                    );
                    blocks.push(block);
                } else {
                    block.text.push_str(line.get(ind..).unwrap_or(trimmed));
                    block.text.push('\n');
                    open = Some((block, ind));
                }
                prose.push(String::new());
            }
            None if trimmed.starts_with("```") => {
                let marker = last_prose
                    .trim()
                    .strip_prefix("<!--")
                    .and_then(|m| m.strip_suffix("-->"))
                    .map(|m| m.trim().to_string());
                let lang = trimmed.trim_start_matches('`').trim().to_string();
                open = Some((
                    Block {
                        lang,
                        line: i + 1,
                        text: String::new(),
                        marker,
                    },
                    indent,
                ));
                prose.push(String::new());
            }
            None => {
                if !line.trim().is_empty() {
                    last_prose = line.to_string();
                }
                prose.push(line.to_string());
            }
        }
    }
    assert!(
        open.is_none(),
        "{}: a code block is not closed",
        path.display()
    );
    Doc {
        path: path.to_path_buf(),
        blocks,
        prose,
    }
}

/// The inline code spans of a prose line (`` `a` and `b` `` → a, b).
fn inline_code(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

/// A block's exemption, checked for form: `fragment` or `invalid: <reason>`.
fn exemption(doc: &Doc, block: &Block) -> Option<String> {
    let marker = block.marker.as_deref()?;
    if marker == "fragment" {
        return Some("fragment".into());
    }
    if let Some(reason) = marker.strip_prefix("invalid:") {
        assert!(
            !reason.trim().is_empty(),
            "{}:{}: `<!-- invalid: -->` needs the reason",
            doc.path.display(),
            block.line
        );
        return Some("invalid".into());
    }
    None
}

/// The names of the environment variables a snippet's templates read (`{{ env.NAME … }}`).
fn env_names(text: &str) -> BTreeSet<String> {
    text.split("env.")
        .skip(1)
        .map(|rest| {
            rest.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|n| !n.is_empty())
        .collect()
}

/// The table headers of a TOML snippet (`[suite]`, `[[variant]]`, `[workloads.x.options]`).
fn toml_tables(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| l.starts_with('['))
        .filter_map(|l| {
            let name = l.trim_start_matches('[');
            name.find(']').map(|end| name[..end].trim().to_string())
        })
        .collect()
}

/// A snippet as a suite: a part of one (`[matrix]`, `[[variant]]`, only `[workloads.X]` tables…)
/// goes inside a minimal `[suite]`, a `[suite]` table without `name` gets one, and variants or
/// server counters without a `[target]` get an unreachable MySQL one.
fn minimal_suite(text: &str) -> String {
    let tables = toml_tables(text);
    // Server settings need a server target: one nothing listens on (validate then notes that
    // it could not check them against the server, and checks everything else).
    let needs_server = !tables.iter().any(|t| t == "target")
        && (tables.iter().any(|t| t == "variant") || text.contains("server_counters"));
    let text = if needs_server {
        format!(
            "{text}\n[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:1\"]\nconnect_timeout = 2\n"
        )
    } else {
        text.to_string()
    };
    if !tables.iter().any(|t| t == "suite") {
        return format!("[suite]\nname = \"docs-snippet\"\n\n{text}");
    }
    let mut out = String::new();
    let mut in_suite = false;
    let mut named = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            if in_suite && !named {
                out.push_str("name = \"docs-snippet\"\n");
                named = true;
            }
            in_suite = trimmed.starts_with("[suite]");
        } else if in_suite && trimmed.starts_with("name") && trimmed.contains('=') {
            named = true;
        }
        out.push_str(line);
        out.push('\n');
    }
    if in_suite && !named {
        out.push_str("name = \"docs-snippet\"\n");
    }
    out
}

/// Validates one TOML snippet with the real binary; `Err` holds what the binary said.
fn validate_snippet(dir: &Path, n: usize, text: &str) -> Result<(), String> {
    let suite = minimal_suite(text);
    let file = dir.join(format!("snippet-{n}.toml"));
    std::fs::write(&file, &suite).unwrap();
    let mut cmd = sbsuite();
    cmd.arg("validate").arg(&file);
    // A part of a suite that names no workload (a `[target]`, a `[[variant]]`, a workload's
    // definition) is validated with one: its own definition's, else a built-in OLTP one.
    let names_workload = suite.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("workload ") || l.starts_with("workload=")
    });
    if !names_workload {
        let declared = toml_tables(&suite).iter().find_map(|t| {
            t.strip_prefix("workloads.")
                .map(|n| n.split('.').next().unwrap().to_string())
        });
        let workload = declared.unwrap_or_else(|| "oltp_point_select".to_string());
        cmd.arg("--set")
            .arg(format!("defaults.workload={workload}"));
    }
    for name in env_names(&suite) {
        cmd.env(name, "docs-test-value");
    }
    let out = cmd.output().unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

#[test]
fn every_toml_snippet_validates() {
    let dir = tempfile::tempdir().unwrap();
    // Snippets from the shipped suites list `workloads = ["workloads/tpcc.toml"]`, relative to
    // the suite file: the snippets' directory has the library where suites/ has it.
    std::os::unix::fs::symlink(
        std::fs::canonicalize("suites/workloads").unwrap(),
        dir.path().join("workloads"),
    )
    .unwrap();
    let mut failures = Vec::new();
    let (mut checked, mut exempt) = (0, 0);
    for path in documents() {
        let doc = read_doc(&path);
        for block in doc.blocks.iter().filter(|b| b.lang == "toml") {
            if exemption(&doc, block).is_some() {
                exempt += 1;
                continue;
            }
            checked += 1;
            if let Err(said) = validate_snippet(dir.path(), checked, &block.text) {
                failures.push(format!(
                    "{}:{}: this ```toml block does not validate (mark it `<!-- fragment -->` or \
                     `<!-- invalid: why -->` on the line before if that is meant):\n{said}",
                    path.display(),
                    block.line
                ));
            }
        }
    }
    eprintln!("toml snippets: {checked} validated, {exempt} marked fragment/invalid");
    assert!(checked >= 10, "only {checked} toml snippets found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Shell words of a command line, with unquoted operators (`|`, `;`, `&&`, `>` …) as words of
/// their own and `#` comments dropped. Quotes are removed; a quoted word is never an operator.
fn shell_words(line: &str) -> Vec<(String, bool)> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    let flush = |words: &mut Vec<(String, bool)>, cur: &mut String, in_word: &mut bool, q: bool| {
        if *in_word {
            words.push((std::mem::take(cur), q));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                quoted = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    cur.push(c);
                }
            }
            '"' => {
                in_word = true;
                quoted = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => cur.extend(chars.next()),
                        c => cur.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                cur.extend(chars.next());
            }
            '#' if !in_word => break,
            c if c.is_whitespace() => {
                flush(&mut words, &mut cur, &mut in_word, quoted);
                quoted = false;
            }
            '|' | ';' | '&' | '>' | '<' | '(' | ')' => {
                flush(&mut words, &mut cur, &mut in_word, quoted);
                quoted = false;
                let mut op = c.to_string();
                while let Some(&n) = chars.peek() {
                    if "|&><".contains(n) {
                        op.push(n);
                        chars.next();
                    } else {
                        break;
                    }
                }
                words.push((op, false));
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    flush(&mut words, &mut cur, &mut in_word, quoted);
    words
}

fn is_operator(word: &(String, bool)) -> bool {
    !word.1
        && word
            .0
            .chars()
            .all(|c| "|&;><()".contains(c) || c.is_ascii_digit())
        && word.0.chars().any(|c| "|&;><()".contains(c))
}

/// The command lines of a shell block: `console` blocks' `$ ` lines, every line of the others,
/// `\` continuations joined; (line number, text).
fn command_lines(block: &Block) -> Vec<(usize, String)> {
    let console = block.lang == "console";
    let mut lines = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in block.text.lines().enumerate() {
        let n = block.line + 1 + i;
        let text = match pending.take() {
            Some((start, mut acc)) => {
                acc.push(' ');
                acc.push_str(line.trim());
                (start, acc)
            }
            None if console => match line.strip_prefix("$ ") {
                Some(cmd) => (n, cmd.to_string()),
                None => continue,
            },
            None => (n, line.to_string()),
        };
        if let Some(cont) = text.1.strip_suffix('\\') {
            pending = Some((text.0, cont.trim_end().to_string()));
        } else {
            lines.push(text);
        }
    }
    lines.extend(pending);
    lines
}

/// `sbsuite`'s subcommands, from `sbsuite --help`, in its order.
fn subcommands() -> Vec<String> {
    let out = sbsuite().arg("--help").output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let commands = help
        .split("Commands:")
        .nth(1)
        .expect("sbsuite --help lists its commands");
    let commands = commands.split("Options:").next().unwrap();
    commands
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// A subcommand `sbsuite --help` does not list (`agent`, started by `run` on clients) exists
/// when its own `--help` succeeds.
fn hidden_subcommand(sub: &str) -> bool {
    sbsuite()
        .args([sub, "--help"])
        .output()
        .unwrap()
        .status
        .success()
}

/// Whether `--flag` is a whole option name in `help` (`--metrics` is not `--metrics-hold`).
fn help_has_flag(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(at, _)| {
        let next = help[at + flag.len()..].chars().next();
        let before = help[..at].chars().next_back();
        !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            && !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
    })
}

/// The problems of the `sbsuite …` invocations among `words`.
fn check_invocations(
    words: &[(String, bool)],
    commands: &[String],
    helps: &mut HashMap<String, String>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let (w, quoted) = &words[i];
        i += 1;
        if *quoted || w != "sbsuite" {
            continue;
        }
        let Some((sub, _)) = words.get(i) else {
            continue;
        };
        let sub = sub.trim_matches(|c| c == '[' || c == ']').to_string();
        // A command name, not prose that starts with the word (`sbsuite …`, `sbsuite extensions:`).
        if sub.is_empty() || !sub.chars().all(|c| c.is_ascii_lowercase() || c == '-') {
            continue;
        }
        if !commands.contains(&sub) && !hidden_subcommand(&sub) {
            problems.push(format!("`sbsuite {sub}`: no such subcommand"));
            continue;
        }
        let help = helps.entry(sub.clone()).or_insert_with(|| {
            let out = sbsuite().arg(&sub).arg("--help").output().unwrap();
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        i += 1;
        while let Some(word) = words.get(i) {
            if is_operator(word) || (word.0 == "--" && !word.1) {
                break;
            }
            i += 1;
            let arg = word.0.trim_matches(|c| c == '[' || c == ']');
            if sub == "sysbench" || !arg.starts_with("--") || word.1 {
                continue;
            }
            let flag = arg.split(['=', '|', '[', ']']).next().unwrap();
            if !help_has_flag(help, flag) {
                problems.push(format!(
                    "`sbsuite {sub} {flag}`: not in `sbsuite {sub} --help`"
                ));
            }
        }
    }
    problems
}

#[test]
fn every_sbsuite_command_line_names_real_subcommands_and_flags() {
    let commands = subcommands();
    assert!(
        commands.iter().any(|c| c == "run") && commands.iter().any(|c| c == "import"),
        "{commands:?}"
    );
    let mut helps = HashMap::new();
    let mut failures = Vec::new();
    let mut checked = 0;
    for path in documents() {
        let doc = read_doc(&path);
        let mut lines: Vec<(usize, Vec<(String, bool)>)> = Vec::new();
        for block in &doc.blocks {
            if ["sh", "bash", "shell", "console"].contains(&block.lang.as_str()) {
                for (n, line) in command_lines(block) {
                    lines.push((n, shell_words(&line)));
                }
            }
        }
        for (i, line) in doc.prose.iter().enumerate() {
            for span in inline_code(line) {
                if span.starts_with("sbsuite ") {
                    lines.push((i + 1, shell_words(span)));
                }
            }
        }
        for (n, words) in lines {
            if words.iter().any(|w| w.0 == "sbsuite" && !w.1) {
                checked += 1;
            }
            for p in check_invocations(&words, &commands, &mut helps) {
                failures.push(format!("{}:{n}: {p}", path.display()));
            }
        }
    }
    for path in suite_files() {
        for (n, line) in comment_commands(&path) {
            checked += 1;
            let words = shell_words(&line);
            for p in check_invocations(&words, &commands, &mut helps) {
                failures.push(format!("{}:{n}: {p}", path.display()));
            }
            for p in repo_paths(&words) {
                if !Path::new(&p).exists() {
                    failures.push(format!("{}:{n}: `{p}` does not exist", path.display()));
                }
            }
        }
    }
    eprintln!("sbsuite command lines checked: {checked}");
    assert!(checked >= 50, "only {checked} command lines found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// GitHub's anchor of a heading: lower case, punctuation other than `-` and `_` dropped,
/// spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The headings of a document (any level), as written.
fn headings(doc: &Doc) -> Vec<String> {
    doc.prose
        .iter()
        .filter_map(|l| {
            let rest = l.trim_start_matches('#');
            (rest.len() < l.len() && rest.starts_with(' ')).then(|| rest.trim().to_string())
        })
        .collect()
}

/// The anchors of a document, with GitHub's `-1`, `-2` for repeated headings.
fn anchors(doc: &Doc) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    headings(doc)
        .iter()
        .map(|h| {
            let a = anchor(h);
            let n = seen.entry(a.clone()).or_insert(0);
            *n += 1;
            if *n == 1 {
                a
            } else {
                format!("{a}-{}", *n - 1)
            }
        })
        .collect()
}

/// The targets of the Markdown links of a prose line (`[text](target)`), inline code removed.
fn link_targets(line: &str) -> Vec<String> {
    let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
    prose
        .match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &prose[at + 2..];
            rest.find(')').map(|end| rest[..end].trim().to_string())
        })
        .collect()
}

/// Where the repository's own paths start (`tests/db/oltp.lua` is sysbench 0.5's, not ours).
const PATH_PREFIXES: [&str; 11] = [
    "suites/",
    "examples/",
    "bench/",
    "src/",
    "docs/",
    "schemas/",
    "tests/all/",
    "tests/common/",
    "tests/fixtures/",
    "tests/lua/",
    ".ci/",
];

/// The repository paths in a piece of code: words that start with one of [`PATH_PREFIXES`]
/// and hold no placeholder (`<area>`, `*`, `{…}`, `…`); not a redirect's target (a file the
/// command writes).
fn repo_paths(words: &[(String, bool)]) -> Vec<String> {
    let mut paths = Vec::new();
    for (i, (word, _)) in words.iter().enumerate() {
        if i > 0 && words[i - 1].0.starts_with('>') {
            continue;
        }
        for part in word.split(['=', ',']) {
            let part = part.trim_matches(|c: char| "\"'([{)]}:;.,".contains(c));
            if PATH_PREFIXES.iter().any(|p| part.starts_with(p))
                && !part.contains(['<', '*', '{', '…', '$', '|'])
            {
                paths.push(part.to_string());
            }
        }
    }
    paths
}

#[test]
fn every_link_and_repository_path_exists() {
    let docs: Vec<Doc> = documents().iter().map(|p| read_doc(p)).collect();
    let anchors_of: HashMap<PathBuf, BTreeSet<String>> =
        docs.iter().map(|d| (d.path.clone(), anchors(d))).collect();
    let mut failures = Vec::new();
    let (mut links, mut paths) = (0, 0);
    for doc in &docs {
        let base = doc.path.parent().unwrap();
        for (i, line) in doc.prose.iter().enumerate() {
            let at = format!("{}:{}", doc.path.display(), i + 1);
            if ["<<<<<<< ", ">>>>>>> "].iter().any(|m| line.starts_with(m)) {
                failures.push(format!("{at}: a merge conflict marker"));
            }
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                links += 1;
                let (file, frag) = match target.split_once('#') {
                    Some((f, a)) => (f, Some(a)),
                    None => (target.as_str(), None),
                };
                let file = if file.is_empty() {
                    doc.path.clone()
                } else {
                    normalize(&base.join(file))
                };
                if !file.exists() {
                    failures.push(format!(
                        "{at}: link `{target}`: {} does not exist",
                        file.display()
                    ));
                    continue;
                }
                if let Some(frag) = frag {
                    match anchors_of.get(&file) {
                        Some(a) if a.contains(frag) => {}
                        Some(_) => failures.push(format!(
                            "{at}: link `{target}`: {} has no heading `#{frag}`",
                            file.display()
                        )),
                        None => failures.push(format!(
                            "{at}: link `{target}`: anchors are checked only in README.md and docs/"
                        )),
                    }
                }
            }
            for span in inline_code(line) {
                for p in repo_paths(&shell_words(span)) {
                    paths += 1;
                    if !Path::new(&p).exists() {
                        failures.push(format!("{at}: `{p}` does not exist in the repository"));
                    }
                }
            }
        }
        for block in &doc.blocks {
            if ["sh", "bash", "shell", "console"].contains(&block.lang.as_str()) {
                for (n, line) in command_lines(block) {
                    for p in repo_paths(&shell_words(&line)) {
                        paths += 1;
                        if !Path::new(&p).exists() {
                            failures.push(format!(
                                "{}:{n}: `{p}` does not exist in the repository",
                                doc.path.display()
                            ));
                        }
                    }
                }
            }
        }
    }
    eprintln!("links checked: {links}, repository paths checked: {paths}");
    assert!(links >= 30 && paths >= 50, "links {links}, paths {paths}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `docs/../README.md` → `README.md` (the paths are relative to the package root).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// The version numbers in `text`, in order (`1.1, 1.0, 0.5, 0.4.12`).
fn versions(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map(|w| w.trim_matches('.'))
        .filter(|w| w.contains('.') && w.split('.').all(|p| !p.is_empty()))
        .map(str::to_string)
        .collect()
}

#[test]
fn import_formats_agree_between_help_and_guide() {
    let out = sbsuite().args(["import", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let first = help.lines().next().unwrap();
    let listed = first
        .split_once('(')
        .and_then(|(_, r)| r.split_once(')'))
        .map(|(l, _)| l)
        .unwrap_or_else(|| panic!("`sbsuite import --help` lists no formats: {first}"));
    let formats = versions(listed);
    assert!(formats.len() >= 4, "{formats:?}");

    // The guide's section: the versions in bold in its first paragraph.
    let page = std::fs::read_to_string("docs/sysbench.md").unwrap();
    let section = page
        .split("## Importing sysbench logs")
        .nth(1)
        .expect("docs/sysbench.md has `## Importing sysbench logs`");
    let para = section
        .split("`sbsuite import` parses")
        .nth(1)
        .expect("the section's paragraph on what it reads");
    let para = para.split("\n\n").next().unwrap();
    let bold: Vec<String> = para
        .split("**")
        .skip(1)
        .step_by(2)
        .flat_map(versions)
        .collect();
    assert_eq!(bold, formats, "docs/sysbench.md vs `sbsuite import --help`");

    // The one-line summaries: the command table and the README's status.
    for (file, needle) in [
        ("docs/commands.md", "| `sbsuite import"),
        ("README.md", "`sbsuite import` (sysbench"),
    ] {
        let text = std::fs::read_to_string(file).unwrap();
        let line = text
            .lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{file} has no line with {needle}"));
        let after = &line[line.find(needle).unwrap() + needle.len()..];
        let listed = after
            .split(['(', ')', ';'])
            .find(|s| s.contains(" / "))
            .unwrap_or_else(|| {
                panic!("{file}: no `A / B / …` list of formats after {needle}: {line}")
            });
        assert_eq!(
            versions(listed),
            formats,
            "{file} vs `sbsuite import --help`"
        );
    }
}

/// The `##`/`###`/`####` headings of the README before it became the front door (#33).
const OLD_README_HEADINGS: &[&str] = &[
    "Status",
    "Install",
    "The two commands",
    "Commands",
    "Shell completions and man pages",
    "Suite files",
    "Variants",
    "What a step cost: server counters, CPU, disk I/O",
    "Hooks and failures",
    "Faults on the timeline",
    "What a stop guarantees",
    "Threshold sweeps",
    "Phases: load over time",
    "Capacity at a latency target: `sbsuite capacity` and `[capacity]`",
    "Matrix values",
    "Layers",
    "Plan order",
    "Whose data: prepare, cleanup and `dataset = \"existing\"`",
    "Editor support",
    "Workloads",
    "Per-host credentials",
    "PostgreSQL",
    "SQLite",
    "General options",
    "Open-loop timing: response, service, lag and `latency_limit`",
    "Connection models",
    "Custom workloads",
    "sysbench Lua scripts in suites",
    "sysbench command lines",
    "Lua scripts",
    "Several client machines",
    "SSH clients",
    "Kubernetes clients",
    "Results",
    "Steady state",
    "Repetitions until sure",
    "results.csv",
    "intervals.csv",
    "histograms/",
    "server_counters.csv",
    "transactions.csv",
    "faults.csv",
    "Comparing runs",
    "Which setting was it? `sbsuite bisect`",
    "Reports",
    "Importing sysbench logs",
    "Watching a run",
    "Machine-readable events",
    "Exit codes",
    "Development",
];

#[test]
fn every_old_readme_heading_is_in_the_docs() {
    let mut found: HashMap<String, Vec<String>> = HashMap::new();
    for path in documents() {
        let doc = read_doc(&path);
        for h in headings(&doc) {
            found.entry(h).or_default().push(path.display().to_string());
        }
    }
    let missing: Vec<&&str> = OLD_README_HEADINGS
        .iter()
        .filter(|h| !found.contains_key(**h))
        .collect();
    assert!(
        missing.is_empty(),
        "sections of the old README that are no heading of README.md or docs/*.md: {missing:?}"
    );
    // The guide's index maps each one to its page.
    let index = std::fs::read_to_string("docs/README.md").unwrap();
    for h in OLD_README_HEADINGS {
        assert!(
            index.contains(&format!("| {h} | [")),
            "docs/README.md's table of the old sections lacks `{h}`"
        );
    }
    let readme = std::fs::read_to_string("README.md").unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines: the front door stays ≤ 300 (move detail to docs/)"
    );
}

/// What `sbsuite ARGS` prints on stdout (stderr when stdout is empty), checked to succeed.
fn output_of(args: &[&str]) -> String {
    // clap wraps help text at $COLUMNS when it is set: the page is generated at 100, its
    // width when the variable is unset and the output is not a terminal.
    let out = sbsuite().args(args).env("COLUMNS", "100").output().unwrap();
    assert!(out.status.success(), "sbsuite {args:?}: {out:?}");
    let text = if out.stdout.is_empty() {
        out.stderr
    } else {
        out.stdout
    };
    let text = String::from_utf8(text).unwrap();
    let text = text.trim_end();
    format!("{text}\n")
}

/// docs/reference.md as the binary describes itself: the workloads with their options and
/// defaults (from each workload's option specs) and every command's `--help` (from the clap
/// definition).
fn generated_reference() -> String {
    let mut md = String::from(
        "# Reference\n\n\
         <!-- Generated by tests/all/docs.rs from the binary: do not edit. After a change of an \
         option or a help text, regenerate with\n     \
         DOCS_BLESS=1 cargo test --test all docs::reference_is_generated_from_the_binary -->\n\n\
         What the binary says about itself, generated from the code (the workloads' option \
         specs and the command-line definition) so that it cannot drift: a test fails when \
         this page differs from what the binary prints. The suite file's schema is \
         `schemas/suite.schema.json` (`sbsuite schema`). The guide's pages explain; this page \
         lists.\n\n\
         ## Workloads\n\n\
         The built-in workloads and the general options every workload takes, with their \
         defaults in brackets. Option names are sysbench's with `_`; in a suite they are \
         `[defaults]` keys and `[matrix]` axes ([Writing suites](suites.md)).\n\n",
    );
    let listing = output_of(&["workloads"]);
    md.push_str(&format!("```text\n$ sbsuite workloads\n{listing}```\n\n"));
    let general: BTreeSet<&str> = listing
        .split("General options")
        .nth(1)
        .expect("`sbsuite workloads` lists the general options")
        .lines()
        .skip(1)
        .collect();
    let names: Vec<&str> = listing
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split(" - ").next())
        .collect();
    assert!(names.len() >= 10, "{names:?}");
    for name in names {
        let own = output_of(&["workloads", name]);
        let mut lines = own.lines();
        let title = lines.next().unwrap_or_default();
        let options: Vec<&str> = lines.filter(|l| !general.contains(l)).collect();
        md.push_str(&format!(
            "### {name}\n\n{}\n\n```text\n{}\n```\n\n",
            title.split_once(" - ").map_or(title, |(_, s)| s),
            if options.is_empty() {
                "(the general options only)".to_string()
            } else {
                options.join("\n")
            }
        ));
    }
    md.push_str(
        "## Commands\n\n\
         Each command's `--help` (`sbsuite help COMMAND` prints the same; `sbsuite man` the man \
         pages). What the commands are for: [Commands](commands.md).\n\n",
    );
    for sub in subcommands().iter().filter(|s| *s != "help") {
        let help = output_of(&[sub, "--help"]);
        md.push_str(&format!(
            "### sbsuite {sub}\n\n```text\n$ sbsuite {sub} --help\n{help}```\n\n"
        ));
    }
    format!("{}\n", md.trim_end())
}

#[test]
fn reference_is_generated_from_the_binary() {
    let path = "docs/reference.md";
    let generated = generated_reference();
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    if committed != generated && std::env::var_os("DOCS_BLESS").is_some() {
        std::fs::write(path, &generated).unwrap();
        return;
    }
    assert!(
        committed == generated,
        "{path} is stale (an option, a default or a help text changed): regenerate it with \
         DOCS_BLESS=1 cargo test --test all docs::reference_is_generated_from_the_binary"
    );
}
