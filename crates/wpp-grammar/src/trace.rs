//! From an event stream to a [`WppFile`]: the one place that routes a trace's events to
//! per-thread streams, interns them into terminals and feeds the chosen compressor.
//!
//! A trace interleaves its threads' events; `Thread(t)` switches the thread the following
//! events belong to (events before any switch belong to thread 0). [`TraceCompressor`] follows
//! the switches with a [`ThreadDemux`], so `Thread` events select a stream and are never
//! terminals themselves. A stream is opened when its thread emits its first event, so a switch
//! to a thread that then emits nothing leaves no trace in the grammar, exactly as
//! [`split_threads`](wpp_trace::split_threads) defines a trace's meaning. Start rules appear in
//! order of each thread's first event.
//!
//! The compressors:
//!
//! * [`Algorithm::Sequitur`] and [`Algorithm::Sequitur1`] are online: each terminal is pushed
//!   into one shared [`Sequitur`] as it arrives.
//! * [`Algorithm::Frequency`] is offline: each thread's terminals are buffered (1, 2 or 4 bytes
//!   per event) and handed to [`RePair`] at [`finish`](TraceCompressor::finish); with a window it
//!   runs the bounded-buffer [`Windowed`] form instead, which pushes online.
//! * [`Algorithm::Phrase`] is online: each terminal goes to a [`PhraseCompressor`], which cuts
//!   phrases and pushes only phrase ids into its SEQUITUR.
//!
//! Per event the cost is one alphabet lookup and one push; the lookup is an array index for
//! blocks, paths and functions with ids below 2^20 (nearly every event of a real trace) and a
//! hash probe otherwise. Switching threads costs a hash probe. The recording runtime's online
//! compressor uses this type too, handing over each thread's buffer with
//! [`push_thread`](TraceCompressor::push_thread). Nothing is allocated per event beyond the growth of the compressor's
//! own tables (and of the buffers of the offline form).
//!
//! ```
//! use wpp_grammar::trace::TraceCompressor;
//! use wpp_grammar::Algorithm;
//! use wpp_trace::{BlockId, Event, ProgramDb, ThreadId};
//!
//! let mut c = TraceCompressor::new(Algorithm::Sequitur, None, ProgramDb::default());
//! let b = |i| Event::Block(BlockId(i));
//! c.push_batch(&[b(0), b(1), Event::Thread(ThreadId(2)), b(0), b(1)]).unwrap();
//! let wpp = c.finish().unwrap();
//! assert_eq!(wpp.events, 5); // as recorded, thread switch included
//! assert_eq!(wpp.alphabet.len(), 2); // B0, B1: the switch is not a terminal
//! assert_eq!(wpp.grammar.starts().len(), 2); // threads 0 and 2
//! ```

use rustc_hash::{FxHashMap, FxHashSet};
use wpp_trace::alphabet::AlphabetFull;
use wpp_trace::{Alphabet, Event, ProgramDb, Terminal, ThreadDemux, ThreadId};

use crate::algorithm::{Algorithm, CompressError};
use crate::file::WppFile;
use crate::parallel::{Parallel, Parallelism};
use crate::phrase::{PhraseCompressor, PhraseError, PhraseStream};
use crate::repair::{RePair, RePairError, WindowStream, Windowed};
use crate::sequitur::{Sequitur, SequiturError, StreamId, Variant};

