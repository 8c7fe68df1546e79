//! Prepare (schema, parallel table load, `after_load`), cleanup and the check step of a custom
//! workload.
//!
//! Shape, and why:
//! * Rows per table come from [`table_rows`]: a table with a parent has the parent's rows ×
//!   `per_parent`. Tables load by levels (a table's level is its parent's + 1), each level after
//!   the one before, so that foreign keys declared in the schema hold while loading.
//! * Within a level, every table is cut into ranges of [`RANGE_ROWS`] rows, and `connections`
//!   loader threads (each with its own connection) take ranges from one queue: small tables load
//!   side by side, a big one on every connection at once. Each range draws from its own [`Rng`],
//!   seeded by the run's seed, the table and the range, never by the thread: a fixed seed gives
//!   the same data whatever the number of connections and whichever thread takes a range.
//! * The queue is a counter, not a list ([`Ranges`]): a loader takes the next number and works
//!   out its table and rows from the level's per-table range counts. What prepare holds does not
//!   grow with the rows, so `rows = "n * 100000000000000"` starts loading at once (and stops at
//!   the first Ctrl-C) instead of planning 10¹⁰ ranges up front (#26).
//! * A `sequence` in a load is the row's position (`start + row − 1`), not a shared counter,
//!   for the same reason: its values do not depend on the order ranges load in.
//! * Rows travel through [`Connection::load_rows`], each driver's fastest path (COPY on
//!   PostgreSQL, one transaction on SQLite, multi-row INSERTs on MySQL).
//! * The check step runs every `[[checks]]` query and reports every failure at once, each with
//!   its name, SQL, the expected and the found value.

use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use super::generator::{Context, GenId, Gens, Local};
use super::model::{Check, CheckExpect, Def, Frame, GenSpec, Slot, Sql, Val};
use crate::db::{Cell, Connection, Connector, ErrKind, Fetched, Target, owned};
use crate::engine::EngineError;
use crate::engine::random::{RandOptions, Rng};
use crate::engine::session::connect;

/// Rows per range of a table: the unit a loader thread takes, and of the per-range seeding.
pub const RANGE_ROWS: u64 = 20_000;

/// Loader connections when the definition does not say (`prepare_threads = 0`).
const DEFAULT_CONNECTIONS: usize = 4;

/// What prepare, cleanup and check need: the definition, the database, the option values (in
/// their slots of a frame), the run's `rand_*` options and seed (0: from the clock).
pub struct LoadCtx<'a> {
    pub def: &'static Def,
    pub target: &'a Target,
    pub options: &'a Frame,
    pub rand: &'a RandOptions,
    pub seed: u64,
}

/// Rows of every load entry, in [`Def::load`] order: `rows` evaluated over the options, times
/// the parent's rows for a table with a parent. The error names the table and the expression.
pub fn table_rows(def: &Def, options: &Frame) -> Result<Vec<u64>, String> {
    table_rows_at(def, options).map_err(|(_, m)| m)
}

/// [`table_rows`], the error with the index of the entry it is about (for the plan, which
/// points at that entry's `rows` or `per_parent`).
pub fn table_rows_at(def: &Def, options: &Frame) -> Result<Vec<u64>, (usize, String)> {
    let mut rows: Vec<Option<u64>> = vec![None; def.load.len()];
    // Each pass settles at least one table when the parents form no cycle.
    for _ in 0..=def.load.len() {
        let mut progress = false;
        for i in 0..def.load.len() {
            if rows[i].is_none() {
                rows[i] = entry_rows(def, options, i, &rows).map_err(|m| (i, m))?;
                progress |= rows[i].is_some();
            }
        }
        if !progress {
            break;
        }
    }
    rows.iter()
        .enumerate()
        .map(|(i, r)| {
            r.ok_or_else(|| {
                (
                    i,
                    format!(
                        "load table `{}`: its parents form a cycle",
                        def.load[i].table
                    ),
                )
            })
        })
        .collect()
}

