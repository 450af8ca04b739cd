//! The extended control-flow trace (eCF) of Tallam and Gupta (§2–3): the block trace of a run
//! with the control flow of the dependence checks appended as ordinary block events, so that
//! every dynamic memory dependence can be recovered from control flow alone (§5), and every
//! compressor and query handles it unchanged.
//!
//! [`Collector`] is the collection (§3.2–3.3): fed a run's block events and memory accesses in
//! the order they ran, it appends each check's control flow where its load ran. The collection
//! run (`wpp cc --mode ewpp`) drives it inside the program's runtime; [`build`] drives it from
//! a `trace-addr` recording (block trace + AT). [`recover`] gets the dependences back from the
//! eCF alone (with the memory database, which the recovery of the paper also knows; an eWPP
//! carries it in its program database).
//!
//! # Timestamps and instances (§3.3, Figure 18)
//!
//! Every event of the eCF has a timestamp: its position, from 1. `TS(n)` of a block `n`
//! (function and block id) is the list of timestamps at which it ran. Instance `k` of store
//! `d` ran in some execution of `d`'s block, so `k` is at most the number of executions of
//! that block so far; the check binary-searches `1..=len` for `k` ([`Collector`]'s "Searching
//! ranks"), and recovery, which counts the block's executions up to the check, replays the
//! same comparisons (Figure 20). A load's instance is the rank of its block execution, less
//! the executions that did not run it (a recursive call earlier in the block, a `longjmp` or
//! an exception that left the block): the check says how many ([`SHIFT`]), so instances are
//! exact for every control flow the block trace records.
//!
//! # Alignment of a recording
//!
//! The AT does not mark calls, so [`build`] places each access in the block trace greedily:
//! it belongs to the innermost open function's current block if it is that block's next
//! memory instruction, else it comes after the next event. This is exact unless a block calls
//! its own function (recursion) before its next memory instruction and the callee starts with
//! that same block: then the access is given to the caller, and the callee's block comes up
//! short, which is reported as an error (no eCF), not a wrong one; so is a block left half-way
//! where the placement cannot tell why. The collection run has no such limit: it sees each
//! access where it runs.
//!
//! **`longjmp`.** A `setjmp`-like call that returns again leaves its own trace in a recording:
//! the runtime's `Leave`s for the frames the `longjmp` abandoned (the innermost ones, whose
//! blocks may be left half-way), then, with no block event, the accesses after the call in
//! the `setjmp`'s block, in a frame whose current block is another (the one that made the
//! call the `longjmp` came from). [`build`] reads it as the collection run does, whose probes
//! emit `Block(b)` again where the call in block `b` returns (`wpp cc`'s `ewpp` build; there
//! at every return, here only where it returns again: ranks differ, never the dependences):
//!
//! * a frame may end half-way through its block when the access that comes next is not one
//!   of its function's (the `longjmp` went past it to an outer frame), and
//! * an access of the innermost frame's function that the greedy placement could never give a
//!   block (the rule above, followed without a half-way block up to the event where it would
//!   be that block's next instruction, fails before) resumes its block there, if it comes
//!   right after the last of the `Leave`s: the eCF gets `Block(b)` again, as the collection
//!   run's does, and the block goes on from that access. Anywhere else it is an error (a
//!   block trace of another run), as before.
//!
//! Both apply only where the greedy placement alone fails, so every recording it aligned is
//! aligned as before; a `longjmp` whose next access is its own function's in the frame it
//! leaves half-way (a recursive function that `setjmp`s) is still refused.
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
//! | `B` [`SHIFT`], bits, `B` [`END`] | only if some executions of `u`'s block did not run `u` |
//! | `B` [`UNEXPECTED`] | only if the filtering run did not see the pair `(d, u)` (§3.1) |
//! | `B` [`source`]`(d)` | the source store `d` (`C_d`, Figure 5 / Figure 17) |
//! | `B` [`LAST`] | fixed cost (Figure 5's `C_d^T`): the writer is `d`'s latest instance |
//! | or `B` [`AGAIN`] / `B` [`NEXT`] | predicted (beyond the paper): the writer is the instance of `d` the pair's previous dependence read, or the one after it |
//! | or `B` [`OTHER`] … `B` [`LATEST_BACK`] | predicted from the stream (beyond the paper): the writer is the instance the loads of `u`'s function read of `d` before their latest one, or the one after or before it; or their latest, or the one after or before it |
//! | or `B` [`LOWER`] / `B` [`HIGHER`], digits, `B` [`END`] | after missed predictions (beyond the paper): the writer is below the pair's previous instance `p` (`LOWER`) or above `p + 1`, at the distance whose binary digits after the leading 1 follow as `B0`/`B1` |
//! | or `B` [`LOWER`] / `B` [`HIGHER`] … `B` [`END`] | for a pair's first dependence, the binary search (Figure 13) over `1..=len`: each comparison that misses is `B0` (the target is below `mid`) or `B1`, the hit is `E` |
//! | `E` | the return |
//!
//! Classes (§2.1–2.3, Definitions 1–4): a pair whose store wrote one address (fully free,
//! partially free, last-instance) is encoded with the fixed-cost `LAST` when the writer is
//! `d`'s latest (`k = len`); any-instance pairs, unexpected pairs and the rare case where a
//! store's block is still open on the call stack take the search. The paper
//! records no check at all for no-cost pairs because its CFG places the use relative to every
//! definition; a block trace does not place a load relative to the calls in its block, so a
//! no-cost dependence costs the constant `F site source LAST E` here.
//!
//! **Predictions.** Any-instance dependences (most of them in programs that stream over
//! buffers) cost a search of ~log2(len) blocks of nearly random outcomes, which no grammar
//! compresses. But a pair (store, load) mostly reads the same store instance as its previous
//! dependence (a value read again) or the next one (a buffer read in the order it was
//! written): 69 % of zlib's searched dependences. So before searching, the check tries those
//! two, and a hit is one block, `AGAIN` or `NEXT`, repeated run after run. When both miss, the
//! writer is still mostly near the prediction (zlib: a median distance of ~2^6 instances,
//! against ~2^16 for the search's range), so the check gives the distance from it in binary
//! (its direction, then its digits) instead of searching the whole range: about half the
//! blocks. Recovery keeps the same per-pair state (the instance each pair read last), so it
//! stays exact.
//!
//! Some loads read two places of one buffer in turn: bzip2's `mainGtU` compares two suffixes
//! of its block byte by byte, in an unrolled loop whose every load is a pair of its own, so
//! each pair's previous instance is from the previous comparison, anywhere in the block. But
//! the function's loads together read the store's instances `i, j, i+1, j+1, …`: the writer is
//! next to the instance the function read *before* its latest (`OTHER`, `OTHER_NEXT`,
//! `OTHER_BACK`) or next to its latest (`LATEST`, …). So the check also keeps, per *stream*
//! (a store and a function reading it), the two latest distinct instances read, and tries the
//! six instances around them after the pair's two. On bzip2's largest process this took the
//! predicted dependences from 19 % to 84 % and its SEQUITUR eWPP from 15.1 to 10.4 MB. The
//! stream is per function, not per store, so that one load's dependences still follow from
//! the checks of its function's loads alone ([`rules`]).
//!
//! Checks per dependence (Table IX): the search's comparisons (the `B0`/`B1` blocks plus the
//! hit), 1 for `LAST`, `i + 1` for the `i`-th prediction (`AGAIN` 1, `NEXT` 2, … `LATEST_BACK`
//! 8), and for a distance the eight missed predictions, the direction, its digits and the
//! end; against the linear scan from the buffer's tail (Figure 8).

