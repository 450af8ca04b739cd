//! Preferential path profiling: compact ids for a set of interesting paths (PPP paper §3,
//! Figure 10), with the Ball–Larus counter alongside (§2.3, §5).
//!
//! Nodes are processed in reverse topological order. At node `v`, for each out-edge `e` (in
//! order) that some interesting path uses, and each *prefix* `q` (the path from `ENTRY` to
//! `v`) of the interesting paths through `e`: `min(e,q)` is the smallest partial id of those
//! paths, and `cis(q)` the interval already used by `q` on earlier out-edges of `v`. The
//! prefix asks for weight `cis(q) − min(e,q)` so that its interval on `e` starts right after
//! the previous one (Equation 1); the *join* takes the largest request over all prefixes
//! (Lines 9–11), which may leave holes for the others (Figure 9). Then the partial ids of the
//! paths through `e` grow by `W(e)` and `cis(q)` becomes their maximum plus one. Edges no
//! interesting path uses keep weight ⊥, which the runtime treats as 0.
//!
//! Prefixes are keyed by their Ball–Larus partial sum (§5): two different prefixes reaching
//! the same node have different sums, because their completions would otherwise share a
//! Ball–Larus id. The cost is `O(Σ_p |p|)` time and memory (at most `O(|E|·|I|)`) with hash
//! maps of the prefixes at one node at a time.
//!
//! Interesting ids are unique (Lemma 5) and lie in `[0, interval)`; Γ = interval / |I| ≥ 1.
//! Γ = 1 is not always possible (Lemma 3, Figure 6), and PPP may miss an optimum that
//! overlapping intervals would reach (Figure 11); the tests pin both. Uninteresting paths
//! *alias*: their PPP sum may equal an interesting id, so the runtime also keeps the
//! Ball–Larus counter on the same edges and compares it with the id stored in the slot
//! ([`PppPlan::classify`]).

use crate::ball_larus::{BallLarus, DagPath};
use crate::dag::Dag;
use crate::error::{Error, Result};
use crate::ids::{DagEdgeId, PathId};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// The PPP edge weights and the ids they give the interesting paths.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PppPlan {
    /// Weight per DAG edge; `None` is ⊥ (no interesting path uses the edge; counts as 0).
    pub weights: Vec<Option<i64>>,
    /// Ball–Larus ids of the interesting paths, in input order without duplicates.
    pub bl_ids: Vec<u64>,
    /// PPP id of each interesting path (same order as `bl_ids`).
    pub ids: Vec<u64>,
    /// The size of `[0, max id]`: the length of the counter array.
    pub interval: u64,
    /// `(ppp id, index into bl_ids)` sorted by id: the occupied slots of the counter array
    /// (ids not listed are holes). The runtime stores `bl_ids[index]` beside the counter to
    /// detect aliases. Kept sparse: the interval of a hostile set can be huge.
    pub slots: Vec<(u64, u32)>,
}

/// One weight decision of Figure 10, for tracing the algorithm (§3.2's walk-through).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The edge that got a weight.
    pub edge: DagEdgeId,
    /// The intervals the prefixes induce on the edge, by prefix key.
    pub intervals: Vec<Interval>,
    /// The weight chosen by the join.
    pub weight: i64,
}

/// The interval `int(e,q)` a prefix induces on an edge (before the edge's weight is added).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Interval {
    /// The prefix, keyed by its Ball–Larus partial sum.
    pub prefix: u64,
    /// The smallest partial id of the prefix's interesting paths through the edge.
    pub min: i64,
    /// The largest.
    pub max: i64,
    /// `cis(q)`: the interval already used by the prefix on earlier out-edges of the node.
    pub cis: i64,
}

/// A path occurrence at one node: which edge it takes and its prefix's key.
#[derive(Clone, Copy)]
struct Visit {
    edge: DagEdgeId,
    path: u32,
    prefix: u64,
}

impl PppPlan {
    /// Runs Figure 10 for the interesting `paths` of `dag` (duplicates are ignored).
    pub fn compute(dag: &Dag, bl: &BallLarus, paths: &[DagPath]) -> Result<PppPlan> {
        Self::compute_traced(dag, bl, paths, None)
    }

