//! The `.wpp` file: a whole program path — grammar, alphabet and program database — on disk.
//!
//! # Layout (version 3)
//!
//! All integers are unsigned LEB128 varints ([`wpp_trace::wire`]) unless marked `u32le`/`u8`.
//!
//! ```text
//! file    = "WPPG" version:u32le section*
//! section = tag:[u8; 4] length payload:[u8; length] crc32(payload):u32le
//! ```
//!
//! Sections come in this order: `META`, `PROG`, `ALPH`, `RULE`, `STRT`, then any number of
//! *extra* sections with other tags (kept verbatim in [`WppFile::extra`]; the query crate stores
//! its index there), then `END ` with an empty payload. Nothing may follow `END `, so a file cut
//! at a section boundary is still detected as truncated.
//!
//! | section | payload |
//! |---|---|
//! | `META` | algorithm code (`u8`: 0 sequitur, 1 sequitur1, 2 frequency, 3 phrase), trace events, threads |
//! | `PROG` | one stream (below) holding the [`ProgramDb`]: postcard of names and locations, then the CFG table ([`wpp_trace::program`]); at most 64 MiB decompressed |
//! | `ALPH` | event count, then per event a kind byte and its operand: 0 `Enter(f)`, 1 `Leave` (no operand), 2 `Block(b)`, 3 `Path(p)`, 4 `Thread(t)`; terminal `i` is the `i`-th event |
//! | `RULE` | rule count, symbol count, then four streams `LENS`, `KINDS`, `TERMS`, `REFS` (below) |
//! | `STRT` | start-rule count; per start rule its thread id and rule id |
//!
//! "Trace events" is the event count of the source trace as recorded, `Thread` switches
//! included; it is informational and not checked against the grammar.
//!
//! ## The `RULE` streams
//!
//! Rules are written as a sequence of *definitions*. A definition is a body length (in `LENS`)
//! followed by its body's symbols, each a byte in `KINDS`: `1` a terminal (its id next in
//! `TERMS`), `2` a reference to an already defined rule (its *distance* next in `REFS`: how
//! far back from the newest defined rule, `0` for the newest), or `0` a *new* rule whose
//! definition follows at once, inline. Rules get their ids in the order their definitions *end* (depth-first
//! post-order), so a body only ever refers to lower ids. Top-level definitions follow each
//! other until the rule count is reached; `LENS`, `KINDS`, `TERMS` must then be used up
//! exactly, and `KINDS` has exactly one byte per symbol. `LENS` and `TERMS` are varints.
//!
//! A distance is a little-endian number of `w` bytes, where `w` is the fewest bytes that hold
//! `n − 1` for the `n` rules defined at that point (1 up to 256 rules, 2 up to 65,536, …; the
//! distance must be below `n`). `REFS` stores these bytes in *planes*: first byte 0 of every
//! distance, in order, then byte 1 of every distance with `w ≥ 2`, then byte 2 of those with
//! `w ≥ 3`, then byte 3; its length must be exactly the sum. (Planes separate the nearly
//! uniform low bytes from the skewed high ones, which zstd then codes 10% smaller than
//! varints.)
//!
//! The writer makes the start rules the top-level definitions when the grammar is numbered in
//! their depth-first post-order — SEQUITUR's numbering — so each rule's first use defines it and
//! costs no id; otherwise (e.g. Re-Pair's numbering) every rule is its own top-level definition
//! in id order and no `0` kinds occur. Either way the grammar reads back with the same ids.
//! Expanded lengths and use counts are not stored (version 1 stored them): they follow from the
//! bodies, and the reader recomputes them.
//!
//! ```text
//! stream = 0:u8 length bytes:[u8; length]                      stored
//!        | 1:u8 raw_length length zstd:[u8; length]            one zstd frame
//!        | 2:u8 raw_length length coded:[u8; length]           context-mixing coder (KINDS, REFS)
//!        | 3:u8 raw_length length zstd:[u8; length]            KINDS packed, one zstd frame
//!        | 4:u8 raw_length stream stream stream stream         REFS by plane (codec 0, 1 or 5 each)
//!        | 5:u8 base:u8 raw_length length zstd:[u8; length]    a plane packed as digits
//! ```
//!
//! Codec 3 is `KINDS` only: `raw_length` kinds packed four to a byte, two
//! bits each with the first in the low bits, and the `⌈raw_length / 4⌉` packed bytes
//! compressed as one zstd frame; the bits after the last kind are zero. The writer uses it for
//! every `KINDS` longer than 32 bytes: zstd at level 19 searches a quarter of the bytes, 3.5–5×
//! faster, and the stream comes out 7–12 % smaller.
//!
//! Codec 4 is `REFS` only: its four byte planes, each a stream of codec 0, 1 or 5 of its own,
//! whose raw lengths add up to `raw_length`. The writer uses it for every `REFS` longer than
//! 32 bytes and compresses a plane at zstd's fastest level when that cannot shrink it by 3 %
//! (the low bytes of wide distances, nearly uniform: searching them at level 19 was a third of
//! the stream's time for nothing).
//!
//! Codec 5 (since this build) is a plane of codec 4 only: `raw_length` bytes, each below
//! `base` (2 to 16), packed as base-`base` digits, as many to a byte as fit (8 for base 2, 5
//! for 3, 4 for 4, 3 for 5 and 6, else 2) with the first in the lowest digit, and the packed
//! bytes compressed as one zstd frame. A packed byte must be below `base` to the power of its
//! digits, and the digits after the last byte are zero. Codec 3 is the same packing with base
//! 4 and no base byte. The writer uses it for every plane longer than 32 bytes whose values
//! are all below 16: the top plane, the top byte of wide distances, holds 4–5 values on real
//! and high-entropy traces, and zstd's level 19 on it took a third of `wpp compress`'s time
//! there; packed, 4–8× less, and the plane comes out 1–10 % smaller.
//!
//! Codec 2 (since this build; files without it read as before) is an adaptive binary
//! arithmetic coder with context mixing (`file/model.rs` documents the models). For `KINDS`,
//! each byte (below 4) is two bits in the context of the 1–16 kinds before it. For `REFS`, each
//! reference is coded as its rule id in the context of what precedes it in expansion order —
//! the previous symbols, their last terminals, and the function it runs in, from a call stack
//! kept with each rule's net `Enter`/`Leave` effect over the alphabet of `ALPH` (none in a
//! version 4 segment, whose alphabet comes later) — so `REFS` is decoded after the other three
//! streams, walking their structure; its `raw_length` must equal the byte planes' length the
//! references need. The writer tries codec 2 for these two streams only when asked for the
//! smallest file (level [`SMALLEST_LEVEL`], `wpp compress --smallest`) and keeps whichever of
//! stored, zstd and codec 2 is smallest. It is slow, ~1.5 MB of raw stream per second each
//! way, against zstd's hundreds: on the high-entropy traces where it wins (zlib paths:
//! 1.93 MB for 2.35 MB) reading the file takes seconds, so it is for archives, not for files
//! queried often.
//!
//! A zstd stream must decompress to exactly `raw_length` bytes, and `raw_length` may be at most
//! `1024 × length` and at most what the counts allow (`LENS` 5 bytes per rule, `KINDS` one
//! byte per symbol, `TERMS` 5 and `REFS` 4 bytes per symbol; `PROG`'s stream 64 MiB); the
//! writer (zstd level 19 by default, `wpp compress` 3 for large grammars: [`balanced_level`];
//! any level reads the same) stores a stream as is when zstd
//! would not make it smaller or would exceed the ratio, and always for streams of at most 32
//! bytes. (The program database is a stream because its CFG table is a third of a small
//! recording's `.wpp` stored, and zstd takes a third of that.)
//!
//! # Worked example
//!
//! The block trace `B0 B1 B0 B1` of one function `main` with CFG block 0 → 1 → 0 (block 1
//! returns), compressed by SEQUITUR to `R1 → R0 R0`, `R0 → t0 t1` (thread 0 starts at `R1`),
//! is these 115 bytes:
//!
//! ```text
//! 57 50 50 47  03 00 00 00                       "WPPG", version 3
//! 4d 45 54 41  03  00 04 01  80 2c 2a ec         META: sequitur, 4 events, 1 thread
//! 50 52 4f 47  17  00 15                         PROG: stored stream of 21 bytes:
//!              01 04 6d 61 69 6e 00 00 00          1 function: "main", file None,
//!                                                      line None, no block lines;
//!              01 01 02 00  01 02  01 01           CFG table: 1 entry, present, 2 blocks,
//!                                                      entry 0; block 0 → +1, block 1 → −1
//!              01 02  00  00                       exits [1], no cut nodes or edges
//!              74 36 a8 56                         checksum
//! 41 4c 50 48  05  02 02 00 02 01  e2 3e da 53   ALPH: 2 events: Block(0), Block(1)
//! 52 55 4c 45  13  02 04                         RULE: 2 rules, 4 symbols
//!              00 02  02 02                         LENS stored, 2 bytes: R1 has 2 symbols,
//!                                                     then (inline) R0 has 2
//!              00 04  00 01 01 02                   KINDS stored, 4 bytes: new (R0 is defined
//!                                                     here: t t), then a reference
//!              00 02  00 01                         TERMS stored, 2 bytes: t0 t1
//!              00 01  00                            REFS stored, 1 byte: distance 0 (1 byte, as
//!                                                     1 rule is defined) → R0
//!              97 fc a9 3e                          checksum
//! 53 54 52 54  03  01 00 01  b3 83 84 89         STRT: 1 start: thread 0 → R1
//! 45 4e 44 20  00  00 00 00 00                   END, empty payload (crc32 of nothing is 0)
//! ```
//!
//! R0's definition ends first, so it is rule 0; R1 is rule 1. The test `worked_example_bytes`
//! pins these bytes; a layout change must bump [`VERSION`].
//!
//! # Version 4: segments
//!
//! A recording too long to hold its grammar in memory is written in segments, each a version 3
//! `RULE` and `STRT` payload in a `SEGM` section, with `META`, `PROG` and `ALPH` after the last
//! ([`segments`'s documentation](SegmentWriter) has the layout; the reader joins the segments
//! into one grammar). A file of one segment is version 3.
//!
//! # Versions 1 and 2
//!
//! Files of both still read (users hold them); this build writes versions 3 and 4 only. Version 2
//! differs only in `PROG`, which holds the postcard part alone, as is (no stream header, no
//! CFG table): the example
//! above in version 2 is 101 bytes, with `PROG` = `50 52 4f 47 09 01 04 6d 61 69 6e 00 00 00
//! c1 6a 2a 13` (test `version_2_worked_example_still_reads`). Version 1 is version 2 but
//! for `RULE`: rule count; per rule, bottom-up: body length, expanded length, body
//! symbols (`2t` for terminal `t`, `2r + 1` for rule `r`); then one use count per rule. The
//! reader checks the stored lengths and counts against the recomputed ones. The version 2
//! example in version 1 is 93 bytes, with `RULE` = `52 55 4c 45 0b 02 02 02 00 02 02 04 01 01 02 00
//! a4 89 77 bd` (test `version_1_worked_example_still_reads`).
//!
//! # Validation
//!
//! [`WppFile::from_bytes`] trusts nothing: every section's checksum; every count against the
//! bytes left before allocating; rule references strictly below the referring rule (so there
//! are no cycles); terminals inside the alphabet; expanded lengths recomputed with checked
//! 64-bit arithmetic (and, in version 1, equal to the stored ones, as are the use counts); no
//! reference to a rule that expands to nothing (so expansion visits O(terminals) bodies);
//! start rules in range, unreferenced, one per thread, as many as `META` says; at most
//! 2^31 − 1 rules and 2^31 alphabet entries, so ids fit a [`Symbol`]; nothing after `END `.
//! A zstd stream is decompressed into a buffer of its declared size only after that size is
//! checked against the ratio and count bounds above; corrupt or truncated zstd data, or a
//! wrong size, is a [`WppError::Stream`] naming the stream and its offset. So is a codec-2
//! stream cut short (its decoder would read past its end), with bytes left over, or decoding
//! to a reference to a rule not yet defined; its model's tables grow with the declared size,
//! to at most 1024 times the coded bytes and 8 × 16 MiB.
//! Every error names the section or item and the absolute byte offset; inside a compressed
//! stream, where bytes have no file offset, it is the offset of the stream's stored bytes. No
//! allocation is larger than a constant times the file's size (1024 × for decompressed
//! streams). [`WppFile::read`] memory-maps files of 1 MiB or more.

