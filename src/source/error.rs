//! Configuration errors that point at the file, line, column and key, with the fix.
//!
//! Users edit suite files by hand and override them from the environment and the command line,
//! so every error says where the bad value came from (a file position, an environment variable
//! or a `--set` option) and what to write instead, in the style of rustc's diagnostics.

use std::fmt;
use std::path::{Path, PathBuf};

/// What a literal password becomes wherever it would be shown or stored (an error's source
/// line, the stored suite).
pub const REDACTED: &str = "***";

/// Where a bad value was written.
#[derive(Clone, Debug, PartialEq)]
pub enum Origin {
    /// A position in the suite file (1-based line and column) with the text of that line.
    File {
        line: usize,
        col: usize,
        source_line: String,
    },
    /// An environment variable (`SBSUITE_DEFAULTS__TIME`).
    Env(String),
    /// A `--set key=value` option.
    Set(String),
    /// Somewhere in the file, position unknown.
    Unknown,
}

/// One configuration error.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError {
    pub file: PathBuf,
    pub origin: Origin,
    /// Dotted key path (`matrix.threads`), empty when the error is about the whole file.
    pub key: String,
    pub message: String,
    pub help: Option<String>,
}

impl ConfigError {
    pub fn new(
        file: &Path,
        origin: Origin,
        key: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        ConfigError {
            file: file.to_path_buf(),
            origin,
            key: key.into(),
            message: message.into(),
            help: None,
        }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A value from a layer is fixed there, so the error leads with the variable or option
        // (#14); the suite file is only what it was layered over.
        match &self.origin {
            Origin::Env(var) => writeln!(f, "error: {var}: {}", self.message)?,
            Origin::Set(opt) => writeln!(f, "error: --set {opt}: {}", self.message)?,
            _ => writeln!(f, "error: {}", self.message)?,
        }
        let file = self.file.display();
        match &self.origin {
            Origin::File {
                line,
                col,
                source_line,
            } => {
                let gutter = line.to_string().len();
                // A literal password is never shown, even back to its author (CI logs keep
                // errors): only a template (`{{ env.X }}`) is.
                let source_line = if self.key == "target.password" && !source_line.contains("{{") {
                    let keep: String = source_line.chars().take(col.saturating_sub(1)).collect();
                    format!("{keep}{}", REDACTED)
                } else {
                    // A line may hold a password without being about it: a `hosts` entry
                    // such as `{ host = "h", password = "…", prot = 1 }`.
                    redact_passwords(source_line)
                };
                writeln!(f, "{:gutter$}--> {file}:{line}:{col}", "")?;
                writeln!(f, "{:gutter$} |", "")?;
                writeln!(f, "{line} | {source_line}")?;
                let caret_pad: String = source_line
                    .chars()
                    .take(col.saturating_sub(1))
                    .map(|c| if c == '\t' { '\t' } else { ' ' })
                    .collect();
                writeln!(f, "{:gutter$} | {caret_pad}^", "")?;
            }
            Origin::Env(var) => writeln!(
                f,
                "  --> environment variable {var} (layered over the suite file {file})"
            )?,
            Origin::Set(opt) => writeln!(
                f,
                "  --> command-line option --set {opt} (layered over the suite file {file})"
            )?,
            Origin::Unknown => writeln!(f, "  --> {file}")?,
        }
        if !self.key.is_empty() {
            writeln!(f, "  = key: {}", self.key)?;
        }
        if let Some(help) = &self.help {
            writeln!(f, "  = help: {help}")?;
        }
        Ok(())
    }
}

/// `line` with the value of every `password = "literal"` in it replaced by `***` (templates,
/// which hold no secret, stay).
fn redact_passwords(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(i) = rest.find("password") {
        let (head, tail) = rest.split_at(i + "password".len());
        out.push_str(head);
        rest = tail;
        let Some(value) = tail.trim_start().strip_prefix('=').map(str::trim_start) else {
            continue;
        };
        let Some(quote) = value.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            continue;
        };
        let body = &value[1..];
        let end = body.find(quote).unwrap_or(body.len());
        out.push_str(&tail[..tail.len() - value.len() + 1]);
        if body[..end].contains("{{") {
            out.push_str(&body[..end]);
        } else {
            out.push_str(REDACTED);
        }
        rest = &body[end..];
    }
    out.push_str(rest);
    out
}

/// All errors found in one suite file (validation keeps going to report as many as it can).
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        if self.0.len() > 1 {
            writeln!(
                f,
                "\n{} errors in {}",
                self.0.len(),
                self.0[0].file.display()
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

impl From<ConfigError> for ConfigErrors {
    fn from(e: ConfigError) -> Self {
        ConfigErrors(vec![e])
    }
}

/// "did you mean `threads`?" when a close candidate exists (Jaro-Winkler ≥ 0.8, as cargo does
/// for its own unknown-key hints).
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    closest(word, candidates).map(|c| format!("did you mean `{c}`?"))
}

/// The candidate [`did_you_mean`] suggests, for help that spells the fix in another syntax
/// (an environment variable, a `--set` option).
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(word, c), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_position_key_and_help() {
        let e = ConfigError::new(
            Path::new("s.toml"),
            Origin::File {
                line: 12,
                col: 11,
                source_line: "threads = 0".into(),
            },
            "matrix.threads",
            "threads must be at least 1",
        )
        .with_help("use 1 or more");
        let text = e.to_string();
        assert!(text.contains("--> s.toml:12:11"), "{text}");
        assert!(text.contains("12 | threads = 0"), "{text}");
        assert!(text.contains("   |           ^"), "{text}");
        assert!(text.contains("= key: matrix.threads"), "{text}");
        assert!(text.contains("= help: use 1 or more"), "{text}");
    }

    #[test]
    fn literal_passwords_on_a_shown_line_are_redacted() {
        assert_eq!(
            redact_passwords(r#"  { host = "h", password = "hunter2", prot = 1 },"#),
            r#"  { host = "h", password = "***", prot = 1 },"#
        );
        assert_eq!(
            redact_passwords(r#"{ password='a"b' }, { password = "{{ env.PW }}" }"#),
            r#"{ password='***' }, { password = "{{ env.PW }}" }"#
        );
        assert_eq!(redact_passwords("password_file = 1"), "password_file = 1");
        assert_eq!(
            redact_passwords(r#"password = "unterminated"#),
            r#"password = "***"#
        );
    }

    #[test]
    fn suggestions() {
        assert_eq!(
            did_you_mean("thraeds", ["threads", "time"]).as_deref(),
            Some("did you mean `threads`?")
        );
        assert_eq!(did_you_mean("zzz", ["threads", "time"]), None);
    }
}
