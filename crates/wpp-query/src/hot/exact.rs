//! Exact hot paths: Larus's minimal hot subpaths over function-qualified events, each listed
//! once with its exact number of occurrences, sorted by cost.
//!
//! Figure 7 (see [`super`]) reports a string at every DAG node where a window crossing the
//! node's children reaches the cost threshold on that node's frequency alone, so one string
//! can come out of several nodes, each time with only that node's share of its occurrences.
//! Here the search runs on the qualified grammar ([`super::qualified`]), its windows are merged
//! by string, and each distinct string is then counted exactly: every occurrence has one lowest
//! node containing it, where it crosses the node's children (Larus §3.3, as in
//! [`Subpaths`](crate::dag::Subpaths)), so the count is the sum over nodes of crossing
//! occurrences × node frequency. All strings are counted in one bottom-up pass, streaming each
//! body with its children replaced by their first and last `L − 1` terminals.
//!
//! **Minimal**, as reported: (1) every subpath has `min_length..=max_length` events and was a
//! hot window of Figure 7, i.e. the shortest window ending at its last event that reached the
//! threshold within one node (a window restarts after each hot one, so no reported window
//! contains another found in the same scan) — or, when no window was hot within one node, the
//! costliest window seen, if its exact count brings it to the threshold; (2) no reported subpath contains another reported
//! one (a string containing a reported string is dropped); (3) its cost — exact count × the sum
//! of its events' costs — is at least the threshold. Like Figure 7, the search is not
//! exhaustive: a string whose occurrences are spread over many nodes, none hot alone, is not
//! found.

use rustc_hash::{FxHashMap, FxHashSet};
use wpp_grammar::symbol::SymbolKind;
use wpp_grammar::Grammar;
use wpp_trace::{Alphabet, FunctionId};

use super::qualified::{qualify, Qualified};
use super::{first_uses, scan, HotConfig, HotSubpath};
use crate::dag::{rule_frequencies, terminal_frequencies};
use crate::error::QueryError;

/// One hot path: events with the function each runs in.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct HotPath {
    /// The events, as terminals of the original grammar.
    pub terminals: Vec<u32>,
    /// The function each event runs in (`F f`: `f`; `E`: the function it leaves), if known.
    pub functions: Vec<Option<u32>>,
    /// Its exact number of occurrences in the trace, all threads (overlapping ones included).
    pub count: u64,
    /// `count` × the sum of its events' costs.
    pub cost: u64,
    /// Index into the grammar's starts of the thread where the occurrence below is.
    pub stream: usize,
    /// Start position of one occurrence in that thread (the first use of the node where the
    /// search found it).
    pub position: u64,
}

/// The outcome of a search.
#[derive(Clone, Debug, serde::Serialize)]
pub struct HotPaths {
    /// The hot paths, costliest first (ties: shorter, then by terminals).
    pub paths: Vec<HotPath>,
    /// The cost of the whole trace: every event's cost, summed.
    pub total_cost: u64,
    /// When nothing reached the threshold: the costliest window the search saw, exactly counted.
    pub best: Option<HotPath>,
}

/// Per-terminal costs of the qualified alphabet: the original terminal's cost (1 without a
/// table, 0 beyond it, as in [`super::hot_subpaths`]).
fn qualified_costs(q: &Qualified, costs: Option<&[u64]>) -> Vec<u64> {
    q.events
        .iter()
        .map(|(t, _)| costs.map_or(1, |c| c.get(t.index()).copied().unwrap_or(0)))
        .collect()
}

/// The total cost of the trace: Σ over terminals of frequency × cost.
fn total_cost(g: &Grammar, costs: &[u64]) -> u64 {
    let freq = terminal_frequencies(g, &rule_frequencies(g));
    freq.iter()
        .zip(costs)
        .fold(0u64, |s, (&f, &c)| s.saturating_add(f.saturating_mul(c)))
}

