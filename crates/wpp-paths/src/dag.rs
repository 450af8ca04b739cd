//! The Ball–Larus DAG of a [`Cfg`]: where acyclic paths start, continue and end.
//!
//! Ball–Larus numbering (PPP paper §2.2) works on a DAG with one start `ENTRY` and one end
//! `EXIT`. [`Dag::build`] derives it from a CFG in linear time:
//!
//! | CFG situation | DAG |
//! |---|---|
//! | the entry node `s` | start edge `ENTRY→s` |
//! | exit node `x` (returns) | end edge `x→EXIT` |
//! | reachable node without successors (`unreachable`, `noreturn`) | end edge, like an exit |
//! | loop backedge `v→w` (found by an iterative DFS) | end edge `v→EXIT`, start edge `ENTRY→w` |
//! | cut edge `u→w` | end edge `u→EXIT`, start edge `ENTRY→w` |
//! | cut node `v` | two DAG nodes: `v` keeps the in-edges and gets the end edge `v→EXIT`; its *tail* `v'` gets the start edge `ENTRY→v'` and the out-edges |
//! | ordinary edge, including parallel edges | one DAG edge each, in CFG order |
//! | node unreachable from the entry | left out: it never runs, so no path contains it |
//!
//! A DAG node has at most one start edge and one end edge, however many backedges, cut edges
//! or exits produced them: two ways of ending a path at `v` have the same node sequence, so
//! they are one path. Out-edges of a node are its CFG edges in order, then its end edge; the
//! start edges of `ENTRY` are the entry node's first, then the others in DAG node order.
//!
//! DAG edges of one source are stored contiguously, so `out_edges(v)` is a range of ids, and
//! every table is a `Vec` indexed by a dense id. A `Dag` can be rebuilt for another function
//! with [`Dag::compute`], reusing its buffers.
//!
//! Cost: `O(|V| + |E|)` time and memory; the DFS keeps an explicit stack, so a 10^6-node chain
//! does not overflow the call stack.

use crate::cfg::Cfg;
use crate::error::Result;
use crate::ids::{DagEdgeId, DagNodeId, EdgeId, NodeId};
use serde::Serialize;

/// The virtual start node.
pub const ENTRY: DagNodeId = DagNodeId(0);
/// The virtual end node.
pub const EXIT: DagNodeId = DagNodeId(1);

/// What a DAG node stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum DagNodeKind {
    /// The virtual start.
    Entry,
    /// The virtual end.
    Exit,
    /// A CFG block (for a cut node: its half before the cut).
    Block(NodeId),
    /// The half of a cut node after the cut.
    CutTail(NodeId),
}

/// What a DAG edge stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum DagEdgeKind {
    /// A CFG edge that stays in the DAG.
    Cfg(EdgeId),
    /// `ENTRY→v`: a path may start at `v`.
    Start,
    /// `v→EXIT`: a path may end at `v`.
    End,
}

/// An edge of the DAG.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct DagEdge {
    /// Source node.
    pub src: DagNodeId,
    /// Target node.
    pub dst: DagNodeId,
    /// What the edge stands for.
    pub kind: DagEdgeKind,
}

/// How a CFG edge is treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum CfgEdgeRole {
    /// Kept as the given DAG edge.
    Dag(DagEdgeId),
    /// A loop backedge: ends the path at its source, starts one at its target.
    Back,
    /// A cut edge: same treatment as a backedge.
    Cut,
    /// Its source is unreachable.
    Dead,
}

/// The Ball–Larus DAG of one function (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct Dag {
    name: String,
    nodes: Vec<DagNodeKind>,
    edges: Vec<DagEdge>,
    /// Out-edges of node `n` are ids `first_out[n] .. first_out[n + 1]`.
    first_out: Vec<u32>,
    topo: Vec<DagNodeId>,
    /// Per CFG node: the DAG node holding its in-edges (`None` when unreachable).
    head: Vec<Option<DagNodeId>>,
    /// Per CFG node: the DAG node holding its out-edges (the tail for a cut node).
    tail: Vec<Option<DagNodeId>>,
    start_edge: Vec<Option<DagEdgeId>>,
    end_edge: Vec<Option<DagEdgeId>>,
    roles: Vec<CfgEdgeRole>,
    /// Per CFG edge: its position among its source's successors.
    successor_index: Vec<u32>,
    scratch: Scratch,
}

/// Buffers reused across [`Dag::compute`] calls.
#[derive(Clone, Debug, Default)]
struct Scratch {
    succ_start: Vec<u32>,
    succ: Vec<EdgeId>,
    is_cut_node: Vec<bool>,
    is_cut_edge: Vec<bool>,
    is_exit: Vec<bool>,
    starts: Vec<bool>,
    ends: Vec<bool>,
    state: Vec<u8>,
    stack: Vec<(DagNodeId, u32)>,
}