    /// [`compute`](Self::compute), appending each weight decision to `trace`.
    pub fn compute_traced(
        dag: &Dag,
        bl: &BallLarus,
        paths: &[DagPath],
        mut trace: Option<&mut Vec<Step>>,
    ) -> Result<PppPlan> {
        let (paths, bl_ids) = dedupe(dag, bl, paths)?;
        let visits = visits_by_node(dag, bl, &paths);
        let mut weights = vec![None; dag.edge_count()];
        let mut pid = vec![0i64; paths.len()];
        let overflow = || Error::PppOverflow(dag.name().to_owned());
        let mut cis: FxHashMap<u64, i64> = FxHashMap::default();
        let mut range: FxHashMap<u64, (i64, i64)> = FxHashMap::default();
        for &v in dag.topo_order().iter().rev() {
            cis.clear();
            for run in visits[v.index()].chunk_by(|a, b| a.edge == b.edge) {
                range.clear();
                for x in run {
                    let r = range.entry(x.prefix).or_insert((i64::MAX, i64::MIN));
                    *r = (r.0.min(pid[x.path as usize]), r.1.max(pid[x.path as usize]));
                }
                let mut w = i64::MIN;
                for (q, &(lo, _)) in &range {
                    let want = cis
                        .get(q)
                        .copied()
                        .unwrap_or(0)
                        .checked_sub(lo)
                        .ok_or_else(overflow)?;
                    w = w.max(want);
                }
                if let Some(t) = trace.as_deref_mut() {
                    t.push(step(run[0].edge, &range, &cis, w));
                }
                weights[run[0].edge.index()] = Some(w);
                for x in run {
                    let p = &mut pid[x.path as usize];
                    *p = p.checked_add(w).ok_or_else(overflow)?;
                }
                for (q, &(_, hi)) in &range {
                    cis.insert(
                        *q,
                        hi.checked_add(w)
                            .and_then(|h| h.checked_add(1))
                            .ok_or_else(overflow)?,
                    );
                }
            }
        }
        Self::finish(weights, bl_ids, pid)
    }

    fn finish(weights: Vec<Option<i64>>, bl_ids: Vec<u64>, pid: Vec<i64>) -> Result<PppPlan> {
        let ids: Vec<u64> = pid
            .iter()
            .map(|&p| u64::try_from(p).expect("Figure 10 ids are >= 0"))
            .collect();
        let interval = ids.iter().max().map_or(0, |&m| m + 1);
        let mut slots: Vec<(u64, u32)> = ids
            .iter()
            .enumerate()
            .map(|(i, &id)| (id, i as u32))
            .collect();
        slots.sort_unstable();
        Ok(PppPlan {
            weights,
            bl_ids,
            ids,
            interval,
            slots,
        })
    }

    /// Γ = interval / |I| (1 for an empty set).
    pub fn gamma(&self) -> f64 {
        if self.ids.is_empty() {
            1.0
        } else {
            self.interval as f64 / self.ids.len() as f64
        }
    }

    /// The weights as register increments: ⊥ is 0, negative weights wrap (two's complement).
    pub fn values(&self) -> Vec<u64> {
        self.weights.iter().map(|w| w.unwrap_or(0) as u64).collect()
    }

    /// The PPP register value at the end of `path` (wrapping), for any path.
    pub fn register(&self, path: &[DagEdgeId]) -> u64 {
        path.iter().fold(0u64, |a, e| {
            a.wrapping_add(self.weights[e.index()].unwrap_or(0) as u64)
        })
    }

    /// The runtime check: which interesting path ran, given both registers at a path end.
    /// `None` means an uninteresting path (out of range, a hole, or an alias whose stored
    /// Ball–Larus id differs).
    pub fn classify(&self, ppp: u64, bl_id: PathId) -> Option<usize> {
        let at = self.slots.binary_search_by_key(&ppp, |s| s.0).ok()?;
        let slot = self.slots[at].1 as usize;
        (self.bl_ids[slot] == bl_id.0).then_some(slot)
    }
}