use crate::at::{Access, Run};
use crate::filter::{Class, FilterReport};
use crate::lastwriter::{Instance, Writer};
use crate::memdb::{AccessKind, MemoryDb};
use crate::recover::{RecoverError, Recovery};
use rustc_hash::FxHashMap;
use serde::Serialize;
use wpp_trace::{BlockId, Event, FunctionId, ProgramDb};

pub mod rules;

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
/// Predicted: the writer is the instance of the source that the pair's previous dependence
/// read (a value read again).
pub const AGAIN: u32 = 6;
/// Predicted: the writer is the instance after the one the pair's previous dependence read
/// (a stream read in the order it was written).
pub const NEXT: u32 = 7;
/// The load's instance is not the rank of its block execution (a recursive call from the
/// block ran it first, or executions left the block before it: `longjmp`, an exception): the
/// difference, instance less rank, follows zigzag-encoded (`2d` for `d ≥ 0`, `−2d − 1` below)
/// in binary, most significant bit first, as `LOWER` (0) / `HIGHER` (1) blocks ended by `END`.
pub const SHIFT: u32 = 5;
/// Predicted: the writer is the instance its stream (the source and the function of the
/// load: [`Previous`]) read before its latest distinct one (a function that reads two places
/// of one buffer in turn, as a comparison of two suffixes does).
pub const OTHER: u32 = 8;
/// Predicted: the instance after [`OTHER`]'s.
pub const OTHER_NEXT: u32 = 9;
/// Predicted: the instance before [`OTHER`]'s.
pub const OTHER_BACK: u32 = 10;
/// Predicted: the latest instance its stream read.
pub const LATEST: u32 = 11;
/// Predicted: the instance after [`LATEST`]'s.
pub const LATEST_NEXT: u32 = 12;
/// Predicted: the instance before [`LATEST`]'s.
pub const LATEST_BACK: u32 = 13;
/// The predictions a check tries, in this order, before giving a distance or searching.
const PREDICTIONS: [u32; 8] = [
    AGAIN,
    NEXT,
    OTHER,
    OTHER_NEXT,
    OTHER_BACK,
    LATEST,
    LATEST_NEXT,
    LATEST_BACK,
];
/// The first block id that names an instruction: loads' call sites and stores as sources
/// alternate from here.
const NAMES: u32 = 14;

/// The block naming load `u` as the call site.
pub fn site(u: u32) -> BlockId {
    BlockId(NAMES + 2 * u)
}

/// The block naming store `d` as the source (`C_d`).
pub fn source(d: u32) -> BlockId {
    BlockId(NAMES + 1 + 2 * d)
}

/// The instruction id block `b` names if it is `first + 2 * id` ([`site`], [`source`]).
fn named(b: u32, first: u32) -> Option<u32> {
    b.checked_sub(first)
        .filter(|v| v.is_multiple_of(2))
        .map(|v| v / 2)
}

/// The synthetic check routine's function id: one past the program's functions (and past
/// every function a memory instruction names).
pub fn check_function(db: &MemoryDb) -> FunctionId {
    let named = db.instructions.iter().map(|i| i.function + 1).max();
    FunctionId(named.unwrap_or(0).max(db.program.functions.len() as u32))
}

/// The version of an eWPP's memory table ([`attach`]): the memory database's layout and the
/// encoding of the checks. 1: the paper's checks; 2: with the pair's predictions ([`AGAIN`],
/// [`NEXT`]), whose eCFs version 1 would misread; 3: a distance from the prediction instead of
/// a search when both miss; 4: the stream's predictions ([`OTHER`] … [`LATEST_BACK`]); 5: each
/// instruction's source file (memory database version 2).
pub const TABLE_VERSION: u32 = 5;

/// The check routine's name in an eWPP's program database.
pub const CHECK_NAME: &str = "__wpp_check";

/// Makes `program` (the program `db` describes) an eWPP's: appends the check routine, so its id
/// is [`check_function`]`(db)`, and `db`'s instructions as the memory table, so the trace alone
/// recovers its dependences ([`memory_db`]).
pub fn attach(program: &mut ProgramDb, db: &MemoryDb) {
    let table = MemoryDb {
        version: TABLE_VERSION,
        program: ProgramDb::default(),
        instructions: db.instructions.clone(),
        files: db.files.clone(),
    };
    program.memory = postcard::to_allocvec(&table).expect("plain data encodes");
    program.functions.push(wpp_trace::Function {
        name: CHECK_NAME.into(),
        ..Default::default()
    });
}

