//! SEQUITUR and SEQUITUR(1) against their specification: every grammar expands back to its
//! input and satisfies digram uniqueness and rule utility, for random inputs (proptest), for
//! several interleaved streams, and for larger structured inputs.

mod common;

use proptest::prelude::*;
use wpp_grammar::check::check;
use wpp_grammar::expand::{expand_into, terminal_at, Expander, PositionIndex};
use wpp_grammar::sequitur::{Sequitur, SequiturError, Variant};
use wpp_grammar::{compress, Algorithm, Grammar};
use wpp_trace::{Terminal, ThreadId};

fn expand(g: &Grammar, i: usize) -> Vec<u32> {
    Expander::new(g, g.starts()[i].rule).map(|t| t.0).collect()
}

fn to_terminals(v: &[u32]) -> Vec<Terminal> {
    v.iter().map(|&x| Terminal(x)).collect()
}

fn assert_sound(algorithm: Algorithm, streams: &[Vec<u32>]) -> Grammar {
    let ts: Vec<Vec<Terminal>> = streams.iter().map(|s| to_terminals(s)).collect();
    let refs: Vec<&[Terminal]> = ts.iter().map(|s| s.as_slice()).collect();
    let g = compress(algorithm, &refs).unwrap();
    check(&g).unwrap_or_else(|v| panic!("{algorithm}: {v} on {streams:?}"));
    assert_eq!(g.starts().len(), streams.len());
    for (i, s) in streams.iter().enumerate() {
        assert_eq!(g.starts()[i].thread, ThreadId(i as u32));
        assert_eq!(&expand(&g, i), s, "{algorithm} stream {i}");
        assert_eq!(g.expanded_len(g.starts()[i].rule), s.len() as u64);
    }
    g
}

/// Nested loops with a branch: the shape of a control-flow trace.
fn loops(n: usize, seed: u64) -> Vec<u32> {
    let mut x = seed | 1;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        out.push(0);
        for _ in 0..rnd() % 20 {
            out.push(1);
            for _ in 0..rnd() % 5 {
                out.extend_from_slice(if rnd() % 4 == 0 { &[2, 3] } else { &[2, 4, 5] });
            }
            out.push(6);
        }
    }
    out.truncate(n);
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn single_stream_round_trips_with_invariants(
        s in prop::collection::vec(0u32..4, 0..300),
    ) {
        for algorithm in [Algorithm::Sequitur, Algorithm::Sequitur1] {
            assert_sound(algorithm, std::slice::from_ref(&s));
        }
    }

    #[test]
    fn interleaved_streams_round_trip_with_invariants(
        pushes in prop::collection::vec((0usize..3, 0u32..3), 0..400),
    ) {
        for variant in [Variant::Sequitur, Variant::Sequitur1] {
            let mut s = Sequitur::new(variant);
            let ids: Vec<_> = (0..3).map(|t| s.add_stream(ThreadId(10 + t)).unwrap()).collect();
            let mut want = vec![Vec::new(); 3];
            for &(stream, t) in &pushes {
                s.push(ids[stream], Terminal(t)).unwrap();
                want[stream].push(t);
            }
            let g = s.finish();
            check(&g).unwrap();
            for (i, w) in want.iter().enumerate() {
                prop_assert_eq!(g.starts()[i].thread, ThreadId(10 + i as u32));
                prop_assert_eq!(&expand(&g, i), w);
            }
        }
    }

    #[test]
    fn random_access_agrees_with_streaming(s in prop::collection::vec(0u32..3, 1..200)) {
        let g = assert_sound(Algorithm::Sequitur, std::slice::from_ref(&s));
        let start = g.starts()[0].rule;
        let idx = PositionIndex::new(&g);
        for (k, &want) in s.iter().enumerate() {
            prop_assert_eq!(terminal_at(&g, start, k as u64), Some(Terminal(want)));
            prop_assert_eq!(idx.terminal_at(&g, start, k as u64), Some(Terminal(want)));
        }
        let k = s.len() / 2;
        let tail: Vec<u32> = Expander::starting_at(&g, start, k as u64).map(|t| t.0).collect();
        prop_assert_eq!(&tail[..], &s[k..]);
    }
}

#[test]
fn runs_and_periodic_inputs() {
    for algorithm in [Algorithm::Sequitur, Algorithm::Sequitur1] {
        for n in 0..70 {
            assert_sound(algorithm, &[vec![7; n]]);
            assert_sound(algorithm, &[(0..n as u32).map(|i| i % 3).collect()]);
            assert_sound(algorithm, &[(0..n as u32).map(|i| (i / 3) % 2).collect()]);
        }
    }
}

