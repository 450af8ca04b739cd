//! The dependences of a few loads from an eWPP's grammar, without expanding the rest of it
//! (beyond the paper: §5 recovers every dependence by reading the whole eCF).
//!
//! Recovering load `u`'s dependences needs, at each of `u`'s check calls, only what the events
//! before the call decide: the frame the check was called from (its function, current block
//! and that block execution's rank), the executions so far of the source store's block (the
//! search array's length, Figure 20), and the predictions, which follow from the earlier
//! checks of the loads of `u`'s function (`super`'s "Predictions"). So the walk reads the calls
//! of every load of the asked loads' functions ("the loads" below) and reports the asked
//! ones'. Those are the counts of a few blocks — the set `S` of the loads' blocks and their
//! source stores' blocks — and a call stack. A rule that holds none of the loads' calls
//! changes them the same way every time it is used from the same stack, so only the rules that
//! hold a call site of the loads are descended into, and only the calls themselves are read
//! event by event. Every other rule is applied whole:
//!
//! * A rule that runs no block of `S`'s block ids and ends at its lowest depth (most rules:
//!   balanced calls, or returns) only pops frames and sets the current block of the frame it
//!   ends in. That effect ([`RuleInfo`]) is computed for every rule at once, bottom-up.
//! * Any other rule gets a [`Summary`] (frames popped, the new top's current block, frames
//!   pushed, counts of `S`'s blocks), computed on first use and kept per calling context: the
//!   functions of the top frame and of the frame below it if the rule returns from the top
//!   one (none where the rule runs `S`'s blocks only in frames it opens itself). Rules that
//!   return further and run `S`'s blocks are descended into, and so is any rule used where the
//!   stack is shallower than it returns (a trace that starts inside functions).
//!
//! The first pass finds the loads' source stores (with `S` the loads' blocks alone), the
//! second recovers.
//!
//! **When this holds.** Time and memory follow the grammar's size plus the expansion of the
//! loads' check calls (and of the rules that hold them), not the trace: a function whose loads
//! ran 10^3 times in a 10^9-event eWPP costs two walks of the grammar. It holds for eWPPs
//! with one thread (what the collection records). A load whose function runs in most
//! stretches of the trace has its function's calls in most rules, and then the walk reads
//! about as much as a full recovery (the hottest loads of Lua and zlib: 1.5–1.8× what they
//! cost before the stream predictions, still 2–3× less than the whole listing; BENCHMARKS.md). The
//! check calls of other loads inside rules applied whole are not parsed, so a damaged call
//! there is not reported as a full recovery ([`super::recover`]) reports it; the dependences
//! of the loads asked for are the same.

use rustc_hash::{FxHashMap, FxHashSet};
use wpp_grammar::symbol::SymbolKind;
use wpp_grammar::{Grammar, RuleId};
use wpp_trace::Event;

use super::{check_function, malformed, site, Call, EcfDependence, EcfError, Open, Previous};
use crate::chain::{statement_uses, ChainIndex};
use crate::memdb::{AccessKind, MemoryDb};