/// The memory database of an eWPP's program database ([`attach`]); `None` for another
/// recording, an error for a memory table that does not fit the program.
pub fn memory_db(program: &ProgramDb) -> Result<Option<MemoryDb>, String> {
    if program.memory.is_empty() {
        return Ok(None);
    }
    match MemoryDb::version_of(&program.memory) {
        Some(TABLE_VERSION) | None => {}
        Some(1..=4) => {
            return Err(
                "an eWPP of an older wpp, whose checks are encoded differently: \
                 record it again"
                    .into(),
            )
        }
        Some(v) => {
            return Err(format!(
                "memory table version {v} (this wpp reads {TABLE_VERSION})"
            ))
        }
    }
    let mut db: MemoryDb = postcard::from_bytes(&program.memory)
        .map_err(|e| format!("cannot decode the memory table: {e}"))?;
    db.version = crate::memdb::MEMORY_DB_VERSION;
    let mut functions = program.functions.clone();
    if functions.pop().map(|f| f.name) != Some(CHECK_NAME.into()) {
        return Err(format!(
            "the last function is not the check routine {CHECK_NAME}"
        ));
    }
    if let Some((id, i)) = db
        .instructions
        .iter()
        .enumerate()
        .find(|(_, i)| i.function as usize >= functions.len())
    {
        return Err(format!(
            "memory instruction {id} names function {}, outside the program",
            i.function
        ));
    }
    db.program = ProgramDb {
        functions,
        files: program.files.clone(),
        ..ProgramDb::default()
    };
    Ok(Some(db))
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
    /// The eCF ends inside a check call (a recording cut short: every dependence before the
    /// call was recovered).
    #[error("eCF event {event}: the events end inside a check call")]
    EndsInCheck {
        /// The position (from 0) where the call's next event is missing.
        event: u64,
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
    /// Comparisons the checks made: the binary search's, or the predictions' and the
    /// distance's (the module docs' "Checks per dependence").
    pub binary: u64,
    /// Address comparisons a linear scan from the newest entry would take.
    pub linear: u64,
    /// The most comparisons one binary search took.
    pub max_binary: u64,
    /// Of the dependences, those a prediction found (`AGAIN` … `LATEST_BACK`).
    pub predicted: u64,
}

/// A built eCF.
pub struct Ecf {
    /// The events.
    pub events: Vec<Event>,
    /// Its checks.
    pub stats: CheckStats,
}

type Node = (u32, u32);

/// Where a [`Collector`] appends the events of its checks: the collection run appends event
/// words to its buffer, [`build`] events to a vector.
pub trait CheckEvents {
    /// The check routine is called (`Enter` of [`check_function`]).
    fn enter(&mut self, check: FunctionId);
    /// Block `b` of the check routine.
    fn block(&mut self, b: u32);
    /// The check routine returns.
    fn leave(&mut self);
}

impl CheckEvents for Vec<Event> {
    fn enter(&mut self, check: FunctionId) {
        self.push(Event::Enter(check));
    }
    fn block(&mut self, b: u32) {
        self.push(Event::Block(BlockId(b)));
    }
    fn leave(&mut self) {
        self.push(Event::Leave);
    }
}

/// One open function of a [`Collector`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Its function id.
    pub function: u32,
    /// Its current block and that block execution's rank (the how-many-th execution of the
    /// block it is, counted only for blocks with memory instructions; 0 for the others).
    pub block: Option<(u32, u64)>,
    /// How many memory accesses ran in the current block execution.
    pub ran: usize,
}

/// The collection's state machine (§3.2–3.3): fed the program's block events and memory
/// accesses in the order they ran, it appends each dependence check's control flow to the
/// output right where its load ran. The collection run (`--mode ewpp`, `wpp-rt`) drives it
/// from the program's own buffer, where the order is exact; [`build`] drives it from a
/// `trace-addr` recording.
///
/// # Searching ranks, not timestamps
///
/// The paper's buffer of store `d` holds the timestamps of `d`'s instances, and the check
/// binary-searches it for the writer's timestamp (Figures 12–13). The timestamps are
/// ascending, so comparing them is comparing their ranks; the collector keeps, per block with
/// memory instructions, how many times it ran, and searches the range `1..=len` (`len`: the
/// executions of `d`'s block so far, which recovery counts too) for the writer's instance
/// number. The outcomes are the same comparisons, and a store costs one counter instead of a
/// buffer entry per instance (§3.4's buffers, which "grow by doubling", are not needed).
pub struct Collector<'a> {
    db: &'a MemoryDb,
    classes: FxHashMap<(u32, u32), Class>,
    /// Per slot of `previous`: its pair's class (`None`: not exercised in the filtering run).
    class_of_slot: Vec<Option<Class>>,
    recovery: Recovery<'a>,
    frames: Vec<Frame>,
    runs: BlockRuns,
    stats: CheckStats,
    check: FunctionId,
    /// The one thread the trace may name.
    thread: Option<wpp_trace::ThreadId>,
    /// Program events seen, for messages.
    events: u64,
    stores: Vec<Instance>,
    previous: Previous,
}

/// What a check predicts from (the module docs' "Predictions"): per (store, load) pair, the
/// store instance its latest dependence read (`AGAIN`, `NEXT`), in a slot of its own; per
/// *stream* (a store and the function of the loads reading it), the two latest distinct
/// instances those loads read (`OTHER` … `LATEST_BACK`). A load mostly depends on the store its
/// previous instance depended on, so each load remembers its latest pair's slot, which spares
/// most lookups in the maps.
#[derive(Default)]
pub(crate) struct Previous {
    slots: FxHashMap<(u32, u32), u32>,
    /// Per load id (grown as loads come): its two latest pairs' store ids and slots, the
    /// latest first (a load that alternates between two stores finds both).
    latest: Vec<[(u32, u32); 2]>,
    /// Per slot: the instance read (0: none yet; instances count from 1) and its stream.
    instances: Vec<(u64, u32)>,
    /// (store, function) → stream.
    streams: FxHashMap<(u32, u32), u32>,
    /// Per stream: its two latest distinct instances read, the latest first (0: none).
    reads: Vec<[u64; 2]>,
}

