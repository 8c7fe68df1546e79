//! Command-line definitions. Only this file knows clap; the help text is the manual.

use std::path::PathBuf;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

/// sbsuite: benchmark suites for databases and systems.
///
/// Write one TOML suite file with a matrix (threads, table sizes, workloads, server variants);
/// sbsuite expands it into prepare/run/cleanup steps, runs them with sysbench-compatible
/// engines, and stores every result as CSV.
#[derive(Debug, Parser)]
#[command(name = "sbsuite", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a suite: every step of its plan, results under <results_dir>/<suite>/<run-id>/. A
    /// suite with a `[capacity]` section runs the search of `sbsuite capacity` instead, into
    /// that run directory.
    Run(RunArgs),
    /// Print the numbered steps of a suite with resolved options and an estimate; runs nothing.
    ///
    /// Runs every check of `validate` that needs no server: syntax, keys, types, the matrix,
    /// templates, the environment variables the password template reads, and variants
    /// against the target. What needs the server is listed at the end of the text output:
    /// that it is reachable and the login works (checked by `run`), and that each variant's
    /// set_global variables exist and are settable (`validate` and `run`).
    Plan(PlanArgs),
    /// Check suite files (syntax, keys, types, matrix, templates) without running anything.
    Validate(ValidateArgs),
    /// List the workloads and their options with sysbench's defaults.
    Workloads(WorkloadsArgs),
    /// Print a JSON schema: of suite files (default; the committed copy is
    /// schemas/suite.schema.json) or, with `events`, of the lines of `run --events jsonl`
    /// (schemas/events.schema.json).
    Schema(SchemaArgs),
    /// Run a sysbench command line as-is: `sbsuite sysbench --test=cpu --num-threads=2 run`.
    ///
    /// Accepts sysbench 1.0 syntax and the 0.4/0.5 forms (`--test=`, `--num-threads`,
    /// `--max-time`, `--max-requests`, `--oltp-*`, script paths such as `oltp_read_write.lua`)
    /// with sysbench's deprecation warnings; prints sysbench's report on stdout.
    /// `sbsuite sysbench cpu help` lists a test's options.
    Sysbench(SysbenchArgs),
    /// Turn sysbench command lines into a suite file (TOML on stdout).
    ///
    /// `sbsuite convert -- sysbench oltp_read_only --threads=32 run` converts one line; with
    /// `-` or no arguments, one command line per stdin line: lines that differ in a few options
    /// become one suite with those options as [matrix] axes. Shell `for t in 8 16; do …; done`
    /// loops are expanded first. OceanBase's `obd test sysbench DEPLOY …` lines convert too,
    /// into the runs obd makes and a [target] to complete with the deployment's address.
    Convert(ConvertArgs),
    /// Put the server settings of a run's variants back (after a crash or kill -9).
    ///
    /// A variant's `set_global` originals (and the restore statements of its `sql` settings)
    /// are saved in RUN_DIR/server/restore-<variant>.json
    /// before the first change and removed once restored; this applies and removes any that a
    /// stopped run left behind, connecting with the run's saved suite ([target]).
    Restore(RestoreArgs),
    /// Compare two runs, or the variants inside one run, with a verdict per metric.
    ///
    /// `sbsuite compare A B` matches the steps of two runs by their matrix keys;
    /// `sbsuite compare RUN --by variant` compares each variant (or any other key column) with
    /// the first. Per metric (tps, qps, p95, p99, avg latency, errors, a custom workload's
    /// headline such as tpmC; others with --metric, e.g. `new_order.p95`): medians, 95 %
    /// intervals (of the geometric mean: they stay positive), delta with the interval of the
    /// ratio, Welch's t-test verdict on the ln values, and where a difference is not
    /// significant the repetitions that would detect a 5 % and a 10 % change;
    /// `--fail-on "tps:-5%,p95:+10%"` exits 1 on a significant regression (for CI). Variants
    /// of a run made with `[suite] variant_order = "interleaved"` or `"randomized"` ran each
    /// repetition back to back: `--by variant` pairs them by repetition and uses a paired
    /// t-test on their log ratios (the method line says which test).
    Compare(CompareArgs),
    /// Find which of the settings two variants differ in causes their difference in a metric.
    ///
    /// `sbsuite bisect suite.toml` takes the suite's first two [[variant]]s (or --base and
    /// --other), lists the server settings they differ in (set_global, sql settings, restart
    /// settings, and those of their prepare/run tables), and runs probes: the suite with the
    /// baseline and the baseline plus a subset of the other's settings, repeated and compared
    /// with the test of `compare --by variant` (paired when the two run back to back). Delta
    /// debugging picks the subsets; the answer names the smallest subset that reproduces the
    /// difference, with its effect and interval, and measures the other settings together.
    /// Settings are applied and restored as by `sbsuite run`. Everything lands in
    /// <results_dir>/<suite>-bisect/<id>/: bisect.csv, bisect.txt and one run per probe.
    Bisect(BisectArgs),
    /// Find the highest arrival rate the server sustains with a latency percentile under a
    /// target: `sbsuite capacity suite.toml --target "p99<10ms"`.
    ///
    /// Each probe is a run of the suite's one matrix point at a fixed `rate` (open loop:
    /// latency counted from each arrival's scheduled time, so queueing shows), dropped
    /// arrivals recorded. A rate passes when the percentile is under the target, nothing was
    /// dropped and 95 % of the rate was achieved. The search runs closed loop once (the
    /// bound), halves until a rate passes, bisects until the bracket is within --precision,
    /// and confirms the rate found with --confirm repetitions. Everything lands in
    /// <results_dir>/<suite>-capacity/<id>/: capacity.csv (the latency-vs-offered-load curve),
    /// capacity.txt and one run per probe. A suite's `[capacity]` section gives the defaults
    /// of the options (and makes `sbsuite run` search into its run directory).
    Capacity(CapacityArgs),
    /// List the runs under the results directory (suite, run id, start, rows, status).
    Runs(RunsArgs),
    /// Draw runs as one self-contained HTML page: throughput and latency vs threads, each
    /// step's interim time series, the results table, the suite and the server variables; a
    /// run of several variants also gets each metric per variant with `compare --by variant`'s
    /// verdicts.
    ///
    /// `sbsuite report A B` overlays two runs. Nothing is fetched when the page is viewed
    /// (inline SVG, no scripts); `--svg DIR` also writes every chart as a standalone .svg file.
    /// Runs of custom workloads also get their per-transaction table (transactions.csv), which
    /// `--format text|markdown|json` prints to stdout instead of writing the page.
    Report(ReportArgs),
    /// Turn saved sysbench text output (1.1, 1.0, 0.5, 0.4.12) into a results directory.
    ///
    /// Each report in a file (a shell loop's log may hold many) becomes one run step of a new
    /// run under OUT/SUITE/<run-id>/, with the results.csv and intervals.csv columns of
    /// `sbsuite run`, so old logs can be drawn and compared with new runs.
    Import(ImportArgs),
    /// Print a shell completion script for sbsuite to stdout.
    ///
    /// bash: `sbsuite completions bash > ~/.local/share/bash-completion/completions/sbsuite`;
    /// zsh: `sbsuite completions zsh > ~/.zfunc/_sbsuite` with `fpath=(~/.zfunc $fpath)` before
    /// `compinit` in ~/.zshrc; fish: `sbsuite completions fish >
    /// ~/.config/fish/completions/sbsuite.fish`. Generated from this command line's own
    /// definition, so it always matches the installed binary.
    Completions(CompletionsArgs),
    /// Print the man page sbsuite(1) to stdout, or write one page per subcommand with --dir.
    ///
    /// `sbsuite man --dir ~/.local/share/man/man1` writes sbsuite.1, sbsuite-run.1, … there
    /// (then `man sbsuite-run` works); `sbsuite man | man -l -` reads it without installing.
    Man(ManArgs),
    /// Serve one client of a multi-client run over stdin/stdout (started by `run` through the
    /// `[clients]` transports; not for interactive use).
    #[command(hide = true)]
    Agent,
}

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write sbsuite.1 and one page per subcommand (sbsuite-run.1, …) into this directory
    /// (created if missing) instead of printing sbsuite.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The completion script for `shell`, generated from the [`Cli`] definition.
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "sbsuite", &mut out);
    out
}

