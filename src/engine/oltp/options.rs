//! The options of the OLTP scripts — the tables every `oltp_*` spec lists (sysbench's
//! `oltp_common.lua` options, plus those of select_random_points/ranges) — and [`Shape`], their
//! typed form, read once per step by [`Shape::new`].

use super::Kind;
use crate::engine::EngineError;
use crate::engine::config::UNBOUNDED;
use crate::engine::option::{Kind as OptKind, OptSpec, Reader};

/// The options that shape `sbtest` tables (a new value means a new prepare).
pub const SBTEST_KEYS: &[&str] = &[
    "tables",
    "table_size",
    "auto_inc",
    "secondary",
    "create_secondary",
    "mysql_storage_engine",
    "create_table_options",
];

/// Options of every OLTP script (sysbench's `oltp_common.lua`).
pub static OLTP_COMMON: &[OptSpec] = &[
    OptSpec {
        name: "tables",
        kind: OptKind::Int {
            min: 1,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "how many sbtest tables",
    },
    OptSpec {
        name: "table_size",
        kind: OptKind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("10000"),
        help: "rows in each table",
    },
    OptSpec {
        name: "range_size",
        kind: OptKind::Int {
            min: 1,
            max: UNBOUNDED,
        },
        default: Some("100"),
        help: "rows each range SELECT covers",
    },
    OptSpec {
        name: "point_selects",
        kind: OptKind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("10"),
        help: "primary-key lookups per transaction",
    },
    OptSpec {
        name: "simple_ranges",
        kind: OptKind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "plain BETWEEN SELECTs per transaction",
    },
    OptSpec {
        name: "sum_ranges",
        kind: OptKind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "SUM(k) range SELECTs per transaction",
    },
    OptSpec {
        name: "order_ranges",
        kind: OptKind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "sorted (ORDER BY c) range SELECTs per transaction",
    },
    OptSpec {
        name: "distinct_ranges",
        kind: OptKind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "DISTINCT c range SELECTs per transaction",
    },
    OptSpec {
        name: "index_updates",
        kind: OptKind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "UPDATEs of the indexed column k per transaction",
    },
    OptSpec {
        name: "non_index_updates",
        kind: OptKind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "UPDATEs of the unindexed column c per transaction",
    },
    OptSpec {
        name: "delete_inserts",
        kind: OptKind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("1"),
        help: "DELETE-then-INSERT pairs per transaction",
    },
    OptSpec {
        name: "range_selects",
        kind: OptKind::Bool,
        default: Some("true"),
        help: "off skips all four kinds of range SELECT",
    },
    OptSpec {
        name: "auto_inc",
        kind: OptKind::Bool,
        default: Some("true"),
        help: "use AUTO_INCREMENT (SERIAL) ids",
    },
    OptSpec {
        name: "skip_trx",
        kind: OptKind::Bool,
        default: Some("false"),
        help: "send statements in autocommit mode, without BEGIN/COMMIT",
    },
    OptSpec {
        name: "reconnect",
        kind: OptKind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("0"),
        help: "reconnect after every N events (0 = never), counted as reconnects",
    },
    OptSpec {
        name: "secondary",
        kind: OptKind::Bool,
        default: Some("false"),
        help: "make id a plain (secondary) index rather than the PRIMARY KEY",
    },
    OptSpec {
        name: "create_secondary",
        kind: OptKind::Bool,
        default: Some("true"),
        help: "create a secondary index on k after loading",
    },
    OptSpec {
        name: "mysql_storage_engine",
        kind: OptKind::Str,
        default: Some("innodb"),
        help: "ENGINE of the tables on MySQL and MariaDB",
    },
    OptSpec {
        name: "prewarm",
        kind: OptKind::Bool,
        default: Some("false"),
        help: "after prepare, warm the server's caches: ANALYZE TABLE and full scans of the primary key and of k in every table (sysbench's `prewarm` command)",
    },
    OptSpec {
        name: "create_table_options",
        kind: OptKind::Str,
        default: Some(""),
        help: "extra CREATE TABLE options",
    },
];

/// The options of select_random_points besides [`OLTP_COMMON`].
pub static RANDOM_POINTS: &[OptSpec] = &[OptSpec {
    name: "random_points",
    kind: OptKind::Int {
        min: 1,
        max: UNBOUNDED,
    },
    default: Some("10"),
    help: "values in each SELECT's IN() list",
}];

/// The options of select_random_ranges besides [`OLTP_COMMON`].
pub static RANDOM_RANGES: &[OptSpec] = &[
    OptSpec {
        name: "number_of_ranges",
        kind: OptKind::Int {
            min: 1,
            max: UNBOUNDED,
        },
        default: Some("10"),
        help: "BETWEEN ranges OR-ed together in each SELECT",
    },
    OptSpec {
        name: "delta",
        kind: OptKind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("5"),
        help: "width of each BETWEEN range",
    },
];

/// The options of the OLTP scripts that shape events and data.
#[derive(Clone, Debug)]
pub struct Shape {
    pub tables: usize,
    pub table_size: u64,
    pub range_size: u64,
    pub point_selects: u64,
    pub simple_ranges: u64,
    pub sum_ranges: u64,
    pub order_ranges: u64,
    pub distinct_ranges: u64,
    pub index_updates: u64,
    pub non_index_updates: u64,
    pub delete_inserts: u64,
    pub range_selects: bool,
    pub auto_inc: bool,
    pub skip_trx: bool,
    pub secondary: bool,
    pub create_secondary: bool,
    pub storage_engine: String,
    pub table_options: String,
    /// Warm the caches at the end of `prepare` (option `prewarm`).
    pub prewarm: bool,
    /// Option `reconnect`: a worker reconnects after every this many events (0 = never).
    pub reconnect_every: u64,
    /// `random_points` of select_random_points, `number_of_ranges` of select_random_ranges
    /// (0 for the other scripts, which do not have these options).
    pub special_count: usize,
    /// `delta` of select_random_ranges.
    pub delta: u64,
}

impl Shape {
    /// The typed configuration of script `kind`: its options, read once per step.
    pub fn new(o: &Reader<'_>, kind: Kind) -> Result<Shape, EngineError> {
        let tables = usize::try_from(o.uint("tables")?).unwrap_or(usize::MAX);
        if tables == 0 {
            return Err(EngineError::Failed(
                "option `tables` is 0: use at least 1".into(),
            ));
        }
        Ok(Shape {
            tables,
            table_size: o.uint("table_size")?,
            range_size: o.uint("range_size")?,
            point_selects: o.uint("point_selects")?,
            simple_ranges: o.uint("simple_ranges")?,
            sum_ranges: o.uint("sum_ranges")?,
            order_ranges: o.uint("order_ranges")?,
            distinct_ranges: o.uint("distinct_ranges")?,
            index_updates: o.uint("index_updates")?,
            non_index_updates: o.uint("non_index_updates")?,
            delete_inserts: o.uint("delete_inserts")?,
            range_selects: o.flag("range_selects")?,
            auto_inc: o.flag("auto_inc")?,
            skip_trx: o.flag("skip_trx")?,
            secondary: o.flag("secondary")?,
            create_secondary: o.flag("create_secondary")?,
            storage_engine: o.text("mysql_storage_engine")?.to_string(),
            table_options: o.text("create_table_options")?.to_string(),
            prewarm: o.flag("prewarm")?,
            reconnect_every: o.uint("reconnect")?,
            special_count: match kind {
                Kind::RandomPoints => o.uint("random_points")?.max(1) as usize,
                Kind::RandomRanges => o.uint("number_of_ranges")?.max(1) as usize,
                _ => 0,
            },
            delta: match kind {
                Kind::RandomRanges => o.uint("delta")?,
                _ => 0,
            },
        })
    }
}
