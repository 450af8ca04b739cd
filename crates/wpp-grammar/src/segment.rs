//! Any length in bounded memory: a trace compressed one *segment* at a time (issue 15 item 3).
//!
//! Every compressor's memory grows with its grammar, and a grammar grows with the trace: a
//! server recorded for hours (10^11 events) would not fit. [`SegmentedCompressor`] closes the
//! grammar every `segment_events` trace events ([`TraceCompressor::close_segment`]), writes it
//! to the file at once ([`SegmentWriter`]) and frees it, then goes on with a fresh grammar over
//! the same alphabet; peak memory is one segment's compressor and grammar, whatever the
//! length. The file is read back as one run: the reader joins the segments' grammars
//! ([`crate::join`], as parallel compression joins chunks), each thread's start rule the
//! concatenation of its segment start rules ([`crate::file`]'s version 4).
//!
//! Cutting costs what joining chunks costs: repetition across segments is found only in rules
//! (joined by content), not at the top level, and digrams may repeat across segments. On
//! `wpp synth` traces compressed on two threads (chunks joined anyway) the segmented file was
//! no larger (BENCHMARKS.md); the default segment ([`DEFAULT_SEGMENT_EVENTS`]) is long enough
//! that few rules are cut. Segments are cut at exact event counts (whatever the batches), so a
//! file does not depend on how its events were handed over. A trace of at most one segment is
//! written as version 3, byte for byte the unsegmented file.
//!
//! ```
//! use wpp_grammar::file::{SegmentWriter, WppFile};
//! use wpp_grammar::segment::SegmentedCompressor;
//! use wpp_grammar::{Algorithm, TraceCompressor};
//! use wpp_trace::{BlockId, Event, ProgramDb};
//!
//! let events: Vec<Event> = (0..100).map(|i| Event::Block(BlockId(i % 7))).collect();
//! let c = TraceCompressor::new(Algorithm::Sequitur, None, ProgramDb::default());
//! let w = SegmentWriter::new(Vec::new(), "memory", 3, 1);
//! let mut s = SegmentedCompressor::new(c, 30, w);
//! s.push_batch(&events).unwrap();
//! let (bytes, written) = s.finish().unwrap().write().unwrap();
//! assert_eq!(written.segments, 4); // 30 + 30 + 30 + 10 events
//! let file = WppFile::from_bytes(&bytes).unwrap();
//! let g = &file.grammar;
//! assert_eq!(g.expanded_len(g.starts()[0].rule), 100); // one run
//! ```

use std::io::Write;

use wpp_trace::{Event, ThreadId};

use crate::file::{SegmentWriter, WppError, WppFile, Written};
use crate::trace::{TraceCompressError, TraceCompressor};

/// Trace events per segment when the caller does not choose: 2^28 (268 M). Measured
/// (BENCHMARKS.md, "Any length, bounded memory"): the phrase compressor on two threads peaks at
/// 138 MiB of heap per segment on `wpp synth` traces, where one unsegmented grammar took
/// 0.35 GiB more per 10^9 events. High-entropy traces grow grammars ~10× faster (0.16 SEQUITUR
/// symbols per event, at ~30 bytes per symbol while compressing: ~1.3 GiB per segment for
/// SEQUITUR), so a smaller segment suits them.
pub const DEFAULT_SEGMENT_EVENTS: u64 = 1 << 28;

/// Why a segmented compression failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SegmentError {
    /// Compressing failed.
    #[error(transparent)]
    Compress(#[from] TraceCompressError),
    /// Writing the file failed.
    #[error(transparent)]
    Write(#[from] WppError),
}

/// A [`TraceCompressor`] whose grammar is closed and written every `segment_events` events.
pub struct SegmentedCompressor<W: Write> {
    compressor: TraceCompressor,
    writer: SegmentWriter<W>,
    /// Trace events per segment; 0: one segment, however long.
    segment_events: u64,
}

impl<W: Write> SegmentedCompressor<W> {
    /// Compresses with `compressor` into `writer`, a segment every `segment_events` trace
    /// events (0: never).
    pub fn new(compressor: TraceCompressor, segment_events: u64, writer: SegmentWriter<W>) -> Self {
        SegmentedCompressor {
            compressor,
            writer,
            segment_events,
        }
    }

    /// The compressor (events and threads so far).
    pub fn compressor(&self) -> &TraceCompressor {
        &self.compressor
    }

    /// Appends events, as [`TraceCompressor::push_batch`].
    pub fn push_batch(&mut self, events: &[Event]) -> Result<(), SegmentError> {
        self.push_split(events, |c, part| c.push_batch(part))
    }

    /// Appends events of `thread`, as [`TraceCompressor::push_thread`].
    pub fn push_thread(&mut self, thread: ThreadId, events: &[Event]) -> Result<(), SegmentError> {
        self.push_split(events, |c, part| c.push_thread(thread, part))
    }

    /// Pushes `events` with `push`, in parts that end where segments do; a full segment is
    /// closed only when more events come, so the last one is never empty.
    fn push_split(
        &mut self,
        mut events: &[Event],
        push: impl Fn(&mut TraceCompressor, &[Event]) -> Result<(), TraceCompressError>,
    ) -> Result<(), SegmentError> {
        if self.segment_events == 0 {
            return Ok(push(&mut self.compressor, events)?);
        }
        while !events.is_empty() {
            if self.compressor.segment_events() >= self.segment_events {
                self.close()?;
            }
            let room = self.segment_events - self.compressor.segment_events();
            let (now, later) = events.split_at(events.len().min(room as usize));
            push(&mut self.compressor, now)?;
            events = later;
        }
        Ok(())
    }

    /// Closes the current segment and writes it (a segment of thread switches alone has no
    /// grammar to write).
    fn close(&mut self) -> Result<(), SegmentError> {
        let events = self.compressor.segment_events();
        let g = self.compressor.close_segment()?;
        if !g.starts().is_empty() {
            self.writer.push(&g, events)?;
        }
        Ok(())
    }

    /// Finishes the last segment; the result's [`file`](Finished::file) may get extra
    /// sections before it is written.
    pub fn finish(self) -> Result<Finished<W>, SegmentError> {
        let last_events = self.compressor.segment_events();
        Ok(Finished {
            file: self.compressor.finish()?,
            writer: self.writer,
            last_events,
        })
    }
}

/// A finished segmented compression, its end not yet written.
pub struct Finished<W: Write> {
    /// The run's file: alphabet, program, events; its grammar is the last segment's.
    pub file: WppFile,
    writer: SegmentWriter<W>,
    last_events: u64,
}

impl<W: Write> Finished<W> {
    /// Segments written before the last: 0 when the file is the whole grammar.
    pub fn segments_before(&self) -> u64 {
        self.writer.segments()
    }

    /// Writes the rest of the file; returns the output and what was written.
    pub fn write(self) -> Result<(W, Written), WppError> {
        self.writer.finish(&self.file, self.last_events)
    }
}
