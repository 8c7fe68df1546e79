//! The catalog of workloads and their options: names, types, sysbench defaults, and which
//! options shape the data a workload prepares.
//!
//! It is plain data so that the planner, `validate`, `plan`, the JSON schema and the help text
//! all read one source of truth. Whether a workload can also *run* in this build is the
//! engine registry's business ([`crate::engine::engine_for`]), not the catalog's.

use crate::value::{Options, Value, parse_size};

/// The type of an option, which decides how raw values are checked and normalised.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Bool,
    Int {
        min: i64,
        max: i64,
    },
    Float {
        min: f64,
        max: f64,
    },
    /// Bytes; accepts sysbench suffixes (`16K`, `2G`) and normalises to an integer.
    Size,
    Str,
    Enum(&'static [&'static str]),
    /// A comma-separated list (sysbench's LIST): `"direct,sync"` or `["direct", "sync"]`;
    /// with `Some(choices)` every item must be one of them. Normalised to a list of strings.
    List(Option<&'static [&'static str]>),
}

impl Kind {
    /// Human description used in errors: "expected {describe}".
    pub fn describe(&self) -> String {
        match self {
            Kind::Bool => "a boolean (true/false, on/off)".into(),
            Kind::Int { min, max } if *max == i64::MAX => format!("an integer >= {min}"),
            Kind::Int { min, max } => format!("an integer from {min} to {max}"),
            Kind::Float { min, max } => format!("a number from {min} to {max}"),
            Kind::Size => "a size (bytes, or a number with K, M, G or T, e.g. \"16K\")".into(),
            Kind::Str => "a string".into(),
            Kind::Enum(choices) => format!("one of {}", choices.join(", ")),
            Kind::List(Some(choices)) => format!("a list of {}", choices.join(", ")),
            Kind::List(None) => "a comma-separated list".into(),
        }
    }

    /// Checks a raw value and returns its normalised form: sizes become bytes, "on"/"off"
    /// become booleans, integral floats become integers. The error says what was expected.
    pub fn coerce(&self, v: &Value) -> Result<Value, String> {
        let found = || {
            format!(
                "expected {}, found {} `{v}`",
                self.describe(),
                v.type_name()
            )
        };
        match self {
            Kind::Bool => match v {
                Value::Bool(b) => Ok(Value::Bool(*b)),
                Value::Int(0) => Ok(Value::Bool(false)),
                Value::Int(1) => Ok(Value::Bool(true)),
                Value::Str(s) => match s.to_ascii_lowercase().as_str() {
                    "on" | "true" | "1" | "yes" => Ok(Value::Bool(true)),
                    "off" | "false" | "0" | "no" => Ok(Value::Bool(false)),
                    _ => Err(found()),
                },
                _ => Err(found()),
            },
            Kind::Int { min, max } => {
                let i = match v {
                    Value::Str(s) => s.trim().parse::<i64>().map_err(|_| found())?,
                    other => other.as_i64().ok_or_else(found)?,
                };
                if i < *min || i > *max {
                    return Err(format!("{i} is out of range: expected {}", self.describe()));
                }
                Ok(Value::Int(i))
            }
            Kind::Float { min, max } => {
                let x = match v {
                    Value::Str(s) => s.trim().parse::<f64>().map_err(|_| found())?,
                    other => other.as_f64().ok_or_else(found)?,
                };
                if !(x >= *min && x <= *max) {
                    return Err(format!("{x} is out of range: expected {}", self.describe()));
                }
                Ok(Value::Float(x))
            }
            Kind::Size => match v {
                Value::Int(i) if *i >= 0 => Ok(Value::Int(*i)),
                Value::Str(s) => {
                    let bytes = parse_size(s)?;
                    i64::try_from(bytes)
                        .map(Value::Int)
                        .map_err(|_| format!("`{s}` is too large"))
                }
                _ => Err(found()),
            },
            Kind::Str => match v {
                Value::Str(s) => Ok(Value::Str(s.clone())),
                Value::Int(_) | Value::Float(_) | Value::Bool(_) => Ok(Value::Str(v.to_string())),
                Value::List(_) => Err(found()),
            },
            Kind::Enum(choices) => match v {
                Value::Str(s) if choices.contains(&s.as_str()) => Ok(Value::Str(s.clone())),
                _ => Err(found()),
            },
            Kind::List(choices) => {
                let items: Vec<String> = match v {
                    Value::List(items) => items.iter().map(Value::to_string).collect(),
                    Value::Str(s) => s
                        .split(',')
                        .map(|i| i.trim().to_string())
                        .filter(|i| !i.is_empty())
                        .collect(),
                    Value::Int(_) | Value::Float(_) => vec![v.to_string()],
                    Value::Bool(_) => return Err(found()),
                };
                if let Some(choices) = choices
                    && let Some(bad) = items.iter().find(|i| !choices.contains(&i.as_str()))
                {
                    return Err(format!(
                        "unknown item `{bad}`: expected {}",
                        self.describe()
                    ));
                }
                Ok(Value::List(items.into_iter().map(Value::Str).collect()))
            }
        }
    }
}

