//! The address trace (AT) file: what a `wpp cc --mode trace-addr` program writes beside its
//! block trace (a separate file, so the block trace, every compressor and every query are
//! unchanged, and the AT can be dropped or kept independently; the paper's baseline is exactly
//! "CF + AT", Tallam and Gupta §4, Table IV).
//!
//! # Layout (version 3, integers little-endian)
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `WPP-AT\r\n` |
//! | 4 | version (3; version 2 files, which have no `'D'` records, still read) |
//! | 4 | `n`: length of the memory database |
//! | `n` | the [`MemoryDb`], postcard |
//! | 4 | CRC-32 of those `n` bytes |
//! | … | records, then one end record |
//!
//! Each thread writes its own accesses, a buffer at a time; every access carries a *sequence
//! number* from one process-wide counter (see `wpp_abi`, "Address trace buffer"), and a reader
//! merges the threads' chunks back into the order of the sequence numbers. The records:
//!
//! - `'T'`, `u32` thread, `u64` first sequence number it may use: a thread begins (before its
//!   first chunk). Threads are numbered from 0 in the order they first access memory.
//! - `'C'`, `u32` chunk number (0, 1, … over the file), `u32` thread, `u64` first and `u64` last
//!   sequence number, `u32` record count, `u32` length of the decoded payload, `u32` length of
//!   the stored payload, `u32` CRC-32 of the decoded payload, then the stored payload: the
//!   decoded payload compressed with raw deflate (RFC 1951). Deflate rather than zstd
//!   because the pure-Rust encoder (zlib-rs) allocates from the runtime's private heap, while
//!   zstd's C context allocates from the program's `malloc` (and resizes its workspace) at
//!   moments the program's flushes decide, which would move the program's heap blocks. The
//!   decoded payload is one record per access, in the thread's order: varint `id << 1 | gap`,
//!   zigzag varint of `address − previous address` (the previous address starts at 0 in each
//!   chunk), varint `size`, and, when `gap` is set, varint `sequence − previous sequence − 1`
//!   (never on the first record, whose number is the header's first; single-threaded, there
//!   are no gaps).
//! - `'Q'`, `u32` thread: the thread ended, every access of it is in the file.
//! - `'D'`, `u32` length `n`, the grown [`MemoryDb`] (`n` bytes, postcard), `u32` CRC-32 of
//!   them: a shared library was loaded while the program ran (`dlopen`), and the process's
//!   memory instructions are now these. It comes before any access of the new instructions;
//!   ids only grow (a database keeps every instruction of the one before it, at the same id),
//!   so the newest describes every access of the file, and the reader gives it as
//!   [`AtReader::db`]. Only accesses of the program's instructions hold such ids; a library's
//!   names may qualify names of the earlier database (`m!helper`), which is why the newest is
//!   taken rather than the first.
//!
//! The end record is `'E'`, `u32` chunk count, `u64` record count. A recording the runtime
//! had to abandon ends with `'X'`, `u32` length and a UTF-8 message instead, which the reader
//! reports as an error. A file without an end record (the program was killed) gives the
//! accesses that are certainly complete — those before the first sequence number a live thread
//! may still have held in its buffer — and then reports the truncation: a lost access of one
//! thread never makes another thread's load depend on a wrong store.
//!
//! Readers check every length against [`MAX_CHUNK_BYTES`] before reading, allocate only as
//! data arrives, and name the file and byte offset of whatever is wrong.

use crate::memdb::{MemoryDb, MEMORY_DB_VERSION};
use std::collections::BinaryHeap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use wpp_trace::wire::{write_varint, Reader};

/// The file's first 8 bytes.
pub const MAGIC: &[u8; 8] = b"WPP-AT\r\n";
/// The layout version this crate writes.
pub const VERSION: u32 = 3;
/// The oldest layout version this crate reads: version 2 is version 3 without `'D'` records
/// (it could not record libraries loaded while the program ran).
pub const OLDEST_VERSION: u32 = 2;
/// The deflate level of chunks: zlib-rs's level 2 (zlib-ng's `deflate_fast`); its level 1
/// (`deflate_quick`, static Huffman codes only) made the zlib workload's address trace 24 %
/// larger (94.2 MB against 76.0 MB; `miniz_oxide`'s level 1, used before: 84.0 MB).
const CHUNK_LEVEL: flate2::Compression = flate2::Compression::new(2);

/// Deflates `raw` into `stored` (raw deflate, RFC 1951) with the writer's encoder `z`, reset
/// for each chunk: a new encoder per chunk would allocate its window and tables each time.
fn deflate(z: &mut flate2::Compress, raw: &[u8], stored: &mut Vec<u8>) -> std::io::Result<()> {
    z.reset();
    stored.clear();
    stored.reserve(raw.len() / 2 + 64);
    loop {
        let done = z.total_in() as usize;
        let status = z.compress_vec(&raw[done..], stored, flate2::FlushCompress::Finish)?;
        if status == flate2::Status::StreamEnd {
            return Ok(());
        }
        stored.reserve(stored.capacity().max(64));
    }
}

/// The largest decoded or stored chunk payload (and memory database) a reader accepts.
pub const MAX_CHUNK_BYTES: u32 = 64 << 20;

/// One executed memory access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// The memory instruction ([`MemoryDb`] id).
    pub id: u32,
    /// The first byte's address.
    pub addr: u64,
    /// Bytes accessed.
    pub size: u64,
}

/// Consecutive accesses of one thread, in the order they ran.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Run {
    /// The thread (0: the first to access memory).
    pub thread: u32,
    /// Its accesses.
    pub accesses: Vec<Access>,
}

