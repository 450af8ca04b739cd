//! Trace files: a streaming binary format for recordings and a line-oriented text format for
//! examples, tests and users' own tools, behind one reader that detects which a file is.
//!
//! * [`binary`] — magic `WPPT`, a checksummed program database, then checksummed chunks of
//!   varint events. A file cut short reads up to its last whole chunk, then reports
//!   [`TraceError::Truncated`]; a damaged chunk is reported by byte offset.
//! * [`text`] — one event per line (`F name`, `B 3`, `P 7`, `E`, `T 2`).
//!
//! [`open`] maps a file and detects its format by the magic (a text trace cannot start with
//! `WPPT`, since `W` is no event letter); [`create`] writes either format. Both formats carry
//! the [`ProgramDb`]; a [`TraceReader`] has it before the first event, so a converter can write
//! the output header first.
//!
//! Reading is batched: decoders fill a reused buffer of at most [`binary::BATCH_EVENTS`]
//! events, and [`TraceReader`]'s iterator hands them out one at a time, so iteration costs a
//! bounds check per event and decoding runs in a tight loop. [`TraceReader::for_each_batch`]
//! exposes the batches for bulk consumers.
//!
//! A recording that elided the events of blocks its CFG implies carries them in its program
//! database; the reader puts them back ([`restore`]) before anything else sees the events, and
//! hands out the database without that table, so every consumer — converters, compressors,
//! `verify`, queries — reads the trace as if nothing had been elided. A recording of blocks as
//! paths ([`ProgramDb::paths_are_blocks`]) is read the same way through the [`Restore`] that
//! `wpp_paths::trace` installs, which decodes each path to its blocks; without it, reading
//! stops with [`TraceError::PathsNotDecoded`] rather than hand out paths for blocks.
//!
//! Traces hold several threads' events interleaved; [`threads`] splits them into per-thread
//! streams, which is what compressors and equality are defined on.

mod ahead;
pub mod binary;
mod bounds;
mod restore;
pub mod text;
pub mod threads;

use crate::event::Event;
use crate::program::ProgramDb;
use crate::wire::WireError;
use std::io::{BufWriter, Read, Write};
use std::path::Path;

pub use ahead::{Ahead, ReadAhead};
pub use binary::{encode_event, TraceWriter};
pub use restore::Restore;
pub use text::TextWriter;

/// Why a trace could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The underlying reader or writer failed.
    #[error("I/O error")]
    Io(#[from] std::io::Error),
    /// A value could not be decoded (truncated inside a chunk, overlong varint, …).
    #[error(transparent)]
    Wire(#[from] WireError),
    /// The file does not start with the binary magic.
    #[error("not a binary wpp trace: bad magic {found:02x?} at byte offset 0")]
    BadMagic {
        /// The first four bytes.
        found: [u8; 4],
    },
    /// The file was written by an incompatible version of the format.
    #[error(
        "unsupported trace format version {version} at byte offset {offset} \
         (this build reads versions {} to {})",
        binary::OLDEST_VERSION,
        binary::VERSION
    )]
    UnsupportedVersion {
        /// The version in the file.
        version: u16,
        /// Where the version is stored.
        offset: u64,
    },
    /// A checksum did not match: the named item is damaged.
    #[error("checksum mismatch in the {what} at byte offset {offset}")]
    Checksum {
        /// The damaged item, e.g. `"chunk payload"`.
        what: &'static str,
        /// Where the item starts.
        offset: u64,
    },
    /// Checksums matched but the content breaks the format.
    #[error("malformed trace at byte offset {offset}: {reason}")]
    Malformed {
        /// Where the offending item starts.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// The program database in the header could not be deserialized.
    #[error("invalid program database at byte offset {offset}: {message}")]
    Header {
        /// Where the database starts.
        offset: u64,
        /// The deserializer's message.
        message: String,
    },
    /// The file ends before its end marker, as a recording cut short does. Everything before
    /// `offset` is valid: the reader has already yielded those `events`.
    #[error(
        "trace is truncated at byte offset {offset} (the recording was cut short?); \
         the {events} events before it are intact"
    )]
    Truncated {
        /// Where the valid data ends (the start of the incomplete chunk).
        offset: u64,
        /// Events in the whole chunks before `offset`.
        events: u64,
    },
    /// A line of a text trace is not an event.
    #[error("line {line}: {message}: `{content}`")]
    Parse {
        /// 1-based line number.
        line: u64,
        /// The line (shortened if long).
        content: String,
        /// What is wrong.
        message: &'static str,
    },
    /// An event of a text trace names an id its program database does not declare.
    #[error("line {line}: {reason}")]
    Undeclared {
        /// 1-based line number.
        line: u64,
        /// Which id, and the bound it breaks.
        reason: String,
    },
    /// A block id outside the CFG of the function it runs in ([`bounds`]).
    #[error("event {event} of the trace (thread {thread}): {reason}")]
    OutOfFunction {
        /// 0-based index of the event in the trace.
        event: u64,
        /// Its thread.
        thread: u32,
        /// Which id, and the bound it breaks.
        reason: String,
    },
    /// A caller handed the writer something the format cannot hold.
    #[error("invalid chunk: {0}")]
    InvalidChunk(&'static str),
    /// Recorded events that do not stand for any events (a `Path` id its function's CFG does
    /// not have, in a trace of blocks recorded as paths).
    #[error("{0}")]
    Unrestorable(String),
    /// A trace of blocks recorded as paths, read without the decoder that turns them back
    /// into blocks (a reader built below `wpp-paths`).
    #[error(
        "this trace records its blocks as paths, and this reader cannot decode them (open it \
         with `wpp_paths::trace::open`)"
    )]
    PathsNotDecoded,
}

