//! Chord placement (Ball & Larus 1996 event counting, used by PPP §5) and the runtime contract
//! of an instrumented function.
//!
//! # Placement
//!
//! Add a virtual edge `EXIT→ENTRY` and take a maximum-weight spanning tree of the DAG viewed
//! as an undirected graph, with the virtual edge forced in. The edges outside the tree are the
//! *chords*. Give every node a potential `φ` with `φ(ENTRY) = φ(EXIT) = 0` and
//! `φ(dst) = φ(src) + Val(e)` along tree edges; then
//! `Inc(e) = Val(e) + φ(src) − φ(dst)` is zero on tree edges and, summed along any
//! `ENTRY→EXIT` path, telescopes to the sum of `Val`: the same path ids with increments on the
//! chords only. `Val` may be Ball–Larus increments or PPP weights: one tree serves both
//! counters, so both are updated on the same edges (§5). Weights come from an edge profile
//! when the CFG has one (hot edges stay in the tree, uninstrumented), else from loop depth
//! (`8^depth`, depth estimated from the backedges spanning a node in the topological order).
//!
//! Register arithmetic is modulo 2^64: chord increments may be "negative" (stored as their
//! two's complement), and the final value of every path is its exact id.
//!
//! # Runtime contract
//!
//! [`Instrumentation::plan`] turns a DAG and per-DAG-edge increments into actions on the
//! function's CFG. The instrumented function keeps one 64-bit register `r` per counter:
//!
//! 1. **Function entry**, before the entry block's code: `r = entry`.
//! 2. **CFG edge** `e` with [`EdgeAction::Add(k)`](EdgeAction::Add): `r += k` on the edge
//!    (split it when critical). [`EdgeAction::Set(k)`](EdgeAction::Set): `r = k`; no chord
//!    precedes it on any path, so `r` is still 0 there (initialization pushed down and merged
//!    with the first increment). [`EdgeAction::None`]: nothing.
//! 3. **Backedge or cut edge** ([`EdgeAction::Restart`]): `r += add; record(r); r = init` on
//!    the edge: the path ending at the source is recorded and a new one starts at the target.
//! 4. **Cut node** `v` ([`Instrumentation::cut_nodes`]): at the cut (before the call),
//!    `r += add; record(r); r = init`.
//! 5. **Return** from exit node `x`, or the end of a block without successors
//!    ([`Instrumentation::returns`]): `r += add; record(r)` before the terminator.
//!
//! Each recorded value is the Ball–Larus id (or PPP id) of the acyclic path since the last
//! start. A test simulates random executions under exactly these rules and checks that every
//! recorded id decodes to the block sequence that ran.
//!
//! # Recipe for an instrumenter
//!
//! Block ids are node ids; call sites are cut nodes; `indirectbr` and exception edges are
//! cut edges. Both counters use one tree, so the PPP actions are a subset of the chords:
//!
//! ```
//! use wpp_paths::{number_with_cuts, CfgFile, Instrumentation, PppPlan, SpanningTree};
//!
//! let json = r#"{"functions":[{"name":"f","nodes":["s","a","b","t"],"entry":"s",
//!     "exits":["t"],"edges":[["s","a"],["s","b"],["a","t"],["b","t"],["t","s"]]}]}"#;
//! let mut cfg = CfgFile::parse(json)?.remove(0);
//! let (dag, bl) = number_with_cuts(&mut cfg)?; // may add cut nodes past 2^64 paths
//! let tree = SpanningTree::build(&dag, &cfg, bl.increments());
//! let bl_actions = Instrumentation::plan(&dag, &cfg, &tree.increments(&dag, bl.increments()));
//! // The backedge t→s records the path and restarts the register.
//! assert!(matches!(bl_actions.edges[4], wpp_paths::EdgeAction::Restart(_)));
//!
//! let hot = vec![bl.decode(&dag, wpp_paths::PathId(0))?];
//! let plan = PppPlan::compute(&dag, &bl, &hot)?;
//! let ppp_actions = Instrumentation::plan(&dag, &cfg, &tree.increments(&dag, &plan.values()));
//! // sat and sbt (returning and looping back end the same way at t); one interesting path:
//! assert_eq!((bl.path_count(), plan.interval), (2, 1));
//! assert_eq!(plan.classify(0, wpp_paths::PathId(0)), Some(0));
//! # let _ = ppp_actions;
//! # Ok::<(), wpp_paths::Error>(())
//! ```

