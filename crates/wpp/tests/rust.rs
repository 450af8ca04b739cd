//! Rust programs through `wpp cargo` (cargo with `wpp cc` as the linker and linker-plugin LTO,
//! so the crate's code reaches the link as LLVM 22 bitcode, which `wpp cc` instruments like
//! C's). The program uses crates from crates.io (one with a build script and a procedural
//! macro, which must run uninstrumented), catches a panic that unwinds through instrumented
//! frames and runs threads; the oracle is its uninstrumented build (same output), the
//! recording's own structure (balanced per thread, raw = online) and hand-counted calls.

#![cfg(feature = "llvm")]

use std::path::{Path, PathBuf};
use std::process::Command;

const MAIN_RS: &str = r#"
use std::panic;

#[derive(Debug, thiserror::Error)]
#[error("seven is not allowed ({0})")]
struct Seven(u64);

#[inline(never)]
fn work(n: u64) -> u64 {
    (0..n).map(|i| if i % 3 == 0 { i * 2 } else { i }).sum()
}

#[inline(never)]
fn checked(n: u64) -> u64 {
    if n == 7 {
        panic!("{}", Seven(n));
    }
    let squares: rustc_hash::FxHashMap<u64, u64> = (0..n).map(|i| (i, i * i)).collect();
    work(n) + squares.len() as u64 - n
}

/// Instances at two types: v0 symbol names tell them apart.
#[inline(never)]
fn twice<T: Copy + std::ops::Add<Output = T>>(x: T) -> T {
    x + x
}

fn main() {
    if std::env::args().any(|a| a == "--abort") {
        std::process::abort();
    }
    panic::set_hook(Box::new(|_| {}));
    let mut caught = 0;
    let mut sum = 0;
    for n in 5..10 {
        match panic::catch_unwind(|| checked(n)) {
            Ok(s) => sum += s,
            Err(_) => caught += 1,
        }
    }
    // One thread at a time, so threads register in the same order in every run.
    let threads = if std::env::args().any(|a| a == "--no-threads") { 0 } else { 3 };
    for t in 0..threads {
        sum += std::thread::spawn(move || work(100 + t)).join().unwrap();
    }
    sum += twice(std::hint::black_box(1u64)) + twice(std::hint::black_box(1.5f64)) as u64 - 5;
    println!("caught {caught}, sum {sum}");
}
"#;

/// A cargo project in a scratch directory, with a `wpp-cc` symlink.
struct Crate {
    dir: tempfile::TempDir,
}

