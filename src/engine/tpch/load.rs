//! Generating the TPC-H data in process and streaming it into the database: the prepare's
//! load, and the rows of the refresh functions.
//!
//! Shape, and why:
//! * Rows come from the `tpchgen` crate (dbgen's generators ported to Rust, row for row the
//!   same data), whose generators split a table into `parts` that start anywhere without
//!   generating what comes before. A table of `n` rows is cut into parts of about
//!   [`PART_ROWS`] rows; `prepare_threads` loader threads, each with its own connection, take
//!   parts from one queue, largest tables first, so the big tables load on every connection at
//!   once and the small ones fill the gaps. No file is written and no row is kept: each
//!   generated row is written into the reused cells of [`Connection::load_rows`], which is each
//!   driver's fastest path (`COPY … FROM STDIN` on PostgreSQL, prepared multi-row INSERTs in
//!   large transactions on MySQL/MariaDB/OceanBase, prepared INSERTs in one transaction on
//!   SQLite).
//! * Decimals travel as exact text (`21168.23`) to MySQL and PostgreSQL and as doubles to
//!   SQLite's REAL columns; dates as ISO text.
//! * The refresh functions (clause 2.5) use rows of the same generators: refresh set `k`
//!   inserts the orders of part `k mod 1000 + 1` of 1,000 (SF × 1,500 orders, as RF1 inserts)
//!   and their line items, with keys moved into the gaps of dbgen's sparse key space (keys
//!   `32·i + j`, `j` < 8, are the loaded ones; RF1's are `+ 8`, so they never meet them), and
//!   RF2 deletes those same orders. That is the spec's amount of work per refresh pair, and the
//!   data is the same after each pair as before it, so runs can repeat on one prepare (the
//!   spec's RF2 deletes old orders instead, so its database drifts from run to run).

use std::fmt::{Display, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};

use tpchgen::decimal::TPCHDecimal;
use tpchgen::generators::{
    CustomerGenerator, LineItem, LineItemGenerator, NationGenerator, Order, OrderGenerator,
    PartGenerator, PartSuppGenerator, RegionGenerator, SupplierGenerator,
};

use super::schema::{self, Table};
use crate::db::{Cell, Connection, SqlError};

/// Rows per part of a table (the unit a loader thread takes).
pub const PART_ROWS: u64 = 50_000;

/// Parts of the refresh sets: part `k` of the orders is refresh set `k`'s.
const REFRESH_PARTS: i32 = 1000;

/// Added to the keys of the orders of a refresh set (see the module doc).
const REFRESH_KEY_OFFSET: i64 = 8;

/// One unit of the load: part `part` (1-based) of `parts` of table `table` (an index into
/// [`schema::TABLES`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Job {
    pub table: usize,
    pub part: i32,
    pub parts: i32,
}

/// Rows of table `t` at scale factor `sf` (clause 4.2.5), for the split into parts.
pub fn rows(t: &Table, sf: f64) -> u64 {
    let base: f64 = match t.name {
        "nation" => return 25,
        "region" => return 5,
        "part" => 200_000.0,
        "supplier" => 10_000.0,
        "partsupp" => 800_000.0,
        "customer" => 150_000.0,
        "orders" => 1_500_000.0,
        _ => 6_000_000.0,
    };
    (base * sf).max(1.0) as u64
}

/// The load's units, largest first.
pub fn jobs(sf: f64) -> Vec<Job> {
    let mut jobs = Vec::new();
    let mut order: Vec<usize> = (0..schema::TABLES.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(rows(schema::TABLES[i], sf)));
    for table in order {
        let t = schema::TABLES[table];
        // nation and region are one part whatever the scale; lineitem is cut along its orders.
        let parts = match t.name {
            "nation" | "region" => 1,
            _ => rows(t, sf).div_ceil(PART_ROWS).clamp(1, i32::MAX as u64) as i32,
        };
        jobs.extend((1..=parts).map(|part| Job { table, part, parts }));
    }
    jobs
}

/// How values are written into cells: decimals as doubles (SQLite) or as exact text.
#[derive(Clone, Copy)]
struct Cells {
    float: bool,
}

impl Cells {
    fn dec(self, c: &mut Cell, v: TPCHDecimal) {
        if self.float {
            *c = Cell::Float(v.0 as f64 / 100.0);
        } else {
            text(c, v);
        }
    }
}

/// Writes `v` as the cell's text, reusing the cell's string.
fn text(c: &mut Cell, v: impl Display) {
    if let Cell::Text(s) = c {
        s.clear();
        let _ = write!(s, "{v}");
    } else {
        *c = Cell::Text(v.to_string());
    }
}

