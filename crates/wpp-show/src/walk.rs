//! One streaming pass over a recording that attributes every event to its calling context.
//!
//! The walk keeps a shadow call stack per thread, as Larus §2's EnterRoutine/LeaveRoutine
//! events allow, and counts each *sample* — one recorded block or path event (see the crate
//! docs) — in a calling-context tree: a context is a function reached through a chain of call
//! sites `(caller context, caller line, callee)`, and holds one counter per source line of its
//! function. Memory is therefore proportional to the distinct calling contexts and lines, not
//! to the trace. Path events are decoded to their blocks through the recording's CFGs
//! (`wpp_paths::trace`): the sample is charged to the path's first block's line, every block
//! of the path is counted for line coverage, and the last block's line (the call site, when the
//! path ends at a call) becomes the frame's current line.

use rustc_hash::FxHashMap;
use wpp_grammar::expand::Expander;
use wpp_grammar::file::WppFile;
use wpp_paths::trace::PathDecoder;
use wpp_trace::file::ReadAhead;
use wpp_trace::{Event, FunctionId, PathId, ProgramDb, ThreadId};

use crate::source::SourceMap;
use crate::ShowError;

/// The function id of the root context, which holds events outside any function.
pub const ROOT: u32 = u32::MAX;

/// A calling context: `function` called from line slot `call_slot` of context `parent`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Context {
    /// The function (a [`FunctionId`] index), or [`ROOT`].
    pub function: u32,
    /// The calling context (`0`, the root, for outermost frames; itself for the root).
    pub parent: u32,
    /// The slot (line) of the parent's function the call was made from.
    pub call_slot: u32,
    /// Times this context was entered.
    pub calls: u64,
    /// Times one of its frames returned (its `E` events).
    pub returns: u64,
    /// Samples charged to each slot (line) of the function while it was the innermost frame.
    pub counts: Vec<u64>,
}

/// What one walk found: the calling-context tree, block and path counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    /// Contexts in creation order; 0 is the root, and every context comes after its parent.
    pub contexts: Vec<Context>,
    /// Per function, executions of each block (decoded from paths in path recordings).
    pub block_counts: Vec<Vec<u64>>,
    /// Executions of each `(function, path id)` (path recordings and profiles).
    pub path_counts: FxHashMap<(u32, u64), u64>,
    /// Events read, `Thread` events included (a profile's: its path executions).
    pub events: u64,
    /// Samples: block and path events.
    pub samples: u64,
    /// Threads that had events.
    pub threads: usize,
    /// Whether this run has calling contexts (recordings) or only counts (profiles).
    pub has_stacks: bool,
}

impl Run {
    pub(crate) fn new(db: &ProgramDb) -> Run {
        Run {
            contexts: vec![Context {
                function: ROOT,
                parent: 0,
                call_slot: 0,
                calls: 0,
                returns: 0,
                counts: vec![0],
            }],
            block_counts: db
                .functions
                .iter()
                .map(|f| vec![0; block_count(f)])
                .collect(),
            path_counts: FxHashMap::default(),
            events: 0,
            samples: 0,
            threads: 0,
            has_stacks: true,
        }
    }

    /// The context `f` is entered in from slot `slot` of context `parent`, created on first
    /// use; `children` indexes the contexts by those three.
    pub(crate) fn child(
        &mut self,
        children: &mut FxHashMap<(u32, u32, u32), u32>,
        map: &SourceMap,
        (parent, slot, f): (u32, u32, u32),
    ) -> u32 {
        let next = self.contexts.len() as u32;
        let ctx = *children.entry((parent, slot, f)).or_insert(next);
        if ctx == next {
            self.contexts.push(Context {
                function: f,
                parent,
                call_slot: slot,
                calls: 0,
                returns: 0,
                counts: vec![0; map.slots(f)],
            });
        }
        ctx
    }

    /// Counts `n` executions of block `b` of function `f` (blocks the database does not know
    /// are not counted).
    pub(crate) fn count_block(&mut self, f: u32, b: u32, n: u64) {
        if let Some(c) = self
            .block_counts
            .get_mut(f as usize)
            .and_then(|v| v.get_mut(b as usize))
        {
            *c += n;
        }
    }

    /// Inclusive samples of every context: its own plus its descendants' (contexts come after
    /// their parents, so one backward sweep adds each into its parent).
    pub fn inclusive(&self) -> Vec<u64> {
        let mut inc: Vec<u64> = self
            .contexts
            .iter()
            .map(|c| c.counts.iter().sum())
            .collect();
        for i in (1..self.contexts.len()).rev() {
            let p = self.contexts[i].parent as usize;
            inc[p] += inc[i];
        }
        inc
    }

    /// Calls of each function: entries of all its contexts.
    pub fn calls(&self) -> Vec<u64> {
        let mut calls = vec![0; self.block_counts.len()];
        for c in &self.contexts[1..] {
            if let Some(n) = calls.get_mut(c.function as usize) {
                *n += c.calls;
            }
        }
        calls
    }