/// Rows of entry `i` once its parent's are known (`None` before).
fn entry_rows(
    def: &Def,
    options: &Frame,
    i: usize,
    rows: &[Option<u64>],
) -> Result<Option<u64>, String> {
    let t = &def.load[i];
    let parent = match t.parent {
        None => 1,
        Some(p) if p >= def.load.len() => {
            return Err(format!(
                "load table `{}`: its parent is entry {p}, which does not exist",
                t.table
            ));
        }
        Some(p) => match rows[p] {
            Some(r) => r,
            None => return Ok(None),
        },
    };
    let n = t
        .rows
        .eval_i64(options)
        .map_err(|e| format!("load table `{}`: rows: {e}", t.table))?;
    let n = u64::try_from(n).map_err(|_| {
        format!(
            "load table `{}`: rows `{}` is {n}, not a count",
            t.table,
            t.rows.text()
        )
    })?;
    // `row` is a 64-bit signed integer.
    parent
        .checked_mul(n)
        .filter(|&r| i64::try_from(r).is_ok())
        .map(Some)
        .ok_or_else(|| {
            if t.parent.is_some() {
                format!(
                    "load table `{}`: {parent} parent rows × {n} per parent row is more than {} rows",
                    t.table,
                    i64::MAX
                )
            } else {
                format!("load table `{}`: {n} rows is more than {}", t.table, i64::MAX)
            }
        })
}

/// A table's level: 0 without a parent, else its parent's + 1.
fn level_of(def: &Def, i: usize) -> usize {
    let mut level = 0;
    let mut at = i;
    while let Some(p) = def.load[at].parent {
        level += 1;
        at = p;
        if level > def.load.len() {
            break;
        }
    }
    level
}

/// How a load column or `let` gets its value.
#[derive(Clone, Copy)]
enum Draw {
    /// A `sequence`: `start + row − 1` (row 1-based within the table).
    Seq(i64),
    Gen(GenId),
}

/// A load entry compiled for this prepare.
struct Table {
    name: String,
    columns: Vec<String>,
    lets: Vec<(Slot, Draw)>,
    cells: Vec<Draw>,
    rows: u64,
    /// Rows per parent row (the table's own `rows`), 0 without a parent.
    per_parent: u64,
}

/// The `row`, `child` and `parent_row` slots.
#[derive(Clone, Copy)]
struct LoadSlots {
    row: Option<Slot>,
    child: Option<Slot>,
    parent_row: Option<Slot>,
}

/// One range of one table: rows `start..end` (0-based), drawn with generator `stream`.
#[derive(Debug, PartialEq)]
struct Unit {
    table: usize,
    start: u64,
    end: u64,
    stream: usize,
}

/// The ranges of one level, numbered 0.. table after table, each made when a loader takes its
/// number: the level holds one entry per table, whatever its rows.
struct Ranges {
    /// (table, its rows, the number of its first range), in load order.
    tables: Vec<(usize, u64, u64)>,
    /// Ranges of the level.
    count: u64,
}

impl Ranges {
    /// The ranges of `tables`, of `rows[t]` rows each.
    fn new(tables: &[usize], rows: impl Fn(usize) -> u64) -> Ranges {
        let mut count = 0u64;
        let tables = tables
            .iter()
            .map(|&t| {
                let first = count;
                count += rows(t).div_ceil(RANGE_ROWS);
                (t, rows(t), first)
            })
            .collect();
        Ranges { tables, count }
    }

    /// Range number `i` of the level, `None` past the last.
    fn get(&self, i: u64) -> Option<Unit> {
        if i >= self.count {
            return None;
        }
        // The last table whose first range is at or before `i` (tables without rows have no
        // range, and share their first number with the next table).
        let at = self.tables.partition_point(|&(_, _, first)| first <= i) - 1;
        let (table, rows, first) = self.tables[at];
        let k = i - first;
        let start = k * RANGE_ROWS;
        Some(Unit {
            table,
            start,
            end: start.saturating_add(RANGE_ROWS).min(rows),
            stream: stream(table, k),
        })
    }
}

