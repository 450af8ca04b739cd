//! PPP (Figure 10) against the paper's walk-through (§3.2), Lemma 3, and random subsets.

mod common;

use common::{all_paths, example, letters, sum};
use proptest::prelude::*;
use wpp_paths::ball_larus::dag_path_of_nodes;
use wpp_paths::coding::{entropy, BlModel, PppModel};
use wpp_paths::dag::DagEdgeKind;
use wpp_paths::ppp::{Interval, Step};
use wpp_paths::random::{arbitrary_cfg, structured_cfg, Rng};
use wpp_paths::{BallLarus, Cfg, Dag, DagPath, PathId, PppPlan, SpanningTree};

fn paths(cfg: &Cfg, dag: &Dag, names: &[&str]) -> Vec<DagPath> {
    names
        .iter()
        .map(|p| DagPath {
            edges: dag_path_of_nodes(dag, &letters(cfg, p)).unwrap(),
        })
        .collect()
}

/// The interval prefix `prefix` induces: `[min, max]`, with `cis` before the edge.
fn iv(prefix: u64, min: i64, max: i64, cis: i64) -> Interval {
    Interval {
        prefix,
        min,
        max,
        cis,
    }
}

/// "x→y" for a DAG edge between CFG nodes, `None` for the virtual start and end edges.
fn label(cfg: &Cfg, dag: &Dag, s: &Step) -> Option<String> {
    let e = dag.edge(s.edge);
    let DagEdgeKind::Cfg(c) = e.kind else {
        return None;
    };
    let c = cfg.edges[c.index()];
    Some(format!("{}{}", cfg.node_name(c.src), cfg.node_name(c.dst)))
}

/// §3.2, step by step: the weight of each edge in processing order, the intervals the
/// prefixes induce, and the final ids 0, 1, 2.
#[test]
fn figure3_walkthrough() {
    let cfg = example("fig3");
    let dag = Dag::build(&cfg).unwrap();
    let bl = BallLarus::number(&dag).unwrap();
    let interesting = paths(&cfg, &dag, &["sacdt", "sact", "sbct"]);
    let mut trace = Vec::new();
    let plan = PppPlan::compute_traced(&dag, &bl, &interesting, Some(&mut trace)).unwrap();
    let steps: Vec<(String, i64)> = trace
        .iter()
        .filter_map(|s| Some((label(&cfg, &dag, s)?, s.weight)))
        .collect();
    let expected = [
        ("dt", 0),
        ("cd", 0),
        ("ct", 1),
        ("bc", -1),
        ("ac", 0),
        ("sa", 0),
        ("sb", 2),
    ];
    let expected: Vec<(String, i64)> = expected.iter().map(|&(e, w)| (e.to_owned(), w)).collect();
    assert_eq!(steps, expected);
    // Prefix keys are Ball–Larus sums: sac = 0, sbc = 4, sb = 4, sa = 0, s = 0.
    let at = |name: &str| {
        trace
            .iter()
            .find(|s| label(&cfg, &dag, s).as_deref() == Some(name))
            .unwrap()
    };
    // Step 3c. The text says both prefixes induce [0, 0] on (c, d); by Figure 10 only sacdt
    // uses (c, d), so only sac does. On (c, t), sac asks for cis(sac) − 0 = 1 and sbc for
    // 0 − 0 = 0; the join gives the text's weight 1 either way.
    assert_eq!(at("cd").intervals, vec![iv(0, 0, 0, 0)]);
    assert_eq!(at("ct").intervals, vec![iv(0, 0, 0, 1), iv(4, 0, 0, 0)]);
    assert_eq!(at("bc").intervals, vec![iv(4, 1, 1, 0)]);
    assert_eq!(at("sa").intervals, vec![iv(0, 0, 1, 0)]);
    assert_eq!(at("sb").intervals, vec![iv(0, 0, 0, 2)]);
    assert_eq!(plan.ids, vec![0, 1, 2]);
    assert_eq!(plan.bl_ids, vec![0, 1, 5]);
    assert_eq!(plan.interval, 3);
    assert_eq!(plan.gamma(), 1.0);
    // (a, b) carries no interesting path: ⊥.
    let ab = dag_path_of_nodes(&dag, &letters(&cfg, "sabct")).unwrap()[2];
    assert_eq!(plan.weights[ab.index()], None);
}

