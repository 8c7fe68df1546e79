//! `sbsuite report RUN [RUN2]`: one self-contained HTML page per run (or pair of runs) with
//! SVG charts, the results table, the resolved suite and the captured server variables.
//!
//! Split by concern: runs are read through the one reader of a run directory
//! ([`crate::results::load`], intervals included), [`charts`] decides which charts and what
//! they hold, [`svg`] draws them, [`variants`] says what the comparisons found (the verdict at
//! the top, the Variants section), [`page`] lays out the HTML. The same [`svg::Chart`]
//! renders inline (in the page) and standalone (`--svg DIR`, for documents). The directory of
//! a capacity search (#30: a curve and a run per probe, no results.csv) gets its own page
//! ([`capacity`]).

pub mod capacity;
pub mod charts;
pub mod page;
pub mod svg;
pub mod variants;

use std::path::{Path, PathBuf};

use crate::results::load::{self, LoadError, Parts};

use self::charts::Tagged;

/// Default name of the page inside the (first) run directory.
pub const REPORT_FILE: &str = "report.html";

/// Why no page (or not every chart) was written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A run directory cannot be read back.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A capacity search's curve cannot be read back.
    #[error(transparent)]
    Curve(#[from] crate::results::capacity::CurveError),
    /// A capacity search given with another directory: its page is its own.
    #[error(
        "{} is a capacity search (capacity.csv, no results.csv): report it alone",
        .0.display()
    )]
    CapacityAlone(PathBuf),
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Runs the command: writes the page (to `out`, else `report.html` in the first run's
/// directory) and, with `svg_dir`, every chart as an SVG file, saying on stdout what it wrote.
pub fn command(
    paths: &[PathBuf],
    out: Option<PathBuf>,
    svg_dir: Option<PathBuf>,
) -> Result<(), ReportError> {
    match paths.iter().find(|p| is_capacity_search(p)) {
        Some(dir) if paths.len() == 1 => return capacity_command(dir, out, svg_dir),
        Some(dir) => return Err(ReportError::CapacityAlone(dir.clone())),
        None => {}
    }
    let runs = paths
        .iter()
        .map(|p| load::load(p, Parts::WithIntervals))
        .collect::<Result<Vec<_>, _>>()?;
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
    let html = page::render(&tagged, &charts, &generated());
    let out = out.unwrap_or_else(|| runs[0].dir.join(REPORT_FILE));
    write(&out, &html)?;
    println!("wrote {}", out.display());
    if let Some(dir) = svg_dir {
        let all = charts.sweep.iter().chain(
            charts
                .series
                .iter()
                .flat_map(|(_, a, b)| [a.as_ref(), b.as_ref()].into_iter().flatten()),
        );
        write_svgs(&dir, all)?;
    }
    Ok(())
}

/// Whether `dir` is the directory of a capacity search: its curve, and no results.csv (a
/// run's results.csv wins, so a run directory always gets the run page).
fn is_capacity_search(dir: &Path) -> bool {
    use crate::results::{RESULTS_FILE, capacity::CAPACITY_FILE};
    dir.join(CAPACITY_FILE).is_file() && !dir.join(RESULTS_FILE).exists()
}

/// The page of the capacity search in `dir` (to `out`, else `report.html` in `dir`).
fn capacity_command(
    dir: &Path,
    out: Option<PathBuf>,
    svg_dir: Option<PathBuf>,
) -> Result<(), ReportError> {
    let curve = crate::results::capacity::Curve::read(dir)?;
    let suite_text = std::fs::read_to_string(dir.join(crate::results::SUITE_FILE)).ok();
    let (html, charts) = capacity::render(dir, &curve, suite_text.as_deref(), &generated());
    let out = out.unwrap_or_else(|| dir.join(REPORT_FILE));
    write(&out, &html)?;
    println!("wrote {}", out.display());
    if let Some(svg) = svg_dir {
        write_svgs(&svg, charts.iter())?;
    }
    Ok(())
}

/// When the page was made, as it says.
fn generated() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%d %H:%M:%S UTC")
        .to_string()
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn write(path: &Path, text: &str) -> Result<(), ReportError> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    parent
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(path, text))
        .map_err(|source| ReportError::Write {
            path: path.to_path_buf(),
            source,
        })
}

/// Every chart as `<id>.svg`, saying on stdout how many were written.
fn write_svgs<'c>(
    dir: &Path,
    charts: impl Iterator<Item = &'c svg::Chart>,
) -> Result<(), ReportError> {
    let mut n = 0;
    for c in charts {
        let path = dir.join(format!("{}.svg", c.id));
        write(&path, &c.to_svg(true))?;
        n += 1;
    }
    println!("wrote {n} SVG chart{} to {}", plural(n), dir.display());
    Ok(())
}