/// The predictions of one check, from [`Previous::predict`].
pub(crate) struct Prediction {
    slot: usize,
    /// The instance the pair read last.
    pair: Option<u64>,
    /// The instance the stream read before its latest one.
    other: Option<u64>,
    /// The stream's latest instance.
    latest: Option<u64>,
}

impl Prediction {
    /// The instances [`PREDICTIONS`] name, in their order (`None`: nothing to predict from).
    fn instances(&self) -> [Option<u64>; PREDICTIONS.len()] {
        let next = |n: Option<u64>| n.map(|n| n + 1);
        let back = |n: Option<u64>| n.map(|n| n - 1).filter(|&n| n > 0);
        let (p, o, l) = (self.pair, self.other, self.latest);
        [p, next(p), o, next(o), back(o), l, next(l), back(l)]
    }

    /// The index in [`PREDICTIONS`] of the first prediction of instance `n`: the first
    /// position of `Some(n)` in [`Self::instances`], found without building them (every check
    /// asks).
    #[inline]
    fn find(&self, n: u64) -> Option<usize> {
        let above = |base: Option<u64>| base.map(|b| n.wrapping_sub(b));
        match above(self.pair) {
            Some(0) => return Some(0),
            Some(1) => return Some(1),
            _ => {}
        }
        [(2, self.other), (5, self.latest)]
            .into_iter()
            .find_map(|(first, base)| match above(base)? {
                0 => Some(first),
                1 => Some(first + 1),
                u64::MAX => Some(first + 2),
                _ => None,
            })
    }
}

impl Previous {
    /// The predictions for a dependence of load `u` on store `d`; `function` gives `u`'s
    /// function, asked only for the pair's first dependence.
    #[inline]
    fn predict(&mut self, d: u32, u: u32, function: impl FnOnce() -> u32) -> Prediction {
        let slot = match self.latest.get(u as usize) {
            Some(&[(store, slot), _]) if store == d => slot as usize,
            _ => self.find(d, u, function),
        };
        let (n, stream) = self.instances[slot];
        Prediction {
            slot,
            pair: Some(n).filter(|&n| n > 0),
            other: Some(self.reads[stream as usize][1]).filter(|&n| n > 0),
            latest: Some(self.reads[stream as usize][0]).filter(|&n| n > 0),
        }
    }

    fn find(&mut self, d: u32, u: u32, function: impl FnOnce() -> u32) -> usize {
        if self.latest.len() <= u as usize {
            self.latest.resize(u as usize + 1, [(u32::MAX, 0); 2]);
        }
        let latest = &mut self.latest[u as usize];
        let slot = match latest[1] {
            (store, slot) if store == d => slot,
            _ => {
                let new = self.instances.len() as u32;
                let slot = *self.slots.entry((d, u)).or_insert(new);
                if slot == new {
                    let stream = self.reads.len() as u32;
                    let stream = *self.streams.entry((d, function())).or_insert(stream);
                    if stream as usize == self.reads.len() {
                        self.reads.push([0; 2]);
                    }
                    self.instances.push((0, stream));
                }
                slot
            }
        };
        *latest = [(d, slot), latest[0]];
        slot as usize
    }

    /// The dependence `p` predicted read instance `n`.
    #[inline]
    fn read(&mut self, p: &Prediction, n: u64) {
        let (read, stream) = &mut self.instances[p.slot];
        *read = n;
        let r = &mut self.reads[*stream as usize];
        if r[0] != n {
            *r = [n, r[0]];
        }
    }
}

impl<'a> Collector<'a> {
    /// A collector for the program `db`, with the filtering run's `report`.
    pub fn new(db: &'a MemoryDb, report: &FilterReport) -> Self {
        Collector {
            db,
            classes: report
                .pairs
                .iter()
                .map(|p| ((p.store, p.load), p.class))
                .collect(),
            class_of_slot: Vec::new(),
            recovery: Recovery::new(db),
            frames: Vec::new(),
            runs: BlockRuns::new(db),
            stats: CheckStats::default(),
            check: check_function(db),
            thread: None,
            events: 0,
            stores: Vec::new(),
            previous: Previous::default(),
        }
    }

    /// The checks so far.
    pub fn stats(&self) -> &CheckStats {
        &self.stats
    }

    /// The innermost open function.
    pub fn top(&self) -> Option<&Frame> {
        self.frames.last()
    }

    fn error(&self, message: String) -> EcfError {
        EcfError::Misaligned {
            event: self.events,
            message,
        }
    }

    /// Takes one program event (the caller writes it to the eCF).
    pub fn event(&mut self, e: Event) -> Result<(), EcfError> {
        match e {
            Event::Enter(f) if f == self.check => {
                return Err(self.error(format!("function {f} is the check routine's id")));
            }
            Event::Enter(f) => self.frames.push(Frame {
                function: f.0,
                block: None,
                ran: 0,
            }),
            Event::Block(b) => {
                let Some(frame) = self.frames.last_mut() else {
                    return Err(self.error("a block outside any function".into()));
                };
                let rank = self.runs.enter(frame.function, b.0);
                frame.block = Some((b.0, rank));
                frame.ran = 0;
            }
            Event::Leave => {
                self.frames.pop();
            }
            Event::Thread(t) if *self.thread.get_or_insert(t) == t => {}
            Event::Path(_) | Event::Thread(_) => {
                return Err(self.error(format!(
                    "a {} event: the eCF is built from a single-thread block trace",
                    e.letter()
                )));
            }
        }
        self.events += 1;
        Ok(())
    }

    /// The top frame runs block `b` again from its memory instruction number `ran` on (a
    /// `setjmp`-like call in it returned again), as a new execution of `b`: the collection
    /// run's `Block(b)` after such a call, which the caller writes to the eCF.
    fn resume(&mut self, b: u32, ran: usize) -> Result<(), EcfError> {
        let Some(frame) = self.frames.last_mut() else {
            return Err(self.error("a block outside any function".into()));
        };
        let rank = self.runs.enter(frame.function, b);
        frame.block = Some((b, rank));
        frame.ran = ran;
        Ok(())
    }

