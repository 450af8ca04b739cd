//! Joining the grammars of consecutive chunks of a trace into one [`Grammar`] (parallel
//! compression, [`crate::trace`] with several threads).
//!
//! Each chunk of the trace is compressed on its own into a grammar with a start rule per thread
//! that has events in the chunk. The joined grammar has one start rule per thread whose body is
//! the concatenation, in chunk order, of that thread's chunk start-rule bodies; every other rule
//! is kept once however many chunks built it:
//!
//! * **One rule per short expansion.** Chunk rules are visited bottom-up, their bodies
//!   translated to joined ids and looked up by their expansion's [`Fingerprint`]. A rule with
//!   the same body as one already joined is that rule (its children were deduplicated first).
//!   So is a rule of at most [`MAX_MERGED_LEN`] terminals that expands to the same terminals,
//!   whatever its structure: chunks built apart give one string different rules (`(ab)c` in
//!   one, `a(bc)` in the other), and in two-thread grammars of real path traces 15–30 % of the
//!   rules were such duplicates. A fingerprint match is confirmed by comparing the expansions
//!   ([`Joiner::same_expansion`]), so the join stays exact; the comparisons have a budget in
//!   proportion to the symbols added (past it, only equal bodies merge), so a hostile input
//!   cannot make joining slow. Of the rules of one expansion the first added is kept, so chunks
//!   added in the same order give the same grammar (in chunk order, the earliest chunk's).
//! * **Rule utility** (Larus §3.1) survives: a rule used twice in its chunk is used at least
//!   twice in the join. A merged rule's body is dropped, which can leave a child of it used
//!   once; [`Joiner::finish`] splices such rules into their user.
//! * **Numbering** is depth-first post-order from the start rules, in thread order, as SEQUITUR
//!   numbers its rules, so the `.wpp` writer stores each rule inline where it is first used.
//!
//! * **Seams.** What repeats across chunks at the top level — a thread's start-rule pieces are
//!   built apart, so a stretch repeated in two chunks is spelled out in both — can be found by
//!   one more SEQUITUR pass (Larus §3.1) over the joined start-rule bodies, their symbols taken
//!   as terminals ([`Seams::Compressed`]); its rules go above the joined ones.
//!
//! Digram uniqueness still does not hold across chunks: a digram may repeat inside two rules
//! built by different chunks that differ elsewhere. The grammar is therefore somewhat larger
//! than a single-threaded one (BENCHMARKS.md has the measured ratios), and every query reads it
//! as it reads any other.

use hashbrown::HashTable;
use rustc_hash::FxHashSet;
use std::cell::Cell;
use wpp_trace::{Terminal, ThreadId};

use crate::grammar::{Grammar, GrammarError, RuleId, StartRule};
use crate::sequitur::{Sequitur, Variant};
use crate::symbol::{Symbol, SymbolKind};

/// Joins chunk grammars, added with their chunk number, into one grammar. Any order of adding
/// gives the same expansions; the same order gives the same grammar.
///
/// ```
/// use wpp_grammar::join::Joiner;
/// use wpp_grammar::{compress, Algorithm};
/// use wpp_trace::{Terminal, ThreadId};
///
/// let ts = |s: &str| s.bytes().map(|b| Terminal(u32::from(b))).collect::<Vec<_>>();
/// let (a, b) = (ts("abcabcabc"), ts("xabcabcy"));
/// let mut j = Joiner::default();
/// j.add(1, &compress(Algorithm::Sequitur, &[&b]).unwrap());
/// j.add(0, &compress(Algorithm::Sequitur, &[&a]).unwrap());
/// let g = j.finish(256, &[ThreadId(0)]).unwrap();
/// assert_eq!(g.num_rules(), 2); // `abc` is one rule for both chunks
/// ```
#[derive(Default)]
pub struct Joiner {
    /// Bodies of the distinct non-start rules, in joined ids (bottom-up).
    symbols: Vec<Symbol>,
    offsets: Vec<usize>,
    /// Joined rule ids, hashed by expansion.
    table: HashTable<u32>,
    /// Per joined rule, its expansion's fingerprint.
    prints: Vec<Fingerprint>,
    /// Steps [`same_expansion`](Self::same_expansion) may still take.
    budget: Cell<u64>,
    /// Start-rule bodies of every chunk, in joined ids.
    start_symbols: Vec<Symbol>,
    pieces: Vec<Piece>,
    /// Per chunk rule: its joined symbol (scratch, reused).
    map: Vec<Symbol>,
    /// A body being translated (scratch, reused).
    body: Vec<Symbol>,
    seams: Seams,
}

