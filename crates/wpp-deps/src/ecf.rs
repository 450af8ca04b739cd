//! The extended control-flow trace (eCF) of Tallam and Gupta (§2–3): the block trace of a run
//! with the control flow of the dependence checks appended as ordinary block events, so that
//! every dynamic memory dependence can be recovered from control flow alone (§5), and every
//! compressor and query handles it unchanged.
//!
//! [`build`] produces the eCF the collection run (`--mode ewpp`, not built yet) would record,
//! from a `trace-addr` recording (block trace + AT) and the filtering phase's
//! [`FilterReport`]; [`recover`] gets the dependences back from the eCF alone (with the memory
//! database and the report, which the recovery of the paper also knows).
//!
//! # Timestamps (§3.3, Figure 18)
//!
//! Every event of the eCF has a timestamp: its position, from 1. `TS(n)` of a block `n`
//! (function and block id) is the list of timestamps at which it ran. The buffer of store `d`
//! (§3.3–3.4, Figure 12) holds the timestamps of `d`'s instances in ascending order; it is a
//! `Vec`, which grows by doubling and never loses an entry. The last-writer table (§3.2,
//! Figure 10, byte-granular: [`LastWriter`](crate::LastWriter)) gives each byte a load reads
//! its writer instance, so only that store's check runs, once per distinct writer.
//!
//! # Whole blocks
//!
//! A store's instance `k` ran in the `k`-th execution of its block (the instrumenter numbers
//! a block's memory instructions in order, and [`build`] checks that every block execution
//! ran all of them, in order, before its function went on: a block left half-way — `longjmp`,
//! an exception — is an error, never a wrong instance). So the search array of store `d` is
//! `TS(block(d))` up to the check, which recovery rebuilds from the eCF; the target is the
//! timestamp of the writer's block execution.
//!
//! # Alignment
//!
//! The AT does not mark calls, so [`build`] places each access in the block trace greedily:
//! it belongs to the innermost open function's current block if it is that block's next
//! memory instruction, else it comes after the next event. This is exact unless a block calls
//! its own function (recursion) before its next memory instruction and the callee starts with
//! that same block: then the access is given to the caller, and the callee's block comes up
//! short, which is reported as an error (no eCF), not a wrong one. Call markers in the AT
//! (the collection mode knows its calls) would remove this limit.
//!
//! # Encoding (one check call per load instance and distinct writing store)
//!
//! The shared check routine (§3.2, Figure 11) is the synthetic function [`check_function`]
//! (one past the program's last function id). A call appears in the eCF right where
//! the load ran (after the block events and calls that preceded it), as:
//!
//! | event | meaning |
//! |---|---|
//! | `F check` | the call (Figure 11) |
//! | `B` [`site`]`(u)` | the call site: which load `u` (the paper's caller block) |
//! | `B` [`UNEXPECTED`] | only if the filtering run did not see the pair `(d, u)` (§3.1) |
//! | `B` [`source`]`(d)` | the source store `d` (`C_d`, Figure 5 / Figure 17) |
//! | `B` [`LAST`] | fixed cost (Figure 5's `C_d^T`): the writer is `d`'s latest instance |
//! | or `B` [`LOWER`] / `B` [`HIGHER`] … `B` [`END`] | the binary search (Figure 13): each comparison that misses is `B0` (the target is below `mid`) or `B1`, the hit is `E` |
//! | `E` | the return |
//!
//! Classes (§2.1–2.3, Definitions 1–4): a pair whose store wrote one address (fully free,
//! partially free, last-instance) is encoded with the fixed-cost `LAST` when the writer is
//! `d`'s latest instance by the block timestamps; any-instance pairs, unexpected pairs and the
//! rare case where a store's block is still open on the call stack take the search. The paper
//! records no check at all for no-cost pairs because its CFG places the use relative to every
//! definition; a block trace does not place a load relative to the calls in its block, so a
//! no-cost dependence costs the constant `F site source LAST E` here.
//!
//! Checks per dependence (Table IX): the search's comparisons (the `B0`/`B1` blocks plus the
//! hit, 1 for `LAST`), against the linear scan from the buffer's tail (Figure 8).

