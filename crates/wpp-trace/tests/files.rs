//! Trace files as a specification: round trips against the events written, truncation at every
//! byte, bit flips at every bit, hand-crafted hostile files, and text parse errors.

use proptest::prelude::*;
use std::io::Cursor;
use wpp_trace::file::binary::{
    encode_event, CHUNK_HEADER_LEN, CODEC_PLAIN, CODEC_ZSTD, MAX_CHUNK_BYTES, PREAMBLE_LEN,
    V3_CHUNK_HEADER_LEN, VERSION,
};
use wpp_trace::file::{
    self, to_binary, to_text, Format, IdLimits, TraceError, TraceReader, TraceWriter,
};
use wpp_trace::{BlockId, Event, FunctionId, PathId, ProgramDb, ThreadId};

fn arb_event() -> impl Strategy<Value = Event> {
    // Ids of one, two and three varint bytes (the reader decodes those inline), and any.
    let id32 = prop_oneof![0u32..16, 1u32 << 9..1 << 18, any::<u32>(), Just(u32::MAX)];
    let id64 = prop_oneof![
        0u64..16,
        1u64 << 9..1 << 18,
        any::<u64>(),
        (1u64 << 61) - 2..(1u64 << 61) + 2,
        Just(u64::MAX)
    ];
    prop_oneof![
        id32.clone().prop_map(|f| Event::Enter(FunctionId(f))),
        Just(Event::Leave),
        id32.clone().prop_map(|b| Event::Block(BlockId(b))),
        id64.prop_map(|p| Event::Path(PathId(p))),
        id32.prop_map(|t| Event::Thread(ThreadId(t))),
    ]
}

fn db(names: &[&str]) -> ProgramDb {
    let mut db = ProgramDb::default();
    for n in names {
        db.functions.push(wpp_trace::Function {
            name: (*n).to_owned(),
            file: Some("a.c".into()),
            line: Some(3),
            block_lines: vec![4, 5],
            block_files: Vec::new(),
            block_tail_lines: vec![vec![7], vec![]],
            block_inner_lines: vec![vec![6, 7], vec![]],
            cfg: Some(Box::new(wpp_trace::FunctionCfg {
                successors: vec![vec![1, 0], vec![]],
                entry: 0,
                exits: vec![1],
                cut_nodes: vec![0],
                cut_edges: vec![1],
            })),
            implied_next: Vec::new(),
            entry_implied: false,
        });
    }
    db
}

/// Writes `events` with small chunks and returns the bytes and, per chunk, the file offset
/// where it ends and the events written up to it (the oracle for truncation).
fn small_chunks(events: &[Event], chunk_bytes: usize) -> (Vec<u8>, Vec<(u64, usize)>) {
    chunks_at_level(events, chunk_bytes, 0)
}

/// Like [`small_chunks`], compressing with zstd at `level` (0: plain).
fn chunks_at_level(
    events: &[Event],
    chunk_bytes: usize,
    level: i32,
) -> (Vec<u8>, Vec<(u64, usize)>) {
    let mut w = TraceWriter::with_chunk_bytes(Vec::new(), &db(&["main", "f"]), chunk_bytes)
        .unwrap()
        .with_zstd_level(level)
        .unwrap();
    let mut ends = vec![(w.bytes_written(), 0)];
    for (i, &e) in events.iter().enumerate() {
        let before = w.bytes_written();
        w.push(e).unwrap();
        if w.bytes_written() != before {
            ends.push((w.bytes_written(), i + 1));
        }
    }
    w.flush_chunk().unwrap();
    ends.push((w.bytes_written(), events.len()));
    (w.finish().unwrap(), ends)
}

/// Reads every event until the first error.
fn read_until_error(reader: TraceReader) -> (Vec<Event>, Option<TraceError>) {
    let mut got = Vec::new();
    for e in reader {
        match e {
            Ok(e) => got.push(e),
            Err(e) => return (got, Some(e)),
        }
    }
    (got, None)
}

/// The same through [`TraceReader::read_ahead`], batch by batch.
fn read_ahead_until_error(reader: TraceReader) -> (Vec<Event>, Option<TraceError>) {
    let mut ahead = reader.read_ahead();
    let mut got = Vec::new();
    loop {
        match ahead.next_batch() {
            Ok(Some(run)) => got.extend_from_slice(run),
            Ok(None) => return (got, None),
            Err(e) => return (got, Some(e)),
        }
    }
}

/// `events` with every id brought inside what `db` declares (readers refuse the rest): ids
/// are taken modulo the limits, and `Enter` is dropped when `db` declares no function.
fn within(db: &ProgramDb, events: &[Event]) -> Vec<Event> {
    let l = IdLimits::of(db);
    let fit = |id: u32, limit: u64| (u64::from(id) % limit) as u32;
    events
        .iter()
        .filter_map(|&e| match e {
            Event::Enter(_) if l.functions == 0 => None,
            Event::Enter(f) => Some(Event::Enter(FunctionId(fit(f.0, l.functions)))),
            Event::Block(b) => Some(Event::Block(BlockId(fit(b.0, l.blocks)))),
            Event::Thread(t) => Some(Event::Thread(ThreadId(fit(t.0, l.threads)))),
            e => Some(e),
        })
        .collect()
}

