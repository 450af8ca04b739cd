//! Elided block events (issue 15, item 4): a trace whose program database names implied
//! blocks reads back with those blocks' events restored, exactly as if they had been recorded;
//! a hostile implied-block table is refused with a message, never a hang or a panic.
//!
//! The oracle of the property test is a random walk over random CFGs that records every
//! block; the elided trace is that walk with the implied blocks' events dropped, computed by
//! the rule the instrumenter follows (every predecessor has the block as its only successor
//! and calls nothing).

use proptest::prelude::*;
use wpp_trace::file::{to_binary, TraceError, TraceReader, TraceWriter};
use wpp_trace::{split_threads, BlockId, Event, FunctionCfg, FunctionId, ProgramDb, ThreadId};

/// One random function: per block its successors and the function it calls (after its
/// event), if any.
#[derive(Clone, Debug)]
struct Func {
    successors: Vec<Vec<u32>>,
    calls: Vec<Option<u32>>,
    /// Whether `Enter` implies the entry block.
    entry_implied: bool,
}

fn arb_func(functions: u32) -> impl Strategy<Value = Func> {
    (2usize..10).prop_flat_map(move |n| {
        let block = prop_oneof![
            // Mostly one successor, often forward: chains of implied blocks.
            3 => (0..n as u32).prop_map(|s| vec![s]),
            2 => prop::collection::vec(0..n as u32, 2..3),
            1 => Just(Vec::new()),
        ];
        let call = prop_oneof![3 => Just(None), 1 => (0..functions).prop_map(Some)];
        (
            prop::collection::vec(block, n),
            prop::collection::vec(call, n),
            any::<bool>(),
        )
            .prop_map(|(successors, calls, entry_implied)| Func {
                successors,
                calls,
                entry_implied,
            })
    })
}

/// The implied block of each block, by the instrumenter's rule, cycles broken as it does.
fn implied(f: &Func) -> Vec<Option<u32>> {
    let n = f.successors.len();
    let mut preds = vec![Vec::new(); n];
    let only: Vec<Option<u32>> = (0..n)
        .map(|b| {
            let mut s = f.successors[b].clone();
            s.sort_unstable();
            s.dedup();
            for &x in &s {
                preds[x as usize].push(b);
            }
            match s[..] {
                [x] if f.calls[b].is_none() => Some(x),
                _ => None,
            }
        })
        .collect();
    let elided = |j: u32| {
        j != 0
            && !preds[j as usize].is_empty()
            && preds[j as usize].iter().all(|&p| only[p] == Some(j))
    };
    let mut next: Vec<Option<u32>> = only.iter().map(|s| s.filter(|&j| elided(j))).collect();
    while let Some(b) = wpp_trace::program::implied_cycle(&next) {
        for &p in &preds[b as usize] {
            next[p] = None;
        }
    }
    next
}

/// A random walk from `f`'s entry recording every event; `choices` drive the branches. Once
/// `budget` events are spent, calls are skipped and the frame returns at the next block that
/// implies none (a real program, too, leaves a block only by its terminator).
fn walk(
    funcs: &[Func],
    tables: &[Vec<Option<u32>>],
    f: u32,
    choices: &mut impl Iterator<Item = u32>,
    budget: &mut usize,
    depth: u32,
    out: &mut Vec<(u32, Event, bool)>,
) {
    out.push((u32::MAX, Event::Enter(FunctionId(f)), false));
    let func = &funcs[f as usize];
    let mut b = 0u32;
    let mut entry = true;
    loop {
        out.push((f, Event::Block(BlockId(b)), std::mem::take(&mut entry)));
        *budget = budget.saturating_sub(1);
        if let Some(g) = func.calls[b as usize].filter(|_| depth < 6 && *budget > 0) {
            walk(funcs, tables, g, choices, budget, depth + 1, out);
        }
        let succ = &func.successors[b as usize];
        if succ.is_empty() || (*budget == 0 && tables[f as usize][b as usize].is_none()) {
            break;
        }
        b = succ[choices.next().unwrap_or(0) as usize % succ.len()];
    }
    out.push((u32::MAX, Event::Leave, false));
}

