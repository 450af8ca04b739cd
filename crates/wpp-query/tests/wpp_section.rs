//! The scheme 4 index travels in a `.wpp` extra section: built at compression time, stored,
//! read back, validated and used — and a corrupted copy is refused with an offset.

use wpp_grammar::file::{Section, WppFile};
use wpp_grammar::{compress, Algorithm};
use wpp_query::matching::partition::{self, PartitionIndex, SECTION_TAG};
use wpp_query::matching::{compressed, Mode, PathQuery};
use wpp_query::QueryError;
use wpp_trace::synth::{SynthProgram, TraceKind};
use wpp_trace::{Alphabet, BlockId, FunctionId};

fn sample() -> WppFile {
    let prog = SynthProgram::generate(7);
    let events = prog.events(TraceKind::Blocks, 20_000);
    let mut alphabet = Alphabet::new();
    let terms: Vec<_> = events
        .iter()
        .map(|&e| alphabet.intern(e).unwrap())
        .collect();
    let grammar = compress(Algorithm::Sequitur, &[&terms]).unwrap();
    let index = PartitionIndex::build(&grammar, &alphabet, 16).unwrap();
    WppFile {
        program: prog.program().clone(),
        alphabet,
        grammar,
        algorithm: Algorithm::Sequitur,
        events: events.len() as u64,
        extra: vec![Section {
            tag: SECTION_TAG,
            data: index.to_bytes(),
        }],
    }
}

#[test]
fn index_round_trips_through_a_wpp_file() {
    let file = sample();
    if let Ok(path) = std::env::var("WPP_QUERY_WRITE_SAMPLE") {
        file.write(path).unwrap();
    }
    let back = WppFile::from_bytes(&file.to_bytes().unwrap()).unwrap();
    let index = partition::find_index(&back.extra, &back.grammar)
        .unwrap()
        .unwrap();
    assert_eq!(
        partition::index_section(&back.grammar, &back.alphabet)
            .unwrap()
            .data
            .len(),
        PartitionIndex::build(&back.grammar, &back.alphabet, partition::DEFAULT_PARTITIONS)
            .unwrap()
            .size_bytes()
    );
    assert!(partition::find_index(&[], &back.grammar).unwrap().is_none());
    let q = PathQuery {
        function: FunctionId(0),
        path: vec![BlockId(0)],
    };
    let (s4, stats) =
        partition::run(&back.grammar, &back.alphabet, &index, &q, Mode::Count).unwrap();
    let s2 = compressed::run(&back.grammar, &back.alphabet, &q, Mode::Count).unwrap();
    assert_eq!(s4, s2);
    assert!(s2[0].count.unwrap() > 0);
    assert_eq!(stats.scanned + stats.skipped, index.streams[0].sizes.len());
}

#[test]
fn corrupt_indices_are_refused_with_offsets() {
    let file = sample();
    let bytes = &file.extra[0].data;
    // Every truncation and every single-byte change either fails cleanly or, if it still parses,
    // is caught by validation or describes a grammar-consistent index; none panics.
    for cut in 0..bytes.len() {
        assert!(
            PartitionIndex::from_bytes(&bytes[..cut], 100).is_err(),
            "cut at {cut}"
        );
    }
    for i in 0..bytes.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut b = bytes.clone();
            b[i] ^= flip;
            if let Ok(idx) = PartitionIndex::from_bytes(&b, 0) {
                let _ = idx.validate(&file.grammar);
            }
        }
    }
    let e = PartitionIndex::from_bytes(&bytes[..7], 1000).unwrap_err();
    assert!(e.offset().is_some_and(|o| o >= 1000), "{e}");
    let mut wrong_magic = bytes.clone();
    wrong_magic[0] = b'X';
    let e = PartitionIndex::from_bytes(&wrong_magic, 1000).unwrap_err();
    assert_eq!(
        e.to_string(),
        "corrupt scheme 4 index: invalid magic at byte offset 1004"
    );
    // A valid index of another grammar is a mismatch.
    let mut other = PartitionIndex::from_bytes(bytes, 0).unwrap();
    other.streams[0].sizes[0] += 1;
    assert!(matches!(
        other.validate(&file.grammar),
        Err(QueryError::Mismatch { .. })
    ));
    let mut other = PartitionIndex::from_bytes(bytes, 0).unwrap();
    other.streams[0].lengths[0] += 1;
    assert!(matches!(
        other.validate(&file.grammar),
        Err(QueryError::Mismatch { .. })
    ));
}