/// The man page sbsuite(1) in roff, generated from the [`Cli`] definition.
pub fn man_page() -> Vec<u8> {
    man_pages().swap_remove(0).1
}

/// Writes sbsuite.1 and one page per subcommand (sbsuite-run.1, …) into `dir` (created if
/// missing) and returns the files written, sbsuite.1 first.
pub fn write_man_pages(dir: &std::path::Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut files = Vec::new();
    for (name, page) in man_pages() {
        let path = dir.join(name);
        std::fs::write(&path, page)?;
        files.push(path);
    }
    Ok(files)
}

/// `(file name, roff)` of sbsuite.1 and of every visible subcommand's page, as
/// `clap_mangen::generate_to` names them. Rendered here rather than by `generate_to` because the
/// help text has non-ASCII characters (…, ×, –) that troff reads as invalid input unless
/// preconv runs first: they are written as groff's `\[uXXXX]` escapes, which man-db, groff and
/// mandoc all render.
fn man_pages() -> Vec<(String, Vec<u8>)> {
    fn collect(cmd: &clap::Command, pages: &mut Vec<(String, Vec<u8>)>) {
        let man = clap_mangen::Man::new(cmd.clone());
        let mut roff = Vec::new();
        man.render(&mut roff)
            .expect("rendering into a Vec cannot fail");
        pages.push((man.get_filename(), roff_ascii(&roff)));
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            collect(sub, pages);
        }
    }
    // No `help` subcommand: its page would be a list of the others.
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut pages = Vec::new();
    collect(&cmd, &mut pages);
    pages
}