/// Recovers the dependences of `loads` from the eWPP grammar `grammar` (start rule `start`,
/// terminals `alphabet`), calling `on_dep` for each in eCF order: exactly the dependences
/// [`super::recover`] finds for those loads on the expanded eCF, or its error where the path
/// to them is damaged. Returns each load asked for, in id order, with its block's executions
/// (its instances where blocks run whole: `ChainFreq`'s denominators, as
/// [`super::Recovered::instances`]).
pub fn recover_loads(
    db: &MemoryDb,
    grammar: &Grammar,
    alphabet: &[Event],
    start: RuleId,
    loads: &[u32],
    mut on_dep: impl FnMut(EcfDependence),
) -> Result<Vec<(u32, u64)>, EcfError> {
    let is_load = |i: &crate::memdb::MemInstr| i.kind == AccessKind::Load;
    let asked: FxHashSet<u32> = loads
        .iter()
        .copied()
        .filter(|&u| db.get(u).is_some_and(is_load))
        .collect();
    // A check's stream predictions follow from the checks of its load's function's loads.
    let functions: FxHashSet<u32> = asked
        .iter()
        .map(|&u| db.instructions[u as usize].function)
        .collect();
    let loads: FxHashSet<u32> = (0..db.instructions.len() as u32)
        .filter(|&u| {
            let i = &db.instructions[u as usize];
            is_load(i) && functions.contains(&i.function)
        })
        .collect();
    let mut blocks: Vec<u32> = loads.iter().copied().collect();
    let mut sources = FxHashSet::default();
    let mut first = Walker::new(db, grammar, alphabet, &loads, &blocks);
    // An error here (a damaged eCF, one cut short in a check) stops the second pass at the
    // same event, after the dependences before it: the passes descend alike.
    let _ = first.walk(start, |call, _, _| {
        sources.insert(call.head(db)?.d);
        Ok(())
    });
    blocks.extend(sources);
    let mut second = Walker::new(db, grammar, alphabet, &loads, &blocks);
    // The predictions of a load's checks depend only on its function's earlier checks, all
    // read here.
    let mut previous = Previous::default();
    let end = second.walk(start, |call, state, slots| {
        let runs = |d: u32| {
            let i = &db.instructions[d as usize];
            state.runs(slots, i.function, i.block)
        };
        let dep = call.dependence(db, runs, state.top(), &mut previous)?;
        if asked.contains(&dep.load.id) {
            on_dep(dep);
        }
        Ok(())
    })?;
    let mut asked: Vec<u32> = asked.into_iter().collect();
    asked.sort_unstable();
    let instances = asked.into_iter().map(|u| {
        let i = &db.instructions[u as usize];
        (u, end.runs(&second.slots, i.function, i.block))
    });
    Ok(instances.collect())
}

/// One frame of the walk's call stack: its function and its current block with that block
/// execution's rank (0 for a block outside `S`, whose rank nothing asks).
#[derive(Clone, Copy, Debug)]
struct Frame {
    function: u32,
    block: Option<(u32, u64)>,
}

/// Each block of `S` (function, block id), and its slot in [`State::counts`].
type Slots = FxHashMap<(u32, u32), u32>;

/// The walk's state, or a summary's while it is computed (then counts and ranks are relative
/// to the rule's start, and the first frames are the calling frames it was computed for).
#[derive(Default)]
struct State {
    frames: Vec<Frame>,
    counts: Vec<u64>,
}

impl State {
    /// The executions so far of block `(f, b)`, if it is in `S` (else 0: nothing asks).
    fn runs(&self, slots: &Slots, f: u32, b: u32) -> u64 {
        slots.get(&(f, b)).map_or(0, |&s| self.counts[s as usize])
    }

    /// The frame a check was called from, as [`Call::dependence`] takes it.
    fn top(&self) -> Option<Open> {
        self.frames.last().map(|f| (f.function, f.block))
    }

    /// Replays one event (as [`super::recover_events`] does outside check calls; a check
    /// call's frame is an ordinary frame here, whose blocks are not in `S`).
    fn step(&mut self, slots: &Slots, e: Event, t: u64) -> Result<(), EcfError> {
        match e {
            Event::Enter(f) => self.frames.push(Frame {
                function: f.0,
                block: None,
            }),
            Event::Leave => {
                self.frames.pop();
            }
            Event::Block(b) => {
                let top = self
                    .frames
                    .last_mut()
                    .ok_or_else(|| malformed(t, "a block outside any function"))?;
                let rank = match slots.get(&(top.function, b.0)) {
                    Some(&s) => {
                        self.counts[s as usize] += 1;
                        self.counts[s as usize]
                    }
                    None => 0,
                };
                top.block = Some((b.0, rank));
            }
            Event::Thread(_) => {}
            Event::Path(_) => return Err(malformed(t, "not a block-trace event")),
        }
        Ok(())
    }