/// The generator stream of range `k` of table `t`: distinct from every worker's stream (small
/// numbers) and from every other range's. Below 2²⁴ ranges (3.3·10¹¹ rows) a table's streams are
/// the ones loads always had, so a fixed seed keeps giving the same data.
fn stream(t: usize, k: u64) -> usize {
    let k = k as usize;
    (1 << 40) | (t << 24) | (k & 0xFF_FFFF) | ((k >> 24) << 48)
}

fn connector(t: &Target) -> Connector {
    Connector::new(t.clone())
}

/// The text of `sql` for the target's driver; `what` names it in the error.
fn text_for<'s>(sql: &'s Sql, ctx: &LoadCtx<'_>, what: &str) -> Result<&'s str, EngineError> {
    let driver = ctx.target.driver;
    sql.for_driver(driver).ok_or_else(|| {
        EngineError::Failed(format!(
            "workload `{}`: {what} has no SQL for {driver:?}",
            ctx.def.name
        ))
    })
}

/// Check `c`'s SQL (`sql`, the driver's text) with its `:option` placeholders (#31) written
/// in as literals of the run's option values, into `out`; `sql` when it has none.
fn with_options<'s>(c: &Check, ctx: &LoadCtx<'_>, sql: &'s str, out: &'s mut String) -> &'s str {
    let driver = ctx.target.driver;
    match c.bound.as_ref().and_then(|b| b.for_driver(driver)) {
        Some(b) if !b.binds.is_empty() => {
            let params: Vec<crate::db::P<'_>> = b
                .binds
                .iter()
                .map(|&s| {
                    ctx.options
                        .vals
                        .get(s)
                        .map_or(crate::db::P::Null, Val::param)
                })
                .collect();
            crate::db::sql_text::substitute(&b.text, &params, driver.dialect().syntax(), out);
            out.trim()
        }
        _ => sql,
    }
}

/// Runs the statements of `list` (`what` = "schema", "after_load", "cleanup"), skipping the
/// ones that are empty for this driver; `each` prints a line for a statement when it has one.
fn run_list(
    conn: &mut dyn Connection,
    ctx: &LoadCtx<'_>,
    list: &[Sql],
    what: &str,
    out: &mut dyn Write,
    stop: &AtomicBool,
) -> Result<(), EngineError> {
    for (i, sql) in list.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            return Err(EngineError::Failed(format!("{what} interrupted")));
        }
        let text = text_for(sql, ctx, &format!("{what} statement {}", i + 1))?.trim();
        if text.is_empty() {
            continue;
        }
        if let Some(line) = describe(text) {
            writeln!(out, "{line}").map_err(EngineError::report)?;
        }
        // In a suite, CREATE TABLE is recorded and DROP TABLE drops only the run's tables.
        let t = ctx.target;
        let done = match &t.ledger {
            Some(ledger) => owned::query(ledger.as_ref(), t, conn, text),
            None => conn.query(text),
        };
        done.map_err(|e| {
            let hint = if e.kind == ErrKind::TableExists {
                ": run cleanup first (or prepare into another database)"
            } else {
                ""
            };
            EngineError::Failed(format!(
                "workload `{}`: {what} statement {} failed: `{text}`: {e}{hint}",
                ctx.def.name,
                i + 1
            ))
        })?;
    }
    Ok(())
}

