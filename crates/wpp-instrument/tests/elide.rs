//! Block events not recorded one by one (issue 15, item 4): every test program is built three
//! times — natively, with `wpp cc` (whose `trace-blocks` records the paths the blocks run
//! along, one event per path) and with `--wpp-no-elide` (a probe per block), the oracle. Then
//!
//! * stdout and the exit status of both recordings are the native program's;
//! * the default recording holds fewer events, but its trace read back (paths decoded to
//!   blocks) equals the oracle's trace event for event, per thread (threads are compared as the
//!   multiset of their streams: which worker registers first is up to the scheduler), forked
//!   children included;
//! * the `.wpp` of a default run (built by the finisher from the spool) expands to the
//!   oracle's trace, and its program database says nothing of paths.
//!
//! Needs clang-22 and llvm-link-22 on PATH (Debian: clang-22 llvm-22).

mod common;

use common::*;
use std::path::{Path, PathBuf};
use wpp_instrument::{InstrumentMode, Options};
use wpp_trace::Event;

/// The programs, flags and arguments the other end-to-end tests record in `trace-blocks`,
/// but those whose control flow depends on timing (`ticks.c`, `spin*.c`, `churn.c`).
const RUNS: &[(&str, &[&str], &[&str])] = &[
    ("recursion.c", &["-O0"], &[]),
    ("recursion.c", &["-O2"], &[]),
    ("longjmp.c", &["-O0"], &[]),
    ("longjmp.c", &["-O2"], &[]),
    ("exceptions.cpp", &["-O0"], &[]),
    ("exceptions.cpp", &["-O2"], &[]),
    ("threads.c", &["-O0"], &[]),
    ("threads.c", &["-O2"], &[]),
    ("threads_count.c", &["-O1"], &[]),
    ("std_thread.cpp", &["-O1"], &[]),
    ("exit_deep.c", &["-O0"], &["exit"]),
    ("exit_deep.c", &["-O0"], &["abort"]),
    ("exits.c", &["-O1"], &["_exit"]),
    ("exits.c", &["-O1"], &["execv"]),
    ("computed_goto.c", &["-O0"], &[]),
    ("computed_goto.c", &["-O2"], &[]),
    ("manypaths.c", &["-O0"], &[]),
    ("manypaths.c", &["-O2"], &[]),
    ("deps.c", &["-O1", "-g"], &[]),
    ("deps_heap.c", &["-O1"], &[]),
    ("heap_quiet.c", &["-O2"], &[]),
    ("fork.c", &["-O1"], &[]),
];

/// Per recorded process (the parent's file first, then forked children's by name), its
/// threads' streams, sorted.
type Recording = Vec<Vec<Vec<Event>>>;

fn threads_of(events: &[Event]) -> Vec<Vec<Event>> {
    let mut streams: Vec<_> = wpp_trace::split_threads(events).into_values().collect();
    streams.sort();
    streams
}

/// Reads `main` (the parent's output) and every other file `main`'s stem starts in `dir`
/// (forked children's), decoded; and how many more events were read than recorded.
fn read_recording(dir: &Path, main: &Path) -> (Recording, i64) {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("scratch dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "trace"))
        .collect();
    files.sort_by_key(|p| (p != main, p.clone()));
    let mut restored = 0;
    let recording = files
        .iter()
        .map(|p| {
            let mut r =
                wpp_paths::trace::open(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            assert!(!r.paths_are_blocks(), "the reader decodes the paths");
            let mut events = Vec::new();
            r.for_each_batch(|b| events.extend_from_slice(b))
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            restored += r.restored_events();
            threads_of(&events)
        })
        .collect();
    (recording, restored)
}

/// Builds `src` with `elide` in its own directory, runs it with `env` and returns the
/// directory, the main output file and the run's output.
fn record(
    src: &str,
    flags: &[&str],
    args: &[&str],
    elide: bool,
    ext: &str,
    env: &[(&str, &str)],
) -> (Scratch, PathBuf, std::process::Output) {
    let dir = Scratch::new();
    let exe = dir.path("prog");
    let mut opts = Options::new(InstrumentMode::TraceBlocks);
    opts.elide = elide;
    build_with_options(src, flags, opts, &exe, None);
    let out = dir.path(&format!("out.{ext}"));
    let output = run_env(&exe, args, Some(&out), env);
    (dir, out, output)
}

#[test]
fn restored_traces_equal_the_unelided_ones() {
    let mut elided_total = 0;
    for &(src, flags, args) in RUNS {
        let what = format!("{src} {flags:?} {args:?}");
        let native_dir = Scratch::new();
        let native = native_dir.path("native");
        build_native(src, flags, &native);
        let reference = run(&native, args, None);
        let raw = [("WPP_RAW", "1")];
        let (odir, ofile, oracle_run) = record(src, flags, args, false, "trace", &raw);
        let (edir, efile, elided_run) = record(src, flags, args, true, "trace", &raw);
        same_behaviour(&format!("{what}, not elided"), &reference, &oracle_run);
        same_behaviour(&format!("{what}, elided"), &reference, &elided_run);
        let (oracle, none) = read_recording(odir.0.path(), &ofile);
        let (restored, elided) = read_recording(edir.0.path(), &efile);
        assert_eq!(none, 0, "{what}: nothing decoded without elision");
        assert_eq!(oracle.len(), restored.len(), "{what}: recorded processes");
        for (p, (o, r)) in oracle.iter().zip(&restored).enumerate() {
            assert_eq!(o.len(), r.len(), "{what}: process {p}: threads");
            for (t, (o, r)) in o.iter().zip(r).enumerate() {
                if let Some(i) = (0..o.len().min(r.len())).find(|&i| o[i] != r[i]) {
                    panic!(
                        "{what}: process {p}, thread stream {t}: event {i} is {:?} decoded, \
                         {:?} recorded block by block",
                        r[i], o[i]
                    );
                }
                assert_eq!(o.len(), r.len(), "{what}: process {p}, stream {t}: length");
            }
        }
        elided_total += elided;
    }
    assert!(
        elided_total > 0,
        "no program recorded fewer events than blocks"
    );
}

/// The default recording — a `.wpp` the finisher builds from the spool of paths — expands to
/// the trace recorded block by block.
#[test]
fn the_wpp_of_an_elided_run_expands_to_the_unelided_trace() {
    for &(src, flags, args) in &[
        ("recursion.c", &["-O2"][..], &[][..]),
        ("threads.c", &["-O1"], &[]),
        ("manypaths.c", &["-O0"], &[]),
    ] {
        let what = format!("{src} {flags:?}");
        let (odir, ofile, _) = record(src, flags, args, false, "trace", &[("WPP_RAW", "1")]);
        let (_edir, wpp, run) = record(src, flags, args, true, "wpp", &[]);
        assert!(run.status.success(), "{what}: {run:?}");
        let (oracle, _) = read_recording(odir.0.path(), &ofile);
        let (db, streams) = expand_wpp(&wpp);
        assert!(
            !db.has_implied_blocks() && !db.paths_are_blocks,
            "{what}: the .wpp holds blocks"
        );
        let mut expanded: Vec<Vec<Event>> = streams.into_values().collect();
        expanded.sort();
        assert_eq!(expanded, oracle[0], "{what}");
    }
}
