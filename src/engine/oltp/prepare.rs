//! `prepare`, `cleanup` and the pre-run checks of the OLTP workloads (sysbench's schema and
//! messages, MySQL variant).
//!
//! Tables load in parallel, one connection per loader thread (thread t loads tables t+1,
//! t+1+threads, … as sysbench's parallel prepare does), each thread on its own current-thread
//! runtime; the messages go through a channel to the calling thread, which owns the output.
//! Rows go in multi-row INSERTs sized to the server's `max_allowed_packet` (at most 4 MiB).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use mysql_async::Conn;
use mysql_async::prelude::Queryable;

use super::{Kind, Oltp};
use crate::db::mysql::{self as my, Connector};
use crate::engine::EngineError;
use crate::random::Rng;

const MAX_BATCH: usize = 4 << 20;

fn failed(what: &str, e: &mysql_async::Error) -> EngineError {
    EngineError::Failed(format!("{what}: {}", my::describe(e)))
}

fn io_err(e: std::io::Error) -> EngineError {
    EngineError::Failed(format!("writing the report failed: {e}"))
}

async fn connect(w: &Oltp) -> Result<Conn, EngineError> {
    connect_with(&w.connector).await
}

/// One connection for setup work (prepare, cleanup, checks), its failure as an engine error
/// naming the endpoint, user and database.
pub(super) async fn connect_with(connector: &Connector) -> Result<Conn, EngineError> {
    connector.connect_at(0, 32).await.map_err(|e| {
        EngineError::Failed(format!(
            "cannot connect to {} as user `{}`, database `{}`: {e}",
            connector.target.endpoint(0),
            connector.target.user,
            connector.target.database
        ))
    })
}

pub(super) fn runtime() -> Result<tokio::runtime::Runtime, EngineError> {
    my::runtime().map_err(|e| EngineError::Failed(format!("tokio runtime: {e}")))
}

/// The CREATE TABLE statement of table `n`.
pub fn create_table_sql(w: &Oltp, n: usize) -> String {
    let sh = &w.shape;
    let inc = if sh.auto_inc { " AUTO_INCREMENT" } else { "" };
    let key = if sh.secondary {
        "KEY xid (id)"
    } else {
        "PRIMARY KEY (id)"
    };
    let mut sql = format!(
        "CREATE TABLE sbtest{n}(id INTEGER NOT NULL{inc}, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, {key}) /*! ENGINE = {} */",
        sh.storage_engine
    );
    if !sh.table_options.is_empty() {
        sql.push(' ');
        sql.push_str(&sh.table_options);
    }
    sql
}

async fn load_table(
    w: &Oltp,
    conn: &mut Conn,
    n: usize,
    rng: &mut Rng,
    batch: usize,
    msg: &mpsc::Sender<String>,
    stop: &AtomicBool,
) -> Result<(), EngineError> {
    use std::fmt::Write as _;
    let sh = &w.shape;
    let rows = if w.kind == Kind::Insert && !sh.auto_inc {
        0
    } else {
        sh.table_size
    };
    let _ = msg.send(format!("Creating table 'sbtest{n}'..."));
    conn.query_drop(create_table_sql(w, n)).await.map_err(|e| {
        let hint = if my::error_code(&e) == Some(1050) {
            ": run cleanup first (or prepare into another database)"
        } else {
            ""
        };
        EngineError::Failed(format!(
            "creating table 'sbtest{n}' failed: {}{hint}",
            my::describe(&e)
        ))
    })?;
    if rows > 0 {
        let _ = msg.send(format!("Inserting {rows} records into 'sbtest{n}'"));
    }
    let head = if sh.auto_inc {
        format!("INSERT INTO sbtest{n}(k, c, pad) VALUES")
    } else {
        format!("INSERT INTO sbtest{n}(id, k, c, pad) VALUES")
    };
    let mut sql = String::with_capacity(batch.min(MAX_BATCH) + 256);
    let mut row = String::with_capacity(256);
    let (mut c, mut pad) = (String::new(), String::new());
    sql.push_str(&head);
    let mut pending = 0usize;
    for id in 1..=rows {
        let k = w.dist.draw(rng, 1, sh.table_size);
        rng.string(&w.c_template, &mut c);
        rng.string(&w.pad_template, &mut pad);
        row.clear();
        let sep = if pending == 0 { "" } else { "," };
        if sh.auto_inc {
            let _ = write!(row, "{sep}({k}, '{c}', '{pad}')");
        } else {
            let _ = write!(row, "{sep}({id}, {k}, '{c}', '{pad}')");
        }
        if pending > 0 && sql.len() + row.len() > batch {
            conn.query_drop(sql.as_str())
                .await
                .map_err(|e| failed(&format!("inserting into 'sbtest{n}' failed"), &e))?;
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            sql.clear();
            sql.push_str(&head);
            pending = 0;
            row.remove(0);
        }
        sql.push_str(&row);
        pending += 1;
    }
    if pending > 0 {
        conn.query_drop(sql.as_str())
            .await
            .map_err(|e| failed(&format!("inserting into 'sbtest{n}' failed"), &e))?;
    }
    if sh.create_secondary && !stop.load(Ordering::Relaxed) {
        let _ = msg.send(format!("Creating a secondary index on 'sbtest{n}'..."));
        conn.query_drop(format!("CREATE INDEX k_{n} ON sbtest{n}(k)"))
            .await
            .map_err(|e| failed(&format!("creating index 'k_{n}' failed"), &e))?;
    }
    Ok(())
}

