//! Parallel compression against its specification. Oracles: the trace itself (every thread's
//! start rule expands to exactly its events, `split_threads`), the single-threaded compressor
//! (a trace that fits in one chunk gives its grammar bit for bit), rule utility
//! (`check_rule_utility`), the `.wpp` reader (the joined grammar survives encoding and
//! validation) and the thread count (any number of workers gives the same grammar).

mod common;

use common::expand;

use proptest::prelude::*;
use wpp_grammar::check::check_rule_utility;
use wpp_grammar::expand::Expander;
use wpp_grammar::file::WppFile;
use wpp_grammar::join::{self, Joiner, Seams};
use wpp_grammar::parallel::{self, Parallelism};
use wpp_grammar::{Algorithm, Grammar, RuleId, StartRule, Symbol, TraceCompressor};
use wpp_trace::synth::{SynthProgram, TraceKind};
use wpp_trace::{split_threads, BlockId, Event, ProgramDb, Terminal, ThreadId};

fn compress(events: &[Event], algorithm: Algorithm, threads: usize, chunk: usize) -> WppFile {
    compress_seams(events, algorithm, threads, chunk, Seams::Kept)
}

fn compress_seams(
    events: &[Event],
    algorithm: Algorithm,
    threads: usize,
    chunk_events: usize,
    seams: Seams,
) -> WppFile {
    let how = Parallelism {
        threads,
        chunk_events,
        seams,
    };
    let mut c = TraceCompressor::with_threads(algorithm, None, ProgramDb::default(), how).unwrap();
    c.push_batch(events).unwrap();
    c.finish().unwrap()
}

/// The parallel grammar of `events` round-trips, keeps rule utility, reads back from its
/// bytes, and does not depend on the number of workers.
fn assert_sound(events: &[Event], chunk: usize) {
    let want = split_threads(events);
    for algorithm in Algorithm::ALL {
        let what = format!("{algorithm}, chunks of {chunk}");
        let wpp = compress(events, algorithm, 2, chunk);
        assert_eq!(expand(&wpp), want, "{what}");
        check_rule_utility(&wpp.grammar).unwrap_or_else(|v| panic!("{what}: {v}"));
        if events.len() > chunk {
            assert_short_expansions_unique(&wpp.grammar, &what);
        }
        let back = WppFile::from_bytes(&wpp.to_bytes().unwrap()).unwrap();
        assert_eq!(back, wpp, "{what}");
        let serial = compress(events, algorithm, 1, chunk);
        assert_eq!(serial.alphabet, wpp.alphabet, "{what}");
        let threads: Vec<ThreadId> = wpp.grammar.starts().iter().map(|s| s.thread).collect();
        let order: Vec<ThreadId> = serial.grammar.starts().iter().map(|s| s.thread).collect();
        assert_eq!(
            threads, order,
            "{what}: start rules in order of first event"
        );
        assert_eq!(
            compress(events, algorithm, 3, chunk),
            wpp,
            "{what}: 3 workers"
        );
        let seams = compress_seams(events, algorithm, 2, chunk, Seams::Compressed);
        assert_eq!(expand(&seams), want, "{what}, seams compressed");
        check_rule_utility(&seams.grammar).unwrap_or_else(|v| panic!("{what}, seams: {v}"));
        WppFile::from_bytes(&seams.to_bytes().unwrap()).unwrap();
    }
}

/// Brute force over the joined grammar: no two rules other than start rules expand to the
/// same terminals when the join merges rules of that length ([`join::MAX_MERGED_LEN`]).
fn assert_short_expansions_unique(g: &Grammar, what: &str) {
    let mut seen = std::collections::HashMap::new();
    let starts: Vec<RuleId> = g.starts().iter().map(|s| s.rule).collect();
    for r in g.rules().filter(|r| !starts.contains(r)) {
        let terminals: Vec<u32> = Expander::new(g, r).map(|t| t.0).collect();
        if terminals.len() as u64 > join::MAX_MERGED_LEN {
            continue;
        }
        if let Some(other) = seen.insert(terminals.clone(), r) {
            panic!("{what}: rules {other:?} and {r:?} both expand to {terminals:?}");
        }
    }
}

