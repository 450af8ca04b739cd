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
//! The interpreter allocates only when it meets a new acyclic path; per event it walks the
//! statement tree and calls the sink, so 10^8 events take on the order of a second in release.
//! Generation and interpretation use SplitMix64, so a seed gives the same program and trace on
//! every platform.

use crate::event::Event;
use crate::ids::{BlockId, FunctionId, PathId};
use crate::program::{Function, ProgramDb};
use rustc_hash::FxHashMap;
use std::convert::Infallible;

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
    /// error the sink returns.
    pub fn run<E>(
        &self,
        kind: TraceKind,
        events: u64,
        sink: impl FnMut(Event) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut interp = Interp {
            prog: self,
            kind,
            rng: SplitMix64(self.seed ^ 0x5eed_5eed_5eed_5eed),
            left: events,
            sink,
            node: PathTable::ROOT,
            paths: (0..self.bodies.len()).map(|_| PathTable::new()).collect(),
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
            };
            line += nb + 3;
            f
        })
        .collect();
    ProgramDb { functions }
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

/// Executes a [`SynthProgram`], emitting events.
struct Interp<'p, S> {
    prog: &'p SynthProgram,
    kind: TraceKind,
    rng: SplitMix64,
    left: u64,
    sink: S,
    /// The acyclic path under way, as a node of its function's trie (path traces only).
    node: u32,
    /// Per function: the distinct acyclic paths seen, with their dense ids.
    paths: Vec<PathTable>,
    /// Live activations per function, bounding recursion.
    active: Vec<u32>,
    depth: u32,
}

impl<E, S: FnMut(Event) -> Result<(), E>> Interp<'_, S> {
    #[inline]
    fn emit(&mut self, e: Event) -> Step<E> {
        if self.left == 0 {
            return Err(Stop::Done);
        }
        self.left -= 1;
        (self.sink)(e).map_err(Stop::Sink)
    }

    /// Block `b` of function `f` executes.
    #[inline]
    fn block(&mut self, f: u32, b: u32) -> Step<E> {
        match self.kind {
            TraceKind::Blocks => self.emit(Event::Block(BlockId(b))),
            TraceKind::Paths => {
                self.node = self.paths[f as usize].step(self.node, b);
                Ok(())
            }
        }
    }

    /// A path boundary in function `f`: emits the path under way, if any.
    fn end_path(&mut self, f: u32) -> Step<E> {
        if self.node == PathTable::ROOT {
            return Ok(());
        }
        let id = self.paths[f as usize].id(self.node);
        self.node = PathTable::ROOT;
        self.emit(Event::Path(PathId(id)))
    }

    fn call(&mut self, f: u32) -> Step<E> {
        self.emit(Event::Enter(FunctionId(f)))?;
        self.active[f as usize] += 1;
        self.depth += 1;
        let prog = self.prog;
        self.exec(f, &prog.bodies[f as usize])?;
        self.end_path(f)?;
        self.depth -= 1;
        self.active[f as usize] -= 1;
        self.emit(Event::Leave)
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