fn sample_events(n: u32) -> Vec<Event> {
    (0..n)
        .map(|i| match i % 5 {
            0 => Event::Enter(FunctionId(i % 2)),
            1 => Event::Block(BlockId(i % 2)),
            2 => Event::Path(PathId(u64::from(i) << 58)),
            3 => Event::Thread(ThreadId(i % 3)),
            _ => Event::Leave,
        })
        .collect()
}

proptest! {
    /// Random event streams, repeated so that zstd finds something to compress, at random
    /// chunk sizes and levels (0 = plain), with externally encoded chunks in between: both
    /// readers give back exactly the events written.
    #[test]
    fn binary_round_trip(
        events in prop::collection::vec(arb_event(), 0..300),
        repeats in 1usize..8,
        chunk in prop_oneof![1usize..64, 64usize..4096],
        level in prop_oneof![Just(0), Just(1), Just(3), Just(-5)],
        external_every in prop::option::of(1usize..200),
    ) {
        let d = db(&["main", "helper", ""]);
        let events = within(&d, &events);
        let events: Vec<Event> = events.iter().cycle().take(events.len() * repeats).copied().collect();
        let mut w = TraceWriter::with_chunk_bytes(Vec::new(), &d, chunk)
            .unwrap()
            .with_zstd_level(level)
            .unwrap();
        for (i, &e) in events.iter().enumerate() {
            if external_every.is_some_and(|k| i % k == 0) {
                let mut payload = Vec::new();
                encode_event(&mut payload, e);
                w.write_chunk(&payload, 1).unwrap();
            } else {
                w.push(e).unwrap();
            }
        }
        prop_assert_eq!(w.events(), events.len() as u64);
        let bytes = w.finish().unwrap();
        let r = TraceReader::from_bytes(bytes.clone()).unwrap();
        prop_assert_eq!(r.format(), Format::Binary);
        prop_assert_eq!(r.program(), &d);
        prop_assert_eq!(r.read_all().unwrap(), events.clone());
        // The streaming source decodes the same events.
        let r = TraceReader::from_reader(Cursor::new(bytes)).unwrap();
        prop_assert_eq!(r.program(), &d);
        prop_assert_eq!(r.read_all().unwrap(), events);
    }

    #[test]
    fn text_round_trip(
        events in prop::collection::vec(arb_event(), 0..300),
        names in prop::collection::vec("[a-z_#]{0,4}|a b|std::pair<int, int>::swap| a|a |x\ty|a\nb", 0..6),
    ) {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let d = db(&names);
        let events = within(&d, &events);
        let text = to_text(&d, &events).unwrap();
        let r = TraceReader::from_bytes(text).unwrap();
        prop_assert_eq!(r.format(), Format::Text);
        // Names survive where the text form can carry them (inner spaces included, not a
        // leading `#`, edge whitespace or a line break); ids always do.
        let read: Vec<&str> = r.program().functions.iter().map(|f| f.name.as_str()).collect();
        let edge = |c: Option<char>| c.is_some_and(char::is_whitespace);
        let representable = |n: &&str| {
            !n.is_empty()
                && !n.starts_with('#')
                && !edge(n.chars().next())
                && !edge(n.chars().last())
                && !n.contains('\n')
        };
        let expected: Vec<&str> =
            names.iter().map(|n| if representable(n) { *n } else { "" }).collect();
        prop_assert_eq!(read, expected);
        prop_assert_eq!(r.read_all().unwrap(), events);
    }
}

proptest! {
    /// Arbitrary damage — overwritten bytes, splices, garbage — is an error or a readable
    /// trace, never a panic, and both readers agree on it.
    #[test]
    fn damaged_files_never_panic(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
        cut in any::<prop::sample::Index>(),
        garbage in prop::collection::vec(any::<u8>(), 0..64),
        level in prop_oneof![Just(0), Just(1)],
    ) {
        let (mut bytes, _) = chunks_at_level(&repeated_events(16, 5), 40, level);
        for (at, b) in edits {
            let i = at.index(bytes.len());
            bytes[i] = b;
        }
        bytes.truncate(cut.index(bytes.len() + 1));
        let read = |b: Vec<u8>| match TraceReader::from_bytes(b.clone()) {
            Ok(r) => read_until_error(r),
            Err(e) => (Vec::new(), Some(e)),
        };
        let whole = read(bytes.clone());
        let stream = match TraceReader::from_reader(Cursor::new(bytes.clone())) {
            Ok(r) => read_until_error(r),
            Err(e) => (Vec::new(), Some(e)),
        };
        let ahead = match TraceReader::from_bytes(bytes.clone()) {
            Ok(r) => read_ahead_until_error(r),
            Err(e) => (Vec::new(), Some(e)),
        };
        prop_assert_eq!(&whole.0, &stream.0);
        prop_assert_eq!(&whole.0, &ahead.0);
        let shown = |e: &Option<TraceError>| e.as_ref().map(|e| e.to_string());
        prop_assert_eq!(shown(&whole.1), shown(&stream.1));
        prop_assert_eq!(shown(&whole.1), shown(&ahead.1));
        let _ = read(garbage);
    }
}

