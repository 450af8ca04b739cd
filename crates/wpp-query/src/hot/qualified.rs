//! The grammar over *qualified* events: each event paired with the function it runs in.
//!
//! Block and path ids are local to a function and `E` leaves whichever function is on top of
//! the call stack, so the same terminal means different code under different callers, and a
//! grammar rule used in several calling contexts stands for different qualified strings (Larus
//! §4 counts strings of terminals, which for `B 0` merges every function's entry block). This
//! module rewrites the grammar so that each terminal is a pair (event, function): `F f` runs in
//! `f`, `B`/`P`/`E` in the function on top of the stack. It never expands the trace:
//!
//! 1. bottom-up, each rule's stack effect: how far below its start it pops (`pops`), its net
//!    depth change, and the functions it leaves pushed (only the top `reach` of them, where
//!    `reach` bounds how deep any suffix of a thread's events reads the stack, so nothing read
//!    is dropped);
//! 2. top-down (parents before children, as in [`rule_frequencies`](crate::dag::rule_frequencies)),
//!    each rule is specialised by its *context*: the top `pops + 1` functions of the stack
//!    where it starts, which fix every function its expansion reads. A rule used under two
//!    contexts becomes two rules; one used under one context stays one.
//!
//! The result is a valid grammar (children before parents) of the same expansion length per
//! thread, whose terminal `i` is [`Qualified::events`]`[i]`; its size is the original's times
//! the number of contexts per rule (1 for most rules in practice).

use rustc_hash::FxHashMap;
use wpp_grammar::grammar::GrammarError;
use wpp_grammar::symbol::SymbolKind;
use wpp_grammar::{Grammar, RuleId, StartRule, Symbol};
use wpp_trace::{Alphabet, FunctionId, Terminal};

use crate::stack::{depths, moves, symbol_depth, Move};

/// A function on the stack, or [`NONE`] below the bottom (a thread's first events, or a
/// recording that started inside a call).
type Frame = u32;
/// No function.
const NONE: Frame = u32::MAX;

/// The qualified grammar and its alphabet.
pub struct Qualified {
    /// The grammar over qualified terminals.
    pub grammar: Grammar,
    /// Per qualified terminal: the original terminal and its function, if known.
    pub events: Vec<(Terminal, Option<FunctionId>)>,
    /// Per qualified rule: the original rule it specialises.
    pub origin: Vec<RuleId>,
}

/// The functions each rule leaves pushed (the top `reach` of them, bottom first), all rules'
/// lists in one arena (one allocation, not one per rule: grammars have millions of rules).
struct Pushed {
    frames: Vec<Frame>,
    /// Per rule: where its list ends in `frames` (it starts where the previous rule's ends).
    ends: Vec<usize>,
}

impl Pushed {
    fn of(&self, r: RuleId) -> &[Frame] {
        let from = r.index().checked_sub(1).map_or(0, |p| self.ends[p]);
        &self.frames[from..self.ends[r.index()]]
    }
}

/// The number of top frames ever read: one more than the deepest any suffix of a thread's
/// events pops below the stack where it starts. Such a suffix may start inside a rule and go
/// on after the rule's end, through its parents' bodies, so the deepest the events after a use
/// of each rule pop flows from parents to children (as frequencies do in
/// [`rule_frequencies`](crate::dag::rule_frequencies)); a rule's own body bounds none of it.
fn reach(g: &Grammar, moves: &[Move], depths: &[(usize, i64)]) -> usize {
    let mut after = vec![0i64; g.num_rules()];
    let mut deepest = 0i64;
    for r in g.rules().rev() {
        let mut pops = after[r.index()];
        deepest = deepest.max(pops);
        for &s in g.body(r).iter().rev() {
            if let SymbolKind::Rule(c) = s.kind() {
                after[c.index()] = after[c.index()].max(pops);
            }
            let (ps, ns) = symbol_depth(s, moves, depths);
            pops = ps.max(pops - ns);
            deepest = deepest.max(pops);
        }
    }
    deepest as usize + 1
}