/// `roff` with every non-ASCII character written as a groff `\[uXXXX]` escape.
fn roff_ascii(roff: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(roff);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            out.push_str(&format!("\\[u{:04X}]", c as u32));
        }
    }
    out.into_bytes()
}

#[derive(Debug, clap::Args)]
pub struct SchemaArgs {
    /// Which schema.
    #[arg(value_enum, default_value_t = SchemaKind::Suite)]
    pub kind: SchemaKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemaKind {
    /// Suite files.
    Suite,
    /// The event lines of `sbsuite run --events jsonl`.
    Events,
}

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// Run directories (results/<suite>/<run-id>) or results.csv files: two, or one with --by.
    #[arg(required = true, num_args = 1..=2, value_name = "RUN")]
    pub runs: Vec<PathBuf>,
    /// Compare the groups of this column inside one run, the first value as the baseline
    /// (`variant`, or any matrix column).
    #[arg(long, value_name = "COLUMN")]
    pub by: Option<String>,
    /// Regression gates: `METRIC:-N%` fails on a significant drop of N % or more,
    /// `METRIC:+N%` on a rise (metrics: those of --metric). A gate that cannot be evaluated
    /// (a cell that is not a number, no values on both sides) exits 2.
    #[arg(long, value_name = "GATES")]
    pub fail_on: Option<String>,
    /// The metrics to compare instead of the defaults (tps, qps, p95, p99, avg, errors, a
    /// custom workload's headline, and the cost per transaction when the runs recorded it:
    /// server_fsyncs_per_txn, server_log_bytes_per_txn, server_cpu_ms_per_txn,
    /// client_cpu_us_per_txn): any of those, `headline` or the headline's own name
    /// (`tpmC`), or `TXN.METRIC` for a transaction (or statement) of a custom workload, METRIC
    /// one of count, rate, errors, rollbacks, avg, p50, p95, p99, max (`new_order.p95`).
    /// Comma-separated or repeated.
    #[arg(long, value_name = "METRIC", value_delimiter = ',')]
    pub metric: Vec<String>,
    #[arg(long, value_enum, default_value_t = CompareFormat::Table)]
    pub format: CompareFormat,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum CompareFormat {
    Table,
    Markdown,
    Csv,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct RunsArgs {
    /// The results directory (default `results`).
    #[arg(long, value_name = "DIR", default_value = "results")]
    pub results_dir: PathBuf,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// A run directory (results/<suite>/<run-id>) or its results.csv; a second one is overlaid.
    #[arg(required = true, num_args = 1..=2, value_name = "RUN")]
    pub runs: Vec<PathBuf>,
    /// The HTML file to write [default: RUN/report.html].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Also write each chart as a standalone SVG file into this directory.
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
    /// `html` writes the page; `text`, `markdown` and `json` print the per-transaction table
    /// of a custom workload's run (its transactions.csv) to stdout instead.
    #[arg(long, value_enum, default_value_t = ReportFormat::Html)]
    pub format: ReportFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Html,
    Text,
    Markdown,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// Files holding sysbench output (`sysbench … run > FILE`, or a whole shell-loop log).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Results root; the run goes to DIR/SUITE/<run-id>/.
    #[arg(long, value_name = "DIR", default_value = "results")]
    pub out: PathBuf,
    /// Suite name of the imported run.
    #[arg(long, value_name = "NAME", default_value = "imported")]
    pub suite: String,
    /// Workload of reports whose log does not name it (no command line before the report and no
    /// test banner: 1.0 OLTP, threads, mutex) [default: unknown].
    #[arg(long, value_name = "NAME")]
    pub workload: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct RestoreArgs {
    /// The run directory (results/<suite>/<run-id>).
    pub run_dir: PathBuf,
}

/// Everything after `sysbench`, passed through untouched and parsed the way sysbench does.
#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true, disable_version_flag = true)]
pub struct SysbenchArgs {
    /// `[--test=NAME | NAME | path/NAME.lua] [options] prepare|run|cleanup|prewarm|help`.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "SYSBENCH ARGS"
    )]
    pub args: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct ConvertArgs {
    /// One sysbench command line (after `--`), or `-` / nothing to read lines from stdin.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "SYSBENCH ARGS"
    )]
    pub args: Vec<String>,
}