    /// Takes one memory access of the top frame's current block, appending a check call to
    /// `out` for each distinct program store that wrote bytes it reads.
    pub fn access(&mut self, a: Access, out: &mut impl CheckEvents) -> Result<(), EcfError> {
        let Some(frame) = self.frames.last_mut() else {
            return Err(self.error(format!(
                "an access of instruction {} outside any function",
                a.id
            )));
        };
        frame.ran += 1;
        let frame = *frame;
        let (u, deps) = self.recovery.step(a)?;
        self.stores.clear();
        self.stores
            .extend(deps.iter().filter_map(|d| match d.store {
                Writer::Store(s) => Some(s),
                Writer::External => None,
            }));
        if self.stores.is_empty() {
            return Ok(());
        }
        let ui = &self.db.instructions[u.id as usize];
        let rank = match frame.block {
            Some((b, rank)) if (frame.function, b) == (ui.function, ui.block) => rank,
            _ => {
                return Err(self.error(format!(
                    "load {} ({}) ran outside its block",
                    u.id,
                    self.db.location(u.id)
                )))
            }
        };
        for i in 0..self.stores.len() {
            let d = self.stores[i];
            self.check(u, zigzag(u.n as i64 - rank as i64), d, out)?;
        }
        Ok(())
    }

    /// Appends the check call for load instance `u` (`shift`: the zigzag of its instance less
    /// its block execution's rank) and its writer `d`.
    fn check(
        &mut self,
        u: Instance,
        shift: u64,
        d: Instance,
        out: &mut impl CheckEvents,
    ) -> Result<(), EcfError> {
        let len = self.runs.of(d.id);
        if d.n > len {
            return Err(self.error(format!(
                "store {} ({}) ran {} times but its block {len}",
                d.id,
                self.db.location(d.id),
                d.n
            )));
        }
        let db = self.db;
        let function = || db.instructions[u.id as usize].function;
        let prediction = self.previous.predict(d.id, u.id, function);
        if prediction.slot == self.class_of_slot.len() {
            let class = self.classes.get(&(d.id, u.id)).copied();
            self.class_of_slot.push(class);
        }
        let class = self.class_of_slot[prediction.slot];
        self.previous.read(&prediction, d.n);
        out.enter(self.check);
        out.block(site(u.id).0);
        if shift > 0 {
            out.block(SHIFT);
            let bits = 64 - shift.leading_zeros();
            (0..bits)
                .rev()
                .for_each(|i| out.block(((shift >> i) & 1) as u32));
            out.block(END);
        }
        let stats = &mut self.stats;
        stats.dependences += 1;
        if class.is_none() {
            stats.unexpected += 1;
            out.block(UNEXPECTED);
        }
        out.block(source(d.id).0);
        if d.n == len && matches!(class, Some(c) if c != Class::AnyInstance) {
            stats.fixed += 1;
            stats.binary += 1;
            stats.linear += 1;
            stats.max_binary = stats.max_binary.max(1);
            out.block(LAST);
        } else if let Some(i) = prediction.find(d.n) {
            stats.predicted += 1;
            stats.binary += i as u64 + 1;
            stats.linear += len - d.n + 1;
            out.block(PREDICTIONS[i]);
        } else if let Some(p) = prediction.pair {
            let (direction, distance) = match d.n < p {
                true => (LOWER, p - d.n),
                false => (HIGHER, d.n - p - 1),
            };
            out.block(direction);
            let digits = 63 - distance.leading_zeros();
            (0..digits)
                .rev()
                .for_each(|i| out.block(((distance >> i) & 1) as u32));
            out.block(END);
            // The predictions, the direction, the digits and the end.
            let n = (PREDICTIONS.len() + 2) as u64 + u64::from(digits);
            stats.binary += n;
            stats.max_binary = stats.max_binary.max(n);
            stats.linear += len - d.n + 1;
        } else {
            let mut n = 1;
            let (mut bot, mut top) = (1, len);
            loop {
                let mid = (bot + top) / 2;
                match d.n.cmp(&mid) {
                    std::cmp::Ordering::Equal => break,
                    std::cmp::Ordering::Less => {
                        out.block(LOWER);
                        top = mid - 1;
                    }
                    std::cmp::Ordering::Greater => {
                        out.block(HIGHER);
                        bot = mid + 1;
                    }
                }
                n += 1;
            }
            out.block(END);
            stats.binary += n;
            stats.max_binary = stats.max_binary.max(n);
            stats.linear += len - d.n + 1;
        }
        out.leave();
        Ok(())
    }
}

/// How many times each block with memory instructions ran so far (the length of `TS(n)`,
/// Figure 18, up to now), shared by the collection and the recovery.
struct BlockRuns {
    /// Each such block's slot in `runs`.
    slots: FxHashMap<Node, u32>,
    /// The same as a table by function and block id (`u32::MAX`: no slot), which every block
    /// event consults; empty when the database's block ids are too sparse for one (a hostile
    /// table), and `slots` answers then.
    table: Vec<Vec<u32>>,
    /// Each memory instruction's block's slot (no lookup per dependence).
    of_instruction: Vec<u32>,
    runs: Vec<u64>,
}

impl BlockRuns {
    fn new(db: &MemoryDb) -> Self {
        let mut slots = FxHashMap::default();
        let of_instruction = db
            .instructions
            .iter()
            .map(|i| {
                let n = slots.len() as u32;
                *slots.entry((i.function, i.block)).or_insert(n)
            })
            .collect();
        BlockRuns {
            runs: vec![0; slots.len()],
            table: slot_table(&slots),
            slots,
            of_instruction,
        }
    }

    /// Block `b` of function `f` runs again: its rank (0 for a block without memory
    /// instructions, which nothing asks about).
    #[inline]
    fn enter(&mut self, f: u32, b: u32) -> u64 {
        let slot = match self.table.is_empty() {
            false => self
                .table
                .get(f as usize)
                .and_then(|t| t.get(b as usize))
                .copied(),
            true => self.slots.get(&(f, b)).copied(),
        };
        match slot {
            Some(s) if s != u32::MAX => {
                self.runs[s as usize] += 1;
                self.runs[s as usize]
            }
            _ => 0,
        }
    }

    /// The executions so far of memory instruction `id`'s block.
    fn of(&self, id: u32) -> u64 {
        self.runs[self.of_instruction[id as usize] as usize]
    }
}