/// One chunk's start-rule body for one thread.
struct Piece {
    thread: ThreadId,
    chunk: u64,
    start: usize,
    end: usize,
}

/// A string of terminals, fingerprinted: its polynomial hash modulo the Mersenne prime
/// 2^61 − 1, the base raised to its length (so that fingerprints of concatenations compose),
/// and its length. Equal strings have equal fingerprints; unequal ones rarely do, and
/// [`Joiner::same_expansion`] tells those apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fingerprint {
    hash: u64,
    power: u64,
    len: u64,
}

const MODULUS: u64 = (1 << 61) - 1;
const BASE: u64 = 0x1F_3A5C_27B1;

/// `a · b` modulo [`MODULUS`].
fn mul(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    let folded = (p as u64 & MODULUS) + (p >> 61) as u64;
    folded.min(folded.wrapping_sub(MODULUS))
}

impl Fingerprint {
    const EMPTY: Fingerprint = Fingerprint {
        hash: 0,
        power: 1,
        len: 0,
    };

    fn terminal(t: Terminal) -> Fingerprint {
        Fingerprint {
            hash: u64::from(t.0) + 1,
            power: BASE,
            len: 1,
        }
    }

    /// The fingerprint of `self` followed by `next`.
    fn then(self, next: Fingerprint) -> Fingerprint {
        let hash = mul(self.hash, next.power) + next.hash;
        Fingerprint {
            hash: hash.min(hash.wrapping_sub(MODULUS)),
            power: mul(self.power, next.power),
            len: self.len.saturating_add(next.len),
        }
    }

