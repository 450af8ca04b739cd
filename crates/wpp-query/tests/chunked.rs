//! The scheme 3 container: exact round trip per thread, and hostile bytes (every truncation,
//! every single-byte corruption) give a typed error or the same events, never a panic or a
//! different answer.

mod common;

use std::io::Cursor;

use common::*;
use proptest::prelude::*;
use wpp_query::matching::chunked::{ChunkWriter, ChunkedTrace, Codec};
use wpp_query::QueryError;
use wpp_trace::{split_threads, Event, ProgramDb, ThreadId};

fn write(events: &[Event], codec: Codec, chunk: usize) -> Vec<u8> {
    let mut db = ProgramDb::default();
    db.intern("main");
    db.intern("f");
    let mut w = ChunkWriter::new(Vec::new(), &db, codec, chunk).unwrap();
    for &e in events {
        w.push(e).unwrap();
    }
    w.finish().unwrap().0
}

/// Opens and decodes every chunk, per thread.
fn read_all(bytes: &[u8]) -> Result<Vec<(ThreadId, Vec<Event>)>, QueryError> {
    let mut t = ChunkedTrace::open(Cursor::new(bytes.to_vec()))?;
    let mut out = Vec::new();
    for (i, &thread) in t.threads.clone().iter().enumerate() {
        let mut evs = Vec::new();
        for c in t.per_thread[i].0.clone() {
            t.events(c, &mut evs)?;
        }
        out.push((thread, evs));
    }
    Ok(out)
}

fn sample() -> Vec<Event> {
    let b = |i| Event::Block(wpp_trace::BlockId(i));
    let f = |i| Event::Enter(wpp_trace::FunctionId(i));
    let mut v = vec![f(0), b(1), f(1), b(2), b(3), Event::Leave, b(4)];
    v.push(Event::Thread(ThreadId(3)));
    v.extend([f(1), b(7), b(7), Event::Path(wpp_trace::PathId(1 << 62))]);
    v.push(Event::Thread(ThreadId(0)));
    v.extend([b(5), Event::Leave, Event::Leave]);
    v
}

#[test]
fn hostile_containers_give_errors() {
    for codec in [Codec::Zstd(3), Codec::Gzip(6)] {
        let bytes = write(&sample(), codec, 4);
        let good = read_all(&bytes).unwrap();
        let expected: Vec<(ThreadId, Vec<Event>)> = split_threads(&sample()).into_iter().collect();
        assert_eq!(good, expected);
        for cut in 0..bytes.len() {
            assert!(read_all(&bytes[..cut]).is_err(), "{codec:?} cut at {cut}");
        }
        for i in 0..bytes.len() {
            for flip in [0x01u8, 0x40, 0xff] {
                let mut b = bytes.clone();
                b[i] ^= flip;
                // Either refused, or (a flip zstd ignores, e.g. in a frame header's window
                // size) the very same events: never a different answer.
                if let Ok(got) = read_all(&b) {
                    assert_eq!(
                        got, good,
                        "{codec:?}: flip {flip:#x} at byte {i} changed the data"
                    );
                }
            }
        }
    }
    let e = read_all(b"WPPC\x01\x00\x01\x00garbage-garbage!").unwrap_err();
    assert!(e.offset().is_some_and(|o| o > 0), "{e}");
    assert!(e.to_string().starts_with("corrupt chunked trace"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn round_trip_per_thread(t0 in thread_ops(), t1 in thread_ops(), chunk in 1usize..64) {
        let mut all = events(&t0);
        all.push(Event::Thread(ThreadId(1)));
        all.extend(events(&t1));
        let got = read_all(&write(&all, Codec::Zstd(1), chunk)).unwrap();
        let expected: Vec<(ThreadId, Vec<Event>)> = split_threads(&all).into_iter().collect();
        prop_assert_eq!(got, expected);
    }
}

/// Issue 14, item 4: each thread's level index has a row per function it runs, not one per
/// function id up to the largest it runs, so 2,000 threads that each call the last of 2,000
/// declared functions cost an index linear in threads + functions (the dense rows were 4 MB).
#[test]
fn the_level_index_grows_with_the_functions_each_thread_runs() {
    let mut db = ProgramDb::default();
    for f in 0..2000 {
        db.intern(&format!("f{f}"));
    }
    let last = Event::Enter(wpp_trace::FunctionId(1999));
    let mut w = ChunkWriter::new(Vec::new(), &db, Codec::Zstd(1), 4096).unwrap();
    for t in 0..2000 {
        w.push(Event::Thread(ThreadId(t))).unwrap();
        w.push(last).unwrap();
    }
    let (bytes, index_len) = w.finish().unwrap();
    assert!(index_len < 64 * 4000, "index of {index_len} bytes");
    let t = ChunkedTrace::open(Cursor::new(bytes)).unwrap();
    let (_, levels) = &t.per_thread[1234];
    assert!(levels.contains(wpp_trace::FunctionId(1999), 0));
    assert!(!levels.contains(wpp_trace::FunctionId(0), 0));
}
