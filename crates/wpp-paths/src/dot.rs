//! Graphviz DOT output of a DAG in the style of the paper's Figure 3: each edge labelled
//! with its Ball–Larus increment, or with `PPP (BL)` when a PPP plan is given (Figure 3(c));
//! ⊥ is drawn as `⊥`. Start and end edges (backedge, cut and exit dummies) are dashed, and a
//! cut node's second half is drawn as `name'`.

use crate::ball_larus::BallLarus;
use crate::cfg::Cfg;
use crate::dag::{Dag, DagEdgeKind, DagNodeKind};
use crate::ids::DagNodeId;
use crate::ppp::PppPlan;
use std::fmt::Write;

/// The DOT text of `dag` with Ball–Larus increments and, optionally, PPP weights.
pub fn to_dot(cfg: &Cfg, dag: &Dag, bl: &BallLarus, ppp: Option<&PppPlan>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "digraph \"{}\" {{", escape(&cfg.name));
    let _ = writeln!(out, "  node [shape=circle];");
    for n in 0..dag.node_count() {
        let id = DagNodeId(n as u32);
        let _ = writeln!(
            out,
            "  n{n} [label=\"{}\"];",
            escape(&node_label(cfg, dag, id))
        );
    }
    for (i, e) in dag.edges().iter().enumerate() {
        let bl_inc = bl.increments()[i];
        let label = match ppp {
            Some(p) => match p.weights[i] {
                Some(w) => format!("{w} ({bl_inc})"),
                None => format!("⊥ ({bl_inc})"),
            },
            None => bl_inc.to_string(),
        };
        let style = if matches!(e.kind, DagEdgeKind::Cfg(_)) {
            ""
        } else {
            ", style=dashed"
        };
        let _ = writeln!(
            out,
            "  n{} -> n{} [label=\"{label}\"{style}];",
            e.src.0, e.dst.0
        );
    }
    out.push_str("}\n");
    out
}

fn node_label(cfg: &Cfg, dag: &Dag, n: DagNodeId) -> String {
    match dag.node(n) {
        DagNodeKind::Entry => "ENTRY".to_owned(),
        DagNodeKind::Exit => "EXIT".to_owned(),
        DagNodeKind::Block(v) => cfg.node_name(v).to_owned(),
        DagNodeKind::CutTail(v) => format!("{}'", cfg.node_name(v)),
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}