/// `sample_events(n)` repeated `times` times: compressible.
fn repeated_events(n: u32, times: usize) -> Vec<Event> {
    let one = sample_events(n);
    one.iter()
        .cycle()
        .take(one.len() * times)
        .copied()
        .collect()
}

/// Codec bytes of the chunks of a version 4 file (the end marker's included).
fn codecs(bytes: &[u8]) -> Vec<u8> {
    let word = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap()) as usize;
    let mut at = PREAMBLE_LEN + word(8);
    let mut codecs = Vec::new();
    while at < bytes.len() {
        codecs.push(bytes[at + 12]);
        at += CHUNK_HEADER_LEN + word(at);
    }
    codecs
}

#[test]
fn truncation_at_every_byte_yields_exactly_the_whole_chunks_before_it() {
    let events = sample_events(60);
    let (bytes, ends) = small_chunks(&events, 9);
    assert!(ends.len() > 8, "the file should have many chunks");
    truncation_at_every_byte(&events, &bytes, &ends);
}

/// The same with compressed chunks: a cut inside a zstd frame loses exactly that chunk.
#[test]
fn truncation_inside_compressed_chunks_keeps_the_whole_chunks_before_it() {
    let events = repeated_events(10, 40);
    let (bytes, ends) = chunks_at_level(&events, 60, 1);
    let codecs = codecs(&bytes);
    assert!(ends.len() > 5, "the file should have many chunks");
    assert!(
        codecs.iter().filter(|&&c| c == CODEC_ZSTD).count() > 4,
        "{codecs:?}"
    );
    truncation_at_every_byte(&events, &bytes, &ends);
}

fn truncation_at_every_byte(events: &[Event], bytes: &[u8], ends: &[(u64, usize)]) {
    let header_end = ends[0].0 as usize;
    // Below four bytes the magic is incomplete, so the prefix cannot be told from text.
    for cut in 4..bytes.len() {
        let prefix = bytes[..cut].to_vec();
        let reader = match TraceReader::from_bytes(prefix.clone()) {
            Ok(r) => r,
            Err(e) => {
                assert!(cut < header_end && e.is_truncated(), "cut {cut}: {e}");
                assert_eq!(e.offset(), Some(0), "cut {cut}: {e}");
                continue;
            }
        };
        // The oracle: the last chunk that ends at or before the cut.
        let &(valid_end, valid_events) = ends
            .iter()
            .rev()
            .find(|(end, _)| *end as usize <= cut)
            .unwrap();
        let (got, err) = read_until_error(reader);
        assert_eq!(got, events[..valid_events], "cut {cut}");
        match err {
            Some(TraceError::Truncated { offset, events: n }) => {
                assert_eq!((offset, n), (valid_end, valid_events as u64), "cut {cut}");
            }
            other => panic!("cut {cut}: expected a truncation, got {other:?}"),
        }
        // A stream reader agrees, and `allow_truncated` turns the error into an ordinary end.
        let mut stream = TraceReader::from_reader(Cursor::new(prefix.clone()))
            .unwrap()
            .allow_truncated(true);
        let mut stream_events = Vec::new();
        stream
            .for_each_batch(|run| stream_events.extend_from_slice(run))
            .unwrap();
        assert_eq!(stream_events, events[..valid_events], "cut {cut}");
        assert_eq!(stream.truncation().map(|t| t.offset), Some(valid_end));
        // So does one decoding on a thread of its own.
        let mut ahead = TraceReader::from_reader(Cursor::new(prefix))
            .unwrap()
            .allow_truncated(true)
            .read_ahead();
        let mut ahead_events = Vec::new();
        while let Some(run) = ahead.next_batch().unwrap() {
            ahead_events.extend_from_slice(run);
        }
        assert_eq!(ahead_events, events[..valid_events], "cut {cut}");
        assert_eq!(ahead.truncation(), stream.truncation(), "cut {cut}");
    }
    let (got, err) = read_until_error(TraceReader::from_bytes(bytes.to_vec()).unwrap());
    assert_eq!((got, err.map(|e| e.to_string())), (events.to_vec(), None));
}

