//! Seeded synthetic programs that emit realistic control-flow traces, for tests and benchmarks
//! until real recordings exist.
//!
//! # Programs
//!
//! [`SynthProgram::generate`] builds a random structured program from a seed: 10 to 100
//! functions, each a tree of statements — straight-line blocks, loops with fixed or jittered
//! trip counts, `if`/`else` with biased probabilities (0.5 down to 0.001), switches with Zipf
//! weighted arms, calls, and bounded self-recursion. Function `i` calls only functions `j > i`
//! (plus itself when recursing), so every invocation terminates; a function's expected number
//! of events is estimated while it is generated and kept below a cap, so one call of `main`'s
//! dispatcher never swallows the whole trace. `main` (function 0) is a dispatch loop over the
//! other functions, like an interpreter's or a server's event loop. The result has what real
//! control-flow traces have: hot inner loops, heavily skewed branches and call targets, and a
//! long, highly repetitive tail — the repetition the compressors feed on.
//!
//! # Traces
//!
//! [`SynthProgram::run`] interprets the program with its own seeded generator and streams
//! exactly the requested number of events to a callback (the last invocations are left
//! unterminated, as in a recording stopped mid-run); if `main` returns early it is entered
//! again. Two vocabularies are emitted (see the crate docs):
//!
//! * **Blocks** (Zhang–Gupta §3): `Enter(f)`, then `Block(b)` for every block executed, with ids
//!   local to the function, then `Leave`.
//! * **Paths** (Larus §2): `Enter(f)`, then `Path(p)` for each acyclic path, then `Leave`. A path
//!   is the sequence of blocks executed since the last path boundary; boundaries are loop back
//!   edges, call sites (Larus §2 ends paths at calls so a caller's path precedes its callee's)
//!   and returns. Path ids are dense per function in order of first execution — a
//!   deterministic stand-in for Ball–Larus numbering, which `wpp-paths` provides.
//!
//! # Threads
//!
//! [`SynthProgram::run_threads`] runs several threads of the same program, each with its own
//! decisions, and interleaves them with `Thread(t)` events in seeded quanta, like a server's
//! worker threads under a time-slicing scheduler. Path ids are numbered once for all threads,
//! as a real path numbering is a property of the function, not of the thread.
//!
//! # Design and cost
//!
//! An interpreter walks the statement tree and emits raw steps (enter, leave, block of `f`,
//! path boundary in `f`); a shaper turns them into the requested vocabulary, numbering paths
//! with a per-function trie, so one interpreter serves both kinds and, with threads, every
//! thread's interpreter runs on its own OS thread while a single scheduler shapes and
//! numbers. Nothing is allocated per event (only when a new acyclic path is met, and batches
//! between threads are recycled); 10^8 block events take about a second in release. All
//! randomness is SplitMix64, so a seed gives the same program and trace on every platform.

use crate::event::Event;
use crate::ids::{BlockId, FunctionId, PathId, ThreadId};
use crate::program::{Function, ProgramDb};
use rustc_hash::FxHashMap;
use std::convert::Infallible;
use std::sync::mpsc::{Receiver, Sender, SyncSender};

/// Which vocabulary a synthetic trace uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TraceKind {
    /// `F`, `B`, `E` block traces.
    Blocks,
    /// `F`, `P`, `E` acyclic-path traces.
    Paths,
}

/// SplitMix64 (Steele, Lea and Flood 2014): tiny, fast, and good enough for test data.
#[derive(Clone, Debug)]
struct SplitMix64(u64);

impl SplitMix64 {
    #[inline]
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    #[inline]
    fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// Uniform in `0..n` (n > 0), by multiply-shift.
    #[inline]
    fn below(&mut self, n: u32) -> u32 {
        ((u64::from(self.next_u32()) * u64::from(n)) >> 32) as u32
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u32) as usize]
    }
}

/// A probability as a threshold on a uniform `u32`.
fn prob(p: f64) -> u32 {
    (p * f64::from(u32::MAX)) as u32
}

/// How many times a loop body runs: `lo + uniform(0..=span)`.
#[derive(Clone, Copy, Debug)]
struct Trips {
    lo: u32,
    span: u32,
}

