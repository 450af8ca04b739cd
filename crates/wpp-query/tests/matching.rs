//! Path matching: schemes 1–4 agree with each other and with a brute-force oracle, on every
//! compressor's grammar of the same trace (Zhang–Gupta §4, acceptance of issue 5).

mod common;

use std::collections::BTreeMap;
use std::io::Cursor;

use common::*;
use proptest::prelude::*;
use wpp_query::matching::chunked::{self, ChunkWriter, ChunkedTrace, Codec};
use wpp_query::matching::partition::{self, PartitionIndex};
use wpp_query::matching::{compressed, scheme1, Mode, PathQuery, StreamMatch};
use wpp_trace::{BlockId, Event, FunctionId, ProgramDb, ThreadId};

type Answers = BTreeMap<u32, (Option<u64>, u64)>;

fn answers(v: Vec<StreamMatch>) -> Answers {
    v.into_iter()
        .map(|s| (s.thread, (s.first, s.count.unwrap_or(0))))
        .filter(|(_, a)| *a != (None, 0))
        .collect()
}

fn firsts(v: Vec<StreamMatch>) -> BTreeMap<u32, Option<u64>> {
    v.into_iter()
        .filter(|s| s.first.is_some())
        .map(|s| (s.thread, s.first))
        .collect()
}

/// The interleaved trace: thread 0's events, then a switch to thread 1 and its events.
fn interleave(streams: &[Vec<Event>]) -> Vec<Event> {
    let mut all = Vec::new();
    for (i, s) in streams.iter().enumerate() {
        if i > 0 {
            all.push(Event::Thread(ThreadId(i as u32)));
        }
        all.extend_from_slice(s);
    }
    all
}

fn container(events: &[Event], codec: Codec, chunk: usize) -> ChunkedTrace<Cursor<Vec<u8>>> {
    let db = ProgramDb::default();
    let mut w = ChunkWriter::new(Vec::new(), &db, codec, chunk).unwrap();
    for &e in events {
        w.push(e).unwrap();
    }
    let (bytes, _) = w.finish().unwrap();
    ChunkedTrace::open(Cursor::new(bytes)).unwrap()
}

/// Number of distinct rules used by the start rules' bodies, directly or not.
fn rules_below_starts(g: &wpp_grammar::Grammar) -> usize {
    use wpp_grammar::symbol::SymbolKind;
    let mut seen = vec![false; g.num_rules()];
    let mut todo: Vec<wpp_grammar::RuleId> = g.starts().iter().map(|s| s.rule).collect();
    let mut n = 0;
    while let Some(r) = todo.pop() {
        for sym in g.body(r) {
            if let SymbolKind::Rule(c) = sym.kind() {
                if !seen[c.index()] {
                    seen[c.index()] = true;
                    n += 1;
                    todo.push(c);
                }
            }
        }
    }
    n
}

