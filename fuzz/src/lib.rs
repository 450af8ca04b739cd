//! Shared harness code for the wpp fuzz targets: one function per target, so that the
//! libFuzzer binaries in `fuzz_targets/`, the seed generator and a plain replay driver all run
//! exactly the same checks.
//!
//! Each harness takes the raw fuzz input. Where a format is covered by CRC-32 checksums, the
//! first byte of the input is a *mode* byte: with bit 0 set the harness recomputes every
//! checksum before parsing, so that the fuzzer's mutations reach the decoders behind the
//! checksums instead of dying at the first checksum comparison; with bit 0 clear the bytes are
//! parsed exactly as given (which also exercises the checksum checks themselves).
//!
//! Besides "no panic, no hang, no huge allocation" (which libFuzzer watches), the harnesses check
//! oracles the readers promise:
//! * a streamed binary trace reads exactly like the same bytes in memory (same events, same
//!   error);
//! * whatever is accepted re-encodes and reads back to the same value;
//! * every error has a non-empty message, and trace errors that carry an offset point inside
//!   (or just past) the input.

#![forbid(unsafe_code)]

use std::io::Cursor;
use wpp_grammar::expand::Expander;
use wpp_grammar::file::WppFile;
use wpp_trace::file::{self, binary};
use wpp_trace::{Event, ProgramDb, TraceError, TraceReader};

/// How many terminals the `wpp_file` harness expands per start rule at most.
pub const EXPAND_CAP: usize = 1 << 20;
/// The largest CFG (nodes + edges) the `cfg_json` harness numbers.
pub const CFG_CAP: usize = 20_000;

/// Splits the mode byte off an input; `None` for an empty input.
fn mode(data: &[u8]) -> Option<(u8, &[u8])> {
    data.split_first().map(|(&m, rest)| (m, rest))
}

// ---------------------------------------------------------------------------------------------
// Checksum fix-ups
// ---------------------------------------------------------------------------------------------