/// §2.3: sabct aliases sacdt (PPP 0) and sbcdt aliases sact (PPP 1); the Ball–Larus
/// counter tells them apart.
#[test]
fn figure3_aliases_are_resolved_by_the_ball_larus_counter() {
    let cfg = example("fig3");
    let dag = Dag::build(&cfg).unwrap();
    let bl = BallLarus::number(&dag).unwrap();
    let plan = PppPlan::compute(&dag, &bl, &paths(&cfg, &dag, &["sacdt", "sact", "sbct"])).unwrap();
    let reg = |p: &str| {
        let edges = dag_path_of_nodes(&dag, &letters(&cfg, p)).unwrap();
        (
            plan.register(&edges),
            bl.encode_edges(&dag, &edges).unwrap(),
        )
    };
    let (sabct, sabct_bl) = reg("sabct");
    let (sbcdt, sbcdt_bl) = reg("sbcdt");
    assert_eq!((sabct, sbcdt), (0, 1));
    assert_eq!(sbcdt_bl, PathId(4));
    assert_eq!(plan.classify(sabct, sabct_bl), None);
    assert_eq!(plan.classify(sbcdt, sbcdt_bl), None);
    let (sact, sact_bl) = reg("sact");
    assert_eq!(plan.classify(sact, sact_bl), Some(1));
}