/// sysbench's progress line for a DDL statement (`Creating table 'x'...`), if it is one.
fn describe(sql: &str) -> Option<String> {
    let words: Vec<&str> = sql.split_whitespace().take(8).collect();
    let upper: Vec<String> = words.iter().map(|w| w.to_ascii_uppercase()).collect();
    let at = |i: usize| upper.get(i).map(String::as_str);
    let name_after = |i: usize| {
        let mut i = i;
        if at(i) == Some("IF") {
            i += if at(i + 1) == Some("NOT") { 3 } else { 2 };
        }
        words.get(i).map(|w| {
            w.split('(')
                .next()
                .unwrap_or(w)
                .trim_matches(['`', '"'])
                .to_string()
        })
    };
    match (at(0), at(1)) {
        (Some("CREATE"), Some("TABLE")) => {
            name_after(2).map(|n| format!("Creating table '{n}'..."))
        }
        (Some("CREATE"), Some("INDEX" | "UNIQUE")) => {
            let on = upper.iter().position(|w| w == "ON")?;
            name_after(on + 1).map(|n| format!("Creating an index on '{n}'..."))
        }
        (Some("DROP"), Some("TABLE")) => name_after(2).map(|n| format!("Dropping table '{n}'...")),
        _ => None,
    }
}

/// The loader's compiled tables and generators.
struct Plan {
    tables: Vec<Table>,
    gens: Gens,
    slots: LoadSlots,
    frame: Frame,
}

fn compile(ctx: &LoadCtx<'_>) -> Result<Plan, EngineError> {
    let def = ctx.def;
    let fail = |m: String| EngineError::Failed(format!("workload `{}`: {m}", def.name));
    let rows = table_rows(def, ctx.options).map_err(fail)?;
    let lookup = |name: &str| {
        def.load
            .iter()
            .position(|t| t.table == name)
            .map(|i| rows[i])
    };
    let gctx = Context::load(ctx.rand, ctx.seed, &lookup);
    let mut gens = Gens::default();
    let mut draw = |spec: &GenSpec, what: &str| -> Result<Draw, EngineError> {
        match spec {
            GenSpec::Sequence { start, .. } => Ok(Draw::Seq(*start)),
            spec => gens
                .add(spec, &gctx)
                .map(Draw::Gen)
                .map_err(|e| fail(format!("{what}: {e}"))),
        }
    };
    let mut tables = Vec::with_capacity(def.load.len());
    for (i, t) in def.load.iter().enumerate() {
        let mut lets = Vec::with_capacity(t.lets.len());
        for (slot, spec) in &t.lets {
            let name = def.vars.names.get(*slot).map_or("?", String::as_str);
            lets.push((
                *slot,
                draw(spec, &format!("load table `{}` let `{name}`", t.table))?,
            ));
        }
        let mut cells = Vec::with_capacity(t.columns.len());
        for (name, spec) in &t.columns {
            cells.push(draw(
                spec,
                &format!("load table `{}` column `{name}`", t.table),
            )?);
        }
        let per_parent = match t.parent {
            Some(_) => t
                .rows
                .eval_i64(ctx.options)
                .ok()
                .and_then(|n| u64::try_from(n).ok())
                .unwrap_or(0),
            None => 0,
        };
        tables.push(Table {
            name: t.table.clone(),
            columns: t.columns.iter().map(|(n, _)| n.clone()).collect(),
            lets,
            cells,
            rows: rows[i],
            per_parent,
        });
    }
    let mut frame = ctx.options.clone();
    frame
        .vals
        .resize(def.vars.len().max(frame.vals.len()), Val::Null);
    Ok(Plan {
        tables,
        gens,
        slots: LoadSlots {
            row: def.vars.slot("row"),
            child: def.vars.slot("child"),
            parent_row: def.vars.slot("parent_row"),
        },
        frame,
    })
}

fn cell_of(v: Val) -> Cell {
    match v {
        Val::Null => Cell::Null,
        Val::Int(i) => Cell::Int(i),
        Val::Float(f) => Cell::Float(f),
        Val::Str(s) => Cell::Text(s),
    }
}

