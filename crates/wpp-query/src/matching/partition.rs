//! Scheme 4 (Zhang–Gupta §4.4, Figures 9–10): the start rule of each thread is cut into
//! partitions of consecutive symbols, each with a [`LevelIndex`] entry. A query summarizes and
//! scans (scheme 2) only the partitions that contain `F`, and moves the stack across the others
//! with their levels alone, so the rules below skipped partitions are never summarized.
//!
//! Partitions are balanced by expanded length rather than by symbol count (the paper cuts the
//! right-hand side into equal numbers of symbols): a partition then covers about as much of the
//! trace as a scheme 3 chunk, which is what decides how much work a rare path skips.
//!
//! The index is built at compression time by expanding each start rule once, and stored as an
//! opaque `.wpp` extra section tagged [`SECTION_TAG`].
//!
//! # Layout
//!
//! ```text
//! 4 bytes  magic "WQI4"
//! 1 byte   version = 2 (1: dense level rows, still read)
//! varint   streams
//! streams × {
//!   varint thread, varint start rule
//!   varint partitions
//!   partitions × varint symbols      partition sizes; they sum to the start rule's body length
//!   partitions × varint events       expanded length of each partition (so that skipping a
//!                                    partition is O(1), positions included)
//!   LevelIndex                       see [`super::levels`], one chunk per partition
//! }
//! ```
//!
//! [`PartitionIndex::from_bytes`] checks the structure; [`PartitionIndex::validate`] checks it
//! against a grammar (same start rules, partition sizes summing to each body, expanded lengths
//! right) in O(|S|); call it once when loading. Matching checks only the shape, O(partitions):
//! an unvalidated index with wrong lengths would misplace reported positions.

use wpp_grammar::file::Section;
use wpp_grammar::Grammar;
use wpp_trace::wire::{write_varint, Reader, WireErrorKind};
use wpp_trace::{Alphabet, ThreadId};

use super::compressed::Matcher;
use super::levels::{Layout, LevelIndex, LevelTracker};
use super::{Mode, PathQuery, StreamMatch};
use crate::error::QueryError;
use crate::expand::for_each_terminal;

/// The `.wpp` extra-section tag of the scheme 4 index.
pub const SECTION_TAG: [u8; 4] = *b"IDX4";
const MAGIC: [u8; 4] = *b"WQI4";
const VERSION: u8 = 2;
const CONTAINER: &str = "scheme 4 index";

/// The default number of partitions per start rule (the paper uses up to 128).
pub const DEFAULT_PARTITIONS: usize = 128;

/// The partitions of one start rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamPartitions {
    /// The thread.
    pub thread: ThreadId,
    /// Its start rule.
    pub rule: u32,
    /// Number of body symbols in each partition.
    pub sizes: Vec<u64>,
    /// Expanded length (events) of each partition.
    pub lengths: Vec<u64>,
    /// Levels and functions of each partition.
    pub levels: LevelIndex,
}

/// The scheme 4 index of a grammar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionIndex {
    /// One entry per start rule, in the grammar's order.
    pub streams: Vec<StreamPartitions>,
}

/// Cuts a body into at most `parts` runs of roughly equal expanded length.
fn cut(g: &Grammar, body: &[wpp_grammar::Symbol], parts: usize) -> Vec<u64> {
    let total: u64 = body.iter().map(|&s| g.symbol_len(s)).sum();
    let parts = parts.max(1) as u64;
    let mut sizes = Vec::new();
    let (mut done, mut size) = (0u64, 0u64);
    for &s in body {
        size += 1;
        done += g.symbol_len(s);
        // Cut when this run reached its share of the expansion.
        if done as u128 * parts as u128 >= (sizes.len() as u128 + 1) * total as u128 {
            sizes.push(size);
            size = 0;
        }
    }
    if size > 0 {
        sizes.push(size);
    }
    sizes
}

/// Builds the scheme 4 index of a grammar as a `.wpp` extra section (what
/// `wpp compress --index` stores), with [`DEFAULT_PARTITIONS`] partitions per start rule.
pub fn index_section(g: &Grammar, alphabet: &Alphabet) -> Result<Section, QueryError> {
    Ok(Section {
        tag: SECTION_TAG,
        data: PartitionIndex::build(g, alphabet, DEFAULT_PARTITIONS)?.to_bytes(),
    })
}