use crate::at::Access;
use crate::filter::{Class, FilterReport};
use crate::lastwriter::{Instance, Writer};
use crate::memdb::{AccessKind, MemoryDb};
use crate::recover::{RecoverError, Recovery};
use rustc_hash::FxHashMap;
use serde::Serialize;
use wpp_trace::{BlockId, Event, FunctionId};

/// Binary search: the target is below `mid` (`B0` of Figure 13).
pub const LOWER: u32 = 0;
/// Binary search: the target is above `mid` (`B1`).
pub const HIGHER: u32 = 1;
/// Binary search: found (`E`, the end marker).
pub const END: u32 = 2;
/// Fixed-cost hit: the writer is the source's latest instance (Figure 5's `C_d^T`).
pub const LAST: u32 = 3;
/// The filtering run did not exercise this pair (§3.1).
pub const UNEXPECTED: u32 = 4;

/// The block naming load `u` as the call site.
pub fn site(u: u32) -> BlockId {
    BlockId(8 + 2 * u)
}

/// The block naming store `d` as the source (`C_d`).
pub fn source(d: u32) -> BlockId {
    BlockId(9 + 2 * d)
}

/// The synthetic check routine's function id: one past the program's functions (and past
/// every function a memory instruction names).
pub fn check_function(db: &MemoryDb) -> FunctionId {
    let named = db.instructions.iter().map(|i| i.function + 1).max();
    FunctionId(named.unwrap_or(0).max(db.program.functions.len() as u32))
}

/// Why an eCF could not be built or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EcfError {
    /// The AT could not be replayed.
    #[error(transparent)]
    Recover(#[from] RecoverError),
    /// The block trace and the AT do not fit together.
    #[error("block trace event {event}: {message}")]
    Misaligned {
        /// The event's position (from 0) in the block trace.
        event: u64,
        /// What does not fit.
        message: String,
    },
    /// The eCF is not what [`build`] writes.
    #[error("eCF event {event}: {message}")]
    Malformed {
        /// The event's position (from 0).
        event: u64,
        /// What is wrong.
        message: String,
    },
}

/// The checks of an eCF (Table IX).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CheckStats {
    /// Check calls (one per dynamic dependence on a program store).
    pub dependences: u64,
    /// Of which took the fixed-cost `LAST`.
    pub fixed: u64,
    /// Of which were not exercised in the filtering run.
    pub unexpected: u64,
    /// Address comparisons with binary search.
    pub binary: u64,
    /// Address comparisons a linear scan from the newest entry would take.
    pub linear: u64,
    /// The most comparisons one binary search took.
    pub max_binary: u64,
}

/// A built eCF.
pub struct Ecf {
    /// The events.
    pub events: Vec<Event>,
    /// Its checks.
    pub stats: CheckStats,
}

type Node = (u32, u32);

/// One open function of the replay.
struct Frame {
    function: u32,
    /// The current block and its timestamp.
    block: Option<(u32, u64)>,
    /// How many of the current block's memory instructions ran.
    ran: usize,
}

/// Per block: its memory instructions, in order.
fn block_instructions(db: &MemoryDb) -> FxHashMap<Node, Vec<u32>> {
    let mut m: FxHashMap<Node, Vec<u32>> = FxHashMap::default();
    for (id, i) in db.instructions.iter().enumerate() {
        m.entry((i.function, i.block)).or_default().push(id as u32);
    }
    m
}

/// The binary search of Figure 13 for `target` in `a` (ascending); its outcomes and the
/// 1-based index found, or `None` when absent.
fn search(a: &[u64], target: u64) -> Option<(Vec<u32>, usize)> {
    let (mut bot, mut top) = (1usize, a.len());
    let mut path = Vec::new();
    while bot <= top {
        let mid = (bot + top) / 2;
        match target.cmp(&a[mid - 1]) {
            std::cmp::Ordering::Equal => return Some((path, mid)),
            std::cmp::Ordering::Less => {
                path.push(LOWER);
                top = mid - 1;
            }
            std::cmp::Ordering::Greater => {
                path.push(HIGHER);
                bot = mid + 1;
            }
        }
    }
    None
}

struct Builder<'a> {
    db: &'a MemoryDb,
    classes: FxHashMap<(u32, u32), Class>,
    blocks: FxHashMap<Node, Vec<u32>>,
    recovery: Recovery<'a>,
    out: Vec<Event>,
    frames: Vec<Frame>,
    ts: FxHashMap<Node, Vec<u64>>,
    /// Per store: the timestamps of its instances (its buffer).
    buffers: Vec<Vec<u64>>,
    stats: CheckStats,
    check: FunctionId,
    /// The one thread the trace may name.
    thread: Option<wpp_trace::ThreadId>,
}

