//! `tpch`: the TPC-H decision-support benchmark (TPC-H 2.18) as a built-in workload: data
//! generated in process and streamed into the database, the 22 queries with their
//! substitution parameters, the power and throughput tests with the refresh functions, and
//! the spec's Power@Size, Throughput@Size and QphH@Size.
//!
//! Shape, and why:
//! * A native engine rather than a TOML workload: its data comes from `tpchgen` (dbgen's
//!   generators in Rust, [`load`]), its queries are analytic statements whose parameters are
//!   drawn per stream and whose answers matter ([`params`], [`queries`]), and its result is a
//!   set of timed streams rather than a transaction mix ([`run`]).
//! * The data (prepare, cleanup, `dataset = "existing"`) follows the rules of every built-in
//!   workload: a prepare refuses tables that are already there, and a suite's cleanup drops
//!   only the tables its run created (the target's ledger, [`crate::db::owned`]).
//! * A run step is one TPC-H test: `tpch_test = "power"` (RF1, the 22 queries of stream 0,
//!   RF2), `"throughput"` (`threads` query streams and one refresh stream side by side) or
//!   `"full"` (the power test, then the throughput test: the spec's performance test, the one
//!   that yields QphH@Size). Each query and refresh function of a query stream is an event of
//!   the driver, so the sysbench-shaped report counts and times them; the TPC-H numbers come
//!   in a block after it and in results.csv's `tpch_*` columns, each query's time in
//!   transactions.csv (`power.Q1`, `throughput.Q1`, …).
//! * `time` is the step's timeout: when it expires, the query in flight is cancelled on the
//!   server (the run's stop scope) and the step ends as interrupted, with what finished.

pub mod load;
pub mod metrics;
pub mod params;
pub mod queries;
#[cfg(test)]
mod reference;
mod run;
pub mod schema;

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use self::schema::Sql;
use crate::db::{Connection, ErrKind, owned};
use crate::engine::driver::{Admin, Scope, Worker, Workload};
use crate::engine::option::{Kind, OptSpec};
use crate::engine::session::connections::ConnectOptions;
use crate::engine::session::{self, Sessions};
use crate::engine::spec::{DataSpec, Setup, WorkloadSpec, always};
use crate::engine::{EngineError, IntervalSample, SqlCounters, StepOutcome};

/// results.csv's TPC-H columns (listed in [`crate::engine::METRICS`]).
pub const POWER: &str = "tpch_power";
pub const THROUGHPUT: &str = "tpch_throughput";
pub const QPHH: &str = "tpch_qphh";
pub const GEOMEAN: &str = "tpch_geomean_s";

/// tpch's entry in [`crate::engine::catalog`]: its data is shaped by `scale` alone.
pub static SPEC: WorkloadSpec = WorkloadSpec {
    name: "tpch",
    summary: "TPC-H: generated data, the 22 queries, power and throughput tests, QphH@Size",
    options: &[OPTIONS],
    data: DataSpec {
        family: Some("tpch"),
        keys: &["scale"],
        fresh_per_run: false,
    },
    needs_target: true,
    needs_local_files: false,
    ends_by_itself: always,
    build,
    definition: crate::engine::Definition::Builtin,
};

static OPTIONS: &[OptSpec] = &[
    OptSpec {
        name: "scale",
        kind: Kind::Float {
            min: 0.001,
            max: 100_000.0,
        },
        default: Some("1"),
        help: "TPC-H scale factor (SF): 1 is about 1 GB of data (8.66 million rows), 0.01 about 87,000 rows; a new value is a new prepare",
    },
    OptSpec {
        name: "prepare_threads",
        kind: Kind::Int { min: 1, max: 1024 },
        default: Some("8"),
        help: "tpch: connections loading the data in parallel, each generating its own parts of the tables (SQLite loads on one)",
    },
    OptSpec {
        name: "tpch_test",
        kind: Kind::Enum(&["full", "power", "throughput"]),
        default: Some("full"),
        help: "tpch: which test a run step is: power (RF1, the 22 queries, RF2 on one stream), throughput (`threads` query streams and a refresh stream at once) or full (power, then throughput: QphH@Size)",
    },
    OptSpec {
        name: "tpch_params",
        kind: Kind::Enum(&["random", "validation"]),
        default: Some("random"),
        help: "tpch: substitution parameters drawn per stream from the run's seed (random), or the spec's validation parameters on every stream, without refresh functions (validation: the answers can be compared)",
    },
    OptSpec {
        name: "tpch_answers",
        kind: Kind::Str,
        default: Some(""),
        help: "tpch: a directory where the first query stream writes each query's result (q01.tsv … q22.tsv: a header line, then one tab-separated line per row, NULL as \\N); empty: not written",
    },
];

