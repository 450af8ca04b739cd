//! The strings that cross a rule's children, visited once per rule: every occurrence of a
//! string in the trace has one lowest rule containing it, where it crosses the boundary between
//! two of the rule's body symbols (Larus §3.3, as in [`Subpaths`](crate::dag::Subpaths)). So the
//! number of occurrences of a string is the sum, over rules, of its crossing occurrences in the
//! rule's body times the rule's frequency. One bottom-up pass streams each body with its
//! children replaced by their first and last `L − 1` terminals; no expansion is materialized.

use std::ops::RangeInclusive;

use rustc_hash::FxHashMap;
use wpp_grammar::symbol::SymbolKind;
use wpp_grammar::{Grammar, RuleId, Symbol};

use crate::dag::rule_frequencies;

/// One crossing occurrence of a string in a rule's body.
pub struct Crossing<'a> {
    /// The string.
    pub terminals: &'a [u32],
    /// The rule's frequency: how many occurrences in the trace this one stands for.
    pub weight: u64,
    /// The rule.
    pub rule: RuleId,
    /// Where the string starts in the rule's expansion.
    pub offset: u64,
}

/// Every rule's first and last `keep` terminals, or its whole expansion when that is no longer
/// than `2·keep`, in one arena: a rule's are `terms[at..at + first]` and
/// `terms[at + first..at + first + last]` (`last = 0` for a whole expansion).
struct Edges {
    terms: Vec<u32>,
    spans: Vec<(usize, u32, u32)>,
    keep: usize,
}

impl Edges {
    /// Where rule `r`'s first terminals (all of them when its expansion is short) or, with
    /// `from_end`, its last ones are in the arena; its first ones for a short expansion.
    fn range(&self, r: RuleId, from_end: bool) -> std::ops::Range<usize> {
        let (at, first, last) = self.spans[r.index()];
        let (first, last) = (first as usize, last as usize);
        match from_end && last > 0 {
            true => at + first..at + first + last,
            false => at..at + first,
        }
    }

    /// The first terminals of `r` (all of them when its expansion is short).
    fn first(&self, r: RuleId) -> &[u32] {
        &self.terms[self.range(r, false)]
    }

    /// The last terminals of `r`, or `None` when [`first`](Self::first) is the whole expansion.
    fn last(&self, r: RuleId) -> Option<&[u32]> {
        (self.spans[r.index()].2 > 0).then(|| &self.terms[self.range(r, true)])
    }

    /// Where a symbol's terminals at one end are: itself, or a range of this arena.
    fn part(&self, s: Symbol, from_end: bool) -> Part {
        match s.kind() {
            SymbolKind::Terminal(t) => Part::Terminal(t.0),
            SymbolKind::Rule(c) => Part::Range(self.range(c, from_end)),
        }
    }

    fn extend(&mut self, p: Part) {
        match p {
            Part::Terminal(t) => self.terms.push(t),
            Part::Range(r) => self.terms.extend_from_within(r),
        }
    }

    /// Appends rule `r`'s edge, from its children's.
    fn push_rule(&mut self, g: &Grammar, r: RuleId) {
        let keep = self.keep;
        let at = self.terms.len();
        let body = g.body(r);
        let whole = g.expanded_len(r) <= 2 * keep as u64;
        for &s in body {
            if !whole && self.terms.len() - at >= keep {
                break;
            }
            self.extend(self.part(s, false));
        }
        let first = match whole {
            true => self.terms.len() - at,
            false => keep,
        };
        self.terms.truncate(at + first);
        if !whole && keep > 0 {
            let mut parts = Vec::new();
            let mut n = 0;
            for &s in body.iter().rev() {
                let p = self.part(s, true);
                n += p.len();
                parts.push(p);
                if n >= keep {
                    break;
                }
            }
            let tail = self.terms.len();
            parts.into_iter().rev().for_each(|p| self.extend(p));
            self.terms.drain(tail..tail + (n - keep));
        }
        let last = if whole { 0 } else { keep };
        self.spans.push((at, first as u32, last as u32));
    }
}

/// A symbol's terminals at one end: itself, or a range of [`Edges::terms`].
enum Part {
    Terminal(u32),
    Range(std::ops::Range<usize>),
}

impl Part {
    fn len(&self) -> usize {
        match self {
            Part::Terminal(_) => 1,
            Part::Range(r) => r.len(),
        }
    }
}

/// The sliding text of one body: terminals, per terminal the body symbol it comes from
/// (`2·index + 1` for a child rule, `2·index` for a terminal of the body itself), its offset in
/// the rule's expansion, and how many strings of the filter's length in a row end at it and
/// are open ([`Filter`]).
struct Window {
    terms: Vec<u32>,
    owners: Vec<u64>,
    offsets: Vec<u64>,
    runs: Vec<usize>,
    max_length: usize,
}

/// Which strings a pass visits: those of a length in `lengths` whose every substring of `k`
/// events is `open` (all of them when `k` is 0).
pub struct Filter<F> {
    /// The lengths visited.
    pub lengths: RangeInclusive<usize>,
    /// The length of the substrings checked.
    pub k: usize,
    /// Whether a string of `k` events is admitted.
    pub open: F,
}

