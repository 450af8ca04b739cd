//! Profiles: recording through the PPP runtime check, merging, residual report, and the
//! compact and JSON encodings.

mod common;

use common::{example, letters};
use wpp_paths::ball_larus::dag_path_of_nodes;
use wpp_paths::{BallLarus, BlProfile, Dag, DagPath, PathId, PppPlan, PppProfile};

/// The module docs' worked example, byte for byte.
#[test]
fn compact_bl_profile_matches_the_documented_bytes() {
    let mut p = BlProfile::default();
    p.record("f", PathId(5), 3);
    let bytes = p.to_bytes().unwrap();
    assert_eq!(bytes, b"WPPPROF\0\x01B\x01\x01f\x01\x05\x03");
    assert_eq!(BlProfile::from_bytes(&bytes).unwrap(), p);
    assert!(BlProfile::from_bytes(&bytes[..9]).is_err());
    assert!(PppProfile::from_bytes(&bytes)
        .unwrap_err()
        .to_string()
        .contains("kind byte"));
    let mut v2 = bytes.clone();
    v2[8] = 2;
    assert!(BlProfile::from_bytes(&v2)
        .unwrap_err()
        .to_string()
        .contains("version 2"));
}

#[test]
fn bl_profiles_merge_and_report_residual_paths() {
    let mut a = BlProfile::default();
    a.record("f", PathId(0), 2);
    a.record("f", PathId(4), 1);
    let mut b = BlProfile::default();
    b.record("f", PathId(4), 5);
    b.record("g", PathId(1), 1);
    a.merge(&b);
    assert_eq!(a.functions["f"][&4], 6);
    assert_eq!(a.residual("f", &[0, 1, 5]), vec![(4, 6)]);
    let json = serde_json::to_string(&a).unwrap();
    assert_eq!(serde_json::from_str::<BlProfile>(&json).unwrap(), a);
}

/// Figure 3's runs through the two-counter check: aliases land in the residual.
#[test]
fn ppp_profile_separates_uninteresting_executions() {
    let cfg = example("fig3");
    let dag = Dag::build(&cfg).unwrap();
    let bl = BallLarus::number(&dag).unwrap();
    let path = |p: &str| DagPath {
        edges: dag_path_of_nodes(&dag, &letters(&cfg, p)).unwrap(),
    };
    let set: Vec<DagPath> = ["sacdt", "sact", "sbct"].iter().map(|p| path(p)).collect();
    let plan = PppPlan::compute(&dag, &bl, &set).unwrap();
    let run = |prof: &mut PppProfile, p: &str| {
        let d = path(p);
        prof.record(
            "fig3",
            &plan,
            plan.register(&d.edges),
            bl.encode_edges(&dag, &d.edges).unwrap(),
        );
    };
    let mut one = PppProfile::default();
    for p in ["sacdt", "sacdt", "sabct", "sbct"] {
        run(&mut one, p);
    }
    let mut two = PppProfile::default();
    for p in ["sbcdt", "sact", "sabct"] {
        run(&mut two, p);
    }
    one.merge(&two).unwrap();
    let f = &one.functions["fig3"];
    assert_eq!(f.counts, vec![2, 1, 1]);
    assert_eq!(one.residual()["fig3"], vec![(3, 2), (4, 1)]); // sabct twice, sbcdt once
    let bytes = one.to_bytes().unwrap();
    assert_eq!(PppProfile::from_bytes(&bytes).unwrap(), one);
    let mut other_plan = one.clone();
    other_plan.functions.get_mut("fig3").unwrap().interesting = vec![9];
    assert!(one.merge(&other_plan).is_err());
}