impl TraceError {
    fn malformed(offset: u64, reason: impl Into<String>) -> Self {
        TraceError::Malformed {
            offset,
            reason: reason.into(),
        }
    }

    /// The byte offset the error refers to, where there is one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            TraceError::Wire(w) => Some(w.offset),
            TraceError::BadMagic { .. } => Some(0),
            TraceError::UnsupportedVersion { offset, .. }
            | TraceError::Checksum { offset, .. }
            | TraceError::Malformed { offset, .. }
            | TraceError::Header { offset, .. }
            | TraceError::Truncated { offset, .. } => Some(*offset),
            TraceError::Io(_)
            | TraceError::Parse { .. }
            | TraceError::Undeclared { .. }
            | TraceError::OutOfFunction { .. }
            | TraceError::InvalidChunk(_)
            | TraceError::Unrestorable(_)
            | TraceError::PathsNotDecoded => None,
        }
    }

    /// Whether this is a truncation, i.e. the events read so far are valid and only the tail
    /// of the file is missing.
    pub fn is_truncated(&self) -> bool {
        matches!(self, TraceError::Truncated { .. })
    }
}

/// Thread ids a trace may use are below this (2^20): the runtime numbers threads densely from
/// 0, and readers keep per-thread state, so an id is bounded before it can size anything.
pub const MAX_THREADS: u32 = 1 << 20;

/// Bounds on event ids, validated once where a trace is read (issue 14): a function id must
/// be declared by the program database, a block id must lie inside the largest CFG when every
/// function has one (and, checked per batch with the call stacks, inside the CFG of its own
/// function: `bounds`), and a thread id must be below [`MAX_THREADS`]. Every index built from a
/// trace may then be sized by the database rather than by the largest id in the file.
///
/// Path ids are not bounded here: their range is the Ball–Larus path count of the function's
/// CFG, which `wpp_paths` computes when it decodes a path trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdLimits {
    /// Function ids are below this: the functions the database declares.
    pub functions: u64,
    /// Block ids are below this: the most blocks of any CFG, or 2^32 when some function has
    /// no CFG (its block ids are then unknown).
    pub blocks: u64,
    /// Thread ids are below this: [`MAX_THREADS`].
    pub threads: u64,
}

impl IdLimits {
    /// The limits `db` implies.
    pub fn of(db: &ProgramDb) -> Self {
        let cfgs: Option<Vec<usize>> = db
            .functions
            .iter()
            .map(|f| f.cfg.as_ref().map(|c| c.successors.len()))
            .collect();
        let blocks = match cfgs {
            Some(sizes) if !sizes.is_empty() => sizes.into_iter().max().unwrap_or(0) as u64,
            _ => 1 << 32,
        };
        IdLimits {
            functions: db.functions.len() as u64,
            blocks,
            threads: u64::from(MAX_THREADS),
        }
    }

