//! `prepare`, `cleanup` and the pre-run checks of the OLTP workloads (sysbench's schema and
//! messages, in each driver's dialect).
//!
//! Tables load in parallel, one connection per loader thread (thread t loads tables t+1,
//! t+1+threads, … as sysbench's parallel prepare does); the messages go through a channel to
//! the calling thread, which owns the output. How rows travel is the driver's
//! ([`Connection::load`]: prepared multi-row INSERTs within `max_allowed_packet` on MySQL, COPY
//! on PostgreSQL, one transaction of prepared inserts on SQLite).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use super::{Kind, Oltp};
use crate::db::{Connection, Connector, DataRow, ErrKind, SqlError, TableSpec, owned};
use crate::engine::EngineError;
use crate::engine::random::Rng;
use crate::engine::session;

fn failed(what: &str, e: &SqlError) -> EngineError {
    EngineError::Sql {
        context: what.to_string(),
        source: e.clone(),
    }
}

/// One connection for setup work ([`session::connect`]).
fn connect(w: &Oltp) -> Result<Box<dyn Connection>, EngineError> {
    session::connect(&w.sessions.connector, 0)
}

/// Before a run: a SQLite file that is not there fails with the fix, instead of being created
/// empty by the first connection.
pub(super) fn require_database(connector: &Connector) -> Result<(), EngineError> {
    let t = &connector.target;
    t.driver
        .dialect()
        .check_exists(t)
        .map_err(EngineError::from)
}

/// After a cleanup: the default SQLite file goes once nothing is left in it (see
/// [`crate::db::sqlite::remove_default_if_empty`]).
pub(super) fn after_cleanup(connector: &Connector, out: &mut dyn Write) -> Result<(), EngineError> {
    let t = &connector.target;
    if let Some(line) = t.driver.dialect().after_cleanup(t)? {
        writeln!(out, "{line}").map_err(EngineError::report)?;
    }
    Ok(())
}

/// The sysbench table of the workload's shape options, for the dialect's DDL.
fn table_spec(w: &Oltp) -> TableSpec<'_> {
    let sh = &w.shape;
    TableSpec {
        secondary: sh.secondary,
        auto_inc: sh.auto_inc,
        create_secondary: sh.create_secondary,
        storage_engine: &sh.storage_engine,
    }
}

/// The CREATE TABLE statement of table `n` in the target's dialect (sysbench's schema: MySQL
/// with AUTO_INCREMENT and an engine clause, PostgreSQL with SERIAL; SQLite's INTEGER PRIMARY
/// KEY AUTOINCREMENT is its rowid), with `table_options`.
pub fn create_table_sql(w: &Oltp, n: usize) -> String {
    let sh = &w.shape;
    let mut sql = w
        .sessions
        .connector
        .target
        .driver
        .dialect()
        .create_table(n, &table_spec(w));
    if !sh.table_options.is_empty() {
        sql.push(' ');
        sql.push_str(&sh.table_options);
    }
    sql
}

/// The statements run after loading table `n`: sysbench's secondary index on `k`, and on
/// PostgreSQL and SQLite the non-unique index on `id` of `secondary = on`.
fn index_sql(w: &Oltp, n: usize) -> Vec<String> {
    w.sessions
        .connector
        .target
        .driver
        .dialect()
        .create_indexes(n, &table_spec(w))
}

/// The rows prepare loads into each table: `table_size`, none for oltp_insert's tables
/// without `auto_inc` (they start empty).
fn rows_per_table(w: &Oltp) -> u64 {
    if w.kind == Kind::Insert && !w.shape.auto_inc {
        0
    } else {
        w.shape.table_size
    }
}

