//! Version 4: a `.wpp` cut into *segments*, so that a recording of any length is compressed in
//! bounded memory (issue 15 item 3) and still read as one run.
//!
//! A compressor that has taken in a segment's worth of events closes its grammar, writes it out
//! and frees it, and starts again with a fresh grammar over the same alphabet
//! ([`crate::segment`]). Its rules are gone from memory once written, so the segment comes
//! first in the file and what is known only at the end — the alphabet, the event total, the
//! thread count — comes after the last one:
//!
//! ```text
//! file = "WPPG" 4:u32le SEGM+ META PROG ALPH extra* END
//! SEGM = number events rules_length RULE-payload STRT-payload
//! META = algorithm events threads segments
//! ```
//!
//! Sections are framed as in every version (tag, length, payload, crc32). In a `SEGM` payload,
//! `number` is the segment's place in the file (0, 1, …: a segment moved or copied is refused),
//! `events` the trace events it took in (informational, as `META`'s), `rules_length` the byte
//! length of the `RULE` payload that follows (version 3's layout, over the final alphabet's
//! terminal numbering, which only ever grows), then a `STRT` payload naming the segment's start
//! rule of each thread that had events in it. `META` is version 3's plus the segment count,
//! which must equal the `SEGM` sections found; its thread count is that of distinct threads
//! over all segments.
//!
//! Reading decodes the segments on every core and joins their grammars one after the other —
//! each thread's start rule is the concatenation of its segment start rules, every other rule
//! is kept as its segment built it ([`Concatenation`]) — so a segmented file is one ordinary
//! [`Grammar`] to every query, and written again it is a version 3 file. The writer writes a file with a single segment as version 3, byte for byte
//! what [`WppFile::to_bytes_on`] writes, so short recordings are what they were.

use std::io::Write;
use std::path::{Path, PathBuf};

use rustc_hash::{FxHashMap, FxHashSet};
use wpp_trace::wire::{write_varint, Reader};
use wpp_trace::ThreadId;

use super::{
    decode_alphabet, decode_extra, decode_meta, decode_program, decode_starts, encode_alphabet,
    put_section, read_section, rules, section, with_bytes, WppError, WppFile, ALPH, MAGIC, META,
    PROG, STRT,
};
use crate::grammar::{Grammar, RuleId, StartRule};
use crate::symbol::{Symbol, SymbolKind};

/// The layout version of a file with several segments.
pub const SEGMENTED_VERSION: u32 = 4;

const SEGM: [u8; 4] = *b"SEGM";

/// What [`segment_table`] reports of one segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentInfo {
    /// Trace events the segment took in.
    pub events: u64,
    /// Threads with events in the segment.
    pub threads: u64,
    /// Rules of the segment's grammar, start rules included.
    pub rules: u64,
    /// Symbols on the right-hand sides of the segment's rules.
    pub symbols: u64,
    /// Bytes of the `SEGM` payload.
    pub bytes: u64,
}

/// Writes a `.wpp` one segment at a time.
///
/// The layout (version 4):
///
/// ```text
/// file = "WPPG" 4:u32le SEGM+ META PROG ALPH extra* END
/// SEGM = number events rules_length RULE-payload STRT-payload
/// META = algorithm events threads segments
/// ```
///
/// `number` is the segment's place (0, 1, …), `events` the trace events it took in,
/// `rules_length` the bytes of the version 3 `RULE` payload that follows (over the final
/// alphabet's numbering, which only grows), then a `STRT` payload for the threads with events
/// in the segment. `META`'s segment count must equal the `SEGM` sections; its threads are the
/// distinct threads of all segments. `META`, `PROG` and `ALPH` come last because only the end
/// of the run knows them, and a segment's rules must leave memory when it closes.
pub struct SegmentWriter<W: Write> {
    out: W,
    path: PathBuf,
    /// zstd's level; `None`: [`super::balanced_level`] of each grammar written (and level 19
    /// for a segmented file's program database, which is small).
    level: Option<i32>,
    threads: usize,
    segments: u64,
    seen: FxHashSet<ThreadId>,
    /// Rules, symbols and bytes written so far.
    rules: u64,
    symbols: u64,
    bytes: u64,
}