impl Dag {
    /// Builds the DAG of `cfg` (after [`Cfg::validate`]).
    pub fn build(cfg: &Cfg) -> Result<Dag> {
        let mut dag = Dag::default();
        dag.compute(cfg)?;
        Ok(dag)
    }

    /// Rebuilds `self` as the DAG of `cfg`, reusing allocations.
    pub fn compute(&mut self, cfg: &Cfg) -> Result<()> {
        cfg.validate()?;
        self.clear();
        self.name.clone_from(&cfg.name);
        self.index_cfg(cfg);
        self.mark_reachable(cfg);
        self.create_nodes(cfg);
        self.find_backedges(cfg);
        self.create_edges(cfg);
        Ok(())
    }

    fn clear(&mut self) {
        self.nodes.clear();
        self.edges.clear();
        self.first_out.clear();
        self.topo.clear();
        self.head.clear();
        self.tail.clear();
        self.start_edge.clear();
        self.end_edge.clear();
        self.roles.clear();
        self.successor_index.clear();
    }

    /// CSR successor lists of the CFG and per-node / per-edge flags.
    fn index_cfg(&mut self, cfg: &Cfg) {
        let n = cfg.nodes.len();
        let s = &mut self.scratch;
        s.succ_start.clear();
        s.succ_start.resize(n + 1, 0);
        for e in &cfg.edges {
            s.succ_start[e.src.index() + 1] += 1;
        }
        for i in 0..n {
            s.succ_start[i + 1] += s.succ_start[i];
        }
        s.succ.clear();
        s.succ.resize(cfg.edges.len(), EdgeId(0));
        let mut fill = s.succ_start[..n].to_vec();
        for (i, e) in cfg.edges.iter().enumerate() {
            let slot = &mut fill[e.src.index()];
            s.succ[*slot as usize] = EdgeId::from_index(i);
            self.successor_index
                .push(*slot - s.succ_start[e.src.index()]);
            *slot += 1;
        }
        reset(&mut s.is_cut_node, n);
        cfg.cut_nodes
            .iter()
            .for_each(|c| s.is_cut_node[c.index()] = true);
        reset(&mut s.is_exit, n);
        cfg.exits.iter().for_each(|x| s.is_exit[x.index()] = true);
        reset(&mut s.is_cut_edge, cfg.edges.len());
        cfg.cut_edges
            .iter()
            .for_each(|e| s.is_cut_edge[e.index()] = true);
    }

    fn succ(&self, v: NodeId) -> &[EdgeId] {
        let s = &self.scratch;
        &s.succ[s.succ_start[v.index()] as usize..s.succ_start[v.index() + 1] as usize]
    }

    /// Marks reachable CFG nodes in `scratch.state` (1 = reachable), ignoring cuts.
    fn mark_reachable(&mut self, cfg: &Cfg) {
        reset(&mut self.scratch.state, cfg.nodes.len());
        let mut work = vec![cfg.entry];
        self.scratch.state[cfg.entry.index()] = 1;
        while let Some(v) = work.pop() {
            for i in 0..self.succ(v).len() {
                let w = cfg.edges[self.succ(v)[i].index()].dst;
                if self.scratch.state[w.index()] == 0 {
                    self.scratch.state[w.index()] = 1;
                    work.push(w);
                }
            }
        }
    }

    fn create_nodes(&mut self, cfg: &Cfg) {
        self.nodes.extend([DagNodeKind::Entry, DagNodeKind::Exit]);
        self.head.resize(cfg.nodes.len(), None);
        self.tail.resize(cfg.nodes.len(), None);
        for v in 0..cfg.nodes.len() {
            if self.scratch.state[v] == 0 {
                continue;
            }
            let id = NodeId::from_index(v);
            self.head[v] = Some(self.push_node(DagNodeKind::Block(id)));
            self.tail[v] = if self.scratch.is_cut_node[v] {
                Some(self.push_node(DagNodeKind::CutTail(id)))
            } else {
                self.head[v]
            };
        }
        let s = &mut self.scratch;
        reset(&mut s.starts, self.nodes.len());
        reset(&mut s.ends, self.nodes.len());
    }

    fn push_node(&mut self, kind: DagNodeKind) -> DagNodeId {
        self.nodes.push(kind);
        DagNodeId::from_index(self.nodes.len() - 1)
    }

