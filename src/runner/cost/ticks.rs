//! The server's counters at each interval tick of a run step (#29): with `report_interval`
//! set, intervals.csv shows per interval what the server did next to what the clients did
//! (fsyncs/s, redo/WAL bytes/s, the server's CPU, and the four `*_per_txn` of results.csv
//! over the interval), as do `--events` and `--metrics`.
//!
//! Why it is shaped this way:
//! - **On the thread that reports the ticks, on the cost reader's connection**: the driver's
//!   collector (or, for a multi-client step, the coordinator, whose merged ticks pass through
//!   the same observer) hands each interim sample to the runner after printing its line; the
//!   reading happens there, on the connection [`Cost::before`] opened and keeps over the step,
//!   with the same [`CounterSet`]. The workers never see it. The connection is a blocking one
//!   and not `Send`, so it cannot move to a thread of its own; a watchdog thread bounds the
//!   reading instead ([`TICK_READ_MAX`]): when a reading outlasts it, the watchdog breaks the
//!   connection ([`Connection::interrupter`]), the interval's cells stay empty, one warning
//!   says so, and the step reads no more counters at its ticks (a server that slow would only
//!   stall the next ticks too); [`Cost::after`] opens a new connection for its reading.
//! - **Rates over the readings' own clock**: each reading is stamped, and an interval's
//!   per-second values divide by the time between the two readings that bracket it, so a
//!   late tick never inflates a rate. Its per-transaction values divide by the transactions
//!   of that time (the interval's tps times it).
//! - **A baseline where the measured part begins**: [`StepObserver::measuring`] (after
//!   `warmup_time`) takes the first reading, so the first interval covers what its tps
//!   covers, not the warmup. The coordinator of a multi-client step tells it when the last
//!   agent's clock starts, but only without a warmup (each agent ends its own): after one the
//!   first tick's reading is the baseline and the first interval's cells stay empty.
//! - **Intervals.csv is wide, server_counters.csv stays per step**: the per-interval values
//!   are columns of intervals.csv, as every other interval measurement is; server_counters.csv
//!   keeps one row per step × counter. Rows per interval there (×30 counters, each second of an
//!   hour-long step) would change what a row means to every reader that sums a step's deltas.
//! - **What the readings cost is counted**: their CPU (`RUSAGE_THREAD` around each) goes to
//!   `client.cost_read_cpu_ms` (and on its own to `client.cost_tick_cpu_ms`) and is left out
//!   of `client.cpu_ms`, as the step's own readings are (`bench/cost-overhead.sh`).
//!
//! [`StepObserver::measuring`]: crate::engine::StepObserver::measuring

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{
    Before, CLIENT_CPU, Cost, Located, SERVER_CPU, ServerProcess, client_cpu_ms, current_start,
    deltas, derived, process_values, thread_cpu_ms, usable,
};
use crate::db::counters::{self, CounterSet};
use crate::db::interrupt::Interrupter;
use crate::db::{Connection, Driver};
use crate::engine::{IntervalSample, Metrics};
use crate::plan::Step;
use crate::value::Options;

/// The longest one reading at a tick may take (a local server answers in about a
/// millisecond, PostgreSQL's four views take four round trips).
pub const TICK_READ_MAX: Duration = Duration::from_millis(250);

/// intervals.csv: the server process's CPU over the interval, in % of one core (above 100 on
/// several cores, as `top` shows it).
pub const SERVER_CPU_PCT: &str = "server_cpu_pct";

/// The readings at the ticks of one run step, from [`Cost::ticks`] to [`Cost::end_ticks`].
pub struct Ticks {
    /// The cost reader's connection; `None` once a reading was cut off (or the watchdog could
    /// not start).
    conn: Option<Box<dyn Connection>>,
    set: CounterSet,
    driver: Driver,
    server: Option<ServerProcess>,
    multi_client: bool,
    watchdog: Option<Watchdog>,
    prev: Option<Point>,
    warnings: Vec<String>,
    /// The CPU spent reading at this step's ticks (the calling thread's).
    read_cpu_ms: f64,
}

/// One reading: when, and what (server counters, server process CPU, client CPU).
struct Point {
    at: Instant,
    values: Vec<(String, f64)>,
}