/// One option: its sysbench name (with `_`), type, default and help line.
#[derive(Debug)]
pub struct OptSpec {
    pub name: &'static str,
    pub kind: Kind,
    /// The default in suite-file syntax; `None` means "no value" (optional option).
    pub default: Option<&'static str>,
    pub help: &'static str,
}

impl OptSpec {
    pub fn default_value(&self) -> Option<Value> {
        self.default.map(|d| {
            self.kind
                .coerce(&Value::parse_loose(d))
                .expect("catalog defaults are valid")
        })
    }
}

/// What a workload prepares, so the planner knows which steps can share one prepare.
#[derive(Debug)]
pub struct DataSpec {
    /// Workloads with the same family and the same values of `keys` share one dataset
    /// (e.g. every `oltp_*` workload reads the same `sbtest` tables). `None`: nothing to prepare.
    pub family: Option<&'static str>,
    /// Options whose values shape the data (a new value means a new prepare).
    pub keys: &'static [&'static str],
    /// The workload changes its data (deletes or inserts rows), so each run gets a fresh prepare.
    pub fresh_per_run: bool,
}

#[derive(Debug)]
pub struct WorkloadSpec {
    pub name: &'static str,
    pub summary: &'static str,
    /// Options of this workload besides the [`GENERAL`] ones.
    pub options: &'static [&'static [OptSpec]],
    pub data: DataSpec,
    /// Needs a database: the suite's `[target]`, else the default SQLite file.
    pub needs_target: bool,
}

impl WorkloadSpec {
    /// Every option this workload accepts, general ones first.
    pub fn all_options(&self) -> impl Iterator<Item = &'static OptSpec> {
        GENERAL
            .iter()
            .chain(self.options.iter().flat_map(|group| group.iter()))
    }

    pub fn option(&self, name: &str) -> Option<&'static OptSpec> {
        self.all_options().find(|o| o.name == name)
    }

    /// Whether a run with these options ends without `time` or `events` (sysbench's mutex runs
    /// one event per thread; memory stops after `memory_total_size`).
    pub fn ends_by_itself(&self, options: &crate::value::Options) -> bool {
        match self.name {
            "mutex" => true,
            "memory" => options.uint("memory_total_size") > 0,
            _ => false,
        }
    }

    /// Every option of this workload resolved: the value `given` returns (already normalised by
    /// [`Kind::coerce`]) or else the catalog default; options without either stay unset. The
    /// planner and `sbsuite sysbench` both build a step's options with this one function.
    pub fn resolve_options(&self, given: impl Fn(&str) -> Option<Value>) -> Options {
        let mut options = Options::default();
        for opt in self.all_options() {
            if let Some(v) = given(opt.name).or_else(|| opt.default_value()) {
                options.0.insert(opt.name.to_string(), v);
            }
        }
        options
    }
}

const UNBOUNDED: i64 = i64::MAX;

