//! The answers of a run at SF 1 with the validation parameters against the reference answers
//! that `tpchgen` ships (derived from the TPC-H tools' `dbgen`/`qgen` at SF 1): an ignored test
//! that `bench/tpch-answers.sh` runs on the directory `tpch_answers` wrote
//! (`SBS_TPCH_ANSWERS=DIR cargo test --lib -- --ignored tpch::reference`).
//!
//! The reference rounds to 2 decimals, so numbers agree within 0.01; text is compared trimmed.

use std::path::Path;

/// Every difference between the answers in `dir` (`q01.tsv` …) and the reference, described.
fn differences(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for n in 1..=22 {
        let reference = tpchgen::q_and_a::answers_sf1::answer(n).unwrap_or_default();
        let want: Vec<Vec<String>> = reference
            .lines()
            .filter(|l| !l.trim().is_empty())
            .skip(1)
            .map(|l| l.split('|').map(|v| v.trim().to_string()).collect())
            .collect();
        let path = dir.join(format!("q{n:02}.tsv"));
        let Ok(text) = std::fs::read_to_string(&path) else {
            out.push(format!("Q{n}: no {}", path.display()));
            continue;
        };
        let got: Vec<Vec<String>> = text
            .lines()
            .skip(1)
            .map(|l| l.split('\t').map(|v| v.trim().to_string()).collect())
            .collect();
        if got.len() != want.len() {
            out.push(format!(
                "Q{n}: {} rows, the reference has {}",
                got.len(),
                want.len()
            ));
            continue;
        }
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let same = g.len() == w.len()
                && g.iter().zip(w).all(|(a, b)| {
                    a == b
                        || match (a.parse::<f64>(), b.parse::<f64>()) {
                            (Ok(x), Ok(y)) => (x - y).abs() <= 0.01 + 1e-9 * x.abs(),
                            _ => false,
                        }
                });
            if !same {
                out.push(format!("Q{n} row {}: {g:?}, the reference {w:?}", i + 1));
                break;
            }
        }
    }
    out
}

#[test]
#[ignore = "needs the answers of an SF 1 run: bench/tpch-answers.sh"]
fn sf1_answers_match_the_reference() {
    let dir = std::env::var("SBS_TPCH_ANSWERS").expect("SBS_TPCH_ANSWERS=DIR");
    let diffs = differences(Path::new(&dir));
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}
