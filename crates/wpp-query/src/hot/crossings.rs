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

/// A place in the pass over the rules' bodies: a rule and one of its body symbols.
type Place = (u32, usize);

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

    /// The edges of every rule of `g`, keeping `keep` terminals at each end.
    fn of(g: &Grammar, keep: usize) -> Self {
        let mut edges = Edges {
            terms: Vec::new(),
            spans: Vec::with_capacity(g.num_rules()),
            keep,
        };
        g.rules().for_each(|r| edges.push_rule(g, r));
        edges
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
    fn new(max_length: usize) -> Self {
        Window {
            terms: Vec::with_capacity(2 * max_length),
            owners: Vec::with_capacity(2 * max_length),
            offsets: Vec::with_capacity(2 * max_length),
            runs: Vec::with_capacity(2 * max_length),
            max_length,
        }
    }

    /// Appends one terminal and visits every admitted string that ends at it and crosses a
    /// boundary of the body (does not lie inside one child).
    fn push<F: Fn(&[u32]) -> bool>(
        &mut self,
        (t, owner, offset): (u32, u64, u64),
        filter: &Filter<F>,
        (rule, weight): (RuleId, u64),
        seen: bool,
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
        if !seen {
            return; // a terminal before the walk's part of the body: context only
        }
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
    threads: usize,
}

impl<'g> Crossings<'g> {
    /// Prepares `g` (one pass for the rules' frequencies) for passes on `threads` threads
    /// (at least one).
    pub fn new(g: &'g Grammar, threads: usize) -> Self {
        Crossings {
            g,
            freq: rule_frequencies(g),
            threads: threads.max(1),
        }
    }

    /// Visits every crossing occurrence of every string whose length is in `lengths`, in the
    /// rules reachable from `g`'s starts. A string of `m` events crossing a boundary takes at
    /// most `m − 1` from a child, so each child stands in for its expansion with only that many
    /// terminals at each end.
    ///
    /// The pass over the rules' bodies (children before parents) is cut into one part per
    /// thread, of about equal work, a long body (a start rule) into several. Each part's
    /// occurrences go to its own accumulator (`init`, then `visit`), and the accumulators come
    /// back in the pass's order: merged in that order, they see the occurrences as one pass
    /// would, on any number of cores.
    pub fn fold<A: Send, F: Fn(&[u32]) -> bool + Sync>(
        &self,
        filter: Filter<F>,
        init: impl Fn() -> A + Sync,
        visit: impl Fn(&mut A, Crossing<'_>) + Sync,
    ) -> Vec<A> {
        let max_length = (*filter.lengths.end()).max(1);
        let edges = Edges::of(self.g, max_length - 1);
        let part = |(from, to): (Place, Place)| {
            let mut acc = init();
            let mut w = Window::new(max_length);
            for r in from.0..to.0.saturating_add(1).min(self.g.num_rules() as u32) {
                let body = self.g.body(RuleId(r)).len();
                let first = if r == from.0 { from.1 } else { 0 };
                let end = if r == to.0 { to.1 } else { body };
                if first < end {
                    let mut visit = |c: Crossing<'_>| visit(&mut acc, c);
                    self.walk(RuleId(r), first..end, &edges, &mut w, &filter, &mut visit);
                }
            }
            acc
        };
        let parts = self.parts(self.threads, max_length - 1);
        if parts.len() == 1 {
            return vec![part(parts[0])];
        }
        std::thread::scope(|s| {
            let workers: Vec<_> = parts.iter().map(|&p| s.spawn(move || part(p))).collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        })
    }

    /// The pass cut into at most `n` parts `[from, to)` of about equal work: the terminals
    /// [`walk`](Self::walk) pushes, a child's at most `2·keep`, in the rules that occur (the
    /// others are skipped).
    fn parts(&self, n: usize, keep: usize) -> Vec<(Place, Place)> {
        let g = self.g;
        let cost = |s: &Symbol| g.symbol_len(*s).min(2 * keep as u64);
        let work = |r: RuleId| match self.freq[r.index()] {
            0 => 0,
            _ => g.body(r).iter().map(cost).sum::<u64>(),
        };
        let total: u64 = g.rules().map(work).sum();
        let mut cuts: Vec<Place> = vec![(0, 0)];
        let mut done = 0u64;
        for r in g.rules() {
            let w = work(r);
            // The k-th cut is where the work done reaches k/n of the total.
            while cuts.len() < n && w > 0 && (done + w) * n as u64 >= total * cuts.len() as u64 {
                let target = (total * cuts.len() as u64).div_ceil(n as u64);
                let (mut at, mut i) = (done, 0);
                for s in g.body(r) {
                    if at >= target {
                        break;
                    }
                    at += cost(s);
                    i += 1;
                }
                cuts.push((r.0, i));
            }
            done += w;
        }
        cuts.push((g.num_rules() as u32, 0));
        cuts.windows(2).map(|c| (c[0], c[1])).collect()
    }

    /// Visits the crossing occurrences that end in body symbols `symbols` of rule `r`. The
    /// window first takes at least `max_length` terminals of the symbols before, unvisited, so
    /// that it holds what one pass over the whole body would.
    fn walk<F: Fn(&[u32]) -> bool>(
        &self,
        r: RuleId,
        symbols: std::ops::Range<usize>,
        edges: &Edges,
        w: &mut Window,
        filter: &Filter<F>,
        visit: &mut impl FnMut(Crossing<'_>),
    ) {
        let g = self.g;
        let weight = self.freq[r.index()];
        if weight == 0 {
            return;
        }
        let body = g.body(r);
        let mut from = symbols.start;
        let mut primed = 0u64;
        while from > 0 && primed < w.max_length as u64 {
            from -= 1;
            primed += g.symbol_len(body[from]);
        }
        w.gap();
        let mut at: u64 = body[..from].iter().map(|&s| g.symbol_len(s)).sum();
        for (i, &s) in (from as u64..).zip(&body[from..symbols.end]) {
            let seen = i >= symbols.start as u64;
            let mut push = |w: &mut Window, t, owner, offset| {
                w.push((t, owner, offset), filter, (r, weight), seen, visit)
            };
            match s.kind() {
                SymbolKind::Terminal(t) => push(w, t.0, 2 * i, at),
                SymbolKind::Rule(c) => {
                    let o = 2 * i + 1;
                    (0..)
                        .zip(edges.first(c))
                        .for_each(|(j, &t)| push(w, t, o, at + j));
                    if let Some(last) = edges.last(c) {
                        w.gap();
                        let from = at + g.expanded_len(c) - last.len() as u64;
                        (0..).zip(last).for_each(|(j, &t)| push(w, t, o, from + j));
                    }
                }
            }
            at += g.symbol_len(s);
        }
    }
}

/// Exact occurrences of each of `strings` (all of at most `max_length` terminals) in the
/// expansion of `g`'s start rules: one bottom-up pass (module docs) on `threads` threads.
pub fn count_all(g: &Grammar, strings: &[&[u32]], max_length: usize, threads: usize) -> Vec<u64> {
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
    let parts = Crossings::new(g, threads).fold(
        all,
        || vec![0u64; strings.len()],
        |counts, c| {
            if !starts[c.terminals[0] as usize] {
                return;
            }
            if let Some(&i) = patterns.get(c.terminals) {
                counts[i] = counts[i].saturating_add(c.weight);
            }
        },
    );
    for part in parts {
        for (n, p) in counts.iter_mut().zip(part) {
            *n = n.saturating_add(p);
        }
    }
    counts
}
