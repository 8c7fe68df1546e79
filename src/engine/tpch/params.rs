//! The substitution parameters of the 22 queries (TPC-H 2.18, clause 2.4: each query's
//! "Substitution Parameters" and "Query Validation" paragraphs), and the query order of each
//! stream (Appendix A).
//!
//! Why here and not in the query text: the spec draws every parameter per stream, and a date
//! parameter comes with its interval end (`date + 3 months`). Both are computed here, in Rust,
//! so that the SQL of every database gets plain literals: no dialect's date arithmetic, and no
//! floating-point bound (`0.06 + 0.01` in SQLite's doubles misses the stored `0.07`) that would
//! make SQLite answer differently from the exact decimals of MySQL and PostgreSQL.

use chrono::{Datelike, Months, NaiveDate};

use crate::engine::random::Rng;

/// The 25 nations with their region key (dbgen's `nations`, in key order).
pub const NATIONS: [(&str, usize); 25] = [
    ("ALGERIA", 0),
    ("ARGENTINA", 1),
    ("BRAZIL", 1),
    ("CANADA", 1),
    ("EGYPT", 4),
    ("ETHIOPIA", 0),
    ("FRANCE", 3),
    ("GERMANY", 3),
    ("INDIA", 2),
    ("INDONESIA", 2),
    ("IRAN", 4),
    ("IRAQ", 4),
    ("JAPAN", 2),
    ("JORDAN", 4),
    ("KENYA", 0),
    ("MOROCCO", 0),
    ("MOZAMBIQUE", 0),
    ("PERU", 1),
    ("CHINA", 2),
    ("ROMANIA", 3),
    ("SAUDI ARABIA", 4),
    ("VIETNAM", 2),
    ("RUSSIA", 3),
    ("UNITED KINGDOM", 3),
    ("UNITED STATES", 1),
];

/// The 5 regions, in key order.
pub const REGIONS: [&str; 5] = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"];

const SEGMENTS: [&str; 5] = [
    "AUTOMOBILE",
    "BUILDING",
    "FURNITURE",
    "MACHINERY",
    "HOUSEHOLD",
];
const TYPE_S1: [&str; 6] = ["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"];
const TYPE_S2: [&str; 5] = ["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"];
const TYPE_S3: [&str; 5] = ["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"];
const CONTAINER_S1: [&str; 5] = ["SM", "LG", "MED", "JUMBO", "WRAP"];
const CONTAINER_S2: [&str; 8] = ["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"];
const SHIP_MODES: [&str; 7] = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"];
const Q13_WORD1: [&str; 4] = ["special", "pending", "unusual", "express"];
const Q13_WORD2: [&str; 4] = ["packages", "requests", "accounts", "deposits"];

/// The query order of stream `s` (Appendix A: stream 0 is the power test's; the table has
/// 41 rows and streams beyond 40 wrap around).
pub fn order(stream: usize) -> &'static [u8; 22] {
    &ORDERS[stream % ORDERS.len()]
}