    /// Why `event` breaks the limits, if it does.
    pub fn check(&self, event: Event) -> Result<(), String> {
        match event {
            Event::Enter(f) if u64::from(f.0) >= self.functions => Err(format!(
                "function id {f} is not declared: the program database declares {} functions",
                self.functions
            )),
            Event::Block(b) if u64::from(b.0) >= self.blocks => Err(format!(
                "block id {b} is out of range: the largest CFG in the program database has {} \
                 blocks",
                self.blocks
            )),
            Event::Thread(t) if u64::from(t.0) >= self.threads => Err(format!(
                "thread id {t} is out of range: thread ids must be below {}",
                self.threads
            )),
            _ => Ok(()),
        }
    }
}

/// The two trace file formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// The chunked binary format of [`binary`].
    Binary,
    /// The one-event-per-line format of [`text`].
    Text,
}

/// A whole file's bytes: memory-mapped, or owned (small inputs, streams read to the end).
pub(crate) enum Bytes {
    Map(memmap2::Mmap),
    Owned(Vec<u8>),
}

/// Mapped bytes read past this many are dropped from memory ([`Bytes::release`]); a few pages
/// in unit tests, so that small files exercise it.
const RELEASE_BYTES: usize = if cfg!(test) { 4 << 12 } else { 64 << 20 };

impl Bytes {
    /// Drops from the process's memory the mapped pages of every whole [`RELEASE_BYTES`]
    /// window that a reader moving from offset `previous` to `now` has left behind: a reader
    /// going through a trace of any length then holds a bounded part of it (mapped pages read
    /// once would otherwise stay resident, and count in the reader's RSS, up to the file's
    /// size). Owned bytes are left as they are.
    pub(crate) fn release_behind(&self, previous: usize, now: usize) {
        let Bytes::Map(map) = self else { return };
        let (from, to) = (previous / RELEASE_BYTES, now.min(map.len()) / RELEASE_BYTES);
        if to > from {
            // SAFETY: the map is private and read-only, so `MADV_DONTNEED` only drops clean
            // pages; a later access faults them in again from the file, with the same bytes.
            // No byte is changed under a live borrow.
            #[cfg(unix)]
            let _ = unsafe {
                map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    from * RELEASE_BYTES,
                    (to - from) * RELEASE_BYTES,
                )
            };
        }
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

enum Decoder {
    Binary(binary::BinaryDecoder),
    Text(text::TextDecoder),
}

/// Where a truncated trace stops: see [`TraceError::Truncated`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Truncation {
    /// Where the valid data ends.
    pub offset: u64,
    /// Events before it.
    pub events: u64,
}

/// A streaming reader of either trace format: an iterator of `Result<Event, TraceError>` that
/// ends after the first error.
pub struct TraceReader {
    program: ProgramDb,
    format: Format,
    decoder: Decoder,
    batch: Vec<Event>,
    pos: usize,
    done: bool,
    allow_truncated: bool,
    truncation: Option<Truncation>,
    /// An error a decoder hit after it had already decoded events into the batch: those
    /// events are handed out first, then this error (found by the `trace_text` fuzz target;
    /// the error used to come first and the events after it).
    pending: Option<TraceError>,
    /// Per-function block bounds, where every function has a CFG.
    bounds: Option<bounds::BlockBounds>,
    /// Puts back the events the recording elided or wrote as paths, where it did (boxed:
    /// most traces need neither, and readers are held in enums beside smaller inputs).
    restorer: Option<Box<dyn Restore>>,
}

impl TraceReader {
    fn new(mut program: ProgramDb, format: Format, decoder: Decoder) -> Self {
        TraceReader {
            restorer: restore::Restorer::take(&mut program).map(|r| Box::new(r) as _),
            bounds: bounds::BlockBounds::of(&program),
            program,
            format,
            decoder,
            batch: Vec::new(),
            pos: 0,
            done: false,
            allow_truncated: false,
            truncation: None,
            pending: None,
        }
    }

    /// A reader over a whole file's bytes, detecting the format by the magic.
    fn from_whole(bytes: Bytes) -> Result<Self, TraceError> {
        if bytes.starts_with(&binary::MAGIC) {
            let (db, d) = binary::BinaryDecoder::from_bytes(bytes)?;
            Ok(Self::new(db, Format::Binary, Decoder::Binary(d)))
        } else {
            let (db, d) = text::TextDecoder::new(bytes)?;
            Ok(Self::new(db, Format::Text, Decoder::Text(d)))
        }
    }

