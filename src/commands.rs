//! The subcommands: each turns parsed arguments into work and an exit code.
//!
//! Errors are printed here, once, in the shape users see (config errors with file:line:col);
//! the rest of the library returns typed errors.

use std::io::Write;
use std::path::Path;

use crate::cli::{Cli, Command, Format, Overrides};
use crate::engine::{config::GENERAL, registry, spec::WorkloadSpec};
use crate::plan::{self, Plan};
use crate::suite::{self, SetOverride, Suite};

pub const EXIT_OK: u8 = 0;
pub const EXIT_FAILED: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;
pub const EXIT_INTERRUPTED: u8 = 130;

pub fn execute(cli: Cli) -> u8 {
    match cli.command {
        Command::Plan(args) => match load_plan(&args.file, &args.overrides) {
            Ok((_, plan)) => {
                let file = args.file.display().to_string();
                let text = match args.format {
                    Format::Text => plan::render_text(&plan, &file),
                    Format::Json => plan::render_json(&plan, &file),
                };
                print(&text)
            }
            Err(code) => code,
        },
        Command::Validate(args) => {
            let mut code = EXIT_OK;
            for file in &args.files {
                match load_plan(file, &args.overrides) {
                    // Variants' server settings are checked when the server can be reached.
                    Ok((suite, plan)) => match crate::runner::check_variants(&suite, &plan, true) {
                        Ok(_) => println!("ok: {} ({} steps)", file.display(), plan.steps.len()),
                        Err(c) => code = c,
                    },
                    Err(c) => code = c,
                }
            }
            code
        }
        Command::Workloads(args) => workloads(args.name.as_deref()),
        Command::Schema => print(&suite::raw::json_schema()),
        Command::Run(args) => crate::runner::command(args),
        Command::Sysbench(args) => crate::compat::sysbench(&args.args),
        Command::Convert(args) => crate::compat::convert(&args.args),
        Command::Restore(args) => restore(&args.run_dir),
        Command::Compare(args) => compare(args),
        Command::Runs(args) => runs(&args.results_dir, args.format),
        Command::Report(args) => crate::report::html::command(&args.runs, args.out, args.svg),
        Command::Import(args) => crate::import::command(&crate::import::ImportRequest {
            files: args.files,
            out: args.out,
            suite: args.suite,
            workload: args.workload,
        }),
    }
}

/// Loads a suite and builds its plan, printing errors; `Err` holds the exit code.
pub fn load_plan(file: &Path, overrides: &Overrides) -> Result<(Suite, Plan), u8> {
    let mut sets = Vec::new();
    for s in &overrides.set {
        match SetOverride::parse(s) {
            Ok(o) => sets.push(o),
            Err(e) => {
                eprintln!("error: {e}");
                return Err(EXIT_BAD_INPUT);
            }
        }
    }
    let suite = suite::load(file, &sets).map_err(|e| {
        eprint!("{e}");
        EXIT_BAD_INPUT
    })?;
    let plan = plan::build(&suite).map_err(|e| {
        eprint!("{e}");
        EXIT_BAD_INPUT
    })?;
    Ok((suite, plan))
}