#[rustfmt::skip]
const ORDERS: [[u8; 22]; 41] = [
    [14, 2, 9, 20, 6, 17, 18, 8, 21, 13, 3, 22, 16, 4, 11, 15, 1, 10, 19, 5, 7, 12],
    [21, 3, 18, 5, 11, 7, 6, 20, 17, 12, 16, 15, 13, 10, 2, 8, 14, 19, 9, 22, 1, 4],
    [6, 17, 14, 16, 19, 10, 9, 2, 15, 8, 5, 22, 12, 7, 13, 18, 1, 4, 20, 3, 11, 21],
    [8, 5, 4, 6, 17, 7, 1, 18, 22, 14, 9, 10, 15, 11, 20, 2, 21, 19, 13, 16, 12, 3],
    [5, 21, 14, 19, 15, 17, 12, 6, 4, 9, 8, 16, 11, 2, 10, 18, 1, 13, 7, 22, 3, 20],
    [21, 15, 4, 6, 7, 16, 19, 18, 14, 22, 11, 13, 3, 1, 2, 5, 8, 20, 12, 17, 10, 9],
    [10, 3, 15, 13, 6, 8, 9, 7, 4, 11, 22, 18, 12, 1, 5, 16, 2, 14, 19, 20, 17, 21],
    [18, 8, 20, 21, 2, 4, 22, 17, 1, 11, 9, 19, 3, 13, 5, 7, 10, 16, 6, 14, 15, 12],
    [19, 1, 15, 17, 5, 8, 9, 12, 14, 7, 4, 3, 20, 16, 6, 22, 10, 13, 2, 21, 18, 11],
    [8, 13, 2, 20, 17, 3, 6, 21, 18, 11, 19, 10, 15, 4, 22, 1, 7, 12, 9, 14, 5, 16],
    [6, 15, 18, 17, 12, 1, 7, 2, 22, 13, 21, 10, 14, 9, 3, 16, 20, 19, 11, 4, 8, 5],
    [15, 14, 18, 17, 10, 20, 16, 11, 1, 8, 4, 22, 5, 12, 3, 9, 21, 2, 13, 6, 19, 7],
    [1, 7, 16, 17, 18, 22, 12, 6, 8, 9, 11, 4, 2, 5, 20, 21, 13, 10, 19, 3, 14, 15],
    [21, 17, 7, 3, 1, 10, 12, 22, 9, 16, 6, 11, 2, 4, 5, 14, 8, 20, 13, 18, 15, 19],
    [2, 9, 5, 4, 18, 1, 20, 15, 16, 17, 7, 21, 13, 14, 19, 8, 22, 11, 10, 3, 12, 6],
    [16, 9, 17, 8, 14, 11, 10, 12, 6, 21, 7, 3, 15, 5, 22, 20, 1, 13, 19, 2, 4, 18],
    [1, 3, 6, 5, 2, 16, 14, 22, 17, 20, 4, 9, 10, 11, 15, 8, 12, 19, 18, 13, 7, 21],
    [3, 16, 5, 11, 21, 9, 2, 15, 10, 18, 17, 7, 8, 19, 14, 13, 1, 4, 22, 20, 6, 12],
    [14, 4, 13, 5, 21, 11, 8, 6, 3, 17, 2, 20, 1, 19, 10, 9, 12, 18, 15, 7, 22, 16],
    [4, 12, 22, 14, 5, 15, 16, 2, 8, 10, 17, 9, 21, 7, 3, 6, 13, 18, 11, 20, 19, 1],
    [16, 15, 14, 13, 4, 22, 18, 19, 7, 1, 12, 17, 5, 10, 20, 3, 9, 21, 11, 2, 6, 8],
    [20, 14, 21, 12, 15, 17, 4, 19, 13, 10, 11, 1, 16, 5, 18, 7, 8, 22, 9, 6, 3, 2],
    [16, 14, 13, 2, 21, 10, 11, 4, 1, 22, 18, 12, 19, 5, 7, 8, 6, 3, 15, 20, 9, 17],
    [18, 15, 9, 14, 12, 2, 8, 11, 22, 21, 16, 1, 6, 17, 5, 10, 19, 4, 20, 13, 3, 7],
    [7, 3, 10, 14, 13, 21, 18, 6, 20, 4, 9, 8, 22, 15, 2, 1, 5, 12, 19, 17, 11, 16],
    [18, 1, 13, 7, 16, 10, 14, 2, 19, 5, 21, 11, 22, 15, 8, 17, 20, 3, 4, 12, 6, 9],
    [13, 2, 22, 5, 11, 21, 20, 14, 7, 10, 4, 9, 19, 18, 6, 3, 1, 8, 15, 12, 17, 16],
    [14, 17, 21, 8, 2, 9, 6, 4, 5, 13, 22, 7, 15, 3, 1, 18, 16, 11, 10, 12, 20, 19],
    [10, 22, 1, 12, 13, 18, 21, 20, 2, 14, 16, 7, 15, 3, 4, 17, 5, 19, 6, 8, 9, 11],
    [10, 8, 9, 18, 12, 6, 1, 5, 20, 11, 17, 22, 16, 3, 13, 2, 15, 21, 14, 19, 7, 4],
    [7, 17, 22, 5, 3, 10, 13, 18, 9, 1, 14, 15, 21, 19, 16, 12, 8, 6, 11, 20, 4, 2],
    [2, 9, 21, 3, 4, 7, 1, 11, 16, 5, 20, 19, 18, 8, 17, 13, 10, 12, 15, 6, 14, 22],
    [15, 12, 8, 4, 22, 13, 16, 17, 18, 3, 7, 5, 6, 1, 9, 11, 21, 10, 14, 20, 19, 2],
    [15, 16, 2, 11, 17, 7, 5, 14, 20, 4, 21, 3, 10, 9, 12, 8, 13, 6, 18, 19, 22, 1],
    [1, 13, 11, 3, 4, 21, 6, 14, 15, 22, 18, 9, 7, 5, 10, 20, 12, 16, 17, 8, 19, 2],
    [14, 17, 22, 20, 8, 16, 5, 10, 1, 13, 2, 21, 12, 9, 4, 18, 3, 7, 6, 19, 15, 11],
    [9, 17, 7, 4, 5, 13, 21, 18, 11, 3, 22, 1, 6, 16, 20, 14, 15, 10, 8, 2, 12, 19],
    [13, 14, 5, 22, 19, 11, 9, 6, 18, 15, 8, 10, 7, 4, 17, 16, 3, 1, 12, 2, 21, 20],
    [20, 5, 4, 14, 11, 1, 6, 16, 8, 22, 7, 3, 2, 12, 21, 19, 17, 13, 10, 15, 18, 9],
    [3, 7, 14, 15, 6, 5, 21, 20, 18, 10, 4, 16, 19, 1, 13, 9, 8, 17, 11, 12, 22, 2],
    [13, 15, 17, 1, 22, 11, 3, 4, 7, 20, 14, 21, 9, 8, 2, 18, 16, 6, 10, 12, 5, 19],
];