    /// Classifies every CFG edge, marks start and end nodes, and records a topological order
    /// (reverse DFS postorder of the graph without backedges, cut edges and cut splits).
    fn find_backedges(&mut self, cfg: &Cfg) {
        self.roles.resize(cfg.edges.len(), CfgEdgeRole::Dead);
        for (i, e) in cfg.edges.iter().enumerate() {
            if self.head[e.src.index()].is_some() && self.scratch.is_cut_edge[i] {
                self.roles[i] = CfgEdgeRole::Cut;
                self.mark_break(e.src, e.dst);
            }
        }
        let entry = self.head[cfg.entry.index()].expect("the entry is reachable");
        self.scratch.starts[entry.index()] = true;
        for v in 0..cfg.nodes.len() {
            if let (Some(h), Some(t)) = (self.head[v], self.tail[v]) {
                if h != t {
                    self.scratch.ends[h.index()] = true;
                    self.scratch.starts[t.index()] = true;
                }
            }
        }
        reset(&mut self.scratch.state, self.nodes.len());
        let mut post = Vec::with_capacity(self.nodes.len());
        self.dfs(cfg, entry, &mut post);
        for n in 2..self.nodes.len() {
            if self.scratch.starts[n] {
                self.dfs(cfg, DagNodeId::from_index(n), &mut post);
            }
        }
        self.topo.push(ENTRY);
        self.topo.extend(post.iter().rev());
        self.topo.push(EXIT);
    }

    /// Records that a path ends at `u`'s tail and a new one starts at `w`.
    fn mark_break(&mut self, u: NodeId, w: NodeId) {
        let (t, h) = (self.tail[u.index()], self.head[w.index()]);
        self.scratch.ends[t.expect("reachable").index()] = true;
        self.scratch.starts[h.expect("reachable").index()] = true;
    }

    /// The CFG edges leaving DAG node `n` inside the DAG (none from a cut node's first half).
    fn dag_succ(&self, n: DagNodeId) -> &[EdgeId] {
        match self.nodes[n.index()] {
            DagNodeKind::Block(v) if !self.scratch.is_cut_node[v.index()] => self.succ(v),
            DagNodeKind::CutTail(v) => self.succ(v),
            _ => &[],
        }
    }

    /// Iterative DFS from `root`; edges into a node on the stack become backedges.
    fn dfs(&mut self, cfg: &Cfg, root: DagNodeId, post: &mut Vec<DagNodeId>) {
        if self.scratch.state[root.index()] != 0 {
            return;
        }
        let mut stack = std::mem::take(&mut self.scratch.stack);
        stack.push((root, 0));
        self.scratch.state[root.index()] = 1;
        while let Some(&mut (n, ref mut next)) = stack.last_mut() {
            let Some(&e) = self.dag_succ(n).get(*next as usize) else {
                self.scratch.state[n.index()] = 2;
                post.push(n);
                stack.pop();
                continue;
            };
            *next += 1;
            if self.roles[e.index()] == CfgEdgeRole::Cut {
                continue;
            }
            let edge = cfg.edges[e.index()];
            let w = self.head[edge.dst.index()].expect("successor of a reachable node");
            match self.scratch.state[w.index()] {
                0 => {
                    self.scratch.state[w.index()] = 1;
                    stack.push((w, 0));
                }
                1 => {
                    self.roles[e.index()] = CfgEdgeRole::Back;
                    self.mark_break(edge.src, edge.dst);
                }
                _ => {}
            }
        }
        self.scratch.stack = stack;
    }

    /// Creates DAG edges grouped by source, in the order the module docs give.
    fn create_edges(&mut self, cfg: &Cfg) {
        let count = self.nodes.len();
        self.start_edge.resize(count, None);
        self.end_edge.resize(count, None);
        self.first_out.push(0);
        let entry = self.head[cfg.entry.index()].expect("the entry is reachable");
        self.push_start(entry);
        for n in 2..count {
            if self.scratch.starts[n] && n != entry.index() {
                self.push_start(DagNodeId::from_index(n));
            }
        }
        self.first_out.push(self.edges.len() as u32);
        self.first_out.push(self.edges.len() as u32); // EXIT has no out-edges
        for n in 2..count {
            self.push_out_edges(cfg, DagNodeId::from_index(n));
            self.first_out.push(self.edges.len() as u32);
        }
    }

    fn push_start(&mut self, n: DagNodeId) {
        self.start_edge[n.index()] = Some(self.push_edge(ENTRY, n, DagEdgeKind::Start));
    }