fn word(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn put_word(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Recomputes every checksum of a binary trace (preamble, program database, chunk headers and
/// payloads) as far as the structure can be followed. Not-a-trace input is left alone.
pub fn fix_trace_crcs(b: &mut [u8]) {
    const PRE: usize = binary::PREAMBLE_LEN;
    if b.len() < PRE || b[..4] != binary::MAGIC {
        return;
    }
    // Versions 1 and 2: 16-byte chunk headers with the payload CRC at 8; 3: 24 bytes, at 16;
    // 4: 28 bytes, the sequence number at 16 (rewritten too) and the payload CRC at 20.
    let version = u16::from_le_bytes([b[4], b[5]]);
    let (hdr, payload_crc_at) = match version {
        1 | 2 => (binary::OLD_CHUNK_HEADER_LEN, 8),
        3 => (binary::V3_CHUNK_HEADER_LEN, 16),
        _ => (binary::CHUNK_HEADER_LEN, 20),
    };
    let mut sequence = 0u32;
    let db_len = word(b, 8) as usize;
    let db_end = PRE.saturating_add(db_len).min(b.len());
    let db_crc = crc32fast::hash(&b[PRE..db_end]);
    put_word(b, 12, db_crc);
    let pre_crc = crc32fast::hash(&b[..16]);
    put_word(b, 16, pre_crc);
    let mut at = PRE.saturating_add(db_len);
    while at.checked_add(hdr).is_some_and(|end| end <= b.len()) {
        let len = word(b, at) as usize;
        let payload = at + hdr;
        let end = payload.saturating_add(len).min(b.len());
        if len != 0 {
            let crc = crc32fast::hash(&b[payload..end]);
            put_word(b, at + payload_crc_at, crc);
        }
        if hdr == binary::CHUNK_HEADER_LEN {
            put_word(b, at + 16, sequence);
            sequence = sequence.wrapping_add(1);
        }
        let hcrc = crc32fast::hash(&b[at..at + hdr - 4]);
        put_word(b, at + hdr - 4, hcrc);
        at = payload.saturating_add(len);
    }
}

/// Reads an unsigned LEB128 varint at `*pos` (for walking `.wpp` sections); `None` if cut.
fn varint(b: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..10 {
        let byte = *b.get(*pos)?;
        *pos += 1;
        v |= u64::from(byte & 0x7f).checked_shl(7 * i).unwrap_or(0);
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Recomputes the checksum of every `.wpp` section as far as the sections can be followed.
pub fn fix_wpp_crcs(b: &mut [u8]) {
    if b.len() < 8 || b[..4] != wpp_grammar::file::MAGIC {
        return;
    }
    let mut pos = 8;
    while pos + 4 <= b.len() {
        pos += 4;
        let Some(len) = varint(b, &mut pos) else {
            return;
        };
        let Some(end) = usize::try_from(len).ok().and_then(|l| pos.checked_add(l)) else {
            return;
        };
        if end.checked_add(4).is_none_or(|e| e > b.len()) {
            return;
        }
        let crc = crc32fast::hash(&b[pos..end]);
        put_word(b, end, crc);
        pos = end + 4;
    }
}

// ---------------------------------------------------------------------------------------------
// Traces
// ---------------------------------------------------------------------------------------------

/// Everything one read of a trace produced: the database, the events before the first error,
/// and that error's message.
#[derive(Debug, PartialEq)]
pub struct TraceOutcome {
    pub program: Option<ProgramDb>,
    pub events: Vec<Event>,
    pub error: Option<String>,
    pub truncation: Option<(u64, u64)>,
}

fn check_error(e: &TraceError, input_len: usize) -> String {
    let msg = e.to_string();
    assert!(!msg.is_empty(), "empty error message: {e:?}");
    if let Some(off) = e.offset() {
        assert!(
            off <= input_len as u64,
            "error offset {off} is past the end of a {input_len}-byte input: {msg}"
        );
    }
    msg
}

/// Reads a trace completely: iterating event by event, the way most callers do.
fn read_trace(reader: Result<TraceReader, TraceError>, input_len: usize) -> TraceOutcome {
    let mut r = match reader {
        Ok(r) => r,
        Err(e) => {
            return TraceOutcome {
                program: None,
                events: Vec::new(),
                error: Some(check_error(&e, input_len)),
                truncation: None,
            }
        }
    };
    let program = Some(r.program().clone());
    let mut events = Vec::new();
    let mut error = None;
    for item in r.by_ref() {
        match item {
            Ok(e) => events.push(e),
            Err(e) => {
                error = Some(check_error(&e, input_len));
                break;
            }
        }
    }
    // The iterator ends after its first error.
    assert!(r.next().is_none(), "the reader yielded more after its end");
    TraceOutcome {
        program,
        events,
        error,
        truncation: r.truncation().map(|t| (t.offset, t.events)),
    }
}

/// The `trace_binary` harness: mode bit 0 fixes checksums, bit 1 allows truncation. The bytes
/// are read from memory (iterating), from a stream, and with `read_all`; all three must agree,
/// and an accepted trace must re-encode and read back to the same events and database.
pub fn trace_binary(data: &[u8]) {
    let Some((mode, rest)) = mode(data) else {
        return;
    };
    let mut bytes = rest.to_vec();
    if mode & 1 != 0 {
        fix_trace_crcs(&mut bytes);
    }
    let allow = mode & 2 != 0;
    let n = bytes.len();
    // Blocks recorded as paths are read as users read them: decoded to blocks.
    let decoding = wpp_paths::trace::decoding;
    let whole = read_trace(
        TraceReader::from_bytes(bytes.clone())
            .and_then(decoding)
            .map(|r| r.allow_truncated(allow)),
        n,
    );
    let stream = read_trace(
        TraceReader::from_reader(Cursor::new(bytes.clone()))
            .and_then(decoding)
            .map(|r| r.allow_truncated(allow)),
        n,
    );
    assert_eq!(
        whole, stream,
        "a streamed trace reads differently from the same bytes in memory"
    );
    let all = TraceReader::from_bytes(bytes)
        .and_then(decoding)
        .and_then(|r| r.allow_truncated(allow).read_all());
    match (&all, &whole.error) {
        (Ok(events), None) => assert_eq!(events, &whole.events),
        (Err(e), Some(msg)) => assert_eq!(&e.to_string(), msg),
        _ => panic!(
            "read_all and iteration disagree: {all:?} vs {:?}",
            whole.error
        ),
    }
    if let (Some(db), None) = (&whole.program, &whole.error) {
        round_trip(db, &whole.events);
        // Decoding paths through hostile CFGs gives blocks or an error, never a panic.
        let _ = wpp_paths::trace::decode_trace(db, &whole.events);
    }
}

/// An accepted trace re-encodes (binary and text) and reads back to the same events.
fn round_trip(db: &ProgramDb, events: &[Event]) {
    let bin = file::to_binary(db, events).expect("encoding an accepted trace");
    let r = TraceReader::from_bytes(bin).expect("re-reading a re-encoded binary trace");
    assert_eq!(
        r.program(),
        db,
        "binary round trip changed the program database"
    );
    assert_eq!(
        r.read_all().expect("re-reading a re-encoded binary trace"),
        events
    );
    let text = file::to_text(db, events).expect("encoding an accepted trace as text");
    let r = TraceReader::from_bytes(text).expect("re-reading a re-encoded text trace");
    assert_eq!(
        r.program().functions.len(),
        db.functions.len(),
        "text round trip changed the number of functions"
    );
    assert_eq!(
        r.read_all().expect("re-reading a re-encoded text trace"),
        events
    );
}

/// The `trace_text` harness: the input is a text trace (inputs starting with the binary magic
/// are the other target's business). Iteration and `read_all` must agree, and an accepted trace
/// must round-trip.
pub fn trace_text(data: &[u8]) {
    if data.starts_with(&binary::MAGIC) {
        return;
    }
    let n = data.len();
    let whole = read_trace(TraceReader::from_bytes(data.to_vec()), n);
    let stream = read_trace(TraceReader::from_reader(Cursor::new(data.to_vec())), n);
    assert_eq!(whole, stream, "a streamed text trace reads differently");
    if let (Some(db), None) = (&whole.program, &whole.error) {
        round_trip(db, &whole.events);
        // Text to text keeps the database exactly.
        let text = file::to_text(db, &whole.events).unwrap();
        let r = TraceReader::from_bytes(text).unwrap();
        assert_eq!(
            r.program(),
            db,
            "text round trip changed the program database"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// .wpp files
// ---------------------------------------------------------------------------------------------

/// The `wpp_file` harness: mode bit 0 fixes section checksums. An accepted file must encode
/// back to a file that reads as the same value; every start rule is expanded (at most
/// [`EXPAND_CAP`] terminals) and must yield exactly `min(expanded_len, cap)` terminals inside
/// the alphabet; `check` must not panic.
pub fn wpp_file(data: &[u8]) {
    let Some((mode, rest)) = mode(data) else {
        return;
    };
    let mut bytes = rest.to_vec();
    if mode & 1 != 0 {
        fix_wpp_crcs(&mut bytes);
    }
    let file = match WppFile::from_bytes(&bytes) {
        Ok(f) => f,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    let g = &file.grammar;
    for s in g.starts() {
        let want = g.expanded_len(s.rule).min(EXPAND_CAP as u64);
        let mut got = 0u64;
        for t in Expander::new(g, s.rule).take(EXPAND_CAP) {
            assert!(
                file.alphabet.event(t).is_some(),
                "terminal {t:?} outside the alphabet"
            );
            got += 1;
        }
        assert_eq!(got, want, "expansion length of start rule {:?}", s.rule);
        if want > 0 {
            let _ = wpp_grammar::expand::terminal_at(g, s.rule, want - 1)
                .expect("the last expanded position exists");
        }
    }
    let _ = wpp_grammar::check::check(g);
    let again = file.to_bytes().expect("encoding an accepted file");
    let back = WppFile::from_bytes(&again).expect("re-reading a re-encoded file");
    assert_eq!(back, file, ".wpp round trip changed the file");
}

// ---------------------------------------------------------------------------------------------
// CFG JSON
// ---------------------------------------------------------------------------------------------

/// The `cfg_json` harness: parse, build each function's DAG, number it (plainly and with
/// automatic cuts), and decode/encode a few path ids.
pub fn cfg_json(data: &[u8]) {
    use wpp_paths::{number_with_cuts, BallLarus, CfgFile, Dag, PathId};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let cfgs = match CfgFile::parse(text) {
        Ok(c) => c,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    for cfg in cfgs {
        if cfg.nodes.len() + cfg.edges.len() > CFG_CAP {
            continue;
        }
        let dag = match Dag::build(&cfg) {
            Ok(d) => d,
            Err(e) => {
                assert!(!e.to_string().is_empty());
                continue;
            }
        };
        match BallLarus::number(&dag) {
            Ok(bl) => {
                let n = bl.path_count();
                for id in [0, n / 3, n / 2, n.saturating_sub(1)] {
                    if id >= n {
                        continue;
                    }
                    let path = bl
                        .decode(&dag, PathId(id))
                        .expect("decoding an id below the count");
                    let back = bl
                        .encode_edges(&dag, &path.edges)
                        .expect("encoding a decoded path");
                    assert_eq!(back, PathId(id), "decode/encode round trip");
                }
                assert!(bl.decode(&dag, PathId(n)).is_err());
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
        let mut cut = cfg.clone();
        match number_with_cuts(&mut cut) {
            Ok((dag, bl)) => {
                let n = bl.path_count();
                if n > 0 {
                    let path = bl
                        .decode(&dag, PathId(n - 1))
                        .expect("decoding the last id");
                    let back = bl.encode_edges(&dag, &path.edges).expect("encoding it");
                    assert_eq!(back, PathId(n - 1));
                }
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Profiles
// ---------------------------------------------------------------------------------------------

/// The `profiles` harness: the mode byte picks the reader (compact Ball–Larus, compact PPP,
/// JSON Ball–Larus, JSON PPP); an accepted profile must merge with itself, report residuals,
/// and round-trip through its encoding.
pub fn profiles(data: &[u8]) {
    use wpp_paths::{BlProfile, PppProfile};
    let Some((mode, rest)) = mode(data) else {
        return;
    };
    match mode % 4 {
        0 | 2 => {
            let p = if mode % 4 == 0 {
                BlProfile::from_bytes(rest)
            } else {
                match std::str::from_utf8(rest) {
                    Ok(s) => serde_json::from_str(s).map_err(wpp_paths::Error::from),
                    Err(_) => return,
                }
            };
            let Ok(p) = p else { return };
            let mut m = p.clone();
            m.merge(&p);
            for f in p.functions.keys() {
                let _ = p.residual(f, &[0, 1]);
            }
            let bytes = p.to_bytes().expect("encoding an accepted profile");
            assert_eq!(BlProfile::from_bytes(&bytes).expect("re-reading"), p);
        }
        _ => {
            let p = if mode % 4 == 1 {
                PppProfile::from_bytes(rest)
            } else {
                match std::str::from_utf8(rest) {
                    Ok(s) => serde_json::from_str(s).map_err(wpp_paths::Error::from),
                    Err(_) => return,
                }
            };
            let Ok(p) = p else { return };
            if mode % 4 == 1 {
                // The compact reader validates; JSON callers must call `validate` themselves.
                p.validate()
                    .expect("an accepted compact PPP profile is valid");
            } else if p.validate().is_err() {
                return;
            }
            let mut m = p.clone();
            m.merge(&p).expect("a valid profile merges with itself");
            let _ = p.residual();
            let bytes = p.to_bytes().expect("encoding an accepted profile");
            assert_eq!(PppProfile::from_bytes(&bytes).expect("re-reading"), p);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Index builders, the run-time profile file, the program database
// ---------------------------------------------------------------------------------------------

/// The `trace_index` harness: a trace (either format; bit 0 of the mode byte fixes a binary
/// trace's checksums and sequence numbers) is fed, as the commands do, to `trace chunk`'s
/// chunked container and to `compress --index`'s scheme 4 partition index. An accepted trace
/// must index without a panic or an allocation sized by an id (the readers bound ids by the
/// program database), and the chunked container must read back to the same events per thread.
pub fn trace_index(data: &[u8]) {
    use wpp_query::matching::chunked::{ChunkWriter, ChunkedTrace, Codec};
    let Some((mode, rest)) = mode(data) else {
        return;
    };
    let mut bytes = rest.to_vec();
    if mode & 1 != 0 {
        fix_trace_crcs(&mut bytes);
    }
    let Ok(r) = TraceReader::from_bytes(bytes) else {
        return;
    };
    let db = r.program().clone();
    let Ok(events) = r.allow_truncated(true).read_all() else {
        return;
    };
    let mut w = ChunkWriter::new(Vec::new(), &db, Codec::Zstd(1), 64).expect("in memory");
    events.iter().for_each(|&e| w.push(e).expect("in memory"));
    let (chunked, _) = w.finish().expect("in memory");
    let mut t = ChunkedTrace::open(Cursor::new(chunked)).expect("re-reading a chunked trace");
    // Chunks hold one thread's events each (without `Thread` events): per thread, in file
    // order, they must give that thread's stream.
    let mut back: std::collections::BTreeMap<_, Vec<Event>> = Default::default();
    for c in 0..t.chunks.len() {
        let thread = t.threads[t.chunks[c].thread as usize];
        let mut run = Vec::new();
        t.events(c, &mut run).expect("re-reading a chunk");
        back.entry(thread).or_default().extend(run);
    }
    assert_eq!(
        back,
        wpp_trace::split_threads(&events),
        "the chunked container changed the events"
    );
    let mut c =
        wpp_grammar::trace::TraceCompressor::new(wpp_grammar::Algorithm::Sequitur, None, db);
    if c.push_batch(&events).is_err() {
        return;
    }
    let Ok(wpp) = c.finish() else { return };
    wpp_query::matching::partition::index_section(&wpp.grammar, &wpp.alphabet)
        .expect("indexing an accepted trace's grammar");
}

/// The `profile_file` harness: `wpp profile`'s reader of run-time profiles (`.blprof`,
/// `.pppprof`). An accepted file merges with itself, folds its path counts, and re-encodes to
/// the same file; every error names a byte offset.
pub fn profile_file(data: &[u8]) {
    use wpp_abi::profile::ProfileFile;
    match ProfileFile::from_bytes(data) {
        Ok(p) => {
            let mut m = p.clone();
            let _ = m.merge(&p);
            let _ = p.path_counts();
            assert_eq!(
                ProfileFile::from_bytes(&p.to_bytes()).expect("re-reading"),
                p
            );
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.contains("byte offset"), "no position in: {msg}");
        }
    }
}

/// The `program_db` harness: the program database reader on its own (both layouts, by the
/// mode byte's bit 0); an accepted database re-encodes and reads back equal, and an error's
/// offset lies inside the input.
pub fn program_db(data: &[u8]) {
    use wpp_trace::DbLayout;
    let Some((mode, rest)) = mode(data) else {
        return;
    };
    let layout = match mode & 1 {
        0 => DbLayout::WithCfgs,
        _ => DbLayout::WithoutCfgs,
    };
    match ProgramDb::from_bytes(rest, 100, layout) {
        Ok(db) => {
            if layout == DbLayout::WithCfgs {
                let bytes = db.to_bytes().expect("encoding an accepted database");
                let back = ProgramDb::from_bytes(&bytes, 0, layout).expect("re-reading");
                assert_eq!(back, db);
            }
        }
        Err(e) => assert!(
            (100..=100 + rest.len() as u64).contains(&e.offset),
            "offset {} outside the input: {}",
            e.offset,
            e.message
        ),
    }
}

/// Accesses of an address trace the `deps_files` harness replays at most.
pub const DEPS_CAP: usize = 1 << 16;

/// The `deps_files` harness: the readers of `wpp deps`. Mode bit 1 picks the address trace
/// (`.at`, `wpp_deps::at::AtReader`, its accesses replayed through the dependence recovery,
/// at most [`DEPS_CAP`]) or the filtering run's report (`.depf`,
/// `wpp_deps::filter::FilterReport::from_bytes`; bit 0 recomputes its CRC-32). An accepted
/// report re-encodes and reads back equal, and its pairs map to its own modules; a report's errors
/// name a byte offset, an address trace's its file.
pub fn deps_files(data: &[u8]) {
    let Some((mode, rest)) = mode(data) else {
        return;
    };
    match mode & 2 {
        0 => deps_report(mode & 1 == 1, rest),
        _ => deps_at(rest),
    }
}

fn deps_report(fix: bool, rest: &[u8]) {
    use wpp_deps::filter::FilterReport;
    let mut b = rest.to_vec();
    if fix && b.len() >= 16 {
        let len = word(&b, 12) as usize;
        if let Some(body) = b.get(16..16 + len) {
            let crc = crc32fast::hash(body);
            if b.len() >= 20 + len {
                put_word(&mut b, 16 + len, crc);
            }
        }
    }
    match FilterReport::from_bytes(&b, "fuzz.depf") {
        Ok(r) => {
            let back = FilterReport::from_bytes(&r.to_bytes(), "again").expect("re-reading");
            assert_eq!(
                back, r,
                "an accepted report re-encodes and reads back equal"
            );
            let first = r.module_ranges().iter().map(|m| (m.crc, m.first)).collect();
            for m in r.module_ranges() {
                for p in r.pairs_of_module(m.crc, &first) {
                    assert!(p.load >= m.first && p.load - m.first < m.instructions);
                }
            }
        }
        Err(e) => assert!(e.to_string().contains("byte offset"), "{e}"),
    }
}

fn deps_at(rest: &[u8]) {
    use wpp_deps::at::AtReader;
    let r = match AtReader::new(Cursor::new(rest), "fuzz.at") {
        Ok(r) => r,
        Err(e) => return assert!(e.to_string().contains("fuzz.at"), "{e}"),
    };
    let db = r.db().clone();
    let mut left = DEPS_CAP;
    let runs = r.map(|run| {
        run.map(|mut run| {
            run.accesses.truncate(left);
            left -= run.accesses.len();
            run
        })
    });
    if let Err(e) = wpp_deps::recover(&db, runs, |_| {}) {
        assert!(!e.to_string().is_empty());
    }
}