/// The minimal hot paths of `g` (see the module documentation) and the trace's total cost.
/// `min_cost` of `cfg` may be derived from the total by [`min_cost_for_share`].
pub fn hot_paths(
    g: &Grammar,
    alphabet: &Alphabet,
    costs: Option<&[u64]>,
    cfg: HotConfig,
) -> Result<HotPaths, QueryError> {
    let q = qualify(g, alphabet)
        .map_err(|e| QueryError::BadQuery(format!("cannot qualify the grammar: {e}")))?;
    let qcosts = qualified_costs(&q, costs);
    let (found, best) = scan(&q.grammar, Some(&qcosts), cfg)?;
    let firsts = first_uses(&q.grammar);
    let candidates = minimal(distinct(found), cfg.min_length);
    let strings: Vec<&[u32]> = candidates.iter().map(|h| &h.terminals[..]).collect();
    let counts = count_all(&q.grammar, &strings, cfg.max_length);
    let to_path = |h: &HotSubpath, count: u64| {
        let (stream, base) = firsts[h.rule as usize].unwrap_or((0, 0));
        let (terminals, functions) = h
            .terminals
            .iter()
            .map(|&t| {
                let (orig, f) = q.events[t as usize];
                (orig.0, f.map(|f: FunctionId| f.0))
            })
            .unzip();
        let unit: u64 = h.terminals.iter().map(|&t| qcosts[t as usize]).sum();
        HotPath {
            terminals,
            functions,
            count,
            cost: count.saturating_mul(unit),
            stream,
            position: base + h.offset,
        }
    };
    let mut paths: Vec<HotPath> = candidates
        .iter()
        .zip(&counts)
        .map(|(h, &c)| to_path(h, c))
        .collect();
    paths.sort_by(|a, b| {
        (b.cost, a.terminals.len(), &a.terminals, &a.functions).cmp(&(
            a.cost,
            b.terminals.len(),
            &b.terminals,
            &b.functions,
        ))
    });
    let mut best = match (paths.is_empty(), best) {
        (true, Some(b)) => {
            let c = count_all(&q.grammar, &[&b.terminals], cfg.max_length)[0];
            Some(to_path(&b, c))
        }
        _ => None,
    };
    // Counted exactly, the costliest window may reach the threshold after all.
    if let Some(b) = best.take_if(|b| b.cost >= cfg.min_cost) {
        paths.push(b);
    }
    Ok(HotPaths {
        paths,
        total_cost: total_cost(&q.grammar, &qcosts),
        best,
    })
}

/// The cost threshold for a share of the trace's total cost (at least 1).
pub fn min_cost_for_share(total_cost: u64, share: f64) -> u64 {
    ((total_cost as f64 * share).ceil() as u64).max(1)
}

/// The trace's total cost under `costs` (see [`HotPaths::total_cost`]), without a search: for
/// turning a share into a threshold before searching.
pub fn trace_cost(g: &Grammar, costs: Option<&[u64]>) -> u64 {
    let n = g.num_terminals() as usize;
    let table: Vec<u64> = (0..n)
        .map(|t| costs.map_or(1, |c| c.get(t).copied().unwrap_or(0)))
        .collect();
    total_cost(g, &table)
}

/// One window per distinct string (the first found).
fn distinct(found: Vec<HotSubpath>) -> Vec<HotSubpath> {
    let mut seen = FxHashSet::default();
    found
        .into_iter()
        .filter(|h| seen.insert(h.terminals.clone()))
        .collect()
}

/// Drops every string that contains another of `hs` (of at least `min_length` terminals).
fn minimal(hs: Vec<HotSubpath>, min_length: usize) -> Vec<HotSubpath> {
    let all: FxHashSet<&[u32]> = hs.iter().map(|h| &h.terminals[..]).collect();
    let contains_other =
        |s: &[u32]| (min_length..s.len()).any(|m| s.windows(m).any(|w| all.contains(w)));
    let keep: Vec<bool> = hs.iter().map(|h| !contains_other(&h.terminals)).collect();
    hs.into_iter()
        .zip(keep)
        .filter_map(|(h, k)| k.then_some(h))
        .collect()
}

/// A rule's first and last `L − 1` terminals, or its whole expansion when that is no longer
/// than `2(L − 1)`.
enum Edge {
    Whole(Vec<u32>),
    Ends(Vec<u32>, Vec<u32>),
}

/// The sliding text of one body: terminals and, per terminal, the body symbol it comes from
/// (`2·index + 1` for a child rule, `2·index` for a terminal of the body itself).
struct Window<'a> {
    terms: Vec<u32>,
    owners: Vec<u64>,
    max_length: usize,
    patterns: &'a FxHashMap<&'a [u32], usize>,
    starts: &'a [bool],
}

