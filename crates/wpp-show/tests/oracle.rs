//! The walk and every stack export against a brute force: a naive replay that keeps each
//! thread's stack as frame names and counts every block/path event under its stack string.
//! Random well-formed multi-threaded block traces; the same events walked from a trace file
//! and from a compressed `.wpp` must give the same counts.

use std::collections::BTreeMap;

use proptest::prelude::*;
use prost::Message;
use wpp_grammar::trace::TraceCompressor;
use wpp_grammar::Algorithm;
use wpp_show::walk::Recording;
use wpp_trace::{BlockId, Event, Function, FunctionId, ProgramDb, ThreadId};

/// Four functions of four blocks; block 3 has no line, function 3 has no lines at all, and
/// function 1's block 2 sits in a header.
fn db() -> ProgramDb {
    let mut db = ProgramDb {
        files: vec!["a.c".into(), "h.h".into()],
        ..Default::default()
    };
    for f in 0..4u32 {
        let lines = if f == 3 {
            Vec::new()
        } else {
            (0..4)
                .map(|b| if b == 3 { 0 } else { 10 * f + b + 1 })
                .collect()
        };
        db.functions.push(Function {
            name: format!("f{f}"),
            file: Some("a.c".into()),
            line: Some(10 * f),
            block_files: if f == 1 { vec![0, 0, 1, 0] } else { Vec::new() },
            block_lines: lines,
            ..Default::default()
        });
    }
    db
}

/// A random well-formed trace: steps are (thread, action) with action 0..4 = enter f,
/// 4..8 = block, 8 = leave.
fn trace(steps: &[(u32, u32)]) -> Vec<Event> {
    let mut depth: BTreeMap<u32, usize> = BTreeMap::new();
    let mut out = Vec::new();
    let mut current = 0;
    for &(t, a) in steps {
        if t != current {
            out.push(Event::Thread(ThreadId(t)));
            current = t;
        }
        let d = depth.entry(t).or_default();
        match a {
            0..=3 => {
                out.push(Event::Enter(FunctionId(a)));
                *d += 1;
            }
            4..=7 if *d > 0 => out.push(Event::Block(BlockId(a - 4))),
            8 if *d > 0 => {
                out.push(Event::Leave);
                *d -= 1;
            }
            _ => {}
        }
    }
    out
}

/// The brute force: frame `name:line` strings by naive replay; a line in a header (f1's block
/// 2) is `name:h.h:line`.
fn oracle(db: &ProgramDb, events: &[Event]) -> BTreeMap<String, u64> {
    let mut stacks: BTreeMap<u32, Vec<(u32, u32, bool)>> = BTreeMap::new();
    let mut t = 0;
    let mut counts = BTreeMap::new();
    for &e in events {
        let stack = stacks.entry(t).or_default();
        match e {
            Event::Thread(n) => t = n.0,
            Event::Enter(f) => stack.push((f.0, 0, false)),
            Event::Leave => {
                stack.pop();
            }
            Event::Block(b) => {
                let top = stack.last_mut().expect("blocks only inside frames");
                top.1 = db.functions[top.0 as usize]
                    .block_lines
                    .get(b.index())
                    .copied()
                    .unwrap_or(0);
                top.2 = (top.0, b.0) == (1, 2);
                let names: Vec<String> = stack
                    .iter()
                    .map(|&(f, l, header)| match (l, header) {
                        (0, _) => format!("f{f}"),
                        (l, true) => format!("f{f}:h.h:{l}"),
                        (l, false) => format!("f{f}:{l}"),
                    })
                    .collect();
                *counts.entry(names.join(";")).or_default() += 1;
            }
            Event::Path(_) => unreachable!("block traces only"),
        }
    }
    counts
}

fn folded_map(lines: &[String]) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for l in lines {
        let (stack, n) = l.rsplit_once(' ').unwrap();
        *m.entry(stack.to_owned()).or_default() += n.parse::<u64>().unwrap();
    }
    m
}

fn walk_trace(db: &ProgramDb, events: &[Event]) -> (ProgramDb, wpp_show::SourceMap, wpp_show::Run) {
    let bytes = wpp_trace::file::to_binary(db, events).unwrap();
    let reader = wpp_trace::TraceReader::from_bytes(bytes).unwrap();
    Recording::Trace(Box::new(reader.read_ahead()))
        .walk()
        .unwrap()
}