impl From<Vec<Access>> for Run {
    /// Accesses of a single-threaded program (thread 0).
    fn from(accesses: Vec<Access>) -> Run {
        Run {
            thread: 0,
            accesses,
        }
    }
}

/// What is wrong with an AT file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AtError {
    /// The file could not be read.
    #[error("cannot read address trace {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The contents are malformed.
    #[error("address trace {path}: {message} at byte offset {offset}")]
    Format {
        /// The file.
        path: String,
        /// Where the offending item starts.
        offset: u64,
        /// What is wrong.
        message: String,
    },
}

/// Encodes records of accesses (the runtime's side).
pub struct AtWriter<W: Write> {
    out: W,
    chunks: u32,
    records: u64,
    /// Threads begun, and the next sequence number of [`chunk`](Self::chunk).
    threads: u32,
    next_seq: u64,
    coder: ChunkCoder,
}

/// Encodes and deflates chunks, apart from the file they go to, so that several threads can
/// code chunks that one [`AtWriter`] writes ([`AtWriter::write_coded`]).
pub struct ChunkCoder {
    raw: Vec<u8>,
    /// One encoder for every chunk, reset between them (boxed: its state is large, and a
    /// coder is moved around inline).
    deflate: Box<flate2::Compress>,
}

/// A chunk ready to be written: everything of its `'C'` record but its number.
pub struct CodedChunk {
    thread: u32,
    first_seq: u64,
    last_seq: u64,
    records: u32,
    raw_len: u32,
    crc: u32,
    stored: Vec<u8>,
}

impl Default for ChunkCoder {
    fn default() -> Self {
        ChunkCoder {
            raw: Vec::new(),
            deflate: Box::new(flate2::Compress::new(CHUNK_LEVEL, false)),
        }
    }
}

impl ChunkCoder {
    /// Codes one chunk of `thread`'s accesses with their sequence numbers (increasing, and
    /// above those of the thread's earlier chunks); `None` when there are none.
    pub fn code(
        &mut self,
        thread: u32,
        accesses: impl Iterator<Item = (u64, Access)>,
    ) -> std::io::Result<Option<CodedChunk>> {
        self.raw.clear();
        let (mut prev, mut prev_seq, mut first) = (0u64, 0u64, None);
        let mut n = 0u32;
        for (seq, a) in accesses {
            let gap = match first {
                None => 0,
                Some(_) => seq.wrapping_sub(prev_seq).wrapping_sub(1),
            };
            first.get_or_insert(seq);
            write_varint(&mut self.raw, u64::from(a.id) << 1 | u64::from(gap != 0));
            let delta = a.addr.wrapping_sub(prev) as i64;
            write_varint(&mut self.raw, ((delta << 1) ^ (delta >> 63)) as u64);
            write_varint(&mut self.raw, a.size);
            if gap != 0 {
                write_varint(&mut self.raw, gap);
            }
            prev = a.addr;
            prev_seq = seq;
            n += 1;
        }
        let Some(first) = first else {
            return Ok(None);
        };
        let mut stored = Vec::new();
        deflate(&mut self.deflate, &self.raw, &mut stored)?;
        Ok(Some(CodedChunk {
            thread,
            first_seq: first,
            last_seq: prev_seq,
            records: n,
            raw_len: self.raw.len() as u32,
            crc: crc32fast::hash(&self.raw),
            stored,
        }))
    }
}

impl<W: Write> AtWriter<W> {
    /// Writes the header with the postcard-encoded memory database `db`.
    pub fn new(mut out: W, db: &[u8]) -> std::io::Result<Self> {
        let mut h = Vec::with_capacity(db.len() + 20);
        h.extend_from_slice(MAGIC);
        h.extend_from_slice(&VERSION.to_le_bytes());
        push_db(&mut h, db);
        out.write_all(&h)?;
        Ok(AtWriter {
            out,
            chunks: 0,
            records: 0,
            threads: 0,
            next_seq: 0,
            coder: ChunkCoder::default(),
        })
    }

    /// Begins thread `thread`, whose accesses have sequence numbers `first_seq` or later.
    pub fn begin_thread(&mut self, thread: u32, first_seq: u64) -> std::io::Result<()> {
        let mut r = vec![b'T'];
        r.extend_from_slice(&thread.to_le_bytes());
        r.extend_from_slice(&first_seq.to_le_bytes());
        self.threads = self.threads.max(thread + 1);
        self.out.write_all(&r)
    }

    /// Writes the process's grown memory database `db` (postcard-encoded; see the `'D'`
    /// record): call it before any access of its new instructions is written.
    pub fn grown_db(&mut self, db: &[u8]) -> std::io::Result<()> {
        let mut r = Vec::with_capacity(db.len() + 9);
        r.push(b'D');
        push_db(&mut r, db);
        self.out.write_all(&r)
    }

    /// Ends thread `thread`: every access of it was written.
    pub fn end_thread(&mut self, thread: u32) -> std::io::Result<()> {
        let mut r = vec![b'Q'];
        r.extend_from_slice(&thread.to_le_bytes());
        self.out.write_all(&r)
    }

    /// Appends one chunk of a single-threaded program (thread 0), whose accesses take the next
    /// sequence numbers.
    pub fn chunk(&mut self, accesses: impl Iterator<Item = Access>) -> std::io::Result<()> {
        if self.threads == 0 {
            self.begin_thread(0, 0)?;
        }
        let numbered = accesses.zip(self.next_seq..);
        let n = self.thread_chunk(0, numbered.map(|(a, seq)| (seq, a)))?;
        self.next_seq += u64::from(n);
        Ok(())
    }

