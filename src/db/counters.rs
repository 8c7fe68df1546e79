//! The server's own counters that say what a run step cost it (#29): which ones each database
//! has, how they are read, and how a suite adds to them.
//!
//! Why it is shaped this way:
//! - **Which counters is data**: one table per database ([`sources`]), each source a query
//!   that answers `(name, value)` rows and the counters kept from it. MySQL-protocol servers
//!   (MySQL, MariaDB, OceanBase) answer `SHOW GLOBAL STATUS`; a name a server lacks (OceanBase
//!   has few of InnoDB's) is simply absent from the result, never an error. PostgreSQL's
//!   statistics views are turned into rows by `json_each_text(row_to_json(…))`, so a column
//!   that a version renamed or dropped (`pg_stat_bgwriter` lost its checkpoint columns to
//!   `pg_stat_checkpointer` in 17) is missing rather than a failed query. SQLite runs in the
//!   client's process: it has no server, no counters (its cost is the client CPU).
//! - **The derived per-transaction columns** of results.csv name, per database, the counters
//!   they come from ([`Derived`]): the first one the server reported wins, so MySQL 8's
//!   `Innodb_data_fsyncs` and an older server's `Innodb_os_log_fsyncs` both fill
//!   `server_fsyncs_per_txn`.
//! - **A suite adds counters by name** (`[suite] server_counters`): a `SHOW GLOBAL STATUS`
//!   name for MySQL, `VIEW.COLUMN` of one of the read views for PostgreSQL; [`check_name`]
//!   says what is wrong with one before anything runs.
//! - **Reading is cheap and never fails a step**: one short query per source, values that are
//!   not numbers (timestamps, `ON`) skipped; the caller turns a failed source into a warning
//!   and empty cells ([`read`] returns what it could read and why the rest failed).
//!
//! Where this hangs: [`profile`] takes the [`Driver`]; once server flavors exist (MySQL,
//! MariaDB, OceanBase behind one driver) the table belongs to the flavor.

use super::{Connection, Driver};

/// One query that answers `(name, value)` rows, and the counters kept from it.
#[derive(Debug)]
pub struct Source {
    /// The prefix of its counters' names (`pg_stat_wal` gives `pg_stat_wal.wal_sync`); empty
    /// for MySQL's global status, whose names are kept as the server spells them.
    pub prefix: &'static str,
    /// The query. `{names}` stands for the wanted names, quoted and comma-separated (a
    /// filter the server applies, so the answer stays small).
    pub sql: &'static str,
    /// Asked when `sql` fails (a server whose `SHOW GLOBAL STATUS` takes no `WHERE`): the
    /// names are then filtered here.
    pub fallback_sql: Option<&'static str>,
    /// The counters kept by default (without the prefix).
    pub counters: &'static [&'static str],
    /// A source some versions lack (`pg_stat_checkpointer` before PostgreSQL 17): its failure
    /// is not worth a warning.
    pub optional: bool,
}

/// A column of results.csv computed from counters: the first of `from` that the server
/// reported, per transaction; and its intervals.csv column per second (`per_s`, filled at
/// each interval tick).
#[derive(Debug)]
pub struct Derived {
    pub column: &'static str,
    pub per_s: &'static str,
    pub from: &'static [&'static str],
}

/// results.csv: fsyncs of the server per transaction.
pub const FSYNCS_PER_TXN: &str = "server_fsyncs_per_txn";
/// results.csv: redo/WAL bytes written per transaction.
pub const LOG_BYTES_PER_TXN: &str = "server_log_bytes_per_txn";
/// intervals.csv: fsyncs of the server per second over the interval.
pub const FSYNCS_PS: &str = "server_fsyncs_ps";
/// intervals.csv: redo/WAL bytes written per second over the interval.
pub const LOG_BYTES_PS: &str = "server_log_bytes_ps";

