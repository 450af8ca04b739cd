//! Scheme 3 (Zhang–Gupta §4.3, Figures 7–8): a trace cut into fixed-size chunks that are
//! compressed separately, with an index saying which functions each chunk contains and its
//! nesting levels ([`LevelIndex`]). A query decompresses only the chunks that contain `F` and
//! runs the nested-level automaton over them; it moves the stack across the other chunks with
//! [`Automaton::skip`].
//!
//! Chunks are per thread: each holds events of one thread only (without `Thread` events), so
//! positions are event indices in that thread's stream, as in the grammar, and levels are
//! per-thread. zstd is the default codec; gzip is kept for parity with the paper.
//!
//! # Layout (integers little-endian, varints unsigned LEB128 as in [`wpp_trace::wire`])
//!
//! ```text
//! header  0  4  magic "WPPC"
//!         4  2  version (u16) = 2 (1: dense level rows, still read)
//!         6  1  codec: 1 = zstd, 2 = gzip
//!         7  1  flags = 0
//! chunks  8  …  the compressed chunks back to back, in index order
//! index   at index_offset:
//!         varint functions, functions × { varint name length, UTF-8 name }
//!         varint threads, threads × varint thread id
//!         varint chunks, chunks × {
//!             varint thread (index into the thread list)
//!             varint compressed length
//!             varint uncompressed length (≤ MAX_CHUNK_BYTES)
//!             varint events (≤ uncompressed length)
//!             u32    CRC-32 of the uncompressed bytes
//!         }
//!         threads × LevelIndex of that thread's chunks, in order (see [`super::levels`])
//! footer  last 16 bytes: u64 index_offset, u32 CRC-32 of the index, magic "CIDX"
//! ```
//!
//! An uncompressed chunk is a run of events, each encoded as in the binary trace format
//! ([`wpp_trace::file::encode_event`]: one varint `id << 3 | tag`, tags 0 `F`, 1 `E`, 2 `B`,
//! 3 `P`, 5 escaped `P`). The index sits behind the chunks so that the writer streams; the footer
//! finds it. The compressed lengths must add up to exactly `index_offset − 8`.
//!
//! Example: one thread, trace `F main, B 1, E`, chunk size 4 KiB, gzip: `57 50 50 43 02 00 02 00`,
//! the gzip stream of the 3 bytes `00 0a 01`, then the index `01 04 6d 61 69 6e` (function
//! `main`), `01 00` (thread 0), `01 00 <clen> 03 03 <crc>` (one chunk of 3 bytes, 3 events),
//! `01 00 00 01 00 01` (its levels: exit 0, smallest 0; one row: `main`, in chunk 0), then the
//! footer.

use std::io::{Read, Seek, SeekFrom, Write};
use std::time::{Duration, Instant};

use rustc_hash::FxHashMap;
use wpp_trace::file::encode_event;
use wpp_trace::wire::{write_varint, Reader, WireErrorKind};
use wpp_trace::{BlockId, Event, FunctionId, PathId, ProgramDb, ThreadDemux, ThreadId};

use super::levels::{Layout, LevelIndex, LevelTracker};
use super::{Automaton, Kind, Mode, PathQuery, StreamMatch};
use crate::error::QueryError;
use crate::pattern::Pattern;

const MAGIC: [u8; 4] = *b"WPPC";
const FOOTER_MAGIC: [u8; 4] = *b"CIDX";
const VERSION: u16 = 2;
const HEADER_LEN: u64 = 8;
const FOOTER_LEN: u64 = 16;
const CONTAINER: &str = "chunked trace";
/// The largest uncompressed chunk a reader accepts (256 MiB).
pub const MAX_CHUNK_BYTES: u64 = 256 << 20;
/// The default uncompressed chunk size (the paper's 4 MB).
pub const DEFAULT_CHUNK_BYTES: usize = 4 << 20;

/// How chunks are compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    /// zstd at the given level.
    Zstd(i32),
    /// gzip (deflate) at the given level 0–9.
    Gzip(u32),
}

impl Codec {
    fn id(self) -> u8 {
        match self {
            Codec::Zstd(_) => 1,
            Codec::Gzip(_) => 2,
        }
    }

