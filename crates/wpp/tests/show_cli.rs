//! `wpp annotate`/`export`/`report` on synthetic recordings (no LLVM needed): totals against
//! the text trace, and bad requests failing with a message that names the problem.

use std::path::Path;
use std::process::{Command, Output};

fn wpp(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wpp"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run wpp")
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let out = wpp(dir, args);
    assert!(
        out.status.success(),
        "wpp {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn fails(dir: &Path, args: &[&str], message: &str) {
    let out = wpp(dir, args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "wpp {args:?} succeeded");
    assert!(err.contains(message), "wpp {args:?}: {err}");
}

#[test]
fn synthetic_trace_and_grammar_export_every_block_event() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    ok(
        dir,
        &[
            "synth", "--seed", "3", "--events", "20000", "--kind", "blocks", "-o", "t.trace",
        ],
    );
    ok(dir, &["compress", "t.trace", "-o", "t.wpp"]);
    let text = ok(dir, &["trace", "cat", "t.trace"]);
    let blocks = text.lines().filter(|l| l.starts_with("B ")).count() as u64;
    for file in ["t.trace", "t.wpp"] {
        let folded = ok(dir, &["export", file, "--format", "folded"]);
        let total: u64 = folded
            .lines()
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum();
        assert_eq!(total, blocks, "{file}");
        assert!(
            folded.lines().all(|l| l.starts_with("main")),
            "{file}: rooted at main"
        );
    }
    ok(dir, &["report", "t.wpp", "-o", "rep"]);
    let page = std::fs::read_to_string(dir.join("rep/index.html")).unwrap();
    assert!(
        page.contains(&format!("<td class=\"n\">{blocks}</td>")),
        "the page shows the total"
    );
    fails(
        dir,
        &["annotate", "t.wpp", "--function", "nope"],
        "t.wpp has no function `nope`",
    );
    fails(
        dir,
        &[
            "export",
            "t.wpp",
            "--format",
            "chrome",
            "--from",
            "99999999",
            "--to",
            "100000000",
        ],
        "past the end",
    );
    fails(
        dir,
        &[
            "export", "t.wpp", "--format", "chrome", "--from", "5", "--to", "5",
        ],
        "must be below",
    );
    fails(
        dir,
        &["export", "missing.wpp", "--format", "folded"],
        "missing.wpp",
    );
}
