//! The two CSV files of a run (`results.csv`, `intervals.csv`): their column contract, how a
//! value becomes a cell, and a writer that makes every finished row durable.
//!
//! Matrix axes become columns, so the header is dynamic: the csv crate cannot serialize maps or
//! `#[serde(flatten)]`, hence the header and every record are built by hand as `Vec<String>`
//! from one column list — the header and the rows can never disagree on order.
//! Column order is a contract (STYLE.md §7): the fixed names live in constants below, guarded by
//! tests, and the guide (docs/results.md) copies [`RESULTS_COLUMNS_DOC`].

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use chrono::{DateTime, SecondsFormat, Utc};

use super::ResultsError;
use crate::engine::{HEADLINE, IntervalSample, METRICS, OpenLoop, StepOutcome, TxnStats, metric};
use crate::plan::Step;

/// Fixed columns of `results.csv` before the extra matrix axes.
pub const RESULTS_LEADING_COLUMNS: &[&str] =
    &["run_id", "step", "name", "variant", "workload", "threads"];

/// Fixed columns of `results.csv` after the extra matrix axes.
pub const RESULTS_TRAILING_COLUMNS: &[&str] = &[
    "repetition",
    "started_at",
    "seconds",
    "events",
    "eps",
    "tps",
    "qps",
    "reads",
    "writes",
    "other",
    "errors",
    "reconnects",
    "lat_min",
    "lat_avg",
    "lat_p50",
    "lat_p95",
    "lat_p99",
    "lat_max",
    "lat_sum",
    "percentile",
    "lat_pct",
    "fairness_events_stddev",
    "fairness_time_stddev",
    // then one column per entry of engine::METRICS, then:
    "status",
    "error",
    "knee",
    "headline_name",
    "error_codes",
    "warmup_s",
    "steady",
    "trend_pct_per_min",
    "phase",
    "target_rate",
    "service_p50",
    "service_p95",
    "service_p99",
    "service_max",
    "lag_p50",
    "lag_p95",
    "lag_p99",
    "lag_max",
    "group",
];

/// Columns of `intervals.csv`, in order.
pub const INTERVAL_COLUMNS: &[&str] = &[
    "run_id",
    "step",
    "name",
    "variant",
    "time",
    "threads",
    "eps",
    "tps",
    "qps",
    "reads_ps",
    "writes_ps",
    "other_ps",
    "lat_pct",
    "percentile",
    "errors_ps",
    "reconnects_ps",
];

/// How many of [`RESULTS_TRAILING_COLUMNS`] come after the workload metrics (`status`,
/// `error`, `knee`, `headline_name`, `error_codes`, `warmup_s`, `steady`,
/// `trend_pct_per_min`, `phase`, `target_rate`, the eight open-loop columns and `group`).
const AFTER_METRICS: usize = 19;

/// The fixed trailing columns with the workload metrics inserted before `status`.
fn trailing_columns() -> impl Iterator<Item = String> {
    let (measures, tail) =
        RESULTS_TRAILING_COLUMNS.split_at(RESULTS_TRAILING_COLUMNS.len() - AFTER_METRICS);
    measures
        .iter()
        .map(|c| c.to_string())
        .chain(METRICS.iter().map(|(m, _)| m.to_string()))
        .chain(tail.iter().map(|c| c.to_string()))
}

/// Every `intervals.csv` column: [`INTERVAL_COLUMNS`], the workload metrics, then `phase`,
/// `target_rate` and `group`.
pub fn interval_columns() -> Vec<String> {
    INTERVAL_COLUMNS
        .iter()
        .map(|c| c.to_string())
        .chain(METRICS.iter().map(|(m, _)| m.to_string()))
        .chain([
            PHASE.to_string(),
            TARGET_RATE.to_string(),
            GROUP.to_string(),
        ])
        .collect()
}

/// A phase's target rate (#30): its mean in a phase's results row, the rate at the
/// interval's end in intervals.csv.
pub const TARGET_RATE: &str = "target_rate";

/// The column that names a run step's phase (#30) in both files: empty in a step's own row.
pub const PHASE: &str = "phase";

/// The column that names a run step's worker group (#31) in both files: empty in a step's own
/// row.
pub const GROUP: &str = "group";

fn metric_cells(metrics: &crate::engine::Metrics) -> impl Iterator<Item = String> + '_ {
    METRICS.iter().map(|(name, _)| {
        // The cost per transaction is often far below 1 (0.0012 fsyncs): 6 decimals; connect
        // times are latencies, in ms with nanosecond resolution as the event latencies.
        let decimals = if name.ends_with("_per_txn") {
            6
        } else if name.starts_with("connect_") && name.ends_with("_ms") {
            MS_DECIMALS
        } else {
            RATE_DECIMALS
        };
        metric(metrics, name)
            .map(|v| fmt_float(v, decimals))
            .unwrap_or_default()
    })
}

/// Prefix given to a matrix axis whose name collides with a fixed column (an axis called
/// `status` would otherwise make two `status` columns).
pub const AXIS_COLLISION_PREFIX: &str = "axis_";

