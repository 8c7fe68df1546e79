//! Two kinds of tests. Properties (proptest): every generator stays in its range for any
//! bounds, yields only what it may, and is deterministic per (seed, thread). Shapes
//! (fixed seeds, large samples): each distribution against its exact law. Tolerances are
//! derived, never guessed: a share p over n draws is binomial, so it must be within
//! Z·sqrt(p(1 − p)/n) of p; a goodness of fit is a chi-square statistic below its quantile
//! at the same Z. With Z = 5 a correct generator fails one check for about one seed in 3·10⁶.

use super::*;
use crate::engine::custom::model::{DistParams, VarKind, Vars};
use crate::engine::random::Rng;
use proptest::prelude::*;
use std::collections::HashSet;

/// The standard-normal quantile every tolerance uses (one-sided tail 2.9·10⁻⁷).
const Z: f64 = 5.0;

/// sysbench's defaults for the `rand_*` options (engine/config.rs).
fn opts() -> RandOptions {
    RandOptions {
        rand_type: "special".into(),
        spec_iter: 12,
        spec_pct: 1,
        spec_res: 75,
        pareto_h: 0.2,
        zipfian_exp: 0.8,
    }
}

fn tables(name: &str) -> Option<u64> {
    (name == "items").then_some(100)
}

fn k(n: i64) -> Expr {
    Expr::constant(&n.to_string(), Val::Int(n))
}

fn kf(x: f64) -> Expr {
    Expr::constant(&x.to_string(), Val::Float(x))
}

/// Variables `lo`, `hi`, `n` (slots 0, 1, 2) for expression bounds.
fn vars() -> Vars {
    Vars {
        names: vec!["lo".into(), "hi".into(), "n".into()],
        kinds: vec![VarKind::Param; 3],
    }
}

fn ex(text: &str) -> Expr {
    Expr::compile(text, &vars()).expect("compiles")
}

fn frame(vals: &[i64]) -> Frame {
    Frame {
        vals: vals.iter().map(|&v| Val::Int(v)).collect(),
    }
}

fn compile(spec: &GenSpec, phase: Phase, seed: u64) -> Result<(Gens, GenId), ValueError> {
    let o = opts();
    let ctx = Context {
        phase,
        ..Context::run(&o, seed, &tables)
    };
    let mut g = Gens::default();
    let id = g.add(spec, &ctx)?;
    Ok((g, id))
}

fn one(spec: GenSpec) -> (Gens, GenId) {
    compile(&spec, Phase::Run, 1).expect("valid generator")
}

/// `n` draws of `id` by thread 0 of a run seeded with `seed`.
fn draws(g: &Gens, id: GenId, seed: u64, n: usize, f: &Frame) -> Vec<Val> {
    let mut rng = Rng::for_thread(seed, 0);
    let mut local = g.local(0);
    (0..n)
        .map(|_| g.draw(id, &mut rng, f, &mut local).expect("draws"))
        .collect()
}

fn int(v: &Val) -> i64 {
    match v {
        Val::Int(i) => *i,
        other => panic!("not an integer: {other:?}"),
    }
}

fn text(v: &Val) -> &str {
    match v {
        Val::Str(s) => s,
        other => panic!("not a string: {other:?}"),
    }
}

fn c_of(g: &Gens, id: GenId) -> i64 {
    match &g.gens[id] {
        Gen::NuRand { c, .. } => *c,
        other => panic!("not nurand: {other:?}"),
    }
}

const DISTS: [Dist; 6] = [
    Dist::Uniform,
    Dist::Gaussian,
    Dist::Special,
    Dist::Pareto,
    Dist::Zipfian,
    Dist::Default,
];

/// TPC-C 4.3.2.3's syllables.
const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

/// Any i64, weighted towards the edges where arithmetic overflows.
fn bound() -> impl Strategy<Value = i64> {
    prop_oneof![
        any::<i64>(),
        -1000i64..1000,
        Just(i64::MIN),
        Just(i64::MAX),
        (i64::MAX - 3)..=i64::MAX,
        i64::MIN..=(i64::MIN + 3),
    ]
}