use crate::cfg::Cfg;
use crate::dag::{CfgEdgeRole, Dag, DagEdgeKind, ENTRY, EXIT};
use crate::ids::{DagEdgeId, DagNodeId, EdgeId, NodeId};
use serde::Serialize;

/// A maximum spanning tree of a DAG plus `EXIT→ENTRY`; its complement are the chords.
#[derive(Clone, Debug, Default)]
pub struct SpanningTree {
    in_tree: Vec<bool>,
    parent: Vec<u32>,
    order: Vec<DagEdgeId>,
}

impl SpanningTree {
    /// Kruskal over edges sorted by decreasing weight. Ties go to edges with a nonzero
    /// `val` first (in the tree they need no code, while a zero-valued chord often ends up
    /// with a zero increment anyway), then to lower ids.
    pub fn compute(&mut self, dag: &Dag, weights: &[u64], val: &[u64]) {
        self.in_tree.clear();
        self.in_tree.resize(dag.edge_count(), false);
        self.parent.clear();
        self.parent.extend(0..dag.node_count() as u32);
        self.union(ENTRY, EXIT);
        self.order.clear();
        self.order
            .extend((0..dag.edge_count()).map(DagEdgeId::from_index));
        self.order
            .sort_by_key(|e| (std::cmp::Reverse(weights[e.index()]), val[e.index()] == 0));
        for i in 0..self.order.len() {
            let e = self.order[i];
            let edge = dag.edge(e);
            if self.union(edge.src, edge.dst) {
                self.in_tree[e.index()] = true;
            }
        }
    }

    /// A tree for `dag` with [`edge_weights`], breaking ties in favour of `val`'s nonzero
    /// edges (pass the Ball–Larus increments).
    pub fn build(dag: &Dag, cfg: &Cfg, val: &[u64]) -> SpanningTree {
        let mut t = SpanningTree::default();
        t.compute(dag, &edge_weights(dag, cfg), val);
        t
    }

    fn find(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let p = self.parent[x as usize];
            self.parent[x as usize] = self.parent[p as usize];
            x = p;
        }
        x
    }

    fn union(&mut self, a: DagNodeId, b: DagNodeId) -> bool {
        let (ra, rb) = (self.find(a.0), self.find(b.0));
        self.parent[ra as usize] = rb;
        ra != rb
    }

    /// Whether DAG edge `e` is a chord (carries an increment).
    pub fn is_chord(&self, e: DagEdgeId) -> bool {
        !self.in_tree[e.index()]
    }

    /// The number of chords.
    pub fn chord_count(&self) -> usize {
        self.in_tree.iter().filter(|&&t| !t).count()
    }

    /// Chord increments for edge values `val` (Ball–Larus or PPP, as wrapping `u64`): zero on
    /// tree edges, and the same sum as `val` along every `ENTRY→EXIT` path.
    pub fn increments(&self, dag: &Dag, val: &[u64]) -> Vec<u64> {
        let phi = self.potentials(dag, val);
        (0..dag.edge_count())
            .map(|i| {
                let e = dag.edge(DagEdgeId::from_index(i));
                if self.in_tree[i] {
                    0
                } else {
                    val[i]
                        .wrapping_add(phi[e.src.index()])
                        .wrapping_sub(phi[e.dst.index()])
                }
            })
            .collect()
    }

    /// `φ` by a traversal of the tree from `ENTRY` (and `EXIT`, joined to it by the virtual
    /// edge).
    fn potentials(&self, dag: &Dag, val: &[u64]) -> Vec<u64> {
        let n = dag.node_count();
        let mut adj_start = vec![0u32; n + 1];
        for (i, e) in dag.edges().iter().enumerate() {
            if self.in_tree[i] {
                adj_start[e.src.index() + 1] += 1;
                adj_start[e.dst.index() + 1] += 1;
            }
        }
        for i in 0..n {
            adj_start[i + 1] += adj_start[i];
        }
        let mut fill = adj_start[..n].to_vec();
        let mut adj = vec![DagEdgeId(0); adj_start[n] as usize];
        for (i, e) in dag.edges().iter().enumerate() {
            if self.in_tree[i] {
                for v in [e.src, e.dst] {
                    adj[fill[v.index()] as usize] = DagEdgeId::from_index(i);
                    fill[v.index()] += 1;
                }
            }
        }
        let mut phi = vec![0u64; n];
        let mut seen = vec![false; n];
        let mut work = vec![ENTRY, EXIT];
        seen[ENTRY.index()] = true;
        seen[EXIT.index()] = true;
        while let Some(v) = work.pop() {
            for &e in &adj[adj_start[v.index()] as usize..adj_start[v.index() + 1] as usize] {
                let edge = dag.edge(e);
                let (w, p) = if edge.src == v {
                    (edge.dst, phi[v.index()].wrapping_add(val[e.index()]))
                } else {
                    (edge.src, phi[v.index()].wrapping_sub(val[e.index()]))
                };
                if !seen[w.index()] {
                    seen[w.index()] = true;
                    phi[w.index()] = p;
                    work.push(w);
                }
            }
        }
        phi
    }
}