use std::fs::File;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashSet;
use wpp_trace::wire::{write_varint, Reader, WireError, WireErrorKind};
use wpp_trace::{
    Alphabet, BlockId, DbLayout, Event, FunctionId, PathId, ProgramDb, Terminal, ThreadId,
};

use crate::algorithm::Algorithm;
use crate::grammar::{Grammar, GrammarError, RuleId, StartRule};
use crate::symbol::{Symbol, SymbolKind};

mod digits;
mod model;
mod rules;
pub use rules::SMALLEST_LEVEL;
#[doc(hidden)]
pub use rules::{modeled_refs, raw_streams};
mod segments;

pub use segments::{
    read_segments, segment_table, SegmentInfo, SegmentWriter, Written, SEGMENTED_VERSION,
};

/// The first four bytes of every `.wpp` file.
pub const MAGIC: [u8; 4] = *b"WPPG";
/// The layout version this build writes for a grammar in one segment ([`SEGMENTED_VERSION`]
/// for several, the newest it reads).
pub const VERSION: u32 = 3;
/// The oldest layout version this build reads.
pub const OLDEST_VERSION: u32 = 1;

const META: [u8; 4] = *b"META";
const PROG: [u8; 4] = *b"PROG";
const ALPH: [u8; 4] = *b"ALPH";
const RULE: [u8; 4] = *b"RULE";
const STRT: [u8; 4] = *b"STRT";
const END: [u8; 4] = *b"END ";
const RESERVED: [[u8; 4]; 6] = [META, PROG, ALPH, RULE, STRT, END];