    fn compress(self, data: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
        out.clear();
        match self {
            Codec::Zstd(level) => {
                let mut e = zstd::stream::write::Encoder::new(std::mem::take(out), level)?;
                e.write_all(data)?;
                *out = e.finish()?;
            }
            Codec::Gzip(level) => {
                let mut e = flate2::write::GzEncoder::new(
                    std::mem::take(out),
                    flate2::Compression::new(level),
                );
                e.write_all(data)?;
                *out = e.finish()?;
            }
        }
        Ok(())
    }
}

/// One chunk's entry in the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkEntry {
    /// Index into the thread list.
    pub thread: u32,
    /// Offset of the compressed bytes in the file.
    pub offset: u64,
    /// Compressed length.
    pub compressed: u64,
    /// Uncompressed length.
    pub uncompressed: u64,
    /// Number of events.
    pub events: u64,
    /// CRC-32 of the uncompressed bytes.
    pub crc: u32,
}

struct ThreadState {
    thread: ThreadId,
    buf: Vec<u8>,
    events: u64,
    tracker: LevelTracker,
}

/// Writes a chunked trace, one event at a time.
pub struct ChunkWriter<W: Write> {
    out: W,
    codec: Codec,
    chunk_bytes: usize,
    written: u64,
    /// The index's function table, encoded up front: the writer keeps no copy of the database.
    names: Vec<u8>,
    demux: ThreadDemux,
    /// Each thread's index in `states` (its order of first appearance, as in the index).
    threads: FxHashMap<ThreadId, u32>,
    states: Vec<ThreadState>,
    /// The thread of the last event and its index: events come in runs of one thread.
    current: Option<(ThreadId, u32)>,
    chunks: Vec<ChunkEntry>,
    scratch: Vec<u8>,
}

