//! Regressions found by the fuzz targets in `fuzz/` (see `fuzz/README.md`). Each test names the
//! target that found the bug and pins the fixed behaviour.

use std::io::Cursor;
use wpp_trace::file::{binary, to_binary, TraceReader, TraceWriter};
use wpp_trace::{BlockId, Event, FunctionId, ProgramDb, TraceError};

fn b(i: u32) -> Event {
    Event::Block(BlockId(i))
}

/// Every item the iterator yields, and whether it kept yielding after its first error.
fn iterate(mut r: TraceReader) -> (Vec<Event>, Option<TraceError>, usize) {
    let mut events = Vec::new();
    let mut error = None;
    for item in r.by_ref() {
        match item {
            Ok(e) => events.push(e),
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    (events, error, r.count())
}

/// `trace_text`/`trace_binary`: an error in the middle of a batch used to be returned first,
/// and the events decoded before it in the same batch were then yielded *after* the error. The
/// iterator must yield the good events, then the error, then nothing.
#[test]
fn text_error_mid_batch_comes_after_the_events_before_it_and_ends_the_stream() {
    let text = b"B 1\nB 2\nX 3\nB 4\n".to_vec();
    let (events, error, after) = iterate(TraceReader::from_bytes(text.clone()).unwrap());
    assert_eq!(events, [b(1), b(2)]);
    let e = error.expect("line 3 is not an event");
    assert!(e.to_string().starts_with("line 3: "), "{e}");
    assert_eq!(after, 0, "the reader yielded items after its error");

    let e = TraceReader::from_bytes(text)
        .unwrap()
        .read_all()
        .unwrap_err();
    assert!(matches!(e, TraceError::Parse { line: 3, .. }), "{e}");
}

/// A binary chunk whose third event is malformed (tag 7): the two events before it come
/// first, then the error with the event's offset, then nothing; streamed or in memory alike.
#[test]
fn binary_error_mid_chunk_comes_after_the_events_before_it_and_ends_the_stream() {
    let mut db = ProgramDb::default();
    db.intern("main");
    let mut w = TraceWriter::new(Vec::new(), &db).unwrap();
    let mut payload = Vec::new();
    binary::encode_event(&mut payload, Event::Enter(FunctionId(0)));
    binary::encode_event(&mut payload, b(1));
    payload.push(0x07); // tag 7: invalid
    w.write_chunk(&payload, 3).unwrap();
    let bytes = w.finish().unwrap();
    let header_len = to_binary(&db, &[]).unwrap().len() - binary::CHUNK_HEADER_LEN;
    let bad_at = (header_len + binary::CHUNK_HEADER_LEN + 2) as u64;
    for r in [
        TraceReader::from_bytes(bytes.clone()).unwrap(),
        TraceReader::from_reader(Cursor::new(bytes)).unwrap(),
    ] {
        let (events, error, after) = iterate(r);
        assert_eq!(events, [Event::Enter(FunctionId(0)), b(1)]);
        let e = error.expect("tag 7 is invalid");
        assert!(
            matches!(e, TraceError::Malformed { offset, .. } if offset == bad_at),
            "{e}"
        );
        assert_eq!(after, 0, "the reader yielded items after its error");
    }
}
