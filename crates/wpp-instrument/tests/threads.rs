//! Profiles of a multi-threaded program are exact (issue 4): `bl` and `ppp` counter
//! increments of concurrent threads are not lost. `threads_count.c` runs `step(i)` for
//! `i in 0..N` on four threads; its four paths' counts follow from `i % 3 == 0` and `i & 1`
//! alone, so the oracle is that formula evaluated here.

mod common;

use common::*;
use std::collections::BTreeMap;
use wpp_instrument::{InstrumentMode, Options};

const SRC: &str = "threads_count.c";
const THREADS: u64 = 4;
const N: u64 = 1_000_000;

/// The counts of `step`'s paths in a run, largest first: a path is fixed by the two branch
/// outcomes, so its count is how many `i` have those outcomes, times the threads.
fn expected_step_counts() -> Vec<u64> {
    let mut by_outcome = BTreeMap::<(bool, bool), u64>::new();
    for i in 0..N {
        *by_outcome.entry((i % 3 == 0, i & 1 == 1)).or_default() += THREADS;
    }
    sorted_desc(by_outcome.into_values())
}

fn sorted_desc(counts: impl IntoIterator<Item = u64>) -> Vec<u64> {
    let mut v: Vec<u64> = counts.into_iter().filter(|&c| c > 0).collect();
    v.sort_unstable_by(|a, b| b.cmp(a));
    v
}

fn profile(path: &std::path::Path) -> wpp_abi::profile::ProfileFile {
    wpp_abi::profile::ProfileFile::from_bytes(&std::fs::read(path).unwrap()).unwrap()
}

/// Builds with `opts`, runs, checks the output and returns the profile.
fn run_profiled(
    dir: &Scratch,
    name: &str,
    flags: &[&str],
    opts: Options,
) -> wpp_abi::profile::ProfileFile {
    let (exe, prof) = (dir.path(name), dir.path(&format!("{name}.prof")));
    build_with_options(SRC, flags, opts, &exe, None);
    let out = run(&exe, &[], Some(&prof));
    assert!(out.status.success(), "{name}: {out:?}");
    let total = THREADS * (N.div_ceil(3) + N / 2);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("total={total}\n")
    );
    profile(&prof)
}

fn check(flags: &[&str]) {
    let dir = Scratch::new();
    let expected = expected_step_counts();
    let bl = run_profiled(&dir, "bl", flags, Options::new(InstrumentMode::Bl));
    let step = &bl.bl.functions["step"];
    assert_eq!(
        sorted_desc(step.values().copied()),
        expected,
        "{flags:?}: bl counts of step's paths"
    );
    // Every loop iteration of every thread ends at least one path of `worker`.
    let worker: u64 = bl.bl.functions["worker"].values().sum();
    assert!(
        worker >= THREADS * N,
        "{flags:?}: worker ran {worker} paths"
    );
    // `ppp` with every other path interesting: interesting paths counted inline (by PPP id,
    // or by Ball–Larus id under the default array policy), the rest by the runtime.
    for bl_array_max in [0, wpp_abi::BL_ARRAY_MAX] {
        let mut opts = Options::new(InstrumentMode::Ppp);
        opts.interesting = bl
            .bl
            .functions
            .iter()
            .map(|(f, paths)| {
                (
                    f.clone(),
                    paths.iter().map(|(&id, &c)| (id, c)).step_by(2).collect(),
                )
            })
            .collect();
        opts.ppp_bl_array_max = bl_array_max;
        let p = run_profiled(&dir, "ppp", flags, opts);
        let fp = &p.ppp.expect("a ppp profile").functions["step"];
        assert!(!fp.counts.is_empty() && !fp.uninteresting.is_empty());
        for (i, &id) in fp.interesting.iter().enumerate() {
            assert_eq!(
                fp.counts[i], step[&id],
                "{flags:?} {bl_array_max}: path {id}"
            );
        }
        for (id, &c) in &fp.uninteresting {
            assert_eq!(
                c, step[id],
                "{flags:?} {bl_array_max}: uninteresting path {id}"
            );
        }
    }
}

#[test]
fn threaded_bl_and_ppp_counts_are_exact() {
    check(&["-O0"]);
    check(&["-O2"]);
}

/// Only modules that may start threads pay for atomic increments.
#[test]
fn atomic_increments_only_where_threads_may_run() {
    for (src, threaded) in [
        (SRC, true),
        ("threads.c", true),
        ("std_thread.cpp", true),
        ("recursion.c", false),
        ("exceptions.cpp", false),
    ] {
        let dir = Scratch::new();
        let keep = dir.path("keep");
        build_instrumented_keep(
            src,
            &["-O2"],
            InstrumentMode::Bl,
            &dir.path("exe"),
            Some(&keep),
        );
        let ctx = inkwell::context::Context::create();
        let module = wpp_instrument::read_bitcode(&ctx, &keep.join("linked.bc")).unwrap();
        assert_eq!(
            wpp_instrument::module_may_run_threads(&module),
            threaded,
            "{src}"
        );
        let report =
            wpp_instrument::instrument_module(&module, &Options::new(InstrumentMode::Bl)).unwrap();
        assert_eq!(report.atomic_counters, threaded, "{src}");
        let ir = module.print_to_string().to_string();
        assert_eq!(ir.contains("atomicrmw add"), threaded, "{src}");
        // A shared library cannot know its host's threads (trial 35 H1: a plugin called from
        // a threaded host lost 3 % of its calls): always atomic.
        let library = wpp_instrument::read_bitcode(&ctx, &keep.join("linked.bc")).unwrap();
        let shared = Options {
            shared: true,
            ..Options::new(InstrumentMode::Bl)
        };
        let report = wpp_instrument::instrument_module(&library, &shared).unwrap();
        assert!(report.atomic_counters, "{src} as a shared library");
    }
}