/// Loads one range through `conn`. Returns the rows loaded; stops early (without error) when
/// `stop` is set.
fn load_unit(
    plan: &Plan,
    unit: &Unit,
    seed: u64,
    conn: &mut dyn Connection,
    stop: &AtomicBool,
) -> Result<u64, String> {
    let t = &plan.tables[unit.table];
    let mut rng = Rng::for_thread(seed, unit.stream);
    let mut frame = plan.frame.clone();
    let mut local: Local = plan.gens.local(0);
    let mut failure: Option<String> = None;
    let mut r = unit.start;
    let slots = plan.slots;
    let mut fill = |cells: &mut [Cell]| -> bool {
        if r >= unit.end
            || failure.is_some()
            || (r.is_multiple_of(1024) && r > unit.start && stop.load(Ordering::Relaxed))
        {
            return false;
        }
        let row = r as i64 + 1;
        if let Some(s) = slots.row {
            frame.vals[s] = Val::Int(row);
        }
        if let (Some(parent), Some(child)) =
            (r.checked_div(t.per_parent), r.checked_rem(t.per_parent))
        {
            if let Some(s) = slots.parent_row {
                frame.vals[s] = Val::Int(parent as i64 + 1);
            }
            if let Some(s) = slots.child {
                frame.vals[s] = Val::Int(child as i64 + 1);
            }
        }
        let mut value = |d: Draw, frame: &Frame| match d {
            Draw::Seq(start) => start.checked_add(row - 1).map(Val::Int).ok_or_else(|| {
                format!("the sequence from {start} passes {} at row {row}", i64::MAX)
            }),
            Draw::Gen(id) => plan
                .gens
                .draw(id, &mut rng, frame, &mut local)
                .map_err(|e| e.to_string()),
        };
        for (slot, d) in &t.lets {
            match value(*d, &frame) {
                Ok(v) => frame.vals[*slot] = v,
                Err(e) => {
                    failure = Some(format!("row {row}: let: {e}"));
                    return false;
                }
            }
        }
        for ((cell, d), name) in cells.iter_mut().zip(&t.cells).zip(&t.columns) {
            match value(*d, &frame) {
                Ok(v) => *cell = cell_of(v),
                Err(e) => {
                    failure = Some(format!("row {row}: column `{name}`: {e}"));
                    return false;
                }
            }
        }
        r += 1;
        true
    };
    let loaded = conn
        .load_rows(&t.name, &t.columns, &mut fill)
        .map_err(|e| e.to_string())?;
    match failure {
        Some(f) => Err(f),
        None => Ok(loaded),
    }
}

/// Loader connections: `prepare_threads`, else up to [`DEFAULT_CONNECTIONS`] (never more than
/// the ranges of the busiest level); one on a single-writer database (SQLite).
fn connections(def: &Def, target: &Target, units: u64) -> usize {
    if target.driver.dialect().single_writer() && !target.dry_run {
        return 1;
    }
    let want = if def.prepare_threads > 0 {
        def.prepare_threads
    } else {
        DEFAULT_CONNECTIONS
    };
    usize::try_from(units).map_or(want, |u| want.min(u)).max(1)
}