/// The program database of `funcs` with their implied blocks, optionally with CFGs.
fn database(funcs: &[Func], cfgs: bool) -> ProgramDb {
    let mut db = ProgramDb::default();
    for (i, f) in funcs.iter().enumerate() {
        db.intern(&format!("f{i}"));
        let func = &mut db.functions[i];
        func.implied_next = implied(f);
        func.entry_implied = f.entry_implied;
        if cfgs {
            func.cfg = Some(Box::new(FunctionCfg {
                successors: f.successors.clone(),
                exits: (0..f.successors.len() as u32)
                    .filter(|&b| f.successors[b as usize].is_empty())
                    .collect(),
                ..FunctionCfg::default()
            }));
        }
    }
    db
}

/// Two threads' walks interleaved at `switches`; the whole trace and the recorded one.
fn traces(funcs: &[Func], choices: &[u32], switches: &[usize]) -> (Vec<Event>, Vec<Event>) {
    let tables: Vec<_> = funcs.iter().map(implied).collect();
    let mut streams = Vec::new();
    for t in 0..2u32 {
        let mut it = choices.iter().copied().skip(t as usize).cycle();
        let mut out = Vec::new();
        let f = t % funcs.len() as u32;
        walk(funcs, &tables, f, &mut it, &mut 300, 0, &mut out);
        streams.push(out);
    }
    let elided = |(f, e, entry): &(u32, Event, bool)| match e {
        Event::Block(_) if *entry => funcs[*f as usize].entry_implied,
        Event::Block(b) => tables
            .get(*f as usize)
            .is_some_and(|t| t.iter().flatten().any(|&x| x == b.0)),
        _ => false,
    };
    let (mut whole, mut recorded) = (Vec::new(), Vec::new());
    let mut pos = [0usize; 2];
    let runs = switches.iter().enumerate().map(|(i, &n)| (i % 2, n));
    for (t, n) in runs.chain([(0, usize::MAX), (1, usize::MAX)]) {
        whole.push(Event::Thread(ThreadId(t as u32)));
        recorded.push(Event::Thread(ThreadId(t as u32)));
        let s = &streams[t];
        let end = s.len().min(pos[t].saturating_add(n));
        for x in &s[pos[t]..end] {
            whole.push(x.1);
            if !elided(x) {
                recorded.push(x.1);
            }
        }
        pos[t] = end;
    }
    (whole, recorded)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn restored_traces_are_the_whole_walks(
        funcs in prop::collection::vec(arb_func(3), 3),
        choices in prop::collection::vec(0u32..8, 1..64),
        switches in prop::collection::vec(1usize..40, 0..12),
        chunk_bytes in 8usize..200,
        cfgs in any::<bool>(),
    ) {
        let (whole, recorded) = traces(&funcs, &choices, &switches);
        let db = database(&funcs, cfgs);
        let mut w = TraceWriter::with_chunk_bytes(Vec::new(), &db, chunk_bytes).unwrap();
        recorded.iter().try_for_each(|&e| w.push(e)).unwrap();
        let bytes = w.finish().unwrap();
        let mut r = TraceReader::from_bytes(bytes.clone()).unwrap();
        prop_assert!(!r.program().has_implied_blocks());
        let mut restored = Vec::new();
        r.for_each_batch(|b| restored.extend_from_slice(b)).unwrap();
        prop_assert_eq!(r.restored_events(), (whole.len() - recorded.len()) as i64);
        // A restored event comes right after the one implying it, even where the recording
        // switched threads in between: traces are equal per thread (`same_per_thread`).
        let whole = split_threads(&whole);
        prop_assert_eq!(split_threads(&restored), whole.clone());
        let streamed = TraceReader::from_reader(std::io::Cursor::new(bytes)).unwrap();
        prop_assert_eq!(split_threads(&streamed.read_all().unwrap()), whole);
    }
}

/// The events of a function `f0` with blocks 0 → 1 → 2, 1 and 2 implied.
fn chain_db() -> ProgramDb {
    let mut db = ProgramDb::default();
    db.intern("f0");
    db.functions[0].implied_next = vec![Some(1), Some(2), None];
    db
}