/// Spanning-tree weights per DAG edge: the edge profile when `cfg` has one, else `8^depth`
/// with the loop-depth estimate of the module docs.
pub fn edge_weights(dag: &Dag, cfg: &Cfg) -> Vec<u64> {
    match &cfg.profile {
        Some(p) => profile_weights(dag, cfg, p),
        None => {
            let depth = loop_depths(dag, cfg);
            let w = |n: DagNodeId| 1u64 << (3 * depth[n.index()].min(20));
            dag.edges().iter().map(|e| w(e.src).min(w(e.dst))).collect()
        }
    }
}

/// Profile counts on CFG edges; a start or end edge gets the counts of the CFG edges it
/// stands for plus the flow through its node (so hot loop restarts stay in the tree).
fn profile_weights(dag: &Dag, cfg: &Cfg, p: &[u64]) -> Vec<u64> {
    let mut flow = vec![0u64; dag.node_count()];
    for (i, e) in cfg.edges.iter().enumerate() {
        if let Some(h) = dag.head(e.dst) {
            flow[h.index()] = flow[h.index()].saturating_add(p[i]);
        }
    }
    dag.edges()
        .iter()
        .map(|e| match e.kind {
            DagEdgeKind::Cfg(c) => p[c.index()],
            DagEdgeKind::Start => flow[e.dst.index()],
            DagEdgeKind::End => flow[e.src.index()],
        })
        .collect()
}

/// Loop depth per DAG node: the number of backedges `v→w` with `w` at or before the node and
/// `v` at or after it in topological order (a difference array over positions).
fn loop_depths(dag: &Dag, cfg: &Cfg) -> Vec<u32> {
    let topo = dag.topo_order();
    let mut pos = vec![0usize; dag.node_count()];
    for (i, &n) in topo.iter().enumerate() {
        pos[n.index()] = i;
    }
    let mut diff = vec![0i64; topo.len() + 1];
    for (i, e) in cfg.edges.iter().enumerate() {
        if dag.role(EdgeId::from_index(i)) != CfgEdgeRole::Back {
            continue;
        }
        let (Some(w), Some(v)) = (dag.head(e.dst), dag.tail(e.src)) else {
            continue;
        };
        let (a, b) = (pos[w.index()], pos[v.index()]);
        if a <= b {
            diff[a] += 1;
            diff[b + 1] -= 1;
        }
    }
    let mut depth = vec![0u32; dag.node_count()];
    let mut d = 0i64;
    for (i, &n) in topo.iter().enumerate() {
        d += diff[i];
        depth[n.index()] = d.max(0) as u32;
    }
    depth
}

/// What an instrumented CFG edge does to the register (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum EdgeAction {
    /// Nothing (a tree edge).
    None,
    /// `r += k`.
    Add(u64),
    /// `r = k` (the register is known to be 0 here).
    Set(u64),
    /// `r += add; record(r); r = init` (backedge or cut edge).
    Restart(Restart),
    /// The edge's source is unreachable: nothing to do.
    Dead,
}