/// `slots` as a table by function and block id, if it takes at most a few entries per slot
/// (block ids are dense in a real program); else empty.
fn slot_table(slots: &FxHashMap<Node, u32>) -> Vec<Vec<u32>> {
    let mut size = FxHashMap::<u32, usize>::default();
    for &(f, b) in slots.keys() {
        let s = size.entry(f).or_default();
        *s = (*s).max(b as usize + 1);
    }
    let functions = size.keys().max().map_or(0, |&f| f as usize + 1);
    if functions + size.values().sum::<usize>() > 64 * slots.len() + 4096 {
        return Vec::new();
    }
    let mut table = vec![Vec::new(); functions];
    for (&(f, b), &slot) in slots {
        let row = &mut table[f as usize];
        row.resize(size[&f], u32::MAX);
        row[b as usize] = slot;
    }
    table
}

/// Per block: its memory instructions, in order.
fn block_instructions(db: &MemoryDb) -> FxHashMap<Node, Vec<u32>> {
    let mut m: FxHashMap<Node, Vec<u32>> = FxHashMap::default();
    for (id, i) in db.instructions.iter().enumerate() {
        m.entry((i.function, i.block)).or_default().push(id as u32);
    }
    m
}

/// Builds the eCF of a run from its `trace-addr` recording: `events` is its block trace (one
/// thread), `accesses` its AT. The AT does not mark where calls happen, so the accesses are
/// placed greedily (the module docs' "Alignment") and every block execution must run all its
/// memory instructions, but for the frames a `longjmp` leaves and the block its `setjmp`
/// resumes (the module docs' "longjmp").
pub fn build<T: Into<Run>, E>(
    db: &MemoryDb,
    events: &[Event],
    accesses: impl IntoIterator<Item = Result<T, E>>,
    report: &FilterReport,
) -> Result<Ecf, EcfError>
where
    RecoverError: From<E>,
{
    let blocks = block_instructions(db);
    let mut c = Collector::new(db, report);
    let mut out = Vec::with_capacity(events.len());
    let mut pending = std::collections::VecDeque::new();
    let mut chunks = accesses.into_iter();
    let mut next_access = |pending: &mut std::collections::VecDeque<Access>| {
        while pending.is_empty() {
            match chunks.next() {
                None => return Ok(None),
                Some(run) => {
                    let run: Run = run.map_err(RecoverError::from)?.into();
                    if run.thread != 0 {
                        return Err(RecoverError::OtherThread { thread: run.thread });
                    }
                    pending.extend(run.accesses);
                }
            }
        }
        Ok::<_, RecoverError>(pending.front().copied())
    };
    // The next memory instruction of the top frame's current block.
    let expected = |c: &Collector| {
        let f = c.top()?;
        let (b, _) = f.block?;
        blocks.get(&(f.function, b)).map(|v| v.get(f.ran).copied())
    };
    // Events before which the pending access is known to find its block by waiting.
    let mut waits_until = 0;
    for (i, &e) in events.iter().enumerate() {
        if matches!(e, Event::Block(_) | Event::Leave) {
            if let Some(Some(id)) = expected(&c) {
                // Left half-way by a `longjmp` to an outer frame (the module docs' "longjmp").
                let top = c.top().map(|f| f.function);
                let unwound = matches!(e, Event::Leave)
                    && next_access(&mut pending)?
                        .is_none_or(|a| Some(db.instructions[a.id as usize].function) != top);
                if !unwound {
                    let next = pending.front().map_or("its end".into(), |a: &Access| {
                        format!("instruction {} ({})", a.id, db.location(a.id))
                    });
                    return Err(EcfError::Misaligned {
                        event: i as u64,
                        message: format!(
                            "the block ends before its memory instruction {id} ({}) ran; the address trace goes on with {next} (the eCF of a recording needs whole blocks)",
                            db.location(id)
                        ),
                    });
                }
            }
        }
        c.event(e)?;
        out.push(e);
        while let Some(a) = next_access(&mut pending)? {
            if expected(&c).flatten() != Some(a.id) {
                let ai = &db.instructions[a.id as usize];
                if i < waits_until || c.top().map(|f| f.function) != Some(ai.function) {
                    break;
                }
                match placed_later(&c, &blocks, &events[i + 1..], a.id) {
                    Some(j) => {
                        waits_until = i + 1 + j;
                        break;
                    }
                    // The `longjmp`'s `Leave`s go on: the frame it resumes is an outer one.
                    None if events.get(i + 1) == Some(&Event::Leave) => break,
                    // Only the end of a `longjmp`'s `Leave`s resumes a block: elsewhere an
                    // access that has no block is a block trace of another run.
                    None if e != Event::Leave => break,
                    // A `setjmp`-like call in the access's block returned again.
                    None => {
                        let ran = blocks[&(ai.function, ai.block)]
                            .iter()
                            .position(|&id| id == a.id)
                            .expect("an instruction is in its block");
                        c.resume(ai.block, ran)?;
                        out.push(Event::Block(BlockId(ai.block)));
                    }
                }
            }
            pending.pop_front();
            c.access(a, &mut out)?;
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
        events: out,
        stats: c.stats,
    })
}