/// Reading ahead on another thread hands out the events of a trace of many batches, plain and
/// compressed, in order, and the error after the last whole chunk of a damaged one.
#[test]
fn reading_ahead_gives_the_same_events_and_errors() {
    let events = repeated_events(50, 4000);
    for level in [0, 1] {
        let (bytes, _) = chunks_at_level(&events, 4096, level);
        let (got, err) = read_ahead_until_error(TraceReader::from_bytes(bytes.clone()).unwrap());
        assert_eq!(
            (got.len(), err.map(|e| e.to_string())),
            (events.len(), None)
        );
        assert_eq!(got, events);
        let mut bad = bytes.clone();
        let middle = bad.len() / 2;
        bad[middle] ^= 0x40;
        let plain = read_until_error(TraceReader::from_bytes(bad.clone()).unwrap());
        let ahead = read_ahead_until_error(TraceReader::from_bytes(bad).unwrap());
        assert!(plain.1.is_some());
        assert_eq!(ahead.0, plain.0);
        assert_eq!(
            ahead.1.map(|e| e.to_string()),
            plain.1.map(|e| e.to_string())
        );
    }
}

#[test]
fn every_bit_flip_is_an_error_at_or_before_the_flip_never_a_truncation() {
    let events = sample_events(30);
    let (bytes, _) = small_chunks(&events, 12);
    every_bit_flip_is_caught(&events, &bytes);
    // Compressed chunks: their stored bytes are checksummed before they are decompressed.
    let events = repeated_events(10, 12);
    let (bytes, _) = chunks_at_level(&events, 100, 1);
    assert!(codecs(&bytes).contains(&CODEC_ZSTD));
    every_bit_flip_is_caught(&events, &bytes);
}

fn every_bit_flip_is_caught(events: &[Event], bytes: &[u8]) {
    for byte in 0..bytes.len() {
        for bit in 0..8 {
            let mut bad = bytes.to_vec();
            bad[byte] ^= 1 << bit;
            let (got, err) = match TraceReader::from_bytes(bad) {
                Ok(r) => read_until_error(r),
                Err(e) => (Vec::new(), Some(e)),
            };
            let err = err.unwrap_or_else(|| panic!("flip {byte}.{bit} went unnoticed"));
            assert!(!err.is_truncated(), "flip {byte}.{bit}: {err}");
            assert!(events.starts_with(&got), "flip {byte}.{bit} changed events");
            if byte >= 4 {
                // Past the magic the file is still recognized as binary, so the error names
                // the damaged item, which starts at or before the flipped byte.
                let at = err
                    .offset()
                    .unwrap_or_else(|| panic!("flip {byte}.{bit}: {err}"));
                assert!(at <= byte as u64, "flip {byte}.{bit}: {err}");
            }
        }
    }
}

/// A preamble with a correct checksum over the given fields.
fn preamble(version: u16, flags: u16, db_len: u32, db_crc: u32) -> Vec<u8> {
    let mut p = b"WPPT".to_vec();
    p.extend_from_slice(&version.to_le_bytes());
    p.extend_from_slice(&flags.to_le_bytes());
    p.extend_from_slice(&db_len.to_le_bytes());
    p.extend_from_slice(&db_crc.to_le_bytes());
    let crc = crc32fast::hash(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    p
}

/// A file with an empty program database followed by `rest`.
/// A version 3 file (chunk headers without sequence numbers, see [`header_v3`]) with an empty
/// database, followed by `rest`.
fn with_empty_db(rest: &[u8]) -> Vec<u8> {
    let body = ProgramDb::default().to_bytes().unwrap();
    let mut f = preamble(3, 0, body.len() as u32, crc32fast::hash(&body));
    f.extend_from_slice(&body);
    f.extend_from_slice(rest);
    f
}

/// A version 3 chunk header with a correct header checksum.
fn header_v3(stored: u32, count: u32, raw: u32, codec: u8, payload_crc: u32) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&stored.to_le_bytes());
    h.extend_from_slice(&count.to_le_bytes());
    h.extend_from_slice(&raw.to_le_bytes());
    h.extend_from_slice(&[codec, 0, 0, 0]);
    h.extend_from_slice(&payload_crc.to_le_bytes());
    let crc = crc32fast::hash(&h);
    h.extend_from_slice(&crc.to_le_bytes());
    h
}

/// A plain chunk header.
fn chunk_header(len: u32, count: u32, payload_crc: u32) -> Vec<u8> {
    header_v3(len, count, len, CODEC_PLAIN, payload_crc)
}

fn chunk(payload: &[u8], count: u32) -> Vec<u8> {
    let mut c = chunk_header(payload.len() as u32, count, crc32fast::hash(payload));
    c.extend_from_slice(payload);
    c
}

/// A compressed chunk whose header says `raw` decompressed bytes and `count` events.
fn zstd_chunk(frame: &[u8], count: u32, raw: u32) -> Vec<u8> {
    let mut c = header_v3(
        frame.len() as u32,
        count,
        raw,
        CODEC_ZSTD,
        crc32fast::hash(frame),
    );
    c.extend_from_slice(frame);
    c
}

/// The error reading `bytes` gives, from the in-memory and the streaming reader alike.
fn error_of(bytes: Vec<u8>) -> TraceError {
    let whole = TraceReader::from_bytes(bytes.clone()).and_then(TraceReader::read_all);
    let stream = TraceReader::from_reader(Cursor::new(bytes)).and_then(TraceReader::read_all);
    let (a, b) = (whole.unwrap_err(), stream.unwrap_err());
    assert_eq!(a.to_string(), b.to_string());
    a
}