/// Options every workload understands (sysbench's general options).
pub static GENERAL: &[OptSpec] = &[
    OptSpec {
        name: "threads",
        kind: Kind::Int {
            min: 1,
            max: 100_000,
        },
        default: Some("1"),
        help: "number of worker threads (one database connection each)",
    },
    OptSpec {
        name: "events",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("0"),
        help: "limit for the total number of events, 0 = no limit",
    },
    OptSpec {
        name: "time",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("10"),
        help: "limit for the total execution time in seconds, 0 = no limit",
    },
    OptSpec {
        name: "report_interval",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("0"),
        help: "seconds between intermediate reports, 0 = none",
    },
    OptSpec {
        name: "percentile",
        kind: Kind::Float {
            min: 0.0,
            max: 100.0,
        },
        default: Some("95"),
        help: "latency percentile to report (any value, e.g. 99.9); p50, p95 and p99 are always stored",
    },
    OptSpec {
        name: "forced_shutdown",
        kind: Kind::Str,
        default: Some("off"),
        help: "seconds (N) or percentage of time (N%) to wait after the time limit before forcing shutdown, or 'off'",
    },
    OptSpec {
        name: "thread_stack_size",
        kind: Kind::Size,
        default: Some("64K"),
        help: "size of stack per thread",
    },
    OptSpec {
        name: "rate",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("0"),
        help: "average events per second (Poisson arrivals; latency counts queue time), 0 = unlimited",
    },
    OptSpec {
        name: "report_checkpoints",
        kind: Kind::List(None),
        default: Some("\"\""),
        help: "seconds at which to print a full report and reset the statistics, e.g. \"10,20\"",
    },
    OptSpec {
        name: "histogram",
        kind: Kind::Bool,
        default: Some("false"),
        help: "print the latency histogram in the report",
    },
    OptSpec {
        name: "warmup_time",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("0"),
        help: "seconds to run before measuring; warmup events are excluded from every statistic",
    },
    OptSpec {
        name: "rand_type",
        kind: Kind::Enum(&["uniform", "gaussian", "special", "pareto", "zipfian"]),
        default: Some("special"),
        help: "random numbers distribution",
    },
    OptSpec {
        name: "rand_spec_iter",
        kind: Kind::Int {
            min: 1,
            max: UNBOUNDED,
        },
        default: Some("12"),
        help: "number of iterations for the special and gaussian distributions",
    },
    OptSpec {
        name: "rand_spec_pct",
        kind: Kind::Int { min: 0, max: 100 },
        default: Some("1"),
        help: "percentage of values treated as 'special' (special distribution)",
    },
    OptSpec {
        name: "rand_spec_res",
        kind: Kind::Int { min: 0, max: 100 },
        default: Some("75"),
        help: "percentage of 'special' values to use (special distribution)",
    },
    OptSpec {
        name: "rand_pareto_h",
        kind: Kind::Float {
            min: 0.000001,
            max: 0.999999,
        },
        default: Some("0.2"),
        help: "parameter h for the pareto distribution",
    },
    OptSpec {
        name: "rand_zipfian_exp",
        kind: Kind::Float {
            min: 0.0,
            max: 1000.0,
        },
        default: Some("0.8"),
        help: "shape parameter (exponent) of the zipfian distribution",
    },
    OptSpec {
        name: "rand_seed",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("0"),
        help: "seed for the random number generators; 0 = from the current time. A seed makes every thread's stream reproducible",
    },
    OptSpec {
        name: "debug",
        kind: Kind::Bool,
        default: Some("false"),
        help: "print more debugging info (per-thread statistics)",
    },
    OptSpec {
        name: "validate",
        kind: Kind::Bool,
        default: Some("false"),
        help: "perform validation checks where possible (fileio checksums)",
    },
];

static CPU: &[OptSpec] = &[OptSpec {
    name: "cpu_max_prime",
    kind: Kind::Int {
        min: 1,
        max: UNBOUNDED,
    },
    default: Some("10000"),
    help: "upper limit for primes generator",
}];

static MEMORY: &[OptSpec] = &[
    OptSpec {
        name: "memory_block_size",
        kind: Kind::Size,
        default: Some("1K"),
        help: "size of memory block for test (a power of 2, at least 8)",
    },
    OptSpec {
        name: "memory_total_size",
        kind: Kind::Size,
        default: Some("100G"),
        help: "total size of data to transfer",
    },
    OptSpec {
        name: "memory_scope",
        kind: Kind::Enum(&["global", "local"]),
        default: Some("global"),
        help: "memory access scope",
    },
    OptSpec {
        name: "memory_hugetlb",
        kind: Kind::Bool,
        default: Some("false"),
        help: "allocate memory from HugeTLB pool",
    },
    OptSpec {
        name: "memory_oper",
        kind: Kind::Enum(&["read", "write", "none"]),
        default: Some("write"),
        help: "type of memory operations",
    },
    OptSpec {
        name: "memory_access_mode",
        kind: Kind::Enum(&["seq", "rnd"]),
        default: Some("seq"),
        help: "memory access mode",
    },
];

