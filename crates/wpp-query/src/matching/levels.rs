//! The per-chunk index shared by schemes 3 and 4 (Zhang–Gupta §4.3–4.4, Figures 7 and 10).
//!
//! For each chunk of a stream (a compressed chunk of the trace for scheme 3, a partition of the
//! start rule for scheme 4) the index keeps which functions it *contains*, its *exit level* and
//! its *smallest level*:
//!
//! * a chunk contains `f` if it enters `f` or executes a block inside an invocation of `f`
//!   (the invocation may have begun in an earlier chunk, so this is computed in context);
//! * the exit level is the nesting level (number of open invocations) after the chunk;
//! * the smallest level is the lowest nesting level reached inside the chunk, counting the level
//!   it starts at (the paper's "smallest end level", with "no E" meaning the entry level).
//!
//! A chunk that does not contain `F` changes the automaton's stack only by ending the
//! invocations above its smallest level and opening invocations of other functions up to its
//! exit level ([`Automaton::skip`](super::Automaton::skip)); it can hold no occurrence.
//!
//! # Layout
//!
//! ```text
//! varint  chunks
//! chunks × { varint exit_level, varint smallest_level }      smallest ≤ min(entry, exit)
//! varint  rows                                               functions the stream contains
//! rows × { varint id gap, ceil(chunks / 8) bytes }           gap: id for the first row, then
//!                                                            id − previous id − 1; bit c (LSB
//!                                                            first) = chunk c contains it
//! ```
//!
//! Function-major bit vectors are the paper's layout: a query reads one row. Only functions the
//! stream contains have a row ([`Layout::Sparse`]), so the index of a thread that runs one
//! function is one row however many functions the program declares (issue 14: the dense rows
//! of [`Layout::Dense`], one per function id up to the largest present, made 10^6 one-event
//! threads of a program with 10^6 functions cost 10^12 bytes). Example: two chunks, the first
//! entering `main` (function 0) and calling function 1 without returning, the second executing
//! a block of function 1 and returning to `main`: `02  02 00  01 01  02  00 01  00 03` — two
//! chunks (exit 2, smallest 0; exit 1, smallest 1), two rows, `main` in chunk 0 only (`01`: it
//! executes no block in chunk 1), function 1 (gap 0) in both (`03`).

use wpp_trace::wire::{write_varint, Reader};
use wpp_trace::{Event, FunctionId};

use crate::error::QueryError;

/// The deepest nesting level an index may claim. Skipping a chunk materializes its levels on
/// the automaton's stack, so a hostile index must not be able to claim more; 2^24 levels is
/// far beyond any real call depth.
pub const MAX_LEVEL: u64 = 1 << 24;

/// Nesting levels of one chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkLevels {
    /// Nesting level after the chunk.
    pub exit: u64,
    /// Lowest nesting level inside the chunk, including its entry level.
    pub smallest: u64,
}

/// How a [`LevelIndex`]'s function rows are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// A row for every function id below a count (the containers' version 1).
    Dense,
    /// A row for each function the stream contains, by increasing id (version 2).
    Sparse,
}

/// The index of one stream's chunks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LevelIndex {
    chunks: Vec<ChunkLevels>,
    /// The functions with a row, increasing.
    rows: Vec<u32>,
    bits: Vec<u8>,
}

impl LevelIndex {
    /// Number of chunks.
    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    /// Whether there are no chunks.
    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// The levels of chunk `c`.
    pub fn levels(&self, c: usize) -> ChunkLevels {
        self.chunks[c]
    }

    fn stride(&self) -> usize {
        self.chunks.len().div_ceil(8)
    }

    /// Whether chunk `c` contains function `f`.
    #[inline]
    pub fn contains(&self, f: FunctionId, c: usize) -> bool {
        let Ok(row) = self.rows.binary_search(&f.0) else {
            return false;
        };
        self.bits[row * self.stride() + c / 8] & (1 << (c % 8)) != 0
    }

    /// Number of chunks containing `f` (the paper's "block coverage").
    pub fn coverage(&self, f: FunctionId) -> usize {
        (0..self.len()).filter(|&c| self.contains(f, c)).count()
    }

    /// Appends the serialized index ([`Layout::Sparse`]).
    pub fn write(&self, out: &mut Vec<u8>) {
        write_varint(out, self.chunks.len() as u64);
        for c in &self.chunks {
            write_varint(out, c.exit);
            write_varint(out, c.smallest);
        }
        write_varint(out, self.rows.len() as u64);
        let stride = self.stride();
        let mut next = 0u64;
        for (f, row) in self.rows.iter().zip(self.bits.chunks(stride.max(1))) {
            write_varint(out, u64::from(*f) - next);
            out.extend_from_slice(&row[..stride]);
            next = u64::from(*f) + 1;
        }
    }