    /// Every `(context, slot, samples)` with samples.
    pub fn samples(&self) -> impl Iterator<Item = (u32, u32, u64)> + '_ {
        self.contexts.iter().enumerate().flat_map(|(i, c)| {
            c.counts
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(move |(s, &n)| (i as u32, s as u32, n))
        })
    }

    /// The frames `(function, slot)` of a sample, outermost first: each caller at the line it
    /// called from, the leaf at `slot`. The root appears only for samples outside any function.
    pub fn stack(&self, ctx: u32, slot: u32) -> Vec<(u32, u32)> {
        let mut frames = vec![(self.contexts[ctx as usize].function, slot)];
        let mut c = ctx as usize;
        while c != 0 {
            let ctx = &self.contexts[c];
            c = ctx.parent as usize;
            if c != 0 {
                frames.push((self.contexts[c].function, ctx.call_slot));
            }
        }
        frames.reverse();
        frames
    }

    /// A run with only block and path counts, from a path profile's `(function, path, count)`
    /// triples: the paths are decoded to blocks through the database's CFGs.
    pub fn from_path_counts(
        db: &ProgramDb,
        counts: impl IntoIterator<Item = (FunctionId, u64, u64)>,
    ) -> Result<Run, ShowError> {
        let mut run = Run::new(db);
        run.has_stacks = false;
        let mut decoder = PathDecoder::new(db)?;
        for (f, p, n) in counts {
            *run.path_counts.entry((f.0, p)).or_default() += n;
            run.samples += n;
            let Some(blocks) = run.block_counts.get_mut(f.index()) else {
                continue;
            };
            for b in decoder.blocks(f, PathId(p), 0)? {
                if let Some(c) = blocks.get_mut(b.index()) {
                    *c += n;
                }
            }
        }
        // A profile's events are its path executions.
        run.events = run.samples;
        Ok(run)
    }
}

/// The number of blocks the database knows for a function (its CFG's or its lines').
pub fn block_count(f: &wpp_trace::Function) -> usize {
    let cfg = f.cfg.as_ref().map_or(0, |c| c.successors.len());
    cfg.max(f.block_lines.len())
}

#[derive(Clone, Copy, Debug)]
struct Frame {
    ctx: u32,
    slot: u32,
}

/// Builds a [`Run`] from events pushed one at a time.
pub struct Walker<'a> {
    map: &'a SourceMap,
    decoder: Option<PathDecoder>,
    run: Run,
    children: FxHashMap<(u32, u32, u32), u32>,
    stacks: FxHashMap<ThreadId, Vec<Frame>>,
    thread: ThreadId,
    stack: Vec<Frame>,
    seen_threads: rustc_hash::FxHashSet<ThreadId>,
    /// Whether the current thread is in `seen_threads` (checked on switches, not per event).
    counted: bool,
}

impl<'a> Walker<'a> {
    /// A walker over a recording of `db`'s program; path events need its CFGs.
    pub fn new(db: &'a ProgramDb, map: &'a SourceMap) -> Walker<'a> {
        Walker {
            map,
            decoder: PathDecoder::new(db).ok(),
            run: Run::new(db),
            children: FxHashMap::default(),
            stacks: FxHashMap::default(),
            thread: ThreadId(0),
            stack: Vec::new(),
            seen_threads: Default::default(),
            counted: false,
        }
    }

    /// Attributes one event.
    #[inline]
    pub fn push(&mut self, e: Event) -> Result<(), ShowError> {
        let at = self.run.events;
        self.run.events += 1;
        match e {
            Event::Thread(t) => self.switch(t),
            Event::Enter(f) => self.enter(f.0),
            Event::Leave => {
                if let Some(frame) = self.stack.pop() {
                    self.run.contexts[frame.ctx as usize].returns += 1;
                }
            }
            Event::Block(b) => {
                self.run.samples += 1;
                let top = self.top();
                let f = self.run.contexts[top.ctx as usize].function;
                let slot = self.map.slot(f, b.0);
                self.charge(top.ctx, slot);
                self.run.count_block(f, b.0, 1);
                self.set_slot(slot);
            }
            Event::Path(p) => self.path(p, at)?,
        }
        if !self.counted && !matches!(e, Event::Thread(_)) {
            self.counted = true;
            self.seen_threads.insert(self.thread);
            self.run.threads += 1;
        }
        Ok(())
    }

    /// The finished run (frames still open are simply dropped: their samples are counted).
    pub fn finish(self) -> Run {
        self.run
    }

    fn top(&self) -> Frame {
        self.stack
            .last()
            .copied()
            .unwrap_or(Frame { ctx: 0, slot: 0 })
    }

    fn set_slot(&mut self, slot: u32) {
        if let Some(top) = self.stack.last_mut() {
            top.slot = slot;
        }
    }

    #[inline]
    fn charge(&mut self, ctx: u32, slot: u32) {
        let counts = &mut self.run.contexts[ctx as usize].counts;
        match counts.get_mut(slot as usize) {
            Some(n) => *n += 1,
            None => counts[0] += 1,
        }
    }

    fn switch(&mut self, t: ThreadId) {
        if t != self.thread {
            let old =
                std::mem::replace(&mut self.stack, self.stacks.remove(&t).unwrap_or_default());
            self.stacks.insert(self.thread, old);
            self.thread = t;
            self.counted = self.seen_threads.contains(&t);
        }
    }

    fn enter(&mut self, f: u32) {
        let parent = self.top();
        let ctx = self
            .run
            .child(&mut self.children, self.map, (parent.ctx, parent.slot, f));
        self.run.contexts[ctx as usize].calls += 1;
        self.stack.push(Frame { ctx, slot: 0 });
    }

    fn path(&mut self, p: PathId, at: u64) -> Result<(), ShowError> {
        self.run.samples += 1;
        let top = self.top();
        let f = self.run.contexts[top.ctx as usize].function;
        *self.run.path_counts.entry((f, p.0)).or_default() += 1;
        let Some(decoder) = self.decoder.as_mut().filter(|_| f != ROOT) else {
            self.charge(top.ctx, 0);
            return Ok(());
        };
        let blocks = decoder.blocks(FunctionId(f), p, at)?;
        let first = blocks.first().map_or(0, |b| self.map.slot(f, b.0));
        let last = blocks.last().map_or(0, |b| self.map.slot(f, b.0));
        if let Some(counts) = self.run.block_counts.get_mut(f as usize) {
            for b in blocks {
                if let Some(c) = counts.get_mut(b.index()) {
                    *c += 1;
                }
            }
        }
        self.charge(top.ctx, first);
        self.set_slot(last);
        Ok(())
    }
}

