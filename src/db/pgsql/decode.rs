//! PostgreSQL's text output of values received in binary format, for the tokio-postgres
//! client's `execute_fetch` (custom workloads' captures).
//!
//! Why: tokio-postgres asks for every result column in binary format and has no way to ask
//! for text, while the wire client ([`super::wire`]) asks for text and hands on what the
//! server wrote. A captured value must be the same text whichever client a connection uses,
//! so this module writes the common types as the server's output functions do (with the
//! server's defaults: `DateStyle = ISO`, `bytea_output = hex`, `extra_float_digits = 1`).
//! A type it does not know is an error naming the type and the way around it (a `::text`
//! cast in the SQL), never a guess.
//!
//! Known difference: `timestamptz` is written in UTC (`+00`); the server writes it in the
//! session's `TimeZone`.

use tokio_postgres::types::{FromSql, Type};

/// A column's raw bytes, whatever its type (`None`: NULL).
pub struct Raw<'a>(pub &'a [u8]);

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(
        _: &Type,
        raw: &'a [u8],
    ) -> Result<Raw<'a>, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(raw))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// The server's text of a binary value of type `ty`; an error (what to do about it) for a type
/// this module does not write or a malformed value.
pub fn text(ty: &Type, b: &[u8]) -> Result<String, String> {
    let bad = || format!("a malformed binary {ty} value ({} bytes)", b.len());
    let int = |n: usize| -> Result<i64, String> {
        match (n, b.len()) {
            (2, 2) => Ok(i64::from(i16::from_be_bytes([b[0], b[1]]))),
            (4, 4) => Ok(i64::from(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))),
            (8, 8) => Ok(i64::from_be_bytes(b.try_into().map_err(|_| bad())?)),
            _ => Err(bad()),
        }
    };
    Ok(match *ty {
        Type::BOOL => match b {
            [0] => "f".into(),
            [_] => "t".into(),
            _ => return Err(bad()),
        },
        Type::INT2 => int(2)?.to_string(),
        Type::INT4 => int(4)?.to_string(),
        Type::INT8 => int(8)?.to_string(),
        Type::OID => u32::try_from(int(4)? & 0xFFFF_FFFF)
            .map_err(|_| bad())?
            .to_string(),
        Type::FLOAT4 => {
            let v = f32::from_be_bytes(b.try_into().map_err(|_| bad())?);
            float_text(f64::from(v), true)
        }
        Type::FLOAT8 => float_text(f64::from_be_bytes(b.try_into().map_err(|_| bad())?), false),
        Type::NUMERIC => numeric_text(b).ok_or_else(bad)?,
        Type::TEXT
        | Type::VARCHAR
        | Type::BPCHAR
        | Type::NAME
        | Type::UNKNOWN
        | Type::JSON
        | Type::XML
        | Type::CHAR => String::from_utf8_lossy(b).into_owned(),
        Type::JSONB => match b.split_first() {
            Some((1, json)) => String::from_utf8_lossy(json).into_owned(),
            _ => return Err(bad()),
        },
        Type::BYTEA => {
            let mut s = String::with_capacity(2 + 2 * b.len());
            s.push_str("\\x");
            for byte in b {
                s.push_str(&format!("{byte:02x}"));
            }
            s
        }
        Type::UUID => {
            let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
            if h.len() != 32 {
                return Err(bad());
            }
            format!(
                "{}-{}-{}-{}-{}",
                &h[..8],
                &h[8..12],
                &h[12..16],
                &h[16..20],
                &h[20..]
            )
        }
        Type::DATE => match int(4)? {
            v if v == i64::from(i32::MAX) => "infinity".into(),
            v if v == i64::from(i32::MIN) => "-infinity".into(),
            days => date_text(days),
        },
        Type::TIMESTAMP | Type::TIMESTAMPTZ => match int(8)? {
            i64::MAX => "infinity".into(),
            i64::MIN => "-infinity".into(),
            us => {
                let (days, rest) = (us.div_euclid(DAY_US), us.rem_euclid(DAY_US));
                let date = date_text(days);
                // A BC date keeps its suffix after the time, as the server writes it.
                let (date, bc) = match date.strip_suffix(" BC") {
                    Some(d) => (d.to_string(), " BC"),
                    None => (date, ""),
                };
                let zone = if *ty == Type::TIMESTAMPTZ { "+00" } else { "" };
                format!("{date} {}{zone}{bc}", time_text(rest))
            }
        },
        Type::TIME => time_text(int(8)?),
        _ => {
            return Err(format!(
                "values of type {ty} cannot be read as text by the tokio-postgres client: cast the column in the SQL (`col::text`) or use the wire client"
            ));
        }
    })
}

const DAY_US: i64 = 86_400_000_000;

/// Days since 2000-01-01 as `YYYY-MM-DD` (` BC` for years before 1).
fn date_text(days: i64) -> String {
    // Howard Hinnant's civil_from_days, shifted from 1970-01-01 to 2000-01-01.
    let z = days + 10_957 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    if y <= 0 {
        format!("{:04}-{m:02}-{d:02} BC", 1 - y)
    } else {
        format!("{y:04}-{m:02}-{d:02}")
    }
}

/// Microseconds since midnight as `HH:MM:SS` and the fraction without trailing zeros.
fn time_text(us: i64) -> String {
    let secs = us / 1_000_000;
    let frac = us % 1_000_000;
    let mut s = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    if frac != 0 {
        let f = format!("{frac:06}");
        s.push('.');
        s.push_str(f.trim_end_matches('0'));
    }
    s
}

