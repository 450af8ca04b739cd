//! Exact hot paths (`wpp hot`): an exhaustive search over function-qualified events, counted
//! through the grammar. Checked against brute force on the expanded, qualified trace for every
//! compressor's grammar: the qualified grammar expands to the qualified trace, every reported
//! count and cost is exact, the reported set is exactly the minimal hot strings of the trace
//! (every window of every length counted), costs come sorted, and when nothing is hot the
//! costliest string of all is reported.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use proptest::prelude::*;
use wpp_grammar::Grammar;
use wpp_query::expand::expand;
use wpp_query::hot::crossings::count_all;
use wpp_query::hot::exact::{hot_paths_on, HotPaths};
use wpp_query::hot::qualified::{qualified_frequencies, qualify};
use wpp_query::hot::HotConfig;
use wpp_query::oracle::{occurrences, qualified_events};
use wpp_trace::{Alphabet, BlockId, Event, FunctionId};

type Qualified = (Event, Option<FunctionId>);

/// The qualified streams of a grammar, by brute force.
fn brute(g: &Grammar, a: &Alphabet) -> Vec<Vec<Qualified>> {
    g.starts()
        .iter()
        .map(|s| {
            let events: Vec<Event> = expand(g, s.rule)
                .iter()
                .map(|&t| a.event(t).unwrap())
                .collect();
            qualified_events(&events)
        })
        .collect()
}

/// Every string of `min_length..=max_length` qualified events with its exact cost, by counting
/// every window of every stream.
fn all_costs(
    streams: &[Vec<Qualified>],
    a: &Alphabet,
    costs: &[u64],
    cfg: HotConfig,
) -> BTreeMap<Vec<Qualified>, u64> {
    let mut counts: BTreeMap<Vec<Qualified>, u64> = BTreeMap::new();
    for s in streams {
        for len in cfg.min_length..=cfg.max_length {
            for w in s.windows(len) {
                *counts.entry(w.to_vec()).or_default() += 1;
            }
        }
    }
    let unit = |k: &[Qualified]| -> u64 {
        k.iter()
            .map(|(e, _)| costs[a.get(e).unwrap().index()])
            .sum()
    };
    counts
        .into_iter()
        .map(|(k, c)| {
            let cost = c * unit(&k);
            (k, cost)
        })
        .collect()
}

/// The minimal hot strings by definition: hot, and no shorter hot string (of at least
/// `min_length` events) inside.
fn minimal_hot(all: &BTreeMap<Vec<Qualified>, u64>, cfg: HotConfig) -> BTreeSet<Vec<Qualified>> {
    let hot = |k: &[Qualified]| all.get(k).is_some_and(|&c| c >= cfg.min_cost);
    all.keys()
        .filter(|k| hot(k))
        .filter(|k| !(cfg.min_length..k.len()).any(|m| k.windows(m).any(hot)))
        .cloned()
        .collect()
}