impl Trips {
    fn mean(self) -> f64 {
        f64::from(self.lo) + f64::from(self.span) / 2.0
    }
}

/// A statement of a synthetic function. Every statement starts with a block of its own.
#[derive(Clone, Debug)]
enum Stmt {
    Block(u32),
    /// `header` is tested `trips + 1` times; each trip runs `body` and takes the back edge.
    Loop {
        header: u32,
        trips: Trips,
        body: Vec<Stmt>,
    },
    If {
        cond: u32,
        p_then: u32,
        then: Vec<Stmt>,
        els: Vec<Stmt>,
    },
    /// Arm `i` is taken when a uniform `u32` falls below `cumulative[i]` (and not below the
    /// previous threshold).
    Switch {
        head: u32,
        cumulative: Vec<u32>,
        arms: Vec<Vec<Stmt>>,
    },
    Call {
        block: u32,
        callee: u32,
    },
    /// Calls its own function with probability `p` while fewer than `max_depth` activations
    /// of it are live.
    Recurse {
        block: u32,
        p: u32,
        max_depth: u32,
    },
}

/// The most events one invocation of a non-`main` function is expected to emit.
const COST_CAP: f64 = 3000.0;
/// Calls beyond this depth are skipped (their call block still executes).
const MAX_CALL_DEPTH: u32 = 200;
/// Names for synthetic functions, suffixed with the id.
const WORDS: [&str; 12] = [
    "parse", "eval", "lookup", "hash", "scan", "emit", "sort", "visit", "alloc", "check", "update",
    "read",
];

/// Generates one function body, tracking block ids and the expected cost.
struct BodyGen<'a> {
    rng: &'a mut SplitMix64,
    /// Expected events per invocation of each function already generated (higher ids).
    costs: &'a [f64],
    fid: u32,
    nfuncs: u32,
    blocks: u32,
    /// Whether the body already recurses: one recursive call site per function keeps the
    /// recursion linear, so its cost stays bounded.
    recursive: bool,
}

impl BodyGen<'_> {
    fn block(&mut self) -> u32 {
        self.blocks += 1;
        self.blocks - 1
    }

    /// A statement list of 1..=4 statements nested `depth` deep, with its expected cost.
    fn stmts(&mut self, depth: u32) -> (Vec<Stmt>, f64) {
        let n = 1 + self.rng.below(4);
        let mut out = Vec::with_capacity(n as usize);
        let mut cost = 0.0;
        for _ in 0..n {
            let (s, c) = self.stmt(depth);
            out.push(s);
            cost += c;
        }
        (out, cost)
    }

    fn stmt(&mut self, depth: u32) -> (Stmt, f64) {
        let can_call = self.fid + 1 < self.nfuncs;
        let nest = depth < 3;
        match self.rng.below(100) {
            0..=19 if nest => self.loop_stmt(depth),
            20..=39 if nest => self.if_stmt(depth),
            40..=46 if nest => self.switch_stmt(depth),
            47..=66 if can_call => self.call_stmt(),
            67..=69 if depth == 0 && !self.recursive => self.recurse_stmt(),
            _ => (Stmt::Block(self.block()), 1.0),
        }
    }

    fn loop_stmt(&mut self, depth: u32) -> (Stmt, f64) {
        let header = self.block();
        let lo = self.rng.pick(&[1, 2, 3, 4, 4, 8, 8, 10, 16, 32, 64, 100]);
        let span = if self.rng.below(2) == 0 { 0 } else { lo / 2 };
        let trips = Trips { lo, span };
        let (body, c) = self.stmts(depth + 1);
        let t = trips.mean();
        let cost = t + 1.0 + t * (c + 1.0);
        (
            Stmt::Loop {
                header,
                trips,
                body,
            },
            cost,
        )
    }

    fn if_stmt(&mut self, depth: u32) -> (Stmt, f64) {
        let cond = self.block();
        let p = self
            .rng
            .pick(&[0.5, 0.7, 0.9, 0.95, 0.99, 0.999, 0.3, 0.1, 0.01]);
        let (then, ct) = self.stmts(depth + 1);
        let (els, ce) = if self.rng.below(3) == 0 {
            (Vec::new(), 0.0)
        } else {
            self.stmts(depth + 1)
        };
        let cost = 1.0 + p * ct + (1.0 - p) * ce;
        let s = Stmt::If {
            cond,
            p_then: prob(p),
            then,
            els,
        };
        (s, cost)
    }

    fn switch_stmt(&mut self, depth: u32) -> (Stmt, f64) {
        let head = self.block();
        let n = 3 + self.rng.below(4) as usize;
        // Zipf weights 1/1, 1/2, …, 1/n.
        let total: f64 = (1..=n).map(|i| 1.0 / i as f64).sum();
        let (mut acc, mut cost) = (0.0, 1.0);
        let (mut cumulative, mut arms) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for i in 1..=n {
            let w = 1.0 / i as f64 / total;
            acc += w;
            cumulative.push(if i == n { u32::MAX } else { prob(acc) });
            let (arm, c) = self.stmts(depth + 1);
            cost += w * c;
            arms.push(arm);
        }
        let s = Stmt::Switch {
            head,
            cumulative,
            arms,
        };
        (s, cost)
    }

    fn call_stmt(&mut self) -> (Stmt, f64) {
        let block = self.block();
        // Prefer near callees, so call chains are deep rather than all leaves.
        let range = self.nfuncs - self.fid - 1;
        let reach = 1 + self.rng.below(range);
        let callee = self.fid + 1 + self.rng.below(reach);
        let cost = 3.0 + self.costs[callee as usize];
        (Stmt::Call { block, callee }, cost)
    }

    fn recurse_stmt(&mut self) -> (Stmt, f64) {
        self.recursive = true;
        let block = self.block();
        let p = self.rng.pick(&[0.3, 0.5, 0.6]);
        let max_depth = 2 + self.rng.below(5);
        // The recursive part is accounted for by the caller: see `function`.
        let s = Stmt::Recurse {
            block,
            p: prob(p),
            max_depth,
        };
        (s, 1.0)
    }
}