impl<W: Write> ChunkWriter<W> {
    /// Writes the header. `chunk_bytes` is the uncompressed size at which a chunk is closed.
    pub fn new(
        mut out: W,
        db: &ProgramDb,
        codec: Codec,
        chunk_bytes: usize,
    ) -> std::io::Result<Self> {
        let mut header = Vec::with_capacity(HEADER_LEN as usize);
        header.extend_from_slice(&MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.push(codec.id());
        header.push(0);
        out.write_all(&header)?;
        Ok(ChunkWriter {
            out,
            codec,
            chunk_bytes: chunk_bytes.clamp(1, MAX_CHUNK_BYTES as usize / 2),
            written: HEADER_LEN,
            names: encode_names(db),
            demux: ThreadDemux::new(),
            threads: FxHashMap::default(),
            states: Vec::new(),
            current: None,
            chunks: Vec::new(),
            scratch: Vec::new(),
        })
    }

    /// Appends one event.
    pub fn push(&mut self, e: Event) -> std::io::Result<()> {
        let Some(t) = self.demux.route(e) else {
            return Ok(());
        };
        let i = match self.current {
            Some((c, i)) if c == t => i,
            _ => self.state_of(t),
        };
        let st = &mut self.states[i as usize];
        encode_event(&mut st.buf, e);
        st.events += 1;
        st.tracker.event(e);
        if st.buf.len() >= self.chunk_bytes {
            self.flush_thread(i)?;
        }
        Ok(())
    }

    /// The index of `t`'s state, new if `t` has not been seen; `t` becomes the current thread.
    fn state_of(&mut self, t: ThreadId) -> u32 {
        let states = &mut self.states;
        let i = *self.threads.entry(t).or_insert_with(|| {
            states.push(ThreadState {
                thread: t,
                buf: Vec::new(),
                events: 0,
                tracker: LevelTracker::new(),
            });
            states.len() as u32 - 1
        });
        self.current = Some((t, i));
        i
    }

    fn flush_thread(&mut self, i: u32) -> std::io::Result<()> {
        let st = &mut self.states[i as usize];
        if st.events == 0 {
            return Ok(());
        }
        self.codec.compress(&st.buf, &mut self.scratch)?;
        self.out.write_all(&self.scratch)?;
        self.chunks.push(ChunkEntry {
            thread: i,
            offset: self.written,
            compressed: self.scratch.len() as u64,
            uncompressed: st.buf.len() as u64,
            events: st.events,
            crc: crc32fast::hash(&st.buf),
        });
        self.written += self.scratch.len() as u64;
        st.tracker.end_chunk();
        st.buf.clear();
        st.events = 0;
        Ok(())
    }

    /// Flushes the last chunks and writes the index and footer; returns the output and the
    /// index size in bytes.
    pub fn finish(mut self) -> std::io::Result<(W, usize)> {
        for i in 0..self.states.len() as u32 {
            self.flush_thread(i)?;
        }
        let mut index = std::mem::take(&mut self.names);
        write_varint(&mut index, self.states.len() as u64);
        for st in &self.states {
            write_varint(&mut index, u64::from(st.thread.0));
        }
        write_varint(&mut index, self.chunks.len() as u64);
        for c in &self.chunks {
            for v in [u64::from(c.thread), c.compressed, c.uncompressed, c.events] {
                write_varint(&mut index, v);
            }
            index.extend_from_slice(&c.crc.to_le_bytes());
        }
        for st in std::mem::take(&mut self.states) {
            st.tracker.finish().write(&mut index);
        }
        self.out.write_all(&index)?;
        let mut footer = Vec::with_capacity(FOOTER_LEN as usize);
        footer.extend_from_slice(&self.written.to_le_bytes());
        footer.extend_from_slice(&crc32fast::hash(&index).to_le_bytes());
        footer.extend_from_slice(&FOOTER_MAGIC);
        self.out.write_all(&footer)?;
        self.out.flush()?;
        Ok((self.out, index.len()))
    }
}

/// The index's function table: the count, then each name with its length.
fn encode_names(db: &ProgramDb) -> Vec<u8> {
    let mut out = Vec::new();
    write_varint(&mut out, db.functions.len() as u64);
    for f in &db.functions {
        write_varint(&mut out, f.name.len() as u64);
        out.extend_from_slice(f.name.as_bytes());
    }
    out
}

/// An open chunked trace: the index in memory, chunks read on demand.
pub struct ChunkedTrace<R: Read + Seek> {
    src: R,
    /// Function names, by function id.
    pub functions: Vec<String>,
    /// Thread ids, in the order of [`ChunkEntry::thread`].
    pub threads: Vec<ThreadId>,
    /// All chunks in file order.
    pub chunks: Vec<ChunkEntry>,
    /// Per thread: its chunks (indices into `chunks`) and their level index.
    pub per_thread: Vec<(Vec<usize>, LevelIndex)>,
    codec: u8,
    layout: Layout,
    index_bytes: u64,
    compressed: Vec<u8>,
    plain: Vec<u8>,
}

impl<R: Read + Seek> ChunkedTrace<R> {
    /// Reads and validates the header, footer and index.
    pub fn open(mut src: R) -> Result<Self, QueryError> {
        let corrupt = QueryError::corrupt(CONTAINER);
        let len = src.seek(SeekFrom::End(0))?;
        src.seek(SeekFrom::Start(0))?;
        let mut head = [0u8; HEADER_LEN as usize];
        let got = read_up_to(&mut src, &mut head)?;
        let mut r = Reader::new(&head[..got], 0);
        if r.bytes(4, "magic").map_err(&corrupt)? != MAGIC {
            return Err(QueryError::invalid(
                CONTAINER,
                "magic",
                Reader::new(&[], 0).offset(),
            ));
        }
        let version =
            u16::from_le_bytes(r.bytes(2, "version").map_err(&corrupt)?.try_into().unwrap());
        let codec = r.u8("codec").map_err(&corrupt)?;
        let flags = r.u8("flags").map_err(&corrupt)?;
        if !(1..=VERSION).contains(&version) || !(1..=2).contains(&codec) || flags != 0 {
            return Err(QueryError::invalid(
                CONTAINER,
                "version, codec or flags",
                Reader::new(&[], 4).offset(),
            ));
        }
        if len < HEADER_LEN + FOOTER_LEN {
            return Err(corrupt(
                Reader::new(&[], len).fail("footer", WireErrorKind::Truncated),
            ));
        }
        src.seek(SeekFrom::Start(len - FOOTER_LEN))?;
        let mut foot = [0u8; FOOTER_LEN as usize];
        src.read_exact(&mut foot)?;
        let mut f = Reader::new(&foot, len - FOOTER_LEN);
        let index_offset = f.u64_le("index offset").map_err(&corrupt)?;
        let crc = f.u32_le("index checksum").map_err(&corrupt)?;
        if f.bytes(4, "footer magic").map_err(&corrupt)? != FOOTER_MAGIC
            || !(HEADER_LEN..=len - FOOTER_LEN).contains(&index_offset)
        {
            return Err(QueryError::invalid(
                CONTAINER,
                "footer",
                Reader::new(&[], len - FOOTER_LEN).offset(),
            ));
        }
        let mut index = vec![0u8; (len - FOOTER_LEN - index_offset) as usize];
        src.seek(SeekFrom::Start(index_offset))?;
        src.read_exact(&mut index)?;
        if crc32fast::hash(&index) != crc {
            return Err(QueryError::invalid(
                CONTAINER,
                "index checksum",
                Reader::new(&[], index_offset).offset(),
            ));
        }
        let mut t = ChunkedTrace {
            src,
            functions: Vec::new(),
            threads: Vec::new(),
            chunks: Vec::new(),
            per_thread: Vec::new(),
            codec,
            layout: if version == 1 {
                Layout::Dense
            } else {
                Layout::Sparse
            },
            index_bytes: index.len() as u64,
            compressed: Vec::new(),
            plain: Vec::new(),
        };
        t.read_index(&mut Reader::new(&index, index_offset), index_offset)?;
        Ok(t)
    }