    /// Appends one chunk of `thread`'s accesses with their sequence numbers (increasing, and
    /// above those of the thread's earlier chunks); returns how many there were.
    pub fn thread_chunk(
        &mut self,
        thread: u32,
        accesses: impl Iterator<Item = (u64, Access)>,
    ) -> std::io::Result<u32> {
        match self.coder.code(thread, accesses)? {
            Some(c) => self.write_coded(&c).map(|()| c.records),
            None => Ok(0),
        }
    }

    /// Appends a chunk a [`ChunkCoder`] coded.
    pub fn write_coded(&mut self, c: &CodedChunk) -> std::io::Result<()> {
        let mut h = Vec::with_capacity(41);
        h.push(b'C');
        h.extend_from_slice(&self.chunks.to_le_bytes());
        h.extend_from_slice(&c.thread.to_le_bytes());
        h.extend_from_slice(&c.first_seq.to_le_bytes());
        h.extend_from_slice(&c.last_seq.to_le_bytes());
        for v in [c.records, c.raw_len, c.stored.len() as u32, c.crc] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        self.out.write_all(&h)?;
        self.out.write_all(&c.stored)?;
        self.chunks += 1;
        self.records += u64::from(c.records);
        Ok(())
    }

    /// Flushes what was written to the output (a buffered writer's bytes reach the file).
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    /// Writes the end record.
    pub fn finish(mut self) -> std::io::Result<W> {
        let mut e = vec![b'E'];
        e.extend_from_slice(&self.chunks.to_le_bytes());
        e.extend_from_slice(&self.records.to_le_bytes());
        self.out.write_all(&e)?;
        self.out.flush()?;
        Ok(self.out)
    }

    /// Ends the file with an abandon record carrying `message`.
    pub fn abandon(mut self, message: &str) -> std::io::Result<W> {
        let mut e = vec![b'X'];
        e.extend_from_slice(&(message.len() as u32).to_le_bytes());
        e.extend_from_slice(message.as_bytes());
        self.out.write_all(&e)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Appends a memory database as the header and `'D'` records hold it: length, bytes, CRC-32.
fn push_db(out: &mut Vec<u8>, db: &[u8]) {
    out.extend_from_slice(&(db.len() as u32).to_le_bytes());
    out.extend_from_slice(db);
    out.extend_from_slice(&crc32fast::hash(db).to_le_bytes());
}

/// Where a chunk is, found by the reader's first pass over the record headers.
#[derive(Clone, Copy, Debug)]
struct ChunkAt {
    /// The offset of its header.
    offset: u64,
    number: u32,
    first_seq: u64,
    last_seq: u64,
    records: u32,
    raw_len: u32,
    stored_len: u32,
    crc: u32,
}

/// A thread's chunks, and how far the merge has read them.
#[derive(Debug, Default)]
struct ThreadChunks {
    /// The first sequence number the thread may use.
    begin: u64,
    chunks: Vec<ChunkAt>,
    /// Whether the thread ended (all its accesses are in the file).
    ended: bool,
    /// The next chunk to decode.
    next: usize,
    /// The decoded chunk being merged: (sequence number, access), and the position in it.
    current: Vec<(u64, Access)>,
    at: usize,
}

impl ThreadChunks {
    /// The first sequence number this thread may have lost if the program was killed.
    fn complete_below(&self) -> u64 {
        match (self.ended, self.chunks.last()) {
            (true, _) => u64::MAX,
            (false, Some(c)) => c.last_seq + 1,
            (false, None) => self.begin,
        }
    }
}

/// Reads an AT file: the threads' accesses merged into the order they ran, one [`Run`] of a
/// thread at a time.
pub struct AtReader<R: Read + Seek> {
    input: R,
    path: String,
    offset: u64,
    /// The file's length, to check a skipped payload is there.
    len: u64,
    /// The file's layout version.
    version: u32,
    /// The newest memory database (the header's, or the last `'D'` record's).
    db: MemoryDb,
    threads: Vec<ThreadChunks>,
    /// Threads by their next sequence number (a min-heap through `Reverse`).
    heap: BinaryHeap<std::cmp::Reverse<(u64, u32)>>,
    /// Accesses at or past this sequence number are not given (a truncated file).
    limit: u64,
    /// The last sequence number given, to check they never repeat.
    last_seq: Option<u64>,
    /// What the first pass found wrong, reported once the complete accesses before it are
    /// given.
    pending: Option<AtError>,
    /// Whether `pending` is the file's end before its end record (a killed program).
    cut: bool,
    /// Whether a cut file's accesses end quietly ([`AtReader::allow_truncated`]).
    allow_cut: bool,
    done: bool,
}

impl AtReader<std::io::BufReader<std::fs::File>> {
    /// Opens an AT file and reads its header and record headers.
    pub fn open(path: &Path) -> Result<Self, AtError> {
        let name = path.display().to_string();
        let f = std::fs::File::open(path).map_err(|source| AtError::Io {
            path: name.clone(),
            source,
        })?;
        AtReader::new(std::io::BufReader::new(f), &name)
    }
}

/// Whether a file starts with the AT magic (for input sniffing).
pub fn is_at_file(path: &Path) -> bool {
    let mut head = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|_| &head == MAGIC)
}

impl<R: Read + Seek> AtReader<R> {
    /// Reads the header and every record header from `input`; `path` names it in errors.
    pub fn new(mut input: R, path: &str) -> Result<Self, AtError> {
        let io = |source| AtError::Io {
            path: path.to_string(),
            source,
        };
        let len = input.seek(SeekFrom::End(0)).map_err(io)?;
        input.seek(SeekFrom::Start(0)).map_err(io)?;
        let mut r = AtReader {
            input,
            path: path.to_string(),
            offset: 0,
            len,
            version: VERSION,
            db: MemoryDb::default(),
            threads: Vec::new(),
            heap: BinaryHeap::new(),
            limit: u64::MAX,
            last_seq: None,
            pending: None,
            cut: false,
            allow_cut: false,
            done: false,
        };
        r.header()?;
        if let Err(e) = r.scan_records() {
            r.limit = r
                .threads
                .iter()
                .map(ThreadChunks::complete_below)
                .min()
                .unwrap_or(0);
            r.cut = matches!(e, AtError::Format { offset, .. } if offset == r.len);
            r.pending = Some(e);
        }
        for (t, chunks) in r.threads.iter().enumerate() {
            if let Some(c) = chunks.chunks.first() {
                r.heap.push(std::cmp::Reverse((c.first_seq, t as u32)));
            }
        }
        Ok(r)
    }

