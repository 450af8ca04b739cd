//! Symbol hygiene of the packaged runtime (issue 12): it exports only its `__wpp_*` ABI, so a
//! program that contains zstd (the runtime's own compressor) neither interposes the runtime's
//! zstd nor is called by it. Before packaging, recording such a program in raw mode hung: the
//! runtime called the program's instrumented `ZSTD_createCCtx`, which re-entered the runtime.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use wpp_instrument::driver::{runtime, Driver};
use wpp_instrument::{InstrumentMode, Options};

fn driver() -> Driver {
    let mut d = Driver::from_env(Options::new(InstrumentMode::TraceBlocks));
    d.runtime = Some(runtime_lib());
    d
}

/// `nm`'s defined global symbols of a file.
fn nm_defined_globals(path: &Path) -> Vec<String> {
    let out = Command::new("llvm-nm-22")
        .args(["--defined-only", "--extern-only", "--format=just-symbols"])
        .arg(path)
        .output()
        .expect("llvm-nm-22 runs (package llvm-22)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty() && !l.ends_with(':'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn packaged_runtime_exports_only_the_abi() {
    let raw = nm_defined_globals(&runtime_lib());
    // The oracle can fail: the staticlib cargo builds does export zstd and Rust std symbols.
    assert!(
        raw.iter().any(|s| s == "ZSTD_createCCtx"),
        "{} symbols",
        raw.len()
    );
    let packaged = driver().packaged_runtime().expect("packaged runtime");
    let exported = nm_defined_globals(&packaged);
    let foreign: Vec<&String> = exported
        .iter()
        .filter(|s| !s.starts_with(runtime::ABI_PREFIX))
        .filter(|s| !wpp_abi::INTERPOSED.contains(&s.as_str()))
        .collect();
    assert!(foreign.is_empty(), "non-ABI globals exported: {foreign:?}");
    let interposed = wpp_abi::INTERPOSED.iter().copied();
    for sym in [
        wpp_abi::SYM_FLUSH,
        wpp_abi::SYM_UNWIND,
        wpp_abi::SYM_BL_INIT,
    ]
    .into_iter()
    .chain(interposed)
    {
        assert!(exported.iter().any(|s| s == sym), "{sym} not exported");
    }
    // The second check, by reading the object ourselves: also no zstd symbol left undefined.
    assert_eq!(
        runtime::foreign_globals(&packaged).unwrap(),
        Vec::<String>::new()
    );
}

/// A package copied with its library (`cp` of both: the package then looks newer than the
/// library) is made again, not trusted: a stale one linked an old runtime into programs.
#[test]
fn a_copied_package_is_made_again_from_its_library() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("libwpp_rt.a");
    std::fs::copy(runtime_lib(), &lib).unwrap();
    let stale = dir.path().join("libwpp_rt.a.packaged.o");
    std::fs::write(&stale, b"an older package").unwrap();
    let mut d = driver();
    d.runtime = Some(lib);
    let packaged = d.packaged_runtime().expect("packaged runtime");
    assert_eq!(packaged, stale);
    assert_eq!(
        runtime::foreign_globals(&packaged).unwrap(),
        Vec::<String>::new()
    );
    // Made once: a second build finds it by its stamp.
    let made = std::fs::metadata(&packaged).unwrap().modified().unwrap();
    d.packaged_runtime().unwrap();
    assert_eq!(
        std::fs::metadata(&packaged).unwrap().modified().unwrap(),
        made
    );
}

/// The zstd sources of the `zstd-sys` crate cargo unpacked for the runtime.
fn zstd_lib() -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo"));
    let registry = home.join("registry/src");
    for index in std::fs::read_dir(&registry).expect("cargo registry sources") {
        let index = index.unwrap().path();
        for krate in std::fs::read_dir(&index).unwrap().flatten() {
            let name = krate.file_name().to_string_lossy().into_owned();
            let lib = krate.path().join("zstd/lib");
            if name.starts_with("zstd-sys-") && lib.join("zstd.h").is_file() {
                return lib;
            }
        }
    }
    panic!("zstd-sys sources not found under {}", registry.display());
}

fn files(dir: &Path, ext: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .map(|p| p.display().to_string())
        .collect();
    v.sort();
    v
}

/// Runs a program; fails (instead of hanging the test suite) if it has not ended in 120 s.
fn run_bounded(exe: &Path, env: &[(&str, &Path)]) -> String {
    let mut c = Command::new(exe);
    c.stdout(Stdio::piped()).env_remove("WPP_RAW");
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().expect("program starts");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            child.kill().unwrap();
            panic!("{} hung (killed after 120 s)", exe.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{} failed: {out:?}", exe.display());
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn program_containing_zstd_records_in_raw_mode() {
    let dir = Scratch::new();
    let lib = zstd_lib();
    let mut args = vec![
        "-O0".to_owned(),
        format!("-I{}", lib.display()),
        programs_dir().join("zstd_user.c").display().to_string(),
    ];
    for sub in ["common", "compress", "decompress"] {
        args.extend(files(&lib.join(sub), "c"));
    }
    // zstd's x86-64 Huffman decoder is assembly: linked as it is, uninstrumented.
    args.extend(files(&lib.join("decompress"), "S"));
    let native = dir.path("native");
    let status = Command::new("clang-22")
        .args(&args)
        .arg("-o")
        .arg(&native)
        .status()
        .unwrap();
    assert!(status.success());
    let inst = dir.path("inst");
    args.extend(["-o".to_owned(), inst.display().to_string()]);
    driver().run(&args).expect("wpp cc of zstd");
    let want = run_bounded(&native, &[]);
    assert!(want.contains("round trip ok"), "{want}");
    let trace = dir.path("z.trace");
    let raw = Path::new("1");
    assert_eq!(
        run_bounded(&inst, &[("WPP_OUT", &trace), ("WPP_RAW", raw)]),
        want
    );
    let (db, events) = wpp_paths::trace::read_events(&trace).expect("raw trace");
    for (t, r) in replay(&db, &events) {
        assert!(r.balanced, "thread {t} unbalanced");
        for f in [
            "main",
            "ZSTD_compress",
            "ZSTD_decompress",
            "HUF_compress4X_repeat",
        ] {
            assert!(
                r.enters.get(f).copied().unwrap_or(0) > 0,
                "{f} not recorded"
            );
        }
    }
    let online = dir.path("z.wpp");
    let wait = Path::new("wait");
    assert_eq!(
        run_bounded(&inst, &[("WPP_OUT", &online), ("WPP_FINISH", wait)]),
        want
    );
    let (_, threads) = expand_wpp(&online);
    let raw_threads = wpp_trace::file::threads::split_threads(&events);
    assert_eq!(threads.len(), raw_threads.len());
    for ((_, a), (_, b)) in threads.iter().zip(&raw_threads) {
        assert!(a == b, "online and raw recordings differ");
    }
}
