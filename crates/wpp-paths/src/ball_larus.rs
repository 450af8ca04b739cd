//! Ball–Larus path numbering (PPP paper §2.2, Figure 1) with decoding and encoding.
//!
//! In reverse topological order, `N(v)` is the number of paths from `v` to `EXIT`
//! (`N(EXIT) = 1`), and the out-edges `e1, e2, …` of `v` get increments
//! `Val(e_i) = N(dst e_1) + … + N(dst e_{i-1})` (Lemma 1). The sum of `Val` along a path from
//! `ENTRY` to `EXIT` is its id, and ids are exactly `[0, N(ENTRY))`.
//!
//! Counts are `u64` with checked additions: a function whose path count reaches 2^64 is
//! rejected with [`Error::PathCountOverflow`] naming the node, and the caller cuts paths there
//! (marks a cut node, see [`Cfg`]) and renumbers; [`number_with_cuts`] does this
//! automatically. The limit is `N < 2^64`, so `N` itself and every id fit a `u64`.
//!
//! Decoding walks from `ENTRY`, taking at each node the last out-edge whose increment does
//! not exceed the remaining id (`O(path length × out-degree)`). Encoding sums increments.

use crate::cfg::Cfg;
use crate::dag::{Dag, DagEdgeKind, DagNodeKind, ENTRY, EXIT};
use crate::error::{Error, Result};
use crate::ids::{DagEdgeId, DagNodeId, EdgeId, NodeId, PathId};

/// Ball–Larus path counts and edge increments for one [`Dag`].
#[derive(Clone, Debug, Default)]
pub struct BallLarus {
    name: String,
    counts: Vec<u64>,
    val: Vec<u64>,
}

/// A path through the DAG, as the DAG edges from `ENTRY` to `EXIT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DagPath {
    /// The edges, first to last.
    pub edges: Vec<DagEdgeId>,
}

impl DagPath {
    /// The CFG nodes along the path (a cut node appears once, whichever half is on the path).
    pub fn nodes(&self, dag: &Dag) -> Vec<NodeId> {
        let mut out = Vec::with_capacity(self.edges.len());
        for &e in &self.edges {
            out.extend(dag.cfg_node(dag.edge(e).dst));
        }
        out
    }

    /// The CFG edges along the path (start and end edges have none).
    pub fn cfg_edges(&self, dag: &Dag) -> Vec<EdgeId> {
        self.edges
            .iter()
            .filter_map(|&e| match dag.edge(e).kind {
                DagEdgeKind::Cfg(c) => Some(c),
                _ => None,
            })
            .collect()
    }
}

impl BallLarus {
    /// Numbers the paths of `dag`.
    pub fn number(dag: &Dag) -> Result<BallLarus> {
        let mut bl = BallLarus::default();
        bl.compute(dag)?;
        Ok(bl)
    }

    /// Renumbers for `dag`, reusing allocations.
    pub fn compute(&mut self, dag: &Dag) -> Result<()> {
        self.name.clear();
        self.name.push_str(dag.name());
        self.counts.clear();
        self.counts.resize(dag.node_count(), 0);
        self.val.clear();
        self.val.resize(dag.edge_count(), 0);
        self.counts[EXIT.index()] = 1;
        for &v in dag.topo_order().iter().rev().skip(1) {
            let mut n: u64 = 0;
            for e in dag.out_edges(v) {
                self.val[e.index()] = n;
                let add = self.counts[dag.edge(e).dst.index()];
                n = n.checked_add(add).ok_or_else(|| self.overflow(dag, v))?;
            }
            self.counts[v.index()] = n;
        }
        Ok(())
    }

    fn overflow(&self, dag: &Dag, v: DagNodeId) -> Error {
        let node = match dag.node(v) {
            DagNodeKind::Block(n) => format!("{n}"),
            DagNodeKind::CutTail(n) => format!("{n} (after its cut)"),
            _ => "ENTRY (sum over all path starts)".to_owned(),
        };
        Error::PathCountOverflow {
            function: self.name.clone(),
            node,
        }
    }

    /// The number of acyclic paths `N = N(ENTRY)`; ids are `[0, N)`.
    pub fn path_count(&self) -> u64 {
        self.counts[ENTRY.index()]
    }

    /// `N(v)`: the number of paths from `v` to `EXIT`.
    pub fn count(&self, v: DagNodeId) -> u64 {
        self.counts[v.index()]
    }

    /// `Val(e)`, the increment of DAG edge `e` when every edge is instrumented.
    pub fn increment(&self, e: DagEdgeId) -> u64 {
        self.val[e.index()]
    }

    /// All increments, indexed by [`DagEdgeId`].
    pub fn increments(&self) -> &[u64] {
        &self.val
    }