/// The `prepare` step: schema, every load table (by levels, in parallel), `after_load`.
pub fn prepare(
    ctx: &LoadCtx<'_>,
    out: &mut dyn Write,
    stop: &AtomicBool,
) -> Result<(), EngineError> {
    let def = ctx.def;
    let plan = compile(ctx)?;
    let conns = connector(ctx.target);
    let mut main = connect(&conns, 0)?;
    refuse_existing(main.as_mut(), ctx)?;
    run_list(main.as_mut(), ctx, &def.schema, "schema", out, stop)?;

    let mut levels: Vec<Vec<usize>> = Vec::new();
    for i in 0..def.load.len() {
        let l = level_of(def, i);
        if levels.len() <= l {
            levels.resize(l + 1, Vec::new());
        }
        levels[l].push(i);
    }
    let started = Instant::now();
    let mut total = 0u64;
    let level_ranges: Vec<Ranges> = levels
        .iter()
        .map(|tables| Ranges::new(tables, |t| plan.tables[t].rows))
        .collect();
    let busiest = level_ranges.iter().map(|r| r.count).max().unwrap_or(0);
    let workers = connections(def, ctx.target, busiest);
    for (tables, units) in levels.iter().zip(&level_ranges) {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        for &t in tables {
            let tb = &plan.tables[t];
            writeln!(out, "Loading {} rows into '{}'...", tb.rows, tb.name)
                .map_err(EngineError::report)?;
        }
        total +=
            load_level(&plan, units, &conns, workers, ctx.seed, stop).map_err(|e| match e {
                EngineError::Failed(m) => {
                    EngineError::Failed(format!("workload `{}`: {m}", def.name))
                }
                other => other,
            })?;
    }
    if stop.load(Ordering::Relaxed) {
        return Err(EngineError::Failed(format!(
            "workload `{}`: prepare interrupted after {total} rows",
            def.name
        )));
    }
    let secs = started.elapsed().as_secs_f64();
    if !def.load.is_empty() {
        writeln!(
            out,
            "Loaded {total} rows into {} tables in {secs:.2}s ({:.0} rows/s)",
            def.load.len(),
            total as f64 / secs.max(1e-9)
        )
        .map_err(EngineError::report)?;
    }
    run_list(main.as_mut(), ctx, &def.after_load, "after_load", out, stop)?;
    main.close();
    Ok(())
}

/// A suite's prepare (its target has a ledger): no table the schema creates with a plain
/// `CREATE TABLE` may exist, or the prepare fails before its first statement, naming them
/// (`CREATE TABLE IF NOT EXISTS` asks for a table that may be there: it is used, and kept by
/// the cleanup) (#26).
fn refuse_existing(conn: &mut dyn Connection, ctx: &LoadCtx<'_>) -> Result<(), EngineError> {
    let t = ctx.target;
    if t.ledger.is_none() || t.dry_run {
        return Ok(());
    }
    let mut there = Vec::new();
    for (i, sql) in ctx.def.schema.iter().enumerate() {
        let text = text_for(sql, ctx, &format!("schema statement {}", i + 1))?;
        let Some(table) = owned::plain_create(text) else {
            continue;
        };
        if t.ledger
            .as_ref()
            .is_some_and(|l| l.owns(&owned::key(t, table)))
        {
            // The run's own, left by an earlier cleanup that failed.
            continue;
        }
        let found = owned::exists(conn, t, table).map_err(|source| EngineError::Sql {
            context: format!(
                "workload `{}`: checking whether table {table} exists failed",
                ctx.def.name
            ),
            source,
        })?;
        if found {
            there.push(format!("'{table}'"));
        }
    }
    if there.is_empty() {
        return Ok(());
    }
    Err(EngineError::Failed(format!(
        "workload `{}`: {}",
        ctx.def.name,
        owned::already_there(t, &there)
    )))
}

