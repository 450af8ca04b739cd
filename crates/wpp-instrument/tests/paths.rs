//! Cross-check of the two trace vocabularies on deterministic single-thread runs (issue 4's
//! acceptance): decoding the `trace-paths` run through the CFGs its own file carries gives
//! exactly the block sequence of the `trace-blocks --wpp-no-elide` run (a probe per block),
//! with the same `Enter`/`Leave` structure — for the raw trace and for the online `.wpp` alike.

mod common;

use common::*;
use wpp_instrument::InstrumentMode;
use wpp_trace::Event;

fn cross_check(src: &str, flags: &[&str]) {
    let dir = Scratch::new();
    let keep = dir.path("keep");
    let (blocks_exe, paths_exe) = (dir.path("blocks"), dir.path("paths"));
    // A probe per block: the oracle (the default `trace-blocks` build records paths too).
    let mut probes = wpp_instrument::Options::new(InstrumentMode::TraceBlocks);
    probes.elide = false;
    build_with_options(src, flags, probes, &blocks_exe, None);
    build_instrumented_keep(
        src,
        flags,
        InstrumentMode::TracePaths,
        &paths_exe,
        Some(&keep),
    );
    let (bt, pt) = (dir.path("b.trace"), dir.path("p.trace"));
    let a = run(&blocks_exe, &[], Some(&bt));
    let b = run(&paths_exe, &[], Some(&pt));
    assert_eq!(a.stdout, b.stdout, "{src}: outputs differ");
    let ctx = inkwell::context::Context::create();
    let module = wpp_instrument::read_bitcode(&ctx, &keep.join("linked.bc")).unwrap();
    let paths = wpp_instrument::function_paths(&module).unwrap();
    let (_, block_events) = wpp_paths::trace::read_events(&bt).unwrap();
    let (db, path_events) = wpp_paths::trace::read_events(&pt).unwrap();
    // The file's CFGs are the instrumenter's, cut points included.
    let stored: Vec<_> = db.functions.iter().map(|f| f.cfg.clone()).collect();
    let expected_cfgs: Vec<_> = paths
        .iter()
        .map(|fp| fp.cfg.to_record().map(Box::new))
        .collect();
    assert_eq!(stored, expected_cfgs, "{src}: CFGs in the trace");
    assert!(
        path_events.iter().any(|e| matches!(e, Event::Path(_))),
        "{src}: no paths"
    );
    let strip = |v: Vec<Event>| -> Vec<Event> {
        v.into_iter()
            .filter(|e| !matches!(e, Event::Thread(_)))
            .collect()
    };
    let decoded = strip(wpp_paths::trace::decode_trace(&db, &path_events).unwrap());
    let expected = strip(block_events);
    if decoded != expected {
        let i = decoded
            .iter()
            .zip(&expected)
            .position(|(x, y)| x != y)
            .unwrap_or(0);
        let lo = i.saturating_sub(8);
        panic!(
            "{src} {flags:?}: decoded path trace differs from the block trace at event {i} \
             (lengths {} vs {}):\n decoded {:?}\nexpected {:?}",
            decoded.len(),
            expected.len(),
            &decoded[lo..(i + 8).min(decoded.len())],
            &expected[lo..(i + 8).min(expected.len())]
        );
    }
    // Fewer events than the block trace: that is the point of paths.
    assert!(
        path_events.len() < expected.len(),
        "{src}: path trace not shorter"
    );
    // The online `.wpp` carries the same CFGs and decodes to the same blocks.
    let pw = dir.path("p.wpp");
    let c = run_env(&paths_exe, &[], Some(&pw), &[]);
    assert_eq!(c.stdout, a.stdout, "{src}: outputs differ");
    let (wdb, streams) = expand_wpp(&pw);
    assert_eq!(wdb, db, "{src}: program database of the .wpp");
    let [(_, stream)]: [_; 1] = streams.into_iter().collect::<Vec<_>>().try_into().unwrap();
    let decoded = wpp_paths::trace::decode_trace(&wdb, &stream).unwrap();
    assert!(
        decoded == expected,
        "{src} {flags:?}: decoded .wpp differs from the block trace"
    );
}

