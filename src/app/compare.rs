//! `sbsuite compare` (exit 1 when a `--fail-on` gate failed) and `sbsuite runs` (the runs under
//! a results directory, as a table or JSON).

use std::io::IsTerminal;
use std::path::Path;

use super::{Exit, fail, print};
use crate::cli::{CompareArgs, CompareFormat, Format};

pub(super) fn compare(args: CompareArgs) -> Exit {
    use crate::compare::Format as F;
    let gates = match args.fail_on.as_deref().map(crate::compare::parse_gates) {
        None => Vec::new(),
        Some(Ok(g)) => g,
        Some(Err(e)) => return fail(Exit::BadInput, e),
    };
    let req = crate::compare::Request {
        runs: args.runs,
        by: args.by,
        gates,
        metrics: args.metric,
    };
    let format = match args.format {
        CompareFormat::Table => F::Table,
        CompareFormat::Markdown => F::Markdown,
        CompareFormat::Csv => F::Csv,
        CompareFormat::Json => F::Json,
    };
    let cs = match crate::compare::compare(&req) {
        Ok(cs) => cs,
        Err(e) => return fail(Exit::BadInput, e),
    };
    let color = format == F::Table && std::io::stdout().is_terminal();
    let printed = print(&crate::compare::render(&cs, format, color));
    let failed = crate::compare::gates::failures(&cs);
    for f in &failed {
        eprintln!("gate failed: {f}");
    }
    match printed {
        Exit::Ok if !failed.is_empty() => Exit::Failed,
        other => other,
    }
}

pub(super) fn runs(root: &Path, format: Format) -> Exit {
    let runs = match crate::results::load::list(root) {
        Ok(r) => r,
        Err(e) => return fail(Exit::BadInput, e),
    };
    if matches!(format, Format::Json) {
        return print(&(serde_json::to_string_pretty(&runs).unwrap_or_default() + "\n"));
    }
    if runs.is_empty() {
        return print(&format!("no runs under {}\n", root.display()));
    }
    let mut rows = vec![[
        "suite".to_string(),
        "run".into(),
        "started".into(),
        "runs".into(),
        "status".into(),
        "path".into(),
    ]];
    for r in &runs {
        // Runs a `stop_when` sweep skipped past its knee are finished by design: the count is
        // of the runs the sweep needed, and says how many it left out.
        let needed = r.planned.map(|p| p.saturating_sub(r.skipped_by_stop_when));
        let mut count = match needed {
            Some(p) if p != r.runs => format!("{}/{p}", r.runs),
            _ => r.runs.to_string(),
        };
        if r.skipped_by_stop_when > 0 {
            count.push_str(&format!(
                " (+{} skipped by stop_when)",
                r.skipped_by_stop_when
            ));
        }
        let mut counts = match (r.failed, r.interrupted) {
            (0, 0) => Vec::new(),
            (f, 0) => vec![format!("{f} failed")],
            (f, i) => vec![format!("{f} failed, {i} interrupted")],
        };
        counts.extend(failed_steps(&r.failed_steps));
        let status = match counts.is_empty() {
            true => r.status.clone(),
            false => format!("{} ({})", r.status, counts.join(", ")),
        };
        rows.push([
            r.suite.clone(),
            r.run_id.clone(),
            r.started.clone(),
            count,
            status,
            r.path.display().to_string(),
        ]);
    }
    let widths: Vec<usize> = (0..6)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut text = String::new();
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        text.push_str(line.join("  ").trim_end());
        text.push('\n');
    }
    print(&text)
}

/// `check failed`, `2 cleanups failed`: the failed steps that are not runs, by kind in the
/// order they first failed.
fn failed_steps(kinds: &[String]) -> Vec<String> {
    let mut by_kind: Vec<(&str, usize)> = Vec::new();
    for k in kinds {
        match by_kind.iter_mut().find(|(kind, _)| kind == k) {
            Some((_, n)) => *n += 1,
            None => by_kind.push((k, 1)),
        }
    }
    by_kind
        .into_iter()
        .map(|(kind, n)| match n {
            1 => format!("{kind} failed"),
            n => format!("{n} {kind}s failed"),
        })
        .collect()
}