/// A generated program: its database and one statement tree per function.
#[derive(Clone, Debug)]
pub struct SynthProgram {
    db: ProgramDb,
    bodies: Vec<Vec<Stmt>>,
    seed: u64,
}

impl SynthProgram {
    /// Generates the program for `seed`.
    pub fn generate(seed: u64) -> Self {
        let mut rng = SplitMix64(seed);
        let n = 10 + rng.below(91);
        let mut bodies = vec![Vec::new(); n as usize];
        let mut costs = vec![0.0; n as usize];
        let mut blocks = vec![0; n as usize];
        for fid in (1..n).rev() {
            let i = fid as usize;
            let (body, cost, nblocks) = function(&mut rng, &costs, fid, n);
            bodies[i] = body;
            costs[i] = cost;
            blocks[i] = nblocks;
        }
        let (main, nblocks) = main_body(&mut rng, n);
        bodies[0] = main;
        blocks[0] = nblocks;
        SynthProgram {
            db: database(&blocks),
            bodies,
            seed,
        }
    }

    /// The program database: one function per body, with synthetic names and source lines.
    pub fn program(&self) -> &ProgramDb {
        &self.db
    }

    /// Streams exactly `events` events of a `kind` trace to `sink`, stopping at the first
    /// error the sink returns. This is thread 0 of [`run_threads`](Self::run_threads).
    pub fn run<E>(
        &self,
        kind: TraceKind,
        events: u64,
        sink: impl FnMut(Event) -> Result<(), E>,
    ) -> Result<(), E> {
        self.run_as_thread(0, kind, events, sink)
    }

    /// Like [`run`](Self::run), for the run that thread `thread` of
    /// [`run_threads`](Self::run_threads) performs, alone: same decisions, but path ids are
    /// numbered in this stream's order of first appearance.
    pub fn run_as_thread<E>(
        &self,
        thread: u32,
        kind: TraceKind,
        events: u64,
        mut sink: impl FnMut(Event) -> Result<(), E>,
    ) -> Result<(), E> {
        if events == 0 {
            return Ok(());
        }
        let mut shaper = Shaper::new(kind, self.bodies.len());
        let mut node = PathTable::ROOT;
        let mut left = events;
        self.interpret(thread, kind, |raw| {
            if let Some(e) = shaper.shape(&mut node, raw) {
                sink(e).map_err(Stop::Sink)?;
                left -= 1;
                if left == 0 {
                    return Err(Stop::Done);
                }
            }
            Ok(())
        })
    }