/// The functions each rule leaves pushed (top `reach` only).
fn pushed_lists(g: &Grammar, moves: &[Move], pops: &[(usize, i64)], reach: usize) -> Pushed {
    let mut out = Pushed {
        frames: Vec::new(),
        ends: Vec::with_capacity(g.num_rules()),
    };
    let mut stack: Vec<Frame> = Vec::new();
    for r in g.rules() {
        stack.clear();
        for &s in g.body(r) {
            match s.kind() {
                SymbolKind::Terminal(t) => match moves[t.index()] {
                    Move::Push(f) => stack.push(f),
                    Move::Pop => {
                        stack.pop();
                    }
                    Move::Stay => {}
                },
                SymbolKind::Rule(c) => apply(&mut stack, pops[c.index()].0, out.of(c)),
            }
            trim(&mut stack, reach);
        }
        out.frames.extend_from_slice(&stack);
        out.ends.push(out.frames.len());
    }
    out
}

/// Pops `pops` frames (those present) and pushes `pushed`.
fn apply(stack: &mut Vec<Frame>, pops: usize, pushed: &[Frame]) {
    let keep = stack.len().saturating_sub(pops);
    stack.truncate(keep);
    stack.extend_from_slice(pushed);
}

/// Keeps the top `reach` frames: deeper ones are never read.
fn trim(stack: &mut Vec<Frame>, reach: usize) {
    if stack.len() > reach {
        stack.drain(..stack.len() - reach);
    }
}

/// The top `n` frames of `stack`, padded with [`NONE`] below its bottom, into `out`.
fn top(stack: &[Frame], n: usize, out: &mut Vec<Frame>) {
    let have = stack.len().min(n);
    out.clear();
    out.resize(n - have, NONE);
    out.extend_from_slice(&stack[stack.len() - have..]);
}

/// Each rule's contexts, numbered in order of discovery. All contexts of a rule have the same
/// length (its `pops + 1`), so a rule's are one list; most rules have one context, and only
/// rules with more get a map from context to number (a map and two copies per rule were most
/// of `wpp hot`'s memory on grammars of millions of rules).
struct Contexts {
    /// Per rule: its contexts, concatenated.
    list: Vec<Vec<Frame>>,
    /// Per rule with several contexts: each context's number.
    several: FxHashMap<u32, FxHashMap<Vec<Frame>, u32>>,
}

impl Contexts {
    fn new(rules: usize) -> Self {
        Contexts {
            list: vec![Vec::new(); rules],
            several: FxHashMap::default(),
        }
    }

    /// Frees the contexts of `r` (its parents, all walked, will not ask again).
    fn forget(&mut self, r: RuleId) {
        self.list[r.index()] = Vec::new();
        self.several.remove(&(r.0));
    }

    /// How many contexts rule `r`, whose contexts have `n` frames, has.
    fn count(&self, r: RuleId, n: usize) -> usize {
        self.list[r.index()].len() / n
    }

    /// Context `i` of rule `r`, whose contexts have `n` frames.
    fn get(&self, r: RuleId, n: usize, i: usize) -> &[Frame] {
        &self.list[r.index()][i * n..(i + 1) * n]
    }

    /// The number of context `ctx` of rule `r`, added if new (this runs once per symbol of the
    /// grammar).
    fn id(&mut self, r: RuleId, ctx: &[Frame]) -> u32 {
        let n = ctx.len();
        let list = &mut self.list[r.index()];
        let count = list.len() / n;
        if count == 0 {
            list.extend_from_slice(ctx);
            return 0;
        }
        if list[..n] == *ctx {
            return 0;
        }
        let map = self.several.entry(r.0).or_insert_with(|| {
            let mut first = FxHashMap::default();
            first.insert(list[..n].to_vec(), 0);
            first
        });
        if let Some(&k) = map.get(ctx) {
            return k;
        }
        map.insert(ctx.to_vec(), count as u32);
        list.extend_from_slice(ctx);
        count as u32
    }
}

/// A specialised body symbol before the final rule ids are known.
#[derive(Clone, Copy)]
enum Item {
    Terminal(u32),
    Child(RuleId, u32),
}

