//! `wpp-query-check` (the real-recording cross-check that `bench/check.sh` runs) passes on a
//! synthetic two-thread trace and reports unreadable traces as failures.

use std::process::Command;

use wpp_trace::synth::{SynthProgram, TraceKind};
use wpp_trace::{Event, ThreadId};

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_wpp-query-check"))
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn passes_on_a_two_thread_trace() {
    let prog = SynthProgram::generate(3);
    let events = prog.events(TraceKind::Blocks, 40_000);
    // Thread 0 runs the first half, thread 4 the second half, then thread 0 again.
    let (a, b) = events.split_at(20_000);
    let mut all = a[..10_000].to_vec();
    all.push(Event::Thread(ThreadId(4)));
    all.extend_from_slice(b);
    all.push(Event::Thread(ThreadId(0)));
    all.extend_from_slice(&a[10_000..]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.trace");
    let bytes = wpp_trace::file::to_binary(prog.program(), &all).unwrap();
    std::fs::write(&path, bytes).unwrap();
    let (code, out) = run(&[
        "--events",
        "30000",
        "--name",
        "synth",
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    let passed: Vec<&str> = out.lines().filter(|l| l.starts_with("PASS  ")).collect();
    assert_eq!(passed.len(), 9, "{out}");
    assert!(passed[0].contains("2 threads"), "{out}");
    for alg in ["sequitur", "sequitur1", "frequency", "phrase"] {
        assert!(out.contains(&format!("PASS  query synth {alg}:")), "{out}");
        assert!(
            out.contains(&format!("PASS  query synth {alg} parallel:")),
            "{out}"
        );
    }
}

#[test]
fn unreadable_trace_is_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.trace");
    std::fs::write(&path, b"WPPT\x01").unwrap();
    let (code, out) = run(&["--name", "bad", path.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}");
    assert!(out.starts_with("FAIL  query bad: cannot read"), "{out}");
}