/// `sbsuite compare`: exit 0, 1 when a gate failed, 2 for bad input.
fn compare(args: crate::cli::CompareArgs) -> u8 {
    use crate::cli::CompareFormat as F;
    use crate::compare::Format;
    let gates = match args.fail_on.as_deref().map(crate::compare::parse_gates) {
        None => Vec::new(),
        Some(Ok(g)) => g,
        Some(Err(e)) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let req = crate::compare::Request {
        runs: args.runs,
        by: args.by,
        gates,
    };
    let format = match args.format {
        F::Table => Format::Table,
        F::Markdown => Format::Markdown,
        F::Csv => Format::Csv,
        F::Json => Format::Json,
    };
    match crate::compare::command(&req, format) {
        Ok(true) => EXIT_OK,
        Ok(false) => EXIT_FAILED,
        Err(e) => {
            eprintln!("error: {e}");
            EXIT_BAD_INPUT
        }
    }
}

/// `sbsuite runs`: the runs under a results directory.
fn runs(root: &Path, format: Format) -> u8 {
    let runs = match crate::compare::list_runs(root) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
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
        let count = match r.planned {
            Some(p) if p != r.runs => format!("{}/{p}", r.runs),
            _ => r.runs.to_string(),
        };
        let status = match (r.failed, r.interrupted) {
            (0, 0) => r.status.clone(),
            (f, 0) => format!("{} ({f} failed)", r.status),
            (f, i) => format!("{} ({f} failed, {i} interrupted)", r.status),
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

/// `sbsuite restore RUN_DIR`: applies the restore files a stopped run left behind.
fn restore(run_dir: &Path) -> u8 {
    let pending = match crate::runner::server::pending(run_dir) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    if pending.is_empty() {
        println!(
            "nothing to restore: {} has no pending server settings",
            run_dir.display()
        );
        return EXIT_OK;
    }
    let suite_file = run_dir.join("suite.toml");
    if !suite_file.exists() {
        eprintln!(
            "error: {} is missing: restore needs the run's suite to find the server",
            suite_file.display()
        );
        return EXIT_BAD_INPUT;
    }
    let (_, plan) = match load_plan(&suite_file, &Overrides { set: Vec::new() }) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let Some(target) = plan.steps.iter().find_map(|s| s.target.clone()) else {
        eprintln!(
            "error: {} has no [target]: there is no server to restore",
            suite_file.display()
        );
        return EXIT_BAD_INPUT;
    };
    let mut code = EXIT_OK;
    for (_, saved) in pending {
        match crate::runner::server::restore_and_forget(&target, &saved, run_dir) {
            Ok(()) => println!(
                "restored variant {}: {}",
                saved.variant,
                saved
                    .originals
                    .iter()
                    .map(|(n, v)| format!("{n} = {}", v.as_deref().unwrap_or("(default)")))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Err(e) => {
                eprintln!("error: variant {}: {e}", saved.variant);
                code = EXIT_FAILED;
            }
        }
    }
    code
}

fn print(text: &str) -> u8 {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => EXIT_OK,
        // A closed pipe (`sbsuite plan x | head`) is not an error worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => EXIT_OK,
        Err(e) => {
            eprintln!("error: cannot write to stdout: {e}");
            EXIT_FAILED
        }
    }
}

fn workloads(name: Option<&str>) -> u8 {
    let mut text = String::new();
    let list: Vec<&WorkloadSpec> = match name {
        Some(n) => match registry::workload(n) {
            Some(w) => vec![w],
            None => {
                let names: Vec<&str> = registry::WORKLOADS.iter().map(|w| w.name).collect();
                eprintln!(
                    "error: unknown workload `{n}`; known workloads: {}",
                    names.join(", ")
                );
                return EXIT_BAD_INPUT;
            }
        },
        None => registry::WORKLOADS.to_vec(),
    };
    for w in list {
        let runnable = if registry::engine_for(w.name).is_some() {
            ""
        } else {
            "  [plan/validate only in this build]"
        };
        text.push_str(&format!("{} - {}{runnable}\n", w.name, w.summary));
        if name.is_some() {
            for o in w.all_options() {
                let default = o.default.map(|d| format!(" [{d}]")).unwrap_or_default();
                text.push_str(&format!("  {:<22} {}{default}\n", o.name, o.help));
            }
        }
    }
    if name.is_none() {
        text.push_str("\nGeneral options (every workload):\n");
        for o in GENERAL {
            let default = o.default.map(|d| format!(" [{d}]")).unwrap_or_default();
            text.push_str(&format!("  {:<22} {}{default}\n", o.name, o.help));
        }
        text.push_str("\n`sbsuite workloads NAME` lists a workload's own options.\n");
    }
    print(&text)
}
