//! The address trace (AT) file: what a `wpp cc --mode trace-addr` program writes beside its
//! block trace (a separate file, so the block trace, every compressor and every query are
//! unchanged, and the AT can be dropped or kept independently; the paper's baseline is exactly
//! "CF + AT", Tallam and Gupta §4, Table IV).
//!
//! # Layout (version 1, integers little-endian)
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `WPP-AT\r\n` |
//! | 4 | version (1) |
//! | 4 | `n`: length of the memory database |
//! | `n` | the [`MemoryDb`], postcard |
//! | 4 | CRC-32 of those `n` bytes |
//! | … | chunks, then one end record |
//!
//! A chunk is `'C'`, then `u32` sequence number (0, 1, …), `u32` record count, `u32` length of
//! the decoded payload, `u32` length of the stored payload, `u32` CRC-32 of the decoded payload,
//! then the stored payload: the decoded payload compressed with raw deflate (RFC 1951, level 1).
//! Deflate rather than zstd because the runtime compresses on the program's own thread: the
//! pure-Rust encoder (`miniz_oxide`) allocates from the runtime's private heap, while zstd's C
//! context would allocate from the program's `malloc` and move the program's heap blocks. The decoded payload is
//! one record per access, in execution order: varint `id`, zigzag varint of `address −
//! previous address` (the previous address starts at 0 in each chunk), varint `size`.
//!
//! The end record is `'E'`, `u32` chunk count, `u64` record count. A recording the runtime
//! had to abandon (another thread accessed memory: `trace-addr` records one thread) ends with
//! `'X'`, `u32` length and a UTF-8 message instead, which the reader reports as an error.
//! A file without an end record (the program was killed) is reported as truncated.
//!
//! Readers check every length against [`MAX_CHUNK_BYTES`] before reading, allocate only as
//! data arrives, and name the file and byte offset of whatever is wrong.

use crate::memdb::{MemoryDb, MEMORY_DB_VERSION};
use std::io::{Read, Write};
use std::path::Path;
use wpp_trace::wire::{write_varint, Reader};

/// The file's first 8 bytes.
pub const MAGIC: &[u8; 8] = b"WPP-AT\r\n";
/// The layout version this crate reads and writes.
pub const VERSION: u32 = 1;
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

/// Encodes chunks of accesses (the runtime's side).
pub struct AtWriter<W: Write> {
    out: W,
    chunks: u32,
    records: u64,
    raw: Vec<u8>,
    stored: Vec<u8>,
}

impl<W: Write> AtWriter<W> {
    /// Writes the header with the postcard-encoded memory database `db`.
    pub fn new(mut out: W, db: &[u8]) -> std::io::Result<Self> {
        let mut h = Vec::with_capacity(db.len() + 20);
        h.extend_from_slice(MAGIC);
        h.extend_from_slice(&VERSION.to_le_bytes());
        h.extend_from_slice(&(db.len() as u32).to_le_bytes());
        h.extend_from_slice(db);
        h.extend_from_slice(&crc32fast::hash(db).to_le_bytes());
        out.write_all(&h)?;
        Ok(AtWriter {
            out,
            chunks: 0,
            records: 0,
            raw: Vec::new(),
            stored: Vec::new(),
        })
    }