static THREADS: &[OptSpec] = &[
    OptSpec {
        name: "thread_yields",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1000"),
        help: "number of yields to do per request",
    },
    OptSpec {
        name: "thread_locks",
        kind: Kind::Int {
            min: 1,
            max: UNBOUNDED,
        },
        default: Some("8"),
        help: "number of locks per thread",
    },
];

static MUTEX: &[OptSpec] = &[
    OptSpec {
        name: "mutex_num",
        kind: Kind::Int {
            min: 1,
            max: UNBOUNDED,
        },
        default: Some("4096"),
        help: "total size of mutex array",
    },
    OptSpec {
        name: "mutex_locks",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("50000"),
        help: "number of mutex locks to do per thread",
    },
    OptSpec {
        name: "mutex_loops",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("10000"),
        help: "number of empty loops to do outside mutex lock",
    },
];

/// fileio test modes, in sysbench's order.
pub const FILE_TEST_MODES: &[&str] = &["seqwr", "seqrewr", "seqrd", "rndrd", "rndwr", "rndrw"];

static FILEIO: &[OptSpec] = &[
    OptSpec {
        name: "file_num",
        kind: Kind::Int {
            min: 1,
            max: UNBOUNDED,
        },
        default: Some("128"),
        help: "number of files to create",
    },
    OptSpec {
        name: "file_block_size",
        kind: Kind::Size,
        default: Some("16384"),
        help: "block size to use in all IO operations",
    },
    OptSpec {
        name: "file_total_size",
        kind: Kind::Size,
        default: Some("2G"),
        help: "total size of files to create",
    },
    OptSpec {
        name: "file_test_mode",
        kind: Kind::Enum(FILE_TEST_MODES),
        default: None,
        help: "test mode {seqwr, seqrewr, seqrd, rndrd, rndwr, rndrw} (required for run)",
    },
    OptSpec {
        name: "file_io_mode",
        kind: Kind::Enum(&["sync", "async", "mmap"]),
        default: Some("sync"),
        help: "file operations mode {sync,async,mmap}",
    },
    OptSpec {
        name: "file_async_backlog",
        kind: Kind::Int {
            min: 1,
            max: UNBOUNDED,
        },
        default: Some("128"),
        help: "number of asynchronous operations to queue per thread",
    },
    OptSpec {
        name: "file_extra_flags",
        kind: Kind::List(Some(&["sync", "dsync", "direct"])),
        default: Some("\"\""),
        help: "list of additional flags to use to open files {sync,dsync,direct}",
    },
    OptSpec {
        name: "file_fsync_freq",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("100"),
        help: "do fsync() after this number of requests (0 - don't use fsync())",
    },
    OptSpec {
        name: "file_fsync_all",
        kind: Kind::Bool,
        default: Some("false"),
        help: "do fsync() after each write operation",
    },
    OptSpec {
        name: "file_fsync_end",
        kind: Kind::Bool,
        default: Some("true"),
        help: "do fsync() at the end of test",
    },
    OptSpec {
        name: "file_fsync_mode",
        kind: Kind::Enum(&["fsync", "fdatasync"]),
        default: Some("fsync"),
        help: "which method to use for synchronization {fsync, fdatasync}",
    },
    OptSpec {
        name: "file_merged_requests",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("0"),
        help: "merge at most this number of IO requests if possible (0 - don't merge)",
    },
    OptSpec {
        name: "file_rw_ratio",
        kind: Kind::Float { min: 0.0, max: 1e9 },
        default: Some("1.5"),
        help: "reads/writes ratio for combined test",
    },
    OptSpec {
        name: "file_dir",
        kind: Kind::Str,
        default: Some("."),
        help: "directory for the test files (sbsuite extension; sysbench uses the working directory)",
    },
];

