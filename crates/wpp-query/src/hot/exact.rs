//! Exact hot paths: every minimal hot subpath over function-qualified events, each listed
//! once with its exact number of occurrences, sorted by cost.
//!
//! Larus's Figure 7 (see [`super`]) judges a string at one DAG node, on that node's frequency
//! alone, so a string whose occurrences are spread over many nodes, none hot alone, is missed,
//! and what it finds depends on the compressor. Here the search is exhaustive and the grammar
//! only makes it fast: strings are counted exactly through the rules
//! ([`crossings`](super::crossings): the occurrences crossing each rule's children × the rule's
//! frequency), length by length as in Apriori (Agrawal & Srikant 1994): a string of length
//! `k + 1` is a candidate only if its first and last `k` events are *open*, i.e. could still
//! grow into a hot path. With `c` occurrences and events costing `u` in sum, any
//! superstring of at most `L` events costs at most `c · (u + (L − k) · max cost)`, so a string
//! below the threshold by that bound is closed, and so is a hot one (any superstring of it
//! contains it, so is not minimal). At the default 1 % share and unit costs an open string
//! occurs at least `N / 800` times in `N` events, so at most 800 are open per length.
//!
//! **Minimal**, as reported: (1) every subpath has `min_length..=max_length` events and costs —
//! exact count × the sum of its events' costs — at least the threshold; (2) none contains
//! another string of at least `min_length` events that reaches it (so no reported subpath
//! contains another); (3) every string of `min_length..=max_length` events that reaches the
//! threshold is reported or contains a reported one. The result depends only on the trace, not
//! on the grammar.

use std::ops::RangeInclusive;

use rustc_hash::{FxHashMap, FxHashSet};
use wpp_grammar::{Grammar, RuleId};
use wpp_trace::{Alphabet, FunctionId};

use super::crossings::{Crossing, Crossings, Filter};
use super::qualified::{qualify, Qualified};
use super::{first_uses, HotConfig};
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
    /// Start position of one occurrence in that thread (in the first use of the first rule,
    /// children before parents, where the string crosses the rule's children).
    pub position: u64,
}

/// The outcome of a search.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct HotPaths {
    /// The hot paths, costliest first (ties: shorter, then by terminals).
    pub paths: Vec<HotPath>,
    /// The cost of the whole trace: every event's cost, summed.
    pub total_cost: u64,
    /// When nothing reached the threshold: the costliest string of `min_length..=max_length`
    /// events, exactly counted.
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
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    hot_paths_on(g, alphabet, costs, cfg, cores)
}

/// [`hot_paths`] with each pass over the grammar on `threads` threads (at least one). The
/// answer is the same on any number, the reported occurrence of each path included.
pub fn hot_paths_on(
    g: &Grammar,
    alphabet: &Alphabet,
    costs: Option<&[u64]>,
    cfg: HotConfig,
    threads: usize,
) -> Result<HotPaths, QueryError> {
    if cfg.min_length == 0 || cfg.max_length < cfg.min_length || cfg.min_cost == 0 {
        return Err(QueryError::BadQuery(format!(
            "need 1 ≤ min length ({}) ≤ max length ({}) and a positive cost",
            cfg.min_length, cfg.max_length
        )));
    }
    let q = qualify(g, alphabet)
        .map_err(|e| QueryError::BadQuery(format!("cannot qualify the grammar: {e}")))?;
    let qcosts = qualified_costs(&q, costs);
    let firsts = first_uses(&q.grammar);
    let to_path = |(terminals, c): Found| {
        let (stream, base) = firsts[c.rule.index()].unwrap_or((0, 0));
        let (events, functions) = terminals
            .iter()
            .map(|&t| {
                let (orig, f) = q.events[t as usize];
                (orig.0, f.map(|f: FunctionId| f.0))
            })
            .unzip();
        HotPath {
            terminals: events,
            functions,
            count: c.count,
            cost: c.cost,
            stream,
            position: base + c.offset,
        }
    };
    let by_cost = |a: &HotPath, b: &HotPath| {
        (b.cost, a.terminals.len(), &a.terminals, &a.functions).cmp(&(
            a.cost,
            b.terminals.len(),
            &b.terminals,
            &b.functions,
        ))
    };
    let search = Search::new(&q.grammar, &qcosts, cfg, threads);
    let (hot, costliest) = search.run(cfg.min_cost, true);
    let mut paths: Vec<HotPath> = hot.into_iter().map(to_path).collect();
    paths.sort_by(by_cost);
    let best = match paths.is_empty() {
        true => search.costliest(costliest, cfg.min_cost).map(to_path),
        false => None,
    };
    Ok(HotPaths {
        paths,
        total_cost: total_cost(&q.grammar, &qcosts),
        best,
    })
}

/// A string (qualified terminals) and its count.
type Found = (Box<[u32]>, Counted);

/// A string's exact count and cost, and one occurrence: a rule and an offset in its expansion.
#[derive(Clone, Copy)]
struct Counted {
    count: u64,
    /// The sum of its events' costs.
    unit: u64,
    cost: u64,
    rule: RuleId,
    offset: u64,
}

/// The level-wise search of the module documentation over a qualified grammar.
struct Search<'a> {
    crossings: Crossings<'a>,
    costs: &'a [u64],
    cfg: HotConfig,
    max_cost: u64,
}