/// A calendar date of a parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date(NaiveDate);

impl Date {
    pub fn ymd(y: i32, m: u32, d: u32) -> Date {
        Date(NaiveDate::from_ymd_opt(y, m, d).unwrap_or_default())
    }

    /// Q1's base date: 1998-12-01.
    pub fn end_of_data() -> Date {
        Date::ymd(1998, 12, 1)
    }

    /// The date `months` calendar months later.
    pub fn plus_months(self, months: u32) -> Date {
        Date(
            self.0
                .checked_add_months(Months::new(months))
                .unwrap_or(self.0),
        )
    }

    /// The date `days` days earlier.
    pub fn minus_days(self, days: i64) -> Date {
        Date(self.0 - chrono::Duration::days(days))
    }

    pub fn year(self) -> i32 {
        self.0.year()
    }
}

impl std::fmt::Display for Date {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0.format("%Y-%m-%d"))
    }
}

/// Every substitution parameter of one query stream.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    pub q1_delta: i64,
    pub q2_size: i64,
    pub q2_type: &'static str,
    pub q2_region: &'static str,
    pub q3_segment: &'static str,
    pub q3_date: Date,
    pub q4_date: Date,
    pub q5_region: &'static str,
    pub q5_date: Date,
    pub q6_date: Date,
    /// Hundredths: 2..=9 (0.02 to 0.09).
    pub q6_discount: i64,
    pub q6_quantity: i64,
    pub q7_nations: [&'static str; 2],
    pub q8_nation: &'static str,
    pub q8_region: &'static str,
    pub q8_type: String,
    pub q9_color: &'static str,
    pub q10_date: Date,
    pub q11_nation: &'static str,
    pub q12_modes: [&'static str; 2],
    pub q12_date: Date,
    pub q13_words: [&'static str; 2],
    pub q14_date: Date,
    pub q15_date: Date,
    pub q16_brand: String,
    pub q16_type: String,
    pub q16_sizes: [i64; 8],
    pub q17_brand: String,
    pub q17_container: String,
    pub q18_quantity: i64,
    pub q19_quantities: [i64; 3],
    pub q19_brands: [String; 3],
    pub q20_color: &'static str,
    pub q20_date: Date,
    pub q20_nation: &'static str,
    pub q21_nation: &'static str,
    pub q22_codes: [i64; 7],
}

impl Params {
    /// The spec's validation parameters (each query's "Query Validation" paragraph), whose
    /// answers at SF 1 are the reference answers.
    pub fn validation() -> Params {
        Params {
            q1_delta: 90,
            q2_size: 15,
            q2_type: "BRASS",
            q2_region: "EUROPE",
            q3_segment: "BUILDING",
            q3_date: Date::ymd(1995, 3, 15),
            q4_date: Date::ymd(1993, 7, 1),
            q5_region: "ASIA",
            q5_date: Date::ymd(1994, 1, 1),
            q6_date: Date::ymd(1994, 1, 1),
            q6_discount: 6,
            q6_quantity: 24,
            q7_nations: ["FRANCE", "GERMANY"],
            q8_nation: "BRAZIL",
            q8_region: "AMERICA",
            q8_type: "ECONOMY ANODIZED STEEL".into(),
            q9_color: "green",
            q10_date: Date::ymd(1993, 10, 1),
            q11_nation: "GERMANY",
            q12_modes: ["MAIL", "SHIP"],
            q12_date: Date::ymd(1994, 1, 1),
            q13_words: ["special", "requests"],
            q14_date: Date::ymd(1995, 9, 1),
            q15_date: Date::ymd(1996, 1, 1),
            q16_brand: "Brand#45".into(),
            q16_type: "MEDIUM POLISHED".into(),
            q16_sizes: [49, 14, 23, 45, 19, 3, 36, 9],
            q17_brand: "Brand#23".into(),
            q17_container: "MED BOX".into(),
            q18_quantity: 300,
            q19_quantities: [1, 10, 20],
            q19_brands: ["Brand#12".into(), "Brand#23".into(), "Brand#34".into()],
            q20_color: "forest",
            q20_date: Date::ymd(1994, 1, 1),
            q20_nation: "CANADA",
            q21_nation: "SAUDI ARABIA",
            q22_codes: [13, 31, 23, 29, 30, 18, 17],
        }
    }

    /// Parameters drawn as clause 2.4 says, from `rng` (one per stream, seeded by the run's
    /// seed and the stream number).
    pub fn random(rng: &mut Rng) -> Params {
        let mut pick = |n: usize| rng.uniform(0, n as u64 - 1) as usize;
        let colors = colors();
        let nation = |i: usize| NATIONS[i].0;
        let q7a = pick(25);
        let q7b = (q7a + 1 + pick(24)) % 25;
        let q8n = pick(25);
        let q12a = pick(7);
        let q12b = (q12a + 1 + pick(6)) % 7;
        let month_from = |m0: usize| {
            // Month index 0 = January 1993.
            Date::ymd(1993 + (m0 / 12) as i32, (m0 % 12) as u32 + 1, 1)
        };
        let jan = |y: usize| Date::ymd(1993 + y as i32, 1, 1);
        let brand = |a: usize, b: usize| format!("Brand#{}{}", a + 1, b + 1);
        let q1_delta = 60 + pick(61) as i64;
        let q2_size = 1 + pick(50) as i64;
        let q2_type = TYPE_S3[pick(5)];
        let q2_region = REGIONS[pick(5)];
        let q3_segment = SEGMENTS[pick(5)];
        let q3_date = Date::ymd(1995, 3, 1 + pick(31) as u32);
        let q4_date = month_from(pick(58));
        let q5_region = REGIONS[pick(5)];
        let q5_date = jan(pick(5));
        let q6_date = jan(pick(5));
        let q6_discount = 2 + pick(8) as i64;
        let q6_quantity = 24 + pick(2) as i64;
        let q8_type = format!(
            "{} {} {}",
            TYPE_S1[pick(6)],
            TYPE_S2[pick(5)],
            TYPE_S3[pick(5)]
        );
        let q9_color = colors[pick(colors.len())];
        let q10_date = month_from(1 + pick(24));
        let q11_nation = nation(pick(25));
        let q12_date = jan(pick(5));
        let q13_words = [Q13_WORD1[pick(4)], Q13_WORD2[pick(4)]];
        let q14_date = month_from(pick(60));
        let q15_date = month_from(pick(58));
        let q16_brand = brand(pick(5), pick(5));
        let q16_type = format!("{} {}", TYPE_S1[pick(6)], TYPE_S2[pick(5)]);
        let mut q16_sizes = [0i64; 8];
        let mut n = 0;
        while n < 8 {
            let s = 1 + pick(50) as i64;
            if !q16_sizes[..n].contains(&s) {
                q16_sizes[n] = s;
                n += 1;
            }
        }
        let q17_brand = brand(pick(5), pick(5));
        let q17_container = format!("{} {}", CONTAINER_S1[pick(5)], CONTAINER_S2[pick(8)]);
        let q18_quantity = 312 + pick(4) as i64;
        let q19_quantities = [
            1 + pick(10) as i64,
            10 + pick(11) as i64,
            20 + pick(11) as i64,
        ];
        let q19_brands = [
            brand(pick(5), pick(5)),
            brand(pick(5), pick(5)),
            brand(pick(5), pick(5)),
        ];
        let q20_color = colors[pick(colors.len())];
        let q20_date = jan(pick(5));
        let q20_nation = nation(pick(25));
        let q21_nation = nation(pick(25));
        let mut q22_codes = [0i64; 7];
        let mut n = 0;
        while n < 7 {
            let c = 10 + pick(25) as i64;
            if !q22_codes[..n].contains(&c) {
                q22_codes[n] = c;
                n += 1;
            }
        }
        Params {
            q1_delta,
            q2_size,
            q2_type,
            q2_region,
            q3_segment,
            q3_date,
            q4_date,
            q5_region,
            q5_date,
            q6_date,
            q6_discount,
            q6_quantity,
            q7_nations: [nation(q7a), nation(q7b)],
            q8_nation: nation(q8n),
            q8_region: REGIONS[NATIONS[q8n].1],
            q8_type,
            q9_color,
            q10_date,
            q11_nation,
            q12_modes: [SHIP_MODES[q12a], SHIP_MODES[q12b]],
            q12_date,
            q13_words,
            q14_date,
            q15_date,
            q16_brand,
            q16_type,
            q16_sizes,
            q17_brand,
            q17_container,
            q18_quantity,
            q19_quantities,
            q19_brands,
            q20_color,
            q20_date,
            q20_nation,
            q21_nation,
            q22_codes,
        }
    }
}

/// The 92 colours of part names (dbgen's `colors`), from the generator's own distribution.
fn colors() -> &'static [&'static str] {
    tpchgen::distribution::Distributions::static_default()
        .part_colors()
        .get_values()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stream_order_is_a_permutation_of_the_22_queries() {
        for s in 0..ORDERS.len() {
            let mut q: Vec<u8> = order(s).to_vec();
            q.sort_unstable();
            assert_eq!(q, (1..=22).collect::<Vec<u8>>(), "stream {s}");
        }
        assert_eq!(order(0)[0], 14);
        assert_eq!(order(41), order(0));
    }

    #[test]
    fn random_parameters_stay_in_the_spec_ranges_and_follow_the_seed() {
        for seed in 1..200u64 {
            let p = Params::random(&mut Rng::for_thread(seed, 3));
            assert!((60..=120).contains(&p.q1_delta));
            assert!((1..=50).contains(&p.q2_size));
            assert!(p.q3_date.to_string().starts_with("1995-03-"));
            assert!(p.q4_date >= Date::ymd(1993, 1, 1) && p.q4_date <= Date::ymd(1997, 10, 1));
            assert!(p.q10_date >= Date::ymd(1993, 2, 1) && p.q10_date <= Date::ymd(1995, 1, 1));
            assert!(p.q15_date <= Date::ymd(1997, 10, 1));
            assert!((2..=9).contains(&p.q6_discount));
            assert_ne!(p.q7_nations[0], p.q7_nations[1]);
            assert_ne!(p.q12_modes[0], p.q12_modes[1]);
            assert_eq!(
                REGIONS[NATIONS.iter().find(|n| n.0 == p.q8_nation).unwrap().1],
                p.q8_region
            );
            assert!((312..=315).contains(&p.q18_quantity));
            let mut sizes = p.q16_sizes.to_vec();
            sizes.sort_unstable();
            sizes.dedup();
            assert_eq!(sizes.len(), 8);
            assert!(p.q22_codes.iter().all(|c| (10..=34).contains(c)));
        }
        let a = Params::random(&mut Rng::for_thread(7, 1));
        assert_eq!(a, Params::random(&mut Rng::for_thread(7, 1)));
        assert_ne!(a, Params::random(&mut Rng::for_thread(7, 2)));
        assert_eq!(colors().len(), 92);
    }

    #[test]
    fn dates_move_by_calendar_months_and_days() {
        let d = Date::ymd(1998, 12, 1);
        assert_eq!(d.minus_days(90).to_string(), "1998-09-02");
        assert_eq!(
            Date::ymd(1995, 9, 1).plus_months(1).to_string(),
            "1995-10-01"
        );
        assert_eq!(
            Date::ymd(1997, 10, 1).plus_months(3).to_string(),
            "1998-01-01"
        );
    }
}
