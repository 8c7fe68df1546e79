//! The eight TPC-H tables (TPC-H 2.18, clause 1.4) as each database creates them, their keys
//! and the indexes built after the load.
//!
//! Types follow the spec: identifiers are integers (order keys 64-bit, as they pass 2³¹ from
//! SF 300 on), money and quantities `DECIMAL(15,2)`, fixed text `CHAR(n)`, variable text
//! `VARCHAR(n)`, dates `DATE`. SQLite has none of these: it keeps dates as ISO text (which
//! compares in date order) and decimals as REAL, so its sums are doubles; the oracle test
//! compares answers with a tolerance for that. Primary keys are declared with the table (the
//! clustered key of InnoDB, loaded in key order per part); the foreign-key columns that the
//! queries join or filter on get plain indexes after the load (clause 1.4.2.3 allows indexes
//! on key columns), and every table is analysed so that the planners know the data.

/// The SQL dialect of the target: the one place that tells the three apart by the driver's
/// name (MySQL, MariaDB and OceanBase all speak `mysql`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sql {
    Mysql,
    Pgsql,
    Sqlite,
}

impl Sql {
    pub fn of(target: &crate::db::Target) -> Sql {
        match target.driver.name() {
            "pgsql" => Sql::Pgsql,
            "sqlite" => Sql::Sqlite,
            _ => Sql::Mysql,
        }
    }

    /// Whether decimals are loaded as doubles (SQLite's REAL columns) rather than as exact text.
    pub fn float_decimals(self) -> bool {
        self == Sql::Sqlite
    }
}

/// A column type of the spec.
#[derive(Clone, Copy, Debug)]
pub enum Ty {
    Int,
    /// An order key: 64-bit.
    Big,
    Dec,
    Char(u16),
    Var(u16),
    Date,
}

impl Ty {
    fn sql(self, sql: Sql) -> String {
        match (self, sql) {
            (Ty::Int | Ty::Big, Sql::Sqlite) => "INTEGER".into(),
            (Ty::Dec, Sql::Sqlite) => "REAL".into(),
            (Ty::Char(_) | Ty::Var(_) | Ty::Date, Sql::Sqlite) => "TEXT".into(),
            (Ty::Int, _) => "INTEGER".into(),
            (Ty::Big, _) => "BIGINT".into(),
            (Ty::Dec, _) => "DECIMAL(15,2)".into(),
            (Ty::Char(n), _) => format!("CHAR({n})"),
            (Ty::Var(n), _) => format!("VARCHAR({n})"),
            (Ty::Date, _) => "DATE".into(),
        }
    }
}

/// One table: name, columns in load order, primary key.
#[derive(Debug)]
pub struct Table {
    pub name: &'static str,
    pub columns: &'static [(&'static str, Ty)],
    pub key: &'static [&'static str],
}

impl Table {
    /// Column names, as [`crate::db::Connection::load_rows`] takes them.
    pub fn column_names(&self) -> Vec<String> {
        self.columns.iter().map(|(c, _)| c.to_string()).collect()
    }

    /// The CREATE TABLE statement (no `IF NOT EXISTS`: a prepare refuses tables that are
    /// there before it creates any).
    pub fn create(&self, sql: Sql) -> String {
        let cols: Vec<String> = self
            .columns
            .iter()
            .map(|(c, t)| format!("{c} {} NOT NULL", t.sql(sql)))
            .collect();
        format!(
            "CREATE TABLE {} ({}, PRIMARY KEY ({}))",
            self.name,
            cols.join(", "),
            self.key.join(", ")
        )
    }
}

use Ty::{Big, Char, Date, Dec, Int, Var};

pub const NATION: Table = Table {
    name: "nation",
    columns: &[
        ("n_nationkey", Int),
        ("n_name", Char(25)),
        ("n_regionkey", Int),
        ("n_comment", Var(152)),
    ],
    key: &["n_nationkey"],
};

pub const REGION: Table = Table {
    name: "region",
    columns: &[
        ("r_regionkey", Int),
        ("r_name", Char(25)),
        ("r_comment", Var(152)),
    ],
    key: &["r_regionkey"],
};

pub const PART: Table = Table {
    name: "part",
    columns: &[
        ("p_partkey", Int),
        ("p_name", Var(55)),
        ("p_mfgr", Char(25)),
        ("p_brand", Char(10)),
        ("p_type", Var(25)),
        ("p_size", Int),
        ("p_container", Char(10)),
        ("p_retailprice", Dec),
        ("p_comment", Var(23)),
    ],
    key: &["p_partkey"],
};