    /// The blocks of path `id` as `wpp profile show` names them: `b3` for a block, `b3'` for
    /// the part of block 3 after a call (a path starting at a cut), and `b3[2]` for block 3
    /// entered by an edge that has a parallel one (the cases of a switch that share a target):
    /// the edge's position among the previous block's successors
    /// ([`Dag::successor_index`]), so that two paths never read the same.
    pub fn block_names(&self, dag: &Dag, id: PathId) -> Result<Vec<String>> {
        let path = self.decode(dag, id)?;
        Ok(path
            .edges
            .iter()
            .filter_map(|&e| {
                let d = dag.edge(e);
                match (dag.node(d.dst), d.kind) {
                    (DagNodeKind::Block(b), DagEdgeKind::Cfg(c)) if dag.is_parallel(e) => {
                        Some(format!("b{}[{}]", b.0, dag.successor_index(c)))
                    }
                    (DagNodeKind::Block(b), _) => Some(format!("b{}", b.0)),
                    (DagNodeKind::CutTail(b), _) => Some(format!("b{}'", b.0)),
                    _ => None,
                }
            })
            .collect())
    }

    /// The path with id `id`.
    pub fn decode(&self, dag: &Dag, id: PathId) -> Result<DagPath> {
        if id.0 >= self.path_count() {
            return Err(Error::IdOutOfRange {
                function: self.name.clone(),
                id: id.0,
                count: self.path_count(),
            });
        }
        let (mut v, mut r) = (ENTRY, id.0);
        let mut edges = Vec::new();
        while v != EXIT {
            let e = dag
                .out_edges(v)
                .take_while(|e| self.val[e.index()] <= r)
                .last()
                .expect("the first out-edge has increment 0");
            r -= self.val[e.index()];
            edges.push(e);
            v = dag.edge(e).dst;
        }
        debug_assert_eq!(r, 0);
        Ok(DagPath { edges })
    }

    /// The id of a path given as DAG edges from `ENTRY` to `EXIT`.
    pub fn encode_edges(&self, dag: &Dag, edges: &[DagEdgeId]) -> Result<PathId> {
        let mut at = ENTRY;
        let mut id: u64 = 0;
        for (i, &e) in edges.iter().enumerate() {
            if e.index() >= dag.edge_count() || dag.edge(e).src != at {
                return Err(
                    self.not_a_path(format!("edge #{i} ({e}) does not leave DAG node {at}"))
                );
            }
            id += self.val[e.index()]; // below N(ENTRY) by construction
            at = dag.edge(e).dst;
        }
        if at != EXIT {
            return Err(self.not_a_path("the path does not end at EXIT".to_owned()));
        }
        Ok(PathId(id))
    }

    /// The id of a path given as CFG nodes, first to last.
    ///
    /// A node sequence can name several DAG paths when it crosses parallel edges (the first
    /// edge in CFG order is taken) or when a one-node sequence is a cut node that both ends
    /// and starts paths (the path ending at the cut is taken). Use
    /// [`encode_edges`](Self::encode_edges) for an exact answer.
    pub fn encode_nodes(&self, dag: &Dag, nodes: &[NodeId]) -> Result<PathId> {
        let edges = dag_path_of_nodes(dag, nodes).ok_or_else(|| {
            let ids: Vec<String> = nodes.iter().map(|n| n.to_string()).collect();
            self.not_a_path(format!(
                "nodes {} are not an acyclic path of the DAG",
                ids.join(",")
            ))
        })?;
        self.encode_edges(dag, &edges)
    }

    fn not_a_path(&self, detail: String) -> Error {
        Error::NotAPath {
            function: self.name.clone(),
            detail,
        }
    }
}

/// The DAG edges of the path through CFG nodes `nodes` (see
/// [`BallLarus::encode_nodes`] for the choice among several).
///
/// Each CFG node has at most two DAG nodes (a cut node's halves), so a forward pass keeping,
/// per position, which of them are reachable with a back-pointer finds a path exactly.
pub fn dag_path_of_nodes(dag: &Dag, nodes: &[NodeId]) -> Option<Vec<DagEdgeId>> {
    let candidates = |v: NodeId| -> [Option<DagNodeId>; 2] {
        let (h, t) = (dag.head(v), dag.tail(v));
        [h, if t == h { None } else { t }]
    };
    let first = *nodes.first()?;
    if first.index() >= dag.cfg_node_count() {
        return None;
    }
    // back[i][k]: the edge reaching candidate k of position i, if reachable.
    let mut back: Vec<[Option<DagEdgeId>; 2]> = Vec::with_capacity(nodes.len());
    back.push(candidates(first).map(|c| c.and_then(|n| dag.start_edge(n))));
    for (i, &v) in nodes.iter().enumerate().skip(1) {
        if v.index() >= dag.cfg_node_count() {
            return None;
        }
        let prev = candidates(nodes[i - 1]);
        let here = candidates(v);
        let mut step = [None, None];
        for (k, slot) in step.iter_mut().enumerate() {
            let Some(target) = here[k] else { continue };
            *slot = (0..2)
                .filter(|&j| back[i - 1][j].is_some())
                .filter_map(|j| prev[j])
                .flat_map(|p| dag.out_edges(p))
                .find(|&e| dag.edge(e).dst == target);
        }
        back.push(step);
    }
    let last = candidates(*nodes.last()?);
    let k = (0..2).find(|&k| {
        back[nodes.len() - 1][k].is_some() && last[k].and_then(|n| dag.end_edge(n)).is_some()
    })?;
    let mut edges = vec![dag.end_edge(last[k]?)?];
    let mut k = k;
    for i in (0..nodes.len()).rev() {
        let e = back[i][k]?;
        edges.push(e);
        if i > 0 {
            let src = dag.edge(e).src;
            k = (0..2).find(|&j| candidates(nodes[i - 1])[j] == Some(src))?;
        }
    }
    edges.reverse();
    Some(edges)
}