    /// Applies the effect of a rule that runs no block of `S` and ends at its lowest depth.
    fn apply_plain(&mut self, i: &RuleInfo) {
        self.frames.truncate(self.frames.len() - i.pops as usize);
        if let (Some(top), true) = (self.frames.last_mut(), i.low_block) {
            top.block = Some((OTHER, 0));
        }
    }

    /// Applies a rule's summary: ranks and counts in it are added to the counts before it.
    fn apply(&mut self, slots: &Slots, s: &Summary, frames: &[Frame], counts: &[(u32, u64)]) {
        let rebase = |f: Frame, counts: &[u64]| Frame {
            function: f.function,
            // Blocks of `S` have ranks from 1, the others 0.
            block: f.block.map(|(b, r)| match r {
                0 => (b, 0),
                r => {
                    let slot = slots.get(&(f.function, b));
                    (b, slot.map_or(0, |&s| counts[s as usize] + r))
                }
            }),
        };
        let keep = self.frames.len() - s.pops as usize;
        self.frames.truncate(keep);
        if let (Some(top), Some(block)) = (self.frames.last_mut(), s.top_block) {
            let f = Frame {
                function: top.function,
                block: Some(block),
            };
            top.block = rebase(f, &self.counts).block;
        }
        for &f in frames {
            let f = rebase(f, &self.counts);
            self.frames.push(f);
        }
        for &(slot, n) in counts {
            self.counts[slot as usize] += n;
        }
    }

    /// The key of rule `i`'s summary here: the functions of the top frame and of the one
    /// below it if the rule returns from the top one (`ANY` where the rule runs no block of
    /// `S` in them). `None`: the rule is not summarized here.
    fn context(&self, i: &RuleInfo) -> Option<[u32; 2]> {
        let n = self.frames.len();
        if n <= i.pops as usize {
            return None;
        }
        match (i.s_low > 0, i.pops) {
            (true, _) => Some([ANY, ANY]),
            (false, 0) => Some([self.frames[n - 1].function, ANY]),
            (false, 1) => Some([self.frames[n - 1].function, self.frames[n - 2].function]),
            (false, _) => None,
        }
    }
}

/// A function of a summary's context that does not matter.
const ANY: u32 = u32::MAX;

/// No summary yet.
const NONE: u32 = u32::MAX;

/// A block outside `S`, where which one does not matter.
const OTHER: u32 = u32::MAX;

/// A rule's effect from a calling context: pop `pops` frames, set the new top's current
/// block (if the rule ran one in it), push frames, add counts of `S`'s blocks.
struct Summary {
    /// The context it was computed for.
    context: [u32; 2],
    pops: u32,
    top_block: Option<(u32, u64)>,
    frames: std::ops::Range<usize>,
    counts: std::ops::Range<usize>,
}

/// What the walk knows of each rule without expanding it, computed bottom-up.
#[derive(Clone, Copy, Default)]
struct RuleInfo {
    /// Frames it returns from below its start (its lowest depth, negated).
    pops: u32,
    /// Its depth at its end, relative to its start.
    net: i32,
    /// The lowest depth at which it runs a block with one of `S`'s block ids ([`NO_S`]:
    /// none at all).
    s_low: i32,
    /// It runs a block at its lowest depth: the current block of the frame it ends in (a
    /// plain rule's is not in `S`, so which one it is does not matter).
    low_block: bool,
    /// It holds a call site of a load asked for, or a path event or a terminal outside the
    /// alphabet (errors to report where they are): it is descended into.
    descend: bool,
    /// Its last event is a check call's `Enter`.
    ends_in_enter_check: bool,
}

/// [`RuleInfo::s_low`] of a rule that runs no block of `S`.
const NO_S: i32 = i32::MAX;

