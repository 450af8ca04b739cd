//! How each CFG situation maps to the DAG (the table in the `dag` module docs), pinned as the
//! exact set of acyclic paths each small CFG has.

mod common;

use common::all_paths;
use wpp_paths::{BallLarus, Cfg, CfgFile, Dag, DagPath, PathId};

fn cfg(body: &str) -> Cfg {
    CfgFile::parse(&format!(r#"{{"functions":[{{"name":"f",{body}}}]}}"#))
        .unwrap()
        .remove(0)
}

/// Node-name sequences of all paths, in id order (checked against enumeration as well).
fn paths(cfg: &Cfg) -> Vec<String> {
    let dag = Dag::build(cfg).unwrap();
    let bl = BallLarus::number(&dag).unwrap();
    assert_eq!(all_paths(&dag, 1000).unwrap().len() as u64, bl.path_count());
    (0..bl.path_count())
        .map(|i| {
            let p: DagPath = bl.decode(&dag, PathId(i)).unwrap();
            p.nodes(&dag)
                .iter()
                .map(|&n| cfg.node_name(n))
                .collect::<Vec<_>>()
                .join("")
        })
        .collect()
}

#[test]
fn loop_backedge_becomes_end_and_start_edges() {
    // s→h, h→b, b→h (backedge), h→x: paths sh·b (loops back), shx, and from h after the
    // backedge: hb, hx.
    let c = cfg(r#""nodes":["s","h","b","x"],"entry":"s","exits":["x"],
        "edges":[["s","h"],["h","b"],["b","h"],["h","x"]]"#);
    assert_eq!(paths(&c), ["shb", "shx", "hb", "hx"]);
}

#[test]
fn self_loop_and_parallel_edges_are_distinct() {
    // a→a is a backedge; the two a→t edges are two paths with the same nodes.
    let c = cfg(
        r#""nodes":["a","t"],"entry":"a","exits":["t"],"edges":[["a","a"],["a","t"],["a","t"]]"#,
    );
    assert_eq!(paths(&c), ["at", "at", "a"]);
}

/// `wpp profile show` names the blocks of paths through parallel edges (a switch whose cases
/// share a target) apart: the block entered by such an edge carries the edge's position among
/// its source's successors; every other block keeps its plain name.
#[test]
fn parallel_edges_have_distinct_block_names() {
    // A switch in w (b1) after a call: default to d (b2), two cases to t (b3).
    let c = cfg(r#""nodes":["s","w","d","t"],"entry":"s","exits":["d","t"],
        "edges":[["s","w"],["w","d"],["w","t"],["w","t"]],"cut_nodes":["w"]"#);
    let dag = Dag::build(&c).unwrap();
    let bl = BallLarus::number(&dag).unwrap();
    let names: Vec<String> = (0..bl.path_count())
        .map(|i| bl.block_names(&dag, PathId(i)).unwrap().join(" "))
        .collect();
    assert_eq!(names, ["b0 b1", "b1' b2", "b1' b3[1]", "b1' b3[2]"]);
}

#[test]
fn cut_node_ends_one_path_and_starts_the_next_at_itself() {
    // c is a call site: s→c ends at c, and c→t starts at c.
    let c = cfg(
        r#""nodes":["s","c","t"],"entry":"s","exits":["t"],"edges":[["s","c"],["c","t"]],
        "cut_nodes":["c"]"#,
    );
    assert_eq!(paths(&c), ["sc", "ct"]);
}

#[test]
fn cut_edge_behaves_like_a_backedge() {
    let c = cfg(
        r#""nodes":["s","p","t"],"entry":"s","exits":["t"],"edges":[["s","p"],["p","t"]],
        "cut_edges":[1]"#,
    );
    assert_eq!(paths(&c), ["sp", "t"]);
}

#[test]
fn several_exits_and_dead_ends_end_paths() {
    // x returns but also continues to y; z has no successors (an `unreachable` block).
    let c = cfg(r#""nodes":["s","x","y","z"],"entry":"s","exits":["x","y"],
        "edges":[["s","x"],["x","y"],["s","z"]]"#);
    assert_eq!(paths(&c), ["sxy", "sx", "sz"]);
}

#[test]
fn entry_inside_a_loop_and_unreachable_nodes() {
    // The entry is a loop header; u is unreachable and appears in no path.
    let c = cfg(r#""nodes":["h","b","u"],"entry":"h","exits":["h"],
        "edges":[["h","b"],["b","h"],["u","h"]]"#);
    assert_eq!(paths(&c), ["hb", "h"]);
}

#[test]
fn dot_output_labels_edges_like_figure3() {
    let cfg = common::example("fig3");
    let dag = Dag::build(&cfg).unwrap();
    let bl = BallLarus::number(&dag).unwrap();
    let set: Vec<DagPath> = ["sacdt", "sact", "sbct"]
        .iter()
        .map(|p| DagPath {
            edges: wpp_paths::ball_larus::dag_path_of_nodes(&dag, &common::letters(&cfg, p))
                .unwrap(),
        })
        .collect();
    let plan = wpp_paths::PppPlan::compute(&dag, &bl, &set).unwrap();
    let dot = wpp_paths::dot::to_dot(&cfg, &dag, &bl, Some(&plan));
    assert!(dot.contains(r#"n2 -> n4 [label="2 (4)"]"#), "{dot}");
    assert!(dot.contains(r#"n3 -> n4 [label="⊥ (2)"]"#), "{dot}");
    assert!(dot.contains(r#"n4 -> n5 [label="-1 (0)"]"#), "{dot}");
    assert!(
        dot.contains(r#"n0 -> n2 [label="0 (0)", style=dashed]"#),
        "{dot}"
    );
}

/// `compute` on a reused `Dag`/`BallLarus` gives exactly what a fresh build gives.
#[test]
fn reused_buffers_match_fresh_builds() {
    use wpp_paths::random::{arbitrary_cfg, structured_cfg, Rng};
    let mut rng = Rng::new(11);
    let (mut dag, mut bl) = (Dag::default(), BallLarus::default());
    for i in 0..200 {
        let cfg = if i % 2 == 0 {
            arbitrary_cfg(&mut rng, 1 + i % 17, 2 + i % 23)
        } else {
            structured_cfg(&mut rng, "s", 2 + i % 50)
        };
        dag.compute(&cfg).unwrap();
        let fresh = Dag::build(&cfg).unwrap();
        assert_eq!(dag.edges(), fresh.edges());
        assert_eq!(dag.topo_order(), fresh.topo_order());
        match (bl.compute(&dag), BallLarus::number(&fresh)) {
            (Ok(()), Ok(f)) => assert_eq!(bl.increments(), f.increments()),
            (a, b) => assert_eq!(a.is_err(), b.is_err()),
        }
    }
}
