//! Latency statistics shared by every workload engine.
//!
//! Two kinds of histogram live here, on purpose:
//!
//! * [`WorkerStats`] is owned by one worker thread and holds an exact HDR histogram
//!   (nanoseconds, 3 significant digits) plus exact min/max/sum. Nothing else touches it until
//!   the worker has finished, so recording takes no lock. The collector merges them with
//!   `Histogram::add` for the final report and the stored histogram.
//! * [`IntervalSlot`] is the part of a worker's statistics the collector reads *while* the run
//!   goes on (interim `[ Ns ]` lines): relaxed atomics with a single writer, and sysbench's own
//!   1024-bucket log histogram ([`log_histogram`]), so interim percentiles match sysbench's
//!   bucket representatives exactly.
//!
//! * `--histogram` is printed from the merged HDR histogram converted to the same 1024 log
//!   buckets ([`log_histogram::from_hdr`]), so it covers exactly the events of the report
//!   (after warmup, since the last checkpoint).
//!
//! [`summary`] turns finished workers into the numbers of the final report ([`LatencySummary`],
//! threads fairness). Nothing here knows the engines: they import `stats`, never the reverse.

pub mod log_histogram;
pub mod steady;
pub mod summary;
mod worker;

pub use log_histogram::{AtomicLogHistogram, BUCKETS};
pub use summary::{
    Fairness, LatencySummary, fairness, latency_from_parts, latency_summary,
    mean_and_population_stddev, merge,
};
pub use worker::{IntervalSlot, OpenLoopStats, SIGFIG, WorkerStats};
