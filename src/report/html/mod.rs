//! `sbsuite report RUN [RUN2]`: one self-contained HTML page per run (or pair of runs) with
//! SVG charts, the results table, the resolved suite and the captured server variables.
//!
//! Split by concern: runs are read through the one reader of a run directory
//! ([`crate::results::load`], intervals included), [`charts`] decides which charts and what
//! they hold, [`svg`] draws them, [`page`] lays out the HTML. The same [`svg::Chart`]
//! renders inline (in the page) and standalone (`--svg DIR`, for documents).

pub mod charts;
pub mod page;
pub mod svg;

use std::path::{Path, PathBuf};

use crate::commands::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK};
use crate::results::load::{self, Parts};

use self::charts::Tagged;

/// Default name of the page inside the (first) run directory.
pub const REPORT_FILE: &str = "report.html";

/// Runs the command; returns the exit code (2 for bad input, 1 when writing fails).
pub fn command(paths: &[PathBuf], out: Option<PathBuf>, svg_dir: Option<PathBuf>) -> u8 {
    let mut runs = Vec::new();
    for p in paths {
        match load::load(p, Parts::WithIntervals) {
            Ok(r) => runs.push(r),
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_BAD_INPUT;
            }
        }
    }
    let tags = if runs.len() > 1 {
        vec!["A", "B"]
    } else {
        vec![""]
    };
    let tagged: Vec<Tagged> = runs
        .iter()
        .zip(tags)
        .map(|(run, tag)| Tagged {
            tag: tag.to_string(),
            run,
        })
        .collect();
    let charts = charts::build(&tagged);
    let generated = chrono::Utc::now()
        .format("%Y-%m-%d %H:%M:%S UTC")
        .to_string();
    let html = page::render(&tagged, &charts, &generated);
    let out = out.unwrap_or_else(|| runs[0].dir.join(REPORT_FILE));
    if let Err(e) = write(&out, &html) {
        eprintln!("error: cannot write {}: {e}", out.display());
        return EXIT_FAILED;
    }
    println!("wrote {}", out.display());
    if let Some(dir) = svg_dir {
        match write_svgs(&dir, &charts) {
            Ok(n) => println!("wrote {n} SVG chart{} to {}", plural(n), dir.display()),
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_FAILED;
            }
        }
    }
    EXIT_OK
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn write(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, text)
}

/// Every chart as `<id>.svg`; returns how many were written.
fn write_svgs(dir: &Path, charts: &charts::Charts) -> Result<usize, String> {
    let all = charts.sweep.iter().chain(
        charts
            .series
            .iter()
            .flat_map(|(_, a, b)| [a.as_ref(), b.as_ref()].into_iter().flatten()),
    );
    let mut n = 0;
    for c in all {
        let path = dir.join(format!("{}.svg", c.id));
        write(&path, &c.to_svg(true))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        n += 1;
    }
    Ok(n)
}
