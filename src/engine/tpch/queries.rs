//! The 22 TPC-H queries (TPC-H 2.18, clause 2.4) as each database takes them, with a
//! stream's substitution parameters in place.
//!
//! One text per query for every database: the parameters arrive as literals computed in Rust
//! ([`super::params`]), so the only differences left are written through [`Sql`]: a date
//! literal (`date '…'`; SQLite keeps dates as ISO text), the year of a date, and Q13's and
//! Q15's shapes. Q15's view is a common table expression (the spec's variant B allows it), so
//! a query stream never creates objects; Q13's derived table names its columns inside (MySQL
//! and MariaDB take no column list after the alias). Row limits (`LIMIT`) are the same in all
//! three.

use super::params::{Date, Params};
use super::schema::Sql;

/// The text of query `n` (1..=22) with `p`'s parameters at scale factor `sf` (Q11's fraction
/// is 0.0001 / SF).
pub fn query(n: u8, p: &Params, sf: f64, sql: Sql) -> String {
    let d = |x: Date| match sql {
        Sql::Sqlite => format!("'{x}'"),
        Sql::Mysql | Sql::Pgsql => format!("date '{x}'"),
    };
    let year = |col: &str| match sql {
        Sql::Sqlite => format!("cast(substr({col}, 1, 4) as integer)"),
        Sql::Mysql | Sql::Pgsql => format!("extract(year from {col})"),
    };
    let list = |v: &[i64]| {
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let codes = p
        .q22_codes
        .iter()
        .map(|c| format!("'{c}'"))
        .collect::<Vec<_>>()
        .join(", ");
    match n {
        1 => format!(
            "select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty, \
             sum(l_extendedprice) as sum_base_price, \
             sum(l_extendedprice * (1 - l_discount)) as sum_disc_price, \
             sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge, \
             avg(l_quantity) as avg_qty, avg(l_extendedprice) as avg_price, \
             avg(l_discount) as avg_disc, count(*) as count_order \
             from lineitem where l_shipdate <= {} \
             group by l_returnflag, l_linestatus order by l_returnflag, l_linestatus",
            d(Date::end_of_data().minus_days(p.q1_delta))
        ),
        2 => format!(
            "select s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment \
             from part, supplier, partsupp, nation, region \
             where p_partkey = ps_partkey and s_suppkey = ps_suppkey and p_size = {size} \
             and p_type like '%{ty}' and s_nationkey = n_nationkey \
             and n_regionkey = r_regionkey and r_name = '{region}' \
             and ps_supplycost = (select min(ps_supplycost) \
               from partsupp, supplier, nation, region \
               where p_partkey = ps_partkey and s_suppkey = ps_suppkey \
               and s_nationkey = n_nationkey and n_regionkey = r_regionkey \
               and r_name = '{region}') \
             order by s_acctbal desc, n_name, s_name, p_partkey limit 100",
            size = p.q2_size,
            ty = p.q2_type,
            region = p.q2_region
        ),
        3 => format!(
            "select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, \
             o_orderdate, o_shippriority \
             from customer, orders, lineitem \
             where c_mktsegment = '{}' and c_custkey = o_custkey and l_orderkey = o_orderkey \
             and o_orderdate < {date} and l_shipdate > {date} \
             group by l_orderkey, o_orderdate, o_shippriority \
             order by revenue desc, o_orderdate limit 10",
            p.q3_segment,
            date = d(p.q3_date)
        ),
        4 => format!(
            "select o_orderpriority, count(*) as order_count from orders \
             where o_orderdate >= {} and o_orderdate < {} \
             and exists (select * from lineitem \
               where l_orderkey = o_orderkey and l_commitdate < l_receiptdate) \
             group by o_orderpriority order by o_orderpriority",
            d(p.q4_date),
            d(p.q4_date.plus_months(3))
        ),
        5 => format!(
            "select n_name, sum(l_extendedprice * (1 - l_discount)) as revenue \
             from customer, orders, lineitem, supplier, nation, region \
             where c_custkey = o_custkey and l_orderkey = o_orderkey and l_suppkey = s_suppkey \
             and c_nationkey = s_nationkey and s_nationkey = n_nationkey \
             and n_regionkey = r_regionkey and r_name = '{}' \
             and o_orderdate >= {} and o_orderdate < {} \
             group by n_name order by revenue desc",
            p.q5_region,
            d(p.q5_date),
            d(p.q5_date.plus_months(12))
        ),
        6 => format!(
            "select sum(l_extendedprice * l_discount) as revenue from lineitem \
             where l_shipdate >= {} and l_shipdate < {} \
             and l_discount between 0.{:02} and 0.{:02} and l_quantity < {}",
            d(p.q6_date),
            d(p.q6_date.plus_months(12)),
            p.q6_discount - 1,
            p.q6_discount + 1,
            p.q6_quantity
        ),
        7 => format!(
            "select supp_nation, cust_nation, l_year, sum(volume) as revenue \
             from (select n1.n_name as supp_nation, n2.n_name as cust_nation, \
               {} as l_year, l_extendedprice * (1 - l_discount) as volume \
               from supplier, lineitem, orders, customer, nation n1, nation n2 \
               where s_suppkey = l_suppkey and o_orderkey = l_orderkey \
               and c_custkey = o_custkey and s_nationkey = n1.n_nationkey \
               and c_nationkey = n2.n_nationkey \
               and ((n1.n_name = '{a}' and n2.n_name = '{b}') \
                 or (n1.n_name = '{b}' and n2.n_name = '{a}')) \
               and l_shipdate between {} and {}) as shipping \
             group by supp_nation, cust_nation, l_year \
             order by supp_nation, cust_nation, l_year",
            year("l_shipdate"),
            d(Date::ymd(1995, 1, 1)),
            d(Date::ymd(1996, 12, 31)),
            a = p.q7_nations[0],
            b = p.q7_nations[1]
        ),
        8 => format!(
            "select o_year, sum(case when nation = '{}' then volume else 0 end) / sum(volume) \
             as mkt_share \
             from (select {} as o_year, l_extendedprice * (1 - l_discount) as volume, \
               n2.n_name as nation \
               from part, supplier, lineitem, orders, customer, nation n1, nation n2, region \
               where p_partkey = l_partkey and s_suppkey = l_suppkey \
               and l_orderkey = o_orderkey and o_custkey = c_custkey \
               and c_nationkey = n1.n_nationkey and n1.n_regionkey = r_regionkey \
               and r_name = '{}' and s_nationkey = n2.n_nationkey \
               and o_orderdate between {} and {} and p_type = '{}') as all_nations \
             group by o_year order by o_year",
            p.q8_nation,
            year("o_orderdate"),
            p.q8_region,
            d(Date::ymd(1995, 1, 1)),
            d(Date::ymd(1996, 12, 31)),
            p.q8_type
        ),
        9 => format!(
            "select nation, o_year, sum(amount) as sum_profit \
             from (select n_name as nation, {} as o_year, \
               l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity as amount \
               from part, supplier, lineitem, partsupp, orders, nation \
               where s_suppkey = l_suppkey and ps_suppkey = l_suppkey \
               and ps_partkey = l_partkey and p_partkey = l_partkey \
               and o_orderkey = l_orderkey and s_nationkey = n_nationkey \
               and p_name like '%{}%') as profit \
             group by nation, o_year order by nation, o_year desc",
            year("o_orderdate"),
            p.q9_color
        ),
        10 => format!(
            "select c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) as revenue, \
             c_acctbal, n_name, c_address, c_phone, c_comment \
             from customer, orders, lineitem, nation \
             where c_custkey = o_custkey and l_orderkey = o_orderkey \
             and o_orderdate >= {} and o_orderdate < {} and l_returnflag = 'R' \
             and c_nationkey = n_nationkey \
             group by c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment \
             order by revenue desc limit 20",
            d(p.q10_date),
            d(p.q10_date.plus_months(3))
        ),
        11 => format!(
            "select ps_partkey, sum(ps_supplycost * ps_availqty) as value \
             from partsupp, supplier, nation \
             where ps_suppkey = s_suppkey and s_nationkey = n_nationkey and n_name = '{n}' \
             group by ps_partkey \
             having sum(ps_supplycost * ps_availqty) > \
               (select sum(ps_supplycost * ps_availqty) * {fraction} \
                from partsupp, supplier, nation \
                where ps_suppkey = s_suppkey and s_nationkey = n_nationkey and n_name = '{n}') \
             order by value desc",
            n = p.q11_nation,
            fraction = fraction(sf)
        ),
        12 => format!(
            "select l_shipmode, \
             sum(case when o_orderpriority = '1-URGENT' or o_orderpriority = '2-HIGH' \
               then 1 else 0 end) as high_line_count, \
             sum(case when o_orderpriority <> '1-URGENT' and o_orderpriority <> '2-HIGH' \
               then 1 else 0 end) as low_line_count \
             from orders, lineitem \
             where o_orderkey = l_orderkey and l_shipmode in ('{}', '{}') \
             and l_commitdate < l_receiptdate and l_shipdate < l_commitdate \
             and l_receiptdate >= {} and l_receiptdate < {} \
             group by l_shipmode order by l_shipmode",
            p.q12_modes[0],
            p.q12_modes[1],
            d(p.q12_date),
            d(p.q12_date.plus_months(12))
        ),
        13 => format!(
            "select c_count, count(*) as custdist \
             from (select c_custkey, count(o_orderkey) as c_count \
               from customer left outer join orders on c_custkey = o_custkey \
               and o_comment not like '%{}%{}%' group by c_custkey) as c_orders \
             group by c_count order by custdist desc, c_count desc",
            p.q13_words[0], p.q13_words[1]
        ),
        14 => format!(
            "select 100.00 * sum(case when p_type like 'PROMO%' \
               then l_extendedprice * (1 - l_discount) else 0 end) \
             / sum(l_extendedprice * (1 - l_discount)) as promo_revenue \
             from lineitem, part \
             where l_partkey = p_partkey and l_shipdate >= {} and l_shipdate < {}",
            d(p.q14_date),
            d(p.q14_date.plus_months(1))
        ),
        15 => format!(
            "with revenue0 (supplier_no, total_revenue) as \
               (select l_suppkey, sum(l_extendedprice * (1 - l_discount)) from lineitem \
                where l_shipdate >= {} and l_shipdate < {} group by l_suppkey) \
             select s_suppkey, s_name, s_address, s_phone, total_revenue \
             from supplier, revenue0 \
             where s_suppkey = supplier_no \
             and total_revenue = (select max(total_revenue) from revenue0) \
             order by s_suppkey",
            d(p.q15_date),
            d(p.q15_date.plus_months(3))
        ),
        16 => format!(
            "select p_brand, p_type, p_size, count(distinct ps_suppkey) as supplier_cnt \
             from partsupp, part \
             where p_partkey = ps_partkey and p_brand <> '{}' and p_type not like '{}%' \
             and p_size in ({}) \
             and ps_suppkey not in (select s_suppkey from supplier \
               where s_comment like '%Customer%Complaints%') \
             group by p_brand, p_type, p_size \
             order by supplier_cnt desc, p_brand, p_type, p_size",
            p.q16_brand,
            p.q16_type,
            list(&p.q16_sizes)
        ),
        17 => format!(
            "select sum(l_extendedprice) / 7.0 as avg_yearly from lineitem, part \
             where p_partkey = l_partkey and p_brand = '{}' and p_container = '{}' \
             and l_quantity < (select 0.2 * avg(l_quantity) from lineitem \
               where l_partkey = p_partkey)",
            p.q17_brand, p.q17_container
        ),
        18 => format!(
            "select c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity) \
             as sum_qty \
             from customer, orders, lineitem \
             where o_orderkey in (select l_orderkey from lineitem group by l_orderkey \
               having sum(l_quantity) > {}) \
             and c_custkey = o_custkey and o_orderkey = l_orderkey \
             group by c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice \
             order by o_totalprice desc, o_orderdate limit 100",
            p.q18_quantity
        ),
        19 => {
            let [q1, q2, q3] = p.q19_quantities;
            let [b1, b2, b3] = &p.q19_brands;
            format!(
                "select sum(l_extendedprice * (1 - l_discount)) as revenue from lineitem, part \
                 where (p_partkey = l_partkey and p_brand = '{b1}' \
                   and p_container in ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG') \
                   and l_quantity >= {q1} and l_quantity <= {} and p_size between 1 and 5 \
                   and l_shipmode in ('AIR', 'AIR REG') \
                   and l_shipinstruct = 'DELIVER IN PERSON') \
                 or (p_partkey = l_partkey and p_brand = '{b2}' \
                   and p_container in ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK') \
                   and l_quantity >= {q2} and l_quantity <= {} and p_size between 1 and 10 \
                   and l_shipmode in ('AIR', 'AIR REG') \
                   and l_shipinstruct = 'DELIVER IN PERSON') \
                 or (p_partkey = l_partkey and p_brand = '{b3}' \
                   and p_container in ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG') \
                   and l_quantity >= {q3} and l_quantity <= {} and p_size between 1 and 15 \
                   and l_shipmode in ('AIR', 'AIR REG') \
                   and l_shipinstruct = 'DELIVER IN PERSON')",
                q1 + 10,
                q2 + 10,
                q3 + 10
            )
        }
        20 => format!(
            "select s_name, s_address from supplier, nation \
             where s_suppkey in (select ps_suppkey from partsupp \
               where ps_partkey in (select p_partkey from part where p_name like '{}%') \
               and ps_availqty > (select 0.5 * sum(l_quantity) from lineitem \
                 where l_partkey = ps_partkey and l_suppkey = ps_suppkey \
                 and l_shipdate >= {} and l_shipdate < {})) \
             and s_nationkey = n_nationkey and n_name = '{}' \
             order by s_name",
            p.q20_color,
            d(p.q20_date),
            d(p.q20_date.plus_months(12)),
            p.q20_nation
        ),
        21 => format!(
            "select s_name, count(*) as numwait from supplier, lineitem l1, orders, nation \
             where s_suppkey = l1.l_suppkey and o_orderkey = l1.l_orderkey \
             and o_orderstatus = 'F' and l1.l_receiptdate > l1.l_commitdate \
             and exists (select * from lineitem l2 \
               where l2.l_orderkey = l1.l_orderkey and l2.l_suppkey <> l1.l_suppkey) \
             and not exists (select * from lineitem l3 \
               where l3.l_orderkey = l1.l_orderkey and l3.l_suppkey <> l1.l_suppkey \
               and l3.l_receiptdate > l3.l_commitdate) \
             and s_nationkey = n_nationkey and n_name = '{}' \
             group by s_name order by numwait desc, s_name limit 100",
            p.q21_nation
        ),
        _ => format!(
            "select cntrycode, count(*) as numcust, sum(c_acctbal) as totacctbal \
             from (select substr(c_phone, 1, 2) as cntrycode, c_acctbal from customer \
               where substr(c_phone, 1, 2) in ({codes}) \
               and c_acctbal > (select avg(c_acctbal) from customer \
                 where c_acctbal > 0.00 and substr(c_phone, 1, 2) in ({codes})) \
               and not exists (select * from orders where o_custkey = c_custkey)) as custsale \
             group by cntrycode order by cntrycode"
        ),
    }
}

/// Q11's FRACTION, 0.0001 / SF, as a decimal literal.
fn fraction(sf: f64) -> String {
    let f = 0.0001 / sf;
    let text = format!("{f:.12}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_parameters_land_in_the_text_as_literals() {
        let p = Params::validation();
        let q1 = query(1, &p, 1.0, Sql::Pgsql);
        assert!(q1.contains("l_shipdate <= date '1998-09-02'"), "{q1}");
        let q1 = query(1, &p, 1.0, Sql::Sqlite);
        assert!(q1.contains("l_shipdate <= '1998-09-02'"), "{q1}");
        let q6 = query(6, &p, 1.0, Sql::Mysql);
        assert!(
            q6.contains("between 0.05 and 0.07 and l_quantity < 24"),
            "{q6}"
        );
        assert!(q6.contains("l_shipdate < date '1995-01-01'"), "{q6}");
        assert!(query(11, &p, 0.01, Sql::Mysql).contains("* 0.01 from"));
        assert_eq!(fraction(1.0), "0.0001");
        assert_eq!(fraction(0.01), "0.01");
        assert!(
            query(7, &p, 1.0, Sql::Sqlite).contains("cast(substr(l_shipdate, 1, 4) as integer)")
        );
        assert!(
            query(22, &p, 1.0, Sql::Pgsql).contains("('13', '31', '23', '29', '30', '18', '17')")
        );
        for n in 1..=22 {
            for sql in [Sql::Mysql, Sql::Pgsql, Sql::Sqlite] {
                let q = query(n, &p, 1.0, sql);
                assert!(q.starts_with("select") || q.starts_with("with"), "Q{n}");
                assert!(!q.contains('{') && !q.contains(':'), "Q{n}: {q}");
            }
        }
    }
}