    /// Reads and validates an index stored in `layout`: levels consistent from chunk to chunk
    /// (starting at level 0), bit vectors present in full, row ids below 2^32.
    pub fn read(
        r: &mut Reader<'_>,
        container: &'static str,
        layout: Layout,
    ) -> Result<LevelIndex, QueryError> {
        let corrupt = QueryError::corrupt(container);
        let n = r.count(2, "chunk count").map_err(&corrupt)?;
        let mut chunks = Vec::with_capacity(n);
        let mut entry = 0u64;
        for _ in 0..n {
            let exit = r.varint_max(MAX_LEVEL, "exit level").map_err(&corrupt)?;
            let smallest = r
                .varint_max(entry.min(exit), "smallest level")
                .map_err(&corrupt)?;
            chunks.push(ChunkLevels { exit, smallest });
            entry = exit;
        }
        let stride = n.div_ceil(8);
        let (rows, bits) = match layout {
            Layout::Dense => Self::read_dense(r, stride, &corrupt)?,
            Layout::Sparse => Self::read_sparse(r, stride, &corrupt)?,
        };
        if n % 8 != 0 {
            let unused = !((1u8 << (n % 8)) - 1);
            if bits.chunks(stride).any(|row| row[stride - 1] & unused != 0) {
                return Err(QueryError::invalid(
                    container,
                    "function bit vectors (a bit past the last chunk)",
                    r.offset(),
                ));
            }
        }
        Ok(LevelIndex { chunks, rows, bits })
    }

    /// Version 1's rows, one per function id below a count; empty rows are dropped.
    fn read_dense(
        r: &mut Reader<'_>,
        stride: usize,
        corrupt: &impl Fn(wpp_trace::wire::WireError) -> QueryError,
    ) -> Result<(Vec<u32>, Vec<u8>), QueryError> {
        let limit = r
            .remaining()
            .checked_div(stride)
            .map_or(u64::from(u32::MAX), |n| (n as u64).min(u32::MAX.into()));
        let functions = r.varint_max(limit, "function count").map_err(corrupt)?;
        let dense = r
            .bytes(functions as usize * stride, "function bit vectors")
            .map_err(corrupt)?;
        let (mut rows, mut bits) = (Vec::new(), Vec::new());
        for (f, row) in dense.chunks(stride.max(1)).enumerate() {
            if row.iter().any(|&b| b != 0) {
                rows.push(f as u32);
                bits.extend_from_slice(row);
            }
        }
        Ok((rows, bits))
    }

    /// Version 2's rows: an id gap and a bit vector each.
    fn read_sparse(
        r: &mut Reader<'_>,
        stride: usize,
        corrupt: &impl Fn(wpp_trace::wire::WireError) -> QueryError,
    ) -> Result<(Vec<u32>, Vec<u8>), QueryError> {
        let count = r.count(1 + stride, "row count").map_err(corrupt)?;
        let (mut rows, mut bits) = (
            Vec::with_capacity(count),
            Vec::with_capacity(count * stride),
        );
        let mut next = 0u64;
        for _ in 0..count {
            let gap = r
                .varint_max(u64::from(u32::MAX) - next, "row id gap")
                .map_err(corrupt)?;
            rows.push((next + gap) as u32);
            next += gap + 1;
            bits.extend_from_slice(r.bytes(stride, "function bit vector").map_err(corrupt)?);
        }
        Ok((rows, bits))
    }
}

/// Builds a [`LevelIndex`] from a stream of events cut into chunks.
#[derive(Clone, Debug, Default)]
pub struct LevelTracker {
    stack: Vec<FunctionId>,
    smallest: u64,
    /// Functions the current chunk contains, with repeats; sorted and deduplicated whenever
    /// it doubles past its distinct count ([`Self::mark`]), so it holds at most about twice
    /// the distinct functions. Not a bitmap sized by the largest id, nor a hash set, so a
    /// tracker per thread costs what its events need.
    touched: Vec<u32>,
    /// Distinct entries of `touched` at its last deduplication.
    distinct: usize,
    chunks: Vec<ChunkLevels>,
    members: Vec<(u32, u32)>,
}

