//! Every export of `wpp annotate`/`export`/`report` read back by the real consumer, on real
//! recordings of `tests/programs/recursion.c` made with `wpp cc -g`, with the counts they show
//! compared to a brute-force replay of the decompressed trace and to `wpp match`:
//! `go tool pprof` (Debian `golang-go`), `callgrind_annotate` (`valgrind`), `genhtml` (`lcov`),
//! speedscope's own JSON schema (npm `speedscope`, checked with Debian's `python3-jsonschema`),
//! and headless Chromium (`chromium`) for the report. `scripts/install-deps.sh` installs them.
//!
//! Needs LLVM (`--features llvm`), like every test that records.

#![cfg(feature = "llvm")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PROGRAM: &str = "recursion.c";

fn wpp(dir: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_wpp"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run wpp");
    assert!(
        out.status.success(),
        "wpp {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn tool(dir: &Path, name: &str, args: &[&str]) -> String {
    let out = Command::new(name)
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {name} (scripts/install-deps.sh installs it): {e}"));
    assert!(
        out.status.success(),
        "{name} {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// Builds the program in `mode` with `-g` and runs it; returns the output file.
fn record(dir: &Path, mode: &str, out: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/programs")
        .join(PROGRAM);
    let exe = format!("prog-{mode}");
    wpp(
        dir,
        &[
            "cc",
            "--mode",
            mode,
            "--",
            "-O1",
            "-g",
            src.to_str().unwrap(),
            "-o",
            &exe,
        ],
    );
    let status = Command::new(dir.join(&exe))
        .current_dir(dir)
        .env("WPP_OUT", out)
        .env("WPP_QUIET", "1")
        // The `.wpp` is read right after the run: finish it before the exit (a detached
        // finisher runs at idle priority and may not have finished by then).
        .env("WPP_FINISH", "wait")
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    dir.join(out)
}

/// The brute force on the decompressed text trace: events (with the leading `T 0` the
/// replay of a `.wpp` has), per-function self events and per-(function, block) counts.
struct Oracle {
    names: Vec<String>,
    events: Vec<String>,
    own: BTreeMap<String, u64>,
    blocks: BTreeMap<(String, u32), u64>,
}

fn oracle(dir: &Path, file: &str) -> Oracle {
    wpp(dir, &["decompress", file, "-o", "oracle.txt", "--text"]);
    let text = std::fs::read_to_string(dir.join("oracle.txt")).unwrap();
    let mut o = Oracle {
        names: Vec::new(),
        events: vec!["T 0".into()],
        own: BTreeMap::new(),
        blocks: BTreeMap::new(),
    };
    let mut stack: Vec<String> = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (kind, arg) = line.split_once(' ').unwrap_or((line, ""));
        match kind {
            "D" => {
                o.names.push(arg.to_owned());
                continue;
            }
            "F" => stack.push(arg.to_owned()),
            "E" => {
                stack.pop();
            }
            "B" | "P" => {
                let f = stack.last().expect("event inside a frame").clone();
                *o.own.entry(f.clone()).or_default() += 1;
                *o.blocks.entry((f, arg.parse().unwrap())).or_default() += 1;
            }
            _ => {}
        }
        o.events.push(line.to_owned());
    }
    o
}

fn samples(o: &Oracle) -> u64 {
    o.own.values().sum()
}

/// `go tool pprof -top`'s flat column by function.
fn pprof_flat(dir: &Path, file: &str) -> BTreeMap<String, u64> {
    let top = tool(
        dir,
        "go",
        &[
            "tool",
            "pprof",
            "-top",
            "-nodecount=100000",
            "-nodefraction=0",
            "-edgefraction=0",
            file,
        ],
    );
    let mut flat = BTreeMap::new();
    for line in top.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() == 6 && cols[1].ends_with('%') && cols[0].parse::<u64>().is_ok() {
            let n: u64 = cols[0].parse().unwrap();
            if n > 0 {
                flat.insert(cols[5].to_owned(), n);
            }
        }
    }
    flat
}

