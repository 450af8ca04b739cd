//! Online compression: the program's buffers are handed to a background thread that feeds them
//! to SEQUITUR (Larus §3.1: the algorithm is online and linear, which is what makes compressing
//! during the run possible) with one stream per program thread, so only the `.wpp` grammar ever
//! reaches the disk.
//!
//! # Flow and memory
//!
//! Full thread buffers reach the compressor through [`crate::handoff::Pipe`] (pooled copies on a
//! bounded queue of [`QUEUE_BUFFERS`] buffers). The compressor interns each event in the
//! [`Alphabet`] and pushes terminals with `Sequitur::push_slice`.
//!
//! # When compression falls behind
//!
//! The queue is bounded, so when the program produces events faster than SEQUITUR consumes
//! them (typically: block traces of tight loops produce 10^8 events/s, SEQUITUR does ~10^7), a
//! flushing thread *blocks* until the compressor has taken a buffer. The program then runs at
//! the compressor's pace — slower, but with memory bounded by `QUEUE_BUFFERS` × 128 KiB plus the
//! grammar — and no event is dropped. Use `WPP_RAW=1` to record a raw trace at full speed and
//! compress it afterwards with `wpp compress`.
//!
//! Limits: the run's length is unbounded, but the grammar SEQUITUR builds is capped at
//! 2^31 − 2^22 symbols; past that the rest of the run is not recorded and the summary says so
//! (record raw for such runs). The `.wpp` is written at exit, so a `SIGKILL`ed run leaves
//! nothing (raw traces survive it).

use crate::abi::{self, EmbeddedProgram};
use crate::handoff::{Inbox, Pipe};
use crate::sink::{output_path, SinkError};
use std::path::PathBuf;
use wpp_grammar::file::WppFile;
use wpp_grammar::sequitur::{Sequitur, StreamId, Variant};
use wpp_grammar::Algorithm;
use wpp_trace::{Alphabet, Terminal, ThreadId};

/// Buffers in flight between the program and the compressor.
pub const QUEUE_BUFFERS: usize = 64;

pub(crate) struct Outcome {
    file: Result<WppFile, String>,
    events: u64,
    dropped: u64,
}

/// The online-compression output.
pub struct OnlineSink {
    path: PathBuf,
    pub(crate) pipe: Pipe<Outcome>,
}

impl OnlineSink {
    /// Starts the compressor thread.
    pub fn start(program: EmbeddedProgram) -> Result<OnlineSink, SinkError> {
        let path = output_path("wpp");
        let pipe = Pipe::start("wpp-sequitur", QUEUE_BUFFERS, move |inbox| {
            compress(program, inbox)
        })
        .map_err(|e| SinkError::Wpp {
            path: path.display().to_string(),
            message: format!("cannot start the compressor thread: {e}"),
        })?;
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
        file.write(&self.path).map_err(|e| SinkError::Wpp {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let dropped = if outcome.dropped > 0 {
            format!(
                " ({} events past SEQUITUR's grammar limit were NOT recorded)",
                outcome.dropped
            )
        } else {
            String::new()
        };
        Ok(format!(
            "compressed {} events into {} rules, {} symbols, {} threads: {path}{dropped}",
            outcome.events,
            file.grammar.num_rules(),
            file.grammar.num_symbols(),
            file.grammar.starts().len()
        ))
    }
}

fn compress(program: EmbeddedProgram, inbox: Inbox) -> Outcome {
    let mut seq = Sequitur::new(Variant::Sequitur);
    let mut alphabet = Alphabet::new();
    let mut streams: Vec<Option<StreamId>> = Vec::new();
    let mut terminals: Vec<Terminal> = Vec::with_capacity(abi::BUF_CAP as usize);
    // Direct map for the common small event words; the alphabet's hash map for the rest.
    let mut fast: Vec<u32> = Vec::new();
    let mut events = 0u64;
    let mut dropped = 0u64;
    let mut error: Option<String> = None;
    let intern = |alphabet: &mut Alphabet, fast: &mut Vec<u32>, w: u64| -> Option<Terminal> {
        if let Some(&t) = fast.get(w as usize) {
            if t != u32::MAX {
                return Some(Terminal(t));
            }
        }
        let e = abi::decode_word(w)?;
        let t = alphabet.intern(e).ok()?;
        if w < (1 << 22) {
            if fast.len() <= w as usize {
                fast.resize(w as usize + 1, u32::MAX);
            }
            fast[w as usize] = t.0;
        }
        Some(t)
    };
    while let Some(msg) = inbox.recv() {
        let t = msg.thread as usize;
        if streams.len() <= t {
            streams.resize(t + 1, None);
        }
        let stream = match streams[t] {
            Some(s) => s,
            None => match seq.add_stream(ThreadId(msg.thread)) {
                Ok(s) => {
                    streams[t] = Some(s);
                    s
                }
                Err(e) => {
                    error.get_or_insert(e.to_string());
                    continue;
                }
            },
        };
        terminals.clear();
        for &w in &msg.words {
            if let Some(term) = intern(&mut alphabet, &mut fast, w) {
                terminals.push(term);
            }
        }
        for _ in 0..msg.open_frames {
            if let Some(term) = intern(&mut alphabet, &mut fast, abi::LEAVE_WORD) {
                terminals.push(term);
            }
        }
        if dropped > 0 || seq.push_slice(stream, &terminals).is_err() {
            // Past the grammar limit: count what is lost.
            dropped += terminals.len() as u64;
        } else {
            events += terminals.len() as u64;
        }
        inbox.recycle(msg.words);
    }
    if let Some(e) = error {
        return Outcome {
            file: Err(e),
            events,
            dropped,
        };
    }
    let grammar = seq.finish();
    let file = WppFile {
        program: program.program,
        alphabet,
        grammar,
        algorithm: Algorithm::Sequitur,
        events,
        extra: Vec::new(),
    };
    Outcome {
        file: Ok(file),
        events,
        dropped,
    }
}
