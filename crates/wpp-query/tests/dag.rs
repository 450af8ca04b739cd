//! DAG queries (Larus §3.3) against brute force on the expanded trace, on random grammars and
//! on every compressor's grammar of random block traces.

mod common;

use common::*;
use proptest::prelude::*;
use wpp_grammar::{Grammar, RuleId, StartRule, Symbol};
use wpp_query::dag::{call_stacks, context, rule_frequencies, terminal_frequencies, Subpaths};
use wpp_query::expand::expand;
use wpp_trace::{Event, FunctionId, Terminal, ThreadId};

/// Random bottom-up grammars: bodies over terminals and earlier rules (empty bodies and
/// unreachable rules included), the last one or two rules as start rules.
fn random_grammar() -> impl Strategy<Value = Grammar> {
    (
        1u32..4,
        proptest::collection::vec(proptest::collection::vec(any::<u16>(), 0..5), 1..12),
    )
        .prop_map(|(nt, specs)| {
            let bodies: Vec<Vec<Symbol>> = specs
                .iter()
                .enumerate()
                .map(|(r, body)| {
                    body.iter()
                        .map(|&x| {
                            let x = u32::from(x);
                            if r > 0 && x % 3 != 0 {
                                Symbol::rule(RuleId(x / 3 % r as u32))
                            } else {
                                Symbol::terminal(Terminal(x % nt))
                            }
                        })
                        .collect()
                })
                .collect();
            let n = bodies.len() as u32;
            let mut starts = vec![StartRule {
                thread: ThreadId(0),
                rule: RuleId(n - 1),
            }];
            if n > 1 {
                starts.push(StartRule {
                    thread: ThreadId(1),
                    rule: RuleId(n - 2),
                });
            }
            Grammar::new(nt, bodies, starts).unwrap()
        })
        .prop_filter("expansion small enough to brute-force", |g| {
            g.starts().iter().all(|s| g.expanded_len(s.rule) <= 20_000)
        })
}

fn positions(s: &[Terminal], q: &[Terminal]) -> Vec<u64> {
    if q.len() > s.len() {
        return Vec::new();
    }
    (0..=s.len() - q.len())
        .filter(|&i| s[i..i + q.len()] == *q)
        .map(|i| i as u64)
        .collect()
}

fn check_subpaths(g: &Grammar, q: &[Terminal]) {
    let counts = Subpaths::new(g).count(q).unwrap();
    for (s, c) in g.starts().iter().zip(&counts) {
        let trace = expand(g, s.rule);
        let pos = positions(&trace, q);
        assert_eq!(c.count, pos.len() as u64, "count of {q:?}");
        assert_eq!(c.first, pos.first().copied(), "first of {q:?}");
        assert_eq!(c.last, pos.last().copied(), "last of {q:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn subpath_frequency_equals_brute_force(
        g in random_grammar(),
        q in proptest::collection::vec(0u32..4, 1..6),
    ) {
        let q: Vec<Terminal> = q.into_iter().map(|t| Terminal(t % g.num_terminals())).collect();
        check_subpaths(&g, &q);
        check_subpaths(&g, &q[..1]);
    }

    #[test]
    fn frequencies_equal_brute_force(g in random_grammar()) {
        let freq = rule_frequencies(&g);
        let tf = terminal_frequencies(&g, &freq);
        let mut brute = vec![0u64; g.num_terminals() as usize];
        for s in g.starts() {
            for t in expand(&g, s.rule) {
                brute[t.index()] += 1;
            }
        }
        prop_assert_eq!(tf, brute);
        // A rule's frequency times its length never exceeds the trace.
        let total: u64 = g.starts().iter().map(|s| g.expanded_len(s.rule)).sum();
        for r in g.rules() {
            prop_assert!(freq[r.index()].saturating_mul(g.expanded_len(r)) <= total);
        }
    }

    #[test]
    fn before_context_and_stacks_equal_brute_force(
        t0 in thread_ops(),
        p in proptest::collection::vec(0usize..6, 1..3),
        q in proptest::collection::vec(0usize..6, 1..3),
        at in 0usize..400,
    ) {
        let streams = vec![events(&t0)];
        let (alphabet, terms) = intern(&streams);
        prop_assume!(!terms[0].is_empty());
        let n = alphabet.len();
        let p: Vec<Terminal> = p.into_iter().map(|i| Terminal((i % n) as u32)).collect();
        let q: Vec<Terminal> = q.into_iter().map(|i| Terminal((i % n) as u32)).collect();
        let trace = &terms[0];
        let at = (at % trace.len()) as u64;
        for (name, g) in grammars(&alphabet, &terms) {
            let sp = Subpaths::new(&g);
            let pp = positions(trace, &p);
            let qp = positions(trace, &q);
            let brute = match (pp.first(), qp.last()) {
                (Some(&a), Some(&b)) => a + p.len() as u64 <= b,
                _ => false,
            };
            prop_assert_eq!(sp.executes_before(ThreadId(0), &p, &q).unwrap(), brute, "{}", name);
            let rule = g.starts()[0].rule;
            let (before, after) = context(&g, rule, at, 2, 3, 4);
            let a = at as usize;
            prop_assert_eq!(&before[..], &trace[a.saturating_sub(3)..a]);
            prop_assert_eq!(&after[..], &trace[(a + 2).min(trace.len())..(a + 6).min(trace.len())]);
            // Unsorted, repeated, past the end.
            let end = trace.len() as u64;
            let positions = [at + 1, 0, at, end + 3, at / 2, at, end];
            let stacks = call_stacks(&g, &alphabet, rule, &positions);
            for (i, &pos) in positions.iter().enumerate() {
                let mut st: Vec<FunctionId> = Vec::new();
                for t in &trace[..(pos as usize).min(trace.len())] {
                    match alphabet.event(*t).unwrap() {
                        Event::Enter(f) => st.push(f),
                        Event::Leave => { st.pop(); }
                        _ => {}
                    }
                }
                prop_assert_eq!(&stacks[i], &st);
            }
        }
    }
}

#[test]
fn larus_example_abcabcabcabc() {
    // S → A A, A → B B, B → a b c: "abc" occurs 4 times, "ca" 3 times, all across rules.
    let t = |i| Symbol::terminal(Terminal(i));
    let g = Grammar::new(
        3,
        vec![
            vec![t(0), t(1), t(2)],
            vec![Symbol::rule(RuleId(0)), Symbol::rule(RuleId(0))],
            vec![Symbol::rule(RuleId(1)), Symbol::rule(RuleId(1))],
        ],
        vec![StartRule {
            thread: ThreadId(0),
            rule: RuleId(2),
        }],
    )
    .unwrap();
    assert_eq!(rule_frequencies(&g), vec![4, 2, 1]);
    let c = Subpaths::new(&g);
    let abc = c.count(&[Terminal(0), Terminal(1), Terminal(2)]).unwrap();
    assert_eq!(
        (abc[0].count, abc[0].first, abc[0].last),
        (4, Some(0), Some(9))
    );
    let ca = c.count(&[Terminal(2), Terminal(0)]).unwrap();
    assert_eq!(
        (ca[0].count, ca[0].first, ca[0].last),
        (3, Some(2), Some(8))
    );
    assert!(c.count(&[]).is_err());
}
