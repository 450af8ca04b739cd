//! Minimal hot subpaths (Larus §4.2, Figure 7).
//!
//! A subpath's cost is its frequency times the sum of its terminals' costs; a *minimal hot
//! subpath* is the shortest prefix, of length at least `K`, of a subpath of at most `L`
//! terminals whose cost reaches `C`. Figure 7 finds them in one post-order pass over the DAG,
//! looking at each node only at strings that cross its children's boundaries (strings inside
//! one child are that child's business, found when the child was visited):
//!
//! * every node keeps an `L`-limited **prefix** (its first terminals, up to the first hot
//!   subpath found inside it) with a flag saying whether it **covers** the whole node, and an
//!   `L`-limited **suffix** (its last terminals after the last hot subpath inside it);
//! * a node scans its body with a sliding **window** of at most `L` terminals: a terminal is
//!   appended; a child's prefix is appended terminal by terminal; if the child is wider than its
//!   prefix, the window then becomes the child's suffix (the terminals in between are the
//!   child's own);
//! * after each append the window's cost times the node's frequency is compared with `C`; a hot
//!   window is reported, the window is cleared (so no reported subpath contains another) and the
//!   node's prefix is frozen before the hot subpath.
//!
//! Two details the figure leaves implicit are made explicit here: a child that does not cover
//! its node also freezes the parent's prefix (a prefix must be contiguous), and a frozen prefix
//! never covers. Frequencies come from [`rule_frequencies`]; the reported frequency of a subpath
//! is the frequency of the node where it was found, a lower bound on its occurrences.
//!
//! This scan is over whatever grammar it is given, and what it finds depends on the grammar: a
//! string whose occurrences are spread over many nodes, none hot alone, is not found, and one
//! found at a node also occurs inside others. `wpp hot` therefore does not use it: it searches
//! exhaustively, counting strings exactly through the rules ([`exact`]), over
//! function-qualified events ([`qualified`]).
//!
//! Complexity: O(E·L) time for E DAG edges, as in the paper; prefixes and suffixes are freed
//! after their node's last parent, so space is O(L) per partially visited node, never
//! proportional to the trace.

use std::collections::VecDeque;

use wpp_grammar::symbol::SymbolKind;
use wpp_grammar::{Grammar, RuleId};
use wpp_trace::Terminal;

use crate::dag::rule_frequencies;
use crate::error::QueryError;

pub mod crossings;
pub mod exact;
pub mod qualified;

/// Parameters of a hot-subpath search.
#[derive(Clone, Copy, Debug)]
pub struct HotConfig {
    /// Shortest subpath reported (`MinStringLength`), at least 1.
    pub min_length: usize,
    /// Longest subpath considered (`L`, `MaxStringLength`).
    pub max_length: usize,
    /// Minimum cost (`C`, `MinCost`).
    pub min_cost: u64,
}

/// A minimal hot subpath.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct HotSubpath {
    /// The rule (DAG node) where it was found.
    pub rule: u32,
    /// Its start position within the rule's expansion.
    pub offset: u64,
    /// The terminals.
    pub terminals: Vec<u32>,
    /// The rule's frequency: the subpath occurs at least this often.
    pub frequency: u64,
    /// Frequency times the sum of the terminals' costs.
    pub cost: u64,
}

/// A node's L-limited strings (Figure 7's `Prefix()`, `CoversNode()`, `Suffix()`).
#[derive(Clone, Debug, Default)]
struct Strings {
    prefix: Vec<Terminal>,
    covers: bool,
    suffix: Vec<Terminal>,
}

/// The scan of one node's body.
struct Scan<'a> {
    cfg: HotConfig,
    costs: Option<&'a [u64]>,
    rule: RuleId,
    freq: u64,
    window: VecDeque<(Terminal, u64)>,
    /// Sum of the window's costs; u128 so that no sum of `L` u64 costs overflows.
    window_cost: u128,
    prefix: Vec<Terminal>,
    frozen: bool,
    /// The costliest window of at least `min_length` seen in any node so far.
    best: Option<HotSubpath>,
}