    fn read_index(&mut self, r: &mut Reader<'_>, index_offset: u64) -> Result<(), QueryError> {
        let corrupt = QueryError::corrupt(CONTAINER);
        let n = r.count(1, "function count").map_err(&corrupt)?;
        for _ in 0..n {
            let l = r.count(1, "function name length").map_err(&corrupt)?;
            let name = r.bytes(l, "function name").map_err(&corrupt)?;
            let name = std::str::from_utf8(name)
                .map_err(|_| QueryError::invalid(CONTAINER, "function name", r.offset()))?;
            self.functions.push(name.to_owned());
        }
        let n = r.count(1, "thread count").map_err(&corrupt)?;
        for _ in 0..n {
            let t = r
                .varint_max(u32::MAX.into(), "thread id")
                .map_err(&corrupt)?;
            self.threads.push(ThreadId(t as u32));
        }
        let n = r.count(8, "chunk count").map_err(&corrupt)?;
        let mut offset = HEADER_LEN;
        self.per_thread = vec![(Vec::new(), LevelIndex::default()); self.threads.len()];
        for i in 0..n {
            let thread = r
                .varint_max(self.threads.len() as u64 - 1, "chunk thread")
                .map_err(&corrupt)?;
            let compressed = r
                .varint_max(index_offset - offset, "compressed length")
                .map_err(&corrupt)?;
            let uncompressed = r
                .varint_max(MAX_CHUNK_BYTES, "uncompressed length")
                .map_err(&corrupt)?;
            let events = r
                .varint_max(uncompressed, "event count")
                .map_err(&corrupt)?;
            let crc = r.u32_le("chunk checksum").map_err(&corrupt)?;
            self.chunks.push(ChunkEntry {
                thread: thread as u32,
                offset,
                compressed,
                uncompressed,
                events,
                crc,
            });
            self.per_thread[thread as usize].0.push(i);
            offset += compressed;
        }
        if offset != index_offset {
            return Err(QueryError::invalid(
                CONTAINER,
                "chunk lengths (they do not reach the index)",
                r.offset(),
            ));
        }
        for (chunks, levels) in &mut self.per_thread {
            *levels = LevelIndex::read(r, CONTAINER, self.layout)?;
            if levels.len() != chunks.len() {
                return Err(QueryError::invalid(
                    CONTAINER,
                    "thread level index",
                    r.offset(),
                ));
            }
        }
        if !r.is_empty() {
            return Err(QueryError::invalid(CONTAINER, "end of index", r.offset()));
        }
        Ok(())
    }

    /// Size of the index in bytes (footer excluded).
    pub fn index_bytes(&self) -> u64 {
        self.index_bytes
    }

    /// The function names, by id.
    pub fn function_names(&self) -> &[String] {
        &self.functions
    }

    /// The id of the function called `name`.
    pub fn function(&self, name: &str) -> Option<FunctionId> {
        self.functions
            .iter()
            .position(|n| n == name)
            .map(|i| FunctionId(i as u32))
    }