fn walk_wpp(db: &ProgramDb, events: &[Event]) -> (ProgramDb, wpp_show::SourceMap, wpp_show::Run) {
    let mut c = TraceCompressor::new(Algorithm::Sequitur, None, db.clone());
    c.push_batch(events).unwrap();
    Recording::Wpp(Box::new(c.finish().unwrap()))
        .walk()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn folded_stacks_equal_the_brute_force(steps in prop::collection::vec((0u32..3, 0u32..9), 0..400)) {
        let db = db();
        let events = trace(&steps);
        let want = oracle(&db, &events);
        for (db2, map, run) in [walk_trace(&db, &events), walk_wpp(&db, &events)] {
            let got = folded_map(&wpp_show::stacks::folded_lines(&db2, &map, &run));
            prop_assert_eq!(&got, &want);
            // pprof: decoding the protobuf gives the same total and one sample per line.
            let p = wpp_show::stacks::pprof_profile(&db2, &map, &run);
            let back = wpp_show::stacks::proto::Profile::decode(p.encode_to_vec().as_slice()).unwrap();
            let total: i64 = back.sample.iter().map(|s| s.value[0]).sum();
            prop_assert_eq!(total as u64, want.values().sum::<u64>());
            prop_assert_eq!(run.samples, want.values().sum::<u64>());
        }
    }

    #[test]
    fn block_counts_and_calls_equal_the_brute_force(steps in prop::collection::vec((0u32..2, 0u32..9), 0..300)) {
        let db = db();
        let events = trace(&steps);
        let (_, _, run) = walk_wpp(&db, &events);
        let mut stacks: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        let (mut t, mut blocks, mut calls) = (0, BTreeMap::new(), [0u64; 4]);
        let mut active = std::collections::BTreeSet::new();
        for &e in &events {
            if !matches!(e, Event::Thread(_)) {
                active.insert(t);
            }
            let s = stacks.entry(t).or_default();
            match e {
                Event::Thread(n) => t = n.0,
                Event::Enter(f) => { s.push(f.0); calls[f.index()] += 1; }
                Event::Leave => { s.pop(); }
                Event::Block(b) => *blocks.entry((*s.last().unwrap(), b.0)).or_insert(0u64) += 1,
                Event::Path(_) => {}
            }
        }
        prop_assert_eq!(run.calls(), calls.to_vec());
        prop_assert_eq!(run.threads, active.len());
        for f in 0..4u32 {
            for b in 0..4u32 {
                let want = blocks.get(&(f, b)).copied().unwrap_or(0);
                let got = run.block_counts[f as usize].get(b as usize).copied().unwrap_or(0);
                // Function 3 has no lines, so the database does not know its blocks.
                if f < 3 { prop_assert_eq!(got, want, "f{} b{}", f, b); }
            }
        }
    }
}

/// Any events, not only well-formed ones (returns with no frame, blocks outside functions,
/// frames left open), with a body repeated `times` so that rules recur in many contexts.
fn messy_trace(body: &[(u32, u32)], times: usize) -> Vec<Event> {
    let mut out = Vec::new();
    let mut current = 0;
    for _ in 0..times {
        for &(t, a) in body {
            if t != current {
                out.push(Event::Thread(ThreadId(t)));
                current = t;
            }
            out.push(match a {
                0..=3 => Event::Enter(FunctionId(a)),
                4..=8 => Event::Block(BlockId(a - 4)),
                _ => Event::Leave,
            });
        }
    }
    out
}