    /// A reader over bytes in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self, TraceError> {
        Self::from_whole(Bytes::Owned(bytes))
    }

    /// A reader over a stream. Binary traces are read chunk by chunk; a text trace is read into
    /// memory first (its program database is only known after the last line).
    pub fn from_reader(mut r: impl Read + Send + 'static) -> Result<Self, TraceError> {
        let mut magic = [0u8; 4];
        let n = binary::read_full(&mut r, &mut magic)?;
        if n == 4 && magic == binary::MAGIC {
            let (db, d) = binary::BinaryDecoder::from_stream(magic, Box::new(r))?;
            return Ok(Self::new(db, Format::Binary, Decoder::Binary(d)));
        }
        let mut all = magic[..n].to_vec();
        r.read_to_end(&mut all)?;
        Self::from_bytes(all)
    }

    /// The program database from the file's header (binary) or its names (text), without its
    /// implied-block table: the events it describes are restored.
    pub fn program(&self) -> &ProgramDb {
        &self.program
    }

    /// The detected format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// With `yes`, a truncated file ends the stream cleanly instead of yielding
    /// [`TraceError::Truncated`]; [`truncation`](Self::truncation) then says where it stopped.
    pub fn allow_truncated(mut self, yes: bool) -> Self {
        self.allow_truncated = yes;
        self
    }

    /// Where the file was found truncated, if it was and truncation is allowed; `events`
    /// counts the restored events too.
    pub fn truncation(&self) -> Option<Truncation> {
        self.truncation.map(|t| Truncation {
            events: t.events.saturating_add_signed(self.restored_events()),
            ..t
        })
    }

    /// Events handed out so far minus events recorded (0 for a recording that elided
    /// nothing and wrote no blocks as paths).
    pub fn restored_events(&self) -> i64 {
        self.restorer.as_ref().map_or(0, |r| r.added())
    }

    /// Whether the recording wrote its blocks as paths ([`ProgramDb::paths_are_blocks`]) and
    /// they still need [`decoding_paths`](Self::decoding_paths).
    pub fn paths_are_blocks(&self) -> bool {
        self.program.paths_are_blocks
    }

    /// Reads a trace of blocks recorded as paths through `decoder`, which turns each `Path`
    /// into its blocks (`wpp_paths::trace` builds it from [`program`](Self::program)). Call
    /// before reading any event.
    pub fn decoding_paths(mut self, decoder: Box<dyn Restore>) -> Self {
        self.restorer = Some(decoder);
        self.program.paths_are_blocks = false;
        self
    }

    /// The next run of events (the rest of the current batch), or `None` at the end.
    pub fn next_batch(&mut self) -> Result<Option<&[Event]>, TraceError> {
        if self.pos == self.batch.len() && !self.refill()? {
            return Ok(None);
        }
        let run = &self.batch[self.pos..];
        self.pos = self.batch.len();
        Ok(Some(run))
    }

    /// Calls `f` on each run of consecutive events until the end; the fastest way to read.
    pub fn for_each_batch(&mut self, mut f: impl FnMut(&[Event])) -> Result<(), TraceError> {
        while let Some(run) = self.next_batch()? {
            f(run);
        }
        Ok(())
    }

    /// Reads every remaining event into memory.
    pub fn read_all(mut self) -> Result<Vec<Event>, TraceError> {
        let mut all = Vec::new();
        self.for_each_batch(|run| all.extend_from_slice(run))?;
        Ok(all)
    }

    /// Decodes the next batch. `Ok(false)` at the end (or after an error was returned).
    #[inline(never)]
    fn refill(&mut self) -> Result<bool, TraceError> {
        self.batch.clear();
        self.pos = 0;
        if let Some(r) = self.restorer.as_mut().filter(|r| r.pending()) {
            // Events decoded earlier come before a pending error or the end.
            let restored = r.restore(&mut self.batch, binary::BATCH_EVENTS);
            return self.deliver(restored.map(|()| true));
        }
        if let Some(e) = self.pending.take() {
            return Err(self.counting_restored(e));
        }
        if self.done {
            return Ok(false);
        }
        if self.program.paths_are_blocks {
            self.done = true;
            return Err(TraceError::PathsNotDecoded);
        }
        let decoded = match &mut self.restorer {
            Some(r) => {
                let decoded = Self::decode(&mut self.decoder, r.recorded());
                // An event that cannot be restored comes before the decoder's end or error.
                match r.restore(&mut self.batch, binary::BATCH_EVENTS) {
                    Ok(()) => decoded,
                    Err(e) => Err(e),
                }
            }
            None => Self::decode(&mut self.decoder, &mut self.batch),
        };
        self.deliver(decoded)
    }

    fn decode(decoder: &mut Decoder, out: &mut Vec<Event>) -> Result<bool, TraceError> {
        match decoder {
            Decoder::Binary(d) => d.fill(out),
            Decoder::Text(d) => d.fill(out),
        }
    }

    /// Checks the new batch and hands it out before the decoder's end or error `more`.
    fn deliver(&mut self, mut more: Result<bool, TraceError>) -> Result<bool, TraceError> {
        if let Some(Err((at, e))) = self.bounds.as_mut().map(|b| b.check(&self.batch)) {
            self.batch.truncate(at);
            if let Some(r) = &mut self.restorer {
                r.stop();
            }
            more = Err(e);
        }
        let any = !self.batch.is_empty();
        match more {
            Ok(true) => Ok(true),
            Ok(false) => {
                self.done = true;
                Ok(any)
            }
            Err(TraceError::Truncated { offset, events }) if self.allow_truncated => {
                self.done = true;
                self.truncation = Some(Truncation { offset, events });
                Ok(any)
            }
            Err(e) => {
                self.done = true;
                if any {
                    // Hand out the events decoded before the error first.
                    self.pending = Some(e);
                    Ok(true)
                } else {
                    Err(self.counting_restored(e))
                }
            }
        }
    }

    /// `e`, a truncation counting the restored events among those before it.
    fn counting_restored(&self, e: TraceError) -> TraceError {
        match e {
            TraceError::Truncated { offset, events } => TraceError::Truncated {
                offset,
                events: events.saturating_add_signed(self.restored_events()),
            },
            e => e,
        }
    }
}