impl LevelTracker {
    /// A tracker at nesting level 0.
    pub fn new() -> Self {
        Self::default()
    }

    fn mark(&mut self, f: FunctionId) {
        if self.touched.last() == Some(&f.0) {
            return;
        }
        self.touched.push(f.0);
        if self.touched.len() > 2 * self.distinct.max(32) {
            self.dedup();
        }
    }

    fn dedup(&mut self) {
        self.touched.sort_unstable();
        self.touched.dedup();
        self.distinct = self.touched.len();
    }

    /// Consumes one event of the current chunk.
    #[inline]
    pub fn event(&mut self, e: Event) {
        match e {
            Event::Enter(f) => {
                self.mark(f);
                self.stack.push(f);
            }
            Event::Leave => {
                self.stack.pop();
                self.smallest = self.smallest.min(self.stack.len() as u64);
            }
            Event::Block(_) | Event::Path(_) => {
                if let Some(&f) = self.stack.last() {
                    self.mark(f);
                }
            }
            Event::Thread(_) => {}
        }
    }

    /// Ends the current chunk.
    pub fn end_chunk(&mut self) {
        let c = self.chunks.len() as u32;
        self.chunks.push(ChunkLevels {
            exit: self.stack.len() as u64,
            smallest: self.smallest,
        });
        self.dedup();
        self.members.extend(self.touched.drain(..).map(|f| (f, c)));
        self.distinct = 0;
        self.smallest = self.stack.len() as u64;
    }

    /// The current nesting level.
    pub fn depth(&self) -> u64 {
        self.stack.len() as u64
    }

    /// The finished index (call [`end_chunk`](Self::end_chunk) for the last chunk first).
    pub fn finish(mut self) -> LevelIndex {
        self.members.sort_unstable();
        let stride = self.chunks.len().div_ceil(8);
        let (mut rows, mut bits) = (Vec::<u32>::new(), Vec::new());
        for (f, c) in self.members {
            if rows.last() != Some(&f) {
                rows.push(f);
                bits.resize(bits.len() + stride, 0);
            }
            let row = bits.len() - stride;
            bits[row + c as usize / 8] |= 1 << (c % 8);
        }
        LevelIndex {
            chunks: self.chunks,
            rows,
            bits,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example_is_pinned() {
        let mut t = LevelTracker::new();
        for e in [
            Event::Enter(FunctionId(0)),
            Event::Block(wpp_trace::BlockId(0)),
        ] {
            t.event(e);
        }
        t.event(Event::Enter(FunctionId(1)));
        t.end_chunk();
        t.event(Event::Block(wpp_trace::BlockId(1)));
        t.event(Event::Leave);
        t.end_chunk();
        let idx = t.finish();
        let mut out = Vec::new();
        idx.write(&mut out);
        assert_eq!(out, [2, 2, 0, 1, 1, 2, 0, 1, 0, 3]);
        let back = LevelIndex::read(&mut Reader::new(&out, 0), "test", Layout::Sparse).unwrap();
        assert_eq!(back, idx);
        let dense = [2u8, 2, 0, 1, 1, 3, 1, 3, 0];
        let back = LevelIndex::read(&mut Reader::new(&dense, 0), "test", Layout::Dense).unwrap();
        assert_eq!(back, idx);
        assert!(back.contains(FunctionId(1), 1) && back.contains(FunctionId(0), 0));
        assert!(!back.contains(FunctionId(0), 1) && !back.contains(FunctionId(7), 0));
    }

    #[test]
    fn inconsistent_levels_and_short_bits_are_errors() {
        // smallest level 3 above the entry level 0
        let read = |b: &[u8], layout| LevelIndex::read(&mut Reader::new(b, 0), "t", layout);
        for layout in [Layout::Dense, Layout::Sparse] {
            let bad = [1u8, 4, 3, 0];
            assert!(read(&bad, layout).is_err());
        }
        // one function announced, no bit vector
        assert!(read(&[1u8, 0, 0, 1], Layout::Dense).is_err());
        assert!(read(&[1u8, 0, 0, 1, 0], Layout::Sparse).is_err());
        // a bit for a chunk that does not exist
        assert!(read(&[1u8, 0, 0, 1, 0b10], Layout::Dense).is_err());
        assert!(read(&[1u8, 0, 0, 1, 0, 0b10], Layout::Sparse).is_err());
        // a row id past 2^32
        assert!(read(
            &[1u8, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0x1f, 1],
            Layout::Sparse
        )
        .is_err());
    }
}