fn compressed(db: &ProgramDb, events: &[Event], algorithm: Algorithm) -> Recording {
    let mut c = TraceCompressor::new(algorithm, None, db.clone());
    c.push_batch(events).unwrap();
    Recording::Wpp(Box::new(c.finish().unwrap()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// The walk by rule entries gives exactly the event-by-event walk's run (contexts in the
    /// same order, every count), on every compressor's grammar.
    #[test]
    fn the_walk_by_rules_equals_the_walk_by_events(
        body in prop::collection::vec((0u32..3, 0u32..11), 0..120),
        times in 1usize..6,
        algorithm in prop::sample::select(vec![
            Algorithm::Sequitur, Algorithm::Sequitur1, Algorithm::Frequency, Algorithm::Phrase,
        ]),
    ) {
        let db = db();
        let events = messy_trace(&body, times);
        let wpp = compressed(&db, &events, algorithm);
        if let Recording::Wpp(w) = &wpp {
            // Threads are start rules, not terminals, so the walk by rules applies.
            prop_assert!(!w.alphabet.events().iter().any(|e| matches!(e, Event::Thread(_))));
        }
        let (_, _, by_rules) = wpp.walk().unwrap();
        let (_, _, by_events) = compressed(&db, &events, algorithm).walk_events().unwrap();
        prop_assert_eq!(by_rules, by_events);
    }
}

#[test]
fn callgrind_self_costs_and_call_edges_are_hand_computed() {
    // f0 { b0; call f1 { b0 b1 b2(h.h) }; b1; call f1 { b0 } }
    let e = |x: &str| -> Vec<Event> {
        x.split(' ')
            .map(|t| match (&t[..1], t[1..].parse::<u32>().unwrap_or(0)) {
                ("F", n) => Event::Enter(FunctionId(n)),
                ("B", n) => Event::Block(BlockId(n)),
                _ => Event::Leave,
            })
            .collect()
    };
    let events = e("F0 B0 F1 B0 B1 B2 E B1 F1 B0 E E");
    let (db, map, run) = walk_trace(&db(), &events);
    let mut out = Vec::new();
    wpp_show::callgrind::write_callgrind(&db, &map, &run, "test", &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let want = "summary: 6\n\nfl=(1) a.c\nfn=(1) f0\n1 1\n2 1\ncfi=(1)\ncfn=(2) f1\ncalls=1 10\n1 3\n\
                cfi=(1)\ncfn=(2)\ncalls=1 10\n2 1\n\nfl=(1)\nfn=(2)\n11 2\n12 1\nfi=(2) h.h\n13 1\n";
    assert!(text.ends_with(want), "{text}");
}

#[test]
fn source_table_round_trips_and_old_databases_read() {
    let db = db();
    let bytes = db.to_bytes().unwrap();
    let back = ProgramDb::from_bytes(&bytes, 0, wpp_trace::DbLayout::WithCfgs).unwrap();
    assert_eq!(back, db);
    assert_eq!(back.block_file(FunctionId(1), 2), Some("h.h"));
    assert_eq!(back.block_file(FunctionId(0), 2), Some("a.c"));
    let mut old = db.clone();
    old.files.clear();
    for f in &mut old.functions {
        f.block_files.clear();
    }
    let old_bytes = old.to_bytes().unwrap();
    assert_eq!(
        &bytes[..old_bytes.len()],
        &old_bytes[..],
        "the table is appended"
    );
    let read = ProgramDb::from_bytes(&old_bytes, 0, wpp_trace::DbLayout::WithCfgs).unwrap();
    assert_eq!(read, old);
    // A block file index past the file table is an error at its byte offset.
    let mut bad = bytes.clone();
    // The table ends with f1's last block index, then f2's and f3's empty lists.
    let last = bad.len() - 3;
    bad[last] = 7;
    let err = ProgramDb::from_bytes(&bad, 100, wpp_trace::DbLayout::WithCfgs).unwrap_err();
    assert_eq!(err.offset, 100 + last as u64, "{err}");
    assert!(err.to_string().contains("block file index"), "{err}");
}

/// A line counts, per function, the most-run block that runs code of it — that starts on it
/// or has it as an inner line — summed over functions; inner lines survive a trace file and a
/// `.wpp`, and the lcov file shows them.
#[test]
fn inner_lines_count_the_runs_of_their_blocks() {
    let mut db = db();
    // f0: blocks on lines 1, 2, 3; block 0 also runs lines 5 and 6, block 1 lines 3 and 6.
    db.functions[0].block_inner_lines = vec![vec![5, 6], vec![3, 6], vec![], vec![]];
    // f1: block 0 (line 11) also runs line 6; block 2 (line 13 of h.h) runs h.h's line 14.
    db.functions[1].block_inner_lines = vec![vec![6], vec![], vec![14], vec![]];
    let events = [
        Event::Enter(FunctionId(0)),
        Event::Block(BlockId(0)),
        Event::Block(BlockId(1)),
        Event::Block(BlockId(1)),
        Event::Block(BlockId(2)),
        Event::Enter(FunctionId(1)),
        Event::Block(BlockId(0)),
        Event::Block(BlockId(2)),
        Event::Leave,
        Event::Leave,
    ];
    let want: BTreeMap<(&str, u32), u64> = [
        (("a.c", 1), 1),
        (("a.c", 2), 2),
        (("a.c", 3), 2),
        (("a.c", 5), 1),
        (("a.c", 6), 3),
        (("a.c", 11), 1),
        (("a.c", 12), 0),
        (("a.c", 21), 0),
        (("a.c", 22), 0),
        (("a.c", 23), 0),
        (("h.h", 13), 1),
        (("h.h", 14), 1),
    ]
    .into_iter()
    .collect();
    for (db, map, run) in [walk_trace(&db, &events), walk_wpp(&db, &events)] {
        let lines = wpp_show::annotate::line_counts(&db, &map, &run, None).unwrap();
        let got: BTreeMap<(&str, u32), u64> = lines
            .iter()
            .map(|(loc, info)| ((map.file_name(loc.file), loc.line), info.count))
            .collect();
        assert_eq!(got, want);
        let mut lcov = Vec::new();
        wpp_show::annotate::write_lcov(&db, &map, &run, &mut lcov).unwrap();
        let lcov = String::from_utf8(lcov).unwrap();
        assert!(lcov.contains("DA:5,1\nDA:6,3\n"), "{lcov}");
    }
}
