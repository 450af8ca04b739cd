//! The walk of a `.wpp` grammar without expanding it: a rule is walked once per calling state
//! it is used in, and its samples are multiplied by how often that happens.
//!
//! The streaming walk ([`crate::walk::Walker`]) costs one step per event, so 10^9 events take
//! a minute. But a rule always does the same thing from the same state, and the state of a
//! thread's shadow stack is one pair `(context, slot)`: the calling-context tree already says
//! which caller context and call-site slot each frame below the top was entered from. So the
//! walk computes each distinct `(rule, context, slot)` once, as an *entry* — the samples and
//! calls its body makes directly and the entries of its sub-rules — and counts how often each
//! entry is used. A final pass over the entries, parents before children, multiplies those
//! counts down (the way Larus §4.1 lets frequencies flow down the DAG of a grammar) and charges
//! each sample once per entry. Time and memory follow the distinct entries, which are about
//! the grammar's size times the calling contexts a rule runs in, not the trace.
//!
//! A rule whose first event is a block, a path or a return overwrites or pops the top frame's
//! slot before reading it, so its entry does not depend on the slot: its key carries
//! [`ANY_SLOT`], and one entry serves every line it is reached from.
//!
//! The result is exactly the streaming walk's [`Run`], contexts in the same order: a context
//! is first created inside the first computation of the first entry that reaches it, which is
//! its first occurrence in the trace. Grammars this cannot walk exactly — a `Thread` event
//! inside a rule, a path that does not decode, path events without CFGs — return `None`, and
//! the caller replays them event by event (which also reports the exact failing event).

use rustc_hash::FxHashMap;
use wpp_grammar::file::WppFile;
use wpp_grammar::symbol::SymbolKind;
use wpp_grammar::{Grammar, RuleId};
use wpp_paths::trace::PathDecoder;
use wpp_trace::{Event, FunctionId, PathId, ProgramDb, Terminal, ThreadId};

use crate::source::SourceMap;
use crate::walk::{Run, ROOT};

/// The key slot of a rule that sets or pops its top frame's slot before reading it.
const ANY_SLOT: u32 = u32::MAX;

/// A thread's shadow stack: the innermost context (0, the root, when empty) and its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct State {
    ctx: u32,
    slot: u32,
}

const START: State = State { ctx: 0, slot: 0 };

/// What a rule's body does directly, in [`RuleWalk::items`], packed in 8 bytes (the items
/// are most of the walk's memory): a 2-bit kind, then its operands.
#[derive(Clone, Copy, Debug)]
struct Item(u64);

/// An [`Item`] unpacked.
enum ItemKind {
    /// A block or path terminal charged in a context.
    Sample { ctx: u32, terminal: u32 },
    /// An entry of a context (an `Enter` event).
    Call { ctx: u32 },
    /// A sub-rule's entry.
    Rule { entry: u32 },
    /// A return from a frame of a context (an `E` event).
    Return { ctx: u32 },
}

/// Contexts must fit the 30 bits a sample item has for them.
const MAX_CONTEXTS: usize = 1 << 30;

impl Item {
    fn sample(ctx: u32, terminal: u32) -> Item {
        Item(u64::from(ctx) << 32 | u64::from(terminal))
    }

    fn call(ctx: u32) -> Item {
        Item(1 << 62 | u64::from(ctx))
    }

    fn rule(entry: u32) -> Item {
        Item(2 << 62 | u64::from(entry))
    }

    fn ret(ctx: u32) -> Item {
        Item(3 << 62 | u64::from(ctx))
    }

    fn kind(self) -> ItemKind {
        let low = self.0 as u32;
        match self.0 >> 62 {
            0 => ItemKind::Sample {
                ctx: (self.0 >> 32) as u32,
                terminal: low,
            },
            1 => ItemKind::Call { ctx: low },
            2 => ItemKind::Rule { entry: low },
            _ => ItemKind::Return { ctx: low },
        }
    }
}

/// One rule walked from one state: where its items end (they start where the previous
/// entry's end) and the state it leaves.
#[derive(Clone, Copy, Debug)]
struct Entry {
    items_end: usize,
    end: State,
}

