//! Where a configuration value was written, and the errors that point there.
//!
//! Two readers take TOML written by hand: the suite loader (`suite`) and the compiler of the
//! workloads a suite declares (`engine::custom::compile`, next to the engine that runs them).
//! Both report each bad value at its file, line, column and key ([`ConfigError`]), found
//! through a [`SourceMap`] of the text, and both pass a file through the same gates before
//! reading it ([`read_file`]: UTF-8, TOML syntax, nesting depth). This module is the layer
//! under both, so neither has to import the other: it imports nothing of the crate.
//!
//! `map` finds the positions of key paths; `error` renders the errors, rustc-style.

mod error;
mod map;

use std::path::Path;

pub use error::{ConfigError, ConfigErrors, Origin, REDACTED, closest, did_you_mean};
pub use map::{MAX_DEPTH, Seg, SourceMap, TreeError, path_text};

/// A file's TOML that does not parse, with its position.
pub struct ParseError {
    error: TreeError,
}

impl ParseError {
    /// The error, reported at its position in `file`.
    pub fn into_error(self, file: &Path) -> ConfigError {
        match self.error {
            TreeError::Syntax(message, origin) => {
                ConfigError::new(file, origin, "", format!("TOML syntax error: {message}"))
                    .with_help("fix the TOML syntax at the marked position")
            }
            TreeError::TooDeep(origin) => ConfigError::new(
                file,
                origin,
                "",
                format!("the file nests deeper than {MAX_DEPTH} levels here"),
            )
            .with_help("flatten this value"),
        }
    }
}

/// A file's text and its table, or its syntax error (the same gates as the suite file).
pub fn read_file(path: &Path) -> std::io::Result<(String, Result<toml::Table, ParseError>)> {
    let bytes = std::fs::read(path)?;
    let text = String::from_utf8(bytes)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    let map = SourceMap::new(&text);
    let parsed = match map.check() {
        Err(error) => Err(ParseError { error }),
        Ok(()) => toml::from_str::<toml::Table>(&text).map_err(|e| {
            let origin = e
                .span()
                .map_or_else(|| map.origin_at(0), |s| map.origin_at(s.start));
            ParseError {
                error: TreeError::Syntax(e.message().trim_end().to_string(), origin),
            }
        }),
    };
    Ok((text, parsed))
}
