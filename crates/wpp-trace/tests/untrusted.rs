//! Issue 14's reader defects as tests: event ids are checked against the program database
//! where a trace is read, and chunks carry sequence numbers, so a hostile trace is refused
//! with a message saying what and at which byte offset (or line) — or, where a mutation is
//! harmless, read as exactly the original events; never a different answer silently.

use proptest::prelude::*;
use wpp_trace::file::binary::{CHUNK_HEADER_LEN, PREAMBLE_LEN};
use wpp_trace::file::{to_binary, TraceError, TraceReader, TraceWriter, MAX_THREADS};
use wpp_trace::{BlockId, Event, FunctionId, PathId, ProgramDb, ThreadId};

/// A database declaring `n` functions, none with a CFG.
fn db(n: usize) -> ProgramDb {
    let mut db = ProgramDb::default();
    for i in 0..n {
        db.intern(&format!("f{i}"));
    }
    db
}

/// Reads every event, stopping at the first error.
fn read(bytes: Vec<u8>) -> Result<Vec<Event>, TraceError> {
    TraceReader::from_bytes(bytes)?.read_all()
}

#[test]
fn an_undeclared_function_in_a_text_trace_is_an_error_naming_its_line() {
    // Issue 14's reproducer: 17 bytes that used to size a 4 GB index.
    let e = read(b"F #4294967295\nE\n".to_vec()).unwrap_err();
    assert!(matches!(e, TraceError::Undeclared { line: 1, .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "line 1: function id 4294967295 is not declared: the program database declares 0 \
         functions"
    );
    // Declared ids read; the next one is refused.
    let ok = read(b"D\nD\nF #1\nE\n".to_vec()).unwrap();
    assert_eq!(ok, [Event::Enter(FunctionId(1)), Event::Leave]);
    let e = read(b"D\nD\nF #2\nE\n".to_vec()).unwrap_err();
    assert!(e.to_string().starts_with("line 3: function id 2"), "{e}");
}

#[test]
fn thread_ids_are_bounded() {
    let last = format!("T {}\n", MAX_THREADS - 1);
    assert_eq!(
        read(last.into_bytes()).unwrap(),
        [Event::Thread(ThreadId(MAX_THREADS - 1))]
    );
    let e = read(format!("T {MAX_THREADS}\n").into_bytes()).unwrap_err();
    assert!(
        e.to_string().contains("thread id 1048576 is out of range"),
        "{e}"
    );
}

#[test]
fn an_undeclared_function_in_a_binary_trace_is_an_error_at_its_byte() {
    // The writer does not check ids (readers do): an event the database does not declare.
    let events = [Event::Enter(FunctionId(0)), Event::Enter(FunctionId(7))];
    let bytes = to_binary(&db(1), &events).unwrap();
    let payload_at = bytes.len() - CHUNK_HEADER_LEN - 2; // then the end marker
    let e = read(bytes).unwrap_err();
    assert_eq!(e.offset(), Some(payload_at as u64 + 1), "{e}");
    assert!(
        e.to_string().contains("function id 7 is not declared"),
        "{e}"
    );
}

#[test]
fn block_ids_are_bounded_by_the_largest_cfg_when_every_function_has_one() {
    let mut d = db(1);
    d.functions[0].cfg = Some(Box::new(wpp_trace::FunctionCfg {
        successors: vec![vec![1], vec![]],
        entry: 0,
        exits: vec![1],
        ..Default::default()
    }));
    let ok = [Event::Enter(FunctionId(0)), Event::Block(BlockId(1))];
    assert_eq!(read(to_binary(&d, &ok).unwrap()).unwrap(), ok);
    let bad = [Event::Enter(FunctionId(0)), Event::Block(BlockId(2))];
    let e = read(to_binary(&d, &bad).unwrap()).unwrap_err();
    assert!(e.to_string().contains("block id 2 is out of range"), "{e}");
}

/// `n` functions whose CFGs have `blocks[f]` blocks (a chain).
fn db_with_cfgs(blocks: &[u32]) -> ProgramDb {
    let mut d = db(blocks.len());
    for (f, &n) in blocks.iter().enumerate() {
        let successors = (0..n)
            .map(|b| if b + 1 < n { vec![b + 1] } else { vec![] })
            .collect();
        d.functions[f].cfg = Some(Box::new(wpp_trace::FunctionCfg {
            successors,
            entry: 0,
            exits: vec![n - 1],
            ..Default::default()
        }));
    }
    d
}

/// A block id inside the largest CFG but outside its own function's is refused with the event
/// index, its thread and the function's block count; each thread's stack is its own, and the
/// events before the bad one are read.
#[test]
fn block_ids_are_bounded_by_their_own_functions_cfg() {
    let d = db_with_cfgs(&[2, 5]);
    let (f0, f1) = (FunctionId(0), FunctionId(1));
    let ok = [
        Event::Thread(ThreadId(0)),
        Event::Enter(f0),
        Event::Block(BlockId(1)),
        Event::Thread(ThreadId(1)),
        Event::Enter(f1),
        Event::Block(BlockId(4)),
        Event::Thread(ThreadId(0)),
        Event::Enter(f1),
        Event::Block(BlockId(4)),
        Event::Leave,
        Event::Block(BlockId(1)),
    ];
    for bytes in [to_binary(&d, &ok).unwrap(), text(&d, &ok)] {
        assert_eq!(read(bytes).unwrap(), ok);
    }
    // Thread 0 returns to function 0 and runs its block 4: 4 ≥ 2. (A text trace has no CFGs,
    // so only the binary trace can be checked.)
    let mut bad = ok.to_vec();
    bad.push(Event::Block(BlockId(4)));
    let bytes = to_binary(&d, &bad).unwrap();
    let mut reader = TraceReader::from_bytes(bytes.clone()).unwrap();
    let before: Vec<_> = reader.by_ref().map_while(Result::ok).collect();
    assert_eq!(before, ok, "the events before the bad one are read");
    let e = read(bytes).unwrap_err();
    assert_eq!(
        e.to_string(),
        "event 11 of the trace (thread 0): block id 4 is out of range: function 0 has 2 blocks"
    );
}

/// A text trace of `events` with `d`'s names.
fn text(d: &ProgramDb, events: &[Event]) -> Vec<u8> {
    let mut w = wpp_trace::file::text::TextWriter::new(Vec::new(), d).unwrap();
    events.iter().for_each(|&e| w.push(e).unwrap());
    w.finish().unwrap()
}

/// A version 4 trace of `events` in chunks of about `chunk_bytes`, and the byte ranges of its
/// chunks (header and payload), the end marker last.
fn chunked(events: &[Event], chunk_bytes: usize, zstd: i32) -> (Vec<u8>, Vec<(usize, usize)>) {
    let mut w = TraceWriter::with_chunk_bytes(Vec::new(), &db(4), chunk_bytes)
        .unwrap()
        .with_zstd_level(zstd)
        .unwrap();
    events.iter().for_each(|&e| w.push(e).unwrap());
    let bytes = w.finish().unwrap();
    let body = ProgramDb::to_bytes(&db(4)).unwrap();
    let mut at = PREAMBLE_LEN + body.len();
    let mut ranges = Vec::new();
    while at < bytes.len() {
        let stored = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        ranges.push((at, at + CHUNK_HEADER_LEN + stored));
        at += CHUNK_HEADER_LEN + stored;
    }
    assert_eq!(at, bytes.len());
    (bytes, ranges)
}

/// Events inside `db(4)`'s limits.
fn arb_events() -> impl Strategy<Value = Vec<Event>> {
    let event = prop_oneof![
        (0u32..4).prop_map(|f| Event::Enter(FunctionId(f))),
        Just(Event::Leave),
        (0u32..300).prop_map(|b| Event::Block(BlockId(b))),
        any::<u64>().prop_map(|p| Event::Path(PathId(p))),
        (0u32..5).prop_map(|t| Event::Thread(ThreadId(t))),
    ];
    prop::collection::vec(event, 1..400)
}

/// What can happen to a trace's chunks (the end marker is the last "chunk").
#[derive(Clone, Debug)]
enum Damage {
    Duplicate(usize),
    Swap(usize, usize),
    Drop(usize),
    /// An id beyond the database, as the last event of a new chunk inserted at a position.
    Undeclared(usize, Event),
}

fn arb_damage() -> impl Strategy<Value = Damage> {
    let undeclared = prop_oneof![
        (4u32..).prop_map(|f| Event::Enter(FunctionId(f))),
        (MAX_THREADS..).prop_map(|t| Event::Thread(ThreadId(t))),
    ];
    prop_oneof![
        any::<usize>().prop_map(Damage::Duplicate),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Damage::Swap(a, b)),
        any::<usize>().prop_map(Damage::Drop),
        (any::<usize>(), undeclared).prop_map(|(at, e)| Damage::Undeclared(at, e)),
    ]
}

proptest! {
    /// Chunks duplicated, swapped or dropped and chunks with undeclared ids are refused with
    /// a byte offset inside the file; a swap of a chunk with itself is harmless and reads the
    /// original events; a file missing its tail stays a truncation with only whole chunks.
    #[test]
    fn damaged_chunk_sequences_are_refused_with_an_offset(
        events in arb_events(),
        chunk_bytes in 1usize..64,
        zstd in prop_oneof![Just(0), Just(1)],
        damage in arb_damage(),
    ) {
        let (bytes, ranges) = chunked(&events, chunk_bytes, zstd);
        let pick = |i: usize| ranges[i % ranges.len()];
        let head = &bytes[..ranges[0].0];
        let pieces: Vec<&[u8]> = ranges.iter().map(|&(a, b)| &bytes[a..b]).collect();
        let mut mutated: Vec<Vec<u8>> = pieces.iter().map(|p| p.to_vec()).collect();
        let last = ranges.len() - 1;
        // Whether the damaged file must read as the original, and whether as a truncation.
        let (harmless, truncated) = match damage {
            Damage::Duplicate(i) => {
                let (a, b) = pick(i);
                mutated.insert(i % ranges.len(), bytes[a..b].to_vec());
                (false, false)
            }
            Damage::Swap(i, j) => {
                mutated.swap(i % ranges.len(), j % ranges.len());
                (i % ranges.len() == j % ranges.len(), false)
            }
            Damage::Drop(i) => {
                // Without its end marker the file is a recording cut short.
                mutated.remove(i % ranges.len());
                (false, i % ranges.len() == last)
            }
            Damage::Undeclared(i, e) => {
                // A well-formed chunk (as a runtime would write it) with the bad id in it.
                let mut w = TraceWriter::new(Vec::new(), &db(4)).unwrap();
                w.push(Event::Leave).unwrap();
                w.push(e).unwrap();
                let one = w.finish().unwrap();
                let chunk = &one[head.len()..one.len() - CHUNK_HEADER_LEN];
                mutated.insert(i % ranges.len(), chunk.to_vec());
                (false, false)
            }
        };
        let file = [head.to_vec(), mutated.concat()].concat();
        let len = file.len() as u64;
        match read(file) {
            Ok(got) => {
                prop_assert!(harmless, "{damage:?} accepted");
                prop_assert_eq!(got, events);
            }
            Err(e) => {
                prop_assert!(!harmless, "{damage:?}: {e}");
                prop_assert_eq!(e.is_truncated(), truncated, "{:?}: {}", damage, e);
                // A truncation may be at the very end; damage is inside the file.
                let end = if truncated { len + 1 } else { len };
                let at = e.offset();
                prop_assert!(at.is_some_and(|at| at >= head.len() as u64 && at < end), "{e}");
            }
        }
    }

    /// Cut anywhere after the header, a file reads as a truncation holding the whole chunks
    /// before the cut.
    #[test]
    fn a_missing_tail_is_a_truncation(
        events in arb_events(),
        chunk_bytes in 1usize..64,
        cut in any::<prop::sample::Index>(),
    ) {
        let (bytes, ranges) = chunked(&events, chunk_bytes, 0);
        let start = ranges[0].0;
        let at = start + cut.index(bytes.len() - start);
        let whole = ranges.iter().take_while(|r| r.1 <= at).count().min(ranges.len() - 1);
        let mut r = TraceReader::from_bytes(bytes[..at].to_vec()).unwrap().allow_truncated(true);
        let mut got = Vec::new();
        r.for_each_batch(|run| got.extend_from_slice(run)).unwrap();
        let t = r.truncation().expect("a cut file is truncated");
        prop_assert_eq!(t.offset, if whole == 0 { start } else { ranges[whole - 1].1 } as u64);
        prop_assert_eq!(got.len() as u64, t.events);
        prop_assert_eq!(&got[..], &events[..got.len()]);
    }
}

/// The memory table an eWPP carries round-trips through a binary trace, with and without
/// source files before it; a table whose length runs past the database is an error, never an
/// allocation of that length.
#[test]
fn the_memory_table_round_trips_and_its_length_is_checked() {
    for files in [Vec::new(), vec!["a.c".to_string()]] {
        let mut d = db(2);
        d.files = files;
        d.memory = vec![7, 0, 255, 3];
        let bytes = to_binary(&d, &[Event::Enter(FunctionId(0)), Event::Leave]).unwrap();
        let r = TraceReader::from_bytes(bytes.clone()).unwrap();
        assert_eq!(r.program().memory, d.memory);
        assert_eq!(r.program().files, d.files);
        // The table's length byte (just before its four bytes) claims 2^60 bytes.
        let at = bytes
            .windows(5)
            .position(|w| w == [4, 7, 0, 255, 3])
            .expect("the table's bytes");
        let mut bad = bytes[..at].to_vec();
        bad.extend_from_slice(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10]);
        bad.extend_from_slice(&bytes[at + 1..]);
        assert!(TraceReader::from_bytes(bad).is_err());
    }
}
