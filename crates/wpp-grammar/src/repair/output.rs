//! From Re-Pair's binary rules and final sequences to a [`Grammar`] that satisfies SEQUITUR's
//! two invariants.
//!
//! 1. **Rule utility** (Tallam–Gupta Figure 14's last step): every rule used once is inlined
//!    into its user (and a rule whose body shrank to one symbol into all its users).
//! 2. **Digram uniqueness.** Inlining joins the neighbours of the inlined reference to the ends
//!    of its body, and such a junction can repeat a digram found elsewhere. Offline that would
//!    need a digram chosen before a more frequent one, and no test or benchmark has shown it,
//!    but windows choose by local frequency and do produce it. So all bodies (as separate
//!    streams) go through the Re-Pair engine once more; if it makes new rules, step 1 runs
//!    again. A round that continues has shrunk the grammar by at least one symbol (new rules
//!    never grow it, inlining shrinks it), so this ends; offline the first engine run finds
//!    nothing. Cost: O(grammar) per round.
//! 3. **Numbering**: depth-first post-order, so bodies refer only to smaller ids; the start
//!    rules come last, in stream order.

use wpp_trace::{Terminal, ThreadId};

use super::engine::{Engine, NIL};
use super::{repair, RePairError, RULE_BIT};
use crate::grammar::{Grammar, RuleId, StartRule};
use crate::symbol::Symbol;

/// The final sequences of all streams, concatenated, with the end of each.
#[derive(Default)]
pub(crate) struct Sequences {
    pub(crate) symbols: Vec<u32>,
    pub(crate) ends: Vec<usize>,
}

impl Sequences {
    /// Appends one stream.
    pub(crate) fn push(&mut self, stream: impl Iterator<Item = u32>) {
        self.symbols.extend(stream);
        self.end_stream();
    }

    /// Ends the stream whose symbols were appended since the last end.
    pub(crate) fn end_stream(&mut self) {
        self.ends.push(self.symbols.len());
    }

    /// Each stream's symbols.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &[u32]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts.zip(&self.ends).map(|(s, &e)| &self.symbols[s..e])
    }
}

/// Rules with bodies of any length over internal symbols (`RULE_BIT | index`), some of them
/// start rules.
struct Table {
    bodies: Sequences,
    starts: Vec<u32>,
}

impl Table {
    fn body(&self, r: usize) -> &[u32] {
        let start = if r == 0 { 0 } else { self.bodies.ends[r - 1] };
        &self.bodies.symbols[start..self.bodies.ends[r]]
    }

    fn len(&self) -> usize {
        self.bodies.ends.len()
    }
}

/// Builds the grammar. `rules[k]` is the digram that rule `k` (symbol `RULE_BIT | k`) replaced.
pub(crate) fn grammar(
    num_terminals: u32,
    rules: &[[u32; 2]],
    top: &Sequences,
    threads: &[ThreadId],
) -> Result<Grammar, RePairError> {
    let mut bodies = Sequences::default();
    for body in rules {
        bodies.push(body.iter().copied());
    }
    for stream in top.iter() {
        bodies.push(stream.iter().copied());
    }
    let starts = (rules.len()..bodies.ends.len()).map(|r| r as u32).collect();
    let mut table = Table { bodies, starts };
    loop {
        table = simplify(&table);
        match dedupe(&table)? {
            Some(next) => table = next,
            None => break,
        }
    }
    Ok(into_grammar(&table, num_terminals, threads))
}

/// Inlines every non-start rule used once or with a one-symbol body; drops unused ones.
fn simplify(t: &Table) -> Table {
    let mut uses = vec![0u32; t.len()];
    for &s in &t.bodies.symbols {
        if s & RULE_BIT != 0 {
            let u = &mut uses[(s & !RULE_BIT) as usize];
            *u = u.saturating_add(1);
        }
    }
    let mut is_start = vec![false; t.len()];
    t.starts.iter().for_each(|&r| is_start[r as usize] = true);
    let mut next = 0;
    let new_id: Vec<u32> = (0..t.len())
        .map(|r| {
            let keep = is_start[r] || (uses[r] >= 2 && t.body(r).len() >= 2);
            if keep {
                next += 1;
                next - 1
            } else {
                NIL
            }
        })
        .collect();
    let mut bodies = Sequences::default();
    let mut stack = Vec::new();
    for r in (0..t.len()).filter(|&r| new_id[r] != NIL) {
        for &s in t.body(r) {
            emit(s, t, &new_id, &mut stack, &mut bodies.symbols);
        }
        bodies.end_stream();
    }
    let starts = t.starts.iter().map(|&r| new_id[r as usize]).collect();
    Table { bodies, starts }
}

