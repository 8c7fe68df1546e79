//! Shell completions and man pages (`sbsuite completions SHELL`, `sbsuite man`), issue #18:
//! generated from the clap definition, so these tests take the subcommands from that same
//! definition ([`Cli::command`]) and check that the generated text covers them, that bash
//! really completes with it, and that the man pages render cleanly.

use std::process::{Command as StdCommand, Stdio};

use clap::{CommandFactory, ValueEnum};
use clap_complete::Shell;
use sbsuite::cli::Cli;

use crate::common;

use common::{sbsuite, skip};

/// The names of the visible subcommands, as clap knows them.
fn subcommands() -> Vec<String> {
    let cmd = Cli::command();
    let names: Vec<String> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| s.get_name().to_string())
        .collect();
    assert!(names.len() >= 10, "{names:?}");
    names
}

/// Whether `word` occurs in `text` as a whole word (not inside `runs` or `sbsuite-run`'s
/// neighbours: letters, digits, `-` and `_` continue a word).
fn has_word(text: &str, word: &str) -> bool {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

fn stdout_of(args: &[&str]) -> String {
    let out = sbsuite().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "sbsuite {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn every_shells_completion_names_every_subcommand() {
    let names = subcommands();
    for shell in Shell::value_variants() {
        let shell = shell.to_possible_value().unwrap();
        let script = stdout_of(&["completions", shell.get_name()]);
        for name in &names {
            assert!(
                has_word(&script, name),
                "the {} completion does not mention `{name}`",
                shell.get_name()
            );
        }
    }
    let out = sbsuite().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "an unknown shell is bad input");
}

/// What bash offers for the words of a command line (the last word being completed), with
/// the script `sbsuite completions bash` prints loaded the way bash-completion loads it.
fn bash_complete(script: &std::path::Path, words: &[&str]) -> Vec<String> {
    let words: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let program = format!(
        r#"source '{}' || exit 3
spec=$(complete -p sbsuite) || exit 4
fn=$(sed -n 's/.* -F \([^ ]*\) .*/\1/p' <<<"$spec")
[ -n "$fn" ] || exit 5
COMP_WORDS=({})
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
"$fn" sbsuite "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\n' "${{COMPREPLY[@]}}"
"#,
        script.display(),
        words.join(" ")
    );
    let out = StdCommand::new("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .stdin(Stdio::null())
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "bash exited {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut offered: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    offered.sort();
    offered
}

#[test]
fn bash_completes_subcommands_options_and_shells() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("sbsuite");
    std::fs::write(&script, stdout_of(&["completions", "bash"])).unwrap();

    let mut expected: Vec<String> = subcommands()
        .into_iter()
        .filter(|n| n.starts_with('r'))
        .collect();
    expected.sort();
    assert!(expected.len() >= 3, "{expected:?}");
    assert_eq!(bash_complete(&script, &["sbsuite", "r"]), expected);

    let cmd = Cli::command();
    let run = cmd.find_subcommand("run").unwrap();
    let mut longs: Vec<String> = run
        .get_arguments()
        .filter_map(|a| a.get_long())
        .filter(|l| l.starts_with("res"))
        .map(|l| format!("--{l}"))
        .collect();
    longs.sort();
    assert!(!longs.is_empty(), "`run` has a --results-dir");
    assert_eq!(bash_complete(&script, &["sbsuite", "run", "--res"]), longs);

    let mut shells: Vec<String> = Shell::value_variants()
        .iter()
        .map(|s| s.to_possible_value().unwrap().get_name().to_string())
        .collect();
    shells.sort();
    // An empty word is offered the options too (`-h`, `--help`): the values are the rest.
    let values: Vec<String> = bash_complete(&script, &["sbsuite", "completions", ""])
        .into_iter()
        .filter(|w| !w.starts_with('-'))
        .collect();
    assert_eq!(values, shells);
}

/// Renders `page` with groff's man macros and every warning on; returns the plain text (no
/// overstriking).
fn groff_clean(page: &[u8], name: &str) -> String {
    use std::io::Write;

    let mut child = StdCommand::new("groff")
        .args(["-man", "-Tutf8", "-P-cbou", "-ww", "-rLL=100n"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("groff runs");
    child.stdin.take().unwrap().write_all(page).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "groff failed on {name}");
    assert!(
        out.stderr.is_empty(),
        "groff warns about {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn have(tool: &str) -> bool {
    StdCommand::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn man_pages_render_without_warnings() {
    if !have("groff") || !have("man") {
        return skip("groff or man is not installed (apt-get install groff-base man-db)");
    }
    let names = subcommands();
    let page = stdout_of(&["man"]);
    let text = groff_clean(page.as_bytes(), "sbsuite.1");
    assert!(text.contains("NAME") && text.contains("SYNOPSIS"), "{text}");
    for name in &names {
        assert!(
            text.contains(&format!("sbsuite-{name}(1)")),
            "sbsuite.1 does not list sbsuite-{name}(1)"
        );
    }

    let dir = tempfile::tempdir().unwrap();
    let mandir = dir.path().join("man1");
    let listed = stdout_of(&["man", "--dir", mandir.to_str().unwrap()]);
    let mut expected = vec!["sbsuite.1".to_string()];
    expected.extend(names.iter().map(|n| format!("sbsuite-{n}.1")));
    let written: Vec<String> = listed
        .lines()
        .map(|l| {
            let p = std::path::Path::new(l);
            assert!(p.starts_with(&mandir), "{l}");
            p.file_name().unwrap().to_string_lossy().into_owned()
        })
        .collect();
    assert_eq!(written, expected);
    let mut on_disk: Vec<String> = std::fs::read_dir(&mandir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut sorted = expected.clone();
    sorted.sort();
    assert_eq!(on_disk, sorted, "one file per page, nothing else");
    assert_eq!(
        std::fs::read_to_string(mandir.join("sbsuite.1")).unwrap(),
        page,
        "--dir writes the page `sbsuite man` prints"
    );

    for file in &expected {
        let path = mandir.join(file);
        groff_clean(&std::fs::read(&path).unwrap(), file);
        // man-db, as a user reads it: formatted with its warnings on, nothing on stderr.
        let out = StdCommand::new("man")
            .args(["--warnings=w", "-l"])
            .arg(&path)
            .env("MANWIDTH", "100")
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "man -l {file} failed");
        assert!(
            out.stderr.is_empty(),
            "man -l {file} warns: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("SYNOPSIS"), "{file}: {text}");
    }
    let run = String::from_utf8(
        StdCommand::new("man")
            .args(["-l"])
            .arg(mandir.join("sbsuite-run.1"))
            .env("MANWIDTH", "100")
            .env("MANPAGER", "cat")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert!(run.contains("--results-dir"), "{run}");
}