/// Which test a run step is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Test {
    Power,
    Throughput,
    Full,
}

impl Test {
    fn power(self) -> bool {
        self != Test::Throughput
    }

    fn throughput(self) -> bool {
        self != Test::Power
    }
}

fn build(s: &Setup<'_>) -> Result<Box<dyn Workload>, EngineError> {
    let o = &s.options;
    let test = match o.text("tpch_test")? {
        "power" => Test::Power,
        "throughput" => Test::Throughput,
        _ => Test::Full,
    };
    let streams = s.run.threads.max(1);
    if test == Test::Power && streams > 1 {
        return Err(EngineError::Failed(format!(
            "tpch: tpch_test = \"power\" runs one query stream, but threads = {streams}: set \
             threads = 1 (threads is the number of query streams of the throughput test)"
        )));
    }
    if s.run.shard.is_some() {
        return Err(EngineError::Failed(
            "tpch: a TPC-H test runs from one client: remove [clients] from its steps".into(),
        ));
    }
    let answers = o.text("tpch_answers")?;
    // 8 by default, whatever the CPUs: a load waits for the server's round trips and
    // commits more than it computes (BENCHMARKS.md: on 2 cores, MariaDB loads SF 1 2.3 times
    // as fast on 8 connections as on 2).
    let threads = o.uint("prepare_threads")?.max(1) as usize;
    Ok(Box::new(Tpch {
        sessions: Sessions::new(s, String::new(), ConnectOptions::default()),
        sql: Sql::of(s.target),
        sf: o.float("scale")?,
        test,
        validation: o.text("tpch_params")? == "validation",
        answers: (!answers.is_empty()).then(|| PathBuf::from(answers)),
        prepare_threads: threads,
        streams,
        seed: s.run.seed,
        timeout: s.run.time,
        state: run::State::default(),
    }))
}

/// The workload of one step.
pub struct Tpch {
    sessions: Sessions,
    sql: Sql,
    sf: f64,
    test: Test,
    /// The spec's validation parameters on every stream, and no refresh functions.
    validation: bool,
    answers: Option<PathBuf>,
    prepare_threads: usize,
    /// S: the query streams of the throughput test.
    streams: usize,
    seed: u64,
    timeout: Option<Duration>,
    state: run::State,
}

impl Tpch {
    fn connect(&self) -> Result<Box<dyn Connection>, EngineError> {
        session::connect(&self.sessions.connector, 0)
    }

    fn failed(&self, what: &str, e: &crate::db::SqlError) -> EngineError {
        EngineError::Failed(format!(
            "tpch: {what}: {}",
            self.sessions.connector.explain(e)
        ))
    }

    /// Loader connections: `prepare_threads`, one on a single-writer database.
    fn loaders(&self, jobs: usize) -> usize {
        let t = &self.sessions.connector.target;
        if t.driver.dialect().single_writer() && !t.dry_run {
            return 1;
        }
        self.prepare_threads.clamp(1, jobs.max(1))
    }

    /// A suite's prepare: none of the eight tables may be there unless the run created it.
    fn refuse_existing(&self, conn: &mut dyn Connection) -> Result<(), EngineError> {
        let t = &self.sessions.connector.target;
        if t.dry_run {
            return Ok(());
        }
        let mut there = Vec::new();
        for table in schema::TABLES {
            let mine = t
                .ledger
                .as_ref()
                .is_some_and(|l| l.owns(&owned::key(t, table.name)));
            if !mine
                && owned::exists(conn, t, table.name).map_err(|e| {
                    self.failed(
                        &format!("checking whether table '{}' exists", table.name),
                        &e,
                    )
                })?
            {
                there.push(format!("'{}'", table.name));
            }
        }
        if there.is_empty() {
            return Ok(());
        }
        Err(EngineError::Failed(format!(
            "tpch: {}",
            owned::already_there(t, &there)
        )))
    }

