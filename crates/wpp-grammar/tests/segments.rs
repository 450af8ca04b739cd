//! Segmented compression against its specification. Oracles: the trace itself (every thread's
//! start rule expands to exactly its events, `split_threads`), the unsegmented file (same
//! alphabet, same threads in the same order, byte for byte when the trace fits in one
//! segment), rule utility (`check_rule_utility`), the reader (the joined grammar written again
//! reads back equal) and, for hostile files, an error that names what is wrong and where.

mod common;

use common::expand;

use proptest::prelude::*;
use wpp_grammar::check::check_rule_utility;
use wpp_grammar::file::{balanced_level, segment_table, SegmentWriter, WppError, WppFile};
use wpp_grammar::parallel::Parallelism;
use wpp_grammar::segment::SegmentedCompressor;
use wpp_grammar::{Algorithm, TraceCompressor};
use wpp_trace::synth::{SynthProgram, TraceKind};
use wpp_trace::wire::write_varint;
use wpp_trace::{split_threads, BlockId, Event, ProgramDb, ThreadId};

const LEVEL: i32 = 3;

/// The file `events` compress to with `algorithm`, a segment every `segment` events, chunks
/// of `chunk` events on two workers (`None`: one thread); batches of 7 events, so segment
/// ends fall inside batches.
fn segmented(
    events: &[Event],
    algorithm: Algorithm,
    segment: u64,
    chunk: Option<usize>,
) -> Vec<u8> {
    let w = SegmentWriter::new(Vec::new(), "test.wpp", LEVEL, 1);
    written(events, algorithm, segment, chunk, w)
}

/// The file `events` compress to as [`segmented`] compresses them, written by `w`.
fn written(
    events: &[Event],
    algorithm: Algorithm,
    segment: u64,
    chunk: Option<usize>,
    w: SegmentWriter<Vec<u8>>,
) -> Vec<u8> {
    let mut s = SegmentedCompressor::new(compressor(algorithm, chunk), segment, w);
    for batch in events.chunks(7) {
        s.push_batch(batch).unwrap();
    }
    s.finish().unwrap().write().unwrap().0
}

/// A compressor with chunks of `chunk` events on two workers (`None`: one thread).
fn compressor(algorithm: Algorithm, chunk: Option<usize>) -> TraceCompressor {
    match chunk {
        Some(chunk_events) => {
            let how = Parallelism {
                chunk_events,
                ..Parallelism::threads(2)
            };
            TraceCompressor::with_threads(algorithm, None, ProgramDb::default(), how).unwrap()
        }
        None => TraceCompressor::new(algorithm, None, ProgramDb::default()),
    }
}

fn unsegmented(events: &[Event], algorithm: Algorithm, chunk: Option<usize>) -> WppFile {
    let mut c = compressor(algorithm, chunk);
    c.push_batch(events).unwrap();
    c.finish().unwrap()
}

fn threads(wpp: &WppFile) -> Vec<ThreadId> {
    wpp.grammar.starts().iter().map(|s| s.thread).collect()
}

/// The segmented file of `events` reads as the unsegmented one does.
fn assert_sound(events: &[Event], segment: u64, chunk: Option<usize>) {
    let want = split_threads(events);
    for algorithm in Algorithm::ALL {
        let what = format!("{algorithm}, segments of {segment}, chunks {chunk:?}");
        let bytes = segmented(events, algorithm, segment, chunk);
        let file = WppFile::from_bytes(&bytes).unwrap_or_else(|e| panic!("{what}: {e}"));
        let whole = unsegmented(events, algorithm, chunk);
        assert_eq!(expand(&file), want, "{what}");
        assert_eq!(expand(&file), expand(&whole), "{what}");
        assert_eq!(file.alphabet, whole.alphabet, "{what}");
        assert_eq!(threads(&file), threads(&whole), "{what}: thread order");
        assert_eq!(file.events, events.len() as u64, "{what}");
        assert_eq!(file.algorithm, algorithm, "{what}");
        check_rule_utility(&file.grammar).unwrap_or_else(|v| panic!("{what}: {v}"));
        let again = WppFile::from_bytes(&file.to_bytes().unwrap()).unwrap();
        assert_eq!(again, file, "{what}: written again");
        let table = segment_table(&bytes).unwrap();
        let counted: u64 = table.iter().map(|s| s.events).sum();
        assert!(counted <= events.len() as u64, "{what}");
        assert!(
            table.iter().all(|s| s.events <= segment),
            "{what}: {table:?}"
        );
        if !table.is_empty() {
            // Every segment is in the table but those of thread switches alone.
            let with_blocks = events
                .chunks(segment as usize)
                .filter(|s| s.iter().any(|e| !matches!(e, Event::Thread(_))))
                .map(|s| s.len() as u64);
            assert_eq!(counted, with_blocks.sum::<u64>(), "{what}: {table:?}");
            // Concatenated: every segment keeps its rules, and its start rules become part of
            // one per thread.
            let starts: u64 = table.iter().map(|s| s.threads).sum();
            let rules: u64 = table.iter().map(|s| s.rules).sum();
            let joined = rules - starts + threads(&file).len() as u64;
            assert_eq!(file.grammar.num_rules() as u64, joined, "{what}: {table:?}");
        }
        if events.len() as u64 <= segment {
            assert_eq!(
                bytes,
                whole.to_bytes_on(LEVEL, 1).unwrap(),
                "{what}: one segment"
            );
            assert!(table.is_empty());
        }
    }
}