/// Builds the eCF of a run: `events` is its block trace (one thread), `accesses` its AT.
pub fn build<E>(
    db: &MemoryDb,
    events: &[Event],
    accesses: impl IntoIterator<Item = Result<Vec<Access>, E>>,
    report: &FilterReport,
) -> Result<Ecf, EcfError>
where
    RecoverError: From<E>,
{
    let mut b = Builder {
        db,
        classes: report
            .pairs
            .iter()
            .map(|p| ((p.store, p.load), p.class))
            .collect(),
        blocks: block_instructions(db),
        recovery: Recovery::new(db),
        out: Vec::with_capacity(events.len()),
        frames: Vec::new(),
        ts: FxHashMap::default(),
        buffers: vec![Vec::new(); db.instructions.len()],
        stats: CheckStats::default(),
        check: check_function(db),
        thread: None,
    };
    let mut pending = std::collections::VecDeque::new();
    let mut chunks = accesses.into_iter();
    let mut next_access = |pending: &mut std::collections::VecDeque<Access>| {
        while pending.is_empty() {
            match chunks.next() {
                None => return Ok(None),
                Some(c) => pending.extend(c.map_err(RecoverError::from)?),
            }
        }
        Ok::<_, RecoverError>(pending.front().copied())
    };
    for (i, &e) in events.iter().enumerate() {
        b.event(i as u64, e)?;
        while let Some(a) = next_access(&mut pending)? {
            if !b.expects(a.id) {
                break;
            }
            pending.pop_front();
            b.access(a)?;
        }
    }
    if let Some(a) = next_access(&mut pending)? {
        return Err(EcfError::Misaligned {
            event: events.len() as u64,
            message: format!(
                "the trace ends but the AT goes on with an access of instruction {} ({})",
                a.id,
                db.location(a.id)
            ),
        });
    }
    Ok(Ecf {
        events: b.out,
        stats: b.stats,
    })
}