static OLTP_COMMON: &[OptSpec] = &[
    OptSpec {
        name: "tables",
        kind: Kind::Int {
            min: 1,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "number of tables",
    },
    OptSpec {
        name: "table_size",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("10000"),
        help: "number of rows per table",
    },
    OptSpec {
        name: "range_size",
        kind: Kind::Int {
            min: 1,
            max: UNBOUNDED,
        },
        default: Some("100"),
        help: "range size for range SELECT queries",
    },
    OptSpec {
        name: "point_selects",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("10"),
        help: "number of point SELECT queries per transaction",
    },
    OptSpec {
        name: "simple_ranges",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "number of simple range SELECT queries per transaction",
    },
    OptSpec {
        name: "sum_ranges",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "number of SELECT SUM() queries per transaction",
    },
    OptSpec {
        name: "order_ranges",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "number of SELECT ORDER BY queries per transaction",
    },
    OptSpec {
        name: "distinct_ranges",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "number of SELECT DISTINCT queries per transaction",
    },
    OptSpec {
        name: "index_updates",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "number of UPDATE index queries per transaction",
    },
    OptSpec {
        name: "non_index_updates",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "number of UPDATE non-index queries per transaction",
    },
    OptSpec {
        name: "delete_inserts",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "number of DELETE/INSERT combinations per transaction",
    },
    OptSpec {
        name: "range_selects",
        kind: Kind::Bool,
        default: Some("true"),
        help: "enable/disable all range SELECT queries",
    },
    OptSpec {
        name: "auto_inc",
        kind: Kind::Bool,
        default: Some("true"),
        help: "use AUTO_INCREMENT (SERIAL) ids",
    },
    OptSpec {
        name: "skip_trx",
        kind: Kind::Bool,
        default: Some("false"),
        help: "don't start explicit transactions",
    },
    OptSpec {
        name: "reconnect",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("0"),
        help: "reconnect after every N events (0 = never), counted as reconnects",
    },
    OptSpec {
        name: "secondary",
        kind: Kind::Bool,
        default: Some("false"),
        help: "use a secondary index in place of the PRIMARY KEY",
    },
    OptSpec {
        name: "create_secondary",
        kind: Kind::Bool,
        default: Some("true"),
        help: "create a secondary index on k after loading",
    },
    OptSpec {
        name: "mysql_storage_engine",
        kind: Kind::Str,
        default: Some("innodb"),
        help: "storage engine, if MySQL is used",
    },
    OptSpec {
        name: "prewarm",
        kind: Kind::Bool,
        default: Some("false"),
        help: "after prepare, warm the server's caches: ANALYZE TABLE and full scans of the primary key and of k in every table (sysbench's `prewarm` command)",
    },
    OptSpec {
        name: "create_table_options",
        kind: Kind::Str,
        default: Some(""),
        help: "extra CREATE TABLE options",
    },
];

static RANDOM_POINTS: &[OptSpec] = &[OptSpec {
    name: "random_points",
    kind: Kind::Int {
        min: 1,
        max: UNBOUNDED,
    },
    default: Some("10"),
    help: "number of random points in the IN() list",
}];

static RANDOM_RANGES: &[OptSpec] = &[
    OptSpec {
        name: "number_of_ranges",
        kind: Kind::Int {
            min: 1,
            max: UNBOUNDED,
        },
        default: Some("10"),
        help: "number of random BETWEEN ranges",
    },
    OptSpec {
        name: "delta",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("5"),
        help: "size of the BETWEEN ranges",
    },
];

/// The options that shape `sbtest` tables.
const SBTEST_KEYS: &[&str] = &[
    "tables",
    "table_size",
    "auto_inc",
    "secondary",
    "create_secondary",
    "mysql_storage_engine",
    "create_table_options",
];

static OLTP_ONLY: &[&[OptSpec]] = &[OLTP_COMMON];

const fn oltp(name: &'static str, summary: &'static str, fresh_per_run: bool) -> WorkloadSpec {
    WorkloadSpec {
        name,
        summary,
        options: OLTP_ONLY,
        data: DataSpec {
            family: Some("sbtest"),
            keys: SBTEST_KEYS,
            fresh_per_run,
        },
        needs_target: true,
    }
}

const fn system(
    name: &'static str,
    summary: &'static str,
    options: &'static [&'static [OptSpec]],
) -> WorkloadSpec {
    WorkloadSpec {
        name,
        summary,
        options,
        data: DataSpec {
            family: None,
            keys: &[],
            fresh_per_run: false,
        },
        needs_target: false,
    }
}

