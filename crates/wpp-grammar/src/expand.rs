//! Expansion of a grammar back to its terminals: streaming, without recursion or
//! materialization, and random access by position (Larus §3.3: a WPP is the trace, compressed).
//!
//! # Streaming
//!
//! [`Expander`] walks a rule with an explicit stack of body slices still to emit. A rule
//! reference pushes the referenced body; when the reference is the last symbol of its body the
//! finished frame is popped first, so right-recursive chains never deepen the stack. The stack
//! is therefore at most the grammar's depth, and each terminal costs O(1) amortized. For bulk
//! work, [`Expander::for_each`] and [`expand_into`] avoid the per-item `Option` of `next`.
//!
//! # Random access
//!
//! [`terminal_at`] descends from a rule, subtracting expanded lengths
//! ([`Grammar::expanded_len`]) symbol by symbol: O(depth × body length).
//! [`PositionIndex`] stores prefix sums of expanded lengths for every body (8 bytes per grammar
//! symbol) and binary-searches each level instead: O(depth × log body length).
//! [`Expander::starting_at`] uses the same descent to start a stream at any position.

use wpp_trace::Terminal;

use crate::grammar::{Grammar, RuleId};
use crate::symbol::{Symbol, SymbolKind};

/// Where an [`Expander`] finds the body of a rule.
pub trait Bodies {
    /// The symbols rule `r` stands for, some of them rules.
    fn body(&self, r: RuleId) -> &[Symbol];
}

impl Bodies for Grammar {
    #[inline]
    fn body(&self, r: RuleId) -> &[Symbol] {
        Grammar::body(self, r)
    }
}

/// Rules that expand to at most this many terminals are [`Flattened`].
const FLAT_LEN: u64 = 32;

/// A grammar whose short rules (at most [`FLAT_LEN`] terminals) that refer to other rules are
/// also stored expanded, so that an [`Expander`] emits each of them from one slice instead of
/// walking its subtree. On a grammar larger than the caches every rule of the walk costs a
/// cache miss or two (its offsets, then its body), and most rules of a deep walk are near its
/// leaves: flattened, zlib's eCF grammar (257 M events, 1.2 M rules) expands 1.35× faster
/// (`wpp decompress`; BENCHMARKS.md, "`wpp deps` on an eWPP"). At most one terminal per
/// grammar symbol is added.
#[derive(Clone, Debug)]
pub struct Flattened<'g> {
    grammar: &'g Grammar,
    /// Rule `r`'s expansion is `symbols[offsets[r]..offsets[r + 1]]` when that is not empty.
    offsets: Vec<u32>,
    symbols: Vec<Symbol>,
}

impl<'g> Flattened<'g> {
    /// Flattens `grammar`'s short rules, lowest first (a rule's are then made from its
    /// children's), until they hold as many terminals as the grammar has symbols.
    pub fn new(grammar: &'g Grammar) -> Self {
        let budget = grammar.num_symbols();
        let mut offsets = Vec::with_capacity(grammar.num_rules() + 1);
        let mut symbols: Vec<Symbol> = Vec::new();
        offsets.push(0);
        for r in (0..grammar.num_rules() as u32).map(RuleId) {
            let body = grammar.body(r);
            let short = grammar.expanded_len(r) <= FLAT_LEN
                && body.iter().any(|s| matches!(s.kind(), SymbolKind::Rule(_)));
            if short && symbols.len() + FLAT_LEN as usize <= budget {
                expand_body(grammar, body, &offsets, &mut symbols);
            }
            offsets.push(symbols.len() as u32);
        }
        Flattened {
            grammar,
            offsets,
            symbols,
        }
    }

    /// Terminals stored beside the grammar.
    pub fn len(&self) -> usize {
        self.symbols.len()
    }

    /// Whether no rule was flattened.
    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }
}