/// `callgrind_annotate`'s per-function totals (exclusive, or inclusive).
fn callgrind_totals(dir: &Path, file: &str, inclusive: bool) -> BTreeMap<String, u64> {
    let inc = format!("--inclusive={}", if inclusive { "yes" } else { "no" });
    let text = tool(dir, "callgrind_annotate", &[&inc, "--threshold=100", file]);
    // The table after the `file:function` header, up to the next rule.
    let table = text
        .lines()
        .skip_while(|l| !l.contains("file:function"))
        .skip(2)
        .take_while(|l| !l.starts_with("---"));
    let mut totals = BTreeMap::new();
    for line in table {
        let Some((n, rest)) = line.trim().split_once(' ') else {
            continue;
        };
        let (Ok(n), Some((_, func))) = (n.replace(',', "").parse::<u64>(), rest.rsplit_once(':'))
        else {
            continue;
        };
        totals.insert(func.trim().to_owned(), n);
    }
    totals
}

#[test]
fn exports_read_back_by_real_consumers_match_the_trace() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    record(dir, "trace-blocks", "blocks.wpp");
    let o = oracle(dir, "blocks.wpp");
    assert!(samples(&o) > 10_000, "a real run");

    // Folded stacks: every block event once.
    let folded =
        String::from_utf8(wpp(dir, &["export", "blocks.wpp", "--format", "folded"]).stdout)
            .unwrap();
    let total: u64 = folded
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, samples(&o));
    assert!(
        folded
            .lines()
            .any(|l| l.starts_with("main:") && l.contains(";ack:")),
        "{folded}"
    );

    // pprof, read by the Go toolchain's pprof.
    wpp(
        dir,
        &["export", "blocks.wpp", "--format", "pprof", "-o", "p.pb.gz"],
    );
    assert_eq!(
        pprof_flat(dir, "p.pb.gz"),
        o.own,
        "go tool pprof -top flat = events per function"
    );

    // callgrind, read by callgrind_annotate: exclusive per function, inclusive of main = all.
    wpp(
        dir,
        &[
            "export",
            "blocks.wpp",
            "--format",
            "callgrind",
            "-o",
            "cg.out",
        ],
    );
    assert_eq!(callgrind_totals(dir, "cg.out", false), o.own);
    assert_eq!(callgrind_totals(dir, "cg.out", true)["main"], samples(&o));

    // A block's count equals `wpp match`'s, and the lcov line of that block shows it.
    let ((f, b), n) = o
        .blocks
        .iter()
        .filter(|((f, _), _)| f == "collatz")
        .max_by_key(|(_, n)| **n)
        .unwrap();
    let m = String::from_utf8(
        wpp(
            dir,
            &[
                "match",
                "blocks.wpp",
                "--function",
                f,
                "--path",
                &b.to_string(),
                "--count",
            ],
        )
        .stdout,
    )
    .unwrap();
    assert!(m.contains(&format!(": {n} occurrences")), "{m} vs {n}");
    wpp(
        dir,
        &[
            "annotate",
            "blocks.wpp",
            "--format",
            "lcov",
            "-o",
            "blocks.info",
        ],
    );
    let lcov = std::fs::read_to_string(dir.join("blocks.info")).unwrap();
    assert!(
        lcov.contains(&format!(",{n}\n")),
        "the hottest collatz block's count {n} is a DA count:\n{lcov}"
    );
    tool(dir, "genhtml", &["-q", "blocks.info", "-o", "html"]);
    assert!(dir.join("html/index.html").is_file());

    // speedscope, validated against the schema its npm package ships.
    wpp(
        dir,
        &[
            "export",
            "blocks.wpp",
            "--format",
            "speedscope",
            "-o",
            "s.json",
        ],
    );
    let root = tool(dir, "npm", &["root", "-g"]);
    let schema = Path::new(root.lines().next().unwrap().trim())
        .join("speedscope/dist/release/file-format-schema.json");
    tool(dir, "python3", &["-c", "import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))", "s.json", schema.to_str().unwrap()]);
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("s.json")).unwrap()).unwrap();
    let weights: u64 = s["profiles"][0]["weights"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_u64().unwrap())
        .sum();
    assert_eq!(weights, samples(&o));

    // Chrome trace of a window: balanced slices, block time = block events in the window.
    let (from, to) = (1000usize, 3000usize);
    wpp(
        dir,
        &[
            "export",
            "blocks.wpp",
            "--format",
            "chrome",
            "--from",
            &from.to_string(),
            "--to",
            &to.to_string(),
            "-o",
            "c.json",
        ],
    );
    let c: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("c.json")).unwrap()).unwrap();
    let mut depth = 0i64;
    let mut block_time = 0;
    for e in c["traceEvents"].as_array().unwrap() {
        let ts = e["ts"].as_u64().unwrap() as usize;
        assert!((from..=to).contains(&ts), "{e}");
        match e["ph"].as_str().unwrap() {
            "B" => depth += 1,
            "E" => depth -= 1,
            "X" => block_time += e["dur"].as_u64().unwrap(),
            ph => panic!("unexpected phase {ph}"),
        }
        assert!(depth >= 0);
    }
    assert_eq!(depth, 0, "every slice closed");
    // The index does not count the `T` event (the oracle's first): it is the position
    // `wpp match` and `wpp hot` print.
    let want = o.events[1..][from..to]
        .iter()
        .filter(|e| e.starts_with("B "))
        .count() as u64;
    assert_eq!(block_time, want);
    // The one thread chosen by its id: the same window.
    let chrome = |extra: &[&str]| {
        let mut args = vec![
            "export",
            "blocks.wpp",
            "--format",
            "chrome",
            "--from",
            "1000",
        ];
        args.extend(["--to", "3000"]);
        args.extend(extra);
        Command::new(env!("CARGO_BIN_EXE_wpp"))
            .current_dir(dir)
            .args(&args)
            .output()
            .unwrap()
    };
    assert_eq!(chrome(&["--thread", "0"]).stdout, chrome(&[]).stdout);
    let none = chrome(&["--thread", "7"]);
    assert!(!none.status.success());
    let said = String::from_utf8_lossy(&none.stderr);
    assert!(
        said.contains("no thread 7; choose --thread from its threads: 0"),
        "{said}"
    );
    let too_big = Command::new(env!("CARGO_BIN_EXE_wpp"))
        .current_dir(dir)
        .args([
            "export",
            "blocks.wpp",
            "--format",
            "chrome",
            "--from",
            "0",
            "--to",
            "10",
            "--max-events",
            "5",
        ])
        .output()
        .unwrap();
    assert!(!too_big.status.success() && String::from_utf8_lossy(&too_big.stderr).contains("cap"));
}