/// Where the greedy placement ([`build`]; the module docs' "Alignment") would give access `id`,
/// pending now, its block, with `events` the events still to come: the position in `events`
/// of the event after which it is the innermost frame's next memory instruction, or `None`
/// where the placement fails first (a block left before its next instruction ran, or the end
/// of the events). No access is placed meanwhile: the pending one comes first.
fn placed_later(
    c: &Collector,
    blocks: &FxHashMap<Node, Vec<u32>>,
    events: &[Event],
    id: u32,
) -> Option<usize> {
    let next = |f: &Frame| {
        let (b, _) = f.block?;
        blocks.get(&(f.function, b))?.get(f.ran).copied()
    };
    // The collector's frames below `open` (those not left yet), then the frames entered since.
    let (mut open, mut entered) = (c.frames.len(), Vec::<Frame>::new());
    for (j, &e) in events.iter().enumerate() {
        let top = entered.last().or(c.frames[..open].last());
        if matches!(e, Event::Block(_) | Event::Leave) && top.and_then(next).is_some() {
            return None;
        }
        match e {
            Event::Enter(f) => entered.push(Frame {
                function: f.0,
                block: None,
                ran: 0,
            }),
            Event::Block(b) => {
                let frame = match entered.last_mut() {
                    Some(f) => f,
                    // Its block changes: the frame is the collector's no more.
                    None => {
                        let f = *c.frames[..open].last()?;
                        open -= 1;
                        entered.push(f);
                        entered.last_mut().expect("just pushed")
                    }
                };
                frame.block = Some((b.0, 0));
                frame.ran = 0;
            }
            Event::Leave => {
                if entered.pop().is_none() {
                    open = open.checked_sub(1)?;
                }
            }
            Event::Thread(_) | Event::Path(_) => {}
        }
        let top = entered.last().or(c.frames[..open].last());
        if top.and_then(next) == Some(id) {
            return Some(j);
        }
    }
    None
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
    /// The check's comparisons (Table IX): the search's, or 1 for the fixed-cost `LAST`.
    pub comparisons: u32,
    /// How the check found the writer.
    pub found: Found,
    /// The comparisons a linear scan from the newest instance would take (Table IX, Figure 8).
    pub linear: u64,
}

/// How a check found a dependence's writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Found {
    /// Fixed cost: the source's latest instance (`LAST`).
    Last,
    /// A prediction found it (`AGAIN` … `LATEST_BACK`: the pair's or the stream's).
    Predicted,
    /// The binary search.
    Searched,
}

/// Recovers every dependence of an eCF (§5), calling `on_dep` for each, in eCF order.
pub fn recover(
    db: &MemoryDb,
    ecf: &[Event],
    on_dep: impl FnMut(EcfDependence),
) -> Result<Vec<u64>, EcfError> {
    let r = recover_events(db, ecf.iter().copied(), on_dep)?;
    match r.ends_in_check {
        Some(event) => Err(EcfError::EndsInCheck { event }),
        None => Ok(r.instances),
    }
}

/// What [`recover_events`] found besides the dependences.
pub struct Recovered {
    /// Each memory instruction's block executions (its instances, where blocks run whole;
    /// `ChainFreq`'s denominators).
    pub instances: Vec<u64>,
    /// Where the events ended inside a check call, if they did (a recording cut short; an
    /// error for a complete one).
    pub ends_in_check: Option<u64>,
}

/// One open function of the recovery: its id and its current block with that block
/// execution's rank.
type Open = (u32, Option<(u32, u64)>);

/// Recovers every dependence of an eCF streamed from `events` (§5), calling `on_dep` for each,
/// in eCF order.
///
/// One forward pass in memory proportional to the program, not to the eCF: Figure 18's
/// `TS(n)` lists are needed only up to each check (the search array's length, and the rank of
/// the load's block execution), so the pass keeps per block its executions so far and per
/// open frame its current block's rank instead; `Before`/`After` (Figure 19) become reading
/// the next event.
pub fn recover_events(
    db: &MemoryDb,
    events: impl IntoIterator<Item = Event>,
    mut on_dep: impl FnMut(EcfDependence),
) -> Result<Recovered, EcfError> {
    let check = check_function(db);
    let mut runs = BlockRuns::new(db);
    let mut previous = Previous::default();
    let mut stack: Vec<Open> = Vec::new();
    let mut events = events.into_iter();
    let mut t = 0u64;
    let mut ends_in_check = None;
    while let Some(e) = events.next() {
        t += 1;
        match e {
            Event::Enter(f) if f == check => {
                let mut call = Call {
                    events: &mut events,
                    t,
                };
                match call.dependence(db, |d| runs.of(d), stack.last().copied(), &mut previous) {
                    Ok(d) => on_dep(d),
                    Err(EcfError::EndsInCheck { event }) => {
                        ends_in_check = Some(event);
                        break;
                    }
                    Err(e) => return Err(e),
                }
                t = call.t;
            }
            Event::Enter(f) => stack.push((f.0, None)),
            Event::Leave => {
                stack.pop();
            }
            Event::Block(b) => {
                let top = stack
                    .last_mut()
                    .ok_or_else(|| malformed(t, "a block outside any function"))?;
                top.1 = Some((b.0, runs.enter(top.0, b.0)));
            }
            // `build` and the collection let through one thread's switch events only.
            Event::Thread(_) => {}
            Event::Path(_) => return Err(malformed(t, "not a block-trace event")),
        }
    }
    Ok(Recovered {
        instances: (0..db.instructions.len() as u32)
            .map(|i| runs.of(i))
            .collect(),
        ends_in_check,
    })
}

fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

fn malformed(t: u64, message: &str) -> EcfError {
    EcfError::Malformed {
        event: t - 1,
        message: message.to_string(),
    }
}

/// A check call being read: the events after its `Enter`, and the timestamp of the last one
/// read.
struct Call<'e, I> {
    events: &'e mut I,
    t: u64,
}

/// What a check call says before its search.
struct Head {
    /// The load checked.
    u: u32,
    /// Its instance less its block execution's rank, zigzag-encoded ([`SHIFT`]).
    shift: u64,
    /// The filtering run did not see the pair.
    unexpected: bool,
    /// The source store.
    d: u32,
}

/// A check call's next event is not a block: where, and whether the events ended there. Small,
/// so that reading a block returns in registers (most of an eCF's events are read so);
/// [`EcfError`] when it reaches the call's caller.
#[derive(Clone, Copy)]
struct NotABlock {
    t: u64,
    ended: bool,
}

impl From<NotABlock> for EcfError {
    fn from(e: NotABlock) -> Self {
        match e.ended {
            true => EcfError::EndsInCheck { event: e.t - 1 },
            false => malformed(e.t, "the check routine's call ends early"),
        }
    }
}

