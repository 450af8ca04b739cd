//! The `wpp` command end to end: synth → compress → verify / decompress / stats, for every
//! compressor, both trace formats, several threads, and damaged inputs. Oracles come from the
//! libraries (trace readers, per-thread equality), never from the command under test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use wpp_trace::file::{read_events, to_binary};
use wpp_trace::{same_per_thread, BlockId, Event, TraceReader};

const ALGORITHMS: [&str; 4] = ["sequitur", "sequitur1", "frequency", "phrase"];

/// A finished run of the binary.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn wpp(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_wpp"))
        .args(args)
        .output()
        .expect("the wpp binary runs");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `wpp args`, expecting success; returns standard output.
fn ok(args: &[&str]) -> String {
    let r = wpp(args);
    assert_eq!(r.code, Some(0), "wpp {args:?} failed: {}", r.stderr);
    r.stdout
}

/// Runs `wpp args`, expecting a clean failure (exit 1, no panic); returns standard error.
fn fails(args: &[&str]) -> String {
    let r = wpp(args);
    assert_eq!(r.code, Some(1), "wpp {args:?}: {}{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    assert!(r.stderr.starts_with("wpp: error: "), "{}", r.stderr);
    r.stderr
}

struct Dir(tempfile::TempDir);

impl Dir {
    fn new() -> Dir {
        Dir(tempfile::tempdir().unwrap())
    }

    fn path(&self, name: &str) -> String {
        self.0.path().join(name).display().to_string()
    }
}

/// Writes a synthetic trace and returns its path.
fn synth(dir: &Dir, name: &str, extra: &[&str]) -> String {
    let out = dir.path(name);
    let mut args = vec!["synth", "--seed", "3", "-o", &out];
    args.extend_from_slice(extra);
    ok(&args);
    out
}

fn stats_json(file: &str) -> Value {
    serde_json::from_str(&ok(&["stats", file, "--json"])).expect("stats --json is JSON")
}

#[test]
fn every_algorithm_round_trips_binary_and_text_traces() {
    let dir = Dir::new();
    let binary = synth(&dir, "t.trace", &["--events", "30000"]);
    let text = synth(&dir, "t.txt", &["--events", "30000", "--text"]);
    let (_, want) = read_events(&binary).unwrap();
    assert_eq!(
        read_events(&text).unwrap().1,
        want,
        "same seed, same events"
    );
    for input in [&binary, &text] {
        for alg in ALGORITHMS {
            let out = dir.path(&format!("{alg}.wpp"));
            ok(&["compress", input, "-o", &out, "--algorithm", alg]);
            // Either form of the trace verifies.
            ok(&["verify", &out, &binary]);
            ok(&["verify", &out, &text]);
            let s = stats_json(&out);
            assert_eq!(s["events"], 30000, "{alg}");
            assert_eq!(s["trace_events"], 30000);
            assert_eq!(s["algorithm"], alg);
            assert_eq!(s["threads"], 1);
            // The binary trace size is computed exactly from the grammar (the text format
            // carries only function names, so its program database is smaller).
            let (db, events) = read_events(input).unwrap();
            let bytes = to_binary(&db, &events).unwrap().len();
            assert_eq!(s["trace_bytes"], bytes, "{alg}");
        }
    }
}

/// `--threads 2` with small chunks: every algorithm's joined grammar verifies against a
/// three-thread trace, and the questions whose answers do not depend on the grammar's shape
/// (functions, subpath frequency, path matching, decompression) answer as on the
/// single-threaded `.wpp`. (Hot subpaths are found through the grammar's rules, Larus
/// Figure 7, so each grammar finds its own sound set; `wpp-query-check` checks those.)
#[test]
fn parallel_compression_verifies_and_answers_as_one_thread() {
    let dir = Dir::new();
    let trace = synth(&dir, "t.trace", &["--events", "40000", "--threads", "3"]);
    let questions: [&[&str]; 3] = [
        &["functions"],
        &["subpath", "--terminals", "3,4,7"],
        &["match", "--function", "sort_18", "--path", "0,1", "--count"],
    ];
    for alg in ALGORITHMS {
        let one = dir.path(&format!("{alg}-1.wpp"));
        let two = dir.path(&format!("{alg}-2.wpp"));
        ok(&[
            "compress",
            &trace,
            "-o",
            &one,
            "--algorithm",
            alg,
            "--threads",
            "1",
        ]);
        let report = ok(&[
            "compress",
            &trace,
            "-o",
            &two,
            "--algorithm",
            alg,
            "--threads",
            "2",
            "--chunk-events",
            "3001",
            "--json",
        ]);
        let report: Value = serde_json::from_str(&report).unwrap();
        assert_eq!(report["runs"][0]["threads_used"], 2);
        ok(&["verify", &two, &trace]);
        assert_eq!(stats_json(&two)["threads"], 3, "{alg}");
        for q in questions {
            let ask = |file: &str| {
                let mut args = vec![q[0], file];
                args.extend_from_slice(&q[1..]);
                ok(&args)
            };
            assert_eq!(ask(&one), ask(&two), "{alg}: {q:?}");
        }
        let text = |file: &str| {
            let out = format!("{file}.txt");
            ok(&["decompress", file, "-o", &out, "--text"]);
            std::fs::read(out).unwrap()
        };
        assert_eq!(text(&one), text(&two), "{alg}: decompress");
    }
}

/// `--segment-events` cuts the grammar into segments that every query reads as one run: a
/// three-thread trace in segments of 7001 events (and, for one compressor, segments of chunks
/// on two threads) verifies, decompresses to the same text, and answers `functions`,
/// `subpath` and `match` as the unsegmented file (hot subpaths are found through the rules, so
/// each grammar finds its own sound set, as with parallel chunks); `wpp stats` lists the
/// segments, whose events add up to the trace's; the file recompresses into segments of
/// another size. `--segment-events 0`, or a segment longer than the trace, gives the
/// unsegmented file.
#[test]
fn segmented_files_answer_as_one_segment() {
    let dir = Dir::new();
    let trace = synth(&dir, "t.trace", &["--events", "40000", "--threads", "3"]);
    let questions: [&[&str]; 3] = [
        &["functions", "--json"],
        &["subpath", "--terminals", "3,4,7"],
        &["match", "--function", "sort_18", "--path", "0,1", "--count"],
    ];
    let configs: [(&str, &str); 5] = [
        ("sequitur", "1"),
        ("sequitur1", "1"),
        ("frequency", "1"),
        ("phrase", "1"),
        ("phrase", "2"),
    ];
    for (alg, threads) in configs {
        let compress = |out: &str, segment: &str| {
            let args = [
                "compress",
                &trace,
                "-o",
                out,
                "--algorithm",
                alg,
                "--threads",
                threads,
                "--chunk-events",
                "3001",
                "--segment-events",
                segment,
                "--json",
            ];
            serde_json::from_str::<Value>(&ok(&args)).unwrap()
        };
        let one = dir.path(&format!("{alg}-{threads}-whole.wpp"));
        let cut = dir.path(&format!("{alg}-{threads}-cut.wpp"));
        compress(&one, "0");
        let report = compress(&cut, "7001");
        assert_eq!(report["runs"][0]["segments"], 6, "{alg}: {report}");
        ok(&["verify", &cut, &trace]);
        let stats = stats_json(&cut);
        let segments = stats["segments"].as_array().unwrap();
        assert_eq!(segments.len(), 6, "{stats}");
        let counted: u64 = segments.iter().map(|s| s["events"].as_u64().unwrap()).sum();
        assert_eq!(counted, 40000, "{stats}");
        assert_eq!(stats["events"], stats_json(&one)["events"]);
        assert_eq!(stats["threads"], 3);
        assert!(ok(&["stats", &cut]).contains("segments                        6\n"));
        for q in questions {
            let ask = |file: &str| {
                let mut args = vec![q[0], file];
                args.extend_from_slice(&q[1..]);
                ok(&args)
            };
            assert_eq!(ask(&one), ask(&cut), "{alg}: {q:?}");
        }
        let text = |file: &str| {
            let out = format!("{file}.txt");
            ok(&["decompress", file, "-o", &out, "--text"]);
            std::fs::read(out).unwrap()
        };
        assert_eq!(text(&one), text(&cut), "{alg}: decompress");
        // A segmented `.wpp` recompressed into segments again (its expansion, thread by
        // thread) is the same trace.
        let again = dir.path(&format!("{alg}-{threads}-again.wpp"));
        ok(&["compress", &cut, "-o", &again, "--segment-events", "5000"]);
        ok(&["verify", &again, &trace]);
        assert_eq!(stats_json(&again)["segments"].as_array().unwrap().len(), 8);
        let long = dir.path(&format!("{alg}-{threads}-long.wpp"));
        compress(&long, "40000");
        assert_eq!(std::fs::read(&long).unwrap(), std::fs::read(&one).unwrap());
        assert!(stats_json(&long)["segments"].as_array().unwrap().is_empty());
    }
    let e = fails(&[
        "compress",
        &trace,
        "-o",
        &dir.path("i.wpp"),
        "--segment-events",
        "1000",
        "--index",
    ]);
    assert!(
        e.contains("--index needs the whole grammar in one segment"),
        "{e}"
    );
    assert!(!Path::new(&dir.path("i.wpp")).exists());
}

#[test]
fn windowed_frequency_round_trips() {
    let dir = Dir::new();
    let trace = synth(&dir, "t.trace", &["--events", "20000", "--kind", "paths"]);
    let out = dir.path("w.wpp");
    let json = ok(&[
        "compress",
        &trace,
        "-o",
        &out,
        "--algorithm",
        "frequency",
        "--window",
        "500",
        "--json",
    ]);
    let report: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(report["runs"][0]["window"], 500);
    ok(&["verify", &out, &trace]);
    fails(&["compress", &trace, "-o", &out, "--window", "500"]);
}

#[test]
fn any_zstd_level_verifies() {
    let dir = Dir::new();
    let trace = synth(&dir, "t.trace", &["--events", "20000"]);
    let out = dir.path("z.wpp");
    for level in ["1", "3", "22"] {
        ok(&["compress", &trace, "-o", &out, "--zstd-level", level]);
        ok(&["verify", &out, &trace]);
    }
    let r = wpp(&["compress", &trace, "-o", &out, "--zstd-level", "0"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("--zstd-level"), "{}", r.stderr);
    // The smallest file (context-coded rule streams) verifies, and is no larger.
    let small = dir.path("s.wpp");
    for algorithm in ["sequitur", "frequency"] {
        ok(&["compress", &trace, "-o", &out, "--algorithm", algorithm]);
        ok(&[
            "compress",
            &trace,
            "-o",
            &small,
            "--algorithm",
            algorithm,
            "--smallest",
        ]);
        ok(&["verify", &small, &trace]);
        let size = |p: &str| std::fs::metadata(p).unwrap().len();
        assert!(size(&small) <= size(&out), "{algorithm}");
    }
    let r = wpp(&[
        "compress",
        &trace,
        "-o",
        &out,
        "--smallest",
        "--zstd-level",
        "3",
    ]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
}

/// `--smallest` alone means the smallest grammar too: frequency, on one thread; what is given
/// explicitly stays.
#[test]
fn smallest_defaults_to_one_frequency_grammar() {
    let dir = Dir::new();
    let trace = synth(&dir, "t.trace", &["--events", "20000"]);
    let out = dir.path("s.wpp");
    let run = |extra: &[&str]| {
        let mut args = vec!["compress", &trace, "-o", &out, "--smallest", "--json"];
        args.extend_from_slice(extra);
        let report: Value = serde_json::from_str(&ok(&args)).unwrap();
        let run = &report["runs"][0];
        (run["algorithm"].clone(), run["threads_used"].clone())
    };
    assert_eq!(run(&[]), (json!("frequency"), json!(1)));
    assert_eq!(
        run(&["--algorithm", "sequitur", "--threads", "2"]),
        (json!("sequitur"), json!(2))
    );
    ok(&["verify", &out, &trace]);
}

/// A `.wpp` compresses again with any algorithm; the oracle is `verify` against the original
/// trace (several threads, so each start rule must stay its thread's).
/// `-o` naming a FIFO (like `/dev/null`, not a regular file) writes into it: the reader gets
/// the `.wpp` and the FIFO stays a FIFO. A rename would put a regular file in its place; run
/// as root with `-o /dev/null`, that replaced `/dev/null` for every program on the machine.
#[test]
fn compress_into_a_fifo_writes_to_it_instead_of_replacing_it() {
    use std::os::unix::fs::FileTypeExt;
    let dir = Dir::new();
    let trace = synth(&dir, "t.trace", &["--events", "20000"]);
    let (fifo, file) = (dir.path("pipe"), dir.path("file.wpp"));
    let made = Command::new("mkfifo").arg(&fifo).status();
    assert!(made.expect("mkfifo runs").success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).expect("the FIFO reads"))
    };
    ok(&["compress", &trace, "-o", &fifo]);
    let kind = std::fs::metadata(&fifo).unwrap().file_type();
    assert!(kind.is_fifo(), "{fifo} was replaced: {kind:?}");
    ok(&["compress", &trace, "-o", &file]);
    assert_eq!(reader.join().unwrap(), std::fs::read(&file).unwrap());
}

#[test]
fn a_wpp_recompresses_to_the_same_trace() {
    let dir = Dir::new();
    let trace = synth(&dir, "t.trace", &["--events", "60000", "--threads", "3"]);
    let (phrase, again) = (dir.path("p.wpp"), dir.path("again.wpp"));
    ok(&["compress", &trace, "-o", &phrase, "--algorithm", "phrase"]);
    for alg in ["frequency", "sequitur", "phrase"] {
        ok(&["compress", &phrase, "-o", &again, "--algorithm", alg]);
        ok(&["verify", &again, &trace]);
        assert_eq!(stats_json(&again)["algorithm"], alg, "{alg}");
        assert_eq!(stats_json(&again)["events"], stats_json(&phrase)["events"]);
    }
}

#[test]
fn decompress_gives_the_same_events_per_thread() {
    let dir = Dir::new();
    let trace = synth(&dir, "m.trace", &["--events", "40000", "--threads", "3"]);
    let (_, want) = read_events(&trace).unwrap();
    assert!(want.iter().any(|e| matches!(e, Event::Thread(_))));
    for alg in ALGORITHMS {
        let w = dir.path("m.wpp");
        ok(&["compress", &trace, "-o", &w, "--algorithm", alg]);
        for text in [false, true] {
            let back = dir.path("back");
            let mut args = vec!["decompress", &w, "-o", &back];
            if text {
                args.push("--text");
            }
            ok(&args);
            let (_, got) = read_events(&back).unwrap();
            assert!(same_per_thread(&got, &want), "{alg}, text {text}");
            ok(&["verify", &w, &back]);
            if !text {
                // `stats` predicts the decompressed binary trace's size, `T` switches included.
                let size = std::fs::metadata(&back).unwrap().len();
                assert_eq!(stats_json(&w)["trace_bytes"], size, "{alg}");
            }
        }
    }
    // One thread: the very same event sequence, no `T` added.
    let one = synth(&dir, "one.trace", &["--events", "10000"]);
    let w = dir.path("one.wpp");
    ok(&["compress", &one, "-o", &w]);
    let back = dir.path("one.back");
    ok(&["decompress", &w, "-o", &back]);
    assert_eq!(read_events(&back).unwrap().1, read_events(&one).unwrap().1);
}

/// `-o -` writes a trace to standard output, byte for byte the file `-o FILE` writes (for
/// `decompress`, `trace convert` and `synth`); a trace given through a pipe is refused, since
/// every command reads its input file more than once.
#[test]
fn traces_go_to_standard_output_and_pipes_are_refused() {
    let dir = Dir::new();
    let trace = synth(&dir, "t.trace", &["--events", "5000"]);
    let w = dir.path("t.wpp");
    ok(&["compress", &trace, "-o", &w]);
    let file = dir.path("file");
    for args in [
        vec!["decompress", &w],
        vec!["decompress", &w, "--text"],
        vec!["trace", "convert", &trace, "--to", "text"],
        vec!["synth", "--events", "5000"],
    ] {
        let to_file = [&args[..], &["-o", &file]].concat();
        ok(&to_file);
        let out = Command::new(env!("CARGO_BIN_EXE_wpp"))
            .args([&args[..], &["-o", "-"]].concat())
            .current_dir(dir.0.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
        assert_eq!(out.stdout, std::fs::read(&file).unwrap(), "{args:?}");
        assert!(!dir.0.path().join("-").exists(), "{args:?}");
    }
    let mut verify = Command::new(env!("CARGO_BIN_EXE_wpp"))
        .args(["verify", &w, "/dev/stdin"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let bytes = std::fs::read(&trace).unwrap();
    // The refusal may come before the whole trace is written.
    let _ = std::io::Write::write_all(&mut verify.stdin.take().unwrap(), &bytes);
    let out = verify.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("/dev/stdin is a pipe"), "{err}");
}

/// Writes `events` as a binary trace of the program of `like`.
fn write_variant(like: &str, path: &str, events: &[Event]) {
    let reader = TraceReader::from_bytes(std::fs::read(like).unwrap()).unwrap();
    std::fs::write(path, to_binary(reader.program(), events).unwrap()).unwrap();
}

/// A grammar and a trace of two programs: each side's event is named by its own file (the
/// trace's function 0 is its `start`, not the grammar's `main`), and the report says the files
/// record different programs.
#[test]
fn verify_names_each_programs_events_by_its_own_names() {
    let dir = Dir::new();
    let a = dir.path("a.trace");
    std::fs::write(&a, "D main\nD helper\nF main\nF helper\nE\nE\n").unwrap();
    let w = dir.path("a.wpp");
    ok(&["compress", &a, "-o", &w]);
    let b = dir.path("b.trace");
    std::fs::write(&b, "D start\nD work\nF start\nF start\nE\nE\n").unwrap();
    let err = fails(&["verify", &w, &b]);
    assert!(
        err.contains("thread 0, event 1 (trace event 1): the grammar has `F helper`, the trace has `F start`"),
        "{err}"
    );
    assert!(
        err.contains("the two files record different programs"),
        "{err}"
    );
    let r = wpp(&["verify", &w, &b, "--json"]);
    let report: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(report["same_program"], false);
    assert_eq!(report["mismatch"]["trace"], "F start");
}

#[test]
fn verify_reports_the_first_difference() {
    let dir = Dir::new();
    let trace = synth(&dir, "t.trace", &["--events", "5000"]);
    let w = dir.path("t.wpp");
    ok(&["compress", &trace, "-o", &w]);
    let (_, events) = read_events(&trace).unwrap();
    let bad = dir.path("bad.trace");

    let mut changed = events.clone();
    let k = 2345;
    changed[k] = Event::Block(BlockId(987_654));
    write_variant(&trace, &bad, &changed);
    let err = fails(&["verify", &w, &bad]);
    assert!(err.contains("does not expand to"), "{err}");
    assert!(err.contains(&format!("thread 0, event {k} ")), "{err}");
    assert!(err.contains("the trace has `B 987654`"), "{err}");
    assert!(!err.contains("different programs"), "{err}");
    let r = wpp(&["verify", &w, &bad, "--json"]);
    assert_eq!(r.code, Some(1));
    let report: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(report["equal"], false);
    assert_eq!(report["mismatch"]["position"], k);

    write_variant(&trace, &bad, &events[..events.len() - 1]);
    let err = fails(&["verify", &w, &bad]);
    assert!(err.contains("the trace's thread 0 ends here"), "{err}");

    let mut longer = events.clone();
    longer.push(Event::Leave);
    write_variant(&trace, &bad, &longer);
    let err = fails(&["verify", &w, &bad]);
    assert!(err.contains("the grammar's thread 0 ends here"), "{err}");

    // Moving events to another thread changes the trace's meaning.
    let mut moved = events.clone();
    moved.insert(4000, Event::Thread(wpp_trace::ThreadId(1)));
    write_variant(&trace, &bad, &moved);
    fails(&["verify", &w, &bad]);
    let r = wpp(&["verify", &w, &trace, "--json"]);
    assert_eq!(r.code, Some(0));
    assert_eq!(
        serde_json::from_str::<Value>(&r.stdout).unwrap()["equal"],
        true
    );
}

#[test]
fn damaged_wpp_files_give_clear_errors() {
    let dir = Dir::new();
    let trace = synth(&dir, "t.trace", &["--events", "5000"]);
    let w = dir.path("t.wpp");
    ok(&["compress", &trace, "-o", &w]);
    let bytes = std::fs::read(&w).unwrap();
    let bad = dir.path("bad.wpp");
    let cut = bytes[..bytes.len() / 2].to_vec();
    let mut flipped = bytes.clone();
    let mid = bytes.len() / 2;
    flipped[mid] ^= 0x40;
    let back = dir.path("back");
    for damaged in [cut, flipped, b"WPPG".to_vec(), b"not a wpp".to_vec()] {
        std::fs::write(&bad, &damaged).unwrap();
        for args in [
            vec!["stats", &bad],
            vec!["decompress", &bad, "-o", &back],
            vec!["verify", &bad, &trace],
        ] {
            let err = fails(&args);
            if damaged.starts_with(b"WPPG") {
                assert!(err.contains(&format!("cannot read {bad}")), "{err}");
                assert!(err.contains("byte offset"), "{err}");
            } else {
                // No reader runs on a file that is no wpp file at all.
                assert!(err.contains(&format!("{bad} is not a wpp file")), "{err}");
            }
        }
    }
    let err = fails(&["stats", &dir.path("missing.wpp")]);
    assert!(err.contains("missing.wpp"), "{err}");
    // A `.wpp` not written yet, whose recording's raw trace is there: how to make it.
    std::fs::copy(&trace, dir.path("t2.trace")).unwrap();
    let err = fails(&["stats", &dir.path("t2.wpp")]);
    let how = format!(
        "`wpp compress {} -o {} --algorithm phrase` makes it",
        dir.path("t2.trace"),
        dir.path("t2.wpp")
    );
    assert!(err.contains(&how), "{err}");
    assert!(err.contains("program may still be running"), "{err}");
    // The finisher's file in progress is said to be one, empty or not (trial 35 H8).
    for bytes in [&b""[..], &std::fs::read(&w).unwrap()[..10]] {
        std::fs::write(dir.path("t3.wpp.tmp"), bytes).unwrap();
        let err = fails(&["stats", &dir.path("t3.wpp.tmp")]);
        assert!(err.contains("is a .wpp still being written"), "{err}");
    }
    let err = fails(&["compress", &dir.path("missing.trace"), "-o", &w]);
    assert!(err.contains("missing.trace"), "{err}");
}

#[test]
fn compress_all_prints_a_row_per_algorithm_and_writes_the_smallest() {
    let dir = Dir::new();
    let trace = synth(&dir, "t.trace", &["--events", "30000"]);
    let w = dir.path("all.wpp");
    let table = ok(&["compress", &trace, "-o", &w, "--algorithm", "all"]);
    for alg in ALGORITHMS {
        let rows = table.lines().filter(|l| l.starts_with(&format!("{alg} ")));
        assert_eq!(rows.count(), 1, "{alg} in\n{table}");
    }
    let json = ok(&["compress", &trace, "-o", &w, "--algorithm", "all", "--json"]);
    let report: Value = serde_json::from_str(&json).unwrap();
    let runs = report["runs"].as_array().unwrap();
    let names: Vec<&str> = runs
        .iter()
        .map(|r| r["algorithm"].as_str().unwrap())
        .collect();
    assert_eq!(names, ALGORITHMS);
    let size = |r: &Value| r["wpp_bytes"].as_u64().unwrap();
    let smallest = runs.iter().map(size).min().unwrap();
    let written: Vec<&Value> = runs.iter().filter(|r| r["written"] == true).collect();
    assert_eq!(written.len(), 1);
    assert_eq!(size(written[0]), smallest);
    assert_eq!(std::fs::metadata(&w).unwrap().len(), smallest);
    assert_eq!(stats_json(&w)["algorithm"], written[0]["algorithm"]);
    for r in runs {
        assert_eq!(r["events"], 30000);
        assert!(r["peak_heap_bytes"].as_u64().unwrap() > 0);
        assert!(r["symbols"].as_u64().unwrap() > 0);
    }
    ok(&["verify", &w, &trace]);
}

/// Cuts the file at `path` to its first `len` bytes, in a new file.
fn cut(path: &str, len: usize, to: &Path) -> PathBuf {
    let bytes = std::fs::read(path).unwrap();
    std::fs::write(to, &bytes[..len]).unwrap();
    to.to_owned()
}

#[test]
fn a_truncated_trace_compresses_its_valid_prefix() {
    let dir = Dir::new();
    // Several 64 KiB chunks.
    let trace = synth(&dir, "t.trace", &["--events", "400000"]);
    let len = std::fs::metadata(&trace).unwrap().len() as usize;
    let cut = cut(&trace, len * 2 / 3, &dir.0.path().join("cut.trace"));
    let cut = cut.to_str().unwrap();
    let prefix = TraceReader::from_bytes(std::fs::read(cut).unwrap())
        .unwrap()
        .allow_truncated(true)
        .read_all()
        .unwrap();
    assert!(prefix.len() > 100_000, "whole chunks survive the cut");
    let w = dir.path("cut.wpp");
    let r = wpp(&["compress", cut, "-o", &w]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("warning"), "{}", r.stderr);
    assert!(
        r.stderr.contains("truncated at byte offset"),
        "{}",
        r.stderr
    );
    assert_eq!(stats_json(&w)["events"], prefix.len());
    ok(&["verify", &w, cut]);
    // The full trace has more: it does not verify against the prefix's grammar.
    fails(&["verify", &w, &trace]);
}

/// `wpp … | head` closes the pipe early: the command must stop quietly with success, not panic.
/// Each command's output is larger than a pipe's buffer, so its writes do meet the closed pipe.
#[test]
fn a_reader_that_closes_the_pipe_early_is_not_an_error() {
    use std::io::Read;
    use std::process::Stdio;
    let dir = Dir::new();
    let trace = synth(&dir, "t.trace", &["--events", "300000", "--kind", "blocks"]);
    let wpp_file = dir.path("t.wpp");
    ok(&["compress", &trace, "-o", &wpp_file, "--index"]);
    let commands: [&[&str]; 2] = [
        &["trace", "cat", &trace],
        &[
            "hot",
            &wpp_file,
            "--max-length",
            "4",
            "--min-cost",
            "1",
            "--json",
        ],
    ];
    for args in commands {
        let mut child = Command::new(env!("CARGO_BIN_EXE_wpp"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the wpp binary runs");
        let mut first = [0u8; 16];
        child.stdout.take().unwrap().read_exact(&mut first).unwrap();
        // The read end is dropped here, as `head` would close it.
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "wpp {args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(0), "wpp {args:?}: {stderr}");
    }
}

/// A `bl` profile of a program with functions `names`, with `(function, path id, count)`.
fn write_bl_profile(path: &str, names: &[&str], counts: &[(&str, u64, u64)]) {
    use wpp_abi::{EmbeddedProgram, Mode, EMBEDDED_VERSION};
    let functions = names
        .iter()
        .map(|n| wpp_trace::Function {
            name: (*n).into(),
            ..Default::default()
        })
        .collect();
    let mut bl = wpp_paths::BlProfile::default();
    for &(f, id, c) in counts {
        bl.record(f, wpp_paths::PathId(id), c);
    }
    let file = wpp_abi::profile::ProfileFile {
        program: EmbeddedProgram {
            version: EMBEDDED_VERSION,
            mode: Mode::Bl,
            program: wpp_trace::ProgramDb {
                functions,
                ..Default::default()
            },
            cfgs: Vec::new(),
            ewpp: None,
        },
        bl,
        ppp: None,
        run: None,
    };
    std::fs::write(path, file.to_bytes()).unwrap();
}

#[test]
fn profile_merge_sums_counts_and_refuses_other_programs() {
    let dir = Dir::new();
    let (a, b, c, out) = (
        dir.path("a.blprof"),
        dir.path("b.blprof"),
        dir.path("c.blprof"),
        dir.path("out.blprof"),
    );
    write_bl_profile(&a, &["main", "f"], &[("main", 0, 1), ("f", 3, 10)]);
    write_bl_profile(
        &b,
        &["main", "f"],
        &[("main", 0, 1), ("f", 3, 5), ("f", 7, 2)],
    );
    ok(&["profile", "merge", &a, &b, &b, "-o", &out]);
    let merged = wpp_abi::profile::ProfileFile::from_bytes(&std::fs::read(&out).unwrap()).unwrap();
    let want: std::collections::BTreeMap<String, std::collections::BTreeMap<u64, u64>> = [
        ("main".to_string(), [(0, 3)].into()),
        ("f".to_string(), [(3, 20), (7, 4)].into()),
    ]
    .into();
    assert_eq!(merged.bl.functions, want);

    write_bl_profile(&c, &["main", "g"], &[("main", 0, 1)]);
    // A folder without profiles is named (trial E12).
    let empty = dir.path("no-profiles");
    std::fs::create_dir_all(&empty).unwrap();
    let err = fails(&["profile", "merge", &empty, "-o", &out]);
    assert!(err.contains("no-profiles"), "{err}");
    let err = fails(&["profile", "merge", &a, &c, "-o", &out]);
    assert!(err.contains(&format!("cannot merge {c} into {a}")), "{err}");
    assert!(
        err.contains("function 1 is `f` in one, `g` in the other"),
        "{err}"
    );
    std::fs::write(&c, b"WPPRPROF\x01garbage").unwrap();
    let err = fails(&["profile", "merge", &a, &c, "-o", &out]);
    assert!(err.contains(&format!("cannot read {c}")), "{err}");
}

/// `(function, path id) → count` of a profile, as `wpp profile show --json` prints it.
fn shown_counts(profile: &str) -> BTreeMap<(String, u64), u64> {
    let shown: Value = serde_json::from_str(&ok(&[
        "profile", "show", profile, "--json", "--top", "1000000",
    ]))
    .unwrap();
    let mut out = BTreeMap::new();
    for f in shown.as_array().unwrap() {
        for p in f["paths"].as_array().unwrap() {
            let key = (
                f["name"].as_str().unwrap().to_owned(),
                p["id"].as_u64().unwrap(),
            );
            out.insert(key, p["count"].as_u64().unwrap());
        }
    }
    out
}

/// 50 profiles of one program with pseudo-random counts, in `dir/runs`.
fn fifty_profiles(dir: &Dir) -> Vec<String> {
    std::fs::create_dir(dir.path("runs")).unwrap();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    (0..50)
        .map(|i| {
            let counts: Vec<(&str, u64, u64)> = (0..1 + next(12))
                .map(|_| {
                    (
                        ["main", "f", "g"][next(3) as usize],
                        next(40),
                        1 + next(1000),
                    )
                })
                .collect();
            let path = dir.path(&format!("runs/r{i:02}.blprof"));
            write_bl_profile(&path, &["main", "f", "g"], &counts);
            path
        })
        .collect()
}

/// Issue 16 item 5: merging a folder of profiles streams them, and the merged counts are, path
/// by path, the sums of what `wpp profile show` prints for each input (brute force), and the
/// library's pairwise merges; a list file of the same inputs gives the same file.
#[test]
fn profile_merge_of_a_folder_sums_what_show_prints() {
    let dir = Dir::new();
    let files = fifty_profiles(&dir);
    let out = dir.path("merged.blprof");
    ok(&["profile", "merge", &dir.path("runs"), "-o", &out]);
    let mut want: BTreeMap<(String, u64), u64> = BTreeMap::new();
    for f in &files {
        for (key, c) in shown_counts(f) {
            *want.entry(key).or_default() += c;
        }
    }
    assert_eq!(shown_counts(&out), want);
    let read = |p: &str| wpp_abi::profile::ProfileFile::from_bytes(&std::fs::read(p).unwrap());
    let mut fold = read(&files[0]).unwrap();
    for f in &files[1..] {
        fold.merge(&read(f).unwrap()).unwrap();
    }
    assert_eq!(read(&out).unwrap(), fold);
    let list = dir.path("list");
    std::fs::write(&list, files.join("\n")).unwrap();
    let from_list = dir.path("from-list.blprof");
    ok(&["profile", "merge", &format!("@{list}"), "-o", &from_list]);
    assert_eq!(
        std::fs::read(&from_list).unwrap(),
        std::fs::read(&out).unwrap()
    );
}

/// A damaged profile in the middle of the inputs stops the merge with an error naming it (exit
/// 1, no panic), and no merged file is written.
#[test]
fn profile_merge_names_a_damaged_profile_in_the_middle() {
    let dir = Dir::new();
    let files = fifty_profiles(&dir);
    let mut bytes = std::fs::read(&files[25]).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x10;
    std::fs::write(&files[25], bytes).unwrap();
    let out = dir.path("merged.blprof");
    let err = fails(&["profile", "merge", &dir.path("runs"), "-o", &out]);
    assert!(err.contains(&format!("cannot read {}", files[25])), "{err}");
    assert!(err.contains("checksum mismatch"), "{err}");
    assert!(!Path::new(&out).exists());
}

#[test]
fn profile_diff_lists_the_paths_whose_counts_differ() {
    let dir = Dir::new();
    let (a, b, c, m) = (
        dir.path("a.blprof"),
        dir.path("b.blprof"),
        dir.path("c.blprof"),
        dir.path("m.blprof"),
    );
    write_bl_profile(&a, &["main", "f"], &[("main", 0, 1), ("f", 3, 10)]);
    write_bl_profile(
        &b,
        &["main", "f"],
        &[("main", 0, 1), ("f", 3, 9), ("f", 5, 1)],
    );
    assert!(ok(&["profile", "diff", &a, &a]).contains("same path counts: 2 paths in 2 functions"));
    assert_eq!(
        wpp(&["profile", "diff", &a, &b]).code,
        Some(0),
        "differences alone are no failure"
    );
    let r = wpp(&["profile", "diff", &a, &b, "--json", "--check"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("differ on 2 paths"), "{}", r.stderr);
    let listed: Vec<serde_json::Value> = serde_json::from_str(&r.stdout).unwrap();
    let got: Vec<(String, u64, u64, u64)> = listed
        .iter()
        .map(|d| {
            (
                d["function"].as_str().unwrap().to_string(),
                d["id"].as_u64().unwrap(),
                d["counts"][0].as_u64().unwrap(),
                d["counts"][1].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, vec![("f".into(), 3, 10, 9), ("f".into(), 5, 0, 1)]);
    // Merging a with itself doubles every count, so every path differs from a's.
    ok(&["profile", "merge", &a, &a, "-o", &m]);
    // Sorted by |Δ|: f's path 3 (−10) before main's path 0 (−1); cut by --top, "1 more".
    let out = ok(&["profile", "diff", &m, &a, "--top", "1"]);
    let rows: Vec<&str> = out.lines().skip(1).collect();
    assert!(
        rows[0].contains("-10") && rows[0].contains("-50.0%"),
        "{out}"
    );
    assert!(rows[0].contains("f path 3"), "{out}");
    assert_eq!(rows[1], "… 1 more (--top)", "{out}");
    let out = ok(&["profile", "diff", &m, &a]);
    assert!(out.lines().nth(2).unwrap().contains("main path 0"), "{out}");
    write_bl_profile(&c, &["main", "g"], &[("main", 0, 1)]);
    let err = fails(&["profile", "diff", &a, &c]);
    assert!(
        err.contains(&format!("cannot compare {a} with {c}")),
        "{err}"
    );
}

/// A two-thread path trace over random CFGs with cut points, stored with their CFGs, and the
/// block trace it stands for, decoded from the original CFGs (the oracle).
fn path_and_block_traces(dir: &Dir) -> (String, String, wpp_trace::ProgramDb) {
    use wpp_paths::random::{structured_cfg, Rng};
    use wpp_paths::{BallLarus, Dag};
    use wpp_trace::{PathId, ThreadId};
    let mut rng = Rng::new(11);
    let mut db = wpp_trace::ProgramDb::default();
    let mut numbered = Vec::new();
    for name in ["main", "helper"] {
        let mut cfg = structured_cfg(&mut rng, name, 30).grouped_by_source();
        cfg.cut_nodes = (0..cfg.nodes.len() as u32)
            .filter(|&i| i % 7 == 3)
            .map(wpp_paths::NodeId)
            .collect();
        let dag = Dag::build(&cfg).unwrap();
        let bl = BallLarus::number(&dag).unwrap();
        let f = db.intern(name);
        db.functions[f.index()].cfg = cfg.to_record().map(Box::new);
        db.functions[f.index()].block_lines =
            (0..cfg.nodes.len() as u32).map(|b| 100 + b).collect();
        numbered.push((dag, bl));
    }
    let blocks_of = |f: usize, id: u64| -> Vec<Event> {
        let (dag, bl) = &numbered[f];
        let path = bl.decode(dag, wpp_paths::PathId(id)).unwrap();
        path.edges
            .iter()
            .filter_map(|&e| match dag.node(dag.edge(e).dst) {
                wpp_paths::dag::DagNodeKind::Block(n) => Some(Event::Block(BlockId(n.0))),
                _ => None,
            })
            .collect()
    };
    let (mut paths, mut blocks) = (Vec::new(), Vec::new());
    let mut both = |e: Event, bs: Vec<Event>| {
        paths.push(e);
        blocks.extend(bs);
    };
    for t in 0..2u32 {
        both(Event::Thread(ThreadId(t)), vec![Event::Thread(ThreadId(t))]);
        both(
            Event::Enter(wpp_trace::FunctionId(0)),
            vec![Event::Enter(wpp_trace::FunctionId(0))],
        );
    }
    for i in 0..3000u64 {
        let t = ThreadId((i / 50 % 2) as u32);
        both(Event::Thread(t), vec![Event::Thread(t)]);
        // A few hot paths, repeated: what makes a grammar worth building.
        let f = (i % 5 == 4) as usize;
        if f == 1 {
            both(
                Event::Enter(wpp_trace::FunctionId(1)),
                vec![Event::Enter(wpp_trace::FunctionId(1))],
            );
        }
        let count = numbered[f].1.path_count();
        let id = (i * i / 3 % 7 * 104_729) % count;
        both(Event::Path(PathId(id)), blocks_of(f, id));
        if f == 1 {
            both(Event::Leave, vec![Event::Leave]);
        }
    }
    let (p, b) = (dir.path("paths.trace"), dir.path("blocks.trace"));
    std::fs::write(&p, to_binary(&db, &paths).unwrap()).unwrap();
    std::fs::write(&b, to_binary(&db, &blocks).unwrap()).unwrap();
    (p, b, db)
}

/// `wpp trace blocks` decodes a path trace through its own CFGs into exactly the block trace
/// the original CFGs give; a trace without CFGs is a clear error.
#[test]
fn trace_blocks_decodes_paths_through_the_file_cfgs() {
    let dir = Dir::new();
    let (paths, blocks, db) = path_and_block_traces(&dir);
    let out = dir.path("decoded.trace");
    ok(&["trace", "blocks", &paths, "-o", &out]);
    let (got_db, got) = read_events(&out).unwrap();
    let (_, want) = read_events(&blocks).unwrap();
    assert_eq!(got, want);
    assert_eq!(
        got_db, db,
        "the output keeps the program database, CFGs included"
    );
    // --compare: equal per thread, and the first difference named when not.
    let same = ok(&["trace", "blocks", &paths, "--compare", &blocks]);
    assert!(
        same.starts_with(&format!("identical: {} ", want.len())),
        "{same}"
    );
    let mut other = want.clone();
    let i = other
        .iter()
        .rposition(|e| matches!(e, Event::Block(_)))
        .unwrap();
    // Another block, one the database declares (readers refuse ids beyond every CFG).
    let Event::Block(BlockId(b)) = other[i] else {
        unreachable!()
    };
    other[i] = Event::Block(BlockId(u32::from(b == 0)));
    let differs = dir.path("differs.trace");
    std::fs::write(&differs, to_binary(&db, &other).unwrap()).unwrap();
    let err = fails(&["trace", "blocks", &paths, "--compare", &differs]);
    let recorded = format!("recorded Block(BlockId({}))", u32::from(b == 0));
    assert!(err.contains(&recorded), "{err}");
    other.truncate(i);
    std::fs::write(&differs, to_binary(&db, &other).unwrap()).unwrap();
    let err = fails(&["trace", "blocks", &paths, "--compare", &differs]);
    assert!(err.contains("the decoded trace goes on"), "{err}");
    // The same events without CFGs (a version 1 trace, say): nothing to decode with.
    let mut bare = db.clone();
    bare.functions.iter_mut().for_each(|f| f.cfg = None);
    let no_cfgs = dir.path("bare.trace");
    let (_, events) = read_events(&paths).unwrap();
    std::fs::write(&no_cfgs, to_binary(&bare, &events).unwrap()).unwrap();
    let err = fails(&["trace", "blocks", &no_cfgs, "-o", &out]);
    assert!(err.contains("has no CFGs"), "{err}");
    let err = fails(&["match", &no_cfgs, "--function", "main", "--path", "1"]);
    assert!(err.contains("has no CFGs"), "{err}");
}

/// Writes `events` with zstd-compressed chunks, as the runtime records them.
fn write_compressed(path: &str, db: &wpp_trace::ProgramDb, events: &[Event]) {
    let f = std::fs::File::create(path).unwrap();
    let mut w = wpp_trace::TraceWriter::with_chunk_bytes(f, db, 4 << 10)
        .unwrap()
        .with_zstd_level(1)
        .unwrap();
    events.iter().for_each(|&e| w.push(e).unwrap());
    w.finish().unwrap();
}

/// Every command reads a compressed trace (format 3, zstd chunks) as it reads the same events
/// stored plain, a cut one included.
#[test]
fn commands_read_compressed_traces_like_plain_ones() {
    let dir = Dir::new();
    let (paths, blocks, db) = path_and_block_traces(&dir);
    let (zpaths, zblocks) = (dir.path("paths.z.trace"), dir.path("blocks.z.trace"));
    write_compressed(&zpaths, &db, &read_events(&paths).unwrap().1);
    write_compressed(&zblocks, &db, &read_events(&blocks).unwrap().1);
    let size = |p: &str| std::fs::metadata(p).unwrap().len() as usize;
    assert!(
        size(&zblocks) * 3 < size(&blocks),
        "{} vs {}",
        size(&zblocks),
        size(&blocks)
    );
    let same = ok(&["trace", "blocks", &zpaths, "--compare", &zblocks]);
    assert!(same.starts_with("identical: "), "{same}");
    assert_eq!(
        ok(&["trace", "cat", &zblocks]),
        ok(&["trace", "cat", &blocks])
    );
    let w = dir.path("z.wpp");
    ok(&["compress", &zblocks, "-o", &w]);
    ok(&["verify", &w, &blocks]);
    ok(&["verify", &w, &zblocks]);
    // Cut inside a compressed chunk: the whole chunks before it are compressed, with a warning.
    let cut = cut(
        &zblocks,
        size(&zblocks) * 2 / 3,
        &dir.0.path().join("cut.trace"),
    );
    let cut = cut.to_str().unwrap();
    let prefix = TraceReader::from_bytes(std::fs::read(cut).unwrap())
        .unwrap()
        .allow_truncated(true)
        .read_all()
        .unwrap();
    assert!(!prefix.is_empty());
    let w = dir.path("cut.wpp");
    let r = wpp(&["compress", cut, "-o", &w]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("truncated at byte offset"),
        "{}",
        r.stderr
    );
    assert_eq!(stats_json(&w)["trace_events"], prefix.len());
    ok(&["verify", &w, cut]);
}

/// `wpp match` on a path trace and on its `.wpp` gives the answers scheme 2 gives on the
/// equivalent block trace; schemes 2 and 4 refuse a path grammar with a clear message.
#[test]
fn match_on_paths_equals_match_on_the_decoded_blocks() {
    let dir = Dir::new();
    let (paths, blocks, db) = path_and_block_traces(&dir);
    let (pw, bw) = (dir.path("p.wpp"), dir.path("b.wpp"));
    ok(&["compress", &paths, "-o", &pw]);
    ok(&["compress", &blocks, "-o", &bw]);
    // Queries: pairs and triples of blocks that occur in main, from the block trace itself.
    let (_, events) = read_events(&blocks).unwrap();
    let mut queries: Vec<String> = Vec::new();
    for w in events.windows(3).step_by(97).take(6) {
        if let [Event::Block(a), Event::Block(b), Event::Block(c)] = w {
            queries.push(format!("{a},{b},{c}"));
            queries.push(format!("{a},{b}"));
        }
    }
    assert!(queries.len() >= 4, "{queries:?}");
    let mut found = 0;
    for function in ["main", "helper"] {
        for q in &queries {
            // A window may join the ends of two paths, or be main's blocks asked of helper: a
            // sequence that is not a path of the function's CFG gets a note
            // (`a_block_sequence_off_the_cfg_is_noted`); compared on CFG paths only.
            if !is_cfg_path(&db, function, q) {
                continue;
            }
            let args = |file: &str, scheme: &str| -> Value {
                let out = ok(&[
                    "match",
                    file,
                    "--function",
                    function,
                    "--path",
                    q,
                    "--count",
                    "--json",
                    "--scheme",
                    scheme,
                ]);
                serde_json::from_str::<Value>(&out).unwrap()["streams"].clone()
            };
            let want = args(&bw, "2");
            let counts = want.as_array().unwrap().iter();
            found += counts.filter(|s| s["count"].as_u64() > Some(0)).count();
            assert_eq!(args(&pw, "1"), want, "{function} {q}: .wpp of paths");
            assert_eq!(
                args(&pw, "auto"),
                want,
                "{function} {q}: .wpp of paths, auto"
            );
            assert_eq!(args(&paths, "auto"), want, "{function} {q}: path trace");
            assert_eq!(args(&blocks, "1"), want, "{function} {q}: block trace");
        }
    }
    assert!(found >= 4, "too few occurrences to compare: {found}");
    let err = fails(&[
        "match",
        &pw,
        "--function",
        "main",
        "--path",
        "1",
        "--scheme",
        "2",
    ]);
    assert!(err.contains("needs a block grammar"), "{err}");
}

/// Whether the blocks `q` (`3,4,7`) follow the edges of `function`'s CFG in `db`.
fn is_cfg_path(db: &wpp_trace::ProgramDb, function: &str, q: &str) -> bool {
    let f = db.functions.iter().find(|f| f.name == function).unwrap();
    let cfg = f.cfg.as_deref().unwrap();
    let blocks: Vec<u32> = q.split(',').map(|b| b.parse().unwrap()).collect();
    blocks.windows(2).all(|w| {
        cfg.successors
            .get(w[0] as usize)
            .is_some_and(|s| s.contains(&w[1]))
    })
}

/// `wpp match --path` with a block sequence that is not a path of the function's CFG gets a
/// note on stderr naming the first pair that is not an edge, on a path trace, a block trace and
/// a `.wpp` alike (it used to answer "no occurrence" silently, as if the path had not run), and
/// is still matched (a longjmp can take it); a file without CFGs cannot tell, and says nothing.
#[test]
fn a_block_sequence_off_the_cfg_is_noted() {
    let dir = Dir::new();
    let (paths, blocks, db) = path_and_block_traces(&dir);
    let (pw, bw) = (dir.path("p.wpp"), dir.path("b.wpp"));
    ok(&["compress", &paths, "-o", &pw]);
    ok(&["compress", &blocks, "-o", &bw]);
    let cfg = db.functions[0].cfg.as_deref().unwrap();
    assert_eq!(db.functions[0].name, "main");
    // An edge a -> b, then a block c that does not follow b.
    let (a, b, c) = (0..cfg.successors.len() as u32)
        .find_map(|a| {
            let &b = cfg.successors[a as usize].first()?;
            let c = (0..cfg.successors.len() as u32)
                .find(|c| !cfg.successors[b as usize].contains(c))?;
            Some((a, b, c))
        })
        .unwrap();
    let (good, bad) = (format!("{a},{b}"), format!("{a},{b},{c}"));
    assert!(is_cfg_path(&db, "main", &good) && !is_cfg_path(&db, "main", &bad));
    let says =
        format!("--path {bad} is not a path of `main`'s CFG: {b} -> {c} is not one of its edges");
    for file in [&paths, &blocks, &pw, &bw] {
        let r = wpp(&["match", file, "--function", "main", "--path", &good]);
        assert!(!r.stderr.contains("note"), "{}", r.stderr);
        for args in [vec!["--path", &bad], vec!["--path", &good, "--path", &bad]] {
            let mut all = vec!["match", file, "--function", "main", "--count", "--json"];
            all.extend(args);
            let r = wpp(&all);
            assert_eq!(r.code, Some(0), "{all:?}: {}{}", r.stdout, r.stderr);
            assert!(r.stderr.contains(&says), "{all:?}: {}", r.stderr);
            // The synthetic run follows its CFG: the sequence never occurs.
            let json: Value = serde_json::from_str(&r.stdout).unwrap();
            let outs = json.as_array().cloned().unwrap_or_else(|| vec![json]);
            let bad_blocks: Vec<u64> = bad.split(',').map(|b| b.parse().unwrap()).collect();
            let of_bad = outs
                .iter()
                .find(|o| o["path"] == serde_json::json!(bad_blocks));
            let streams = of_bad.expect("answered")["streams"].as_array().unwrap();
            assert!(streams.iter().all(|s| s["count"] == 0), "{}", r.stdout);
        }
    }
    // The same block trace without CFGs (or source lines): nothing to check against.
    let mut bare = db.clone();
    bare.functions.iter_mut().for_each(|f| {
        f.cfg = None;
        f.block_lines.clear();
    });
    let no_cfgs = dir.path("bare.trace");
    let (_, events) = read_events(&blocks).unwrap();
    std::fs::write(&no_cfgs, to_binary(&bare, &events).unwrap()).unwrap();
    let r = wpp(&["match", &no_cfgs, "--function", "main", "--path", &bad]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(!r.stderr.contains("note"), "{}", r.stderr);
}

/// `wpp hot --threads N` cuts each pass over the grammar into N parts: the output is the same
/// bytes on any number, the occurrences and call stacks reported included.
#[test]
fn hot_paths_are_the_same_on_any_number_of_threads() {
    let dir = Dir::new();
    let trace = synth(&dir, "t.trace", &["--events", "200000", "--threads", "2"]);
    let w = dir.path("t.wpp");
    ok(&["compress", &trace, "-o", &w]);
    let hot = |threads: &str| {
        ok(&[
            "hot",
            &w,
            "--min-share",
            "0.002",
            "--top",
            "1000",
            "--json",
            "--threads",
            threads,
        ])
    };
    let one = hot("1");
    let found: Value = serde_json::from_str(&one).unwrap();
    let paths = found["paths"].as_array().unwrap();
    assert!(paths.len() > 10, "{one}");
    assert!(paths
        .iter()
        .any(|p| !p["stack"].as_array().unwrap().is_empty()));
    for threads in ["2", "3", "16"] {
        assert_eq!(hot(threads), one, "--threads {threads}");
    }
}

/// `wpp hot` on a path grammar reports each hot path's decoded blocks and their source lines.
#[test]
fn hot_paths_show_their_blocks_and_lines() {
    let dir = Dir::new();
    let (paths, _, db) = path_and_block_traces(&dir);
    let pw = dir.path("p.wpp");
    ok(&["compress", &paths, "-o", &pw]);
    let out = ok(&[
        "hot",
        &pw,
        "--max-length",
        "3",
        "--min-cost",
        "50",
        "--json",
    ]);
    let found: Value = serde_json::from_str(&out).unwrap();
    let reports = found["paths"].as_array().unwrap();
    let mut decoded = 0;
    for r in reports {
        // A qualified string occurs at most as often as its unqualified events (`wpp subpath`).
        let terminals: Vec<String> = r["terminals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.to_string())
            .collect();
        let sub: Value = serde_json::from_str(&ok(&[
            "subpath",
            &pw,
            "--terminals",
            &terminals.join(","),
            "--json",
        ]))
        .unwrap();
        let all: u64 = sub
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["count"].as_u64().unwrap())
            .sum();
        assert!(r["count"].as_u64().unwrap() <= all, "{r} vs {sub}");
        let ids = |k: &str| -> Vec<u64> {
            r[k].as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect()
        };
        if ids("paths").is_empty() {
            continue;
        }
        let f = db.find(r["function"].as_str().unwrap()).unwrap();
        let mut d = wpp_paths::PathDecoder::new(&db).unwrap();
        let want: Vec<u64> = ids("paths")
            .iter()
            .flat_map(|&p| {
                d.blocks(f, wpp_trace::PathId(p), 0)
                    .unwrap()
                    .iter()
                    .map(|b| u64::from(b.0))
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(ids("blocks"), want);
        let lines: Vec<u64> = want.iter().map(|b| 100 + b).collect();
        assert_eq!(ids("lines"), lines);
        decoded += 1;
    }
    assert!(decoded > 0, "no hot paths: {out}");
}

/// Every command, given a missing file, a directory, an empty file, a file that is no wpp file
/// and a wpp file of a kind it does not read: a one-line error (exit 1) naming the file and the
/// kind found, and for a wrong kind the commands that read it.
#[test]
fn every_command_names_wrong_empty_missing_and_directory_inputs() {
    let dir = Dir::new();
    let trace = synth(&dir, "t.trace", &["--events", "2000"]);
    let wpp = dir.path("t.wpp");
    ok(&["compress", &trace, "-o", &wpp]);
    let json = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../wpp-paths/examples/fig3.json")
        .display()
        .to_string();
    let interesting = json.replace("fig3.json", "fig3_paths.json");
    let (empty, garbage) = (dir.path("empty"), dir.path("garbage"));
    std::fs::write(&empty, b"").unwrap();
    std::fs::write(
        &garbage,
        b"#include <stdio.h>\nint main(void) { return 0; }\n",
    )
    .unwrap();
    let missing = dir.path("missing.wpp");
    let folder = dir.0.path().display().to_string();
    let out = dir.path("out");
    // Recognised by their magic (what follows is not read).
    let (at, depf) = (dir.path("x.at"), dir.path("x.depf"));
    std::fs::write(&at, b"WPP-AT\r\n...").unwrap();
    std::fs::write(&depf, b"WPP-DEPF...").unwrap();
    // (command with FILE as the input, a file of a kind the command does not read)
    let table: Vec<(Vec<&str>, &str)> = vec![
        (vec!["compress", "FILE", "-o", &out], &json),
        (vec!["decompress", "FILE", "-o", &out], &trace),
        (vec!["verify", "FILE", &trace], &trace),
        (vec!["verify", &wpp, "FILE"], &wpp),
        (vec!["stats", "FILE"], &trace),
        (vec!["stats", "FILE"], &at),
        (vec!["compress", "FILE", "-o", &out], &depf),
        (vec!["functions", "FILE"], &json),
        (vec!["cfg", "FILE", "--function", "f"], &trace),
        (vec!["hot", "FILE"], &trace),
        (vec!["subpath", "FILE", "--terminals", "0"], &json),
        (
            vec!["match", "FILE", "--function", "f0", "--path", "0"],
            &json,
        ),
        (vec!["paths", "number", "FILE"], &trace),
        (
            vec!["ppp", "plan", "FILE", "--interesting", &interesting],
            &trace,
        ),
        (vec!["trace", "cat", "FILE"], &wpp),
        (
            vec!["trace", "convert", "FILE", "-o", &out, "--to", "text"],
            &wpp,
        ),
        (vec!["trace", "blocks", "FILE", "-o", &out], &wpp),
        (vec!["trace", "chunk", "FILE", "-o", &out], &wpp),
        (vec!["profile", "show", "FILE"], &wpp),
        (vec!["annotate", "FILE"], &json),
        (vec!["report", "FILE", "-o", &out], &json),
    ];
    for (args, wrong) in &table {
        let cases = [
            (&missing[..], "No such file"),
            (&folder[..], "is a directory"),
            (&empty[..], "is empty"),
            (&garbage[..], "is not a wpp file"),
            (wrong, ""),
        ];
        for (file, says) in cases {
            let argv: Vec<&str> = args
                .iter()
                .map(|&a| if a == "FILE" { file } else { a })
                .collect();
            let err = fails(&argv);
            assert_eq!(err.trim_end().lines().count(), 1, "{argv:?}: {err}");
            assert!(err.contains(file), "{argv:?} does not name {file}: {err}");
            assert!(err.contains(says), "{argv:?}: {err}");
            // CFG readers take every kind that can carry CFGs; a block trace carries none.
            let reads_cfgs = ["paths", "ppp", "cfg"].contains(&argv[0]);
            if says.is_empty() && !reads_cfgs {
                assert!(
                    err.contains(", but `wpp "),
                    "{argv:?} names no reader: {err}"
                );
            } else if says.is_empty() {
                assert!(err.contains("carries no CFGs"), "{argv:?}: {err}");
            }
        }
    }
}

/// `wpp help cc` lists every option `wpp cc` knows (the parser's own list, in its error for an
/// unknown one), with its environment variable.
#[test]
fn wpp_help_cc_lists_every_wpp_option() {
    let help = ok(&["help", "cc"]);
    let err = wpp(&["cc", "--wpp-bogus", "x.c"]).stderr;
    let known = err.split("known: ").nth(1).expect("the known options");
    for option in known.trim_end().trim_end_matches(')').split(", ") {
        let name = option.trim_end_matches('=');
        assert!(
            help.contains(name),
            "{name} is not in `wpp help cc`:\n{help}"
        );
    }
    for var in [
        "WPP_MODE",
        "WPP_EXERCISED",
        "WPP_OUT",
        "WPP_RAW",
        "WPP_QUIET",
    ] {
        assert!(help.contains(var), "{var}: {help}");
    }
}

/// `wpp compress` refuses, before any work and leaving no file behind, an output that is its
/// input (a killed run's spool may be the only copy of its events), a directory, or in a
/// directory that does not exist.
#[test]
fn compress_refuses_outputs_it_cannot_write() {
    let dir = Dir::new();
    let trace = synth(&dir, "t.trace", &["--events", "2000"]);
    let before = std::fs::read(&trace).unwrap();
    let folder = dir.0.path().display().to_string();
    let nowhere = dir.path("no/such/dir/t.wpp");
    for (output, says) in [
        (&trace, "it is the input"),
        (&folder, "it is a directory"),
        (&nowhere, "there is no directory"),
    ] {
        let err = fails(&["compress", &trace, "-o", output]);
        assert!(err.contains(output) && err.contains(says), "{err}");
    }
    assert_eq!(std::fs::read(&trace).unwrap(), before);
    let left: Vec<_> = std::fs::read_dir(dir.0.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "{left:?}");
}

/// Unknown function names and blocks or paths a function does not have exit with status 2 and
/// suggest the nearest names.
#[test]
fn unknown_functions_and_ids_exit_2_with_suggestions() {
    let dir = Dir::new();
    let (paths, _, _) = path_and_block_traces(&dir);
    let pw = dir.path("p.wpp");
    ok(&["compress", &paths, "-o", &pw]);
    let json = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../wpp-paths/examples/fig3.json")
        .display()
        .to_string();
    let cases: [(Vec<&str>, &str); 6] = [
        (
            vec!["match", &pw, "--function", "helpr", "--path", "0"],
            "did you mean `helper`?",
        ),
        (
            vec!["match", &paths, "--function", "mian", "--path", "0"],
            "did you mean `main`?",
        ),
        (
            vec!["match", &pw, "--function", "main", "--path", "0,999"],
            "block 999 is not one of them",
        ),
        (
            vec!["paths", "decode", &json, "--function", "fig", "--id", "0"],
            "did you mean `fig3`?",
        ),
        (
            vec!["paths", "decode", &json, "--function", "fig3", "--id", "6"],
            "has paths 0 to 5",
        ),
        (
            vec!["cfg", &pw, "--function", "hlper"],
            "did you mean `helper`?",
        ),
    ];
    for (args, says) in cases {
        let r = wpp(&args);
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
    }
}

/// `wpp functions` counts agree between a path recording's `.wpp` (from the grammar) and its
/// trace (streamed), and each function's calls equal a count of its `F` events.
#[test]
fn functions_counts_agree_between_grammar_trace_and_brute_force() {
    let dir = Dir::new();
    let (paths, _, db) = path_and_block_traces(&dir);
    let pw = dir.path("p.wpp");
    ok(&["compress", &paths, "-o", &pw]);
    let rows =
        |f: &str| -> Value { serde_json::from_str(&ok(&["functions", f, "--json"])).unwrap() };
    let (from_wpp, from_trace) = (rows(&pw), rows(&paths));
    let paths_file = paths.clone();
    assert_eq!(from_wpp, from_trace);
    let (_, events) = read_events(&paths).unwrap();
    let mut checked = 0;
    for row in from_wpp.as_array().unwrap() {
        let f = db.find(row["name"].as_str().unwrap()).unwrap();
        assert!(row["paths"].as_u64().unwrap() > 0, "{row}");
        assert_eq!(
            row["blocks"].as_u64().unwrap(),
            db.functions[f.index()].block_lines.len() as u64
        );
        let calls = row["calls"].as_u64().unwrap();
        let want = events.iter().filter(|&&e| e == Event::Enter(f)).count() as u64;
        assert_eq!(calls, want, "{row}");
        // `wpp cfg` shows the same function: its blocks, one line each, and its path count.
        let name = row["name"].as_str().unwrap();
        let shown = ok(&["cfg", &pw, "--function", name]);
        let head = format!("{name}: {} blocks, ", row["blocks"].as_u64().unwrap());
        assert!(shown.starts_with(&head), "{shown}");
        let paths = format!(" {} acyclic paths;", row["paths"].as_u64().unwrap());
        assert!(shown.contains(&paths), "{shown}");
        assert!(shown.contains("(line 100)"), "{shown}");
        assert!(ok(&["cfg", &paths_file, "--function", name, "--dot"]).starts_with("digraph"));
        // `wpp paths` reads the recording's CFGs as it reads CFG JSON: the same path count.
        let numbered: Value =
            serde_json::from_str(&ok(&["paths", "number", &pw, "--json"])).unwrap();
        let this = numbered
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {numbered}"));
        assert_eq!(this["paths"], row["paths"], "{this}");
        checked += 1;
    }
    assert_eq!(checked, 2);
}

/// `wpp diff` between two recordings: each changed function's counts are the events `wpp
/// functions` finds in each, and the changes come largest first.
#[test]
fn diff_of_two_recordings_agrees_with_functions() {
    let dir = Dir::new();
    let (ta, tb) = (dir.path("a.trace"), dir.path("b.trace"));
    ok(&["synth", "--seed", "1", "--events", "20000", "-o", &ta]);
    ok(&["synth", "--seed", "2", "--events", "30000", "-o", &tb]);
    let (wa, wb) = (dir.path("a.wpp"), dir.path("b.wpp"));
    ok(&["compress", &ta, "-o", &wa]);
    ok(&["compress", &tb, "-o", &wb]);
    let events = |f: &str| -> BTreeMap<String, u64> {
        let rows: Value = serde_json::from_str(&ok(&["functions", f, "--json"])).unwrap();
        rows.as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["name"].as_str().unwrap().to_owned(),
                    r["events"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let (ea, eb) = (events(&wa), events(&wb));
    let d: Value = serde_json::from_str(&ok(&["diff", &wa, &wb, "--json"])).unwrap();
    let changed = d["functions"].as_array().unwrap();
    assert!(!changed.is_empty());
    for c in changed {
        let f = c["function"].as_str().unwrap();
        let want = [ea.get(f), eb.get(f)].map(|n| n.copied().unwrap_or(0));
        assert_eq!(c["counts"][0].as_u64().unwrap(), want[0], "{c}");
        assert_eq!(c["counts"][1].as_u64().unwrap(), want[1], "{c}");
    }
    let deltas: Vec<u64> = changed
        .iter()
        .map(|c| c["delta"].as_i64().unwrap().unsigned_abs())
        .collect();
    assert!(deltas.windows(2).all(|w| w[0] >= w[1]), "{deltas:?}");
    assert!(
        !ok(&["--help"]).contains("Other:"),
        "every command sits in a group"
    );

    // Two seeds are two programs whose functions share names: a function whose CFG differs
    // has its blocks left out, said in the output.
    let reshaped: Vec<&str> = d["reshaped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(!reshaped.is_empty());
    let items = d["items"].as_array().unwrap();
    assert!(items
        .iter()
        .all(|i| !reshaped.contains(&i["function"].as_str().unwrap())));
    assert!(ok(&["diff", &wa, &wb]).contains("have another CFG in each recording"));
    // Two runs of one program compare their blocks.
    let tc = dir.path("c.trace");
    ok(&["synth", "--seed", "1", "--events", "30000", "-o", &tc]);
    let wc = dir.path("c.wpp");
    ok(&["compress", &tc, "-o", &wc]);
    let same: Value = serde_json::from_str(&ok(&["diff", &wa, &wc, "--json"])).unwrap();
    assert_eq!(same["reshaped"].as_array().unwrap().len(), 0, "{same}");
    assert!(!wpp(&["diff", &wa, &wc]).stderr.contains("warning"));
    // Programs that share only `main` are compared, with a warning.
    let (xa, xb) = (dir.path("x.txt"), dir.path("y.txt"));
    std::fs::write(&xa, "F main\nB 0\nF foo\nB 0\nE\nF zed\nB 0\nE\nE\n").unwrap();
    std::fs::write(&xb, "F main\nB 0\nF bar\nB 0\nE\nF baz\nB 0\nE\nE\n").unwrap();
    let (ya, yb) = (dir.path("x.wpp"), dir.path("y.wpp"));
    ok(&["compress", &xa, "-o", &ya]);
    ok(&["compress", &xb, "-o", &yb]);
    let unrelated = wpp(&["diff", &ya, &yb]);
    assert_eq!(unrelated.code, Some(0), "{}", unrelated.stderr);
    assert!(
        unrelated.stderr.contains("only 1 of 3 functions in common"),
        "{}",
        unrelated.stderr
    );
    assert!(!same["items"].as_array().unwrap().is_empty(), "{same}");
    // Blocks against paths, and two programs without a function in common, are refused.
    let tp = dir.path("p.trace");
    ok(&[
        "synth", "--seed", "1", "--events", "20000", "--kind", "paths", "-o", &tp,
    ]);
    let wp = dir.path("p.wpp");
    ok(&["compress", &tp, "-o", &wp]);
    assert!(fails(&["diff", &wa, &wp]).contains("record different kinds of events"));
    let (x, y) = (dir.path("x.txt"), dir.path("y.txt"));
    std::fs::write(&x, "F main\nB 0\nE\n").unwrap();
    std::fs::write(&y, "F other\nB 0\nE\n").unwrap();
    let (wx, wy) = (dir.path("x.wpp"), dir.path("y.wpp"));
    ok(&["compress", &x, "-o", &wx]);
    ok(&["compress", &y, "-o", &wy]);
    assert!(fails(&["diff", &wx, &wy]).contains("record different programs"));
}

/// Issue 14 item 1: a 17-byte text trace naming function 4294967295 used to panic and
/// allocate 4.3 GB in `trace chunk` (`f + 1` wrapped in the level index). Every command that
/// builds an index from a trace refuses it, naming the file and the line.
#[test]
fn an_undeclared_function_id_is_refused_by_every_index_builder() {
    let dir = Dir::new();
    let f = dir.path("f.txt");
    std::fs::write(&f, "F #4294967295\nE\n").unwrap();
    let out = dir.path("x");
    let commands: [&[&str]; 4] = [
        &["trace", "chunk", &f, "-o", &out],
        &["trace", "convert", &f, "--to", "binary", "-o", &out],
        &["compress", &f, "-o", &out, "--index"],
        &["trace", "cat", &f],
    ];
    for args in commands {
        let err = fails(args);
        assert!(err.contains(&f), "{args:?}: {err}");
        assert!(
            err.contains("line 1: function id 4294967295 is not declared"),
            "{args:?}: {err}"
        );
    }
}

/// Issue 14 item 2: a binary trace with one chunk duplicated used to be accepted (`trace cat`
/// printed the events twice). Chunks carry sequence numbers now: every reader refuses the file
/// with its name and the byte offset of the duplicate.
#[test]
fn a_duplicated_chunk_is_refused_with_the_file_and_offset() {
    let dir = Dir::new();
    let trace = synth(&dir, "t.trace", &["--events", "20000", "--kind", "blocks"]);
    let bytes = std::fs::read(&trace).unwrap();
    // The first chunk starts after the preamble and the program database.
    let db_len = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
    let first = 20 + db_len;
    let stored = u32::from_le_bytes(bytes[first..first + 4].try_into().unwrap()) as usize;
    let second = first + wpp_trace::file::binary::CHUNK_HEADER_LEN + stored;
    let doubled = [&bytes[..second], &bytes[first..]].concat();
    let bad = dir.path("doubled.trace");
    std::fs::write(&bad, doubled).unwrap();
    let out = dir.path("x");
    for args in [
        &["trace", "cat", &bad][..],
        &["trace", "chunk", &bad, "-o", &out],
        &["compress", &bad, "-o", &out],
    ] {
        let err = fails(args);
        assert!(err.contains(&bad), "{args:?}: {err}");
        assert!(
            err.contains(&format!(
                "byte offset {second}: this chunk has sequence number 0 where chunk 1 was expected"
            )),
            "{args:?}: {err}"
        );
    }
}

/// Trial D7: `wpp cfg` on a block trace without path probes names the recordings that carry
/// CFGs and what this one is, not "a trace-blocks recording?" (trace-blocks carries them).
#[test]
fn a_recording_without_cfgs_says_which_recordings_carry_them() {
    let dir = Dir::new();
    let trace = synth(&dir, "t.trace", &["--events", "2000", "--kind", "blocks"]);
    let err = fails(&["cfg", &trace, "--function", "f"]);
    assert!(
        err.contains("it is a block trace without path probes (`--mode trace-addr`")
            && err.contains("--mode trace-paths, trace-blocks (by default), bl and ppp embed them")
            && !err.contains("a trace-blocks recording?"),
        "{err}"
    );
}

/// Trial D10: an export or annotation that fails leaves no output file (it used to leave an
/// empty one); one that succeeds writes it.
#[test]
fn a_failed_export_leaves_no_output_file() {
    let dir = Dir::new();
    let trace = synth(&dir, "t.trace", &["--events", "2000", "--kind", "blocks"]);
    let out = dir.path("x.json");
    let err = fails(&[
        "export", &trace, "--format", "chrome", "--from", "99999999", "-o", &out,
    ]);
    assert!(err.contains("t.trace"), "{err}");
    assert!(!Path::new(&out).exists(), "{err}");
    let lcov = dir.path("x.lcov");
    let functions: Value = serde_json::from_str(&ok(&["functions", &trace, "--json"])).unwrap();
    let f = functions[0]["name"].as_str().unwrap();
    // `--function` applies to the text format only: refused once the output is open.
    fails(&[
        "annotate",
        &trace,
        "--format",
        "lcov",
        "--function",
        f,
        "-o",
        &lcov,
    ]);
    assert!(!Path::new(&lcov).exists());
    ok(&["export", &trace, "--format", "chrome", "-o", &out]);
    assert!(std::fs::metadata(&out).unwrap().len() > 0);
}

/// Trial D4 and D11: overlapping occurrences each count (`B 0, B 0` 999 times in 1000 `B 0`s),
/// so a share exceeds 100%: the header and `--min-share` say so; `--help` says the position
/// shown is one occurrence's.
#[test]
fn hot_says_that_overlapping_occurrences_count() {
    let dir = Dir::new();
    let trace = dir.path("t.txt");
    let events = format!("F main\n{}E\n", "B 0\n".repeat(1000));
    std::fs::write(&trace, events).unwrap();
    let w = dir.path("t.wpp");
    ok(&["compress", &trace, "-o", &w]);
    let out = ok(&["hot", &w, "--top", "1"]);
    assert!(
        out.lines()
            .next()
            .unwrap()
            .ends_with("costs count overlapping occurrences, so a share can exceed 100%"),
        "{out}"
    );
    let help = ok(&["hot", "--help"]);
    assert!(help.contains("counts overlapping occurrences"), "{help}");
    assert!(help.contains("is one occurrence's"), "{help}");
    assert!(!help.contains("The list depends only on the run"), "{help}");
}