#[test]
fn hostile_headers_are_rejected_without_allocating() {
    let e = error_of(preamble(VERSION, 0, u32::MAX, 0));
    assert!(matches!(e, TraceError::Malformed { offset: 8, .. }), "{e}");
    let e = error_of(preamble(VERSION, 0, 1 << 20, 0));
    assert!(e.is_truncated(), "a database longer than the file: {e}");
    let e = error_of(preamble(VERSION + 1, 0, 0, 0));
    assert!(
        matches!(e, TraceError::UnsupportedVersion { offset: 4, .. }),
        "{e}"
    );
    let e = error_of(preamble(VERSION, 1, 0, 0));
    assert!(matches!(e, TraceError::Malformed { offset: 6, .. }), "{e}");
    // A database claiming 2^40 functions, with a matching checksum.
    let body = [0x80, 0x80, 0x80, 0x80, 0x80, 0x20];
    let mut f = preamble(VERSION, 0, body.len() as u32, crc32fast::hash(&body));
    f.extend_from_slice(&body);
    let e = error_of(f);
    assert!(matches!(e, TraceError::Header { offset: 20, .. }), "{e}");
    let e = error_of(b"WPPT\x01\x00".to_vec());
    assert!(e.is_truncated(), "{e}");
    let mut bad_magic_crc = preamble(VERSION, 0, 0, 0);
    bad_magic_crc[19] ^= 1;
    let e = error_of(bad_magic_crc);
    assert!(matches!(e, TraceError::Checksum { offset: 0, .. }), "{e}");
}

/// A file whose database is one function `f` followed by the CFG table bytes `table`.
fn with_cfg_table(table: &[u8]) -> Vec<u8> {
    let mut body = postcard::to_allocvec(&db(&["f"])).unwrap();
    body.extend_from_slice(table);
    let mut f = preamble(VERSION, 0, body.len() as u32, crc32fast::hash(&body));
    f.extend_from_slice(&body);
    f.extend_from_slice(&chunk_header(0, 0, 0));
    f
}

/// Hostile CFG tables: huge counts are rejected before anything is allocated, and every id is
/// checked; each error names what and where.
#[test]
fn hostile_cfg_tables_are_rejected_with_their_offset() {
    let names = postcard::to_allocvec(&db(&["f"])).unwrap().len() as u64;
    let table_at = 20 + names;
    let huge = [0xff, 0xff, 0xff, 0xff, 0x0f];
    let cases: Vec<(Vec<u8>, u64, &str)> = vec![
        (vec![2], 0, "2 entries but the database 1"),
        (vec![1, 7], 1, "presence byte 7"),
        ([&[1, 1][..], &huge].concat(), 2, "block count"),
        (vec![1, 1, 0], 2, "block count 0"),
        (vec![1, 1, 2, 2], 3, "entry block"),
        ([&[1, 1, 1, 0][..], &huge].concat(), 4, "successor count"),
        (
            vec![1, 1, 2, 0, 1, 4, 0, 0, 0, 0],
            5,
            "successor block 2 is out of range",
        ),
        (vec![1, 1, 2, 0, 1, 1, 0, 0, 0, 0], 5, "successor block -1"),
        (vec![1, 1, 2, 0, 1, 2, 0, 1, 4, 0, 0], 8, "exit block 2"),
        (
            vec![1, 1, 2, 0, 1, 2, 0, 0, 0, 1, 2],
            10,
            "cut edge 1 is out of range",
        ),
        (vec![1, 1, 2, 0, 1, 2, 0, 0, 0], 9, "unexpected end"),
        (vec![1, 1, 2, 0, 1, 2, 0, 0, 0, 0, 9], 10, "bytes after"),
    ];
    for (table, at, what) in cases {
        let e = error_of(with_cfg_table(&table));
        let msg = e.to_string();
        assert!(
            matches!(e, TraceError::Header { offset, .. } if offset == table_at + at),
            "{table:?}: {msg}"
        );
        assert!(msg.contains(what), "{table:?}: {msg}");
    }
    // The well-formed table these cases break reads back.
    let good = with_cfg_table(&[1, 1, 2, 0, 1, 2, 0, 0, 0, 1, 0]);
    let r = TraceReader::from_bytes(good).unwrap();
    let cfg = r.program().functions[0].cfg.clone().unwrap();
    assert_eq!(cfg.successors, [vec![1], vec![]]);
    assert_eq!(cfg.cut_edges, [0]);
}