impl RuleInfo {
    /// The empty sequence.
    const EMPTY: RuleInfo = RuleInfo {
        pops: 0,
        net: 0,
        s_low: NO_S,
        low_block: false,
        descend: false,
        ends_in_enter_check: false,
    };

    /// `self` then `next`.
    fn then(self, next: RuleInfo) -> RuleInfo {
        let (low, next_low) = (-(self.pops as i32), self.net - next.pops as i32);
        let low_block = match next_low.cmp(&low) {
            std::cmp::Ordering::Less => next.low_block,
            std::cmp::Ordering::Equal => next.low_block || self.low_block,
            std::cmp::Ordering::Greater => self.low_block,
        };
        let next_s = match next.s_low {
            NO_S => NO_S,
            d => d + self.net,
        };
        RuleInfo {
            pops: self
                .pops
                .max(next_low.unsigned_abs() * u32::from(next_low < 0)),
            net: self.net + next.net,
            s_low: self.s_low.min(next_s),
            low_block,
            descend: self.descend || next.descend,
            ends_in_enter_check: next.ends_in_enter_check,
        }
    }

    /// Runs no block of `S` and ends at its lowest depth: [`State::apply_plain`] applies it.
    fn plain(&self) -> bool {
        self.s_low == NO_S && self.net == -(self.pops as i32)
    }
}

/// Every rule's [`RuleInfo`]: `sites` are the loads' call sites' blocks, `s_ids` the block ids
/// of `S`.
fn rule_info(
    grammar: &Grammar,
    alphabet: &[Event],
    sites: &FxHashSet<u32>,
    s_ids: &FxHashSet<u32>,
    check: u32,
) -> Vec<RuleInfo> {
    let terminal_info = |e: Event| match e {
        Event::Enter(f) => RuleInfo {
            net: 1,
            ends_in_enter_check: f.0 == check,
            ..RuleInfo::EMPTY
        },
        Event::Leave => RuleInfo {
            pops: 1,
            net: -1,
            ..RuleInfo::EMPTY
        },
        Event::Block(b) => RuleInfo {
            s_low: if s_ids.contains(&b.0) { 0 } else { NO_S },
            low_block: true,
            descend: sites.contains(&b.0),
            ..RuleInfo::EMPTY
        },
        Event::Path(_) => RuleInfo {
            descend: true,
            ..RuleInfo::EMPTY
        },
        Event::Thread(_) => RuleInfo::EMPTY,
    };
    let mut info: Vec<RuleInfo> = Vec::with_capacity(grammar.num_rules());
    for r in grammar.rules() {
        let body = grammar.body(r).iter().map(|s| match s.kind() {
            // A terminal outside the alphabet is an error to report where it is.
            SymbolKind::Terminal(t) => alphabet.get(t.index()).map_or(
                RuleInfo {
                    descend: true,
                    ..RuleInfo::EMPTY
                },
                |&e| terminal_info(e),
            ),
            SymbolKind::Rule(c) => info[c.index()],
        });
        let i = body.fold(RuleInfo::EMPTY, RuleInfo::then);
        info.push(i);
    }
    info
}

/// Where the walk is in the check calls.
enum Calls {
    /// Outside a check call.
    Outside,
    /// Right after a check call's `Enter` at this timestamp: its site comes next.
    Entered(u64),
    /// Reading a call of a load asked for: its `Enter`'s timestamp (its events so far are in
    /// [`Walker::call`]).
    Reading(u64),
}

/// A check call of a load asked for, as [`Walker::walk`] reads it (after its `Enter`).
type CallEvents<'c, 'd> = Call<'c, std::vec::Drain<'d, Event>>;

