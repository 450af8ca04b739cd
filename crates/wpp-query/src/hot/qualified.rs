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

/// A rule's effect on the call stack.
#[derive(Clone, Default)]
struct Effect {
    /// How many frames below its start it pops at most.
    pops: usize,
    /// Frames it leaves pushed (the top `reach` of them), bottom first.
    pushed: Vec<Frame>,
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
fn pushed_lists(g: &Grammar, moves: &[Move], pops: &[(usize, i64)], reach: usize) -> Vec<Effect> {
    let mut out: Vec<Effect> = Vec::with_capacity(g.num_rules());
    for r in g.rules() {
        let mut stack: Vec<Frame> = Vec::new();
        for &s in g.body(r) {
            match s.kind() {
                SymbolKind::Terminal(t) => match moves[t.index()] {
                    Move::Push(f) => stack.push(f),
                    Move::Pop => {
                        stack.pop();
                    }
                    Move::Stay => {}
                },
                SymbolKind::Rule(c) => apply(&mut stack, &out[c.index()]),
            }
            trim(&mut stack, reach);
        }
        out.push(Effect {
            pops: pops[r.index()].0,
            pushed: stack,
        });
    }
    out
}

/// Pops `e.pops` frames (those present) and pushes `e.pushed`.
fn apply(stack: &mut Vec<Frame>, e: &Effect) {
    let keep = stack.len().saturating_sub(e.pops);
    stack.truncate(keep);
    stack.extend_from_slice(&e.pushed);
}

/// Keeps the top `reach` frames: deeper ones are never read.
fn trim(stack: &mut Vec<Frame>, reach: usize) {
    if stack.len() > reach {
        stack.drain(..stack.len() - reach);
    }
}

/// The top `n` frames of `stack`, padded with [`NONE`] below its bottom.
fn top(stack: &[Frame], n: usize) -> Vec<Frame> {
    let have = stack.len().min(n);
    let mut ctx = vec![NONE; n - have];
    ctx.extend_from_slice(&stack[stack.len() - have..]);
    ctx
}

/// Each rule's contexts, numbered in order of discovery.
struct Contexts {
    map: Vec<FxHashMap<Vec<Frame>, u32>>,
    list: Vec<Vec<Vec<Frame>>>,
}

impl Contexts {
    fn new(rules: usize) -> Self {
        Contexts {
            map: vec![FxHashMap::default(); rules],
            list: vec![Vec::new(); rules],
        }
    }

    /// Frees the contexts of `r` (its parents, all walked, will not ask again).
    fn forget(&mut self, r: RuleId) {
        self.map[r.index()] = FxHashMap::default();
        self.list[r.index()] = Vec::new();
    }

    /// The number of context `ctx` of rule `r`, added if new (allocating only then: this runs
    /// once per symbol of the grammar).
    fn id(&mut self, r: RuleId, ctx: &[Frame]) -> u32 {
        // Most rules have one context: compare with it before hashing.
        if self.list[r.index()].first().is_some_and(|c| c[..] == *ctx) {
            return 0;
        }
        if let Some(&k) = self.map[r.index()].get(ctx) {
            return k;
        }
        let next = self.list[r.index()].len() as u32;
        self.list[r.index()].push(ctx.to_vec());
        self.map[r.index()].insert(ctx.to_vec(), next);
        next
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
    effects: Vec<Effect>,
    reach: usize,
    contexts: Contexts,
    qterms: FxHashMap<(u32, Frame), u32>,
    events: Vec<(Terminal, Option<FunctionId>)>,
}

impl<'g> Specialiser<'g> {
    fn new(g: &'g Grammar, alphabet: &Alphabet) -> Self {
        let moves = moves(alphabet);
        let pops = depths(g, &moves);
        let reach = reach(g, &moves, &pops);
        let effects = pushed_lists(g, &moves, &pops, reach);
        Specialiser {
            g,
            moves,
            pops,
            effects,
            reach,
            contexts: Contexts::new(g.num_rules()),
            qterms: FxHashMap::default(),
            events: Vec::new(),
        }
    }

    /// The context number of each start rule (the empty stack).
    fn starts(&mut self) -> Vec<(StartRule, u32)> {
        let g = self.g;
        g.starts()
            .iter()
            .map(|&s| {
                let ctx = vec![NONE; self.pops[s.rule.index()].0 + 1];
                (s, self.contexts.id(s.rule, &ctx))
            })
            .collect()
    }

    /// Walks the body of `r` under its context `i`, giving each specialised symbol to `emit`.
    fn walk(&mut self, r: RuleId, i: usize, mut emit: impl FnMut(Item)) {
        let g = self.g;
        let mut stack = self.contexts.list[r.index()][i].clone();
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
                    let n = self.pops[c.index()].0 + 1;
                    let k = match stack.len().checked_sub(n) {
                        Some(from) => self.contexts.id(c, &stack[from..]),
                        None => self.contexts.id(c, &top(&stack, n)),
                    };
                    emit(Item::Child(c, k));
                    apply(&mut stack, &self.effects[c.index()]);
                }
            }
            trim(&mut stack, self.reach);
        }
    }
}

/// Rewrites `g` over qualified terminals (see the module documentation).
pub fn qualify(g: &Grammar, alphabet: &Alphabet) -> Result<Qualified, GrammarError> {
    let mut sp = Specialiser::new(g, alphabet);
    let starts = sp.starts();
    let mut bodies: Vec<Vec<Vec<Item>>> = vec![Vec::new(); g.num_rules()];
    for r in g.rules().rev() {
        // Every context of `r` is known: its parents, all above it, are done.
        for i in 0..sp.contexts.list[r.index()].len() {
            let mut body = Vec::with_capacity(g.body(r).len());
            sp.walk(r, i, |item| body.push(item));
            bodies[r.index()].push(body);
        }
    }
    build(g, bodies, starts, sp.events)
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
    bodies: Vec<Vec<Vec<Item>>>,
    starts: Vec<(StartRule, u32)>,
    events: Vec<(Terminal, Option<FunctionId>)>,
) -> Result<Qualified, GrammarError> {
    let mut first = Vec::with_capacity(bodies.len());
    let mut origin = Vec::new();
    for (r, b) in g.rules().zip(&bodies) {
        first.push(origin.len() as u32);
        origin.extend(std::iter::repeat_n(r, b.len()));
    }
    let id = |c: RuleId, k: u32| RuleId(first[c.index()] + k);
    let symbols = bodies.into_iter().flatten().map(|body| {
        body.into_iter().map(|item| match item {
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
