//! `trace-addr` end to end: programs in `tests/programs` built natively and with
//! `--mode trace-addr`; the output must be identical, and the dependences recovered from the
//! address trace must be exactly the ones written here by hand (by the name of a marker
//! comment on the access's line, so the expectations do not depend on the tool).

mod common;

use common::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use wpp_deps::chain::ChainIndex;
use wpp_deps::{recover, Access, AccessKind, AtReader, MemoryDb, Writer};
use wpp_instrument::{InstrumentMode, Options};

/// Marker name → source line, from `/* NAME */` comments of the program.
fn markers(src: &str) -> BTreeMap<String, u32> {
    let text = std::fs::read_to_string(programs_dir().join(src)).expect("source");
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(c) = line.split("/* ").nth(1).and_then(|c| c.strip_suffix(" */")) {
            if c.chars().all(|ch| ch.is_ascii_uppercase() || ch == '_') {
                out.insert(c.to_string(), i as u32 + 1);
            }
        }
    }
    out
}

/// Builds and runs `src` natively and in `trace-addr`; returns the AT path (in `dir`).
fn record(src: &str, flags: &[&str], dir: &Scratch) -> PathBuf {
    let (native, inst, trace) = (dir.path("native"), dir.path("inst"), dir.path("out.trace"));
    build_native(src, flags, &native);
    build_with_options(
        src,
        flags,
        Options::new(InstrumentMode::TraceAddr),
        &inst,
        None,
    );
    let a = run(&native, &[], None);
    let b = run(&inst, &[], Some(&trace));
    assert_eq!(
        String::from_utf8_lossy(&a.stdout),
        String::from_utf8_lossy(&b.stdout)
    );
    assert_eq!(
        a.status.code(),
        b.status.code(),
        "{src}: exit status differs"
    );
    assert!(
        b.stderr.is_empty(),
        "{src}: {}",
        String::from_utf8_lossy(&b.stderr)
    );
    let (_, events) = wpp_paths::trace::read_events(&trace).expect("block trace");
    assert!(!events.is_empty());
    let mut at = trace.into_os_string();
    at.push(".at");
    at.into()
}

fn read_at(at: &Path) -> (MemoryDb, Vec<Access>) {
    let r = AtReader::open(at).expect("address trace");
    let db = r.db().clone();
    let accesses = r.flat_map(|run| run.expect("chunk").accesses).collect();
    (db, accesses)
}

/// The one instruction of `kind` on `line`.
fn only(db: &MemoryDb, line: u32, kind: AccessKind, name: &str) -> u32 {
    let ids = db.at_line("", line, kind);
    assert_eq!(
        ids.len(),
        1,
        "{name} (line {line}): {kind:?} instructions {ids:?}"
    );
    ids[0]
}

