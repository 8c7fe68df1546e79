//! HDR histogram files: one per run step, so percentiles can be recomputed and steps or shards
//! merged exactly later (the CSV only keeps a handful of quantiles).
//!
//! The V2 deflate format is HdrHistogram's own interchange format, so the files are also
//! readable by the Java/Go/Python implementations. Each file is written to a temporary name and
//! renamed, so a crash never leaves a truncated histogram behind a finished row.

use std::fs::{self, File};
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};

use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};

use super::ResultsError;

/// A file-name-safe version of a step name: every character outside `A-Z a-z 0-9 . _ -` becomes
/// `_`, at most 100 characters, never empty and never starting with a dot.
pub fn sanitise_name(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    if s.starts_with('.') {
        s.replace_range(0..1, "_");
    }
    if s.is_empty() {
        s.push_str("step");
    }
    s
}

/// The file name of a step's histogram: `<index>-<sanitised name>.hdr`.
pub fn histogram_file_name(index: usize, name: &str) -> String {
    format!("{index}-{}.hdr", sanitise_name(name))
}

/// Serializes `hist` (values in ns) to `path` in the V2 deflate format, durably.
pub fn write_histogram(path: &Path, hist: &Histogram<u64>) -> Result<(), ResultsError> {
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(hist, &mut buf)
        .map_err(|e| ResultsError::Histogram {
            path: path.to_path_buf(),
            message: format!("cannot serialize: {e:?}"),
        })?;
    let tmp = tmp_path(path);
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| ResultsError::Io { path: p, source }
    };
    let mut file = File::create(&tmp).map_err(io(&tmp))?;
    file.write_all(&buf).map_err(io(&tmp))?;
    file.sync_data().map_err(io(&tmp))?;
    drop(file);
    fs::rename(&tmp, path).map_err(io(path))
}

/// Reads a histogram written by [`write_histogram`] (or any V2 / V2 deflate HDR file).
pub fn read_histogram(path: &Path) -> Result<Histogram<u64>, ResultsError> {
    let file = File::open(path).map_err(|source| ResultsError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Deserializer::new()
        .deserialize(&mut BufReader::new(file))
        .map_err(|e| ResultsError::Histogram {
            path: path.to_path_buf(),
            message: format!("not a readable HDR histogram: {e:?}"),
        })
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

/// The directory, inside `histograms/`, of a step's per-transaction histograms:
/// `<index>-<sanitised name>` (the step's own histogram without `.hdr`).
pub fn transaction_histogram_dir(index: usize, name: &str) -> String {
    format!("{index}-{}", sanitise_name(name))
}

/// The file names of a step's per-transaction (and per-statement) histograms, for its
/// `transactions.csv` rows in file order: `<sanitised name>.hdr`, with `-2`, `-3`… appended
/// when two names are the same once sanitised. The writer and the reader both derive the names
/// from the rows through here, so they always agree.
pub fn transaction_histogram_files<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut taken = std::collections::HashSet::new();
    names
        .into_iter()
        .map(|name| {
            let base = sanitise_name(name);
            let mut file = base.clone();
            let mut n = 1;
            while !taken.insert(file.clone()) {
                n += 1;
                file = format!("{base}-{n}");
            }
            file + ".hdr"
        })
        .collect()
}
