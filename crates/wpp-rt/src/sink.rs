//! Where consumed buffers go: a raw chunked trace ([`RawSink`], `WPP_RAW=1`) or, by default, a
//! `.wpp` grammar built while the program runs ([`crate::online::OnlineSink`]).
//!
//! The raw sink writes the binary chunked trace of `wpp_trace::file::binary`: the program
//! database in the header, then one chunk per consumed buffer, each starting with `Thread(t)`
//! when the thread differs from the previous chunk's. Chunks go to the file with unbuffered
//! `write(2)` as soon as they are encoded, so a process killed by `SIGKILL` leaves every whole
//! chunk readable (the reader reports the missing end marker as a truncation).
//!
//! Encoding reuses one payload buffer for the life of the process: no allocation per event or
//! per buffer once it has grown to its working size.

use crate::abi::{self, EmbeddedProgram};
use crate::online::OnlineSink;
use std::fs::File;
use std::path::PathBuf;
use wpp_trace::file::{encode_event, TraceError, TraceWriter};
use wpp_trace::wire::write_varint;
use wpp_trace::{Event, ThreadId};

/// Chunks are cut once their payload passes this many bytes (only reached when marking very
/// deep stacks: a full buffer encodes to at most ~100 KiB).
const MAX_PAYLOAD: usize = 1 << 20;

/// The output of a recording.
pub enum Sink {
    /// A raw chunked trace.
    Raw(RawSink),
    /// Online SEQUITUR compression into a `.wpp`.
    Online(OnlineSink),
}

impl Sink {
    /// Opens the output chosen by the environment (`WPP_RAW=1`: raw trace; else `.wpp`).
    pub fn open(program: EmbeddedProgram) -> Result<Sink, SinkError> {
        let raw = std::env::var("WPP_RAW")
            .map(|v| v != "0" && !v.is_empty())
            .unwrap_or(false);
        if raw {
            RawSink::open(&program).map(Sink::Raw)
        } else {
            Ok(Sink::Online(OnlineSink::start(program)))
        }
    }

    /// Consumes event words of thread `t`, then `open_frames` `Leave`s marking frames still
    /// open (at exit or thread end).
    pub fn consume(&mut self, t: u32, words: &[u64], open_frames: u32) {
        match self {
            Sink::Raw(s) => s.consume(t, words, open_frames),
            Sink::Online(s) => s.consume(t, words, open_frames),
        }
    }

    /// Finishes the output; returns a one-line summary.
    pub fn finish(&mut self) -> Result<String, SinkError> {
        match self {
            Sink::Raw(s) => s.finish(),
            Sink::Online(s) => s.finish(),
        }
    }
}

/// Errors of the output side.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SinkError {
    /// The output file could not be created.
    #[error("cannot create {path}: {source}")]
    Create {
        /// The path.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Compressing or writing the `.wpp` failed.
    #[error("writing {path}: {message}")]
    Wpp {
        /// The path.
        path: String,
        /// What failed.
        message: String,
    },
    /// Writing the trace failed.
    #[error("writing {path}: {source}")]
    Trace {
        /// The path.
        path: String,
        /// The cause.
        source: TraceError,
    },
}

/// The raw chunked-trace output.
pub struct RawSink {
    path: PathBuf,
    writer: Option<TraceWriter<File>>,
    payload: Vec<u8>,
    count: u32,
    last_thread: Option<u32>,
    bad_words: u64,
    error: Option<TraceError>,
}

/// The output path: `WPP_OUT` with `%p` replaced by the process id, or `PROGRAM.PID.trace`.
pub fn output_path(extension: &str) -> PathBuf {
    let pid = std::process::id();
    if let Some(p) = std::env::var_os("WPP_OUT") {
        let p = p.to_string_lossy().replace("%p", &pid.to_string());
        return PathBuf::from(p);
    }
    let program = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "program".into());
    PathBuf::from(format!("{program}.{pid}.{extension}"))
}

impl RawSink {
    /// Creates the raw trace output for a program.
    pub fn open(program: &EmbeddedProgram) -> Result<RawSink, SinkError> {
        let path = output_path("trace");
        let file = File::create(&path).map_err(|source| SinkError::Create {
            path: path.display().to_string(),
            source,
        })?;
        let writer =
            TraceWriter::new(file, &program.program).map_err(|source| SinkError::Trace {
                path: path.display().to_string(),
                source,
            })?;
        Ok(RawSink {
            path,
            writer: Some(writer),
            payload: Vec::with_capacity(128 << 10),
            count: 0,
            last_thread: None,
            bad_words: 0,
            error: None,
        })
    }

    fn push(&mut self, e: Event) {
        encode_event(&mut self.payload, e);
        self.count += 1;
        if self.payload.len() >= MAX_PAYLOAD {
            self.write_chunk();
        }
    }

    fn write_chunk(&mut self) {
        if self.count > 0 {
            if let Some(w) = self.writer.as_mut() {
                if let Err(e) = w.write_chunk(&self.payload, self.count) {
                    self.error.get_or_insert(e);
                }
            }
        }
        self.payload.clear();
        self.count = 0;
    }

    /// Consumes event words of thread `t`, then `open_frames` `Leave`s marking frames still
    /// open (at exit or thread end).
    pub fn consume(&mut self, t: u32, words: &[u64], open_frames: u32) {
        if words.is_empty() && open_frames == 0 {
            return;
        }
        if self.last_thread != Some(t) {
            self.push(Event::Thread(ThreadId(t)));
            self.last_thread = Some(t);
        }
        // Event words are the format's varints (see `abi`): encode them directly, checking
        // only the tag.
        for &w in words {
            if w & ((1 << abi::TAG_BITS) - 1) <= abi::TAG_PATH {
                write_varint(&mut self.payload, w);
                self.count += 1;
            } else {
                self.bad_words += 1;
            }
        }
        if self.payload.len() >= MAX_PAYLOAD {
            self.write_chunk();
        }
        for _ in 0..open_frames {
            self.push(Event::Leave);
        }
        self.write_chunk();
    }

    /// Writes the end marker; returns a one-line summary.
    pub fn finish(&mut self) -> Result<String, SinkError> {
        self.write_chunk();
        let path = self.path.display().to_string();
        if let Some(e) = self.error.take() {
            return Err(SinkError::Trace { path, source: e });
        }
        let Some(w) = self.writer.take() else {
            return Ok(format!("{path} already finished"));
        };
        let events = w.events();
        let bytes = w.bytes_written();
        w.finish().map_err(|source| SinkError::Trace {
            path: path.clone(),
            source,
        })?;
        let bad = if self.bad_words > 0 {
            format!(" ({} undecodable words dropped)", self.bad_words)
        } else {
            String::new()
        };
        Ok(format!(
            "wrote {events} events ({bytes} bytes) to {path}{bad}"
        ))
    }
}