    /// Appends one chunk holding `accesses`.
    pub fn chunk(&mut self, accesses: impl Iterator<Item = Access>) -> std::io::Result<()> {
        self.raw.clear();
        let mut prev = 0u64;
        let mut n = 0u32;
        for a in accesses {
            write_varint(&mut self.raw, u64::from(a.id));
            let delta = a.addr.wrapping_sub(prev) as i64;
            write_varint(&mut self.raw, ((delta << 1) ^ (delta >> 63)) as u64);
            write_varint(&mut self.raw, a.size);
            prev = a.addr;
            n += 1;
        }
        if n == 0 {
            return Ok(());
        }
        let mut z = flate2::write::DeflateEncoder::new(
            std::mem::take(&mut self.stored),
            flate2::Compression::fast(),
        );
        z.write_all(&self.raw)?;
        let stored = z.finish()?;
        let mut h = Vec::with_capacity(21);
        h.push(b'C');
        for v in [self.chunks, n, self.raw.len() as u32, stored.len() as u32] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        h.extend_from_slice(&crc32fast::hash(&self.raw).to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(&stored)?;
        self.stored = stored;
        self.stored.clear();
        self.chunks += 1;
        self.records += u64::from(n);
        Ok(())
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

/// Reads an AT file chunk by chunk.
pub struct AtReader<R: Read> {
    input: R,
    path: String,
    offset: u64,
    db: MemoryDb,
    chunks: u32,
    records: u64,
    done: bool,
}

impl AtReader<std::io::BufReader<std::fs::File>> {
    /// Opens an AT file and reads its header.
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

impl<R: Read> AtReader<R> {
    /// Reads the header from `input`; `path` names it in errors.
    pub fn new(input: R, path: &str) -> Result<Self, AtError> {
        let mut r = AtReader {
            input,
            path: path.to_string(),
            offset: 0,
            db: MemoryDb::default(),
            chunks: 0,
            records: 0,
            done: false,
        };
        let magic = r.bytes(8, "magic")?;
        if magic != MAGIC {
            return Err(r.err(0, "not an address trace (bad magic)".into()));
        }
        let version = r.u32("version")?;
        if version != VERSION {
            return Err(r.err(8, format!("version {version} (this wpp reads {VERSION})")));
        }
        let len = r.u32_max("memory database length", MAX_CHUNK_BYTES)?;
        let at = r.offset;
        let db = r.bytes(len as usize, "memory database")?;
        let crc = r.u32("memory database checksum")?;
        if crc != crc32fast::hash(&db) {
            return Err(r.err(at, "memory database checksum mismatch".into()));
        }
        r.db = postcard::from_bytes(&db)
            .map_err(|e| r.err(at, format!("cannot decode the memory database: {e}")))?;
        if r.db.version != MEMORY_DB_VERSION {
            let v = r.db.version;
            return Err(r.err(
                at,
                format!("memory database version {v} (this wpp reads {MEMORY_DB_VERSION})"),
            ));
        }
        Ok(r)
    }

    /// The memory instructions.
    pub fn db(&self) -> &MemoryDb {
        &self.db
    }

    fn err(&self, offset: u64, message: String) -> AtError {
        AtError::Format {
            path: self.path.clone(),
            offset,
            message,
        }
    }

    /// Reads `n` bytes, growing the buffer only as data arrives.
    fn bytes(&mut self, n: usize, what: &str) -> Result<Vec<u8>, AtError> {
        let mut v = Vec::new();
        let got = (&mut self.input)
            .take(n as u64)
            .read_to_end(&mut v)
            .map_err(|source| AtError::Io {
                path: self.path.clone(),
                source,
            })?;
        if got < n {
            return Err(self.err(
                self.offset + got as u64,
                format!("truncated while reading the {what}"),
            ));
        }
        self.offset += n as u64;
        Ok(v)
    }

    fn u32(&mut self, what: &str) -> Result<u32, AtError> {
        let b = self.bytes(4, what)?;
        Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }

    fn u32_max(&mut self, what: &str, max: u32) -> Result<u32, AtError> {
        let at = self.offset;
        let v = self.u32(what)?;
        if v > max {
            return Err(self.err(at, format!("{what} {v} exceeds the limit {max}")));
        }
        Ok(v)
    }

    /// The next chunk's accesses; `None` after the end record.
    pub fn next_chunk(&mut self) -> Result<Option<Vec<Access>>, AtError> {
        if self.done {
            return Ok(None);
        }
        let at = self.offset;
        let tag = self.bytes(
            1,
            "chunk tag (the file ends without an end record: the program was killed?)",
        )?[0];
        match tag {
            b'C' => self.chunk(at).map(Some),
            b'E' => {
                let chunks = self.u32("end record")?;
                let b = self.bytes(8, "end record")?;
                let records = u64::from_le_bytes(b.try_into().expect("8 bytes"));
                if (chunks, records) != (self.chunks, self.records) {
                    return Err(self.err(at, format!(
                        "end record counts {chunks} chunks and {records} accesses, the file holds {} and {}",
                        self.chunks, self.records
                    )));
                }
                self.done = true;
                Ok(None)
            }
            b'X' => {
                let len = self.u32_max("abandon message length", 4096)?;
                let msg = self.bytes(len as usize, "abandon message")?;
                Err(self.err(
                    at,
                    format!(
                        "the recording was abandoned: {}",
                        String::from_utf8_lossy(&msg)
                    ),
                ))
            }
            t => Err(self.err(at, format!("unknown record tag {t:#04x}"))),
        }
    }

    fn chunk(&mut self, at: u64) -> Result<Vec<Access>, AtError> {
        let seq = self.u32("chunk sequence number")?;
        if seq != self.chunks {
            return Err(self.err(
                at,
                format!("chunk {seq} where chunk {} was expected", self.chunks),
            ));
        }
        let n = self.u32("chunk record count")?;
        let raw_len = self.u32_max("chunk payload length", MAX_CHUNK_BYTES)?;
        let stored_len = self.u32_max("chunk stored length", MAX_CHUNK_BYTES)?;
        let crc = self.u32("chunk checksum")?;
        let payload_at = self.offset;
        let stored = self.bytes(stored_len as usize, "chunk payload")?;
        let mut raw = Vec::new();
        flate2::read::DeflateDecoder::new(&stored[..])
            .take(u64::from(raw_len) + 1)
            .read_to_end(&mut raw)
            .map_err(|e| self.err(payload_at, format!("chunk {seq}: cannot decompress: {e}")))?;
        if raw.len() != raw_len as usize || crc32fast::hash(&raw) != crc {
            return Err(self.err(
                payload_at,
                format!("chunk {seq}: payload length or checksum mismatch"),
            ));
        }
        let accesses = decode_records(&raw, n, payload_at)
            .map_err(|m| self.err(payload_at, format!("chunk {seq}: {m}")))?;
        self.chunks += 1;
        self.records += u64::from(n);
        Ok(accesses)
    }
}

/// Decodes a chunk's payload of `n` records.
fn decode_records(raw: &[u8], n: u32, base: u64) -> Result<Vec<Access>, String> {
    // Each record takes at least 3 bytes, so `n` is checked before it sizes anything.
    if u64::from(n) * 3 > raw.len() as u64 {
        return Err(format!("{n} records cannot fit {} bytes", raw.len()));
    }
    let mut r = Reader::new(raw, base);
    let mut out = Vec::with_capacity(n as usize);
    let mut prev = 0u64;
    for _ in 0..n {
        let id = r
            .varint_max(u64::from(u32::MAX), "access id")
            .map_err(|e| e.to_string())?;
        let z = r.varint("access address").map_err(|e| e.to_string())?;
        let delta = ((z >> 1) as i64) ^ -((z & 1) as i64);
        let size = r.varint("access size").map_err(|e| e.to_string())?;
        prev = prev.wrapping_add(delta as u64);
        out.push(Access {
            id: id as u32,
            addr: prev,
            size,
        });
    }
    if !r.is_empty() {
        return Err(format!("{} bytes after the last record", r.remaining()));
    }
    Ok(out)
}

impl<R: Read> Iterator for AtReader<R> {
    type Item = Result<Vec<Access>, AtError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_chunk().transpose()
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
                kind: AccessKind::Store,
                what: "store i32".into(),
            }],
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
        let r = AtReader::new(bytes, "t.at")?;
        let mut v = Vec::new();
        for c in r {
            v.extend(c?);
        }
        Ok(v)
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