fn load_table(
    w: &Oltp,
    conn: &mut dyn Connection,
    n: usize,
    rng: &mut Rng,
    msg: &mpsc::Sender<String>,
    stop: &AtomicBool,
) -> Result<(), EngineError> {
    let sh = &w.shape;
    let rows = rows_per_table(w);
    let _ = msg.send(format!("Creating table 'sbtest{n}'..."));
    let sql = create_table_sql(w, n);
    let t = &w.sessions.connector.target;
    let created = match &t.ledger {
        Some(ledger) => owned::create(
            ledger.as_ref(),
            &owned::key(t, &format!("sbtest{n}")),
            || conn.query(&sql),
        ),
        None => conn.query(&sql),
    };
    created.map_err(|e| {
        let hint = if e.kind == ErrKind::TableExists {
            ": run cleanup first (or prepare into another database)"
        } else {
            ""
        };
        EngineError::Failed(format!("creating table 'sbtest{n}' failed: {e}{hint}"))
    })?;
    if rows > 0 {
        let _ = msg.send(format!("Inserting {rows} records into 'sbtest{n}'"));
        let mut id = 0u64;
        let mut fill = |r: &mut DataRow| {
            if id >= rows || (id.is_multiple_of(4096) && id > 0 && stop.load(Ordering::Relaxed)) {
                return false;
            }
            id += 1;
            r.id = id as i64;
            r.k = w.dist.draw(rng, 1, sh.table_size) as i64;
            rng.string(&w.c_template, &mut r.c);
            rng.string(&w.pad_template, &mut r.pad);
            true
        };
        conn.load(&format!("sbtest{n}"), !w.server_assigns_ids(), &mut fill)
            .map_err(|e| failed(&format!("inserting into 'sbtest{n}' failed"), &e))?;
    }
    if stop.load(Ordering::Relaxed) {
        return Ok(());
    }
    for sql in index_sql(w, n) {
        if sql.contains(" k_") {
            let _ = msg.send(format!("Creating a secondary index on 'sbtest{n}'..."));
        }
        conn.query(&sql)
            .map_err(|e| failed(&format!("`{sql}` failed"), &e))?;
    }
    if let Some(sql) = w.sessions.connector.target.driver.dialect().after_load(n) {
        conn.query(&sql)
            .map_err(|e| failed(&format!("{sql} failed"), &e))?;
    }
    Ok(())
}

/// Runs `job(worker, lines)` on `min(threads, tables)` threads (worker `t` handles tables
/// t+1, t+1+workers, … as sysbench's parallel commands do) and prints the lines they send, in
/// the order they arrive. The first error wins; every thread is joined.
fn per_table_workers<F>(
    w: &Oltp,
    threads: usize,
    out: &mut dyn Write,
    job: F,
) -> Result<(), EngineError>
where
    F: Fn(usize, usize, mpsc::Sender<String>) -> Result<(), EngineError> + Sync,
{
    let workers = threads.min(w.shape.tables).max(1);
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::scope(|scope| {
        let job = &job;
        let handles: Vec<_> = (0..workers)
            .map(|t| {
                let tx = tx.clone();
                scope.spawn(move || job(t, workers, tx))
            })
            .collect();
        drop(tx);
        let mut write_err = None;
        for line in rx {
            if let Err(e) = writeln!(out, "{line}") {
                write_err.get_or_insert(e);
            }
        }
        let mut result = Ok(());
        for h in handles {
            let r = h
                .join()
                .unwrap_or_else(|_| Err(EngineError::Failed("a worker thread panicked".into())));
            if result.is_ok() {
                result = r;
            }
        }
        result?;
        write_err.map_or(Ok(()), |e| Err(EngineError::report(e)))
    })
}

/// Loader threads for prepare and prewarm: one per table up to `threads`, except on SQLite,
/// which has one writer at a time (more threads would only wait for the lock).
fn loaders(w: &Oltp) -> usize {
    if w.sessions.connector.target.driver.dialect().single_writer() {
        1
    } else {
        w.threads
    }
}

/// A suite's prepare (its target has a ledger): none of the tables `sbtest1..=tables` may
/// exist, or the prepare fails before it creates anything, naming them; they are not the
/// run's, so its cleanup keeps them too (#26). Shared by the OLTP workloads and bulk_insert.
pub(super) fn refuse_existing(connector: &Connector, tables: usize) -> Result<(), EngineError> {
    let t = &connector.target;
    if t.ledger.is_none() || t.dry_run {
        return Ok(());
    }
    let mut conn = session::connect(connector, 0)?;
    let mut there = Vec::new();
    for n in 1..=tables {
        let name = format!("sbtest{n}");
        let mine = t
            .ledger
            .as_ref()
            .is_some_and(|l| l.owns(&owned::key(t, &name)));
        if !mine
            && owned::exists(conn.as_mut(), t, &name).map_err(|e| {
                failed(
                    &format!("checking whether table '{name}' exists failed"),
                    &e,
                )
            })?
        {
            there.push(format!("'{name}'"));
        }
    }
    conn.close();
    if there.is_empty() {
        return Ok(());
    }
    Err(EngineError::Failed(owned::already_there(t, &there)))
}