const MYSQL: &[Source] = &[Source {
    prefix: "",
    sql: "SHOW GLOBAL STATUS WHERE Variable_name IN ({names})",
    fallback_sql: Some("SHOW GLOBAL STATUS"),
    counters: &[
        "Innodb_data_fsyncs",
        "Innodb_os_log_fsyncs",
        "Innodb_os_log_written",
        "Innodb_log_writes",
        "Innodb_log_waits",
        "Innodb_data_read",
        "Innodb_data_written",
        "Innodb_data_reads",
        "Innodb_data_writes",
        "Innodb_buffer_pool_reads",
        "Innodb_buffer_pool_read_requests",
        "Innodb_buffer_pool_write_requests",
        "Innodb_pages_written",
        "Innodb_row_lock_waits",
        "Innodb_row_lock_time",
        "Innodb_rows_read",
        "Innodb_rows_inserted",
        "Innodb_rows_updated",
        "Innodb_rows_deleted",
        "Com_commit",
        "Com_rollback",
        "Handler_commit",
        "Handler_rollback",
        "Questions",
        "Bytes_sent",
        "Bytes_received",
        "Binlog_bytes_written",
        "Created_tmp_disk_tables",
    ],
    optional: false,
}];

const MYSQL_DERIVED: &[Derived] = &[
    Derived {
        column: FSYNCS_PER_TXN,
        per_s: FSYNCS_PS,
        from: &["Innodb_data_fsyncs", "Innodb_os_log_fsyncs"],
    },
    Derived {
        column: LOG_BYTES_PER_TXN,
        per_s: LOG_BYTES_PS,
        from: &["Innodb_os_log_written"],
    },
];

/// The view's one row as `(column, value)` rows.
macro_rules! pg_view {
    ($view:literal, $filter:literal) => {
        concat!(
            "SELECT key, value FROM json_each_text((SELECT row_to_json(s) FROM ",
            $view,
            " s",
            $filter,
            "))"
        )
    };
}

const PGSQL: &[Source] = &[
    Source {
        prefix: "pg_stat_wal",
        sql: pg_view!("pg_stat_wal", ""),
        fallback_sql: None,
        counters: &[
            "wal_records",
            "wal_fpi",
            "wal_bytes",
            "wal_buffers_full",
            "wal_write",
            "wal_sync",
            "wal_write_time",
            "wal_sync_time",
        ],
        optional: false,
    },
    Source {
        prefix: "pg_stat_database",
        sql: pg_view!("pg_stat_database", " WHERE datname = current_database()"),
        fallback_sql: None,
        counters: &[
            "xact_commit",
            "xact_rollback",
            "blks_read",
            "blks_hit",
            "tup_returned",
            "tup_fetched",
            "tup_inserted",
            "tup_updated",
            "tup_deleted",
            "conflicts",
            "deadlocks",
            "temp_files",
            "temp_bytes",
            "blk_read_time",
            "blk_write_time",
        ],
        optional: false,
    },
    Source {
        prefix: "pg_stat_bgwriter",
        sql: pg_view!("pg_stat_bgwriter", ""),
        fallback_sql: None,
        counters: &[
            "checkpoints_timed",
            "checkpoints_req",
            "checkpoint_write_time",
            "checkpoint_sync_time",
            "buffers_checkpoint",
            "buffers_clean",
            "maxwritten_clean",
            "buffers_backend",
            "buffers_backend_fsync",
            "buffers_alloc",
        ],
        optional: false,
    },
    Source {
        prefix: "pg_stat_checkpointer",
        sql: pg_view!("pg_stat_checkpointer", ""),
        fallback_sql: None,
        counters: &[
            "num_timed",
            "num_requested",
            "write_time",
            "sync_time",
            "buffers_written",
        ],
        optional: true,
    },
];

