//! Minimal hot subpaths (Larus §4.2, Figure 7): the DAG pass equals a direct recursive
//! implementation of Figure 7 on the expanded derivation tree, and every reported subpath is
//! verified by brute force on the expanded trace.

mod common;

use std::collections::BTreeSet;

use common::*;
use proptest::prelude::*;
use wpp_grammar::symbol::SymbolKind;
use wpp_grammar::{Grammar, RuleId, StartRule, Symbol};
use wpp_query::dag::rule_frequencies;
use wpp_query::expand::{expand, expand_range};
use wpp_query::hot::{first_uses, hot_subpaths, HotConfig, HotSubpath};
use wpp_trace::{Terminal, ThreadId};

type Report = (u32, u64, Vec<u32>, u64, u64);

/// Figure 7 on the derivation tree: every occurrence of a rule is visited afresh (no
/// memoized prefixes and suffixes), windows are plain vectors whose cost is recomputed.
struct Tree<'a> {
    g: &'a Grammar,
    freq: Vec<u64>,
    cfg: HotConfig,
    costs: &'a [u64],
    found: BTreeSet<Report>,
}

impl Tree<'_> {
    fn visit(&mut self, r: RuleId) -> (Vec<Terminal>, bool, Vec<Terminal>) {
        let l = self.cfg.max_length;
        let f = self.freq[r.index()];
        let mut prefix: Vec<Terminal> = Vec::new();
        let mut frozen = false;
        let mut window: Vec<(Terminal, u64)> = Vec::new();
        let mut at = 0u64;
        for &s in self.g.body(r) {
            let (items, covers, suffix, len) = match s.kind() {
                SymbolKind::Terminal(t) => (vec![t], true, vec![], 1),
                SymbolKind::Rule(c) => {
                    let (p, cov, suf) = self.visit(c);
                    (p, cov, suf, self.g.expanded_len(c))
                }
            };
            for (i, &t) in items.iter().enumerate() {
                if !frozen {
                    if prefix.len() < l {
                        prefix.push(t);
                    } else {
                        frozen = true;
                    }
                }
                if window.len() == l {
                    window.remove(0);
                }
                window.push((t, at + i as u64));
                let sum: u64 = window.iter().map(|(t, _)| self.costs[t.index()]).sum();
                if window.len() >= self.cfg.min_length && sum * f >= self.cfg.min_cost {
                    let start = window[0].1;
                    let terms = window.iter().map(|(t, _)| t.0).collect();
                    self.found.insert((r.0, start, terms, f, sum * f));
                    prefix.truncate((start as usize).min(prefix.len()));
                    frozen = true;
                    window.clear();
                }
            }
            if !covers {
                let end = at + len;
                window = suffix
                    .iter()
                    .enumerate()
                    .map(|(i, &t)| (t, end - suffix.len() as u64 + i as u64))
                    .collect();
                frozen = true;
            }
            at += len;
        }
        (
            prefix,
            !frozen,
            window.into_iter().map(|(t, _)| t).collect(),
        )
    }
}

fn as_set(v: &[HotSubpath]) -> BTreeSet<Report> {
    v.iter()
        .map(|h| (h.rule, h.offset, h.terminals.clone(), h.frequency, h.cost))
        .collect()
}

/// Brute-force checks of each reported subpath on the expanded trace.
fn verify(g: &Grammar, costs: &[u64], cfg: HotConfig, hot: &[HotSubpath]) {
    let traces: Vec<Vec<Terminal>> = g.starts().iter().map(|s| expand(g, s.rule)).collect();
    let firsts = first_uses(g);
    for h in hot {
        let terms: Vec<Terminal> = h.terminals.iter().map(|&t| Terminal(t)).collect();
        assert!((cfg.min_length..=cfg.max_length).contains(&terms.len()));
        let sum: u64 = terms.iter().map(|t| costs[t.index()]).sum();
        assert_eq!(h.cost, sum * h.frequency);
        assert!(h.cost >= cfg.min_cost);
        let occurrences: u64 = traces.iter().map(|tr| brute_count(tr, &terms)).sum();
        assert!(
            occurrences >= h.frequency,
            "{h:?} occurs {occurrences} times"
        );
        // It is where the report says, in its rule and at the rule's first use.
        let mut at = Vec::new();
        expand_range(
            g,
            RuleId(h.rule),
            h.offset,
            h.offset + terms.len() as u64,
            &mut at,
        );
        assert_eq!(at, terms);
        let (stream, base) = firsts[h.rule as usize].unwrap();
        let p = (base + h.offset) as usize;
        assert_eq!(&traces[stream][p..p + terms.len()], &terms[..]);
        // Minimal: one terminal shorter it was not hot.
        let shorter: u64 = terms[..terms.len() - 1]
            .iter()
            .map(|t| costs[t.index()])
            .sum();
        assert!(terms.len() - 1 < cfg.min_length || shorter * h.frequency < cfg.min_cost);
    }
}