/// Whether a step of these options reports intervals (`report_interval` above 0).
fn reports_intervals(options: &Options) -> bool {
    options.float("report_interval") > 0.0
}

impl Cost {
    /// The readings at `step`'s ticks, on the connection `before` kept (it moves here until
    /// [`Cost::end_ticks`]); `None` when the step reports no intervals or there is nothing
    /// to read.
    pub fn ticks(&mut self, step: &Step, before: &mut Before) -> Option<Ticks> {
        if !self.config.enabled || before.unread || !reports_intervals(&step.options) {
            return None;
        }
        let target = Self::target(step)?;
        let set = self.set.clone()?;
        let conn = before.conn.take()?;
        let watchdog = match conn.interrupter().map(Watchdog::start) {
            Some(Ok(w)) => Some(w),
            Some(Err(e)) => {
                self.warn(format!(
                    "server counters not read at interval ticks: no watchdog thread: {e}"
                ));
                None
            }
            None => {
                self.warn(
                    "server counters not read at interval ticks: this connection cannot be \
                     interrupted, so a slow reading could not be bounded"
                        .into(),
                );
                None
            }
        };
        // Without a watchdog the connection stays with the step's own readings.
        let conn = match watchdog {
            Some(_) => Some(conn),
            None => {
                before.conn = Some(conn);
                None
            }
        };
        Some(Ticks {
            conn,
            set,
            driver: target.driver,
            server: match self.server {
                Located::At(p) => Some(p),
                _ => None,
            },
            multi_client: self.multi_client,
            watchdog,
            prev: None,
            warnings: Vec::new(),
            read_cpu_ms: 0.0,
        })
    }

    /// The step ended: the connection goes back to `before` (unless a reading broke it: then
    /// [`Cost::after`] opens another), the readings' CPU and warnings to the step's.
    pub fn end_ticks(&mut self, ticks: Ticks, before: &mut Before) {
        let Ticks {
            conn,
            set,
            watchdog,
            warnings,
            read_cpu_ms,
            ..
        } = ticks;
        drop(watchdog);
        if before.conn.is_none() {
            before.conn = conn;
        }
        self.set = Some(set);
        self.read_cpu_ms += read_cpu_ms;
        *before.tick_cpu_ms.get_or_insert(0.0) += read_cpu_ms;
        for w in warnings {
            self.warn(w);
        }
    }
}

impl Ticks {
    /// The measured part begins: the baseline of the first interval.
    pub fn measuring(&mut self) {
        self.prev = self.read();
    }

    /// The cells `sample`'s interval gets: its deltas since the previous reading (none for
    /// the first reading of a step without a baseline, or when this one failed).
    pub fn interval(&mut self, sample: &IntervalSample) -> Metrics {
        let now = self.read();
        let cells = match (&self.prev, &now) {
            (Some(prev), Some(now)) => interval_metrics(
                self.driver,
                &prev.values,
                &now.values,
                now.at.saturating_duration_since(prev.at).as_secs_f64(),
                Some(sample.tps.unwrap_or(sample.eps)),
            ),
            _ => Metrics::new(),
        };
        // After a failed reading the next interval starts from its own first one.
        self.prev = now;
        cells
    }

    /// Reads everything once: this process's CPU (the readings so far left out), the
    /// server's counters (bounded by the watchdog), its process's CPU.
    fn read(&mut self) -> Option<Point> {
        let mut values = Vec::new();
        if !self.multi_client {
            values.push((CLIENT_CPU.to_string(), client_cpu_ms() - self.read_cpu_ms));
        }
        let started = thread_cpu_ms();
        let at = Instant::now();
        if let (Some(conn), Some(watchdog)) = (self.conn.as_mut(), self.watchdog.as_ref()) {
            let (reading, cut) = watchdog.guard(|| counters::read(conn.as_mut(), &mut self.set));
            for f in reading.failed {
                self.warnings
                    .push(format!("server counters not read at an interval tick: {f}"));
            }
            values.extend(reading.values);
            if cut {
                self.warnings.push(format!(
                    "server counters took over {} ms to read at an interval tick: not read \
                     at the remaining ticks of the step",
                    TICK_READ_MAX.as_millis()
                ));
                if let Some(c) = self.conn.take() {
                    c.close();
                }
            }
        }
        if let Some(p) = self.server {
            if current_start(p.pid) == Some(p.start) {
                values.extend(process_values(p));
            } else {
                // Restarted: its CPU no longer adds up; `Cost::after` looks for it again.
                self.server = None;
            }
        }
        self.read_cpu_ms += thread_cpu_ms() - started;
        let server = values.iter().any(|(n, _)| n != CLIENT_CPU);
        server.then_some(Point { at, values })
    }
}

