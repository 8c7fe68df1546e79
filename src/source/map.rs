//! Maps key paths back to positions in a TOML file (a suite file, a `workloads` file).
//!
//! figment merges layers but forgets where a value was written, so the original text is parsed
//! a second time with toml's spanned tree; a key path (`variant[1].name`) then finds its line
//! and column for error messages, and is where the loader first meets the text
//! ([`SourceMap::check`]): syntax errors, including the ones toml reports without a position,
//! and nesting too deep for the recursive steps that follow. (The order of keys, which decides
//! the nesting of matrix axes, comes from the plainly parsed file: see
//! [`crate::suite::stored::in_file_order`].)

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::Origin;

/// One segment of a key path.
#[derive(Clone, Debug, PartialEq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

impl Seg {
    pub fn key(s: &str) -> Seg {
        Seg::Key(s.to_string())
    }
}

/// Renders `matrix.threads`, `variant[1].name`.
pub fn path_text(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// Why [`SourceMap::check`] refused a text.
pub enum TreeError {
    /// toml's message and where it points.
    Syntax(String, Origin),
    /// The first key or value deeper than [`MAX_DEPTH`].
    TooDeep(Origin),
}

pub struct SourceMap {
    text: String,
}

impl SourceMap {
    pub fn new(text: &str) -> SourceMap {
        SourceMap {
            text: text.to_string(),
        }
    }

    /// The span of the value at `path` (or of its key when `key` is true). The text is parsed
    /// again on each call: lookups only happen on errors and for a few key orders.
    fn span(&self, path: &[Seg], key: bool) -> Option<Range<usize>> {
        let root = DeTable::parse(&self.text).ok()?;
        let mut value: Option<&toml::Spanned<DeValue<'_>>> = None;
        let mut key_span = None;
        for seg in path {
            match seg {
                // figment names array items by their index (`target.hosts.1.port`).
                Seg::Key(k)
                    if let Some(items) = value.and_then(|v| v.get_ref().as_array())
                        && let Ok(i) = k.parse::<usize>() =>
                {
                    let v = items.get(i)?;
                    key_span = Some(v.span());
                    value = Some(v);
                }
                Seg::Key(k) => {
                    let t = match value {
                        None => root.get_ref(),
                        Some(v) => v.get_ref().as_table()?,
                    };
                    let (kspan, v) = t.get_key_value(k.as_str())?;
                    key_span = Some(kspan.span());
                    value = Some(v);
                }
                Seg::Index(i) => {
                    let v = value?.get_ref().as_array()?.get(*i)?;
                    key_span = Some(v.span());
                    value = Some(v);
                }
            }
        }
        if key {
            key_span
        } else {
            value.map(|v| v.span()).or(key_span)
        }
    }

    /// The origin of the value at `path`, or of the nearest ancestor that exists in the file,
    /// or the start of the file when none does (a missing `[suite]`): every error about the
    /// file's content has a line to show.
    pub fn origin(&self, path: &[Seg], key: bool) -> Origin {
        for len in (1..=path.len()).rev() {
            if let Some(span) = self.span(&path[..len], key || len < path.len()) {
                return self.origin_at(span.start);
            }
        }
        self.origin_at(0)
    }

    /// Parses the text as the loader's first step, so that no later step meets a tree it
    /// cannot handle: the first TOML error with its position, or the first key or value that
    /// nests deeper than [`MAX_DEPTH`].
    ///
    /// toml bounds each dotted key and each inline nesting on its own, so a file may still
    /// nest thousands of levels (dotted keys inside inline tables), which overflows the stack
    /// in serde's recursive conversion and even in a recursive drop. The tree is therefore
    /// walked and taken apart with an explicit stack, never recursively.
    pub fn check(&self) -> Result<(), TreeError> {
        let (root, errors) = DeTable::parse_recoverable(&self.text);
        let too_deep = dismantle(root.into_inner());
        if let Some(e) = errors.first() {
            let message = e.message().trim_end().to_string();
            let origin = match e.span() {
                Some(span) => self.origin_at(span.start),
                None => self.origin_at(self.first_line_failing_with(&message)),
            };
            return Err(TreeError::Syntax(message, origin));
        }
        match too_deep {
            Some(offset) => Err(TreeError::TooDeep(self.origin_at(offset))),
            None => Ok(()),
        }
    }

    /// The start (first non-blank character) of the first line whose prefix of the file
    /// already fails with `message`: toml reports its recursion limit for dotted keys without a
    /// position. Found by bisection over line ends (a longer prefix still holds the bad key).
    fn first_line_failing_with(&self, message: &str) -> usize {
        let text = self.text.as_str();
        let ends: Vec<usize> = text
            .match_indices('\n')
            .map(|(i, _)| i + 1)
            .chain([text.len()])
            .collect();
        let fails = |end: usize| {
            let errors = SourceMap::new(&text[..end]).parse_errors();
            errors
                .iter()
                .any(|e| e.message().trim_end() == message && e.span().is_none())
        };
        let line = ends.partition_point(|&end| !fails(end));
        if line >= ends.len() {
            return 0;
        }
        let start = if line == 0 { 0 } else { ends[line - 1] };
        let blank = text[start..].len() - text[start..].trim_start_matches([' ', '\t']).len();
        start + blank
    }

    /// The TOML errors of the text (the tree taken apart without recursion, see [`Self::check`]).
    fn parse_errors(&self) -> Vec<toml::de::Error> {
        let (root, errors) = DeTable::parse_recoverable(&self.text);
        dismantle(root.into_inner());
        errors
    }

    /// The origin of a byte offset.
    pub fn origin_at(&self, offset: usize) -> Origin {
        let offset = offset.min(self.text.len());
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = self.text[line_start..offset].chars().count() + 1;
        // Control characters (a stray escape sequence, a lone `\r`) would act on the terminal
        // and shift the caret: each shows as one replacement character instead.
        let source_line = self.text[line_start..]
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .map(|c| {
                if c.is_control() && c != '\t' {
                    '\u{FFFD}'
                } else {
                    c
                }
            })
            .collect();
        Origin::File {
            line,
            col,
            source_line,
        }
    }
}

/// How deep a suite file may nest, counting tables and arrays (`matrix.exclude[0].threads[1]`
/// is 5). Real suites need a handful; the bound keeps every later step's recursion shallow.
pub const MAX_DEPTH: usize = 32;

/// Takes a parsed tree apart with an explicit stack, never recursively (see
/// [`SourceMap::check`]), and returns the offset of the first key or array item that nests
/// deeper than [`MAX_DEPTH`].
fn dismantle(root: DeTable<'_>) -> Option<usize> {
    let mut too_deep: Option<usize> = None;
    let mut stack = vec![(1, DeValue::Table(root))];
    while let Some((depth, value)) = stack.pop() {
        let children: Vec<(usize, Spanned<DeValue<'_>>)> = match value {
            DeValue::Table(t) => t.into_iter().map(|(k, v)| (k.span().start, v)).collect(),
            DeValue::Array(a) => a.into_iter().map(|v| (v.span().start, v)).collect(),
            _ => continue,
        };
        for (offset, child) in children {
            if depth > MAX_DEPTH {
                too_deep = Some(too_deep.map_or(offset, |o| o.min(offset)));
            }
            stack.push((depth + 1, child.into_inner()));
        }
    }
    too_deep
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "[suite]\nname = \"x\"\n\n[matrix]\nworkload = [\"cpu\"]\nthreads = [1, 0]\n\n[[variant]]\nname = \"a\"\n\n[[variant]]\nname = \"b\"\n";

    #[test]
    fn finds_values_keys_and_array_items() {
        let map = SourceMap::new(DOC);
        let threads = [Seg::key("matrix"), Seg::key("threads")];
        assert!(matches!(
            map.origin(&threads, false),
            Origin::File {
                line: 6,
                col: 11,
                ..
            }
        ));
        assert!(matches!(
            map.origin(&threads, true),
            Origin::File {
                line: 6,
                col: 1,
                ..
            }
        ));
        let item = [Seg::key("matrix"), Seg::key("threads"), Seg::Index(1)];
        assert!(matches!(
            map.origin(&item, false),
            Origin::File {
                line: 6,
                col: 15,
                ..
            }
        ));
        let name = [Seg::key("variant"), Seg::Index(1), Seg::key("name")];
        assert!(matches!(
            map.origin(&name, false),
            Origin::File { line: 12, .. }
        ));
        let Origin::File { source_line, .. } = SourceMap::new("a = \"\x1b[2J\"\r\n").origin_at(4)
        else {
            panic!("a file position")
        };
        assert_eq!(source_line, "a = \"\u{FFFD}[2J\"");
        assert_eq!(path_text(&name), "variant[1].name");
    }
}