impl Window {
    /// Appends one terminal and visits every admitted string that ends at it and crosses a
    /// boundary of the body (does not lie inside one child).
    fn push<F: FnMut(&[u32]) -> bool>(
        &mut self,
        (t, owner, offset): (u32, u64, u64),
        filter: &mut Filter<F>,
        (rule, weight): (RuleId, u64),
        visit: &mut impl FnMut(Crossing<'_>),
    ) {
        if self.terms.len() >= 2 * self.max_length {
            self.terms.drain(..self.max_length);
            self.owners.drain(..self.max_length);
            self.offsets.drain(..self.max_length);
            self.runs.drain(..self.max_length);
        }
        self.terms.push(t);
        self.owners.push(owner);
        self.offsets.push(offset);
        let n = self.terms.len();
        let k = filter.k;
        let run = match k == 0 || (n >= k && (filter.open)(&self.terms[n - k..])) {
            true => self.runs.last().map_or(1, |r| r + 1),
            false => 0,
        };
        self.runs.push(run);
        for m in *filter.lengths.start()..=(*filter.lengths.end()).min(n) {
            if k > 0 && run + k <= m {
                break; // a substring of `k` inside is not open, and so for every longer one
            }
            let start = n - m;
            if self.owners[start] == owner && owner % 2 == 1 {
                continue; // inside one child: that child's occurrence
            }
            visit(Crossing {
                terminals: &self.terms[start..],
                weight,
                rule,
                offset: self.offsets[start],
            });
        }
    }

    /// A child's middle was left out: no window spans it.
    fn gap(&mut self) {
        self.terms.clear();
        self.owners.clear();
        self.offsets.clear();
        self.runs.clear();
    }
}

/// A grammar and its rules' frequencies, for visiting crossing occurrences (module docs).
pub struct Crossings<'g> {
    g: &'g Grammar,
    freq: Vec<u64>,
}

impl<'g> Crossings<'g> {
    /// Prepares `g` (one pass for the rules' frequencies).
    pub fn new(g: &'g Grammar) -> Self {
        Crossings {
            g,
            freq: rule_frequencies(g),
        }
    }

    /// Visits every crossing occurrence of every string whose length is in `lengths`, in the
    /// rules reachable from `g`'s starts, children before parents. A string of `m` events
    /// crossing a boundary takes at most `m − 1` from a child, so each child stands in for its
    /// expansion with only that many terminals at each end.
    pub fn for_each<F: FnMut(&[u32]) -> bool>(
        &self,
        mut filter: Filter<F>,
        mut visit: impl FnMut(Crossing<'_>),
    ) {
        let g = self.g;
        let max_length = (*filter.lengths.end()).max(1);
        let mut edges = Edges {
            terms: Vec::new(),
            spans: Vec::with_capacity(g.num_rules()),
            keep: max_length - 1,
        };
        let mut w = Window {
            terms: Vec::with_capacity(2 * max_length),
            owners: Vec::with_capacity(2 * max_length),
            offsets: Vec::with_capacity(2 * max_length),
            runs: Vec::with_capacity(2 * max_length),
            max_length,
        };
        for r in g.rules() {
            let weight = self.freq[r.index()];
            if weight > 0 {
                w.gap();
                let mut push = |w: &mut Window, t, owner, offset| {
                    w.push((t, owner, offset), &mut filter, (r, weight), &mut visit)
                };
                let mut at = 0u64;
                for (i, &s) in (0u64..).zip(g.body(r)) {
                    match s.kind() {
                        SymbolKind::Terminal(t) => push(&mut w, t.0, 2 * i, at),
                        SymbolKind::Rule(c) => {
                            let o = 2 * i + 1;
                            let first = edges.first(c);
                            (0..)
                                .zip(first)
                                .for_each(|(j, &t)| push(&mut w, t, o, at + j));
                            if let Some(last) = edges.last(c) {
                                w.gap();
                                let from = at + g.expanded_len(c) - last.len() as u64;
                                (0..)
                                    .zip(last)
                                    .for_each(|(j, &t)| push(&mut w, t, o, from + j));
                            }
                        }
                    }
                    at += g.symbol_len(s);
                }
            }
            edges.push_rule(g, r);
        }
    }
}

/// Exact occurrences of each of `strings` (all of at most `max_length` terminals) in the
/// expansion of `g`'s start rules: one bottom-up pass (module docs).
pub fn count_all(g: &Grammar, strings: &[&[u32]], max_length: usize) -> Vec<u64> {
    let mut counts = vec![0u64; strings.len()];
    if strings.is_empty() {
        return counts;
    }
    let patterns: FxHashMap<&[u32], usize> =
        strings.iter().enumerate().map(|(i, &s)| (s, i)).collect();
    let mut starts = vec![false; g.num_terminals() as usize];
    for s in strings {
        starts[s[0] as usize] = true;
    }
    let all = Filter {
        lengths: 1..=max_length,
        k: 0,
        open: |_: &[u32]| true,
    };
    Crossings::new(g).for_each(all, |c| {
        if !starts[c.terminals[0] as usize] {
            return;
        }
        if let Some(&i) = patterns.get(c.terminals) {
            counts[i] = counts[i].saturating_add(c.weight);
        }
    });
    counts
}