/// A float as the server writes it (PostgreSQL 12+, `extra_float_digits = 1`): the shortest
/// digits that read back exactly, in exponent form (`1e+15`, `1e-05`) for exponents below -4
/// or from 15 (6 for `real`) up.
pub fn float_text(v: f64, single: bool) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let sci = if single {
        format!("{:e}", v as f32)
    } else {
        format!("{v:e}")
    };
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let limit = if single { 6 } else { 15 };
    if v != 0.0 && (exp < -4 || exp >= limit) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else if single {
        (v as f32).to_string()
    } else {
        v.to_string()
    }
}

/// A binary NUMERIC (digit count, weight, sign, display scale, base-10000 digits) as its text.
fn numeric_text(b: &[u8]) -> Option<String> {
    let word = |i: usize| -> Option<i32> {
        let w = b.get(2 * i..2 * i + 2)?;
        Some(i32::from(u16::from_be_bytes([w[0], w[1]])))
    };
    let ndigits = usize::try_from(word(0)?).ok()?;
    let weight = word(1)? as i16 as i32;
    let sign = word(2)?;
    let dscale = usize::try_from(word(3)?).ok()?;
    match sign {
        0xC000 => return Some("NaN".into()),
        0xD000 => return Some("Infinity".into()),
        0xF000 => return Some("-Infinity".into()),
        0x0000 | 0x4000 => {}
        _ => return None,
    }
    let digits: Vec<i32> = (0..ndigits).map(|i| word(4 + i)).collect::<Option<_>>()?;
    let digit = |pos: i32| -> i32 {
        // The base-10000 digit of weight `pos` (0: units).
        let i = weight - pos;
        if i < 0 {
            return 0;
        }
        digits.get(i as usize).copied().unwrap_or(0)
    };
    let mut s = String::new();
    if sign == 0x4000 {
        s.push('-');
    }
    // The integer part: base-10000 digits of weight `weight` down to 0.
    if weight < 0 {
        s.push('0');
    } else {
        for pos in (0..=weight).rev() {
            let d = digit(pos);
            if pos == weight {
                s.push_str(&d.to_string());
            } else {
                s.push_str(&format!("{d:04}"));
            }
        }
    }
    if dscale > 0 {
        s.push('.');
        let mut frac = String::with_capacity(dscale + 4);
        let mut pos = -1;
        while frac.len() < dscale {
            frac.push_str(&format!("{:04}", digit(pos)));
            pos -= 1;
        }
        frac.truncate(dscale);
        s.push_str(&frac);
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric(words: &[i16]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_be_bytes()).collect()
    }

    #[test]
    fn numerics_dates_and_floats_read_as_the_server_writes_them() {
        // 12345.678 at scale 3: digits 1, 2345, 6780; weight 1.
        let n = numeric(&[3, 1, 0, 3, 1, 2345, 6780]);
        assert_eq!(text(&Type::NUMERIC, &n).unwrap(), "12345.678");
        // -0.0012 at scale 5: one digit 12 of weight -1.
        let n = numeric(&[1, -1, 0x4000, 5, 12]);
        assert_eq!(text(&Type::NUMERIC, &n).unwrap(), "-0.00120");
        // 0 with scale 2, and 100000000 (digit 1 of weight 2).
        assert_eq!(
            text(&Type::NUMERIC, &numeric(&[0, 0, 0, 2])).unwrap(),
            "0.00"
        );
        assert_eq!(
            text(&Type::NUMERIC, &numeric(&[1, 2, 0, 0, 1])).unwrap(),
            "100000000"
        );
        assert_eq!(
            text(&Type::NUMERIC, &numeric(&[0, 0, 0xC000u16 as i16, 0])).unwrap(),
            "NaN"
        );
        assert!(text(&Type::NUMERIC, &[0, 1]).is_err());

        assert_eq!(date_text(0), "2000-01-01");
        assert_eq!(date_text(-1), "1999-12-31");
        assert_eq!(date_text(8_861), "2024-04-05");
        assert_eq!(date_text(-730_119), "0001-01-01");
        assert_eq!(date_text(-730_120), "0001-12-31 BC");
        assert_eq!(date_text(-730_485), "0001-01-01 BC");
        let ts = (8_861 * DAY_US + 3_723_500_000).to_be_bytes();
        assert_eq!(
            text(&Type::TIMESTAMP, &ts).unwrap(),
            "2024-04-05 01:02:03.5"
        );
        assert_eq!(
            text(&Type::TIMESTAMPTZ, &ts).unwrap(),
            "2024-04-05 01:02:03.5+00"
        );
        assert_eq!(
            text(&Type::DATE, &i32::MAX.to_be_bytes()).unwrap(),
            "infinity"
        );

        for (v, want) in [
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (1e15, "1e+15"),
            (123456789012345.0, "123456789012345"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e300, "1.5e+300"),
            (0.0, "0"),
        ] {
            assert_eq!(float_text(v, false), want, "{v}");
        }
        assert_eq!(float_text(1234567.0, true), "1.234567e+06");
        assert_eq!(float_text(0.1f32.into(), true), "0.1");
        assert_eq!(text(&Type::BOOL, &[1]).unwrap(), "t");
        assert_eq!(text(&Type::BYTEA, &[0xde, 0xad]).unwrap(), "\\xdead");
        let e = text(&Type::INTERVAL, &[0; 16]).unwrap_err();
        assert!(e.contains("type interval") && e.contains("::text"), "{e}");
    }
}