    /// Streams exactly `events` events of a `threads`-thread run: each thread runs the program
    /// with its own decisions (thread `t` as in [`run_as_thread`](Self::run_as_thread)), and a
    /// seeded scheduler interleaves them in quanta of 1 to [`QUANTUM`] events, emitting
    /// `Thread(t)` at each switch (and counting it as an event). Path ids are shared by all
    /// threads, numbered in order of first appearance in the interleaved trace.
    ///
    /// Each thread is interpreted on its own OS thread, feeding the scheduler batches of
    /// steps; the output depends only on the seed, not on how the OS schedules them.
    pub fn run_threads<E>(
        &self,
        kind: TraceKind,
        events: u64,
        threads: u32,
        sink: impl FnMut(Event) -> Result<(), E>,
    ) -> Result<(), E> {
        if threads <= 1 {
            return self.run(kind, events, sink);
        }
        std::thread::scope(|scope| {
            let feeds = (0..threads)
                .map(|t| {
                    let (tx, rx) = std::sync::mpsc::sync_channel(2);
                    let (free_tx, free_rx) = std::sync::mpsc::channel();
                    scope.spawn(move || self.produce(t, kind, &tx, &free_rx));
                    Feed {
                        rx,
                        free: free_tx,
                        batch: Vec::new(),
                        pos: 0,
                    }
                })
                .collect();
            // `interleave` consumes the feeds; dropping them stops the producers, so the
            // scope's join cannot wait forever.
            self.interleave(kind, events, feeds, sink)
        })
    }

    /// All `events` events of a `kind` trace, in memory (for tests).
    pub fn events(&self, kind: TraceKind, events: u64) -> Vec<Event> {
        let mut out = Vec::new();
        let pushed: Result<(), Infallible> = self.run(kind, events, |e| {
            out.push(e);
            Ok(())
        });
        match pushed {
            Ok(()) => out,
            Err(never) => match never {},
        }
    }

    /// Interprets the program as thread `thread` until `sink` stops it; `main` is entered
    /// again whenever it returns.
    fn interpret<E>(
        &self,
        thread: u32,
        kind: TraceKind,
        sink: impl FnMut(Raw) -> Step<E>,
    ) -> Result<(), E> {
        let seed = self.seed ^ 0x5eed_5eed_5eed_5eed ^ u64::from(thread).wrapping_mul(GOLDEN);
        let mut interp = Interp {
            prog: self,
            kind,
            rng: SplitMix64(seed),
            sink,
            active: vec![0; self.bodies.len()],
            depth: 0,
        };
        loop {
            match interp.call(0) {
                Ok(()) => {}
                Err(Stop::Done) => return Ok(()),
                Err(Stop::Sink(e)) => return Err(e),
            }
        }
    }

    /// Runs thread `t`, sending its steps in batches until the receiver hangs up.
    fn produce(
        &self,
        t: u32,
        kind: TraceKind,
        tx: &SyncSender<Vec<Raw>>,
        free: &Receiver<Vec<Raw>>,
    ) {
        let mut batch = Vec::with_capacity(RAW_BATCH);
        let stopped: Result<(), Infallible> = self.interpret(t, kind, |raw| {
            batch.push(raw);
            if batch.len() == RAW_BATCH {
                // Reuse a batch the scheduler has finished with, so steady state allocates
                // nothing.
                let next = free
                    .try_recv()
                    .unwrap_or_else(|_| Vec::with_capacity(RAW_BATCH));
                let full = std::mem::replace(&mut batch, next);
                tx.send(full).map_err(|_| Stop::Done)?;
            }
            Ok(())
        });
        match stopped {
            Ok(()) => {}
            Err(never) => match never {},
        }
    }