/// A rule being walked, on the explicit stack (grammars nest deeper than the thread stack).
struct Pending {
    rule: RuleId,
    pos: usize,
    key: (u32, u32, u32),
    state: State,
    scratch: usize,
}

/// The state of one grammar walk.
struct RuleWalk<'a> {
    grammar: &'a Grammar,
    events: &'a [Event],
    map: &'a SourceMap,
    decoder: Option<PathDecoder>,
    run: Run,
    children: FxHashMap<(u32, u32, u32), u32>,
    rules: Vec<RuleMemo>,
    memo: FxHashMap<(u32, u32, u32), u32>,
    entries: Vec<Entry>,
    items: Vec<Item>,
    scratch: Vec<Item>,
}

/// Walks `wpp` by rule entries; `None` when only an event-by-event replay is exact.
pub(crate) fn walk(wpp: &WppFile, db: &ProgramDb, map: &SourceMap) -> Option<Run> {
    let events = wpp.alphabet.events();
    let grammar = &wpp.grammar;
    // The alphabet holds exactly the events the grammar uses.
    let has = |pred: fn(&Event) -> bool| events.iter().any(pred);
    let decoder = PathDecoder::new(db).ok();
    if has(|e| matches!(e, Event::Thread(_)))
        || (decoder.is_none() && has(|e| matches!(e, Event::Path(_))))
    {
        return None;
    }
    let mut w = RuleWalk {
        grammar,
        events,
        map,
        decoder,
        run: Run::new(db),
        children: FxHashMap::default(),
        rules: rule_memos(grammar, events),
        memo: FxHashMap::default(),
        entries: Vec::new(),
        items: Vec::new(),
        scratch: Vec::new(),
    };
    let mut states: FxHashMap<ThreadId, State> = FxHashMap::default();
    let mut roots = Vec::new();
    for start in grammar.starts() {
        w.run.events += 1 + grammar.expanded_len(start.rule);
        let state = states.entry(start.thread).or_insert(START);
        if let Some((entry, end)) = w.entry(start.rule, *state)? {
            roots.push(entry);
            *state = end;
        }
    }
    w.run.threads = grammar
        .starts()
        .iter()
        .filter(|s| grammar.expanded_len(s.rule) > 0)
        .map(|s| s.thread)
        .collect::<rustc_hash::FxHashSet<_>>()
        .len();
    w.charge(&roots)?;
    Some(w.run)
}

/// How a rule's memo key is made: from its first event.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Opening {
    /// The rule expands to nothing.
    Empty,
    /// It opens with a call, which reads the top frame's slot.
    ReadsSlot,
    /// It opens with a block, a path or a return: the slot is set or popped before any read.
    SetsSlot,
}

/// Per rule: its [`Opening`] and its most recent entry. Most rules run in one state, so this
/// answers most lookups with one memory access instead of a probe of the memo table.
#[derive(Clone, Copy)]
struct RuleMemo {
    opening: Opening,
    key: (u32, u32),
    entry: u32,
    end: State,
}

const NO_ENTRY: u32 = u32::MAX;

/// Every rule's [`RuleMemo`], bottom-up (bodies refer only to lower rules).
fn rule_memos(grammar: &Grammar, events: &[Event]) -> Vec<RuleMemo> {
    let mut rules: Vec<RuleMemo> = Vec::with_capacity(grammar.num_rules());
    for r in grammar.rules() {
        let opening = grammar
            .body(r)
            .iter()
            .map(|s| match s.kind() {
                SymbolKind::Terminal(t) => match events[t.index()] {
                    Event::Enter(_) => Opening::ReadsSlot,
                    _ => Opening::SetsSlot,
                },
                SymbolKind::Rule(sub) => rules[sub.index()].opening,
            })
            .find(|&o| o != Opening::Empty)
            .unwrap_or(Opening::Empty);
        rules.push(RuleMemo {
            opening,
            key: (0, 0),
            entry: NO_ENTRY,
            end: START,
        });
    }
    rules
}