/// Loads `units` on `workers` threads, each with its own connection (connection numbers
/// 1.., the setup connection being 0), every thread taking the next unit of a shared queue.
/// The first error stops the others; every thread is joined.
fn load_level(
    plan: &Plan,
    units: &Ranges,
    conns: &Connector,
    workers: usize,
    seed: u64,
    stop: &AtomicBool,
) -> Result<u64, EngineError> {
    let next = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    let first_error: Mutex<Option<EngineError>> = Mutex::new(None);
    let loaded = AtomicU64::new(0);
    let threads = usize::try_from(units.count).map_or(workers, |n| workers.min(n));
    let fail = |e: EngineError| {
        failed.store(true, Ordering::Relaxed);
        let mut slot = first_error.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(e);
    };
    std::thread::scope(|scope| {
        for n in 0..threads {
            let (next, failed, loaded, fail) = (&next, &failed, &loaded, &fail);
            scope.spawn(move || {
                let mut conn = match connect(conns, n + 1) {
                    Ok(c) => c,
                    Err(e) => return fail(e),
                };
                loop {
                    if failed.load(Ordering::Relaxed) || stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(unit) = units.get(i) else { break };
                    match load_unit(plan, &unit, seed, conn.as_mut(), stop) {
                        Ok(n) => {
                            loaded.fetch_add(n, Ordering::Relaxed);
                        }
                        Err(e) => {
                            let t = &plan.tables[unit.table].name;
                            fail(EngineError::Failed(format!(
                                "loading rows {}..{} into '{t}' failed: {e}",
                                unit.start + 1,
                                unit.end
                            )));
                            break;
                        }
                    }
                }
                conn.close();
            });
        }
    });
    match first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(loaded.load(Ordering::Relaxed)),
    }
}

/// The `cleanup` step: the `cleanup` statements, then the dialect's own tidying (the empty
/// default SQLite file goes).
pub fn cleanup(ctx: &LoadCtx<'_>, out: &mut dyn Write) -> Result<(), EngineError> {
    let conns = connector(ctx.target);
    let mut conn = connect(&conns, 0)?;
    let never = AtomicBool::new(false);
    run_list(conn.as_mut(), ctx, &ctx.def.cleanup, "cleanup", out, &never)?;
    conn.close();
    let t = ctx.target;
    if let Some(line) = t.driver.dialect().after_cleanup(t)? {
        writeln!(out, "{line}").map_err(EngineError::report)?;
    }
    Ok(())
}

/// Whether a found value equals the expected one: as numbers when both parse, else as text.
fn same(expected: &Val, found: Option<&str>) -> bool {
    match (expected, found) {
        (Val::Null, None) => true,
        (Val::Null, Some(_)) | (_, None) => false,
        (e, Some(f)) => {
            let fnum = f.trim().parse::<f64>().ok();
            match (e.as_f64(), fnum) {
                (Some(a), Some(b)) => a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs()),
                _ => match e {
                    Val::Str(s) => s == f,
                    other => other.to_string() == f,
                },
            }
        }
    }
}

fn shown(v: &Val) -> String {
    match v {
        Val::Str(s) => format!("'{s}'"),
        other => other.to_string(),
    }
}

/// `[suite] dataset = "existing"`, before anything runs: every table the schema creates is
/// there, and every table the load fills has rows (#26). Row counts are not compared with the
/// options: a workload's transactions insert and delete, so a dataset that has served runs
/// no longer holds what its load made.
pub fn check_existing(ctx: &LoadCtx<'_>) -> Result<(), EngineError> {
    let t = ctx.target;
    if t.dry_run {
        return Ok(());
    }
    t.driver.dialect().check_exists(t)?;
    let def = ctx.def;
    let db = t.driver.dialect().database_label(t);
    let fix = format!(
        "prepare it first (a suite without dataset = \"existing\" whose cleanup is removed, \
         or the workload's schema and load run by hand), or remove [suite] dataset = \
         \"existing\" so that the suite prepares workload `{}` itself",
        def.name
    );
    let rows = table_rows(def, ctx.options)
        .map_err(|e| EngineError::Failed(format!("workload `{}`: {e}", def.name)))?;
    let mut conn = connect(&connector(t), 0)?;
    for (i, sql) in def.schema.iter().enumerate() {
        let text = text_for(sql, ctx, &format!("schema statement {}", i + 1))?;
        let Some(table) = owned::created_table(text) else {
            continue;
        };
        let found = owned::exists(conn.as_mut(), t, table).map_err(|source| EngineError::Sql {
            context: format!(
                "workload `{}`: checking whether table {table} exists failed",
                def.name
            ),
            source,
        })?;
        if !found {
            return Err(EngineError::Failed(format!(
                "[suite] dataset = \"existing\": workload `{}`: table {table} (schema statement \
                 {}) does not exist in {db}: {fix}",
                def.name,
                i + 1
            )));
        }
    }
    for (entry, n) in def.load.iter().zip(rows) {
        if n == 0 {
            continue;
        }
        let table = &entry.table;
        let count = conn
            .query_i64(&format!("SELECT COUNT(*) FROM {table}"))
            .map_err(|e| {
                EngineError::Failed(format!(
                    "[suite] dataset = \"existing\": workload `{}`: counting the rows of \
                     {table} in {db} failed: {e}: {fix}",
                    def.name
                ))
            })?
            .unwrap_or(0);
        if count == 0 {
            return Err(EngineError::Failed(format!(
                "[suite] dataset = \"existing\": workload `{}`: table {table} in {db} is empty \
                 (its load makes {n} rows): {fix}",
                def.name
            )));
        }
    }
    conn.close();
    Ok(())
}