/// One interval's intervals.csv cells from the readings that bracket it, `secs` apart, and
/// its transactions per second: the deltas per transaction (as results.csv has them for the
/// step) and per second (`driver`'s derived counters, the server's CPU in % of one core).
/// Counters that went backwards (a reset) give no cell.
pub fn interval_metrics(
    driver: Driver,
    prev: &[(String, f64)],
    cur: &[(String, f64)],
    secs: f64,
    txn_per_s: Option<f64>,
) -> Metrics {
    if secs.is_nan() || secs <= 0.0 {
        return Metrics::new();
    }
    let d = deltas(prev, cur, txn_per_s.map(|t| t * secs));
    let mut out = derived(Some(driver), &d);
    for c in counters::profile(driver).derived {
        if let Some(x) = c.from.iter().find_map(|f| usable(&d, f)) {
            out.push((c.per_s, x.delta / secs));
        }
    }
    if let Some(x) = usable(&d, SERVER_CPU) {
        out.push((SERVER_CPU_PCT, x.delta / (secs * 1000.0) * 100.0));
    }
    out
}

/// A thread that breaks the cost reader's connection when a reading at a tick outlasts
/// [`TICK_READ_MAX`].
struct Watchdog {
    shared: Arc<(Mutex<Watch>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct Watch {
    /// When the reading in progress must be over.
    deadline: Option<Instant>,
    /// The reading in progress was cut off.
    fired: bool,
    quit: bool,
}

fn lock(m: &Mutex<Watch>) -> MutexGuard<'_, Watch> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Watchdog {
    fn start(interrupter: Interrupter) -> std::io::Result<Watchdog> {
        let shared = Arc::new((Mutex::new(Watch::default()), Condvar::new()));
        let mine = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("sbsuite-cost-watch".into())
            .spawn(move || {
                let (m, cv) = &*mine;
                let mut w = lock(m);
                while !w.quit {
                    let now = Instant::now();
                    w = match w.deadline {
                        None => cv.wait(w).unwrap_or_else(|e| e.into_inner()),
                        Some(d) if now >= d => {
                            w.deadline = None;
                            w.fired = true;
                            drop(w);
                            interrupter.interrupt();
                            lock(m)
                        }
                        Some(d) => {
                            cv.wait_timeout(w, d - now)
                                .unwrap_or_else(|e| e.into_inner())
                                .0
                        }
                    };
                }
            })?;
        Ok(Watchdog {
            shared,
            thread: Some(thread),
        })
    }

    /// Runs `read` under the deadline; says whether the connection was broken meanwhile (its
    /// result may still be whole, the connection is not).
    fn guard<T>(&self, read: impl FnOnce() -> T) -> (T, bool) {
        let (m, cv) = &*self.shared;
        {
            let mut w = lock(m);
            w.deadline = Instant::now().checked_add(TICK_READ_MAX);
            w.fired = false;
        }
        cv.notify_one();
        let out = read();
        let mut w = lock(m);
        w.deadline = None;
        (out, w.fired)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        lock(&self.shared.0).quit = true;
        self.shared.1.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A driver by its name (code outside `src/db` names no variant: the layers test).
    fn driver(name: &str) -> Driver {
        name.parse().unwrap()
    }

    fn v(pairs: &[(&str, f64)]) -> Vec<(String, f64)> {
        pairs.iter().map(|(n, x)| (n.to_string(), *x)).collect()
    }

    fn get(m: &Metrics, name: &str) -> Option<f64> {
        crate::engine::metric(m, name)
    }

    #[test]
    fn an_interval_gets_rates_per_second_and_per_transaction() {
        let prev = v(&[
            ("Innodb_data_fsyncs", 100.0),
            ("Innodb_os_log_written", 5000.0),
            (SERVER_CPU, 1000.0),
            (CLIENT_CPU, 200.0),
        ]);
        let cur = v(&[
            ("Innodb_data_fsyncs", 300.0),
            ("Innodb_os_log_written", 45000.0),
            (SERVER_CPU, 2500.0),
            (CLIENT_CPU, 300.0),
        ]);
        // 2 s at 100 tps: 200 transactions.
        let m = interval_metrics(driver("mysql"), &prev, &cur, 2.0, Some(100.0));
        assert_eq!(get(&m, counters::FSYNCS_PS), Some(100.0));
        assert_eq!(get(&m, counters::LOG_BYTES_PS), Some(20000.0));
        assert_eq!(get(&m, SERVER_CPU_PCT), Some(75.0));
        assert_eq!(get(&m, counters::FSYNCS_PER_TXN), Some(1.0));
        assert_eq!(get(&m, counters::LOG_BYTES_PER_TXN), Some(200.0));
        assert_eq!(get(&m, super::super::SERVER_CPU_MS_PER_TXN), Some(7.5));
        assert_eq!(get(&m, super::super::CLIENT_CPU_US_PER_TXN), Some(500.0));
    }

    #[test]
    fn an_idle_or_reset_or_zero_length_interval_leaves_cells_empty() {
        let prev = v(&[
            ("pg_stat_wal.wal_sync", 50.0),
            ("pg_stat_wal.wal_bytes", 900.0),
        ]);
        let cur = v(&[
            ("pg_stat_wal.wal_sync", 60.0),
            ("pg_stat_wal.wal_bytes", 100.0),
        ]);
        // No transactions: rates only; wal_bytes went backwards (pg_stat_reset_shared).
        let m = interval_metrics(driver("pgsql"), &prev, &cur, 1.0, Some(0.0));
        assert_eq!(m, vec![(counters::FSYNCS_PS, 10.0)]);
        assert!(interval_metrics(driver("pgsql"), &prev, &cur, 0.0, Some(5.0)).is_empty());
        // The server process was not found: no CPU cell; a counter read only once pairs with
        // nothing.
        let m = interval_metrics(
            driver("pgsql"),
            &v(&[("pg_stat_wal.wal_sync", 1.0)]),
            &v(&[("pg_stat_wal.wal_sync", 3.0), (SERVER_CPU, 9.0)]),
            0.5,
            Some(4.0),
        );
        assert_eq!(
            m,
            vec![(counters::FSYNCS_PER_TXN, 1.0), (counters::FSYNCS_PS, 4.0)]
        );
    }

    #[test]
    fn the_derived_rates_are_interval_columns() {
        let columns = crate::results::csv::interval_columns();
        for driver in [driver("mysql"), driver("pgsql")] {
            for d in counters::profile(driver).derived {
                assert!(columns.iter().any(|c| c == d.per_s), "{}", d.per_s);
                assert!(columns.iter().any(|c| c == d.column), "{}", d.column);
            }
        }
        assert!(columns.iter().any(|c| c == SERVER_CPU_PCT));
    }

    #[test]
    fn the_watchdog_interrupts_a_reading_that_outlasts_its_deadline_and_no_other() {
        let hits = Arc::new(AtomicUsize::new(0));
        let h = Arc::clone(&hits);
        let w = Watchdog::start(Interrupter::new(move || {
            h.fetch_add(1, Ordering::SeqCst);
        }))
        .unwrap();
        let (v, cut) = w.guard(|| 7);
        assert_eq!((v, cut), (7, false));
        let (_, cut) = w.guard(|| std::thread::sleep(TICK_READ_MAX + Duration::from_millis(100)));
        assert!(cut);
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        // The next reading starts a new deadline.
        let (_, cut) = w.guard(|| ());
        assert!(!cut);
        std::thread::sleep(TICK_READ_MAX + Duration::from_millis(50));
        assert_eq!(
            hits.load(Ordering::SeqCst),
            1,
            "nothing fires between readings"
        );
        drop(w);
    }

    #[test]
    fn only_steps_with_a_report_interval_read_at_ticks() {
        use crate::value::Value;
        let mut o = Options::default();
        assert!(!reports_intervals(&o));
        o.0.insert("report_interval".into(), Value::Int(0));
        assert!(!reports_intervals(&o));
        o.0.insert("report_interval".into(), Value::Int(1));
        assert!(reports_intervals(&o));
    }
}