impl<'a> Search<'a> {
    fn new(g: &'a Grammar, costs: &'a [u64], cfg: HotConfig, threads: usize) -> Self {
        let max_cost = costs.iter().copied().max().unwrap_or(0);
        Search {
            crossings: Crossings::new(g, threads),
            costs,
            cfg,
            max_cost,
        }
    }

    /// Every string of `min_length..=max_length` events costing at least `threshold` — only the
    /// minimal ones when `minimal` — and the highest cost of any counted string of that length.
    ///
    /// Each pass over the grammar costs about the same whatever it counts (its time goes to
    /// the rules' ends), so lengths are counted in passes of doubling width — 1–2, 3–4, 5–8,
    /// 9–16 — each admitting the strings whose every substring of the pass's first length − 1
    /// is open: a superset of the candidates, which are then picked length by length.
    fn run(&self, threshold: u64, minimal: bool) -> (Vec<Found>, Option<u64>) {
        let (min, max) = (self.cfg.min_length, self.cfg.max_length);
        let mut found = Vec::new();
        let mut costliest = None;
        let mut open: FxHashSet<Box<[u32]>> = FxHashSet::default();
        let mut from = 1;
        while from <= max {
            let to = max.min(2 * from.max(2) - 2);
            let mut counted = self.count_pass(from..=to, &open);
            for k in from..=to {
                let previous = std::mem::take(&mut open);
                let level = counted.extract_if(|s, _| s.len() == k).filter(|(s, _)| {
                    k == from || (previous.contains(&s[..k - 1]) && previous.contains(&s[1..]))
                });
                for (s, c) in level {
                    let reportable = k >= min;
                    if reportable {
                        costliest = costliest.max(Some(c.cost));
                    }
                    let hot = reportable && c.cost >= threshold;
                    let reach = u128::from(c.count)
                        * (u128::from(c.unit) + (max - k) as u128 * u128::from(self.max_cost));
                    if !(hot && minimal) && k < max && reach >= u128::from(threshold) {
                        open.insert(s.clone());
                    }
                    if hot {
                        found.push((s, c));
                    }
                }
                if open.is_empty() {
                    return (found, costliest);
                }
            }
            from = to + 1;
        }
        (found, costliest)
    }

    /// The costliest string of `min_length..=max_length` events when none reaches `threshold`,
    /// given the highest cost `seen` so far. A search at a cost no higher than the maximum
    /// that does not stop at strings reaching it finds the maximum among them; `seen` is such
    /// a cost, and without one (every string closed before `min_length`) the threshold drops.
    fn costliest(&self, mut seen: Option<u64>, mut threshold: u64) -> Option<Found> {
        loop {
            threshold = match seen {
                Some(0) => return None, // every event costs nothing: no costliest
                Some(c) => c,
                None if threshold == 1 => return None,
                None => (threshold / 16).max(1),
            };
            let (all, costliest) = self.run(threshold, false);
            let best = all
                .into_iter()
                .max_by(|(a, x), (b, y)| (x.cost, b.len(), b).cmp(&(y.cost, a.len(), a)));
            if best.is_some() {
                return best;
            }
            seen = costliest.filter(|&c| c < threshold);
        }
    }

    /// The exact count of every string of a length in `lengths` whose every substring of
    /// `lengths.start() − 1` events is `open` (every string, for lengths from 1).
    fn count_pass(
        &self,
        lengths: RangeInclusive<usize>,
        open: &FxHashSet<Box<[u32]>>,
    ) -> FxHashMap<Box<[u32]>, Counted> {
        let k = *lengths.start() - 1;
        let mut in_open = vec![k == 0; self.costs.len()];
        open.iter()
            .flatten()
            .for_each(|&t| in_open[t as usize] = true);
        let filter = Filter {
            lengths,
            k,
            open: |s: &[u32]| {
                in_open[s[0] as usize] && in_open[s[k - 1] as usize] && open.contains(s)
            },
        };
        let visit = |level: &mut FxHashMap<Box<[u32]>, Counted>, c: Crossing<'_>| {
            let s = c.terminals;
            match level.get_mut(s) {
                Some(e) => e.count = e.count.saturating_add(c.weight),
                None => {
                    let e = Counted {
                        count: c.weight,
                        unit: 0,
                        cost: 0,
                        rule: c.rule,
                        offset: c.offset,
                    };
                    level.insert(s.into(), e);
                }
            }
        };
        let mut parts = self
            .crossings
            .fold(filter, FxHashMap::default, visit)
            .into_iter();
        let mut level: FxHashMap<Box<[u32]>, Counted> = parts.next().unwrap_or_default();
        for part in parts {
            // Later parts' rules come later in the pass: an occurrence already kept stays.
            for (s, c) in part {
                level
                    .entry(s)
                    .and_modify(|e| e.count = e.count.saturating_add(c.count))
                    .or_insert(c);
            }
        }
        for (s, c) in level.iter_mut() {
            c.unit = s
                .iter()
                .fold(0u64, |u, &t| u.saturating_add(self.costs[t as usize]));
            c.cost = c.count.saturating_mul(c.unit);
        }
        level
    }
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
