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
        matches!(&e, WppError::Wire(w) if matches!(w.kind, WireErrorKind::TooFewBytes { .. })
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

// ---- version 2 `RULE` streams, hand-crafted ----

/// A stored (uncompressed) stream.
fn stored(raw: &[u8]) -> Vec<u8> {
    let mut out = vec![0];
    write_varint(&mut out, raw.len() as u64);
    out.extend_from_slice(raw);
    out
}

/// A zstd stream declaring `raw_len` raw bytes.
fn zstd_stream(frame: &[u8], raw_len: u64) -> Vec<u8> {
    let mut out = vec![1];
    write_varint(&mut out, raw_len);
    write_varint(&mut out, frame.len() as u64);
    out.extend_from_slice(frame);
    out
}

/// A version 2 `RULE` payload from counts and the four streams.
fn rule_v2(rules: u64, symbols: u64, streams: [Vec<u8>; 4]) -> Vec<u8> {
    let mut out = varints(&[rules, symbols]);
    for s in streams {
        out.extend_from_slice(&s);
    }
    out
}

/// `rule_v2` with every stream stored.
fn stored_v2(rules: u64, lens: &[u64], kinds: &[u8], terms: &[u64], refs: &[u64]) -> Vec<u8> {
    rule_v2(
        rules,
        kinds.len() as u64,
        [
            stored(&varints(lens)),
            stored(kinds),
            stored(&varints(terms)),
            stored(&varints(refs)),
        ],
    )
}

/// A version 2 file over `Block(0)`, `Block(1)` with the given `RULE` payload; thread 0 starts
/// at `start`.
fn crafted_v2(rule_payload: &[u8], start: u64) -> Vec<u8> {
    let mut out = crafted(rule_payload, start);
    out[4] = 2;
    out
}

const NEW: u8 = 0;
const TERM: u8 = 1;
const REF: u8 = 2;

#[test]
fn version_2_inline_and_flat_definitions_read_alike() {
    // R1 → (R0 → t0 t1) R0, R0 defined inline at its first use.
    let inline = stored_v2(2, &[2, 2], &[NEW, TERM, TERM, REF], &[0, 1], &[0]);
    // The same grammar with every rule its own top-level definition.
    let flat = stored_v2(2, &[2, 2], &[TERM, TERM, REF, REF], &[0, 1], &[0, 0]);
    let a = WppFile::from_bytes(&crafted_v2(&inline, 1)).unwrap();
    let b = WppFile::from_bytes(&crafted_v2(&flat, 1)).unwrap();
    assert_eq!(a, b);
    assert_eq!(expand_all(&a), vec![vec![0, 1, 0, 1]]);
    assert_eq!(
        a.grammar,
        WppFile::from_bytes(&crafted(&good_rules(), 1))
            .unwrap()
            .grammar
    );
}

fn stream_error(e: &WppError) -> Option<(&'static str, String)> {
    match e {
        WppError::Stream {
            stream, message, ..
        } => Some((stream, message.clone())),
        _ => None,
    }
}

#[test]
fn version_2_references_before_rule_0_and_to_empty_rules_are_rejected() {
    // R0 → t0 t1, R1 → R? with distance 1: reaches before rule 0.
    let far = stored_v2(2, &[2, 1], &[TERM, TERM, REF], &[0, 1], &[1]);
    let e = WppFile::from_bytes(&crafted_v2(&far, 1)).unwrap_err();
    let (stream, msg) = stream_error(&e).unwrap_or_else(|| panic!("{e}"));
    assert_eq!(stream, "REFS");
    assert!(msg.contains("rule 1 refers 2 rules back"), "{msg}");
    assert!(e.to_string().contains("byte offset"), "{e}");
    // R0 → ε, R1 → R0 R0 t0 (flat): a reference to an empty rule.
    let empty = stored_v2(2, &[0, 3], &[REF, REF, TERM], &[0], &[0, 0]);
    let e = WppFile::from_bytes(&crafted_v2(&empty, 1)).unwrap_err();
    assert!(
        matches!(
            e,
            WppError::EmptyRuleReference {
                rule: 1,
                target: 0,
                ..
            }
        ),
        "{e}"
    );
    // The same, with R0 defined inline.
    let inline = stored_v2(2, &[3, 0], &[NEW, REF, TERM], &[0], &[0]);
    let e = WppFile::from_bytes(&crafted_v2(&inline, 1)).unwrap_err();
    assert!(
        matches!(
            e,
            WppError::EmptyRuleReference {
                rule: 1,
                target: 0,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn version_2_terminals_lengths_and_kinds_are_checked() {
    let bad_terminal = stored_v2(1, &[2], &[TERM, TERM], &[0, 2], &[]);
    let e = WppFile::from_bytes(&crafted_v2(&bad_terminal, 0)).unwrap_err();
    assert!(
        matches!(
            e,
            WppError::TerminalOutOfRange {
                rule: 0,
                terminal: 2,
                alphabet: 2,
                ..
            }
        ),
        "{e}"
    );
    // R0 → t0 t0, R(i) → R(i-1) R(i-1): R63 overflows.
    let lens = vec![2; 70];
    let mut kinds = vec![TERM, TERM];
    kinds.extend(std::iter::repeat_n(REF, 2 * 69));
    let refs = vec![0; 2 * 69];
    let deep = stored_v2(70, &lens, &kinds, &[0, 0], &refs);
    let e = WppFile::from_bytes(&crafted_v2(&deep, 69)).unwrap_err();
    assert!(
        matches!(e, WppError::LengthOverflow { rule: 63, .. }),
        "{e}"
    );
    let bad_kind = stored_v2(1, &[2], &[TERM, 3], &[0], &[]);
    let e = WppFile::from_bytes(&crafted_v2(&bad_kind, 0)).unwrap_err();
    assert_eq!(stream_error(&e).map(|s| s.0), Some("KINDS"), "{e}");
    assert!(e.to_string().contains("unknown symbol kind 3"), "{e}");
    // Leftover bytes in each stream, and a body running past `KINDS`.
    for (payload, stream) in [
        (stored_v2(1, &[2, 5], &[TERM, TERM], &[0, 1], &[]), "LENS"),
        (stored_v2(1, &[1], &[TERM, TERM], &[0, 1], &[]), "KINDS"),
        (stored_v2(1, &[2], &[TERM, TERM], &[0, 1, 1], &[]), "TERMS"),
        (stored_v2(1, &[2], &[TERM, TERM], &[0, 1], &[0]), "REFS"),
        (stored_v2(1, &[3], &[TERM, TERM], &[0, 1], &[]), "KINDS"),
    ] {
        let e = WppFile::from_bytes(&crafted_v2(&payload, 0)).unwrap_err();
        assert_eq!(stream_error(&e).map(|s| s.0), Some(stream), "{e}");
    }
    // More symbols declared than `KINDS` holds.
    let mut wrong = stored_v2(1, &[2], &[TERM, TERM], &[0, 1], &[]);
    wrong[1] = 3;
    let e = WppFile::from_bytes(&crafted_v2(&wrong, 0)).unwrap_err();
    assert_eq!(stream_error(&e).map(|s| s.0), Some("KINDS"), "{e}");
}

#[test]
fn version_2_counts_and_declared_sizes_are_bounded_before_allocating() {
    // 2^31 - 1 rules with a 2-byte `LENS`.
    let many = stored_v2((1 << 31) - 1, &[2], &[TERM, TERM], &[0, 1], &[]);
    let e = WppFile::from_bytes(&crafted_v2(&many, 0)).unwrap_err();
    assert_eq!(stream_error(&e).map(|s| s.0), Some("LENS"), "{e}");
    let too_many = stored_v2(1 << 31, &[2], &[TERM, TERM], &[0, 1], &[]);
    let e = WppFile::from_bytes(&crafted_v2(&too_many, 0)).unwrap_err();
    assert!(
        matches!(&e, WppError::Wire(w) if w.what == "rule count"),
        "{e}"
    );
    // A zstd `KINDS` claiming 4 GiB from 13 bytes: refused by the ratio bound, not allocated.
    let frame = zstd::bulk::compress(&[TERM, TERM], 19).unwrap();
    let bomb = rule_v2(
        1,
        u64::from(u32::MAX),
        [
            stored(&[2]),
            zstd_stream(&frame, u64::from(u32::MAX)),
            stored(&varints(&[0, 1])),
            stored(&[]),
        ],
    );
    let e = WppFile::from_bytes(&crafted_v2(&bomb, 0)).unwrap_err();
    let (stream, msg) = stream_error(&e).unwrap_or_else(|| panic!("{e}"));
    assert_eq!(stream, "KINDS");
    assert!(msg.contains("declares 4294967295 raw bytes"), "{msg}");
    // Within the bounds but the wrong size, truncated or corrupt zstd data, an unknown codec.
    let with_kinds = |kinds: Vec<u8>| {
        rule_v2(
            1,
            2,
            [stored(&[2]), kinds, stored(&varints(&[0, 1])), stored(&[])],
        )
    };
    let mut corrupt = frame.clone();
    let mid = corrupt.len() / 2;
    corrupt[mid] ^= 0xff;
    for (kinds, what) in [
        (zstd_stream(&frame, 1), "wrong size"),
        (zstd_stream(&frame[..frame.len() - 2], 2), "truncated"),
        (zstd_stream(&corrupt, 2), "corrupt"),
        (zstd_stream(b"not zstd at all", 2), "not zstd"),
        (vec![7, 2, TERM, TERM], "unknown codec"),
    ] {
        let e = WppFile::from_bytes(&crafted_v2(&with_kinds(kinds), 0));
        let e = match e {
            Err(e) => e,
            // A flipped byte zstd does not notice still has to decode to the same bytes.
            Ok(f) => {
                assert_eq!(what, "corrupt");
                assert_eq!(expand_all(&f), vec![vec![0, 1]]);
                continue;
            }
        };
        assert_eq!(stream_error(&e).map(|s| s.0), Some("KINDS"), "{what}: {e}");
        assert!(e.to_string().contains("byte offset"), "{what}: {e}");
    }
    // And the well-formed zstd stream reads.
    let ok = WppFile::from_bytes(&crafted_v2(&with_kinds(zstd_stream(&frame, 2)), 0)).unwrap();
    assert_eq!(expand_all(&ok), vec![vec![0, 1]]);
}

/// The `RULE` payload's range in a file written by this build.
fn rule_payload_range(bytes: &[u8]) -> std::ops::Range<usize> {
    let mut at = 8;
    loop {
        let tag = &bytes[at..at + 4];
        let mut r = wpp_trace::wire::Reader::new(&bytes[at + 4..], 0);
        let len = r.varint("len").unwrap() as usize;
        let start = at + 4 + (r.offset() as usize);
        if tag == b"RULE" {
            return start..start + len;
        }
        at = start + len + 4;
    }
}

#[test]
fn written_files_compress_rules_and_survive_corruption_behind_valid_checksums() {
    let (mut file, _) = synthetic(Variant::Sequitur, 5_000);
    file.extra.clear();
    let bytes = file.to_bytes().unwrap();
    let range = rule_payload_range(&bytes);
    let payload = &bytes[range.clone()];
    let mut r = wpp_trace::wire::Reader::new(payload, 0);
    r.varint("rules").unwrap();
    r.varint("symbols").unwrap();
    // `LENS` is long enough here to be worth compressing.
    assert_eq!(r.u8("codec").unwrap(), 1, "LENS is zstd");
    // Every byte of `RULE` changed, with the checksum fixed so the change reaches the decoder:
    // an error or (where zstd does not notice) some valid grammar, never a panic.
    let mut copy = bytes.clone();
    let crc_at = range.end;
    for i in range.clone() {
        for x in [0x01, 0x80, 0xff] {
            copy[i] ^= x;
            let crc = crc32fast::hash(&copy[range.clone()]).to_le_bytes();
            copy[crc_at..crc_at + 4].copy_from_slice(&crc);
            if let Ok(f) = WppFile::from_bytes(&copy) {
                for s in f.grammar.starts() {
                    let _ = Expander::new(&f.grammar, s.rule).take(1000).count();
                }
            }
            copy[i] ^= x;
        }
    }
}

#[test]
fn grammars_not_numbered_depth_first_round_trip() {
    // Re-Pair numbers non-start rules first; a hand-built grammar may hold unreachable rules.
    let streams = [common::terminals_u32(&[0, 1, 2, 0, 1, 2, 0, 1, 3, 0, 1])];
    let refs: Vec<&[_]> = streams.iter().map(|s| s.as_slice()).collect();
    let alphabet =
        Alphabet::from_events((0..4).map(|b| Event::Block(BlockId(b))).collect()).unwrap();
    let grammar = wpp_grammar::compress(Algorithm::Frequency, &refs).unwrap();
    let mut file = WppFile {
        program: Default::default(),
        alphabet,
        grammar,
        algorithm: Algorithm::Frequency,
        events: 11,
        extra: Vec::new(),
    };
    let back = WppFile::from_bytes(&file.to_bytes().unwrap()).unwrap();
    assert_eq!(back, file);
    use wpp_grammar::{Grammar, RuleId, StartRule, Symbol};
    let t = |x| Symbol::terminal(wpp_trace::Terminal(x));
    let bodies = vec![
        vec![t(0), t(1)],
        vec![t(2), t(3)],
        vec![Symbol::rule(RuleId(0)), Symbol::rule(RuleId(0))],
    ];
    file.grammar = Grammar::new(
        4,
        bodies,
        vec![StartRule {
            thread: ThreadId(0),
            rule: RuleId(2),
        }],
    )
    .unwrap();
    let back = WppFile::from_bytes(&file.to_bytes().unwrap()).unwrap();
    assert_eq!(back, file);
}

#[test]
fn version_1_files_still_read() {
    for variant in [Variant::Sequitur, Variant::Sequitur1] {
        let (file, streams) = synthetic(variant, 20_000);
        let v1 = file.to_bytes_v1().unwrap();
        assert_eq!(&v1[4..8], &[1, 0, 0, 0]);
        let back = WppFile::from_bytes(&v1).unwrap();
        assert_eq!(back, file);
        assert_eq!(expand_all(&back), streams);
        let v3 = file.to_bytes().unwrap();
        assert_eq!(&v3[4..8], &[3, 0, 0, 0]);
        assert!(v3.len() < v1.len(), "v3 {} vs v1 {}", v3.len(), v1.len());
    }
}

/// Distances of two and three bytes (more than 256 and 65,536 rules), in stored planes.
#[test]
fn version_2_multi_byte_distances_read_back() {
    use wpp_grammar::{Grammar, RuleId, StartRule, Symbol};
    let n = 70_000u32;
    let t = |x| Symbol::terminal(wpp_trace::Terminal(x));
    // R0 → t0 t1, R(i) → R(i-1) t(i % 2) but R1000 → R999 R0, and a start rule
    // S → R(n-1) R0 R5: the references to R0 and R5 are 2 and 3 bytes wide.
    let r = |i| Symbol::rule(RuleId(i));
    let mut bodies = vec![vec![t(0), t(1)]];
    for i in 1..n {
        bodies.push(vec![r(i - 1), if i == 1000 { r(0) } else { t(i % 2) }]);
    }
    bodies.push(vec![r(n - 1), r(0), r(5)]);
    let grammar = Grammar::new(
        2,
        bodies,
        vec![StartRule {
            thread: ThreadId(0),
            rule: RuleId(n),
        }],
    )
    .unwrap();
    let file = WppFile {
        program: Default::default(),
        alphabet: Alphabet::from_events(vec![Event::Block(BlockId(0)), Event::Block(BlockId(1))])
            .unwrap(),
        grammar,
        algorithm: Algorithm::Sequitur,
        events: 0,
        extra: Vec::new(),
    };
    let bytes = file.to_bytes().unwrap();
    assert_eq!(WppFile::from_bytes(&bytes).unwrap(), file);
}

/// A CFG table that names a block past the function's end is a `PROG` error naming the bad
/// successor, at its exact offset in a stored stream and at the stream's offset in a zstd one;
/// the writer does not check CFGs, so it makes such files.
#[test]
fn a_bad_cfg_table_is_a_program_database_error() {
    let bad = wpp_trace::FunctionCfg {
        successors: vec![vec![2], vec![]], // block 2 of 2
        exits: vec![1],
        ..Default::default()
    };
    let (mut big, _) = synthetic(Variant::Sequitur, 2_000);
    let mut small = big.clone();
    small.program = wpp_trace::ProgramDb::default();
    small.program.intern("main");
    for (file, stored) in [(&mut small, true), (&mut big, false)] {
        file.program.functions[0].cfg = Some(Box::new(bad.clone()));
        let bytes = file.to_bytes().unwrap();
        let prog = bytes.windows(4).position(|w| w == b"PROG").unwrap();
        let alph = bytes.windows(4).position(|w| w == b"ALPH").unwrap();
        let e = WppFile::from_bytes(&bytes).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("successor block 2 is out of range"), "{msg}");
        let WppError::ProgramDb { offset, .. } = e else {
            panic!("{msg}")
        };
        if stored {
            // tag, section length, codec, stream length, 9 postcard bytes, table count,
            // presence, blocks, entry, degree: the successor.
            assert_eq!(offset as usize, prog + 4 + 1 + 1 + 1 + 9 + 5, "{msg}");
            assert_eq!(bytes[offset as usize], 4, "zigzag(+2)");
        } else {
            let codec = prog + 4 + if bytes[prog + 4] & 0x80 != 0 { 2 } else { 1 };
            assert_eq!(bytes[codec], 1, "the synthetic database is zstd-compressed");
            assert!((codec..alph).contains(&(offset as usize)), "{msg}");
        }
    }
}

#[test]
fn every_zstd_level_reads_back_the_same_file() {
    let (file, _) = synthetic(Variant::Sequitur, 200_000);
    let mut sizes = Vec::new();
    for level in [1, 3, 19] {
        let bytes = file.to_bytes_with_level(level).unwrap();
        assert_eq!(WppFile::from_bytes(&bytes).unwrap(), file, "level {level}");
        sizes.push(bytes.len());
    }
    assert_eq!(
        file.to_bytes().unwrap().len(),
        sizes[2],
        "the default is level 19"
    );
    assert!(sizes[0] > sizes[2], "{sizes:?}");
}

// ---- codec 2: the context-mixing coder of `KINDS` and `REFS` ----

/// A high-entropy block trace (random calls, trip counts and branches, as
/// `bench/entropy-trace.py` makes) compressed by the frequency compressor: its `KINDS` and
/// `REFS` are smallest context-coded.
fn high_entropy(events: usize, seed: u64) -> WppFile {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut rnd = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let mut trace = Vec::new();
    fn run(trace: &mut Vec<Event>, rnd: &mut dyn FnMut(u64) -> u64, f: u32, depth: u32) {
        trace.push(Event::Enter(wpp_trace::FunctionId(f)));
        trace.push(Event::Block(BlockId(0)));
        for _ in 0..rnd(8) {
            for point in 0..3 {
                trace.push(Event::Block(BlockId(1 + 2 * point + rnd(2) as u32)));
            }
            if depth < 3 && rnd(6) == 0 {
                let g = rnd(8) as u32;
                run(trace, rnd, g, depth + 1);
            }
        }
        trace.push(Event::Leave);
    }
    while trace.len() < events {
        let f = rnd(8) as u32;
        run(&mut trace, &mut rnd, f, 0);
    }
    let mut alphabet = Alphabet::new();
    let terminals: Vec<_> = trace.iter().map(|&e| alphabet.intern(e).unwrap()).collect();
    let grammar = wpp_grammar::compress(Algorithm::Frequency, &[&terminals]).unwrap();
    WppFile {
        program: Default::default(),
        alphabet,
        grammar,
        algorithm: Algorithm::Frequency,
        events: trace.len() as u64,
        extra: Vec::new(),
    }
}

/// The `RULE` payload's four streams: codec and the range of the stored bytes in the payload.
fn rule_streams(payload: &[u8]) -> Vec<StreamAt> {
    let mut r = wpp_trace::wire::Reader::new(payload, 0);
    r.varint("rules").unwrap();
    r.varint("symbols").unwrap();
    (0..4)
        .map(|_| {
            let codec = r.u8("codec").unwrap();
            if codec != 0 {
                r.varint("raw").unwrap();
            }
            let len = r.varint("len").unwrap() as usize;
            let at = r.offset() as usize;
            r.bytes(len, "data").unwrap();
            (codec, at..at + len)
        })
        .collect()
}

/// `bytes` with its `RULE` payload replaced (and its length and checksum made right).
fn with_rule_payload(bytes: &[u8], payload: &[u8]) -> Vec<u8> {
    let range = rule_payload_range(bytes);
    let mut head = bytes[..range.start].to_vec();
    // Drop the old length varint: back up to the tag.
    let tag_end = head
        .windows(4)
        .rposition(|w| w == b"RULE")
        .expect("RULE tag")
        + 4;
    head.truncate(tag_end);
    write_varint(&mut head, payload.len() as u64);
    head.extend_from_slice(payload);
    head.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    head.extend_from_slice(&bytes[range.end + 4..]);
    head
}

/// The payload with stream `i`'s stored bytes replaced by `data` (its length fixed).
fn with_stream(payload: &[u8], i: usize, data: &[u8]) -> Vec<u8> {
    let streams = rule_streams(payload);
    let range = streams[i].1.clone();
    // The length varint sits right before the data; rewrite it.
    let mut len_at = range.start - 1;
    while len_at > 0 && payload[len_at - 1] & 0x80 != 0 {
        len_at -= 1;
    }
    let mut out = payload[..len_at].to_vec();
    write_varint(&mut out, data.len() as u64);
    out.extend_from_slice(data);
    out.extend_from_slice(&payload[range.end..]);
    out
}

#[test]
fn high_entropy_streams_are_context_coded_and_read_back() {
    let file = high_entropy(60_000, 1);
    let bytes = file
        .to_bytes_with_level(wpp_grammar::file::SMALLEST_LEVEL)
        .unwrap();
    let payload = &bytes[rule_payload_range(&bytes)];
    let codecs: Vec<u8> = rule_streams(payload).iter().map(|s| s.0).collect();
    assert_eq!(codecs[1], 2, "KINDS context-coded: {codecs:?}");
    assert_eq!(codecs[3], 2, "REFS context-coded: {codecs:?}");
    let back = WppFile::from_bytes(&bytes).unwrap();
    assert_eq!(back, file);
    check(&back.grammar).unwrap();
    // The rewriting helpers change nothing when given the same payload.
    assert_eq!(with_rule_payload(&bytes, payload), bytes);
    // Only asked for: the default level keeps every stream fast to read (`KINDS` packed).
    let bytes = file.to_bytes().unwrap();
    let payload = &bytes[rule_payload_range(&bytes)];
    let codecs: Vec<u8> = rule_streams(payload).iter().map(|s| s.0).collect();
    assert_eq!(codecs, [1, 3, 1, 4]);
}

// ---- codec 4: `REFS` by plane ----

#[test]
fn codec_4_planes_add_up_to_the_references_and_are_bounded() {
    // R1 → R0 R0, R0 → t0 t1: one reference (distance 0) in plane 0, three empty planes.
    let planes = |raw: u64, pieces: [Vec<u8>; 4]| {
        let mut out = vec![4];
        write_varint(&mut out, raw);
        pieces.iter().for_each(|p| out.extend_from_slice(p));
        out
    };
    let file = |refs: Vec<u8>| {
        let lens = stored(&[2, 2]);
        let kinds = stored(&[0, TERM, TERM, 2]);
        crafted_v2(
            &rule_v2(2, 4, [lens, kinds, stored(&varints(&[0, 1])), refs]),
            1,
        )
    };
    let empty = || stored(&[]);
    let ok = planes(1, [stored(&[0]), empty(), empty(), empty()]);
    assert_eq!(
        expand_all(&WppFile::from_bytes(&file(ok)).unwrap()),
        vec![vec![0, 1, 0, 1]]
    );
    for (refs, what) in [
        (
            planes(1 << 40, [stored(&[0]), empty(), empty(), empty()]),
            "declares",
        ),
        (
            planes(1, [stored(&[0]), stored(&[0]), empty(), empty()]),
            "more than the counts allow (0)",
        ),
        (
            planes(2, [stored(&[0]), empty(), empty(), empty()]),
            "its planes hold 1 bytes, not 2",
        ),
        (
            planes(1, [stored(&[0]), empty(), empty(), vec![9]]),
            "unknown codec 9",
        ),
    ] {
        let e = WppFile::from_bytes(&file(refs)).unwrap_err();
        assert_eq!(stream_error(&e).map(|s| s.0), Some("REFS"), "{what}: {e}");
        assert!(e.to_string().contains(what), "{what}: {e}");
    }
    // Codec 4 is for `REFS` only.
    let e = WppFile::from_bytes(&crafted_v2(
        &rule_v2(
            1,
            2,
            [
                stored(&[2]),
                planes(2, [stored(&[1, 1]), empty(), empty(), empty()]),
                stored(&varints(&[0, 1])),
                stored(&[]),
            ],
        ),
        0,
    ))
    .unwrap_err();
    assert!(e.to_string().contains("unknown codec 4"), "{e}");
}

// ---- codec 5: a plane of `REFS` as digits ----

/// A codec 5 plane of `raw` values below `base` whose packed bytes are `packed`.
fn digits_plane(base: u8, raw: u64, packed: &[u8]) -> Vec<u8> {
    let frame = zstd::bulk::compress(packed, 3).unwrap();
    let mut out = vec![5, base];
    write_varint(&mut out, raw);
    write_varint(&mut out, frame.len() as u64);
    out.extend_from_slice(&frame);
    out
}

/// The codecs of a `RULE` payload's streams, with those of `REFS`'s planes after `REFS`'s own.
fn codecs_with_planes(payload: &[u8]) -> Vec<u8> {
    let mut r = wpp_trace::wire::Reader::new(payload, 0);
    r.varint("rules").unwrap();
    r.varint("symbols").unwrap();
    fn stream(r: &mut wpp_trace::wire::Reader<'_>, codecs: &mut Vec<u8>) {
        let codec = r.u8("codec").unwrap();
        codecs.push(codec);
        if codec == 5 {
            r.u8("base").unwrap();
        }
        if codec != 0 {
            r.varint("raw").unwrap();
        }
        if codec == 4 {
            return (0..4).for_each(|_| stream(r, codecs));
        }
        let len = r.varint("len").unwrap() as usize;
        r.bytes(len, "data").unwrap();
    }
    let mut codecs = Vec::new();
    (0..4).for_each(|_| stream(&mut r, &mut codecs));
    codecs
}

#[test]
fn codec_5_packs_a_plane_of_few_values_and_reads_it_back() {
    // 40,000 events: 257 to 4096 rules, so two planes of which the top holds values below 16.
    let file = high_entropy(40_000, 3);
    assert!(
        (257..=4096).contains(&file.grammar.num_rules()),
        "{}",
        file.grammar.num_rules()
    );
    let bytes = file.to_bytes().unwrap();
    let codecs = codecs_with_planes(&bytes[rule_payload_range(&bytes)]);
    assert_eq!(codecs[3..], [4, 0, 5, 0, 0], "{codecs:?}");
    assert_eq!(WppFile::from_bytes(&bytes).unwrap(), file);
}

#[test]
fn codec_5_planes_are_checked_before_allocating() {
    // R1 → R0 R0, R0 → t0 t1: one reference (distance 0) in plane 0.
    let file = |plane: Vec<u8>| {
        let mut refs = vec![4, 1];
        refs.extend_from_slice(&plane);
        (0..3).for_each(|_| refs.extend_from_slice(&stored(&[])));
        let lens = stored(&[2, 2]);
        let kinds = stored(&[0, TERM, TERM, 2]);
        crafted_v2(
            &rule_v2(2, 4, [lens, kinds, stored(&varints(&[0, 1])), refs]),
            1,
        )
    };
    for base in [2, 5, 16] {
        let ok = WppFile::from_bytes(&file(digits_plane(base, 1, &[0]))).unwrap();
        assert_eq!(expand_all(&ok), vec![vec![0, 1, 0, 1]]);
    }
    for (plane, what) in [
        (digits_plane(1, 1, &[0]), "digit base 1, not in 2..=16"),
        (digits_plane(17, 1, &[0]), "digit base 17"),
        (digits_plane(5, 1 << 40, &[0]), "declares"),
        (
            digits_plane(5, 2, &[0]),
            "declares 2 raw bytes, more than 1 (",
        ),
        (
            digits_plane(5, 1, &[125]),
            "packed byte 0 is 125, not below 125",
        ),
        (
            digits_plane(5, 1, &[5]),
            "digits set after the last packed value",
        ),
        (digits_plane(5, 1, &[0, 0]), "zstd"),
        (digits_plane(5, 1, &[]), "decompresses to 0 bytes, not 1"),
    ] {
        let e = WppFile::from_bytes(&file(plane)).unwrap_err();
        assert_eq!(stream_error(&e).map(|s| s.0), Some("REFS"), "{what}: {e}");
        assert!(e.to_string().contains(what), "{what}: {e}");
    }
    // Codec 5 is for planes only.
    let e = WppFile::from_bytes(&crafted_v2(
        &rule_v2(
            1,
            2,
            [
                digits_plane(4, 2, &[0b1010]),
                stored(&[TERM, TERM]),
                stored(&varints(&[0, 1])),
                stored(&[]),
            ],
        ),
        0,
    ))
    .unwrap_err();
    assert!(e.to_string().contains("unknown codec 5"), "{e}");
}

// ---- codec 3: `KINDS` packed four to a byte ----

/// A codec 3 `KINDS` stream of `raw` kinds whose packed bytes are `packed`.
fn packed_kinds(raw: u64, packed: &[u8]) -> Vec<u8> {
    let frame = zstd::bulk::compress(packed, 3).unwrap();
    let mut out = vec![3];
    write_varint(&mut out, raw);
    write_varint(&mut out, frame.len() as u64);
    out.extend_from_slice(&frame);
    out
}

#[test]
fn codec_3_kinds_read_back_and_are_checked_before_allocating() {
    let streams = |kinds: Vec<u8>| {
        let refs = stored(&[]);
        [stored(&[2]), kinds, stored(&varints(&[0, 1])), refs]
    };
    // Two terminals: kind 1 in bits 0-1 and 2-3.
    let file = crafted_v2(&rule_v2(1, 2, streams(packed_kinds(2, &[0b0101]))), 0);
    assert_eq!(
        expand_all(&WppFile::from_bytes(&file).unwrap()),
        vec![vec![0, 1]]
    );
    for (kinds, what) in [
        (packed_kinds(1 << 40, &[0b0101]), "declares"),
        (
            packed_kinds(2, &[0b01_0101]),
            "digits set after the last packed value",
        ),
        (packed_kinds(2, &[0b0101, 0]), "zstd"),
        (packed_kinds(2, &[]), "decompresses to 0 bytes, not 1"),
        (packed_kinds(1, &[0b01]), "has 1 bytes for 2 symbols"),
    ] {
        let e = WppFile::from_bytes(&crafted_v2(&rule_v2(1, 2, streams(kinds)), 0)).unwrap_err();
        assert_eq!(stream_error(&e).map(|s| s.0), Some("KINDS"), "{what}: {e}");
        assert!(e.to_string().contains(what), "{what}: {e}");
    }
    // Codec 3 is for `KINDS` only.
    for i in [0, 2, 3] {
        let mut s = streams(stored(&[TERM, TERM]));
        s[i] = packed_kinds(2, &[0b0101]);
        let e = WppFile::from_bytes(&crafted_v2(&rule_v2(1, 2, s), 0)).unwrap_err();
        assert!(e.to_string().contains("unknown codec 3"), "{e}");
    }
}

/// A stream of a `RULE` payload: its codec and where its stored bytes are.
type StreamAt = (u8, std::ops::Range<usize>);

/// A high-entropy file written as small as it goes: its bytes, its `RULE` payload, and the
/// payload's streams.
fn smallest(events: usize, seed: u64) -> (Vec<u8>, Vec<u8>, Vec<StreamAt>) {
    let bytes = high_entropy(events, seed)
        .to_bytes_with_level(wpp_grammar::file::SMALLEST_LEVEL)
        .unwrap();
    let payload = bytes[rule_payload_range(&bytes)].to_vec();
    let streams = rule_streams(&payload);
    (bytes, payload, streams)
}

#[test]
fn context_coded_streams_cut_short_or_lengthened_are_errors() {
    let (bytes, payload, streams) = smallest(6_000, 2);
    for (i, name) in [(1, "KINDS"), (3, "REFS")] {
        assert_eq!(streams[i].0, 2, "{name} is context-coded");
        let data = &payload[streams[i].1.clone()];
        let mut longer = data.to_vec();
        longer.push(0x55);
        let cuts = (0..data.len()).map(|cut| data[..cut].to_vec());
        for (n, changed) in cuts.chain([longer]).enumerate() {
            let file = with_rule_payload(&bytes, &with_stream(&payload, i, &changed));
            let e = WppFile::from_bytes(&file).unwrap_err();
            let (stream, msg) = stream_error(&e).unwrap_or_else(|| panic!("{name} {n}: {e}"));
            assert_eq!(stream, name, "{n}: {msg}");
            assert!(e.to_string().contains("byte offset"), "{e}");
        }
    }
}

#[test]
fn context_coded_streams_with_any_byte_changed_never_panic() {
    let (bytes, payload, streams) = smallest(4_000, 3);
    for i in [1, 3] {
        for at in streams[i].1.clone() {
            for x in [0x01, 0x80, 0xff] {
                let mut changed = payload.clone();
                changed[at] ^= x;
                if let Ok(f) = WppFile::from_bytes(&with_rule_payload(&bytes, &changed)) {
                    for s in f.grammar.starts() {
                        let _ = Expander::new(&f.grammar, s.rule).take(1000).count();
                    }
                }
            }
        }
    }
}

#[test]
fn codec_2_is_checked_before_allocating_and_only_for_kinds_and_refs() {
    let coded = |raw: u64, data: &[u8]| {
        let mut out = vec![2];
        write_varint(&mut out, raw);
        write_varint(&mut out, data.len() as u64);
        out.extend_from_slice(data);
        out
    };
    let lens = stored(&[2]);
    let kinds = stored(&[TERM, TERM]);
    let terms = stored(&varints(&[0, 1]));
    // Codec 2 for `LENS` or `TERMS` is unknown.
    for i in [0, 2] {
        let mut streams = [lens.clone(), kinds.clone(), terms.clone(), stored(&[])];
        streams[i] = coded(2, &[0, 0, 0, 0]);
        let e = WppFile::from_bytes(&crafted_v2(&rule_v2(1, 2, streams), 0)).unwrap_err();
        assert!(e.to_string().contains("unknown codec 2"), "{e}");
    }
    // Declared sizes beyond the ratio or the counts are refused before decoding.
    for (i, raw) in [(1, 1 << 40), (3, 1 << 40), (1, 5000), (3, 5000)] {
        let mut streams = [lens.clone(), kinds.clone(), terms.clone(), stored(&[])];
        streams[i] = coded(raw, &[0, 0, 0, 0]);
        let e = WppFile::from_bytes(&crafted_v2(&rule_v2(1, 2, streams), 0)).unwrap_err();
        assert!(e.to_string().contains("declares"), "{e}");
    }
    // `REFS` must declare exactly what the references need (here none).
    let streams = [
        lens.clone(),
        kinds.clone(),
        terms.clone(),
        coded(1, &[0, 0, 0, 0]),
    ];
    let e = WppFile::from_bytes(&crafted_v2(&rule_v2(1, 2, streams), 0)).unwrap_err();
    assert_eq!(stream_error(&e).map(|s| s.0), Some("REFS"), "{e}");
    // Two kinds coded: 4 bytes of the coder are enough for any two; the result must then be
    // valid kinds.
    let kinds_coded = coded(2, &[0, 0, 0, 0]);
    let streams = [lens, kinds_coded, terms, stored(&[])];
    let _ = WppFile::from_bytes(&crafted_v2(&rule_v2(1, 2, streams), 0));
}