/// What [`SegmentWriter::finish`] wrote: the file as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    /// Segments (1: a version 3 file).
    pub segments: u64,
    /// Rules, summed over the segments (the joined grammar has fewer).
    pub rules: u64,
    /// Grammar symbols, summed over the segments.
    pub symbols: u64,
    /// Bytes of the file.
    pub bytes: u64,
}

impl<W: Write> SegmentWriter<W> {
    /// A writer to `out` (named `path` in errors), compressing streams at zstd `level` on up to
    /// `threads` threads, as [`WppFile::to_bytes_on`] does.
    pub fn new(out: W, path: impl Into<PathBuf>, level: i32, threads: usize) -> Self {
        Self::with_level(out, path, Some(level), threads)
    }

    /// A writer as [`new`](Self::new) makes; with no `level`, each grammar it writes gets
    /// [`super::balanced_level`] (`wpp compress` without `--zstd-level`).
    pub fn with_level(
        out: W,
        path: impl Into<PathBuf>,
        level: Option<i32>,
        threads: usize,
    ) -> Self {
        SegmentWriter {
            out,
            path: path.into(),
            level,
            threads,
            segments: 0,
            seen: FxHashSet::default(),
            rules: 0,
            symbols: 0,
            bytes: 0,
        }
    }

    /// Segments written so far.
    pub fn segments(&self) -> u64 {
        self.segments
    }

    /// Writes `g`, the grammar of a segment that took in `events` trace events, as the next
    /// segment; the caller then drops it. The first segment makes the file a version 4 file.
    pub fn push(&mut self, g: &Grammar, events: u64) -> Result<(), WppError> {
        let mut out = Vec::new();
        if self.segments == 0 {
            out.extend_from_slice(&MAGIC);
            out.extend_from_slice(&SEGMENTED_VERSION.to_le_bytes());
        }
        let mut payload = Vec::new();
        write_varint(&mut payload, self.segments);
        write_varint(&mut payload, events);
        let level = self.level_for(g, events);
        let rules = rules::encode(g, level, self.threads, &[]);
        write_varint(&mut payload, rules.len() as u64);
        payload.extend_from_slice(&rules);
        drop(rules);
        payload.extend_from_slice(&super::encode_starts(g));
        put_section(&mut out, SEGM, &payload);
        self.write(&out)?;
        self.seen.extend(g.starts().iter().map(|s| s.thread));
        self.segments += 1;
        self.rules += g.num_rules() as u64;
        self.symbols += g.num_symbols() as u64;
        Ok(())
    }

    /// Ends the file with `file`: its grammar is the last segment's (`last_events` trace
    /// events), the rest (alphabet, program, events, extra sections) the whole run's. Without
    /// an earlier segment this writes `file` as [`WppFile::to_bytes_on`] does, version 3.
    /// Returns the output and what was written.
    pub fn finish(mut self, file: &WppFile, last_events: u64) -> Result<(W, Written), WppError> {
        file.check_writable()?;
        if self.segments == 0 {
            let level = self.level_for(&file.grammar, file.events);
            let bytes = file.to_bytes_on(level, self.threads)?;
            self.write(&bytes)?;
            self.rules = file.grammar.num_rules() as u64;
            self.symbols = file.grammar.num_symbols() as u64;
        } else {
            if !file.grammar.starts().is_empty() {
                self.push(&file.grammar, last_events)?;
            }
            let mut out = Vec::new();
            let threads = self.seen.len() as u64;
            put_section(
                &mut out,
                META,
                &file.encode_meta(threads, Some(self.segments)),
            );
            let level = self.level.unwrap_or(super::DEFAULT_ZSTD_LEVEL);
            let program = file.encode_program(SEGMENTED_VERSION, level)?;
            put_section(&mut out, PROG, &program);
            put_section(&mut out, ALPH, &encode_alphabet(&file.alphabet));
            file.put_tail(&mut out);
            self.write(&out)?;
        }
        self.out.flush().map_err(|source| self.io(source))?;
        let written = Written {
            segments: self.segments.max(1),
            rules: self.rules,
            symbols: self.symbols,
            bytes: self.bytes,
        };
        Ok((self.out, written))
    }