#[test]
fn path_recordings_and_profiles_annotate_the_lines_block_recordings_do() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    record(dir, "trace-blocks", "blocks.wpp");
    record(dir, "trace-paths", "paths.wpp");
    record(dir, "bl", "run.blprof");
    let lcov = |file: &str| {
        String::from_utf8(wpp(dir, &["annotate", file, "--format", "lcov"]).stdout).unwrap()
    };
    let blocks = lcov("blocks.wpp");
    assert!(blocks.contains("DA:"), "{blocks}");
    assert_eq!(
        lcov("paths.wpp"),
        blocks,
        "paths decode to the blocks of the block recording"
    );
    assert_eq!(
        lcov("run.blprof"),
        blocks,
        "a bl profile decodes to the same line counts"
    );
    // Calls of a bl profile: the runs of paths from the entry (trial 35 H11: left out), as
    // the trace's `F` events count them.
    let calls = |file: &str| -> Vec<(String, u64)> {
        let out = wpp(dir, &["functions", file, "--json"]).stdout;
        let rows: Vec<serde_json::Value> = serde_json::from_slice(&out).unwrap();
        let call = |r: &serde_json::Value| {
            (
                r["name"].as_str().unwrap().to_owned(),
                r["calls"].as_u64().unwrap(),
            )
        };
        let mut calls: Vec<_> = rows.iter().map(call).collect();
        calls.sort();
        calls
    };
    assert_eq!(calls("run.blprof"), calls("blocks.wpp"));
    // Path samples: one per P event, per function as pprof shows them.
    let o = oracle(dir, "paths.wpp");
    wpp(
        dir,
        &["export", "paths.wpp", "--format", "pprof", "-o", "p.pb.gz"],
    );
    assert_eq!(pprof_flat(dir, "p.pb.gz"), o.own);
    let text =
        String::from_utf8(wpp(dir, &["annotate", "paths.wpp", "--function", "collatz"]).stdout)
            .unwrap();
    assert!(
        text.contains("^ path ") && text.contains("of collatz ×"),
        "{text}"
    );
    // A source changed after the recording is said to be (trial 34 G3), by annotate and report.
    let said = |args: &[&str]| String::from_utf8(wpp(dir, args).stderr).unwrap();
    let warning = "changed after run.blprof was written";
    assert!(!said(&["annotate", "run.blprof"]).contains(warning));
    let old = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
    let profile = std::fs::File::options()
        .write(true)
        .open(dir.join("run.blprof"));
    profile.unwrap().set_modified(old).unwrap();
    assert!(said(&["annotate", "run.blprof"]).contains(warning));
    assert!(said(&["report", "run.blprof", "-o", "r"]).contains(warning));
}