#[test]
fn hostile_chunks_are_rejected_with_their_offset() {
    let start = with_empty_db(&[]).len() as u64;
    let end = chunk_header(0, 0, 0);
    // A length beyond the limit, and one beyond the file.
    let e = error_of(with_empty_db(&chunk_header(
        MAX_CHUNK_BYTES as u32 + 1,
        1,
        0,
    )));
    assert_eq!(e.offset(), Some(start), "{e}");
    assert!(matches!(e, TraceError::Malformed { .. }), "{e}");
    let e = error_of(with_empty_db(&chunk_header(MAX_CHUNK_BYTES as u32, 1, 0)));
    assert!(e.is_truncated() && e.offset() == Some(start), "{e}");
    // More events than payload bytes, and zero events.
    for (len, count) in [(2, 3), (2, 0)] {
        let e = error_of(with_empty_db(&chunk_header(len, count, 0)));
        assert!(
            matches!(e, TraceError::Malformed { .. }) && e.offset() == Some(start),
            "{e}"
        );
    }
    // A count that disagrees with the payload, both ways.
    let two = [0x02, 0x0a]; // Block(0), Block(1)
    let e = error_of(with_empty_db(&[chunk(&two, 1), end.clone()].concat()));
    assert_eq!(
        e.offset(),
        Some(start + V3_CHUNK_HEADER_LEN as u64 + 1),
        "{e}"
    );
    let mut three = two.to_vec();
    three.push(0x80); // an unfinished varint
    let e = error_of(with_empty_db(&[chunk(&three, 3), end.clone()].concat()));
    assert!(
        matches!(e, TraceError::Wire(_))
            && e.offset() == Some(start + V3_CHUNK_HEADER_LEN as u64 + 2),
        "{e}"
    );
    // Anything after the end marker.
    let e = error_of(with_empty_db(
        &[chunk(&two, 2), end.clone(), vec![0]].concat(),
    ));
    assert!(matches!(e, TraceError::Malformed { .. }), "{e}");
    let ok = with_empty_db(&[chunk(&two, 2), end].concat());
    let events = TraceReader::from_bytes(ok).unwrap().read_all().unwrap();
    assert_eq!(events, [Event::Block(BlockId(0)), Event::Block(BlockId(1))]);
}

/// Frames for the hostile compressed chunks: `Block(0)`, `Block(1)` repeated, with and
/// without the content size in the frame header.
fn frame(payload: &[u8], with_size: bool) -> Vec<u8> {
    let mut c = zstd::bulk::Compressor::new(1).unwrap();
    c.set_parameter(zstd::stream::raw::CParameter::ContentSizeFlag(with_size))
        .unwrap();
    c.compress(payload).unwrap()
}

#[test]
fn hostile_compressed_chunks_are_rejected_with_the_chunks_offset() {
    let start = with_empty_db(&[]).len() as u64;
    let end = chunk_header(0, 0, 0);
    let two: Vec<u8> = [0x02, 0x0a].repeat(500); // 1000 events, 1000 bytes
    let file = |c: Vec<u8>| with_empty_db(&[c, end.clone()].concat());
    let check = |c: Vec<u8>, what: &str| {
        let e = error_of(file(c));
        assert!(
            matches!(e, TraceError::Malformed { offset, .. } if offset == start),
            "{what}: {e}"
        );
        assert!(e.to_string().contains(what), "{what}: {e}");
    };
    for with_size in [true, false] {
        let f = frame(&two, with_size);
        assert!(f.len() < 100);
        // The well-formed chunk reads.
        let events = TraceReader::from_bytes(file(zstd_chunk(&f, 1000, 1000)))
            .unwrap()
            .read_all()
            .unwrap();
        assert_eq!(events.len(), 1000);
        // The decompressed length lies high and low.
        // Without a size in the frame, decompression finds out.
        let (high, low) = if with_size {
            (
                "the zstd frame holds 1000 bytes",
                "the zstd frame holds 1000 bytes",
            )
        } else {
            (
                "decompresses to 1000 bytes, the chunk header says 1001",
                "decompressing into the 999 bytes",
            )
        };
        check(zstd_chunk(&f, 1000, 1001), high);
        check(zstd_chunk(&f, 999, 999), low);
        // Extra bytes after the frame; two frames.
        check(
            zstd_chunk(&[f.clone(), vec![0]].concat(), 1000, 1000),
            "bytes after its zstd frame",
        );
        check(
            zstd_chunk(&[f.clone(), f.clone()].concat(), 1000, 2000),
            "bytes after its zstd frame",
        );
        // Events that do not fill the decompressed payload, and a bad event inside it.
        check(
            zstd_chunk(&f, 999, 1000),
            "bytes after the last event its chunk header counts, at byte 999 of the chunk's decompressed payload",
        );
        let mut bad = two.clone();
        bad[700] = 0x06; // tag 6
        check(
            zstd_chunk(&frame(&bad, with_size), 1000, 1000),
            "invalid event encoding (tag 6, id 0), at byte 700 of the chunk's decompressed payload",
        );
    }
    // A decompression bomb: a frame without a declared size that expands far beyond the
    // decompressed length its header claims.
    let bomb = frame(&vec![0u8; 8 << 20], false);
    assert!(bomb.len() < 1000);
    check(
        zstd_chunk(&bomb, 1000, 1000),
        "decompressing into the 1000 bytes",
    );
    check(
        zstd_chunk(&frame(&vec![0u8; 8 << 20], true), 1000, 1000),
        "holds 8388608 bytes",
    );
    // Not a frame at all.
    check(zstd_chunk(&[1, 2, 3, 4, 5, 6], 2, 6), "no zstd frame");
    // A decompressed length beyond the limit.
    check(
        header_v3(10, 1, MAX_CHUNK_BYTES as u32 + 1, CODEC_ZSTD, 0),
        "decompressed length",
    );
    // Unknown codec, a program chunk claiming events, non-zero reserved bytes, a plain chunk
    // whose two lengths differ, an empty compressed payload.
    check(header_v3(2, 1, 2, 3, 0), "unknown chunk codec 3");
    check(
        header_v3(2, 1, 2, 2, 0),
        "program chunk with stored length 2, decompressed length 2 and 1 events",
    );
    let mut reserved = header_v3(2, 1, 2, CODEC_PLAIN, 0);
    reserved[14] = 1;
    let crc = crc32fast::hash(&reserved[..20]);
    reserved[20..].copy_from_slice(&crc.to_le_bytes());
    check(reserved, "reserved bytes");
    check(
        header_v3(2, 1, 3, CODEC_PLAIN, 0),
        "plain chunk with stored length 2",
    );
    check(
        header_v3(0, 1, 3, CODEC_ZSTD, 0),
        "empty compressed payload",
    );
    // A damaged frame is a checksum error (the payload CRC covers the stored bytes).
    let mut damaged = zstd_chunk(&frame(&two, true), 1000, 1000);
    let last = damaged.len() - 1;
    damaged[last] ^= 1;
    let e = error_of(file(damaged));
    assert!(
        matches!(e, TraceError::Checksum { offset, .. } if offset == start),
        "{e}"
    );
}