impl<I: Iterator<Item = Event>> Call<'_, I> {
    /// The next event, a block of the check routine.
    #[inline]
    fn block(&mut self) -> Result<u32, NotABlock> {
        self.t += 1;
        match self.events.next() {
            Some(Event::Block(b)) => Ok(b.0),
            e => Err(NotABlock {
                t: self.t,
                ended: e.is_none(),
            }),
        }
    }

    /// The call's head: the load `u` it checks (the call site), the load's shift, whether the
    /// pair was exercised, and the source store `d`.
    fn head(&mut self, db: &MemoryDb) -> Result<Head, EcfError> {
        let s = self.block()?;
        let u = named(s, NAMES)
            .filter(|&u| db.get(u).is_some_and(|i| i.kind == AccessKind::Load))
            .ok_or_else(|| malformed(self.t, "the check's first block names no load"))?;
        let mut c = self.block()?;
        let mut shift = 0u64;
        if c == SHIFT {
            loop {
                match self.block()? {
                    END if shift > 0 => break,
                    bit @ (LOWER | HIGHER) if shift >> 62 == 0 && (shift > 0 || bit == HIGHER) => {
                        shift = shift << 1 | u64::from(bit)
                    }
                    _ => return Err(malformed(self.t, "not a bit of the load's shift")),
                }
            }
            c = self.block()?;
        }
        let unexpected = c == UNEXPECTED;
        if unexpected {
            c = self.block()?;
        }
        let d = named(c, NAMES + 1)
            .filter(|&d| db.get(d).is_some_and(|i| i.kind == AccessKind::Store))
            .ok_or_else(|| malformed(self.t, "the check names no source store"))?;
        Ok(Head {
            u,
            shift,
            unexpected,
            d,
        })
    }

    /// The binary search over `1..=len` (Figure 13) whose first outcome, `first`, was read:
    /// the instance found and the comparisons in all.
    fn search(&mut self, first: u32, len: u64) -> Result<(u64, u32), EcfError> {
        let (mut bot, mut top, mut comparisons, mut b) = (1u64, len, 0, first);
        loop {
            if bot > top {
                return Err(malformed(self.t, "the search ran out of entries"));
            }
            let mid = (bot + top) / 2;
            comparisons += 1;
            match b {
                END => return Ok((mid, comparisons)),
                LOWER => top = mid - 1,
                HIGHER => bot = mid + 1,
                _ => return Err(malformed(self.t, "not a block of the binary search")),
            }
            b = self.block()?;
        }
    }

    /// The writer from its distance to the pair's previous instance `p` (after the
    /// predictions missed; `direction` read already): the instance found and the comparisons
    /// in all (the module docs' "Predictions").
    fn distance(&mut self, direction: u32, p: u64, len: u64) -> Result<(u64, u32), EcfError> {
        // The missed predictions, the direction, the digits that follow and the end.
        let (mut distance, mut comparisons) = (1u64, PREDICTIONS.len() as u32 + 2);
        loop {
            match self.block()? {
                END => break,
                b @ (LOWER | HIGHER) if distance < 1 << 62 => {
                    distance = distance << 1 | u64::from(b);
                    comparisons += 1;
                }
                _ => return Err(malformed(self.t, "not a block of a distance")),
            }
        }
        let n = match direction {
            LOWER => p.checked_sub(distance).filter(|&n| n > 0),
            _ => p.checked_add(distance + 1).filter(|&n| n <= len),
        };
        let n = n.ok_or_else(|| malformed(self.t, "the distance leaves the store's instances"))?;
        Ok((n, comparisons))
    }

    /// `RecoverDependence` (Figure 20) for this call: `runs(d)` is the executions so far of
    /// store `d`'s block, `top` the frame the check was called from.
    fn dependence(
        &mut self,
        db: &MemoryDb,
        runs: impl Fn(u32) -> u64,
        top: Option<Open>,
        previous: &mut Previous,
    ) -> Result<EcfDependence, EcfError> {
        let start = self.t;
        let Head {
            u,
            shift,
            unexpected,
            d,
        } = self.head(db)?;
        let ui = &db.instructions[u as usize];
        let len = runs(d);
        let prediction = previous.predict(d, u, || ui.function);
        let first = self.block()?;
        let predicted = PREDICTIONS.iter().position(|&b| b == first);
        let (n, comparisons) = match (first, predicted, prediction.pair) {
            (_, Some(i), _) => {
                let n = prediction.instances()[i]
                    .filter(|&n| n <= len)
                    .ok_or_else(|| malformed(self.t, "a prediction with nothing to predict"))?;
                (n, i as u32 + 1)
            }
            (LAST, _, _) if len > 0 => (len, 1),
            (LOWER | HIGHER, _, Some(p)) => self.distance(first, p, len)?,
            (first, _, _) => self.search(first, len)?,
        };
        previous.read(&prediction, n);
        self.t += 1;
        match self.events.next() {
            Some(Event::Leave) => {}
            None => return Err(EcfError::EndsInCheck { event: self.t - 1 }),
            _ => return Err(malformed(self.t, "the check routine does not return")),
        }
        // The load ran in its frame's current block: its instance is that block execution's
        // rank, plus the shift.
        let rank = match top {
            Some((f, Some((b, rank)))) if (f, b) == (ui.function, ui.block) => rank,
            _ => {
                return Err(malformed(
                    start,
                    "the check is not called from its load's block",
                ))
            }
        };
        let n_load = (rank as i64)
            .checked_add(unzigzag(shift))
            .filter(|&n| n > 0)
            .ok_or_else(|| malformed(start, "the load's shift puts its instance below 1"))?
            as u64;
        Ok(EcfDependence {
            store: Instance { id: d, n },
            load: Instance { id: u, n: n_load },
            unexpected,
            comparisons,
            // Any other use of these blocks failed the search above.
            found: match first {
                LAST => Found::Last,
                _ if predicted.is_some() => Found::Predicted,
                _ => Found::Searched,
            },
            linear: len - n + 1,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The collector's `find` is the recovery's `instances` read from the front.
        #[test]
        fn find_is_the_first_prediction_of_an_instance(
            pair in proptest::option::of(1u64..6),
            other in proptest::option::of(1u64..6),
            latest in proptest::option::of(1u64..6),
            n in 1u64..8,
        ) {
            let p = Prediction { slot: 0, pair, other, latest };
            prop_assert_eq!(p.find(n), p.instances().iter().position(|&i| i == Some(n)));
        }
    }
}