proptest! {
    #[test]
    fn distributions_stay_in_range(lo in bound(), hi in bound(), d in 0usize..6, seed in 1u64..) {
        let (g, id) = one(GenSpec::Dist { dist: DISTS[d], lo: k(lo), hi: k(hi) });
        let (a, b) = ordered(lo, hi);
        for v in draws(&g, id, seed, 32, &Frame::default()) {
            prop_assert!((a..=b).contains(&int(&v)), "{:?} [{lo}, {hi}] gave {v}", DISTS[d]);
        }
    }

    #[test]
    fn equal_bounds_give_that_value(x in bound(), d in 0usize..6, a in prop::sample::select(vec![255i64, 1023, 8191])) {
        let (g, id) = one(GenSpec::Dist { dist: DISTS[d], lo: k(x), hi: k(x) });
        prop_assert!(draws(&g, id, 5, 8, &Frame::default()).iter().all(|v| int(v) == x));
        let (g, id) = one(GenSpec::NuRand { a, lo: k(x), hi: k(x) });
        prop_assert!(draws(&g, id, 5, 8, &Frame::default()).iter().all(|v| int(v) == x));
    }

    /// Bounds read from variables (a plain variable and a minijinja expression), per draw.
    #[test]
    fn expression_bounds_stay_in_range(lo in -1_000_000_000i64..1_000_000_000, hi in -1_000_000_000i64..1_000_000_000, d in 0usize..6, seed in 1u64..) {
        let f = frame(&[lo, hi, 0]);
        let (a, b) = ordered(lo, hi - lo);
        let (g, id) = one(GenSpec::Dist { dist: DISTS[d], lo: ex("lo"), hi: ex("hi - lo") });
        for v in draws(&g, id, seed, 16, &f) {
            prop_assert!((a..=b).contains(&int(&v)), "[{a}, {b}] gave {v}");
        }
        let (g, id) = one(GenSpec::NuRand { a: 1023, lo: ex("lo"), hi: ex("hi - lo") });
        for v in draws(&g, id, seed, 16, &f) {
            prop_assert!((a..=b).contains(&int(&v)), "nurand [{a}, {b}] gave {v}");
        }
    }

    #[test]
    fn nurand_stays_in_range(a in prop::sample::select(vec![255i64, 1023, 8191]), x in bound(), y in bound(), seed in 1u64..) {
        let (g, id) = one(GenSpec::NuRand { a, lo: k(x), hi: k(y) });
        let (lo, hi) = ordered(x, y);
        for v in draws(&g, id, seed, 32, &Frame::default()) {
            prop_assert!((lo..=hi).contains(&int(&v)), "NURand({a}, {x}, {y}) gave {v}");
        }
    }

    #[test]
    fn nurand_in_tpcc_ranges(a in prop::sample::select(vec![255i64, 1023, 8191]), x in 0i64..5, len in 0i64..100_000, c in 0i64..=8191, seed in 1u64..) {
        let mut rng = Rng::for_thread(seed, 0);
        for _ in 0..32 {
            let v = nurand(&mut rng, a, c.min(a), x, x + len);
            prop_assert!((x..=x + len).contains(&v));
        }
    }

    #[test]
    fn strings_have_their_length_and_alphabet(min in -5i64..300, max in -5i64..300, digits in any::<bool>(), seed in 1u64..) {
        let spec = if digits {
            GenSpec::NString { min: k(min), max: k(max) }
        } else {
            GenSpec::AString { min: k(min), max: k(max) }
        };
        let (g, id) = one(spec);
        let (lo, hi) = ordered(min.max(0), max.max(0));
        for v in draws(&g, id, seed, 16, &Frame::default()) {
            let s = text(&v);
            prop_assert!((lo..=hi).contains(&(s.len() as i64)), "[{min}, {max}]: {} chars", s.len());
            prop_assert!(s.bytes().all(|b| if digits { b.is_ascii_digit() } else { b.is_ascii_alphanumeric() }), "{s}");
        }
    }

    #[test]
    fn string_lengths_from_expressions(n in -10i64..100, seed in 1u64..) {
        let (g, id) = one(GenSpec::NString { min: ex("n"), max: ex("n + 5") });
        for v in draws(&g, id, seed, 8, &frame(&[0, 0, n])) {
            let len = text(&v).len() as i64;
            prop_assert!((n.max(0)..=(n + 5).max(0)).contains(&len));
        }
    }

    #[test]
    fn patterns_follow_the_template(t in prop::collection::vec(prop::sample::select(vec!['#', '@', 'x', '-']), 0..20), seed in 1u64..) {
        let template: String = t.iter().collect();
        let (g, id) = one(GenSpec::Pattern(template.clone()));
        for v in draws(&g, id, seed, 4, &Frame::default()) {
            let s = text(&v);
            prop_assert_eq!(s.len(), template.len());
            for (c, b) in template.chars().zip(s.bytes()) {
                prop_assert!(match c {
                    '#' => b.is_ascii_digit(),
                    '@' => b.is_ascii_lowercase(),
                    c => b == c as u8,
                }, "{template} gave {s}");
            }
        }
    }

    /// In range, with at most `scale` decimals (as a number prints, i.e. as it is bound).
    #[test]
    fn floats_in_range_with_scale_decimals(lo in -1.0e6f64..1.0e6, hi in -1.0e6f64..1.0e6, scale in 0u32..=6, seed in 1u64..) {
        match compile(&GenSpec::Float { min: kf(lo), max: kf(hi), scale }, Phase::Run, 1) {
            Ok((g, id)) => {
                for v in draws(&g, id, seed, 16, &Frame::default()) {
                    let Val::Float(x) = v else { panic!("{v:?}") };
                    prop_assert!(lo.min(hi) <= x && x <= lo.max(hi), "[{lo}, {hi}] gave {x}");
                    let decimals = x.to_string().split('.').nth(1).map_or(0, str::len);
                    prop_assert!(decimals <= scale as usize, "{x} has more than {scale} decimals");
                }
            }
            // Only a range narrower than one step can hold no number with `scale` decimals.
            Err(e) => prop_assert!((hi - lo).abs() < 10f64.powi(-(scale as i32)), "{e}"),
        }
    }

    /// Only listed values, never one of weight 0.
    #[test]
    fn choice_yields_listed_values(weights in prop::collection::vec(0u32..4, 1..8), weighted in any::<bool>(), seed in 1u64..) {
        prop_assume!(!weighted || weights.iter().any(|&w| w > 0));
        let values: Vec<Val> = (0..weights.len() as i64).map(Val::Int).collect();
        let (g, id) = one(GenSpec::Choice {
            values,
            weights: if weighted { weights.clone() } else { Vec::new() },
        });
        for v in draws(&g, id, seed, 32, &Frame::default()) {
            let i = int(&v);
            prop_assert!((0..weights.len() as i64).contains(&i));
            prop_assert!(!weighted || weights[i as usize] > 0, "{i} has weight 0");
        }
    }

    /// Three words of the list: the digits of the value modulo 1000, zero-padded.
    #[test]
    fn syllables_are_three_words(n in bound()) {
        let words: Vec<String> = SYLLABLES.iter().map(|w| w.to_string()).collect();
        let (g, id) = one(GenSpec::Syllables { of: ex("n"), words });
        let v = draws(&g, id, 1, 1, &frame(&[0, 0, n])).remove(0);
        let m = n.rem_euclid(1000) as usize;
        let expected = [m / 100, m / 10 % 10, m % 10].map(|d| SYLLABLES[d]).concat();
        prop_assert_eq!(text(&v), expected.as_str());
        // The syllables are prefix-free: the name splits back into exactly three of them.
        let mut rest = text(&v);
        for _ in 0..3 {
            let w = SYLLABLES.iter().find(|w| rest.starts_with(*w));
            prop_assert!(w.is_some(), "{rest}");
            rest = &rest[w.map_or(0, |w| w.len())..];
        }
        prop_assert_eq!(rest, "");
    }

    /// The same seed and thread give the same values; another thread, another stream.
    #[test]
    fn seeded_draws_repeat_per_thread(seed in 1u64.., thread in 0usize..64) {
        let run = |t: usize| {
            let (g, ids) = every_generator();
            let mut rng = Rng::for_thread(seed, t);
            let mut local = g.local(t);
            let f = frame(&[3, 40, 517]);
            (0..10)
                .flat_map(|_| ids.iter().map(|&id| g.draw(id, &mut rng, &f, &mut local).expect("draws")).collect::<Vec<_>>())
                .collect::<Vec<_>>()
        };
        let first = run(thread);
        prop_assert_eq!(&first, &run(thread));
        prop_assert_ne!(&first, &run(thread + 1));
    }

    /// TPC-C 2.1.6: C in [0, A]; the load's C does not depend on the seed (a dataset is
    /// run with any seed); C_LAST's run C is at an allowed distance from the load's.
    #[test]
    fn nurand_c_per_phase(a in prop_oneof![Just(255i64), Just(1023), Just(8191), 0i64..100_000], seed in any::<u64>()) {
        let load = nurand_c(a, Phase::Load, seed);
        let run = nurand_c(a, Phase::Run, seed);
        prop_assert!((0..=a).contains(&load) && (0..=a).contains(&run), "A = {a}: {load}, {run}");
        prop_assert_eq!(load, nurand_c(a, Phase::Load, seed ^ 1));
        if a == C_LAST_A {
            prop_assert!(c_last_delta_ok((run - load).abs()), "C_load {load}, C_run {run}");
        }
    }
}

