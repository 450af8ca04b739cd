//! Ball–Larus numbering against the paper's Figure 3 and a brute-force enumeration of paths.

mod common;

use common::{all_paths, example, letters, sum};
use proptest::prelude::*;
use wpp_paths::random::{arbitrary_cfg, structured_cfg, Rng};
use wpp_paths::{number_with_limit, BallLarus, Cfg, Dag, PathId, SpanningTree};

/// §2.3: the six paths of Figure 3 and the ids of the interesting ones.
#[test]
fn figure3_ids_match_the_paper() {
    let cfg = example("fig3");
    let dag = Dag::build(&cfg).unwrap();
    let bl = BallLarus::number(&dag).unwrap();
    assert_eq!(bl.path_count(), 6);
    let id = |p: &str| bl.encode_nodes(&dag, &letters(&cfg, p)).unwrap().0;
    assert_eq!([id("sacdt"), id("sact"), id("sbct")], [0, 1, 5]);
    // §4.2's pathEncoder example: sbcdt is 4; the remaining path takes the last id.
    assert_eq!([id("sbcdt"), id("sabcdt"), id("sabct")], [4, 2, 3]);
    for i in 0..6 {
        let nodes = bl.decode(&dag, PathId(i)).unwrap().nodes(&dag);
        assert_eq!(bl.encode_nodes(&dag, &nodes).unwrap(), PathId(i));
    }
    assert!(bl.decode(&dag, PathId(6)).is_err());
    assert!(bl.encode_nodes(&dag, &letters(&cfg, "sadt")).is_err());
}

/// Checks numbering, decoding, encoding and chord increments against enumerated paths.
fn check_against_oracle(cfg: &Cfg) -> Result<(), TestCaseError> {
    let dag = Dag::build(cfg).unwrap();
    let bl = BallLarus::number(&dag).unwrap();
    let Some(paths) = all_paths(&dag, 20_000) else {
        return Ok(());
    };
    prop_assert_eq!(paths.len() as u64, bl.path_count());
    let tree = SpanningTree::build(&dag, cfg, bl.increments());
    let chords = tree.increments(&dag, bl.increments());
    let mut seen = vec![false; paths.len()];
    for p in &paths {
        let id = sum(bl.increments(), p);
        prop_assert!(id < bl.path_count());
        prop_assert!(!seen[id as usize], "id {} given twice", id);
        seen[id as usize] = true;
        prop_assert_eq!(&bl.decode(&dag, PathId(id)).unwrap().edges, p);
        prop_assert_eq!(bl.encode_edges(&dag, p).unwrap(), PathId(id));
        prop_assert_eq!(sum(&chords, p), id, "chord placement changes the id");
        let decoded = bl.decode(&dag, PathId(id)).unwrap();
        let nodes = decoded.nodes(&dag);
        // Every path is a walk of the CFG: its CFG edges join consecutive nodes.
        let walk: Vec<_> = decoded
            .cfg_edges(&dag)
            .iter()
            .map(|c| cfg.edges[c.index()])
            .collect();
        prop_assert_eq!(walk.len() + 1, nodes.len());
        for (k, e) in walk.iter().enumerate() {
            prop_assert_eq!((e.src, e.dst), (nodes[k], nodes[k + 1]));
        }
        let back = bl.encode_nodes(&dag, &nodes).unwrap();
        prop_assert_eq!(bl.decode(&dag, back).unwrap().nodes(&dag), nodes);
    }
    for (i, &k) in chords.iter().enumerate() {
        prop_assert!(
            k == 0 || tree.is_chord(wpp_paths::DagEdgeId(i as u32)),
            "increment off the chords"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Cutting to a small limit: the count stays within it (or the cut is impossible and
    /// reported), and the cut CFG still agrees with brute force.
    #[test]
    fn cuts_keep_counts_within_a_limit(seed: u64, blocks in 2usize..60, frac in 0.0f64..1.0) {
        let mut rng = Rng::new(seed);
        let cfg = structured_cfg(&mut rng, "s", blocks);
        let full = BallLarus::number(&Dag::build(&cfg).unwrap()).unwrap().path_count();
        let limit = ((full as f64 * frac) as u64).max(1);
        let mut cut = cfg.clone();
        match number_with_limit(&mut cut, limit) {
            Ok((_, bl)) => {
                prop_assert!(bl.path_count() <= limit);
                prop_assert!(cut.cut_nodes.len() >= cfg.cut_nodes.len());
                check_against_oracle(&cut)?;
            }
            Err(e) => prop_assert!(matches!(e, wpp_paths::Error::PathCountOverflow { .. }), "{}", e),
        }
    }

    #[test]
    fn arbitrary_cfgs_agree_with_brute_force(seed: u64, nodes in 1usize..24, extra in 0usize..24) {
        let mut rng = Rng::new(seed);
        let cfg = arbitrary_cfg(&mut rng, nodes, nodes + extra);
        check_against_oracle(&cfg)?;
    }

    #[test]
    fn structured_cfgs_agree_with_brute_force(seed: u64, blocks in 2usize..120) {
        let mut rng = Rng::new(seed);
        let cfg = structured_cfg(&mut rng, "s", blocks);
        check_against_oracle(&cfg)?;
    }
}