/// The walk of rule bodies under their contexts, shared by [`qualify`] and
/// [`qualified_frequencies`].
struct Specialiser<'g> {
    g: &'g Grammar,
    moves: Vec<Move>,
    pops: Vec<(usize, i64)>,
    pushed: Pushed,
    reach: usize,
    contexts: Contexts,
    qterms: FxHashMap<(u32, Frame), u32>,
    events: Vec<(Terminal, Option<FunctionId>)>,
    /// The stack during a walk, and a padded context (scratch, reused).
    stack: Vec<Frame>,
    padded: Vec<Frame>,
}

impl<'g> Specialiser<'g> {
    fn new(g: &'g Grammar, alphabet: &Alphabet) -> Self {
        let moves = moves(alphabet);
        let pops = depths(g, &moves);
        let reach = reach(g, &moves, &pops);
        let pushed = pushed_lists(g, &moves, &pops, reach);
        Specialiser {
            g,
            moves,
            pops,
            pushed,
            reach,
            contexts: Contexts::new(g.num_rules()),
            qterms: FxHashMap::default(),
            events: Vec::new(),
            stack: Vec::new(),
            padded: Vec::new(),
        }
    }

    /// The frames of each context of `r`.
    fn context_len(&self, r: RuleId) -> usize {
        self.pops[r.index()].0 + 1
    }

    /// How many contexts `r` has.
    fn contexts_of(&self, r: RuleId) -> usize {
        self.contexts.count(r, self.context_len(r))
    }

    /// The context number of each start rule (the empty stack).
    fn starts(&mut self) -> Vec<(StartRule, u32)> {
        let g = self.g;
        g.starts()
            .iter()
            .map(|&s| {
                let ctx = vec![NONE; self.context_len(s.rule)];
                (s, self.contexts.id(s.rule, &ctx))
            })
            .collect()
    }

    /// Walks the body of `r` under its context `i`, giving each specialised symbol to `emit`.
    fn walk(&mut self, r: RuleId, i: usize, mut emit: impl FnMut(Item)) {
        let g = self.g;
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        stack.extend_from_slice(self.contexts.get(r, self.context_len(r), i));
        for &s in g.body(r) {
            match s.kind() {
                SymbolKind::Terminal(t) => {
                    let f = match self.moves[t.index()] {
                        Move::Push(f) => f,
                        _ => stack.last().copied().unwrap_or(NONE),
                    };
                    let next = self.events.len() as u32;
                    let events = &mut self.events;
                    let q = *self.qterms.entry((t.0, f)).or_insert_with(|| {
                        events.push((t, (f != NONE).then_some(FunctionId(f))));
                        next
                    });
                    emit(Item::Terminal(q));
                    match self.moves[t.index()] {
                        Move::Push(f) => stack.push(f),
                        Move::Pop => {
                            stack.pop();
                        }
                        Move::Stay => {}
                    }
                }
                SymbolKind::Rule(c) => {
                    let n = self.context_len(c);
                    let k = match stack.len().checked_sub(n) {
                        Some(from) => self.contexts.id(c, &stack[from..]),
                        None => {
                            top(&stack, n, &mut self.padded);
                            self.contexts.id(c, &self.padded)
                        }
                    };
                    emit(Item::Child(c, k));
                    apply(&mut stack, self.pops[c.index()].0, self.pushed.of(c));
                }
            }
            trim(&mut stack, self.reach);
        }
        self.stack = stack;
    }
}

/// The specialised bodies of every rule, in one arena: per rule, its contexts' bodies one
/// after the other.
struct Bodies {
    items: Vec<Item>,
    /// Per specialised body, in the order walked (rules top-down): where it ends in `items`.
    ends: Vec<usize>,
    /// Per rule: its first body's index in `ends`, and how many it has.
    of_rule: Vec<(usize, usize)>,
}

impl Bodies {
    /// Body `k` of rule `r`.
    fn body(&self, r: RuleId, k: usize) -> &[Item] {
        let b = self.of_rule[r.index()].0 + k;
        let from = b.checked_sub(1).map_or(0, |p| self.ends[p]);
        &self.items[from..self.ends[b]]
    }
}