fn check(g: &Grammar, a: &Alphabet, costs: &[u64], cfg: HotConfig) -> HotPaths {
    let streams = brute(g, a);
    let q = qualify(g, a).unwrap();
    for (s, want) in q.grammar.starts().iter().zip(&streams) {
        let got: Vec<Qualified> = expand(&q.grammar, s.rule)
            .iter()
            .map(|t| {
                let (orig, f) = q.events[t.index()];
                (a.event(orig).unwrap(), f)
            })
            .collect();
        assert_eq!(
            &got, want,
            "the qualified grammar expands to the qualified trace"
        );
    }
    // Frequencies of the qualified terminals, without the qualified grammar.
    let (events, freq) = qualified_frequencies(g, a);
    for ((t, f), n) in events.iter().zip(&freq) {
        let e = (a.event(*t).unwrap(), *f);
        let want: usize = streams
            .iter()
            .map(|s| s.iter().filter(|&&x| x == e).count())
            .sum();
        assert_eq!(*n, want as u64, "{e:?}");
    }
    assert_eq!(
        freq.iter().sum::<u64>(),
        streams.iter().map(|s| s.len() as u64).sum::<u64>()
    );
    let found = hot_paths_on(g, a, Some(costs), cfg, 1).unwrap();
    for threads in [2, 3, 8] {
        // Passes cut inside long bodies, each part counted apart: the same answer.
        let other = hot_paths_on(g, a, Some(costs), cfg, threads).unwrap();
        assert_eq!(other, found, "{threads} threads");
    }
    let key = |p: &wpp_query::hot::exact::HotPath| -> Vec<Qualified> {
        p.terminals
            .iter()
            .zip(&p.functions)
            .map(|(&t, f)| (a.event(wpp_trace::Terminal(t)).unwrap(), f.map(FunctionId)))
            .collect()
    };
    let keys: Vec<Vec<Qualified>> = found.paths.iter().map(key).collect();
    for (p, k) in found.paths.iter().zip(&keys) {
        let count: u64 = streams.iter().map(|s| occurrences(s, k)).sum();
        let unit: u64 = p.terminals.iter().map(|&t| costs[t as usize]).sum();
        assert_eq!(p.count, count, "exact count of {k:?}");
        assert_eq!(p.cost, count * unit);
        assert!(p.cost >= cfg.min_cost);
        assert!((cfg.min_length..=cfg.max_length).contains(&k.len()));
        for other in keys.iter().filter(|o| *o != k) {
            assert!(
                !k.windows(other.len()).any(|w| w == &other[..]),
                "{k:?} contains the reported {other:?}"
            );
        }
        // The reported occurrence is one.
        let s = &streams[p.stream];
        let at = p.position as usize;
        assert_eq!(&s[at..at + k.len()], &k[..]);
    }
    let mut dedup = keys.clone();
    dedup.sort();
    dedup.dedup();
    assert_eq!(dedup.len(), keys.len(), "no string twice");
    let all = all_costs(&streams, a, costs, cfg);
    let want = minimal_hot(&all, cfg);
    assert_eq!(
        dedup.into_iter().collect::<BTreeSet<_>>(),
        want,
        "exactly the minimal hot strings"
    );
    assert!(found.paths.windows(2).all(|w| w[0].cost >= w[1].cost));
    if let Some(b) = &found.best {
        assert!(found.paths.is_empty());
        let k = key(b);
        assert_eq!(
            b.count,
            streams.iter().map(|s| occurrences(s, &k)).sum::<u64>()
        );
        assert!(
            b.cost < cfg.min_cost,
            "a best window that is hot is reported as hot"
        );
        assert_eq!(Some(&b.cost), all.values().max(), "the costliest of all");
    }
    found
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn hot_paths_are_exact_on_every_grammar(
        ops in proptest::collection::vec(thread_ops(), 1..3),
        costs in proptest::collection::vec(1u64..4, 64),
        min_length in 1usize..3,
        extra in 0usize..5,
        min_cost in 1u64..60,
    ) {
        let streams: Vec<Vec<Event>> = ops.iter().map(|o| events(o)).collect();
        let (a, terms) = intern(&streams);
        let costs = &costs[..];
        prop_assume!(a.len() <= costs.len());
        let cfg = HotConfig { min_length, max_length: min_length + extra, min_cost };
        for (_, g) in grammars(&a, &terms) {
            check(&g, &a, costs, cfg);
        }
    }

    #[test]
    fn count_all_equals_brute_force(
        ops in proptest::collection::vec(thread_ops(), 1..3),
        picks in proptest::collection::vec((0usize..400, 1usize..6), 1..8),
    ) {
        let streams: Vec<Vec<Event>> = ops.iter().map(|o| events(o)).collect();
        let (a, terms) = intern(&streams);
        let all: Vec<u32> = terms.concat().iter().map(|t| t.0).collect();
        prop_assume!(!all.is_empty());
        let strings: Vec<Vec<u32>> = picks
            .iter()
            .map(|&(at, len)| {
                let at = at % all.len();
                all[at..(at + len).min(all.len())].to_vec()
            })
            .collect();
        let mut uniq = strings.clone();
        uniq.sort();
        uniq.dedup();
        let refs: Vec<&[u32]> = uniq.iter().map(|s| &s[..]).collect();
        for (_, g) in grammars(&a, &terms) {
            let got = count_all(&g, &refs, 6, 1);
            for threads in [2, 5] {
                prop_assert_eq!(&count_all(&g, &refs, 6, threads), &got);
            }
            for (s, c) in uniq.iter().zip(got) {
                let want: u64 = terms
                    .iter()
                    .map(|t| occurrences(&t.iter().map(|t| t.0).collect::<Vec<_>>(), s))
                    .sum();
                prop_assert_eq!(c, want, "{:?}", s);
            }
        }
    }
}