const PGSQL_DERIVED: &[Derived] = &[
    Derived {
        column: FSYNCS_PER_TXN,
        per_s: FSYNCS_PS,
        from: &["pg_stat_wal.wal_sync"],
    },
    Derived {
        column: LOG_BYTES_PER_TXN,
        per_s: LOG_BYTES_PS,
        from: &["pg_stat_wal.wal_bytes"],
    },
];

/// What one database offers: its counters, the columns derived from them, and how to find
/// its server's process.
#[derive(Debug)]
pub struct Profile {
    pub sources: &'static [Source],
    pub derived: &'static [Derived],
    /// PostgreSQL's statistics reach the views when a backend reports them (at the latest
    /// when it exits): this query counts the client backends of the target database other
    /// than the reader, before a step and again after it until the step's have exited and
    /// reported.
    pub settle_sql: Option<&'static str>,
    /// The fallback way to find the server process, and the names that process may have
    /// (`/proc/PID/comm`), so that a pid of another machine is never taken for this one's.
    pub pid_query: Option<(PidQuery, &'static [&'static str])>,
}

/// How to find the server's process when it runs on this host and its listening socket
/// cannot be matched to a process (a server of another user, seen without root).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PidQuery {
    /// The query answers the path of the server's pid file (MySQL's `@@pid_file`).
    PidFile(&'static str),
    /// The query answers the pid of the reader's backend, a child of the server's main
    /// process (PostgreSQL's postmaster).
    BackendParent(&'static str),
}

const MYSQL_PROFILE: Profile = Profile {
    sources: MYSQL,
    derived: MYSQL_DERIVED,
    settle_sql: None,
    pid_query: Some((
        PidQuery::PidFile("SELECT @@pid_file"),
        &["mariadbd", "mysqld", "observer"],
    )),
};

const PGSQL_PROFILE: Profile = Profile {
    sources: PGSQL,
    derived: PGSQL_DERIVED,
    settle_sql: Some(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
         AND pid <> pg_backend_pid() AND backend_type = 'client backend'",
    ),
    pid_query: Some((
        PidQuery::BackendParent("SELECT pg_backend_pid()"),
        &["postgres", "postmaster"],
    )),
};

/// SQLite runs inside sbsuite: no server, no counters.
const SQLITE_PROFILE: Profile = Profile {
    sources: &[],
    derived: &[],
    settle_sql: None,
    pid_query: None,
};

/// What `driver`'s server offers (nothing for SQLite).
pub fn profile(driver: Driver) -> &'static Profile {
    match driver {
        Driver::Mysql => &MYSQL_PROFILE,
        Driver::Pgsql => &PGSQL_PROFILE,
        Driver::Sqlite => &SQLITE_PROFILE,
    }
}

/// The sources of `driver`'s counters (none for SQLite).
pub fn sources(driver: Driver) -> &'static [Source] {
    profile(driver).sources
}

/// Whether `name` can be a counter of `driver` added by a suite (a status name where the
/// server has one unprefixed source, else `VIEW.COLUMN` of a view read); the error says what
/// a name looks like there.
pub fn check_name(driver: Driver, name: &str) -> Result<(), String> {
    let word = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let sources = sources(driver);
    if sources.is_empty() {
        return Err(format!(
            "`{name}`: SQLite has no server counters (it runs inside sbsuite; its cost is the \
             client CPU): remove [suite] server_counters"
        ));
    }
    if sources.iter().any(|s| s.prefix.is_empty()) {
        return match word(name) {
            true => Ok(()),
            false => Err(format!(
                "`{name}` is not a status variable name: write it as SHOW GLOBAL STATUS lists \
                 it, e.g. \"Innodb_log_waits\" (letters, digits and `_`)"
            )),
        };
    }
    let views: Vec<&str> = sources.iter().map(|s| s.prefix).collect();
    match name.split_once('.') {
        Some((view, column)) if views.contains(&view) && word(column) => Ok(()),
        _ => Err(format!(
            "`{name}` is not VIEW.COLUMN of a view sbsuite reads: write e.g. \
             \"{}.{}\" (views: {})",
            sources[0].prefix,
            sources[0].counters.first().copied().unwrap_or("COLUMN"),
            views.join(", ")
        )),
    }
}