/// Runs every scheme on every grammar in both modes and compares with the oracle.
fn check_all(streams: &[Vec<Event>], query: &PathQuery, chunk: usize, parts: usize) {
    let oracle: Answers = streams
        .iter()
        .enumerate()
        .map(|(i, s)| (i as u32, brute_match(s, query.function, &query.path)))
        .filter(|(_, a)| *a != (None, 0))
        .collect();
    let oracle_first: BTreeMap<u32, Option<u64>> = oracle
        .iter()
        .filter(|(_, a)| a.0.is_some())
        .map(|(&t, a)| (t, a.0))
        .collect();
    let (alphabet, terms) = intern(streams);
    for (name, g) in grammars(&alphabet, &terms) {
        for mode in [Mode::Count, Mode::First] {
            let s1 = scheme1::run(&g, &alphabet, query, mode).unwrap();
            let s2 = compressed::run(&g, &alphabet, query, mode).unwrap();
            let index = PartitionIndex::build(&g, &alphabet, parts).unwrap();
            let index = PartitionIndex::from_bytes(&index.to_bytes(), 0).unwrap();
            index.validate(&g).unwrap();
            let (s4, st) = partition::run(&g, &alphabet, &index, query, mode).unwrap();
            if mode == Mode::Count && st.skipped == 0 {
                // Every partition scanned: every rule below a start rule was summarized once.
                assert_eq!(st.rules_summarized, rules_below_starts(&g), "on {name}");
            }
            if mode == Mode::Count {
                assert_eq!(answers(s1), oracle, "scheme 1 on {name}");
                assert_eq!(answers(s2), oracle, "scheme 2 on {name}");
                assert_eq!(answers(s4), oracle, "scheme 4 on {name}");
            } else {
                assert_eq!(firsts(s1), oracle_first, "scheme 1 first on {name}");
                assert_eq!(firsts(s2), oracle_first, "scheme 2 first on {name}");
                assert_eq!(firsts(s4), oracle_first, "scheme 4 first on {name}");
            }
        }
    }
    let all = interleave(streams);
    for codec in [Codec::Zstd(1), Codec::Gzip(1)] {
        let mut c = container(&all, codec, chunk);
        let (s3, _) = chunked::run(&mut c, query, Mode::Count).unwrap();
        assert_eq!(answers(s3), oracle, "scheme 3 ({codec:?})");
        let (s3, _) = chunked::run(&mut c, query, Mode::First).unwrap();
        assert_eq!(firsts(s3), oracle_first, "scheme 3 first ({codec:?})");
    }
}

/// Several paths at once (one decompression) give each path's own answers.
fn check_many(streams: &[Vec<Event>], q: &PathQuery, chunk: usize) {
    let mut rev = q.path.clone();
    rev.reverse();
    let queries = vec![
        q.clone(),
        PathQuery {
            function: FunctionId((q.function.0 + 1) % 3),
            path: rev,
        },
        PathQuery {
            function: q.function,
            path: q.path[..1].to_vec(),
        },
    ];
    let (alphabet, terms) = intern(streams);
    let g = &grammars(&alphabet, &terms)[1].1;
    let mut c = container(&interleave(streams), Codec::Zstd(1), chunk);
    for mode in [Mode::Count, Mode::First] {
        let many1 = scheme1::run_many(g, &alphabet, &queries, mode).unwrap();
        let (many3, _) = chunked::run_many(&mut c, &queries, mode).unwrap();
        for (i, q) in queries.iter().enumerate() {
            let one = scheme1::run(g, &alphabet, q, mode).unwrap();
            assert_eq!(many1[i], one);
            let (one3, _) = chunked::run(&mut c, q, mode).unwrap();
            assert_eq!(answers(many3[i].clone()), answers(one3));
        }
    }
}

/// Zhang–Gupta Figure 2: `main` calls F1, which calls F1 again from B2 and returns to B3.
/// B3 after E3 completes B1 B2 B3 of the outer F1; the B3 of the later F1 invocation (E5) must
/// not combine with earlier B1 B2. The same trace holds main's own interrupted B1 B2 … B3.
#[test]
fn figure_2_example() {
    let (main, f1) = (Event::Enter(FunctionId(0)), Event::Enter(FunctionId(1)));
    let b = |i| Event::Block(BlockId(i));
    let trace = vec![
        main,
        b(1),
        b(2),
        f1, // E1
        b(1),
        b(2),
        f1, // E2
        b(1),
        b(2),
        Event::Leave, // E3
        b(3),         // position 10: the F1 occurrence
        Event::Leave, // E4
        b(3),         // position 12: main's own B1 B2 B3
        f1,           // E5
        b(3),
        Event::Leave,
        Event::Leave,
    ];
    let path = vec![BlockId(1), BlockId(2), BlockId(3)];
    for (f, at) in [(1, 10), (0, 12)] {
        let q = PathQuery {
            function: FunctionId(f),
            path: path.clone(),
        };
        assert_eq!(brute_match(&trace, q.function, &q.path), (Some(at), 1));
        check_all(std::slice::from_ref(&trace), &q, 3, 4);
    }
    let none = PathQuery {
        function: FunctionId(2),
        path,
    };
    check_all(&[trace], &none, 5, 2);
}