/// One pass of the walk, with `S` fixed.
struct Walker<'a> {
    grammar: &'a Grammar,
    alphabet: &'a [Event],
    check: u32,
    /// The call sites' blocks of the loads asked for.
    sites: FxHashSet<u32>,
    info: Vec<RuleInfo>,
    slots: Slots,
    /// Each rule's first summary (most rules are used in one context) ...
    first: Vec<u32>,
    /// ... and its others, by (rule, context).
    more: FxHashMap<(u32, [u32; 2]), u32>,
    summaries: Vec<Summary>,
    summary_frames: Vec<Frame>,
    summary_counts: Vec<(u32, u64)>,
    /// Summaries being computed; the allocations are kept from one to the next.
    jobs: Vec<Job>,
    /// The events of the call being read, in one buffer for every call (a vector per call
    /// spent a quarter of a rare load's lookup in the allocator when its function's loads
    /// are hot).
    call: Vec<Event>,
}

impl<'a> Walker<'a> {
    /// `blocks`: the memory instructions whose blocks are `S`.
    fn new(
        db: &MemoryDb,
        grammar: &'a Grammar,
        alphabet: &'a [Event],
        loads: &FxHashSet<u32>,
        blocks: &[u32],
    ) -> Self {
        let check = check_function(db).0;
        let sites = loads.iter().map(|&u| site(u).0).collect();
        let mut slots = Slots::default();
        for &id in blocks {
            let i = &db.instructions[id as usize];
            let n = slots.len() as u32;
            slots.entry((i.function, i.block)).or_insert(n);
        }
        let s_ids = slots.keys().map(|&(_, b)| b).collect();
        Walker {
            grammar,
            alphabet,
            check,
            info: rule_info(grammar, alphabet, &sites, &s_ids, check),
            sites,
            slots,
            first: vec![NONE; grammar.num_rules()],
            more: FxHashMap::default(),
            summaries: Vec::new(),
            summary_frames: Vec::new(),
            summary_counts: Vec::new(),
            jobs: Vec::new(),
            call: Vec::new(),
        }
    }

    fn event(&self, t: wpp_trace::Terminal, at: u64) -> Result<Event, EcfError> {
        self.alphabet
            .get(t.index())
            .copied()
            .ok_or_else(|| malformed(at, "a terminal outside the alphabet"))
    }

    /// Walks the start rule, calling `on_call` with each call of a load asked for, the state
    /// it was called in, and `S`; the state at the end.
    fn walk(
        &mut self,
        start: RuleId,
        mut on_call: impl FnMut(&mut CallEvents<'_, '_>, &State, &Slots) -> Result<(), EcfError>,
    ) -> Result<State, EcfError> {
        let mut state = State {
            frames: Vec::new(),
            counts: vec![0; self.slots.len()],
        };
        let mut calls = Calls::Outside;
        let mut t = 0u64;
        let mut stack = vec![(start, 0usize)];
        while let Some((r, pos)) = stack.last_mut() {
            let Some(&sym) = self.grammar.body(*r).get(*pos) else {
                stack.pop();
                continue;
            };
            *pos += 1;
            let c = match sym.kind() {
                SymbolKind::Terminal(term) => {
                    t += 1;
                    let e = self.event(term, t)?;
                    calls = self.leaf(e, t, calls, &mut state, &mut on_call)?;
                    continue;
                }
                SymbolKind::Rule(c) => c,
            };
            let i = self.info[c.index()];
            if i.descend || matches!(calls, Calls::Reading(..)) || !self.apply(c, &mut state) {
                stack.push((c, 0));
                continue;
            }
            t += self.grammar.expanded_len(c);
            calls = match i.ends_in_enter_check {
                true => Calls::Entered(t),
                false => Calls::Outside,
            };
        }
        // A call cut short, read here or inside a rule applied whole: its frame is open.
        let in_check = state.frames.last().map(|f| f.function) == Some(self.check);
        match in_check {
            true => Err(EcfError::EndsInCheck { event: t }),
            false => Ok(state),
        }
    }

