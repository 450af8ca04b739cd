//! The bounded-buffer form of most-frequent-digram-first compression (Tallam–Gupta §4.2: "the
//! offline algorithm could be made online by buffering the input").
//!
//! Events are buffered in windows of `N`. Each full window is compressed in two phases by the
//! same engine as the offline form:
//!
//! 1. **Re-parse with the grammar so far.** Every existing rule whose digram occurs in the
//!    window is applied, in rule-creation order (so a rule's parts are formed before it), each
//!    to all its non-overlapping occurrences — even a single one, since reusing a rule costs
//!    nothing. Applying rule `k` creates digrams containing `Rₖ`, which only later rules can
//!    match, so a min-heap of rule ids drives the phase and never goes back.
//! 2. **Re-Pair on the rest**, creating new rules while some digram occurs twice in the window.
//!
//! The window's remaining sequence is appended to its stream's start sequence, and the window's
//! arena is freed. Streams (threads) may be fed interleaved, with a window buffer each. When
//! every stream is in, the start sequences (terminals and rule references) go through the same
//! two phases once more, which removes the digrams repeated across window boundaries, and the
//! output stage (inlining, then re-checking digram uniqueness) is the offline one, so the
//! grammar has the same properties. Memory is one window's arena (12 bytes per event) plus a
//! window buffer per stream (4 bytes per event) plus the grammar: the binary rules, a
//! digram → rule dictionary, and the start sequences (12 bytes per symbol in the final pass).
//!
//! Small windows cost compression: a digram frequent in the whole trace but rare in each window
//! is replaced late or only by the final pass, after the window's own choices have broken it
//! up. Grammar symbols on the synthetic 10^7-event traces of `benches/repair.rs` (seed 1):
//!
//! | window      | blocks  | paths   | peak heap (blocks) |
//! |-------------|---------|---------|--------------------|
//! | 10^3        | 103.8 k | 179.8 k | 10 MB              |
//! | 10^4        |  87.3 k | 165.8 k |  9 MB              |
//! | 10^5        |  84.2 k | 162.4 k |  9 MB              |
//! | 10^6        |  83.6 k | 161.3 k | 17 MB              |
//! | offline     |  82.2 k | 158.2 k | 125 MB             |
//! | SEQUITUR    | 109.0 k | 192.7 k |  4 MB              |
//!
//! So from about 10^4 events per window the loss against offline is about 6 % or less, at a tenth of
//! the memory.
//!
//! On real recordings (40 MB prefixes, `bench/compressors.sh --window N`) it depends on how
//! repetitive the trace is. zlib's path trace (18.6 M events, high entropy): 1.271 M symbols at
//! 10^4, 1.245 M at 10^5, 1.209 M at 10^6, against 1.221 M offline (a window of 10^6 is 1 %
//! *smaller*: local frequencies happen to suit it) and 1.374 M for SEQUITUR; peak heap
//! 4.8 B/event, mostly the growing grammar. Lua's block trace (23.9 M events, 7.3 k symbols
//! offline): 12.2 k at 10^4, 8.6 k at 10^5, 7.7 k at 10^6 (SEQUITUR 9.6 k), because rules
//! found in later windows reach earlier ones only through the final pass, after those windows'
//! own choices have broken up their digrams.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;
use wpp_trace::{Terminal, ThreadId};

use super::engine::{key, Engine};
use super::output;
use super::{check_terminal, repair, RePairError, MAX_POSITIONS, RULE_BIT};
use crate::grammar::Grammar;

/// Most-frequent-digram-first compression with a bounded buffer of `window` events per stream.
///
/// ```
/// use wpp_grammar::repair::Windowed;
/// use wpp_trace::{Terminal, ThreadId};
///
/// let mut c = Windowed::new(4);
/// let trace = b"abcabcabcabc".iter().map(|&b| Terminal(u32::from(b)));
/// c.add_stream(ThreadId(0), trace).unwrap();
/// let g = c.finish().unwrap();
/// assert_eq!(g.num_symbols(), 2 + 2 + 3); // S → CC, C → BB, B → abc
/// ```
pub struct Windowed {
    window: usize,
    rules: Vec<[u32; 2]>,
    /// The rule whose body is each digram.
    dict: FxHashMap<u64, u32>,
    streams: Vec<Stream>,
    num_terminals: u32,
}

/// A stream of a [`Windowed`] compressor, for [`Windowed::push`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowStream(u32);

/// One thread's window being filled and its start sequence so far.
struct Stream {
    thread: ThreadId,
    buffer: Vec<u32>,
    top: Vec<u32>,
}

impl Windowed {
    /// A compressor buffering `window` events at a time (at least 1).
    pub fn new(window: usize) -> Windowed {
        Windowed {
            window: window.clamp(1, MAX_POSITIONS - 1),
            rules: Vec::new(),
            dict: FxHashMap::default(),
            streams: Vec::new(),
            num_terminals: 0,
        }
    }