/// The column documentation of both files, in Markdown (copied into docs/results.md).
pub const RESULTS_COLUMNS_DOC: &str = r#"### results.csv

One row per **run** step, written and flushed (`fdatasync`) when the step ends, so a crash or
Ctrl-C never loses a finished row. Columns, in this order:

| column | meaning |
|---|---|
| `run_id` | the run directory name: UTC start time `YYYYMMDD-HHMMSS`, plus `-2`, `-3`… if taken |
| `step` | 1-based step index in the plan (`sbsuite plan` shows the same numbers) |
| `name` | step name (the suite's `step_name` template) |
| `variant` | server configuration variant |
| `workload` | workload name, e.g. `oltp_read_only`, `cpu` |
| `threads` | the step's `threads` option |
| *axes…* | one column per other matrix axis, in matrix order (`workload` and `threads` are not repeated); an axis named like a fixed column is written as `axis_<name>` |
| `repetition` | 1-based repetition of this matrix cell |
| `started_at` | step start, RFC 3339 UTC with milliseconds |
| `seconds` | total time of the step as sysbench reports it (4 decimals) |
| `events` | events (sysbench "total number of events") |
| `eps` | events per second |
| `tps` | transactions per second (empty for non-SQL workloads) |
| `qps` | queries per second (reads + writes + other) / seconds (empty for non-SQL workloads) |
| `reads`, `writes`, `other` | queries performed, totals (empty for non-SQL workloads) |
| `errors` | ignored errors, total (empty for non-SQL workloads) |
| `reconnects` | reconnects, total (empty for non-SQL workloads) |
| `lat_min`, `lat_avg`, `lat_p50`, `lat_p95`, `lat_p99`, `lat_max` | event latency in ms |
| `lat_sum` | sum of all event latencies in ms |
| `percentile` | the configured `percentile` option (e.g. `95`) |
| `lat_pct` | latency at `percentile`, ms |
| `fairness_events_stddev` | stddev of events per thread |
| `fairness_time_stddev` | stddev of execution time per thread, seconds |
| `mib_per_s`, `total_mib` | memory: MiB transferred per second and in total |
| `file_reads_ps`, `file_writes_ps`, `file_fsyncs_ps` | fileio: operations per second (sysbench's `File operations:`) |
| `read_mib_per_s`, `written_mib_per_s` | fileio: throughput (sysbench's `Throughput:`) |
| `queue_length`, `concurrency` | `rate` runs: always empty here, filled in intervals.csv |
| `dropped` | `rate` runs: arrivals dropped because every thread was busy and the event queue (131072) was full, i.e. load the run never offered (`0` when all was offered; empty without `rate`) |
| `late` | `latency_limit`: events whose latency (with `rate`, the response time) exceeded the limit; empty without the option |
| `skipped` | `latency_limit` with `rate`: arrivals a thread took when they were already later than the limit, not run (pgbench's *skipped*): events + skipped + dropped are the arrivals of the measured part; empty without both options |
| `headline` | custom workloads with a `headline`: its value, e.g. new_order commits per minute for `tpmC` (named in `headline_name`) |
| `threads_peak` | `max_threads` runs: the most threads that ran events at once (the pool grew from `threads` up to this); else empty |
| `shards` | multi-client runs (`[clients]`): how many clients ran the step (its row is their exact merge; each one's own row is in `shards/<client>/results.csv`); else empty |
| `start_skew_ms` | multi-client runs: the spread of the clients' measured starts in ms (each start estimated from the round trip of its `go`); else empty |
| `tpch_geomean_s` | `tpch` with a finished power test: the geometric mean of its 22 query and 2 refresh times in seconds, each rounded to 0.01 s and at least a thousandth of the longest (TPC-H clause 5.4.1.4); else empty |
| `tpch_power`, `tpch_throughput`, `tpch_qphh` | `tpch`: Power@Size (3600 · SF / that geometric mean), Throughput@Size (S · 22 · 3600 / Ts · SF, S query streams in Ts seconds) and QphH@Size (their geometric mean) as TPC-H clause 5.4 defines them, each when its test finished; else empty |
| `server_fsyncs_per_txn` | the server's fsyncs per transaction over the step: MySQL/MariaDB `Innodb_data_fsyncs` (else `Innodb_os_log_fsyncs`), PostgreSQL `pg_stat_wal.wal_sync` (see server_counters.csv); empty for SQLite, without `[target]`, or when the counters could not be read |
| `server_log_bytes_per_txn` | redo/WAL bytes written per transaction: `Innodb_os_log_written`, `pg_stat_wal.wal_bytes` |
| `server_cpu_ms_per_txn` | CPU ms of the server process (and its children: PostgreSQL's backends) per transaction, when the server runs on this host (a loopback address or a Unix socket) or on `[target] server_host`, and its process could be found |
| `client_cpu_us_per_txn` | CPU µs of sbsuite's own process per transaction (`getrusage`); empty for multi-client steps |
| `server_fsyncs_ps`, `server_log_bytes_ps`, `server_cpu_pct` | intervals.csv only (always empty here): the server's fsyncs and redo/WAL bytes per second and its process's CPU in % of one core, over each interval |
| `connects` | OLTP and custom workloads: connections opened during the measured part — with `connect = "per_transaction"` one per transaction, plus one per reconnect; with `per_worker` the reconnects (`0`: none); empty for other workloads |
| `connect_avg_ms`, `connect_p95_ms`, `connect_max_ms` | their connect time in ms: the client's connect (TCP, TLS, authentication, the driver's session setup), not the statements prepared on the new connection; empty without connects. A multi-client step's p95 is its largest client's |
| `idle_connections` | the idle connections held through the step (`idle_connections`); empty when the option is 0 |
| `idle_dead` | of those, the ones that did not answer `SELECT 1` at the end of the step; empty when the option is 0 or the step was stopped |
| `fault_at_s` | `[[faults]]`: when the step's first fault fired, in seconds from the start of the measured part (after `warmup_time`); every fault's figures are in faults.csv. Empty without faults, or when none fired |
| `fault_error_window_s` | seconds from the first failure after the fault (a lost connection, or ignored errors above the rate before the fault) to service again: the later of the last failure of that burst and the first success after the first failure; `0` when nothing failed |
| `fault_first_ok_s` | seconds from the fault to the first transaction that succeeded after the failures began (after the fault, when nothing failed) |
| `fault_p99_recovered_s` | seconds from the fault until the per-second p99 was back within the fault's `tolerance` of its value before the fault, for 3 one-second windows in a row, and not before the error window ended; empty when it did not come back before the step ended |
| `fault_lost_txn` | transactions the fault cost: the throughput before the fault times the recovery period (`fault_p99_recovered_s`, or to the end of the step) less the transactions finished in it, at least 0 |
| `status` | `ok`, `failed` (engine error, its prepare failed, or a `rate` run dropped arrivals and the suite does not set `rate_overflow = "record"`: the measurements stay, `error` says why) or `interrupted` (stopped by Ctrl-C/SIGTERM, or cut short by `forced_shutdown` with `error` saying so; the measurements cover the part that ran) |
| `error` | the error message when `failed` (or why an interrupted step ended), else empty |
| `knee` | on the run where a `stop_when` sweep stopped: the knee (the last value before the condition) and why, e.g. `threads=64 (tps +3.1% < 5% at threads=128)`; else empty |
| `headline_name` | custom workloads with a `headline`: its name (e.g. `tpmC`), whose value is the `headline` column; else empty |
| `error_codes` | OLTP and custom workloads: the SQL errors of the measured period by code, largest count first, e.g. `1213:40;1205:3` (`client`: an error of the client without a server code); empty when there was none |
| `warmup_s` | seconds run before the measured period and excluded from every measurement: `warmup_time`, or with `warmup_time = "auto"` what the run found (MSER-5 on the per-second throughput, see *Steady state*) |
| `steady` | the stationarity verdict of the measured period's per-second throughput: `yes`, `no` (a significant trend of at least 5 % over the window: OLS slope of 5 s batch means, t-test at 95 %) or `unknown` (under 20 s measured, no events, multi-client steps, imported logs); empty without measurements |
| `trend_pct_per_min` | the fitted throughput trend of the measured period in % of its mean per minute (negative: falling); empty when `steady` is unknown |
| `phase` | empty in a step's own row. A suite with `[[phases]]` writes, after each run step's row (which covers every measured phase), one row per measured phase with its name here: the same step and axes, `threads` the phase's, every measurement the phase's own (the workload's metrics other than `dropped`, `headline` and the cost columns stay on the step's row). `compare`, `report` and the gates read the steps' rows only |
| `target_rate` | a phase's row: the mean of its target rate (`rate`, or the middle of a ramp `[from, to]`), to compare with its `eps`; empty for a closed-loop phase and in a step's row |
| `service_p50`, `service_p95`, `service_p99`, `service_max` | `rate` runs: service time in ms, from the moment a thread took the arrival and began the event to its end (what the server took); the `lat_*` columns of a rate run are the response time, from the arrival's intended start; empty without `rate` |
| `lag_p50`, `lag_p95`, `lag_p99`, `lag_max` | `rate` runs: schedule lag in ms, from the arrival's intended start to the moment a thread took it (the wait for a free thread: response = lag + service, event by event); empty without `rate` |
| `group` | empty in a step's own row. A suite with `[[groups]]` writes, after each run step's row (the exact merge of its groups: counts summed, latency histograms added, `threads` their total), one row per group with its name here: the same step and axes, `workload` and `threads` the group's, every measurement the group's own. `compare`, `report` and the gates read the steps' rows only |

The four `*_per_txn` columns are the cost of a step (#29): read before and after the whole
step (connecting and warm-up included), divided by the step's measured transactions (events for
workloads without transactions). `[suite] server_cost = false` leaves them empty (and the
server columns of intervals.csv).

Number format: plain decimal, trailing zeros trimmed (`1.5`, not `1.5000`); latencies in ms
(connect times too) with 6 decimals (nanosecond resolution), seconds and rates with 4 decimals,
`*_per_txn` with 6. A measurement that
does not exist (a failed step, `tps` of a cpu run, a rate over zero seconds) is an empty cell.

### intervals.csv

One row per interim report (sysbench's `[ 10s ] …` lines): `run_id, step, name, variant, time,
threads, eps, tps, qps, reads_ps, writes_ps, other_ps, lat_pct, percentile, errors_ps,
reconnects_ps`, then the same workload columns as results.csv (`mib_per_s` … `written_mib_per_s`,
`queue_length`, `concurrency`, `dropped`, `late`, `skipped`, `headline`, `threads_peak`,
`shards`, `start_skew_ms`, the four `*_per_txn`, `server_fsyncs_ps`, `server_log_bytes_ps`,
`server_cpu_pct`, the six connection columns and the five fault columns; `late`, `skipped`,
`threads_peak`, `shards`, `start_skew_ms`, the connection and the fault columns always empty),
then `phase` and
`target_rate` (with `[[phases]]`: the phase the interval ends in, and the mean target rate over
the interval, a ramp's exact average, empty when closed loop throughout; else both empty), then
`group` (with `[[groups]]`: each group reports its own intervals, named here; the server columns
go with the first group's). `time` is seconds
since the step started; `*_ps` are per-second rates over the interval; `lat_pct` is the latency
(ms) at `percentile` over the interval; `dropped` counts the arrivals dropped since the step
started.
SQL and workload columns are empty for workloads that do not have them.

The server columns (#29) are read at each tick, on the connection that reads the step's cost:
the server's counters over the interval per second (`server_fsyncs_ps`, `server_log_bytes_ps`:
the counters of `server_fsyncs_per_txn` and `server_log_bytes_per_txn`), its process's CPU in
% of one core (`server_cpu_pct`, above 100 on several cores; when the server runs on this
host), and the four `*_per_txn` over the interval (its deltas divided by its tps times its
length; `client_cpu_us_per_txn` not for multi-client steps). Each interval is the time between
the readings at its two ends; the first starts at the reading taken when the measured part
begins (after `warmup_time`); for a multi-client step, when the last client's clock starts,
so after a `warmup_time` (each client ends its own) its first interval has no server cells. A
reading that fails, or takes over 250 ms (then the step reads no more at its ticks), leaves the
interval's cells empty with a warning; SQLite, no `[target]` and `server_cost = false` leave
them empty.

### histograms/

`histograms/<step>-<name>.hdr`: every run step's event latencies in **nanoseconds**, one HDR
histogram serialized in the V2 deflate format (readable by any HdrHistogram implementation), so
percentiles can be recomputed and runs merged exactly. `<name>` is the step name with every
character other than `A-Z a-z 0-9 . _ -` replaced by `_`. Custom workloads also keep one per
transaction (and statement) in `histograms/<step>-<name>/<transaction>.hdr`, the transaction's
name sanitised the same way (`-2`, `-3`… appended, in the order of its rows in
transactions.csv, when two names become the same).

### server_counters.csv

What each run step cost, in long form: one row per run step × counter, appended when the step
ends (`[suite] server_cost = false`: no file). Columns: `run_id`, `step`, `name`, `variant`
(as in results.csv), `counter`, `before`, `after` (the values read just before and just after
the step), `delta` (`after − before`), `per_txn` (`delta` per transaction of the step, empty
when it has none). The counters:

| counter | what |
|---|---|
| `Innodb_data_fsyncs`, `Innodb_os_log_written`, `Com_commit`, … | MySQL, MariaDB, OceanBase: `SHOW GLOBAL STATUS`, names as the server spells them; fsyncs, redo bytes and writes, data read/written, buffer pool reads vs read requests, row lock waits, commits and rollbacks, bytes sent/received (a name the server lacks is left out) |
| `pg_stat_wal.*`, `pg_stat_database.*`, `pg_stat_bgwriter.*`, `pg_stat_checkpointer.*` | PostgreSQL: WAL records, bytes, writes and syncs; the target database's commits, blocks read/hit, tuples, temp files; the background writer's and checkpointer's buffers and checkpoints (`pg_stat_checkpointer` from PostgreSQL 17) |
| `server_process.cpu_ms` | the server's process CPU in ms (utime + stime from /proc of it and its children, plus its reaped children), when it runs on this host or on `[target] server_host` |
| `host.cpu_busy_ms`, `host.cpu_iowait_ms` | the server's host's CPU (/proc/stat), with the server process |
| `host.disk_reads`, `host.disk_read_bytes`, `host.disk_writes`, `host.disk_write_bytes`, `host.disk_io_ms` | the server's host's whole disks (/proc/diskstats), with the server process |
| `client.cpu_ms` | sbsuite's own CPU (not for multi-client steps), the reading of these counters left out |
| `client.cost_read_cpu_ms` | the CPU sbsuite spent reading these counters (with `server_host`, its ssh or kubectl processes' too), over the run so far: its `delta` is the step's |
| `client.cost_read_wall_ms` | the time sbsuite spent reading these counters, over the run so far: its `delta` is the step's |
| `client.cost_tick_cpu_ms` | of that CPU, the readings at the step's interval ticks (`report_interval`; `before` 0, `after` the step's); no row for a step without ticks |

SQLite has no server counters (it runs inside sbsuite: its cost is `client.cpu_ms`). A suite
reads more with `[suite] server_counters = ["Innodb_log_waits", "pg_stat_database.temp_bytes"]`.
The readings at interval ticks (`report_interval`) are not rows here: their rates are columns of
intervals.csv (one row per step × counter keeps what a row means for whoever sums a step's
deltas, and a long step's ticks would multiply the file by its seconds); their CPU is in
`client.cost_read_cpu_ms` and out of `client.cpu_ms`.
A counter that cannot be read is a warning and no row, never a failed step. PostgreSQL's
statistics reach its views when a backend reports them: after a step the reader waits (at most
1 s) for the step's backends to exit. The counters are the server's, not the step's: anything
else the server does meanwhile is in them.

### transactions.csv

Custom workloads and `tpch` only (absent for the other built-in ones; `tpch`'s rows are its
queries and refresh functions, `power.Q1` …): one row per run step × transaction, and
per statement too with `statement_stats = true`, written and flushed with the step's row in
results.csv. It starts with the columns that identify the step in results.csv (`run_id`, `step`,
`name`, `variant`, `workload`, `threads`, the other matrix axes, `repetition`), so its rows join
the step's row, then:

| column | meaning |
|---|---|
| `transaction` | the transaction's name, or the statement's (`name`, default `<transaction>.<n>`) |
| `kind` | `transaction` or `statement` |
| `count` | committed transactions (statements: executed without error) |
| `errors` | failed ones (an error, or an `expect_rows` mismatch with `on_mismatch = "fail"`) |
| `rollbacks` | deliberate rollbacks (`rollback` probability, `on_mismatch = "rollback"`) |
| `rate` | `count` per second of the step |
| `lat_avg_ms`, `lat_p50_ms`, `lat_p95_ms`, `lat_p99_ms`, `lat_max_ms` | latency of the counted ones in ms, from their histogram (empty when none was counted) |

`sbsuite compare --metric new_order.p95` compares one of them (`TXN.METRIC`, METRIC one of
`count`, `rate`, `errors`, `rollbacks`, `avg`, `p50`, `p95`, `p99`, `max`).

### faults.csv

Suites with `[[faults]]` only: one row per run step × fault, appended when the step ends.
Columns: `run_id`, `step`, `name`, `variant` (as in results.csv), then:

| column | meaning |
|---|---|
| `fault` | the fault's `name` (default `fault1`, `fault2`… in the order of the file) |
| `kind` | `command` or `sql` |
| `at` | its `at`: seconds into the measured part |
| `fired_at_s` | when it really fired (a `sql` fault: when its first statement was sent, after connecting); empty when it did not |
| `status` | `ok`; `failed` (its command exited non-zero or outlived its `timeout`, a statement failed, or its template could not be rendered); `not fired` (the step ended first); `killed` (a stop request, or its statement was still running when the step ended). Anything but `ok` also fails the step's row, with the reason in `error` |
| `first_error_s` | seconds from the fault to the first failure after it; empty when nothing failed |
| `error_window_s`, `first_ok_s`, `p99_recovered_s`, `lost_txn` | as results.csv's `fault_*` columns, for this fault |
| `pre_tps`, `pre_p99_ms` | its reference: transactions per second and the p99 (ms, merged) over the whole seconds before it (at most 10, after the previous fault); empty without one whole second |
| `tolerance_pct` | its `tolerance` |
| `error` | why it is not `ok` |

Every figure is read from samples the collector takes every 0.1 s while a step has faults, so
it is exact to 0.1 s; the p99 is that of 1-second windows that start at the first fault's `at`.
"#;

/// How a run step ended, as written in the `status` column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowStatus {
    Ok,
    Failed,
    Interrupted,
}

impl RowStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RowStatus::Ok => "ok",
            RowStatus::Failed => "failed",
            RowStatus::Interrupted => "interrupted",
        }
    }
}

/// Everything `results.csv` needs about one finished run step.
#[derive(Clone, Copy, Debug)]
pub struct RunRow<'a> {
    pub step: &'a Step,
    pub started_at: DateTime<Utc>,
    pub status: RowStatus,
    /// The measurements; `None` when the step produced none (engine error, skipped run).
    pub outcome: Option<&'a StepOutcome>,
    pub error: Option<&'a str>,
    /// Set on the run where a `stop_when` sweep stopped: the knee and why.
    pub knee: Option<&'a str>,
}

/// The matrix axes that get their own column: every axis except `workload` and `threads` (which
/// are fixed columns), as (header name, axis name).
pub fn extra_axis_columns(axes: &[String]) -> Vec<(String, String)> {
    axes.iter()
        .filter(|a| a.as_str() != "workload" && a.as_str() != "threads")
        .map(|a| {
            let collides = RESULTS_LEADING_COLUMNS.contains(&a.as_str())
                || RESULTS_TRAILING_COLUMNS.contains(&a.as_str());
            let header = if collides {
                format!("{AXIS_COLLISION_PREFIX}{a}")
            } else {
                a.clone()
            };
            (header, a.clone())
        })
        .collect()
}

/// The full header of `results.csv` for a plan with these matrix axes.
pub fn results_columns(axes: &[String]) -> Vec<String> {
    columns_with(&extra_axis_columns(axes))
}

/// The full header of `results.csv` given [`extra_axis_columns`].
pub(crate) fn columns_with(extra_axes: &[(String, String)]) -> Vec<String> {
    RESULTS_LEADING_COLUMNS
        .iter()
        .map(|c| c.to_string())
        .chain(extra_axes.iter().map(|(h, _)| h.clone()))
        .chain(trailing_columns())
        .collect()
}

/// Formats a float with at most `decimals` decimals, trailing zeros trimmed; non-finite values
/// (a rate over zero seconds) become an empty cell rather than `NaN`/`inf`.
pub fn fmt_float(value: f64, decimals: usize) -> String {
    if !value.is_finite() {
        return String::new();
    }
    let mut s = format!("{value:.decimals$}");
    if s.contains('.') {
        let trimmed = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(trimmed);
    }
    if s == "-0" {
        s = "0".into();
    }
    s
}

const SECONDS_DECIMALS: usize = 4;
const RATE_DECIMALS: usize = 4;
const MS_DECIMALS: usize = 6;

fn ms(v: f64) -> String {
    fmt_float(v, MS_DECIMALS)
}

fn rate(count: f64, seconds: f64) -> String {
    if seconds > 0.0 {
        fmt_float(count / seconds, RATE_DECIMALS)
    } else {
        String::new()
    }
}

fn opt_rate(v: Option<f64>) -> String {
    v.map(|v| fmt_float(v, RATE_DECIMALS)).unwrap_or_default()
}

/// The value of a step parameter for a column: the matrix cell first, the resolved option next
/// (an axis may not apply to every workload; then the cell is empty).
fn step_value(step: &Step, key: &str) -> String {
    step.params
        .get(key)
        .or_else(|| step.options.get(key))
        .map(|v| v.to_string())
        .unwrap_or_default()
}

/// The cells that say which step a `results.csv` record belongs to: from `step` to
/// `repetition` (the columns after `run_id`, up to `started_at`).
pub fn step_cells(extra_axes: &[(String, String)], step: &Step) -> Vec<String> {
    let mut cells = Vec::with_capacity(RESULTS_LEADING_COLUMNS.len() + extra_axes.len());
    cells.push(step.index.to_string());
    cells.push(step.name.clone());
    cells.push(step.variant.clone());
    // A step with groups (#31): the workloads it ran.
    cells.push(match step.groups.as_slice() {
        [] => step.workload.clone(),
        groups => crate::plan::groups_workload(groups),
    });
    cells.push(step_value(step, "threads"));
    for (_, axis) in extra_axes {
        cells.push(step_value(step, axis));
    }
    cells.push(step.repetition.to_string());
    cells
}

/// One `results.csv` record, in [`results_columns`] order.
pub fn results_record(run_id: &str, extra_axes: &[(String, String)], row: &RunRow) -> Vec<String> {
    record(run_id, extra_axes, row, None, None)
}

/// The `results.csv` record of worker group `group` of a run step with `[[groups]]` (#31):
/// `row`'s outcome is the group's, its `workload` and `threads` the group's, `group` filled.
pub fn group_record(
    run_id: &str,
    extra_axes: &[(String, String)],
    row: &RunRow,
    group: &crate::plan::StepGroup,
) -> Vec<String> {
    record(run_id, extra_axes, row, None, Some(group))
}

/// The `results.csv` record of phase `phase` of a run step with `[[phases]]` (#30): `row`'s
/// outcome is the phase's, its `threads` the phase's, `phase` and `target_rate` filled.
pub fn phase_record(
    run_id: &str,
    extra_axes: &[(String, String)],
    row: &RunRow,
    phase: &crate::engine::phases::Phase,
) -> Vec<String> {
    record(run_id, extra_axes, row, Some(phase), None)
}

fn record(
    run_id: &str,
    extra_axes: &[(String, String)],
    row: &RunRow,
    phase: Option<&crate::engine::phases::Phase>,
    group: Option<&crate::plan::StepGroup>,
) -> Vec<String> {
    let step = row.step;
    let mut rec = Vec::with_capacity(RESULTS_LEADING_COLUMNS.len() + extra_axes.len() + 25);
    rec.push(run_id.to_string());
    rec.extend(step_cells(extra_axes, step));
    if let Some(p) = phase {
        // `threads`, after `run_id`, `step`, `name`, `variant`, `workload`.
        rec[5] = p.threads.to_string();
    }
    if let Some(g) = group {
        // `workload` and `threads`.
        rec[4] = g.workload.clone();
        rec[5] = g.threads().to_string();
    }
    rec.push(row.started_at.to_rfc3339_opts(SecondsFormat::Millis, true));
    match row.outcome {
        Some(o) => {
            let secs = o.seconds;
            rec.push(fmt_float(secs, SECONDS_DECIMALS));
            rec.push(o.events.to_string());
            rec.push(rate(o.events as f64, secs));
            match &o.sql {
                Some(sql) => {
                    let queries = (sql.reads + sql.writes + sql.other) as f64;
                    rec.push(rate(sql.transactions as f64, secs));
                    rec.push(rate(queries, secs));
                    rec.push(sql.reads.to_string());
                    rec.push(sql.writes.to_string());
                    rec.push(sql.other.to_string());
                    rec.push(sql.errors.to_string());
                    rec.push(sql.reconnects.to_string());
                }
                None => rec.extend(std::iter::repeat_n(String::new(), 7)),
            }
            let l = &o.latency;
            for v in [
                l.min_ms, l.avg_ms, l.p50_ms, l.p95_ms, l.p99_ms, l.max_ms, l.sum_ms,
            ] {
                rec.push(ms(v));
            }
            rec.push(fmt_float(l.percentile, 4));
            rec.push(ms(l.pct_ms));
            rec.push(fmt_float(o.fairness_events_stddev, 2));
            rec.push(fmt_float(o.fairness_time_stddev, SECONDS_DECIMALS));
            rec.extend(metric_cells(&o.metrics));
        }
        None => {
            // seconds … fairness_time_stddev and the metrics: all empty.
            rec.extend(std::iter::repeat_n(String::new(), 21 + METRICS.len()));
        }
    }
    rec.push(row.status.as_str().to_string());
    rec.push(row.error.unwrap_or_default().to_string());
    rec.push(row.knee.unwrap_or_default().to_string());
    rec.push(
        row.outcome
            .filter(|o| metric(&o.metrics, HEADLINE).is_some())
            .and_then(|_| match group {
                Some(g) => g.spec.and_then(headline_of),
                None => step.spec.and_then(headline_of),
            })
            .unwrap_or_default(),
    );
    rec.push(
        row.outcome
            .map(|o| o.error_codes.cell())
            .unwrap_or_default(),
    );
    rec.extend(steady_cells(step, row.outcome));
    match phase {
        Some(p) => {
            rec.push(p.name.clone());
            rec.push(
                p.mean_rate()
                    .map(|r| fmt_float(r, RATE_DECIMALS))
                    .unwrap_or_default(),
            );
        }
        None => rec.extend([String::new(), String::new()]),
    }
    rec.extend(open_loop_cells(
        row.outcome.and_then(|o| o.open_loop.as_ref()),
    ));
    rec.push(group.map(|g| g.name.clone()).unwrap_or_default());
    rec
}

/// `service_p50` … `service_max`, `lag_p50` … `lag_max`: empty without `rate`.
fn open_loop_cells(open_loop: Option<&OpenLoop>) -> [String; 8] {
    let Some(o) = open_loop else {
        return Default::default();
    };
    let (s, l) = (&o.service.summary, &o.lag.summary);
    [
        s.p50_ms, s.p95_ms, s.p99_ms, s.max_ms, l.p50_ms, l.p95_ms, l.p99_ms, l.max_ms,
    ]
    .map(ms)
}

/// `warmup_s`, `steady` and `trend_pct_per_min`. A fixed warmup is the step's option (what a
/// multi-client merge or an imported log ran with, though their outcome does not carry it).
fn steady_cells(step: &Step, outcome: Option<&StepOutcome>) -> [String; 3] {
    let Some(o) = outcome else {
        return Default::default();
    };
    let s = &o.steady;
    // A warmup found at run time, or the timeline's warmup phases.
    let warmup = if s.auto.is_some() || !step.phases.is_empty() {
        s.warmup_s
    } else {
        step.options
            .get("warmup_time")
            .and_then(crate::value::Value::as_f64)
            .unwrap_or(s.warmup_s)
    };
    [
        fmt_float(warmup, SECONDS_DECIMALS),
        s.verdict().as_str().to_string(),
        s.trend
            .map(|t| fmt_float(t.pct_per_min, 2))
            .unwrap_or_default(),
    ]
}

/// The name a custom workload gives its headline (`headline = { name = "tpmC", … }`).
fn headline_of(spec: &crate::engine::spec::WorkloadSpec) -> Option<String> {
    let def = crate::engine::custom::def(spec)?;
    def.headline.as_ref().map(|h| h.name.clone())
}

/// Columns of `transactions.csv` after the identity columns of the step (`run_id` and
/// results.csv's `step` … `repetition`, so its rows join the step's row).
pub const TRANSACTION_COLUMNS: &[&str] = &[
    "transaction",
    "kind",
    "count",
    "errors",
    "rollbacks",
    "rate",
    "lat_avg_ms",
    "lat_p50_ms",
    "lat_p95_ms",
    "lat_p99_ms",
    "lat_max_ms",
];

/// The `kind` cell of a transaction's row and of a statement's row.
pub const KIND_TRANSACTION: &str = "transaction";
pub const KIND_STATEMENT: &str = "statement";

/// The full header of `transactions.csv` given [`extra_axis_columns`]: `run_id`, the columns
/// of [`step_cells`], then [`TRANSACTION_COLUMNS`].
pub fn transactions_columns(extra_axes: &[(String, String)]) -> Vec<String> {
    RESULTS_LEADING_COLUMNS
        .iter()
        .map(|c| c.to_string())
        .chain(extra_axes.iter().map(|(h, _)| h.clone()))
        .chain(["repetition".to_string()])
        .chain(TRANSACTION_COLUMNS.iter().map(|c| c.to_string()))
        .collect()
}

/// One `transactions.csv` record per transaction (and statement) of `outcome`, in
/// [`transactions_columns`] order. Latencies come from each one's histogram (empty cells when
/// it counted nothing); `rate` is `count` per second of the step.
pub fn transaction_records(
    run_id: &str,
    extra_axes: &[(String, String)],
    step: &Step,
    outcome: &StepOutcome,
) -> Vec<Vec<String>> {
    let identity: Vec<String> = std::iter::once(run_id.to_string())
        .chain(step_cells(extra_axes, step))
        .collect();
    outcome
        .transactions
        .iter()
        .map(|t| {
            let mut rec = identity.clone();
            rec.push(t.name.clone());
            rec.push(txn_kind(t).to_string());
            rec.push(t.count.to_string());
            rec.push(t.errors.to_string());
            rec.push(t.rollbacks.to_string());
            rec.push(rate(t.count as f64, outcome.seconds));
            rec.extend(txn_latencies(t));
            rec
        })
        .collect()
}

/// `transaction` or `statement`.
pub fn txn_kind(t: &TxnStats) -> &'static str {
    if t.statement {
        KIND_STATEMENT
    } else {
        KIND_TRANSACTION
    }
}

/// avg, p50, p95, p99 and max in ms from the histogram (ns); empty without a value.
fn txn_latencies(t: &TxnStats) -> Vec<String> {
    let h = &t.histogram;
    if h.is_empty() {
        return vec![String::new(); 5];
    }
    const NS_PER_MS: f64 = 1e6;
    let at = |q: f64| h.value_at_quantile(q).clamp(h.min(), h.max()) as f64 / NS_PER_MS;
    vec![
        ms(h.mean() / NS_PER_MS),
        ms(at(0.5)),
        ms(at(0.95)),
        ms(at(0.99)),
        ms(h.max() as f64 / NS_PER_MS),
    ]
}

/// One `intervals.csv` record, in [`INTERVAL_COLUMNS`] order.
pub fn interval_record(run_id: &str, step: &Step, sample: &IntervalSample) -> Vec<String> {
    let mut rec = vec![
        run_id.to_string(),
        step.index.to_string(),
        step.name.clone(),
        step.variant.clone(),
        fmt_float(sample.time_s, SECONDS_DECIMALS),
        sample.threads.to_string(),
        fmt_float(sample.eps, RATE_DECIMALS),
        opt_rate(sample.tps),
        opt_rate(sample.qps),
        opt_rate(sample.reads_ps),
        opt_rate(sample.writes_ps),
        opt_rate(sample.other_ps),
        ms(sample.lat_pct_ms),
        step_value(step, "percentile"),
        opt_rate(sample.errors_ps),
        opt_rate(sample.reconnects_ps),
    ];
    rec.extend(metric_cells(&sample.metrics));
    rec.push(
        sample
            .phase
            .and_then(|i| step.phases.get(i))
            .map(|p| p.name.clone())
            .unwrap_or_default(),
    );
    rec.push(opt_rate(sample.target_rate));
    rec.push(
        sample
            .group
            .and_then(|i| step.groups.get(i))
            .map(|g| g.name.clone())
            .unwrap_or_default(),
    );
    rec
}

/// An append-only CSV file whose header is written at creation. [`CsvFile::write`] leaves the
/// row in the OS; [`CsvFile::sync`] also forces it to the disk, and is called when a step ends.
pub struct CsvFile {
    path: PathBuf,
    writer: csv::Writer<File>,
}

impl CsvFile {
    /// Creates the file (it must not exist: a run directory is never reused) and writes the
    /// header durably.
    pub fn create<S: AsRef<str>>(path: &Path, header: &[S]) -> Result<Self, ResultsError> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|source| ResultsError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        let mut me = CsvFile {
            path: path.to_path_buf(),
            writer: csv::WriterBuilder::new().from_writer(file),
        };
        me.write(header.iter().map(AsRef::as_ref))?;
        me.sync()?;
        Ok(me)
    }

    /// Opens an existing file for appending (its header is already there).
    pub fn append(path: &Path) -> Result<Self, ResultsError> {
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|source| ResultsError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(CsvFile {
            path: path.to_path_buf(),
            writer: csv::WriterBuilder::new().from_writer(file),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes one record and hands it to the OS (flush), so it survives a crash of this process.
    pub fn write<I, T>(&mut self, record: I) -> Result<(), ResultsError>
    where
        I: IntoIterator<Item = T>,
        T: AsRef<[u8]>,
    {
        self.writer
            .write_record(record)
            .map_err(|source| ResultsError::Csv {
                path: self.path.clone(),
                source,
            })?;
        self.writer.flush().map_err(|source| ResultsError::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// Flushes and `fdatasync`s, so finished rows also survive a crash of the machine.
    pub fn sync(&mut self) -> Result<(), ResultsError> {
        let io = |source| ResultsError::Io {
            path: self.path.clone(),
            source,
        };
        self.writer.flush().map_err(io)?;
        self.writer.get_ref().sync_data().map_err(io)
    }
}