impl RuleWalk<'_> {
    /// The memo key of `rule` entered at `state`, `None` for a rule that expands to nothing.
    fn key(&self, rule: RuleId, state: State) -> Option<(u32, u32, u32)> {
        let slot = match self.rules[rule.index()].opening {
            Opening::Empty => return None,
            Opening::ReadsSlot => state.slot,
            Opening::SetsSlot => ANY_SLOT,
        };
        Some((rule.0, state.ctx, slot))
    }

    /// The entry already made for `key`, and the state it leaves.
    fn lookup(&mut self, key: (u32, u32, u32)) -> Option<(u32, State)> {
        let m = &mut self.rules[key.0 as usize];
        if m.entry != NO_ENTRY && m.key == (key.1, key.2) {
            return Some((m.entry, m.end));
        }
        let entry = *self.memo.get(&key)?;
        let end = self.entries[entry as usize].end;
        (m.key, m.entry, m.end) = ((key.1, key.2), entry, end);
        Some((entry, end))
    }

    /// The entry of `rule` from `state` and the state it leaves, walking what is not memoized.
    fn entry(&mut self, rule: RuleId, state: State) -> Option<Option<(u32, State)>> {
        let Some(key) = self.key(rule, state) else {
            return Some(None);
        };
        if let Some(found) = self.lookup(key) {
            return Some(Some(found));
        }
        let mut stack = vec![Pending {
            rule,
            pos: 0,
            key,
            state,
            scratch: self.scratch.len(),
        }];
        loop {
            let top = stack
                .last_mut()
                .expect("the stack ends when its last rule does");
            let Some(&symbol) = self.grammar.body(top.rule).get(top.pos) else {
                let done = stack.pop().expect("a rule is pending");
                let entry = self.finish(&done);
                let Some(parent) = stack.last_mut() else {
                    return Some(Some((entry, done.state)));
                };
                self.scratch.push(Item::rule(entry));
                parent.state = done.state;
                continue;
            };
            top.pos += 1;
            match symbol.kind() {
                SymbolKind::Terminal(t) => {
                    let state = top.state;
                    top.state = self.step(state, t)?;
                }
                SymbolKind::Rule(sub) => {
                    let Some(key) = self.key(sub, top.state) else {
                        continue;
                    };
                    if let Some((entry, end)) = self.lookup(key) {
                        self.scratch.push(Item::rule(entry));
                        top.state = end;
                    } else {
                        let state = top.state;
                        stack.push(Pending {
                            rule: sub,
                            pos: 0,
                            key,
                            state,
                            scratch: self.scratch.len(),
                        });
                    }
                }
            }
        }
    }

    /// Moves a walked rule's items from the scratch stack into a new entry.
    fn finish(&mut self, done: &Pending) -> u32 {
        self.items.extend(self.scratch.drain(done.scratch..));
        let id = self.entries.len() as u32;
        self.entries.push(Entry {
            items_end: self.items.len(),
            end: done.state,
        });
        self.memo.insert(done.key, id);
        let m = &mut self.rules[done.rule.index()];
        (m.key, m.entry, m.end) = ((done.key.1, done.key.2), id, done.state);
        id
    }

    /// One terminal from `state`: as [`crate::walk::Walker::push`], recording instead of counting.
    fn step(&mut self, state: State, t: Terminal) -> Option<State> {
        match self.events[t.index()] {
            Event::Enter(f) => {
                let ctx = self.child(state, f.0)?;
                self.scratch.push(Item::call(ctx));
                Some(State { ctx, slot: 0 })
            }
            Event::Leave if state.ctx == 0 => Some(state),
            Event::Leave => {
                self.scratch.push(Item::ret(state.ctx));
                let c = &self.run.contexts[state.ctx as usize];
                Some(State {
                    ctx: c.parent,
                    slot: c.call_slot,
                })
            }
            Event::Block(b) => {
                self.sample(state, t);
                let f = self.run.contexts[state.ctx as usize].function;
                Some(self.set_slot(state, self.map.slot(f, b.0)))
            }
            Event::Path(p) => {
                self.sample(state, t);
                let f = self.run.contexts[state.ctx as usize].function;
                if f == ROOT {
                    return Some(state);
                }
                let blocks = self.decoder.as_mut()?.blocks(FunctionId(f), p, 0).ok()?;
                let last = blocks.last().map_or(0, |b| self.map.slot(f, b.0));
                Some(self.set_slot(state, last))
            }
            Event::Thread(_) => None,
        }
    }

    fn sample(&mut self, state: State, t: Terminal) {
        self.scratch.push(Item::sample(state.ctx, t.0));
    }

    /// The top frame's slot becomes `slot`; the root (no frame) keeps slot 0.
    fn set_slot(&self, state: State, slot: u32) -> State {
        match state.ctx {
            0 => state,
            ctx => State { ctx, slot },
        }
    }

    /// The context `f` is entered in from `state`, created on first use (`None` past
    /// [`MAX_CONTEXTS`]).
    fn child(&mut self, state: State, f: u32) -> Option<u32> {
        if self.run.contexts.len() >= MAX_CONTEXTS {
            return None;
        }
        let ctx = self
            .run
            .child(&mut self.children, self.map, (state.ctx, state.slot, f));
        Some(ctx)
    }

    /// Multiplies use counts from the roots down (an entry's id is above its sub-entries') and
    /// charges every sample and call.
    fn charge(&mut self, roots: &[u32]) -> Option<()> {
        let mut uses = vec![0u64; self.entries.len()];
        for &r in roots {
            uses[r as usize] += 1;
        }
        let mut paths: FxHashMap<(u32, u32), u64> = FxHashMap::default();
        let items = std::mem::take(&mut self.items);
        for e in (0..self.entries.len()).rev() {
            let n = uses[e];
            let from = e.checked_sub(1).map_or(0, |p| self.entries[p].items_end);
            if n == 0 {
                continue;
            }
            for item in &items[from..self.entries[e].items_end] {
                match item.kind() {
                    ItemKind::Sample { ctx, terminal } => match self.events[terminal as usize] {
                        Event::Block(b) => self.charge_block(ctx, b.0, n),
                        _ => *paths.entry((ctx, terminal)).or_default() += n,
                    },
                    ItemKind::Call { ctx } => self.run.contexts[ctx as usize].calls += n,
                    ItemKind::Rule { entry } => uses[entry as usize] += n,
                    ItemKind::Return { ctx } => self.run.contexts[ctx as usize].returns += n,
                }
            }
        }
        for ((ctx, terminal), n) in paths {
            let Event::Path(p) = self.events[terminal as usize] else {
                unreachable!("only blocks and paths are samples");
            };
            self.run.samples += n;
            let f = self.run.contexts[ctx as usize].function;
            let slot = self.count_path(f, p, n)?;
            self.charge_slot(ctx, slot, n);
        }
        Some(())
    }

    /// `n` executions of block `b` in context `ctx`, counted as the streaming walk counts one.
    fn charge_block(&mut self, ctx: u32, b: u32, n: u64) {
        self.run.samples += n;
        let f = self.run.contexts[ctx as usize].function;
        self.run.count_block(f, b, n);
        self.charge_slot(ctx, self.map.slot(f, b), n);
    }

    fn charge_slot(&mut self, ctx: u32, slot: u32, n: u64) {
        let counts = &mut self.run.contexts[ctx as usize].counts;
        match counts.get_mut(slot as usize) {
            Some(c) => *c += n,
            None => counts[0] += n,
        }
    }

    /// Counts `n` executions of path `p` of `f` and its blocks; the slot of its first block.
    fn count_path(&mut self, f: u32, p: PathId, n: u64) -> Option<u32> {
        *self.run.path_counts.entry((f, p.0)).or_default() += n;
        if f == ROOT {
            return Some(0);
        }
        let blocks = self.decoder.as_mut()?.blocks(FunctionId(f), p, 0).ok()?;
        let first = blocks.first().map_or(0, |b| self.map.slot(f, b.0));
        if let Some(counts) = self.run.block_counts.get_mut(f as usize) {
            for b in blocks {
                if let Some(c) = counts.get_mut(b.index()) {
                    *c += n;
                }
            }
        }
        Some(first)
    }
}
