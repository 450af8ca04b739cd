//! Regressions found by the fuzz targets in `fuzz/` (see `fuzz/README.md`). Each test pins
//! the fixed behaviour.

use wpp_paths::profile::PppFunctionProfile;
use wpp_paths::PppProfile;

fn ppp(interesting: Vec<u64>, counts: Vec<u64>) -> PppProfile {
    let mut p = PppProfile::default();
    p.functions.insert(
        "f".into(),
        PppFunctionProfile {
            interesting,
            counts,
            uninteresting: Default::default(),
        },
    );
    p
}

/// `profiles`: a compact PPP profile whose counts do not match its interesting paths one for
/// one used to be accepted; merging a good profile into it then silently dropped counts (and
/// `record` would index past the counts). It is now rejected with the function named.
#[test]
fn ppp_profile_with_mismatched_counts_is_rejected() {
    let bad = ppp(vec![1, 2], vec![5]).to_bytes().unwrap();
    let e = PppProfile::from_bytes(&bad).unwrap_err().to_string();
    assert!(
        e.contains("function `f`") && e.contains("1 counts for 2 interesting paths"),
        "{e}"
    );
    let bad = ppp(vec![], vec![0, 0]).to_bytes().unwrap();
    assert!(PppProfile::from_bytes(&bad).is_err());

    let good = ppp(vec![1, 2], vec![5, 6]);
    assert_eq!(
        PppProfile::from_bytes(&good.to_bytes().unwrap()).unwrap(),
        good
    );
    assert!(good.validate().is_ok());
}