#[test]
fn recursion_paths_decode_to_blocks() {
    cross_check("recursion.c", &["-O0"]);
    cross_check("recursion.c", &["-O2"]);
}

#[test]
fn longjmp_paths_decode_to_blocks() {
    cross_check("longjmp.c", &["-O0"]);
    cross_check("longjmp.c", &["-O2"]);
}

#[test]
fn exception_paths_decode_to_blocks() {
    cross_check("exceptions.cpp", &["-O0"]);
    cross_check("exceptions.cpp", &["-O2"]);
}

/// `bl` counts equal the path frequencies counted from the `trace-paths` trace of the same
/// deterministic run, and the profile is self-contained (names and CFGs).
fn bl_matches_path_trace(src: &str, flags: &[&str]) -> wpp_abi::profile::ProfileFile {
    let dir = Scratch::new();
    let (paths_exe, bl_exe) = (dir.path("paths"), dir.path("bl"));
    build_instrumented(src, flags, InstrumentMode::TracePaths, &paths_exe);
    build_instrumented(src, flags, InstrumentMode::Bl, &bl_exe);
    let (pt, prof) = (dir.path("p.trace"), dir.path("bl.prof"));
    let a = run(&paths_exe, &[], Some(&pt));
    let b = run(&bl_exe, &[], Some(&prof));
    assert_eq!(a.stdout, b.stdout, "{src}: outputs differ");
    let (db, events) = wpp_paths::trace::read_events(&pt).unwrap();
    let mut expected: std::collections::BTreeMap<String, std::collections::BTreeMap<u64, u64>> =
        Default::default();
    let mut stack = Vec::new();
    for e in events {
        match e {
            Event::Enter(f) => stack.push(f),
            Event::Leave => {
                stack.pop();
            }
            Event::Path(p) => {
                let f = db.name(*stack.last().unwrap());
                *expected.entry(f).or_default().entry(p.0).or_default() += 1;
            }
            _ => {}
        }
    }
    let file = wpp_abi::profile::ProfileFile::from_bytes(&std::fs::read(&prof).unwrap()).unwrap();
    assert_eq!(
        file.program.cfgs.len(),
        file.program.program.functions.len()
    );
    assert!(!expected.is_empty());
    assert_eq!(
        file.bl.functions, expected,
        "{src} {flags:?}: bl profile vs path trace"
    );
    file
}

#[test]
fn bl_counts_equal_path_trace_frequencies() {
    for src in ["recursion.c", "longjmp.c", "exceptions.cpp"] {
        let _ = bl_matches_path_trace(src, &["-O0"]);
        let _ = bl_matches_path_trace(src, &["-O2"]);
    }
}

/// A function over the array limit counts its paths in the runtime's hash table; the counts
/// still equal the path trace's.
#[test]
fn bl_hash_table_counts_equal_path_trace_frequencies() {
    let file = bl_matches_path_trace("manypaths.c", &["-O0"]);
    let ids = &file.bl.functions["many"];
    assert!(
        ids.keys().any(|&id| id >= wpp_abi::BL_ARRAY_MAX),
        "expected path ids beyond the array limit: {:?}",
        ids.keys().max()
    );
    cross_check("manypaths.c", &["-O0"]);
}

/// `ppp` with an interesting set of every other path that ran under `bl`: interesting paths
/// are counted exactly as `bl` counted them, and every other executed path is reported as
/// uninteresting with its exact `bl` count (PPP §2.3's two-counter check, §5). Checked with
/// PPP numbering in every function, and with the default array policy (functions with few
/// paths counted by Ball–Larus id). The interesting paths' `bl` counts place the increments.
fn ppp_matches_bl(src: &str, flags: &[&str]) {
    for bl_array_max in [0, wpp_abi::BL_ARRAY_MAX] {
        ppp_matches_bl_with(src, flags, bl_array_max);
    }
}

