//! `.wpp` files: round trips, and truncated, bit-flipped and hand-crafted hostile files, each of
//! which must give a typed error naming the place — never a panic or a huge allocation.

mod common;

use proptest::prelude::*;
use wpp_grammar::check::check;
use wpp_grammar::expand::Expander;
use wpp_grammar::file::{Section, WppError, WppFile};
use wpp_grammar::sequitur::{Sequitur, Variant};
use wpp_grammar::Algorithm;
use wpp_trace::synth::{SynthProgram, TraceKind};
use wpp_trace::wire::{write_varint, WireErrorKind};
use wpp_trace::{Alphabet, BlockId, Event, ThreadId};

/// A synthetic trace compressed into a file, over two threads.
fn synthetic(variant: Variant, events: u64) -> (WppFile, Vec<Vec<u32>>) {
    let program = SynthProgram::generate(7);
    let mut alphabet = Alphabet::new();
    let mut streams = vec![Vec::new(), Vec::new()];
    for (i, e) in program
        .events(TraceKind::Paths, events)
        .into_iter()
        .enumerate()
    {
        streams[(i / 1000) % 2].push(alphabet.intern(e).unwrap().0);
    }
    let mut s = Sequitur::new(variant);
    s.reserve_terminals(alphabet.len() as u32);
    for (i, stream) in streams.iter().enumerate() {
        let id = s.add_stream(ThreadId(i as u32 * 5)).unwrap();
        for &t in stream {
            s.push(id, wpp_trace::Terminal(t)).unwrap();
        }
    }
    let file = WppFile {
        program: program.program().clone(),
        alphabet,
        grammar: s.finish(),
        algorithm: match variant {
            Variant::Sequitur => Algorithm::Sequitur,
            Variant::Sequitur1 => Algorithm::Sequitur1,
        },
        events,
        extra: vec![Section {
            tag: *b"QIDX",
            data: vec![1, 2, 3],
        }],
    };
    (file, streams)
}

fn expand_all(f: &WppFile) -> Vec<Vec<u32>> {
    let g = &f.grammar;
    g.starts()
        .iter()
        .map(|s| Expander::new(g, s.rule).map(|t| t.0).collect())
        .collect()
}

#[test]
fn synthetic_files_round_trip_through_bytes_and_disk() {
    let dir = tempfile::tempdir().unwrap();
    for variant in [Variant::Sequitur, Variant::Sequitur1] {
        let (file, streams) = synthetic(variant, 20_000);
        let bytes = file.to_bytes().unwrap();
        let back = WppFile::from_bytes(&bytes).unwrap();
        assert_eq!(back, file);
        assert_eq!(expand_all(&back), streams);
        check(&back.grammar).unwrap();
        let path = dir.path().join("t.wpp");
        file.write(&path).unwrap();
        assert_eq!(WppFile::read(&path).unwrap(), file);
    }
}

#[test]
fn large_files_are_memory_mapped_and_read_back() {
    let (mut file, _) = synthetic(Variant::Sequitur, 2_000);
    file.extra.push(Section {
        tag: *b"BIG!",
        data: (0..3_000_000u32).map(|i| (i * 7) as u8).collect(),
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.wpp");
    file.write(&path).unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() > 1 << 20);
    assert_eq!(WppFile::read(&path).unwrap(), file);
}

#[test]
fn missing_files_name_the_path() {
    let e = WppFile::read("/nonexistent/x.wpp").unwrap_err();
    assert!(matches!(e, WppError::Io { .. }));
    assert!(e.to_string().contains("/nonexistent/x.wpp"), "{e}");
}

#[test]
fn every_truncation_is_an_error() {
    let (file, _) = synthetic(Variant::Sequitur, 300);
    let bytes = file.to_bytes().unwrap();
    for cut in 0..bytes.len() {
        let e = WppFile::from_bytes(&bytes[..cut]).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("offset") || text.contains("magic"),
            "cut {cut}: {text}"
        );
    }
}