impl Window<'_> {
    /// Appends one terminal and counts, `weight` times, every pattern ending at it that
    /// crosses a boundary of the body (does not lie inside one child).
    fn push(&mut self, t: u32, owner: u64, weight: u64, counts: &mut [u64]) {
        if self.terms.len() >= 2 * self.max_length {
            self.terms.drain(..self.max_length);
            self.owners.drain(..self.max_length);
        }
        self.terms.push(t);
        self.owners.push(owner);
        let n = self.terms.len();
        for m in 1..=self.max_length.min(n) {
            let start = n - m;
            let inside_child = self.owners[start] == owner && owner % 2 == 1;
            if inside_child || !self.starts[self.terms[start] as usize] {
                continue;
            }
            if let Some(&i) = self.patterns.get(&self.terms[start..]) {
                counts[i] = counts[i].saturating_add(weight);
            }
        }
    }

    /// A child's middle was left out: no window spans it.
    fn gap(&mut self) {
        self.terms.clear();
        self.owners.clear();
    }
}

/// Exact occurrences of each of `strings` (all of at most `max_length` terminals) in the
/// expansion of `g`'s start rules: one bottom-up pass (see the module documentation).
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
    let keep = max_length.saturating_sub(1).max(1);
    let freq = rule_frequencies(g);
    let mut remaining = g.reference_counts();
    let mut edges: Vec<Option<Edge>> = (0..g.num_rules()).map(|_| None).collect();
    for r in g.rules() {
        let mut w = Window {
            terms: Vec::with_capacity(2 * max_length),
            owners: Vec::with_capacity(2 * max_length),
            max_length,
            patterns: &patterns,
            starts: &starts,
        };
        let weight = freq[r.index()];
        let mut push = |w: &mut Window, t: u32, owner: u64| {
            if weight > 0 {
                w.push(t, owner, weight, &mut counts);
            }
        };
        for (i, &s) in g.body(r).iter().enumerate() {
            let i = i as u64;
            match s.kind() {
                SymbolKind::Terminal(t) => push(&mut w, t.0, 2 * i),
                SymbolKind::Rule(c) => {
                    match edges[c.index()].as_ref().expect("children before parents") {
                        Edge::Whole(all) => all.iter().for_each(|&t| push(&mut w, t, 2 * i + 1)),
                        Edge::Ends(first, last) => {
                            first.iter().for_each(|&t| push(&mut w, t, 2 * i + 1));
                            w.gap();
                            last.iter().for_each(|&t| push(&mut w, t, 2 * i + 1));
                        }
                    }
                }
            }
        }
        edges[r.index()] = Some(edge(g, r, &edges, keep));
        for s in g.body(r) {
            if let SymbolKind::Rule(c) = s.kind() {
                remaining[c.index()] -= 1;
                if remaining[c.index()] == 0 {
                    edges[c.index()] = None;
                }
            }
        }
    }
    counts
}

/// The [`Edge`] of rule `r`, from its children's.
fn edge(g: &Grammar, r: wpp_grammar::RuleId, edges: &[Option<Edge>], keep: usize) -> Edge {
    let parts = |s: wpp_grammar::Symbol, from_end: bool| -> Vec<u32> {
        match s.kind() {
            SymbolKind::Terminal(t) => vec![t.0],
            SymbolKind::Rule(c) => match edges[c.index()].as_ref().expect("child edge") {
                Edge::Whole(all) => all.clone(),
                Edge::Ends(first, last) => if from_end { last } else { first }.clone(),
            },
        }
    };
    let body = g.body(r);
    if g.expanded_len(r) <= 2 * keep as u64 {
        return Edge::Whole(body.iter().flat_map(|&s| parts(s, false)).collect());
    }
    let mut first = Vec::with_capacity(keep);
    for &s in body {
        first.extend(parts(s, false));
        if first.len() >= keep {
            break;
        }
    }
    first.truncate(keep);
    let mut last: Vec<u32> = Vec::with_capacity(keep);
    for &s in body.iter().rev() {
        let mut p = parts(s, true);
        p.append(&mut last);
        last = p;
        if last.len() >= keep {
            break;
        }
    }
    let cut = last.len() - keep;
    last.drain(..cut);
    Edge::Ends(first, last)
}