/// Lemma 3 (Figure 6): no edge assignment numbers the six paths 0..5, checked exhaustively
/// over the sub-path sums u..z (fixing u = 0 loses nothing: adding c to u, v, w and
/// subtracting it from x, y, z changes no id); PPP reaches Γ > 1 there.
#[test]
fn lemma3_has_no_perfect_assignment_and_ppp_gamma_exceeds_one() {
    let mut perfect = 0;
    let r = -12i64..=12;
    for y in 0..6i64 {
        for z in 0..6i64 {
            for v in r.clone() {
                for w in r.clone() {
                    for x in r.clone() {
                        let mut ids = [y, z, v + x, v + z, w + x, w + y];
                        ids.sort_unstable();
                        if ids == [0, 1, 2, 3, 4, 5] {
                            perfect += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(perfect, 0);
    let cfg = example("lemma3");
    let dag = Dag::build(&cfg).unwrap();
    let bl = BallLarus::number(&dag).unwrap();
    let set = paths(
        &cfg,
        &dag,
        &["sadft", "sadgt", "sbdet", "sbdgt", "scdet", "scdft"],
    );
    let plan = PppPlan::compute(&dag, &bl, &set).unwrap();
    let mut ids = plan.ids.clone();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 6);
    assert!(plan.gamma() > 1.0, "Γ = {}", plan.gamma());
    // By hand: d→e 0, d→f 1 (join of sad 0 and scd 1), d→g 2 (join of sad 2, sbd 1),
    // a→d −1, s→b 2, s→c 5: ids 0, 1, 2, 4, 5, 6 and a hole at 3.
    assert_eq!(plan.ids, vec![0, 1, 2, 4, 5, 6]);
    assert_eq!(plan.interval, 7);
}

/// Figure 11: put Lemma 3's graph (where PPP leaves holes) in parallel with one-path graphs,
/// one per hole. Weights that drop those paths into the holes reach Γ = 1; PPP, whose
/// intervals never overlap, appends them after G1's interval instead.
#[test]
fn figure11_ppp_misses_an_optimum_that_fills_holes() {
    let g1 = example("lemma3");
    let g1_paths = ["sadft", "sadgt", "sbdet", "sbdgt", "scdet", "scdft"];
    let g1_plan = {
        let dag = Dag::build(&g1).unwrap();
        let bl = BallLarus::number(&dag).unwrap();
        PppPlan::compute(&dag, &bl, &paths(&g1, &dag, &g1_paths)).unwrap()
    };
    let holes: Vec<u64> = (0..g1_plan.interval)
        .filter(|i| !g1_plan.ids.contains(i))
        .collect();
    assert!(!holes.is_empty());
    // G: S→s…t→T (G1) and S→h→T for each hole h (one-letter names from 'u').
    let mut cfg = g1.clone();
    let add = |cfg: &mut Cfg, name: &str| {
        cfg.nodes.push(name.to_owned());
        wpp_paths::NodeId(cfg.nodes.len() as u32 - 1)
    };
    let (big_s, big_t) = (add(&mut cfg, "S"), add(&mut cfg, "T"));
    let edge = |cfg: &mut Cfg, src, dst| cfg.edges.push(wpp_paths::Edge { src, dst });
    edge(&mut cfg, big_s, g1.entry);
    edge(&mut cfg, g1.exits[0], big_t);
    let mut set: Vec<String> = g1_paths.iter().map(|p| format!("S{p}T")).collect();
    let letters_for_holes = ["u", "v", "w", "x", "y", "z"];
    for h in letters_for_holes.iter().take(holes.len()) {
        let n = add(&mut cfg, h);
        edge(&mut cfg, big_s, n);
        edge(&mut cfg, n, big_t);
        set.push(format!("S{h}T"));
    }
    (cfg.entry, cfg.exits) = (big_s, vec![big_t]);
    let dag = Dag::build(&cfg).unwrap();
    let bl = BallLarus::number(&dag).unwrap();
    let names: Vec<&str> = set.iter().map(String::as_str).collect();
    let interesting = paths(&cfg, &dag, &names);
    let plan = PppPlan::compute(&dag, &bl, &interesting).unwrap();
    assert!(plan.gamma() > 1.0, "PPP Γ = {}", plan.gamma());
    // The better assignment: G1's PPP weights on G1's edges, hole k on S→h_k, 0 elsewhere.
    let mut weights = vec![0i64; dag.edge_count()];
    let g1_dag = Dag::build(&g1).unwrap();
    for (i, e) in dag.edges().iter().enumerate() {
        if let DagEdgeKind::Cfg(c) = e.kind {
            if c.index() < g1.edges.len() {
                let g1_edge = g1_dag.role(c);
                if let wpp_paths::dag::CfgEdgeRole::Dag(d) = g1_edge {
                    weights[i] = g1_plan.weights[d.index()].unwrap_or(0);
                }
            } else if cfg.edges[c.index()].src == big_s && cfg.edges[c.index()].dst != g1.entry {
                let k = (cfg.edges[c.index()].dst.0 - big_t.0 - 1) as usize;
                weights[i] = holes[k] as i64;
            }
        }
    }
    let mut ids: Vec<i64> = interesting
        .iter()
        .map(|p| p.edges.iter().map(|e| weights[e.index()]).sum())
        .collect();
    ids.sort_unstable();
    assert_eq!(
        ids,
        (0..set.len() as i64).collect::<Vec<_>>(),
        "the hole-filling assignment is perfect"
    );
}

/// §4.2 and §4.3: pathEncoder with computeBLModel gives the Ball–Larus ids (sbcdt = 4), and
/// with the PPP model gives the PPP ids (sact = 1); entropies match the intervals.
#[test]
fn figure13_path_encoder_reproduces_both_numberings() {
    let cfg = example("fig3");
    let dag = Dag::build(&cfg).unwrap();
    let bl = BallLarus::number(&dag).unwrap();
    let model = BlModel::new(&dag, &bl);
    let all = all_paths(&dag, 100).unwrap();
    for p in &all {
        let path = DagPath { edges: p.clone() };
        assert_eq!(model.encode(&path), sum(bl.increments(), p));
    }
    let sbcdt = DagPath {
        edges: dag_path_of_nodes(&dag, &letters(&cfg, "sbcdt")).unwrap(),
    };
    assert_eq!(model.encode(&sbcdt), 4);
    let probs = all.iter().map(|p| {
        p.iter()
            .map(|&e| model.range(e).probability())
            .product::<f64>()
    });
    assert!((entropy(6, probs) - 6f64.log2()).abs() < 1e-9);
    let interesting = paths(&cfg, &dag, &["sacdt", "sact", "sbct"]);
    let plan = PppPlan::compute(&dag, &bl, &interesting).unwrap();
    let ppp = PppModel::new(&dag, &bl, &plan, &interesting);
    assert_eq!(ppp.root_window(), Some((0, 2)));
    for (p, &id) in interesting.iter().zip(&plan.ids) {
        assert_eq!(ppp.encode(&dag, p), Some(id));
    }
    // Table 3: D_{s,s}(e1) = 2/3, D_{s,s}(e2) = 1/3, D_{a,sa}(e4 = a→c) = 1,
    // D_{b,sb}(e5) = 1. (Table 3's row for c gives c→d 1/3 under both prefixes, which no
    // window at c has: sacdt and sact use ids 0 and 1 there, so D_{c,sac}(c→d) = 1/2, and
    // the paper's own encoding of sact needs [1, 2) after c, which 1/2 gives.)
    let sacdt = dag_path_of_nodes(&dag, &letters(&cfg, "sacdt")).unwrap();
    let sbct = dag_path_of_nodes(&dag, &letters(&cfg, "sbct")).unwrap();
    let p = |e: wpp_paths::DagEdgeId, q: u64| ppp.range(&dag, e, q).unwrap().probability();
    assert!((p(sacdt[1], 0) - 2.0 / 3.0).abs() < 1e-12);
    assert!((p(sbct[1], 0) - 1.0 / 3.0).abs() < 1e-12);
    assert_eq!(p(sacdt[2], 0), 1.0);
    assert_eq!(p(sbct[2], 4), 1.0);
    assert_eq!(p(sacdt[3], 0), 0.5);
    let h = entropy(
        plan.interval,
        interesting.iter().map(|p| ppp.probability(&dag, p)),
    );
    assert!((h.exp2() - plan.interval as f64).abs() < 1e-9);
}

/// Checks uniqueness, range, classification of every path, chord placement of the PPP
/// counter on the Ball–Larus chords, and the arithmetic-coding view, for a random subset.
fn check_ppp(cfg: &Cfg, pick: u64) -> Result<(), TestCaseError> {
    let dag = Dag::build(cfg).unwrap();
    let Ok(bl) = BallLarus::number(&dag) else {
        return Ok(());
    };
    let Some(all) = all_paths(&dag, 3000) else {
        return Ok(());
    };
    let mut rng = Rng::new(pick);
    let chosen: Vec<usize> = (0..all.len()).filter(|_| rng.chance(35)).collect();
    let set: Vec<DagPath> = chosen
        .iter()
        .map(|&i| DagPath {
            edges: all[i].clone(),
        })
        .collect();
    let plan = PppPlan::compute(&dag, &bl, &set).unwrap();
    prop_assert_eq!(plan.ids.len(), set.len());
    let mut sorted = plan.ids.clone();
    sorted.sort_unstable();
    sorted.dedup();
    prop_assert_eq!(sorted.len(), set.len(), "PPP ids collide");
    prop_assert!(plan.ids.iter().all(|&i| i < plan.interval));
    prop_assert!(plan.gamma() >= 1.0);
    let tree = SpanningTree::build(&dag, cfg, bl.increments());
    let ppp_chords = tree.increments(&dag, &plan.values());
    let model = PppModel::new(&dag, &bl, &plan, &set);
    let bl_model = BlModel::new(&dag, &bl);
    if !set.is_empty() {
        let h = entropy(
            plan.interval,
            set.iter().map(|p| model.probability(&dag, p)),
        );
        let gamma = h.exp2() / set.len() as f64;
        prop_assert!(
            (gamma / plan.gamma() - 1.0).abs() < 1e-9,
            "2^H/|I| = {} vs Γ = {}",
            gamma,
            plan.gamma()
        );
    }
    for (i, p) in all.iter().enumerate() {
        prop_assert_eq!(
            bl_model.encode(&DagPath { edges: p.clone() }),
            sum(bl.increments(), p)
        );
        let reg = plan.register(p);
        prop_assert_eq!(
            sum(&ppp_chords, p),
            reg,
            "PPP chord placement changes the value"
        );
        let bl_id = bl.encode_edges(&dag, p).unwrap();
        let slot = chosen.iter().position(|&c| c == i);
        prop_assert_eq!(plan.classify(reg, bl_id), slot);
        if let Some(k) = slot {
            prop_assert_eq!(reg, plan.ids[k]);
            prop_assert_eq!(model.encode(&dag, &set[k]), Some(plan.ids[k]));
        }
    }
    for (i, &inc) in ppp_chords.iter().enumerate() {
        prop_assert!(
            inc == 0 || tree.is_chord(wpp_paths::DagEdgeId(i as u32)),
            "PPP increment off the chords"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn ppp_ids_unique_on_random_subsets_arbitrary(seed: u64, pick: u64, nodes in 1usize..20, extra in 0usize..20) {
        let mut rng = Rng::new(seed);
        check_ppp(&arbitrary_cfg(&mut rng, nodes, nodes + extra), pick)?;
    }

    #[test]
    fn ppp_ids_unique_on_random_subsets_structured(seed: u64, pick: u64, blocks in 2usize..100) {
        let mut rng = Rng::new(seed);
        check_ppp(&structured_cfg(&mut rng, "s", blocks), pick)?;
    }
}