/// Finds, reads and validates the scheme 4 index among a `.wpp` file's extra sections.
pub fn find_index(extra: &[Section], g: &Grammar) -> Result<Option<PartitionIndex>, QueryError> {
    let Some(section) = extra.iter().find(|s| s.tag == SECTION_TAG) else {
        return Ok(None);
    };
    let index = PartitionIndex::from_bytes(&section.data, 0)?;
    index.validate(g)?;
    Ok(Some(index))
}

/// The expanded length of each run of `sizes` symbols of `body`.
fn part_lengths(g: &Grammar, body: &[wpp_grammar::Symbol], sizes: &[u64]) -> Vec<u64> {
    let mut pos = 0usize;
    sizes
        .iter()
        .map(|&n| {
            let end = pos.saturating_add(n as usize).min(body.len());
            let len = body[pos..end].iter().map(|&s| g.symbol_len(s)).sum();
            pos = end;
            len
        })
        .collect()
}

impl PartitionIndex {
    /// Builds the index by expanding each start rule once: O(trace) time, O(MNL + functions ×
    /// partitions) space.
    pub fn build(g: &Grammar, alphabet: &Alphabet, parts: usize) -> Result<Self, QueryError> {
        super::check_alphabet(g, alphabet)?;
        let events = alphabet.events();
        let mut streams = Vec::with_capacity(g.starts().len());
        for start in g.starts() {
            let body = g.body(start.rule);
            let sizes = cut(g, body, parts);
            let lengths = part_lengths(g, body, &sizes);
            let mut tracker = LevelTracker::new();
            let mut pos = 0usize;
            for &size in &sizes {
                for &sym in &body[pos..pos + size as usize] {
                    match sym.kind() {
                        wpp_grammar::symbol::SymbolKind::Terminal(t) => {
                            tracker.event(events[t.index()])
                        }
                        wpp_grammar::symbol::SymbolKind::Rule(r) => {
                            for_each_terminal(g, r, |t| {
                                tracker.event(events[t.index()]);
                                true
                            });
                        }
                    }
                }
                pos += size as usize;
                tracker.end_chunk();
            }
            streams.push(StreamPartitions {
                thread: start.thread,
                rule: start.rule.0,
                sizes,
                lengths,
                levels: tracker.finish(),
            });
        }
        Ok(PartitionIndex { streams })
    }