    fn header(&mut self) -> Result<(), AtError> {
        let magic = self.bytes(8, "magic")?;
        if magic != MAGIC {
            return Err(self.err(0, "not an address trace (bad magic)".into()));
        }
        let version = self.u32("version")?;
        if !(OLDEST_VERSION..=VERSION).contains(&version) {
            return Err(self.err(
                8,
                format!(
                    "version {version} (this wpp reads {OLDEST_VERSION} to {VERSION}; record it \
                     again)"
                ),
            ));
        }
        self.version = version;
        self.db = self.memory_db("memory database")?;
        Ok(())
    }

    /// Reads a memory database as the header and `'D'` records hold it; `what` names it in
    /// errors.
    fn memory_db(&mut self, what: &str) -> Result<MemoryDb, AtError> {
        let len = self.u32_max(&format!("{what} length"), MAX_CHUNK_BYTES)?;
        let at = self.offset;
        let db = self.bytes(len as usize, what)?;
        let crc = self.u32(&format!("{what} checksum"))?;
        if crc != crc32fast::hash(&db) {
            return Err(self.err(at, format!("{what} checksum mismatch")));
        }
        if let Some(v) = MemoryDb::version_of(&db).filter(|&v| v != MEMORY_DB_VERSION) {
            return Err(self.err(
                at,
                format!("{what} version {v} (this wpp reads {MEMORY_DB_VERSION}; record it again)"),
            ));
        }
        let db: MemoryDb = postcard::from_bytes(&db)
            .map_err(|e| self.err(at, format!("cannot decode the {what}: {e}")))?;
        Ok(db)
    }

    /// Reads a `'D'` record (its tag read, at `at`): the database grows, keeping every
    /// instruction where it was.
    fn grown_db(&mut self, at: u64) -> Result<(), AtError> {
        let db = self.memory_db("grown memory database (a library loaded while it ran)")?;
        let (old, new) = (self.db.instructions.len(), db.instructions.len());
        if new < old || db.instructions[..old] != self.db.instructions[..] {
            return Err(self.err(
                at,
                format!(
                    "the grown memory database ({new} instructions) does not keep the {old} \
                     instructions before it"
                ),
            ));
        }
        self.db = db;
        Ok(())
    }

    /// The first pass: every record header, payloads skipped, up to the end record.
    fn scan_records(&mut self) -> Result<(), AtError> {
        let (mut chunks, mut records) = (0u32, 0u64);
        loop {
            let at = self.offset;
            let tag = self.bytes(
                1,
                "record tag (the file ends without an end record: the program was killed?)",
            )?[0];
            match tag {
                b'T' => {
                    let t = self.u32("thread number")?;
                    let begin = self.u64("thread's first sequence number")?;
                    if t as usize != self.threads.len() {
                        let n = self.threads.len();
                        return Err(self.err(
                            at,
                            format!("thread {t} begins where thread {n} was expected"),
                        ));
                    }
                    self.threads.push(ThreadChunks {
                        begin,
                        ..ThreadChunks::default()
                    });
                }
                b'C' => {
                    let c = self.chunk_header(at, chunks)?;
                    chunks += 1;
                    records += u64::from(c.records);
                }
                b'D' if self.version >= 3 => self.grown_db(at)?,
                b'Q' => {
                    let t = self.u32("thread number")?;
                    match self.threads.get_mut(t as usize) {
                        Some(th) if !th.ended => th.ended = true,
                        _ => {
                            return Err(self.err(at, format!("thread {t} ends but is not running")))
                        }
                    }
                }
                b'E' => {
                    let n = self.u32("end record")?;
                    let total = self.u64("end record")?;
                    if (n, total) != (chunks, records) {
                        return Err(self.err(at, format!(
                            "end record counts {n} chunks and {total} accesses, the file holds {chunks} and {records}"
                        )));
                    }
                    return Ok(());
                }
                b'X' => {
                    let len = self.u32_max("abandon message length", 4096)?;
                    let msg = self.bytes(len as usize, "abandon message")?;
                    let msg = String::from_utf8_lossy(&msg);
                    return Err(self.err(at, format!("the recording was abandoned: {msg}")));
                }
                t => return Err(self.err(at, format!("unknown record tag {t:#04x}"))),
            }
        }
    }