/// End the current path and start another: `r += add; record(r); r = init`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Restart {
    /// Added before recording.
    pub add: u64,
    /// The register's value for the new path.
    pub init: u64,
}

/// The actions an instrumented function performs (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Instrumentation {
    /// `r = entry` at function entry.
    pub entry: u64,
    /// One action per CFG edge.
    pub edges: Vec<EdgeAction>,
    /// Cut nodes: the restart performed at the cut.
    pub cut_nodes: Vec<(NodeId, Restart)>,
    /// Returning nodes (exits and reachable blocks without successors): `r += k; record(r)`.
    pub returns: Vec<(NodeId, u64)>,
}

impl Instrumentation {
    /// The actions realizing increments `inc` (indexed by DAG edge) on `cfg`'s blocks.
    pub fn plan(dag: &Dag, cfg: &Cfg, inc: &[u64]) -> Instrumentation {
        let clean = clean_nodes(dag, inc);
        let start = |n: Option<DagNodeId>| {
            n.and_then(|n| dag.start_edge(n))
                .map_or(0, |e| inc[e.index()])
        };
        let end = |n: Option<DagNodeId>| {
            n.and_then(|n| dag.end_edge(n))
                .map_or(0, |e| inc[e.index()])
        };
        let edges = cfg
            .edges
            .iter()
            .enumerate()
            .map(|(i, e)| match dag.role(EdgeId::from_index(i)) {
                CfgEdgeRole::Dag(d) => match inc[d.index()] {
                    0 => EdgeAction::None,
                    k if clean[dag.edge(d).src.index()] => EdgeAction::Set(k),
                    k => EdgeAction::Add(k),
                },
                CfgEdgeRole::Back | CfgEdgeRole::Cut => EdgeAction::Restart(Restart {
                    add: end(dag.tail(e.src)),
                    init: start(dag.head(e.dst)),
                }),
                CfgEdgeRole::Dead => EdgeAction::Dead,
            })
            .collect();
        let mut cut_nodes: Vec<_> = cfg
            .cut_nodes
            .iter()
            .filter(|&&v| dag.head(v).is_some())
            .map(|&v| {
                (
                    v,
                    Restart {
                        add: end(dag.head(v)),
                        init: start(dag.tail(v)),
                    },
                )
            })
            .collect();
        cut_nodes.sort_by_key(|c| c.0);
        cut_nodes.dedup_by_key(|c| c.0);
        let returns = returning_nodes(dag, cfg)
            .into_iter()
            .map(|x| (x, end(dag.tail(x))))
            .collect();
        Instrumentation {
            entry: start(dag.head(cfg.entry)),
            edges,
            cut_nodes,
            returns,
        }
    }

    /// The number of CFG edges that carry code (`Add`, `Set` or `Restart`).
    pub fn instrumented_edges(&self) -> usize {
        self.edges
            .iter()
            .filter(|a| {
                matches!(
                    a,
                    EdgeAction::Add(_) | EdgeAction::Set(_) | EdgeAction::Restart(_)
                )
            })
            .count()
    }
}

/// Nodes where the register is certainly 0: every path from `ENTRY` has only zero increments.
fn clean_nodes(dag: &Dag, inc: &[u64]) -> Vec<bool> {
    let mut clean = vec![true; dag.node_count()];
    for &v in dag.topo_order() {
        for e in dag.out_edges(v) {
            if !clean[v.index()] || inc[e.index()] != 0 {
                clean[dag.edge(e).dst.index()] = false;
            }
        }
    }
    clean
}

/// Exits and reachable nodes without CFG successors, in id order.
pub fn returning_nodes(dag: &Dag, cfg: &Cfg) -> Vec<NodeId> {
    let mut has_succ = vec![false; cfg.nodes.len()];
    cfg.edges
        .iter()
        .for_each(|e| has_succ[e.src.index()] = true);
    let mut is_exit = vec![false; cfg.nodes.len()];
    cfg.exits.iter().for_each(|x| is_exit[x.index()] = true);
    (0..cfg.nodes.len())
        .map(NodeId::from_index)
        .filter(|&v| dag.head(v).is_some() && (is_exit[v.index()] || !has_succ[v.index()]))
        .collect()
}