/// A recording to replay: a `.wpp` grammar or a binary/text trace.
pub enum Recording {
    /// A grammar, expanded thread by thread (each start rule preceded by its `Thread` event).
    Wpp(Box<WppFile>),
    /// A trace, in file order, decoded on a thread of its own.
    Trace(Box<ReadAhead>),
}

impl Recording {
    /// The program database of the recording.
    pub fn program(&self) -> &ProgramDb {
        match self {
            Recording::Wpp(w) => &w.program,
            Recording::Trace(t) => t.program(),
        }
    }

    /// Calls `f` on every event in replay order, streaming (a grammar is expanded rule by rule,
    /// never materialized). `f` returns `Ok(false)` to stop early, and the replay stops there.
    pub fn replay(
        &mut self,
        f: impl FnMut(Event) -> Result<bool, ShowError>,
    ) -> Result<(), ShowError> {
        self.replay_threads(|_| true, f)
    }

    /// The threads of a grammar, which its header lists (a trace's are known once read).
    pub fn threads(&self) -> Option<Vec<ThreadId>> {
        match self {
            Recording::Wpp(w) => Some(w.grammar.starts().iter().map(|s| s.thread).collect()),
            Recording::Trace(_) => None,
        }
    }

    /// [`replay`](Self::replay), where a grammar expands only the threads `keep` accepts (a
    /// trace gives every event: its threads interleave).
    pub fn replay_threads(
        &mut self,
        keep: impl Fn(ThreadId) -> bool,
        mut f: impl FnMut(Event) -> Result<bool, ShowError>,
    ) -> Result<(), ShowError> {
        match self {
            Recording::Wpp(w) => {
                let events = w.alphabet.events();
                for start in w.grammar.starts().iter().filter(|s| keep(s.thread)) {
                    let expanded = Expander::new(&w.grammar, start.rule).map(|t| events[t.index()]);
                    for e in std::iter::once(Event::Thread(start.thread)).chain(expanded) {
                        if !f(e)? {
                            return Ok(());
                        }
                    }
                }
            }
            Recording::Trace(t) => {
                while let Some(batch) = t.next_batch()? {
                    for &e in batch {
                        if !f(e)? {
                            return Ok(());
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Walks the whole recording into a [`Run`]: a grammar by its rules
    /// ([`crate::rule_walk`]), in time proportional to the grammar where that is exact, else
    /// event by event.
    pub fn walk(self) -> Result<(ProgramDb, SourceMap, Run), ShowError> {
        if let Recording::Wpp(w) = &self {
            let db = w.program.clone();
            let map = SourceMap::new(&db);
            if let Some(run) = crate::rule_walk::walk(w, &db, &map) {
                return Ok((db, map, run));
            }
        }
        self.walk_events()
    }

    /// Walks the whole recording event by event (a grammar expanded), into a [`Run`].
    pub fn walk_events(mut self) -> Result<(ProgramDb, SourceMap, Run), ShowError> {
        let db = self.program().clone();
        let map = SourceMap::new(&db);
        let mut walker = Walker::new(&db, &map);
        self.replay(|e| walker.push(e).map(|()| true))?;
        let run = walker.finish();
        Ok((db, map, run))
    }
}
