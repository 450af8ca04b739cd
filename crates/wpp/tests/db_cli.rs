//! `wpp db …` and `wpp sql …` run the `wpp-db` binary found next to `wpp` (or on `PATH`) with
//! the same arguments, and say how to build it when it is missing. A copy of `wpp` in a scratch
//! folder, beside a stand-in `wpp-db` script that prints its arguments, is the oracle.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

fn wpp_copy(dir: &Path) -> std::path::PathBuf {
    let wpp = dir.join("wpp");
    std::fs::copy(env!("CARGO_BIN_EXE_wpp"), &wpp).unwrap();
    wpp
}

fn run(wpp: &Path, args: &[&str]) -> Output {
    // A test running beside this one may fork while the copy is still open for writing, and
    // its child holds that descriptor until it execs: "Text file busy" for a moment.
    for _ in 0..100 {
        match Command::new(wpp)
            .args(args)
            .env("PATH", "/nonexistent")
            .output()
        {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            out => return out.unwrap(),
        }
    }
    panic!("{} stayed busy", wpp.display());
}

#[test]
fn db_and_sql_pass_their_arguments_to_wpp_db() {
    let dir = tempfile::tempdir().unwrap();
    let wpp = wpp_copy(dir.path());
    let stand_in = dir.path().join("wpp-db");
    std::fs::write(&stand_in, "#!/bin/sh\nprintf '%s|' \"$@\"\nexit 3\n").unwrap();
    std::fs::set_permissions(&stand_in, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = run(&wpp, &["sql", "--db", "d", "SELECT 1", "--format", "csv"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "sql|--db|d|SELECT 1|--format|csv|"
    );
    assert_eq!(out.status.code(), Some(3), "wpp-db's exit status is wpp's");
    let out = run(&wpp, &["db", "add", "a.blprof", "--db", "d", "--help"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "add|a.blprof|--db|d|--help|"
    );
}

#[test]
fn a_missing_wpp_db_says_how_to_build_it() {
    let dir = tempfile::tempdir().unwrap();
    let wpp = wpp_copy(dir.path());
    let out = run(&wpp, &["db", "add", "x", "--db", "d"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cargo build --release -p wpp-db"), "{err}");
}