/// The counters to read from one server: the built-in ones and a suite's additions.
#[derive(Clone, Debug)]
pub struct CounterSet {
    pub driver: Driver,
    /// Per source (same order as [`sources`]): the full names kept.
    wanted: Vec<Vec<String>>,
    /// Per source: its `fallback_sql` is used (its `sql` failed once).
    fallback: Vec<bool>,
}

impl CounterSet {
    /// The built-in counters of `driver` plus `extra` (names checked by [`check_name`]; one
    /// of another database is ignored).
    pub fn new(driver: Driver, extra: &[String]) -> CounterSet {
        let wanted = sources(driver)
            .iter()
            .map(|s| {
                let mut names: Vec<String> =
                    s.counters.iter().map(|c| full_name(s.prefix, c)).collect();
                for e in extra {
                    let mine = match s.prefix {
                        "" => !e.contains('.'),
                        p => e.strip_prefix(p).is_some_and(|r| r.starts_with('.')),
                    };
                    if mine && !names.iter().any(|n| n.eq_ignore_ascii_case(e)) {
                        names.push(e.clone());
                    }
                }
                names
            })
            .collect();
        CounterSet {
            driver,
            fallback: vec![false; sources(driver).len()],
            wanted,
        }
    }

    /// Whether there is anything to read.
    pub fn is_empty(&self) -> bool {
        self.wanted.iter().all(Vec::is_empty)
    }
}

fn full_name(prefix: &str, name: &str) -> String {
    match prefix {
        "" => name.to_string(),
        p => format!("{p}.{name}"),
    }
}

/// One read of the counters: the values read, and per failed source why.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reading {
    pub values: Vec<(String, f64)>,
    pub failed: Vec<String>,
}

/// Reads `set` on `conn`. A source that fails is named in [`Reading::failed`] (an optional
/// one only when its failure is not "it does not exist"), the others are still read.
pub fn read(conn: &mut dyn Connection, set: &mut CounterSet) -> Reading {
    let mut out = Reading::default();
    for (i, source) in sources(set.driver).iter().enumerate() {
        let wanted = &set.wanted[i];
        if wanted.is_empty() {
            continue;
        }
        let quoted: Vec<String> = wanted
            .iter()
            .map(|n| format!("'{}'", n.replace('\'', "''")))
            .collect();
        let sql = match (set.fallback[i], source.fallback_sql) {
            (true, Some(f)) => f.to_string(),
            _ => source.sql.replace("{names}", &quoted.join(",")),
        };
        let rows = match conn.query_rows(&sql) {
            Err(_) if !set.fallback[i] && source.fallback_sql.is_some() => {
                set.fallback[i] = true;
                conn.query_rows(source.fallback_sql.unwrap_or_default())
            }
            r => r,
        };
        match rows {
            Ok(rows) => out.values.extend(parse_rows(source.prefix, &rows, wanted)),
            Err(e) if source.optional => {
                let _ = e;
            }
            Err(e) => out.failed.push(format!(
                "{}: {e}",
                match source.prefix {
                    "" => "SHOW GLOBAL STATUS",
                    p => p,
                }
            )),
        }
    }
    out
}

/// The wanted counters among `(name, value)` rows: names matched without regard to case
/// (MySQL's are), kept as `wanted` spells them; values that are not numbers are skipped.
pub fn parse_rows(
    prefix: &str,
    rows: &[Vec<Option<String>>],
    wanted: &[String],
) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for row in rows {
        let (Some(Some(name)), Some(Some(value))) = (row.first(), row.get(1)) else {
            continue;
        };
        let name = full_name(prefix, name);
        let Some(w) = wanted.iter().find(|w| w.eq_ignore_ascii_case(&name)) else {
            continue;
        };
        if let Some(v) = parse_value(value) {
            out.push((w.clone(), v));
        }
    }
    out
}

