//! Shared helpers: profiles made with wpp's own profile library, and the `wpp-db` binary.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use wpp_abi::profile::{ProfileFile, RunInfo};
use wpp_abi::{EmbeddedProgram, Mode, EMBEDDED_VERSION};
use wpp_paths::profile::PppFunctionProfile;
use wpp_paths::{BlProfile, CfgFile, PathId, PppProfile};

/// The CFG of PPP's Figure 3 (6 Ball–Larus paths) as function `fig3`, and a one-block `leaf`.
pub fn program(mode: Mode) -> EmbeddedProgram {
    let json = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../wpp-paths/examples/fig3.json"),
    )
    .expect("fig3.json");
    let mut cfgs = CfgFile::parse(&json).expect("fig3 CFG");
    let leaf = r#"{"functions": [{"name": "leaf", "nodes": ["s", "t"], "entry": "s",
                   "exits": ["t"], "edges": [["s", "t"]]}]}"#;
    cfgs.extend(CfgFile::parse(leaf).expect("leaf CFG"));
    let functions = cfgs
        .iter()
        .map(|c| wpp_trace::Function {
            name: c.name.clone(),
            file: Some("fig3.c".into()),
            line: Some(1),
            ..Default::default()
        })
        .collect();
    EmbeddedProgram {
        version: EMBEDDED_VERSION,
        mode,
        program: wpp_trace::ProgramDb {
            functions,
            ..Default::default()
        },
        cfgs,
        ewpp: None,
    }
}

/// A `bl` profile with `counts[i]` executions of path `i` of `fig3` and `leaf_runs` of `leaf`.
pub fn bl_profile(counts: &[u64], leaf_runs: u64) -> ProfileFile {
    let mut bl = BlProfile::default();
    for (id, &c) in counts.iter().enumerate() {
        if c > 0 {
            bl.record("fig3", PathId(id as u64), c);
        }
    }
    if leaf_runs > 0 {
        bl.record("leaf", PathId(0), leaf_runs);
    }
    ProfileFile {
        program: program(Mode::Bl),
        bl,
        ppp: None,
        run: Some(RunInfo {
            command_line: vec!["./t".into(), format!("{leaf_runs}"), "a b".into()],
            exit_status: Some((leaf_runs % 4) as i32),
            id: None,
        }),
    }
}

/// A `ppp` profile of `fig3` whose interesting paths are 0, 1 and 5 (PPP Figure 3's
/// `sacdt`, `sact`, `sbct`) with `counts`, and the uninteresting paths `residual`.
pub fn ppp_profile(counts: [u64; 3], residual: &[(u64, u64)]) -> ProfileFile {
    let mut ppp = PppProfile::default();
    ppp.functions.insert(
        "fig3".into(),
        PppFunctionProfile {
            interesting: vec![0, 1, 5],
            counts: counts.to_vec(),
            uninteresting: residual.iter().copied().collect(),
        },
    );
    ProfileFile {
        program: program(Mode::Ppp),
        bl: BlProfile::default(),
        ppp: Some(ppp),
        run: None,
    }
}

/// Writes `file` at `dir/name` and returns the path.
pub fn write(dir: &Path, name: &str, file: &ProfileFile) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, file.to_bytes()).expect("write profile");
    path
}

/// Runs `wpp-db ARGS`.
pub fn wpp_db(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wpp-db"))
        .args(args)
        .output()
        .expect("run wpp-db")
}

/// Runs `wpp-db ARGS`, which must succeed; its standard output.
pub fn ok(args: &[&str]) -> String {
    let out = wpp_db(args);
    assert!(
        out.status.success(),
        "wpp-db {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The rows of `query` on the store at `db`, as CSV lines without the header.
pub fn rows(db: &Path, query: &str) -> Vec<String> {
    let out = ok(&[
        "sql",
        "--db",
        &db.display().to_string(),
        "--format",
        "csv",
        query,
    ]);
    out.lines().skip(1).map(String::from).collect()
}

/// `(file, function, path id) → count` of the store's `path_counts` (or another table with the
/// same columns), keyed by the run's file.
pub fn counts(db: &Path, table: &str) -> BTreeMap<(String, String, u64), u64> {
    let q = format!(
        "SELECT r.file, f.function, c.path_id, c.count FROM {table} c \
         JOIN runs r ON r.run_id = c.run_id \
         JOIN functions f ON f.program_id = r.program_id AND f.function_id = c.function_id"
    );
    rows(db, &q)
        .iter()
        .map(|l| {
            let v: Vec<&str> = l.split(',').collect();
            (
                (v[0].to_owned(), v[1].to_owned(), v[2].parse().unwrap()),
                v[3].parse().unwrap(),
            )
        })
        .collect()
}

/// The oracle: `(file, function, path id) → count` of each profile as `wpp profile show` counts
/// it (`ProfileFile::path_counts`, read back from the file).
pub fn profile_counts(files: &[PathBuf]) -> BTreeMap<(String, String, u64), u64> {
    let mut out = BTreeMap::new();
    for f in files {
        let p = ProfileFile::from_bytes(&std::fs::read(f).unwrap()).unwrap();
        for (name, paths) in p.path_counts().functions {
            for (id, c) in paths {
                out.insert((f.display().to_string(), name.clone(), id), c);
            }
        }
    }
    out
}