fn step(
    edge: DagEdgeId,
    range: &FxHashMap<u64, (i64, i64)>,
    cis: &FxHashMap<u64, i64>,
    weight: i64,
) -> Step {
    let mut intervals: Vec<_> = range
        .iter()
        .map(|(&prefix, &(min, max))| Interval {
            prefix,
            min,
            max,
            cis: cis.get(&prefix).copied().unwrap_or(0),
        })
        .collect();
    intervals.sort_unstable();
    Step {
        edge,
        intervals,
        weight,
    }
}

/// Validates the paths, drops repeats, and returns them with their Ball–Larus ids.
fn dedupe(dag: &Dag, bl: &BallLarus, paths: &[DagPath]) -> Result<(Vec<DagPath>, Vec<u64>)> {
    let mut seen = FxHashMap::default();
    let mut out = Vec::new();
    let mut ids = Vec::new();
    for p in paths {
        let id = bl.encode_edges(dag, &p.edges)?;
        if seen.insert(id.0, ()).is_none() {
            out.push(p.clone());
            ids.push(id.0);
        }
    }
    if out.len() > u32::MAX as usize {
        return Err(Error::Name(format!(
            "function `{}`: too many interesting paths",
            dag.name()
        )));
    }
    Ok((out, ids))
}

/// Every (edge, path, prefix key) occurrence grouped by source node, edges in out-edge order.
fn visits_by_node(dag: &Dag, bl: &BallLarus, paths: &[DagPath]) -> Vec<Vec<Visit>> {
    let mut by_node: Vec<Vec<Visit>> = vec![Vec::new(); dag.node_count()];
    for (i, p) in paths.iter().enumerate() {
        let mut prefix = 0u64;
        for &e in &p.edges {
            by_node[dag.edge(e).src.index()].push(Visit {
                edge: e,
                path: i as u32,
                prefix,
            });
            prefix += bl.increment(e);
        }
    }
    // Out-edges of a node have consecutive ids in numbering order, so sorting by edge id
    // processes them in order; the sort is stable, keeping paths in input order.
    for v in &mut by_node {
        v.sort_by_key(|x| x.edge);
    }
    by_node
}

/// The interesting-path file for `wpp ppp plan`: per function, paths as node-name lists
/// and/or Ball–Larus ids.
///
/// ```json
/// { "functions": [ { "name": "fig3",
///                    "paths": [["s","a","c","d","t"], ["s","a","c","t"]],
///                    "ids": [5] } ] }
/// ```
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterestingFile {
    /// One entry per function with interesting paths.
    pub functions: Vec<InterestingPaths>,
}

/// Interesting paths of one function.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterestingPaths {
    /// The function's name.
    pub name: String,
    /// Paths as node names, first to last.
    #[serde(default)]
    pub paths: Vec<Vec<String>>,
    /// Paths as Ball–Larus ids.
    #[serde(default)]
    pub ids: Vec<u64>,
}

impl InterestingPaths {
    /// Resolves names and ids to DAG paths of `cfg`.
    pub fn resolve(&self, cfg: &crate::Cfg, dag: &Dag, bl: &BallLarus) -> Result<Vec<DagPath>> {
        let ids: FxHashMap<&str, crate::NodeId> = cfg
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), crate::NodeId(i as u32)))
            .collect();
        let mut out = Vec::with_capacity(self.paths.len() + self.ids.len());
        for names in &self.paths {
            let nodes = names
                .iter()
                .map(|n| {
                    ids.get(n.as_str()).copied().ok_or_else(|| {
                        Error::Name(format!(
                            "function `{}`: path node `{n}` is not a node",
                            cfg.name
                        ))
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let edges = crate::ball_larus::dag_path_of_nodes(dag, &nodes).ok_or_else(|| {
                Error::NotAPath {
                    function: cfg.name.clone(),
                    detail: format!("{} is not an acyclic path", names.join(",")),
                }
            })?;
            out.push(DagPath { edges });
        }
        for &id in &self.ids {
            out.push(bl.decode(dag, PathId(id))?);
        }
        Ok(out)
    }
}
