//! End-to-end tests on the C/C++ programs of `tests/programs`: each is built natively and with
//! the `wpp cc` driver, both are run, and
//!
//! * stdout and the exit status must be byte-identical (the instrumented program behaves
//!   exactly as the original);
//! * the trace must replay on a shadow stack per thread without underflow and end balanced,
//!   with the last frame popped being the thread's root (`main` / the thread function);
//! * at `-O0`, each function's `Enter` count must equal the call count the program itself
//!   counted and printed (`calls NAME=N`), an oracle independent of the instrumentation.
//!
//! Needs clang-22 and llvm-link-22 on PATH (Debian: clang-22 llvm-22).

mod common;

use common::*;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use wpp_instrument::InstrumentMode;
use wpp_trace::Event;

/// Builds, runs and compares one program; returns the replay of its trace and its stdout.
fn check(
    src: &str,
    flags: &[&str],
    args: &[&str],
) -> (
    std::collections::BTreeMap<wpp_trace::ThreadId, Replay>,
    Vec<u8>,
) {
    let dir = Scratch::new();
    let native = dir.path("native");
    let inst = dir.path("inst");
    let trace = dir.path("out.trace");
    build_native(src, flags, &native);
    build_instrumented(src, flags, InstrumentMode::TraceBlocks, &inst);
    let a = run(&native, args, None);
    let b = run(&inst, args, Some(&trace));
    same_behaviour(&format!("{src} {flags:?}"), &a, &b);
    let (db, events) = wpp_paths::trace::read_events(&trace)
        .unwrap_or_else(|e| panic!("{src} {flags:?}: trace unreadable: {e}"));
    assert!(!events.is_empty(), "{src}: empty trace");
    (replay(&db, &events), a.stdout)
}

fn check_counts(src: &str, r: &Replay, stdout: &[u8]) {
    let printed = printed_calls(stdout);
    assert!(!printed.is_empty(), "{src} prints no call counts");
    for (name, n) in printed {
        assert_eq!(enters_of(r, &name), n, "{src}: Enter count of {name}");
    }
}

fn single_thread(src: &str, flags: &[&str], args: &[&str]) -> (Replay, Vec<u8>) {
    let (mut threads, out) = check(src, flags, args);
    assert_eq!(threads.len(), 1, "{src}: expected one thread");
    let (_, r) = threads.pop_first().unwrap();
    assert!(r.balanced, "{src} {flags:?}: unbalanced trace");
    (r, out)
}

#[test]
fn recursion_pointers_switch_goto() {
    for flags in [&["-O0"][..], &["-O2"][..]] {
        let (r, out) = single_thread("recursion.c", flags, &[]);
        assert_eq!(r.last_popped.as_deref(), Some("main"));
        if flags == ["-O0"] {
            check_counts("recursion.c", &r, &out);
        }
    }
}

#[test]
fn longjmp_out_of_deep_frames() {
    for flags in [&["-O0"][..], &["-O2"][..]] {
        let (r, out) = single_thread("longjmp.c", flags, &[]);
        // Too few Leaves at a setjmp site would leave `dive` frames under main's final Leave.
        assert_eq!(r.last_popped.as_deref(), Some("main"), "{flags:?}");
        assert_eq!(r.trailing_pops, vec!["main".to_string()], "{flags:?}");
        if flags == ["-O0"] {
            check_counts("longjmp.c", &r, &out);
        }
    }
}

#[test]
fn exceptions_unwind_frames() {
    for flags in [&["-O0"][..], &["-O2"][..]] {
        let (r, out) = single_thread("exceptions.cpp", flags, &[]);
        assert_eq!(r.last_popped.as_deref(), Some("main"), "{flags:?}");
        assert_eq!(r.trailing_pops, vec!["main".to_string()], "{flags:?}");
        if flags == ["-O0"] {
            check_counts("exceptions.cpp", &r, &out);
        }
    }
}

#[test]
fn threads_get_their_own_balanced_streams() {
    for flags in [&["-O0"][..], &["-O2"][..]] {
        let (threads, _) = check("threads.c", flags, &[]);
        assert_eq!(threads.len(), 5, "{flags:?}: main + 4 workers");
        let mut roots: Vec<_> = threads
            .values()
            .map(|r| r.last_popped.clone().unwrap_or_default())
            .collect();
        roots.sort();
        assert_eq!(roots, ["main", "worker", "worker", "worker", "worker"]);
        for (t, r) in &threads {
            assert!(r.balanced, "{flags:?}: thread {t} unbalanced");
        }
    }
}

/// `exit()` and `abort()` from depth 10: the runtime marks exactly the open frames.
#[test]
fn exit_and_abort_from_deep_frames_mark_open_frames() {
    for how in ["exit", "abort"] {
        let (r, out) = single_thread("exit_deep.c", &["-O0"], &[how]);
        let depth: usize = String::from_utf8_lossy(&out)
            .lines()
            .find_map(|l| l.strip_prefix("leaving at depth ")?.parse().ok())
            .expect("program prints its depth");
        let marked: Vec<_> = r.trailing_pops.iter().filter(|n| *n != "bye").collect();
        assert_eq!(marked.len(), depth, "{how}: open frames marked");
        assert_eq!(marked.last().map(|s| s.as_str()), Some("main"), "{how}");
        assert!(
            marked[..depth - 1].iter().all(|n| *n == "down"),
            "{how}: {marked:?}"
        );
    }
}