/// One expected writer: marker (None = external), its instance, bytes.
type Want = Vec<(Option<&'static str>, u64, u64)>;

/// (load marker, instance) → writers as (store id (None = external), instance, bytes).
type Writers = BTreeMap<(&'static str, u64), BTreeSet<(Option<u32>, u64, u64)>>;

#[test]
fn hand_known_dependences() {
    let dir = Scratch::new();
    let at = record("deps.c", &["-O1", "-g"], &dir);
    let (db, accesses) = read_at(&at);
    let m = markers("deps.c");
    let line = |n: &str| *m.get(n).unwrap_or_else(|| panic!("marker {n}"));
    let store = |n: &str| only(&db, line(n), AccessKind::Store, n);
    let load = |n: &str| only(&db, line(n), AccessKind::Load, n);

    // (load marker, instance) → writers, written by hand from the program's comments.
    let mut want: Vec<((&'static str, u64), Want)> = vec![
        (("L_GET", 1), vec![(Some("S_SET"), 3, 4)]),
        (("L_GET", 2), vec![(Some("S_SET"), 2, 4)]),
        (("L_GET", 3), vec![(Some("S_SET"), 4, 4)]),
        (("L_GET", 4), vec![(None, 0, 4)]),
        (("L_GET", 5), vec![(Some("S_SET"), 5, 4)]),
        (
            ("S_COPY", 1),
            vec![(Some("S_FILL_A"), 1, 4), (Some("S_FILL_B"), 1, 12)],
        ),
        (("L_READ_A", 1), vec![(Some("S_COPY"), 1, 4)]),
        (
            ("L_WORD", 1),
            (1..=4).map(|k| (Some("S_BYTE"), k, 1)).collect(),
        ),
        (("L_FRAME_A", 1), vec![(Some("S_FRAME_A"), 1, 4)]),
        (("L_FRAME_B", 1), vec![(Some("S_FRAME_B"), 1, 4)]),
    ];
    want.extend((1..=10).map(|k| (("L_SUM", k), vec![(Some("S_LOOP"), k, 4)])));
    let loads: BTreeMap<u32, &'static str> = want.iter().map(|((n, _), _)| (load(n), *n)).collect();

    let mut got = Writers::new();
    recover(
        &db,
        [Ok::<_, std::convert::Infallible>(accesses.clone())],
        |d| {
            if let Some(&name) = loads.get(&d.load.id) {
                let (s, n) = match d.store {
                    Writer::Store(s) => (Some(s.id), s.n),
                    Writer::External => (None, 0),
                };
                got.entry((name, d.load.n))
                    .or_default()
                    .insert((s, n, d.bytes));
            }
        },
    )
    .unwrap();
    let want: Writers = want
        .into_iter()
        .map(|(k, ws)| {
            (
                k,
                ws.into_iter()
                    .map(|(s, n, b)| (s.map(store), n, b))
                    .collect(),
            )
        })
        .collect();
    assert_eq!(got, want);

    // Bytes written outside the program, or never written, read as external, never as
    // scribble's stale stack bytes: va_arg's register save area, snprintf's digits, strtod's
    // end pointer, a struct's padding.
    let scribbled = line("S_SCRIBBLE");
    for marker in ["L_VA", "L_FMT", "L_END", "L_PAD"] {
        let on_line = db.at_line("", line(marker), AccessKind::Load);
        assert!(!on_line.is_empty(), "{marker}");
        let mut external = 0;
        recover(
            &db,
            [Ok::<_, std::convert::Infallible>(accesses.clone())],
            |d| {
                if on_line.contains(&d.load.id) {
                    match d.store {
                        Writer::External => external += 1,
                        Writer::Store(s) => {
                            let at = db.instructions[s.id as usize].line;
                            assert_ne!(at, scribbled, "{marker}: {d:?}");
                        }
                    }
                }
            },
        )
        .unwrap();
        assert!(external > 0, "{marker}");
    }

    // The scenarios are what they claim: calloc reused the freed block, frame_b reused
    // frame_a's stack slot.
    let addr = |id: u32, n: usize| {
        accesses
            .iter()
            .filter(|a| a.id == id)
            .nth(n - 1)
            .map(|a| a.addr)
    };
    assert_eq!(
        addr(store("S_SET"), 4),
        addr(store("S_SET"), 5),
        "calloc did not reuse the freed block"
    );
    assert_eq!(
        addr(store("S_FRAME_A"), 1),
        addr(store("S_FRAME_B"), 1),
        "frames did not share the slot"
    );

    // A chain through the struct copy goes on only to the writer of the field read (Figure
    // 21, narrowed at the copy): `s->a` of the copy came from `fill`'s `s->a = 7`, not from
    // its `memset` of `b`, which the copy also took.
    let index = ChainIndex::build(&db, [Ok::<_, std::convert::Infallible>(accesses)]).unwrap();
    let (copy, source) = (store("S_COPY"), load("S_COPY"));
    let chains: Vec<Vec<u32>> = index.chains(load("L_READ_A"), 2).into_keys().collect();
    let want = [vec![copy], vec![copy, source, store("S_FILL_A")]];
    assert_eq!(chains, want);
}

/// Per function (by name), its loads' dependences in the order they ran, as (the writing
/// store's function, `None`: external; bytes).
fn writers_by_function(at: &Path) -> BTreeMap<String, Vec<(Option<String>, u64)>> {
    let (db, accesses) = read_at(at);
    let function = |id: u32| {
        let f = db.get(id).expect("a recorded instruction").function;
        db.program.functions[f as usize].name.clone()
    };
    let mut writers: BTreeMap<String, Vec<_>> = BTreeMap::new();
    recover(&db, [Ok::<_, std::convert::Infallible>(accesses)], |d| {
        let store = match d.store {
            Writer::Store(s) => Some(function(s.id)),
            Writer::External => None,
        };
        let load = function(d.load.id);
        writers.entry(load).or_default().push((store, d.bytes));
    })
    .unwrap();
    writers
}

/// libc's own writes, by hand (`deps_libc.c`): what `qsort`, `fgets`, `getline`, `time`,
/// `clock_gettime`, `stat`, `pipe`, `gmtime_r`, `strftime`, `strdup`, `strtok`, `sscanf`,
/// `asprintf` and `strcat` wrote reads as external, never as the program's store those bytes
/// held before; where `fgets`, `stat` and `sscanf` fail and write nothing, and before the
/// bytes `strcat` appends, the load reads the program's store. (Functions, not lines, name
/// the loads: at -O1 a load may carry its branch's line.)
#[test]
fn libc_writes_read_as_external() {
    let dir = Scratch::new();
    let writers = writers_by_function(&record("deps_libc.c", &["-O1", "-g"], &dir));
    let scenarios = [
        "sorted",
        "first_line",
        "next_line",
        "now",
        "is_dir",
        "piped",
        "day",
        "year_digit",
        "duplicated",
        "token_end",
        "scanned",
        "formatted",
    ];
    for name in scenarios {
        let got = writers
            .get(name)
            .unwrap_or_else(|| panic!("{name}: no load"));
        let external: Vec<_> = got.iter().map(|&(_, bytes)| (None, bytes)).collect();
        assert_eq!(got, &external, "{name}");
    }
    let program = |name: &str, bytes| (Some(name.to_string()), bytes);
    let failed = [
        ("at_eof", vec![program("at_eof", 1)]),
        ("missing", vec![program("missing", 8)]),
        ("half_scanned", vec![(None, 4), program("half_scanned", 4)]),
        ("appended", vec![(None, 1), (None, 1), program("poke", 1)]),
    ];
    for (name, want) in failed {
        let mut got = writers.get(name).cloned().unwrap_or_default();
        got.sort();
        assert_eq!(got, want, "{name}");
    }
}

/// C++ in `trace-addr` (`deps_string.cpp`): what `std::string::operator+=` wrote, the appended
/// bytes and the new length, depends on stores in libstdc++'s own functions (`std::string`'s,
/// `std::char_traits`'), which the driver instantiates in the program instead of leaving them
/// to `libstdc++.so`.
#[test]
fn libstdcxx_templates_are_traced() {
    let dir = Scratch::new();
    let writers = writers_by_function(&record("deps_string.cpp", &["-O0", "-g"], &dir));
    // Each reader's one load of the string (its others read its own spilled arguments, at
    // -O0) depends on a function of namespace std.
    let std = |f: &str| f.starts_with("std::");
    for reader in ["at", "length"] {
        let got = writers
            .get(reader)
            .unwrap_or_else(|| panic!("{reader}: no load"));
        let string: Vec<_> = got
            .iter()
            .filter(|(w, _)| w.as_deref() != Some(reader))
            .collect();
        assert_eq!(string.len(), 1, "{reader}: {got:?}");
        let writer = string[0].0.as_deref().unwrap_or("external");
        assert!(std(writer), "{reader} <- {writer}");
    }
}

/// Threads, by hand (`threads_deps.c`): each worker's read of the value main stored for it
/// depends on main's store, written by thread 0; main's reads of the results depend on the
/// workers' stores, each by its own thread; a worker's loop reads its own stores. Threads are
/// numbered in the order they first access memory (main 0, worker `w` is `w + 1`).
#[test]
fn cross_thread_dependences_name_the_writers_thread() {
    let dir = Scratch::new();
    let at = record("threads_deps.c", &["-O1", "-g"], &dir);
    let r = AtReader::open(&at).expect("address trace");
    assert_eq!(r.threads(), 4);
    let db = r.db().clone();
    let m = markers("threads_deps.c");
    let line = |n: &str| *m.get(n).unwrap_or_else(|| panic!("marker {n}"));
    let store = |n: &str| only(&db, line(n), AccessKind::Store, n);
    let load = |n: &str| only(&db, line(n), AccessKind::Load, n);
    // (load, instance, its thread) -> (store, instance, its thread), by hand.
    let mut want = BTreeSet::new();
    for w in 1..=3u64 {
        let t = w as u32;
        want.insert(((load("L_INPUT"), w, t), (store("S_INPUT"), w, 0)));
        want.insert(((load("L_OUTPUT"), w, 0), (store("S_OUTPUT"), w, t)));
        for i in 1..=4u64 {
            let from = match i {
                1 => (store("S_ZERO"), w, t),
                _ => (store("L_SUM"), 4 * (w - 1) + i - 1, t),
            };
            want.insert(((load("L_SUM"), 4 * (w - 1) + i, t), from));
        }
    }
    let marked: BTreeSet<u32> = want.iter().map(|((l, ..), _)| *l).collect();
    let mut got = BTreeSet::new();
    let stats = recover(&db, r, |d| {
        if let (Writer::Store(s), true) = (d.store, marked.contains(&d.load.id)) {
            let store_thread = d.store_thread.expect("a store's thread");
            got.insert(((d.load.id, d.load.n, d.thread), (s.id, s.n, store_thread)));
        }
    })
    .expect("recovery");
    assert_eq!(got, want);
    assert_eq!(stats.threads, 4);
    assert_eq!(stats.cross_thread, 6, "{stats:?}");
}

/// A program that starts threads is refused by the eWPP modes at instrumentation, with a
/// clear message.
#[test]
fn threaded_programs_are_refused() {
    let ctx = inkwell::context::Context::create();
    let dir = Scratch::new();
    let bc = dir.path("t.bc");
    let st = std::process::Command::new("clang-22")
        .args(["-c", "-emit-llvm", "-O1", "-o"])
        .arg(&bc)
        .arg(programs_dir().join("threads.c"))
        .status()
        .expect("clang-22");
    assert!(st.success());
    let module = wpp_instrument::read_bitcode(&ctx, &bc).unwrap();
    for mode in [InstrumentMode::Ewpp, InstrumentMode::EwppFilter] {
        let e = wpp_instrument::instrument_module(&module, &Options::new(mode))
            .unwrap_err()
            .to_string();
        let says = format!(
            "unsupported program: {} records single-threaded programs only",
            mode.name()
        );
        assert!(e.starts_with(&says), "{e}");
    }
}

/// Every mode but PPP has its final compile generate code only, so `wpp cc` inlines the
/// probes' helpers itself: none is left in the module it hands to clang. PPP leaves them to
/// clang's `-O2` (`wpp_instrument::finish`). (BL's probes have no helpers to tell by.)
#[test]
fn the_final_compile_gets_the_probes_inlined_except_in_ppp() {
    let dir = Scratch::new();
    for (mode, inlined) in [
        (InstrumentMode::TraceAddr, true),
        (InstrumentMode::EwppFilter, true),
        (InstrumentMode::TraceBlocks, true),
        (InstrumentMode::Ppp, false),
    ] {
        let keep = dir.path(mode.name());
        std::fs::create_dir_all(&keep).unwrap();
        build_instrumented_keep(
            "deps_libc.c",
            &["-O1"],
            mode,
            &keep.join("prog"),
            Some(&keep),
        );
        let ctx = inkwell::context::Context::create();
        let module = wpp_instrument::read_bitcode(&ctx, &keep.join("instrumented.bc")).unwrap();
        let helpers: Vec<_> = module
            .get_functions()
            .filter(|f| f.count_basic_blocks() > 0)
            .map(|f| f.get_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("__wpp_"))
            .collect();
        assert_eq!(helpers.is_empty(), inlined, "{mode:?}: {helpers:?}");
    }
}

/// Every test program behaves exactly as natively in `trace-addr` (output, exit status;
/// `deps_heap.c`: heap layout), and leaves an address trace that reads to its end record and
/// replays. Programs that leave through `longjmp`, exceptions, `exit` from deep frames,
/// `fork`, `_exit` and `exec` (which run no `atexit` handler) included, and programs whose
/// threads run at once (`threads_count.c`) or start through libstdc++ (`std_thread.cpp`, whose main
/// reads what its thread wrote: a cross-thread dependence).
#[test]
fn programs_run_unchanged_and_leave_readable_address_traces() {
    let programs: [(&str, &[&str]); 11] = [
        ("threads_count.c", &[]),
        ("std_thread.cpp", &[]),
        ("deps_heap.c", &[]),
        ("recursion.c", &[]),
        ("longjmp.c", &[]),
        ("exceptions.cpp", &[]),
        ("computed_goto.c", &[]),
        ("fork.c", &[]),
        ("exit_deep.c", &["exit"]),
        ("exits.c", &["_exit"]),
        ("exits.c", &["execl"]),
    ];
    for (src, args) in programs {
        let dir = Scratch::new();
        let (native, inst, trace) = (dir.path("native"), dir.path("inst"), dir.path("out.trace"));
        build_native(src, &["-O1"], &native);
        let opts = Options::new(InstrumentMode::TraceAddr);
        build_with_options(src, &["-O1"], opts, &inst, None);
        let a = run(&native, args, None);
        let b = run(&inst, args, Some(&trace));
        assert_eq!(
            String::from_utf8_lossy(&a.stdout),
            String::from_utf8_lossy(&b.stdout),
            "{src}"
        );
        assert_eq!(a.status.code(), b.status.code(), "{src}: exit status");
        let mut at = trace.into_os_string();
        at.push(".at");
        let r = AtReader::open(Path::new(&at)).unwrap_or_else(|e| panic!("{src}: {e}"));
        let db = r.db().clone();
        let stats = recover(&db, r, |_| {}).unwrap_or_else(|e| panic!("{src}: {e}"));
        assert!(stats.loads > 0 && stats.stores > 0, "{src}: {stats:?}");
        let threads = match src {
            "threads_count.c" => 5,
            "std_thread.cpp" => 2,
            _ => 1,
        };
        assert_eq!(stats.threads, threads, "{src}: {stats:?}");
        if src == "std_thread.cpp" {
            assert!(stats.cross_thread > 0, "{src}: {stats:?}");
        }
        if src == "threads_count.c" {
            // Each worker's thread-local counters: `thirds` is incremented 333,334 times,
            // `odds` 500,000 times, and both are read once more for the result; every read but
            // the first of each depends on the same thread's last store. External: those 8
            // first reads, and main's 4 reads each of `t[i]` and `r`, written by libc.
            assert_eq!(stats.dependences, 4 * (333_333 + 499_999 + 2), "{stats:?}");
            assert_eq!(stats.external, 8 + 8, "{stats:?}");
            assert_eq!(stats.cross_thread, 0, "{stats:?}");
        }
    }
}

/// The eCF (Tallam–Gupta §2–3) built from `deps.c`'s recording and its own filter report:
/// recovery from it (§5) gives exactly the store → load instances the AT recovery gives.
#[test]
fn ecf_recovery_equals_address_trace_recovery() {
    let dir = Scratch::new();
    let at = record("deps.c", &["-O1", "-g"], &dir);
    let (_, events) = wpp_paths::trace::read_events(dir.path("out.trace")).expect("block trace");
    let (db, accesses) = read_at(&at);
    let ok = || [Ok::<_, std::convert::Infallible>(accesses.clone())];
    let report = wpp_deps::filter::classify(&db, ok()).expect("filter");
    let mut want = BTreeSet::new();
    recover(&db, ok(), |d| {
        if let Writer::Store(s) = d.store {
            want.insert((s, d.load));
        }
    })
    .expect("AT recovery");
    let ecf = wpp_deps::ecf::build(&db, &events, ok(), &report).expect("eCF");
    let mut got = BTreeSet::new();
    wpp_deps::ecf::recover(&db, &ecf.events, |d| {
        assert!(!d.unexpected, "{d:?}: the report is this run's");
        assert!(got.insert((d.store, d.load)), "{d:?} twice");
    })
    .expect("eCF recovery");
    assert!(!want.is_empty());
    assert_eq!(got, want);
    assert_eq!(ecf.stats.dependences, want.len() as u64);
}

/// The eCF on programs with recursion, exceptions, computed gotos, heap reuse and `longjmp`
/// (frames left half-way, a `setjmp` block resumed: `wpp_deps::ecf`, "Alignment of a
/// recording"): recovery equals the AT's.
#[test]
fn ecf_on_other_programs_is_exact() {
    for src in [
        "deps_heap.c",
        "recursion.c",
        "exceptions.cpp",
        "computed_goto.c",
        "longjmp.c",
    ] {
        let dir = Scratch::new();
        let (inst, trace) = (dir.path("inst"), dir.path("out.trace"));
        let opts = Options::new(InstrumentMode::TraceAddr);
        build_with_options(src, &["-O1"], opts, &inst, None);
        run(&inst, &[], Some(&trace));
        let (_, events) = wpp_paths::trace::read_events(&trace).expect("block trace");
        let mut at = trace.into_os_string();
        at.push(".at");
        let (db, accesses) = read_at(Path::new(&at));
        let ok = || [Ok::<_, std::convert::Infallible>(accesses.clone())];
        let report = wpp_deps::filter::classify(&db, ok()).expect("filter");
        let built = wpp_deps::ecf::build(&db, &events, ok(), &report)
            .unwrap_or_else(|e| panic!("{src}: {e}"));
        let mut want = BTreeSet::new();
        recover(&db, ok(), |d| {
            if let Writer::Store(s) = d.store {
                want.insert((s, d.load));
            }
        })
        .expect("AT recovery");
        let mut got = BTreeSet::new();
        wpp_deps::ecf::recover(&db, &built.events, |d| {
            got.insert((d.store, d.load));
        })
        .unwrap_or_else(|e| panic!("{src}: {e}"));
        assert!(!want.is_empty(), "{src}");
        assert_eq!(got, want, "{src}");
    }
}

/// The accesses an address trace holds, and the reader's error at its end (a file without its
/// end record: a killed run's).
fn at_accesses(at: &Path) -> (usize, Option<String>) {
    let (mut accesses, mut ended) = (0, None);
    for run in AtReader::open(at).unwrap() {
        match run {
            Ok(r) => accesses += r.accesses.len(),
            Err(e) => ended = Some(e.to_string()),
        }
    }
    (accesses, ended)
}

/// A program that dies of a signal keeps, in its address trace, every access it made: the
/// buffers handed to the writer thread and what the threads' buffers hold
/// (`crash_accesses.c` makes 400,000 stores, 49 buffers, the last one partial). The file has
/// no end record: the reader stops with the truncation after the accesses it holds.
#[test]
fn a_fatal_signal_keeps_every_access() {
    let dir = Scratch::new();
    let (inst, trace) = (dir.path("inst"), dir.path("out.trace"));
    let opts = Options::new(InstrumentMode::TraceAddr);
    build_with_options("crash_accesses.c", &["-O1"], opts, &inst, None);
    let out = run(&inst, &[], Some(&trace));
    assert!(out.status.code().is_none(), "dies of its signal");
    let mut at = trace.into_os_string();
    at.push(".at");
    let (accesses, ended) = at_accesses(Path::new(&at));
    assert_eq!(accesses, 400_001, "the stores and the load of `stdout`");
    assert!(ended.is_some(), "no end record after a fatal signal");
}

/// `kill -9` of a program sleeping after its accesses: the periodic flush has handed the
/// threads' partial buffers to the writer, so the address trace holds every access (it
/// held only the whole buffers, 48 of 49, before).
#[test]
fn a_killed_program_keeps_the_accesses_before_the_last_flush() {
    use std::io::BufRead;
    let dir = Scratch::new();
    let (inst, trace) = (dir.path("inst"), dir.path("out.trace"));
    let opts = Options::new(InstrumentMode::TraceAddr);
    build_with_options("crash_accesses.c", &["-O1"], opts, &inst, None);
    let mut child = std::process::Command::new(&inst)
        .arg("sleep")
        .env("WPP_RAW", "1")
        .env("WPP_QUIET", "1")
        .env("WPP_OUT", &trace)
        .env("WPP_FLUSH_SECONDS", "0.05")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "stored 400000\n");
    let mut at = trace.into_os_string();
    at.push(".at");
    // Until the flushes have written every access, or 20 s (400 intervals) on a loaded machine.
    let on_disk = || {
        AtReader::open(Path::new(&at)).map_or(0, |r| {
            r.filter_map(Result::ok).map(|r| r.accesses.len()).sum()
        })
    };
    for _ in 0..400 {
        if on_disk() >= 400_002 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let (accesses, ended) = at_accesses(Path::new(&at));
    assert_eq!(
        accesses, 400_002,
        "the stores, the loads of `stdout` and `argv[1]`"
    );
    assert!(ended.is_some(), "no end record after a kill");
}

/// The store → load dependences of an address trace, and its filtering report.
fn at_truth(
    at: &Path,
) -> (
    BTreeSet<(wpp_deps::Instance, wpp_deps::Instance)>,
    wpp_deps::filter::FilterReport,
) {
    let (db, accesses) = read_at(at);
    let ok = || [Ok::<_, std::convert::Infallible>(accesses.clone())];
    let mut want = BTreeSet::new();
    recover(&db, ok(), |d| {
        if let Writer::Store(s) = d.store {
            want.insert((s, d.load));
        }
    })
    .expect("AT recovery");
    (want, wpp_deps::filter::classify(&db, ok()).expect("filter"))
}

/// The collection run (`--mode ewpp`, Tallam–Gupta §3) against the ground truth: each program
/// is recorded with `trace-addr`, filtered, then built with `ewpp --exercised` (its report
/// missing every third pair, which the collection must still record, marked unexpected) and
/// run natively, raw and to a `.wpp`. The output and exit status are the native ones, and the
/// dependences recovered from the eCF alone, raw and `.wpp`, are exactly the address trace's,
/// instance by instance — `longjmp` (blocks left half-way), recursion, exceptions, `exit` from
/// deep frames and `fork` (the parent's recording) included.
#[test]
fn collection_equals_address_trace_recovery() {
    let programs: [(&str, &[&str], &[&str]); 9] = [
        ("deps.c", &["-O1", "-g"], &[]),
        ("deps_libc.c", &["-O1", "-g"], &[]),
        ("deps_heap.c", &["-O1"], &[]),
        ("recursion.c", &["-O1"], &[]),
        ("longjmp.c", &["-O1"], &[]),
        ("exceptions.cpp", &["-O1"], &[]),
        ("computed_goto.c", &["-O1"], &[]),
        ("exit_deep.c", &["-O1"], &["exit"]),
        ("fork.c", &["-O1"], &[]),
    ];
    for (src, flags, args) in programs {
        let dir = Scratch::new();
        let (addr, trace) = (dir.path("addr"), dir.path("addr.trace"));
        build_with_options(
            src,
            flags,
            Options::new(InstrumentMode::TraceAddr),
            &addr,
            None,
        );
        run(&addr, args, Some(&trace));
        let mut at = trace.into_os_string();
        at.push(".at");
        let (want, mut report) = at_truth(Path::new(&at));
        assert!(!want.is_empty(), "{src}");
        let mut i = 0;
        report.pairs.retain(|_| {
            i += 1;
            i % 3 != 0
        });
        let exercised: BTreeSet<(u32, u32)> =
            report.pairs.iter().map(|p| (p.store, p.load)).collect();
        let (native, ewpp) = (dir.path("native"), dir.path("ewpp"));
        build_native(src, flags, &native);
        let mut opts = Options::new(InstrumentMode::Ewpp);
        opts.exercised = Some(report);
        build_with_options(src, flags, opts, &ewpp, None);
        let a = run(&native, args, None);
        // Distinct stems: the `.wpp` run spools to `e.trace`, which its finisher removes.
        let (raw, wpp) = (dir.path("raw.trace"), dir.path("e.wpp"));
        for (out, env) in [(&raw, &[("WPP_RAW", "1")][..]), (&wpp, &[][..])] {
            let b = run_env(&ewpp, args, Some(out), env);
            let stdout = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).into_owned();
            assert_eq!(stdout(&a), stdout(&b), "{src}");
            assert_eq!(a.status.code(), b.status.code(), "{src}: exit status");
        }
        for file in [&raw, &wpp] {
            let (program, events) = match file == &wpp {
                false => wpp_paths::trace::read_events(file)
                    .unwrap_or_else(|e| panic!("{src}: {}: {e}", file.display())),
                true => {
                    let w = wpp_grammar::file::WppFile::read(file).expect("eWPP");
                    let g = &w.grammar;
                    let alphabet = w.alphabet.events();
                    let events = wpp_grammar::expand::Expander::new(g, g.starts()[0].rule)
                        .map(|t| alphabet[t.index()])
                        .collect();
                    (w.program, events)
                }
            };
            let db = wpp_deps::ecf::memory_db(&program)
                .expect("memory table")
                .expect("an eWPP");
            let mut got = BTreeSet::new();
            wpp_deps::ecf::recover(&db, &events, |d| {
                assert_eq!(
                    d.unexpected,
                    !exercised.contains(&(d.store.id, d.load.id)),
                    "{src}: {d:?}"
                );
                assert!(got.insert((d.store, d.load)), "{src}: {d:?} twice");
            })
            .unwrap_or_else(|e| panic!("{src}: {e}"));
            assert_eq!(got, want, "{src}: {}", file.display());
        }
        each_load_from_the_grammar(src, &wpp, &want);
    }
}

/// A thread the instrumenter cannot see (`pthread_create` found with `dlsym`) is refused by
/// the collection run when it runs instrumented code: the program's output and exit status
/// are the native ones, stderr says why, and the eCF keeps what main recorded before the
/// thread started, without its end record: every dependence recovered from it is one of the
/// address trace's of main alone (the same accesses, no thread).
#[test]
fn a_thread_started_unseen_ends_the_ecf_without_a_wrong_dependence() {
    let src = "dlsym_thread.c";
    let dir = Scratch::new();
    let (addr, trace) = (dir.path("addr"), dir.path("addr.trace"));
    build_with_options(
        src,
        &["-O1"],
        Options::new(InstrumentMode::TraceAddr),
        &addr,
        None,
    );
    run(&addr, &["alone"], Some(&trace));
    let mut at = trace.into_os_string();
    at.push(".at");
    let (want, report) = at_truth(Path::new(&at));
    let (native, ewpp) = (dir.path("native"), dir.path("ewpp"));
    build_native(src, &["-O1"], &native);
    let mut opts = Options::new(InstrumentMode::Ewpp);
    opts.exercised = Some(report);
    build_with_options(src, &["-O1"], opts, &ewpp, None);
    let ecf = dir.path("ecf.trace");
    let a = run(&native, &[], None);
    let b = run_env(&ewpp, &[], Some(&ecf), &[("WPP_RAW", "1")]);
    assert_eq!(a.stdout, b.stdout);
    assert_eq!(a.status.code(), b.status.code());
    let stderr = String::from_utf8_lossy(&b.stderr);
    assert!(
        stderr.contains("a second thread") && stderr.contains("the eWPP stops here"),
        "{stderr}"
    );
    let mut reader = wpp_paths::trace::open(&ecf).unwrap().allow_truncated(true);
    let events: Vec<_> = reader.by_ref().map(|e| e.unwrap()).collect();
    assert!(
        reader.truncation().is_some(),
        "the eCF must not end as if whole"
    );
    let db = wpp_deps::ecf::memory_db(reader.program()).unwrap().unwrap();
    let mut got = 0;
    let _ = wpp_deps::ecf::recover(&db, &events, |d| {
        assert!(want.contains(&(d.store, d.load)), "{d:?}");
        got += 1;
    });
    assert!(
        got > 100_000,
        "main's batches before the thread are kept: {got}"
    );
}

/// Each load's dependences recovered from the eWPP's grammar alone, the rules without its
/// checks summarized (`wpp_deps::ecf::rules`), are the address trace's for that load.
fn each_load_from_the_grammar(
    src: &str,
    wpp: &Path,
    want: &BTreeSet<(wpp_deps::Instance, wpp_deps::Instance)>,
) {
    let w = wpp_grammar::file::WppFile::read(wpp).expect("eWPP");
    let db = wpp_deps::ecf::memory_db(&w.program).unwrap().unwrap();
    let start = w.grammar.starts()[0].rule;
    let loads = (0..db.instructions.len() as u32)
        .filter(|&u| db.instructions[u as usize].kind == AccessKind::Load);
    for u in loads {
        let mut got = BTreeSet::new();
        let alphabet = w.alphabet.events();
        wpp_deps::ecf::rules::recover_loads(&db, &w.grammar, alphabet, start, &[u], |d| {
            assert!(got.insert((d.store, d.load)), "{src}: {d:?} twice");
        })
        .unwrap_or_else(|e| panic!("{src}: load {u}: {e}"));
        let want_u: BTreeSet<_> = want.iter().filter(|(_, l)| l.id == u).copied().collect();
        assert_eq!(got, want_u, "{src}: load {u}");
    }
}

/// A report of another program is not this module's: it is built as if no pair were
/// exercised, and the report says why (the driver prints it as a warning).
#[test]
fn a_foreign_report_exercises_nothing() {
    let dir = Scratch::new();
    let at = record("deps.c", &["-O1", "-g"], &dir);
    let (_, report) = at_truth(&at);
    let ctx = inkwell::context::Context::create();
    let bc = dir.path("r.bc");
    let st = std::process::Command::new("clang-22")
        .args(["-c", "-emit-llvm", "-O1", "-o"])
        .arg(&bc)
        .arg(programs_dir().join("recursion.c"))
        .status()
        .expect("clang-22");
    assert!(st.success());
    let module = wpp_instrument::read_bitcode(&ctx, &bc).unwrap();
    let mut opts = Options::new(InstrumentMode::Ewpp);
    opts.exercised = Some(report);
    let r = wpp_instrument::instrument_module(&module, &opts).unwrap();
    let why = r.foreign_report.expect("the report is not this program's");
    assert!(why.contains("report is of another program"), "{why}");
}

/// `--mode ewpp-filter`: the program classifies its own accesses as it runs and writes the
/// report at exit, equal to the offline filtering (`wpp_deps::filter::classify`) of a
/// `trace-addr` recording of the same run; an `ewpp` build given it meets no unexpected pair.
#[test]
fn filtering_run_equals_the_filtering_of_an_address_trace() {
    for src in ["deps.c", "recursion.c"] {
        let dir = Scratch::new();
        let at = record(src, &["-O1", "-g"], &dir);
        let (_, want) = at_truth(&at);
        let (filter, report) = (dir.path("filter"), dir.path("f.depf"));
        let opts = Options::new(InstrumentMode::EwppFilter);
        build_with_options(src, &["-O1", "-g"], opts, &filter, None);
        let r = run(&filter, &[], Some(&report));
        assert!(
            r.stderr.is_empty(),
            "{src}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        let bytes = std::fs::read(&report).unwrap_or_else(|e| panic!("{src}: {e}"));
        let got = wpp_deps::filter::FilterReport::from_bytes(&bytes, "f.depf").unwrap();
        assert!(!got.pairs.is_empty(), "{src}");
        assert_eq!(got, want, "{src}");

        let (ewpp, trace) = (dir.path("ewpp"), dir.path("e.trace"));
        let mut opts = Options::new(InstrumentMode::Ewpp);
        opts.exercised = Some(got);
        build_with_options(src, &["-O1", "-g"], opts, &ewpp, None);
        run(&ewpp, &[], Some(&trace));
        let (program, events) = wpp_paths::trace::read_events(&trace).expect("eCF");
        let db = wpp_deps::ecf::memory_db(&program).unwrap().unwrap();
        let mut n = 0;
        wpp_deps::ecf::recover(&db, &events, |d| {
            assert!(!d.unexpected, "{src}: {d:?}");
            n += 1;
        })
        .unwrap();
        assert!(n > 0, "{src}");
    }
}
