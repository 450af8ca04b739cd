//! Real programs from `tests/programs`, built with `wpp cc` in `bl`, `ppp` and `trace-paths`
//! modes and run on one deterministic input; their profiles and recordings in one store must
//! give the counts of independent oracles:
//!
//! - a `bl` run's `path_counts` are the profile's counts as `wpp profile show` reads them
//!   (`ProfileFile::path_counts`);
//! - the `ppp` run, the raw trace and the `.wpp` of the same input count the same paths the
//!   same number of times (PPP §5; Larus §2's path events), and the `ppp` run's
//!   `residual_counts` are its uninteresting paths (PPP §1);
//! - `function_events.calls` of the recordings are the calls the program counts itself and
//!   prints (`calls NAME=N`);
//! - `path_totals` has each path in all four runs, with their executions summed;
//! - the profiles' `runs` rows have the command line and exit status of their runs.
//!
//! Needs LLVM 22: `cargo test -p wpp-db --features llvm`.

#![cfg(feature = "llvm")]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{counts, ok, rows};
use wpp_abi::profile::ProfileFile;
use wpp_instrument::driver::{find_runtime, Driver};
use wpp_instrument::{InstrumentMode, Options};

fn build(src: &str, options: Options, out: &Path) {
    let exe = std::env::current_exe().expect("test exe");
    let mut d = Driver::from_env(options);
    d.runtime = Some(find_runtime(exe.parent()).expect("libwpp_rt.a next to the test binary"));
    let programs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/programs");
    // -O0: every call the program counts is a call (-O1 turns one of `fib`'s two recursive
    // calls into a loop, which the program still counts).
    let args = [
        "-O0".to_owned(),
        programs.join(src).display().to_string(),
        "-o".into(),
        out.display().to_string(),
    ];
    d.run(&args)
        .unwrap_or_else(|e| panic!("wpp cc of {src} failed: {e}"));
}

/// Runs `exe` writing to `out`; its standard output.
fn run(exe: &Path, out: &Path, raw: bool) -> String {
    let mut c = Command::new(exe);
    c.stdin(Stdio::null())
        .env("WPP_OUT", out)
        .env("WPP_QUIET", "1")
        .env("WPP_FINISH", "wait")
        .env_remove("WPP_RAW");
    if raw {
        c.env("WPP_RAW", "1");
    }
    let o = c.output().expect("run the program");
    assert!(o.status.success(), "{} failed", exe.display());
    String::from_utf8(o.stdout).unwrap()
}

/// The `(function, path) → count` of one run's entries in a `(file, function, path)` map.
fn of_run(all: &BTreeMap<(String, String, u64), u64>, file: &Path) -> BTreeMap<(String, u64), u64> {
    let file = file.display().to_string();
    all.iter()
        .filter(|((f, _, _), _)| *f == file)
        .map(|((_, name, id), &c)| ((name.clone(), *id), c))
        .collect()
}

#[test]
fn counts_of_real_runs_equal_the_oracles() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| -> PathBuf { dir.path().join(n) };
    let src = "recursion.c";
    build(src, Options::new(InstrumentMode::Bl), &p("bl"));
    build(src, Options::new(InstrumentMode::TracePaths), &p("paths"));
    let stdout = run(&p("bl"), &p("run.blprof"), false);
    let bl = ProfileFile::from_bytes(&std::fs::read(p("run.blprof")).unwrap()).unwrap();
    // Every other path of each function that ran is interesting; the rest are residual.
    let mut ppp = Options::new(InstrumentMode::Ppp);
    for (f, paths) in &bl.bl.functions {
        let ids = paths.iter().map(|(&id, &c)| (id, c)).step_by(2).collect();
        ppp.interesting.insert(f.clone(), ids);
    }
    build(src, ppp, &p("ppp"));
    assert_eq!(run(&p("ppp"), &p("run.pppprof"), false), stdout);
    assert_eq!(run(&p("paths"), &p("raw.trace"), true), stdout);
    assert_eq!(run(&p("paths"), &p("run.wpp"), false), stdout);

    let db = p("db");
    ok(&[
        "add",
        &p("run.blprof").display().to_string(),
        &p("run.pppprof").display().to_string(),
        &p("raw.trace").display().to_string(),
        &p("run.wpp").display().to_string(),
        "--db",
        &db.display().to_string(),
    ]);
    let all = counts(&db, "path_counts");
    let expected: BTreeMap<(String, u64), u64> = bl
        .path_counts()
        .functions
        .into_iter()
        .flat_map(|(f, paths)| paths.into_iter().map(move |(id, c)| ((f.clone(), id), c)))
        .collect();
    assert!(!expected.is_empty());
    for f in ["run.blprof", "run.pppprof", "raw.trace", "run.wpp"] {
        assert_eq!(of_run(&all, &p(f)), expected, "path counts of {f}");
    }
    let residual = of_run(&counts(&db, "residual_counts"), &p("run.pppprof"));
    let pf = ProfileFile::from_bytes(&std::fs::read(p("run.pppprof")).unwrap()).unwrap();
    let uninteresting: BTreeMap<(String, u64), u64> = pf
        .ppp
        .expect("ppp counts")
        .functions
        .into_iter()
        .flat_map(|(f, fp)| {
            fp.uninteresting
                .into_iter()
                .map(move |(id, c)| ((f.clone(), id), c))
        })
        .collect();
    assert!(!uninteresting.is_empty());
    assert_eq!(residual, uninteresting);

    // Calls the program counted itself.
    for line in stdout.lines().filter_map(|l| l.strip_prefix("calls ")) {
        let (name, n) = line.split_once('=').unwrap();
        for f in ["raw.trace", "run.wpp"] {
            let q = format!(
                "SELECT e.calls FROM function_events e JOIN runs r ON r.run_id = e.run_id \
                 WHERE e.function = '{name}' AND r.file = '{}'",
                p(f).display()
            );
            assert_eq!(rows(&db, &q), [n], "calls of {name} in {f}");
        }
    }
    // The batch's totals: each path in all four runs, with four times its executions.
    let q = "SELECT function, path_id, SUM(runs), SUM(executions) FROM path_totals GROUP BY 1, 2";
    let totals: BTreeMap<(String, u64), (u64, u64)> = rows(&db, q)
        .iter()
        .map(|l| {
            let v: Vec<&str> = l.split(',').collect();
            let n = |i: usize| v[i].parse::<u64>().unwrap();
            ((v[0].to_owned(), n(1)), (n(2), n(3)))
        })
        .collect();
    let four: BTreeMap<(String, u64), (u64, u64)> = expected
        .iter()
        .map(|(k, &c)| (k.clone(), (4, 4 * c)))
        .collect();
    assert_eq!(totals, four);
    // The profiles know their run: the command line and the status (0) of both runs.
    let q = "SELECT mode, command_line, exit_status FROM runs WHERE kind = 'profile' ORDER BY 1";
    let want = ["bl", "ppp"].map(|m| format!("{m},{},0", p(m).display()));
    assert_eq!(rows(&db, q), want);
    // The bl and ppp builds of one program share its id.
    let q = "SELECT COUNT(DISTINCT program_id) FROM runs WHERE kind = 'profile'";
    assert_eq!(rows(&db, q), ["1"]);
}