fn check(g: &Grammar, costs: &[u64], cfg: HotConfig) {
    let hot = hot_subpaths(g, Some(costs), cfg).unwrap();
    verify(g, costs, cfg, &hot);
    let mut tree = Tree {
        g,
        freq: rule_frequencies(g),
        cfg,
        costs,
        found: BTreeSet::new(),
    };
    let mut seen = BTreeSet::new();
    for s in g.starts() {
        if seen.insert(s.rule) {
            tree.visit(s.rule);
        }
    }
    assert_eq!(as_set(&hot), tree.found);
    assert_eq!(
        as_set(&hot).len(),
        hot.len(),
        "each node reports a subpath once"
    );
}

/// Larus Figure 5 read as S → A A A, A → B C, B → a b, C → b c (the string abbcabbcabbc):
/// with unit costs, 1 < length < 4 and cost ≥ 6 the algorithm reports ab and bc.
#[test]
fn larus_figure_5_example() {
    let t = |i| Symbol::terminal(Terminal(i));
    let r = |i| Symbol::rule(RuleId(i));
    let g = Grammar::new(
        3,
        vec![
            vec![t(0), t(1)],
            vec![t(1), t(2)],
            vec![r(0), r(1)],
            vec![r(2), r(2), r(2)],
        ],
        vec![StartRule {
            thread: ThreadId(0),
            rule: RuleId(3),
        }],
    )
    .unwrap();
    let cfg = HotConfig {
        min_length: 2,
        max_length: 3,
        min_cost: 6,
    };
    let hot = hot_subpaths(&g, None, cfg).unwrap();
    let found: Vec<(Vec<u32>, u64, u64)> = hot
        .iter()
        .map(|h| (h.terminals.clone(), h.frequency, h.cost))
        .collect();
    assert_eq!(found, vec![(vec![0, 1], 3, 6), (vec![1, 2], 3, 6)]);
    check(&g, &[1, 1, 1], cfg);
    assert!(hot_subpaths(
        &g,
        None,
        HotConfig {
            min_length: 0,
            ..cfg
        }
    )
    .is_err());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn hot_subpaths_match_the_tree_and_brute_force(
        t0 in thread_ops(),
        t1 in thread_ops(),
        max_length in 1usize..8,
        min_length in 1usize..4,
        min_cost in 1u64..60,
        weights in proptest::collection::vec(0u64..5, 16),
    ) {
        let streams = vec![events(&t0), events(&t1)];
        let (alphabet, terms) = intern(&streams);
        let costs: Vec<u64> = (0..alphabet.len()).map(|i| weights[i % 16]).collect();
        let cfg = HotConfig { min_length: min_length.min(max_length), max_length, min_cost };
        for (_, g) in grammars(&alphabet, &terms) {
            check(&g, &costs, cfg);
        }
    }
}

/// Reports decode a hot subpath to events, its call stack, owning function, blocks and lines.
#[test]
fn reports_name_functions_blocks_and_lines() {
    use wpp_query::report::{decode_hot, first_places, folded_line};
    use wpp_trace::{BlockId, Event, FunctionId, ProgramDb};
    let mut db = ProgramDb::default();
    db.intern("main");
    db.intern("work");
    db.functions[1].block_lines = vec![10, 11, 12];
    // main calls work 3 times; work runs B1 B2. With L = 2 and C = 6 the node of one call
    // reports `F work, B 1` and then `B 2, E`.
    let mut trace = vec![Event::Enter(FunctionId(0))];
    for _ in 0..3 {
        trace.extend([
            Event::Enter(FunctionId(1)),
            Event::Block(BlockId(1)),
            Event::Block(BlockId(2)),
            Event::Leave,
        ]);
    }
    let (alphabet, terms) = intern(&[trace]);
    let g = wpp_grammar::compress(wpp_grammar::Algorithm::Sequitur, &[&terms[0]]).unwrap();
    let cfg = HotConfig {
        min_length: 2,
        max_length: 2,
        min_cost: 6,
    };
    let hot = hot_subpaths(&g, None, cfg).unwrap();
    let reports = decode_hot(&g, &alphabet, &db, &hot, &first_places(&g, &hot));
    let r = reports
        .iter()
        .find(|r| r.events == ["F work", "B 1"])
        .unwrap_or_else(|| panic!("F work, B 1 is hot: {reports:?}"));
    assert_eq!(r.stack, ["main"]);
    assert_eq!(r.function.as_deref(), Some("work"));
    assert_eq!((r.blocks.clone(), r.lines.clone()), (vec![1], vec![11]));
    assert_eq!((r.position, r.hot.frequency, r.hot.cost), (1, 3, 6));
    assert_eq!(folded_line(r), "main;F_work,B_1 6");
}