#[test]
fn externally_encoded_chunks_interleave_with_pushed_events() {
    let mut payload = Vec::new();
    let outside = [Event::Thread(ThreadId(1)), Event::Path(PathId(u64::MAX))];
    outside.iter().for_each(|&e| encode_event(&mut payload, e));
    let mut w = TraceWriter::new(Vec::new(), &ProgramDb::default()).unwrap();
    w.push(Event::Leave).unwrap();
    w.write_chunk(&payload, 2).unwrap();
    w.push(Event::Block(BlockId(9))).unwrap();
    assert!(w.write_chunk(&[], 0).is_err());
    assert!(w.write_chunk(&payload, 0).is_err());
    assert!(w.write_chunk(&payload, payload.len() as u32 + 1).is_err());
    let bytes = w.finish().unwrap();
    let got = TraceReader::from_bytes(bytes).unwrap().read_all().unwrap();
    assert_eq!(
        got,
        [
            Event::Leave,
            outside[0],
            outside[1],
            Event::Block(BlockId(9))
        ]
    );
}

#[test]
fn text_parse_errors_name_the_line_and_its_content() {
    let cases: [(&[u8], u64, &str); 5] = [
        (b"F main\nB 1\n\nX 3\n", 4, "X 3"),
        (b"# c\nB 1\nF #x\n", 3, "F #x"),
        (b"B 1\r\nE 2\r\n", 2, "E 2"),
        (b"P 18446744073709551616\n", 1, "P 18446744073709551616"),
        (b"B 1\nB \xff\n", 2, "B \u{fffd}"),
    ];
    for (text, line, content) in cases {
        let e = TraceReader::from_bytes(text.to_vec())
            .and_then(TraceReader::read_all)
            .unwrap_err();
        match &e {
            TraceError::Parse {
                line: l,
                content: c,
                ..
            } => {
                assert_eq!((*l, c.as_str()), (line, content), "{e}");
            }
            other => panic!("expected a parse error, got {other}"),
        }
        assert!(e.to_string().starts_with(&format!("line {line}: ")), "{e}");
    }
}

#[test]
fn text_names_are_interned_in_order_of_appearance() {
    let text = b"# example\nF main\nB 0\n  F helper  \nP 7\nE\nF main\nD\nF #2\nT 2\nE\n";
    let r = TraceReader::from_bytes(text.to_vec()).unwrap();
    let names: Vec<&str> = r
        .program()
        .functions
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(names, ["main", "helper", ""]);
    let (m, h) = (FunctionId(0), FunctionId(1));
    let expected = [
        Event::Enter(m),
        Event::Block(BlockId(0)),
        Event::Enter(h),
        Event::Path(PathId(7)),
        Event::Leave,
        Event::Enter(m),
        Event::Enter(FunctionId(2)),
        Event::Thread(ThreadId(2)),
        Event::Leave,
    ];
    assert_eq!(r.read_all().unwrap(), expected);
    // Written back, names come out as names and unnamed ids as `#id`.
    let d = db(&["main", "helper", ""]);
    let text = String::from_utf8(to_text(&d, &expected).unwrap()).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        lines,
        [
            "D main", "D helper", "D", "F main", "B 0", "F helper", "P 7", "E", "F main", "F #2",
            "T 2", "E"
        ]
    );
}