/// Runs `job(worker, lines)` on `min(threads, tables)` threads (worker `t` handles tables
/// t+1, t+1+workers, … as sysbench's parallel commands do) and prints the lines they send, in
/// the order they arrive. The first error wins; every thread is joined.
fn per_table_workers<F>(w: &Oltp, out: &mut dyn Write, job: F) -> Result<(), EngineError>
where
    F: Fn(usize, usize, mpsc::Sender<String>) -> Result<(), EngineError> + Sync,
{
    let workers = w.threads.min(w.shape.tables).max(1);
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
        write_err.map_or(Ok(()), |e| Err(io_err(e)))
    })
}

/// The `prepare` command: create and load every table.
pub fn prepare(w: &Oltp, out: &mut dyn Write, stop: &AtomicBool) -> Result<(), EngineError> {
    per_table_workers(w, out, |t, workers, tx| {
        runtime()?.block_on(async {
            let mut conn = connect(w).await?;
            let packet: Option<u64> = conn
                .query_first("SELECT @@max_allowed_packet")
                .await
                .map_err(|e| failed("reading max_allowed_packet failed", &e))?;
            let batch = usize::try_from(packet.unwrap_or(1 << 20))
                .unwrap_or(MAX_BATCH)
                .saturating_sub(1024)
                .clamp(16 << 10, MAX_BATCH);
            let mut rng = Rng::for_thread(w.seed, t);
            let mut n = t + 1;
            while n <= w.shape.tables && !stop.load(Ordering::Relaxed) {
                load_table(w, &mut conn, n, &mut rng, batch, &tx, stop).await?;
                n += workers;
            }
            let _ = conn.disconnect().await;
            Ok(())
        })
    })
}

/// The `prewarm` command: for every table (in parallel, like prepare), `ANALYZE TABLE`, then a
/// full scan of the clustered primary key and one of the `k` index, so that a run after a
/// restart measures the server, not its cold caches.
pub fn prewarm(w: &Oltp, out: &mut dyn Write, stop: &AtomicBool) -> Result<(), EngineError> {
    per_table_workers(w, out, |t, workers, tx| {
        runtime()?.block_on(async {
            let mut conn = connect(w).await?;
            let mut n = t + 1;
            while n <= w.shape.tables && !stop.load(Ordering::Relaxed) {
                let _ = tx.send(format!("Prewarming table sbtest{n}"));
                let mut queries = vec![
                    format!("ANALYZE TABLE sbtest{n}"),
                    format!("SELECT AVG(id), SUM(LENGTH(c)) FROM sbtest{n} FORCE INDEX (PRIMARY)"),
                ];
                if w.shape.create_secondary {
                    queries.push(format!(
                        "SELECT COUNT(k) FROM sbtest{n} FORCE INDEX (k_{n})"
                    ));
                }
                for q in &queries {
                    conn.query_drop(q.as_str())
                        .await
                        .map_err(|e| failed(&format!("prewarming table 'sbtest{n}' failed"), &e))?;
                }
                n += workers;
            }
            let _ = conn.disconnect().await;
            Ok(())
        })
    })
}

/// The `cleanup` command: drop every table.
pub fn cleanup(w: &Oltp, out: &mut dyn Write) -> Result<(), EngineError> {
    let rt = runtime()?;
    rt.block_on(async {
        let mut conn = connect(w).await?;
        for n in 1..=w.shape.tables {
            writeln!(out, "Dropping table 'sbtest{n}'...").map_err(io_err)?;
            conn.query_drop(format!("DROP TABLE IF EXISTS sbtest{n}"))
                .await
                .map_err(|e| failed(&format!("dropping table 'sbtest{n}' failed"), &e))?;
        }
        let _ = conn.disconnect().await;
        Ok(())
    })
}

/// Before a run: the server accepts the connections the run needs and every table is there
/// with rows (else "run prepare first").
pub fn check_before_run(w: &Oltp) -> Result<(), EngineError> {
    let rt = runtime()?;
    rt.block_on(async {
        let mut conn = connect(w).await?;
        let max: Option<u64> = conn
            .query_first("SELECT @@max_connections")
            .await
            .map_err(|e| failed("reading max_connections failed", &e))?;
        if let Some(max) = max
            && (max as usize) < w.threads
        {
            return Err(EngineError::Failed(format!(
                "the server allows max_connections = {max}, fewer than threads = {}: lower `threads` or raise max_connections on the server",
                w.threads
            )));
        }
        let db = &w.connector.target.database;
        for n in 1..=w.shape.tables {
            let r: Result<Option<Option<i64>>, _> =
                conn.query_first(format!("SELECT MAX(id) FROM sbtest{n}")).await;
            match r {
                Err(e) if my::error_code(&e) == Some(1146) => {
                    return Err(EngineError::Failed(format!(
                        "table 'sbtest{n}' does not exist in database `{db}`: run prepare first (tables = {})",
                        w.shape.tables
                    )));
                }
                Err(e) => return Err(failed(&format!("checking table 'sbtest{n}' failed"), &e)),
                Ok(max) => {
                    let empty = max.flatten().is_none();
                    if empty && w.kind != Kind::Insert {
                        return Err(EngineError::Failed(format!(
                            "table 'sbtest{n}' in database `{db}` is empty: run prepare first (table_size = {})",
                            w.shape.table_size
                        )));
                    }
                }
            }
        }
        let _ = conn.disconnect().await;
        Ok(())
    })
}
