//! Hostile input: malformed JSON, dangling names, huge graphs and path counts past 2^64 get
//! typed errors or a documented cut, never a panic or a hang.

use proptest::prelude::*;
use wpp_paths::random::Rng;
use wpp_paths::{number_with_cuts, BallLarus, Cfg, CfgFile, Dag, Edge, Error, NodeId, PathId};

fn parse_err(json: &str) -> String {
    CfgFile::parse(json).unwrap_err().to_string()
}

#[test]
fn dangling_and_duplicate_names_are_reported() {
    let f = |body: &str| format!(r#"{{"functions":[{{"name":"f",{body}}}]}}"#);
    let e = parse_err(&f(r#""nodes":["a","b"],"entry":"a","edges":[["a","zz"]]"#));
    assert!(e.contains("`zz` is not a node"), "{e}");
    let e = parse_err(&f(r#""nodes":["a","a"],"entry":"a","edges":[]"#));
    assert!(e.contains("duplicate node `a`"), "{e}");
    let e = parse_err(&f(r#""nodes":["a"],"entry":"q","edges":[]"#));
    assert!(e.contains("entry `q`"), "{e}");
    let e = parse_err(&f(
        r#""nodes":["a"],"entry":"a","edges":[["a","a"]],"cut_edges":[7]"#,
    ));
    assert!(e.contains("cut edge 7 is out of range"), "{e}");
    let e = parse_err(&f(
        r#""nodes":["a"],"entry":"a","edges":[["a","a"]],"profile":[1,2]"#,
    ));
    assert!(e.contains("2 counts for 1 edges"), "{e}");
    let e = parse_err(&f(r#""nodes":[],"entry":"a","edges":[]"#));
    assert!(e.contains("entry `a`"), "{e}");
    let e =
        parse_err(r#"{"functions":[{"name":"f","nodes":["a"],"entry":"a","edges":[],"extra":1}]}"#);
    assert!(e.contains("unknown field"), "{e}");
}

#[test]
fn out_of_range_ids_in_a_built_cfg_are_reported() {
    let mut cfg = Cfg {
        name: "f".into(),
        nodes: vec!["a".into()],
        ..Cfg::default()
    };
    cfg.edges.push(Edge {
        src: NodeId(0),
        dst: NodeId(9),
    });
    assert!(matches!(Dag::build(&cfg), Err(Error::OutOfRange { .. })));
    let empty = Cfg {
        name: "g".into(),
        ..Cfg::default()
    };
    assert!(matches!(Dag::build(&empty), Err(Error::Empty(_))));
}

/// A cycle no edge enters from the entry is dead code: it is left out, not looped over.
#[test]
fn cycles_without_entries_are_left_out() {
    let json = r#"{"functions":[{"name":"f","nodes":["s","t","x","y"],"entry":"s","exits":["t"],
        "edges":[["s","t"],["x","y"],["y","x"]]}]}"#;
    let cfg = CfgFile::parse(json).unwrap().remove(0);
    let dag = Dag::build(&cfg).unwrap();
    let bl = BallLarus::number(&dag).unwrap();
    assert_eq!(bl.path_count(), 1);
    assert_eq!(dag.head(NodeId(2)), None);
    assert_eq!(
        bl.decode(&dag, PathId(0)).unwrap().nodes(&dag),
        vec![NodeId(0), NodeId(1)]
    );
}

/// `n` diamonds in a row: 2^n paths.
fn diamonds(n: usize) -> Cfg {
    let mut cfg = Cfg {
        name: format!("diamonds{n}"),
        ..Cfg::default()
    };
    cfg.nodes.push("j0".into());
    for i in 0..n {
        let base = cfg.nodes.len() as u32;
        cfg.nodes
            .extend([format!("l{i}"), format!("r{i}"), format!("j{}", i + 1)]);
        let j = NodeId(base - 1); // the previous join
        for side in [base, base + 1] {
            cfg.edges.push(Edge {
                src: j,
                dst: NodeId(side),
            });
            cfg.edges.push(Edge {
                src: NodeId(side),
                dst: NodeId(base + 2),
            });
        }
    }
    cfg.exits.push(NodeId(cfg.nodes.len() as u32 - 1));
    cfg
}

#[test]
fn path_counts_past_2_64_are_reported_or_cut() {
    let cfg = diamonds(63);
    assert_eq!(
        BallLarus::number(&Dag::build(&cfg).unwrap())
            .unwrap()
            .path_count(),
        1 << 63
    );
    let cfg = diamonds(64);
    let err = BallLarus::number(&Dag::build(&cfg).unwrap()).unwrap_err();
    assert!(matches!(err, Error::PathCountOverflow { .. }), "{err}");
    assert!(err.to_string().contains("2^64"), "{err}");
    assert!(err.to_string().contains("too many acyclic paths"), "{err}");
    let big = diamonds(200);
    let mut cut = big.clone();
    let (dag, bl) = number_with_cuts(&mut cut).unwrap();
    // The cap is (2^64 − 1) / (2·601 + 2) ≈ 2^53.7 paths per node: a cut every ~53 diamonds.
    assert!(
        (3..=8).contains(&cut.cut_nodes.len()),
        "{} cuts",
        cut.cut_nodes.len()
    );
    let mut rng = Rng::new(7);
    for _ in 0..200 {
        let id = PathId(rng.next_u64() % bl.path_count());
        let path = bl.decode(&dag, id).unwrap();
        assert_eq!(bl.encode_edges(&dag, &path.edges).unwrap(), id);
        assert_eq!(bl.encode_nodes(&dag, &path.nodes(&dag)).unwrap(), id);
    }
    // A function that fits is left alone.
    let mut same = diamonds(10);
    number_with_cuts(&mut same).unwrap();
    assert_eq!(same, diamonds(10));
}

/// 10^6 nodes: a long chain with a loop, and 3·10^5 diamonds cut to fit, in linear time.
#[test]
fn million_node_graphs_are_linear() {
    let n = 1_000_000u32;
    let mut cfg = Cfg {
        name: "chain".into(),
        ..Cfg::default()
    };
    cfg.nodes = (0..n).map(|i| i.to_string()).collect();
    cfg.edges = (0..n - 1)
        .map(|i| Edge {
            src: NodeId(i),
            dst: NodeId(i + 1),
        })
        .collect();
    cfg.edges.push(Edge {
        src: NodeId(n - 1),
        dst: NodeId(0),
    });
    cfg.exits.push(NodeId(n / 2));
    let start = std::time::Instant::now();
    let dag = Dag::build(&cfg).unwrap();
    let bl = BallLarus::number(&dag).unwrap();
    assert_eq!(bl.path_count(), 2); // entry..n/2 returning, and entry..n-1 looping back
    let (_, bl) = number_with_cuts(&mut diamonds(333_333)).unwrap();
    assert!(bl.path_count() > 1);
    assert!(start.elapsed().as_secs() < 30, "took {:?}", start.elapsed());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Any text is either a CFG document or an error.
    #[test]
    fn random_json_never_panics(s in r#"\{"functions":\[\{"name":"f","nodes":\["a","b"\],"entry":"[ab]","edges":\[(\["[abc]","[abc]"\],?){0,4}\](,"cut_edges":\[[0-9]\])?\}\]\}"#) {
        if let Ok(cfgs) = CfgFile::parse(&s) {
            let dag = Dag::build(&cfgs[0]).unwrap();
            BallLarus::number(&dag).unwrap();
        }
    }

    /// Any bytes after a valid header are a profile or an error.
    #[test]
    fn random_profile_bytes_never_panic(body in proptest::collection::vec(any::<u8>(), 0..64)) {
        let mut bytes = b"WPPPROF\0\x01B".to_vec();
        bytes.extend(body);
        let _ = wpp_paths::BlProfile::from_bytes(&bytes);
    }
}
