//! Delta debugging (Zeller and Hildebrandt, "Simplifying and Isolating Failure-Inducing Input",
//! IEEE TSE 2002): the `ddmin` algorithm over a set of settings.
//!
//! Why ddmin and not a binary search: a binary search assumes one setting is the cause. Two
//! settings that matter only together (a bigger redo log helps only once the flush is
//! relaxed) send a binary search down neither half; ddmin then tests smaller pieces and their
//! complements and still ends on a subset from which no single setting can be removed
//! (1-minimal). With one cause among N settings it needs about 2·log₂N tests.
//!
//! The test of a subset is expensive (runs with repetitions), so each subset is tested at most
//! once: the result is cached, and a noisy verdict is never asked twice and contradicted.

use std::collections::HashMap;

/// The smallest subset of `0..n` found for which `test` holds, given that it holds for the
/// whole set (not tested here). `test` gets the indices in ascending order; an error ends the
/// search.
pub fn ddmin<E>(
    n: usize,
    test: &mut dyn FnMut(&[usize]) -> Result<bool, E>,
) -> Result<Vec<usize>, E> {
    let mut cache: HashMap<Vec<usize>, bool> = HashMap::new();
    let all: Vec<usize> = (0..n).collect();
    cache.insert(all.clone(), true);
    let mut check = |subset: &[usize]| -> Result<bool, E> {
        if let Some(known) = cache.get(subset) {
            return Ok(*known);
        }
        let holds = test(subset)?;
        cache.insert(subset.to_vec(), holds);
        Ok(holds)
    };
    let mut c = all;
    let mut parts = 2;
    'search: while c.len() > 1 {
        let chunks = split(&c, parts);
        for chunk in &chunks {
            if check(chunk)? {
                c.clone_from(chunk);
                parts = 2;
                continue 'search;
            }
        }
        // With two parts each complement is the other part, already tested.
        if parts > 2 {
            for chunk in &chunks {
                let rest: Vec<usize> = c.iter().copied().filter(|i| !chunk.contains(i)).collect();
                if check(&rest)? {
                    c = rest;
                    parts = (parts - 1).max(2);
                    continue 'search;
                }
            }
        }
        if parts >= c.len() {
            break;
        }
        parts = (parts * 2).min(c.len());
    }
    Ok(c)
}

/// `c` cut into `parts` runs of nearly equal length, in order.
fn split(c: &[usize], parts: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::with_capacity(parts);
    let mut start = 0;
    for i in 0..parts {
        let len = (c.len() - start) / (parts - i);
        out.push(c[start..start + len].to_vec());
        start += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    /// ddmin with an oracle, and the subsets it tested.
    fn run(n: usize, holds: impl Fn(&[usize]) -> bool) -> (Vec<usize>, Vec<Vec<usize>>) {
        let mut asked = Vec::new();
        let found = ddmin::<Infallible>(n, &mut |s| {
            asked.push(s.to_vec());
            Ok(holds(s))
        })
        .unwrap();
        (found, asked)
    }

    #[test]
    fn one_cause_among_many_is_found_in_logarithmic_tests() {
        for n in [1, 2, 3, 5, 8, 12, 16] {
            for cause in 0..n {
                let (found, asked) = run(n, |s| s.contains(&cause));
                assert_eq!(found, [cause], "n {n}");
                let bound = 2 * (usize::BITS - n.leading_zeros()) as usize;
                assert!(
                    asked.len() <= bound,
                    "n {n}: {} tests > {bound}",
                    asked.len()
                );
                let mut unique = asked.clone();
                unique.sort();
                unique.dedup();
                assert_eq!(unique.len(), asked.len(), "a subset tested twice");
            }
        }
    }

    #[test]
    fn two_settings_that_matter_only_together_are_both_kept() {
        // 1 and 4 sit in different halves: neither half holds, ddmin refines to both.
        let (found, _) = run(6, |s| s.contains(&1) && s.contains(&4));
        assert_eq!(found, [1, 4]);
        // Either of two causes alone: one of them (1-minimal), not both.
        let (found, _) = run(6, |s| s.contains(&2) || s.contains(&5));
        assert_eq!(found.len(), 1);
        assert!(found == [2] || found == [5]);
    }

    #[test]
    fn when_only_the_whole_set_holds_it_is_returned_and_errors_stop_the_search() {
        let (found, _) = run(3, |s| s.len() == 3);
        assert_eq!(found, [0, 1, 2]);
        let mut calls = 0;
        let r = ddmin(4, &mut |_| {
            calls += 1;
            Err::<bool, &str>("probe failed")
        });
        assert_eq!((r, calls), (Err("probe failed"), 1));
    }

    #[test]
    fn split_cuts_evenly_in_order() {
        assert_eq!(split(&[0, 1, 2, 3, 4], 2), [vec![0, 1], vec![2, 3, 4]]);
        assert_eq!(
            split(&[0, 1, 2, 3, 4], 5),
            [vec![0], vec![1], vec![2], vec![3], vec![4]]
        );
    }
}