/// Loads `page` in headless Chromium: its DOM after scripts ran, and its console messages.
fn chromium(dir: &Path, page: &Path, shot: &Path) -> (String, String) {
    let url = format!("file://{}", page.display());
    let flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--enable-logging=stderr",
        "--v=0",
    ];
    let run = |extra: &[&str]| {
        Command::new("chromium")
            .current_dir(dir)
            .args(flags)
            .args(extra)
            .arg(&url)
            .output()
            .expect("cannot run chromium (scripts/install-deps.sh installs it)")
    };
    let dom = run(&["--dump-dom"]);
    let shot_arg = format!("--screenshot={}", shot.display());
    let pic = run(&[&shot_arg, "--window-size=1200,2400"]);
    assert!(
        shot.is_file(),
        "no screenshot: {}",
        String::from_utf8_lossy(&pic.stderr)
    );
    let console = String::from_utf8_lossy(&dom.stderr)
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .collect::<Vec<_>>()
        .join("\n");
    (String::from_utf8_lossy(&dom.stdout).into_owned(), console)
}

#[test]
fn report_loads_in_headless_chromium_with_every_part() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    record(dir, "trace-paths", "paths.wpp");
    record(dir, "bl", "run.blprof");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("wpp-report");
    for (input, name, parts) in [
        (
            "paths.wpp",
            "recording",
            &["stats", "flame", "hot", "functions", "paths", "source"][..],
        ),
        (
            "run.blprof",
            "profile",
            &["stats", "hot", "functions", "paths", "source"][..],
        ),
    ] {
        let site = out.join(name);
        wpp(dir, &["report", input, "-o", site.to_str().unwrap()]);
        let shot = out.join(format!("{name}.png"));
        let (dom, console) = chromium(dir, &site.join("index.html"), &shot);
        eprintln!("report screenshot: {}", shot.display());
        assert!(console.is_empty(), "console messages: {console}");
        assert!(dom.contains("data-loaded=\"6\""), "the page's script ran");
        for p in parts {
            assert!(
                dom.contains(&format!("<section id=\"{p}\"")),
                "{name} has no {p}"
            );
        }
        assert!(dom.contains("href=\"#L"), "hot paths link to the source");
        assert!(
            dom.contains("of collatz") || dom.contains(">collatz<"),
            "{name} names functions"
        );
    }
    let page = std::fs::read_to_string(out.join("recording/index.html")).unwrap();
    assert!(
        page.contains("data:image/svg+xml;base64,"),
        "the flame graph is embedded"
    );
}