#[test]
fn open_detects_the_format_and_create_writes_either() {
    let dir = tempfile::tempdir().unwrap();
    let d = db(&["main", "f"]);
    let events = sample_events(5000);
    for format in [Format::Binary, Format::Text] {
        let path = dir.path().join(format!("{format:?}"));
        let mut w = file::create(&path, format, &d).unwrap();
        events.iter().for_each(|&e| w.push(e).unwrap());
        w.finish().unwrap();
        let r = file::open(&path).unwrap();
        assert_eq!(r.format(), format);
        let (db_read, got) = file::read_events(&path).unwrap();
        assert_eq!(got, events);
        assert_eq!(db_read.functions[0].name, "main");
    }
    let empty = dir.path().join("empty");
    std::fs::write(&empty, b"").unwrap();
    assert_eq!(file::read_events(&empty).unwrap().1, []);
    let missing = file::open(dir.path().join("missing"));
    assert!(matches!(missing, Err(TraceError::Io(_))));
}

#[test]
fn a_binary_file_pins_its_lengths() {
    assert_eq!((PREAMBLE_LEN, CHUNK_HEADER_LEN), (20, 28));
    let bytes = to_binary(&ProgramDb::default(), &[]).unwrap();
    // Preamble, a database of one byte (no functions) and one (no CFGs), the end marker.
    assert_eq!(bytes.len(), PREAMBLE_LEN + 2 + CHUNK_HEADER_LEN);
}

#[test]
fn readers_and_writers_can_move_between_threads() {
    fn send<T: Send>() {}
    send::<TraceReader>();
    send::<TraceWriter<std::fs::File>>();
    send::<file::FileWriter>();
}

#[test]
fn a_recorder_that_dies_keeps_every_flushed_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crashed.wppt");
    let events = sample_events(1000);
    let file = std::fs::File::create(&path).unwrap();
    let mut w = TraceWriter::with_chunk_bytes(file, &db(&["main", "f"]), 64).unwrap();
    events.iter().for_each(|&e| w.push(e).unwrap());
    w.flush_chunk().unwrap();
    let written = w.bytes_written();
    for &e in &events[..5] {
        w.push(e).unwrap(); // buffered, never flushed: lost, as in a crash
    }
    drop(w);
    let mut r = file::open(&path).unwrap().allow_truncated(true);
    let mut got = Vec::new();
    r.for_each_batch(|run| got.extend_from_slice(run)).unwrap();
    assert_eq!(got, events);
    let t = r
        .truncation()
        .expect("no end marker, so the file reads as truncated");
    assert_eq!((t.offset, t.events), (written, 1000));
    // Without the option the same point is a distinct, recognizable error.
    let err = file::read_events(&path).unwrap_err();
    assert!(err.is_truncated(), "{err}");
}

/// A library loaded after recording started (`wpp-rt`): a program chunk grows the database
/// mid-file. A file's reader reads every event against the last database, the one before the
/// first event included; a cut after the chunk keeps it; a damaged chunk is an error at its
/// offset; a stream cannot look ahead and says so rather than misreading.
#[test]
fn a_program_chunk_grows_the_database_for_the_whole_file() {
    let (before, grown) = (db(&["main", "f"]), db(&["main", "f", "lib_g"]));
    let first = [Event::Enter(FunctionId(0)), Event::Block(BlockId(1))];
    let second = [Event::Enter(FunctionId(2)), Event::Leave, Event::Leave];
    let mut w = TraceWriter::new(Vec::new(), &before).unwrap();
    first.iter().for_each(|&e| w.push(e).unwrap());
    w.write_program(&grown).unwrap();
    let program_at = w.bytes_written() as usize;
    second.iter().for_each(|&e| w.push(e).unwrap());
    let bytes = w.finish().unwrap();
    let all: Vec<Event> = first.iter().chain(&second).copied().collect();

    let r = TraceReader::from_bytes(bytes.clone()).unwrap();
    assert_eq!(r.program(), &grown);
    assert_eq!(r.read_all().unwrap(), all);

    // Cut inside the last event chunk: the program chunk before it still counts.
    let cut = bytes[..bytes.len() - CHUNK_HEADER_LEN - 2].to_vec();
    let r = TraceReader::from_bytes(cut).unwrap();
    assert_eq!(r.program(), &grown);
    let (got, err) = read_until_error(r);
    assert_eq!(got, first);
    assert!(matches!(err, Some(TraceError::Truncated { .. })), "{err:?}");

    // A flipped byte in the program chunk's database: refused where the chunk starts.
    let mut bad = bytes.clone();
    bad[program_at - 3] ^= 0x40;
    let (got, err) = read_until_error(TraceReader::from_bytes(bad).unwrap());
    assert_eq!(got, first);
    let err = err.expect("an error").to_string();
    assert!(err.contains("checksum"), "{err}");

    let err = TraceReader::from_reader(Cursor::new(bytes))
        .unwrap()
        .read_all()
        .unwrap_err()
        .to_string();
    assert!(err.contains("read this trace from a file"), "{err}");
}