/// One generator of each kind but `date` (the clock), for determinism checks.
fn every_generator() -> (Gens, Vec<GenId>) {
    let o = opts();
    let ctx = Context::run(&o, 9, &tables);
    let mut g = Gens::default();
    let mut specs: Vec<GenSpec> = DISTS
        .iter()
        .map(|&dist| GenSpec::Dist {
            dist,
            lo: k(1),
            hi: ex("n * 3"),
        })
        .collect();
    specs.extend([
        GenSpec::Sequence {
            start: 10,
            per_thread: true,
        },
        GenSpec::Sequence {
            start: 10,
            per_thread: false,
        },
        GenSpec::NuRand {
            a: 255,
            lo: k(0),
            hi: k(999),
        },
        GenSpec::Choice {
            values: vec![Val::Int(1), Val::Str("b".into()), Val::Null],
            weights: vec![3, 1, 1],
        },
        GenSpec::Choice {
            values: vec![Val::Int(1), Val::Int(2)],
            weights: vec![],
        },
        GenSpec::Pattern("##-@@".into()),
        GenSpec::AString {
            min: k(5),
            max: k(10),
        },
        GenSpec::NString {
            min: k(5),
            max: ex("lo * 3"),
        },
        GenSpec::Float {
            min: kf(-1.5),
            max: kf(99.0),
            scale: 2,
        },
        GenSpec::Syllables {
            of: ex("n"),
            words: SYLLABLES.iter().map(|w| w.to_string()).collect(),
        },
        GenSpec::Const(Val::Int(7)),
        GenSpec::Fk("items".into()),
        GenSpec::Thread,
        GenSpec::Expr(ex("lo + hi")),
    ]);
    let ids = specs
        .iter()
        .map(|s| g.add(s, &ctx).expect("valid"))
        .collect();
    (g, ids)
}

#[test]
fn every_generator_draws() {
    let (g, ids) = every_generator();
    let mut rng = Rng::for_thread(3, 2);
    let mut local = g.local(2);
    let f = frame(&[3, 40, 517]);
    let vals: Vec<Val> = ids
        .iter()
        .map(|&id| g.draw(id, &mut rng, &f, &mut local).expect("draws"))
        .collect();
    let n = vals.len();
    assert_eq!(vals[n - 1], Val::Int(43), "the expression lo + hi");
    assert_eq!(vals[n - 2], Val::Int(2), "the thread id");
    assert!((1..=100).contains(&int(&vals[n - 3])), "fk");
    assert_eq!(vals[n - 4], Val::Int(7));
    assert_eq!(text(&vals[n - 5]), "ESEOUGHTCALLY", "5, 1, 7");
}

/// Regression (#15): `[i64::MIN, i64::MAX]` computed `b - a` in i64 (a panic in debug, a
/// wrapped span in release); NURand overflowed likewise.
#[test]
fn extreme_bounds_are_drawn_not_overflowed() {
    for (lo, hi) in [(i64::MIN, i64::MAX), (i64::MAX, i64::MIN), (i64::MIN, 0)] {
        for dist in DISTS {
            let (g, id) = one(GenSpec::Dist {
                dist,
                lo: k(lo),
                hi: k(hi),
            });
            let xs: HashSet<i64> = draws(&g, id, 77, 64, &Frame::default())
                .iter()
                .map(int)
                .collect();
            assert!(xs.len() > 16, "{dist:?} [{lo}, {hi}]: {xs:?}");
        }
        let (g, id) = one(GenSpec::NuRand {
            a: 8191,
            lo: k(lo),
            hi: k(hi),
        });
        let xs: HashSet<i64> = draws(&g, id, 77, 64, &Frame::default())
            .iter()
            .map(int)
            .collect();
        assert!(xs.len() > 16, "nurand [{lo}, {hi}]: {xs:?}");
    }
}

/// Regression (#15): with x < 0, `random(0, A) | random(x, y)` is negative and `%` kept the
/// sign, giving values below x.
#[test]
fn nurand_with_negative_bounds_stays_in_range() {
    let mut rng = Rng::for_thread(1, 0);
    for _ in 0..10_000 {
        let v = nurand(&mut rng, 255, 0, -10, -1);
        assert!((-10..=-1).contains(&v), "{v}");
    }
}