    /// The hash table's key.
    fn key(self) -> u64 {
        (self.hash ^ self.len.rotate_left(32)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
}

/// The longest expansion for which rules of different bodies merge. Merging the short ones
/// made the `.wpp` of high-entropy path traces 1–4 % smaller (two threads; BENCHMARKS.md);
/// merging every length made a Lua block trace's 6 % larger: references to the few long
/// rules left then vary far more than the local rules' did, and zstd finds fewer repeats.
pub const MAX_MERGED_LEN: u64 = 32;

/// Comparison steps [`Joiner::same_expansion`] may take per symbol added, on top of
/// [`BUDGET_BASE`]: duplicates of real traces take a few steps each.
const BUDGET_PER_SYMBOL: u64 = 64;
const BUDGET_BASE: u64 = 1 << 20;

impl Joiner {
    /// Adds the grammar of chunk number `chunk` (chunks are concatenated in this order per
    /// thread, whatever order they are added in).
    pub fn add(&mut self, chunk: u64, g: &Grammar) {
        if self.offsets.is_empty() {
            self.offsets.push(0);
            self.budget.set(BUDGET_BASE);
        }
        let more = BUDGET_PER_SYMBOL.saturating_mul(g.num_symbols() as u64);
        self.budget.set(self.budget.get().saturating_add(more));
        self.map.clear();
        self.map.resize(g.num_rules(), Symbol::from_bits(0));
        let mut start_of = vec![None; g.num_rules()];
        for s in g.starts() {
            start_of[s.rule.index()] = Some(s.thread);
        }
        for r in g.rules() {
            self.body.clear();
            let map = &self.map;
            self.body.extend(g.body(r).iter().map(|&s| match s.kind() {
                SymbolKind::Terminal(_) => s,
                SymbolKind::Rule(c) => map[c.index()],
            }));
            match start_of[r.index()] {
                Some(thread) => self.add_piece(chunk, thread),
                None => self.map[r.index()] = Symbol::rule(self.intern()),
            }
        }
    }

    /// Keeps the body just translated as `thread`'s part of chunk `chunk`.
    fn add_piece(&mut self, chunk: u64, thread: ThreadId) {
        let start = self.start_symbols.len();
        self.start_symbols.extend_from_slice(&self.body);
        self.pieces.push(Piece {
            thread,
            chunk,
            start,
            end: self.start_symbols.len(),
        });
    }

    /// The joined rule that expands as the body just translated does, added if new.
    fn intern(&mut self) -> RuleId {
        let print = self.fingerprint(&self.body);
        let found = self.table.find(print.key(), |&id| {
            let (symbols, offsets) = (&self.symbols, &self.offsets);
            let stored = &symbols[offsets[id as usize]..offsets[id as usize + 1]];
            self.prints[id as usize] == print
                && (stored == self.body.as_slice()
                    || print.len <= MAX_MERGED_LEN && self.same_expansion(stored, &self.body))
        });
        if let Some(&id) = found {
            return RuleId(id);
        }
        let id = (self.offsets.len() - 1) as u32;
        self.symbols.extend_from_slice(&self.body);
        self.offsets.push(self.symbols.len());
        self.prints.push(print);
        let prints = &self.prints;
        self.table
            .insert_unique(print.key(), id, |&id| prints[id as usize].key());
        RuleId(id)
    }

    /// The fingerprint of what `body`, in joined ids, expands to.
    fn fingerprint(&self, body: &[Symbol]) -> Fingerprint {
        body.iter()
            .fold(Fingerprint::EMPTY, |print, &s| match s.kind() {
                SymbolKind::Terminal(t) => print.then(Fingerprint::terminal(t)),
                SymbolKind::Rule(r) => print.then(self.prints[r.index()]),
            })
    }

    /// Whether bodies `a` and `b` (in joined ids, of equal fingerprints) expand to the same
    /// terminals: both expansions are walked together, a rule entered only where the two
    /// differ (the longer of the two symbols first, so that shared children line up), so
    /// rules the two have in common at the same place cost one step. `false` once the
    /// budget is spent.
    fn same_expansion(&self, a: &[Symbol], b: &[Symbol]) -> bool {
        let (mut x, mut y) = (vec![a], vec![b]);
        let mut steps = 0u64;
        let ok = loop {
            for side in [&mut x, &mut y] {
                while side.last().is_some_and(|s| s.is_empty()) {
                    side.pop();
                }
            }
            let (Some(sx), Some(sy)) = (x.last_mut(), y.last_mut()) else {
                break x.is_empty() && y.is_empty();
            };
            steps += 1;
            if steps > self.budget.get() {
                break false;
            }
            let (p, q) = (sx[0], sy[0]);
            if p == q {
                *sx = &sx[1..];
                *sy = &sy[1..];
                continue;
            }
            let len = |r: RuleId| self.prints[r.index()].len;
            let (side, r) = match (p.kind(), q.kind()) {
                (SymbolKind::Rule(r), SymbolKind::Rule(s)) if len(s) > len(r) => (&mut y, s),
                (SymbolKind::Rule(r), _) => (&mut x, r),
                (_, SymbolKind::Rule(s)) => (&mut y, s),
                _ => break false,
            };
            let top = side.last_mut().expect("a symbol was just read from it");
            *top = &top[1..];
            side.push(&self.symbols[self.offsets[r.index()]..self.offsets[r.index() + 1]]);
        };
        self.budget.set(self.budget.get().saturating_sub(steps));
        ok
    }

    /// Number of distinct non-start rules so far.
    pub fn num_rules(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// The joined grammar over `num_terminals` terminals, with one start rule per thread in
    /// `threads` that had events (in that order; a thread not listed is dropped).
    pub fn finish(
        mut self,
        num_terminals: u32,
        threads: &[ThreadId],
    ) -> Result<Grammar, GrammarError> {
        drop(self.table);
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        let rules = Rules {
            symbols: self.symbols,
            offsets: self.offsets,
        };
        self.pieces.sort_by_key(|p| p.chunk);
        let mut starts = Rules {
            symbols: Vec::with_capacity(self.start_symbols.len()),
            offsets: vec![0],
        };
        let mut start_threads = Vec::new();
        for &thread in threads {
            let before = starts.symbols.len();
            for p in self.pieces.iter().filter(|p| p.thread == thread) {
                starts
                    .symbols
                    .extend_from_slice(&self.start_symbols[p.start..p.end]);
            }
            if starts.symbols.len() > before {
                starts.offsets.push(starts.symbols.len());
                start_threads.push(thread);
            }
        }
        drop(self.start_symbols);
        let (rules, starts) = match self.seams {
            Seams::Kept => (rules, starts),
            Seams::Compressed => compress_starts(rules, starts, num_terminals),
        };
        Flat::new(&rules, &starts).renumber(num_terminals, &start_threads)
    }

    /// Whether [`finish`](Self::finish) compresses the joined start rules (by default not).
    pub fn set_seams(&mut self, seams: Seams) {
        self.seams = seams;
    }
}

/// What [`Joiner::finish`] does with the repetition across chunks in the start rules.
///
/// Measured with chunks of 4 Mi events (BENCHMARKS.md), compressing the seams saved 0.02–0.1 %
/// of the symbols and cost 15 % more CPU, all of it serial, so it is not the default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Seams {
    /// Runs SEQUITUR (Larus §3.1) over the joined start-rule bodies, their rule references
    /// taken as terminals, so that stretches repeated across chunks become rules.
    Compressed,
    /// Keeps the start rules as the concatenation of the chunks'.
    #[default]
    Kept,
}

/// The joined grammar with its start rules compressed by SEQUITUR: each start body is a
/// stream whose terminals are the body's symbols (terminal `t` as `t`, rule `r` as
/// `num_terminals + r`); the resulting rules go above the joined ones. Left as it is when the
/// symbols do not fit SEQUITUR's terminals or SEQUITUR refuses the input.
fn compress_starts(rules: Rules, starts: Rules, num_terminals: u32) -> (Rules, Rules) {
    let n = rules.len();
    let fits = u64::from(num_terminals) + n as u64 <= u64::from(Terminal::LIMIT);
    let top = fits
        .then(|| sequitur_over(&starts, num_terminals))
        .flatten();
    let Some(top) = top else {
        return (rules, starts);
    };
    let is_start: FxHashSet<RuleId> = top.starts().iter().map(|s| s.rule).collect();
    let mut new_id = vec![0u32; top.num_rules()];
    let mut rules = rules;
    for (id, r) in (n as u32..).zip(top.rules().filter(|r| !is_start.contains(r))) {
        new_id[r.index()] = id;
    }
    let translate = |s: Symbol| match s.kind() {
        SymbolKind::Rule(r) => Symbol::rule(RuleId(new_id[r.index()])),
        SymbolKind::Terminal(t) if t.0 < num_terminals => s,
        SymbolKind::Terminal(t) => Symbol::rule(RuleId(t.0 - num_terminals)),
    };
    for r in top.rules().filter(|r| !is_start.contains(r)) {
        rules
            .symbols
            .extend(top.body(r).iter().map(|&s| translate(s)));
        rules.offsets.push(rules.symbols.len());
    }
    let mut out = Rules {
        symbols: Vec::with_capacity(top.num_symbols()),
        offsets: vec![0],
    };
    for s in top.starts() {
        out.symbols
            .extend(top.body(s.rule).iter().map(|&s| translate(s)));
        out.offsets.push(out.symbols.len());
    }
    (rules, out)
}

/// SEQUITUR over each start body as a stream of terminals (see [`compress_starts`]).
fn sequitur_over(starts: &Rules, num_terminals: u32) -> Option<Grammar> {
    let mut seq = Sequitur::new(Variant::Sequitur);
    let mut terminals = Vec::new();
    for i in 0..starts.len() {
        terminals.clear();
        terminals.extend(starts.body(i).iter().map(|&s| match s.kind() {
            SymbolKind::Terminal(t) => t,
            SymbolKind::Rule(r) => Terminal(num_terminals + r.0),
        }));
        let stream = seq.add_stream(ThreadId(i as u32)).ok()?;
        seq.push_slice(stream, &terminals).ok()?;
    }
    Some(seq.finish())
}

/// Rule bodies stored contiguously, bottom-up.
struct Rules {
    symbols: Vec<Symbol>,
    offsets: Vec<usize>,
}

impl Rules {
    fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    fn body(&self, r: usize) -> &[Symbol] {
        &self.symbols[self.offsets[r]..self.offsets[r + 1]]
    }
}

/// The joined rules with every rule used fewer than twice spliced into its users (rule
/// utility): `keep[r]` says whether rule `r` stays a rule.
struct Flat {
    rules: Rules,
    starts: Rules,
    keep: Vec<bool>,
}

impl Flat {
    fn new(rules: &Rules, starts: &Rules) -> Flat {
        let mut uses = vec![0u32; rules.len()];
        for s in rules.symbols.iter().chain(&starts.symbols) {
            if let SymbolKind::Rule(r) = s.kind() {
                uses[r.index()] += 1;
            }
        }
        let keep: Vec<bool> = uses.iter().map(|&n| n >= 2).collect();
        let mut flat = Rules {
            symbols: Vec::with_capacity(rules.symbols.len()),
            offsets: vec![0],
        };
        for r in 0..rules.len() {
            for &s in rules.body(r) {
                match s.kind() {
                    SymbolKind::Rule(c) if !keep[c.index()] => {
                        let (a, b) = (flat.offsets[c.index()], flat.offsets[c.index() + 1]);
                        flat.symbols.extend_from_within(a..b);
                    }
                    _ => flat.symbols.push(s),
                }
            }
            flat.offsets.push(flat.symbols.len());
        }
        let mut flat_starts = Rules {
            symbols: Vec::with_capacity(starts.symbols.len()),
            offsets: vec![0],
        };
        for i in 0..starts.len() {
            for &s in starts.body(i) {
                match s.kind() {
                    SymbolKind::Rule(c) if !keep[c.index()] => {
                        flat_starts.symbols.extend_from_slice(flat.body(c.index()))
                    }
                    _ => flat_starts.symbols.push(s),
                }
            }
            flat_starts.offsets.push(flat_starts.symbols.len());
        }
        Flat {
            rules: flat,
            starts: flat_starts,
            keep,
        }
    }

    /// The body of entity `e`: rule `e`, or start rule `e - rules` after the rules.
    fn body(&self, e: usize) -> &[Symbol] {
        match e.checked_sub(self.rules.len()) {
            Some(i) => self.starts.body(i),
            None => self.rules.body(e),
        }
    }

    /// The kept rules and the start rules in depth-first post-order from the start rules.
    fn post_order(&self) -> Vec<usize> {
        let n = self.rules.len();
        let mut visited = vec![false; n];
        let mut order = Vec::with_capacity(self.keep.iter().filter(|&&k| k).count());
        let mut stack: Vec<(usize, usize)> = Vec::new();
        for i in 0..self.starts.len() {
            stack.push((n + i, 0));
            while let Some(top) = stack.last_mut() {
                let (e, pos) = *top;
                let Some(&s) = self.body(e).get(pos) else {
                    stack.pop();
                    order.push(e);
                    continue;
                };
                top.1 += 1;
                if let SymbolKind::Rule(c) = s.kind() {
                    if !std::mem::replace(&mut visited[c.index()], true) {
                        stack.push((c.index(), 0));
                    }
                }
            }
        }
        order
    }

    /// The grammar, numbered in [`post_order`](Self::post_order).
    fn renumber(&self, num_terminals: u32, threads: &[ThreadId]) -> Result<Grammar, GrammarError> {
        let order = self.post_order();
        let mut new_id = vec![u32::MAX; self.rules.len() + self.starts.len()];
        for (i, &e) in order.iter().enumerate() {
            new_id[e] = i as u32;
        }
        let new_id = &new_id;
        let bodies = order.iter().map(|&e| {
            self.body(e).iter().map(move |&s| match s.kind() {
                SymbolKind::Terminal(_) => s,
                SymbolKind::Rule(c) => Symbol::rule(RuleId(new_id[c.index()])),
            })
        });
        let starts = threads
            .iter()
            .enumerate()
            .map(|(i, &thread)| StartRule {
                thread,
                rule: RuleId(new_id[self.rules.len() + i]),
            })
            .collect();
        Grammar::new(num_terminals, bodies, starts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mul_is_multiplication_modulo_the_prime() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (a, b) = (x % MODULUS, x.rotate_left(29) % MODULUS);
            let want = (u128::from(a) * u128::from(b) % u128::from(MODULUS)) as u64;
            assert_eq!(mul(a, b), want, "{a} × {b}");
        }
        assert_eq!(mul(MODULUS - 1, MODULUS - 1), 1);
    }

    /// Comparing expansions stops, saying "different", once the budget is spent (the merge
    /// itself: `tests/parallel.rs`).
    #[test]
    fn expansions_are_compared_within_the_budget() {
        let t = |x| Symbol::terminal(Terminal(x));
        let r = |x| Symbol::rule(RuleId(x));
        let starts = vec![StartRule {
            thread: ThreadId(0),
            rule: RuleId(2),
        }];
        let bodies = vec![vec![t(1), t(2)], vec![r(0), t(3)], vec![r(1), r(1)]];
        let mut j = Joiner::default();
        j.add(0, &Grammar::new(4, bodies, starts).unwrap());
        let abc = [t(1), t(2), t(3)];
        assert!(j.same_expansion(&[r(0), t(3)], &abc));
        j.budget.set(2);
        assert!(!j.same_expansion(&[r(0), t(3)], &abc));
        assert_eq!(j.budget.get(), 0);
    }
}