/// `B 0` in `main` and `B 0` in `f` are different code: they are counted apart, and a rule
/// used under both (`B 0, B 1`) is not merged.
#[test]
fn blocks_of_different_functions_are_not_merged() {
    let (main, f) = (FunctionId(0), FunctionId(1));
    let mut t = vec![Event::Enter(main)];
    for _ in 0..50 {
        t.extend([Event::Block(BlockId(0)), Event::Block(BlockId(1))]);
        t.extend([
            Event::Enter(f),
            Event::Block(BlockId(0)),
            Event::Block(BlockId(1)),
            Event::Leave,
        ]);
    }
    let (a, terms) = intern(&[t]);
    let costs = vec![1u64; a.len()];
    let cfg = HotConfig {
        min_length: 2,
        max_length: 2,
        min_cost: 90,
    };
    for (name, g) in grammars(&a, &terms) {
        let found = check(&g, &a, &costs, cfg);
        let b01: Vec<_> = found
            .paths
            .iter()
            .filter(|p| {
                p.terminals
                    .iter()
                    .map(|&t| a.event(wpp_trace::Terminal(t)).unwrap())
                    .eq([Event::Block(BlockId(0)), Event::Block(BlockId(1))])
            })
            .collect();
        // Figure 7 alone would see a flat grammar's windows once each, never hot, and a
        // parallel grammar's pair spread over its chunks' rules: the exhaustive search finds
        // both pairs in every grammar.
        assert_eq!(b01.len(), 2, "{name}: {:?}", found.paths);
        assert!(b01.iter().all(|p| p.count == 50), "{name}: {b01:?}");
    }
}

/// When nothing reaches the threshold, the costliest string is reported, exactly counted.
#[test]
fn nothing_hot_reports_the_best_cost() {
    let t: Vec<Event> = (0..10).map(|i| Event::Block(BlockId(i % 2))).collect();
    let (a, terms) = intern(&[t]);
    let costs = vec![1u64; a.len()];
    let cfg = HotConfig {
        min_length: 2,
        max_length: 2,
        min_cost: 1000,
    };
    for (name, g) in grammars(&a, &terms) {
        let found = check(&g, &a, &costs, cfg);
        let best = found.best.expect("a best window");
        assert!(found.paths.is_empty(), "{name}");
        assert_eq!(best.count, 5, "{name}: {best:?}");
        assert_eq!(found.total_cost, 10);
    }
}

/// A rule that pushes more frames than any one body pops: the events after it, spread over its
/// parents' bodies, pop down into them (frequency's grammar of this trace read `B 0` in no
/// function when it keeps only as many frames as one body pops).
#[test]
fn frames_popped_by_later_rules_are_kept() {
    use common::Op::*;
    let ops = [
        Block(2),
        Recurse(0, 2, 6),
        Leave,
        Leave,
        Leave,
        Block(0),
        Block(0),
        Recurse(0, 2, 6),
        Leave,
        Block(1),
        Block(0),
    ];
    let (a, terms) = intern(&[events(&ops)]);
    let costs = vec![1u64; a.len()];
    let cfg = HotConfig {
        min_length: 1,
        max_length: 1,
        min_cost: 1,
    };
    for (_, g) in grammars(&a, &terms) {
        check(&g, &a, &costs, cfg);
    }
}