/// Overrides shared by every command that reads a suite.
#[derive(Debug, clap::Args)]
pub struct Overrides {
    /// Override a suite key: `time=30` (a bare option name means `defaults.<name>`),
    /// `matrix.threads=[1,2,4]`, `suite.repeat=3`. Values use TOML syntax; plain words are
    /// strings. Repeatable; wins over the file and over SBSUITE_* environment variables
    /// (`SBSUITE_DEFAULTS__TIME=30`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Run the run steps on these clients instead of the suite's `[clients] list`:
    /// comma-separated `local`, `local:N`, `ssh:DEST`, `kubernetes:NS/SELECTOR`.
    #[arg(long, value_name = "LIST")]
    pub clients: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct CapacityArgs {
    /// The suite file (TOML): one matrix point, at most one variant.
    pub file: PathBuf,
    #[command(flatten)]
    pub overrides: Overrides,
    /// The latency bound: `p99<10ms` (p95, p99, avg or max; milliseconds). Required unless
    /// the suite has a `[capacity]` section with a `target`; this wins over it, as the other
    /// options win over the section's keys.
    #[arg(long, value_name = "PCT<MS")]
    pub target: Option<String>,
    /// The lowest rate tried (per second) [default: 1, or `[capacity] min_rate`].
    #[arg(long, value_name = "RATE")]
    pub min_rate: Option<f64>,
    /// Stop when the highest passing and the lowest failing rate are within this % of each
    /// other [default: 5, or `[capacity] precision`].
    #[arg(long, value_name = "PCT")]
    pub precision: Option<f64>,
    /// Repetitions at the rate found [default: 3, or `[capacity] confirm`].
    #[arg(long, value_name = "N")]
    pub confirm: Option<u32>,
    /// Directory for results, instead of the suite's `results_dir`.
    #[arg(long, value_name = "DIR")]
    pub results_dir: Option<PathBuf>,
    /// Print no progress of the probes' runs on stderr (the probe lines and the answer are
    /// still printed).
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, clap::Args)]
pub struct BisectArgs {
    /// The suite file (TOML) with the two variants.
    pub file: PathBuf,
    #[command(flatten)]
    pub overrides: Overrides,
    /// The baseline variant (default: the suite's first [[variant]]).
    #[arg(long, value_name = "VARIANT")]
    pub base: Option<String>,
    /// The variant whose settings are bisected (default: the suite's second).
    #[arg(long, value_name = "VARIANT")]
    pub other: Option<String>,
    /// Bisect two captured configurations instead of the suite's variants: two runs'
    /// server/<variant>.csv (baseline first). Every variable whose values differ and that the
    /// target's server can set at runtime is bisected; the rest is listed with the reason.
    #[arg(long, num_args = 2, value_names = ["BASE_CSV", "OTHER_CSV"], conflicts_with_all = ["base", "other"])]
    pub captures: Option<Vec<PathBuf>>,
    /// The metric whose difference is bisected: any metric of `compare --metric` (tps, qps,
    /// p95, p99, avg, server_fsyncs_per_txn, …).
    #[arg(long, value_name = "METRIC", default_value = "tps")]
    pub metric: String,
    /// The share of the full difference, in %, a subset must reproduce (same direction,
    /// significant) to count as the cause.
    #[arg(long, value_name = "PCT", default_value_t = 50.0)]
    pub share: f64,
    /// Directory for results, instead of the suite's `results_dir`.
    #[arg(long, value_name = "DIR")]
    pub results_dir: Option<PathBuf>,
    /// Print no progress of the probes' runs on stderr (the probe lines and the answer are
    /// still printed).
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The suite file (TOML). Not with --resume, which uses the run's own suite.toml.
    #[arg(required_unless_present = "resume", conflicts_with = "resume")]
    pub file: Option<PathBuf>,
    /// Continue a run that stopped (Ctrl-C, crash, kill -9, reboot) in its run directory:
    /// finished steps are kept, the interrupted one runs again, datasets are prepared again
    /// only when their data is not in place; server settings left changed are restored first.
    #[arg(long, value_name = "RUN_DIR")]
    pub resume: Option<PathBuf>,
    #[command(flatten)]
    pub overrides: Overrides,
    /// Directory for results, instead of the suite's `results_dir`.
    #[arg(long, value_name = "DIR")]
    pub results_dir: Option<PathBuf>,
    /// Suite progress on stderr: a bar on a terminal, plain lines otherwise.
    #[arg(long, value_enum, default_value_t = ProgressArg::Auto)]
    pub progress: ProgressArg,
    /// Print no progress and no summary on stderr (reports still go to stdout, and a failed
    /// step still says why on stderr).
    #[arg(long, short)]
    pub quiet: bool,
    /// Serve the suite's live metrics as OpenMetrics text on http://ADDR/metrics while it runs
    /// (for Prometheus): `HOST:PORT`, or `:PORT` for loopback (127.0.0.1). Overrides the
    /// suite's `[suite] metrics`. Without either, no port is opened.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// Keep serving /metrics for SECS seconds after the suite ends, so that a scraper sees
    /// the final values.
    #[arg(long, value_name = "SECS")]
    pub metrics_hold: Option<u64>,
    /// Machine-readable events, one JSON object per line (schema: `sbsuite schema events`):
    /// `jsonl` writes them to stdout (the steps' reports then go to stderr, so stdout stays
    /// pure JSON lines), `jsonl:PATH` to the file PATH (created or truncated).
    #[arg(long, value_name = "jsonl[:PATH]")]
    pub events: Option<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ProgressArg {
    Auto,
    Bar,
    Plain,
    Off,
}

#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    /// The suite file (TOML).
    pub file: PathBuf,
    #[command(flatten)]
    pub overrides: Overrides,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Suite files (TOML).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub overrides: Overrides,
}

#[derive(Debug, clap::Args)]
pub struct WorkloadsArgs {
    /// Show the options of this workload only.
    pub name: Option<String>,
    /// List the workloads this suite file declares (`[workloads.NAME]` and its `workloads`
    /// files); with NAME, describe one of them.
    #[arg(long, value_name = "FILE")]
    pub suite: Option<PathBuf>,
}