    /// Reads a chunk header (its tag read, at `at`), checks it and skips its payload.
    fn chunk_header(&mut self, at: u64, expected: u32) -> Result<ChunkAt, AtError> {
        let number = self.u32("chunk number")?;
        if number != expected {
            return Err(self.err(
                at,
                format!("chunk {number} where chunk {expected} was expected"),
            ));
        }
        let thread = self.u32("chunk's thread")?;
        let first_seq = self.u64("chunk's first sequence number")?;
        let last_seq = self.u64("chunk's last sequence number")?;
        let records = self.u32("chunk record count")?;
        let raw_len = self.u32_max("chunk payload length", MAX_CHUNK_BYTES)?;
        let stored_len = self.u32_max("chunk stored length", MAX_CHUNK_BYTES)?;
        let crc = self.u32("chunk checksum")?;
        let c = ChunkAt {
            offset: at,
            number,
            first_seq,
            last_seq,
            records,
            raw_len,
            stored_len,
            crc,
        };
        let Some(th) = self.threads.get(thread as usize).filter(|th| !th.ended) else {
            return Err(self.err(
                at,
                format!("chunk {number} of thread {thread}, which is not running"),
            ));
        };
        let after = th.chunks.last().map_or(th.begin, |p| p.last_seq + 1);
        let span = last_seq.checked_sub(first_seq).map(|d| d.saturating_add(1));
        if first_seq < after || span.is_none_or(|s| s < u64::from(records)) || records == 0 {
            return Err(self.err(at, format!(
                "chunk {number}: sequence numbers {first_seq}..={last_seq} for {records} accesses of thread {thread}, whose next is {after}"
            )));
        }
        self.skip(u64::from(stored_len), "chunk payload")?;
        self.threads[thread as usize].chunks.push(c);
        Ok(c)
    }

    /// The memory instructions: the newest database of the file, which describes every
    /// access (the `'D'` records').
    pub fn db(&self) -> &MemoryDb {
        &self.db
    }

    /// How many threads accessed memory.
    pub fn threads(&self) -> usize {
        self.threads.len()
    }

    fn err(&self, offset: u64, message: String) -> AtError {
        AtError::Format {
            path: self.path.clone(),
            offset,
            message,
        }
    }

