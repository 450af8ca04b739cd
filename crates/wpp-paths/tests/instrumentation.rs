//! The runtime contract of `chords`, checked by simulation: random executions walk the CFG,
//! apply exactly the documented actions, and every recorded id must decode to the blocks
//! that ran since the previous record.

mod common;

use proptest::prelude::*;
use wpp_paths::chords::{EdgeAction, Restart};
use wpp_paths::random::{arbitrary_cfg, structured_cfg, Rng};
use wpp_paths::{BallLarus, Cfg, Dag, EdgeId, Instrumentation, NodeId, PathId, SpanningTree};

/// One recorded value and the block sequence the walker saw for it.
type Record = (u64, Vec<NodeId>);

/// Runs `calls` invocations of the function for at most `steps` blocks each.
fn simulate(
    cfg: &Cfg,
    inst: &Instrumentation,
    rng: &mut Rng,
    calls: usize,
    steps: usize,
) -> Vec<Record> {
    let mut out_edges: Vec<Vec<EdgeId>> = vec![Vec::new(); cfg.nodes.len()];
    for (i, e) in cfg.edges.iter().enumerate() {
        out_edges[e.src.index()].push(EdgeId(i as u32));
    }
    let cut = |v: NodeId| inst.cut_nodes.iter().find(|c| c.0 == v).map(|c| c.1);
    let ret = |v: NodeId| inst.returns.iter().find(|c| c.0 == v).map(|c| c.1);
    let mut records = Vec::new();
    for _ in 0..calls {
        let (mut v, mut r, mut seg) = (cfg.entry, inst.entry, vec![cfg.entry]);
        for _ in 0..steps {
            if let Some(Restart { add, init }) = cut(v) {
                r = r.wrapping_add(add);
                records.push((r, std::mem::replace(&mut seg, vec![v])));
                r = init;
            }
            let choices = out_edges[v.index()].len() + usize::from(ret(v).is_some());
            let pick = rng.below(choices);
            let Some(&e) = out_edges[v.index()].get(pick) else {
                records.push((r.wrapping_add(ret(v).unwrap()), std::mem::take(&mut seg)));
                break;
            };
            match inst.edges[e.index()] {
                EdgeAction::None => {}
                EdgeAction::Add(k) => r = r.wrapping_add(k),
                EdgeAction::Set(k) => r = k,
                EdgeAction::Restart(Restart { add, init }) => {
                    records.push((r.wrapping_add(add), std::mem::take(&mut seg)));
                    r = init;
                }
                EdgeAction::Dead => panic!("executed an edge marked dead"),
            }
            v = cfg.edges[e.index()].dst;
            seg.push(v);
        }
    }
    records
}

fn check_contract(cfg: &Cfg, seed: u64) -> Result<(), TestCaseError> {
    let dag = Dag::build(cfg).unwrap();
    let Ok(bl) = BallLarus::number(&dag) else {
        return Ok(());
    };
    let tree = SpanningTree::build(&dag, cfg, bl.increments());
    let placed = tree.increments(&dag, bl.increments());
    prop_assert!(placed
        .iter()
        .enumerate()
        .all(|(i, &k)| k == 0 || tree.is_chord(wpp_paths::DagEdgeId(i as u32))));
    for inc in [
        bl.increments().to_vec(),
        tree.increments(&dag, bl.increments()),
    ] {
        let inst = Instrumentation::plan(&dag, cfg, &inc);
        let mut rng = Rng::new(seed);
        let records = simulate(cfg, &inst, &mut rng, 5, 60);
        for (id, seg) in records {
            let path = bl.decode(&dag, PathId(id));
            prop_assert!(path.is_ok(), "recorded id {} is not a path id", id);
            prop_assert_eq!(path.unwrap().nodes(&dag), seg);
        }
    }
    Ok(())
}

/// Both counters on the same chords (§5): the walk is replayed with the PPP actions, and
/// the runtime check classifies each recorded pair exactly by membership in the set.
fn check_two_counters(cfg: &Cfg, seed: u64) -> Result<(), TestCaseError> {
    let dag = Dag::build(cfg).unwrap();
    let Ok(bl) = BallLarus::number(&dag) else {
        return Ok(());
    };
    let tree = SpanningTree::build(&dag, cfg, bl.increments());
    let bl_inst = Instrumentation::plan(&dag, cfg, &tree.increments(&dag, bl.increments()));
    let walk = |inst: &Instrumentation| simulate(cfg, inst, &mut Rng::new(seed), 5, 60);
    let bl_records = walk(&bl_inst);
    // Interesting: every other distinct path that ran.
    let mut ran: Vec<u64> = bl_records.iter().map(|r| r.0).collect();
    ran.sort_unstable();
    ran.dedup();
    let interesting: Vec<u64> = ran.iter().copied().step_by(2).collect();
    let set: Vec<_> = interesting
        .iter()
        .map(|&i| bl.decode(&dag, PathId(i)).unwrap())
        .collect();
    let plan = wpp_paths::PppPlan::compute(&dag, &bl, &set).unwrap();
    let ppp_chords = tree.increments(&dag, &plan.values());
    for (i, &inc) in ppp_chords.iter().enumerate() {
        prop_assert!(inc == 0 || tree.is_chord(wpp_paths::DagEdgeId(i as u32)));
    }
    let ppp_records = walk(&Instrumentation::plan(&dag, cfg, &ppp_chords));
    prop_assert_eq!(ppp_records.len(), bl_records.len());
    for ((ppp, seg), (bl_id, seg2)) in ppp_records.iter().zip(&bl_records) {
        prop_assert_eq!(seg, seg2);
        let expect = interesting.iter().position(|&i| i == *bl_id);
        prop_assert_eq!(plan.classify(*ppp, PathId(*bl_id)), expect);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn two_counters_classify_every_recorded_path(seed: u64, nodes in 1usize..40, extra in 0usize..40) {
        let mut rng = Rng::new(seed);
        let cfg = arbitrary_cfg(&mut rng, nodes, nodes + extra);
        check_two_counters(&cfg, seed)?;
    }

    #[test]
    fn recorded_ids_decode_to_executed_blocks_arbitrary(seed: u64, nodes in 1usize..40, extra in 0usize..40) {
        let mut rng = Rng::new(seed);
        let cfg = arbitrary_cfg(&mut rng, nodes, nodes + extra);
        check_contract(&cfg, seed)?;
    }

    #[test]
    fn recorded_ids_decode_to_executed_blocks_structured(seed: u64, blocks in 2usize..300) {
        let mut rng = Rng::new(seed);
        let cfg = structured_cfg(&mut rng, "s", blocks);
        check_contract(&cfg, seed)?;
    }
}

/// The loop example: the call is a cut node, the hot loop edges stay uninstrumented.
#[test]
fn loop_example_places_increments_off_the_hot_path() {
    let cfg = common::example("loops");
    let dag = Dag::build(&cfg).unwrap();
    let bl = BallLarus::number(&dag).unwrap();
    let tree = SpanningTree::build(&dag, &cfg, bl.increments());
    let inst = Instrumentation::plan(&dag, &cfg, &tree.increments(&dag, bl.increments()));
    let full = Instrumentation::plan(&dag, &cfg, bl.increments());
    assert!(
        inst.instrumented_edges() < full.instrumented_edges() || full.instrumented_edges() <= 2
    );
    // head→body (count 100) is hot; it carries no code.
    assert_eq!(inst.edges[1], EdgeAction::None);
    assert_eq!(inst.cut_nodes.len(), 1);
}
