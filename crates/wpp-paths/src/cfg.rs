//! The control-flow graph of one function, and the JSON file that holds many of them.
//!
//! A [`Cfg`] is a list of named nodes (basic blocks; `NodeId(i)` is `nodes[i]`), an entry, the
//! exit nodes (blocks that return), an ordered list of edges (`EdgeId(i)` is `edges[i]`;
//! parallel edges and self loops are allowed and are distinct paths), optional *cut points*
//! and an optional edge profile. Edge order matters: Ball–Larus and PPP give the first
//! out-edge of a node the smallest ids, as in the paper's Figure 3.
//!
//! Cut points end the current acyclic path and start a new one (Larus 1999 §2 cuts at call
//! sites so that a callee's paths follow its caller's in the trace):
//! * a **cut node** `v` is split inside the block: the path arriving at `v` ends at `v` (at
//!   the call), and a new path starts at `v` (after the call) and continues along `v`'s
//!   out-edges. `v` is the last node of the first path and the first node of the second;
//! * a **cut edge** `u→w` (an edge that cannot carry code of its own, such as an `indirectbr`
//!   target or an edge into an exception pad, or any edge a tool chooses) is treated like a
//!   loop backedge: the path ends at `u` and a new one starts at `w`.
//!
//! [`Dag`](crate::Dag) says how each case maps to the Ball–Larus DAG.
//!
//! # JSON format
//!
//! `wpp paths` reads a document with a list of functions; nodes are referred to by name:
//!
//! ```json
//! { "functions": [ {
//!     "name": "fig3",
//!     "nodes": ["s", "a", "b", "c", "d", "t"],
//!     "entry": "s",
//!     "exits": ["t"],
//!     "edges": [["s","a"], ["s","b"], ["a","c"], ["a","b"], ["b","c"],
//!               ["c","d"], ["c","t"], ["d","t"]],
//!     "cut_nodes": [],
//!     "cut_edges": [],
//!     "profile": [40, 20, 30, 10, 30, 35, 25, 35]
//! } ] }
//! ```
//!
//! `cut_nodes` (names), `cut_edges` (indices into `edges`) and `profile` (one count per edge, in
//! edge order) are optional. `exits` may be empty: a reachable node without successors is an
//! exit anyway. [`CfgFile::parse`] resolves names and validates every id; a duplicate node name,
//! an unknown name or a profile of the wrong length is an [`Error`].

use crate::error::{Error, Result};
use crate::ids::{EdgeId, NodeId};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// The largest node or edge count accepted (ids are `u32`; the DAG adds two nodes and up to
/// two edges per node).
pub const MAX_ELEMENTS: usize = (u32::MAX / 4) as usize;

/// A directed edge of a [`Cfg`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edge {
    /// The block the edge leaves.
    pub src: NodeId,
    /// The block the edge enters.
    pub dst: NodeId,
}

/// The control-flow graph of one function (see the module docs).
///
/// Fields are public so that tools can build a `Cfg` directly; [`Cfg::validate`] (called by
/// [`Dag::build`](crate::Dag::build)) checks every id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cfg {
    /// The function's name.
    pub name: String,
    /// Node names; `NodeId(i)` is `nodes[i]`.
    pub nodes: Vec<String>,
    /// The block where execution starts.
    pub entry: NodeId,
    /// Blocks that return from the function.
    pub exits: Vec<NodeId>,
    /// Edges in order; `EdgeId(i)` is `edges[i]`.
    pub edges: Vec<Edge>,
    /// Nodes split by a cut point (e.g. a call site).
    pub cut_nodes: Vec<NodeId>,
    /// Edges treated like backedges (see the module docs).
    pub cut_edges: Vec<EdgeId>,
    /// Optional execution count per edge, used to choose where chords go.
    pub profile: Option<Vec<u64>>,
}

impl Cfg {
    /// The name of node `n`, or `"?"` for an id past the end.
    pub fn node_name(&self, n: NodeId) -> &str {
        self.nodes.get(n.index()).map_or("?", String::as_str)
    }

    /// Checks that the function is non-empty, within size limits, and that every id is in range.
    pub fn validate(&self) -> Result<()> {
        if self.nodes.is_empty() {
            return Err(Error::Empty(self.name.clone()));
        }
        self.check_size("nodes", self.nodes.len())?;
        self.check_size("edges", self.edges.len())?;
        self.check_node("entry node", self.entry)?;
        for &x in &self.exits {
            self.check_node("exit node", x)?;
        }
        for &c in &self.cut_nodes {
            self.check_node("cut node", c)?;
        }
        let n = self.nodes.len();
        // Messages are formatted only on failure: this loop runs once per edge.
        if let Some(i) = self
            .edges
            .iter()
            .position(|e| e.src.index() >= n || e.dst.index() >= n)
        {
            let e = self.edges[i];
            self.check_node(&format!("source of edge {i}"), e.src)?;
            self.check_node(&format!("target of edge {i}"), e.dst)?;
        }
        for &e in &self.cut_edges {
            if e.index() >= self.edges.len() {
                return Err(self.out_of_range("cut edge", u64::from(e.0), self.edges.len()));
            }
        }
        match &self.profile {
            Some(p) if p.len() != self.edges.len() => Err(Error::ProfileLength {
                function: self.name.clone(),
                expected: self.edges.len(),
                got: p.len(),
            }),
            _ => Ok(()),
        }
    }

