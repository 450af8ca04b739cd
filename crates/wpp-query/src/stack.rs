//! The call stack seen through the grammar: each rule's effect on the stack, and the stack at
//! any position, without expanding the trace.
//!
//! `F f` pushes `f` and `E` pops (a pop of the empty stack does nothing: a recording may start
//! inside calls); blocks and paths leave the stack alone. A rule's effect is `(pops, net)`: how
//! far below its start it pops, and its net depth change, so it leaves `pops + net` of its own
//! frames pushed. The stack before a position is found walking left from it: a frame pushed
//! there is open unless a later `E` pops it, and a rule whose pushed frames are all popped
//! later is passed over whole, so only the rules holding open frames are entered.

use wpp_grammar::symbol::SymbolKind;
use wpp_grammar::{Grammar, RuleId, Symbol};
use wpp_trace::{Alphabet, Event, FunctionId};

/// How an event moves the call stack.
pub(crate) enum Move {
    Push(u32),
    Pop,
    Stay,
}

/// Each terminal's move.
pub(crate) fn moves(alphabet: &Alphabet) -> Vec<Move> {
    let of = |&e: &Event| match e {
        Event::Enter(f) => Move::Push(f.0),
        Event::Leave => Move::Pop,
        _ => Move::Stay,
    };
    alphabet.events().iter().map(of).collect()
}

/// A symbol's `(pops, net)`, given its rules'.
pub(crate) fn symbol_depth(s: Symbol, moves: &[Move], rules: &[(usize, i64)]) -> (i64, i64) {
    match s.kind() {
        SymbolKind::Terminal(t) => match moves[t.index()] {
            Move::Push(_) => (0, 1),
            Move::Pop => (1, -1),
            Move::Stay => (0, 0),
        },
        SymbolKind::Rule(c) => {
            let (p, n) = rules[c.index()];
            (p as i64, n)
        }
    }
}

/// Per rule `(pops, net)`, bottom-up. Right to left over a body, prepending `s` to a suffix
/// gives `pops = max(pops_s, pops_suffix − net_s)`.
pub(crate) fn depths(g: &Grammar, moves: &[Move]) -> Vec<(usize, i64)> {
    let mut out: Vec<(usize, i64)> = Vec::with_capacity(g.num_rules());
    for r in g.rules() {
        let (mut pops, mut net) = (0i64, 0i64);
        for &s in g.body(r).iter().rev() {
            let (ps, ns) = symbol_depth(s, moves, &out);
            pops = ps.max(pops - ns);
            net += ns;
        }
        out.push((pops as usize, net));
    }
    out
}

/// The call stack (outermost first) just before each of `positions` in `rule`'s expansion (a
/// position past the end: the stack at the end).
///
/// One pass over `rule`'s body keeps the stack as segments — "the bottom `k` frames a symbol
/// leaves pushed" — so a body symbol costs O(1) plus the segments its pops remove. At a
/// position, the symbol it falls in is walked left from it ([`Walk::open_frames`]) and the
/// segments are expanded into frames.
pub fn call_stacks(
    g: &Grammar,
    alphabet: &Alphabet,
    rule: RuleId,
    positions: &[u64],
) -> Vec<Vec<FunctionId>> {
    let moves = moves(alphabet);
    let walk = Walk {
        g,
        depths: depths(g, &moves),
        moves,
    };
    let mut order: Vec<usize> = (0..positions.len()).collect();
    order.sort_by_key(|&i| positions[i]);
    let mut out = vec![Vec::new(); positions.len()];
    let mut next = order.iter().peekable();
    let mut segments: Vec<(Symbol, u64)> = Vec::new();
    let mut at = 0u64;
    for &s in g.body(rule) {
        if next.peek().is_none() {
            break; // every position answered: the rest of the body is not needed
        }
        let len = g.symbol_len(s);
        while let Some(&&i) = next.peek().filter(|&&&i| positions[i] < at + len) {
            out[i] = walk.stack_inside(&segments, s, positions[i] - at);
            next.next();
        }
        let (pops, pushed) = walk.effect(s);
        pop(&mut segments, pops);
        if pushed > 0 {
            segments.push((s, pushed));
        }
        at += len;
    }
    for &i in next {
        out[i] = walk.stack_inside(&segments, Symbol::rule(rule), 0);
    }
    out
}

/// Removes the top `n` frames (those there are).
fn pop(segments: &mut Vec<(Symbol, u64)>, mut n: u64) {
    while n > 0 {
        let Some(top) = segments.last_mut() else {
            return;
        };
        match top.1 <= n {
            true => {
                n -= top.1;
                segments.pop();
            }
            false => {
                top.1 -= n;
                n = 0;
            }
        }
    }
}

/// A part of a body still to walk, right to left: a symbol's first `len` events, or the
/// symbols of `rule`'s body before `end`.
enum Item {
    Part(Symbol, u64),
    Body(RuleId, usize),
}

struct Walk<'g> {
    g: &'g Grammar,
    moves: Vec<Move>,
    depths: Vec<(usize, i64)>,
}

impl Walk<'_> {
    /// A symbol's `(pops, frames it leaves pushed)`.
    fn effect(&self, s: Symbol) -> (u64, u64) {
        let (pops, net) = symbol_depth(s, &self.moves, &self.depths);
        (pops as u64, (pops + net) as u64)
    }

    /// The stack before event `len` of symbol `s`, which follows `segments`.
    fn stack_inside(&self, segments: &[(Symbol, u64)], s: Symbol, len: u64) -> Vec<FunctionId> {
        let mut inner = Vec::new();
        let popped = self.open_frames(s, len, &mut inner);
        let mut below = segments.to_vec();
        pop(&mut below, popped);
        let mut stack = Vec::new();
        for (s, k) in below {
            let mut pushed = Vec::new();
            self.open_frames(s, self.g.symbol_len(s), &mut pushed);
            stack.extend(pushed.iter().rev().take(k as usize));
        }
        stack.extend(inner.iter().rev());
        stack
    }

    /// Appends, innermost first, the frames pushed in the first `len` events of `s` that those
    /// events do not pop again; returns how many frames they pop below `s`'s start. Walks left
    /// from event `len`, entering only rules that hold open frames.
    fn open_frames(&self, s: Symbol, len: u64, open: &mut Vec<FunctionId>) -> u64 {
        let g = self.g;
        let mut popped = 0u64;
        let mut todo = vec![Item::Part(s, len)];
        while let Some(item) = todo.pop() {
            let (s, len) = match item {
                Item::Part(s, len) => (s, len),
                Item::Body(_, 0) => continue,
                Item::Body(r, end) => {
                    todo.push(Item::Body(r, end - 1));
                    let s = g.body(r)[end - 1];
                    (s, g.symbol_len(s))
                }
            };
            if len == 0 {
                continue;
            }
            let (pops, pushed) = self.effect(s);
            match s.kind() {
                SymbolKind::Terminal(t) => match self.moves[t.index()] {
                    Move::Push(f) if popped == 0 => open.push(FunctionId(f)),
                    _ => popped = popped + pops - pushed.min(popped),
                },
                SymbolKind::Rule(c) if len < g.symbol_len(s) || pushed > popped => {
                    let body = g.body(c);
                    let (mut end, mut at) = (0, 0u64);
                    while at + g.symbol_len(body[end]) < len {
                        at += g.symbol_len(body[end]);
                        end += 1;
                    }
                    todo.push(Item::Body(c, end));
                    todo.push(Item::Part(body[end], len - at));
                }
                SymbolKind::Rule(_) => popped = popped - pushed + pops,
            }
        }
        popped
    }
}
