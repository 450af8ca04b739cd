//! `wpp deps` end to end on a hand-made address trace whose dependences and chains are known
//! by construction, and on damaged files (a clear error, exit status 1, never a panic).

use std::process::Command;
use wpp_deps::at::{Access, AtWriter};
use wpp_deps::{AccessKind, MemInstr, MemoryDb};
use wpp_trace::{Function, ProgramDb};

fn wpp(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_wpp"))
        .args(args)
        .output()
        .expect("the wpp binary runs");
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), s(&out.stdout), s(&out.stderr))
}

fn instr(kind: AccessKind, line: u32) -> MemInstr {
    MemInstr {
        function: 0,
        block: 0,
        line,
        column: 1,
        file: wpp_deps::memdb::NO_FILE,
        kind,
        what: format!("{kind:?}"),
    }
}

/// `x = 5` (store 0, line 10); `y = x` (load 1 then store 2, line 11); `z = y` (load 3,
/// line 12), twice, the second time with `x` overwritten by a library (external).
fn sample() -> Vec<u8> {
    sample_with(Vec::new())
}

/// [`sample`] with `more` accesses at its end.
fn sample_with(more: Vec<Access>) -> Vec<u8> {
    sample_named("f", more)
}

/// [`sample_with`] with its function named `name`.
fn sample_named(name: &str, more: Vec<Access>) -> Vec<u8> {
    let db = sample_db(name);
    let a = |id, addr| Access { id, addr, size: 4 };
    let run = [
        a(0, 100),
        a(1, 100),
        a(2, 200),
        a(3, 200),
        a(4, 100),
        a(1, 100),
        a(2, 200),
        a(3, 200),
    ];
    let mut w = AtWriter::new(Vec::new(), &postcard::to_allocvec(&db).unwrap()).unwrap();
    w.chunk(run[..3].iter().copied()).unwrap();
    w.chunk(run[3..].iter().copied().chain(more)).unwrap();
    w.finish().unwrap()
}

/// [`sample`]'s memory instructions, in a function named `name`.
fn sample_db(name: &str) -> MemoryDb {
    MemoryDb {
        version: wpp_deps::memdb::MEMORY_DB_VERSION,
        program: ProgramDb {
            functions: vec![Function {
                name: name.into(),
                file: Some("t.c".into()),
                ..Function::default()
            }],
            ..ProgramDb::default()
        },
        instructions: vec![
            instr(AccessKind::Store, 10),
            instr(AccessKind::Load, 11),
            instr(AccessKind::Store, 11),
            instr(AccessKind::Load, 12),
            instr(AccessKind::Clobber, 13),
        ],
        files: Vec::new(),
    }
}

