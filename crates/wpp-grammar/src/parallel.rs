//! Compression on several cores: the trace is cut into chunks of consecutive events, each chunk
//! is compressed on a worker thread by the chosen algorithm (its threads' events interleaved as
//! in the trace, exactly as [`TraceCompressor`](crate::TraceCompressor) would on one thread), and
//! the chunk grammars are joined into one ([`crate::join`]).
//!
//! The caller's thread interns events into terminals (so the alphabet is the single-threaded
//! one), fills the current chunk and hands it to a worker when full; it joins finished chunk
//! grammars between chunks, in chunk order, so the grammar does not depend on the number of
//! workers or on which finished first. At most `2 × workers` chunks are queued, compressing or
//! waiting to be joined, so memory is bounded by a few chunks (4 bytes per event each, plus
//! their compressors' tables) and the joined grammar, not by the trace's length. A trace that
//! fits in one chunk is compressed in that chunk alone and its grammar returned as it is: the
//! single-threaded grammar.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use rustc_hash::FxHashMap;
use wpp_trace::{Terminal, ThreadId};

use crate::algorithm::Algorithm;
use crate::grammar::Grammar;
use crate::join::{Joiner, Seams};
use crate::trace::{Engine, TraceCompressError};

/// Events per chunk when the caller does not choose: large enough that the grammar lost at
/// chunk boundaries is small, small enough that two cores get work from 10^7-event traces.
pub const DEFAULT_CHUNK_EVENTS: usize = 1 << 22;

/// How a [`TraceCompressor`](crate::TraceCompressor) uses several cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parallelism {
    /// Worker threads; 1 runs the single-threaded compressor.
    pub threads: usize,
    /// Events per chunk.
    pub chunk_events: usize,
    /// Whether the joined start rules are compressed again.
    pub seams: Seams,
}

impl Parallelism {
    /// `threads` workers with the default chunk size, seams kept.
    pub fn threads(threads: usize) -> Parallelism {
        Parallelism {
            threads,
            chunk_events: DEFAULT_CHUNK_EVENTS,
            seams: Seams::default(),
        }
    }
}

/// A run of one thread's consecutive events inside a chunk.
#[derive(Clone, Copy)]
struct Run {
    thread: ThreadId,
    /// Where the run ends in the chunk's terminals.
    end: usize,
}

/// Consecutive events of the trace: their terminals and which thread each run belongs to.
#[derive(Default)]
struct Chunk {
    number: u64,
    terminals: Vec<Terminal>,
    runs: Vec<Run>,
    /// Terminals interned when the chunk was closed (all of the chunk's are below).
    num_terminals: u32,
}

impl Chunk {
    /// Compresses the chunk with `algorithm`, its streams opened in order of first event.
    fn compress(&self, algorithm: Algorithm) -> Result<Grammar, TraceCompressError> {
        let mut engine = Engine::new(algorithm, None);
        let mut streams: FxHashMap<ThreadId, usize> = FxHashMap::default();
        let mut begin = 0;
        for run in &self.runs {
            let next = streams.len();
            let stream = *streams.entry(run.thread).or_insert(next);
            if stream == next {
                engine.open(run.thread)?;
            }
            engine.push_slice(stream, &self.terminals[begin..run.end])?;
            begin = run.end;
        }
        engine.finish(self.num_terminals)
    }
}

/// Compresses one stream per thread as [`compress_threads`](crate::compress_threads) does,
/// cut into chunks compressed on `how.threads` workers and joined; the streams are taken one
/// after another (a chunk may hold the end of one and the start of the next). The grammar is
/// over `1 + ` the largest terminal.
pub fn compress_threads(
    algorithm: Algorithm,
    streams: &[(ThreadId, &[Terminal])],
    how: Parallelism,
) -> Result<Grammar, TraceCompressError> {
    let all = || streams.iter().flat_map(|(_, ts)| ts.iter());
    let num_terminals = all().map(|t| t.0.saturating_add(1)).max().unwrap_or(0);
    let mut p = Parallel::new(algorithm, how)?;
    for &(thread, ts) in streams {
        for &t in ts {
            p.push(thread, t, num_terminals)?;
        }
    }
    let threads: Vec<ThreadId> = streams.iter().map(|&(thread, _)| thread).collect();
    p.finish(num_terminals, &threads)
}

/// A compressed chunk: its number, its grammar, and its emptied terminal buffer for reuse.
type Outcome = (u64, Result<Grammar, TraceCompressError>, Vec<Terminal>);

/// The worker threads and the chunks in flight.
pub(crate) struct Parallel {
    chunk_events: usize,
    /// The chunk being filled.
    chunk: Chunk,
    jobs: Option<SyncSender<Chunk>>,
    outcomes: Receiver<Outcome>,
    workers: Vec<JoinHandle<()>>,
    in_flight: usize,
    /// Terminal buffers of compressed chunks, for the next chunks: a fresh one costs a page
    /// fault and a zeroed page every 1,024 events.
    spare: Vec<Vec<Terminal>>,
    joiner: Box<Joiner>,
    /// Chunk grammars not joined yet, by number (see [`join`](Self::join)).
    waiting: BTreeMap<u64, Grammar>,
    /// Chunk grammars added to the joiner: chunks `0..joined`.
    joined: usize,
}