    /// Declares that the grammar is over at least `n` terminals.
    pub fn reserve_terminals(&mut self, n: u32) {
        self.num_terminals = self.num_terminals.max(n);
    }

    /// Adds a stream (a thread's events) with its own start rule, to be fed by
    /// [`push`](Self::push); streams may be fed interleaved, each buffering its own window.
    pub fn open_stream(&mut self, thread: ThreadId) -> WindowStream {
        self.streams.push(Stream {
            thread,
            buffer: Vec::new(),
            top: Vec::new(),
        });
        WindowStream(self.streams.len() as u32 - 1)
    }

    /// Appends one terminal to `stream`, compressing its window when full. `stream` must come
    /// from this compressor's [`open_stream`](Self::open_stream).
    pub fn push(&mut self, stream: WindowStream, t: Terminal) -> Result<(), RePairError> {
        self.num_terminals = self.num_terminals.max(check_terminal(t)? + 1);
        let buffer = &mut self.streams[stream.0 as usize].buffer;
        buffer.push(t.0);
        if buffer.len() == self.window {
            self.flush(stream.0 as usize)?;
        }
        Ok(())
    }

    /// Adds a whole stream (one thread's terminals), compressing it window by window.
    pub fn add_stream<I>(&mut self, thread: ThreadId, terminals: I) -> Result<(), RePairError>
    where
        I: IntoIterator<Item = Terminal>,
    {
        let s = self.open_stream(thread);
        for t in terminals {
            self.push(s, t)?;
        }
        self.flush(s.0 as usize)?;
        self.streams[s.0 as usize].buffer = Vec::new();
        Ok(())
    }

    /// Compresses stream `s`'s buffered window onto its start sequence.
    fn flush(&mut self, s: usize) -> Result<(), RePairError> {
        let mut buffer = std::mem::take(&mut self.streams[s].buffer);
        if buffer.is_empty() {
            return Ok(());
        }
        let mut engine = Engine::new(buffer.len() + 1);
        buffer.drain(..).for_each(|x| engine.push(x));
        engine.end_stream();
        self.compress(&mut engine)?;
        let stream = &mut self.streams[s];
        for out in engine.streams() {
            stream.top.extend(out);
        }
        stream.buffer = buffer;
        Ok(())
    }

    /// Re-parses with the existing rules, then creates new ones.
    fn compress(&mut self, engine: &mut Engine) -> Result<(), RePairError> {
        engine.index_pairs();
        self.reparse(engine);
        engine.reset_cursor();
        let old = self.rules.len();
        repair(engine, &mut self.rules, 0)?;
        for (k, &[a, b]) in self.rules.iter().enumerate().skip(old) {
            self.dict.insert(key(a, b), k as u32);
        }
        Ok(())
    }

    /// Applies every existing rule whose digram occurs, in creation order.
    fn reparse(&self, engine: &mut Engine) {
        let mut heap: BinaryHeap<Reverse<u32>> = engine
            .live_pairs()
            .filter_map(|r| self.rule_for(engine, r))
            .map(Reverse)
            .collect();
        engine.log_new_pairs(true);
        let mut fresh = Vec::new();
        let mut last = None;
        while let Some(Reverse(k)) = heap.pop() {
            if last == Some(k) {
                continue;
            }
            last = Some(k);
            let [a, b] = self.rules[k as usize];
            if let Some(r) = engine.find(a, b) {
                engine.replace_all(r, RULE_BIT | k);
            }
            engine.swap_new_pairs(&mut fresh);
            heap.extend(
                fresh
                    .iter()
                    .filter_map(|&r| self.rule_for(engine, r))
                    .map(Reverse),
            );
        }
        engine.log_new_pairs(false);
    }

    /// The existing rule for record `r`'s digram, if `r` is alive.
    fn rule_for(&self, engine: &Engine, r: u32) -> Option<u32> {
        let (a, b, count) = engine.pair(r);
        (count > 0)
            .then(|| self.dict.get(&key(a, b)).copied())
            .flatten()
    }

    /// Compresses the last windows, then the start sequences once more across window
    /// boundaries, and returns the grammar (rules numbered in depth-first post-order from the
    /// start rules, one start rule per stream in the order opened).
    pub fn finish(mut self) -> Result<Grammar, RePairError> {
        for s in 0..self.streams.len() {
            self.flush(s)?;
        }
        let streams = std::mem::take(&mut self.streams);
        let len: usize = streams.iter().map(|s| s.top.len() + 1).sum();
        if len >= MAX_POSITIONS {
            return Err(RePairError::TooLong);
        }
        let mut engine = Engine::new(len);
        for stream in &streams {
            stream.top.iter().for_each(|&x| engine.push(x));
            engine.end_stream();
        }
        let threads: Vec<ThreadId> = streams.into_iter().map(|s| s.thread).collect();
        self.compress(&mut engine)?;
        let top = super::final_sequences(&engine);
        drop(engine);
        output::grammar(self.num_terminals, &self.rules, &top, &threads)
    }
}
