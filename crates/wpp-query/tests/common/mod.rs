//! Shared fixtures: block-trace strategies, grammars of one trace from different compressors,
//! and brute-force oracles on the expanded trace.
#![allow(dead_code)]

use proptest::prelude::*;
use wpp_grammar::join::Seams;
use wpp_grammar::parallel::{self, Parallelism};
use wpp_grammar::{compress, Algorithm, Grammar, StartRule, Symbol};
use wpp_trace::{Alphabet, BlockId, Event, FunctionId, Terminal, ThreadId};

/// One building step of a synthetic block trace.
#[derive(Clone, Debug)]
pub enum Op {
    Block(u32),
    Enter(u32),
    Leave,
    /// A loop: the same block `n` times.
    Repeat(u32, u32),
    /// Recursion: `n` nested entries of one function, each executing a block.
    Recurse(u32, u32, u32),
}

pub fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u32..3).prop_map(Op::Block),
        2 => (0u32..3).prop_map(Op::Enter),
        2 => Just(Op::Leave),
        1 => (0u32..3, 1u32..25).prop_map(|(b, n)| Op::Repeat(b, n)),
        1 => (0u32..3, 0u32..3, 1u32..40).prop_map(|(f, b, n)| Op::Recurse(f, b, n)),
    ]
}

/// Events of one thread: ops expanded, leaves at depth 0 kept (they must be ignored), and
/// invocations possibly left open at the end.
pub fn events(ops: &[Op]) -> Vec<Event> {
    let mut out = Vec::new();
    for o in ops {
        match *o {
            Op::Block(b) => out.push(Event::Block(BlockId(b))),
            Op::Enter(f) => out.push(Event::Enter(FunctionId(f))),
            Op::Leave => out.push(Event::Leave),
            Op::Repeat(b, n) => out.extend((0..n).map(|_| Event::Block(BlockId(b)))),
            Op::Recurse(f, b, n) => {
                for _ in 0..n {
                    out.push(Event::Enter(FunctionId(f)));
                    out.push(Event::Block(BlockId(b)));
                }
            }
        }
    }
    out
}

pub fn thread_ops() -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(op(), 0..120)
}

/// A query path: mostly short paths over the trace's small block alphabet, sometimes long
/// runs of one block (to meet the loops), up to 20 blocks.
pub fn path() -> impl Strategy<Value = Vec<BlockId>> {
    prop_oneof![
        3 => proptest::collection::vec(0u32..3, 1..5),
        1 => (0u32..3, 1usize..21).prop_map(|(b, n)| vec![b; n]),
        1 => proptest::collection::vec(0u32..3, 5..21),
    ]
    .prop_map(|p| p.into_iter().map(BlockId).collect())
}

/// Interns per-thread event streams.
pub fn intern(streams: &[Vec<Event>]) -> (Alphabet, Vec<Vec<Terminal>>) {
    let mut a = Alphabet::new();
    let terms = streams
        .iter()
        .map(|s| s.iter().map(|&e| a.intern(e).unwrap()).collect())
        .collect();
    (a, terms)
}

/// A grammar with one flat rule per thread.
pub fn flat(num_terminals: u32, streams: &[Vec<Terminal>]) -> Grammar {
    let bodies: Vec<Vec<Symbol>> = streams
        .iter()
        .map(|s| s.iter().map(|&t| Symbol::terminal(t)).collect())
        .collect();
    let starts = (0..streams.len())
        .map(|i| StartRule {
            thread: ThreadId(i as u32),
            rule: wpp_grammar::RuleId(i as u32),
        })
        .collect();
    Grammar::new(num_terminals, bodies, starts).unwrap()
}

/// Structurally different grammars of the same streams: every compressor (SEQUITUR,
/// SEQUITUR(1), frequency, phrase), a flat grammar, and then each compressor's parallel
/// grammar (chunks of 7 terminals on two threads, joined; SEQUITUR's also with its seams
/// compressed).
pub fn grammars(a: &Alphabet, streams: &[Vec<Terminal>]) -> Vec<(&'static str, Grammar)> {
    let refs: Vec<&[Terminal]> = streams.iter().map(|s| &s[..]).collect();
    let n = a.len() as u32;
    let mut out = vec![("flat", flat(n, streams))];
    for alg in Algorithm::ALL {
        if let Ok(g) = compress(alg, &refs) {
            out.push((alg.as_str(), g));
        }
    }
    let threads: Vec<(ThreadId, &[Terminal])> = refs
        .iter()
        .enumerate()
        .map(|(i, s)| (ThreadId(i as u32), *s))
        .collect();
    let parallel = |seams| Parallelism {
        threads: 2,
        chunk_events: 7,
        seams,
    };
    let runs = [
        ("sequitur parallel", Algorithm::Sequitur, Seams::Kept),
        ("sequitur1 parallel", Algorithm::Sequitur1, Seams::Kept),
        ("frequency parallel", Algorithm::Frequency, Seams::Kept),
        ("phrase parallel", Algorithm::Phrase, Seams::Kept),
        (
            "sequitur parallel, seams",
            Algorithm::Sequitur,
            Seams::Compressed,
        ),
    ];
    for (name, alg, seams) in runs {
        if let Ok(g) = parallel::compress_threads(alg, &threads, parallel(seams)) {
            out.push((name, g));
        }
    }
    out
}

/// Brute force path matching (the shared oracle, [`wpp_query::oracle::path_occurrences`]).
pub fn brute_match(events: &[Event], f: FunctionId, path: &[BlockId]) -> (Option<u64>, u64) {
    wpp_query::oracle::path_occurrences(events, f, path)
}

/// Occurrences (overlapping) of `q` in `s` (the shared oracle).
pub fn brute_count(s: &[Terminal], q: &[Terminal]) -> u64 {
    wpp_query::oracle::subpath_occurrences(s, q).0
}