fn ppp_matches_bl_with(src: &str, flags: &[&str], bl_array_max: u64) {
    let flags_shown = format!("{flags:?} ppp_bl_array_max={bl_array_max}");
    let dir = Scratch::new();
    let (bl_exe, ppp_exe) = (dir.path("bl"), dir.path("ppp"));
    build_instrumented(src, flags, InstrumentMode::Bl, &bl_exe);
    let bl_prof = dir.path("bl.prof");
    let a = run(&bl_exe, &[], Some(&bl_prof));
    let bl = wpp_abi::profile::ProfileFile::from_bytes(&std::fs::read(&bl_prof).unwrap()).unwrap();
    let mut interesting = std::collections::BTreeMap::new();
    for (f, paths) in &bl.bl.functions {
        let ids: std::collections::BTreeMap<u64, u64> =
            paths.iter().map(|(&id, &c)| (id, c)).step_by(2).collect();
        interesting.insert(f.clone(), ids);
    }
    let mut opts = wpp_instrument::Options::new(InstrumentMode::Ppp);
    opts.interesting = interesting.clone();
    opts.ppp_bl_array_max = bl_array_max;
    build_with_options(src, flags, opts, &ppp_exe, None);
    let ppp_prof = dir.path("ppp.prof");
    let b = run(&ppp_exe, &[], Some(&ppp_prof));
    assert_eq!(a.stdout, b.stdout, "{src}: outputs differ");
    let p = wpp_abi::profile::ProfileFile::from_bytes(&std::fs::read(&ppp_prof).unwrap()).unwrap();
    let ppp = p.ppp.expect("a ppp profile");
    let mut uninteresting_seen = 0;
    for (f, paths) in &bl.bl.functions {
        let fp = ppp
            .functions
            .get(f)
            .unwrap_or_else(|| panic!("{src}: {f} missing"));
        for (&id, &count) in paths {
            if interesting[f].contains_key(&id) {
                let i = fp
                    .interesting
                    .iter()
                    .position(|&x| x == id)
                    .unwrap_or_else(|| {
                        panic!("{src} {flags_shown}: {f}: interesting path {id} has no counter")
                    });
                assert_eq!(
                    fp.counts[i], count,
                    "{src} {flags_shown}: {f} interesting path {id}"
                );
            } else {
                uninteresting_seen += 1;
                assert_eq!(
                    fp.uninteresting.get(&id).copied(),
                    Some(count),
                    "{src} {flags_shown}: {f} uninteresting path {id}"
                );
            }
        }
        let ran: u64 = paths.values().sum();
        let counted: u64 = fp.counts.iter().sum::<u64>() + fp.uninteresting.values().sum::<u64>();
        assert_eq!(counted, ran, "{src} {flags_shown}: {f}: executions");
    }
    assert!(
        uninteresting_seen > 0,
        "{src}: the test needs uninteresting paths"
    );
}

#[test]
fn ppp_counts_equal_bl_counts() {
    for src in ["recursion.c", "longjmp.c", "exceptions.cpp"] {
        ppp_matches_bl(src, &["-O0"]);
        ppp_matches_bl(src, &["-O2"]);
    }
    ppp_matches_bl("manypaths.c", &["-O0"]);
}

/// `indirectbr` (computed goto, as in Lua's VM): its edges cannot be split, so they are cut
/// points with the recording before the branch and the restart at the targets. In
/// `computed_goto_dowhile.c` an unoptimized dispatch leaves unreachable blocks with edges into
/// the handlers, which paths must not count.
#[test]
fn computed_goto_paths_decode_and_count() {
    for src in ["computed_goto.c", "computed_goto_dowhile.c"] {
        for flags in [&["-O0"][..], &["-O2"][..]] {
            cross_check(src, flags);
            let _ = bl_matches_path_trace(src, flags);
            ppp_matches_bl(src, flags);
        }
    }
}