/// Events from a small alphabet with thread switches among three threads.
fn trace() -> impl Strategy<Value = Vec<Event>> {
    prop::collection::vec((0u32..12, 0u32..4), 0..300).prop_map(|v| {
        v.into_iter()
            .map(|(x, t)| match x {
                0 => Event::Thread(ThreadId(t * 3)),
                x => Event::Block(BlockId(x % 5 + t % 2)),
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_threaded_traces_round_trip(events in trace(), chunk in 1usize..40) {
        assert_sound(&events, chunk);
    }
}

#[test]
fn chunks_of_one_event_and_of_everything() {
    let prog = SynthProgram::generate(5);
    let mut events = Vec::new();
    prog.run_threads(TraceKind::Blocks, 3_000, 3, |e| {
        events.push(e);
        Ok::<_, ()>(())
    })
    .unwrap();
    for chunk in [1, 2, 999, events.len() - 1] {
        assert_sound(&events, chunk);
    }
}

#[test]
fn one_chunk_is_the_single_threaded_grammar() {
    let prog = SynthProgram::generate(2);
    let mut events = Vec::new();
    prog.run_threads(TraceKind::Paths, 20_000, 2, |e| {
        events.push(e);
        Ok::<_, ()>(())
    })
    .unwrap();
    let n = events.len();
    for algorithm in Algorithm::ALL {
        let serial = compress(&events, algorithm, 1, 1);
        for chunk in [n, n + 1, usize::MAX] {
            assert_eq!(
                compress(&events, algorithm, 2, chunk),
                serial,
                "{algorithm}"
            );
        }
    }
    for events in [&[][..], &[Event::Thread(ThreadId(3))][..]] {
        let wpp = compress(events, Algorithm::Sequitur, 2, 1);
        assert!(wpp.grammar.starts().is_empty());
    }
}

/// Many chunks of a long synthetic trace: the rules repeated across chunks are kept once, so
/// the joined grammar is smaller than the chunk grammars together.
#[test]
fn rules_shared_by_chunks_are_kept_once() {
    let prog = SynthProgram::generate(9);
    let events = prog.events(TraceKind::Blocks, 200_000);
    let chunk = 10_000;
    for algorithm in Algorithm::ALL {
        let wpp = compress(&events, algorithm, 2, chunk);
        assert_eq!(expand(&wpp), split_threads(&events));
        let separate: usize = events
            .chunks(chunk)
            .map(|c| compress(c, algorithm, 1, 1).grammar.num_symbols())
            .sum();
        let joined = wpp.grammar.num_symbols();
        assert!(joined < separate, "{algorithm}: {joined} vs {separate}");
        // The rule streams compressed on several threads are the same bytes.
        let bytes = wpp.to_bytes().unwrap();
        for n in 2..=5 {
            assert_eq!(
                wpp.to_bytes_on(19, n).unwrap(),
                bytes,
                "{algorithm}, {n} threads"
            );
        }
    }
}

/// Chunks built apart give one string different rules; joined, they are one rule, and the
/// children left used once are spliced into it.
#[test]
fn rules_with_one_expansion_merge_whatever_their_bodies() {
    // Chunk 0: A → t1 t2, B → A t3 (= 1 2 3), start → B B. Chunk 1: C → t2 t3, D → t1 C
    // (= 1 2 3 too), start → D t4 D.
    let left = grammar(
        vec![vec![t(1), t(2)], vec![r(0), t(3)], vec![r(1), r(1)]],
        &[(0, 2)],
    );
    let right = grammar(
        vec![vec![t(2), t(3)], vec![t(1), r(0)], vec![r(1), t(4), r(1)]],
        &[(0, 2)],
    );
    let mut j = Joiner::default();
    j.add(1, &right);
    j.add(0, &left);
    let g = j.finish(8, &[ThreadId(0)]).unwrap();
    check_rule_utility(&g).unwrap();
    let start = g.starts()[0].rule;
    let expanded: Vec<u32> = Expander::new(&g, start).map(|t| t.0).collect();
    assert_eq!(expanded, [1, 2, 3, 1, 2, 3, 1, 2, 3, 4, 1, 2, 3]);
    // One rule for `1 2 3`, used four times; `1 2`, then used only in it, is spliced in.
    let bodies: Vec<_> = g.rules().map(|r| g.body(r).to_vec()).collect();
    let abc = Symbol::rule(RuleId(0));
    assert_eq!(
        bodies,
        [vec![t(1), t(2), t(3)], vec![abc, abc, abc, t(4), abc]]
    );
}

fn t(x: u32) -> Symbol {
    Symbol::terminal(Terminal(x))
}
fn r(x: u32) -> Symbol {
    Symbol::rule(RuleId(x))
}

fn grammar(bodies: Vec<Vec<Symbol>>, starts: &[(u32, u32)]) -> Grammar {
    let starts = starts
        .iter()
        .map(|&(thread, rule)| StartRule {
            thread: ThreadId(thread),
            rule: RuleId(rule),
        })
        .collect();
    Grammar::new(8, bodies, starts).unwrap()
}

/// Two rules with one body in one chunk merge; the rule they shared, now used once, is spliced
/// into its user, so rule utility holds. Empty chunk grammars and threads missing from a chunk
/// join as nothing.
#[test]
fn merged_rules_keep_rule_utility() {
    // R0 → t1 t2; R1 → R0 t3 and R2 → R0 t3 (equal bodies); start R3 → R1 R2 R1 R2.
    let dup = grammar(
        vec![
            vec![t(1), t(2)],
            vec![r(0), t(3)],
            vec![r(0), t(3)],
            vec![r(1), r(2), r(1), r(2)],
        ],
        &[(0, 3)],
    );
    let other = grammar(vec![vec![t(4)], vec![t(5), t(5)]], &[(7, 0), (0, 1)]);
    let mut j = Joiner::default();
    j.add(
        2,
        &Grammar::new(8, Vec::<Vec<Symbol>>::new(), Vec::new()).unwrap(),
    );
    j.add(1, &other);
    j.add(0, &dup);
    let g = j
        .finish(8, &[ThreadId(0), ThreadId(7), ThreadId(9)])
        .unwrap();
    check_rule_utility(&g).unwrap();
    let threads: Vec<u32> = g.starts().iter().map(|s| s.thread.0).collect();
    assert_eq!(threads, [0, 7]);
    let expand =
        |i: usize| -> Vec<u32> { Expander::new(&g, g.starts()[i].rule).map(|t| t.0).collect() };
    assert_eq!(expand(0), [1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 5, 5]);
    assert_eq!(expand(1), [4]);
    let bodies: Vec<_> = g.rules().map(|r| g.body(r).to_vec()).collect();
    assert_eq!(g.num_rules(), 3, "R(t1 t2 t3), two start rules: {bodies:?}");
}

/// A chunk its compressor rejects (phrase terminals must be below 2^30; SEQUITUR's below 2^31)
/// is an error, not a hang or a panic, whichever chunk it is.
#[test]
fn a_rejected_chunk_is_an_error() {
    let mut ts = [Terminal(1); 20];
    for bad in [0, 9, 19] {
        ts[bad] = Terminal(1 << 30);
        let how = Parallelism {
            chunk_events: 3,
            ..Parallelism::threads(2)
        };
        let streams = [(ThreadId(0), &ts[..])];
        assert!(parallel::compress_threads(Algorithm::Phrase, &streams, how).is_err());
        assert!(parallel::compress_threads(Algorithm::Sequitur, &streams, how).is_ok());
        ts[bad] = Terminal(1);
    }
}
