//! Maps key paths back to positions in the suite file.
//!
//! figment merges layers but forgets where a value was written, so the original text is parsed
//! a second time with toml's spanned tree; a key path (`variant[1].name`) then finds its line
//! and column for error messages. (The order of keys, which decides the nesting of matrix
//! axes, comes from the plainly parsed file: see [`super::stored::in_file_order`].)

use std::ops::Range;

use toml::de::{DeTable, DeValue};

use super::error::Origin;

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

    /// The origin of the value at `path`, or of the nearest ancestor that exists in the file.
    pub fn origin(&self, path: &[Seg], key: bool) -> Origin {
        for len in (1..=path.len()).rev() {
            if let Some(span) = self.span(&path[..len], key || len < path.len()) {
                return self.origin_at(span.start);
            }
        }
        Origin::Unknown
    }

    /// The origin of a byte offset.
    pub fn origin_at(&self, offset: usize) -> Origin {
        let offset = offset.min(self.text.len());
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = self.text[line_start..offset].chars().count() + 1;
        let source_line = self.text[line_start..]
            .lines()
            .next()
            .unwrap_or("")
            .to_string();
        Origin::File {
            line,
            col,
            source_line,
        }
    }
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
        assert_eq!(path_text(&name), "variant[1].name");
    }
}