#[test]
fn bad_generators_are_errors() {
    let bad = |spec: GenSpec| {
        compile(&spec, Phase::Run, 1)
            .expect_err("refused")
            .to_string()
    };
    let e = bad(GenSpec::NuRand {
        a: -1,
        lo: k(1),
        hi: k(3),
    });
    assert!(e.contains("A >= 0"), "{e}");
    let e = bad(GenSpec::AString {
        min: k(1),
        max: k(MAX_TEXT + 1),
    });
    assert!(e.contains("over the limit"), "{e}");
    let e = bad(GenSpec::Float {
        min: kf(0.001),
        max: kf(0.002),
        scale: 2,
    });
    assert!(e.contains("no number with 2 decimals"), "{e}");
    let e = bad(GenSpec::Float {
        min: kf(0.0),
        max: kf(1.0),
        scale: 16,
    });
    assert!(e.contains("at most 15"), "{e}");
    let e = bad(GenSpec::Float {
        min: kf(0.0),
        max: kf(1.0e9),
        scale: 10,
    });
    assert!(e.contains("more digits than a double"), "{e}");
    let e = bad(GenSpec::Dist {
        dist: Dist::Uniform,
        lo: kf(1.5),
        hi: k(3),
    });
    assert!(e.contains("not an integer"), "{e}");
    let e = bad(GenSpec::Fk("nope".into()));
    assert!(e.contains("does not load"), "{e}");
    let e = bad(GenSpec::Choice {
        values: vec![Val::Int(1)],
        weights: vec![0],
    });
    assert!(e.contains("every weight"), "{e}");

    // The same limits when the bounds are variables: errors at the draw, not panics.
    let (g, id) = one(GenSpec::AString {
        min: k(0),
        max: ex("n"),
    });
    let mut local = g.local(0);
    let e = g
        .draw(
            id,
            &mut Rng::for_thread(1, 0),
            &frame(&[0, 0, i64::MAX]),
            &mut local,
        )
        .expect_err("too long")
        .to_string();
    assert!(e.contains("over the limit"), "{e}");
    let (g, id) = one(GenSpec::Float {
        min: ex("lo"),
        max: ex("hi"),
        scale: 0,
    });
    let e = g
        .draw(
            id,
            &mut Rng::for_thread(1, 0),
            &Frame {
                vals: vec![Val::Float(0.2), Val::Float(0.7)],
            },
            &mut local,
        )
        .expect_err("no integer in [0.2, 0.7]")
        .to_string();
    assert!(e.contains("no number with 0 decimals"), "{e}");
    let (g, id) = one(GenSpec::Dist {
        dist: Dist::Uniform,
        lo: k(0),
        hi: ex("hi"),
    });
    let e = g
        .draw(
            id,
            &mut Rng::for_thread(1, 0),
            &Frame {
                vals: vec![Val::Null, Val::Str("ten".into())],
            },
            &mut local,
        )
        .expect_err("not a number")
        .to_string();
    assert!(e.contains("not an integer"), "{e}");
}

/// Regression (#15): rounding `lo + U·(hi − lo)` to `scale` decimals could step past the
/// bounds (1.0051 → 1.01 for max = 1.006).
#[test]
fn float_rounding_never_leaves_the_range() {
    let (g, id) = one(GenSpec::Float {
        min: kf(0.996),
        max: kf(1.006),
        scale: 2,
    });
    let xs: HashSet<String> = draws(&g, id, 4, 20_000, &Frame::default())
        .iter()
        .map(|v| v.to_string())
        .collect();
    let expected: HashSet<String> = ["1"].iter().map(|s| s.to_string()).collect();
    assert_eq!(xs, expected, "only 1.00 has 2 decimals in [0.996, 1.006]");
    let (g, id) = one(GenSpec::Float {
        min: kf(0.0),
        max: kf(1.006),
        scale: 2,
    });
    for v in draws(&g, id, 4, 20_000, &Frame::default()) {
        let Val::Float(x) = v else { panic!() };
        assert!((0.0..=1.006).contains(&x), "{x}");
    }
}

#[test]
fn per_thread_sequences_are_independent() {
    let (g, id) = one(GenSpec::Sequence {
        start: 5,
        per_thread: true,
    });
    let mut rng = Rng::for_thread(1, 0);
    let (mut a, mut b) = (g.local(0), g.local(1));
    let f = Frame::default();
    let mut next = |l: &mut Local| int(&g.draw(id, &mut rng, &f, l).expect("draws"));
    assert_eq!([next(&mut a), next(&mut a), next(&mut a)], [5, 6, 7]);
    assert_eq!([next(&mut b), next(&mut a), next(&mut b)], [5, 8, 6]);
}