/// Appends the expansion of `body` to `symbols`, each child's copied from its flattened
/// expansion (`offsets`, so far) where it has one.
fn expand_body(grammar: &Grammar, body: &[Symbol], offsets: &[u32], symbols: &mut Vec<Symbol>) {
    for &s in body {
        match s.kind() {
            SymbolKind::Terminal(_) => symbols.push(s),
            SymbolKind::Rule(c) => {
                let flat = offsets[c.index()] as usize..offsets[c.index() + 1] as usize;
                match flat.is_empty() {
                    true => symbols.extend(Expander::new(grammar, c).map(Symbol::terminal)),
                    false => symbols.extend_from_within(flat),
                }
            }
        }
    }
}

impl Bodies for Flattened<'_> {
    #[inline]
    fn body(&self, r: RuleId) -> &[Symbol] {
        let (from, to) = (self.offsets[r.index()], self.offsets[r.index() + 1]);
        match from == to {
            true => self.grammar.body(r),
            false => &self.symbols[from as usize..to as usize],
        }
    }
}

/// A streaming iterator over the terminals a rule expands to.
#[derive(Clone, Debug)]
pub struct Expander<'g, B: ?Sized = Grammar> {
    bodies: &'g B,
    stack: Vec<&'g [Symbol]>,
}

impl<'g> Expander<'g, Flattened<'g>> {
    /// Expands `rule` of a flattened grammar from its first terminal.
    pub fn flattened(bodies: &'g Flattened<'g>, rule: RuleId) -> Self {
        Expander {
            bodies,
            stack: vec![bodies.grammar.body(rule)],
        }
    }
}

impl<'g> Expander<'g> {
    /// Expands `rule` from its first terminal.
    pub fn new(grammar: &'g Grammar, rule: RuleId) -> Self {
        Expander {
            bodies: grammar,
            stack: vec![grammar.body(rule)],
        }
    }

    /// Expands `rule` from its `k`-th terminal (0-based); empty if `k` is past the end.
    pub fn starting_at(grammar: &'g Grammar, rule: RuleId, mut k: u64) -> Self {
        let mut stack = Vec::new();
        if k < grammar.expanded_len(rule) {
            let mut body = grammar.body(rule);
            while let Some((i, rest)) = locate(grammar, body, &mut k) {
                match body[i].kind() {
                    SymbolKind::Terminal(_) => {
                        stack.push(&body[i..]);
                        break;
                    }
                    SymbolKind::Rule(r) => {
                        stack.push(rest);
                        body = grammar.body(r);
                    }
                }
            }
        }
        Expander {
            bodies: grammar,
            stack,
        }
    }
}

impl<'g, B: Bodies + ?Sized> Expander<'g, B> {
    /// Calls `f` on every remaining terminal; faster than iterating.
    #[inline]
    pub fn for_each(mut self, mut f: impl FnMut(Terminal)) {
        while let Some(t) = self.next_terminal() {
            f(t);
        }
    }

    /// Appends the next `n` terminals (fewer at the end), mapped by `f`, to `out`; like
    /// [`for_each`](Self::for_each) in batches, for a consumer that may stop early (an
    /// expansion on another thread).
    #[inline]
    pub fn fill<T>(&mut self, out: &mut Vec<T>, n: usize, mut f: impl FnMut(Terminal) -> T) {
        for _ in 0..n {
            match self.next_terminal() {
                Some(t) => out.push(f(t)),
                None => return,
            }
        }
    }

    /// The next terminal: the one loop behind every way of expanding, inlined into each so
    /// that no `Option` per terminal survives in the bulk ones.
    #[inline(always)]
    fn next_terminal(&mut self) -> Option<Terminal> {
        loop {
            let top = self.stack.last_mut()?;
            let Some((&s, rest)) = top.split_first() else {
                self.stack.pop();
                continue;
            };
            *top = rest;
            match s.kind() {
                SymbolKind::Terminal(t) => return Some(t),
                SymbolKind::Rule(r) => {
                    if rest.is_empty() {
                        self.stack.pop();
                    }
                    self.stack.push(self.bodies.body(r));
                }
            }
        }
    }
}

