//! Synthetic programs: determinism, exact lengths, well-formed traces, realistic repetition.

use std::collections::{BTreeMap, BTreeSet};
use wpp_trace::file::{to_binary, TraceReader};
use wpp_trace::synth::{SynthProgram, TraceKind};
use wpp_trace::{split_threads, Event, FunctionId, ThreadId};

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

fn threaded(p: &SynthProgram, kind: TraceKind, events: u64, threads: u32) -> Vec<Event> {
    let mut out = Vec::new();
    p.run_threads(kind, events, threads, |e| {
        out.push(e);
        Ok::<(), ()>(())
    })
    .unwrap();
    out
}

#[test]
fn threaded_runs_are_deterministic_exact_and_one_thread_is_a_plain_run() {
    let p = SynthProgram::generate(5);
    for kind in KINDS {
        assert_eq!(threaded(&p, kind, 30_000, 1), p.events(kind, 30_000));
        let a = threaded(&p, kind, 60_000, 3);
        assert_eq!(a.len(), 60_000);
        assert_eq!(a, threaded(&p, kind, 60_000, 3), "{kind:?}");
        let switches = a.iter().filter(|e| matches!(e, Event::Thread(_))).count();
        assert!(switches >= 10, "{kind:?}: only {switches} thread switches");
        assert_eq!(split_threads(&a).len(), 3);
    }
}

#[test]
fn each_thread_of_a_threaded_run_is_that_threads_own_run() {
    let p = SynthProgram::generate(6);
    let trace = threaded(&p, TraceKind::Blocks, 60_000, 3);
    for (t, stream) in split_threads(&trace) {
        let alone = collect_thread(&p, t, TraceKind::Blocks, stream.len() as u64);
        assert_eq!(stream, alone, "thread {t}");
        check_well_formed(&p, TraceKind::Blocks, &stream);
    }
    // Path ids are numbered across threads, so a thread's path stream equals its own run's up
    // to a renaming of ids that is one-to-one per function.
    let trace = threaded(&p, TraceKind::Paths, 60_000, 3);
    for (t, stream) in split_threads(&trace) {
        let alone = collect_thread(&p, t, TraceKind::Paths, stream.len() as u64);
        assert_eq!(stream.len(), alone.len());
        let (mut there, mut back) = (BTreeMap::new(), BTreeMap::new());
        let mut calls = Vec::new();
        for (&a, &b) in stream.iter().zip(&alone) {
            match (a, b) {
                (Event::Path(x), Event::Path(y)) => {
                    let f = *calls.last().unwrap();
                    assert_eq!(*there.entry((f, x)).or_insert(y), y, "thread {t}");
                    assert_eq!(*back.entry((f, y)).or_insert(x), x, "thread {t}");
                }
                (Event::Enter(f), _) => {
                    assert_eq!(a, b, "thread {t}");
                    calls.push(f);
                }
                _ => {
                    assert_eq!(a, b, "thread {t}");
                    calls.pop();
                }
            }
        }
    }
}

fn collect_thread(p: &SynthProgram, t: ThreadId, kind: TraceKind, n: u64) -> Vec<Event> {
    let mut out = Vec::new();
    p.run_as_thread(t.0, kind, n, |e| {
        out.push(e);
        Ok::<(), ()>(())
    })
    .unwrap();
    out
}

#[test]
fn a_failing_sink_stops_every_thread() {
    let p = SynthProgram::generate(8);
    let mut n = 0;
    let r = p.run_threads(TraceKind::Paths, u64::MAX, 4, |_| {
        n += 1;
        if n == 10_000 {
            Err("disk full")
        } else {
            Ok(())
        }
    });
    assert_eq!((r, n), (Err("disk full"), 10_000));
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