/// Four threads share a global sequence: every value once, none missing.
#[test]
fn the_global_sequence_is_distinct_across_threads() {
    let (g, id) = one(GenSpec::Sequence {
        start: -1000,
        per_thread: false,
    });
    let per = 5_000;
    let all: Vec<i64> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|t| {
                let g = &g;
                s.spawn(move || {
                    let mut rng = Rng::for_thread(1, t);
                    let mut local = g.local(t);
                    (0..per)
                        .map(|_| {
                            int(&g
                                .draw(id, &mut rng, &Frame::default(), &mut local)
                                .expect("draws"))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter()
            .flat_map(|h| h.join().expect("thread"))
            .collect()
    });
    let distinct: HashSet<i64> = all.iter().copied().collect();
    assert_eq!(distinct.len(), 4 * per);
    assert_eq!(distinct, (-1000..-1000 + 4 * per as i64).collect());
}

/// Three clients' shards of one global sequence (#17) draw what one process draws.
#[test]
fn sharded_global_sequences_are_disjoint() {
    let mut all = Vec::new();
    for index in 0..3 {
        let (mut g, id) = one(GenSpec::Sequence {
            start: 10,
            per_thread: false,
        });
        g.shard(Some(crate::engine::Shard {
            index,
            count: 3,
            total_threads: 3,
            thread_offset: index,
        }));
        let mut rng = Rng::for_thread(1, index);
        let mut local = g.local(index);
        for _ in 0..50 {
            all.push(int(&g
                .draw(id, &mut rng, &Frame::default(), &mut local)
                .expect("draws")));
        }
    }
    all.sort_unstable();
    assert_eq!(all, (10..160).collect::<Vec<i64>>());
}

/// Regression (#15): a sequence passing i64::MAX overflowed (per thread: a panic in debug;
/// global: it wrapped to i64::MIN). Now the value after i64::MAX is an error.
#[test]
fn exhausted_sequences_are_errors() {
    for per_thread in [true, false] {
        let (g, id) = one(GenSpec::Sequence {
            start: i64::MAX - 1,
            per_thread,
        });
        let mut rng = Rng::for_thread(1, 0);
        let mut local = g.local(0);
        let f = Frame::default();
        let mut next = || g.draw(id, &mut rng, &f, &mut local);
        assert_eq!(next(), Ok(Val::Int(i64::MAX - 1)));
        assert_eq!(next(), Ok(Val::Int(i64::MAX)));
        let e = next().expect_err("exhausted");
        assert_eq!(
            e,
            ValueError::Exhausted {
                start: i64::MAX - 1
            }
        );
        let e = e.to_string();
        assert!(e.contains("exhausted"), "{e}");
        assert!(next().is_err(), "and stays so");
    }
}

/// TPC-C 2.1.6.1 through the API the loader and the runtime use: the C of NURand(255, …)
/// differs between `Context::load` and `Context::run` by an allowed delta, for seeded runs
/// and for `rand_seed = 0` (the clock); every generator with the same A shares one C.
#[test]
fn c_last_differs_between_load_and_run() {
    let o = opts();
    let spec = GenSpec::NuRand {
        a: 255,
        lo: k(0),
        hi: k(999),
    };
    let mut deltas = HashSet::new();
    for seed in (0..200).chain([0, 0, 0]) {
        let mut load = Gens::default();
        let l = load.add(&spec, &Context::load(&o, seed, &tables)).unwrap();
        let mut run = Gens::default();
        let r1 = run.add(&spec, &Context::run(&o, seed, &tables)).unwrap();
        let r2 = run.add(&spec, &Context::run(&o, seed, &tables)).unwrap();
        let (cl, cr) = (c_of(&load, l), c_of(&run, r1));
        assert!(c_last_delta_ok((cr - cl).abs()), "seed {seed}: {cl} / {cr}");
        assert_eq!(cr, c_of(&run, r2), "one C per A in a step");
        deltas.insert(cr - cl);
    }
    // Many of the 53 allowed distances are used.
    assert!(deltas.len() > 30, "{deltas:?}");
    assert_eq!(
        (65..=119).filter(|&d| c_last_delta_ok(d)).count(),
        53,
        "2.1.6.1: [65, 119] without 96 and 112"
    );
    assert!(!c_last_delta_ok(96) && !c_last_delta_ok(112) && !c_last_delta_ok(0));
    // Seeded runs repeat their C; the other A's keep theirs within [0, A].
    assert_eq!(
        nurand_c(1023, Phase::Run, 42),
        nurand_c(1023, Phase::Run, 42)
    );
}

/// Whatever C the load used, the run's is in [0, 255] at an allowed distance, and both
/// directions are used where both fit.
#[test]
fn c_last_run_fits_every_load_c() {
    let mut rng = Rng::for_thread(8, 0);
    for load in 0..=C_LAST_A {
        let runs: Vec<i64> = (0..64).map(|_| c_last_run(load, &mut rng)).collect();
        for &r in &runs {
            assert!((0..=C_LAST_A).contains(&r), "{load} → {r}");
            assert!(c_last_delta_ok((r - load).abs()), "{load} → {r}");
        }
        // Every delta fits both ways from [119, 136]: each side has probability 1/2.
        if (119..=C_LAST_A - 119).contains(&load) {
            assert!(runs.iter().any(|&r| r > load) && runs.iter().any(|&r| r < load));
        }
    }
}

// ---- shapes ------------------------------------------------------------------------

/// Draws of `spec` (thread 0, seed `seed`) counted per value.
fn counts(spec: GenSpec, seed: u64, n: usize) -> std::collections::HashMap<i64, u64> {
    let (g, id) = one(spec);
    let mut rng = Rng::for_thread(seed, 0);
    let mut local = g.local(0);
    let f = Frame::default();
    let mut m = std::collections::HashMap::new();
    for _ in 0..n {
        *m.entry(int(&g.draw(id, &mut rng, &f, &mut local).unwrap()))
            .or_insert(0) += 1;
    }
    m
}

fn share(
    c: &std::collections::HashMap<i64, u64>,
    range: std::ops::RangeInclusive<i64>,
    n: usize,
) -> f64 {
    c.iter()
        .filter(|(v, _)| range.contains(v))
        .map(|(_, k)| *k)
        .sum::<u64>() as f64
        / n as f64
}

/// Asserts a share `got` of `n` draws is within Z binomial standard deviations of `p`.
fn assert_share(what: &str, got: f64, p: f64, n: usize) {
    let tol = Z * (p * (1.0 - p) / n as f64).sqrt();
    assert!(
        (got - p).abs() <= tol,
        "{what}: {got:.5}, expected {p:.5} ± {tol:.5}"
    );
}

/// The chi-square quantile for `df` degrees of freedom at standard-normal quantile `z`
/// (Wilson & Hilferty 1931: (χ²/df)^(1/3) is close to normal with mean 1 − 2/(9·df) and
/// variance 2/(9·df)).
fn chi2_quantile(df: f64, z: f64) -> f64 {
    let v = 2.0 / (9.0 * df);
    df * (1.0 - v + z * v.sqrt()).powi(3)
}

/// Pearson's statistic of observed counts against expected probabilities; bins expected
/// to hold fewer than 5 draws (where the chi-square law does not hold) are pooled into
/// one. Returns (statistic, degrees of freedom).
fn chi2(observed: &[u64], probs: &[f64], n: usize) -> (f64, f64) {
    let n = n as f64;
    let (mut stat, mut bins) = (0.0, 0usize);
    let (mut pooled_o, mut pooled_e) = (0.0, 0.0);
    for (&o, &p) in observed.iter().zip(probs) {
        let e = p * n;
        if e < 5.0 {
            pooled_o += o as f64;
            pooled_e += e;
        } else {
            stat += (o as f64 - e).powi(2) / e;
            bins += 1;
        }
    }
    if pooled_e > 0.0 {
        stat += (pooled_o - pooled_e).powi(2) / pooled_e;
        bins += 1;
    }
    (stat, (bins - 1) as f64)
}

/// P(S < x) for S the sum of n independent U(0, 1) (the Irwin–Hall law):
/// 1/n! · Σ_{k=0}^{⌊x⌋} (−1)^k · C(n, k) · (x − k)^n.
fn irwin_hall_cdf(n: u32, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= f64::from(n) {
        return 1.0;
    }
    let (mut sum, mut binom, mut fact) = (0.0, 1.0, 1.0);
    for j in 1..=n {
        fact *= f64::from(j);
    }
    for j in 0..=(x.floor() as u32) {
        let sign = if j % 2 == 0 { 1.0 } else { -1.0 };
        sum += sign * binom * (x - f64::from(j)).powi(n as i32);
        binom = binom * f64::from(n - j) / f64::from(j + 1);
    }
    sum / fact
}

#[test]
fn irwin_hall_cdf_is_right() {
    assert!((irwin_hall_cdf(1, 0.3) - 0.3).abs() < 1e-12);
    assert!((irwin_hall_cdf(2, 1.5) - 0.875).abs() < 1e-12);
    assert!((irwin_hall_cdf(12, 6.0) - 0.5).abs() < 1e-9);
}

/// sysbench's special(a, b) with rand_spec_pct = 1, rand_spec_res = 75, iter = 12
/// (random.rs): u < (100 − res)/100 = 0.25 → the Irwin–Hall mean of 12 draws over the
/// whole range; otherwise v = u·(d + 1) + t/2 − t·pct/200 with t = b − a, d = t·pct/100,
/// which for u ∈ [0.25, 1) covers the window W below. So
/// P(W) = 0.75 + 0.25 · P(Irwin–Hall mean lands in W), computed exactly.
#[test]
fn special_puts_sysbench_share_in_the_centre_band() {
    let (a, b) = (1i64, 10_000i64);
    let (pct, res, iter) = (1.0, 75.0, 12u32);
    let t = (b - a) as f64;
    let d = t * pct / 100.0;
    let u0 = (100.0 - res) / 100.0;
    let v0 = u0 * (d + 1.0) + t / 2.0 - t * pct / 200.0;
    let v1 = (d + 1.0) + t / 2.0 - t * pct / 200.0; // exclusive (u < 1)
    let (w0, w1) = (a + v0.floor() as i64, a + v1.ceil() as i64 - 1);
    assert_eq!((w0, w1), (4975, 5051), "the window, worked out by hand");
    // The Irwin–Hall part: a + ⌊t·S/iter⌋ ∈ W ⟺ S ∈ [iter·(w0 − a)/t, iter·(w1 − a + 1)/t).
    let s = |v: i64| f64::from(iter) * (v - a) as f64 / t;
    let p_ih = irwin_hall_cdf(iter, s(w1 + 1)) - irwin_hall_cdf(iter, s(w0));
    let p = res / 100.0 + u0 * p_ih;
    assert!((0.758..0.761).contains(&p), "{p}: about 75.9 %");
    let n = 200_000;
    let c = counts(
        GenSpec::Dist {
            dist: Dist::Special,
            lo: k(a),
            hi: k(b),
        },
        1,
        n,
    );
    assert_share("special's centre window", share(&c, w0..=w1, n), p, n);
    // The gaussian part alone around the window: P(just below W) from the same law.
    let below = irwin_hall_cdf(iter, s(w0)) - irwin_hall_cdf(iter, s(w0 - 77));
    assert_share(
        "the 77 values below the window",
        share(&c, (w0 - 77)..=(w0 - 1), n),
        u0 * below,
        n,
    );
}

/// gaussian(a, b): a + ⌊w·M⌋ with w = b − a + 1 and M the mean of 12 uniforms (Irwin–Hall
/// / 12): symmetric about the midpoint, σ = w/√(12·12), and the share within k·σ is the
/// Irwin–Hall probability.
#[test]
fn gaussian_is_symmetric_with_the_irwin_hall_spread() {
    let (a, b, iter) = (1i64, 10_000i64, 12u32);
    let w = (b - a + 1) as f64;
    let n = 100_000;
    let (g, id) = one(GenSpec::Dist {
        dist: Dist::Gaussian,
        lo: k(a),
        hi: k(b),
    });
    let xs: Vec<f64> = draws(&g, id, 2, n, &Frame::default())
        .iter()
        .map(|v| int(v) as f64)
        .collect();
    let mid = (a + b) as f64 / 2.0;
    let sigma = w / f64::from(12 * iter).sqrt();
    let mean = xs.iter().sum::<f64>() / n as f64;
    let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
    // Standard errors: σ/√n for the mean; σ·√((β₂ − 1)/(4n)) for the sd, with the
    // kurtosis β₂ = 3 − 6/(5·iter) of the Irwin–Hall mean.
    let mean_tol = Z * sigma / (n as f64).sqrt();
    let kurt = 3.0 - 6.0 / (5.0 * f64::from(iter));
    let sd_tol = Z * sigma * ((kurt - 1.0) / (4.0 * n as f64)).sqrt();
    assert!(
        (mean - mid).abs() <= mean_tol,
        "mean {mean} vs {mid} ± {mean_tol}"
    );
    assert!(
        (sd - sigma).abs() <= sd_tol,
        "sd {sd} vs {sigma} ± {sd_tol}"
    );
    // Symmetry: a + ⌊wM⌋ ≤ a + w/2 − 1 ⟺ M < 1/2, probability 1/2 exactly.
    let below = xs.iter().filter(|&&x| x < mid).count() as f64 / n as f64;
    assert_share("below the midpoint", below, 0.5, n);
    for ks in [1.0, 2.0] {
        // ⌊wM⌋ ∈ [lo, hi] ⟺ S = iter·M ∈ [iter·lo/w, iter·(hi + 1)/w).
        let lo = (w * (0.5 - ks / f64::from(12 * iter).sqrt())).ceil();
        let hi = (w * (0.5 + ks / f64::from(12 * iter).sqrt())).floor() - 1.0;
        let it = f64::from(iter);
        let p = irwin_hall_cdf(iter, it * (hi + 1.0) / w) - irwin_hall_cdf(iter, it * lo / w);
        let got = xs
            .iter()
            .filter(|&&x| (lo..=hi).contains(&(x - a as f64)))
            .count() as f64
            / n as f64;
        assert_share(&format!("within {ks}σ"), got, p, n);
    }
}

/// pareto(a, b) with h = 0.2: a + ⌊w·U^p⌋, p = ln h / ln(1 − h), so
/// P(value < a + q·w) = P(U < q^(1/p)) = q^(ln(1−h)/ln h); at q = h that is 1 − h = 80 %.
#[test]
fn pareto_puts_80_percent_in_the_first_20_percent() {
    let (a, b) = (1i64, 10_000i64);
    let w = (b - a + 1) as f64;
    let n = 100_000;
    let c = counts(
        GenSpec::Dist {
            dist: Dist::Pareto,
            lo: k(a),
            hi: k(b),
        },
        3,
        n,
    );
    let h: f64 = 0.2;
    for q in [0.01f64, 0.2, 0.5] {
        let p = q.powf((1.0 - h).ln() / h.ln());
        let upto = a + (q * w) as i64 - 1;
        assert_share(&format!("pareto below {q}"), share(&c, a..=upto, n), p, n);
    }
    assert!((0.2f64.powf(0.8f64.ln() / 0.2f64.ln()) - 0.8).abs() < 1e-12);
}

/// zipfian(1, N) with exponent s: P(rank k) = k^−s / H(N, s), H the generalized harmonic
/// number; rank 1 ≈ 1/H, and a chi-square over ranks 1..10 and two tail buckets.
#[test]
fn zipfian_rank_frequencies() {
    let (nv, s) = (1000i64, 0.8);
    let h: f64 = (1..=nv).map(|r| (r as f64).powf(-s)).sum();
    let n = 200_000;
    let c = counts(
        GenSpec::Dist {
            dist: Dist::Zipfian,
            lo: k(1),
            hi: k(nv),
        },
        4,
        n,
    );
    assert_share("rank 1", share(&c, 1..=1, n), 1.0 / h, n);
    let mut buckets: Vec<std::ops::RangeInclusive<i64>> = (1..=10).map(|r| r..=r).collect();
    buckets.extend([11..=100, 101..=nv]);
    let probs: Vec<f64> = buckets
        .iter()
        .map(|r| r.clone().map(|k| (k as f64).powf(-s)).sum::<f64>() / h)
        .collect();
    let observed: Vec<u64> = buckets
        .iter()
        .map(|r| (share(&c, r.clone(), n) * n as f64).round() as u64)
        .collect();
    let (stat, df) = chi2(&observed, &probs, n);
    assert!(stat <= chi2_quantile(df, Z), "χ² {stat} over {df} df");
}

/// uniform(−50, 49): 100 equally likely values; Pearson's χ² (99 df) between its lower
/// and upper Z quantiles (too even would be as suspicious as too uneven).
#[test]
fn uniform_passes_chi_square() {
    let n = 100_000;
    let c = counts(
        GenSpec::Dist {
            dist: Dist::Uniform,
            lo: k(-50),
            hi: k(49),
        },
        5,
        n,
    );
    assert!(c.keys().all(|v| (-50..=49).contains(v)));
    let observed: Vec<u64> = (-50..=49)
        .map(|v| c.get(&v).copied().unwrap_or(0))
        .collect();
    let (stat, df) = chi2(&observed, &[0.01; 100], n);
    assert_eq!(df, 99.0);
    let (lo, hi) = (chi2_quantile(df, -Z), chi2_quantile(df, Z));
    assert!((lo..=hi).contains(&stat), "χ² {stat} not in [{lo}, {hi}]");
}

/// NURand(255, 0, 999): the exact law, enumerated over the 256 × 1000 equally likely
/// (r1, r2), fits the draws; the values whose low 8 bits are all set by the OR (255, 511,
/// 767, shifted by C) each have 3⁸/256000 ≈ 2.6 %, 26× a uniform draw's share, and the
/// uniform law is rejected by far, as TPC-C intends.
#[test]
fn nurand_is_non_uniform_as_tpcc_intends() {
    let (g, id) = one(GenSpec::NuRand {
        a: 255,
        lo: k(0),
        hi: k(999),
    });
    let cc = c_of(&g, id);
    let mut exact = vec![0.0; 1000];
    for r1 in 0..=255i64 {
        for r2 in 0..=999i64 {
            exact[(((r1 | r2) + cc) % 1000) as usize] += 1.0 / 256_000.0;
        }
    }
    let n = 200_000;
    let c = counts(
        GenSpec::NuRand {
            a: 255,
            lo: k(0),
            hi: k(999),
        },
        6,
        n,
    );
    let observed: Vec<u64> = (0..1000).map(|v| c.get(&v).copied().unwrap_or(0)).collect();
    let (stat, df) = chi2(&observed, &exact, n);
    assert!(
        stat <= chi2_quantile(df, Z),
        "against the exact law: χ² {stat}, {df} df"
    );
    let (stat, df) = chi2(&observed, &[0.001; 1000], n);
    assert!(
        stat > 10.0 * chi2_quantile(df, Z),
        "against uniform: χ² {stat}, {df} df"
    );
    for top in [255, 511, 767] {
        let v = (top + cc) % 1000;
        assert!((exact[v as usize] - 6561.0 / 256_000.0).abs() < 1e-12);
        assert_share(
            &format!("value {v}"),
            share(&c, v..=v, n),
            6561.0 / 256_000.0,
            n,
        );
    }
}

/// `choice` with weights 3:1 (and a third value of weight 0): a binomial 3/4 share.
#[test]
fn weighted_choice_follows_its_weights() {
    let (g, id) = one(GenSpec::Choice {
        values: vec![
            Val::Str("a".into()),
            Val::Str("b".into()),
            Val::Str("c".into()),
        ],
        weights: vec![3, 1, 0],
    });
    let n = 100_000;
    let vals = draws(&g, id, 7, n, &Frame::default());
    let a = vals.iter().filter(|v| text(v) == "a").count() as f64 / n as f64;
    assert!(
        vals.iter().all(|v| text(v) != "c"),
        "weight 0 is never drawn"
    );
    assert_share("weight 3 of 4", a, 0.75, n);
}

// Distributions with parameters of their own (#31).

fn tuned(dist: Dist, lo: i64, hi: i64, params: DistParams) -> GenSpec {
    GenSpec::Tuned {
        dist,
        lo: k(lo),
        hi: k(hi),
        params,
    }
}

/// Two zipfians side by side, one with the run's exponent (0.8 in [`opts`]) and one with its
/// own (1.2): each rank-1 share is 1/H(N, s) of its own exponent.
#[test]
fn zipfian_exponent_is_per_generator() {
    let (nv, n) = (1000i64, 200_000);
    for (s, params) in [
        (0.8, DistParams::default()),
        (
            1.2,
            DistParams {
                exponent: Some(1.2),
                ..DistParams::default()
            },
        ),
    ] {
        let h: f64 = (1..=nv).map(|r| (r as f64).powf(-s)).sum();
        let c = counts(tuned(Dist::Zipfian, 1, nv, params), 11, n);
        assert_share(&format!("rank 1 at {s}"), share(&c, 1..=1, n), 1.0 / h, n);
        let top10: f64 = (1..=10).map(|r| (r as f64).powf(-s)).sum::<f64>() / h;
        assert_share(
            &format!("ranks 1-10 at {s}"),
            share(&c, 1..=10, n),
            top10,
            n,
        );
    }
}

/// pareto with its own h = 0.1: P(value < a + h·w) = 1 − h = 90 % (80 % with the run's 0.2).
#[test]
fn pareto_h_is_per_generator() {
    let n = 100_000;
    let params = DistParams {
        h: Some(0.1),
        ..DistParams::default()
    };
    let c = counts(tuned(Dist::Pareto, 1, 10_000, params), 12, n);
    assert_share("pareto h = 0.1", share(&c, 1..=1000, n), 0.9, n);
}

/// gaussian with `iter = 1` is one uniform draw (the run's 12 squeeze it to the centre):
/// the lowest tenth holds 10 %.
#[test]
fn gaussian_iter_is_per_generator() {
    let n = 100_000;
    let one_term = DistParams {
        iter: Some(1),
        ..DistParams::default()
    };
    let c = counts(tuned(Dist::Gaussian, 1, 1000, one_term), 13, n);
    assert_share(
        "gaussian iter = 1, lowest tenth",
        share(&c, 1..=100, n),
        0.1,
        n,
    );
    let c = counts(tuned(Dist::Gaussian, 1, 1000, DistParams::default()), 13, n);
    assert!(share(&c, 1..=100, n) < 0.001, "the run's iter = 12");
}

/// special with `res = 100`: every draw in the `pct` % window at the centre.
#[test]
fn special_pct_and_res_are_per_generator() {
    let n = 20_000;
    let params = DistParams {
        pct: Some(10),
        res: Some(100),
        ..DistParams::default()
    };
    let c = counts(tuned(Dist::Special, 0, 1000, params), 14, n);
    assert!(
        c.keys().all(|v| (449..=551).contains(v)),
        "{:?}",
        c.keys().min()
    );
    assert!(c.len() > 50, "spread over the window");
}

/// A bad per-generator parameter is an error naming it, not the run-wide option.
#[test]
fn a_bad_per_generator_h_names_the_key() {
    let params = DistParams {
        h: Some(1.5),
        ..DistParams::default()
    };
    let e = compile(&tuned(Dist::Pareto, 1, 10, params), Phase::Run, 1).unwrap_err();
    assert!(e.to_string().contains("`h` is 1.5"), "{e}");
}

/// YCSB's scrambled zipfian: in range, its hottest value is item 0's hash (share 1/ζ ≈
/// 1/26.47 for 0.99 over 10¹⁰ items, plus what other items hash onto it), and the hot
/// values are spread over the range instead of crowding its start.
#[test]
fn scrambled_zipfian_is_ycsbs() {
    let (lo, hi, n) = (1i64, 1000i64, 200_000);
    let params = DistParams {
        scrambled: true,
        ..DistParams::default()
    };
    let c = counts(tuned(Dist::Zipfian, lo, hi, params), 15, n);
    assert!(c.keys().all(|v| (lo..=hi).contains(v)));
    let hot = lo + (shapes::fnv_hash64(0) % 1000) as i64;
    let p = 1.0 / 26.469_028_201_783_02;
    let got = share(&c, hot..=hot, n);
    // Other items land on it too: about 1/1000 of the rest.
    assert!(
        got > p - Z * (p * (1.0 - p) / n as f64).sqrt() && got < p + 0.003,
        "hottest {hot}: {got}"
    );
    let mut by_count: Vec<(u64, i64)> = c.iter().map(|(v, k)| (*k, *v)).collect();
    by_count.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(by_count[0].1, hot);
    let top: Vec<i64> = by_count[..10].iter().map(|(_, v)| *v).collect();
    assert!(
        top.iter().any(|v| *v > 500) && top.iter().any(|v| *v <= 500),
        "spread: {top:?}"
    );
    // Unlike a plain zipfian, the start of the range is not where the mass is.
    assert!(share(&c, 1..=10, n) < 0.1);
}

/// YCSB's FNV-1 64 of a long's 8 bytes, then `Math.abs`.
#[test]
fn fnv_hash64_is_fnv1_over_eight_bytes() {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for b in 258u64.to_le_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    assert_eq!(shapes::fnv_hash64(258), (h as i64).unsigned_abs());
    assert_ne!(shapes::fnv_hash64(0), shapes::fnv_hash64(1));
}

/// exponential (TPC-C's think time): mean μ(1 − e⁻¹⁰) under the cap at 10μ, e⁻¹ of the draws
/// above μ, none above 10μ; `scale = 0` gives integers.
#[test]
fn exponential_has_its_mean_and_cap() {
    let (mu, n) = (1000.0, 100_000);
    let (g, id) = one(GenSpec::Exponential {
        mean: kf(mu),
        cap: 10.0,
        scale: 3,
    });
    let xs: Vec<f64> = draws(&g, id, 16, n, &Frame::default())
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let mean = xs.iter().sum::<f64>() / n as f64;
    let want = mu * (1.0 - (-10.0f64).exp());
    assert!((mean - want).abs() < Z * mu / (n as f64).sqrt(), "{mean}");
    let above = xs.iter().filter(|x| **x > mu).count() as f64 / n as f64;
    assert_share("above the mean", above, (-1.0f64).exp(), n);
    assert!(xs.iter().all(|x| (0.0..=10.0 * mu).contains(x)));
    let (g, id) = one(GenSpec::Exponential {
        mean: kf(5.0),
        cap: 2.0,
        scale: 0,
    });
    let vs = draws(&g, id, 17, 10_000, &Frame::default());
    assert!(vs.iter().all(|v| matches!(v, Val::Int(0..=10))));
    // The cap at 2μ holds e⁻² of the draws.
    let capped = vs.iter().filter(|v| **v == Val::Int(10)).count() as f64 / 10_000.0;
    assert!(capped > 0.1, "{capped}");
}

/// A negative mean is refused when it is a constant and fails the draw when a variable.
#[test]
fn exponential_refuses_a_negative_mean() {
    let spec = GenSpec::Exponential {
        mean: kf(-1.0),
        cap: 10.0,
        scale: 3,
    };
    assert!(compile(&spec, Phase::Run, 1).is_err());
    let (g, id) = one(GenSpec::Exponential {
        mean: ex("lo"),
        cap: 10.0,
        scale: 3,
    });
    let mut rng = Rng::for_thread(1, 0);
    let mut local = g.local(0);
    let e = g
        .draw(id, &mut rng, &frame(&[-3, 0, 0]), &mut local)
        .unwrap_err();
    assert!(e.to_string().contains("use a number ≥ 0"), "{e}");
}