impl Iterator for TraceReader {
    type Item = Result<Event, TraceError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.pos == self.batch.len() {
            // A successful refill leaves a non-empty batch.
            match self.refill() {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => return Some(Err(e)),
            }
        }
        let e = self.batch[self.pos];
        self.pos += 1;
        Some(Ok(e))
    }
}

/// Opens a trace file of either format, memory-mapping it.
pub fn open(path: impl AsRef<Path>) -> Result<TraceReader, TraceError> {
    let file = std::fs::File::open(path)?;
    if file.metadata()?.len() == 0 {
        // Mapping an empty file fails on some systems; an empty file is an empty text trace.
        return TraceReader::from_bytes(Vec::new());
    }
    // SAFETY: the map is read-only and private to this reader. If another process truncates or
    // rewrites the file while it is mapped, reads may see changed bytes or fault; every byte is
    // checksummed before use, so changed bytes become errors, and trace files are written once
    // and not modified in place, which is the contract documented for `open`.
    let map = unsafe { memmap2::Mmap::map(&file)? };
    TraceReader::from_whole(Bytes::Map(map))
}

/// Reads a whole trace file into memory (for tests and small files).
pub fn read_events(path: impl AsRef<Path>) -> Result<(ProgramDb, Vec<Event>), TraceError> {
    let reader = open(path)?;
    let db = reader.program().clone();
    Ok((db, reader.read_all()?))
}

/// A writer of either format, as returned by [`create`] and [`create_on`].
pub enum FileWriter<W: Write = std::fs::File> {
    /// A binary trace.
    Binary(TraceWriter<W>),
    /// A text trace.
    Text(TextWriter<BufWriter<W>>),
}

impl<W: Write> FileWriter<W> {
    /// Appends one event.
    #[inline]
    pub fn push(&mut self, event: Event) -> Result<(), TraceError> {
        match self {
            FileWriter::Binary(w) => w.push(event),
            FileWriter::Text(w) => w.push(event),
        }
    }

    /// Completes the trace (end marker, flush) and gives back what it was written to.
    pub fn finish(self) -> Result<W, TraceError> {
        match self {
            FileWriter::Binary(w) => w.finish(),
            FileWriter::Text(w) => w.finish()?.into_inner().map_err(|e| e.into_error().into()),
        }
    }
}

/// Creates (or truncates) a trace file in `format` for a program described by `db`.
pub fn create(
    path: impl AsRef<Path>,
    format: Format,
    db: &ProgramDb,
) -> Result<FileWriter, TraceError> {
    create_on(std::fs::File::create(path)?, format, db)
}