pub const SUPPLIER: Table = Table {
    name: "supplier",
    columns: &[
        ("s_suppkey", Int),
        ("s_name", Char(25)),
        ("s_address", Var(40)),
        ("s_nationkey", Int),
        ("s_phone", Char(15)),
        ("s_acctbal", Dec),
        ("s_comment", Var(101)),
    ],
    key: &["s_suppkey"],
};

pub const PARTSUPP: Table = Table {
    name: "partsupp",
    columns: &[
        ("ps_partkey", Int),
        ("ps_suppkey", Int),
        ("ps_availqty", Int),
        ("ps_supplycost", Dec),
        ("ps_comment", Var(199)),
    ],
    key: &["ps_partkey", "ps_suppkey"],
};

pub const CUSTOMER: Table = Table {
    name: "customer",
    columns: &[
        ("c_custkey", Int),
        ("c_name", Var(25)),
        ("c_address", Var(40)),
        ("c_nationkey", Int),
        ("c_phone", Char(15)),
        ("c_acctbal", Dec),
        ("c_mktsegment", Char(10)),
        ("c_comment", Var(117)),
    ],
    key: &["c_custkey"],
};

pub const ORDERS: Table = Table {
    name: "orders",
    columns: &[
        ("o_orderkey", Big),
        ("o_custkey", Int),
        ("o_orderstatus", Char(1)),
        ("o_totalprice", Dec),
        ("o_orderdate", Date),
        ("o_orderpriority", Char(15)),
        ("o_clerk", Char(15)),
        ("o_shippriority", Int),
        ("o_comment", Var(79)),
    ],
    key: &["o_orderkey"],
};

pub const LINEITEM: Table = Table {
    name: "lineitem",
    columns: &[
        ("l_orderkey", Big),
        ("l_partkey", Int),
        ("l_suppkey", Int),
        ("l_linenumber", Int),
        ("l_quantity", Dec),
        ("l_extendedprice", Dec),
        ("l_discount", Dec),
        ("l_tax", Dec),
        ("l_returnflag", Char(1)),
        ("l_linestatus", Char(1)),
        ("l_shipdate", Date),
        ("l_commitdate", Date),
        ("l_receiptdate", Date),
        ("l_shipinstruct", Char(25)),
        ("l_shipmode", Char(10)),
        ("l_comment", Var(44)),
    ],
    key: &["l_orderkey", "l_linenumber"],
};

/// The eight tables, in the order prepare creates them (and cleanup drops them).
pub const TABLES: [&Table; 8] = [
    &NATION, &REGION, &PART, &SUPPLIER, &PARTSUPP, &CUSTOMER, &ORDERS, &LINEITEM,
];

/// The indexes built after the load: (name, table, columns). Names start with `tpch_` so that
/// they do not meet a user's own in the schema-wide namespaces of PostgreSQL and SQLite; a
/// table's indexes go with it when cleanup drops it.
pub const INDEXES: [(&str, &str, &str); 6] = [
    ("tpch_l_part_supp", "lineitem", "l_partkey, l_suppkey"),
    ("tpch_o_cust", "orders", "o_custkey"),
    ("tpch_ps_supp", "partsupp", "ps_suppkey"),
    ("tpch_c_nation", "customer", "c_nationkey"),
    ("tpch_s_nation", "supplier", "s_nationkey"),
    ("tpch_n_region", "nation", "n_regionkey"),
];

/// The statement that refreshes a table's planner statistics after the load.
pub fn analyze(table: &str, sql: Sql) -> String {
    match sql {
        Sql::Mysql => format!("ANALYZE TABLE {table}"),
        Sql::Pgsql | Sql::Sqlite => format!("ANALYZE {table}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_statements_per_dialect() {
        assert_eq!(
            REGION.create(Sql::Mysql),
            "CREATE TABLE region (r_regionkey INTEGER NOT NULL, r_name CHAR(25) NOT NULL, \
             r_comment VARCHAR(152) NOT NULL, PRIMARY KEY (r_regionkey))"
        );
        let l = LINEITEM.create(Sql::Sqlite);
        assert!(
            l.contains("l_shipdate TEXT NOT NULL") && l.contains("l_tax REAL"),
            "{l}"
        );
        assert!(
            l.ends_with("PRIMARY KEY (l_orderkey, l_linenumber))"),
            "{l}"
        );
        assert!(
            ORDERS
                .create(Sql::Pgsql)
                .contains("o_orderkey BIGINT NOT NULL")
        );
        for (_, table, cols) in INDEXES {
            let t = TABLES.iter().find(|t| t.name == table).expect("a table");
            for c in cols.split(", ") {
                assert!(t.columns.iter().any(|(n, _)| *n == c), "{table}.{c}");
            }
        }
    }
}