    /// The scheduler of [`run_threads`](Self::run_threads).
    fn interleave<E>(
        &self,
        kind: TraceKind,
        events: u64,
        mut feeds: Vec<Feed>,
        mut sink: impl FnMut(Event) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut shaper = Shaper::new(kind, self.bodies.len());
        let mut nodes = vec![PathTable::ROOT; feeds.len()];
        let mut rng = SplitMix64(self.seed ^ 0x5c4e_d01e_5c4e_d01e);
        let (mut current, mut left) = (0, events);
        while left > 0 {
            let next = rng.below(feeds.len() as u32) as usize;
            if next != current {
                sink(Event::Thread(ThreadId(next as u32)))?;
                left -= 1;
                current = next;
            }
            let mut quantum = 1 + rng.below(QUANTUM);
            while quantum > 0 && left > 0 {
                let raw = feeds[current].next();
                if let Some(e) = shaper.shape(&mut nodes[current], raw) {
                    sink(e)?;
                    left -= 1;
                    quantum -= 1;
                }
            }
        }
        Ok(())
    }
}

/// The longest quantum of [`SynthProgram::run_threads`]'s scheduler, in events.
pub const QUANTUM: u32 = 4096;
/// Steps per batch sent from a thread's interpreter to the scheduler.
const RAW_BATCH: usize = 4096;
/// 2^64 / φ, to spread thread numbers over seeds.
const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// The scheduler's end of one thread's batches.
struct Feed {
    rx: Receiver<Vec<Raw>>,
    free: Sender<Vec<Raw>>,
    batch: Vec<Raw>,
    pos: usize,
}

impl Feed {
    /// The thread's next step, waiting for its interpreter if need be.
    #[inline]
    fn next(&mut self) -> Raw {
        if self.pos == self.batch.len() {
            let mut used = std::mem::take(&mut self.batch);
            used.clear();
            // The producer may have stopped taking batches back; that is harmless.
            let _ = self.free.send(used);
            // Producers run until their receiver is dropped, so this fails only if one
            // panicked, and the scope re-raises that panic.
            self.batch = self
                .rx
                .recv()
                .expect("a synthetic thread's interpreter died");
            self.pos = 0;
        }
        let raw = self.batch[self.pos];
        self.pos += 1;
        raw
    }
}

/// Generates function `fid`, retrying until its expected cost is under [`COST_CAP`].
fn function(rng: &mut SplitMix64, costs: &[f64], fid: u32, n: u32) -> (Vec<Stmt>, f64, u32) {
    let mut attempt = 0;
    loop {
        let mut g = BodyGen {
            rng,
            costs,
            fid,
            nfuncs: n,
            blocks: 0,
            recursive: false,
        };
        let entry = Stmt::Block(g.block());
        // Later attempts start deeper, so they nest less: the retry loop converges.
        let (mut body, inner) = g.stmts(attempt.min(3));
        let exit = Stmt::Block(g.block());
        body.insert(0, entry);
        body.push(exit);
        // One top-level recursive call with probability p ≤ 0.6 makes the expected cost a
        // geometric series: at most 1 / (1 - p) = 2.5 times one activation's.
        let recursion = if g.recursive { 2.5 } else { 1.0 };
        let cost = (inner + 2.0) * recursion;
        // From the fourth attempt bodies are flat, so a cheap one comes up quickly.
        if cost <= COST_CAP || attempt >= 3 && inner <= 4.0 {
            return (body, cost, g.blocks);
        }
        attempt += 1;
    }
}

/// `main`: an entry block, then a practically endless dispatch loop over up to sixteen other
/// functions with Zipf-skewed frequencies.
fn main_body(rng: &mut SplitMix64, n: u32) -> (Vec<Stmt>, u32) {
    let targets = (n - 1).min(16);
    let total: f64 = (1..=targets).map(|i| 1.0 / f64::from(i)).sum();
    let mut next_block = 3;
    let mut acc = 0.0;
    let (mut cumulative, mut arms) = (Vec::new(), Vec::new());
    for i in 1..=targets {
        acc += 1.0 / f64::from(i) / total;
        cumulative.push(if i == targets { u32::MAX } else { prob(acc) });
        let callee = 1 + rng.below(n - 1);
        arms.push(vec![Stmt::Call {
            block: next_block,
            callee,
        }]);
        next_block += 1;
    }
    let dispatch = Stmt::Switch {
        head: 2,
        cumulative,
        arms,
    };
    let driver = Stmt::Loop {
        header: 1,
        trips: Trips {
            lo: u32::MAX,
            span: 0,
        },
        body: vec![dispatch],
    };
    let exit = Stmt::Block(next_block);
    (vec![Stmt::Block(0), driver, exit], next_block + 1)
}