static CPU_ONLY: &[&[OptSpec]] = &[CPU];
static MEMORY_ONLY: &[&[OptSpec]] = &[MEMORY];
static THREADS_ONLY: &[&[OptSpec]] = &[THREADS];
static MUTEX_ONLY: &[&[OptSpec]] = &[MUTEX];

/// Every workload sbsuite knows, in help order.
pub static WORKLOADS: &[WorkloadSpec] = &[
    system(
        "cpu",
        "CPU performance test (prime numbers by trial division)",
        CPU_ONLY,
    ),
    system("memory", "Memory functions speed test", MEMORY_ONLY),
    system(
        "threads",
        "Threads subsystem performance test (yields under contended locks)",
        THREADS_ONLY,
    ),
    system("mutex", "Mutex performance test", MUTEX_ONLY),
    WorkloadSpec {
        name: "fileio",
        summary: "File I/O test",
        options: &[FILEIO],
        data: DataSpec {
            family: Some("fileio"),
            keys: &["file_num", "file_total_size", "file_dir", "validate"],
            fresh_per_run: false,
        },
        needs_target: false,
    },
    oltp("oltp_read_only", "OLTP read-only transactions", false),
    oltp("oltp_read_write", "OLTP read/write transactions", false),
    oltp("oltp_write_only", "OLTP write-only transactions", false),
    oltp("oltp_point_select", "OLTP point selects", false),
    oltp("oltp_update_index", "OLTP index updates", false),
    oltp("oltp_update_non_index", "OLTP non-index updates", false),
    oltp(
        "oltp_insert",
        "OLTP inserts (rows grow: fresh prepare per run)",
        true,
    ),
    oltp(
        "oltp_delete",
        "OLTP deletes (rows shrink: fresh prepare per run)",
        true,
    ),
    WorkloadSpec {
        name: "select_random_points",
        summary: "random point SELECTs on the k index",
        options: &[OLTP_COMMON, RANDOM_POINTS],
        data: DataSpec {
            family: Some("sbtest"),
            keys: SBTEST_KEYS,
            fresh_per_run: false,
        },
        needs_target: true,
    },
    WorkloadSpec {
        name: "select_random_ranges",
        summary: "random range SELECTs on the k index",
        options: &[OLTP_COMMON, RANDOM_RANGES],
        data: DataSpec {
            family: Some("sbtest"),
            keys: SBTEST_KEYS,
            fresh_per_run: false,
        },
        needs_target: true,
    },
    WorkloadSpec {
        name: "bulk_insert",
        summary: "multi-row INSERTs into one table per thread",
        options: &[],
        data: DataSpec {
            family: Some("bulk_insert"),
            keys: &["threads"],
            fresh_per_run: true,
        },
        needs_target: true,
    },
];

pub fn workload(name: &str) -> Option<&'static WorkloadSpec> {
    WORKLOADS.iter().find(|w| w.name == name)
}

/// Every option name any workload accepts, for "did you mean" suggestions.
pub fn all_option_names() -> impl Iterator<Item = &'static str> {
    let mut names: Vec<&'static str> = WORKLOADS
        .iter()
        .flat_map(|w| w.all_options().map(|o| o.name))
        .collect();
    names.sort_unstable();
    names.dedup();
    names.into_iter()
}

/// Finds an option spec by name in any workload (types agree across workloads).
pub fn any_option(name: &str) -> Option<&'static OptSpec> {
    WORKLOADS.iter().find_map(|w| w.option(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_is_valid_for_its_kind() {
        for w in WORKLOADS {
            for o in w.all_options() {
                if let Some(d) = o.default {
                    assert!(
                        o.kind.coerce(&Value::parse_loose(d)).is_ok(),
                        "{}.{}",
                        w.name,
                        o.name
                    );
                }
            }
        }
    }

    #[test]
    fn coerce_normalises() {
        assert_eq!(
            Kind::Size.coerce(&Value::Str("16K".into())),
            Ok(Value::Int(16384))
        );
        assert_eq!(
            Kind::Bool.coerce(&Value::Str("on".into())),
            Ok(Value::Bool(true))
        );
        let threads = GENERAL[0].kind;
        assert!(
            threads
                .coerce(&Value::Int(0))
                .unwrap_err()
                .contains("out of range")
        );
        assert!(
            threads
                .coerce(&Value::Str("x".into()))
                .unwrap_err()
                .contains("expected an integer")
        );
    }
}