/// Finds the symbol of `body` holding position `k`; sets `k` to the position within it and
/// returns its index and the symbols after it.
fn locate<'g>(g: &Grammar, body: &'g [Symbol], k: &mut u64) -> Option<(usize, &'g [Symbol])> {
    for (i, &s) in body.iter().enumerate() {
        let len = g.symbol_len(s);
        if *k < len {
            return Some((i, &body[i + 1..]));
        }
        *k -= len;
    }
    None
}

impl<B: Bodies + ?Sized> Iterator for Expander<'_, B> {
    type Item = Terminal;

    #[inline]
    fn next(&mut self) -> Option<Terminal> {
        self.next_terminal()
    }
}

/// Appends the expansion of `rule` to `out`.
pub fn expand_into(grammar: &Grammar, rule: RuleId, out: &mut Vec<Terminal>) {
    let len = grammar.expanded_len(rule);
    out.reserve(len.min(1 << 24) as usize);
    Expander::new(grammar, rule).for_each(|t| out.push(t));
}

/// The `k`-th terminal (0-based) of `rule`'s expansion, by descending through expanded lengths.
pub fn terminal_at(grammar: &Grammar, rule: RuleId, mut k: u64) -> Option<Terminal> {
    let mut body = grammar.body(rule);
    loop {
        let (i, _) = locate(grammar, body, &mut k)?;
        match body[i].kind() {
            SymbolKind::Terminal(t) => return Some(t),
            SymbolKind::Rule(r) => body = grammar.body(r),
        }
    }
}

/// Prefix sums of expanded lengths over every rule body, for O(depth × log body) random
/// access.
#[derive(Clone, Debug)]
pub struct PositionIndex {
    /// `ends[starts[r] + i]` is the expanded length of the first `i + 1` symbols of rule `r`.
    ends: Vec<u64>,
    starts: Vec<usize>,
}

impl PositionIndex {
    /// Builds the index for `grammar`.
    pub fn new(grammar: &Grammar) -> Self {
        let mut ends = Vec::with_capacity(grammar.num_symbols());
        let mut starts = Vec::with_capacity(grammar.num_rules());
        for r in grammar.rules() {
            starts.push(ends.len());
            let mut sum = 0u64;
            for &s in grammar.body(r) {
                // Grammar::new checked that no rule's total overflows, so prefixes cannot.
                sum += grammar.symbol_len(s);
                ends.push(sum);
            }
        }
        PositionIndex { ends, starts }
    }