fn database(blocks: &[u32]) -> ProgramDb {
    let mut line = 1;
    let functions = blocks
        .iter()
        .enumerate()
        .map(|(i, &nb)| {
            let name = match i {
                0 => "main".to_owned(),
                _ => format!("{}_{i}", WORDS[i % WORDS.len()]),
            };
            let f = Function {
                name,
                file: Some("synth.c".to_owned()),
                line: Some(line),
                block_lines: (0..nb).map(|b| line + 1 + b).collect(),
                ..Function::default()
            };
            line += nb + 3;
            f
        })
        .collect();
    ProgramDb {
        functions,
        ..ProgramDb::default()
    }
}

/// Dense ids for the distinct block sequences of one function, in order of first appearance.
///
/// A trie over block ids: node 0 is the empty sequence and `children[(node, block)]` extends
/// it by one block, so following a path costs one hash probe per block and the sequence is
/// never stored or compared; `ids[node]` is the id of the sequence ending at `node`, if it
/// has been emitted.
struct PathTable {
    children: FxHashMap<u64, u32>,
    ids: Vec<u64>,
    next: u64,
}

impl PathTable {
    const ROOT: u32 = 0;
    const UNNUMBERED: u64 = u64::MAX;

    fn new() -> Self {
        PathTable {
            children: FxHashMap::default(),
            ids: vec![Self::UNNUMBERED],
            next: 0,
        }
    }

    /// The node for `node`'s sequence followed by `block`.
    #[inline]
    fn step(&mut self, node: u32, block: u32) -> u32 {
        let fresh = self.ids.len() as u32;
        let child = *self
            .children
            .entry(u64::from(node) << 32 | u64::from(block))
            .or_insert(fresh);
        if child == fresh {
            self.ids.push(Self::UNNUMBERED);
        }
        child
    }

    /// The id of the sequence ending at `node`, numbering it if new.
    #[inline]
    fn id(&mut self, node: u32) -> u64 {
        let id = &mut self.ids[node as usize];
        if *id == Self::UNNUMBERED {
            *id = self.next;
            self.next += 1;
        }
        *id
    }
}

/// Why interpretation stopped early.
enum Stop<E> {
    /// The requested number of events was emitted.
    Done,
    /// The sink failed.
    Sink(E),
}

type Step<E> = Result<(), Stop<E>>;

/// One step of an interpreted thread, before it is shaped into a block or path event.
#[derive(Clone, Copy, Debug)]
enum Raw {
    Enter(u32),
    Leave,
    /// Block `b` of function `f`.
    Block {
        f: u32,
        b: u32,
    },
    /// A path boundary in function `f` (loop back edge, call site or return).
    Boundary {
        f: u32,
    },
}

/// Turns raw steps into events of one vocabulary, numbering paths for every thread at once.
struct Shaper {
    kind: TraceKind,
    /// Per function: the distinct acyclic paths seen, with their dense ids.
    paths: Vec<PathTable>,
}

impl Shaper {
    fn new(kind: TraceKind, functions: usize) -> Self {
        Shaper {
            kind,
            paths: (0..functions).map(|_| PathTable::new()).collect(),
        }
    }

    /// The event for `raw`, if it makes one; `node` is the path under way in `raw`'s thread.
    #[inline(always)]
    fn shape(&mut self, node: &mut u32, raw: Raw) -> Option<Event> {
        match (self.kind, raw) {
            (_, Raw::Enter(f)) => Some(Event::Enter(FunctionId(f))),
            (_, Raw::Leave) => Some(Event::Leave),
            (TraceKind::Blocks, Raw::Block { b, .. }) => Some(Event::Block(BlockId(b))),
            (TraceKind::Blocks, Raw::Boundary { .. }) => None,
            (TraceKind::Paths, Raw::Block { f, b }) => {
                *node = self.paths[f as usize].step(*node, b);
                None
            }
            (TraceKind::Paths, Raw::Boundary { f }) => {
                if *node == PathTable::ROOT {
                    return None;
                }
                let id = self.paths[f as usize].id(*node);
                *node = PathTable::ROOT;
                Some(Event::Path(PathId(id)))
            }
        }
    }
}