    fn check_size(&self, what: &'static str, count: usize) -> Result<()> {
        if count > MAX_ELEMENTS {
            return Err(Error::TooLarge {
                function: self.name.clone(),
                what,
                count,
                limit: MAX_ELEMENTS,
            });
        }
        Ok(())
    }

    fn check_node(&self, what: &str, n: NodeId) -> Result<()> {
        if n.index() >= self.nodes.len() {
            return Err(self.out_of_range(what, u64::from(n.0), self.nodes.len()));
        }
        Ok(())
    }

    fn out_of_range(&self, what: &str, id: u64, len: usize) -> Error {
        Error::OutOfRange {
            function: self.name.clone(),
            what: what.to_owned(),
            id,
            len,
        }
    }

    /// The node named `name`, if any (a linear scan; build a map for many lookups).
    pub fn node_by_name(&self, name: &str) -> Option<NodeId> {
        self.nodes
            .iter()
            .position(|n| n == name)
            .map(NodeId::from_index)
    }
}

/// One function as written in the JSON file (names instead of ids).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FunctionJson {
    /// The function's name.
    pub name: String,
    /// Node names, unique within the function.
    pub nodes: Vec<String>,
    /// The entry node's name.
    pub entry: String,
    /// Names of returning nodes.
    #[serde(default)]
    pub exits: Vec<String>,
    /// Edges as `[source, target]` name pairs, in order.
    pub edges: Vec<(String, String)>,
    /// Names of cut nodes.
    #[serde(default)]
    pub cut_nodes: Vec<String>,
    /// Indices into `edges` of cut edges.
    #[serde(default)]
    pub cut_edges: Vec<u32>,
    /// Optional count per edge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Vec<u64>>,
}

/// The JSON CFG document: `{"functions": [...]}` (see the module docs).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CfgFile {
    /// The functions, in file order.
    pub functions: Vec<FunctionJson>,
}

impl CfgFile {
    /// Parses a JSON document and resolves every function into a validated [`Cfg`].
    pub fn parse(json: &str) -> Result<Vec<Cfg>> {
        let file: CfgFile = serde_json::from_str(json)?;
        file.functions.iter().map(FunctionJson::to_cfg).collect()
    }

    /// The JSON document describing `cfgs`.
    pub fn from_cfgs(cfgs: &[Cfg]) -> CfgFile {
        CfgFile {
            functions: cfgs.iter().map(FunctionJson::from_cfg).collect(),
        }
    }
}

impl FunctionJson {
    /// Resolves names to ids and validates the result.
    pub fn to_cfg(&self) -> Result<Cfg> {
        let mut ids = FxHashMap::default();
        for (i, n) in self.nodes.iter().enumerate() {
            if ids.insert(n.as_str(), NodeId::from_index(i)).is_some() {
                return Err(Error::Name(format!(
                    "function `{}`: duplicate node `{n}`",
                    self.name
                )));
            }
        }
        let node = |what: &str, n: &str| {
            ids.get(n).copied().ok_or_else(|| {
                Error::Name(format!(
                    "function `{}`: {what} `{n}` is not a node",
                    self.name
                ))
            })
        };
        let cfg = Cfg {
            name: self.name.clone(),
            nodes: self.nodes.clone(),
            entry: node("entry", &self.entry)?,
            exits: self
                .exits
                .iter()
                .map(|x| node("exit", x))
                .collect::<Result<_>>()?,
            edges: self
                .edges
                .iter()
                .map(|(s, d)| {
                    Ok(Edge {
                        src: node("edge source", s)?,
                        dst: node("edge target", d)?,
                    })
                })
                .collect::<Result<_>>()?,
            cut_nodes: self
                .cut_nodes
                .iter()
                .map(|c| node("cut node", c))
                .collect::<Result<_>>()?,
            cut_edges: self.cut_edges.iter().map(|&e| EdgeId(e)).collect(),
            profile: self.profile.clone(),
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// The JSON form of a [`Cfg`].
    pub fn from_cfg(cfg: &Cfg) -> FunctionJson {
        let name = |n: NodeId| cfg.node_name(n).to_owned();
        FunctionJson {
            name: cfg.name.clone(),
            nodes: cfg.nodes.clone(),
            entry: name(cfg.entry),
            exits: cfg.exits.iter().map(|&x| name(x)).collect(),
            edges: cfg
                .edges
                .iter()
                .map(|e| (name(e.src), name(e.dst)))
                .collect(),
            cut_nodes: cfg.cut_nodes.iter().map(|&c| name(c)).collect(),
            cut_edges: cfg.cut_edges.iter().map(|e| e.0).collect(),
            profile: cfg.profile.clone(),
        }
    }
}