    /// Reads and decompresses chunk `c`, checking its length and checksum; the bytes are in
    /// an internal buffer reused across chunks.
    pub fn load(&mut self, c: usize) -> Result<&[u8], QueryError> {
        let e = self.chunks[c];
        self.src.seek(SeekFrom::Start(e.offset))?;
        self.compressed.clear();
        (&mut self.src)
            .take(e.compressed)
            .read_to_end(&mut self.compressed)?;
        self.plain.clear();
        // The declared length bounds the output: a lying chunk cannot make us allocate more.
        let limit = e.uncompressed + 1;
        let res = match self.codec {
            1 => zstd::stream::read::Decoder::with_buffer(&self.compressed[..])
                .and_then(|d| d.take(limit).read_to_end(&mut self.plain)),
            _ => flate2::read::GzDecoder::new(&self.compressed[..])
                .take(limit)
                .read_to_end(&mut self.plain),
        };
        let at = Reader::new(&[], e.offset);
        if res.is_err() || self.plain.len() as u64 != e.uncompressed {
            return Err(QueryError::invalid(
                CONTAINER,
                "compressed chunk",
                at.offset(),
            ));
        }
        if crc32fast::hash(&self.plain) != e.crc {
            return Err(QueryError::invalid(
                CONTAINER,
                "chunk checksum",
                at.offset(),
            ));
        }
        Ok(&self.plain)
    }