impl Crate {
    fn new() -> Crate {
        let dir = tempfile::tempdir().expect("tempdir");
        let wpp = PathBuf::from(env!("CARGO_BIN_EXE_wpp"));
        std::os::unix::fs::symlink(&wpp, dir.path().join("wpp-cc")).expect("symlink");
        std::fs::create_dir(dir.path().join("src")).expect("src");
        std::fs::write(
            dir.path().join("Cargo.toml"),
            "[package]\nname = \"hello\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [dependencies]\nthiserror = \"2\"\nrustc-hash = \"2\"\n\n[workspace]\n",
        )
        .expect("Cargo.toml");
        std::fs::write(dir.path().join("src/main.rs"), MAIN_RS).expect("main.rs");
        Crate { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `cargo build --release` (natively) or `wpp cargo build --release --wpp-mode=MODE
    /// OPTIONS…` (more `--wpp-…` options) into `target-NAME`; the program's path.
    fn build(&self, name: &str, mode: Option<&str>, options: &[String]) -> PathBuf {
        let target = self.path(&format!("target-{name}"));
        let mut c = match mode {
            None => Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())),
            Some(mode) => {
                let mut c = Command::new(env!("CARGO_BIN_EXE_wpp"));
                c.args(["cargo", &format!("--wpp-mode={mode}")])
                    .args(options);
                c
            }
        };
        // Offline: the crates are in the local registry, as the workspace uses them too.
        c.args(["build", "--release", "--quiet", "--offline"])
            .current_dir(self.dir.path())
            .env("CARGO_TARGET_DIR", &target)
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("CARGO_BUILD_RUSTFLAGS")
            .env_remove("RUSTFLAGS");
        let out = c.output().expect("cargo runs");
        assert!(
            out.status.success(),
            "cargo build ({name}) failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // `wpp cargo` builds for the host triple given explicitly: `target/TRIPLE/release`.
        let exe = std::fs::read_dir(&target)
            .expect("target directory")
            .map(|e| e.expect("entry").path().join("release/hello"))
            .find(|p| p.is_file())
            .unwrap_or_else(|| target.join("release/hello"));
        // Build scripts and proc macros (run by rustc) ran uninstrumented: nothing but the
        // test's own `run.*` recordings exists.
        let stray = walk(self.dir.path()).into_iter().find(|p| {
            let recording = ["wpp", "trace", "blprof", "pppprof"]
                .iter()
                .any(|x| p.extension().is_some_and(|e| e == *x));
            recording && !p.file_name().unwrap().to_string_lossy().starts_with("run.")
        });
        assert_eq!(stray, None, "a host artifact was instrumented");
        for so in walk(&target)
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "so"))
        {
            let d = Command::new("readelf").arg("-d").arg(&so).output();
            let d = String::from_utf8_lossy(&d.expect("readelf runs").stdout).into_owned();
            assert!(!d.contains("libwpp_rt"), "{} is instrumented", so.display());
        }
        exe
    }

    /// Runs `exe` with the recording environment `env`; its standard output.
    fn run(&self, exe: &Path, env: &[(&str, &Path)], raw: bool) -> String {
        self.run_with(exe, &[], env, raw).0
    }

    /// Runs `exe ARGS` with the recording environment `env`; its standard output and error.
    fn run_with(
        &self,
        exe: &Path,
        args: &[&str],
        env: &[(&str, &Path)],
        raw: bool,
    ) -> (String, String) {
        let mut c = Command::new(exe);
        c.args(args)
            .current_dir(self.dir.path())
            .env("WPP_FINISH", "wait");
        for (k, v) in env {
            c.env(k, v);
        }
        if raw {
            c.env("WPP_RAW", "1");
        }
        let o = c.output().expect("program runs");
        assert!(o.status.success(), "{} failed: {o:?}", exe.display());
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (text(&o.stdout), text(&o.stderr))
    }
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        match e.file_type() {
            Ok(t) if t.is_dir() => out.extend(walk(&e.path())),
            _ => out.push(e.path()),
        }
    }
    out
}