/// Appends symbol `s`, renumbered, expanding inlined rules (iteratively: chains of rules used
/// once can be as long as the grammar).
fn emit(s: u32, t: &Table, new_id: &[u32], stack: &mut Vec<u32>, out: &mut Vec<u32>) {
    stack.push(s);
    while let Some(s) = stack.pop() {
        if s & RULE_BIT == 0 {
            out.push(s);
            continue;
        }
        let r = (s & !RULE_BIT) as usize;
        if new_id[r] == NIL {
            stack.extend(t.body(r).iter().rev());
        } else {
            out.push(RULE_BIT | new_id[r]);
        }
    }
}

/// Replaces digrams repeated across all bodies by new rules; `None` if there were none.
fn dedupe(t: &Table) -> Result<Option<Table>, RePairError> {
    let mut engine = Engine::new(t.bodies.symbols.len() + t.len());
    for body in t.bodies.iter() {
        body.iter().for_each(|&s| engine.push(s));
        engine.end_stream();
    }
    engine.index_pairs();
    let mut rules = Vec::new();
    repair(&mut engine, &mut rules, t.len() as u32)?;
    if rules.is_empty() {
        return Ok(None);
    }
    let mut bodies = Sequences::default();
    for body in engine.streams() {
        bodies.push(body);
    }
    for body in &rules {
        bodies.push(body.iter().copied());
    }
    Ok(Some(Table {
        bodies,
        starts: t.starts.clone(),
    }))
}

/// Numbers the rules in depth-first post-order from the start rules (in stream order), as
/// SEQUITUR does, and builds the grammar. That numbering lets the `.wpp` writer define each rule
/// inline at its first use instead of storing a distance for every reference (see
/// `file.rs`): 4–14 % smaller files on the real traces of `bench/compressors.sh`. Every rule
/// is reachable: `simplify` dropped the unused ones.
fn into_grammar(t: &Table, num_terminals: u32, threads: &[ThreadId]) -> Grammar {
    let order = post_order(t, t.starts.iter().copied());
    let mut new_id = vec![NIL; t.len()];
    for (i, &r) in order.iter().enumerate() {
        new_id[r as usize] = i as u32;
    }
    let map = |s: u32| {
        if s & RULE_BIT == 0 {
            Symbol::terminal(Terminal(s))
        } else {
            Symbol::rule(RuleId(new_id[(s & !RULE_BIT) as usize]))
        }
    };
    let bodies = order
        .iter()
        .map(|&r| t.body(r as usize).iter().map(move |&s| map(s)));
    let starts = t
        .starts
        .iter()
        .zip(threads)
        .map(|(&r, &thread)| StartRule {
            thread,
            rule: RuleId(new_id[r as usize]),
        })
        .collect();
    Grammar::new(num_terminals, bodies, starts)
        .expect("the rules are acyclic, numbered bottom-up, and no larger than the input")
}

/// Rules reachable from `roots`, children before parents.
fn post_order(t: &Table, roots: impl Iterator<Item = u32>) -> Vec<u32> {
    let mut done = vec![false; t.len()];
    let mut order = Vec::with_capacity(t.len());
    let mut stack: Vec<(u32, usize)> = Vec::new();
    for root in roots {
        if done[root as usize] {
            continue;
        }
        done[root as usize] = true;
        stack.push((root, 0));
        while let Some((r, i)) = stack.last_mut() {
            let body = t.body(*r as usize);
            let child = body[*i..]
                .iter()
                .position(|&s| s & RULE_BIT != 0 && !done[(s & !RULE_BIT) as usize]);
            match child {
                Some(k) => {
                    let c = body[*i + k] & !RULE_BIT;
                    *i += k + 1;
                    done[c as usize] = true;
                    stack.push((c, 0));
                }
                None => {
                    order.push(*r);
                    stack.pop();
                }
            }
        }
    }
    order
}