/// A function inlined from a header is annotated in the header: the program database the
/// instrumented program embeds keeps each block's file (it once kept only the function's, so
/// the header's line 4 was shown as line 4 of `m.c`). The count is known by hand: the header's
/// loop body runs once per character of the arguments (the program's path, `hello`, `world`).
#[test]
fn blocks_inlined_from_a_header_are_annotated_in_the_header() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let header = "static inline int count_odd(const char *s) {\n  int r = 0;\n  while (*s) {\n    \
                  if (*s & 1)\n      r++;\n    s++;\n  }\n  return r;\n}\n";
    let main = "#include <stdio.h>\n#include \"h.h\"\nint main(int argc, char **argv) {\n  \
                int s = 0;\n  for (int i = 0; i < argc; i++)\n    s += count_odd(argv[i]);\n  \
                printf(\"%d\\n\", s);\n  return 0;\n}\n";
    std::fs::write(dir.join("h.h"), header).unwrap();
    std::fs::write(dir.join("m.c"), main).unwrap();
    wpp(
        dir,
        &[
            "cc",
            "--mode",
            "trace-blocks",
            "--",
            "-O1",
            "-g",
            "m.c",
            "-o",
            "m",
        ],
    );
    let run = Command::new(dir.join("m"))
        .current_dir(dir)
        .args(["hello", "world"])
        .env("WPP_OUT", "m.wpp")
        .env("WPP_FINISH", "wait")
        .env("WPP_QUIET", "1")
        .output()
        .unwrap();
    // The same program as a bl profile: the profile file keeps the source table too.
    wpp(
        dir,
        &["cc", "--mode", "bl", "--", "-O1", "-g", "m.c", "-o", "mbl"],
    );
    let bl = Command::new(dir.join("mbl"))
        .current_dir(dir)
        .args(["hello", "world"])
        .env("WPP_OUT", "m.blprof")
        .env("WPP_QUIET", "1")
        .status()
        .unwrap();
    assert!(bl.success());
    let args = format!("{}helloworld", dir.join("m").display());
    let args_bl = format!("{}helloworld", dir.join("mbl").display());
    let odd = args.bytes().filter(|b| b & 1 == 1).count();
    assert_eq!(String::from_utf8_lossy(&run.stdout), format!("{odd}\n"));
    let lcov =
        String::from_utf8(wpp(dir, &["annotate", "m.wpp", "--format", "lcov"]).stdout).unwrap();
    let section = |suffix: &str| -> String {
        lcov.split("end_of_record")
            .find(|r| {
                r.lines()
                    .any(|l| l.starts_with("SF:") && l.ends_with(suffix))
            })
            .unwrap_or_else(|| panic!("no SF:…{suffix} in {lcov}"))
            .to_owned()
    };
    let chars = args.len();
    assert!(
        section("h.h").contains(&format!("DA:4,{chars}\n")),
        "{lcov}"
    );
    assert!(
        !section("m.c").contains(&format!("DA:4,{chars}\n")),
        "{lcov}"
    );
    let profile =
        String::from_utf8(wpp(dir, &["annotate", "m.blprof", "--format", "lcov"]).stdout).unwrap();
    let in_header = profile
        .split("end_of_record")
        .find(|r| {
            r.lines()
                .any(|l| l.starts_with("SF:") && l.ends_with("h.h"))
        })
        .unwrap_or_else(|| panic!("no SF:…h.h in {profile}"));
    assert!(
        in_header.contains(&format!("DA:4,{}\n", args_bl.len())),
        "{profile}"
    );
}

/// The `DA:line,count` lines of an lcov tracefile, by line.
fn lcov_lines(lcov: &str) -> BTreeMap<u32, u64> {
    lcov.lines()
        .filter_map(|l| l.strip_prefix("DA:"))
        .map(|l| {
            let (line, count) = l.split_once(',').unwrap();
            (line.parse().unwrap(), count.parse().unwrap())
        })
        .collect()
}