    fn io(&self, source: std::io::Error) -> AtError {
        AtError::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// Reads `n` bytes, growing the buffer only as data arrives.
    fn bytes(&mut self, n: usize, what: &str) -> Result<Vec<u8>, AtError> {
        let mut v = Vec::new();
        let got = (&mut self.input)
            .take(n as u64)
            .read_to_end(&mut v)
            .map_err(|e| self.io(e))?;
        if got < n {
            return Err(self.err(
                self.offset + got as u64,
                format!("truncated while reading the {what}"),
            ));
        }
        self.offset += n as u64;
        Ok(v)
    }

    /// Skips `n` bytes that must be there.
    fn skip(&mut self, n: u64, what: &str) -> Result<(), AtError> {
        if self.len < self.offset + n {
            return Err(self.err(self.len, format!("truncated while reading the {what}")));
        }
        self.offset += n;
        self.input
            .seek(SeekFrom::Start(self.offset))
            .map_err(|e| self.io(e))?;
        Ok(())
    }

    fn u32(&mut self, what: &str) -> Result<u32, AtError> {
        let b = self.bytes(4, what)?;
        Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }

    fn u64(&mut self, what: &str) -> Result<u64, AtError> {
        let b = self.bytes(8, what)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    fn u32_max(&mut self, what: &str, max: u32) -> Result<u32, AtError> {
        let at = self.offset;
        let v = self.u32(what)?;
        if v > max {
            return Err(self.err(at, format!("{what} {v} exceeds the limit {max}")));
        }
        Ok(v)
    }

    /// Why the file ends early, if it was cut short (no end record: the program was killed);
    /// the accesses given are those certainly complete.
    pub fn truncation(&self) -> Option<&AtError> {
        self.pending.as_ref().filter(|_| self.cut)
    }

    /// Ends the accesses of a cut file without its error ([`AtReader::truncation`] tells).
    pub fn allow_truncated(mut self) -> Self {
        self.allow_cut = true;
        self
    }

    /// The next run of one thread's accesses in the merged order; `None` at the end. A file
    /// that was cut short gives its complete accesses, then the error (unless
    /// [`AtReader::allow_truncated`]).
    pub fn next_run(&mut self) -> Result<Option<Run>, AtError> {
        if self.done {
            return Ok(None);
        }
        let Some(std::cmp::Reverse((seq, t))) = self.heap.pop() else {
            self.done = true;
            return match self.pending.take() {
                Some(_) if self.cut && self.allow_cut => Ok(None),
                pending => pending.map_or(Ok(None), Err),
            };
        };
        // The run goes on while this thread's accesses come before every other thread's.
        let until = self
            .heap
            .peek()
            .map_or(u64::MAX, |r| r.0 .0)
            .min(self.limit);
        if seq >= self.limit {
            self.heap.clear();
            return self.next_run();
        }
        let mut run = Run {
            thread: t,
            accesses: Vec::new(),
        };
        loop {
            let th = &mut self.threads[t as usize];
            if th.at == th.current.len() {
                if th.next == th.chunks.len() {
                    break;
                }
                let c = th.chunks[th.next];
                // A run ends with its chunk, so a reader holds one chunk's accesses however
                // long a thread runs alone (a single-threaded file is one thread throughout).
                if !run.accesses.is_empty() {
                    self.heap.push(std::cmp::Reverse((c.first_seq, t)));
                    break;
                }
                self.threads[t as usize].next += 1;
                let decoded = self.decode(c)?;
                let th = &mut self.threads[t as usize];
                th.current = decoded;
                th.at = 0;
                continue;
            }
            let (seq, a) = th.current[th.at];
            // The first access is the smallest of all threads' (ties are caught below).
            if seq >= until && !run.accesses.is_empty() {
                self.heap.push(std::cmp::Reverse((seq, t)));
                break;
            }
            if self.last_seq.is_some_and(|l| l >= seq) {
                let chunk = th.chunks[th.next - 1];
                return Err(self.err(
                    chunk.offset,
                    format!(
                        "chunk {}: sequence number {seq} of thread {t} comes twice or out of order",
                        chunk.number
                    ),
                ));
            }
            self.last_seq = Some(seq);
            th.at += 1;
            run.accesses.push(a);
        }
        Ok(Some(run))
    }

    /// Reads and decodes a chunk's payload.
    fn decode(&mut self, c: ChunkAt) -> Result<Vec<(u64, Access)>, AtError> {
        let payload_at = c.offset + 41;
        self.input
            .seek(SeekFrom::Start(payload_at))
            .map_err(|e| self.io(e))?;
        self.offset = payload_at;
        let stored = self.bytes(c.stored_len as usize, "chunk payload")?;
        let number = c.number;
        let mut raw = Vec::new();
        flate2::read::DeflateDecoder::new(&stored[..])
            .take(u64::from(c.raw_len) + 1)
            .read_to_end(&mut raw)
            .map_err(|e| {
                self.err(
                    payload_at,
                    format!("chunk {number}: cannot decompress: {e}"),
                )
            })?;
        if raw.len() != c.raw_len as usize || crc32fast::hash(&raw) != c.crc {
            return Err(self.err(
                payload_at,
                format!("chunk {number}: payload length or checksum mismatch"),
            ));
        }
        decode_records(&raw, &c, payload_at)
            .map_err(|m| self.err(payload_at, format!("chunk {number}: {m}")))
    }
}

/// Decodes a chunk's payload: its records with their sequence numbers, which must run from
/// the header's first to its last.
fn decode_records(raw: &[u8], c: &ChunkAt, base: u64) -> Result<Vec<(u64, Access)>, String> {
    // Each record takes at least 3 bytes, so the count is checked before it sizes anything.
    if u64::from(c.records) * 3 > raw.len() as u64 {
        return Err(format!(
            "{} records cannot fit {} bytes",
            c.records,
            raw.len()
        ));
    }
    let mut r = Reader::new(raw, base);
    let mut out = Vec::with_capacity(c.records as usize);
    let (mut prev, mut seq) = (0u64, c.first_seq.wrapping_sub(1));
    for _ in 0..c.records {
        let word = r
            .varint_max(u64::from(u32::MAX) << 1 | 1, "access id")
            .map_err(|e| e.to_string())?;
        let z = r.varint("access address").map_err(|e| e.to_string())?;
        let delta = ((z >> 1) as i64) ^ -((z & 1) as i64);
        let size = r.varint("access size").map_err(|e| e.to_string())?;
        let gap = match word & 1 {
            1 => r.varint("sequence gap").map_err(|e| e.to_string())?,
            _ => 0,
        };
        seq = match out.is_empty() {
            // The header's first number is the first access's: the merge orders by it.
            true => Some(c.first_seq).filter(|_| gap == 0),
            false => seq.checked_add(gap).and_then(|s| s.checked_add(1)),
        }
        .filter(|&s| s <= c.last_seq)
        .ok_or_else(|| {
            format!(
                "an access's sequence number is not within the chunk's {}..={}",
                c.first_seq, c.last_seq
            )
        })?;
        prev = prev.wrapping_add(delta as u64);
        out.push((
            seq,
            Access {
                id: (word >> 1) as u32,
                addr: prev,
                size,
            },
        ));
    }
    if !r.is_empty() {
        return Err(format!("{} bytes after the last record", r.remaining()));
    }
    if seq != c.last_seq {
        return Err(format!(
            "the last access is {seq}, the header says {}",
            c.last_seq
        ));
    }
    Ok(out)
}

impl<R: Read + Seek> Iterator for AtReader<R> {
    type Item = Result<Run, AtError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_run().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memdb::{AccessKind, MemInstr};

    fn db() -> Vec<u8> {
        let db = MemoryDb {
            version: MEMORY_DB_VERSION,
            program: Default::default(),
            instructions: vec![MemInstr {
                function: 0,
                block: 0,
                line: 3,
                column: 1,
                file: crate::memdb::NO_FILE,
                kind: AccessKind::Store,
                what: "store i32".into(),
            }],
            files: Vec::new(),
        };
        postcard::to_allocvec(&db).unwrap()
    }

    fn sample() -> (Vec<u8>, Vec<Access>) {
        let accesses: Vec<_> = (0..1000u64)
            .map(|i| Access {
                id: (i % 3) as u32,
                addr: 0x7fff_0000_0000u64.wrapping_add(i * 8) ^ (i << 40),
                size: 1 + i % 9,
            })
            .collect();
        let mut w = AtWriter::new(Vec::new(), &db()).unwrap();
        w.chunk(accesses[..400].iter().copied()).unwrap();
        w.chunk(accesses[400..].iter().copied()).unwrap();
        (w.finish().unwrap(), accesses)
    }

    fn read_all(bytes: &[u8]) -> Result<Vec<Access>, AtError> {
        let r = AtReader::new(std::io::Cursor::new(bytes), "t.at")?;
        let mut v = Vec::new();
        for run in r {
            v.extend(run?.accesses);
        }
        Ok(v)
    }

    /// The runs of a file as (thread, access) pairs, up to the first error, and the error.
    fn read_threads(bytes: &[u8]) -> (Vec<(u32, Access)>, Option<String>) {
        let mut r = match AtReader::new(std::io::Cursor::new(bytes), "t.at") {
            Ok(r) => r,
            Err(e) => return (Vec::new(), Some(e.to_string())),
        };
        let mut v = Vec::new();
        loop {
            match r.next_run() {
                Ok(Some(run)) => v.extend(run.accesses.into_iter().map(|a| (run.thread, a))),
                Ok(None) => return (v, None),
                Err(e) => return (v, Some(e.to_string())),
            }
        }
    }

    /// Writes the accesses of a multi-threaded run as the runtime does: each thread's own
    /// chunks, a chunk whenever its buffer of `cap[t]` accesses fills, the rest at exit;
    /// `ends[t]` says whether thread `t` ended before the exit. Sequence numbers are the
    /// positions in `run`.
    fn write_threads(run: &[(u32, Access)], caps: &[usize], ends: &[bool]) -> Vec<u8> {
        let mut w = AtWriter::new(Vec::new(), &db()).unwrap();
        let mut buffers: Vec<Vec<(u64, Access)>> = vec![Vec::new(); caps.len()];
        let mut begun = vec![false; caps.len()];
        let mut number = vec![u32::MAX; caps.len()];
        let mut next = 0;
        for (seq, &(t, a)) in run.iter().enumerate() {
            let t = t as usize;
            if !begun[t] {
                begun[t] = true;
                number[t] = next;
                w.begin_thread(next, seq as u64).unwrap();
                next += 1;
            }
            buffers[t].push((seq as u64, a));
            if buffers[t].len() == caps[t] {
                w.thread_chunk(number[t], buffers[t].drain(..)).unwrap();
            }
        }
        for t in 0..caps.len() {
            if begun[t] {
                w.thread_chunk(number[t], buffers[t].drain(..)).unwrap();
                if ends[t] {
                    w.end_thread(number[t]).unwrap();
                }
            }
        }
        w.finish().unwrap()
    }

    /// A run's threads renumbered in the order they first appear (as the runtime numbers them).
    fn renumbered(run: &[(u32, Access)]) -> Vec<(u32, Access)> {
        let mut order = Vec::new();
        run.iter()
            .map(|&(t, a)| {
                let n = order.iter().position(|&o| o == t).unwrap_or_else(|| {
                    order.push(t);
                    order.len() - 1
                });
                (n as u32, a)
            })
            .collect()
    }

    fn threaded_run(
    ) -> impl proptest::strategy::Strategy<Value = (Vec<(u32, Access)>, Vec<usize>, Vec<bool>)>
    {
        use proptest::prelude::*;
        (
            proptest::collection::vec((0u32..4, 0u32..50, 0u64..64, 1u64..9), 0..200),
            proptest::collection::vec(1usize..20, 4),
            proptest::collection::vec(any::<bool>(), 4),
        )
            .prop_map(|(run, caps, ends)| {
                let run = run
                    .into_iter()
                    .map(|(t, id, addr, size)| {
                        (
                            t,
                            Access {
                                id,
                                addr: 0x1000 + addr * 8,
                                size,
                            },
                        )
                    })
                    .collect();
                (run, caps, ends)
            })
    }

    #[test]
    fn round_trip() {
        let (bytes, want) = sample();
        assert_eq!(read_all(&bytes).unwrap(), want);
    }

    /// Every proper prefix is an error (never a panic or a silent short read), and every
    /// single-byte corruption is an error or, where it only touches bits the deflate stream
    /// does not use (its last byte's padding, with some encoders), reads back the same
    /// accesses: never different ones.
    #[test]
    fn truncation_and_corruption_are_errors() {
        let (bytes, want) = sample();
        for cut in 0..bytes.len() {
            let e = read_all(&bytes[..cut]).unwrap_err().to_string();
            assert!(
                e.contains("t.at") && e.contains("byte offset"),
                "{cut}: {e}"
            );
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x41;
            if let Ok(got) = read_all(&b) {
                assert_eq!(got, want, "corruption at {i} read as other accesses");
            }
        }
    }

    proptest::proptest! {
        /// Any accesses in any chunking read back exactly (address deltas wrap both ways).
        #[test]
        fn any_chunking_round_trips(
            accesses in proptest::collection::vec((0u32..5000, proptest::num::u64::ANY, 0u64..1 << 40), 0..300),
            cuts in proptest::collection::vec(0usize..300, 0..5),
        ) {
            let accesses: Vec<Access> = accesses.into_iter().map(|(id, addr, size)| Access { id, addr, size }).collect();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(accesses.len())).collect();
            cuts.push(0);
            cuts.push(accesses.len());
            cuts.sort_unstable();
            let mut w = AtWriter::new(Vec::new(), &db()).unwrap();
            for c in cuts.windows(2) {
                w.chunk(accesses[c[0]..c[1]].iter().copied()).unwrap();
            }
            proptest::prop_assert_eq!(read_all(&w.finish().unwrap()).unwrap(), accesses);
        }
    }

    proptest::proptest! {
        /// The threads' chunks, written as each thread's buffer fills, merge back into the
        /// order the accesses ran, each with its thread.
        #[test]
        fn threads_merge_into_the_order_they_ran((run, caps, ends) in threaded_run()) {
            let (got, err) = read_threads(&write_threads(&run, &caps, &ends));
            proptest::prop_assert_eq!(err, None);
            proptest::prop_assert_eq!(got, renumbered(&run));
        }

        /// A file cut anywhere (a killed program) gives a prefix of the run's accesses — never
        /// one whose earlier accesses of another thread are missing — then an error.
        #[test]
        fn a_cut_file_gives_a_prefix_of_the_run((run, caps, ends) in threaded_run(), cut in 0.0f64..1.0) {
            let bytes = write_threads(&run, &caps, &ends);
            let cut = (bytes.len() as f64 * cut) as usize;
            let (got, err) = read_threads(&bytes[..cut]);
            proptest::prop_assert!(err.is_some());
            let want = renumbered(&run);
            proptest::prop_assert_eq!(&got[..], &want[..got.len()]);
        }
    }

    /// Two threads, by hand: the second thread's single chunk, written last, holds the
    /// accesses that ran between the first thread's.
    #[test]
    fn a_late_chunk_is_merged_in_its_place() {
        let a = |id| Access {
            id,
            addr: 8,
            size: 4,
        };
        let mut w = AtWriter::new(Vec::new(), &db()).unwrap();
        w.begin_thread(0, 0).unwrap();
        w.begin_thread(1, 1).unwrap();
        w.thread_chunk(0, [(0, a(0)), (3, a(3))].into_iter())
            .unwrap();
        w.thread_chunk(1, [(1, a(1)), (2, a(2))].into_iter())
            .unwrap();
        let (got, err) = read_threads(&w.finish().unwrap());
        assert_eq!(err, None);
        assert_eq!(got, vec![(0, a(0)), (1, a(1)), (1, a(2)), (0, a(3))]);
    }

    #[test]
    fn repeated_sequence_numbers_are_refused() {
        let a = Access {
            id: 0,
            addr: 8,
            size: 4,
        };
        let mut w = AtWriter::new(Vec::new(), &db()).unwrap();
        w.begin_thread(0, 0).unwrap();
        w.begin_thread(1, 0).unwrap();
        w.thread_chunk(0, [(5, a)].into_iter()).unwrap();
        w.thread_chunk(1, [(5, a)].into_iter()).unwrap();
        let (_, err) = read_threads(&w.finish().unwrap());
        assert!(err
            .unwrap()
            .contains("sequence number 5 of thread 1 comes twice"));
    }

    /// The database with `n` instructions, the first ones those of [`db`].
    fn db_of(n: usize) -> Vec<u8> {
        let mut db: MemoryDb = postcard::from_bytes(&db()).unwrap();
        let first = db.instructions[0].clone();
        db.instructions.resize(n, MemInstr { line: 9, ..first });
        postcard::to_allocvec(&db).unwrap()
    }

    /// A library loaded after the first chunk: its instructions' accesses follow the `'D'`
    /// record, and the reader gives the newest database with every access.
    fn with_grown_db() -> (Vec<u8>, Vec<Access>) {
        let a = |id| Access {
            id,
            addr: 64 * u64::from(id),
            size: 4,
        };
        let mut w = AtWriter::new(Vec::new(), &db()).unwrap();
        w.chunk([a(0), a(0)].into_iter()).unwrap();
        w.grown_db(&db_of(3)).unwrap();
        w.chunk([a(2), a(0), a(1)].into_iter()).unwrap();
        (w.finish().unwrap(), vec![a(0), a(0), a(2), a(0), a(1)])
    }

    #[test]
    fn a_grown_database_describes_every_access() {
        let (bytes, want) = with_grown_db();
        assert_eq!(read_all(&bytes).unwrap(), want);
        let r = AtReader::new(std::io::Cursor::new(&bytes), "t.at").unwrap();
        assert_eq!(r.db().instructions.len(), 3);
        assert_eq!(r.db().instructions[2].line, 9);
    }

    /// A cut or corrupted `'D'` record is an error naming it and its offset, never a panic;
    /// its length field is checked before it sizes anything.
    #[test]
    fn a_bad_grown_database_is_named() {
        let (bytes, _) = with_grown_db();
        let len = db_of(3).len();
        let tag = |i: usize| bytes[i] == b'D' && bytes[i + 1..i + 5] == (len as u32).to_le_bytes();
        let d = (20 + db().len()..bytes.len()).find(|&i| tag(i)).unwrap();
        for cut in d + 1..d + 5 + len + 4 {
            let e = read_all(&bytes[..cut]).unwrap_err().to_string();
            assert!(e.contains("grown memory database"), "{cut}: {e}");
        }
        let mut b = bytes.clone();
        b[d + 5 + len / 2] ^= 0x41;
        let e = read_all(&b).unwrap_err().to_string();
        let want = format!(
            "grown memory database (a library loaded while it ran) checksum mismatch at byte \
             offset {}",
            d + 5
        );
        assert!(e.contains(&want), "{e}");
        let mut b = bytes.clone();
        b[d + 1..d + 5].copy_from_slice(&u32::MAX.to_le_bytes());
        let e = read_all(&b).unwrap_err().to_string();
        assert!(e.contains("length 4294967295 exceeds the limit"), "{e}");
        // A database that loses instructions is not the process's grown one.
        let mut w = AtWriter::new(Vec::new(), &db_of(2)).unwrap();
        w.grown_db(&db()).unwrap();
        let e = read_all(&w.finish().unwrap()).unwrap_err().to_string();
        assert!(e.contains("does not keep the 2 instructions"), "{e}");
    }

    /// Version 2 files (no `'D'` records) still read; an unknown version asks for a new
    /// recording.
    #[test]
    fn older_files_read_newer_ones_are_refused() {
        let (mut bytes, want) = sample();
        bytes[8..12].copy_from_slice(&2u32.to_le_bytes());
        assert_eq!(read_all(&bytes).unwrap(), want);
        let (mut grown, _) = with_grown_db();
        grown[8..12].copy_from_slice(&2u32.to_le_bytes());
        let e = read_all(&grown).unwrap_err().to_string();
        assert!(e.contains("unknown record tag 0x44"), "{e}");
        bytes[8..12].copy_from_slice(&4u32.to_le_bytes());
        let e = read_all(&bytes).unwrap_err().to_string();
        assert!(
            e.contains("version 4") && e.contains("record it again"),
            "{e}"
        );
    }

    #[test]
    fn abandoned_recording_is_reported() {
        let mut w = AtWriter::new(Vec::new(), &db()).unwrap();
        w.chunk(
            [Access {
                id: 0,
                addr: 1,
                size: 1,
            }]
            .into_iter(),
        )
        .unwrap();
        let bytes = w.abandon("thread 2 accessed memory").unwrap();
        let e = read_all(&bytes).unwrap_err().to_string();
        assert!(e.contains("abandoned: thread 2"), "{e}");
    }
}