/// A trace in `format` for a program described by `db`, written to `out` (a file, a pipe,
/// standard output); its header is written at once.
pub fn create_on<W: Write>(
    out: W,
    format: Format,
    db: &ProgramDb,
) -> Result<FileWriter<W>, TraceError> {
    Ok(match format {
        Format::Binary => FileWriter::Binary(TraceWriter::new(out, db)?),
        Format::Text => FileWriter::Text(TextWriter::new(BufWriter::new(out), db)?),
    })
}

/// Encodes `events` as a complete binary trace in memory.
pub fn to_binary(db: &ProgramDb, events: &[Event]) -> Result<Vec<u8>, TraceError> {
    let mut w = TraceWriter::new(Vec::new(), db)?;
    events.iter().try_for_each(|&e| w.push(e))?;
    w.finish()
}

/// Encodes `events` as a text trace in memory.
pub fn to_text(db: &ProgramDb, events: &[Event]) -> Result<Vec<u8>, TraceError> {
    let mut w = TextWriter::new(Vec::new(), db)?;
    events.iter().try_for_each(|&e| w.push(e))?;
    w.finish()
}

#[cfg(test)]
mod release_tests {
    use super::*;

    /// The bytes read the same after their pages were dropped (windows inside the map and one
    /// reaching past it); a trace read through many windows decodes to what was written.
    #[test]
    fn released_pages_read_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bytes");
        let data: Vec<u8> = (0..5 * RELEASE_BYTES)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        std::fs::write(&path, &data).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: a private read-only map of a file this test owns.
        let bytes = Bytes::Map(unsafe { memmap2::Mmap::map(&file).unwrap() });
        bytes.release_behind(0, RELEASE_BYTES - 1);
        bytes.release_behind(RELEASE_BYTES - 1, 3 * RELEASE_BYTES + 5);
        bytes.release_behind(3 * RELEASE_BYTES + 5, 10 * RELEASE_BYTES);
        assert_eq!(
            &bytes[..],
            &data[..],
            "dropped pages read again from the file"
        );
        Bytes::Owned(data.clone()).release_behind(0, 3 * RELEASE_BYTES);

        let events: Vec<Event> = (0..200_000u32)
            .map(|i| Event::Block(crate::BlockId(i % 1000)))
            .collect();
        let trace = dir.path().join("t.trace");
        let mut db = ProgramDb::default();
        db.intern("f");
        let mut w = create(&trace, Format::Binary, &db).unwrap();
        events.iter().for_each(|&e| w.push(e).unwrap());
        w.finish().unwrap();
        assert!(std::fs::metadata(&trace).unwrap().len() > 4 * RELEASE_BYTES as u64);
        assert_eq!(read_events(&trace).unwrap().1, events);
    }

    /// Kilobytes of `path`'s mappings resident in this process (`/proc/self/smaps`).
    #[cfg(target_os = "linux")]
    fn resident_kib(path: &Path) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let name = path.to_str().unwrap();
        let mut mine = false;
        let mut kib = 0;
        for line in smaps.lines() {
            if let Some(rss) = line.strip_prefix("Rss:") {
                if mine {
                    kib += rss.trim().trim_end_matches(" kB").parse::<u64>().unwrap();
                }
            } else if line.contains('-') && !line.ends_with(" kB") {
                mine = line.ends_with(name);
            }
        }
        kib
    }

    /// Opening a trace walks every chunk header for the last program chunk; the walk must not
    /// leave the file resident (a 10^10-event trace held 12 GB of RSS before any event was
    /// read). Chunks of 1 KiB against windows of 16 KiB: the walk faults in every window.
    #[cfg(target_os = "linux")]
    #[test]
    fn opening_a_trace_leaves_little_of_it_resident() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("t.trace");
        let mut db = ProgramDb::default();
        db.intern("f");
        let out = std::io::BufWriter::new(std::fs::File::create(&trace).unwrap());
        let mut w = binary::TraceWriter::with_chunk_bytes(out, &db, 1 << 10).unwrap();
        (0..2_000_000u32).for_each(|i| w.push(Event::Block(crate::BlockId(i % 1000))).unwrap());
        w.finish().unwrap();
        let len = std::fs::metadata(&trace).unwrap().len();
        assert!(len > 64 * RELEASE_BYTES as u64, "{len}");
        let reader = open(&trace).unwrap();
        let kib = resident_kib(&trace);
        assert!(
            kib * 1024 <= 2 * RELEASE_BYTES as u64,
            "{kib} KiB of a {len}-byte trace resident after opening it"
        );
        assert_eq!(reader.count(), 2_000_000);
    }
}