#[test]
fn structured_input_compresses_and_round_trips() {
    for algorithm in [Algorithm::Sequitur, Algorithm::Sequitur1] {
        let streams = [loops(200_000, 1), loops(50_000, 2), Vec::new()];
        let g = assert_sound(algorithm, &streams);
        assert!(g.num_symbols() < 20_000, "{algorithm}: {}", g.num_symbols());
        let mut v = Vec::new();
        expand_into(&g, g.starts()[0].rule, &mut v);
        assert_eq!(v, to_terminals(&streams[0]));
    }
}

#[test]
fn identical_streams_share_rules_but_keep_their_start_rules() {
    let g = assert_sound(Algorithm::Sequitur, &[vec![1, 2], vec![1, 2], vec![1, 2]]);
    let starts: Vec<_> = g.starts().iter().map(|s| s.rule).collect();
    assert_eq!(g.num_rules(), 4, "one shared rule and three start rules");
    assert!(starts[0] != starts[1] && starts[1] != starts[2]);
}

#[test]
fn bad_input_is_an_error() {
    let mut s = Sequitur::new(Variant::Sequitur);
    let id = s.add_stream(ThreadId(0)).unwrap();
    assert_eq!(
        s.push(id, Terminal(1 << 31)),
        Err(SequiturError::TerminalOutOfRange(1 << 31))
    );
    let other = Sequitur::new(Variant::Sequitur)
        .add_stream(ThreadId(0))
        .and_then(|_| {
            let mut t = Sequitur::new(Variant::Sequitur);
            t.add_stream(ThreadId(0))?;
            t.add_stream(ThreadId(1))
        })
        .unwrap();
    assert_eq!(
        s.push(other, Terminal(0)),
        Err(SequiturError::UnknownStream(1))
    );
}

#[test]
fn reserve_terminals_widens_the_alphabet() {
    let mut s = Sequitur::new(Variant::Sequitur);
    s.reserve_terminals(100);
    let id = s.add_stream(ThreadId(0)).unwrap();
    s.push(id, Terminal(3)).unwrap();
    assert_eq!(s.finish().num_terminals(), 100);
}

/// Synthetic control-flow traces of both vocabularies, interned in order of appearance.
fn synthetic(kind: wpp_trace::synth::TraceKind, events: u64, seed: u64) -> Vec<u32> {
    let program = wpp_trace::synth::SynthProgram::generate(seed);
    let mut alphabet = wpp_trace::Alphabet::new();
    let mut out = Vec::with_capacity(events as usize);
    program
        .run(kind, events, |e| {
            out.push(alphabet.intern(e)?.0);
            Ok::<_, wpp_trace::alphabet::AlphabetFull>(())
        })
        .unwrap();
    out
}

fn synthetic_round_trips(events: u64) {
    use wpp_trace::synth::TraceKind;
    for (kind, seed) in [(TraceKind::Blocks, 3), (TraceKind::Paths, 4)] {
        let trace = synthetic(kind, events, seed);
        for algorithm in [Algorithm::Sequitur, Algorithm::Sequitur1] {
            let g = assert_sound(algorithm, std::slice::from_ref(&trace));
            assert!(g.num_symbols() < trace.len() / 10, "{algorithm} {kind:?}");
        }
    }
}

#[test]
fn synthetic_traces_round_trip_with_invariants() {
    synthetic_round_trips(200_000);
}

/// The acceptance size; run with `cargo test --release -- --ignored`.
#[test]
#[ignore = "10^7 events; run in release"]
fn synthetic_ten_million_events_round_trip_with_invariants() {
    synthetic_round_trips(10_000_000);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(60))]

    /// Longer inputs over larger alphabets, as repeated random blocks with noise: more rules,
    /// deeper nesting and more reuse than the short cases above.
    #[test]
    fn longer_block_structured_inputs_round_trip_with_invariants(
        blocks in prop::collection::vec(prop::collection::vec(0u32..40, 1..12), 1..6),
        picks in prop::collection::vec((0usize..6, 0u32..3, 0u32..40), 50..400),
    ) {
        let mut s = Vec::new();
        for &(b, noise, extra) in &picks {
            s.extend_from_slice(&blocks[b % blocks.len()]);
            if noise == 0 {
                s.push(extra);
            }
        }
        for algorithm in [Algorithm::Sequitur, Algorithm::Sequitur1] {
            assert_sound(algorithm, std::slice::from_ref(&s));
        }
    }
}