#[test]
fn unbalanced_and_empty_traces() {
    let b = |i| Event::Block(BlockId(i));
    let f = Event::Enter(FunctionId(0));
    let q = PathQuery {
        function: FunctionId(0),
        path: vec![BlockId(0), BlockId(0)],
    };
    // Leaves with nothing open, blocks outside any function, an invocation left open.
    let trace = vec![Event::Leave, b(0), b(0), Event::Leave, f, b(0), b(0), b(0)];
    assert_eq!(brute_match(&trace, q.function, &q.path), (Some(6), 2));
    check_all(&[trace], &q, 2, 3);
    check_all(&[vec![]], &q, 2, 3);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn schemes_agree_with_brute_force(
        t0 in thread_ops(),
        t1 in thread_ops(),
        f in 0u32..3,
        path in path(),
        chunk in 1usize..48,
        parts in 1usize..12,
    ) {
        let streams = vec![events(&t0), events(&t1)];
        let q = PathQuery { function: FunctionId(f), path };
        check_all(&streams, &q, chunk, parts);
        check_many(&streams, &q, chunk);
    }
}

/// Synthetic programs (loops, skewed branches, recursion, a trace cut mid-invocation): the
/// paths of each function that actually run, checked on every scheme and compressor.
#[test]
fn synthetic_traces_agree() {
    use wpp_trace::synth::{SynthProgram, TraceKind};
    for seed in 1..4 {
        let prog = SynthProgram::generate(seed);
        let trace = prog.events(TraceKind::Blocks, 30_000);
        // The own-block sequences that start each invocation of a few functions.
        let mut picked: BTreeMap<(u32, usize), Vec<BlockId>> = BTreeMap::new();
        let mut stack: Vec<(FunctionId, Vec<BlockId>)> = Vec::new();
        for &e in &trace {
            match e {
                Event::Enter(f) => stack.push((f, Vec::new())),
                Event::Leave => {
                    if let Some((f, own)) = stack.pop() {
                        for len in [1, 3, 8] {
                            if own.len() >= len && f.0 % 5 == 0 {
                                picked
                                    .entry((f.0, len))
                                    .or_insert_with(|| own[..len].to_vec());
                            }
                        }
                    }
                }
                Event::Block(b) => {
                    if let Some((_, own)) = stack.last_mut() {
                        own.push(b);
                    }
                }
                _ => {}
            }
        }
        assert!(!picked.is_empty());
        for ((f, _), path) in picked.into_iter().take(12) {
            let q = PathQuery {
                function: FunctionId(f),
                path,
            };
            check_all(std::slice::from_ref(&trace), &q, 4096, 16);
        }
    }
}

/// Recursion 3000 deep (rules whose summaries push and pop thousands of levels), with the
/// path split across the recursive call and completed on the way back up.
#[test]
fn deep_recursion() {
    let b = |i| Event::Block(BlockId(i));
    let mut trace = vec![Event::Enter(FunctionId(0))];
    for _ in 0..3000 {
        trace.extend([Event::Enter(FunctionId(1)), b(1), b(2)]);
    }
    for i in 0..3000 {
        trace.extend([b(3), Event::Leave]);
        if i % 7 == 0 {
            trace.extend([Event::Enter(FunctionId(2)), b(1), b(2), b(3), Event::Leave]);
        }
    }
    trace.extend([b(1), b(2), b(3)]);
    let q = PathQuery {
        function: FunctionId(1),
        path: vec![BlockId(1), BlockId(2), BlockId(3)],
    };
    assert_eq!(brute_match(&trace, q.function, &q.path).1, 3000);
    check_all(std::slice::from_ref(&trace), &q, 64, 9);
    let main = PathQuery {
        function: FunctionId(0),
        ..q
    };
    assert_eq!(
        brute_match(&trace, main.function, &main.path),
        (Some(trace.len() as u64 - 1), 1)
    );
    check_all(&[trace], &main, 64, 9);
}