/// The `check` step: every `[[checks]]` query, compared with its expectation. Prints
/// `check 'name': ok` (or `FAILED` with the values) per check; fails naming every check that
/// did not hold, with its SQL, the expected and the found value.
pub fn check(ctx: &LoadCtx<'_>, out: &mut dyn Write, stop: &AtomicBool) -> Result<(), EngineError> {
    let def = ctx.def;
    if ctx.target.dry_run {
        writeln!(out, "dry run: {} checks not run", def.checks.len())
            .map_err(EngineError::report)?;
        return Ok(());
    }
    let conns = connector(ctx.target);
    let mut conn = connect(&conns, 0)?;
    let mut fetched = Fetched::default();
    let mut failures = Vec::new();
    for c in &def.checks {
        if stop.load(Ordering::Relaxed) {
            conn.close();
            return Err(EngineError::Failed(format!(
                "workload `{}`: check interrupted",
                def.name
            )));
        }
        let sql = text_for(&c.sql, ctx, &format!("check '{}'", c.name))?.trim();
        let mut written = String::new();
        let sql = with_options(c, ctx, sql, &mut written);
        if sql.is_empty() {
            writeln!(out, "check '{}': skipped (no SQL for this driver)", c.name)
                .map_err(EngineError::report)?;
            continue;
        }
        let verdict = match conn.query_fetch(sql, true, &mut fetched) {
            Err(e) => Some(format!("the query failed: {e}")),
            Ok(_) => match &c.expect {
                CheckExpect::Rows(n) if fetched.rows == *n => None,
                CheckExpect::Rows(n) => {
                    Some(format!("expected {n} rows, found {} rows", fetched.rows))
                }
                // Over the options only: the plan refused an `expect` that fails for them.
                CheckExpect::Value(e) => match e.eval(ctx.options) {
                    Err(m) => Some(format!("the expected value {m}")),
                    Ok(v) => {
                        let found = fetched.first.first().and_then(|f| f.as_deref());
                        if fetched.rows > 0 && same(&v, found) {
                            None
                        } else {
                            let found = if fetched.rows == 0 {
                                "no row".to_string()
                            } else {
                                found.map_or_else(|| "NULL".to_string(), |f| format!("'{f}'"))
                            };
                            Some(format!("expected {}, found {found}", shown(&v)))
                        }
                    }
                },
            },
        };
        match verdict {
            None => writeln!(out, "check '{}': ok", c.name).map_err(EngineError::report)?,
            Some(why) => {
                writeln!(out, "check '{}': FAILED ({why})", c.name).map_err(EngineError::report)?;
                failures.push(format!("check '{}' failed: `{sql}`: {why}", c.name));
            }
        }
    }
    conn.close();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(EngineError::Failed(format!(
            "workload `{}`: {} of {} checks failed: {}",
            def.name,
            failures.len(),
            def.checks.len(),
            failures.join("; ")
        )))
    }
}

#[cfg(test)]
mod tests;