/// Why a trace could not be compressed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TraceCompressError {
    /// The trace has more distinct events than terminals can number.
    #[error("the trace has more than 2^31 distinct events; terminals are limited to 31 bits")]
    AlphabetFull,
    /// The compressor rejected the input (too long, too many threads, …).
    #[error(transparent)]
    Compress(#[from] CompressError),
    /// The joined grammar of a parallel compression is too large for 32-bit ids.
    #[error(transparent)]
    Join(#[from] crate::grammar::GrammarError),
    /// A worker thread of a parallel compression could not be started.
    #[error("cannot start a compression thread: {0}")]
    Threads(String),
    /// A worker thread of a parallel compression stopped without its result.
    #[error("a compression thread stopped unexpectedly")]
    WorkerLost,
}

impl From<AlphabetFull> for TraceCompressError {
    fn from(_: AlphabetFull) -> Self {
        TraceCompressError::AlphabetFull
    }
}

impl From<SequiturError> for TraceCompressError {
    fn from(e: SequiturError) -> Self {
        TraceCompressError::Compress(e.into())
    }
}

impl From<PhraseError> for TraceCompressError {
    fn from(e: PhraseError) -> Self {
        TraceCompressError::Compress(e.into())
    }
}

impl From<RePairError> for TraceCompressError {
    fn from(e: RePairError) -> Self {
        TraceCompressError::Compress(e.into())
    }
}

/// The compressor behind a [`TraceCompressor`] (or behind one chunk of a parallel one), with
/// its per-thread stream handles (indexed by the compressor-independent stream number).
pub(crate) enum Engine {
    /// SEQUITUR or SEQUITUR(1), online.
    Sequitur { s: Sequitur, ids: Vec<StreamId> },
    /// Frequency-ordered, offline: each stream's terminals, buffered.
    Offline { streams: Vec<(ThreadId, Buffer)> },
    /// Frequency-ordered with a bounded window, online.
    Windowed { w: Windowed, ids: Vec<WindowStream> },
    /// Phrases, then SEQUITUR over phrase ids, online (boxed: it is several times larger
    /// than the other variants).
    Phrase {
        p: Box<PhraseCompressor>,
        ids: Vec<PhraseStream>,
    },
}

impl Engine {
    pub(crate) fn new(algorithm: Algorithm, window: Option<usize>) -> Engine {
        let variant = match (algorithm, window) {
            (Algorithm::Sequitur, _) => Variant::Sequitur,
            (Algorithm::Sequitur1, _) => Variant::Sequitur1,
            (Algorithm::Frequency, None) => {
                return Engine::Offline {
                    streams: Vec::new(),
                }
            }
            (Algorithm::Frequency, Some(n)) => {
                let w = Windowed::new(n);
                return Engine::Windowed { w, ids: Vec::new() };
            }
            (Algorithm::Phrase, _) => {
                let p = Box::new(PhraseCompressor::new());
                return Engine::Phrase { p, ids: Vec::new() };
            }
        };
        let s = Sequitur::new(variant);
        Engine::Sequitur { s, ids: Vec::new() }
    }

    /// Opens the stream of `thread`; streams are numbered in order of opening.
    pub(crate) fn open(&mut self, thread: ThreadId) -> Result<(), TraceCompressError> {
        match self {
            Engine::Sequitur { s, ids } => ids.push(s.add_stream(thread)?),
            Engine::Offline { streams } => streams.push((thread, Buffer::U8(Vec::new()))),
            Engine::Windowed { w, ids } => ids.push(w.open_stream(thread)),
            Engine::Phrase { p, ids } => ids.push(p.add_stream(thread)?),
        }
        Ok(())
    }

    #[inline]
    fn push(&mut self, stream: usize, t: Terminal) -> Result<(), TraceCompressError> {
        match self {
            Engine::Sequitur { s, ids } => s.push(ids[stream], t)?,
            Engine::Offline { streams } => streams[stream].1.push(t.0),
            Engine::Windowed { w, ids } => w.push(ids[stream], t)?,
            Engine::Phrase { p, ids } => p.push(ids[stream], t)?,
        }
        Ok(())
    }

    /// Appends a run of terminals to `stream`, as repeated [`push`](Self::push).
    pub(crate) fn push_slice(
        &mut self,
        stream: usize,
        ts: &[Terminal],
    ) -> Result<(), TraceCompressError> {
        match self {
            Engine::Sequitur { s, ids } => s.push_slice(ids[stream], ts)?,
            Engine::Phrase { p, ids } => p.push_slice(ids[stream], ts)?,
            _ => ts.iter().try_for_each(|&t| self.push(stream, t))?,
        }
        Ok(())
    }

    fn heap_bytes(&self) -> Option<usize> {
        match self {
            Engine::Sequitur { s, .. } => Some(s.heap_bytes()),
            Engine::Offline { streams } => Some(streams.iter().map(|(_, b)| b.heap_bytes()).sum()),
            Engine::Windowed { .. } => None,
            Engine::Phrase { p, .. } => Some(p.heap_bytes()),
        }
    }

    pub(crate) fn finish(self, num_terminals: u32) -> Result<crate::Grammar, TraceCompressError> {
        Ok(match self {
            Engine::Sequitur { mut s, .. } => {
                s.reserve_terminals(num_terminals);
                s.finish()
            }
            Engine::Offline { streams } => {
                let mut c = RePair::new();
                c.reserve_terminals(num_terminals);
                c.reserve(streams.iter().map(|(_, b)| b.len() + 1).sum());
                // Each buffer is freed as soon as the engine has copied it.
                for (thread, buffer) in streams {
                    buffer.add_to(&mut c, thread)?;
                }
                c.finish()?
            }
            Engine::Windowed { mut w, .. } => {
                w.reserve_terminals(num_terminals);
                w.finish()?
            }
            Engine::Phrase { p, .. } => p.finish(num_terminals)?,
        })
    }
}

/// One thread's terminals for the offline compressor, stored as narrowly as the largest
/// terminal so far allows: 1 byte per event while terminals are below 2^8, 2 below 2^16 (most
/// block and path alphabets), then 4. The engine needs 12 bytes per event when the buffer is
/// handed over, so a 4-byte buffer would add a third to the peak (measured: 13.7 instead of
/// 18.7 bytes per event on a 10^7-event synthetic trace).
pub(crate) enum Buffer {
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
}

impl Buffer {
    #[inline]
    fn push(&mut self, t: u32) {
        match self {
            Buffer::U8(v) if t <= u32::from(u8::MAX) => v.push(t as u8),
            Buffer::U16(v) if t <= u32::from(u16::MAX) => v.push(t as u16),
            Buffer::U32(v) => v.push(t),
            _ => self.widen_and_push(t),
        }
    }

    /// Moves to the next wider representation, then pushes `t`.
    #[cold]
    fn widen_and_push(&mut self, t: u32) {
        *self = match std::mem::replace(self, Buffer::U32(Vec::new())) {
            Buffer::U8(v) if t <= u32::from(u16::MAX) => {
                Buffer::U16(v.into_iter().map(u16::from).collect())
            }
            Buffer::U8(v) => Buffer::U32(v.into_iter().map(u32::from).collect()),
            Buffer::U16(v) => Buffer::U32(v.into_iter().map(u32::from).collect()),
            wide => wide,
        };
        self.push(t);
    }

    fn len(&self) -> usize {
        match self {
            Buffer::U8(v) => v.len(),
            Buffer::U16(v) => v.len(),
            Buffer::U32(v) => v.len(),
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            Buffer::U8(v) => v.capacity(),
            Buffer::U16(v) => v.capacity() * 2,
            Buffer::U32(v) => v.capacity() * 4,
        }
    }

    /// Hands the terminals to `c` as the stream of `thread`, freeing the buffer. The buffer is
    /// first trimmed to its length: it grew by doubling, and its unused half would otherwise
    /// sit next to the engine's 12 bytes per event (measured: 15.6 instead of 14 bytes per
    /// event of peak heap on a 18.6 M-event path trace).
    fn add_to(self, c: &mut RePair, thread: ThreadId) -> Result<(), RePairError> {
        match self {
            Buffer::U8(v) => c.add_stream(thread, trimmed(v).map(|t| Terminal(t.into()))),
            Buffer::U16(v) => c.add_stream(thread, trimmed(v).map(|t| Terminal(t.into()))),
            Buffer::U32(v) => c.add_stream(thread, trimmed(v).map(Terminal)),
        }
    }
}

/// `v`'s elements, its spare capacity freed first.
fn trimmed<T>(mut v: Vec<T>) -> std::vec::IntoIter<T> {
    v.shrink_to_fit();
    v.into_iter()
}

/// Events to terminals: the [`Alphabet`], with a direct-mapped table in front of its hash map.
#[derive(Default)]
struct Interner {
    alphabet: Alphabet,
    /// Terminal of each event with a [`direct_key`], or `u32::MAX`.
    direct: Vec<u32>,
}

/// Ids below this bound get a slot in the direct table (4 slots per id: at most 16 MiB).
const DIRECT_IDS: u64 = 1 << 20;

/// The event's slot in the direct table, if it has one.
#[inline]
fn direct_key(e: Event) -> Option<usize> {
    let (id, kind) = match e {
        Event::Block(b) => (u64::from(b.0), 0),
        Event::Path(p) => (p.0, 1),
        Event::Enter(f) => (u64::from(f.0), 2),
        Event::Leave => (0, 3),
        Event::Thread(_) => return None,
    };
    (id < DIRECT_IDS).then_some((id as usize) << 2 | kind)
}

impl Interner {
    #[inline]
    fn intern(&mut self, e: Event) -> Result<Terminal, AlphabetFull> {
        let key = direct_key(e);
        if let Some(&t) = key.and_then(|k| self.direct.get(k)) {
            if t != u32::MAX {
                return Ok(Terminal(t));
            }
        }
        let t = self.alphabet.intern(e)?;
        if let Some(k) = key {
            if self.direct.len() <= k {
                self.direct.resize(k + 1, u32::MAX);
            }
            self.direct[k] = t.0;
        }
        Ok(t)
    }
}

/// Compresses a trace, pushed event by event, into a [`WppFile`].
pub struct TraceCompressor {
    algorithm: Algorithm,
    program: ProgramDb,
    interner: Interner,
    demux: ThreadDemux,
    /// The stream of each thread that has emitted an event.
    streams: FxHashMap<ThreadId, usize>,
    /// The current thread's stream, once it has one.
    current: Option<usize>,
    /// Threads that have emitted an event, in any segment.
    threads: FxHashSet<ThreadId>,
    backend: Backend,
    /// What [`with_threads`](Self::with_threads) asked for, to start each segment's backend.
    parallelism: Option<Parallelism>,
    window: Option<usize>,
    events: u64,
    /// [`events`](Self::events) when the current segment began.
    segment_start: u64,
}

/// Where a [`TraceCompressor`]'s terminals go.
enum Backend {
    /// One compressor on the caller's thread.
    Serial(Engine),
    /// Chunks compressed on worker threads, then joined ([`crate::parallel`]).
    Parallel(Parallel),
}

impl TraceCompressor {
    /// A compressor running `algorithm` for a trace of the program `program`. `window` selects
    /// the bounded-buffer form of [`Algorithm::Frequency`] (events buffered per thread); the
    /// SEQUITUR variants are online already and ignore it.
    pub fn new(algorithm: Algorithm, window: Option<usize>, program: ProgramDb) -> Self {
        TraceCompressor {
            algorithm,
            program,
            interner: Interner::default(),
            demux: ThreadDemux::new(),
            streams: FxHashMap::default(),
            current: None,
            threads: FxHashSet::default(),
            backend: Backend::Serial(Engine::new(algorithm, window)),
            parallelism: None,
            window,
            events: 0,
            segment_start: 0,
        }
    }

    /// A compressor as [`new`](Self::new) makes, running on `how.threads` worker threads: the
    /// trace is cut into chunks of `how.chunk_events` events, compressed in parallel and joined
    /// ([`crate::parallel`], [`crate::join`]). With one thread or a `window` this is
    /// [`new`](Self::new)'s compressor, whose grammar is the same bit for bit; so is the grammar
    /// of a trace that fits in one chunk.
    pub fn with_threads(
        algorithm: Algorithm,
        window: Option<usize>,
        program: ProgramDb,
        how: Parallelism,
    ) -> Result<Self, TraceCompressError> {
        let mut c = TraceCompressor::new(algorithm, window, program);
        if how.threads > 1 && window.is_none() {
            c.parallelism = Some(how);
            c.backend = c.fresh_backend()?;
        }
        Ok(c)
    }

    /// A backend with nothing pushed, as this compressor was configured.
    fn fresh_backend(&self) -> Result<Backend, TraceCompressError> {
        Ok(match self.parallelism {
            Some(how) => Backend::Parallel(Parallel::new(self.algorithm, how)?),
            None => Backend::Serial(Engine::new(self.algorithm, self.window)),
        })
    }

    /// Appends one event of the trace.
    #[inline]
    pub fn push(&mut self, event: Event) -> Result<(), TraceCompressError> {
        self.events += 1;
        let Some(thread) = self.demux.route(event) else {
            self.current = self.streams.get(&self.demux.current()).copied();
            return Ok(());
        };
        let stream = match self.current {
            Some(s) => s,
            None => self.open(thread)?,
        };
        let t = self.interner.intern(event)?;
        match &mut self.backend {
            Backend::Serial(engine) => engine.push(stream, t),
            Backend::Parallel(p) => p.push(thread, t, self.interner.alphabet.len() as u32),
        }
    }

    /// Appends events of `thread`, as `Thread(thread)` followed by `events` would, except that
    /// the switch is not counted in [`events`](Self::events): the recording runtime hands each
    /// thread's buffers over this way, and its events carry no switches. `events` must contain
    /// no `Thread` event either (one would switch threads as in [`push`](Self::push)).
    pub fn push_thread(
        &mut self,
        thread: ThreadId,
        events: &[Event],
    ) -> Result<(), TraceCompressError> {
        self.demux.route(Event::Thread(thread));
        self.current = self.streams.get(&thread).copied();
        self.push_batch(events)
    }

    /// Appends a run of consecutive events, as repeated [`push`](Self::push). (Handing each
    /// stretch between thread switches to SEQUITUR in one `push_slice` call measured no faster:
    /// the compressor dominates.)
    pub fn push_batch(&mut self, events: &[Event]) -> Result<(), TraceCompressError> {
        events.iter().try_for_each(|&e| self.push(e))
    }

    /// Opens the stream of `thread` and makes it current.
    fn open(&mut self, thread: ThreadId) -> Result<usize, TraceCompressError> {
        let stream = self.streams.len();
        if let Backend::Serial(engine) = &mut self.backend {
            engine.open(thread)?;
        }
        self.streams.insert(thread, stream);
        self.threads.insert(thread);
        self.current = Some(stream);
        Ok(stream)
    }

    /// Events pushed so far, `Thread` switches included.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Distinct terminals so far.
    pub fn num_terminals(&self) -> usize {
        self.interner.alphabet.len()
    }

    /// Threads that have emitted at least one event so far.
    pub fn num_threads(&self) -> usize {
        self.threads.len()
    }

    /// Heap bytes held by the compressor's own tables where it can say (SEQUITUR's arena and
    /// digram index; the offline form's buffers), `None` for the windowed and parallel forms.
    pub fn compressor_heap_bytes(&self) -> Option<usize> {
        match &self.backend {
            Backend::Serial(engine) => engine.heap_bytes(),
            Backend::Parallel(_) => None,
        }
    }

    /// Events pushed since the current segment began ([`close_segment`](Self::close_segment)).
    pub fn segment_events(&self) -> u64 {
        self.events - self.segment_start
    }

    /// Closes the current segment: returns the grammar of the events pushed since the last
    /// close (start rules for the threads that had events in it, over the terminals interned
    /// so far) and starts a fresh one over the same alphabet, so its memory is the caller's to
    /// free ([`crate::segment`]). The current thread stays current.
    pub fn close_segment(&mut self) -> Result<crate::Grammar, TraceCompressError> {
        let grammar = self.finish_backend()?;
        self.backend = self.fresh_backend()?;
        self.streams.clear();
        self.current = None;
        self.segment_start = self.events;
        Ok(grammar)
    }

    /// The grammar of the backend's events, over the terminals interned so far; the backend
    /// is left empty (an offline engine without streams, which holds nothing), so a segment's
    /// compressor is freed before the next one starts.
    fn finish_backend(&mut self) -> Result<crate::Grammar, TraceCompressError> {
        let empty = Backend::Serial(Engine::Offline {
            streams: Vec::new(),
        });
        let backend = std::mem::replace(&mut self.backend, empty);
        let num_terminals = self.interner.alphabet.len() as u32;
        match backend {
            Backend::Serial(engine) => engine.finish(num_terminals),
            Backend::Parallel(p) => {
                let mut threads: Vec<(usize, ThreadId)> =
                    self.streams.iter().map(|(&t, &s)| (s, t)).collect();
                threads.sort_unstable();
                let threads: Vec<ThreadId> = threads.into_iter().map(|(_, t)| t).collect();
                p.finish(num_terminals, &threads)
            }
        }
    }

    /// Finishes compression and returns the `.wpp` contents (without extra sections); after
    /// [`close_segment`](Self::close_segment), its grammar is the last segment's.
    pub fn finish(mut self) -> Result<WppFile, TraceCompressError> {
        let grammar = self.finish_backend()?;
        Ok(WppFile {
            program: self.program,
            alphabet: self.interner.alphabet,
            grammar,
            algorithm: self.algorithm,
            events: self.events,
            extra: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expand::Expander;
    use crate::Symbol;
    use std::collections::BTreeMap;
    use wpp_trace::synth::{SynthProgram, TraceKind};
    use wpp_trace::{split_threads, BlockId, FunctionId, PathId};

    /// Per-thread expansions of a compressed trace, mapped back to events.
    fn expand(wpp: &WppFile) -> BTreeMap<ThreadId, Vec<Event>> {
        let g = &wpp.grammar;
        let mut out = BTreeMap::new();
        for s in g.starts() {
            let events: Vec<Event> = Expander::new(g, s.rule)
                .map(|t| wpp.alphabet.event(t).expect("terminal in the alphabet"))
                .collect();
            assert!(out.insert(s.thread, events).is_none(), "two start rules");
        }
        out
    }

    /// Every configuration a [`TraceCompressor`] can run.
    fn configs() -> Vec<(Algorithm, Option<usize>)> {
        let mut c: Vec<_> = Algorithm::ALL.iter().map(|&a| (a, None)).collect();
        c.extend([
            (Algorithm::Frequency, Some(1)),
            (Algorithm::Frequency, Some(64)),
        ]);
        c
    }

    fn compress(events: &[Event], algorithm: Algorithm, window: Option<usize>) -> WppFile {
        let mut c = TraceCompressor::new(algorithm, window, ProgramDb::default());
        // Uneven batches, so batch boundaries fall anywhere; every other one event by event.
        for (i, chunk) in events.chunks(7).enumerate() {
            if i % 2 == 0 {
                c.push_batch(chunk).unwrap();
            } else {
                chunk.iter().for_each(|&e| c.push(e).unwrap());
            }
        }
        c.finish().unwrap()
    }

    fn assert_round_trip(events: &[Event]) {
        let want = split_threads(events);
        for (algorithm, window) in configs() {
            let wpp = compress(events, algorithm, window);
            let what = format!("{algorithm} window {window:?}");
            assert_eq!(expand(&wpp), want, "{what}");
            assert_eq!(wpp.events, events.len() as u64, "{what}");
            assert_eq!(wpp.algorithm, algorithm);
            assert!(wpp.alphabet.events().iter().all(|e| e.letter() != 'T'));
            crate::check::check_algorithm(algorithm, &wpp.grammar)
                .unwrap_or_else(|e| panic!("{what}: {e:?}"));
            // The result is a valid file: it survives encoding and validation.
            let back = WppFile::from_bytes(&wpp.to_bytes().unwrap()).unwrap();
            assert_eq!(back, wpp, "{what}");
        }
    }

    #[test]
    fn interleaved_synthetic_threads_round_trip() {
        let program = SynthProgram::generate(7);
        for kind in [TraceKind::Blocks, TraceKind::Paths] {
            let mut events = Vec::new();
            program
                .run_threads(kind, 60_000, 3, |e| {
                    events.push(e);
                    Ok::<_, ()>(())
                })
                .unwrap();
            assert!(split_threads(&events).len() >= 2, "several threads");
            assert_round_trip(&events);
        }
    }

    #[test]
    fn silent_threads_and_late_thread_zero_are_handled() {
        let b = |i| Event::Block(BlockId(i));
        let t = |i| Event::Thread(ThreadId(i));
        let f = |i| Event::Enter(FunctionId(i));
        // Thread 5 emits nothing; thread 0 speaks first implicitly, then again after others.
        let events = [
            f(0),
            b(1),
            b(2),
            t(5),
            t(3),
            b(1),
            b(2),
            b(1),
            b(2),
            t(0),
            b(1),
            b(2),
            Event::Leave,
            t(9),
            Event::Path(PathId(u64::MAX)),
        ];
        assert_round_trip(&events);
        let wpp = compress(&events, Algorithm::Sequitur, None);
        let threads: Vec<u32> = wpp.grammar.starts().iter().map(|s| s.thread.0).collect();
        assert_eq!(threads, [0, 3, 9], "start rules in order of first event");
        assert_eq!(wpp.alphabet.len(), 5);
    }

    #[test]
    fn push_thread_is_a_switch_that_is_not_counted() {
        let program = SynthProgram::generate(3);
        let mut events = Vec::new();
        program
            .run_threads(TraceKind::Paths, 5_000, 2, |e| {
                events.push(e);
                Ok::<_, ()>(())
            })
            .unwrap();
        // Large ids take the hash path of the interner, small ones the direct table.
        events.extend([1u64 << 20, (1 << 20) - 1, u64::MAX].map(|p| Event::Path(PathId(p))));
        let threads = split_threads(&events);
        for algorithm in Algorithm::ALL {
            let mut c = TraceCompressor::new(algorithm, None, ProgramDb::default());
            for (&thread, evs) in &threads {
                for half in evs.chunks(evs.len() / 2 + 1) {
                    c.push_thread(thread, half).unwrap();
                }
            }
            let n: usize = threads.values().map(Vec::len).sum();
            assert_eq!(c.events(), n as u64);
            assert_eq!(expand(&c.finish().unwrap()), threads, "{algorithm}");
        }
    }

    #[test]
    fn empty_and_switch_only_traces_have_no_threads() {
        for events in [&[][..], &[Event::Thread(ThreadId(4))][..]] {
            for (algorithm, window) in configs() {
                let wpp = compress(events, algorithm, window);
                assert!(wpp.grammar.starts().is_empty());
                assert_eq!(wpp.events, events.len() as u64);
                WppFile::from_bytes(&wpp.to_bytes().unwrap()).unwrap();
            }
        }
    }

    fn blocks(s: &str) -> Vec<Event> {
        s.bytes()
            .map(|c| Event::Block(BlockId(u32::from(c))))
            .collect()
    }

    #[test]
    fn papers_example_through_events() {
        // Tallam–Gupta §4.2: frequency-first makes `bc` one rule that four others use.
        let events = blocks("wbcwbcxbcxbybcybczbczbc");
        let freq = compress(&events, Algorithm::Frequency, None);
        let g = &freq.grammar;
        let bc: Vec<Symbol> = [b'b', b'c']
            .map(|c| Symbol::terminal(freq.alphabet.get(&Event::Block(BlockId(c.into()))).unwrap()))
            .to_vec();
        let rule = g.rules().find(|&r| g.body(r) == bc).expect("a rule bc");
        let users = g
            .rules()
            .filter(|&r| g.body(r).contains(&Symbol::rule(rule)));
        assert_eq!(users.count(), 4);
        assert_round_trip(&events);
        // A string where SEQUITUR's first-come order costs symbols (from tests/repair.rs).
        let events = blocks("dcbaccccbac");
        let seq = compress(&events, Algorithm::Sequitur, None);
        let freq = compress(&events, Algorithm::Frequency, None);
        assert!(freq.grammar.num_symbols() < seq.grammar.num_symbols());
    }

    #[test]
    fn offline_buffers_widen_with_the_alphabet() {
        let mut b = Buffer::U8(Vec::new());
        let input = [7, 255, 256, 3, 65_535, 65_536, 1 << 30, 0];
        for (i, &t) in input.iter().enumerate() {
            b.push(t);
            let width = match &b {
                Buffer::U8(_) => 1,
                Buffer::U16(_) => 2,
                Buffer::U32(_) => 4,
            };
            let want = if t < 256 && i < 2 {
                1
            } else if i < 5 {
                2
            } else {
                4
            };
            assert_eq!(width, want, "after {t}");
        }
        let Buffer::U32(v) = b else { panic!("widest") };
        assert_eq!(v, input);
        // Through the compressor: more than 2^16 distinct events, in a repetitive order.
        let events: Vec<Event> = (0..2)
            .flat_map(|_| (0..70_000).map(|i| Event::Block(BlockId(i))))
            .collect();
        let wpp = compress(&events, Algorithm::Frequency, None);
        assert_eq!(expand(&wpp), split_threads(&events));
    }
}