    /// Applies rule `c` whole to `state` if it can be here (a rule without the loads' calls).
    fn apply(&mut self, c: RuleId, state: &mut State) -> bool {
        let i = self.info[c.index()];
        if i.plain() && state.frames.len() > i.pops as usize {
            state.apply_plain(&i);
            return true;
        }
        let Some(context) = state.context(&i) else {
            return false;
        };
        let s = self.summary(c, context);
        let s = &self.summaries[s as usize];
        let frames = &self.summary_frames[s.frames.clone()];
        state.apply(
            &self.slots,
            s,
            frames,
            &self.summary_counts[s.counts.clone()],
        );
        true
    }

    /// One event read where it is (not summarized).
    fn leaf(
        &mut self,
        e: Event,
        t: u64,
        calls: Calls,
        state: &mut State,
        on_call: &mut impl FnMut(&mut CallEvents<'_, '_>, &State, &Slots) -> Result<(), EcfError>,
    ) -> Result<Calls, EcfError> {
        match (calls, e) {
            (Calls::Reading(at), e) => {
                self.call.push(e);
                if e != Event::Leave {
                    return Ok(Calls::Reading(at));
                }
                state.frames.pop();
                let mut events = self.call.drain(..);
                let mut call = Call {
                    events: &mut events,
                    t: at,
                };
                on_call(&mut call, state, &self.slots)?;
                Ok(Calls::Outside)
            }
            (Calls::Entered(at), Event::Block(b)) if self.sites.contains(&b.0) => {
                self.call.clear();
                self.call.push(e);
                Ok(Calls::Reading(at))
            }
            (_, e) => {
                state.step(&self.slots, e, t)?;
                Ok(match e {
                    Event::Enter(f) if f.0 == self.check => Calls::Entered(t),
                    _ => Calls::Outside,
                })
            }
        }
    }

    /// The summary of rule `rule` used from a stack whose top frames' functions are
    /// `context` (computed on first use, the rules it uses first, on an explicit stack:
    /// grammars nest deeper than the thread's stack).
    fn summary(&mut self, rule: RuleId, context: [u32; 2]) -> u32 {
        if let Some(s) = self.memo(rule, context) {
            return s;
        }
        let mut jobs = std::mem::take(&mut self.jobs);
        let mut active = 1;
        self.start_job(&mut jobs, 0, rule, context);
        while active > 0 {
            let job = &mut jobs[active - 1];
            let Some((r, pos)) = job.stack.last_mut() else {
                active -= 1;
                self.store(&jobs[active]);
                continue;
            };
            let Some(&sym) = self.grammar.body(*r).get(*pos) else {
                job.stack.pop();
                continue;
            };
            let c = match sym.kind() {
                SymbolKind::Terminal(term) => {
                    *pos += 1;
                    // Cannot fail: summarized rules hold only events of the alphabet and no
                    // path events, and their blocks always have a frame (the context's
                    // frames are below their lowest depth).
                    if let Some(&e) = self.alphabet.get(term.index()) {
                        let _ = job.state.step(&self.slots, e, 0);
                    }
                    continue;
                }
                SymbolKind::Rule(c) => c,
            };
            let i = self.info[c.index()];
            if i.plain() {
                *pos += 1;
                job.state.apply_plain(&i);
                continue;
            }
            let Some(ctx) = job.state.context(&i) else {
                // Returns too far to be summarized: replayed inside this summary.
                *pos += 1;
                job.stack.push((c, 0));
                continue;
            };
            match self.memo(c, ctx) {
                Some(s) => {
                    *pos += 1;
                    let s = &self.summaries[s as usize];
                    let frames = &self.summary_frames[s.frames.clone()];
                    let counts = &self.summary_counts[s.counts.clone()];
                    job.state.apply(&self.slots, s, frames, counts);
                }
                None => {
                    self.start_job(&mut jobs, active, c, ctx);
                    active += 1;
                }
            }
        }
        self.jobs = jobs;
        self.memo(rule, context)
            .expect("the summary was just computed")
    }

    /// The summary of `rule` from `context`, if it was computed.
    fn memo(&self, rule: RuleId, context: [u32; 2]) -> Option<u32> {
        match self.first[rule.index()] {
            NONE => None,
            s if self.summaries[s as usize].context == context => Some(s),
            _ => self.more.get(&(rule.0, context)).copied(),
        }
    }