/// Streams `iter`'s rows into `t` through [`Connection::load_rows`]; returns early (without
/// an error) once `stop` is set.
fn stream<T>(
    conn: &mut dyn Connection,
    t: &Table,
    mut iter: impl Iterator<Item = T>,
    write: impl Fn(&T, &mut [Cell]),
    stop: &AtomicBool,
) -> Result<u64, SqlError> {
    let cols = t.column_names();
    let mut n = 0u64;
    conn.load_rows(t.name, &cols, &mut |cells| {
        n += 1;
        if n.is_multiple_of(4096) && stop.load(Ordering::Relaxed) {
            return false;
        }
        match iter.next() {
            Some(r) => {
                write(&r, cells);
                true
            }
            None => false,
        }
    })
}

/// Loads one unit of the prepare; returns the rows loaded.
pub fn load_job(
    conn: &mut dyn Connection,
    job: Job,
    sf: f64,
    float: bool,
    stop: &AtomicBool,
) -> Result<u64, SqlError> {
    let t = schema::TABLES[job.table];
    let c = Cells { float };
    let (part, parts) = (job.part, job.parts);
    match t.name {
        "nation" => stream(
            conn,
            t,
            NationGenerator::new(sf, part, parts).iter(),
            |r, x| {
                x[0] = Cell::Int(r.n_nationkey);
                text(&mut x[1], r.n_name);
                x[2] = Cell::Int(r.n_regionkey);
                text(&mut x[3], r.n_comment);
            },
            stop,
        ),
        "region" => stream(
            conn,
            t,
            RegionGenerator::new(sf, part, parts).iter(),
            |r, x| {
                x[0] = Cell::Int(r.r_regionkey);
                text(&mut x[1], r.r_name);
                text(&mut x[2], r.r_comment);
            },
            stop,
        ),
        "part" => stream(
            conn,
            t,
            PartGenerator::new(sf, part, parts).iter(),
            |r, x| {
                x[0] = Cell::Int(r.p_partkey);
                text(&mut x[1], &r.p_name);
                text(&mut x[2], r.p_mfgr);
                text(&mut x[3], r.p_brand);
                text(&mut x[4], r.p_type);
                x[5] = Cell::Int(r.p_size.into());
                text(&mut x[6], r.p_container);
                c.dec(&mut x[7], r.p_retailprice);
                text(&mut x[8], r.p_comment);
            },
            stop,
        ),
        "supplier" => stream(
            conn,
            t,
            SupplierGenerator::new(sf, part, parts).iter(),
            |r, x| {
                x[0] = Cell::Int(r.s_suppkey);
                text(&mut x[1], r.s_name);
                text(&mut x[2], &r.s_address);
                x[3] = Cell::Int(r.s_nationkey);
                text(&mut x[4], &r.s_phone);
                c.dec(&mut x[5], r.s_acctbal);
                text(&mut x[6], &r.s_comment);
            },
            stop,
        ),
        "partsupp" => stream(
            conn,
            t,
            PartSuppGenerator::new(sf, part, parts).iter(),
            |r, x| {
                x[0] = Cell::Int(r.ps_partkey);
                x[1] = Cell::Int(r.ps_suppkey);
                x[2] = Cell::Int(r.ps_availqty.into());
                c.dec(&mut x[3], r.ps_supplycost);
                text(&mut x[4], r.ps_comment);
            },
            stop,
        ),
        "customer" => stream(
            conn,
            t,
            CustomerGenerator::new(sf, part, parts).iter(),
            |r, x| {
                x[0] = Cell::Int(r.c_custkey);
                text(&mut x[1], r.c_name);
                text(&mut x[2], &r.c_address);
                x[3] = Cell::Int(r.c_nationkey);
                text(&mut x[4], &r.c_phone);
                c.dec(&mut x[5], r.c_acctbal);
                text(&mut x[6], r.c_mktsegment);
                text(&mut x[7], r.c_comment);
            },
            stop,
        ),
        "orders" => stream(
            conn,
            t,
            OrderGenerator::new(sf, part, parts).iter(),
            |r, x| write_order(c, r, 0, x),
            stop,
        ),
        _ => stream(
            conn,
            t,
            LineItemGenerator::new(sf, part, parts).iter(),
            |r, x| write_lineitem(c, r, 0, x),
            stop,
        ),
    }
}

fn write_order(c: Cells, r: &Order<'_>, key_offset: i64, x: &mut [Cell]) {
    x[0] = Cell::Int(r.o_orderkey + key_offset);
    x[1] = Cell::Int(r.o_custkey);
    text(&mut x[2], r.o_orderstatus);
    c.dec(&mut x[3], r.o_totalprice);
    text(&mut x[4], r.o_orderdate);
    text(&mut x[5], r.o_orderpriority);
    text(&mut x[6], r.o_clerk);
    x[7] = Cell::Int(r.o_shippriority.into());
    text(&mut x[8], r.o_comment);
}

