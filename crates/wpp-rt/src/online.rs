//! Online compression: the program's buffers are handed to a background thread that compresses
//! them into a grammar while the program runs (Larus §3.1: an online, linear compressor is what
//! makes this possible), one stream per program thread, so only the `.wpp` ever reaches the
//! disk.
//!
//! # The compressor
//!
//! `WPP_COMPRESS` chooses it (the names of `wpp compress --algorithm`):
//!
//! * `phrase` (default): content-defined phrases, deduplicated, then SEQUITUR over phrase ids
//!   and new phrases ([`wpp_grammar::phrase`]). Exact, queryable, several times faster than
//!   SEQUITUR on repetitive traces, with a somewhat larger grammar; the `.wpp` records
//!   `phrase` as its algorithm, which keeps rule utility but not digram uniqueness.
//! * `sequitur`: the paper's pure online SEQUITUR (Larus §3.1); `sequitur1`: SEQUITUR(1).
//! * `frequency`: Tallam–Gupta's offline compressor; it buffers every event in memory
//!   (1–4 bytes each) and compresses at exit.
//!
//! An unknown name is an error at the first event (the run is not recorded, and says why).
//! The per-thread routing and interning are [`TraceCompressor`]'s, the same code as
//! `wpp compress`: each buffer is decoded to events and handed over with
//! [`TraceCompressor::push_thread`].
//!
//! # Flow and memory
//!
//! Full thread buffers reach the compressor through [`crate::handoff::Pipe`] (pooled copies on a
//! bounded queue of [`QUEUE_BUFFERS`] buffers).
//!
//! # When compression falls behind
//!
//! The queue is bounded, so when the program produces events faster than the compressor
//! consumes them (block traces of tight loops produce 10^8–10^9 events/s; SEQUITUR takes
//! ~10^7, the phrase compressor a few times more), a flushing thread *blocks* until the
//! compressor has taken a buffer. The program then runs at the compressor's pace — slower, but
//! with memory bounded by `QUEUE_BUFFERS` × 128 KiB plus the compressor's tables — and no
//! event is dropped. The tables grow with the grammar (the phrase compressor's dictionary holds
//! each distinct phrase once), not with the run's length. Use `WPP_RAW=1` to record a raw trace
//! at full speed and compress it afterwards with `wpp compress`.
//!
//! Limits: the run's length is unbounded, but a grammar is capped at 2^31 − 2^22 symbols (and
//! the phrase compressor at 2^28 distinct phrases); past that the rest of the run is not
//! recorded and the summary says so (record raw for such runs). The `.wpp` is written at exit,
//! so a `SIGKILL`ed run leaves nothing (raw traces survive it).

use crate::abi::{self, EmbeddedProgram};
use crate::handoff::{Inbox, Pipe};
use crate::sink::{output_path, SinkError};
use std::path::PathBuf;
use wpp_grammar::file::WppFile;
use wpp_grammar::{Algorithm, TraceCompressor};
use wpp_trace::{Event, ThreadId};

/// Buffers in flight between the program and the compressor.
pub const QUEUE_BUFFERS: usize = 64;

/// The environment variable that chooses the compressor.
pub const COMPRESS_VAR: &str = "WPP_COMPRESS";

/// The zstd level of the `.wpp` written at exit: the program waits for the write, and level 19
/// (`wpp compress`'s) took ~40% of the phrase compressor's time on a zlib path trace, level 3
/// a small part of that for a file ~5% larger (`wpp compress --zstd-level` rewrites it).
pub const ZSTD_LEVEL: i32 = 3;

/// The compressor used when [`COMPRESS_VAR`] is unset or empty.
pub const DEFAULT_ALGORITHM: Algorithm = Algorithm::Phrase;

pub(crate) struct Outcome {
    file: Result<WppFile, String>,
    events: u64,
    dropped: u64,
    /// Why recording stopped early, if it did.
    stopped: Option<String>,
}

/// The online-compression output.
pub struct OnlineSink {
    path: PathBuf,
    pub(crate) pipe: Pipe<Outcome>,
}

/// The compressor [`COMPRESS_VAR`] names.
fn chosen_algorithm() -> Result<Algorithm, String> {
    match std::env::var(COMPRESS_VAR) {
        Ok(v) if !v.is_empty() => v.parse().map_err(|e| format!("{COMPRESS_VAR}={v}: {e}")),
        _ => Ok(DEFAULT_ALGORITHM),
    }
}

impl OnlineSink {
    /// Starts the compressor thread.
    pub fn start(program: EmbeddedProgram) -> Result<OnlineSink, SinkError> {
        let path = output_path("wpp");
        let error = |message| SinkError::Wpp {
            path: path.display().to_string(),
            message,
        };
        let algorithm = chosen_algorithm().map_err(error)?;
        let pipe = Pipe::start("wpp-compress", QUEUE_BUFFERS, move |inbox| {
            compress(program, algorithm, inbox)
        })
        .map_err(|e| error(format!("cannot start the compressor thread: {e}")))?;
        Ok(OnlineSink { path, pipe })
    }

    /// Hands a buffer to the compressor (blocking when [`QUEUE_BUFFERS`] are in flight).
    pub fn consume(&mut self, t: u32, words: &[u64], open_frames: u32) {
        self.pipe.send(t, words, open_frames);
    }

    /// Waits for the compressor, writes the `.wpp`; returns a summary.
    pub fn finish(&mut self) -> Result<String, SinkError> {
        let path = self.path.display().to_string();
        let outcome = self.pipe.finish().ok_or_else(|| SinkError::Wpp {
            path: path.clone(),
            message: "the compressor thread did not finish (panicked or already finished)".into(),
        })?;
        let file = outcome.file.map_err(|message| SinkError::Wpp {
            path: path.clone(),
            message,
        })?;
        file.write_with_level(&self.path, ZSTD_LEVEL)
            .map_err(|e| SinkError::Wpp {
                path: path.clone(),
                message: e.to_string(),
            })?;
        let dropped = match outcome.stopped {
            Some(why) => format!(
                " ({} events after `{why}` were NOT recorded)",
                outcome.dropped
            ),
            None => String::new(),
        };
        Ok(format!(
            "compressed {} events with {} into {} rules, {} symbols, {} threads: {path}{dropped}",
            outcome.events,
            file.algorithm,
            file.grammar.num_rules(),
            file.grammar.num_symbols(),
            file.grammar.starts().len()
        ))
    }
}

/// The compressor thread: decodes each buffer, appends the `Leave`s of open frames, and hands
/// the events to the [`TraceCompressor`] as its thread's. After the compressor's first error
/// (a grammar limit) the rest of the run is counted, not recorded.
fn compress(program: EmbeddedProgram, algorithm: Algorithm, inbox: Inbox) -> Outcome {
    let mut c = TraceCompressor::new(algorithm, None, program.program);
    let mut events: Vec<Event> = Vec::with_capacity(abi::BUF_CAP as usize);
    let mut dropped = 0u64;
    let mut stopped: Option<String> = None;
    while let Some(msg) = inbox.recv() {
        events.clear();
        events.extend(msg.words.iter().filter_map(|&w| abi::decode_word(w)));
        events.extend((0..msg.open_frames).map(|_| Event::Leave));
        inbox.recycle(msg.words);
        if stopped.is_some() {
            dropped += events.len() as u64;
        } else if let Err(e) = c.push_thread(ThreadId(msg.thread), &events) {
            stopped = Some(e.to_string());
            dropped += events.len() as u64;
        }
    }
    let events = c.events();
    Outcome {
        file: c.finish().map_err(|e| e.to_string()),
        events,
        dropped,
        stopped,
    }
}