fn wpp(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_wpp"))
        .args(args)
        .output()
        .expect("wpp runs");
    assert!(
        o.status.success(),
        "wpp {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn a_rust_program_with_panics_and_threads_records_exactly() {
    let c = Crate::new();
    // A wrong wpp option stops `wpp cargo` before cargo builds anything.
    let bogus = Command::new(env!("CARGO_BIN_EXE_wpp"))
        .args(["cargo", "--wpp-mode=bogus", "build"])
        .current_dir(c.dir.path())
        .output()
        .expect("wpp runs");
    let err = String::from_utf8_lossy(&bogus.stderr);
    assert_eq!(bogus.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("wpp: error: unknown mode \"bogus\""),
        "{err}"
    );
    let native = c.build("native", None, &[]);
    let want = c.run(&native, &[], false);
    // work(n) = Σ_{i<n} i + Σ_{i<n, 3|i} i: 13 + 18 + 37 + 45 for n = 5, 6, 8, 9, and
    // 6633 + 6733 + 6834 for n = 100, 101, 102 on the threads.
    assert_eq!(want, "caught 1, sum 20313\n");

    let blocks = c.build("blocks", Some("trace-blocks"), &[]);
    let (wpp_file, trace) = (c.path("run.wpp"), c.path("run.trace"));
    assert_eq!(c.run(&blocks, &[("WPP_OUT", &wpp_file)], false), want);
    assert_eq!(c.run(&blocks, &[("WPP_OUT", &trace)], true), want);
    let (w, t) = (wpp_file.to_str().unwrap(), trace.to_str().unwrap());
    wpp(&["verify", w, t]);
    let text = c.path("run.txt");
    wpp(&["decompress", "--text", "-o", text.to_str().unwrap(), w]);
    let text = std::fs::read_to_string(&text).expect("text trace");
    // Balanced per thread: every frame entered is left, the unwound ones included.
    let (mut thread, mut depth) = (0u32, std::collections::BTreeMap::new());
    let mut entered = std::collections::BTreeMap::new();
    for line in text.lines() {
        if let Some(t) = line.strip_prefix("T ") {
            thread = t.parse().expect("thread id");
        } else if let Some(f) = line.strip_prefix("F ") {
            *depth.entry(thread).or_insert(0i64) += 1;
            *entered.entry(f.to_owned()).or_insert(0) += 1;
        } else if line == "E" {
            let d = depth.entry(thread).or_insert(0i64);
            *d -= 1;
            assert!(*d >= 0, "thread {thread} leaves a frame it never entered");
        }
    }
    assert!(depth.values().all(|&d| d == 0), "open frames: {depth:?}");
    assert_eq!(depth.len(), 4, "the main thread and three spawned ones");
    // Demangled names; `checked` ran 5 times, `work` 4 + 3 times (its panicking call never
    // reaches it).
    assert_eq!(entered.get("hello::checked"), Some(&5), "{entered:?}");
    assert_eq!(entered.get("hello::work"), Some(&7), "{entered:?}");
    assert_eq!(entered.get("hello::main"), Some(&1), "{entered:?}");
    // Generic instances by their types (v0 names), and source lines in a release build.
    assert_eq!(entered.get("hello::twice::<u64>"), Some(&1), "{entered:?}");
    assert_eq!(entered.get("hello::twice::<f64>"), Some(&1), "{entered:?}");
    let functions = wpp(&["functions", w]);
    let work = functions.lines().find(|l| l.contains("hello::work ("));
    assert!(
        work.is_some_and(|l| l.contains("src/main.rs:")),
        "{functions}"
    );
    // `wpp cargo run` ends as the program did: killed by its abort.
    let aborted = Command::new(env!("CARGO_BIN_EXE_wpp"))
        .args([
            "cargo",
            "--wpp-mode=trace-blocks",
            "run",
            "--release",
            "--quiet",
        ])
        .args(["--offline", "--", "--abort"])
        .current_dir(c.dir.path())
        .env("CARGO_TARGET_DIR", c.path("target-blocks"))
        .env("WPP_OUT", c.path("run.aborted.trace"))
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .output()
        .expect("wpp cargo runs");
    let signal = std::os::unix::process::ExitStatusExt::signal(&aborted.status);
    assert_eq!(signal, Some(6), "{aborted:?}");

    // The path recording of the same run decodes to the block recording, thread by thread.
    // Built into the block build's target directory: another mode must rebuild the program.
    let paths = c.build("blocks", Some("trace-paths"), &[]);
    let path_trace = c.path("run.paths.trace");
    assert_eq!(c.run(&paths, &[("WPP_OUT", &path_trace)], true), want);
    let decoded = c.path("run.decoded.trace");
    let p = path_trace.to_str().unwrap();
    wpp(&[
        "trace",
        "blocks",
        p,
        "-o",
        decoded.to_str().unwrap(),
        "--compare",
        t,
    ]);
}

/// Path profiles of the same program: `ppp` with the `bl` profile's paths as the interesting
/// set gives the `bl` profile's counts (PPP §5), under the functions' Rust names.
#[test]
fn a_rust_programs_ppp_profile_equals_its_bl_profile() {
    let c = Crate::new();
    let bl = c.build("bl", Some("bl"), &[]);
    let bl_file = c.path("run.blprof");
    assert_eq!(
        c.run(&bl, &[("WPP_OUT", &bl_file)], false),
        "caught 1, sum 20313\n"
    );
    // Into the `bl` build's target directory: another mode must rebuild the program.
    let ppp = c.build(
        "bl",
        Some("ppp"),
        &[format!("--wpp-interesting={}", bl_file.display())],
    );
    let ppp_file = c.path("run.pppprof");
    c.run(&ppp, &[("WPP_OUT", &ppp_file)], false);
    let ppp_text = wpp(&["profile", "show", ppp_file.to_str().unwrap()]);
    assert!(ppp_text.starts_with("profile of a ppp run"), "{ppp_text}");
    // The run the profile is of: a Rust `main` returns through libc's `exit`.
    let run_line = ppp_text.lines().nth(1).unwrap_or_default();
    let run = format!("run: {} (exit status 0, run id ", ppp.display());
    assert!(run_line.starts_with(&run), "{run_line}");
    let show = |f: &Path| wpp(&["profile", "show", "--json", f.to_str().unwrap()]);
    let bl_json = show(&bl_file);
    assert!(bl_json.contains("\"hello::work\""), "{bl_json}");
    assert_eq!(show(&ppp_file), bl_json);
}

/// The memory modes (issue 11) on the same program: run single-threaded, the dependences
/// recovered from its eWPP (filtering run, then collection) equal those of its address trace;
/// with its threads, the address trace records all four, and the eWPP modes run the program
/// unchanged and say that they recorded the main thread's accesses only, never a wrong edge.
#[test]
fn a_rust_programs_dependences_from_its_ewpp_equal_its_address_traces() {
    let c = Crate::new();
    let want = "caught 1, sum 113\n";
    let (at, addr_trace) = (c.path("run.addr.at"), c.path("run.addr.trace"));
    let addr = c.build("addr", Some("trace-addr"), &[]);
    let env = [("WPP_OUT", addr_trace.as_path()), ("WPP_AT_OUT", &at)];
    let (out, _) = c.run_with(&addr, &["--no-threads"], &env, true);
    assert_eq!(out, want);

    let report = c.path("run.depf");
    let filter = c.build("filter", Some("ewpp-filter"), &[]);
    let env = [("WPP_OUT", report.as_path())];
    assert_eq!(c.run_with(&filter, &["--no-threads"], &env, true).0, want);
    assert!(report.exists(), "the filtering run's report");

    let exercised = format!("--wpp-exercised={}", report.display());
    let ewpp = c.build("ewpp", Some("ewpp"), &[exercised]);
    let ecf = c.path("run.ecf.wpp");
    let (out, err) = c.run_with(&ewpp, &["--no-threads"], &[("WPP_OUT", &ecf)], false);
    assert_eq!(out, want);
    assert!(!err.contains("not exercised"), "{err}");

    // The eCF carries store-to-load dependences; the AT also bytes written outside.
    let stores = |s: String| -> Vec<String> {
        let deps: Vec<String> = s
            .lines()
            .filter(|l| !l.contains("<- external"))
            .map(|l| l.split(" [").next().unwrap().to_string())
            .collect();
        assert!(deps.len() > 100, "{s}");
        deps
    };
    let from_at = stores(wpp(&["deps", "list", at.to_str().unwrap()]));
    assert_eq!(
        stores(wpp(&["deps", "list", ecf.to_str().unwrap()])),
        from_at
    );
    assert!(
        from_at.iter().any(|d| d.contains("hello::")),
        "the program's own functions depend on its stores"
    );

    // With threads: the address trace holds every thread's accesses in one order; the eWPP
    // modes, which classify and check in one thread's order, run the program unchanged and
    // say what they did not record.
    let (threads, threads_at) = (c.path("run.threads"), c.path("run.threads.at"));
    let env = [("WPP_OUT", threads.as_path()), ("WPP_AT_OUT", &threads_at)];
    let (out, err) = c.run_with(&addr, &[], &env, true);
    assert_eq!(out, "caught 1, sum 20313\n");
    assert!(!err.contains("single-threaded"), "{err}");
    let stats = wpp(&["deps", "stats", threads_at.to_str().unwrap()]);
    assert!(stats.contains("threads              4"), "{stats}");
    for (mode, exe) in [("ewpp-filter", &filter), ("ewpp", &ewpp)] {
        let (out, err) = c.run_with(exe, &[], &env, true);
        assert_eq!(out, "caught 1, sum 20313\n");
        let says = format!("the {mode} mode records single-threaded programs only");
        assert!(err.contains(&says), "{mode}: {err}");
    }
}
