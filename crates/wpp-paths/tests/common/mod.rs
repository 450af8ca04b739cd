//! Helpers shared by the integration tests: fixtures and the brute-force path oracle.
#![allow(dead_code)]

use wpp_paths::dag::{ENTRY, EXIT};
use wpp_paths::{Cfg, CfgFile, Dag, DagEdgeId, NodeId};

/// Loads the one function of an example CFG file.
pub fn example(name: &str) -> Cfg {
    let path = format!("{}/examples/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).unwrap();
    CfgFile::parse(&text).unwrap().remove(0)
}

/// Node ids of a string of one-letter node names, e.g. `"sacdt"`.
pub fn letters(cfg: &Cfg, path: &str) -> Vec<NodeId> {
    path.chars()
        .map(|c| cfg.node_by_name(&c.to_string()).unwrap())
        .collect()
}

/// Every ENTRY→EXIT path of `dag`, by plain recursion over out-edges (no counts involved),
/// or `None` when there are more than `limit`.
pub fn all_paths(dag: &Dag, limit: usize) -> Option<Vec<Vec<DagEdgeId>>> {
    fn go(
        dag: &Dag,
        v: wpp_paths::DagNodeId,
        cur: &mut Vec<DagEdgeId>,
        out: &mut Vec<Vec<DagEdgeId>>,
        limit: usize,
    ) -> bool {
        if v == EXIT {
            out.push(cur.clone());
            return out.len() <= limit;
        }
        for e in dag.out_edges(v) {
            cur.push(e);
            let ok = go(dag, dag.edge(e).dst, cur, out, limit);
            cur.pop();
            if !ok {
                return false;
            }
        }
        true
    }
    let mut out = Vec::new();
    go(dag, ENTRY, &mut Vec::new(), &mut out, limit).then_some(out)
}

/// Sum of wrapping increments along a path.
pub fn sum(inc: &[u64], path: &[DagEdgeId]) -> u64 {
    path.iter()
        .fold(0u64, |a, e| a.wrapping_add(inc[e.index()]))
}