    fn prepare(&self, out: &mut dyn Write, stop: &AtomicBool) -> Result<(), EngineError> {
        let t = &self.sessions.connector.target;
        let mut conn = self.connect()?;
        self.refuse_existing(conn.as_mut())?;
        for table in schema::TABLES {
            writeln!(out, "Creating table '{}'...", table.name).map_err(EngineError::report)?;
            let sql = table.create(self.sql);
            match &t.ledger {
                Some(l) => owned::query(l.as_ref(), t, conn.as_mut(), &sql),
                None => conn.query(&sql),
            }
            .map_err(|e| self.failed(&format!("creating table '{}'", table.name), &e))?;
        }
        let jobs = load::jobs(self.sf);
        let loaders = self.loaders(jobs.len());
        writeln!(
            out,
            "Generating and loading TPC-H data at SF {} on {loaders} connection{}...",
            self.sf,
            if loaders == 1 { "" } else { "s" }
        )
        .map_err(EngineError::report)?;
        let started = Instant::now();
        let rows = self.load(&jobs, loaders, stop)?;
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        let secs = started.elapsed().as_secs_f64();
        writeln!(
            out,
            "Loaded {rows} rows in {secs:.2} s ({:.0} rows/s)",
            rows as f64 / secs.max(1e-9)
        )
        .map_err(EngineError::report)?;
        writeln!(out, "Creating indexes and statistics...").map_err(EngineError::report)?;
        for (name, table, cols) in schema::INDEXES {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            conn.query(&format!("CREATE INDEX {name} ON {table} ({cols})"))
                .map_err(|e| self.failed(&format!("creating index {name}"), &e))?;
        }
        for table in schema::TABLES {
            let sql = schema::analyze(table.name, self.sql);
            // MySQL's ANALYZE TABLE answers with a result set; read it whole.
            conn.query_table(&sql)
                .map_err(|e| self.failed(&format!("analysing table '{}'", table.name), &e))?;
        }
        conn.close();
        Ok(())
    }

