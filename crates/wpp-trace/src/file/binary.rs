//! The binary trace format: a checksummed header carrying the program database, then a stream
//! of self-checking chunks of varint-encoded events, each stored plain or zstd-compressed, then
//! an end marker.
//!
//! # Design
//!
//! A recording program can die at any instant (a crash, `SIGKILL`), so the format is built for
//! being cut short. The writer buffers events into a chunk and hands each finished chunk to the
//! operating system whole, so a file always consists of whole chunks followed by at most one
//! partial chunk. The reader yields every event of every whole chunk and then reports
//! [`TraceError::Truncated`] naming the byte offset where valid data ends — a distinct error
//! the caller may treat as "end of valid data" (see
//! [`TraceReader::allow_truncated`](super::TraceReader::allow_truncated)). A file that was
//! finished properly ends with an end marker, which is how the reader tells a complete trace
//! from one that happens to stop at a chunk boundary.
//!
//! Event traces are very repetitive (zstd level 1 shrinks real block traces 14–62×), and a
//! recorder writing gigabytes is bound by the disk, so a chunk's payload may be one zstd frame
//! ([`CODEC_ZSTD`]). Every chunk is compressed on its own: a reader needs no state from earlier
//! chunks, and a cut loses only the chunk it falls in. A chunk that does not shrink is stored
//! plain ([`CODEC_PLAIN`]), so the codec is per chunk.
//!
//! Every byte is covered by a CRC-32: the fixed preamble by its own checksum, the program
//! database, each chunk header and each stored chunk payload (compressed bytes, as in the file)
//! by theirs. A flipped bit is therefore reported as a checksum error at the start of the
//! damaged item, never misread as a truncation or as different events, and no damaged byte
//! reaches the decompressor. Every chunk header carries its sequence number (0, 1, 2, …) and
//! the end marker the number of chunks, so a chunk duplicated, swapped or dropped from the
//! middle is an error naming the byte offset where the count breaks, while a file missing its
//! tail is still a truncation (issue 14). Lengths are never trusted: a chunk may hold at most
//! [`MAX_CHUNK_BYTES`] of payload, stored and decompressed, the header at most
//! [`MAX_HEADER_BYTES`], and stored lengths are checked against the bytes actually present
//! before anything is allocated or read. A compressed payload must be exactly one zstd frame
//! that decompresses to exactly the decompressed length in its header: it is decompressed into
//! a reused buffer of that length, so a frame that claims or yields more (a decompression bomb)
//! or less is an error naming the chunk's offset. Decoding works in batches of at most
//! [`BATCH_EVENTS`] events into a reused buffer, so memory use is bounded by the largest chunk
//! whatever the file claims.
//!
//! # Layout (all integers little-endian)
//!
//! ```text
//! preamble   0  4  magic "WPPT"
//!            4  2  version (u16) = 4
//!            6  2  flags (u16) = 0; other values are rejected
//!            8  4  db_len (u32) ≤ MAX_HEADER_BYTES
//!           12  4  db_crc (u32): CRC-32 of the program database bytes
//!           16  4  preamble_crc (u32): CRC-32 of bytes 0..16
//! database  20  db_len bytes: the ProgramDb, postcard-serialized, then its CFG table
//! chunk      0  4  stored_len (u32), 1 ..= MAX_CHUNK_BYTES: payload bytes in the file
//!            4  4  event_count (u32), 1 ..= raw_len (every event takes ≥ 1 byte)
//!            8  4  raw_len (u32) ≤ MAX_CHUNK_BYTES: payload bytes once decompressed
//!           12  1  codec (u8): 0 = plain (raw_len = stored_len), 1 = one zstd frame,
//!                  2 = a program chunk (plain, event_count 0: see CODEC_PROGRAM)
//!           13  3  reserved, zero
//!           16  4  sequence (u32): 0 for the first chunk, then 1, 2, … (wrapping at 2^32)
//!           20  4  payload_crc (u32): CRC-32 of the stored payload
//!           24  4  header_crc (u32): CRC-32 of chunk bytes 0..24
//!           28  stored_len bytes: the payload, whose raw_len decoded bytes are event_count
//!               events
//! end        a chunk header with every field but sequence (the number of chunks) and
//!            header_crc zero and no payload; it must be the last 28 bytes of the file
//! ```
//!
//! The CFG table ([`crate::program`] documents it) gives each function's control-flow graph
//! and cut points, so the `Path` ids of the trace decode to blocks from the file alone.
//! Version 3 has 24-byte chunk headers without the sequence number (`payload_crc` at 16,
//! `header_crc` of bytes 0..20 at 20); versions 1 and 2 have 16-byte chunk headers —
//! `payload_len`, `event_count`, `payload_crc`, `header_crc`, all plain — and version 1 no CFG
//! table; this build reads all four and writes 4 ([`TraceWriter`] stores chunks plain unless
//! given a zstd level). Older versions have nothing to tell a duplicated or reordered chunk by.
//!
//! Each event is one varint (unsigned LEB128, see [`crate::wire`]) of `id << 3 | tag`:
//!
//! | tag | event | id |
//! |---|---|---|
//! | 0 | `Enter(f)` | function id (< 2^32) |
//! | 1 | `Leave` | must be 0 |
//! | 2 | `Block(b)` | block id (< 2^32) |
//! | 3 | `Path(p)` | path id, when p < 2^61 |
//! | 4 | `Thread(t)` | thread id (< 2^32) |
//! | 5 | `Path(p)`, escaped | must be 0; a second varint holds the full 64-bit p |
//! | 6, 7 | invalid | |
//!
//! Hot events are small ids, so most events take one or two bytes, in the spirit of Larus §2's
//! byte/short/word opcode variants.
//!
//! # Worked example
//!
//! A program database with one function `main` whose CFG is block 0 → block 1 (which
//! returns), and the trace `F main, B 0, B 1, P 300, E` (six bytes do not compress, so the
//! chunk is plain):
//!
//! ```text
//! 57 50 50 54  04 00  00 00       magic "WPPT", version 4, flags 0
//! 14 00 00 00                     db_len = 20
//! dc 6d b3 78                     db_crc
//! 85 57 f6 ff                     preamble_crc
//! 01 04 6d 61 69 6e 00 00 00      postcard: 1 function, name "main", file None, line None,
//!                                 block_lines []
//! 01  01 02 00  01 02  00         CFG table: 1 entry; present, 2 blocks, entry 0; block 0:
//!                                 1 successor at +1 (zigzag 2); block 1: none
//!     01 02  00  00               exits [1]; no cut nodes; no cut edges
//! 06 00 00 00  05 00 00 00        chunk: stored_len = 6, event_count = 5,
//! 06 00 00 00  00  00 00 00       raw_len = 6, codec plain, reserved
//! 00 00 00 00                     sequence = 0
//! 1b 3c e8 00  05 94 29 57        payload_crc, header_crc
//! 00                              Enter(0)   = 0 << 3 | 0
//! 02                              Block(0)   = 0 << 3 | 2
//! 0a                              Block(1)   = 1 << 3 | 2
//! e3 12                           Path(300)  = 300 << 3 | 3 = 2403 = varint e3 12
//! 01                              Leave      = 0 << 3 | 1
//! 00 00 00 00  00 00 00 00        end marker: stored_len = event_count = raw_len = 0,
//! 00 00 00 00  00 00 00 00        codec 0, reserved,
//! 01 00 00 00                     sequence = 1 (one chunk before it),
//! 00 00 00 00  be ca 6b 6f        payload_crc = 0, header_crc
//! ```
//!
//! Repeated 1000 times with zstd level 1, the same five events make one compressed chunk:
//! `stored_len` is the frame's length (a few dozen bytes), `event_count = 5000`,
//! `raw_len = 6000`, codec `01`, and the payload a zstd frame starting with the zstd magic
//! `28 b5 2f fd` (test `compressed_example_has_the_documented_header`; the frame's bytes
//! depend on the zstd version, so they are not pinned).
//!
//! In version 3 the example's preamble checksum is `0a be 6e 8b`, its chunk header
//! `06 00 00 00 05 00 00 00 06 00 00 00 00 00 00 00 1b 3c e8 00 20 cb 5c 22` and its end
//! marker twenty zero bytes then `8d 9b d5 0f` (test `version_3_worked_example_still_reads`).
//! In version 2 the example's chunk header is `06 00 00 00 05 00 00 00 1b 3c e8 00 65 d8 c6 e0`,
//! its end marker twelve zero bytes then `6f c6 d5 7b`, and its preamble checksum
//! `65 f2 cb 10`; in version 1 the same trace without the CFG has `db_len = 9`, the 9
//! postcard bytes only, and checksums `c1 6a 2a 13`, `2b 14 34 5d` (tests
//! `version_2_worked_example_still_reads`, `version_1_worked_example_still_reads`).
//!
//! The test `worked_example_is_pinned` checks these exact bytes; change the version together
//! with the layout.