    /// The level for grammar `g` of `events` trace events.
    fn level_for(&self, g: &Grammar, events: u64) -> i32 {
        self.level
            .unwrap_or_else(|| super::balanced_level(g.num_symbols(), events))
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), WppError> {
        self.out
            .write_all(bytes)
            .map_err(|source| self.io(source))?;
        self.bytes += bytes.len() as u64;
        Ok(())
    }

    fn io(&self, source: std::io::Error) -> WppError {
        WppError::Io {
            path: self.path.clone(),
            source,
        }
    }
}

/// Reads a version 4 file after its version field: the segments, then `META`, `PROG`, `ALPH`,
/// the extra sections and `END `; the segment grammars joined into one.
pub(super) fn decode(r: &mut Reader<'_>) -> Result<WppFile, WppError> {
    let (segments, meta_offset, mut meta) = split(r)?;
    let (algorithm, events, threads_meta, count) = decode_meta(&mut meta, true)?;
    if count != segments.len() as u64 {
        return Err(WppError::SegmentCountMismatch {
            meta: count,
            found: segments.len(),
            offset: meta_offset,
        });
    }
    let program = decode_program(section(r, PROG)?, SEGMENTED_VERSION)?;
    let alphabet = decode_alphabet(&mut section(r, ALPH)?)?;
    let extra = decode_extra(r)?;
    let mut order = Vec::new();
    let mut seen = FxHashSet::default();
    let mut join = Concatenation::default();
    // Segments decode on every core, a wave at a time, so that at most one wave of segment
    // grammars is held beside the joined one.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut payloads = segments.into_iter().enumerate().peekable();
    while payloads.peek().is_some() {
        let wave: Vec<_> = payloads.by_ref().take(threads).collect();
        let grammars = rules::on_threads(wave.len(), threads, |k| {
            let (i, mut payload) = wave[k].clone();
            decode_segment(&mut payload, i, alphabet.len())
        });
        for g in grammars {
            let g = g?;
            order.extend(
                g.starts()
                    .iter()
                    .map(|s| s.thread)
                    .filter(|&t| seen.insert(t)),
            );
            join.add(&g);
        }
    }
    if order.len() as u64 != threads_meta {
        return Err(WppError::ThreadCountMismatch {
            meta: threads_meta,
            starts: order.len(),
            offset: meta_offset,
        });
    }
    let grammar = join.finish(alphabet.len() as u32, &order)?;
    Ok(WppFile {
        program,
        alphabet,
        grammar,
        algorithm,
        events,
        extra,
    })
}

/// The `SEGM` payloads up to `META`, and `META`'s offset and payload.
#[allow(clippy::type_complexity)]
fn split<'a>(r: &mut Reader<'a>) -> Result<(Vec<Reader<'a>>, u64, Reader<'a>), WppError> {
    let mut segments = Vec::new();
    loop {
        let offset = r.offset();
        let (tag, payload) = read_section(r)?;
        match tag {
            SEGM => segments.push(payload),
            META if !segments.is_empty() => return Ok((segments, payload.offset(), payload)),
            found => {
                let expected = if segments.is_empty() { SEGM } else { META };
                return Err(WppError::UnexpectedSection {
                    expected,
                    found,
                    offset,
                });
            }
        }
    }
}

/// Reads segment number `index` over an alphabet of `alphabet` terminals.
fn decode_segment(r: &mut Reader<'_>, index: usize, alphabet: usize) -> Result<Grammar, WppError> {
    let (_, mut rule_bytes) = segment_header(r, index)?;
    let decoded = rules::decode(&mut rule_bytes, alphabet, &[])?;
    let starts = decode_starts(r, &decoded, None)?;
    super::finished(r, STRT)?;
    let bodies = decoded.ends.iter().scan(0, |from, &to| {
        let body = decoded.symbols[*from..to].iter().copied();
        *from = to;
        Some(body)
    });
    Ok(Grammar::new(alphabet as u32, bodies, starts)?)
}

/// A `SEGM` payload's number (checked to be `index`) and events, and a reader over its `RULE`
/// payload; `r` is left at the `STRT` payload.
fn segment_header<'a>(r: &mut Reader<'a>, index: usize) -> Result<(u64, Reader<'a>), WppError> {
    let offset = r.offset();
    let number = r.varint("segment number")?;
    if number != index as u64 {
        return Err(WppError::SegmentOutOfOrder {
            expected: index,
            found: number,
            offset,
        });
    }
    let events = r.varint("segment events")?;
    let length = r.count(1, "segment rules length")?;
    let at = r.offset();
    let rules = Reader::new(r.bytes(length, "segment rules")?, at);
    Ok((events, rules))
}