/// Whether the whole chunks of `trace` (being written) hold more than `n` entries of `step`;
/// stops reading at the first `n + 1`.
fn holds_step_enters(trace: &std::path::Path, n: usize) -> bool {
    let Ok(reader) = wpp_paths::trace::open(trace) else {
        return false; // not even a header yet
    };
    let reader = reader.allow_truncated(true);
    let db = reader.program().clone();
    reader
        .map_while(Result::ok)
        .filter(|e| matches!(e, Event::Enter(f) if db.name(*f) == "step"))
        .nth(n)
        .is_some()
}

/// A program killed with SIGKILL mid-run leaves a readable prefix of whole chunks, compressed
/// (the default) or plain (`WPP_ZSTD_LEVEL=0`).
#[test]
fn sigkill_leaves_a_readable_prefix() {
    let dir = Scratch::new();
    let inst = dir.path("spin");
    build_instrumented("spin.c", &["-O1"], InstrumentMode::TraceBlocks, &inst);
    for level in ["1", "0"] {
        let trace = dir.path(&format!("spin.{level}.trace"));
        let mut child = Command::new(&inst)
            .env("WPP_OUT", &trace)
            .env("WPP_RAW", "1")
            .env("WPP_ZSTD_LEVEL", level)
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "ready\n");
        // `step` ran 2,000,000 times before "ready"; the runtime's writer may lag behind the
        // program on a loaded machine, so wait (up to a minute) until whole chunks in the file
        // hold nearly all of those calls: the kill then cuts the run after them, not at a
        // moment the scheduler chose.
        let start = std::time::Instant::now();
        while !holds_step_enters(&trace, 1_900_000) && start.elapsed().as_secs() < 60 {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let reader = wpp_paths::trace::open(&trace)
            .expect("header readable")
            .allow_truncated(true);
        let db = reader.program().clone();
        let events: Vec<_> = reader
            .collect::<Result<_, _>>()
            .expect("whole chunks readable");
        let enters = events
            .iter()
            .filter(|e| matches!(e, Event::Enter(f) if db.name(*f) == "step"))
            .count();
        assert!(
            enters > 1_900_000,
            "level {level}: only {enters} step() entries survived"
        );
        // Plain events take at least a byte each; the loop's trace compresses far below that.
        let bytes = std::fs::metadata(&trace).unwrap().len() as f64;
        let per_event = bytes / events.len() as f64;
        assert_eq!(
            per_event < 0.1,
            level == "1",
            "level {level}: {per_event} bytes/event"
        );
        // The prefix replays without underflow (no balance expected: the program was killed).
        let _ = replay(&db, &events);
    }
}

/// The online mode writes a `.wpp` whose expansion is, thread by thread, exactly the raw trace
/// of the same deterministic run: with the default compressor (phrase) and with each one
/// `WPP_COMPRESS` names; the file records which one built it.
#[test]
fn online_wpp_expands_to_the_raw_trace() {
    let dir = Scratch::new();
    let inst = dir.path("threads");
    build_instrumented("threads.c", &["-O1"], InstrumentMode::TraceBlocks, &inst);
    let raw = dir.path("t.trace");
    let a = run(&inst, &[], Some(&raw));
    let (_, events) = wpp_paths::trace::read_events(&raw).expect("raw trace");
    // Thread ids are given in registration order, which can differ between runs: compare the
    // multisets of per-thread streams.
    let mut x: Vec<_> = wpp_trace::file::threads::split_threads(&events)
        .into_values()
        .collect();
    x.sort();
    assert_eq!(x.len(), 5);
    for (var, algorithm) in [
        ("", "phrase"),
        ("sequitur", "sequitur"),
        ("phrase", "phrase"),
        ("frequency", "frequency"),
    ] {
        let wpp = dir.path(&format!("t-{algorithm}.wpp"));
        let b = run_env(&inst, &[], Some(&wpp), &[("WPP_COMPRESS", var)]);
        assert_eq!(a.stdout, b.stdout);
        let file = wpp_grammar::file::WppFile::read(&wpp).expect("online .wpp");
        assert_eq!(file.algorithm.as_str(), algorithm);
        let (_, wpp_threads) = expand_wpp(&wpp);
        let mut y: Vec<_> = wpp_threads.into_values().collect();
        y.sort();
        assert!(
            x == y,
            "online .wpp ({algorithm}) differs from the raw trace"
        );
    }
}