/// `tests/programs/PROGRAM` built at -O0 in `mode` and run in `dir` (its standard output must be
/// `stdout`), recording to `out`: `wpp annotate`'s lcov line counts.
fn annotated_lines(
    dir: &Path,
    program: &str,
    mode: &str,
    out: &str,
    stdout: &str,
) -> BTreeMap<u32, u64> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/programs")
        .join(program);
    let exe = format!("prog-{mode}");
    let src = src.to_str().unwrap();
    wpp(
        dir,
        &["cc", "--mode", mode, "--", "-O0", "-g", src, "-o", &exe],
    );
    let run = Command::new(dir.join(&exe))
        .current_dir(dir)
        .env("WPP_OUT", out)
        .env("WPP_FINISH", "wait")
        .env("WPP_QUIET", "1")
        .output()
        .unwrap();
    assert!(run.status.success());
    assert_eq!(String::from_utf8_lossy(&run.stdout), stdout);
    let lcov = String::from_utf8(wpp(dir, &["annotate", out, "--format", "lcov"]).stdout);
    lcov_lines(&lcov.unwrap())
}

/// A line after a call counts the call's returns where the recording knows them: in
/// `tests/programs/longjmp_lines.c` the block of `deep(n - 1, k); after++;` (lines 18–19) runs
/// 40 times, but 16 of those frames are abandoned by a `longjmp` inside the call, so `after++`
/// runs 24 times, as the program counts. Path recordings and bl profiles say so (a path starts
/// after the call only when it returns).
#[test]
fn lines_after_a_call_count_its_returns_in_path_recordings() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for (mode, out) in [("trace-paths", "o.wpp"), ("bl", "o.blprof")] {
        let lines = annotated_lines(dir, "longjmp_lines.c", mode, out, "50 24 4\n");
        assert_eq!(lines.get(&18), Some(&40), "{mode}: {lines:?}");
        assert_eq!(lines.get(&19), Some(&24), "{mode}: {lines:?}");
    }
}

/// Lines inside a block count as often as the block runs: at -O0 `step`'s lines 10–12 of
/// `tests/programs/inner_lines.c` (a call, `y += 2;`, the condition) are one block, which runs
/// once per call of `step` (5), so each line counts 5 — as `llvm-cov gcov` says of the same
/// program built with `clang --coverage`. Every line `wpp annotate` counts has gcov's count,
/// in a block recording and in a bl profile (which carries the inner lines in its trailer).
#[test]
fn lines_inside_a_block_count_its_runs_as_gcov_does() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/programs/inner_lines.c");
    let src = src.to_str().unwrap();
    let lcovs: Vec<_> = [("trace-blocks", "o.wpp"), ("bl", "o.blprof")]
        .into_iter()
        .map(|(mode, out)| annotated_lines(dir, "inner_lines.c", mode, out, "42\n"))
        .collect();
    assert_eq!(
        lcovs[0], lcovs[1],
        "the profile counts lines as the recording"
    );
    let wpp_lines = &lcovs[0];
    for line in [10, 11, 12] {
        assert_eq!(wpp_lines.get(&line), Some(&5), "line {line}: {wpp_lines:?}");
    }
    // The same program under gcov's counters.
    tool(
        dir,
        "clang-22",
        &["--coverage", "-O0", "-g", src, "-o", "cov"],
    );
    let run = Command::new(dir.join("cov"))
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(run.status.success());
    let gcov = tool(
        dir,
        "llvm-cov-22",
        &["gcov", "-t", "-o", ".", "cov-inner_lines.gcda"],
    );
    let gcov_lines: BTreeMap<u32, u64> = gcov
        .lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ':');
            let count = parts.next()?.trim().parse().ok()?;
            Some((parts.next()?.trim().parse().ok()?, count))
        })
        .collect();
    for line in [10, 11, 12] {
        assert_eq!(
            gcov_lines.get(&line),
            Some(&5),
            "gcov, line {line}:\n{gcov}"
        );
    }
    for (line, n) in wpp_lines {
        assert_eq!(
            gcov_lines.get(line),
            Some(n),
            "line {line}: wpp {wpp_lines:?}, gcov:\n{gcov}"
        );
    }
}