#[test]
fn list_stats_chain_and_filter_give_the_known_answers() {
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join("t.at");
    std::fs::write(&at, sample()).unwrap();
    let at = at.to_str().unwrap();

    let (code, out, err) = wpp(&["deps", "list", at, "--load", "t.c:12", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let got: Vec<(u64, u32, u64)> = out
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let s = &v["store"];
            (
                v["load"]["instance"].as_u64().unwrap(),
                s["id"].as_u64().unwrap() as u32,
                s["instance"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, vec![(1, 2, 1), (2, 2, 2)]);
    // A line without loads says what it has, or where the loads are (trial 34 G9).
    for (line, said) in [
        ("t.c:10", "line 10 has stores only: #0 f:10:1"),
        (
            "t.c:13",
            "no load at line 13; the nearest lines with loads are 12",
        ),
        (
            "t.c:9999",
            "no load at line 9999; the nearest lines with loads are 12",
        ),
        (
            "t.c:5",
            "no load at line 5; the nearest lines with loads are 11",
        ),
        ("u.c:11", "no source file of the program ends with `u.c`"),
    ] {
        let (code, _, err) = wpp(&["deps", "list", at, "--load", line]);
        assert_eq!(code, Some(1), "{err}");
        assert!(err.contains(said), "{line}: {err}");
    }

    // A load that did not run: no dependence, and a word why (trial 35 H12).
    let short = dir.path().join("short.at");
    let db = postcard::to_allocvec(&sample_db("f")).unwrap();
    let mut w = AtWriter::new(Vec::new(), &db).unwrap();
    let a = |id, addr| Access { id, addr, size: 4 };
    w.chunk([a(0, 100), a(1, 100)].into_iter()).unwrap();
    std::fs::write(&short, w.finish().unwrap()).unwrap();
    let (code, out, err) = wpp(&["deps", "list", short.to_str().unwrap(), "--load", "3"]);
    assert_eq!((code, out.as_str()), (Some(0), ""), "{err}");
    assert!(
        err.contains("no dependence of 3 was recorded: the load did not run"),
        "{err}"
    );

    let (_, out, _) = wpp(&["deps", "list", at, "--load", "1"]);
    assert_eq!(out.lines().count(), 2);
    assert!(
        out.lines()
            .nth(1)
            .unwrap()
            .ends_with("<- external [4 bytes at +0]"),
        "{out}"
    );

    let (code, out, _) = wpp(&["deps", "stats", at, "--json"]);
    assert_eq!(code, Some(0));
    let s: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (
            s["loads"].as_u64(),
            s["stores"].as_u64(),
            s["dependences"].as_u64(),
            s["external"].as_u64()
        ),
        (Some(4), Some(3), Some(3), Some(1))
    );

    // z's load reads y's store twice; y's statement read x's store only the first time.
    let (code, out, _) = wpp(&["deps", "chain", at, "--load", "3", "--depth", "2", "--json"]);
    assert_eq!(code, Some(0));
    let c: serde_json::Value = serde_json::from_str(&out).unwrap();
    let chains: Vec<(Vec<u64>, u64)> = c
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["chain"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_u64().unwrap())
                    .collect(),
                c["frequency"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(chains, vec![(vec![2], 2), (vec![2, 1, 0], 1)]);
    // As text, each end with its id.
    let (code, out, _) = wpp(&["deps", "chain", at, "--load", "3", "--depth", "2"]);
    assert_eq!(code, Some(0));
    let want = "         1  #3 f:12:1 <- #2 f:11:1 <- #1 f:11:1 <- #0 f:10:1";
    assert!(out.lines().any(|l| l == want), "{out}");
    let (code, _, err) = wpp(&["deps", "chain", at, "--load", "3", "--depth", "0"]);
    assert_eq!(code, Some(2), "{err}");

    let report = dir.path().join("t.depf");
    let (code, out, err) = wpp(&["deps", "filter", at, "-o", report.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.lines().any(|l| l.starts_with("total")), "{out}");
    let r = wpp_deps::filter::FilterReport::from_bytes(&std::fs::read(&report).unwrap(), "t.depf")
        .unwrap();
    let classes: Vec<_> = r.pairs.iter().map(|p| (p.store, p.load, p.class)).collect();
    use wpp_deps::filter::Class::*;
    assert_eq!(classes, vec![(0, 1, PartiallyFree), (2, 3, FullyFree)]);
    // The report alone holds no program: its total and no rows of unknown functions.
    let (code, out, err) = wpp(&["deps", "filter", report.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    let rows: Vec<&str> = out.lines().skip(1).collect();
    assert!(rows.len() == 1 && rows[0].starts_with("total"), "{out}");
}

#[test]
fn damaged_address_traces_give_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let good = sample();
    // A file cut short (a killed program): its complete accesses, with a warning.
    let p = dir.path().join("cut.at");
    std::fs::write(&p, &good[..good.len() - 5]).unwrap();
    let (code, out, err) = wpp(&["deps", "stats", p.to_str().unwrap(), "--json"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.starts_with("wpp: warning: ") && err.contains("cut.at") && err.contains("truncated"),
        "{err}"
    );
    let s: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        s["loads"].as_u64(),
        Some(4),
        "every access was in a whole chunk"
    );
    for (name, bytes) in [
        ("flipped", {
            let mut b = good.clone();
            let n = b.len();
            b[n - 20] ^= 0x55;
            b
        }),
        ("empty", Vec::new()),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, &bytes).unwrap();
        let (code, _, err) = wpp(&["deps", "stats", p.to_str().unwrap()]);
        assert_eq!(code, Some(1), "{name}: {err}");
        assert!(
            err.starts_with("wpp: error: ") && !err.contains("panicked"),
            "{name}: {err}"
        );
        assert!(
            err.contains(name) || err.contains("not an address trace"),
            "{name}: {err}"
        );
    }
    let (code, _, err) = wpp(&["deps", "list", "/nonexistent.at"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("/nonexistent.at"), "{err}");
    // Every verb gives the input layer's errors for a folder and an empty file (trial 34 G11:
    // `filter` called them "not an address trace").
    let empty = dir.path().join("empty");
    let folder = dir.path().to_str().unwrap();
    for verb in ["list", "stats", "filter", "chain"] {
        for (file, said) in [(folder, "is a directory"), ("/dev/null", "is empty")] {
            let mut args = vec!["deps", verb, file];
            if verb == "chain" {
                args.extend(["--load", "0"]);
            }
            let (code, _, err) = wpp(&args);
            assert_eq!(code, Some(1), "{verb} {file}: {err}");
            assert!(err.contains(said), "{verb} {file}: {err}");
        }
    }
    let (code, _, err) = wpp(&["deps", "filter", empty.to_str().unwrap()]);
    assert!(code == Some(1) && err.contains("is empty"), "{err}");
    // A missing file is not called an address trace, and its error is said once (trial E9).
    let (code, _, err) = wpp(&["deps", "list", "/nonexistent.wpp"]);
    assert_eq!(code, Some(1));
    assert!(!err.contains("address trace"), "{err}");
    assert_eq!(err.matches("No such file").count(), 1, "{err}");

    // A store of 2 GiB would take 16 GiB of last-writer table; a clobber of all memory
    // clears it (no allocation), and is taken.
    let wide = |id, size| Access {
        id,
        addr: 4096,
        size,
    };
    let p = dir.path().join("wide.at");
    std::fs::write(
        &p,
        sample_with(vec![wide(4, u64::MAX - 4096), wide(0, 1 << 31)]),
    )
    .unwrap();
    let (code, _, err) = wpp(&["deps", "stats", p.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("access 9: instruction 0 accesses 2147483648 bytes at once"),
        "{err}"
    );
}

/// `wpp deps ecf`: store 0 (block 0) then load 1 (block 1) of one address, twice: two
/// fixed-cost checks, and the eCF is a block trace naming `__wpp_check`. A block trace of
/// another run is refused with the event where it stops fitting.
#[test]
fn ecf_is_written_and_a_mismatched_trace_is_refused() {
    use wpp_trace::{BlockId, Event, FunctionId};
    let dir = tempfile::tempdir().unwrap();
    let mut s = instr(AccessKind::Store, 1);
    let mut l = instr(AccessKind::Load, 2);
    (s.block, l.block) = (0, 1);
    let program = ProgramDb {
        functions: vec![Function {
            name: "f".into(),
            ..Function::default()
        }],
        ..ProgramDb::default()
    };
    let db = MemoryDb {
        version: wpp_deps::memdb::MEMORY_DB_VERSION,
        program: program.clone(),
        instructions: vec![s, l],
        files: Vec::new(),
    };
    let mut w = AtWriter::new(Vec::new(), &postcard::to_allocvec(&db).unwrap()).unwrap();
    let a = |id| Access {
        id,
        addr: 64,
        size: 4,
    };
    w.chunk([a(0), a(1), a(0), a(1)].into_iter()).unwrap();
    let at = dir.path().join("t.at");
    std::fs::write(&at, w.finish().unwrap()).unwrap();
    let write_trace_of = |program: &ProgramDb, name: &str, blocks: &[u32]| {
        let p = dir.path().join(name);
        let mut t = wpp_trace::file::create(&p, wpp_trace::Format::Binary, program).unwrap();
        t.push(Event::Enter(FunctionId(0))).unwrap();
        for &b in blocks {
            t.push(Event::Block(BlockId(b))).unwrap();
        }
        t.push(Event::Leave).unwrap();
        t.finish().unwrap();
        p.to_str().unwrap().to_string()
    };
    let write_trace = |name: &str, blocks: &[u32]| write_trace_of(&program, name, blocks);
    let good = write_trace("t.trace", &[0, 1, 0, 1]);
    let out = dir.path().join("e.trace");
    let (o, e) = (out.to_str().unwrap(), at.to_str().unwrap());
    let (code, stdout, err) = wpp(&["deps", "ecf", e, &good, "-o", o]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        stdout.contains("2 dependences checked (2 fixed-cost, 0 predicted, 0 unexpected)"),
        "{stdout}"
    );
    let (p, events) = wpp_paths::trace::read_events(&out).unwrap();
    assert_eq!(p.functions[1].name, "__wpp_check");
    assert_eq!(events.len(), 6 + 2 * 5);
    // The block trace as a default run leaves it, a `.wpp`, gives the same eCF (trial D20).
    let (good_wpp, from_wpp) = (dir.path().join("t.wpp"), dir.path().join("w.trace"));
    let (gw, fw) = (good_wpp.to_str().unwrap(), from_wpp.to_str().unwrap());
    let (code, _, err) = wpp(&["compress", &good, "-o", gw]);
    assert_eq!(code, Some(0), "{err}");
    let (code, again, err) = wpp(&["deps", "ecf", e, gw, "-o", fw]);
    assert_eq!((code, again), (Some(0), stdout), "{err}");
    assert_eq!(wpp_paths::trace::read_events(&from_wpp).unwrap().1, events);
    let bad = write_trace("bad.trace", &[0, 0, 1]);
    let (code, _, err) = wpp(&["deps", "ecf", e, &bad, "-o", o]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("block trace event 3: the block ends before its memory instruction 0"),
        "{err}"
    );
    // Another program's trace is said to be one (trial 34 G10), before any event is compared.
    let mut other = program.clone();
    other.functions[0].name = "g".into();
    let other = write_trace_of(&other, "other.trace", &[0, 1, 0, 1]);
    let (code, _, err) = wpp(&["deps", "ecf", e, &other, "-o", o]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("are recordings of different programs or builds: function 0 is `g`"),
        "{err}"
    );

    // The eCF reads like an eWPP, raw and compressed: the AT's dependences on stores.
    let strip = |s: String| -> Vec<String> {
        s.lines()
            .filter(|l| !l.contains("<- external"))
            .map(|l| l.split(" [").next().unwrap().to_string())
            .collect()
    };
    let (code, want, err) = wpp(&["deps", "list", e]);
    assert_eq!(code, Some(0), "{err}");
    let want = strip(want);
    assert_eq!(want.len(), 2);
    let (code, got, err) = wpp(&["deps", "list", o]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(strip(got), want);
    let wpp_file = dir.path().join("e.wpp");
    let w = wpp_file.to_str().unwrap();
    let (code, _, err) = wpp(&["compress", o, "-o", w]);
    assert_eq!(code, Some(0), "{err}");
    let (code, got, err) = wpp(&["deps", "list", w]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(strip(got), want);
    let (code, stats, err) = wpp(&["deps", "stats", w]);
    assert_eq!(code, Some(0), "{err}");
    assert!(stats.contains("dependences          2"), "{stats}");
    // As `wpp deps ecf` counted them when it wrote the checks.
    assert!(stats.contains("fixed-cost           2"), "{stats}");
    assert!(stats.contains("predicted            0"), "{stats}");
    // One load of a `.wpp` is answered on its rules, as the whole listing has it.
    for load in ["1", ":2"] {
        let (code, got, err) = wpp(&["deps", "list", w, "--load", load]);
        assert_eq!(code, Some(0), "{err}");
        assert_eq!(strip(got), want, "--load {load}");
    }
    let (code, _, err) = wpp(&["deps", "list", w, "--load", "0"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("is not a load"), "{err}");
    // It carries no CFGs, and says what it is (trial D7).
    let (code, _, err) = wpp(&["cfg", w, "--function", "f"]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("e.wpp carries no CFGs: it is an eWPP"),
        "{err}"
    );

    // Chains from the eWPP are the address trace's (Figure 21).
    let (code, from_at, err) = wpp(&["deps", "chain", e, "--load", "1", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, from_ewpp, err) = wpp(&["deps", "chain", w, "--load", "1", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(from_ewpp, from_at);
    let (code, from_raw, err) = wpp(&["deps", "chain", o, "--load", "1", "--json"]);
    assert_eq!((code, from_raw), (Some(0), from_at.clone()), "{err}");
    assert!(from_at.contains("\"frequency\": 2"), "{from_at}");

    // A block trace without checks, and a damaged eCF, are refused clearly.
    let (code, _, err) = wpp(&["deps", "list", &good]);
    assert_eq!(code, Some(1));
    assert!(err.contains("records no memory dependences"), "{err}");
    let bytes = std::fs::read(&out).unwrap();
    let cut = dir.path().join("cut.trace");
    std::fs::write(&cut, &bytes[..bytes.len() - 3]).unwrap();
    // A recording cut short: the dependences before the cut, and a warning naming the file.
    let (code, got, err) = wpp(&["deps", "list", cut.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("cut.trace") && err.contains("truncated"),
        "{err}"
    );
    let got = strip(got);
    assert!(got[..] == want[..got.len()], "{got:?}");
    // A damaged one: an error naming the file, never a panic.
    let mut flipped = bytes.clone();
    let n = flipped.len();
    flipped[n - 6] ^= 0x5a;
    let bad = dir.path().join("flipped.trace");
    std::fs::write(&bad, &flipped).unwrap();
    let (code, _, err) = wpp(&["deps", "list", bad.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("flipped.trace") && !err.contains("panicked"),
        "{err}"
    );
    // The memory table names a function the program does not have.
    let (mut program, events) = wpp_paths::trace::read_events(&out).unwrap();
    let mut table: MemoryDb = postcard::from_bytes(&program.memory).unwrap();
    table.instructions[0].function = 7;
    program.memory = postcard::to_allocvec(&table).unwrap();
    let bad = dir.path().join("bad-table.trace");
    let mut t = wpp_trace::file::create(&bad, wpp_trace::Format::Binary, &program).unwrap();
    for e in events {
        t.push(e).unwrap();
    }
    t.finish().unwrap();
    let (code, _, err) = wpp(&["deps", "stats", bad.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("bad-table.trace") && err.contains("function 7"),
        "{err}"
    );
}

/// `wpp deps … | head`: a reader that closed the pipe before the output came is not an error
/// (exit status 0, no panic), for every command's text output.
#[test]
fn a_closed_pipe_is_not_an_error() {
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join("t.at");
    std::fs::write(&at, sample()).unwrap();
    let at = at.to_str().unwrap();
    for args in [
        &["deps", "list", at][..],
        &["deps", "stats", at],
        &["deps", "chain", at, "--load", "3"],
        &["deps", "filter", at],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_wpp"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the wpp binary runs");
        // Closed before the command writes, as `head` would after its lines.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
    }
}

/// A block trace of several threads (trace-blocks, or trace-addr's `.wpp`) records no
/// dependences: said as for one thread, not as an eWPP with a thread too many (trial D6).
#[test]
fn a_block_recording_of_several_threads_records_no_dependences() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.trace");
    let wpp_file = dir.path().join("t.wpp");
    let (t, w) = (trace.to_str().unwrap(), wpp_file.to_str().unwrap());
    let args = ["synth", "--seed", "3", "--kind", "blocks", "--threads", "3"];
    let (code, _, err) = wpp(&[&args[..], &["--events", "20000", "-o", t]].concat());
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = wpp(&["compress", t, "-o", w]);
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = wpp(&["deps", "list", w]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("t.wpp records no memory dependences") && err.contains("PROGRAM.PID.at"),
        "{err}"
    );
}

/// A writer whose bytes of a load are not one run is shown by its runs, not as a range that
/// would cover another writer's byte (trial 34 G2: `[3 bytes at +0]` for bytes 0, 2 and 3).
#[test]
fn a_writers_bytes_are_shown_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join("t.at");
    let (int, byte, load) = (
        Access {
            id: 0,
            addr: 300,
            size: 4,
        },
        Access {
            id: 2,
            addr: 301,
            size: 1,
        },
        Access {
            id: 3,
            addr: 300,
            size: 4,
        },
    );
    std::fs::write(&at, sample_with(vec![int, byte, load])).unwrap();
    let at = at.to_str().unwrap();
    let (code, out, err) = wpp(&["deps", "list", at, "--load", "3"]);
    assert_eq!(code, Some(0), "{err}");
    let last: Vec<&str> = out.lines().rev().take(2).collect();
    assert!(
        last[1].ends_with("#0(2) f:10:1 Store [3 bytes: +0, +2 to +3]"),
        "{out}"
    );
    assert!(
        last[0].ends_with("#2(3) f:11:1 Store [1 bytes at +1]"),
        "{out}"
    );
    let (_, out, _) = wpp(&["deps", "list", at, "--load", "3", "--json"]);
    let v: serde_json::Value = serde_json::from_str(out.lines().rev().nth(1).unwrap()).unwrap();
    assert_eq!(v["pieces"], serde_json::json!([[0, 1], [2, 2]]), "{v}");
    assert_eq!(
        (v["offset"].as_u64(), v["bytes"].as_u64(), v["end"].as_u64()),
        (Some(0), Some(3), Some(4))
    );
}

/// `--load` takes an id as listings print it (`#1`, trial D13), and a file the program does not
/// have is said to be missing, with the nearest names, not blamed on `-g` (trial D14).
#[test]
fn load_ids_as_printed_and_unknown_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join("t.at");
    std::fs::write(&at, sample()).unwrap();
    let at = at.to_str().unwrap();
    let (code, by_hash, err) = wpp(&["deps", "list", at, "--load", "#1"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(by_hash, wpp(&["deps", "list", at, "--load", "1"]).1);
    let (code, _, err) = wpp(&["deps", "list", at, "--load", "t.cc:12"]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains(
            "--load t.cc:12: no source file of the program ends with `t.cc`; did you mean `t.c`?"
        ),
        "{err}"
    );
    let (_, _, err) = wpp(&["deps", "chain", at, "--load", "nosuch.cpp:12"]);
    assert!(
        err.contains("ends with `nosuch.cpp`; none of its 1 source files"),
        "{err}"
    );
    // A function's name names its every load (trial 34 G13); a wrong one, the nearest.
    let (code, by_function, err) = wpp(&["deps", "list", at, "--load", "f"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(by_function, wpp(&["deps", "list", at]).1);
    let (code, _, err) = wpp(&["deps", "chain", at, "--load", "ff"]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("a function's name; did you mean `f`?"),
        "{err}"
    );
    let (_, _, err) = wpp(&["deps", "list", at, "--load", "t.c:99"]);
    assert!(
        err.contains("no load at line 99; the nearest lines with loads are 12"),
        "{err}"
    );
}

/// A long (C++) name overflows its own row of `wpp deps filter`; the other rows are not padded
/// to it (trial D16).
#[test]
fn filter_rows_are_not_padded_to_a_long_name() {
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join("t.at");
    let long = format!("std::vector<{}>::push_back", "x".repeat(300));
    std::fs::write(&at, sample_named(&long, Vec::new())).unwrap();
    let (code, out, err) = wpp(&["deps", "filter", at.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    let widths: Vec<usize> = out.lines().map(|l| l.chars().count()).collect();
    assert_eq!(widths.len(), 3, "{out}");
    assert!(widths[1] > 300, "{out}");
    assert!(widths[0] < 160 && widths[2] < 160, "{widths:?}");
}