/// A counter's value: a finite number, else `None` (`ON`, a timestamp, `NULL`).
pub fn parse_value(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(n: &str, v: &str) -> Vec<Option<String>> {
        vec![Some(n.into()), Some(v.into())]
    }

    #[test]
    fn rows_keep_the_wanted_numeric_counters_by_any_case() {
        let set = CounterSet::new(Driver::Mysql, &["Innodb_log_waits".into(), "x_y".into()]);
        let wanted = &set.wanted[0];
        let rows = vec![
            row("INNODB_DATA_FSYNCS", "12"),
            row("Innodb_os_log_written", "1.5e3"),
            row("Uptime", "99"),
            row("x_y", "ON"),
            vec![Some("Com_commit".into()), None],
        ];
        assert_eq!(
            parse_rows("", &rows, wanted),
            vec![
                ("Innodb_data_fsyncs".to_string(), 12.0),
                ("Innodb_os_log_written".to_string(), 1500.0),
            ]
        );
    }

    #[test]
    fn pg_names_carry_their_view_and_extras_go_to_their_view() {
        let set = CounterSet::new(
            Driver::Pgsql,
            &[
                "pg_stat_database.temp_files".into(),
                "pg_stat_wal.stats_reset".into(),
            ],
        );
        assert!(set.wanted[0].contains(&"pg_stat_wal.wal_sync".to_string()));
        assert!(set.wanted[0].contains(&"pg_stat_wal.stats_reset".to_string()));
        // Already a default: not twice.
        let temp = set.wanted[1]
            .iter()
            .filter(|n| *n == "pg_stat_database.temp_files")
            .count();
        assert_eq!(temp, 1);
        let rows = vec![
            row("wal_sync", "7"),
            row("stats_reset", "2024-01-01 00:00:00+00"),
        ];
        assert_eq!(
            parse_rows("pg_stat_wal", &rows, &set.wanted[0]),
            vec![("pg_stat_wal.wal_sync".to_string(), 7.0)]
        );
    }

    #[test]
    fn names_are_checked_per_database() {
        assert!(check_name(Driver::Mysql, "Innodb_log_waits").is_ok());
        let e = check_name(Driver::Mysql, "Innodb log'waits").unwrap_err();
        assert!(e.contains("SHOW GLOBAL STATUS"), "{e}");
        assert!(check_name(Driver::Pgsql, "pg_stat_database.temp_files").is_ok());
        let e = check_name(Driver::Pgsql, "pg_stat_io.reads").unwrap_err();
        assert!(e.contains("pg_stat_wal, pg_stat_database"), "{e}");
        assert!(e.contains("e.g. \"pg_stat_wal.wal_records\""), "{e}");
        assert!(check_name(Driver::Pgsql, "wal_sync").is_err());
        assert!(
            check_name(Driver::Sqlite, "x")
                .unwrap_err()
                .contains("SQLite")
        );
    }

    #[test]
    fn values_are_finite_numbers() {
        assert_eq!(parse_value(" 42 "), Some(42.0));
        assert_eq!(parse_value("NaN"), None);
        assert_eq!(parse_value("OFF"), None);
        assert_eq!(parse_value("-3.5"), Some(-3.5));
    }

    #[test]
    fn every_derived_column_reads_a_default_counter() {
        for driver in [Driver::Mysql, Driver::Pgsql] {
            let set = CounterSet::new(driver, &[]);
            for d in profile(driver).derived {
                for f in d.from {
                    assert!(
                        set.wanted.iter().flatten().any(|w| w == f),
                        "{driver:?}: {f} of {} is read",
                        d.column
                    );
                }
            }
        }
        assert!(CounterSet::new(Driver::Sqlite, &[]).is_empty());
    }
}