#[test]
fn every_single_bit_flip_is_an_error() {
    let (mut file, _) = synthetic(Variant::Sequitur1, 300);
    file.extra.clear();
    let bytes = file.to_bytes().unwrap();
    let mut copy = bytes.clone();
    for bit in 0..bytes.len() * 8 {
        copy[bit / 8] ^= 1 << (bit % 8);
        assert!(
            WppFile::from_bytes(&copy).is_err(),
            "bit {bit} flipped still parses"
        );
        copy[bit / 8] ^= 1 << (bit % 8);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_corruption_never_panics(
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let (file, _) = synthetic(Variant::Sequitur, 200);
        let mut bytes = file.to_bytes().unwrap();
        for (i, x) in flips {
            let i = i.index(bytes.len());
            bytes[i] ^= x;
        }
        let _ = WppFile::from_bytes(&bytes);
    }

    #[test]
    fn random_traces_round_trip_through_files(
        streams in prop::collection::vec(prop::collection::vec(0u32..5, 0..200), 1..4),
        lookahead in any::<bool>(),
    ) {
        let algorithm = if lookahead { Algorithm::Sequitur1 } else { Algorithm::Sequitur };
        let ts: Vec<Vec<_>> = streams.iter().map(|s| common::terminals_u32(s)).collect();
        let refs: Vec<&[_]> = ts.iter().map(|s| s.as_slice()).collect();
        let grammar = wpp_grammar::compress(algorithm, &refs).unwrap();
        let alphabet =
            Alphabet::from_events((0..5).map(|b| Event::Block(BlockId(b))).collect()).unwrap();
        let file = WppFile {
            program: Default::default(),
            alphabet,
            grammar,
            algorithm,
            events: streams.iter().map(|s| s.len() as u64).sum(),
            extra: Vec::new(),
        };
        let back = WppFile::from_bytes(&file.to_bytes().unwrap()).unwrap();
        check(&back.grammar).unwrap();
        prop_assert_eq!(expand_all(&back), streams);
        prop_assert_eq!(back.algorithm, algorithm);
    }
}

// ---- hand-crafted files ----

/// Encodes one section.
fn section(out: &mut Vec<u8>, tag: &[u8; 4], payload: &[u8]) {
    out.extend_from_slice(tag);
    write_varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
}

fn varints(values: &[u64]) -> Vec<u8> {
    let mut out = Vec::new();
    for &v in values {
        write_varint(&mut out, v);
    }
    out
}

/// Terminal `t` and rule `r` as stored in `RULE`.
fn t(x: u64) -> u64 {
    x << 1
}
fn r(x: u64) -> u64 {
    (x << 1) | 1
}

/// A file with two terminals (`Block(0)`, `Block(1)`), the given `RULE` payload and one start
/// rule (thread 0 → `start`).
fn crafted(rule_payload: &[u8], start: u64) -> Vec<u8> {
    crafted_with(
        rule_payload,
        &varints(&[1, 0, start]),
        &varints(&[2, 2, 0, 2, 1]),
    )
}

fn crafted_with(rule_payload: &[u8], strt: &[u8], alph: &[u8]) -> Vec<u8> {
    let mut out = b"WPPG\x01\x00\x00\x00".to_vec();
    section(&mut out, b"META", &[0, 4, 1]);
    section(&mut out, b"PROG", &[0]);
    section(&mut out, b"ALPH", alph);
    section(&mut out, b"RULE", rule_payload);
    section(&mut out, b"STRT", strt);
    section(&mut out, b"END ", &[]);
    out
}

/// `R0 → t0 t1`, `R1 → R0 R0` with correct lengths and uses.
fn good_rules() -> Vec<u8> {
    varints(&[2, 2, 2, t(0), t(1), 2, 4, r(0), r(0), 2, 0])
}

#[test]
fn crafted_baseline_is_valid() {
    let f = WppFile::from_bytes(&crafted(&good_rules(), 1)).unwrap();
    assert_eq!(expand_all(&f), vec![vec![0, 1, 0, 1]]);
}

#[test]
fn forward_and_self_references_are_rejected() {
    // R0 → R1 t0, R1 → t0 t1: a forward reference (a cycle if R1 referred back).
    let fwd = varints(&[2, 2, 3, r(1), t(0), 2, 2, t(0), t(1), 0, 1]);
    let e = WppFile::from_bytes(&crafted(&fwd, 1)).unwrap_err();
    assert!(
        matches!(
            e,
            WppError::ForwardReference {
                rule: 0,
                target: 1,
                ..
            }
        ),
        "{e}"
    );
    let cyclic = varints(&[1, 1, 1, r(0), 1]);
    let e = WppFile::from_bytes(&crafted(&cyclic, 0)).unwrap_err();
    assert!(
        matches!(
            e,
            WppError::ForwardReference {
                rule: 0,
                target: 0,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn lengths_near_two_to_the_64_overflow_cleanly() {
    // R0 → t0 t0, R(i) → R(i-1) R(i-1): R(i) expands to 2^(i+1); R63 overflows.
    let mut vals = vec![70, 2, 2, t(0), t(0)];
    for i in 1..70u64 {
        let len = 2u128.pow(i as u32 + 1).min(u64::MAX as u128) as u64;
        vals.extend_from_slice(&[2, len, r(i - 1), r(i - 1)]);
    }
    vals.extend(std::iter::repeat_n(2, 69));
    vals.push(0);
    let e = WppFile::from_bytes(&crafted(&varints(&vals), 69)).unwrap_err();
    assert!(
        matches!(e, WppError::LengthOverflow { rule: 63, .. }),
        "{e}"
    );
}

#[test]
fn counts_larger_than_the_file_are_rejected_before_allocating() {
    let huge_rules = varints(&[1 << 40, 2, 2, t(0), t(1)]);
    let e = WppFile::from_bytes(&crafted(&huge_rules, 0)).unwrap_err();
    assert!(
        matches!(&e, WppError::Wire(w) if matches!(w.kind, WireErrorKind::OutOfRange { .. })
            && w.what == "rule count"),
        "{e}"
    );
    let huge_body = varints(&[1, u64::MAX >> 1, 2, t(0), t(1), 0]);
    assert!(WppFile::from_bytes(&crafted(&huge_body, 0)).is_err());
    let huge_alphabet = varints(&[u64::MAX, 2, 0]);
    let e = WppFile::from_bytes(&crafted_with(
        &good_rules(),
        &varints(&[1, 0, 1]),
        &huge_alphabet,
    ))
    .unwrap_err();
    assert!(
        matches!(&e, WppError::Wire(w) if w.what == "alphabet size"),
        "{e}"
    );
    let huge_starts = varints(&[1 << 33, 0, 1]);
    let e = WppFile::from_bytes(&crafted_with(
        &good_rules(),
        &huge_starts,
        &varints(&[2, 2, 0, 2, 1]),
    ))
    .unwrap_err();
    assert!(
        matches!(&e, WppError::Wire(w) if w.what == "start rule count"),
        "{e}"
    );
}

#[test]
fn stored_lengths_and_use_counts_must_match() {
    let bad_len = varints(&[2, 2, 3, t(0), t(1), 2, 4, r(0), r(0), 2, 0]);
    let e = WppFile::from_bytes(&crafted(&bad_len, 1)).unwrap_err();
    assert!(
        matches!(
            e,
            WppError::LengthMismatch {
                rule: 0,
                stored: 3,
                computed: 2,
                ..
            }
        ),
        "{e}"
    );
    let bad_uses = varints(&[2, 2, 2, t(0), t(1), 2, 4, r(0), r(0), 1, 0]);
    let e = WppFile::from_bytes(&crafted(&bad_uses, 1)).unwrap_err();
    assert!(
        matches!(
            e,
            WppError::UseCountMismatch {
                rule: 0,
                stored: 1,
                computed: 2,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn start_rules_must_exist_be_unreferenced_and_unique() {
    let e = WppFile::from_bytes(&crafted(&good_rules(), 2)).unwrap_err();
    assert!(matches!(e, WppError::BadStartRule { rule: 2, .. }), "{e}");
    let e = WppFile::from_bytes(&crafted(&good_rules(), 0)).unwrap_err();
    assert!(
        matches!(e, WppError::StartReferenced { rule: 0, .. }),
        "{e}"
    );
    let two = varints(&[2, 0, 1, 0, 1]);
    let mut bytes = crafted_with(&good_rules(), &two, &varints(&[2, 2, 0, 2, 1]));
    bytes[8 + 4 + 1 + 2] = 2; // META thread count, so that the duplicate is what fails
    let (meta_crc_at, meta) = (8 + 4 + 1 + 3, [0u8, 4, 2]);
    bytes[meta_crc_at..meta_crc_at + 4].copy_from_slice(&crc32fast::hash(&meta).to_le_bytes());
    let e = WppFile::from_bytes(&bytes).unwrap_err();
    assert!(
        matches!(e, WppError::DuplicateThread { thread: 0, .. }),
        "{e}"
    );
}

#[test]
fn terminals_must_be_in_the_alphabet() {
    let rules = varints(&[1, 2, 2, t(0), t(2), 0]);
    let e = WppFile::from_bytes(&crafted(&rules, 0)).unwrap_err();
    assert!(
        matches!(
            e,
            WppError::TerminalOutOfRange {
                terminal: 2,
                alphabet: 2,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn alphabet_entries_are_checked() {
    let dup = varints(&[2, 2, 0, 2, 0]);
    let e =
        WppFile::from_bytes(&crafted_with(&good_rules(), &varints(&[1, 0, 1]), &dup)).unwrap_err();
    assert!(
        matches!(e, WppError::DuplicateEvent { index: 1, .. }),
        "{e}"
    );
    let bad_kind = varints(&[2, 2, 0, 9, 1]);
    let e = WppFile::from_bytes(&crafted_with(
        &good_rules(),
        &varints(&[1, 0, 1]),
        &bad_kind,
    ))
    .unwrap_err();
    assert!(matches!(e, WppError::BadEventKind { kind: 9, .. }), "{e}");
}

#[test]
fn headers_checksums_and_framing_are_checked() {
    let good = crafted(&good_rules(), 1);
    let mut bad_magic = good.clone();
    bad_magic[0] = b'X';
    assert!(matches!(
        WppFile::from_bytes(&bad_magic),
        Err(WppError::BadMagic)
    ));
    let mut bad_version = good.clone();
    bad_version[4] = 9;
    assert!(matches!(
        WppFile::from_bytes(&bad_version),
        Err(WppError::UnsupportedVersion { found: 9 })
    ));
    let mut bad_crc = good.clone();
    bad_crc[8 + 4 + 1] ^= 1; // first META payload byte
    let e = WppFile::from_bytes(&bad_crc).unwrap_err();
    assert!(matches!(e, WppError::Checksum { offset: 13, .. }), "{e}");
    assert!(e.to_string().contains("`META`"), "{e}");
    let mut trailing = good.clone();
    trailing.push(0);
    assert!(matches!(
        WppFile::from_bytes(&trailing),
        Err(WppError::TrailingBytes { .. })
    ));
    let mut bad_algorithm = good;
    bad_algorithm[13] = 7;
    let crc = crc32fast::hash(&[7, 4, 1]).to_le_bytes();
    bad_algorithm[16..20].copy_from_slice(&crc);
    assert!(matches!(
        WppFile::from_bytes(&bad_algorithm),
        Err(WppError::UnknownAlgorithm {
            code: 7,
            offset: 13
        })
    ));
}

#[test]
fn writing_rejects_reserved_tags_and_small_alphabets() {
    let (mut file, _) = synthetic(Variant::Sequitur, 100);
    file.extra.push(Section {
        tag: *b"RULE",
        data: Vec::new(),
    });
    assert!(matches!(file.to_bytes(), Err(WppError::ReservedTag(t)) if &t == b"RULE"));
    let (mut file, _) = synthetic(Variant::Sequitur, 100);
    file.alphabet = Alphabet::new();
    assert!(matches!(
        file.to_bytes(),
        Err(WppError::AlphabetTooSmall { .. })
    ));
}