    fn push_out_edges(&mut self, cfg: &Cfg, n: DagNodeId) {
        let before = self.edges.len();
        for i in 0..self.dag_succ(n).len() {
            let e = self.dag_succ(n)[i];
            // Roles start as `Dead`; by now only backedges and cut edges have another.
            if self.roles[e.index()] != CfgEdgeRole::Dead {
                continue;
            }
            let w = self.head[cfg.edges[e.index()].dst.index()].expect("reachable");
            let id = self.push_edge(n, w, DagEdgeKind::Cfg(e));
            self.roles[e.index()] = CfgEdgeRole::Dag(id);
        }
        let is_exit = match self.nodes[n.index()] {
            DagNodeKind::Block(v) => {
                self.scratch.is_exit[v.index()] && !self.scratch.is_cut_node[v.index()]
            }
            DagNodeKind::CutTail(v) => self.scratch.is_exit[v.index()],
            _ => false,
        };
        if self.scratch.ends[n.index()] || is_exit || self.edges.len() == before {
            self.end_edge[n.index()] = Some(self.push_edge(n, EXIT, DagEdgeKind::End));
        }
    }

    fn push_edge(&mut self, src: DagNodeId, dst: DagNodeId, kind: DagEdgeKind) -> DagEdgeId {
        self.edges.push(DagEdge { src, dst, kind });
        DagEdgeId::from_index(self.edges.len() - 1)
    }

    /// The function's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of DAG nodes (including `ENTRY` and `EXIT`).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Number of DAG edges.
    pub fn edge_count(&self) -> usize {
        self.edges.len()
    }

    /// What node `n` stands for.
    pub fn node(&self, n: DagNodeId) -> DagNodeKind {
        self.nodes[n.index()]
    }

    /// Edge `e`.
    pub fn edge(&self, e: DagEdgeId) -> DagEdge {
        self.edges[e.index()]
    }

    /// All edges, indexed by [`DagEdgeId`].
    pub fn edges(&self) -> &[DagEdge] {
        &self.edges
    }

    /// The out-edges of `n`, in numbering order.
    pub fn out_edges(&self, n: DagNodeId) -> impl ExactSizeIterator<Item = DagEdgeId> + Clone {
        let (a, b) = (self.first_out[n.index()], self.first_out[n.index() + 1]);
        (a..b).map(DagEdgeId)
    }

    /// Nodes in topological order (`ENTRY` first, `EXIT` last).
    pub fn topo_order(&self) -> &[DagNodeId] {
        &self.topo
    }

    /// The CFG node a DAG node stands for (`None` for `ENTRY` and `EXIT`).
    pub fn cfg_node(&self, n: DagNodeId) -> Option<NodeId> {
        match self.nodes[n.index()] {
            DagNodeKind::Block(v) | DagNodeKind::CutTail(v) => Some(v),
            _ => None,
        }
    }

    /// The DAG node receiving CFG node `v`'s in-edges (`None` if `v` is unreachable).
    pub fn head(&self, v: NodeId) -> Option<DagNodeId> {
        self.head.get(v.index()).copied().flatten()
    }

    /// The DAG node holding CFG node `v`'s out-edges (differs from the head for cut nodes).
    pub fn tail(&self, v: NodeId) -> Option<DagNodeId> {
        self.tail.get(v.index()).copied().flatten()
    }

    /// The start edge `ENTRY→n`, if paths may start at `n`.
    pub fn start_edge(&self, n: DagNodeId) -> Option<DagEdgeId> {
        self.start_edge[n.index()]
    }

    /// The end edge `n→EXIT`, if paths may end at `n`.
    pub fn end_edge(&self, n: DagNodeId) -> Option<DagEdgeId> {
        self.end_edge[n.index()]
    }

    /// How CFG edge `e` is treated.
    pub fn role(&self, e: EdgeId) -> CfgEdgeRole {
        self.roles[e.index()]
    }

    /// The position of CFG edge `e` among its source's successors (from 0, in CFG order: a
    /// switch's default is 0, its cases follow).
    pub fn successor_index(&self, e: EdgeId) -> u32 {
        self.successor_index[e.index()]
    }

    /// Whether DAG edge `e` has a parallel edge: another edge for a CFG edge with the same
    /// source and target (the cases of a switch that share a target).
    pub fn is_parallel(&self, e: DagEdgeId) -> bool {
        let d = self.edge(e);
        matches!(d.kind, DagEdgeKind::Cfg(_))
            && self.out_edges(d.src).any(|o| {
                let x = self.edge(o);
                o != e && x.dst == d.dst && matches!(x.kind, DagEdgeKind::Cfg(_))
            })
    }

    /// Number of CFG edges (the length of the role table).
    pub fn cfg_edge_count(&self) -> usize {
        self.roles.len()
    }

    /// Number of CFG nodes.
    pub fn cfg_node_count(&self) -> usize {
        self.head.len()
    }
}

fn reset<T: Copy + Default>(v: &mut Vec<T>, len: usize) {
    v.clear();
    v.resize(len, T::default());
}