fn header_error(db: &ProgramDb) -> String {
    let bytes = to_binary(db, &[Event::Enter(FunctionId(0))]).unwrap();
    match TraceReader::from_bytes(bytes) {
        Ok(_) => panic!("a hostile implied-block table was accepted"),
        Err(e) => {
            assert!(matches!(e, TraceError::Header { .. }), "{e:?}");
            e.to_string()
        }
    }
}

#[test]
fn a_cycle_of_implied_blocks_is_refused() {
    let mut db = chain_db();
    db.functions[0].implied_next = vec![Some(1), Some(2), Some(1)];
    let e = header_error(&db);
    assert!(e.contains("implied blocks of function 0 (`f0`)"), "{e}");
    assert!(e.contains("cycle of implied blocks"), "{e}");
    db.functions[0].implied_next = vec![None, Some(1)];
    assert!(header_error(&db).contains("block 1 is on a cycle"));
}

#[test]
fn implied_blocks_out_of_range_are_refused() {
    let db = chain_db();
    let mut bytes = db.to_bytes().unwrap();
    // The table's end: "I" 1, 1 function, 3 blocks (2 × 3 + 0: no entry implied by `Enter`):
    // 1 + 1, 2 + 1, none.
    let at = bytes.len() - 7;
    assert_eq!(&bytes[at..], &[b'I', 1, 1, 6, 2, 3, 0]);
    let last = bytes.len() - 1;
    bytes[last] = 9;
    let layout = wpp_trace::DbLayout::WithCfgs;
    let e = ProgramDb::from_bytes(&bytes, 0, layout).unwrap_err();
    assert!(e.message.contains("implied block"), "{e}");
    assert_eq!(e.offset, bytes.len() as u64 - 1, "{e}");
    // More blocks than bytes.
    let with_table = |table: &[u8]| [&bytes[..at], table].concat();
    let more = with_table(&[b'I', 1, 1, 8, 2, 3, 0]);
    let e = ProgramDb::from_bytes(&more, 0, layout).unwrap_err();
    assert!(
        e.message.contains("4 blocks, but only 3 bytes are left"),
        "{e}"
    );
    // The entry implied by `Enter` reads back.
    let entry = with_table(&[b'I', 1, 1, 7, 2, 3, 0]);
    let back = ProgramDb::from_bytes(&entry, 0, layout).unwrap();
    assert!(back.functions[0].entry_implied);
    assert_eq!(back.to_bytes().unwrap(), entry);
    // Another function count.
    let other = with_table(&[b'I', 1, 2, 6, 2, 3, 0]);
    let e = ProgramDb::from_bytes(&other, 0, layout).unwrap_err();
    assert!(
        e.message.contains("has 2 functions but the database 1"),
        "{e}"
    );
    // Every cut of the table is an error, never a panic.
    let whole = chain_db().to_bytes().unwrap();
    for cut in at + 1..whole.len() {
        assert!(
            ProgramDb::from_bytes(&whole[..cut], 0, layout).is_err(),
            "cut {cut}"
        );
    }
}

#[test]
fn implied_blocks_must_be_the_cfgs_only_successors() {
    let mut db = chain_db();
    db.functions[0].cfg = Some(Box::new(FunctionCfg {
        successors: vec![vec![1], vec![0, 2], vec![]],
        exits: vec![2],
        ..FunctionCfg::default()
    }));
    let e = header_error(&db);
    assert!(
        e.contains("block 2 is implied by block 1, whose successors are [0, 2]"),
        "{e}"
    );
    db.functions[0]
        .cfg
        .as_mut()
        .unwrap()
        .successors
        .push(vec![]);
    assert!(header_error(&db).contains("3 blocks, but its CFG has 4"));
}

/// A chain longer than a reader's batch is restored across batches, in bounded memory.
#[test]
fn long_chains_cross_batches() {
    let n = 3 * wpp_trace::file::binary::BATCH_EVENTS as u32 + 5;
    let mut db = ProgramDb::default();
    db.intern("long");
    db.functions[0].implied_next = (1..n).map(Some).chain([None]).collect();
    let recorded = [
        Event::Enter(FunctionId(0)),
        Event::Block(BlockId(0)),
        Event::Leave,
    ];
    let mut r = TraceReader::from_bytes(to_binary(&db, &recorded).unwrap()).unwrap();
    let mut longest = 0;
    let mut events = Vec::new();
    r.for_each_batch(|b| {
        longest = longest.max(b.len());
        events.extend_from_slice(b);
    })
    .unwrap();
    assert!(longest <= wpp_trace::file::binary::BATCH_EVENTS);
    assert_eq!(r.restored_events(), i64::from(n) - 1);
    let blocks: Vec<_> = (0..n).map(|b| Event::Block(BlockId(b))).collect();
    assert_eq!(events[1..events.len() - 1], blocks[..]);
    assert_eq!(events.last(), Some(&Event::Leave));
}