use super::{Bytes, IdLimits, TraceError};
use crate::event::Event;
use crate::ids::{BlockId, FunctionId, PathId, ThreadId};
use crate::program::{DbLayout, ProgramDb};
use crate::wire::{write_varint, Reader};
use std::io::{Read, Write};

/// The first four bytes of every binary trace file.
pub const MAGIC: [u8; 4] = *b"WPPT";
/// The format version this build writes (and the newest it reads).
pub const VERSION: u16 = 4;
/// The oldest format version this build reads: version 1 has no CFG table in its database.
pub const OLDEST_VERSION: u16 = 1;
/// Bytes before the program database.
pub const PREAMBLE_LEN: usize = 20;
/// Bytes of a chunk header (and of the end marker) in version 4.
pub const CHUNK_HEADER_LEN: usize = 28;
/// Bytes of a chunk header in version 3, which has no sequence number.
pub const V3_CHUNK_HEADER_LEN: usize = 24;
/// Bytes of a chunk header in versions 1 and 2, which have no codec and no decoded length.
pub const OLD_CHUNK_HEADER_LEN: usize = 16;
/// Whether a version-4 trace whose first bytes are `head` and last bytes `tail` ends with its
/// end marker (`None` for other versions, or files too short to tell): a trace without it is
/// still being written or was cut short, which a reader finds out only at its end.
pub fn ends_whole(head: &[u8], tail: &[u8]) -> Option<bool> {
    let version = u16::from_le_bytes(head.get(4..6)?.try_into().ok()?);
    let marker = tail
        .len()
        .checked_sub(CHUNK_HEADER_LEN)
        .map(|at| &tail[at..])?;
    if !head.starts_with(&MAGIC) || version != VERSION {
        return None;
    }
    let zero = |r: std::ops::Range<usize>| marker[r].iter().all(|&b| b == 0);
    let crc = u32::from_le_bytes(marker[24..28].try_into().ok()?);
    Some(zero(0..16) && zero(20..24) && crc32fast::hash(&marker[..24]) == crc)
}

/// The largest chunk payload a reader accepts (64 MiB), stored or decompressed.
pub const MAX_CHUNK_BYTES: usize = 64 << 20;
/// The largest serialized program database a reader accepts (64 MiB).
pub const MAX_HEADER_BYTES: usize = 64 << 20;
/// The writer's default chunk payload size (64 KiB): small enough that a crash loses little,
/// large enough that the chunk header and the flush are noise.
pub const DEFAULT_CHUNK_BYTES: usize = 64 << 10;
/// The most events a reader decodes at a time.
pub const BATCH_EVENTS: usize = 4096;
/// Codec byte of a chunk whose payload is stored as is.
pub const CODEC_PLAIN: u8 = 0;
/// Codec byte of a chunk whose payload is one zstd frame.
pub const CODEC_ZSTD: u8 = 1;
/// Codec byte of a *program chunk*: no events; its plain payload is the program database as it
/// stands from here on (the header's encoding, functions only ever appended), written when a
/// shared library is loaded after recording started. A file reader takes the last one before
/// reading any event, so every event is read against the final database.
pub const CODEC_PROGRAM: u8 = 2;
/// The zstd level the recording runtime uses by default: on event traces level 1 already
/// compresses 14–62× at about 1 GB/s, and higher levels cost far more time than they save
/// (see the `wpp-rt` sink's documentation for the measurements).
pub const DEFAULT_ZSTD_LEVEL: i32 = 1;

const TAG_ENTER: u64 = 0;
const TAG_LEAVE: u64 = 1;
const TAG_BLOCK: u64 = 2;
const TAG_PATH: u64 = 3;
const TAG_THREAD: u64 = 4;
const TAG_PATH_ESCAPE: u64 = 5;
/// Path ids at or above this do not fit beside a 3-bit tag and use the escape tag.
const PATH_ESCAPE_LIMIT: u64 = 1 << 61;

/// Appends the encoding of one event (one varint, or two for an escaped path id).
#[inline]
pub fn encode_event(out: &mut Vec<u8>, event: Event) {
    let v = match event {
        Event::Enter(f) => u64::from(f.0) << 3 | TAG_ENTER,
        Event::Leave => TAG_LEAVE,
        Event::Block(b) => u64::from(b.0) << 3 | TAG_BLOCK,
        Event::Path(p) if p.0 < PATH_ESCAPE_LIMIT => p.0 << 3 | TAG_PATH,
        Event::Path(p) => {
            write_varint(out, TAG_PATH_ESCAPE);
            write_varint(out, p.0);
            return;
        }
        Event::Thread(t) => u64::from(t.0) << 3 | TAG_THREAD,
    };
    if v < 0x80 {
        out.push(v as u8); // the common case, without the varint loop
    } else {
        write_varint(out, v);
    }
}