/// Executes a [`SynthProgram`] as one thread, emitting raw steps.
struct Interp<'p, S> {
    prog: &'p SynthProgram,
    kind: TraceKind,
    rng: SplitMix64,
    sink: S,
    /// Live activations per function, bounding recursion.
    active: Vec<u32>,
    depth: u32,
}

impl<E, S: FnMut(Raw) -> Step<E>> Interp<'_, S> {
    /// Block `b` of function `f` executes.
    #[inline]
    fn block(&mut self, f: u32, b: u32) -> Step<E> {
        (self.sink)(Raw::Block { f, b })
    }

    /// A path boundary in function `f` (only block traces do without them).
    #[inline]
    fn end_path(&mut self, f: u32) -> Step<E> {
        match self.kind {
            TraceKind::Blocks => Ok(()),
            TraceKind::Paths => (self.sink)(Raw::Boundary { f }),
        }
    }

    fn call(&mut self, f: u32) -> Step<E> {
        (self.sink)(Raw::Enter(f))?;
        self.active[f as usize] += 1;
        self.depth += 1;
        let prog = self.prog;
        self.exec(f, &prog.bodies[f as usize])?;
        self.end_path(f)?;
        self.depth -= 1;
        self.active[f as usize] -= 1;
        (self.sink)(Raw::Leave)
    }

    /// A call site in `f`: the path up to the call ends before the callee's paths.
    fn call_site(&mut self, f: u32, block: u32, callee: u32) -> Step<E> {
        self.block(f, block)?;
        if self.depth >= MAX_CALL_DEPTH {
            return Ok(());
        }
        self.end_path(f)?;
        self.call(callee)
    }

    fn exec(&mut self, f: u32, stmts: &[Stmt]) -> Step<E> {
        for s in stmts {
            match s {
                Stmt::Block(b) => self.block(f, *b)?,
                Stmt::Loop {
                    header,
                    trips,
                    body,
                } => {
                    let n = match trips.span {
                        0 => trips.lo,
                        s => trips.lo + self.rng.below(s + 1),
                    };
                    for _ in 0..n {
                        self.block(f, *header)?;
                        self.exec(f, body)?;
                        self.end_path(f)?; // the back edge
                    }
                    self.block(f, *header)?;
                }
                Stmt::If {
                    cond,
                    p_then,
                    then,
                    els,
                } => {
                    self.block(f, *cond)?;
                    let arm = if self.rng.next_u32() < *p_then {
                        then
                    } else {
                        els
                    };
                    self.exec(f, arm)?;
                }
                Stmt::Switch {
                    head,
                    cumulative,
                    arms,
                } => {
                    self.block(f, *head)?;
                    let r = self.rng.next_u32();
                    let i = cumulative.partition_point(|&c| c <= r).min(arms.len() - 1);
                    self.exec(f, &arms[i])?;
                }
                Stmt::Call { block, callee } => self.call_site(f, *block, *callee)?,
                Stmt::Recurse {
                    block,
                    p,
                    max_depth,
                } => {
                    if self.active[f as usize] < *max_depth && self.rng.next_u32() < *p {
                        self.call_site(f, *block, f)?;
                    } else {
                        self.block(f, *block)?;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_the_reference_sequence() {
        // First outputs of SplitMix64 seeded with 1234567 (from the reference C code).
        let mut r = SplitMix64(1234567);
        assert_eq!(r.next_u64(), 6457827717110365317);
        assert_eq!(r.next_u64(), 3203168211198807973);
    }

    #[test]
    fn programs_have_10_to_100_functions_with_main_first() {
        for seed in 0..50 {
            let p = SynthProgram::generate(seed);
            assert!(p.bodies.len() >= 10 && p.bodies.len() <= 100);
            assert_eq!(p.db.functions.len(), p.bodies.len());
            assert_eq!(p.db.functions[0].name, "main");
        }
    }
}