fn write_lineitem(c: Cells, r: &LineItem<'_>, key_offset: i64, x: &mut [Cell]) {
    x[0] = Cell::Int(r.l_orderkey + key_offset);
    x[1] = Cell::Int(r.l_partkey);
    x[2] = Cell::Int(r.l_suppkey);
    x[3] = Cell::Int(r.l_linenumber.into());
    x[4] = Cell::Int(r.l_quantity);
    c.dec(&mut x[5], r.l_extendedprice);
    c.dec(&mut x[6], r.l_discount);
    c.dec(&mut x[7], r.l_tax);
    text(&mut x[8], r.l_returnflag);
    text(&mut x[9], r.l_linestatus);
    text(&mut x[10], r.l_shipdate);
    text(&mut x[11], r.l_commitdate);
    text(&mut x[12], r.l_receiptdate);
    text(&mut x[13], r.l_shipinstruct);
    text(&mut x[14], r.l_shipmode);
    text(&mut x[15], r.l_comment);
}

/// One refresh set: what RF1 inserts and RF2 deletes (see the module doc).
#[derive(Clone, Copy, Debug)]
pub struct RefreshSet {
    part: i32,
}

impl RefreshSet {
    /// Refresh set `k` (0-based: the power test's is 0, the throughput test's 1..=S).
    pub fn new(k: usize) -> RefreshSet {
        RefreshSet {
            part: (k % REFRESH_PARTS as usize) as i32 + 1,
        }
    }

    /// The order keys RF1 inserts (and RF2 deletes).
    pub fn keys(self, sf: f64) -> Vec<i64> {
        OrderGenerator::new(sf, self.part, REFRESH_PARTS)
            .iter()
            .map(|o| o.o_orderkey + REFRESH_KEY_OFFSET)
            .collect()
    }

    /// The first order key of the set (the one an interrupted RF1 surely wrote).
    pub fn first_key(self, sf: f64) -> Option<i64> {
        OrderGenerator::new(sf, self.part, REFRESH_PARTS)
            .iter()
            .next()
            .map(|o| o.o_orderkey + REFRESH_KEY_OFFSET)
    }

    /// RF1: the set's orders, then their line items; returns the rows inserted.
    pub fn insert(self, conn: &mut dyn Connection, sf: f64, float: bool) -> Result<u64, SqlError> {
        let c = Cells { float };
        let never = AtomicBool::new(false);
        let orders = stream(
            conn,
            &schema::ORDERS,
            OrderGenerator::new(sf, self.part, REFRESH_PARTS).iter(),
            |r, x| write_order(c, r, REFRESH_KEY_OFFSET, x),
            &never,
        )?;
        let items = stream(
            conn,
            &schema::LINEITEM,
            LineItemGenerator::new(sf, self.part, REFRESH_PARTS).iter(),
            |r, x| write_lineitem(c, r, REFRESH_KEY_OFFSET, x),
            &never,
        )?;
        Ok(orders + items)
    }

    /// RF2: deletes the set's line items and orders, in one transaction opened with `begin`,
    /// [`DELETE_KEYS`] keys a statement; returns the rows deleted.
    pub fn delete(self, conn: &mut dyn Connection, sf: f64, begin: &str) -> Result<u64, SqlError> {
        let keys = self.keys(sf);
        conn.query(begin)?;
        let r = (|| {
            let mut deleted = 0;
            for chunk in keys.chunks(DELETE_KEYS) {
                let list = chunk
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(",");
                deleted += conn
                    .query(&format!(
                        "DELETE FROM lineitem WHERE l_orderkey IN ({list})"
                    ))?
                    .affected;
                deleted += conn
                    .query(&format!("DELETE FROM orders WHERE o_orderkey IN ({list})"))?
                    .affected;
            }
            Ok(deleted)
        })();
        match r {
            Ok(n) => conn.query("COMMIT").map(|_| n),
            Err(e) => {
                let _ = conn.query("ROLLBACK");
                Err(e)
            }
        }
    }
}

/// Order keys per DELETE of RF2.
const DELETE_KEYS: usize = 1000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_cover_every_table_largest_first() {
        let j = jobs(1.0);
        assert_eq!(schema::TABLES[j[0].table].name, "lineitem");
        assert_eq!(j.iter().filter(|x| x.table == 7).count(), 120);
        assert_eq!(j.iter().filter(|x| x.table == 0).count(), 1);
        let small = jobs(0.01);
        assert_eq!(small.len(), 2 + 1 + 1 + 1 + 1 + 1 + 1 + 1);
    }

    #[test]
    fn refresh_keys_fall_between_the_loaded_keys() {
        let loaded: std::collections::HashSet<i64> = OrderGenerator::new(0.01, 1, 1)
            .iter()
            .map(|o| o.o_orderkey)
            .collect();
        let keys = RefreshSet::new(3).keys(0.01);
        assert_eq!(keys.len(), 15);
        assert!(
            keys.iter()
                .all(|k| !loaded.contains(k) && (8..16).contains(&(k % 32)))
        );
        assert_ne!(keys, RefreshSet::new(4).keys(0.01));
    }
}