impl Scan<'_> {
    fn cost(&self, t: Terminal) -> u64 {
        self.costs
            .map_or(1, |c| c.get(t.index()).copied().unwrap_or(0))
    }

    fn freeze(&mut self) {
        self.frozen = true;
    }

    /// Figure 7's `appendTerminal`: grow the prefix, slide the window, report if hot.
    fn append(&mut self, t: Terminal, at: u64, out: &mut Vec<HotSubpath>) {
        if !self.frozen {
            if self.prefix.len() < self.cfg.max_length {
                self.prefix.push(t);
            } else {
                self.freeze();
            }
        }
        if self.window.len() == self.cfg.max_length {
            let (old, _) = self.window.pop_front().expect("full window");
            self.window_cost -= u128::from(self.cost(old));
        }
        self.window.push_back((t, at));
        self.window_cost += u128::from(self.cost(t));
        let cost = u64::try_from(self.window_cost.saturating_mul(u128::from(self.freq)))
            .unwrap_or(u64::MAX);
        if self.window.len() < self.cfg.min_length {
            return;
        }
        if self.best.as_ref().is_none_or(|b| cost > b.cost) {
            self.best = Some(self.found(cost));
        }
        if cost >= self.cfg.min_cost {
            let start = self.window[0].1;
            out.push(self.found(cost));
            // Stop the prefix before the hot subpath, and start afresh after it.
            self.prefix
                .truncate(start.min(self.prefix.len() as u64) as usize);
            self.freeze();
            self.window.clear();
            self.window_cost = 0;
        }
    }

    /// The window as a subpath of cost `cost`.
    fn found(&self, cost: u64) -> HotSubpath {
        HotSubpath {
            rule: self.rule.0,
            offset: self.window[0].1,
            terminals: self.window.iter().map(|&(t, _)| t.0).collect(),
            frequency: self.freq,
            cost,
        }
    }

    /// The window becomes a child's suffix, which ends at `end`.
    fn replace_window(&mut self, suffix: &[Terminal], end: u64) {
        self.window.clear();
        self.window_cost = 0;
        let start = end - suffix.len() as u64;
        for (i, &t) in suffix.iter().enumerate() {
            self.window.push_back((t, start + i as u64));
            self.window_cost += u128::from(self.cost(t));
        }
    }
}

/// Finds the minimal hot subpaths of `g`. `costs` gives each terminal's cost (1 if `None`;
/// terminals beyond the slice cost 0). Results are ordered by rule, then offset.
pub fn hot_subpaths(
    g: &Grammar,
    costs: Option<&[u64]>,
    cfg: HotConfig,
) -> Result<Vec<HotSubpath>, QueryError> {
    Ok(scan(g, costs, cfg)?.0)
}

/// [`hot_subpaths`], and the costliest window the scan saw (hot or not), for saying how far
/// from the threshold a search that found nothing was.
pub fn scan(
    g: &Grammar,
    costs: Option<&[u64]>,
    cfg: HotConfig,
) -> Result<(Vec<HotSubpath>, Option<HotSubpath>), QueryError> {
    if cfg.min_length == 0 || cfg.max_length < cfg.min_length || cfg.min_cost == 0 {
        return Err(QueryError::BadQuery(format!(
            "need 1 ≤ min length ({}) ≤ max length ({}) and a positive cost",
            cfg.min_length, cfg.max_length
        )));
    }
    let freq = rule_frequencies(g);
    let mut remaining = g.reference_counts();
    let mut strings: Vec<Strings> = vec![Strings::default(); g.num_rules()];
    let mut out = Vec::new();
    let mut best: Option<HotSubpath> = None;
    for r in g.rules() {
        if freq[r.index()] == 0 {
            continue; // unreachable, and so are its parents
        }
        let mut scan = Scan {
            cfg,
            costs,
            rule: r,
            freq: freq[r.index()],
            window: VecDeque::with_capacity(cfg.max_length),
            window_cost: 0,
            prefix: Vec::with_capacity(cfg.max_length),
            frozen: false,
            best: best.take(),
        };
        let mut at = 0u64;
        for &s in g.body(r) {
            match s.kind() {
                SymbolKind::Terminal(t) => scan.append(t, at, &mut out),
                SymbolKind::Rule(c) => {
                    let child = std::mem::take(&mut strings[c.index()]);
                    for (i, &t) in child.prefix.iter().enumerate() {
                        scan.append(t, at + i as u64, &mut out);
                    }
                    if !child.covers {
                        scan.replace_window(&child.suffix, at + g.expanded_len(c));
                        scan.freeze();
                    }
                    remaining[c.index()] -= 1;
                    if remaining[c.index()] > 0 {
                        strings[c.index()] = child;
                    }
                }
            }
            at += g.symbol_len(s);
        }
        best = scan.best.take();
        strings[r.index()] = Strings {
            covers: !scan.frozen,
            prefix: scan.prefix,
            suffix: scan.window.iter().map(|&(t, _)| t).collect(),
        };
    }
    Ok((out, best))
}

/// The first use of every rule: the thread index (into `g.starts()`) and the position where its
/// expansion first begins, or `None` for unreachable rules. One downward pass.
pub fn first_uses(g: &Grammar) -> Vec<Option<(usize, u64)>> {
    let mut first: Vec<Option<(usize, u64)>> = vec![None; g.num_rules()];
    for (i, s) in g.starts().iter().enumerate() {
        let e = &mut first[s.rule.index()];
        if e.is_none() {
            *e = Some((i, 0));
        }
    }
    for r in g.rules().rev() {
        let Some((stream, base)) = first[r.index()] else {
            continue;
        };
        let mut at = base;
        for &s in g.body(r) {
            if let SymbolKind::Rule(c) = s.kind() {
                let cand = (stream, at);
                let e = &mut first[c.index()];
                match e {
                    Some(old) if *old <= cand => {}
                    _ => *e = Some(cand),
                }
            }
            at += g.symbol_len(s);
        }
    }
    first
}