/// The `prepare` command: create and load every table (a suite's, after
/// `refuse_existing`).
pub fn prepare(w: &Oltp, out: &mut dyn Write, stop: &AtomicBool) -> Result<(), EngineError> {
    refuse_existing(&w.sessions.connector, w.shape.tables)?;
    per_table_workers(w, loaders(w), out, |t, workers, tx| {
        let mut conn = connect(w)?;
        let mut rng = Rng::for_thread(w.seed, t);
        let mut n = t + 1;
        let mut result = Ok(());
        while n <= w.shape.tables && !stop.load(Ordering::Relaxed) && result.is_ok() {
            result = load_table(w, conn.as_mut(), n, &mut rng, &tx, stop);
            n += workers;
        }
        conn.close();
        result
    })
}

/// The statements that warm table `n`: statistics, then a full scan of the primary key and
/// one of the `k` index, so that a run after a restart measures the server, not its cold
/// caches.
fn prewarm_sql(w: &Oltp, n: usize) -> Vec<String> {
    w.sessions
        .connector
        .target
        .driver
        .dialect()
        .prewarm(n, w.shape.create_secondary)
}

/// The `prewarm` command: [`prewarm_sql`] for every table, in parallel like prepare.
pub fn prewarm(w: &Oltp, out: &mut dyn Write, stop: &AtomicBool) -> Result<(), EngineError> {
    per_table_workers(w, loaders(w), out, |t, workers, tx| {
        let mut conn = connect(w)?;
        let mut n = t + 1;
        while n <= w.shape.tables && !stop.load(Ordering::Relaxed) {
            let _ = tx.send(format!("Prewarming table sbtest{n}"));
            for q in prewarm_sql(w, n) {
                conn.query(&q)
                    .map_err(|e| failed(&format!("prewarming table 'sbtest{n}' failed"), &e))?;
            }
            n += workers;
        }
        conn.close();
        Ok(())
    })
}

/// The `cleanup` command: drop every table, or, in a suite (the target has a ledger), every
/// table the run created (the others are the ledger's to report).
pub fn cleanup(w: &Oltp, out: &mut dyn Write) -> Result<(), EngineError> {
    let t = &w.sessions.connector.target;
    let Some(ledger) = t.ledger.as_deref() else {
        let mut conn = connect(w)?;
        for n in 1..=w.shape.tables {
            drop_table(conn.as_mut(), n, out)?;
        }
        conn.close();
        return after_cleanup(&w.sessions.connector, out);
    };
    let tables: Vec<(usize, owned::TableKey)> = (1..=w.shape.tables)
        .map(|n| (n, owned::key(t, &format!("sbtest{n}"))))
        .collect();
    let mine = tables.iter().any(|(_, k)| ledger.owns(k));
    // Nothing of the run's to drop: the server is asked only which of its tables are there,
    // to report them, and a server that cannot be reached has nothing to report.
    let mut conn = match connect(w) {
        Ok(conn) => conn,
        Err(_) if !mine => return after_cleanup(&w.sessions.connector, out),
        Err(e) => return Err(e),
    };
    for (n, key) in &tables {
        if ledger.owns(key) {
            drop_table(conn.as_mut(), *n, out)?;
            ledger.dropped(key);
        } else if owned::exists(conn.as_mut(), t, &key.table).unwrap_or(false) {
            ledger.kept(key);
        }
    }
    conn.close();
    after_cleanup(&w.sessions.connector, out)
}

/// `DROP TABLE IF EXISTS sbtest<n>`, with sysbench's line.
fn drop_table(conn: &mut dyn Connection, n: usize, out: &mut dyn Write) -> Result<(), EngineError> {
    writeln!(out, "Dropping table 'sbtest{n}'...").map_err(EngineError::report)?;
    conn.query(&format!("DROP TABLE IF EXISTS sbtest{n}"))
        .map_err(|e| failed(&format!("dropping table 'sbtest{n}' failed"), &e))?;
    Ok(())
}