/// A recording cut short reads up to its last whole chunk, restored, and the truncation counts
/// the events handed out.
#[test]
fn a_truncation_counts_the_restored_events() {
    let db = chain_db();
    let mut recorded = vec![Event::Enter(FunctionId(0))];
    recorded.extend((0..200).map(|_| Event::Block(BlockId(0))));
    let mut w = TraceWriter::with_chunk_bytes(Vec::new(), &db, 16).unwrap();
    recorded.iter().try_for_each(|&e| w.push(e)).unwrap();
    let bytes = w.finish().unwrap();
    let cut = bytes[..bytes.len() / 2].to_vec();
    let mut events = 0u64;
    let mut error = None;
    for item in TraceReader::from_bytes(cut.clone()).unwrap() {
        match item {
            Ok(_) => events += 1,
            Err(e) => error = Some(e),
        }
    }
    match error {
        Some(TraceError::Truncated { events: n, .. }) => assert_eq!(n, events),
        e => panic!("expected a truncation, got {e:?}"),
    }
    let mut r = TraceReader::from_bytes(cut).unwrap().allow_truncated(true);
    let mut read = 0;
    r.for_each_batch(|b| read += b.len() as u64).unwrap();
    assert_eq!(read, events);
    assert_eq!(r.truncation().map(|t| t.events), Some(events));
    assert!(
        r.restored_events() > 0 && events % 3 == 1,
        "each B 0 brings B 1 and B 2"
    );
}

/// The mark of blocks recorded as paths reads back only where there are CFGs to decode them
/// with and no implied-block table; any other is refused with its offset.
#[test]
fn paths_stand_for_blocks_only_with_cfgs_and_no_implied_table() {
    let layout = wpp_trace::DbLayout::WithCfgs;
    let mut db = ProgramDb::default();
    db.intern("f0");
    db.functions[0].cfg = Some(Box::new(wpp_trace::FunctionCfg {
        successors: vec![vec![]],
        exits: vec![0],
        ..Default::default()
    }));
    db.paths_are_blocks = true;
    let bytes = db.to_bytes().unwrap();
    assert_eq!(&bytes[bytes.len() - 2..], b"B\x01");
    let back = ProgramDb::from_bytes(&bytes, 0, layout).unwrap();
    assert!(back.paths_are_blocks);
    let at = bytes.len() as u64 - 2;
    let refused = |db: &ProgramDb, bytes: &[u8], what: &str| {
        let e = ProgramDb::from_bytes(bytes, 0, layout).unwrap_err();
        assert!(e.message.contains(what), "{e}");
        assert_eq!(e.offset, at, "{db:?}: {e}");
    };
    let mut later = bytes.clone();
    *later.last_mut().unwrap() = 2;
    refused(&db, &later, "paths-as-blocks version 2 is not 1");
    let mut no_cfgs = db.clone();
    no_cfgs.functions[0].cfg = None;
    let mut bytes = no_cfgs.to_bytes().unwrap();
    let at_no_cfgs = bytes.len() as u64 - 2;
    let e = ProgramDb::from_bytes(&bytes, 0, layout).unwrap_err();
    assert!(e.message.contains("no function has a CFG"), "{e}");
    assert_eq!(e.offset, at_no_cfgs);
    bytes.truncate(bytes.len() - 1);
    assert!(ProgramDb::from_bytes(&bytes, 0, layout).is_err());
    let mut both = db.clone();
    both.functions[0].implied_next = vec![None];
    both.functions[0].entry_implied = true;
    let bytes = both.to_bytes().unwrap();
    let e = ProgramDb::from_bytes(&bytes, 0, layout).unwrap_err();
    assert!(
        e.message.contains("implied-block table is present too"),
        "{e}"
    );
}