/// Builds and numbers `cfg`; if the path count reaches 2^64, adds cut nodes until it fits.
///
/// A function that numbers without overflow is returned unchanged. Otherwise every DAG
/// node's count is kept at or below `T = (2^64 − 1) / (2|V| + 2)`, so that the sum over all
/// path starts (at most one per DAG node) cannot overflow either: in reverse topological
/// order, when the successors of `v` add up to more than `T`, all its successors with more
/// than one path are made cut nodes (their first halves then count 1: the path ends at the
/// cut). Cutting only the heaviest would leave `v` just under `T` and force a cut at every
/// node above it; cutting all restarts the growth, so a chain of diamonds gets two cuts per
/// `log2 T` diamonds. Cutting changes which edges the DFS finds as backedges, so the DAG is rebuilt
/// and numbered again; each round adds cuts, so there are at most `|V|` rounds (in practice
/// one or two). Added cut nodes are appended to `cfg.cut_nodes` (so that
/// [`Instrumentation::plan`](crate::Instrumentation::plan) sees them); returns the DAG and
/// numbering of the cut CFG.
pub fn number_with_cuts(cfg: &mut Cfg) -> Result<(Dag, BallLarus)> {
    number_with_limit(cfg, u64::MAX)
}

/// [`number_with_cuts`] with path counts kept at or below `max_paths` instead of
/// `u64::MAX` (e.g. `u32::MAX` for 32-bit path registers); the per-node cap becomes
/// `max_paths / (2|V| + 2)`. Fails with [`Error::PathCountOverflow`] when no further cut
/// helps (a node's own out-degree is above the cap).
pub fn number_with_limit(cfg: &mut Cfg, max_paths: u64) -> Result<(Dag, BallLarus)> {
    let mut dag = Dag::default();
    let mut bl = BallLarus::default();
    let mut scratch = Vec::new();
    loop {
        dag.compute(cfg)?;
        let overflow = match bl.compute(&dag) {
            Ok(()) if bl.path_count() <= max_paths => return Ok((dag, bl)),
            Ok(()) => bl.overflow(&dag, ENTRY),
            Err(e @ Error::PathCountOverflow { .. }) => e,
            Err(e) => return Err(e),
        };
        let limit = max_paths / (2 * cfg.nodes.len() as u64 + 2);
        let before = cfg.cut_nodes.len();
        plan_cuts(&dag, limit, &mut scratch, &mut cfg.cut_nodes);
        if cfg.cut_nodes.len() == before {
            return Err(overflow);
        }
    }
}

/// Simulates numbering with counts capped at `limit`, appending the nodes to cut.
fn plan_cuts(dag: &Dag, limit: u64, counts: &mut Vec<u64>, cuts: &mut Vec<NodeId>) {
    counts.clear();
    counts.resize(dag.node_count(), 0);
    counts[EXIT.index()] = 1;
    let mut succ: Vec<DagNodeId> = Vec::new();
    for &v in dag.topo_order().iter().rev().skip(1) {
        succ.clear();
        succ.extend(dag.out_edges(v).map(|e| dag.edge(e).dst));
        let total = |counts: &[u64]| {
            succ.iter()
                .map(|w| u128::from(counts[w.index()]))
                .sum::<u128>()
        };
        if total(counts) > u128::from(limit) {
            for &w in &succ {
                if let (DagNodeKind::Block(n), true) = (dag.node(w), counts[w.index()] > 1) {
                    if dag.head(n) == dag.tail(n) {
                        counts[w.index()] = 1;
                        cuts.push(n);
                    }
                }
            }
        }
        counts[v.index()] = u64::try_from(total(counts)).unwrap_or(u64::MAX);
    }
}