/// An unknown `WPP_COMPRESS` stops recording with a message naming it; the program still runs.
#[test]
fn unknown_compressor_is_reported() {
    let dir = Scratch::new();
    let inst = dir.path("threads");
    build_instrumented("threads.c", &["-O1"], InstrumentMode::TraceBlocks, &inst);
    let wpp = dir.path("t.wpp");
    let a = run(&inst, &[], Some(&dir.path("t.trace")));
    let b = run_env(&inst, &[], Some(&wpp), &[("WPP_COMPRESS", "zip")]);
    assert_eq!(a.stdout, b.stdout);
    let stderr = String::from_utf8_lossy(&b.stderr);
    assert!(stderr.contains("WPP_COMPRESS=zip"), "{stderr}");
    assert!(!wpp.exists());
}

/// Separate compilation: `wpp cc -c` makes native objects carrying their bitcode, and a later
/// `wpp cc` link of those objects (plus a native object without bitcode, linked uninstrumented)
/// instruments the whole program.
#[test]
fn compile_only_then_link_bitcode_objects() {
    use wpp_instrument::driver::{embed, is_bitcode_file, Driver};
    let dir = Scratch::new();
    let mut d = Driver::from_env(wpp_instrument::Options::new(InstrumentMode::TraceBlocks));
    d.runtime = Some(runtime_lib());
    let obj = dir.path("recursion.o");
    let src = programs_dir().join("recursion.c").display().to_string();
    d.run(&[
        "-O1".into(),
        "-c".into(),
        src,
        "-o".into(),
        obj.display().to_string(),
    ])
    .unwrap();
    // -c makes a native object (for ar, ranlib and any linker) that carries its bitcode.
    assert!(!is_bitcode_file(&obj), "-c must produce a native object");
    let bytes = std::fs::read(&obj).unwrap();
    assert_eq!(&bytes[..4], b"\x7fELF");
    let bc = embed::object_bitcode("recursion.o", &bytes).unwrap();
    assert!(
        bc.is_some_and(|b| embed::is_bitcode(&b)),
        "no {}",
        embed::SECTION
    );
    // A native object with an unused function: linked as is.
    let native_c = dir.path("extra.c");
    std::fs::write(&native_c, "int wpp_extra(int x) { return x + 1; }\n").unwrap();
    let native_o = dir.path("extra.o");
    let st = Command::new("clang-22")
        .args([
            "-c",
            native_c.to_str().unwrap(),
            "-o",
            native_o.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(st.success());
    let exe = dir.path("prog");
    d.run(&[
        obj.display().to_string(),
        native_o.display().to_string(),
        "-o".into(),
        exe.display().to_string(),
    ])
    .unwrap();
    let native = dir.path("native");
    build_native("recursion.c", &["-O1"], &native);
    let trace = dir.path("t.trace");
    let a = run(&native, &[], None);
    let b = run(&exe, &[], Some(&trace));
    assert_eq!(a.stdout, b.stdout);
    let (db, events) = wpp_paths::trace::read_events(&trace).unwrap();
    assert!(db.find("main").is_some() && db.find("wpp_extra").is_none());
    let r = replay(&db, &events);
    assert!(r.values().all(|t| t.balanced));
}

/// A function the optimizer infers to only read memory keeps every call once instrumented
/// (the instrumenter drops such purity attributes): the loop's calls are not hoisted and the
/// call with an unused result is not deleted, in both trace modes.
#[test]
fn calls_of_pure_functions_all_reach_the_trace() {
    let dir = Scratch::new();
    for mode in [InstrumentMode::TraceBlocks, InstrumentMode::TracePaths] {
        let mut d = wpp_instrument::driver::Driver::from_env(wpp_instrument::Options::new(mode));
        d.runtime = Some(runtime_lib());
        let exe = dir.path("pure");
        let src = |f: &str| programs_dir().join(f).display().to_string();
        d.run(&[
            "-O2".into(),
            src("pure_main.c"),
            src("pure_weight.c"),
            "-o".into(),
            exe.display().to_string(),
        ])
        .unwrap();
        let trace = dir.path("t.trace");
        let out = run(&exe, &[], Some(&trace));
        let (db, events) = wpp_paths::trace::read_events(&trace).unwrap();
        let r = replay(&db, &events);
        check_counts("pure_main.c", &r[&wpp_trace::ThreadId(0)], &out.stdout);
    }
}

/// The runtime allocates from a heap of its own (`wpp_rt::heap`), never from the program's
/// `malloc`, so heap layouts, and programs that branch on heap addresses, are the same
/// recorded as native. `heap_quiet.c` counts its thread's allocation calls while it produces
/// ~15 M events, and prints the count: the raw, online and profile runs must print native's 0.
#[test]
fn runtime_leaves_the_program_heap_alone() {
    let (_, out) = single_thread("heap_quiet.c", &["-O2"], &[]);
    let out = String::from_utf8_lossy(&out);
    assert!(out.contains("during the run: 0\n"), "native run: {out}");
    let dir = Scratch::new();
    for mode in [InstrumentMode::TraceBlocks, InstrumentMode::Bl] {
        let inst = dir.path("inst");
        build_instrumented("heap_quiet.c", &["-O2"], mode, &inst);
        let online = run_env(&inst, &[], Some(&dir.path("out")), &[]);
        assert_eq!(String::from_utf8_lossy(&online.stdout), out, "{mode:?}");
    }
}