/// `[suite] dataset = "existing"`, before anything runs: every table of `tables` is there
/// with the rows prepare would have loaded (#26). Rows are read as the largest `id`, from the
/// primary key, which sysbench's prepare makes equal to the row count: a table prepared with a
/// smaller `table_size` is found without counting a big one.
pub fn check_existing(w: &Oltp) -> Result<(), EngineError> {
    if w.sessions.connector.target.dry_run {
        return Ok(());
    }
    require_database(&w.sessions.connector)?;
    let t = &w.sessions.connector.target;
    let db = t.driver.dialect().database_label(t);
    let (tables, size) = (w.shape.tables, w.shape.table_size);
    let fix = format!(
        "prepare them first with the suite's options (e.g. `sbsuite sysbench oltp_read_write \
         --tables={tables} --table-size={size} prepare`), or remove [suite] dataset = \
         \"existing\" so that the suite prepares its own"
    );
    let needed = rows_per_table(w);
    let mut conn = connect(w)?;
    for n in 1..=tables {
        let max = match conn.query_i64(&format!("SELECT MAX(id) FROM sbtest{n}")) {
            Err(e) if e.kind == ErrKind::NoTable => {
                return Err(EngineError::Failed(format!(
                    "[suite] dataset = \"existing\": table 'sbtest{n}' does not exist in {db} \
                     (tables = {tables}): {fix}"
                )));
            }
            Err(e) => return Err(failed(&format!("checking table 'sbtest{n}' failed"), &e)),
            Ok(max) => max.unwrap_or(0),
        };
        if (max.max(0) as u64) < needed {
            return Err(EngineError::Failed(format!(
                "[suite] dataset = \"existing\": table 'sbtest{n}' in {db} has {}, fewer than \
                 table_size = {size}: {fix}",
                match max {
                    0 => "no rows".to_string(),
                    m => format!("rows up to id {m}"),
                }
            )));
        }
    }
    conn.close();
    Ok(())
}

/// Before a run: the server accepts the connections the run needs and every table is there
/// with rows (else "run prepare first").
pub fn check_before_run(w: &Oltp) -> Result<(), EngineError> {
    if w.sessions.connector.target.dry_run {
        return Ok(());
    }
    require_database(&w.sessions.connector)?;
    let mut conn = connect(w)?;
    let dialect = w.sessions.connector.target.driver.dialect();
    let max = dialect
        .max_connections(conn.as_mut())
        .map_err(|e| failed("reading max_connections failed", &e))?;
    if let Some(max) = max
        && (max as usize) < w.threads
    {
        return Err(EngineError::Failed(format!(
            "the server allows max_connections = {max}, fewer than threads = {}: lower `threads` or raise max_connections on the server",
            w.threads
        )));
    }
    let per_connection = w.statements_per_connection() as u64;
    if per_connection > 0
        && let Some(room) = w
            .sessions
            .connector
            .flavor()
            .statement_room(conn.as_mut())
            .map_err(|e| {
                failed(
                    "reading the server's limit on prepared statements failed",
                    &e,
                )
            })?
        && let Some(why) = room.shortfall(per_connection, w.threads as u64)
    {
        return Err(EngineError::Failed(why));
    }
    let t = &w.sessions.connector.target;
    let db = dialect.database_label(t);
    for n in 1..=w.shape.tables {
        match conn.query_i64(&format!("SELECT MAX(id) FROM sbtest{n}")) {
            Err(e) if e.kind == ErrKind::NoTable => {
                return Err(EngineError::NoTable {
                    table: format!("sbtest{n}"),
                    message: format!(
                        "table 'sbtest{n}' does not exist in {db}: run prepare first (tables = {})",
                        w.shape.tables
                    ),
                });
            }
            Err(e) => return Err(failed(&format!("checking table 'sbtest{n}' failed"), &e)),
            Ok(max) => {
                if max.is_none() && w.kind != Kind::Insert {
                    return Err(EngineError::Failed(format!(
                        "table 'sbtest{n}' in {db} is empty: run prepare first (table_size = {})",
                        w.shape.table_size
                    )));
                }
            }
        }
    }
    conn.close();
    Ok(())
}