    /// Starts computing the summary of `rule` from `context` in `jobs[at]`.
    fn start_job(&self, jobs: &mut Vec<Job>, at: usize, rule: RuleId, context: [u32; 2]) {
        if jobs.len() == at {
            jobs.push(Job::default());
        }
        let job = &mut jobs[at];
        let pops = self.info[rule.index()].pops;
        job.key = (rule.0, context);
        job.pops = pops;
        job.stack.clear();
        job.stack.push((rule, 0));
        let frames = &mut job.state.frames;
        frames.clear();
        let frame = |function| Frame {
            function,
            block: None,
        };
        // The frames below the top one that the rule returns into (their functions matter
        // only where the context names them).
        frames
            .extend((0..pops).map(|k| frame(context.get(1 + k as usize).copied().unwrap_or(ANY))));
        frames.reverse();
        frames.push(frame(context[0]));
        job.state.counts.clear();
        job.state.counts.resize(self.slots.len(), 0);
    }

    /// Keeps a finished job's summary.
    fn store(&mut self, job: &Job) {
        let frames = &job.state.frames;
        let start = self.summary_frames.len();
        self.summary_frames.extend_from_slice(&frames[1..]);
        let counts_start = self.summary_counts.len();
        let counts = job.state.counts.iter().enumerate();
        self.summary_counts.extend(
            counts
                .filter(|&(_, &n)| n > 0)
                .map(|(slot, &n)| (slot as u32, n)),
        );
        let (rule, context) = job.key;
        let s = self.summaries.len() as u32;
        match &mut self.first[rule as usize] {
            first @ &mut NONE => *first = s,
            _ => {
                self.more.insert(job.key, s);
            }
        }
        self.summaries.push(Summary {
            context,
            pops: job.pops,
            top_block: frames[0].block,
            frames: start..self.summary_frames.len(),
            counts: counts_start..self.summary_counts.len(),
        });
    }
}

/// A summary being computed: its rule's body replayed from a stack of just the calling
/// frames it depends on.
#[derive(Default)]
struct Job {
    key: (u32, [u32; 2]),
    pops: u32,
    state: State,
    /// Rules being replayed (the summarized rule, and those inside it that return too far
    /// to be summarized themselves).
    stack: Vec<(RuleId, usize)>,
}

/// The dependences that chains from `loads` of at most `depth` dependences use (Figure 21),
/// from the eWPP's rules: the loads' dependences, then those of the uses at their stores'
/// statements, level by level (one [`recover_loads`] per level), indexed as they come, as
/// [`ChainIndex::from_dependences`] indexes a whole run's. Its chains and `ChainFreq` from
/// `loads` are the whole run's.
pub fn chain_index(
    db: &MemoryDb,
    grammar: &Grammar,
    alphabet: &[Event],
    start: RuleId,
    loads: &[u32],
    depth: usize,
) -> Result<ChainIndex, EcfError> {
    let uses = statement_uses(db);
    let mut instances = vec![0; db.instructions.len()];
    let mut index = ChainIndex::of_ecf(db);
    let mut asked: FxHashSet<u32> = loads.iter().copied().collect();
    let mut level: Vec<u32> = loads.to_vec();
    for _ in 0..depth {
        if level.is_empty() {
            break;
        }
        let mut stores = FxHashSet::default();
        let runs = recover_loads(db, grammar, alphabet, start, &level, |d| {
            stores.insert(d.store.id);
            index.push(d.load, d.store);
        })?;
        for (u, n) in runs {
            instances[u as usize] = n;
        }
        let next = stores
            .iter()
            .flat_map(|&d| uses[d as usize].iter().copied());
        level = next.filter(|&u| asked.insert(u)).collect();
        level.sort_unstable();
    }
    index.set_instances(instances);
    Ok(index)
}