/// Files at least this large are memory-mapped by [`WppFile::read`] rather than read.
const MMAP_THRESHOLD: u64 = 1 << 20;

/// An opaque section carried along for other tools (e.g. a query index).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    /// Four-byte tag; must not be one of the tags this module reserves.
    pub tag: [u8; 4],
    /// The payload.
    pub data: Vec<u8>,
}

/// The contents of a `.wpp` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WppFile {
    /// What the trace's ids refer to.
    pub program: ProgramDb,
    /// The events the grammar's terminals stand for.
    pub alphabet: Alphabet,
    /// The grammar; after reading, over exactly `alphabet.len()` terminals.
    pub grammar: Grammar,
    /// The compressor that built the grammar.
    pub algorithm: Algorithm,
    /// Number of events in the source trace.
    pub events: u64,
    /// Sections this crate does not interpret, in file order.
    pub extra: Vec<Section>,
}

/// A tag shown as text where printable.
struct TagName([u8; 4]);

impl std::fmt::Display for TagName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`", self.0.escape_ascii())
    }
}

fn tag(t: &[u8; 4]) -> TagName {
    TagName(*t)
}

/// Why a `.wpp` file could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WppError {
    /// The file system failed.
    #[error("I/O error on {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
    /// A value could not be read (truncated, overlong or out of range).
    #[error(transparent)]
    Wire(#[from] WireError),
    /// The file does not start with `WPPG`.
    #[error("not a .wpp file: bad magic at byte offset 0")]
    BadMagic,
    /// The version is not one this build reads.
    #[error(
        "unsupported .wpp version {found} at byte offset 4 (this build reads versions {OLDEST_VERSION} to {VERSION})"
    )]
    UnsupportedVersion {
        /// The version in the file.
        found: u32,
    },
    /// A required section is missing or out of order.
    #[error(
        "expected section {} at byte offset {offset}, found {}",
        tag(expected),
        tag(found)
    )]
    UnexpectedSection {
        /// The section that should be there.
        expected: [u8; 4],
        /// The tag found.
        found: [u8; 4],
        /// Offset of the tag.
        offset: u64,
    },
    /// A section's payload does not match its checksum.
    #[error("checksum mismatch in section {} (payload at byte offset {offset}): stored {stored:#010x}, computed {computed:#010x}", tag(section))]
    Checksum {
        /// The section.
        section: [u8; 4],
        /// Offset of the payload.
        offset: u64,
        /// The checksum in the file.
        stored: u32,
        /// The checksum of the payload.
        computed: u32,
    },
    /// A section's payload has bytes its contents do not account for.
    #[error("section {} has unread bytes at byte offset {offset}", tag(section))]
    SectionTooLong {
        /// The section.
        section: [u8; 4],
        /// Offset of the first unread byte.
        offset: u64,
    },
    /// The program database does not deserialize.
    #[error("bad program database in section `PROG` at byte offset {offset}: {message}")]
    ProgramDb {
        /// Offset of the payload.
        offset: u64,
        /// The deserializer's message.
        message: String,
    },
    /// The algorithm code is unknown.
    #[error("unknown algorithm code {code} at byte offset {offset}")]
    UnknownAlgorithm {
        /// The code.
        code: u8,
        /// Its offset.
        offset: u64,
    },
    /// An alphabet entry has an unknown kind byte.
    #[error("unknown event kind {kind} at byte offset {offset}")]
    BadEventKind {
        /// The kind byte.
        kind: u8,
        /// Its offset.
        offset: u64,
    },
    /// The alphabet lists an event twice.
    #[error("alphabet entry {index} repeats an earlier event (byte offset {offset})")]
    DuplicateEvent {
        /// The entry's terminal.
        index: u32,
        /// Its offset.
        offset: u64,
    },
    /// A rule refers to itself or a later rule (a cycle or forward reference).
    #[error("rule {rule} refers to rule {target}, which is not below it (byte offset {offset})")]
    ForwardReference {
        /// The referring rule.
        rule: u32,
        /// The referenced rule.
        target: u64,
        /// Offset of the symbol.
        offset: u64,
    },
    /// A rule refers to a rule whose expansion is empty. Only start rules may be empty (a
    /// thread that recorded nothing); a referenced empty rule adds nothing to the trace, but
    /// chains of them make expansion walk exponentially many empty bodies.
    #[error(
        "rule {rule} refers to rule {target}, which expands to nothing (byte offset {offset})"
    )]
    EmptyRuleReference {
        /// The referring rule.
        rule: u32,
        /// The empty rule.
        target: u64,
        /// Offset of the symbol.
        offset: u64,
    },
    /// A rule uses a terminal outside the alphabet.
    #[error("rule {rule} uses terminal {terminal}, but the alphabet has {alphabet} (byte offset {offset})")]
    TerminalOutOfRange {
        /// The rule.
        rule: u32,
        /// The terminal.
        terminal: u64,
        /// The alphabet's size.
        alphabet: usize,
        /// Offset of the symbol.
        offset: u64,
    },
    /// A rule expands to 2^64 or more terminals.
    #[error("rule {rule} expands to more than 2^64 - 1 terminals (byte offset {offset})")]
    LengthOverflow {
        /// The rule.
        rule: u32,
        /// Offset of the symbol that overflowed.
        offset: u64,
    },
    /// A stored expanded length is wrong.
    #[error("rule {rule} stores expanded length {stored} but expands to {computed} (byte offset {offset})")]
    LengthMismatch {
        /// The rule.
        rule: u32,
        /// The stored length.
        stored: u64,
        /// The recomputed length.
        computed: u64,
        /// Offset of the stored length.
        offset: u64,
    },
    /// A stored use count is wrong.
    #[error(
        "rule {rule} stores use count {stored} but is used {computed} times (byte offset {offset})"
    )]
    UseCountMismatch {
        /// The rule.
        rule: u32,
        /// The stored count.
        stored: u64,
        /// The recomputed count.
        computed: u64,
        /// Offset of the stored count.
        offset: u64,
    },
    /// A start rule names a rule that does not exist.
    #[error("start rule of thread {thread} names rule {rule}, but there are {rules} rules (byte offset {offset})")]
    BadStartRule {
        /// The thread.
        thread: u32,
        /// The rule named.
        rule: u64,
        /// Number of rules.
        rules: usize,
        /// Offset of the rule id.
        offset: u64,
    },
    /// A start rule is referenced by another rule.
    #[error(
        "start rule {rule} of thread {thread} is referenced by other rules (byte offset {offset})"
    )]
    StartReferenced {
        /// The thread.
        thread: u32,
        /// The rule.
        rule: u32,
        /// Offset of the rule id.
        offset: u64,
    },
    /// Two start rules for one thread.
    #[error("thread {thread} has two start rules (byte offset {offset})")]
    DuplicateThread {
        /// The thread.
        thread: u32,
        /// Offset of the second thread id.
        offset: u64,
    },
    /// `META`'s thread count disagrees with `STRT`.
    #[error(
        "section `META` promises {meta} threads but `STRT` at byte offset {offset} lists {starts}"
    )]
    ThreadCountMismatch {
        /// Threads according to `META`.
        meta: u64,
        /// Start rules in `STRT`.
        starts: usize,
        /// Offset of the `STRT` payload.
        offset: u64,
    },
    /// A segmented file's `META` counts a different number of `SEGM` sections than it has.
    #[error(
        "section `META` at byte offset {offset} promises {meta} segments but the file has {found}"
    )]
    SegmentCountMismatch {
        /// Segments according to `META`.
        meta: u64,
        /// `SEGM` sections found.
        found: usize,
        /// Offset of the `META` payload.
        offset: u64,
    },
    /// A `SEGM` section is not numbered as its place in the file says.
    #[error("segment {found} at byte offset {offset} is the file's segment {expected}")]
    SegmentOutOfOrder {
        /// Its place in the file.
        expected: usize,
        /// Its stored number.
        found: u64,
        /// Offset of the number.
        offset: u64,
    },
    /// Bytes follow the `END ` section.
    #[error("unexpected bytes after the `END ` section at byte offset {offset}")]
    TrailingBytes {
        /// Offset of the first extra byte.
        offset: u64,
    },
    /// A version 2 `RULE` stream is malformed: an unknown codec or symbol kind, a declared size
    /// beyond its bounds, zstd data that does not decompress to the declared size, unread
    /// bytes, or a rule reference reaching before rule 0.
    #[error("bad {stream} stream in section `RULE` (byte offset {offset}): {message}")]
    Stream {
        /// The stream: `LENS`, `KINDS`, `TERMS` or `REFS`.
        stream: &'static str,
        /// Offset of the item, or of the stream's stored bytes for a compressed stream.
        offset: u64,
        /// What is wrong.
        message: String,
    },
    /// The decoded rules do not form a grammar (only for grammars beyond 32-bit limits).
    #[error("invalid grammar: {0}")]
    Grammar(#[from] GrammarError),
    /// Writing: an extra section uses a reserved tag.
    #[error("extra section tag {} is reserved", tag(.0))]
    ReservedTag([u8; 4]),
    /// Writing: the grammar's terminals do not fit the alphabet.
    #[error("the grammar is over {grammar} terminals but the alphabet has {alphabet}")]
    AlphabetTooSmall {
        /// The grammar's terminal count.
        grammar: u32,
        /// The alphabet's size.
        alphabet: usize,
    },
    /// Writing: the program database does not serialize.
    #[error("cannot serialize the program database: {0}")]
    Serialize(String),
}

/// The zstd level of the compressed streams that [`WppFile::to_bytes`] writes: slow, for the
/// smallest files.
pub const DEFAULT_ZSTD_LEVEL: i32 = 19;

/// The level [`balanced_level`] gives large grammars: zstd's own default.
pub const FAST_ZSTD_LEVEL: i32 = 3;

/// A grammar of more than one symbol per this many trace events is large for
/// [`balanced_level`].
pub const BALANCED_EVENTS_PER_SYMBOL: u64 = 32;

/// The zstd level for the streams of a grammar of `symbols` symbols over `events` trace events
/// when the user names none (`wpp compress`): [`DEFAULT_ZSTD_LEVEL`] while the grammar is small
/// beside its events, [`FAST_ZSTD_LEVEL`] once it has more than one symbol per
/// [`BALANCED_EVENTS_PER_SYMBOL`] events. Level 19's time follows the grammar's symbols and the
/// compressor's the events: on Lua's block trace or the synthetic traces (one symbol per
/// 47–600 events) level 19 costs no measurable time and saves 4–5 % of the bytes, while on the
/// high-entropy path traces (one per 5–20) it took a fifth of the time for 1–2 % of the bytes
/// (BENCHMARKS.md, "The zstd level by the grammar's size").
pub fn balanced_level(symbols: usize, events: u64) -> i32 {
    match (symbols as u64).saturating_mul(BALANCED_EVENTS_PER_SYMBOL) <= events {
        true => DEFAULT_ZSTD_LEVEL,
        false => FAST_ZSTD_LEVEL,
    }
}

impl WppFile {
    /// Encodes the file (layout [`VERSION`]).
    pub fn to_bytes(&self) -> Result<Vec<u8>, WppError> {
        self.encode(VERSION, DEFAULT_ZSTD_LEVEL, 1)
    }

    /// Encodes the file (layout [`VERSION`]) compressing its streams at zstd `level` (1–22; a
    /// reader needs no level): level 19 takes seconds per million grammar symbols, level 3 a
    /// small fraction of that for files a few percent larger — the choice of the recording
    /// runtime, where the program waits for the write.
    pub fn to_bytes_with_level(&self, level: i32) -> Result<Vec<u8>, WppError> {
        self.encode(VERSION, level, 1)
    }

    /// Encodes as [`to_bytes_with_level`](Self::to_bytes_with_level) does, the rule streams
    /// compressed on up to `threads` threads: the same bytes, sooner.
    pub fn to_bytes_on(&self, level: i32, threads: usize) -> Result<Vec<u8>, WppError> {
        self.encode(VERSION, level, threads)
    }

    /// Encodes the file in the version 1 layout, which builds before version 2 read; larger
    /// (rule bodies are plain varints) but quick to write. It has no CFG table, so the CFGs
    /// of the program database are left out.
    pub fn to_bytes_v1(&self) -> Result<Vec<u8>, WppError> {
        self.encode(1, DEFAULT_ZSTD_LEVEL, 1)
    }

    fn encode(&self, version: u32, level: i32, threads: usize) -> Result<Vec<u8>, WppError> {
        self.check_writable()?;
        let mut out = Vec::new();
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&version.to_le_bytes());
        let threads_meta = self.grammar.starts().len() as u64;
        put_section(&mut out, META, &self.encode_meta(threads_meta, None));
        put_section(&mut out, PROG, &self.encode_program(version, level)?);
        put_section(&mut out, ALPH, &encode_alphabet(&self.alphabet));
        let rules = if version == 1 {
            encode_rules_v1(&self.grammar)
        } else {
            rules::encode(
                &self.grammar,
                level,
                threads,
                &model::classes(&self.alphabet),
            )
        };
        put_section(&mut out, RULE, &rules);
        put_section(&mut out, STRT, &encode_starts(&self.grammar));
        self.put_tail(&mut out);
        Ok(out)
    }

    /// Checks what every layout requires of the file before writing it.
    fn check_writable(&self) -> Result<(), WppError> {
        if let Some(s) = self.extra.iter().find(|s| RESERVED.contains(&s.tag)) {
            return Err(WppError::ReservedTag(s.tag));
        }
        if self.grammar.num_terminals() as usize > self.alphabet.len() {
            return Err(WppError::AlphabetTooSmall {
                grammar: self.grammar.num_terminals(),
                alphabet: self.alphabet.len(),
            });
        }
        Ok(())
    }

    /// `META`'s payload: algorithm, events, `threads`, and in version 4 the segment count.
    fn encode_meta(&self, threads: u64, segments: Option<u64>) -> Vec<u8> {
        let mut payload = vec![self.algorithm.code()];
        write_varint(&mut payload, self.events);
        write_varint(&mut payload, threads);
        if let Some(n) = segments {
            write_varint(&mut payload, n);
        }
        payload
    }

    /// `PROG`'s payload in layout `version`.
    fn encode_program(&self, version: u32, level: i32) -> Result<Vec<u8>, WppError> {
        let serialize = |e: postcard::Error| WppError::Serialize(e.to_string());
        Ok(if version >= 3 {
            let mut stream = Vec::new();
            let db = self.program.to_bytes().map_err(serialize)?;
            rules::put_stream(&mut stream, &db, level, 1);
            stream
        } else {
            postcard::to_allocvec(&self.program).map_err(serialize)?
        })
    }

    /// The extra sections and `END `.
    fn put_tail(&self, out: &mut Vec<u8>) {
        for s in &self.extra {
            put_section(out, s.tag, &s.data);
        }
        put_section(out, END, &[]);
    }

    /// Decodes and validates a file (see the module documentation for what is checked).
    pub fn from_bytes(bytes: &[u8]) -> Result<WppFile, WppError> {
        let mut r = Reader::new(bytes, 0);
        if r.bytes(4, "magic")? != MAGIC {
            return Err(WppError::BadMagic);
        }
        let version = r.u32_le("version")?;
        if version == SEGMENTED_VERSION {
            return segments::decode(&mut r);
        }
        if !(OLDEST_VERSION..=VERSION).contains(&version) {
            return Err(WppError::UnsupportedVersion { found: version });
        }
        let mut meta = section(&mut r, META)?;
        let (algorithm, events, threads, _) = decode_meta(&mut meta, false)?;
        let prog = section(&mut r, PROG)?;
        let program = decode_program(prog, version)?;
        let mut alph = section(&mut r, ALPH)?;
        let alphabet = decode_alphabet(&mut alph)?;
        let mut rules = section(&mut r, RULE)?;
        let decoded = if version == 1 {
            decode_rules_v1(&mut rules, alphabet.len())?
        } else {
            rules::decode(&mut rules, alphabet.len(), &model::classes(&alphabet))?
        };
        let mut strt = section(&mut r, STRT)?;
        let starts = decode_starts(&mut strt, &decoded, Some(threads))?;
        let extra = decode_extra(&mut r)?;
        let bodies = decoded.ends.iter().scan(0, |from, &to| {
            let body = decoded.symbols[*from..to].iter().copied();
            *from = to;
            Some(body)
        });
        let grammar = Grammar::new(alphabet.len() as u32, bodies, starts)?;
        Ok(WppFile {
            program,
            alphabet,
            grammar,
            algorithm,
            events,
            extra,
        })
    }

    /// Writes the file to `path`.
    pub fn write(&self, path: impl AsRef<Path>) -> Result<(), WppError> {
        self.write_with_level(path, DEFAULT_ZSTD_LEVEL)
    }

    /// Writes the file to `path`, compressing at zstd `level` (see
    /// [`to_bytes_with_level`](Self::to_bytes_with_level)).
    pub fn write_with_level(&self, path: impl AsRef<Path>, level: i32) -> Result<(), WppError> {
        let path = path.as_ref();
        std::fs::write(path, self.to_bytes_with_level(level)?).map_err(|source| WppError::Io {
            path: path.to_owned(),
            source,
        })
    }

    /// Reads and validates the file at `path`, memory-mapping it when large.
    pub fn read(path: impl AsRef<Path>) -> Result<WppFile, WppError> {
        with_bytes(path.as_ref(), WppFile::from_bytes)
    }
}

/// Runs `decode` on the bytes of the file at `path`, memory-mapped when large.
fn with_bytes<T>(
    path: &Path,
    decode: impl FnOnce(&[u8]) -> Result<T, WppError>,
) -> Result<T, WppError> {
    let io = |source| WppError::Io {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    if file.metadata().map_err(io)?.len() < MMAP_THRESHOLD {
        return decode(&std::fs::read(path).map_err(io)?);
    }
    // SAFETY: the map is read-only and lives only for this call. If another process
    // truncates or rewrites the file meanwhile, reads may see changed bytes (or fault on
    // truncation, as with any mmap-based reader); the decoder validates every byte it reads
    // and has no memory-safety dependence on their values.
    #[allow(unsafe_code)]
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
    decode(&map)
}

fn put_section(out: &mut Vec<u8>, tag: [u8; 4], payload: &[u8]) {
    out.extend_from_slice(&tag);
    write_varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
}

/// Reads a section header, payload and checksum; returns a reader over the verified payload.
fn read_section<'a>(r: &mut Reader<'a>) -> Result<([u8; 4], Reader<'a>), WppError> {
    let tag: [u8; 4] = r.bytes(4, "section tag")?.try_into().expect("4 bytes");
    let len = r.count(1, "section length")?;
    let offset = r.offset();
    let payload = r.bytes(len, "section payload")?;
    let stored = r.u32_le("section checksum")?;
    let computed = crc32fast::hash(payload);
    if stored != computed {
        return Err(WppError::Checksum {
            section: tag,
            offset,
            stored,
            computed,
        });
    }
    Ok((tag, Reader::new(payload, offset)))
}

fn section<'a>(r: &mut Reader<'a>, expected: [u8; 4]) -> Result<Reader<'a>, WppError> {
    let offset = r.offset();
    let (found, payload) = read_section(r)?;
    if found != expected {
        return Err(WppError::UnexpectedSection {
            expected,
            found,
            offset,
        });
    }
    Ok(payload)
}

fn finished(r: &Reader<'_>, section: [u8; 4]) -> Result<(), WppError> {
    if r.is_empty() {
        Ok(())
    } else {
        Err(WppError::SectionTooLong {
            section,
            offset: r.offset(),
        })
    }
}

/// A count of items of at least `min_item_bytes` each, also at most `limit`.
fn limited(
    r: &mut Reader<'_>,
    min_item_bytes: usize,
    limit: u64,
    what: &'static str,
) -> Result<usize, WppError> {
    let start = r.clone();
    let n = r.count(min_item_bytes, what)?;
    if n as u64 > limit {
        return Err(start
            .fail(
                what,
                WireErrorKind::OutOfRange {
                    value: n as u64,
                    limit,
                },
            )
            .into());
    }
    Ok(n)
}

/// `META`: algorithm, trace events, threads, and (`segmented`, version 4) the segment count.
fn decode_meta(
    r: &mut Reader<'_>,
    segmented: bool,
) -> Result<(Algorithm, u64, u64, u64), WppError> {
    let offset = r.offset();
    let code = r.u8("algorithm")?;
    let algorithm =
        Algorithm::from_code(code).ok_or(WppError::UnknownAlgorithm { code, offset })?;
    let events = r.varint("trace event count")?;
    let threads = r.varint("thread count")?;
    let segments = if segmented {
        r.varint("segment count")?
    } else {
        1
    };
    finished(r, META)?;
    Ok((algorithm, events, threads, segments))
}

/// The largest program database a reader accepts (64 MiB, as in the trace format).
const MAX_PROGRAM_BYTES: u64 = 64 << 20;

fn decode_program(mut r: Reader<'_>, version: u32) -> Result<ProgramDb, WppError> {
    let offset = r.offset();
    let db_error = |e: wpp_trace::ProgramDbError| WppError::ProgramDb {
        offset: e.offset,
        message: e.message,
    };
    if version < 3 {
        let bytes = r.bytes(r.remaining(), "program database")?;
        return ProgramDb::from_bytes(bytes, offset, DbLayout::WithoutCfgs).map_err(db_error);
    }
    let stream = rules::read_stream(&mut r, "PROG", MAX_PROGRAM_BYTES).map_err(|e| match e {
        WppError::Stream {
            offset, message, ..
        } => WppError::ProgramDb { offset, message },
        e => e,
    })?;
    finished(&r, PROG)?;
    // Inside a compressed stream, bytes have no file offset: errors name the stream's.
    let db =
        ProgramDb::from_bytes(&stream.data, stream.offset, DbLayout::WithCfgs).map_err(|e| {
            let offset = if stream.compressed {
                stream.offset
            } else {
                e.offset
            };
            WppError::ProgramDb {
                offset,
                message: e.message,
            }
        })?;
    // A grammar is built from restored events: a table of elided blocks would have a trace
    // written from it restore them a second time.
    if db.has_implied_blocks() {
        return Err(WppError::ProgramDb {
            offset: stream.offset,
            message: "the program database names elided blocks, which only a raw trace may \
                      (a grammar holds every event)"
                .into(),
        });
    }
    Ok(db)
}

fn encode_alphabet(a: &Alphabet) -> Vec<u8> {
    let mut out = Vec::new();
    write_varint(&mut out, a.len() as u64);
    for e in a.events() {
        let (kind, operand) = match *e {
            Event::Enter(f) => (0, Some(u64::from(f.0))),
            Event::Leave => (1, None),
            Event::Block(b) => (2, Some(u64::from(b.0))),
            Event::Path(p) => (3, Some(p.0)),
            Event::Thread(t) => (4, Some(u64::from(t.0))),
        };
        out.push(kind);
        if let Some(v) = operand {
            write_varint(&mut out, v);
        }
    }
    out
}

fn decode_alphabet(r: &mut Reader<'_>) -> Result<Alphabet, WppError> {
    let n = limited(r, 1, u64::from(Terminal::LIMIT), "alphabet size")?;
    let mut alphabet = Alphabet::new();
    for index in 0..n as u32 {
        let offset = r.offset();
        let event = decode_event(r)?;
        let fresh = alphabet.get(&event).is_none();
        // The count is bounded by the payload, far below the 2^31 terminal limit.
        if !fresh || alphabet.intern(event).is_err() {
            return Err(WppError::DuplicateEvent { index, offset });
        }
    }
    finished(r, ALPH)?;
    Ok(alphabet)
}

fn decode_event(r: &mut Reader<'_>) -> Result<Event, WppError> {
    let offset = r.offset();
    let u32_operand = |r: &mut Reader<'_>| r.varint_max(u64::from(u32::MAX), "event operand");
    Ok(match r.u8("event kind")? {
        0 => Event::Enter(FunctionId(u32_operand(r)? as u32)),
        1 => Event::Leave,
        2 => Event::Block(BlockId(u32_operand(r)? as u32)),
        3 => Event::Path(PathId(r.varint("event operand")?)),
        4 => Event::Thread(ThreadId(u32_operand(r)? as u32)),
        kind => return Err(WppError::BadEventKind { kind, offset }),
    })
}

fn encode_rules_v1(g: &Grammar) -> Vec<u8> {
    let mut out = Vec::new();
    write_varint(&mut out, g.num_rules() as u64);
    for r in g.rules() {
        let body = g.body(r);
        write_varint(&mut out, body.len() as u64);
        write_varint(&mut out, g.expanded_len(r));
        for &s in body {
            let v = match s.kind() {
                SymbolKind::Terminal(t) => u64::from(t.0) << 1,
                SymbolKind::Rule(r) => (u64::from(r.0) << 1) | 1,
            };
            write_varint(&mut out, v);
        }
    }
    for uses in g.reference_counts() {
        write_varint(&mut out, u64::from(uses));
    }
    out
}

/// Rules as read from `RULE`: all bodies back to back, where each ends, and use counts.
struct DecodedRules {
    symbols: Vec<Symbol>,
    ends: Vec<usize>,
    uses: Vec<u64>,
}

/// Reads a version 1 `RULE` section.
fn decode_rules_v1(r: &mut Reader<'_>, alphabet: usize) -> Result<DecodedRules, WppError> {
    // A rule takes at least three bytes: body length, expanded length and use count. Rule ids
    // must fit a symbol's 31 bits.
    let n = limited(r, 3, (1 << 31) - 1, "rule count")?;
    let mut d = DecodedRules {
        symbols: Vec::new(),
        ends: Vec::with_capacity(n),
        uses: vec![0; n],
    };
    let mut lengths: Vec<u64> = Vec::with_capacity(n);
    for rule in 0..n as u32 {
        let body_len = r.count(1, "rule body length")?;
        let len_offset = r.offset();
        let stored = r.varint("rule expanded length")?;
        let computed = decode_body(r, rule, body_len, alphabet, &lengths, &mut d)?;
        if stored != computed {
            return Err(WppError::LengthMismatch {
                rule,
                stored,
                computed,
                offset: len_offset,
            });
        }
        lengths.push(computed);
        d.ends.push(d.symbols.len());
    }
    for (rule, &computed) in d.uses.iter().enumerate() {
        let offset = r.offset();
        let stored = r.varint("rule use count")?;
        if stored != computed {
            return Err(WppError::UseCountMismatch {
                rule: rule as u32,
                stored,
                computed,
                offset,
            });
        }
    }
    finished(r, RULE)?;
    Ok(d)
}

/// Reads one body into `d`, counting uses; returns its expanded length.
fn decode_body(
    r: &mut Reader<'_>,
    rule: u32,
    body_len: usize,
    alphabet: usize,
    lengths: &[u64],
    d: &mut DecodedRules,
) -> Result<u64, WppError> {
    let mut total: u64 = 0;
    for _ in 0..body_len {
        let offset = r.offset();
        let v = r.varint("rule body symbol")?;
        let id = v >> 1;
        let (symbol, len) = if v & 1 == 0 {
            if id >= alphabet as u64 {
                return Err(WppError::TerminalOutOfRange {
                    rule,
                    terminal: id,
                    alphabet,
                    offset,
                });
            }
            (Symbol::terminal(Terminal(id as u32)), 1)
        } else {
            if id >= u64::from(rule) {
                return Err(WppError::ForwardReference {
                    rule,
                    target: id,
                    offset,
                });
            }
            let len = lengths[id as usize];
            if len == 0 {
                return Err(WppError::EmptyRuleReference {
                    rule,
                    target: id,
                    offset,
                });
            }
            d.uses[id as usize] += 1;
            (Symbol::rule(RuleId(id as u32)), len)
        };
        total = total
            .checked_add(len)
            .ok_or(WppError::LengthOverflow { rule, offset })?;
        d.symbols.push(symbol);
    }
    Ok(total)
}

fn encode_starts(g: &Grammar) -> Vec<u8> {
    let mut out = Vec::new();
    write_varint(&mut out, g.starts().len() as u64);
    for s in g.starts() {
        write_varint(&mut out, u64::from(s.thread.0));
        write_varint(&mut out, u64::from(s.rule.0));
    }
    out
}

/// Start rules (a `STRT` payload), as many as `meta_threads` says when it says.
fn decode_starts(
    r: &mut Reader<'_>,
    rules: &DecodedRules,
    meta_threads: Option<u64>,
) -> Result<Vec<StartRule>, WppError> {
    let offset = r.offset();
    let n = r.count(2, "start rule count")?;
    if let Some(meta) = meta_threads.filter(|&m| m != n as u64) {
        return Err(WppError::ThreadCountMismatch {
            meta,
            starts: n,
            offset,
        });
    }
    let mut starts = Vec::with_capacity(n);
    let mut seen = FxHashSet::default();
    for _ in 0..n {
        let thread_offset = r.offset();
        let thread = r.varint_max(u64::from(u32::MAX), "start thread")? as u32;
        if !seen.insert(thread) {
            return Err(WppError::DuplicateThread {
                thread,
                offset: thread_offset,
            });
        }
        let rule_offset = r.offset();
        let rule = r.varint("start rule")?;
        match rules.uses.get(rule as usize) {
            None => {
                return Err(WppError::BadStartRule {
                    thread,
                    rule,
                    rules: rules.uses.len(),
                    offset: rule_offset,
                })
            }
            Some(&u) if u > 0 => {
                return Err(WppError::StartReferenced {
                    thread,
                    rule: rule as u32,
                    offset: rule_offset,
                })
            }
            Some(_) => starts.push(StartRule {
                thread: ThreadId(thread),
                rule: RuleId(rule as u32),
            }),
        }
    }
    finished(r, STRT)?;
    Ok(starts)
}

fn decode_extra(r: &mut Reader<'_>) -> Result<Vec<Section>, WppError> {
    let mut extra = Vec::new();
    loop {
        let offset = r.offset();
        let (tag, mut payload) = read_section(r)?;
        if tag == END {
            finished(&payload, END)?;
            break;
        }
        if RESERVED.contains(&tag) {
            return Err(WppError::UnexpectedSection {
                expected: END,
                found: tag,
                offset,
            });
        }
        let data = payload.bytes(payload.remaining(), "section payload")?;
        extra.push(Section {
            tag,
            data: data.to_vec(),
        });
    }
    if !r.is_empty() {
        return Err(WppError::TrailingBytes { offset: r.offset() });
    }
    Ok(extra)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The module documentation's worked example.
    fn example() -> WppFile {
        let mut program = ProgramDb::default();
        program.intern("main");
        program.functions[0].cfg = Some(Box::new(wpp_trace::FunctionCfg {
            successors: vec![vec![1], vec![0]],
            entry: 0,
            exits: vec![1],
            ..Default::default()
        }));
        let alphabet =
            Alphabet::from_events(vec![Event::Block(BlockId(0)), Event::Block(BlockId(1))])
                .unwrap();
        let t = |x| Symbol::terminal(Terminal(x));
        let bodies = vec![vec![t(0), t(1)], vec![Symbol::rule(RuleId(0)); 2]];
        let starts = vec![StartRule {
            thread: ThreadId(0),
            rule: RuleId(1),
        }];
        WppFile {
            program,
            alphabet,
            grammar: Grammar::new(2, bodies, starts).unwrap(),
            algorithm: Algorithm::Sequitur,
            events: 4,
            extra: Vec::new(),
        }
    }

    /// The example as a version 1 or 2 file reads it: without the CFG.
    fn example_without_cfgs() -> WppFile {
        let mut f = example();
        f.program.functions[0].cfg = None;
        f
    }

    fn unhex(hex: &str) -> Vec<u8> {
        hex.split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect()
    }

    #[test]
    fn worked_example_bytes() {
        let bytes = example().to_bytes().unwrap();
        assert_eq!(bytes.len(), 115);
        let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex.join(" "),
            "57 50 50 47 03 00 00 00 \
             4d 45 54 41 03 00 04 01 80 2c 2a ec \
             50 52 4f 47 17 00 15 01 04 6d 61 69 6e 00 00 00 \
             01 01 02 00 01 02 01 01 01 02 00 00 74 36 a8 56 \
             41 4c 50 48 05 02 02 00 02 01 e2 3e da 53 \
             52 55 4c 45 13 02 04 00 02 02 02 00 04 00 01 01 02 00 02 00 01 00 01 00 \
             97 fc a9 3e \
             53 54 52 54 03 01 00 01 b3 83 84 89 \
             45 4e 44 20 00 00 00 00 00"
        );
        assert_eq!(WppFile::from_bytes(&bytes).unwrap(), example());
    }

    /// A grammar's events are all there: a program database naming elided blocks is refused.
    #[test]
    fn a_table_of_elided_blocks_is_refused() {
        let mut file = example();
        file.program.functions[0].implied_next = vec![Some(1), None];
        let e = WppFile::from_bytes(&file.to_bytes().unwrap()).unwrap_err();
        assert!(e.to_string().contains("names elided blocks"), "{e}");
    }

    /// The version 2 worked example (the same file without the CFG table) still reads.
    #[test]
    fn version_2_worked_example_still_reads() {
        let bytes = unhex(
            "57 50 50 47 02 00 00 00 \
             4d 45 54 41 03 00 04 01 80 2c 2a ec \
             50 52 4f 47 09 01 04 6d 61 69 6e 00 00 00 c1 6a 2a 13 \
             41 4c 50 48 05 02 02 00 02 01 e2 3e da 53 \
             52 55 4c 45 13 02 04 00 02 02 02 00 04 00 01 01 02 00 02 00 01 00 01 00 \
             97 fc a9 3e \
             53 54 52 54 03 01 00 01 b3 83 84 89 \
             45 4e 44 20 00 00 00 00 00",
        );
        assert_eq!(bytes.len(), 101);
        assert_eq!(WppFile::from_bytes(&bytes).unwrap(), example_without_cfgs());
    }

    /// The version 1 worked example (the layout this module documents under "Versions 1 and 2")
    /// still reads as the same file.
    #[test]
    fn version_1_worked_example_still_reads() {
        let hex = "57 50 50 47 01 00 00 00 \
             4d 45 54 41 03 00 04 01 80 2c 2a ec \
             50 52 4f 47 09 01 04 6d 61 69 6e 00 00 00 c1 6a 2a 13 \
             41 4c 50 48 05 02 02 00 02 01 e2 3e da 53 \
             52 55 4c 45 0b 02 02 02 00 02 02 04 01 01 02 00 a4 89 77 bd \
             53 54 52 54 03 01 00 01 b3 83 84 89 \
             45 4e 44 20 00 00 00 00 00";
        let bytes = unhex(hex);
        assert_eq!(bytes.len(), 93);
        assert_eq!(example().to_bytes_v1().unwrap(), bytes);
        assert_eq!(WppFile::from_bytes(&bytes).unwrap(), example_without_cfgs());
    }
}