impl Parallel {
    /// Worker threads compressing chunks with `algorithm`, as `how` says.
    pub(crate) fn new(
        algorithm: Algorithm,
        how: Parallelism,
    ) -> Result<Parallel, TraceCompressError> {
        let workers = how.threads.max(1);
        let (jobs, queue) = mpsc::sync_channel::<Chunk>(workers);
        let (done, outcomes) = mpsc::channel();
        let queue = Arc::new(Mutex::new(queue));
        let handles = (0..workers)
            .map(|i| {
                let (queue, done) = (Arc::clone(&queue), done.clone());
                std::thread::Builder::new()
                    .name(format!("wpp-compress-{i}"))
                    .spawn(move || work(algorithm, &queue, &done))
                    .map_err(|e| TraceCompressError::Threads(e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut joiner = Box::<Joiner>::default();
        joiner.set_seams(how.seams);
        Ok(Parallel {
            chunk_events: how.chunk_events.max(1),
            chunk: Chunk::default(),
            jobs: Some(jobs),
            outcomes,
            workers: handles,
            in_flight: 0,
            spare: Vec::new(),
            joiner,
            waiting: BTreeMap::new(),
            joined: 0,
        })
    }

    /// Appends terminal `t` of `thread`; `num_terminals` is the alphabet's size so far.
    #[inline]
    pub(crate) fn push(
        &mut self,
        thread: ThreadId,
        t: Terminal,
        num_terminals: u32,
    ) -> Result<(), TraceCompressError> {
        let c = &mut self.chunk;
        c.terminals.push(t);
        match c.runs.last_mut() {
            Some(run) if run.thread == thread => run.end += 1,
            _ => c.runs.push(Run {
                thread,
                end: c.terminals.len(),
            }),
        }
        if c.terminals.len() >= self.chunk_events {
            self.send(num_terminals)?;
        }
        Ok(())
    }

    /// Hands the current chunk to the workers, joining finished chunks meanwhile.
    fn send(&mut self, num_terminals: u32) -> Result<(), TraceCompressError> {
        let number = self.chunk.number;
        let mut chunk = std::mem::replace(
            &mut self.chunk,
            Chunk {
                number: number + 1,
                terminals: self.spare.pop().unwrap_or_else(|| {
                    Vec::with_capacity(self.chunk_events.min(DEFAULT_CHUNK_EVENTS))
                }),
                ..Chunk::default()
            },
        );
        chunk.num_terminals = num_terminals;
        // Grammars waiting for an earlier chunk count too: they hold memory as chunks do.
        while self.in_flight + self.waiting.len() >= 2 * self.workers.len() {
            self.receive(true)?;
        }
        let jobs = self.jobs.as_ref().ok_or(TraceCompressError::WorkerLost)?;
        jobs.send(chunk)
            .map_err(|_| TraceCompressError::WorkerLost)?;
        self.in_flight += 1;
        while self.in_flight > 0 && self.receive(false)? {}
        Ok(())
    }

    /// Joins one finished chunk (waiting for one if `wait`); returns whether there was one.
    fn receive(&mut self, wait: bool) -> Result<bool, TraceCompressError> {
        let outcome = if wait {
            self.outcomes
                .recv()
                .map_err(|_| TraceCompressError::WorkerLost)?
        } else {
            match self.outcomes.try_recv() {
                Ok(o) => o,
                Err(_) => return Ok(false),
            }
        };
        self.in_flight -= 1;
        let (number, grammar, terminals) = outcome;
        self.spare.push(terminals);
        self.join(number, grammar?);
        Ok(true)
    }

    /// Joins chunk `number`'s grammar in chunk order, holding back the ones that came early
    /// (the join keeps the first rule of each expansion, so its order decides the grammar),
    /// and chunk 0 until chunk 1 shows there is anything to join.
    fn join(&mut self, number: u64, g: Grammar) {
        self.waiting.insert(number, g);
        loop {
            let n = self.joined as u64;
            if n == 0 && !self.waiting.contains_key(&1) {
                return;
            }
            let Some(g) = self.waiting.remove(&n) else {
                return;
            };
            self.joiner.add(n, &g);
            self.joined += 1;
        }
    }

    /// Compresses the last chunk, waits for every worker and returns the joined grammar over
    /// `num_terminals` terminals, start rules in the order of `threads`.
    pub(crate) fn finish(
        mut self,
        num_terminals: u32,
        threads: &[ThreadId],
    ) -> Result<Grammar, TraceCompressError> {
        if !self.chunk.terminals.is_empty() || self.chunk.number == 0 {
            self.send(num_terminals)?;
        }
        while self.in_flight > 0 {
            self.receive(true)?;
        }
        self.jobs = None;
        for w in self.workers.drain(..) {
            w.join().map_err(|_| TraceCompressError::WorkerLost)?;
        }
        // Not next to the joined grammar, the compression's peak.
        drop(std::mem::take(&mut self.spare));
        match self.waiting.remove(&0) {
            Some(alone) => Ok(alone),
            None => Ok(std::mem::take(&mut *self.joiner).finish(num_terminals, threads)?),
        }
    }
}

/// A worker: compresses chunks from `queue` until it closes, sending each grammar to `done`.
fn work(algorithm: Algorithm, queue: &Mutex<Receiver<Chunk>>, done: &Sender<Outcome>) {
    loop {
        let next = queue.lock().map(|q| q.recv());
        let Ok(Ok(chunk)) = next else { return };
        let compress = AssertUnwindSafe(|| chunk.compress(algorithm));
        let grammar = catch_unwind(compress).unwrap_or(Err(TraceCompressError::WorkerLost));
        let mut terminals = chunk.terminals;
        terminals.clear();
        if done.send((chunk.number, grammar, terminals)).is_err() {
            return;
        }
    }
}