/// The segments of the `.wpp` in `bytes`, from their headers (rules are counted, not decoded;
/// checksums are checked): empty for a file of version 3 or older, which is one segment.
pub fn segment_table(bytes: &[u8]) -> Result<Vec<SegmentInfo>, WppError> {
    let mut r = Reader::new(bytes, 0);
    if r.bytes(4, "magic")? != MAGIC {
        return Err(WppError::BadMagic);
    }
    if r.u32_le("version")? != SEGMENTED_VERSION {
        return Ok(Vec::new());
    }
    let (segments, _, _) = split(&mut r)?;
    let mut table = Vec::with_capacity(segments.len());
    for (i, mut payload) in segments.into_iter().enumerate() {
        let bytes = payload.remaining() as u64;
        let (events, mut rule_bytes) = segment_header(&mut payload, i)?;
        let rules = rule_bytes.varint("rule count")?;
        let symbols = rule_bytes.varint("symbol count")?;
        let threads = payload.varint("start rule count")?;
        table.push(SegmentInfo {
            events,
            threads,
            rules,
            symbols,
            bytes,
        });
    }
    Ok(table)
}

/// [`segment_table`] of the file at `path`.
pub fn read_segments(path: impl AsRef<Path>) -> Result<Vec<SegmentInfo>, WppError> {
    with_bytes(path.as_ref(), segment_table)
}

/// The segment grammars joined one after the other: each thread's start rule is the
/// concatenation of its segment start rules, and every other rule is kept as its segment built
/// it. Rules repeated across segments are not merged: on zlib's three-segment block recording
/// merging them ([`crate::join::Joiner`]) kept 13 % fewer rules and 2 % fewer symbols, for
/// 2.2× the time of reading the file (BENCHMARKS.md).
#[derive(Default)]
struct Concatenation {
    /// The non-start rules' bodies in joined ids, bottom-up, and where each ends.
    symbols: Vec<Symbol>,
    ends: Vec<usize>,
    /// Each thread's start-rule body so far.
    starts: FxHashMap<ThreadId, Vec<Symbol>>,
    /// Per rule of the segment being added: its joined symbol (scratch).
    map: Vec<Symbol>,
}

impl Concatenation {
    /// Adds the next segment's grammar.
    fn add(&mut self, g: &Grammar) {
        let mut start_of = vec![None; g.num_rules()];
        for s in g.starts() {
            start_of[s.rule.index()] = Some(s.thread);
        }
        self.map.clear();
        self.map.resize(g.num_rules(), Symbol::from_bits(0));
        for r in g.rules() {
            let map = &self.map;
            let body = g.body(r).iter().map(|&s| match s.kind() {
                SymbolKind::Terminal(_) => s,
                SymbolKind::Rule(c) => map[c.index()],
            });
            match start_of[r.index()] {
                Some(thread) => self.starts.entry(thread).or_default().extend(body),
                None => {
                    self.symbols.extend(body);
                    self.map[r.index()] = Symbol::rule(RuleId(self.ends.len() as u32));
                    self.ends.push(self.symbols.len());
                }
            }
        }
    }

    /// The joined grammar over `num_terminals` terminals, with a start rule per thread of
    /// `threads`, in that order, after the other rules.
    fn finish(mut self, num_terminals: u32, threads: &[ThreadId]) -> Result<Grammar, WppError> {
        let rules = self.ends.len() as u32;
        let starts: Vec<Vec<Symbol>> = threads
            .iter()
            .map(|t| self.starts.remove(t).unwrap_or_default())
            .collect();
        let start_rules = (rules..)
            .zip(threads)
            .map(|(rule, &thread)| StartRule {
                thread,
                rule: RuleId(rule),
            })
            .collect();
        let bodies = std::iter::once(0)
            .chain(self.ends.iter().copied())
            .zip(&self.ends)
            .map(|(from, &to)| &self.symbols[from..to])
            .chain(starts.iter().map(Vec::as_slice))
            .map(|body| body.iter().copied());
        Ok(Grammar::new(num_terminals, bodies, start_rules)?)
    }
}
