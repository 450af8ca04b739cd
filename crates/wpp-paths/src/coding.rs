//! Path numbering as arithmetic coding (PPP paper §4).
//!
//! A *model* gives every edge, in the context of the path so far, a sub-range of `[0, 1)`;
//! [`path_encoder`] (Figure 14) narrows `[0, N)` edge by edge and returns the final lower end.
//! Ranges are exact fractions `[lo/den, hi/den)` and the arithmetic is in `u128`, so the
//! encoder reproduces the ids exactly instead of approximately.
//!
//! * [`BlModel`] is `computeBLModel` (Figure 12): context = the edge's source node,
//!   `D(e) = N(dst)/N(src)`, ranges laid out in out-edge order. Every path has probability
//!   `1/N`, so `H(D) = log2 N` and the encoder returns the Ball–Larus id.
//! * [`PppModel`] is the model PPP computes (§4.3, Table 3): context = the full prefix
//!   (keyed by its Ball–Larus sum). At node `w` with prefix `q` the interesting paths' suffix
//!   ids span a window `[m, M]`; edge `f` gets the part of the window its paths use, shifted
//!   by `W(f)`. Holes left by joins get no edge, so an interesting path has probability
//!   `1/interval` and the encoder returns its PPP id.
//!
//! [`entropy`] measures a model over the code space: the paths' probabilities plus the
//! unused mass spread over the holes, one code point each, so `2^H(D)` is the interval size
//! and `2^H(D)/|I|` is Γ (§4.4).

use crate::ball_larus::{BallLarus, DagPath};
use crate::dag::{Dag, ENTRY};
use crate::ids::{DagEdgeId, DagNodeId};
use crate::ppp::PppPlan;
use rustc_hash::FxHashMap;

/// A sub-range `[lo/den, hi/den)` of `[0, 1)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    /// Lower end numerator.
    pub lo: u128,
    /// Upper end numerator.
    pub hi: u128,
    /// Common denominator.
    pub den: u128,
}

impl Range {
    /// The probability `(hi - lo) / den`.
    pub fn probability(&self) -> f64 {
        (self.hi - self.lo) as f64 / self.den as f64
    }
}

/// Figure 14: narrows `[0, n)` by `ranges` and returns the lower end, or `None` when a
/// range is missing (the model gives the path probability 0).
pub fn path_encoder(n: u128, ranges: impl IntoIterator<Item = Option<Range>>) -> Option<u128> {
    let (mut x, mut y) = (0u128, n);
    for r in ranges {
        let r = r?;
        let width = y - x;
        (x, y) = (x + r.lo * width / r.den, x + r.hi * width / r.den);
    }
    Some(x)
}

/// `computeBLModel` (Figure 12).
pub struct BlModel<'a> {
    dag: &'a Dag,
    bl: &'a BallLarus,
}

impl<'a> BlModel<'a> {
    /// The model of a numbered DAG.
    pub fn new(dag: &'a Dag, bl: &'a BallLarus) -> Self {
        BlModel { dag, bl }
    }

    /// The range of edge `e` in the context of its source node.
    pub fn range(&self, e: DagEdgeId) -> Range {
        let edge = self.dag.edge(e);
        let lo = u128::from(self.bl.increment(e));
        Range {
            lo,
            hi: lo + u128::from(self.bl.count(edge.dst)),
            den: u128::from(self.bl.count(edge.src)),
        }
    }

    /// The Ball–Larus id of `path` computed by arithmetic coding.
    pub fn encode(&self, path: &DagPath) -> u64 {
        let id = path_encoder(
            u128::from(self.bl.path_count()),
            path.edges.iter().map(|&e| Some(self.range(e))),
        );
        id.expect("the BL model covers every edge") as u64
    }
}

/// The PPP model (§4.3): per (node, prefix) windows and per (edge, prefix) ranges.
pub struct PppModel {
    /// (node, prefix key) → window `[min, max]` of suffix ids.
    windows: FxHashMap<(DagNodeId, u64), (i64, i64)>,
    /// (edge, prefix key) → `[min, max]` of suffix ids after the edge.
    edges: FxHashMap<(DagEdgeId, u64), (i64, i64)>,
    weights: Vec<i64>,
    increments: Vec<u64>,
    interval: u64,
}