/// Rewrites `g` over qualified terminals (see the module documentation).
pub fn qualify(g: &Grammar, alphabet: &Alphabet) -> Result<Qualified, GrammarError> {
    let mut sp = Specialiser::new(g, alphabet);
    let starts = sp.starts();
    let mut bodies = Bodies {
        items: Vec::with_capacity(g.num_symbols()),
        ends: Vec::with_capacity(g.num_rules()),
        of_rule: vec![(0, 0); g.num_rules()],
    };
    for r in g.rules().rev() {
        // Every context of `r` is known: its parents, all above it, are done.
        let count = sp.contexts_of(r);
        bodies.of_rule[r.index()] = (bodies.ends.len(), count);
        for i in 0..count {
            sp.walk(r, i, |item| bodies.items.push(item));
            bodies.ends.push(bodies.items.len());
        }
        sp.contexts.forget(r);
    }
    build(g, &bodies, starts, sp.events)
}

/// The qualified terminals of `g` and how often each occurs in the expansion, without building
/// the qualified grammar: frequencies of (rule, context) flow down as in
/// [`rule_frequencies`](crate::dag::rule_frequencies), so memory is the contexts only.
pub fn qualified_frequencies(
    g: &Grammar,
    alphabet: &Alphabet,
) -> (Vec<(Terminal, Option<FunctionId>)>, Vec<u64>) {
    let mut sp = Specialiser::new(g, alphabet);
    let mut freq: Vec<Vec<u64>> = vec![Vec::new(); g.num_rules()];
    let mut terminal: Vec<u64> = Vec::new();
    for (s, k) in sp.starts() {
        let f = &mut freq[s.rule.index()];
        f.resize(f.len().max(k as usize + 1), 0);
        f[k as usize] = f[k as usize].saturating_add(1);
    }
    for r in g.rules().rev() {
        let own = std::mem::take(&mut freq[r.index()]);
        for (i, &n) in own.iter().enumerate() {
            sp.walk(r, i, |item| match item {
                Item::Terminal(q) => {
                    let q = q as usize;
                    terminal.resize(terminal.len().max(q + 1), 0);
                    terminal[q] = terminal[q].saturating_add(n);
                }
                Item::Child(c, k) => {
                    let f = &mut freq[c.index()];
                    f.resize(f.len().max(k as usize + 1), 0);
                    f[k as usize] = f[k as usize].saturating_add(n);
                }
            });
        }
        // A rule's contexts are not needed once its body has been walked under each.
        sp.contexts.forget(r);
    }
    terminal.resize(sp.events.len(), 0);
    (sp.events, terminal)
}

/// Numbers the specialised rules bottom-up (rule by rule, contexts in order) and builds the
/// grammar.
fn build(
    g: &Grammar,
    bodies: &Bodies,
    starts: Vec<(StartRule, u32)>,
    events: Vec<(Terminal, Option<FunctionId>)>,
) -> Result<Qualified, GrammarError> {
    let mut first = Vec::with_capacity(g.num_rules());
    let mut origin = Vec::new();
    for r in g.rules() {
        first.push(origin.len() as u32);
        origin.extend(std::iter::repeat_n(r, bodies.of_rule[r.index()].1));
    }
    let id = |c: RuleId, k: u32| RuleId(first[c.index()] + k);
    let symbols = origin.iter().enumerate().map(|(q, &r)| {
        let k = q - first[r.index()] as usize;
        bodies.body(r, k).iter().map(|&item| match item {
            Item::Terminal(q) => Symbol::terminal(Terminal(q)),
            Item::Child(c, k) => Symbol::rule(id(c, k)),
        })
    });
    let starts = starts
        .into_iter()
        .map(|(s, k)| StartRule {
            rule: id(s.rule, k),
            ..s
        })
        .collect();
    let grammar = Grammar::new(events.len() as u32, symbols, starts)?;
    Ok(Qualified {
        grammar,
        events,
        origin,
    })
}