    /// Loads every part of `jobs` on `loaders` connections (numbers 1.., the setup connection
    /// being 0); the first error stops the others. Returns the rows loaded.
    fn load(
        &self,
        jobs: &[load::Job],
        loaders: usize,
        stop: &AtomicBool,
    ) -> Result<u64, EngineError> {
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        let first: std::sync::Mutex<Option<EngineError>> = std::sync::Mutex::new(None);
        let rows = std::sync::atomic::AtomicU64::new(0);
        let float = self.sql.float_decimals();
        let fail = |e: EngineError| {
            failed.store(true, Ordering::Relaxed);
            first
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_or_insert(e);
        };
        std::thread::scope(|scope| {
            for n in 0..loaders {
                let (next, failed, rows, fail) = (&next, &failed, &rows, &fail);
                scope.spawn(move || {
                    let mut conn = match session::connect(&self.sessions.connector, n + 1) {
                        Ok(c) => c,
                        Err(e) => return fail(e),
                    };
                    while !failed.load(Ordering::Relaxed) && !stop.load(Ordering::Relaxed) {
                        let Some(&job) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) else {
                            break;
                        };
                        match load::load_job(conn.as_mut(), job, self.sf, float, stop) {
                            Ok(n) => {
                                rows.fetch_add(n, Ordering::Relaxed);
                            }
                            Err(e) => {
                                let t = schema::TABLES[job.table].name;
                                fail(self.failed(
                                    &format!(
                                        "loading part {} of {} of table '{t}'",
                                        job.part, job.parts
                                    ),
                                    &e,
                                ));
                                break;
                            }
                        }
                    }
                    conn.close();
                });
            }
        });
        match first.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(e) => Err(e),
            None => Ok(rows.load(Ordering::Relaxed)),
        }
    }

    /// Drops the eight tables: in a suite only those its run created (the others are kept
    /// and reported by the ledger's owner).
    fn cleanup(&self, out: &mut dyn Write) -> Result<(), EngineError> {
        let t = &self.sessions.connector.target;
        let mut conn = self.connect()?;
        for table in schema::TABLES.iter().rev() {
            let sql = format!("DROP TABLE IF EXISTS {}", table.name);
            let shown = t
                .ledger
                .as_ref()
                .is_none_or(|l| l.owns(&owned::key(t, table.name)));
            if shown {
                writeln!(out, "Dropping table '{}'...", table.name).map_err(EngineError::report)?;
            }
            match &t.ledger {
                Some(l) => owned::query(l.as_ref(), t, conn.as_mut(), &sql),
                None => conn.query(&sql),
            }
            .map_err(|e| self.failed(&format!("dropping table '{}'", table.name), &e))?;
        }
        conn.close();
        if let Some(line) = t.driver.dialect().after_cleanup(t)? {
            writeln!(out, "{line}").map_err(EngineError::report)?;
        }
        Ok(())
    }

    /// Every table is there (else "run prepare first"), and refresh rows an interrupted run
    /// left behind are deleted, so that this run's RF1 finds its keys free.
    fn check_tables(&self, fix: &str) -> Result<(), EngineError> {
        let t = &self.sessions.connector.target;
        if t.dry_run {
            return Ok(());
        }
        t.driver.dialect().check_exists(t)?;
        let db = t.driver.dialect().database_label(t);
        let mut conn = self.connect()?;
        for table in schema::TABLES {
            match conn.query_i64(&format!("SELECT 1 FROM {} LIMIT 1", table.name)) {
                Err(e) if e.kind == ErrKind::NoTable => {
                    return Err(EngineError::NoTable {
                        table: table.name.into(),
                        message: format!(
                            "tpch: table '{}' does not exist in {db}: {fix}",
                            table.name
                        ),
                    });
                }
                Err(e) => return Err(self.failed(&format!("reading table '{}'", table.name), &e)),
                Ok(Some(n)) if n > 0 => {}
                Ok(_) => {
                    return Err(EngineError::Failed(format!(
                        "tpch: table '{}' in {db} is empty: {fix}",
                        table.name
                    )));
                }
            }
        }
        conn.close();
        Ok(())
    }
}

impl Workload for Tpch {
    fn before_run(&self) -> Result<(), EngineError> {
        self.check_tables("run prepare first with the same scale")?;
        if !self.sessions.connector.target.dry_run {
            let mut conn = self.connect()?;
            run::clear_refresh_leftovers(self, conn.as_mut())?;
            conn.close();
        }
        Ok(())
    }

    fn banner(&self, out: &mut dyn Write) -> io::Result<()> {
        run::banner(self, out)
    }

    fn new_worker<'a>(
        &'a self,
        id: usize,
        stop: &'a Scope,
    ) -> Result<Box<dyn Worker + 'a>, EngineError> {
        Ok(Box::new(run::StreamWorker::new(self, id, stop)?))
    }

    fn interim(&self, s: &mut IntervalSample) -> Option<String> {
        self.sessions.counters.interim(s);
        None
    }

    fn sql_totals(&self) -> Option<SqlCounters> {
        Some(self.sessions.counters.totals())
    }

    fn finish_outcome(&self, outcome: &mut StepOutcome) {
        self.sessions.counters.finish(outcome);
        run::finish_outcome(self, outcome);
    }

    fn reset_counters(&self) {
        self.sessions.counters.reset();
    }

    fn report_after(&self, outcome: &StepOutcome, out: &mut dyn Write) -> io::Result<()> {
        run::report(self, outcome, out)
    }

    fn admin(&self) -> &dyn Admin {
        self
    }
}

impl Admin for Tpch {
    fn prepare(
        &self,
        cleanup: bool,
        out: &mut dyn Write,
        stop: &AtomicBool,
    ) -> Result<(), EngineError> {
        if cleanup {
            self.cleanup(out)
        } else {
            self.prepare(out, stop)
        }
    }

    fn check_existing(&self) -> Result<(), EngineError> {
        self.check_tables(&format!(
            "[suite] dataset = \"existing\" needs the TPC-H tables: prepare them first (e.g. \
             `sbsuite sysbench tpch --scale={} prepare`), or remove dataset = \"existing\" so \
             that the suite prepares its own",
            self.sf
        ))
    }
}