    /// The `k`-th terminal (0-based) of `rule`'s expansion. `grammar` must be the grammar the
    /// index was built for.
    pub fn terminal_at(&self, grammar: &Grammar, rule: RuleId, mut k: u64) -> Option<Terminal> {
        let mut r = rule;
        loop {
            let body = grammar.body(r);
            let start = *self.starts.get(r.index())?;
            let ends = self.ends.get(start..start + body.len())?;
            let i = ends.partition_point(|&e| e <= k);
            let s = *body.get(i)?;
            if i > 0 {
                k -= ends[i - 1];
            }
            match s.kind() {
                SymbolKind::Terminal(t) => return Some(t),
                SymbolKind::Rule(c) => r = c,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grammar::StartRule;
    use wpp_trace::ThreadId;

    /// `S → A c A A`, `A → B b`, `B → a a`, expanding to `aab c aab aab`.
    fn sample() -> Grammar {
        let t = |x| Symbol::terminal(Terminal(x));
        let r = |x| Symbol::rule(RuleId(x));
        let bodies = vec![
            vec![t(0), t(0)],
            vec![r(0), t(1)],
            vec![r(1), t(2), r(1), r(1)],
        ];
        let starts = vec![StartRule {
            thread: ThreadId(0),
            rule: RuleId(2),
        }];
        Grammar::new(3, bodies, starts).unwrap()
    }

    const EXPECTED: [u32; 10] = [0, 0, 1, 2, 0, 0, 1, 0, 0, 1];

    #[test]
    fn streaming_matches_hand_expansion() {
        let g = sample();
        let got: Vec<u32> = Expander::new(&g, RuleId(2)).map(|t| t.0).collect();
        assert_eq!(got, EXPECTED);
        let mut v = Vec::new();
        expand_into(&g, RuleId(2), &mut v);
        assert_eq!(v.iter().map(|t| t.0).collect::<Vec<_>>(), EXPECTED);
    }

    /// Every rule of SEQUITUR's grammars of random inputs expands the same flattened: short
    /// rules made from flattened children and from unflattened ones (bodies of terminals only),
    /// and long rules above them.
    #[test]
    fn flattened_rules_expand_as_the_grammar() {
        let mut x = 1u64;
        for seed in 0..40u32 {
            let mut s = crate::sequitur::Sequitur::new(crate::sequitur::Variant::Sequitur);
            let stream = s.add_stream(wpp_trace::ThreadId(0)).unwrap();
            let alphabet = 2 + seed % 7;
            for _ in 0..3000 + 500 * seed {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let repeat = (x >> 60) < 12; // runs make deep rules
                let t = if repeat {
                    0
                } else {
                    (x >> 33) as u32 % alphabet
                };
                s.push(stream, Terminal(t)).unwrap();
            }
            let g = s.finish();
            let flat = Flattened::new(&g);
            assert!(!flat.is_empty(), "seed {seed}");
            assert!(flat.len() <= g.num_symbols(), "seed {seed}");
            for r in (0..g.num_rules() as u32).map(RuleId) {
                let want: Vec<Terminal> = Expander::new(&g, r).collect();
                let got: Vec<Terminal> = Expander::flattened(&flat, r).collect();
                assert_eq!(got, want, "seed {seed}, rule {}", r.0);
            }
        }
    }

    /// Batches of every size, the last one short, then nothing: the hand expansion.
    #[test]
    fn batches_make_the_hand_expansion() {
        let g = sample();
        for n in 1..=EXPECTED.len() + 1 {
            let mut e = Expander::new(&g, RuleId(2));
            let mut got = Vec::new();
            let mut batches = 0;
            loop {
                let before = got.len();
                e.fill(&mut got, n, |t| t.0 * 10);
                match got.len() - before {
                    0 => break,
                    k => assert!(k == n || got.len() == EXPECTED.len(), "n {n}, batch {k}"),
                }
                batches += 1;
            }
            let want: Vec<u32> = EXPECTED.iter().map(|t| t * 10).collect();
            assert_eq!(got, want, "n {n}");
            assert_eq!(batches, EXPECTED.len().div_ceil(n), "n {n}");
            e.fill(&mut got, 0, |t| t.0);
            assert_eq!(got.len(), EXPECTED.len());
        }
    }

    #[test]
    fn random_access_and_seeking_agree_with_streaming() {
        let g = sample();
        let idx = PositionIndex::new(&g);
        for k in 0..EXPECTED.len() as u64 {
            let want = Some(Terminal(EXPECTED[k as usize]));
            assert_eq!(terminal_at(&g, RuleId(2), k), want, "{k}");
            assert_eq!(idx.terminal_at(&g, RuleId(2), k), want, "{k}");
            let rest: Vec<u32> = Expander::starting_at(&g, RuleId(2), k)
                .map(|t| t.0)
                .collect();
            assert_eq!(rest, EXPECTED[k as usize..], "{k}");
        }
        assert_eq!(terminal_at(&g, RuleId(2), 10), None);
        assert_eq!(idx.terminal_at(&g, RuleId(2), 10), None);
        assert_eq!(Expander::starting_at(&g, RuleId(2), 10).next(), None);
    }
}
