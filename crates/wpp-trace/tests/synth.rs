//! Synthetic programs: determinism, exact lengths, well-formed traces, realistic repetition.

use std::collections::BTreeSet;
use wpp_trace::file::{to_binary, TraceReader};
use wpp_trace::synth::{SynthProgram, TraceKind};
use wpp_trace::{Event, FunctionId};

const KINDS: [TraceKind; 2] = [TraceKind::Blocks, TraceKind::Paths];

#[test]
fn a_seed_gives_the_same_program_and_trace() {
    for seed in [0, 1, 42, u64::MAX] {
        let (a, b) = (SynthProgram::generate(seed), SynthProgram::generate(seed));
        assert_eq!(a.program(), b.program());
        for kind in KINDS {
            assert_eq!(
                a.events(kind, 20_000),
                b.events(kind, 20_000),
                "seed {seed}"
            );
        }
    }
    let (a, b) = (SynthProgram::generate(1), SynthProgram::generate(2));
    assert_ne!(
        a.events(TraceKind::Blocks, 20_000),
        b.events(TraceKind::Blocks, 20_000)
    );
}

#[test]
fn traces_have_exactly_the_requested_length_and_shorter_ones_are_prefixes() {
    let p = SynthProgram::generate(7);
    for kind in KINDS {
        let long = p.events(kind, 50_000);
        assert_eq!(long.len(), 50_000);
        for n in [0, 1, 2, 17, 4096, 49_999] {
            assert_eq!(p.events(kind, n), long[..n as usize], "{kind:?} {n}");
        }
    }
}

/// Checks nesting and local ids; returns the depth left open at the end.
fn check_well_formed(p: &SynthProgram, kind: TraceKind, events: &[Event]) -> usize {
    let db = p.program();
    let mut stack: Vec<FunctionId> = Vec::new();
    // Per function, path ids seen so far: new ids must be dense, in order of appearance.
    let mut seen_paths = vec![BTreeSet::new(); db.functions.len()];
    for (i, &e) in events.iter().enumerate() {
        match e {
            Event::Enter(f) => {
                assert!(db.function(f).is_some(), "event {i}: unknown function {f}");
                stack.push(f);
            }
            Event::Leave => {
                stack
                    .pop()
                    .unwrap_or_else(|| panic!("event {i}: Leave without Enter"));
            }
            Event::Block(b) => {
                assert_eq!(kind, TraceKind::Blocks);
                let f = *stack.last().expect("a block outside any function");
                let blocks = db.function(f).unwrap().block_lines.len();
                assert!(
                    b.index() < blocks,
                    "event {i}: block {b} of {f} has {blocks}"
                );
            }
            Event::Path(id) => {
                assert_eq!(kind, TraceKind::Paths);
                let f = *stack.last().expect("a path outside any function");
                let seen = &mut seen_paths[f.index()];
                assert!(
                    id.0 <= seen.len() as u64,
                    "event {i}: path id {id} is not dense"
                );
                seen.insert(id.0);
            }
            Event::Thread(_) => panic!("synthetic traces are single-threaded"),
        }
    }
    assert_eq!(
        stack.first(),
        Some(&FunctionId(0)),
        "main is the outermost function"
    );
    stack.len()
}

#[test]
fn traces_are_well_nested_with_local_ids() {
    for seed in 0..8 {
        let p = SynthProgram::generate(seed);
        for kind in KINDS {
            let events = p.events(kind, 100_000);
            assert_eq!(events[0], Event::Enter(FunctionId(0)));
            let open = check_well_formed(&p, kind, &events);
            assert!(open >= 1, "the trace is cut inside main");
        }
    }
}

#[test]
fn block_and_path_traces_make_the_same_calls() {
    // Both vocabularies come from one run: the calls and returns of the path trace, which
    // covers more of the run per event, extend those of the block trace.
    for seed in 0..8 {
        let p = SynthProgram::generate(seed);
        let calls = |kind| -> Vec<Event> {
            p.events(kind, 100_000)
                .into_iter()
                .filter(|e| matches!(e, Event::Enter(_) | Event::Leave))
                .collect()
        };
        let (blocks, paths) = (calls(TraceKind::Blocks), calls(TraceKind::Paths));
        assert!(
            blocks.len() > 100 && paths.len() >= blocks.len(),
            "seed {seed}"
        );
        assert_eq!(blocks, paths[..blocks.len()], "seed {seed}");
    }
}

#[test]
fn traces_are_repetitive_and_skewed_like_real_control_flow() {
    for seed in 0..8 {
        let p = SynthProgram::generate(seed);
        let events = p.events(TraceKind::Blocks, 1_000_000);
        let distinct: BTreeSet<Event> = events.iter().copied().collect();
        assert!(
            (20..20_000).contains(&distinct.len()),
            "seed {seed}: {} distinct events",
            distinct.len()
        );
        // main dispatches often: no single call swallows the trace.
        let mut depth = 0usize;
        let mut dispatches = 0;
        for e in &events {
            match e {
                Event::Enter(_) => {
                    depth += 1;
                    dispatches += usize::from(depth == 2);
                }
                Event::Leave => depth -= 1,
                _ => {}
            }
        }
        assert!(
            dispatches >= 50,
            "seed {seed}: only {dispatches} calls from main"
        );
    }
}

#[test]
fn synthetic_traces_round_trip_through_the_binary_format() {
    let p = SynthProgram::generate(3);
    for kind in KINDS {
        let events = p.events(kind, 200_000);
        let bytes = to_binary(p.program(), &events).unwrap();
        let r = TraceReader::from_bytes(bytes).unwrap();
        assert_eq!(r.program(), p.program());
        assert_eq!(r.read_all().unwrap(), events);
    }
}

#[test]
#[ignore = "10^7 events; run with --release --ignored"]
fn ten_million_events_round_trip() {
    let p = SynthProgram::generate(10);
    let mut w = wpp_trace::TraceWriter::new(Vec::new(), p.program()).unwrap();
    p.run(TraceKind::Paths, 10_000_000, |e| w.push(e)).unwrap();
    let bytes = w.finish().unwrap();
    let mut expected = Vec::new();
    let mut check = |e| expected.push(e);
    let ok: Result<(), std::convert::Infallible> = p.run(TraceKind::Paths, 10_000_000, |e| {
        check(e);
        Ok(())
    });
    ok.unwrap();
    assert_eq!(
        TraceReader::from_bytes(bytes).unwrap().read_all().unwrap(),
        expected
    );
}