/// The 20-byte preamble followed by the serialized program database.
fn header_bytes(db: &ProgramDb) -> Result<Vec<u8>, TraceError> {
    let body = db.to_bytes().map_err(|e| TraceError::Header {
        offset: PREAMBLE_LEN as u64,
        message: e.to_string(),
    })?;
    if body.len() > MAX_HEADER_BYTES {
        return Err(TraceError::Header {
            offset: PREAMBLE_LEN as u64,
            message: format!(
                "{} bytes exceed the limit of {MAX_HEADER_BYTES}",
                body.len()
            ),
        });
    }
    let mut out = Vec::with_capacity(PREAMBLE_LEN + body.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    let preamble_crc = crc32fast::hash(&out);
    out.extend_from_slice(&preamble_crc.to_le_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

/// The fields of a version 4 chunk header (see the layout in the module documentation).
struct ChunkFields {
    /// Payload bytes in the file.
    stored: u32,
    count: u32,
    /// Payload bytes after decompression (`stored` for a plain chunk).
    raw: u32,
    codec: u8,
    /// The chunk's index in the file (wrapping at 2^32); in the end marker, the number of
    /// chunks. `None` in versions before 4, which have none.
    sequence: Option<u32>,
    payload_crc: u32,
}

impl ChunkFields {
    /// The encoded header, its checksum included.
    fn encode(&self) -> [u8; CHUNK_HEADER_LEN] {
        let mut h = [0u8; CHUNK_HEADER_LEN];
        h[0..4].copy_from_slice(&self.stored.to_le_bytes());
        h[4..8].copy_from_slice(&self.count.to_le_bytes());
        h[8..12].copy_from_slice(&self.raw.to_le_bytes());
        h[12] = self.codec;
        h[16..20].copy_from_slice(&self.sequence.unwrap_or(0).to_le_bytes());
        h[20..24].copy_from_slice(&self.payload_crc.to_le_bytes());
        let header_crc = crc32fast::hash(&h[..24]);
        h[24..28].copy_from_slice(&header_crc.to_le_bytes());
        h
    }

    /// The end marker after `chunks` chunks: every field but the sequence number zero.
    fn end(chunks: u32) -> Self {
        ChunkFields {
            stored: 0,
            count: 0,
            raw: 0,
            codec: CODEC_PLAIN,
            sequence: Some(chunks),
            payload_crc: 0,
        }
    }
}

/// Compresses chunk payloads with one reused zstd context and one reused output buffer, so
/// that compressing a chunk allocates nothing once the buffer has grown to the largest chunk.
struct Packer {
    ctx: zstd::bulk::Compressor<'static>,
    /// Room for a chunk header, then the zstd frame: the whole chunk, for one `write_all`.
    out: Vec<u8>,
}

impl Packer {
    /// The whole compressed chunk (header and frame) for `payload`, or `None` when the frame
    /// would not be smaller than the payload, which is then better stored plain.
    fn pack(
        &mut self,
        payload: &[u8],
        count: u32,
        sequence: u32,
    ) -> Result<Option<&[u8]>, TraceError> {
        let need = CHUNK_HEADER_LEN + zstd::zstd_safe::compress_bound(payload.len());
        if self.out.len() < need {
            self.out.resize(need, 0);
        }
        let n = self
            .ctx
            .compress_to_buffer(payload, &mut self.out[CHUNK_HEADER_LEN..])?;
        if n >= payload.len() {
            return Ok(None);
        }
        let chunk = &mut self.out[..CHUNK_HEADER_LEN + n];
        let header = ChunkFields {
            stored: n as u32,
            count,
            raw: payload.len() as u32,
            codec: CODEC_ZSTD,
            sequence: Some(sequence),
            payload_crc: crc32fast::hash(&chunk[CHUNK_HEADER_LEN..]),
        };
        chunk[..CHUNK_HEADER_LEN].copy_from_slice(&header.encode());
        Ok(Some(chunk))
    }
}

/// Writes a binary trace: header on construction, then events in whole chunks.
///
/// Chunks are stored plain unless [`with_zstd_level`](Self::with_zstd_level) asks for zstd.
/// Each chunk is handed to the writer whole (one `write_all`, two for a plain chunk: header,
/// then payload) followed by `flush`, so pass the file itself rather than a `BufWriter` (the
/// chunk buffer already batches writes). Dropping the writer without [`finish`](Self::finish)
/// leaves the file as a crash would: every flushed chunk is readable and the reader reports
/// the missing end marker as a truncation.
pub struct TraceWriter<W: Write> {
    out: W,
    /// The payload of the chunk being filled.
    buf: Vec<u8>,
    count: u32,
    chunk_bytes: usize,
    events: u64,
    bytes: u64,
    /// The compressor, when chunks are compressed.
    zstd: Option<Packer>,
    /// Chunks written so far: the next chunk's sequence number.
    chunks: u32,
}

impl<W: Write> TraceWriter<W> {
    /// Writes the header for `db` and returns a writer with [`DEFAULT_CHUNK_BYTES`] chunks,
    /// stored plain.
    pub fn new(out: W, db: &ProgramDb) -> Result<Self, TraceError> {
        Self::with_chunk_bytes(out, db, DEFAULT_CHUNK_BYTES)
    }

    /// Like [`new`](Self::new), flushing a chunk once its payload reaches `chunk_bytes`
    /// (clamped so that no chunk exceeds [`MAX_CHUNK_BYTES`]).
    pub fn with_chunk_bytes(
        mut out: W,
        db: &ProgramDb,
        chunk_bytes: usize,
    ) -> Result<Self, TraceError> {
        let header = header_bytes(db)?;
        out.write_all(&header)?;
        out.flush()?;
        // An event takes at most 11 bytes, so a chunk never passes the threshold by more.
        let chunk_bytes = chunk_bytes.clamp(1, MAX_CHUNK_BYTES - 16);
        Ok(TraceWriter {
            out,
            buf: Vec::with_capacity(chunk_bytes + 16),
            count: 0,
            chunk_bytes,
            events: 0,
            bytes: header.len() as u64,
            zstd: None,
            chunks: 0,
        })
    }

    /// Compresses every chunk written from now on with zstd at `level` (clamped to zstd's
    /// range; 0 stores chunks plain). A chunk that does not shrink is stored plain anyway.
    pub fn with_zstd_level(mut self, level: i32) -> Result<Self, TraceError> {
        self.zstd = match level {
            0 => None,
            _ => Some(Packer {
                ctx: zstd::bulk::Compressor::new(level)?,
                out: Vec::new(),
            }),
        };
        Ok(self)
    }

    /// Appends one event, writing the chunk out when it is full. No allocation: the event is
    /// encoded into the reused chunk buffer.
    #[inline]
    pub fn push(&mut self, event: Event) -> Result<(), TraceError> {
        encode_event(&mut self.buf, event);
        self.count += 1;
        if self.buf.len() >= self.chunk_bytes {
            self.flush_chunk()?;
        }
        Ok(())
    }

    /// Writes the buffered events, if any, as one chunk and flushes the underlying writer.
    pub fn flush_chunk(&mut self) -> Result<(), TraceError> {
        if self.count == 0 {
            return Ok(());
        }
        // Taken out (no allocation) so that `emit` may borrow the rest of `self`.
        let mut buf = std::mem::take(&mut self.buf);
        let result = self.emit(&buf, self.count);
        buf.clear();
        self.buf = buf;
        self.count = 0;
        result
    }

    /// Writes a chunk whose payload was encoded elsewhere (with [`encode_event`], e.g. by a
    /// runtime's per-thread buffers) and holds `event_count` events. Buffered events are
    /// flushed first so that order is kept. The reader rejects a payload whose events do not
    /// number exactly `event_count`. A chunk continues the thread of the chunk before it, so
    /// a payload from a per-thread buffer should start with its `Thread(t)` event.
    pub fn write_chunk(&mut self, payload: &[u8], event_count: u32) -> Result<(), TraceError> {
        if payload.is_empty() || payload.len() > MAX_CHUNK_BYTES {
            return Err(TraceError::InvalidChunk(
                "a chunk payload must hold 1 ..= MAX_CHUNK_BYTES bytes",
            ));
        }
        if event_count == 0 || event_count as usize > payload.len() {
            return Err(TraceError::InvalidChunk(
                "a chunk's event count must be between 1 and its payload length",
            ));
        }
        self.flush_chunk()?;
        self.emit(payload, event_count)
    }

    /// Writes a program chunk ([`CODEC_PROGRAM`]): `db` is the program from here on, and
    /// must extend the one before (the same functions first). Buffered events go first.
    pub fn write_program(&mut self, db: &ProgramDb) -> Result<(), TraceError> {
        let body = db.to_bytes().map_err(|e| TraceError::Header {
            offset: self.bytes,
            message: e.to_string(),
        })?;
        if body.len() > MAX_CHUNK_BYTES {
            return Err(TraceError::InvalidChunk(
                "a program database in a chunk must hold at most MAX_CHUNK_BYTES bytes",
            ));
        }
        self.flush_chunk()?;
        let header = ChunkFields {
            stored: body.len() as u32,
            count: 0,
            raw: body.len() as u32,
            codec: CODEC_PROGRAM,
            sequence: Some(self.chunks),
            payload_crc: crc32fast::hash(&body),
        };
        self.out.write_all(&header.encode())?;
        self.out.write_all(&body)?;
        self.out.flush()?;
        self.chunks = self.chunks.wrapping_add(1);
        self.bytes += (CHUNK_HEADER_LEN + body.len()) as u64;
        Ok(())
    }

    /// Writes one chunk, compressed if that is asked for and helps, and flushes.
    fn emit(&mut self, payload: &[u8], count: u32) -> Result<(), TraceError> {
        let packed = match &mut self.zstd {
            Some(p) => p.pack(payload, count, self.chunks)?,
            None => None,
        };
        let written = match packed {
            Some(chunk) => {
                self.out.write_all(chunk)?;
                chunk.len()
            }
            None => {
                let len = payload.len() as u32;
                let header = ChunkFields {
                    stored: len,
                    count,
                    raw: len,
                    codec: CODEC_PLAIN,
                    sequence: Some(self.chunks),
                    payload_crc: crc32fast::hash(payload),
                };
                self.out.write_all(&header.encode())?;
                self.out.write_all(payload)?;
                CHUNK_HEADER_LEN + payload.len()
            }
        };
        self.out.flush()?;
        self.chunks = self.chunks.wrapping_add(1);
        self.bytes += written as u64;
        self.events += u64::from(count);
        Ok(())
    }

    /// Events pushed so far (written or buffered).
    pub fn events(&self) -> u64 {
        self.events + u64::from(self.count)
    }

    /// Chunks written so far (program chunks included): the count the end marker holds.
    pub fn chunks(&self) -> u32 {
        self.chunks
    }

    /// Bytes written to the underlying writer so far.
    pub fn bytes_written(&self) -> u64 {
        self.bytes
    }

    /// Writes the last chunk and the end marker, flushes, and returns the underlying writer.
    pub fn finish(mut self) -> Result<W, TraceError> {
        self.flush_chunk()?;
        self.out
            .write_all(&ChunkFields::end(self.chunks).encode())?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Where a binary reader gets its bytes.
enum Source {
    /// The whole file in memory (mapped or owned): plain chunks are decoded in place.
    Whole(Bytes),
    /// A stream: each chunk's stored payload is read into `buf`.
    Stream {
        r: Box<dyn Read + Send>,
        buf: Vec<u8>,
    },
}

/// Decodes the events of a binary trace, chunk by chunk, in batches.
pub(crate) struct BinaryDecoder {
    src: Source,
    /// Bytes of a chunk header in this file's version.
    header_len: usize,
    /// File offset of the next chunk header.
    offset: u64,
    /// File offset of the current chunk's header.
    chunk_at: u64,
    /// The current payload: `[start, end)` of the whole file, of the stream buffer or, for a
    /// compressed chunk, of `unpacked`, with `pos` the next event and `base` the file offset
    /// of `start` (of the stored payload, for a compressed chunk).
    start: usize,
    pos: usize,
    end: usize,
    base: u64,
    /// Whether the current payload is in `unpacked`.
    in_unpacked: bool,
    /// Where compressed payloads are decompressed: reused, it grows to the largest
    /// decompressed length seen, which the header check bounds by [`MAX_CHUNK_BYTES`].
    unpacked: Vec<u8>,
    /// The zstd context, made at the first compressed chunk.
    zstd: Option<zstd::bulk::Decompressor<'static>>,
    /// Events of the current chunk not yet decoded.
    left: u32,
    /// Events of the current chunk.
    chunk_events: u32,
    /// Events in whole chunks before the current one.
    done_events: u64,
    /// What the program database allows event ids to be.
    limits: IdLimits,
    /// The sequence number the next chunk (or the end marker) must carry.
    next_sequence: u32,
}

/// Reads until `buf` is full or the stream ends; returns the bytes read.
pub(crate) fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// What the preamble says: the database's layout, length and checksum, and the chunk header
/// length of the file's version.
struct DbHeader {
    layout: DbLayout,
    len: usize,
    crc: u32,
    chunk_header_len: usize,
}

/// Checks the preamble and returns what it says about the database.
fn parse_preamble(p: &[u8; PREAMBLE_LEN]) -> Result<DbHeader, TraceError> {
    let magic = [p[0], p[1], p[2], p[3]];
    if magic != MAGIC {
        return Err(TraceError::BadMagic { found: magic });
    }
    if crc32fast::hash(&p[..16]) != u32::from_le_bytes([p[16], p[17], p[18], p[19]]) {
        return Err(TraceError::Checksum {
            what: "file preamble",
            offset: 0,
        });
    }
    let version = u16::from_le_bytes([p[4], p[5]]);
    let (layout, chunk_header_len) = match version {
        1 => (DbLayout::WithoutCfgs, OLD_CHUNK_HEADER_LEN),
        2 => (DbLayout::WithCfgs, OLD_CHUNK_HEADER_LEN),
        3 => (DbLayout::WithCfgs, V3_CHUNK_HEADER_LEN),
        VERSION => (DbLayout::WithCfgs, CHUNK_HEADER_LEN),
        _ => return Err(TraceError::UnsupportedVersion { version, offset: 4 }),
    };
    if u16::from_le_bytes([p[6], p[7]]) != 0 {
        return Err(TraceError::malformed(6, "unknown flags in the preamble"));
    }
    let len = u32::from_le_bytes([p[8], p[9], p[10], p[11]]) as usize;
    if len > MAX_HEADER_BYTES {
        return Err(TraceError::malformed(
            8,
            format!("program database length {len} exceeds the limit of {MAX_HEADER_BYTES}"),
        ));
    }
    Ok(DbHeader {
        layout,
        len,
        crc: u32::from_le_bytes([p[12], p[13], p[14], p[15]]),
        chunk_header_len,
    })
}

/// Checks and deserializes the program database.
fn parse_db(body: &[u8], h: &DbHeader) -> Result<ProgramDb, TraceError> {
    if crc32fast::hash(body) != h.crc {
        return Err(TraceError::Checksum {
            what: "program database",
            offset: PREAMBLE_LEN as u64,
        });
    }
    ProgramDb::from_bytes(body, PREAMBLE_LEN as u64, h.layout).map_err(|e| TraceError::Header {
        offset: e.offset,
        message: e.message,
    })
}

/// The database of the last intact program chunk ([`CODEC_PROGRAM`]) of a whole file whose
/// chunks start at `at`, found by walking the chunk headers (payloads are skipped, so this
/// costs one header read per chunk). The walk stops at the first damage, which the reading
/// pass then reports where it is. The pages it walked past are dropped as it goes: a header
/// read faults in the pages around it, so a walk that kept them would hold the whole file in
/// the reader's memory before the first event is read.
fn last_program(bytes: &Bytes, mut at: u64, header_len: usize) -> Option<ProgramDb> {
    let mut last = None;
    let mut previous = at as usize;
    loop {
        let start = usize::try_from(at).ok()?;
        bytes.release_behind(previous, start);
        previous = start;
        let Some(h) = bytes.get(start..start + header_len) else {
            return last;
        };
        let Ok(c) = parse_chunk_header(h, at) else {
            return last;
        };
        if c.stored == 0 {
            return last;
        }
        let payload_at = start + header_len;
        let Some(payload) = bytes.get(payload_at..payload_at + c.stored as usize) else {
            return last;
        };
        if c.codec == CODEC_PROGRAM {
            if crc32fast::hash(payload) != c.payload_crc {
                return last;
            }
            match ProgramDb::from_bytes(payload, payload_at as u64, DbLayout::WithCfgs) {
                Ok(db) => last = Some(db),
                Err(_) => return last,
            }
        }
        at = (payload_at + c.stored as usize) as u64;
    }
}

/// A truncation before any chunk: the file ended inside its header.
fn header_truncated() -> TraceError {
    TraceError::Truncated {
        offset: 0,
        events: 0,
    }
}

/// Reads and checks a chunk header of any version's length ([`CHUNK_HEADER_LEN`],
/// [`V3_CHUNK_HEADER_LEN`] without a sequence number or, for versions 1 and 2,
/// [`OLD_CHUNK_HEADER_LEN`]: those are always plain), against itself but not yet against the
/// file. Errors name the chunk's offset.
fn parse_chunk_header(h: &[u8], offset: u64) -> Result<ChunkFields, TraceError> {
    let word = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
    let crc_at = h.len() - 4;
    if crc32fast::hash(&h[..crc_at]) != word(crc_at) {
        return Err(TraceError::Checksum {
            what: "chunk header",
            offset,
        });
    }
    let c = if h.len() >= V3_CHUNK_HEADER_LEN {
        if h[13..16] != [0; 3] {
            return Err(TraceError::malformed(
                offset,
                "reserved bytes 13..16 of the chunk header are not zero",
            ));
        }
        ChunkFields {
            stored: word(0),
            count: word(4),
            raw: word(8),
            codec: h[12],
            sequence: (h.len() == CHUNK_HEADER_LEN).then(|| word(16)),
            payload_crc: word(crc_at - 4),
        }
    } else {
        ChunkFields {
            stored: word(0),
            count: word(4),
            raw: word(0),
            codec: CODEC_PLAIN,
            sequence: None,
            payload_crc: word(8),
        }
    };
    check_chunk_fields(&c, offset)?;
    Ok(c)
}

/// Checks a chunk header's fields against each other and the limits.
fn check_chunk_fields(c: &ChunkFields, offset: u64) -> Result<(), TraceError> {
    let bad = |reason: String| Err(TraceError::malformed(offset, reason));
    for (what, len) in [("chunk length", c.stored), ("decompressed length", c.raw)] {
        if len as usize > MAX_CHUNK_BYTES {
            return bad(format!(
                "{what} {len} exceeds the limit of {MAX_CHUNK_BYTES}"
            ));
        }
    }
    if c.stored == 0 && c.count == 0 && c.raw == 0 && c.payload_crc == 0 && c.codec == 0 {
        return Ok(()); // the end marker
    }
    match c.codec {
        CODEC_PROGRAM if c.raw != c.stored || c.stored == 0 || c.count != 0 => {
            return bad(format!(
                "program chunk with stored length {}, decompressed length {} and {} events",
                c.stored, c.raw, c.count
            ))
        }
        CODEC_PROGRAM => return Ok(()),
        CODEC_PLAIN if c.raw != c.stored => {
            return bad(format!(
                "plain chunk with stored length {} but decompressed length {}",
                c.stored, c.raw
            ))
        }
        CODEC_PLAIN => {}
        CODEC_ZSTD if c.stored == 0 => return bad("empty compressed payload".into()),
        CODEC_ZSTD => {}
        codec => return bad(format!("unknown chunk codec {codec}")),
    }
    if c.count == 0 || c.count > c.raw {
        return bad(format!(
            "chunk claims {} events in {} payload bytes",
            c.count, c.raw
        ));
    }
    Ok(())
}

/// Decompresses the zstd payload `frame` of the chunk at file offset `at` into exactly
/// `out[..raw]`, growing `out` if needed. Anything but one frame yielding exactly `raw` bytes
/// is an error naming the chunk; a frame that would expand further (a decompression bomb)
/// fails when it reaches the end of the buffer.
fn unpack(
    ctx: &mut Option<zstd::bulk::Decompressor<'static>>,
    out: &mut Vec<u8>,
    frame: &[u8],
    raw: usize,
    at: u64,
) -> Result<(), TraceError> {
    use zstd::zstd_safe;
    let bad = |why: String| TraceError::malformed(at, format!("compressed chunk payload: {why}"));
    match zstd_safe::find_frame_compressed_size(frame) {
        Ok(n) if n == frame.len() => {}
        Ok(n) => {
            return Err(bad(format!(
                "{} bytes after its zstd frame",
                frame.len() - n
            )))
        }
        Err(code) => {
            return Err(bad(format!(
                "no zstd frame ({})",
                zstd_safe::get_error_name(code)
            )))
        }
    }
    // A size the frame declares is checked before any memory is committed to it.
    if let Ok(Some(size)) = zstd_safe::get_frame_content_size(frame) {
        if size != raw as u64 {
            return Err(bad(format!(
                "the zstd frame holds {size} bytes, the chunk header says {raw}"
            )));
        }
    }
    if out.len() < raw {
        out.resize(raw, 0);
    }
    let ctx = match ctx {
        Some(c) => c,
        None => ctx.insert(zstd::bulk::Decompressor::new()?),
    };
    let n = ctx
        .decompress_to_buffer(frame, &mut out[..raw])
        .map_err(|e| {
            bad(format!(
                "{e} (decompressing into the {raw} bytes the header says)"
            ))
        })?;
    if n != raw {
        return Err(bad(format!(
            "decompresses to {n} bytes, the chunk header says {raw}"
        )));
    }
    Ok(())
}

impl BinaryDecoder {
    /// Parses the header of an in-memory file.
    pub(crate) fn from_bytes(bytes: Bytes) -> Result<(ProgramDb, Self), TraceError> {
        let pre: &[u8; PREAMBLE_LEN] = bytes
            .get(..PREAMBLE_LEN)
            .and_then(|p| p.try_into().ok())
            .ok_or_else(header_truncated)?;
        let h = parse_preamble(pre)?;
        let body = bytes
            .get(PREAMBLE_LEN..PREAMBLE_LEN + h.len)
            .ok_or_else(header_truncated)?;
        let db = parse_db(body, &h)?;
        let start = (PREAMBLE_LEN + h.len) as u64;
        let db = last_program(&bytes, start, h.chunk_header_len).unwrap_or(db);
        let d = Self::new(Source::Whole(bytes), &h, IdLimits::of(&db));
        Ok((db, d))
    }

    /// Parses the header of a stream whose first four bytes (`magic`) were already read.
    pub(crate) fn from_stream(
        magic: [u8; 4],
        mut r: Box<dyn Read + Send>,
    ) -> Result<(ProgramDb, Self), TraceError> {
        let mut pre = [0u8; PREAMBLE_LEN];
        pre[..4].copy_from_slice(&magic);
        if read_full(&mut r, &mut pre[4..])? < PREAMBLE_LEN - 4 {
            return Err(header_truncated());
        }
        let h = parse_preamble(&pre)?;
        let mut body = Vec::new();
        // `take` bounds the read, and the buffer grows only with bytes actually present.
        (&mut r).take(h.len as u64).read_to_end(&mut body)?;
        if body.len() < h.len {
            return Err(header_truncated());
        }
        let db = parse_db(&body, &h)?;
        let src = Source::Stream { r, buf: body };
        let d = Self::new(src, &h, IdLimits::of(&db));
        Ok((db, d))
    }

    fn new(src: Source, h: &DbHeader, limits: IdLimits) -> Self {
        BinaryDecoder {
            src,
            header_len: h.chunk_header_len,
            offset: (PREAMBLE_LEN + h.len) as u64,
            chunk_at: 0,
            start: 0,
            pos: 0,
            end: 0,
            base: 0,
            in_unpacked: false,
            unpacked: Vec::new(),
            zstd: None,
            left: 0,
            chunk_events: 0,
            done_events: 0,
            limits,
            next_sequence: 0,
        }
    }

    /// Decodes up to [`BATCH_EVENTS`] events into `out` (which the caller cleared). Returns
    /// `Ok(false)` at the end marker.
    pub(crate) fn fill(&mut self, out: &mut Vec<Event>) -> Result<bool, TraceError> {
        if self.left == 0 {
            self.finish_chunk()?;
            if !self.next_chunk()? {
                return Ok(false);
            }
        }
        let n = (self.left as usize).min(BATCH_EVENTS);
        let payload = match &self.src {
            _ if self.in_unpacked => &self.unpacked[..self.end],
            Source::Whole(b) => &b[..self.end],
            Source::Stream { buf, .. } => &buf[..self.end],
        };
        // Offsets in a decompressed payload are mapped to the chunk by `in_chunk`.
        let base = if self.in_unpacked {
            0
        } else {
            self.base - self.start as u64
        };
        match decode_batch(payload, self.pos, base, n, &self.limits, out) {
            Ok(pos) => self.pos = pos,
            Err(e) => return Err(self.in_chunk(e)),
        }
        self.left -= n as u32;
        Ok(true)
    }

    /// An error at a position of a decompressed payload, which no file byte corresponds to,
    /// restated at the chunk's offset with the position in the decompressed payload.
    fn in_chunk(&self, e: TraceError) -> TraceError {
        if !self.in_unpacked {
            return e;
        }
        let (what, pos) = match &e {
            TraceError::Malformed { offset, reason } => (reason.clone(), *offset),
            TraceError::Wire(w) => (format!("{} while reading {}", w.kind, w.what), w.offset),
            _ => return e,
        };
        TraceError::malformed(
            self.chunk_at,
            format!("{what}, at byte {pos} of the chunk's decompressed payload"),
        )
    }

    /// Checks that the chunk just decoded used its whole payload.
    fn finish_chunk(&mut self) -> Result<(), TraceError> {
        if self.pos != self.end {
            let at = match self.in_unpacked {
                true => self.pos as u64,
                false => self.base + (self.pos - self.start) as u64,
            };
            let e = TraceError::malformed(at, "bytes after the last event its chunk header counts");
            return Err(self.in_chunk(e));
        }
        Ok(())
    }

    /// Reads and checks the next chunk header and payload, decompressing a compressed one.
    /// `Ok(false)` at the end marker.
    fn next_chunk(&mut self) -> Result<bool, TraceError> {
        self.done_events += u64::from(self.chunk_events);
        self.chunk_events = 0;
        let at = self.offset;
        let truncated = TraceError::Truncated {
            offset: at,
            events: self.done_events,
        };
        let hl = self.header_len;
        let mut h = [0u8; CHUNK_HEADER_LEN];
        let got = match &mut self.src {
            Source::Whole(b) => {
                b.release_behind(self.chunk_at as usize, at as usize);
                let rest = b.get(at as usize..).unwrap_or_default();
                let n = rest.len().min(hl);
                h[..n].copy_from_slice(&rest[..n]);
                n
            }
            Source::Stream { r, .. } => read_full(r, &mut h[..hl])?,
        };
        if got < hl {
            return Err(truncated);
        }
        let c = parse_chunk_header(&h[..hl], at)?;
        self.check_sequence(&c, at)?;
        if c.stored == 0 {
            self.check_end(at + hl as u64)?;
            return Ok(false);
        }
        let payload_at = at + hl as u64;
        let (start, payload) = match &mut self.src {
            Source::Whole(b) => {
                let start = payload_at as usize;
                match b.get(start..start + c.stored as usize) {
                    Some(p) => (start, p),
                    None => return Err(truncated),
                }
            }
            Source::Stream { r, buf } => {
                buf.clear();
                r.take(u64::from(c.stored)).read_to_end(buf)?;
                if buf.len() < c.stored as usize {
                    return Err(truncated);
                }
                (0, &buf[..])
            }
        };
        if crc32fast::hash(payload) != c.payload_crc {
            return Err(TraceError::Checksum {
                what: "chunk payload",
                offset: at,
            });
        }
        if c.codec == CODEC_PROGRAM {
            // A file's reader took the last program before the first event; a stream's
            // cannot look ahead, and its events would outgrow the database it started with.
            if matches!(self.src, Source::Stream { .. }) {
                return Err(TraceError::malformed(
                    at,
                    "the program grew while it was recorded (a library loaded after the \
                     first event): read this trace from a file, not a stream",
                ));
            }
            self.offset = payload_at + u64::from(c.stored);
            return self.next_chunk();
        }
        self.in_unpacked = c.codec == CODEC_ZSTD;
        if self.in_unpacked {
            unpack(
                &mut self.zstd,
                &mut self.unpacked,
                payload,
                c.raw as usize,
                at,
            )?;
            self.start = 0;
        } else {
            self.start = start;
        }
        self.pos = self.start;
        self.end = self.start + c.raw as usize;
        self.chunk_at = at;
        self.base = payload_at;
        self.left = c.count;
        self.chunk_events = c.count;
        self.offset = payload_at + u64::from(c.stored);
        Ok(true)
    }

    /// Checks a version 4 chunk's sequence number: a chunk duplicated, swapped with another
    /// or missing from the middle (or from before the end marker) breaks the count, while a
    /// missing tail stays a truncation.
    fn check_sequence(&mut self, c: &ChunkFields, at: u64) -> Result<(), TraceError> {
        let Some(found) = c.sequence else {
            return Ok(());
        };
        let expected = self.next_sequence;
        if found != expected {
            let what = match c.stored {
                0 => "the end marker counts",
                _ => "this chunk has sequence number",
            };
            return Err(TraceError::malformed(
                at,
                format!(
                    "{what} {found} where chunk {expected} was expected: a chunk is \
                     duplicated, reordered or missing"
                ),
            ));
        }
        self.next_sequence = expected.wrapping_add(1);
        Ok(())
    }

    /// Checks that the end marker ending at `end` is the last thing in the file.
    fn check_end(&mut self, end: u64) -> Result<(), TraceError> {
        let trailing = match &mut self.src {
            Source::Whole(b) => b.len() as u64 > end,
            Source::Stream { r, .. } => read_full(r, &mut [0u8; 1])? > 0,
        };
        if trailing {
            return Err(TraceError::malformed(end, "data after the end marker"));
        }
        Ok(())
    }
}

/// Decodes `n` events starting at `pos` in `payload` (whose byte 0 is at file offset `base`),
/// appending them to `out`. Returns the position after the last event.
///
/// The loop is the reader's hot path: varints of up to three bytes and the five plain tags with
/// ids inside `limits` are decoded inline; longer varints, escaped paths, ids to check and
/// every error go through [`decode_cold`].
#[inline]
fn decode_batch(
    payload: &[u8],
    mut pos: usize,
    base: u64,
    n: usize,
    limits: &IdLimits,
    out: &mut Vec<Event>,
) -> Result<usize, TraceError> {
    out.reserve(n);
    for _ in 0..n {
        let at = pos;
        let v = match payload.get(pos) {
            Some(&b0) if b0 < 0x80 => {
                pos += 1;
                u64::from(b0)
            }
            Some(&b0) => match (payload.get(pos + 1), payload.get(pos + 2)) {
                (Some(&b1), _) if b1 < 0x80 => {
                    pos += 2;
                    u64::from(b0 & 0x7f) | u64::from(b1) << 7
                }
                // Three bytes: an eCF's check sites and the larger path ids.
                (Some(&b1), Some(&b2)) if b2 < 0x80 => {
                    pos += 3;
                    u64::from(b0 & 0x7f) | u64::from(b1 & 0x7f) << 7 | u64::from(b2) << 14
                }
                // All ones: tag 7 sends the event to the careful path.
                _ => u64::MAX,
            },
            None => u64::MAX,
        };
        let id = v >> 3;
        let event = match v & 7 {
            // Every limit is at most 2^32, so ids inside them fit in 32 bits.
            TAG_ENTER if id < limits.functions => Event::Enter(FunctionId(id as u32)),
            TAG_LEAVE if v == TAG_LEAVE => Event::Leave,
            TAG_BLOCK if id < limits.blocks => Event::Block(BlockId(id as u32)),
            TAG_PATH => Event::Path(PathId(id)),
            TAG_THREAD if id < limits.threads => Event::Thread(ThreadId(id as u32)),
            _ => {
                pos = at;
                decode_cold(payload, &mut pos, base, limits)?
            }
        };
        out.push(event);
    }
    Ok(pos)
}

/// Decodes one event at `*pos` the careful way: any varint length, escaped paths, errors.
#[cold]
#[inline(never)]
fn decode_cold(
    payload: &[u8],
    pos: &mut usize,
    base: u64,
    limits: &IdLimits,
) -> Result<Event, TraceError> {
    let at = base + *pos as u64;
    let mut r = Reader::new(&payload[*pos..], at);
    let v = r.varint("event")?;
    let id = v >> 3;
    let small = || {
        u32::try_from(id)
            .map_err(|_| TraceError::malformed(at, format!("event id {id} exceeds 32 bits")))
    };
    let event = match v & 7 {
        TAG_ENTER => Event::Enter(FunctionId(small()?)),
        TAG_LEAVE if id == 0 => Event::Leave,
        TAG_BLOCK => Event::Block(BlockId(small()?)),
        TAG_PATH => Event::Path(PathId(id)),
        TAG_THREAD => Event::Thread(ThreadId(small()?)),
        TAG_PATH_ESCAPE if id == 0 => Event::Path(PathId(r.varint("escaped path id")?)),
        tag => {
            return Err(TraceError::malformed(
                at,
                format!("invalid event encoding (tag {tag}, id {id})"),
            ))
        }
    };
    limits
        .check(event)
        .map_err(|reason| TraceError::malformed(at, reason))?;
    *pos = (r.offset() - base) as usize;
    Ok(event)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::TraceReader;

    fn example() -> (ProgramDb, Vec<Event>) {
        let mut db = ProgramDb::default();
        let main = db.intern("main");
        db.functions[0].cfg = Some(Box::new(crate::program::FunctionCfg {
            successors: vec![vec![1], vec![]],
            entry: 0,
            exits: vec![1],
            ..Default::default()
        }));
        let events = vec![
            Event::Enter(main),
            Event::Block(BlockId(0)),
            Event::Block(BlockId(1)),
            Event::Path(PathId(300)),
            Event::Leave,
        ];
        (db, events)
    }

    /// Limits that let every 32-bit id through, to test the encoding alone.
    const UNBOUNDED: IdLimits = IdLimits {
        functions: 1 << 32,
        blocks: 1 << 32,
        threads: 1 << 32,
    };

    fn hex(bytes: &[u8]) -> String {
        let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
        hex.join(" ")
    }

    fn unhex(s: &str) -> Vec<u8> {
        s.split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect()
    }

    #[test]
    fn a_whole_trace_is_told_from_a_cut_one_by_its_end() {
        let (db, events) = example();
        let bytes = crate::file::to_binary(&db, &events).unwrap();
        assert_eq!(ends_whole(&bytes, &bytes), Some(true));
        let cut = &bytes[..bytes.len() - 1];
        assert_eq!(ends_whole(cut, cut), Some(false));
        let mut old = bytes.clone();
        old[4] = 3;
        assert_eq!(ends_whole(&old, &old), None);
    }

    #[test]
    fn worked_example_is_pinned() {
        let (db, events) = example();
        let bytes = crate::file::to_binary(&db, &events).unwrap();
        let expected = "57 50 50 54 04 00 00 00 14 00 00 00 dc 6d b3 78 85 57 f6 ff \
            01 04 6d 61 69 6e 00 00 00 \
            01 01 02 00 01 02 00 01 02 00 00 \
            06 00 00 00 05 00 00 00 06 00 00 00 00 00 00 00 \
            00 00 00 00 1b 3c e8 00 05 94 29 57 \
            00 02 0a e3 12 01 \
            00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 \
            01 00 00 00 00 00 00 00 be ca 6b 6f";
        assert_eq!(hex(&bytes), hex(&unhex(expected)));
        let r = TraceReader::from_bytes(bytes).unwrap();
        assert_eq!(r.program(), &db);
        assert_eq!(r.read_all().unwrap(), events);
    }

    /// Version 3 files (24-byte chunk headers without a sequence number) still read.
    #[test]
    fn version_3_worked_example_still_reads() {
        let v3 = unhex(
            "57 50 50 54 03 00 00 00 14 00 00 00 dc 6d b3 78 0a be 6e 8b \
             01 04 6d 61 69 6e 00 00 00 \
             01 01 02 00 01 02 00 01 02 00 00 \
             06 00 00 00 05 00 00 00 06 00 00 00 00 00 00 00 1b 3c e8 00 20 cb 5c 22 \
             00 02 0a e3 12 01 \
             00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 8d 9b d5 0f",
        );
        let (db, events) = example();
        let r = TraceReader::from_bytes(v3).unwrap();
        assert_eq!(r.program(), &db);
        assert_eq!(r.read_all().unwrap(), events);
    }

    /// Version 2 files (16-byte chunk headers, never compressed) still read: the version 2
    /// worked example.
    #[test]
    fn version_2_worked_example_still_reads() {
        let v2 = unhex(
            "57 50 50 54 02 00 00 00 14 00 00 00 dc 6d b3 78 65 f2 cb 10 \
             01 04 6d 61 69 6e 00 00 00 \
             01 01 02 00 01 02 00 01 02 00 00 \
             06 00 00 00 05 00 00 00 1b 3c e8 00 65 d8 c6 e0 00 02 0a e3 12 01 \
             00 00 00 00 00 00 00 00 00 00 00 00 6f c6 d5 7b",
        );
        let (db, events) = example();
        let r = TraceReader::from_bytes(v2.clone()).unwrap();
        assert_eq!(r.program(), &db);
        assert_eq!(r.read_all().unwrap(), events);
        // A version 2 file cut inside its end marker is a truncation after the chunk.
        let cut = v2[..v2.len() - 1].to_vec();
        let mut r = TraceReader::from_bytes(cut).unwrap().allow_truncated(true);
        let mut got = Vec::new();
        r.for_each_batch(|run| got.extend_from_slice(run)).unwrap();
        assert_eq!(got, events);
        assert_eq!(r.truncation().unwrap().offset, (v2.len() - 16) as u64);
    }

    #[test]
    fn compressed_example_has_the_documented_header() {
        let (db, events) = example();
        let many: Vec<Event> = events.iter().cycle().take(5000).copied().collect();
        let mut w = TraceWriter::with_chunk_bytes(Vec::new(), &db, 1 << 20)
            .unwrap()
            .with_zstd_level(DEFAULT_ZSTD_LEVEL)
            .unwrap();
        many.iter().for_each(|&e| w.push(e).unwrap());
        let bytes = w.finish().unwrap();
        let plain = crate::file::to_binary(&db, &events).unwrap();
        let at = plain.len() - 6 - 2 * CHUNK_HEADER_LEN; // where the example's chunk starts
        let h = &bytes[at..at + CHUNK_HEADER_LEN];
        let word = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().unwrap());
        let stored = word(0) as usize;
        assert!(stored < 100, "{stored} bytes");
        assert_eq!((word(4), word(8), h[12]), (5000, 6000, CODEC_ZSTD));
        let frame = &bytes[at + CHUNK_HEADER_LEN..at + CHUNK_HEADER_LEN + stored];
        assert_eq!(frame[..4], [0x28, 0xb5, 0x2f, 0xfd]);
        assert_eq!(
            bytes.len(),
            at + CHUNK_HEADER_LEN + stored + CHUNK_HEADER_LEN
        );
        let r = TraceReader::from_bytes(bytes).unwrap();
        assert_eq!(r.read_all().unwrap(), many);
    }

    /// Version 1 files (no CFG table) still read: the version 1 worked example.
    #[test]
    fn version_1_worked_example_still_reads() {
        let v1 = unhex(
            "57 50 50 54 01 00 00 00 09 00 00 00 c1 6a 2a 13 2b 14 34 5d \
             01 04 6d 61 69 6e 00 00 00 \
             06 00 00 00 05 00 00 00 1b 3c e8 00 65 d8 c6 e0 00 02 0a e3 12 01 \
             00 00 00 00 00 00 00 00 00 00 00 00 6f c6 d5 7b",
        );
        let (mut db, events) = example();
        db.functions[0].cfg = None;
        let r = TraceReader::from_bytes(v1).unwrap();
        assert_eq!(r.program(), &db);
        assert_eq!(r.read_all().unwrap(), events);
    }

    #[test]
    fn path_ids_at_the_escape_limit_round_trip() {
        for p in [PATH_ESCAPE_LIMIT - 1, PATH_ESCAPE_LIMIT, u64::MAX] {
            let mut buf = Vec::new();
            encode_event(&mut buf, Event::Path(PathId(p)));
            let escaped = p >= PATH_ESCAPE_LIMIT;
            assert_eq!(buf[0] == TAG_PATH_ESCAPE as u8, escaped, "{p}");
            let mut out = Vec::new();
            assert_eq!(
                decode_batch(&buf, 0, 0, 1, &UNBOUNDED, &mut out).unwrap(),
                buf.len()
            );
            assert_eq!(out, [Event::Path(PathId(p))]);
        }
    }

    #[test]
    fn invalid_tags_and_oversized_ids_are_rejected_with_their_offset() {
        let mut buf = vec![0x02]; // Block(0), then the bad event at offset 1
        for bad in [
            6u64,
            7,
            1 << 3 | TAG_LEAVE,
            1 << 3 | TAG_PATH_ESCAPE,
            1 << 35 | TAG_BLOCK,
        ] {
            buf.truncate(1);
            write_varint(&mut buf, bad);
            let e = decode_batch(&buf, 0, 1000, 2, &UNBOUNDED, &mut Vec::new()).unwrap_err();
            assert!(
                matches!(e, TraceError::Malformed { offset: 1001, .. }),
                "{bad}: {e}"
            );
        }
    }
}
