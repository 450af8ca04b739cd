//! Shared helpers of the integration tests: build a program from `tests/programs` natively and
//! with `wpp cc`, run both, read the trace, and replay its shadow stacks.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use wpp_instrument::driver::{find_runtime, Driver};
use wpp_instrument::{InstrumentMode, Options};
use wpp_trace::{Event, ProgramDb, ThreadId};

/// The repository's `tests/programs`.
pub fn programs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/programs")
}

/// The runtime staticlib cargo built next to this test binary (or `$WPP_RT_LIB`).
pub fn runtime_lib() -> PathBuf {
    let exe = std::env::current_exe().expect("test exe");
    find_runtime(exe.parent()).expect(
        "libwpp_rt.a not found next to the test binary; build with `cargo test -p wpp-instrument` \
         (wpp-rt is a dependency) or set WPP_RT_LIB",
    )
}

/// A scratch directory removed at drop.
pub struct Scratch(pub tempfile::TempDir);

impl Scratch {
    pub fn new() -> Scratch {
        Scratch(tempfile::tempdir().expect("tempdir"))
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }
}

fn is_cxx(src: &str) -> bool {
    src.ends_with(".cpp")
}

/// Builds `tests/programs/<src>` natively with clang-22.
pub fn build_native(src: &str, flags: &[&str], out: &Path) {
    let compiler = if is_cxx(src) {
        "clang++-22"
    } else {
        "clang-22"
    };
    let status = Command::new(compiler)
        .args(flags)
        .arg(programs_dir().join(src))
        .arg("-lpthread")
        .arg("-o")
        .arg(out)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {compiler} (install clang-22): {e}"));
    assert!(status.success(), "native build of {src} failed");
}

/// Builds `tests/programs/<src>` with the `wpp cc` driver in `mode`.
pub fn build_instrumented(src: &str, flags: &[&str], mode: InstrumentMode, out: &Path) {
    build_instrumented_keep(src, flags, mode, out, None)
}

/// Like [`build_instrumented`], keeping intermediate files (`linked.bc`, …) in `keep`.
pub fn build_instrumented_keep(
    src: &str,
    flags: &[&str],
    mode: InstrumentMode,
    out: &Path,
    keep: Option<&Path>,
) {
    build_with_options(src, flags, Options::new(mode), out, keep)
}

/// Builds `tests/programs/<src>` with the `wpp cc` driver and explicit options.
pub fn build_with_options(
    src: &str,
    flags: &[&str],
    options: Options,
    out: &Path,
    keep: Option<&Path>,
) {
    let mut d = Driver::from_env(options);
    d.runtime = Some(runtime_lib());
    d.keep = keep.map(Path::to_path_buf);
    let mut args: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
    args.push(programs_dir().join(src).display().to_string());
    args.push("-lpthread".into());
    args.push("-o".into());
    args.push(out.display().to_string());
    d.run(&args)
        .unwrap_or_else(|e| panic!("wpp cc of {src} failed: {e}"));
}

/// Runs a program with `WPP_OUT=trace` and `WPP_RAW=1` (a raw trace).
pub fn run(exe: &Path, args: &[&str], trace: Option<&Path>) -> Output {
    run_env(exe, args, trace, &[("WPP_RAW", "1")])
}

/// Runs a program with `WPP_OUT=trace` and extra environment variables (by default quiet, and
/// finishing a `.wpp` before it exits: `WPP_QUIET=1`, `WPP_FINISH=wait`).
pub fn run_env(exe: &Path, args: &[&str], trace: Option<&Path>, env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(exe);
    c.args(args)
        .stdin(Stdio::null())
        .env_remove("WPP_RAW")
        .env("WPP_QUIET", "1")
        .env("WPP_FINISH", "wait");
    if let Some(t) = trace {
        c.env("WPP_OUT", t);
    }
    c.envs(env.iter().copied());
    c.output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()))
}

/// A thread's stream replayed against a shadow stack.
#[derive(Debug, Default)]
pub struct Replay {
    /// Enter count per function name.
    pub enters: BTreeMap<String, u64>,
    /// Names popped by the final run of consecutive `Leave`s, in pop order.
    pub trailing_pops: Vec<String>,
    /// Whether the stack ended empty.
    pub balanced: bool,
    /// The name popped by the `Leave` that emptied the stack last.
    pub last_popped: Option<String>,
    /// Events in the stream.
    pub events: u64,
}

/// Splits a trace into threads and replays each; panics on a `Leave` with an empty stack.
pub fn replay(db: &ProgramDb, events: &[Event]) -> BTreeMap<ThreadId, Replay> {
    let mut out = BTreeMap::new();
    for (t, stream) in wpp_trace::file::threads::split_threads(events) {
        let mut r = Replay::default();
        let mut stack: Vec<String> = Vec::new();
        for (i, e) in stream.iter().enumerate() {
            r.events += 1;
            match *e {
                Event::Enter(f) => {
                    let name = db.name(f);
                    *r.enters.entry(name.clone()).or_default() += 1;
                    stack.push(name);
                    r.trailing_pops.clear();
                }
                Event::Leave => {
                    let name = stack.pop().unwrap_or_else(|| {
                        panic!("thread {t}: Leave at event {i} with an empty shadow stack")
                    });
                    r.trailing_pops.push(name.clone());
                    if stack.is_empty() {
                        r.last_popped = Some(name);
                    }
                }
                Event::Block(_) | Event::Path(_) => {
                    assert!(
                        !stack.is_empty(),
                        "thread {t}: event {e:?} outside any frame"
                    );
                    r.trailing_pops.clear();
                }
                Event::Thread(_) => unreachable!("split_threads removes Thread events"),
            }
        }
        r.balanced = stack.is_empty();
        out.insert(t, r);
    }
    out
}

/// The per-thread event streams a `.wpp` file expands to.
pub fn expand_wpp(path: &Path) -> (ProgramDb, BTreeMap<ThreadId, Vec<Event>>) {
    let f = wpp_grammar::file::WppFile::read(path)
        .unwrap_or_else(|e| panic!("{} unreadable: {e}", path.display()));
    let mut out = BTreeMap::new();
    for s in f.grammar.starts() {
        let mut ts = Vec::new();
        wpp_grammar::expand::expand_into(&f.grammar, s.rule, &mut ts);
        let events: Vec<Event> = ts
            .iter()
            .map(|&t| f.alphabet.event(t).expect("terminal in alphabet"))
            .collect();
        out.insert(s.thread, events);
    }
    (f.program, out)
}

/// Parses the `calls NAME=N` lines a test program prints.
pub fn printed_calls(stdout: &[u8]) -> BTreeMap<String, u64> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("calls "))
        .filter_map(|l| {
            let (n, c) = l.split_once('=')?;
            Some((n.to_owned(), c.parse().ok()?))
        })
        .collect()
}

/// How many times the function `name` was entered (C++ functions have their demangled names:
/// `thrower`, not `_ZL7throwerv`).
pub fn enters_of(r: &Replay, name: &str) -> u64 {
    r.enters.get(name).copied().unwrap_or(0)
}

/// Asserts that a recorded run behaved as the native one: same stdout, exit status and
/// terminating signal.
pub fn same_behaviour(what: &str, native: &Output, recorded: &Output) {
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        String::from_utf8_lossy(&native.stdout),
        String::from_utf8_lossy(&recorded.stdout),
        "{what}: stdout differs"
    );
    assert_eq!(
        native.status.code(),
        recorded.status.code(),
        "{what}: status"
    );
    assert_eq!(
        native.status.signal(),
        recorded.status.signal(),
        "{what}: signal"
    );
}