impl Builder<'_> {
    fn misaligned(&self, event: u64, message: String) -> EcfError {
        EcfError::Misaligned { event, message }
    }

    /// Ends the top frame's current block: it must have run all its memory instructions.
    fn close_block(&mut self, event: u64) -> Result<(), EcfError> {
        let Some(f) = self.frames.last() else {
            return Ok(());
        };
        if let Some((b, _)) = f.block {
            let want = self.blocks.get(&(f.function, b)).map_or(0, Vec::len);
            if f.ran != want {
                let (func, ran) = (f.function, f.ran);
                return Err(self.misaligned(event, format!(
                    "block {b} of function {func} ran {ran} of its {want} memory instructions (the eCF needs whole blocks)"
                )));
            }
        }
        Ok(())
    }

    fn event(&mut self, i: u64, e: Event) -> Result<(), EcfError> {
        match e {
            Event::Enter(f) => {
                if f == self.check {
                    return Err(
                        self.misaligned(i, format!("function {f} is the check routine's id"))
                    );
                }
                self.frames.push(Frame {
                    function: f.0,
                    block: None,
                    ran: 0,
                });
            }
            Event::Block(b) => {
                self.close_block(i)?;
                let t = self.out.len() as u64 + 1;
                let Some(f) = self.frames.last_mut() else {
                    return Err(self.misaligned(i, "a block outside any function".into()));
                };
                f.block = Some((b.0, t));
                f.ran = 0;
                self.ts.entry((f.function, b.0)).or_default().push(t);
            }
            Event::Leave => {
                self.close_block(i)?;
                self.frames.pop();
            }
            Event::Thread(t) if *self.thread.get_or_insert(t) == t => {}
            Event::Path(_) | Event::Thread(_) => {
                return Err(self.misaligned(
                    i,
                    format!(
                        "a {} event: the eCF is built from a single-thread block trace",
                        e.letter()
                    ),
                ));
            }
        }
        self.out.push(e);
        Ok(())
    }

    /// Whether the next memory instruction of the top frame's current block is `id`.
    fn expects(&self, id: u32) -> bool {
        let Some(f) = self.frames.last() else {
            return false;
        };
        let Some((b, _)) = f.block else { return false };
        self.blocks.get(&(f.function, b)).and_then(|v| v.get(f.ran)) == Some(&id)
    }

    fn access(&mut self, a: Access) -> Result<(), EcfError> {
        let f = self.frames.last_mut().expect("expects() saw a frame");
        f.ran += 1;
        let (_, t_block) = f.block.expect("expects() saw a block");
        let (u, deps) = self.recovery.step(a)?;
        let kind = self.db.instructions[a.id as usize].kind;
        if kind == AccessKind::Store {
            self.buffers[a.id as usize].push(t_block);
        }
        let stores: Vec<Instance> = deps
            .iter()
            .filter_map(|d| match d.store {
                Writer::Store(s) => Some(s),
                Writer::External => None,
            })
            .collect();
        for d in stores {
            self.check(u, d);
        }
        Ok(())
    }

    /// Appends the check call for load instance `u` and its writer `d`.
    fn check(&mut self, u: Instance, d: Instance) {
        let t_w = self.buffers[d.id as usize][d.n as usize - 1];
        let di = &self.db.instructions[d.id as usize];
        let a = &self.ts[&(di.function, di.block)];
        let class = self.classes.get(&(d.id, u.id)).copied();
        let stats = &mut self.stats;
        stats.dependences += 1;
        let mut blocks = vec![site(u.id).0];
        if class.is_none() {
            stats.unexpected += 1;
            blocks.push(UNEXPECTED);
        }
        blocks.push(source(d.id).0);
        let latest = a.last() == Some(&t_w);
        if latest && matches!(class, Some(c) if c != Class::AnyInstance) {
            stats.fixed += 1;
            stats.binary += 1;
            stats.linear += 1;
            stats.max_binary = stats.max_binary.max(1);
            blocks.push(LAST);
        } else {
            let (path, mid) = search(a, t_w).expect("the writer's block ran");
            let n = path.len() as u64 + 1;
            stats.binary += n;
            stats.max_binary = stats.max_binary.max(n);
            stats.linear += (a.len() - mid + 1) as u64;
            blocks.extend(path);
            blocks.push(END);
        }
        self.out.push(Event::Enter(self.check));
        self.out
            .extend(blocks.into_iter().map(|b| Event::Block(BlockId(b))));
        self.out.push(Event::Leave);
    }
}

/// `AnnotateControlFlow` (Figure 18): `TS(n)` of every block of the program (the check
/// routine's blocks are not program nodes and are left out).
pub fn annotate(ecf: &[Event], check: FunctionId) -> FxHashMap<Node, Vec<u64>> {
    let mut ts: FxHashMap<Node, Vec<u64>> = FxHashMap::default();
    let mut stack = Vec::new();
    for (i, &e) in ecf.iter().enumerate() {
        match e {
            Event::Enter(f) => stack.push(f),
            Event::Leave => {
                stack.pop();
            }
            Event::Block(b) => {
                if let Some(&f) = stack.last().filter(|&&f| f != check) {
                    ts.entry((f.0, b.0)).or_default().push(i as u64 + 1);
                }
            }
            _ => {}
        }
    }
    ts
}

/// `Before` (Figure 19): the event executed just before timestamp `t`.
pub fn before(ecf: &[Event], t: u64) -> Option<(Event, u64)> {
    (t > 1)
        .then(|| (ecf.get(t as usize - 2).copied(), t - 1))
        .and_then(|(e, t)| Some((e?, t)))
}

/// `After` (Figure 19): the event executed just after timestamp `t`.
pub fn after(ecf: &[Event], t: u64) -> Option<(Event, u64)> {
    ecf.get(t as usize).map(|&e| (e, t + 1))
}

/// One recovered dependence: `load` read a value `store` wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct EcfDependence {
    /// The store instance.
    pub store: Instance,
    /// The load instance.
    pub load: Instance,
    /// The filtering run did not see the pair.
    pub unexpected: bool,
}