impl PppModel {
    /// The model induced by `plan` on the interesting paths `paths`.
    pub fn new(dag: &Dag, bl: &BallLarus, plan: &PppPlan, paths: &[DagPath]) -> PppModel {
        let weights: Vec<i64> = plan.weights.iter().map(|w| w.unwrap_or(0)).collect();
        let mut model = PppModel {
            windows: FxHashMap::default(),
            edges: FxHashMap::default(),
            increments: bl.increments().to_vec(),
            weights,
            interval: plan.interval,
        };
        for p in paths {
            model.add_path(dag, p);
        }
        model
    }

    fn add_path(&mut self, dag: &Dag, p: &DagPath) {
        let mut suffix: Vec<i64> = vec![0; p.edges.len() + 1];
        for (i, &e) in p.edges.iter().enumerate().rev() {
            suffix[i] = suffix[i + 1] + self.weights[e.index()];
        }
        let mut prefix = 0u64;
        for (i, &e) in p.edges.iter().enumerate() {
            widen(
                self.windows
                    .entry((dag.edge(e).src, prefix))
                    .or_insert((i64::MAX, i64::MIN)),
                suffix[i],
            );
            widen(
                self.edges
                    .entry((e, prefix))
                    .or_insert((i64::MAX, i64::MIN)),
                suffix[i + 1],
            );
            prefix += self.increments[e.index()];
        }
    }

    /// The range of edge `e` after a prefix with Ball–Larus sum `prefix`.
    pub fn range(&self, dag: &Dag, e: DagEdgeId, prefix: u64) -> Option<Range> {
        let &(m, big_m) = self.windows.get(&(dag.edge(e).src, prefix))?;
        let &(lo, hi) = self.edges.get(&(e, prefix))?;
        let w = self.weights[e.index()];
        let rel = |x: i64| u128::try_from(x + w - m).ok();
        Some(Range {
            lo: rel(lo)?,
            hi: rel(hi)? + 1,
            den: u128::try_from(big_m - m + 1).ok()?,
        })
    }

    /// The PPP id of `path` by arithmetic coding (`None` for an uninteresting path the model
    /// gives probability 0).
    pub fn encode(&self, dag: &Dag, path: &DagPath) -> Option<u64> {
        let mut prefix = 0u64;
        let ranges = path.edges.iter().map(|&e| {
            let r = self.range(dag, e, prefix);
            prefix += self.increments[e.index()];
            r
        });
        path_encoder(u128::from(self.interval), ranges).map(|x| x as u64)
    }

    /// The probability the model gives `path` (0 when uninteresting).
    pub fn probability(&self, dag: &Dag, path: &DagPath) -> f64 {
        let mut prefix = 0u64;
        let mut p = 1.0;
        for &e in &path.edges {
            p *= self.range(dag, e, prefix).map_or(0.0, |r| r.probability());
            prefix += self.increments[e.index()];
        }
        p
    }

    /// The window at `ENTRY`: `[0, interval)` when the set is non-empty.
    pub fn root_window(&self) -> Option<(i64, i64)> {
        self.windows.get(&(ENTRY, 0)).copied()
    }
}

fn widen(r: &mut (i64, i64), x: i64) {
    *r = (r.0.min(x), r.1.max(x));
}

/// `H(D)` in bits over a code space of `n` points, given the probabilities of the modelled
/// paths; the remaining mass counts as unused points of probability `1/n` each.
pub fn entropy(n: u64, probabilities: impl IntoIterator<Item = f64>) -> f64 {
    let mut h = 0.0;
    let mut mass = 0.0;
    for p in probabilities.into_iter().filter(|&p| p > 0.0) {
        h -= p * p.log2();
        mass += p;
    }
    let rest = (1.0 - mass).max(0.0);
    if rest > 0.0 && n > 0 {
        h += rest * (n as f64).log2();
    }
    h
}