    /// Decodes chunk `c` into events (appended to `out`).
    pub fn events(&mut self, c: usize, out: &mut Vec<Event>) -> Result<(), QueryError> {
        let e = self.chunks[c];
        self.load(c)?;
        decode_events(&self.plain, e, out)
    }
}

fn read_up_to(src: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match src.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Decodes one uncompressed chunk. Offsets in errors are the chunk's file offset plus the
/// position inside the uncompressed bytes.
fn decode_events(bytes: &[u8], e: ChunkEntry, out: &mut Vec<Event>) -> Result<(), QueryError> {
    let corrupt = QueryError::corrupt(CONTAINER);
    let mut r = Reader::new(bytes, e.offset);
    let start = out.len();
    while !r.is_empty() {
        let v = r.varint("event").map_err(&corrupt)?;
        let id = v >> 3;
        let small = |r: &Reader<'_>| {
            u32::try_from(id).map_err(|_| QueryError::invalid(CONTAINER, "event id", r.offset()))
        };
        out.push(match v & 7 {
            0 => Event::Enter(FunctionId(small(&r)?)),
            1 if id == 0 => Event::Leave,
            2 => Event::Block(BlockId(small(&r)?)),
            3 => Event::Path(PathId(id)),
            5 if id == 0 => Event::Path(PathId(r.varint("escaped path id").map_err(&corrupt)?)),
            _ => return Err(QueryError::invalid(CONTAINER, "event tag", r.offset())),
        });
    }
    if (out.len() - start) as u64 != e.events {
        return Err(QueryError::invalid(
            CONTAINER,
            "chunk event count",
            r.offset(),
        ));
    }
    Ok(())
}

/// Time spent by scheme 3, split as in the paper's Figure 13.
#[derive(Clone, Copy, Debug, Default)]
pub struct ChunkStats {
    /// Reading and decompressing chunks.
    pub decompress: Duration,
    /// Decoding events and running the automaton.
    pub matching: Duration,
    /// Chunks decompressed.
    pub loaded: usize,
    /// Chunks skipped using the index.
    pub skipped: usize,
}

/// Scheme 3 on every thread of a chunked trace.
pub fn run<R: Read + Seek>(
    trace: &mut ChunkedTrace<R>,
    query: &PathQuery,
    mode: Mode,
) -> Result<(Vec<StreamMatch>, ChunkStats), QueryError> {
    let (mut all, stats) = run_many(trace, std::slice::from_ref(query), mode)?;
    Ok((all.pop().unwrap_or_default(), stats))
}

/// Scheme 3 for several paths at once: each chunk is decompressed at most once, if any of the
/// queries' functions is in it, and every query's automaton skips the chunks without its
/// function. Returns one answer list per query, in order.
pub fn run_many<R: Read + Seek>(
    trace: &mut ChunkedTrace<R>,
    queries: &[PathQuery],
    mode: Mode,
) -> Result<(Vec<Vec<StreamMatch>>, ChunkStats), QueryError> {
    let patterns = queries
        .iter()
        .map(|q| Pattern::new(&q.path))
        .collect::<Result<Vec<_>, _>>()?;
    let mut stats = ChunkStats::default();
    let mut out = vec![Vec::with_capacity(trace.threads.len()); queries.len()];
    let mut events = Vec::new();
    for t in 0..trace.threads.len() {
        let mut autos: Vec<Automaton> = patterns.iter().map(Automaton::new).collect();
        let chunk_ids = trace.per_thread[t].0.clone();
        for (local, &c) in chunk_ids.iter().enumerate() {
            let done = |a: &Automaton| mode == Mode::First && a.first().is_some();
            if autos.iter().all(done) {
                break;
            }
            let levels = &trace.per_thread[t].1;
            let lv = levels.levels(local);
            let mut wanted = Vec::new();
            for (i, (a, q)) in autos.iter_mut().zip(queries).enumerate() {
                if levels.contains(q.function, local) {
                    wanted.push(i);
                } else {
                    a.skip(trace.chunks[c].events, lv.smallest, lv.exit);
                }
            }
            if wanted.is_empty() {
                stats.skipped += 1;
                continue;
            }
            let t0 = Instant::now();
            trace.load(c)?;
            let t1 = Instant::now();
            events.clear();
            decode_events(&trace.plain, trace.chunks[c], &mut events)?;
            stats.loaded += 1;
            for i in wanted {
                let (a, q, p) = (&mut autos[i], &queries[i], &patterns[i]);
                if done(a) {
                    a.skip(trace.chunks[c].events, lv.smallest, lv.exit);
                    continue;
                }
                for &e in &events {
                    if a.feed(Kind::of(e, q.function, p)) && mode == Mode::First {
                        break;
                    }
                }
            }
            stats.decompress += t1 - t0;
            stats.matching += t1.elapsed();
        }
        for (o, a) in out.iter_mut().zip(&autos) {
            o.push(StreamMatch::new(
                trace.threads[t],
                a.first(),
                a.count(),
                mode,
            ));
        }
    }
    Ok((out, stats))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The module docs' example, byte for byte outside the compressed stream.
    #[test]
    fn worked_example_is_pinned() {
        let mut db = ProgramDb::default();
        db.intern("main");
        let mut w = ChunkWriter::new(Vec::new(), &db, Codec::Gzip(6), 4096).unwrap();
        for e in [
            Event::Enter(FunctionId(0)),
            Event::Block(BlockId(1)),
            Event::Leave,
        ] {
            w.push(e).unwrap();
        }
        let (bytes, index_len) = w.finish().unwrap();
        assert_eq!(bytes[..8], [0x57, 0x50, 0x50, 0x43, 0x02, 0x00, 0x02, 0x00]);
        let n = bytes.len();
        let index_offset = u64::from_le_bytes(bytes[n - 16..n - 8].try_into().unwrap()) as usize;
        assert_eq!(&bytes[n - 4..], b"CIDX");
        assert_eq!(index_offset + index_len + 16, n);
        let clen = index_offset - 8;
        let mut expected = vec![0x01, 0x04, b'm', b'a', b'i', b'n', 0x01, 0x00, 0x01, 0x00];
        expected.push(clen as u8);
        expected.extend([0x03, 0x03]);
        expected.extend(crc32fast::hash(&[0x00, 0x0a, 0x01]).to_le_bytes());
        expected.extend([0x01, 0x00, 0x00, 0x01, 0x00, 0x01]);
        assert_eq!(bytes[index_offset..n - 16], expected[..]);
        let mut t = ChunkedTrace::open(std::io::Cursor::new(bytes.clone())).unwrap();
        assert_eq!(t.load(0).unwrap(), [0x00, 0x0a, 0x01]);

        // Version 1 (dense rows: `01 01`, one function id, in chunk 0) still reads the same.
        let mut v1 = bytes[..index_offset].to_vec();
        v1[4] = 0x01;
        expected.truncate(expected.len() - 3);
        expected.extend([0x01, 0x01]);
        v1.extend(&expected);
        v1.extend((index_offset as u64).to_le_bytes());
        v1.extend(crc32fast::hash(&expected).to_le_bytes());
        v1.extend(b"CIDX");
        let mut old = ChunkedTrace::open(std::io::Cursor::new(v1)).unwrap();
        assert_eq!(old.load(0).unwrap(), [0x00, 0x0a, 0x01]);
        assert_eq!(old.per_thread, t.per_thread);
    }
}