/// Recovers every dependence of an eCF (§5), calling `on_dep` for each, in eCF order.
pub fn recover(
    db: &MemoryDb,
    ecf: &[Event],
    mut on_dep: impl FnMut(EcfDependence),
) -> Result<(), EcfError> {
    let check = check_function(db);
    let ts = annotate(ecf, check);
    // The recovery walks forward, so TS(n) "up to t" is a prefix: `seen` counts it.
    let mut seen: FxHashMap<Node, usize> = FxHashMap::default();
    let mut stack: Vec<(u32, Option<(u32, u64)>)> = Vec::new();
    let mut t = 1u64;
    while let Some(&e) = ecf.get(t as usize - 1) {
        match e {
            Event::Enter(f) if f == check => {
                let (dep, end) = recover_dependence(db, ecf, &ts, &seen, &stack, t)?;
                on_dep(dep);
                t = end;
            }
            Event::Enter(f) => stack.push((f.0, None)),
            Event::Leave => {
                stack.pop();
            }
            Event::Block(b) => {
                let top = stack
                    .last_mut()
                    .ok_or_else(|| malformed(t, "a block outside any function"))?;
                top.1 = Some((b.0, t));
                *seen.entry((top.0, b.0)).or_default() += 1;
            }
            // `build` let through one thread's switch events only.
            Event::Thread(_) => {}
            Event::Path(_) => return Err(malformed(t, "not a block-trace event")),
        }
        t += 1;
    }
    Ok(())
}

fn malformed(t: u64, message: &str) -> EcfError {
    EcfError::Malformed {
        event: t - 1,
        message: message.to_string(),
    }
}

/// `RecoverDependence` (Figure 20) for the check call at timestamp `t`: the dependence and
/// the timestamp of the call's `E`.
fn recover_dependence(
    db: &MemoryDb,
    ecf: &[Event],
    ts: &FxHashMap<Node, Vec<u64>>,
    seen: &FxHashMap<Node, usize>,
    stack: &[(u32, Option<(u32, u64)>)],
    t: u64,
) -> Result<(EcfDependence, u64), EcfError> {
    let mut at = t;
    let next = |at: &mut u64| -> Result<u32, EcfError> {
        match after(ecf, *at) {
            Some((Event::Block(b), t2)) => {
                *at = t2;
                Ok(b.0)
            }
            _ => Err(malformed(*at + 1, "the check routine's call ends early")),
        }
    };
    let s = next(&mut at)?;
    let u = (s >= 8 && s % 2 == 0)
        .then(|| (s - 8) / 2)
        .filter(|&u| db.get(u).is_some_and(|i| i.kind == AccessKind::Load))
        .ok_or_else(|| malformed(t + 1, "the check's first block names no load"))?;
    let mut c = next(&mut at)?;
    let unexpected = c == UNEXPECTED;
    if unexpected {
        c = next(&mut at)?;
    }
    let d = (c >= 9 && c % 2 == 1)
        .then(|| (c - 9) / 2)
        .filter(|&d| db.get(d).is_some_and(|i| i.kind == AccessKind::Store))
        .ok_or_else(|| malformed(at, "the check names no source store"))?;
    let (ui, di) = (&db.instructions[u as usize], &db.instructions[d as usize]);
    let len = seen.get(&(di.function, di.block)).copied().unwrap_or(0);
    let (mut bot, mut top) = (1usize, len);
    let mid = loop {
        if bot > top {
            return Err(malformed(at, "the search ran out of entries"));
        }
        let mid = (bot + top) / 2;
        match next(&mut at)? {
            LAST if at == t + 3 + u64::from(unexpected) => break len,
            END => break mid,
            LOWER => top = mid - 1,
            HIGHER => bot = mid + 1,
            _ => return Err(malformed(at, "not a block of the binary search")),
        }
    };
    if !matches!(after(ecf, at), Some((Event::Leave, _))) {
        return Err(malformed(at + 1, "the check routine does not return"));
    }
    // The load ran in its frame's current block: its instance is that block execution's rank.
    let load_block = stack
        .last()
        .and_then(|&(f, b)| b.map(|(b, tb)| ((f, b), tb)));
    let Some(((f, b), tb)) = load_block.filter(|&((f, b), _)| (f, b) == (ui.function, ui.block))
    else {
        return Err(malformed(
            t,
            "the check is not called from its load's block",
        ));
    };
    let n_load = ts[&(f, b)].partition_point(|&x| x <= tb) as u64;
    let dep = EcfDependence {
        store: Instance {
            id: d,
            n: mid as u64,
        },
        load: Instance { id: u, n: n_load },
        unexpected,
    };
    Ok((dep, at + 1))
}