/// Events from a small alphabet with thread switches among three threads.
fn trace() -> impl Strategy<Value = Vec<Event>> {
    prop::collection::vec((0u32..12, 0u32..4), 0..300).prop_map(|v| {
        v.into_iter()
            .map(|(x, t)| match x {
                0 => Event::Thread(ThreadId(t * 3)),
                x => Event::Block(BlockId(x % 5 + t % 2 + x / 7 * 9)),
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_threaded_traces_read_as_one_run(events in trace(), segment in 1u64..60) {
        assert_sound(&events, segment, None);
    }

    #[test]
    fn segments_of_parallel_chunks(events in trace(), segment in 1u64..60, chunk in 1usize..20) {
        assert_sound(&events, segment, Some(chunk));
    }
}

/// About `events` events of `threads` threads of `wpp synth`'s program 5.
fn synthetic(kind: TraceKind, events: u64, threads: u32) -> Vec<Event> {
    let mut trace = Vec::new();
    let prog = SynthProgram::generate(5);
    prog.run_threads(kind, events, threads, |e| {
        trace.push(e);
        Ok::<_, ()>(())
    })
    .unwrap();
    trace
}

/// Longer synthetic traces: segments of 1 event, of many, of all but one; segment 0 is one
/// segment however long.
#[test]
fn synthetic_traces_in_many_segments() {
    let events = synthetic(TraceKind::Paths, 3_000, 3);
    let n = events.len() as u64;
    for segment in [1, 500, n - 1, n] {
        assert_sound(&events, segment, None);
    }
    let whole = unsegmented(&events, Algorithm::Phrase, None);
    let bytes = segmented(&events, Algorithm::Phrase, 0, None);
    assert_eq!(bytes, whole.to_bytes_on(LEVEL, 1).unwrap());
    let table = segment_table(&segmented(&events, Algorithm::Phrase, 500, None)).unwrap();
    assert_eq!(table.len() as u64, n.div_ceil(500), "{table:?}");
}

/// Without a level, each grammar is written at level 19 while it has at most one symbol per 32
/// events and at level 3 above that: a whole file, or each segment, is the one written at that
/// level, which differs from the other level's.
#[test]
fn the_balanced_level_follows_the_grammars_size() {
    let repetitive = synthetic(TraceKind::Blocks, 300_000, 1);
    let mut x = 7u64;
    let random: Vec<Event> = (0..repetitive.len())
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            Event::Block(BlockId((x >> 58) as u32))
        })
        .collect();
    let write = |events: &[Event], segment: u64, level: Option<i32>| {
        let w = SegmentWriter::with_level(Vec::new(), "test.wpp", level, 1);
        written(events, Algorithm::Sequitur, segment, None, w)
    };
    for (events, level, other) in [(&repetitive, 19, 3), (&random, 3, 19)] {
        let whole = unsegmented(events, Algorithm::Sequitur, None);
        let (symbols, n) = (whole.grammar.num_symbols(), whole.events);
        assert_eq!(
            balanced_level(symbols, n),
            level,
            "{symbols} symbols, {n} events"
        );
        let balanced = write(events, 0, None);
        assert_eq!(balanced, write(events, 0, Some(level)), "level {level}");
        assert_ne!(balanced, write(events, 0, Some(other)), "level {level}");
    }
    // The repetitive trace, then the random one: a segment each.
    let both = [&repetitive[..], &random[..]].concat();
    let segms = |level| -> Vec<Vec<u8>> {
        let bytes = write(&both, repetitive.len() as u64, level);
        let all = sections(&bytes).into_iter();
        all.filter(|(tag, _)| tag == b"SEGM")
            .map(|(_, p)| p)
            .collect()
    };
    let (balanced, slow, fast) = (segms(None), segms(Some(19)), segms(Some(3)));
    assert_eq!(balanced.len(), 2);
    assert_eq!((&balanced[0], &balanced[1]), (&slow[0], &fast[1]));
    assert_ne!(balanced[0], fast[0]);
    assert_ne!(balanced[1], slow[1]);
}

/// A segmented file's sections: (tag, payload), in order.
fn sections(bytes: &[u8]) -> Vec<([u8; 4], Vec<u8>)> {
    let mut r = wpp_trace::wire::Reader::new(&bytes[8..], 8);
    let mut out = Vec::new();
    while !r.is_empty() {
        let tag: [u8; 4] = r.bytes(4, "tag").unwrap().try_into().unwrap();
        let len = r.varint("length").unwrap() as usize;
        out.push((tag, r.bytes(len, "payload").unwrap().to_vec()));
        r.u32_le("crc").unwrap();
    }
    out
}

/// The file with these sections, checksums recomputed.
fn assemble(version: u32, sections: &[([u8; 4], Vec<u8>)]) -> Vec<u8> {
    let mut out = b"WPPG".to_vec();
    out.extend_from_slice(&version.to_le_bytes());
    for (tag, payload) in sections {
        out.extend_from_slice(tag);
        write_varint(&mut out, payload.len() as u64);
        out.extend_from_slice(payload);
        out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    }
    out
}

fn three_segments() -> Vec<u8> {
    let events: Vec<Event> = (0..90).map(|i| Event::Block(BlockId(i % 11))).collect();
    let bytes = segmented(&events, Algorithm::Sequitur, 30, None);
    assert_eq!(segment_table(&bytes).unwrap().len(), 3);
    bytes
}

fn error(bytes: &[u8]) -> String {
    let e = WppFile::from_bytes(bytes).expect_err("a hostile file is refused");
    e.to_string()
}

/// Every prefix of a segmented file is refused (never a panic), and so is its segment table
/// wherever a cut falls inside the segments.
#[test]
fn truncated_segmented_files_are_refused() {
    let bytes = three_segments();
    for cut in 0..bytes.len() {
        let e = WppFile::from_bytes(&bytes[..cut]);
        assert!(e.is_err(), "cut at {cut} read");
    }
    let first_meta = bytes.windows(4).position(|w| w == b"META").unwrap();
    for cut in 9..first_meta {
        assert!(segment_table(&bytes[..cut]).is_err(), "table cut at {cut}");
    }
}

/// Wrong counts and numbers are refused with the offset of what is wrong.
#[test]
fn hostile_segment_headers_are_refused() {
    let bytes = three_segments();
    let s = sections(&bytes);
    let tags: Vec<&[u8]> = s.iter().map(|(t, _)| &t[..]).collect();
    assert_eq!(
        tags,
        [b"SEGM", b"SEGM", b"SEGM", b"META", b"PROG", b"ALPH", b"END "]
    );

    // META promises 5 segments.
    let mut bad = s.clone();
    let meta = &mut bad[3].1;
    *meta.last_mut().unwrap() = 5;
    let e = error(&assemble(4, &bad));
    assert!(e.contains("promises 5 segments but the file has 3"), "{e}");
    assert!(e.contains("byte offset"), "{e}");

    // Two segments swapped: numbers out of place.
    let mut bad = s.clone();
    bad.swap(0, 1);
    let e = error(&assemble(4, &bad));
    assert!(
        e.contains("segment 1 at byte offset 13 is the file's segment 0"),
        "{e}"
    );

    // A segment dropped (and META adjusted to match): the number of the next is wrong.
    let mut bad = s.clone();
    bad.remove(1);
    *bad[2].1.last_mut().unwrap() = 2;
    let e = error(&assemble(4, &bad));
    assert!(e.contains("is the file's segment 1"), "{e}");

    // A rules length far beyond the payload: truncated, not allocated.
    let mut bad = s.clone();
    let mut payload = vec![0, 30];
    write_varint(&mut payload, u64::MAX >> 2);
    payload.extend_from_slice(&s[0].1[3..]);
    bad[0].1 = payload;
    let e = error(&assemble(4, &bad));
    assert!(
        e.contains("segment rules length") || e.contains("segment rules"),
        "{e}"
    );
    assert!(segment_table(&assemble(4, &bad)).is_err());

    // A start rule count far beyond the payload.
    let mut bad = s.clone();
    let seg = &mut bad[2].1;
    let starts_at = seg.len() - 3; // count 1, thread 0, rule r
    seg.truncate(starts_at);
    write_varint(seg, 1 << 40);
    let e = error(&assemble(4, &bad));
    assert!(e.contains("start rule count"), "{e}");

    // No segment at all, or META first: the section expected is named.
    let e = error(&assemble(4, &s[3..]));
    assert!(
        e.contains("expected section `SEGM` at byte offset 8, found `META`"),
        "{e}"
    );
    let mut bad = s.clone();
    bad.insert(1, s[4].clone());
    let e = error(&assemble(4, &bad));
    assert!(e.contains("expected section `META`"), "{e}");

    // META's thread count disagrees with the segments'.
    let mut bad = s.clone();
    let meta = &mut bad[3].1;
    let n = meta.len();
    meta[n - 2] = 2;
    let e = error(&assemble(4, &bad));
    assert!(e.contains("promises 2 threads"), "{e}");

    // The untouched sections reassemble into the file itself.
    assert_eq!(assemble(4, &s), bytes);
    WppFile::from_bytes(&bytes).unwrap();
}

/// A checksum catches a flipped byte in a segment.
#[test]
fn a_flipped_byte_in_a_segment_is_a_checksum_error() {
    let mut bytes = three_segments();
    bytes[20] ^= 0x40;
    let e = WppFile::from_bytes(&bytes).unwrap_err();
    assert!(matches!(e, WppError::Checksum { .. }), "{e}");
}