    /// The serialized index (the bytes of the `.wpp` section).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        write_varint(&mut out, self.streams.len() as u64);
        for s in &self.streams {
            write_varint(&mut out, u64::from(s.thread.0));
            write_varint(&mut out, u64::from(s.rule));
            write_varint(&mut out, s.sizes.len() as u64);
            for &n in s.sizes.iter().chain(&s.lengths) {
                write_varint(&mut out, n);
            }
            s.levels.write(&mut out);
        }
        out
    }

    /// Reads an index, checking its structure; `base` is the section's offset in its file (for
    /// error offsets).
    pub fn from_bytes(bytes: &[u8], base: u64) -> Result<Self, QueryError> {
        let corrupt = QueryError::corrupt(CONTAINER);
        let mut r = Reader::new(bytes, base);
        if r.bytes(4, "magic").map_err(&corrupt)? != MAGIC {
            return Err(QueryError::invalid(CONTAINER, "magic", r.offset()));
        }
        let version = r.u8("version").map_err(&corrupt)?;
        if !(1..=VERSION).contains(&version) {
            return Err(corrupt(r.fail(
                "version",
                WireErrorKind::OutOfRange {
                    value: version.into(),
                    limit: VERSION.into(),
                },
            )));
        }
        let n = r.count(4, "stream count").map_err(&corrupt)?;
        let mut streams = Vec::with_capacity(n);
        for _ in 0..n {
            let thread = r.varint_max(u32::MAX.into(), "thread").map_err(&corrupt)? as u32;
            let rule = r
                .varint_max(u32::MAX.into(), "start rule")
                .map_err(&corrupt)? as u32;
            let parts = r.count(1, "partition count").map_err(&corrupt)?;
            let mut sizes = Vec::with_capacity(parts);
            for _ in 0..parts {
                sizes.push(
                    r.varint_max(u32::MAX.into(), "partition size")
                        .map_err(&corrupt)?,
                );
            }
            let mut lengths = Vec::with_capacity(parts);
            for _ in 0..parts {
                lengths.push(r.varint("partition length").map_err(&corrupt)?);
            }
            let layout = if version == 1 {
                Layout::Dense
            } else {
                Layout::Sparse
            };
            let levels = LevelIndex::read(&mut r, CONTAINER, layout)?;
            if levels.len() != parts {
                return Err(QueryError::invalid(
                    CONTAINER,
                    "partition levels",
                    r.offset(),
                ));
            }
            streams.push(StreamPartitions {
                thread: ThreadId(thread),
                rule,
                sizes,
                lengths,
                levels,
            });
        }
        if !r.is_empty() {
            return Err(QueryError::invalid(CONTAINER, "end of index", r.offset()));
        }
        Ok(PartitionIndex { streams })
    }

    /// Checks that the index describes `g`: the same start rules, partitions covering each
    /// body exactly, with the right expanded lengths. O(|S|).
    pub fn validate(&self, g: &Grammar) -> Result<(), QueryError> {
        self.check_shape(g)?;
        for (s, start) in self.streams.iter().zip(g.starts()) {
            if part_lengths(g, g.body(start.rule), &s.sizes) != s.lengths {
                return Err(QueryError::Mismatch {
                    container: CONTAINER,
                    reason: format!("partition lengths of thread {} are wrong", s.thread.0),
                });
            }
        }
        Ok(())
    }

    /// The O(partitions) part of [`validate`](Self::validate): streams and partition sizes.
    fn check_shape(&self, g: &Grammar) -> Result<(), QueryError> {
        let mismatch = |reason: String| QueryError::Mismatch {
            container: CONTAINER,
            reason,
        };
        if self.streams.len() != g.starts().len() {
            return Err(mismatch(format!(
                "{} streams for {} start rules",
                self.streams.len(),
                g.starts().len()
            )));
        }
        for (s, start) in self.streams.iter().zip(g.starts()) {
            if s.thread != start.thread || s.rule != start.rule.0 {
                return Err(mismatch(format!(
                    "stream for thread {} rule {} where the grammar has thread {} rule {}",
                    s.thread.0, s.rule, start.thread.0, start.rule.0
                )));
            }
            let total = s.sizes.iter().try_fold(0u64, |a, &n| a.checked_add(n));
            if total != Some(g.body(start.rule).len() as u64) || s.lengths.len() != s.sizes.len() {
                return Err(mismatch(format!(
                    "partitions of thread {} do not cover its start rule",
                    s.thread.0
                )));
            }
        }
        Ok(())
    }

    /// Serialized size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.to_bytes().len()
    }
}

/// What scheme 4 did, for benchmarks.
#[derive(Clone, Copy, Debug, Default)]
pub struct PartitionStats {
    /// Partitions scanned with scheme 2.
    pub scanned: usize,
    /// Partitions skipped using the index.
    pub skipped: usize,
    /// Rules summarized.
    pub rules_summarized: usize,
}

/// Scheme 4 on every thread. The index should have been [validated](PartitionIndex::validate)
/// against `g` once; only its shape is checked here.
pub fn run(
    g: &Grammar,
    alphabet: &Alphabet,
    index: &PartitionIndex,
    query: &PathQuery,
    mode: Mode,
) -> Result<(Vec<StreamMatch>, PartitionStats), QueryError> {
    index.check_shape(g)?;
    let mut m = Matcher::new(g, alphabet, query)?;
    let mut stats = PartitionStats::default();
    let mut out = Vec::with_capacity(g.starts().len());
    for (start, parts) in g.starts().iter().zip(&index.streams) {
        let body = g.body(start.rule);
        let (mut first, mut count) = (None, 0);
        let mut stack: Vec<u16> = Vec::new();
        let (mut pos, mut offset) = (0usize, 0u64);
        for (c, &size) in parts.sizes.iter().enumerate() {
            let symbols = &body[pos..pos + size as usize];
            pos += size as usize;
            if !parts.levels.contains(query.function, c) {
                let lv = parts.levels.levels(c);
                stack.truncate(lv.smallest as usize);
                stack.resize(lv.exit as usize, super::NIL);
                offset = offset.saturating_add(parts.lengths[c]);
                stats.skipped += 1;
                continue;
            }
            stats.scanned += 1;
            if !m.scan(&mut stack, symbols, offset, mode, &mut first, &mut count) {
                break;
            }
            offset = offset.saturating_add(parts.lengths[c]);
        }
        out.push(StreamMatch::new(start.thread, first, count, mode));
    }
    stats.rules_summarized = m.rules_summarized();
    Ok((out, stats))
}
